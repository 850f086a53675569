/*
 * mpiboot.c - bootstrap through MPI when the job was started by mpirun.
 *
 * libcollrt has no link-time dependency on libmpi.  When a process started
 * by an MPI launcher (OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK in the
 * environment) calls coll_init without COLL_RANK, or asks for transport
 * "mpi", this file dlopens the plugin libcollrt_mpi.so (runtime/mpi/
 * plugin.c, built only where mpicc exists) and lets MPI do the rendezvous:
 * rank and size come from MPI_COMM_WORLD, rank 0 broadcasts the job id and
 * a link key (random, or derived from COLL_SECRET when set), and the TCP
 * listener addresses are allgathered, so every transport (shm, tcp, mpi)
 * works on an MPI-bootstrapped communicator exactly as on a collrun one.
 *
 * The plugin is looked for, first found wins:
 *   1. $COLL_MPI_PLUGIN;
 *   2. beside the object that holds libcollrt's code (libcollrt.so, a
 *      library from `collc build`, which gets a copy of the plugin, or the
 *      program that linked libcollrt.a), found with dladdr;
 *   3. in that directory's coll/ (an installed PREFIX/lib/libcollrt.so:
 *      PREFIX/lib/coll/), and in its ../lib/coll/ (an installed program
 *      in PREFIX/bin that linked libcollrt.a, such as collbench);
 *   4. in the directories compiled in (coll_paths.h, written by the
 *      Makefile): the install prefix's plugin directory, then the build
 *      directory, for programs that linked libcollrt.a and live elsewhere;
 *   5. by the dynamic linker's search path.
 */
#include <dlfcn.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_paths.h"   /* COLL_PLUGIN_PATH: the install's plugin dir and the build dir */
#include "rt.h"

#define PLUGIN_NAME "libcollrt_mpi.so"

int rt_mpi_launched(void)
{
	return getenv("OMPI_COMM_WORLD_RANK") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

static const rt_host_api host_api = {
	.size = sizeof(rt_host_api),
	.comm_size = sizeof(coll_comm),
	.tp_size = sizeof(rt_transport),
	.err = rt_err,
	.env_long = rt_env_long,
	.now_ms = rt_now_ms,
	.strerror = coll_strerror,
};

/* Directory of the object libcollrt's code lives in. */
static int self_dir(char *buf, size_t len)
{
	Dl_info info;
	const char *path = NULL;
	char exe[PATH_MAX];
	if (dladdr((void *)&self_dir, &info) && info.dli_fname && strstr(info.dli_fname, ".so"))
		path = info.dli_fname;
	if (!path) {
		ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (k <= 0)
			return -1;
		exe[k] = 0;
		path = exe;
	}
	const char *slash = strrchr(path, '/');
	if (!slash || (size_t)(slash - path) >= len)
		return -1;
	memcpy(buf, path, (size_t)(slash - path));
	buf[slash - path] = 0;
	return 0;
}

static const rt_mpi_plugin *load_plugin(coll_comm *c)
{
	static const rt_mpi_plugin *cached;
	if (cached)
		return cached;
	enum { MAXTRY = 16 };
	char paths[MAXTRY][PATH_MAX], why[256] = "";
	int nt = 0, why_there = 0;
	const char *env = getenv("COLL_MPI_PLUGIN");
	if (env && *env)
		snprintf(paths[nt++], PATH_MAX, "%s", env);
	char dir[PATH_MAX - 64];
	int have_dir = self_dir(dir, sizeof dir) == 0;
	if (have_dir) {
		snprintf(paths[nt++], PATH_MAX, "%s/%s", dir, PLUGIN_NAME);
		snprintf(paths[nt++], PATH_MAX, "%s/coll/%s", dir, PLUGIN_NAME);
		snprintf(paths[nt++], PATH_MAX, "%s/../lib/coll/%s", dir, PLUGIN_NAME);
	}
	for (const char *p = COLL_PLUGIN_PATH; *p && nt < MAXTRY - 1;) {
		size_t k = strcspn(p, ":");
		if (k > 0 && k < PATH_MAX - 64)
			snprintf(paths[nt++], PATH_MAX, "%.*s/%s", (int)k, p, PLUGIN_NAME);
		p += k + (p[k] == ':');
	}
	snprintf(paths[nt++], PATH_MAX, "%s", PLUGIN_NAME);
	for (int i = 0; i < nt; i++) {
		/* RTLD_GLOBAL: libmpi's own components resolve against it. */
		void *h = dlopen(paths[i], RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
		if (!h) {
			/* the reason worth printing: a file that is there but does
			 * not load (wrong MPI, missing libmpi), else $COLL_MPI_PLUGIN's */
			const char *e = dlerror();
			int there = strchr(paths[i], '/') && access(paths[i], F_OK) == 0;
			if ((there && !why_there) || (i == 0 && env && *env)) {
				snprintf(why, sizeof why, "%.200s", e ? e : paths[i]);
				why_there = there;
			}
			continue;
		}
		const rt_mpi_plugin *(*entry)(const rt_host_api *) =
		        (const rt_mpi_plugin *(*)(const rt_host_api *))dlsym(h, "coll_mpi_plugin");
		const rt_mpi_plugin *p = entry ? entry(&host_api) : NULL;
		if (!p || p->abi != RT_MPI_ABI || p->size != sizeof(rt_mpi_plugin)) {
			rt_err(c, COLL_ERR_UNSUPPORTED, "%s is not a libcollrt MPI plugin of this version", paths[i]);
			return NULL;
		}
		return cached = p;
	}
	if (!why[0])
		snprintf(why, sizeof why, "not beside %.80s, in its coll/, in %.120s or on the linker's path",
		         have_dir ? dir : "libcollrt", COLL_PLUGIN_PATH);
	rt_err(c, COLL_ERR_UNSUPPORTED,
	       "launched under MPI, but the MPI plugin %s could not be loaded (%s); build it with mpicc "
	       "(apt-get install libopenmpi-dev), set COLL_MPI_PLUGIN, or launch with collrun",
	       PLUGIN_NAME, why);
	return NULL;
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
	/* Job id and link key from rank 0.  MPI is the trusted channel; a
	 * COLL_SECRET, if given, still keys the TCP links. */
	struct { uint64_t jobid; uint8_t key[16]; } ids;
	if (c->rank == 0) {
		rt_random(&ids.jobid, sizeof ids.jobid);
		if (secret && *secret)
			rt_auth_key(secret, ids.key);
		else
			rt_random(ids.key, sizeof ids.key);
	}
	if ((rc = p->bcast(c, &ids, sizeof ids, rt_boot_deadline(c))))
		return rc;
	c->boot.jobid = ids.jobid;
	memcpy(c->boot.key, ids.key, sizeof ids.key);
	if (c->n == 1)
		return COLL_OK;
	if ((rc = rt_boot_listen(c, AF_INET)))
		return rc;
	struct sockaddr_storage mine;
	struct sockaddr_storage l;
	socklen_t ll = sizeof l;
	memset(&mine, 0, sizeof mine);
	getsockname(c->boot.listen_fd, (struct sockaddr *)&l, &ll);
	struct sockaddr_in *a = (struct sockaddr_in *)&mine;
	a->sin_family = AF_INET;
	a->sin_port = ((struct sockaddr_in *)&l)->sin_port;
	my_addr(a);
	if ((rc = p->allgather(c, &mine, c->boot.addrs, sizeof mine, rt_boot_deadline(c))))
		return rc;
	for (int r = 0; r < c->n; r++)
		c->boot.addrlens[r] = sizeof(struct sockaddr_in);
	return COLL_OK;
}
