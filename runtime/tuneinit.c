/*
 * tuneinit.c - `choose by measure` (a cluster's collective block) and
 * COLL_TUNE=init: a communicator times the plan set's candidates when it
 * starts and chooses by what it measured, caching the table per host
 * list so that the next start reads it.
 *
 * What is measured: every collective of the plan set with two or more
 * algorithms for n (COLL_TUNE=init), or those whose block says `choose by
 * measure`; sizes 1 KiB, 32 KiB, 1 MiB (each 32 times the last, up to
 * COLL_TUNE_MAX_BYTES); per size, each candidate once to warm it up and
 * size the repetitions, then TUNE_REPS repetitions interleaved across the
 * candidates, each as many calls as fill about TUNE_REP_S (at most
 * TUNE_MAX_CALLS), from a barrier.  Sizes between take the nearer
 * measurement's winner (tuning.h).  Time is bounded: the whole measurement
 * stops after the size during which it passed COLL_TUNE_TIME seconds
 * (default 2): the sizes not reached take the last measured winner, and
 * the collectives not reached keep the plan set's table.
 *
 * Agreement: after each size every rank's times go to every rank and
 * each takes the slowest rank's (so all hold the same numbers); rank 0
 * then decides the table, writes it in the tuning-file format and
 * broadcasts the text, which every rank parses and adopts: one decides,
 * as reorder at init does.  A cached table is read by rank 0 alone and
 * broadcast the same way.  The cache key is the host list (every rank's
 * host, namespace and address), the transport, the plan set and the
 * rank order; COLL_TUNE=retune ignores and rewrites it, COLL_TUNE_CACHE
 * names its directory ("off": none).
 *
 * Pipeline position: the last step of coll_init (comm.c), after the rank
 * order; it runs collectives on the communicator being started, through
 * the public entry points, as reorder at init does.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll_kinds.h"
#include "rt.h"
#include "tuning.h"

#define TUNE_REPS 3
#define TUNE_REP_S 0.002
#define TUNE_MAX_CALLS 200
#define TUNE_MAX_SIZES 8

static double now_s(void) { return (double)rt_now_ns() * 1e-9; }

/* Which collectives to measure: a bit per coll_kind with two or more
 * algorithms for n, of those asked for. */
static uint32_t kinds_to_tune(const coll_comm *c, uint32_t asked)
{
	uint32_t out = 0;
	for (int k = 0; k < COLL_NCOLLS; k++) {
		int na = 0;
		for (int i = 0; c->plans && i < c->plans->nalgos; i++)
			na += c->plans->algos[i]->kind == k && c->plans->algos[i]->nranks == c->n;
		if (na >= 2 && (asked >> k & 1))
			out |= 1u << k;
	}
	return out;
}

/* Every rank gets the slowest rank's value of each of v[0..k). */
static int max_all(coll_comm *c, double *v, int k)
{
	int n = c->n;
	double *all = malloc(sizeof *all * (size_t)k * (size_t)n);
	coll_xfer *x = malloc(sizeof *x * (size_t)n * (size_t)n + 1);
	if (!all || !x) {
		free(all), free(x);
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	/* a direct allgather: one round, every rank sends its block to all */
	int nx = 0;
	for (int s = 0; s < n; s++)
		for (int d = 0; d < n; d++)
			if (s != d)
				x[nx++] = (coll_xfer){ 0, s, d, s, 0 };
	coll_algo *al = coll_algo_build("tune_gather", COLL_ALLGATHER, n, n, 0, x, nx);
	free(x);
	int rc = al ? (int)coll_run_algo(c, al, v, all, (size_t)k * (size_t)n, COLL_DOUBLE, COLL_SUM)
	            : rt_err(c, COLL_ERR_NOMEM, "out of memory");
	coll_algo_free(al);
	for (int i = 0; rc == COLL_OK && i < k; i++)
		for (int r = 0; r < n; r++)
			v[i] = all[(size_t)r * (size_t)k + (size_t)i] > v[i] ? all[(size_t)r * (size_t)k + (size_t)i] : v[i];
	free(all);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Seconds per call of k calls of algo, from a barrier. */
static int time_calls(coll_comm *c, coll_kind kind, const char *algo, void *sb, void *rb, uint64_t cnt, long k,
                      double *t)
{
	int rc = coll_barrier(c);
	double t0 = now_s();
	for (long i = 0; rc == COLL_OK && i < k; i++)
		rc = coll_collective(c, kind, algo, sb, rb, cnt, COLL_FLOAT, COLL_SUM, 0);
	*t = (now_s() - t0) / (double)k;
	return rc;
}

/* Measure and decide (every rank); rank 0's table in t. */
static int measure(coll_comm *c, uint32_t kinds, tune_table *t, double budget_s)
{
	uint64_t maxb = (uint64_t)rt_env_long("COLL_TUNE_MAX_BYTES", 1L << 20);
	uint64_t sizes[TUNE_MAX_SIZES];
	int ns = 0;
	for (uint64_t b = 1024; b <= maxb && ns < TUNE_MAX_SIZES; b *= 32)
		sizes[ns++] = b;
	if (!ns)
		sizes[ns++] = maxb;
	/* the largest size, rounded up to a whole count of the largest unit
	 * (alltoall: n*n per count), is the whole working buffer */
	size_t len = (size_t)sizes[ns - 1] * (size_t)c->n + 64;
	char *sb = malloc(len), *rb = malloc(len);
	/* every rank has its buffers, or none measures (a local failure must
	 * not leave the others waiting in a collective) */
	double ok = sb && rb ? 0 : 1;
	int rc = max_all(c, &ok, 1);
	if (rc == COLL_OK && ok > 0)
		rc = rt_err(c, COLL_ERR_NOMEM, "choose by measure: a rank is out of memory for its buffers");
	if (rc != COLL_OK) {
		free(sb), free(rb);
		return rc;
	}
	memset(sb, 0, len);
	memset(rb, 0, len);
	double t0 = now_s();
	int stop = 0;
	for (int k = 0; k < COLL_NCOLLS && rc == COLL_OK && !stop; k++) {
		if (!(kinds >> k & 1))
			continue;
		const coll_kind_info *ki = coll_kind_get(k);
		const char *cand[TUNE_MAX_CANDS];
		int nc = 0;
		for (int i = 0; i < c->plans->nalgos && nc < TUNE_MAX_CANDS; i++)
			if (c->plans->algos[i]->kind == k && c->plans->algos[i]->nranks == c->n) {
				int dup = 0;
				for (int j = 0; j < nc && !dup; j++)
					dup = strcmp(cand[j], c->plans->algos[i]->name) == 0;
				if (!dup) {
					link_error e;
					if (tune_add_cand(t, k, c->plans->algos[i]->name, &e)) {
						rc = rt_err(c, COLL_ERR_PLAN, "choose by measure: %s", e.msg);
						break;
					}
					cand[nc++] = c->plans->algos[i]->name;
				}
			}
		uint64_t units = coll_kind_units(ki, c->n), work = (uint64_t)coll_kind_work_per_size(ki, c->n);
		uint64_t per = 4 * (units / work);   /* bytes of the full buffer per element of the count, fp32 */
		uint64_t last = 0;
		int rows = 0;
		for (int si = 0; si < ns && rc == COLL_OK && !stop; si++) {
			/* sizes as collbench's (nccl-tests' size), rows in coll_choose_algo's
			 * terms: the working buffer, count x units x 4 (tuning.h) */
			uint64_t cnt = (sizes[si] - sizes[si] % per) / 4 * work / units;
			uint64_t bytes = cnt * units * 4;
			/* a size that rounds down to the last one's (a collective whose
			 * unit is large at this n) says nothing new: every rank skips it */
			if (si > 0 && bytes <= last)
				continue;
			last = bytes;
			rows++;
			/* [nc] warm-up times, then [nc * TUNE_REPS] times, then the clock */
			double v[TUNE_MAX_CANDS * (TUNE_REPS + 1) + 1];
			for (int i = 0; i < nc && rc == COLL_OK; i++)
				rc = time_calls(c, (coll_kind)k, cand[i], sb, rb, cnt, 1, &v[i]);
			if (rc == COLL_OK)
				rc = max_all(c, v, nc);
			long calls[TUNE_MAX_CANDS];
			for (int i = 0; i < nc; i++) {
				double m = v[i] > 0 ? TUNE_REP_S / v[i] : TUNE_MAX_CALLS;
				calls[i] = m < 1 ? 1 : m > TUNE_MAX_CALLS ? TUNE_MAX_CALLS : (long)m;
			}
			double *tm = v + nc;
			for (int rep = 0; rep < TUNE_REPS && rc == COLL_OK; rep++)
				for (int j = 0; j < nc && rc == COLL_OK; j++) {
					int i = (j + rep) % nc;
					rc = time_calls(c, (coll_kind)k, cand[i], sb, rb, cnt, calls[i], &tm[i * TUNE_REPS + rep]);
				}
			tm[nc * TUNE_REPS] = now_s() - t0;   /* the slowest rank's clock decides when to stop */
			if (rc == COLL_OK)
				rc = max_all(c, tm, nc * TUNE_REPS + 1);
			if (rc != COLL_OK)
				break;
			link_error e;
			tune_row *row = tune_add_row(t, k, bytes, &e);
			if (!row) {
				rc = rt_err(c, COLL_ERR_PLAN, "choose by measure: %s", e.msg);
				break;
			}
			int best = 0;
			for (int i = 0; i < nc; i++) {
				qsort(&tm[i * TUNE_REPS], TUNE_REPS, sizeof *tm, cmp_double);
				row->times[i] = tm[i * TUNE_REPS + TUNE_REPS / 2];
				if (row->times[i] < row->times[best])
					best = i;
			}
			row->winner = best;
			row->spread = (tm[best * TUNE_REPS + TUNE_REPS - 1] - tm[best * TUNE_REPS]) / row->times[best];
			stop = tm[nc * TUNE_REPS] > budget_s;
		}
		if (!rows)
			t->ncands[k] = 0;   /* nothing measured: the plan set's table stands */
	}
	free(sb), free(rb);
	return rc;
}

/* The cache file: 0 with path; 1 with none (off); -1 with why. */
static int cache_path(const coll_comm *c, uint32_t kinds, char *path, size_t len, char *why, size_t wlen)
{
	char dir[1024];
	int rc = rt_cache_dir("COLL_TUNE_CACHE", dir, sizeof dir, why, wlen);
	if (rc)
		return rc;
	static const uint8_t key[16] = "coll-tune-key-01";
	uint64_t h = rt_hostlist_hash(c);
	const char *tp = coll_transport_name(c);
	h = h * 31 + rt_siphash(key, tp, strlen(tp));
	h = h * 31 + rt_planset_hash(c->plans);
	h = h * 31 + kinds;
	h = h * 31 + (uint64_t)rt_env_long("COLL_TUNE_MAX_BYTES", 1L << 20);
	for (int r = 0; c->perm && r < c->n; r++)
		h = h * 31 + (uint64_t)c->perm[r];
	snprintf(path, len, "%s/tuning-%016llx.txt", dir, (unsigned long long)h);
	return 0;
}

/* Rank 0's text to every rank: its length first, then the bytes. */
static int bcast_text(coll_comm *c, char **text, uint64_t *len)
{
	int rc = rt_probe_bcast(c, len, sizeof *len);
	if (rc)
		return rc;
	if (*len > TUNE_MAX_BYTES)
		return rt_err(c, COLL_ERR_PROTOCOL, "choose by measure: a table of %llu bytes", (unsigned long long)*len);
	if (c->rank != 0) {
		free(*text);
		if (!(*text = malloc(*len + 1)))
			return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	return *len ? rt_probe_bcast(c, *text, *len) : COLL_OK;
}

/* The file's text of t, or NULL. */
static char *table_text(const tune_table *t, uint64_t *len)
{
	char *buf = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&buf, &sz);
	if (!f)
		return NULL;
	int bad = tune_write(f, t, "measured at init by libcollrt (choose by measure / COLL_TUNE=init)");
	if (fclose(f) != 0 || bad) {
		free(buf);
		return NULL;
	}
	*len = sz;
	return buf;
}

int rt_tune_init(coll_comm *c)
{
	const char *mode = getenv("COLL_TUNE");
	uint32_t asked = c->plans ? c->plans->tune_kinds : 0;
	int retune = 0;
	if (mode && *mode) {
		if (strcmp(mode, "off") == 0)
			asked = 0;
		else if (strcmp(mode, "init") == 0 || (retune = strcmp(mode, "retune") == 0))
			asked = ~0u;
	}
	/* a tuning file given (COLL_TUNING) wins over measuring */
	if (!asked || c->tuning || c->n == 1 || !c->plans)
		return COLL_OK;
	uint32_t kinds = kinds_to_tune(c, asked);
	if (!kinds)
		return COLL_OK;
	int verbose = rt_env_long("COLL_TUNE_VERBOSE", 0) != 0 && c->rank == 0;
	double t0 = now_s();
	char path[1100] = "", why[1300] = "";
	int have_path = 0;
	char *text = NULL;
	uint64_t len = 0;
	/* rank 0: a cached table that fits, as text */
	if (c->rank == 0) {
		int cp = cache_path(c, kinds, path, sizeof path, why, sizeof why);
		have_path = cp == 0;
		if (cp < 0 && verbose)
			fprintf(stderr, "coll: choose by measure: %s; going on without the cache\n", why);
		tune_table *ct = NULL;
		link_error e;
		char fit[600];
		if (have_path && !retune && access(path, F_OK) == 0) {
			if (tune_read(path, &ct, &e) != 0) {
				if (verbose)
					fprintf(stderr, "coll: choose by measure: cache %s: %s; measuring again\n", path, e.msg);
			} else if (rt_tuning_check_fit(c, ct, coll_transport_name(c), fit, sizeof fit) != 0) {
				if (verbose)
					fprintf(stderr, "coll: choose by measure: cache %s: %s; measuring again\n", path, fit);
			} else if (!(text = table_text(ct, &len))) {
				len = 0;
			}
		}
		tune_free(ct);
	}
	int rc = bcast_text(c, &text, &len);
	int cached = len > 0;
	tune_table *t = NULL;
	if (rc == COLL_OK && !cached) {
		/* a miss: everyone measures, rank 0 writes the table down */
		if (!(t = tune_new()))
			rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
		double budget = rt_env_double("COLL_TUNE_TIME", 2.0);
		if (rc == COLL_OK)
			rc = measure(c, kinds, t, budget);
		if (rc == COLL_OK && c->rank == 0) {
			time_t now = time(NULL);
			struct tm tmv;
			strftime(t->date, sizeof t->date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tmv));
			snprintf(t->transport, sizeof t->transport, "%s", coll_transport_name(c));
			t->nranks = c->n;
			char host[TUNE_HOST_MAX] = "";
			link_error e;
			if (gethostname(host, sizeof host - 1) != 0 || tune_add_host(t, host, &e) != 0)
				tune_add_host(t, "unknown", &e);
			if (!(text = table_text(t, &len)))
				len = 0;
		}
		tune_free(t);
		t = NULL;
		/* rank 0 sends its table, or an empty one when it could not write it */
		if (rc == COLL_OK || c->rank == 0) {
			int brc = bcast_text(c, &text, &len);
			rc = rc ? rc : brc;
		}
		if (rc == COLL_OK && !len)
			rc = rt_err(c, COLL_ERR_NOMEM, "choose by measure: rank 0 could not write its table");
	}
	if (rc == COLL_OK) {
		link_error e;
		if (tune_parse(text, (size_t)len, cached ? "the cached table" : "the measured table", &t, &e) != 0)
			rc = rt_err(c, COLL_ERR_PROTOCOL, "choose by measure: %s", e.msg);
	}
	if (rc == COLL_OK) {
		char src[1300];
		if (cached)
			snprintf(src, sizeof src, "cache %s", c->rank == 0 ? path : "(rank 0's)");
		else
			snprintf(src, sizeof src, "measured at init");
		/* hosts are not checked here: rank 0's name is the table's */
		rc = rt_tuning_adopt(c, t, src);
	}
	if (rc == COLL_OK && !cached && c->rank == 0 && have_path) {
		char tmp[1200];
		snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
		FILE *f = fopen(tmp, "w");
		int ok = f && fwrite(text, 1, (size_t)len, f) == (size_t)len;
		if (f && fclose(f) != 0)
			ok = 0;
		if (!ok || rename(tmp, path) != 0) {
			if (verbose)
				fprintf(stderr, "coll: choose by measure: cannot write the cache %s: %s\n", path, strerror(errno));
			unlink(tmp);
		} else {
			snprintf(c->tuning_src, sizeof c->tuning_src, "measured at init, cached in %s", path);
		}
	}
	if (verbose && rc == COLL_OK)
		fprintf(stderr, "coll: choose by measure: %s (%.3f s)\n", c->tuning_src, now_s() - t0);
	free(text);
	return rc;
}
