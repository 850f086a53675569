/*
 * exec.c - the executor: runs one rank's plan over a transport.
 *
 * There is no barrier per round.  Every chunk is cut into segments of
 * comm->seg_bytes, and each (chunk, segment) advances on its own, driven by
 * two counters: how many receives into it have been applied (rapp) and how
 * many sends of it have left (sdone).  With the counts rt_prep_build
 * precomputed:
 *   - a send of round k may go once rapp >= #receives of the chunk in
 *     rounds < k (it must carry every earlier contribution);
 *   - a receive of round k may be applied once rapp == its index among the
 *     chunk's receives (receives apply in order) and sdone >= #sends of the
 *     chunk in rounds <= k (the old value left first: round semantics).
 * Messages stay in transport memory (a shm slot, a TCP buffer) until they
 * are applied, so that staging area is the "scratch" the round semantics
 * need; reductions read straight from it.  A transport with a read op (TCP)
 * may instead hand over only the header and leave the payload in its
 * stream: when the receive can be applied at once it is read straight into
 * the chunk's home (copies) or through comm->stage, RT_STAGE_BYTES that
 * stay in cache (reductions); otherwise the transport is asked to buffer
 * it, which keeps later messages of that peer flowing.  Consecutive rounds therefore
 * pipeline segment by segment (segment s of round k+1 leaves as soon as
 * segment s of round k is reduced), and sends, receives and reductions to
 * different peers overlap.
 *
 * Round order (comm->round_order; on by default where ranks share network
 * links, i.e. TCP; COLL_ROUND_ORDER=0/1 overrides): a send of round k is
 * posted only once every send of this rank in rounds < k has left, and a
 * receive of round k only once every receive of rounds < k is applied.
 * Without it a rank that is ahead starts later rounds towards peers that
 * are still busy with earlier ones, and on a shaped link those flows take
 * bandwidth from the transfers the schedule needs first: with a
 * persistent straggler every non-straggler had its StragglAR exchange with
 * the straggler in flight at once, and rhd and StragglAR ran 25-40%
 * slower than the round model on the emulated cluster (tests/netns).  A
 * gate waits only on this rank's own earlier rounds, which never wait on
 * later ones, so it cannot deadlock; consecutive rounds to one peer (ring)
 * still pipeline through the transport's buffers.  A send has "left" once
 * the transport took it: on TCP, once the kernel did, so the socket
 * buffers bound how far a rank can still run ahead (netns_stragglar.sh
 * keeps them small on its slow links).
 *
 * Sending on from the message (comm->reduce_send, COLL_REDUCE_SEND=0
 * turns it off; NCCL's recvReduceSend and recvCopySend): when a receive's
 * chunk is next sent on (rt_xstep.nsend) and that send is the next one
 * due to its peer, and the transport can hand out room in its own memory
 * (send_reserve: shm), the result -- home OP message, or the message --
 * is computed straight into the outgoing message, and the chunk's home
 * is written from there: not at all when a later receive overwrites it
 * anyway (RT_AFTER_OVERWRITE: ring's forwarded partial sums), past the
 * cache when nothing reads it again (see below), else plainly.  Against
 * folding into home and sending from there, that saves reading home back
 * and, for partial sums, writing it at all.  Messages to a peer travel
 * segment-major without the round order (cursor_next), so the forwarding
 * send is usually the one due; otherwise (its peer's slots are full) the
 * usual path runs, and COLL_TRACE_ROUNDS counts how often which (ring at
 * n = 4, 64 MiB: 260-320 of 320 segments per rank and call).
 *
 * Non-temporal results (comm->nt_bytes, COLL_NT_BYTES, default 16 MiB, 0:
 * never): in a call at least that large, a home written with a value that
 * nothing reads again during the call (RT_AFTER_NONE, and no send reads it
 * back) is written with streaming stores (reduce.c), which skip the read
 * for ownership of every line and leave the cache to the slots and the
 * chunks still in flight.  With sending on from the message, every home
 * write of ring's allreduce is such a write.  Together, on the 2-core
 * development VM (ring, 64 MiB, 8 interleaved runs, tests/results/runtime.md):
 * busbw 4.40 -> 5.22 GB/s at n = 2, 2.06 -> 2.53 at n = 4, 16% less CPU.
 * Below 16 MiB streaming stores measured up to 20% slower there (n = 4,
 * 4 and 8 MiB): the whole job's buffers still fit in its last-level cache.
 *
 * Buffers: each chunk has a *home* (where its final value goes: recvbuf,
 * or scratch for chunks a rank does not output) and an *init* (where its
 * starting value is: usually sendbuf).  Until the first receive is applied
 * to a segment, sends read it from init and the first reduce writes
 * home = init OP message, so out-of-place calls need no initial copy;
 * segments of output chunks never received are copied at the end.
 *
 * Relabelling: role r runs on logical rank (r + shift) mod n, shift moving
 * the algorithm's root onto the caller's; for an algorithm with a
 * straggler role (StragglAR) the declared straggler then trades places
 * with that role (the paper's swap); logical rank l is physical rank
 * perm[l] of the communicator's rank order (reorder.c; identity without
 * one).  Roots and stragglers are physical ranks, so both move to logical
 * ones first.  A unit of data that belongs to a rank (reduce_scatter's
 * blocks, allgather's, alltoall's pairs) follows the role: the schedule's
 * unit u, which role u ends with, is the data of the physical rank that
 * plays role u, so each rank's buffers keep the layout coll.h gives them
 * and the results are the identity order's.
 *
 * Every message starts with an rt_hdr describing the call; receivers
 * compare it with their own arguments, which is how a rank that passed a
 * different count, dtype, op, root or algorithm is reported
 * (COLL_ERR_MISMATCH).  A rank that is waiting also looks at the next
 * message of every rank that nothing has asked for yet (peek_ranks), so
 * that ranks running different algorithms are named even when neither
 * ever receives from the other.  A failure is told to every peer
 * (tp->abort) with its words, and a timeout or abort names any rank on
 * this host that is stopped (rt_stopped_ranks).
 *
 * Agreement on rooted calls (broadcast, reduce): there the headers alone
 * do not suffice.  In a collective whose every output depends on every
 * rank's input (allreduce, reduce_scatter, allgather, alltoall) a rank
 * that finishes has applied, directly or through ranks that checked them
 * in turn, a message of every rank, so all agreed with it; a rank that
 * disagrees is named where its message arrives and the abort reaches the
 * others.  A broadcast's root receives nothing and a reduce's leaves
 * nothing, so ranks that disagreed on the root returned success (and the
 * next call blamed "different sequences of calls"), or each believed
 * itself the root and waited for the other until the timeout, naming no
 * root.  So in a rooted call every rank also sends every other rank its
 * arguments first (a bare header, round -1: the "fingerprint") and
 * finishes only once it has checked all of theirs: every rank names the
 * difference itself, at once, and none can succeed while another fails.
 * It costs each rank n-1 header-only messages per rooted call and makes
 * those calls wait for every rank's entry (as an allreduce always does);
 * the other collectives carry nothing extra.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt.h"

typedef struct {
	char *home;          /* chunk's element 0 in its home buffer */
	const char *init;    /* chunk's element 0 of the initial value, NULL: home */
	uint64_t lo, len;    /* element range in the working buffer */
	int nseg, base;      /* segments, index of the first in the counters */
	int out;             /* part of this rank's output */
	int64_t scr;         /* layout(): its home's element offset in scratch, -1: none */
} ex_chunk;

typedef struct {
	int role, phys;
	/* sends: cursor over the peer's send steps [sfirst, send_end) (step
	 * list index, segment; see cursor_next); smax: most segments of any */
	int si, sseg, sfirst, send_end, smax;
	rt_req *sring;
	int shead, scount;   /* in-flight ring: oldest at shead */
	/* receives, likewise */
	int ri, rseg, rfirst, recv_end, rmax;
	rt_req *rring;
	int rtail, rhead;    /* posted ring entries [rtail, rhead) (mod W) */
	int ncarry;          /* bytes of a split element of a streamed reduction */
	char carry[16];
} ex_peer;

typedef struct {
	coll_comm *c;
	const coll_algo *a;
	rt_prep *p;
	coll_kind kind;
	coll_dtype dt;
	coll_op op;
	int root, shift;
	int segmajor;        /* messages to a peer go segment by segment (cursor_next) */
	int swap_a, swap_b;  /* after the shift, logical ranks a and b trade places (-1: none) */
	size_t esz, seg_elems;
	uint64_t count;
	ex_chunk *ch;
	uint32_t *rapp, *sdone;
	ex_peer *peers;
	int npeers, ws, wr;
	long sends_left, recvs_left;
	/* Round order (comm->round_order): sleft[r] / rleft[r] = this rank's
	 * send / receive segments of round r not yet done / applied; sgate /
	 * rgate = the lowest round with any left (nrounds: none). */
	long *sleft, *rleft;
	int nrounds, sgate, rgate;
	int64_t *trace, t0;  /* COLL_TRACE_ROUNDS: per round first send, sends done, receives done (ns) */
	long on_segs, on_sent;    /* received segments with a send on (nsend); of those, sent from the message */
	/* Agreement (see above): fps[r] / fps[n + r] the fingerprint send to /
	 * receive from rank r (NULL: no agreement this call); fp_left: the
	 * receives not yet checked. */
	rt_req *fps;
	int fp_left;
	int nt;              /* write final results past the cache (comm->nt_bytes) */
} ex_state;

static int phys_of(const ex_state *e, int role)
{
	int p = (role + e->shift) % e->c->n;
	if (e->swap_a >= 0)
		p = p == e->swap_a ? e->swap_b : p == e->swap_b ? e->swap_a : p;
	return rt_physical(e->c, p);
}

/* The chunk of the caller's data that schedule chunk i stands for: itself,
 * unless a rank order moves the units that belong to ranks (see
 * "Relabelling" above): unit u of role u is then the data unit of
 * phys_of(u) (of (phys_of(src), phys_of(dst)) for alltoall's pairs). */
static int data_chunk(const ex_state *e, const coll_kind_info *ki, int i)
{
	if (!e->c->perm || ki->units == COLL_UNITS_ONE)
		return i;
	int n = e->c->n;
	int per = (int)((uint64_t)e->a->chunks / coll_kind_units(ki, n));
	int u = i / per, w = i % per;
	int du = ki->units == COLL_UNITS_RANK ? phys_of(e, u) : phys_of(e, u / n) * n + phys_of(e, u % n);
	return du * per + w;
}

static void seg_range(const ex_state *e, const ex_chunk *k, int s, uint64_t *off, uint64_t *len)
{
	uint64_t o = (uint64_t)s * e->seg_elems;
	*off = o;
	*len = o >= k->len ? 0 : (k->len - o < e->seg_elems ? k->len - o : e->seg_elems);
}

/* Write len bytes of a final value to a home: past the cache (streaming
 * stores) when nt, see "Non-temporal results" above. */
static void put_home(char *home, const void *src, size_t len, int nt)
{
	if (nt)
		rt_copy_nt(home, src, len);
	else
		memcpy(home, src, len);
}

/* Where the current value of segment s of chunk k lives. */
static const char *seg_loc(const ex_state *e, const ex_chunk *k, int s, uint64_t off)
{
	if (!k->init || e->rapp[k->base + s] > 0)
		return k->home + off * e->esz;
	return k->init + off * e->esz;
}

static int need_scratch(coll_comm *c, size_t bytes)
{
	if (c->scratch_len >= bytes)
		return COLL_OK;
	void *p = realloc(c->scratch, bytes);
	if (!p)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory for %zu bytes of scratch", bytes);
	c->scratch = p;
	c->scratch_len = bytes;
	return COLL_OK;
}

/* Does some chunk's home overlap another chunk's init (in-place calls
 * whose layout would overwrite data before it is sent: alltoall with
 * sendbuf == recvbuf)?  Homes and inits each rise with the chunk number
 * (coll_kinds.h packs buffers in chunk order), so one merge pass tells. */
static int homes_clobber_inits(const ex_state *e, const int *byd)
{
	int C = e->a->chunks, j = 0;
	size_t esz = e->esz;
#define CH(x) (&e->ch[byd ? byd[x] : (x)])   /* in the order of the data */
	for (int i = 0; i < C; i++) {
		const ex_chunk *h = CH(i);
		if (!h->out || !h->len)
			continue;
		while (j < C && (!CH(j)->init || !CH(j)->len || CH(j)->init + CH(j)->len * esz <= h->home))
			j++;
		for (int t = j; t < C; t++) {
			const ex_chunk *d = CH(t);
			if (!d->init || !d->len)
				continue;
			if (d->init >= h->home + h->len * esz)
				break;
			if (t != i)
				return 1;
		}
	}
#undef CH
	return 0;
}

/* Homes and inits per chunk, from the collective's buffer layout
 * (coll_kinds.h): a chunk's init is where this rank's sendbuf holds it
 * (chunks it contributes), its home where its recvbuf takes it (chunks
 * it targets), or scratch for chunks it only passes on (received but not
 * targeted: a reduce_scatter's partial sums, a reduce off the root, an
 * alltoall block forwarded by Bruck).  Which chunks a rank contributes
 * and targets is the plan's (role, the algorithm's root): relabelling
 * preserves it, and per-rank units are never relabelled.  When a home
 * would overwrite another chunk's init (alltoall in place), the rank's
 * send region is first copied to scratch. */
static int layout(ex_state *e, const void *sb_, void *rb_)
{
	coll_comm *c = e->c;
	const char *sb = sb_;
	char *rb = rb_;
	int C = e->a->chunks, n = c->n, role = e->p->role;
	const coll_kind_info *ki = coll_kind_get(e->a->kind);
	const coll_shape sh = { ki, n, C, e->a->root };
	/* with a rank order, where the data lies is the physical rank's own
	 * layout of the data chunk (data_chunk), its root the caller's */
	const coll_shape shp = { ki, n, C, e->root };
	int *byd = NULL;
	if (c->perm && ki->units != COLL_UNITS_ONE) {
		byd = malloc(sizeof *byd * (size_t)C);
		if (!byd)
			return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	size_t esz = e->esz;
	uint64_t ucount = e->count / coll_kind_units(ki, n);
	/* chunks received here need a home even where none is targeted */
	for (int i = 0; i < e->p->nsteps; i++)
		if (e->p->steps[i].kind != COLL_STEP_SEND)
			e->ch[e->p->steps[i].chunk].out = -1;   /* mark; set properly below */
	uint64_t scratch = 0, sendlen = 0;   /* elements */
	int seg = 0;
	for (int i = 0; i < C; i++) {
		ex_chunk *k = &e->ch[i];
		int recvd = k->out == -1;
		int d = data_chunk(e, ki, i);
		if (byd)
			byd[d] = i;
		uint64_t lo = coll_chunk_lo(e->count, C, d), hi = coll_chunk_lo(e->count, C, d + 1);
		k->lo = lo;
		k->len = hi - lo;
		k->nseg = k->len ? (int)((k->len + e->seg_elems - 1) / e->seg_elems) : 1;
		k->base = seg;
		seg += k->nseg;
		int64_t so = byd ? coll_shape_send_offset(&shp, c->rank, d, lo, ucount)
		                 : coll_shape_send_offset(&sh, role, i, lo, ucount);
		int64_t ro = byd ? coll_shape_recv_offset(&shp, c->rank, d, lo, ucount)
		                 : coll_shape_recv_offset(&sh, role, i, lo, ucount);
		k->out = ro >= 0;
		k->init = so >= 0 ? sb + (uint64_t)so * esz : NULL;
		if (so >= 0 && (uint64_t)so + k->len > sendlen)
			sendlen = (uint64_t)so + k->len;
		k->home = ro >= 0 ? rb + (uint64_t)ro * esz : NULL;
		k->scr = -1;
		if (ro < 0 && recvd) {
			k->scr = (int64_t)scratch;
			scratch += k->len;
		}
	}
	int restage = sb && rb && homes_clobber_inits(e, byd);
	free(byd);
	size_t need = (size_t)(scratch + (restage ? sendlen : 0)) * esz;
	if (need) {
		int rc = need_scratch(c, need + 64);
		if (rc)
			return rc;
	}
	char *scr = c->scratch, *copy = scr + scratch * esz;
	if (restage)
		memcpy(copy, sb, sendlen * esz);
	for (int i = 0; i < C; i++) {
		ex_chunk *k = &e->ch[i];
		if (k->scr >= 0)
			k->home = scr + (uint64_t)k->scr * esz;
		if (restage && k->init)
			k->init = copy + (k->init - sb);
		if (k->init == k->home)
			k->init = NULL;
	}
	return COLL_OK;
}

static void fill_hdr(const ex_state *e, rt_hdr *h, const rt_xstep *x, int s, uint32_t len)
{
	memset(h, 0, sizeof *h);
	h->magic = RT_HDR_MAGIC;
	h->seq = e->c->seq;
	h->count = e->count;
	h->algo_hash = e->p->hash;
	h->kind = (uint8_t)e->kind;
	h->dtype = (uint8_t)e->dt;
	h->op = (uint8_t)e->op;
	h->segmajor = (uint8_t)e->segmajor;
	h->root = e->root;
	h->round = x->round;
	h->chunk = x->chunk;
	h->seg = s;
	h->len = len;
	const rt_late *l = &e->c->late;
	h->late_rank = (uint16_t)l->rank;
	h->late_ns = l->ns;
	h->late2_rank = (uint16_t)l->rank2;
	h->late2_ns = l->ns2;
}

/* The name of the plan set's algorithm with this hash, or NULL. */
static const char *algo_named(const coll_comm *c, uint32_t hash)
{
	for (int i = 0; c->plans && i < c->plans->nalgos; i++)
		if (rt_algo_hash(c->plans->algos[i]) == hash)
			return c->plans->algos[i]->name;
	return NULL;
}

/* Compare the call a header describes (sequence number, collective,
 * count, dtype, op, root, algorithm, message order) with ours. */
static int check_call(ex_state *e, const rt_hdr *h, int from)
{
	coll_comm *c = e->c;
	int n = c->n;
	const char *kn = coll_kind_name(e->kind);
	if (h->magic != RT_HDR_MAGIC)
		return rt_err(c, COLL_ERR_PROTOCOL, "%s: malformed message from rank %d", kn, from);
	if (h->kind == RT_KIND_P2P)
		return rt_err(c, COLL_ERR_MISMATCH,
		              "rank %d sent a point-to-point message (tag %d) before its %s call #%u, which rank %d "
		              "receives after it: between two ranks, point-to-point messages and collectives must come in "
		              "the same order on both",
		              from, h->root, kn, c->seq, c->rank);
	if (h->seq != c->seq)
		return rt_err(c, COLL_ERR_MISMATCH,
		              "rank %d is in collective call #%u but rank %d is in call #%u: ranks made different "
		              "sequences of calls",
		              from, h->seq, c->rank, c->seq);
	if (h->kind != e->kind)
		return rt_err(c, COLL_ERR_MISMATCH, "rank %d called %s but rank %d called %s", from,
		              coll_kind_name((coll_kind)h->kind), c->rank, kn);
	if (h->count != e->count) {
		uint64_t u = coll_kind_units(coll_kind_get(e->kind), n);   /* the API's count is per unit */
		return rt_err(c, COLL_ERR_MISMATCH, "%s: count mismatch: rank %d passed %llu, rank %d passed %llu", kn,
		              from, (unsigned long long)(h->count / u), c->rank, (unsigned long long)(e->count / u));
	}
	if (h->dtype != e->dt)
		return rt_err(c, COLL_ERR_MISMATCH, "%s: dtype mismatch: rank %d passed %s, rank %d passed %s", kn, from,
		              coll_dtype_name((coll_dtype)h->dtype), c->rank, coll_dtype_name(e->dt));
	if (h->op != e->op)
		return rt_err(c, COLL_ERR_MISMATCH, "%s: op mismatch: rank %d passed %s, rank %d passed %s", kn, from,
		              coll_op_name((coll_op)h->op), c->rank, coll_op_name(e->op));
	if (h->root != e->root)
		return rt_err(c, COLL_ERR_MISMATCH, "%s: root mismatch: rank %d passed %d, rank %d passed %d", kn, from,
		              h->root, c->rank, e->root);
	if (h->algo_hash != e->p->hash) {
		const char *theirs = algo_named(c, h->algo_hash);
		if (theirs)
			return rt_err(c, COLL_ERR_MISMATCH, "%s: rank %d runs algorithm '%s' but rank %d runs '%s'", kn, from,
			              theirs, c->rank, e->a->name);
		return rt_err(c, COLL_ERR_MISMATCH, "%s: rank %d runs a different algorithm than rank %d ('%s')", kn,
		              from, c->rank, e->a->name);
	}
	if (h->segmajor != e->segmajor)
		return rt_err(c, COLL_ERR_MISMATCH,
		              "%s: rank %d sends its messages in %s order but rank %d in %s order (COLL_ROUND_ORDER "
		              "differs between them)",
		              kn, from, h->segmajor ? "segment" : "round", c->rank, e->segmajor ? "segment" : "round");
	return COLL_OK;
}

/* Compare a received header with what this rank expects. */
static int check_hdr(ex_state *e, const rt_req *q, const rt_xstep *x, int s)
{
	coll_comm *c = e->c;
	const rt_hdr *h = q->data;
	int from = q->peer, rc, n = c->n;
	const char *kn = coll_kind_name(e->kind);
	if (q->len < sizeof *h)
		return rt_err(c, COLL_ERR_PROTOCOL, "%s: malformed message from rank %d", kn, from);
	if ((rc = check_call(e, h, from)))
		return rc;
	/* The late arrivals a header names must be ranks of this job: under
	 * `straggler auto` the one named latest becomes the detected straggler,
	 * whose role comm.c then looks up among the plan's n roles (a forged
	 * rank 32767 made that read far past them). */
	if ((h->late_ns && h->late_rank >= n) || (h->late2_ns && h->late2_rank >= n))
		return rt_err(c, COLL_ERR_PROTOCOL, "%s: message from rank %d names rank %d as a late arrival, not a rank of "
		              "this job (0..%d)", kn, from, h->late_ns && h->late_rank >= n ? h->late_rank : h->late2_rank,
		              n - 1);
	rt_late_merge(&c->late, h->late_ns, h->late_rank);
	rt_late_merge(&c->late, h->late2_ns, h->late2_rank);
	if (h->round != x->round || h->chunk != x->chunk || h->seg != s)
		return rt_err(c, COLL_ERR_PLAN,
		              "%s '%s': rank %d sent round %d chunk %d segment %d, rank %d expected round %d chunk %d "
		              "segment %d (inconsistent plans)",
		              kn, e->a->name, from, h->round, h->chunk, h->seg, c->rank, x->round, x->chunk, s);
	const ex_chunk *k = &e->ch[x->chunk];
	uint64_t off, len;
	seg_range(e, k, s, &off, &len);
	if (h->len != len * e->esz || q->len != sizeof *h + h->len)
		return rt_err(c, COLL_ERR_PROTOCOL, "%s: message from rank %d has %u bytes, expected %llu", kn, from,
		              h->len, (unsigned long long)(len * e->esz));
	return COLL_OK;
}

/* --- agreement on rooted calls (see the file's header) ---------------------- */

/* Send every other rank this call's fingerprint and ask for theirs:
 * before any message of the plan, so that on every link, both ways, it is
 * the call's first. */
static int fp_post(ex_state *e)
{
	coll_comm *c = e->c;
	int n = c->n, rc;
	for (int r = 0; r < n; r++) {
		if (r == c->rank)
			continue;
		rt_req *q = &e->fps[r];
		rt_hdr *h = &q->hdr;
		memset(h, 0, sizeof *h);
		h->magic = RT_HDR_MAGIC;
		h->seq = c->seq;
		h->count = e->count;
		h->algo_hash = e->p->hash;
		h->kind = (uint8_t)e->kind;
		h->dtype = (uint8_t)e->dt;
		h->op = (uint8_t)e->op;
		h->segmajor = (uint8_t)e->segmajor;
		h->root = e->root;
		h->round = h->chunk = h->seg = -1;
		q->peer = r;
		q->iov[0].iov_base = h;
		q->iov[0].iov_len = sizeof *h;
		q->iovcnt = 2;   /* and no payload, as a segment of a count-0 call (the mpi transport wants both) */
		if ((rc = c->tp->ops->post_send(c->tp, q)))
			return rc;
	}
	for (int r = 0; r < n; r++) {
		if (r == c->rank)
			continue;
		rt_req *q = &e->fps[n + r];
		q->peer = r;
		q->applied = -1;
		if ((rc = c->tp->ops->post_recv(c->tp, q)))
			return rc;
		e->fp_left++;
	}
	return COLL_OK;
}

/* Check the fingerprints that arrived against our own call. */
static int fp_check(ex_state *e, int *moved)
{
	coll_comm *c = e->c;
	int n = c->n, rc;
	for (int r = 0; r < n && e->fp_left; r++) {
		rt_req *q = &e->fps[n + r];
		if (r == c->rank || !q->done || q->applied == 1)
			continue;
		const rt_hdr *h = q->data;
		if (q->len < sizeof *h)
			return rt_err(c, COLL_ERR_PROTOCOL, "%s: malformed message from rank %d", coll_kind_name(e->kind), r);
		if ((rc = check_call(e, h, r)))
			return rc;
		if (h->round != -1 || h->len || q->len != sizeof *h || q->pend)
			return rt_err(c, COLL_ERR_PROTOCOL, "%s: rank %d sent data where the arguments of its call were due",
			              coll_kind_name(e->kind), r);
		c->tp->ops->release(c->tp, q);
		q->applied = 1;
		e->fp_left--;
		*moved = 1;
	}
	return COLL_OK;
}

static int fp_sends_done(const ex_state *e)
{
	for (int r = 0; r < e->c->n; r++)
		if (r != e->c->rank && !e->fps[r].done)
			return 0;
	return 1;
}

/* A peer's abort (rc ABORTED, or MISMATCH: rt_abort_code) that ends a
 * rooted call usually comes of a rank that disagreed, whose fingerprint
 * was sent before the abort; it may still be on its way on a slower link
 * (the mpi transport's aborts overtake data).  Wait up to 200 ms for the
 * fingerprints due, so that this rank too names the difference itself, as
 * every rank of a rooted call can, rather than relay another's words. */
static int fp_own_words(ex_state *e, int rc)
{
	coll_comm *c = e->c;
	if (rc != rt_abort_code(rc) || !e->fp_left)
		return rc;
	char keep[sizeof c->err];
	memcpy(keep, c->err, sizeof keep);
	int64_t until = rt_now_ms() + 200;
	for (;;) {
		int moved = 0, r = fp_check(e, &moved);
		if (r == COLL_ERR_MISMATCH)
			return r;
		if (r || !e->fp_left || rt_now_ms() >= until)
			break;
		r = c->tp->ops->progress(c->tp, 10);
		if (r && r != rt_abort_code(r))
			break;
		if (r) {   /* the abort again, at once (shm keeps its flag) */
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
	memcpy(c->err, keep, sizeof keep);
	return rc;
}

/* Count the segments of steps idx[lo, hi) (one peer's sends or receives)
 * into the per-round left[] and *total; *maxseg: the most of any step. */
static void count_steps(const ex_state *e, const int *idx, int lo, int hi, long *left, long *total, int *maxseg)
{
	for (int k = lo; k < hi; k++) {
		const rt_xstep *x = &e->p->steps[idx[k]];
		int nseg = e->ch[x->chunk].nseg;
		if (nseg > *maxseg)
			*maxseg = nseg;
		*total += nseg;
		left[x->round] += nseg;
	}
}

/* Move a round gate past the rounds with nothing left. */
static void advance(const long *left, int *gate, int nrounds)
{
	while (*gate < nrounds && left[*gate] == 0)
		(*gate)++;
}

/* COLL_TRACE_ROUNDS: one line per round this rank takes part in, times in
 * ms from its own entry into the call ("-": nothing of that kind). */
static void print_trace(const ex_state *e)
{
	for (int r = 0; r < e->nrounds; r++) {
		const int64_t *t = &e->trace[3 * r];
		if (!t[1] && !t[2])
			continue;
		char f[3][24];
		for (int i = 0; i < 3; i++)
			if (t[i])
				snprintf(f[i], sizeof f[i], "%.3f", (double)t[i] / 1e6);
			else
				snprintf(f[i], sizeof f[i], "-");
		fprintf(stderr, "coll trace: rank %d call %u %s round %d: first send %s ms, sends done %s ms, "
		        "receives applied %s ms\n", e->c->rank, e->c->seq, e->a->name, r, f[0], f[1], f[2]);
	}
	if (e->on_segs)
		fprintf(stderr, "coll trace: rank %d call %u %s: %ld of %ld forwarded segments computed straight into "
		        "their send\n", e->c->rank, e->c->seq, e->a->name, e->on_sent, e->on_segs);
}

/* Complete finished sends (in order per peer). */
static int reap_sends(ex_state *e, ex_peer *pp)
{
	int moved = 0;
	while (pp->scount && pp->sring[pp->shead].done) {
		rt_req *q = &pp->sring[pp->shead];
		const rt_xstep *x = &e->p->steps[q->xstep];
		e->sdone[e->ch[x->chunk].base + q->xseg]++;
		e->sends_left--;
		if (--e->sleft[x->round] == 0)
			advance(e->sleft, &e->sgate, e->nrounds);
		if (e->trace)
			e->trace[3 * x->round + 1] = rt_now_ns() - e->t0;
		pp->shead = (pp->shead + 1) % e->ws;
		pp->scount--;
		moved = 1;
	}
	return moved;
}

/* The request for the next send to pp (its cursor's step and segment):
 * header filled, payload pointing at the segment's current value. */
static rt_req *next_send(ex_state *e, ex_peer *pp)
{
	int sx = e->p->sidx[pp->si], s = pp->sseg;
	const rt_xstep *x = &e->p->steps[sx];
	const ex_chunk *k = &e->ch[x->chunk];
	rt_req *q = &pp->sring[(pp->shead + pp->scount) % e->ws];
	uint64_t off, len;
	seg_range(e, k, s, &off, &len);
	rt_hdr *h = &q->hdr;
	memset(q, 0, offsetof(rt_req, hdr));
	fill_hdr(e, h, x, s, (uint32_t)(len * e->esz));
	q->peer = pp->phys;
	q->iov[0].iov_base = h;
	q->iov[0].iov_len = sizeof *h;
	q->iov[1].iov_base = (void *)(uintptr_t)seg_loc(e, k, s, off);
	q->iov[1].iov_len = len * e->esz;
	q->iovcnt = 2;
	q->xstep = sx;
	q->xseg = s;
	return q;
}

/* Step a cursor (*i, *seg) over a peer's step list idx[first, end), the
 * order in which messages to (from) that peer travel; both ends walk it
 * alike.  Round-major: every segment of a step, then the next step.
 * Segment-major (e->segmajor): segment 0 of every step, then segment 1 of
 * every step that has one, and so on, like NCCL's slices, each of which
 * runs the whole schedule: a reduction of round k and the send of round
 * k+1 that forwards it then come due together, which is what reduce_send
 * needs; in round-major order the send cursor is still a round behind
 * when a round has more segments than the transport has slots.  The
 * executor's round order gate needs round-major (a later round's send
 * waits for every segment of the earlier rounds), so segment-major is
 * used only without it.  *i == end: done. */
static void cursor_next(const ex_state *e, const int *idx, int first, int end, int maxseg, int *i, int *seg)
{
	if (!e->segmajor) {
		if (++*seg >= e->ch[e->p->steps[idx[*i]].chunk].nseg) {
			*seg = 0;
			++*i;
		}
		return;
	}
	for (;;) {
		if (++*i >= end) {
			if (++*seg >= maxseg) {
				*i = end;
				return;
			}
			*i = first;
		}
		if (e->ch[e->p->steps[idx[*i]].chunk].nseg > *seg)
			return;
	}
}

/* The transport took the send next_send prepared: move pp's cursor on. */
static void sent(ex_state *e, ex_peer *pp, const rt_xstep *x)
{
	if (e->trace && !e->trace[3 * x->round])
		e->trace[3 * x->round] = rt_now_ns() - e->t0;
	pp->scount++;
	cursor_next(e, e->p->sidx, pp->sfirst, pp->send_end, pp->smax, &pp->si, &pp->sseg);
}

static int issue_sends(ex_state *e, ex_peer *pp, int *moved)
{
	while (pp->scount < e->ws && pp->si < pp->send_end) {
		const rt_xstep *x = &e->p->steps[e->p->sidx[pp->si]];
		if (e->rapp[e->ch[x->chunk].base + pp->sseg] < (uint32_t)x->need ||
		    (e->c->round_order && x->round > e->sgate))
			break;
		int rc = e->c->tp->ops->post_send(e->c->tp, next_send(e, pp));
		if (rc)
			return rc;
		sent(e, pp, x);
		*moved = 1;
	}
	return COLL_OK;
}

/* Apply a received segment by sending it on (see "Sending on from the
 * message" above).  *done: applied and sent; otherwise nothing happened
 * and the caller folds it as usual. */
static int send_on(ex_state *e, const rt_xstep *x, const ex_chunk *k, int s, uint64_t off, const char *src,
                   uint64_t len, int *done)
{
	*done = 0;
	rt_tp *tp = e->c->tp;
	if (x->nsend < 0 || !len)
		return COLL_OK;
	e->on_segs++;
	if (!tp->ops->send_reserve || !e->c->reduce_send)
		return COLL_OK;
	const rt_xstep *y = &e->p->steps[x->nsend];
	ex_peer *pp = e->peers;
	while (pp->role != y->peer)
		pp++;
	if (pp->scount >= e->ws || pp->si >= pp->send_end || e->p->sidx[pp->si] != x->nsend || pp->sseg != s ||
	    e->rapp[k->base + s] + 1 < (uint32_t)y->need || (e->c->round_order && y->round > e->sgate))
		return COLL_OK;
	rt_req *q = next_send(e, pp);
	q->iovcnt = 1;   /* the header; the payload is written below */
	size_t bytes = len * e->esz;
	void *buf;
	int rc = tp->ops->send_reserve(tp, q, bytes, &buf);
	if (rc || !buf)
		return rc;
	if (x->kind == COLL_STEP_RECV_COPY)
		memcpy(buf, src, bytes);
	else
		rt_reduce3(buf, seg_loc(e, k, s, off), src, len, e->dt, e->op);
	if ((rc = tp->ops->send_commit(tp, q)))
		return rc;
	sent(e, pp, y);
	e->on_sent++;
	*done = 1;
	/* The peer may have the message already; buf stays ours to read until
	 * the next send to it. */
	if (x->after != RT_AFTER_OVERWRITE)
		put_home(k->home + off * e->esz, buf, bytes, e->nt && x->after == RT_AFTER_NONE);
	return COLL_OK;
}

static int post_recvs(ex_state *e, ex_peer *pp, int *moved)
{
	while (pp->rhead - pp->rtail < e->wr && pp->ri < pp->recv_end) {
		int rx = e->p->ridx[pp->ri];
		const rt_xstep *x = &e->p->steps[rx];
		if (e->c->round_order && x->round > e->rgate)
			break;
		rt_req *q = &pp->rring[pp->rhead % e->wr];
		memset(q, 0, sizeof *q);
		q->peer = pp->phys;
		q->xstep = rx;
		q->xseg = pp->rseg;
		q->applied = -1;   /* -1: header not checked yet */
		int rc = e->c->tp->ops->post_recv(e->c->tp, q);
		if (rc)
			return rc;
		pp->rhead++;
		*moved = 1;
		cursor_next(e, e->p->ridx, pp->rfirst, pp->recv_end, pp->rmax, &pp->ri, &pp->rseg);
	}
	return COLL_OK;
}

/* Fold bytes [q->xoff, q->xoff + len) of a segment's payload, at src,
 * into its home (len a multiple of the element size). */
static void fold(ex_state *e, const rt_xstep *x, const ex_chunk *k, int s, uint64_t off, uint64_t byteoff,
                 const char *src, size_t len)
{
	size_t el = len / e->esz;
	char *home = k->home + off * e->esz + byteoff;
	int nt = e->nt && x->after == RT_AFTER_NONE && x->nsend < 0;
	if (!el)
		return;
	if (x->kind == COLL_STEP_RECV_COPY) {
		if (home != src)
			put_home(home, src, len, nt);
		return;
	}
	const char *cur = seg_loc(e, k, s, off) + byteoff;
	if (cur == home)
		rt_reduce2(home, src, el, e->dt, e->op);   /* reads home anyway: nothing to skip */
	else
		(nt ? rt_reduce3_nt : rt_reduce3)(home, cur, src, el, e->dt, e->op);
}

/* Take a streamed payload (q->pend > 0) from the transport as far as it has
 * arrived: copies land in the chunk's home directly, reductions go through
 * the cache-sized staging buffer.  *fin: the payload is complete. */
static int stream_in(ex_state *e, ex_peer *pp, rt_req *q, const rt_xstep *x, const ex_chunk *k, int s,
                     uint64_t off, int *moved, int *fin)
{
	rt_tp *tp = e->c->tp;
	*fin = 0;
	while (q->pend) {
		size_t got = 0;
		int rc;
		if (x->kind == COLL_STEP_RECV_COPY) {
			char *dst = k->home + off * e->esz + q->xoff;
			if ((rc = tp->ops->read(tp, q, dst, q->pend, &got)))
				return rc;
			q->xoff += got;
		} else {
			/* staging holds pp->ncarry bytes of a split element first */
			char *st = e->c->stage;
			memcpy(st, pp->carry, pp->ncarry);
			if ((rc = tp->ops->read(tp, q, st + pp->ncarry, RT_STAGE_BYTES, &got)))
				return rc;
			size_t have = pp->ncarry + got, use = have - have % e->esz;
			fold(e, x, k, s, off, q->xoff, st, use);
			q->xoff += use;
			pp->ncarry = (int)(have - use);
			memcpy(pp->carry, st + use, pp->ncarry);
		}
		if (!got)
			return COLL_OK;
		*moved = 1;
	}
	*fin = 1;
	return COLL_OK;
}

static int apply_recvs(ex_state *e, ex_peer *pp, int *moved)
{
	for (int i = pp->rtail; i < pp->rhead; i++) {
		rt_req *q = &pp->rring[i % e->wr];
		if (!q->done || q->applied == 1)
			continue;
		const rt_xstep *x = &e->p->steps[q->xstep];
		const ex_chunk *k = &e->ch[x->chunk];
		int s = q->xseg, rc;
		if (q->applied < 0) {
			if ((rc = check_hdr(e, q, x, s)))
				return rc;
			q->applied = 0;
		}
		uint32_t *ra = &e->rapp[k->base + s];
		int ready = *ra == (uint32_t)x->idx && e->sdone[k->base + s] >= (uint32_t)x->need;
		uint64_t off, len;
		seg_range(e, k, s, &off, &len);
		if (q->pend) {
			/* The payload is still in the transport's stream, which is
			 * stalled until we take it: take it now, or have the
			 * transport buffer it (the executor is not ready for it). */
			int fin;
			if (!ready || (x->kind != COLL_STEP_RECV_COPY && !e->c->stage)) {
				if ((rc = e->c->tp->ops->read(e->c->tp, q, NULL, 0, NULL)))
					return rc;
				continue;
			}
			if ((rc = stream_in(e, pp, q, x, k, s, off, moved, &fin)))
				return rc;
			if (!fin)
				return COLL_OK;   /* later messages from this peer queue behind it */
		} else {
			if (!ready)
				continue;
			const char *src = (const char *)q->data + sizeof(rt_hdr);
			int fwd = 0;
			if ((rc = send_on(e, x, k, s, off, src, len, &fwd)))
				return rc;
			if (len && !fwd)
				fold(e, x, k, s, off, 0, src, len * e->esz);
		}
		(*ra)++;
		if (--e->rleft[x->round] == 0)
			advance(e->rleft, &e->rgate, e->nrounds);
		if (e->trace)
			e->trace[3 * x->round + 2] = rt_now_ns() - e->t0;
		e->c->tp->ops->release(e->c->tp, q);
		q->applied = 1;
		e->recvs_left--;
		*moved = 1;
	}
	while (pp->rtail < pp->rhead && pp->rring[pp->rtail % e->wr].applied == 1)
		pp->rtail++;
	return COLL_OK;
}

/* Something to say about what we were waiting for when time ran out. */
static void describe_wait(ex_state *e, char *buf, size_t len)
{
	snprintf(buf, len, "nothing pending");
	for (int r = 0; e->fps && r < e->c->n; r++)
		if (r != e->c->rank && e->fps[e->c->n + r].applied != 1) {
			snprintf(buf, len, "waiting for rank %d to enter the call", r);
			return;
		}
	for (int i = 0; i < e->npeers; i++) {
		ex_peer *pp = &e->peers[i];
		for (int j = pp->rtail; j < pp->rhead; j++) {
			rt_req *q = &pp->rring[j % e->wr];
			if (!q->done || (q->pend && q->applied != 1)) {   /* (or the rest of a streamed payload) */
				const rt_xstep *x = &e->p->steps[q->xstep];
				snprintf(buf, len, "waiting for rank %d (round %d, chunk %d)", pp->phys, x->round, x->chunk);
				return;
			}
		}
	}
	for (int i = 0; i < e->npeers; i++)
		if (e->peers[i].scount) {
			snprintf(buf, len, "waiting to send to rank %d", e->peers[i].phys);
			return;
		}
}

/* While waiting: look at the next message of every rank that nobody has
 * asked for (tp->peek).  Ranks that run different algorithms (or calls)
 * can each wait for a message the other never sends while the messages
 * they did send sit unread, because a rank reads a peer only when its own
 * plan expects something from it: without this, that was a "no progress"
 * timeout instead of a mismatch.  A message from a later call is fine
 * (that rank is ahead); one from an earlier call was never expected
 * here. */
static int peek_ranks(ex_state *e)
{
	coll_comm *c = e->c;
	rt_tp *tp = c->tp;
	for (int r = 0; tp->ops->peek && r < c->n; r++) {
		rt_hdr h;
		int have = 0, rc;
		if (r == c->rank)
			continue;
		if ((rc = tp->ops->peek(tp, r, &h, &have)))
			return fp_own_words(e, rc);
		/* a point-to-point message sent after the sender started this
		 * call (its seq counts it) is for later; one sent before it is
		 * in the way */
		if (!have || h.seq > c->seq || (h.kind == RT_KIND_P2P && h.seq >= c->seq))
			continue;
		if (h.kind == RT_KIND_P2P)
			return check_call(e, &h, r);
		if (h.seq < c->seq)
			return rt_err(c, COLL_ERR_MISMATCH, "rank %d sent a message in collective call #%u that rank %d never "
			              "expected (it finished that call): ranks ran different algorithms or calls", r, h.seq,
			              c->rank);
		if ((rc = check_call(e, &h, r)))
			return rc;
	}
	return COLL_OK;
}

static int run_loop(ex_state *e)
{
	coll_comm *c = e->c;
	rt_tp *tp = c->tp;
	int64_t last = rt_now_ms(), peeked = last;
	int rc;
	for (;;) {
		int moved = 0;
		if (e->fp_left && (rc = fp_check(e, &moved)))
			return rc;
		for (int i = 0; i < e->npeers; i++) {
			ex_peer *pp = &e->peers[i];
			moved |= reap_sends(e, pp);
			if ((rc = apply_recvs(e, pp, &moved)) || (rc = issue_sends(e, pp, &moved)) ||
			    (rc = post_recvs(e, pp, &moved)))
				return rc;
			/* sends the transport took at once count now: a rank whose
			 * part is done returns without a progress() that could bring
			 * a peer's abort of the next call */
			moved |= reap_sends(e, pp);
		}
		if (e->sends_left == 0 && e->recvs_left == 0 && (!e->fps || (!e->fp_left && fp_sends_done(e))))
			return COLL_OK;
		int64_t now = rt_now_ms();
		if (moved)
			last = now;
		int wait = 0;
		if (!moved && now - last >= 100 && now - peeked >= 100) {
			peeked = now;
			if ((rc = peek_ranks(e)))
				return rc;
		}
		if (!moved) {
			if (c->timeout_ms > 0 && now - last >= c->timeout_ms) {
				char what[128];
				describe_wait(e, what, sizeof what);
				return rt_err(c, COLL_ERR_TIMEOUT, "%s: no progress for %.1f s: %s", coll_kind_name(e->kind),
				              (double)(now - last) / 1000, what);
			}
			wait = 100;
			if (c->timeout_ms > 0 && c->timeout_ms - (now - last) < wait)
				wait = (int)(c->timeout_ms - (now - last));
		}
		if ((rc = tp->ops->progress(tp, wait)))
			return fp_own_words(e, rc);
	}
}

int rt_exec(coll_comm *c, const coll_algo *a, rt_prep *p, const void *sb, void *rb, size_t count, coll_dtype dt,
            coll_op op, int root, int straggler)
{
	ex_state e;
	memset(&e, 0, sizeof e);
	int n = c->n, C = a->chunks, rc;
	e.c = c, e.a = a, e.p = p;
	e.kind = (coll_kind)a->kind, e.dt = dt, e.op = op, e.root = root;
	/* only rooted collectives move the root (the others pass root 0,
	 * which a rank order may give any logical rank) */
	e.shift = coll_kind_get(a->kind)->rooted ? ((rt_logical(c, root) - a->root) % n + n) % n : 0;
	e.swap_a = e.swap_b = -1;
	e.segmajor = !c->round_order;
	if (straggler >= 0 && a->straggler > 0 && rt_logical(c, straggler) != a->straggler - 1 &&
	    e.kind == COLL_ALLREDUCE)
		e.swap_a = a->straggler - 1, e.swap_b = rt_logical(c, straggler);
	e.esz = coll_dtype_size(dt);
	e.seg_elems = c->seg_bytes / e.esz;
	if (e.seg_elems == 0)
		e.seg_elems = 1;
	e.count = count;
	e.nt = (uint64_t)count * e.esz >= c->nt_bytes;
	c->seq++;
	if (c->tp && c->tp->ops->read && !c->stage)
		c->stage = malloc(RT_STAGE_BYTES + 16);   /* NULL: streamed reductions get buffered */
	e.ws = c->tp ? c->tp->send_window : 1;
	e.wr = c->tp ? c->tp->recv_window : 1;
	e.ch = calloc((size_t)C, sizeof *e.ch);
	if (!e.ch)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	char *reqmem = NULL;   /* the requests; freed last (see the end) */
	if ((rc = layout(&e, sb, rb)))
		goto out;
	int nsegs = e.ch[C - 1].base + e.ch[C - 1].nseg;
	e.rapp = calloc((size_t)nsegs * 2, sizeof(uint32_t));
	e.sdone = e.rapp + nsegs;
	for (int q = 0; q < n; q++)
		if (p->soff[q + 1] > p->soff[q] || p->roff[q + 1] > p->roff[q])
			e.npeers++;
	e.nrounds = p->nrounds;
	e.sleft = calloc((size_t)e.nrounds * 2 + 2, sizeof *e.sleft);
	e.rleft = e.sleft ? e.sleft + e.nrounds + 1 : NULL;
	e.peers = calloc((size_t)(e.npeers ? e.npeers : 1), sizeof *e.peers);
	size_t per_peer = (size_t)(e.ws + e.wr) * sizeof(rt_req);
	size_t peer_bytes = (size_t)(e.npeers ? e.npeers : 1) * per_peer;
	/* rooted calls: the agreement's requests after the peers' */
	const coll_kind_info *ki = coll_kind_get(a->kind);
	int agree = n > 1 && (ki->contrib == COLL_WHO_ROOT || ki->target == COLL_WHO_ROOT);
	reqmem = calloc(1, peer_bytes + (agree ? (size_t)n * 2 * sizeof(rt_req) : 0));
	if (reqmem && agree)
		e.fps = (rt_req *)(reqmem + peer_bytes);
	if (!e.rapp || !e.peers || !reqmem || !e.sleft) {
		rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
		goto out;
	}
	int np = 0;
	for (int q = 0; q < n; q++) {
		if (!(p->soff[q + 1] > p->soff[q] || p->roff[q + 1] > p->roff[q]))
			continue;
		ex_peer *pp = &e.peers[np];
		char *m = reqmem + (size_t)np * per_peer;
		np++;
		pp->role = q;
		pp->phys = phys_of(&e, q);
		pp->si = pp->sfirst = p->soff[q], pp->send_end = p->soff[q + 1];
		pp->ri = pp->rfirst = p->roff[q], pp->recv_end = p->roff[q + 1];
		pp->sring = (rt_req *)m;
		pp->rring = pp->sring + e.ws;
		count_steps(&e, p->sidx, p->soff[q], p->soff[q + 1], e.sleft, &e.sends_left, &pp->smax);
		count_steps(&e, p->ridx, p->roff[q], p->roff[q + 1], e.rleft, &e.recvs_left, &pp->rmax);
	}
	advance(e.sleft, &e.sgate, e.nrounds);
	advance(e.rleft, &e.rgate, e.nrounds);
	if (c->trace_rounds)
		e.trace = calloc((size_t)e.nrounds * 3 + 1, sizeof *e.trace);
	e.t0 = rt_now_ns();
	rc = e.fps ? fp_post(&e) : COLL_OK;
	if (rc == COLL_OK && n > 1)
		rc = run_loop(&e);
	if (e.trace) {
		print_trace(&e);
		free(e.trace);
	}
	if (rc == COLL_OK) {
		/* Output segments never received still sit in init: copy them. */
		for (int i = 0; i < C; i++) {
			ex_chunk *k = &e.ch[i];
			if (!k->out || !k->init)
				continue;
			for (int s = 0; s < k->nseg; s++) {
				uint64_t off, len;
				seg_range(&e, k, s, &off, &len);
				if (len && e.rapp[k->base + s] == 0)
					put_home(k->home + off * e.esz, k->init + off * e.esz, len * e.esz, e.nt);
			}
		}
	} else {
		/* Give back received messages that were never applied. */
		for (int i = 0; i < e.npeers; i++)
			for (int j = e.peers[i].rtail; j < e.peers[i].rhead; j++) {
				rt_req *q = &e.peers[i].rring[j % e.wr];
				if (q->done && q->applied != 1)
					c->tp->ops->release(c->tp, q);
			}
		for (int r = 0; e.fps && r < n; r++)
			if (r != c->rank && e.fps[n + r].done && e.fps[n + r].applied != 1)
				c->tp->ops->release(c->tp, &e.fps[n + r]);
	}
out:
	free(e.rapp);
	free(e.sleft);
	free(e.peers);
	free(e.ch);
	if (rc) {
		/* The communicator is now out of step with its peers: mark it
		 * broken and tell them, so they fail fast instead of timing out. */
		char keep[sizeof c->err];
		c->broken = rc;
		if (rc == COLL_ERR_TIMEOUT || rc == COLL_ERR_ABORTED)
			rt_stopped_ranks(c, c->err, sizeof c->err);   /* the likely reason, if a rank on this host is stopped */
		memcpy(keep, c->err, sizeof keep);
		if (c->tp)
			c->tp->ops->abort(c->tp, rc);   /* also on ABORTED: relay to peers that did not hear */
		snprintf(c->err, sizeof c->err, "rank %d: %s", c->rank, keep);
	}
	/* Only now: a transport's abort may still write the rest of a send in
	 * flight (tcp finishes the frame before its ABORT frame), and that
	 * send's request lives here. */
	free(reqmem);
	return rc;
}
