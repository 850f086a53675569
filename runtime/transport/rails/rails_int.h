/*
 * rails_int.h - what the rooms of the rails transport share: its limits
 * and defaults, the child header rl_hdr, the state of a message, a piece,
 * a link, a peer and a size class, the transport's own state (rails_tp),
 * the small helpers every room uses (inline), and the functions one room
 * calls in another, grouped by the file that defines them.  rails.c says
 * how the transport works and what each room is for.  Internal to
 * runtime/transport/rails/: the rest of libcollrt reaches the transport
 * through rt.h (rt_rails_connect, rt_rails_open, rt_rails_stats,
 * rt_policy_parse).
 */
#ifndef COLL_RAILS_INT_H
#define COLL_RAILS_INT_H

#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>

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
#define RL_DRAIN_NS 50000000          /* rl_drain_sample(): the time one measurement of a drain spans */
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

/* --- helpers (inline: every room uses them, in its hot paths) ------------- */

/* Link (p, r): peer p as seen on rail r. */
static inline rl_link *rl_lk(rails_tp *t, int p, int r) { return &t->peer[p].link[r]; }

/* How many rails to p are up. */
static inline int rl_alive_rails(rails_tp *t, int p)
{
	int k = 0;
	for (int r = 0; r < t->nrails; r++)
		k += rl_lk(t, p, r)->up;
	return k;
}

/* Is rail r's latency lower than rail q's by more than RL_LAT_TIE of it?
 * Rails of like latency tie, and the first listed wins: every rank
 * measures the latencies on its own, and if each took its own lowest
 * reading, ranks would disagree on rails a few microseconds apart, and
 * a rank would receive its cold messages on one rail and send on the
 * other, keeping both busy (and polled) for nothing. */
static inline int rl_lower_latency(const rails_tp *t, int r, int q)
{
	return t->rail[r].lat_ns < t->rail[q].lat_ns * (1 - RL_LAT_TIE);
}

/* The alive rail to p of lowest latency, -1: none. */
static inline int rl_fastest(rails_tp *t, int p)
{
	int best = -1;
	for (int r = 0; r < t->nrails; r++)
		if (rl_lk(t, p, r)->up && (best < 0 || rl_lower_latency(t, r, best)))
			best = r;
	return best;
}

/* Rail r's bandwidth: its rate in the largest class measured from
 * RL_RATE_BYTES up (bytes per ns); 0: none measured yet. */
static inline double rl_rail_rate(rails_tp *t, int r)
{
	double best = 0;
	for (int c = 0; c < RL_NCLASS; c++)
		if (t->cls[c].rate[r] > 0 && t->cls[c].samples && (1ull << c) >= RL_RATE_BYTES)
			best = t->cls[c].rate[r];
	return best;
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
 * instead of 0.96 (tests/results/rails.md).  Forgotten, the link is unmeasured
 * and gets slices again, enough to be measured properly. */
static inline double rl_drain_of(const rl_link *L, int64_t now)
{
	return now - L->drain_set_ns > RL_RETRY_NS ? 0 : L->drain;
}

/* The alive rail to p of highest measured throughput (then lowest
 * latency), other than `not`; -1: none. */
static inline int rl_survivor(rails_tp *t, int p, int not)
{
	int best = -1;
	for (int r = 0; r < t->nrails; r++) {
		if (r == not || !rl_lk(t, p, r)->up)
			continue;
		if (best < 0 || rl_rail_rate(t, r) > rl_rail_rate(t, best) ||
		    (rl_rail_rate(t, r) == rl_rail_rate(t, best) && rl_lower_latency(t, r, best)))
			best = r;
	}
	return best;
}

/* --- wire.c --------------------------------------------------------------- */
/* Post control message h to p on rail r; nothing when that link is down (or
 * r < 0).  A failed post takes the link down.  Errors: NOMEM, rl_link_down's. */
int rl_send_ctl(rails_tp *t, int p, int r, const rl_hdr *h);
/* The same with len <= RL_REJOIN_BYTES bytes of body (a REJOIN's record),
 * copied: the caller keeps body. */
int rl_send_ctl_body(rails_tp *t, int p, int r, const rl_hdr *h, const uint8_t *body, size_t len);
/* Acknowledge to p on rail r (or the fastest alive rail): cum, freed and
 * credit, and piece (seq, slice) unless slice < 0.  Pays any ACK owed. */
int rl_send_ack(rails_tp *t, int p, int r, uint32_t seq, int slice);
/* Tell p of new credit at once when it may be waiting for it (it has
 * started every message we allowed). */
int rl_maybe_credit(rails_tp *t, int p);
/* Copy a send's iovecs into one buffer of their total length. */
void rl_gather(char *to, const rt_req *req);
/* Append piece pc to link L's list of posted, unfinished pieces. */
void rl_link_push(rl_link *L, rl_piece *pc);
/* Post piece pc of m to p on rail r (the child's send); a failed post takes
 * the link down.  Errors: rl_link_down's. */
int rl_post_piece(rails_tp *t, int p, rl_msg *m, rl_piece *pc, int r);
/* Free message m and start()'s copy of its bytes, if any. */
void rl_msg_free(rl_msg *m);
/* Drop link (p, r)'s acknowledged pieces that its child holds no longer;
 * a message whose pieces all went is sampled (rl_sample) and completed. */
void rl_reap(rails_tp *t, int p, int r);
/* Complete the executor's sends to p whose copied pieces the child has all
 * written (or were acknowledged).  Returns whether one completed. */
int rl_copied_out(rails_tp *t, int p);
/* Return link L's control messages its child has finished to the pool. */
void rl_ctl_reap(rails_tp *t, rl_link *L);
/* Forget link (p, r), the reason printf-style: the child drops it, its
 * pieces go to a survivor, and (tell) the peer hears of it on a survivor.
 * Returns an error only when p is needed and no rail to it is left. */
int rl_link_down(rails_tp *t, int p, int r, int tell, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* COLL_ERR_PEER, naming every rail's reason, when p is needed (something to
 * or from it outstanding) and every rail to it is down; else COLL_OK. */
int rl_need(rails_tp *t, int p);
/* A split message acknowledged cleanly on every rail that carried it:
 * each rail's bytes and finish time, into its class's samples. */
void rl_sample(rails_tp *t, const rl_msg *m);
/* Piece pc's own acknowledgement from p on rail r, at now: time link
 * (p, r)'s drain (pulled messages only; call before marking it acked). */
void rl_drain_sample(rails_tp *t, int p, int r, const rl_piece *pc, int64_t now);

/* --- recv.c --------------------------------------------------------------- */
/* Hand p's whole messages, in order, to the executor's posted receives. */
int rl_deliver(rails_tp *t, int p);
/* Take what arrived on link (p, r), in order; *moved = 1 when anything
 * did.  Errors: PROTOCOL, NOMEM, those of the messages' handling. */
int rl_link_recv(rails_tp *t, int p, int r, int *moved);

/* --- split.c -------------------------------------------------------------- */
/* Start the messages to p that credit allows (cut, posted or queued; a
 * rebalance first when one is due) and hand out p's queued pieces. */
int rl_pump(rails_tp *t, int p);
/* Set class k's shares for the policy's split (equal, latency, or the
 * balancer's own under throughput), normalised to sum 1. */
void rl_shares(rails_tp *t, rl_class *k);

/* --- failover.c ----------------------------------------------------------- */
/* The failover check at now: a silent link, while another rail to the same
 * peer answers, is declared down (PROBEs sent on the others to find out). */
int rl_check_links(rails_tp *t, int64_t now);
/* A REJOIN step from p, arrived on rail r, with its record body: act on it
 * (see failover.c).  Errors: PROTOCOL (a malformed step), and sending's. */
int rl_on_rejoin(rails_tp *t, int p, int r, const rl_hdr *h, const uint8_t *body);
/* The higher rank's side of rejoining through records: offer again on
 * every down link whose time has come. */
int rl_rejoin_offers(rails_tp *t, int64_t now);
/* Adopt the links the rejoin thread made (main thread). */
int rl_adopt_news(rails_tp *t);
/* The rejoin thread (arg: the rails_tp): redials the links in t->want,
 * accepts redials on each rail's listener, until t->stop. */
void *rl_rejoin_main(void *arg);

#endif
