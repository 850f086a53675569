/*
 * plan_harness.c - fuzz harness (tests/fuzz/run.sh "plan"): collc's JSON
 * schedules and tune tables as collbench and the PMPI library read them
 * (runtime/planload/planload.c), then everything a real consumer does with
 * what was accepted.
 *
 *   fuzz_plan FILE     exit 0 on success or a clean error (printed); a
 *                      crash, hang or sanitizer report is a finding
 *
 * FILE is one or more documents separated by NUL bytes: the layout in
 * which the PMPI library's rank 0 hands every rank a tune table followed
 * by the schedules it names (runtime/pmpi/pmpi.c, plans_from_texts), and a
 * single document is what collbench reads from `collc show`.  There is no
 * mode byte: every document goes through both readers, because a reader
 * cannot know which of the two it was handed, and a mode byte would make
 * each real collc output a worse seed (AFL would have to keep the byte in
 * front of valid JSON).  The first tune table accepted is the choice
 * table; every schedule accepted is an algorithm, the first one fixing
 * the rank count the others must have (as the job's does for collbench
 * and PMPI).  At most MAX_DOCS documents of MAX_INPUT bytes in all.
 *
 * What was accepted then goes where collbench and PMPI send it:
 * coll_plan_set_build and coll_plan_set_check (coll_init's check; a set it
 * refuses goes no further, as in a real job), the plan set's fingerprint,
 * the size -> algorithm choice for every collective at several sizes, the
 * executor's preprocessing (rt_prep_build) of every role of every
 * algorithm (of some roles beyond WALK_ALL_N ranks; not at all for more
 * than WALK_MAX_CHUNKS chunks, where a rank's first call would allocate
 * and walk them: a resource a schedule may ask for, not a bug), and -- for jobs of at most RUN_MAX_N ranks and plans of at
 * most RUN_MAX_STEPS steps, which keeps an execution well under a second
 * -- a real run: RUN_MAX_N ranks as threads over TCP on 127.0.0.1 (fz.c),
 * each running every algorithm once through coll_run_algo and every
 * collective once through the choice table.  When an allreduce has a
 * straggler role (a "pre" phase), the set declares a straggler, as a
 * cluster would, so the executor's role swap runs too.  A run that fails
 * cleanly (a wrong schedule may well be refused, or time out after
 * COLL_TIMEOUT = 2 s) is not a finding.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz.h"
#include "planload/planload.h"
#include "rt.h"

#define MAX_INPUT (1 << 20)
#define MAX_DOCS 32
#define RUN_MAX_N 4
#define RUN_MAX_STEPS 512
#define RUN_MAX_CHUNKS 1024
#define WALK_ALL_N 64
#define WALK_MAX_CHUNKS (1 << 20)

/* The run's calls: every algorithm, then every collective by size. */
typedef struct {
	const coll_plan_set *set;
	int kinds;   /* bit k: the set has an algorithm of collective k */
} run_arg;

/* Bytes of a buffer big enough for any side of any collective of `units`
 * units of 8-byte elements on n ranks. */
static size_t buf_bytes(int n, uint64_t elems) { return (size_t)elems * (size_t)n * (size_t)n * 8 + 64; }

static void run_rank(fz_rank *r)
{
	const run_arg *ra = r->arg;
	const coll_plan_set *s = ra->set;
	coll_comm *c = r->comm;
	int n = s->nranks, me = coll_rank(c);
	for (int i = 0; i < s->nalgos; i++) {
		const coll_algo *a = s->algos[i];
		uint64_t units = coll_kind_units(coll_kind_get(a->kind), n), count = units * 7;
		size_t nb = buf_bytes(n, 7);
		float *sb = malloc(nb), *rb = malloc(nb);
		if (!sb || !rb) {
			free(sb), free(rb);
			return;
		}
		for (size_t k = 0; k < nb / sizeof *sb; k++)
			sb[k] = (float)(me * 1000 + (int)(k % 997)), rb[k] = -1;
		coll_result rc = coll_run_algo(c, a, sb, rb, count, COLL_FLOAT, COLL_SUM);
		printf("rank %d: %s '%s': %s%s%s\n", me, coll_kind_name((coll_kind)a->kind), a->name, coll_strerror(rc),
		       rc ? ": " : "", rc ? coll_last_error(c) : "");
		free(sb), free(rb);
		if (rc)
			return;   /* the communicator is broken now */
	}
	for (int k = 0; k < COLL_NCOLLS; k++) {
		if (!(ra->kinds >> k & 1))
			continue;
		size_t nb = buf_bytes(n, 3);
		int32_t *sb = malloc(nb), *rb = malloc(nb);
		if (!sb || !rb) {
			free(sb), free(rb);
			return;
		}
		memset(sb, me + 1, nb);
		memset(rb, 0, nb);
		coll_result rc = coll_collective(c, (coll_kind)k, NULL, sb, rb, 3, COLL_INT32, COLL_MAX,
		                                 coll_kind_get(k)->rooted ? n - 1 : 0);
		printf("rank %d: %s by size: %s%s%s\n", me, coll_kind_name((coll_kind)k), coll_strerror(rc), rc ? ": " : "",
		       rc ? coll_last_error(c) : "");
		free(sb), free(rb);
		if (rc)
			return;
	}
}

/* A real job of s->nranks threads running every algorithm of s. */
static void run_job(const coll_plan_set *s)
{
	run_arg ra = {s, 0};
	fz_rank rk[RUN_MAX_N];
	int n = s->nranks, port = fz_free_port();
	for (int i = 0; i < s->nalgos; i++)
		ra.kinds |= 1 << s->algos[i]->kind;
	if (!port) {
		printf("run: no free port\n");
		return;
	}
	for (int r = 0; r < n; r++) {
		fz_rank_init(&rk[r], r, n, port, s, 2.0);
		rk[r].body = run_rank;
		rk[r].arg = &ra;
	}
	fz_rank_start(&rk[0]);
	fz_wait_listen(port, 2000);
	for (int r = 1; r < n; r++)
		fz_rank_start(&rk[r]);
	for (int r = 0; r < n; r++) {
		fz_rank_join(&rk[r]);
		if (rk[r].rc)
			printf("rank %d: coll_init: %s: %s\n", r, coll_strerror(rk[r].rc), rk[r].err);
	}
	for (int r = 0; r < n; r++)
		fz_rank_end(&rk[r]);
}

/* What coll_init and the first calls do with a checked set, without a
 * job: its fingerprint, the choice table at several sizes, and the
 * executor's preprocessing of every role. */
static void walk(const coll_plan_set *s)
{
	static const uint64_t sizes[] = {0, 1, 4096, 1 << 20, (uint64_t)1 << 40, COLL_BYTES_MAX};
	coll_comm *c = calloc(1, sizeof *c);
	if (!c)
		return;
	c->n = s->nranks;
	c->plans = s;
	printf("plan set: fingerprint %08x\n", rt_planset_hash(s));
	for (int k = 0; k < COLL_NCOLLS; k++)
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			const char *name = coll_choose_algo(c, (coll_kind)k, sizes[i]);
			if (name)
				printf("%s at %llu B: %s\n", coll_kind_name((coll_kind)k), (unsigned long long)sizes[i], name);
		}
	/* a rank prepares its own role: beyond WALK_ALL_N ranks, the ends,
	 * the root and the straggler role stand for the rest */
	for (int i = 0; i < s->nalgos; i++)
		for (int role = 0, n = s->algos[i]->nranks; role < n; role++) {
			if (n > WALK_ALL_N && role >= 8 && role < n - 8 && role != s->algos[i]->root &&
			    role != s->algos[i]->straggler - 1)
				continue;
			rt_prep *p;
			if (rt_prep_build(c, s->algos[i], role, &p) == COLL_OK)
				rt_prep_free(p);
			else
				printf("prep '%s' role %d: %s\n", s->algos[i]->name, role, c->err);
		}
	free(c);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_plan FILE\n");
		return 2;
	}
	fz_clean_env(5);
	size_t len;
	char *text = fz_read(argv[1], MAX_INPUT, &len);
	if (!text)
		return 0;   /* nothing to read is not a finding */
	coll_algo *algos[MAX_DOCS];
	coll_choice *choices = NULL;
	int na = 0, nch = 0, n = 0, ndocs = 0;
	for (size_t at = 0; at <= len && ndocs < MAX_DOCS; ndocs++) {
		const char *doc = text + at;
		size_t dlen = strnlen(doc, len - at);
		char why1[512], why2[512];
		coll_choice *ch;
		int k = pl_choices_from_tune(doc, dlen, &ch, why1, sizeof why1);
		if (k >= 0 && !choices) {
			choices = ch, nch = k;
			printf("doc %d: a tune table of %d ranges\n", ndocs, k);
		} else if (k >= 0) {
			pl_choices_free(ch, k);
		}
		coll_algo *a = pl_algo_from_json(doc, dlen, n, why2, sizeof why2);
		if (a) {
			n = a->nranks;
			algos[na++] = a;
			printf("doc %d: %s '%s' for %d ranks, %d chunks, %d rounds, straggler role %d\n", ndocs,
			       coll_kind_name((coll_kind)a->kind), a->name, a->nranks, a->chunks, a->rounds, a->straggler - 1);
		} else if (k < 0) {
			printf("doc %d: not a tune table (%s), not a schedule (%s)\n", ndocs, why1, why2);
		}
		at += dlen + 1;
	}
	if (na || nch) {
		coll_plan_set *s = coll_plan_set_build("fuzz", n ? n : 2, (const coll_algo *const *)algos, na, choices, nch);
		char why[512];
		long steps = 0;
		int chunks = 0;
		for (int i = 0; i < na; i++) {
			for (int r = 0; r < algos[i]->nranks; r++)
				steps += algos[i]->ranks[r].nsteps;
			if (algos[i]->chunks > chunks)
				chunks = algos[i]->chunks;
		}
		for (int i = 0; s && i < na; i++)
			if (algos[i]->kind == COLL_ALLREDUCE && algos[i]->straggler > 0)
				s->straggler = 1;   /* rank 0 is slow: it trades places with the straggler role */
		if (!s) {
			printf("coll_plan_set_build: out of memory\n");
		} else if (coll_plan_set_check(s, why, sizeof why) != COLL_OK) {
			printf("coll_plan_set_check: %s\n", why);
		} else if (chunks > WALK_MAX_CHUNKS) {
			/* valid, but a rank's first call allocates 12 bytes a chunk and
			 * walks them all: a resource a schedule may ask for, not a bug */
			printf("not walked: %d chunks\n", chunks);
		} else {
			walk(s);
			if (na && s->nranks >= 2 && s->nranks <= RUN_MAX_N && steps <= RUN_MAX_STEPS && chunks <= RUN_MAX_CHUNKS)
				run_job(s);
		}
		coll_plan_set_free(s);
	}
	for (int i = 0; i < na; i++)
		coll_algo_free(algos[i]);
	pl_choices_free(choices, nch);
	free(text);
	return 0;
}
