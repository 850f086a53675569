/*
 * linkmodel.c - units, uniform and matrix link models, the matrix file
 * reader and writer (see linkmodel.h for the format).
 *
 * Pipeline position: the first thing the cost subcommands build from their
 * flags; the cost model (cost.c) only calls link_time.  Parsing is strict
 * on purpose: a bandwidth typed as "450GB" or a latency as "3" is far more
 * likely a mistake than a wish for bytes or seconds, and a silently wrong
 * unit makes every prediction wrong by orders of magnitude.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linkmodel.h"

int link_errorf(link_error *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		err->loc_len = 0;
	}
	return -1;
}

int link_errorf_at(link_error *err, const char *path, int line, const char *fmt, ...)
{
	if (!err)
		return -1;
	int k = line > 0 ? snprintf(err->msg, sizeof err->msg, "%s:%d", path, line)
			 : snprintf(err->msg, sizeof err->msg, "%s", path);
	if (k < 0 || (size_t)k + 3 >= sizeof err->msg) {   /* a path too long to keep: no location */
		k = 0;
		err->msg[0] = 0;
	} else {
		memcpy(err->msg + k, ": ", 3);
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg + k + (k ? 2 : 0), sizeof err->msg - (size_t)k - (k ? 2 : 0), fmt, ap);
	va_end(ap);
	err->loc_len = k;
	return -1;
}

typedef struct {
	const char *name;
	double scale;
} unit;

static const unit size_units[] = {
	{ "B", 1 }, { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
	{ "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
	{ "TiB", 1099511627776.0 },
	/* nccl-tests' -b/-e suffixes: binary multiples */
	{ "K", 1024.0 }, { "M", 1048576.0 }, { "G", 1073741824.0 },
	{ "T", 1099511627776.0 },
	{ NULL, 0 }
};

static const unit time_units[] = {
	{ "ns", 1e-9 }, { "us", 1e-6 }, { "\xc2\xb5s", 1e-6 }, { "ms", 1e-3 },
	{ "s", 1 }, { NULL, 0 }
};

static const unit bw_units[] = {
	{ "B/s", 1 }, { "KB/s", 1e3 }, { "MB/s", 1e6 }, { "GB/s", 1e9 },
	{ "TB/s", 1e12 }, { "KiB/s", 1024.0 }, { "MiB/s", 1048576.0 },
	{ "GiB/s", 1073741824.0 }, { "TiB/s", 1099511627776.0 },
	{ "bit/s", 1.0 / 8 }, { "Kbit/s", 1e3 / 8 }, { "Mbit/s", 1e6 / 8 },
	{ "Gbit/s", 1e9 / 8 }, { "Tbit/s", 1e12 / 8 },
	{ "bps", 1.0 / 8 }, { "Kbps", 1e3 / 8 }, { "Mbps", 1e6 / 8 },
	{ "Gbps", 1e9 / 8 }, { "Tbps", 1e12 / 8 },
	{ NULL, 0 }
};

/* Split text into a decimal number and a unit.  Only plain decimals are
 * numbers here: strtod alone would also take "inf", "nan" and hex. */
static int split_number(const char *what, const char *text, double *val,
			const char **unit_out, link_error *err)
{
	const char *p = text;
	while (isspace((unsigned char)*p))
		p++;
	if (!*p)
		return link_errorf(err, "bad %s '%s': empty", what, text);
	const char *num = p;
	if (*p == '+' || *p == '-')
		p++;
	int digits = 0;
	while (isdigit((unsigned char)*p)) {
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			p++;
			digits++;
		}
	}
	if (!digits)
		return link_errorf(err, "bad %s '%s': expected a number", what, text);
	if ((*p == 'e' || *p == 'E') &&
	    (isdigit((unsigned char)p[1]) ||
	     ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2])))) {
		p += 2;
		while (isdigit((unsigned char)*p))
			p++;
	}
	char buf[64];
	size_t len = (size_t)(p - num);
	if (len >= sizeof buf)
		return link_errorf(err, "bad %s '%s': number too long", what, text);
	memcpy(buf, num, len);
	buf[len] = 0;
	errno = 0;
	*val = strtod(buf, NULL);
	if (errno == ERANGE || !isfinite(*val))
		return link_errorf(err, "bad %s '%s': number out of range", what, text);
	while (isspace((unsigned char)*p))
		p++;
	*unit_out = p;
	return 0;
}

/* Look up the unit (trailing blanks ignored); NULL when unknown. */
static const unit *find_unit(const unit *tab, const char *u)
{
	size_t len = strlen(u);
	while (len && isspace((unsigned char)u[len - 1]))
		len--;
	for (; tab->name; tab++)
		if (strlen(tab->name) == len && strncmp(tab->name, u, len) == 0)
			return tab;
	return NULL;
}

int link_parse_number(const char *text, double *val, link_error *err)
{
	const char *u;
	if (split_number("number", text, val, &u, err))
		return -1;
	if (*u)
		return link_errorf(err, "bad number '%s': '%s' after it", text, u);
	return 0;
}

int link_parse_size(const char *text, double *bytes, link_error *err)
{
	static const char hint[] = "(use B, KB, MB, GB, KiB, MiB, GiB)";
	double v;
	const char *u;
	if (split_number("size", text, &v, &u, err))
		return -1;
	double scale = 1;
	if (*u) {
		const unit *x = find_unit(size_units, u);
		if (!x)
			return link_errorf(err, "bad size '%s': unknown unit '%s' %s", text, u, hint);
		scale = x->scale;
	}
	v *= scale;
	if (v <= 0)
		return link_errorf(err, "bad size '%s': must be positive", text);
	if (v > 9007199254740992.0)   /* 2^53: doubles stop counting bytes exactly */
		return link_errorf(err, "bad size '%s': too large", text);
	if (v != floor(v))
		return link_errorf(err, "bad size '%s': not a whole number of bytes", text);
	*bytes = v;
	return 0;
}

int link_parse_time(const char *text, double *seconds, link_error *err)
{
	static const char hint[] = "(use ns, us, ms, s)";
	double v;
	const char *u;
	if (split_number("time", text, &v, &u, err))
		return -1;
	if (!*u) {
		if (v != 0)   /* "3" could be seconds or microseconds: ask */
			return link_errorf(err, "bad time '%s': missing unit %s", text, hint);
		*seconds = 0;
		return 0;
	}
	const unit *x = find_unit(time_units, u);
	if (!x)
		return link_errorf(err, "bad time '%s': unknown unit '%s' %s", text, u, hint);
	if (v < 0)
		return link_errorf(err, "bad time '%s': must not be negative", text);
	*seconds = v * x->scale;
	return 0;
}

int link_parse_bw(const char *text, double *bytes_per_s, link_error *err)
{
	static const char hint[] =
		"(use B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s, Mbit/s, Gbit/s)";
	double v;
	const char *u;
	if (split_number("bandwidth", text, &v, &u, err))
		return -1;
	if (!*u)
		return link_errorf(err, "bad bandwidth '%s': missing unit %s", text, hint);
	const unit *x = find_unit(bw_units, u);
	if (!x)
		return link_errorf(err, "bad bandwidth '%s': unknown unit '%s' %s", text, u, hint);
	if (v <= 0)
		return link_errorf(err, "bad bandwidth '%s': must be positive", text);
	*bytes_per_s = v * x->scale;
	return 0;
}

/* %.4g without a trailing exponent for the magnitudes we print. */
static char *fmt_scaled(char *buf, size_t len, double v, const char *u)
{
	snprintf(buf, len, "%.4g %s", v, u);
	return buf;
}

char *link_fmt_size(double b, char *buf, size_t len)
{
	static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int k = 0;
	while (k < 5 && fabs(b) >= 1024) {
		b /= 1024;
		k++;
	}
	return fmt_scaled(buf, len, b, names[k]);
}

char *link_fmt_time(double s, char *buf, size_t len)
{
	double a = fabs(s);
	if (a == 0)
		return fmt_scaled(buf, len, 0, "s");
	if (a < 1e-6)
		return fmt_scaled(buf, len, s * 1e9, "ns");
	if (a < 1e-3)
		return fmt_scaled(buf, len, s * 1e6, "us");
	if (a < 1)
		return fmt_scaled(buf, len, s * 1e3, "ms");
	return fmt_scaled(buf, len, s, "s");
}

char *link_fmt_bw(double b, char *buf, size_t len)
{
	static const char *const names[] = { "B/s", "KB/s", "MB/s", "GB/s", "TB/s" };
	int k = 0;
	while (k < 4 && fabs(b) >= 1000) {
		b /= 1000;
		k++;
	}
	return fmt_scaled(buf, len, b, names[k]);
}

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
	for (int i = 0; i < lm->ndecls; i++)
		free(lm->decls[i]);
	free(lm->groups);
	free(lm->segs);
	free(lm->decls);
	lm->groups = NULL, lm->segs = NULL, lm->decls = NULL;
	lm->ngroups = lm->nsegs = lm->ndecls = 0;
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
	return strlen(s) < 64;
}

static int add_segment(link_model *lm, const char *name, int src, bool src_not, int dst, bool dst_not,
		       double cap, link_error *err)
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
	lm->segs[lm->nsegs++] = (link_segment){ nm, src, dst, src_not, dst_not, cap };
	return 0;
}

/* An endpoint: `*`, NAME or !NAME. */
static int endpoint(const link_model *lm, const char *tok, int *g, bool *neg, link_error *err)
{
	*neg = false;
	if (strcmp(tok, "*") == 0) {
		*g = LINK_ANY;
		return 0;
	}
	if (*tok == '!') {
		*neg = true;
		tok++;
	}
	*g = link_group_find(lm, tok);
	if (*g < 0)
		return link_errorf(err, "no group named '%s' (declare it first: group %s RANK...)", tok, tok);
	return 0;
}

static int remember(link_model *lm, const char *line)
{
	char **nd = realloc(lm->decls, sizeof *nd * (size_t)(lm->ndecls + 1));
	if (!nd)
		return -1;
	lm->decls = nd;
	/* drop the comment and the surrounding blanks */
	size_t len = strcspn(line, "#");
	while (len && isspace((unsigned char)line[len - 1]))
		len--;
	while (len && isspace((unsigned char)*line))
		line++, len--;
	if (!(lm->decls[lm->ndecls] = strndup(line, len)))
		return -1;
	lm->ndecls++;
	return 0;
}

static int declare_tokens(link_model *lm, const char *line, char **tok, int nt, link_error *err);

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
	if (rc > 0 && remember(lm, line))
		return link_errorf(err, "out of memory");
	return rc;
}

/* link_declare's work on the tokens of line (tok[0..min(nt, 8))): 1, 0
 * (not a declaration) or -1. */
static int declare_tokens(link_model *lm, const char *line, char **tok, int nt, link_error *err)
{
	const char *kw = tok[0];
	if (strcmp(kw, "rank-bw") == 0) {
		if (nt != 2)
			return link_errorf(err, "expected 'rank-bw BANDWIDTH'");
		double bw;
		link_error e2;
		if (link_parse_bw(tok[1], &bw, &e2))
			return link_errorf(err, "rank-bw: %s", e2.msg);
		lm->rank_bw = bw;
	} else if (strcmp(kw, "group") == 0) {
		if (nt < 3)
			return link_errorf(err, "expected 'group NAME RANK...'");
		if (!good_name(tok[1]))
			return link_errorf(err, "bad group name '%s' (a letter or _, then letters, digits, _ - .)", tok[1]);
		if (link_group_find(lm, tok[1]) >= 0)
			return link_errorf(err, "a second group named '%s'", tok[1]);
		/* the ranks again from the line itself, after its first two
		 * words: a group may list more ranks than tok holds */
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
			if (*end || end == t || errno || r < 0 || r >= 65536 || !isdigit((unsigned char)*t)) {
				free(in);
				link_errorf(err, "group %s: bad rank '%s'", tok[1], t);
				free(rb);
				return -1;
			}
			if (r >= len) {
				unsigned char *ni = realloc(in, (size_t)r + 1);
				if (!ni) {
					free(in);
					free(rb);
					return link_errorf(err, "out of memory");
				}
				memset(ni + len, 0, (size_t)(r + 1 - len));
				in = ni;
				len = (int)r + 1;
			}
			if (in[r]) {
				free(in);
				free(rb);
				return link_errorf(err, "group %s: rank %ld listed twice", tok[1], r);
			}
			in[r] = 1;
			count++;
		}
		free(rb);
		link_group *ng = realloc(lm->groups, sizeof *ng * (size_t)(lm->ngroups + 1));
		char *nm = strdup(tok[1]);
		if (!ng || !nm) {
			free(in);
			free(nm);
			if (ng)
				lm->groups = ng;
			return link_errorf(err, "out of memory");
		}
		lm->groups = ng;
		lm->groups[lm->ngroups++] = (link_group){ nm, in, len, count };
	} else if (strcmp(kw, "uplink") == 0) {
		if (nt != 3)
			return link_errorf(err, "expected 'uplink GROUP BANDWIDTH'");
		int g = link_group_find(lm, tok[1]);
		if (g < 0)
			return link_errorf(err, "no group named '%s' (declare it first: group %s RANK...)", tok[1],
					   tok[1]);
		double bw;
		link_error e2;
		if (link_parse_bw(tok[2], &bw, &e2))
			return link_errorf(err, "uplink %s: %s", tok[1], e2.msg);
		char up[80], down[80];
		snprintf(up, sizeof up, "%s.up", tok[1]);
		snprintf(down, sizeof down, "%s.down", tok[1]);
		if (add_segment(lm, up, g, false, g, true, bw, err) || add_segment(lm, down, g, true, g, false, bw, err))
			return -1;
	} else if (strcmp(kw, "segment") == 0) {
		bool both = nt == 6 && strcmp(tok[3], "<->") == 0;
		if (nt != 6 || (!both && strcmp(tok[3], "->") != 0))
			return link_errorf(err, "expected 'segment NAME FROM -> TO BANDWIDTH' (or <->), "
					   "FROM and TO a group, !group or *");
		if (!good_name(tok[1]))
			return link_errorf(err, "bad segment name '%s' (a letter or _, then letters, digits, _ - .)",
					   tok[1]);
		int a, b;
		bool an, bn;
		double bw;
		link_error e2;
		if (endpoint(lm, tok[2], &a, &an, err) || endpoint(lm, tok[4], &b, &bn, err))
			return -1;
		if (link_parse_bw(tok[5], &bw, &e2))
			return link_errorf(err, "segment %s: %s", tok[1], e2.msg);
		char back[80];
		snprintf(back, sizeof back, "%s.back", tok[1]);
		if (add_segment(lm, tok[1], a, an, b, bn, bw, err) || (both && add_segment(lm, back, b, bn, a, an, bw, err)))
			return -1;
	} else {
		return 0;
	}
	return 1;
}

int link_copy_segments(link_model *dst, const link_model *src, link_error *err)
{
	dst->rank_bw = src->rank_bw;
	for (int i = 0; i < src->ndecls; i++)
		if (link_declare(dst, src->decls[i], err) < 0)
			return -1;
	return 0;
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

/* --- matrix files ---------------------------------------------------------- */

typedef struct {
	int src, dst;        /* -1: '*' */
	double alpha, bw;
	int line;
} entry;

static int parse_rank(const char *tok, int *r)
{
	if (strcmp(tok, "*") == 0) {
		*r = -1;
		return 0;
	}
	char *end;
	errno = 0;
	long v = strtol(tok, &end, 10);
	if (*end || end == tok || errno || v < 0 || v >= 65536 || !isdigit((unsigned char)*tok))
		return -1;
	*r = (int)v;
	return 0;
}

/* One line of f into buf (NUL-terminated, newline dropped), adding its
 * bytes to *total: 1, 0 at the end of the file, -1 when longer than
 * buf holds, -2 at a NUL byte, -3 when *total passes LINK_MAX_BYTES. */
static int read_line(FILE *f, char *buf, size_t cap, size_t *total)
{
	size_t n = 0;
	int ch;
	while ((ch = getc(f)) != EOF) {
		if (++*total > LINK_MAX_BYTES)
			return -3;
		if (ch == '\n')
			break;
		if (ch == '\0')
			return -2;
		if (n + 1 >= cap)
			return -1;
		buf[n++] = (char)ch;
	}
	buf[n] = '\0';
	return ch == EOF && n == 0 ? 0 : 1;
}

int link_read_matrix(link_model *lm, const char *path, link_error *err)
{
	memset(lm, 0, sizeof *lm);
	FILE *f = fopen(path, "r");
	if (!f)
		return link_errorf_at(err, path, 0, "cannot open: %s", strerror(errno));
	entry *ents = NULL;
	int nents = 0, cap = 0, ranks = -1, ranks_line = 0, maxrank = -1, rc = -1;
	int wild = 0;
	/* bounded reads: a line is a few fields, and a matrix of every pair of
	 * LINK_MAX_RANKS ranks fits in LINK_MAX_BYTES; /dev/zero or a binary
	 * file is refused at its first long line, not read into memory */
	char *line = malloc(LINK_MAX_LINE + 1);
	size_t total = 0;
	int *spec = NULL, *from = NULL, got;
	/* group/segment/uplink/rank-bw lines, kept aside until the matrix
	 * exists (link_matrix starts from an empty model) */
	link_model decl;
	memset(&decl, 0, sizeof decl);
	int *decl_line = NULL, ndecl_line = 0;
	if (!line) {
		fclose(f);
		return link_errorf_at(err, path, 0, "out of memory");
	}
	for (int lineno = 1; (got = read_line(f, line, LINK_MAX_LINE + 1, &total)) != 0; lineno++) {
		if (got < 0) {
			link_errorf_at(err, path, lineno, "%s: not a link matrix",
				    got == -1 ? "a line longer than " LINK_MAX_LINE_TEXT " bytes"
				    : got == -2 ? "a NUL byte (a binary file?)" : "larger than " LINK_MAX_BYTES_TEXT);
			goto out;
		}
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		link_error e1;
		int d = link_declare(&decl, line, &e1);
		if (d < 0) {
			link_errorf_at(err, path, lineno, "%s", e1.msg);
			goto out;
		}
		if (d > 0) {
			int *nl = realloc(decl_line, sizeof *nl * (size_t)(ndecl_line + 1));
			if (!nl) {
				link_errorf_at(err, path, 0, "out of memory");
				goto out;
			}
			decl_line = nl;
			decl_line[ndecl_line++] = lineno;
			continue;
		}
		char *tok[5];
		int nt = 0;
		for (char *t = strtok(line, " \t\r\n"); t; t = strtok(NULL, " \t\r\n")) {
			if (nt < 5)
				tok[nt] = t;
			nt++;
		}
		if (nt == 0)
			continue;
		if (strcmp(tok[0], "ranks") == 0) {
			int r;
			if (nt != 2 || parse_rank(tok[1], &r) || r < 1) {
				link_errorf_at(err, path, lineno, "expected 'ranks N' with N >= 1");
				goto out;
			}
			if (ranks >= 0) {
				link_errorf_at(err, path, lineno, "second 'ranks' line (first at line %d)", ranks_line);
				goto out;
			}
			ranks = r;
			ranks_line = lineno;
			continue;
		}
		if (nt != 4) {
			link_errorf_at(err, path, lineno, "expected 'src dst alpha bandwidth', found %d field%s", nt, nt == 1 ? "" : "s");
			goto out;
		}
		entry e = { .line = lineno };
		if (parse_rank(tok[0], &e.src)) {
			link_errorf_at(err, path, lineno, "bad source rank '%s' (a rank number or '*')", tok[0]);
			goto out;
		}
		if (parse_rank(tok[1], &e.dst)) {
			link_errorf_at(err, path, lineno, "bad destination rank '%s' (a rank number or '*')", tok[1]);
			goto out;
		}
		link_error e2;
		if (link_parse_time(tok[2], &e.alpha, &e2) || link_parse_bw(tok[3], &e.bw, &e2)) {
			link_errorf_at(err, path, lineno, "%s", e2.msg);
			goto out;
		}
		if (e.src < 0 || e.dst < 0)
			wild = 1;
		if (e.src > maxrank)
			maxrank = e.src;
		if (e.dst > maxrank)
			maxrank = e.dst;
		if (nents == cap) {
			cap = cap ? 2 * cap : 64;
			entry *ne = realloc(ents, sizeof *ents * (size_t)cap);
			if (!ne) {
				link_errorf_at(err, path, 0, "out of memory");
				goto out;
			}
			ents = ne;
		}
		ents[nents++] = e;
	}
	if (ferror(f)) {
		link_errorf_at(err, path, 0, "read error");
		goto out;
	}
	if (nents == 0) {
		link_errorf_at(err, path, 0, "no links (expected lines 'src dst alpha bandwidth')");
		goto out;
	}
	int n = ranks;
	if (n < 0) {
		if (maxrank < 0 || wild) {
			link_errorf_at(err, path, 0, "cannot tell the rank count from lines with '*': add a line 'ranks N'");
			goto out;
		}
		n = maxrank + 1;
	}
	for (int i = 0; i < nents; i++)
		if (ents[i].src >= n || ents[i].dst >= n) {
			link_errorf_at(err, path, ents[i].line, "rank %d out of range for %d ranks (line %d says 'ranks %d')",
			     ents[i].src >= n ? ents[i].src : ents[i].dst, n,
			     ranks_line, n);
			goto out;
		}
	if (link_matrix(lm, n, 0, 1, err))
		goto out;
	free(lm->source);
	lm->source = strdup(path);
	size_t nn = (size_t)n * (size_t)n;
	spec = malloc(sizeof *spec * nn);
	from = malloc(sizeof *from * nn);
	if (!spec || !from) {
		link_errorf_at(err, path, 0, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nn; i++)
		spec[i] = -1;
	for (int k = 0; k < nents; k++) {
		const entry *e = &ents[k];
		int sp = (e->src >= 0) + (e->dst >= 0);
		int s0 = e->src >= 0 ? e->src : 0, s1 = e->src >= 0 ? e->src : n - 1;
		int d0 = e->dst >= 0 ? e->dst : 0, d1 = e->dst >= 0 ? e->dst : n - 1;
		for (int i = s0; i <= s1; i++)
			for (int j = d0; j <= d1; j++) {
				size_t c = (size_t)i * (size_t)n + (size_t)j;
				if (i == j || spec[c] > sp)
					continue;
				if (spec[c] == sp) {
					link_errorf_at(err, path, e->line, "pair %d -> %d given twice (also line %d)",
					     i, j, ents[from[c]].line);
					goto out;
				}
				spec[c] = sp;
				from[c] = k;
				lm->alpha_m[c] = e->alpha;
				lm->beta_m[c] = 1 / e->bw;
			}
	}
	int missing = 0, mi = 0, mj = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j && spec[(size_t)i * (size_t)n + (size_t)j] < 0 && missing++ == 0) {
				mi = i;
				mj = j;
			}
	if (missing) {
		char more[48] = "";
		if (missing > 1)
			snprintf(more, sizeof more, " and %d more", missing - 1);
		link_errorf_at(err, path, 0, "missing pair %d -> %d%s: each of the %d ordered pairs of %d ranks needs a line",
		     mi, mj, more, n * (n - 1), n);
		goto out;
	}
	/* every group's ranks against n, at the group's line */
	for (int g = 0, k = 0; g < decl.ngroups; g++) {
		while (k < decl.ndecls && strncmp(decl.decls[k], "group", 5) != 0)
			k++;
		if (decl.groups[g].len > n) {
			link_errorf_at(err, path, k < ndecl_line ? decl_line[k] : 0,
				       "group %s: rank %d out of range for %d ranks", decl.groups[g].name,
				       decl.groups[g].len - 1, n);
			goto out;
		}
		k++;
	}
	{
		link_error e1;
		if (link_copy_segments(lm, &decl, &e1)) {
			link_errorf_at(err, path, 0, "%s", e1.msg);
			goto out;
		}
	}
	rc = 0;
out:
	link_free(&decl);
	free(decl_line);
	free(line);
	if (rc)
		link_free(lm);
	free(spec);
	free(from);
	free(ents);
	fclose(f);
	return rc;
}

/* A time with a unit that reads back exactly (17 significant digits would
 * be exact but unreadable; 12 keeps probe output stable and precise). */
static void put_time(FILE *out, double s)
{
	if (s == 0)
		fputs("0", out);
	else if (s < 1e-3)
		fprintf(out, "%.12gus", s * 1e6);
	else
		fprintf(out, "%.12gms", s * 1e3);
}

void link_write_matrix(FILE *out, const link_model *lm, int n)
{
	fprintf(out, "# coll link matrix: src dst alpha bandwidth\n");
	fprintf(out, "ranks %d\n", n);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			if (i == j)
				continue;
			fprintf(out, "%d\t%d\t", i, j);
			put_time(out, link_alpha(lm, i, j));
			fprintf(out, "\t%.12gGB/s\n", 1e-9 / link_beta(lm, i, j));
		}
	if (lm->ndecls)
		fprintf(out, "# shared segments: groups of ranks and the capacity their messages share\n");
	for (int i = 0; i < lm->ndecls; i++)
		fprintf(out, "%s\n", lm->decls[i]);
}
