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
	if (*end || end == tok || errno || v < 0 || v >= 65536 || !isdigit((unsigned char)*tok))
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
	int *spec = NULL, *from = NULL, got;
	/* group/segment/uplink/rank-bw lines, kept aside until the matrix
	 * exists (link_matrix starts from an empty model) */
	link_model decl;
	memset(&decl, 0, sizeof decl);
	int *group_line = NULL;   /* the line of each group declared */
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
		link_error e1;
		int had = decl.ngroups;
		int d = link_declare(&decl, line, &e1);
		if (d < 0) {
			link_errorf_at(err, path, lineno, "%s", e1.msg);
			goto out;
		}
		if (d > 0) {
			if (decl.ngroups > had) {
				int *nl = realloc(group_line, sizeof *nl * (size_t)decl.ngroups);
				if (!nl) {
					link_errorf_at(err, path, 0, "out of memory");
					goto out;
				}
				group_line = nl;
				group_line[had] = lineno;
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
				link_errorf_at(err, path, lineno, "expected 'ranks N' with N >= 1");
				goto out;
			}
			if (ranks >= 0) {
				link_errorf_at(err, path, lineno, "second 'ranks' line (first at line %d)", ranks_line);
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
		link_error e2;
		if (link_parse_time(tok[2], &e.alpha, &e2) || link_parse_bw(tok[3], &e.bw, &e2)) {
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
				link_errorf_at(err, path, 0, "out of memory");
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
	if (nents == 0) {
		link_errorf_at(err, path, 0, "no links (expected lines 'src dst alpha bandwidth')");
		goto out;
	}
	int n = ranks;
	if (n < 0) {
		if (maxrank < 0 || wild) {
			link_errorf_at(err, path, 0, "cannot tell the rank count from lines with '*': add a line 'ranks N'");
			goto out;
		}
		n = maxrank + 1;
	}
	for (int i = 0; i < nents; i++)
		if (ents[i].src >= n || ents[i].dst >= n) {
			link_errorf_at(err, path, ents[i].line, "rank %d out of range for %d ranks (line %d says 'ranks %d')",
			     ents[i].src >= n ? ents[i].src : ents[i].dst, n,
			     ranks_line, n);
			goto out;
		}
	if (link_matrix(lm, n, 0, 1, err))
		goto out;
	free(lm->source);
	lm->source = strdup(path);
	size_t nn = (size_t)n * (size_t)n;
	spec = malloc(sizeof *spec * nn);
	from = malloc(sizeof *from * nn);
	if (!spec || !from) {
		link_errorf_at(err, path, 0, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nn; i++)
		spec[i] = -1;
	for (int k = 0; k < nents; k++) {
		const entry *e = &ents[k];
		int sp = (e->src >= 0) + (e->dst >= 0);
		int s0 = e->src >= 0 ? e->src : 0, s1 = e->src >= 0 ? e->src : n - 1;
		int d0 = e->dst >= 0 ? e->dst : 0, d1 = e->dst >= 0 ? e->dst : n - 1;
		for (int i = s0; i <= s1; i++)
			for (int j = d0; j <= d1; j++) {
				size_t c = (size_t)i * (size_t)n + (size_t)j;
				if (i == j || spec[c] > sp)
					continue;
				if (spec[c] == sp) {
					link_errorf_at(err, path, e->line, "pair %d -> %d given twice (also line %d)",
					     i, j, ents[from[c]].line);
					goto out;
				}
				spec[c] = sp;
				from[c] = k;
				lm->alpha_m[c] = e->alpha;
				lm->beta_m[c] = 1 / e->bw;
			}
	}
	int missing = 0, mi = 0, mj = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j && spec[(size_t)i * (size_t)n + (size_t)j] < 0 && missing++ == 0) {
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
			link_errorf_at(err, path, group_line[g], "group %s: rank %d out of range for %d ranks",
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
	free(group_line);
	free(line);
	if (rc)
		link_free(lm);
	free(spec);
	free(from);
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
