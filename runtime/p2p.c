/*
 * p2p.c - point-to-point messages on a communicator: coll_isend,
 * coll_irecv, coll_test, coll_wait, coll_waitall, coll_send, coll_recv
 * (coll.h).  What torch's send/recv/isend/irecv/batch_isend_irecv and its
 * gather, scatter and uneven all_to_all_single run on.
 *
 * Wire: a message is one or more transport messages (fragments), each an
 * rt_hdr of kind RT_KIND_P2P and its payload: root = tag, count = the
 * message's bytes, round = the message's number on the sender->receiver
 * stream, chunk = the fragment's index, seg = the fragment count, seq =
 * the collectives the sender had started when it sent (exec.c uses it to
 * tell a message sent before a collective, which the receiver can never
 * take in time, from one sent after).  Transports keep each peer's
 * messages in order (rt.h), so a message's fragments arrive together and
 * in order.
 *
 * Matching is MPI's: a receive takes the first message from its peer with
 * its tag, in the order they were sent; messages that arrive before their
 * receive is posted, or while an earlier receive with another tag is
 * waiting, are kept (copied to the heap) until one asks.  Sizes must agree
 * exactly: a message of another size fails the receive that matched it
 * (COLL_ERR_MISMATCH, naming both sizes), and is consumed.
 *
 * Messages and collectives share the per-peer stream: between two ranks,
 * point-to-point messages and collective calls must come in the same order
 * on both (see coll.h).  To keep a posted receive from ever taking a
 * collective's message, a receive is handed to the transport only once the
 * next message from that peer has arrived and is a point-to-point one
 * (tp->peek), or by a blocking wait for it (coll_wait, coll_waitall),
 * which returns only after that receive completed, so that the transport's
 * own wait can end when the message comes; transports without peek (rails,
 * the plugins) hand every receive over at once, and there no collective
 * may start while a receive is pending.  Receives waiting on peek are not
 * known to the transport, so a wait for them polls (see progress).  A
 * blocking wait whose peer is inside a collective call this rank has not
 * joined fails at once with COLL_ERR_MISMATCH: that peer sends nothing
 * else until this rank joins the call, so waiting could only hang.
 *
 * Sends take the caller's buffer (no copy): it must stay valid and
 * unchanged until the request completes.  Requests not waited for are
 * dropped by coll_finalize.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

struct coll_request {
	coll_request *next;        /* the communicator's active requests, in posting order */
	int send, peer, tag;
	char *buf;
	uint64_t bytes;
	int state;                 /* 0 pending, 1 matched (recv), 2 finished */
	coll_result rc;            /* when finished */
	rt_req *frags;             /* send: one transport request per fragment */
	uint32_t nfrag;
};

/* A message arriving (or kept): where its fragments go. */
typedef struct rt_p2p_msg {
	struct rt_p2p_msg *next;   /* the peer's kept messages, in arrival order */
	int tag;
	uint64_t bytes, got;       /* its size; payload bytes received so far */
	uint32_t nfrag, frag;      /* fragments: in all, next due */
	char *heap;                /* kept (no receive yet) or the wrong size: the bytes */
	coll_request *req;         /* the receive it fills, or NULL */
} rt_p2p_msg;

typedef struct {
	uint32_t sent, rcvd;       /* messages sent to / started from this peer */
	rt_req in;                 /* the transport receive in flight */
	int posted;                /* in is with the transport */
	int busy;                  /* in rt_p2p.busy */
	rt_p2p_msg *cur;           /* the message whose fragments are arriving */
	rt_p2p_msg *kept, **kept_tail;
} rt_p2p_peer;

/* A pass looks only at the peers with something to do, so that its cost
 * follows the requests, not the communicator's size: per pass, peers are
 * marked with a fresh generation number instead of clearing n flags. */
struct rt_p2p {
	coll_request *reqs, **tail;
	rt_p2p_peer *peers;        /* n entries */
	uint32_t *direct;          /* == dgen: a blocking wait waits for this peer's message */
	uint32_t *want;            /* == gen: a receive from this peer is pending */
	uint32_t *listed;          /* == gen: in list */
	int *list, *busy;          /* this pass's peers; peers with a receive posted or a message half here */
	int nbusy;
	uint32_t gen, dgen;
};

static rt_p2p *state(coll_comm *c)
{
	if (c->p2p)
		return c->p2p;
	rt_p2p *p = calloc(1, sizeof *p);
	size_t n = (size_t)c->n;
	if (!p || !(p->peers = calloc(n, sizeof *p->peers)) || !(p->direct = calloc(n, sizeof *p->direct)) ||
	    !(p->want = calloc(n, sizeof *p->want)) || !(p->listed = calloc(n, sizeof *p->listed)) ||
	    !(p->list = calloc(n, sizeof *p->list)) || !(p->busy = calloc(n, sizeof *p->busy))) {
		if (p) {
			free(p->peers);
			free(p->direct);
			free(p->want);
			free(p->listed);
			free(p->list);
		}
		free(p);
		return NULL;
	}
	p->tail = &p->reqs;
	for (int r = 0; r < c->n; r++)
		p->peers[r].kept_tail = &p->peers[r].kept;
	return c->p2p = p;
}

/* Payload bytes per fragment: the executor's segment (what one transport
 * message carries, or COLL_SEG_BYTES); at most 128 KiB over a transport
 * that holds whole messages in its own memory (no read(): shm), where
 * smaller pieces let the receiver copy one out while the sender copies the
 * next in.  Over shm on the 2-core development VM (rt_p2p bench,
 * 2026-12-02) one 256 KiB message took 52-58 us in one 256 KiB slot and
 * 13.9 us as two fragments of 128 KiB (64 KiB: 13.4 us, but 2 MiB and
 * 16 MiB took 94 and 930 us against 128 KiB's 82 and 721).  Over tcp,
 * which streams, the cap only added headers: 2 MiB 293 -> 332 us. */
static uint64_t frag_bytes(const coll_comm *c)
{
	uint64_t m = c->seg_bytes ? c->seg_bytes : 1, cap = (uint64_t)128 << 10;
	return !c->tp->ops->read && m > cap ? cap : m;
}

static void finish(coll_request *q, coll_result rc)
{
	if (q->state != 2)
		q->state = 2, q->rc = rc;
}

static void msg_free(rt_p2p_msg *m)
{
	if (m) {
		free(m->heap);
		free(m);
	}
}

static int check_args(coll_comm *c, const char *fn, const void *buf, size_t count, coll_dtype dt, int peer, int tag,
                      coll_request **req, uint64_t *bytes)
{
	if (!c || !req)
		return rt_err(c, COLL_ERR_INVALID, "%s: NULL %s", fn, c ? "request pointer" : "communicator");
	*req = NULL;
	if (c->broken)
		return rt_err(c, COLL_ERR_ABORTED, "%s: communicator failed earlier", fn);
	if (peer < 0 || peer >= c->n || peer == c->rank)
		return rt_err(c, COLL_ERR_INVALID, "%s: peer %d is not another rank of this communicator (0..%d, not %d)", fn,
		              peer, c->n - 1, c->rank);
	if (tag < 0)
		return rt_err(c, COLL_ERR_INVALID, "%s: tag %d: tags are 0 or more", fn, tag);
	size_t esz = coll_dtype_size(dt);
	if (!esz)
		return rt_err(c, COLL_ERR_INVALID, "%s: unknown dtype %d", fn, (int)dt);
	if (count > UINT64_MAX / esz / 2)
		return rt_err(c, COLL_ERR_INVALID, "%s: count %zu is too large", fn, count);
	if (count && !buf)
		return rt_err(c, COLL_ERR_INVALID, "%s: NULL buffer with count %zu", fn, count);
	if (!c->tp)
		return rt_err(c, COLL_ERR_INVALID, "%s: the communicator has no transport", fn);
	*bytes = (uint64_t)count * esz;
	return COLL_OK;
}

static coll_request *new_req(coll_comm *c, rt_p2p *p, int send, void *buf, uint64_t bytes, int peer, int tag)
{
	coll_request *q = calloc(1, sizeof *q);
	if (!q) {
		rt_err(c, COLL_ERR_NOMEM, "out of memory");
		return NULL;
	}
	q->send = send, q->peer = peer, q->tag = tag, q->buf = buf, q->bytes = bytes;
	*p->tail = q;
	p->tail = &q->next;
	return q;
}

static void unlink_req(rt_p2p *p, coll_request *q)
{
	for (coll_request **pp = &p->reqs; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			if (p->tail == &q->next)
				p->tail = pp;
			return;
		}
}

/* The communicator is out of step with its peers: every pending request
 * fails, and the peers are told (as exec.c does), so that they fail fast
 * instead of timing out. */
static coll_result fail_all(coll_comm *c, coll_result rc)
{
	char keep[sizeof c->err];
	if (c->p2p)
		for (coll_request *q = c->p2p->reqs; q; q = q->next)
			finish(q, rc);
	c->broken = rc;
	memcpy(keep, c->err, sizeof keep);
	if (c->tp)
		c->tp->ops->abort(c->tp, rc);
	snprintf(c->err, sizeof c->err, "rank %d: %s", c->rank, keep);
	return rc;
}

coll_result coll_isend(coll_comm *c, const void *buf, size_t count, coll_dtype dt, int peer, int tag,
                       coll_request **req)
{
	uint64_t bytes;
	rt_p2p *p;
	coll_result rc = check_args(c, "coll_isend", buf, count, dt, peer, tag, req, &bytes);
	if (rc)
		return rc;
	if (!(p = state(c)))
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	uint64_t fb = frag_bytes(c), nfrag = bytes ? (bytes + fb - 1) / fb : 1;
	if (nfrag > INT32_MAX)
		return rt_err(c, COLL_ERR_INVALID, "coll_isend: %llu bytes is too large", (unsigned long long)bytes);
	coll_request *q = new_req(c, p, 1, (void *)buf, bytes, peer, tag);
	if (!q)
		return COLL_ERR_NOMEM;
	if (!(q->frags = calloc(nfrag, sizeof *q->frags))) {
		unlink_req(p, q);
		free(q);
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	q->nfrag = (uint32_t)nfrag;
	uint32_t msg = p->peers[peer].sent++;
	for (uint32_t i = 0; i < nfrag; i++) {
		rt_req *f = &q->frags[i];
		uint64_t off = (uint64_t)i * fb, len = bytes - off < fb ? bytes - off : fb;
		if (!bytes)
			off = len = 0;
		rt_hdr *h = &f->hdr;
		h->magic = RT_HDR_MAGIC;
		h->seq = c->seq;
		h->count = bytes;
		h->kind = RT_KIND_P2P;
		h->root = tag;
		h->round = (int32_t)msg;
		h->chunk = (int32_t)i;
		h->seg = (int32_t)nfrag;
		h->len = (uint32_t)len;
		f->peer = peer;
		f->iov[0].iov_base = h;
		f->iov[0].iov_len = sizeof *h;
		f->iov[1].iov_base = (char *)buf + off;
		f->iov[1].iov_len = len;
		f->iovcnt = 2;
		if ((rc = c->tp->ops->post_send(c->tp, f))) {
			/* fragments already posted belong to the transport: the
			 * stream to peer is now torn, so the communicator fails */
			fail_all(c, rc);
			return rc;
		}
	}
	*req = q;
	return COLL_OK;
}

/* The first kept message from peer with tag that no receive has taken. */
static rt_p2p_msg *kept_for(rt_p2p_peer *pp, int tag)
{
	for (rt_p2p_msg *m = pp->kept; m; m = m->next)
		if (!m->req && m->tag == tag)
			return m;
	return NULL;
}

static void kept_unlink(rt_p2p_peer *pp, rt_p2p_msg *m)
{
	for (rt_p2p_msg **pm = &pp->kept; *pm; pm = &(*pm)->next)
		if (*pm == m) {
			*pm = m->next;
			if (pp->kept_tail == &m->next)
				pp->kept_tail = pm;
			return;
		}
}

/* A message is all here: hand it to its receive. */
static void deliver(coll_comm *c, rt_p2p_peer *pp, rt_p2p_msg *m, int from)
{
	coll_request *q = m->req;
	if (!q)
		return;   /* kept until a receive asks */
	if (m->heap) {
		kept_unlink(pp, m);
		if (m->bytes != q->bytes)
			finish(q, rt_err(c, COLL_ERR_MISMATCH,
			                 "recv from rank %d, tag %d: the message has %llu bytes, this receive takes %llu", from,
			                 q->tag, (unsigned long long)m->bytes, (unsigned long long)q->bytes));
		else {
			if (m->bytes)
				memcpy(q->buf, m->heap, m->bytes);
			finish(q, COLL_OK);
		}
	} else {
		finish(q, COLL_OK);
	}
	msg_free(m);
}

coll_result coll_irecv(coll_comm *c, void *buf, size_t count, coll_dtype dt, int peer, int tag, coll_request **req)
{
	uint64_t bytes;
	rt_p2p *p;
	coll_result rc = check_args(c, "coll_irecv", buf, count, dt, peer, tag, req, &bytes);
	if (rc)
		return rc;
	if (!(p = state(c)))
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	coll_request *q = new_req(c, p, 0, buf, bytes, peer, tag);
	if (!q)
		return COLL_ERR_NOMEM;
	rt_p2p_peer *pp = &p->peers[peer];
	rt_p2p_msg *m = kept_for(pp, tag);
	if (m) {
		/* it arrived before this receive: take it (now, or when its last
		 * fragment comes) */
		m->req = q;
		q->state = 1;
		if (m->got == m->bytes && m->frag == m->nfrag)
			deliver(c, pp, m, peer);
	}
	*req = q;
	return COLL_OK;
}

/* The receive a new message from peer with tag goes to: the first pending
 * one, in posting order. */
static coll_request *match(rt_p2p *p, int peer, int tag)
{
	for (coll_request *q = p->reqs; q; q = q->next)
		if (!q->send && q->state == 0 && q->peer == peer && q->tag == tag)
			return q;
	return NULL;
}

static void make_busy(rt_p2p *p, int r)
{
	if (!p->peers[r].busy) {
		p->peers[r].busy = 1;
		p->busy[p->nbusy++] = r;
	}
}

/* This pass's peers: those with a pending receive (want), a receive with
 * the transport or a message half here (busy); each once. */
static int pass_peers(rt_p2p *p, int n)
{
	uint32_t gen = ++p->gen;
	int k = 0;
	if (gen == 0) {   /* wrapped: no stale mark may equal a new one */
		p->gen = gen = 1;
		memset(p->want, 0, sizeof *p->want * (size_t)n);
		memset(p->listed, 0, sizeof *p->listed * (size_t)n);
	}
	for (coll_request *q = p->reqs; q; q = q->next)
		if (!q->send && q->state == 0) {
			p->want[q->peer] = gen;
			if (p->listed[q->peer] != gen)
				p->listed[q->peer] = gen, p->list[k++] = q->peer;
		}
	for (int i = 0; i < p->nbusy;) {
		int r = p->busy[i];
		if (!p->peers[r].posted && !p->peers[r].cur) {
			p->peers[r].busy = 0;
			p->busy[i] = p->busy[--p->nbusy];
			continue;
		}
		if (p->listed[r] != gen)
			p->listed[r] = gen, p->list[k++] = r;
		i++;
	}
	return k;
}

/* Take the payload of a completed transport receive into dst (streamed
 * transports leave part of it in their stream: read it out). */
static int take_payload(coll_comm *c, rt_req *in, char *dst, uint64_t len)
{
	rt_tp *tp = c->tp;
	uint64_t inmem = in->len - sizeof(rt_hdr) - in->pend;
	if (dst && inmem)
		memcpy(dst, (const char *)in->data + sizeof(rt_hdr), inmem);
	uint64_t at = inmem;
	int64_t last = rt_now_ms();
	while (at < len) {
		size_t got = 0;
		int rc = tp->ops->read(tp, in, dst + at, len - at, &got);
		if (rc)
			return rc;
		if (got) {
			at += got;
			last = rt_now_ms();
			continue;
		}
		if (c->timeout_ms > 0 && rt_now_ms() - last >= c->timeout_ms)
			return rt_err(c, COLL_ERR_TIMEOUT, "point-to-point message from rank %d: no progress for %.1f s",
			              in->peer, (double)(rt_now_ms() - last) / 1000);
		if ((rc = tp->ops->progress(tp, 10)))
			return rc;
	}
	return COLL_OK;
}

/* A fragment arrived from peer: check it and put its bytes in place. */
static int on_fragment(coll_comm *c, rt_p2p *p, int peer)
{
	rt_p2p_peer *pp = &p->peers[peer];
	rt_req *in = &pp->in;
	/* a copy: the transport may reuse its memory once released (below),
	 * and the sender then writes its next message there */
	rt_hdr hcopy;
	const rt_hdr *h = &hcopy;
	if (in->len < sizeof hcopy)
		return rt_err(c, COLL_ERR_PROTOCOL, "point-to-point: malformed message from rank %d", peer);
	memcpy(&hcopy, in->data, sizeof hcopy);
	if (h->magic != RT_HDR_MAGIC)
		return rt_err(c, COLL_ERR_PROTOCOL, "point-to-point: malformed message from rank %d", peer);
	if (h->kind != RT_KIND_P2P)
		return rt_err(c, COLL_ERR_MISMATCH,
		              "rank %d sent its %s call #%u where rank %d waited for a point-to-point message: between two "
		              "ranks, point-to-point messages and collectives must come in the same order on both",
		              peer, h->kind < COLL_NCOLLS ? coll_kind_name((coll_kind)h->kind) : "collective", h->seq,
		              c->rank);
	rt_p2p_msg *m = pp->cur;
	if (!m) {
		if (h->round != (int32_t)pp->rcvd || h->chunk != 0 || h->seg < 1 || h->root < 0)
			return rt_err(c, COLL_ERR_PROTOCOL, "point-to-point: rank %d sent message %d fragment %d, expected "
			              "message %u fragment 0", peer, h->round, h->chunk, pp->rcvd);
		if (!(m = calloc(1, sizeof *m)))
			return rt_err(c, COLL_ERR_NOMEM, "out of memory");
		m->tag = h->root, m->bytes = h->count, m->nfrag = (uint32_t)h->seg;
		m->req = match(p, peer, m->tag);
		if (m->req)
			m->req->state = 1;
		if (!m->req || m->req->bytes != m->bytes) {
			/* no receive yet, or one of another size: keep the bytes
			 * (a heap block of the size the sender says) */
			if (!(m->heap = malloc(m->bytes ? m->bytes : 1))) {
				free(m);
				return rt_err(c, COLL_ERR_NOMEM, "out of memory keeping a %llu-byte message from rank %d",
				              (unsigned long long)h->count, peer);
			}
			m->next = NULL;
			*pp->kept_tail = m;
			pp->kept_tail = &m->next;
		}
		pp->cur = m;
		pp->rcvd++;
	} else if (h->round != (int32_t)pp->rcvd - 1 || h->chunk != (int32_t)m->frag || h->count != m->bytes ||
	           h->root != m->tag) {
		return rt_err(c, COLL_ERR_PROTOCOL, "point-to-point: rank %d sent message %d fragment %d, expected message "
		              "%u fragment %u", peer, h->round, h->chunk, pp->rcvd - 1, m->frag);
	}
	if (h->len > m->bytes - m->got || in->len != sizeof *h + h->len)
		return rt_err(c, COLL_ERR_PROTOCOL, "point-to-point: rank %d sent a fragment of %u bytes, %llu were due", peer,
		              h->len, (unsigned long long)(m->bytes - m->got));
	int rc = h->len ? take_payload(c, in, (m->heap ? m->heap : m->req->buf) + m->got, h->len) : COLL_OK;
	c->tp->ops->release(c->tp, in);
	pp->posted = 0;
	if (rc)
		return rc;
	m->got += h->len;
	m->frag++;
	if (m->frag == m->nfrag) {
		pp->cur = NULL;
		if (m->got != m->bytes)
			return rt_err(c, COLL_ERR_PROTOCOL, "point-to-point: rank %d's message of %llu bytes ended after %llu",
			              peer, (unsigned long long)m->bytes, (unsigned long long)m->got);
		deliver(c, pp, m, peer);
	}
	return COLL_OK;
}

/* One pass: take what arrived, hand receives to the transport where a
 * point-to-point message is next (or at once, for a peer a blocking wait
 * waits for, or whose message is half here: a receive posted then
 * completes before the wait returns), reap sends.  *moved: something did.
 * *blocked: a peer with a pending receive is in a collective call.
 * *gated: receives wait on peek, which the transport's own wait does not
 * end. */
static int pass(coll_comm *c, rt_p2p *p, int *moved, int *blocked_peer, rt_hdr *blocked, int *gated)
{
	rt_tp *tp = c->tp;
	int rc, k = pass_peers(p, c->n);
	for (int i = 0; i < k; i++) {
		int r = p->list[i];
		rt_p2p_peer *pp = &p->peers[r];
		int took = 0;
		while (pp->posted && pp->in.done) {
			if ((rc = on_fragment(c, p, r)))
				return rc;
			*moved = took = 1;
		}
		/* want[] was taken before that fragment, which may have finished
		 * the last receive from r: post again only in the next pass, which
		 * looks afresh (a receive posted for nothing would take r's next
		 * message, a collective's, from under the executor) */
		if (took && !pp->cur)
			continue;
		if (pp->posted || (p->want[r] != p->gen && !pp->cur))
			continue;
		if (tp->ops->peek && p->direct[r] != p->dgen && !pp->cur) {
			rt_hdr h;
			*gated = 1;
			int have = 0;
			if ((rc = tp->ops->peek(tp, r, &h, &have)))
				return rc;
			if (!have)
				continue;
			if (h.kind != RT_KIND_P2P) {
				*blocked_peer = r;
				*blocked = h;
				continue;
			}
		}
		memset(&pp->in, 0, sizeof pp->in);
		pp->in.peer = r;
		if ((rc = tp->ops->post_recv(tp, &pp->in)))
			return rc;
		pp->posted = 1;
		make_busy(p, r);
		*moved = 1;
		while (pp->posted && pp->in.done) {
			if ((rc = on_fragment(c, p, r)))
				return rc;
		}
	}
	for (coll_request *q = p->reqs; q; q = q->next)
		if (q->send && q->state != 2) {
			uint32_t i = 0;
			while (i < q->nfrag && q->frags[i].done)
				i++;
			if (i == q->nfrag) {
				finish(q, COLL_OK);
				*moved = 1;
			}
		}
	return COLL_OK;
}

/* How long progress waits: once, until all of reqs finished, or until one
 * of them finished or a time limit passed. */
enum { P_ONCE, P_ALL, P_SOME };

/* Move things along per mode (a NULL entry counts as finished; P_SOME
 * stops at limit_ms, < 0: none).  Receives a wait waits for are posted at
 * once (see the file's header) by P_ALL, which returns only when they
 * completed, and by every mode on a communicator without plans, which
 * runs no collective a posted receive could take a message from; the
 * others wait on peek. */
static coll_result progress(coll_comm *c, coll_request **reqs, int n, int mode, int limit_ms)
{
	rt_p2p *p = c->p2p;
	int64_t last = rt_now_ms(), start = last;
	int spins = 0, block = mode != P_ONCE;
	if (c->broken)
		return rt_err(c, COLL_ERR_ABORTED, "communicator failed earlier");
	if (++p->dgen == 0) {   /* wrapped */
		memset(p->direct, 0, sizeof *p->direct * (size_t)c->n);
		p->dgen = 1;
	}
	if (!c->plans)
		for (coll_request *q = p->reqs; q; q = q->next)
			if (!q->send && q->state != 2)
				p->direct[q->peer] = p->dgen;
	for (int i = 0; mode == P_ALL && i < n; i++)
		if (reqs[i] && !reqs[i]->send && reqs[i]->state != 2)
			p->direct[reqs[i]->peer] = p->dgen;
	for (;;) {
		int moved = 0, bpeer = -1, gated = 0, rc;
		rt_hdr bh;
		if ((rc = pass(c, p, &moved, &bpeer, &bh, &gated)))
			return fail_all(c, rc);
		int left = 0, any = 0;
		for (int i = 0; i < n; i++)
			if (reqs[i])
				reqs[i]->state != 2 ? left++ : any++;
		if (!left || (mode == P_SOME && any))
			return COLL_OK;
		if (mode == P_SOME && limit_ms >= 0 && rt_now_ms() - start >= limit_ms) {
			/* the last look, as P_ONCE takes */
			if ((rc = c->tp->ops->progress(c->tp, 0)) || (rc = pass(c, p, &moved, &bpeer, &bh, &gated)))
				return fail_all(c, rc);
			return COLL_OK;
		}
		if (!block) {
			/* once through the transport too (its queues move only in
			 * progress), and take what that brought */
			if ((rc = c->tp->ops->progress(c->tp, 0)) || (rc = pass(c, p, &moved, &bpeer, &bh, &gated)))
				return fail_all(c, rc);
			return COLL_OK;
		}
		if (bpeer >= 0 && mode == P_ALL) {
			/* a receive from bpeer is waiting while bpeer is in a
			 * collective this rank has not joined: it sends nothing else
			 * until then (P_SOME returns at its limit instead: its caller
			 * may join that collective next) */
			int tag = -1;
			for (int i = 0; i < n && tag < 0; i++)
				if (reqs[i] && !reqs[i]->send && reqs[i]->state != 2 && reqs[i]->peer == bpeer)
					tag = reqs[i]->tag;
			if (tag >= 0) {
				rc = rt_err(c, COLL_ERR_MISMATCH,
				            "recv from rank %d, tag %d: rank %d is in its %s call #%u, which rank %d has not "
				            "joined, and sends nothing else before it: between two ranks, point-to-point "
				            "messages and collectives must come in the same order on both",
				            bpeer, tag, bpeer, bh.kind < COLL_NCOLLS ? coll_kind_name((coll_kind)bh.kind) : "collective",
				            bh.seq, c->rank);
				return fail_all(c, rc);
			}
		}
		int64_t now = rt_now_ms();
		if (moved)
			last = now, spins = 0;
		else if (c->timeout_ms > 0 && now - last >= c->timeout_ms) {
			for (int i = 0; i < n; i++)
				if (reqs[i] && reqs[i]->state != 2)
					return fail_all(c, rt_err(c, COLL_ERR_TIMEOUT, "%s rank %d, tag %d (%llu bytes): no progress for "
					                          "%.1f s", reqs[i]->send ? "send to" : "recv from", reqs[i]->peer,
					                          reqs[i]->tag, (unsigned long long)reqs[i]->bytes,
					                          (double)(now - last) / 1000));
		}
		/* receives waiting on peek are not known to the transport, so its
		 * wait would not end when their message comes: spin a while, then
		 * wait in short steps; otherwise the transport's wait ends when
		 * something moves */
		int wait = moved ? 0 : gated ? (spins++ < 2000 ? 0 : 1) : 100;
		if (wait && c->timeout_ms > 0 && c->timeout_ms - (now - last) < wait)
			wait = (int)(c->timeout_ms - (now - last));
		if (wait && mode == P_SOME && limit_ms >= 0 && limit_ms - (now - start) < wait)
			wait = (int)(limit_ms - (now - start));
		if ((rc = c->tp->ops->progress(c->tp, wait > 0 ? wait : 0)))
			return fail_all(c, rc);
	}
}

/* Free the finished requests of reqs[0..n), NULL their slots; the first
 * error among them (COLL_OK if none). */
static coll_result reap(coll_comm *c, coll_request **reqs, int n)
{
	coll_result first = COLL_OK;
	for (int i = 0; i < n; i++) {
		coll_request *q = reqs[i];
		if (!q || q->state != 2)
			continue;
		if (q->rc && !first)
			first = q->rc;
		unlink_req(c->p2p, q);
		free(q->frags);
		free(q);
		reqs[i] = NULL;
	}
	return first;
}

coll_result coll_waitall(coll_comm *c, coll_request **reqs, int n)
{
	if (!c || (n > 0 && !reqs) || n < 0)
		return rt_err(c, COLL_ERR_INVALID, "coll_waitall: %s", !c ? "NULL communicator" : "bad request array");
	int any = 0;
	for (int i = 0; i < n; i++)
		any |= reqs[i] != NULL;
	if (!any)
		return COLL_OK;
	coll_result rc = progress(c, reqs, n, P_ALL, -1);
	coll_result r2 = reap(c, reqs, n);
	return rc ? rc : r2;
}

coll_result coll_wait(coll_comm *c, coll_request **req)
{
	if (!req)
		return rt_err(c, COLL_ERR_INVALID, "coll_wait: NULL request pointer");
	return coll_waitall(c, req, 1);
}

coll_result coll_test(coll_comm *c, coll_request **req, int *done)
{
	if (!c || !req || !done)
		return rt_err(c, COLL_ERR_INVALID, "coll_test: NULL argument");
	*done = 1;
	if (!*req)
		return COLL_OK;
	coll_result rc = progress(c, req, 1, P_ONCE, 0);
	if (rc) {
		reap(c, req, 1);
		return rc;
	}
	*done = (*req)->state == 2;
	return *done ? reap(c, req, 1) : COLL_OK;
}

coll_result coll_waitsome(coll_comm *c, coll_request **reqs, int n, int timeout_ms, coll_result *results,
                          int *nfinished)
{
	if (!c || (n > 0 && !reqs) || n < 0 || !nfinished)
		return rt_err(c, COLL_ERR_INVALID, "coll_waitsome: %s", !c ? "NULL communicator" : "bad argument");
	*nfinished = 0;
	int any = 0;
	for (int i = 0; i < n; i++)
		any |= reqs[i] != NULL;
	if (!any)
		return COLL_OK;
	coll_result rc = progress(c, reqs, n, P_SOME, timeout_ms);
	for (int i = 0; i < n; i++) {
		coll_request *q = reqs[i];
		if (!q || q->state != 2)
			continue;
		if (results)
			results[i] = q->rc;
		(*nfinished)++;
		reap(c, &reqs[i], 1);
	}
	return rc;
}

coll_result coll_send(coll_comm *c, const void *buf, size_t count, coll_dtype dt, int peer, int tag)
{
	coll_request *q;
	coll_result rc = coll_isend(c, buf, count, dt, peer, tag, &q);
	return rc ? rc : coll_wait(c, &q);
}

coll_result coll_recv(coll_comm *c, void *buf, size_t count, coll_dtype dt, int peer, int tag)
{
	coll_request *q;
	coll_result rc = coll_irecv(c, buf, count, dt, peer, tag, &q);
	return rc ? rc : coll_wait(c, &q);
}

void rt_p2p_free(coll_comm *c)
{
	rt_p2p *p = c->p2p;
	if (!p)
		return;
	for (coll_request *q = p->reqs, *nx; q; q = nx) {
		nx = q->next;
		free(q->frags);
		free(q);
	}
	for (int r = 0; r < c->n; r++) {
		rt_p2p_peer *pp = &p->peers[r];
		for (rt_p2p_msg *m = pp->kept, *nx; m; m = nx) {
			nx = m->next;
			msg_free(m);
		}
		if (pp->cur && !pp->cur->heap)
			msg_free(pp->cur);
	}
	free(p->peers);
	free(p->direct);
	free(p->want);
	free(p->listed);
	free(p->list);
	free(p->busy);
	free(p);
	c->p2p = NULL;
}
