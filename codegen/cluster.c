/*
 * cluster.c - evaluate a `cluster` declaration (see cluster.h).
 *
 *   cluster lab4 {
 *     ranks 4;  transport shm;
 *     allreduce { rhd below 256KiB; ring; }
 *     reduce_scatter { ring_rs; }
 *     broadcast { binomial_bcast; }
 *   }
 *
 * `straggler R;` names a persistent straggler (physical rank R) and
 * `straggler auto;` asks the runtime to detect one; both need an allreduce
 * algorithm with a straggler role: a rank absent from the precondition
 * rounds (phase "pre...") in which every other rank takes part, such as
 * StragglAR's rank n-1.  For `auto` the size table loses the straggler
 * algorithm (it is for calls without a straggler) and the cost model gives,
 * per power-of-two size, the critical delay from which the straggler
 * algorithm beats the table's choice; the runtime compares the measured
 * delay with it.
 *
 * Each collective block lists algorithms; with `below SIZE` thresholds the
 * first entry whose threshold exceeds the message size wins (an entry
 * without one takes every larger size), and with `choose by cost` the cost
 * model (cost.h, event-driven simulation under the cluster's link model)
 * picks the fastest per power-of-two size from 1 B to 4 GiB.  Every
 * algorithm is verified for the cluster's rank count here, so a library is
 * never built around a schedule that does not implement its collective.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "cluster.h"
#include "cost.h"
#include "linkmodel.h"

static int add_choice(cluster *c, ir_kind kind, uint64_t max_bytes, int algo)
{
	c->choices = realloc(c->choices, (c->nchoices + 1) * sizeof *c->choices);
	c->choices[c->nchoices++] = (cluster_choice){ kind, max_bytes, algo };
	return 0;
}

/* The straggler role of s: the one rank absent from its precondition
 * rounds while every other rank takes part in them; -1 when none. */
static int straggler_role(const ir_sched *s)
{
	if (s->kind != IR_ALLREDUCE || s->n < 2)
		return -1;
	char *in = calloc((size_t)s->n, 1);
	int haspre = 0, role = -1, absent = 0;
	for (int k = 0; in && k < s->nrounds; k++) {
		const ir_round *rd = &s->rounds[k];
		if (strncmp(s->phases[rd->phase], "pre", 3) != 0)
			continue;
		haspre = 1;
		for (int i = rd->first; i < rd->first + rd->count; i++)
			in[s->xfers[i].src] = in[s->xfers[i].dst] = 1;
	}
	for (int r = 0; in && haspre && r < s->n; r++)
		if (!in[r])
			role = r, absent++;
	free(in);
	return absent == 1 ? role : -1;
}

/* Evaluate one `algo(k = v, ...)` entry for the cluster's ranks. */
static int entry(drv_prog *p, cluster *c, ast *coll, ir_kind kind, ast *e)
{
	int i = drv_find_algo(p, e->str);
	if (i < 0) {
		diag_error(e->pos, "cluster '%s': no algorithm named '%s'", c->name, e->str);
		return -1;
	}
	if (drv_algo_kind(p, i) != kind) {
		diag_error(e->pos, "cluster '%s': '%s' is %s algorithm, listed under %s", c->name, e->str,
			   drv_algo_kind(p, i) == IR_ALLREDUCE ? "an allreduce" : ir_kind_names[drv_algo_kind(p, i)],
			   coll->str);
		return -1;
	}
	for (int j = 0; j < c->nalgos; j++)
		if (c->algos[j].s->kind == kind && strcmp(c->algos[j].label, e->str) == 0) {
			diag_error(e->pos, "cluster '%s': '%s' is listed twice under %s", c->name, e->str, coll->str);
			return -1;
		}
	drv_define defs[32];
	int nd = 0;
	for (int j = 0; j < e->list.n && nd < 32; j++) {
		ast *b = e->list.v[j], *v = b->a;
		long long x;
		if (v->kind == A_INT)
			x = v->ival;
		else if (v->kind == A_UNOP && v->op == OP_NEG && v->a->kind == A_INT)
			x = -v->a->ival;
		else {
			diag_error(v->pos, "cluster parameters must be integer literals");
			return -1;
		}
		defs[nd++] = (drv_define){ b->str, x };
	}
	int before = diag_errors;
	ir_sched *s = drv_run(p, e->str, c->ranks, defs, nd, true);
	if (!s) {
		if (diag_errors == before)
			diag_error(e->pos, "cluster '%s': '%s' failed for %d ranks", c->name, e->str, c->ranks);
		diag_note(e->pos, "included in cluster '%s' (%d ranks) here", c->name, c->ranks);
		return -1;
	}
	c->algos = realloc(c->algos, (c->nalgos + 1) * sizeof *c->algos);
	c->algos[c->nalgos++] = (cluster_algo){ s, strdup(e->str), straggler_role(s) };
	return c->nalgos - 1;
}

/* The cluster's link model (a `links` matrix or uniform alpha/bw), checked
 * against its rank count.  lm is always safe to link_free. */
static int cluster_links(const cluster *c, link_model *lm, link_error *err)
{
	memset(lm, 0, sizeof *lm);
	int rc = c->links ? link_read_matrix(lm, c->links, err) : link_uniform(lm, c->alpha, c->bw, err);
	return rc == 0 ? link_check_n(lm, c->ranks, err) : rc;
}

/* `choose by cost`: the fastest of algos[first..last] per power-of-two size. */
static int choose_by_cost(cluster *c, ast *coll, ir_kind kind, int first, int last)
{
	link_model lm;
	link_error err;
	int rc = cluster_links(c, &lm, &err);
	if (rc != 0) {
		diag_error(coll->pos, "cluster '%s': link model: %s", c->name, err.msg);
		link_free(&lm);
		return -1;
	}
	int na = last - first + 1;
	cost_plan **plans = calloc(na, sizeof *plans);
	for (int a = 0; a < na && rc == 0; a++)
		if (!(plans[a] = cost_plan_new(c->algos[first + a].s, &err)))
			rc = -1;
	int prev = -1;
	for (int k = 0; k <= 32 && rc == 0; k++) {
		cost_params q = { .bytes = (double)(1ULL << k), .links = &lm, .straggler = -1, .segments = 1 };
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
				c->choices[c->nchoices - 1].max_bytes = (1ULL << k) - 1;
			add_choice(c, kind, UINT64_MAX, first + best);
			prev = best;
		}
	}
	if (rc != 0)
		diag_error(coll->pos, "cluster '%s': cost model: %s", c->name, err.msg);
	for (int a = 0; a < na; a++)
		cost_plan_free(plans[a]);
	free(plans);
	link_free(&lm);
	return rc;
}

/* `straggler auto`: the size table is for calls without a straggler, so
 * take the straggler algorithms (sa: the first) out of it; the allreduce
 * entry before a removed one takes over its sizes (the one after it when
 * there is none before).  Returns -1 when no allreduce entry is left. */
static int drop_straggler_choices(cluster *c)
{
	int w = 0, prev = -1;
	for (int i = 0; i < c->nchoices; i++) {
		cluster_choice ch = c->choices[i];
		if (ch.kind == IR_ALLREDUCE && c->algos[ch.algo].straggler_role >= 0) {
			if (prev >= 0)
				c->choices[prev].max_bytes = ch.max_bytes;
			continue;
		}
		if (ch.kind == IR_ALLREDUCE)
			prev = w;
		c->choices[w++] = ch;
	}
	c->nchoices = w;
	return prev >= 0 ? 0 : -1;
}

/* The allreduce algorithm the size table chooses for `bytes`. */
static int allreduce_choice(const cluster *c, uint64_t bytes)
{
	for (int i = 0; i < c->nchoices; i++)
		if (c->choices[i].kind == IR_ALLREDUCE && bytes <= c->choices[i].max_bytes)
			return c->choices[i].algo;
	return -1;
}

/* Check `straggler` against the cluster and, for `auto`, find the
 * critical delays: for each power-of-two size, the straggler delay from
 * which the straggler algorithm beats the algorithm the size table
 * chooses (event-driven simulation, cluster link model, precondition
 * overlapped with the delay as far as it goes). */
static int straggler_setting(cluster *c)
{
	int sa = -1;
	for (int i = 0; i < c->nalgos && sa < 0; i++)
		if (c->algos[i].straggler_role >= 0)
			sa = i;
	if (c->straggler >= c->ranks) {
		diag_error(c->straggler_pos, "cluster '%s': straggler %d is not a rank of %d ranks", c->name, c->straggler,
			   c->ranks);
		return -1;
	}
	if (sa < 0) {
		diag_error(c->straggler_pos, "cluster '%s': 'straggler' needs an allreduce algorithm with a straggler "
			   "role (a precondition phase without one rank), such as stragglar", c->name);
		return -1;
	}
	if (c->straggler != CLUSTER_STRAGGLER_AUTO)
		return 0;
	c->straggler_algo = sa;
	if (drop_straggler_choices(c) != 0) {
		diag_error(c->straggler_pos, "cluster '%s': 'straggler auto' needs another allreduce algorithm to use "
			   "while no straggler is detected", c->name);
		return -1;
	}
	link_model lm;
	link_error err;
	int rc = cluster_links(c, &lm, &err);
	const cost_model *m = cost_model_find("sim");
	cost_plan **plans = calloc((size_t)c->nalgos, sizeof *plans);
	if (rc == 0 && (!m || !plans))
		rc = link_errorf(&err, "%s", m ? "out of memory" : "no sim model");
	for (int k = 0; k < CLUSTER_NCRIT && rc == 0; k++) {
		int b = allreduce_choice(c, 1ULL << k);
		c->crit_base[k] = b;
		for (int i = 0; i < 2 && rc == 0; i++) {
			int x = i ? b : sa;
			if (!plans[x] && !(plans[x] = cost_plan_new(c->algos[x].s, &err)))
				rc = -1;
		}
		cost_params q = { .bytes = (double)(1ULL << k), .links = &lm, .straggler = c->algos[sa].straggler_role,
				  .delay = COST_MASKED, .segments = 1 };
		double d = 0;
		int found = rc == 0 ? cost_critical_delay(m, plans[sa], plans[b], &q, &d, &err) : -1;
		if (found < 0)
			rc = -1;
		c->crit[k] = found == 1 ? INFINITY : d;
	}
	if (rc != 0)
		diag_error(c->straggler_pos, "cluster '%s': cost model: %s", c->name, err.msg);
	for (int i = 0; plans && i < c->nalgos; i++)
		cost_plan_free(plans[i]);
	free(plans);
	link_free(&lm);
	return rc;
}

static int collective(drv_prog *p, cluster *c, ast *coll)
{
	int kind = ir_kind_from_name(coll->str);
	if (kind < 0) {
		diag_error(coll->pos, "unknown collective '%s' (expected %s)", coll->str, ir_kind_list());
		return -1;
	}
	for (int j = 0; j < c->nchoices; j++)
		if (c->choices[j].kind == (ir_kind)kind) {
			diag_error(coll->pos, "cluster '%s': a second %s block", c->name, coll->str);
			return -1;
		}
	int first = c->nalgos;
	for (int j = 0; j < coll->list.n; j++)
		if (entry(p, c, coll, (ir_kind)kind, coll->list.v[j]) < 0)
			return -1;
	if (coll->ival)   /* choose by cost: thresholds come later */
		return choose_by_cost(c, coll, (ir_kind)kind, first, c->nalgos - 1);
	/* Under `straggler auto` a straggler algorithm without a threshold is
	 * not in the size table: it runs only while a straggler is detected
	 * (straggler_setting), so `allreduce { ring; stragglar; }` reads as
	 * "ring, or stragglar when it pays". */
	int last = -1;   /* the last entry of the table */
	bool aside[coll->list.n];
	for (int j = 0; j < coll->list.n; j++) {
		aside[j] = c->straggler == CLUSTER_STRAGGLER_AUTO && !coll->list.v[j]->a &&
			   c->algos[first + j].straggler_role >= 0;
		if (!aside[j])
			last = j;
	}
	uint64_t prev = 0;
	for (int j = 0; j < coll->list.n; j++) {
		ast *e = coll->list.v[j];
		int a = first + j;
		if (aside[j])
			continue;
		bool lastone = j == last;
		if (!e->a && !lastone) {
			diag_error(e->pos, "cluster '%s': '%s' has no 'below SIZE' but is not the last %s algorithm, "
				   "so the ones after it could never be chosen (or say 'choose by cost')",
				   c->name, e->str, coll->str);
			return -1;
		}
		uint64_t below = e->a ? (uint64_t)e->a->ival : 0;
		if (e->a && (e->a->ival <= 0 || below <= prev)) {
			diag_error(e->a->pos, "cluster '%s': thresholds must grow: 'below %llu' after 'below %llu'",
				   c->name, (unsigned long long)below, (unsigned long long)prev);
			return -1;
		}
		prev = below;
		/* the last entry takes every larger size, threshold or not */
		add_choice(c, (ir_kind)kind, lastone ? UINT64_MAX : below - 1, a);
	}
	return 0;
}

static int setting(cluster *c, ast *it)
{
	ast *v = it->a;
	const char *k = it->str;
	link_error err;
	if (strcmp(k, "ranks") == 0) {
		if (v->kind != A_INT || v->ival < 1 || v->ival > 65536) {
			diag_error(v->pos, "'ranks' needs an integer in 1..65536");
			return -1;
		}
		c->ranks = (int)v->ival;
	} else if (strcmp(k, "transport") == 0) {
		/* nccl and cuda: the host plans still use auto (bootstrap, host
		 * buffers); emit_cuda.c adds the device executor */
		static const char *ok[] = { "shm", "tcp", "mpi", "auto", "nccl", "cuda" };
		const char *t = v->kind == A_NAME || v->kind == A_STR ? v->str : "";
		for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
			if (strcmp(t, ok[i]) == 0) {
				free(c->transport);
				c->transport = strdup(t);
				return 0;
			}
		diag_error(v->pos, "unknown transport '%s' (expected shm, tcp, mpi, auto, nccl or cuda)", t);
		return -1;
	} else if (strcmp(k, "straggler") == 0) {
		/* the rank is checked against `ranks` once every setting is read */
		if (v->kind == A_NAME && strcmp(v->str, "auto") == 0) {
			c->straggler = CLUSTER_STRAGGLER_AUTO;
		} else if (v->kind == A_INT && v->ival >= 0 && v->ival < 65536) {
			c->straggler = (int)v->ival;
		} else {
			diag_error(v->pos, "'straggler' needs a rank (0..ranks-1) or 'auto'");
			return -1;
		}
		c->straggler_pos = v->pos;
	} else if (strcmp(k, "align") == 0) {
		/* device chunk padding: a power of two of at least 16 bytes so
		 * every chunk starts where a 16-byte vector load may */
		if (v->kind != A_INT || v->ival < 16 || v->ival > (1 << 24) || (v->ival & (v->ival - 1))) {
			diag_error(v->pos, "'align' needs a power of two from 16 to 16MiB, such as 1KiB");
			return -1;
		}
		c->align = (uint64_t)v->ival;
	} else if (strcmp(k, "alpha") == 0 || strcmp(k, "bw") == 0 || strcmp(k, "links") == 0) {
		if (v->kind != A_STR) {
			diag_error(v->pos, "'%s' needs a string such as %s", k,
				   k[0] == 'a' ? "\"3us\"" : k[0] == 'b' ? "\"450GB/s\"" : "\"lab8.links\"");
			return -1;
		}
		int rc = 0;
		if (k[0] == 'a')
			rc = link_parse_time(v->str, &c->alpha, &err);
		else if (k[0] == 'b')
			rc = link_parse_bw(v->str, &c->bw, &err);
		else {
			/* relative to the cluster file, like imports */
			const char *slash = strrchr(v->pos.file->name, '/');
			char buf[4096];
			if (v->str[0] == '/' || !slash)
				snprintf(buf, sizeof buf, "%s", v->str);
			else
				snprintf(buf, sizeof buf, "%.*s/%s", (int)(slash - v->pos.file->name), v->pos.file->name,
					 v->str);
			free(c->links);
			c->links = strdup(buf);
		}
		if (rc != 0) {
			diag_error(v->pos, "%s", err.msg);
			return -1;
		}
	} else {
		diag_error(it->pos, "unknown cluster setting '%s' (expected ranks, transport, straggler, align, alpha, bw "
			   "or links)", k);
		return -1;
	}
	return 0;
}

int cluster_eval(drv_prog *p, const char *name, cluster *c)
{
	memset(c, 0, sizeof *c);
	ast *d = drv_cluster(p, name);
	if (!d) {
		if (name)
			fprintf(stderr, "%s: error: no cluster named '%s'\n", diag_tool, name);
		else
			fprintf(stderr, "%s: error: no cluster declaration in the given files\n", diag_tool);
		diag_errors++;
		return -1;
	}
	c->name = strdup(d->str);
	c->pos = d->pos;
	c->transport = strdup("auto");
	c->align = 1024;
	c->alpha = 3e-6;
	c->bw = 450e9;
	c->straggler = CLUSTER_STRAGGLER_NONE;
	int rc = 0;
	for (int i = 0; i < d->list.n && rc == 0; i++)
		if (d->list.v[i]->kind == A_CITEM)
			rc = setting(c, d->list.v[i]);
	if (rc == 0 && c->ranks == 0) {
		diag_error(d->pos, "cluster '%s' needs 'ranks N;'", c->name);
		rc = -1;
	}
	int colls = 0;
	for (int i = 0; i < d->list.n && rc == 0; i++)
		if (d->list.v[i]->kind == A_CCOLL) {
			rc = collective(p, c, d->list.v[i]);
			colls++;
		}
	if (rc == 0 && colls == 0) {
		diag_error(d->pos, "cluster '%s' includes no algorithms (add e.g. 'allreduce { ring; }')", c->name);
		rc = -1;
	}
	if (rc == 0 && c->straggler != CLUSTER_STRAGGLER_NONE)
		rc = straggler_setting(c);
	if (rc != 0) {
		cluster_free(c);
		return -1;
	}
	return 0;
}

void cluster_free(cluster *c)
{
	for (int i = 0; i < c->nalgos; i++) {
		ir_free(c->algos[i].s);
		free(c->algos[i].label);
	}
	free(c->algos);
	free(c->choices);
	free(c->name);
	free(c->transport);
	free(c->links);
	memset(c, 0, sizeof *c);
}
