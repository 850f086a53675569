/*
 * ib_devices.c - which RDMA devices and ports this machine has, for
 * tests/ibverbs.test: it runs the device tests (collbench over ibverbs)
 * only where this finds an active port, and prints this program's reason
 * as the skip reason otherwise.
 *
 * Output: one line per port, "DEVICE:PORT STATE LINK_LAYER"; exit 0 when
 * one is active.  Otherwise one line of why not and exit 1.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	int num = 0, active = 0;
	errno = 0;
	struct ibv_device **list = ibv_get_device_list(&num);
	if (!list || num == 0) {
		int e = errno;
		printf("no RDMA device: ibv_get_device_list found none%s%s%s\n", e ? " (" : "", e ? strerror(e) : "",
		       e ? ")" : "");
		if (list)
			ibv_free_device_list(list);
		return 1;
	}
	for (int i = 0; i < num; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct ibv_context *ctx = ibv_open_device(list[i]);
		struct ibv_device_attr da;
		if (!ctx || ibv_query_device(ctx, &da)) {
			printf("%s: cannot open: %s\n", name, strerror(errno));
			if (ctx)
				ibv_close_device(ctx);
			continue;
		}
		for (int port = 1; port <= da.phys_port_cnt; port++) {
			struct ibv_port_attr pa;
			if (ibv_query_port(ctx, (uint8_t)port, &pa))
				continue;
			printf("%s:%d %s %s\n", name, port, ibv_port_state_str(pa.state),
			       pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
			active += pa.state == IBV_PORT_ACTIVE;
		}
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	if (!active)
		printf("no active port on %d RDMA device%s\n", num, num == 1 ? "" : "s");
	return active ? 0 : 1;
}
