/*
 * ib_unit.c - the ibverbs transport's logic without a device: the
 * connection record's wire format (wire.c), ring placement, credits and
 * the copy/write chunking (ring.c), a sender and a receiver run against
 * each other (flow), and the registered-memory cache with counting fakes
 * for ibv_reg_mr/ibv_dereg_mr (mrcache.c).
 *
 *   ib_unit wire|ring|flow|mrcache     one group; prints each failed check
 *                                      and "GROUP: N checks, N failed"
 * Exit status 1 when a check failed.  tests/ibverbs.test runs each group
 * as one test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ibverbs/ib.h"

static int checks, failed;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		checks++;                                                     \
		if (!(cond)) {                                                \
			failed++;                                             \
			printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                                  \
			printf("\n");                                         \
		}                                                             \
	} while (0)

/* --- wire ---------------------------------------------------------------- */

static ib_conn sample(void)
{
	ib_conn c;
	memset(&c, 0, sizeof c);
	c.from = 0x01020304;
	c.to = 7;
	c.status = 0;
	c.lid = 0xbeef;
	c.port = 2;
	c.mtu = 5;
	c.link_layer = 2;
	c.gid_index = 3;
	c.qpn = 0xabcdef;
	c.psn = 0x123456;
	c.addr = 0x00007f0011223344ull;
	c.rkey = 0xdeadbeef;
	c.slot_bytes = 65536;
	c.nslots = 64;
	for (int i = 0; i < 16; i++)
		c.gid[i] = (uint8_t)(0xf0 + i);
	return c;
}

static int same(const ib_conn *a, const ib_conn *b)
{
	return a->from == b->from && a->to == b->to && a->status == b->status && a->lid == b->lid &&
	       a->port == b->port && a->mtu == b->mtu && a->link_layer == b->link_layer &&
	       a->gid_index == b->gid_index && a->qpn == b->qpn && a->psn == b->psn && a->addr == b->addr &&
	       a->rkey == b->rkey && a->slot_bytes == b->slot_bytes && a->nslots == b->nslots &&
	       memcmp(a->gid, b->gid, 16) == 0;
}

static void test_wire(void)
{
	ib_conn c = sample(), d;
	uint8_t buf[IB_WIRE_BYTES + 8];
	ib_wire_pack(&c, buf);
	memset(&d, 0, sizeof d);
	CHECK(ib_wire_unpack(buf, IB_WIRE_BYTES, &d) == IB_WIRE_OK, "round trip refused");
	CHECK(same(&c, &d), "round trip changed a field");

	/* The byte order is the format's, not the host's. */
	static const uint8_t head[] = {'C', 'o', 'L', 'I', 0, IB_WIRE_VERSION, 0, IB_WIRE_BYTES, 1, 2, 3, 4};
	CHECK(memcmp(buf, head, sizeof head) == 0, "magic, version, size, from not big-endian at 0..11");
	static const uint8_t addr[] = {0x00, 0x00, 0x7f, 0x00, 0x11, 0x22, 0x33, 0x44};
	CHECK(memcmp(buf + 32, addr, 8) == 0, "ring address not big-endian at 32");
	CHECK(buf[24] == 0 && buf[25] == 0xab && buf[26] == 0xcd && buf[27] == 0xef, "qpn not at 24");
	CHECK(buf[18] == 0xbe && buf[19] == 0xef, "lid not at 18");
	CHECK(buf[56] == 0xf0 && buf[71] == 0xff, "gid not at 56..71");
	CHECK(buf[52] == 0 && buf[53] == 0 && buf[54] == 0 && buf[55] == 0, "reserved bytes not zero");

	/* A longer buffer is fine (records sit back to back). */
	CHECK(ib_wire_unpack(buf, sizeof buf, &d) == IB_WIRE_OK, "a record followed by more bytes refused");

	/* Truncated anywhere: refused, and the output left alone. */
	for (size_t len = 0; len < IB_WIRE_BYTES; len++) {
		ib_conn e = {0};
		e.from = 99;
		int rc = ib_wire_unpack(buf, len, &e);
		CHECK(rc == IB_WIRE_SHORT, "%zu bytes: got %d, want SHORT", len, rc);
		CHECK(e.from == 99, "%zu bytes: output written on failure", len);
	}

	uint8_t bad[IB_WIRE_BYTES];
	memcpy(bad, buf, sizeof bad);
	bad[5] = IB_WIRE_VERSION + 1;
	CHECK(ib_wire_unpack(bad, sizeof bad, &d) == IB_WIRE_VERSION_BAD, "version %d accepted", bad[5]);
	bad[4] = 1, bad[5] = IB_WIRE_VERSION;   /* version 256 + 1 */
	CHECK(ib_wire_unpack(bad, sizeof bad, &d) == IB_WIRE_VERSION_BAD, "version's high byte ignored");
	/* A newer version is named as such even when only its first bytes arrived. */
	memcpy(bad, buf, sizeof bad);
	bad[5] = IB_WIRE_VERSION + 1;
	CHECK(ib_wire_unpack(bad, 8, &d) == IB_WIRE_VERSION_BAD, "short record of another version not named");

	memcpy(bad, buf, sizeof bad);
	bad[0] = 'X';
	CHECK(ib_wire_unpack(bad, sizeof bad, &d) == IB_WIRE_MAGIC_BAD, "bad magic accepted");
	memcpy(bad, buf, sizeof bad);
	bad[7] = IB_WIRE_BYTES - 1;
	CHECK(ib_wire_unpack(bad, sizeof bad, &d) == IB_WIRE_SIZE_BAD, "wrong size field accepted");

	ib_conn f = sample();
	f.mtu = 6;
	ib_wire_pack(&f, bad);
	CHECK(ib_wire_unpack(bad, sizeof bad, &d) == IB_WIRE_FIELD_BAD, "MTU 6 accepted");
	f = sample();
	f.qpn = 0x1000000;
	ib_wire_pack(&f, bad);
	CHECK(ib_wire_unpack(bad, sizeof bad, &d) == IB_WIRE_FIELD_BAD, "25-bit QPN accepted");
	f = sample();
	f.link_layer = 0;
	ib_wire_pack(&f, bad);
	CHECK(ib_wire_unpack(bad, sizeof bad, &d) == IB_WIRE_FIELD_BAD, "link layer 0 accepted");

	/* A failed rank's record: status only, the rest zero, and it decodes. */
	ib_conn g;
	memset(&g, 0, sizeof g);
	g.from = 3, g.to = 1, g.status = 10;
	ib_wire_pack(&g, bad);
	CHECK(ib_wire_unpack(bad, sizeof bad, &d) == IB_WIRE_OK && d.status == 10 && d.from == 3,
	      "status-only record refused");
	for (int code = IB_WIRE_OK; code <= IB_WIRE_FIELD_BAD; code++)
		CHECK(strcmp(ib_wire_strerror(code), "?") != 0, "no words for code %d", code);
}

/* --- ring ---------------------------------------------------------------- */

static void test_ring(void)
{
	ib_geom g = {4096, 8};
	uint32_t skip, k;
	ib_place(&g, 0, 64, &skip, &k);
	CHECK(skip == 0 && k == 1, "64 B at 0: skip %u k %u", skip, k);
	ib_place(&g, 0, 0, &skip, &k);
	CHECK(skip == 0 && k == 1, "0 B takes a slot: k %u", k);
	ib_place(&g, 3, 4096, &skip, &k);
	CHECK(skip == 0 && k == 1, "a full slot: k %u", k);
	ib_place(&g, 3, 4097, &skip, &k);
	CHECK(skip == 0 && k == 2, "a byte more: k %u", k);
	ib_place(&g, 7, 8192, &skip, &k);
	CHECK(skip == 1 && k == 2, "two slots at the last slot: skip %u k %u", skip, k);
	ib_place(&g, 6, 8192, &skip, &k);
	CHECK(skip == 0 && k == 2, "two slots that just fit at the end: skip %u", skip);
	ib_place(&g, 8 + 6, 3 * 4096, &skip, &k);
	CHECK(skip == 2 && k == 3, "positions wrap (head 14): skip %u k %u", skip, k);

	CHECK(ib_max_msg(&g, 1 << 20) == 4 * 4096, "max message is half the ring: %zu", ib_max_msg(&g, 1 << 20));
	CHECK(ib_max_msg(&g, 5000) == 8192, "max message rounds up to slots: %zu", ib_max_msg(&g, 5000));
	CHECK(ib_max_msg(&g, 1) == 4096, "max message at least a slot: %zu", ib_max_msg(&g, 1));
	ib_geom d = {65536, 64};
	CHECK(ib_window(&d, 512 << 10) == 7, "default window: %d", ib_window(&d, 512 << 10));
	CHECK(ib_window(&g, 4 * 4096) == 1, "window of half-ring messages: %d", ib_window(&g, 4 * 4096));
	CHECK(ib_window(&g, 64) == 8, "window of one-slot messages: %d", ib_window(&g, 64));

	/* The window's promise: from any head, that many largest messages fit
	 * in a ring, skips included. */
	for (uint32_t N = 2; N <= 40; N++)
		for (uint32_t m = 1; m <= N / 2; m++) {
			ib_geom h = {64, N};
			int w = ib_window(&h, (size_t)m * 64);
			for (uint64_t head = 0; head < N; head++) {
				ib_tx tx = {head, head};
				uint64_t seq;
				size_t off;
				int got = 0;
				while (got < w && ib_tx_take(&tx, &h, (size_t)m * 64, &seq, &off))
					got++;
				CHECK(got == w, "N %u m %u head %llu: %d of a window of %d fit", N, m, (unsigned long long)head,
				      got, w);
			}
		}

	/* Credits: the sender stops at the ring's size and resumes on them. */
	ib_tx tx = {0, 0};
	uint64_t seq;
	size_t off;
	int n = 0;
	while (ib_tx_take(&tx, &g, 100, &seq, &off))
		n++;
	CHECK(n == 8, "one-slot messages before credits: %d", n);
	CHECK(ib_tx_credit(&tx, &g, 9) == -1, "more credits than used accepted");
	CHECK(ib_tx_credit(&tx, &g, 3) == 0 && ib_tx_take(&tx, &g, 3 * 4096, &seq, &off) && off == 0 && seq == 8,
	      "3 credits did not fit a 3-slot message at 0 (off %zu)", off);

	/* Receiver: out-of-order release frees only the released prefix. */
	uint32_t run[8] = {0};
	ib_rx rx = {0, 0, 0, run};
	uint64_t s[4];
	size_t o[4];
	for (int i = 0; i < 4; i++)
		CHECK(ib_rx_arrive(&rx, &g, 2 * 4096, 4 * 4096, &s[i], &o[i]) == 0, "arrival %d refused", i);
	CHECK(o[0] == 0 && o[1] == 8192 && o[3] == 6 * 4096, "offsets %zu %zu %zu", o[0], o[1], o[3]);
	CHECK(ib_rx_arrive(&rx, &g, 64, 4 * 4096, &s[0], &o[0]) == -1, "overrun accepted");
	ib_rx_release(&rx, &g, 2 * 1);
	ib_rx_release(&rx, &g, 2 * 3);
	CHECK(rx.tail == 0, "released 1 and 3, tail %llu", (unsigned long long)rx.tail);
	CHECK(ib_rx_credits(&rx, 1, 1) == 0, "credits before the prefix is free");
	ib_rx_release(&rx, &g, 0);
	CHECK(rx.tail == 4, "released 0: tail %llu, want 4", (unsigned long long)rx.tail);
	CHECK(ib_rx_credits(&rx, 8, 0) == 0, "4 freed slots sent under a batch of 8");
	CHECK(ib_rx_credits(&rx, 4, 0) == 4, "a full batch not sent");
	ib_rx_release(&rx, &g, 4);
	CHECK(rx.tail == 8, "all released: tail %llu", (unsigned long long)rx.tail);
	CHECK(ib_rx_credits(&rx, 100, 0) == 0, "a partial batch sent while busy");
	CHECK(ib_rx_credits(&rx, 100, 1) == 4, "an idle receiver kept credits back");
	CHECK(ib_rx_credits(&rx, 1, 1) == 0, "credits reported twice");
	uint32_t small[8] = {0};
	ib_rx r2 = {0, 0, 0, small};
	CHECK(ib_rx_arrive(&r2, &g, 4 * 4096 + 1, 4 * 4096, &s[0], &o[0]) == -1, "message over max_msg accepted");

	/* Immediate data. */
	uint32_t imm = ib_imm(IB_IMM_CREDIT, 12345);
	CHECK(ib_imm_kind(imm) == IB_IMM_CREDIT && ib_imm_value(imm) == 12345, "imm round trip");
	imm = ib_imm(IB_IMM_DATA, IB_IMM_MAX);
	CHECK(ib_imm_kind(imm) == IB_IMM_DATA && ib_imm_value(imm) == IB_IMM_MAX, "largest length");
	CHECK(ib_imm_kind(ib_imm(IB_IMM_ABORT, 12)) == IB_IMM_ABORT && ib_imm_value(ib_imm(IB_IMM_ABORT, 12)) == 12,
	      "abort imm");

	/* Chunks of a send and the gather that fills them. */
	CHECK(ib_nchunks(0, 65536) == 1 && ib_nchunks(65536, 65536) == 1 && ib_nchunks(65537, 65536) == 2 &&
	              ib_nchunks(10, 0) == 1 && ib_nchunks((512 << 10) - 64 + 64, 65536) == 8,
	      "chunk counts");
	char a[10] = "0123456789", b[6] = "abcdef", out[16];
	struct iovec iov[2] = {{a, 10}, {b, 6}};
	memset(out, '.', sizeof out);
	ib_gather(out, iov, 2, 8, 5);
	CHECK(memcmp(out, "89abc", 5) == 0 && out[5] == '.', "gather across iovecs: %.6s", out);
	ib_gather(out, iov, 2, 12, 4);
	CHECK(memcmp(out, "cdef", 4) == 0, "gather in the second iovec: %.4s", out);
	/* Chunked copies reassemble the message. */
	char big[1000], msg[1000];
	for (int i = 0; i < 1000; i++)
		big[i] = (char)(i * 7);
	struct iovec iv[2] = {{big, 64}, {big + 64, 936}};
	uint32_t nch = ib_nchunks(1000, 256);
	for (uint32_t i = 0; i < nch; i++) {
		size_t coff = i * 256, clen = i + 1 < nch ? 256 : 1000 - coff;
		ib_gather(msg + coff, iv, 2, coff, clen);
	}
	CHECK(nch == 4 && memcmp(msg, big, 1000) == 0, "chunked copy differs");
}

/* --- flow: a sender and a receiver against each other -------------------- */

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Messages go through a ring the way RDMA writes do: the sender writes the
 * bytes when it posts, the receiver learns of them later (the immediate),
 * holds up to a window of them, releases them in random order and sends
 * credits back through a delayed channel.  The checks: the sender never
 * writes over a message the receiver still holds or has not seen, every
 * message arrives intact and in order, placements agree on both sides, and
 * it all ends (no credit deadlock) even with the smallest batches. */
static void run_flow(ib_geom g, size_t maxlen, uint32_t batch, int idle_pct, int nmsgs)
{
	size_t max_msg = ib_max_msg(&g, maxlen);
	int w = ib_window(&g, max_msg);
	size_t ring_bytes = (size_t)g.slot_bytes * g.nslots;
	uint8_t *ring = calloc(ring_bytes, 1);
	int *owner = malloc(sizeof(int) * g.nslots);   /* message holding a slot, -1: free */
	uint32_t *run = calloc(g.nslots, sizeof *run);
	struct wmsg { int id; size_t len, off; uint64_t seq; } *wire = malloc(sizeof *wire * (size_t)nmsgs);
	struct hmsg { int id; size_t len, off; uint64_t seq; } *held = malloc(sizeof *held * (size_t)w);
	uint32_t *credq = malloc(sizeof *credq * 4 * (size_t)nmsgs + 16);
	for (uint32_t i = 0; i < g.nslots; i++)
		owner[i] = -1;
	ib_tx tx = {0, 0};
	ib_rx rx = {0, 0, 0, run};
	int sent = 0, wh = 0, wt = 0, nheld = 0, got = 0, ch = 0, ct = 0, stuck = 0, bad = 0;
	size_t lens[4] = {1, 64, g.slot_bytes, max_msg};
	size_t next_len = 64;
	for (long step = 0; got < nmsgs && step < 50L * nmsgs + 100000; step++) {
		int moved = 0;
		switch (rnd(4)) {
		case 0: /* sender */
			if (sent < nmsgs) {
				uint64_t seq;
				size_t off;
				if (ib_tx_take(&tx, &g, next_len, &seq, &off)) {
					uint32_t first = (uint32_t)(off / g.slot_bytes), k = (uint32_t)((next_len + g.slot_bytes - 1) / g.slot_bytes);
					for (uint32_t i = 0; i < (k ? k : 1); i++)
						if (owner[first + i] != -1)
							bad++;   /* overwrites a message still in use */
					for (uint32_t i = 0; i < (k ? k : 1); i++)
						owner[first + i] = sent;
					memset(ring + off, (uint8_t)sent, next_len);
					wire[wh++] = (struct wmsg){sent, next_len, off, seq};
					sent++;
					next_len = rnd(3) ? lens[rnd(4)] : 1 + rnd((uint32_t)max_msg);
					moved = 1;
				}
			}
			break;
		case 1: /* receiver: the next immediate, if there is room to hold it */
			if (wt < wh && nheld < w) {
				struct wmsg *m = &wire[wt++];
				uint64_t seq;
				size_t off;
				if (ib_rx_arrive(&rx, &g, m->len, max_msg, &seq, &off) != 0 || seq != m->seq || off != m->off) {
					bad++;
					break;
				}
				int ok = 1;
				for (size_t i = 0; i < m->len; i++)
					ok &= ring[off + i] == (uint8_t)m->id;
				if (!ok || m->id != got)
					bad++;
				held[nheld++] = (struct hmsg){m->id, m->len, off, seq};
				got++;
				moved = 1;
			}
			break;
		case 2: /* receiver: release one held message, any of them */
			if (nheld) {
				int i = (int)rnd((uint32_t)nheld);
				uint32_t first = (uint32_t)(held[i].off / g.slot_bytes);
				uint32_t k = (uint32_t)((held[i].len + g.slot_bytes - 1) / g.slot_bytes);
				for (uint32_t j = 0; j < (k ? k : 1); j++)
					owner[first + j] = -1;
				ib_rx_release(&rx, &g, held[i].seq);
				held[i] = held[--nheld];
				moved = 1;
			}
			{
				uint32_t c = ib_rx_credits(&rx, batch, (int)rnd(100) < idle_pct);
				if (c)
					credq[ch++] = c;
			}
			break;
		case 3: /* a credit message lands */
			if (ct < ch) {
				if (ib_tx_credit(&tx, &g, credq[ct++]))
					bad++;
				moved = 1;
			}
			break;
		}
		/* Nothing moves for a while: the receiver goes idle, which must
		 * flush its credits (ib.c does this before it sleeps). */
		stuck = moved ? 0 : stuck + 1;
		if (stuck > 64) {
			uint32_t c = ib_rx_credits(&rx, batch, 1);
			if (c)
				credq[ch++] = c;
		}
	}
	CHECK(bad == 0, "N %u S %u batch %u: %d violations", g.nslots, g.slot_bytes, batch, bad);
	CHECK(got == nmsgs, "N %u S %u batch %u: %d of %d messages arrived (deadlock?)", g.nslots, g.slot_bytes, batch,
	      got, nmsgs);
	free(ring), free(owner), free(run), free(wire), free(held), free(credq);
}

static void test_flow(void)
{
	run_flow((ib_geom){256, 16}, 2048, 4, 0, 20000);
	run_flow((ib_geom){256, 16}, 2048, 16, 0, 20000);  /* batch = ring: only idleness returns credits */
	run_flow((ib_geom){256, 16}, 256, 1, 50, 20000);
	run_flow((ib_geom){4096, 2}, 4096, 1, 10, 5000);   /* the smallest ring */
	run_flow((ib_geom){64, 37}, 900, 9, 5, 20000);     /* odd sizes */
	run_flow((ib_geom){65536, 64}, 512 << 10, 16, 10, 3000);   /* the defaults */
}

/* --- mrcache ------------------------------------------------------------- */

/* A fake adapter: registrations are records; it can refuse to go beyond
 * `limit` registered bytes, like RLIMIT_MEMLOCK. */
typedef struct {
	int live, regs, deregs, fail_all;
	size_t bytes, limit;
	uint32_t next_key;
} fake;

typedef struct {
	uintptr_t lo;
	size_t len;
	int alive;
} fake_mr;

static void *fake_reg(void *ctx, void *addr, size_t len, uint32_t *lkey)
{
	fake *f = ctx;
	if (f->fail_all || (f->limit && f->bytes + len > f->limit))
		return NULL;
	fake_mr *m = malloc(sizeof *m);
	m->lo = (uintptr_t)addr, m->len = len, m->alive = 1;
	f->live++, f->regs++, f->bytes += len;
	*lkey = ++f->next_key;
	return m;
}

static void fake_dereg(void *ctx, void *h)
{
	fake *f = ctx;
	fake_mr *m = h;
	f->live--, f->deregs++, f->bytes -= m->len;
	free(m);
}

#define PG 4096
#define A(x) ((void *)(uintptr_t)(0x100000 + (x)))

static void cache(ib_mrcache *c, fake *f, int entries, size_t bytes)
{
	memset(f, 0, sizeof *f);
	ib_mr_ops ops = {fake_reg, fake_dereg, f};
	ib_mrc_init(c, &ops, entries, bytes, PG);
}

static void test_mrcache(void)
{
	ib_mrcache c;
	fake f;

	/* Hits: the same range, a sub-range; the range is page aligned. */
	cache(&c, &f, 8, 1 << 30);
	ib_mrent *e = ib_mrc_get(&c, A(100), 5000);
	CHECK(e && e->lo == 0x100000 && e->hi == 0x100000 + 2 * PG, "aligned range [%lx, %lx)",
	      e ? (unsigned long)e->lo : 0, e ? (unsigned long)e->hi : 0);
	ib_mrent *e2 = ib_mrc_get(&c, A(100), 5000), *e3 = ib_mrc_get(&c, A(PG), 10);
	CHECK(e2 == e && e3 == e && f.regs == 1 && c.hits == 2 && c.misses == 1, "hits: regs %d hits %llu", f.regs,
	      (unsigned long long)c.hits);
	CHECK(e->refs == 3, "refs %d", e->refs);
	ib_mrc_put(&c, e), ib_mrc_put(&c, e), ib_mrc_put(&c, e);
	CHECK(f.live == 1, "an unreferenced entry stays cached: live %d", f.live);
	/* A range that sticks out of the entry misses. */
	e = ib_mrc_get(&c, A(PG), 2 * PG);
	CHECK(c.misses == 2, "a range past the entry's end hit");
	/* ...and the new registration is the union, the old one retired. */
	CHECK(e->lo == 0x100000 && e->hi == 0x100000 + 3 * PG && c.count == 1 && f.live == 1 && f.deregs == 1,
	      "overlap not merged: [%lx, %lx) count %d live %d", (unsigned long)e->lo, (unsigned long)e->hi, c.count,
	      f.live);
	ib_mrc_put(&c, e);
	ib_mrc_flush(&c);
	CHECK(f.live == 0 && c.count == 0, "flush left %d registrations", f.live);

	/* A merged-away entry still in use is deregistered only at its last put. */
	cache(&c, &f, 8, 1 << 30);
	ib_mrent *old = ib_mrc_get(&c, A(0), PG);
	ib_mrent *nw = ib_mrc_get(&c, A(PG / 2), PG);
	CHECK(nw != old && nw->lo == 0x100000 && nw->hi == 0x100000 + 2 * PG, "union of overlapping ranges");
	CHECK(old->dead && f.live == 2 && c.count == 1, "in-use entry deregistered under its send (live %d)", f.live);
	ib_mrent *hit = ib_mrc_get(&c, A(0), 10);
	CHECK(hit == nw, "lookup found the retired entry");
	ib_mrc_put(&c, old);
	CHECK(f.live == 1 && f.deregs == 1, "retired entry not deregistered at its last put (live %d)", f.live);
	ib_mrc_put(&c, nw), ib_mrc_put(&c, hit);
	ib_mrc_flush(&c);

	/* Capacity in entries: least recently used goes first. */
	cache(&c, &f, 3, 1 << 30);
	ib_mrent *x[4];
	for (int i = 0; i < 3; i++) {
		x[i] = ib_mrc_get(&c, A(i * 16 * PG), PG);
		ib_mrc_put(&c, x[i]);
	}
	ib_mrc_put(&c, ib_mrc_get(&c, A(0), PG));   /* touch the oldest: entry 1 is now the coldest */
	x[3] = ib_mrc_get(&c, A(3 * 16 * PG), PG);
	ib_mrc_put(&c, x[3]);
	CHECK(c.count == 3 && c.evictions == 1 && f.live == 3, "count %d evictions %llu live %d", c.count,
	      (unsigned long long)c.evictions, f.live);
	int have0 = 0, have1 = 0;
	for (ib_mrent *y = c.head; y; y = y->next)
		have0 |= y->lo == 0x100000, have1 |= y->lo == 0x100000 + 16 * PG;
	CHECK(have0 && !have1, "evicted the wrong entry (LRU: entry 1)");
	CHECK(c.head->lo == 0x100000 + 3 * 16 * PG, "most recent not at the head");
	ib_mrc_flush(&c);

	/* Capacity in bytes. */
	cache(&c, &f, 100, 4 * PG);
	for (int i = 0; i < 3; i++)
		ib_mrc_put(&c, ib_mrc_get(&c, A(i * 16 * PG), 2 * PG));
	CHECK(c.bytes <= 4 * PG && c.count == 2 && f.live == 2, "bytes %zu count %d", c.bytes, c.count);
	ib_mrc_flush(&c);

	/* Entries in use are never evicted: the cache grows past its size. */
	cache(&c, &f, 2, 1 << 30);
	for (int i = 0; i < 4; i++)
		x[i] = ib_mrc_get(&c, A(i * 16 * PG), PG);
	CHECK(c.count == 4 && f.live == 4 && c.evictions == 0, "in-use entry evicted (count %d)", c.count);
	for (int i = 0; i < 4; i++)
		ib_mrc_put(&c, x[i]);
	ib_mrc_put(&c, ib_mrc_get(&c, A(9 * 16 * PG), PG));
	CHECK(c.count <= 2, "back within capacity once unused: count %d", c.count);
	ib_mrc_flush(&c);

	/* A failed registration evicts everything unused and retries. */
	cache(&c, &f, 100, 1 << 30);
	f.limit = 3 * PG;
	ib_mrc_put(&c, ib_mrc_get(&c, A(0), PG));
	ib_mrc_put(&c, ib_mrc_get(&c, A(16 * PG), PG));
	e = ib_mrc_get(&c, A(32 * PG), 2 * PG);
	CHECK(e && f.live == 1 && c.count == 1, "no retry after evicting (live %d)", f.live);
	ib_mrc_put(&c, e);
	f.fail_all = 1;
	e = ib_mrc_get(&c, A(64 * PG), PG);
	CHECK(!e && f.live == 0 && c.count == 0, "failure: entry %p live %d count %d", (void *)e, f.live, c.count);
	f.fail_all = 0;
	ib_mrc_flush(&c);

	/* Invalidation: overlapping entries go (in-use ones at their put). */
	cache(&c, &f, 100, 1 << 30);
	ib_mrc_put(&c, ib_mrc_get(&c, A(0), PG));
	ib_mrent *busy = ib_mrc_get(&c, A(16 * PG), PG);
	ib_mrc_put(&c, ib_mrc_get(&c, A(32 * PG), PG));
	ib_mrc_invalidate(&c, A(0), 17 * PG);
	CHECK(c.count == 1 && c.head->lo == 0x100000 + 32 * PG, "invalidate kept %d entries", c.count);
	CHECK(f.live == 2 && busy->dead, "in-use entry deregistered at invalidation (live %d)", f.live);
	e = ib_mrc_get(&c, A(16 * PG), PG);
	CHECK(e != busy && f.regs == 4, "invalidated range still hit");
	ib_mrc_put(&c, busy);
	ib_mrc_put(&c, e);
	CHECK(f.live == 2, "live %d after puts", f.live);
	ib_mrc_invalidate(&c, A(100 * PG), PG);
	CHECK(c.count == 2, "invalidating an unrelated range dropped entries");
	ib_mrc_flush(&c);
	CHECK(f.live == 0 && f.regs == f.deregs, "leak: %d registrations, %d deregistrations", f.regs, f.deregs);

	/* Flush at close also takes entries still in use. */
	cache(&c, &f, 100, 1 << 30);
	ib_mrc_get(&c, A(0), PG);
	ib_mrent *o2 = ib_mrc_get(&c, A(0), 2 * PG);
	(void)o2;
	ib_mrc_flush(&c);
	CHECK(f.live == 0, "flush left %d in-use registrations", f.live);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} groups[] = {{"wire", test_wire}, {"ring", test_ring}, {"flow", test_flow}, {"mrcache", test_mrcache}};
	int ran = 0;
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
		if (argc > 1 && strcmp(argv[1], groups[i].name) != 0)
			continue;
		int c0 = checks, f0 = failed;
		groups[i].fn();
		printf("%s: %d checks, %d failed\n", groups[i].name, checks - c0, failed - f0);
		ran++;
	}
	if (!ran) {
		fprintf(stderr, "usage: ib_unit [wire|ring|flow|mrcache]\n");
		return 2;
	}
	return failed != 0;
}
