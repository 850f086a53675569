/*
 * ast.h - the abstract syntax tree of .coll files, and the component
 * header of the front end (QBE style: prototypes grouped by file).
 *
 * Pipeline: lex.re + parse.y build the tree (nodes live in one arena per
 * program); resolve.c binds names to frame slots, functions and builtins;
 * eval.c walks the tree for a concrete n and emits the schedule IR.
 */
#ifndef COLL_AST_H
#define COLL_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"

typedef enum {
	/* expressions */
	A_INT, A_BOOL, A_STR, A_NAME, A_LIST, A_SET, A_MAP, A_RANGE,
	A_UNOP, A_BINOP, A_AND, A_OR, A_CALL, A_INDEX,
	/* statements */
	A_BLOCK, A_LET, A_ASSIGN, A_IF, A_FOR, A_WHILE, A_BREAK, A_CONTINUE,
	A_RETURN, A_REQUIRE, A_PARAM, A_CHUNKS, A_PORTS, A_ROUND, A_PHASE,
	A_XFER, A_RUN, A_PARALLEL, A_EXPR,
	/* declarations */
	A_ALGO, A_FN, A_IMPORT,
	/* cluster declarations (cluster.c checks them) */
	A_CLUSTER, A_CITEM, A_CCOLL, A_CENTRY
} ast_kind;

/* Operators of A_UNOP / A_BINOP and compound assignment. */
typedef enum {
	OP_NEG, OP_NOT,
	OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD,
	OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOTIN,
	OP_UNION, OP_INTER,       /* `|` and `&`: set union / intersection, or bitwise on ints */
	OP_XOR, OP_SHL, OP_SHR, OP_POW,   /* `^` (also symmetric difference of sets), `<<`, `>>`, `**` */
	OP_SET = -1  /* plain '=' in A_ASSIGN */
} ast_op;

/* How a name was bound by resolve.c. */
typedef enum {
	B_NONE, B_LOCAL, B_N, B_ROOT, B_FN, B_BUILTIN
} ast_bind;

typedef struct ast ast;
typedef struct { ast **v; int n, cap; } ast_list;

/* One node; which fields mean what depends on kind (see parse.y). */
struct ast {
	ast_kind kind;
	int op;            /* ast_op; for A_XFER the ir_op; A_XFER: both = '<->' */
	srcpos pos;
	int64_t ival;      /* A_INT, A_BOOL */
	char *str;         /* A_STR text, A_NAME/A_LET/A_FOR/A_PARAM/A_ALGO/A_FN/A_RUN name */
	ast *a, *b, *c, *d;
	ast_list list;     /* elements, statements, arguments, parameters */
	bool both;         /* A_XFER with '<->' */
	/* filled by resolve.c */
	int bind;          /* ast_bind */
	int slot;          /* B_LOCAL frame slot; B_BUILTIN id; A_FN/A_ALGO frame size */
	ast *target;       /* B_FN: the A_FN node; A_RUN: the A_ALGO node */
	int kindof;        /* A_ALGO: the collective (ir_kind) */
	int fast;          /* ast_fast: set by resolve.c on expressions that
			      the evaluator's fast path can compute (see
			      eval_int.h) */
	struct fast_code *code;   /* fastcode.c: such an expression, or a block
				     (A_BLOCK), compiled on first use */
};

/* The static type of an expression the evaluator's fast path computes
 * without boxing values: arithmetic and comparisons over int literals,
 * locals, n, element chains x[i][j] and len() of those, combined with
 * and/or/not.  Run-time values can still make the fast path give up (a
 * local that holds a list, a missing key); the generic path then runs. */
typedef enum { FAST_NO, FAST_INT, FAST_BOOL } ast_fast;

/* The program: every declaration of every file loaded together. */
typedef struct {
	ast_list decls;
	struct arena *arena;
	src_file **files;
	int nfiles;
} ast_prog;

/* ast.c */
struct arena *arena_new(void);
void arena_free(struct arena *a);
/* Zeroed memory that lives until arena_free. */
void *arena_alloc(struct arena *a, size_t n);
char *arena_strndup(struct arena *a, const char *s, size_t n);
ast *ast_new(struct arena *a, ast_kind kind, srcpos pos);
void ast_push(struct arena *a, ast_list *l, ast *x);

/* lex.re: the lexer state the parser drives */
typedef struct {
	const src_file *file;
	const char *cur, *tok, *mark, *lim;
	struct arena *arena;
} lex_state;
typedef struct { uint32_t off, end; } parse_loc;

/* parse.y */
/* Parse one file, appending its declarations to prog; returns errors found. */
int parse_file(ast_prog *prog, const src_file *f);

/* driver.c (for cluster.c: the tree stays inside the front end) */
struct drv_prog;
/* The cluster declaration named `name` (NULL: the first one declared in a
 * file given to drv_load), or NULL. */
ast *drv_cluster_ast(const struct drv_prog *p, const char *name);

/* resolve.c */
/* Bind every name in prog; report unknown names, duplicate declarations,
 * arity errors and misplaced statements. Returns errors found. */
int resolve_prog(ast_prog *prog);
/* Builtin functions, in resolve.c's table order (builtins.c implements them). */
enum {
	BI_LEN, BI_MIN, BI_MAX, BI_ABS, BI_LOG2, BI_CLOG2, BI_ISPOW2, BI_SORTED,
	BI_LIST, BI_SET, BI_KEYS, BI_PUSH, BI_POP, BI_ADD, BI_REMOVE, BI_STR,
	BI_PRINT, BI_MATCHING, BI_HOLDS, BI_HAS, BI_CONTRIB, BI_HOLDERS,
	BI_OWNER, BI_NCHUNKS, BI_COUNT
};

#endif
