/*
 * rt_suite.c - drives the runtime's multi-process tests.
 *
 *   rt_suite -build DIR [-quick] [-v]
 *
 * Runs DIR/collrun with DIR/tests/rt_coll over shm and tcp for several
 * rank counts, plus the fault tests (killed rank, mismatched counts, wrong
 * secret) and collrun's own behaviour (exit codes, grace kill, timeout),
 * checking exit statuses and output.  Prints one line per test ("rt-N.M
 * ok" or "rt-N.M FAILED: why" followed by the output's tail) and ends with
 * "N passed, N failed"; exits non-zero if anything failed.  -quick keeps
 * it to a few seconds.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

static const char *build = "build";
static int passed, failed, verbose;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run a shell command, capturing stdout+stderr; returns exit code. */
static int run(const char *cmd, char **out, double *secs)
{
	char full[2048];
	snprintf(full, sizeof full, "%s 2>&1", cmd);
	double t0 = now();
	FILE *p = popen(full, "r");
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	if (!p || !buf) {
		*out = buf;
		return -1;
	}
	size_t got;
	while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += got;
		if (cap - len < 4096)
			buf = realloc(buf, cap *= 2);
	}
	buf[len] = 0;
	int st = pclose(p);
	*secs = now() - t0;
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int count(const char *hay, const char *needle)
{
	int k = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		k++;
	return k;
}

static void report(const char *name, int ok, const char *out, const char *fmt, ...)
{
	if (ok) {
		passed++;
		printf("%s ok\n", name);
		if (verbose)
			fputs(out, stdout);
		return;
	}
	failed++;
	va_list ap;
	va_start(ap, fmt);
	printf("%s FAILED: ", name);
	vprintf(fmt, ap);
	va_end(ap);
	size_t l = strlen(out);
	printf("\n--- output (tail) ---\n%s\n---\n", l > 3000 ? out + l - 3000 : out);
}

/* A run of rt_coll that every rank must pass. */
static void t_pass(const char *name, const char *env, int np, const char *transport, const char *args)
{
	char cmd[1024], *out;
	double s;
	snprintf(cmd, sizeof cmd, "%s %s/collrun -np %d --timeout 120 --transport %s %s/tests/rt_coll %s", env, build,
	         np, transport, build, args);
	int rc = run(cmd, &out, &s);
	int oks = count(out, " 0 failed");
	report(name, rc == 0 && oks == np && !strstr(out, "FAIL"), out, "%s: exit %d, %d of %d ranks passed (%.1f s)",
	       cmd, rc, oks, np, s);
	free(out);
}

int main(int argc, char **argv)
{
	int quick = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-build") && i + 1 < argc)
			build = argv[++i];
		else if (!strcmp(argv[i], "-quick"))
			quick = 1;
		else if (!strcmp(argv[i], "-v"))
			verbose = 1;
		else {
			fprintf(stderr, "usage: rt_suite -build DIR [-quick] [-v]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *tr[2] = {"shm", "tcp"};
	const int full_n[] = {1, 2, 3, 4, 5, 8}, quick_n[] = {2, 3};
	char name[64], cmd[1024], *out;
	double s;
	int rc;

	/* rt-1: correctness sweep; rt-2: tiny segments and slots (many
	 * messages, full windows); rt-3: 16Mi elements. */
	for (int t = 0; t < 2; t++) {
		const int *ns = quick ? quick_n : full_n;
		int nn = quick ? 2 : 6;
		for (int i = 0; i < nn; i++) {
			snprintf(name, sizeof name, "rt-1.%d", t * 10 + ns[i]);
			t_pass(name, "", ns[i], tr[t], quick ? "sweep -quick" : "sweep");
		}
		snprintf(name, sizeof name, "rt-2.%d", t + 1);
		t_pass(name, "COLL_SEG_BYTES=1000 COLL_SHM_SLOTS=2", quick ? 3 : 5, tr[t], quick ? "sweep -quick" : "sweep");
		if (!quick) {
			const int bn[] = {2, 3, 4, 5, 8};
			for (int i = 0; i < 5; i++) {
				snprintf(name, sizeof name, "rt-3.%d", t * 10 + bn[i]);
				t_pass(name, "", bn[i], tr[t], "big");
			}
		}
	}

	/* rt-4: a rank SIGKILLed mid-allreduce: every other rank reports an
	 * error within 10 s and collrun exits non-zero. */
	for (int t = 0; t < 2; t++) {
		snprintf(name, sizeof name, "rt-4.%d", t + 1);
		snprintf(cmd, sizeof cmd, "%s/collrun -np 4 --timeout 60 --transport %s %s/tests/rt_coll kill 2", build, tr[t],
		         build);
		rc = run(cmd, &out, &s);
		int det = count(out, "detected failure");
		report(name, rc != 0 && det == 3 && !strstr(out, "FAIL") && s < 20, out,
		       "exit %d, %d of 3 survivors reported the failure, %.1f s", rc, det, s);
		free(out);
	}

	/* rt-5: ranks passing different counts get a clear error. */
	for (int t = 0; t < 2; t++) {
		snprintf(name, sizeof name, "rt-5.%d", t + 1);
		snprintf(cmd, sizeof cmd, "%s/collrun -np 3 --timeout 60 --transport %s %s/tests/rt_coll mismatch", build,
		         tr[t], build);
		rc = run(cmd, &out, &s);
		report(name, rc == 0 && strstr(out, "count mismatch: rank 2 passed 1001"), out,
		       "exit %d, no 'count mismatch' message", rc);
		free(out);
	}

	/* rt-6: a peer with the wrong secret is refused, on both sides. */
	snprintf(cmd, sizeof cmd, "COLL_BOOT_TIMEOUT=2 %s/collrun -np 3 --timeout 60 %s/tests/rt_coll badsecret", build,
	         build);
	rc = run(cmd, &out, &s);
	report("rt-6.1",
	       rc == 0 && strstr(out, "[1] rank 1: coll_init: authentication failed") &&
	           strstr(out, "[0] rank 0: coll_init: authentication failed"),
	       out, "exit %d, missing authentication errors", rc);
	free(out);

	/* rt-7: collrun itself. */
	snprintf(cmd, sizeof cmd, "%s/collrun -np 3 sh -c 'echo hello $COLL_RANK of $COLL_NRANKS; exit $((COLL_RANK==1?7:0))'",
	         build);
	rc = run(cmd, &out, &s);
	report("rt-7.1", rc == 7 && strstr(out, "[2] hello 2 of 3") && strstr(out, "[0] hello 0 of 3"), out,
	       "exit %d (want 7) or missing prefixed output", rc);
	free(out);
	snprintf(cmd, sizeof cmd,
	         "%s/collrun -np 3 --grace 0.5 sh -c 'if [ $COLL_RANK = 0 ]; then exit 5; fi; exec sleep 100'", build);
	rc = run(cmd, &out, &s);
	report("rt-7.2", rc == 5 && s < 5, out, "exit %d (want 5) after %.1f s (want < 5: survivors killed)", rc, s);
	free(out);
	snprintf(cmd, sizeof cmd, "%s/collrun -np 2 --timeout 1 sleep 100", build);
	rc = run(cmd, &out, &s);
	report("rt-7.3", rc == 124 && s < 5, out, "exit %d (want 124) after %.1f s", rc, s);
	free(out);
	snprintf(cmd, sizeof cmd, "%s/collrun -np 2 sh -c 'kill -9 $$'", build);
	rc = run(cmd, &out, &s);
	report("rt-7.4", rc == 137, out, "exit %d (want 137 = 128 + SIGKILL)", rc);
	free(out);

	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
