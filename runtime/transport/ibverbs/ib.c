/*
 * ib.c - libcollrt_ibverbs.so: the "ibverbs" transport, RDMA over
 * InfiniBand or RoCE with libibverbs.
 *
 * Why a plugin.  libcollrt dlopens this library when transport ibverbs is
 * asked for (a PLUGIN row of coll_transports.def; runtime/plugin.c, the
 * loader the MPI plugin uses too), so libcollrt, collbench and every
 * library collc generates link and run without rdma-core, and a machine
 * without RDMA pays nothing; linking libibverbs into libcollrt would make
 * every generated library need libibverbs.so.1 at load time.  The plugin
 * exports one symbol, coll_ibverbs_plugin(), returning the rt_transport;
 * it reaches libcollrt only through rt_host_api.  Each connect() builds an
 * independent instance (no state outside it but the host table), so a
 * multi-rail layer can open it as one rail among others.
 *
 * Connection setup.  Each rank opens the device (COLL_IB_HCA, or the first
 * with an active port), creates one RC queue pair per peer, one completion
 * queue with a completion channel, and registers its rings.  The
 * connection data (LID, GID, QPN, PSN, MTU, and the address and rkey of
 * the receive ring each peer writes into) goes through the bootstrap
 * allgather as fixed-size, versioned, big-endian records (wire.c).  A rank
 * that cannot open its device still takes part, with its failure as the
 * records' status, so every rank fails at once with a reason instead of
 * waiting for the bootstrap deadline.  A second allgather of each rank's
 * result after the queue pairs reach ready-to-send doubles as the barrier
 * that keeps anyone from writing into a queue pair not yet ready.
 *
 * Data path: RDMA WRITE WITH IMMEDIATE into a ring of remote slots.  The
 * receiver of each ordered pair owns a ring (COLL_IB_SLOTS slots of
 * COLL_IB_SLOT_BYTES) registered for remote writes; a message (the
 * executor's 64-byte header and its payload, at most tp->max_msg) takes
 * the next contiguous run of slots (ring.c), and the immediate carries its
 * length, so both sides place it alike.  The receiver hands the executor
 * a pointer into the ring, which it reduces from in place, and frees the
 * run when the executor releases it, in any order.  Against send/receive
 * into pre-posted buffers this needs no receive buffer per message (the
 * receive queue holds zero-byte requests that only catch immediates), lets
 * small and large messages share one ring, and lets the sender choose the
 * place, so a message is one write.
 *
 * Flow control: credits counted in slots (ring.c).  The sender never has
 * more than the ring's slots outstanding; the receiver gives freed slots
 * back with a zero-byte write whose immediate is the count, in batches of
 * a quarter ring, and all of them before it sleeps.  The receive queue is
 * deep enough for every immediate that can be in flight (a data message
 * per slot plus a credit message per slot, see connect), so a write never
 * finds it empty (no receiver-not-ready retries).
 *
 * Send side and the registered-memory policy: copy through bounce buffers
 * by default (COLL_IB_REG=copy).  Each peer's ring has a registered twin
 * here; a message is copied into the same offset and written from there,
 * in chunks of COLL_IB_CHUNK_BYTES so that the adapter sends one chunk
 * while the CPU copies the next (RC segments into MTU packets itself; the
 * chunks are about overlapping the copy).  The executor's forwarding sends
 * (a received segment reduced into the message that carries it on) are
 * computed straight into the bounce buffer (send_reserve/send_commit), so
 * in ring allreduce most messages cost no copy at all.  Copying is the
 * default because it is correct whatever the application does with its
 * memory: a cache of pinned registrations goes stale when a buffer is
 * freed and its addresses reused (by the application, or by libcollrt's
 * own scratch buffer growing), and sends then read the old pages without
 * any error.  COLL_IB_REG=odp sends payloads of COLL_IB_ZCOPY_BYTES and
 * more straight from the caller's memory, registered on demand (ODP: the
 * adapter follows the page tables, so a recycled address is seen as
 * such) through the LRU interval cache of mrcache.c; it needs a device
 * with ODP for RC sends and is refused otherwise.  Messages up to the
 * queue pair's inline size go inline (no copy, no registration).
 *
 * Progress: one completion queue for every queue pair.  progress() polls
 * it; when nothing moves it polls for COLL_IB_SPIN_US more (rt_spin_ns),
 * gives back every pending credit, arms the completion channel and sleeps
 * in poll() on the channel's fd and the device's async-event fd until the
 * timeout.
 *
 * Errors.  A work completion with a bad status, an async event on a queue
 * pair (QP fatal, access error) or on the device (fatal: removed or reset;
 * port down) marks the link or the transport failed, with the verbs
 * status string (ibv_wc_status_str, ibv_event_type_str) and the peer's
 * rank.  Like TCP's EOF, a failed link is an error only when data from or
 * to that peer is still needed: a peer that finished and closed while we
 * returned its last credits is not a failure.  A peer that dies silently
 * is found by probes: a receive that waits longer than COLL_IB_PROBE_MS
 * sends the peer a zero-byte write, which its adapter acknowledges while
 * its queue pair lives and which fails (retry exceeded) once it does not.
 * Aborts are a zero-byte write whose immediate carries the error code.
 * close() waits (briefly) for writes in flight, so the last messages of a
 * call are not dropped with the queue pair.
 *
 * Environment:
 *   COLL_IB_HCA=dev[:port]   device and port (like NCCL_IB_HCA); default:
 *                            the first device with an active port
 *   COLL_IB_GID_INDEX=i      GID table index; default: on RoCE the first
 *                            RoCE v2 IPv4-mapped GID (else RoCE v2, else 0),
 *                            on InfiniBand none (LID routing)
 *   COLL_IB_SL, COLL_IB_TC   service level, traffic class (0)
 *   COLL_IB_TIMEOUT, COLL_IB_RETRY_CNT  ack timeout exponent (14: 67 ms),
 *                            retries (7)
 *   COLL_IB_SLOT_BYTES, COLL_IB_SLOTS   ring geometry (64 KiB x 64 per peer)
 *   COLL_IB_SEG_BYTES        payload per message (512 KiB - 64: 8 slots),
 *                            at most half a ring
 *   COLL_IB_CHUNK_BYTES      copy/write pipelining chunk (64 KiB)
 *   COLL_IB_REG=copy|odp     send-side memory policy (copy)
 *   COLL_IB_ZCOPY_BYTES      smallest payload sent zero-copy with odp (64 KiB)
 *   COLL_IB_MR_CACHE, COLL_IB_MR_CACHE_BYTES  cache capacity (64, 4 GiB)
 *   COLL_IB_SPIN_US          polling before sleeping (rt_spin_ns)
 *   COLL_IB_PROBE_MS         silent-peer probe interval (1000; 0: none)
 *   COLL_IBVERBS_PLUGIN      this library's path (plugin.c)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include "ib.h"

static const rt_host_api *H;
static const rt_transport ib_transport;

enum { REG_COPY, REG_ODP };

/* Work request ids: kind in the high half, peer rank in the low half.
 * (An error completion carries only the id, the status and the queue
 * pair, so the id must name the peer by itself.) */
enum { WR_RECV = 1, WR_DATA, WR_CREDIT, WR_PROBE, WR_ABORT };
#define WR_ID(kind, rank) ((uint64_t)(kind) << 32 | (uint32_t)(rank))

/* Send-queue entries kept back from data for credits, a probe and an
 * abort, so those never wait behind data. */
#define SQ_RESERVE 4
#define INLINE_WANT 256

/* One signaled batch of work requests in flight (the last of a message's
 * chunks, a credit, a probe, an abort). */
typedef struct {
	rt_req *req;       /* zero-copy send that completes with it, or NULL */
	ib_mrent *mr;      /* its cache entry */
	uint32_t wrs;      /* send-queue entries the batch used */
	int kind;
} ib_sent;

/* A message that arrived before its receive was posted. */
typedef struct {
	uint64_t seq;
	uint32_t off, len;
} ib_arrival;

typedef struct {
	int rank;
	struct ibv_qp *qp;
	uint32_t psn;
	ib_tx tx;
	ib_rx rx;
	char *in;              /* my receive ring for this peer */
	char *out;             /* my bounce copy of the peer's ring for me */
	uint64_t raddr;        /* the peer's ring for me */
	uint32_t rkey;
	rt_reqq sq;            /* sends waiting for ring slots or send-queue room */
	rt_reqq wait;          /* sends given to the adapter, not yet done (post order) */
	rt_reqq rq;            /* receives waiting for a message */
	ib_arrival *arr;       /* nslots */
	uint32_t arr_head, arr_count;
	ib_sent *sent;         /* sent_cap */
	uint32_t sent_head, sent_count;
	uint32_t sq_used;      /* send-queue entries in flight */
	rt_req *reserved;      /* send_reserve'd, not committed */
	size_t res_off, res_len;
	int probing;
	int64_t last_heard_ms; /* last completion from or to it, or probe */
	int gone;              /* the link failed: an error once we need the peer */
	int gone_code;
	char gone_why[200];
} ib_peer;

typedef struct {
	rt_tp base;
	int rank, n;
	const char *hca;             /* the device to open ("dev[:port]"; NULL: COLL_IB_HCA, else the first) */
	char dev[64];
	int port;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	int armed;
	char *mem;                   /* receive rings, then bounce rings: one each per peer but us */
	size_t mem_bytes, ring_bytes;
	struct ibv_mr *in_mr, *out_mr;
	ib_geom g;
	size_t chunk;
	uint32_t sq_depth, rq_depth, sent_cap, credit_batch, max_inline;
	ib_peer *peers;
	/* this port */
	uint16_t lid;
	uint8_t mtu, link_layer, gid_index;
	union ibv_gid gid;
	int sl, tc, ack_timeout, retry_cnt;
	/* send-side registration */
	int reg;
	size_t zcopy_bytes;
	ib_mrcache mrc;
	int mrc_on;
	int64_t spin_ns;
	int probe_ms;
	int fatal;                   /* the device failed: every call reports it */
	char fatal_why[200];
} ib_tp;

/* --- helpers ------------------------------------------------------------- */

static int peer_idx(const ib_tp *t, int r) { return r < t->rank ? r : r - 1; }

static const char *env_str(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

/* Mark a link failed (first reason wins: later completions are flushes). */
static void peer_fail(ib_tp *t, ib_peer *p, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void peer_fail(ib_tp *t, ib_peer *p, int code, const char *fmt, ...)
{
	(void)t;
	if (p->gone)
		return;
	p->gone = 1;
	p->gone_code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->gone_why, sizeof p->gone_why, fmt, ap);
	va_end(ap);
}

/* Does the executor still need anything from or to p? */
static int peer_needed(const ib_peer *p)
{
	return p->rq.head || p->sq.head || p->wait.head || p->reserved;
}

static int room(const ib_tp *t, const ib_peer *p, uint32_t wrs, uint32_t reserve)
{
	return p->sq_used + wrs + reserve <= t->sq_depth && p->sent_count + 1 + reserve <= t->sent_cap;
}

static void push_sent(ib_tp *t, ib_peer *p, int kind, uint32_t wrs, rt_req *req, ib_mrent *mr)
{
	ib_sent *s = &p->sent[(p->sent_head + p->sent_count) % t->sent_cap];
	*s = (ib_sent){req, mr, wrs, kind};
	p->sent_count++;
	p->sq_used += wrs;
}

/* Sends complete (done = 1) in post order: the front of p->wait while it
 * is ready (tpseq 1: copied or inline at once, zero-copy at completion). */
static int finish_sends(ib_peer *p)
{
	int moved = 0;
	while (p->wait.head && p->wait.head->tpseq) {
		rt_req *q = rt_reqq_pop(&p->wait);
		q->done = 1;
		moved = 1;
	}
	return moved;
}

static int post_wr(ib_tp *t, ib_peer *p, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int e = ibv_post_send(p->qp, wr, &bad);
	if (e)
		return H->err(t->base.comm, COLL_ERR_TRANSPORT, "ibverbs: ibv_post_send to rank %d: %s", p->rank,
		              strerror(e));
	return COLL_OK;
}

/* A zero-byte write with immediate (credit, abort) or without (probe). */
static int post_signal(ib_tp *t, ib_peer *p, int kind, uint32_t imm)
{
	struct ibv_send_wr wr = {0};
	wr.wr_id = WR_ID(kind, p->rank);
	wr.opcode = kind == WR_PROBE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = p->raddr;
	wr.wr.rdma.rkey = p->rkey;
	int rc = post_wr(t, p, &wr);
	if (!rc)
		push_sent(t, p, kind, 1, NULL, NULL);
	return rc;
}

/* --- sending ------------------------------------------------------------- */

static size_t req_len(const rt_req *q)
{
	size_t len = 0;
	for (int i = 0; i < q->iovcnt; i++)
		len += q->iov[i].iov_len;
	return len;
}

/* Try to hand the send q to the adapter; *posted: it was (else it waits
 * for ring slots or send-queue room).  Errors: TRANSPORT. */
static int send_one(ib_tp *t, ib_peer *p, rt_req *q, int *posted)
{
	size_t len = req_len(q), off;
	uint64_t seq;
	*posted = 0;
	ib_mrent *e = NULL;
	if (t->mrc_on && q->iovcnt == 2 && q->iov[1].iov_len >= t->zcopy_bytes)
		e = ib_mrc_get(&t->mrc, q->iov[1].iov_base, q->iov[1].iov_len);   /* NULL: copy after all */
	int inl = !e && len <= t->max_inline;
	uint32_t nch = e || inl ? 1 : ib_nchunks(len, t->chunk);
	if (!room(t, p, nch, SQ_RESERVE) || !ib_tx_take(&p->tx, &t->g, len, &seq, &off)) {
		if (e)
			ib_mrc_put(&t->mrc, e);
		return COLL_OK;
	}
	*posted = 1;
	struct ibv_send_wr wr = {0};
	struct ibv_sge sge[2];
	wr.sg_list = sge;
	wr.wr.rdma.rkey = p->rkey;
	wr.imm_data = htonl(ib_imm(IB_IMM_DATA, (uint32_t)len));
	int rc;
	if (e) {
		/* Header through the bounce ring, payload from the caller. */
		memcpy(p->out + off, q->iov[0].iov_base, q->iov[0].iov_len);
		sge[0] = (struct ibv_sge){(uintptr_t)(p->out + off), (uint32_t)q->iov[0].iov_len, t->out_mr->lkey};
		sge[1] = (struct ibv_sge){(uintptr_t)q->iov[1].iov_base, (uint32_t)q->iov[1].iov_len, e->lkey};
		wr.num_sge = 2;
		wr.wr_id = WR_ID(WR_DATA, p->rank);
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = p->raddr + off;
		if ((rc = post_wr(t, p, &wr))) {
			ib_mrc_put(&t->mrc, e);
			return rc;
		}
		push_sent(t, p, WR_DATA, 1, q, e);
		q->tpseq = 0;   /* done at its completion */
		return COLL_OK;
	}
	if (inl) {
		/* The adapter copies inline data at post time: nothing to keep. */
		for (int i = 0; i < q->iovcnt; i++)
			sge[i] = (struct ibv_sge){(uintptr_t)q->iov[i].iov_base, (uint32_t)q->iov[i].iov_len, 0};
		wr.num_sge = q->iovcnt;
		wr.wr_id = WR_ID(WR_DATA, p->rank);
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		wr.wr.rdma.remote_addr = p->raddr + off;
		if ((rc = post_wr(t, p, &wr)))
			return rc;
		push_sent(t, p, WR_DATA, 1, NULL, NULL);
		q->tpseq = 1;
		return COLL_OK;
	}
	/* Copy through the bounce ring chunk by chunk, each chunk written as
	 * soon as it is there; the last carries the immediate.  (RC executes
	 * a queue pair's writes in order, so when the receiver sees the
	 * immediate every chunk is in place.) */
	for (uint32_t i = 0; i < nch; i++) {
		size_t coff = (size_t)i * t->chunk, clen = i + 1 < nch ? t->chunk : len - coff;
		ib_gather(p->out + off + coff, q->iov, q->iovcnt, coff, clen);
		sge[0] = (struct ibv_sge){(uintptr_t)(p->out + off + coff), (uint32_t)clen, t->out_mr->lkey};
		wr.num_sge = clen ? 1 : 0;
		wr.wr.rdma.remote_addr = p->raddr + off + coff;
		int last = i + 1 == nch;
		wr.wr_id = WR_ID(WR_DATA, p->rank);
		wr.opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
		wr.send_flags = last ? IBV_SEND_SIGNALED : 0;
		if ((rc = post_wr(t, p, &wr)))
			return rc;
	}
	push_sent(t, p, WR_DATA, nch, NULL, NULL);
	q->tpseq = 1;
	return COLL_OK;
}

/* Post what p's send queue can take. */
static int drain_sends(ib_tp *t, ib_peer *p, int *moved)
{
	while (p->sq.head && !p->reserved && !p->gone) {
		int posted, rc = send_one(t, p, p->sq.head, &posted);
		if (rc)
			return rc;
		if (!posted)
			break;
		rt_reqq_push(&p->wait, rt_reqq_pop(&p->sq));
	}
	*moved |= finish_sends(p);
	return COLL_OK;
}

static int check_send(ib_tp *t, rt_req *q, size_t len)
{
	if (len > t->base.max_msg || q->iovcnt < 1 || q->iovcnt > 2 || q->peer < 0 || q->peer >= t->n ||
	    q->peer == t->rank)
		return H->err(t->base.comm, COLL_ERR_INVALID, "ibverbs: bad send (%zu bytes to rank %d)", len, q->peer);
	ib_peer *p = &t->peers[q->peer];
	if (p->gone) {
		t->base.err_peer = q->peer;
		return H->err(t->base.comm, p->gone_code, "%s", p->gone_why);
	}
	return COLL_OK;
}

static int ib_post_send(rt_tp *tp, rt_req *req)
{
	ib_tp *t = (ib_tp *)tp;
	int rc, moved = 0;
	if ((rc = check_send(t, req, req_len(req))))
		return rc;
	ib_peer *p = &t->peers[req->peer];
	req->done = 0;
	req->tpseq = 0;
	rt_reqq_push(&p->sq, req);
	return drain_sends(t, p, &moved);
}

/* Room for the header and len payload bytes in the bounce ring, at once:
 * the executor computes the payload there (see rt_transport). */
static int ib_send_reserve(rt_tp *tp, rt_req *req, size_t len, void **buf)
{
	ib_tp *t = (ib_tp *)tp;
	size_t total = req->iov[0].iov_len + len, off;
	uint64_t seq;
	int rc;
	*buf = NULL;
	if ((rc = check_send(t, req, total)))
		return rc;
	ib_peer *p = &t->peers[req->peer];
	if (p->sq.head || p->reserved || !room(t, p, 1, SQ_RESERVE) || !ib_tx_take(&p->tx, &t->g, total, &seq, &off))
		return COLL_OK;
	memcpy(p->out + off, req->iov[0].iov_base, req->iov[0].iov_len);
	*buf = p->out + off + req->iov[0].iov_len;
	p->reserved = req;
	p->res_off = off;
	p->res_len = total;
	req->done = 0;
	return COLL_OK;
}

static int ib_send_commit(rt_tp *tp, rt_req *req)
{
	ib_tp *t = (ib_tp *)tp;
	ib_peer *p = &t->peers[req->peer];
	int rc, moved = 0;
	if (p->reserved != req)
		return H->err(tp->comm, COLL_ERR_INVALID, "ibverbs: commit without a reservation (rank %d)", req->peer);
	p->reserved = NULL;
	struct ibv_sge sge = {(uintptr_t)(p->out + p->res_off), (uint32_t)p->res_len, t->out_mr->lkey};
	struct ibv_send_wr wr = {0};
	wr.wr_id = WR_ID(WR_DATA, p->rank);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(ib_imm(IB_IMM_DATA, (uint32_t)p->res_len));
	wr.wr.rdma.remote_addr = p->raddr + p->res_off;
	wr.wr.rdma.rkey = p->rkey;
	if ((rc = post_wr(t, p, &wr)))
		return rc;
	push_sent(t, p, WR_DATA, 1, NULL, NULL);
	req->tpseq = 1;
	rt_reqq_push(&p->wait, req);
	return drain_sends(t, p, &moved);
}

/* --- receiving ----------------------------------------------------------- */

static void deliver(ib_peer *p, rt_req *q, uint64_t seq, size_t off, size_t len)
{
	q->data = p->in + off;
	q->len = len;
	q->tpseq = seq;
	q->pend = 0;
	q->done = 1;
}

static int ib_post_recv(rt_tp *tp, rt_req *req)
{
	ib_tp *t = (ib_tp *)tp;
	if (req->peer < 0 || req->peer >= t->n || req->peer == t->rank)
		return H->err(tp->comm, COLL_ERR_INVALID, "ibverbs: bad receive from rank %d", req->peer);
	ib_peer *p = &t->peers[req->peer];
	req->done = 0;
	req->data = NULL;
	if (p->arr_count && !p->rq.head) {
		ib_arrival *a = &p->arr[p->arr_head];
		deliver(p, req, a->seq, a->off, a->len);
		p->arr_head = (p->arr_head + 1) % t->g.nslots;
		p->arr_count--;
		return COLL_OK;
	}
	if (p->gone) {
		tp->err_peer = req->peer;
		return H->err(tp->comm, p->gone_code, "%s", p->gone_why);
	}
	rt_reqq_push(&p->rq, req);
	return COLL_OK;
}

static void ib_release(rt_tp *tp, rt_req *req)
{
	ib_tp *t = (ib_tp *)tp;
	if (req->data) {
		ib_rx_release(&t->peers[req->peer].rx, &t->g, req->tpseq);
		req->data = NULL;
	}
}

static int post_recvs(ib_tp *t, ib_peer *p, uint32_t count)
{
	struct ibv_recv_wr wr = {0}, *bad = NULL;
	wr.wr_id = WR_ID(WR_RECV, p->rank);
	wr.num_sge = 0;   /* it only catches an immediate: the data went to the ring */
	for (uint32_t i = 0; i < count; i++) {
		int e = ibv_post_recv(p->qp, &wr, &bad);
		if (e)
			return H->err(t->base.comm, COLL_ERR_TRANSPORT, "ibverbs: ibv_post_recv (rank %d): %s", p->rank,
			              strerror(e));
	}
	return COLL_OK;
}

/* An immediate arrived from p. */
static int on_imm(ib_tp *t, ib_peer *p, uint32_t imm, int *moved)
{
	uint32_t v = ib_imm_value(imm);
	uint64_t seq;
	size_t off;
	switch (ib_imm_kind(imm)) {
	case IB_IMM_DATA:
		if (ib_rx_arrive(&p->rx, &t->g, v, t->base.max_msg, &seq, &off))
			return H->err(t->base.comm, COLL_ERR_PROTOCOL,
			              "ibverbs: rank %d wrote a %u-byte message past its credits or size limit", p->rank, v);
		if (p->rq.head) {
			deliver(p, rt_reqq_pop(&p->rq), seq, off, v);
			*moved = 1;
		} else {
			p->arr[(p->arr_head + p->arr_count) % t->g.nslots] = (ib_arrival){seq, (uint32_t)off, v};
			p->arr_count++;
		}
		return COLL_OK;
	case IB_IMM_CREDIT:
		if (ib_tx_credit(&p->tx, &t->g, v))
			return H->err(t->base.comm, COLL_ERR_PROTOCOL, "ibverbs: rank %d returned %u credits it never had",
			              p->rank, v);
		return COLL_OK;
	case IB_IMM_ABORT:
		return H->err(t->base.comm, rt_abort_code((int)v), "rank %d aborted (%s)", p->rank,
		              H->strerror((coll_result)v));
	}
	return H->err(t->base.comm, COLL_ERR_PROTOCOL, "ibverbs: unknown immediate 0x%08x from rank %d", imm, p->rank);
}

/* A completion with an error status: which peer, and whether that is a
 * failure of the peer (it died, its queue pair is gone) or of ours. */
static void on_bad_wc(ib_tp *t, const struct ibv_wc *wc)
{
	int r = (int)(uint32_t)wc->wr_id, kind = (int)(wc->wr_id >> 32);
	if (r < 0 || r >= t->n || r == t->rank)
		return;
	ib_peer *p = &t->peers[r];
	if (!p->qp || wc->qp_num != p->qp->qp_num)
		return;   /* a queue pair since replaced (rejoin): its flushes */
	int code = COLL_ERR_PEER;
	switch (wc->status) {
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_MW_BIND_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_FATAL_ERR:
	case IBV_WC_GENERAL_ERR:
		code = COLL_ERR_TRANSPORT;   /* ours: a bug or a broken adapter, not the peer */
		break;
	default:   /* retry exceeded, remote errors, flushes after them */
		break;
	}
	peer_fail(t, p, code, "ibverbs: link to rank %d failed: %s (%s, vendor error 0x%x)", r,
	          ibv_wc_status_str(wc->status),
	          kind == WR_RECV ? "receive" : kind == WR_PROBE ? "probe" : kind == WR_CREDIT ? "credit" : "write",
	          wc->vendor_err);
}

static int poll_cq(ib_tp *t, int *moved)
{
	struct ibv_wc wc[32];
	for (;;) {
		int k = ibv_poll_cq(t->cq, 32, wc);
		if (k < 0)
			return H->err(t->base.comm, COLL_ERR_TRANSPORT, "ibverbs: ibv_poll_cq failed on %s", t->dev);
		for (int i = 0; i < k; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				on_bad_wc(t, &wc[i]);
				continue;
			}
			int r = (int)(uint32_t)wc[i].wr_id, kind = (int)(wc[i].wr_id >> 32), rc;
			if (r < 0 || r >= t->n || r == t->rank)
				return H->err(t->base.comm, COLL_ERR_TRANSPORT, "ibverbs: stray completion 0x%llx",
				              (unsigned long long)wc[i].wr_id);
			ib_peer *p = &t->peers[r];
			if (!p->qp || wc[i].qp_num != p->qp->qp_num)
				continue;   /* a queue pair since replaced (rejoin) */
			p->last_heard_ms = H->now_ms();
			if (kind == WR_RECV) {
				/* Re-post first: the receive queue must stay as deep as the
				 * immediates that can be in flight. */
				if ((rc = post_recvs(t, p, 1)) ||
				    (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM && (rc = on_imm(t, p, ntohl(wc[i].imm_data), moved))))
					return rc;
				continue;
			}
			/* A signaled batch: they complete in post order per queue pair. */
			if (!p->sent_count)
				return H->err(t->base.comm, COLL_ERR_TRANSPORT, "ibverbs: unexpected send completion (rank %d)", r);
			ib_sent *s = &p->sent[p->sent_head];
			p->sent_head = (p->sent_head + 1) % t->sent_cap;
			p->sent_count--;
			p->sq_used -= s->wrs;
			if (s->mr)
				ib_mrc_put(&t->mrc, s->mr);
			if (s->req) {
				s->req->tpseq = 1;
				*moved |= finish_sends(p);
			}
			if (s->kind == WR_PROBE)
				p->probing = 0;
		}
		if (k < 32)
			return COLL_OK;
	}
}

/* Device and queue-pair events (ibv_get_async_event): a removed or reset
 * device, a port going down, a queue pair in error. */
static int async_events(ib_tp *t)
{
	struct ibv_async_event ev;
	while (ibv_get_async_event(t->ctx, &ev) == 0) {
		enum ibv_event_type type = ev.event_type;
		switch (type) {
		case IBV_EVENT_DEVICE_FATAL:
		case IBV_EVENT_CQ_ERR:
			if (!t->fatal)
				snprintf(t->fatal_why, sizeof t->fatal_why, "ibverbs: device %s: %s (removed or reset?)", t->dev,
				         ibv_event_type_str(type));
			t->fatal = 1;
			break;
		case IBV_EVENT_PORT_ERR:
			if (!t->fatal && ev.element.port_num == t->port)
				snprintf(t->fatal_why, sizeof t->fatal_why, "ibverbs: device %s port %d: %s (link down)", t->dev,
				         t->port, ibv_event_type_str(type));
			t->fatal |= ev.element.port_num == t->port;
			break;
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_PATH_MIG_ERR:
			for (int r = 0; r < t->n; r++)
				if (t->peers[r].qp && t->peers[r].qp == ev.element.qp)
					peer_fail(t, &t->peers[r], COLL_ERR_PEER, "ibverbs: link to rank %d failed: %s", r,
					          ibv_event_type_str(type));
			break;
		default:
			break;
		}
		ibv_ack_async_event(&ev);
	}
	return t->fatal ? H->err(t->base.comm, COLL_ERR_TRANSPORT, "%s", t->fatal_why) : COLL_OK;
}

/* --- progress ------------------------------------------------------------ */

/* Poll completions, post waiting sends and due credits (every freed slot
 * when idle), and report a failed link the executor still needs. */
static int pass(ib_tp *t, int idle, int *moved)
{
	int rc;
	if (t->fatal)
		return H->err(t->base.comm, COLL_ERR_TRANSPORT, "%s", t->fatal_why);
	if ((rc = poll_cq(t, moved)))
		return rc;
	for (int r = 0; r < t->n; r++) {
		ib_peer *p = &t->peers[r];
		if (r == t->rank)
			continue;
		if (p->gone) {
			if (peer_needed(p)) {
				t->base.err_peer = r;
				return H->err(t->base.comm, p->gone_code, "%s", p->gone_why);
			}
			continue;
		}
		if ((rc = drain_sends(t, p, moved)))
			return rc;
		if (room(t, p, 1, 2)) {
			uint32_t c = ib_rx_credits(&p->rx, t->credit_batch, idle);
			if (c && (rc = post_signal(t, p, WR_CREDIT, ib_imm(IB_IMM_CREDIT, c))))
				return rc;
		}
	}
	return COLL_OK;
}

/* A peer we wait on that has said nothing for probe_ms: a zero-byte write
 * fails (retry exceeded) if its queue pair is gone. */
static int probe(ib_tp *t)
{
	int64_t now = H->now_ms();
	for (int r = 0; t->probe_ms > 0 && r < t->n; r++) {
		ib_peer *p = &t->peers[r];
		if (r == t->rank || p->gone || p->probing || !p->rq.head || now - p->last_heard_ms < t->probe_ms ||
		    !room(t, p, 1, 1))
			continue;
		int rc = post_signal(t, p, WR_PROBE, 0);
		if (rc)
			return rc;
		p->probing = 1;
		p->last_heard_ms = now;
	}
	return COLL_OK;
}

static int ib_progress(rt_tp *tp, int timeout_ms)
{
	ib_tp *t = (ib_tp *)tp;
	int moved = 0, rc;
	if (t->n == 1)
		return COLL_OK;
	if ((rc = pass(t, 0, &moved)) || moved || timeout_ms <= 0)
		return rc;
	for (int64_t until = H->now_ns() + t->spin_ns; t->spin_ns > 0 && H->now_ns() < until;)
		if ((rc = pass(t, 0, &moved)) || moved)
			return rc;
	/* About to sleep: give back every freed slot (a sender may be waiting
	 * for exactly those), check on silent peers, arm the channel, and look
	 * once more for completions that beat the arming. */
	if ((rc = pass(t, 1, &moved)) || moved || (rc = probe(t)))
		return rc;
	if (!t->armed) {
		if (ibv_req_notify_cq(t->cq, 0))
			return H->err(tp->comm, COLL_ERR_TRANSPORT, "ibverbs: ibv_req_notify_cq failed on %s", t->dev);
		t->armed = 1;
	}
	if ((rc = pass(t, 1, &moved)) || moved)
		return rc;
	struct pollfd fds[2] = {{t->ch->fd, POLLIN, 0}, {t->ctx->async_fd, POLLIN, 0}};
	int k = poll(fds, 2, timeout_ms);
	if (k < 0 && errno != EINTR)
		return H->err(tp->comm, COLL_ERR_SYSTEM, "ibverbs: poll: %s", strerror(errno));
	if (k > 0 && fds[0].revents) {
		struct ibv_cq *cq;
		void *cctx;
		while (ibv_get_cq_event(t->ch, &cq, &cctx) == 0) {
			ibv_ack_cq_events(cq, 1);   /* at once: ibv_destroy_cq waits for every ack */
			t->armed = 0;
		}
	}
	if (k > 0 && fds[1].revents && (rc = async_events(t)))
		return rc;
	return pass(t, 0, &moved);
}

static void ib_abort(rt_tp *tp, int code)
{
	ib_tp *t = (ib_tp *)tp;
	int posted = 0;
	for (int r = 0; r < t->n; r++) {
		ib_peer *p = &t->peers[r];
		if (r != t->rank && p->qp && !p->gone && room(t, p, 1, 0) &&
		    post_signal(t, p, WR_ABORT, ib_imm(IB_IMM_ABORT, (uint32_t)code)) == COLL_OK)
			posted++;
	}
	/* Give the writes a moment to leave (the queue pairs may be destroyed
	 * right after); never block long. */
	int64_t end = H->now_ms() + 200;
	struct ibv_wc wc[16];
	while (posted > 0 && H->now_ms() < end) {
		int k = ibv_poll_cq(t->cq, 16, wc);
		for (int i = 0; i < k; i++)
			posted -= (int)(wc[i].wr_id >> 32) == WR_ABORT;
		if (k < 0)
			break;
	}
}

/* --- close --------------------------------------------------------------- */

/* The registrations p's batches still in flight hold go back to the
 * cache (their queue pair is going: close, rejoin). */
static void put_sent(ib_tp *t, ib_peer *p)
{
	for (uint32_t i = 0; i < p->sent_count; i++) {
		ib_sent *s = &p->sent[(p->sent_head + i) % t->sent_cap];
		if (s->mr)
			ib_mrc_put(&t->mrc, s->mr);
	}
}

static void ib_close(rt_tp *tp)
{
	ib_tp *t = (ib_tp *)tp;
	if (!t)
		return;
	/* Let writes in flight land before their queue pairs go: the last
	 * messages of a call are "done" for the executor as soon as they are
	 * copied.  A dead peer's writes fail within the retry timeout; cap the
	 * wait anyway. */
	int64_t end = H->now_ms() + 2000;
	for (int busy = 1; busy && t->cq && !t->fatal && H->now_ms() < end;) {
		int moved = 0;
		busy = 0;
		if (poll_cq(t, &moved))
			break;
		for (int r = 0; r < t->n; r++)
			busy |= r != t->rank && t->peers && t->peers[r].qp && !t->peers[r].gone && t->peers[r].sent_count;
		if (busy) {
			struct timespec ts = {0, 20000};   /* acks take microseconds; a dead peer's retries, ~0.5 s */
			nanosleep(&ts, NULL);
		}
	}
	for (int r = 0; t->peers && r < t->n; r++) {
		ib_peer *p = &t->peers[r];
		if (p->qp)
			ibv_destroy_qp(p->qp);
		if (p->sent)
			put_sent(t, p);
		free(p->arr);
		free(p->sent);
		free(p->rx.run);
	}
	if (t->mrc_on)
		ib_mrc_flush(&t->mrc);
	if (t->in_mr)
		ibv_dereg_mr(t->in_mr);
	if (t->out_mr)
		ibv_dereg_mr(t->out_mr);
	if (t->cq)
		ibv_destroy_cq(t->cq);
	if (t->ch)
		ibv_destroy_comp_channel(t->ch);
	if (t->pd)
		ibv_dealloc_pd(t->pd);
	if (t->ctx)
		ibv_close_device(t->ctx);
	if (t->mem)
		munmap(t->mem, t->mem_bytes);
	free(t->peers);
	free(t);
}

/* --- connect ------------------------------------------------------------- */

static void *mr_reg(void *ctx, void *addr, size_t len, uint32_t *lkey)
{
	ib_tp *t = ctx;
	/* Local reads only (the adapter reads our payload), on demand. */
	struct ibv_mr *mr = ibv_reg_mr(t->pd, addr, len, IBV_ACCESS_ON_DEMAND);
	if (mr)
		*lkey = mr->lkey;
	return mr;
}

static void mr_dereg(void *ctx, void *handle)
{
	(void)ctx;
	ibv_dereg_mr(handle);
}

/* The first RoCE v2 GID that is an IPv4-mapped address (routable, what
 * NCCL and UCX pick by default), else the first RoCE v2 one, else 0. */
static int pick_gid(struct ibv_context *ctx, int port, int tbl_len)
{
	int v2 = -1;
	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;
		if (ibv_query_gid_ex(ctx, (uint32_t)port, (uint32_t)i, &e, 0) || e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(e.gid.raw, v4, 12) == 0)
			return i;
		if (v2 < 0)
			v2 = i;
	}
	return v2 >= 0 ? v2 : 0;
}

/* Open the device and port COLL_IB_HCA names (or the first with an active
 * port) and read what the connection records carry.  Errors: TRANSPORT
 * (no device, no such device, port not active, no ODP when asked for). */
static int open_device(ib_tp *t)
{
	coll_comm *c = t->base.comm;
	int num = 0, rc = COLL_OK;
	errno = 0;
	struct ibv_device **list = ibv_get_device_list(&num);
	if (!list || num == 0) {
		int e = errno;
		if (list)
			ibv_free_device_list(list);
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: no RDMA device: ibv_get_device_list found none%s%s%s",
		              e ? " (" : "", e ? strerror(e) : "", e ? ")" : "");
	}
	const char *hca = t->hca ? t->hca : env_str("COLL_IB_HCA", NULL);
	char want[64] = "";
	int want_port = 0;
	if (hca) {
		const char *colon = strchr(hca, ':');
		size_t l = colon ? (size_t)(colon - hca) : strlen(hca);
		snprintf(want, sizeof want, "%.*s", (int)(l < sizeof want ? l : sizeof want - 1), hca);
		want_port = colon ? atoi(colon + 1) : 0;
	}
	struct ibv_port_attr pa;
	for (int i = 0; i < num && !t->ctx; i++) {
		const char *name = ibv_get_device_name(list[i]);
		if (want[0] && strcmp(name, want) != 0)
			continue;
		struct ibv_context *ctx = ibv_open_device(list[i]);
		if (!ctx) {
			if (want[0]) {
				rc = H->err(c, COLL_ERR_TRANSPORT, "ibverbs: ibv_open_device(%s): %s", name, strerror(errno));
				break;
			}
			continue;
		}
		struct ibv_device_attr da;
		if (ibv_query_device(ctx, &da)) {
			ibv_close_device(ctx);
			continue;
		}
		for (int port = want_port ? want_port : 1; port <= da.phys_port_cnt; port++) {
			if (ibv_query_port(ctx, (uint8_t)port, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
				t->ctx = ctx;
				t->port = port;
				snprintf(t->dev, sizeof t->dev, "%s", name);
				break;
			}
			if (want_port)
				break;
		}
		if (!t->ctx) {
			if (want[0])
				rc = H->err(c, COLL_ERR_TRANSPORT, "ibverbs: COLL_IB_HCA=%s: port %d of %s is %s, not active", hca,
				            want_port ? want_port : 1, name,
				            want_port && ibv_query_port(ctx, (uint8_t)want_port, &pa) == 0
				                    ? ibv_port_state_str(pa.state)
				                    : "missing or down");
			ibv_close_device(ctx);
			if (want[0])
				break;
		}
	}
	if (!t->ctx && !rc) {
		char names[256] = "";
		size_t at = 0;
		for (int i = 0; i < num && at < sizeof names; i++)
			at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", ibv_get_device_name(list[i]));
		rc = want[0] ? H->err(c, COLL_ERR_TRANSPORT, "ibverbs: COLL_IB_HCA=%s: no such device (found: %s)", hca, names)
		             : H->err(c, COLL_ERR_TRANSPORT, "ibverbs: no active port on any RDMA device (found: %s)", names);
	}
	ibv_free_device_list(list);
	if (rc)
		return rc;

	t->lid = pa.lid;
	t->mtu = (uint8_t)pa.active_mtu;
	t->link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? 2 : 1;
	long gi = H->env_long("COLL_IB_GID_INDEX", -1);
	if (gi < 0 && t->link_layer == 2)
		gi = pick_gid(t->ctx, t->port, pa.gid_tbl_len);
	if (gi >= 0 && gi < pa.gid_tbl_len && gi < IB_NO_GRH) {
		t->gid_index = (uint8_t)gi;
		if (ibv_query_gid(t->ctx, (uint8_t)t->port, (int)gi, &t->gid))
			return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: %s port %d: no GID at index %ld", t->dev, t->port, gi);
	} else if (gi >= 0 || t->link_layer == 2) {
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: %s port %d: GID index %ld out of range (table of %d)", t->dev,
		              t->port, gi, pa.gid_tbl_len);
	} else {
		t->gid_index = IB_NO_GRH;   /* InfiniBand within a subnet: LID routing */
		if (t->lid == 0)
			return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: %s port %d has no LID (is a subnet manager running?)",
			              t->dev, t->port);
	}
	if (t->reg == REG_ODP) {
		struct ibv_device_attr_ex ax;
		memset(&ax, 0, sizeof ax);
		if (ibv_query_device_ex(t->ctx, NULL, &ax) || !(ax.odp_caps.general_caps & IBV_ODP_SUPPORT) ||
		    !(ax.odp_caps.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_SEND))
			return H->err(c, COLL_ERR_TRANSPORT,
			              "ibverbs: COLL_IB_REG=odp, but %s has no on-demand paging for RC sends (use copy)", t->dev);
	}
	return COLL_OK;
}

/* A queue pair for p in INIT, with a fresh starting sequence number. */
static int make_qp(ib_tp *t, ib_peer *p)
{
	coll_comm *c = t->base.comm;
	int r = p->rank;
	struct ibv_qp_init_attr qa = {0};
	qa.send_cq = qa.recv_cq = t->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = t->sq_depth;
	qa.cap.max_recv_wr = t->rq_depth;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = t->max_inline;
	if (!(p->qp = ibv_create_qp(t->pd, &qa)) && t->max_inline) {
		t->max_inline = qa.cap.max_inline_data = 0;   /* some adapters have no inline data */
		p->qp = ibv_create_qp(t->pd, &qa);
	}
	if (!p->qp)
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: ibv_create_qp for rank %d: %s", r, strerror(errno));
	if (qa.cap.max_inline_data < t->max_inline)
		t->max_inline = qa.cap.max_inline_data;
	struct ibv_qp_attr a = {0};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = (uint8_t)t->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	int e = ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (e)
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: queue pair for rank %d to INIT: %s", r, strerror(e));
	uint32_t psn = 0;
	if (getrandom(&psn, sizeof psn, 0) != sizeof psn)
		psn = (uint32_t)H->now_ns();
	p->psn = psn & 0xffffff;
	return COLL_OK;
}

/* Protection domain, completion queue and channel, the rings, and one RC
 * queue pair per peer in INIT.  Errors: TRANSPORT, NOMEM. */
static int setup(ib_tp *t)
{
	coll_comm *c = t->base.comm;
	struct ibv_device_attr da;
	if (ibv_query_device(t->ctx, &da))
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: ibv_query_device(%s) failed", t->dev);
	int np = t->n - 1;
	uint32_t N = t->g.nslots;
	/* Send queue: a data message per slot, each of up to max_msg / chunk
	 * writes, plus a credit per slot and the reserve; completions: one per
	 * signaled batch.  Receive queue: an immediate per slot of data and
	 * per slot of credits in flight, plus an abort. */
	t->sent_cap = 2 * N + SQ_RESERVE + 1;
	t->sq_depth = N * ib_nchunks(t->base.max_msg, t->chunk) + N + SQ_RESERVE + 1;
	t->rq_depth = 2 * N + 4;
	if (t->sq_depth > (uint32_t)da.max_qp_wr)
		t->sq_depth = (uint32_t)da.max_qp_wr;
	if (t->rq_depth > (uint32_t)da.max_qp_wr)
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: %s takes %d work requests per queue, COLL_IB_SLOTS=%u needs %u",
		              t->dev, da.max_qp_wr, N, t->rq_depth);
	if (!(t->pd = ibv_alloc_pd(t->ctx)))
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: ibv_alloc_pd(%s): %s", t->dev, strerror(errno));
	if (!(t->ch = ibv_create_comp_channel(t->ctx)))
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: ibv_create_comp_channel(%s): %s", t->dev, strerror(errno));
	fcntl(t->ch->fd, F_SETFL, fcntl(t->ch->fd, F_GETFL) | O_NONBLOCK);
	fcntl(t->ctx->async_fd, F_SETFL, fcntl(t->ctx->async_fd, F_GETFL) | O_NONBLOCK);
	/* Every entry either queue can produce, flushes of unsignaled writes
	 * after an error included. */
	long cqe = (long)np * (t->sq_depth + t->rq_depth) + 16;
	if (cqe > da.max_cqe)
		cqe = da.max_cqe;
	if (!(t->cq = ibv_create_cq(t->ctx, (int)cqe, NULL, t->ch, 0)))
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: ibv_create_cq(%s, %ld): %s", t->dev, cqe, strerror(errno));

	t->ring_bytes = (size_t)N * t->g.slot_bytes;
	t->mem_bytes = 2 * (size_t)np * t->ring_bytes;
	if (np > 0) {
		t->mem = mmap(NULL, t->mem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (t->mem == MAP_FAILED) {
			t->mem = NULL;
			return H->err(c, COLL_ERR_NOMEM, "ibverbs: %zu bytes of rings: %s", t->mem_bytes, strerror(errno));
		}
		/* A fork in the application must not copy-on-write pages the
		 * adapter writes to. */
		madvise(t->mem, t->mem_bytes, MADV_DONTFORK);
		size_t half = t->mem_bytes / 2;
		if (!(t->in_mr = ibv_reg_mr(t->pd, t->mem, half, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)) ||
		    !(t->out_mr = ibv_reg_mr(t->pd, t->mem + half, half, IBV_ACCESS_LOCAL_WRITE)))
			return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: ibv_reg_mr of %zu bytes of rings: %s (ulimit -l?)", half,
			              strerror(errno));
	}
	t->max_inline = INLINE_WANT;
	for (int r = 0; r < t->n; r++) {
		ib_peer *p = &t->peers[r];
		p->rank = r;
		if (r == t->rank)
			continue;
		size_t at = (size_t)peer_idx(t, r) * t->ring_bytes;
		p->in = t->mem + at;
		p->out = t->mem + t->mem_bytes / 2 + at;
		p->arr = calloc(N, sizeof *p->arr);
		p->sent = calloc(t->sent_cap, sizeof *p->sent);
		p->rx.run = calloc(N, sizeof *p->rx.run);
		if (!p->arr || !p->sent || !p->rx.run)
			return H->err(c, COLL_ERR_NOMEM, "out of memory");
		int rc = make_qp(t, p);
		if (rc)
			return rc;
	}
	return COLL_OK;
}

/* Bring p's queue pair to ready-to-send against the peer's record. */
static int connect_qp(ib_tp *t, ib_peer *p, const ib_conn *rc)
{
	coll_comm *c = t->base.comm;
	struct ibv_qp_attr a = {0};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)(rc->mtu < t->mtu ? rc->mtu : t->mtu);
	a.dest_qp_num = rc->qpn;
	a.rq_psn = rc->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = rc->lid;
	a.ah_attr.sl = (uint8_t)t->sl;
	a.ah_attr.port_num = (uint8_t)t->port;
	if (t->gid_index != IB_NO_GRH) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, rc->gid, 16);
		a.ah_attr.grh.sgid_index = t->gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.traffic_class = (uint8_t)t->tc;
	}
	int e = ibv_modify_qp(p->qp, &a,
	                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (e)
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: queue pair for rank %d to RTR: %s", p->rank, strerror(e));
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)t->ack_timeout;
	a.retry_cnt = (uint8_t)t->retry_cnt;
	a.rnr_retry = 7;   /* by design never needed (see the receive queue's depth); if it is, wait */
	a.sq_psn = p->psn;
	a.max_rd_atomic = 1;
	e = ibv_modify_qp(p->qp, &a,
	                  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
	                          IBV_QP_MAX_QP_RD_ATOMIC);
	if (e)
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: queue pair for rank %d to RTS: %s", p->rank, strerror(e));
	p->raddr = rc->addr;
	p->rkey = rc->rkey;
	return post_recvs(t, p, t->rq_depth);
}

/* Our record for peer r (or a status-only one when we failed: rc). */
static void my_record(const ib_tp *t, int r, int rc, uint8_t out[IB_WIRE_BYTES])
{
	ib_conn k;
	memset(&k, 0, sizeof k);
	k.from = (uint32_t)t->rank;
	k.to = (uint32_t)r;
	k.status = (uint16_t)rc;
	if (!rc && r != t->rank) {
		const ib_peer *p = &t->peers[r];
		k.lid = t->lid;
		k.port = (uint8_t)t->port;
		k.mtu = t->mtu;
		k.link_layer = t->link_layer;
		k.gid_index = t->gid_index;
		k.qpn = p->qp->qp_num;
		k.psn = p->psn;
		k.addr = (uintptr_t)p->in;
		k.rkey = t->in_mr->rkey;
		k.slot_bytes = t->g.slot_bytes;
		k.nslots = t->g.nslots;
		memcpy(k.gid, t->gid.raw, 16);
	}
	ib_wire_pack(&k, out);
}

/* Check peer r's record for us. */
static int check_record(ib_tp *t, int r, const uint8_t *in, ib_conn *k)
{
	coll_comm *c = t->base.comm;
	int w = ib_wire_unpack(in, IB_WIRE_BYTES, k);
	if (w)
		return H->err(c, COLL_ERR_PROTOCOL, "ibverbs: rank %d: %s", r, ib_wire_strerror(w));
	if (k->from != (uint32_t)r || k->to != (uint32_t)t->rank)
		return H->err(c, COLL_ERR_PROTOCOL, "ibverbs: rank %d sent the record of %u -> %u", r, k->from, k->to);
	if (k->status)
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: rank %d could not set up RDMA (%s; see its error)", r,
		              H->strerror((coll_result)k->status));
	if (k->slot_bytes != t->g.slot_bytes || k->nslots != t->g.nslots)
		return H->err(c, COLL_ERR_TRANSPORT,
		              "ibverbs: rank %d uses %u slots of %u bytes, this rank %u of %u (set COLL_IB_SLOTS and "
		              "COLL_IB_SLOT_BYTES alike everywhere)",
		              r, k->nslots, k->slot_bytes, t->g.nslots, t->g.slot_bytes);
	if (k->link_layer != t->link_layer)
		return H->err(c, COLL_ERR_TRANSPORT, "ibverbs: rank %d is on %s, this rank on %s", r,
		              k->link_layer == 2 ? "Ethernet (RoCE)" : "InfiniBand",
		              t->link_layer == 2 ? "Ethernet (RoCE)" : "InfiniBand");
	return COLL_OK;
}

static int ib_open(coll_comm *c, const char *hca, rt_tp **out)
{
	ib_tp *t = calloc(1, sizeof *t);
	if (!t)
		return H->err(c, COLL_ERR_NOMEM, "out of memory");
	t->base.comm = c;
	t->base.ops = &ib_transport;
	t->base.err_peer = -1;
	t->hca = hca;
	t->rank = c->rank;
	t->n = c->n;
	*out = &t->base;
	long slot = H->env_long("COLL_IB_SLOT_BYTES", 64 << 10), nslots = H->env_long("COLL_IB_SLOTS", 64);
	if (slot < 4096)
		slot = 4096;
	if (slot > 64L << 20)
		slot = 64L << 20;
	slot = (slot + 63) & ~63L;   /* messages start cache-line aligned, like shm's slots */
	if (nslots < 2)
		nslots = 2;
	if (nslots > 4096)
		nslots = 4096;
	t->g = (ib_geom){(uint32_t)slot, (uint32_t)nslots};
	long seg = H->env_long("COLL_IB_SEG_BYTES", (512 << 10) - (long)sizeof(rt_hdr));
	if (seg < 64)
		seg = 64;
	t->base.max_msg = ib_max_msg(&t->g, (size_t)seg + sizeof(rt_hdr));
	if (t->base.max_msg > IB_IMM_MAX)
		t->base.max_msg = IB_IMM_MAX & ~(size_t)63;
	int w = ib_window(&t->g, t->base.max_msg);
	t->base.send_window = w;
	t->base.recv_window = w;
	long chunk = H->env_long("COLL_IB_CHUNK_BYTES", 64 << 10);
	t->chunk = chunk >= 4096 ? (size_t)chunk : 4096;
	t->credit_batch = t->g.nslots / 4 ? t->g.nslots / 4 : 1;
	t->sl = (int)H->env_long("COLL_IB_SL", 0);
	t->tc = (int)H->env_long("COLL_IB_TC", 0);
	t->ack_timeout = (int)H->env_long("COLL_IB_TIMEOUT", 14);
	t->retry_cnt = (int)H->env_long("COLL_IB_RETRY_CNT", 7);
	t->probe_ms = (int)H->env_long("COLL_IB_PROBE_MS", 1000);
	t->spin_ns = H->spin_ns(c, "COLL_IB_SPIN_US");
	const char *reg = env_str("COLL_IB_REG", "copy");
	t->zcopy_bytes = (size_t)H->env_long("COLL_IB_ZCOPY_BYTES", 64 << 10);
	t->peers = calloc((size_t)t->n, sizeof *t->peers);
	if (!t->peers)
		return H->err(c, COLL_ERR_NOMEM, "out of memory");

	int rc = COLL_OK;
	if (strcmp(reg, "odp") == 0)
		t->reg = REG_ODP;
	else if (strcmp(reg, "copy") != 0)
		rc = H->err(c, COLL_ERR_TRANSPORT, "ibverbs: COLL_IB_REG=%s: expected copy or odp", reg);
	if (!rc)
		rc = open_device(t);
	if (!rc)
		rc = setup(t);
	if (!rc && t->reg == REG_ODP) {
		ib_mr_ops ops = {mr_reg, mr_dereg, t};
		ib_mrc_init(&t->mrc, &ops, (int)H->env_long("COLL_IB_MR_CACHE", 64),
		            (size_t)H->env_long("COLL_IB_MR_CACHE_BYTES", 4L << 30), (size_t)sysconf(_SC_PAGESIZE));
		t->mrc_on = 1;
	}

	/* Exchange records even when we failed, so that every rank stops now
	 * with a reason.  Our own message survives the exchange. */
	size_t rec = (size_t)t->n * IB_WIRE_BYTES;
	uint8_t *mine = malloc(rec), *all = malloc(rec * (size_t)t->n);
	if (!mine || !all) {
		free(mine), free(all);
		return H->err(c, COLL_ERR_NOMEM, "out of memory");
	}
	for (int r = 0; r < t->n; r++)
		my_record(t, r, rc, mine + (size_t)r * IB_WIRE_BYTES);
	char why[sizeof c->err];
	snprintf(why, sizeof why, "%s", c->err);
	int arc = H->boot_allgather(c, mine, all, rec);
	if (rc) {
		H->err(c, rc, "%s", why);
	} else if (arc) {
		rc = arc;
	} else {
		for (int r = 0; r < t->n && !rc; r++) {
			ib_conn k;
			if (r != t->rank && !(rc = check_record(t, r, all + (size_t)r * rec + (size_t)t->rank * IB_WIRE_BYTES, &k)))
				rc = connect_qp(t, &t->peers[r], &k);
		}
		/* Everyone's queue pairs are ready before anyone writes; a rank
		 * that failed here tells the others. */
		int32_t st = rc, *sts = malloc(sizeof *sts * (size_t)t->n);
		snprintf(why, sizeof why, "%s", c->err);
		arc = sts ? H->boot_allgather(c, &st, sts, sizeof st) : H->err(c, COLL_ERR_NOMEM, "out of memory");
		if (rc)
			H->err(c, rc, "%s", why);
		else if (arc)
			rc = arc;
		for (int r = 0; !rc && r < t->n; r++)
			if (sts[r])
				rc = H->err(c, COLL_ERR_TRANSPORT, "ibverbs: rank %d could not connect its queue pairs (%s)", r,
				            H->strerror((coll_result)sts[r]));
		free(sts);
	}
	free(mine);
	free(all);
	for (int r = 0; !rc && r < t->n; r++)
		t->peers[r].last_heard_ms = H->now_ms();
	return rc;
}

static int ib_connect(coll_comm *c, rt_tp **out) { return ib_open(c, NULL, out); }

/* --- As a rail (rails.c) -----------------------------------------------------
 * Rail `where` is "dev[:port]" as COLL_IB_HCA takes it (NULL: COLL_IB_HCA,
 * else the first active port).  Connection records go through the
 * bootstrap as at connect.  A link that rails.c drops is put in the error
 * state.  It rejoins through records that rails.c carries on a surviving
 * rail (rejoin_offer / rejoin_accept: there is no address to dial, a queue
 * pair is made by both ends exchanging records): each end replaces the
 * peer's queue pair with a fresh one and starts its ring for that peer
 * over, both sides' counters at zero.  Completions of the replaced queue
 * pair that are still in the completion queue (flushes) are told apart by
 * their queue-pair number and ignored. */
static int ib_rail_connect(coll_comm *c, int index, const char *where, rt_tp **out)
{
	(void)index;
	return ib_open(c, where && *where ? where : NULL, out);
}

static void ib_drop(rt_tp *tp, int r)
{
	ib_tp *t = (ib_tp *)tp;
	if (r < 0 || r >= t->n || r == t->rank || !t->peers)
		return;
	ib_peer *p = &t->peers[r];
	peer_fail(t, p, COLL_ERR_PEER, "ibverbs: the link to rank %d was dropped", r);
	if (p->qp) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
		ibv_modify_qp(p->qp, &a, IBV_QP_STATE);   /* outstanding work completes as flushed */
	}
	/* The requests are the caller's again; completions still to come for
	 * them (flushes) must not touch them. */
	for (uint32_t i = 0; p->sent && i < p->sent_count; i++)
		p->sent[(p->sent_head + i) % t->sent_cap].req = NULL;
	p->sq = (rt_reqq){0};
	p->wait = (rt_reqq){0};
	p->rq = (rt_reqq){0};
	p->reserved = NULL;
}

/* A fresh queue pair for r in place of the dropped one, the ring for r
 * started over, and its record in rec. */
static int ib_rejoin_offer(rt_tp *tp, int r, uint8_t *rec, size_t cap, size_t *len)
{
	ib_tp *t = (ib_tp *)tp;
	coll_comm *c = tp->comm;
	if (r < 0 || r >= t->n || r == t->rank || !t->peers || cap < IB_WIRE_BYTES || t->fatal)
		return H->err(c, COLL_ERR_INVALID, "ibverbs: cannot offer a link to rank %d", r);
	ib_peer *p = &t->peers[r];
	if (!p->gone)
		ib_drop(tp, r);
	if (p->qp)
		ibv_destroy_qp(p->qp);
	p->qp = NULL;
	put_sent(t, p);
	uint32_t N = t->g.nslots;
	memset(p->arr, 0, N * sizeof *p->arr);
	memset(p->rx.run, 0, N * sizeof *p->rx.run);
	p->tx = (ib_tx){0};
	p->rx.head = p->rx.tail = p->rx.reported = 0;
	p->arr_head = p->arr_count = 0;
	p->sent_head = p->sent_count = 0;
	p->sq_used = 0;
	p->probing = 0;
	int rc = make_qp(t, p);
	if (rc)
		return rc;
	my_record(t, r, 0, rec);
	*len = IB_WIRE_BYTES;
	return COLL_OK;
}

/* Connect the queue pair rejoin_offer made for r to r's record: r's link
 * is up again. */
static int ib_rejoin_accept(rt_tp *tp, int r, const uint8_t *rec, size_t len)
{
	ib_tp *t = (ib_tp *)tp;
	coll_comm *c = tp->comm;
	if (r < 0 || r >= t->n || r == t->rank || !t->peers || !t->peers[r].qp || !t->peers[r].gone)
		return H->err(c, COLL_ERR_INVALID, "ibverbs: no fresh queue pair for rank %d", r);
	if (len != IB_WIRE_BYTES)
		return H->err(c, COLL_ERR_PROTOCOL, "ibverbs: rank %d's record has %zu bytes, not %d", r, len, IB_WIRE_BYTES);
	ib_peer *p = &t->peers[r];
	ib_conn k;
	int rc = check_record(t, r, rec, &k);
	if (!rc)
		rc = connect_qp(t, p, &k);
	if (rc)
		return rc;
	p->gone = 0;
	p->gone_code = 0;
	p->gone_why[0] = 0;
	p->last_heard_ms = H->now_ms();
	return COLL_OK;
}

static int ib_adopt(rt_tp *tp, int r, int fd, const uint8_t sess[16])
{
	(void)sess;
	close(fd);
	return H->err(tp->comm, COLL_ERR_UNSUPPORTED, "ibverbs: cannot take a new link to rank %d while running", r);
}

static const rt_rail_ops ib_rail = {
	.connect = ib_rail_connect,
	.drop = ib_drop,
	.adopt = ib_adopt,
	.rejoin_offer = ib_rejoin_offer,
	.rejoin_accept = ib_rejoin_accept,
};

static const rt_transport ib_transport = {
	.name = "ibverbs",
	.size = sizeof(rt_transport),
	.connect = ib_connect,
	.post_send = ib_post_send,
	.post_recv = ib_post_recv,
	.release = ib_release,
	.progress = ib_progress,
	.abort = ib_abort,
	.close = ib_close,
	.send_reserve = ib_send_reserve,
	.send_commit = ib_send_commit,
	.rail = &ib_rail,
};

/* The plugin's one export: the transport, or NULL when `host` was built
 * against another layout of libcollrt's structures. */
COLL_API const rt_transport *coll_ibverbs_plugin(const rt_host_api *host);
const rt_transport *coll_ibverbs_plugin(const rt_host_api *host)
{
	if (!host || host->size != sizeof(rt_host_api) || host->comm_size != sizeof(coll_comm) ||
	    host->tp_size != sizeof(rt_transport))
		return NULL;
	H = host;
	return &ib_transport;
}
