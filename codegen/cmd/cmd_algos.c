/*
 * cmd_algos.c - the algorithms the cost subcommands evaluate.
 *
 * Pipeline position: after the flag parser (cmd_flags.c), before any
 * model runs.  Loads the .coll files through the driver (driver.h: no
 * syntax tree reaches this layer), checks that every -D names a
 * parameter, chooses the algorithms (-a, else every named one, plus the
 * baseline compare and tune measure against), and for each n evaluates
 * and verifies an algorithm and prepares its cost plan once, so that the
 * commands can evaluate it for every size, model and straggler setting.
 * Also the cost parameters and the model list a command's options mean,
 * and the checks of -D and -a that check and show share with them (an
 * unknown name gets the closest one, diag_suggest).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_flags.h"

int cmd_check_defines(drv_prog *p, const cmd_opts *o)
{
	const char *bad = drv_unknown_define(p, o->defs, o->ndefs);
	return bad ? cmd_input_error("-D %s: no algorithm has a parameter named '%s'", bad, bad) : 0;
}

const char *cmd_closest_algo(drv_prog *p, const char *name)
{
	diag_suggest near = diag_suggest_start(name);
	for (int i = 0; i < drv_nalgos(p); i++)
		diag_suggest_add(&near, drv_algo_name(p, i));
	return near.best;
}

int cmd_check_algo(drv_prog *p, const char *name)
{
	if (!name || drv_find_algo(p, name) >= 0)
		return 0;
	const char *near = cmd_closest_algo(p, name);
	if (near)
		return cmd_input_error("no algorithm named '%s' (did you mean '%s'?)", name, near);
	drv_run(p, name, 1, NULL, 0, false);   /* says so, with the names there are */
	return 1;
}

static void list_algos(drv_prog *p, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = 0;
	for (int i = 0; i < drv_nalgos(p) && off < len; i++)
		if (drv_algo_named(p, i))
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
						drv_algo_name(p, i));
}

/* The algorithms to cost: -a (each must exist), else all named in the
 * files.  sim simulates exactly one; compare and tune measure against
 * the baseline, so it comes along. */
static int select_algos(drv_prog *p, cmd_opts *o, cmd_algo **out, int *nout)
{
	bool one = o->which & (CMD_SIM | CMD_REORDER), baseline = o->which & (CMD_COMPARE | CMD_TUNE);
	char have[1024];
	list_algos(p, have, sizeof have);
	cmd_algo *v = calloc((size_t)drv_nalgos(p) + (size_t)o->nalgos + 2, sizeof *v);
	int nv = 0;
	if (o->nalgos) {
		for (int i = 0; i < o->nalgos; i++) {
			int k = drv_find_algo(p, o->algos[i]);
			const char *near = k < 0 ? cmd_closest_algo(p, o->algos[i]) : NULL;
			if (k < 0) {
				free(v);
				return near ? cmd_input_error("no algorithm named '%s' (did you mean '%s'?)", o->algos[i], near)
					    : cmd_input_error("no algorithm named '%s' (have: %s)", o->algos[i], have);
			}
			bool dup = false;
			for (int j = 0; j < nv; j++)
				dup |= strcmp(v[j].name, drv_algo_name(p, k)) == 0;
			if (!dup)
				v[nv++] = (cmd_algo){ .name = drv_algo_name(p, k), .kind = drv_algo_kind(p, k) };
		}
	} else {
		for (int i = 0; i < drv_nalgos(p); i++)
			if (drv_algo_named(p, i))
				v[nv++] = (cmd_algo){ .name = drv_algo_name(p, i), .kind = drv_algo_kind(p, i) };
	}
	if (nv == 0) {
		free(v);
		return cmd_input_error("no algorithms in the given files");
	}
	if (one && nv > 1) {
		free(v);
		return cmd_usage_error("%s takes one algorithm: choose it with -a (have: %s)", o->cmd, have);
	}
	if (baseline) {
		/* the baseline comes along even when -a did not name it */
		int k = drv_find_algo(p, o->baseline);
		if (k < 0 && o->baseline_given) {
			const char *near = cmd_closest_algo(p, o->baseline);
			free(v);
			return near ? cmd_input_error("--baseline: no algorithm named '%s' (did you mean '%s'?)",
						      o->baseline, near)
				    : cmd_input_error("--baseline: no algorithm named '%s' (have: %s)", o->baseline, have);
		}
		bool in = k < 0;
		for (int j = 0; j < nv; j++)
			in |= strcmp(v[j].name, o->baseline) == 0;
		if (!in)
			v[nv++] = (cmd_algo){ .name = drv_algo_name(p, k), .kind = drv_algo_kind(p, k) };
	}
	*out = v;
	*nout = nv;
	return 0;
}

static void release(cmd_algo *a)
{
	cost_plan_free(a->plan);
	ir_free(a->s);
	a->plan = NULL;
	a->s = NULL;
}

int cmd_algo_build(drv_prog *p, const cmd_opts *o, cmd_algo *a, int n, bool quiet)
{
	release(a);
	a->why[0] = 0;
	drv_set_quiet_require(p, quiet);
	a->s = drv_run(p, a->name, n, o->defs, o->ndefs, true);
	if (!a->s) {
		const char *why = NULL;
		if (quiet && drv_unsupported(p, &why)) {
			snprintf(a->why, sizeof a->why, "%s", why ? why : "unsupported");
			return 3;
		}
		return 1;
	}
	link_error err;
	a->plan = costplan_from_ir(a->s, &err);
	if (!a->plan)
		return cmd_input_error("%s", err.msg);
	return 0;
}

static double delay_of(const cmd_opts *o)
{
	return o->have_delay ? o->delay : COST_MASKED;
}

cost_params cmd_params(const cmd_opts *o, double bytes, int n)
{
	return (cost_params){ .bytes = bytes, .links = &o->links, .straggler = cmd_straggler_for(o, n),
			      .delay = delay_of(o), .segments = o->segments, .perm = o->perm,
			      .round_order = o->round_order >= 0 ? o->round_order : o->links_path != NULL,
			      .share_alpha = o->sharing >= 0 ? o->sharing : o->links_path != NULL ? COST_TCP_ALPHA : 0,
			      .share_rtt = o->sharing >= 0 ? o->sharing_rtt : o->links_path != NULL,
			      .share_jitter = o->jitter, .share_samples = o->jitter_samples };
}

int cmd_segments(const cmd_opts *o, const cost_plan *p, double bytes)
{
	if (!(o->seg_bytes > 0))
		return o->segments;
	double k = ceil(bytes * p->work / p->chunks / o->seg_bytes);
	return k < 1 ? 1 : k > 4096 ? 4096 : (int)k;
}

int cmd_models(const cmd_opts *o, const cost_model **m)
{
	int k = 0;
	for (const cost_model *x = cost_models; x->name; x++)
		if (strcmp(o->model, "all") == 0 || strcmp(o->model, x->name) == 0)
			m[k++] = x;
	return k;
}

int cmd_setup(int argc, char **argv, int which, cmd_opts *o, drv_prog **p, cmd_algo **v, int *nv)
{
	*p = NULL;
	*v = NULL;
	*nv = 0;
	int rc = cmd_parse(argc, argv, which, o);
	if (rc)
		return rc;
	*p = drv_load(o->nfiles, o->files);
	if (!*p)
		return 1;
	if (cmd_check_defines(*p, o))
		return 1;
	return select_algos(*p, o, v, nv);
}

int cmd_teardown(int rc, cmd_opts *o, drv_prog *p, cmd_algo *v, int nv)
{
	for (int i = 0; i < nv; i++)
		release(&v[i]);
	free(v);
	drv_free(p);
	cmd_free_opts(o);
	return rc < 0 ? 0 : rc;
}
