/*
 * cmd_flags.c - the flag parser of `collc cost`, `sim`, `compare`, `tune`.
 *
 * Pipeline position: the first step of each cost subcommand (cmd_cost.c,
 * cmd_sim.c, cmd_compare.c, cmd_tune.c): argv -> cmd_opts.  One table
 * says which flag each subcommand takes; values are read with
 * linkmodel.c's units; then the combination is checked and completed:
 * the link model (uniform or a --links matrix, with the rank bandwidth
 * default), the rank count, the list of sizes (-s, a -b/-e sweep, or the
 * command's default) and the straggler.  Also the common part of every
 * subcommand's --help, and the two error printers the layer shares.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_flags.h"

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

/* --- help -------------------------------------------------------------------- */

static const char common_help[] =
	"  -n N                rank count (default: the rank count of --links)\n"
	"  -D name=value       set a `param` of the algorithms\n"
	"  -s SIZE             buffer size (repeatable)\n"
	"  -b MIN -e MAX       size sweep as nccl-tests: MIN, MIN*F, ... up to MAX (not sim)\n"
	"  -f F | -i STEP      sweep factor (default 2) or additive step\n"
	"  --alpha T           link latency (default 3us)\n"
	"  --bw BW             link bandwidth (default 450GB/s)\n"
	"  --links MATRIX      per-pair latency and bandwidth (TSV: src dst alpha bandwidth),\n"
	"                      and shared segments (group, uplink, segment, rank-bw lines)\n"
	"  --rank-bw BW|none   a rank's injection bandwidth, shared by the messages it sends\n"
	"                      (or receives) in one round; default: --bw for uniform links\n"
	"                      (one connection per rank), none for --links (independent)\n"
	"  --straggler R       rank R joins late ('last': rank n-1); with no --delay, late\n"
	"                      enough to hide all the others can do without it\n"
	"  --delay D           the straggler's delay (implies --straggler last)\n"
	"  --segments S        pipeline the buffer in S segments (sim model)\n"
	"  --seg-bytes X       as many segments as cut each chunk into pieces of at most X,\n"
	"                      as the runtime does (its TCP messages: 1MiB), per algorithm\n"
	"  --round-order on|off  the sim runs as libcollrt does on TCP: a rank's sends\n"
	"                      (receives) of a round wait for those of its earlier rounds\n"
	"                      (default: on with --links, a network; off otherwise)\n"
	"  --sharing maxmin|tcp|alpha=K  how flows share a segment in the sim: max-min,\n"
	"                      TCP's (alpha-fair, alpha 2, each flow weighted by 1/RTT^2, its\n"
	"                      RTT the loaded segments its data and acks pass; default with\n"
	"                      --links), or alpha-fair with alpha K and no weights\n"
	"  --jitter SIGMA      the sim's time is the mean over draws of TCP's luck: each\n"
	"                      connection's weight in a round times e^(SIGMA z), z normal\n"
	"                      (tcp or alpha=K sharing, shared segments; README \"Rank\n"
	"                      reordering\"); --jitter-samples K draws (default 8)\n"
	"  --max-steps N       evaluation step limit\n"
	"  --help              this text\n"
	"units: sizes B KB MB GB (x1000), KiB MiB GiB (x1024), K M G as nccl-tests (x1024);\n"
	"times ns us ms s; bandwidths B/s KB/s MB/s GB/s KiB/s MiB/s GiB/s Mbit/s Gbit/s.\n"
	"Times count from when the last rank joined (the straggler, if any).\n";

/* The options of compare and tune only, after the common ones. */
static const char table_help[] =
	"  --model M           sim (default), rounds, or all\n"
	"  --csv, --json       machine-readable rows (see README: collc compare --json)\n";

/* collc reorder's options (it takes a few of the common ones). */
static const char reorder_help[] =
	"  -a ALGO             the algorithm (needed when FILE... holds several)\n"
	"  -n N                rank count (default: the rank count of --links)\n"
	"  -D name=value       set a `param` of the algorithm\n"
	"  -s SIZE             the buffer size the order is chosen for (default 1GiB)\n"
	"  --links MATRIX      the physical network: per-pair latency and bandwidth, shared\n"
	"                      segments (what collprobe writes; see README \"Rank reordering\")\n"
	"  --alpha T --bw BW   uniform links instead (then only segments can tell orders apart)\n"
	"  --rank-bw BW|none   a rank's injection bandwidth shared by its messages of a round\n"
	"  --time-limit T      stop searching after T (default 10s; a cut search is reported)\n"
	"  --seed K            annealing's random seed (default 1): same seed, same answer\n"
	"  --moves M           annealing moves per run (default 200 n^2, at least 20000;\n"
	"                      8 runs within 4e6 / (messages per rank) moves)\n"
	"  --effort F          that budget times F (default 1; reorder at init uses 0.25)\n"
	"  --exact-max N       branch and bound when n <= N (default 10; -1: never)\n"
	"  --perm LIST|@FILE   start annealing from this order (schedule rank -> physical rank)\n"
	"  --sim               also run the event-driven simulation where it is slow\n"
	"  --seg-bytes X       the simulation pipelines each chunk in pieces of at most X\n"
	"  --sharing RULE      how the simulation shares a segment: tcp (default), maxmin, alpha=K\n"
	"  --jitter SIGMA      the simulation's time is the mean over draws of TCP's luck\n"
	"                      (collc cost --help); --jitter-samples K draws (default 8)\n"
	"  --exhaustive        try every order instead (n <= 11): the reference for the search\n"
	"  --spread K          also K orders spread from the best to the highest predicted time,\n"
	"                      the i-th about i/K of the way (to test a model against a network)\n"
	"  --json              one JSON object (README: collc reorder --json)\n"
	"  --help              this text\n";

static void help(const char *usage, int which)
{
	fputs(usage, stdout);
	fputs("options:\n", stdout);
	if (which == CMD_REORDER) {
		fputs(reorder_help, stdout);
		return;
	}
	/* a simulation's report (timeline, critical path, --svg) is of one run */
	if (which == CMD_SIM)
		fputs("  -a ALGO             the algorithm (needed when FILE... holds several)\n", stdout);
	else
		fputs("  -a ALGO[,ALGO...]   algorithm(s) by name (default: every algorithm in FILE...)\n",
		      stdout);
	fputs(common_help, stdout);
	if (which & (CMD_COMPARE | CMD_TUNE))
		fputs(table_help, stdout);
	if (which == CMD_TUNE)
		fputs("  --ranges-only       the size ranges alone, without the critical-delay search\n", stdout);
}

/* --- flags ------------------------------------------------------------------- */

/* Every flag, whether it takes a value, and the subcommands that take it. */
static const struct {
	const char *name;
	int takes_value;
	int cmds;
} flags[] = {
	{ "-a", 1, CMD_ALL | CMD_REORDER },
	{ "-n", 1, CMD_ALL | CMD_REORDER },
	{ "-D", 1, CMD_ALL | CMD_REORDER },
	{ "-s", 1, CMD_ALL | CMD_REORDER },
	{ "-b", 1, CMD_COST | CMD_COMPARE | CMD_TUNE },
	{ "-e", 1, CMD_COST | CMD_COMPARE | CMD_TUNE },
	{ "-f", 1, CMD_COST | CMD_COMPARE | CMD_TUNE },
	{ "-i", 1, CMD_COST | CMD_COMPARE | CMD_TUNE },
	{ "--alpha", 1, CMD_ALL | CMD_REORDER },
	{ "--bw", 1, CMD_ALL | CMD_REORDER },
	{ "--links", 1, CMD_ALL | CMD_REORDER },
	{ "--rank-bw", 1, CMD_ALL | CMD_REORDER },
	{ "--perm", 1, CMD_COST | CMD_SIM | CMD_REORDER },
	{ "--time-limit", 1, CMD_REORDER },
	{ "--seed", 1, CMD_REORDER },
	{ "--moves", 1, CMD_REORDER },
	{ "--effort", 1, CMD_REORDER },
	{ "--exact-max", 1, CMD_REORDER },
	{ "--sim", 0, CMD_REORDER },
	{ "--exhaustive", 0, CMD_REORDER },
	{ "--spread", 1, CMD_REORDER },
	{ "--straggler", 1, CMD_ALL },
	{ "--delay", 1, CMD_ALL },
	{ "--segments", 1, CMD_ALL },
	{ "--seg-bytes", 1, CMD_COST | CMD_SIM | CMD_COMPARE | CMD_TUNE | CMD_REORDER },
	{ "--round-order", 1, CMD_ALL },
	{ "--sharing", 1, CMD_ALL | CMD_REORDER },
	{ "--jitter", 1, CMD_ALL | CMD_REORDER },
	{ "--jitter-samples", 1, CMD_ALL | CMD_REORDER },
	{ "--baseline", 1, CMD_COMPARE | CMD_TUNE },
	{ "--model", 1, CMD_COMPARE | CMD_TUNE },
	{ "--csv", 0, CMD_COST | CMD_COMPARE | CMD_TUNE },
	{ "--json", 0, CMD_COST | CMD_COMPARE | CMD_TUNE | CMD_REORDER },
	{ "--ranges-only", 0, CMD_TUNE },
	{ "--svg", 1, CMD_SIM | CMD_COMPARE },
	{ "--trace", 0, CMD_SIM },
	{ "--n-range", 1, CMD_COMPARE },
	{ "--repeat", 1, CMD_SIM },
	{ "--max-steps", 1, CMD_ALL | CMD_REORDER },
};

static int parse_int(const char *flag, const char *v, long lo, long hi, int *out)
{
	char *end;
	long x = strtol(v, &end, 10);
	if (end == v || *end || x < lo || x > hi)
		return cmd_usage_error("%s needs an integer in %ld..%ld, found '%s'", flag, lo, hi, v);
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

static int parse_size_flag(const char *flag, const char *v, double *out)
{
	link_error err;
	if (link_parse_size(v, out, &err))
		return cmd_usage_error("%s: %s", flag, err.msg);
	return 0;
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

static int add_algos(cmd_opts *o, const char *list)
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

int cmd_parse(int argc, char **argv, int which, const char *usage, cmd_opts *o)
{
	memset(o, 0, sizeof *o);
	o->cmd = argv[0];
	o->which = which;
	o->files = calloc((size_t)argc + 1, sizeof *o->files);
	o->straggler = -1;
	o->segments = 1;
	o->round_order = -1;
	o->sharing = -1;
	o->baseline = "ring";
	o->model = "sim";
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			help(usage, which);
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
			return cmd_usage_error("unknown option '%s' for '%s' (see collc %s --help)", a,
					       o->cmd, o->cmd);
		if (flags[k].takes_value && !v) {
			if (i + 1 >= argc)
				return cmd_usage_error("%s needs a value", name);
			v = argv[++i];
		} else if (!flags[k].takes_value && v) {
			return cmd_usage_error("%s takes no value", name);
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
				return cmd_usage_error("too many -D");
			if (drv_parse_define(v, &o->defs[o->ndefs]))
				return 2;
			o->ndefs++;
		} else if (strcmp(name, "-s") == 0) {
			if (o->ns == 64)
				return cmd_usage_error("too many -s");
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
			if (parse_real(v, &o->f) || !(o->f > 1) || o->f > 1e6)
				return cmd_usage_error("-f needs a factor > 1, found '%s'", v);
			o->have_f = true;
		} else if (strcmp(name, "-i") == 0) {
			if (parse_size_flag("-i", v, &o->inc))
				return 2;
			o->have_i = true;
		} else if (strcmp(name, "--alpha") == 0) {
			if (link_parse_time(v, &o->alpha, &err))
				return cmd_usage_error("--alpha: %s", err.msg);
			o->have_alpha = true;
		} else if (strcmp(name, "--bw") == 0) {
			if (link_parse_bw(v, &o->bw, &err))
				return cmd_usage_error("--bw: %s", err.msg);
			o->have_bw = true;
		} else if (strcmp(name, "--rank-bw") == 0) {
			if (strcmp(v, "none") == 0)
				o->rank_bw = 0;
			else if (link_parse_bw(v, &o->rank_bw, &err))
				return cmd_usage_error("--rank-bw: %s (or 'none')", err.msg);
			o->have_rank_bw = true;
		} else if (strcmp(name, "--links") == 0) {
			o->links_path = v;
		} else if (strcmp(name, "--perm") == 0) {
			/* a list, or @FILE holding one (what collc reorder --json or
			 * collprobe leave lying around) */
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
		} else if (strcmp(name, "--time-limit") == 0) {
			if (link_parse_time(v, &o->time_limit, &err))
				return cmd_usage_error("--time-limit: %s", err.msg);
		} else if (strcmp(name, "--seed") == 0) {
			char *end;
			o->seed = strtoull(v, &end, 10);
			if (end == v || *end)
				return cmd_usage_error("--seed needs a non-negative integer, found '%s'", v);
		} else if (strcmp(name, "--moves") == 0) {
			char *end;
			o->moves = strtol(v, &end, 10);
			if (end == v || *end || o->moves < 1)
				return cmd_usage_error("--moves needs a positive integer, found '%s'", v);
		} else if (strcmp(name, "--effort") == 0) {
			if (parse_real(v, &o->effort) || !(o->effort > 0 && o->effort <= 1000))
				return cmd_usage_error("--effort needs a number in (0, 1000], found '%s'", v);
		} else if (strcmp(name, "--exact-max") == 0) {
			if (parse_int("--exact-max", v, -1, 16, &o->exact_max))
				return 2;
		} else if (strcmp(name, "--sim") == 0) {
			o->sim = true;
		} else if (strcmp(name, "--exhaustive") == 0) {
			o->exhaustive = true;
		} else if (strcmp(name, "--spread") == 0) {
			if (parse_int("--spread", v, 1, 1000, &o->spread))
				return 2;
		} else if (strcmp(name, "--straggler") == 0) {
			if (strcmp(v, "last") == 0)
				o->straggler = -2;
			else if (parse_int("--straggler", v, 0, 65535, &o->straggler))
				return 2;
		} else if (strcmp(name, "--delay") == 0) {
			if (link_parse_time(v, &o->delay, &err))
				return cmd_usage_error("--delay: %s", err.msg);
			o->have_delay = true;
		} else if (strcmp(name, "--segments") == 0) {
			if (parse_int("--segments", v, 1, 1 << 20, &o->segments))
				return 2;
		} else if (strcmp(name, "--seg-bytes") == 0) {
			if (parse_size_flag("--seg-bytes", v, &o->seg_bytes))
				return 2;
		} else if (strcmp(name, "--round-order") == 0) {
			if (strcmp(v, "on") && strcmp(v, "off"))
				return cmd_usage_error("--round-order must be on or off, found '%s'", v);
			o->round_order = strcmp(v, "on") == 0;
		} else if (strcmp(name, "--sharing") == 0) {
			o->sharing_rtt = 0;
			if (strcmp(v, "maxmin") == 0)
				o->sharing = 0;
			else if (strcmp(v, "tcp") == 0)
				o->sharing = COST_TCP_ALPHA, o->sharing_rtt = 1;
			else if (strncmp(v, "alpha=", 6) == 0 && parse_real(v + 6, &o->sharing) == 0 && o->sharing > 0 &&
				 o->sharing <= 8)
				;
			else
				return cmd_usage_error("--sharing must be maxmin, tcp or alpha=K (0 < K <= 8), found '%s'", v);
		} else if (strcmp(name, "--jitter") == 0) {
			if (parse_real(v, &o->jitter) || !(o->jitter >= 0 && o->jitter <= COST_JITTER_MAX))
				return cmd_usage_error("--jitter needs a number in 0..%g, found '%s'", COST_JITTER_MAX, v);
		} else if (strcmp(name, "--jitter-samples") == 0) {
			if (parse_int("--jitter-samples", v, 1, 4096, &o->jitter_samples))
				return 2;
		} else if (strcmp(name, "--baseline") == 0) {
			o->baseline = v;
			o->baseline_given = true;
		} else if (strcmp(name, "--model") == 0) {
			if (strcmp(v, "all") && !cost_model_find(v))
				return cmd_usage_error("--model must be sim, rounds or all, found '%s'", v);
			o->model = v;
		} else if (strcmp(name, "--csv") == 0) {
			o->csv = true;
		} else if (strcmp(name, "--json") == 0) {
			o->json = true;
		} else if (strcmp(name, "--ranges-only") == 0) {
			o->ranges_only = true;
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
				return cmd_usage_error("--max-steps needs a positive integer, found '%s'", v);
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
				return cmd_usage_error("--n-range needs A..B (or A..B:K) with 1 <= A <= B, found '%s'", v);
			o->nlo = (int)lo;
			o->nhi = (int)hi;
			o->nstep = step;
			o->have_nrange = true;
		}
	}
	if (o->nfiles == 0)
		return cmd_usage_error("%s needs at least one .coll file", o->cmd);
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
	if (o->have_rank_bw)
		link_set_rank_bw(&o->links, o->rank_bw, NULL);
	else if (!o->links_path)
		link_set_rank_bw(&o->links, o->have_bw ? o->bw : 450e9, NULL);
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

int cmd_straggler_for(const cmd_opts *o, int n)
{
	return o->straggler == -2 ? n - 1 : o->straggler;
}

