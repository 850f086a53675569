/*
 * linkfile.c - links files: the matrix of per-pair latencies and
 * bandwidths with the shared segments declared beside it, read
 * (link_read_matrix) and written (link_write_matrix); linkmodel.h
 * describes the format.
 *
 * Pipeline position: the model floor's one text format.  collc reads
 * the files collprobe writes (--links, a cluster's `links`); libcollrt
 * writes one for coll_probe's caller from the model it measured.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linkmodel.h"

/* --- matrix files ---------------------------------------------------------- */

typedef struct {
	int src, dst;        /* -1: '*' */
	double alpha, bw;
	int line;
} entry;

static int parse_rank(const char *tok, int *r)
{
	if (strcmp(tok, "*") == 0) {
		*r = -1;
		return 0;
	}
	char *end;
	errno = 0;
	long v = strtol(tok, &end, 10);
	if (*end || end == tok || errno || v < 0 || v >= LINK_MAX_RANKS || !isdigit((unsigned char)*tok))
		return -1;
	*r = (int)v;
	return 0;
}

/* One line of f into buf (NUL-terminated, newline dropped), adding its
 * bytes to *total: 1, 0 at the end of the file, -1 when longer than
 * buf holds, -2 at a NUL byte, -3 when *total passes LINK_MAX_BYTES. */
static int read_line(FILE *f, char *buf, size_t cap, size_t *total)
{
	size_t n = 0;
	int ch;
	while ((ch = getc(f)) != EOF) {
		if (++*total > LINK_MAX_BYTES)
			return -3;
		if (ch == '\n')
			break;
		if (ch == '\0')
			return -2;
		if (n + 1 >= cap)
			return -1;
		buf[n++] = (char)ch;
	}
	buf[n] = '\0';
	return ch == EOF && n == 0 ? 0 : 1;
}

/* The lines declarations came from, so that an error about one given
 * twice names both lines. */
typedef struct {
	int *group, *seg;    /* per group, per segment of the declarations read */
	int gcap, scap;
	int rank_bw;         /* 0: none yet */
	int mem_bw, reduce_bw, cores;   /* the host's lines; 0: none yet */
} decl_lines;

/* Note lineno against the groups and segments from g0 and s0 on. */
static int note_lines(decl_lines *dl, const link_model *decl, int g0, int s0, int lineno)
{
	if (decl->ngroups > dl->gcap) {
		int nc = 2 * decl->ngroups;
		int *nl = realloc(dl->group, sizeof *nl * (size_t)nc);
		if (!nl)
			return -1;
		dl->group = nl, dl->gcap = nc;
	}
	if (decl->nsegs > dl->scap) {
		int nc = 2 * decl->nsegs;
		int *nl = realloc(dl->seg, sizeof *nl * (size_t)nc);
		if (!nl)
			return -1;
		dl->seg = nl, dl->scap = nc;
	}
	for (int g = g0; g < decl->ngroups; g++)
		dl->group[g] = lineno;
	for (int i = s0; i < decl->nsegs; i++)
		dl->seg[i] = lineno;
	return 0;
}

/* A declaration line that gives again what an earlier one gave (a
 * rank-bw, a group's name, a segment's, an uplink of a group): -1 with
 * the error at lineno naming the first line, else 0 (link_declare then
 * reads the line and finds any other fault). */
static int declared_twice(const link_model *decl, const decl_lines *dl, const char *line, const char *path,
			  int lineno, link_error *err)
{
	char kw[16], name[LINK_NAME_MAX + 2], a[16], arrow[8];
	int nt = sscanf(line, " %15s %64s %15s %7s", kw, name, a, arrow);
	if (nt >= 1 && strcmp(kw, "rank-bw") == 0 && dl->rank_bw)
		return link_errorf_at(err, path, lineno, "a second rank-bw line (first at line %d)", dl->rank_bw);
	const int *host = nt < 1 ? NULL : strcmp(kw, "mem-bw") == 0 ? &dl->mem_bw
		: strcmp(kw, "reduce-bw") == 0 ? &dl->reduce_bw : strcmp(kw, "cores") == 0 ? &dl->cores : NULL;
	if (host && *host)
		return link_errorf_at(err, path, lineno, "a second %s line (first at line %d)", kw, *host);
	if (nt < 2 || strlen(name) > LINK_NAME_MAX)
		return 0;
	int g, s;
	if (strcmp(kw, "group") == 0 && (g = link_group_find(decl, name)) >= 0)
		return link_errorf_at(err, path, lineno, "a second group named '%s' (first at line %d)", name, dl->group[g]);
	char other[LINK_NAME_MAX + 8];
	if (strcmp(kw, "uplink") == 0) {
		snprintf(other, sizeof other, "%s.up", name);
		if ((s = link_segment_find(decl, other)) >= 0 && decl->segs[s].decl == LINK_DECL_UP)
			return link_errorf_at(err, path, lineno, "a second uplink of group %s (first at line %d)", name,
					      dl->seg[s]);
		for (int k = 0; k < 2; k++) {
			snprintf(other, sizeof other, k ? "%s.down" : "%s.up", name);
			if ((s = link_segment_find(decl, other)) >= 0)
				return link_errorf_at(err, path, lineno, "uplink %s: a second segment named '%s' "
						      "(first at line %d)", name, other, dl->seg[s]);
		}
	}
	if (strcmp(kw, "segment") == 0) {
		if ((s = link_segment_find(decl, name)) >= 0)
			return link_errorf_at(err, path, lineno, "a second segment named '%s' (first at line %d)", name,
					      dl->seg[s]);
		snprintf(other, sizeof other, "%s.back", name);
		if (nt == 4 && strcmp(arrow, "<->") == 0 && (s = link_segment_find(decl, other)) >= 0)
			return link_errorf_at(err, path, lineno, "segment %s: a second segment named '%s' "
					      "(first at line %d)", name, other, dl->seg[s]);
	}
	return 0;
}

/* Entries in the order of their (src, dst), then line: a line that
 * repeats another's src and dst sorts right after it. */
static int cmp_entry(const void *x, const void *y)
{
	const entry *a = x, *b = y;
	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->dst != b->dst)
		return a->dst < b->dst ? -1 : 1;
	return (a->line > b->line) - (a->line < b->line);
}

static void fmt_rank(char *b, size_t len, int r)
{
	if (r < 0)
		snprintf(b, len, "*");
	else
		snprintf(b, len, "%d", r);
}

/* The first line, in file order, whose src and dst an earlier line gave
 * (`*` included): -1 with the error there, else 0.  Sorts ents. */
static int pairs_twice(entry *ents, int nents, const char *path, link_error *err)
{
	if (nents < 2)
		return 0;   /* (and qsort is not to be given a null array) */
	qsort(ents, (size_t)nents, sizeof *ents, cmp_entry);
	int at = -1;
	for (int k = 1; k < nents; k++)
		if (ents[k].src == ents[k - 1].src && ents[k].dst == ents[k - 1].dst &&
		    (at < 0 || ents[k].line < ents[at].line))
			at = k;
	if (at < 0)
		return 0;
	char s[16], d[16];
	fmt_rank(s, sizeof s, ents[at].src);
	fmt_rank(d, sizeof d, ents[at].dst);
	return link_errorf_at(err, path, ents[at].line, "pair %s -> %s given twice (also line %d)", s, d,
			      ents[at - 1].line);
}

/* The limit on a links file's rank count, said where a line passes it. */
#define TOO_MANY_RANKS "a links file holds at most %d ranks (16 bytes a pair: 256 MiB at %d)"

int link_read_matrix(link_model *lm, const char *path, link_error *err)
{
	memset(lm, 0, sizeof *lm);
	FILE *f = fopen(path, "r");
	if (!f)
		return link_errorf_at(err, path, 0, "cannot open: %s", strerror(errno));
	entry *ents = NULL;
	int nents = 0, cap = 0, ranks = -1, ranks_line = 0, maxrank = -1, rc = -1;
	int wild = 0;
	/* bounded reads: a line is a few fields, and a matrix of every pair of
	 * LINK_MAX_RANKS ranks fits in LINK_MAX_BYTES; /dev/zero or a binary
	 * file is refused at its first long line, not read into memory */
	char *line = malloc(LINK_MAX_LINE + 1);
	size_t total = 0;
	unsigned char *spec = NULL;
	int got;
	/* group/segment/uplink/rank-bw lines, kept aside until the matrix
	 * exists (link_matrix starts from an empty model) */
	link_model decl;
	memset(&decl, 0, sizeof decl);
	decl_lines dl = { 0 };
	if (!line) {
		fclose(f);
		return link_errorf_at(err, path, 0, "out of memory");
	}
	for (int lineno = 1; (got = read_line(f, line, LINK_MAX_LINE + 1, &total)) != 0; lineno++) {
		if (got < 0) {
			link_errorf_at(err, path, lineno, "%s: not a link matrix",
				    got == -1 ? "a line longer than " LINK_MAX_LINE_TEXT " bytes"
				    : got == -2 ? "a NUL byte (a binary file?)" : "larger than " LINK_MAX_BYTES_TEXT);
			goto out;
		}
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		if (declared_twice(&decl, &dl, line, path, lineno, err))
			goto out;
		link_error e1;
		int g0 = decl.ngroups, s0 = decl.nsegs;
		bool had_bw = decl.rank_bw > 0;
		link_host had_host = decl.host;
		int d = link_declare(&decl, line, &e1);
		if (d < 0) {
			link_errorf_at(err, path, lineno, "%s", e1.msg);
			goto out;
		}
		if (d > 0) {
			if (note_lines(&dl, &decl, g0, s0, lineno)) {
				link_errorf_at(err, path, lineno, "out of memory");
				goto out;
			}
			if (!had_bw && decl.rank_bw > 0)
				dl.rank_bw = lineno;
			if (had_host.mem_bw == 0 && decl.host.mem_bw > 0)
				dl.mem_bw = lineno;
			if (had_host.reduce_bw == 0 && decl.host.reduce_bw > 0)
				dl.reduce_bw = lineno;
			if (had_host.cores == 0 && decl.host.cores > 0)
				dl.cores = lineno;
			/* a group's ranks against the matrix's limit at once, so
			 * that memory stays in proportion to the file */
			if (decl.ngroups > g0 && decl.groups[g0].len > LINK_MAX_MATRIX) {
				link_errorf_at(err, path, lineno, "group %s: rank %d: " TOO_MANY_RANKS, decl.groups[g0].name,
					       decl.groups[g0].len - 1, LINK_MAX_MATRIX, LINK_MAX_MATRIX);
				goto out;
			}
			continue;
		}
		char *tok[5];
		int nt = 0;
		for (char *t = strtok(line, " \t\r\n"); t; t = strtok(NULL, " \t\r\n")) {
			if (nt < 5)
				tok[nt] = t;
			nt++;
		}
		if (nt == 0)
			continue;
		if (strcmp(tok[0], "ranks") == 0) {
			int r;
			if (nt != 2 || parse_rank(tok[1], &r) || r < 1) {
				if (nt == 2 && strspn(tok[1], "0123456789") == strlen(tok[1]) && strlen(tok[1]) > 4)
					link_errorf_at(err, path, lineno, "'ranks %s': " TOO_MANY_RANKS, tok[1],
						       LINK_MAX_MATRIX, LINK_MAX_MATRIX);
				else
					link_errorf_at(err, path, lineno, "expected 'ranks N' with N >= 1");
				goto out;
			}
			if (ranks >= 0) {
				link_errorf_at(err, path, lineno, "second 'ranks' line (first at line %d)", ranks_line);
				goto out;
			}
			if (r > LINK_MAX_MATRIX) {
				link_errorf_at(err, path, lineno, "'ranks %d': " TOO_MANY_RANKS, r, LINK_MAX_MATRIX,
					       LINK_MAX_MATRIX);
				goto out;
			}
			ranks = r;
			ranks_line = lineno;
			continue;
		}
		if (nt != 4) {
			link_errorf_at(err, path, lineno, "expected 'src dst alpha bandwidth', found %d field%s", nt, nt == 1 ? "" : "s");
			goto out;
		}
		entry e = { .line = lineno };
		if (parse_rank(tok[0], &e.src)) {
			link_errorf_at(err, path, lineno, "bad source rank '%s' (a rank number or '*')", tok[0]);
			goto out;
		}
		if (parse_rank(tok[1], &e.dst)) {
			link_errorf_at(err, path, lineno, "bad destination rank '%s' (a rank number or '*')", tok[1]);
			goto out;
		}
		if (e.src >= LINK_MAX_MATRIX || e.dst >= LINK_MAX_MATRIX) {
			link_errorf_at(err, path, lineno, "rank %d: " TOO_MANY_RANKS, e.src > e.dst ? e.src : e.dst,
				       LINK_MAX_MATRIX, LINK_MAX_MATRIX);
			goto out;
		}
		if (e.src >= 0 && e.src == e.dst) {
			link_errorf_at(err, path, lineno, "pair %d -> %d: a rank and itself (a pair is two ranks; "
				       "'*' lines skip a rank's pair with itself)", e.src, e.dst);
			goto out;
		}
		link_error e2;
		if (link_parse_time(tok[2], &e.alpha, &e2) || link_check_alpha("latency", e.alpha, &e2) ||
		    link_parse_bw(tok[3], &e.bw, &e2) || link_check_bw("bandwidth", e.bw, &e2)) {
			link_errorf_at(err, path, lineno, "%s", e2.msg);
			goto out;
		}
		if (e.src < 0 || e.dst < 0)
			wild = 1;
		if (e.src > maxrank)
			maxrank = e.src;
		if (e.dst > maxrank)
			maxrank = e.dst;
		if (nents == cap) {
			cap = cap ? 2 * cap : 64;
			entry *ne = realloc(ents, sizeof *ents * (size_t)cap);
			if (!ne) {
				link_errorf_at(err, path, lineno, "out of memory");
				goto out;
			}
			ents = ne;
		}
		ents[nents++] = e;
	}
	if (ferror(f)) {
		link_errorf_at(err, path, 0, "read error");
		goto out;
	}
	if (nents == 0 && ranks != 1) {
		link_errorf_at(err, path, 0, "no links (expected lines 'src dst alpha bandwidth'; a one-rank network "
			       "is 'ranks 1')");
		goto out;
	}
	if (pairs_twice(ents, nents, path, err))
		goto out;
	int n = ranks;
	if (n < 0) {
		if (maxrank < 0 || wild) {
			link_errorf_at(err, path, 0, "cannot tell the rank count from lines with '*': add a line 'ranks N'");
			goto out;
		}
		n = maxrank + 1;
	}
	/* the first line, in file order, that names a rank out of range
	 * (ents are sorted by pair now) */
	int bad = -1;
	for (int i = 0; i < nents; i++)
		if ((ents[i].src >= n || ents[i].dst >= n) && (bad < 0 || ents[i].line < ents[bad].line))
			bad = i;
	if (bad >= 0) {
		link_errorf_at(err, path, ents[bad].line, "rank %d out of range for %d ranks (line %d says 'ranks %d')",
			       ents[bad].src >= n ? ents[bad].src : ents[bad].dst, n, ranks_line, n);
		goto out;
	}
	if (link_matrix(lm, n, 0, 1, err))
		goto out;
	free(lm->source);
	lm->source = strdup(path);
	size_t nn = (size_t)n * (size_t)n;
	/* per pair, how specific the line that set it is: 0 none, then 1 + the
	 * ranks it names (a pair beats one star beats two) */
	spec = calloc(nn + 1, 1);
	if (!spec) {
		link_errorf_at(err, path, 0, "out of memory");
		goto out;
	}
	for (int k = 0; k < nents; k++) {
		const entry *e = &ents[k];
		unsigned char sp = (unsigned char)(1 + (e->src >= 0) + (e->dst >= 0));
		int s0 = e->src >= 0 ? e->src : 0, s1 = e->src >= 0 ? e->src : n - 1;
		int d0 = e->dst >= 0 ? e->dst : 0, d1 = e->dst >= 0 ? e->dst : n - 1;
		for (int i = s0; i <= s1; i++)
			for (int j = d0; j <= d1; j++) {
				size_t c = (size_t)i * (size_t)n + (size_t)j;
				if (i == j || spec[c] > sp)
					continue;
				if (spec[c] == sp) {
					/* two lines of one kind cover it ('0 *' and '* 1'):
					 * the error at the later line, naming the other */
					int o = -1;
					for (int q = 0; q < nents; q++)
						if (q != k && 1 + (ents[q].src >= 0) + (ents[q].dst >= 0) == sp &&
						    (ents[q].src < 0 || ents[q].src == i) && (ents[q].dst < 0 || ents[q].dst == j))
							o = q;
					int l1 = e->line, l2 = o >= 0 ? ents[o].line : 0;
					link_errorf_at(err, path, l1 > l2 ? l1 : l2, "pair %d -> %d given twice (also line %d)",
						       i, j, l1 > l2 ? l2 : l1);
					goto out;
				}
				spec[c] = sp;
				lm->alpha_m[c] = e->alpha;
				lm->beta_m[c] = 1 / e->bw;
			}
	}
	int missing = 0, mi = 0, mj = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j && spec[(size_t)i * (size_t)n + (size_t)j] == 0 && missing++ == 0) {
				mi = i;
				mj = j;
			}
	if (missing) {
		char more[48] = "";
		if (missing > 1)
			snprintf(more, sizeof more, " and %d more", missing - 1);
		link_errorf_at(err, path, 0, "missing pair %d -> %d%s: each of the %d ordered pairs of %d ranks needs a line",
		     mi, mj, more, n * (n - 1), n);
		goto out;
	}
	/* every group's ranks against n, at the group's line */
	for (int g = 0; g < decl.ngroups; g++)
		if (decl.groups[g].len > n) {
			link_errorf_at(err, path, dl.group[g], "group %s: rank %d out of range for %d ranks",
				       decl.groups[g].name, decl.groups[g].len - 1, n);
			goto out;
		}
	{
		link_error e1;
		if (link_copy_segments(lm, &decl, &e1)) {
			link_errorf_at(err, path, 0, "%s", e1.msg);
			goto out;
		}
	}
	rc = 0;
out:
	link_free(&decl);
	free(dl.group);
	free(dl.seg);
	free(line);
	if (rc)
		link_free(lm);
	free(spec);
	free(ents);
	fclose(f);
	return rc;
}

/* A time with a unit that reads back exactly (17 significant digits would
 * be exact but unreadable; 12 keeps probe output stable and precise). */
static void put_time(FILE *out, double s)
{
	if (s == 0)
		fputs("0", out);
	else if (s < 1e-3)
		fprintf(out, "%.12gus", s * 1e6);
	else
		fprintf(out, "%.12gms", s * 1e3);
}

/* A bandwidth that reads back exactly: the shortest of %.6g (what coll_probe's
 * readings carry, linkmodel.h), %.12g and %.17g that does. */
static void put_bw(FILE *out, double bw)
{
	char b[40];
	for (int digits = 6; digits <= 17; digits += digits == 6 ? 6 : 5) {
		snprintf(b, sizeof b, "%.*g", digits, bw);
		if (strtod(b, NULL) == bw)
			break;
	}
	fprintf(out, "%sB/s", b);
}

/* A segment endpoint as written: *, NAME or !NAME. */
static void put_end(FILE *out, const link_model *lm, int g, bool neg)
{
	if (g == LINK_ANY)
		fputs(neg ? "!*" : "*", out);
	else
		fprintf(out, "%s%s", neg ? "!" : "", lm->groups[g].name);
}

void link_write_matrix(FILE *out, const link_model *lm, int n)
{
	fprintf(out, "# coll link matrix: src dst alpha bandwidth\n");
	fprintf(out, "ranks %d\n", n);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			if (i == j)
				continue;
			fprintf(out, "%d\t%d\t", i, j);
			put_time(out, link_alpha(lm, i, j));
			fprintf(out, "\t%.12gGB/s\n", 1e-9 / link_beta(lm, i, j));
		}
	/* the shared segments, as declarations: a rank bandwidth, the
	 * groups, then each segment in the form it was declared in */
	if (lm->rank_bw > 0 || lm->ngroups || lm->nsegs)
		fprintf(out, "# shared segments: groups of ranks and the capacity their messages share\n");
	if (lm->rank_bw > 0) {
		fputs("rank-bw ", out);
		put_bw(out, lm->rank_bw);
		fputc('\n', out);
	}
	/* the host's shared resources (linkmodel.h, "One host") */
	if (link_has_host(lm))
		fprintf(out, "# one host: what its ranks share\n");
	if (lm->host.mem_bw > 0) {
		fputs("mem-bw ", out);
		put_bw(out, lm->host.mem_bw);
		fputc('\n', out);
	}
	if (lm->host.reduce_bw > 0) {
		fputs("reduce-bw ", out);
		put_bw(out, lm->host.reduce_bw);
		fputc('\n', out);
	}
	if (lm->host.cores > 0)
		fprintf(out, "cores %d\n", lm->host.cores);
	for (int g = 0; g < lm->ngroups; g++) {
		fprintf(out, "group %s", lm->groups[g].name);
		for (int r = 0; r < lm->groups[g].len; r++)
			if (lm->groups[g].in[r])
				fprintf(out, " %d", r);
		fputc('\n', out);
	}
	for (int i = 0; i < lm->nsegs; i++) {
		const link_segment *s = &lm->segs[i];
		switch (s->decl) {
		case LINK_DECL_UP:
			fprintf(out, "uplink %s ", lm->groups[s->src].name);
			break;
		case LINK_DECL_ONEWAY:
		case LINK_DECL_BOTH:
			fprintf(out, "segment %s ", s->name);
			put_end(out, lm, s->src, s->src_not);
			fputs(s->decl == LINK_DECL_BOTH ? " <-> " : " -> ", out);
			put_end(out, lm, s->dst, s->dst_not);
			fputc(' ', out);
			break;
		default:
			continue;   /* the second half of an uplink or a two-way segment */
		}
		put_bw(out, s->cap);
		fputc('\n', out);
	}
}
