/*
 * cmd_flags.h - the command line of every collc subcommand (internal
 * header).
 *
 * Pipeline position: each subcommand (cmd_*.c) parses its argv with one
 * flag parser into a cmd_opts (cmd_flags.c: one flag table per
 * subcommand, which also writes its --help); the cost subcommands, `collc
 * cost`, `sim`, `compare`, `tune` and `reorder`, then load the .coll
 * files through the driver and turn the chosen algorithms into cost plans
 * (cmd_algos.c), and print with the shared row and header writers
 * (cmd_report.c).  Nothing below this layer knows a subcommand, and
 * nothing here knows an algorithm: StragglAR is recognised only by having
 * rounds in a phase whose name starts with "pre".
 *
 * Defaults follow StragglAR's analytical model: alpha 3 us, 450 GB/s
 * (NVLink on H100), buffer 1 GiB for cost/sim, and the nccl-tests sweep
 * 1 KiB .. 4 GiB, factor 2 for compare/tune.
 *
 * Exit statuses, as every function here returns them: 0 ok, 1 a file,
 * schedule or matrix is wrong, 2 a usage error; messages are printed as
 * "collc: error: ...".
 */
#ifndef COLL_CMD_FLAGS_H
#define COLL_CMD_FLAGS_H

#include <stdbool.h>
#include <stdio.h>

#include "cost.h"
#include "costplan.h"
#include "reorder.h"
#include "driver.h"
#include "linkmodel.h"

/* Which subcommand is parsing (cmd_parse), as bits for the sets of them
 * that share a behaviour; CMD_COSTS: the ones that run a cost model. */
enum {
	CMD_COST = 1, CMD_SIM = 2, CMD_COMPARE = 4, CMD_TUNE = 8, CMD_REORDER = 16,
	CMD_CHECK = 32, CMD_SHOW = 64, CMD_BUILD = 128,
	CMD_COSTS = CMD_COST | CMD_SIM | CMD_COMPARE | CMD_TUNE | CMD_REORDER,
};

/* A subcommand's options after parsing and checking. */
typedef struct {
	const char *cmd;       /* argv[0]: "cost", "sim", ... */
	int which;             /* CMD_* */
	char **files;
	int nfiles;
	char **algos;          /* -a, split at commas (owned strings) */
	int nalgos;
	int n;
	bool have_n;
	drv_define defs[32];
	int ndefs;
	double *sizes;         /* the sizes to evaluate, from -s, -b/-e or the default */
	int nsizes;
	double s_size[64];
	int ns;
	double b, e, f, inc;
	bool have_b, have_e, have_f, have_i;
	double alpha, bw, rank_bw;
	bool have_alpha, have_bw, have_rank_bw;
	double mem_bw, reduce_bw;   /* --mem-bw, --reduce-bw (0: none) */
	int cores;                  /* --cores (0: none) */
	bool have_mem_bw, have_reduce_bw, have_cores;
	const char *links_path;
	link_model links;
	int straggler;         /* -1 none, -2 "last" (n-1 for every n) */
	double delay;
	bool have_delay;
	int segments;
	double seg_bytes;      /* --seg-bytes: pipeline each chunk in pieces of at most this (0: --segments) */
	double sharing;        /* --sharing maxmin|tcp|alpha=K: cost_params.share_alpha;
				  -1: tcp with --links, else maxmin */
	int sharing_rtt;       /* --sharing tcp: cost_params.share_rtt */
	double jitter;         /* --jitter SIGMA: cost_params.share_jitter (0: none) */
	int jitter_samples;    /* --jitter-samples K: cost_params.share_samples (0: default) */
	int round_order;       /* --round-order on|off: the sim models libcollrt's round order
				  (cost_params.round_order); -1: on with --links, else off */
	const char *baseline;
	bool baseline_given;
	const char *model;     /* rounds, sim, all */
	bool csv, json, trace;
	bool ranges_only;      /* tune: the size ranges alone, no critical delays */
	const char *svg;
	int nlo, nhi, nstep;   /* --n-range A..B:K; nstep 0: powers of 2 and midpoints */
	bool have_nrange;
	int repeat;
	int32_t *perm;         /* --perm: the rank order to cost (schedule rank -> physical), NULL: identity */
	int nperm;
	/* reorder */
	double time_limit;     /* --time-limit, seconds (0: not given, the default 10 s) */
	unsigned long long seed;   /* --seed */
	long moves;            /* --moves (0: the default) */
	double effort;         /* --effort (0: the default, 1) */
	int exact_max;         /* --exact-max (0: the default, -1: never) */
	bool sim;              /* --sim: also simulate at large n */
	bool exhaustive;       /* --exhaustive: try every order (n <= 11) */
	int spread;            /* --spread K: also K orders spread over the range of costs (0: none) */
	/* check, show, build (check's n: nlo..nhi) */
	const char *algo;      /* -a, one name (not split at commas) */
	int kind;              /* show -t COLL: the first algorithm of that collective (-1: any) */
	const char *format;    /* show --format: table, json or dot */
	bool show_perm;        /* show --perm: the rank order of a cluster's library */
	const char *cluster;   /* show and build --cluster NAME (NULL: the first) */
	const char *out;       /* build -o DIR */
	bool verbose;          /* build -v */
	const char *tuning;    /* build --tuning FILE */
	bool stats;            /* --stats (cmd_take_common) */
} cmd_opts;

/* An algorithm to cost, built for one n at a time. */
typedef struct {
	const char *name;
	ir_kind kind;
	ir_sched *s;           /* for the current n; NULL when unsupported */
	cost_plan *plan;
	char why[160];         /* why unsupported */
} cmd_algo;

/* A result row, the unit of --csv and --json. */
typedef struct {
	const char *algo;
	ir_kind kind;
	int n;
	double bytes;
	const char *model;
	cost_result r;
	double speedup;        /* NaN: no baseline */
	int straggler;
	double delay;          /* the delay given; NaN: masked or none */
} cmd_row;

/* cmd_flags.c */
/* Print "collc: error: ..." and return 2 (usage) or 1 (input). */
int cmd_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cmd_input_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print a link model error: "path:line: error: text" when it is about a
 * file (loc_len > 0), else as cmd_input_error; returns 1. */
int cmd_link_error(const link_error *e);
/* Parse argv (argv[0] the subcommand, `which` its CMD_*) with that
 * subcommand's flag table into o and check the combination.  Returns 0,
 * 1 (bad link matrix), 2 (usage), or -1 after printing its --help.  Free
 * o with cmd_free_opts whatever it returns. */
int cmd_parse(int argc, char **argv, int which, cmd_opts *o);
/* Free what cmd_parse allocated in o (not o itself). */
void cmd_free_opts(cmd_opts *o);
/* The straggler rank for n ranks, -1 for none. */
int cmd_straggler_for(const cmd_opts *o, int n);

/* cmd_algos.c */
/* cmd_parse, then load the files, check every -D and choose the
 * algorithms (-a, else every named one): sim takes exactly one, and for
 * compare and tune the baseline comes along.  *p and *v are set (or
 * NULL) for cmd_teardown whatever it returns; returns as cmd_parse. */
int cmd_setup(int argc, char **argv, int which, cmd_opts *o, drv_prog **p, cmd_algo **v, int *nv);
/* Every -D of o must name a parameter of some algorithm in p: 0, or 1
 * after saying which does not. */
int cmd_check_defines(drv_prog *p, const cmd_opts *o);
/* check's and show's -a: 0 when p has an algorithm named name (or name
 * is NULL), else 1 after "no algorithm named ..." with the closest name
 * or the names there are. */
int cmd_check_algo(drv_prog *p, const char *name);
/* The algorithm name of p closest to name (diag_suggest), or NULL. */
const char *cmd_closest_algo(drv_prog *p, const char *name);
/* Evaluate and verify a for n ranks and prepare its plan.  0 ok, 1 failed
 * (diagnostics printed), 3 unsupported n in quiet mode (reason in a->why). */
int cmd_algo_build(drv_prog *p, const cmd_opts *o, cmd_algo *a, int n, bool quiet);
/* Free what cmd_setup and cmd_algo_build made; returns rc as an exit
 * status (-1, --help printed, becomes 0). */
int cmd_teardown(int rc, cmd_opts *o, drv_prog *p, cmd_algo *v, int nv);
/* The cost parameters of o for one size at n ranks. */
cost_params cmd_params(const cmd_opts *o, double bytes, int n);
/* --seg-bytes X: the segments that cut plan p's chunks at `bytes` into
 * pieces of at most X (what the runtime's executor does with its
 * COLL_TCP_SEG_BYTES), else --segments. */
int cmd_segments(const cmd_opts *o, const cost_plan *p, double bytes);
/* The models --model names, in table order; m holds 4. */
int cmd_models(const cmd_opts *o, const cost_model **m);

/* cmd_report.c */
/* The CSV header line, a row under it (full precision: tools and tests
 * read these), and a row as a JSON object of a list (`first`: no comma
 * before it). */
extern const char cmd_csv_header[];
void cmd_csv_row(FILE *f, const cmd_row *w);
void cmd_json_row(FILE *f, const cmd_row *w, bool first);
/* A JSON number (null when not finite) and a JSON string. */
void cmd_json_num(FILE *f, double v);
void cmd_json_str(FILE *f, const char *s);
/* "# links: ..." with the straggler and segments at n ranks. */
void cmd_print_links(const cmd_opts *o, int n);
/* "# NAME (collective): n=..., chunks, rounds, messages, ports". */
void cmd_describe_sched(const cmd_algo *a);
/* A time as link_fmt_time writes it (4 significant digits in s, ms, us
 * or ns), but never finer than 0.001 ns, and a value below half of that
 * as 0: sums and differences of simulated times carry rounding noise,
 * which printed as an idle time of "5.421e-11 ns". */
char *cmd_fmt_time(double s, char *buf, size_t len);
/* Open an output file for writing, and close it reporting any error of
 * the writer (rc) or of fclose; both return an exit status. */
int cmd_open_out(const char *path, FILE **f);
int cmd_close_out(const char *path, FILE *f, int rc);

#endif
