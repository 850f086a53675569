/*
 * shm.c - shared-memory transport between processes on one host.
 *
 * Each rank creates one POSIX shm segment: a header (doorbell futex, abort
 * flag) and one ring of fixed-size slots per destination.  A send copies
 * header + payload into the next free slot of the ring towards the peer and
 * publishes it by bumping `head`; the receiver hands the executor a
 * pointer straight into the slot, so reductions read the sender's data in
 * place (one copy in, reduce out), and frees the slot on release (in any
 * order; `tail` advances over the released prefix).  The executor may
 * also reserve the next slot and write a payload into it itself
 * (send_reserve/send_commit), which is how a received segment is reduced
 * or copied straight into the message that forwards it.  A slot is only
 * reused by a later send of the same process, so the sender may still read
 * it after publishing it.  Segments are unlinked as soon as every rank
 * mapped them, so nothing is left in /dev/shm even if the job is killed.
 *
 * Why two copies and not one: a receiver reading the sender's buffer with
 * process_vm_readv (cross-memory attach, as OpenMPI's vader does) was built
 * and measured on the 2-core development VM (ring allreduce, 64 MiB, n = 2
 * and 4): the same CPU time in all (user 1.85 s + sys 0.14 s copying, user
 * 0.78 s + sys 1.28 s pulling, for 43 calls at n = 2) and no busbw gain
 * beyond run-to-run noise.  The kernel pins the sender's 4 KiB pages one by
 * one and copies at about memcpy's speed, while our slots (8 x 256 KiB per
 * peer) stay in cache between the sender's copy in and the receiver's
 * reduction out, so the second copy costs little.  Where user buffers sit
 * on huge pages the balance may differ; measure before adding it back.
 *
 * Waiting: polling for COLL_SHM_SPIN_US (rt_spin_ns: 50 us when every
 * rank has a CPU, else none), then passes with sched_yield (at least 8,
 * and for COLL_SHM_YIELD_US: 2 ms when ranks outnumber CPUs, else none),
 * then the waiter sets `sleeping` and sleeps on its doorbell futex;
 * senders and releasers bump the doorbell and wake it only when it
 * sleeps.  Oversubscribed, a yield hands the core to a rank that has work
 * and comes back when that rank waits in turn, where a futex sleep costs
 * a wake-up system call and a trip through the scheduler for every
 * message: with 4 ranks on the 2-core development VM, 2 ms of yielding
 * took ring's allreduce from 15 to 12.7 us at 4 KiB (and from 12-46 to
 * 12-14 us over six runs), from 452 to 427 us at 1 MiB (medians of six
 * interleaved runs of COLL_SHM_YIELD_US=0 and 2000).  Sleeps are capped
 * at 50 ms; each wake-up without progress polls the peers' pidfds, so a
 * killed peer is seen within ~50 ms (COLL_ERR_PEER).  Aborts write a
 * record (origin rank, code, words) into every peer's header
 * (COLL_ERR_ABORTED there, or MISMATCH: rt_abort_code; naming the origin).  peek shows the executor
 * the header of a message no receive has taken.
 *
 * No MAC here (COLL_AUTH=mac is for TCP): the segments are shared memory
 * of the job's own user on one kernel, created 0600 and unlinked once
 * mapped; whoever can write them can as well ptrace the ranks and read
 * the key, so a MAC would cost a pass over every byte and stop nobody.
 *
 * Tunables: COLL_SHM_SLOT_BYTES (payload per slot, default 256 KiB),
 * COLL_SHM_SLOTS (slots per ring, default 8), COLL_SHM_SPIN_US and
 * COLL_SHM_YIELD_US (see above).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

#define SHM_MAGIC 0x436f4c53u /* "CoLS" */
#define CL 64

typedef struct {
	uint32_t magic;
	int32_t rank, pid, nranks;
	uint64_t ring_bytes, slot_stride, nslots;
	_Alignas(CL) _Atomic uint32_t doorbell;
	_Atomic uint32_t sleeping;
	_Atomic int32_t abort_from;   /* rank that wrote the abort below + 1, 0: none (set last) */
	_Atomic int32_t abort_claim;  /* 0 until one aborting rank claims the record */
	int32_t abort_rank;           /* where the failure started (a relay passes it on) */
	int32_t abort_code;
	char abort_text[320];         /* its words */
	char pad[CL];
} shm_seghdr;

typedef struct {
	_Alignas(CL) _Atomic uint64_t head;   /* messages published (sender) */
	_Alignas(CL) _Atomic uint64_t tail;   /* messages released (receiver) */
	_Alignas(CL) char slots[];             /* nslots * slot_stride */
} shm_ring;

typedef struct {
	uint64_t len;                          /* bytes of the message */
	char pad[CL - 8];
	char data[];
} shm_slot;

typedef struct {
	shm_ring *out, *in;
	shm_seghdr *hdr;                       /* the peer's segment header */
	rt_reqq sq;                            /* sends waiting for a slot */
	rt_reqq rq;                            /* posted receives */
	uint64_t next_seq, tail_local;
	uint8_t *rel;                          /* nslots: slot released out of order */
	int pidfd;
	pid_t pid;
} shm_peer;

typedef struct {
	rt_tp base;
	int rank, n;
	size_t seg_bytes, nslots, stride;
	shm_seghdr **segs;                     /* every rank's segment, mapped */
	shm_seghdr *me;
	shm_peer *peers;
	char name[64];
	int unlinked;
	int64_t last_live_check;
	int64_t spin_ns;                       /* poll this long before yielding and sleeping */
	int64_t yield_ns;                      /* then yield this long (at least 8 times) before sleeping */
	int ab_seen;                           /* an abort was reported: relay it as it came (shm_abort) */
} shm_tp;
_Static_assert(sizeof(shm_seghdr) <= 4096, "the segment header fits in its page");

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

static shm_ring *ring_of(shm_seghdr *seg, int dst)
{
	return (shm_ring *)((char *)seg + 4096 + (size_t)dst * seg->ring_bytes);
}

static shm_slot *slot_of(shm_tp *t, shm_ring *r, uint64_t seq)
{
	return (shm_slot *)(r->slots + (seq % t->nslots) * t->stride);
}

static void ring_doorbell(shm_seghdr *h)
{
	atomic_fetch_add(&h->doorbell, 1);
	if (atomic_load(&h->sleeping))
		futex(&h->doorbell, FUTEX_WAKE, INT_MAX, NULL);
}

static void seg_name(char *buf, size_t len, uint64_t jobid, int rank)
{
	snprintf(buf, len, "/coll-%016llx-%d", (unsigned long long)jobid, rank);
}

static void shm_close(rt_tp *tp)
{
	shm_tp *t = (shm_tp *)tp;
	if (!t)
		return;
	if (!t->unlinked && t->name[0])
		shm_unlink(t->name);
	if (t->segs)
		for (int r = 0; r < t->n; r++)
			if (t->segs[r])
				munmap(t->segs[r], t->seg_bytes);
	if (t->peers)
		for (int r = 0; r < t->n; r++) {
			if (t->peers[r].pidfd >= 0)
				close(t->peers[r].pidfd);
			free(t->peers[r].rel);
		}
	free(t->segs);
	free(t->peers);
	free(t);
}

static int shm_connect(coll_comm *c, rt_tp **out)
{
	shm_tp *t = calloc(1, sizeof *t);
	if (!t)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	/* in env.def's ranges (rt_env_check): at least 4 KiB and 2 slots */
	long slot = rt_env_long("COLL_SHM_SLOT_BYTES", 256 * 1024), nslots = rt_env_long("COLL_SHM_SLOTS", 8);
	t->base.comm = c;
	t->base.ops = &shm_transport;
	t->base.max_msg = (size_t)slot + sizeof(rt_hdr);
	t->base.send_window = (int)nslots * 2;
	t->base.recv_window = (int)nslots;
	t->rank = c->rank;
	t->n = c->n;
	t->nslots = (size_t)nslots;
	t->stride = (sizeof(shm_slot) + t->base.max_msg + 4095) & ~(size_t)4095;
	size_t ring_bytes = (sizeof(shm_ring) + t->nslots * t->stride + 4095) & ~(size_t)4095;
	t->seg_bytes = 4096 + ring_bytes * (size_t)t->n;
	t->segs = calloc((size_t)t->n, sizeof *t->segs);
	t->peers = calloc((size_t)t->n, sizeof *t->peers);
	int rc = COLL_OK;
	if (!t->segs || !t->peers) {
		free(t->segs), free(t->peers), free(t);
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	for (int r = 0; r < t->n; r++)
		t->peers[r].pidfd = -1;
	*out = &t->base;
	if (t->n == 1)
		return COLL_OK;

	/* Create and size my segment. */
	seg_name(t->name, sizeof t->name, c->boot.jobid, t->rank);
	int fd = shm_open(t->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		t->name[0] = 0;
		return rt_err(c, COLL_ERR_TRANSPORT, "shm_open: %s", strerror(errno));
	}
	/* The segment is a ring per peer, COLL_SHM_SLOTS x COLL_SHM_SLOT_BYTES
	 * each: when it does not fit, say so with the numbers that made it. */
	if (ftruncate(fd, (off_t)t->seg_bytes) < 0) {
		close(fd);
		return rt_err(c, COLL_ERR_TRANSPORT,
		              "shm: cannot size this rank's segment to %zu bytes (%d rings of COLL_SHM_SLOTS=%ld x "
		              "COLL_SHM_SLOT_BYTES=%ld): %s", t->seg_bytes, t->n, nslots, slot, strerror(errno));
	}
	void *m = mmap(NULL, t->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return rt_err(c, COLL_ERR_TRANSPORT,
		              "shm: cannot map this rank's segment of %zu bytes (%d rings of COLL_SHM_SLOTS=%ld x "
		              "COLL_SHM_SLOT_BYTES=%ld): %s", t->seg_bytes, t->n, nslots, slot, strerror(errno));
	t->me = t->segs[t->rank] = m;
	t->me->rank = t->rank;
	t->me->pid = (int32_t)getpid();
	t->me->nranks = t->n;
	t->me->ring_bytes = ring_bytes;
	t->me->slot_stride = t->stride;
	t->me->nslots = t->nslots;
	atomic_store(&t->me->abort_from, 0);
	atomic_store(&t->me->abort_claim, 0);
	t->me->magic = SHM_MAGIC;

	/* Everyone created theirs: map the peers', then unlink mine. */
	if ((rc = rt_boot_barrier(c)))
		return rc;
	for (int r = 0; r < t->n; r++) {
		if (r == t->rank)
			continue;
		char nm[64];
		seg_name(nm, sizeof nm, c->boot.jobid, r);
		int pfd = shm_open(nm, O_RDWR | O_CLOEXEC, 0);
		if (pfd < 0)
			return rt_err(c, COLL_ERR_TRANSPORT, "shm_open %s (rank %d): %s", nm, r, strerror(errno));
		void *pm = mmap(NULL, t->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
		close(pfd);
		if (pm == MAP_FAILED)
			return rt_err(c, COLL_ERR_TRANSPORT, "mmap %s: %s", nm, strerror(errno));
		t->segs[r] = pm;
		if (t->segs[r]->magic != SHM_MAGIC || t->segs[r]->ring_bytes != ring_bytes)
			return rt_err(c, COLL_ERR_TRANSPORT, "rank %d's shm segment has another layout (COLL_SHM_* differ?)", r);
	}
	if ((rc = rt_boot_barrier(c)))
		return rc;
	shm_unlink(t->name);
	t->unlinked = 1;
	for (int r = 0; r < t->n; r++) {
		if (r == t->rank)
			continue;
		shm_peer *p = &t->peers[r];
		p->hdr = t->segs[r];
		p->out = ring_of(t->me, r);
		p->in = ring_of(t->segs[r], t->rank);
		p->rel = calloc(t->nslots, 1);
		if (!p->rel)
			return rt_err(c, COLL_ERR_NOMEM, "out of memory");
		p->pid = (pid_t)p->hdr->pid;
#ifdef SYS_pidfd_open
		p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
#endif
	}
	t->last_live_check = rt_now_ms();
	t->spin_ns = rt_spin_ns(c, "COLL_SHM_SPIN_US");
	t->yield_ns = (int64_t)rt_env_long("COLL_SHM_YIELD_US", rt_oversubscribed(c) ? 2000 : 0) * 1000;
	return COLL_OK;
}

/* The next slot towards p, if the receiver has released it; it is ours
 * to fill until publish(). */
static shm_slot *free_slot(shm_tp *t, shm_peer *p)
{
	uint64_t h = atomic_load_explicit(&p->out->head, memory_order_relaxed);
	if (h - atomic_load_explicit(&p->out->tail, memory_order_acquire) >= t->nslots)
		return NULL;
	return slot_of(t, p->out, h);
}

/* Hand the slot free_slot() gave to the receiver (the doorbell is the
 * caller's: push_sends rings it once for a batch). */
static void publish(shm_peer *p)
{
	uint64_t h = atomic_load_explicit(&p->out->head, memory_order_relaxed);
	atomic_store_explicit(&p->out->head, h + 1, memory_order_release);
}

static void push_sends(shm_tp *t, shm_peer *p, int *moved)
{
	int pushed = 0;
	shm_slot *s;
	while (p->sq.head && (s = free_slot(t, p))) {
		rt_req *q = p->sq.head;
		size_t off = 0;
		for (int i = 0; i < q->iovcnt; i++) {
			if (!q->iov[i].iov_len)   /* an empty payload may have no address (count 0) */
				continue;
			memcpy(s->data + off, q->iov[i].iov_base, q->iov[i].iov_len);
			off += q->iov[i].iov_len;
		}
		s->len = off;
		publish(p);
		rt_reqq_pop(&p->sq);
		q->done = 1;
		pushed = 1;
	}
	if (pushed) {
		ring_doorbell(p->hdr);
		*moved = 1;
	}
}

static void match_recvs(shm_tp *t, shm_peer *p, int *moved)
{
	if (!p->rq.head)
		return;
	uint64_t h = atomic_load_explicit(&p->in->head, memory_order_acquire);
	while (p->rq.head && p->next_seq < h) {
		rt_req *q = rt_reqq_pop(&p->rq);
		shm_slot *s = slot_of(t, p->in, p->next_seq);
		q->data = s->data;
		q->len = s->len;
		q->tpseq = p->next_seq++;
		q->done = 1;
		*moved = 1;
	}
}

static int check_abort(shm_tp *t)
{
	if (!atomic_load(&t->me->abort_from))   /* set after the record below is written */
		return COLL_OK;
	shm_seghdr *h = t->me;
	char text[sizeof h->abort_text];
	memcpy(text, h->abort_text, sizeof text);
	text[sizeof text - 1] = 0;
	for (char *c = text; *c; c++)   /* another process's words, printed on our terminal */
		if (*c < ' ' || *c > '~')
			*c = '?';
	int code = h->abort_code > 0 && h->abort_code <= COLL_ERR_UNSUPPORTED ? h->abort_code : COLL_ERR_ABORTED;
	t->ab_seen = 1;
	return rt_err(t->base.comm, rt_abort_code(code), "rank %d aborted (%s)%s%s", (int)h->abort_rank,
	              coll_strerror((coll_result)code), text[0] ? ": " : "", text);
}

static int pass(shm_tp *t, int *moved)
{
	for (int r = 0; r < t->n; r++) {
		if (r == t->rank)
			continue;
		push_sends(t, &t->peers[r], moved);
		match_recvs(t, &t->peers[r], moved);
	}
	/* What moved first goes to the executor: a call this completes
	 * completes, and a peer's abort from a later call (it finished this
	 * one and failed the next) is reported there, at the next pass. */
	return *moved ? COLL_OK : check_abort(t);
}

/* Did a peer process exit?  pidfds become readable on exit. */
static int check_alive(shm_tp *t)
{
	t->last_live_check = rt_now_ms();
	for (int r = 0; r < t->n; r++) {
		shm_peer *p = &t->peers[r];
		if (r == t->rank)
			continue;
		int dead = 0;
		if (p->pidfd >= 0) {
			struct pollfd pf = {p->pidfd, POLLIN, 0};
			dead = poll(&pf, 1, 0) > 0;
		} else {
			dead = kill(p->pid, 0) < 0 && errno == ESRCH;
		}
		/* A peer that finished and left is fine unless we still need it:
		 * its messages stay readable in our mapping of its segment. */
		if (dead && (p->sq.head || (p->rq.head && atomic_load(&p->in->head) == p->next_seq)))
			return rt_err(t->base.comm, COLL_ERR_PEER, "rank %d (pid %d) died", r, (int)p->pid);
	}
	return COLL_OK;
}

static int shm_post_send(rt_tp *tp, rt_req *req)
{
	shm_tp *t = (shm_tp *)tp;
	size_t len = 0;
	for (int i = 0; i < req->iovcnt; i++)
		len += req->iov[i].iov_len;
	if (len > tp->max_msg || req->peer < 0 || req->peer >= t->n || req->peer == t->rank)
		return rt_err(tp->comm, COLL_ERR_INVALID, "shm: bad send (%zu bytes to rank %d)", len, req->peer);
	shm_peer *p = &t->peers[req->peer];
	req->done = 0;
	rt_reqq_push(&p->sq, req);
	int moved = 0;
	push_sends(t, p, &moved);
	return COLL_OK;
}

/* Room in the next slot towards the peer, for a payload the executor
 * writes itself: only when nothing is queued before it and a slot is
 * free.  The slot is not published until shm_send_commit. */
static int shm_send_reserve(rt_tp *tp, rt_req *req, size_t len, void **buf)
{
	shm_tp *t = (shm_tp *)tp;
	size_t hlen = req->iovcnt == 1 ? req->iov[0].iov_len : SIZE_MAX;
	*buf = NULL;
	if (hlen > tp->max_msg || len > tp->max_msg - hlen || req->peer < 0 || req->peer >= t->n ||
	    req->peer == t->rank)
		return rt_err(tp->comm, COLL_ERR_INVALID, "shm: bad reserved send (%zu bytes to rank %d)", len,
		              req->peer);
	shm_peer *p = &t->peers[req->peer];
	shm_slot *s = p->sq.head ? NULL : free_slot(t, p);
	if (!s)
		return COLL_OK;
	memcpy(s->data, req->iov[0].iov_base, hlen);
	s->len = hlen + len;
	*buf = s->data + hlen;
	return COLL_OK;
}

static int shm_send_commit(rt_tp *tp, rt_req *req)
{
	shm_tp *t = (shm_tp *)tp;
	shm_peer *p = &t->peers[req->peer];
	publish(p);
	ring_doorbell(p->hdr);
	req->next = NULL;
	req->done = 1;
	return COLL_OK;
}

static int shm_post_recv(rt_tp *tp, rt_req *req)
{
	shm_tp *t = (shm_tp *)tp;
	if (req->peer < 0 || req->peer >= t->n || req->peer == t->rank)
		return rt_err(tp->comm, COLL_ERR_INVALID, "shm: bad receive from rank %d", req->peer);
	shm_peer *p = &t->peers[req->peer];
	req->done = 0;
	rt_reqq_push(&p->rq, req);
	int moved = 0;
	match_recvs(t, p, &moved);
	return COLL_OK;
}

static void shm_release(rt_tp *tp, rt_req *req)
{
	shm_tp *t = (shm_tp *)tp;
	shm_peer *p = &t->peers[req->peer];
	p->rel[req->tpseq % t->nslots] = 1;
	int adv = 0;
	while (p->tail_local < p->next_seq && p->rel[p->tail_local % t->nslots]) {
		p->rel[p->tail_local % t->nslots] = 0;
		p->tail_local++;
		adv = 1;
	}
	if (adv) {
		atomic_store_explicit(&p->in->tail, p->tail_local, memory_order_release);
		ring_doorbell(p->hdr);
	}
	req->data = NULL;
}

static int shm_progress(rt_tp *tp, int timeout_ms)
{
	shm_tp *t = (shm_tp *)tp;
	int moved = 0, rc;
	if (t->n == 1)
		return COLL_OK;
	if ((rc = pass(t, &moved)) || moved || timeout_ms <= 0)
		return rc;
	for (int64_t until = rt_now_ns() + t->spin_ns; t->spin_ns > 0 && rt_now_ns() < until;)
		if ((rc = pass(t, &moved)) || moved)
			return rc;
	int64_t yield_until = rt_now_ns() + t->yield_ns;
	for (int i = 0; i < 8 || rt_now_ns() < yield_until; i++) {
		sched_yield();
		if ((rc = pass(t, &moved)) || moved)
			return rc;
	}
	if (rt_now_ms() - t->last_live_check >= 50 && (rc = check_alive(t)))
		return rc;
	atomic_store(&t->me->sleeping, 1);
	uint32_t seq = atomic_load(&t->me->doorbell);
	if ((rc = pass(t, &moved)) || moved) {
		atomic_store(&t->me->sleeping, 0);
		return rc;
	}
	int ms = timeout_ms < 50 ? timeout_ms : 50;
	struct timespec ts = {0, (long)ms * 1000000L};
	futex(&t->me->doorbell, FUTEX_WAIT, seq, &ts);
	atomic_store(&t->me->sleeping, 0);
	if ((rc = pass(t, &moved)) || moved)
		return rc;
	return check_alive(t);
}

static void shm_abort(rt_tp *tp, int code)
{
	shm_tp *t = (shm_tp *)tp;
	/* Relaying an abort we heard: its record as it came; our own failure:
	 * our rank, code and words (comm->err, exec.c). */
	const shm_seghdr *heard = t->ab_seen && code == rt_abort_code(code) ? t->me : NULL;
	for (int r = 0; r < t->n; r++) {
		if (r == t->rank || !t->segs[r])
			continue;
		shm_seghdr *h = t->segs[r];
		int32_t zero = 0;
		if (!atomic_compare_exchange_strong(&h->abort_claim, &zero, 1))
			continue;   /* someone else's abort got there first: the peer hears that one */
		h->abort_rank = heard ? heard->abort_rank : t->rank;
		h->abort_code = heard ? heard->abort_code : code;
		snprintf(h->abort_text, sizeof h->abort_text, "%s", heard ? heard->abort_text : tp->comm->err);
		atomic_store(&h->abort_from, t->rank + 1);
		ring_doorbell(h);
	}
}

/* The header of peer r's next message, if it is in our ring and no
 * receive has taken it (exec.c's peek_ranks). */
static int shm_peek(rt_tp *tp, int r, rt_hdr *hdr, int *have)
{
	shm_tp *t = (shm_tp *)tp;
	*have = 0;
	if (r < 0 || r >= t->n || r == t->rank || !t->peers[r].in)
		return COLL_OK;
	shm_peer *p = &t->peers[r];
	if (p->next_seq < atomic_load_explicit(&p->in->head, memory_order_acquire)) {
		shm_slot *s = slot_of(t, p->in, p->next_seq);
		if (s->len >= sizeof *hdr) {
			memcpy(hdr, s->data, sizeof *hdr);
			*have = 1;
		}
	}
	return COLL_OK;
}

const rt_transport shm_transport = {
	.name = "shm",
	.size = sizeof(rt_transport),
	.connect = shm_connect,
	.post_send = shm_post_send,
	.post_recv = shm_post_recv,
	.release = shm_release,
	.progress = shm_progress,
	.abort = shm_abort,
	.close = shm_close,
	.send_reserve = shm_send_reserve,
	.send_commit = shm_send_commit,
	.peek = shm_peek,
};
