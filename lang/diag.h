/*
 * diag.h - source files and diagnostics.
 *
 * Every token and AST node carries a srcpos (file + byte offset); line and
 * column are computed only when a message is printed.  All compiler errors
 * go through diag_error so they share one format:
 *
 *   file:line:col: error: message
 *     <the source line>
 *     <caret under the column>
 */
#ifndef COLL_DIAG_H
#define COLL_DIAG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct src_file {
	char *name;   /* as given on the command line */
	char *text;   /* NUL-terminated contents */
	size_t len;
} src_file;

typedef struct {
	const src_file *file;  /* NULL: no position (command line, internal) */
	uint32_t off;
} srcpos;

/* diag.c */
extern int diag_errors;          /* errors reported so far */
extern const char *diag_tool;    /* prefix for position-less errors, "collc" */
/* Read a whole file; NULL (and an error printed) when it cannot be read. */
src_file *diag_load(const char *path);
/* Make a src_file from memory (for -e and tests); copies `text`. */
src_file *diag_from_string(const char *name, const char *text);
void diag_free_file(src_file *f);
/* 1-based line and column of a position. */
void diag_linecol(srcpos p, int *line, int *col);
/* Report an error at p (or without position when p.file is NULL). */
void diag_error(srcpos p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag_verror(srcpos p, const char *fmt, va_list ap);
/* A note attached to the previous error ("note: round opened here"). */
void diag_note(srcpos p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Format "file:line:col" of p into buf; returns buf. */
char *diag_where(srcpos p, char *buf, size_t len);

#endif
