/*
 * ir.c - building the schedule IR (see ir.h).  The evaluator appends
 * rounds and transfers; everything downstream only reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "xalloc.h"

const char *const ir_kind_names[IR_NKINDS] = {
#define COLL_KIND(id, name, ...) name,
#include "coll_kinds.def"
#undef COLL_KIND
};

/* "a, b, c <last> d" of the names of the kinds with (rooted == want or
 * want < 0) into buf. */
static const char *kind_list(char *buf, size_t len, int want, const char *last)
{
	int k[IR_NKINDS], m = 0;
	for (int i = 0; i < IR_NKINDS; i++)
		if (want < 0 || ir_kind_info((ir_kind)i)->rooted == want)
			k[m++] = i;
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < m && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i == 0 ? "" : i == m - 1 ? last : ", ",
				       ir_kind_names[k[i]]);
	return buf;
}

const char *ir_kind_list(void)
{
	static char buf[256];
	return buf[0] ? buf : kind_list(buf, sizeof buf, -1, " or ");
}

const char *ir_rooted_list(void)
{
	static char buf[128];
	return buf[0] ? buf : kind_list(buf, sizeof buf, 1, " and ");
}

int ir_kind_from_name(const char *name)
{
	for (int k = 0; k < IR_NKINDS; k++)
		if (strcmp(name, ir_kind_names[k]) == 0)
			return k;
	return -1;
}

ir_sched *ir_new(ir_kind kind, const char *algo, int n)
{
	ir_sched *s = xrealloc(NULL, sizeof *s);
	memset(s, 0, sizeof *s);
	s->kind = kind;
	s->algo = strdup(algo);
	s->n = n;
	s->chunks = 1;
	s->ports_send = s->ports_recv = 1;
	return s;
}

void ir_free(ir_sched *s)
{
	if (!s)
		return;
	/* the arrays were charged to the memory budget as they grew (xalloc.h) */
	mem_release((size_t)s->capxfers * sizeof *s->xfers + (size_t)s->caprounds * sizeof *s->rounds);
	free(s->algo);
	xbig_free(s->xfers, (size_t)s->capxfers * sizeof *s->xfers);
	free(s->rounds);
	free(s->poss);
	for (int i = 0; i < s->nphases; i++)
		free(s->phases[i]);
	free(s->phases);
	free(s);
}

int ir_phase(ir_sched *s, const char *name)
{
	for (int i = 0; i < s->nphases; i++)
		if (strcmp(s->phases[i], name) == 0)
			return i;
	s->phases = xrealloc(s->phases, (s->nphases + 1) * sizeof *s->phases);
	s->phases[s->nphases] = strdup(name);
	return s->nphases++;
}

void ir_begin_round(ir_sched *s, int phase, srcpos pos)
{
	if (s->nrounds == s->caprounds) {
		int cap = s->caprounds ? 2 * s->caprounds : 64;
		mem_charge((size_t)(cap - s->caprounds) * sizeof *s->rounds);
		s->caprounds = cap;
		s->rounds = xrealloc(s->rounds, s->caprounds * sizeof *s->rounds);
	}
	ir_round *r = &s->rounds[s->nrounds++];
	r->first = s->nxfers;
	r->count = 0;
	r->phase = phase;
	r->pos = pos;
}

void ir_grow_xfers(ir_sched *s)
{
	int cap = s->capxfers ? 2 * s->capxfers : 256;
	mem_charge((size_t)(cap - s->capxfers) * sizeof *s->xfers);
	/* the largest array of a big schedule (16 bytes a transfer): huge pages */
	s->xfers = xbig_realloc(s->xfers, (size_t)s->capxfers * sizeof *s->xfers, (size_t)cap * sizeof *s->xfers);
	s->capxfers = cap;
}

int ir_pos_index(ir_sched *s, srcpos pos)
{
	/* transfers come in long runs from the same statement: check the last few */
	int p = -1;
	for (int i = s->nposs - 1; i >= 0 && i >= s->nposs - 8; i--)
		if (s->poss[i].file == pos.file && s->poss[i].off == pos.off) {
			p = i;
			break;
		}
	if (p < 0) {
		for (int i = 0; i < s->nposs - 8 && p < 0; i++)
			if (s->poss[i].file == pos.file && s->poss[i].off == pos.off)
				p = i;
	}
	if (p < 0) {
		if (s->nposs == (1 << 24)) {
			p = 0;   /* beyond 16M distinct statements, positions degrade to the first */
		} else {
			if (s->nposs == s->capposs) {
				s->capposs = s->capposs ? 2 * s->capposs : 16;
				s->poss = xrealloc(s->poss, s->capposs * sizeof *s->poss);
			}
			s->poss[s->nposs] = pos;
			p = s->nposs++;
		}
	}
	return p;
}

void ir_end_round(ir_sched *s)
{
	if (s->nrounds > 0 && s->rounds[s->nrounds - 1].count == 0)
		s->nrounds--;
}

void ir_interleave(ir_sched *s, int start, const int *len, int nb)
{
	int longest = 0;
	for (int b = 0; b < nb; b++)
		longest = len[b] > longest ? len[b] : longest;
	if (start >= s->nrounds || nb < 2)
		return;
	int x0 = s->rounds[start].first, nx = s->nxfers - x0, at = 0;
	/* scratch copies, charged while they live (past the budget, the
	 * evaluator stops at its next step) */
	size_t scratch = (size_t)longest * sizeof(ir_round) + (size_t)nx * sizeof(ir_xfer);
	mem_charge(scratch);
	ir_round *rr = xmalloc((size_t)longest * sizeof *rr);
	ir_xfer *xx = xmalloc((size_t)nx * sizeof *xx + 1);
	for (int k = 0; k < longest; k++) {
		rr[k] = (ir_round){ .first = x0 + at, .count = 0, .phase = -1 };
		for (int b = 0, first = start; b < nb; first += len[b], b++) {
			if (k >= len[b])
				continue;
			const ir_round *rd = &s->rounds[first + k];
			if (rr[k].phase < 0) {
				rr[k].phase = rd->phase;
				rr[k].pos = rd->pos;
			}
			memcpy(xx + at, s->xfers + rd->first, (size_t)rd->count * sizeof *xx);
			at += rd->count;
			rr[k].count += rd->count;
		}
	}
	memcpy(s->xfers + x0, xx, (size_t)nx * sizeof *xx);
	memcpy(s->rounds + start, rr, (size_t)longest * sizeof *rr);
	s->nrounds = start + longest;
	free(rr);
	free(xx);
	mem_release(scratch);
}
