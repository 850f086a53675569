/*
 * tuned.c - a communicator's tuned size table: the algorithm measured
 * fastest per collective and size, which coll_choose_algo consults before
 * the plan set's own table.
 *
 * Two sources.  COLL_TUNING=FILE names a tuning file (runtime/model/
 * tuning.h; `collbench --tune` writes them): every rank reads it at
 * coll_init, refuses it when it does not fit the job (rank count,
 * transport, host, plan set: the reader's message, naming the file), and
 * the ranks check at the rendezvous that they all read the same table, so
 * no two ranks can choose differently.  `choose by measure` (tuneinit.c)
 * measures one at init instead.
 *
 * Pipeline position: called by comm.c during coll_init; collectives.c
 * reads c->tuned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"
#include "tuning.h"

/* The plan set's algorithms for c->n as the parallel lists tune_check
 * takes; -1 when out of memory. */
static int plan_algos(const coll_comm *c, int32_t **kinds, const char ***names)
{
	const coll_plan_set *s = c->plans;
	int n = 0, cap = s ? s->nalgos : 0;
	*kinds = calloc((size_t)cap + 1, sizeof **kinds);
	*names = calloc((size_t)cap + 1, sizeof **names);
	if (!*kinds || !*names) {
		free(*kinds);
		free(*names);
		return -1;
	}
	for (int i = 0; i < cap; i++)
		if (s->algos[i]->nranks == c->n) {
			(*kinds)[n] = s->algos[i]->kind;
			(*names)[n++] = s->algos[i]->name;
		}
	return n;
}

int rt_tuning_check_fit(coll_comm *c, const tune_table *t, const char *transport, char *why, size_t whylen)
{
	char host[TUNE_HOST_MAX] = "";
	if (gethostname(host, sizeof host - 1) != 0)
		host[0] = 0;
	const char *hosts[1] = {host};
	int32_t *kinds;
	const char **names;
	int na = plan_algos(c, &kinds, &names);
	if (na < 0)
		return snprintf(why, whylen, "out of memory"), -1;
	link_error e;
	int rc = tune_check(t, c->n, transport, hosts, host[0] ? 1 : 0, kinds, names, na, &e);
	free(kinds);
	free(names);
	if (rc)
		snprintf(why, whylen, "%s", e.msg);
	return rc;
}

int rt_tuning_adopt(coll_comm *c, tune_table *t, const char *src)
{
	coll_choice *ch;
	int n = tune_choices(t, &ch);
	if (n < 0) {
		tune_free(t);
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	rt_tuning_free(c);
	c->tuning = t;
	c->tuned = ch;
	c->ntuned = n;
	snprintf(c->tuning_src, sizeof c->tuning_src, "%s", src);
	return COLL_OK;
}

int rt_tuning_load(coll_comm *c, uint32_t *hash)
{
	*hash = 0;
	const char *path = getenv("COLL_TUNING");
	/* a communicator without plans runs no collective a table could
	 * choose for (the torch backend's one for messages) */
	if (!path || !*path || !c->plans)
		return COLL_OK;
	tune_table *t;
	link_error e;
	if (tune_read(path, &t, &e))
		return rt_err(c, COLL_ERR_INVALID, "COLL_TUNING: %s", e.msg);
	char why[600];
	/* the transport is checked once it is chosen (rt_tuning_fit) */
	if (rt_tuning_check_fit(c, t, NULL, why, sizeof why)) {
		tune_free(t);
		return rt_err(c, COLL_ERR_INVALID, "COLL_TUNING: %s", why);
	}
	char src[300];
	snprintf(src, sizeof src, "COLL_TUNING=%s", path);
	int rc = rt_tuning_adopt(c, t, src);
	if (rc)
		return rc;
	*hash = tune_hash(c->tuning);
	if (*hash == RT_TUNE_BROKEN)
		*hash = RT_TUNE_BROKEN - 1;
	return COLL_OK;
}

int rt_tuning_fit(coll_comm *c)
{
	if (!c->tuning)
		return COLL_OK;
	const char *tp = coll_transport_name(c);
	if (tp && strcmp(c->tuning->transport, tp) != 0)
		return rt_err(c, COLL_ERR_INVALID, "COLL_TUNING: %s was measured over transport %s, not %s",
		              c->tuning->path, c->tuning->transport, tp);
	return COLL_OK;
}

void rt_tuning_free(coll_comm *c)
{
	free(c->tuned);
	tune_free(c->tuning);
	c->tuned = NULL;
	c->tuning = NULL;
	c->ntuned = 0;
	c->tuning_src[0] = 0;
}

const char *coll_tuning(const coll_comm *c)
{
	return c && c->tuning ? c->tuning_src : NULL;
}
