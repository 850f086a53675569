/*
 * wire.c - the ibverbs transport's connection record: what one rank tells
 * a peer at connect, through the bootstrap allgather, so that both can
 * bring up their RC queue pair and the peer can write into our receive
 * ring.  The layout is in ib.h.  It is written byte by byte in big-endian
 * order, so ranks on hosts of either byte order (or a later libcollrt
 * that adds fields under a new version) never read each other's fields
 * wrongly: a record is either the exact version we speak or refused.
 */
#include <string.h>

#include "ib.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }

void ib_wire_pack(const ib_conn *c, uint8_t out[IB_WIRE_BYTES])
{
	memset(out, 0, IB_WIRE_BYTES);
	put32(out + 0, IB_WIRE_MAGIC);
	put16(out + 4, IB_WIRE_VERSION);
	put16(out + 6, IB_WIRE_BYTES);
	put32(out + 8, c->from);
	put32(out + 12, c->to);
	put16(out + 16, c->status);
	put16(out + 18, c->lid);
	out[20] = c->port;
	out[21] = c->mtu;
	out[22] = c->link_layer;
	out[23] = c->gid_index;
	put32(out + 24, c->qpn);
	put32(out + 28, c->psn);
	put64(out + 32, c->addr);
	put32(out + 40, c->rkey);
	put32(out + 44, c->slot_bytes);
	put32(out + 48, c->nslots);
	memcpy(out + 56, c->gid, 16);
}

int ib_wire_unpack(const uint8_t *in, size_t len, ib_conn *c)
{
	/* Magic and version first, so that a record of another version is
	 * named as such even when its size differs from ours. */
	if (len < 8)
		return IB_WIRE_SHORT;
	if (get32(in) != IB_WIRE_MAGIC)
		return IB_WIRE_MAGIC_BAD;
	if (get16(in + 4) != IB_WIRE_VERSION)
		return IB_WIRE_VERSION_BAD;
	if (get16(in + 6) != IB_WIRE_BYTES)
		return IB_WIRE_SIZE_BAD;
	if (len < IB_WIRE_BYTES)
		return IB_WIRE_SHORT;
	ib_conn x;
	x.from = get32(in + 8);
	x.to = get32(in + 12);
	x.status = get16(in + 16);
	x.lid = get16(in + 18);
	x.port = in[20];
	x.mtu = in[21];
	x.link_layer = in[22];
	x.gid_index = in[23];
	x.qpn = get32(in + 24);
	x.psn = get32(in + 28);
	x.addr = get64(in + 32);
	x.rkey = get32(in + 40);
	x.slot_bytes = get32(in + 44);
	x.nslots = get32(in + 48);
	memcpy(x.gid, in + 56, 16);
	/* A failed rank's record carries only its status; the rest is checked
	 * when it claims to be usable. */
	if (x.status == 0 && (x.mtu < 1 || x.mtu > 5 || x.link_layer < 1 || x.link_layer > 2 || x.qpn > 0xffffff ||
	                      x.psn > 0xffffff))
		return IB_WIRE_FIELD_BAD;
	*c = x;
	return IB_WIRE_OK;
}

const char *ib_wire_strerror(int code)
{
	switch (code) {
	case IB_WIRE_OK: return "ok";
	case IB_WIRE_SHORT: return "truncated connection record";
	case IB_WIRE_MAGIC_BAD: return "not an ibverbs connection record";
	case IB_WIRE_VERSION_BAD: return "connection record of another version (mixed libcollrt installations?)";
	case IB_WIRE_SIZE_BAD: return "connection record of the wrong size";
	case IB_WIRE_FIELD_BAD: return "connection record with a field out of range";
	}
	return "?";
}
