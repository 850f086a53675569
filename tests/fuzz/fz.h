/*
 * fz.h - what the runtime's fuzz harnesses (plan_harness.c,
 * frame_harness.c) share: reading AFL's input with a size bound, a
 * deterministic environment, and real ranks of a real job started as
 * threads of the harness, so that one process holds the whole job and
 * nothing outlives it (no child process, no file in /dev/shm: every link
 * is a TCP socket on 127.0.0.1 that dies with the process).
 */
#ifndef FZ_H
#define FZ_H

#include <pthread.h>
#include <stddef.h>

#include "coll.h"
#include "coll_plan.h"

/* The first max bytes of path (NUL-terminated; free it), *len their
 * count; NULL with a message on stderr when it cannot be read. */
char *fz_read(const char *path, size_t max, size_t *len);

/* Drop every COLL_* variable the caller's environment has, then set
 * COLL_BOOT_TIMEOUT to boot_s: an execution depends on its input alone. */
void fz_clean_env(double boot_s);

/* A TCP port on 127.0.0.1 that was free a moment ago (0: none). */
int fz_free_port(void);

/* Wait up to ms for a socket of this process to listen on port (rank 0's
 * rendezvous): the other ranks started after that connect at once instead
 * of backing off (net.c's rt_connect sleeps 5 ms and more between tries).
 * 0 once it listens, -1 when it did not. */
int fz_wait_listen(int port, int ms);

/* One rank of a job, initialising (and then running body) in a thread of
 * its own. */
typedef struct fz_rank fz_rank;
struct fz_rank {
	/* set by the caller */
	coll_config cfg;                 /* rank, nranks, addr, secret, transport, timeout */
	char addr[64];                   /* cfg.addr points here after fz_rank_start */
	const coll_plan_set *plans;
	void (*body)(fz_rank *r);        /* run after coll_init succeeded (may be NULL) */
	void *arg;
	/* set by the thread */
	coll_comm *comm;                 /* NULL when coll_init failed; finalize it */
	coll_result rc;                  /* coll_init's result, or what body stored */
	char err[400];                   /* coll_last_error of a failure */
	pthread_t th;
	int started;
};

/* Fill r for rank `rank` of n ranks meeting at 127.0.0.1:port over tcp
 * with a fixed secret and per-call timeout timeout_s. */
void fz_rank_init(fz_rank *r, int rank, int n, int port, const coll_plan_set *plans, double timeout_s);
/* Start r's thread.  0, or -1 when no thread could be made. */
int fz_rank_start(fz_rank *r);
/* Wait for r's thread (no-op when it never started). */
void fz_rank_join(fz_rank *r);
/* Finalize r's communicator, if any. */
void fz_rank_end(fz_rank *r);

#endif
