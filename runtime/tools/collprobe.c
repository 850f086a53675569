/*
 * collprobe.c - measure the network between every pair of ranks and
 * write the link-matrix file that `collc --links` and a cluster's `links`
 * setting read (latencies, bandwidths, and the groups and uplinks that
 * shared segments are made of).
 *
 *   collrun -np N [--netns h%d] collprobe [-o FILE] [--pings K] [--bytes SIZE]
 *                                          [--reps R] [--directions] [--no-groups]
 *   mpirun -np N collprobe -o FILE ...
 *
 * Pipeline position: before `collc reorder` / `collc build`.  It is a
 * thin tool over the public coll_probe (runtime/probe.c describes the
 * protocol: a round-robin tournament of n-1 matchings, ping-pongs for
 * latency, exchanges for bandwidth, then groups and their uplinks), so it
 * measures over whatever transport the communicator uses.  Rank 0 writes
 * the file (stdout without -o) and a summary on stderr.
 * Exit status: 0, 1 when probing failed, 2 on bad usage.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll.h"
#include "units.h"

/* One flag a line, two blanks before it and two after, its range in the
 * text: tests/harden_flags.test reads the flags from here. */
static void usage(FILE *f)
{
	fputs("usage: collrun -np N collprobe [-o FILE] [--pings K] [--bytes SIZE] [--reps R]\n"
	      "                               [--directions] [--no-groups]\n"
	      "Probe every pair of ranks over the job's transport and write a links file\n"
	      "(collc --links, cluster `links`): latency from ping-pongs, bandwidth from\n"
	      "exchanges, pairs probed concurrently in n-1 matchings; then groups of ranks\n"
	      "(racks) and each group's uplink.\n"
	      "  -o FILE        write the file there (rank 0), else stdout\n"
	      "  --pings K      ping-pongs per pair (1..100000, default 20); the latency is half\n"
	      "                 the 10th percentile of their times\n"
	      "  --bytes SIZE   the bandwidth exchanges' size (1K..1G, default 1M; K M G = KiB\n"
	      "                 MiB GiB, KB MB GB = powers of ten)\n"
	      "  --reps R       exchanges per pair back to back, the median kept (1..1000,\n"
	      "                 default 3; at least 16 over shm)\n"
	      "  --directions   keep each direction's numbers (default: a pair's cost is its\n"
	      "                 larger direction's, as the rank-reordering paper does)\n"
	      "  --no-groups    per-pair costs only\n", f);
}

/* --- flag values ------------------------------------------------------------
 * As every tool's (codegen/cmd/cmd_flags.c): all of the text a number of
 * the flag's kind, in its range, or a usage error naming the flag, the
 * value and the range.  atoi took "2abc" as 2; strtod skipped blanks and
 * read "inf". */

/* An integer (an optional sign, then digits, nothing else) in lo..hi:
 * 0, or -1 after the error. */
static int int_flag(const char *flag, const char *v, long long lo, long long hi, int *out)
{
	long long x = 0;
	if (units_parse_int(v, lo, hi, &x)) {
		fprintf(stderr, "collprobe: error: %s needs an integer in %lld..%lld, found '%s'\n", flag, lo, hi, v);
		return -1;
	}
	*out = (int)x;
	return 0;
}

/* A size in bytes against the one table of units (units.h: K M G =
 * KiB MiB GiB, KB MB GB = powers of ten, B), no blank before or after
 * it, in lo..hi bytes: 0, or -1 after the error. */
static int size_flag(const char *flag, const char *v, double lo, double hi, size_t *out)
{
	double b = 0;
	size_t len = strlen(v);
	link_error err;
	if (!len || isspace((unsigned char)v[0]) || isspace((unsigned char)v[len - 1]) || link_parse_size(v, &b, &err) ||
	    b < lo || b > hi) {
		fprintf(stderr, "collprobe: error: %s needs a size from 1K to 1G (1KiB..1GiB), found '%s'\n", flag, v);
		return -1;
	}
	*out = (size_t)b;
	return 0;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	coll_probe_config cfg = COLL_PROBE_CONFIG_INIT;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int takes = strcmp(a, "-o") == 0 || strcmp(a, "--pings") == 0 || strcmp(a, "--reps") == 0 ||
		            strcmp(a, "--bytes") == 0;
		if (takes && i + 1 >= argc) {
			fprintf(stderr, "collprobe: error: %s needs a value\n", a);
			return 2;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "-o") == 0) {
			out = argv[++i];
		} else if (strcmp(a, "--pings") == 0) {
			if (int_flag(a, argv[++i], 1, 100000, &cfg.pings))
				return 2;
		} else if (strcmp(a, "--reps") == 0) {
			if (int_flag(a, argv[++i], 1, 1000, &cfg.reps))
				return 2;
		} else if (strcmp(a, "--bytes") == 0) {
			if (size_flag(a, argv[++i], 1024, 1073741824.0, &cfg.bytes))
				return 2;
		} else if (strcmp(a, "--directions") == 0) {
			cfg.directions = 1;
		} else if (strcmp(a, "--no-groups") == 0) {
			cfg.groups = 0;
		} else {
			fprintf(stderr, "collprobe: error: unknown option '%s' (see --help)\n", a);
			return 2;
		}
	}
	coll_comm *c;
	coll_result rc = coll_init(&c, NULL, NULL);
	if (rc) {
		fprintf(stderr, "collprobe: error: coll_init: %s: %s\n", coll_strerror(rc), coll_last_error(NULL));
		return 1;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char *text = NULL;
	rc = coll_probe(c, &cfg, &text);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc) {
		fprintf(stderr, "collprobe: error: rank %d: %s: %s\n", coll_rank(c), coll_strerror(rc), coll_last_error(c));
		coll_finalize(c);
		return 1;
	}
	int status = 0;
	if (coll_rank(c) == 0 && text) {
		FILE *f = out ? fopen(out, "w") : stdout;
		if (!f || fputs(text, f) < 0 || (out && fclose(f) != 0)) {
			fprintf(stderr, "collprobe: error: cannot write '%s'\n", out ? out : "stdout");
			status = 1;
		}
		/* the summary: the groups found, one line each */
		int groups = 0;
		for (const char *p = text; (p = strstr(p, "\ngroup ")); p++)
			groups++;
		fprintf(stderr, "collprobe: %d ranks over %s probed in %.2f s; %d group%s%s%s\n", coll_nranks(c),
			coll_transport_name(c), (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9, groups,
			groups == 1 ? "" : "s", out ? " -> " : "", out ? out : "");
		/* where the time went: coll_probe's first line has it */
		const char *steps = strstr(text, "(ping-pongs ");
		if (steps && steps < text + strcspn(text, "\n"))
			fprintf(stderr, "collprobe:   %.*s\n", (int)strcspn(steps + 1, ")\n"), steps + 1);
		for (const char *p = text; (p = strstr(p, "\n")); p++)
			if (strncmp(p + 1, "group ", 6) == 0 || strncmp(p + 1, "uplink ", 7) == 0 ||
			    strncmp(p + 1, "rank-bw ", 8) == 0)
				fprintf(stderr, "collprobe:   %.*s\n", (int)strcspn(p + 1, "\n"), p + 1);
	}
	free(text);
	coll_finalize(c);
	return status;
}
