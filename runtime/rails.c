/*
 * rails.c - one transport over several networks ("rails") at once: every
 * message is cut into byte ranges that travel over the rails a policy
 * chooses, each range is acknowledged by the receiver, and a rail that
 * fails is replaced by the others with nothing lost or applied twice.
 * The executor sees an ordinary transport (rt_transport "rails").
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
 *              that have nothing to dial (ibverbs; see Failover)
 *
 * Splitting (the policy, coll_rail_policy in coll_plan.h).  A message below
 * the cold threshold goes whole to the alive rail of lowest latency, the
 * first listed among those within RL_LAT_TIE (cold start); a larger one
 * is split over the rails (hot start).  Under
 * split=throughput a message of RL_PULL_BYTES or more is cut into pieces
 * that the rails pull as they drain, each piece to the rail that would
 * finish it first (pull()), so that the rails finish together whatever
 * their speeds, and a rail more than `tolerance` times slower than the
 * best gets none.  Smaller ones, and every message under equal or
 * latency, are split by the shares of the message's size class (log2 of
 * its bytes), each rail's part cut into pieces of at most COLL_RAIL_SLICE
 * bytes.  The data-length table holds each class's shares and per-rail
 * rates, fed by per-rail timers: a split message, once acknowledged,
 * gives each rail's bytes of it and its finish time, from the split to
 * that part's last acknowledgement (sample()).  Every `rebalance` calls
 * each class's samples are folded into its rates and, under
 * split=throughput, move its shares (fold()): toward the bytes each rail
 * carried where pull() split, toward equal finish times elsewhere.  A new
 * class starts from the nearest measured class's shares and, for its
 * first RL_EARLY_FOLDS folds, is folded every RL_FIRST_FOLD messages, not
 * only at rebalances.  The
 * `auto` cold threshold is where one rail and the split take equally long
 * (latency equivalence, the Nezha paper's Eq. 6): alpha_b + S/beta_b =
 * alpha_max + alpha_b + S/sum(beta), the second alpha_b being what the
 * extra piece costs, so S* = alpha_max / (1/beta_b - 1/sum(beta)); until
 * throughputs are measured it is RL_COLD_DEFAULT.
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

#include "rt.h"

#define RL_MAGIC 0x4c496152u          /* "RaIL" */
#define RL_WINDOW 8                   /* messages in flight per peer (receiver slots) */
#define RL_RWIN 4                     /* child receives kept posted per link */
#define RL_MAXPIECES 64               /* pieces per message (the receiver's bit mask) */
#define RL_COPY_BYTES (16 << 10)      /* messages this small are copied at the sender */
#define RL_COPY_MAX (4 << 20)         /* pulled or unsplit messages up to this are copied at start() */
#define RL_ACK_DELAY_NS 2000000       /* other acknowledgements wait at most this long */
#define RL_MIN_PIECE (4 << 10)        /* a rail's part of a split is at least this, or nothing */
#define RL_COLD_DEFAULT (64 << 10)    /* `auto` cold threshold before throughputs are measured */
#define RL_RATE_BYTES (1 << 20)       /* messages from this size measure a rail's bandwidth; smaller ones
                                       * mostly its buffers (a switch's, tc tbf's burst), far above it */
#define RL_REJOIN_MS 500
#define RL_NCLASS 40
#define RL_IDLE_NS 100000000        /* a link idle this long is warming up again (start) */
#define RL_GAIN 0.5                   /* how far an early fold moves shares toward balance (fold) */
#define RL_GAIN_LATE 0.2              /* ... and a later one */
#define RL_MOVE_MIN 0.03              /* a log-imbalance smaller than this moves no share (fold) */
#define RL_MOVE_MAX 0.3               /* ... and one larger moves it as far as this one would */
#define RL_EARLY_FOLDS 8              /* folds a new class gets every RL_FIRST_FOLD messages */
#define RL_COARSE_FOLDS 4             /* ... the first of which move by RL_GAIN, the rest by RL_GAIN_LATE */
#define RL_FIRST_FOLD 8               /* sampled messages per early fold (first_fold_due) */
#define RL_PROBES 3                   /* latency probes per link at connect */
#define RL_LAT_TIE 0.1                /* latencies this close (a fraction) tie: the first rail wins */
#define RL_PULL_NS 5000000            /* pull(): a link takes a piece while it has less than this
                                       * much time's worth unacknowledged (see pull()) */
#define RL_PULL_SLICES 4              /* ... and until its drain is measured, fewer than this many
                                       * slices (512 KiB: 20 ms of a 200 Mbit/s rail) */
#define RL_PULL_BYTES (512 << 10)     /* split=throughput: messages from this size go out by pull() */
#define RL_PULL_PIECE (32 << 10)      /* pull() hands a message out in pieces of this size ... */
#define RL_PULL_PIECES 32             /* ... or in this many, when that makes them larger */
#define RL_DRAIN_NS 50000000          /* drain_sample(): the time one measurement of a drain spans */
#define RL_DRAIN_AVG 8                /* a drain is the mean of its first measurements, then moves
                                       * 1/RL_DRAIN_AVG of the way to each new one */
#define RL_RETRY_NS 200000000         /* a link's drain not measured again this long is forgotten
                                       * (drain_of(): 1 s left a starved link starved for a
                                       * whole bench step) */

enum { RH_DATA = 1, RH_ACK, RH_PROBE, RH_PROBE_ACK, RH_DOWN, RH_REJOIN };
#define RL_REJOIN_BYTES 128           /* a REJOIN's record, at most */
#define RL_RD_REJOIN (-2)             /* rl_link.rd_slot: the bytes are a REJOIN's record */
#define RL_NOSLICE 0xffffu

typedef struct {
	uint32_t magic;
	uint16_t type, rail;     /* rail: the sender's rail it travels on; DOWN: the rail dropped */
	uint32_t seq;            /* DATA: message number; ACK: the piece's, if slice != RL_NOSLICE */
	uint16_t slice, nslices; /* DATA: this piece, pieces in the message; ACK: the piece (or RL_NOSLICE) */
	uint64_t off;            /* DATA: first byte of the piece in the message */
	uint32_t total;          /* DATA: message bytes (executor header included) */
	uint32_t len;            /* DATA: piece bytes after this header */
	uint32_t cum;            /* ACK: messages below cum arrived whole; DOWN: the link's incarnation */
	uint32_t freed;          /* ACK: messages below freed were released by the executor */
	int64_t stamp;           /* PROBE, PROBE_ACK: the prober's clock (ns) */
	uint8_t pad[16];
} rl_hdr;
_Static_assert(sizeof(rl_hdr) == 64, "rl_hdr is a child's 64-byte header");

struct rl_msg;

/* A piece of a message being sent, as a child send request. */
typedef struct rl_piece {
	rt_req creq;
	rl_hdr h;
	rt_hdr xh;               /* piece 0 sent from the executor's buffers: its header, right after h */
	struct rl_msg *m;
	struct rl_piece *lnext;  /* the link's list of posted, unfinished pieces */
	int rail;                /* rail posted on; -1: not posted */
	int queued;              /* waiting for a rail to take it (pull(), split=throughput) */
	int acked;
	int resent;
	int woke;                /* posted on a link idle for RL_IDLE_NS or never used (TCP's ramp) */
	int64_t posted_ns;
	uint32_t off, len;
} rl_piece;
_Static_assert(offsetof(rl_piece, xh) == offsetof(rl_piece, h) + 64, "piece 0 sends h and xh as one iov");

/* A message of the executor to one peer. */
typedef struct rl_msg {
	struct rl_msg *next;     /* the peer's list, in seq order */
	rt_req *req;             /* the executor's send, until it completes */
	uint32_t seq, total;
	int started, hot, cls;
	int npieces, nfin, cap;
	int next_pull;           /* pull(): its pieces below this were handed to a rail */
	int clean;               /* pieces acknowledged on their own rail, none resent */
	int warmup;              /* a rail of it was idle before: no sample (see start) */
	int pulled;              /* its pieces go out by pull() */
	int64_t start_ns;        /* when it was cut into pieces */
	int64_t fin_ns[COLL_MAX_RAILS];   /* each rail's last acknowledgement of its part */
	uint64_t part[COLL_MAX_RAILS];    /* each rail's bytes of it */
	char *copy;              /* the bytes, where the sender keeps a copy: after p[cap] if the
	                          * message was copied when posted, else allocated by start() */
	rl_piece p[];
} rl_msg;

/* A control message (ACK, PROBE, PROBE_ACK, DOWN). */
typedef struct rl_ctl {
	rt_req creq;
	rl_hdr h;
	uint8_t body[RL_REJOIN_BYTES];   /* REJOIN: its record */
	struct rl_ctl *next;     /* free list / the link's posted list */
} rl_ctl;

enum { SL_FREE, SL_FILL, SL_FULL, SL_OUT, SL_REL };

typedef struct {
	int state;
	uint32_t seq, total, nslices;
	uint64_t have;
	char *buf;
	size_t cap;
} rl_slot;

/* One peer on one rail. */
typedef struct {
	int up;
	int64_t last_ack_ns;     /* last ACK or PROBE_ACK on it: our sends progress */
	int64_t probed_ns;       /* last PROBE sent on it by the failover check */
	int64_t idle_ns;         /* when its last outstanding piece left (0: none ever) */
	double drain;            /* bytes per ns its pieces are acknowledged at, averaged (0: not yet) */
	int64_t drain_ns;        /* its last piece's acknowledgement (drain_sample) */
	uint64_t dr_bytes;       /* drain_sample: bytes and busy time not yet in drain */
	int64_t dr_ns;
	int64_t drain_set_ns;    /* when drain last changed: older than RL_RETRY_NS, it is forgotten */
	int dr_n;                /* measurements in drain, up to RL_DRAIN_AVG */
	rl_piece *out, *out_tail;
	rl_ctl *ctl;             /* posted control messages */
	rt_req rq[RL_RWIN];      /* child receives, posted in ring order */
	int rhead;
	/* The DATA piece whose bytes are being taken from rq[rhead]: */
	int busy;
	char *rd_dst;            /* where they go (NULL: a duplicate, discarded) */
	size_t rd_left, rd_at;   /* bytes still to take; offset in the child's buffer (no stream) */
	int rd_slot;             /* its slot, -1: duplicate */
	uint32_t rd_seq;
	int rd_slice;
	int lat_n;
	int64_t lat_min[RL_PROBES];
	char why[200];           /* why it went down */
	uint32_t inc;            /* incarnation: links adopted on it so far (both ends count alike);
	                          * a DOWN names the one it drops */
	/* Rejoining through records (rails whose ops have rejoin_offer): */
	int64_t rj_next_ns;      /* the higher rank: when to offer next (0: not down) */
	uint32_t rj_id;          /* the attempt under way */
	int rj_wait;             /* our fresh link waits for the peer's next step */
	rl_hdr rj_h;             /* the REJOIN whose record is being read */
	uint8_t rj_buf[RL_REJOIN_BYTES];
} rl_link;

typedef struct {
	rl_msg *head, *tail;     /* messages in seq order: started ones first */
	uint32_t next_seq, credit;
	/* receiving */
	rl_slot slot[RL_WINDOW];
	uint32_t expect, freed, cum, highest, credit_sent;
	int ack_owed, ack_rail;
	int64_t ack_owed_ns;
	int64_t heard_ns;        /* its last ACK or PROBE_ACK on any rail */
	int64_t back_ns;         /* when it answered after a silence on every rail (heard) */
	rt_reqq xrq;             /* the executor's receives */
	int probes_answered;     /* connect: PROBEs of this peer answered */
	rl_link *link;           /* [nrails] */
} rl_peer;

typedef struct {
	double share[COLL_MAX_RAILS];
	double rate[COLL_MAX_RAILS];   /* bytes per ns, averaged; 0: not measured */
	uint64_t sb[COLL_MAX_RAILS];   /* samples since the last rebalance */
	int64_t sns[COLL_MAX_RAILS];
	uint64_t samples;        /* folds that measured it */
	int nsb;                 /* messages sampled since the last fold */
	double sl[COLL_MAX_RAILS], sll[COLL_MAX_RAILS];   /* log-imbalances since then (fold): sum, squares, */
	int nl[COLL_MAX_RAILS];                           /* count */
	int used;
	int settled_seed;        /* seeded from a class past its coarse folds: none of its own */
} rl_class;

typedef struct {
	rt_tp *tp;
	const rt_transport *ops;
	char name[64];
	double lat_ns;            /* one-way latency of a small message (probes) */
	uint64_t bytes, resent, failovers, rejoins;
} rl_rail;

/* An fd in children()'s epoll set. */
typedef struct {
	uint32_t ev;     /* the events it is registered for; 0: not in the set */
	uint32_t pass;   /* the last pass that wanted it */
	int at;          /* its index in pfd that pass */
} rl_epfd;

/* What the rejoin thread hands to the main thread. */
typedef struct rl_new {
	struct rl_new *next;
	int peer, rail, fd;
	uint8_t sess[16];   /* the handshake's session key, for adopt */
} rl_new;

typedef struct {
	rt_tp base;
	int rank, n, nrails;
	coll_rail_policy pol;
	rl_rail rail[COLL_MAX_RAILS];
	rl_peer *peer;
	rl_class cls[RL_NCLASS];
	size_t slice;
	uint64_t cold;            /* current cold threshold (bytes) */
	uint32_t bal_seq;         /* comm->seq at the last rebalance */
	rl_ctl *free_ctl;
	char *discard;
	int64_t spin_ns, next_check_ns;
	int fatal;
	int aborted;              /* rl_abort ran: close without flushing */
	int debug;                /* COLL_RAIL_DEBUG: count passes and time the gaps between them */
	uint64_t npass, nchecks;
	int64_t last_pass_ns, max_gap_ns;
	int connected;            /* every rail connected: close flushes */
	/* statistics */
	uint64_t failovers, rejoins;
	double last_detect_ms, last_reroute_ms, max_reroute_ms;
	int64_t reroute_from_ns;  /* silence start of the latest failover, until its first resent ack */
	/* rejoin thread */
	pthread_t thr;
	int thr_on, mu_on;
	int wake_fd;
	pthread_mutex_t mu;
	int stop;
	uint8_t *want;            /* [peer * nrails + rail]: dial it (we are the higher rank) */
	rl_new *news;
	volatile int have_news;
	/* children(): what the children wait on this pass (pfd), and the
	 * epoll set that mirrors it */
	struct pollfd *pfd;
	int pfd_cap;
	int ep;                   /* the epoll set; -1: to be made */
	int ep_stale;             /* a child's fd closed or changed (drop, adopt): make it afresh */
	rl_epfd *epfd;            /* [fd number] */
	int nepfd;
	int *ep_reg, nreg;        /* the fds in the set */
	uint32_t ep_pass;
	struct epoll_event *evs;  /* [pfd_cap] */
} rails_tp;

extern const rt_transport rails_transport;

/* --- helpers -------------------------------------------------------------- */

static int cls_of(uint64_t bytes)
{
	int c = 0;
	while (bytes > 1 && c < RL_NCLASS - 1)
		bytes >>= 1, c++;
	return c;
}

static rl_link *lk(rails_tp *t, int p, int r) { return &t->peer[p].link[r]; }

static int alive_rails(rails_tp *t, int p)
{
	int k = 0;
	for (int r = 0; r < t->nrails; r++)
		k += lk(t, p, r)->up;
	return k;
}

/* Is rail r's latency lower than rail q's by more than RL_LAT_TIE of it?
 * Rails of like latency tie, and the first listed wins: every rank
 * measures the latencies on its own, and if each took its own lowest
 * reading, ranks would disagree on rails a few microseconds apart, and
 * a rank would receive its cold messages on one rail and send on the
 * other, keeping both busy (and polled) for nothing. */
static int lower_latency(const rails_tp *t, int r, int q)
{
	return t->rail[r].lat_ns < t->rail[q].lat_ns * (1 - RL_LAT_TIE);
}

/* The alive rail to p of lowest latency, -1: none. */
static int fastest(rails_tp *t, int p)
{
	int best = -1;
	for (int r = 0; r < t->nrails; r++)
		if (lk(t, p, r)->up && (best < 0 || lower_latency(t, r, best)))
			best = r;
	return best;
}

/* Rail r's bandwidth: its rate in the largest class measured from
 * RL_RATE_BYTES up (bytes per ns); 0: none measured yet. */
static double rail_rate(rails_tp *t, int r)
{
	double best = 0;
	for (int c = 0; c < RL_NCLASS; c++)
		if (t->cls[c].rate[r] > 0 && t->cls[c].samples && (1ull << c) >= RL_RATE_BYTES)
			best = t->cls[c].rate[r];
	return best;
}

/* The alive rail to p of highest measured throughput (then lowest
 * latency), other than `not`; -1: none. */
static int survivor(rails_tp *t, int p, int not)
{
	int best = -1;
	for (int r = 0; r < t->nrails; r++) {
		if (r == not || !lk(t, p, r)->up)
			continue;
		if (best < 0 || rail_rate(t, r) > rail_rate(t, best) ||
		    (rail_rate(t, r) == rail_rate(t, best) && lower_latency(t, r, best)))
			best = r;
	}
	return best;
}

/* --- control messages ----------------------------------------------------- */

static int link_down(rails_tp *t, int p, int r, int tell, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int send_ctl_body(rails_tp *t, int p, int r, const rl_hdr *h, const uint8_t *body, size_t len);
static int send_ctl(rails_tp *t, int p, int r, const rl_hdr *h)
{
	return send_ctl_body(t, p, r, h, NULL, 0);
}

/* A control message, with len <= RL_REJOIN_BYTES bytes of body after it. */
static int send_ctl_body(rails_tp *t, int p, int r, const rl_hdr *h, const uint8_t *body, size_t len)
{
	if (r < 0 || !lk(t, p, r)->up)
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
	rl_link *L = lk(t, p, r);
	k->next = L->ctl;
	L->ctl = k;
	rt_tp *c = t->rail[r].tp;
	int rc = c->ops->post_send(c, &k->creq);
	if (rc) {
		L->ctl = k->next;
		k->next = t->free_ctl;
		t->free_ctl = k;
		return link_down(t, p, r, 1, "%s", t->base.comm->err);
	}
	return COLL_OK;
}

static int send_ack(rails_tp *t, int p, int r, uint32_t seq, int slice)
{
	rl_peer *pr = &t->peer[p];
	rl_hdr h = {0};
	h.type = RH_ACK;
	h.seq = seq;
	h.slice = slice < 0 ? (uint16_t)RL_NOSLICE : (uint16_t)slice;
	h.cum = pr->cum;
	h.freed = pr->freed;
	if (r < 0 || !lk(t, p, r)->up)
		r = fastest(t, p);
	pr->credit_sent = pr->freed + RL_WINDOW;
	pr->ack_owed = 0;
	return send_ctl(t, p, r, &h);
}

/* The receiver's side of credit: a sender that has started every message
 * we allowed may be waiting for more, so tell it as soon as there is. */
static int maybe_credit(rails_tp *t, int p)
{
	rl_peer *pr = &t->peer[p];
	if (pr->highest == pr->credit_sent && pr->freed + RL_WINDOW != pr->credit_sent)
		return send_ack(t, p, pr->ack_owed ? pr->ack_rail : -1, 0, -1);
	return COLL_OK;
}

/* --- sending -------------------------------------------------------------- */

/* Copy a send's iovecs into one buffer. */
static void gather(char *to, const rt_req *req)
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

static void link_push(rl_link *L, rl_piece *pc)
{
	pc->lnext = NULL;
	if (L->out_tail)
		L->out_tail->lnext = pc;
	else
		L->out = pc;
	L->out_tail = pc;
}

static int post_piece(rails_tp *t, int p, rl_msg *m, rl_piece *pc, int r)
{
	rl_link *L = lk(t, p, r);
	memset(&pc->creq, 0, sizeof pc->creq);
	pc->creq.peer = p;
	pc->h.rail = (uint16_t)r;
	pc->rail = r;
	pc->posted_ns = rt_now_ns();
	piece_iov(m, pc);
	link_push(L, pc);
	t->rail[r].bytes += pc->len;
	if (pc->resent)
		t->rail[r].resent += pc->len;
	rt_tp *c = t->rail[r].tp;
	int rc = c->ops->post_send(c, &pc->creq);
	if (rc)
		return link_down(t, p, r, 1, "%s", t->base.comm->err);
	return COLL_OK;
}

/* Bytes of a total-byte message for each alive rail to p. */
static void split(rails_tp *t, int p, rl_msg *m, uint64_t part[COLL_MAX_RAILS])
{
	memset(part, 0, sizeof(uint64_t) * COLL_MAX_RAILS);
	int cold_rail = fastest(t, p);
	if (m->total < t->cold || alive_rails(t, p) == 1) {
		part[cold_rail] = m->total;
		return;
	}
	rl_class *k = &t->cls[m->cls];
	double sum = 0;
	for (int r = 0; r < t->nrails; r++)
		if (lk(t, p, r)->up)
			sum += k->share[r];
	if (sum <= 0) {
		part[cold_rail] = m->total;
		return;
	}
	int big = -1;
	uint64_t given = 0;
	for (int r = 0; r < t->nrails; r++) {
		if (!lk(t, p, r)->up)
			continue;
		part[r] = (uint64_t)((double)m->total * k->share[r] / sum);
		if (big < 0 || k->share[r] > k->share[big])
			big = r;
	}
	for (int r = 0; r < t->nrails; r++) {
		if (r != big && part[r] < RL_MIN_PIECE)
			part[r] = 0;
		given += part[r];
	}
	part[big] += m->total - given;
	m->hot = 1;
}

static void fold(rails_tp *t, rl_class *k);
static void seed(rails_tp *t, rl_class *k);
static int first_fold_due(const rl_class *k);

/* Bytes of p's link on rail r posted and not yet acknowledged. */
static uint64_t unacked(rails_tp *t, int p, int r)
{
	uint64_t b = 0;
	for (rl_piece *pc = lk(t, p, r)->out; pc; pc = pc->lnext)
		if (!pc->acked)
			b += pc->len;
	return b;
}

/* A link's drain (bytes per ns), 0 when never measured or not for
 * RL_RETRY_NS: a link left out for its drain (pull()) would otherwise
 * keep the reading of its bad moment for good.  Such a reading is
 * common: a link's first measurement may be one piece, timed from its
 * posting to its acknowledgement, and that acknowledgement travels back
 * through the peer's shaper on the same rail, queued behind the peer's
 * own traffic (on 200 + 60 Mbit/s, one 64 KiB piece's took 40-50 ms: 1.3-1.6
 * MB/s for a 7.5 MB/s rail).  pull() then gives that link about a piece
 * per message, too few to be measured again, and the rank sends 90% of
 * every message on the fast rail, which the whole ring waits for: one bench
 * run in three at n = 4, 4 MiB, ran at 0.84 of the rails' summed capacity
 * instead of 0.96 (README, "Rails").  Forgotten, the link is unmeasured
 * and gets slices again, enough to be measured properly. */
static double drain_of(const rl_link *L, int64_t now)
{
	return now - L->drain_set_ns > RL_RETRY_NS ? 0 : L->drain;
}

/* Post piece pc of m on rail r, noting what a sample needs: the rail's
 * bytes of m, and whether the rail was idle.  A rail that sat idle
 * restarts its TCP connection from slow start
 * (tcp_slow_start_after_idle), and one never used yet starts there: a
 * message that wakes one would be a sample of TCP's ramp, not of the
 * rail.  In a sweep of sizes the second rail idles through every cold
 * size, so the first message of each new class would make it look slower
 * than it is. */
static int post_part(rails_tp *t, int p, rl_msg *m, rl_piece *pc, int r)
{
	rl_link *L = lk(t, p, r);
	pc->woke = !L->out && (!L->idle_ns || rt_now_ns() - L->idle_ns > RL_IDLE_NS);
	m->warmup |= pc->woke;
	m->part[r] += pc->len;
	pc->queued = 0;
	return post_piece(t, p, m, pc, r);
}

/* split=throughput, messages of RL_PULL_BYTES and up: hand p's queued
 * pieces, oldest message first, to the rails as they have room.  Each
 * piece goes to the link that would finish it first, judged by its
 * unacknowledged bytes over its drain (the rate its pieces are
 * acknowledged at, drain_sample()), and only while that link has less
 * than RL_PULL_NS of work unacknowledged: the earliest-completion-first
 * rule of multipath schedulers.  So a rail takes what it drains, the
 * rails finish a message together whatever their speeds or their
 * moment's luck, and a slower rail takes a piece only when it would still
 * finish it before the best could.  Until every alive link's drain is
 * known, each piece goes to the link with the fewest bytes
 * unacknowledged, up to RL_PULL_SLICES slices, so that a link not
 * measured gets pieces and is measured (a rail that came back after a
 * failover must be, or it would stay out).  The class's shares do not
 * stand in for the drains: they came from another size (a new class is
 * seeded) or from what pull() gave each rail, and estimates from them
 * spiral (below).
 *
 * A link more than `tolerance` times slower than the best, both by its
 * drain and by the class's shares (the bytes it carried lately), takes
 * nothing: the drain alone flaps, since a shaper's burst after each idle
 * moment makes the rail that sends most look faster still (200 + 60
 * Mbit/s read 22-36 and 5-10 MB/s), and the shares alone spiral (a rail
 * given less carries less).  Its drain is forgotten RL_RETRY_NS later
 * (drain_of()), the shares stand in again, and it is measured anew.
 *
 * Why not fixed shares, as split=equal does: with several messages in
 * flight every rail has a queue, and a split fixed when the message
 * starts leaves whichever rail had a bad moment (a TCP loss, a shaper's
 * burst spent) behind for the rest of the queue.  On two equal 200 Mbit/s
 * rails (n = 4, 64 MiB ring, 1 MiB messages) equal 50/50 splits finished
 * their two halves on average 2.1x apart.  Why the drain and not the
 * shares as the speed: ECF on shares learnt from what it gave each rail
 * feeds on itself (the fast rail's window fills first, the slow one gets
 * the overflow, carries less than it could, and its share falls).
 *
 * Why RL_PULL_NS is short (5 ms, with pieces of 32 KiB, start()): a
 * link that may hold more than a message's worth takes the whole
 * message at once, and pulling becomes a split fixed at the start by
 * that moment's drains, which is what pulling exists to avoid.  With 20
 * ms and pieces of a sixteenth, a 512 KiB message (a ring at n = 8, 4
 * MiB) was handed out whole as it started, and a 1 MiB one (the tcp
 * child's largest) had pieces of 64 KiB, 8.7 ms each of a 60 Mbit/s
 * rail.  A link that holds nothing takes a piece whatever its size, so
 * a rail never waits for work; the rest of a message waits for the
 * first acknowledgements, which is what keeps it with the rail that
 * drains it.  On 200 + 60 Mbit/s, ring, paired rounds against 20 ms
 * and pieces of a sixteenth: n = 8 4 MiB 1.03-1.05 of the summed
 * capacity against 0.97-1.01, 16 MiB 1.04-1.06 against 0.96-0.97, 64
 * MiB 1.01-1.02 against 0.96-0.98; n = 4 4 MiB 0.99-1.02 against 0.95;
 * two 200 Mbit/s rails at n = 8, 4 MiB 2.02-2.07x one rail against
 * 1.76-2.04x, 16 MiB 2.05-2.06x against 1.94-1.95x (1 MiB messages were
 * cut in 44 KiB pieces in those rounds; README "Rails" has the table).
 * 2.5 ms was too short (n = 8 4 MiB: 0.91-0.95): a link then idles for
 * each acknowledgement's round trip. */
static int pull(rails_tp *t, int p)
{
	uint64_t win = (uint64_t)RL_PULL_SLICES * t->slice;
	int64_t now = rt_now_ns();
	for (rl_msg *m = t->peer[p].head; m && m->started; m = m->next) {
		rl_class *k = &t->cls[m->cls];
		for (; m->next_pull < m->npieces; m->next_pull++) {
			rl_piece *pc = &m->p[m->next_pull];
			if (!pc->queued)
				continue;
			/* each alive link's drain and unacknowledged bytes; the best drain and share */
			int nc = 0, drained = 1;
			double d[COLL_MAX_RAILS], top = 0, top_share = 0;
			uint64_t b[COLL_MAX_RAILS];
			for (int r = 0; r < t->nrails; r++) {
				rl_link *L = lk(t, p, r);
				if (!L->up)
					continue;
				nc++;
				d[r] = drain_of(L, now);
				b[r] = unacked(t, p, r);
				drained &= d[r] > 0;
				top = d[r] > top ? d[r] : top;
				top_share = k->share[r] > top_share ? k->share[r] : top_share;
			}
			if (!nc)
				return COLL_OK;   /* every rail to p is down: need() says so */
			int best = -1;
			double best_t = 0;
			for (int r = 0; r < t->nrails; r++) {
				if (!lk(t, p, r)->up)
					continue;
				if (drained && t->pol.tolerance > 0 && d[r] * t->pol.tolerance < top &&
				    k->share[r] * t->pol.tolerance < top_share)
					continue;   /* too slow, by its drain now and by what it carried */
				double est = (double)(b[r] + pc->len) / (drained ? d[r] : 1);
				if (best < 0 || est < best_t)
					best = r, best_t = est;
			}
			if (b[best] && (drained ? (double)b[best] > RL_PULL_NS * d[best] : b[best] + pc->len > win))
				return COLL_OK;   /* the link that would finish it first is full: later */
			if (t->debug > 3 && t->rank == 0) {   /* every piece pulled: where, and what decided it */
				fprintf(stderr, "pull seq %u piece %d to %d on rail %d:", m->seq, m->next_pull, p, best);
				for (int r = 0; r < t->nrails; r++)
					if (lk(t, p, r)->up)
						fprintf(stderr, " rail %d drain %.1f MB/s unacked %llu", r, d[r] * 1e3,
						        (unsigned long long)b[r]);
				fputc('\n', stderr);
			}
			int rc = post_part(t, p, m, pc, best);
			if (rc)
				return rc;
		}
	}
	return COLL_OK;
}

/* Cut m into pieces: each rail's part[r] into pieces of at most psz bytes
 * in rail order, posted on that rail, or (queued) the whole message into
 * pieces that pull() hands out. */
static void cut(rl_msg *m, const uint64_t part[COLL_MAX_RAILS], int nrails, uint64_t psz, int queued)
{
	uint64_t off = 0;
	m->npieces = 0;
	for (int r = 0; r < nrails; r++) {
		for (uint64_t left = part[r]; left;) {
			uint64_t len = left < psz ? left : psz;
			if (left - len > 0 && left - len < 64)
				len = left - 64;   /* no piece under 64 bytes: piece 0 must hold the header */
			rl_piece *pc = &m->p[m->npieces];
			memset(pc, 0, sizeof *pc);
			pc->m = m;
			pc->rail = queued ? -1 : r;
			pc->queued = queued;
			pc->off = (uint32_t)off;
			pc->len = (uint32_t)len;
			m->npieces++;
			off += len;
			left -= len;
		}
	}
	for (int i = 0; i < m->npieces; i++) {
		rl_piece *pc = &m->p[i];
		pc->h.type = RH_DATA;
		pc->h.magic = RL_MAGIC;
		pc->h.seq = m->seq;
		pc->h.slice = (uint16_t)i;
		pc->h.nslices = (uint16_t)m->npieces;
		pc->h.off = pc->off;
		pc->h.total = m->total;
		pc->h.len = pc->len;
		if (i == 0 && !m->copy && m->req->iovcnt == 2)
			memcpy(&pc->xh, m->req->iov[0].iov_base, sizeof pc->xh);
	}
	m->started = 1;
}

/* Start message m to p: cut it into pieces and post them, or under
 * split=throughput queue them for pull(). */
static int start(rails_tp *t, int p, rl_msg *m)
{
	uint64_t part[COLL_MAX_RAILS];
	m->cls = cls_of(m->total);
	rl_class *k = &t->cls[m->cls];
	if (!k->used) {
		k->used = 1;
		seed(t, k);
	} else if (first_fold_due(k)) {
		fold(t, k);
	}
	split(t, p, m, part);
	m->start_ns = rt_now_ns();
	m->pulled = m->hot && t->pol.split == COLL_SPLIT_THROUGHPUT && m->total >= RL_PULL_BYTES;
	/* A copy lets the executor's send complete once the child has written
	 * every piece (copied_out) instead of a round trip later, when the
	 * last is acknowledged: on a ring each step's send waited for that
	 * acknowledgement, a receiver's wake-up included (n = 4, 4 MiB on 200
	 * + 60 Mbit/s rails, 1 MiB messages: 0.95-0.98 of the sum against
	 * 0.94-0.97, ten paired rounds).  Only where nothing is timed from
	 * the split on the assumption that every rail starts the message
	 * idle: pull() hands pieces out by what each link still has
	 * unacknowledged, and a message on one rail is not a sample.  A
	 * message split by shares is still completed by its
	 * acknowledgements, so that the next one starts on rails that are
	 * done: letting it start early (n = 8, 4 MiB, 512 KiB messages split
	 * by shares) put the previous message's tail into its rails' times,
	 * and those times steer the shares: 0.87-0.90 of the sum against
	 * 0.91-0.93.  And only for the oldest message to p: behind others in
	 * flight the round trip is hidden anyway (the executor waits for the
	 * last of a step's sends), and the copy costs by the byte.  A ring at
	 * n = 8, 64 MiB, sends a step as several 1 MiB messages; copying
	 * every one made it 6-7% slower (equal rails, 8 ranks on 2 cores),
	 * copying the oldest 1-3% faster.  Up to RL_COPY_MAX, for the same
	 * reason. */
	if (!m->copy && (m->pulled || !m->hot) && m->total <= RL_COPY_MAX && t->peer[p].head == m) {
		if (!(m->copy = malloc(m->total)))
			return rt_err(t->base.comm, COLL_ERR_NOMEM, "out of memory");
		gather(m->copy, m->req);
	}
	if (m->pulled) {
		/* Small pieces, so that the rails' last pieces of a message end
		 * close together (on 200 + 60 Mbit/s a 32 KiB piece is 4.4 ms
		 * of the slow rail), and a link can be given less than
		 * RL_PULL_NS of work (pull()).  At most RL_PULL_PIECES of them,
		 * or pieces of a slice (no piece is larger, so the child and
		 * the receiver see nothing new); rl_post_send() makes room. */
		uint64_t psz = (m->total + RL_PULL_PIECES - 1) / RL_PULL_PIECES;
		psz = psz < RL_PULL_PIECE ? RL_PULL_PIECE : psz;
		psz = psz > t->slice ? t->slice : psz;
		uint64_t all[COLL_MAX_RAILS] = {m->total};
		cut(m, all, 1, psz, 1);
		return pull(t, p);
	}
	cut(m, part, t->nrails, t->slice, 0);
	m->next_pull = m->npieces;
	for (int i = 0; i < m->npieces; i++) {
		int r = m->p[i].rail;
		if (!lk(t, p, r)->up && (r = survivor(t, p, -1)) < 0)
			break;   /* every rail to p died while posting: reported by need() */
		int rc = post_part(t, p, m, &m->p[i], r);
		if (rc)
			return rc;
	}
	return COLL_OK;
}

static int rebalance(rails_tp *t);

/* Start the messages to p that credit allows. */
static int pump(rails_tp *t, int p)
{
	rl_peer *pr = &t->peer[p];
	for (rl_msg *m = pr->head; m; m = m->next) {
		if (m->started)
			continue;
		if ((int32_t)(m->seq - pr->credit) >= 0 || alive_rails(t, p) == 0)
			break;
		if ((int32_t)(t->base.comm->seq - t->bal_seq) >= t->pol.rebalance_calls)
			rebalance(t);
		int rc = start(t, p, m);
		if (rc)
			return rc;
	}
	return pull(t, p);
}

static void msg_free(rl_msg *m)
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
	msg_free(m);
}

/* A split message all of whose pieces were acknowledged on the rail that
 * carried them is a sample of each rail that carried some: its bytes, the
 * time from the split to its part's last acknowledgement, and that
 * time's log-imbalance against the other rails' (see fold()).  (Timing
 * each piece from when its rail could start on it counted a shaper's
 * burst and not the latency: on a 200 + 60 Mbit/s testbed it measured the
 * fast rail at 31-34 MB/s, above its 25 MB/s.) */
static void sample(rails_tp *t, const rl_msg *m)
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

/* Pieces that are acknowledged and that the child no longer holds leave
 * their link; a message whose pieces all did is complete. */
static void reap(rails_tp *t, int p, int r)
{
	rl_link *L = lk(t, p, r);
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
				sample(t, m);   /* (not if the peer was away meanwhile: see heard()) */
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
static int copied_out(rails_tp *t, int p)
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
	lk(t, p, r)->last_ack_ns = now;
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
 * average runs 1.92-1.96x (README, "Rails").  A drain forgotten
 * (drain_of()) starts a new mean, so a rail that comes back is measured
 * afresh, not averaged with what it did before. */
static void drain_sample(rails_tp *t, int p, int r, const rl_piece *pc, int64_t now)
{
	rl_link *L = lk(t, p, r);
	if (pc->acked || pc->rail != r || pc->resent || !pc->m->pulled)
		return;
	int64_t from = L->drain_ns > pc->posted_ns ? L->drain_ns : pc->posted_ns;
	L->drain_ns = now;
	if (pc->woke || pc->posted_ns < t->peer[p].back_ns)
		return;   /* TCP's ramp after idle, or the peer was away (heard()): not the link */
	L->dr_bytes += pc->len;
	L->dr_ns += now > from ? now - from : 0;
	double old = drain_of(L, now);
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
			drain_sample(t, p, r, &m->p[h->slice], now);
			piece_acked(t, r, &m->p[h->slice], now);
		}
	}
	if ((int32_t)(h->freed + RL_WINDOW - pr->credit) > 0)
		pr->credit = h->freed + RL_WINDOW;
	for (int k = 0; k < t->nrails; k++)
		reap(t, p, k);
}

/* --- failover ------------------------------------------------------------- */

/* Forget link (p, r): the child drops it, its pieces go to a survivor,
 * and (tell) the peer hears of it on a survivor.  Returns an error only
 * when p is needed and no rail to it is left. */
static int need(rails_tp *t, int p);

static int link_down(rails_tp *t, int p, int r, int tell, const char *fmt, ...)
{
	rl_link *L = lk(t, p, r);
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
	int s = survivor(t, p, r);
	if (tell && s >= 0) {
		rl_hdr h = {0};
		h.type = RH_DOWN;
		h.seq = (uint32_t)r;
		h.cum = L->inc;
		int rc = send_ctl(t, p, s, &h);
		if (rc)
			return rc;
		s = survivor(t, p, r);
	}
	for (rl_piece *pc = list, *nx; pc; pc = nx) {
		nx = pc->lnext;
		pc->creq.done = 1;   /* the child holds it no longer */
		if (pc->acked) {
			link_push(L, pc);   /* finished: reap it below */
			continue;
		}
		if (s < 0) {
			pc->rail = -1;   /* nowhere to go: the call fails (need) */
			continue;
		}
		pc->resent = 1;
		int rc = post_piece(t, p, pc->m, pc, s);
		if (rc)
			return rc;
		s = survivor(t, p, r);
	}
	reap(t, p, r);
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
	return need(t, p);
}

/* Is p needed (something to or from it outstanding) with no rail left? */
static int need(rails_tp *t, int p)
{
	rl_peer *pr = &t->peer[p];
	if (alive_rails(t, p))
		return COLL_OK;
	if (!pr->head && !pr->xrq.head)
		return COLL_OK;   /* it may have left after its last call: an error once needed */
	char buf[sizeof t->base.comm->err - 64];
	size_t at = 0;
	for (int r = 0; r < t->nrails && at < sizeof buf; r++)
		at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s: %s", r ? "; " : "", t->rail[r].name,
		                       lk(t, p, r)->why);
	t->fatal = COLL_ERR_PEER;
	return rt_err(t->base.comm, COLL_ERR_PEER, "rails: every rail to rank %d is down (%s)", p, buf);
}

/* The failover check: silent links, while another rail to the same peer
 * answers, are declared down. */
static int check_links(rails_tp *t, int64_t now)
{
	int64_t detect = (int64_t)t->pol.failover_ms * 500000, probe = detect / 2;
	for (int p = 0; p < t->n; p++) {
		if (p == t->rank)
			continue;
		for (int r = 0; r < t->nrails; r++) {
			rl_link *L = lk(t, p, r);
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
			double rate = rail_rate(t, r);
			int64_t need_ns = rate > 0 ? (int64_t)(2.0 * (double)t->slice / rate) : 0;
			int64_t lim = detect > need_ns ? detect : need_ns;
			if (now - from < probe)
				continue;
			int evidence = 0;
			for (int s = 0; s < t->nrails; s++) {
				rl_link *S = lk(t, p, s);
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
					int rc = send_ctl(t, p, s, &h);
					if (rc)
						return rc;
				}
			}
			if (now - from >= lim && evidence) {
				int rc = link_down(t, p, r, 1, "no acknowledgement for %.0f ms while %s answered",
				                   (double)(now - from) / 1e6, t->rail[evidence - 1].name);
				if (rc)
					return rc;
			}
		}
	}
	return COLL_OK;
}

/* --- receiving ------------------------------------------------------------ */

static int deliver(rails_tp *t, int p)
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
		deliver(t, p);
	}
	if (s->nslices > 1 || s->total > RL_COPY_BYTES)   /* timed, or its sender waits for it */
		return send_ack(t, p, r, seq, slice);
	/* A small message behind one still arriving (on another rail) is not
	 * covered by `cum` until that one is whole, which at a slow rail's
	 * pace can be longer than the failover check gives its rail. */
	if ((int32_t)(seq - pr->cum) >= 0)
		return send_ack(t, p, r, seq, slice);
	if (!pr->ack_owed) {
		pr->ack_owed = 1;
		pr->ack_owed_ns = rt_now_ns();
	}
	pr->ack_rail = r;
	return maybe_credit(t, p);
}

/* A DATA header arrived on link (p, r): where do its len bytes go? */
static int data_begin(rails_tp *t, int p, int r, const rl_hdr *h)
{
	rl_peer *pr = &t->peer[p];
	rl_link *L = lk(t, p, r);
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
	rl_link *L = lk(t, p, r);
	rt_tp *c = t->rail[r].tp;
	rt_req *q = &L->rq[L->rhead];
	c->ops->release(c, q);
	memset(q, 0, sizeof *q);
	q->peer = p;
	L->rhead = (L->rhead + 1) % RL_RWIN;
	if (c->ops->post_recv(c, q))
		return link_down(t, p, r, 1, "%s", t->base.comm->err);
	return COLL_OK;
}

static int on_rejoin(rails_tp *t, int p, int r, const rl_hdr *h, const uint8_t *body);

/* Take what arrived on link (p, r), in order. */
static int link_recv(rails_tp *t, int p, int r, int *moved)
{
	rl_link *L = lk(t, p, r);
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
				rc = pump(t, p);   /* it may bring credit for messages waiting */
				break;
			case RH_PROBE: {
				rl_hdr a = {0};
				a.type = RH_PROBE_ACK;
				a.stamp = h->stamp;
				t->peer[p].probes_answered++;
				rc = send_ctl(t, p, r, &a);
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
				    (int32_t)(h->cum - lk(t, p, (int)h->seq)->inc) >= 0)
					rc = link_down(t, p, (int)h->seq, 0, "rank %d dropped it", p);
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
					return link_down(t, p, r, 1, "%s", t->base.comm->err);
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
			rc = on_rejoin(t, p, r, &L->rj_h, L->rj_buf);
		else
			rc = L->rd_slot >= 0 ? piece_in(t, p, r, L->rd_slot, L->rd_slice)
			                     : send_ack(t, p, r, L->rd_seq, L->rd_slice);   /* a duplicate: say again we have it */
		if (rc)
			return rc;
		if (L->up && (rc = recv_again(t, p, r)))
			return rc;
	}
	return COLL_OK;
}

/* Control sends the child finished go back to the pool. */
static void ctl_reap(rails_tp *t, rl_link *L)
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

/* --- the balancer --------------------------------------------------------- */

/* Shares of one class.  equal and latency: from the policy and the
 * latencies.  throughput: the balancer's own (fold), started equal
 * (Nezha's uniform start).  The tolerance is pull()'s to apply, on
 * messages of RL_PULL_BYTES and up (smaller ones' times are mostly
 * latency, and tell little of a rail's speed), by the links' drains and
 * the shares together: judged here, on the shares alone, it excluded a
 * rail for the rest of the job on one bad fold. */
static void shares(rails_tp *t, rl_class *k)
{
	double w[COLL_MAX_RAILS] = {0}, sum = 0;
	for (int r = 0; r < t->nrails; r++) {
		switch (t->pol.split) {
		case COLL_SPLIT_EQUAL:
			w[r] = 1;
			break;
		case COLL_SPLIT_LATENCY:
			w[r] = t->rail[r].lat_ns > 0 ? 1 / t->rail[r].lat_ns : 1;
			break;
		default:
			w[r] = k->share[r];
			break;
		}
		sum += w[r];
	}
	for (int r = 0; r < t->nrails; r++)
		k->share[r] = sum > 0 ? w[r] / sum : 1.0 / t->nrails;
}

/* A class's samples since its last fold go into its rates (an average
 * with what it had: for the failover check, the cold threshold and the
 * survivor's choice) and, under split=throughput, move its shares.
 *
 * Classes of RL_PULL_BYTES and up go out by pull(), which gives each rail
 * what it drains: their shares move halfway toward the fractions of the
 * bytes each rail carried, the rails' relative speeds at that size: the
 * data-length table reports them, pull() judges the tolerance by them
 * with the drains, and smaller classes are seeded from them.
 *
 * Smaller classes are split by their shares, and there the balancer is a
 * controller on finish times.  Each sampled message gives every rail's
 * finish time T_r and its log-imbalance d_r = log T_r - mean over rails
 * of log T.  A fold scales each share by exp(-RL_GAIN * mean d_r): with
 * T_r proportional to share_r / speed_r a gain of 1 would land on equal
 * finish times in one step, but the first messages after a change still
 * carry the queue the old shares left, and it overshot; halfway settles
 * in two folds.  That is for a class's first RL_COARSE_FOLDS folds,
 * which bring it from its seed near the balance, unless its seed was a
 * class already past them (settled_seed: a sweep's next size starts
 * near the balance, and halfway moves on 8 messages only add noise
 * there).  Near the balance, finish times are steeper than share /
 * speed: a rail a little over its share lags more on every ring step,
 * since each step's part queues behind the last one's (on 200 + 60
 * Mbit/s, n = 8, 512 KiB messages, a share 2 points past the balance
 * read that rail 1.3-1.5x late), and halfway steps swung the shares
 * 0.75 <-> 0.79 around 0.77 for good, the slow rail's part 9% too large
 * every other fold.  Later folds move by RL_GAIN_LATE; the early folds
 * after the coarse ones (every RL_FIRST_FOLD messages, up to
 * RL_EARLY_FOLDS) let a rank that the coarse ones left short of the
 * balance get there within its first few calls.  It moves only when
 * some mean d_r is beyond twice its
 * standard error and 3%, so that the scatter of 8 ranks on 2 cores is
 * left alone instead of followed.  (That controller ran every class
 * before pull(): from 1 MiB up, with several messages queued, the finish
 * times were mostly queue, and two equal rails ran 1.74-1.79x the single
 * rail where `equal` ran 1.77-2.02x.) */
static void fold(rails_tp *t, rl_class *k)
{
	int move = 0, pulled = (1ull << (k - t->cls)) >= RL_PULL_BYTES;
	double f[COLL_MAX_RAILS];
	uint64_t bytes = 0;
	for (int r = 0; r < t->nrails; r++) {
		bytes += k->sb[r];
		f[r] = 1;
		if (k->nl[r] < 2)
			continue;
		double n = k->nl[r], mean = k->sl[r] / n, var = (k->sll[r] - n * mean * mean) / (n - 1);
		double se = sqrt((var > 0 ? var : 0) / n);
		if (fabs(mean) > 2 * se && fabs(mean) > RL_MOVE_MIN)
			move = 1;
		double gain = k->samples < RL_COARSE_FOLDS && !k->settled_seed ? RL_GAIN : RL_GAIN_LATE;
		f[r] = exp(-gain * fmax(-RL_MOVE_MAX, fmin(RL_MOVE_MAX, mean)));
	}
	for (int r = 0; r < t->nrails && t->pol.split == COLL_SPLIT_THROUGHPUT; r++) {
		if (pulled && bytes)
			k->share[r] = 0.5 * k->share[r] + 0.5 * (double)k->sb[r] / (double)bytes;
		else if (!pulled && move)
			k->share[r] *= f[r];
	}
	if (t->debug > 1 && t->rank == 0 && k->nsb)
		fprintf(stderr, "fold cls %d samples %d %s share %.3f,%.3f\n", (int)(k - t->cls), k->nsb,
		        pulled ? "pulled" : move ? "moved" : "kept", k->share[0], t->nrails > 1 ? k->share[1] : 0.0);
	memset(k->sl, 0, sizeof k->sl);
	memset(k->sll, 0, sizeof k->sll);
	memset(k->nl, 0, sizeof k->nl);
	int measured = 0;
	for (int r = 0; r < t->nrails; r++) {
		if (k->sns[r] > 0) {
			double s = (double)k->sb[r] / (double)k->sns[r];
			k->rate[r] = k->rate[r] > 0 ? 0.5 * k->rate[r] + 0.5 * s : s;
			measured = 1;
		}
		k->sb[r] = 0, k->sns[r] = 0;
	}
	k->nsb = 0;
	k->samples += (uint64_t)measured;
	shares(t, k);
}

/* A class not measured yet starts from the shares and rates of the
 * nearest class that was (the larger on a tie), not from equal shares: on
 * unequal rails equal shares make the slow rail the bottleneck (a sweep
 * of sizes would run every size's first calls at a fraction of what it
 * could). */
static void seed(rails_tp *t, rl_class *k)
{
	int c = (int)(k - t->cls), best = -1;
	for (int d = 1; d < RL_NCLASS && best < 0; d++) {
		if (c + d < RL_NCLASS && t->cls[c + d].samples)
			best = c + d;
		else if (c - d >= 0 && t->cls[c - d].samples)
			best = c - d;
	}
	if (best >= 0) {
		memcpy(k->rate, t->cls[best].rate, sizeof k->rate);
		memcpy(k->share, t->cls[best].share, sizeof k->share);
	}
	k->settled_seed = best >= 0 && t->cls[best].samples >= RL_COARSE_FOLDS;
	shares(t, k);
}

/* A young class (fewer than RL_EARLY_FOLDS folds) is folded every
 * RL_FIRST_FOLD sampled messages, not only at rebalances, which may be
 * `rebalance` calls away: a sweep of sizes gives each only a few calls,
 * and from a poor start the shares take a few folds to settle. */
static int first_fold_due(const rl_class *k)
{
	return k->samples < RL_EARLY_FOLDS && k->nsb >= RL_FIRST_FOLD;
}

/* Fold every class's samples since the last rebalance into its rates,
 * and recompute shares and the auto cold threshold. */
static int rebalance(rails_tp *t)
{
	t->bal_seq = t->base.comm->seq;
	for (int c = 0; c < RL_NCLASS; c++)
		fold(t, &t->cls[c]);
	double beta[COLL_MAX_RAILS] = {0};
	for (int r = 0; r < t->nrails; r++)
		beta[r] = rail_rate(t, r);   /* the largest class measured: the closest to bandwidth */
	for (int c = 0; c < RL_NCLASS; c++)
		if (!t->cls[c].samples)
			seed(t, &t->cls[c]);
	if (t->pol.cold_bytes != COLL_COLD_AUTO) {
		t->cold = t->pol.cold_bytes == COLL_COLD_ALWAYS ? UINT64_MAX : (uint64_t)t->pol.cold_bytes;
		return COLL_OK;
	}
	/* Latency equivalence (see the top of the file). */
	double bmax = 0, bsum = 0, amax = 0;
	for (int r = 0; r < t->nrails; r++)
		if (beta[r] > bmax)
			bmax = beta[r];
	for (int r = 0; r < t->nrails; r++) {
		if (beta[r] <= 0 ||
		    (t->pol.split != COLL_SPLIT_EQUAL && t->pol.tolerance > 0 && bmax / beta[r] > t->pol.tolerance))
			continue;
		bsum += beta[r];
		if (t->rail[r].lat_ns > amax)
			amax = t->rail[r].lat_ns;
	}
	/* Nothing measured yet, or one rail within the tolerance (splits then
	 * give the others nothing where it matters): the default threshold.
	 * Never `always`: smaller classes must still be split, and measured,
	 * for a rail to come back. */
	if (bmax <= 0 || bsum <= bmax) {
		t->cold = RL_COLD_DEFAULT;
		return COLL_OK;
	}
	double s = amax / (1 / bmax - 1 / bsum);
	t->cold = s < RL_MIN_PIECE ? RL_MIN_PIECE : s > (double)(1ull << 40) ? (1ull << 40) : (uint64_t)s;
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

static void *rejoin_main(void *arg)
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
	rl_link *L = lk(t, p, r);
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
			return link_down(t, p, r, 0, "%s", t->base.comm->err);
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
	int s = survivor(t, p, r);
	if (s < 0)
		return COLL_OK;   /* nothing to carry it: need() reports the peer */
	rl_hdr h = {0};
	h.type = RH_REJOIN;
	h.seq = (uint32_t)r;
	h.slice = (uint16_t)step;
	h.cum = id;
	return send_ctl_body(t, p, s, &h, rec, len);
}

static void rejoin_failed(rails_tp *t, rl_link *L, const char *keep)
{
	snprintf(L->why, sizeof L->why, "rejoining: %.180s", t->base.comm->err);
	snprintf(t->base.comm->err, sizeof t->base.comm->err, "%s", keep);
	L->rj_wait = 0;
}

static int on_rejoin(rails_tp *t, int p, int r, const rl_hdr *h, const uint8_t *body)
{
	coll_comm *c = t->base.comm;
	int rr = (int)h->seq;
	if (h->seq >= (uint32_t)t->nrails || rr == r || !t->rail[rr].ops->rail->rejoin_offer ||
	    !t->rail[rr].ops->rail->rejoin_accept || h->slice < 1 || h->slice > 3 || (h->slice == 2) != (p < t->rank))
		return rt_err(c, COLL_ERR_PROTOCOL, "rails: bad rejoin message from rank %d on %s", p, t->rail[r].name);
	const rt_rail_ops *ro = t->rail[rr].ops->rail;
	rt_tp *ct = t->rail[rr].tp;
	rl_link *L = lk(t, p, rr);
	char keep[sizeof c->err];
	snprintf(keep, sizeof keep, "%s", c->err);
	int rc;
	switch (h->slice) {
	case 1: {
		if (L->up && (rc = link_down(t, p, rr, 0, "rank %d rejoins it", p)))
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
static int rejoin_offers(rails_tp *t, int64_t now)
{
	for (int p = 0; p < t->rank; p++) {
		for (int r = 0; r < t->nrails; r++) {
			rl_link *L = lk(t, p, r);
			const rt_rail_ops *ro = t->rail[r].ops->rail;
			if (L->up || !L->rj_next_ns || now < L->rj_next_ns || !ro->rejoin_offer)
				continue;
			L->rj_next_ns = now + (int64_t)RL_REJOIN_MS * 1000000;
			if (survivor(t, p, r) < 0)
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

static int adopt_news(rails_tp *t)
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
		rl_link *L = lk(t, p, r);
		if (L->up)
			rc = link_down(t, p, r, 0, "rank %d reconnected it", p);
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

/* --- progress ------------------------------------------------------------- */

/* A child's error: which link, and is it only that link? */
static int child_error(rails_tp *t, int r, int rc)
{
	rt_tp *c = t->rail[r].tp;
	if (rc == COLL_ERR_ABORTED || rc == COLL_ERR_NOMEM || c->err_peer < 0 || c->err_peer >= t->n)
		return rc;   /* a peer aborted, or not one link's fault: the whole call */
	int p = c->err_peer;
	c->err_peer = -1;
	/* What arrived before the error is the peer's last word, often the
	 * acknowledgement it sent just before it closed: take it first, or a
	 * clean close reads as a peer gone with our messages. */
	int moved = 0;
	char why[sizeof t->base.comm->err];
	snprintf(why, sizeof why, "%s", t->base.comm->err);
	if (lk(t, p, r)->up && (rc = link_recv(t, p, r, &moved)))
		return rc;
	return link_down(t, p, r, 1, "%s", why);
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
	if (t->have_news && (rc = adopt_news(t)))
		return rc;
	if ((rc = children(t, wait_ms)))
		return rc;
	int64_t now = rt_now_ns();
	for (int p = 0; p < t->n; p++) {
		if (p == t->rank)
			continue;
		for (int r = 0; r < t->nrails; r++) {
			rl_link *L = lk(t, p, r);
			if (!L->up)
				continue;
			if ((rc = link_recv(t, p, r, moved)))
				return rc;
			if (L->ctl)
				ctl_reap(t, L);
			if (L->out) {
				int before = t->peer[p].head != NULL;
				reap(t, p, r);
				*moved |= before && !t->peer[p].head;
			}
		}
		*moved |= copied_out(t, p);
	}
	if (now < t->next_check_ns)
		return COLL_OK;
	t->next_check_ns = now + 2000000;
	t->nchecks++;
	for (int p = 0; p < t->n; p++) {
		rl_peer *pr = &t->peer[p];
		if (pr->ack_owed && now - pr->ack_owed_ns >= RL_ACK_DELAY_NS && (rc = send_ack(t, p, pr->ack_rail, 0, -1)))
			return rc;
		if ((rc = pump(t, p)) || (rc = need(t, p)))
			return rc;
	}
	if ((rc = rejoin_offers(t, now)))
		return rc;
	return check_links(t, now);
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
		gather(m->copy, req);
	}
	if (pr->tail)
		pr->tail->next = m;
	else
		pr->head = m;
	pr->tail = m;
	int rc = pump(t, p);
	if (!rc)
		copied_out(t, p);
	return rc ? rc : need(t, p);
}

static int rl_post_recv(rt_tp *tp, rt_req *req)
{
	rails_tp *t = (rails_tp *)tp;
	if (req->peer < 0 || req->peer >= t->n || req->peer == t->rank)
		return rt_err(tp->comm, COLL_ERR_INVALID, "rails: bad receive from rank %d", req->peer);
	req->done = 0;
	rt_reqq_push(&t->peer[req->peer].xrq, req);
	deliver(t, req->peer);
	return need(t, req->peer);
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
	maybe_credit(t, req->peer);   /* an error here shows at the next progress */
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
			rl_link *L = lk(t, p, r);
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
		rl_link *L = lk(t, p, r);
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
			if (p == t->rank || !alive_rails(t, p))
				continue;
			if (pr->ack_owed && send_ack(t, p, pr->ack_rail, 0, -1))
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
			msg_free(m);
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

/* "64KiB", "1M", "4096": bytes, -1 when not a size. */
static int64_t parse_size(const char *s, size_t len)
{
	char buf[32];
	if (len == 0 || len >= sizeof buf)
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	char *end;
	double v = strtod(buf, &end);
	if (end == buf || v < 0)
		return -1;
	static const struct { const char *suf; double mul; } units[] = {
		{"", 1}, {"B", 1}, {"K", 1024}, {"KiB", 1024}, {"KB", 1e3}, {"M", 1 << 20}, {"MiB", 1 << 20},
		{"MB", 1e6}, {"G", 1 << 30}, {"GiB", 1 << 30}, {"GB", 1e9},
	};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(end, units[i].suf) == 0)
			return v * units[i].mul > 9e18 ? -1 : (int64_t)(v * units[i].mul);
	return -1;
}

int rt_policy_parse(const char *s, coll_rail_policy *pol, char *why, size_t whylen)
{
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
		if (kl == 4 && strncmp(s, "cold", 4) == 0) {
			if (strcmp(val, "auto") == 0)
				pol->cold_bytes = COLL_COLD_AUTO;
			else if (strcmp(val, "always") == 0)
				pol->cold_bytes = COLL_COLD_ALWAYS;
			else if ((pol->cold_bytes = parse_size(v, vl)) < 0)
				goto bad;
		} else if (kl == 5 && strncmp(s, "split", 5) == 0) {
			if (strcmp(val, "throughput") == 0)
				pol->split = COLL_SPLIT_THROUGHPUT;
			else if (strcmp(val, "latency") == 0)
				pol->split = COLL_SPLIT_LATENCY;
			else if (strcmp(val, "equal") == 0)
				pol->split = COLL_SPLIT_EQUAL;
			else
				goto bad;
		} else if (kl == 9 && strncmp(s, "rebalance", 9) == 0) {
			long k = strtol(val, &end, 10);
			if (*end || k < 1 || k > 1000000)
				goto bad;
			pol->rebalance_calls = (int32_t)k;
		} else if (kl == 9 && strncmp(s, "tolerance", 9) == 0) {
			double x = strtod(val, &end);
			if (*end || !(x == 0 || x >= 1))
				goto bad;
			pol->tolerance = x;
		} else if (kl == 8 && strncmp(s, "failover", 8) == 0) {
			long ms = strtol(val, &end, 10);
			if ((*end && strcmp(end, "ms") != 0) || ms < 10 || ms > 600000)
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
				if ((rc = send_ctl(t, p, r, &h)))
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
					if (lk(t, p, r)->lat_n <= k || (k == RL_PROBES - 1 && lk(t, p, r)->ctl))
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
			rl_link *L = lk(t, p, r);
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
		shares(t, &t->cls[k]);
	if (t->n > 1 && (rc = measure(t)))
		return rc;
	if (t->pol.split == COLL_SPLIT_LATENCY)
		for (int k = 0; k < RL_NCLASS; k++)
			shares(t, &t->cls[k]);
	t->bal_seq = c->seq;
	if ((t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return rt_err(c, COLL_ERR_SYSTEM, "eventfd: %s", strerror(errno));
	if (t->nrails > 1 && t->n > 1) {
		if (pthread_create(&t->thr, NULL, rejoin_main, t) != 0)
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
			o->peers_down += p != t->rank && !lk(t, p, r)->up;
		o->bytes = R->bytes;
		o->resent_bytes = R->resent;
		o->share = all ? (double)R->bytes / (double)all : 0;
		o->latency_us = R->lat_ns / 1e3;
		o->mbytes_s = rail_rate(t, r) * 1e3;
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
			if (lower_latency(t, r, best))
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
