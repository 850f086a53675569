/*
 * linkmodel.h - the link model the cost model charges transfers against:
 * per-pair latencies and bandwidths, and the shared segments their
 * messages divide.
 *
 * Pipeline position: the model floor (runtime/model/), below the compiler
 * and the runtime.  collc builds one from its flags (--alpha 3us --bw
 * 450GB/s: uniform), a links file (--links, a cluster's `links`: a
 * per-pair matrix, linkfile.c) and a cluster's group/uplink/segment
 * settings (lang/cluster.c); libcollrt builds one from what coll_probe
 * measured (runtime/reorder.c), with the typed calls below, never through
 * text.  A transfer of b bytes from rank i to rank j costs alpha_ij + b *
 * beta_ij seconds, beta_ij being the inverse bandwidth of the ordered
 * pair.  Optionally a rank's links share one injection bandwidth
 * (rank_bw, --rank-bw): a rank that sends k messages in a round gives
 * each at most rank_bw / k.  Units and error values: units.h.
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
 * link_parse_time and link_parse_bw), within the model's range (below:
 * LINK_MAX_ALPHA, LINK_MIN_BW, LINK_MAX_BW).  Every ordered pair (i, j),
 * i != j, of the n ranks must be covered; a line from a rank to itself
 * is an error (`*` lines skip a rank's pair with itself).  A file names
 * at most LINK_MAX_MATRIX ranks; `ranks 1` with no pair lines is a
 * one-rank network (what collprobe writes for one rank).  Nothing may be
 * given twice: a second `ranks` or `rank-bw` line, two lines for the
 * same src and dst (`*` included), two groups or segments of one name
 * and a second uplink of a group are errors naming both lines.  Two
 * lines of the same specificity that both cover a pair (`0 *` and `* 1`)
 * are an error too.  Errors name the file and line.
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
 * One host (shared memory: runtime/transport/shm.c).  Between ranks on one
 * host no link is the limit but what they share: the memory every byte is
 * copied through, and the cores that copy and reduce.  Three optional
 * lines (or --mem-bw, --reduce-bw, --cores, or link_set_host) say what
 * the host has; every rank of the model is on it:
 *
 *   mem-bw 12GB/s        bytes/s the host copies, all its cores together
 *   reduce-bw 4GB/s      bytes/s one core reduces (fp32 sum: read two, write one)
 *   cores 2              cores the ranks share (more ranks time-share them)
 *
 * cost.h ("One host") says how the models charge them; collprobe over shm
 * measures them.  Each at most once; a value out of range (a rate outside
 * LINK_MIN_BW..LINK_MAX_BW, cores outside 1..LINK_MAX_CORES) is an error
 * at its line.  Without them every prediction is what it was.
 *
 * Built by typed calls (link_add_group, link_add_uplink,
 * link_add_segment, link_set_rank_bw) or from the declaration lines
 * above (link_declare, which calls them); link_write_matrix writes a
 * model back in this format, each segment in the form it was declared
 * in, so a probed file round-trips.
 */
#ifndef COLL_LINKMODEL_H
#define COLL_LINKMODEL_H

#include <stdbool.h>
#include <stdio.h>

#include "units.h"

typedef enum { LINK_UNIFORM, LINK_MATRIX } link_kind;

#define LINK_ANY (-1)        /* a segment endpoint that is every rank (`*`) */
#define LINK_MAX_RANKS 65536 /* ranks a model may name */
#define LINK_NAME_MAX 63     /* characters of a group's or segment's name */

/* The range of the numbers a model holds.  The bounds keep every cost
 * finite: a message of the largest size collc takes (2^53 bytes) on the
 * slowest link costs at most 3600 + 2^53 x 8 s, about 7e16 s, so a sum
 * over even 1e12 messages stays below 1e29, far from a double's 1.8e308
 * (a latency of 1e308 s made the rounds model's sum infinite, and the
 * search's comparisons meaningless).  The upper bound on a rate (1e18
 * B/s, 8 Ebit/s, a million times NVLink) keeps inverse rates, and the
 * fair sharing's arithmetic on them, far from a double's smallest. */
#define LINK_MAX_ALPHA 3600.0    /* seconds: an hour */
#define LINK_MIN_BW 0.125        /* bytes/s: 1 bit/s */
#define LINK_MAX_BW 1e18         /* bytes/s */
/* The most ranks a links file (a per-pair matrix) may have: its two n x n
 * tables of doubles take 16 n^2 bytes, 256 MiB at 4096 ranks (as much as
 * the file's text may take, LINK_MAX_BYTES); `ranks 65535` must be an
 * error at its line, not 64 GiB asked of malloc. */
#define LINK_MAX_MATRIX 4096
/* The most bytes the groups' membership tables may take together (a
 * group takes 1 + its largest rank): a file of many groups of high ranks
 * must not turn a few bytes a line into kilobytes of memory a line. */
#define LINK_MAX_GROUP_BYTES (64L << 20)
#define LINK_MAX_GROUP_BYTES_TEXT "64 MiB"

#define LINK_MAX_CORES 65536   /* cores a host may have */

/* What the ranks of one host share (above, "One host"); all zero: nothing
 * (every prediction as without it). */
typedef struct {
	double mem_bw;       /* > 0: bytes/s the host copies, every rank's copies of a round
				drawing on it; 0: no limit */
	double reduce_bw;    /* > 0: bytes/s one core reduces; 0: reductions cost nothing */
	int cores;           /* > 0: cores the ranks share; 0: one per rank */
} link_host;

struct link_index;   /* linkmodel.c: the names of groups and segments, hashed */

/* How a segment was declared, so that it is written back the same way. */
typedef enum {
	LINK_DECL_ONEWAY,    /* segment NAME A -> B */
	LINK_DECL_BOTH,      /* segment NAME A <-> B: this one, A to B ... */
	LINK_DECL_BACK,      /* ... and the next, NAME.back, B to A */
	LINK_DECL_UP,        /* uplink G: G.up, out of the group ... */
	LINK_DECL_DOWN       /* ... and the next, G.down, into it */
} link_decl;

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
	link_decl decl;
} link_segment;

/* A segment endpoint: a group (or LINK_ANY, every rank), or with `neg`
 * every rank outside it. */
typedef struct {
	int group;
	bool neg;
} link_end;

typedef struct {
	link_kind kind;
	int n;               /* matrix: rank count; uniform: 0 (any n) */
	double alpha, beta;  /* uniform: latency (s), inverse bandwidth (s/B) */
	double *alpha_m;     /* matrix: n*n latencies, [src*n + dst] */
	double *beta_m;      /* matrix: n*n inverse bandwidths */
	double rank_bw;      /* > 0: a rank's injection bandwidth (B/s), shared by the
				messages it sends (or receives) in one round; 0: every
				link runs at its own bandwidth (switched fabric) */
	link_host host;      /* the one host's shared resources (above); zero: none */
	char *source;        /* where it came from, for reports (owned) */
	link_group *groups;  /* shared segments (see above); none by default */
	int ngroups;
	link_segment *segs;
	int nsegs;
	struct link_index *index;   /* names -> groups and segments, and the arrays'
				       capacities (owned; NULL while there are none) */
} link_model;

/* Input limits of link_read_matrix: a line holds four short fields or a
 * group (256 KiB: some 40,000 ranks), and 256 MiB holds every pair of
 * about 2,900 ranks spelt out. */
#define LINK_MAX_LINE 262144
#define LINK_MAX_LINE_TEXT "262144"
#define LINK_MAX_BYTES (256 << 20)
#define LINK_MAX_BYTES_TEXT "256 MiB"

/* linkmodel.c */
/* A uniform model: every pair has latency alpha (s) and bandwidth bw (B/s).
 * -1 when bw <= 0 or alpha < 0. */
int link_uniform(link_model *lm, double alpha, double bw, link_error *err);
/* An n-rank matrix with every pair set to (alpha, bw); edit with
 * link_set.  -1 on bad arguments. */
int link_matrix(link_model *lm, int n, double alpha, double bw, link_error *err);
/* Set the ordered pair src -> dst of a matrix model. */
void link_set(link_model *lm, int src, int dst, double alpha, double bw);
/* Set the shared injection bandwidth (0: none).  -1 when bw < 0 or
 * outside the range below. */
int link_set_rank_bw(link_model *lm, double bw, link_error *err);
/* Set the host's shared resources (link_host; a zero field: none).  -1
 * naming the field when a rate is outside LINK_MIN_BW..LINK_MAX_BW or
 * cores outside 1..LINK_MAX_CORES; lm is then unchanged. */
int link_set_host(link_model *lm, const link_host *h, link_error *err);
/* Does lm say anything about the host? */
static inline bool link_has_host(const link_model *lm)
{
	return lm->host.mem_bw > 0 || lm->host.reduce_bw > 0 || lm->host.cores > 0;
}
/* Is alpha a latency (0 to LINK_MAX_ALPHA s), bw a bandwidth (LINK_MIN_BW
 * to LINK_MAX_BW B/s) the model takes?  0, or -1 with a message saying
 * the range (what: "latency", "bandwidth", "rank-bw", ...). */
int link_check_alpha(const char *what, double alpha, link_error *err);
int link_check_bw(const char *what, double bw, link_error *err);
/* Check every latency and bandwidth of lm against that range (models
 * built with link_set are not checked as they are set).  0 or -1 naming
 * the first pair out of range. */
int link_check_values(const link_model *lm, link_error *err);
/* Check that lm can cost a schedule of n ranks (a matrix must have
 * exactly n ranks, and no group may name a rank >= n).  -1 with a message
 * otherwise. */
int link_check_n(const link_model *lm, int n, link_error *err);
/* Free what lm owns (not lm itself); lm becomes empty. */
void link_free(link_model *lm);
/* One-line description: "uniform alpha 3 us, bw 450 GB/s" or
 * "matrix links.tsv (8 ranks)". */
char *link_describe(const link_model *lm, char *buf, size_t len);

/* Typed builders of shared segments.  Each returns -1 with a message
 * (no location) for a bad or repeated name, a rank out of range or listed
 * twice, a bandwidth that is not positive, a group that does not exist. */
/* A group of count ranks: its index, or -1. */
int link_add_group(link_model *lm, const char *name, const int *ranks, int count, link_error *err);
/* Group g's uplink: segments "NAME.up" (out of it) and "NAME.down" (into
 * it), bw bytes/s each.  0 or -1. */
int link_add_uplink(link_model *lm, int g, double bw, link_error *err);
/* A segment from `from` to `to` of bw bytes/s; both: and NAME.back the
 * other way.  0 or -1. */
int link_add_segment(link_model *lm, const char *name, link_end from, link_end to, bool both, double bw,
		     link_error *err);
/* Parse one declaration line of the forms above ("group rack0 0 3 5 6",
 * "uplink rack0 200Mbit/s", "segment t rack0 -> rack1 1Gbit/s",
 * "rank-bw 400Mbit/s"; a `#` comment is ignored) and add it to lm through
 * the builders.  Returns 1 when it added something, 0 when the line is not
 * a declaration (its first word is none of these), -1 with a message (no
 * location: the caller knows it) when it is one but wrong. */
int link_declare(link_model *lm, const char *line, link_error *err);
/* The group called name, or -1 (hashed). */
int link_group_find(const link_model *lm, const char *name);
/* The segment called name (uplinks: "G.up", "G.down"), or -1 (hashed). */
int link_segment_find(const link_model *lm, const char *name);
/* Copy src's groups, segments, host resources and rank bandwidth (those it has) into
 * dst, which keeps its own latencies and bandwidths, and its own groups
 * and segments before them.  -1 on a name dst already has, or out of
 * memory. */
int link_copy_segments(link_model *dst, const link_model *src, link_error *err);

/* linkfile.c */
/* Read a matrix file (format above) into lm.  -1 with "file:line: ..." in
 * err on any problem: bad units, bad ranks, duplicates, missing pairs,
 * numbers out of range ("file: ..." for what no one line says: missing
 * pairs, no pair lines, a read error). */
int link_read_matrix(link_model *lm, const char *path, link_error *err);
/* Write lm as a matrix file for n ranks (a uniform model is expanded),
 * its segments as declarations (bandwidths that read back exactly). */
void link_write_matrix(FILE *out, const link_model *lm, int n);

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
