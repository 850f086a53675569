/*
 * transport.c - the registry of transports.
 *
 * Each transport file exports exactly one rt_transport (a name, its size
 * and its ops, filled with designated initializers).  This file lists
 * them and refuses, at lookup, any whose vtable is incomplete or was built
 * against a different rt_transport layout.  The MPI transport lives in a
 * plugin (libcollrt_mpi.so, see mpiboot.c) and is reachable only on a
 * communicator that was bootstrapped through MPI.
 */
#include <string.h>

#include "rt.h"

const rt_transport *const rt_transports[] = {
	&shm_transport,
	&tcp_transport,
	NULL,
};

int rt_transport_complete(const rt_transport *t)
{
	return t->size == sizeof(rt_transport) && t->name && t->connect && t->post_send && t->post_recv &&
	       t->release && t->progress && t->abort && t->close;
}

const rt_transport *rt_transport_find(const coll_comm *c, const char *name)
{
	if (strcmp(name, "mpi") == 0) {
		const rt_transport *t = c && c->boot.mpi ? c->boot.mpi->transport : NULL;
		return t && rt_transport_complete(t) ? t : NULL;
	}
	for (int i = 0; rt_transports[i]; i++)
		if (strcmp(rt_transports[i]->name, name) == 0)
			return rt_transport_complete(rt_transports[i]) ? rt_transports[i] : NULL;
	return NULL;
}
