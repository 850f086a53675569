/*
 * base.c - the bottom of libcollrt: recording error details (rt_err), and
 * the names and sizes of result codes, dtypes, ops and collectives (the
 * COLL_* environment is env.c's, beside it).  Every other file may call these;
 * they call nothing else in the runtime, so the runtime's files form
 * layers without a cycle (coll.h's API on top in comm.c, transports and
 * the executor below it, this file at the bottom).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static _Thread_local char init_err[320];

int rt_err(coll_comm *c, int code, const char *fmt, ...)
{
	char *buf = c ? c->err : init_err;
	size_t len = c ? sizeof c->err : sizeof init_err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return code;
}

const char *coll_strerror(coll_result r)
{
	switch (r) {
	case COLL_OK: return "success";
	case COLL_ERR_INVALID: return "invalid argument";
	case COLL_ERR_NOMEM: return "out of memory";
	case COLL_ERR_SYSTEM: return "system call failed";
	case COLL_ERR_TIMEOUT: return "timed out";
	case COLL_ERR_PEER: return "peer process failed or closed its connection";
	case COLL_ERR_AUTH: return "authentication failed (wrong secret)";
	case COLL_ERR_MISMATCH: return "ranks disagree on the collective's arguments";
	case COLL_ERR_NOALGO: return "no algorithm for this collective";
	case COLL_ERR_BOOTSTRAP: return "bootstrap failed";
	case COLL_ERR_TRANSPORT: return "transport unavailable";
	case COLL_ERR_PLAN: return "malformed or inconsistent plan";
	case COLL_ERR_ABORTED: return "communicator aborted";
	case COLL_ERR_PROTOCOL: return "protocol error";
	case COLL_ERR_UNSUPPORTED: return "not supported by this build";
	}
	return "unknown error";
}

const char *coll_last_error(const coll_comm *c) { return c ? c->err : init_err; }

/* The rows of coll_dtypes.def and coll_ops.def. */
static const struct {
	const char *name, *alias1, *alias2;
	unsigned char size;
} dtypes[COLL_NDTYPES] = {
#define COLL_DTYPE(id, name, size, alias1, alias2) { name, alias1, alias2, size },
#include "coll_dtypes.def"
#undef COLL_DTYPE
};
static const char *const ops[COLL_NOPS] = {
#define COLL_OP(id, name) name,
#include "coll_ops.def"
#undef COLL_OP
};

size_t coll_dtype_size(coll_dtype dt) { return (unsigned)dt < COLL_NDTYPES ? dtypes[dt].size : 0; }

const char *coll_dtype_name(coll_dtype dt) { return (unsigned)dt < COLL_NDTYPES ? dtypes[dt].name : "?"; }

const char *coll_op_name(coll_op op) { return (unsigned)op < COLL_NOPS ? ops[op] : "?"; }

int coll_dtype_from_name(const char *name)
{
	for (int d = 0; name && *name && d < COLL_NDTYPES; d++)
		if (strcmp(name, dtypes[d].name) == 0 || strcmp(name, dtypes[d].alias1) == 0 ||
		    strcmp(name, dtypes[d].alias2) == 0)
			return d;
	return -1;
}

int coll_op_from_name(const char *name)
{
	for (int o = 0; name && o < COLL_NOPS; o++)
		if (strcmp(name, ops[o]) == 0)
			return o;
	return -1;
}

const char *coll_kind_name(coll_kind k)
{
	const coll_kind_info *ki = coll_kind_get((int)k);
	return ki ? ki->name : "?";
}

