/*
 * straggler.c - persistent stragglers: emulation, arrival records and
 * detection.
 *
 * Emulation (experiments): the rank named by COLL_STRAGGLER_RANK (or
 * coll_emulate_straggler) sleeps COLL_STRAGGLER_DELAY_MS before every
 * collective it enters.
 *
 * Detection: on entering a collective a rank stamps its entry time
 * (CLOCK_MONOTONIC ns) into c->late; every message header carries the two
 * latest (entry, rank) pairs its sender knows of in this call, and every
 * received header is merged in (exec.c).  In an allreduce every rank's
 * output depends on every rank's input through a chain of messages, each
 * sent after the previous was received, so at the end every rank knows
 * the same two latest entries: the call's last arrival and its lead over
 * the second-latest.  rt_straggler_record keeps the last K of them (a
 * ring) and names a straggler when one rank was last in at least 90% of
 * the last K calls; since every rank records the same values, every rank
 * names the same straggler, which is what lets `straggler auto` switch
 * algorithms without agreeing on anything extra.  A call whose last
 * arrival led by less than COLL_STRAGGLER_MIN_US (default 50 us) counts
 * for nobody: a lead of a few microseconds is which process the scheduler
 * ran first (on two cores with four ranks, the one that does a benchmark's
 * bookkeeping was last in 90% of calls by 4-6 us in about one run of ten),
 * not a straggler any algorithm could gain from.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt.h"

int rt_straggler_init(coll_comm *c)
{
	/* the ranges are env.def's; what it cannot know is the job's size */
	c->emu_rank = (int)rt_env_long("COLL_STRAGGLER_RANK", -1);
	c->emu_delay_ms = rt_env_double("COLL_STRAGGLER_DELAY_MS", 0);
	if (c->emu_rank >= c->n)
		return rt_err(c, COLL_ERR_INVALID, "COLL_STRAGGLER_RANK=%d: the job has ranks 0 to %d", c->emu_rank,
		              c->n - 1);
	c->win = (int)rt_env_long("COLL_STRAGGLER_WINDOW", 20);
	c->win_min_gap = rt_env_double("COLL_STRAGGLER_MIN_US", 50) / 1e6;
	c->win_rank = calloc((size_t)c->win, sizeof *c->win_rank);
	c->win_gap = calloc((size_t)c->win, sizeof *c->win_gap);
	c->detected = -1;
	if (!c->win_rank || !c->win_gap)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	return COLL_OK;
}

void rt_straggler_free(coll_comm *c)
{
	free(c->win_rank);
	free(c->win_gap);
	c->win_rank = NULL;
	c->win_gap = NULL;
}

void rt_straggler_enter(coll_comm *c)
{
	if (c->emu_rank == c->rank && c->emu_delay_ms > 0) {
		double s = c->emu_delay_ms / 1000;
		struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	memset(&c->late, 0, sizeof c->late);
	c->late.rank = c->late.rank2 = -1;
	rt_late_merge(&c->late, rt_now_ns(), c->rank);
}

/* Later entry first; equal times: the higher rank counts as later, so
 * every rank orders ties the same way. */
static int later(int64_t a, int ra, int64_t b, int rb) { return a > b || (a == b && ra > rb); }

void rt_late_merge(rt_late *l, int64_t ns, int rank)
{
	if (ns == 0 || rank < 0)
		return;
	if (rank == l->rank) {
		if (ns > l->ns)
			l->ns = ns;
		return;
	}
	if (rank == l->rank2) {
		if (ns <= l->ns2)
			return;
		l->ns2 = ns;   /* may now beat the first: fall through to reorder */
		if (later(l->ns2, l->rank2, l->ns, l->rank)) {
			rt_late t = *l;
			l->ns = t.ns2, l->rank = t.rank2, l->ns2 = t.ns, l->rank2 = t.rank;
		}
		return;
	}
	if (l->ns == 0 || later(ns, rank, l->ns, l->rank)) {
		l->ns2 = l->ns, l->rank2 = l->rank;
		l->ns = ns, l->rank = rank;
	} else if (l->ns2 == 0 || later(ns, rank, l->ns2, l->rank2)) {
		l->ns2 = ns, l->rank2 = rank;
	}
}

void rt_straggler_record(coll_comm *c)
{
	if (c->n < 2 || c->late.rank < 0 || c->late.ns2 == 0)
		return;
	int i = (c->win_head + c->win_len) % c->win;
	if (c->win_len == c->win)
		c->win_head = (c->win_head + 1) % c->win;
	else
		c->win_len++;
	c->win_gap[i] = (double)(c->late.ns - c->late.ns2) / 1e9;
	c->win_rank[i] = c->win_gap[i] >= c->win_min_gap ? c->late.rank : -1;
	c->detected = -1;
	c->detected_delay = 0;
	if (c->win_len < c->win)
		return;
	/* majority candidate (Boyer-Moore), then count it */
	int cand = -1, votes = 0;
	for (int j = 0; j < c->win; j++) {
		int r = c->win_rank[j];
		if (votes == 0)
			cand = r, votes = 1;
		else
			votes += r == cand ? 1 : -1;
	}
	int hits = 0;
	double sum = 0;
	for (int j = 0; j < c->win; j++)
		if (c->win_rank[j] == cand)
			hits++, sum += c->win_gap[j];
	if (cand >= 0 && hits * 10 >= c->win * 9) {
		c->detected = cand;
		c->detected_delay = sum / hits;
	}
}

coll_result coll_straggler(coll_comm *c, int *rank, double *delay_s)
{
	if (!c)
		return COLL_ERR_INVALID;
	if (rank)
		*rank = c->detected;
	if (delay_s)
		*delay_s = c->detected >= 0 ? c->detected_delay : 0;
	return COLL_OK;
}

coll_result coll_set_straggler(coll_comm *c, int rank)
{
	if (!c)
		return COLL_ERR_INVALID;
	if (rank < -1 || rank >= c->n)
		return rt_err(c, COLL_ERR_INVALID, "coll_set_straggler: rank %d out of range -1..%d", rank, c->n - 1);
	c->straggler = rank;
	c->auto_straggler = 0;
	return COLL_OK;
}

coll_result coll_emulate_straggler(coll_comm *c, int rank, double delay_ms)
{
	if (!c)
		return COLL_ERR_INVALID;
	if (rank < -1 || rank >= c->n || !(delay_ms >= 0))
		return rt_err(c, COLL_ERR_INVALID, "coll_emulate_straggler: bad rank %d or delay %g ms", rank, delay_ms);
	c->emu_rank = rank;
	c->emu_delay_ms = delay_ms;
	return COLL_OK;
}
