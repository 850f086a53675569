/*
 * fz.c - helpers of the runtime's fuzz harnesses (see fz.h): input, a
 * clean environment, free ports and ranks as threads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fz.h"
#include "rt.h"

extern char **environ;

char *fz_read(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return NULL;
	}
	char *b = malloc(max + 1);
	size_t n = b ? fread(b, 1, max, f) : 0;
	fclose(f);
	if (!b) {
		fprintf(stderr, "%s: out of memory\n", path);
		return NULL;
	}
	b[n] = 0;
	*len = n;
	return b;
}

void fz_clean_env(double boot_s)
{
	/* names first: unsetenv changes environ under the loop */
	char names[64][64];
	int k;
	do {
		k = 0;
		for (char **e = environ; e && *e && k < 64; e++) {
			const char *eq = strchr(*e, '=');
			size_t l = eq ? (size_t)(eq - *e) : strlen(*e);
			if (strncmp(*e, "COLL_", 5) == 0 && l < sizeof names[0])
				snprintf(names[k++], sizeof names[0], "%.*s", (int)l, *e);
		}
		for (int i = 0; i < k; i++)
			unsetenv(names[i]);
	} while (k == 64);
	char v[32];
	snprintf(v, sizeof v, "%g", boot_s);
	setenv("COLL_BOOT_TIMEOUT", v, 1);
}

int fz_free_port(void)
{
	struct sockaddr_in a = {0};
	socklen_t l = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &l) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

int fz_wait_listen(int port, int ms)
{
	for (int64_t end = rt_now_ms() + ms; rt_now_ms() < end;) {
		for (int fd = 3; fd < 256; fd++) {
			struct sockaddr_in a;
			socklen_t l = sizeof a;
			int acc = 0;
			socklen_t al = sizeof acc;
			if (getsockname(fd, (struct sockaddr *)&a, &l) == 0 && a.sin_family == AF_INET &&
			    ntohs(a.sin_port) == port && getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) == 0 && acc)
				return 0;
		}
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	return -1;
}

void fz_rank_init(fz_rank *r, int rank, int n, int port, const coll_plan_set *plans, double timeout_s)
{
	static const coll_config dflt = COLL_CONFIG_INIT;
	memset(r, 0, sizeof *r);
	r->cfg = dflt;
	r->cfg.rank = rank;
	r->cfg.nranks = n;
	r->cfg.secret = "fuzz-secret";
	r->cfg.transport = "tcp";
	r->cfg.timeout_s = timeout_s;
	snprintf(r->addr, sizeof r->addr, "127.0.0.1:%d", port);
	r->plans = plans;
}

static void *rank_main(void *arg)
{
	fz_rank *r = arg;
	r->rc = coll_init(&r->comm, r->plans, &r->cfg);
	if (r->rc) {
		snprintf(r->err, sizeof r->err, "%s", coll_last_error(NULL));
		return NULL;
	}
	if (r->body)
		r->body(r);
	return NULL;
}

int fz_rank_start(fz_rank *r)
{
	r->cfg.addr = r->addr;
	if (pthread_create(&r->th, NULL, rank_main, r) != 0) {
		r->rc = COLL_ERR_SYSTEM;
		snprintf(r->err, sizeof r->err, "pthread_create failed");
		return -1;
	}
	r->started = 1;
	return 0;
}

void fz_rank_join(fz_rank *r)
{
	if (r->started)
		pthread_join(r->th, NULL);
	r->started = 0;
}

void fz_rank_end(fz_rank *r)
{
	coll_finalize(r->comm);
	r->comm = NULL;
}
