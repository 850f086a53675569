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
 *
 * alpha is a time and bandwidth a rate, both with units (see
 * link_parse_time and link_parse_bw).  Every ordered pair (i, j), i != j,
 * of the n ranks must be covered; lines with src == dst are accepted and
 * ignored.  Errors name the file and line.
 *
 * Errors are values: functions return 0 or -1 and fill a link_error with
 * a one-line message (no "collc: error:" prefix; the caller adds it).
 */
#ifndef COLL_LINKMODEL_H
#define COLL_LINKMODEL_H

#include <stdio.h>

typedef struct {
	char msg[512];
} link_error;

/* Format a message into err (when not NULL); returns -1, for `return link_errorf(...)`. */
int link_errorf(link_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum { LINK_UNIFORM, LINK_MATRIX } link_kind;

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
} link_model;

/* Input limits of link_read_matrix: a line holds four short fields, and
 * 256 MiB holds every pair of about 2,900 ranks spelt out. */
#define LINK_MAX_LINE 4096
#define LINK_MAX_LINE_TEXT "4096"
#define LINK_MAX_BYTES (256 << 20)
#define LINK_MAX_BYTES_TEXT "256 MiB"

/* linkmodel.c */
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
 * exactly n ranks).  -1 with a message otherwise. */
int link_check_n(const link_model *lm, int n, link_error *err);
/* Free what lm owns (not lm itself); lm becomes empty. */
void link_free(link_model *lm);
/* One-line description: "uniform alpha 3 us, bw 450 GB/s" or
 * "matrix links.tsv (8 ranks)". */
char *link_describe(const link_model *lm, char *buf, size_t len);

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
