/*
 * failover.c - the rails transport's links going down and coming back:
 * the failover check declares a silent link down (wire.c's rl_link_down
 * then moves its unacknowledged pieces to a survivor and tells the peer),
 * and the higher rank rejoins the link, by redialing from a background
 * thread (which also accepts the lower ranks' redials) or, on rails with
 * nothing to dial, by REJOIN records over a surviving rail; the main
 * thread adopts the new link at its next progress.
 *
 * Failover.  A link (peer, rail) whose oldest unacknowledged piece has seen
 * no acknowledgement for half the policy's failover bound, while another
 * rail to that peer answered after that moment (a PROBE is sent on the
 * others at a quarter to make sure; silence counts from the peer's
 * return if it was away on every rail, heard()), or whose child reports
 * an error for that peer, is declared down: the child drops that peer's
 * link, its unacknowledged pieces are posted again on the best surviving
 * rail, and the peer is told (DOWN) on a survivor.  The higher rank then
 * redials the rail every RL_REJOIN_MS from a background thread (which
 * also accepts the lower ranks' redials on each rail's listener, one
 * authenticated handshake at a time, each bounded); the main thread
 * adopts the new link at its next progress.  When every rail to a peer is down and we need
 * that peer (a send or receive outstanding), the call fails with
 * COLL_ERR_PEER naming every rail's reason; a peer that merely left (all
 * its links closed after its last call) is no error until needed.  When
 * no rail gives evidence (the peer is silent on all of them), nothing is
 * declared: that is the executor's COLL_TIMEOUT.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rails_int.h"

/* --- failover ------------------------------------------------------------- */



/* The failover check: silent links, while another rail to the same peer
 * answers, are declared down. */
int rl_check_links(rails_tp *t, int64_t now)
{
	int64_t detect = (int64_t)t->pol.failover_ms * 500000, probe = detect / 2;
	for (int p = 0; p < t->n; p++) {
		if (p == t->rank)
			continue;
		for (int r = 0; r < t->nrails; r++) {
			rl_link *L = rl_lk(t, p, r);
			rl_piece *old = L->out;
			while (old && old->acked)
				old = old->lnext;
			if (!L->up || !old)
				continue;
			int64_t from = old->posted_ns > L->last_ack_ns ? old->posted_ns : L->last_ack_ns;
			if (t->peer[p].back_ns > from)
				from = t->peer[p].back_ns;   /* the peer was away (heard) */
			/* A rail too slow to finish one piece within the bound is
			 * given the time that piece needs. */
			double rate = rl_rail_rate(t, r);
			int64_t need_ns = rate > 0 ? (int64_t)(2.0 * (double)t->slice / rate) : 0;
			int64_t lim = detect > need_ns ? detect : need_ns;
			if (now - from < probe)
				continue;
			int evidence = 0;
			for (int s = 0; s < t->nrails; s++) {
				rl_link *S = rl_lk(t, p, s);
				if (s == r || !S->up)
					continue;
				/* Evidence is another rail answering in the later half of
				 * r's silence, not once since r went quiet: a peer that
				 * stops reading altogether (a long computation,
				 * descheduled on a busy machine) leaves every rail
				 * silent, the one quiet first the longest, and that is
				 * COLL_TIMEOUT's to judge, not failover's. */
				if (S->last_ack_ns > from + (now - from) / 2)
					evidence = s + 1;
				else if (now - S->probed_ns >= probe) {
					rl_hdr h = {0};
					h.type = RH_PROBE;
					h.stamp = now;
					S->probed_ns = now;
					int rc = rl_send_ctl(t, p, s, &h);
					if (rc)
						return rc;
				}
			}
			if (now - from >= lim && evidence) {
				int rc = rl_link_down(t, p, r, 1, "no acknowledgement for %.0f ms while %s answered",
				                      (double)(now - from) / 1e6, t->rail[evidence - 1].name);
				if (rc)
					return rc;
			}
		}
	}
	return COLL_OK;
}

/* --- rejoining ------------------------------------------------------------ */

/* The rejoin thread's new link (peer, rail) goes to the main thread, which
 * adopts it at its next progress (adopt_news).  Out of memory: dropped,
 * the next round dials again. */
static void hand_over(rails_tp *t, int peer, int r, int fd, const uint8_t sess[16])
{
	rl_new *nw = malloc(sizeof *nw);
	if (!nw) {
		close(fd);
		return;
	}
	*nw = (rl_new){NULL, peer, r, fd, {0}};
	memcpy(nw->sess, sess, sizeof nw->sess);
	pthread_mutex_lock(&t->mu);
	if (peer >= 0 && peer < t->n)
		t->want[peer * t->nrails + r] = 0;
	nw->next = t->news;
	t->news = nw;
	t->have_news = 1;
	pthread_mutex_unlock(&t->mu);
}

void *rl_rejoin_main(void *arg)
{
	rails_tp *t = arg;
	int64_t next_dial = 0;
	struct pollfd pf[1 + COLL_MAX_RAILS];
	int lrail[1 + COLL_MAX_RAILS];
	for (;;) {
		int np = 0;
		pf[np++] = (struct pollfd){t->wake_fd, POLLIN, 0};
		for (int r = 0; r < t->nrails; r++) {
			const rt_rail_ops *ro = t->rail[r].ops->rail;
			int fd = ro->listen_fd ? ro->listen_fd(t->rail[r].tp) : -1;
			if (fd >= 0) {
				lrail[np] = r;
				pf[np++] = (struct pollfd){fd, POLLIN, 0};
			}
		}
		int k = poll(pf, (nfds_t)np, 100);
		pthread_mutex_lock(&t->mu);
		int stop = t->stop;
		pthread_mutex_unlock(&t->mu);
		if (stop)
			return NULL;
		if (k > 0 && (pf[0].revents & POLLIN)) {
			uint64_t v;
			if (read(t->wake_fd, &v, sizeof v) < 0) {
				/* nothing to do: it only woke us */
			}
			next_dial = 0;
		}
		for (int i = 1; k > 0 && i < np; i++) {
			if (!(pf[i].revents & POLLIN))
				continue;
			int r = lrail[i], peer = -1, fd = -1;
			uint8_t sess[16];
			rt_tp *c = t->rail[r].tp;
			/* One handshake at a time, each bounded: a stranger costs a
			 * rejoin at most that long and never the job's traffic. */
			if (c->ops->rail->reaccept(c, rt_now_ms() + 1000, &peer, &fd, sess) != COLL_OK)
				continue;
			hand_over(t, peer, r, fd, sess);
		}
		int64_t now = rt_now_ms();
		if (now < next_dial)
			continue;
		next_dial = now + RL_REJOIN_MS;
		for (int p = 0; p < t->n; p++)
			for (int r = 0; r < t->nrails; r++) {
				pthread_mutex_lock(&t->mu);
				int want = t->want[p * t->nrails + r] && !t->stop;
				pthread_mutex_unlock(&t->mu);
				if (!want)
					continue;
				int fd = -1;
				uint8_t sess[16];
				rt_tp *c = t->rail[r].tp;
				if (c->ops->rail->redial(c, p, rt_now_ms() + RL_REJOIN_MS / 2, &fd, sess) != COLL_OK)
					continue;
				hand_over(t, p, r, fd, sess);
			}
	}
}

/* Links the rejoin thread made: drop what we had on that link (the peer
 * saw it fail when we did not), adopt the new one. */
/* Link (p, r), made again (adopted or rejoined), carries traffic. */
static int link_up(rails_tp *t, int p, int r)
{
	rl_link *L = rl_lk(t, p, r);
	rt_tp *c = t->rail[r].tp;
	L->up = 1;
	L->last_ack_ns = rt_now_ns();
	L->rhead = 0;
	L->busy = 0;
	L->rj_next_ns = 0;
	L->rj_wait = 0;
	L->inc++;
	t->rail[r].rejoins++;
	t->rejoins++;
	for (int i = 0; i < RL_RWIN; i++) {
		memset(&L->rq[i], 0, sizeof L->rq[i]);
		L->rq[i].peer = p;
		if (c->ops->post_recv(c, &L->rq[i]))
			return rl_link_down(t, p, r, 0, "%s", t->base.comm->err);
	}
	return COLL_OK;
}

/* Rejoining through records, for rails with nothing to dial (ibverbs).
 * Three REJOIN steps on a surviving rail, the attempt numbered by the
 * higher rank, which starts one every RL_REJOIN_MS while the link is down:
 *   1. higher -> lower: the record of its fresh link;
 *   2. lower -> higher: the lower rank made its own fresh link, connected
 *      it to that record, and sends its record;
 *   3. higher -> lower: the higher rank connected too and the link is up;
 *      the lower rank takes it up on this.
 * Nobody writes on the rail before the other end's link is connected: the
 * lower rank's is before step 2, the higher rank's before step 3.  A
 * step of an attempt that is not the one under way is stale and ignored
 * (a later offer replaced it).  A failed step leaves the link down, its
 * reason in the link's `why`, and the next offer tries again; it is not
 * the job's error (comm->err is kept). */
static int send_rejoin(rails_tp *t, int p, int r, int step, uint32_t id, const uint8_t *rec, size_t len)
{
	int s = rl_survivor(t, p, r);
	if (s < 0)
		return COLL_OK;   /* nothing to carry it: rl_need() reports the peer */
	rl_hdr h = {0};
	h.type = RH_REJOIN;
	h.seq = (uint32_t)r;
	h.slice = (uint16_t)step;
	h.cum = id;
	return rl_send_ctl_body(t, p, s, &h, rec, len);
}

static void rejoin_failed(rails_tp *t, rl_link *L, const char *keep)
{
	snprintf(L->why, sizeof L->why, "rejoining: %.180s", t->base.comm->err);
	snprintf(t->base.comm->err, sizeof t->base.comm->err, "%s", keep);
	L->rj_wait = 0;
}

int rl_on_rejoin(rails_tp *t, int p, int r, const rl_hdr *h, const uint8_t *body)
{
	coll_comm *c = t->base.comm;
	int rr = (int)h->seq;
	if (h->seq >= (uint32_t)t->nrails || rr == r || !t->rail[rr].ops->rail->rejoin_offer ||
	    !t->rail[rr].ops->rail->rejoin_accept || h->slice < 1 || h->slice > 3 || (h->slice == 2) != (p < t->rank))
		return rt_err(c, COLL_ERR_PROTOCOL, "rails: bad rejoin message from rank %d on %s", p, t->rail[r].name);
	const rt_rail_ops *ro = t->rail[rr].ops->rail;
	rt_tp *ct = t->rail[rr].tp;
	rl_link *L = rl_lk(t, p, rr);
	char keep[sizeof c->err];
	snprintf(keep, sizeof keep, "%s", c->err);
	int rc;
	switch (h->slice) {
	case 1: {
		if (L->up && (rc = rl_link_down(t, p, rr, 0, "rank %d rejoins it", p)))
			return rc;
		uint8_t mine[RL_REJOIN_BYTES];
		size_t n = 0;
		if (ro->rejoin_offer(ct, p, mine, sizeof mine, &n) || n > sizeof mine || ro->rejoin_accept(ct, p, body, h->len)) {
			rejoin_failed(t, L, keep);
			return COLL_OK;
		}
		L->rj_id = h->cum;
		L->rj_wait = 1;
		return send_rejoin(t, p, rr, 2, h->cum, mine, n);
	}
	case 2:
		if (L->up || !L->rj_wait || h->cum != L->rj_id)
			return COLL_OK;   /* stale */
		if (ro->rejoin_accept(ct, p, body, h->len)) {
			rejoin_failed(t, L, keep);
			return COLL_OK;
		}
		if ((rc = link_up(t, p, rr)))
			return rc;
		return send_rejoin(t, p, rr, 3, h->cum, NULL, 0);
	default:
		if (L->up || !L->rj_wait || h->cum != L->rj_id)
			return COLL_OK;
		return link_up(t, p, rr);
	}
}

/* The higher rank's side: offer again where it is time. */
int rl_rejoin_offers(rails_tp *t, int64_t now)
{
	for (int p = 0; p < t->rank; p++) {
		for (int r = 0; r < t->nrails; r++) {
			rl_link *L = rl_lk(t, p, r);
			const rt_rail_ops *ro = t->rail[r].ops->rail;
			if (L->up || !L->rj_next_ns || now < L->rj_next_ns || !ro->rejoin_offer)
				continue;
			L->rj_next_ns = now + (int64_t)RL_REJOIN_MS * 1000000;
			if (rl_survivor(t, p, r) < 0)
				continue;
			char keep[sizeof t->base.comm->err];
			snprintf(keep, sizeof keep, "%s", t->base.comm->err);
			uint8_t rec[RL_REJOIN_BYTES];
			size_t n = 0;
			if (ro->rejoin_offer(t->rail[r].tp, p, rec, sizeof rec, &n) || n > sizeof rec) {
				rejoin_failed(t, L, keep);
				continue;
			}
			L->rj_id++;
			L->rj_wait = 1;
			int rc = send_rejoin(t, p, r, 1, L->rj_id, rec, n);
			if (rc)
				return rc;
		}
	}
	return COLL_OK;
}

int rl_adopt_news(rails_tp *t)
{
	pthread_mutex_lock(&t->mu);
	rl_new *list = t->news;
	t->news = NULL;
	t->have_news = 0;
	pthread_mutex_unlock(&t->mu);
	int rc = COLL_OK;
	while (list) {
		rl_new *nw = list;
		list = nw->next;
		if (rc || nw->peer < 0 || nw->peer >= t->n || nw->peer == t->rank) {
			close(nw->fd);
			free(nw);
			continue;
		}
		int p = nw->peer, r = nw->rail;
		rl_link *L = rl_lk(t, p, r);
		if (L->up)
			rc = rl_link_down(t, p, r, 0, "rank %d reconnected it", p);
		rt_tp *c = t->rail[r].tp;
		t->ep_stale = 1;
		if (!rc && c->ops->rail->adopt(c, p, nw->fd, nw->sess) == COLL_OK) {
			rc = link_up(t, p, r);
			pthread_mutex_lock(&t->mu);
			t->want[p * t->nrails + r] = 0;
			pthread_mutex_unlock(&t->mu);
		} else if (!rc) {
			close(nw->fd);
		}
		free(nw);
	}
	return rc;
}
