/*
 * rails.c - one transport over several networks ("rails") at once: every
 * message is cut into byte ranges that travel over the rails a policy
 * chooses, each range is acknowledged by the receiver, and a rail that
 * fails is replaced by the others with nothing lost or applied twice.
 * The executor sees an ordinary transport (rt_transport "rails").
 *
 * Its rooms (runtime/transport/rails/), each calling only those below
 * it: this file is the transport itself (its ops, connect with the
 * latency probes, progress, policies and rails from strings, statistics);
 * recv.c takes what arrives on the links and hands it to the room it
 * concerns; split.c cuts each message over the rails and balances them;
 * failover.c finds links gone silent and brings failed links back;
 * wire.c, at the bottom, sends pieces and control messages on the links,
 * takes a link that fails down (its pieces again on a survivor) and
 * records what the acknowledgements measure.  rails_int.h is what they
 * share.
 *
 * Children.  Each rail is a transport of its own (tcp on one interface,
 * ibverbs on one port), opened through its rail ops (rt_rail_ops in
 * rt.h): connect(index, where), and for failover drop/adopt of one peer's
 * link and a thread-safe redial/reaccept that make a fresh one.  Every
 * child message starts with a 64-byte rl_hdr (a child sees it as its
 * header) and is one of
 *   DATA       a piece: bytes [off, off+len) of message seq, whose first
 *              piece carries the executor's header as its first 64 bytes
 *   ACK        to the sender of pieces: `cum` (every message below it
 *              arrived whole), `freed` (every message below it was handed
 *              to the executor and released: the sender may start messages
 *              below freed + RL_WINDOW), and optionally one piece (seq,
 *              slice) that arrived
 *   PROBE / PROBE_ACK   an echo of a clock: latency, and proof of life
 *   DOWN       "I dropped my link to you on rail r" (its incarnation in cum):
 *              the peer drops its end, if it is still that link
 *   REJOIN     a step of rejoining rail `seq` (its number in `slice`, the
 *              attempt in `cum`) with a record of `len` bytes, for rails
 *              that have nothing to dial (ibverbs; see failover.c)
 *
 * Tunables: COLL_RAIL_SLICE (most bytes of a piece, default 128 KiB);
 * COLL_RAIL_DEBUG=1 prints every link that goes down and why, and every
 * peer's sequence numbers, credit, slots and links at close (what a hang
 * looked like from here); 2 also rank 0's every fold (the balancer); 3
 * also rank 0's every sample (each rail's part of a split message and
 * when its last acknowledgement came); 4 also rank 0's every piece that
 * pull() hands out (the rail, and each link's drain and unacknowledged
 * bytes).
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rails_int.h"
#include "units.h"

extern const rt_transport rails_transport;

/* --- progress ------------------------------------------------------------- */

/* A child's error: which link, and is it only that link? */
static int child_error(rails_tp *t, int r, int rc)
{
	rt_tp *c = t->rail[r].tp;
	if (rc == rt_abort_code(rc) || rc == COLL_ERR_NOMEM || c->err_peer < 0 || c->err_peer >= t->n)
		return rc;   /* a peer aborted, or not one link's fault: the whole call */
	int p = c->err_peer;
	c->err_peer = -1;
	/* What arrived before the error is the peer's last word, often the
	 * acknowledgement it sent just before it closed: take it first, or a
	 * clean close reads as a peer gone with our messages. */
	int moved = 0;
	char why[sizeof t->base.comm->err];
	snprintf(why, sizeof why, "%s", t->base.comm->err);
	if (rl_lk(t, p, r)->up && (rc = rl_link_recv(t, p, r, &moved)))
		return rc;
	return rl_link_down(t, p, r, 1, "%s", why);
}

static int children(rails_tp *t, int timeout_ms);

/* One round of everything: the children's I/O (waiting up to wait_ms for
 * some), what arrived on every link, timers. */
static int pass(rails_tp *t, int *moved, int wait_ms)
{
	int rc;
	if (t->debug) {   /* a clock read per pass only when asked for */
		int64_t now0 = rt_now_ns();
		if (t->last_pass_ns && now0 - t->last_pass_ns > t->max_gap_ns)
			t->max_gap_ns = now0 - t->last_pass_ns;
		t->last_pass_ns = now0;
		t->npass++;
	}
	if (t->have_news && (rc = rl_adopt_news(t)))
		return rc;
	if ((rc = children(t, wait_ms)))
		return rc;
	int64_t now = rt_now_ns();
	for (int p = 0; p < t->n; p++) {
		if (p == t->rank)
			continue;
		for (int r = 0; r < t->nrails; r++) {
			rl_link *L = rl_lk(t, p, r);
			if (!L->up)
				continue;
			if ((rc = rl_link_recv(t, p, r, moved)))
				return rc;
			if (L->ctl)
				rl_ctl_reap(t, L);
			if (L->out) {
				int before = t->peer[p].head != NULL;
				rl_reap(t, p, r);
				*moved |= before && !t->peer[p].head;
			}
		}
		*moved |= rl_copied_out(t, p);
	}
	if (now < t->next_check_ns)
		return COLL_OK;
	t->next_check_ns = now + 2000000;
	t->nchecks++;
	for (int p = 0; p < t->n; p++) {
		rl_peer *pr = &t->peer[p];
		if (pr->ack_owed && now - pr->ack_owed_ns >= RL_ACK_DELAY_NS && (rc = rl_send_ack(t, p, pr->ack_rail, 0, -1)))
			return rc;
		if ((rc = rl_pump(t, p)) || (rc = rl_need(t, p)))
			return rc;
	}
	if ((rc = rl_rejoin_offers(t, now)))
		return rc;
	return rl_check_links(t, now);
}

/* Make t->ep's set the fds (and events) in pfd[0..np): add, change and
 * remove only what differs from the last pass, which in a run of small
 * messages is nothing (the links' receives stay posted; only a send the
 * kernel could not take at once adds POLLOUT for a while).  The set is
 * made afresh after a child's link was dropped or adopted: a closed fd
 * leaves an epoll set by itself, and its number may come back as
 * another socket's. */
static int ep_sync(rails_tp *t, int np)
{
	if (t->ep_stale && t->ep >= 0) {
		close(t->ep);
		t->ep = -1;
	}
	if (t->ep < 0) {
		if ((t->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
			return rt_err(t->base.comm, COLL_ERR_SYSTEM, "epoll_create1: %s", strerror(errno));
		for (int i = 0; i < t->nreg; i++)
			t->epfd[t->ep_reg[i]].ev = 0;
		t->nreg = 0;
		t->ep_stale = 0;
	}
	uint32_t pass = ++t->ep_pass;
	for (int i = 0; i < np; i++) {
		int fd = t->pfd[i].fd;
		if (fd >= t->nepfd) {
			int m = fd + 64;
			rl_epfd *e = realloc(t->epfd, (size_t)m * sizeof *e);
			if (!e)
				return rt_err(t->base.comm, COLL_ERR_NOMEM, "out of memory");
			memset(e + t->nepfd, 0, (size_t)(m - t->nepfd) * sizeof *e);
			t->epfd = e;
			t->nepfd = m;
		}
		t->epfd[fd].pass = pass;
		t->epfd[fd].at = i;
	}
	for (int i = 0; i < t->nreg;) {   /* out first: then the set never holds more than np */
		int fd = t->ep_reg[i];
		if (t->epfd[fd].pass == pass) {
			i++;
			continue;
		}
		epoll_ctl(t->ep, EPOLL_CTL_DEL, fd, NULL);
		t->epfd[fd].ev = 0;
		t->ep_reg[i] = t->ep_reg[--t->nreg];
	}
	for (int i = 0; i < np; i++) {
		int fd = t->pfd[i].fd;
		rl_epfd *e = &t->epfd[fd];
		uint32_t want = (uint16_t)t->pfd[i].events;   /* EPOLLIN == POLLIN, and so on, on Linux */
		if (e->ev == want)
			continue;
		struct epoll_event ev = {.events = want, .data.fd = fd};
		if (epoll_ctl(t->ep, e->ev ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) < 0)
			return rt_err(t->base.comm, COLL_ERR_SYSTEM, "epoll_ctl: %s", strerror(errno));
		if (!e->ev)
			t->ep_reg[t->nreg++] = fd;
		e->ev = want;
	}
	return COLL_OK;
}

/* The children's I/O: one wait over every child's fds, up to timeout_ms,
 * then each serves its part of the results, so that a pass costs one
 * system call however many rails there are (a child's own progress(0) is
 * a poll() each: with two rails, 10% on a 1 KiB allreduce).  The wait is
 * an epoll set, not poll(): poll() looks at every fd it is given, and the
 * links of a rail that carries nothing (the second rail while messages
 * are cold: every link keeps receives posted) made two rails cost a cold
 * 1 KiB allreduce at n = 8 on 2 cores about 7% over one, the extra time
 * all in the kernel's sock_poll/tcp_poll; an epoll wait costs what is
 * ready, whatever waits idle.  A child that cannot say what it waits on
 * makes every child progress() on its own, each given a share of the
 * wait. */
static int children(rails_tp *t, int timeout_ms)
{
	int np = 0, at[COLL_MAX_RAILS + 1], rc;
	for (int r = 0; r < t->nrails; r++) {
		const rt_rail_ops *ro = t->rail[r].ops->rail;
		int k = ro->pollfds && ro->serve ? ro->pollfds(t->rail[r].tp, t->pfd + np, t->pfd_cap - np) : -1;
		if (k < 0) {
			int each = timeout_ms / t->nrails;
			for (int s = 0; s < t->nrails; s++) {
				rt_tp *c = t->rail[s].tp;
				if ((rc = c->ops->progress(c, each)) && (rc = child_error(t, s, rc)))
					return rc;
			}
			return COLL_OK;
		}
		at[r] = np;
		np += k;
	}
	at[t->nrails] = np;
	if ((rc = ep_sync(t, np)))
		return rc;
	int k = epoll_wait(t->ep, t->evs, t->pfd_cap, timeout_ms);
	if (k < 0 && errno != EINTR)
		return rt_err(t->base.comm, COLL_ERR_SYSTEM, "epoll_wait: %s", strerror(errno));
	if (k <= 0)
		return COLL_OK;
	for (int i = 0; i < np; i++)
		t->pfd[i].revents = 0;
	for (int i = 0; i < k; i++)
		t->pfd[t->epfd[t->evs[i].data.fd].at].revents = (short)t->evs[i].events;
	for (int r = 0; r < t->nrails; r++) {
		rt_tp *c = t->rail[r].tp;
		if ((rc = t->rail[r].ops->rail->serve(c, t->pfd + at[r], at[r + 1] - at[r])) && (rc = child_error(t, r, rc)))
			return rc;
	}
	return COLL_OK;
}

static int rl_progress(rt_tp *tp, int timeout_ms)
{
	rails_tp *t = (rails_tp *)tp;
	int moved = 0, rc;
	if (t->fatal)
		return rt_err(tp->comm, t->fatal, "%s", tp->comm->err[0] ? tp->comm->err : "rails: failed earlier");
	if ((rc = pass(t, &moved, 0)) || moved || timeout_ms <= 0)
		return rc;
	for (int64_t until = rt_now_ns() + t->spin_ns; t->spin_ns > 0 && rt_now_ns() < until;)
		if ((rc = pass(t, &moved, 0)) || moved)
			return rc;
	/* Wake for our own timers: delayed acknowledgements, failover checks,
	 * and links the rejoin thread made. */
	int wait = timeout_ms < RL_ACK_DELAY_NS / 1000000 ? timeout_ms : RL_ACK_DELAY_NS / 1000000;
	return pass(t, &moved, wait);
}

/* --- the transport's ops -------------------------------------------------- */

static int rl_post_send(rt_tp *tp, rt_req *req)
{
	rails_tp *t = (rails_tp *)tp;
	size_t len = 0;
	for (int i = 0; i < req->iovcnt; i++)
		len += req->iov[i].iov_len;
	if (req->peer < 0 || req->peer >= t->n || req->peer == t->rank || len > tp->max_msg || len < sizeof(rt_hdr) ||
	    req->iovcnt < 1 || req->iovcnt > 2 || (req->iovcnt == 2 && req->iov[0].iov_len != sizeof(rt_hdr)))
		return rt_err(tp->comm, COLL_ERR_INVALID, "rails: bad send (%zu bytes to rank %d)", len, req->peer);
	int p = req->peer;
	rl_peer *pr = &t->peer[p];
	/* Pieces cut() may make: each rail's part in slices (and one piece
	 * more for the 64-byte rule), or a message that may be pulled in up
	 * to RL_PULL_PIECES (start()).  Only such a message gets room for
	 * those: the piece array is zeroed on every send, a small one's
	 * included. */
	size_t cap = len / t->slice + (size_t)t->nrails + 2 + (len >= RL_PULL_BYTES ? RL_PULL_PIECES : 0);
	int copy = len <= RL_COPY_BYTES;
	rl_msg *m = calloc(1, sizeof *m + cap * sizeof(rl_piece) + (copy ? len : 0));
	if (!m)
		return rt_err(tp->comm, COLL_ERR_NOMEM, "out of memory");
	m->cap = (int)cap;
	m->seq = pr->next_seq++;
	m->total = (uint32_t)len;
	m->req = req;
	req->done = 0;
	if (copy) {   /* done once the child has written every piece (copied_out) */
		m->copy = (char *)&m->p[cap];
		rl_gather(m->copy, req);
	}
	if (pr->tail)
		pr->tail->next = m;
	else
		pr->head = m;
	pr->tail = m;
	int rc = rl_pump(t, p);
	if (!rc)
		rl_copied_out(t, p);
	return rc ? rc : rl_need(t, p);
}

static int rl_post_recv(rt_tp *tp, rt_req *req)
{
	rails_tp *t = (rails_tp *)tp;
	if (req->peer < 0 || req->peer >= t->n || req->peer == t->rank)
		return rt_err(tp->comm, COLL_ERR_INVALID, "rails: bad receive from rank %d", req->peer);
	req->done = 0;
	rt_reqq_push(&t->peer[req->peer].xrq, req);
	rl_deliver(t, req->peer);
	return rl_need(t, req->peer);
}

static void rl_release(rt_tp *tp, rt_req *req)
{
	rails_tp *t = (rails_tp *)tp;
	rl_slot *s = req->tpbuf;
	req->tpbuf = req->data = NULL;
	if (!s)
		return;
	rl_peer *pr = &t->peer[req->peer];
	s->state = SL_REL;
	for (;;) {
		rl_slot *f = &pr->slot[pr->freed % RL_WINDOW];
		if (f->state != SL_REL || f->seq != pr->freed)
			break;
		f->state = SL_FREE;
		pr->freed++;
	}
	rl_maybe_credit(t, req->peer);   /* an error here shows at the next progress */
}

static void rl_abort(rt_tp *tp, int code)
{
	rails_tp *t = (rails_tp *)tp;
	t->aborted = 1;
	for (int r = 0; r < t->nrails; r++)
		if (t->rail[r].tp)
			t->rail[r].tp->ops->abort(t->rail[r].tp, code);
}

/* COLL_RAIL_DEBUG=1: the state of every peer, printed at close. */
static void rl_dump(rails_tp *t)
{
	fprintf(stderr, "rails %d: %llu passes, %llu checks, longest gap between passes %.1f ms, fatal %d\n", t->rank,
	        (unsigned long long)t->npass, (unsigned long long)t->nchecks, t->max_gap_ns / 1e6, t->fatal);
	for (int r = 0; r < t->nrails; r++)
		fprintf(stderr, "rails %d: rail %d latency %.1f us, %llu bytes sent\n", t->rank, r, t->rail[r].lat_ns / 1e3,
		        (unsigned long long)t->rail[r].bytes);
	for (int p = 0; p < t->n; p++) {
		if (p == t->rank)
			continue;
		rl_peer *pr = &t->peer[p];
		int nm = 0, ns = 0;
		for (rl_msg *m = pr->head; m; m = m->next)
			nm++, ns += m->started;
		fprintf(stderr, "rails %d->%d: next_seq %u credit %u msgs %d started %d | expect %u freed %u cum %u "
		        "highest %u credit_sent %u ack_owed %d xrq %d\n", t->rank, p, pr->next_seq, pr->credit, nm, ns,
		        pr->expect, pr->freed, pr->cum, pr->highest, pr->credit_sent, pr->ack_owed, pr->xrq.head != NULL);
		for (int r = 0; r < t->nrails; r++) {
			rl_link *L = rl_lk(t, p, r);
			int no = 0, na = 0;
			for (rl_piece *pc = L->out; pc; pc = pc->lnext)
				no++, na += pc->acked;
			fprintf(stderr, "  rail %d: up %d out %d acked %d busy %d rhead %d done %d%d%d%d\n", r, L->up, no, na,
			        L->busy, L->rhead, L->rq[0].done, L->rq[1].done, L->rq[2].done, L->rq[3].done);
		}
		for (int i = 0; i < RL_WINDOW; i++)
			fprintf(stderr, "  slot %d: state %d seq %u have %llx/%u\n", i, pr->slot[i].state, pr->slot[i].seq,
			        (unsigned long long)pr->slot[i].have, pr->slot[i].nslices);
	}
}

/* Is a control message to p still queued on a rail that is up? */
static int ctl_queued(rails_tp *t, int p)
{
	for (int r = 0; r < t->nrails; r++) {
		rl_link *L = rl_lk(t, p, r);
		if (L->up && L->ctl)
			return 1;
	}
	return 0;
}

/* A message the executor sent is ours until it is acknowledged (small
 * ones complete at once, in our queue), so before the links close they
 * keep going until every message is acknowledged, every rail to its peer
 * is down, or the communicator's timeout (10 s without one) passes: a
 * rank that finishes first must not take its last messages with it.
 * The peers are flushing too, waiting for our acknowledgements, so the
 * ones we owe go out now rather than after RL_ACK_DELAY_NS, and we stay
 * until they are written: a rank that closed with an acknowledgement
 * owed left its peer to see every rail go down with messages still
 * unacknowledged (COLL_ERR_PEER at teardown, after a clean run). */
static void flush(rails_tp *t)
{
	int64_t ms = t->base.comm->timeout_ms > 0 ? t->base.comm->timeout_ms : 10000;
	int64_t end = rt_now_ms() + ms;
	while (!t->fatal && !t->aborted && rt_now_ms() < end) {
		int pending = 0;
		for (int p = 0; p < t->n; p++) {
			rl_peer *pr = &t->peer[p];
			if (p == t->rank || !rl_alive_rails(t, p))
				continue;
			if (pr->ack_owed && rl_send_ack(t, p, pr->ack_rail, 0, -1))
				return;
			pending |= pr->head || ctl_queued(t, p);
		}
		if (!pending)
			break;
		int moved = 0;
		if (pass(t, &moved, 1))
			break;
	}
}

static void rl_close(rt_tp *tp)
{
	rails_tp *t = (rails_tp *)tp;
	if (!t)
		return;
	if (t->connected)
		flush(t);
	if (t->peer && t->debug)
		rl_dump(t);
	if (t->thr_on) {
		pthread_mutex_lock(&t->mu);
		t->stop = 1;
		pthread_mutex_unlock(&t->mu);
		uint64_t one = 1;
		if (write(t->wake_fd, &one, sizeof one) < 0) {
			/* it notices stop within its poll timeout */
		}
		pthread_join(t->thr, NULL);
	}
	for (int r = 0; r < t->nrails; r++)
		if (t->rail[r].tp)
			t->rail[r].tp->ops->close(t->rail[r].tp);
	for (int p = 0; t->peer && p < t->n; p++) {
		rl_peer *pr = &t->peer[p];
		while (pr->head) {
			rl_msg *m = pr->head;
			pr->head = m->next;
			rl_msg_free(m);
		}
		for (int i = 0; i < RL_WINDOW; i++)
			free(pr->slot[i].buf);
		for (int r = 0; pr->link && r < t->nrails; r++)
			for (rl_ctl *k = pr->link[r].ctl, *nx; k; k = nx) {
				nx = k->next;
				free(k);
			}
		free(pr->link);
	}
	while (t->free_ctl) {
		rl_ctl *k = t->free_ctl;
		t->free_ctl = k->next;
		free(k);
	}
	while (t->news) {
		rl_new *nw = t->news;
		t->news = nw->next;
		close(nw->fd);
		free(nw);
	}
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	if (t->mu_on)
		pthread_mutex_destroy(&t->mu);
	if (t->ep >= 0)
		close(t->ep);
	free(t->epfd);
	free(t->ep_reg);
	free(t->evs);
	free(t->want);
	free(t->pfd);
	free(t->discard);
	free(t->peer);
	free(t);
}

/* --- policy and rails from strings ---------------------------------------- */

/* "64KiB", "1M", "4096": bytes (the units of units.def), -1 when not a size. */
static int64_t parse_size(const char *s, size_t len)
{
	char buf[32];
	if (len == 0 || len >= sizeof buf)
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	double v;
	bool given;
	link_error err;
	if (units_read(UNIT_SIZE, "size", NULL, buf, &v, &given, &err) || v < 0 || v > 9e18)
		return -1;
	return (int64_t)v;
}

/* "200ms", "0.2s", "200" (milliseconds): whole milliseconds, -1 when not
 * a time. */
static long parse_ms(const char *v)
{
	double t;
	bool given;
	link_error err;
	if (units_read(UNIT_TIME, "time", NULL, v, &t, &given, &err))
		return -1;
	double ms = given ? t * 1e3 : t;
	ms = nearbyint(ms * 1e6) / 1e6;   /* 0.2s is 200 ms, whatever the rounding of 0.2 */
	return ms >= 0 && ms <= 1e9 && ms == floor(ms) ? (long)ms : -1;
}

int rt_policy_parse(const char *s, coll_rail_policy *pol, char *why, size_t whylen)
{
	static const char *const keys[] = {"cold", "split", "rebalance", "tolerance", "failover"};
	unsigned seen = 0;
	while (s && *s) {
		size_t len = strcspn(s, ",");
		const char *eq = memchr(s, '=', len);
		if (!eq) {
			snprintf(why, whylen, "'%.*s' is not key=value", (int)len, s);
			return -1;
		}
		size_t kl = (size_t)(eq - s), vl = len - kl - 1;
		const char *v = eq + 1;
		char val[64];
		snprintf(val, sizeof val, "%.*s", (int)(vl < sizeof val ? vl : sizeof val - 1), v);
		char *end;
		/* a key given twice is a mistake, not a wish for the last one */
		for (unsigned k = 0; k < sizeof keys / sizeof keys[0]; k++)
			if (kl == strlen(keys[k]) && strncmp(s, keys[k], kl) == 0) {
				if (seen & (1u << k)) {
					snprintf(why, whylen, "%s is given twice", keys[k]);
					return -1;
				}
				seen |= 1u << k;
			}
		if (kl == 4 && strncmp(s, "cold", 4) == 0) {
			if (strcmp(val, "auto") == 0)
				pol->cold_bytes = COLL_COLD_AUTO;
			else if (strcmp(val, "always") == 0)
				pol->cold_bytes = COLL_COLD_ALWAYS;
			else if ((pol->cold_bytes = parse_size(v, vl)) < 0)
				goto bad;
		} else if (kl == 5 && strncmp(s, "split", 5) == 0) {
			static const char *const splits[] = {
#define COLL_SPLIT(id, name, what) name,
#include "coll_splits.def"
#undef COLL_SPLIT
			};
			int k = 0;
			while (k < COLL_NSPLITS && strcmp(val, splits[k]) != 0)
				k++;
			if (k == COLL_NSPLITS)
				goto bad;
			pol->split = k;
		} else if (kl == 9 && strncmp(s, "rebalance", 9) == 0) {
			long k = strtol(val, &end, 10);
			if (*end || end == val || k < 1 || k > 1000000)
				goto bad;
			pol->rebalance_calls = (int32_t)k;
		} else if (kl == 9 && strncmp(s, "tolerance", 9) == 0) {
			double x = strtod(val, &end);
			if (*end || end == val || !isfinite(x) || !(x == 0 || x >= 1))
				goto bad;
			pol->tolerance = x;
		} else if (kl == 8 && strncmp(s, "failover", 8) == 0) {
			long ms = parse_ms(val);
			if (ms < 10 || ms > 600000)
				goto bad;
			pol->failover_ms = (int32_t)ms;
		} else {
			snprintf(why, whylen, "unknown policy key '%.*s' (expected cold, split, rebalance, tolerance, failover)",
			         (int)kl, s);
			return -1;
		}
		s += len + (s[len] == ',');
		continue;
	bad:
		snprintf(why, whylen, "bad value '%s' for %.*s", val, (int)kl, s);
		return -1;
	}
	return 0;
}

/* --- connect -------------------------------------------------------------- */

/* Every rank probes every link RL_PROBES times and answers every peer's
 * probes; it leaves when both are done and its answers are on their way,
 * so nobody waits for a rank that has left. */
static int measure(rails_tp *t)
{
	coll_comm *c = t->base.comm;
	int rc;
	for (int k = 0; k < RL_PROBES; k++) {
		int64_t now = rt_now_ns();
		for (int p = 0; p < t->n; p++)
			for (int r = 0; p != t->rank && r < t->nrails; r++) {
				rl_hdr h = {0};
				h.type = RH_PROBE;
				h.stamp = now;
				if ((rc = rl_send_ctl(t, p, r, &h)))
					return rc;
			}
		for (;;) {
			int done = 1;
			for (int p = 0; p < t->n && done; p++) {
				if (p == t->rank)
					continue;
				if (k == RL_PROBES - 1 && t->peer[p].probes_answered < RL_PROBES * t->nrails)
					done = 0;
				for (int r = 0; r < t->nrails && done; r++)
					if (rl_lk(t, p, r)->lat_n <= k || (k == RL_PROBES - 1 && rl_lk(t, p, r)->ctl))
						done = 0;
			}
			if (done)
				break;
			if (rt_now_ms() > c->boot.deadline_ms)
				return rt_err(c, COLL_ERR_TIMEOUT, "rails: latency probes unanswered at the bootstrap deadline");
			if ((rc = rl_progress(&t->base, 10)))
				return rc;
		}
	}
	/* A rail's latency: the median over peers of the best round trip, halved. */
	for (int r = 0; r < t->nrails; r++) {
		int64_t v[t->n];
		int m = 0;
		for (int p = 0; p < t->n; p++) {
			if (p == t->rank)
				continue;
			rl_link *L = rl_lk(t, p, r);
			int64_t best = INT64_MAX;
			for (int i = 0; i < L->lat_n; i++)
				if (L->lat_min[i] < best)
					best = L->lat_min[i];
			int j = m++;
			while (j > 0 && v[j - 1] > best)
				v[j] = v[j - 1], j--;
			v[j] = best;
		}
		t->rail[r].lat_ns = m ? (double)v[m / 2] / 2 : 0;
	}
	return COLL_OK;
}

int rt_rails_connect(coll_comm *c, const char *spec, const coll_rail_policy *pol, rt_tp **out)
{
	const rt_transport *tr[COLL_MAX_RAILS];
	char names[COLL_MAX_RAILS][64], where[COLL_MAX_RAILS][64];
	const char *np[COLL_MAX_RAILS], *wp[COLL_MAX_RAILS];
	int k = 0;
	*out = NULL;
	/* "tcp:eth0,tcp:eth1,ibverbs:mlx5_0:1" */
	for (const char *s = spec; *s;) {
		size_t len = strcspn(s, ",");
		if (k == COLL_MAX_RAILS)
			return rt_err(c, COLL_ERR_INVALID, "rails: more than %d rails in '%s'", COLL_MAX_RAILS, spec);
		if (len >= sizeof names[k])
			return rt_err(c, COLL_ERR_INVALID, "rails: rail '%.*s' is too long", (int)len, s);
		snprintf(names[k], sizeof names[k], "%.*s", (int)len, s);
		/* one network named twice would be striped over as if it were two */
		for (int j = 0; j < k; j++)
			if (strcmp(names[j], names[k]) == 0)
				return rt_err(c, COLL_ERR_INVALID, "rails: rail '%s' is given twice in '%s'", names[k], spec);
		char tname[64];
		size_t tl = strcspn(names[k], ":");
		snprintf(tname, sizeof tname, "%.*s", (int)tl, names[k]);
		snprintf(where[k], sizeof where[k], "%s", names[k][tl] ? names[k] + tl + 1 : "");
		if (!tname[0])
			return rt_err(c, COLL_ERR_INVALID, "rails: empty rail in '%s' (expected TRANSPORT[:WHERE],...)", spec);
		if (!(tr[k] = rt_transport_find(c, tname)) && rt_transport_registered(tname))
			return COLL_ERR_TRANSPORT;   /* its plugin would not load: said why */
		if (!tr[k])
			return rt_err(c, COLL_ERR_TRANSPORT, "rails: unknown transport '%s' in rail '%s' (expected %s)", tname,
			              names[k], rt_transport_names());
		np[k] = names[k];
		wp[k] = where[k][0] ? where[k] : NULL;
		k++;
		s += len + (s[len] == ',');
	}
	if (k == 0)
		return rt_err(c, COLL_ERR_INVALID, "rails: no rails in '%s'", spec);
	return rt_rails_open(c, k, tr, np, wp, pol, out);
}

int rt_rails_open(coll_comm *c, int nrails, const rt_transport *const *tr, const char *const *names,
                  const char *const *where, const coll_rail_policy *pol, rt_tp **out)
{
	rails_tp *t = calloc(1, sizeof *t);
	if (!t)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	*out = &t->base;
	t->base.ops = &rails_transport;
	t->base.comm = c;
	t->base.err_peer = -1;
	t->debug = (int)rt_env_long("COLL_RAIL_DEBUG", 0);
	t->base.send_window = RL_WINDOW;
	t->base.recv_window = RL_RWIN;
	t->rank = c->rank;
	t->n = c->n;
	t->wake_fd = -1;
	t->ep = -1;
	t->pol = *pol;
	int rc;
	for (int k = 0; k < nrails; k++) {
		rl_rail *R = &t->rail[k];
		snprintf(R->name, sizeof R->name, "%s", names[k]);
		if (!tr[k]->rail || !tr[k]->rail->connect || !tr[k]->rail->drop || !tr[k]->rail->adopt)
			return rt_err(c, COLL_ERR_TRANSPORT, "rails: transport %s cannot be a rail (it has no rail operations)",
			              tr[k]->name);
		R->ops = tr[k];
		if ((rc = tr[k]->rail->connect(c, k, where[k], &R->tp))) {
			char why[sizeof c->err];
			snprintf(why, sizeof why, "%s", c->err);
			return rt_err(c, rc, "rail %s: %s", R->name, why);
		}
		R->tp->err_peer = -1;
		const rt_transport_entry *row = rt_transport_row(tr[k]->name);
		if (row && row->round_order)   /* in round order where any rail shares links */
			t->base.round_order = 1;
		t->nrails++;
	}
	size_t maxmsg = SIZE_MAX;
	int nfds = 0;
	for (int r = 0; r < t->nrails; r++) {
		if (t->rail[r].tp->max_msg < maxmsg)
			maxmsg = t->rail[r].tp->max_msg;
		nfds += t->n;
	}
	if (maxmsg < 2 * sizeof(rl_hdr) + 4096)
		return rt_err(c, COLL_ERR_TRANSPORT, "rails: a rail's messages are too small (%zu bytes)", maxmsg);
	t->base.max_msg = maxmsg - sizeof(rl_hdr);
	long slice = rt_env_long("COLL_RAIL_SLICE", 128 << 10);
	size_t lo = t->base.max_msg / (RL_MAXPIECES - 2 * COLL_MAX_RAILS) + 1;
	t->slice = slice < 4096 ? 4096 : (size_t)slice;
	if (t->slice < lo)
		t->slice = lo;
	if (t->slice > t->base.max_msg)
		t->slice = t->base.max_msg;
	t->spin_ns = rt_spin_ns(c, "COLL_TCP_SPIN_US");
	t->pfd_cap = nfds + 1;
	t->peer = calloc((size_t)t->n, sizeof *t->peer);
	t->pfd = calloc((size_t)t->pfd_cap, sizeof *t->pfd);
	t->ep_reg = calloc((size_t)t->pfd_cap, sizeof *t->ep_reg);
	t->evs = calloc((size_t)t->pfd_cap, sizeof *t->evs);
	t->discard = malloc(RT_STAGE_BYTES);
	t->want = calloc((size_t)t->n * (size_t)t->nrails, 1);
	if (!t->peer || !t->pfd || !t->ep_reg || !t->evs || !t->discard || !t->want)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&t->mu, NULL);
	t->mu_on = 1;
	int64_t now = rt_now_ns();
	for (int p = 0; p < t->n; p++) {
		rl_peer *pr = &t->peer[p];
		pr->credit = pr->credit_sent = RL_WINDOW;
		if (!(pr->link = calloc((size_t)t->nrails, sizeof *pr->link)))
			return rt_err(c, COLL_ERR_NOMEM, "out of memory");
		for (int r = 0; p != t->rank && r < t->nrails; r++) {
			rl_link *L = &pr->link[r];
			L->up = 1;
			L->last_ack_ns = now;
			L->rd_slot = -1;
			rt_tp *ct = t->rail[r].tp;
			for (int i = 0; i < RL_RWIN; i++) {
				L->rq[i].peer = p;
				if ((rc = ct->ops->post_recv(ct, &L->rq[i])))
					return rc;
			}
		}
	}
	t->cold = t->pol.cold_bytes == COLL_COLD_AUTO ? RL_COLD_DEFAULT
	        : t->pol.cold_bytes == COLL_COLD_ALWAYS ? UINT64_MAX : (uint64_t)t->pol.cold_bytes;
	for (int k = 0; k < RL_NCLASS; k++)
		rl_shares(t, &t->cls[k]);
	if (t->n > 1 && (rc = measure(t)))
		return rc;
	if (t->pol.split == COLL_SPLIT_LATENCY)
		for (int k = 0; k < RL_NCLASS; k++)
			rl_shares(t, &t->cls[k]);
	t->bal_seq = c->seq;
	if ((t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return rt_err(c, COLL_ERR_SYSTEM, "eventfd: %s", strerror(errno));
	if (t->nrails > 1 && t->n > 1) {
		if (pthread_create(&t->thr, NULL, rl_rejoin_main, t) != 0)
			return rt_err(c, COLL_ERR_SYSTEM, "rails: cannot start the rejoin thread");
		t->thr_on = 1;
	}
	t->connected = 1;
	return COLL_OK;
}

/* --- statistics ----------------------------------------------------------- */

int rt_rails_stats(rt_tp *tp, coll_rail_info *out)
{
	if (!tp || tp->ops != &rails_transport)
		return COLL_ERR_UNSUPPORTED;
	rails_tp *t = (rails_tp *)tp;
	memset(out, 0, sizeof *out);
	out->nrails = t->nrails;
	uint64_t all = 0;
	for (int r = 0; r < t->nrails; r++)
		all += t->rail[r].bytes;
	for (int r = 0; r < t->nrails; r++) {
		rl_rail *R = &t->rail[r];
		coll_rail_stat *o = &out->rail[r];
		snprintf(o->name, sizeof o->name, "%s", R->name);
		for (int p = 0; p < t->n; p++)
			o->peers_down += p != t->rank && !rl_lk(t, p, r)->up;
		o->bytes = R->bytes;
		o->resent_bytes = R->resent;
		o->share = all ? (double)R->bytes / (double)all : 0;
		o->latency_us = R->lat_ns / 1e3;
		o->mbytes_s = rl_rail_rate(t, r) * 1e3;
		o->failovers = R->failovers;
		o->rejoins = R->rejoins;
	}
	out->cold_bytes = t->cold;
	out->failovers = t->failovers;
	out->rejoins = t->rejoins;
	out->last_detect_ms = t->last_detect_ms;
	out->last_reroute_ms = t->last_reroute_ms;
	out->max_reroute_ms = t->max_reroute_ms;
	for (int k = 0; k < RL_NCLASS && out->nsizes < COLL_RAIL_SIZES; k++) {
		if (!t->cls[k].used)
			continue;
		int best = 0;
		for (int r = 1; r < t->nrails; r++)
			if (rl_lower_latency(t, r, best))
				best = r;
		out->size[out->nsizes].bytes = 1ull << k;
		out->size[out->nsizes].cold = (1ull << k) < t->cold;
		out->size[out->nsizes].rebalanced = t->cls[k].samples;
		for (int r = 0; r < t->nrails; r++)
			out->size[out->nsizes].share[r] = (1ull << k) < t->cold ? r == best : t->cls[k].share[r];
		out->nsizes++;
	}
	return COLL_OK;
}

const rt_transport rails_transport = {
	.name = "rails",
	.size = sizeof(rt_transport),
	.connect = NULL,   /* made by rt_rails_connect from a rail list */
	.post_send = rl_post_send,
	.post_recv = rl_post_recv,
	.release = rl_release,
	.progress = rl_progress,
	.abort = rl_abort,
	.close = rl_close,
};
