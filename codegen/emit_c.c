/*
 * emit_c.c - lower an evaluated cluster to C plan tables for libcollrt.
 *
 * Pipeline: lang/cluster.c (verified schedules) -> choose.c (size table) -> this file ->
 * NAME.h + NAME_plans.c -> cc -> libNAME.so / libNAME.a (cmd_build.c).
 *
 * The output is meant to be read: per algorithm and rank, one line per
 * step, in the order the rank executes them, with the round and what moves.
 * The steps come from the runtime's own lowering (runtime/lower.c, linked
 * into collc): a schedule transfer (src, dst, chunk, op) in round r becomes
 * a SEND on src and a RECV_COPY or RECV_REDUCE on dst, both in the IR's
 * transfer order, so every pair of ranks lists its sends and the matching
 * receives in the same order, which is what the runtime pairs them by.
 * Chunk numbers, not byte offsets, are stored: the runtime computes chunk
 * c of a count-element buffer as [c*count/C, (c+1)*count/C), which is
 * right for any count, including 0 and counts not divisible by C.
 * An algorithm with a straggler role (lang/cluster.h) records 1 + that role in
 * coll_algo.straggler; the cluster's `straggler` setting becomes the plan
 * set's straggler (1 + rank, or COLL_STRAGGLER_AUTO with the table of
 * critical delays per size), and its transport the plan set's transport.
 * A cluster that reorders adds `reorder by cost`'s rank order (NAME_perm,
 * schedule rank -> physical rank, chosen by choose.c) or `reorder at
 * init`'s flag and what to order for.
 *
 * Generated C is a trust boundary: every string literal and every file
 * path or name in a comment is written through emit_str.c, and what is
 * written bare (the cluster's and algorithms' names) is checked to be a C
 * identifier first (emit_check_names), so no .coll string or command-line
 * path can add code to a library.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "coll_plan.h"
#include "xalloc.h"

/* C identifier for an algorithm's tables: <collective>_<name>. */
static void ident(char *buf, size_t len, const cluster_entry *a)
{
	snprintf(buf, len, "%s_%s", ir_kind_names[a->s->kind], a->label);
}

/* The rank plans of s, lowered by the runtime's own lowering (lower.c),
 * or NULL when out of memory. */
static coll_algo *lower(const ir_sched *s, const char *label)
{
	coll_xfer *x = xcalloc((size_t)s->nxfers + 1, sizeof *x);
	for (int k = 0; k < s->nrounds; k++) {
		const ir_round *rd = &s->rounds[k];
		for (int i = rd->first; i < rd->first + rd->count; i++)
			x[i] = (coll_xfer){ k, s->xfers[i].src, s->xfers[i].dst, s->xfers[i].chunk,
					    s->xfers[i].op == IR_REDUCE_OP };
	}
	coll_algo *a = coll_algo_build(label, (coll_kind)s->kind, s->n, s->chunks, s->root, x, s->nxfers);
	free(x);
	return a;
}

static int emit_algo(FILE *f, const cluster_entry *a)
{
	const ir_sched *s = a->s;
	const coll_kind_info *ki = ir_kind_info(s->kind);
	coll_algo *lo = lower(s, a->label);
	if (!lo) {
		diag_tool_error("cannot lower %s '%s' to rank plans (out of memory)", ki->name,
			a->label);
		diag_errors++;
		return -1;
	}
	char id[256];
	ident(id, sizeof id, a);
	fprintf(f, "/*\n * %s \"%s\": %d chunks, %d rounds, %d transfers; verified for %d ranks%s.\n",
		ki->name, a->label, s->chunks, s->nrounds, s->nxfers, s->n,
		ki->rooted ? " (written for root 0; the runtime relabels ranks for other roots)" : "");
	fprintf(f, " */\n");
	for (int r = 0; r < s->n; r++) {
		const coll_rank_plan *rp = &lo->ranks[r];
		if (rp->nsteps == 0)
			continue;
		fprintf(f, "static const coll_step %s_rank%d[] = {\n", id, r);
		for (int i = 0; i < rp->nsteps; i++) {
			const coll_step *st = &rp->steps[i];
			char step[64];
			if (st->kind == COLL_STEP_SEND) {
				snprintf(step, sizeof step, "COLL_SEND(%d, %d, %d),", st->round, st->peer, st->chunk);
				fprintf(f, "\t%-30s /* round %d: chunk %d -> rank %d */\n", step, st->round, st->chunk,
					st->peer);
			} else {
				bool red = st->kind == COLL_STEP_RECV_REDUCE;
				snprintf(step, sizeof step, "%s(%d, %d, %d),", red ? "COLL_RECV_REDUCE" : "COLL_RECV_COPY",
					 st->round, st->peer, st->chunk);
				fprintf(f, "\t%-30s /* round %d: chunk %d %s rank %d */\n", step, st->round, st->chunk,
					red ? "reduced from" : "copied from", st->peer);
			}
		}
		fprintf(f, "};\n");
	}
	fprintf(f, "static const coll_rank_plan %s_ranks[] = {\n", id);
	for (int r = 0; r < s->n; r++) {
		if (lo->ranks[r].nsteps)
			fprintf(f, "\tCOLL_RANK_PLAN(%s_rank%d),\n", id, r);
		else
			fprintf(f, "\t{ NULL, 0 },   /* rank %d takes no part */\n", r);
	}
	fprintf(f, "};\n");
	if (a->straggler_role >= 0)
		fprintf(f, "/* straggler role: rank %d (absent from the precondition rounds); the runtime\n"
			" * swaps the cluster's straggler into it. */\n", a->straggler_role);
	char *q = emit_cstr(a->label);
	fprintf(f, "static const coll_algo %s = { %s, %s, %d, %d, %d, %d, %s_ranks, %d };\n\n", id, q,
		ki->cname, s->n, s->chunks, s->nrounds, s->root, id, a->straggler_role + 1);
	free(q);
	coll_algo_free(lo);
	return 0;
}

/* seconds with a unit, 4 significant digits */
static char *fmt_seconds(double t, char *buf, size_t len)
{
	if (t < 1e-3)
		snprintf(buf, len, "%.4g us", t * 1e6);
	else if (t < 1)
		snprintf(buf, len, "%.4g ms", t * 1e3);
	else
		snprintf(buf, len, "%.4g s", t);
	return buf;
}

static FILE *open_out(const char *dir, const char *name, const char *suffix, char *path, size_t len)
{
	snprintf(path, len, "%s/%s%s", dir, name, suffix);
	FILE *f = fopen(path, "w");
	if (!f) {
		diag_tool_error("cannot write '%s': %s", path, strerror(errno));
		diag_errors++;
	}
	return f;
}

/* What emit_c and emit_cuda write bare, as C identifiers (the cluster's
 * and algorithms' names) or in comments (the host transport, a policy's
 * name) must be an identifier: the front end makes them so, and this
 * stops a generator from writing anything else.  0, or -1 with an error. */
/* A generated name and who it belongs to. */
typedef struct {
	char name[300];
	int algo;   /* index into c->algos, -1: the cluster's */
} gen_name;

static int cmp_gen_name(const void *a, const void *b)
{
	return strcmp(((const gen_name *)a)->name, ((const gen_name *)b)->name);
}

/* Every name the emitters give a table must be one table's: an algorithm
 * labelled ring_rank0 beside ring would make two allreduce_ring_rank0, and
 * a cluster named allreduce with an algorithm labelled algos two
 * allreduce_algos, and gcc would say so in words about the generated
 * file.  Say it here, naming both. */
static int check_collisions(const libplan *c)
{
	static const char *const cluster_sfx[] = {"algos", "choices", "crit", "init", "perm", "plans", "policy",
						  "gpu", "gpu_algos", "gpu_choices", "gpu_init", "gpu_plans", "fns"};
	int ncl = (int)(sizeof cluster_sfx / sizeof cluster_sfx[0]);
	size_t cap = (size_t)ncl, k = 0;
	for (int i = 0; i < c->nalgos; i++)
		cap += 2 + (size_t)c->algos[i].s->n;
	gen_name *v = xcalloc(cap, sizeof *v);
	for (int j = 0; j < ncl; j++, k++) {
		snprintf(v[k].name, sizeof v[k].name, "%s_%s", c->d->name, cluster_sfx[j]);
		v[k].algo = -1;
	}
	for (int i = 0; i < c->nalgos; i++) {
		char id[256];
		ident(id, sizeof id, &c->algos[i]);
		for (int r = -2; r < c->algos[i].s->n; r++, k++) {
			if (r == -2)
				snprintf(v[k].name, sizeof v[k].name, "%s", id);
			else if (r == -1)
				snprintf(v[k].name, sizeof v[k].name, "%s_ranks", id);
			else
				snprintf(v[k].name, sizeof v[k].name, "%s_rank%d", id, r);
			v[k].algo = i;
		}
	}
	qsort(v, k, sizeof *v, cmp_gen_name);
	int rc = 0;
	for (size_t j = 1; j < k && rc == 0; j++) {
		if (strcmp(v[j - 1].name, v[j].name) != 0 || v[j - 1].algo == v[j].algo)
			continue;
		const gen_name *a = v[j - 1].algo < 0 ? &v[j - 1] : &v[j], *b = a == &v[j] ? &v[j - 1] : &v[j];
		if (a->algo < 0)
			diag_tool_error("cluster '%s': its algorithm '%s' and the cluster itself would both name the generated "
					"table %s; rename the algorithm or the cluster", c->d->name, c->algos[b->algo].label,
					a->name);
		else
			diag_tool_error("cluster '%s': algorithms '%s' and '%s' would both name the generated table %s; "
					"rename one", c->d->name, c->algos[a->algo].label, c->algos[b->algo].label, a->name);
		diag_errors++;
		rc = -1;
	}
	free(v);
	return rc;
}

int emit_check_names(const libplan *c, const char *host)
{
	const char *bad = NULL;
	if (!emit_is_ident(c->d->name))
		bad = c->d->name;
	else if (!emit_is_ident(host))
		bad = host;
	else if (c->d->has_policy && !emit_is_ident(c->d->policy.name))
		bad = c->d->policy.name;
	for (int i = 0; i < c->nalgos && !bad; i++)
		if (!emit_is_ident(c->algos[i].label))
			bad = c->algos[i].label;
	if (bad) {
		char *q = emit_cstr(bad);
		diag_tool_error("internal error: cannot generate C for the name %s, which is no C identifier", q);
		free(q);
		diag_errors++;
		return -1;
	}
	return check_collisions(c);
}

int emit_c(const libplan *c, const char *host, const char *dir, const char *source)
{
	char path[4096];
	if (emit_check_names(c, host) != 0)
		return -1;
	FILE *h = open_out(dir, c->d->name, ".h", path, sizeof path);
	if (!h)
		return -1;
	/* the source path as the command line gave it: any bytes */
	char *src = emit_comment(source);
	fprintf(h, "/*\n * %s.h - the coll library for cluster '%s' (%d ranks, transport %s).\n"
		" * Generated by `collc build %s`; do not edit, edit the cluster file.\n"
		" *\n * Link with -l%s; the API is coll.h (included).\n */\n",
		c->d->name, c->d->name, c->d->ranks, host, src, c->d->name);
	fprintf(h, "#ifndef COLL_GEN_%s_H\n#define COLL_GEN_%s_H\n\n#include \"coll_plan.h\"\n\n", c->d->name, c->d->name);
	fprintf(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	fprintf(h, "/* Every algorithm of the cluster, the size -> algorithm table. */\n");
	fprintf(h, "extern const coll_plan_set %s_plans;\n\n", c->d->name);
	fprintf(h, "/* coll_init with these plans and the cluster's transport (%s; COLL_TRANSPORT\n"
		" * overrides it); rank, rank count, address and secret come from the\n"
		" * environment that collrun sets (COLL_RANK, COLL_NRANKS, COLL_ADDR, COLL_SECRET). */\n",
		host);
	fprintf(h, "coll_result %s_init(coll_comm **comm);\n\n", c->d->name);
	fprintf(h, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
	if (fclose(h) != 0) {
		free(src);
		return -1;
	}

	FILE *f = open_out(dir, c->d->name, "_plans.c", path, sizeof path);
	if (!f) {
		free(src);
		return -1;
	}
	fprintf(f, "/*\n * %s_plans.c - the schedules of cluster '%s' as libcollrt plan tables.\n"
		" * Generated by `collc build %s`; do not edit, edit the cluster file.\n"
		" *\n * Per algorithm and rank: the steps in execution order. COLL_SEND(round,\n"
		" * peer, chunk) sends this rank's chunk; COLL_RECV_COPY / COLL_RECV_REDUCE\n"
		" * receive the peer's chunk and copy it or reduce it into this rank's.\n"
		" * Steps of one round read the data as it was before the round.\n */\n",
		c->d->name, c->d->name, src);
	free(src);
	fprintf(f, "#include \"%s.h\"\n\n", c->d->name);
	for (int i = 0; i < c->nalgos; i++)
		if (emit_algo(f, &c->algos[i]) != 0) {
			fclose(f);
			return -1;
		}
	fprintf(f, "static const coll_algo *const %s_algos[] = {\n", c->d->name);
	for (int i = 0; i < c->nalgos; i++) {
		char id[256];
		ident(id, sizeof id, &c->algos[i]);
		fprintf(f, "\t&%s,\n", id);
	}
	fprintf(f, "};\n\n/* Size -> algorithm: the first entry of the collective whose max_bytes\n"
		" * is at least the message size wins. */\n");
	fprintf(f, "static const coll_choice %s_choices[] = {\n", c->d->name);
	for (int i = 0; i < c->nchoices; i++) {
		const lib_choice *ch = &c->choices[i];
		char *q = emit_cstr(c->algos[ch->algo].label);
		if (ch->max_bytes == UINT64_MAX)
			fprintf(f, "\t{ %s, COLL_BYTES_MAX, %s },\n", ir_kind_info(ch->kind)->cname, q);
		else
			fprintf(f, "\t{ %s, %lluu, %s },\n", ir_kind_info(ch->kind)->cname, (unsigned long long)ch->max_bytes, q);
		free(q);
	}
	fprintf(f, "};\n\n");
	char strag[64] = "COLL_STRAGGLER_NONE";
	if (c->d->straggler == CLUSTER_STRAGGLER_AUTO) {
		const char *sl = c->algos[c->straggler_algo].label;
		fprintf(f, "/* straggler auto: once a straggler is detected, allreduce runs %s while the\n"
			" * detected delay exceeds the critical delay for the message size: the delay\n"
			" * from which %s beats the table's choice above (cost model: event-driven\n"
			" * simulation under the cluster's link model).  Sizes up to max_bytes. */\n"
			"static const coll_crit %s_crit[] = {\n", sl, sl, c->d->name);
		for (int k = 0; k < LIB_NCRIT; k++) {
			char sz[32];
			if (k == LIB_NCRIT - 1)
				snprintf(sz, sizeof sz, "COLL_BYTES_MAX");
			else
				snprintf(sz, sizeof sz, "%lluu", 1ULL << k);
			if (isfinite(c->crit[k]))
				fprintf(f, "\t{ %s, %.17g },   /* vs %s */\n", sz, c->crit[k], c->algos[c->crit_base[k]].label);
			else
				fprintf(f, "\t{ %s, COLL_NEVER },   /* vs %s: never faster */\n", sz,
					c->algos[c->crit_base[k]].label);
		}
		fprintf(f, "};\n\n");
		snprintf(strag, sizeof strag, "COLL_STRAGGLER_AUTO");
	} else if (c->d->straggler != CLUSTER_STRAGGLER_NONE) {
		fprintf(f, "/* straggler %d: it plays the straggler role of the algorithms that have one. */\n",
			c->d->straggler);
		snprintf(strag, sizeof strag, "1 + %d", c->d->straggler);
	}
	if (c->d->has_policy) {
		const coll_rail_policy *p = &c->d->policy;
		static const char *const split[] = {
#define COLL_SPLIT(id, name, what) "COLL_SPLIT_" #id,
#include "coll_splits.def"
#undef COLL_SPLIT
		};
		char cold[32];
		if (p->cold_bytes == COLL_COLD_AUTO)
			snprintf(cold, sizeof cold, "COLL_COLD_AUTO");
		else if (p->cold_bytes == COLL_COLD_ALWAYS)
			snprintf(cold, sizeof cold, "COLL_COLD_ALWAYS");
		else
			snprintf(cold, sizeof cold, "%lld", (long long)p->cold_bytes);
		char *q = emit_cstr(p->name);
		fprintf(f, "/* policy %s: how a message uses the rails (coll.h, coll_rail_policy). */\n"
			"static const coll_rail_policy %s_policy = {\n"
			"\t.name = %s, .cold_bytes = %s, .split = %s,\n"
			"\t.rebalance_calls = %d, .tolerance = %.17g, .failover_ms = %d,\n};\n\n",
			p->name, c->d->name, q, cold, split[p->split], (int)p->rebalance_calls, p->tolerance,
			(int)p->failover_ms);
		free(q);
	}
	/* The cluster's transport (host: the host plans' one) rides in the plan
	 * set, so that coll_init_env (and any caller of coll_init without a
	 * transport) uses it as NAME_init always did; COLL_TRANSPORT still
	 * overrides it. */
	bool aut = c->d->straggler == CLUSTER_STRAGGLER_AUTO;
	const char *n = c->d->name;
	if (c->d->reorder != CLUSTER_REORDER_NONE && c->perm) {
		char bt[32], it[32];
		fprintf(f, "/* reorder by cost: physical rank %s_perm[r] plays schedule rank r of every\n"
			" * algorithm, chosen for %s at %llu bytes under the cluster's link model:\n"
			" * predicted %s in this order, %s in the identity order%s. */\n"
			"static const int32_t %s_perm[] = {", n, c->algos[c->reorder_algo].label,
			(unsigned long long)c->reorder_bytes, fmt_seconds(c->t_best, bt, sizeof bt),
			fmt_seconds(c->t_identity, it, sizeof it), c->optimal ? " (proven optimal)" : "", n);
		for (int i = 0; i < c->d->ranks; i++)
			fprintf(f, "%s%d", i ? ", " : " ", c->perm[i]);
		fprintf(f, " };\n\n");
	} else if (c->d->reorder == CLUSTER_REORDER_INIT) {
		fprintf(f, "/* reorder at init: the library probes the network when a communicator starts\n"
			" * and chooses the order for %s at %llu bytes (runtime/reorder.c). */\n",
			c->algos[c->reorder_algo].label, (unsigned long long)c->reorder_bytes);
	}
	char *qn = emit_cstr(n);
	fprintf(f, "const coll_plan_set %s_plans = {\n"
		"\t.abi = COLL_PLAN_ABI, .name = %s, .nranks = %d,\n"
		"\t.algos = %s_algos, .nalgos = (int32_t)(sizeof %s_algos / sizeof %s_algos[0]),\n"
		"\t.choices = %s_choices, .nchoices = (int32_t)(sizeof %s_choices / sizeof %s_choices[0]),\n"
		"\t.straggler = %s,\n",
		n, qn, c->d->ranks, n, n, n, n, n, n, strag);
	free(qn);
	if (aut)
		fprintf(f, "\t.crit = %s_crit, .ncrit = (int32_t)(sizeof %s_crit / sizeof %s_crit[0]),\n", n, n, n);
	if (c->perm)
		fprintf(f, "\t.perm = %s_perm,\n", n);
	if (c->d->reorder == CLUSTER_REORDER_INIT) {
		char *q = emit_cstr(c->algos[c->reorder_algo].label);
		fprintf(f, "\t.reorder = COLL_REORDER_INIT, .reorder_algo = %s, .reorder_bytes = %lluu,\n", q,
			(unsigned long long)c->reorder_bytes);
		free(q);
	}
	char *qt = emit_cstr(host);
	fprintf(f, "\t.transport = %s,\n", qt);
	free(qt);
	if (c->d->rails) {
		/* the one string of the library that a .coll string becomes */
		char *q = emit_cstr(c->d->rails);
		fprintf(f, "\t.rails = %s,\n", q);
		free(q);
	}
	if (c->d->has_policy)
		fprintf(f, "\t.policy = &%s_policy,\n", n);
	unsigned tk = 0;
	for (int i = 0; i < c->d->nblocks; i++)
		if (c->d->blocks[i].by_measure)
			tk |= 1u << c->d->blocks[i].kind;
	if (tk)
		fprintf(f, "\t.tune_kinds = 0x%xu,   /* choose by measure (tuneinit.c) */\n", tk);
	fprintf(f, "};\n\n");
	fprintf(f, "coll_result %s_init(coll_comm **comm)\n{\n"
		"\treturn coll_init(comm, &%s_plans, NULL);   /* the plan set's transport, or COLL_TRANSPORT */\n}\n",
		n, n);
	return fclose(f) == 0 ? 0 : -1;
}
