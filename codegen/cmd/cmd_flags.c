/*
 * cmd_flags.c - the command line of every collc subcommand: one flag
 * table each, which both parses argv and writes the subcommand's --help.
 *
 * Pipeline position: the first step of each subcommand (cmd_*.c): argv ->
 * cmd_opts.  A flag is a row (its name, its value's name, its help, how
 * its value is read and where it goes); a row is defined once and every
 * subcommand that takes the flag lists it in its table, so a subcommand
 * accepts, and its --help lists, exactly its table.  The usage line is
 * generated from the table: required flags bare, optional ones [in
 * brackets], repeatable ones followed by "...".  Values are read with
 * linkmodel.h's units.  After the flags, the combination is checked and
 * completed: for the cost subcommands the link model (uniform or a
 * --links matrix, with the rank bandwidth default), the rank count, the
 * list of sizes (-s, a -b/-e sweep, or the command's default) and the
 * straggler; for check and show the rank counts; for build the output.
 * Also the options every subcommand takes (--stats, --max-errors,
 * --max-memory: collc.c takes them out first), collc's own usage, and the
 * two error printers the layer shares.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_flags.h"
#include "xalloc.h"

int cmd_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vfile_error(diag_tool, fmt, ap);
	va_end(ap);
	return 2;
}

int cmd_input_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vfile_error(diag_tool, fmt, ap);
	va_end(ap);
	return 1;
}

int cmd_link_error(const link_error *e)
{
	if (e->loc_len > 0) {
		/* about a file: "path:line: error: text", as diagnostics in
		 * sources are (DESIGN: file:line for link files) */
		char loc[512];
		snprintf(loc, sizeof loc, "%.*s", e->loc_len, e->msg);
		diag_file_error(loc, "%s", link_error_text(e));
		return 1;
	}
	return cmd_input_error("%s", e->msg);
}

/* --- values ------------------------------------------------------------------ */

/* Every integer flag's value: all of v an integer (units_parse_int: no
 * blank, fraction, unit or trailing text) in lo..hi, into *out; else
 * "FLAG needs an integer in LO..HI, found 'V'" and 2.  A number beyond
 * the type is out of the range too, and said the same way. */
static int parse_integer(const char *flag, const char *v, long long lo, long long hi, long long *out)
{
	long long x = 0;
	if (units_parse_int(v, lo, hi, &x))
		return cmd_usage_error("%s needs an integer in %lld..%lld, found '%s'", flag, lo, hi, v);
	*out = x;
	return 0;
}

static int parse_int(const char *flag, const char *v, long lo, long hi, int *out)
{
	long long x = 0;
	if (parse_integer(flag, v, lo, hi, &x))
		return 2;
	*out = (int)x;
	return 0;
}

/* A plain decimal number, all of v, into *out; -1 otherwise.  The link
 * file's numbers (link_parse_number: strtod alone would also take "inf",
 * "nan" and hex), without the blanks a file may put around them: a flag's
 * value is one argument, and a blank in it is a quoting mistake. */
static int parse_real(const char *v, double *out)
{
	link_error err;
	return v[strcspn(v, " \t\n\v\f\r")] || link_parse_number(v, out, &err) ? -1 : 0;
}

/* A size, time or bandwidth flag's value (units.h): a blank before or
 * after it, which the units reader skips as a file's layout, is refused
 * here for the same reason as in parse_real (a blank between the number
 * and its unit, "1 GiB", is still the unit's spelling).  0, or 2 after
 * "FLAG: bad value 'V': ...". */
static int check_blanks(const char *flag, const char *v)
{
	size_t len = strlen(v);
	if (len && (isspace((unsigned char)v[0]) || isspace((unsigned char)v[len - 1])))
		return cmd_usage_error("%s: bad value '%s': a blank before or after it", flag, v);
	return 0;
}

/* The values a row's own function reads: 0, or the exit status after a
 * message. */

static int set_algos(cmd_opts *o, const char *list)
{
	const char *p = list;
	do {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len == 0)
			return cmd_usage_error("-a: empty algorithm name in '%s'", list);
		char **na = realloc(o->algos, sizeof *na * (size_t)(o->nalgos + 1));
		if (!na)
			return cmd_usage_error("out of memory");
		o->algos = na;
		o->algos[o->nalgos++] = strndup(p, len);
		p = c ? c + 1 : NULL;
	} while (p);
	return 0;
}

static int set_define(cmd_opts *o, const char *v)
{
	if (o->ndefs == 32)
		return cmd_usage_error("too many -D");
	if (drv_parse_define(v, &o->defs[o->ndefs]))
		return 2;
	o->ndefs++;
	return 0;
}

static int set_size(cmd_opts *o, const char *v)
{
	link_error err;
	if (o->ns == 64)
		return cmd_usage_error("too many -s");
	if (check_blanks("-s", v))
		return 2;
	if (link_parse_size(v, &o->s_size[o->ns], &err))
		return cmd_usage_error("-s: %s", err.msg);
	o->ns++;
	return 0;
}

static int set_factor(cmd_opts *o, const char *v)
{
	if (parse_real(v, &o->f) || !(o->f > 1) || o->f > 1e6)
		return cmd_usage_error("-f needs a factor in (1, 1000000], found '%s'", v);
	return 0;
}

static int set_rank_bw(cmd_opts *o, const char *v)
{
	link_error err;
	if (strcmp(v, "none") == 0)
		o->rank_bw = 0;
	else if (check_blanks("--rank-bw", v))
		return 2;
	else if (link_parse_bw(v, &o->rank_bw, &err))
		return cmd_usage_error("--rank-bw: %s (or 'none')", err.msg);
	return 0;
}

/* the host's rates (linkmodel.h, "One host"): a bandwidth, or none */
static int set_host_bw(const char *flag, double *out, const char *v)
{
	link_error err;
	if (strcmp(v, "none") == 0)
		*out = 0;
	else if (check_blanks(flag, v))
		return 2;
	else if (link_parse_bw(v, out, &err))
		return cmd_usage_error("%s: %s (or 'none')", flag, err.msg);
	else if (link_check_bw("bandwidth", *out, &err))
		return cmd_usage_error("%s '%s': %s", flag, v, err.msg);
	return 0;
}

static int set_mem_bw(cmd_opts *o, const char *v)
{
	return set_host_bw("--mem-bw", &o->mem_bw, v);
}

static int set_reduce_bw(cmd_opts *o, const char *v)
{
	return set_host_bw("--reduce-bw", &o->reduce_bw, v);
}

/* a list, or @FILE holding one (what collc reorder --json or collprobe
 * leave lying around) */
static int set_perm(cmd_opts *o, const char *v)
{
	link_error err;
	int k;
	free(o->perm);
	o->perm = NULL;
	if (v[0] == '@') {
		FILE *pf = fopen(v + 1, "r");
		char buf[1 << 16];
		size_t got = pf ? fread(buf, 1, sizeof buf - 1, pf) : 0;
		if (!pf)
			return cmd_input_error("--perm: cannot open '%s'", v + 1);
		fclose(pf);
		buf[got] = 0;
		if (reorder_parse_perm(buf, 0, &o->perm, &k, &err))
			return cmd_input_error("--perm %s: %s", v, err.msg);
	} else if (reorder_parse_perm(v, 0, &o->perm, &k, &err)) {
		return cmd_usage_error("--perm: %s", err.msg);
	}
	o->nperm = k;
	return 0;
}

/* the one unsigned flag: parse_integer's rules (digits, nothing else)
 * for an unsigned long long, which strtoull alone would wrap from "-1" */
static int set_seed(cmd_opts *o, const char *v)
{
	const char *p = v + (*v == '+');
	errno = 0;
	if (!*p || p[strspn(p, "0123456789")] || (o->seed = strtoull(p, NULL, 10), errno == ERANGE))
		return cmd_usage_error("--seed needs an integer in 0..%llu, found '%s'", ULLONG_MAX, v);
	return 0;
}

/* a search limit of 0 would be none at all, not "no limit": it was read
 * as the default, 10 s, without a word */
static int set_time_limit(cmd_opts *o, const char *v)
{
	link_error err;
	if (check_blanks("--time-limit", v))
		return 2;
	if (link_parse_time(v, &o->time_limit, &err))
		return cmd_usage_error("--time-limit: %s", err.msg);
	if (!(o->time_limit > 0))
		return cmd_usage_error("--time-limit: bad time '%s': must be positive", v);
	return 0;
}

static int set_moves(cmd_opts *o, const char *v)
{
	long long m = 0;
	if (parse_integer("--moves", v, 1, LONG_MAX, &m))
		return 2;
	o->moves = (long)m;
	return 0;
}

static int set_effort(cmd_opts *o, const char *v)
{
	if (parse_real(v, &o->effort) || !(o->effort > 0 && o->effort <= 1000))
		return cmd_usage_error("--effort needs a number in (0, 1000], found '%s'", v);
	return 0;
}

static int set_straggler(cmd_opts *o, const char *v)
{
	if (strcmp(v, "last") == 0)
		o->straggler = -2;
	else if (parse_int("--straggler", v, 0, 65535, &o->straggler))
		return 2;
	return 0;
}

static int set_round_order(cmd_opts *o, const char *v)
{
	if (strcmp(v, "on") && strcmp(v, "off"))
		return cmd_usage_error("--round-order must be on or off, found '%s'", v);
	o->round_order = strcmp(v, "on") == 0;
	return 0;
}

static int set_sharing(cmd_opts *o, const char *v)
{
	o->sharing_rtt = 0;
	if (strcmp(v, "maxmin") == 0)
		o->sharing = 0;
	else if (strcmp(v, "tcp") == 0)
		o->sharing = COST_TCP_ALPHA, o->sharing_rtt = 1;
	else if (!(strncmp(v, "alpha=", 6) == 0 && parse_real(v + 6, &o->sharing) == 0 && o->sharing > 0 &&
		   o->sharing <= 8))
		return cmd_usage_error("--sharing must be maxmin, tcp or alpha=K (0 < K <= 8), found '%s'", v);
	return 0;
}

static int set_jitter(cmd_opts *o, const char *v)
{
	if (parse_real(v, &o->jitter) || !(o->jitter >= 0 && o->jitter <= COST_JITTER_MAX))
		return cmd_usage_error("--jitter needs a number in 0..%g, found '%s'", COST_JITTER_MAX, v);
	return 0;
}

static int set_model(cmd_opts *o, const char *v)
{
	if (strcmp(v, "all") && !cost_model_find(v))
		return cmd_usage_error("--model must be sim, rounds or all, found '%s'", v);
	o->model = v;
	return 0;
}

static int set_max_steps(cmd_opts *o, const char *v)
{
	(void)o;
	long long m = 0;
	if (parse_integer("--max-steps", v, 1, LLONG_MAX, &m))
		return 2;
	drv_max_steps = m;
	return 0;
}

/* "A..B", or with step also "A..B:K", with 1 <= A <= B <= 65536 into
 * o's nlo, nhi and nstep (0: none given): 0, or -1. */
static int parse_n_range(const char *v, bool step, cmd_opts *o)
{
	long long lo, hi, k = 0;
	const char *end = units_read_int(v, &lo);
	if (!end || strncmp(end, "..", 2) != 0 || !(end = units_read_int(end + 2, &hi)))
		return -1;
	if (step && *end == ':' && (!(end = units_read_int(end + 1, &k)) || k < 1 || k > 65536))
		return -1;
	if (*end || lo < 1 || hi < lo || hi > 65536)
		return -1;
	o->nlo = (int)lo;
	o->nhi = (int)hi;
	o->nstep = (int)k;
	return 0;
}

/* compare's: every K-th n, or (no K) powers of 2 and their midpoints */
static int set_n_sweep(cmd_opts *o, const char *v)
{
	if (parse_n_range(v, true, o))
		return cmd_usage_error("--n-range needs A..B or A..B:K with 1 <= A <= B <= 65536 and "
				       "1 <= K <= 65536, found '%s'", v);
	return 0;
}

/* check's and show's n: nlo..nhi, the later of -n and --n-range winning */
static int set_n_one(cmd_opts *o, const char *v)
{
	if (parse_int("-n", v, 1, 65536, &o->nlo))
		return 2;
	o->n = o->nhi = o->nlo;
	return 0;
}

static int set_n_range(cmd_opts *o, const char *v)
{
	if (parse_n_range(v, false, o))
		return cmd_usage_error("--n-range needs A..B with 1 <= A <= B <= 65536, found '%s'", v);
	return 0;
}

static int set_format(cmd_opts *o, const char *v)
{
	if (strcmp(v, "table") && strcmp(v, "json") && strcmp(v, "dot"))
		return cmd_usage_error("--format must be table, json or dot, found '%s'", v);
	o->format = v;
	return 0;
}

static int set_kind(cmd_opts *o, const char *v)
{
	if ((o->kind = ir_kind_from_name(v)) >= 0)
		return 0;
	diag_suggest near = diag_suggest_start(v);
	for (int k = 0; k < IR_NKINDS; k++)
		diag_suggest_add(&near, ir_kind_names[k]);
	if (near.best)
		return cmd_usage_error("-t needs a collective, found '%s' (did you mean '%s'?)", v, near.best);
	return cmd_usage_error("-t needs a collective (allreduce, reduce_scatter, allgather, broadcast, reduce, "
			       "alltoall), found '%s'", v);
}

/* the options of every subcommand: v may be NULL (missing) */
static int set_max_errors(cmd_opts *o, const char *v)
{
	(void)o;
	long long m = 0;
	if (!v)
		return cmd_usage_error("--max-errors needs a value");
	if (parse_integer("--max-errors", v, 0, 1000000, &m))
		return 2;
	diag_max_errors = (int)m;
	return 0;
}

static int set_max_memory(cmd_opts *o, const char *v)
{
	(void)o;
	double b;
	link_error err;
	if (v && check_blanks("--max-memory", v))
		return 2;
	if (!v || link_parse_size(v, &b, &err) != 0)
		return cmd_usage_error("--max-memory: %s", v ? err.msg : "needs a size such as 4GiB");
	mem_limit = (size_t)b;
	return 0;
}

/* --- flags ------------------------------------------------------------------- */

/* How a row's value is read: into the cmd_opts field at `off` as a
 * switch (true when given), an integer in lo..hi, a size, a time, a
 * bandwidth or the string itself; or by the row's own function. */
enum { FV_SWITCH, FV_INT, FV_SIZE, FV_TIME, FV_BW, FV_STR, FV_FN };

typedef struct cmd_flag {
	const char *name;      /* "-n", "--links" */
	const char *arg;       /* the value's name in the help ("N"); NULL: a switch */
	unsigned char kind;    /* FV_* */
	bool req;              /* required: bare in the usage line, else [in brackets] */
	bool many;             /* repeatable: "..." in the usage line */
	size_t off;            /* the field FV_SWITCH..FV_STR set */
	size_t have;           /* a bool field set once the value is read (0: none;
				  offset 0 is cmd_opts.cmd, never one) */
	long lo, hi;           /* FV_INT's range */
	int (*fn)(cmd_opts *o, const char *v);   /* FV_FN */
	const char *help;      /* wrapped to fit 80 columns */
} cmd_flag;

#define OPT(f) offsetof(cmd_opts, f)
#define SWITCH(f) .kind = FV_SWITCH, .off = OPT(f)
#define INT(f, l, h) .kind = FV_INT, .off = OPT(f), .lo = (l), .hi = (h)
#define VALUE(k, f) .kind = (k), .off = OPT(f)
#define FN(f) .kind = FV_FN, .fn = (f)
#define HAVE(f) .have = OPT(f)

/* Each row once; a flag whose help (or requiredness) differs between
 * subcommands has a row per variant, read the same way. */
static const cmd_flag
	/* which algorithms */
	f_algos = { "-a", "ALGO[,ALGO...]", FN(set_algos),
		    .help = "algorithm(s) by name (default: every algorithm in FILE...)" },
	f_algo1 = { "-a", "ALGO", FN(set_algos), .help = "the algorithm (needed when FILE... holds several)" },
	f_algo_check = { "-a", "ALGO", VALUE(FV_STR, algo),
			 .help = "only ALGO (default: every algorithm declared in FILE...)" },
	f_algo_show = { "-a", "ALGO", VALUE(FV_STR, algo),
			.help = "the algorithm (default: the first in FILE..., of collective -t)" },
	f_kind = { "-t", "COLL", FN(set_kind),
		   .help = "the first algorithm of this collective (allreduce, reduce_scatter, "
			   "allgather, broadcast, reduce, alltoall)" },
	f_define = { "-D", "name=value", FN(set_define), .many = true, .help = "set a `param` of the algorithms" },
	f_max_steps = { "--max-steps", "N", FN(set_max_steps), .help = "evaluation step limit (default 200000000)" },
	/* rank counts */
	f_n = { "-n", "N", INT(n, 1, 65536), HAVE(have_n),
		.help = "rank count (default: the rank count of --links)" },
	f_n_sweep = { "--n-range", "A..B[:K]", FN(set_n_sweep), HAVE(have_nrange),
		      .help = "instead, speedup over the baseline for n in A..B (powers of 2 "
			      "and midpoints; A..B:K for every K-th n) at one size (default "
			      "1GiB); --svg plots it against n" },
	f_n_check = { "-n", "N", FN(set_n_one), HAVE(have_n), .help = "one rank count (default: each of 2..16)" },
	f_n_range = { "--n-range", "A..B", FN(set_n_range), HAVE(have_n), .help = "every rank count in A..B" },
	f_n_show = { "-n", "N", FN(set_n_one), HAVE(have_n), .req = true,
		     .help = "rank count (not with --perm)" },
	/* sizes */
	f_size = { "-s", "SIZE", FN(set_size), .many = true, .help = "buffer size (repeatable; default 1GiB)" },
	f_size1 = { "-s", "SIZE", FN(set_size), .help = "buffer size (default 1GiB)" },
	f_sizes = { "-s", "SIZE", FN(set_size), .many = true,
		    .help = "buffer size (repeatable), instead of the sweep 1KiB .. 4GiB" },
	f_begin = { "-b", "MIN", VALUE(FV_SIZE, b), HAVE(have_b),
		    .help = "size sweep as nccl-tests: MIN, MIN*F, ... up to MAX" },
	f_end = { "-e", "MAX", VALUE(FV_SIZE, e), HAVE(have_e), .help = "the sweep's largest size" },
	f_factor = { "-f", "F", FN(set_factor), HAVE(have_f), .help = "sweep factor (default 2)" },
	f_inc = { "-i", "STEP", VALUE(FV_SIZE, inc), HAVE(have_i), .help = "additive sweep step, instead of -f" },
	/* links */
	f_alpha = { "--alpha", "T", VALUE(FV_TIME, alpha), HAVE(have_alpha), .help = "link latency (default 3us)" },
	f_bw = { "--bw", "BW", VALUE(FV_BW, bw), HAVE(have_bw), .help = "link bandwidth (default 450GB/s)" },
	f_links = { "--links", "MATRIX", VALUE(FV_STR, links_path),
		    .help = "per-pair latency and bandwidth (TSV: src dst alpha bandwidth), "
			    "and shared segments (group, uplink, segment, rank-bw lines)" },
	f_rank_bw = { "--rank-bw", "BW|none", FN(set_rank_bw), HAVE(have_rank_bw),
		      .help = "a rank's injection bandwidth, shared by the messages it sends "
			      "(or receives) in one round; default: --bw for uniform links "
			      "(one connection per rank), none for --links (independent)" },
	f_mem_bw = { "--mem-bw", "BW|none", FN(set_mem_bw), HAVE(have_mem_bw),
		     .help = "one host: bytes/s its memory copies, shared by every rank's copies "
			     "into and out of staging slots in a round (over --links' mem-bw)" },
	f_reduce_bw = { "--reduce-bw", "BW|none", FN(set_reduce_bw), HAVE(have_reduce_bw),
			.help = "one host: bytes/s one core reduces (over --links' reduce-bw)" },
	f_cores = { "--cores", "N", INT(cores, 1, LINK_MAX_CORES), HAVE(have_cores),
		    .help = "one host: cores its ranks share; more ranks time-share them "
			    "(over --links' cores)" },
	f_perm = { "--perm", "LIST|@FILE", FN(set_perm),
		   .help = "run the schedule in this rank order (schedule rank -> physical "
			   "rank): a list, or @FILE holding one" },
	/* the simulation */
	f_straggler = { "--straggler", "R", FN(set_straggler),
			.help = "rank R joins late ('last': rank n-1); with no --delay, late "
				"enough to hide all the others can do without it" },
	f_delay = { "--delay", "D", VALUE(FV_TIME, delay), HAVE(have_delay),
		    .help = "the straggler's delay (implies --straggler last)" },
	f_segments = { "--segments", "S", INT(segments, 1, 1 << 20),
		       .help = "pipeline the buffer in S segments (sim model)" },
	f_seg_bytes = { "--seg-bytes", "X", VALUE(FV_SIZE, seg_bytes),
			.help = "as many segments as cut each chunk into pieces of at most X, "
				"as the runtime does (its TCP messages: 1MiB), per algorithm" },
	f_round_order = { "--round-order", "on|off", FN(set_round_order),
			  .help = "the sim runs as libcollrt does on TCP: a rank's sends "
				  "(receives) of a round wait for those of its earlier rounds "
				  "(default: on with --links, a network; off otherwise)" },
	f_sharing = { "--sharing", "maxmin|tcp|alpha=K", FN(set_sharing),
		      .help = "how flows share a segment in the sim: max-min, "
			      "TCP's (alpha-fair, alpha 2, each flow weighted by 1/RTT^2, its "
			      "RTT the loaded segments its data and acks pass; default with "
			      "--links), or alpha-fair with alpha K and no weights" },
	f_jitter = { "--jitter", "SIGMA", FN(set_jitter),
		     .help = "the sim's time is the mean over draws of TCP's luck: each "
			     "connection's weight in a round times e^(SIGMA z), z normal "
			     "(tcp or alpha=K sharing, shared segments; codegen/README.md, "
			     "\"Sharing and jitter\")" },
	f_jitter_samples = { "--jitter-samples", "K", INT(jitter_samples, 1, 4096),
			     .help = "--jitter's draws (default 8)" },
	f_trace = { "--trace", NULL, SWITCH(trace), .help = "print each rank's timeline" },
	f_svg_sim = { "--svg", "FILE", VALUE(FV_STR, svg), .help = "draw the timeline (critical path outlined)" },
	f_repeat = { "--repeat", "K", INT(repeat, 1, 1000000),
		     .help = "run the simulation K times and print its mean run time" },
	/* tables */
	f_baseline = { "--baseline", "ALGO", VALUE(FV_STR, baseline), HAVE(baseline_given),
		       .help = "speedups over ALGO (default ring) of the same collective" },
	f_model = { "--model", "M", FN(set_model), .help = "sim (default), rounds, or all" },
	f_csv = { "--csv", NULL, SWITCH(csv), .help = "machine-readable rows, CSV (codegen/README.md, \"Machine-readable output\")" },
	f_json = { "--json", NULL, SWITCH(json), .help = "machine-readable rows, JSON (codegen/README.md, \"Machine-readable output\")" },
	f_svg_compare = { "--svg", "FILE", VALUE(FV_STR, svg),
			  .help = "plot algbw against size, one line per algorithm (with --n-range: "
				  "speedup against n)" },
	f_ranges_only = { "--ranges-only", NULL, SWITCH(ranges_only),
			  .help = "the size ranges alone, without the critical-delay search" },
	/* reorder */
	f_time_limit = { "--time-limit", "T", FN(set_time_limit),
			 .help = "stop searching after T (default 10s; a cut search is reported)" },
	f_seed = { "--seed", "K", FN(set_seed),
		   .help = "annealing's random seed (default 1): same seed, same answer" },
	f_moves = { "--moves", "M", FN(set_moves),
		    .help = "annealing moves per run (default 200 n^2, at least 20000; "
			    "8 runs within 4e6 / (messages per rank) moves)" },
	f_effort = { "--effort", "F", FN(set_effort),
		     .help = "that budget times F (default 1; reorder at init uses 0.25)" },
	f_exact_max = { "--exact-max", "N", INT(exact_max, -1, 16),
			.help = "branch and bound when n <= N (default 10; -1: never)" },
	f_perm_start = { "--perm", "LIST|@FILE", FN(set_perm),
			 .help = "start annealing from this order (schedule rank -> physical rank)" },
	f_sim = { "--sim", NULL, SWITCH(sim), .help = "also run the event-driven simulation where it is slow" },
	f_exhaustive = { "--exhaustive", NULL, SWITCH(exhaustive),
			 .help = "try every order instead (n <= 11): the reference for the search" },
	f_spread = { "--spread", "K", INT(spread, 1, 1000),
		     .help = "also K orders spread from the best to the highest predicted time, "
			     "the i-th about i/K of the way (to test a model against a network)" },
	f_json_reorder = { "--json", NULL, SWITCH(json), .help = "one JSON object (runtime/model/README.md, \"collc reorder\")" },
	/* show, build */
	f_format = { "--format", "table|json|dot", FN(set_format),
		     .help = "a rounds x ranks table (default), JSON (codegen/README.md, \"The "
			     "schedule as JSON\") or a Graphviz graph" },
	f_show_perm = { "--perm", NULL, SWITCH(show_perm),
			.help = "instead, the rank order the library of a cluster in FILE... uses" },
	f_cluster_show = { "--cluster", "NAME", VALUE(FV_STR, cluster),
			   .help = "with --perm: that cluster (default: the first)" },
	f_out = { "-o", "DIR", VALUE(FV_STR, out), .req = true, .help = "where the sources and libraries go" },
	f_cluster_build = { "--cluster", "NAME", VALUE(FV_STR, cluster),
			    .help = "the cluster to build (default: the first)" },
	f_verbose = { "-v", NULL, SWITCH(verbose), .help = "print each compiler command" },
	f_tuning = { "--tuning", "FILE", VALUE(FV_STR, tuning),
		     .help = "size tables measured by collbench --tune, for the collectives FILE tunes" },
	/* every subcommand's (collc.c takes them out first) */
	f_max_errors = { "--max-errors", "N", FN(set_max_errors), .help = "stop after N errors (default 20; 0: never)" },
	f_max_memory = { "--max-memory", "S", FN(set_max_memory),
			 .help = "memory budget of an evaluation (default 2GiB)" },
	f_stats = { "--stats", NULL, SWITCH(stats),
		    .help = "print wall time and peak memory to stderr at exit (benchmarks)" };

#define SWEEP &f_begin, &f_end, &f_factor, &f_inc
#define NET &f_alpha, &f_bw, &f_links, &f_rank_bw
#define LINKS NET, &f_mem_bw, &f_reduce_bw, &f_cores
#define SIMULATION &f_straggler, &f_delay, &f_segments, &f_seg_bytes, &f_round_order, &f_sharing, &f_jitter, \
	&f_jitter_samples

/* The subcommands' tables, in --help order. */
static const cmd_flag *const check_flags[] = { &f_algo_check, &f_n_check, &f_n_range, &f_define, &f_max_steps, NULL };
static const cmd_flag *const show_flags[] = {
	&f_algo_show, &f_kind, &f_n_show, &f_define, &f_format, &f_show_perm, &f_cluster_show, &f_max_steps, NULL
};
static const cmd_flag *const cost_flags[] = {
	&f_algos, &f_n, &f_define, &f_size, SWEEP, LINKS, &f_perm, SIMULATION, &f_csv, &f_json, &f_max_steps, NULL
};
static const cmd_flag *const sim_flags[] = {
	&f_algo1, &f_n, &f_define, &f_size1, LINKS, &f_perm, SIMULATION, &f_trace, &f_svg_sim, &f_repeat,
	&f_max_steps, NULL
};
static const cmd_flag *const compare_flags[] = {
	&f_algos, &f_n, &f_n_sweep, &f_define, &f_sizes, SWEEP, LINKS, SIMULATION, &f_baseline, &f_model,
	&f_csv, &f_json, &f_svg_compare, &f_max_steps, NULL
};
static const cmd_flag *const tune_flags[] = {
	&f_algos, &f_n, &f_define, &f_sizes, SWEEP, LINKS, SIMULATION, &f_baseline, &f_model, &f_ranges_only,
	&f_csv, &f_json, &f_max_steps, NULL
};
static const cmd_flag *const reorder_flags[] = {
	&f_algo1, &f_n, &f_define, &f_size1, NET, &f_time_limit, &f_seed, &f_moves, &f_effort, &f_exact_max,
	&f_perm_start, &f_sim, &f_exhaustive, &f_spread, &f_seg_bytes, &f_sharing, &f_jitter, &f_jitter_samples,
	&f_json_reorder, &f_max_steps, NULL
};
static const cmd_flag *const build_flags[] = { &f_out, &f_cluster_build, &f_verbose, &f_tuning, NULL };
static const cmd_flag *const common_flags[] = { &f_max_errors, &f_max_memory, &f_stats, NULL };

static const char units_help[] =
	"units: sizes B KB MB GB (x1000), KiB MiB GiB (x1024), K M G as nccl-tests\n"
	"(x1024); times ns us ms s; bandwidths B/s KB/s MB/s GB/s KiB/s MiB/s GiB/s\n"
	"Mbit/s Gbit/s.\n"
	"Times count from when the last rank joined (the straggler, if any).\n";

/* A subcommand: its function, its table and its help. */
typedef struct {
	const char *name;
	int which;                      /* CMD_* */
	int (*run)(int argc, char **argv);
	const cmd_flag *const *flags;
	const char *operands;           /* before the flags in the usage line */
	const char *summary;            /* its line in collc --help */
	const char *about;              /* its --help, after the usage line */
	const char *footer;             /* its --help, after the options (or NULL) */
} cmd_command;

static const cmd_command commands[] = {
	{ "check", CMD_CHECK, cmd_check, check_flags, "FILE...",
	  "evaluate and verify every algorithm (or ALGO) for each n (default 2..16)",
	  "Evaluate and verify every algorithm of FILE... (or ALGO) for each n, a line\n"
	  "per algorithm: how many n verified, failed, and were unsupported (a failed\n"
	  "`require`, with its reason).  Rail policies in the files are checked too.\n",
	  NULL },
	{ "show", CMD_SHOW, cmd_show, show_flags, "FILE...",
	  "print the verified schedule of one algorithm (or a cluster's rank order)",
	  "Print one verified schedule: by default the first algorithm of FILE... (of\n"
	  "collective COLL with -t); with --perm, the rank order a cluster's library\n"
	  "uses instead (the computation collc build makes, generating nothing).\n",
	  NULL },
	{ "cost", CMD_COST, cmd_cost, cost_flags, "FILE...", "predicted time per cost model",
	  "Predicted time of each ALGO (default: every algorithm in FILE...) under each\n"
	  "cost model, a block per algorithm with one line per size and model:\n"
	  "  rounds  round-synchronous: sum over rounds of the slowest transfer\n"
	  "  sim     event-driven: each transfer starts when its data and ports are ready\n",
	  units_help },
	{ "sim", CMD_SIM, cmd_sim, sim_flags, "FILE...", "event-driven simulation of one algorithm",
	  "Event-driven simulation: completion time, algbw, busbw, each rank's idle time\n"
	  "and the critical path.\n",
	  units_help },
	{ "compare", CMD_COMPARE, cmd_compare, compare_flags, "FILE...", "algorithms x sizes (or x n)",
	  "Algorithms x sizes: time, algbw, busbw (GB/s, nccl-tests definitions) and\n"
	  "speedup over the baseline (default ring) of the same collective, for the\n"
	  "sizes of -s or of the sweep -b/-e (default 1KiB .. 4GiB, factor 2).\n",
	  units_help },
	{ "tune", CMD_TUNE, cmd_tune, tune_flags, "FILE...", "fastest algorithm per size range",
	  "Per collective, the fastest algorithm for each size range (the table a\n"
	  "generated library chooses by), and for every algorithm with a precondition\n"
	  "phase (StragglAR) the straggler delay above which it beats each other\n"
	  "algorithm, searched with the model and compared with StragglAR's rule\n"
	  "T_delay >= T_RS - max(T_B - T_SAR, 0).  The delay search uses --straggler\n"
	  "(default: rank n-1).  --ranges-only prints the size ranges alone (the\n"
	  "delay search is most of the time at large n; the PMPI library asks for\n"
	  "the ranges only).\n",
	  units_help },
	{ "reorder", CMD_REORDER, cmd_reorder, reorder_flags, "FILE...", "the best rank order on a network",
	  "The rank order (schedule rank -> physical rank) that minimises ALGO's predicted\n"
	  "time on the network of MATRIX: simulated annealing, then branch and bound for\n"
	  "small n seeded with its result.  Prints the order, the predicted time of the\n"
	  "identity order and of the best one, and a lower bound; `optimal` when proven.\n",
	  units_help },
	{ "build", CMD_BUILD, cmd_build, build_flags, "CLUSTER.coll [FILE.coll...]",
	  "generate and compile lib<cluster>",
	  "Verify every algorithm the cluster includes, then write DIR/NAME.h and\n"
	  "DIR/NAME_plans.c and compile DIR/libNAME.so and DIR/libNAME.a.\n",
	  NULL },
};

#define NCOMMANDS (sizeof commands / sizeof *commands)

/* --- help -------------------------------------------------------------------- */

/* "-n N", "--csv": a flag as the help writes it. */
static char *flag_text(const cmd_flag *f, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", f->name, f->arg ? " " : "", f->arg ? f->arg : "");
	return buf;
}

/* text from column col on, wrapped at 80 columns to column indent */
static void wrap(FILE *out, int col, int indent, const char *text)
{
	for (const char *h = text; *h; h += strspn(h, " ")) {
		int k = (int)strcspn(h, " ");
		if (h > text && col + 1 + k > 80)
			col = fprintf(out, "\n%*s", indent, "") - 1;
		else if (h > text)
			col += fprintf(out, " ");
		col += fprintf(out, "%.*s", k, h);
		h += k;
	}
	fputc('\n', out);
}

/* One flag's help: its name in a column of 20, the text beside it. */
static void print_flag(FILE *out, const char *text, const char *help)
{
	wrap(out, fprintf(out, strlen(text) < 20 ? "  %-19s " : "  %s  ", text), 22, help);
}

/* "usage: collc NAME OPERANDS FLAG..." wrapped at 80 columns under the
 * operands: required flags bare, optional ones [in brackets]. */
static void print_usage_line(FILE *out, const cmd_command *c)
{
	int indent = fprintf(out, "usage: collc %s ", c->name);
	int col = indent + fprintf(out, "%s", c->operands);
	for (const cmd_flag *const *f = c->flags; *f; f++) {
		char t[64], w[80];
		flag_text(*f, t, sizeof t);
		int k = snprintf(w, sizeof w, (*f)->req ? "%s%s" : "[%s]%s", t, (*f)->many ? "..." : "");
		if (col + 1 + k > 80) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
		} else {
			fputc(' ', out);
			col++;
		}
		col += fprintf(out, "%s", w);
	}
	fputc('\n', out);
}

/* COMMAND --help: its usage line, what it does, its flags, then the
 * options every command takes. */
static void help(const cmd_command *c)
{
	char t[64];
	print_usage_line(stdout, c);
	fputs(c->about, stdout);
	fputs("options:\n", stdout);
	for (const cmd_flag *const *f = c->flags; *f; f++)
		print_flag(stdout, flag_text(*f, t, sizeof t), (*f)->help);
	print_flag(stdout, "-h, --help", "this text");
	fputs("options of every command (collc --help):\n", stdout);
	for (const cmd_flag *const *f = common_flags; *f; f++)
		print_flag(stdout, flag_text(*f, t, sizeof t), (*f)->help);
	if (c->footer)
		fputs(c->footer, stdout);
}

void cmd_usage(FILE *out)
{
	char t[64];
	fputs("usage: collc COMMAND [options]\n\ncommands:\n", out);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		fprintf(out, "  %s %s", commands[i].name, commands[i].operands);
		for (const cmd_flag *const *f = commands[i].flags; *f; f++)
			if ((*f)->req)
				fprintf(out, " %s", flag_text(*f, t, sizeof t));
		fprintf(out, " [options]\n        ");
		wrap(out, 8, 8, commands[i].summary);
	}
	fputs("\ncommon options:\n", out);
	for (const cmd_flag *const *f = common_flags; *f; f++)
		print_flag(out, flag_text(*f, t, sizeof t), (*f)->help);
	print_flag(out, "--help", "this text; COMMAND --help for a command's own flags");
	print_flag(out, "--version", "print the version");
	fputs("\nThe language is described in lang/README.md.\n", out);
}

int (*cmd_lookup(const char *name))(int, char **)
{
	diag_suggest near = diag_suggest_start(name);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(name, commands[i].name) == 0)
			return commands[i].run;
		diag_suggest_add(&near, commands[i].name);
	}
	if (near.best)
		diag_tool_error("unknown command '%s' (did you mean '%s'?)", name, near.best);
	else
		diag_tool_error("unknown command '%s' (see collc --help)", name);
	return NULL;
}

/* --- parsing ----------------------------------------------------------------- */

/* Read v (NULL: none given, for a switch) as row f says into o: 0, or
 * the exit status after a message. */
static int set_flag(const cmd_flag *f, cmd_opts *o, const char *v)
{
	char *at = (char *)o + f->off;
	link_error err;
	int rc = 0;
	switch (f->kind) {
	case FV_SWITCH:
		*(bool *)at = true;
		break;
	case FV_INT:
		rc = parse_int(f->name, v, f->lo, f->hi, (int *)at);
		break;
	case FV_SIZE:
		if (check_blanks(f->name, v))
			rc = 2;
		else if (link_parse_size(v, (double *)at, &err))
			rc = cmd_usage_error("%s: %s", f->name, err.msg);
		break;
	case FV_TIME:
		if (check_blanks(f->name, v))
			rc = 2;
		else if (link_parse_time(v, (double *)at, &err))
			rc = cmd_usage_error("%s: %s", f->name, err.msg);
		break;
	case FV_BW:
		if (check_blanks(f->name, v))
			rc = 2;
		else if (link_parse_bw(v, (double *)at, &err))
			rc = cmd_usage_error("%s: %s", f->name, err.msg);
		break;
	case FV_STR:
		*(const char **)at = v;
		break;
	default:
		rc = f->fn(o, v);
	}
	if (rc == 0 && f->have)
		*(bool *)((char *)o + f->have) = true;
	return rc;
}

static const cmd_flag *find_flag(const cmd_flag *const *table, const char *name)
{
	for (const cmd_flag *const *f = table; *f; f++)
		if (strcmp((*f)->name, name) == 0)
			return *f;
	return NULL;
}

/* An option c does not take: with the closest of its flags (or of every
 * command's), dashes aside, when one is near. */
static int unknown_option(const cmd_command *c, const char *arg, const char *name)
{
	diag_suggest near = diag_suggest_start(name + strspn(name, "-"));
	const cmd_flag *best = NULL;
	const cmd_flag *const *tables[] = { c->flags, common_flags };
	for (int t = 0; t < 2; t++)
		for (const cmd_flag *const *f = tables[t]; *f; f++)
			if (diag_suggest_add(&near, (*f)->name + strspn((*f)->name, "-")))
				best = *f;
	if (best)
		return cmd_usage_error("unknown option '%s' for '%s' (did you mean '%s'?)", arg, c->name, best->name);
	return cmd_usage_error("unknown option '%s' for '%s' (see collc %s --help)", arg, c->name, c->name);
}

int cmd_take_common(int *argc, char **argv, bool *stats)
{
	cmd_opts g = { 0 };
	for (int i = 1; i < *argc;) {
		const cmd_flag *f = find_flag(common_flags, argv[i]);
		if (!f) {
			i++;
			continue;
		}
		int take = f->arg ? 2 : 1;
		if (set_flag(f, &g, f->arg ? argv[i + 1] : NULL))   /* argv[argc] is NULL */
			return 2;
		memmove(argv + i, argv + i + take, (size_t)(*argc - i - take + 1) * sizeof *argv);
		*argc -= take;
	}
	*stats = g.stats;
	return 0;
}

/* argv through c's table into o: operands into o->files, "--flag=value",
 * "-Dname=value" and "--flag value".  0, -1 after --help, or the exit
 * status after a message. */
static int parse_flags(const cmd_command *c, int argc, char **argv, cmd_opts *o)
{
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			help(c);
			return -1;
		}
		if (a[0] != '-' || !a[1]) {
			o->files[o->nfiles++] = a;
			continue;
		}
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
		const cmd_flag *f = find_flag(c->flags, name);
		if (!f)
			return unknown_option(c, a, name);
		if (f->arg && !v) {
			if (i + 1 >= argc)
				return cmd_usage_error("%s needs a value", name);
			v = argv[++i];
		} else if (!f->arg && v) {
			return cmd_usage_error("%s takes no value", name);
		}
		int rc = set_flag(f, o, v);
		if (rc)
			return rc;
	}
	return 0;
}

/* The cost subcommands' combination of flags: links, n, sizes, straggler. */
static int finish_costs(cmd_opts *o)
{
	int which = o->which;
	if (o->csv && o->json)
		return cmd_usage_error("choose one of --csv and --json");

	/* links */
	link_error err;
	if (o->links_path) {
		if (o->have_alpha || o->have_bw)
			return cmd_usage_error("--links and --alpha/--bw exclude each other");
		if (o->have_nrange)
			return cmd_usage_error("--n-range needs uniform links (--alpha, --bw), not a matrix");
		if (link_read_matrix(&o->links, o->links_path, &err))
			return cmd_link_error(&err);
		if (!o->have_n) {
			o->n = o->links.n;
			o->have_n = true;
		} else if (o->n != o->links.n) {
			return cmd_input_error("the link matrix %s has %d ranks but -n is %d",
					       o->links_path, o->links.n, o->n);
		}
	} else if (link_uniform(&o->links, o->have_alpha ? o->alpha : 3e-6,
				o->have_bw ? o->bw : 450e9, &err)) {
		return cmd_usage_error("%s", err.msg);
	}
	/* One connection per rank (StragglAR's and NCCL's scale-up
	 * assumption) unless told otherwise; a matrix says what it knows
	 * about sharing (its rank-bw line, its segments), so there links stay
	 * as the file has them by default. */
	if (o->have_rank_bw && link_set_rank_bw(&o->links, o->rank_bw, &err))
		return cmd_usage_error("--rank-bw: %s", err.msg);
	else if (!o->have_rank_bw && !o->links_path)
		link_set_rank_bw(&o->links, o->have_bw ? o->bw : 450e9, NULL);   /* --bw's range is the same */
	/* The host's resources: the flags over the file's lines. */
	{
		link_host h = o->links.host;
		if (o->have_mem_bw)
			h.mem_bw = o->mem_bw;
		if (o->have_reduce_bw)
			h.reduce_bw = o->reduce_bw;
		if (o->have_cores)
			h.cores = o->cores;
		if (link_set_host(&o->links, &h, &err))
			return cmd_usage_error("%s", err.msg);
	}
	/* Jitter draws flow weights, which only alpha-fair sharing takes; say
	 * so rather than ignore the flag. */
	if ((o->jitter > 0 || o->jitter_samples > 0) &&
	    (o->sharing == 0 || (o->sharing < 0 && !o->links_path)))
		return cmd_usage_error("--jitter needs alpha-fair sharing: --sharing tcp or alpha=K "
				       "(tcp is the default with --links)");
	if (o->jitter_samples > 0 && !(o->jitter > 0))
		return cmd_usage_error("--jitter-samples goes with --jitter SIGMA");
	if (o->have_nrange && o->have_n)
		return cmd_usage_error("give either -n or --n-range");
	if (!o->have_n && !o->have_nrange)
		return cmd_usage_error("%s needs the rank count: -n N", o->cmd);

	/* sizes */
	if (o->ns && (o->have_b || o->have_e))
		return cmd_usage_error("give either -s or -b/-e");
	if ((o->have_f || o->have_i) && !(o->have_b || o->have_e))
		return cmd_usage_error("-f and -i go with -b and -e");
	if (o->have_f && o->have_i)
		return cmd_usage_error("give either -f or -i");
	if (o->have_b || o->have_e) {
		if (!o->have_b)
			o->b = o->e;
		if (!o->have_e)
			o->e = o->b;
		if (o->e < o->b)
			return cmd_usage_error("-e must not be below -b");
		double f = o->have_f ? o->f : 2;
		for (double x = o->b; x <= o->e * (1 + 1e-12);
		     x = o->have_i ? x + o->inc : fmax(floor(x * f), x + 1)) {
			if (o->nsizes == 100000)
				return cmd_usage_error("more than 100000 sizes in the sweep");
			double *ns = realloc(o->sizes, sizeof *ns * (size_t)(o->nsizes + 1));
			if (!ns)
				return cmd_usage_error("out of memory");
			o->sizes = ns;
			o->sizes[o->nsizes++] = x;
		}
	} else if (o->ns) {
		o->sizes = malloc(sizeof *o->sizes * (size_t)o->ns);
		memcpy(o->sizes, o->s_size, sizeof *o->sizes * (size_t)o->ns);
		o->nsizes = o->ns;
	} else if ((which & (CMD_COMPARE | CMD_TUNE)) && !o->have_nrange) {
		for (double x = 1024; x <= 4 * 1073741824.0; x *= 2) {
			o->sizes = realloc(o->sizes, sizeof *o->sizes * (size_t)(o->nsizes + 1));
			o->sizes[o->nsizes++] = x;
		}
	} else {
		o->sizes = malloc(sizeof *o->sizes);
		o->sizes[0] = 1073741824.0;
		o->nsizes = 1;
	}
	if ((which & (CMD_SIM | CMD_REORDER)) && o->nsizes != 1)
		return cmd_usage_error("%s takes one size (-s)", o->cmd);
	if (o->perm && o->nperm != o->n)
		return cmd_usage_error("--perm lists %d ranks but there are %d", o->nperm, o->n);
	if (o->have_nrange && o->nsizes != 1)
		return cmd_usage_error("--n-range takes one size (-s)");

	/* straggler: --delay alone means the last rank */
	if (o->have_delay && o->straggler == -1)
		o->straggler = -2;
	if (o->straggler >= 0 && o->have_n && o->straggler >= o->n)
		return cmd_usage_error("--straggler %d out of range for %d ranks", o->straggler, o->n);
	if (o->straggler >= 0 && o->have_nrange && o->straggler >= o->nlo)
		return cmd_usage_error("--straggler %d out of range for n = %d (use --straggler last)",
				       o->straggler, o->nlo);
	return 0;
}

/* check's and show's: every n of 2..16 unless told; show needs one */
static int finish_select(cmd_opts *o)
{
	if (o->which == CMD_SHOW && !o->have_n && !o->show_perm)
		return cmd_usage_error("show needs the rank count: -n N");
	if (!o->have_n) {
		o->nlo = 2;
		o->nhi = 16;
	}
	return 0;
}

int cmd_parse(int argc, char **argv, int which, cmd_opts *o)
{
	memset(o, 0, sizeof *o);
	o->cmd = argv[0];
	o->which = which;
	o->files = xcalloc((size_t)argc + 1, sizeof *o->files);
	o->straggler = -1;
	o->segments = 1;
	o->round_order = -1;
	o->sharing = -1;
	o->baseline = "ring";
	o->model = "sim";
	o->format = "table";
	o->kind = -1;
	const cmd_command *c = commands;
	while (c->which != which)
		c++;
	int rc = parse_flags(c, argc, argv, o);
	if (rc)
		return rc;
	if (which == CMD_BUILD)
		return o->nfiles && o->out ? 0 : cmd_usage_error("build needs a cluster file and -o DIR");
	if (o->nfiles == 0)
		return cmd_usage_error("%s needs at least one .coll file", o->cmd);
	return which & CMD_COSTS ? finish_costs(o) : finish_select(o);
}

void cmd_free_opts(cmd_opts *o)
{
	for (int i = 0; i < o->nalgos; i++)
		free(o->algos[i]);
	free(o->algos);
	free(o->files);
	free(o->sizes);
	free(o->perm);
	for (int d = 0; d < o->ndefs; d++)
		free((char *)o->defs[d].name);
	link_free(&o->links);
}

int cmd_straggler_for(const cmd_opts *o, int n)
{
	return o->straggler == -2 ? n - 1 : o->straggler;
}

