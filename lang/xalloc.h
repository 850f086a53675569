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

#endif
