/*
 * cmd_sim.c - `collc sim`: the event-driven simulation of one algorithm.
 *
 * Pipeline position: command line -> flags (cmd_flags.c) -> the verified
 * schedule and its cost plan (cmd_algos.c) -> cost_simulate (cost.h) ->
 * text: completion time, algbw and busbw, each rank's joined/busy/idle/
 * done times, the critical path with what each of its messages waited
 * for, with --trace every rank's timeline, and with --svg the timeline
 * drawn (svg.h).  --repeat times the simulation itself for `make bench`.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "cmd_flags.h"
#include "svg.h"

static const char *const why_names[] = {
	[COST_WAIT_NONE] = "nothing (starts at 0)",
	[COST_WAIT_DATA] = "data",
	[COST_WAIT_SEND] = "send port",
	[COST_WAIT_RECV] = "receive port",
	[COST_WAIT_JOIN] = "the straggler joining",
};

/* "c3" or "c3..c6" or "c0,c2,c5 (3)": the chunks of a message. */
static char *fmt_chunks(const cost_plan *p, const cost_pmsg *m, char *buf, size_t len)
{
	int c0 = p->chunk[m->first], contiguous = 1;
	for (int e = 1; e < m->count; e++)
		if (p->chunk[m->first + e] != c0 + e)
			contiguous = 0;
	if (m->count == 1)
		snprintf(buf, len, "c%d", c0);
	else if (contiguous)
		snprintf(buf, len, "c%d..c%d", c0, c0 + m->count - 1);
	else
		snprintf(buf, len, "%d chunks", m->count);
	return buf;
}

static const char *phase_of(const ir_sched *s, int round)
{
	int ph = s->rounds[round].phase;
	return ph >= 0 && ph < s->nphases ? s->phases[ph] : "?";
}

static void describe_msg(const ir_sched *s, const cost_plan *p, const cost_sim *sim, int i, double cb, char *buf,
			 size_t len)
{
	const cost_smsg *x = &sim->msgs[i];
	const cost_pmsg *m = &p->msgs[x->msg];
	char ch[48], by[32], t0[32], t1[32];
	snprintf(buf, len, "round %d (%s) seg %d: %d -> %d %s, %s, %s .. %s", m->round,
		 phase_of(s, m->round), x->seg, m->src, m->dst, fmt_chunks(p, m, ch, sizeof ch),
		 link_fmt_size(m->count * cb, by, sizeof by), cmd_fmt_time(x->start, t0, sizeof t0),
		 cmd_fmt_time(x->end, t1, sizeof t1));
}

static int cmp_by_start(const void *a, const void *b, void *ctx)
{
	const cost_sim *sim = ctx;
	double x = sim->msgs[*(const int *)a].start, y = sim->msgs[*(const int *)b].start;
	return (x > y) - (x < y);
}

static void print_trace(const ir_sched *s, const cost_plan *p, const cost_sim *sim, double cb)
{
	int n = p->n;
	int *cnt = calloc((size_t)n + 1, sizeof *cnt), *idx = malloc(sizeof *idx * (2 * (size_t)sim->nmsgs + 1));
	int *pos = calloc((size_t)n + 1, sizeof *pos);
	for (int i = 0; i < sim->nmsgs; i++) {
		cnt[p->msgs[sim->msgs[i].msg].src + 1]++;
		cnt[p->msgs[sim->msgs[i].msg].dst + 1]++;
	}
	for (int r = 0; r < n; r++)
		cnt[r + 1] += cnt[r];
	memcpy(pos, cnt, sizeof *pos * (size_t)n);
	for (int i = 0; i < sim->nmsgs; i++) {
		idx[pos[p->msgs[sim->msgs[i].msg].src]++] = i;
		idx[pos[p->msgs[sim->msgs[i].msg].dst]++] = i;
	}
	printf("\ntimeline per rank (start .. end  what):\n");
	for (int r = 0; r < n; r++) {
		qsort_r(idx + cnt[r], (size_t)(cnt[r + 1] - cnt[r]), sizeof *idx, cmp_by_start,
			(void *)sim);
		char j[32];
		printf("rank %d (joins at %s):\n", r, cmd_fmt_time(sim->join[r], j, sizeof j));
		for (int k = cnt[r]; k < cnt[r + 1]; k++) {
			const cost_smsg *x = &sim->msgs[idx[k]];
			const cost_pmsg *m = &p->msgs[x->msg];
			char t0[32], t1[32], ch[48], by[32];
			bool send = m->src == r;
			printf("  %10s .. %-10s  %s %s %d  %s, %s, round %d (%s)", cmd_fmt_time(x->start, t0, sizeof t0),
			       cmd_fmt_time(x->end, t1, sizeof t1), send ? "send" : "recv",
			       send ? "to" : "from", send ? m->dst : m->src, fmt_chunks(p, m, ch, sizeof ch),
			       link_fmt_size(m->count * cb, by, sizeof by), m->round, phase_of(s, m->round));
			if (x->seg)
				printf(" seg %d", x->seg);
			printf("\n");
		}
	}
	free(cnt);
	free(idx);
	free(pos);
}

static int draw_timeline(const char *path, const cmd_algo *a, const cost_sim *sim, double cb,
			 const cmd_opts *o)
{
	const cost_plan *p = a->plan;
	int nb = 0;
	svg_bar *bars = malloc(sizeof *bars * (2 * (size_t)sim->nmsgs + (size_t)p->n + 1));
	bool *onpath = calloc((size_t)sim->nmsgs + 1, sizeof *onpath);
	char **tips = NULL;
	bool with_tips = sim->nmsgs <= 20000;
	if (with_tips)
		tips = calloc((size_t)sim->nmsgs + 1, sizeof *tips);
	for (int i = 0; i < sim->npath; i++)
		onpath[sim->path[i]] = true;
	for (int r = 0; r < p->n; r++)
		if (sim->join[r] > 0)
			bars[nb++] = (svg_bar){ .row = r, .t0 = 0, .t1 = sim->join[r], .style = -1,
						.tip = "not joined yet" };
	for (int i = 0; i < sim->nmsgs; i++) {
		const cost_pmsg *m = &p->msgs[sim->msgs[i].msg];
		if (with_tips) {
			char buf[256];
			describe_msg(a->s, p, sim, i, cb, buf, sizeof buf);
			tips[i] = strdup(buf);
		}
		int style = a->s->rounds[m->round].phase;
		bars[nb++] = (svg_bar){ .row = m->src, .t0 = sim->msgs[i].start, .t1 = sim->msgs[i].end,
					.style = style, .part = 1, .outline = onpath[i],
					.tip = with_tips ? tips[i] : NULL };
		bars[nb++] = (svg_bar){ .row = m->dst, .t0 = sim->msgs[i].start, .t1 = sim->msgs[i].end,
					.style = style, .part = 2, .outline = onpath[i],
					.tip = with_tips ? tips[i] : NULL };
	}
	char title[160], note[200], t[32], d[128], s[32];
	snprintf(title, sizeof title, "%s (%s), n=%d, %s: simulated timeline", a->name,
		 ir_kind_names[a->kind], p->n, link_fmt_size(o->sizes[0], s, sizeof s));
	snprintf(note, sizeof note, "%s; completion %s after the last rank joined", link_describe(&o->links, d, sizeof d),
		 cmd_fmt_time(sim->r.time, t, sizeof t));
	svg_timeline tl = { .title = title, .rowfmt = "rank %d", .nrows = p->n,
			    .tmax = sim->r.total, .styles = (const char *const *)a->s->phases,
			    .nstyles = a->s->nphases, .note = note };
	FILE *f;
	int rc = cmd_open_out(path, &f);
	if (rc == 0)
		rc = cmd_close_out(path, f, svg_timeline_draw(f, &tl, bars, nb));
	if (with_tips)
		for (int i = 0; i < sim->nmsgs; i++)
			free(tips[i]);
	free(tips);
	free(onpath);
	free(bars);
	return rc;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int cmd_sim(int argc, char **argv)
{
	cmd_opts o;
	drv_prog *p;
	cmd_algo *v;
	int nv;
	int rc = cmd_setup(argc, argv, CMD_SIM, &o, &p, &v, &nv);
	if (rc == 0)
		rc = cmd_algo_build(p, &o, &v[0], o.n, false);
	cost_sim *sim = NULL;
	if (rc == 0) {
		cost_params q = cmd_params(&o, o.sizes[0], o.n);
		q.segments = o.segments = cmd_segments(&o, v[0].plan, o.sizes[0]);
		link_error err;
		sim = cost_simulate(v[0].plan, &q, &err);
		if (!sim)
			rc = cmd_input_error("%s", err.msg);
	}
	if (rc == 0) {
		const cost_plan *pl = v[0].plan;
		cost_params q = cmd_params(&o, o.sizes[0], o.n);   /* o.segments: --seg-bytes applied above */
		double cb = o.sizes[0] / pl->chunks / o.segments;
		char a[32], b[32], c[32], d[32], e[32];
		cmd_describe_sched(&v[0]);
		cmd_print_links(&o, o.n);
		printf("size %s: %d chunks of %s", link_fmt_size(o.sizes[0], a, sizeof a), pl->chunks,
		       link_fmt_size(o.sizes[0] / pl->chunks, b, sizeof b));
		if (o.segments > 1)
			printf(", %d segments", o.segments);
		printf("\n");
		if (q.straggler >= 0) {
			printf("straggler: rank %d joins at %s%s\n", q.straggler,
			       cmd_fmt_time(sim->r.join, a, sizeof a),
			       o.have_delay ? "" : " (when the others have done all they can without it)");
			if (pl->npre)
				printf("precondition: ends at %s\n", cmd_fmt_time(sim->r.pre, a, sizeof a));
		}
		cost_result rr;
		link_error err;
		cost_rounds(pl, &q, &rr, &err);
		printf("time %s  algbw %s  busbw %s  (completion %s from the start; rounds model %s)\n",
		       cmd_fmt_time(sim->r.time, a, sizeof a), link_fmt_bw(sim->r.algbw, b, sizeof b),
		       link_fmt_bw(sim->r.busbw, c, sizeof c), cmd_fmt_time(sim->r.total, d, sizeof d),
		       cmd_fmt_time(rr.time, e, sizeof e));
		if (q.share_jitter > 0 && o.links.nsegs > 0)
			printf("jitter %g: the time is the mean of %d draws of TCP's luck; the ranks and the "
			       "path below are the draw nearest it\n", q.share_jitter,
			       cost_jitter_samples(&q));

		printf("\n%6s %11s %11s %11s %11s\n", "rank", "joined", "busy", "idle", "done");
		for (int r = 0; r < pl->n; r++)
			printf("%6d %11s %11s %11s %11s\n", r, cmd_fmt_time(sim->join[r], a, sizeof a),
			       cmd_fmt_time(sim->busy[r], b, sizeof b), cmd_fmt_time(sim->idle[r], c, sizeof c),
			       cmd_fmt_time(sim->done[r], d, sizeof d));

		int nwhy[5] = { 0 };
		for (int i = 0; i < sim->npath; i++)
			nwhy[sim->msgs[sim->path[i]].why]++;
		printf("\ncritical path: %d messages (waited for data %d, send port %d, receive port %d, "
		       "straggler %d)\n", sim->npath, nwhy[COST_WAIT_DATA], nwhy[COST_WAIT_SEND],
		       nwhy[COST_WAIT_RECV], nwhy[COST_WAIT_JOIN]);
		printf("%6s %-20s %4s %13s %-12s %10s %11s %11s  %s\n", "round", "phase", "seg", "transfer",
		       "chunks", "bytes", "start", "end", "waited for");
		int limit = o.trace ? sim->npath : 64;
		for (int i = 0; i < sim->npath; i++) {
			if (sim->npath > limit && i == limit / 2) {
				printf("   ... %d more (--trace shows all)\n", sim->npath - limit);
				i = sim->npath - limit / 2;
			}
			const cost_smsg *x = &sim->msgs[sim->path[i]];
			const cost_pmsg *m = &pl->msgs[x->msg];
			char tr[32], ch[48];
			snprintf(tr, sizeof tr, "%d -> %d", m->src, m->dst);
			printf("%6d %-20s %4d %13s %-12s %10s %11s %11s  %s\n", m->round, phase_of(v[0].s, m->round),
			       x->seg, tr, fmt_chunks(pl, m, ch, sizeof ch),
			       link_fmt_size(m->count * cb, a, sizeof a), cmd_fmt_time(x->start, b, sizeof b),
			       cmd_fmt_time(x->end, c, sizeof c), why_names[x->why]);
		}
		if (o.trace)
			print_trace(v[0].s, pl, sim, cb);
		if (o.svg)
			rc = draw_timeline(o.svg, &v[0], sim, cb, &o);
		if (o.repeat > 0 && rc == 0) {
			/* for `make bench`: plan + simulation, as a user waits for them */
			double t0 = now();
			for (int k = 0; k < o.repeat; k++) {
				cost_plan *pp = costplan_from_ir(v[0].s, &err);
				cost_sim *ss = cost_simulate(pp, &q, &err);
				cost_sim_free(ss);
				cost_plan_free(pp);
			}
			double dt = (now() - t0) / o.repeat;
			printf("\nsimulation run time: %.3f ms (mean of %d, schedule preparation included)\n",
			       dt * 1e3, o.repeat);
		}
	}
	cost_sim_free(sim);
	return cmd_teardown(rc, &o, p, v, nv);
}

