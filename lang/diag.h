/*
 * diag.h - source files and diagnostics.
 *
 * Every token and AST node carries a srcpos (file + byte offset); line and
 * column are computed only when a message is printed.  All compiler errors
 * go through this file (diag_error with a position, diag_file_error about
 * a whole file, diag_tool_error about the command line), so they share one
 * format, one error limit and one output path:
 *
 *   file:line:col: error: message
 *     <the source line>
 *     <caret under the column>
 */
#ifndef COLL_DIAG_H
#define COLL_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct src_file {
	char *name;   /* as given on the command line */
	char *text;   /* NUL-terminated contents */
	size_t len;
	uint32_t *lines;   /* diag.c: offsets of the line starts, built on first use */
	size_t nlines;
} src_file;

typedef struct {
	const src_file *file;  /* NULL: no position (command line, internal) */
	uint32_t off;
} srcpos;

/* diag.c */
extern int diag_errors;          /* errors reported so far */
extern int diag_max_errors;      /* stop after this many (0: never; default 20) */
extern size_t diag_max_input;    /* the largest source file read (bytes; default 64 MiB) */
extern const char *diag_tool;    /* prefix for position-less errors, "collc" */
/* Read a whole file; NULL (and an error naming the file printed) when it
 * cannot be read, is larger than diag_max_input, or holds a NUL byte
 * (binary input gets one message, not one per byte). */
src_file *diag_load(const char *path);
/* The same for a file an `import` at `from` names: errors point there. */
src_file *diag_load_from(const char *path, srcpos from);
/* Make a src_file from memory (for -e and tests); copies `text`. */
src_file *diag_from_string(const char *name, const char *text);
void diag_free_file(src_file *f);
/* 1-based line and column of a position. */
void diag_linecol(srcpos p, int *line, int *col);
/* Report an error at p (or without position when p.file is NULL). */
void diag_error(srcpos p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag_verror(srcpos p, const char *fmt, va_list ap);
/* A note attached to the previous error ("note: round opened here");
 * dropped with it when that error was beyond the limit. */
void diag_note(srcpos p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An error about a whole file: "FILE: error: message". */
void diag_file_error(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag_vfile_error(const char *file, const char *fmt, va_list ap);
/* An error about no file (the command line): "collc: error: message". */
void diag_tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* True once the error limit was reached: passes should stop (the lexer
 * ends the file). */
bool diag_stopped(void);
/* Format "file:line:col" of p into buf; returns buf. */
char *diag_where(srcpos p, char *buf, size_t len);

/* Spelling suggestions, for "(did you mean 'check'?)": start with the
 * unknown word, offer every candidate in order; best is then the closest
 * (Damerau-Levenshtein distance at most 2 and below len/2 + 1, len the
 * word's length), the first of equals, or NULL. */
typedef struct {
	const char *word;
	const char *best;   /* a candidate as offered, or NULL */
	int dist;
} diag_suggest;
diag_suggest diag_suggest_start(const char *word);
/* Offer cand; true when it is the best so far (for callers that keep
 * what goes with it). */
bool diag_suggest_add(diag_suggest *s, const char *cand);

#endif
