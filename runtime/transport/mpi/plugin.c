/*
 * plugin.c - libcollrt_mpi.so: the MPI bootstrap and the "mpi" transport.
 *
 * Built only where mpicc exists and loaded by libcollrt with dlopen
 * (mpiboot.c), so that libcollrt itself never links libmpi.  It exports
 * one symbol, coll_mpi_plugin(), returning the rt_mpi_plugin table of
 * rt.h; everything it needs from libcollrt comes through rt_host_api.
 *
 * Bootstrap: MPI_Init_thread (FUNNELED) unless the application initialised
 * MPI itself (then it also finalises it; otherwise MPI_Finalize runs at
 * exit), MPI_COMM_WORLD (or the communicator coll_init_mpi was given)
 * duplicated once for the bootstrap collectives and once for the transport, both with MPI_ERRORS_RETURN.  The duplication
 * and the bootstrap collectives are the non-blocking kind, tested until
 * the bootstrap deadline (COLL_BOOT_TIMEOUT), so that a rank of an MPI
 * application that never calls coll_init is a COLL_ERR_TIMEOUT on the
 * others instead of a hang.  MPI cannot cancel a collective, so after such
 * a timeout MPI stays inconsistent: the plugin then skips its MPI_Finalize
 * at exit (which could wait on the lost collective) and the launcher
 * reports the job's failure.  The same after a failed collective on the
 * mpi transport (its peer may be stopped or dead).
 *
 * Transport: a message (the executor's 64-byte header + payload) travels
 * as two MPI messages with one tag, the header and then the payload, sent
 * with MPI_Isend straight from the caller's buffers.  MPI keeps messages
 * between two ranks with one tag in order, so a receive posts two
 * MPI_Irecv into a pooled max_msg buffer (header, then payload of up to
 * max_msg - 64 bytes) and FIFO matching holds.  Requests complete (done =
 * 1) in post order per peer.  Aborts are a third message kind on their own
 * tag, carrying the origin rank, its code and its words (a relay passes on
 * the first it heard); every rank keeps one MPI_ANY_SOURCE receive posted
 * for them.  A
 * dead peer is the launcher's business: mpirun tears the job down.
 *
 * Tunables: COLL_MPI_SEG_BYTES (payload per message, default 1 MiB).
 */
#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt.h"

#define TAG_DATA 11
#define TAG_ABORT 12

static const rt_host_api *H;
static const rt_transport mpi_transport;

typedef struct {
	MPI_Comm boot, data;
} mpi_state;

/* --- bootstrap -------------------------------------------------------------- */

static int lost_collective;   /* a bootstrap collective timed out */

static void finalize_at_exit(void)
{
	int fin = 0, init = 0;
	MPI_Initialized(&init);
	MPI_Finalized(&fin);
	if (init && !fin && !lost_collective)
		MPI_Finalize();
}

static int mpi_fail(coll_comm *c, int code, const char *what, int err)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(err, msg, &len) != MPI_SUCCESS)
		len = 0;
	msg[len] = 0;
	return H->err(c, code, "%s: %s", what, msg);
}

/* Test a non-blocking bootstrap collective until it completes or the
 * deadline passes: yield at first, then sleep a millisecond a time. */
static int wait_boot(coll_comm *c, MPI_Request *r, int64_t deadline_ms, const char *what)
{
	for (int spins = 0;; spins++) {
		int done = 0, e = MPI_Test(r, &done, MPI_STATUS_IGNORE);
		if (e != MPI_SUCCESS)
			return mpi_fail(c, COLL_ERR_PEER, what, e);
		if (done)
			return COLL_OK;
		if (H->now_ms() >= deadline_ms) {
			lost_collective = 1;
			return H->err(c, COLL_ERR_TIMEOUT,
			              "%s: timed out waiting for the other ranks (COLL_BOOT_TIMEOUT; does every rank "
			              "call coll_init?)",
			              what);
		}
		if (spins < 1000) {
			sched_yield();
		} else {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
	}
}

static int mpi_boot(coll_comm *c)
{
	int init = 0, e;
	MPI_Initialized(&init);
	if (!init) {
		int prov;
		if ((e = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &prov)) != MPI_SUCCESS)
			return mpi_fail(c, COLL_ERR_BOOTSTRAP, "MPI_Init_thread", e);
		atexit(finalize_at_exit);
	}
	mpi_state *st = calloc(1, sizeof *st);
	if (!st)
		return H->err(c, COLL_ERR_NOMEM, "out of memory");
	st->boot = st->data = MPI_COMM_NULL;
	c->boot.mpi_state = st;
	/* coll_init_mpi names the communicator; its collectives are then the
	 * only ones that order this bootstrap against the application's */
	MPI_Comm base = c->boot.mpi_comm ? *(const MPI_Comm *)c->boot.mpi_comm : MPI_COMM_WORLD;
	int inter = 0;
	if ((e = MPI_Comm_test_inter(base, &inter)) != MPI_SUCCESS)
		return mpi_fail(c, COLL_ERR_BOOTSTRAP, "MPI_Comm_test_inter", e);
	if (inter)
		return H->err(c, COLL_ERR_INVALID, "an intercommunicator cannot be bootstrapped on");
	MPI_Comm_rank(base, &c->rank);   /* for the messages from here on */
	MPI_Comm_size(base, &c->n);
	MPI_Request r;
	int rc;
	if ((e = MPI_Comm_idup(base, &st->boot, &r)) != MPI_SUCCESS)
		return mpi_fail(c, COLL_ERR_BOOTSTRAP, "MPI_Comm_idup", e);
	if ((rc = wait_boot(c, &r, c->boot.deadline_ms, "MPI_Comm_idup")))
		return rc;
	if ((e = MPI_Comm_idup(base, &st->data, &r)) != MPI_SUCCESS)
		return mpi_fail(c, COLL_ERR_BOOTSTRAP, "MPI_Comm_idup", e);
	if ((rc = wait_boot(c, &r, c->boot.deadline_ms, "MPI_Comm_idup")))
		return rc;
	MPI_Comm_set_errhandler(st->boot, MPI_ERRORS_RETURN);
	MPI_Comm_set_errhandler(st->data, MPI_ERRORS_RETURN);
	return COLL_OK;
}

static int mpi_allgather(coll_comm *c, const void *mine, void *all, size_t len, int64_t deadline_ms)
{
	mpi_state *st = c->boot.mpi_state;
	MPI_Request r;
	int e = MPI_Iallgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, st->boot, &r);
	return e == MPI_SUCCESS ? wait_boot(c, &r, deadline_ms, "MPI_Iallgather")
	                        : mpi_fail(c, COLL_ERR_PEER, "MPI_Iallgather", e);
}

static int mpi_bcast(coll_comm *c, void *buf, size_t len, int64_t deadline_ms)
{
	mpi_state *st = c->boot.mpi_state;
	MPI_Request r;
	int e = MPI_Ibcast(buf, (int)len, MPI_BYTE, 0, st->boot, &r);
	return e == MPI_SUCCESS ? wait_boot(c, &r, deadline_ms, "MPI_Ibcast") : mpi_fail(c, COLL_ERR_PEER, "MPI_Ibcast", e);
}

static int mpi_barrier(coll_comm *c, int64_t deadline_ms)
{
	mpi_state *st = c->boot.mpi_state;
	MPI_Request r;
	int e = MPI_Ibarrier(st->boot, &r);
	return e == MPI_SUCCESS ? wait_boot(c, &r, deadline_ms, "MPI_Ibarrier")
	                        : mpi_fail(c, COLL_ERR_PEER, "MPI_Ibarrier", e);
}

/* MPI's own collective, for comparison (rt_mpi_plugin.coll): coll's
 * arguments in MPI's terms, coll's in-place layouts (coll.h) as
 * MPI_IN_PLACE. */
static int mpi_coll(coll_comm *c, int kind, const void *sb, void *rb, size_t count, int dtype, int op, int root)
{
	static const MPI_Op ops[] = { [COLL_SUM] = MPI_SUM, [COLL_PROD] = MPI_PROD, [COLL_MIN] = MPI_MIN,
		                      [COLL_MAX] = MPI_MAX };
	MPI_Datatype t;
	switch (dtype) {
	case COLL_INT8: t = MPI_INT8_T; break;
	case COLL_UINT8: t = MPI_UINT8_T; break;
	case COLL_INT32: t = MPI_INT32_T; break;
	case COLL_UINT32: t = MPI_UINT32_T; break;
	case COLL_INT64: t = MPI_INT64_T; break;
	case COLL_UINT64: t = MPI_UINT64_T; break;
	case COLL_FLOAT32: t = MPI_FLOAT; break;
	case COLL_FLOAT64: t = MPI_DOUBLE; break;
	default: return H->err(c, COLL_ERR_UNSUPPORTED, "MPI has no datatype for coll dtype %d", dtype);
	}
	if (count > INT_MAX)
		return H->err(c, COLL_ERR_UNSUPPORTED, "count %zu is more than MPI's int takes", count);
	if ((unsigned)op >= sizeof ops / sizeof ops[0])
		return H->err(c, COLL_ERR_INVALID, "bad op %d", op);
	mpi_state *st = c->boot.mpi_state;
	int n = (int)count, e, es = 0;
	MPI_Type_size(t, &es);
	size_t block = count * (size_t)es;   /* one rank's part */
	const char *mineb = (const char *)rb + (size_t)c->rank * block, *myrecv = (const char *)sb + (size_t)c->rank * block;
	switch (kind) {
	case COLL_ALLREDUCE: e = MPI_Allreduce(sb == rb ? MPI_IN_PLACE : sb, rb, n, t, ops[op], st->data); break;
	case COLL_REDUCE_SCATTER:
		/* coll's in place: recvbuf is this rank's block of sendbuf; MPI's:
		 * the input in recvbuf, the result in its first block */
		if ((const char *)rb == myrecv && block) {
			e = MPI_Reduce_scatter_block(MPI_IN_PLACE, (void *)sb, n, t, ops[op], st->data);
			if (e == MPI_SUCCESS && rb != sb)
				memmove(rb, sb, block);
		} else {
			e = MPI_Reduce_scatter_block(sb, rb, n, t, ops[op], st->data);
		}
		break;
	case COLL_ALLGATHER:   /* coll's in place: sendbuf is this rank's block of recvbuf */
		e = MPI_Allgather((const char *)sb == mineb && block ? MPI_IN_PLACE : sb, n, t, rb, n, t, st->data);
		break;
	case COLL_ALLTOALL: e = MPI_Alltoall(sb == rb ? MPI_IN_PLACE : sb, n, t, rb, n, t, st->data); break;
	case COLL_REDUCE:
		e = MPI_Reduce(sb == rb && c->rank == root ? MPI_IN_PLACE : sb, rb, n, t, ops[op], root, st->data);
		break;
	case COLL_BROADCAST:
		/* coll's broadcast reads the root's sendbuf and writes recvbuf
		 * everywhere: MPI's broadcasts one buffer */
		if (c->rank == root && sb != rb && block)
			memmove(rb, sb, block);
		e = MPI_Bcast(rb, n, t, root, st->data);
		break;
	default: return H->err(c, COLL_ERR_INVALID, "bad collective %d", kind);
	}
	return e == MPI_SUCCESS ? COLL_OK : mpi_fail(c, COLL_ERR_PEER, "the MPI collective", e);
}

static void mpi_close_boot(coll_comm *c)
{
	mpi_state *st = c->boot.mpi_state;
	int fin = 0;
	if (!st)
		return;
	MPI_Finalized(&fin);
	if (!fin && !lost_collective) {   /* a communicator with a lost collective is left alone */
		if (st->boot != MPI_COMM_NULL)
			MPI_Comm_free(&st->boot);
		if (st->data != MPI_COMM_NULL)
			MPI_Comm_free(&st->data);
	}
	free(st);
	c->boot.mpi_state = NULL;
}

/* --- transport --------------------------------------------------------------- */

typedef struct mbuf { struct mbuf *next; } mbuf;

typedef struct {
	rt_reqq sq;               /* sends in flight, in post order */
	rt_reqq rq;               /* receives in flight, in post order */
} mpi_peer;

/* The two MPI requests of one rt_req live in a slot; rt_req.tpseq indexes it. */
typedef struct {
	MPI_Request r[2];
	int next_free;
} mslot;

typedef struct {
	rt_tp base;
	MPI_Comm comm;
	int rank, n;
	mpi_peer *peers;
	mslot *slots;
	int nslots, free_slot;
	mbuf *free_bufs;
	/* Aborts: where the failure started, its code and its words; the
	 * first heard (ab_heard) is relayed as it came, as tcp does. */
	struct { int32_t rank, code; char text[320]; } abort_in, abort_out;
	int ab_heard;
	MPI_Request abort_req;
	MPI_Request *abort_sends;
} mpi_tp;

static void mpi_tclose(rt_tp *tp)
{
	mpi_tp *t = (mpi_tp *)tp;
	int fin = 0;
	if (!t)
		return;
	MPI_Finalized(&fin);
	if (!fin) {
		/* Pending receives are cancelled; sends are left to complete. */
		for (int i = 0; i < t->nslots; i++)
			for (int k = 0; k < 2; k++)
				if (t->slots[i].r[k] != MPI_REQUEST_NULL)
					MPI_Request_free(&t->slots[i].r[k]);
		if (t->abort_req != MPI_REQUEST_NULL) {
			MPI_Cancel(&t->abort_req);
			MPI_Request_free(&t->abort_req);
		}
		for (int r = 0; t->abort_sends && r < t->n; r++)
			if (t->abort_sends[r] != MPI_REQUEST_NULL)
				MPI_Request_free(&t->abort_sends[r]);
	}
	while (t->free_bufs) {
		mbuf *b = t->free_bufs;
		t->free_bufs = b->next;
		free(b);
	}
	free(t->abort_sends);
	free(t->slots);
	free(t->peers);
	free(t);
}

static int grow_slots(mpi_tp *t)
{
	int old = t->nslots, nn = old ? old * 2 : 64;
	mslot *s = realloc(t->slots, (size_t)nn * sizeof *s);
	if (!s)
		return -1;
	for (int i = old; i < nn; i++) {
		s[i].r[0] = s[i].r[1] = MPI_REQUEST_NULL;
		s[i].next_free = i + 1 < nn ? i + 1 : -1;
	}
	t->slots = s;
	t->nslots = nn;
	t->free_slot = old;
	return 0;
}

static int get_slot(mpi_tp *t)
{
	if (t->free_slot < 0 && grow_slots(t))
		return -1;
	int i = t->free_slot;
	t->free_slot = t->slots[i].next_free;
	return i;
}

static void put_slot(mpi_tp *t, int i)
{
	t->slots[i].next_free = t->free_slot;
	t->free_slot = i;
}

static int mpi_tconnect(coll_comm *c, rt_tp **out)
{
	mpi_state *st = c->boot.mpi_state;
	mpi_tp *t = calloc(1, sizeof *t);
	if (!t)
		return H->err(c, COLL_ERR_NOMEM, "out of memory");
	long seg = H->env_long("COLL_MPI_SEG_BYTES", 1 << 20);
	if (seg < 4096)
		seg = 4096;
	t->base.comm = c;
	t->base.ops = &mpi_transport;
	t->base.max_msg = (size_t)seg + sizeof(rt_hdr);
	t->base.send_window = 4;
	t->base.recv_window = 4;
	t->rank = c->rank;
	t->n = c->n;
	t->comm = st->data;
	t->free_slot = -1;
	t->abort_req = MPI_REQUEST_NULL;
	t->peers = calloc((size_t)t->n, sizeof *t->peers);
	t->abort_sends = malloc((size_t)t->n * sizeof *t->abort_sends);
	*out = &t->base;
	if (!t->peers || !t->abort_sends || grow_slots(t))
		return H->err(c, COLL_ERR_NOMEM, "out of memory");
	for (int r = 0; r < t->n; r++)
		t->abort_sends[r] = MPI_REQUEST_NULL;
	int e = MPI_Irecv(&t->abort_in, (int)sizeof t->abort_in, MPI_BYTE, MPI_ANY_SOURCE, TAG_ABORT, t->comm,
	                  &t->abort_req);
	if (e != MPI_SUCCESS)
		return mpi_fail(c, COLL_ERR_TRANSPORT, "MPI_Irecv", e);
	return mpi_barrier(c, c->boot.deadline_ms);   /* connect runs within coll_init */
}

static int mpi_post_send(rt_tp *tp, rt_req *req)
{
	mpi_tp *t = (mpi_tp *)tp;
	if (req->iovcnt != 2 || req->iov[0].iov_len != sizeof(rt_hdr) ||
	    req->iov[1].iov_len > tp->max_msg - sizeof(rt_hdr) || req->peer < 0 || req->peer >= t->n ||
	    req->peer == t->rank)
		return H->err(tp->comm, COLL_ERR_INVALID, "mpi: bad send to rank %d", req->peer);
	int i = get_slot(t), e;
	if (i < 0)
		return H->err(tp->comm, COLL_ERR_NOMEM, "out of memory");
	mslot *s = &t->slots[i];
	if ((e = MPI_Isend(req->iov[0].iov_base, (int)req->iov[0].iov_len, MPI_BYTE, req->peer, TAG_DATA, t->comm,
	                   &s->r[0])) != MPI_SUCCESS ||
	    (e = MPI_Isend(req->iov[1].iov_base, (int)req->iov[1].iov_len, MPI_BYTE, req->peer, TAG_DATA, t->comm,
	                   &s->r[1])) != MPI_SUCCESS)
		return mpi_fail(tp->comm, COLL_ERR_PEER, "MPI_Isend", e);
	req->tpseq = (uint64_t)i;
	req->done = 0;
	rt_reqq_push(&t->peers[req->peer].sq, req);
	return COLL_OK;
}

static int mpi_post_recv(rt_tp *tp, rt_req *req)
{
	mpi_tp *t = (mpi_tp *)tp;
	if (req->peer < 0 || req->peer >= t->n || req->peer == t->rank)
		return H->err(tp->comm, COLL_ERR_INVALID, "mpi: bad receive from rank %d", req->peer);
	char *buf = (char *)t->free_bufs;
	if (buf)
		t->free_bufs = t->free_bufs->next;
	else if (!(buf = malloc(tp->max_msg)))
		return H->err(tp->comm, COLL_ERR_NOMEM, "out of memory");
	int i = get_slot(t), e;
	if (i < 0) {
		free(buf);
		return H->err(tp->comm, COLL_ERR_NOMEM, "out of memory");
	}
	mslot *s = &t->slots[i];
	if ((e = MPI_Irecv(buf, (int)sizeof(rt_hdr), MPI_BYTE, req->peer, TAG_DATA, t->comm, &s->r[0])) !=
	            MPI_SUCCESS ||
	    (e = MPI_Irecv(buf + sizeof(rt_hdr), (int)(tp->max_msg - sizeof(rt_hdr)), MPI_BYTE, req->peer, TAG_DATA,
	                   t->comm, &s->r[1])) != MPI_SUCCESS) {
		free(buf);
		return mpi_fail(tp->comm, COLL_ERR_PEER, "MPI_Irecv", e);
	}
	req->tpseq = (uint64_t)i;
	req->tpbuf = buf;
	req->done = 0;
	rt_reqq_push(&t->peers[req->peer].rq, req);
	return COLL_OK;
}

static void mpi_release(rt_tp *tp, rt_req *req)
{
	mpi_tp *t = (mpi_tp *)tp;
	mbuf *b = req->tpbuf;
	if (b) {
		b->next = t->free_bufs;
		t->free_bufs = b;
	}
	req->tpbuf = req->data = NULL;
}

/* Complete the heads of the queues of every peer. */
static int test_pass(mpi_tp *t, int *moved)
{
	MPI_Status st[2];
	int flag, e;
	for (int r = 0; r < t->n; r++) {
		mpi_peer *p = &t->peers[r];
		while (p->sq.head) {
			rt_req *q = p->sq.head;
			if ((e = MPI_Testall(2, t->slots[q->tpseq].r, &flag, MPI_STATUSES_IGNORE)) != MPI_SUCCESS)
				return mpi_fail(t->base.comm, COLL_ERR_PEER, "MPI_Testall (send)", e);
			if (!flag)
				break;
			put_slot(t, (int)q->tpseq);
			q->done = 1;
			*moved = 1;
			rt_reqq_pop(&p->sq);
		}
		while (p->rq.head) {
			rt_req *q = p->rq.head;
			if ((e = MPI_Testall(2, t->slots[q->tpseq].r, &flag, st)) != MPI_SUCCESS)
				return mpi_fail(t->base.comm, COLL_ERR_PEER, "MPI_Testall (receive)", e);
			if (!flag)
				break;
			int got = 0;
			MPI_Get_count(&st[1], MPI_BYTE, &got);
			put_slot(t, (int)q->tpseq);
			q->data = q->tpbuf;
			q->len = sizeof(rt_hdr) + (size_t)got;
			q->done = 1;
			*moved = 1;
			rt_reqq_pop(&p->rq);
		}
	}
	if (t->abort_req != MPI_REQUEST_NULL) {
		MPI_Status as;
		if (MPI_Test(&t->abort_req, &flag, &as) == MPI_SUCCESS && flag) {
			t->abort_req = MPI_REQUEST_NULL;
			char *text = t->abort_in.text;
			text[sizeof t->abort_in.text - 1] = 0;
			for (char *c = text; *c; c++)   /* another rank's words, printed on our terminal */
				if (*c < ' ' || *c > '~')
					*c = '?';
			if (t->abort_in.code <= 0 || t->abort_in.code > COLL_ERR_UNSUPPORTED)
				t->abort_in.code = COLL_ERR_ABORTED;
			t->ab_heard = 1;
			return H->err(t->base.comm, rt_abort_code(t->abort_in.code), "rank %d aborted (%s)%s%s",
			              (int)t->abort_in.rank, H->strerror((coll_result)t->abort_in.code), *text ? ": " : "",
			              text);
		}
	}
	return COLL_OK;
}

static int mpi_progress(rt_tp *tp, int timeout_ms)
{
	mpi_tp *t = (mpi_tp *)tp;
	int moved = 0, rc;
	if (t->n == 1)
		return COLL_OK;
	if ((rc = test_pass(t, &moved)) || moved || timeout_ms <= 0)
		return rc;
	/* MPI has no wait-with-timeout: poll, yielding the CPU between tests. */
	int64_t end = H->now_ms() + timeout_ms;
	for (int i = 0;; i++) {
		if ((rc = test_pass(t, &moved)) || moved)
			return rc;
		if ((i & 63) == 63 && H->now_ms() >= end)
			return COLL_OK;
		sched_yield();
	}
}

static void mpi_abort(rt_tp *tp, int code)
{
	mpi_tp *t = (mpi_tp *)tp;
	/* A peer may be stopped or gone: OpenMPI's MPI_Finalize would wait for
	 * it forever after we reported the error (fault-2.3), so skip it as
	 * after a lost bootstrap collective and let the launcher end the job. */
	lost_collective = 1;
	/* Relaying an abort we heard: as it came; our own failure: our rank,
	 * code and words (comm->err, exec.c). */
	if (t->ab_heard && code == rt_abort_code(code)) {
		t->abort_out = t->abort_in;
	} else {
		t->abort_out.rank = t->rank;
		t->abort_out.code = code;
		snprintf(t->abort_out.text, sizeof t->abort_out.text, "%s", tp->comm->err);
	}
	for (int r = 0; r < t->n; r++)
		if (r != t->rank && t->abort_sends[r] == MPI_REQUEST_NULL)
			MPI_Isend(&t->abort_out, (int)sizeof t->abort_out, MPI_BYTE, r, TAG_ABORT, t->comm, &t->abort_sends[r]);
	/* Give the messages a moment to leave; never block long. */
	int64_t end = H->now_ms() + 200;
	int flag = 0;
	while (!flag && H->now_ms() < end) {
		MPI_Testall(t->n, t->abort_sends, &flag, MPI_STATUSES_IGNORE);
		sched_yield();
	}
}

static const rt_transport mpi_transport = {
	.name = "mpi",
	.size = sizeof(rt_transport),
	.connect = mpi_tconnect,
	.post_send = mpi_post_send,
	.post_recv = mpi_post_recv,
	.release = mpi_release,
	.progress = mpi_progress,
	.abort = mpi_abort,
	.close = mpi_tclose,
};

static const rt_mpi_plugin plugin = {
	.abi = RT_MPI_ABI,
	.size = sizeof(rt_mpi_plugin),
	.boot = mpi_boot,
	.allgather = mpi_allgather,
	.bcast = mpi_bcast,
	.barrier = mpi_barrier,
	.close = mpi_close_boot,
	.transport = &mpi_transport,
	.coll = mpi_coll,
};

/* The plugin's one export: its table, or NULL when `host` was built
 * against another layout of libcollrt's structures. */
COLL_API const rt_mpi_plugin *coll_mpi_plugin(const rt_host_api *host);
const rt_mpi_plugin *coll_mpi_plugin(const rt_host_api *host)
{
	if (!host || host->size != sizeof(rt_host_api) || host->comm_size != sizeof(coll_comm) ||
	    host->tp_size != sizeof(rt_transport))
		return NULL;
	H = host;
	return &plugin;
}
