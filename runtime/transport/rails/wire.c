/*
 * wire.c - the rails transport's traffic on its children (the messages
 * of rails.c, "Children"): control messages, sending a message's pieces
 * and reaping them as they are acknowledged, receiving pieces into slots,
 * acknowledging them and handing whole messages to the executor in order.
 * Which rail carries which piece is split.c's to decide; a link that
 * fails here goes to failover.c (rl_link_down).
 *
 * Exactly once.  Messages to one peer are numbered; the receiver keeps
 * RL_WINDOW slots, one per message in flight, reassembles pieces into the
 * slot (a bit per piece), drops pieces it already has (acknowledging them
 * again) and hands whole messages to the executor in order.  Small
 * messages (<= RL_COPY_BYTES), and those that go out by pull() or whole
 * on one rail (up to RL_COPY_MAX, and the oldest to their peer: see
 * start()), are copied at the sender, so the executor's send completes
 * as soon as the child has written them (copied_out) and a resend takes
 * the copy; messages split by shares
 * complete when every piece is acknowledged (on TCP "written" only means
 * the kernel took it; see start() for why they keep no copy).  Pieces of
 * messages above RL_COPY_BYTES are acknowledged as they arrive (their
 * times feed the shares, and a sender without a copy waits for them);
 * small messages are acknowledged lazily (cumulatively, within
 * RL_ACK_DELAY_NS) unless the sender may be waiting for credit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rails_int.h"

/* --- control messages ----------------------------------------------------- */

int rl_send_ctl(rails_tp *t, int p, int r, const rl_hdr *h)
{
	return rl_send_ctl_body(t, p, r, h, NULL, 0);
}

/* A control message, with len <= RL_REJOIN_BYTES bytes of body after it. */
int rl_send_ctl_body(rails_tp *t, int p, int r, const rl_hdr *h, const uint8_t *body, size_t len)
{
	if (r < 0 || !rl_lk(t, p, r)->up)
		return COLL_OK;
	rl_ctl *k = t->free_ctl;
	if (k)
		t->free_ctl = k->next;
	else if (!(k = calloc(1, sizeof *k)))
		return rt_err(t->base.comm, COLL_ERR_NOMEM, "out of memory");
	memset(&k->creq, 0, sizeof k->creq);
	k->h = *h;
	k->h.magic = RL_MAGIC;
	k->h.rail = (uint16_t)r;
	k->creq.peer = p;
	k->creq.iov[0] = (struct iovec){&k->h, sizeof k->h};
	k->creq.iovcnt = 1;
	if (len) {
		memcpy(k->body, body, len);
		k->h.len = (uint32_t)len;
		k->creq.iov[1] = (struct iovec){k->body, len};
		k->creq.iovcnt = 2;
	}
	rl_link *L = rl_lk(t, p, r);
	k->next = L->ctl;
	L->ctl = k;
	rt_tp *c = t->rail[r].tp;
	int rc = c->ops->post_send(c, &k->creq);
	if (rc) {
		L->ctl = k->next;
		k->next = t->free_ctl;
		t->free_ctl = k;
		return rl_link_down(t, p, r, 1, "%s", t->base.comm->err);
	}
	return COLL_OK;
}

int rl_send_ack(rails_tp *t, int p, int r, uint32_t seq, int slice)
{
	rl_peer *pr = &t->peer[p];
	rl_hdr h = {0};
	h.type = RH_ACK;
	h.seq = seq;
	h.slice = slice < 0 ? (uint16_t)RL_NOSLICE : (uint16_t)slice;
	h.cum = pr->cum;
	h.freed = pr->freed;
	if (r < 0 || !rl_lk(t, p, r)->up)
		r = rl_fastest(t, p);
	pr->credit_sent = pr->freed + RL_WINDOW;
	pr->ack_owed = 0;
	return rl_send_ctl(t, p, r, &h);
}

/* The receiver's side of credit: a sender that has started every message
 * we allowed may be waiting for more, so tell it as soon as there is. */
int rl_maybe_credit(rails_tp *t, int p)
{
	rl_peer *pr = &t->peer[p];
	if (pr->highest == pr->credit_sent && pr->freed + RL_WINDOW != pr->credit_sent)
		return rl_send_ack(t, p, pr->ack_owed ? pr->ack_rail : -1, 0, -1);
	return COLL_OK;
}

/* --- sending -------------------------------------------------------------- */

/* Copy a send's iovecs into one buffer. */
void rl_gather(char *to, const rt_req *req)
{
	for (int i = 0; i < req->iovcnt; i++) {
		if (!req->iov[i].iov_len)   /* an empty payload may have no address (count 0) */
			continue;
		memcpy(to, req->iov[i].iov_base, req->iov[i].iov_len);
		to += req->iov[i].iov_len;
	}
}

static void piece_iov(rl_msg *m, rl_piece *pc)
{
	rt_req *q = &pc->creq;
	q->iovcnt = 2;
	if (m->copy) {
		q->iov[0] = (struct iovec){&pc->h, sizeof pc->h};
		q->iov[1] = (struct iovec){m->copy + pc->off, pc->len};
	} else if (m->req->iovcnt == 1) {
		q->iov[0] = (struct iovec){&pc->h, sizeof pc->h};
		q->iov[1] = (struct iovec){(char *)m->req->iov[0].iov_base + pc->off, pc->len};
	} else if (pc->off == 0) {   /* header (copied into xh) and the payload's start */
		q->iov[0] = (struct iovec){&pc->h, sizeof pc->h + sizeof pc->xh};
		q->iov[1] = (struct iovec){m->req->iov[1].iov_base, pc->len - sizeof pc->xh};
	} else {
		q->iov[0] = (struct iovec){&pc->h, sizeof pc->h};
		q->iov[1] = (struct iovec){(char *)m->req->iov[1].iov_base + (pc->off - sizeof(rt_hdr)), pc->len};
	}
}

void rl_link_push(rl_link *L, rl_piece *pc)
{
	pc->lnext = NULL;
	if (L->out_tail)
		L->out_tail->lnext = pc;
	else
		L->out = pc;
	L->out_tail = pc;
}

int rl_post_piece(rails_tp *t, int p, rl_msg *m, rl_piece *pc, int r)
{
	rl_link *L = rl_lk(t, p, r);
	memset(&pc->creq, 0, sizeof pc->creq);
	pc->creq.peer = p;
	pc->h.rail = (uint16_t)r;
	pc->rail = r;
	pc->posted_ns = rt_now_ns();
	piece_iov(m, pc);
	rl_link_push(L, pc);
	t->rail[r].bytes += pc->len;
	if (pc->resent)
		t->rail[r].resent += pc->len;
	rt_tp *c = t->rail[r].tp;
	int rc = c->ops->post_send(c, &pc->creq);
	if (rc)
		return rl_link_down(t, p, r, 1, "%s", t->base.comm->err);
	return COLL_OK;
}

void rl_msg_free(rl_msg *m)
{
	if (m->copy != (char *)&m->p[m->cap])   /* start()'s copy, or none */
		free(m->copy);
	free(m);
}

static void msg_unlink(rl_peer *pr, rl_msg *m)
{
	rl_msg **pp = &pr->head, *prev = NULL;
	while (*pp != m)
		prev = *pp, pp = &(*pp)->next;
	*pp = m->next;
	if (pr->tail == m)
		pr->tail = prev;
	rl_msg_free(m);
}

/* Pieces that are acknowledged and that the child no longer holds leave
 * their link; a message whose pieces all did is complete. */
void rl_reap(rails_tp *t, int p, int r)
{
	rl_link *L = rl_lk(t, p, r);
	rl_piece **pp = &L->out, *prev = NULL;
	while (*pp) {
		rl_piece *pc = *pp;
		if (!(pc->acked && pc->creq.done)) {
			prev = pc;
			pp = &pc->lnext;
			continue;
		}
		*pp = pc->lnext;
		if (L->out_tail == pc)
			L->out_tail = prev;
		pc->rail = -1;
		rl_msg *m = pc->m;
		if (!L->out)
			L->idle_ns = rt_now_ns();
		if (++m->nfin == m->npieces) {
			if (m->hot && m->clean == m->npieces && !m->warmup && m->start_ns >= t->peer[p].back_ns)
				rl_sample(t, m);   /* (not if the peer was away meanwhile: see heard()) */
			if (m->req)
				m->req->done = 1;
			msg_unlink(&t->peer[p], m);
		}
	}
}

/* A copied message is done for the executor once the child has written
 * every piece (or it was acknowledged): TCP's "sent".  Not sooner, so that
 * the executor keeps the rails moving until then: a rank that goes on to
 * a barrier outside the transport (coll_barrier) or to compute must not
 * leave a message waiting for credit in our queue.  Its acknowledgements
 * are still awaited, for failover.  Returns whether one completed. */
int rl_copied_out(rails_tp *t, int p)
{
	int moved = 0;
	for (rl_msg *m = t->peer[p].head; m && m->started; m = m->next) {
		if (!m->copy || !m->req)
			continue;
		int out = 1;
		for (int i = 0; i < m->npieces && out; i++)
			out = m->p[i].acked || (m->p[i].rail >= 0 && m->p[i].creq.done);
		if (out) {
			m->req->done = 1;
			m->req = NULL;
			moved = 1;
		}
	}
	return moved;
}

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

/* --- receiving ------------------------------------------------------------ */

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

/* Control sends the child finished go back to the pool. */
void rl_ctl_reap(rails_tp *t, rl_link *L)
{
	for (rl_ctl **kp = &L->ctl; *kp;) {
		rl_ctl *k = *kp;
		if (!k->creq.done) {
			kp = &k->next;
			continue;
		}
		*kp = k->next;
		k->next = t->free_ctl;
		t->free_ctl = k;
	}
}
