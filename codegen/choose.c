/*
 * choose.c - the size tables and critical delays of a generated library
 * (see choose.h), from a cluster the front end checked.
 *
 * Each collective block lists algorithms; with `below SIZE` thresholds the
 * first entry whose threshold exceeds the message size wins (an entry
 * without one takes every larger size), and with `choose by cost` the cost
 * model (cost.h, event-driven simulation under the cluster's link model)
 * picks the fastest per power-of-two size from 1 B to 4 GiB.
 *
 * `reorder by cost`: the rank order comes first (reorder.h: annealing and
 * branch and bound over the cluster's link model, for reorder_algo, else
 * the allreduce the table picks at reorder_size, 64 MiB by default), and
 * the tables are then costed with the order applied (cost_params.perm):
 * the library runs its schedules in that order.
 *
 * `straggler auto`: the size table is for calls without a straggler, so
 * straggler algorithms leave it (lang/cluster.c already set aside those
 * listed without a threshold; one with a threshold gives its sizes to the
 * entry before it), and per power-of-two size the cost model gives the
 * critical delay from which the straggler algorithm beats the table's
 * choice; the runtime compares the measured delay with it.
 *
 * Every simulation here runs in the executor's order for the cluster's
 * transport (cost_params.round_order, see cluster_round_order): over TCP
 * libcollrt moves round by round, and a free-running simulation credits
 * a rank with sends of a later round overlapping an earlier round's
 * (where it has ports for both) that TCP never runs.  The tables cost
 * whole chunks (segments = 1), so algorithms with one port per rank cost
 * the same either way; the pipelined case (dbt measured 1.06-1.75x its
 * free-running prediction on the emulated racks) waits for choose.c to
 * learn the transport's segment size.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "choose.h"
#include "cost.h"
#include "costplan.h"
#include "linkmodel.h"
#include "reorder.h"
#include "xalloc.h"

static void add_choice(libplan *lp, ir_kind kind, uint64_t max_bytes, int algo)
{
	lp->choices = xrealloc(lp->choices, (size_t)(lp->nchoices + 1) * sizeof *lp->choices);
	lp->choices[lp->nchoices++] = (lib_choice){ kind, max_bytes, algo };
}

/* The cluster's link model (a `links` matrix or uniform alpha/bw, then
 * the segments declared in the cluster), checked against its rank count.
 * lm is always safe to link_free. */
static int cluster_links(const cluster_desc *d, link_model *lm, link_error *err)
{
	memset(lm, 0, sizeof *lm);
	int rc = d->links ? link_read_matrix(lm, d->links, err) : link_uniform(lm, d->alpha, d->bw, err);
	if (rc == 0 && d->ndecls > 0)
		rc = link_copy_segments(lm, &d->segs, err);
	return rc == 0 ? link_check_n(lm, d->ranks, err) : rc;
}

/* Does libcollrt run this cluster's plans in round order?  The
 * transport's row says (coll_transports.def: tcp and ibverbs yes, shm and
 * mpi no); rails always share network links; `auto` is shm on one host
 * and tcp across hosts, and a cluster that gives a `links` matrix or
 * declares segments describes a network between hosts, so it is costed as
 * tcp, one with neither as shm (collc cost/sim default the same way on
 * --links).  COLL_ROUND_ORDER changes the executor at run time, not the
 * tables baked here. */
static int cluster_round_order(const cluster_desc *d)
{
	if (d->rails)
		return 1;
	if (d->target->round_order >= 0)
		return d->target->round_order;
	return d->links != NULL || d->ndecls > 0;
}

/* How the simulation runs the cluster's network: in round order, and
 * flows sharing a segment as TCP does (cost_params.share_alpha and
 * share_rtt), wherever the executor runs in round order, i.e. on a
 * network between hosts, as collc cost/sim do with --links.  ibverbs is
 * costed the same way for want of an RDMA fabric to measure (its
 * congestion control is the NIC's, not TCP's). */
static void cluster_network(const cluster_desc *d, cost_params *q)
{
	q->round_order = cluster_round_order(d);
	q->share_alpha = q->round_order ? COST_TCP_ALPHA : 0;
	q->share_rtt = q->round_order;
}

/* Report a link model error at pos, or, about the links file, at the
 * file's line (file:line: error: ...). */
static void links_error(const cluster_desc *d, srcpos pos, const link_error *err)
{
	if (err->loc_len > 0) {
		char loc[512];
		snprintf(loc, sizeof loc, "%.*s", err->loc_len, err->msg);
		diag_file_error(loc, "%s", link_error_text(err));
	} else {
		diag_error(pos, "cluster '%s': link model: %s", d->name, err->msg);
	}
}

/* `choose by cost`: the fastest of block b's algorithms per power-of-two size. */
static int choose_by_cost(libplan *lp, const cluster_block *b)
{
	const cluster_desc *d = lp->d;
	link_model lm;
	link_error err;
	int rc = cluster_links(d, &lm, &err);
	if (rc != 0) {
		links_error(d, b->pos, &err);
		link_free(&lm);
		return -1;
	}
	int na = b->count;
	cost_plan **plans = xcalloc((size_t)na, sizeof *plans);
	for (int a = 0; a < na && rc == 0; a++)
		if (!(plans[a] = costplan_from_ir(lp->algos[b->first + a].s, &err)))
			rc = -1;
	int prev = -1;
	for (int k = 0; k <= 32 && rc == 0; k++) {
		cost_params q = { .bytes = (double)(1ULL << k), .links = &lm, .straggler = -1, .segments = 1,
				  .perm = lp->perm };
		cluster_network(d, &q);
		int best = -1;
		double bt = 0;
		for (int a = 0; a < na; a++) {
			cost_result r;
			if (cost_sim_time(plans[a], &q, &r, &err) != 0) {
				rc = -1;
				break;
			}
			if (best < 0 || r.time < bt) {
				best = a;
				bt = r.time;
			}
		}
		if (rc == 0 && best != prev) {
			if (prev >= 0)   /* close the previous range just below this size */
				lp->choices[lp->nchoices - 1].max_bytes = (1ULL << k) - 1;
			add_choice(lp, b->kind, UINT64_MAX, b->first + best);
			prev = best;
		}
	}
	if (rc != 0)
		diag_error(b->pos, "cluster '%s': cost model: %s", d->name, err.msg);
	for (int a = 0; a < na; a++)
		cost_plan_free(plans[a]);
	free(plans);
	link_free(&lm);
	return rc;
}

/* Thresholds: the table transcribes them (the front end checked that
 * they grow and that only the last entry lacks one). */
static void by_threshold(libplan *lp, const cluster_block *b)
{
	int last = -1;
	for (int j = 0; j < b->count; j++)
		if (!lp->algos[b->first + j].aside)
			last = j;
	for (int j = 0; j < b->count; j++) {
		const cluster_entry *e = &lp->algos[b->first + j];
		if (!e->aside)   /* the last entry takes every larger size, threshold or not */
			add_choice(lp, b->kind, j == last ? UINT64_MAX : e->below - 1, b->first + j);
	}
}

/* `straggler auto`: take the straggler algorithms out of the table; the
 * allreduce entry before a removed one takes over its sizes (the one after
 * it when there is none before). */
static void drop_straggler_choices(libplan *lp)
{
	int w = 0, prev = -1;
	for (int i = 0; i < lp->nchoices; i++) {
		lib_choice ch = lp->choices[i];
		if (ch.kind == IR_ALLREDUCE && lp->algos[ch.algo].straggler_role >= 0) {
			if (prev >= 0)
				lp->choices[prev].max_bytes = ch.max_bytes;
			continue;
		}
		if (ch.kind == IR_ALLREDUCE)
			prev = w;
		lp->choices[w++] = ch;
	}
	lp->nchoices = w;
}

/* The allreduce algorithm the size table chooses for `bytes`. */
static int allreduce_choice(const libplan *lp, uint64_t bytes)
{
	for (int i = 0; i < lp->nchoices; i++)
		if (lp->choices[i].kind == IR_ALLREDUCE && bytes <= lp->choices[i].max_bytes)
			return lp->choices[i].algo;
	return -1;
}

/* `straggler auto`: for each power-of-two size, the straggler delay from
 * which the straggler algorithm beats the algorithm the size table chooses
 * (event-driven simulation, cluster link model, precondition overlapped
 * with the delay as far as it goes). */
static int critical_delays(libplan *lp)
{
	const cluster_desc *d = lp->d;
	int sa = -1;
	for (int i = 0; i < lp->nalgos && sa < 0; i++)
		if (lp->algos[i].straggler_role >= 0)
			sa = i;
	lp->straggler_algo = sa;
	drop_straggler_choices(lp);
	link_model lm;
	link_error err;
	int rc = cluster_links(d, &lm, &err);
	if (rc != 0) {
		links_error(d, d->straggler_pos, &err);
		link_free(&lm);
		return -1;
	}
	const cost_model *m = cost_model_find("sim");
	cost_plan **plans = xcalloc((size_t)lp->nalgos, sizeof *plans);
	if (rc == 0 && !m)
		rc = link_errorf(&err, "no sim model");
	for (int k = 0; k < LIB_NCRIT && rc == 0; k++) {
		int b = allreduce_choice(lp, 1ULL << k);
		if (b < 0) {   /* lang/cluster.c made sure one is left; be safe anyway */
			rc = link_errorf(&err, "no allreduce algorithm for %llu bytes", 1ULL << k);
			break;
		}
		lp->crit_base[k] = b;
		for (int i = 0; i < 2 && rc == 0; i++) {
			int x = i ? b : sa;
			if (!plans[x] && !(plans[x] = costplan_from_ir(lp->algos[x].s, &err)))
				rc = -1;
		}
		cost_params q = { .bytes = (double)(1ULL << k), .links = &lm, .straggler = lp->algos[sa].straggler_role,
				  .delay = COST_MASKED, .segments = 1, .perm = lp->perm };
		cluster_network(d, &q);
		double dl = 0;
		int found = rc == 0 ? cost_critical_delay(m, plans[sa], plans[b], &q, &dl, &err) : -1;
		if (found < 0)
			rc = -1;
		lp->crit[k] = found == 1 ? INFINITY : dl;
	}
	if (rc != 0)
		diag_error(d->straggler_pos, "cluster '%s': cost model: %s", d->name, err.msg);
	for (int i = 0; i < lp->nalgos; i++)
		cost_plan_free(plans[i]);
	free(plans);
	link_free(&lm);
	return rc;
}

/* `collc build --tuning FILE`: the collectives FILE tunes take its size
 * table (tuning.h: each size the winner of the nearest measured one);
 * tune_check made sure every winner is an algorithm of the cluster. */
static void tuned_tables(libplan *lp)
{
	coll_choice *tc;
	int nt = tune_choices(lp->tuning, &tc);
	if (nt < 0) {
		fprintf(stderr, "collc: error: out of memory\n");
		exit(1);
	}
	lib_choice *old = lp->choices;
	int nold = lp->nchoices;
	lp->choices = NULL;
	lp->nchoices = 0;
	bool done[IR_NKINDS] = { false }, has[IR_NKINDS] = { false };
	for (int j = 0; j < nt; j++)
		if (tc[j].kind >= 0 && tc[j].kind < IR_NKINDS)
			has[tc[j].kind] = true;
	for (int i = 0; i < nold; i++) {
		ir_kind k = old[i].kind;
		/* a collective the file tunes but leaves no coll winner for
		 * (every row MPI's, with no other times) keeps its own table */
		if (!lp->tuning->ncands[k] || !has[k]) {
			add_choice(lp, k, old[i].max_bytes, old[i].algo);
			continue;
		}
		if (done[k])
			continue;
		done[k] = true;
		for (int j = 0; j < nt; j++) {
			if (tc[j].kind != (int32_t)k)
				continue;
			int a = 0;
			while (a < lp->nalgos && !(lp->algos[a].s->kind == k && strcmp(lp->algos[a].label, tc[j].algo) == 0))
				a++;
			if (a < lp->nalgos)   /* tune_check made sure; never index past the table */
				add_choice(lp, k, tc[j].max_bytes, a);
		}
	}
	free(old);
	free(tc);
}

static int size_tables(libplan *lp)
{
	const cluster_desc *d = lp->d;
	int rc = 0;
	lp->nchoices = 0;
	for (int i = 0; i < d->nblocks && rc == 0; i++) {
		if (d->blocks[i].by_cost)
			rc = choose_by_cost(lp, &d->blocks[i]);
		else
			by_threshold(lp, &d->blocks[i]);
	}
	if (rc == 0 && lp->tuning)
		tuned_tables(lp);
	return rc;
}

/* Does the tuning file fit the cluster: its rank count, its transport
 * (when the cluster names a host transport: `auto` is decided at run
 * time), and its algorithms (tuning.h)?  The host is not checked: a
 * library is often built on another machine than the one it serves. */
static int check_tuning(const libplan *lp)
{
	const cluster_desc *d = lp->d;
	int32_t *kinds = xcalloc((size_t)lp->nalgos + 1, sizeof *kinds);
	const char **names = xcalloc((size_t)lp->nalgos + 1, sizeof *names);
	for (int i = 0; i < lp->nalgos; i++) {
		kinds[i] = (int32_t)lp->algos[i].s->kind;
		names[i] = lp->algos[i].label;
	}
	const char *tp = d->target->gpu || strcmp(d->target->name, "auto") == 0 ? NULL : d->target->name;
	link_error err;
	int rc = tune_check(lp->tuning, d->ranks, tp, NULL, 0, kinds, names, lp->nalgos, &err);
	if (rc)
		diag_error(d->pos, "cluster '%s': --tuning: %s", d->name, err.msg);
	free(kinds);
	free(names);
	return rc;
}

/* What to order for: reorder_algo, else the allreduce the table picks at
 * reorder_bytes, else the first algorithm. */
static int reorder_target(const libplan *lp)
{
	const cluster_desc *d = lp->d;
	if (d->reorder_algo) {
		for (int i = 0; i < lp->nalgos; i++)
			if (strcmp(lp->algos[i].label, d->reorder_algo) == 0)
				return i;
	}
	int a = allreduce_choice(lp, lp->reorder_bytes);
	return a >= 0 ? a : 0;
}

/* `reorder by cost`: search the order (see the top of the file). */
static int choose_order(libplan *lp)
{
	const cluster_desc *d = lp->d;
	link_model lm;
	link_error err;
	int rc = cluster_links(d, &lm, &err);
	if (rc != 0) {
		links_error(d, d->reorder_pos, &err);
		link_free(&lm);
		return -1;
	}
	cost_plan *p = costplan_from_ir(lp->algos[lp->reorder_algo].s, &err);
	reorder_opts o = { .bytes = (double)lp->reorder_bytes, .seed = 1, .time_limit = 10 };
	reorder_result res;
	memset(&res, 0, sizeof res);
	if (!p || reorder_search(p, &lm, &o, &res, &err) != 0) {
		diag_error(d->reorder_pos, "cluster '%s': reorder by cost: %s", d->name, err.msg);
		rc = -1;
	} else {
		lp->perm = xmalloc(sizeof *lp->perm * (size_t)d->ranks);
		memcpy(lp->perm, res.perm, sizeof *lp->perm * (size_t)d->ranks);
		lp->t_identity = res.t_identity;
		lp->t_best = res.t_best;
		lp->optimal = res.optimal;
		cost_params q = { .bytes = (double)lp->reorder_bytes, .links = &lm, .straggler = -1, .segments = 1 };
		cluster_network(d, &q);
		cost_result r;
		lp->sim_identity = cost_sim_time(p, &q, &r, &err) == 0 ? r.time : NAN;
		q.perm = lp->perm;
		lp->sim_best = cost_sim_time(p, &q, &r, &err) == 0 ? r.time : NAN;
	}
	reorder_result_free(&res);
	cost_plan_free(p);
	link_free(&lm);
	return rc;
}

int libplan_make(const cluster_desc *d, const tune_table *tuning, libplan *lp)
{
	memset(lp, 0, sizeof *lp);
	lp->d = d;
	lp->tuning = tuning;
	lp->algos = d->entries;
	lp->nalgos = d->nentries;
	lp->straggler_algo = -1;
	lp->reorder_algo = -1;
	lp->reorder_bytes = d->reorder_size ? d->reorder_size : 64ULL << 20;
	int rc = tuning ? check_tuning(lp) : 0;
	if (rc == 0)
		rc = size_tables(lp);
	if (rc == 0 && d->reorder != CLUSTER_REORDER_NONE)
		lp->reorder_algo = reorder_target(lp);
	if (rc == 0 && d->reorder == CLUSTER_REORDER_COST) {
		rc = choose_order(lp);
		if (rc == 0)   /* the library runs in that order: cost its tables so */
			rc = size_tables(lp);
	}
	if (rc == 0 && d->straggler == CLUSTER_STRAGGLER_AUTO)
		rc = critical_delays(lp);
	if (rc != 0) {
		libplan_free(lp);
		return -1;
	}
	return 0;
}

void libplan_free(libplan *lp)
{
	free(lp->choices);
	free(lp->perm);
	memset(lp, 0, sizeof *lp);
}
