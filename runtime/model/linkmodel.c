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

int link_uniform(link_model *lm, double alpha, double bw, link_error *err)
{
	memset(lm, 0, sizeof *lm);
	if (!(alpha >= 0) || !isfinite(alpha))
		return link_errorf(err, "latency must be >= 0");
	if (!(bw > 0) || !isfinite(bw))
		return link_errorf(err, "bandwidth must be positive");
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
	if (n < 1 || n > 65536)
		return link_errorf(err, "matrix rank count %d out of range", n);
	if (!(alpha >= 0) || !(bw > 0))
		return link_errorf(err, "latency must be >= 0 and bandwidth positive");
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
	lm->groups = NULL, lm->segs = NULL;
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
	if (!(bw >= 0) || !isfinite(bw))
		return link_errorf(err, "rank bandwidth must be positive");
	lm->rank_bw = bw;
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
	for (int g = 0; g < lm->ngroups; g++)
		if (strcmp(lm->groups[g].name, name) == 0)
			return g;
	return -1;
}

static int seg_find(const link_model *lm, const char *name)
{
	for (int i = 0; i < lm->nsegs; i++)
		if (strcmp(lm->segs[i].name, name) == 0)
			return i;
	return -1;
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
	link_group *ng = realloc(lm->groups, sizeof *ng * (size_t)(lm->ngroups + 1));
	char *nm = strdup(name);
	if (!ng || !nm) {
		free(in);
		free(nm);
		if (ng)
			lm->groups = ng;
		return link_errorf(err, "out of memory");
	}
	lm->groups = ng;
	lm->groups[lm->ngroups] = (link_group){ nm, in, len, count };
	return lm->ngroups++;
}

/* Mark rank r of a group being read in *in (grown to hold it): 0, or -1
 * with a message for a rank out of range or listed twice. */
static int group_mark(const char *name, unsigned char **in, int *len, long r, link_error *err)
{
	if (r < 0 || r >= LINK_MAX_RANKS)
		return link_errorf(err, "group %s: bad rank '%ld'", name, r);
	if (r >= *len) {
		unsigned char *ni = realloc(*in, (size_t)r + 1);
		if (!ni)
			return link_errorf(err, "out of memory");
		memset(ni + *len, 0, (size_t)(r + 1 - *len));
		*in = ni;
		*len = (int)r + 1;
	}
	if ((*in)[r])
		return link_errorf(err, "group %s: rank %ld listed twice", name, r);
	(*in)[r] = 1;
	return 0;
}

int link_add_group(link_model *lm, const char *name, const int *ranks, int count, link_error *err)
{
	if (group_name_ok(lm, name, err))
		return -1;
	if (count < 1)
		return link_errorf(err, "group %s: no ranks", name);
	unsigned char *in = NULL;
	int len = 0;
	for (int i = 0; i < count; i++)
		if (group_mark(name, &in, &len, ranks[i], err)) {
			free(in);
			return -1;
		}
	return add_group_in(lm, name, in, len, count, err);
}

static int add_segment(link_model *lm, const char *name, int src, bool src_not, int dst, bool dst_not,
		       double cap, link_decl decl, link_error *err)
{
	if (seg_find(lm, name) >= 0)
		return link_errorf(err, "a second segment named '%s'", name);
	link_segment *ns = realloc(lm->segs, sizeof *ns * (size_t)(lm->nsegs + 1));
	if (!ns)
		return link_errorf(err, "out of memory");
	lm->segs = ns;
	char *nm = strdup(name);
	if (!nm)
		return link_errorf(err, "out of memory");
	lm->segs[lm->nsegs++] = (link_segment){ nm, src, dst, src_not, dst_not, cap, decl };
	return 0;
}

static bool good_cap(double bw) { return bw > 0 && isfinite(bw); }

int link_add_uplink(link_model *lm, int g, double bw, link_error *err)
{
	if (g < 0 || g >= lm->ngroups)
		return link_errorf(err, "uplink of group %d: no such group", g);
	if (!good_cap(bw))
		return link_errorf(err, "uplink %s: bandwidth must be positive", lm->groups[g].name);
	char up[LINK_NAME_MAX + 8], down[LINK_NAME_MAX + 8];
	snprintf(up, sizeof up, "%s.up", lm->groups[g].name);
	snprintf(down, sizeof down, "%s.down", lm->groups[g].name);
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
	if (!good_cap(bw))
		return link_errorf(err, "segment %s: bandwidth must be positive", name);
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
	int len = 0, count = 0;
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
		if (group_mark(name, &in, &len, r, err)) {
			free(in);
			free(rb);
			return -1;
		}
		count++;
	}
	free(rb);
	return add_group_in(lm, name, in, len, count, err) < 0 ? -1 : 0;
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
		if (link_parse_bw(tok[1], &bw, &e2))
			return link_errorf(err, "rank-bw: %s", e2.msg);
		lm->rank_bw = bw;
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
	if (lm->nsegs > 0 && k >= 0 && (size_t)k < len)
		snprintf(buf + k, len - (size_t)k, ", %d group%s, %d shared segment%s", lm->ngroups,
			 lm->ngroups == 1 ? "" : "s", lm->nsegs, lm->nsegs == 1 ? "" : "s");
	return buf;
}

