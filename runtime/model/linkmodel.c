/*
 * linkmodel.c - link models: uniform and per-pair matrix latencies and
 * bandwidths, and the shared segments (groups of ranks, uplinks,
 * segments) built by typed calls or from declaration lines (see
 * linkmodel.h for both).
 *
 * Pipeline position: the model floor.  collc builds a model from its
 * flags, a links file (linkfile.c) or a cluster's settings; libcollrt
 * from what coll_probe measured (runtime/reorder.c); the cost model and
 * the reordering search only read it, through the inline lookups of
 * linkmodel.h.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linkmodel.h"

int link_check_alpha(const char *what, double alpha, link_error *err)
{
	if (!(alpha >= 0 && alpha <= LINK_MAX_ALPHA))
		return link_errorf(err, "%s %g s out of range: from 0 to %g s (an hour)", what, alpha, LINK_MAX_ALPHA);
	return 0;
}

int link_check_bw(const char *what, double bw, link_error *err)
{
	if (!(bw >= LINK_MIN_BW && bw <= LINK_MAX_BW))
		return link_errorf(err, "%s %g B/s out of range: from 1 bit/s to %g B/s", what, bw, LINK_MAX_BW);
	return 0;
}

int link_check_values(const link_model *lm, link_error *err)
{
	link_error e;
	if (lm->kind == LINK_UNIFORM)
		return link_check_alpha("latency", lm->alpha, err) || link_check_bw("bandwidth", 1 / lm->beta, err)
			       ? -1 : 0;
	for (int i = 0; i < lm->n; i++)
		for (int j = 0; j < lm->n; j++)
			if (i != j && (link_check_alpha("latency", link_alpha(lm, i, j), &e) ||
				       link_check_bw("bandwidth", 1 / link_beta(lm, i, j), &e)))
				return link_errorf(err, "pair %d -> %d: %s", i, j, e.msg);
	if (lm->rank_bw > 0 && link_check_bw("rank-bw", lm->rank_bw, err))
		return -1;
	for (int i = 0; i < lm->nsegs; i++)
		if (link_check_bw("bandwidth", lm->segs[i].cap, &e))
			return link_errorf(err, "segment %s: %s", lm->segs[i].name, e.msg);
	return 0;
}

int link_uniform(link_model *lm, double alpha, double bw, link_error *err)
{
	memset(lm, 0, sizeof *lm);
	if (link_check_alpha("latency", alpha, err) || link_check_bw("bandwidth", bw, err))
		return -1;
	lm->kind = LINK_UNIFORM;
	lm->alpha = alpha;
	lm->beta = 1 / bw;
	char a[32], b[32], d[96];
	snprintf(d, sizeof d, "uniform alpha %s, bw %s", link_fmt_time(alpha, a, sizeof a),
		 link_fmt_bw(bw, b, sizeof b));
	lm->source = strdup(d);
	return 0;
}

int link_matrix(link_model *lm, int n, double alpha, double bw, link_error *err)
{
	memset(lm, 0, sizeof *lm);
	if (n < 1 || n > LINK_MAX_RANKS)
		return link_errorf(err, "matrix rank count %d out of range", n);
	if (link_check_alpha("latency", alpha, err) || link_check_bw("bandwidth", bw, err))
		return -1;
	lm->kind = LINK_MATRIX;
	lm->n = n;
	lm->alpha_m = malloc(sizeof(double) * (size_t)n * (size_t)n);
	lm->beta_m = malloc(sizeof(double) * (size_t)n * (size_t)n);
	if (!lm->alpha_m || !lm->beta_m) {
		link_free(lm);
		return link_errorf(err, "out of memory for a %d-rank matrix", n);
	}
	for (size_t i = 0; i < (size_t)n * (size_t)n; i++) {
		lm->alpha_m[i] = alpha;
		lm->beta_m[i] = 1 / bw;
	}
	lm->source = strdup("matrix");
	return 0;
}

void link_set(link_model *lm, int src, int dst, double alpha, double bw)
{
	lm->alpha_m[src * lm->n + dst] = alpha;
	lm->beta_m[src * lm->n + dst] = 1 / bw;
}

/* --- the index of names ------------------------------------------------------ */

/* Names of groups and segments hashed, so that declaring, finding and
 * checking a name for a duplicate cost O(1) whatever their number (a
 * list walked per line made 40,000 group lines take 5 s), and the
 * arrays' capacities, which grow by doubling.  Open addressing: slots
 * hold an index + 1 (0: empty), and at most half are full. */
struct link_index {
	int *gslot, *sslot;     /* groups, segments */
	int gmask, smask;       /* slots - 1 (0: no table yet) */
	int gcap, scap;         /* capacities of lm->groups, lm->segs */
	long group_bytes;       /* sum of the groups' len (LINK_MAX_GROUP_BYTES) */
};

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;   /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

/* The slot of name in lm's table of groups (segs: of segments): the
 * one holding it, or the empty one where it would go. */
static int slot_of(const link_model *lm, bool segs, const char *name)
{
	const struct link_index *x = lm->index;
	const int *slot = segs ? x->sslot : x->gslot;
	int mask = segs ? x->smask : x->gmask, i = (int)(name_hash(name) & (uint64_t)mask);
	for (; slot[i]; i = (i + 1) & mask)
		if (strcmp(segs ? lm->segs[slot[i] - 1].name : lm->groups[slot[i] - 1].name, name) == 0)
			break;
	return i;
}

static struct link_index *index_of(link_model *lm)
{
	if (!lm->index)
		lm->index = calloc(1, sizeof *lm->index);
	return lm->index;
}

/* Make room for one more group (segs: segment) in lm's array and table:
 * 0, or -1 out of memory. */
static int grow(link_model *lm, bool segs)
{
	struct link_index *x = index_of(lm);
	if (!x)
		return -1;
	int count = segs ? lm->nsegs : lm->ngroups, *cap = segs ? &x->scap : &x->gcap;
	if (count == *cap) {
		int nc = *cap ? 2 * *cap : 8;
		void *na = segs ? realloc(lm->segs, sizeof *lm->segs * (size_t)nc)
				: realloc(lm->groups, sizeof *lm->groups * (size_t)nc);
		if (!na)
			return -1;
		if (segs)
			lm->segs = na;
		else
			lm->groups = na;
		*cap = nc;
	}
	int **slot = segs ? &x->sslot : &x->gslot, *mask = segs ? &x->smask : &x->gmask;
	if (2 * (count + 1) > *mask) {   /* rehash into twice the slots */
		int nm = *mask ? 2 * *mask + 1 : 15;
		while (2 * (count + 1) > nm)
			nm = 2 * nm + 1;
		int *ns = calloc((size_t)nm + 1, sizeof *ns);
		if (!ns)
			return -1;
		free(*slot);
		*slot = ns;
		*mask = nm;
		for (int i = 0; i < count; i++)
			ns[slot_of(lm, segs, segs ? lm->segs[i].name : lm->groups[i].name)] = i + 1;
	}
	return 0;
}

static void free_segments(link_model *lm)
{
	for (int i = 0; i < lm->ngroups; i++) {
		free(lm->groups[i].name);
		free(lm->groups[i].in);
	}
	for (int i = 0; i < lm->nsegs; i++)
		free(lm->segs[i].name);
	free(lm->groups);
	free(lm->segs);
	if (lm->index) {
		free(lm->index->gslot);
		free(lm->index->sslot);
		free(lm->index);
	}
	lm->groups = NULL, lm->segs = NULL, lm->index = NULL;
	lm->ngroups = lm->nsegs = 0;
}

void link_free(link_model *lm)
{
	free(lm->alpha_m);
	free(lm->beta_m);
	free(lm->source);
	free_segments(lm);
	memset(lm, 0, sizeof *lm);
}

int link_set_rank_bw(link_model *lm, double bw, link_error *err)
{
	if (bw != 0 && link_check_bw("rank bandwidth", bw, err))
		return -1;
	lm->rank_bw = bw;
	return 0;
}

int link_set_host(link_model *lm, const link_host *h, link_error *err)
{
	if (h->mem_bw != 0 && link_check_bw("mem-bw", h->mem_bw, err))
		return -1;
	if (h->reduce_bw != 0 && link_check_bw("reduce-bw", h->reduce_bw, err))
		return -1;
	if (h->cores < 0 || h->cores > LINK_MAX_CORES)
		return link_errorf(err, "cores %d out of range: from 1 to %d", h->cores, LINK_MAX_CORES);
	lm->host = *h;
	return 0;
}

int link_check_n(const link_model *lm, int n, link_error *err)
{
	if (lm->kind == LINK_MATRIX && lm->n != n)
		return link_errorf(err, "the link matrix %s has %d ranks but the schedule has %d",
			    lm->source ? lm->source : "", lm->n, n);
	for (int g = 0; g < lm->ngroups; g++)
		if (lm->groups[g].len > n)
			return link_errorf(err, "group %s names rank %d, but there are %d ranks", lm->groups[g].name,
					   lm->groups[g].len - 1, n);
	return 0;
}

/* --- groups and segments ---------------------------------------------------- */

int link_group_find(const link_model *lm, const char *name)
{
	if (lm->ngroups == 0)
		return -1;
	return lm->index->gslot[slot_of(lm, false, name)] - 1;
}

int link_segment_find(const link_model *lm, const char *name)
{
	if (lm->nsegs == 0)
		return -1;
	return lm->index->sslot[slot_of(lm, true, name)] - 1;
}

/* A name of a group or segment: a letter or '_', then letters, digits,
 * '_', '-' and '.' (so that it never reads as a rank, `*` or `!`). */
static bool good_name(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

/* The checks of a name of kind "group" or "segment": its characters, and
 * at most LINK_NAME_MAX of them (so that NAME.down and NAME.back fit). */
static int name_ok(const char *kind, const char *name, link_error *err)
{
	if (!good_name(name))
		return link_errorf(err, "bad %s name '%s' (a letter or _, then letters, digits, _ - .)", kind, name);
	if (strlen(name) > LINK_NAME_MAX)
		return link_errorf(err, "bad %s name '%.20s...': longer than %d characters", kind, name, LINK_NAME_MAX);
	return 0;
}

/* The name checks of a new group, before its ranks are read. */
static int group_name_ok(const link_model *lm, const char *name, link_error *err)
{
	if (name_ok("group", name, err))
		return -1;
	if (link_group_find(lm, name) >= 0)
		return link_errorf(err, "a second group named '%s'", name);
	return 0;
}

/* Add a group whose membership is already the bitmap in[0..len) (taken
 * over: freed on failure too). */
static int add_group_in(link_model *lm, const char *name, unsigned char *in, int len, int count, link_error *err)
{
	if (lm->index && lm->index->group_bytes + len > LINK_MAX_GROUP_BYTES) {
		free(in);
		return link_errorf(err, "group %s: the groups' tables of ranks would take more than "
				   LINK_MAX_GROUP_BYTES_TEXT " (a group takes 1 + its largest rank bytes)", name);
	}
	char *nm = strdup(name);
	if (!nm || grow(lm, false)) {
		free(in);
		free(nm);
		return link_errorf(err, "out of memory");
	}
	lm->groups[lm->ngroups] = (link_group){ nm, in, len, count };
	lm->index->gslot[slot_of(lm, false, nm)] = lm->ngroups + 1;
	lm->index->group_bytes += len;
	return lm->ngroups++;
}

/* Mark rank r of a group being read in *in (grown to hold it, *cap its
 * size, doubling): 0, or -1 with a message for a rank out of range or
 * listed twice. */
static int group_mark(const char *name, unsigned char **in, int *len, int *cap, long r, link_error *err)
{
	if (r < 0 || r >= LINK_MAX_RANKS)
		return link_errorf(err, "group %s: bad rank '%ld'", name, r);
	if (r >= *cap) {
		long nc = *cap ? 2L * *cap : 64;
		if (nc < r + 1)
			nc = r + 1;
		if (nc > LINK_MAX_RANKS)
			nc = LINK_MAX_RANKS;
		unsigned char *ni = realloc(*in, (size_t)nc);
		if (!ni)
			return link_errorf(err, "out of memory");
		memset(ni + *cap, 0, (size_t)(nc - *cap));
		*in = ni;
		*cap = (int)nc;
	}
	if (r >= *len)
		*len = (int)r + 1;
	if ((*in)[r])
		return link_errorf(err, "group %s: rank %ld listed twice", name, r);
	(*in)[r] = 1;
	return 0;
}

/* A group's table cut to its len (the doubling's slack given back, so
 * that LINK_MAX_GROUP_BYTES counts what is held). */
static unsigned char *trim(unsigned char *in, int len)
{
	unsigned char *t = realloc(in, (size_t)len + 1);
	return t ? t : in;
}

int link_add_group(link_model *lm, const char *name, const int *ranks, int count, link_error *err)
{
	if (group_name_ok(lm, name, err))
		return -1;
	if (count < 1)
		return link_errorf(err, "group %s: no ranks", name);
	unsigned char *in = NULL;
	int len = 0, cap = 0;
	for (int i = 0; i < count; i++)
		if (group_mark(name, &in, &len, &cap, ranks[i], err)) {
			free(in);
			return -1;
		}
	return add_group_in(lm, name, trim(in, len), len, count, err);
}

static int add_segment(link_model *lm, const char *name, int src, bool src_not, int dst, bool dst_not,
		       double cap, link_decl decl, link_error *err)
{
	if (link_segment_find(lm, name) >= 0)
		return link_errorf(err, "a second segment named '%s'", name);
	char *nm = strdup(name);
	if (!nm || grow(lm, true)) {
		free(nm);
		return link_errorf(err, "out of memory");
	}
	lm->segs[lm->nsegs] = (link_segment){ nm, src, dst, src_not, dst_not, cap, decl };
	lm->index->sslot[slot_of(lm, true, nm)] = lm->nsegs + 1;
	lm->nsegs++;
	return 0;
}

int link_add_uplink(link_model *lm, int g, double bw, link_error *err)
{
	if (g < 0 || g >= lm->ngroups)
		return link_errorf(err, "uplink of group %d: no such group", g);
	link_error e;
	if (link_check_bw("bandwidth", bw, &e))
		return link_errorf(err, "uplink %s: %s", lm->groups[g].name, e.msg);
	char up[LINK_NAME_MAX + 8], down[LINK_NAME_MAX + 8];
	snprintf(up, sizeof up, "%s.up", lm->groups[g].name);
	snprintf(down, sizeof down, "%s.down", lm->groups[g].name);
	if (link_segment_find(lm, up) >= 0)
		return link_errorf(err, "a second uplink of group %s", lm->groups[g].name);
	if (add_segment(lm, up, g, false, g, true, bw, LINK_DECL_UP, err) ||
	    add_segment(lm, down, g, true, g, false, bw, LINK_DECL_DOWN, err))
		return -1;
	return 0;
}

int link_add_segment(link_model *lm, const char *name, link_end from, link_end to, bool both, double bw,
		     link_error *err)
{
	if (name_ok("segment", name, err))
		return -1;
	if ((from.group != LINK_ANY && (from.group < 0 || from.group >= lm->ngroups)) ||
	    (to.group != LINK_ANY && (to.group < 0 || to.group >= lm->ngroups)))
		return link_errorf(err, "segment %s: no such group", name);
	link_error e;
	if (link_check_bw("bandwidth", bw, &e))
		return link_errorf(err, "segment %s: %s", name, e.msg);
	char back[LINK_NAME_MAX + 8];
	snprintf(back, sizeof back, "%s.back", name);
	if (add_segment(lm, name, from.group, from.neg, to.group, to.neg, bw, both ? LINK_DECL_BOTH : LINK_DECL_ONEWAY,
			err) ||
	    (both && add_segment(lm, back, to.group, to.neg, from.group, from.neg, bw, LINK_DECL_BACK, err)))
		return -1;
	return 0;
}

int link_copy_segments(link_model *dst, const link_model *src, link_error *err)
{
	if (src->rank_bw > 0)
		dst->rank_bw = src->rank_bw;
	if (src->host.mem_bw > 0)
		dst->host.mem_bw = src->host.mem_bw;
	if (src->host.reduce_bw > 0)
		dst->host.reduce_bw = src->host.reduce_bw;
	if (src->host.cores > 0)
		dst->host.cores = src->host.cores;
	const int g0 = dst->ngroups;
	for (int g = 0; g < src->ngroups; g++) {
		const link_group *x = &src->groups[g];
		if (group_name_ok(dst, x->name, err))
			return -1;
		unsigned char *in = malloc((size_t)x->len + 1);
		if (!in)
			return link_errorf(err, "out of memory");
		memcpy(in, x->in, (size_t)x->len);
		if (add_group_in(dst, x->name, in, x->len, x->count, err) < 0)
			return -1;
	}
	for (int i = 0; i < src->nsegs; i++) {
		const link_segment *s = &src->segs[i];
		if (add_segment(dst, s->name, s->src == LINK_ANY ? LINK_ANY : g0 + s->src, s->src_not,
				s->dst == LINK_ANY ? LINK_ANY : g0 + s->dst, s->dst_not, s->cap, s->decl, err))
			return -1;
	}
	return 0;
}

/* --- declaration lines ------------------------------------------------------- */

/* An endpoint: `*`, NAME or !NAME. */
static int endpoint(const link_model *lm, const char *tok, link_end *e, link_error *err)
{
	e->neg = false;
	if (strcmp(tok, "*") == 0) {
		e->group = LINK_ANY;
		return 0;
	}
	if (*tok == '!') {
		e->neg = true;
		tok++;
	}
	e->group = link_group_find(lm, tok);
	if (e->group < 0)
		return link_errorf(err, "no group named '%s' (declare it first: group %s RANK...)", tok, tok);
	return 0;
}

/* A group line's ranks: the words of line after its first two (a group
 * may list more ranks than fit a token array). */
static int declare_group(link_model *lm, const char *line, const char *name, link_error *err)
{
	if (group_name_ok(lm, name, err))
		return -1;
	const char *rest = line;
	for (int w = 0; w < 2; w++) {
		rest += strspn(rest, " \t\r\n");
		rest += strcspn(rest, " \t\r\n");
	}
	int len = 0, cap = 0, count = 0;
	unsigned char *in = NULL;
	char *rb = strndup(rest, strcspn(rest, "#")), *save = NULL;
	if (!rb)
		return link_errorf(err, "out of memory");
	for (char *t = strtok_r(rb, " \t\r\n,", &save); t; t = strtok_r(NULL, " \t\r\n,", &save)) {
		char *end;
		errno = 0;
		long r = strtol(t, &end, 10);
		if (*end || end == t || errno || r < 0 || r >= LINK_MAX_RANKS || !isdigit((unsigned char)*t)) {
			free(in);
			link_errorf(err, "group %s: bad rank '%s'", name, t);
			free(rb);
			return -1;
		}
		if (group_mark(name, &in, &len, &cap, r, err)) {
			free(in);
			free(rb);
			return -1;
		}
		count++;
	}
	free(rb);
	if (count == 0)
		return link_errorf(err, "group %s: no ranks", name);
	return add_group_in(lm, name, trim(in, len), len, count, err) < 0 ? -1 : 0;
}

/* link_declare's work on the tokens of line (tok[0..min(nt, 8))): 1, 0
 * (not a declaration) or -1. */
static int declare_tokens(link_model *lm, const char *line, char **tok, int nt, link_error *err)
{
	const char *kw = tok[0];
	double bw;
	link_error e2;
	if (strcmp(kw, "rank-bw") == 0) {
		if (nt != 2)
			return link_errorf(err, "expected 'rank-bw BANDWIDTH'");
		if (lm->rank_bw > 0)   /* the rule for everything: nothing given twice */
			return link_errorf(err, "a second rank-bw (a rank's bandwidth is given already)");
		if (link_parse_bw(tok[1], &bw, &e2) || link_set_rank_bw(lm, bw, &e2))
			return link_errorf(err, "rank-bw: %s", e2.msg);
	} else if (strcmp(kw, "mem-bw") == 0 || strcmp(kw, "reduce-bw") == 0) {
		bool mem = kw[0] == 'm';
		link_host h = lm->host;
		if (nt != 2)
			return link_errorf(err, "expected '%s BANDWIDTH'", kw);
		if (mem ? h.mem_bw > 0 : h.reduce_bw > 0)
			return link_errorf(err, "a second %s (the host's is given already)", kw);
		if (link_parse_bw(tok[1], mem ? &h.mem_bw : &h.reduce_bw, &e2) || link_set_host(lm, &h, &e2))
			return link_errorf(err, "%s: %s", kw, e2.msg);
	} else if (strcmp(kw, "cores") == 0) {
		link_host h = lm->host;
		long long c;
		if (nt != 2)
			return link_errorf(err, "expected 'cores N'");
		if (h.cores > 0)
			return link_errorf(err, "a second cores (the host's is given already)");
		if (units_parse_int(tok[1], 1, LINK_MAX_CORES, &c))
			return link_errorf(err, "cores needs an integer in 1..%d, found '%s'", LINK_MAX_CORES, tok[1]);
		h.cores = (int)c;
		if (link_set_host(lm, &h, err))
			return -1;
	} else if (strcmp(kw, "group") == 0) {
		if (nt < 3)
			return link_errorf(err, "expected 'group NAME RANK...'");
		if (declare_group(lm, line, tok[1], err))
			return -1;
	} else if (strcmp(kw, "uplink") == 0) {
		if (nt != 3)
			return link_errorf(err, "expected 'uplink GROUP BANDWIDTH'");
		int g = link_group_find(lm, tok[1]);
		if (g < 0)
			return link_errorf(err, "no group named '%s' (declare it first: group %s RANK...)", tok[1],
					   tok[1]);
		if (link_parse_bw(tok[2], &bw, &e2))
			return link_errorf(err, "uplink %s: %s", tok[1], e2.msg);
		if (link_add_uplink(lm, g, bw, err))
			return -1;
	} else if (strcmp(kw, "segment") == 0) {
		bool both = nt == 6 && strcmp(tok[3], "<->") == 0;
		if (nt != 6 || (!both && strcmp(tok[3], "->") != 0))
			return link_errorf(err, "expected 'segment NAME FROM -> TO BANDWIDTH' (or <->), "
					   "FROM and TO a group, !group or *");
		if (name_ok("segment", tok[1], err))
			return -1;
		link_end a, b;
		if (endpoint(lm, tok[2], &a, err) || endpoint(lm, tok[4], &b, err))
			return -1;
		if (link_parse_bw(tok[5], &bw, &e2))
			return link_errorf(err, "segment %s: %s", tok[1], e2.msg);
		if (link_add_segment(lm, tok[1], a, b, both, bw, err))
			return -1;
	} else {
		return 0;
	}
	return 1;
}

int link_declare(link_model *lm, const char *line, link_error *err)
{
	/* tokens of a heap copy (a group line may be long), without its comment */
	char *buf = strndup(line, strcspn(line, "#"));
	if (!buf)
		return link_errorf(err, "out of memory");
	char *tok[8], *save = NULL;
	int nt = 0;
	for (char *t = strtok_r(buf, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (nt < 8)
			tok[nt] = t;
		nt++;
	}
	int rc = nt == 0 ? 0 : declare_tokens(lm, line, tok, nt, err);
	free(buf);
	return rc;
}

char *link_describe(const link_model *lm, char *buf, size_t len)
{
	int k;
	if (lm->kind == LINK_UNIFORM)
		k = snprintf(buf, len, "%s", lm->source ? lm->source : "uniform");
	else
		k = snprintf(buf, len, "matrix %s (%d ranks)", lm->source ? lm->source : "", lm->n);
	if (lm->rank_bw > 0 && k >= 0 && (size_t)k < len) {
		char b[32];
		k += snprintf(buf + k, len - (size_t)k, ", rank bw %s shared",
			      link_fmt_bw(lm->rank_bw, b, sizeof b));
	}
	if (link_has_host(lm) && k >= 0 && (size_t)k < len) {
		char b1[32], b2[32], c[32];
		snprintf(c, sizeof c, "%d", lm->host.cores);
		k += snprintf(buf + k, len - (size_t)k, "; host: mem %s, reduce %s/core, %s cores",
			      lm->host.mem_bw > 0 ? link_fmt_bw(lm->host.mem_bw, b1, sizeof b1) : "-",
			      lm->host.reduce_bw > 0 ? link_fmt_bw(lm->host.reduce_bw, b2, sizeof b2) : "-",
			      lm->host.cores > 0 ? c : "n");
	}
	if (lm->nsegs > 0 && k >= 0 && (size_t)k < len)
		snprintf(buf + k, len - (size_t)k, ", %d group%s, %d shared segment%s", lm->ngroups,
			 lm->ngroups == 1 ? "" : "s", lm->nsegs, lm->nsegs == 1 ? "" : "s");
	return buf;
}

