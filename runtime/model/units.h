/*
 * units.h - sizes, times and rates as people write them ("64MiB", "3us",
 * "10Gbit/s"), and the model floor's error values.
 *
 * Pipeline position: the bottom of the model floor.  Every size, time and
 * rate coll reads goes through here, against the one table of units
 * (units.def): collc's flags, the language's literals, cluster settings
 * and links files in the compiler; rail policies (COLL_POLICY) and
 * collbench's flags in the runtime.  Parsing is strict on purpose: a bandwidth typed as "450GB"
 * or a latency as "3" is far more likely a mistake than a wish for bytes
 * or seconds, and a silently wrong unit makes every prediction wrong by
 * orders of magnitude.
 *
 * Errors are values: functions return 0 or -1 and fill a link_error with
 * a one-line message (no "collc: error:" prefix; the caller adds it).
 * Errors about a file start with its location, "path:line: " or "path: ",
 * and loc_len says how long that location is, so that a caller can print
 * them GCC style, "path:line: error: text" (link_error_text).
 */
#ifndef COLL_UNITS_H
#define COLL_UNITS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
	char msg[512];
	int loc_len;         /* msg[0 .. loc_len) is "path" or "path:line"; 0: no location */
} link_error;

/* Format a message into err (when not NULL); returns -1, for `return link_errorf(...)`. */
int link_errorf(link_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a location: "path:line: text" (line 0: "path: text"). */
int link_errorf_at(link_error *err, const char *path, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The text after the location (the whole message when there is none). */
static inline const char *link_error_text(const link_error *err)
{
	return err->loc_len ? err->msg + err->loc_len + 2 : err->msg;
}

/* The kinds of units.def. */
typedef enum { UNIT_SIZE, UNIT_TIME, UNIT_RATE } unit_kind;

/* Read text as a plain decimal number (no "inf", "nan" or hex; blanks
 * around it allowed) and an optional unit of `kind` from units.def: *value
 * is the number times the unit's scale, *given whether a unit was written
 * (without one, the number as it is).  -1 with err set, "bad WHAT 'text':
 * ..." (expected a number, number out of range, unknown unit 'u' HINT),
 * HINT NULL for none.  No range checks: each caller has its own. */
int units_read(unit_kind kind, const char *what, const char *hint, const char *text, double *value, bool *given,
	       link_error *err);

/* The scale of the unit spelt u[0..len) of kind (units.def): 0, or -1
 * when there is none. */
int units_scale(unit_kind kind, const char *u, size_t len, double *scale);

/* Parse a plain decimal number with no unit (blanks around it allowed):
 * the numbers of the link file's grammar, so no "inf", "nan" or hex.
 * 0 or -1 with err set. */
int link_parse_number(const char *text, double *val, link_error *err);
/* A whole number at the start of text: an optional sign, then decimal
 * digits, no blank before them (strtoll would skip one).  Its end, or
 * NULL when text does not start with one or it does not fit a long long
 * (strtoll would have clamped it and said nothing). */
const char *units_read_int(const char *text, long long *x);
/* All of text a whole number (units_read_int, nothing after it) in
 * lo..hi: 0 with *x, else -1.  Every integer a flag or a COLL_* variable
 * takes is read so; the caller names the flag or variable. */
int units_parse_int(const char *text, long long lo, long long hi, long long *x);
/* Parse a byte count: a number and a size unit (units.def); no unit means
 * bytes.  The result must be a positive whole number of bytes.  0 or -1
 * with err set. */
int link_parse_size(const char *text, double *bytes, link_error *err);
/* Parse a duration: a number and a unit ns, us (or µs), ms, s; "0" needs
 * no unit.  Must be >= 0.  Result in seconds. */
int link_parse_time(const char *text, double *seconds, link_error *err);
/* Parse a bandwidth: a number and a rate unit (units.def: B/s ... TiB/s,
 * bit/s ... Tbit/s, bps ... Tbps).  Must be > 0.  Result in bytes/s. */
int link_parse_bw(const char *text, double *bytes_per_s, link_error *err);

/* Format for people: "1 GiB", "1.5 KiB", "1000 B"; seconds as "3.25 us";
 * bytes/s as "450 GB/s".  Write into buf (returned). */
char *link_fmt_size(double bytes, char *buf, size_t len);
char *link_fmt_time(double seconds, char *buf, size_t len);
char *link_fmt_bw(double bytes_per_s, char *buf, size_t len);

#endif
