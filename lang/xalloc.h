/*
 * xalloc.h - allocation for the compiler that cannot fail.  collc holds no
 * state worth saving when memory runs out, so these print one line and
 * abort instead of making every caller handle NULL.  (libcollrt, a library,
 * never uses them: it returns COLL_ERR_NOMEM.)
 */
#ifndef COLL_XALLOC_H
#define COLL_XALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* The memory budget of an evaluation (--max-memory): values, schedules
 * and verifier state charge what they allocate and release what they
 * free; crossing the limit calls mem_over_hook once (the evaluator then
 * stops at its next step with an error at the statement), and a large
 * allocation whose size is known beforehand asks mem_fits first. */
extern size_t mem_limit;      /* bytes; 0: no limit */
extern size_t mem_used;
extern void (*mem_over_hook)(void);
static inline void mem_charge(size_t n)
{
	mem_used += n;
	if (mem_limit && mem_used > mem_limit && mem_over_hook)
		mem_over_hook();
}
static inline void mem_release(size_t n) { mem_used = n > mem_used ? 0 : mem_used - n; }
/* Would n more bytes stay within the budget? */
static inline bool mem_fits(size_t n) { return !mem_limit || (n <= mem_limit && mem_used <= mem_limit - n); }

/* xalloc.c */
void *xmalloc(size_t n);
/* Zeroed; n or size 0 still returns a unique pointer. */
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Big arrays that are mostly written (the schedule's transfers, the
 * verifier's cells and sets).  From XBIG_MIN bytes on they get a mapping
 * of their own, aligned to and rounded up to 2 MiB and advised for
 * transparent huge pages, so that the kernel fills them with one page
 * fault per 2 MiB instead of one per 4 KiB: a fault costs 10-20 us on
 * virtual machines whose host reclaims free guest memory, where the
 * 1,400 faults of StragglAR at n = 256 were half of collc's time.  Below
 * XBIG_MIN, calloc.  The memory is zeroed; the caller hands the size it
 * asked for back to xbig_realloc and xbig_free, which tells the two kinds
 * apart. */
#define XBIG_MIN ((size_t)256 << 10)
/* Bytes usable at p = xbig_alloc(n): n, or n rounded up to 2 MiB. */
size_t xbig_room(size_t n);
void *xbig_alloc(size_t n);
/* Grow or shrink p (asked for with `old` bytes) to n bytes, keeping its
 * contents up to the smaller size (what it gains is not zeroed). */
void *xbig_realloc(void *p, size_t old, size_t n);
void xbig_free(void *p, size_t n);

#endif
