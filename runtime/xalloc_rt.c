/*
 * xalloc_rt.c - the allocation functions of lang/xalloc.h for the files
 * of the compiler that libcollrt also links (lang/linkmodel.c,
 * codegen/cost.c, codegen/reorder.c: one cost model and one search for
 * `collc reorder` and `reorder at init`, not two).
 *
 * In collc, xmalloc and friends abort on out-of-memory (collc holds
 * nothing worth saving).  A library must never abort or exit on its
 * caller's behalf, so here they are plain malloc: they return NULL, and
 * every call of them in those files is followed by a NULL check that
 * returns an error (cost.c "out of memory ..."; linkmodel.c and reorder.c
 * use malloc directly, checked the same way), which reorder.c turns into
 * COLL_ERR_NOMEM.  That is the chosen failure path: errors returned,
 * rather than a longjmp out of the search, which would leak what the
 * search had allocated and skip its cleanup.
 */
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void *xmalloc(size_t n) { return malloc(n ? n : 1); }
void *xcalloc(size_t n, size_t size) { return calloc(n ? n : 1, size ? size : 1); }
void *xrealloc(void *p, size_t n) { return realloc(p, n ? n : 1); }
char *xstrdup(const char *s) { return strdup(s); }
