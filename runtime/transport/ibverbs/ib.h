/*
 * ib.h - the internal header of the ibverbs transport plugin
 * (libcollrt_ibverbs.so): the parts that need no RDMA device, each in its
 * own file so that tests/unit/ib_unit.c can drive them without libibverbs.
 *
 *   wire.c     the connection record ranks exchange at connect (versioned,
 *              fixed size, big-endian)
 *   ring.c     the slotted receive ring: where a message lands, credits,
 *              out-of-order release, the immediate-data encoding and the
 *              split of a send into copy/write chunks
 *   mrcache.c  the registered-memory cache's bookkeeping (LRU of address
 *              intervals); registering is a pair of function pointers
 *   ib.c       the transport itself (verbs calls), which uses all three
 *
 * Nothing here includes <infiniband/verbs.h>: verbs values that travel (an
 * MTU, a GID) are plain integers and bytes.
 */
#ifndef COLL_IB_H
#define COLL_IB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* --- wire.c --------------------------------------------------------------- */

/* One rank's connection data for one peer: everything the peer needs to
 * bring its RC queue pair to the ready-to-receive state and to write into
 * our receive ring.  Each rank contributes n of them (one per destination,
 * its own a status-only record) to the bootstrap allgather.
 *
 * Encoded as IB_WIRE_BYTES bytes, every integer big-endian:
 *    0 u32 magic 'CoLI'        4 u16 version (IB_WIRE_VERSION)   6 u16 size
 *    8 u32 from rank          12 u32 to rank
 *   16 u16 status (0, or the coll_result the sender failed to open its device with)
 *   18 u16 lid               20 u8 port    21 u8 mtu (enum ibv_mtu, 1..5)
 *   22 u8 link layer (1 IB, 2 Ethernet)    23 u8 gid index (255: no GRH)
 *   24 u32 qpn               28 u32 psn (both 24-bit)
 *   32 u64 ring address      40 u32 ring rkey
 *   44 u32 slot bytes        48 u32 slots   52 u32 reserved (0)
 *   56 u8[16] gid
 * A record of another version or size is refused rather than guessed at:
 * both ends of a job run the same libcollrt, so a difference is a broken
 * installation, best reported at connect. */
#define IB_WIRE_MAGIC 0x436f4c49u /* "CoLI" */
#define IB_WIRE_VERSION 1
#define IB_WIRE_BYTES 72
#define IB_NO_GRH 255

typedef struct {
	uint32_t from, to;
	uint16_t status;
	uint16_t lid;
	uint8_t port, mtu, link_layer, gid_index;
	uint32_t qpn, psn;
	uint64_t addr;
	uint32_t rkey;
	uint32_t slot_bytes, nslots;
	uint8_t gid[16];
} ib_conn;

enum {
	IB_WIRE_OK = 0,
	IB_WIRE_SHORT,     /* fewer bytes than a record */
	IB_WIRE_MAGIC_BAD, /* not a connection record */
	IB_WIRE_VERSION_BAD,
	IB_WIRE_SIZE_BAD,  /* right version, wrong size field */
	IB_WIRE_FIELD_BAD, /* a field out of range (MTU, link layer, 24-bit QPN/PSN) */
};

/* Encode c into out[IB_WIRE_BYTES]. */
void ib_wire_pack(const ib_conn *c, uint8_t out[IB_WIRE_BYTES]);
/* Decode len bytes at in into c.  Returns IB_WIRE_OK or why not; c is
 * only written on success. */
int ib_wire_unpack(const uint8_t *in, size_t len, ib_conn *c);
/* Words for an IB_WIRE_* code, for messages. */
const char *ib_wire_strerror(int code);

/* --- ring.c --------------------------------------------------------------- */

/* Each ordered pair of ranks has one receive ring at the receiver: nslots
 * slots of slot_bytes, registered for remote writes.  A message (the
 * executor's 64-byte header and its payload) takes the next
 * ceil(len / slot_bytes) slots, contiguous so that the receiver can hand
 * the executor a pointer into the ring; a message that would run past the
 * ring's end starts at slot 0 instead and the slots it skipped belong to
 * it.  Both ends compute placements from the same counters, so the wire
 * carries only the message length. */
typedef struct {
	uint32_t slot_bytes, nslots;
} ib_geom;

/* Where a message of len bytes goes when head slots were used so far:
 * *skip slots up to the ring's end (0 if it fits), then *k slots.  The
 * message starts at byte ((head + skip) % nslots) * slot_bytes. */
void ib_place(const ib_geom *g, uint64_t head, size_t len, uint32_t *skip, uint32_t *k);
/* The largest message a ring takes: at most half of it, whole slots, so
 * that a message always fits even after the worst skip. */
size_t ib_max_msg(const ib_geom *g, size_t want);
/* Messages of max_msg bytes a ring holds at once, whatever the skips. */
int ib_window(const ib_geom *g, size_t max_msg);

/* The sender's view of one peer's ring: slots used and slots the receiver
 * gave back (credits).  It may use a run only while head - credited stays
 * within nslots: that is the whole flow control. */
typedef struct {
	uint64_t head, credited;
} ib_tx;

/* Room for a message of len bytes?  If so, take it: *seq is its run's
 * first slot (skip included), *off its byte offset in the ring.  Returns 1
 * when taken, 0 when the receiver must free slots first. */
int ib_tx_take(ib_tx *t, const ib_geom *g, size_t len, uint64_t *seq, size_t *off);
/* The receiver freed n more slots.  Returns 0, or -1 when that would be
 * more than were used (a protocol error). */
int ib_tx_credit(ib_tx *t, const ib_geom *g, uint32_t n);

/* The receiver's view: head (slots of messages arrived), tail (slots freed:
 * the released prefix), reported (tail already given back as credits), and
 * per slot the run length of a message released out of order. */
typedef struct {
	uint64_t head, tail, reported;
	uint32_t *run;   /* nslots entries: run length at a run's first slot; high bit: released */
} ib_rx;

#define IB_RUN_RELEASED 0x80000000u

/* A message of len bytes arrived: place it (*seq, *off as ib_tx_take).
 * Returns 0, or -1 when it does not fit in the free slots (the sender
 * overran its credits) or is larger than max_msg. */
int ib_rx_arrive(ib_rx *r, const ib_geom *g, size_t len, size_t max_msg, uint64_t *seq, size_t *off);
/* The executor is done with the message whose run starts at seq; tail
 * advances over every released run at its front. */
void ib_rx_release(ib_rx *r, const ib_geom *g, uint64_t seq);
/* Credits to give back now, marked as reported: every freed slot when
 * `idle` (the receiver is about to wait: a sender may be stuck on exactly
 * these), else only once at least `batch` slots are waiting.  0: nothing
 * to send. */
uint32_t ib_rx_credits(ib_rx *r, uint32_t batch, int idle);

/* Immediate data of a RDMA write with immediate (host order here; the
 * transport byte-swaps it): 2 bits of kind, 30 of value.  DATA: message
 * length; CREDIT: slots freed; ABORT: the coll_result the sender failed
 * with. */
enum { IB_IMM_DATA = 0, IB_IMM_CREDIT = 1, IB_IMM_ABORT = 2 };
#define IB_IMM_MAX 0x3fffffffu
static inline uint32_t ib_imm(int kind, uint32_t value) { return (uint32_t)kind << 30 | (value & IB_IMM_MAX); }
static inline int ib_imm_kind(uint32_t imm) { return (int)(imm >> 30); }
static inline uint32_t ib_imm_value(uint32_t imm) { return imm & IB_IMM_MAX; }

/* Sends through the bounce buffer are copied and written in chunks of
 * `chunk` bytes, so that the adapter sends chunk i while the CPU copies
 * chunk i+1 (RC cuts each write into MTU packets itself: the chunk is
 * about overlapping the copy, not about the wire).  Chunks of a len-byte
 * message; always at least 1. */
uint32_t ib_nchunks(size_t len, size_t chunk);
/* Copy bytes [off, off + len) of the concatenation of iov[0..iovcnt) to
 * dst. */
void ib_gather(void *dst, const struct iovec *iov, int iovcnt, size_t off, size_t len);

/* --- mrcache.c ------------------------------------------------------------ */

/* How the cache registers memory: ib.c passes ibv_reg_mr/ibv_dereg_mr
 * wrappers, the unit test counting fakes.  reg returns a handle (NULL:
 * failed) and the region's local key. */
typedef struct {
	void *(*reg)(void *ctx, void *addr, size_t len, uint32_t *lkey);
	void (*dereg)(void *ctx, void *handle);
	void *ctx;
} ib_mr_ops;

/* One registered interval [lo, hi), page aligned. */
typedef struct ib_mrent {
	struct ib_mrent *prev, *next;   /* LRU list, most recently used first */
	uintptr_t lo, hi;
	void *handle;
	uint32_t lkey;
	int refs;                       /* sends in flight that use it */
	int dead;                       /* invalidated or merged away: deregister when refs drops to 0 */
} ib_mrent;

typedef struct {
	ib_mr_ops ops;
	ib_mrent *head, *tail;          /* live entries (not dead) */
	ib_mrent *dead;                 /* dead entries still referenced, linked through next */
	int count, max_entries;
	size_t bytes, max_bytes;        /* registered bytes of live entries */
	size_t page;
	uint64_t hits, misses, evictions, regs, deregs;
} ib_mrcache;

/* An empty cache; page is the registration granularity (a power of 2). */
void ib_mrc_init(ib_mrcache *c, const ib_mr_ops *ops, int max_entries, size_t max_bytes, size_t page);
/* An entry covering [addr, addr + len), with a reference taken: a hit
 * when a live entry covers it, else a registration of the page-aligned
 * range widened to the union with every live entry it overlaps (those are
 * retired), after evicting least recently used unreferenced entries
 * beyond the capacity.  NULL when registration failed even after evicting
 * every unreferenced entry. */
ib_mrent *ib_mrc_get(ib_mrcache *c, const void *addr, size_t len);
/* Drop the reference ib_mrc_get took. */
void ib_mrc_put(ib_mrcache *c, ib_mrent *e);
/* The application changed what [addr, addr + len) maps: retire every entry
 * overlapping it (deregistered now, or when its last send completes). */
void ib_mrc_invalidate(ib_mrcache *c, const void *addr, size_t len);
/* Deregister everything, referenced or not (at close). */
void ib_mrc_flush(ib_mrcache *c);

#endif
