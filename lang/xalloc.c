/*
 * xalloc.c - out-of-memory ends the compiler with a message (xalloc.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
