/*
 * planload.c - plans from collc's JSON and from generated libraries, for
 * collbench and the PMPI library (see planload.h).
 *
 * collc runs under posix_spawn with an argument vector (never a shell);
 * its stdout and stderr go to two memfds, read once it has exited, so a
 * large schedule cannot fill a pipe that nobody drains.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "planload.h"

extern char **environ;

static int fail(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && whylen)
		vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

const char *pl_find_collc(const char *dir, char *buf, size_t len)
{
	const char *e = getenv("COLLC");
	if (e && *e)
		return e;
	if (dir && *dir) {
		snprintf(buf, len, "%s/collc", dir);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	return "collc";
}

/* The whole content of fd (from its start), NUL-terminated; NULL when out
 * of memory. */
static char *read_all(int fd, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	lseek(fd, 0, SEEK_SET);
	for (;;) {
		if (!b)
			return NULL;
		if (cap - n < 4096) {
			char *t = realloc(b, cap *= 2);
			if (!t) {
				free(b);
				return NULL;
			}
			b = t;
		}
		ssize_t k = read(fd, b + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	b[n] = 0;
	if (len)
		*len = n;
	return b;
}

int pl_run(char *const argv[], char *const envp[], char **out, size_t *outlen, char **err, char *why,
           size_t whylen)
{
	*out = NULL;
	if (err)
		*err = NULL;
	int ofd = memfd_create("pl-out", MFD_CLOEXEC), efd = memfd_create("pl-err", MFD_CLOEXEC);
	if (ofd < 0 || efd < 0) {
		int e = errno;
		if (ofd >= 0)
			close(ofd);
		return fail(why, whylen, "memfd_create: %s", strerror(e));
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, ofd, 1);
	posix_spawn_file_actions_adddup2(&fa, efd, 2);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp ? envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		close(ofd);
		close(efd);
		return fail(why, whylen, "cannot run %s: %s", argv[0], strerror(rc));
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			st = -1;
			break;
		}
	*out = read_all(ofd, outlen);
	if (err)
		*err = read_all(efd, NULL);
	close(ofd);
	close(efd);
	if (!*out)
		return fail(why, whylen, "out of memory reading the output of %s", argv[0]);
	if (st == -1)
		return fail(why, whylen, "waitpid: %s", strerror(errno));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int pl_kind_by_name(const char *s)
{
	char buf[64];
	size_t n = 0;
	for (; s[n] && n < sizeof buf - 1; n++)
		buf[n] = s[n] == '-' ? '_' : s[n];
	buf[n] = 0;
	static const char *const alias[][2] = {{"all_reduce", "allreduce"}, {"all_gather", "allgather"},
	                                       {"bcast", "broadcast"}, {"reducescatter", "reduce_scatter"}};
	for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
		if (strcmp(buf, alias[i][0]) == 0)
			snprintf(buf, sizeof buf, "%s", alias[i][1]);
	for (int i = 0; i < COLL_NCOLLS; i++)
		if (strcmp(buf, coll_kind_name((coll_kind)i)) == 0)
			return i;
	return -1;
}

static int json_int(const json *o, const char *key, int *out)
{
	const json *v = json_get(o, key);
	if (!v || v->kind != JSON_NUMBER || v->num != floor(v->num) || fabs(v->num) > 1e9)
		return -1;
	*out = (int)v->num;
	return 0;
}

static int json_u64(const json *o, const char *key, uint64_t *out)
{
	const json *v = json_get(o, key);
	if (!v || v->kind != JSON_NUMBER || v->num != floor(v->num) || v->num < 0 || v->num > 1.8e19)
		return -1;
	*out = (uint64_t)v->num;
	return 0;
}

/* The straggler role of an allreduce: the one rank absent from the
 * precondition rounds (phase "pre...") while every other rank takes part;
 * -1 when there is none. */
static int straggler_role(const json *rounds, int n)
{
	char *inpre = calloc((size_t)n, 1);
	int haspre = 0, absent = -1, nabsent = 0;
	if (!inpre)
		return -1;
	for (size_t r = 0; r < rounds->len; r++) {
		const json *ph = json_get(rounds->items[r], "phase"), *tr = json_get(rounds->items[r], "transfers");
		if (!ph || ph->kind != JSON_STRING || strncmp(ph->str, "pre", 3) != 0 || !tr || tr->kind != JSON_ARRAY)
			continue;
		haspre = 1;
		for (size_t i = 0; i < tr->len; i++) {
			int src, dst;
			if (!json_int(tr->items[i], "src", &src) && !json_int(tr->items[i], "dst", &dst) && src >= 0 &&
			    src < n && dst >= 0 && dst < n)
				inpre[src] = inpre[dst] = 1;
		}
	}
	for (int r = 0; haspre && r < n; r++)
		if (!inpre[r])
			absent = r, nabsent++;
	free(inpre);
	return nabsent == 1 ? absent : -1;
}

coll_algo *pl_algo_from_json(const char *text, size_t len, int nranks, char *why, size_t whylen)
{
	char err[256];
	json *root = json_parse(text, len, err, sizeof err);
	coll_xfer *xs = NULL;
	coll_algo *a = NULL;
	if (!root) {
		fail(why, whylen, "cannot parse collc's JSON: %s", err);
		return NULL;
	}
	const json *coll = json_get(root, "collective"), *name = json_get(root, "algorithm"),
	           *rounds = json_get(root, "rounds");
	int n, chunks, aroot = 0, kind;
	if (!coll || coll->kind != JSON_STRING || (kind = pl_kind_by_name(coll->str)) < 0 || !name ||
	    name->kind != JSON_STRING || !rounds || rounds->kind != JSON_ARRAY || json_int(root, "n", &n) ||
	    json_int(root, "chunks", &chunks)) {
		fail(why, whylen, "collc's JSON lacks collective, algorithm, n, chunks or rounds");
		goto done;
	}
	json_int(root, "root", &aroot);
	/* Only what collc can print: it takes n in 1..65536 (lang/driver.c)
	 * and verifies fewer than 2^32 (rank, chunk) pairs (lang/state.c).
	 * Past that the text is damaged, and coll_algo_build would allocate a
	 * rank plan per rank before anything refused it: "n": 1e9 cost 16 GiB
	 * and a check walking them all. */
	if (n < 1 || n > 65536 || chunks < 1 || (uint64_t)n * (uint64_t)chunks >= 0xffffffffULL) {
		fail(why, whylen, "collc's JSON: %d ranks and %d chunks are beyond what collc makes (n in 1..65536, "
		     "n * chunks < 2^32)", n, chunks);
		goto done;
	}
	if (nranks > 0 && n != nranks) {
		fail(why, whylen, "collc made a schedule for %d ranks, the job has %d", n, nranks);
		goto done;
	}
	size_t cap = 64, nx = 0;
	if (!(xs = malloc(cap * sizeof *xs))) {
		fail(why, whylen, "out of memory");
		goto done;
	}
	for (size_t r = 0; r < rounds->len; r++) {
		const json *tr = json_get(rounds->items[r], "transfers");
		if (!tr || tr->kind != JSON_ARRAY) {
			fail(why, whylen, "collc's JSON: round %zu has no transfers", r);
			goto done;
		}
		for (size_t i = 0; i < tr->len; i++) {
			const json *t = tr->items[i], *op = json_get(t, "op");
			coll_xfer x = {(int32_t)r, 0, 0, 0, 0};
			if (json_int(t, "src", &x.src) || json_int(t, "dst", &x.dst) || json_int(t, "chunk", &x.chunk) ||
			    !op || op->kind != JSON_STRING || (strcmp(op->str, "copy") && strcmp(op->str, "reduce"))) {
				fail(why, whylen, "collc's JSON: malformed transfer %zu of round %zu", i, r);
				goto done;
			}
			x.reduce = strcmp(op->str, "reduce") == 0;
			if (nx == cap) {
				coll_xfer *t2 = realloc(xs, (cap *= 2) * sizeof *xs);
				if (!t2) {
					fail(why, whylen, "out of memory");
					goto done;
				}
				xs = t2;
			}
			xs[nx++] = x;
		}
	}
	a = coll_algo_build(name->str, (coll_kind)kind, n, chunks, aroot, xs, (int)nx);
	if (!a) {
		fail(why, whylen, "collc's schedule for '%s' is malformed (rank or chunk out of range)", name->str);
		goto done;
	}
	int role = kind == COLL_ALLREDUCE ? straggler_role(rounds, n) : -1;
	if (role >= 0)
		a->straggler = role + 1;
done:
	free(xs);
	json_free(root);
	return a;
}

void pl_choices_free(coll_choice *c, int n)
{
	for (int i = 0; c && i < n; i++)
		free((char *)c[i].algo);
	free(c);
}

int pl_choices_from_tune(const char *text, size_t len, coll_choice **out, char *why, size_t whylen)
{
	char err[256];
	*out = NULL;
	json *root = json_parse(text, len, err, sizeof err);
	if (!root)
		return fail(why, whylen, "cannot parse collc tune's JSON: %s", err);
	const json *ranges = json_get(root, "ranges");
	if (!ranges || ranges->kind != JSON_ARRAY) {
		json_free(root);
		return fail(why, whylen, "collc tune's JSON has no \"ranges\"");
	}
	coll_choice *c = calloc(ranges->len + 1, sizeof *c);
	int n = 0;
	const char *model0 = NULL;
	for (size_t i = 0; c && i < ranges->len; i++) {
		const json *r = ranges->items[i], *coll = json_get(r, "collective"), *algo = json_get(r, "algorithm");
		const json *model = json_get(r, "model");
		uint64_t from;
		int kind;
		/* with several models (--model all) the first one's table counts */
		if (model && model->kind == JSON_STRING) {
			if (!model0)
				model0 = model->str;
			else if (strcmp(model0, model->str) != 0)
				continue;
		}
		if (!coll || coll->kind != JSON_STRING || (kind = pl_kind_by_name(coll->str)) < 0 || !algo ||
		    algo->kind != JSON_STRING || json_u64(r, "from_bytes", &from)) {
			pl_choices_free(c, n);
			json_free(root);
			return fail(why, whylen, "collc tune's JSON: malformed range %zu", i);
		}
		/* the previous range of this collective ends just below this one */
		if (n > 0 && c[n - 1].kind == kind && from > 0)
			c[n - 1].max_bytes = from - 1;
		c[n] = (coll_choice){kind, COLL_BYTES_MAX, strdup(algo->str)};
		if (!c[n++].algo) {
			pl_choices_free(c, n);
			c = NULL;
		}
	}
	json_free(root);
	if (!c)
		return fail(why, whylen, "out of memory");
	*out = c;
	return n;
}

int pl_lib_symbol(const char *path, char *sym, size_t len)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strncmp(base, "lib", 3) == 0)
		base += 3;
	size_t n = strcspn(base, ".");
	if (n == 0 || n + sizeof "_plans" > len)
		return -1;
	for (size_t i = 0; i < n; i++)
		sym[i] = (base[i] >= 'a' && base[i] <= 'z') || (base[i] >= 'A' && base[i] <= 'Z') ||
		                         (base[i] >= '0' && base[i] <= '9')
		                 ? base[i]
		                 : '_';
	strcpy(sym + n, "_plans");
	return 0;
}
