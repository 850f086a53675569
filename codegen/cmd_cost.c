/*
 * cmd_cost.c - `collc cost`, `collc sim`, `collc compare`, `collc tune`.
 *
 * Pipeline position: the user-facing end of the cost model.  Each command
 * parses its flags (units through linkmodel.c), loads the .coll files and
 * gets verified schedules from the driver, prepares each schedule once
 * (cost_plan_new) and evaluates it for every size, model and straggler
 * setting asked for, then prints text, CSV, JSON or SVG.  Nothing here
 * knows any algorithm: StragglAR is recognised only by having rounds in a
 * phase whose name starts with "pre".
 *
 * Defaults follow StragglAR's analytical model: alpha 3 us, 450 GB/s
 * (NVLink on H100), buffer 1 GiB for cost/sim, and the nccl-tests sweep
 * 1 KiB .. 4 GiB, factor 2 for compare/tune.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd_cost.h"
#include "cost.h"
#include "driver.h"
#include "linkmodel.h"
#include "svg.h"

enum { C_COST = 1, C_SIM = 2, C_COMPARE = 4, C_TUNE = 8, C_ALL = 15 };

typedef struct {
	const char *cmd;
	int which;
	char **files;
	int nfiles;
	char **algos;          /* -a, split at commas (owned strings) */
	int nalgos;
	int n;
	bool have_n;
	drv_define defs[32];
	int ndefs;
	double *sizes;
	int nsizes;
	double s_size[64];
	int ns;
	double b, e, f, inc;
	bool have_b, have_e, have_f, have_i;
	double alpha, bw, rank_bw;
	bool have_alpha, have_bw, have_rank_bw;
	const char *links_path;
	link_model links;
	int straggler;         /* -1 none, -2 "last" (n-1 for every n) */
	double delay;
	bool have_delay;
	int segments;
	const char *baseline;
	bool baseline_given;
	const char *model;     /* rounds, sim, all */
	bool csv, json, trace;
	const char *svg;
	int nlo, nhi, nstep;   /* --n-range A..B:K; nstep 0: powers of 2 and midpoints */
	bool have_nrange;
	int repeat;
} copts;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("collc: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 2;
}

static int input_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int input_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("collc: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 1;
}

/* --- help -------------------------------------------------------------------- */

static const char common_help[] =
	"options:\n"
	"  -a ALGO[,ALGO...]   algorithm(s) by name (default: every algorithm in FILE...)\n"
	"  -n N                rank count (default: the rank count of --links)\n"
	"  -D name=value       set a `param` of the algorithms\n"
	"  -s SIZE             buffer size (repeatable)\n"
	"  -b MIN -e MAX       size sweep as nccl-tests: MIN, MIN*F, ... up to MAX (not sim)\n"
	"  -f F | -i STEP      sweep factor (default 2) or additive step\n"
	"  --alpha T           link latency (default 3us)\n"
	"  --bw BW             link bandwidth (default 450GB/s)\n"
	"  --links MATRIX      per-pair latency and bandwidth (TSV: src dst alpha bandwidth)\n"
	"  --rank-bw BW|none   a rank's injection bandwidth, shared by the messages it sends\n"
	"                      (or receives) in one round; default: --bw for uniform links\n"
	"                      (one connection per rank), none for --links (independent)\n"
	"  --straggler R       rank R joins late ('last': rank n-1); with no --delay, late\n"
	"                      enough to hide all the others can do without it\n"
	"  --delay D           the straggler's delay (implies --straggler last)\n"
	"  --segments S        pipeline the buffer in S segments (sim model)\n"
	"  --max-steps N       evaluation step limit\n"
	"  --help              this text\n"
	"units: sizes B KB MB GB (x1000), KiB MiB GiB (x1024), K M G as nccl-tests (x1024);\n"
	"times ns us ms s; bandwidths B/s KB/s MB/s GB/s KiB/s MiB/s GiB/s Mbit/s Gbit/s.\n"
	"Times count from when the last rank joined (the straggler, if any).\n";

static void help(const char *cmd)
{
	if (strcmp(cmd, "cost") == 0)
		fputs("usage: collc cost FILE... -a ALGO -n N [-s SIZE | -b MIN -e MAX [-f F]]\n"
		      "                  [--alpha T --bw BW | --links MATRIX] [--csv | --json]\n"
		      "Predicted time of ALGO under each cost model, one line per model and size:\n"
		      "  rounds  round-synchronous: sum over rounds of the slowest transfer\n"
		      "  sim     event-driven: each transfer starts when its data and ports are ready\n",
		      stdout);
	else if (strcmp(cmd, "sim") == 0)
		fputs("usage: collc sim FILE... -a ALGO -n N [-s SIZE] [--alpha T --bw BW | --links M]\n"
		      "                 [--straggler R] [--delay D] [--segments S] [--trace] [--svg FILE]\n"
		      "Event-driven simulation: completion time, algbw, busbw, each rank's idle time\n"
		      "and the critical path.\n"
		      "  --trace       print each rank's timeline\n"
		      "  --svg FILE    draw the timeline (critical path outlined)\n"
		      "  --repeat K    run the simulation K times and print its mean run time\n",
		      stdout);
	else if (strcmp(cmd, "compare") == 0)
		fputs("usage: collc compare FILE... -n N [-b MIN -e MAX -f F] [--straggler R --delay D]\n"
		      "                     [--baseline ALGO] [--model sim|rounds|all] [--csv | --json]\n"
		      "                     [--svg FILE] [--n-range A..B [-s SIZE]]\n"
		      "Algorithms x sizes: time, algbw, busbw (GB/s, nccl-tests definitions) and\n"
		      "speedup over the baseline (default ring) of the same collective.\n"
		      "  --svg FILE       plot algbw against size, one line per algorithm\n"
		      "  --n-range A..B   instead, speedup over the baseline for n in A..B (powers\n"
		      "                   of 2 and midpoints; A..B:K for every K-th n) at one size\n"
		      "                   (default 1GiB); --svg plots it against n\n",
		      stdout);
	else
		fputs("usage: collc tune FILE... -n N [-b MIN -e MAX -f F] [link flags] [--model M]\n"
		      "                  [--straggler R] [--delay D] [--csv | --json]\n"
		      "Per collective, the fastest algorithm for each size range (the table a\n"
		      "generated library chooses by), and for every algorithm with a precondition\n"
		      "phase (StragglAR) the straggler delay above which it beats each other\n"
		      "algorithm, searched with the model and compared with StragglAR's rule\n"
		      "T_delay >= T_RS - max(T_B - T_SAR, 0).  The delay search uses --straggler\n"
		      "(default: rank n-1).\n",
		      stdout);
	fputs(common_help, stdout);
	if (strcmp(cmd, "compare") == 0 || strcmp(cmd, "tune") == 0)
		fputs("  --model M           sim (default), rounds, or all\n"
		      "  --csv, --json       machine-readable rows (see README: collc compare --json)\n",
		      stdout);
}

/* --- flags ------------------------------------------------------------------- */

static const struct {
	const char *name;
	int takes_value;
	int cmds;
} flags[] = {
	{ "-a", 1, C_ALL },          { "-n", 1, C_ALL },          { "-D", 1, C_ALL },
	{ "-s", 1, C_ALL },          { "-b", 1, C_COST | C_COMPARE | C_TUNE },
	{ "-e", 1, C_COST | C_COMPARE | C_TUNE },
	{ "-f", 1, C_COST | C_COMPARE | C_TUNE },
	{ "-i", 1, C_COST | C_COMPARE | C_TUNE },
	{ "--alpha", 1, C_ALL },     { "--bw", 1, C_ALL },        { "--links", 1, C_ALL },
	{ "--rank-bw", 1, C_ALL },
	{ "--straggler", 1, C_ALL }, { "--delay", 1, C_ALL },     { "--segments", 1, C_ALL },
	{ "--baseline", 1, C_COMPARE | C_TUNE },
	{ "--model", 1, C_COMPARE | C_TUNE },
	{ "--csv", 0, C_COST | C_COMPARE | C_TUNE },
	{ "--json", 0, C_COST | C_COMPARE | C_TUNE },
	{ "--svg", 1, C_SIM | C_COMPARE }, { "--trace", 0, C_SIM },
	{ "--n-range", 1, C_COMPARE },   { "--repeat", 1, C_SIM },
	{ "--max-steps", 1, C_ALL },
};

static int parse_int(const char *flag, const char *v, long lo, long hi, int *out)
{
	char *end;
	long x = strtol(v, &end, 10);
	if (end == v || *end || x < lo || x > hi)
		return usage_error("%s needs an integer in %ld..%ld, found '%s'", flag, lo, hi, v);
	*out = (int)x;
	return 0;
}

static int parse_size_flag(const char *flag, const char *v, double *out)
{
	link_error err;
	if (link_parse_size(v, out, &err))
		return usage_error("%s: %s", flag, err.msg);
	return 0;
}

static void free_opts(copts *o)
{
	for (int i = 0; i < o->nalgos; i++)
		free(o->algos[i]);
	free(o->algos);
	free(o->files);
	free(o->sizes);
	for (int d = 0; d < o->ndefs; d++)
		free((char *)o->defs[d].name);
	link_free(&o->links);
}

static int add_algos(copts *o, const char *list)
{
	const char *p = list;
	do {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len == 0)
			return usage_error("-a: empty algorithm name in '%s'", list);
		char **na = realloc(o->algos, sizeof *na * (size_t)(o->nalgos + 1));
		if (!na)
			return usage_error("out of memory");
		o->algos = na;
		o->algos[o->nalgos++] = strndup(p, len);
		p = c ? c + 1 : NULL;
	} while (p);
	return 0;
}

/* Parse argv into o.  Returns 0, 1 (bad input file) or 2 (usage), or -1
 * after printing --help. */
static int parse(int argc, char **argv, int which, copts *o)
{
	memset(o, 0, sizeof *o);
	o->cmd = argv[0];
	o->which = which;
	o->files = calloc((size_t)argc + 1, sizeof *o->files);
	o->straggler = -1;
	o->segments = 1;
	o->baseline = "ring";
	o->model = "sim";
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			help(o->cmd);
			return -1;
		}
		if (a[0] != '-' || !a[1]) {
			o->files[o->nfiles++] = a;
			continue;
		}
		/* "--flag=value", "-Dname=value" and "--flag value" */
		char name[32];
		const char *v = NULL;
		const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
		if (eq && (size_t)(eq - a) < sizeof name) {
			memcpy(name, a, (size_t)(eq - a));
			name[eq - a] = 0;
			v = eq + 1;
		} else if (strncmp(a, "-D", 2) == 0 && a[2]) {
			strcpy(name, "-D");
			v = a + 2;
		} else {
			snprintf(name, sizeof name, "%s", a);
		}
		int k = -1;
		for (size_t j = 0; j < sizeof flags / sizeof *flags; j++)
			if (strcmp(flags[j].name, name) == 0)
				k = (int)j;
		if (k < 0 || !(flags[k].cmds & which))
			return usage_error("unknown option '%s' for '%s' (see collc %s --help)", a,
					   o->cmd, o->cmd);
		if (flags[k].takes_value && !v) {
			if (i + 1 >= argc)
				return usage_error("%s needs a value", name);
			v = argv[++i];
		} else if (!flags[k].takes_value && v) {
			return usage_error("%s takes no value", name);
		}
		link_error err;
		if (strcmp(name, "-a") == 0) {
			if (add_algos(o, v))
				return 2;
		} else if (strcmp(name, "-n") == 0) {
			if (parse_int("-n", v, 1, 65536, &o->n))
				return 2;
			o->have_n = true;
		} else if (strcmp(name, "-D") == 0) {
			if (o->ndefs == 32)
				return usage_error("too many -D");
			if (drv_parse_define(v, &o->defs[o->ndefs]))
				return 2;
			o->ndefs++;
		} else if (strcmp(name, "-s") == 0) {
			if (o->ns == 64)
				return usage_error("too many -s");
			if (parse_size_flag("-s", v, &o->s_size[o->ns]))
				return 2;
			o->ns++;
		} else if (strcmp(name, "-b") == 0) {
			if (parse_size_flag("-b", v, &o->b))
				return 2;
			o->have_b = true;
		} else if (strcmp(name, "-e") == 0) {
			if (parse_size_flag("-e", v, &o->e))
				return 2;
			o->have_e = true;
		} else if (strcmp(name, "-f") == 0) {
			char *end;
			o->f = strtod(v, &end);
			if (end == v || *end || !(o->f > 1) || o->f > 1e6)
				return usage_error("-f needs a factor > 1, found '%s'", v);
			o->have_f = true;
		} else if (strcmp(name, "-i") == 0) {
			if (parse_size_flag("-i", v, &o->inc))
				return 2;
			o->have_i = true;
		} else if (strcmp(name, "--alpha") == 0) {
			if (link_parse_time(v, &o->alpha, &err))
				return usage_error("--alpha: %s", err.msg);
			o->have_alpha = true;
		} else if (strcmp(name, "--bw") == 0) {
			if (link_parse_bw(v, &o->bw, &err))
				return usage_error("--bw: %s", err.msg);
			o->have_bw = true;
		} else if (strcmp(name, "--rank-bw") == 0) {
			if (strcmp(v, "none") == 0)
				o->rank_bw = 0;
			else if (link_parse_bw(v, &o->rank_bw, &err))
				return usage_error("--rank-bw: %s (or 'none')", err.msg);
			o->have_rank_bw = true;
		} else if (strcmp(name, "--links") == 0) {
			o->links_path = v;
		} else if (strcmp(name, "--straggler") == 0) {
			if (strcmp(v, "last") == 0)
				o->straggler = -2;
			else if (parse_int("--straggler", v, 0, 65535, &o->straggler))
				return 2;
		} else if (strcmp(name, "--delay") == 0) {
			if (link_parse_time(v, &o->delay, &err))
				return usage_error("--delay: %s", err.msg);
			o->have_delay = true;
		} else if (strcmp(name, "--segments") == 0) {
			if (parse_int("--segments", v, 1, 1 << 20, &o->segments))
				return 2;
		} else if (strcmp(name, "--baseline") == 0) {
			o->baseline = v;
			o->baseline_given = true;
		} else if (strcmp(name, "--model") == 0) {
			if (strcmp(v, "all") && !cost_model_find(v))
				return usage_error("--model must be sim, rounds or all, found '%s'", v);
			o->model = v;
		} else if (strcmp(name, "--csv") == 0) {
			o->csv = true;
		} else if (strcmp(name, "--json") == 0) {
			o->json = true;
		} else if (strcmp(name, "--svg") == 0) {
			o->svg = v;
		} else if (strcmp(name, "--trace") == 0) {
			o->trace = true;
		} else if (strcmp(name, "--repeat") == 0) {
			if (parse_int("--repeat", v, 1, 1000000, &o->repeat))
				return 2;
		} else if (strcmp(name, "--max-steps") == 0) {
			char *end;
			long long m = strtoll(v, &end, 10);
			if (end == v || *end || m < 1)
				return usage_error("--max-steps needs a positive integer, found '%s'", v);
			drv_max_steps = m;
		} else if (strcmp(name, "--n-range") == 0) {
			char *end;
			long lo = strtol(v, &end, 10), hi = 0;
			if (end != v && strncmp(end, "..", 2) == 0) {
				const char *t = end + 2;
				hi = strtol(t, &end, 10);
				if (end == t)
					hi = 0;
			}
			int step = 0;
			if (*end == ':') {
				const char *t = end + 1;
				step = (int)strtol(t, &end, 10);
				if (end == t || step < 1)
					step = -1;
			}
			if (*end || lo < 1 || hi < lo || hi > 65536 || step < 0)
				return usage_error("--n-range needs A..B (or A..B:K) with 1 <= A <= B, found '%s'", v);
			o->nlo = (int)lo;
			o->nhi = (int)hi;
			o->nstep = step;
			o->have_nrange = true;
		}
	}
	if (o->nfiles == 0)
		return usage_error("%s needs at least one .coll file", o->cmd);
	if (o->csv && o->json)
		return usage_error("choose one of --csv and --json");

	/* links */
	link_error err;
	if (o->links_path) {
		if (o->have_alpha || o->have_bw)
			return usage_error("--links and --alpha/--bw exclude each other");
		if (o->have_nrange)
			return usage_error("--n-range needs uniform links (--alpha, --bw), not a matrix");
		if (link_read_matrix(&o->links, o->links_path, &err))
			return input_error("%s", err.msg);
		if (!o->have_n) {
			o->n = o->links.n;
			o->have_n = true;
		} else if (o->n != o->links.n) {
			return input_error("the link matrix %s has %d ranks but -n is %d", o->links_path,
					   o->links.n, o->n);
		}
	} else if (link_uniform(&o->links, o->have_alpha ? o->alpha : 3e-6,
				o->have_bw ? o->bw : 450e9, &err)) {
		return usage_error("%s", err.msg);
	}
	/* One connection per rank (StragglAR's and NCCL's scale-up
	 * assumption) unless told otherwise; a probed matrix says nothing
	 * about sharing, so there links stay independent by default. */
	if (o->have_rank_bw)
		link_set_rank_bw(&o->links, o->rank_bw, NULL);
	else if (!o->links_path)
		link_set_rank_bw(&o->links, o->have_bw ? o->bw : 450e9, NULL);
	if (o->have_nrange && o->have_n)
		return usage_error("give either -n or --n-range");
	if (!o->have_n && !o->have_nrange)
		return usage_error("%s needs the rank count: -n N", o->cmd);

	/* sizes */
	if (o->ns && (o->have_b || o->have_e))
		return usage_error("give either -s or -b/-e");
	if ((o->have_f || o->have_i) && !(o->have_b || o->have_e))
		return usage_error("-f and -i go with -b and -e");
	if (o->have_f && o->have_i)
		return usage_error("give either -f or -i");
	if (o->have_b || o->have_e) {
		if (!o->have_b)
			o->b = o->e;
		if (!o->have_e)
			o->e = o->b;
		if (o->e < o->b)
			return usage_error("-e must not be below -b");
		double f = o->have_f ? o->f : 2;
		for (double x = o->b; x <= o->e * (1 + 1e-12);
		     x = o->have_i ? x + o->inc : fmax(floor(x * f), x + 1)) {
			if (o->nsizes == 100000)
				return usage_error("more than 100000 sizes in the sweep");
			double *ns = realloc(o->sizes, sizeof *ns * (size_t)(o->nsizes + 1));
			if (!ns)
				return usage_error("out of memory");
			o->sizes = ns;
			o->sizes[o->nsizes++] = x;
		}
	} else if (o->ns) {
		o->sizes = malloc(sizeof *o->sizes * (size_t)o->ns);
		memcpy(o->sizes, o->s_size, sizeof *o->sizes * (size_t)o->ns);
		o->nsizes = o->ns;
	} else if ((which & (C_COMPARE | C_TUNE)) && !o->have_nrange) {
		for (double x = 1024; x <= 4 * 1073741824.0; x *= 2) {
			o->sizes = realloc(o->sizes, sizeof *o->sizes * (size_t)(o->nsizes + 1));
			o->sizes[o->nsizes++] = x;
		}
	} else {
		o->sizes = malloc(sizeof *o->sizes);
		o->sizes[0] = 1073741824.0;
		o->nsizes = 1;
	}
	if ((which & C_SIM) && o->nsizes != 1)
		return usage_error("sim takes one size (-s)");
	if (o->have_nrange && o->nsizes != 1)
		return usage_error("--n-range takes one size (-s)");

	/* straggler: --delay alone means the last rank */
	if (o->have_delay && o->straggler == -1)
		o->straggler = -2;
	if (o->straggler >= 0 && o->have_n && o->straggler >= o->n)
		return usage_error("--straggler %d out of range for %d ranks", o->straggler, o->n);
	if (o->straggler >= 0 && o->have_nrange && o->straggler >= o->nlo)
		return usage_error("--straggler %d out of range for n = %d (use --straggler last)",
				   o->straggler, o->nlo);
	return 0;
}

/* The straggler rank for n ranks, -1 for none. */
static int straggler_for(const copts *o, int n)
{
	return o->straggler == -2 ? n - 1 : o->straggler;
}

static double delay_of(const copts *o)
{
	return o->have_delay ? o->delay : COST_MASKED;
}

/* --- algorithms ---------------------------------------------------------------- */

typedef struct {
	const char *name;
	ir_kind kind;
	ir_sched *s;           /* for the current n; NULL when unsupported */
	cost_plan *plan;
	char why[160];         /* why unsupported */
} algo;

/* Every -D must name a parameter of some algorithm in the files. */
static int check_defines(drv_prog *p, const copts *o)
{
	const char *bad = drv_unknown_define(p, o->defs, o->ndefs);
	return bad ? input_error("-D %s: no algorithm has a parameter named '%s'", bad, bad) : 0;
}

static void list_algos(drv_prog *p, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = 0;
	for (int i = 0; i < drv_nalgos(p) && off < len; i++)
		if (drv_algo_named(p, i))
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
						drv_algo_name(p, i));
}

/* The algorithms to cost: -a (each must exist), else all named in the
 * files.  `one` asks for exactly one.  Adds the baseline when asked. */
static int select_algos(drv_prog *p, copts *o, bool one, algo **out, int *nout)
{
	char have[1024];
	list_algos(p, have, sizeof have);
	algo *v = calloc((size_t)drv_nalgos(p) + (size_t)o->nalgos + 2, sizeof *v);
	int nv = 0;
	if (o->nalgos) {
		for (int i = 0; i < o->nalgos; i++) {
			int k = drv_find_algo(p, o->algos[i]);
			if (k < 0) {
				free(v);
				return input_error("no algorithm named '%s' (have: %s)", o->algos[i], have);
			}
			bool dup = false;
			for (int j = 0; j < nv; j++)
				dup |= strcmp(v[j].name, drv_algo_name(p, k)) == 0;
			if (!dup)
				v[nv++] = (algo){ .name = drv_algo_name(p, k), .kind = drv_algo_kind(p, k) };
		}
	} else {
		for (int i = 0; i < drv_nalgos(p); i++)
			if (drv_algo_named(p, i))
				v[nv++] = (algo){ .name = drv_algo_name(p, i), .kind = drv_algo_kind(p, i) };
	}
	if (nv == 0) {
		free(v);
		return input_error("no algorithms in the given files");
	}
	if (one && nv > 1) {
		free(v);
		return usage_error("%s takes one algorithm: choose it with -a (have: %s)", o->cmd, have);
	}
	if (!one) {
		/* the baseline comes along even when -a did not name it */
		int k = drv_find_algo(p, o->baseline);
		if (k < 0 && o->baseline_given) {
			free(v);
			return input_error("--baseline: no algorithm named '%s' (have: %s)", o->baseline, have);
		}
		bool in = k < 0;
		for (int j = 0; j < nv; j++)
			in |= strcmp(v[j].name, o->baseline) == 0;
		if (!in)
			v[nv++] = (algo){ .name = drv_algo_name(p, k), .kind = drv_algo_kind(p, k) };
	}
	*out = v;
	*nout = nv;
	return 0;
}

static void release(algo *a)
{
	cost_plan_free(a->plan);
	ir_free(a->s);
	a->plan = NULL;
	a->s = NULL;
}

/* Evaluate and verify a for n ranks.  0 ok, 1 failed (diagnostics
 * printed), 3 unsupported n (quiet mode; the reason in a->why). */
static int build(drv_prog *p, const copts *o, algo *a, int n, bool quiet)
{
	release(a);
	a->why[0] = 0;
	drv_set_quiet_require(p, quiet);
	a->s = drv_run(p, a->name, n, o->defs, o->ndefs, true);
	if (!a->s) {
		const char *why = NULL;
		if (quiet && drv_unsupported(p, &why)) {
			snprintf(a->why, sizeof a->why, "%s", why ? why : "unsupported");
			return 3;
		}
		return 1;
	}
	link_error err;
	a->plan = cost_plan_new(a->s, &err);
	if (!a->plan)
		return input_error("%s", err.msg);
	return 0;
}

static cost_params params_for(const copts *o, double bytes, int n)
{
	return (cost_params){ .bytes = bytes, .links = &o->links, .straggler = straggler_for(o, n),
			      .delay = delay_of(o), .segments = o->segments };
}

/* The models the command reports, in order. */
static int models_of(const copts *o, const cost_model **m)
{
	int k = 0;
	for (const cost_model *x = cost_models; x->name; x++)
		if (strcmp(o->model, "all") == 0 || strcmp(o->model, x->name) == 0)
			m[k++] = x;
	return k;
}

/* --- output helpers ------------------------------------------------------------ */

static void json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.17g", v);
	else
		fputs("null", f);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static char *fmt_size_tick(double v, char *buf, size_t len)
{
	return link_fmt_size(v, buf, len);
}

static char *fmt_int_tick(double v, char *buf, size_t len)
{
	snprintf(buf, len, "%.0f", v);
	return buf;
}

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
} row;

static const char csv_header[] =
	"algorithm,collective,n,bytes,model,time_s,algbw,busbw,speedup,total_s,straggler,join_s\n";

static void csv_row(FILE *f, const row *w)
{
	/* full precision: the rows are for tools, and tests compare them */
	fprintf(f, "%s,%s,%d,%.0f,%s,%.17g,%.17g,%.17g,", w->algo, ir_kind_names[w->kind], w->n,
		w->bytes, w->model, w->r.time, w->r.algbw / 1e9, w->r.busbw / 1e9);
	if (isfinite(w->speedup))
		fprintf(f, "%.17g", w->speedup);
	fprintf(f, ",%.17g,", w->r.total);
	if (w->straggler >= 0)
		fprintf(f, "%d,%.17g", w->straggler, w->r.join);
	else
		fputc(',', f);
	fputc('\n', f);
}

static void json_row(FILE *f, const row *w, bool first)
{
	fputs(first ? "  {" : ",\n  {", f);
	fputs("\"algorithm\": ", f);
	json_str(f, w->algo);
	fprintf(f, ", \"collective\": \"%s\", \"n\": %d, \"bytes\": %.0f, \"model\": \"%s\", ",
		ir_kind_names[w->kind], w->n, w->bytes, w->model);
	fputs("\"time_s\": ", f);
	json_num(f, w->r.time);
	fputs(", \"algbw\": ", f);
	json_num(f, w->r.algbw / 1e9);
	fputs(", \"busbw\": ", f);
	json_num(f, w->r.busbw / 1e9);
	fputs(", \"speedup\": ", f);
	json_num(f, w->speedup);
	fputs(", \"total_s\": ", f);
	json_num(f, w->r.total);
	fputs(", \"straggler\": ", f);
	if (w->straggler >= 0)
		fprintf(f, "%d", w->straggler);
	else
		fputs("null", f);
	fputs(", \"join_s\": ", f);
	json_num(f, w->straggler >= 0 ? w->r.join : NAN);
	fputc('}', f);
}

static void print_links(const copts *o, int n)
{
	char d[256], t[32];
	printf("# links: %s", link_describe(&o->links, d, sizeof d));
	int sg = straggler_for(o, n);
	if (sg >= 0) {
		if (o->have_delay)
			printf("; straggler: rank %d, delay %s", sg, link_fmt_time(o->delay, t, sizeof t));
		else
			printf("; straggler: rank %d, delay long enough to hide what it can", sg);
	}
	if (o->segments > 1)
		printf("; %d segments", o->segments);
	printf("\n");
}

static void describe_sched(const algo *a)
{
	const cost_plan *p = a->plan;
	printf("# %s (%s): n=%d, %d chunks, %d rounds", a->name, ir_kind_names[a->kind], p->n,
	       p->chunks, p->nrounds);
	if (p->npre)
		printf(" (%d in a precondition phase)", p->npre);
	printf(", %d messages, ports %d/%d\n", p->nmsgs, p->ports_send, p->ports_recv);
}

static int open_out(const char *path, FILE **f)
{
	*f = fopen(path, "w");
	if (!*f)
		return input_error("cannot write %s: %m", path);
	return 0;
}

static int close_out(const char *path, FILE *f, int rc)
{
	if (fclose(f) != 0 || rc)
		return input_error("writing %s failed", path);
	return 0;
}

/* --- collc cost -------------------------------------------------------------- */

static int setup(int argc, char **argv, int which, copts *o, drv_prog **p, algo **v, int *nv,
		 bool one)
{
	int rc = parse(argc, argv, which, o);
	if (rc)
		return rc;
	*p = drv_load(o->nfiles, o->files);
	if (!*p)
		return 1;
	if (check_defines(*p, o))
		return 1;
	return select_algos(*p, o, one, v, nv);
}

int cmd_cost(int argc, char **argv)
{
	copts o;
	drv_prog *p = NULL;
	algo *v = NULL;
	int nv = 0;
	int rc = setup(argc, argv, C_COST, &o, &p, &v, &nv, true);
	if (rc == 0)
		rc = build(p, &o, &v[0], o.n, false);
	if (rc == 0) {
		const cost_model *models[4];
		int nm = models_of(&(copts){ .model = "all" }, models);
		if (o.csv)
			fputs(csv_header, stdout);
		else if (o.json)
			fputs("[\n", stdout);
		else {
			describe_sched(&v[0]);
			print_links(&o, o.n);
			printf("%-10s  %-7s %11s %13s %13s", "size", "model", "time", "algbw", "busbw");
			if (straggler_for(&o, o.n) >= 0)
				printf(" %11s %11s", "joins at", "total");
			printf("\n");
		}
		bool first = true;
		for (int z = 0; z < o.nsizes && rc == 0; z++)
			for (int m = 0; m < nm && rc == 0; m++) {
				cost_params q = params_for(&o, o.sizes[z], o.n);
				row w = { .algo = v[0].name, .kind = v[0].kind, .n = o.n, .bytes = o.sizes[z],
					  .model = models[m]->name, .speedup = NAN,
					  .straggler = q.straggler };
				link_error err;
				if (models[m]->predict(v[0].plan, &q, &w.r, &err)) {
					rc = input_error("%s", err.msg);
					break;
				}
				if (o.csv)
					csv_row(stdout, &w);
				else if (o.json) {
					json_row(stdout, &w, first);
					first = false;
				} else {
					char a[32], b[32], c[32], d[32], e[32], f[32];
					printf("%-10s  %-7s %11s %13s %13s", link_fmt_size(w.bytes, a, sizeof a),
					       w.model, link_fmt_time(w.r.time, b, sizeof b),
					       link_fmt_bw(w.r.algbw, c, sizeof c),
					       link_fmt_bw(w.r.busbw, d, sizeof d));
					if (q.straggler >= 0)
						printf(" %11s %11s", link_fmt_time(w.r.join, e, sizeof e),
						       link_fmt_time(w.r.total, f, sizeof f));
					printf("\n");
				}
			}
		if (o.json && rc == 0)
			fputs("\n]\n", stdout);
		if (!o.csv && !o.json && o.segments > 1 && rc == 0)
			printf("# (segments apply to the sim model; rounds run each round on the whole buffer)\n");
	}
	for (int i = 0; i < nv; i++)
		release(&v[i]);
	free(v);
	drv_free(p);
	free_opts(&o);
	return rc < 0 ? 0 : rc;
}

/* --- collc sim ----------------------------------------------------------------- */

static const char *const why_names[] = {
	[COST_WAIT_NONE] = "nothing (starts at 0)",
	[COST_WAIT_DATA] = "data",
	[COST_WAIT_SEND] = "send port",
	[COST_WAIT_RECV] = "receive port",
	[COST_WAIT_JOIN] = "the straggler joining",
};

/* "c3" or "c3..c6" or "c0,c2,c5 (3)": the chunks of a message. */
static char *fmt_chunks(const cost_plan *p, const cost_pmsg *m, char *buf, size_t len)
{
	int c0 = p->chunk[m->first], contiguous = 1;
	for (int e = 1; e < m->count; e++)
		if (p->chunk[m->first + e] != c0 + e)
			contiguous = 0;
	if (m->count == 1)
		snprintf(buf, len, "c%d", c0);
	else if (contiguous)
		snprintf(buf, len, "c%d..c%d", c0, c0 + m->count - 1);
	else
		snprintf(buf, len, "%d chunks", m->count);
	return buf;
}

static const char *phase_of(const cost_plan *p, int round)
{
	int ph = p->s->rounds[round].phase;
	return ph >= 0 && ph < p->s->nphases ? p->s->phases[ph] : "?";
}

static void describe_msg(const cost_plan *p, const cost_sim *sim, int i, double cb, char *buf,
			 size_t len)
{
	const cost_smsg *x = &sim->msgs[i];
	const cost_pmsg *m = &p->msgs[x->msg];
	char ch[48], by[32], t0[32], t1[32];
	snprintf(buf, len, "round %d (%s) seg %d: %d -> %d %s, %s, %s .. %s", m->round,
		 phase_of(p, m->round), x->seg, m->src, m->dst, fmt_chunks(p, m, ch, sizeof ch),
		 link_fmt_size(m->count * cb, by, sizeof by), link_fmt_time(x->start, t0, sizeof t0),
		 link_fmt_time(x->end, t1, sizeof t1));
}

static int cmp_by_start(const void *a, const void *b, void *ctx)
{
	const cost_sim *sim = ctx;
	double x = sim->msgs[*(const int *)a].start, y = sim->msgs[*(const int *)b].start;
	return (x > y) - (x < y);
}

static void print_trace(const cost_plan *p, const cost_sim *sim, double cb)
{
	int n = p->n;
	int *cnt = calloc((size_t)n + 1, sizeof *cnt), *idx = malloc(sizeof *idx * (2 * (size_t)sim->nmsgs + 1));
	int *pos = calloc((size_t)n + 1, sizeof *pos);
	for (int i = 0; i < sim->nmsgs; i++) {
		cnt[p->msgs[sim->msgs[i].msg].src + 1]++;
		cnt[p->msgs[sim->msgs[i].msg].dst + 1]++;
	}
	for (int r = 0; r < n; r++)
		cnt[r + 1] += cnt[r];
	memcpy(pos, cnt, sizeof *pos * (size_t)n);
	for (int i = 0; i < sim->nmsgs; i++) {
		idx[pos[p->msgs[sim->msgs[i].msg].src]++] = i;
		idx[pos[p->msgs[sim->msgs[i].msg].dst]++] = i;
	}
	printf("\ntimeline per rank (start .. end  what):\n");
	for (int r = 0; r < n; r++) {
		qsort_r(idx + cnt[r], (size_t)(cnt[r + 1] - cnt[r]), sizeof *idx, cmp_by_start,
			(void *)sim);
		char j[32];
		printf("rank %d (joins at %s):\n", r, link_fmt_time(sim->join[r], j, sizeof j));
		for (int k = cnt[r]; k < cnt[r + 1]; k++) {
			const cost_smsg *x = &sim->msgs[idx[k]];
			const cost_pmsg *m = &p->msgs[x->msg];
			char t0[32], t1[32], ch[48], by[32];
			bool send = m->src == r;
			printf("  %10s .. %-10s  %s %s %d  %s, %s, round %d (%s)", link_fmt_time(x->start, t0, sizeof t0),
			       link_fmt_time(x->end, t1, sizeof t1), send ? "send" : "recv",
			       send ? "to" : "from", send ? m->dst : m->src, fmt_chunks(p, m, ch, sizeof ch),
			       link_fmt_size(m->count * cb, by, sizeof by), m->round, phase_of(p, m->round));
			if (x->seg)
				printf(" seg %d", x->seg);
			printf("\n");
		}
	}
	free(cnt);
	free(idx);
	free(pos);
}

static int draw_timeline(const char *path, const algo *a, const cost_sim *sim, double cb,
			 const copts *o)
{
	const cost_plan *p = a->plan;
	int nb = 0;
	svg_bar *bars = malloc(sizeof *bars * (2 * (size_t)sim->nmsgs + (size_t)p->n + 1));
	bool *onpath = calloc((size_t)sim->nmsgs + 1, sizeof *onpath);
	char **tips = NULL;
	bool with_tips = sim->nmsgs <= 20000;
	if (with_tips)
		tips = calloc((size_t)sim->nmsgs + 1, sizeof *tips);
	for (int i = 0; i < sim->npath; i++)
		onpath[sim->path[i]] = true;
	for (int r = 0; r < p->n; r++)
		if (sim->join[r] > 0)
			bars[nb++] = (svg_bar){ .row = r, .t0 = 0, .t1 = sim->join[r], .style = -1,
						.tip = "not joined yet" };
	for (int i = 0; i < sim->nmsgs; i++) {
		const cost_pmsg *m = &p->msgs[sim->msgs[i].msg];
		if (with_tips) {
			char buf[256];
			describe_msg(p, sim, i, cb, buf, sizeof buf);
			tips[i] = strdup(buf);
		}
		int style = p->s->rounds[m->round].phase;
		bars[nb++] = (svg_bar){ .row = m->src, .t0 = sim->msgs[i].start, .t1 = sim->msgs[i].end,
					.style = style, .part = 1, .outline = onpath[i],
					.tip = with_tips ? tips[i] : NULL };
		bars[nb++] = (svg_bar){ .row = m->dst, .t0 = sim->msgs[i].start, .t1 = sim->msgs[i].end,
					.style = style, .part = 2, .outline = onpath[i],
					.tip = with_tips ? tips[i] : NULL };
	}
	char title[160], note[200], t[32], d[128], s[32];
	snprintf(title, sizeof title, "%s (%s), n=%d, %s: simulated timeline", a->name,
		 ir_kind_names[a->kind], p->n, link_fmt_size(o->sizes[0], s, sizeof s));
	snprintf(note, sizeof note, "%s; completion %s after the last rank joined", link_describe(&o->links, d, sizeof d),
		 link_fmt_time(sim->r.time, t, sizeof t));
	svg_timeline tl = { .title = title, .rowfmt = "rank %d", .nrows = p->n,
			    .tmax = sim->r.total, .styles = (const char *const *)p->s->phases,
			    .nstyles = p->s->nphases, .note = note };
	FILE *f;
	int rc = open_out(path, &f);
	if (rc == 0)
		rc = close_out(path, f, svg_timeline_draw(f, &tl, bars, nb));
	if (with_tips)
		for (int i = 0; i < sim->nmsgs; i++)
			free(tips[i]);
	free(tips);
	free(onpath);
	free(bars);
	return rc;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int cmd_sim(int argc, char **argv)
{
	copts o;
	drv_prog *p = NULL;
	algo *v = NULL;
	int nv = 0;
	int rc = setup(argc, argv, C_SIM, &o, &p, &v, &nv, true);
	if (rc == 0)
		rc = build(p, &o, &v[0], o.n, false);
	cost_sim *sim = NULL;
	if (rc == 0) {
		cost_params q = params_for(&o, o.sizes[0], o.n);
		link_error err;
		sim = cost_simulate(v[0].plan, &q, &err);
		if (!sim)
			rc = input_error("%s", err.msg);
	}
	if (rc == 0) {
		const cost_plan *pl = v[0].plan;
		cost_params q = params_for(&o, o.sizes[0], o.n);
		double cb = o.sizes[0] / pl->chunks / o.segments;
		char a[32], b[32], c[32], d[32], e[32];
		describe_sched(&v[0]);
		print_links(&o, o.n);
		printf("size %s: %d chunks of %s", link_fmt_size(o.sizes[0], a, sizeof a), pl->chunks,
		       link_fmt_size(o.sizes[0] / pl->chunks, b, sizeof b));
		if (o.segments > 1)
			printf(", %d segments", o.segments);
		printf("\n");
		if (q.straggler >= 0) {
			printf("straggler: rank %d joins at %s%s\n", q.straggler,
			       link_fmt_time(sim->r.join, a, sizeof a),
			       o.have_delay ? "" : " (when the others have done all they can without it)");
			if (pl->npre)
				printf("precondition: ends at %s\n", link_fmt_time(sim->r.pre, a, sizeof a));
		}
		cost_result rr;
		link_error err;
		cost_rounds(pl, &q, &rr, &err);
		printf("time %s  algbw %s  busbw %s  (completion %s from the start; rounds model %s)\n",
		       link_fmt_time(sim->r.time, a, sizeof a), link_fmt_bw(sim->r.algbw, b, sizeof b),
		       link_fmt_bw(sim->r.busbw, c, sizeof c), link_fmt_time(sim->r.total, d, sizeof d),
		       link_fmt_time(rr.time, e, sizeof e));

		printf("\n%6s %11s %11s %11s %11s\n", "rank", "joined", "busy", "idle", "done");
		for (int r = 0; r < pl->n; r++)
			printf("%6d %11s %11s %11s %11s\n", r, link_fmt_time(sim->join[r], a, sizeof a),
			       link_fmt_time(sim->busy[r], b, sizeof b), link_fmt_time(sim->idle[r], c, sizeof c),
			       link_fmt_time(sim->done[r], d, sizeof d));

		int nwhy[5] = { 0 };
		for (int i = 0; i < sim->npath; i++)
			nwhy[sim->msgs[sim->path[i]].why]++;
		printf("\ncritical path: %d messages (waited for data %d, send port %d, receive port %d, "
		       "straggler %d)\n", sim->npath, nwhy[COST_WAIT_DATA], nwhy[COST_WAIT_SEND],
		       nwhy[COST_WAIT_RECV], nwhy[COST_WAIT_JOIN]);
		printf("%6s %-20s %4s %13s %-12s %10s %11s %11s  %s\n", "round", "phase", "seg", "transfer",
		       "chunks", "bytes", "start", "end", "waited for");
		int limit = o.trace ? sim->npath : 64;
		for (int i = 0; i < sim->npath; i++) {
			if (sim->npath > limit && i == limit / 2) {
				printf("   ... %d more (--trace shows all)\n", sim->npath - limit);
				i = sim->npath - limit / 2;
			}
			const cost_smsg *x = &sim->msgs[sim->path[i]];
			const cost_pmsg *m = &pl->msgs[x->msg];
			char tr[32], ch[48];
			snprintf(tr, sizeof tr, "%d -> %d", m->src, m->dst);
			printf("%6d %-20s %4d %13s %-12s %10s %11s %11s  %s\n", m->round, phase_of(pl, m->round),
			       x->seg, tr, fmt_chunks(pl, m, ch, sizeof ch),
			       link_fmt_size(m->count * cb, a, sizeof a), link_fmt_time(x->start, b, sizeof b),
			       link_fmt_time(x->end, c, sizeof c), why_names[x->why]);
		}
		if (o.trace)
			print_trace(pl, sim, cb);
		if (o.svg)
			rc = draw_timeline(o.svg, &v[0], sim, cb, &o);
		if (o.repeat > 0 && rc == 0) {
			/* for `make bench`: plan + simulation, as a user waits for them */
			double t0 = now();
			for (int k = 0; k < o.repeat; k++) {
				cost_plan *pp = cost_plan_new(v[0].s, &err);
				cost_sim *ss = cost_simulate(pp, &q, &err);
				cost_sim_free(ss);
				cost_plan_free(pp);
			}
			double dt = (now() - t0) / o.repeat;
			printf("\nsimulation run time: %.3f ms (mean of %d, schedule preparation included)\n",
			       dt * 1e3, o.repeat);
		}
	}
	cost_sim_free(sim);
	for (int i = 0; i < nv; i++)
		release(&v[i]);
	free(v);
	drv_free(p);
	free_opts(&o);
	return rc < 0 ? 0 : rc;
}

/* --- collc compare --------------------------------------------------------------- */

/* The n of an --n-range: powers of 2 and the midpoints between them, or
 * every step-th n. */
static int n_list(const copts *o, int **out)
{
	int *v = malloc(sizeof *v * (size_t)(o->nhi - o->nlo + 2)), k = 0;
	for (int n = o->nlo; n <= o->nhi; n++) {
		bool take;
		if (o->nstep > 0)
			take = (n - o->nlo) % o->nstep == 0;
		else {
			int p = 1;
			while (p * 2 <= n)
				p *= 2;
			take = n == p || (p >= 2 && n == p + p / 2);
		}
		if (take)
			v[k++] = n;
	}
	*out = v;
	return k;
}

static int emit_rows(const copts *o, row *rows, int nrows, bool by_n)
{
	if (o->csv) {
		fputs(csv_header, stdout);
		for (int i = 0; i < nrows; i++)
			csv_row(stdout, &rows[i]);
		return 0;
	}
	if (o->json) {
		fputs("[\n", stdout);
		for (int i = 0; i < nrows; i++)
			json_row(stdout, &rows[i], i == 0);
		fputs(nrows ? "\n]\n" : "]\n", stdout);
		return 0;
	}
	int kind = -1;
	for (int i = 0; i < nrows; i++) {
		const row *w = &rows[i];
		if ((int)w->kind != kind) {
			kind = (int)w->kind;
			printf("# %s\n", ir_kind_names[kind]);
			printf("%12s  %-16s %-7s %14s %12s %12s %9s\n", by_n ? "n" : "size(B)", "algorithm",
			       "model", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "speedup");
		}
		char sp[16] = "-";
		if (isfinite(w->speedup))
			snprintf(sp, sizeof sp, "%.3f", w->speedup);
		if (by_n)
			printf("%12d", w->n);
		else
			printf("%12.0f", w->bytes);
		printf("  %-16s %-7s %14.2f %12.2f %12.2f %9s\n", w->algo, w->model, w->r.time * 1e6,
		       w->r.algbw / 1e9, w->r.busbw / 1e9, sp);
	}
	return 0;
}

static int plot_rows(const copts *o, const row *rows, int nrows, bool by_n, double bytes)
{
	/* one series per (algorithm, model), in first-appearance order */
	int ns = 0;
	svg_series *s = calloc((size_t)nrows + 1, sizeof *s);
	char **names = calloc((size_t)nrows + 1, sizeof *names);
	double *xs = malloc(sizeof *xs * ((size_t)nrows + 1)), *ys = malloc(sizeof *ys * ((size_t)nrows + 1));
	int *owner = malloc(sizeof *owner * ((size_t)nrows + 1));
	bool multi = strcmp(o->model, "all") == 0;
	for (int i = 0; i < nrows; i++) {
		int k;
		for (k = 0; k < ns; k++)
			if (strcmp(rows[owner[k]].algo, rows[i].algo) == 0 &&
			    strcmp(rows[owner[k]].model, rows[i].model) == 0)
				break;
		if (k == ns)
			owner[ns++] = i;
	}
	int off = 0;
	for (int k = 0; k < ns; k++) {
		const row *f = &rows[owner[k]];
		char buf[96];
		if (multi)
			snprintf(buf, sizeof buf, "%s (%s)", f->algo, f->model);
		else
			snprintf(buf, sizeof buf, "%s", f->algo);
		names[k] = strdup(buf);
		s[k].name = names[k];
		s[k].x = xs + off;
		s[k].y = ys + off;
		for (int i = 0; i < nrows; i++)
			if (strcmp(rows[i].algo, f->algo) == 0 && strcmp(rows[i].model, f->model) == 0) {
				xs[off] = by_n ? rows[i].n : rows[i].bytes;
				ys[off] = by_n ? rows[i].speedup : rows[i].r.algbw / 1e9;
				off++;
				s[k].n++;
			}
	}
	char title[200], d[128], sz[32];
	svg_plot pl = { .logx = 1, .yref = NAN };
	if (by_n) {
		snprintf(title, sizeof title, "speedup over %s at %s (%s)", o->baseline,
			 link_fmt_size(bytes, sz, sizeof sz), link_describe(&o->links, d, sizeof d));
		pl.xlabel = "ranks (n)";
		pl.ylabel = "speedup";
		pl.xfmt = fmt_int_tick;
		pl.yref = 1;
	} else {
		snprintf(title, sizeof title, "algbw by size, n=%d (%s)", o->n,
			 link_describe(&o->links, d, sizeof d));
		pl.xlabel = "buffer size";
		pl.ylabel = "algbw (GB/s)";
		pl.xfmt = fmt_size_tick;
	}
	pl.title = title;
	FILE *f;
	int rc = open_out(o->svg, &f);
	if (rc == 0)
		rc = close_out(o->svg, f, svg_line_plot(f, &pl, s, ns));
	for (int k = 0; k < ns; k++)
		free(names[k]);
	free(names);
	free(s);
	free(xs);
	free(ys);
	free(owner);
	return rc;
}

/* Rows for algorithms v (already built for n) at every size and model;
 * speedup against the baseline of the same collective. */
static int compare_at(const copts *o, algo *v, int nv, int n, const double *sizes, int nsizes,
		      row **rows, int *nrows, int *cap)
{
	const cost_model *models[4];
	int nm = models_of(o, models);
	for (int k = 0; k < IR_NKINDS; k++) {
		int base = -1;
		for (int i = 0; i < nv; i++)
			if ((int)v[i].kind == k && v[i].plan && strcmp(v[i].name, o->baseline) == 0)
				base = i;
		for (int z = 0; z < nsizes; z++)
			for (int m = 0; m < nm; m++) {
				cost_params q = params_for(o, sizes[z], n);
				link_error err;
				cost_result rb;
				bool have_base = base >= 0 &&
						 models[m]->predict(v[base].plan, &q, &rb, &err) == 0;
				for (int i = 0; i < nv; i++) {
					if ((int)v[i].kind != k || !v[i].plan)
						continue;
					if (*nrows == *cap) {
						*cap = *cap ? 2 * *cap : 256;
						*rows = realloc(*rows, sizeof **rows * (size_t)*cap);
					}
					row *w = &(*rows)[(*nrows)++];
					*w = (row){ .algo = v[i].name, .kind = v[i].kind, .n = n, .bytes = sizes[z],
						    .model = models[m]->name, .straggler = q.straggler };
					if (models[m]->predict(v[i].plan, &q, &w->r, &err))
						return input_error("%s: %s", v[i].name, err.msg);
					w->speedup = have_base && w->r.time > 0 ? rb.time / w->r.time : NAN;
				}
			}
	}
	return 0;
}

int cmd_compare(int argc, char **argv)
{
	copts o;
	drv_prog *p = NULL;
	algo *v = NULL;
	int nv = 0, nrows = 0, cap = 0;
	row *rows = NULL;
	int rc = setup(argc, argv, C_COMPARE, &o, &p, &v, &nv, false);
	if (rc == 0 && !o.have_nrange) {
		for (int i = 0; i < nv && rc == 0; i++) {
			int b = build(p, &o, &v[i], o.n, o.nalgos == 0);
			if (b == 3)
				fprintf(stderr, "collc: note: skipping %s: n=%d unsupported (%s)\n", v[i].name,
					o.n, v[i].why);
			else
				rc = b;
		}
		if (rc == 0)
			rc = compare_at(&o, v, nv, o.n, o.sizes, o.nsizes, &rows, &nrows, &cap);
		if (rc == 0) {
			if (!o.csv && !o.json) {
				printf("# collc compare: n=%d, model %s, baseline %s\n", o.n, o.model, o.baseline);
				print_links(&o, o.n);
			}
			emit_rows(&o, rows, nrows, false);
			if (o.svg)
				rc = plot_rows(&o, rows, nrows, false, 0);
		}
	} else if (rc == 0) {
		int *ns, nn = n_list(&o, &ns);
		for (int t = 0; t < nn && rc == 0; t++) {
			for (int i = 0; i < nv && rc == 0; i++) {
				int b = build(p, &o, &v[i], ns[t], true);
				if (b == 3)
					fprintf(stderr, "collc: note: skipping %s at n=%d (%s)\n", v[i].name, ns[t],
						v[i].why);
				else
					rc = b;
			}
			if (rc == 0)
				rc = compare_at(&o, v, nv, ns[t], o.sizes, 1, &rows, &nrows, &cap);
		}
		free(ns);
		if (rc == 0) {
			/* group by collective, then algorithm, then n */
			row *sorted = malloc(sizeof *sorted * ((size_t)nrows + 1));
			int k = 0;
			for (int kind = 0; kind < IR_NKINDS; kind++)
				for (int i = 0; i < nv; i++)
					for (int j = 0; j < nrows; j++)
						if ((int)rows[j].kind == kind && rows[j].algo == v[i].name &&
						    v[i].kind == (ir_kind)kind)
							sorted[k++] = rows[j];
			free(rows);
			rows = sorted;
			nrows = k;
			if (!o.csv && !o.json) {
				char sz[32];
				printf("# collc compare: n=%d..%d, %s, model %s, baseline %s\n", o.nlo, o.nhi,
				       link_fmt_size(o.sizes[0], sz, sizeof sz), o.model, o.baseline);
				print_links(&o, o.nhi);
			}
			emit_rows(&o, rows, nrows, true);
			if (o.svg)
				rc = plot_rows(&o, rows, nrows, true, o.sizes[0]);
		}
	}
	free(rows);
	for (int i = 0; i < nv; i++)
		release(&v[i]);
	free(v);
	drv_free(p);
	free_opts(&o);
	return rc < 0 ? 0 : rc;
}

/* --- collc tune ------------------------------------------------------------------ */

int cmd_tune(int argc, char **argv)
{
	copts o;
	drv_prog *p = NULL;
	algo *v = NULL;
	int nv = 0;
	int rc = setup(argc, argv, C_TUNE, &o, &p, &v, &nv, false);
	for (int i = 0; i < nv && rc == 0; i++) {
		int b = build(p, &o, &v[i], o.n, o.nalgos == 0);
		if (b == 3)
			fprintf(stderr, "collc: note: skipping %s: n=%d unsupported (%s)\n", v[i].name, o.n,
				v[i].why);
		else
			rc = b;
	}
	if (rc) {
		for (int i = 0; i < nv; i++)
			release(&v[i]);
		free(v);
		drv_free(p);
		free_opts(&o);
		return rc < 0 ? 0 : rc;
	}
	const cost_model *models[4];
	int nm = models_of(&o, models);
	bool first = true;
	if (o.csv)
		fputs("section,collective,model,from_bytes,to_bytes,algorithm,baseline,bytes,"
		      "delay_s,rule_s,t_rs_s,t_base_s,t_algo_s\n", stdout);
	else if (o.json)
		fputs("{\"ranges\": [\n", stdout);
	else {
		printf("# collc tune: n=%d\n", o.n);
		print_links(&o, o.n);
	}

	/* 1. the fastest algorithm per size range */
	for (int m = 0; m < nm && rc == 0; m++)
		for (int k = 0; k < IR_NKINDS && rc == 0; k++) {
			int prev = -1, nk = 0;
			double from = 0;
			for (int i = 0; i < nv; i++)
				nk += (int)v[i].kind == k && v[i].plan;
			if (!nk)
				continue;
			if (!o.csv && !o.json)
				printf("\n# %s, model %s: fastest algorithm by size\n%12s %12s  %s\n",
				       ir_kind_names[k], models[m]->name, "from(B)", "to(B)", "algorithm");
			for (int z = 0; z <= o.nsizes && rc == 0; z++) {
				int best = -1;
				double bt = INFINITY;
				for (int i = 0; z < o.nsizes && i < nv; i++) {
					if ((int)v[i].kind != k || !v[i].plan)
						continue;
					cost_params q = params_for(&o, o.sizes[z], o.n);
					cost_result r;
					link_error err;
					if (models[m]->predict(v[i].plan, &q, &r, &err)) {
						rc = input_error("%s: %s", v[i].name, err.msg);
						break;
					}
					if (r.time < bt) {
						bt = r.time;
						best = i;
					}
				}
				if (z > 0 && (z == o.nsizes || best != prev)) {
					double to = o.sizes[z - 1];
					if (o.csv)
						printf("range,%s,%s,%.0f,%.0f,%s,,,,,,,\n", ir_kind_names[k],
						       models[m]->name, from, to, v[prev].name);
					else if (o.json) {
						printf("%s  {\"collective\": \"%s\", \"model\": \"%s\", \"from_bytes\": %.0f, "
						       "\"to_bytes\": %.0f, \"algorithm\": ", first ? "" : ",\n",
						       ir_kind_names[k], models[m]->name, from, to);
						json_str(stdout, v[prev].name);
						printf("}");
						first = false;
					} else {
						char a[32], b[32];
						printf("%12.0f %12.0f  %-16s (%s .. %s)\n", from, to, v[prev].name,
						       link_fmt_size(from, a, sizeof a), link_fmt_size(to, b, sizeof b));
					}
				}
				if (z < o.nsizes && best != prev) {
					prev = best;
					from = o.sizes[z];
				}
			}
		}

	/* 2. critical straggler delays of the straggler-aware algorithms */
	if (o.json)
		fputs("\n], \"critical_delays\": [\n", stdout);
	first = true;
	cost_params q0 = params_for(&o, 1, o.n);
	if (q0.straggler < 0)
		q0.straggler = o.n - 1;
	for (int m = 0; m < nm && rc == 0; m++)
		for (int i = 0; i < nv && rc == 0; i++) {
			if (!v[i].plan || !v[i].plan->npre)
				continue;
			if (!o.csv && !o.json)
				printf("\n# %s, model %s: critical straggler delay (rank %d) above which it "
				       "beats each algorithm\n%12s  %-16s %12s %12s %12s %12s %12s\n", v[i].name,
				       models[m]->name, q0.straggler, "size(B)", "vs", "delay(us)", "rule(us)",
				       "T_RS(us)", "T_B(us)", "T_algo(us)");
			for (int z = 0; z < o.nsizes && rc == 0; z++)
				for (int j = 0; j < nv && rc == 0; j++) {
					if (j == i || !v[j].plan || v[j].kind != v[i].kind)
						continue;
					cost_params q = q0;
					q.bytes = o.sizes[z];
					q.delay = COST_MASKED;
					cost_result ra, rb;
					link_error err;
					double d = NAN;
					int found = -1;
					if (models[m]->predict(v[i].plan, &q, &ra, &err) == 0 &&
					    models[m]->predict(v[j].plan, &q, &rb, &err) == 0)
						found = cost_critical_delay(models[m], v[i].plan, v[j].plan, &q, &d, &err);
					if (found < 0) {
						rc = input_error("%s vs %s: %s", v[i].name, v[j].name, err.msg);
						break;
					}
					if (found == 1)
						d = INFINITY;
					double rule = cost_critical_delay_rule(ra.pre, rb.time, ra.time);
					if (o.csv) {
						printf("delay,%s,%s,,,%s,%s,%.0f,", ir_kind_names[v[i].kind],
						       models[m]->name, v[i].name, v[j].name, o.sizes[z]);
						if (isfinite(d))
							printf("%.17g", d);
						printf(",");
						if (isfinite(rule))
							printf("%.17g", rule);
						printf(",%.17g,%.17g,%.17g\n", ra.pre, rb.time, ra.time);
					} else if (o.json) {
						printf("%s  {\"collective\": \"%s\", \"model\": \"%s\", \"algorithm\": ",
						       first ? "" : ",\n", ir_kind_names[v[i].kind], models[m]->name);
						json_str(stdout, v[i].name);
						printf(", \"baseline\": ");
						json_str(stdout, v[j].name);
						printf(", \"bytes\": %.0f, \"straggler\": %d, \"delay_s\": ", o.sizes[z],
						       q.straggler);
						json_num(stdout, d);
						printf(", \"rule_s\": ");
						json_num(stdout, rule);
						printf(", \"t_rs_s\": ");
						json_num(stdout, ra.pre);
						printf(", \"t_base_s\": ");
						json_num(stdout, rb.time);
						printf(", \"t_algo_s\": ");
						json_num(stdout, ra.time);
						printf("}");
						first = false;
					} else {
						char ds[24] = "never", rs[24] = "never";
						if (isfinite(d))
							snprintf(ds, sizeof ds, "%.3f", d * 1e6);
						if (isfinite(rule))
							snprintf(rs, sizeof rs, "%.3f", rule * 1e6);
						printf("%12.0f  %-16s %12s %12s %12.3f %12.3f %12.3f\n", o.sizes[z],
						       v[j].name, ds, rs, ra.pre * 1e6, rb.time * 1e6, ra.time * 1e6);
					}
				}
		}
	if (o.json && rc == 0)
		fputs("\n]}\n", stdout);
	for (int i = 0; i < nv; i++)
		release(&v[i]);
	free(v);
	drv_free(p);
	free_opts(&o);
	return rc < 0 ? 0 : rc;
}
