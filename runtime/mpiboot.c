/*
 * mpiboot.c - bootstrap through MPI when the job was started by mpirun.
 *
 * libcollrt has no link-time dependency on libmpi.  When a process started
 * by an MPI launcher (OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK in the
 * environment) calls coll_init without COLL_RANK, or asks for transport
 * "mpi", this file dlopens the plugin libcollrt_mpi.so (runtime/transport/
 * mpi/plugin.c, built only where mpicc exists) and lets MPI do the rendezvous:
 * rank and size come from MPI_COMM_WORLD, rank 0 broadcasts the job id and
 * a link key (random, or derived from COLL_SECRET when set), and the TCP
 * listener addresses are allgathered, so every transport (shm, tcp, mpi)
 * works on an MPI-bootstrapped communicator exactly as on a collrun one.
 *
 * The plugin is looked for at $COLL_MPI_PLUGIN, then beside the object
 * that holds libcollrt (libcollrt.so, a library from `collc build`, which
 * gets a copy of it, or the program that linked libcollrt.a), then in an
 * install's lib/coll, then in the compiled-in directories, then by the
 * dynamic linker's search path (plugin.c, which loads the ibverbs
 * transport's plugin the same way).
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"

#define PLUGIN_NAME "libcollrt_mpi.so"

int rt_mpi_launched(void)
{
	return getenv("OMPI_COMM_WORLD_RANK") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

static const rt_mpi_plugin *load_plugin(coll_comm *c)
{
	rt_plugin pl;
	/* RTLD_GLOBAL: libmpi's own components resolve against it. */
	int rc = rt_plugin_load("mpi", 1, &pl);
	const rt_mpi_plugin *p = pl.table;
	if (rc == RT_PLUGIN_MISSING) {
		rt_err(c, COLL_ERR_UNSUPPORTED,
		       "launched under MPI, but the MPI plugin %s could not be loaded (%s); build it with mpicc "
		       "(apt-get install libopenmpi-dev), set COLL_MPI_PLUGIN, or launch with collrun",
		       PLUGIN_NAME, pl.why);
		return NULL;
	}
	if (rc || p->abi != RT_MPI_ABI || p->size != sizeof(rt_mpi_plugin)) {
		rt_err(c, COLL_ERR_UNSUPPORTED, "%s is not a libcollrt MPI plugin of this version", pl.path);
		return NULL;
	}
	return p;
}

/* The address peers should dial: the first IPv4 address of an interface
 * that is up and not loopback, else 127.0.0.1 (one host). */
static void my_addr(struct sockaddr_in *out)
{
	struct ifaddrs *ifs = NULL;
	out->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (getifaddrs(&ifs) != 0)
		return;
	for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
		    !(i->ifa_flags & IFF_LOOPBACK)) {
			out->sin_addr = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			break;
		}
	freeifaddrs(ifs);
}

int rt_mpi_boot(coll_comm *c, int nranks, const char *secret)
{
	const rt_mpi_plugin *p = load_plugin(c);
	int rc;
	if (!p)
		return COLL_ERR_UNSUPPORTED;
	if ((rc = p->boot(c)))
		return rc;
	c->boot.mpi = p;
	if (nranks > 0 && nranks != c->n)
		return rt_err(c, COLL_ERR_BOOTSTRAP, "nranks %d was asked for, but the MPI job has %d ranks", nranks, c->n);
	c->boot.fds = malloc(sizeof(int) * (size_t)c->n);
	c->boot.addrs = calloc((size_t)c->n, sizeof *c->boot.addrs);
	c->boot.addrlens = calloc((size_t)c->n, sizeof *c->boot.addrlens);
	if (!c->boot.fds || !c->boot.addrs || !c->boot.addrlens)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	for (int i = 0; i < c->n; i++)
		c->boot.fds[i] = -1;
	/* Job id and link key from rank 0.  MPI is the trusted channel (the
	 * launcher's own), so the key needs no secret of the user's: without
	 * COLL_SECRET it is 128 random bits from the kernel, fresh per job.
	 * A COLL_SECRET, if given, keys the TCP links instead (rank 0's: the
	 * others' are not read).  Neither is ever derived from anything
	 * weaker: rank 0 without kernel randomness fails the job. */
	struct { uint64_t jobid; uint8_t key[16]; uint32_t ok, pad; } ids;
	memset(&ids, 0, sizeof ids);
	if (c->rank == 0) {
		ids.ok = rt_random(&ids.jobid, sizeof ids.jobid) == 0;
		if (secret && *secret)
			rt_auth_key(secret, ids.key);
		else if (rt_random(ids.key, sizeof ids.key) != 0)
			ids.ok = 0;
	}
	if ((rc = p->bcast(c, &ids, sizeof ids, rt_boot_deadline(c))))
		return rc;
	if (!ids.ok)
		return rt_err(c, COLL_ERR_SYSTEM, "rank 0 has no kernel randomness (getrandom failed) for the job's link key");
	c->boot.jobid = ids.jobid;
	memcpy(c->boot.key, ids.key, sizeof ids.key);
	if (c->n == 1)
		return COLL_OK;
	/* The listener on the address we advertise, not on every interface. */
	struct sockaddr_storage mine;
	memset(&mine, 0, sizeof mine);
	struct sockaddr_in *a = (struct sockaddr_in *)&mine;
	a->sin_family = AF_INET;
	my_addr(a);
	if ((rc = rt_boot_listen(c, &mine)))
		return rc;
	socklen_t ml = sizeof mine;
	getsockname(c->boot.listen_fd, (struct sockaddr *)&mine, &ml);
	if ((rc = p->allgather(c, &mine, c->boot.addrs, sizeof mine, rt_boot_deadline(c))))
		return rc;
	for (int r = 0; r < c->n; r++)
		c->boot.addrlens[r] = sizeof(struct sockaddr_in);
	return COLL_OK;
}

coll_result coll_mpi_collective(coll_comm *c, coll_kind k, const void *sb, void *rb, size_t count, coll_dtype dt,
                                coll_op op, int root)
{
	if (!c)
		return rt_err(NULL, COLL_ERR_INVALID, "coll_mpi_collective: NULL communicator");
	if (!c->boot.mpi || !c->boot.mpi->coll || !c->boot.mpi_state)
		return rt_err(c, COLL_ERR_UNSUPPORTED, "coll_mpi_collective: the communicator did not start under MPI "
		              "(mpirun, or coll_init_mpi)");
	if ((unsigned)k >= COLL_NCOLLS || (unsigned)dt >= COLL_NDTYPES || (unsigned)op >= COLL_NOPS ||
	    root < 0 || root >= c->n)
		return rt_err(c, COLL_ERR_INVALID, "coll_mpi_collective: bad collective, dtype, op or root");
	return c->boot.mpi->coll(c, (int)k, sb, rb, count, (int)dt, (int)op, root);
}
