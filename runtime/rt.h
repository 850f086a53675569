/*
 * rt.h - libcollrt's internal header: the communicator, the transport
 * vtable, the wire header and every internal prototype, grouped by the file
 * that defines it.
 *
 * Pipeline position: coll.h (API) -> comm.c (communicator, argument checks,
 * algorithm choice) -> exec.c (runs one rank's plan) -> a transport
 * (transport/shm.c, transport/tcp.c, transport/rails/ over several of
 * them, or a plugin's: transport/mpi/plugin.c, transport/ibverbs/ib.c,
 * loaded by plugin.c) that moves messages between ranks.
 * straggler.c emulates and detects persistent stragglers (arrival times
 * ride on every message header).  bootstrap.c builds the communicator's
 * first links; auth.c and net.c are the helpers under it, and base.c
 * (errors, environment, names) is under everything.  What each collective
 * is comes from coll_kinds.h, shared with the compiler.  Internal externs
 * use the rt_ prefix (shm_/tcp_ in the transports); the static library is partially linked with everything
 * but coll_* made local, see Makefile.frag and check_syms.sh.
 *
 * Error convention: internal functions return a coll_result (0 = OK) and
 * record details with rt_err(comm, code, fmt, ...), which returns code.
 */
#ifndef COLL_RT_H
#define COLL_RT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "coll.h"
#include "coll_kinds.h"
#include "coll_plan.h"

#define RT_UNUSED(x) ((void)(x))

/* --- the wire header every collective message starts with ---------------- */

/* 64 bytes so a payload that follows it in a shm slot is cache-line
 * aligned.  Receivers check every field against their own call: that is
 * how mismatched counts, dtypes, ops, roots and plans are reported. */
#define RT_HDR_MAGIC 0x436f4c31u /* "CoL1" */
typedef struct {
	uint32_t magic;
	uint32_t seq;        /* collective sequence number on the communicator */
	uint64_t count;      /* full working count */
	uint32_t algo_hash;  /* hash of the algorithm name and shape */
	uint8_t kind, dtype, op;
	uint8_t segmajor;    /* the sender's message order (exec.c cursor_next) */
	int32_t root;
	int32_t round, chunk, seg;
	uint32_t len;        /* payload bytes that follow */
	/* Straggler detection: the two latest call entries (CLOCK_MONOTONIC
	 * ns, rank) the sender knows of in this call, its own included;
	 * ranks are < 65536 (late2_ns 0: none known). */
	uint16_t late_rank, late2_rank;
	int64_t late_ns, late2_ns;
} rt_hdr;
_Static_assert(sizeof(rt_hdr) == 64, "rt_hdr must stay 64 bytes");
/* rt_hdr.kind of a point-to-point message (p2p.c), outside the
 * collectives' kinds (coll_kinds.h) */
#define RT_KIND_P2P 0xf0

/* --- transports ----------------------------------------------------------- */

/* A send or receive request.  The executor owns the memory of the request;
 * the transport links it into its queues between post and completion. */
typedef struct rt_req {
	struct rt_req *next;    /* transport queue link */
	int peer;               /* physical rank */
	int done;               /* set by the transport when complete */
	struct iovec iov[2];    /* send: header, payload (owned by caller until done) */
	int iovcnt;
	void *data;             /* recv: message (header + payload) in transport memory */
	size_t len;             /*       its length; valid until release() */
	uint64_t tpseq;         /* transport's bookkeeping (slot number, ...) */
	void *tpbuf;            /* transport's bookkeeping (buffer to recycle) */
	size_t pend;            /* recv: payload bytes still in the transport's stream (see read) */
	int32_t xstep, xseg;    /* executor's bookkeeping */
	int applied;            /* executor: recv applied and released */
	uint64_t xoff;          /* executor: payload bytes of a streamed recv consumed */
	rt_hdr hdr;             /* executor: header storage for sends; transport: for streamed recvs */
} rt_req;

/* A FIFO of requests: a transport's send or receive queue towards one
 * peer, linked through rt_req.next. */
typedef struct {
	rt_req *head, *tail;
} rt_reqq;

static inline void rt_reqq_push(rt_reqq *q, rt_req *r)
{
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
}

/* Remove the head (which must exist). */
static inline rt_req *rt_reqq_pop(rt_reqq *q)
{
	rt_req *r = q->head;
	if (!(q->head = r->next))
		q->tail = NULL;
	return r;
}

typedef struct rt_tp rt_tp;
struct pollfd;

/* What a transport needs to be one rail of several (rails.c): its own
 * connect for one network, and the means to replace one peer's link while
 * the others carry on.  NULL in rt_transport.rail: it cannot be a rail. */
typedef struct rt_rail_ops {
	/* Open links to every other rank over `where` (tcp: an interface name
	 * or an address; ibverbs: "device[:port]"; NULL: the transport's
	 * default), as rail `index` of comm: every rank exchanges its address
	 * on that rail through comm->boot.  Blocks like connect. */
	int (*connect)(coll_comm *c, int index, const char *where, rt_tp **out);
	/* Close the link to peer.  Afterwards the transport holds none of
	 * that peer's requests (receives that completed before are still the
	 * caller's to release).  Never fails. */
	void (*drop)(rt_tp *tp, int peer);
	/* Take a link made by redial or reaccept (an fd, and the session key
	 * its handshake derived) as the link to peer.  Errors: INVALID. */
	int (*adopt)(rt_tp *tp, int peer, int fd, const uint8_t sess[16]);
	/* Make a fresh authenticated link to peer / accept one on this rail's
	 * listener (listen_fd), blocking until deadline_ms at most; *fd and
	 * sess are for adopt.  Called from another thread than the other ops:
	 * they read only what connect set up, and record errors with
	 * rt_err(NULL, ...).  Optional (NULL: a dropped link stays down). */
	int (*redial)(rt_tp *tp, int peer, int64_t deadline_ms, int *fd, uint8_t sess[16]);
	int (*reaccept)(rt_tp *tp, int64_t deadline_ms, int *peer, int *fd, uint8_t sess[16]);
	int (*listen_fd)(rt_tp *tp);
	/* Optional: the fds (and events) progress() would wait on, so that a
	 * caller can wait on several transports at once; fills up to max,
	 * returns how many, or -1 (then the caller gives each progress() a
	 * share of its wait). */
	int (*pollfds)(rt_tp *tp, struct pollfd *pfd, int max);
	/* Optional, with pollfds: do what progress(tp, 0) would, given the
	 * results of one wait (poll(), or an epoll set holding the same fds
	 * and events) over exactly the fds pollfds() last filled (pfd[0..n)
	 * with revents set; no other op in between).  A caller serving
	 * several transports then makes one wait per pass, not one per
	 * transport: on a small message every syscall shows. */
	int (*serve)(rt_tp *tp, const struct pollfd *pfd, int n);
	/* Optional, for transports with nothing to dial (ibverbs: a queue
	 * pair is made by both ends exchanging records): a dropped link
	 * rejoins through records the caller carries on another rail.
	 * rejoin_offer replaces peer's dropped link with a fresh one and
	 * writes its record (at most cap bytes) to rec and its length to
	 * *len; rejoin_accept connects the fresh link to the
	 * peer's record, after which it carries traffic (the peer accepts
	 * ours before we write: see transport/rails/failover.c).  Main thread only. */
	int (*rejoin_offer)(rt_tp *tp, int peer, uint8_t *rec, size_t cap, size_t *len);
	int (*rejoin_accept)(rt_tp *tp, int peer, const uint8_t *rec, size_t len);
} rt_rail_ops;

/* A transport: a name, the size of this struct as the transport file was
 * compiled (a version check), and its operations.  All ops are non-blocking
 * except connect, progress (bounded by its timeout) and close. */
typedef struct rt_transport {
	const char *name;
	uint32_t size;
	/* Open links to every other rank of comm, using comm->boot for address
	 * exchange.  Blocks until connected or the bootstrap deadline.
	 * Errors: SYSTEM, AUTH, TIMEOUT, PEER, TRANSPORT, NOMEM. */
	int (*connect)(coll_comm *comm, rt_tp **out);
	/* Queue req->iov (total <= tp->max_msg) to req->peer.  Does not block;
	 * the iov memory belongs to the transport until req->done.  Sends to
	 * one peer complete in post order.  Errors: PEER, SYSTEM, INVALID. */
	int (*post_send)(rt_tp *tp, rt_req *req);
	/* Ask for the next message from req->peer (FIFO per peer).  Does not
	 * block; when req->done, req->data/len point at transport memory that
	 * stays valid until release().  Errors: PEER, SYSTEM. */
	int (*post_recv)(rt_tp *tp, rt_req *req);
	/* Give back the memory of a completed receive (any order). */
	void (*release)(rt_tp *tp, rt_req *req);
	/* Move data: complete whatever can be completed; if nothing moved,
	 * wait up to timeout_ms for something to happen.  Errors: PEER (a peer
	 * died: detected from closed sockets or process exit), ABORTED (a peer
	 * aborted), PROTOCOL, SYSTEM. */
	int (*progress)(rt_tp *tp, int timeout_ms);
	/* Tell every peer we failed with `code` (best effort, never blocks
	 * long).  Their progress() then returns rt_abort_code(code): ABORTED,
	 * or MISMATCH for ranks that disagree on a call's arguments.
	 * Transports that can carry words send tp->comm->err with it, and
	 * relay an abort they heard (code ABORTED or MISMATCH) as it came:
	 * origin rank, code and words. */
	void (*abort)(rt_tp *tp, int code);
	/* Free everything; pending requests are dropped.  Never fails. */
	void (*close)(rt_tp *tp);
	/* Optional (NULL: every receive completes with its whole message in
	 * transport memory).  A transport that has it may complete a receive
	 * with only the header: req->data/len as usual (len counts the whole
	 * message) but req->pend payload bytes still in its stream, which the
	 * executor must then take promptly, in order, with read(): up to max
	 * bytes into dst (*got: how many; 0: none yet, wait in progress()).
	 * read(tp, req, NULL, 0, NULL) instead asks the transport to buffer the
	 * rest itself: req->done drops to 0 and rises again with the whole
	 * message in transport memory and pend 0.  Does not block.  Errors:
	 * PEER, SYSTEM, INVALID. */
	int (*read)(rt_tp *tp, rt_req *req, void *dst, size_t max, size_t *got);
	/* Optional, both or neither (NULL: never asked).  Send a message whose
	 * payload the caller writes straight into transport memory:
	 * send_reserve copies the header req->iov[0] into room for it and len
	 * payload bytes and sets *buf to the payload's place, if that can be
	 * done at once (nothing queued to the peer, room free); otherwise
	 * *buf = NULL and nothing happened.  The caller fills *buf and calls
	 * send_commit, with no other send to that peer in between; the request
	 * then completes like a post_send, and *buf stays readable by the
	 * caller until its next send to that peer.  This is how a received
	 * segment is reduced or copied straight into the message that forwards
	 * it.  Errors: as post_send. */
	int (*send_reserve)(rt_tp *tp, rt_req *req, size_t len, void **buf);
	int (*send_commit)(rt_tp *tp, rt_req *req);
	/* Optional (NULL: never asked).  Copy into *hdr the header of the next
	 * message from peer that no posted receive has taken yet, if it has
	 * arrived (*have = 1; else 0).  Consumes nothing and does not block.
	 * The executor calls it while it waits, to name a peer that runs
	 * another call or algorithm even when it never receives from it.
	 * Errors: ABORTED (the next thing from peer is its abort), PROTOCOL. */
	int (*peek)(rt_tp *tp, int peer, rt_hdr *hdr, int *have);
	const rt_rail_ops *rail;
} rt_transport;

/* What a rank reports on hearing a peer's abort whose origin failed with
 * `code`: COLL_ERR_ABORTED, except that ranks disagreeing on a call's
 * arguments is every rank's error (COLL_ERR_MISMATCH), not only the error
 * of the rank whose message showed it. */
static inline int rt_abort_code(int code)
{
	return code == COLL_ERR_MISMATCH ? COLL_ERR_MISMATCH : COLL_ERR_ABORTED;
}

/* The part of every transport instance the executor reads. */
struct rt_tp {
	const rt_transport *ops;
	coll_comm *comm;
	size_t max_msg;    /* largest message (header included) post_send takes */
	int send_window;   /* messages in flight per peer worth keeping */
	int recv_window;   /* receives per peer worth keeping posted */
	int round_order;   /* default for comm->round_order (exec.c): 1 where links are shared */
	int err_peer;      /* the peer whose link caused the latest PEER/SYSTEM/PROTOCOL error; -1: none
	                    * known (a rail transport sets it: rails.c then drops only that link) */
};

/* --- bootstrap ------------------------------------------------------------ */

typedef struct {
	int *fds;               /* rank 0: fds[r] to rank r (fds[0] = -1); others: fds[0] */
	uint8_t key[16];        /* derived from the secret */
	uint64_t jobid;         /* random, chosen by rank 0 */
	int listen_fd;          /* this rank's listener for transport links */
	struct sockaddr_storage *addrs;  /* every rank's listener address */
	socklen_t *addrlens;
	int64_t deadline_ms;    /* bootstrap deadline (absolute, rt_now_ms) */
	const struct rt_mpi_plugin *mpi;  /* non-NULL: bootstrapped through MPI (mpiboot.c) */
	void *mpi_state;        /* the plugin's per-communicator state */
	const void *mpi_comm;   /* coll_init_mpi: the MPI_Comm to bootstrap on; NULL: MPI_COMM_WORLD */
} rt_boot;

/* Host identity exchanged at bootstrap (for transport "auto"). */
typedef struct {
	char boot_id[40];
	uint64_t netns;
	int32_t pid;
	uint32_t planhash;      /* fingerprint of the plan set: all ranks must agree */
	uint64_t pidns;         /* pid namespace: pid means something to ranks that share it */
	uint32_t mac;           /* COLL_AUTH=mac: all ranks must agree */
	uint32_t tunehash;      /* COLL_TUNING's table (tuned.c): all ranks must agree */
	uint64_t reorder_env;   /* rt_reorder_env_hash(): all ranks must agree (reorder.c) */
} rt_hostinfo;

/* Preprocessed plan of one role (rank of the schedule) of one algorithm. */
typedef struct {
	int32_t kind;    /* coll_step_kind */
	int32_t peer;    /* role of the peer */
	int32_t chunk, round;
	int32_t need;    /* send: recvs on chunk with smaller round; recv: sends on chunk with round <= */
	int32_t idx;     /* recv: index among the recvs on this chunk */
	int32_t nsend;   /* recv: the send step right after it on its chunk (a later round), which
	                  * exec.c may fill straight from the received message; -1: none */
	int32_t after;   /* recv: who reads the chunk's home after this step and nsend (rt_after) */
} rt_xstep;

/* What happens to a chunk's home after a receive (and its nsend, if any):
 * it tells exec.c whether the home must be written at all, and whether it
 * may be written past the cache (non-temporal stores: nothing re-reads it
 * during the call). */
typedef enum {
	RT_AFTER_READ,       /* a later send or reduce reads it: write it normally */
	RT_AFTER_NONE,       /* nothing: it is final (or scratch) */
	RT_AFTER_OVERWRITE,  /* a receive-copy overwrites it: with nsend there, only the message needs
	                      * the value (ring's forwarded partial sums) */
} rt_after;

/* The two latest call entries known so far in one call. */
typedef struct {
	int64_t ns, ns2;           /* 0: none */
	int rank, rank2;
} rt_late;

typedef struct rt_prep {
	struct rt_prep *next;       /* comm's cache list */
	const coll_algo *algo;
	int role;
	int nsteps;
	int nrounds;                /* last step's round + 1 (steps are in round order) */
	rt_xstep *steps;
	int *soff, *sidx;           /* per peer role (n+1 offsets): send steps in order */
	int *roff, *ridx;           /* per peer role: recv steps in order */
	uint32_t hash;
} rt_prep;

struct coll_comm {
	int rank, n;
	int64_t timeout_ms;        /* <= 0: none */
	int mac;                   /* COLL_AUTH=mac: every TCP frame carries a MAC (tcp.c) */
	const coll_plan_set *plans;
	rt_boot boot;
	rt_hostinfo *hosts;        /* n entries */
	rt_tp *tp;
	uint32_t seq;              /* collectives started */
	coll_result broken;        /* != OK: failed earlier */
	char err[320];
	void *scratch;
	size_t scratch_len;
	void *stage;               /* exec.c: staging for streamed reductions (RT_STAGE_BYTES) */
	rt_prep *preps;
	size_t seg_bytes;          /* payload per message (COLL_SEG_BYTES caps it) */
	int round_order;           /* executor moves round by round (COLL_ROUND_ORDER, exec.c) */
	int trace_rounds;          /* COLL_TRACE_ROUNDS: per-round times on stderr after each call */
	int reduce_send;           /* fill forwarding sends straight from receives (COLL_REDUCE_SEND, exec.c) */
	uint64_t nt_bytes;         /* calls this large write final results past the cache (COLL_NT_BYTES) */
	/* stragglers (see coll_straggler in coll.h) */
	int emu_rank;              /* emulated straggler, -1: none */
	double emu_delay_ms;
	int straggler;             /* declared straggler (physical), -1: none */
	int auto_straggler;        /* plan set says `straggler auto` */
	rt_late late;              /* this call: the two latest entries known */
	int win;                   /* detection window K */
	double win_min_gap;        /* a lead shorter than this (s) names nobody */
	int *win_rank;             /* the last K calls' last arrivals (ring; -1: lead too short) */
	double *win_gap;           /* their lead over the second-latest, s */
	int win_len, win_head;
	const char *last_algo;     /* what the latest collective ran (coll_last_algo) */
	/* rank reordering (reorder.c): schedule rank r runs on physical rank
	 * perm[r], physical rank p plays schedule rank inv[p]; NULL: identity */
	int32_t *perm, *inv;
	char order_src[160];       /* where the order came from (coll_rank_order) */
	/* the tuned size table (tuned.c): COLL_TUNING's file or `choose by
	 * measure`; it takes precedence over the plan set's for the kinds it
	 * holds.  NULL: none */
	struct tune_table *tuning;
	coll_choice *tuned;        /* its size table; algo names point into tuning */
	int ntuned;
	char tuning_src[300];      /* where it came from (coll_tuning) */
	struct rt_p2p *p2p;        /* point-to-point state (p2p.c); NULL until the first */
	int detected;              /* named straggler, -1: none */
	double detected_delay;
};

/* --- base.c --------------------------------------------------------------- */
/* Record an error detail on comm (or the thread's init slot when comm is
 * NULL) and return code. */
int rt_err(coll_comm *comm, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* --- env.c ---------------------------------------------------------------- */
/* The most ranks a job may have (COLL_NRANKS, coll_config.nranks): the
 * wire header carries ranks in 16 bits (late_rank), and the Python binding
 * and torch backend refuse more too. */
#define RT_MAX_RANKS 65536
/* A row of env.def: one COLL_* variable, how it parses and its range. */
typedef enum { RT_ENV_STR, RT_ENV_INT, RT_ENV_REAL, RT_ENV_SIZE, RT_ENV_POW2, RT_ENV_BOOL, RT_ENV_ENUM } rt_env_kind;
typedef struct {
	const char *name;
	rt_env_kind kind;
	const char *unit;     /* what the number counts, "" for none */
	double min, max;      /* inclusive range of the numeric kinds */
	const char *off;      /* NULL, or the one value outside the range ("0") */
	const char *values;   /* ENUM: "a|b|c"; with off: what off means */
} rt_env_row;
/* The whole table; the row of name, or NULL. */
size_t rt_env_table(const rt_env_row **rows);
const rt_env_row *rt_env_find(const char *name);
/* What a row accepts, in words: "a number from 0.001 to 10000000 (seconds), or 0 (none)". */
char *rt_env_expect(const rt_env_row *r, char *buf, size_t len);
/* Parse text as r says: 0 with *out (the number; an ENUM's index), or -1
 * with why = "NAME='text': expected ...". */
int rt_env_parse(const rt_env_row *r, const char *text, double *out, char *why, size_t len);
/* Every variable of the table that is set parses: COLL_OK, or
 * COLL_ERR_INVALID naming the first that does not. */
coll_result rt_env_check(coll_comm *c);
/* A numeric variable's value, or dflt when it is unset or empty; name must
 * be a row of env.def (abort otherwise: a programming error). */
long rt_env_long(const char *name, long dflt);
double rt_env_double(const char *name, double dflt);
/* Seconds (COLL_TIMEOUT, coll_config.timeout_s, coll_set_timeout) as the
 * inactivity timeout's milliseconds: 0 or less is none (0); a positive
 * value never rounds down to none (at least 1 ms); NaN or more than 1e7 s
 * is COLL_ERR_INVALID. */
coll_result rt_timeout_ms(coll_comm *c, double s, int64_t *ms);

/* --- net.c ---------------------------------------------------------------- */
int64_t rt_now_ms(void);
int64_t rt_now_ns(void);
/* Parse "host:port" or "[v6]:port" (numeric or resolvable host). */
int rt_parse_addr(coll_comm *c, const char *s, struct sockaddr_storage *ss, socklen_t *len);
/* Format an address as "ip:port" into buf. */
const char *rt_addr_str(const struct sockaddr_storage *ss, char *buf, size_t len);
/* Listen on ss (port may be 0) into *fd.  Errors: SYSTEM, BOOTSTRAP (bind
 * or listen failed; errno is left as they set it). */
int rt_listen(coll_comm *c, const struct sockaddr_storage *ss, socklen_t len, int *fd);
/* Connect with retries until deadline (peer may not listen yet). */
int rt_connect(coll_comm *c, const struct sockaddr_storage *ss, socklen_t len, int64_t deadline, int *fd);
/* Read/write exactly len bytes on a blocking-or-not fd before deadline.
 * Errors: PEER (EOF/reset), TIMEOUT, SYSTEM. `what` names the peer. */
int rt_read_full(coll_comm *c, int fd, void *buf, size_t len, int64_t deadline, const char *what);
int rt_write_full(coll_comm *c, int fd, const void *buf, size_t len, int64_t deadline, const char *what);
int rt_set_nonblock(int fd, int on);
void rt_tune_socket(int fd);

/* --- auth.c --------------------------------------------------------------- */
/* SipHash-2-4 of data under a 128-bit key. */
uint64_t rt_siphash(const uint8_t key[16], const void *data, size_t len);
/* The same, incrementally: init, update with the data in pieces of any
 * size, final (which leaves the state as it was). */
typedef struct { uint64_t v[4]; uint64_t tail, len; } rt_sip;
void rt_sip_init(rt_sip *s, const uint8_t key[16]);
void rt_sip_update(rt_sip *s, const void *data, size_t len);
uint64_t rt_sip_final(const rt_sip *s);
/* Derive the 128-bit connection key from a secret string. */
void rt_auth_key(const char *secret, uint8_t key[16]);
/* Fill buf with random bytes: 0 when they came from the kernel
 * (getrandom), -1 when there was none to be had and buf holds time/pid
 * mixing, fit for nonces but not for keys. */
int rt_random(void *buf, size_t len);
/* Mutual challenge/response on a fresh connection (auth.c says what each
 * side proves).  The client proves (rank, purpose, info, jobid) under the
 * key, checks the server's proof and derives the session key sess.
 * Blocks until deadline.  Errors: AUTH (the server refused our proof, or
 * could not prove its own), PEER (the connection closed before the
 * verdict: the server dropped the handshake, dialling again may work),
 * TIMEOUT, PROTOCOL (not a libcollrt server), SYSTEM.  peer names the
 * server in messages. */
enum { RT_PURPOSE_BOOT = 1, RT_PURPOSE_TCP = 2, RT_PURPOSE_RAIL = 16 /* + the rail's index */ };
int rt_auth_client(coll_comm *c, int fd, const uint8_t key[16], int rank, int purpose, uint32_t info, uint64_t jobid,
                   int64_t deadline, const char *peer, uint8_t sess[16]);

/* The server side: every pending handshake on a listener at once. */
typedef struct {
	int fd;                 /* RT_HS_PEER: the authenticated connection, now the caller's */
	uint32_t rank, info;    /* what the client's proof said */
	uint8_t sess[16];       /* RT_HS_PEER: the session key */
} rt_hs_peer;
typedef struct {
	coll_comm *c;
	int lfd;                /* the listener (the caller's) */
	const uint8_t *key;
	int purpose;
	uint64_t jobid;
	int64_t hs_ms;          /* per-connection deadline (COLL_HANDSHAKE_TIMEOUT, default 3 s) */
	struct rt_hs_conn *conn;
	int nconn;
	struct pollfd *pf;
	int pfcap;
	int dropped;            /* connections dropped without a verdict (strangers, slow peers) */
	int refused;            /* proofs that failed the key check */
} rt_hs_server;
enum { RT_HS_PEER = 1, RT_HS_REFUSED, RT_HS_EXTRA, RT_HS_TIME };
void rt_hs_start(rt_hs_server *s, coll_comm *c, int lfd, const uint8_t key[16], int purpose, uint64_t jobid);
/* Serve handshakes until something the caller must hear about: *event is
 * RT_HS_PEER (a client proved the key: *peer, its fd now the caller's),
 * RT_HS_REFUSED (a proof claiming peer->rank failed the key check; it was
 * refused and closed: a hint, not an error), RT_HS_EXTRA (one of the
 * caller's extra pollfds has revents set) or RT_HS_TIME (until passed).
 * Blocks until then.  Errors: SYSTEM, NOMEM. */
int rt_hs_wait(rt_hs_server *s, int64_t until, struct pollfd *extra, int nextra, int *event, rt_hs_peer *peer);
/* Close the handshakes still pending (not the listener).  Never fails. */
void rt_hs_stop(rt_hs_server *s);

/* --- bootstrap.c ---------------------------------------------------------- */
/* Rendezvous: rank 0 listens on addr, everyone authenticates, rank 0
 * checks every rank's claim and answers each with a verdict (the job id,
 * or why the job cannot start), then every rank's listener address is
 * exchanged.  A rank with c->rank >= c->n only tells rank 0 (at most 5 s)
 * and fails.  Blocks until the bootstrap deadline at most.  Errors:
 * BOOTSTRAP (misconfiguration, named), AUTH, TIMEOUT, PEER, PROTOCOL,
 * SYSTEM, NOMEM. */
int rt_boot_init(coll_comm *c, const char *addr, const char *secret);
/* Gather len bytes from every rank into all[n*len] on every rank (star
 * through rank 0, or MPI).  Blocking until rt_boot_deadline(c). */
int rt_boot_allgather(coll_comm *c, const void *mine, void *all, size_t len);
/* The later of the bootstrap deadline and now + the comm timeout. */
int64_t rt_boot_deadline(coll_comm *c);
int rt_boot_barrier(coll_comm *c);
void rt_boot_close(coll_comm *c);

/* Listener for transport links on the address `local` (its port is
 * ignored: an ephemeral one), sets c->boot.listen_fd.  Bound to one
 * interface, the one peers reach this rank on, not to all of them.
 * Errors: SYSTEM, BOOTSTRAP. */
int rt_boot_listen(coll_comm *c, const struct sockaddr_storage *local);
/* Close that listener (once the transport is connected).  Never fails. */
void rt_boot_unlisten(coll_comm *c);

/* --- mpiboot.c ------------------------------------------------------------ */
/* True when this process was started by an MPI launcher (OpenMPI, PMIx or
 * PMI environment). */
int rt_mpi_launched(void);
/* Bootstrap through MPI: load libcollrt_mpi.so (see rt_mpi_plugin), let
 * it initialise MPI, take rank and size from MPI_COMM_WORLD, or from
 * c->boot.mpi_comm when set (nranks, if > 0, must agree), agree on a job id and link key, open this rank's TCP
 * listener and exchange addresses.  Blocks (MPI collectives).  Errors:
 * UNSUPPORTED (no plugin), BOOTSTRAP, SYSTEM, NOMEM. */
int rt_mpi_boot(coll_comm *c, int nranks, const char *secret);

/* --- plugins (plugin.c) -----------------------------------------------------
 * libcollrt never links libmpi or libibverbs: it dlopens a plugin that
 * does (libcollrt_mpi.so under mpirun, libcollrt_ibverbs.so for transport
 * ibverbs), which exports one symbol, coll_NAME_plugin().  A plugin sees
 * libcollrt's internals only through rt_host_api (libcollrt's own symbols
 * are local) and the structures of this header, whose layout the size
 * fields check. */
typedef struct {
	uint32_t size;                  /* sizeof(rt_host_api) */
	uint32_t comm_size;             /* sizeof(coll_comm) */
	uint32_t tp_size;               /* sizeof(rt_transport) */
	int (*err)(coll_comm *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
	long (*env_long)(const char *name, long dflt);
	int64_t (*now_ms)(void);
	const char *(*strerror)(coll_result r);
	/* For transport plugins (ibverbs): what tcp.c and shm.c call directly. */
	int64_t (*now_ns)(void);
	int (*boot_allgather)(coll_comm *c, const void *mine, void *all, size_t len);
	int (*boot_barrier)(coll_comm *c);
	int64_t (*spin_ns)(const coll_comm *c, const char *env);
} rt_host_api;

/* Load plugin `name` (libcollrt_NAME.so at $COLL_NAME_PLUGIN, next to
 * libcollrt, in an install's lib/coll, in the compiled-in directories, or
 * on the linker's path: plugin.c says in which order) and call its entry
 * point.  On
 * success out->table is what the entry returned and out->path where it was
 * found; otherwise out->why says why.  global: load it RTLD_GLOBAL.
 * Returns RT_PLUGIN_OK, RT_PLUGIN_MISSING (no loadable file) or
 * RT_PLUGIN_BAD (a file that is not a plugin of this libcollrt). */
enum { RT_PLUGIN_OK = 0, RT_PLUGIN_MISSING, RT_PLUGIN_BAD };
typedef struct {
	const void *table;
	char path[4096];
	char why[512];
} rt_plugin;
int rt_plugin_load(const char *name, int global, rt_plugin *out);

/* --- the MPI plugin (libcollrt_mpi.so, from runtime/transport/mpi/plugin.c) -
 * Loaded under mpirun (mpiboot.c); its table (ABI 3: the base communicator
 * comes from c->boot.mpi_comm): */
#define RT_MPI_ABI 4

typedef struct rt_mpi_plugin {
	uint32_t abi;                   /* RT_MPI_ABI */
	uint32_t size;                  /* sizeof(rt_mpi_plugin) */
	/* Initialise MPI unless the application did (then MPI_Finalize runs at
	 * exit), duplicate the base communicator (*c->boot.mpi_comm, an
	 * MPI_Comm, when set; else MPI_COMM_WORLD), set c->rank, c->n (the
	 * base's) and c->boot.mpi_state.  Blocks until c->boot.deadline_ms at most (the
	 * duplication waits for every rank; MPI_Init itself, which OpenMPI
	 * also makes wait for every process, is beyond it).  Errors:
	 * BOOTSTRAP, TIMEOUT, NOMEM. */
	int (*boot)(coll_comm *c);
	/* Collectives over the duplicated communicator; they block until
	 * deadline_ms (absolute, rt_now_ms) at most, so that a rank that never
	 * joins (one that skipped coll_init or coll_barrier) is an error, not
	 * a hang.  A rank that dies is the launcher's business (mpirun tears
	 * the job down).  Errors: PEER, TIMEOUT. */
	int (*allgather)(coll_comm *c, const void *mine, void *all, size_t len, int64_t deadline_ms);
	int (*bcast)(coll_comm *c, void *buf, size_t len, int64_t deadline_ms);   /* from rank 0 */
	int (*barrier)(coll_comm *c, int64_t deadline_ms);
	/* Free the communicator's MPI state (not MPI itself).  Never fails. */
	void (*close)(coll_comm *c);
	const rt_transport *transport;  /* "mpi": point-to-point over MPI */
	/* ABI 4: the MPI library's own collective kind (coll_kind) with
	 * coll_collective's arguments, on the duplicated communicator
	 * (coll_mpi_collective: the `mpi` candidate of a tuning).  Errors:
	 * UNSUPPORTED (a dtype MPI has no type for: fp16, bf16), PEER. */
	int (*coll)(coll_comm *c, int kind, const void *sb, void *rb, size_t count, int dtype, int op, int root);
} rt_mpi_plugin;

/* --- transport/registry.c ------------------------------------------------- */
/* Transport by name, or NULL; checks the vtable is complete.  "mpi" is
 * found only on a communicator bootstrapped through MPI; another PLUGIN
 * row's plugin is loaded here (plugin.c).  When a registered transport
 * cannot be had, the reason is recorded on c (COLL_ERR_TRANSPORT; c may be
 * NULL). */
const rt_transport *rt_transport_find(coll_comm *c, const char *name);
/* Is name a row of coll_transports.def? */
int rt_transport_registered(const char *name);
/* Is every op of t present (send_reserve and send_commit: both or
 * neither) and its size ours? */
int rt_transport_complete(const rt_transport *t);
/* The registered transports (coll_transports.def), ending with a NULL
 * name: builtin is the linked vtable, NULL for a plugin's. */
typedef struct {
	const char *name;
	const rt_transport *builtin;
	const char *what;
	int round_order;   /* the default of comm->round_order over it (exec.c) */
} rt_transport_entry;
extern const rt_transport_entry rt_transports[];
/* name's row, or NULL when it is not one. */
const rt_transport_entry *rt_transport_row(const char *name);
/* "shm, tcp, mpi": the registered names, for messages. */
const char *rt_transport_names(void);
/* How long a waiting transport polls before it sleeps: $env microseconds,
 * by default 50 when c's ranks on this host have a CPU each, else 0. */
int64_t rt_spin_ns(const coll_comm *c, const char *env);
/* Does this host run more of c's ranks than it has CPUs for us? */
int rt_oversubscribed(const coll_comm *c);
/* Append "; rank R (pid P, this host) is stopped ..." to buf for every
 * rank on this kernel and pid namespace that is stopped (SIGSTOP, a
 * debugger): the usual reason for a timeout that no dead peer explains. */
void rt_stopped_ranks(const coll_comm *c, char *buf, size_t len);

/* --- transport/shm.c, transport/tcp.c ------------------------------------ */
extern const rt_transport shm_transport;
extern const rt_transport tcp_transport;

/* --- transport/rails/rails.c ---------------------------------------------- */
/* Open the rails of spec ("tcp:eth0,tcp:eth1,ibverbs:mlx5_0:1": TRANSPORT[:WHERE]
 * each) under policy and measure their latencies.  Blocks until the
 * bootstrap deadline at most.  Errors: INVALID (spec), TRANSPORT, and
 * those of the rails' connects. */
int rt_rails_connect(coll_comm *c, const char *spec, const coll_rail_policy *pol, rt_tp **out);
/* The same over transports the caller found: rail k is transport tr[k]
 * over where[k] (NULL: its default), named names[k] in statistics and
 * messages.  (The unit test opens rails over an in-memory transport.) */
int rt_rails_open(coll_comm *c, int nrails, const rt_transport *const *tr, const char *const *names,
                  const char *const *where, const coll_rail_policy *pol, rt_tp **out);
/* coll_rail_stats of a rails transport; UNSUPPORTED for any other. */
int rt_rails_stats(rt_tp *tp, coll_rail_info *out);
/* Override pol's fields from "cold=auto|always|SIZE,split=throughput|latency|equal,
 * rebalance=K,tolerance=X,failover=MS" (any subset).  0, or -1 with why. */
int rt_policy_parse(const char *s, coll_rail_policy *pol, char *why, size_t whylen);

/* --- plan.c --------------------------------------------------------------- */
/* Preprocess `algo` for `role` (dependency counts, per-peer lists).
 * Errors: NOMEM, PLAN. */
int rt_prep_build(coll_comm *c, const coll_algo *algo, int role, rt_prep **out);
void rt_prep_free(rt_prep *p);
/* A stable hash of an algorithm's name, kind, chunks and nranks. */
uint32_t rt_algo_hash(const coll_algo *a);
/* A fingerprint of a whole plan set (every step of every algorithm). */
uint32_t rt_planset_hash(const coll_plan_set *s);
/* Check one algorithm (see coll_plan_set_check).  COLL_OK or COLL_ERR_PLAN. */
int rt_algo_check(const coll_algo *a, char *why, size_t whylen);

/* --- exec.c --------------------------------------------------------------- */
#define RT_STAGE_BYTES (64 * 1024)
/* Run `algo` on this rank.  count: the full working count; buffers as in
 * coll.h for the algo's kind; root: the caller's root (plans are relabelled
 * so that the algo's root plays `root`); straggler: the physical rank that
 * plays the algo's straggler role when it has one (it trades places with
 * that role; -1: none).  prep is built for this rank's role under that
 * relabelling.
 * Blocking.  On failure the comm is marked broken and peers are told.
 * Errors: see coll.h. */
int rt_exec(coll_comm *c, const coll_algo *algo, rt_prep *prep, const void *sendbuf, void *recvbuf,
            size_t count, coll_dtype dt, coll_op op, int root, int straggler);

/* --- straggler.c --------------------------------------------------------- */
/* Called on entering a collective: sleep if this rank is the emulated
 * straggler, then start this call's arrival record with our entry time. */
void rt_straggler_enter(coll_comm *c);
/* Merge two latest entries (ns, rank) seen in a header into c->late. */
void rt_late_merge(rt_late *l, int64_t ns, int rank);
/* After a successful allreduce: record the last arrival in the window and
 * update the detected straggler. */
void rt_straggler_record(coll_comm *c);
/* Set up the window (COLL_STRAGGLER_WINDOW) and the emulation
 * (COLL_STRAGGLER_RANK, COLL_STRAGGLER_DELAY_MS).  Errors: NOMEM. */
int rt_straggler_init(coll_comm *c);
void rt_straggler_free(coll_comm *c);

/* --- reorder.c: caches of what a start measured ---------------------------- */
/* The cache directory: $var ("off": none), else $XDG_CACHE_HOME/coll,
 * else ~/.cache/coll, else /tmp/coll-cache-UID; made if missing.  0 with
 * dir; 1 for "off"; -1 with why when it cannot be made or used. */
int rt_cache_dir(const char *var, char *dir, size_t len, char *why, size_t wlen);
/* A key of the host list: every rank's host, namespace and address. */
uint64_t rt_hostlist_hash(const coll_comm *c);

/* --- p2p.c ----------------------------------------------------------------- */
typedef struct rt_p2p rt_p2p;
/* Free the point-to-point state: requests not waited for are dropped
 * (after the transport closed, which held their fragments). */
void rt_p2p_free(coll_comm *c);

/* --- tuned.c, tuneinit.c ----------------------------------------------------- */
/* `choose by measure` / COLL_TUNE=init: measure the size table of the
 * plan set's collectives at start (or read it from the cache) and adopt
 * it; every rank the same table.  After the rank order is settled. */
int rt_tune_init(coll_comm *c);
struct tune_table;
/* COLL_TUNING: read, check against the job (all but the transport) and
 * adopt the file; *hash := its table's fingerprint for the rendezvous
 * (0: none; never RT_TUNE_BROKEN, which comm.c sends for a file this
 * rank cannot use).  INVALID naming the file and what does not fit. */
#define RT_TUNE_BROKEN 0xffffffffu
int rt_tuning_load(coll_comm *c, uint32_t *hash);
/* Once the transport is chosen: the table's transport is the job's. */
int rt_tuning_fit(coll_comm *c);
/* Does t fit this job (transport NULL: not checked)?  0, else -1 and why. */
int rt_tuning_check_fit(coll_comm *c, const struct tune_table *t, const char *transport, char *why, size_t whylen);
/* Make t (ours now, freed on failure too) the communicator's size table. */
int rt_tuning_adopt(coll_comm *c, struct tune_table *t, const char *src);
void rt_tuning_free(coll_comm *c);

/* --- reorder.c, probe.c ------------------------------------------------- */
/* Settle the communicator's rank order at the end of coll_init: COLL_PERM,
 * COLL_REORDER, the plan set's perm or `reorder at init` (probe, search,
 * agree, cache).  Collective.  Errors: INVALID (a bad COLL_PERM),
 * MISMATCH (ranks disagree), NOMEM, and the probe's. */
int rt_reorder_init(coll_comm *c);
/* A hash of this rank's COLL_PERM / COLL_REORDER* settings, exchanged with
 * the host identities at init so that rt_reorder_init can refuse settings
 * that differ between ranks before any rank acts on them. */
uint64_t rt_reorder_env_hash(void);
/* The logical rank (schedule rank) of physical rank p, and back. */
static inline int rt_logical(const coll_comm *c, int p) { return c->inv ? c->inv[p] : p; }
static inline int rt_physical(const coll_comm *c, int l) { return c->perm ? c->perm[l] : l; }
/* What a probe found: per ordered pair latency (s) and bandwidth (B/s),
 * and the groups (group[r], -1: none) with their uplinks (B/s, 0: none
 * measured or not a bottleneck).  Rank 0 only. */
typedef struct {
	int n;
	double *alpha, *bw;        /* n*n, [src*n + dst] */
	int *group;                /* n */
	int ngroups;
	double *uplink;            /* ngroups */
	double *uplink_read;       /* ngroups: as measured, before equal readings were made one */
	double rank_bw;            /* a rank's own rate (B/s), 0: unknown */
	double t_ping, t_pair, t_uplink;   /* seconds rank 0 spent in steps 1, 2 and 4 (probe.c) */
} rt_probe_result;
#define RT_PROBE_SAME_UPLINK 0.15   /* uplinks this close to their median are one rate (probe.c, step 4) */
/* Probe (coll_probe's measurements) into res on rank 0; other ranks get
 * res->n = 0.  Collective; runs with the identity order whatever c's. */
int rt_probe(coll_comm *c, const coll_probe_config *cfg, rt_probe_result *res);
void rt_probe_free(rt_probe_result *res);
/* The host's shared resources (probe.c, "The host"; linkmodel.h, "One
 * host"): on rank 0 the memory bandwidth of min(n, cores) ranks copying
 * at once (B/s), one core's fp32 sum rate (B/s) and the cores rank 0 may
 * run on; 0 elsewhere.  Collective; for ranks that share one host. */
int rt_probe_host(coll_comm *c, double *mem_bw, double *reduce_bw, int *cores);
#define RT_PROBE_HOST_BYTES (8u << 20)   /* bytes each copier copies per pass */
#define RT_PROBE_HOST_REPS 4
#define RT_PROBE_SHM_REPS 16   /* rt_probe: exchanges per pair at least, over shm */
/* Broadcast len bytes from rank 0 over the communicator's transport (a
 * binomial tree plan).  Collective. */
int rt_probe_bcast(coll_comm *c, void *buf, size_t len);

/* --- reduce.c ------------------------------------------------------------- */
/* dst[i] = dst[i] OP src[i] (buffers must not overlap). */
void rt_reduce2(void *dst, const void *src, size_t n, coll_dtype dt, coll_op op);
/* dst[i] = a[i] OP b[i] (dst may not overlap a or b). */
void rt_reduce3(void *dst, const void *a, const void *b, size_t n, coll_dtype dt, coll_op op);
/* The same written with non-temporal stores (see reduce.c): for results
 * nothing reads again soon; plain where the CPU has none. */
void rt_reduce3_nt(void *dst, const void *a, const void *b, size_t n, coll_dtype dt, coll_op op);
void rt_copy_nt(void *dst, const void *src, size_t len);
float rt_half_to_float(uint16_t h);
uint16_t rt_float_to_half(float f);
float rt_bf16_to_float(uint16_t h);
uint16_t rt_float_to_bf16(float f);

#endif
