/*
 * ring.c - the arithmetic of the ibverbs transport's receive rings, kept
 * apart from the verbs calls so that it is tested without a device
 * (tests/unit/ib_unit.c runs a sender and a receiver against each other
 * with random sizes and release orders).
 *
 * The receiver of each ordered pair owns a ring of fixed slots that the
 * sender fills with RDMA writes; a message takes a contiguous run of
 * slots, so the executor reads (and reduces from) it in place.  Slots are
 * sized for the common case, not for the largest message: a 64-byte
 * header-only message takes one 64 KiB slot, not a 512 KiB one, so many
 * small messages can be in flight while a large one still fits.  The
 * price is the skip at the ring's end, which ib_window accounts for.
 *
 * Flow control is credit based and needs no round trip per message: the
 * sender counts slots used (ib_tx.head) and slots given back
 * (ib_tx.credited) and never has more than the ring's size outstanding.
 * The receiver frees slots when the executor releases messages, in any
 * order (a bitmap of released runs; the tail moves over the released
 * prefix), and gives them back in batches (ib_rx_credits) so that a
 * stream of messages costs a fraction of a credit message each, but all
 * of them before it waits, so that a sender stalled on credits is never
 * left waiting for a batch to fill: a receiver that is not idle is
 * releasing messages, and fills the batch.
 */
#include <string.h>

#include "ib.h"

void ib_place(const ib_geom *g, uint64_t head, size_t len, uint32_t *skip, uint32_t *k)
{
	size_t kk = (len + g->slot_bytes - 1) / g->slot_bytes;
	uint32_t pos = (uint32_t)(head % g->nslots);
	*k = kk ? (uint32_t)kk : 1;   /* even an empty message needs a slot to be told apart */
	*skip = pos + *k > g->nslots ? g->nslots - pos : 0;
}

size_t ib_max_msg(const ib_geom *g, size_t want)
{
	size_t cap = (size_t)(g->nslots / 2) * g->slot_bytes;
	size_t m = (want + g->slot_bytes - 1) / g->slot_bytes * g->slot_bytes;
	if (m > cap)
		m = cap;
	return m < g->slot_bytes ? g->slot_bytes : m;
}

int ib_window(const ib_geom *g, size_t max_msg)
{
	/* Worst case: m slots per message and m - 1 skipped at the end. */
	uint32_t m = (uint32_t)((max_msg + g->slot_bytes - 1) / g->slot_bytes);
	if (m == 0)
		m = 1;
	int w = m - 1 < g->nslots ? (int)((g->nslots - (m - 1)) / m) : 0;
	return w > 0 ? w : 1;
}

int ib_tx_take(ib_tx *t, const ib_geom *g, size_t len, uint64_t *seq, size_t *off)
{
	uint32_t skip, k;
	ib_place(g, t->head, len, &skip, &k);
	if (t->head - t->credited + skip + k > g->nslots)
		return 0;
	*seq = t->head;
	*off = (size_t)((t->head + skip) % g->nslots) * g->slot_bytes;
	t->head += skip + k;
	return 1;
}

int ib_tx_credit(ib_tx *t, const ib_geom *g, uint32_t n)
{
	(void)g;
	if (t->credited + n > t->head)
		return -1;
	t->credited += n;
	return 0;
}

int ib_rx_arrive(ib_rx *r, const ib_geom *g, size_t len, size_t max_msg, uint64_t *seq, size_t *off)
{
	uint32_t skip, k;
	if (len > max_msg)
		return -1;
	ib_place(g, r->head, len, &skip, &k);
	if (r->head - r->tail + skip + k > g->nslots)
		return -1;
	*seq = r->head;
	*off = (size_t)((r->head + skip) % g->nslots) * g->slot_bytes;
	r->run[r->head % g->nslots] = skip + k;
	r->head += skip + k;
	return 0;
}

void ib_rx_release(ib_rx *r, const ib_geom *g, uint64_t seq)
{
	r->run[seq % g->nslots] |= IB_RUN_RELEASED;
	while (r->tail < r->head) {
		uint32_t *e = &r->run[r->tail % g->nslots];
		if (!(*e & IB_RUN_RELEASED))
			break;
		r->tail += *e & ~IB_RUN_RELEASED;
		*e = 0;
	}
}

uint32_t ib_rx_credits(ib_rx *r, uint32_t batch, int idle)
{
	uint64_t d = r->tail - r->reported;
	if (d == 0 || !(idle || d >= batch))
		return 0;
	r->reported = r->tail;
	return (uint32_t)d;
}

uint32_t ib_nchunks(size_t len, size_t chunk)
{
	if (chunk == 0 || len <= chunk)
		return 1;
	return (uint32_t)((len + chunk - 1) / chunk);
}

void ib_gather(void *dst, const struct iovec *iov, int iovcnt, size_t off, size_t len)
{
	char *d = dst;
	for (int i = 0; i < iovcnt && len; i++) {
		size_t l = iov[i].iov_len;
		if (off >= l) {
			off -= l;
			continue;
		}
		size_t take = l - off < len ? l - off : len;
		memcpy(d, (const char *)iov[i].iov_base + off, take);
		d += take;
		len -= take;
		off = 0;
	}
}
