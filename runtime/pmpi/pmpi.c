/*
 * pmpi.c - libcoll_mpi.so: an unmodified MPI program's collectives served
 * by coll, through MPI's profiling interface.
 *
 *   mpirun -x LD_PRELOAD=PREFIX/lib/libcoll_mpi.so -np N ./app
 *
 * The library defines MPI_Allreduce, MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter, MPI_Allgather, MPI_Bcast, MPI_Reduce and MPI_Alltoall
 * (and MPI_Init, MPI_Init_thread, MPI_Finalize); every other MPI function
 * is the MPI library's.  A call is served by coll when
 *   - its communicator is MPI_COMM_WORLD or a duplicate of it (any chain of
 *     MPI_Comm_dup / _dup_with_info / _idup: the same group, the same rank
 *     order).  Duplicates are recognised by an attribute set on
 *     MPI_COMM_WORLD whose copy callback MPI runs on every duplication, and
 *     forgotten by its delete callback at MPI_Comm_free, so a freed handle
 *     that MPI reuses for another communicator is never mistaken for one;
 *   - its datatype is predefined and contiguous: for the reductions one
 *     coll has (signed and unsigned 8/32/64-bit integers, float, double,
 *     whatever C name MPI gives them: MPI_INT, MPI_LONG, MPI_INT64_T, ...),
 *     for the copying collectives any predefined type whose extent is its
 *     size, moved as bytes; send and receive sides must name the same type
 *     and count (or MPI_IN_PLACE);
 *   - its op is MPI_SUM, MPI_PROD, MPI_MIN or MPI_MAX;
 *   - its arguments are valid (else MPI reports the error as it would, or
 *     does what it does): no negative count or bad root, no MPI_IN_PLACE
 *     as a receive buffer, no NULL (MPI_BOTTOM) buffer with data to move,
 *     no send buffer overlapping the receive buffer;
 *   - the plans have an algorithm for the collective;
 *   - MPI_Reduce_scatter's counts are all equal.
 * Everything else goes to PMPI_ unchanged, counted per reason.  Every rank
 * decides from its own arguments, and MPI requires those to agree across
 * ranks; a program whose ranks pass different but matching datatypes (4
 * MPI_INT here, one contiguous type of 4 ints there) is legal MPI that this
 * library cannot serve: the ranks would part ways and wait.
 *
 * The plans: COLL_MPI_LIB=DIR/libNAME.so names a library from `collc
 * build` (dlopen, its NAME_plans, for as many ranks as the job has; its
 * cluster's transport).  Otherwise rank 0 builds them at MPI_Init from the
 * stdlib with collc, choosing by cost: `collc tune --ranges-only` over
 * every algorithm of the .coll files (COLL_MPI_FILES, colon-separated,
 * else the stdlib beside this library) for the job's rank count with the
 * link model of COLL_MPI_TUNE (default "--alpha 5us --bw 5GB/s", the order
 * of one host's shared memory), then `collc show --format json` of each
 * algorithm the size table names; the texts are broadcast, so every rank
 * lowers the same plans and collc need only exist where rank 0 runs.
 * Running collc, reading its JSON and opening a library are
 * runtime/planload/'s, which collbench calls too.
 *
 * One coll communicator per served MPI communicator, made at its first
 * served call with coll_init_mpi on that communicator, so coll keeps MPI's
 * ordering rule (collectives are ordered per communicator) and threads
 * using different duplicates never share one.  The transport is
 * COLL_TRANSPORT, else the library's cluster's, else auto (shm on one
 * host, else MPI point-to-point).  There is no inactivity timeout unless
 * COLL_TIMEOUT is set: an MPI collective waits for late ranks forever.
 *
 * Errors: once coll has started a collective the ranks cannot silently
 * fall back to MPI (some may have finished it), so a coll error becomes an
 * MPI error code of a class of ours, whose string (MPI_Error_string) is
 * coll's message, raised through the communicator's error handler: the
 * default handler aborts the job, MPI_ERRORS_RETURN returns the code.
 * Setting up at MPI_Init (collc missing, a bad COLL_MPI_LIB) fails the
 * same way on MPI_COMM_WORLD.
 *
 * COLL_MPI_STATS=1 prints at MPI_Finalize, from rank 0, one line: the calls
 * coll served per function and those passed to MPI per reason (every rank
 * decides alike, so rank 0's counts stand for all); COLL_MPI_STATS=all
 * prints it from every rank.
 */
#include <mpi.h>

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll.h"
#include "coll_kinds.h"
#include "coll_plan.h"
#include "planload/planload.h"
#include "tuning.h"

extern char **environ;

/* --- what is counted ---------------------------------------------------------- */

/* The functions served, and why a call went to MPI instead. */
#define PM_FUNCS(X)                                                                                  \
	X(ALLREDUCE, "MPI_Allreduce") X(REDUCE_SCATTER_BLOCK, "MPI_Reduce_scatter_block")             \
	X(REDUCE_SCATTER, "MPI_Reduce_scatter") X(ALLGATHER, "MPI_Allgather") X(BCAST, "MPI_Bcast")  \
	X(REDUCE, "MPI_Reduce") X(ALLTOALL, "MPI_Alltoall")
#define PM_REASONS(X)                                                                                \
	X(COMM, "communicator") X(DERIVED, "derived datatype") X(DTYPE, "datatype")                   \
	X(USEROP, "user op") X(OP, "op") X(MIXED, "send/recv types differ")                            \
	X(COUNTS, "non-uniform counts") X(INVALID, "invalid argument") X(NOALGO, "no algorithm")       \
	X(OFF, "coll not set up") X(TUNED, "tuned to MPI")

#define X_ENUM(id, name) PM_##id,
enum { PM_FUNCS(X_ENUM) PM_NFUNCS };
enum { PM_REASONS(X_ENUM) PM_NREASONS };
#undef X_ENUM
#define X_NAME(id, name) name,
static const char *const func_name[] = { PM_FUNCS(X_NAME) };
static const char *const reason_name[] = { PM_REASONS(X_NAME) };
#undef X_NAME

static atomic_long served[PM_NFUNCS], passed[PM_NREASONS], failures;

/* --- state ---------------------------------------------------------------------- */

/* A served MPI communicator: the attribute value of MPI_COMM_WORLD and of
 * each of its duplicates, linked so that MPI_Finalize can close them all. */
typedef struct pm_comm {
	struct pm_comm *prev, *next;
	coll_comm *c;          /* made at the first served call */
	coll_result init_rc;   /* coll_init_mpi failed with it: later calls fail alike */
	char init_why[256];    /* and said this */
	int world_like;        /* 0: not yet asked; 1: congruent to the world; -1: not (served_comm) */
} pm_comm;

static struct {
	int ready;             /* set up: calls may be served */
	int rank, n;           /* in MPI_COMM_WORLD */
	int keyval;
	pm_comm *world;
	const coll_plan_set *plans;
	coll_plan_set *built;  /* stdlib route: ours to free, with algos and choices */
	coll_algo **algos;
	int nalgos;
	coll_choice *choices;
	int nchoices;
	int have[COLL_NCOLLS]; /* the plans hold an algorithm of this kind */
	char source[256];      /* where the plans came from, for the statistics */
	int stats;             /* 0 off, 1 rank 0, 2 every rank */
	int errclass, errcode[COLL_ERR_UNSUPPORTED + 1];
} G = { .keyval = MPI_KEYVAL_INVALID };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pm_comm live;   /* list head of every pm_comm */
/* Set while this thread runs coll_init_mpi: the plugin duplicates the
 * communicator for itself, and those duplicates are not the program's. */
static _Thread_local int in_bootstrap;

static void list_add(pm_comm *e)
{
	pthread_mutex_lock(&lock);
	if (!live.next)
		live.next = live.prev = &live;
	e->next = &live;
	e->prev = live.prev;
	live.prev->next = e;
	live.prev = e;
	pthread_mutex_unlock(&lock);
}

static void list_del(pm_comm *e)
{
	pthread_mutex_lock(&lock);
	e->prev->next = e->next;
	e->next->prev = e->prev;
	pthread_mutex_unlock(&lock);
}

static int copy_attr(MPI_Comm old, int keyval, void *extra, void *in, void *out, int *flag)
{
	(void)old, (void)keyval, (void)extra, (void)in;
	*flag = 0;
	if (in_bootstrap)
		return MPI_SUCCESS;
	pm_comm *e = calloc(1, sizeof *e);
	if (!e)
		return MPI_ERR_NO_MEM;
	list_add(e);
	*(pm_comm **)out = e;
	*flag = 1;
	return MPI_SUCCESS;
}

static int delete_attr(MPI_Comm comm, int keyval, void *val, void *extra)
{
	(void)comm, (void)keyval, (void)extra;
	pm_comm *e = val;
	list_del(e);
	coll_finalize(e->c);   /* outside the lock: it frees MPI communicators of its own */
	free(e);
	return MPI_SUCCESS;
}

/* --- datatypes and ops ------------------------------------------------------------ */

/* Predefined datatypes by kind; the size decides coll's dtype. */
enum { T_SINT, T_UINT, T_FLOAT, T_OTHER };
typedef struct {
	MPI_Datatype dt;
	int kind;
	int red;         /* coll_dtype in reductions, -1: none */
	int size;        /* bytes; 0: not contiguous (extent != size), never served */
} pm_type;
static pm_type types[64];
static int ntypes;

static void add_type(MPI_Datatype dt, int kind)
{
	if (dt == MPI_DATATYPE_NULL || ntypes == (int)(sizeof types / sizeof types[0]))
		return;
	int size = 0;
	MPI_Aint lb = 0, extent = 0;
	if (PMPI_Type_size(dt, &size) != MPI_SUCCESS || PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS)
		return;
	int red = -1;
	if (kind == T_SINT)
		red = size == 1 ? COLL_INT8 : size == 4 ? COLL_INT32 : size == 8 ? COLL_INT64 : -1;
	else if (kind == T_UINT)
		red = size == 1 ? COLL_UINT8 : size == 4 ? COLL_UINT32 : size == 8 ? COLL_UINT64 : -1;
	else if (kind == T_FLOAT)
		red = size == 4 ? COLL_FLOAT32 : size == 8 ? COLL_FLOAT64 : -1;
	types[ntypes++] = (pm_type){ dt, kind, red, lb == 0 && extent == size ? size : 0 };
}

static void init_types(void)
{
	ntypes = 0;
	add_type(MPI_SIGNED_CHAR, T_SINT);
	add_type(MPI_INT8_T, T_SINT);
	add_type(MPI_INT, T_SINT);
	add_type(MPI_INT32_T, T_SINT);
	add_type(MPI_LONG, T_SINT);
	add_type(MPI_LONG_LONG, T_SINT);
	add_type(MPI_LONG_LONG_INT, T_SINT);
	add_type(MPI_INT64_T, T_SINT);
	add_type(MPI_AINT, T_SINT);
	add_type(MPI_OFFSET, T_SINT);
	add_type(MPI_COUNT, T_SINT);
	add_type(MPI_UNSIGNED_CHAR, T_UINT);
	add_type(MPI_UINT8_T, T_UINT);
	add_type(MPI_UNSIGNED, T_UINT);
	add_type(MPI_UINT32_T, T_UINT);
	add_type(MPI_UNSIGNED_LONG, T_UINT);
	add_type(MPI_UNSIGNED_LONG_LONG, T_UINT);
	add_type(MPI_UINT64_T, T_UINT);
	add_type(MPI_FLOAT, T_FLOAT);
	add_type(MPI_DOUBLE, T_FLOAT);
#ifdef MPI_INTEGER
	add_type(MPI_INTEGER, T_SINT);
	add_type(MPI_REAL, T_FLOAT);
	add_type(MPI_DOUBLE_PRECISION, T_FLOAT);
#endif
	/* copied as bytes only: MPI has no arithmetic on them here (MPI_CHAR
	 * is text, MPI_BYTE raw) or coll has no such reduction (16 bits,
	 * long double, bool) */
	add_type(MPI_CHAR, T_OTHER);
	add_type(MPI_BYTE, T_OTHER);
	add_type(MPI_SHORT, T_OTHER);
	add_type(MPI_UNSIGNED_SHORT, T_OTHER);
	add_type(MPI_INT16_T, T_OTHER);
	add_type(MPI_UINT16_T, T_OTHER);
	add_type(MPI_WCHAR, T_OTHER);
	add_type(MPI_LONG_DOUBLE, T_OTHER);
	add_type(MPI_C_BOOL, T_OTHER);
}

/* How a call moves datatype dt: its coll dtype (a reduction's, or bytes
 * for a copy, *scale then being the type's size) or the reason to pass. */
static int map_type(MPI_Datatype dt, int reduces, coll_dtype *out, size_t *scale)
{
	for (int i = 0; i < ntypes; i++)
		if (types[i].dt == dt) {
			if (!types[i].size)
				return PM_DTYPE;
			if (reduces) {
				if (types[i].red < 0)
					return PM_DTYPE;
				*out = (coll_dtype)types[i].red;
				*scale = 1;
			} else {
				*out = COLL_UINT8;
				*scale = (size_t)types[i].size;
			}
			return -1;
		}
	if (dt == MPI_DATATYPE_NULL)
		return PM_INVALID;
	int ni, na, nd, comb;
	if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
		return PM_INVALID;
	if (comb != MPI_COMBINER_NAMED)
		return PM_DERIVED;
	if (reduces)
		return PM_DTYPE;
	/* another predefined type (complex, pairs, Fortran kinds): bytes when
	 * it has no holes */
	int size;
	MPI_Aint lb, extent;
	if (PMPI_Type_size(dt, &size) != MPI_SUCCESS || PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
	    lb != 0 || extent != size || size <= 0)
		return PM_DTYPE;
	*out = COLL_UINT8;
	*scale = (size_t)size;
	return -1;
}

static int map_op(MPI_Op op, coll_op *out)
{
	if (op == MPI_SUM)
		*out = COLL_SUM;
	else if (op == MPI_PROD)
		*out = COLL_PROD;
	else if (op == MPI_MIN)
		*out = COLL_MIN;
	else if (op == MPI_MAX)
		*out = COLL_MAX;
	else if (op == MPI_LAND || op == MPI_BAND || op == MPI_LOR || op == MPI_BOR || op == MPI_LXOR ||
	         op == MPI_BXOR || op == MPI_MINLOC || op == MPI_MAXLOC || op == MPI_REPLACE || op == MPI_NO_OP)
		return PM_OP;
	else if (op == MPI_OP_NULL)
		return PM_INVALID;
	else
		return PM_USEROP;
	return -1;
}

/* The served communicator behind comm, or NULL (world, its duplicates). */
static pm_comm *served_comm(MPI_Comm comm)
{
	if (comm == MPI_COMM_WORLD)
		return G.world;
	if (comm == MPI_COMM_NULL)
		return NULL;
	void *val = NULL;
	int flag = 0;
	if (PMPI_Comm_get_attr(comm, G.keyval, &val, &flag) != MPI_SUCCESS || !flag)
		return NULL;
	/* The attribute is copied on MPI_Comm_dup, but Open MPI also copies it
	 * to MPI_Comm_create_group's communicator, a subset of the world that
	 * the world's plans do not fit: serve only a communicator with the
	 * world's group in the world's order (asked once; MPI_Comm_compare is
	 * local). */
	pm_comm *e = val;
	if (!e->world_like) {
		int res = MPI_UNEQUAL;
		e->world_like = PMPI_Comm_compare(comm, MPI_COMM_WORLD, &res) == MPI_SUCCESS &&
		                (res == MPI_CONGRUENT || res == MPI_IDENT) ? 1 : -1;
	}
	return e->world_like > 0 ? e : NULL;
}

/* --- errors ------------------------------------------------------------------------ */

/* One line on stderr: "coll_mpi: rank R: ..." */
static void pm_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void pm_message(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int o = snprintf(line, sizeof line, "coll_mpi: rank %d: ", G.rank);
	va_start(ap, fmt);
	vsnprintf(line + o, sizeof line - (size_t)o, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}

/* Raise msg on comm as MPI error `code` (one of the library's class; its
 * string becomes msg), through comm's error handler; said on stderr too
 * unless the handler returns (the caller then has MPI_Error_string).
 * Returns the code, for a handler that returns. */
static int raise_msg(MPI_Comm comm, int code, const char *msg)
{
	atomic_fetch_add(&failures, 1);
	if (!code)
		code = MPI_ERR_OTHER;
	pthread_mutex_lock(&lock);
	if (code != MPI_ERR_OTHER)
		PMPI_Add_error_string(code, msg);
	pthread_mutex_unlock(&lock);
	MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
	int quiet = PMPI_Comm_get_errhandler(comm, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_RETURN;
	if (eh != MPI_ERRHANDLER_NULL)
		PMPI_Errhandler_free(&eh);
	if (!quiet)
		pm_message("%s", msg);
	PMPI_Comm_call_errhandler(comm, code);
	return code;
}

/* coll's failure r in MPI function fn, with coll's details. */
static int raise_error(MPI_Comm comm, const char *fn, coll_result r, const char *detail)
{
	char msg[MPI_MAX_ERROR_STRING];
	snprintf(msg, sizeof msg, "coll (libcoll_mpi.so) failed in %s: %s%s%s", fn, coll_strerror(r),
	         detail && *detail ? ": " : "", detail ? detail : "");
	return raise_msg(comm, (unsigned)r <= COLL_ERR_UNSUPPORTED ? G.errcode[r] : 0, msg);
}

/* --- serving a call ------------------------------------------------------------------ */

static void pass(int reason) { atomic_fetch_add(&passed[reason], 1); }

/* COLL_TUNING, read by every rank at MPI_Init (the runtime reads it too,
 * and checks that the ranks' tables agree): where its winner is `mpi`,
 * MPI's own collective measured fastest, and the call goes to MPI. */
static tune_table *tuning;

/* Does the tuning file send this call (count in coll's terms) to MPI?
 * Every rank decides alike: same table, same arguments. */
static int tuned_mpi(coll_kind kind, size_t count, coll_dtype dt)
{
	if (!tuning)
		return 0;
	uint64_t bytes = (uint64_t)count * coll_kind_units(coll_kind_get((int)kind), G.n) * coll_dtype_size(dt);
	const char *w = tune_winner(tuning, (int)kind, bytes);
	if (!w || strcmp(w, TUNE_MPI) != 0)
		return 0;
	pass(PM_TUNED);
	return 1;
}

/* The coll communicator of e, made on first use.  NULL after raising the
 * error (*rc its MPI code). */
static coll_comm *coll_of(pm_comm *e, MPI_Comm comm, int fn, int *rc)
{
	if (e->c)
		return e->c;
	if (!e->init_rc) {
		coll_config cfg = COLL_CONFIG_INIT;
		/* an MPI collective waits for a late rank forever: so do we,
		 * unless the user asks for a timeout */
		const char *t = getenv("COLL_TIMEOUT");
		cfg.timeout_s = t && *t ? 0 : -1;
		MPI_Comm base = comm;
		in_bootstrap = 1;
		e->init_rc = coll_init_mpi(&e->c, G.plans, &cfg, &base);
		in_bootstrap = 0;
		if (e->init_rc == COLL_OK)
			return e->c;
		snprintf(e->init_why, sizeof e->init_why, "%s", coll_last_error(NULL));
	}
	*rc = raise_error(comm, func_name[fn], e->init_rc, e->init_why);
	return NULL;
}

/* Run one collective on e (count: the coll call's count); MPI_SUCCESS or
 * the error raised. */
static int run(pm_comm *e, MPI_Comm comm, int fn, coll_kind kind, const void *sb, void *rb, size_t count,
               coll_dtype dt, coll_op op, int root)
{
	int rc = MPI_SUCCESS;
	coll_comm *c = coll_of(e, comm, fn, &rc);
	if (!c)
		return rc;
	coll_result r = coll_collective(c, kind, NULL, sb, rb, count, dt, op, root);
	if (r != COLL_OK)
		return raise_error(comm, func_name[fn], r, coll_last_error(c));
	atomic_fetch_add(&served[fn], 1);
	return MPI_SUCCESS;
}

/* The checks every call shares: set up, the communicator, the count.
 * Returns e, or NULL after counting the reason to pass. */
static pm_comm *common(coll_kind kind, MPI_Comm comm, int count)
{
	if (!G.ready) {
		pass(PM_OFF);
		return NULL;
	}
	pm_comm *e = served_comm(comm);
	if (!e) {
		pass(comm == MPI_COMM_NULL ? PM_INVALID : PM_COMM);
		return NULL;
	}
	if (count < 0) {
		pass(PM_INVALID);
		return NULL;
	}
	if (!G.have[kind]) {
		pass(PM_NOALGO);
		return NULL;
	}
	return e;
}

/* Reductions: datatype and op; -1 when served, else the reason. */
static int reduction(MPI_Datatype datatype, MPI_Op mop, coll_dtype *dt, coll_op *op)
{
	size_t scale;
	int why = map_type(datatype, 1, dt, &scale);
	return why >= 0 ? why : map_op(mop, op);
}

/* The buffers of a call that moves sbytes from sendbuf (MPI_IN_PLACE:
 * none) and rbytes into recvbuf: 1 when MPI must see them instead,
 * because the call is erroneous and MPI reports it or does what it does
 * (coll would write through a bad pointer, or compute from a buffer it is
 * overwriting): recvbuf MPI_IN_PLACE (only the send side may be), a NULL
 * buffer (MPI_BOTTOM: a predefined type there has nothing to address)
 * with bytes to move, or send and receive buffers that overlap (MPI
 * forbids aliasing; Open MPI rejects some of it, MPI_Allreduce's
 * sendbuf == recvbuf for one).  Every rank of a correct program passes
 * this alike. */
static int bad_buffers(const void *sendbuf, size_t sbytes, const void *recvbuf, size_t rbytes)
{
	if (recvbuf == MPI_IN_PLACE || (rbytes && !recvbuf))
		return 1;
	if (sendbuf == MPI_IN_PLACE)
		return 0;
	if (sbytes && !sendbuf)
		return 1;
	uintptr_t s = (uintptr_t)sendbuf, r = (uintptr_t)recvbuf;
	return sbytes && rbytes && s < r + rbytes && r < s + sbytes;
}

/* Gathers and exchanges (allgather, alltoall): the send side must be the
 * receive side's type and count (or MPI_IN_PLACE), the type one coll
 * moves; *count is then in coll elements.  -1 when served, else the
 * reason. */
static int exchange(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype,
                    coll_dtype *dt, size_t *count)
{
	size_t scale;
	int why;
	if (sendbuf != MPI_IN_PLACE && (sendtype != recvtype || sendcount != recvcount))
		return PM_MIXED;
	if ((why = map_type(recvtype, 0, dt, &scale)) >= 0)
		return why;
	*count = (size_t)recvcount * scale;
	return -1;
}

/* --- the interposed collectives ---------------------------------------------------------
 * Each has MPI's contract: it serves the call with coll when the header's
 * rules allow, else hands it to PMPI_ unchanged; it blocks as the MPI call
 * does and returns MPI_SUCCESS or an error raised through the
 * communicator's handler. */

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	pm_comm *e = common(COLL_ALLREDUCE, comm, count);
	coll_dtype dt;
	coll_op cop;
	int why;
	if (!e)
		goto pmpi;
	if ((why = reduction(datatype, op, &dt, &cop)) < 0) {
		size_t bytes = (size_t)count * coll_dtype_size(dt);
		if (bad_buffers(sendbuf, bytes, recvbuf, bytes))
			why = PM_INVALID;
	}
	if (why >= 0) {
		pass(why);
		goto pmpi;
	}
	if (tuned_mpi(COLL_ALLREDUCE, (size_t)count, dt))
		goto pmpi;
	return run(e, comm, PM_ALLREDUCE, COLL_ALLREDUCE, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf,
	           (size_t)count, dt, cop, 0);
pmpi:
	return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

/* MPI_IN_PLACE: the input is the whole recvbuf (nranks blocks), the result
 * goes to its first block, and MPI leaves the blocks past the first as the
 * caller wrote them: a program may read its input there afterwards.
 * coll's in-place form (recv = send + rank*block) writes the result over
 * this rank's own block of the input, so instead the call runs out of
 * place from recvbuf into a block-sized buffer, then the result is copied
 * to the start.  Out of place, coll's executor only reads the send buffer
 * (chunks start from it and are reduced into their homes in the receive
 * buffer or coll's scratch), so recvbuf is left whole.  Rank 0's block is
 * the first: there coll's in-place form already leaves the rest alone,
 * and no copy is needed. */
static int reduce_scatter_block(int fn, const void *sendbuf, void *recvbuf, int recvcount, coll_dtype dt,
                                coll_op op, pm_comm *e, MPI_Comm comm)
{
	if (sendbuf != MPI_IN_PLACE)
		return run(e, comm, fn, COLL_REDUCE_SCATTER, sendbuf, recvbuf, (size_t)recvcount, dt, op, 0);
	size_t block = (size_t)recvcount * coll_dtype_size(dt);
	if (G.rank == 0 || block == 0)
		return run(e, comm, fn, COLL_REDUCE_SCATTER, recvbuf, recvbuf, (size_t)recvcount, dt, op, 0);
	void *mine = malloc(block);
	if (!mine)
		/* the default handler aborts the job; under
		 * MPI_ERRORS_RETURN the peers wait for this rank, as they
		 * would for a rank whose MPI call failed alike */
		return raise_error(comm, func_name[fn], COLL_ERR_NOMEM, "no memory for the in-place result");
	int rc = run(e, comm, fn, COLL_REDUCE_SCATTER, recvbuf, mine, (size_t)recvcount, dt, op, 0);
	if (rc == MPI_SUCCESS)
		memcpy(recvbuf, mine, block);
	free(mine);
	return rc;
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm)
{
	pm_comm *e = common(COLL_REDUCE_SCATTER, comm, recvcount);
	coll_dtype dt;
	coll_op cop;
	int why;
	if (!e)
		goto pmpi;
	if ((why = reduction(datatype, op, &dt, &cop)) < 0) {
		size_t bytes = (size_t)recvcount * coll_dtype_size(dt);
		if (bad_buffers(sendbuf, bytes * (size_t)G.n, recvbuf, bytes))
			why = PM_INVALID;
	}
	if (why >= 0) {
		pass(why);
		goto pmpi;
	}
	if (tuned_mpi(COLL_REDUCE_SCATTER, (size_t)recvcount, dt))
		goto pmpi;
	return reduce_scatter_block(PM_REDUCE_SCATTER_BLOCK, sendbuf, recvbuf, recvcount, dt, cop, e, comm);
pmpi:
	return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm)
{
	int count = recvcounts && G.ready ? recvcounts[0] : -1;
	pm_comm *e = common(COLL_REDUCE_SCATTER, comm, recvcounts ? 0 : -1);
	coll_dtype dt;
	coll_op cop;
	int why;
	if (!e)
		goto pmpi;
	/* every rank holds the same counts, so every rank decides alike */
	for (int r = 1; r < G.n; r++)
		if (recvcounts[r] != count) {
			pass(PM_COUNTS);
			goto pmpi;
		}
	if ((why = reduction(datatype, op, &dt, &cop)) < 0) {
		size_t bytes = (size_t)(count < 0 ? 0 : count) * coll_dtype_size(dt);
		if (count < 0 || bad_buffers(sendbuf, bytes * (size_t)G.n, recvbuf, bytes))
			why = PM_INVALID;
	}
	if (why >= 0) {
		pass(why);
		goto pmpi;
	}
	if (tuned_mpi(COLL_REDUCE_SCATTER, (size_t)count, dt))
		goto pmpi;
	return reduce_scatter_block(PM_REDUCE_SCATTER, sendbuf, recvbuf, count, dt, cop, e, comm);
pmpi:
	return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm)
{
	pm_comm *e = common(COLL_ALLGATHER, comm, recvcount);
	coll_dtype dt;
	size_t count;
	int why;
	if (!e)
		goto pmpi;
	if ((why = exchange(sendbuf, sendcount, sendtype, recvcount, recvtype, &dt, &count)) >= 0 ||
	    (bad_buffers(sendbuf, count, recvbuf, count * (size_t)G.n) && (why = PM_INVALID))) {
		pass(why);
		goto pmpi;
	}
	const void *sb = sendbuf == MPI_IN_PLACE ? (char *)recvbuf + (size_t)G.rank * count : sendbuf;
	if (tuned_mpi(COLL_ALLGATHER, count, dt))
		goto pmpi;
	return run(e, comm, PM_ALLGATHER, COLL_ALLGATHER, sb, recvbuf, count, dt, COLL_SUM, 0);
pmpi:
	return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
	pm_comm *e = common(COLL_BROADCAST, comm, count);
	coll_dtype dt;
	size_t scale;
	int why;
	if (!e)
		goto pmpi;
	if ((why = map_type(datatype, 0, &dt, &scale)) >= 0 ||
	    ((root < 0 || root >= G.n || buffer == MPI_IN_PLACE || (count && !buffer)) && (why = PM_INVALID))) {
		pass(why);
		goto pmpi;
	}
	if (tuned_mpi(COLL_BROADCAST, (size_t)count * scale, dt))
		goto pmpi;
	return run(e, comm, PM_BCAST, COLL_BROADCAST, buffer, buffer, (size_t)count * scale, dt, COLL_SUM, root);
pmpi:
	return PMPI_Bcast(buffer, count, datatype, root, comm);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm)
{
	pm_comm *e = common(COLL_REDUCE, comm, count);
	coll_dtype dt;
	coll_op cop;
	int why;
	if (!e)
		goto pmpi;
	int is_root = G.rank == root;
	if ((why = reduction(datatype, op, &dt, &cop)) < 0) {
		size_t bytes = (size_t)count * coll_dtype_size(dt);
		/* off the root recvbuf means nothing: only the send side counts */
		if (root < 0 || root >= G.n ||
		    (is_root ? bad_buffers(sendbuf, bytes, recvbuf, bytes) : sendbuf == MPI_IN_PLACE || (bytes && !sendbuf)))
			why = PM_INVALID;
	}
	if (why >= 0) {
		pass(why);
		goto pmpi;
	}
	if (tuned_mpi(COLL_REDUCE, (size_t)count, dt))
		goto pmpi;
	/* recvbuf means nothing off the root (MPI lets it be anything) */
	return run(e, comm, PM_REDUCE, COLL_REDUCE, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf,
	           is_root ? recvbuf : NULL, (size_t)count, dt, cop, root);
pmpi:
	return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm)
{
	pm_comm *e = common(COLL_ALLTOALL, comm, recvcount);
	coll_dtype dt;
	size_t count;
	int why;
	if (!e)
		goto pmpi;
	if ((why = exchange(sendbuf, sendcount, sendtype, recvcount, recvtype, &dt, &count)) >= 0 ||
	    (bad_buffers(sendbuf, count * (size_t)G.n, recvbuf, count * (size_t)G.n) && (why = PM_INVALID))) {
		pass(why);
		goto pmpi;
	}
	if (tuned_mpi(COLL_ALLTOALL, count, dt))
		goto pmpi;
	return run(e, comm, PM_ALLTOALL, COLL_ALLTOALL, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, count,
	           dt, COLL_SUM, 0);
pmpi:
	return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

/* --- plans ---------------------------------------------------------------------------- */

/* A growable text. */
typedef struct {
	char *s;
	size_t len, cap;
	int oom;
} buf;

static void buf_add(buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *t = realloc(b->s, cap);
		if (!t) {
			b->oom = 1;
			return;
		}
		b->s = t;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

/* The directory this library was loaded from. */
static int self_dir(char *out, size_t len)
{
	Dl_info info;
	if (!dladdr((void *)&self_dir, &info) || !info.dli_fname)
		return -1;
	const char *slash = strrchr(info.dli_fname, '/');
	if (!slash)
		return snprintf(out, len, ".") < 0 ? -1 : 0;
	snprintf(out, len, "%.*s", (int)(slash - info.dli_fname), info.dli_fname);
	return 0;
}

/* collc and the stdlib, relative to this library as the tools find each
 * other: the build tree (build/libcoll_mpi.so: build/collc, stdlib/) or an
 * install (PREFIX/lib: PREFIX/bin/collc, PREFIX/share/coll/stdlib);
 * $COLLC and $COLL_STDLIB first. */
static void find_tools(char *collc, size_t clen, char *stdlib, size_t slen)
{
	char dir[PATH_MAX - 64], p[PATH_MAX];
	int have = self_dir(dir, sizeof dir) == 0;
	const char *ec = getenv("COLLC"), *es = getenv("COLL_STDLIB");
	snprintf(collc, clen, "collc");
	stdlib[0] = 0;
	static const char *const layout[][2] = { { "collc", "../stdlib" }, { "../bin/collc", "../share/coll/stdlib" } };
	for (size_t i = 0; have && i < sizeof layout / sizeof layout[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, layout[i][0]);
		if (access(p, X_OK) != 0)
			continue;
		snprintf(collc, clen, "%s", p);
		snprintf(p, sizeof p, "%s/%s", dir, layout[i][1]);
		if (!realpath(p, stdlib))
			stdlib[0] = 0;
		break;
	}
	if (ec && *ec)
		snprintf(collc, clen, "%s", ec);
	if (es && *es)
		snprintf(stdlib, slen, "%s", es);
}

/* The environment for collc: ours without LD_PRELOAD, so that collc does
 * not load this library (and libmpi) in turn. */
static char **collc_env(void)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 1, sizeof *env);
	for (size_t i = 0, k = 0; env && i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
			env[k++] = environ[i];
	return env;
}

/* Run collc with args; its stdout, NUL-terminated, appended to out.  -1
 * with a message in why. */
static int run_collc(const char **args, int nargs, char **env, buf *out, char *why, size_t whylen)
{
	char *o, *e;
	size_t olen;
	args[nargs] = NULL;
	int st = pl_run((char *const *)args, env, &o, &olen, &e, why, whylen);
	if (st < 0)
		return -1;
	if (st != 0) {
		size_t el = e ? strlen(e) : 0;
		while (el && e[el - 1] == '\n')
			e[--el] = 0;
		snprintf(why, whylen, "`%s %s` failed (exit %d): %s", args[0], args[1], st, e && *e ? e : "no message");
		free(o);
		free(e);
		return -1;
	}
	buf_add(out, o, olen + 1);   /* with its NUL: texts are separated by them */
	free(o);
	free(e);
	return 0;
}

/* Rank 0's part of the stdlib route: "OK\0<tune JSON>\0<show JSON>\0..." or
 * "ERR\0<message>\0". */
static buf stdlib_texts(void)
{
	buf out = { 0 };
	char why[1024] = "", collc[PATH_MAX], stdlib[PATH_MAX], nbuf[16];
	char *files_env = NULL, **files = NULL, **env = collc_env();
	int nfiles = 0;
	glob_t gl = { 0 };
	coll_choice *ch = NULL;
	int nch = 0;
	find_tools(collc, sizeof collc, stdlib, sizeof stdlib);
	const char *fe = getenv("COLL_MPI_FILES");
	if (fe && *fe) {
		files_env = strdup(fe);
		files = calloc(strlen(fe) / 2 + 2, sizeof *files);
		for (char *s = files_env, *save = NULL, *f; files && (f = strtok_r(s, ":", &save)); s = NULL)
			files[nfiles++] = f;
	} else {
		char pat[PATH_MAX + 16];
		snprintf(pat, sizeof pat, "%s/*.coll", stdlib[0] ? stdlib : ".");
		if (!stdlib[0] || glob(pat, 0, NULL, &gl) != 0 || !gl.gl_pathc) {
			snprintf(why, sizeof why, "no .coll files: the stdlib is not %s (set COLL_STDLIB or COLL_MPI_FILES)",
			         stdlib[0] ? stdlib : "beside libcoll_mpi.so");
			goto done;
		}
		files = gl.gl_pathv;
		nfiles = (int)gl.gl_pathc;
	}
	if (!env || !files) {
		snprintf(why, sizeof why, "out of memory");
		goto done;
	}
	snprintf(nbuf, sizeof nbuf, "%d", G.n);
	const char *tune = getenv("COLL_MPI_TUNE");
	char *tune_copy = strdup(tune && *tune ? tune : "--alpha 5us --bw 5GB/s");
	const char **args = calloc((size_t)nfiles + strlen(tune_copy ? tune_copy : "") + 16, sizeof *args);
	if (!tune_copy || !args) {
		free(tune_copy);
		free(args);
		snprintf(why, sizeof why, "out of memory");
		goto done;
	}
	int na = 0;
	args[na++] = collc;
	args[na++] = "tune";
	for (int i = 0; i < nfiles; i++)
		args[na++] = files[i];
	args[na++] = "-n", args[na++] = nbuf, args[na++] = "-b", args[na++] = "1", args[na++] = "-e", args[na++] = "4G";
	for (char *s = tune_copy, *save = NULL, *w; (w = strtok_r(s, " \t", &save)); s = NULL)
		args[na++] = w;
	args[na++] = "--ranges-only";   /* the critical delays of StragglAR are not wanted here */
	args[na++] = "--json";
	buf_add(&out, "OK", 3);
	size_t tune_at = out.len;
	int rc = run_collc(args, na, env, &out, why, sizeof why);
	if (rc == 0 && (nch = pl_choices_from_tune(out.s + tune_at, strlen(out.s + tune_at), &ch, why, sizeof why)) < 0)
		rc = -1;
	/* COLL_TUNING: the winners of a tuning file come along, so that the
	 * runtime, which reads the file at coll_init and chooses by it, finds
	 * them in the plan set (stdlib algorithms: the file's candidates) */
	const char *tf = getenv("COLL_TUNING");
	if (rc == 0 && tf && *tf) {
		tune_table *t;
		link_error e;
		if (tune_read(tf, &t, &e) != 0) {
			snprintf(why, sizeof why, "COLL_TUNING: %s", e.msg);
			rc = -1;
		} else {
			for (int r = 0; r < t->nrows && rc == 0; r++) {
				const char *w = t->cands[t->rows[r].kind][t->rows[r].winner];
				int seen = strcmp(w, TUNE_MPI) == 0;   /* MPI's own: no plan */
				for (int j = 0; j < nch && !seen; j++)
					seen = strcmp(ch[j].algo, w) == 0;
				if (seen)
					continue;
				coll_choice *grown = realloc(ch, sizeof *ch * (size_t)(nch + 1));
				char *name = strdup(w);
				if (!grown || !name) {
					free(name);
					if (grown)
						ch = grown;
					snprintf(why, sizeof why, "out of memory");
					rc = -1;
					break;
				}
				/* a choice no size reaches (0 bytes, after the kind's own): it
				 * only puts the algorithm in the plan set */
				ch = grown;
				ch[nch++] = (coll_choice){ -1, 0, name };
			}
			tune_free(t);
		}
	}
	/* the schedule of every algorithm the table names, once each */
	for (int i = 0; rc == 0 && i < nch; i++) {
		int seen = 0;
		for (int j = 0; j < i; j++)
			seen |= strcmp(ch[j].algo, ch[i].algo) == 0;
		if (seen)
			continue;
		na = 0;
		args[na++] = collc;
		args[na++] = "show";
		for (int k = 0; k < nfiles; k++)
			args[na++] = files[k];
		args[na++] = "-a", args[na++] = ch[i].algo, args[na++] = "-n", args[na++] = nbuf;
		args[na++] = "--format", args[na++] = "json";
		rc = run_collc(args, na, env, &out, why, sizeof why);
	}
	free(tune_copy);
	free(args);
	if (rc == 0 && out.oom)
		snprintf(why, sizeof why, "out of memory");
done:
	pl_choices_free(ch, nch);
	if (why[0]) {
		out.len = 0;
		out.oom = 0;
		buf_add(&out, "ERR", 4);
		buf_add(&out, why, strlen(why) + 1);
	}
	if (gl.gl_pathv)
		globfree(&gl);
	else
		free(files);
	free(files_env);
	free(env);
	return out;
}

/* Every rank: the plans from rank 0's texts.  -1 with why. */
static int plans_from_texts(const char *t, size_t len, char *why, size_t whylen)
{
	const char *end = t + len;
	if (strcmp(t, "OK") != 0) {
		snprintf(why, whylen, "%s", t + strlen(t) + 1 < end ? t + strlen(t) + 1 : "rank 0 failed");
		return -1;
	}
	t += 3;
	if ((G.nchoices = pl_choices_from_tune(t, strlen(t), &G.choices, why, whylen)) < 0)
		return -1;
	t += strlen(t) + 1;
	/* as many schedules as the texts hold (rank 0 sends one per choice,
	 * but the array must not trust that) */
	size_t ntexts = 0;
	for (const char *u = t; u < end && *u; u += strlen(u) + 1)
		ntexts++;
	G.algos = calloc(ntexts + 1, sizeof *G.algos);
	if (!G.algos)
		return snprintf(why, whylen, "out of memory"), -1;
	for (; t < end && *t; t += strlen(t) + 1) {
		coll_algo *a = pl_algo_from_json(t, strlen(t), G.n, why, whylen);
		if (!a)
			return -1;
		G.algos[G.nalgos++] = a;
	}
	G.built = coll_plan_set_build("stdlib", G.n, (const coll_algo *const *)G.algos, G.nalgos, G.choices, G.nchoices);
	if (!G.built)
		return snprintf(why, whylen, "out of memory"), -1;
	G.plans = G.built;
	snprintf(G.source, sizeof G.source, "stdlib, chosen by collc tune");
	return 0;
}

/* The stdlib route: rank 0 runs collc and broadcasts what it printed. */
static int plans_from_stdlib(char *why, size_t whylen)
{
	buf b = { 0 };
	if (G.rank == 0)
		b = stdlib_texts();
	long long len = (long long)b.len;
	if (PMPI_Bcast(&len, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD) != MPI_SUCCESS || len <= 0 || len > INT_MAX) {
		free(b.s);
		return snprintf(why, whylen, "cannot broadcast the plans"), -1;
	}
	if (G.rank != 0 && !(b.s = malloc((size_t)len + 1))) {
		/* every rank must still take part in the broadcast */
		static char dummy;
		PMPI_Bcast(&dummy, 0, MPI_BYTE, 0, MPI_COMM_WORLD);
		return snprintf(why, whylen, "out of memory"), -1;
	}
	b.s[len] = 0;   /* the texts are read with strlen: end them here whatever arrives */
	int rc = PMPI_Bcast(b.s, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS
	                 ? plans_from_texts(b.s, (size_t)len, why, whylen)
	                 : (snprintf(why, whylen, "cannot broadcast the plans"), -1);
	free(b.s);
	return rc;
}

/* COLL_MPI_LIB: a library from `collc build`, for this job's rank count. */
static int plans_from_lib(const char *path, char *why, size_t whylen)
{
	char sym[256];
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return snprintf(why, whylen, "COLL_MPI_LIB: %s", dlerror()), -1;
	if (pl_lib_symbol(path, sym, sizeof sym) != 0)
		return snprintf(why, whylen, "COLL_MPI_LIB: no plan-set name in '%s' (want DIR/libNAME.so)", path), -1;
	const coll_plan_set *s = dlsym(h, sym);
	if (!s)
		return snprintf(why, whylen, "COLL_MPI_LIB: %s has no symbol %s (the plan set of `collc build`)", path, sym),
		       -1;
	if (s->abi != COLL_PLAN_ABI)
		return snprintf(why, whylen, "COLL_MPI_LIB: %s has plan ABI %u, this library reads %d", path, s->abi,
		                COLL_PLAN_ABI),
		       -1;
	if (s->nranks != G.n)
		return snprintf(why, whylen, "COLL_MPI_LIB: plan set '%s' in %s is for %d ranks, the job has %d", s->name,
		                path, s->nranks, G.n),
		       -1;
	G.plans = s;
	snprintf(G.source, sizeof G.source, "%s", path);
	return 0;
}

/* --- MPI_Init, MPI_Finalize ----------------------------------------------------------------- */

static void make_error_codes(void)
{
	if (PMPI_Add_error_class(&G.errclass) != MPI_SUCCESS)
		return;
	PMPI_Add_error_string(G.errclass, "coll (libcoll_mpi.so) failed");
	for (int r = 1; r <= COLL_ERR_UNSUPPORTED; r++) {
		char s[128];
		if (PMPI_Add_error_code(G.errclass, &G.errcode[r]) != MPI_SUCCESS) {
			G.errcode[r] = 0;
			continue;
		}
		snprintf(s, sizeof s, "coll (libcoll_mpi.so): %s", coll_strerror((coll_result)r));
		PMPI_Add_error_string(G.errcode[r], s);
	}
}

/* After PMPI_Init: the plans, the error codes, the world attribute.  A
 * failure is raised on MPI_COMM_WORLD (by default: the job aborts). */
static int setup(void)
{
	char why[1024] = "";
	const char *st = getenv("COLL_MPI_STATS");
	G.stats = !st || !*st || strcmp(st, "0") == 0 ? 0 : strcmp(st, "all") == 0 ? 2 : 1;
	PMPI_Comm_rank(MPI_COMM_WORLD, &G.rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &G.n);
	init_types();
	make_error_codes();
	const char *lib = getenv("COLL_MPI_LIB");
	int rc;
	if (G.n < 2) {
		/* stdlib algorithms start at 2 ranks; one rank has nothing to move */
		snprintf(G.source, sizeof G.source, "none (one rank)");
		rc = 0;
	} else {
		rc = lib && *lib ? plans_from_lib(lib, why, sizeof why) : plans_from_stdlib(why, sizeof why);
	}
	char msg[MPI_MAX_ERROR_STRING];
	snprintf(msg, sizeof msg, "coll (libcoll_mpi.so) cannot start in MPI_Init: %s", why);
	if (rc != 0)
		return raise_msg(MPI_COMM_WORLD, G.errcode[COLL_ERR_PLAN], msg);
	for (int i = 0; G.plans && i < G.plans->nalgos; i++)
		if (G.plans->algos[i]->nranks == G.n && G.plans->algos[i]->kind >= 0 &&
		    G.plans->algos[i]->kind < COLL_NCOLLS)
			G.have[G.plans->algos[i]->kind] = 1;
	if (!(G.world = calloc(1, sizeof *G.world)) ||
	    PMPI_Comm_create_keyval(copy_attr, delete_attr, &G.keyval, NULL) != MPI_SUCCESS ||
	    PMPI_Comm_set_attr(MPI_COMM_WORLD, G.keyval, G.world) != MPI_SUCCESS)
		return raise_error(MPI_COMM_WORLD, "MPI_Init", COLL_ERR_NOMEM, "cannot track MPI_COMM_WORLD");
	list_add(G.world);
	/* COLL_TUNING decides which calls go to MPI before any coll
	 * communicator exists, so the ranks agree on it here: the same table
	 * on every rank (its fingerprint, 0 for none or unreadable), or the
	 * job stops with the reason.  A file every rank reads alike but that
	 * does not fit is the runtime's error at the first served call. */
	const char *tf = getenv("COLL_TUNING");
	link_error le = { "", 0 };
	if (tf && *tf && tune_read(tf, &tuning, &le) != 0)
		tuning = NULL;
	/* one MPI_MAX over {h, ~h} gives the largest h and the smallest */
	unsigned mine[2], agg[2] = { 0, 0 };
	mine[0] = tuning ? tune_hash(tuning) : 0;
	mine[1] = ~mine[0];
	if (PMPI_Allreduce(mine, agg, 2, MPI_UNSIGNED, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
		return raise_error(MPI_COMM_WORLD, "MPI_Init", COLL_ERR_PEER, "cannot compare the ranks' COLL_TUNING");
	if (agg[0] != ~agg[1]) {
		snprintf(msg, sizeof msg, "coll (libcoll_mpi.so) cannot start in MPI_Init: the ranks' COLL_TUNING tables "
		         "differ%s%s", le.msg[0] ? "; here: " : "", le.msg);
		return raise_msg(MPI_COMM_WORLD, G.errcode[COLL_ERR_INVALID], msg);
	}
	G.ready = 1;
	return MPI_SUCCESS;
}

/* MPI_Init and MPI_Init_thread: MPI's, then the library's set-up (above). */
int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);
	return rc == MPI_SUCCESS ? setup() : rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	return rc == MPI_SUCCESS ? setup() : rc;
}

static void print_stats(void)
{
	char line[2048];
	size_t o = 0;
	long ns = 0, np = 0;
	for (int f = 0; f < PM_NFUNCS; f++)
		ns += atomic_load(&served[f]);
	for (int r = 0; r < PM_NREASONS; r++)
		np += atomic_load(&passed[r]);
	o += (size_t)snprintf(line + o, sizeof line - o, "coll_mpi: rank %d: served %ld", G.rank, ns);
	for (int f = 0, k = 0; f < PM_NFUNCS && o < sizeof line; f++)
		if (atomic_load(&served[f]))
			o += (size_t)snprintf(line + o, sizeof line - o, "%s%s %ld", k++ ? ", " : " (", func_name[f],
			                      atomic_load(&served[f]));
	if (ns && o < sizeof line)
		o += (size_t)snprintf(line + o, sizeof line - o, ")");
	if (o < sizeof line)
		o += (size_t)snprintf(line + o, sizeof line - o, ", passed to MPI %ld", np);
	for (int r = 0, k = 0; r < PM_NREASONS && o < sizeof line; r++)
		if (atomic_load(&passed[r]))
			o += (size_t)snprintf(line + o, sizeof line - o, "%s%s %ld", k++ ? ", " : " (", reason_name[r],
			                      atomic_load(&passed[r]));
	if (np && o < sizeof line)
		o += (size_t)snprintf(line + o, sizeof line - o, ")");
	if (atomic_load(&failures) && o < sizeof line)
		o += (size_t)snprintf(line + o, sizeof line - o, ", failed %ld", atomic_load(&failures));
	if (o < sizeof line)
		o += (size_t)snprintf(line + o, sizeof line - o, "; plans: %s; transport: %s", G.source[0] ? G.source : "none",
		         G.world && G.world->c ? coll_transport_name(G.world->c) : "none (never used)");
	if (o < sizeof line && G.world && G.world->c && coll_tuning(G.world->c))
		snprintf(line + o, sizeof line - o, "; tuned: %s", coll_tuning(G.world->c));
	fprintf(stderr, "%s\n", line);
}

/* MPI_Finalize: the statistics, every coll communicator closed while MPI
 * still runs, then MPI's. */
int MPI_Finalize(void)
{
	if (G.stats == 2 || (G.stats == 1 && G.rank == 0))
		print_stats();
	if (G.ready) {
		G.ready = 0;
		/* close every coll communicator while MPI still runs (the plugin
		 * frees its MPI communicators); the entries stay for MPI's delete
		 * callbacks of communicators the program never freed */
		for (;;) {
			coll_comm *c = NULL;
			pthread_mutex_lock(&lock);
			for (pm_comm *e = live.next; e && e != &live && !c; e = e->next)
				if (e->c) {
					c = e->c;
					e->c = NULL;
				}
			pthread_mutex_unlock(&lock);
			if (!c)
				break;
			coll_finalize(c);
		}
		PMPI_Comm_delete_attr(MPI_COMM_WORLD, G.keyval);   /* frees G.world */
		G.world = NULL;
		PMPI_Comm_free_keyval(&G.keyval);
	}
	int rc = PMPI_Finalize();
	coll_plan_set_free(G.built);
	for (int i = 0; i < G.nalgos; i++)
		coll_algo_free(G.algos[i]);
	free(G.algos);
	pl_choices_free(G.choices, G.nchoices);
	tune_free(tuning);
	tuning = NULL;
	G.built = NULL, G.algos = NULL, G.choices = NULL, G.nalgos = G.nchoices = 0, G.plans = NULL;
	return rc;
}
