/*
 * tcp.c - TCP transport: one socket per peer, non-blocking, one poll()
 * progress engine.
 *
 * At connect every rank dials the lower ranks' listeners (addresses from
 * the bootstrap) and accepts the higher ones; each link proves the shared
 * secret (auth.c) and names its rank.  The listener serves every
 * handshake at once, each with its own short deadline (auth.c's
 * rt_hs_wait), so a stranger connected to it delays nobody; it is bound to
 * the rendezvous interface (bootstrap.c) and closed once every link is up
 * (comm.c).  On the wire a message is a frame: {u32 length, u32 type} then
 * the body, then with COLL_AUTH=mac an 8-byte MAC ("Integrity" below).
 * DATA bodies are the executor's header + payload; an ABORT body is
 * {rank, code, the words of the failure} of the rank where it started
 * (relayed as received, so every rank names the origin).  Sends go out with
 * sendmsg straight from the caller's buffers (no copy).  Receives read the
 * executor header into the request and complete with the payload still in
 * the socket (rt_req.pend): the executor reads it with tcp_read straight
 * into the destination chunk (copies) or through a cache-sized staging
 * buffer (reductions), so the payload is copied once, by the kernel.  When
 * the executor cannot take it yet, it asks for the old path: the payload
 * goes into a pooled buffer of max_msg bytes that it applies from later and
 * releases.  Frames are read only when a receive is posted for that peer,
 * so an idle rank exerts TCP back-pressure instead of buffering without
 * bound.  A peer that dies shows up as EOF/reset on its socket
 * (COLL_ERR_PEER) as soon as data from it is needed or a write to it
 * fails; a peer that cannot be reached at all (its link is down) as an
 * ETIMEDOUT once data to it stayed unacknowledged for COLL_TIMEOUT
 * (TCP_USER_TIMEOUT), or as the executor's inactivity timeout.  peek lets
 * the executor look at the header of a message nobody has asked for yet.
 *
 * Waiting: when every local rank has a core, progress() busy-polls for
 * COLL_TCP_SPIN_US (default 50) before it blocks in poll(); with more
 * local ranks than cores it blocks at once, so that a waiting rank gives
 * its core to one that has data to move.
 *
 * Tunables: COLL_TCP_SEG_BYTES (payload per message, default 1 MiB),
 * COLL_TCP_SNDBUF / COLL_TCP_RCVBUF (socket buffer bytes; defaults 512 KiB
 * and the kernel's autotuning; 0 leaves the kernel's choice).  A small
 * send buffer keeps the bytes in flight in cache: with 4 MiB, ring
 * allreduce at 64 MiB ran 10-20% slower on 2 cores (n = 2..8); 1 MiB
 * segments beat 512 KiB ones by up to 20% at 256 MiB (n = 2) and were no
 * slower from 1 MiB up.  The kernel's receive autotuning suits loopback
 * (a fixed 256 KiB halved ring's busbw there), but on slow shared links it
 * lets a rank that runs ahead park MiBs in a busy peer's link: the
 * emulated-cluster benchmarks fix it at 256 KiB (tests/bench/netns_stragglar.sh).
 *
 * As one rail of several (rails.c, "As a rail" at the end): the same links
 * over one network, named by an interface or a local address, with a
 * listener of their own that stays open so that a link which failed can be
 * made again while the job runs.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

enum { FR_DATA = 1, FR_ABORT = 2 };
#define ABORT_TEXT 320   /* most bytes of an abort's reason on the wire (comm->err's size) */
enum { RD_HDR, RD_BODY, RD_HELD, RD_EXH, RD_STREAM, RD_MAC };

typedef struct tcp_buf { struct tcp_buf *next; } tcp_buf;

typedef struct {
	int fd;
	rt_reqq sq;                 /* sends; the head is being written */
	uint32_t sfh[2];            /* frame header of the head send */
	size_t soff;                /* bytes of the head frame written */
	rt_reqq rq;                 /* posted receives */
	rt_req *cur;                /* the receive the frame being read belongs to */
	int rstate;
	uint32_t rfh[2];
	size_t rgot;
	char *rbuf;
	int eof_seen;               /* peer shut its side; report when data is needed */
	/* COLL_AUTH=mac (see "Integrity" above) */
	uint8_t txk[16], rxk[16];   /* this link's keys, one per direction */
	uint64_t txseq, rxseq;      /* frames sealed towards the peer / checked from it */
	uint64_t head_seq;          /* the sequence number the head send was sealed with */
	rt_sip ssip, rsip;          /* the MACs of the head send and of the frame being read, so far */
	uint64_t smac;              /* the head send's MAC trailer, once its body is out */
	uint64_t rmac;              /* the trailer of the frame being read */
} tcp_peer;

typedef struct {
	rt_tp base;
	int rank, n;
	int mac;                    /* COLL_AUTH=mac */
	tcp_peer *peers;
	struct pollfd *pfd;
	int *pfd_peer;
	tcp_buf *free_bufs;
	int64_t spin_ns;            /* busy-poll this long before blocking in poll() */
	/* The first abort heard of (rank, code, its words): relayed as it came,
	 * so that every rank names where a failure started. */
	int ab_from, ab_code;
	char ab_text[ABORT_TEXT];
	/* Socket settings every link gets (tune), new ones too. */
	int sndbuf, rcvbuf;
	unsigned user_timeout;
	/* As a rail (else rail = -1, lfd = -1): this rail's listener, every
	 * rank's address on it, and what a handshake needs once the bootstrap
	 * is gone. */
	int rail, lfd;
	struct sockaddr_storage *raddr;
	socklen_t *rlen;
	uint8_t key[16];
	uint64_t jobid;
} tcp_tp;

static void tcp_close(rt_tp *tp)
{
	tcp_tp *t = (tcp_tp *)tp;
	if (!t)
		return;
	for (int r = 0; t->peers && r < t->n; r++) {
		if (t->peers[r].fd >= 0)
			close(t->peers[r].fd);
		free(t->peers[r].rbuf);
	}
	while (t->free_bufs) {
		tcp_buf *b = t->free_bufs;
		t->free_bufs = b->next;
		free(b);
	}
	if (t->lfd >= 0)
		close(t->lfd);
	free(t->peers);
	free(t->pfd);
	free(t->pfd_peer);
	free(t->raddr);
	free(t->rlen);
	free(t);
}

/* The key of one direction of a link, from the session key both ends
 * derived in the handshake: a frame cannot be reflected back to its
 * sender or moved to another link or job. */
static void dir_key(const uint8_t sess[16], int from, int to, uint8_t out[16])
{
	struct { char dom[4]; int32_t from, to; uint32_t half; } m = {{'M', 'A', 'C', 0}, from, to, 0};
	uint64_t a = rt_siphash(sess, &m, sizeof m);
	m.half = 1;
	uint64_t b = rt_siphash(sess, &m, sizeof m);
	memcpy(out, &a, 8);
	memcpy(out + 8, &b, 8);
}

static void link_up(tcp_tp *t, int r, int fd, const uint8_t sess[16])
{
	t->peers[r].fd = fd;
	dir_key(sess, t->rank, r, t->peers[r].txk);
	dir_key(sess, r, t->rank, t->peers[r].rxk);
}

/* A transport with no links yet. */
static int tcp_new(coll_comm *c, tcp_tp **out)
{
	tcp_tp *t = calloc(1, sizeof *t);
	*out = t;
	if (!t)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	long seg = rt_env_long("COLL_TCP_SEG_BYTES", 1024 * 1024);   /* at least 4 KiB: env.def */
	t->base.comm = c;
	t->base.ops = &tcp_transport;
	t->base.max_msg = (size_t)seg + sizeof(rt_hdr);
	t->base.send_window = 4;
	t->base.recv_window = 4;
	t->base.err_peer = -1;
	t->rank = c->rank;
	t->n = c->n;
	t->mac = c->mac;
	t->ab_from = -1;
	t->rail = -1;
	t->lfd = -1;
	memcpy(t->key, c->boot.key, sizeof t->key);
	t->jobid = c->boot.jobid;
	/* every fd -1 before anything can fail: tcp_close closes what is >= 0,
	 * and a calloc'd 0 is stdin */
	t->peers = calloc((size_t)t->n, sizeof *t->peers);
	for (int r = 0; t->peers && r < t->n; r++)
		t->peers[r].fd = -1;
	t->pfd = calloc((size_t)t->n, sizeof *t->pfd);
	t->pfd_peer = calloc((size_t)t->n, sizeof *t->pfd_peer);
	if (!t->peers || !t->pfd || !t->pfd_peer)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	t->spin_ns = rt_spin_ns(c, "COLL_TCP_SPIN_US");
	t->sndbuf = (int)rt_env_long("COLL_TCP_SNDBUF", 512 << 10);
	t->rcvbuf = (int)rt_env_long("COLL_TCP_RCVBUF", 0);
	/* A link whose data goes unacknowledged as long as the inactivity
	 * timeout (a cable pulled, a veth taken down) fails with ETIMEDOUT
	 * naming the peer, instead of after TCP's ~15 minutes of retries.  A
	 * stopped peer's kernel still acknowledges (and answers zero-window
	 * probes), so this never fires on a slow or stopped rank.  A rail
	 * gives up sooner than that on its own (rails/failover.c), and says so. */
	t->user_timeout = c->timeout_ms > 0 && c->timeout_ms < 0x7fffffff ? (unsigned)c->timeout_ms : 0;
	return COLL_OK;
}

/* The socket settings of a link, then non-blocking. */
static void tune(const tcp_tp *t, int fd)
{
	if (t->sndbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &t->sndbuf, sizeof t->sndbuf);
	if (t->rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &t->rcvbuf, sizeof t->rcvbuf);
	if (t->user_timeout)
		setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &t->user_timeout, sizeof t->user_timeout);
	rt_set_nonblock(fd, 1);
}

/* Links to every other rank: dial the lower ranks' addresses, accept the
 * higher ones on lfd, each proving the key for purpose. */
static int mesh(tcp_tp *t, const struct sockaddr_storage *addrs, const socklen_t *lens, int lfd, int purpose)
{
	coll_comm *c = t->base.comm;
	int64_t dl = c->boot.deadline_ms;
	int rc = COLL_OK;
	uint8_t sess[16];
	/* Dial down, accept up: no cycle of waits.  The peer we dial may be
	 * busy dialling its own lower ranks, so we wait for its greeting as
	 * long as the bootstrap lasts; if it dropped our handshake, dial again. */
	for (int r = 0; r < t->rank; r++) {
		char a[80], who[112];
		snprintf(who, sizeof who, "rank %d at %s", r, rt_addr_str(&addrs[r], a, sizeof a));
		for (;;) {
			int fd;
			if ((rc = rt_connect(c, &addrs[r], lens[r], dl, &fd)))
				return rc;
			rc = rt_auth_client(c, fd, t->key, t->rank, purpose, 0, t->jobid, dl, who, sess);
			if (rc == COLL_OK) {
				link_up(t, r, fd, sess);
				break;
			}
			close(fd);
			if (rc != COLL_ERR_PEER || rt_now_ms() + 50 >= dl)
				return rc;
			struct timespec ts = {0, 50000000};
			nanosleep(&ts, NULL);
		}
	}
	/* Every handshake on our listener at once, each with its own short
	 * deadline (auth.c), so that strangers there delay nobody. */
	rt_hs_server hs;
	rt_hs_start(&hs, c, lfd, t->key, purpose, t->jobid);
	for (int got = 0; got < t->n - 1 - t->rank;) {
		int ev;
		rt_hs_peer pr;
		if ((rc = rt_hs_wait(&hs, dl, NULL, 0, &ev, &pr)))
			break;
		if (ev == RT_HS_TIME) {
			char missing[160] = "";
			size_t o = 0;
			for (int r = t->rank + 1; r < t->n && o + 12 < sizeof missing; r++)
				if (t->peers[r].fd < 0)
					o += (size_t)snprintf(missing + o, sizeof missing - o, " %d", r);
			rc = rt_err(c, COLL_ERR_TIMEOUT, "tcp: timed out waiting for rank(s)%s to connect", missing);
			break;
		}
		if (ev != RT_HS_PEER)
			continue;
		/* It proved the key and this job's id: a rank of ours, but not a
		 * link we expect (cannot happen with a sane peer): ignore it. */
		if (pr.rank <= (uint32_t)t->rank || pr.rank >= (uint32_t)t->n || t->peers[pr.rank].fd >= 0) {
			close(pr.fd);
			continue;
		}
		link_up(t, (int)pr.rank, pr.fd, pr.sess);
		got++;
	}
	rt_hs_stop(&hs);
	if (rc)
		return rc;
	for (int r = 0; r < t->n; r++)
		if (t->peers[r].fd >= 0)
			tune(t, t->peers[r].fd);
	return COLL_OK;
}

static int tcp_connect(coll_comm *c, rt_tp **out)
{
	tcp_tp *t;
	int rc = tcp_new(c, &t);
	*out = t ? &t->base : NULL;
	if (rc || (rc = mesh(t, c->boot.addrs, c->boot.addrlens, c->boot.listen_fd, RT_PURPOSE_TCP)))
		return rc;
	return rt_boot_barrier(c);
}

/* A link's failure; it names the peer (rt_tp.err_peer) so that rails.c
 * can fail over from that link alone. */
static int peer_err(tcp_tp *t, int r, int err)
{
	t->base.err_peer = r;
	if (err == 0 || err == ECONNRESET || err == EPIPE)
		return rt_err(t->base.comm, COLL_ERR_PEER, "rank %d closed its connection (process died?)", r);
	/* TCP_USER_TIMEOUT (= COLL_TIMEOUT) also ends a link whose peer keeps
	 * its receive window shut that long: a live rank that is not reading
	 * this link (busy with earlier rounds on a congested network) looks the
	 * same from here as a dead link, so the message names both. */
	if (err == ETIMEDOUT)
		return rt_err(t->base.comm, COLL_ERR_PEER, "rank %d unreachable: data to it went unacknowledged, or its "
		              "receive window stayed shut, for %.1f s (link down? or rank %d not reading that long: "
		              "TCP_USER_TIMEOUT = COLL_TIMEOUT)", r, (double)t->base.comm->timeout_ms / 1000, r);
	return rt_err(t->base.comm, COLL_ERR_SYSTEM, "tcp link to rank %d: %s", r, strerror(err));
}

/* --- integrity (COLL_AUTH=mac) ----------------------------------------------
 * A frame's MAC is SipHash-2-4 under its direction's key of (sequence
 * number, frame header, body); the sequence number is counted by both ends,
 * never sent, so a replayed, reordered, dropped or injected frame fails
 * like an altered one.  Why SipHash-2-4 with a 64-bit tag: it is a PRF
 * designed for short keyed hashes, already here for the handshake, needs
 * no tables or CPU extensions, and a forger who cannot see the key wins
 * one guess in 2^64 -- and has one guess per job, because the first bad
 * frame ends it (COLL_ERR_PROTOCOL).  What it is not: encryption (the
 * payload is in clear), nor protection of availability (whoever can
 * inject into a TCP stream can reset it), nor stronger than the secret
 * the keys come from (collrun's is 128 random bits; a short
 * human-chosen COLL_SECRET can be guessed offline from one recorded
 * handshake).  Its cost is one pass of SipHash over every byte on each
 * end (1.3-2.7 GB/s per core on the development VM, as its load varies):
 * ring allreduce from 1 MiB up ran at about a third of its speed without
 * (runtime/README.md, "Failures and security", has the table and the command); a
 * Carter-Wegman MAC (Poly1305, UMAC) would cost less per byte and is the
 * way to go if that matters.  Sends are hashed straight from the
 * caller's buffers as the kernel takes them (so hashing overlaps with the
 * peer reading what went before) and the trailer follows the body;
 * received frames are hashed as they arrive, buffered whole and checked
 * before any byte reaches the executor (no streaming in this mode), so
 * no unverified data is ever reduced, copied out or sent on. */

static uint64_t frame_mac(const uint8_t key[16], uint64_t seq, const uint32_t fh[2], const struct iovec *iov, int cnt)
{
	rt_sip s;
	rt_sip_init(&s, key);
	rt_sip_update(&s, &seq, sizeof seq);
	rt_sip_update(&s, fh, 2 * sizeof *fh);
	for (int i = 0; i < cnt; i++)
		rt_sip_update(&s, iov[i].iov_base, iov[i].iov_len);
	return rt_sip_final(&s);
}

/* Check the trailer of the frame just read against want, its MAC. */
static int frame_check(tcp_tp *t, int r, uint64_t want)
{
	tcp_peer *p = &t->peers[r];
	if (want ^ p->rmac)   /* (one 64-bit compare: no early exit to time) */
		return rt_err(t->base.comm, COLL_ERR_PROTOCOL, "tcp: frame %llu from rank %d failed its integrity check "
		              "(COLL_AUTH=mac): altered, injected or replayed on the way", (unsigned long long)p->rxseq, r);
	p->rxseq++;
	return COLL_OK;
}

/* The head of p's send queue starts: its frame header, and with MACs the
 * hash of what it will send (its iov memory is ours until it is done). */
static void start_head(tcp_tp *t, tcp_peer *p)
{
	rt_req *q = p->sq.head;
	size_t len = 0;
	for (int i = 0; i < q->iovcnt; i++)
		len += q->iov[i].iov_len;
	p->sfh[0] = (uint32_t)len;
	p->sfh[1] = FR_DATA;
	p->soff = 0;
	if (t->mac) {
		p->head_seq = p->txseq++;
		rt_sip_init(&p->ssip, p->txk);
		rt_sip_update(&p->ssip, &p->head_seq, sizeof p->head_seq);
		rt_sip_update(&p->ssip, p->sfh, sizeof p->sfh);
	}
}

/* Hash the head send's body bytes at frame offsets [from, to) (the frame
 * header, offsets 0..7, was hashed by start_head). */
static void seal_sent(tcp_peer *p, const rt_req *q, size_t from, size_t to)
{
	size_t off = sizeof p->sfh;
	for (int i = 0; i < q->iovcnt; off += q->iov[i++].iov_len) {
		size_t a = from > off ? from : off, b = to < off + q->iov[i].iov_len ? to : off + q->iov[i].iov_len;
		if (a < b)
			rt_sip_update(&p->ssip, (const char *)q->iov[i].iov_base + (a - off), b - a);
	}
}

/* Write as much of the send queue as the socket takes. */
static int do_write(tcp_tp *t, int r, int *moved)
{
	tcp_peer *p = &t->peers[r];
	while (p->sq.head) {
		rt_req *q = p->sq.head;
		struct iovec iov[5];
		int cnt = 0;
		size_t skip = p->soff, total = sizeof p->sfh;
		iov[cnt++] = (struct iovec){p->sfh, sizeof p->sfh};
		for (int i = 0; i < q->iovcnt; i++) {
			iov[cnt++] = q->iov[i];
			total += q->iov[i].iov_len;
		}
		size_t end = total;   /* of header and body */
		if (t->mac && p->soff >= end) {   /* the body is out and hashed: its MAC */
			iov[cnt++] = (struct iovec){&p->smac, sizeof p->smac};
			total += sizeof p->smac;
		}
		int first = 0;
		while (skip && skip >= iov[first].iov_len)
			skip -= iov[first++].iov_len;
		struct iovec tmp = iov[first];
		iov[first].iov_base = (char *)tmp.iov_base + skip;
		iov[first].iov_len = tmp.iov_len - skip;
		struct msghdr mh = {0};
		mh.msg_iov = iov + first;
		mh.msg_iovlen = (size_t)(cnt - first);
		ssize_t w = sendmsg(p->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return COLL_OK;
			return peer_err(t, r, errno);
		}
		*moved = 1;
		size_t was = p->soff;
		p->soff += (size_t)w;
		if (t->mac && was < end) {
			seal_sent(p, q, was, p->soff);
			if (p->soff == end) {
				p->smac = rt_sip_final(&p->ssip);
				continue;   /* the trailer next */
			}
		}
		if (p->soff < total)
			return COLL_OK;
		q->done = 1;
		p->soff = 0;
		rt_reqq_pop(&p->sq);
		if (p->sq.head)
			start_head(t, p);
	}
	return COLL_OK;
}

static char *get_buf(tcp_tp *t)
{
	tcp_buf *b = t->free_bufs;
	if (b) {
		t->free_bufs = b->next;
		return (char *)b;
	}
	return malloc(t->base.max_msg < sizeof(tcp_buf) ? sizeof(tcp_buf) : t->base.max_msg);
}

/* An ABORT frame's header is in p->rfh: read its body ({rank, code} and
 * the words of the rank where the failure started) and its trailer, and
 * report it.  Blocks up to 1 s: the sender wrote it in one piece. */
static int take_abort(tcp_tp *t, int r)
{
	tcp_peer *p = &t->peers[r];
	struct { int32_t rank, code; char text[ABORT_TEXT]; } b;
	memset(&b, 0, sizeof b);
	uint32_t len = p->rfh[0];
	int64_t dl = rt_now_ms() + 1000;
	if (len < 8 || len > sizeof b)
		return rt_err(t->base.comm, COLL_ERR_PROTOCOL, "tcp: bad abort frame from rank %d", r);
	if (rt_read_full(t->base.comm, p->fd, &b, len, dl, "a peer") ||
	    (t->mac && rt_read_full(t->base.comm, p->fd, &p->rmac, sizeof p->rmac, dl, "a peer"))) {
		b.rank = r, b.code = COLL_ERR_ABORTED;   /* it failed and left: that is all we know */
		len = 8;
	} else if (t->mac) {
		struct iovec iov = {&b, len};
		if (frame_check(t, r, frame_mac(p->rxk, p->rxseq, p->rfh, &iov, 1)))
			return COLL_ERR_PROTOCOL;
	}
	char *text = b.text;
	text[len - 8 < ABORT_TEXT ? len - 8 : ABORT_TEXT - 1] = 0;
	for (char *c = text; *c; c++)   /* another rank's words, printed on our terminal */
		if (*c < ' ' || *c > '~')
			*c = '?';
	if (b.code <= 0 || b.code > COLL_ERR_UNSUPPORTED)
		b.code = COLL_ERR_ABORTED;
	if (t->ab_from < 0) {
		t->ab_from = b.rank;
		t->ab_code = b.code;
		snprintf(t->ab_text, sizeof t->ab_text, "%s", text);
	}
	return rt_err(t->base.comm, rt_abort_code(b.code), "rank %d aborted (%s)%s%s", b.rank,
	              coll_strerror((coll_result)b.code), *text ? ": " : "", text);
}

/* Read frames for posted receives until the socket is empty.  A DATA
 * frame's executor header is read into the receive itself, which then
 * completes with the payload left in the socket (RD_STREAM) for tcp_read;
 * only when the executor cannot take it yet is it read into a pooled
 * buffer (RD_BODY).  With MACs every frame is read whole into a buffer and
 * its trailer (RD_MAC) checked before the receive completes. */
static int do_read(tcp_tp *t, int r, int *moved)
{
	tcp_peer *p = &t->peers[r];
	for (;;) {
		if (p->rstate == RD_STREAM)
			return COLL_OK;   /* the executor takes the payload (tcp_read) */
		if (p->rstate == RD_HELD) {
			if (!p->rq.head)
				return COLL_OK;
			p->cur = rt_reqq_pop(&p->rq);
			p->rgot = 0;
			if (p->rfh[0] >= sizeof(rt_hdr) && !t->mac) {
				p->rstate = RD_EXH;
			} else {
				p->rstate = RD_BODY;
				if (!(p->rbuf = get_buf(t)))
					return rt_err(t->base.comm, COLL_ERR_NOMEM, "out of memory");
			}
		}
		if (p->rstate == RD_HDR && p->rgot == 0 && !p->rq.head)
			return COLL_OK;   /* nothing expected: EOF here is a peer that is done */
		char *dst;
		size_t want;
		if (p->rstate == RD_HDR) {
			dst = (char *)p->rfh + p->rgot;
			want = sizeof p->rfh - p->rgot;
		} else if (p->rstate == RD_EXH) {
			dst = (char *)&p->cur->hdr + p->rgot;
			want = sizeof(rt_hdr) - p->rgot;
		} else if (p->rstate == RD_MAC) {
			dst = (char *)&p->rmac + p->rgot;
			want = sizeof p->rmac - p->rgot;
		} else {
			dst = p->rbuf + p->rgot;
			want = p->rfh[0] - p->rgot;
		}
		ssize_t n = want ? recv(p->fd, dst, want, MSG_DONTWAIT) : 0;
		if (want && n == 0)
			return peer_err(t, r, 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return COLL_OK;
			return peer_err(t, r, errno);
		}
		p->rgot += (size_t)n;
		*moved = 1;
		if (t->mac && p->rstate == RD_BODY)   /* hashed while it is in cache */
			rt_sip_update(&p->rsip, dst, (size_t)n);
		if (p->rstate == RD_HDR) {
			if (p->rgot < sizeof p->rfh)
				continue;
			if (p->rfh[1] == FR_ABORT)
				return take_abort(t, r);
			if (p->rfh[1] != FR_DATA || p->rfh[0] > t->base.max_msg)
				return rt_err(t->base.comm, COLL_ERR_PROTOCOL, "tcp: bad frame from rank %d", r);
			if (t->mac) {
				rt_sip_init(&p->rsip, p->rxk);
				rt_sip_update(&p->rsip, &p->rxseq, sizeof p->rxseq);
				rt_sip_update(&p->rsip, p->rfh, sizeof p->rfh);
			}
			p->rstate = RD_HELD;
			continue;
		}
		rt_req *q = p->cur;
		if (p->rstate == RD_EXH) {
			if (p->rgot < sizeof(rt_hdr))
				continue;
			q->data = &q->hdr;
			q->len = p->rfh[0];
			q->pend = p->rfh[0] - sizeof(rt_hdr);
			q->done = 1;
			if (q->pend) {
				p->rstate = RD_STREAM;
				return COLL_OK;
			}
		} else {
			if (p->rstate == RD_BODY && p->rgot < p->rfh[0])
				continue;
			if (p->rstate == RD_BODY && t->mac) {
				p->rstate = RD_MAC;
				p->rgot = 0;
				continue;
			}
			if (p->rstate == RD_MAC) {
				int rc;
				if (p->rgot < sizeof p->rmac)
					continue;
				if ((rc = frame_check(t, r, rt_sip_final(&p->rsip))))
					return rc;
			}
			q->data = p->rbuf;
			q->tpbuf = p->rbuf;
			q->len = p->rfh[0];
			q->pend = 0;
			q->done = 1;
			p->rbuf = NULL;
		}
		p->cur = NULL;
		p->rstate = RD_HDR;
		p->rgot = 0;
	}
}

/* The executor takes (dst) or declines (NULL) the payload of the frame in
 * RD_STREAM. */
static int tcp_read(rt_tp *tp, rt_req *q, void *dst, size_t max, size_t *got)
{
	tcp_tp *t = (tcp_tp *)tp;
	tcp_peer *p = &t->peers[q->peer];
	int moved = 0;
	if (got)
		*got = 0;
	if (p->cur != q || p->rstate != RD_STREAM)
		return rt_err(tp->comm, COLL_ERR_INVALID, "tcp: read of a receive that is not streaming");
	if (!dst) {
		if (!(p->rbuf = get_buf(t)))
			return rt_err(tp->comm, COLL_ERR_NOMEM, "out of memory");
		memcpy(p->rbuf, &q->hdr, sizeof(rt_hdr));
		p->rgot = sizeof(rt_hdr);
		p->rstate = RD_BODY;
		q->done = 0;
		q->data = NULL;
		return do_read(t, q->peer, &moved);
	}
	size_t want = max < q->pend ? max : q->pend;
	ssize_t n = want ? recv(p->fd, dst, want, MSG_DONTWAIT) : 0;
	if (want && n == 0)
		return peer_err(t, q->peer, 0);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return COLL_OK;
		return peer_err(t, q->peer, errno);
	}
	q->pend -= (size_t)n;
	*got = (size_t)n;
	if (!q->pend) {
		p->cur = NULL;
		p->rstate = RD_HDR;
		p->rgot = 0;
	}
	return COLL_OK;
}

static int tcp_post_send(rt_tp *tp, rt_req *req)
{
	tcp_tp *t = (tcp_tp *)tp;
	size_t len = 0;
	for (int i = 0; i < req->iovcnt; i++)
		len += req->iov[i].iov_len;
	if (len > tp->max_msg || req->iovcnt > 2 || req->peer < 0 || req->peer >= t->n || req->peer == t->rank)
		return rt_err(tp->comm, COLL_ERR_INVALID, "tcp: bad send (%zu bytes to rank %d)", len, req->peer);
	tcp_peer *p = &t->peers[req->peer];
	req->done = 0;
	rt_reqq_push(&p->sq, req);
	if (p->sq.head != req)
		return COLL_OK;
	start_head(t, p);
	int moved = 0;
	return do_write(t, req->peer, &moved);
}

static int tcp_post_recv(rt_tp *tp, rt_req *req)
{
	tcp_tp *t = (tcp_tp *)tp;
	if (req->peer < 0 || req->peer >= t->n || req->peer == t->rank)
		return rt_err(tp->comm, COLL_ERR_INVALID, "tcp: bad receive from rank %d", req->peer);
	tcp_peer *p = &t->peers[req->peer];
	req->done = 0;
	rt_reqq_push(&p->rq, req);
	return COLL_OK;
}

static void tcp_release(rt_tp *tp, rt_req *req)
{
	tcp_tp *t = (tcp_tp *)tp;
	tcp_buf *b = req->tpbuf;
	if (b) {
		b->next = t->free_bufs;
		t->free_bufs = b;
	}
	req->tpbuf = req->data = NULL;
}

/* One poll() over the links that have work, then reads and writes.  *ready:
 * some link had an event (it may be a payload only the executor takes). */
/* The links that have work and what to wait for on each: pfd[i] is
 * peer who[i]'s link.  Returns how many, at most max (-1: more). */
static int want_fds(const tcp_tp *t, struct pollfd *pfd, int *who, int max)
{
	int np = 0;
	for (int r = 0; r < t->n; r++) {
		const tcp_peer *p = &t->peers[r];
		if (p->fd < 0)
			continue;
		short ev = 0;
		if (p->sq.head)
			ev |= POLLOUT;
		/* Read only while data is expected: an EOF from a peer that
		 * finished and left is not an error until we need its data. */
		if (p->rq.head || p->cur || (p->rstate == RD_HDR && p->rgot))
			ev |= POLLIN;
		if (!p->eof_seen)
			ev |= POLLRDHUP;
		if (!ev)
			continue;
		if (np == max)
			return -1;
		pfd[np] = (struct pollfd){p->fd, ev, 0};
		if (who)
			who[np] = r;
		np++;
	}
	return np;
}

/* Read and write what one poll() over want_fds' fds says can be (pfd_peer
 * names each fd's peer). */
static int serve_fds(tcp_tp *t, const struct pollfd *pfd, int np, int *moved)
{
	int rc;
	for (int i = 0; i < np; i++) {
		short re = pfd[i].revents;
		int r = t->pfd_peer[i];
		if (!re)
			continue;
		if ((re & (POLLIN | POLLERR | POLLHUP)) && (pfd[i].events & POLLIN)) {
			if ((rc = do_read(t, r, moved)))
				return rc;
		}
		if (re & (POLLOUT | POLLERR)) {
			if ((rc = do_write(t, r, moved)))
				return rc;
		}
		if (re & (POLLRDHUP | POLLHUP))
			t->peers[r].eof_seen = 1;   /* data may still be buffered: EOF counts when read */
	}
	return COLL_OK;
}

static int io_pass(tcp_tp *t, int timeout_ms, int *moved, int *ready)
{
	int np = want_fds(t, t->pfd, t->pfd_peer, t->n);
	int k = poll(t->pfd, (nfds_t)np, timeout_ms);
	*ready = k > 0;
	if (k < 0)
		return errno == EINTR ? COLL_OK : rt_err(t->base.comm, COLL_ERR_SYSTEM, "poll: %s", strerror(errno));
	return k > 0 ? serve_fds(t, t->pfd, np, moved) : COLL_OK;
}

static int tcp_progress(rt_tp *tp, int timeout_ms)
{
	tcp_tp *t = (tcp_tp *)tp;
	int moved = 0, ready = 0, rc;
	if (t->n == 1)
		return COLL_OK;
	if ((rc = io_pass(t, 0, &moved, &ready)) || moved || ready || timeout_ms <= 0)
		return rc;
	/* Poll a little before blocking in poll() (rt_spin_ns). */
	for (int64_t until = rt_now_ns() + t->spin_ns; t->spin_ns > 0 && rt_now_ns() < until;)
		if ((rc = io_pass(t, 0, &moved, &ready)) || moved || ready)
			return rc;
	return io_pass(t, timeout_ms, &moved, &ready);
}

/* An ABORT frame can only follow a whole frame.  When one is half
 * written, write the rest of it first (its bytes are still the caller's),
 * for at most ABORT_FINISH_MS over all peers, so that the peer reads why
 * we stop instead of a connection cut mid-frame ("closed its
 * connection"): a rank that names a mismatch while it sends a large
 * message is the common case, and on a slow machine (sanitizers) the
 * others then blamed it for dying.  Nothing here is reported: the abort's
 * own reason stands, so comm->err is kept. */
#define ABORT_FINISH_MS 200
/* ... and then waits this long at most for the peers to close their ends
 * (linger_in). */
#define ABORT_LINGER_MS 1000

/* Read and drop whatever every peer sent that is already here.  While we
 * abort, a peer may be stuck writing to us (it runs another algorithm and
 * we never read what it sends): until we read, our ABORT cannot get past
 * its data to it, and closing with its data unread resets the connection,
 * which can throw away what we sent.  Nothing read here matters any more:
 * our own reason stands.  (fault-5.8, 4 ranks where one runs another
 * algorithm: the others said "rank 2 closed its connection" instead of
 * the mismatch in 6 runs of 40 before this.) */
static void drain_in(tcp_tp *t)
{
	char junk[16384];
	for (int r = 0; r < t->n; r++) {
		tcp_peer *p = &t->peers[r];
		for (int i = 0; p->fd >= 0 && i < 64; i++)
			if (recv(p->fd, junk, sizeof junk, MSG_DONTWAIT) <= 0)
				break;
	}
}

/* After the ABORT frames and our FINs: read and drop what peers send
 * until every one has closed its end too (or failed), for at most ms.  A
 * peer that was stuck writing to us reads our ABORT only after its own
 * write went through; if we closed with its data unread, our kernel would
 * answer with a reset, and a reset throws away what the peer had not read
 * yet, our ABORT included, so that it reported "closed its connection"
 * instead of why (fault-5.8, about 1 run in 40 with drain_in alone).  A
 * peer that heard the ABORT aborts and closes at once, so this ends as
 * soon as all have; only a peer that stopped answering costs the whole
 * bound. */
static void linger_in(tcp_tp *t, int ms)
{
	struct pollfd *pf = calloc((size_t)t->n, sizeof *pf);
	if (!pf) {
		drain_in(t);
		return;
	}
	int live = 0;
	for (int r = 0; r < t->n; r++) {
		pf[r].fd = t->peers[r].fd;
		pf[r].events = POLLIN;
		live += pf[r].fd >= 0;
	}
	char junk[16384];
	for (int64_t end = rt_now_ms() + ms; live > 0;) {
		int left = (int)(end - rt_now_ms());
		if (left <= 0 || poll(pf, (nfds_t)t->n, left) <= 0)
			break;
		for (int r = 0; r < t->n; r++) {
			if (pf[r].fd < 0 || !pf[r].revents)
				continue;
			ssize_t k = recv(pf[r].fd, junk, sizeof junk, MSG_DONTWAIT);
			if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
				pf[r].fd = -1;   /* closed (or broken): poll skips it */
				live--;
			}
		}
	}
	free(pf);
}

/* Wait up to ms for peer r's socket to take more, draining every peer
 * meanwhile (drain_in). */
static void wait_out(tcp_tp *t, int r, int ms)
{
	struct pollfd pf = {t->peers[r].fd, POLLOUT, 0};
	for (int64_t end = rt_now_ms() + ms; ms > 0;) {
		drain_in(t);
		int left = (int)(end - rt_now_ms());
		if (left <= 0 || poll(&pf, 1, left < 5 ? left : 5) != 0)
			return;
	}
}

static void finish_frame(tcp_tp *t, int r, int64_t deadline)
{
	tcp_peer *p = &t->peers[r];
	rt_req *head = p->sq.head, *rest, *tail = p->sq.tail;
	if (!head || p->soff == 0)
		return;
	coll_comm *c = t->base.comm;
	char keep[sizeof c->err];
	memcpy(keep, c->err, sizeof keep);
	int keep_peer = t->base.err_peer, moved = 0, left;
	rest = head->next;   /* this frame alone: do_write must stop at its end */
	head->next = NULL;
	p->sq.tail = head;
	while (p->sq.head && (left = (int)(deadline - rt_now_ms())) > 0) {
		if (do_write(t, r, &moved) || !p->sq.head)
			break;
		wait_out(t, r, left);
	}
	if (p->sq.head) {   /* not finished: the queue as it was */
		head->next = rest;
		p->sq.tail = rest ? tail : head;
	} else if ((p->sq.head = rest)) {   /* finished: the next frame starts as do_write would start it */
		p->sq.tail = tail;
		start_head(t, p);
	} else {
		p->sq.tail = NULL;
	}
	memcpy(c->err, keep, sizeof keep);
	t->base.err_peer = keep_peer;
}

static void tcp_abort(rt_tp *tp, int code)
{
	tcp_tp *t = (tcp_tp *)tp;
	struct { uint32_t fh[2]; int32_t rank, code; char text[ABORT_TEXT]; uint64_t mac; } m;
	memset(&m, 0, sizeof m);
	/* Relaying an abort we heard: pass on where it started and why; our
	 * own failure: our rank, code and words (comm->err, not yet prefixed
	 * with our rank: exec.c). */
	if (code == rt_abort_code(code) && t->ab_from >= 0) {
		m.rank = t->ab_from, m.code = t->ab_code;
		snprintf(m.text, sizeof m.text, "%s", t->ab_text);
	} else {
		m.rank = t->rank, m.code = code;
		snprintf(m.text, sizeof m.text, "%s", tp->comm->err);
	}
	m.fh[0] = (uint32_t)(8 + strlen(m.text));
	m.fh[1] = FR_ABORT;
	size_t len = 8 + m.fh[0];
	int64_t finish_by = rt_now_ms() + ABORT_FINISH_MS;
	for (int r = 0; r < t->n; r++) {
		tcp_peer *p = &t->peers[r];
		if (p->fd < 0)
			continue;
		finish_frame(t, r, finish_by);
		/* Only between frames can an ABORT frame be injected; otherwise
		 * the peer sees EOF, which is an error too.  With MACs it takes
		 * the sequence number of the send it displaces (nothing is sent
		 * after it). */
		if (p->soff == 0) {
			char buf[sizeof m];
			memcpy(buf, &m, len);
			if (t->mac) {
				struct iovec iov = {&m.rank, m.fh[0]};
				uint64_t mac = frame_mac(p->txk, p->sq.head ? p->head_seq : p->txseq, m.fh, &iov, 1);
				memcpy(buf + len, &mac, sizeof mac);
			}
			/* Its socket may be full of data the peer is not reading yet:
			 * wait for room within the same bound, draining meanwhile. */
			size_t all = len + (t->mac ? 8 : 0), off = 0;
			while (off < all) {
				ssize_t k = send(p->fd, buf + off, all - off, MSG_NOSIGNAL | MSG_DONTWAIT);
				if (k > 0) {
					off += (size_t)k;
					continue;
				}
				int left = (int)(finish_by - rt_now_ms());
				if ((k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || left <= 0)
					break;
				wait_out(t, r, left);
			}
		}
		shutdown(p->fd, SHUT_WR);
	}
	linger_in(t, ABORT_LINGER_MS);
}

/* The executor header of peer r's next message, when no receive is
 * posted to read it and it has arrived (exec.c checks it against its own
 * call, to name a rank running another algorithm).  Looks with MSG_PEEK:
 * nothing is consumed.  An ABORT frame waiting there is taken and
 * reported, though: it would otherwise wait for a receive that never
 * comes.  With MACs the header is not yet verified; exec.c only turns it
 * into an error, never into data. */
static int tcp_peek(rt_tp *tp, int r, rt_hdr *h, int *have)
{
	tcp_tp *t = (tcp_tp *)tp;
	*have = 0;
	if (r < 0 || r >= t->n || r == t->rank)
		return COLL_OK;
	tcp_peer *p = &t->peers[r];
	if (p->fd < 0 || p->rstate != RD_HDR || p->rgot || p->rq.head)
		return COLL_OK;
	char buf[sizeof p->rfh + sizeof(rt_hdr)];
	ssize_t k = recv(p->fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
	if (k < (ssize_t)sizeof p->rfh)
		return COLL_OK;
	uint32_t fh[2];
	memcpy(fh, buf, sizeof fh);
	if (fh[1] == FR_ABORT && recv(p->fd, p->rfh, sizeof p->rfh, MSG_DONTWAIT) == (ssize_t)sizeof p->rfh)
		return take_abort(t, r);
	if (fh[1] == FR_DATA && k == (ssize_t)sizeof buf) {
		memcpy(h, buf + sizeof fh, sizeof *h);
		*have = 1;
	}
	return COLL_OK;
}

/* --- As a rail (rails.c) ----------------------------------------------------
 * A rail is named by an interface ("eth1": its first IPv4 address, else
 * its first global IPv6 one) or by a local address ("10.0.1.5"); without
 * a name, the address the bootstrap listens on.  The rail listens there on
 * a port of its own, every rank learns every other's through the
 * bootstrap, and the links are made as at connect, proving the key for
 * RT_PURPOSE_RAIL + the rail's index, so that a link of one rail can never
 * be taken for another's.  Outgoing links are not bound to the interface:
 * the peer's address on the rail's network routes them there, which holds
 * when each rail is its own subnet (the usual multi-rail layout, and the
 * emulated cluster's). */

/* This rank's address on the rail named where. */
static int rail_local(coll_comm *c, int index, const char *where, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof *ss);
	if (!where || !*where) {
		*len = sizeof *ss;
		if (c->boot.listen_fd < 0 || getsockname(c->boot.listen_fd, (struct sockaddr *)ss, len) < 0)
			return rt_err(c, COLL_ERR_INVALID, "rail %d: no interface named and no bootstrap address to use "
			              "(name one: tcp:eth0)", index);
	} else if (inet_pton(AF_INET, where, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		ss->ss_family = AF_INET;
	} else if (inet_pton(AF_INET6, where, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
	} else {
		struct ifaddrs *ifs, *best = NULL;
		if (getifaddrs(&ifs) < 0)
			return rt_err(c, COLL_ERR_SYSTEM, "rail %d: getifaddrs: %s", index, strerror(errno));
		int seen = 0;
		for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
			if (!i->ifa_addr || strcmp(i->ifa_name, where) != 0)
				continue;
			seen = 1;
			if (i->ifa_addr->sa_family == AF_INET) {
				best = i;
				break;
			}
			if (i->ifa_addr->sa_family == AF_INET6 && !best &&
			    !IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
				best = i;
		}
		if (best)
			memcpy(ss, best->ifa_addr, best->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
			                                                                : sizeof(struct sockaddr_in6));
		freeifaddrs(ifs);
		if (!best)
			return rt_err(c, COLL_ERR_INVALID, "rail %d: %s '%s' on this host (rank %d)", index,
			              seen ? "no IPv4 or global IPv6 address on interface" : "no interface or address", where,
			              c->rank);
	}
	if (ss->ss_family == AF_INET6) {
		((struct sockaddr_in6 *)ss)->sin6_port = 0;
		*len = sizeof(struct sockaddr_in6);
	} else {
		((struct sockaddr_in *)ss)->sin_port = 0;
		*len = sizeof(struct sockaddr_in);
	}
	return COLL_OK;
}

static int tcp_rail_connect(coll_comm *c, int index, const char *where, rt_tp **out)
{
	tcp_tp *t;
	int rc = tcp_new(c, &t);
	*out = t ? &t->base : NULL;
	if (rc)
		return rc;
	t->rail = index;
	struct { struct sockaddr_storage ss; uint32_t len, pad; } mine, *all;
	memset(&mine, 0, sizeof mine);
	socklen_t len;
	if ((rc = rail_local(c, index, where, &mine.ss, &len)) || (rc = rt_listen(c, &mine.ss, len, &t->lfd)))
		return rc;
	len = sizeof mine.ss;
	if (getsockname(t->lfd, (struct sockaddr *)&mine.ss, &len) < 0)
		return rt_err(c, COLL_ERR_SYSTEM, "rail %d: getsockname: %s", index, strerror(errno));
	mine.len = len;
	all = calloc((size_t)t->n, sizeof *all);
	t->raddr = calloc((size_t)t->n, sizeof *t->raddr);
	t->rlen = calloc((size_t)t->n, sizeof *t->rlen);
	if (!all || !t->raddr || !t->rlen) {
		free(all);
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	if ((rc = rt_boot_allgather(c, &mine, all, sizeof mine))) {
		free(all);
		return rc;
	}
	for (int r = 0; r < t->n; r++) {
		t->raddr[r] = all[r].ss;
		t->rlen[r] = all[r].len <= sizeof all[r].ss ? all[r].len : sizeof all[r].ss;
	}
	free(all);
	if ((rc = mesh(t, t->raddr, t->rlen, t->lfd, RT_PURPOSE_RAIL + index)))
		return rc;
	return rt_boot_barrier(c);
}

/* Forget the link to r and everything queued on it (the requests are the
 * caller's; completed receives keep their buffers until released). */
static void tcp_drop(rt_tp *tp, int r)
{
	tcp_tp *t = (tcp_tp *)tp;
	if (r < 0 || r >= t->n || r == t->rank)
		return;
	tcp_peer *p = &t->peers[r];
	if (p->fd >= 0)
		close(p->fd);
	if (p->rbuf) {
		tcp_buf *b = (tcp_buf *)p->rbuf;
		b->next = t->free_bufs;
		t->free_bufs = b;
	}
	memset(p, 0, sizeof *p);
	p->fd = -1;
	p->rstate = RD_HDR;
}

static int tcp_adopt(rt_tp *tp, int r, int fd, const uint8_t sess[16])
{
	tcp_tp *t = (tcp_tp *)tp;
	if (r < 0 || r >= t->n || r == t->rank)
		return rt_err(tp->comm, COLL_ERR_INVALID, "tcp: a link for rank %d of %d", r, t->n);
	tcp_drop(tp, r);
	tune(t, fd);
	link_up(t, r, fd, sess);
	return COLL_OK;
}

static int tcp_redial(rt_tp *tp, int r, int64_t deadline_ms, int *fd, uint8_t sess[16])
{
	tcp_tp *t = (tcp_tp *)tp;
	char a[80], who[112];
	if (r < 0 || r >= t->n || r == t->rank || !t->raddr)
		return rt_err(NULL, COLL_ERR_INVALID, "tcp: no rail address for rank %d", r);
	snprintf(who, sizeof who, "rank %d at %s", r, rt_addr_str(&t->raddr[r], a, sizeof a));
	int rc = rt_connect(NULL, &t->raddr[r], t->rlen[r], deadline_ms, fd);
	if (rc)
		return rc;
	if ((rc = rt_auth_client(NULL, *fd, t->key, t->rank, RT_PURPOSE_RAIL + t->rail, 0, t->jobid, deadline_ms, who,
	                         sess))) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

/* Serve the rail's listener until one rank of the job has proved itself
 * (strangers and failed proofs are dropped, each within its handshake
 * deadline) or deadline_ms passes. */
static int tcp_reaccept(rt_tp *tp, int64_t deadline_ms, int *peer, int *fd, uint8_t sess[16])
{
	tcp_tp *t = (tcp_tp *)tp;
	rt_hs_server hs;
	int rc;
	rt_hs_start(&hs, NULL, t->lfd, t->key, RT_PURPOSE_RAIL + t->rail, t->jobid);
	for (;;) {
		int ev;
		rt_hs_peer pr;
		if ((rc = rt_hs_wait(&hs, deadline_ms, NULL, 0, &ev, &pr)))
			break;
		if (ev == RT_HS_TIME) {
			rc = rt_err(NULL, COLL_ERR_TIMEOUT, "tcp: nobody rejoined rail %d", t->rail);
			break;
		}
		if (ev != RT_HS_PEER)
			continue;
		if (pr.rank >= (uint32_t)t->n || pr.rank == (uint32_t)t->rank) {
			close(pr.fd);
			continue;
		}
		*peer = (int)pr.rank;
		*fd = pr.fd;
		memcpy(sess, pr.sess, 16);
		break;
	}
	rt_hs_stop(&hs);
	return rc;
}

static int tcp_listen_fd(rt_tp *tp) { return ((tcp_tp *)tp)->lfd; }

static int tcp_pollfds(rt_tp *tp, struct pollfd *pfd, int max)
{
	tcp_tp *t = (tcp_tp *)tp;
	return want_fds(t, pfd, t->pfd_peer, max < t->n ? max : t->n);
}

static int tcp_serve(rt_tp *tp, const struct pollfd *pfd, int n)
{
	int moved = 0;
	return serve_fds((tcp_tp *)tp, pfd, n, &moved);
}

static const rt_rail_ops tcp_rail = {
	.connect = tcp_rail_connect,
	.drop = tcp_drop,
	.adopt = tcp_adopt,
	.redial = tcp_redial,
	.reaccept = tcp_reaccept,
	.listen_fd = tcp_listen_fd,
	.pollfds = tcp_pollfds,
	.serve = tcp_serve,
};

const rt_transport tcp_transport = {
	.name = "tcp",
	.size = sizeof(rt_transport),
	.connect = tcp_connect,
	.post_send = tcp_post_send,
	.post_recv = tcp_post_recv,
	.release = tcp_release,
	.progress = tcp_progress,
	.abort = tcp_abort,
	.close = tcp_close,
	.read = tcp_read,
	.peek = tcp_peek,
	.rail = &tcp_rail,
};
