/*
 * xalloc.c - out-of-memory ends the compiler with a message (xalloc.h),
 * and big arrays come from mappings advised for huge pages.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "xalloc.h"

size_t mem_limit, mem_used;
void (*mem_over_hook)(void);

static void *check(void *p)
{
	if (!p) {
		fputs("collc: out of memory\n", stderr);
		abort();
	}
	return p;
}

void *xmalloc(size_t n) { return check(malloc(n ? n : 1)); }
void *xcalloc(size_t n, size_t size) { return check(calloc(n ? n : 1, size ? size : 1)); }
void *xrealloc(void *p, size_t n) { return check(realloc(p, n ? n : 1)); }
char *xstrdup(const char *s) { return check(strdup(s)); }

#define HUGE_BYTES ((size_t)2 << 20)

size_t xbig_room(size_t n)
{
	return n < XBIG_MIN ? n : (n + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
}

/* A mapping of `bytes` (a multiple of HUGE_BYTES) that starts on a
 * HUGE_BYTES boundary: map more, then cut off the ends, as the kernel
 * backs only aligned 2 MiB stretches with huge pages. */
static void *map_aligned(size_t bytes)
{
	size_t over = bytes + HUGE_BYTES;
	char *p = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return check(NULL);
	char *a = (char *)(((uintptr_t)p + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + bytes < p + over)
		munmap(a + bytes, (size_t)(p + over - (a + bytes)));
#ifdef MADV_HUGEPAGE
	madvise(a, bytes, MADV_HUGEPAGE);   /* a hint: without it, 4 KiB pages */
#endif
	return a;
}

void *xbig_alloc(size_t n)
{
	return n < XBIG_MIN ? xcalloc(n, 1) : map_aligned(xbig_room(n));
}

void *xbig_realloc(void *p, size_t old, size_t n)
{
	if (!p)
		return xbig_alloc(n);
	size_t ro = xbig_room(old), rn = xbig_room(n);
	if (old < XBIG_MIN && n < XBIG_MIN)
		return xrealloc(p, n);
	if (old >= XBIG_MIN && n >= XBIG_MIN) {
		if (rn == ro)
			return p;
		if (rn < ro) {
			munmap((char *)p + rn, ro - rn);
			return p;
		}
		/* in place when the addresses after it are free: no copy, and
		 * the extension keeps the huge page advice */
		void *q = mremap(p, ro, rn, 0);
		if (q != MAP_FAILED)
			return q;
	}
	void *q = xbig_alloc(n);
	memcpy(q, p, old < n ? old : n);
	xbig_free(p, old);
	return q;
}

void xbig_free(void *p, size_t n)
{
	if (!p)
		return;
	if (n < XBIG_MIN)
		free(p);
	else
		munmap(p, xbig_room(n));
}
