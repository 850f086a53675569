/*
 * collbench_args.c - collbench's command line: the usage text, the flags
 * parsed into `opt` (collbench.h) with their defaults and checks, and the
 * usage errors, said once by rank 0 since every rank parses the same
 * flags.  collbench.c runs what they ask for.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collbench.h"
#include "planload/planload.h"
#include "units.h"

cb_options opt;
int out_rank = 1;

/* --- messages ----------------------------------------------------------------- */

int cb_env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : dflt;
}

/* Usage errors: the same on every rank, so only rank 0 says it. */
void cb_usage_error(const char *fmt, ...)
{
	if (out_rank) {
		va_list ap;
		fprintf(stderr, "collbench: error: ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, "\n");
	}
	exit(2);
}

/* One flag (or its spellings, "-n, --iters") a line, two blanks before
 * it and two after, its range in the text: tests/harden_flags.test reads
 * the flags from here. */
static void usage(FILE *f)
{
	fprintf(f,
	        "usage: collbench [-f FILE.coll]... [-a ALGO] [-D name=value]... | --lib DIR/libNAME.so [--plans SYM]\n"
	        "                 [--device [GPU]]\n"
	        "                 [-t COLL] [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [--counts LIST]\n"
	        "                 [-n ITERS] [-w WARMUP] [-c] [-d DTYPE] [-o OP] [--root R] [--inplace]\n"
	        "                 [--iter-bytes B] [--timeout S] [--csv | --json]\n"
	        "       collbench --tune FILE [-f FILE.coll... | --lib PATH] [-t COLL] [-b MIN] [-e MAX] [--reps R] [--mpi]\n"
	        "       collbench --memcpy [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [--csv | --json]\n"
	        "Run under `collrun -np N` or `mpirun -np N`; rank 0 prints the table.  A number is the\n"
	        "whole argument (no blanks, no trailing text) and must lie in the range shown.\n"
	        "plans:\n"
	        "  -f, --file FILE.coll  read the algorithm from FILE (repeatable; also a bare FILE argument),\n"
	        "                   via `collc show FILE -a ALGO -n N --format json` ($COLLC or collc beside\n"
	        "                   collbench); -f takes a number as the size factor (below), else a file\n"
	        "                   named *.coll or one that exists\n"
	        "  -a, --algo ALGO  the algorithm (default: chosen by size among the files' algorithms of -t,\n"
	        "                   as `collc tune` ranks them, or by the --lib library's table)\n"
	        "  -D name=value    passed to collc (algorithm parameters)\n"
	        "  --lib PATH       a library from `collc build`: dlopen it and use its NAME_plans\n"
	        "  --plans SYM      the plan-set symbol in --lib (default NAME_plans for libNAME.so; --device\n"
	        "                   also needs the GPU plans beside it, NAME_gpu_plans)\n"
	        "  --device [GPU]   device buffers: allreduce through --lib's coll_gpu_allreduce (a library of a\n"
	        "                   `transport cuda` or `transport nccl` cluster) on CUDA device GPU (an index\n"
	        "                   in 0..2147483647; default: the rank modulo the device count); on nccl\n"
	        "                   ncclAllReduce is timed as well, as the baseline (nccl columns: its time,\n"
	        "                   busbw, and its time / ours)\n"
	        "  --memcpy         time plain memcpy (the physical reference; one process)\n"
	        "what:\n"
	        "  -t, --collective COLL  allreduce (default when the files have one, else their first\n"
	        "                   algorithm's collective), reduce_scatter, allgather, broadcast, reduce, alltoall\n"
	        "  -d, --datatype DTYPE  int8 uint8 int32 uint32 int64 uint64 fp16 bf16 fp32 fp64, a comma list,\n"
	        "                   or all (default fp32)\n"
	        "  -o, --op OP      sum prod min max, a comma list, or all (default sum)\n"
	        "  -r, --root R     root of broadcast and reduce (0..65535 and below the rank count; default 0)\n"
	        "  --inplace        in-place calls (default out-of-place)\n"
	        "sizes (bytes of the full buffer, 0..1e18; units K M G = KiB MiB GiB, KB MB GB = 10^3.., B):\n"
	        "  -b, --minbytes MIN  the smallest size (default 1K)\n"
	        "  -e, --maxbytes MAX  the largest size (default 64M)\n"
	        "  -f, --stepfactor FACTOR  multiply by FACTOR (a number in (1, 1000000]; default 2)\n"
	        "  -i, --stepbytes STEP  add STEP bytes instead (1..1e18)\n"
	        "  --counts LIST    element counts as the call takes them (comma list of 0..1e18, units\n"
	        "                   allowed), not -b/-e\n"
	        "timing and checking:\n"
	        "  -n, --iters N    timed calls per size (0..2147483647, default 20; 0: none), as nccl-tests'\n"
	        "                   -n: the rank count is collrun's -np\n"
	        "  -w, --warmup_iters WARMUP  untimed calls first (0..2147483647, default 5)\n"
	        "  --iter-bytes B   fewer iterations for big sizes: at most B/size (at least 2; 0..1e18,\n"
	        "                   default 0: no limit)\n"
	        "  -c, --check      check every element against a reference reduction (#wrong column;\n"
	        "                   nccl-tests' -c 1 and -c 0 too)\n"
	        "  --timeout S      the communicator's inactivity timeout, seconds in (0, 1000000] (default:\n"
	        "                   COLL_TIMEOUT, else 10; COLL_TIMEOUT=-1 waits forever)\n"
	        "rails (several networks at once; runtime/transport/rails/README.md):\n"
	        "  --rails SPEC     run on these rails, e.g. tcp:eth0,tcp:eth1 (as COLL_RAILS); rank 0 then\n"
	        "                   prints each rail's share of the bytes, its latency and measured rate,\n"
	        "                   failovers and rejoins, and the data-length table\n"
	        "  --policy SPEC    how messages use them, e.g. cold=auto,split=throughput,failover=200\n"
	        "                   (as COLL_POLICY; over the plan set's policy)\n"
	        "stragglers:\n"
	        "  --straggler R    rank R (0..65535 and below the rank count) sleeps --delay MS before every\n"
	        "                   collective (emulated straggler) and, unless the plan set says `straggler\n"
	        "                   auto`, is declared the straggler, so StragglAR runs with R in its straggler\n"
	        "                   role; with it fixed (no --straggler-move/-stop) every timed call starts\n"
	        "                   from a barrier and rows add the time from the others' and from the\n"
	        "                   straggler's arrival\n"
	        "  --delay MS       the emulated straggler's delay in milliseconds (0..3600000, default 10)\n"
	        "  --straggler-move K  after every K calls (1..2147483647) the emulated straggler moves to the\n"
	        "                   next rank\n"
	        "  --straggler-stop K  after K calls (1..2147483647) nobody is delayed any more\n"
	        "  --trace-straggler  print, per call, the emulated and the detected straggler and the\n"
	        "                   algorithm the call ran\n"
	        "tuning (runtime/README.md, \"Choosing by measurement\"):\n"
	        "  --tune FILE      measure every algorithm of the files (or --lib) for every collective (or\n"
	        "                   -t's) at every size of -b/-e/-f, keep the fastest per size, and write\n"
	        "                   them to FILE (a tuning file: COLL_TUNING=FILE, collc build --tuning)\n"
	        "  --reps R         repetitions per candidate and size, interleaved, the median kept (1..1000,\n"
	        "                   default 5)\n"
	        "  --mpi            with --tune under mpirun: the MPI library's own collective is a candidate\n"
	        "                   too, `mpi` (where it wins, the MPI layer passes calls to MPI)\n"
	        "output:\n"
	        "  --csv            machine-readable rows (CSV) instead of the table\n"
	        "  --json           machine-readable rows (JSON) instead of the table\n");
}

/* --- parsing of flags ---------------------------------------------------------- */

/* Every numeric flag's value is all of its text, a number of the flag's
 * kind in its range (as collc's flags are, codegen/cmd/cmd_flags.c): no
 * blank before or after it (a quoting mistake), no trailing text, nothing
 * beyond the type.  Each reader returns 0, or -1 for the caller's usage
 * error, which names the flag, the value and the range. */

static int has_outer_blank(const char *s)
{
	size_t len = strlen(s);
	return len && (isspace((unsigned char)s[0]) || isspace((unsigned char)s[len - 1]));
}

/* A size or count with a unit of the one table (units.def: B, KB MB GB,
 * KiB MiB GiB, nccl-tests' K M G, Ki Mi Gi for counts: "16Mi") or none:
 * a whole number below 1e18. */
static int parse_size(const char *s, uint64_t *out)
{
	double b;
	bool given;
	link_error err;
	if (has_outer_blank(s) || units_read(UNIT_SIZE, "size", NULL, s, &b, &given, &err) || b < 0 || b > 1e18 ||
	    b != floor(b))
		return -1;
	*out = (uint64_t)b;
	return 0;
}

/* A plain decimal number (link_parse_number: strtod alone would also take
 * "inf", "nan" and hex) in lo..hi. */
static int parse_real(const char *s, double lo, double hi, double *out)
{
	double x;
	link_error err;
	if (has_outer_blank(s) || link_parse_number(s, &x, &err) || !(x >= lo && x <= hi))
		return -1;
	*out = x;
	return 0;
}

int cb_is_number(const char *s)
{
	char *end;
	strtod(s, &end);
	return end != s && *end == 0;
}

/* "int8 uint8 ... fp64, or all": what -d (or -o) takes, from the tables. */
static const char *names_of(const char *(*name)(int), int n, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " " : "", name(i));
	if (at < len)
		snprintf(buf + at, len - at, ", or all");
	return buf;
}
static const char *dtype_name(int d) { return coll_dtype_name((coll_dtype)d); }
static const char *op_name(int o) { return coll_op_name((coll_op)o); }

static void parse_dtypes(const char *s)
{
	opt.ndts = 0;
	if (strcmp(s, "all") == 0) {
		for (int d = 0; d < COLL_NDTYPES; d++)
			opt.dts[opt.ndts++] = (coll_dtype)d;
		return;
	}
	char buf[256], names[256];
	snprintf(buf, sizeof buf, "%s", s);
	for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int found = coll_dtype_from_name(t);
		if (found < 0)
			cb_usage_error("unknown dtype '%s' for -d (%s)", t,
			               names_of(dtype_name, COLL_NDTYPES, names, sizeof names));
		if (opt.ndts == MAXLIST)
			cb_usage_error("too many dtypes for -d");
		opt.dts[opt.ndts++] = (coll_dtype)found;
	}
	if (!opt.ndts)
		cb_usage_error("empty dtype list for -d");
}

static void parse_ops(const char *s)
{
	opt.nops = 0;
	if (strcmp(s, "all") == 0) {
		for (int o = 0; o < COLL_NOPS; o++)
			opt.ops[opt.nops++] = (coll_op)o;
		return;
	}
	char buf[256], names[128];
	snprintf(buf, sizeof buf, "%s", s);
	for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int found = coll_op_from_name(t);
		if (found < 0)
			cb_usage_error("unknown op '%s' for -o (%s)", t, names_of(op_name, COLL_NOPS, names, sizeof names));
		if (opt.nops == MAXLIST)
			cb_usage_error("too many ops for -o");
		opt.ops[opt.nops++] = (coll_op)found;
	}
	if (!opt.nops)
		cb_usage_error("empty op list for -o");
}

static int parse_kind(const char *s, coll_kind *k)
{
	int i = pl_kind_by_name(s);
	if (i < 0)
		return -1;
	*k = (coll_kind)i;
	return 0;
}

static long long int_arg(const char *flag, const char *s, long long lo, long long hi)
{
	long long v;
	if (units_parse_int(s, lo, hi, &v))   /* an optional sign, then digits; ERANGE is out of range */
		cb_usage_error("bad value '%s' for %s (expected an integer in %lld..%lld)", s, flag, lo, hi);
	return v;
}

/* -f's and --stepfactor's: collc's range of sweep factors */
static double factor_arg(const char *flag, const char *s)
{
	double v;
	if (parse_real(s, 1, 1e6, &v) || v == 1)
		cb_usage_error("bad factor '%s' for %s (expected a number in (1, 1000000])", s, flag);
	return v;
}

/* Rank-valued flags: ranks are below 65536 (the runtime's wire header);
 * the job's rank count is checked once it is known. */
#define MAXRANK 65535
/* Iteration counts: within an int, far beyond any run. */
#define MAXCOUNT 2147483647LL

/* lo: 0, or 1 for a size that must be positive */
static uint64_t size_arg(const char *flag, const char *s, int lo)
{
	uint64_t v;
	if (parse_size(s, &v) || v < (uint64_t)lo)
		cb_usage_error("bad size '%s' for %s (expected bytes in %d..1e18, e.g. 8, 1K, 64MiB, 1GB)", s, flag, lo);
	return v;
}

void cb_parse_args(int argc, char **argv)
{
	opt.minb = 1024, opt.maxb = 64 << 20, opt.factor = 2;
	opt.iters = 20, opt.warmup = 5;
	opt.kind = COLL_ALLREDUCE;
	opt.dts[0] = COLL_FLOAT32, opt.ndts = 1;
	opt.ops[0] = COLL_SUM, opt.nops = 1;
	opt.straggler = -1, opt.delay_ms = 10;
	opt.gpu = -1;
	opt.reps = 5;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
#define NEXT() (i + 1 < argc ? argv[++i] : (cb_usage_error("%s needs a value", a), ""))
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			if (out_rank)
				usage(stdout);
			exit(0);
		} else if (strcmp(a, "-f") == 0) {
			/* nccl-tests' factor when it is a number; else a file when it
			 * looks like one (FILE.coll) or is one; else a bad factor,
			 * which collc show would otherwise report as a missing file */
			const char *v = NEXT();
			double x;
			size_t len = strlen(v);
			if (link_parse_number(v, &x, NULL) == 0 && !has_outer_blank(v)) {
				opt.factor = factor_arg(a, v);
				opt.stepb = 0;
			} else if ((len > 5 && strcmp(v + len - 5, ".coll") == 0) || access(v, F_OK) == 0) {
				if (opt.nfiles < 32)
					opt.files[opt.nfiles++] = v;
			} else {
				cb_usage_error("bad value '%s' for -f (expected a factor in (1, 1000000], or a .coll file)", v);
			}
		} else if (strcmp(a, "--file") == 0) {
			if (opt.nfiles < 32)
				opt.files[opt.nfiles++] = NEXT();
		} else if (strcmp(a, "--stepfactor") == 0) {
			opt.factor = factor_arg(a, NEXT());
		} else if (strcmp(a, "-i") == 0 || strcmp(a, "--stepbytes") == 0) {
			opt.stepb = size_arg(a, NEXT(), 1);
		} else if (strcmp(a, "-b") == 0 || strcmp(a, "--minbytes") == 0) {
			opt.minb = size_arg(a, NEXT(), 0);
		} else if (strcmp(a, "-e") == 0 || strcmp(a, "--maxbytes") == 0) {
			opt.maxb = size_arg(a, NEXT(), 0);
		} else if (strcmp(a, "--counts") == 0) {
			char buf[1024];
			const char *v = NEXT();
			snprintf(buf, sizeof buf, "%s", v);
			opt.ncounts = 0;
			for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (opt.ncounts == 64)
					cb_usage_error("too many counts for --counts (at most 64)");
				if (parse_size(t, &opt.counts[opt.ncounts]))
					cb_usage_error("bad count '%s' for --counts (expected counts in 0..1e18, e.g. "
					               "0,7,1000003,16Mi)", t);
				opt.ncounts++;
			}
			if (!opt.ncounts)
				cb_usage_error("bad value '%s' for --counts (expected a comma list of counts in 0..1e18)", v);
		} else if (strcmp(a, "-a") == 0 || strcmp(a, "--algo") == 0) {
			opt.algo = NEXT();
		} else if (strcmp(a, "-D") == 0) {
			if (opt.ndefs < 32)
				opt.defs[opt.ndefs++] = NEXT();
		} else if (strcmp(a, "--lib") == 0) {
			opt.lib = NEXT();
		} else if (strcmp(a, "--plans") == 0) {
			opt.sym = NEXT();
		} else if (strcmp(a, "--device") == 0) {
			opt.device = 1;
			const char *g = i + 1 < argc ? argv[i + 1] : "";
			if (isdigit((unsigned char)g[*g == '-' || *g == '+']))
				/* the optional GPU index: what starts as a number (signed
				 * too: "-1" is a bad index, not an unknown option) */
				opt.gpu = (int)int_arg(a, argv[++i], 0, INT_MAX);
		} else if (strcmp(a, "-t") == 0 || strcmp(a, "--collective") == 0) {
			const char *v = NEXT();
			if (parse_kind(v, &opt.kind))
				cb_usage_error("unknown collective '%s' for -t (allreduce, reduce_scatter, allgather, broadcast, "
				               "reduce)", v);
			opt.kind_set = 1;
		} else if (strcmp(a, "-d") == 0 || strcmp(a, "--datatype") == 0) {
			parse_dtypes(NEXT());
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--op") == 0) {
			parse_ops(NEXT());
		} else if (strcmp(a, "-n") == 0 || strcmp(a, "--iters") == 0) {
			opt.iters = (long)int_arg(a, NEXT(), 0, MAXCOUNT);
		} else if (strcmp(a, "-w") == 0 || strcmp(a, "--warmup_iters") == 0) {
			opt.warmup = (long)int_arg(a, NEXT(), 0, MAXCOUNT);
		} else if (strcmp(a, "--iter-bytes") == 0) {
			opt.iter_bytes = size_arg(a, NEXT(), 0);
		} else if (strcmp(a, "-c") == 0 || strcmp(a, "--check") == 0) {
			opt.check = 1;
			if (i + 1 < argc && (strcmp(argv[i + 1], "0") == 0 || strcmp(argv[i + 1], "1") == 0))
				opt.check = atoi(argv[++i]);   /* nccl-tests spelling: -c 1 */
		} else if (strcmp(a, "--root") == 0 || strcmp(a, "-r") == 0) {
			opt.root = (int)int_arg(a, NEXT(), 0, MAXRANK);
		} else if (strcmp(a, "--inplace") == 0) {
			opt.inplace = 1;
		} else if (strcmp(a, "--csv") == 0) {
			opt.csv = 1;
		} else if (strcmp(a, "--json") == 0) {
			opt.json = 1;
		} else if (strcmp(a, "--memcpy") == 0) {
			opt.do_memcpy = 1;
		} else if (strcmp(a, "--rails") == 0) {
			opt.rails = NEXT();
		} else if (strcmp(a, "--policy") == 0) {
			opt.policy = NEXT();
		} else if (strcmp(a, "--timeout") == 0) {
			/* seconds; the runtime keeps milliseconds in an int64, and
			 * COLL_TIMEOUT=-1 is the way to wait forever */
			const char *v = NEXT();
			if (parse_real(v, 0, 1e6, &opt.timeout) || opt.timeout == 0)
				cb_usage_error("bad value '%s' for --timeout (expected seconds in (0, 1000000])", v);
		} else if (strcmp(a, "--straggler") == 0) {
			opt.straggler = (int)int_arg(a, NEXT(), 0, MAXRANK);
		} else if (strcmp(a, "--delay") == 0) {
			/* milliseconds, at most an hour: the sleep converts to a time_t */
			const char *v = NEXT();
			if (parse_real(v, 0, 3600000, &opt.delay_ms))
				cb_usage_error("bad value '%s' for --delay (expected milliseconds in 0..3600000)", v);
		} else if (strcmp(a, "--straggler-move") == 0) {
			opt.straggler_move = (long)int_arg(a, NEXT(), 1, MAXCOUNT);
		} else if (strcmp(a, "--straggler-stop") == 0) {
			opt.straggler_stop = (long)int_arg(a, NEXT(), 1, MAXCOUNT);
		} else if (strcmp(a, "--tune") == 0) {
			opt.tune = NEXT();
		} else if (strcmp(a, "--mpi") == 0) {
			opt.tune_mpi = 1;
		} else if (strcmp(a, "--reps") == 0) {
			opt.reps = (long)int_arg(a, NEXT(), 1, 1000);
		} else if (strcmp(a, "--trace-straggler") == 0) {
			opt.trace_straggler = 1;
		} else if (a[0] == '-' && a[1]) {
			cb_usage_error("unknown option '%s' (see collbench --help)", a);
		} else if (opt.nfiles < 32) {
			opt.files[opt.nfiles++] = a;
		}
#undef NEXT
	}
	if (opt.csv && opt.json)
		cb_usage_error("--csv and --json exclude each other");
	if (opt.device && opt.do_memcpy)
		cb_usage_error("--device and --memcpy exclude each other");
	if (opt.tune && (opt.device || opt.do_memcpy || opt.algo || opt.straggler >= 0))
		cb_usage_error("--tune measures every algorithm on host buffers: it excludes %s",
		               opt.device ? "--device" : opt.do_memcpy ? "--memcpy" : opt.algo ? "-a" : "--straggler");
	if (opt.tune_mpi && !opt.tune)
		cb_usage_error("--mpi goes with --tune");
	if (opt.tune && !*opt.tune)
		cb_usage_error("--tune needs a file name");
	if (opt.device && !opt.lib)
		cb_usage_error("--device needs --lib DIR/libNAME.so, a library that collc built from a cluster with "
		               "`transport cuda` or `transport nccl`");
	if (!opt.do_memcpy && !opt.lib && !opt.nfiles)
		cb_usage_error("no plans: give a .coll file (-f FILE) or a library (--lib DIR/libNAME.so); see --help");
	if (opt.lib && opt.nfiles)
		cb_usage_error("give either .coll files or --lib, not both");
	if (!opt.ncounts && opt.minb > opt.maxb)
		cb_usage_error("-b %llu is larger than -e %llu", (unsigned long long)opt.minb,
		               (unsigned long long)opt.maxb);
}
