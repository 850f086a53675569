/*
 * recv.c - what arrives on the rails transport's links: pieces into the
 * receiver's slots (exactly once: wire.c says how), whole messages in
 * order to the executor, and the control messages, each handed to the
 * room it concerns: acknowledgements time the rails and free the
 * sender's pieces (wire.c), credit starts waiting messages (split.c), a
 * DOWN or a failed receive takes a link down (wire.c), a REJOIN step
 * goes to failover.c.
 *
 * Pipeline position: under rails.c's progress, above the other rooms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rails_int.h"

/* An ACK or PROBE_ACK from p on rail r.  A peer that answers after being
 * silent on every rail for the failover check's detection time was away
 * (a long computation, descheduled, a size's buffers being filled), not
 * cut off: the silence of each of its links counts again from here
 * (check_links), or the rail whose data is still on its way when the
 * other answers first would be declared down for the peer's pause (8
 * ranks on 2 cores, collbench between 64 MiB sizes: 1.6 s).  Not from
 * the probe interval: the check's own PROBEs keep an otherwise idle
 * rail answering about that often, and a dead link beside it would then
 * never be declared down. */
static void heard(rails_tp *t, int p, int r, int64_t now)
{
	rl_peer *pr = &t->peer[p];
	if (now - pr->heard_ns > (int64_t)t->pol.failover_ms * 500000)
		pr->back_ns = now;
	pr->heard_ns = now;
	rl_lk(t, p, r)->last_ack_ns = now;
}

static void piece_acked(rails_tp *t, int r, rl_piece *pc, int64_t now)
{
	if (pc->acked)
		return;
	pc->acked = 1;
	rl_msg *m = pc->m;
	if (pc->rail == r && m->hot && !pc->resent) {
		m->clean++;
		if (now > m->fin_ns[r])
			m->fin_ns[r] = now;
	}
	if (pc->resent && t->reroute_from_ns) {
		double ms = (double)(now - t->reroute_from_ns) / 1e6;
		t->last_reroute_ms = ms;
		if (ms > t->max_reroute_ms)
			t->max_reroute_ms = ms;
		t->reroute_from_ns = 0;
	}
}

static void on_ack(rails_tp *t, int p, int r, const rl_hdr *h)
{
	rl_peer *pr = &t->peer[p];
	int64_t now = rt_now_ns();
	heard(t, p, r, now);
	for (rl_msg *m = pr->head; m && m->started; m = m->next) {
		if ((int32_t)(m->seq - h->cum) < 0) {
			for (int i = 0; i < m->npieces; i++)
				piece_acked(t, r, &m->p[i], now);
		} else if (h->slice != RL_NOSLICE && m->seq == h->seq && h->slice < m->npieces) {
			rl_drain_sample(t, p, r, &m->p[h->slice], now);
			piece_acked(t, r, &m->p[h->slice], now);
		}
	}
	if ((int32_t)(h->freed + RL_WINDOW - pr->credit) > 0)
		pr->credit = h->freed + RL_WINDOW;
	for (int k = 0; k < t->nrails; k++)
		rl_reap(t, p, k);
}

int rl_deliver(rails_tp *t, int p)
{
	rl_peer *pr = &t->peer[p];
	while (pr->xrq.head) {
		rl_slot *s = &pr->slot[pr->expect % RL_WINDOW];
		if (s->state != SL_FULL || s->seq != pr->expect)
			break;
		rt_req *q = rt_reqq_pop(&pr->xrq);
		q->data = s->buf;
		q->len = s->total;
		q->pend = 0;
		q->tpbuf = s;
		q->done = 1;
		s->state = SL_OUT;
		pr->expect++;
	}
	return COLL_OK;
}

static void advance_cum(rl_peer *pr)
{
	for (;;) {
		rl_slot *s = &pr->slot[pr->cum % RL_WINDOW];
		if (s->seq != pr->cum || (s->state != SL_FULL && s->state != SL_OUT && s->state != SL_REL))
			break;
		pr->cum++;
	}
}

/* A piece's bytes are all in its slot. */
static int piece_in(rails_tp *t, int p, int r, int si, int slice)
{
	rl_peer *pr = &t->peer[p];
	rl_slot *s = &pr->slot[si];
	uint32_t seq = s->seq;
	s->have |= 1ull << slice;
	int whole = (uint32_t)__builtin_popcountll(s->have) == s->nslices;
	if (whole) {
		s->state = SL_FULL;
		advance_cum(pr);
		rl_deliver(t, p);
	}
	if (s->nslices > 1 || s->total > RL_COPY_BYTES)   /* timed, or its sender waits for it */
		return rl_send_ack(t, p, r, seq, slice);
	/* A small message behind one still arriving (on another rail) is not
	 * covered by `cum` until that one is whole, which at a slow rail's
	 * pace can be longer than the failover check gives its rail. */
	if ((int32_t)(seq - pr->cum) >= 0)
		return rl_send_ack(t, p, r, seq, slice);
	if (!pr->ack_owed) {
		pr->ack_owed = 1;
		pr->ack_owed_ns = rt_now_ns();
	}
	pr->ack_rail = r;
	return rl_maybe_credit(t, p);
}

/* A DATA header arrived on link (p, r): where do its len bytes go? */
static int data_begin(rails_tp *t, int p, int r, const rl_hdr *h)
{
	rl_peer *pr = &t->peer[p];
	rl_link *L = rl_lk(t, p, r);
	L->busy = 1;
	L->rd_dst = NULL;
	L->rd_left = h->len;
	L->rd_at = sizeof *h;
	L->rd_slot = -1;
	L->rd_seq = h->seq;
	L->rd_slice = h->slice;
	if (h->nslices == 0 || h->nslices > RL_MAXPIECES || h->slice >= h->nslices || h->total > t->base.max_msg ||
	    h->total < sizeof(rt_hdr) || h->off + h->len > h->total || (h->slice == 0) != (h->off == 0))
		return rt_err(t->base.comm, COLL_ERR_PROTOCOL, "rails: bad piece from rank %d on %s", p, t->rail[r].name);
	if ((int32_t)(h->seq - pr->freed) < 0)
		return COLL_OK;   /* already delivered and released: drop (acknowledged below) */
	if ((int32_t)(h->seq - pr->freed) >= RL_WINDOW)
		return rt_err(t->base.comm, COLL_ERR_PROTOCOL, "rails: rank %d sent message %u beyond its credit (%u)", p,
		              h->seq, pr->freed + RL_WINDOW);
	int si = (int)(h->seq % RL_WINDOW);
	rl_slot *s = &pr->slot[si];
	if (s->state == SL_FREE) {
		if (s->cap < h->total) {
			char *b = realloc(s->buf, h->total);
			if (!b)
				return rt_err(t->base.comm, COLL_ERR_NOMEM, "out of memory");
			s->buf = b, s->cap = h->total;
		}
		s->state = SL_FILL;
		s->seq = h->seq;
		s->total = h->total;
		s->nslices = h->nslices;
		s->have = 0;
		if ((int32_t)(h->seq + 1 - pr->highest) > 0)
			pr->highest = h->seq + 1;
	} else if (s->seq != h->seq || s->total != h->total || s->nslices != h->nslices) {
		return rt_err(t->base.comm, COLL_ERR_PROTOCOL, "rails: rank %d's message %u changed shape", p, h->seq);
	}
	if (s->state != SL_FILL || (s->have >> h->slice & 1))
		return COLL_OK;   /* a duplicate (a resend after a failover that was not one) */
	L->rd_dst = s->buf + h->off;
	L->rd_slot = si;
	return COLL_OK;
}

/* Give a finished child receive back and post it again. */
static int recv_again(rails_tp *t, int p, int r)
{
	rl_link *L = rl_lk(t, p, r);
	rt_tp *c = t->rail[r].tp;
	rt_req *q = &L->rq[L->rhead];
	c->ops->release(c, q);
	memset(q, 0, sizeof *q);
	q->peer = p;
	L->rhead = (L->rhead + 1) % RL_RWIN;
	if (c->ops->post_recv(c, q))
		return rl_link_down(t, p, r, 1, "%s", t->base.comm->err);
	return COLL_OK;
}

/* Take what arrived on link (p, r), in order. */
int rl_link_recv(rails_tp *t, int p, int r, int *moved)
{
	rl_link *L = rl_lk(t, p, r);
	rt_tp *c = t->rail[r].tp;
	int rc;
	while (L->up) {
		rt_req *q = &L->rq[L->rhead];
		if (!q->done)
			return COLL_OK;
		*moved = 1;
		if (!L->busy) {
			const rl_hdr *h = q->data;
			if (q->len < sizeof *h || h->magic != RL_MAGIC || h->rail != r ||
			    (h->type == RH_REJOIN && h->len > RL_REJOIN_BYTES) ||
			    q->len != sizeof *h + (h->type == RH_DATA || h->type == RH_REJOIN ? h->len : 0))
				return rt_err(t->base.comm, COLL_ERR_PROTOCOL, "rails: bad message from rank %d on %s", p,
				              t->rail[r].name);
			rc = COLL_OK;
			switch (h->type) {
			case RH_DATA:
				rc = data_begin(t, p, r, h);
				break;
			case RH_ACK:
				on_ack(t, p, r, h);
				rc = rl_pump(t, p);   /* it may bring credit for messages waiting */
				break;
			case RH_PROBE: {
				rl_hdr a = {0};
				a.type = RH_PROBE_ACK;
				a.stamp = h->stamp;
				t->peer[p].probes_answered++;
				rc = rl_send_ctl(t, p, r, &a);
				break;
			}
			case RH_PROBE_ACK: {
				int64_t now = rt_now_ns();
				heard(t, p, r, now);
				if (L->lat_n < RL_PROBES)
					L->lat_min[L->lat_n++] = now - h->stamp;
				break;
			}
			case RH_REJOIN:   /* its record is read below, like a piece's bytes */
				L->busy = 1;
				L->rd_dst = (char *)L->rj_buf;
				L->rd_left = h->len;
				L->rd_at = sizeof *h;
				L->rd_slot = RL_RD_REJOIN;
				L->rj_h = *h;
				break;
			case RH_DOWN:
				/* Only about the link we have: a DOWN that travelled on a
				 * slow survivor while the rail rejoined means the link
				 * before, and dropping the new one for it had the peers
				 * dropping and redialing each other's fresh links in a
				 * loop.  (The peer closed the old one anyway.) */
				if (h->seq < (uint32_t)t->nrails && h->seq != (uint32_t)r &&
				    (int32_t)(h->cum - rl_lk(t, p, (int)h->seq)->inc) >= 0)
					rc = rl_link_down(t, p, (int)h->seq, 0, "rank %d dropped it", p);
				break;
			default:
				return rt_err(t->base.comm, COLL_ERR_PROTOCOL, "rails: message of type %u from rank %d",
				              h->type, p);
			}
			if (rc)
				return rc;
			if (!L->up)
				return COLL_OK;   /* handling it dropped this very link */
			if (!L->busy) {
				if ((rc = recv_again(t, p, r)))
					return rc;
				continue;
			}
		}
		/* A piece's bytes: from the child's stream, or from its buffer. */
		while (L->rd_left) {
			size_t want = L->rd_dst ? L->rd_left : (L->rd_left < RT_STAGE_BYTES ? L->rd_left : RT_STAGE_BYTES);
			char *dst = L->rd_dst ? L->rd_dst : t->discard;
			size_t got = 0;
			if (q->pend) {
				if ((rc = c->ops->read(c, q, dst, want, &got)))
					return rl_link_down(t, p, r, 1, "%s", t->base.comm->err);
				if (!got)
					return COLL_OK;   /* more later: this receive stays at the head */
			} else {
				got = want;
				if (L->rd_dst)
					memcpy(dst, (const char *)q->data + L->rd_at, got);
				L->rd_at += got;
			}
			L->rd_left -= got;
			if (L->rd_dst)
				L->rd_dst += got;
		}
		L->busy = 0;
		if (L->rd_slot == RL_RD_REJOIN)
			rc = rl_on_rejoin(t, p, r, &L->rj_h, L->rj_buf);
		else
			rc = L->rd_slot >= 0 ? piece_in(t, p, r, L->rd_slot, L->rd_slice)
			                     : rl_send_ack(t, p, r, L->rd_seq, L->rd_slice);   /* a duplicate: say again we have it */
		if (rc)
			return rc;
		if (L->up && (rc = recv_again(t, p, r)))
			return rc;
	}
	return COLL_OK;
}
