/*
 * lex.re - the re2c lexer for .coll files.
 *
 * Pipeline: source text -> tokens for parse.y.  The buffer is the whole
 * NUL-terminated file (re2c's sentinel method); tokens carry byte offsets
 * only, line/column are computed when a diagnostic is printed.  Lexical
 * errors are reported here, once, and lexing continues after the bad
 * character so the parser sees a plausible token stream and does not add
 * a second message for the same mistake.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "parse.h"
#include "units.h"

/*!re2c
	re2c:api:style = free-form;
	re2c:define:YYCTYPE = "unsigned char";
	re2c:define:YYCURSOR = "lx->cur";
	re2c:define:YYMARKER = "lx->mark";
	re2c:yyfill:enable = 0;

	ident   = [A-Za-z_][A-Za-z0-9_]*;
	dec     = [0-9][0-9_]*;
	hex     = "0" [xX] [0-9a-fA-F][0-9a-fA-F_]*;
	ws      = [ \t\r\n\f\v]+;
	comment = "#" [^\n\x00]*;
*/

static srcpos here(lex_state *lx, const char *p)
{
	return (srcpos){ lx->file, (uint32_t)(p - lx->file->text) };
}

/* Parse an integer literal (underscores allowed); report overflow. */
static int64_t lex_int(lex_state *lx, const char *b, const char *e)
{
	int base = 10;
	uint64_t v = 0;
	const char *p = b;
	if (e - b > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X')) {
		base = 16;
		p += 2;
	}
	for (; p < e; p++) {
		int d;
		if (*p == '_')
			continue;
		if (*p >= '0' && *p <= '9') d = *p - '0';
		else if (*p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
		else d = *p - 'A' + 10;
		if (v > (UINT64_C(1) << 63) / (uint64_t)base) goto overflow;
		v = v * base + d;
		if (v > (uint64_t)INT64_MAX) goto overflow;
	}
	return (int64_t)v;
overflow:
	diag_error(here(lx, b), "integer literal '%.*s' does not fit in 64 bits", (int)(e - b), b);
	return 0;
}

/* A literal with a unit, such as 64KiB, 1GB, 200ms or 5us: the unit is
 * looked up in the one table of units (runtime/model/units.def), so the
 * language takes the suffixes every other reader of sizes and times
 * takes.  Sizes are an int number of bytes (*kind UNIT_SIZE), times
 * nanoseconds (UNIT_TIME: policies' bounds).  -1 when the suffix is no
 * size or time unit. */
static int64_t lex_unit(lex_state *lx, const char *b, const char *e, unit_kind *kind)
{
	const char *u = b;
	while (u < e && ((*u >= '0' && *u <= '9') || *u == '_'))
		u++;
	double scale;
	if (units_scale(UNIT_SIZE, u, (size_t)(e - u), &scale) == 0)
		*kind = UNIT_SIZE;
	else if (units_scale(UNIT_TIME, u, (size_t)(e - u), &scale) == 0)
		*kind = UNIT_TIME, scale *= 1e9;
	else
		return -1;
	int64_t v = lex_int(lx, b, u), mul = llround(scale), r;
	if (__builtin_mul_overflow(v, mul, &r)) {
		diag_error(here(lx, b), *kind == UNIT_SIZE ? "size literal '%.*s' does not fit in 64 bits"
			   : "time literal '%.*s' does not fit in 64 bits of nanoseconds", (int)(e - b), b);
		return 0;
	}
	return r;
}

/* Scan the body of a string literal starting after the opening quote. */
static int lex_string(lex_state *lx, YYSTYPE *val)
{
	const char *start = lx->tok;
	size_t cap = 16, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		char ch = *lx->cur;
		if (ch == '\0' || ch == '\n') {
			diag_error(here(lx, start), "unterminated string literal");
			break;
		}
		lx->cur++;
		if (ch == '"')
			break;
		if (ch == '\\') {
			char e = *lx->cur;
			switch (e) {
			case 'n': ch = '\n'; break;
			case 't': ch = '\t'; break;
			case '\\': ch = '\\'; break;
			case '"': ch = '"'; break;
			case '\0': case '\n':
				continue;   /* reported as unterminated above */
			default:
				diag_error(here(lx, lx->cur - 1), "unknown escape '\\%c' in string (use \\n \\t \\\\ \\\")", e);
				ch = e;
			}
			lx->cur++;
		}
		if (len + 1 >= cap)
			buf = realloc(buf, cap *= 2);
		buf[len++] = ch;
	}
	val->s = arena_strndup(lx->arena, buf, len);
	free(buf);
	return STRING;
}

/* The yylex of the pure parser: next token, its value and location. */
int lex_next(YYSTYPE *val, parse_loc *loc, lex_state *lx)
{
	for (;;) {
		if (diag_stopped())   /* past the error limit: end the file */
			lx->cur = lx->file->text + lx->file->len;
		lx->tok = lx->cur;
		loc->off = (uint32_t)(lx->tok - lx->file->text);
#define TOK(t) do { loc->end = (uint32_t)(lx->cur - lx->file->text); return (t); } while (0)
	/*!re2c
	"\x00" {
		if (lx->tok - lx->file->text >= (long)lx->file->len) { lx->cur--; TOK(END); }
		diag_error(here(lx, lx->tok), "NUL byte in source");   /* diag_load refuses files with one */
		continue;
	}
	ws      { continue; }
	comment { continue; }

	"algorithm" { TOK(ALGORITHM); }
	"fn"        { TOK(FN); }
	"import"    { TOK(IMPORT); }
	"cluster"   { TOK(CLUSTER); }
	"policy"    { TOK(POLICY); }
	"choose"    { TOK(CHOOSE); }
	"below"     { TOK(BELOW); }
	"let"       { TOK(LET); }
	"param"     { TOK(PARAM); }
	"chunks"    { TOK(CHUNKS); }
	"ports"     { TOK(PORTS); }
	"round"     { TOK(ROUND); }
	"phase"     { TOK(PHASE); }
	"copy"      { TOK(COPY); }
	"reduce"    { TOK(REDUCE); }
	"run"       { TOK(RUN); }
	"parallel"  { TOK(PARALLEL); }
	"on"        { TOK(ON); }
	"with"      { TOK(WITH); }
	"if"        { TOK(IF); }
	"else"      { TOK(ELSE); }
	"for"       { TOK(FOR); }
	"in"        { TOK(IN); }
	"while"     { TOK(WHILE); }
	"break"     { TOK(BREAK); }
	"continue"  { TOK(CONTINUE); }
	"return"    { TOK(RETURN); }
	"require"   { TOK(REQUIRE); }
	"true"      { val->i = 1; TOK(TRUE); }
	"false"     { val->i = 0; TOK(FALSE); }
	"and"       { TOK(AND); }
	"or"        { TOK(OR); }
	"not"       { TOK(NOT); }
	"not" [ \t\r\n]+ "in" { TOK(NOTIN); }

	ident       { val->s = arena_strndup(lx->arena, lx->tok, lx->cur - lx->tok); TOK(IDENT); }
	dec | hex   { val->i = lex_int(lx, lx->tok, lx->cur); TOK(INT); }
	dec [A-Za-z]+ {
		unit_kind kind;
		int64_t v = lex_unit(lx, lx->tok, lx->cur, &kind);
		if (v >= 0) {
			val->i = v;
			if (kind == UNIT_TIME)
				TOK(TIME);
			TOK(INT);
		}
		diag_error(here(lx, lx->tok), "malformed number '%.*s'", (int)(lx->cur - lx->tok), lx->tok);
		val->i = 0;
		TOK(INT);
	}
	[0-9]+ [A-Za-z_][A-Za-z0-9_]* {
		diag_error(here(lx, lx->tok), "malformed number '%.*s'", (int)(lx->cur - lx->tok), lx->tok);
		val->i = 0;
		TOK(INT);
	}
	"\""        { int t = lex_string(lx, val); TOK(t); }

	"->"  { TOK(ARROW); }
	"<->" { TOK(BIARROW); }
	".."  { TOK(DOTDOT); }
	"=="  { TOK(EQ); }
	"!="  { TOK(NE); }
	"<="  { TOK(LE); }
	">="  { TOK(GE); }
	"+="  { TOK(PLUSEQ); }
	"-="  { TOK(MINUSEQ); }
	"<<"  { TOK(SHL); }
	">>"  { TOK(SHR); }
	"**"  { TOK(POW); }
	[;:,()[\]{}=<>+\-*/%|&^] { TOK(lx->tok[0]); }

	* {
		unsigned char c = (unsigned char)lx->tok[0];
		if (c >= 0x20 && c < 0x7f)
			diag_error(here(lx, lx->tok), "unexpected character '%c'", c);
		else
			diag_error(here(lx, lx->tok), "unexpected byte 0x%02x", c);
		continue;
	}
	*/
#undef TOK
	}
}
