/*
 * registry.c - the registry of transports.
 *
 * Every transport lives beside it in runtime/transport/, one file or
 * folder each: shm.c, tcp.c, rails/ (one transport over several others)
 * in libcollrt; mpi/ and ibverbs/, the plugins libcollrt dlopens; gpu/,
 * the device executor that `collc build` compiles into GPU libraries.
 * Each transport file exports exactly one rt_transport (a name, its size
 * and its ops, filled with designated initializers).  This file lists
 * them, from the rows of coll_transports.def, and refuses, at lookup, any whose vtable is incomplete or was built
 * against a different rt_transport layout.  The MPI transport lives in a
 * plugin (libcollrt_mpi.so, see mpiboot.c) and is reachable only on a
 * communicator that was bootstrapped through MPI; other PLUGIN rows
 * (ibverbs) are loaded by name when asked for (plugin.c).  Also what transports
 * share about waiting: how long to spin before sleeping.
 */
#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"

/* The rows of coll_transports.def: a builtin's vtable is linked in; a
 * plugin's comes from the library that provides it, once loaded. */
#define RT_BUILTIN(name) &name##_transport
#define RT_PLUGIN(name) NULL
const rt_transport_entry rt_transports[] = {
#define COLL_TRANSPORT(name, where, rail, order, what) { #name, RT_##where(name), what, order },
#include "coll_transports.def"
#undef COLL_TRANSPORT
	{ NULL, NULL, NULL, 0 },
};

const char *rt_transport_names(void)
{
	static char buf[256];
	size_t at = 0;
	int n = 0;
	while (rt_transports[n].name)
		n++;
	for (int i = 0; i < n && at < sizeof buf; i++)
		at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", i == 0 ? "" : ", ", rt_transports[i].name);
	return buf;
}

int rt_transport_complete(const rt_transport *t)
{
	return t->size == sizeof(rt_transport) && t->name && t->connect && t->post_send && t->post_recv &&
	       t->release && t->progress && t->abort && t->close && !t->send_reserve == !t->send_commit;
}

static int cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		return CPU_COUNT(&set);
	long k = sysconf(_SC_NPROCESSORS_ONLN);
	return k > 0 ? (int)k : 1;
}

/* Ranks of c on this kernel (network namespaces share its CPUs). */
static int local_ranks(const coll_comm *c)
{
	int k = 0;
	for (int r = 0; r < c->n; r++)
		k += c->hosts && strcmp(c->hosts[r].boot_id, c->hosts[c->rank].boot_id) == 0;
	return k;
}

int rt_oversubscribed(const coll_comm *c)
{
	return local_ranks(c) > cpus();
}

/* With a core per local rank, waking from a sleep (an idle vCPU's
 * interrupt, a context switch: tens of microseconds on a virtual machine)
 * costs more than a short wait, so a waiter polls for 50 us first;
 * oversubscribed, polling would steal the core from the rank that has
 * work, so it does not (shm then yields instead, see shm.c). */
int64_t rt_spin_ns(const coll_comm *c, const char *env)
{
	return (int64_t)rt_env_long(env, rt_oversubscribed(c) ? 0 : 50) * 1000;
}

/* A rank that stops answering is usually dead (the transports see that)
 * or stopped: SIGSTOP, a debugger, a suspended terminal job.  A stopped
 * process still holds its sockets and its kernel still acknowledges TCP,
 * so from the wire it looks like a slow one; only its state in /proc tells.
 * That is readable for ranks on this kernel in our pid namespace. */
void rt_stopped_ranks(const coll_comm *c, char *buf, size_t len)
{
	if (!c->hosts)
		return;
	const rt_hostinfo *me = &c->hosts[c->rank];
	for (int r = 0; r < c->n; r++) {
		const rt_hostinfo *h = &c->hosts[r];
		if (r == c->rank || h->pid <= 0 || h->pidns != me->pidns || strcmp(h->boot_id, me->boot_id) != 0)
			continue;
		char path[64], stat[256];
		snprintf(path, sizeof path, "/proc/%d/stat", (int)h->pid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t k = fread(stat, 1, sizeof stat - 1, f);
		fclose(f);
		stat[k] = 0;
		const char *paren = strrchr(stat, ')');   /* "pid (comm) S ...": comm may hold spaces */
		char say[96];
		snprintf(say, sizeof say, "rank %d (pid %d, this host) is stopped", r, (int)h->pid);
		if (paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't') && !strstr(buf, say)) {
			size_t o = strlen(buf);   /* (a relayed abort may have said so already) */
			if (o + 1 < len)
				snprintf(buf + o, len - o, "; %s (SIGSTOP? a debugger?)", say);
		}
	}
}

/* A plugin transport: the vtable a loaded plugin provides.  mpi comes with
 * the MPI bootstrap (mpiboot.c loaded its plugin); any other PLUGIN row is
 * libcollrt_NAME.so, loaded here on first use, whose entry point returns
 * its rt_transport (plugin.c). */
static const rt_transport *plugin_transport(coll_comm *c, const char *name)
{
	if (strcmp(name, "mpi") == 0)
		return c && c->boot.mpi ? c->boot.mpi->transport : NULL;
	rt_plugin p;
	if (rt_plugin_load(name, 0, &p) == RT_PLUGIN_OK)
		return p.table;
	char up[32];
	size_t i = 0;
	for (; name[i] && i < sizeof up - 1; i++)
		up[i] = (char)toupper((unsigned char)name[i]);
	up[i] = 0;
	rt_err(c, COLL_ERR_TRANSPORT, "transport %s: plugin libcollrt_%s.so unusable: %s (build it with make, or point "
	       "COLL_%s_PLUGIN at it)", name, name, p.why, up);
	return NULL;
}

const rt_transport_entry *rt_transport_row(const char *name)
{
	for (int i = 0; rt_transports[i].name; i++)
		if (strcmp(rt_transports[i].name, name) == 0)
			return &rt_transports[i];
	return NULL;
}

int rt_transport_registered(const char *name) { return rt_transport_row(name) != NULL; }

const rt_transport *rt_transport_find(coll_comm *c, const char *name)
{
	for (int i = 0; rt_transports[i].name; i++) {
		if (strcmp(rt_transports[i].name, name) != 0)
			continue;
		const rt_transport *t = rt_transports[i].builtin ? rt_transports[i].builtin : plugin_transport(c, name);
		if (t && !(rt_transport_complete(t) && strcmp(t->name, name) == 0)) {
			rt_err(c, COLL_ERR_TRANSPORT, "transport %s: its vtable is incomplete or of another libcollrt", name);
			t = NULL;
		}
		return t;
	}
	return NULL;
}
