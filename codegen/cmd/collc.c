/*
 * collc.c - main() of collc: the table of subcommands (one file each in
 * codegen/cmd/, cmd.h), the global options (--stats, --version, --help)
 * and the usage text.
 *
 * Every subcommand goes through the driver (lang/driver.h): parse +
 * resolve once, then evaluate and verify per (algorithm, n).  Exit status:
 * 0 when everything asked for verified, 1 on diagnostics, 2 on usage
 * errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cmd.h"
#include "driver.h"
#include "linkmodel.h"
#include "xalloc.h"

#define COLL_VERSION "0.1.0"

void cmd_usage(FILE *out)
{
	fputs("usage: collc COMMAND [options]\n"
	      "\n"
	      "commands:\n"
	      "  check FILE... [-a ALGO] [-n N | --n-range A..B] [-D name=value]...\n"
	      "        evaluate and verify every algorithm (or ALGO) for each n (default 2..16)\n"
	      "  show FILE... [-a ALGO | -t COLL] -n N [--format table|json|dot] [-D name=value]...\n"
	      "        print the verified schedule of ALGO (default: the first in FILE, of collective COLL)\n"
	      "  cost FILE... [-a ALGO,...] -n N -s SIZE [links]  predicted time per cost model\n"
	      "  sim FILE -a ALGO -n N -s SIZE [--trace] [--svg F] event-driven simulation\n"
	      "  compare FILE... -n N [-b -e -f] [--csv|--json|--svg F]  algorithms x sizes\n"
	      "  tune FILE... -n N [link flags]                   fastest algorithm per size range\n"
	      "  reorder FILE -a ALGO -n N --links M [-s SIZE]    the best rank order on that network\n"
	      "  build CLUSTER.coll -o DIR [--cluster NAME]       generate and compile lib<cluster>\n"
	      "\n"
	      "common options:\n"
	      "  --max-steps N   evaluation step limit (default 200000000)\n"
	      "  --max-errors N  stop after N errors (default 20; 0: never)\n"
	      "  --max-memory S  memory budget of an evaluation (default 2GiB)\n"
	      "  --stats         print wall time and peak memory to stderr at exit (benchmarks)\n"
	      "  --help          this text; COMMAND --help for a command's own flags\n"
	      "  --version       print the version\n"
	      "\n"
	      "The language is described in lang/README.md.\n", out);
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
} commands[] = {
	{ "check", cmd_check }, { "show", cmd_show },
	{ "cost", cmd_cost },   { "sim", cmd_sim },
	{ "compare", cmd_compare }, { "tune", cmd_tune },
	{ "build", cmd_build }, { "reorder", cmd_reorder },
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
	/* an evaluation may use this much (xalloc.h), well under any machine
	 * collc runs on: a runaway `l = l + l` stops with an error at the
	 * statement instead of taking the machine's memory */
	mem_limit = (size_t)2 << 30;
	bool stats = false;
	/* options every subcommand takes, taken out before it sees argv */
	for (int i = 1; i < argc;) {
		int take = 0;
		if (strcmp(argv[i], "--stats") == 0) {
			stats = true;
			take = 1;
		} else if (strcmp(argv[i], "--max-errors") == 0) {
			char *end;
			long m = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
			if (i + 1 >= argc || end == argv[i + 1] || *end || m < 0 || m > 1000000) {
				diag_tool_error("--max-errors needs an integer in 0..1000000 (0: no limit), found '%s'",
						i + 1 < argc ? argv[i + 1] : "");
				return 2;
			}
			diag_max_errors = (int)m;
			take = 2;
		} else if (strcmp(argv[i], "--max-memory") == 0) {
			double b;
			link_error err;
			if (i + 1 >= argc || link_parse_size(argv[i + 1], &b, &err) != 0) {
				diag_tool_error("--max-memory: %s", i + 1 < argc ? err.msg : "needs a size such as 4GiB");
				return 2;
			}
			mem_limit = (size_t)b;
			take = 2;
		}
		if (!take) {
			i++;
			continue;
		}
		memmove(argv + i, argv + i + take, (size_t)(argc - i - take + 1) * sizeof *argv);
		argc -= take;
	}
	if (argc < 2) {
		cmd_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		cmd_usage(stdout);
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
				cmd_usage(stdout);
				return 0;
			}
		int rc = commands[i].fn(argc - 1, argv + 1);
		if (stats)
			print_stats(start);
		return rc ? rc : (diag_errors ? 1 : 0);
	}
	diag_tool_error("unknown command '%s' (see collc --help)", argv[1]);
	return 2;
}
