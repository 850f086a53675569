/*
 * subproc.c - run external programs with an argument vector (see subproc.h).
 *
 * posix_spawnp, not system() or sh -c: nothing a user controls (the -o
 * directory, file names, $CC) is ever parsed by a shell.  $CC is one
 * program name, as make's $(CC) is when it holds no flags.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "diag.h"
#include "subproc.h"
#include "xalloc.h"

extern char **environ;

void subproc_arg(subproc_argv *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? 2 * a->cap : 16;
		a->v = xrealloc(a->v, (size_t)a->cap * sizeof *a->v);
	}
	a->v[a->n++] = xstrdup(s);
	a->v[a->n] = NULL;
}

void subproc_argf(subproc_argv *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	int rc = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		fputs("collc: out of memory\n", stderr);
		abort();
	}
	subproc_arg(a, s);
	free(s);
}

void subproc_argv_free(subproc_argv *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	*a = (subproc_argv){ 0 };
}

/* The command as one line a shell would read back to the same vector
 * (for -v and error messages only; nothing executes it). */
static void print_cmd(FILE *f, const subproc_argv *a)
{
	for (int i = 0; i < a->n; i++) {
		const char *s = a->v[i];
		bool plain = *s != '\0';
		for (const char *p = s; *p && plain; p++)
			plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *p);
		fputs(i ? " " : "", f);
		if (plain) {
			fputs(s, f);
			continue;
		}
		fputc('\'', f);
		for (const char *p = s; *p; p++)
			*p == '\'' ? fputs("'\\''", f) : fputc(*p, f);
		fputc('\'', f);
	}
}

pid_t subproc_start(const subproc_argv *a, bool quiet_err, bool echo)
{
	if (echo) {
		print_cmd(stderr, a);
		fputc('\n', stderr);
	}
	fflush(NULL);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (quiet_err)
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int rc = posix_spawnp(&pid, a->v[0], &fa, NULL, a->v, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		diag_tool_error("cannot run '%s': %s", a->v[0], strerror(rc));
		return -1;
	}
	return pid;
}

int subproc_wait(pid_t pid, const subproc_argv *a)
{
	int st = 0;
	pid_t r;
	while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (r == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	char why[64], *cmd = NULL;
	size_t cmdlen = 0;
	if (r != pid)
		snprintf(why, sizeof why, "wait: %s", strerror(errno));
	else if (WIFEXITED(st))
		snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(st));
	else
		snprintf(why, sizeof why, "signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	FILE *m = open_memstream(&cmd, &cmdlen);
	if (m) {
		print_cmd(m, a);
		fclose(m);
	}
	diag_tool_error("command failed (%s): %s", why, cmd ? cmd : a->v[0]);
	free(cmd);
	return -1;
}

int subproc_run(const subproc_argv *a, bool quiet_err, bool echo)
{
	pid_t pid = subproc_start(a, quiet_err, echo);
	return pid < 0 ? -1 : subproc_wait(pid, a);
}
