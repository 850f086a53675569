/*
 * cmd_build.c - `collc build`: cluster file -> generated C -> library.
 *
 *   collc build CLUSTER.coll [FILE.coll...] -o DIR [--cluster NAME] [-v]
 *
 * Evaluates and verifies every algorithm the cluster includes (cluster.c),
 * writes DIR/NAME.h and DIR/NAME_plans.c (emit_c.c), copies the runtime's
 * public headers beside them, and compiles DIR/libNAME.so and DIR/libNAME.a,
 * each holding the plans and all of libcollrt, so an application needs
 * only -IDIR -LDIR -lNAME.  The runtime is found next to the collc binary
 * (the build directory: libcollrt.a; the source tree: runtime/include), or
 * where COLL_RUNTIME_LIB and COLL_RUNTIME_INCLUDE say.  The C compiler is
 * $CC, else cc.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "cmd_build.h"

static bool verbose;

static int run(const char *cmd)
{
	if (verbose)
		fprintf(stderr, "%s\n", cmd);
	int st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "collc: error: command failed: %s\n", cmd);
		return -1;
	}
	return 0;
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
		fprintf(stderr, "collc: error: cannot copy '%s' to '%s': %s\n", from, to, strerror(errno));
	return rc;
}

int cmd_build(int argc, char **argv)
{
	const char *out = NULL, *name = NULL;
	char **files = calloc(argc, sizeof *files);
	int nfiles = 0;
	verbose = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(argv[i], "--cluster") == 0 && i + 1 < argc)
			name = argv[++i];
		else if (strcmp(argv[i], "-v") == 0)
			verbose = true;
		else if (strcmp(argv[i], "--help") == 0) {
			puts("usage: collc build CLUSTER.coll [FILE.coll...] -o DIR [--cluster NAME] [-v]\n"
			     "  verify every algorithm the cluster includes, then write DIR/NAME.h,\n"
			     "  DIR/NAME_plans.c and compile DIR/libNAME.so and DIR/libNAME.a");
			free(files);
			return 0;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "collc: error: unknown or incomplete option '%s' for 'build'\n", argv[i]);
			free(files);
			return 2;
		} else
			files[nfiles++] = argv[i];
	}
	if (!nfiles || !out) {
		fprintf(stderr, "collc: error: build needs a cluster file and -o DIR\n");
		free(files);
		return 2;
	}
	int rc = 1;
	cluster c;
	drv_prog *p = drv_load(nfiles, files);
	if (!p || cluster_eval(p, name, &c) != 0)
		goto done;

	char dir[PATH_MAX], lib[PATH_MAX + 64], inc[PATH_MAX + 64];
	exe_dir(dir, sizeof dir);
	snprintf(lib, sizeof lib, "%s", getenv("COLL_RUNTIME_LIB") ? getenv("COLL_RUNTIME_LIB") : "");
	if (!lib[0])
		snprintf(lib, sizeof lib, "%s/libcollrt.a", dir);
	snprintf(inc, sizeof inc, "%s", getenv("COLL_RUNTIME_INCLUDE") ? getenv("COLL_RUNTIME_INCLUDE") : "");
	if (!inc[0])
		snprintf(inc, sizeof inc, "%s/../runtime/include", dir);
	if (!exists(lib) || !exists(inc)) {
		fprintf(stderr, "collc: error: cannot find the runtime (%s, %s); build it with 'make' or set "
			"COLL_RUNTIME_LIB and COLL_RUNTIME_INCLUDE\n", lib, inc);
		goto free_cluster;
	}
	if (mkdir(out, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "collc: error: cannot create '%s': %s\n", out, strerror(errno));
		goto free_cluster;
	}
	if (emit_c(&c, out, files[0]) != 0)
		goto free_cluster;
	char from[PATH_MAX * 2], to[PATH_MAX * 2];
	const char *hdrs[] = { "coll.h", "coll_plan.h" };
	for (int i = 0; i < 2; i++) {
		snprintf(from, sizeof from, "%s/%s", inc, hdrs[i]);
		snprintf(to, sizeof to, "%s/%s", out, hdrs[i]);
		if (copy_file(from, to) != 0)
			goto free_cluster;
	}
	const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	char cmd[PATH_MAX * 4];
	/* the generated C must be warning-free; -Werror keeps it so */
	snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -Wall -Wextra -Werror -fPIC -I'%s' -c '%s/%s_plans.c' -o '%s/%s_plans.o'",
		 cc, out, out, c.name, out, c.name);
	if (run(cmd) != 0)
		goto free_cluster;
	snprintf(cmd, sizeof cmd, "%s -shared -o '%s/lib%s.so' '%s/%s_plans.o' -Wl,--whole-archive '%s' "
		 "-Wl,--no-whole-archive -lm", cc, out, c.name, out, c.name, lib);
	if (run(cmd) != 0)
		goto free_cluster;
	snprintf(to, sizeof to, "%s/lib%s.a", out, c.name);
	unlink(to);
	if (copy_file(lib, to) != 0)
		goto free_cluster;
	snprintf(cmd, sizeof cmd, "ar rs '%s/lib%s.a' '%s/%s_plans.o' 2>/dev/null", out, c.name, out, c.name);
	if (run(cmd) != 0)
		goto free_cluster;
	printf("%s: %d ranks, transport %s, %d algorithm%s -> %s/lib%s.so, %s/lib%s.a, %s/%s.h\n", c.name, c.ranks,
	       c.transport, c.nalgos, c.nalgos == 1 ? "" : "s", out, c.name, out, c.name, out, c.name);
	for (int i = 0; i < c.nchoices; i++) {
		const cluster_choice *ch = &c.choices[i];
		if (ch->max_bytes == UINT64_MAX)
			printf("  %-15s %-14s larger sizes\n", ir_kind_names[ch->kind], c.algos[ch->algo].label);
		else
			printf("  %-15s %-14s up to %llu bytes\n", ir_kind_names[ch->kind], c.algos[ch->algo].label,
			       (unsigned long long)ch->max_bytes);
	}
	rc = 0;
free_cluster:
	cluster_free(&c);
done:
	drv_free(p);
	free(files);
	return rc;
}
