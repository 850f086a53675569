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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll.h"

static void usage(FILE *f)
{
	fputs("usage: collrun -np N collprobe [-o FILE] [--pings K] [--bytes SIZE] [--reps R]\n"
	      "                               [--directions] [--no-groups]\n"
	      "Probe every pair of ranks over the job's transport and write a links file\n"
	      "(collc --links, cluster `links`): latency = half the 10th percentile of K\n"
	      "ping-pongs (default 20), bandwidth from SIZE-byte exchanges (default 1M; K M G\n"
	      "suffixes), R per pair back to back, the median kept (default 3), pairs\n"
	      "probed concurrently in n-1 matchings; then groups of ranks (racks) and each\n"
	      "group's uplink.\n"
	      "  -o FILE        write the file there (rank 0), else stdout\n"
	      "  --directions   keep each direction's numbers (default: a pair's cost is its\n"
	      "                 larger direction's, as the rank-reordering paper does)\n"
	      "  --no-groups    per-pair costs only\n", f);
}

static double parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v <= 0)
		return -1;
	if (*end == 'K' || *end == 'k')
		v *= 1024, end++;
	else if (*end == 'M')
		v *= 1048576, end++;
	else if (*end == 'G')
		v *= 1073741824, end++;
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	return *end ? -1 : v;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	coll_probe_config cfg = COLL_PROBE_CONFIG_INIT;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
			out = argv[++i];
		} else if (strcmp(a, "--pings") == 0 && i + 1 < argc) {
			cfg.pings = atoi(argv[++i]);
			if (cfg.pings < 1 || cfg.pings > 100000) {
				fprintf(stderr, "collprobe: error: --pings needs 1..100000\n");
				return 2;
			}
		} else if (strcmp(a, "--reps") == 0 && i + 1 < argc) {
			cfg.reps = atoi(argv[++i]);
			if (cfg.reps < 1 || cfg.reps > 1000) {
				fprintf(stderr, "collprobe: error: --reps needs 1..1000\n");
				return 2;
			}
		} else if (strcmp(a, "--bytes") == 0 && i + 1 < argc) {
			double b = parse_size(argv[++i]);
			if (b < 1024 || b > 1073741824.0) {
				fprintf(stderr, "collprobe: error: --bytes needs a size from 1K to 1G, found '%s'\n", argv[i]);
				return 2;
			}
			cfg.bytes = (size_t)b;
		} else if (strcmp(a, "--directions") == 0) {
			cfg.directions = 1;
		} else if (strcmp(a, "--no-groups") == 0) {
			cfg.groups = 0;
		} else {
			fprintf(stderr, "collprobe: error: unknown or incomplete option '%s' (see --help)\n", a);
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
