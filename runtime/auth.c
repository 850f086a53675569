/*
 * auth.c - proving knowledge of the shared secret on every connection.
 *
 * Every TCP connection libcollrt opens (bootstrap and transport links)
 * starts with a mutual challenge/response keyed by the job's secret:
 *
 *   server -> client  HELLO  magic, version, nonce_s[16]
 *   client -> server  PROOF  magic, rank, purpose, nonce_c[16],
 *                            mac_c = MAC(k, "C" nonce_s nonce_c rank purpose jobid)
 *   server -> client  VERDICT status (0 ok, 1 refused),
 *                            mac_s = MAC(k, "S" nonce_c nonce_s rank purpose jobid)
 *
 * k is derived from the secret with SipHash; MAC is 128 bits made of two
 * SipHash-2-4 values with different domain bytes.  Fresh random nonces on
 * both sides stop replay; the rank and purpose are bound into the MAC so a
 * proof cannot be reused for another link.  This is an access check, not
 * encryption: payload is sent in clear, as with NCCL and Gloo.
 */
#include <errno.h>
#include <stdio.h>
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

static uint64_t load64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t rt_siphash(const uint8_t key[16], const void *data, size_t len)
{
	const uint8_t *in = data;
	uint64_t k0 = load64(key), k1 = load64(key + 8);
	uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
	uint64_t b = (uint64_t)len << 56;
	size_t i, full = len & ~(size_t)7;
	for (i = 0; i < full; i += 8) {
		uint64_t m = load64(in + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; j < (len & 7); j++)
		b |= (uint64_t)in[full + j] << (8 * j);
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

void rt_random(void *buf, size_t len)
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
		/* No entropy syscall: mix time and pid (only used as nonces). */
		uint8_t k[16] = {0};
		int64_t t = rt_now_ns();
		memcpy(k, &t, 8);
		pid_t pid = getpid();
		memcpy(k + 8, &pid, sizeof pid);
		for (size_t i = 0; i < len; i++) {
			uint64_t h = rt_siphash(k, &i, sizeof i);
			p[i] = (uint8_t)h;
		}
		return;
	}
}

/* --- the handshake -------------------------------------------------------- */

#define AUTH_MAGIC 0x436f6c41u /* "CoLA" */
#define AUTH_VERSION 1

typedef struct { uint32_t magic, version; uint8_t nonce[16]; } hello_msg;
typedef struct { uint32_t magic, rank, purpose, pad; uint8_t nonce[16]; uint8_t mac[16]; } proof_msg;
typedef struct { uint32_t magic, status; uint8_t mac[16]; } verdict_msg;

static void mac128(const uint8_t key[16], char dom, const uint8_t n1[16], const uint8_t n2[16], uint32_t rank,
                   uint32_t purpose, uint64_t jobid, uint8_t out[16])
{
	uint8_t buf[1 + 16 + 16 + 4 + 4 + 8 + 1];
	size_t o = 0;
	buf[o++] = (uint8_t)dom;
	memcpy(buf + o, n1, 16), o += 16;
	memcpy(buf + o, n2, 16), o += 16;
	memcpy(buf + o, &rank, 4), o += 4;
	memcpy(buf + o, &purpose, 4), o += 4;
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

int rt_auth_client(coll_comm *c, int fd, const uint8_t key[16], int rank, int purpose, uint64_t jobid,
                   int64_t deadline)
{
	hello_msg h;
	proof_msg p = {0};
	verdict_msg v;
	int rc = rt_read_full(c, fd, &h, sizeof h, deadline, "the rendezvous peer");
	if (rc)
		return rc;
	if (h.magic != AUTH_MAGIC || h.version != AUTH_VERSION)
		return rt_err(c, COLL_ERR_PROTOCOL, "peer is not a libcollrt %d endpoint", AUTH_VERSION);
	p.magic = AUTH_MAGIC;
	p.rank = (uint32_t)rank;
	p.purpose = (uint32_t)purpose;
	rt_random(p.nonce, 16);
	mac128(key, 'C', h.nonce, p.nonce, p.rank, p.purpose, jobid, p.mac);
	if ((rc = rt_write_full(c, fd, &p, sizeof p, deadline, "the rendezvous peer")))
		return rc;
	if ((rc = rt_read_full(c, fd, &v, sizeof v, deadline, "the rendezvous peer"))) {
		if (rc == COLL_ERR_PEER)
			return rt_err(c, COLL_ERR_AUTH, "peer refused this rank (wrong secret?)");
		return rc;
	}
	if (v.magic != AUTH_MAGIC)
		return rt_err(c, COLL_ERR_PROTOCOL, "bad handshake verdict");
	if (v.status != 0)
		return rt_err(c, COLL_ERR_AUTH, "peer refused our proof: wrong secret (COLL_SECRET)");
	uint8_t want[16];
	mac128(key, 'S', p.nonce, h.nonce, p.rank, p.purpose, jobid, want);
	if (!mac_eq(want, v.mac))
		return rt_err(c, COLL_ERR_AUTH, "peer failed to prove the secret: wrong secret (COLL_SECRET)");
	return COLL_OK;
}

int rt_auth_server(coll_comm *c, int fd, const uint8_t key[16], int purpose, uint64_t jobid,
                   int64_t deadline, int *peer_rank)
{
	hello_msg h = {AUTH_MAGIC, AUTH_VERSION, {0}};
	proof_msg p;
	verdict_msg v = {AUTH_MAGIC, 0, {0}};
	rt_random(h.nonce, 16);
	int rc = rt_write_full(c, fd, &h, sizeof h, deadline, "a connecting peer");
	if (rc)
		return rc;
	if ((rc = rt_read_full(c, fd, &p, sizeof p, deadline, "a connecting peer")))
		return rc;
	if (p.magic != AUTH_MAGIC)
		return rt_err(c, COLL_ERR_PROTOCOL, "connecting peer is not a libcollrt endpoint");
	uint8_t want[16];
	mac128(key, 'C', h.nonce, p.nonce, p.rank, p.purpose, jobid, want);
	if (!mac_eq(want, p.mac) || p.purpose != (uint32_t)purpose) {
		v.status = 1;
		rt_write_full(c, fd, &v, sizeof v, deadline, "a connecting peer");
		return rt_err(c, COLL_ERR_AUTH, "refused a peer claiming rank %u: wrong secret", p.rank);
	}
	mac128(key, 'S', p.nonce, h.nonce, p.rank, p.purpose, jobid, v.mac);
	if ((rc = rt_write_full(c, fd, &v, sizeof v, deadline, "a connecting peer")))
		return rc;
	*peer_rank = (int)p.rank;
	return COLL_OK;
}
