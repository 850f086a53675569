/*
 * linkmodel.h - units and the link model the cost model charges transfers
 * against.
 *
 * Pipeline position: an input of the compiler, like .coll files, so it
 * lives in the front end: a cluster's `alpha`, `bw` and `links` are
 * checked here (lang/cluster.c), and the cost model (codegen/cost.h)
 * charges transfers against what it builds.  `collc cost`,
 * `sim`, `compare` and `tune` parse their size, time and bandwidth flags
 * here and build one link_model: uniform (--alpha 3us --bw 450GB/s) or a
 * per-pair matrix read from a file that `collc probe` writes.  A transfer
 * of b bytes from rank i to rank j costs alpha_ij + b * beta_ij seconds,
 * beta_ij being the inverse bandwidth of the ordered pair.  Optionally a
 * rank's links share one injection bandwidth (rank_bw, --rank-bw): a rank
 * that sends k messages in a round gives each at most rank_bw / k.
 *
 * Matrix file format (text, one pair per line; fields separated by tabs or
 * spaces; `#` starts a comment; blank lines are ignored):
 *
 *   # coll link matrix: src dst alpha bandwidth
 *   ranks 4                  optional; else n = 1 + the largest rank named
 *   0   1   3us   450GB/s    one line per ordered pair src -> dst
 *   1   0   3us   450GB/s
 *   *   *   5us   100GB/s    `*` matches any rank; a more specific line
 *   2   *   9us   10GB/s     (exact pair > one star > two stars) wins,
 *                            whatever the order of the lines
 *   group rack0 0 1          declarations of shared segments (below) may
 *   uplink rack0 1Gbit/s     follow or precede the pairs
 *
 * alpha is a time and bandwidth a rate, both with units (see
 * link_parse_time and link_parse_bw).  Every ordered pair (i, j), i != j,
 * of the n ranks must be covered; lines with src == dst are accepted and
 * ignored.  Errors name the file and line.
 *
 * Shared segments.  Per-pair costs are what a pair sees alone; they cannot
 * tell that the flows of a rank order share a bottleneck (racks joined by
 * an oversubscribed trunk: every cross-rack pair probes alike, yet a ring
 * that crosses the trunk n times is far slower than one that crosses it
 * twice).  So a model may also name groups of ranks and segments whose
 * capacity the concurrent messages crossing them divide among themselves
 * (cost.h says how):
 *
 *   rank-bw 400Mbit/s             every rank's injection bandwidth (link_model.rank_bw)
 *   group rack0 0 3 5 6           a named set of ranks (a host, a rack)
 *   uplink rack0 200Mbit/s        messages leaving rack0 share 200 Mbit/s, and so
 *                                 do messages entering it (a full-duplex uplink:
 *                                 segments "rack0.up" and "rack0.down")
 *   segment t rack0 -> rack1 1Gbit/s    messages from a rank of rack0 to one of rack1
 *   segment t rack0 <-> rack1 1Gbit/s   both ways, each direction its own 1 Gbit/s
 *                                       (full duplex, as Ethernet; "t", "t.back")
 *
 * An endpoint of a segment is a group, `!group` (every rank outside it)
 * or `*` (every rank).  A message from i to j crosses a segment when i is
 * in its source set and j in its destination set.  The same lines may be
 * given in a cluster (`group rack0 "0 3 5 6";`, lang/cluster.c) and are
 * written back by link_write_matrix, so a probed file round-trips.
 *
 * Errors are values: functions return 0 or -1 and fill a link_error with
 * a one-line message (no "collc: error:" prefix; the caller adds it).
 * Errors about a file start with its location, "path:line: " or "path: ",
 * and loc_len says how long that location is, so that a caller can print
 * them GCC style, "path:line: error: text" (link_error_text).
 */
#ifndef COLL_LINKMODEL_H
#define COLL_LINKMODEL_H

#include <stdbool.h>
#include <stdio.h>

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

typedef enum { LINK_UNIFORM, LINK_MATRIX } link_kind;

#define LINK_ANY (-1)        /* a segment endpoint that is every rank (`*`) */

/* A named set of ranks. */
typedef struct {
	char *name;
	unsigned char *in;   /* in[r] for r < len: r belongs to it */
	int len;             /* 1 + its largest rank */
	int count;           /* how many ranks */
} link_group;

/* Messages from a rank of src to a rank of dst cross the segment and
 * share its capacity. */
typedef struct {
	char *name;
	int src, dst;        /* group index, or LINK_ANY */
	bool src_not, dst_not;   /* the complement of the group */
	double cap;          /* bytes/s */
} link_segment;

typedef struct {
	link_kind kind;
	int n;               /* matrix: rank count; uniform: 0 (any n) */
	double alpha, beta;  /* uniform: latency (s), inverse bandwidth (s/B) */
	double *alpha_m;     /* matrix: n*n latencies, [src*n + dst] */
	double *beta_m;      /* matrix: n*n inverse bandwidths */
	double rank_bw;      /* > 0: a rank's injection bandwidth (B/s), shared by the
				messages it sends (or receives) in one round; 0: every
				link runs at its own bandwidth (switched fabric) */
	char *source;        /* where it came from, for reports (owned) */
	link_group *groups;  /* shared segments (see above); none by default */
	int ngroups;
	link_segment *segs;
	int nsegs;
	char **decls;        /* the group/segment/uplink/rank-bw lines as given, for the writer */
	int ndecls;
} link_model;

/* Input limits of link_read_matrix: a line holds four short fields or a
 * group (256 KiB: some 40,000 ranks), and 256 MiB holds every pair of
 * about 2,900 ranks spelt out. */
#define LINK_MAX_LINE 262144
#define LINK_MAX_LINE_TEXT "262144"
#define LINK_MAX_BYTES (256 << 20)
#define LINK_MAX_BYTES_TEXT "256 MiB"

/* linkmodel.c */
/* Parse a plain decimal number with no unit (blanks around it allowed):
 * the numbers of the link file's grammar, so no "inf", "nan" or hex.
 * 0 or -1 with err set. */
int link_parse_number(const char *text, double *val, link_error *err);
/* Parse a byte count: a number and a unit B, KB, MB, GB, TB (powers of
 * 1000), KiB, MiB, GiB, TiB (powers of 1024), or K, M, G, T as nccl-tests
 * reads them (powers of 1024); no unit means bytes.  The result must be a
 * positive whole number of bytes.  0 or -1 with err set. */
int link_parse_size(const char *text, double *bytes, link_error *err);
/* Parse a duration: a number and a unit ns, us (or µs), ms, s; "0" needs
 * no unit.  Must be >= 0.  Result in seconds. */
int link_parse_time(const char *text, double *seconds, link_error *err);
/* Parse a bandwidth: a number and a unit B/s, KB/s, MB/s, GB/s, TB/s,
 * KiB/s, MiB/s, GiB/s, TiB/s, bit/s, Kbit/s, Mbit/s, Gbit/s, Tbit/s (or
 * bps, Kbps, Mbps, Gbps, Tbps).  Must be > 0.  Result in bytes/s. */
int link_parse_bw(const char *text, double *bytes_per_s, link_error *err);

/* Format for people: "1 GiB", "1.5 KiB", "1000 B"; seconds as "3.25 us";
 * bytes/s as "450 GB/s".  Write into buf (returned). */
char *link_fmt_size(double bytes, char *buf, size_t len);
char *link_fmt_time(double seconds, char *buf, size_t len);
char *link_fmt_bw(double bytes_per_s, char *buf, size_t len);

/* A uniform model: every pair has latency alpha (s) and bandwidth bw (B/s).
 * -1 when bw <= 0 or alpha < 0. */
int link_uniform(link_model *lm, double alpha, double bw, link_error *err);
/* An n-rank matrix with every pair set to (alpha, bw); edit with
 * link_set.  -1 on bad arguments. */
int link_matrix(link_model *lm, int n, double alpha, double bw, link_error *err);
/* Set the ordered pair src -> dst of a matrix model. */
void link_set(link_model *lm, int src, int dst, double alpha, double bw);
/* Read a matrix file (format above) into lm.  -1 with "file:line: ..." in
 * err on any problem: bad units, bad ranks, duplicates, missing pairs,
 * bandwidth <= 0. */
int link_read_matrix(link_model *lm, const char *path, link_error *err);
/* Write lm as a matrix file for n ranks (a uniform model is expanded). */
void link_write_matrix(FILE *out, const link_model *lm, int n);
/* Set the shared injection bandwidth (0: none).  -1 when bw < 0. */
int link_set_rank_bw(link_model *lm, double bw, link_error *err);
/* Check that lm can cost a schedule of n ranks (a matrix must have
 * exactly n ranks, and no group may name a rank >= n).  -1 with a message
 * otherwise. */
int link_check_n(const link_model *lm, int n, link_error *err);
/* Free what lm owns (not lm itself); lm becomes empty. */
void link_free(link_model *lm);
/* One-line description: "uniform alpha 3 us, bw 450 GB/s" or
 * "matrix links.tsv (8 ranks)". */
char *link_describe(const link_model *lm, char *buf, size_t len);

/* Parse one declaration line of the forms above ("group rack0 0 3 5 6",
 * "uplink rack0 200Mbit/s", "segment t rack0 -> rack1 1Gbit/s",
 * "rank-bw 400Mbit/s"; a `#` comment is ignored) and add it to lm.
 * Returns 1 when it added something, 0 when the line is not a
 * declaration (its first word is none of these), -1 with a message (no
 * location: the caller knows it) when it is one but wrong: an unknown or
 * repeated name, a bad rank or bandwidth. */
int link_declare(link_model *lm, const char *line, link_error *err);
/* The group called name, or -1. */
int link_group_find(const link_model *lm, const char *name);
/* Copy src's groups, segments and rank bandwidth into dst (which keeps
 * its own latencies and bandwidths).  -1 on out-of-memory. */
int link_copy_segments(link_model *dst, const link_model *src, link_error *err);

/* Is rank r in the segment endpoint (group g, complemented when neg)? */
static inline bool link_in(const link_model *lm, int g, bool neg, int r)
{
	bool in = g == LINK_ANY || (r < lm->groups[g].len && lm->groups[g].in[r]);
	return in != neg;
}
/* Does a message from src to dst cross segment s? */
static inline bool link_crosses(const link_model *lm, const link_segment *s, int src, int dst)
{
	return src != dst && link_in(lm, s->src, s->src_not, src) && link_in(lm, s->dst, s->dst_not, dst);
}

/* Latency and inverse bandwidth of the ordered pair src -> dst. */
static inline double link_alpha(const link_model *lm, int src, int dst)
{
	return lm->kind == LINK_UNIFORM ? lm->alpha : lm->alpha_m[src * lm->n + dst];
}
static inline double link_beta(const link_model *lm, int src, int dst)
{
	return lm->kind == LINK_UNIFORM ? lm->beta : lm->beta_m[src * lm->n + dst];
}
/* Seconds to move `bytes` from src to dst: alpha + bytes * beta. */
static inline double link_time(const link_model *lm, int src, int dst, double bytes)
{
	return link_alpha(lm, src, dst) + bytes * link_beta(lm, src, dst);
}

#endif
