/*
 * xalloc.h - allocation for the compiler that cannot fail.  collc holds no
 * state worth saving when memory runs out, so these print one line and
 * abort instead of making every caller handle NULL.  (libcollrt, a library,
 * never uses them: it returns COLL_ERR_NOMEM.)
 */
#ifndef COLL_XALLOC_H
#define COLL_XALLOC_H

#include <stddef.h>

/* xalloc.c */
void *xmalloc(size_t n);
/* Zeroed; n or size 0 still returns a unique pointer. */
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

#endif
