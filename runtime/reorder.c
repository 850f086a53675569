/*
 * reorder.c - the communicator's rank order: which physical rank plays
 * each schedule rank (coll_rank_order), settled at the end of coll_init.
 *
 * Pipeline position: the runtime's end of rank reordering.  The compiler
 * bakes an order into a plan set (`reorder by cost`, coll_plan_set.perm);
 * this file applies it, or one from the environment, or chooses one when
 * the communicator starts (`reorder at init`, COLL_REORDER=probe): probe
 * the network (probe.c), hand the target algorithm's plan and what the
 * probe measured to the model floor (runtime/model/: the cost model and
 * search `collc reorder` uses too, one model, not two) as typed values,
 * agree on the result and cache it.  comm.c and exec.c then use c->perm / c->inv where roles
 * meet physical ranks.
 *
 * Where the order comes from, first match wins:
 *   COLL_PERM=3,1,0,2 (or @FILE)   that order
 *   COLL_REORDER=off               the identity, whatever the plan set says
 *   COLL_REORDER=probe             reorder at init (below), cache allowed
 *   COLL_REORDER=reprobe           reorder at init, the cache ignored and rewritten
 *   the plan set's `reorder at init`, else its perm, else the identity.
 * These settings must be the same on every rank (collrun and mpirun pass
 * one environment; ranks compare a hash of them, COLL_ERR_MISMATCH).
 *
 * Reorder at init: rank 0 looks for a cached order for this host list (a
 * file named by a hash of every rank's host identity, network namespace
 * and address, in rank order, with the plan set, algorithm and size) and
 * broadcasts what it found; on a miss every rank probes, rank 0 searches
 * and broadcasts the order, then writes the cache.  One rank decides, so
 * every rank agrees.  The search gets a quarter of collc's budget in
 * moves (COLL_REORDER_EFFORT, 0.25): at n = 16 collc's full budget takes
 * rhd and dbt 1.2-3 s, which after a 2.2 s probe breaks the 3 s start the
 * emulated cluster is held to, or is cut by the time limit, and a cut
 * search's order depends on the machine; a quarter found the same orders
 * on the bench's networks (runtime/model/README.md, "At init: reorder at init").  Its time is
 * capped too: at COLL_REORDER_TIME (default 1 s), and at what the probe
 * left of COLL_REORDER_BUDGET (default 2.9 s, the whole start less what
 * broadcasting and caching the order take), though never under
 * REORDER_MIN_SEARCH: on a slow machine, or a slow day of a shared one,
 * the quarter took 0.8 s for dbt after a 2.25 s probe (3.07 s in all).
 * A cut search may find a worse order (rhd on one 16-host network: 7%
 * when cut at 0.45-0.55 s of its 0.69, the same order from 0.6 s on),
 * but a start pays that once per host list, the next one reading the
 * cache, where every start that runs over holds up every rank.
 *
 * The target: COLL_REORDER_ALGO, else the plan set's reorder_algo, else
 * the allreduce the size table picks at COLL_REORDER_BYTES (else the plan
 * set's reorder_bytes, else 64 MiB).  The probe: COLL_PROBE_PINGS (10)
 * ping-pongs, COLL_PROBE_BYTES (256 KiB) exchanges, one each, to stay
 * within a few seconds.  COLL_REORDER_CACHE is the cache directory
 * ("off": none; default $XDG_CACHE_HOME/coll, else ~/.cache/coll).
 * COLL_REORDER_VERBOSE=1 makes rank 0 report what it did on stderr.
 *
 * Out of memory in the model or the search comes back as an error (the
 * model floor allocates with malloc and returns every failure), here
 * COLL_ERR_NOMEM.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt.h"
#include "cost.h"
#include "linkmodel.h"
#include "reorder.h"

#define REORDER_MIN_SEARCH 0.2   /* seconds the search gets however late the probe ends */

/* --- a plan and a probe as the model's input -------------------------------------- */

/* A coll_algo as the cost model's plan: one transfer per receive step
 * (its op from the receive), handed to the model floor's builder round
 * by round as the neutral transfer list (coll_xfer) lower.c lowers.
 * Phases are not in plans, so there are no precondition rounds (no
 * straggler is costed here), and the port model is the widest (n - 1):
 * the search uses the rounds model, which a schedule within its own ports
 * costs the same either way.  NULL with err set. */
static cost_plan *plan_of_algo(const coll_algo *a, link_error *err)
{
	int n = a->nranks, R = 0;
	size_t nx = 0;
	for (int r = 0; r < n; r++)
		for (int i = 0; i < a->ranks[r].nsteps; i++) {
			const coll_step *st = &a->ranks[r].steps[i];
			if (st->kind != COLL_STEP_SEND)
				nx++;
			if (st->round + 1 > R)
				R = st->round + 1;
		}
	/* a stable counting sort of the receives by round */
	coll_xfer *x = malloc(sizeof *x * (nx + 1));
	size_t *fill = calloc((size_t)R + 2, sizeof *fill);
	cost_plan *p = NULL;
	if (!x || !fill) {
		link_errorf(err, "out of memory");
		goto out;
	}
	for (int r = 0; r < n; r++)
		for (int i = 0; i < a->ranks[r].nsteps; i++)
			if (a->ranks[r].steps[i].kind != COLL_STEP_SEND)
				fill[a->ranks[r].steps[i].round + 1]++;
	for (int k = 0; k < R; k++)
		fill[k + 1] += fill[k];
	for (int r = 0; r < n; r++)
		for (int i = 0; i < a->ranks[r].nsteps; i++) {
			const coll_step *st = &a->ranks[r].steps[i];
			if (st->kind != COLL_STEP_SEND)
				x[fill[st->round]++] = (coll_xfer){ .round = st->round, .src = st->peer, .dst = r,
								    .chunk = st->chunk,
								    .reduce = st->kind == COLL_STEP_RECV_REDUCE };
		}
	cost_shape sh = { .name = a->name, .kind = a->kind, .n = n, .chunks = a->chunks,
			  .ports_send = n > 1 ? n - 1 : 1, .ports_recv = n > 1 ? n - 1 : 1, .nrounds = R,
			  .nxfers = nx };
	if (!(p = cost_plan_new(&sh, err)) || cost_plan_add(p, x, nx, err) || cost_plan_done(p, err)) {
		cost_plan_free(p);
		p = NULL;
	}
out:
	free(x);
	free(fill);
	return p;
}

/* A reading to the 6 significant digits a links file shows it with (see
 * model_from_probe). */
/* the exchanges per pair rt_probe runs (at least RT_PROBE_SHM_REPS over shm) */
static int shm_reps(const coll_comm *c, int reps)
{
	return reps < RT_PROBE_SHM_REPS && strcmp(coll_transport_name(c), "shm") == 0 ? RT_PROBE_SHM_REPS : reps;
}

static double digits6(double v)
{
	char b[32];
	snprintf(b, sizeof b, "%.6g", v);
	return strtod(b, NULL);
}

/* What the probe measured, as a link model built by typed calls: every
 * pair's latency and bandwidth, the rank bandwidth, and per group of
 * ranks found its uplink.  The rank and uplink bandwidths are kept to 6
 * significant digits, as the links file coll_probe writes shows them
 * (their noise is at the percent level), so that `collc reorder` on
 * that file costs exactly what reorder at init did. */
static int model_from_probe(const rt_probe_result *p, link_model *lm, link_error *err)
{
	int n = p->n;
	if (link_matrix(lm, n, 0, 1, err))
		return -1;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j)
				link_set(lm, i, j, p->alpha[i * n + j], p->bw[i * n + j] > 0 ? p->bw[i * n + j] : 1);
	if (p->rank_bw > 0 && link_set_rank_bw(lm, digits6(p->rank_bw), err))
		return -1;
	int *ranks = malloc(sizeof *ranks * ((size_t)n + 1));
	if (!ranks)
		return link_errorf(err, "out of memory");
	int rc = 0;
	for (int g = 0; g < p->ngroups && !rc; g++) {
		int k = 0;
		for (int r = 0; r < n; r++)
			if (p->group[r] == g)
				ranks[k++] = r;
		char name[32];
		snprintf(name, sizeof name, "group%d", g);
		rc = link_add_group(lm, name, ranks, k, err) < 0;
	}
	for (int g = 0; g < p->ngroups && !rc; g++)
		if (p->uplink[g] > 0)
			rc = link_add_uplink(lm, g, digits6(p->uplink[g]), err) < 0;
	free(ranks);
	if (rc)
		return -1;
	free(lm->source);
	lm->source = strdup("probed");
	return 0;
}

coll_result coll_probe(coll_comm *c, const coll_probe_config *cfg, char **links)
{
	if (links)
		*links = NULL;
	if (!c)
		return COLL_ERR_INVALID;
	if (c->broken)
		return rt_err(c, COLL_ERR_ABORTED, "communicator failed earlier");
	rt_probe_result pr;
	int64_t t0 = rt_now_ns();
	int rc = rt_probe(c, cfg, &pr);
	/* over shm every rank is on one host: what it shares limits the
	 * collectives more than any pair (linkmodel.h, "One host") */
	link_host host = { 0 };
	int64_t th = rt_now_ns();
	if (rc == COLL_OK && strcmp(coll_transport_name(c), "shm") == 0 && c->n > 1)
		rc = rt_probe_host(c, &host.mem_bw, &host.reduce_bw, &host.cores);
	double t_host = (double)(rt_now_ns() - th) * 1e-9;
	if (rc || c->rank != 0 || !links)
		goto out;
	if (c->n == 1) {
		pr.n = 1;   /* nothing to measure: a one-rank matrix */
		pr.alpha = calloc(1, sizeof *pr.alpha);
		pr.bw = calloc(1, sizeof *pr.bw);
		pr.group = calloc(1, sizeof *pr.group);
		if (!pr.alpha || !pr.bw || !pr.group) {
			rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
			goto out;
		}
	}
	link_model lm;
	link_error err;
	if (model_from_probe(&pr, &lm, &err) ||
	    link_set_host(&lm, &(link_host){ digits6(host.mem_bw), digits6(host.reduce_bw), host.cores }, &err)) {
		link_free(&lm);
		rc = rt_err(c, COLL_ERR_NOMEM, "%s", err.msg);
		goto out;
	}
	/* One host: a message over shm is the copies the host lines charge
	 * (linkmodel.h, "One host").  The exchanges timed those copies
	 * time-shared and contended, so as pair bandwidths they charged the
	 * same bytes twice, and at n = 4 on 2 cores (4-5 GB/s a pair) bound
	 * ring's six rounds before the host did; a pair keeps its latency and
	 * gets the host's memory bandwidth, which no copy exceeds, and no
	 * rank bandwidth. */
	if (link_has_host(&lm)) {
		for (int i = 0; i < c->n; i++)
			for (int j = 0; j < c->n; j++)
				if (i != j)
					link_set(&lm, i, j, link_alpha(&lm, i, j), lm.host.mem_bw);
		link_set_rank_bw(&lm, 0, NULL);
	}
	static const coll_probe_config dflt = COLL_PROBE_CONFIG_INIT;
	const coll_probe_config *k = cfg ? cfg : &dflt;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		link_free(&lm);
		rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
		goto out;
	}
	fprintf(f, "# probed by coll_probe: %d ranks over transport %s in %.2f s (ping-pongs %.2f s, exchanges %.2f s, "
		"uplinks %.2f s)\n", c->n, coll_transport_name(c), (double)(rt_now_ns() - t0) * 1e-9, pr.t_ping, pr.t_pair,
		pr.t_uplink);
	fprintf(f, "# latency: half the 10th percentile of %d round trips; bandwidth: %zu-byte exchanges,\n"
		"# %d per pair, in %d matchings; %s; %d group%s found\n",
		k->pings > 0 ? k->pings : dflt.pings, k->bytes >= 1024 ? k->bytes : dflt.bytes,
		shm_reps(c, k->reps > 0 ? k->reps : dflt.reps), c->n + (c->n & 1) - 1,
		k->directions ? "each direction as measured" : "symmetric (a pair's cost: the larger direction's)",
		pr.ngroups, pr.ngroups == 1 ? "" : "s");
	if (pr.ngroups > 0) {
		fprintf(f, "# uplinks as read (B/s; within %.0f%% of their median, given the median):",
			100 * RT_PROBE_SAME_UPLINK);
		for (int g = 0; g < pr.ngroups; g++)
			fprintf(f, " group%d %.6g", g, pr.uplink_read[g]);
		fprintf(f, "\n");
	}
	if (link_has_host(&lm))
		fprintf(f, "# host (shm): mem-bw: %d ranks memcpy %u MiB at once, %d times; reduce-bw: one core's fp32 "
			"sum; cores: sched_getaffinity; measured in %.2f s\n", c->n < host.cores ? c->n : host.cores,
			RT_PROBE_HOST_BYTES >> 20, RT_PROBE_HOST_REPS, t_host);
	if (link_has_host(&lm))
		fprintf(f, "# host (shm): a pair's bandwidth is mem-bw (the host lines charge the copies; the "
			"exchanges measured %.3g B/s for the slowest rank, time-shared)\n", pr.rank_bw);
	link_write_matrix(f, &lm, c->n);
	link_free(&lm);
	if (fclose(f) != 0 || !text) {
		free(text);
		rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
		goto out;
	}
	*links = text;
out:
	rt_probe_free(&pr);
	return rc;
}

/* --- the order ------------------------------------------------------------------ */

static int set_order(coll_comm *c, const int32_t *perm, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int set_order(coll_comm *c, const int32_t *perm, const char *fmt, ...)
{
	int n = c->n;
	free(c->perm);
	free(c->inv);
	c->perm = c->inv = NULL;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->order_src, sizeof c->order_src, fmt, ap);
	va_end(ap);
	bool ident = true;
	for (int i = 0; perm && i < n; i++)
		ident &= perm[i] == i;
	if (!perm || ident)
		return COLL_OK;   /* the identity: nothing to map */
	c->perm = malloc(sizeof *c->perm * (size_t)n);
	c->inv = malloc(sizeof *c->inv * (size_t)n);
	if (!c->perm || !c->inv)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		c->perm[i] = perm[i];
		c->inv[perm[i]] = i;
	}
	return COLL_OK;
}

/* The algorithm to order for, or NULL. */
static const coll_algo *target_algo(const coll_comm *c, uint64_t *bytes)
{
	const coll_plan_set *s = c->plans;
	if (!s)
		return NULL;
	uint64_t b = (uint64_t)rt_env_double("COLL_REORDER_BYTES", s->reorder_bytes ? (double)s->reorder_bytes : 64.0 * 1048576);
	*bytes = b ? b : 64 << 20;
	const char *name = getenv("COLL_REORDER_ALGO");
	if (!name || !*name)
		name = s->reorder_algo;
	if (!name)
		name = coll_choose_algo(c, COLL_ALLREDUCE, *bytes);
	for (int i = 0; i < s->nalgos; i++)
		if (s->algos[i]->nranks == c->n && (!name || strcmp(s->algos[i]->name, name) == 0) &&
		    (name || s->algos[i]->kind == COLL_ALLREDUCE))
			return s->algos[i];
	for (int i = 0; !name && i < s->nalgos; i++)
		if (s->algos[i]->nranks == c->n)
			return s->algos[i];
	return NULL;
}

int rt_cache_dir(const char *var, char *dir, size_t len, char *why, size_t wlen)
{
	const char *d = getenv(var);
	if (d && strcmp(d, "off") == 0)
		return 1;
	if (d && *d) {
		snprintf(dir, len, "%s", d);
	} else {
		const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
		if (xdg && *xdg)
			snprintf(dir, len, "%s/coll", xdg);
		else if (home && *home)
			snprintf(dir, len, "%s/.cache/coll", home);
		else
			snprintf(dir, len, "/tmp/coll-cache-%d", (int)getuid());
	}
	/* make the directory (and its parent: ~/.cache may not exist yet) */
	char parent[1024];
	snprintf(parent, sizeof parent, "%s", dir);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = 0;
		mkdir(parent, 0700);
	}
	struct stat st;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(why, wlen, "cannot make the cache directory %s: %s", dir, strerror(errno));
		return -1;
	}
	/* EEXIST says a name exists, not that it is a directory (/dev/null) */
	int bad = stat(dir, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
	if (bad) {
		snprintf(why, wlen, "the cache directory %s: %s", dir, strerror(bad));
		return -1;
	}
	return 0;
}

uint64_t rt_hostlist_hash(const coll_comm *c)
{
	/* every rank's host, network namespace and address, in rank order */
	static const uint8_t key[16] = "coll-reorder-key";
	uint64_t h = rt_siphash(key, &c->n, sizeof c->n);
	for (int r = 0; r < c->n; r++) {
		const rt_hostinfo *hi = &c->hosts[r];
		h = h * 31 + rt_siphash(key, hi->boot_id, strnlen(hi->boot_id, sizeof hi->boot_id));
		h = h * 31 + hi->netns;
		if (c->boot.addrs) {
			char ip[INET6_ADDRSTRLEN] = "";
			const struct sockaddr_storage *ss = &c->boot.addrs[r];
			if (ss->ss_family == AF_INET)
				inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, ip, sizeof ip);
			else if (ss->ss_family == AF_INET6)
				inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, ip, sizeof ip);
			h = h * 31 + rt_siphash(key, ip, strlen(ip));
		}
	}
	return h;
}

/* The cache file for this host list, plan set and target: 0; 1 with no
 * cache (COLL_REORDER_CACHE=off); -1 when the directory cannot be made
 * or is not a directory, with why (the directory and strerror). */
static int cache_path(const coll_comm *c, const coll_algo *a, uint64_t bytes, char *path, size_t len, char *why,
		      size_t wlen)
{
	char dir[1024];
	int rc = rt_cache_dir("COLL_REORDER_CACHE", dir, sizeof dir, why, wlen);
	if (rc)
		return rc;
	static const uint8_t key[16] = "coll-reorder-key";
	uint64_t h = rt_hostlist_hash(c);
	h = h * 31 + rt_planset_hash(c->plans);
	h = h * 31 + rt_siphash(key, a->name, strlen(a->name)) + bytes;
	snprintf(path, len, "%s/order-%016llx.txt", dir, (unsigned long long)h);
	return 0;
}

static int read_cache(const char *path, int n, int32_t *perm)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[1 << 16];
	int rc = -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "perm ", 5) == 0) {
			int32_t *v;
			int k;
			link_error err;
			if (reorder_parse_perm(line + 5, n, &v, &k, &err) == 0) {
				memcpy(perm, v, sizeof *perm * (size_t)n);
				free(v);
				rc = 0;
			}
			break;
		}
	fclose(f);
	return rc;
}

/* Write the cache file (through a temporary file renamed over it, so a
 * reader never sees half of one): 0, or -1 with why (the file and
 * strerror), nothing left behind. */
static int write_cache(const coll_comm *c, const char *path, const coll_algo *a, uint64_t bytes, const int32_t *perm,
		       double t_id, double t_best, char *why, size_t wlen)
{
	char tmp[1100];
	snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f) {
		snprintf(why, wlen, "cannot write the cache %s: %s", tmp, strerror(errno));
		return -1;
	}
	fprintf(f, "# coll rank order for plan set %s, %s at %llu bytes, %d ranks (keyed by the host list)\n",
		c->plans->name, a->name, (unsigned long long)bytes, c->n);
	fprintf(f, "# predicted %.6g s in the identity order, %.6g s in this one\nperm", t_id, t_best);
	for (int i = 0; i < c->n; i++)
		fprintf(f, " %d", perm[i]);
	fprintf(f, "\n");
	if (ferror(f) | (fclose(f) != 0)) {
		snprintf(why, wlen, "cannot write the cache %s: %s", tmp, strerror(errno ? errno : EIO));
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) != 0) {
		snprintf(why, wlen, "cannot write the cache %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Rank 0: search the probe for a's best order. */
static int choose(coll_comm *c, const coll_algo *a, uint64_t bytes, const rt_probe_result *pr, double spent,
		  int32_t *perm, double *t_id, double *t_best, bool *cut)
{
	link_model lm;
	link_error err;
	memset(&lm, 0, sizeof lm);
	cost_plan *p = NULL;
	reorder_result res;
	memset(&res, 0, sizeof res);
	int rc = COLL_OK;
	if (model_from_probe(pr, &lm, &err) || !(p = plan_of_algo(a, &err))) {
		rc = rt_err(c, COLL_ERR_NOMEM, "reorder at init: out of memory");
		goto out;
	}
	/* the search's limit: COLL_REORDER_TIME, or what the probe left of
	 * COLL_REORDER_BUDGET if less, but never under REORDER_MIN_SEARCH */
	double limit = rt_env_double("COLL_REORDER_TIME", 1.0), left = rt_env_double("COLL_REORDER_BUDGET", 2.9) - spent;
	if (left < REORDER_MIN_SEARCH)
		left = REORDER_MIN_SEARCH;
	if (left < limit)
		limit = left;
	reorder_opts o = { .bytes = (double)bytes, .seed = 1, .time_limit = limit,
			   .effort = rt_env_double("COLL_REORDER_EFFORT", 0.25),
			   .exact_max = 8 };
	if (reorder_search(p, &lm, &o, &res, &err)) {
		rc = rt_err(c, strstr(err.msg, "memory") ? COLL_ERR_NOMEM : COLL_ERR_INVALID, "reorder at init: %s",
			    err.msg);
		goto out;
	}
	memcpy(perm, res.perm, sizeof *perm * (size_t)c->n);
	*t_id = res.t_identity;
	*t_best = res.t_best;
	*cut = res.stopped;
out:
	reorder_result_free(&res);
	cost_plan_free(p);
	link_free(&lm);
	return rc;
}

/* Reorder at init (see the top of the file). */
static int at_init(coll_comm *c, bool reprobe)
{
	int n = c->n;
	uint64_t bytes = 0;
	const coll_algo *a = target_algo(c, &bytes);
	const char *want = getenv("COLL_REORDER_ALGO");
	if (!a && want && *want && c->plans) {
		/* asked for by name: an algorithm that is not there is an error,
		 * the same on every rank (the plan sets agree) */
		char names[400] = "";
		size_t at = 0;
		for (int i = 0; i < c->plans->nalgos && at < sizeof names; i++) {
			int seen = 0;
			for (int j = 0; j < i && !seen; j++)
				seen = c->plans->algos[j]->nranks == n &&
				       strcmp(c->plans->algos[j]->name, c->plans->algos[i]->name) == 0;
			if (c->plans->algos[i]->nranks == n && !seen)
				at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", at ? ", " : "",
				                       c->plans->algos[i]->name);
		}
		return rt_err(c, COLL_ERR_INVALID, "COLL_REORDER_ALGO=%s: the plan set has no such algorithm for %d ranks "
		              "(it has %s)", want, n, *names ? names : "none");
	}
	if (!a)
		return set_order(c, NULL, "identity (reorder at init: no algorithm for %d ranks to order for)", n);
	bool verbose = rt_env_long("COLL_REORDER_VERBOSE", 0) != 0 && c->rank == 0;
	int64_t t0 = rt_now_ns();
	/* rank 0 decides: [0] 1 when an order follows from the cache */
	int32_t *msg = calloc((size_t)n + 1, sizeof *msg);
	if (!msg)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	char path[1100] = "", why[1300] = "";
	int have_path = 0;
	if (c->rank == 0) {
		int cp = cache_path(c, a, bytes, path, sizeof path, why, sizeof why);
		have_path = cp == 0;
		/* a cache that cannot be used: said, and the start goes on without it */
		if (cp < 0 && verbose)
			fprintf(stderr, "coll: reorder at init: %s; going on without the cache\n", why);
		if (have_path && !reprobe && read_cache(path, n, msg + 1) == 0)
			msg[0] = 1;
	}
	int rc = rt_probe_bcast(c, msg, sizeof *msg * ((size_t)n + 1));
	if (rc == COLL_OK && msg[0]) {
		if (verbose)
			fprintf(stderr, "coll: reorder at init: %s for %s from the cache %s (%.3f s)\n", c->plans->name,
				a->name, path, (double)(rt_now_ns() - t0) * 1e-9);
		rc = set_order(c, msg + 1, "cache %s", c->rank == 0 ? path : "(rank 0's)");
		free(msg);
		return rc;
	}
	/* a miss: probe, rank 0 searches and tells everyone */
	coll_probe_config cfg = COLL_PROBE_CONFIG_INIT;
	cfg.pings = (int)rt_env_long("COLL_PROBE_PINGS", 10);
	cfg.bytes = (size_t)rt_env_long("COLL_PROBE_BYTES", 256 << 10);
	cfg.reps = 1;
	rt_probe_result pr;
	memset(&pr, 0, sizeof pr);
	double t_id = 0, t_best = 0, t_probe = 0;
	bool cut = false;
	if (rc == COLL_OK)
		rc = rt_probe(c, &cfg, &pr);
	t_probe = (double)(rt_now_ns() - t0) * 1e-9;
	double t_steps[3] = { pr.t_ping, pr.t_pair, pr.t_uplink };   /* pr is freed before the report */
	if (rc == COLL_OK && c->rank == 0) {
		rc = choose(c, a, bytes, &pr, t_probe, msg + 1, &t_id, &t_best, &cut);
		msg[0] = rc == COLL_OK;
	}
	rt_probe_free(&pr);
	/* even a failed search is broadcast (msg[0] = 0), so nobody waits */
	int brc = rc == COLL_OK || c->rank == 0 ? rt_probe_bcast(c, msg, sizeof *msg * ((size_t)n + 1)) : rc;
	if (rc == COLL_OK)
		rc = brc;
	if (rc == COLL_OK && !msg[0])
		rc = rt_err(c, COLL_ERR_ABORTED, "reorder at init: rank 0 could not choose an order");
	if (rc == COLL_OK) {
		/* the order's source says "cached in" only for a cache written */
		bool cached = false;
		if (c->rank == 0 && have_path) {
			cached = write_cache(c, path, a, bytes, msg + 1, t_id, t_best, why, sizeof why) == 0;
			if (!cached && verbose)
				fprintf(stderr, "coll: reorder at init: %s; going on without the cache\n", why);
		}
		rc = set_order(c, msg + 1, "probed at init%s%s", cached ? ", cached in " : why[0] ? "; not cached: " : "",
			       cached ? path : why[0] ? why : "");
		if (verbose) {
			fprintf(stderr, "coll: reorder at init: %s for %s at %llu bytes: probed in %.3f s (ping-pongs %.3f s, "
				"exchanges %.3f s, uplinks %.3f s), chose in %.3f s%s; predicted %.4g s -> %.4g s; order",
				c->plans->name, a->name, (unsigned long long)bytes, t_probe, t_steps[0], t_steps[1], t_steps[2],
				(double)(rt_now_ns() - t0) * 1e-9 - t_probe,
				cut ? " (the search cut short by its time limit)" : "", t_id, t_best);
			for (int i = 0; i < n; i++)
				fprintf(stderr, " %d", msg[1 + i]);
			fprintf(stderr, "\n");
		}
	}
	free(msg);
	return rc;
}

uint64_t rt_reorder_env_hash(void)
{
	static const uint8_t key[16] = "coll-reorder-env";
	/* and tuning at init's, which decide which collectives it runs */
	const char *names[] = { "COLL_PERM", "COLL_REORDER", "COLL_REORDER_ALGO", "COLL_REORDER_BYTES",
	                        "COLL_TUNE", "COLL_TUNE_MAX_BYTES", "COLL_TUNE_TIME" };
	uint64_t h = 0;
	for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
		const char *v = getenv(names[i]);
		h = h * 31 + (v ? rt_siphash(key, v, strlen(v)) + 1 : 0);
	}
	return h;
}

int rt_reorder_init(coll_comm *c)
{
	int n = c->n;
	const coll_plan_set *s = c->plans;
	const char *perm_env = getenv("COLL_PERM"), *mode = getenv("COLL_REORDER");
	/* the settings must agree: they decide which collective steps follow
	 * (the hashes came with the host identities, so every rank sees the
	 * same and all refuse together) */
	for (int r = 0; c->hosts && r < n; r++)
		if (c->hosts[r].reorder_env != c->hosts[c->rank].reorder_env)
			return rt_err(c, COLL_ERR_MISMATCH, "rank %d has other COLL_PERM / COLL_REORDER* / COLL_TUNE* settings than rank %d",
				      r, c->rank);
	bool any = (perm_env && *perm_env) || (mode && *mode) || (s && (s->perm || s->reorder));
	if (!any)
		return set_order(c, NULL, "identity");
	/* without plans (a communicator for point-to-point messages, as the
	 * torch backend's second one) no schedule is run, so there is nothing
	 * to order for and nothing worth probing */
	if (!s && !(perm_env && *perm_env))
		return set_order(c, NULL, "identity (no plan set)");
	int rc;
	if (perm_env && *perm_env) {
		int32_t *perm;
		int k;
		link_error err;
		char buf[1 << 16];
		const char *text = perm_env;
		if (perm_env[0] == '@') {
			FILE *f = fopen(perm_env + 1, "r");
			size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
			if (!f)
				return rt_err(c, COLL_ERR_INVALID, "COLL_PERM=%s: cannot open: %s", perm_env, strerror(errno));
			fclose(f);
			buf[got] = 0;
			/* a file may hold a "perm ..." line among comments (the cache's format) */
			char *p = strstr(buf, "perm ");
			text = p ? p + 5 : buf;
		}
		if (reorder_parse_perm(text, n, &perm, &k, &err))
			return rt_err(c, COLL_ERR_INVALID, "COLL_PERM: %s", err.msg);
		rc = set_order(c, perm, "COLL_PERM");
		free(perm);
		return rc;
	}
	if (mode && strcmp(mode, "off") == 0)
		return set_order(c, NULL, "identity (COLL_REORDER=off)");
	if (mode && *mode && strcmp(mode, "probe") && strcmp(mode, "reprobe"))
		return rt_err(c, COLL_ERR_INVALID, "COLL_REORDER=%s: expected off, probe or reprobe", mode);
	if ((mode && *mode) || (s && s->reorder == COLL_REORDER_INIT))
		return at_init(c, mode && strcmp(mode, "reprobe") == 0);
	if (s && s->perm)
		return set_order(c, s->perm, "plan set");
	return set_order(c, NULL, "identity");
}
