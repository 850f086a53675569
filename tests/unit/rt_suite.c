/*
 * rt_suite.c - drives the runtime's multi-process tests.
 *
 *   rt_suite -build DIR [-quick] [-v]
 *
 * Runs DIR/collrun with DIR/tests/rt_coll over every builtin transport
 * (shm and tcp: what `collrun --transports` lists) for several rank counts, plus the fault tests (killed rank, mismatched counts, wrong
 * secret) and collrun's own behaviour (exit codes, grace kill, timeout),
 * checking exit statuses and output.  Prints one line per test ("rt-N.M
 * ok" or "rt-N.M FAILED: why" followed by the output's tail) and ends with
 * "N passed, N failed"; exits non-zero if anything failed.  -quick keeps
 * it to a few seconds.  Commands run with an argument vector
 * (posix_spawnp), never through a shell.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *build = "build";
static int passed, failed, verbose;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A command line: argv (NULL-terminated) and extra NAME=VALUE settings
 * for its environment, built with cmd_add; no shell ever parses it. */
typedef struct {
	char *argv[32], *env[8];
	int argc, envc;
	char text[1024];   /* for messages: the words joined by spaces */
} cmdline;

static void cmd_add(cmdline *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cmd_add(cmdline *c, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	c->argv[c->argc++] = strdup(buf);
	size_t l = strlen(c->text);
	snprintf(c->text + l, sizeof c->text - l, "%s%s", l ? " " : "", buf);
}

static void cmd_env(cmdline *c, const char *setting)
{
	c->env[c->envc++] = strdup(setting);
	size_t l = strlen(c->text);
	snprintf(c->text + l, sizeof c->text - l, "%s%s", l ? " " : "", setting);
}

static void cmd_free(cmdline *c)
{
	for (int i = 0; i < c->argc; i++)
		free(c->argv[i]);
	for (int i = 0; i < c->envc; i++)
		free(c->env[i]);
	memset(c, 0, sizeof *c);
}

/* Run c, capturing stdout+stderr; returns its exit code (128 + signal). */
static int run(cmdline *c, char **out, double *secs)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	*out = buf;
	int fd[2];
	if (!buf || pipe(fd) != 0)
		return -1;
	/* environ plus the command's settings */
	int ne = 0;
	while (environ[ne])
		ne++;
	char **env = calloc((size_t)ne + (size_t)c->envc + 1, sizeof *env);
	memcpy(env, environ, (size_t)ne * sizeof *env);
	memcpy(env + ne, c->env, (size_t)c->envc * sizeof *env);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 2);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	posix_spawn_file_actions_addclose(&fa, fd[1]);
	double t0 = now();
	pid_t pid;
	c->argv[c->argc] = NULL;
	int rc = posix_spawnp(&pid, c->argv[0], &fa, NULL, c->argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	close(fd[1]);
	if (rc != 0) {
		close(fd[0]);
		snprintf(buf, cap, "cannot run %s: %s\n", c->argv[0], strerror(rc));
		return -1;
	}
	ssize_t got;
	while ((got = read(fd[0], buf + len, cap - len - 1)) > 0) {
		len += (size_t)got;
		if (cap - len < 4096)
			*out = buf = realloc(buf, cap *= 2);
	}
	buf[len] = 0;
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	*secs = now() - t0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The transports collrun can launch (the registry's builtin ones, as
 * `collrun --transports` lists them), into tr; returns how many. */
static int builtin_transports(char tr[][16], int max)
{
	cmdline c = {0};
	cmd_add(&c, "%s/collrun", build);
	cmd_add(&c, "--transports");
	char *out;
	double s;
	int k = 0;
	if (run(&c, &out, &s) == 0)
		for (char *line = strtok(out, "\n"); line && k < max; line = strtok(NULL, "\n")) {
			char name[16], where[16];
			if (sscanf(line, "%15[^\t]\t%15[^\t]", name, where) == 2 && strcmp(where, "BUILTIN") == 0)
				snprintf(tr[k++], 16, "%s", name);
		}
	free(out);
	cmd_free(&c);
	return k;
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

/* A run of rt_coll (args: one word per element, NULL-terminated) that
 * every rank must pass; env: NAME=VALUE settings or NULL. */
static void t_pass(const char *name, const char *const *env, int np, const char *transport,
                   const char *const *args)
{
	cmdline c = {0};
	for (int i = 0; env && env[i]; i++)
		cmd_env(&c, env[i]);
	cmd_add(&c, "%s/collrun", build);
	cmd_add(&c, "-np");
	cmd_add(&c, "%d", np);
	cmd_add(&c, "--timeout");
	cmd_add(&c, "120");
	cmd_add(&c, "--transport");
	cmd_add(&c, "%s", transport);
	cmd_add(&c, "%s/tests/rt_coll", build);
	for (int i = 0; args[i]; i++)
		cmd_add(&c, "%s", args[i]);
	char *out;
	double s;
	int rc = run(&c, &out, &s);
	int oks = count(out, " 0 failed");
	report(name, rc == 0 && oks == np && !strstr(out, "FAIL"), out, "%s: exit %d, %d of %d ranks passed (%.1f s)",
	       c.text, rc, oks, np, s);
	free(out);
	cmd_free(&c);
}

/* collrun -np N [--timeout T] [--grace G] [--transport TP] ... : the
 * start of most commands below. */
static void collrun(cmdline *c, int np, const char *timeout, const char *grace, const char *transport)
{
	cmd_add(c, "%s/collrun", build);
	cmd_add(c, "-np");
	cmd_add(c, "%d", np);
	if (timeout) {
		cmd_add(c, "--timeout");
		cmd_add(c, "%s", timeout);
	}
	if (grace) {
		cmd_add(c, "--grace");
		cmd_add(c, "%s", grace);
	}
	if (transport) {
		cmd_add(c, "--transport");
		cmd_add(c, "%s", transport);
	}
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
	char tr[8][16];
	int ntr = builtin_transports(tr, 8);
	if (ntr == 0) {
		printf("rt-0.1 FAILED: %s/collrun --transports lists no builtin transport\n", build);
		return 1;
	}
	const int full_n[] = {1, 2, 3, 4, 5, 8}, quick_n[] = {2, 3};
	const char *sweep[] = {"sweep", quick ? "-quick" : NULL, NULL};
	const char *big[] = {"big", NULL};
	const char *small_env[] = {"COLL_SEG_BYTES=1000", "COLL_SHM_SLOTS=2", NULL};
	char name[64], *out;
	double s;
	int rc;
	cmdline c;

	/* rt-1: correctness sweep; rt-2: tiny segments and slots (many
	 * messages, full windows); rt-3: 16Mi elements.  Per builtin
	 * transport t, in registry order: rt-1.(10t + n), rt-2.(t + 1). */
	for (int t = 0; t < ntr; t++) {
		const int *ns = quick ? quick_n : full_n;
		int nn = quick ? 2 : 6;
		for (int i = 0; i < nn; i++) {
			snprintf(name, sizeof name, "rt-1.%d", t * 10 + ns[i]);
			t_pass(name, NULL, ns[i], tr[t], sweep);
		}
		snprintf(name, sizeof name, "rt-2.%d", t + 1);
		t_pass(name, small_env, quick ? 3 : 5, tr[t], sweep);
		if (!quick) {
			const int bn[] = {2, 3, 4, 5, 8};
			for (int i = 0; i < 5; i++) {
				snprintf(name, sizeof name, "rt-3.%d", t * 10 + bn[i]);
				t_pass(name, NULL, bn[i], tr[t], big);
			}
		}
	}

	/* rt-4: a rank SIGKILLed mid-allreduce: every other rank reports an
	 * error within 10 s and collrun exits non-zero. */
	for (int t = 0; t < ntr; t++) {
		snprintf(name, sizeof name, "rt-4.%d", t + 1);
		memset(&c, 0, sizeof c);
		collrun(&c, 4, "60", NULL, tr[t]);
		cmd_add(&c, "%s/tests/rt_coll", build);
		cmd_add(&c, "kill");
		cmd_add(&c, "2");
		rc = run(&c, &out, &s);
		int det = count(out, "detected failure");
		report(name, rc != 0 && det == 3 && !strstr(out, "FAIL") && s < 20, out,
		       "exit %d, %d of 3 survivors reported the failure, %.1f s", rc, det, s);
		free(out);
		cmd_free(&c);
	}

	/* rt-5: ranks passing different counts get a clear error. */
	for (int t = 0; t < ntr; t++) {
		snprintf(name, sizeof name, "rt-5.%d", t + 1);
		memset(&c, 0, sizeof c);
		collrun(&c, 3, "60", NULL, tr[t]);
		cmd_add(&c, "%s/tests/rt_coll", build);
		cmd_add(&c, "mismatch");
		rc = run(&c, &out, &s);
		report(name, rc == 0 && strstr(out, "count mismatch: rank 2 passed 1001"), out,
		       "exit %d, no 'count mismatch' message", rc);
		free(out);
		cmd_free(&c);
	}

	/* rt-6: a peer with the wrong secret is refused, on both sides. */
	memset(&c, 0, sizeof c);
	cmd_env(&c, "COLL_BOOT_TIMEOUT=2");
	collrun(&c, 3, "60", NULL, NULL);
	cmd_add(&c, "%s/tests/rt_coll", build);
	cmd_add(&c, "badsecret");
	rc = run(&c, &out, &s);
	report("rt-6.1",
	       rc == 0 && strstr(out, "[1] rank 1: coll_init: authentication failed") &&
	           strstr(out, "[0] rank 0: coll_init: authentication failed"),
	       out, "exit %d, missing authentication errors", rc);
	free(out);
	cmd_free(&c);

	/* rt-7: collrun itself; the ranks are small shell programs (sh -c
	 * SCRIPT is the program collrun runs, as any user's would be). */
	memset(&c, 0, sizeof c);
	collrun(&c, 3, NULL, NULL, NULL);
	cmd_add(&c, "sh");
	cmd_add(&c, "-c");
	cmd_add(&c, "echo hello $COLL_RANK of $COLL_NRANKS; exit $((COLL_RANK==1?7:0))");
	rc = run(&c, &out, &s);
	report("rt-7.1", rc == 7 && strstr(out, "[2] hello 2 of 3") && strstr(out, "[0] hello 0 of 3"), out,
	       "exit %d (want 7) or missing prefixed output", rc);
	free(out);
	cmd_free(&c);
	memset(&c, 0, sizeof c);
	collrun(&c, 3, NULL, "0.5", NULL);
	cmd_add(&c, "sh");
	cmd_add(&c, "-c");
	cmd_add(&c, "if [ $COLL_RANK = 0 ]; then exit 5; fi; exec sleep 100");
	rc = run(&c, &out, &s);
	report("rt-7.2", rc == 5 && s < 5, out, "exit %d (want 5) after %.1f s (want < 5: survivors killed)", rc, s);
	free(out);
	cmd_free(&c);
	memset(&c, 0, sizeof c);
	collrun(&c, 2, "1", NULL, NULL);
	cmd_add(&c, "sleep");
	cmd_add(&c, "100");
	rc = run(&c, &out, &s);
	report("rt-7.3", rc == 124 && s < 5, out, "exit %d (want 124) after %.1f s", rc, s);
	free(out);
	cmd_free(&c);
	memset(&c, 0, sizeof c);
	collrun(&c, 2, NULL, NULL, NULL);
	cmd_add(&c, "sh");
	cmd_add(&c, "-c");
	cmd_add(&c, "kill -9 $$");
	rc = run(&c, &out, &s);
	report("rt-7.4", rc == 137, out, "exit %d (want 137 = 128 + SIGKILL)", rc);
	free(out);
	cmd_free(&c);

	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
