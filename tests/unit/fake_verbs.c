/*
 * fake_verbs.c - a software stand-in for the part of libibverbs the
 * ibverbs transport uses, linked with runtime/transport/ibverbs/ib.c into
 * build/tests/libcollrt_ibverbs_fake.so, so that tests/ibverbs.test can run
 * the transport's whole data path (connection records, queue-pair state
 * changes, ring placement, credits, chunked copies, inline sends, send
 * reservations, release, close, aborts, dead peers) on machines with no
 * RDMA device.  It proves the transport's logic against verbs semantics
 * as written here, not against an adapter: the device tests still need a
 * real one.
 *
 * One fake device, "fake0", port 1, RoCE (link layer Ethernet), whose GID
 * table has a RoCE v1 link-local entry at 0 and a RoCE v2 IPv4-mapped
 * entry at 1 that carries the process id, so a queue pair brought to RTR
 * knows which process its peer is.  RDMA writes are process_vm_writev
 * into the peer (synchronous, so a queue pair's writes land in order);
 * an immediate, and a no-op for a write without one, is a datagram to the
 * peer's abstract unix socket ("collfakeverbs-PID"), which its poll_cq
 * turns into a receive completion, consuming a posted receive.  The
 * completion channel's fd is that socket, so poll() wakes on arrivals.  A
 * peer that is gone (socket refused, process_vm_writev failing) completes
 * the write with IBV_WC_RETRY_EXC_ERR and puts the queue pair in error, as
 * an adapter does after its retries.
 *
 * FAKE_VERBS_FAIL_WRITE (fail_now) breaks a link on demand.
 *
 * What a real adapter would reject, the fake checks and aborts on (the
 * test then fails loudly): a local SGE outside the registered region of
 * its lkey, a remote write outside the peer's region of its rkey, a write
 * with immediate that finds no posted receive (receiver not ready), a
 * completion queue that overflows, posting on a queue pair not in RTS.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_get_device_list

#define FAKE_MTU IBV_MTU_4096

static void die(const char *fmt, const char *a, unsigned long b)
{
	fprintf(stderr, "fake verbs (pid %d): ", (int)getpid());
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n");
	abort();
}

/* --- the process's socket ------------------------------------------------ */

enum { DG_IMM = 1, DG_NOP = 2 };
typedef struct {
	uint32_t kind, dst_qpn, imm;
	uint64_t addr, len;   /* the write the immediate ends, for the receiver's rkey check */
	uint32_t rkey;
} dgram;

static int sock = -1;

static socklen_t sock_addr(struct sockaddr_un *a, pid_t pid)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	int k = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "collfakeverbs-%d", (int)pid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)k);
}

static int open_sock(void)
{
	if (sock >= 0)
		return 0;
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_un a;
	socklen_t l = sock_addr(&a, getpid());
	if (sock < 0 || bind(sock, (struct sockaddr *)&a, l) != 0)
		return -1;
	/* Let siblings write into us (Yama's ptrace scope 1 allows only
	 * ancestors otherwise). */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	return 0;
}

/* --- objects ------------------------------------------------------------- */

typedef struct fmr {
	struct ibv_mr mr;
	struct fmr *next;
} fmr;

typedef struct {
	struct ibv_cq cq;
	struct ibv_wc *q;
	int head, count, cap, armed;
} fcq;

typedef struct fqp {
	struct ibv_qp qp;
	struct fqp *next;
	pid_t peer;
	uint32_t peer_qpn;
	uint64_t *rwr;          /* posted receives' wr_ids (ring) */
	uint32_t rhead, rcount, rcap;
	int err;
} fqp;

/* What the transport asked for, printed at ibv_close_device when
 * FAKE_VERBS_STATS is set, so a test can tell which send path ran. */
static struct {
	unsigned long regs, writes, imms, inline_w, two_sge, plain;
} st;

static struct ibv_device dev0;
static struct ibv_device *devlist[2];
static fmr *mrs;
static fqp *qps;
static uint32_t next_key = 0x100, next_qpn = 0x11;

struct ibv_device **ibv_get_device_list(int *num)
{
	if (getenv("FAKE_VERBS_NODEV")) {
		if (num)
			*num = 0;
		errno = ENOSYS;
		return NULL;
	}
	snprintf(dev0.name, sizeof dev0.name, "fake0");
	dev0.node_type = IBV_NODE_CA;
	dev0.transport_type = IBV_TRANSPORT_IB;
	devlist[0] = &dev0;
	devlist[1] = NULL;
	if (num)
		*num = 1;
	return devlist;
}

void ibv_free_device_list(struct ibv_device **list) { (void)list; }
const char *ibv_get_device_name(struct ibv_device *d) { return d->name; }

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int fake_req_notify(struct ibv_cq *cq, int solicited) { (void)solicited; ((fcq *)cq)->armed = 1; return 0; }
static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

static int fake_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
                                struct ibv_device_attr_ex *attr, size_t size)
{
	(void)in;
	memset(attr, 0, size);
	ibv_query_device(ctx, &attr->orig_attr);
	attr->odp_caps.general_caps = IBV_ODP_SUPPORT;
	attr->odp_caps.per_transport_caps.rc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE;
	return 0;
}

struct ibv_context *ibv_open_device(struct ibv_device *d)
{
	if (open_sock())
		return NULL;
	struct verbs_context *v = calloc(1, sizeof *v);
	v->sz = sizeof *v;
	v->query_device_ex = fake_query_device_ex;
	struct ibv_context *c = &v->context;
	c->device = d;
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->ops.poll_cq = fake_poll_cq;
	c->ops.req_notify_cq = fake_req_notify;
	c->ops.post_send = fake_post_send;
	c->ops.post_recv = fake_post_recv;
	c->async_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);   /* no async events in software */
	c->cmd_fd = -1;
	c->num_comp_vectors = 1;
	return c;
}

int ibv_close_device(struct ibv_context *c)
{
	if (getenv("FAKE_VERBS_STATS"))
		fprintf(stderr, "fake verbs: %lu registrations, %lu writes (%lu with immediate, %lu inline, %lu of two "
		        "SGEs, %lu chunks without immediate)\n", st.regs, st.writes, st.imms, st.inline_w, st.two_sge,
		        st.plain);
	close(c->async_fd);
	free((char *)c - offsetof(struct verbs_context, context));
	return 0;
}

int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
	(void)c;
	memset(a, 0, sizeof *a);
	a->phys_port_cnt = 1;
	a->max_qp_wr = 16384;
	a->max_cqe = 1 << 22;
	a->max_sge = 30;
	a->max_qp = 1 << 16;
	a->max_cq = 1 << 16;
	a->max_mr = 1 << 20;
	a->max_pd = 1 << 16;
	return 0;
}

int ibv_query_port(struct ibv_context *c, uint8_t port, struct _compat_ibv_port_attr *cattr)
{
	(void)c;
	struct ibv_port_attr *a = (struct ibv_port_attr *)cattr;   /* ___ibv_query_port passes the whole struct */
	if (port != 1)
		return EINVAL;
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = FAKE_MTU;
	a->active_mtu = FAKE_MTU;
	a->gid_tbl_len = 4;
	a->lid = 0;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

static int gid_of(int index, union ibv_gid *g, enum ibv_gid_type *type)
{
	memset(g, 0, sizeof *g);
	uint32_t pid = (uint32_t)getpid();
	if (index == 0) {   /* RoCE v1, link local */
		g->raw[0] = 0xfe, g->raw[1] = 0x80;
		memcpy(g->raw + 12, &pid, 4);
		*type = IBV_GID_TYPE_ROCE_V1;
		return 0;
	}
	if (index == 1) {   /* RoCE v2, ::ffff:a.b.c.d with the pid as the address */
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(g->raw + 12, &pid, 4);
		*type = IBV_GID_TYPE_ROCE_V2;
		return 0;
	}
	return ENODATA;
}

int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
	(void)c, (void)port;
	enum ibv_gid_type t = IBV_GID_TYPE_IB;
	return gid_of(index, gid, &t) ? -1 : 0;
}

int _ibv_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t index, struct ibv_gid_entry *e, uint32_t flags,
                      size_t size)
{
	(void)c, (void)flags;
	memset(e, 0, size);
	enum ibv_gid_type t = IBV_GID_TYPE_IB;
	int rc = gid_of((int)index, &e->gid, &t);
	e->gid_index = index;
	e->port_num = port;
	e->gid_type = t;
	return rc;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
	struct ibv_pd *pd = calloc(1, sizeof *pd);
	pd->context = c;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	return 0;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	(void)access;
	st.regs++;
	fmr *m = calloc(1, sizeof *m);
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.lkey = next_key++;
	m->mr.rkey = next_key++;
	m->next = mrs;
	mrs = m;
	return &m->mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	for (fmr **p = &mrs; *p; p = &(*p)->next)
		if (&(*p)->mr == mr) {
			fmr *m = *p;
			*p = m->next;
			free(m);
			return 0;
		}
	die("dereg of an unknown MR %s%lx", "", (unsigned long)(uintptr_t)mr);
	return EINVAL;
}

/* Is [addr, addr + len) inside the region of key (lkey or rkey)? */
static int covered(uint32_t key, int remote, uint64_t addr, uint64_t len)
{
	for (fmr *m = mrs; m; m = m->next)
		if ((remote ? m->mr.rkey : m->mr.lkey) == key)
			return addr >= (uintptr_t)m->mr.addr && addr + len <= (uintptr_t)m->mr.addr + m->mr.length;
	return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof *ch);
	ch->context = c;
	ch->fd = dup(sock);
	return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	close(ch->fd);
	free(ch);
	return 0;
}

static fcq *the_cq;   /* the transport makes one per instance; one instance per process in the tests */

struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context, struct ibv_comp_channel *ch, int vec)
{
	(void)vec;
	fcq *q = calloc(1, sizeof *q);
	q->cq.context = c;
	q->cq.channel = ch;
	q->cq.cq_context = cq_context;
	q->cq.cqe = cqe;
	q->cap = cqe;
	q->q = calloc((size_t)cqe, sizeof *q->q);
	the_cq = q;
	return &q->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	fcq *q = (fcq *)cq;
	if (the_cq == q)
		the_cq = NULL;
	free(q->q);
	free(q);
	return 0;
}

static void push_wc(fcq *q, const struct ibv_wc *wc)
{
	if (q->count == q->cap)
		die("completion queue of %s%lu entries overflowed", "", (unsigned long)q->cap);
	q->q[(q->head + q->count++) % q->cap] = *wc;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx)
{
	(void)ch;
	if (!the_cq || !the_cq->armed) {
		errno = EAGAIN;
		return -1;
	}
	the_cq->armed = 0;
	*cq = &the_cq->cq;
	*ctx = the_cq->cq.cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n) { (void)cq, (void)n; }

int ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *ev)
{
	(void)c, (void)ev;
	errno = EAGAIN;
	return -1;
}

void ibv_ack_async_event(struct ibv_async_event *ev) { (void)ev; }

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	fqp *q = calloc(1, sizeof *q);
	q->qp.context = pd->context;
	q->qp.pd = pd;
	q->qp.send_cq = attr->send_cq;
	q->qp.recv_cq = attr->recv_cq;
	q->qp.qp_num = next_qpn++;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = attr->qp_type;
	q->rcap = attr->cap.max_recv_wr;
	q->rwr = calloc(q->rcap, sizeof *q->rwr);
	q->next = qps;
	qps = q;
	return &q->qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	for (fqp **p = &qps; *p; p = &(*p)->next)
		if (&(*p)->qp == qp) {
			fqp *q = *p;
			*p = q->next;
			free(q->rwr);
			free(q);
			return 0;
		}
	return EINVAL;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	fqp *q = (fqp *)qp;
	if (!(mask & IBV_QP_STATE))
		return EINVAL;
	if (a->qp_state == IBV_QPS_RTR) {
		if (!(mask & IBV_QP_AV) || !(mask & IBV_QP_DEST_QPN) || !a->ah_attr.is_global)
			return EINVAL;   /* RoCE needs the GRH */
		uint32_t pid;
		memcpy(&pid, a->ah_attr.grh.dgid.raw + 12, 4);
		q->peer = (pid_t)pid;
		q->peer_qpn = a->dest_qp_num;
		if (a->path_mtu != FAKE_MTU)
			return EINVAL;
	}
	qp->state = a->qp_state;
	return 0;
}

static fqp *qp_by_num(uint32_t qpn)
{
	for (fqp *q = qps; q; q = q->next)
		if (q->qp.qp_num == qpn)
			return q;
	return NULL;
}

/* Turn the datagrams that arrived into receive completions. */
static void drain(void)
{
	dgram d;
	while (sock >= 0 && recv(sock, &d, sizeof d, MSG_DONTWAIT) == (ssize_t)sizeof d) {
		if (d.kind == DG_NOP)
			continue;
		fqp *q = qp_by_num(d.dst_qpn);
		if (!q || q->err)
			continue;   /* destroyed or in error: the sender's retries fail */
		if (d.len && !covered(d.rkey, 1, d.addr, d.len))
			die("remote write outside the rkey's region (%s%lu bytes)", "", (unsigned long)d.len);
		if (!q->rcount)
			die("write with immediate found no posted receive on qp %s%lu (RNR)", "", (unsigned long)d.dst_qpn);
		struct ibv_wc wc = {0};
		wc.wr_id = q->rwr[q->rhead];
		q->rhead = (q->rhead + 1) % q->rcap;
		q->rcount--;
		wc.status = IBV_WC_SUCCESS;
		wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		wc.wc_flags = IBV_WC_WITH_IMM;
		wc.imm_data = d.imm;
		wc.qp_num = q->qp.qp_num;
		push_wc((fcq *)q->qp.recv_cq, &wc);
	}
}

/* Send a datagram to the peer; the peer being slow to read is waited out
 * while reading our own (both sides may be sending). */
static int send_dgram(pid_t peer, const dgram *d)
{
	struct sockaddr_un a;
	socklen_t l = sock_addr(&a, peer);
	for (;;) {
		if (sendto(sock, d, sizeof *d, MSG_DONTWAIT, (struct sockaddr *)&a, l) == (ssize_t)sizeof *d)
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		drain();
		usleep(20);
	}
}

static void qp_error(fqp *q, uint64_t wr_id, enum ibv_wc_status st)
{
	struct ibv_wc wc = {0};
	wc.wr_id = wr_id;
	wc.status = st;
	wc.qp_num = q->qp.qp_num;
	wc.vendor_err = 0x81;
	push_wc((fcq *)q->qp.send_cq, &wc);
	if (!q->err) {
		/* The queue pair enters the error state: its posted receives flush. */
		q->err = 1;
		while (q->rcount) {
			struct ibv_wc f = {0};
			f.wr_id = q->rwr[q->rhead];
			f.status = IBV_WC_WR_FLUSH_ERR;
			f.qp_num = q->qp.qp_num;
			q->rhead = (q->rhead + 1) % q->rcap;
			q->rcount--;
			push_wc((fcq *)q->qp.recv_cq, &f);
		}
	}
}

/* A link failure on demand, for the tests of failover and rejoin:
 * FAKE_VERBS_FAIL_WRITE=K fails this process's K-th write as an adapter
 * does when its retries run out (in the rank COLL_RANK names
 * FAKE_VERBS_FAIL_RANK, when that is set). */
static int fail_now(void)
{
	static long at = -1;
	if (at < 0) {
		const char *k = getenv("FAKE_VERBS_FAIL_WRITE"), *r = getenv("FAKE_VERBS_FAIL_RANK"), *me = getenv("COLL_RANK");
		at = k && (!r || (me && strcmp(r, me) == 0)) ? atol(k) : 0;
	}
	return at > 0 && st.writes == (unsigned long)at;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	fqp *q = (fqp *)qp;
	for (; wr; wr = wr->next) {
		if (qp->state != IBV_QPS_RTS) {
			*bad = wr;
			return EINVAL;
		}
		if (wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM) {
			*bad = wr;
			return EINVAL;
		}
		if (q->err) {
			qp_error(q, wr->wr_id, IBV_WC_WR_FLUSH_ERR);
			continue;
		}
		struct iovec local[8];
		uint64_t total = 0;
		if (wr->num_sge > 8) {
			*bad = wr;
			return EINVAL;
		}
		for (int i = 0; i < wr->num_sge; i++) {
			const struct ibv_sge *s = &wr->sg_list[i];
			if (!(wr->send_flags & IBV_SEND_INLINE) && s->length && !covered(s->lkey, 0, s->addr, s->length))
				die("local SGE outside its lkey's region (%s%lu bytes)", "", (unsigned long)s->length);
			local[i] = (struct iovec){(void *)(uintptr_t)s->addr, s->length};
			total += s->length;
		}
		st.writes++;
		if (fail_now()) {
			qp_error(q, wr->wr_id, IBV_WC_RETRY_EXC_ERR);
			continue;
		}
		st.imms += wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
		st.inline_w += (wr->send_flags & IBV_SEND_INLINE) != 0;
		st.two_sge += wr->num_sge == 2 && !(wr->send_flags & IBV_SEND_INLINE);
		st.plain += wr->opcode == IBV_WR_RDMA_WRITE && total;
		int ok = 1;
		if (total) {
			struct iovec remote = {(void *)(uintptr_t)wr->wr.rdma.remote_addr, total};
			ok = process_vm_writev(q->peer, local, (unsigned long)wr->num_sge, &remote, 1, 0) == (ssize_t)total;
		}
		dgram d = {wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ? DG_IMM : DG_NOP, q->peer_qpn, wr->imm_data,
		           wr->wr.rdma.remote_addr, total, wr->wr.rdma.rkey};
		if (ok && (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM || !total))
			ok = send_dgram(q->peer, &d) == 0;   /* a zero-byte write still needs the peer alive */
		if (!ok) {
			qp_error(q, wr->wr_id, IBV_WC_RETRY_EXC_ERR);
			continue;
		}
		if (wr->send_flags & IBV_SEND_SIGNALED) {
			struct ibv_wc wc = {0};
			wc.wr_id = wr->wr_id;
			wc.status = IBV_WC_SUCCESS;
			wc.opcode = IBV_WC_RDMA_WRITE;
			wc.qp_num = qp->qp_num;
			push_wc((fcq *)qp->send_cq, &wc);
		}
	}
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	fqp *q = (fqp *)qp;
	for (; wr; wr = wr->next) {
		if (q->rcount == q->rcap) {
			*bad = wr;
			return ENOMEM;
		}
		q->rwr[(q->rhead + q->rcount++) % q->rcap] = wr->wr_id;
	}
	return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	fcq *q = (fcq *)cq;
	drain();
	int k = 0;
	while (k < n && q->count) {
		wc[k++] = q->q[q->head];
		q->head = (q->head + 1) % q->cap;
		q->count--;
	}
	return k;
}

const char *ibv_wc_status_str(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_SUCCESS: return "success";
	case IBV_WC_WR_FLUSH_ERR: return "Work Request Flushed Error";
	case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
	default: return "other error";
	}
}

const char *ibv_event_type_str(enum ibv_event_type ev) { return ev == IBV_EVENT_DEVICE_FATAL ? "local catastrophic error" : "event"; }
const char *ibv_port_state_str(enum ibv_port_state st) { return st == IBV_PORT_ACTIVE ? "PORT_ACTIVE" : "PORT_DOWN"; }
