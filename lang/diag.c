/*
 * diag.c - source loading and the one diagnostic format of the compiler.
 *
 * Positions are byte offsets; converting to line/column scans the file,
 * which is fine because it only happens when a message is printed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

int diag_errors;
const char *diag_tool = "collc";

src_file *diag_load(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		fprintf(stderr, "%s: error: cannot open '%s': %s\n", diag_tool, path, strerror(errno));
		diag_errors++;
		return NULL;
	}
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + len, 1, cap - len - 1, fp)) > 0) {
		len += got;
		if (cap - len <= 1) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) { free(buf); buf = NULL; }
			buf = nb;
		}
	}
	int err = ferror(fp) ? errno : 0;
	fclose(fp);
	if (!buf || err) {
		fprintf(stderr, "%s: error: cannot read '%s': %s\n", diag_tool, path, strerror(buf ? err : ENOMEM));
		free(buf);
		diag_errors++;
		return NULL;
	}
	buf[len] = '\0';   /* the lexer's sentinel; a NUL inside is reported by the lexer */
	src_file *f = calloc(1, sizeof *f);
	f->name = strdup(path);
	f->text = buf;
	f->len = len;
	return f;
}

src_file *diag_from_string(const char *name, const char *text)
{
	src_file *f = calloc(1, sizeof *f);
	f->name = strdup(name);
	f->text = strdup(text);
	f->len = strlen(text);
	return f;
}

void diag_free_file(src_file *f)
{
	if (!f)
		return;
	free(f->name);
	free(f->text);
	free(f);
}

void diag_linecol(srcpos p, int *line, int *col)
{
	int l = 1, c = 1;
	if (p.file) {
		const char *t = p.file->text;
		for (uint32_t i = 0; i < p.off && i < p.file->len; i++) {
			if (t[i] == '\n') { l++; c = 1; }
			else c++;
		}
	}
	*line = l;
	*col = c;
}

char *diag_where(srcpos p, char *buf, size_t len)
{
	int line, col;
	if (!p.file) {
		snprintf(buf, len, "%s", diag_tool);
		return buf;
	}
	diag_linecol(p, &line, &col);
	snprintf(buf, len, "%s:%d:%d", p.file->name, line, col);
	return buf;
}

/* Print the source line holding p and a caret under its column. */
static void show_line(srcpos p)
{
	if (!p.file)
		return;
	const char *t = p.file->text;
	uint32_t off = p.off > p.file->len ? (uint32_t)p.file->len : p.off;
	uint32_t b = off, e = off;
	while (b > 0 && t[b - 1] != '\n')
		b--;
	while (e < p.file->len && t[e] != '\n')
		e++;
	fprintf(stderr, "  %.*s\n  ", (int)(e - b), t + b);
	for (uint32_t i = b; i < off; i++)
		fputc(t[i] == '\t' ? '\t' : ' ', stderr);
	fputs("^\n", stderr);
}

static void report(srcpos p, const char *kind, const char *fmt, va_list ap)
{
	char where[512];
	fprintf(stderr, "%s: %s: ", diag_where(p, where, sizeof where), kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	show_line(p);
}

void diag_verror(srcpos p, const char *fmt, va_list ap)
{
	diag_errors++;
	report(p, "error", fmt, ap);
}

void diag_error(srcpos p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_verror(p, fmt, ap);
	va_end(ap);
}

void diag_note(srcpos p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report(p, "note", fmt, ap);
	va_end(ap);
}
