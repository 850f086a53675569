/*
 * diag.c - source loading and the one diagnostic format of the compiler.
 *
 * Positions are byte offsets; a file's line starts are indexed the first
 * time a message needs a line number, so each message costs a binary
 * search, not a scan of the file.  A message is formatted whole into a
 * buffer and written with one call (the quoted source line is cut to a
 * window around the caret), and after diag_max_errors errors the compiler
 * stops: one note says so, later errors are only counted, and the lexer
 * ends the file (diag_stopped), so a binary file or a line of thousands of
 * bad characters costs a few lines of output, not megabytes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diag.h"
#include "xalloc.h"

int diag_errors;
int diag_max_errors = 20;
size_t diag_max_input = 64u << 20;
const char *diag_tool = "collc";

static bool stopped;      /* the error limit was reached */
static bool last_shown;   /* the last error was printed (its notes go with it) */

bool diag_stopped(void) { return stopped; }

/* --- loading ----------------------------------------------------------------- */

/* The `import` being loaded, if any: file errors then point at it. */
static srcpos load_from;
static src_file *load(const char *path);

/* An error about a whole file, before it is a src_file: at the import
 * that named it, else about the file. */
static void file_error(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void file_error(const char *path, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (load_from.file)
		diag_error(load_from, "cannot import '%s': %s", path, msg);
	else
		diag_file_error(path, "%s", msg);
}

src_file *diag_load(const char *path)
{
	return diag_load_from(path, (srcpos){ 0 });
}

src_file *diag_load_from(const char *path, srcpos from)
{
	load_from = from;
	src_file *f = load(path);
	load_from = (srcpos){ 0 };
	return f;
}

static src_file *load(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		file_error(path, "cannot open: %s", strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(fp);
		file_error(path, "cannot read: %s", strerror(EISDIR));
		return NULL;
	}
	size_t cap = 4096, len = 0;
	char *buf = xmalloc(cap);
	size_t got;
	bool toobig = false;
	/* a size limit, not the file's stat size: /dev/zero and pipes have none */
	while ((got = fread(buf + len, 1, cap - len - 1, fp)) > 0) {
		len += got;
		if (len > diag_max_input) {
			toobig = true;
			break;
		}
		if (cap - len <= 1)
			buf = xrealloc(buf, cap *= 2);
	}
	int err = ferror(fp) ? errno : 0;
	fclose(fp);
	if (err || toobig) {
		if (toobig)
			file_error(path, "larger than %zu MiB: not a .coll source", diag_max_input >> 20);
		else
			file_error(path, "cannot read: %s", strerror(err));
		free(buf);
		return NULL;
	}
	buf[len] = '\0';   /* the lexer's sentinel */
	src_file *f = xcalloc(1, sizeof *f);
	f->name = xstrdup(path);
	f->text = buf;
	f->len = len;
	/* a binary file: one message at its first NUL, not one per odd byte */
	const char *nul = memchr(buf, '\0', len);
	if (nul) {
		diag_error((srcpos){ f, (uint32_t)(nul - buf) }, "NUL byte in source");
		diag_note((srcpos){ 0 }, "%s looks binary: .coll sources are text", path);
		diag_free_file(f);
		return NULL;
	}
	return f;
}

src_file *diag_from_string(const char *name, const char *text)
{
	src_file *f = xcalloc(1, sizeof *f);
	f->name = xstrdup(name);
	f->text = xstrdup(text);
	f->len = strlen(text);
	return f;
}

void diag_free_file(src_file *f)
{
	if (!f)
		return;
	free(f->name);
	free(f->text);
	free(f->lines);
	free(f);
}

/* --- positions --------------------------------------------------------------- */

/* Index the line starts of f (once). */
static void index_lines(const src_file *cf)
{
	src_file *f = (src_file *)cf;   /* a cache: logically const */
	if (f->lines)
		return;
	size_t n = 1;
	for (size_t i = 0; i < f->len; i++)
		n += f->text[i] == '\n';
	f->lines = xmalloc(n * sizeof *f->lines);
	f->nlines = 0;
	f->lines[f->nlines++] = 0;
	for (size_t i = 0; i < f->len; i++)
		if (f->text[i] == '\n')
			f->lines[f->nlines++] = (uint32_t)(i + 1);
}

/* The 0-based line holding offset off. */
static size_t line_of(const src_file *f, uint32_t off)
{
	index_lines(f);
	size_t lo = 0, hi = f->nlines;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (f->lines[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void diag_linecol(srcpos p, int *line, int *col)
{
	*line = *col = 1;
	if (!p.file)
		return;
	uint32_t off = p.off > p.file->len ? (uint32_t)p.file->len : p.off;
	size_t l = line_of(p.file, off);
	*line = (int)l + 1;
	*col = (int)(off - p.file->lines[l]) + 1;
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

/* --- messages ---------------------------------------------------------------- */

typedef struct {
	char *p;
	size_t len, cap;
} mbuf;

static void mput(mbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void mprintf(mbuf *b, const char *fmt, va_list ap)
{
	char small[512];
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(small, sizeof small, fmt, aq);
	va_end(aq);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		mput(b, small, (size_t)n);
		return;
	}
	char *big = xmalloc((size_t)n + 1);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	mput(b, big, (size_t)n);
	free(big);
}

/* A source line up to QUOTE_WHOLE bytes is quoted whole; a longer one
 * (generated code, a line of garbage) only around the caret. */
#define QUOTE_WHOLE 240
#define QUOTE_BEFORE 80
#define QUOTE_AFTER 80

/* The source line holding p and a caret under its column, cut to a
 * window around the caret ("..." marks a cut). */
static void quote_line(mbuf *b, srcpos p)
{
	if (!p.file)
		return;
	const char *t = p.file->text;
	uint32_t off = p.off > p.file->len ? (uint32_t)p.file->len : p.off;
	size_t l = line_of(p.file, off);
	uint32_t bol = p.file->lines[l], eol = off;
	while (eol < p.file->len && t[eol] != '\n')
		eol++;
	uint32_t from = bol, to = eol;
	if (eol - bol > QUOTE_WHOLE) {
		from = off - bol > QUOTE_BEFORE ? off - QUOTE_BEFORE : bol;
		to = eol - off > QUOTE_AFTER ? off + QUOTE_AFTER : eol;
	}
	if (memchr(t + from, '\0', to - from))   /* binary: nothing worth quoting */
		return;
	mput(b, "  ", 2);
	if (from > bol)
		mput(b, "...", 3);
	for (uint32_t i = from; i < to; i++) {   /* control bytes of a bad file print as '?' */
		unsigned char c = (unsigned char)t[i];
		mput(b, (c < 0x20 && c != '\t') || c == 0x7f ? "?" : t + i, 1);
	}
	if (to < eol)
		mput(b, "...", 3);
	mput(b, "\n  ", 3);
	if (from > bol)
		mput(b, "   ", 3);
	for (uint32_t i = from; i < off; i++)
		mput(b, t[i] == '\t' ? "\t" : " ", 1);
	mput(b, "^\n", 2);
}

static void write_out(mbuf *b)
{
	fwrite(b->p, 1, b->len, stderr);
	fflush(stderr);
	free(b->p);
}

/* Count an error; false when it is beyond the limit and must not print
 * (the first one beyond it prints the note that compilation stops). */
static bool count_error(void)
{
	diag_errors++;
	if (diag_max_errors > 0 && diag_errors > diag_max_errors) {
		if (!stopped)
			fprintf(stderr, "%s: error: too many errors (%d), stopping; --max-errors N raises the limit\n",
				diag_tool, diag_max_errors);
		stopped = true;
		last_shown = false;
		return false;
	}
	last_shown = true;
	return true;
}

static void report(srcpos p, const char *kind, const char *fmt, va_list ap)
{
	mbuf b = { 0 };
	char where[512];
	diag_where(p, where, sizeof where);
	mput(&b, where, strlen(where));
	mput(&b, ": ", 2);
	mput(&b, kind, strlen(kind));
	mput(&b, ": ", 2);
	mprintf(&b, fmt, ap);
	mput(&b, "\n", 1);
	quote_line(&b, p);
	write_out(&b);
}

void diag_verror(srcpos p, const char *fmt, va_list ap)
{
	if (count_error())
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
	if (!last_shown)
		return;
	va_list ap;
	va_start(ap, fmt);
	report(p, "note", fmt, ap);
	va_end(ap);
}

void diag_vfile_error(const char *file, const char *fmt, va_list ap)
{
	if (!count_error())
		return;
	mbuf b = { 0 };
	mput(&b, file, strlen(file));
	mput(&b, ": error: ", 9);
	mprintf(&b, fmt, ap);
	mput(&b, "\n", 1);
	write_out(&b);
}

void diag_file_error(const char *file, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vfile_error(file, fmt, ap);
	va_end(ap);
}

void diag_tool_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vfile_error(diag_tool, fmt, ap);
	va_end(ap);
}

/* --- suggestions ------------------------------------------------------------- */

diag_suggest diag_suggest_start(const char *word)
{
	return (diag_suggest){ .word = word, .best = NULL, .dist = 3 };
}

/* Damerau-Levenshtein (optimal string alignment) distance of a and b, or
 * any value above 2 once it must be: names are short, and longer ones are
 * never close. */
static int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63 || (la > lb ? la - lb : lb - la) > 2)
		return 3;
	int d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
			int m = sub < del ? sub : del;
			m = m < ins ? m : ins;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < m)
				m = d[i - 2][j - 2] + 1;   /* a transposition */
			d[i][j] = m;
		}
	return d[la][lb];
}

bool diag_suggest_add(diag_suggest *s, const char *cand)
{
	int k = distance(s->word, cand);
	if (k >= s->dist || k > 2 || (size_t)k >= strlen(s->word) / 2 + 1)
		return false;
	s->best = cand;
	s->dist = k;
	return true;
}
