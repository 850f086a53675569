/*
 * mrcache.c - the bookkeeping of the ibverbs transport's registered-memory
 * cache: which address intervals are registered, which are in use by
 * sends in flight, which to evict.  Registering is ib_mr_ops' business
 * (ibv_reg_mr in ib.c, a counting fake in tests/unit/ib_unit.c), so every
 * rule here is tested without a device.
 *
 * Registration costs tens of microseconds per call plus a page-table walk
 * per page, far more than a send of a few KiB, so a transport that sends
 * from user buffers must not register per send.  The cache keeps the last
 * COLL_IB_MR_CACHE intervals (and at most COLL_IB_MR_CACHE_BYTES of them)
 * in an LRU list:
 *   - a lookup is a hit when one live interval covers the request;
 *   - a miss registers the page-aligned request widened to the union with
 *     every live interval it overlaps, and retires those, so a buffer
 *     sent from in growing or shifting pieces converges to one
 *     registration instead of a pile of overlapping ones;
 *   - before registering, least recently used intervals are evicted until
 *     the new one fits; intervals that sends in flight still use are never
 *     deregistered under them: they are skipped by eviction and, when
 *     retired, deregistered by the last ib_mrc_put.  When everything is in
 *     use the cache exceeds its capacity rather than failing the send;
 *   - a registration that fails (the locked-memory limit, say) is retried
 *     once after evicting everything unused.
 * Lookups are linear in the number of entries, which is small by design
 * (64 by default); the cost is a few hundred nanoseconds at worst against
 * the registration it saves.
 *
 * What the cache cannot see is the application freeing a buffer and the
 * allocator reusing its addresses for new pages: a pinned registration
 * would still point at the old pages.  ib.c therefore uses this cache only
 * when asked to (COLL_IB_REG=odp, where the adapter follows the page
 * tables, or COLL_IB_REG=pin, where the application promises not to
 * recycle its buffers); ib_mrc_invalidate is the hook for a caller that
 * knows a range changed.
 */
#include <stdlib.h>

#include "ib.h"

static void unlink_live(ib_mrcache *c, ib_mrent *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
	c->count--;
	c->bytes -= e->hi - e->lo;
}

static void push_front(ib_mrcache *c, ib_mrent *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	else
		c->tail = e;
	c->head = e;
	c->count++;
	c->bytes += e->hi - e->lo;
}

static void destroy(ib_mrcache *c, ib_mrent *e)
{
	c->ops.dereg(c->ops.ctx, e->handle);
	c->deregs++;
	free(e);
}

/* Take a live entry out of the cache: deregister it now, or park it on the
 * dead list until its last send completes. */
static void retire(ib_mrcache *c, ib_mrent *e)
{
	unlink_live(c, e);
	if (e->refs == 0) {
		destroy(c, e);
		return;
	}
	e->dead = 1;
	e->next = c->dead;
	if (c->dead)
		c->dead->prev = e;
	c->dead = e;
}

/* Evict unused entries from the cold end until `entries` more entries and
 * `bytes` more bytes fit (all of them when force). */
static void evict(ib_mrcache *c, int entries, size_t bytes, int force)
{
	ib_mrent *e = c->tail;
	while (e && (force || c->count + entries > c->max_entries || c->bytes + bytes > c->max_bytes)) {
		ib_mrent *prev = e->prev;
		if (e->refs == 0) {
			retire(c, e);
			c->evictions++;
		}
		e = prev;
	}
}

void ib_mrc_init(ib_mrcache *c, const ib_mr_ops *ops, int max_entries, size_t max_bytes, size_t page)
{
	*c = (ib_mrcache){0};
	c->ops = *ops;
	c->max_entries = max_entries > 0 ? max_entries : 1;
	c->max_bytes = max_bytes;
	c->page = page && !(page & (page - 1)) ? page : 4096;
}

ib_mrent *ib_mrc_get(ib_mrcache *c, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, end = a + (len ? len : 1);
	for (ib_mrent *e = c->head; e; e = e->next)
		if (e->lo <= a && end <= e->hi) {
			if (e != c->head) {
				unlink_live(c, e);
				push_front(c, e);
			}
			e->refs++;
			c->hits++;
			return e;
		}
	c->misses++;
	uintptr_t lo = a & ~(uintptr_t)(c->page - 1), hi = (end + c->page - 1) & ~(uintptr_t)(c->page - 1);
	/* Widen to the union with the live entries it overlaps (repeat: a
	 * wider range may reach more), unless that outgrows the cache. */
	for (int changed = 1; changed;) {
		changed = 0;
		for (ib_mrent *e = c->head; e; e = e->next)
			if (e->lo < hi && lo < e->hi && (e->lo < lo || e->hi > hi)) {
				uintptr_t nlo = e->lo < lo ? e->lo : lo, nhi = e->hi > hi ? e->hi : hi;
				if (nhi - nlo > c->max_bytes)
					continue;
				lo = nlo, hi = nhi, changed = 1;
			}
	}
	ib_mrent *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->lo = lo;
	n->hi = hi;
	evict(c, 1, hi - lo, 0);
	n->handle = c->ops.reg(c->ops.ctx, (void *)lo, hi - lo, &n->lkey);
	if (!n->handle) {
		evict(c, 0, 0, 1);
		n->handle = c->ops.reg(c->ops.ctx, (void *)lo, hi - lo, &n->lkey);
	}
	if (!n->handle) {
		free(n);
		return NULL;
	}
	c->regs++;
	/* The new interval covers every entry it overlaps that it merged;
	 * those are redundant now.  (One it could not merge, too big, stays.) */
	for (ib_mrent *e = c->head, *next; e; e = next) {
		next = e->next;
		if (lo <= e->lo && e->hi <= hi)
			retire(c, e);
	}
	push_front(c, n);
	n->refs = 1;
	return n;
}

void ib_mrc_put(ib_mrcache *c, ib_mrent *e)
{
	if (--e->refs > 0 || !e->dead)
		return;
	if (e->prev)
		e->prev->next = e->next;
	else
		c->dead = e->next;
	if (e->next)
		e->next->prev = e->prev;
	destroy(c, e);
}

void ib_mrc_invalidate(ib_mrcache *c, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, end = a + len;
	for (ib_mrent *e = c->head, *next; e; e = next) {
		next = e->next;
		if (e->lo < end && a < e->hi)
			retire(c, e);
	}
}

void ib_mrc_flush(ib_mrcache *c)
{
	while (c->head) {
		ib_mrent *e = c->head;
		unlink_live(c, e);
		destroy(c, e);
	}
	while (c->dead) {
		ib_mrent *e = c->dead;
		c->dead = e->next;
		destroy(c, e);
	}
}
