/*
 * bootstrap.c - TCP rendezvous that turns N processes into a communicator.
 *
 * Rank 0 listens on the rendezvous address (COLL_ADDR); every other rank
 * connects to it and proves the shared secret (auth.c).  Rank 0 then sends
 * each rank the job id, and every rank's listener address for transport
 * links is exchanged with rt_boot_allgather.  The star of sockets to rank 0
 * stays open for the rest of the communicator's life: it carries the small
 * allgathers and barriers of coll_init and coll_barrier.
 *
 * Every wait has a deadline: a rank that never shows up turns into
 * COLL_ERR_TIMEOUT naming the missing ranks; a rank with the wrong secret
 * is refused (COLL_ERR_AUTH on both sides).
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
#include <unistd.h>

#include "rt.h"

/* Listener for transport links: same family as the rendezvous, any
 * address, ephemeral port.  The advertised address is fixed up later with
 * the local IP this rank uses to reach rank 0. */
int rt_boot_listen(coll_comm *c, int family)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	socklen_t len;
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (void *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_any;
		len = sizeof *a;
	} else {
		struct sockaddr_in *a = (void *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_ANY);
		len = sizeof *a;
	}
	return rt_listen(c, &ss, len, &c->boot.listen_fd);
}

/* The address peers should use for our listener: the local end of a
 * connected socket (same interface peers reach us on) with the listener's
 * port. */
static void advertised_addr(coll_comm *c, int connected_fd, struct sockaddr_storage *out, socklen_t *outlen)
{
	struct sockaddr_storage l;
	socklen_t ll = sizeof l;
	getsockname(c->boot.listen_fd, (struct sockaddr *)&l, &ll);
	*outlen = sizeof *out;
	getsockname(connected_fd, (struct sockaddr *)out, outlen);
	if (out->ss_family == AF_INET)
		((struct sockaddr_in *)out)->sin_port = ((struct sockaddr_in *)&l)->sin_port;
	else
		((struct sockaddr_in6 *)out)->sin6_port = ((struct sockaddr_in6 *)&l)->sin6_port;
}

static int boot_root(coll_comm *c, const struct sockaddr_storage *ss, socklen_t len)
{
	int lfd, rc, joined = 0, refused = 0;
	if ((rc = rt_listen(c, ss, len, &lfd)))
		return rc;
	while (joined < c->n - 1) {
		int fd, peer = -1;
		if ((rc = rt_accept(c, lfd, c->boot.deadline_ms, &fd))) {
			if (rc == COLL_ERR_TIMEOUT) {
				char missing[160] = "";
				size_t o = 0;
				for (int r = 1; r < c->n && o < sizeof missing - 12; r++)
					if (c->boot.fds[r] < 0)
						o += (size_t)snprintf(missing + o, sizeof missing - o, " %d", r);
				if (refused)
					rc = rt_err(c, COLL_ERR_AUTH,
					            "refused %d connection(s) with the wrong secret; still missing rank(s):%s",
					            refused, missing);
				else
					rc = rt_err(c, COLL_ERR_TIMEOUT, "timed out waiting for rank(s):%s", missing);
			}
			close(lfd);
			return rc;
		}
		/* A short deadline per handshake so that one stuck client cannot
		 * hold up the others. */
		int64_t hd = rt_now_ms() + 3000;
		if (hd > c->boot.deadline_ms)
			hd = c->boot.deadline_ms;
		rc = rt_auth_server(c, fd, c->boot.key, RT_PURPOSE_BOOT, 0, hd, &peer);
		if (rc == COLL_OK && (peer <= 0 || peer >= c->n || c->boot.fds[peer] >= 0))
			rc = rt_err(c, COLL_ERR_BOOTSTRAP, "bad or duplicate rank %d at rendezvous", peer);
		if (rc) {
			if (rc == COLL_ERR_AUTH)
				refused++;
			close(fd);
			continue;
		}
		c->boot.fds[peer] = fd;
		joined++;
	}
	close(lfd);
	rt_random(&c->boot.jobid, sizeof c->boot.jobid);
	for (int r = 1; r < c->n; r++)
		if ((rc = rt_write_full(c, c->boot.fds[r], &c->boot.jobid, 8, c->boot.deadline_ms, "a peer")))
			return rc;
	return COLL_OK;
}

int rt_boot_init(coll_comm *c, const char *addr, const char *secret)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int rc;
	rt_auth_key(secret, c->boot.key);
	c->boot.listen_fd = -1;
	c->boot.fds = malloc(sizeof(int) * (size_t)c->n);
	c->boot.addrs = calloc((size_t)c->n, sizeof *c->boot.addrs);
	c->boot.addrlens = calloc((size_t)c->n, sizeof *c->boot.addrlens);
	if (!c->boot.fds || !c->boot.addrs || !c->boot.addrlens)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	for (int i = 0; i < c->n; i++)
		c->boot.fds[i] = -1;
	if (c->n == 1)
		return COLL_OK;
	if ((rc = rt_parse_addr(c, addr, &ss, &len)) || (rc = rt_boot_listen(c, ss.ss_family)))
		return rc;
	if (c->rank == 0) {
		if ((rc = boot_root(c, &ss, len)))
			return rc;
	} else {
		int fd;
		if ((rc = rt_connect(c, &ss, len, c->boot.deadline_ms, &fd)))
			return rc;
		c->boot.fds[0] = fd;
		if ((rc = rt_auth_client(c, fd, c->boot.key, c->rank, RT_PURPOSE_BOOT, 0, c->boot.deadline_ms)))
			return rc;
		if ((rc = rt_read_full(c, fd, &c->boot.jobid, 8, c->boot.deadline_ms, "rank 0")))
			return rc;
	}
	/* Exchange listener addresses. */
	struct sockaddr_storage mine;
	socklen_t ml;
	advertised_addr(c, c->rank == 0 ? c->boot.fds[1] : c->boot.fds[0], &mine, &ml);
	if ((rc = rt_boot_allgather(c, &mine, c->boot.addrs, sizeof mine)))
		return rc;
	for (int r = 0; r < c->n; r++)
		c->boot.addrlens[r] = c->boot.addrs[r].ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                                                              : sizeof(struct sockaddr_in);
	return COLL_OK;
}

int64_t rt_boot_deadline(coll_comm *c)
{
	int64_t now = rt_now_ms();
	if (c->boot.deadline_ms > now)
		return c->boot.deadline_ms;
	return now + (c->timeout_ms > 0 ? c->timeout_ms : 365LL * 86400 * 1000);
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
	if (c->boot.listen_fd >= 0)
		close(c->boot.listen_fd);
	free(c->boot.fds);
	free(c->boot.addrs);
	free(c->boot.addrlens);
	c->boot.fds = NULL;
	c->boot.addrs = NULL;
	c->boot.addrlens = NULL;
	c->boot.listen_fd = -1;
}
