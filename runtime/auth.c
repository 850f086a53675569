/*
 * auth.c - proving knowledge of the shared secret on every connection.
 *
 * Every TCP connection libcollrt opens (bootstrap and transport links)
 * starts with a mutual challenge/response keyed by the job's secret:
 *
 *   server -> client  HELLO  magic, version, nonce_s[16]
 *   client -> server  PROOF  magic, rank, purpose, info, nonce_c[16],
 *                            mac_c = MAC(k, "C" nonce_s nonce_c rank purpose info jobid)
 *   server -> client  VERDICT status (0 ok, 1 refused),
 *                            mac_s = MAC(k, "S" nonce_c nonce_s rank purpose info jobid)
 *
 * k is derived from the secret with SipHash; MAC is 128 bits made of two
 * SipHash-2-4 values with different domain bytes.  Fresh random nonces on
 * both sides stop replay; the rank, purpose and info (the rendezvous sends
 * its COLL_NRANKS there) are bound into the MAC so a proof cannot be
 * reused for another link or altered.  Both ends then derive a session key
 * MAC(k, "K" ...) that keys COLL_AUTH=mac on the link (tcp.c).  This is an
 * access check and, with COLL_AUTH=mac, an integrity check: payload is
 * sent in clear, as with NCCL and Gloo.
 *
 * What the server can tell apart, and so what it may say: a connection
 * that never completes a PROOF, or sends bytes that are not one, is a
 * stranger (dropped, never reported); a PROOF that fails the MAC is
 * someone who speaks the protocol without the key -- a rank with another
 * COLL_SECRET, or anyone replaying the public format.  It is refused with
 * a verdict (so a misconfigured rank learns at once that its secret
 * differs), but a server never concludes that its own secret is wrong,
 * and never fails because of it: the caller only hears which rank the
 * proof claimed (a hint for its message if that rank never shows up).
 * The client trusts the address it dialled, so a refusal is the real
 * verdict of the peer it meant: "COLL_SECRET differs between us".
 *
 * Servers run every pending handshake at once (rt_hs_wait): one poll()
 * over the listener, the handshakes in progress and the caller's own
 * sockets, each handshake with its own deadline (COLL_HANDSHAKE_TIMEOUT,
 * default 3 s, counted from accept), so a silent, slow or garbage
 * connection costs nothing but its own slot.  At most HS_MAX are pending;
 * the oldest makes room for a newcomer.  A real peer whose handshake was
 * dropped (it was slower than the deadline, or pushed out) sees the
 * connection close before the verdict and dials again.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

/* --- SipHash-2-4 (Aumasson & Bernstein), 64-bit output --------------------- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                         \
	do {                                                                 \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);        \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                           \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                           \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);        \
	} while (0)

/* Little-endian 64-bit load; memcpy compiles to one load (a byte loop
 * here ran SipHash at 1.0 instead of 2.7 GB/s on the development VM). */
static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

void rt_sip_init(rt_sip *s, const uint8_t key[16])
{
	uint64_t k0 = load64(key), k1 = load64(key + 8);
	s->v[0] = 0x736f6d6570736575ULL ^ k0;
	s->v[1] = 0x646f72616e646f6dULL ^ k1;
	s->v[2] = 0x6c7967656e657261ULL ^ k0;
	s->v[3] = 0x7465646279746573ULL ^ k1;
	s->tail = 0;
	s->len = 0;
}

void rt_sip_update(rt_sip *s, const void *data, size_t len)
{
	const uint8_t *in = data;
	uint64_t v0 = s->v[0], v1 = s->v[1], v2 = s->v[2], v3 = s->v[3];
	size_t have = s->len & 7;
	s->len += len;
	/* finish the word a previous update left open */
	if (have) {
		while (have < 8 && len) {
			s->tail |= (uint64_t)*in++ << (8 * have++);
			len--;
		}
		if (have < 8)
			return;
		v3 ^= s->tail;
		SIPROUND;
		SIPROUND;
		v0 ^= s->tail;
		s->tail = 0;
	}
	for (; len >= 8; in += 8, len -= 8) {
		uint64_t m = load64(in);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; j < len; j++)
		s->tail |= (uint64_t)in[j] << (8 * j);
	s->v[0] = v0, s->v[1] = v1, s->v[2] = v2, s->v[3] = v3;
}

uint64_t rt_sip_final(const rt_sip *s)
{
	uint64_t v0 = s->v[0], v1 = s->v[1], v2 = s->v[2], v3 = s->v[3];
	uint64_t b = ((uint64_t)s->len << 56) | s->tail;
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t rt_siphash(const uint8_t key[16], const void *data, size_t len)
{
	rt_sip s;
	rt_sip_init(&s, key);
	rt_sip_update(&s, data, len);
	return rt_sip_final(&s);
}

void rt_auth_key(const char *secret, uint8_t key[16])
{
	static const uint8_t k0[16] = "coll-secret-key0", k1[16] = "coll-secret-key1";
	size_t n = secret ? strlen(secret) : 0;
	uint64_t a = rt_siphash(k0, secret ? secret : "", n), b = rt_siphash(k1, secret ? secret : "", n);
	for (int i = 0; i < 8; i++) {
		key[i] = (uint8_t)(a >> (8 * i));
		key[8 + i] = (uint8_t)(b >> (8 * i));
	}
}

int rt_random(void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t r = getrandom(p, len, 0);
		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		/* No entropy syscall: mix time and pid.  Good enough for nonces
		 * (they must not repeat, not be secret); callers that make keys
		 * refuse it (-1). */
		uint8_t k[16] = {0};
		int64_t t = rt_now_ns();
		memcpy(k, &t, 8);
		pid_t pid = getpid();
		memcpy(k + 8, &pid, sizeof pid);
		for (size_t i = 0; i < len; i++) {
			uint64_t h = rt_siphash(k, &i, sizeof i);
			p[i] = (uint8_t)h;
		}
		return -1;
	}
	return 0;
}

/* --- the handshake -------------------------------------------------------- */

#define AUTH_MAGIC 0x436f6c41u /* "CoLA" */
#define AUTH_VERSION 2

typedef struct { uint32_t magic, version; uint8_t nonce[16]; } hello_msg;
typedef struct { uint32_t magic, rank, purpose, info; uint8_t nonce[16]; uint8_t mac[16]; } proof_msg;
typedef struct { uint32_t magic, status; uint8_t mac[16]; } verdict_msg;

/* A 128-bit MAC of one handshake step: two SipHash-2-4 values that differ
 * in their last byte.  dom separates the client's proof ('C'), the
 * server's ('S') and the session key ('K'), so no value can stand in for
 * another. */
static void mac128(const uint8_t key[16], char dom, const uint8_t n1[16], const uint8_t n2[16], uint32_t rank,
                   uint32_t purpose, uint32_t info, uint64_t jobid, uint8_t out[16])
{
	uint8_t buf[1 + 16 + 16 + 4 + 4 + 4 + 8 + 1];
	size_t o = 0;
	buf[o++] = (uint8_t)dom;
	memcpy(buf + o, n1, 16), o += 16;
	memcpy(buf + o, n2, 16), o += 16;
	memcpy(buf + o, &rank, 4), o += 4;
	memcpy(buf + o, &purpose, 4), o += 4;
	memcpy(buf + o, &info, 4), o += 4;
	memcpy(buf + o, &jobid, 8), o += 8;
	buf[o] = 0;
	uint64_t a = rt_siphash(key, buf, o + 1);
	buf[o] = 1;
	uint64_t b = rt_siphash(key, buf, o + 1);
	memcpy(out, &a, 8);
	memcpy(out + 8, &b, 8);
}

/* Constant-time comparison of two MACs. */
static int mac_eq(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;
	for (int i = 0; i < 16; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

/* The session key of a connection: both ends derive it from the job key
 * and both nonces, so it is fresh per connection and known to nobody who
 * lacks the job key. */
static void session_key(const uint8_t key[16], const hello_msg *h, const proof_msg *p, uint64_t jobid,
                        uint8_t sess[16])
{
	mac128(key, 'K', h->nonce, p->nonce, p->rank, p->purpose, p->info, jobid, sess);
}

int rt_auth_client(coll_comm *c, int fd, const uint8_t key[16], int rank, int purpose, uint32_t info, uint64_t jobid,
                   int64_t deadline, const char *peer, uint8_t sess[16])
{
	hello_msg h;
	proof_msg p = {0};
	verdict_msg v;
	int rc = rt_read_full(c, fd, &h, sizeof h, deadline, peer);
	if (rc == COLL_OK && (h.magic != AUTH_MAGIC || h.version != AUTH_VERSION))
		return rt_err(c, COLL_ERR_PROTOCOL, "%s does not speak libcollrt's handshake (version %u; this is %d)", peer,
		              h.magic == AUTH_MAGIC ? h.version : 0, AUTH_VERSION);
	p.magic = AUTH_MAGIC;
	p.rank = (uint32_t)rank;
	p.purpose = (uint32_t)purpose;
	p.info = info;
	rt_random(p.nonce, 16);
	mac128(key, 'C', h.nonce, p.nonce, p.rank, p.purpose, p.info, jobid, p.mac);
	if (rc || (rc = rt_write_full(c, fd, &p, sizeof p, deadline, peer)) ||
	    (rc = rt_read_full(c, fd, &v, sizeof v, deadline, peer))) {
		/* A server drops a handshake that takes longer than its
		 * per-connection deadline, and never says "refused" by closing:
		 * the caller may try again. */
		if (rc == COLL_ERR_PEER)
			return rt_err(c, COLL_ERR_PEER, "%s closed the connection during the handshake", peer);
		return rc;
	}
	if (v.magic != AUTH_MAGIC)
		return rt_err(c, COLL_ERR_PROTOCOL, "%s sent a malformed handshake verdict", peer);
	if (v.status != 0)
		return rt_err(c, COLL_ERR_AUTH, "%s refused this rank's proof of the secret: COLL_SECRET differs between the "
		              "two ranks", peer);
	uint8_t want[16];
	mac128(key, 'S', p.nonce, h.nonce, p.rank, p.purpose, p.info, jobid, want);
	if (!mac_eq(want, v.mac))
		return rt_err(c, COLL_ERR_AUTH, "%s accepted this rank but cannot prove the secret itself: it is not a rank "
		              "of this job (or COLL_SECRET differs)", peer);
	session_key(key, &h, &p, jobid, sess);
	return COLL_OK;
}

/* --- the server side: every pending handshake at once ---------------------- */

/* A handshake in progress on the server side. */
struct rt_hs_conn {
	int fd;
	int state;             /* HS_HELLO: writing hello; HS_PROOF: reading the proof; HS_VERDICT: writing it */
	int ok;                /* the verdict admits the peer */
	size_t off;            /* bytes of the current message moved */
	int64_t deadline;      /* absolute, rt_now_ms */
	hello_msg h;
	proof_msg p;
	verdict_msg v;
};
enum { HS_HELLO, HS_PROOF, HS_VERDICT };

/* Pending handshakes at most; a stranger opening more only pushes out its
 * own oldest connections (a real peer whose handshake is dropped
 * connects again, see rt_auth_client). */
#define HS_MAX 64

void rt_hs_start(rt_hs_server *s, coll_comm *c, int lfd, const uint8_t key[16], int purpose, uint64_t jobid)
{
	memset(s, 0, sizeof *s);
	s->c = c;
	s->lfd = lfd;
	s->key = key;
	s->purpose = purpose;
	s->jobid = jobid;
	double t = rt_env_double("COLL_HANDSHAKE_TIMEOUT", 3.0);
	s->hs_ms = t > 0 ? (int64_t)(t * 1000) : 3000;
}

void rt_hs_stop(rt_hs_server *s)
{
	for (int i = 0; i < s->nconn; i++)
		close(s->conn[i].fd);
	free(s->conn);
	free(s->pf);
	s->conn = NULL;
	s->pf = NULL;
	s->nconn = 0;
}

/* Forget pending handshake i; close its socket unless the caller keeps it. */
static void hs_remove(rt_hs_server *s, int i, int keep_fd)
{
	if (!keep_fd)
		close(s->conn[i].fd);
	memmove(&s->conn[i], &s->conn[i + 1], (size_t)(s->nconn - i - 1) * sizeof *s->conn);
	s->nconn--;
}

/* Move pending handshake i on as far as its socket allows.  Returns
 * RT_HS_PEER or RT_HS_REFUSED (filling *peer) when it ended in a way the
 * caller hears about, 0 otherwise (still pending, or dropped). */
static int hs_step(rt_hs_server *s, int i, rt_hs_peer *peer)
{
	struct rt_hs_conn *k = &s->conn[i];
	for (;;) {
		char *buf = k->state == HS_HELLO ? (char *)&k->h : k->state == HS_PROOF ? (char *)&k->p : (char *)&k->v;
		size_t len = k->state == HS_HELLO ? sizeof k->h : k->state == HS_PROOF ? sizeof k->p : sizeof k->v;
		ssize_t r = k->state == HS_PROOF ? recv(k->fd, buf + k->off, len - k->off, MSG_DONTWAIT)
		                                 : send(k->fd, buf + k->off, len - k->off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		if (r <= 0) {   /* closed or reset: a stranger, or a peer that gave up (it retries) */
			s->dropped++;
			hs_remove(s, i, 0);
			return 0;
		}
		if ((k->off += (size_t)r) < len)
			continue;
		k->off = 0;
		if (k->state == HS_HELLO) {
			k->state = HS_PROOF;
			continue;
		}
		if (k->state == HS_VERDICT) {
			int ok = k->ok;
			peer->rank = k->p.rank;
			peer->info = k->p.info;
			peer->fd = ok ? k->fd : -1;
			if (ok)
				session_key(s->key, &k->h, &k->p, s->jobid, peer->sess);
			hs_remove(s, i, ok);
			return ok ? RT_HS_PEER : RT_HS_REFUSED;
		}
		/* The proof is in.  Garbage, or another purpose (a transport
		 * link dialling the rendezvous): dropped without an answer.  The
		 * protocol, but not the key: refused with a verdict (a rank with
		 * another COLL_SECRET hears why), and the caller is told which
		 * rank the proof claimed -- it may be anyone who can send 48
		 * bytes, so that is a hint for messages, never a failure. */
		if (k->p.magic != AUTH_MAGIC || k->p.purpose != (uint32_t)s->purpose) {
			s->dropped++;
			hs_remove(s, i, 0);
			return 0;
		}
		uint8_t want[16];
		mac128(s->key, 'C', k->h.nonce, k->p.nonce, k->p.rank, k->p.purpose, k->p.info, s->jobid, want);
		k->ok = mac_eq(want, k->p.mac);
		k->v.magic = AUTH_MAGIC;
		k->v.status = k->ok ? 0 : 1;
		if (k->ok)
			mac128(s->key, 'S', k->p.nonce, k->h.nonce, k->p.rank, k->p.purpose, k->p.info, s->jobid, k->v.mac);
		else
			s->refused++;
		k->state = HS_VERDICT;
	}
}

/* Take the connections waiting on the listener, each with its own
 * deadline, and greet them. */
static int hs_accept(rt_hs_server *s, rt_hs_peer *peer, int *event)
{
	for (int taken = 0; taken < HS_MAX; taken++) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
				return COLL_OK;
			if ((errno == EMFILE || errno == ENFILE) && s->nconn > 0) {
				s->dropped++;
				hs_remove(s, 0, 0);   /* the oldest pending one makes room */
				continue;
			}
			return rt_err(s->c, COLL_ERR_SYSTEM, "accept: %s", strerror(errno));
		}
		rt_tune_socket(fd);
		if (!s->conn && !(s->conn = calloc(HS_MAX, sizeof *s->conn))) {
			close(fd);
			return rt_err(s->c, COLL_ERR_NOMEM, "out of memory");
		}
		if (s->nconn == HS_MAX) {
			s->dropped++;
			hs_remove(s, 0, 0);
		}
		struct rt_hs_conn *k = &s->conn[s->nconn++];
		memset(k, 0, sizeof *k);
		k->fd = fd;
		k->state = HS_HELLO;
		k->deadline = rt_now_ms() + s->hs_ms;
		k->h.magic = AUTH_MAGIC;
		k->h.version = AUTH_VERSION;
		rt_random(k->h.nonce, 16);
		if ((*event = hs_step(s, s->nconn - 1, peer)))
			return COLL_OK;
	}
	return COLL_OK;
}

int rt_hs_wait(rt_hs_server *s, int64_t until, struct pollfd *extra, int nextra, int *event, rt_hs_peer *peer)
{
	*event = 0;
	int need = nextra + 1 + HS_MAX;
	if (s->pfcap < need) {
		free(s->pf);
		if (!(s->pf = malloc(sizeof *s->pf * (size_t)need)))
			return rt_err(s->c, COLL_ERR_NOMEM, "out of memory");
		s->pfcap = need;
	}
	for (;;) {
		int64_t now = rt_now_ms(), wake = until;
		for (int i = 0; i < s->nconn; i++) {
			if (s->conn[i].deadline <= now) {   /* silent or slow: costs nobody more than this */
				s->dropped++;
				hs_remove(s, i--, 0);
			} else if (s->conn[i].deadline < wake) {
				wake = s->conn[i].deadline;
			}
		}
		if (now >= until) {
			*event = RT_HS_TIME;
			return COLL_OK;
		}
		struct pollfd *pf = s->pf;
		int np = 0;
		for (int j = 0; j < nextra; j++)
			pf[np++] = (struct pollfd){extra[j].fd, extra[j].events, 0};
		int lpos = np;
		if (s->lfd >= 0)
			pf[np++] = (struct pollfd){s->lfd, POLLIN, 0};
		int cpos = np;
		for (int i = 0; i < s->nconn; i++)
			pf[np++] = (struct pollfd){s->conn[i].fd, s->conn[i].state == HS_PROOF ? POLLIN : POLLOUT, 0};
		int64_t ms = wake - now;
		int k = poll(pf, (nfds_t)np, ms > 1000000 ? 1000000 : (int)ms);
		if (k < 0 && errno != EINTR)
			return rt_err(s->c, COLL_ERR_SYSTEM, "poll: %s", strerror(errno));
		if (k <= 0)
			continue;
		/* Pending handshakes first (indices shift as they end: walk back). */
		for (int i = s->nconn - 1; i >= 0; i--)
			if (pf[cpos + i].revents && (*event = hs_step(s, i, peer)))
				return COLL_OK;
		int any = 0;
		for (int j = 0; j < nextra; j++)
			any |= (extra[j].revents = pf[j].revents) != 0;
		if (any) {
			*event = RT_HS_EXTRA;
			return COLL_OK;
		}
		if (s->lfd >= 0 && pf[lpos].revents) {
			int rc = hs_accept(s, peer, event);
			if (rc || *event)
				return rc;
		}
	}
}
