/*
 * collrun.c - launch N local ranks of a coll program.
 *
 *   collrun -np N [--netns FMT] [--addr HOST[:PORT]] [--timeout S] [--grace S]
 *           [--transport T] [--no-prefix] [--] prog [args...]
 *   collrun --transports
 *
 * Gives every rank the bootstrap environment (COLL_RANK, COLL_NRANKS,
 * COLL_ADDR, COLL_SECRET with a fresh random secret, COLL_TRANSPORT if
 * asked) and torchrun's (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT: see reserve_port and main for the ports),
 * runs it in its own process group (inside network namespace
 * FMT%rank with --netns), and prefixes each line of
 * its stdout/stderr with "[rank] ".  With --netns every rank's namespace
 * must exist (checked before anything starts) and the rank enters it with
 * setns(2) before exec; without --addr the rendezvous address is rank 0's
 * first non-loopback IPv4 address inside its namespace (rail 0 of the
 * tests/netns testbed) and a port that is free there.  When a rank fails (non-zero exit or
 * signal) the others get --grace seconds (default 5) to notice and exit on
 * their own, then SIGTERM, then SIGKILL.  collrun then says which rank
 * failed first, as the last line on stderr:
 *     collrun: rank R failed first (exit S)
 *     collrun: rank R failed first (killed by signal N, exit S)
 * and exits with that rank's status S (128+signal for a signal): 124 on
 * --timeout, 0 if all succeeded.  "First" is the first failure collrun
 * saw, except that a rank killed by a signal within 1 s of it counts first
 * (a killed process closes its sockets before it can be reaped, so the
 * peers that report its death can be reaped earlier); the others usually
 * fail because of it (they report the peer that died, aborted or stopped
 * answering).  A rank that is stopped (SIGSTOP) is
 * reported when it happens and killed like the rest.  Ranks get
 * PR_SET_PDEATHSIG, so killing collrun kills them: no orphans.  The
 * secret is 128 bits from getrandom(2); without it collrun refuses to
 * start rather than use a guessable one.  This is a separate program; it
 * does not link libcollrt (only the model floor's units.c, for reading
 * numbers as every other tool does).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "units.h"

#define LINEMAX 65536

typedef struct {
	pid_t pid;
	int out[2];          /* read ends of stdout / stderr pipes, -1 when closed */
	char *buf[2];
	size_t len[2];
	int exited, status;
} rank_t;

static volatile sig_atomic_t got_signal;
static void on_signal(int s) { got_signal = s; }

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The transports libcollrt knows (coll_transports.def): what --transport
 * takes besides auto, and what --transports lists. */
static const struct {
	const char *name, *where, *what;
} transports[] = {
#define COLL_TRANSPORT(name, where, rail, order, what) { #name, #where, what },
#include "coll_transports.def"
#undef COLL_TRANSPORT
};
#define NTRANSPORTS (int)(sizeof transports / sizeof transports[0])

static int known_transport(const char *t)
{
	for (int i = 0; i < NTRANSPORTS; i++)
		if (strcmp(transports[i].name, t) == 0)
			return 1;
	return strcmp(t, "auto") == 0;
}

static void usage(FILE *f)
{
	/* one flag a line, two blanks before it and two after, its range in
	 * the text: tests/harden_flags.test reads the flags from here */
	fprintf(f, "usage: collrun -np N [--netns FMT] [--addr HOST[:PORT]] [--timeout S] [--grace S]\n"
	           "               [--transport T] [--no-prefix] [--] prog [args...]\n"
	           "       collrun --transports\n"
	           "Starts N ranks of prog with COLL_RANK, COLL_NRANKS, COLL_ADDR and COLL_SECRET set, and\n"
	           "torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT\n"
	           "(MASTER_* as given when set; else rank 0's host and a second port). The ports are\n"
	           "reserved for the job's life, so no other process can take them before rank 0 binds.\n"
	           "  -np N, -n N     number of ranks, 1..65536 (-n as mpirun takes it; collbench's own -n\n"
	           "                  is its iterations, after prog)\n"
	           "  --netns FMT     run rank r in network namespace sprintf(FMT, r), e.g. h%%d\n"
	           "                  (FMT has exactly one %%d; the namespaces must exist: ip netns add)\n"
	           "  --addr A        rendezvous address of rank 0, HOST[:PORT] with PORT in 1..65535\n"
	           "                  (default 127.0.0.1:<free port>; with --netns, rank 0's first\n"
	           "                  non-loopback IPv4 address in its namespace and a port free there)\n"
	           "  --timeout S     kill everything after S seconds, S > 0 (exit 124; default: never)\n"
	           "  --grace S       after a rank fails, wait S s before killing the rest (S >= 0,\n"
	           "                  default 5)\n"
	           "  --transport T   set COLL_TRANSPORT for the ranks: auto or a name --transports lists\n"
	           "  --no-prefix     do not prefix output lines with [rank]\n"
	           "  --transports    list the transports libcollrt knows, one per line: name, BUILTIN or\n"
	           "                  PLUGIN (in a library loaded when needed), what it is\n");
}

/* --- flag values ------------------------------------------------------------
 * As collc's (codegen/cmd/cmd_flags.c): all of the text a number of the
 * flag's kind, in its range, or a usage error that names the flag, the
 * value and the range.  atoi and atof took "2abc" as 2, "abc" as 0 and
 * "inf" as forever. */

/* An integer, all of v (an optional sign, then digits: no blank, fraction
 * or trailing text), in lo..hi: 0, or -1 after the error. */
static int flag_int(const char *flag, const char *v, long long lo, long long hi, long long *out)
{
	if (units_parse_int(v, lo, hi, out)) {
		fprintf(stderr, "collrun: error: %s needs an integer in %lld..%lld, found '%s'\n", flag, lo, hi, v);
		return -1;
	}
	return 0;
}

/* Seconds: a plain decimal number, all of v (strtod alone would also take
 * blanks, "inf", "nan" and hex), finite, above 0 (or at 0 too when
 * zero_ok): 0, or -1 after the error. */
static int flag_seconds(const char *flag, const char *v, int zero_ok, double *out)
{
	double x = 0;
	if (isspace((unsigned char)v[0]) || link_parse_number(v, &x, NULL) || isspace((unsigned char)v[strlen(v) - 1]) ||
	    x < 0 || (x == 0 && !zero_ok)) {
		fprintf(stderr, "collrun: error: %s needs a number of seconds %s 0, found '%s'\n", flag,
		        zero_ok ? ">=" : ">", v);
		return -1;
	}
	*out = x;
	return 0;
}

/* --addr's port, when it has one ("host:port", "[v6]:port"; the text
 * after the last colon, as the bootstrap reads it): 0, or -1 after the
 * error.  Port 0 would have rank 0 listen where no other rank can find it. */
static int check_addr_port(const char *addr)
{
	const char *port = addr[0] == '[' ? strstr(addr, "]:") : strrchr(addr, ':');
	if (!port)
		return 0;
	port += addr[0] == '[' ? 2 : 1;
	size_t k = strspn(port, "0123456789");
	long x = k && k <= 5 ? strtol(port, NULL, 10) : 0;
	if (!k || port[k] || x < 1 || x > 65535) {
		fprintf(stderr, "collrun: error: --addr '%s': the port must be an integer in 1..65535, found '%s'\n", addr,
		        port);
		return -1;
	}
	return 0;
}

/* A free port of 127.0.0.1, reserved for the job's life: *fd is a socket
 * bound to it with SO_REUSEADDR, not listening, close-on-exec, that
 * collrun keeps open until it exits.  While it is bound the kernel never
 * hands the port out to anyone else (as an ephemeral port or to a bind
 * without SO_REUSEADDR), so nothing can take it between now and the
 * moment rank 0 listens there; rank 0's listener (net.c) and torch's
 * TCPStore bind with SO_REUSEADDR, which Linux allows while no socket on
 * the port listens.  (Closing a probe socket and handing out its number,
 * as collrun once did, left a window in which another process could take
 * the port.)  Falls back to an unreserved guess (*fd -1) if no socket can
 * be made. */
static int reserve_port(int *fd)
{
	struct sockaddr_in a = {0};
	socklen_t l = sizeof a;
	int one = 1;
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0 || setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(*fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(*fd, (struct sockaddr *)&a, &l) < 0) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return 20000 + getpid() % 30000;
	}
	return ntohs(a.sin_port);
}

/* FMT must hold exactly one %d (optionally %i) and no other conversion
 * but %%, so that it is safe to hand to snprintf with one int. */
static int netns_fmt_ok(const char *f)
{
	int conv = 0;
	for (const char *p = f; *p; p++) {
		if (*p != '%')
			continue;
		if (p[1] == '%') {
			p++;
			continue;
		}
		if (p[1] != 'd' && p[1] != 'i')
			return 0;
		conv++;
		p++;
	}
	return conv == 1 && strlen(f) < 200;
}

static int netns_path(const char *ns, char *path, size_t len)
{
	const char *dirs[] = {"/run/netns", "/var/run/netns"};
	for (int k = 0; k < 2; k++) {
		snprintf(path, len, "%s/%s", dirs[k], ns);
		if (access(path, F_OK) == 0)
			return 0;
	}
	snprintf(path, len, "/run/netns/%s", ns);
	return -1;
}

/* Enter network namespace NS (in the calling process); 0 or an errno. */
static int enter_netns(const char *ns)
{
	char path[512];
	if (netns_path(ns, path, sizeof path) < 0)
		return ENOENT;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int rc = setns(fd, CLONE_NEWNET) < 0 ? errno : 0;
	close(fd);
	return rc;
}

/* Rank 0's rendezvous address inside namespace NS: its first non-loopback
 * IPv4 address (interfaces in index order: rail 0 first) and a port free
 * there, found by a child that enters the namespace.  0 on success, else
 * -1 with a message in err. */
static int netns_addr(const char *ns, char *out, size_t outlen, char *err, size_t errlen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		char msg[600];
		close(p[0]);
		int e = enter_netns(ns);
		if (e) {
			snprintf(msg, sizeof msg, "!cannot enter network namespace '%s': %s", ns, strerror(e));
			(void)!write(p[1], msg, strlen(msg));
			_exit(1);
		}
		struct ifaddrs *ifs = NULL, *best = NULL;
		if (getifaddrs(&ifs) == 0)
			for (struct ifaddrs *a = ifs; a; a = a->ifa_next)
				if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && !(a->ifa_flags & IFF_LOOPBACK) &&
				    (a->ifa_flags & IFF_UP) &&
				    (!best || if_nametoindex(a->ifa_name) < if_nametoindex(best->ifa_name)))
					best = a;
		if (!best) {
			snprintf(msg, sizeof msg, "!network namespace '%s' has no non-loopback IPv4 address that is up", ns);
			(void)!write(p[1], msg, strlen(msg));
			_exit(1);
		}
		struct sockaddr_in sin = *(struct sockaddr_in *)best->ifa_addr;
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof ip);
		int port = 20000 + getpid() % 30000;
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		socklen_t l = sizeof sin;
		sin.sin_port = 0;
		if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0 &&
		    getsockname(fd, (struct sockaddr *)&sin, &l) == 0)
			port = ntohs(sin.sin_port);
		snprintf(msg, sizeof msg, "%s:%d", ip, port);
		(void)!write(p[1], msg, strlen(msg));
		_exit(0);
	}
	close(p[1]);
	char buf[600];
	size_t got = 0;
	ssize_t r;
	while (got < sizeof buf - 1 && ((r = read(p[0], buf + got, sizeof buf - 1 - got)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0)
			got += (size_t)r;
	buf[got] = 0;
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || got == 0 || buf[0] == '!') {
		snprintf(err, errlen, "%s", got && buf[0] == '!' ? buf + 1 : "cannot find rank 0's address in its namespace");
		return -1;
	}
	if (got >= outlen) {
		snprintf(err, errlen, "address too long");
		return -1;
	}
	memcpy(out, buf, got + 1);
	return 0;
}

/* Write complete lines of one stream with the rank prefix; flush all on
 * EOF (final = 1). */
static void emit(rank_t *r, int rank, int s, int final, int prefix)
{
	FILE *f = s ? stderr : stdout;
	char *b = r->buf[s];
	size_t start = 0;
	for (size_t i = 0; i < r->len[s]; i++) {
		if (b[i] != '\n')
			continue;
		if (prefix)
			fprintf(f, "[%d] ", rank);
		fwrite(b + start, 1, i + 1 - start, f);
		start = i + 1;
	}
	if ((final || r->len[s] - start >= LINEMAX / 2) && start < r->len[s]) {
		if (prefix)
			fprintf(f, "[%d] ", rank);
		fwrite(b + start, 1, r->len[s] - start, f);
		fputc('\n', f);
		start = r->len[s];
	}
	memmove(b, b + start, r->len[s] - start);
	r->len[s] -= start;
	fflush(f);
}

static void kill_all(rank_t *rk, int n, int sig)
{
	for (int i = 0; i < n; i++)
		if (!rk[i].exited && rk[i].pid > 0)
			kill(-rk[i].pid, sig);   /* its process group */
}

int main(int argc, char **argv)
{
	int n = 0, prefix = 1, i;
	const char *netns = NULL, *addr = NULL, *transport = NULL;
	double timeout = 0, grace = 5;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		long long x;
		int takes = !strcmp(a, "-np") || !strcmp(a, "-n") || !strcmp(a, "--netns") || !strcmp(a, "--addr") ||
		            !strcmp(a, "--timeout") || !strcmp(a, "--grace") || !strcmp(a, "--transport");
		if (takes && i + 1 >= argc) {
			fprintf(stderr, "collrun: error: %s needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "-np") || !strcmp(a, "-n")) {
			/* ranks are below 65536 on the wire (rt.h's late_rank) */
			if (flag_int(a, argv[++i], 1, 65536, &x))
				return 2;
			n = (int)x;
		} else if (!strcmp(a, "--netns"))
			netns = argv[++i];
		else if (!strcmp(a, "--addr")) {
			addr = argv[++i];
			if (check_addr_port(addr))
				return 2;
		} else if (!strcmp(a, "--timeout")) {
			if (flag_seconds(a, argv[++i], 0, &timeout))
				return 2;
		} else if (!strcmp(a, "--grace")) {
			if (flag_seconds(a, argv[++i], 1, &grace))
				return 2;
		} else if (!strcmp(a, "--transport"))
			transport = argv[++i];
		else if (!strcmp(a, "--no-prefix"))
			prefix = 0;
		else if (!strcmp(a, "--transports")) {
			for (int t = 0; t < NTRANSPORTS; t++)
				printf("%s\t%s\t%s\n", transports[t].name, transports[t].where, transports[t].what);
			return 0;
		}
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (a[0] == '-') {
			fprintf(stderr, "collrun: error: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		} else
			break;
	}
	if (n < 1 || i >= argc) {
		fprintf(stderr, "collrun: error: %s\n", n < 1 ? "need -np N with N >= 1" : "no program given");
		usage(stderr);
		return 2;
	}
	if (transport && !known_transport(transport)) {
		fprintf(stderr, "collrun: error: unknown transport '%s' (expected auto or one of:", transport);
		for (int t = 0; t < NTRANSPORTS; t++)
			fprintf(stderr, " %s", transports[t].name);
		fprintf(stderr, ")\n");
		return 2;
	}
	char addrbuf[300], secret[33], num[32], master[300], mport[16] = "";
	int held[2] = {-1, -1};   /* reserved ports (reserve_port), held until exit */
	if (netns) {
		char ns[256], path[512], err[600];
		if (!netns_fmt_ok(netns)) {
			fprintf(stderr, "collrun: error: --netns '%s' must contain exactly one %%d (e.g. h%%d)\n", netns);
			return 2;
		}
		for (int r = 0; r < n; r++) {
			snprintf(ns, sizeof ns, netns, r);
			if (netns_path(ns, path, sizeof path) < 0) {
				fprintf(stderr, "collrun: error: rank %d: no network namespace '%s' (%s does not exist)\n", r, ns,
				        path);
				return 2;
			}
		}
		if (!addr) {
			snprintf(ns, sizeof ns, netns, 0);
			if (netns_addr(ns, addrbuf, sizeof addrbuf, err, sizeof err) < 0) {
				fprintf(stderr, "collrun: error: --netns without --addr: %s\n", err);
				return 2;
			}
		}
	}
	if (netns && !addr)
		; /* found above */
	else if (!addr)
		snprintf(addrbuf, sizeof addrbuf, "127.0.0.1:%d", reserve_port(&held[0]));
	else if (!strchr(addr, ':') || addr[strlen(addr) - 1] == ']')
		snprintf(addrbuf, sizeof addrbuf, "%s:%d", addr, 20000 + (int)(getpid() % 30000));
	else
		snprintf(addrbuf, sizeof addrbuf, "%s", addr);
	/* torch's launcher variables too, so that init_process_group() with
	 * its default env:// rendezvous runs under collrun as under torchrun:
	 * MASTER_ADDR is rank 0's host, MASTER_PORT a second reserved port
	 * (programs that run their own server there, torch's TCPStore, never
	 * meet coll's rendezvous on COLL_ADDR).  MASTER_ADDR and MASTER_PORT
	 * set in collrun's own environment are passed on as they are. */
	snprintf(master, sizeof master, "%s", addrbuf);
	if (master[0] == '[') {
		char *e = strchr(master, ']');
		memmove(master, master + 1, strlen(master));
		if (e)
			*(e - 1) = 0;
	} else if (strrchr(master, ':')) {
		*strrchr(master, ':') = 0;
	}
	if (!getenv("MASTER_PORT"))
		snprintf(mport, sizeof mport, "%d", reserve_port(&held[1]));
	unsigned char rnd[16];
	ssize_t got_rnd;
	while ((got_rnd = getrandom(rnd, sizeof rnd, 0)) < 0 && errno == EINTR)
		;
	if (got_rnd != (ssize_t)sizeof rnd) {
		fprintf(stderr, "collrun: error: no kernel randomness for the job's secret (getrandom: %s)\n",
		        got_rnd < 0 ? strerror(errno) : "short read");
		return 1;
	}
	for (int k = 0; k < 16; k++)
		snprintf(secret + 2 * k, 3, "%02x", rnd[k]);

	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rank_t *rk = calloc((size_t)n, sizeof *rk);
	struct pollfd *pf = calloc((size_t)n * 2, sizeof *pf);
	int *pmap = calloc((size_t)n * 2, sizeof *pmap);
	if (!rk || !pf || !pmap) {
		fprintf(stderr, "collrun: error: out of memory\n");
		return 1;
	}
	pid_t me = getpid();
	for (int r = 0; r < n; r++) {
		int po[2], pe[2];
		if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
			fprintf(stderr, "collrun: error: pipe: %s\n", strerror(errno));
			kill_all(rk, r, SIGKILL);
			return 1;
		}
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "collrun: error: fork: %s\n", strerror(errno));
			kill_all(rk, r, SIGKILL);
			return 1;
		}
		if (pid == 0) {
			setpgid(0, 0);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != me)
				_exit(127);
			dup2(po[1], 1);
			dup2(pe[1], 2);
			signal(SIGPIPE, SIG_DFL);
			snprintf(num, sizeof num, "%d", r);
			setenv("COLL_RANK", num, 1);
			snprintf(num, sizeof num, "%d", n);
			setenv("COLL_NRANKS", num, 1);
			setenv("COLL_ADDR", addrbuf, 1);
			setenv("COLL_SECRET", secret, 1);
			/* one host, or with --netns one emulated host per rank */
			snprintf(num, sizeof num, "%d", r);
			setenv("RANK", num, 1);
			setenv("LOCAL_RANK", netns ? "0" : num, 1);
			snprintf(num, sizeof num, "%d", n);
			setenv("WORLD_SIZE", num, 1);
			setenv("LOCAL_WORLD_SIZE", netns ? "1" : num, 1);
			if (mport[0]) {
				setenv("MASTER_ADDR", master, 1);
				setenv("MASTER_PORT", mport, 1);
			}
			if (transport)
				setenv("COLL_TRANSPORT", transport, 1);
			if (netns) {
				char ns[256];
				snprintf(ns, sizeof ns, netns, r);
				int e = enter_netns(ns);
				if (e) {
					fprintf(stderr, "collrun: error: cannot enter network namespace '%s': %s\n", ns,
					        strerror(e));
					_exit(127);
				}
			}
			execvp(argv[i], argv + i);
			fprintf(stderr, "collrun: error: cannot run %s: %s\n", argv[i], strerror(errno));
			_exit(127);
		}
		setpgid(pid, pid);
		close(po[1]);
		close(pe[1]);
		rk[r].pid = pid;
		rk[r].out[0] = po[0];
		rk[r].out[1] = pe[0];
		rk[r].buf[0] = malloc(LINEMAX);
		rk[r].buf[1] = malloc(LINEMAX);
	}

	double start = now_s(), fail_at = 0, term_at = 0, reaped_all_at = 0;
	int first_fail = 0, first_rank = -1, live = n, killed_for_timeout = 0;
	for (;;) {
		int np = 0;
		for (int r = 0; r < n; r++)
			for (int s = 0; s < 2; s++)
				if (rk[r].out[s] >= 0) {
					pmap[np] = r * 2 + s;
					pf[np++] = (struct pollfd){rk[r].out[s], POLLIN, 0};
				}
		if (live == 0 && (np == 0 || (reaped_all_at && now_s() - reaped_all_at > 1.0)))
			break;
		poll(pf, (nfds_t)np, 50);
		for (int k = 0; k < np; k++) {
			if (!pf[k].revents)
				continue;
			int r = pmap[k] / 2, s = pmap[k] % 2, fd = rk[r].out[s];
			ssize_t got = read(fd, rk[r].buf[s] + rk[r].len[s], LINEMAX - rk[r].len[s]);
			if (got > 0) {
				rk[r].len[s] += (size_t)got;
				emit(&rk[r], r, s, 0, prefix);
			} else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
				emit(&rk[r], r, s, 1, prefix);
				close(fd);
				rk[r].out[s] = -1;
			}
		}
		int st;
		pid_t p;
		while ((p = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
			for (int r = 0; r < n; r++) {
				if (rk[r].pid != p)
					continue;
				if (WIFSTOPPED(st)) {   /* not a failure yet: its peers will say (timeout) */
					fprintf(stderr, "collrun: rank %d (pid %d) stopped by signal %d\n", r, (int)p, WSTOPSIG(st));
					break;
				}
				rk[r].exited = 1;
				rk[r].status = st;
				live--;
				int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				if (code != 0) {
					if (WIFSIGNALED(st))
						fprintf(stderr, "collrun: rank %d (pid %d) killed by signal %d\n", r, (int)p, WTERMSIG(st));
					else
						fprintf(stderr, "collrun: rank %d (pid %d) exited with code %d\n", r, (int)p, code);
					/* A rank killed by a signal counts first over one
					 * that exited with an error up to 1 s before (and
					 * before collrun killed anything): a killed process
					 * closes its sockets before it can be reaped, so a
					 * peer that sees that, reports it and exits can be
					 * reaped first; it is the echo, not the cause. */
					if (!first_fail ||
					    (WIFSIGNALED(st) && !term_at && now_s() - fail_at < 1.0 && first_rank >= 0 &&
					     !WIFSIGNALED(rk[first_rank].status))) {
						first_fail = code;
						first_rank = r;
						fail_at = now_s();
					}
				}
			}
		}
		if (live == 0 && !reaped_all_at)
			reaped_all_at = now_s();
		double t = now_s();
		if (got_signal) {
			fprintf(stderr, "collrun: got signal %d, killing all ranks\n", (int)got_signal);
			kill_all(rk, n, SIGTERM);
			usleep(200000);
			kill_all(rk, n, SIGKILL);
			if (!first_fail)
				first_fail = 128 + got_signal;
			got_signal = 0;
			term_at = t;
		}
		if (timeout > 0 && !killed_for_timeout && t - start > timeout && live) {
			fprintf(stderr, "collrun: timeout after %.1f s, killing all ranks\n", timeout);
			kill_all(rk, n, SIGTERM);
			killed_for_timeout = 1;
			term_at = t;
		}
		if (first_fail && live && !term_at && t - fail_at > grace) {
			fprintf(stderr, "collrun: rank failed %.1f s ago, terminating %d remaining rank(s)\n", grace, live);
			kill_all(rk, n, SIGTERM);
			term_at = t;
		}
		if (term_at && live && t - term_at > 1.0)
			kill_all(rk, n, SIGKILL);
	}
	/* Make sure nothing survives (grandchildren in the groups). */
	for (int r = 0; r < n; r++)
		kill(-rk[r].pid, SIGKILL);
	if (first_rank >= 0 && !killed_for_timeout) {
		int st = rk[first_rank].status;
		if (WIFSIGNALED(st))
			fprintf(stderr, "collrun: rank %d failed first (killed by signal %d, exit %d)\n", first_rank,
			        WTERMSIG(st), first_fail);
		else
			fprintf(stderr, "collrun: rank %d failed first (exit %d)\n", first_rank, first_fail);
	}
	for (int r = 0; r < n; r++) {
		free(rk[r].buf[0]);
		free(rk[r].buf[1]);
	}
	free(rk);
	free(pf);
	free(pmap);
	return killed_for_timeout ? 124 : first_fail;
}
