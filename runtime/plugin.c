/*
 * plugin.c - loading libcollrt's plugins: the libraries that carry what
 * libcollrt itself must not link (libmpi for the MPI bootstrap and
 * transport, libibverbs for the RDMA transport), so that libcollrt, and
 * every library collc generates from it, builds, links and runs on
 * machines that have neither.
 *
 * Plugin NAME is the file libcollrt_NAME.so, looked for, first found wins:
 *   1. at $COLL_<NAME>_PLUGIN (NAME upper-cased), and there alone: a
 *      plugin named explicitly that does not load is an error, not a
 *      reason to take another one from somewhere else;
 *   2. next to the object that holds libcollrt (libcollrt.so, or the
 *      program or library that linked libcollrt.a: `collc build` copies
 *      the MPI plugin beside each library it generates), found with dladdr;
 *   3. in that directory's coll/ (an installed PREFIX/lib/libcollrt.so:
 *      PREFIX/lib/coll) and ../lib/coll/ (an installed program in
 *      PREFIX/bin that linked libcollrt.a, such as collbench);
 *   4. in the directories compiled in (coll_paths.h, written by
 *      install.mk): the install prefix's plugin directory, then the build
 *      directory, for programs that linked libcollrt.a and live elsewhere;
 *   5. on the dynamic linker's search path.  It exports one
 * function, coll_NAME_plugin(const rt_host_api *), which returns its table
 * (an rt_mpi_plugin for mpi, an rt_transport for a transport) or NULL when
 * it was built against another layout of libcollrt's structures; libcollrt
 * reaches the plugin only through that table, the plugin reaches
 * libcollrt only through rt_host_api, since libcollrt's own symbols are
 * local.  Loaded plugins stay loaded (RTLD_NODELETE) and are remembered by
 * name.  Callers are mpiboot.c (under mpirun) and transport/registry.c (a
 * PLUGIN row of coll_transports.def).
 */
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_paths.h"   /* COLL_PLUGIN_PATH: the install's plugin directory, the build directory */
#include "rt.h"

static const rt_host_api host_api = {
	.size = sizeof(rt_host_api),
	.comm_size = sizeof(coll_comm),
	.tp_size = sizeof(rt_transport),
	.err = rt_err,
	.env_long = rt_env_long,
	.now_ms = rt_now_ms,
	.strerror = coll_strerror,
	.now_ns = rt_now_ns,
	.boot_allgather = rt_boot_allgather,
	.boot_barrier = rt_boot_barrier,
	.spin_ns = rt_spin_ns,
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

/* Plugins loaded so far (a handful at most: one per plugin name). */
static struct {
	char name[32];
	const void *table;
	char path[PATH_MAX];
} loaded[8];

int rt_plugin_load(const char *name, int global, rt_plugin *out)
{
	out->table = NULL;
	out->path[0] = out->why[0] = 0;
	for (size_t i = 0; i < sizeof loaded / sizeof loaded[0] && loaded[i].table; i++)
		if (strcmp(loaded[i].name, name) == 0) {
			out->table = loaded[i].table;
			snprintf(out->path, sizeof out->path, "%s", loaded[i].path);
			return RT_PLUGIN_OK;
		}
	char file[64], env[64], sym[64];
	snprintf(file, sizeof file, "libcollrt_%s.so", name);
	snprintf(sym, sizeof sym, "coll_%s_plugin", name);
	int k = snprintf(env, sizeof env, "COLL_%s_PLUGIN", name);
	for (int i = 5; i < k && env[i] != '_'; i++)
		env[i] = (char)toupper((unsigned char)env[i]);

	enum { MAXTRY = 16 };
	char tries[MAXTRY][PATH_MAX], dir[PATH_MAX - 80];
	int nt = 0, why_there = 0;
	const char *e = getenv(env);
	int named = e && *e;   /* then that path alone */
	if (named)
		snprintf(tries[nt++], PATH_MAX, "%s", e);
	int have_dir = !named && self_dir(dir, sizeof dir) == 0;
	if (have_dir) {
		snprintf(tries[nt++], PATH_MAX, "%s/%s", dir, file);
		snprintf(tries[nt++], PATH_MAX, "%s/coll/%s", dir, file);
		snprintf(tries[nt++], PATH_MAX, "%s/../lib/coll/%s", dir, file);
	}
	for (const char *p = named ? "" : COLL_PLUGIN_PATH; *p && nt < MAXTRY - 1;) {
		size_t len = strcspn(p, ":");
		if (len > 0 && len < PATH_MAX - 80)
			snprintf(tries[nt++], PATH_MAX, "%.*s/%s", (int)len, p, file);
		p += len + (p[len] == ':');
	}
	if (!named)
		snprintf(tries[nt++], PATH_MAX, "%s", file);
	for (int i = 0; i < nt; i++) {
		/* RTLD_GLOBAL where the plugin's own dependencies need it (libmpi's
		 * components resolve against libmpi). */
		void *h = dlopen(tries[i], RTLD_NOW | RTLD_NODELETE | (global ? RTLD_GLOBAL : RTLD_LOCAL));
		if (!h) {
			/* The reason worth keeping: a file that is there but does not
			 * load (another MPI, libmpi missing), else the explicit path's;
			 * "not found" in places it never was says nothing. */
			const char *err = dlerror();
			int there = strchr(tries[i], '/') && access(tries[i], F_OK) == 0;
			if ((there && !why_there) || named) {
				snprintf(out->why, sizeof out->why, "%.200s", err ? err : tries[i]);
				why_there = there;
			}
			continue;
		}
		snprintf(out->path, sizeof out->path, "%.4000s", tries[i]);
		const void *(*entry)(const rt_host_api *) = (const void *(*)(const rt_host_api *))dlsym(h, sym);
		if (!entry || !(out->table = entry(&host_api))) {
			snprintf(out->why, sizeof out->why, "%.300s is not a libcollrt plugin of this version (%s%s)", tries[i],
			         entry ? "built against another layout of libcollrt's structures" : "no symbol ",
			         entry ? "" : sym);
			return RT_PLUGIN_BAD;
		}
		for (size_t j = 0; j < sizeof loaded / sizeof loaded[0]; j++)
			if (!loaded[j].table) {
				snprintf(loaded[j].name, sizeof loaded[j].name, "%s", name);
				snprintf(loaded[j].path, sizeof loaded[j].path, "%.4000s", tries[i]);
				loaded[j].table = out->table;
				break;
			}
		return RT_PLUGIN_OK;
	}
	if (!out->why[0] && !named)
		snprintf(out->why, sizeof out->why, "%s is not beside %.80s, in its coll/ or ../lib/coll/, in %.120s or "
		         "on the linker's path", file, have_dir ? dir : "libcollrt", COLL_PLUGIN_PATH);
	return RT_PLUGIN_MISSING;
}
