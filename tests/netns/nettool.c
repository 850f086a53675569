/*
 * nettool.c - tiny network probes for the tests/netns testbed.
 *
 *   nettool ping ADDR [TIMEOUT_MS]    one ICMP echo (raw socket, root); exit 0 on a reply
 *   nettool sink PORT [TIMEOUT_S [INTERVAL_MS]]
 *                                     accept one TCP connection on PORT (waiting at most
 *                                     TIMEOUT_S, default 30), read to EOF, print
 *                                     "bytes B seconds S mbit M" (first byte .. EOF); with
 *                                     INTERVAL_MS, also "progress T B" every INTERVAL_MS
 *                                     (T: Unix time in s, B: bytes so far), so a test can
 *                                     see when traffic stopped and resumed
 *   nettool send ADDR PORT SECONDS [USER_TIMEOUT_MS]
 *                                     connect (retrying for 5 s) and send for SECONDS; with
 *                                     USER_TIMEOUT_MS, set TCP_USER_TIMEOUT (how long sent
 *                                     data may stay unacknowledged before the connection
 *                                     fails).  A failing write prints how long after the
 *                                     last complete one it failed.
 *
 * Built by tests/netns/testbed.sh on demand; no dependencies beyond libc.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double unix_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned short csum(const void *p, int len)
{
	const unsigned short *w = p;
	unsigned long s = 0;
	for (; len > 1; len -= 2)
		s += *w++;
	if (len)
		s += *(const unsigned char *)w;
	s = (s >> 16) + (s & 0xffff);
	s += s >> 16;
	return (unsigned short)~s;
}

static int do_ping(const char *addr, int timeout_ms)
{
	struct sockaddr_in to = {0};
	to.sin_family = AF_INET;
	if (inet_pton(AF_INET, addr, &to.sin_addr) != 1) {
		fprintf(stderr, "nettool: bad address %s\n", addr);
		return 2;
	}
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	if (fd < 0) {
		perror("nettool: raw socket");
		return 2;
	}
	unsigned short id = (unsigned short)getpid();
	double end = now() + timeout_ms / 1000.0;
	for (int seq = 1; now() < end; seq++) {
		struct icmphdr h = {0};
		h.type = ICMP_ECHO;
		h.un.echo.id = htons(id);
		h.un.echo.sequence = htons((unsigned short)seq);
		h.checksum = csum(&h, sizeof h);
		sendto(fd, &h, sizeof h, 0, (struct sockaddr *)&to, sizeof to);
		double resend = now() + 0.2;
		while (now() < resend && now() < end) {
			struct pollfd pf = {fd, POLLIN, 0};
			if (poll(&pf, 1, 50) <= 0)
				continue;
			unsigned char buf[1500];
			struct sockaddr_in from;
			socklen_t fl = sizeof from;
			ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
			if (n < (ssize_t)sizeof(struct iphdr))
				continue;
			struct iphdr *ip = (struct iphdr *)buf;
			size_t hl = (size_t)ip->ihl * 4;
			if ((size_t)n < hl + sizeof(struct icmphdr))
				continue;
			struct icmphdr *r = (struct icmphdr *)(buf + hl);
			if (r->type == ICMP_ECHOREPLY && ntohs(r->un.echo.id) == id &&
			    from.sin_addr.s_addr == to.sin_addr.s_addr)
				return 0;
		}
	}
	fprintf(stderr, "nettool: no echo reply from %s within %d ms\n", addr, timeout_ms);
	return 1;
}

static int do_sink(int port, int timeout_s, int interval_ms)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 1) < 0) {
		perror("nettool: listen");
		return 2;
	}
	struct pollfd pf = {ls, POLLIN, 0};
	if (poll(&pf, 1, timeout_s * 1000) <= 0) {
		fprintf(stderr, "nettool: no connection within %d s\n", timeout_s);
		return 1;
	}
	int fd = accept(ls, NULL, NULL);
	if (fd < 0) {
		perror("nettool: accept");
		return 2;
	}
	static char buf[1 << 20];
	long long total = 0;
	double t0 = 0, t1 = 0, next = interval_ms > 0 ? now() + interval_ms / 1000.0 : 0;
	for (;;) {
		if (interval_ms > 0) {
			/* Wake up for every progress line, data or not. */
			double t = now();
			while (t >= next) {
				printf("progress %.3f %lld\n", unix_now(), total);
				fflush(stdout);
				next += interval_ms / 1000.0;
			}
			struct pollfd rf = {fd, POLLIN, 0};
			if (poll(&rf, 1, (int)((next - t) * 1000) + 1) == 0)
				continue;
		}
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			perror("nettool: read");
		if (n <= 0)
			break;
		if (!total)
			t0 = now();
		total += n;
		t1 = now();
	}
	double s = t1 > t0 ? t1 - t0 : 1e-9;
	printf("bytes %lld seconds %.3f mbit %.2f\n", total, s, total * 8 / s / 1e6);
	return total > 0 ? 0 : 1;
}

static int do_send(const char *addr, int port, double secs, int user_timeout_ms)
{
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
		fprintf(stderr, "nettool: bad address %s\n", addr);
		return 2;
	}
	int fd = -1;
	double give_up = now() + 5;
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (user_timeout_ms > 0 &&
		    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms) < 0) {
			perror("nettool: TCP_USER_TIMEOUT");
			return 2;
		}
		if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
			break;
		close(fd);
		if (now() > give_up) {
			perror("nettool: connect");
			return 2;
		}
		usleep(20000);
	}
	static char buf[1 << 16];
	memset(buf, 0x5a, sizeof buf);
	double start = now(), end = start + secs, last = start;
	while (now() < end) {
		ssize_t n = write(fd, buf, sizeof buf);
		if (n < 0 && errno != EINTR) {
			double t = now();
			fprintf(stderr, "nettool: write: %s, %.3f s after the last complete write (%.3f s after the start)\n",
				strerror(errno), t - last, t - start);
			return 2;
		}
		/* A write cut short is the one an error interrupted: it does not count. */
		if (n == (ssize_t)sizeof buf)
			last = now();
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "ping"))
		return do_ping(argv[2], argc > 3 ? atoi(argv[3]) : 2000);
	if (argc >= 3 && !strcmp(argv[1], "sink"))
		return do_sink(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 30, argc > 4 ? atoi(argv[4]) : 0);
	if (argc >= 5 && !strcmp(argv[1], "send"))
		return do_send(argv[2], atoi(argv[3]), atof(argv[4]), argc > 5 ? atoi(argv[5]) : 0);
	fprintf(stderr, "usage: nettool ping ADDR [TIMEOUT_MS] | sink PORT [TIMEOUT_S [INTERVAL_MS]] |"
			" send ADDR PORT SECONDS [USER_TIMEOUT_MS]\n");
	return 2;
}
