/*
 * cmd_build.c - `collc build`: cluster file -> generated C -> library.
 *
 *   collc build CLUSTER.coll [FILE.coll...] -o DIR [--cluster NAME] [-v]
 *   (flags: cmd_flags.c)
 *
 * Evaluates and verifies every algorithm the cluster includes (cluster.c),
 * writes DIR/NAME.h and DIR/NAME_plans.c (emit_c.c), copies the runtime's
 * public headers beside them, and compiles DIR/libNAME.so and DIR/libNAME.a,
 * each holding the plans and all of libcollrt, so an application needs
 * only -IDIR -LDIR -lNAME.  The runtime is found where COLL_RUNTIME_LIB and
 * COLL_RUNTIME_INCLUDE say, else relative to the collc binary: in the
 * build tree (build/collc beside build/libcollrt.a, headers in
 * runtime/include), else in an install (PREFIX/bin/collc:
 * PREFIX/lib/libcollrt.a, PREFIX/include/coll).  The runtime's plugins
 * (libcollrt_mpi.so, libcollrt_ibverbs.so, beside libcollrt.a or in its
 * coll/ directory) are copied into DIR when they exist: libcollrt looks for
 * them beside the library that holds it, so the library bootstraps under
 * mpirun (or opens transport ibverbs) with no COLL_*_PLUGIN, wherever DIR
 * goes, with plugins built against the very libcollrt it links.  The C compiler is $CC, else cc.
 *
 * A `transport nccl` or `transport cuda` cluster also gets DIR/NAME_gpu.h
 * and DIR/NAME_gpu.cu (emit_cuda.c); nvcc compiles that and the device
 * executor (coll_gpu.cu: at COLL_RUNTIME_GPU, else runtime/transport/gpu in the
 * source tree, else PREFIX/share/coll/gpu) with every warning an error, and the library links the
 * CUDA runtime (and NCCL for nccl).  nvcc is $CUDA_HOME/bin/nvcc, else the
 * one on PATH; the CUDA libraries are found from nvcc's own prefix, NCCL at
 * $NCCL_HOME, else there too; never at a fixed path.  The device
 * architecture is $COLL_CUDA_ARCH (an -arch value such as sm_90 or native),
 * else sm_80, whose PTX also runs on newer GPUs.
 *
 * A collc from a sanitizer build (`make SAN=1`) finds that build's
 * libcollrt.a, which calls into the sanitizers' runtimes, so it links
 * them into every library it makes (COLL_RT_LIBS, set by the Makefile);
 * as libraries, not -fsanitize, because nvcc links GPU libraries and takes
 * -l but not the compiler driver's -fsanitize.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "choose.h"
#include "cluster.h"
#include "linkmodel.h"
#include "emit.h"
#include "cmd.h"
#include "cmd_flags.h"
#include "subproc.h"

static bool verbose;

#ifndef COLL_RT_LIBS
#define COLL_RT_LIBS ""
#endif

/* What libcollrt.a needs beside -lm: the sanitizers' runtimes in a
 * sanitizer build (COLL_RT_LIBS, space-separated), nothing otherwise. */
static void rt_libs(subproc_argv *a)
{
	const char *p = COLL_RT_LIBS;
	while (*p) {
		while (*p == ' ')
			p++;
		size_t n = strcspn(p, " ");
		if (n)
			subproc_argf(a, "%.*s", (int)n, p);
		p += n;
	}
}

/* The directory holding the running collc. */
static void exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(buf, len, ".");
}

static bool exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
	char buf[65536];
	size_t n;
	int rc = in && out ? 0 : -1;
	while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			rc = -1;
	if (in)
		fclose(in);
	if (out && fclose(out) != 0)
		rc = -1;
	if (rc)
		diag_tool_error("cannot copy '%s' to '%s': %s", from, to, strerror(errno));
	return rc;
}

/* The runtime archive and public headers: $COLL_RUNTIME_LIB and
 * $COLL_RUNTIME_INCLUDE where set, else the build tree's (exedir holds
 * libcollrt.a), else an install's (exedir is PREFIX/bin).  Each is looked
 * for relative to the binary, so a DESTDIR or moved tree works too. */
static void find_runtime(const char *exedir, char *lib, size_t ll, char *inc, size_t il)
{
	const char *el = getenv("COLL_RUNTIME_LIB"), *ei = getenv("COLL_RUNTIME_INCLUDE");
	char built[PATH_MAX + 32];
	snprintf(built, sizeof built, "%s/libcollrt.a", exedir);
	bool tree = exists(built);
	if (el && *el)
		snprintf(lib, ll, "%s", el);
	else
		snprintf(lib, ll, tree ? "%s/libcollrt.a" : "%s/../lib/libcollrt.a", exedir);
	if (ei && *ei)
		snprintf(inc, il, "%s", ei);
	else
		snprintf(inc, il, tree ? "%s/../runtime/include" : "%s/../include/coll", exedir);
}

/* libcollrt's plugins (runtime/plugin.c), copied beside each library. */
static const char *const plugins[] = { "libcollrt_mpi.so", "libcollrt_ibverbs.so" };

/* Plugin `name` that goes with the archive `lib`: beside it (the build
 * tree) or in its coll/ directory (an install: PREFIX/lib/coll).  False
 * when there is none (MPI was not built): the library then needs
 * COLL_MPI_PLUGIN under mpirun, as libcollrt says when it gets there. */
static bool find_plugin(const char *lib, const char *name, char *out, size_t len)
{
	const char *slash = strrchr(lib, '/');
	int dl = slash ? (int)(slash - lib) : 1;
	const char *d = slash ? lib : ".";
	snprintf(out, len, "%.*s/%s", dl, d, name);
	if (exists(out))
		return true;
	snprintf(out, len, "%.*s/coll/%s", dl, d, name);
	return exists(out);
}

/* Where the CUDA build of a GPU cluster finds its tools. */
typedef struct {
	char nvcc[PATH_MAX];
	char cudalib[PATH_MAX];     /* holds libcudart.so */
	char ncclinc[PATH_MAX];     /* holds nccl.h (nccl only) */
	char nccllib[PATH_MAX];     /* holds libnccl.so (nccl only) */
	char gpusrc[PATH_MAX + 64]; /* runtime/transport/gpu */
} cuda_tools;

/* The first of dir/sub for sub in subs (glob patterns) holding file. */
static bool find_in(char *out, size_t len, const char *dir, const char *const *subs, int nsubs, const char *file)
{
	for (int i = 0; i < nsubs; i++) {
		char pat[PATH_MAX * 2];
		snprintf(pat, sizeof pat, "%s/%s", dir, subs[i]);
		glob_t gl;
		if (glob(pat, 0, NULL, &gl) != 0)
			continue;
		for (size_t j = 0; j < gl.gl_pathc; j++) {
			char p[PATH_MAX * 2];
			snprintf(p, sizeof p, "%s/%s", gl.gl_pathv[j], file);
			if (exists(p)) {
				snprintf(out, len, "%s", gl.gl_pathv[j]);
				globfree(&gl);
				return true;
			}
		}
		globfree(&gl);
	}
	return false;
}

static int find_cuda(const cluster_desc *c, const char *exedir, cuda_tools *t)
{
	const char *home = getenv("CUDA_HOME");
	t->nvcc[0] = '\0';
	if (home && *home) {
		snprintf(t->nvcc, sizeof t->nvcc, "%s/bin/nvcc", home);
		if (access(t->nvcc, X_OK) != 0) {
			diag_tool_error("transport %s needs nvcc, but CUDA_HOME=%s has no bin/nvcc",
				c->target->name, home);
			return -1;
		}
	} else {
		const char *path = getenv("PATH");
		char *copy = strdup(path ? path : ""), *save = NULL;
		for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			snprintf(t->nvcc, sizeof t->nvcc, "%s/nvcc", *d ? d : ".");
			if (access(t->nvcc, X_OK) == 0)
				break;
			t->nvcc[0] = '\0';
		}
		free(copy);
		if (!t->nvcc[0]) {
			diag_tool_error("transport %s needs nvcc (the CUDA compiler), which is not on PATH "
				"and CUDA_HOME is not set; install the CUDA toolkit or set CUDA_HOME", c->target->name);
			return -1;
		}
	}
	/* the toolkit prefix from nvcc's real location: bin/nvcc -> prefix */
	char real[PATH_MAX], prefix[PATH_MAX];
	if (!realpath(t->nvcc, real))
		snprintf(real, sizeof real, "%s", t->nvcc);
	snprintf(prefix, sizeof prefix, "%s", real);
	for (int i = 0; i < 2; i++) {
		char *sl = strrchr(prefix, '/');
		if (sl)
			*sl = '\0';
	}
	static const char *const libs[] = { "lib64", "lib", "targets/*/lib" };
	static const char *const incs[] = { "include", "targets/*/include" };
	if (!find_in(t->cudalib, sizeof t->cudalib, prefix, libs, 3, "libcudart.so")) {
		diag_tool_error("no libcudart.so under %s (lib64, lib, targets/*/lib), the prefix of %s",
			prefix, t->nvcc);
		return -1;
	}
	if (c->target->nccl) {
		const char *nh = getenv("NCCL_HOME");
		const char *where = nh && *nh ? nh : prefix;
		if (!find_in(t->ncclinc, sizeof t->ncclinc, where, incs, 2, "nccl.h") ||
		    !find_in(t->nccllib, sizeof t->nccllib, where, libs, 3, "libnccl.so")) {
			diag_tool_error("transport nccl needs NCCL (nccl.h and libnccl.so), not found under "
				"%s; set NCCL_HOME or use transport cuda", where);
			return -1;
		}
	}
	const char *gs = getenv("COLL_RUNTIME_GPU");
	char p[PATH_MAX * 2];
	if (gs && *gs) {
		snprintf(t->gpusrc, sizeof t->gpusrc, "%s", gs);
	} else {
		snprintf(t->gpusrc, sizeof t->gpusrc, "%s/../runtime/transport/gpu", exedir);
		snprintf(p, sizeof p, "%s/coll_gpu.cu", t->gpusrc);
		if (!exists(p))   /* an installed collc */
			snprintf(t->gpusrc, sizeof t->gpusrc, "%s/../share/coll/gpu", exedir);
	}
	snprintf(p, sizeof p, "%s/coll_gpu.cu", t->gpusrc);
	if (!exists(p)) {
		diag_tool_error("cannot find the device executor %s; set COLL_RUNTIME_GPU", p);
		return -1;
	}
	return 0;
}

/* Compile NAME_gpu.cu and the executor with nvcc, warnings as errors, and
 * link them with the plans and libcollrt into DIR/libNAME.so. */
static int build_gpu(const cluster_desc *c, const char *out, const char *lib, const cuda_tools *t)
{
	bool nccl = c->target->nccl;
	char from[PATH_MAX * 2], to[PATH_MAX * 2];
	const char *hdrs[] = { "coll_gpu.h", "coll_gpu_plan.h" };
	for (int i = 0; i < 2; i++) {
		snprintf(from, sizeof from, "%s/%s", t->gpusrc, hdrs[i]);
		snprintf(to, sizeof to, "%s/%s", out, hdrs[i]);
		if (copy_file(from, to) != 0)
			return -1;
	}
	const char *arch = getenv("COLL_CUDA_ARCH") && *getenv("COLL_CUDA_ARCH") ? getenv("COLL_CUDA_ARCH") : "sm_80";
	/* the two .cu files are independent and nvcc is slow: compile both at once */
	subproc_argv cu[2] = { { 0 } };
	const char *srcdir[2] = { t->gpusrc, out }, *base[2] = { "coll_gpu", c->name };
	for (int i = 0; i < 2; i++) {
		subproc_argv *a = &cu[i];
		subproc_arg(a, t->nvcc);
		subproc_arg(a, "-std=c++17");
		subproc_arg(a, "-O3");
		subproc_argf(a, "-arch=%s", arch);
		subproc_arg(a, "-Werror");
		subproc_arg(a, "all-warnings");
		subproc_arg(a, "-Xcompiler");
		subproc_arg(a, "-Wall,-Wextra,-Werror,-fPIC");
		subproc_argf(a, "-I%s", out);
		if (nccl) {
			subproc_arg(a, "-DCOLL_GPU_NCCL=1");
			subproc_argf(a, "-I%s", t->ncclinc);
		}
		subproc_arg(a, "-c");
		subproc_argf(a, "%s/%s%s.cu", srcdir[i], base[i], i ? "_gpu" : "");
		subproc_arg(a, "-o");
		subproc_argf(a, "%s/%s%s.o", out, base[i], i ? "_gpu" : "");
	}
	pid_t pid[2];
	int rc = 0;
	for (int i = 0; i < 2; i++)
		pid[i] = subproc_start(&cu[i], false, verbose);
	for (int i = 0; i < 2; i++)
		if (pid[i] < 0 || subproc_wait(pid[i], &cu[i]) != 0)
			rc = -1;
	subproc_argv_free(&cu[0]);
	subproc_argv_free(&cu[1]);
	if (rc != 0)
		return -1;
	subproc_argv a = { 0 };
	subproc_arg(&a, t->nvcc);
	subproc_arg(&a, "-shared");
	subproc_arg(&a, "-o");
	subproc_argf(&a, "%s/lib%s.so", out, c->name);
	subproc_argf(&a, "%s/%s_plans.o", out, c->name);
	subproc_argf(&a, "%s/%s_gpu.o", out, c->name);
	subproc_argf(&a, "%s/coll_gpu.o", out);
	subproc_arg(&a, "-Xlinker");
	subproc_arg(&a, "--whole-archive");
	subproc_arg(&a, lib);
	subproc_arg(&a, "-Xlinker");
	subproc_arg(&a, "--no-whole-archive");
	if (nccl) {
		subproc_argf(&a, "-L%s", t->nccllib);
		subproc_arg(&a, "-Xlinker");
		subproc_argf(&a, "-rpath,%s", t->nccllib);
		subproc_arg(&a, "-lnccl");
	}
	subproc_argf(&a, "-L%s", t->cudalib);
	subproc_arg(&a, "-Xlinker");
	subproc_argf(&a, "-rpath,%s", t->cudalib);
	subproc_arg(&a, "-cudart");
	subproc_arg(&a, "shared");
	subproc_arg(&a, "-lm");
	rt_libs(&a);
	rc = subproc_run(&a, false, verbose);
	subproc_argv_free(&a);
	return rc;
}

/* The summary lines of a cluster that reorders: the order chosen and what
 * it gains, or that it is chosen at init.  Nothing for one that does not
 * (its order is the identity, as it always was). */
void cmd_print_order(const libplan *c, const char *indent)
{
	const cluster_desc *d = c->d;
	char a[32], b[32], e[32];
	if (d->reorder == CLUSTER_REORDER_NONE)
		return;
	if (d->reorder == CLUSTER_REORDER_INIT) {
		printf("%srank order      probed and chosen at init for %s at %s (cached per host list)\n", indent,
		       c->algos[c->reorder_algo].label, link_fmt_size((double)c->reorder_bytes, a, sizeof a));
		return;
	}
	if (!c->perm) {
		printf("%srank order      identity (no order beats it)\n", indent);
		return;
	}
	printf("%srank order     ", indent);
	for (int i = 0; i < d->ranks; i++)
		printf(" %d", c->perm[i]);
	printf("  (schedule rank r on physical rank order[r])\n");
	printf("%s                reorder by cost for %s at %s: predicted %s -> %s, %.2fx", indent,
	       c->algos[c->reorder_algo].label, link_fmt_size((double)c->reorder_bytes, a, sizeof a),
	       link_fmt_time(c->t_identity, b, sizeof b), link_fmt_time(c->t_best, e, sizeof e),
	       c->t_best > 0 ? c->t_identity / c->t_best : 1.0);
	if (isfinite(c->sim_identity) && isfinite(c->sim_best) && c->sim_best > 0)
		printf(" (simulated %.2fx)", c->sim_identity / c->sim_best);
	printf("%s\n", c->optimal ? ", proven optimal" : "");
}

static void print_order(const libplan *c, const char *indent) { cmd_print_order(c, indent); }

static void print_auto(const libplan *c)
{
	static const struct { int k; const char *size; } at[] = {{20, "1 MiB"}, {26, "64 MiB"}, {32, "4 GiB"}};
	printf("  straggler       auto           %s once detected, when the delay exceeds",
	       c->algos[c->straggler_algo].label);
	for (int i = 0; i < 3; i++) {
		double d = c->crit[at[i].k];
		printf("%s ", i ? "," : "");
		if (!isfinite(d))
			printf("never");
		else if (d < 1e-3)
			printf("%.3g us", d * 1e6);
		else
			printf("%.3g ms", d * 1e3);
		printf(" (%s)", at[i].size);
	}
	printf("\n");
}

int cmd_build(int argc, char **argv)
{
	cmd_opts o;
	int prc = cmd_parse(argc, argv, CMD_BUILD, &o);
	if (prc) {
		cmd_free_opts(&o);
		return prc < 0 ? 0 : prc;
	}
	const char *out = o.out, *name = o.cluster;
	char **files = o.files;
	int nfiles = o.nfiles;
	verbose = o.verbose;
	int rc = 1;
	cluster_desc d;
	libplan c;
	tune_table *tuning = NULL;
	drv_prog *p = drv_load(nfiles, files);
	if (!p || cluster_check(p, name, &d) != 0)
		goto done;
	if (o.tuning) {
		link_error err;
		if (tune_read(o.tuning, &tuning, &err) != 0) {
			cmd_link_error(&err);
			goto free_desc;
		}
	}
	if (libplan_make(&d, tuning, &c) != 0)
		goto free_desc;

	char dir[PATH_MAX], lib[PATH_MAX + 64], inc[PATH_MAX + 64], plugin[PATH_MAX * 2];
	exe_dir(dir, sizeof dir);
	find_runtime(dir, lib, sizeof lib, inc, sizeof inc);
	if (!exists(lib) || !exists(inc)) {
		diag_tool_error("cannot find the runtime (%s, %s); build it with 'make' or set "
			"COLL_RUNTIME_LIB and COLL_RUNTIME_INCLUDE", lib, inc);
		goto free_cluster;
	}
	if (mkdir(out, 0777) != 0 && errno != EEXIST) {
		diag_tool_error("cannot create '%s': %s", out, strerror(errno));
		goto free_cluster;
	}
	bool gpu = d.target->gpu;
	cuda_tools tools;
	/* look for nvcc before writing anything, so its absence is the error */
	if (gpu && find_cuda(&d, dir, &tools) != 0)
		goto free_cluster;
	/* the host plans of a GPU target bootstrap (and serve host buffers)
	 * over libcollrt's own transports: its `host` transport */
	if (emit_c(&c, d.target->host, out, files[0]) != 0 || (gpu && emit_cuda(&c, out, files[0]) != 0))
		goto free_cluster;
	char from[PATH_MAX * 2], to[PATH_MAX * 2];
	/* the public headers, so that DIR alone is the include path */
	const char *hdrs[] = { "coll.h", "coll_plan.h", "coll_kinds.h", "coll_kinds.def", "coll_dtypes.def",
			       "coll_ops.def", "coll_splits.def" };
	for (size_t i = 0; i < sizeof hdrs / sizeof hdrs[0]; i++) {
		snprintf(from, sizeof from, "%s/%s", inc, hdrs[i]);
		snprintf(to, sizeof to, "%s/%s", out, hdrs[i]);
		if (copy_file(from, to) != 0)
			goto free_cluster;
	}
	for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++) {
		snprintf(to, sizeof to, "%s/%s", out, plugins[i]);
		if (find_plugin(lib, plugins[i], plugin, sizeof plugin) && copy_file(plugin, to) != 0)
			goto free_cluster;
	}
	const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	subproc_argv a = { 0 };
	/* the generated C must be warning-free; -Werror keeps it so */
	subproc_arg(&a, cc);
	subproc_arg(&a, "-std=c11");
	subproc_arg(&a, "-O2");
	subproc_arg(&a, "-Wall");
	subproc_arg(&a, "-Wextra");
	subproc_arg(&a, "-Werror");
	subproc_arg(&a, "-fPIC");
	subproc_argf(&a, "-I%s", out);
	subproc_arg(&a, "-c");
	subproc_argf(&a, "%s/%s_plans.c", out, d.name);
	subproc_arg(&a, "-o");
	subproc_argf(&a, "%s/%s_plans.o", out, d.name);
	int st = subproc_run(&a, false, verbose);
	subproc_argv_free(&a);
	if (st != 0)
		goto free_cluster;
	if (gpu) {
		st = build_gpu(&d, out, lib, &tools);
	} else {
		subproc_arg(&a, cc);
		subproc_arg(&a, "-shared");
		subproc_arg(&a, "-o");
		subproc_argf(&a, "%s/lib%s.so", out, d.name);
		subproc_argf(&a, "%s/%s_plans.o", out, d.name);
		subproc_arg(&a, "-Wl,--whole-archive");
		subproc_arg(&a, lib);
		subproc_arg(&a, "-Wl,--no-whole-archive");
		subproc_arg(&a, "-lm");
		rt_libs(&a);
		st = subproc_run(&a, false, verbose);
		subproc_argv_free(&a);
	}
	if (st != 0)
		goto free_cluster;
	snprintf(to, sizeof to, "%s/lib%s.a", out, d.name);
	unlink(to);
	if (copy_file(lib, to) != 0)
		goto free_cluster;
	/* the static library of a GPU cluster then also needs -lcudart (-lnccl) -lstdc++ */
	subproc_arg(&a, "ar");
	subproc_arg(&a, "rs");
	subproc_arg(&a, to);
	subproc_argf(&a, "%s/%s_plans.o", out, d.name);
	if (gpu) {
		subproc_argf(&a, "%s/%s_gpu.o", out, d.name);
		subproc_argf(&a, "%s/coll_gpu.o", out);
	}
	st = subproc_run(&a, true, verbose);   /* quiet: ar's "creating" notes */
	subproc_argv_free(&a);
	if (st != 0)
		goto free_cluster;
	printf("%s: %d ranks, transport %s, %d algorithm%s -> %s/lib%s.so, %s/lib%s.a, %s/%s%s.h\n", d.name, d.ranks,
	       d.target->name, c.nalgos, c.nalgos == 1 ? "" : "s", out, d.name, out, d.name, out, d.name,
	       gpu ? "_gpu" : "");
	for (int i = 0; i < c.nchoices; i++) {
		const lib_choice *ch = &c.choices[i];
		bool first = i == 0 || c.choices[i - 1].kind != ch->kind;
		if (ch->max_bytes == UINT64_MAX)
			printf("  %-15s %-14s %s sizes\n", ir_kind_names[ch->kind], c.algos[ch->algo].label,
			       first ? "all" : "larger");
		else
			printf("  %-15s %-14s up to %llu bytes\n", ir_kind_names[ch->kind], c.algos[ch->algo].label,
			       (unsigned long long)ch->max_bytes);
	}
	if (d.straggler == CLUSTER_STRAGGLER_AUTO)
		print_auto(&c);
	else if (d.straggler != CLUSTER_STRAGGLER_NONE)
		printf("  straggler       rank %-9d swapped into the straggler role\n", d.straggler);
	print_order(&c, "  ");
	if (tuning)
		printf("  size tables of the tuned collectives from %s (measured %s on %s%s, over %s)\n", o.tuning,
		       tuning->date, tuning->hosts[0], tuning->nhosts > 1 ? " ..." : "", tuning->transport);
	rc = 0;
free_cluster:
	libplan_free(&c);
free_desc:
	tune_free(tuning);
	cluster_desc_free(&d);
done:
	drv_free(p);
	cmd_free_opts(&o);
	return rc;
}
