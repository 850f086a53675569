/*
 * bootstrap.c - TCP rendezvous that turns N processes into a communicator.
 *
 * Rank 0 listens on the rendezvous address (COLL_ADDR); every other rank
 * connects to it and proves the shared secret (auth.c), saying in the same
 * proof which rank it is and how many ranks it thinks the job has.  Rank 0
 * serves every handshake at once and checks each claim as it arrives;
 * once every rank joined it closes the rendezvous listener and answers
 * each rank with a verdict: the job id, or why the job cannot start.
 * Every rank's listener address for transport links is then exchanged
 * with rt_boot_allgather.  The star of sockets to rank 0 stays open for
 * the rest of the communicator's life: it carries the small allgathers
 * and barriers of coll_init and coll_barrier.
 *
 * Verdicts are how a misconfigured job is named on every rank at once
 * instead of as a timeout: a rank whose COLL_NRANKS differs from rank 0's,
 * two processes with one COLL_RANK, a rank outside 0..n-1 (comm.c lets
 * such a process dial rank 0 just to say so), a rank that died after
 * joining.  Rank 0 tells every rank that has joined, and for up to
 * BOOT_LINGER_MS more tells the ones still dialling, then fails itself.
 * Only proven ranks hear verdicts; strangers (auth.c) never change the
 * outcome: a rank that never shows up is COLL_ERR_TIMEOUT naming it, or
 * COLL_ERR_AUTH when a proof claiming it failed the key check (a rank
 * with another COLL_SECRET; the rank itself was told so at once).
 *
 * Transport listeners are bound to the address this rank reaches rank 0
 * from (the interface of the rendezvous, rail 0 on the emulated cluster),
 * not to every interface, and comm.c closes them once the transport is
 * connected.
 *
 * Under mpirun the rendezvous is MPI's instead (mpiboot.c): there is no
 * star of sockets, and rt_boot_allgather/rt_boot_barrier/rt_boot_close
 * hand over to the MPI plugin.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

/* What rank 0 sends every rank when the rendezvous ends. */
#define BOOT_MAGIC 0x436f4c42u /* "CoLB" */
typedef struct {
	uint32_t magic;
	int32_t code;        /* COLL_OK: the job starts; else why it cannot */
	uint64_t jobid;
	char why[496];       /* code != OK: the cause, the same words on every rank */
} boot_verdict;

/* After failing, rank 0 keeps answering ranks that are still dialling
 * for this long (unless every rank heard it sooner), so that they learn
 * the cause instead of timing out. */
#define BOOT_LINGER_MS 2000

int rt_boot_listen(coll_comm *c, const struct sockaddr_storage *local)
{
	struct sockaddr_storage ss = *local;
	socklen_t len;
	if (ss.ss_family == AF_INET6) {
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
		len = sizeof(struct sockaddr_in6);
	} else {
		((struct sockaddr_in *)&ss)->sin_port = 0;
		len = sizeof(struct sockaddr_in);
	}
	return rt_listen(c, &ss, len, &c->boot.listen_fd);
}

void rt_boot_unlisten(coll_comm *c)
{
	if (c->boot.listen_fd >= 0)
		close(c->boot.listen_fd);
	c->boot.listen_fd = -1;
}

static int is_wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, &in6addr_any, sizeof in6addr_any) == 0;
	return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
}

/* The local end of a connected socket (the interface a peer is reached on). */
static void local_addr(int fd, struct sockaddr_storage *out)
{
	socklen_t l = sizeof *out;
	memset(out, 0, sizeof *out);
	getsockname(fd, (struct sockaddr *)out, &l);
}

/* Rank 0's verdict to one rank (best effort: a rank that cannot take 256
 * bytes at once is gone). */
static void send_verdict(coll_comm *c, int fd, const boot_verdict *v)
{
	rt_write_full(c, fd, v, sizeof *v, rt_now_ms() + 1000, "a rank");
}

/* "1 2 5" from the ranks r in 1..n-1 with want(r). */
static void rank_list(char *buf, size_t len, int n, const int *fds, const uint8_t *flag, int want_flag)
{
	size_t o = 0;
	buf[0] = 0;
	for (int r = 1; r < n && o + 12 < len; r++)
		if (fds[r] < 0 && (!flag || flag[r] == want_flag))
			o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? " " : "", r);
	if (o + 12 >= len)
		snprintf(buf + o, len - o, " ...");
}

/* Rank 0's side: serve handshakes until every rank joined or the job
 * cannot start, then send every rank the verdict. */
static int boot_root(coll_comm *c, int lfd)
{
	int n = c->n, joined = 0, rc = COLL_OK, ev;
	boot_verdict v = {BOOT_MAGIC, COLL_OK, 0, ""};
	rt_hs_server hs;
	rt_hs_peer peer;
	rt_hs_start(&hs, c, lfd, c->boot.key, RT_PURPOSE_BOOT, 0);
	struct pollfd *ext = calloc((size_t)n, sizeof *ext);
	int *ext_rank = calloc((size_t)n, sizeof *ext_rank);
	uint8_t *refused = calloc((size_t)n, 1);   /* a proof claiming r failed the key check */
	uint8_t *told = calloc((size_t)n, 1);
	if (!ext || !ext_rank || !refused || !told) {
		rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
		goto out;
	}
	while (joined < n - 1 && !v.code) {
		/* A rank that joined sends nothing until the verdict: anything
		 * readable on its socket is its end. */
		int next = 0;
		for (int r = 1; r < n; r++)
			if (c->boot.fds[r] >= 0) {
				ext[next] = (struct pollfd){c->boot.fds[r], POLLIN | POLLRDHUP, 0};
				ext_rank[next++] = r;
			}
		if ((rc = rt_hs_wait(&hs, c->boot.deadline_ms, ext, next, &ev, &peer)))
			goto out;
		if (ev == RT_HS_PEER) {
			uint32_t r = peer.rank;
			if (peer.info != (uint32_t)n)
				v.code = COLL_ERR_BOOTSTRAP, snprintf(v.why, sizeof v.why, "rank %u was started with COLL_NRANKS=%u "
				                                      "but rank 0 with %d", r, peer.info, n);
			else if (r == 0)
				v.code = COLL_ERR_BOOTSTRAP, snprintf(v.why, sizeof v.why, "two processes claim rank 0 (COLL_RANK "
				                                      "given twice?)");
			else if (r >= (uint32_t)n)
				v.code = COLL_ERR_BOOTSTRAP, snprintf(v.why, sizeof v.why, "a process claims rank %u, outside "
				                                      "0..%d (COLL_RANK / COLL_NRANKS)", r, n - 1);
			else if (c->boot.fds[r] >= 0)
				v.code = COLL_ERR_BOOTSTRAP, snprintf(v.why, sizeof v.why, "two processes claim rank %u (COLL_RANK "
				                                      "given twice?)", r);
			if (v.code) {
				send_verdict(c, peer.fd, &v);
				close(peer.fd);
				if (r > 0 && r < (uint32_t)n)
					told[r] = 1;
				break;
			}
			c->boot.fds[r] = peer.fd;
			joined++;
		} else if (ev == RT_HS_REFUSED) {
			if (peer.rank > 0 && peer.rank < (uint32_t)n)
				refused[peer.rank] = 1;
		} else if (ev == RT_HS_EXTRA) {
			for (int j = 0; j < next; j++)
				if (ext[j].revents) {
					int r = ext_rank[j];
					close(c->boot.fds[r]);
					c->boot.fds[r] = -1;
					joined--;
					v.code = COLL_ERR_PEER;
					snprintf(v.why, sizeof v.why, "rank %d closed its rendezvous connection before the job started "
					         "(it died or was killed)", r);
					break;
				}
		} else {   /* RT_HS_TIME */
			char missing[64], ref[64];
			rank_list(missing, sizeof missing, n, c->boot.fds, NULL, 0);
			rank_list(ref, sizeof ref, n, c->boot.fds, refused, 1);
			v.code = ref[0] ? COLL_ERR_AUTH : COLL_ERR_TIMEOUT;
			if (ref[0])
				snprintf(v.why, sizeof v.why, "timed out waiting for rank(s) %s; a connection claiming rank(s) %s "
				         "failed the key check (is COLL_SECRET the same on every rank?)", missing, ref);
			else
				snprintf(v.why, sizeof v.why, "timed out waiting for rank(s) %s (COLL_BOOT_TIMEOUT)", missing);
		}
	}
	if (!v.code) {
		/* Everyone is in: no more strangers to serve. */
		rt_hs_stop(&hs);
		close(lfd);
		lfd = -1;
		if (rt_random(&c->boot.jobid, sizeof c->boot.jobid) != 0)
			v.code = COLL_ERR_SYSTEM, snprintf(v.why, sizeof v.why, "rank 0 has no kernel randomness for the job "
			                                   "id (getrandom failed)");
		v.jobid = c->boot.jobid;
	}
	for (int r = 1; r < n; r++)
		if (c->boot.fds[r] >= 0) {
			send_verdict(c, c->boot.fds[r], &v);
			told[r] = 1;
		}
	if (!v.code)
		goto out;
	/* Failed early (a misconfiguration, a death): answer the ranks still
	 * dialling for a while, then give up.  At the deadline there is no
	 * point: whoever was coming has come. */
	for (int64_t until = rt_now_ms() + BOOT_LINGER_MS;
	     lfd >= 0 && v.code != COLL_ERR_TIMEOUT && v.code != COLL_ERR_AUTH;) {
		int all = 1;
		for (int r = 1; r < n; r++)
			all &= told[r];
		if (all || rt_hs_wait(&hs, until, NULL, 0, &ev, &peer) || ev == RT_HS_TIME)
			break;
		if (ev == RT_HS_PEER) {
			send_verdict(c, peer.fd, &v);
			close(peer.fd);
			if (peer.rank > 0 && peer.rank < (uint32_t)n)
				told[peer.rank] = 1;
		}
	}
	rc = rt_err(c, v.code, "rendezvous: %s", v.why);
out:
	rt_hs_stop(&hs);
	if (lfd >= 0)
		close(lfd);
	free(ext);
	free(ext_rank);
	free(refused);
	free(told);
	return rc;
}

/* Every other rank's side: dial rank 0 (again when it drops a handshake),
 * prove the secret, open this rank's transport listener on the interface
 * that reaches rank 0 (unless report_only: a process that only tells rank
 * 0 it is misconfigured), and wait for the verdict. */
static int boot_client(coll_comm *c, const struct sockaddr_storage *ss, socklen_t len, int64_t deadline,
                       int report_only)
{
	char a[80], who[112];
	uint8_t sess[16];
	int fd = -1, rc;
	snprintf(who, sizeof who, "rank 0 at %s", rt_addr_str(ss, a, sizeof a));
	for (;;) {
		if ((rc = rt_connect(c, ss, len, deadline, &fd)))
			return rc;
		rc = rt_auth_client(c, fd, c->boot.key, c->rank, RT_PURPOSE_BOOT, (uint32_t)c->n, 0, deadline, who, sess);
		if (rc == COLL_OK)
			break;
		close(fd);
		if (rc != COLL_ERR_PEER || rt_now_ms() + 50 >= deadline)
			return rc;
		struct timespec ts = {0, 50000000};   /* rank 0 dropped us (it was busy, or we were slow): again */
		nanosleep(&ts, NULL);
	}
	c->boot.fds[0] = fd;
	if (!report_only) {
		struct sockaddr_storage local;
		local_addr(fd, &local);
		if ((rc = rt_boot_listen(c, &local)))
			return rc;
	}
	/* Rank 0 answers when every rank joined or when it failed, at its own
	 * deadline at the latest: allow for a rank 0 that started later. */
	boot_verdict v;
	rc = rt_read_full(c, fd, &v, sizeof v, deadline + 5000, who);
	if (rc == COLL_ERR_PEER)
		return rt_err(c, COLL_ERR_PEER, "%s closed the rendezvous before the job started (rank 0 died or failed)",
		              who);
	if (rc == COLL_ERR_TIMEOUT)
		return rt_err(c, COLL_ERR_TIMEOUT, "%s did not end the rendezvous in time (COLL_BOOT_TIMEOUT)", who);
	if (rc)
		return rc;
	if (v.magic != BOOT_MAGIC)
		return rt_err(c, COLL_ERR_PROTOCOL, "%s sent a malformed rendezvous verdict", who);
	if (v.code != COLL_OK) {
		v.why[sizeof v.why - 1] = 0;
		for (char *p = v.why; *p; p++)   /* rank 0's words, but printed on our terminal */
			if (*p < ' ' || *p > '~')
				*p = '?';
		int code = v.code > 0 && v.code <= COLL_ERR_UNSUPPORTED ? v.code : COLL_ERR_BOOTSTRAP;
		return rt_err(c, code, "rendezvous: %s", v.why);
	}
	c->boot.jobid = v.jobid;
	return COLL_OK;
}

int rt_boot_init(coll_comm *c, const char *addr, const char *secret)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int rc;
	rt_auth_key(secret, c->boot.key);
	c->boot.listen_fd = -1;
	/* every fd -1 before anything can fail: rt_boot_close closes what is
	 * >= 0, and would otherwise close descriptors it never opened */
	c->boot.fds = malloc(sizeof(int) * (size_t)c->n);
	for (int i = 0; c->boot.fds && i < c->n; i++)
		c->boot.fds[i] = -1;
	c->boot.addrs = calloc((size_t)c->n, sizeof *c->boot.addrs);
	c->boot.addrlens = calloc((size_t)c->n, sizeof *c->boot.addrlens);
	if (!c->boot.fds || !c->boot.addrs || !c->boot.addrlens)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory for the bootstrap of %d ranks", c->n);
	if (c->n == 1 && c->rank == 0)
		return COLL_OK;
	if ((rc = rt_parse_addr(c, addr, &ss, &len)))
		return rc;
	if (c->rank >= c->n) {
		/* Out of range (comm.c has its own message): only tell rank 0,
		 * so that every rank hears of it, and not for long. */
		int64_t dl = rt_now_ms() + 5000;
		return boot_client(c, &ss, len, dl < c->boot.deadline_ms ? dl : c->boot.deadline_ms, 1);
	}
	if (c->rank != 0) {
		if ((rc = boot_client(c, &ss, len, c->boot.deadline_ms, 0)))
			return rc;
	} else {
		int lfd;
		if ((rc = rt_listen(c, &ss, len, &lfd))) {
			if (errno != EADDRINUSE)
				return rc;
			/* Perhaps another process is rank 0 already: if so, tell
			 * it (and through it everyone) that rank 0 is claimed twice. */
			char keep[sizeof c->err], said[sizeof c->err] = "";
			memcpy(keep, c->err, sizeof keep);
			int64_t dl = rt_now_ms() + 5000;
			rc = boot_client(c, &ss, len, dl < c->boot.deadline_ms ? dl : c->boot.deadline_ms, 1);
			if (rc && strstr(c->err, "rendezvous: "))
				snprintf(said, sizeof said, "; %s", strstr(c->err, "rendezvous: "));
			return rt_err(c, COLL_ERR_BOOTSTRAP, "%.160s%.150s", keep, said);
		}
		/* Our transport listener: on the rendezvous address (now, like
		 * everyone else's, so that it exists while the job boots), or
		 * where rank 1 reached us when that is a wildcard. */
		if (!is_wildcard(&ss) && (rc = rt_boot_listen(c, &ss))) {
			close(lfd);
			return rc;
		}
		if ((rc = boot_root(c, lfd)))
			return rc;
		struct sockaddr_storage local;
		local_addr(c->boot.fds[1], &local);
		if (c->boot.listen_fd < 0 && (rc = rt_boot_listen(c, &local)))
			return rc;
	}
	/* Exchange listener addresses. */
	struct sockaddr_storage mine;
	socklen_t ml = sizeof mine;
	memset(&mine, 0, sizeof mine);
	getsockname(c->boot.listen_fd, (struct sockaddr *)&mine, &ml);
	if ((rc = rt_boot_allgather(c, &mine, c->boot.addrs, sizeof mine)))
		return rc;
	for (int r = 0; r < c->n; r++)
		c->boot.addrlens[r] = c->boot.addrs[r].ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                                                              : sizeof(struct sockaddr_in);
	return COLL_OK;
}

/* The later of the bootstrap deadline and now + the comm timeout.  Never
 * the bootstrap deadline alone: it is fixed at coll_init (COLL_BOOT_TIMEOUT,
 * 30 s by default), and a barrier issued after init but shortly before it
 * would get only what was left of it.  collprobe's barriers did, on a
 * 16-host, 4-rack testbed whose probe takes 43 s: one 29.5 s after init
 * timed out at 30 s while its peer was still in a 1 s exchange. */
int64_t rt_boot_deadline(coll_comm *c)
{
	int64_t per = rt_now_ms() + (c->timeout_ms > 0 ? c->timeout_ms : 365LL * 86400 * 1000);
	return c->boot.deadline_ms > per ? c->boot.deadline_ms : per;
}

int rt_boot_allgather(coll_comm *c, const void *mine, void *all, size_t len)
{
	char what[32];
	int rc;
	int64_t dl = rt_boot_deadline(c);
	if (c->boot.mpi)
		return c->boot.mpi->allgather(c, mine, all, len, dl);
	memcpy((char *)all + (size_t)c->rank * len, mine, len);
	if (c->n == 1)
		return COLL_OK;
	if (c->rank != 0) {
		if ((rc = rt_write_full(c, c->boot.fds[0], mine, len, dl, "rank 0")))
			return rc;
		return rt_read_full(c, c->boot.fds[0], all, len * (size_t)c->n, dl, "rank 0");
	}
	for (int r = 1; r < c->n; r++) {
		snprintf(what, sizeof what, "rank %d", r);
		if ((rc = rt_read_full(c, c->boot.fds[r], (char *)all + (size_t)r * len, len, dl, what)))
			return rc;
	}
	for (int r = 1; r < c->n; r++) {
		snprintf(what, sizeof what, "rank %d", r);
		if ((rc = rt_write_full(c, c->boot.fds[r], all, len * (size_t)c->n, dl, what)))
			return rc;
	}
	return COLL_OK;
}

int rt_boot_barrier(coll_comm *c)
{
	if (c->n == 1)
		return COLL_OK;
	if (c->boot.mpi)
		return c->boot.mpi->barrier(c, rt_boot_deadline(c));
	uint8_t *all = malloc((size_t)c->n);
	if (!all)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	uint8_t one = 1;
	int rc = rt_boot_allgather(c, &one, all, 1);
	free(all);
	return rc;
}

void rt_boot_close(coll_comm *c)
{
	if (c->boot.mpi)
		c->boot.mpi->close(c);
	c->boot.mpi = NULL;
	if (c->boot.fds)
		for (int i = 0; i < c->n; i++)
			if (c->boot.fds[i] >= 0)
				close(c->boot.fds[i]);
	rt_boot_unlisten(c);
	free(c->boot.fds);
	free(c->boot.addrs);
	free(c->boot.addrlens);
	c->boot.fds = NULL;
	c->boot.addrs = NULL;
	c->boot.addrlens = NULL;
	c->boot.listen_fd = -1;
}
