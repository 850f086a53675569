/*
 * wire.c - the bottom of the rails transport (rails.c, "Children"): its
 * traffic on the children's links.  Control messages, sending a
 * message's pieces and reaping them as they are acknowledged; a link
 * whose child fails (or that failover.c or recv.c declares down) is
 * taken down here, its unacknowledged pieces posted again on a survivor,
 * since re-sending is sending; and the samples the acknowledgements give
 * the balancer (split.c folds them).  Receiving is recv.c's.
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
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* --- a link that fails ---------------------------------------------------- */

/* Forget link (p, r): the child drops it, its pieces go to a survivor,
 * and (tell) the peer hears of it on a survivor.  Returns an error only
 * when p is needed and no rail to it is left. */
int rl_link_down(rails_tp *t, int p, int r, int tell, const char *fmt, ...)
{
	rl_link *L = rl_lk(t, p, r);
	if (!L->up)
		return COLL_OK;
	int64_t now = rt_now_ns();
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(L->why, sizeof L->why, fmt, ap);
	va_end(ap);
	if (t->debug)
		fprintf(stderr, "rails: rank %d: %s to rank %d down: %s\n", t->rank, t->rail[r].name, p, L->why);
	/* The moment it went silent: its last acknowledgement, or the posting
	 * of its oldest unacknowledged piece if that came later. */
	int64_t silent = L->last_ack_ns;
	for (rl_piece *pc = L->out; pc; pc = pc->lnext)
		if (!pc->acked) {
			if (pc->posted_ns > silent)
				silent = pc->posted_ns;
			break;
		}
	L->up = 0;
	rl_rail *R = &t->rail[r];
	R->tp->ops->rail->drop(R->tp, p);
	t->ep_stale = 1;
	R->failovers++;
	t->failovers++;
	if (L->out) {
		t->last_detect_ms = (double)(now - silent) / 1e6;
		t->reroute_from_ns = silent;
	}
	/* Control messages and receives on it are ours again. */
	while (L->ctl) {
		rl_ctl *k = L->ctl;
		L->ctl = k->next;
		k->next = t->free_ctl;
		t->free_ctl = k;
	}
	L->busy = 0;
	rt_tp *ct = R->tp;
	for (int i = 0; i < RL_RWIN; i++)
		if (L->rq[i].done)
			ct->ops->release(ct, &L->rq[i]);   /* completed before the drop: still ours to release */
	/* Unacknowledged pieces: again, on the best survivor. */
	rl_piece *list = L->out;
	L->out = L->out_tail = NULL;
	int s = rl_survivor(t, p, r);
	if (tell && s >= 0) {
		rl_hdr h = {0};
		h.type = RH_DOWN;
		h.seq = (uint32_t)r;
		h.cum = L->inc;
		int rc = rl_send_ctl(t, p, s, &h);
		if (rc)
			return rc;
		s = rl_survivor(t, p, r);
	}
	for (rl_piece *pc = list, *nx; pc; pc = nx) {
		nx = pc->lnext;
		pc->creq.done = 1;   /* the child holds it no longer */
		if (pc->acked) {
			rl_link_push(L, pc);   /* finished: reap it below */
			continue;
		}
		if (s < 0) {
			pc->rail = -1;   /* nowhere to go: the call fails (need) */
			continue;
		}
		pc->resent = 1;
		int rc = rl_post_piece(t, p, pc->m, pc, s);
		if (rc)
			return rc;
		s = rl_survivor(t, p, r);
	}
	rl_reap(t, p, r);
	L->rj_wait = 0;
	if (t->rank > p && R->tp->ops->rail->rejoin_offer)
		L->rj_next_ns = now + (int64_t)RL_REJOIN_MS * 1000000;
	if (t->rank > p && R->tp->ops->rail->redial) {
		pthread_mutex_lock(&t->mu);
		t->want[p * t->nrails + r] = 1;
		pthread_mutex_unlock(&t->mu);
		uint64_t one = 1;
		if (write(t->wake_fd, &one, sizeof one) < 0) {
			/* the thread looks again within its poll timeout anyway */
		}
	}
	return rl_need(t, p);
}

/* Is p needed (something to or from it outstanding) with no rail left? */
int rl_need(rails_tp *t, int p)
{
	rl_peer *pr = &t->peer[p];
	if (rl_alive_rails(t, p))
		return COLL_OK;
	if (!pr->head && !pr->xrq.head)
		return COLL_OK;   /* it may have left after its last call: an error once needed */
	char buf[sizeof t->base.comm->err - 64];
	size_t at = 0;
	for (int r = 0; r < t->nrails && at < sizeof buf; r++)
		at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s: %s", r ? "; " : "", t->rail[r].name,
		                       rl_lk(t, p, r)->why);
	t->fatal = COLL_ERR_PEER;
	return rt_err(t->base.comm, COLL_ERR_PEER, "rails: every rail to rank %d is down (%s)", p, buf);
}

/* --- what the acknowledgements measure ------------------------------------ */

/* A split message all of whose pieces were acknowledged on the rail that
 * carried them is a sample of each rail that carried some: its bytes, the
 * time from the split to its part's last acknowledgement, and that
 * time's log-imbalance against the other rails' (see fold()).  (Timing
 * each piece from when its rail could start on it counted a shaper's
 * burst and not the latency: on a 200 + 60 Mbit/s testbed it measured the
 * fast rail at 31-34 MB/s, above its 25 MB/s.) */
void rl_sample(rails_tp *t, const rl_msg *m)
{
	rl_class *k = &t->cls[m->cls];
	double lt[COLL_MAX_RAILS], mean = 0;
	int on = 0;
	for (int r = 0; r < t->nrails; r++) {
		if (!m->part[r])
			continue;
		int64_t ns = m->fin_ns[r] - m->start_ns;
		ns = ns > 1 ? ns : 1;
		k->sb[r] += m->part[r];
		k->sns[r] += ns;
		lt[r] = log((double)ns);
		mean += lt[r];
		on++;
	}
	if (t->debug > 2 && t->rank == 0) {   /* every sample: what a fold averages */
		fprintf(stderr, "sample cls %d seq %u:", m->cls, m->seq);
		for (int r = 0; r < t->nrails; r++)
			fprintf(stderr, " rail %d %llu B %.0f us", r, (unsigned long long)m->part[r],
				m->part[r] ? (double)(m->fin_ns[r] - m->start_ns) / 1e3 : 0.0);
		fputc('\n', stderr);
	}
	for (int r = 0; r < t->nrails && on >= 2; r++) {
		if (!m->part[r])
			continue;
		double d = lt[r] - mean / on;
		k->sl[r] += d;
		k->sll[r] += d * d;
		k->nl[r]++;
	}
	k->nsb++;
}

/* A piece's own acknowledgement on the link that carried it times the
 * link's drain: its bytes over the time since the link's previous piece
 * was acknowledged, or since it was posted if that was later (the link
 * was idle).  Acknowledgements come in bursts (a receiver's pass takes
 * several pieces), so one piece's time means little: bytes and times add
 * up until they span RL_DRAIN_NS (a tenth of it for a link's first), and
 * that ratio goes into the average: the mean of a link's first
 * RL_DRAIN_AVG measurements, then a moving average giving each new one
 * 1/RL_DRAIN_AVG.  One measurement still scatters (a 200 Mbit/s rail read
 * 22-36 MB/s), and pull() hands most of a 1 MiB message out at once by
 * the drains: averaging halves (0.5 old, 0.5 new) left two equal rails at
 * 1.85-1.89x one rail at 4 MiB (n = 4) where `equal` ran 2.00-2.03x; this
 * average runs 1.92-1.96x (tests/results/rails.md).  A drain forgotten
 * (rl_drain_of()) starts a new mean, so a rail that comes back is measured
 * afresh, not averaged with what it did before. */
void rl_drain_sample(rails_tp *t, int p, int r, const rl_piece *pc, int64_t now)
{
	rl_link *L = rl_lk(t, p, r);
	if (pc->acked || pc->rail != r || pc->resent || !pc->m->pulled)
		return;
	int64_t from = L->drain_ns > pc->posted_ns ? L->drain_ns : pc->posted_ns;
	L->drain_ns = now;
	if (pc->woke || pc->posted_ns < t->peer[p].back_ns)
		return;   /* TCP's ramp after idle, or the peer was away (heard()): not the link */
	L->dr_bytes += pc->len;
	L->dr_ns += now > from ? now - from : 0;
	double old = rl_drain_of(L, now);
	if (L->dr_ns < (old > 0 ? RL_DRAIN_NS : RL_DRAIN_NS / 10))   /* the first sooner: until then, guesses */
		return;
	double s = (double)L->dr_bytes / (double)L->dr_ns;
	if (old <= 0)
		L->dr_n = 0;   /* never measured, or forgotten: start a new average */
	L->dr_n += L->dr_n < RL_DRAIN_AVG;
	L->drain = old + (s - old) / L->dr_n;
	L->drain_set_ns = now;
	L->dr_bytes = 0, L->dr_ns = 0;
}
