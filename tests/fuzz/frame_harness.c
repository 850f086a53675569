/*
 * frame_harness.c - fuzz harness (tests/fuzz/run.sh "frames"): a rank fed
 * arbitrary bytes by a peer.
 *
 *   fuzz_frames FILE                  exit 0 when the runtime reports an
 *                                     error cleanly (printed); a crash, a
 *                                     hang or a sanitizer report is a finding
 *   fuzz_frames --capture MODE OUT [raw]
 *                                     write OUT: a seed for mode byte MODE
 *                                     (2..255, after the handshake) holding
 *                                     the frames a real rank 0 sends (raw:
 *                                     as RAW records, header and MAC too)
 *
 * Everything runs the real code: a real 2-rank job over the tcp transport
 * on 127.0.0.1, both ranks threads of this process (fz.c), so an
 * execution leaves no process behind and every socket dies with it.  The
 * rank under test is rank 1 in every mode but 0, where it is rank 0.  The
 * first byte of FILE, the mode byte m, chooses what the bytes after it are:
 *
 *   m & 3 == 0   before the handshake, a stranger: it connects to rank 0's
 *                rendezvous port (m & 4: to its transport listener
 *                instead) while the job boots, writes the bytes (a PROOF
 *                is 48 of them: auth.c) and half-closes.  Rank 1 then
 *                joins and the job runs one allreduce: it must start and
 *                finish as if no stranger had come (tests/fault.test,
 *                fault-3.x), so any error but a timeout aborts.
 *   m & 3 == 1   before the handshake, an impostor: rank 1 dials the
 *                rendezvous and finds the harness there, which answers
 *                with the bytes (HELLO, VERDICT: auth.c) and half-closes.
 *                Rank 1 must fail: coll_init succeeding without anyone
 *                proving the secret aborts.  COLL_BOOT_TIMEOUT is 0.3 s
 *                here, since rank 1 dials again until then when the
 *                connection closes mid-handshake.
 *   m & 3 == 2   after a valid handshake: the job is up, and rank 0's end
 *                of the link is the harness's.  The bytes are records,
 *                written in order into the link before rank 1 makes its
 *                calls, then the link is half-closed (so rank 1 sees EOF
 *                once it wants more than there is):
 *                  tag % 3 == 0  RAW   u16le len, bytes: written into the
 *                                      socket as they are
 *                  tag % 3 == 1  DATA  u16le len, bytes: the body of a DATA
 *                                      frame sent by rank 0's real transport
 *                                      (tcp.c frames it, and seals it with
 *                                      COLL_AUTH=mac)
 *                  tag % 3 == 2  ABORT u8 code, u8 len, text: rank 0's
 *                                      transport aborts with that code and
 *                                      text (then nothing more is written)
 *                A length beyond the input takes what is left.  Rank 1
 *                then makes up to 3 calls of one collective: (m >> 2) & 7
 *                picks it from `calls` below (7: allreduce by size under
 *                `straggler auto` with a detection window of one call, so
 *                the straggler a header names is acted on at once),
 *                (m >> 5) & 3 the dtype, m & 128 the op (max, else sum).
 *   m & 3 == 3   the same with COLL_AUTH=mac on both ranks, so that DATA
 *                and ABORT frames pass the integrity check and RAW bytes
 *                meet it.
 *
 * Deadlines keep every execution short: COLL_TIMEOUT is 2 s, the boot
 * 5 s, and neither is reached unless something is wrong; a typical
 * execution takes a few milliseconds.
 *
 * --capture runs the same job with a real rank 0 making the same calls,
 * its link to rank 1 relayed through a socketpair (dup2 onto the fd its
 * transport holds) so that the harness sees every byte it writes, and
 * writes those frames as DATA and ABORT records: seeds in which rank 1's
 * calls all succeed (tests/fuzz/seeds.sh makes the corpus with it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fz.h"
#include "rt.h"
#include "rt_test.h"

#define MAX_INPUT (64 * 1024)   /* fits the link's socket buffers: writing it never waits for rank 1 */
#define MAX_HS_INPUT 4096
#define NCALLS 3
#define COUNT 6                 /* elements per unit of every call */

enum { REC_RAW, REC_DATA, REC_ABORT };

/* The calls of modes 2 and 3, (m >> 2) & 7.  Roots are chosen so that
 * rank 1 receives from rank 0, the peer the bytes come from: rank 0
 * broadcasts, rank 1 is the root of the reduce. */
static const struct {
	coll_kind kind;
	const char *algo;   /* NULL: by size */
	int root;
} calls[8] = {
	{COLL_ALLREDUCE, "ring", 0},  {COLL_ALLREDUCE, "tree", 0},  {COLL_REDUCE_SCATTER, "ring", 0},
	{COLL_ALLGATHER, "ring", 0},  {COLL_BROADCAST, "chain", 0}, {COLL_REDUCE, "chain", 1},
	{COLL_ALLTOALL, "bruck", 0},  {COLL_ALLREDUCE, NULL, 0},
};
static const coll_dtype dtypes[4] = {COLL_FLOAT32, COLL_FLOAT16, COLL_INT64, COLL_UINT8};

/* --- the job's plans ---------------------------------------------------- */

typedef struct {
	coll_plan_set *set;
	coll_algo **algos;
	int nalgos;
	coll_algo *sar;
	const coll_algo **all;
	coll_crit crit[1];
} plans;

/* The test plan set for 2 ranks (tests/unit/rt_plans.c); with strag, plus
 * "sar", an allreduce whose role 1 is a straggler role, and `straggler
 * auto` with a critical delay of 0: a detected straggler gets it. */
static int plans_make(plans *p, int strag)
{
	memset(p, 0, sizeof *p);
	coll_plan_set *base = rtt_plan_set(2, &p->algos, &p->nalgos);
	coll_plan_set_free(base);
	static const coll_xfer sar[] = {{0, 0, 1, 0, 1}, {1, 1, 0, 0, 0}};
	p->sar = coll_algo_build("sar", COLL_ALLREDUCE, 2, 1, 0, sar, 2);
	p->all = calloc((size_t)p->nalgos + 1, sizeof *p->all);
	if (!p->sar || !p->all)
		return -1;
	p->sar->straggler = 2;
	for (int i = 0; i < p->nalgos; i++)
		p->all[i] = p->algos[i];
	int na = p->nalgos;
	if (strag)
		p->all[na++] = p->sar;
	static const coll_choice ch[] = {{COLL_ALLREDUCE, COLL_BYTES_MAX, "ring"}};
	p->set = coll_plan_set_build("frames", 2, p->all, na, ch, 1);
	if (!p->set)
		return -1;
	if (strag) {
		p->crit[0] = (coll_crit){COLL_BYTES_MAX, 0.0};
		p->set->straggler = COLL_STRAGGLER_AUTO;
		p->set->crit = p->crit;
		p->set->ncrit = 1;
	}
	return 0;
}

static void plans_free(plans *p)
{
	coll_plan_set_free(p->set);
	for (int i = 0; i < p->nalgos; i++)
		coll_algo_free(p->algos[i]);
	free(p->algos);
	coll_algo_free(p->sar);
	free(p->all);
}

/* --- calls ---------------------------------------------------------------- */

/* Up to NCALLS calls of mode m's collective on c; the first failure ends
 * them.  Returns the last result. */
static coll_result make_calls(coll_comm *c, int m, const char *who)
{
	int k = (m >> 2) & 7;
	coll_dtype dt = dtypes[(m >> 5) & 3];
	coll_op op = m & 128 ? COLL_MAX : COLL_SUM;
	uint8_t sb[1024], rb[1024];   /* 4 units (alltoall on 2 ranks) x COUNT x 8 bytes, twice over */
	coll_result rc = COLL_OK;
	for (int i = 0; i < NCALLS && rc == COLL_OK; i++) {
		memset(sb, 0x11 * (coll_rank(c) + 1), sizeof sb);
		memset(rb, 0, sizeof rb);
		rc = coll_collective(c, calls[k].kind, calls[k].algo, sb, rb, COUNT, dt, op, calls[k].root);
		printf("%s: call %d: %s %s: %s%s%s\n", who, i + 1, coll_kind_name(calls[k].kind),
		       calls[k].algo ? calls[k].algo : "(by size)", coll_strerror(rc), rc ? ": " : "",
		       rc ? coll_last_error(c) : "");
	}
	return rc;
}

typedef struct {
	coll_comm *c;
	int m;
	coll_result rc;
} calls_arg;

static void *calls_thread(void *arg)
{
	calls_arg *a = arg;
	a->rc = make_calls(a->c, a->m, "rank 0");
	return NULL;
}

/* --- sockets -------------------------------------------------------------- */

static void sleep_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

static int port_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)ss)->sin_port) : -1;
}

/* Rank 0's end of its link to rank 1 (both are ours): the connected socket
 * whose local port is rank 0's transport listener's, as every link
 * accepted there has.  -1 when none. */
static int link_fd(const coll_comm *c0)
{
	int want = port_of(&c0->boot.addrs[0]);
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_storage l, p;
		socklen_t ll = sizeof l, pl = sizeof p;
		int acc = 0;
		socklen_t al = sizeof acc;
		if (getsockname(fd, (struct sockaddr *)&l, &ll) == 0 && port_of(&l) == want &&
		    getpeername(fd, (struct sockaddr *)&p, &pl) == 0 &&
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) == 0 && !acc)
			return fd;
	}
	return -1;
}

/* A listening TCP socket of ours on 127.0.0.1 other than port `not`
 * (rank 0's transport listener while it boots); 0 when none yet. */
static int other_listener(int not)
{
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_storage l;
		socklen_t ll = sizeof l;
		int acc = 0;
		socklen_t al = sizeof acc;
		if (getsockname(fd, (struct sockaddr *)&l, &ll) == 0 && port_of(&l) > 0 && port_of(&l) != not &&
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) == 0 && acc)
			return port_of(&l);
	}
	return 0;
}

/* A connection to 127.0.0.1:port, trying for up to 2 s (-1: none). */
static int dial(int port)
{
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < 400; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
			return fd;
		close(fd);
		sleep_ms(5);
	}
	return -1;
}

/* Write all of buf to fd (blocking or not) within 1 s; 0 or -1. */
static int put(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	for (int spins = 0; len && spins < 100;) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w, len -= (size_t)w;
		} else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			struct pollfd pf = {fd, POLLOUT, 0};
			poll(&pf, 1, 10);
			spins++;
		} else {
			return -1;
		}
	}
	return len ? -1 : 0;
}

/* Read and drop what fd sends until it closes or ms pass. */
static void drain(int fd, int ms)
{
	char buf[4096];
	for (int left = ms; left > 0; left -= 10) {
		struct pollfd pf = {fd, POLLIN, 0};
		if (poll(&pf, 1, 10) > 0 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) == 0)
			return;
	}
}

/* --- mode 0: a stranger at rank 0's ports while the job boots ----------------- */

static int stranger(const uint8_t *in, size_t len, int m)
{
	plans p;
	fz_rank rk[2];
	int port = fz_free_port(), fd = -1;
	if (!port || plans_make(&p, 0))
		return printf("setup failed\n"), 0;
	for (int r = 0; r < 2; r++)
		fz_rank_init(&rk[r], r, 2, port, p.set, 2.0);
	fz_rank_start(&rk[0]);
	fz_wait_listen(port, 2000);
	int at = port;
	if (m & 4)   /* rank 0's transport listener: it opens it right after the rendezvous's */
		for (int i = 0; i < 400 && (at = other_listener(port)) == 0; i++)
			sleep_ms(5);
	if (at)
		fd = dial(at);
	if (fd >= 0) {
		put(fd, in, len < MAX_HS_INPUT ? len : MAX_HS_INPUT);
		shutdown(fd, SHUT_WR);
		/* the rendezvous serves the stranger before rank 1 comes; the
		 * transport listener only once rank 1 has joined */
		if (!(m & 4))
			drain(fd, 1000);
	}
	printf("stranger at %s port: %s\n", m & 4 ? "transport" : "rendezvous", fd >= 0 ? "connected" : "could not connect");
	fz_rank_start(&rk[1]);
	if (fd >= 0 && (m & 4))
		drain(fd, 2000);
	for (int r = 0; r < 2; r++)
		fz_rank_join(&rk[r]);
	if (fd >= 0)
		close(fd);
	coll_result rc = rk[0].rc ? rk[0].rc : rk[1].rc;
	const char *why = rk[0].rc ? rk[0].err : rk[1].err;
	if (rc == COLL_OK) {
		calls_arg a = {rk[0].comm, 0, COLL_OK};
		pthread_t th;
		if (pthread_create(&th, NULL, calls_thread, &a) == 0) {
			coll_result r1 = make_calls(rk[1].comm, 0, "rank 1");
			pthread_join(th, NULL);
			rc = a.rc ? a.rc : r1;
			why = a.rc ? coll_last_error(rk[0].comm) : coll_last_error(rk[1].comm);
		}
	}
	printf("job: %s%s%s\n", coll_strerror(rc), rc ? ": " : "", rc ? why : "");
	if (rc && rc != COLL_ERR_TIMEOUT) {
		/* a stranger without the secret changed how the job went */
		fprintf(stderr, "fuzz_frames: a stranger broke the job: %s: %s\n", coll_strerror(rc), why);
		abort();
	}
	for (int r = 0; r < 2; r++)
		fz_rank_end(&rk[r]);
	plans_free(&p);
	return 0;
}

/* --- mode 1: an impostor in rank 0's place ------------------------------------ */

static int impostor(const uint8_t *in, size_t len)
{
	plans p;
	fz_rank r1;
	struct sockaddr_in a = {0};
	socklen_t al = sizeof a;
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fd = -1;
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 4) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al) || plans_make(&p, 0)) {
		if (lfd >= 0)
			close(lfd);
		return printf("setup failed\n"), 0;
	}
	/* rank 1 dials again while the boot lasts whenever the connection
	 * closes mid-handshake: keep that short */
	setenv("COLL_BOOT_TIMEOUT", "0.3", 1);
	fz_rank_init(&r1, 1, 2, ntohs(a.sin_port), p.set, 2.0);
	fz_rank_start(&r1);
	struct pollfd pf = {lfd, POLLIN, 0};
	if (poll(&pf, 1, 2000) > 0)
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	close(lfd);   /* one connection: later dials are refused */
	if (fd >= 0) {
		put(fd, in, len < MAX_HS_INPUT ? len : MAX_HS_INPUT);
		shutdown(fd, SHUT_WR);
	}
	fz_rank_join(&r1);
	if (fd >= 0)
		close(fd);
	printf("rank 1: coll_init: %s%s%s\n", coll_strerror(r1.rc), r1.rc ? ": " : "", r1.rc ? r1.err : "");
	if (r1.rc == COLL_OK) {
		fprintf(stderr, "fuzz_frames: rank 1 joined a job whose rank 0 never proved the secret\n");
		abort();
	}
	fz_rank_end(&r1);
	plans_free(&p);
	return 0;
}

/* --- modes 2 and 3: a peer after the handshake ------------------------------ */

/* Send one DATA frame with body b[0..len) through rank 0's transport and
 * move it out.  0 when it went, -1 when it was refused or is stuck (then
 * req stays queued on the transport until coll_finalize). */
static int send_data(coll_comm *c0, rt_req *req, const uint8_t *b, size_t len)
{
	rt_tp *tp = c0->tp;
	memset(req, 0, sizeof *req);
	req->peer = 1;
	req->iov[0] = (struct iovec){(void *)b, len};
	req->iovcnt = 1;
	if (tp->ops->post_send(tp, req) != COLL_OK)
		return printf("rank 0: post_send refused %zu bytes: %s\n", len, c0->err), 0;
	for (int i = 0; i < 200 && !req->done; i++)
		if (tp->ops->progress(tp, 10) != COLL_OK)
			break;
	return req->done ? 0 : -1;
}

/* Write the records of in[0..len) into rank 0's link (fd) and half-close it. */
static void feed(coll_comm *c0, int fd, const uint8_t *in, size_t len)
{
	static rt_req req;   /* may stay queued on the transport: outlives this call */
	const uint8_t *p = in, *end = in + len;
	int nrec = 0;
	while (p < end) {
		int tag = *p++ % 3;
		size_t l;
		if (tag == REC_ABORT) {
			int code = p < end ? *p++ : 0;
			l = p < end ? *p++ : 0;
			if (l > (size_t)(end - p))
				l = (size_t)(end - p);
			snprintf(c0->err, sizeof c0->err, "%.*s", (int)l, (const char *)p);
			printf("record %d: abort, code %d, %zu bytes of text\n", nrec, code, l);
			c0->tp->ops->abort(c0->tp, code);   /* it half-closes the link itself */
			return;
		}
		l = p + 1 < end ? (size_t)p[0] | (size_t)p[1] << 8 : 0;
		p += p + 1 < end ? 2 : (size_t)(end - p);
		if (l > (size_t)(end - p))
			l = (size_t)(end - p);
		printf("record %d: %s, %zu bytes\n", nrec++, tag == REC_RAW ? "raw" : "data", l);
		if (tag == REC_RAW ? put(fd, p, l) : send_data(c0, &req, p, l))
			break;
		p += l;
	}
	shutdown(fd, SHUT_WR);
}

/* The 2-rank job of modes 2 and 3 (and --capture) for mode byte m:
 * COLL_AUTH=mac for m & 1, a one-call straggler window for the `straggler
 * auto` calls, both ranks booted.  Returns rank 0's fd of its link to rank
 * 1, -1 when the job did not start (the ranks say why; end them), or -2
 * when nothing could be set up (nothing to end). */
static int job_up(int m, plans *p, fz_rank rk[2])
{
	int port = fz_free_port();
	if (m & 1)
		setenv("COLL_AUTH", "mac", 1);
	if (((m >> 2) & 7) == 7)
		setenv("COLL_STRAGGLER_WINDOW", "1", 1);
	if (!port || plans_make(p, ((m >> 2) & 7) == 7))
		return -2;
	for (int r = 0; r < 2; r++) {
		fz_rank_init(&rk[r], r, 2, port, p->set, 2.0);
		fz_rank_start(&rk[r]);
		if (r == 0)
			fz_wait_listen(port, 2000);
	}
	for (int r = 0; r < 2; r++)
		fz_rank_join(&rk[r]);
	return rk[0].comm && rk[1].comm ? link_fd(rk[0].comm) : -1;
}

static int peer(const uint8_t *in, size_t len, int m)
{
	plans p;
	fz_rank rk[2];
	int fd = job_up(m, &p, rk);
	if (fd == -2)
		return printf("setup failed\n"), 0;
	if (fd < 0) {
		/* not a finding: the job could not start (a port taken meanwhile, a loaded machine) */
		printf("job did not start: %s %s\n", rk[0].err, rk[1].err);
	} else {
		feed(rk[0].comm, fd, in, len);
		make_calls(rk[1].comm, m, "rank 1");
	}
	for (int r = 1; r >= 0; r--)
		fz_rank_end(&rk[r]);
	plans_free(&p);
	return 0;
}

/* --- --capture: a real rank 0's frames as a seed ---------------------------- */

typedef struct {
	int in, out;          /* rank 0's side (socketpair) and the real link to rank 1 */
	atomic_int stop;
	uint8_t *rec;         /* what rank 0 wrote */
	size_t len, cap;
} relay;

static void *relay_thread(void *arg)
{
	relay *r = arg;
	char buf[65536];
	for (int idle = 0; !(atomic_load(&r->stop) && idle > 2);) {
		struct pollfd pf[2] = {{r->in, POLLIN, 0}, {r->out, POLLIN, 0}};
		if (poll(pf, 2, 20) <= 0) {
			idle++;
			continue;
		}
		idle = 0;
		for (int i = 0; i < 2; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP)))
				continue;
			ssize_t k = recv(pf[i].fd, buf, sizeof buf, MSG_DONTWAIT);
			if (k <= 0)
				continue;
			if (i == 0) {
				if (r->len + (size_t)k > r->cap) {
					uint8_t *t = realloc(r->rec, r->cap = (r->len + (size_t)k) * 2);
					if (!t)
						abort();
					r->rec = t;
				}
				memcpy(r->rec + r->len, buf, (size_t)k);
				r->len += (size_t)k;
			}
			put(i == 0 ? r->out : r->in, buf, (size_t)k);
		}
	}
	return NULL;
}

/* The frames of stream s[0..len) ({u32 length, u32 type} body [8-byte MAC])
 * as records: DATA and ABORT, or with raw every frame as one RAW record. */
static void write_records(FILE *f, const uint8_t *s, size_t len, int mac, int raw)
{
	size_t o = 0;
	while (o + 8 <= len) {
		uint32_t fh[2];
		memcpy(fh, s + o, sizeof fh);
		o += 8;
		if (fh[0] > len - o)
			break;
		size_t whole = 8 + fh[0] + (mac ? 8 : 0);
		if (raw && whole <= 0xffff && whole - 8 <= len - o) {
			fputc(REC_RAW, f);
			fputc((int)(whole & 0xff), f);
			fputc((int)(whole >> 8), f);
			fwrite(s + o - 8, 1, whole, f);
		} else if (fh[1] == 1 && fh[0] <= 0xffff) {
			fputc(REC_DATA, f);
			fputc((int)(fh[0] & 0xff), f);
			fputc((int)(fh[0] >> 8), f);
			fwrite(s + o, 1, fh[0], f);
		} else if (fh[1] == 2 && fh[0] >= 8) {
			int32_t code;
			memcpy(&code, s + o + 4, 4);
			size_t tl = fh[0] - 8 > 255 ? 255 : fh[0] - 8;
			fputc(REC_ABORT, f);
			fputc(code & 0xff, f);
			fputc((int)tl, f);
			fwrite(s + o + 8, 1, tl, f);
		}
		o += fh[0] + (mac ? 8 : 0);
	}
}

static int capture(int m, const char *out, int raw)
{
	plans p;
	fz_rank rk[2];
	int sp[2];
	if (m < 2 || m > 255 || (m & 3) < 2)
		return fprintf(stderr, "fuzz_frames: --capture needs a mode byte of 2..255 with bit 1 set\n"), 2;
	int fd = job_up(m, &p, rk);
	if (fd == -2)
		return fprintf(stderr, "fuzz_frames: setup failed\n"), 1;
	if (fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
		return fprintf(stderr, "fuzz_frames: the job did not start: %s %s\n", rk[0].err, rk[1].err), 1;
	/* rank 0's transport keeps its fd number: put our socketpair's end
	 * there (non-blocking, like the link it replaces) */
	relay r = {sp[1], dup(fd), 0, NULL, 0, 0};
	rt_set_nonblock(sp[0], 1);
	dup2(sp[0], fd);
	close(sp[0]);
	pthread_t rt, th;
	calls_arg a = {rk[0].comm, m, COLL_OK};
	pthread_create(&rt, NULL, relay_thread, &r);
	pthread_create(&th, NULL, calls_thread, &a);
	coll_result r1 = make_calls(rk[1].comm, m, "rank 1");
	pthread_join(th, NULL);
	atomic_store(&r.stop, 1);
	pthread_join(rt, NULL);
	FILE *f = fopen(out, "wb");
	if (!f)
		return fprintf(stderr, "fuzz_frames: %s: %s\n", out, strerror(errno)), 1;
	fputc(m, f);
	write_records(f, r.rec, r.len, m & 1, raw);
	fclose(f);
	for (int i = 1; i >= 0; i--)
		fz_rank_end(&rk[i]);
	close(r.in);
	close(r.out);
	free(r.rec);
	plans_free(&p);
	return a.rc || r1 ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	fz_clean_env(5);
	if ((argc == 4 || (argc == 5 && strcmp(argv[4], "raw") == 0)) && strcmp(argv[1], "--capture") == 0)
		return capture(atoi(argv[2]), argv[3], argc == 5);
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_frames FILE | fuzz_frames --capture MODE OUT [raw]\n");
		return 2;
	}
	size_t len;
	uint8_t *in = (uint8_t *)fz_read(argv[1], MAX_INPUT, &len);
	if (!in)
		return 0;
	int m = len ? in[0] : 0, rc;
	switch (m & 3) {
	case 0: rc = stranger(in + (len > 0), len - (len > 0), m); break;
	case 1: rc = impostor(in + 1, len - 1); break;
	default: rc = peer(in + 1, len - 1, m); break;
	}
	free(in);
	return rc;
}
