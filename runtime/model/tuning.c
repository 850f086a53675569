/*
 * tuning.c - tuning files read, checked against a job, turned into a size
 * table and written; tuning.h describes the format and the rules.
 *
 * Pipeline position: the model floor.  The reader is strict, as the links
 * file's is: a tuning file decides which algorithm every call of a job
 * runs, so a line it cannot read is an error naming the file and line,
 * never skipped.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coll_kinds.h"
#include "tuning.h"

tune_table *tune_new(void) { return calloc(1, sizeof(tune_table)); }

void tune_free(tune_table *t)
{
	if (!t)
		return;
	free(t->hosts);
	free(t->rows);
	free(t);
}

/* --- building ----------------------------------------------------------- */

/* A name of an algorithm, transport or collective: letters, digits and
 * _ . - (what the language and the transports' table allow), below max. */
static int good_name(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n >= max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return 0;
	return 1;
}

/* A host name: printable ASCII without blanks or '#'. */
static int good_host(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= TUNE_HOST_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == '#')
			return 0;
	return 1;
}

int tune_add_host(tune_table *t, const char *host, link_error *err)
{
	if (!good_host(host))
		return link_errorf(err, "bad host name '%.64s' (printable, no blanks or '#', below %d bytes)", host,
		                   TUNE_HOST_MAX);
	if (t->nhosts >= TUNE_MAX_HOSTS)
		return link_errorf(err, "more than %d hosts", TUNE_MAX_HOSTS);
	if ((t->nhosts & (t->nhosts - 1)) == 0) {   /* 0, 1, 2, 4, ...: grow */
		size_t cap = t->nhosts ? 2 * (size_t)t->nhosts : 1;
		void *h = realloc(t->hosts, cap * sizeof *t->hosts);
		if (!h)
			return link_errorf(err, "out of memory");
		t->hosts = h;
	}
	snprintf(t->hosts[t->nhosts++], TUNE_HOST_MAX, "%s", host);
	return 0;
}

int tune_add_cand(tune_table *t, int kind, const char *algo, link_error *err)
{
	if (kind < 0 || kind >= COLL_NCOLLS)
		return link_errorf(err, "bad collective %d", kind);
	if (!good_name(algo, TUNE_NAME_MAX))
		return link_errorf(err, "bad algorithm name '%.64s' (letters, digits, _ . -, below %d bytes)", algo,
		                   TUNE_NAME_MAX);
	for (int i = 0; i < t->ncands[kind]; i++)
		if (strcmp(t->cands[kind][i], algo) == 0)
			return link_errorf(err, "%s candidate '%s' named twice", coll_kind_get(kind)->name, algo);
	if (t->ncands[kind] >= TUNE_MAX_CANDS)
		return link_errorf(err, "more than %d %s candidates", TUNE_MAX_CANDS, coll_kind_get(kind)->name);
	snprintf(t->cands[kind][t->ncands[kind]++], TUNE_NAME_MAX, "%s", algo);
	return 0;
}

tune_row *tune_add_row(tune_table *t, int kind, uint64_t bytes, link_error *err)
{
	if (kind < 0 || kind >= COLL_NCOLLS || !t->ncands[kind]) {
		link_errorf(err, "a %s row before its candidates", kind >= 0 && kind < COLL_NCOLLS ?
		            coll_kind_get(kind)->name : "?");
		return NULL;
	}
	for (int i = t->nrows - 1; i >= 0; i--)
		if (t->rows[i].kind == kind) {
			if (t->rows[i].bytes >= bytes) {
				link_errorf(err, "%s sizes must increase: %llu after %llu", coll_kind_get(kind)->name,
				            (unsigned long long)bytes, (unsigned long long)t->rows[i].bytes);
				return NULL;
			}
			break;
		}
	if (t->nrows >= TUNE_MAX_ROWS) {
		link_errorf(err, "more than %d rows", TUNE_MAX_ROWS);
		return NULL;
	}
	if ((t->nrows & (t->nrows - 1)) == 0) {
		size_t cap = t->nrows ? 2 * (size_t)t->nrows : 1;
		tune_row *r = realloc(t->rows, cap * sizeof *r);
		if (!r) {
			link_errorf(err, "out of memory");
			return NULL;
		}
		t->rows = r;
	}
	tune_row *r = &t->rows[t->nrows++];
	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->bytes = bytes;
	r->winner = -1;
	r->spread = -1;
	for (int i = 0; i < TUNE_MAX_CANDS; i++)
		r->times[i] = -1;
	return r;
}

/* --- reading ------------------------------------------------------------ */

static int cmp_host(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A host named twice, or NULL: sorted, so that a file of 65536 hosts is
 * checked in n log n, not n^2. */
static const char *dup_host(const tune_table *t)
{
	if (t->nhosts < 2)
		return NULL;
	const char **v = malloc(sizeof *v * (size_t)t->nhosts);
	if (!v)
		return NULL;   /* out of memory: the names go unchecked, nothing worse */
	for (int i = 0; i < t->nhosts; i++)
		v[i] = t->hosts[i];
	qsort(v, (size_t)t->nhosts, sizeof *v, cmp_host);
	const char *d = NULL;
	for (int i = 1; i < t->nhosts && !d; i++)
		if (strcmp(v[i - 1], v[i]) == 0)
			d = v[i];
	free(v);
	return d;
}

static int kind_by_name(const char *s)
{
	for (int k = 0; k < COLL_NCOLLS; k++)
		if (strcmp(coll_kind_get(k)->name, s) == 0)
			return k;
	return -1;
}

static int cand_index(const tune_table *t, int kind, const char *name)
{
	for (int i = 0; i < t->ncands[kind]; i++)
		if (strcmp(t->cands[kind][i], name) == 0)
			return i;
	return -1;
}

#define MAXTOK 72   /* candidates line: keyword, collective, TUNE_MAX_CANDS names, one too many */

/* Split line (modified) at blanks into tok; the count, or MAXTOK + 1
 * when there are more.  A '#' starts a comment. */
static int split(char *line, char **tok)
{
	int n = 0;
	char *h = strchr(line, '#');
	if (h)
		*h = 0;
	for (char *s = line;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (!*s)
			return n;
		if (n == MAXTOK)
			return MAXTOK + 1;
		tok[n++] = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\r')
			s++;
		if (*s)
			*s++ = 0;
	}
}

/* A row's optional fields: CANDIDATE=TIME and spread=PERCENT. */
static int row_field(tune_table *t, tune_row *r, const char *tok, const char *name, int line, link_error *err)
{
	const char *eq = strchr(tok, '=');
	if (!eq || eq == tok)
		return link_errorf_at(err, name, line, "expected CANDIDATE=TIME or spread=PERCENT, found '%.64s'", tok);
	char key[TUNE_NAME_MAX];
	size_t kl = (size_t)(eq - tok);
	if (kl >= sizeof key)
		return link_errorf_at(err, name, line, "field name too long in '%.64s'", tok);
	memcpy(key, tok, kl);
	key[kl] = 0;
	if (strcmp(key, "spread") == 0) {
		char *end;
		errno = 0;
		double p = strtod(eq + 1, &end);
		if (end == eq + 1 || strcmp(end, "%") != 0 || errno || !(p >= 0 && p <= 1e6) || !isdigit((unsigned char)eq[1]))
			return link_errorf_at(err, name, line, "bad spread '%.64s': expected a percentage such as 3.5%%",
			                      eq + 1);
		r->spread = p / 100;
		return 0;
	}
	int i = cand_index(t, r->kind, key);
	if (i < 0)
		return link_errorf_at(err, name, line, "'%s' is not a %s candidate of this file", key,
		                      coll_kind_get(r->kind)->name);
	if (r->times[i] >= 0)
		return link_errorf_at(err, name, line, "time of '%s' given twice", key);
	link_error e;
	double s;
	if (link_parse_time(eq + 1, &s, &e))
		return link_errorf_at(err, name, line, "%s", e.msg);
	r->times[i] = s;
	return 0;
}

int tune_parse(const char *text, size_t len, const char *name, tune_table **out, link_error *err)
{
	*out = NULL;
	if (len > TUNE_MAX_BYTES)
		return link_errorf_at(err, name, 0, "larger than %u bytes: not a tuning file", TUNE_MAX_BYTES);
	tune_table *t = tune_new();
	if (!t)
		return link_errorf(err, "out of memory");
	snprintf(t->path, sizeof t->path, "%s", name);
	char *buf = malloc(TUNE_MAX_LINE);   /* one line at a time (the heap: communicators start in threads) */
	char *tok[MAXTOK + 1];
	if (!buf) {
		tune_free(t);
		return link_errorf(err, "out of memory");
	}
	int line = 0, seen_version = 0, have_rows = 0;
	int seen_date = 0, seen_hosts = 0, seen_transport = 0, seen_ranks = 0;
	for (size_t at = 0; at < len;) {
		line++;
		size_t e = at;
		while (e < len && text[e] != '\n')
			e++;
		size_t ll = e - at;
		if (ll >= TUNE_MAX_LINE) {
			link_errorf_at(err, name, line, "line longer than %d bytes", TUNE_MAX_LINE - 1);
			goto fail;
		}
		memcpy(buf, text + at, ll);
		buf[ll] = 0;
		at = e + 1;
		if (memchr(buf, 0, ll)) {
			link_errorf_at(err, name, line, "a NUL byte: not a text file");
			goto fail;
		}
		int nt = split(buf, tok);
		if (nt == 0)
			continue;
		if (nt > MAXTOK) {
			link_errorf_at(err, name, line, "more than %d fields on a line (at most %d candidates per collective; "
			               "split a long host list over several hosts lines)", MAXTOK, TUNE_MAX_CANDS);
			goto fail;
		}
		if (!seen_version) {
			if (strcmp(tok[0], "coll-tuning") != 0 || nt != 2) {
				link_errorf_at(err, name, line, "expected 'coll-tuning %d' first: not a tuning file", TUNE_VERSION);
				goto fail;
			}
			long long v;
			if (units_parse_int(tok[1], 1, 1000000, &v) || v != TUNE_VERSION) {
				link_errorf_at(err, name, line, "tuning file version '%.32s': this coll reads version %d", tok[1],
				               TUNE_VERSION);
				goto fail;
			}
			seen_version = 1;
			continue;
		}
		const char *kw = tok[0];
		int header = strcmp(kw, "date") == 0 || strcmp(kw, "hosts") == 0 || strcmp(kw, "transport") == 0 ||
		             strcmp(kw, "ranks") == 0;
		if (header && have_rows) {
			link_errorf_at(err, name, line, "'%s' after the rows: the header comes first", kw);
			goto fail;
		}
		if (strcmp(kw, "date") == 0) {
			if (seen_date++ || nt != 2 || strlen(tok[1]) >= sizeof t->date) {
				link_errorf_at(err, name, line, seen_date > 1 ? "a second 'date' line" :
				               "expected 'date WORD' (one word, below %zu bytes)", sizeof t->date);
				goto fail;
			}
			snprintf(t->date, sizeof t->date, "%s", tok[1]);
		} else if (strcmp(kw, "hosts") == 0) {
			seen_hosts = 1;   /* several lines add up: a long host list is split */
			if (nt < 2) {
				link_errorf_at(err, name, line, "expected 'hosts NAME...'");
				goto fail;
			}
			for (int i = 1; i < nt; i++) {
				link_error e;
				if (tune_add_host(t, tok[i], &e)) {
					link_errorf_at(err, name, line, "%s", e.msg);
					goto fail;
				}
			}
		} else if (strcmp(kw, "transport") == 0) {
			if (seen_transport++ || nt != 2 || !good_name(tok[1], TUNE_NAME_MAX)) {
				link_errorf_at(err, name, line, seen_transport > 1 ? "a second 'transport' line" :
				               "expected 'transport NAME'");
				goto fail;
			}
			snprintf(t->transport, sizeof t->transport, "%s", tok[1]);
		} else if (strcmp(kw, "ranks") == 0) {
			long long v;
			if (seen_ranks++ || nt != 2 || units_parse_int(tok[1], 1, 65536, &v)) {
				link_errorf_at(err, name, line, seen_ranks > 1 ? "a second 'ranks' line" :
				               "expected 'ranks N' with N in 1..65536");
				goto fail;
			}
			t->nranks = (int32_t)v;
		} else if (strcmp(kw, "candidates") == 0) {
			int k = nt >= 2 ? kind_by_name(tok[1]) : -1;
			if (nt < 3 || k < 0) {
				link_errorf_at(err, name, line, "expected 'candidates COLLECTIVE ALGO...' (a collective: %s)",
				               "allreduce, reduce_scatter, allgather, broadcast, reduce, alltoall");
				goto fail;
			}
			if (t->ncands[k]) {
				link_errorf_at(err, name, line, "a second candidates line for %s", tok[1]);
				goto fail;
			}
			for (int i = 2; i < nt; i++) {
				link_error e;
				if (tune_add_cand(t, k, tok[i], &e)) {
					link_errorf_at(err, name, line, "%s", e.msg);
					goto fail;
				}
			}
		} else {
			int k = kind_by_name(kw);
			if (k < 0) {
				link_errorf_at(err, name, line, "unknown line '%.64s' (expected date, hosts, transport, ranks, "
				               "candidates or a row: COLLECTIVE BYTES WINNER ...)", kw);
				goto fail;
			}
			if (!seen_date || !seen_hosts || !seen_transport || !seen_ranks) {
				link_errorf_at(err, name, line, "a row before the header's %s line",
				               !seen_date ? "date" : !seen_hosts ? "hosts" : !seen_transport ? "transport" : "ranks");
				goto fail;
			}
			long long b;
			if (nt < 3 || units_parse_int(tok[1], 0, (long long)1e18, &b)) {
				link_errorf_at(err, name, line, "expected '%s BYTES WINNER [CANDIDATE=TIME...] [spread=P%%]' with "
				               "BYTES a whole number in 0..1e18", kw);
				goto fail;
			}
			link_error e;
			tune_row *r = tune_add_row(t, k, (uint64_t)b, &e);
			if (!r) {
				link_errorf_at(err, name, line, "%s", e.msg);
				goto fail;
			}
			if ((r->winner = cand_index(t, k, tok[2])) < 0) {
				link_errorf_at(err, name, line, "winner '%.64s' is not among the %s candidates", tok[2], kw);
				goto fail;
			}
			for (int i = 3; i < nt; i++)
				if (row_field(t, r, tok[i], name, line, err))
					goto fail;
			have_rows = 1;
		}
	}
	if (!seen_version) {
		link_errorf_at(err, name, 0, "empty: not a tuning file");
		goto fail;
	}
	if (!seen_date || !seen_hosts || !seen_transport || !seen_ranks) {
		link_errorf_at(err, name, 0, "no '%s' line", !seen_date ? "date" : !seen_hosts ? "hosts" :
		               !seen_transport ? "transport" : "ranks");
		goto fail;
	}
	for (int k = 0; k < COLL_NCOLLS; k++) {
		int rows = 0;
		for (int i = 0; i < t->nrows; i++)
			rows += t->rows[i].kind == k;
		if (t->ncands[k] && !rows) {
			link_errorf_at(err, name, 0, "%s has candidates but no rows", coll_kind_get(k)->name);
			goto fail;
		}
	}
	if (!t->nrows) {
		link_errorf_at(err, name, 0, "no rows: nothing was tuned");
		goto fail;
	}
	const char *dup = dup_host(t);
	if (dup) {
		link_errorf_at(err, name, 0, "host '%s' named twice", dup);
		goto fail;
	}
	free(buf);
	*out = t;
	return 0;
fail:
	free(buf);
	tune_free(t);
	return -1;
}

int tune_read(const char *path, tune_table **out, link_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return link_errorf_at(err, path, 0, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return link_errorf_at(err, path, 0, "not a regular file");
	}
	if (st.st_size > (off_t)TUNE_MAX_BYTES) {
		close(fd);
		return link_errorf_at(err, path, 0, "larger than %u bytes: not a tuning file", TUNE_MAX_BYTES);
	}
	char *text = malloc((size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		return link_errorf(err, "out of memory");
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t k = read(fd, text + got, (size_t)st.st_size - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	int rc = tune_parse(text, got, path, out, err);
	free(text);
	return rc;
}

/* --- writing ------------------------------------------------------------ */

/* A time for people and for link_parse_time (plain decimals, no
 * exponent): microseconds, 4 significant digits below 1000. */
static void put_time(FILE *f, double s)
{
	double us = s * 1e6;
	if (us >= 1000)
		fprintf(f, "%.0fus", us);
	else
		fprintf(f, "%.4gus", us < 1e-3 ? 1e-3 : us);
}

int tune_write(FILE *f, const tune_table *t, const char *comment)
{
	fprintf(f, "coll-tuning %d\n", TUNE_VERSION);
	if (comment && *comment)
		for (const char *s = comment; *s;) {
			const char *e = strchr(s, '\n');
			int n = e ? (int)(e - s) : (int)strlen(s);
			fprintf(f, "# %.*s\n", n, s);
			s += n + (e != NULL);
		}
	fprintf(f, "date %s\n", t->date[0] ? t->date : "unknown");
	for (int i = 0; i < t->nhosts; i++)
		fprintf(f, "%s %s%s", i % TUNE_HOSTS_PER_LINE ? "" : "hosts", t->hosts[i],
		        i % TUNE_HOSTS_PER_LINE == TUNE_HOSTS_PER_LINE - 1 || i == t->nhosts - 1 ? "\n" : "");
	fprintf(f, "transport %s\nranks %d\n", t->transport, (int)t->nranks);
	for (int k = 0; k < COLL_NCOLLS; k++) {
		if (!t->ncands[k])
			continue;
		fprintf(f, "candidates %s", coll_kind_get(k)->name);
		for (int i = 0; i < t->ncands[k]; i++)
			fprintf(f, " %s", t->cands[k][i]);
		fputc('\n', f);
	}
	fprintf(f, "# collective, bytes, the fastest; each candidate's median time per call; the fastest's spread\n");
	for (int i = 0; i < t->nrows; i++) {
		const tune_row *r = &t->rows[i];
		fprintf(f, "%s %llu %s", coll_kind_get(r->kind)->name, (unsigned long long)r->bytes,
		        t->cands[r->kind][r->winner]);
		for (int c = 0; c < t->ncands[r->kind]; c++)
			if (r->times[c] >= 0) {
				fprintf(f, " %s=", t->cands[r->kind][c]);
				put_time(f, r->times[c]);
			}
		/* what the reader takes: a finite percentage up to 1e6 (a median
		 * of 0 makes the spread infinite) */
		if (r->spread >= 0 && isfinite(r->spread))
			fprintf(f, " spread=%.1f%%", r->spread > 1e4 ? 1e6 : r->spread * 100);
		fputc('\n', f);
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

/* --- fitting a job ------------------------------------------------------ */

/* The algorithm a coll job runs for row r: its winner, or where `mpi`
 * won, the fastest other candidate timed there; -1 when none is. */
static int coll_winner(const tune_table *t, const tune_row *r)
{
	if (strcmp(t->cands[r->kind][r->winner], TUNE_MPI) != 0)
		return r->winner;
	int best = -1;
	for (int c = 0; c < t->ncands[r->kind]; c++)
		if (strcmp(t->cands[r->kind][c], TUNE_MPI) != 0 && r->times[c] >= 0 &&
		    (best < 0 || r->times[c] < r->times[best]))
			best = c;
	return best;
}


int tune_check(const tune_table *t, int nranks, const char *transport, const char *const *hosts, int nhosts,
               const int32_t *kinds, const char *const *names, int nalgos, link_error *err)
{
	const char *p = t->path[0] ? t->path : "tuning table";
	if (t->nranks != nranks)
		return link_errorf(err, "%s was measured with %d ranks, not %d", p, (int)t->nranks, nranks);
	if (transport && strcmp(t->transport, transport) != 0)
		return link_errorf(err, "%s was measured over transport %s, not %s", p, t->transport,
		                   transport);
	for (int h = 0; hosts && h < nhosts; h++) {
		int found = 0;
		for (int i = 0; i < t->nhosts && !found; i++)
			found = strcmp(t->hosts[i], hosts[h]) == 0;
		if (!found)
			return link_errorf(err, "%s was measured on host%s %s%s, not on %s (tune this machine with "
			                   "collbench --tune)", p, t->nhosts > 1 ? "s" : "", t->hosts[0],
			                   t->nhosts > 1 ? " ..." : "", hosts[h]);
	}
	for (int k = 0; k < COLL_NCOLLS; k++) {
		if (!t->ncands[k])
			continue;
		const char *kn = coll_kind_get(k)->name;
		for (int i = 0; i < nalgos; i++)
			if (kinds[i] == k && cand_index(t, k, names[i]) < 0)
				return link_errorf(err, "%s did not measure %s algorithm '%s' of this plan set (its candidates "
				                   "differ: tune again with this plan set)", p, kn, names[i]);
		for (int r = 0; r < t->nrows; r++) {
			if (t->rows[r].kind != k)
				continue;
			const char *w = t->cands[k][t->rows[r].winner];
			if (strcmp(w, TUNE_MPI) == 0) {
				/* MPI's own: the MPI layer's to serve; anyone else runs the
				 * row's fastest other candidate, which must be there */
				int fb = coll_winner(t, &t->rows[r]);
				if (fb < 0)
					continue;
				w = t->cands[k][fb];
			}
			int found = 0;
			for (int i = 0; i < nalgos && !found; i++)
				found = kinds[i] == k && strcmp(names[i], w) == 0;
			if (!found)
				return link_errorf(err, "%s chooses %s algorithm '%s' at %llu bytes, which this plan set lacks",
				                   p, kn, w, (unsigned long long)t->rows[r].bytes);
		}
	}
	return 0;
}

/* The boundary between measured sizes a < b: their geometric mean, so
 * each size takes the nearer measurement on a log scale (a row at 0
 * bytes takes empty calls alone). */
static uint64_t boundary(uint64_t a, uint64_t b)
{
	uint64_t hi = a == 0 ? 0 : (uint64_t)floor(sqrt((double)a) * sqrt((double)b));
	if (hi < a)
		hi = a;
	if (hi >= b)
		hi = b - 1;
	return hi;
}

int tune_choices(const tune_table *t, coll_choice **out)
{
	*out = NULL;
	coll_choice *c = calloc((size_t)t->nrows + 1, sizeof *c);
	if (!c)
		return -1;
	int n = 0;
	for (int k = 0; k < COLL_NCOLLS; k++) {
		const tune_row *prev = NULL;
		int pw = -1;
		for (int i = 0; i < t->nrows; i++) {
			const tune_row *r = &t->rows[i];
			int w;
			if (r->kind != k || (w = coll_winner(t, r)) < 0)
				continue;
			if (prev) {
				uint64_t hi = boundary(prev->bytes, r->bytes);
				if (n && c[n - 1].kind == k && strcmp(c[n - 1].algo, t->cands[k][pw]) == 0)
					c[n - 1].max_bytes = hi;   /* the same winner goes on */
				else
					c[n++] = (coll_choice){k, hi, t->cands[k][pw]};
			}
			prev = r;
			pw = w;
		}
		if (!prev)
			continue;
		if (n && c[n - 1].kind == k && strcmp(c[n - 1].algo, t->cands[k][pw]) == 0)
			c[n - 1].max_bytes = COLL_BYTES_MAX;
		else
			c[n++] = (coll_choice){k, COLL_BYTES_MAX, t->cands[k][pw]};
	}
	*out = c;
	return n;
}

const char *tune_winner(const tune_table *t, int kind, uint64_t bytes)
{
	const tune_row *prev = NULL;
	for (int i = 0; t && kind >= 0 && kind < COLL_NCOLLS && i < t->nrows; i++) {
		const tune_row *r = &t->rows[i];
		if (r->kind != kind)
			continue;
		if (prev && bytes <= boundary(prev->bytes, r->bytes))
			return t->cands[kind][prev->winner];
		prev = r;
	}
	return prev ? t->cands[kind][prev->winner] : NULL;
}

uint32_t tune_hash(const tune_table *t)
{
	uint32_t h = 2166136261u;
#define MIX(p, len)                                                   \
	for (size_t i_ = 0; i_ < (len); i_++)                             \
		h = (h ^ ((const unsigned char *)(p))[i_]) * 16777619u
	for (int i = 0; i < t->nrows; i++) {
		const tune_row *r = &t->rows[i];
		const char *w = t->cands[r->kind][r->winner];
		MIX(&r->kind, sizeof r->kind);
		MIX(&r->bytes, sizeof r->bytes);
		MIX(w, strlen(w) + 1);
	}
	coll_choice *c;
	int n = tune_choices(t, &c);
	for (int i = 0; i < n; i++) {
		MIX(&c[i].kind, sizeof c[i].kind);
		MIX(&c[i].max_bytes, sizeof c[i].max_bytes);
		MIX(c[i].algo, strlen(c[i].algo) + 1);
	}
	free(c);
#undef MIX
	return h ? h : 1;
}
