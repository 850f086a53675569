/*
 * env.c - the COLL_* environment, read through one table (env.def).
 *
 * coll_init calls rt_env_check first: every variable of the table that is
 * set must parse as its row says (kind, range, the one "off" value) or the
 * init fails, naming the variable, the value and what it expects.  A
 * setting that is silently replaced by its default is worse than one
 * refused: COLL_TIMEOUT=0.0004 used to truncate to "no timeout", and a
 * job with a late rank then ran for 24 s instead of failing in 2.
 *
 * The readers (rt_env_long, rt_env_double) parse through the same rows,
 * so a value means the same thing to the check and to the code that uses
 * it; they fall back to their default only for an unset (or empty)
 * variable, or for a bad one read before rt_env_check ran.  A name that
 * is not in the table is a programming error, caught by the first call.
 *
 * Layer: beside base.c at the bottom of libcollrt; it calls only rt_err
 * and the model floor's units (sizes such as 256K).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "units.h"

static const rt_env_row rows[] = {
#define COLL_ENV(name, kind, unit, min, max, off, values) {#name, RT_ENV_##kind, unit, min, max, off, values},
#include "env.def"
#undef COLL_ENV
};

size_t rt_env_table(const rt_env_row **out)
{
	*out = rows;
	return sizeof rows / sizeof rows[0];
}

const rt_env_row *rt_env_find(const char *name)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (strcmp(rows[i].name, name) == 0)
			return &rows[i];
	return NULL;
}

static const rt_env_row *must_find(const char *name)
{
	const rt_env_row *r = rt_env_find(name);
	if (!r) {
		/* Every variable is a row of env.def: the check, the messages and
		 * the manual come from there. */
		fprintf(stderr, "libcollrt: internal error: %s is read but is not in env.def\n", name);
		abort();
	}
	return r;
}

/* A number as the table prints it: sizes with their unit, others plain. */
static void fmt_num(const rt_env_row *r, double v, char *buf, size_t len)
{
	if (r->kind == RT_ENV_SIZE || r->kind == RT_ENV_POW2)
		link_fmt_size(v, buf, len);
	else
		snprintf(buf, len, "%.15g", v);
}

char *rt_env_expect(const rt_env_row *r, char *buf, size_t len)
{
	char lo[32], hi[32];
	fmt_num(r, r->min, lo, sizeof lo);
	fmt_num(r, r->max, hi, sizeof hi);
	const char *unit = *r->unit ? r->unit : NULL;
	int n = 0;
	switch (r->kind) {
	case RT_ENV_STR:
		n = snprintf(buf, len, "text");
		break;
	case RT_ENV_BOOL:
		n = snprintf(buf, len, "0 or 1");
		break;
	case RT_ENV_ENUM: {
		/* "a|b|c" as "a, b or c" */
		const char *v = r->values, *bar;
		n = 0;
		while ((bar = strchr(v, '|'))) {
			const char *sep = strchr(bar + 1, '|') ? ", " : " or ";
			n += snprintf(buf + n, len > (size_t)n ? len - (size_t)n : 0, "%.*s%s", (int)(bar - v), v, sep);
			v = bar + 1;
		}
		n += snprintf(buf + n, len > (size_t)n ? len - (size_t)n : 0, "%s", v);
		break;
	}
	case RT_ENV_INT:
	case RT_ENV_REAL:
		n = snprintf(buf, len, "%s from %s to %s%s%s%s", r->kind == RT_ENV_INT ? "an integer" : "a number", lo, hi,
		             unit ? " (" : "", unit ? unit : "", unit ? ")" : "");
		break;
	case RT_ENV_SIZE:
		n = snprintf(buf, len, "a size from %s to %s", lo, hi);
		break;
	case RT_ENV_POW2:
		n = snprintf(buf, len, "a power of two from %s to %s", lo, hi);
		break;
	}
	if (r->off && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", or %s (%s)", r->off, r->values);
	return buf;
}

/* A whole number, decimal (as every flag's: units_parse_int) or 0x hex,
 * nothing before or after it. */
static int parse_int(const char *text, double *out)
{
	long long v;
	const char *p = text + (*text == '-' || *text == '+');
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		char *end;
		if (!isxdigit((unsigned char)p[2]))
			return -1;
		errno = 0;
		v = strtoll(text, &end, 16);
		if (*end || errno == ERANGE)
			return -1;
	} else if (units_parse_int(text, LLONG_MIN, LLONG_MAX, &v)) {
		return -1;
	}
	*out = (double)v;
	return 0;
}

int rt_env_parse(const rt_env_row *r, const char *text, double *out, char *why, size_t len)
{
	double v = 0;
	int bad = 0;
	link_error e;
	bool given;
	switch (r->kind) {
	case RT_ENV_STR:
		return 0;
	case RT_ENV_ENUM: {
		size_t tl = strlen(text);
		int i = 0;
		for (const char *w = r->values;; i++) {
			const char *bar = strchr(w, '|');
			size_t wl = bar ? (size_t)(bar - w) : strlen(w);
			if (wl == tl && strncmp(w, text, tl) == 0) {
				*out = i;
				return 0;
			}
			if (!bar)
				break;
			w = bar + 1;
		}
		bad = 1;
		break;
	}
	case RT_ENV_INT:
	case RT_ENV_BOOL:
		bad = parse_int(text, &v) != 0;
		break;
	case RT_ENV_REAL:
		bad = link_parse_number(text, &v, &e) != 0 || strchr(" \t\n", *text) ||
		      (*text && strchr(" \t\n", text[strlen(text) - 1]));
		break;
	case RT_ENV_SIZE:
	case RT_ENV_POW2:
		bad = units_read(UNIT_SIZE, "size", NULL, text, &v, &given, &e) != 0 || v != floor(v) ||
		      strchr(" \t\n", *text) || (*text && strchr(" \t\n", text[strlen(text) - 1]));
		if (!bad && r->kind == RT_ENV_POW2 && v >= 1 && fmod(v, 1) == 0)
			bad = ((unsigned long long)v & ((unsigned long long)v - 1)) != 0;
		break;
	}
	/* the off value as a number ("0.0" is "0"), else the range */
	if (!bad && !(r->off && v == strtod(r->off, NULL)) && (!(v >= r->min) || !(v <= r->max)))
		bad = 1;
	if (bad) {
		char ex[160];
		snprintf(why, len, "%s='%s': expected %s", r->name, text, rt_env_expect(r, ex, sizeof ex));
		return -1;
	}
	*out = v;
	return 0;
}

coll_result rt_env_check(coll_comm *c)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const char *v = getenv(rows[i].name);
		double x;
		char why[300];
		if (v && *v && rt_env_parse(&rows[i], v, &x, why, sizeof why))
			return rt_err(c, COLL_ERR_INVALID, "%s", why);
	}
	return COLL_OK;
}

/* The value of a numeric variable, or dflt when it is unset, empty or
 * (before rt_env_check) bad. */
static double env_value(const char *name, double dflt)
{
	const rt_env_row *r = must_find(name);
	const char *v = getenv(name);
	double x;
	char why[8];
	if (!v || !*v || rt_env_parse(r, v, &x, why, sizeof why))
		return dflt;
	return x;
}

long rt_env_long(const char *name, long dflt)
{
	return (long)env_value(name, (double)dflt);
}

double rt_env_double(const char *name, double dflt)
{
	return env_value(name, dflt);
}

coll_result rt_timeout_ms(coll_comm *c, double s, int64_t *ms)
{
	if (s != s || s > 1e7)
		return rt_err(c, COLL_ERR_INVALID, "timeout %g s: expected at most 1e7 s (0 or less: none)", s);
	*ms = s <= 0 ? 0 : s < 0.001 ? 1 : (int64_t)ceil(s * 1000);
	return COLL_OK;
}
