// gloo_allreduce.cc - the Gloo baseline of tests/bench/runtime.sh: times
// gloo::AllreduceRingChunked<float> (in place; Gloo has no out-of-place
// allreduce) over Gloo's TCP transport on loopback, for sizes MIN..MAX
// bytes (multiplied by FACTOR), and prints on rank 0 one CSV line per size
// in collbench --csv units: "bytes,time_us,algbw_GBs,busbw_GBs" (time is
// the slowest rank's average per call; busbw = algbw * 2(n-1)/n).
//
//   collrun -np N gloo_allreduce STOREDIR MIN MAX FACTOR [ITERS] [ITER_BYTES]
//
// Rank and size come from COLL_RANK / COLL_NRANKS (collrun sets them; it
// does not need libcollrt); ranks rendezvous through a FileStore in
// STOREDIR.
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

static double now()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: gloo_allreduce STOREDIR MIN MAX FACTOR [ITERS] [ITER_BYTES]\n");
		return 2;
	}
	const char *r = getenv("COLL_RANK"), *s = getenv("COLL_NRANKS");
	if (!r || !s) {
		fprintf(stderr, "gloo_allreduce: run under collrun (COLL_RANK, COLL_NRANKS)\n");
		return 2;
	}
	int rank = atoi(r), n = atoi(s);
	size_t lo = strtoull(argv[2], nullptr, 0), hi = strtoull(argv[3], nullptr, 0);
	double factor = atof(argv[4]);
	long maxit = argc > 5 ? atol(argv[5]) : 20;
	double iter_bytes = argc > 6 ? atof(argv[6]) : 1e30;

	gloo::transport::tcp::attr attr;
	attr.hostname = "127.0.0.1";
	auto dev = gloo::transport::tcp::CreateDevice(attr);
	gloo::rendezvous::FileStore store(argv[1]);
	gloo::rendezvous::PrefixStore prefix("bench", store);
	auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
	ctx->connectFullMesh(prefix, dev);

	std::vector<float> buf(hi / 4 + 1, 1.0f);
	std::vector<double> times(n);
	std::vector<double *> tptr{times.data()};
	gloo::AllreduceRing<double> gather(ctx, tptr, n);
	gloo::BarrierAllToAll barrier(ctx);
	if (rank == 0)
		printf("bytes,time_us,algbw_GBs,busbw_GBs\n");
	for (size_t b = lo; b <= hi; b = (size_t)((double)b * factor)) {
		int count = (int)(b / 4);
		std::vector<float *> ptrs{buf.data()};
		gloo::AllreduceRingChunked<float> algo(ctx, ptrs, count);
		long it = maxit;
		if ((double)it * (double)b > iter_bytes)
			it = (long)(iter_bytes / (double)b);
		if (it < 2)
			it = 2;
		long w = it / 5 + 1;
		for (long i = 0; i < w; i++)
			algo.run();
		barrier.run();
		double t0 = now();
		for (long i = 0; i < it; i++)
			algo.run();
		double t = (now() - t0) / (double)it;
		for (int k = 0; k < n; k++)
			times[k] = k == rank ? t : 0;
		gather.run();
		double tmax = 0;
		for (int k = 0; k < n; k++)
			tmax = times[k] > tmax ? times[k] : tmax;
		if (rank == 0) {
			double alg = (double)b / tmax / 1e9;
			printf("%zu,%.2f,%.4f,%.4f\n", b, tmax * 1e6, alg, alg * 2.0 * (n - 1) / n);
			fflush(stdout);
		}
		if (b == 0)
			break;
	}
	return 0;
}
