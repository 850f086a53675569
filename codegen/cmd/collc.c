/*
 * collc.c - main() of collc: the options of every subcommand (--stats,
 * --max-errors, --max-memory), --version and --help, then the subcommand
 * (one file each in codegen/cmd/, cmd.h; their table and flags are in
 * cmd_flags.c).
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
#include "xalloc.h"

#define COLL_VERSION "0.1.0"

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
	/* options every subcommand takes, taken out before it sees argv */
	bool stats = false;
	if (cmd_take_common(&argc, argv, &stats))
		return 2;
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
	int (*run)(int, char **) = cmd_lookup(argv[1]);
	if (!run)
		return 2;
	int rc = run(argc - 1, argv + 1);
	if (stats)
		print_stats(start);
	return rc ? rc : (diag_errors ? 1 : 0);
}
