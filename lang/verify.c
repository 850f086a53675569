/*
 * verify.c - the schedule verifier (see verify.h).
 *
 * Pipeline position: runs on every ir_sched the evaluator produces, before
 * any cost model, export or code generator sees it.  It replays the
 * schedule round by round on a fresh bstate (state.h): every transfer of a
 * round reads the state from before the round and its write is staged;
 * the staged writes are committed together, then the round-level checks
 * that need the after-state (copies destroying contributions) run.  A wrong
 * round makes every later state meaningless, so the verifier reports all
 * errors of the first wrong round (up to VERIFY_MAX_ROUND_ERRORS) and stops.
 * One exception: a round over the port model gets one error, at its first
 * over-subscribed rank, that names the others (a missing `ports` line
 * would otherwise give one error per rank and direction).  A wrong final
 * state is blamed on the transfer that last wrote the (rank, chunk), found
 * only then by a backward scan, so that verifying a correct schedule
 * keeps no per-slot history.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "verify.h"
#include "xalloc.h"

#define SETBUF 160

typedef struct {
	const ir_sched *s;
	bstate *st;
	char rname[96];    /* "round 3" or "round 3 (phase gather)", see round_name */
	bool named;
	int nerr;          /* errors in the current round */
	bool capped;
	bool ported;       /* the round's port error is reported */
	int round;
	/* port model: distinct peers seen so far this round, per rank; a count
	 * is stale (zero) when its stamp is not the current round */
	int *nsend, *nrecv, *ssend, *srecv;
	int *lastdst;          /* per sender: the peer of its previous transfer */
	int *smulti;           /* per sender: the round its pairs went into `pairs` */
	/* the (src, dst) pairs of this round of senders with more than one
	 * peer, open addressing, entries whose stamp is not the current round
	 * are free (no clearing per round) */
	struct pair { uint64_t key; int stamp; } *pairs;
	uint32_t pmask;
	int npairs;
	/* this round's copies that overwrite contributions their value lacks
	 * (rare): the transfer and a reference to what the slot held, for
	 * check_destroyed once the round has landed */
	struct susp { int t; state_set *old; } *susp;
	int nsusp, capsusp;
} vctx;

static const char *op_name(int op)
{
	return op == IR_COPY ? "copy" : "reduce";
}

/* The transfer's statement, else its round's, else the algorithm's. */
static srcpos xpos(const vctx *v, const ir_xfer *x, const ir_round *rd)
{
	if (x && ir_xfer_pos(v->s, x).file)
		return ir_xfer_pos(v->s, x);
	if (rd && rd->pos.file)
		return rd->pos;
	return v->s->pos;
}

static void verr(vctx *v, srcpos p, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void verr(vctx *v, srcpos p, const char *fmt, ...)
{
	if (v->nerr >= VERIFY_MAX_ROUND_ERRORS) {
		v->capped = true;
		return;
	}
	v->nerr++;
	va_list ap;
	va_start(ap, fmt);
	diag_verror(p, fmt, ap);
	va_end(ap);
}

/* "round 3" or "round 3 (phase gather)": formatted on the first error of a
 * round only, as rounds may be as many as transfers. */
static const char *round_name(vctx *v)
{
	if (!v->named) {
		const ir_sched *s = v->s;
		const ir_round *rd = &s->rounds[v->round];
		const char *ph = rd->phase >= 0 && rd->phase < s->nphases ? s->phases[rd->phase] : NULL;
		if (ph && strcmp(ph, "main") != 0)
			snprintf(v->rname, sizeof v->rname, "round %d (phase %s)", v->round, ph);
		else
			snprintf(v->rname, sizeof v->rname, "round %d", v->round);
		v->named = true;
	}
	return v->rname;
}

/* "reduce of chunk 4 from rank 2 to rank 5" */
static const char *xdesc(const ir_xfer *x, char *buf, size_t len)
{
	snprintf(buf, len, "%s of chunk %d from rank %d to rank %d", op_name(x->op), x->chunk, x->src, x->dst);
	return buf;
}

static bool same_pos(srcpos a, srcpos b)
{
	return a.file == b.file && a.off == b.off;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Append the m ascending ranks p to buf at pos as "{1-3,5}" (cut short
 * with ",..." when buf is full); returns the new pos. */
static size_t fmt_ranks(const int *p, int m, char *buf, size_t len, size_t pos)
{
	if (pos + 3 >= len)
		return pos;
	pos += (size_t)snprintf(buf + pos, len - pos, "{");
	for (int i = 0; i < m && pos + 24 < len; i++) {
		int j = i;
		while (j + 1 < m && p[j + 1] == p[j] + 1)
			j++;
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%d", i ? "," : "", p[i]);
		if (j > i)
			pos += (size_t)snprintf(buf + pos, len - pos, "-%d", p[j]);
		i = j;
	}
	if (pos + 3 < len)
		pos += (size_t)snprintf(buf + pos, len - pos, "%s}", pos + 24 >= len ? ",..." : "");
	return pos;
}

static bool port_used(const ir_sched *s, const ir_xfer *x)
{
	/* rejected transfers use no port */
	return x->src >= 0 && x->src < s->n && x->dst >= 0 && x->dst < s->n && x->src != x->dst && x->chunk >= 0 &&
	       x->chunk < s->chunks;
}

/* The distinct peers rank r sends to (or receives from) in round rd, as
 * "2 peers (ranks {1-2})", for port messages only. */
static const char *round_peers(const ir_sched *s, const ir_round *rd, int r, bool send, char *buf, size_t len)
{
	int *p = malloc((size_t)rd->count * sizeof *p + 1), k = 0;
	if (!p) {
		snprintf(buf, len, "too many peers");
		return buf;
	}
	for (int t = rd->first; t < rd->first + rd->count; t++) {
		const ir_xfer *x = &s->xfers[t];
		if (port_used(s, x) && (send ? x->src : x->dst) == r)
			p[k++] = send ? x->dst : x->src;
	}
	qsort(p, (size_t)k, sizeof *p, cmp_int);
	int m = 0;
	for (int i = 0; i < k; i++)
		if (m == 0 || p[m - 1] != p[i])
			p[m++] = p[i];
	size_t pos = (size_t)snprintf(buf, len, "%d peer%s (rank%s ", m, m == 1 ? "" : "s", m == 1 ? "" : "s");
	pos = fmt_ranks(p, m, buf, len, pos);
	if (pos + 2 < len)
		snprintf(buf + pos, len - pos, ")");
	free(p);
	return buf;
}

static int cmp_pair(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Beyond rank `r` (sending when `send`), the ranks over the port model in
 * round rd, as " (also over the port model in this round: ranks {1-3}
 * sending, rank 0 receiving)", or "" when there are none. */
static const char *port_others(const ir_sched *s, const ir_round *rd, int r, bool send, char *buf, size_t len)
{
	uint64_t *pr = malloc((size_t)rd->count * sizeof *pr + 1);
	int *cnt = calloc(2 * (size_t)s->n + 1, sizeof *cnt), *who = malloc((size_t)s->n * sizeof *who + 1);
	buf[0] = '\0';
	if (!pr || !cnt || !who)
		goto out;
	int k = 0;
	for (int t = rd->first; t < rd->first + rd->count; t++)
		if (port_used(s, &s->xfers[t]))
			pr[k++] = (uint64_t)s->xfers[t].src * (uint64_t)s->n + (uint64_t)s->xfers[t].dst;
	qsort(pr, (size_t)k, sizeof *pr, cmp_pair);
	for (int i = 0; i < k; i++)
		if (i == 0 || pr[i] != pr[i - 1]) {
			cnt[pr[i] / (uint64_t)s->n]++;                 /* peers a rank sends to */
			cnt[s->n + (int)(pr[i] % (uint64_t)s->n)]++;   /* ... and receives from */
		}
	size_t pos = 0;
	for (int dir = 0; dir < 2; dir++) {
		int lim = dir ? s->ports_recv : s->ports_send, m = 0;
		for (int q = 0; q < s->n && lim > 0; q++)
			if (cnt[dir * s->n + q] > lim && !(q == r && dir == !send))
				who[m++] = q;
		if (m == 0 || pos + 48 >= len)
			continue;
		pos += (size_t)snprintf(buf + pos, len - pos, "%s", pos ? ", " : " (also over the port model in this round: ");
		if (m == 1)
			pos += (size_t)snprintf(buf + pos, len - pos, "rank %d", who[0]);
		else
			pos = fmt_ranks(who, m, buf, len, pos + (size_t)snprintf(buf + pos, len - pos, "ranks "));
		if (pos + 16 < len)
			pos += (size_t)snprintf(buf + pos, len - pos, " %s", dir ? "receiving" : "sending");
	}
	if (pos && pos + 2 < len)
		snprintf(buf + pos, len - pos, ")");
out:
	free(pr);
	free(cnt);
	free(who);
	return buf;
}

/* The round's port error: once per round, at the first rank over the
 * port model (x's sender when `send`, else its receiver). */
static inline void port_error(vctx *v, const ir_round *rd, const ir_xfer *x, bool send)
{
	if (v->ported)
		return;
	v->ported = true;
	const ir_sched *s = v->s;
	char b1[SETBUF], b2[256];
	int r = send ? x->src : x->dst;
	verr(v, xpos(v, x, rd), "%s: rank %d %s %s in this round, but the port model allows %d%s", round_name(v), r,
	     send ? "sends to" : "receives from", round_peers(s, rd, r, send, b1, sizeof b1),
	     send ? s->ports_send : s->ports_recv, port_others(s, rd, r, send, b2, sizeof b2));
}

/* Add (src, dst) to this round's pairs; false when it is there already. */
static bool insert_pair(vctx *v, int src, int dst)
{
	if (2 * ((size_t)v->npairs + 1) > (size_t)v->pmask + 1) {
		/* grow, keeping this round's entries */
		uint32_t cap = 2 * (v->pmask + 1);
		struct pair *np = malloc((size_t)cap * sizeof *np);
		if (!np)
			return true;   /* out of memory: may count a peer twice, never crash */
		for (uint32_t i = 0; i < cap; i++)
			np[i].stamp = -1;
		for (uint32_t i = 0; i <= v->pmask; i++)
			if (v->pairs[i].stamp == v->round) {
				uint32_t h = (uint32_t)((v->pairs[i].key * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
				while (np[h].stamp == v->round)
					h = (h + 1) & (cap - 1);
				np[h] = v->pairs[i];
			}
		free(v->pairs);
		v->pairs = np;
		v->pmask = cap - 1;
	}
	uint64_t key = (uint64_t)src * (uint64_t)v->s->n + (uint64_t)dst;
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & v->pmask;
	for (; v->pairs[h].stamp == v->round; h = (h + 1) & v->pmask)
		if (v->pairs[h].key == key)
			return false;
	v->pairs[h] = (struct pair){ key, v->round };
	v->npairs++;
	return true;
}

/* Is (src, dst) new in this round?  Records it if so.  A sender's first
 * peer is only remembered in lastdst (ssend[src] becomes the round when
 * this returns true); its pairs go into the hash once it has a second
 * peer, so one-port schedules never touch the hash. */
static bool new_pair(vctx *v, int src, int dst)
{
	if (v->ssend[src] != v->round) {
		v->lastdst[src] = dst;
		return true;
	}
	if (v->lastdst[src] == dst)
		return false;   /* chunks to one peer back to back */
	if (v->smulti[src] != v->round) {
		v->smulti[src] = v->round;
		insert_pair(v, src, v->lastdst[src]);
	}
	v->lastdst[src] = dst;
	return insert_pair(v, src, dst);
}

/* Check one transfer against the state before the round and stage its
 * write.  Errors leave the transfer unstaged. */
static void check_xfer(vctx *v, const ir_round *rd, int t)
{
	const ir_sched *s = v->s;
	bstate *st = v->st;
	/* a copy: the stores into the port counters below (ints) could
	 * otherwise alias its fields, which would be read again after each */
	const ir_xfer xv = s->xfers[t], *x = &xv;
	char d[128], b1[SETBUF], b2[SETBUF], b3[SETBUF];
	bool bad = false;

	/* xdesc() and xpos() run only on errors: an snprintf per transfer
	 * would be most of the verifier's time */
	if (x->src < 0 || x->src >= s->n) {
		verr(v, xpos(v, x, rd), "%s: %s: source rank %d is out of range 0..%d", round_name(v), xdesc(x, d, sizeof d), x->src, s->n - 1);
		bad = true;
	}
	if (x->dst < 0 || x->dst >= s->n) {
		verr(v, xpos(v, x, rd), "%s: %s: destination rank %d is out of range 0..%d", round_name(v), xdesc(x, d, sizeof d), x->dst, s->n - 1);
		bad = true;
	}
	if (x->chunk < 0 || x->chunk >= s->chunks) {
		verr(v, xpos(v, x, rd), "%s: %s: chunk %d is out of range 0..%d (%d chunks)", round_name(v), xdesc(x, d, sizeof d), x->chunk,
		     s->chunks - 1, s->chunks);
		bad = true;
	}
	if (bad)
		return;
	if (x->src == x->dst) {
		verr(v, xpos(v, x, rd), "%s: %s: a rank cannot send to itself", round_name(v), xdesc(x, d, sizeof d));
		return;
	}
	/* ports count distinct peers: several chunks to one peer in a round
	 * travel as one message (lang/README.md, `ports`) */
	int round = v->round, ps = s->ports_send, pr = s->ports_recv;
	if (v->ssend[x->src] != round) {
		/* the sender's first peer this round (new_pair's first case),
		 * the common one: one peer is within every port model */
		v->lastdst[x->src] = x->dst;
		v->ssend[x->src] = round;
		v->nsend[x->src] = 1;
		if (v->srecv[x->dst] != round)
			v->srecv[x->dst] = round, v->nrecv[x->dst] = 0;
		if (++v->nrecv[x->dst] == pr + 1 && pr > 0)
			port_error(v, rd, x, false);
	} else if (new_pair(v, x->src, x->dst)) {
		if (v->srecv[x->dst] != round)
			v->srecv[x->dst] = round, v->nrecv[x->dst] = 0;
		if (++v->nsend[x->src] == ps + 1 && ps > 0)
			port_error(v, rd, x, true);
		if (++v->nrecv[x->dst] == pr + 1 && pr > 0)
			port_error(v, rd, x, false);
	}

	uint32_t slot = state_slot(st, x->dst, x->chunk);   /* the written one */
	state_set *a = state_get(st, x->src, x->chunk), *b = state_at(st, slot);
	if (state_set_count(a) == 0) {
		verr(v, xpos(v, x, rd), "%s: %s: rank %d holds no data for chunk %d", round_name(v), xdesc(x, d, sizeof d), x->src, x->chunk);
		return;
	}
	int i = state_staged_at(st, slot) ? state_stage_lookup(st, slot) : -1;
	if (i >= 0) {
		const ir_xfer *y = &s->xfers[state_staged_tag(st, i)];
		if (x->op == IR_COPY || y->op == IR_COPY) {
			verr(v, xpos(v, x, rd), "%s: conflicting writes to rank %d chunk %d: %s from rank %d and %s from rank %d in the same round",
			     round_name(v), x->dst, x->chunk, op_name(y->op), y->src, op_name(x->op), x->src);
			srcpos yp = ir_xfer_pos(s, y);
			if (!same_pos(yp, ir_xfer_pos(s, x)) && yp.file && !v->capped)
				diag_note(yp, "the %s from rank %d is here", op_name(y->op), y->src);
			return;
		}
	}
	if (x->op == IR_COPY) {
		/* a copy destroys data only where the slot held contributions
		 * the copied value lacks: known now, as the slot's old value is
		 * b (nothing is written before the round lands), so that only
		 * those copies are looked at again after it */
		if (state_set_count(a) != s->n && !state_set_subset(st, b, a)) {   /* a full: no call */
			if (v->nsusp == v->capsusp) {
				v->capsusp = v->capsusp ? 2 * v->capsusp : 16;
				v->susp = xrealloc(v->susp, (size_t)v->capsusp * sizeof *v->susp);
			}
			v->susp[v->nsusp++] = (struct susp){ t, state_set_ref(b) };
		}
		state_stage_slot(st, slot, state_set_ref(a), t);
		return;
	}
	/* Only collectives that copy start a rank without data for a chunk
	 * (coll_kinds.h: every rank contributes to those that reduce), so this
	 * also covers reducing into a slot that holds nothing. */
	if (!st->shape.k->reduces) {
		verr(v, xpos(v, x, rd), "%s: %s: %s only copies data, there is no op to reduce with (use copy)",
		     round_name(v), xdesc(x, d, sizeof d), st->shape.k->name);
		return;
	}
	/* a and b are disjoint when their union has both counts: one set
	 * operation instead of two for the common reduce (the first into
	 * this slot this round) */
	state_set *sum = i < 0 ? state_set_union(st, b, a) : NULL;
	if (sum && state_set_count(sum) == state_set_count(a) + state_set_count(b)) {
		state_stage_slot(st, slot, sum, t);
		return;
	}
	state_set_release(st, sum);
	if (!state_set_disjoint(st, a, b)) {
		state_set *both = state_set_inter(st, a, b);
		verr(v, xpos(v, x, rd), "%s: %s counts contributions %s twice (rank %d holds %s, rank %d sends %s)", round_name(v), xdesc(x, d, sizeof d),
		     state_set_fmt(st, both, b1, sizeof b1), x->dst, state_set_fmt(st, b, b2, sizeof b2),
		     x->src, state_set_fmt(st, a, b3, sizeof b3));
		state_set_release(st, both);
		return;
	}
	if (i >= 0 && !state_set_disjoint(st, a, state_staged(st, i))) {
		/* overlaps another reduce into the same slot in this round: find it */
		const ir_round *r = rd;
		for (int u = r->first; u < t; u++) {
			const ir_xfer *y = &s->xfers[u];
			if (y->dst != x->dst || y->chunk != x->chunk || y->op == IR_COPY || y->src < 0 ||
			    y->src >= s->n || y->src == y->dst)
				continue;
			state_set *ya = state_get(st, y->src, y->chunk);
			if (state_set_disjoint(st, a, ya))
				continue;
			state_set *both = state_set_inter(st, a, ya);
			verr(v, xpos(v, x, rd), "%s: %s counts contributions %s twice (rank %d also reduces %s into rank %d in this round)",
			     round_name(v), xdesc(x, d, sizeof d), state_set_fmt(st, both, b1, sizeof b1), y->src,
			     state_set_fmt(st, ya, b2, sizeof b2), x->dst);
			state_set_release(st, both);
			return;
		}
	}
	/* only a second reduce into the slot gets here (i >= 0): a first
	 * one was staged or reported above */
	state_restage(st, i, state_set_union(st, state_staged(st, i), a));
}

/* After the round's writes landed: blame each copy that overwrote the last
 * copy of a contribution the collective still needs for that chunk (the
 * copies check_xfer set aside, in the order they were staged). */
static void check_destroyed(vctx *v, const ir_round *rd)
{
	bstate *st = v->st;
	for (int i = 0; i < v->nsusp; i++) {
		const ir_xfer *x = &v->s->xfers[v->susp[i].t];
		/* the copy's value is what its slot holds now (a slot with a
		 * copy staged takes no other write in the round) */
		state_set *old = v->susp[i].old, *val = state_get(st, x->dst, x->chunk);
		state_set *gone = state_set_diff(st, old, val);
		state_set *lost = state_set_inter(st, gone, state_need(st, x->chunk));
		state_set_release(st, gone);
		for (int r = 0; r < v->s->n && state_set_count(lost) > 0; r++) {
			state_set *c = state_get(st, r, x->chunk);
			if (state_set_disjoint(st, lost, c))
				continue;
			state_set *rest = state_set_diff(st, lost, c);
			state_set_release(st, lost);
			lost = rest;
		}
		if (state_set_count(lost) > 0) {
			char d[128], b1[SETBUF], b2[SETBUF], b3[SETBUF];
			verr(v, xpos(v, x, rd), "%s: %s destroys the only copy of contributions %s (rank %d held %s, rank %d sends %s)",
			     round_name(v), xdesc(x, d, sizeof d), state_set_fmt(st, lost, b1, sizeof b1), x->dst,
			     state_set_fmt(st, old, b2, sizeof b2), x->src, state_set_fmt(st, val, b3, sizeof b3));
		}
		state_set_release(st, lost);
	}
	for (int i = 0; i < v->nsusp; i++)
		state_set_release(st, v->susp[i].old);
	v->nsusp = 0;
}

/* The last transfer of s that writes (r, c), or NULL: a backward scan,
 * run only for an error.  Every transfer was applied (a schedule with a
 * bad round never gets here), so the last one listed is the last write. */
static const ir_xfer *last_write(const ir_sched *s, int r, int c, int *round)
{
	for (int k = s->nrounds - 1; k >= 0; k--) {
		const ir_round *rd = &s->rounds[k];
		for (int t = rd->first + rd->count - 1; t >= rd->first; t--)
			if (s->xfers[t].dst == r && s->xfers[t].chunk == c) {
				*round = k;
				return &s->xfers[t];
			}
	}
	return NULL;
}

static int check_post(const ir_sched *s, bstate *st)
{
	const coll_shape *sh = &st->shape;
	int fr = -1, fc = -1;
	long long more = 0;
	for (int r = 0; r < s->n; r++)
		for (int c = 0; c < s->chunks; c++)
			if (coll_shape_targets(sh, r, c) && !state_complete(st, r, c)) {
				if (fr < 0)
					fr = r, fc = c;
				else
					more++;
			}
	if (fr < 0)
		return 0;
	char when[64], b1[SETBUF], b2[SETBUF], tail[96] = "";
	if (s->nrounds == 0)
		snprintf(when, sizeof when, "with no rounds");
	else
		snprintf(when, sizeof when, "after round %d (the last)", s->nrounds - 1);
	if (more > 0)
		snprintf(tail, sizeof tail, " (and %lld more (rank, chunk) pair%s wrong)", more, more == 1 ? " is" : "s are");
	state_set_fmt(st, state_get(st, fr, fc), b1, sizeof b1);
	state_set_fmt(st, state_need(st, fc), b2, sizeof b2);
	const char *kind = ir_kind_names[s->kind];
	int k = 0;
	const ir_xfer *x = last_write(s, fr, fc, &k);
	if (!x) {   /* nothing to point at but the algorithm */
		diag_error(s->pos, "%s, rank %d chunk %d was never written; it holds %s, but %s needs %s%s", when, fr, fc,
			   b1, kind, b2, tail);
		return 1;
	}
	/* the statement that wrote it last, then the algorithm */
	const ir_round *rd = &s->rounds[k];
	const char *ph = rd->phase >= 0 && rd->phase < s->nphases && strcmp(s->phases[rd->phase], "main") != 0
			 ? s->phases[rd->phase] : NULL;
	char in[96];
	snprintf(in, sizeof in, "round %d%s%s%s", k, ph ? " (phase " : "", ph ? ph : "", ph ? ")" : "");
	srcpos at = ir_xfer_pos(s, x).file ? ir_xfer_pos(s, x) : rd->pos.file ? rd->pos : s->pos;
	diag_error(at, "%s, rank %d chunk %d holds %s, but %s needs %s; the last write to it was this %s from rank %d "
		   "in %s%s", when, fr, fc, b1, kind, b2, op_name(x->op), x->src, in, tail);
	if (!same_pos(at, s->pos) && s->pos.file)
		diag_note(s->pos, "while verifying algorithm '%s' for n = %d", s->algo ? s->algo : "?", s->n);
	return 1;
}

/* Parameters state_new would refuse, with the reason; and a state too
 * large for the memory budget. */
static int check_header(const ir_sched *s)
{
	const char *a = s->algo ? s->algo : "?";
	char why[200];
	if (state_refusal(s, why, sizeof why)) {
		diag_error(s->pos, "algorithm %s: %s", a, why);
		return 1;
	}
	size_t need = state_cell_bytes(s);
	if (!mem_fits(need)) {
		diag_error(s->pos, "algorithm %s: verifying %d ranks x %d chunks needs %zu MiB for the state alone, over the "
			   "memory budget (raise it with --max-memory)", a, s->n, s->chunks, need >> 20);
		return 1;
	}
	return 0;
}

int verify_sched(const ir_sched *s)
{
	if (check_header(s))
		return 1;
	vctx v = { .s = s };
	v.st = state_new(s);
	if (!v.st) {   /* check_header covers every refusal; be safe anyway */
		diag_error(s->pos, "algorithm %s: cannot build the pre-state", s->algo ? s->algo : "?");
		return 1;
	}
	int *ports = malloc((size_t)s->n * 6 * sizeof *ports);
	v.pmask = 1023;
	v.pairs = malloc(((size_t)v.pmask + 1) * sizeof *v.pairs);
	if (!ports || !v.pairs) {
		free(ports);
		free(v.pairs);
		state_free(v.st);
		diag_error(s->pos, "out of memory while verifying");
		return 1;
	}
	v.nsend = ports;
	v.nrecv = ports + s->n;
	v.ssend = ports + 2 * s->n;
	v.srecv = ports + 3 * s->n;
	v.lastdst = ports + 4 * s->n;
	v.smulti = ports + 5 * s->n;
	for (int i = 0; i < s->n; i++)
		v.ssend[i] = v.srecv[i] = v.smulti[i] = -1;
	for (uint32_t i = 0; i <= v.pmask; i++)
		v.pairs[i].stamp = -1;

	int errors = 0;
	for (int r = 0; r < s->nrounds && errors == 0; r++) {
		const ir_round *rd = &s->rounds[r];
		v.round = r;
		v.named = false;
		v.npairs = 0;
		v.nerr = 0;
		v.capped = false;
		v.ported = false;

		for (int t = rd->first; t < rd->first + rd->count; t++)
			check_xfer(&v, rd, t);
		state_land(v.st);
		/* rejected transfers were not staged, which only keeps data alive,
		 * so this check stays sound in a round that already has errors */
		if (v.nsusp)
			check_destroyed(&v, rd);

		if (v.capped)
			diag_note(xpos(&v, NULL, rd), "%s: further errors in this round not shown", round_name(&v));
		errors += v.nerr;
	}
	if (errors == 0)
		errors += check_post(s, v.st);
	free(ports);
	free(v.pairs);
	free(v.susp);
	state_free(v.st);
	return errors;
}
