/*
 * ast.c - arena allocation for the syntax tree.  Every node, name and list
 * of one program lives in one arena and is freed in one call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"

struct block {
	struct block *next;
	size_t used, cap;
	max_align_t data[];
};

struct arena {
	struct block *head;
};

static struct block *block_new(size_t cap, struct block *next)
{
	struct block *b = malloc(sizeof *b + cap);
	if (!b) {
		fputs("collc: out of memory\n", stderr);
		abort();
	}
	b->next = next;
	b->used = 0;
	b->cap = cap;
	return b;
}

struct arena *arena_new(void)
{
	struct arena *a = calloc(1, sizeof *a);
	if (!a)
		abort();
	return a;
}

void arena_free(struct arena *a)
{
	if (!a)
		return;
	for (struct block *b = a->head, *nx; b; b = nx) {
		nx = b->next;
		free(b);
	}
	free(a);
}

void *arena_alloc(struct arena *a, size_t n)
{
	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!a->head || a->head->cap - a->head->used < n)
		a->head = block_new(n > 65536 ? n : 65536, a->head);
	void *p = (char *)a->head->data + a->head->used;
	a->head->used += n;
	memset(p, 0, n);
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *d = arena_alloc(a, n + 1);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

ast *ast_new(struct arena *a, ast_kind kind, srcpos pos)
{
	ast *x = arena_alloc(a, sizeof *x);
	x->kind = kind;
	x->pos = pos;
	return x;
}

void ast_push(struct arena *a, ast_list *l, ast *x)
{
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 4;
		ast **v = arena_alloc(a, cap * sizeof *v);
		if (l->n)
			memcpy(v, l->v, l->n * sizeof *v);
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = x;
}
