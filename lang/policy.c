/*
 * policy.c - `policy NAME { ... }` declarations checked into the runtime's
 * coll_rail_policy (coll.h), which a cluster's library carries and
 * libcollrt's rails.c follows.  A statement is a sequence of words; this
 * file knows the five statements and points at the word that is wrong:
 *
 *   cold below SIZE|auto [: fastest];   messages below SIZE take the
 *   cold always [: fastest];            lowest-latency rail whole
 *   hot : split by throughput|latency|equal [, rebalance every K];
 *   tolerance X|none;                   a rail > X times slower gets no share
 *   failover within TIME;               10ms .. 600s
 *
 * What a policy leaves out is COLL_RAIL_POLICY_DEFAULT's (the one place
 * the defaults live); a statement given twice is an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "diag.h"
#include "policy.h"
#include "xalloc.h"

typedef struct {
	ast **w;
	int n, at;
	ast *stmt;
} words;

static ast *peek(words *s) { return s->at < s->n ? s->w[s->at] : NULL; }

/* The rail split modes by name, from their table. */
static const char *const split_names[] = {
#define COLL_SPLIT(id, name, what) name,
#include "coll_splits.def"
#undef COLL_SPLIT
};

static bool is(ast *w, const char *name) { return w && w->kind == A_NAME && strcmp(w->str, name) == 0; }

/* "found 'x'" / "found the end of the statement" */
static void found(ast *w, char *buf, size_t len)
{
	if (!w)
		snprintf(buf, len, "the end of the statement");
	else if (w->kind == A_INT)
		snprintf(buf, len, "%lld", (long long)w->ival);
	else if (w->kind == A_TIME) {
		static const struct { int64_t ns; const char *unit; } u[] = {{1000000000, "s"}, {1000000, "ms"}, {1000, "us"}};
		int k = 0;
		while (k < 3 && w->ival % u[k].ns)
			k++;
		snprintf(buf, len, "%lld%s", (long long)(k < 3 ? w->ival / u[k].ns : w->ival), k < 3 ? u[k].unit : "ns");
	}
	else
		snprintf(buf, len, "'%s'", w->str);
}

/* Expect the word `name`; error at what is there instead. */
static int want(words *s, const char *name, const char *after)
{
	ast *w = peek(s);
	if (is(w, name)) {
		s->at++;
		return 0;
	}
	char f[64];
	found(w, f, sizeof f);
	diag_error(w ? w->pos : s->w[s->n - 1]->pos, "expected '%s' after %s, found %s", name, after, f);
	return -1;
}

static int end(words *s, const char *what)
{
	ast *w = peek(s);
	if (!w)
		return 0;
	char f[64];
	found(w, f, sizeof f);
	diag_error(w->pos, "unexpected %s at the end of %s", f, what);
	return -1;
}

static int cold(words *s, coll_rail_policy *p)
{
	ast *w = peek(s);
	if (is(w, "always")) {
		s->at++;
		p->cold_bytes = COLL_COLD_ALWAYS;
	} else if (is(w, "below")) {
		s->at++;
		ast *v = peek(s);
		if (is(v, "auto")) {
			p->cold_bytes = COLL_COLD_AUTO;
		} else if (v && v->kind == A_INT && v->ival >= 0 && v->ival <= (1LL << 40)) {
			p->cold_bytes = v->ival;
		} else {
			char f[64];
			found(v, f, sizeof f);
			diag_error(v ? v->pos : w->pos, "'cold below' needs a size (such as 256KiB, at most 1TiB) or "
				   "'auto', found %s", f);
			return -1;
		}
		s->at++;
	} else {
		char f[64];
		found(w, f, sizeof f);
		diag_error(w ? w->pos : s->stmt->pos, "expected 'below' or 'always' after 'cold', found %s", f);
		return -1;
	}
	if (is(peek(s), ":")) {
		s->at++;
		if (want(s, "fastest", "'cold ... :'"))
			return -1;   /* the one rail a cold message can take */
	}
	return end(s, "'cold'");
}

static int hot(words *s, coll_rail_policy *p)
{
	if (want(s, ":", "'hot'") || want(s, "split", "'hot :'") || want(s, "by", "'split'"))
		return -1;
	ast *w = peek(s);
	p->split = -1;
	for (int k = 0; k < COLL_NSPLITS && p->split < 0; k++)
		if (is(w, split_names[k]))
			p->split = k;
	if (p->split < 0) {
		char f[64], names[128] = "";
		found(w, f, sizeof f);
		for (int k = 0, at = 0; k < COLL_NSPLITS; k++)
			at += snprintf(names + at, sizeof names - (size_t)at, "%s%s", k == 0 ? "" : k < COLL_NSPLITS - 1 ?
				       ", " : " or ", split_names[k]);
		diag_error(w ? w->pos : s->w[s->n - 1]->pos, "expected %s after 'split by', found %s", names, f);
		return -1;
	}
	s->at++;
	if (!peek(s))
		return 0;
	if (want(s, ",", "the split") || want(s, "rebalance", "','") || want(s, "every", "'rebalance'"))
		return -1;
	ast *k = peek(s);
	if (!k || k->kind != A_INT || k->ival < 1 || k->ival > 1000000) {
		char f[64];
		found(k, f, sizeof f);
		diag_error(k ? k->pos : s->w[s->n - 1]->pos, "'rebalance every' needs a number of calls in 1..1000000, "
			   "found %s", f);
		return -1;
	}
	p->rebalance_calls = (int32_t)k->ival;
	s->at++;
	if (is(peek(s), "calls"))
		s->at++;
	return end(s, "'hot'");
}

static int tolerance(words *s, coll_rail_policy *p)
{
	ast *w = peek(s);
	if (is(w, "none")) {
		p->tolerance = 0;
	} else if (w && w->kind == A_INT && w->ival >= 1 && w->ival <= 1000000) {
		p->tolerance = (double)w->ival;
	} else {
		char f[64];
		found(w, f, sizeof f);
		diag_error(w ? w->pos : s->stmt->pos, "'tolerance' needs a ratio of at least 1 (a rail that many times "
			   "slower than the best gets no share) or 'none', found %s", f);
		return -1;
	}
	s->at++;
	return end(s, "'tolerance'");
}

static int failover(words *s, coll_rail_policy *p)
{
	if (want(s, "within", "'failover'"))
		return -1;
	ast *w = peek(s);
	if (!w || w->kind != A_TIME || w->ival < 10000000LL || w->ival > 600000000000LL) {
		char f[64];
		found(w, f, sizeof f);
		diag_error(w ? w->pos : s->w[s->n - 1]->pos, "'failover within' needs a time from 10ms to 600s, "
			   "found %s", f);
		return -1;
	}
	p->failover_ms = (int32_t)(w->ival / 1000000);
	s->at++;
	return end(s, "'failover'");
}

int policy_check(ast *decl, coll_rail_policy *out)
{
	static const coll_rail_policy dflt = COLL_RAIL_POLICY_DEFAULT;
	static const struct {
		const char *name;
		int (*fn)(words *, coll_rail_policy *);
	} stmts[] = {{"cold", cold}, {"hot", hot}, {"tolerance", tolerance}, {"failover", failover}};
	enum { NSTMT = sizeof stmts / sizeof stmts[0] };
	*out = dflt;
	out->name = decl->str;
	ast *seen[NSTMT] = {0};
	int errors = 0;
	for (int i = 0; i < decl->list.n; i++) {
		ast *st = decl->list.v[i];
		words s = {st->list.v, st->list.n, 1, st};
		ast *head = st->list.v[0];
		int k = 0;
		while (k < NSTMT && !is(head, stmts[k].name))
			k++;
		if (k == NSTMT) {
			char f[64];
			found(head, f, sizeof f);
			diag_error(head->pos, "unknown policy statement %s (expected cold, hot, tolerance or failover)", f);
			errors++;
			continue;
		}
		if (seen[k]) {
			diag_error(head->pos, "policy '%s' says '%s' twice", decl->str, stmts[k].name);
			diag_note(seen[k]->pos, "first here");
			errors++;
			continue;
		}
		seen[k] = head;
		errors += stmts[k].fn(&s, out) != 0;
	}
	if (!errors && out->cold_bytes == COLL_COLD_ALWAYS && seen[1]) {
		diag_error(seen[1]->pos, "policy '%s' sends every message on one rail ('cold always'): 'hot' would never "
			   "apply", decl->str);
		errors++;
	}
	return errors ? -1 : 0;
}

int policy_line(const coll_rail_policy *p, char *buf, size_t len)
{
	char cold[32];
	if (p->cold_bytes == COLL_COLD_AUTO)
		snprintf(cold, sizeof cold, "auto");
	else if (p->cold_bytes == COLL_COLD_ALWAYS)
		snprintf(cold, sizeof cold, "always");
	else
		snprintf(cold, sizeof cold, "%lld", (long long)p->cold_bytes);
	return snprintf(buf, len, "cold=%s,split=%s,rebalance=%d,tolerance=%g,failover=%d", cold,
			split_names[p->split >= 0 && p->split < COLL_NSPLITS ? p->split : 0], (int)p->rebalance_calls, p->tolerance,
			(int)p->failover_ms);
}

int policy_each(const struct drv_prog *p, bool named_only, int *count,
		void (*fn)(const coll_rail_policy *pol, void *arg), void *arg)
{
	int n = drv_policy_list(p, named_only, NULL, 0), bad = 0;
	ast **v = xmalloc((size_t)(n + 1) * sizeof *v);
	drv_policy_list(p, named_only, v, n);
	for (int i = 0; i < n; i++) {
		coll_rail_policy pol;
		if (policy_check(v[i], &pol) != 0)
			bad++;
		else if (fn)
			fn(&pol, arg);
	}
	free(v);
	*count = n;
	return bad;
}
