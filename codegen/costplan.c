/*
 * costplan.c - the compiler's schedules as the cost model's input: a
 * verified ir_sched handed, round by round, to the cost plan builder of
 * the model floor (runtime/model/cost.h) as coll_xfer transfers, the same
 * neutral list runtime/lower.c lowers.
 *
 * Pipeline position: the one place where the back end crosses from the
 * IR to the model, so the model never sees an IR type.  What only the IR
 * knows is decided here: a round is a precondition round when its phase
 * name starts with "pre" (StragglAR's reduce-scatter, the Broadcast
 * baseline's allreduce: cost.h says what the models do with them).
 */
#include <stdlib.h>
#include <string.h>

#include "costplan.h"

cost_plan *costplan_from_ir(const ir_sched *s, link_error *err)
{
	uint8_t *pre = calloc((size_t)s->nrounds + 1, 1);
	int most = 0;
	for (int k = 0; pre && k < s->nrounds; k++) {
		int ph = s->rounds[k].phase;
		pre[k] = ph >= 0 && ph < s->nphases && strncmp(s->phases[ph], "pre", 3) == 0;
		if (s->rounds[k].count > most)
			most = s->rounds[k].count;
	}
	coll_xfer *x = malloc(sizeof *x * ((size_t)most + 1));
	cost_shape sh = { .name = s->algo, .kind = (int)s->kind, .n = s->n, .chunks = s->chunks,
			  .ports_send = s->ports_send, .ports_recv = s->ports_recv, .nrounds = s->nrounds,
			  .nxfers = s->nxfers > 0 ? (size_t)s->nxfers : 0, .pre = pre };
	cost_plan *p = NULL;
	if (!pre || !x) {
		link_errorf(err, "out of memory preparing schedule %s", s->algo);
		goto out;
	}
	if (!(p = cost_plan_new(&sh, err)))
		goto out;
	for (int k = 0; k < s->nrounds; k++) {
		const ir_round *rd = &s->rounds[k];
		if (rd->first < 0 || rd->count < 0 || rd->first + rd->count > s->nxfers) {
			link_errorf(err, "schedule %s: round %d has bad transfer indices", s->algo, k);
			goto fail;
		}
		for (int i = 0; i < rd->count; i++) {
			const ir_xfer *t = &s->xfers[rd->first + i];
			x[i] = (coll_xfer){ .round = k, .src = t->src, .dst = t->dst, .chunk = t->chunk,
					    .reduce = t->op == IR_REDUCE_OP };
		}
		if (cost_plan_add(p, x, (size_t)rd->count, err))
			goto fail;
	}
	if (cost_plan_done(p, err))
		goto fail;
	goto out;
fail:
	cost_plan_free(p);
	p = NULL;
out:
	free(pre);
	free(x);
	return p;
}
