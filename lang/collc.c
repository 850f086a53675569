/*
 * collc.c - the compiler's command line: dispatches subcommands.
 *
 *   collc check FILE... [-a ALGO] [-n N | --n-range A..B] [-D k=v]
 *   collc show  FILE... [-a ALGO] -n N [--format table|json|dot] [-D k=v]
 *   collc cost|sim|compare|tune ...   (codegen/cmd_cost.c, cmd_sim.c, cmd_compare.c, cmd_tune.c)
 *
 * Every subcommand goes through the driver (driver.h): parse + resolve
 * once, then evaluate and verify per (algorithm, n).  Exit status: 0 when
 * everything asked for verified, 1 on diagnostics, 2 on usage errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "driver.h"
#include "export.h"
#include "cmd_build.h"
#include "cmd_cost.h"

#define COLL_VERSION "0.1.0"

static void usage(FILE *out)
{
	fputs("usage: collc COMMAND [options]\n"
	      "\n"
	      "commands:\n"
	      "  check FILE... [-a ALGO] [-n N | --n-range A..B] [-D name=value]...\n"
	      "        evaluate and verify every algorithm (or ALGO) for each n (default 2..16)\n"
	      "  show FILE... [-a ALGO] -n N [--format table|json|dot] [-D name=value]...\n"
	      "        print the verified schedule of ALGO (default: the first in FILE)\n"
	      "  cost FILE... [-a ALGO,...] -n N -s SIZE [links]  predicted time per cost model\n"
	      "  sim FILE -a ALGO -n N -s SIZE [--trace] [--svg F] event-driven simulation\n"
	      "  compare FILE... -n N [-b -e -f] [--csv|--json|--svg F]  algorithms x sizes\n"
	      "  tune FILE... -n N [link flags]                   fastest algorithm per size range\n"
	      "  build CLUSTER.coll -o DIR [--cluster NAME]       generate and compile lib<cluster>\n"
	      "\n"
	      "common options:\n"
	      "  --max-steps N   evaluation step limit (default 200000000)\n"
	      "  --stats         print wall time and peak memory to stderr at exit (benchmarks)\n"
	      "  --help          this text; COMMAND --help for a command's own flags\n"
	      "  --version       print the version\n"
	      "\n"
	      "The language is described in lang/README.md.\n", out);
}

/* Options shared by check and show. */
typedef struct {
	char **files;
	int nfiles;
	const char *algo;
	int nlo, nhi;
	bool have_n;
	drv_define defs[32];
	int ndefs;
	const char *format;
} opts;

static int parse_n_range(const char *s, int *lo, int *hi)
{
	char *end;
	long a = strtol(s, &end, 10);
	if (end == s || strncmp(end, "..", 2) != 0)
		return -1;
	const char *t = end + 2;
	long b = strtol(t, &end, 10);
	if (end == t || *end || a < 1 || b < a || b > 65536)
		return -1;
	*lo = (int)a;
	*hi = (int)b;
	return 0;
}

static int parse_int_arg(const char *flag, const char *v, int lo, int hi, int *out)
{
	char *end;
	long x = v ? strtol(v, &end, 10) : 0;
	if (!v || end == v || *end || x < lo || x > hi) {
		fprintf(stderr, "collc: error: %s needs an integer in %d..%d, found '%s'\n", flag, lo, hi, v ? v : "");
		return -1;
	}
	*out = (int)x;
	return 0;
}

/* Parse check/show arguments; returns 0, or 2 on a usage error. */
static int parse_opts(int argc, char **argv, opts *o, bool show)
{
	memset(o, 0, sizeof *o);
	o->files = calloc(argc, sizeof *o->files);
	o->format = "table";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "-a") == 0 && v) {
			o->algo = v;
			i++;
		} else if (strcmp(a, "-n") == 0) {
			if (parse_int_arg("-n", v, 1, 65536, &o->nlo))
				return 2;
			o->nhi = o->nlo;
			o->have_n = true;
			i++;
		} else if (strcmp(a, "--n-range") == 0 && !show) {
			if (!v || parse_n_range(v, &o->nlo, &o->nhi)) {
				fprintf(stderr, "collc: error: --n-range needs A..B with 1 <= A <= B, found '%s'\n", v ? v : "");
				return 2;
			}
			o->have_n = true;
			i++;
		} else if (strcmp(a, "-D") == 0 && v) {
			if (o->ndefs == 32 || drv_parse_define(v, &o->defs[o->ndefs]))
				return 2;
			o->ndefs++;
			i++;
		} else if (strncmp(a, "-D", 2) == 0 && a[2]) {
			if (o->ndefs == 32 || drv_parse_define(a + 2, &o->defs[o->ndefs]))
				return 2;
			o->ndefs++;
		} else if (strcmp(a, "--format") == 0 && v && show) {
			if (strcmp(v, "table") && strcmp(v, "json") && strcmp(v, "dot")) {
				fprintf(stderr, "collc: error: --format must be table, json or dot, found '%s'\n", v);
				return 2;
			}
			o->format = v;
			i++;
		} else if (strcmp(a, "--max-steps") == 0 && v) {
			char *end;
			long long m = strtoll(v, &end, 10);
			if (end == v || *end || m < 1) {
				fprintf(stderr, "collc: error: --max-steps needs a positive integer, found '%s'\n", v);
				return 2;
			}
			drv_max_steps = m;
			i++;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "collc: error: unknown or incomplete option '%s' for '%s' (see collc --help)\n", a,
				argv[0]);
			return 2;
		} else {
			o->files[o->nfiles++] = argv[i];
		}
	}
	if (o->nfiles == 0) {
		fprintf(stderr, "collc: error: %s needs at least one .coll file\n", argv[0]);
		return 2;
	}
	if (show && !o->have_n) {
		fprintf(stderr, "collc: error: show needs the rank count: -n N\n");
		return 2;
	}
	if (!o->have_n) {
		o->nlo = 2;
		o->nhi = 16;
	}
	return 0;
}

/* Every -D must name a parameter of some loaded algorithm. */
static int check_defines(drv_prog *p, const opts *o)
{
	const char *bad = drv_unknown_define(p, o->defs, o->ndefs);
	if (bad)
		fprintf(stderr, "collc: error: -D %s: no algorithm has a parameter named '%s'\n", bad, bad);
	return bad ? 1 : 0;
}

static void free_opts(opts *o)
{
	for (int d = 0; d < o->ndefs; d++)
		free((char *)o->defs[d].name);
	free(o->files);
}

static int cmd_check(int argc, char **argv)
{
	opts o;
	int rc = parse_opts(argc, argv, &o, false);
	drv_prog *p = rc ? NULL : drv_load(o.nfiles, o.files);
	if (!p || check_defines(p, &o) ||
	    (o.algo && drv_find_algo(p, o.algo) < 0 && !drv_run(p, o.algo, 1, NULL, 0, false))) {
		/* drv_run of an unknown name prints the "no algorithm" error */
		drv_free(p);
		free_opts(&o);
		return rc ? rc : 1;
	}
	/* a sweep skips the n an algorithm rejects with `require`; one n does not */
	bool sweep = o.nlo != o.nhi;
	drv_set_quiet_require(p, sweep);
	int failed = 0, checked = 0;
	for (int i = 0; i < drv_nalgos(p); i++) {
		const char *name = drv_algo_name(p, i);
		if (o.algo ? strcmp(name, o.algo) != 0 : !drv_algo_named(p, i))
			continue;
		int ok = 0, bad = 0, skipped = 0, rounds = 0, xfers = 0;
		char why[256] = "";
		const char *reason;
		for (int n = o.nlo; n <= o.nhi; n++) {
			ir_sched *s = drv_run(p, name, n, o.defs, o.ndefs, true);
			if (s) {
				ok++;
				rounds = s->nrounds;
				xfers = s->nxfers;
				ir_free(s);
			} else if (drv_unsupported(p, &reason)) {
				if (!skipped++)   /* the first reason; later runs overwrite it */
					snprintf(why, sizeof why, "%s", reason);
			} else {
				bad++;
			}
		}
		checked++;
		if (bad)
			failed++;
		if (!sweep)
			printf("%s: n=%d %s", name, o.nlo, bad ? "FAILED\n" : "");
		else
			printf("%s: n=%d..%d: %d verified, %d failed, %d unsupported", name, o.nlo, o.nhi, ok, bad, skipped);
		if (!bad && !sweep)
			printf("verified (%d rounds, %d transfers)\n", rounds, xfers);
		else if (sweep)
			printf("%s%s%s\n", skipped ? " (" : "", skipped ? why : "", skipped ? ")" : "");
	}
	if (checked == 0) {
		fprintf(stderr, "collc: error: no algorithms in the given files\n");
		failed = 1;
	}
	drv_free(p);
	free_opts(&o);
	return failed ? 1 : 0;
}

static int cmd_show(int argc, char **argv)
{
	opts o;
	int rc = parse_opts(argc, argv, &o, true);
	drv_prog *p = rc ? NULL : drv_load(o.nfiles, o.files);
	if (!p) {
		free_opts(&o);
		return rc ? rc : 1;
	}
	const char *algo = o.algo;
	for (int i = 0; !algo && i < drv_nalgos(p); i++)
		if (drv_algo_named(p, i))
			algo = drv_algo_name(p, i);
	rc = 1;
	if (!algo) {
		fprintf(stderr, "collc: error: no algorithms in the given files\n");
	} else if (check_defines(p, &o) == 0) {
		ir_sched *s = drv_run(p, algo, o.nlo, o.defs, o.ndefs, true);
		if (s) {
			if (strcmp(o.format, "json") == 0)
				export_json(stdout, s);
			else if (strcmp(o.format, "dot") == 0)
				export_dot(stdout, s);
			else
				export_table(stdout, s);
			ir_free(s);
			rc = 0;
		}
	}
	drv_free(p);
	free_opts(&o);
	return rc;
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
} commands[] = {
	{ "check", cmd_check }, { "show", cmd_show },
	{ "cost", cmd_cost },   { "sim", cmd_sim },
	{ "compare", cmd_compare }, { "tune", cmd_tune },
	{ "build", cmd_build },
};

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* --stats: what `make bench` reads, so it needs no external timer. */
static void print_stats(double start)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "collc: stats: %.2f ms, peak RSS %.1f MB\n", now_ms() - start, ru.ru_maxrss / 1024.0);
}

int main(int argc, char **argv)
{
	double start = now_ms();
	drv_init_stdlib(argv[0]);
	bool stats = false;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--stats") == 0) {
			stats = true;
			memmove(argv + i, argv + i + 1, (argc - i) * sizeof *argv);
			argc--;
			break;
		}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("collc (coll) %s\n", COLL_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		for (int j = 2; j < argc; j++)
			if (strcmp(argv[j], "--help") == 0 && (commands[i].fn == cmd_check || commands[i].fn == cmd_show)) {
				usage(stdout);
				return 0;
			}
		int rc = commands[i].fn(argc - 1, argv + 1);
		if (stats)
			print_stats(start);
		return rc ? rc : (diag_errors ? 1 : 0);
	}
	fprintf(stderr, "collc: error: unknown command '%s' (see collc --help)\n", argv[1]);
	return 2;
}
