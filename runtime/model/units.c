/*
 * units.c - sizes, times and rates read against units.def and printed
 * for people (units.h), and the model floor's error messages.
 *
 * Pipeline position: the bottom of the model floor; nothing here knows a
 * schedule or a network.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

typedef struct {
	unit_kind kind;
	const char *name;
	double scale;
} unit;

static const unit units[] = {
#define COLL_UNIT(kind, spelling, scale) { UNIT_##kind, spelling, scale },
#include "units.def"
#undef COLL_UNIT
};

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

/* The units.def row of kind spelt u[0..len), or NULL. */
static const unit *lookup(unit_kind kind, const char *u, size_t len)
{
	for (const unit *x = units; x < units + sizeof units / sizeof units[0]; x++)
		if (x->kind == kind && strlen(x->name) == len && strncmp(x->name, u, len) == 0)
			return x;
	return NULL;
}

/* The same for the NUL-terminated u, trailing blanks ignored. */
static const unit *find_unit(unit_kind kind, const char *u)
{
	size_t len = strlen(u);
	while (len && isspace((unsigned char)u[len - 1]))
		len--;
	return lookup(kind, u, len);
}

int units_scale(unit_kind kind, const char *u, size_t len, double *scale)
{
	const unit *x = lookup(kind, u, len);
	if (!x)
		return -1;
	*scale = x->scale;
	return 0;
}

int units_read(unit_kind kind, const char *what, const char *hint, const char *text, double *value, bool *given,
	       link_error *err)
{
	double v;
	const char *u;
	if (split_number(what, text, &v, &u, err))
		return -1;
	*given = *u != 0;
	if (!*given) {
		*value = v;
		return 0;
	}
	const unit *x = find_unit(kind, u);
	if (!x)
		return link_errorf(err, "bad %s '%s': unknown unit '%s'%s%s", what, text, u, hint ? " " : "",
				   hint ? hint : "");
	*value = v * x->scale;
	return 0;
}

const char *units_read_int(const char *text, long long *x)
{
	const char *p = text + (*text == '-' || *text == '+');
	size_t k = strspn(p, "0123456789");
	if (k == 0)
		return NULL;
	errno = 0;
	*x = strtoll(text, NULL, 10);
	return errno == ERANGE ? NULL : p + k;
}

int units_parse_int(const char *text, long long lo, long long hi, long long *x)
{
	long long v = 0;
	const char *end = units_read_int(text, &v);
	if (!end || *end || v < lo || v > hi)
		return -1;
	*x = v;
	return 0;
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
	double v;
	bool given;
	if (units_read(UNIT_SIZE, "size", "(use B, KB, MB, GB, KiB, MiB, GiB)", text, &v, &given, err))
		return -1;
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
	bool given;
	if (units_read(UNIT_TIME, "time", hint, text, &v, &given, err))
		return -1;
	if (!given && v != 0)   /* "3" could be seconds or microseconds: ask */
		return link_errorf(err, "bad time '%s': missing unit %s", text, hint);
	if (v < 0)
		return link_errorf(err, "bad time '%s': must not be negative", text);
	*seconds = given ? v : 0;
	return 0;
}

int link_parse_bw(const char *text, double *bytes_per_s, link_error *err)
{
	static const char hint[] = "(use B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s, Mbit/s, Gbit/s)";
	double v;
	bool given;
	if (units_read(UNIT_RATE, "bandwidth", hint, text, &v, &given, err))
		return -1;
	if (!given)
		return link_errorf(err, "bad bandwidth '%s': missing unit %s", text, hint);
	if (v <= 0)
		return link_errorf(err, "bad bandwidth '%s': must be positive", text);
	*bytes_per_s = v;
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

