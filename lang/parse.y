/*
 * parse.y - the Bison grammar of .coll files.
 *
 * Pipeline: tokens from lex.re -> AST (ast.h).  Conventions:
 *  - a pure, reentrant parser (%define api.pure full); all state travels
 *    through %parse-param (the lexer and the program being built);
 *  - locations are byte offsets (parse_loc); line/column only on error;
 *  - every operator's precedence is declared below, and the grammar has no
 *    conflicts (%expect 0).  The order is Python's (lang/README.md lists
 *    it): `|` below `^` below `&` below shifts below `+ -`, so the set
 *    operators kept their old places when they gained int meanings; `**`
 *    binds tighter than unary minus and to the right (-2 ** 2 == -4,
 *    2 ** 3 ** 2 == 512).  Assignment is parsed as `expr = expr` and the
 *    left side checked in the action, which avoids the lvalue/primary
 *    reduce-reduce conflict on IDENT '[';
 *  - `{` in expression position starts a set or map literal; a bare block
 *    is not a statement, so there is no ambiguity with blocks;
 *  - error recovery at statement ends (`error ';'`) and block ends, so one
 *    mistake yields one message and parsing continues.
 * Syntax errors read "expected X or Y, found Z" (custom reporter below).
 */
%define api.pure full
%define parse.error custom
%locations
%expect 0
%define api.location.type {parse_loc}
%parse-param {lex_state *lx} {ast_prog *prog}
%lex-param {lex_state *lx}

%code requires {
#include "ast.h"
}

%code {
#include <stdio.h>
#include <string.h>
#define YYMAXDEPTH 10000

int lex_next(YYSTYPE *val, parse_loc *loc, lex_state *lx);
#define yylex lex_next
static void yyerror(parse_loc *loc, lex_state *lx, ast_prog *prog, const char *msg);
#define YYLLOC_DEFAULT(Cur, Rhs, N) do { \
	if (N) { (Cur).off = YYRHSLOC(Rhs, 1).off; (Cur).end = YYRHSLOC(Rhs, N).end; } \
	else { (Cur).off = (Cur).end = YYRHSLOC(Rhs, 0).end; } } while (0)
#define P(loc) ((srcpos){ lx->file, (loc).off })
#define NEW(k, loc) ast_new(lx->arena, (k), P(loc))
static ast *binop(lex_state *lx, int op, ast *a, ast *b, parse_loc loc);
}

%union {
	int64_t i;
	char *s;
	ast *node;
	ast_list list;
}

%token END 0 "end of file"
%token ALGORITHM "'algorithm'" FN "'fn'" IMPORT "'import'" CLUSTER "'cluster'" POLICY "'policy'" CHOOSE "'choose'" BELOW "'below'" LET "'let'" PARAM "'param'"
%token CHUNKS "'chunks'" PORTS "'ports'" ROUND "'round'" PHASE "'phase'"
%token COPY "'copy'" REDUCE "'reduce'" RUN "'run'" PARALLEL "'parallel'" ON "'on'" WITH "'with'"
%token IF "'if'" ELSE "'else'" FOR "'for'" IN "'in'" WHILE "'while'"
%token BREAK "'break'" CONTINUE "'continue'" RETURN "'return'" REQUIRE "'require'"
%token <i> TRUE "'true'" FALSE "'false'"
%token AND "'and'" OR "'or'" NOT "'not'" NOTIN "'not in'"
%token ARROW "'->'" BIARROW "'<->'" DOTDOT "'..'" EQ "'=='" NE "'!='" LE "'<='" GE "'>='"
%token PLUSEQ "'+='" MINUSEQ "'-='" SHL "'<<'" SHR "'>>'" POW "'**'"
%token <s> IDENT "identifier" STRING "string"
%token <i> INT "integer"
%token <i> TIME "time"

%nonassoc DOTDOT
%left OR
%left AND
%precedence NOT
%nonassoc EQ NE '<' LE '>' GE IN NOTIN
%left '|'
%left '^'
%left '&'
%left SHL SHR
%left '+' '-'
%left '*' '/' '%'
%precedence UMINUS
%right POW

%type <node> decl stmt expr primary block if_tail opt_chunks map_entry
%type <list> stmts params idents args exprs map_entries opt_with bindings citems centries opt_args pstmts pwords
%type <node> citem cvalue centry opt_below pstmt pword
%type <i> opt_choose
%type <i> xfer_op
%type <s> collective

%%

program
	: %empty
	| program decl { if ($2) ast_push(lx->arena, &prog->decls, $2); }
	;

decl
	: ALGORITHM IDENT ':' collective block {
		$$ = NEW(A_ALGO, @2); $$->str = $2;
		$$->a = NEW(A_NAME, @4); $$->a->str = $4; $$->b = $5; }
	| FN IDENT '(' params ')' block {
		$$ = NEW(A_FN, @2); $$->str = $2; $$->list = $4; $$->b = $6; }
	| IMPORT STRING ';' { $$ = NEW(A_IMPORT, @2); $$->str = $2; }
	| CLUSTER IDENT '{' citems '}' { $$ = NEW(A_CLUSTER, @2); $$->str = $2; $$->list = $4; }
	| POLICY IDENT '{' pstmts '}' { $$ = NEW(A_POLICY, @2); $$->str = $2; $$->list = $4; }
	| error '}' { $$ = NULL; }
	;

/* Policy bodies: statements of words (`cold below auto : fastest;`,
 * `failover within 200ms;`), read by policy.c, which knows what each
 * statement may say and points at the word that is wrong. */
pstmts
	: %empty { $$ = (ast_list){0}; }
	| pstmts pstmt { $$ = $1; if ($2) ast_push(lx->arena, &$$, $2); }
	;

pstmt
	: pwords ';' { $$ = NEW(A_PSTMT, @1); $$->list = $1; }
	| error ';' { $$ = NULL; }
	;

pwords
	: pword { $$ = (ast_list){0}; ast_push(lx->arena, &$$, $1); }
	| pwords pword { $$ = $1; ast_push(lx->arena, &$$, $2); }
	;

pword
	: IDENT { $$ = NEW(A_NAME, @1); $$->str = $1; }
	| INT { $$ = NEW(A_INT, @1); $$->ival = $1; }
	| TIME { $$ = NEW(A_TIME, @1); $$->ival = $1; }
	| BELOW { $$ = NEW(A_NAME, @1); $$->str = "below"; }
	| ':' { $$ = NEW(A_NAME, @1); $$->str = ":"; }
	| ',' { $$ = NEW(A_NAME, @1); $$->str = ","; }
	;

/* Cluster bodies: `key value;` and `key word value;` items and `collective
 * { algo, ... } [choose by cost];` blocks.  A value is a literal or a name, never a set literal,
 * so `allreduce {` cannot be mistaken for `key {set}`. */
citems
	: %empty { $$ = (ast_list){0}; }
	| citems citem { $$ = $1; if ($2) ast_push(lx->arena, &$$, $2); }
	;

citem
	: IDENT cvalue ';' { $$ = NEW(A_CITEM, @1); $$->str = $1; $$->a = $2; }
	| POLICY IDENT ';' { $$ = NEW(A_CITEM, @1); $$->str = "policy"; $$->a = NEW(A_NAME, @2); $$->a->str = $2; }
	/* two-word settings: `reorder by cost;`, `reorder at init;`, and the
	 * links file's declarations `group rack0 "0 3";`, `uplink rack0
	 * "4Gbit/s";`, `segment trunk "rack0 <-> rack1 10Gbit/s";` (the
	 * second word in b; cluster.c checks the combinations) */
	| IDENT IDENT cvalue ';' {
		$$ = NEW(A_CITEM, @1); $$->str = $1; $$->a = $3;
		$$->b = NEW(A_NAME, @2); $$->b->str = $2; }
	| collective '{' centries '}' opt_choose {
		$$ = NEW(A_CCOLL, @1); $$->str = $1; $$->list = $3; $$->ival = $5; }
	| error ';' { $$ = NULL; }
	;

cvalue
	: INT { $$ = NEW(A_INT, @1); $$->ival = $1; }
	| STRING { $$ = NEW(A_STR, @1); $$->str = $1; }
	| IDENT { $$ = NEW(A_NAME, @1); $$->str = $1; }
	;

opt_choose
	: ';' { $$ = 0; }
	| %empty { $$ = 0; }
	| CHOOSE IDENT IDENT ';' {
		/* 1: by cost; 2: by measure (by cost at build time, measured when
		 * a communicator starts) */
		if (strcmp($2, "by") || (strcmp($3, "cost") && strcmp($3, "measure"))) {
			diag_error(P(@2), "expected 'choose by cost' or 'choose by measure', found 'choose %s %s'", $2, $3);
		}
		$$ = strcmp($3, "measure") == 0 ? 2 : 1; }
	;

centries
	: centry { $$ = (ast_list){0}; ast_push(lx->arena, &$$, $1); }
	| centries csep centry { $$ = $1; ast_push(lx->arena, &$$, $3); }
	| centries csep { $$ = $1; }
	;

csep: ',' | ';' ;

/* `rails { tcp "eth0"; ... }` has entries with a string: cluster.c
 * allows them there only. */
centry
	: IDENT opt_args opt_below { $$ = NEW(A_CENTRY, @1); $$->str = $1; $$->list = $2; $$->a = $3; }
	| IDENT STRING { $$ = NEW(A_CENTRY, @1); $$->str = $1; $$->b = NEW(A_STR, @2); $$->b->str = $2; }
	;

opt_args
	: %empty { $$ = (ast_list){0}; }
	| '(' bindings ')' { $$ = $2; }
	;

opt_below
	: %empty { $$ = NULL; }
	| BELOW INT { $$ = NEW(A_INT, @2); $$->ival = $2; }
	;

/* `reduce` is also the transfer keyword, so the collective may be either. */
collective
	: IDENT
	| REDUCE { $$ = "reduce"; }
	;

params
	: %empty { $$ = (ast_list){0}; }
	| idents { $$ = $1; }
	;

idents
	: IDENT { $$ = (ast_list){0}; ast *x = NEW(A_NAME, @1); x->str = $1; ast_push(lx->arena, &$$, x); }
	| idents ',' IDENT { $$ = $1; ast *x = NEW(A_NAME, @3); x->str = $3; ast_push(lx->arena, &$$, x); }
	;

block
	: '{' stmts '}' { $$ = NEW(A_BLOCK, @1); $$->list = $2; }
	;

stmts
	: %empty { $$ = (ast_list){0}; }
	| stmts stmt { $$ = $1; if ($2) ast_push(lx->arena, &$$, $2); }
	;

stmt
	: LET IDENT '=' expr ';' { $$ = NEW(A_LET, @2); $$->str = $2; $$->a = $4; }
	| expr '=' expr ';' { $$ = NEW(A_ASSIGN, @2); $$->op = OP_SET; $$->a = $1; $$->b = $3; }
	| expr PLUSEQ expr ';' { $$ = NEW(A_ASSIGN, @2); $$->op = OP_ADD; $$->a = $1; $$->b = $3; }
	| expr MINUSEQ expr ';' { $$ = NEW(A_ASSIGN, @2); $$->op = OP_SUB; $$->a = $1; $$->b = $3; }
	| IF expr block if_tail { $$ = NEW(A_IF, @1); $$->a = $2; $$->b = $3; $$->c = $4; }
	| FOR IDENT IN expr block { $$ = NEW(A_FOR, @1); $$->str = $2; $$->a = $4; $$->b = $5;
		$$->d = NEW(A_NAME, @2); $$->d->str = $2; }
	| WHILE expr block { $$ = NEW(A_WHILE, @1); $$->a = $2; $$->b = $3; }
	| BREAK ';' { $$ = NEW(A_BREAK, @1); }
	| CONTINUE ';' { $$ = NEW(A_CONTINUE, @1); }
	| RETURN ';' { $$ = NEW(A_RETURN, @1); }
	| RETURN expr ';' { $$ = NEW(A_RETURN, @1); $$->a = $2; }
	| REQUIRE expr ':' expr ';' { $$ = NEW(A_REQUIRE, @1); $$->a = $2; $$->b = $4; }
	| PARAM IDENT '=' expr ';' { $$ = NEW(A_PARAM, @2); $$->str = $2; $$->a = $4; }
	| CHUNKS expr ';' { $$ = NEW(A_CHUNKS, @1); $$->a = $2; }
	| PORTS expr ';' { $$ = NEW(A_PORTS, @1); $$->a = $2; }
	| PORTS expr ',' expr ';' { $$ = NEW(A_PORTS, @1); $$->a = $2; $$->b = $4; }
	| ROUND block { $$ = NEW(A_ROUND, @1); $$->b = $2; }
	| PHASE expr block { $$ = NEW(A_PHASE, @1); $$->a = $2; $$->b = $3; }
	| xfer_op expr ':' expr ARROW expr ';' {
		$$ = NEW(A_XFER, @1); $$->op = (int)$1; $$->a = $2; $$->b = $4; $$->c = $6; }
	| xfer_op expr ':' expr BIARROW expr ';' {
		$$ = NEW(A_XFER, @1); $$->op = (int)$1; $$->a = $2; $$->b = $4; $$->c = $6; $$->both = true; }
	| RUN IDENT ON expr opt_chunks opt_with ';' {
		$$ = NEW(A_RUN, @2); $$->str = $2; $$->a = $4; $$->b = $5; $$->list = $6; }
	| PARALLEL block { $$ = NEW(A_PARALLEL, @1); $$->b = $2; }
	| expr ';' { $$ = NEW(A_EXPR, @1); $$->a = $1; }
	| error ';' { $$ = NULL; }
	;

xfer_op
	: COPY { $$ = 0; }
	| REDUCE { $$ = 1; }
	;

if_tail
	: %empty { $$ = NULL; }
	| ELSE block { $$ = $2; }
	| ELSE IF expr block if_tail {
		ast *i = NEW(A_IF, @2); i->a = $3; i->b = $4; i->c = $5;
		$$ = NEW(A_BLOCK, @2); ast_push(lx->arena, &$$->list, i); }
	;

opt_chunks
	: %empty { $$ = NULL; }
	| CHUNKS expr { $$ = $2; }
	;

opt_with
	: %empty { $$ = (ast_list){0}; }
	| WITH bindings { $$ = $2; }
	;

bindings
	: IDENT '=' expr { $$ = (ast_list){0}; ast *x = NEW(A_PARAM, @1); x->str = $1; x->a = $3; ast_push(lx->arena, &$$, x); }
	| bindings ',' IDENT '=' expr { $$ = $1; ast *x = NEW(A_PARAM, @3); x->str = $3; x->a = $5; ast_push(lx->arena, &$$, x); }
	;

expr
	: primary
	| expr DOTDOT expr { $$ = NEW(A_RANGE, @2); $$->a = $1; $$->b = $3; }
	| expr OR expr { $$ = NEW(A_OR, @2); $$->a = $1; $$->b = $3; }
	| expr AND expr { $$ = NEW(A_AND, @2); $$->a = $1; $$->b = $3; }
	| NOT expr { $$ = NEW(A_UNOP, @1); $$->op = OP_NOT; $$->a = $2; }
	| expr EQ expr { $$ = binop(lx, OP_EQ, $1, $3, @2); }
	| expr NE expr { $$ = binop(lx, OP_NE, $1, $3, @2); }
	| expr '<' expr { $$ = binop(lx, OP_LT, $1, $3, @2); }
	| expr LE expr { $$ = binop(lx, OP_LE, $1, $3, @2); }
	| expr '>' expr { $$ = binop(lx, OP_GT, $1, $3, @2); }
	| expr GE expr { $$ = binop(lx, OP_GE, $1, $3, @2); }
	| expr IN expr { $$ = binop(lx, OP_IN, $1, $3, @2); }
	| expr NOTIN expr { $$ = binop(lx, OP_NOTIN, $1, $3, @2); }
	| expr '|' expr { $$ = binop(lx, OP_UNION, $1, $3, @2); }
	| expr '^' expr { $$ = binop(lx, OP_XOR, $1, $3, @2); }
	| expr '&' expr { $$ = binop(lx, OP_INTER, $1, $3, @2); }
	| expr SHL expr { $$ = binop(lx, OP_SHL, $1, $3, @2); }
	| expr SHR expr { $$ = binop(lx, OP_SHR, $1, $3, @2); }
	| expr POW expr { $$ = binop(lx, OP_POW, $1, $3, @2); }
	| expr '+' expr { $$ = binop(lx, OP_ADD, $1, $3, @2); }
	| expr '-' expr { $$ = binop(lx, OP_SUB, $1, $3, @2); }
	| expr '*' expr { $$ = binop(lx, OP_MUL, $1, $3, @2); }
	| expr '/' expr { $$ = binop(lx, OP_DIV, $1, $3, @2); }
	| expr '%' expr { $$ = binop(lx, OP_MOD, $1, $3, @2); }
	| '-' expr %prec UMINUS { $$ = NEW(A_UNOP, @1); $$->op = OP_NEG; $$->a = $2; }
	;

primary
	: INT { $$ = NEW(A_INT, @1); $$->ival = $1; }
	| TRUE { $$ = NEW(A_BOOL, @1); $$->ival = 1; }
	| FALSE { $$ = NEW(A_BOOL, @1); $$->ival = 0; }
	| STRING { $$ = NEW(A_STR, @1); $$->str = $1; }
	| IDENT { $$ = NEW(A_NAME, @1); $$->str = $1; }
	| '(' expr ')' { $$ = $2; }
	| '[' ']' { $$ = NEW(A_LIST, @1); }
	| '[' exprs opt_comma ']' { $$ = NEW(A_LIST, @1); $$->list = $2; }
	| '{' '}' { $$ = NEW(A_MAP, @1); }
	| '{' exprs opt_comma '}' { $$ = NEW(A_SET, @1); $$->list = $2; }
	| '{' map_entries opt_comma '}' { $$ = NEW(A_MAP, @1); $$->list = $2; }
	| IDENT '(' args ')' { $$ = NEW(A_CALL, @1); $$->str = $1; $$->list = $3; }
	| primary '[' expr ']' { $$ = NEW(A_INDEX, @2); $$->a = $1; $$->b = $3; }
	;

opt_comma
	: %empty
	| ','
	;

args
	: %empty { $$ = (ast_list){0}; }
	| exprs { $$ = $1; }
	;

exprs
	: expr { $$ = (ast_list){0}; ast_push(lx->arena, &$$, $1); }
	| exprs ',' expr { $$ = $1; ast_push(lx->arena, &$$, $3); }
	;

map_entries
	: map_entry { $$ = (ast_list){0}; ast_push(lx->arena, &$$, $1); }
	| map_entries ',' map_entry { $$ = $1; ast_push(lx->arena, &$$, $3); }
	;

map_entry
	: expr ':' expr { $$ = NEW(A_BINOP, @2); $$->a = $1; $$->b = $3; }
	;

%%

static ast *binop(lex_state *lx, int op, ast *a, ast *b, parse_loc loc)
{
	ast *x = ast_new(lx->arena, A_BINOP, P(loc));
	x->op = op;
	x->a = a;
	x->b = b;
	return x;
}

static void yyerror(parse_loc *loc, lex_state *lx, ast_prog *prog, const char *msg)
{
	(void)prog;
	/* Bison says "memory exhausted" when its stack reaches YYMAXDEPTH */
	if (strcmp(msg, "memory exhausted") == 0)
		msg = "nesting too deep";
	diag_error(P(*loc), "%s", msg);
}

/* Is symbol k's name one of the space-separated names in list? */
static bool named(yysymbol_kind_t k, const char *list)
{
	const char *name = yysymbol_name(k);
	size_t len = strlen(name);
	for (const char *p = list; (p = strstr(p, name)); p += len)
		if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
			return true;
	return false;
}

/* Tokens that continue a complete expression (binary operators, '[', '..')
 * are always possible after one, so listing them would bury the one token
 * that is actually missing; tokens that start an expression collapse into
 * "an expression". */
#define CONTINUES "'..' 'or' 'and' '==' '!=' '<=' '>=' 'in' 'not in' '<' '>' '|' '^' '&' '<<' '>>' '+' '-' '*' '/' '%' '**' '['"
#define STARTS "integer string identifier 'true' 'false' 'not' '(' '{' '-' '['"

/* "expected ';', found 'chunks'": name what the grammar could take. */
static int yyreport_syntax_error(const yypcontext_t *ctx, lex_state *lx, ast_prog *prog)
{
	(void)prog;
	enum { MAXEXP = 64, SHOW = 6 };
	yysymbol_kind_t exp[MAXEXP];
	const char *names[MAXEXP];
	int nexp = yypcontext_expected_tokens(ctx, exp, MAXEXP), k = 0;
	bool expr = false;
	/* integer and '(' are expected exactly where an expression may start */
	for (int i = 0; i < nexp; i++)
		expr |= named(exp[i], "integer '('");
	for (int i = 0; i < nexp; i++)
		if (!named(exp[i], CONTINUES) && !(expr && named(exp[i], STARTS)))
			names[k++] = yysymbol_name(exp[i]);
	if (expr)
		names[k++] = "an expression";
	yysymbol_kind_t got = yypcontext_token(ctx);
	/* at end of file inside a block, the missing '}' is what matters */
	if (got == YYSYMBOL_YYEOF && k > SHOW)
		for (int i = 0; i < nexp; i++)
			if (named(exp[i], "'}'")) {
				names[0] = "'}'";
				k = 1;
			}
	char buf[512];
	size_t len = 0;
	if (nexp > 0 && k > 0 && k <= SHOW) {
		len += snprintf(buf + len, sizeof buf - len, "expected ");
		for (int i = 0; i < k; i++)
			len += snprintf(buf + len, sizeof buf - len, "%s%s",
					i == 0 ? "" : i == k - 1 ? " or " : ", ", names[i]);
		len += snprintf(buf + len, sizeof buf - len, ", found ");
	} else {
		len += snprintf(buf + len, sizeof buf - len, "unexpected ");
	}
	snprintf(buf + len, sizeof buf - len, "%s", got == YYSYMBOL_YYEMPTY ? "nothing" : yysymbol_name(got));
	diag_error(P(*yypcontext_location(ctx)), "%s", buf);
	return 0;
}

int parse_file(ast_prog *prog, const src_file *f)
{
	lex_state lx = { .file = f, .cur = f->text, .lim = f->text + f->len, .arena = prog->arena };
	int before = diag_errors;
	if (yyparse(&lx, prog) != 0 && diag_errors == before)
		diag_error((srcpos){ f, (uint32_t)f->len }, "cannot parse this file");
	return diag_errors - before;
}
