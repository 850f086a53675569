/*
 * collectives.c - the public collective entry points and the
 * communicator's queries.
 *
 * The coll_<collective> calls check arguments, map the NCCL buffer
 * conventions to one full working count, pick an algorithm by size (or by
 * name) and hand over to the executor (exec.c); coll_run_algo runs a plan
 * built at run time, coll_barrier synchronises through the bootstrap.
 *
 * Pipeline position: under comm.c (the communicator's life) and the
 * runtime's own users of collectives (probe.c's measurements, reorder.c's
 * choice of the algorithm to order for); above the executor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

int coll_rank(const coll_comm *c) { return c ? c->rank : -1; }
int coll_nranks(const coll_comm *c) { return c ? c->n : 0; }
const char *coll_transport_name(const coll_comm *c) { return c && c->tp ? c->tp->ops->name : "none"; }

coll_result coll_rail_policy_parse(const char *spec, coll_rail_policy *pol, char *why, size_t whylen)
{
	char buf[200];
	if (!spec || !pol)
		return rt_err(NULL, COLL_ERR_INVALID, "coll_rail_policy_parse: NULL argument");
	if (rt_policy_parse(spec, pol, buf, sizeof buf)) {
		if (why && whylen)
			snprintf(why, whylen, "%s", buf);
		return rt_err(NULL, COLL_ERR_INVALID, "policy '%s': %s", spec, buf);
	}
	return COLL_OK;
}

coll_result coll_rail_stats(const coll_comm *c, coll_rail_info *out)
{
	if (!c || !out)
		return rt_err(NULL, COLL_ERR_INVALID, "coll_rail_stats: NULL argument");
	if (rt_rails_stats(c->tp, out))
		return rt_err(NULL, COLL_ERR_UNSUPPORTED, "coll_rail_stats: the communicator runs on %s, not on rails",
		              coll_transport_name(c));
	return COLL_OK;
}

void coll_set_timeout(coll_comm *c, double s)
{
	/* void for compatibility: a bad value (NaN, above 1e7 s) leaves the
	 * timeout as it was and says why in coll_last_error */
	if (c)
		rt_timeout_ms(c, s, &c->timeout_ms);
}

coll_result coll_barrier(coll_comm *c)
{
	if (!c)
		return COLL_ERR_INVALID;
	if (c->broken)
		return rt_err(c, COLL_ERR_ABORTED, "communicator failed earlier");
	int rc = rt_boot_barrier(c);
	if (rc)
		c->broken = rc;
	return rc;
}

/* --- collectives ----------------------------------------------------------- */

/* A plan for one rank with nothing to do: n == 1 without a plan set. */
static const coll_rank_plan solo_rank = {NULL, 0};
static const coll_algo solo_algos[COLL_NCOLLS] = {
#define COLL_KIND(id, ...) {"solo", COLL_##id, 1, 1, 0, 0, &solo_rank, 0},
#include "coll_kinds.def"
#undef COLL_KIND
};

static const coll_algo *find_algo(const coll_comm *c, coll_kind k, const char *name)
{
	const coll_plan_set *s = c->plans;
	for (int i = 0; s && i < s->nalgos; i++)
		if (s->algos[i]->kind == (int32_t)k && s->algos[i]->nranks == c->n &&
		    (!name || strcmp(s->algos[i]->name, name) == 0))
			return s->algos[i];
	if (c->n == 1 && (!name || strcmp(name, "solo") == 0))
		return &solo_algos[k];
	return NULL;
}

const char *coll_choose_algo(const coll_comm *c, coll_kind k, uint64_t bytes)
{
	if (!c || (unsigned)k >= COLL_NCOLLS)
		return NULL;
	/* the tuned table first (tuned.c): it checked that its winners are in
	 * the plan set, so a kind it holds ends here */
	for (int i = 0; i < c->ntuned; i++)
		if (c->tuned[i].kind == (int32_t)k && bytes <= c->tuned[i].max_bytes && find_algo(c, k, c->tuned[i].algo))
			return c->tuned[i].algo;
	const coll_plan_set *s = c->plans;
	for (int i = 0; s && s->choices && i < s->nchoices; i++)
		if (s->choices[i].kind == (int32_t)k && bytes <= s->choices[i].max_bytes &&
		    find_algo(c, k, s->choices[i].algo))
			return s->choices[i].algo;
	const coll_algo *a = find_algo(c, k, NULL);
	return a ? a->name : NULL;
}

const char *coll_last_algo(const coll_comm *c) { return c ? c->last_algo : NULL; }

const char *coll_rank_order(const coll_comm *c, const int32_t **perm)
{
	if (perm)
		*perm = c ? c->perm : NULL;
	return !c ? NULL : c->order_src[0] ? c->order_src : "identity";
}

/* The first allreduce algorithm with a straggler role, or NULL. */
static const char *straggler_algo(const coll_comm *c)
{
	const coll_plan_set *s = c->plans;
	for (int i = 0; s && i < s->nalgos; i++)
		if (s->algos[i]->kind == COLL_ALLREDUCE && s->algos[i]->nranks == c->n && s->algos[i]->straggler > 0)
			return s->algos[i]->name;
	return NULL;
}

/* `straggler auto`: the delay above which the straggler algorithm beats
 * the size table's choice for `bytes` (COLL_NEVER: it never does). */
static double critical_delay(const coll_comm *c, uint64_t bytes)
{
	const coll_plan_set *s = c->plans;
	for (int i = 0; i < s->ncrit; i++)
		if (bytes <= s->crit[i].max_bytes)
			return s->crit[i].delay_s;
	return COLL_NEVER;
}

static rt_prep *cached_prep(coll_comm *c, const coll_algo *a, int role, int *rc)
{
	for (rt_prep *p = c->preps; p; p = p->next)
		if (p->algo == a && p->role == role)
			return p;
	rt_prep *p;
	if ((*rc = rt_prep_build(c, a, role, &p)))
		return NULL;
	p->next = c->preps;
	c->preps = p;
	return p;
}

/* Shared checks and dispatch.  count is the full working count. */
static coll_result run(coll_comm *c, coll_kind k, const coll_algo *a, const char *name, const void *sb,
                       void *rb, size_t count, coll_dtype dt, coll_op op, int root, int cache)
{
	if (!c)
		return COLL_ERR_INVALID;
	if (c->broken)
		return rt_err(c, COLL_ERR_ABORTED, "communicator failed earlier (%s); only coll_finalize is useful",
		              coll_strerror(c->broken));
	if ((unsigned)dt >= COLL_NDTYPES)
		return rt_err(c, COLL_ERR_INVALID, "%s: bad dtype %d", coll_kind_name(k), (int)dt);
	if ((unsigned)op >= COLL_NOPS)
		return rt_err(c, COLL_ERR_INVALID, "%s: bad op %d", coll_kind_name(k), (int)op);
	const coll_kind_info *ki = coll_kind_get((int)k);
	if (root < 0 || root >= c->n)
		return rt_err(c, COLL_ERR_INVALID, "%s: root %d out of range 0..%d", ki->name, root, c->n - 1);
	/* a buffer is needed where the rank holds chunks of it: everywhere but
	 * off the root when only the root sends (broadcast) or receives (reduce) */
	if (count && (ki->contrib != COLL_WHO_ROOT || c->rank == root) && !sb)
		return rt_err(c, COLL_ERR_INVALID, "%s: NULL sendbuf", ki->name);
	if (count && (ki->target != COLL_WHO_ROOT || c->rank == root) && !rb)
		return rt_err(c, COLL_ERR_INVALID, "%s: NULL recvbuf", ki->name);
	size_t esz = coll_dtype_size(dt);
	if (count > SIZE_MAX / esz)
		return rt_err(c, COLL_ERR_INVALID, "%s: count %zu too large", coll_kind_name(k), count);
	rt_straggler_enter(c);
	/* The straggler a straggler role is given to: the declared one, or
	 * under `straggler auto` the detected one. */
	int strag = c->auto_straggler ? c->detected : c->straggler;
	if (!a) {
		if (name && !*name)
			name = NULL;
		if (!name && k == COLL_ALLREDUCE && c->auto_straggler && c->detected >= 0 &&
		    c->detected_delay > critical_delay(c, (uint64_t)count * esz))
			name = straggler_algo(c);   /* every rank detected the same straggler and delay */
		if (!name)
			name = coll_choose_algo(c, k, (uint64_t)count * esz);
		a = name ? find_algo(c, k, name) : NULL;
		if (!a)
			return rt_err(c, COLL_ERR_NOALGO, "no %s algorithm%s%s for %d ranks in the plan set", coll_kind_name(k),
			              name ? " named " : "", name ? name : "", c->n);
	}
	if (a->kind != (int32_t)k || a->nranks != c->n)
		return rt_err(c, COLL_ERR_NOALGO, "algorithm '%s' is a %s for %d ranks, not a %s for %d", a->name,
		              coll_kind_name((coll_kind)a->kind), a->nranks, coll_kind_name(k), c->n);
	/* This rank's role.  The rank order (c->perm, reorder.c) first makes
	 * the physical rank a logical one; the root's relabelling and the
	 * straggler's swap then happen among logical ranks, as exec.c's
	 * phys_of undoes them. */
	int me = rt_logical(c, c->rank);
	int role = me;
	if (ki->rooted)
		role = ((me - rt_logical(c, root) + a->root) % c->n + c->n) % c->n;
	if (k != COLL_ALLREDUCE || a->straggler <= 0 || strag < 0) {
		strag = -1;
	} else {   /* the paper's swap: the straggler and the straggler role trade places */
		int ls = rt_logical(c, strag);
		role = role == ls ? a->straggler - 1 : role == a->straggler - 1 ? ls : role;
	}
	int rc = COLL_OK;
	rt_prep *p = NULL;
	if (cache) {
		p = cached_prep(c, a, role, &rc);
	} else {
		rc = rt_prep_build(c, a, role, &p);
	}
	if (rc)
		return rc;
	c->last_algo = a->name;
	rc = rt_exec(c, a, p, sb, rb, count, dt, op, root, strag);
	if (!cache)
		rt_prep_free(p);
	if (rc == COLL_OK && k == COLL_ALLREDUCE)
		rt_straggler_record(c);
	return rc;
}

coll_result coll_collective(coll_comm *c, coll_kind k, const char *algo, const void *sb, void *rb, size_t count,
                            coll_dtype dt, coll_op op, int root)
{
	const coll_kind_info *ki = coll_kind_get((int)k);
	if (!c)
		return COLL_ERR_INVALID;
	if (!ki)
		return rt_err(c, COLL_ERR_INVALID, "bad collective kind %d", (int)k);
	/* the API's count is per unit (coll_kinds.h): the working count is units times it */
	uint64_t u = coll_kind_units(ki, c->n);
	if (count > SIZE_MAX / u)
		return rt_err(c, COLL_ERR_INVALID, "%s: count %zu too large", ki->name, count);
	return run(c, k, NULL, algo, sb, rb, count * (size_t)u, dt, ki->reduces ? op : COLL_SUM, ki->rooted ? root : 0,
	           1);
}

coll_result coll_allreduce_algo(coll_comm *c, const char *algo, const void *sb, void *rb, size_t count,
                                coll_dtype dt, coll_op op)
{
	return coll_collective(c, COLL_ALLREDUCE, algo, sb, rb, count, dt, op, 0);
}

coll_result coll_reduce_scatter_algo(coll_comm *c, const char *algo, const void *sb, void *rb, size_t recvcount,
                                     coll_dtype dt, coll_op op)
{
	return coll_collective(c, COLL_REDUCE_SCATTER, algo, sb, rb, recvcount, dt, op, 0);
}

coll_result coll_allgather_algo(coll_comm *c, const char *algo, const void *sb, void *rb, size_t sendcount,
                                coll_dtype dt)
{
	return coll_collective(c, COLL_ALLGATHER, algo, sb, rb, sendcount, dt, COLL_SUM, 0);
}

coll_result coll_broadcast_algo(coll_comm *c, const char *algo, const void *sb, void *rb, size_t count,
                                coll_dtype dt, int root)
{
	return coll_collective(c, COLL_BROADCAST, algo, sb, rb, count, dt, COLL_SUM, root);
}

coll_result coll_reduce_algo(coll_comm *c, const char *algo, const void *sb, void *rb, size_t count,
                             coll_dtype dt, coll_op op, int root)
{
	return coll_collective(c, COLL_REDUCE, algo, sb, rb, count, dt, op, root);
}

coll_result coll_alltoall_algo(coll_comm *c, const char *algo, const void *sb, void *rb, size_t count,
                               coll_dtype dt)
{
	return coll_collective(c, COLL_ALLTOALL, algo, sb, rb, count, dt, COLL_SUM, 0);
}

coll_result coll_allreduce(coll_comm *c, const void *sb, void *rb, size_t count, coll_dtype dt, coll_op op)
{
	return coll_allreduce_algo(c, NULL, sb, rb, count, dt, op);
}

coll_result coll_reduce_scatter(coll_comm *c, const void *sb, void *rb, size_t recvcount, coll_dtype dt,
                                coll_op op)
{
	return coll_reduce_scatter_algo(c, NULL, sb, rb, recvcount, dt, op);
}

coll_result coll_allgather(coll_comm *c, const void *sb, void *rb, size_t sendcount, coll_dtype dt)
{
	return coll_allgather_algo(c, NULL, sb, rb, sendcount, dt);
}

coll_result coll_broadcast(coll_comm *c, const void *sb, void *rb, size_t count, coll_dtype dt, int root)
{
	return coll_broadcast_algo(c, NULL, sb, rb, count, dt, root);
}

coll_result coll_reduce(coll_comm *c, const void *sb, void *rb, size_t count, coll_dtype dt, coll_op op, int root)
{
	return coll_reduce_algo(c, NULL, sb, rb, count, dt, op, root);
}

coll_result coll_alltoall(coll_comm *c, const void *sb, void *rb, size_t count, coll_dtype dt)
{
	return coll_alltoall_algo(c, NULL, sb, rb, count, dt);
}

coll_result coll_run_algo(coll_comm *c, const coll_algo *a, const void *sb, void *rb, size_t count,
                          coll_dtype dt, coll_op op)
{
	if (!c || !a)
		return COLL_ERR_INVALID;
	const coll_kind_info *ki = coll_kind_get(a->kind);
	if (!ki)
		return rt_err(c, COLL_ERR_PLAN, "algorithm '%s': bad kind %d", a->name ? a->name : "?", (int)a->kind);
	uint64_t units = coll_kind_units(ki, c->n);
	if (count % units)
		return rt_err(c, COLL_ERR_INVALID, "%s: count %zu is not a multiple of %s%d ranks", ki->name, count,
		              units == (uint64_t)c->n ? "" : "the square of ", c->n);
	if (rt_algo_check(a, c->err, sizeof c->err))
		return COLL_ERR_PLAN;
	return run(c, (coll_kind)a->kind, a, NULL, sb, rb, count, dt, op, a->root, 0);
}

