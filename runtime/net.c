/*
 * net.c - socket and clock helpers for the bootstrap and the TCP transport.
 *
 * Everything here works with absolute deadlines (rt_now_ms() based) so
 * that a dead or absent peer turns into COLL_ERR_TIMEOUT or COLL_ERR_PEER,
 * never a hang.  Sockets are non-blocking; the helpers poll() until done.
 */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

int64_t rt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t rt_now_ms(void) { return rt_now_ns() / 1000000; }

static int left_ms(int64_t deadline)
{
	int64_t l = deadline - rt_now_ms();
	return l < 0 ? 0 : l > 1000000 ? 1000000 : (int)l;
}

int rt_set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

void rt_tune_socket(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int rt_parse_addr(coll_comm *c, const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[256];
	const char *colon, *port;
	if (!s || !*s)
		return rt_err(c, COLL_ERR_BOOTSTRAP, "no rendezvous address (set COLL_ADDR=host:port)");
	if (s[0] == '[') {
		const char *e = strchr(s, ']');
		if (!e || e[1] != ':')
			return rt_err(c, COLL_ERR_BOOTSTRAP, "bad address '%s' (want [v6]:port)", s);
		snprintf(host, sizeof host, "%.*s", (int)(e - s - 1), s + 1);
		port = e + 2;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return rt_err(c, COLL_ERR_BOOTSTRAP, "bad address '%s' (want host:port)", s);
		snprintf(host, sizeof host, "%.*s", (int)(colon - s), s);
		port = colon + 1;
	}
	/* A decimal port of 1-65535, nothing else: getaddrinfo would take
	 * 99999 as 34463 and a service name as its port, and port 0 lets rank
	 * 0 listen where nobody can dial it (the others would wait out the
	 * boot timeout on "connection refused"). */
	char *end = (char *)port;
	errno = 0;
	long pn = isdigit((unsigned char)*port) ? strtol(port, &end, 10) : -1;
	if (pn < 1 || pn > 65535 || *end || errno)
		return rt_err(c, COLL_ERR_BOOTSTRAP, "bad address '%s': the port must be a number from 1 to 65535", s);
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	int g = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (g != 0 || !res)
		return rt_err(c, COLL_ERR_BOOTSTRAP, "cannot resolve '%s': %s", s, gai_strerror(g));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return COLL_OK;
}

const char *rt_addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
		port = ntohs(a->sin_port);
		snprintf(buf, len, "%s:%d", ip, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
		port = ntohs(a->sin6_port);
		snprintf(buf, len, "[%s]:%d", ip, port);
	} else {
		snprintf(buf, len, "?");
	}
	return buf;
}

int rt_listen(coll_comm *c, const struct sockaddr_storage *ss, socklen_t len, int *fdp)
{
	char a[80];
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return rt_err(c, COLL_ERR_SYSTEM, "socket: %s", strerror(errno));
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, 512) < 0) {
		int e = errno;
		close(fd);
		rt_err(c, COLL_ERR_BOOTSTRAP, "cannot listen on %s: %s", rt_addr_str(ss, a, sizeof a), strerror(e));
		errno = e;   /* the caller may look (bootstrap.c: rank 0 claimed twice?) */
		return COLL_ERR_BOOTSTRAP;
	}
	*fdp = fd;
	return COLL_OK;
}

int rt_connect(coll_comm *c, const struct sockaddr_storage *ss, socklen_t len, int64_t deadline, int *fdp)
{
	char a[80];
	int delay = 5, last = 0;
	for (;;) {
		int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return rt_err(c, COLL_ERR_SYSTEM, "socket: %s", strerror(errno));
		int r = connect(fd, (const struct sockaddr *)ss, len);
		if (r < 0 && errno == EINPROGRESS) {
			struct pollfd p = {fd, POLLOUT, 0};
			int pr = poll(&p, 1, left_ms(deadline));
			if (pr > 0) {
				int err = 0;
				socklen_t el = sizeof err;
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
				r = err ? -1 : 0;
				errno = err;
			} else {
				errno = ETIMEDOUT;
			}
		}
		if (r == 0) {
			rt_tune_socket(fd);
			*fdp = fd;
			return COLL_OK;
		}
		last = errno;
		close(fd);
		if (rt_now_ms() + delay >= deadline)
			break;
		/* The listener may not be up yet: retry with backoff. */
		struct timespec ts = {0, delay * 1000000L};
		nanosleep(&ts, NULL);
		if (delay < 200)
			delay *= 2;
	}
	return rt_err(c, COLL_ERR_TIMEOUT, "cannot connect to %s: %s", rt_addr_str(ss, a, sizeof a),
	              strerror(last));
}

int rt_read_full(coll_comm *c, int fd, void *buf, size_t len, int64_t deadline, const char *what)
{
	char *p = buf;
	while (len) {
		ssize_t r = read(fd, p, len);
		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r == 0)
			return rt_err(c, COLL_ERR_PEER, "%s closed the connection", what);
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return rt_err(c, errno == ECONNRESET ? COLL_ERR_PEER : COLL_ERR_SYSTEM, "read from %s: %s",
			              what, strerror(errno));
		struct pollfd pf = {fd, POLLIN, 0};
		int ms = left_ms(deadline);
		if (ms == 0)
			return rt_err(c, COLL_ERR_TIMEOUT, "timed out reading from %s", what);
		poll(&pf, 1, ms);
	}
	return COLL_OK;
}

int rt_write_full(coll_comm *c, int fd, const void *buf, size_t len, int64_t deadline, const char *what)
{
	const char *p = buf;
	while (len) {
		ssize_t r = send(fd, p, len, MSG_NOSIGNAL);
		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return rt_err(c, (errno == EPIPE || errno == ECONNRESET) ? COLL_ERR_PEER : COLL_ERR_SYSTEM,
			              "write to %s: %s", what, strerror(errno));
		struct pollfd pf = {fd, POLLOUT, 0};
		int ms = left_ms(deadline);
		if (ms == 0)
			return rt_err(c, COLL_ERR_TIMEOUT, "timed out writing to %s", what);
		poll(&pf, 1, ms);
	}
	return COLL_OK;
}
