/*
 * comm.c - the communicator's life: coll_init and coll_finalize.
 *
 * coll_init resolves the configuration (arguments, then COLL_* environment,
 * then defaults), runs the TCP rendezvous (bootstrap.c), exchanges host
 * identities and plan fingerprints, picks and connects the transport
 * ("auto": shm when every rank shares this kernel and network namespace,
 * else mpi on an MPI-bootstrapped communicator, else tcp), and settles
 * the rank order (reorder.c, which may probe the network and run
 * collectives of its own).  Under mpirun (and no COLL_RANK) the
 * rendezvous goes through MPI instead (mpiboot.c).
 *
 * Pipeline position: the top of the runtime.  It calls down into
 * reorder.c, which calls probe.c, which calls the collective entry points
 * (collectives.c); nothing below calls back up into this file.  What
 * every file uses (rt_err, the environment readers, names of dtypes, ops
 * and collectives) is in base.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt.h"

/* --- initialisation -------------------------------------------------------- */

static void host_identity(rt_hostinfo *h)
{
	memset(h, 0, sizeof *h);
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (!fgets(h->boot_id, sizeof h->boot_id, f))
			h->boot_id[0] = 0;
		fclose(f);
	}
	if (!h->boot_id[0])
		gethostname(h->boot_id, sizeof h->boot_id - 1);
	struct stat st;
	if (stat("/proc/self/ns/net", &st) == 0)
		h->netns = (uint64_t)st.st_ino;
	if (stat("/proc/self/ns/pid", &st) == 0)
		h->pidns = (uint64_t)st.st_ino;
	h->pid = (int32_t)getpid();
}

static const char *pick(const char *arg, const char *env, const char *dflt)
{
	if (arg)
		return arg;
	const char *v = getenv(env);
	return v ? v : dflt;
}

/* MPI bootstrap: asked for (COLL_BOOTSTRAP=mpi, transport "mpi"), or an
 * MPI launch with no explicit rank (COLL_BOOTSTRAP=tcp opts out). */
static int want_mpi(const coll_config *cfg, const char *tname)
{
	const char *b = getenv("COLL_BOOTSTRAP");
	if (b && strcmp(b, "mpi") == 0)
		return 1;
	if (b && strcmp(b, "tcp") == 0)
		return 0;
	if (strcmp(tname, "mpi") == 0)
		return 1;
	return cfg->rank < 0 && !getenv("COLL_RANK") && rt_mpi_launched();
}

static coll_result finish_init(coll_comm *c);

static coll_result do_init(coll_comm *c, const coll_plan_set *plans, const coll_config *cfg, const void *mpi_comm)
{
	int rc;
	/* The transport: the config's, else COLL_TRANSPORT, else the plan
	 * set's (the cluster's), else auto. */
	const char *tname = pick(cfg->transport, "COLL_TRANSPORT", plans && plans->transport ? plans->transport : "auto");
	const char *secret = pick(cfg->secret, "COLL_SECRET", "");
	const char *auth = getenv("COLL_AUTH");
	if ((rc = rt_env_check(c)))
		return rc;
	/* COLL_POLICY's grammar is checked even on one network, where no rail
	 * reads it: a typo must not wait for the day rails are added */
	const char *pol_env = getenv("COLL_POLICY");
	if (pol_env && *pol_env) {
		coll_rail_policy scratch = COLL_RAIL_POLICY_DEFAULT;
		char why[200];
		if (rt_policy_parse(pol_env, &scratch, why, sizeof why))
			return rt_err(c, COLL_ERR_INVALID, "COLL_POLICY='%s': %s", pol_env, why);
	}
	int mpi = mpi_comm || want_mpi(cfg, tname);
	c->boot.mpi_comm = mpi_comm;
	if (mpi_comm && (cfg->rank >= 0 || cfg->nranks > 0))
		return rt_err(c, COLL_ERR_INVALID, "coll_init_mpi: rank and nranks come from the MPI communicator");
	c->rank = cfg->rank >= 0 ? cfg->rank : (int)rt_env_long("COLL_RANK", -1);
	c->n = cfg->nranks > 0 ? cfg->nranks : (int)rt_env_long("COLL_NRANKS", 0);
	if (!mpi_comm && mpi && (c->rank >= 0 || (cfg->nranks <= 0 && getenv("COLL_NRANKS"))) && strcmp(tname, "mpi") == 0)
		return rt_err(c, COLL_ERR_TRANSPORT, "transport mpi needs a launch by mpirun without COLL_RANK/COLL_NRANKS");
	if (cfg->nranks < 0 || cfg->nranks > RT_MAX_RANKS)
		return rt_err(c, COLL_ERR_INVALID, "nranks %d: expected 1 to %d (or 0: COLL_NRANKS)", cfg->nranks,
		              RT_MAX_RANKS);
	if (cfg->rank < -1 || cfg->rank >= RT_MAX_RANKS)
		return rt_err(c, COLL_ERR_INVALID, "rank %d: expected 0 to %d (or -1: COLL_RANK)", cfg->rank,
		              RT_MAX_RANKS - 1);
	double t = cfg->timeout_s != 0 ? cfg->timeout_s : rt_env_double("COLL_TIMEOUT", 10.0);
	if ((rc = rt_timeout_ms(c, t, &c->timeout_ms)))
		return rc;
	double bt = rt_env_double("COLL_BOOT_TIMEOUT", t > 0 ? (3 * t > 30 ? 3 * t : 30) : 3600);
	c->boot.deadline_ms = rt_now_ms() + (int64_t)(bt * 1000);
	c->mac = auth && strcmp(auth, "mac") == 0;
	if (mpi) {
		c->rank = 0, c->n = 1;   /* until MPI says */
		if ((rc = rt_mpi_boot(c, cfg->nranks, secret)))
			return rc;
	} else if (c->n <= 0 || c->rank < 0) {
		return rt_err(c, COLL_ERR_BOOTSTRAP, "bad rank %d / nranks %d (set COLL_RANK and COLL_NRANKS)", c->rank,
		              c->n);
	} else if (c->n > 1 && !*secret && rt_env_long("COLL_INSECURE", 0) != 1) {
		/* Without a secret, anyone who can reach a rank's ports could
		 * join the job or feed it data: refuse unless asked for. */
		return rt_err(c, COLL_ERR_AUTH, "COLL_SECRET is empty: every rank must share a secret (collrun sets a random "
		              "one); set COLL_INSECURE=1 to run without one");
	} else if (c->rank >= c->n) {
		/* Tell rank 0, so that every rank learns why the job cannot
		 * start instead of timing out; our own message is ours. */
		rt_boot_init(c, pick(cfg->addr, "COLL_ADDR", NULL), secret);
		return rt_err(c, COLL_ERR_BOOTSTRAP, "COLL_RANK=%d is outside 0..%d (COLL_NRANKS=%d)", c->rank, c->n - 1,
		              c->n);
	}
	c->plans = plans;
	if ((rc = rt_straggler_init(c)))
		return rc;
	if (plans && (rc = coll_plan_set_check(plans, c->err, sizeof c->err)))
		return rc;
	c->straggler = -1;
	if (plans && plans->straggler > 0 && plans->straggler <= c->n)
		c->straggler = plans->straggler - 1;
	c->auto_straggler = plans && plans->straggler == COLL_STRAGGLER_AUTO;

	/* Before the plan set's rank count is checked: a rank whose
	 * COLL_NRANKS differs from the others' is named to all of them at
	 * the rendezvous, not only to itself. */
	if (!mpi && (rc = rt_boot_init(c, pick(cfg->addr, "COLL_ADDR", NULL), secret)))
		return rc;
	if (plans && plans->nranks != c->n)
		return rt_err(c, COLL_ERR_NOALGO, "plan set '%s' is for %d ranks, job has %d", plans->name,
		              plans->nranks, c->n);

	/* Host identities (transport choice), plan fingerprints, settings
	 * every rank must share. */
	rt_hostinfo me;
	host_identity(&me);
	me.planhash = plans ? rt_planset_hash(plans) : 0;
	/* a tuning file this rank cannot use is said at the rendezvous, so
	 * that every rank fails at once instead of waiting for this one */
	char tune_why[sizeof c->err] = "";
	int tune_rc = rt_tuning_load(c, &me.tunehash);
	if (tune_rc) {
		snprintf(tune_why, sizeof tune_why, "%s", c->err);
		me.tunehash = RT_TUNE_BROKEN;
	}
	me.mac = (uint32_t)c->mac;
	me.reorder_env = rt_reorder_env_hash();   /* reorder.c checks they agree */
	c->hosts = calloc((size_t)c->n, sizeof *c->hosts);
	if (!c->hosts)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	if ((rc = rt_boot_allgather(c, &me, c->hosts, sizeof me)))
		return rc;
	int same_host = 1;
	for (int r = 0; r < c->n; r++) {
		if (c->hosts[r].planhash != me.planhash)
			return rt_err(c, COLL_ERR_PLAN, "rank %d has a different plan set than rank %d", r, c->rank);
		if (tune_rc)
			return rt_err(c, tune_rc, "%s", tune_why);
		if (c->hosts[r].tunehash == RT_TUNE_BROKEN)
			return rt_err(c, COLL_ERR_INVALID, "rank %d cannot use its COLL_TUNING file (its own message says why)",
			              r);
		if (c->hosts[r].tunehash != me.tunehash)   /* COLL_TUNING: every rank the same table, or none */
			return rt_err(c, COLL_ERR_INVALID, "rank %d runs %s tuning table but rank %d %s (COLL_TUNING)", r,
			              !c->hosts[r].tunehash ? "without a" : me.tunehash ? "with another" : "with a", c->rank,
			              !me.tunehash ? "without one" : "with this one");
		if (c->hosts[r].mac != me.mac)
			return rt_err(c, COLL_ERR_BOOTSTRAP, "rank %d runs with COLL_AUTH=%s but rank %d with COLL_AUTH=%s", r,
			              c->hosts[r].mac ? "mac" : "none", c->rank, me.mac ? "mac" : "none");
		if (strcmp(c->hosts[r].boot_id, me.boot_id) != 0 || c->hosts[r].netns != me.netns)
			same_host = 0;
	}

	/* Rails: the config's, else COLL_RAILS, else the plan set's (the
	 * cluster's); none means one network, the transport chosen below. */
	const char *rails = pick(cfg->rails, "COLL_RAILS", plans && plans->rails ? plans->rails : "");
	if (*rails) {
		static const coll_rail_policy dflt = COLL_RAIL_POLICY_DEFAULT;
		coll_rail_policy pol = cfg->policy ? *cfg->policy : plans && plans->policy ? *plans->policy : dflt;
		const char *ov = getenv("COLL_POLICY");
		char why[200];
		if (ov && rt_policy_parse(ov, &pol, why, sizeof why))
			return rt_err(c, COLL_ERR_INVALID, "COLL_POLICY='%s': %s", ov, why);
		if ((rc = rt_rails_connect(c, rails, &pol, &c->tp)))
			return rc;
		return finish_init(c);
	}

	if (strcmp(tname, "auto") == 0 || !*tname)
		tname = same_host ? "shm" : mpi ? "mpi" : "tcp";
	const rt_transport *tr = rt_transport_find(c, tname);
	if (!tr && strcmp(tname, "mpi") == 0)
		return rt_err(c, COLL_ERR_TRANSPORT, "transport mpi needs a launch by mpirun (and libcollrt_mpi.so)");
	if (!tr && rt_transport_registered(tname))
		return COLL_ERR_TRANSPORT;   /* a plugin that would not load: rt_transport_find said why */
	if (!tr)
		return rt_err(c, COLL_ERR_TRANSPORT, "unknown transport '%s' (expected %s or auto)", tname,
		              rt_transport_names());
	if (strcmp(tname, "shm") == 0 && !same_host)
		return rt_err(c, COLL_ERR_TRANSPORT, "transport shm needs every rank on one host and network namespace");
	if ((rc = tr->connect(c, &c->tp)))
		return rc;
	c->tp->round_order = rt_transport_row(tname)->round_order;
	return finish_init(c);
}

/* What follows the transport's connect: message size and executor
 * settings, some of which the transport suggests. */
static coll_result finish_init(coll_comm *c)
{
	rt_boot_unlisten(c);   /* every link is up: nobody else has a reason to connect */
	size_t seg = c->tp->max_msg - sizeof(rt_hdr);
	long cap = rt_env_long("COLL_SEG_BYTES", 0);
	if (cap >= 64 && (size_t)cap < seg)
		seg = (size_t)cap;
	c->seg_bytes = seg & ~(size_t)63;
	c->round_order = rt_env_long("COLL_ROUND_ORDER", c->tp->round_order) != 0;
	c->trace_rounds = rt_env_long("COLL_TRACE_ROUNDS", 0) != 0;
	c->reduce_send = rt_env_long("COLL_REDUCE_SEND", 1) != 0;
	long nt = rt_env_long("COLL_NT_BYTES", 16L << 20);
	c->nt_bytes = nt > 0 ? (uint64_t)nt : UINT64_MAX;
	int rc = rt_tuning_fit(c);
	if (rc)
		return rc;
	/* the rank order: `reorder at init` probes over the transport; then
	 * `choose by measure` times the algorithms in that order */
	if ((rc = rt_reorder_init(c)))
		return rc;
	return rt_tune_init(c);
}

static coll_result init(coll_comm **out, const coll_plan_set *plans, const coll_config *cfg, const void *mpi_comm)
{
	static const coll_config dflt = COLL_CONFIG_INIT;
	if (!out)
		return rt_err(NULL, COLL_ERR_INVALID, "coll_init: NULL comm pointer");
	*out = NULL;
	coll_comm *c = calloc(1, sizeof *c);
	if (!c)
		return rt_err(NULL, COLL_ERR_NOMEM, "out of memory");
	c->boot.listen_fd = -1;
	c->rank = -1;
	coll_result rc = do_init(c, plans, cfg ? cfg : &dflt, mpi_comm);
	if (rc) {
		if (c->rank >= 0)
			rt_err(NULL, rc, "rank %d: %s", c->rank, c->err);
		else   /* failed before it knew its rank (a bad COLL_* setting) */
			rt_err(NULL, rc, "%s", c->err);
		coll_finalize(c);
		return rc;
	}
	*out = c;
	return COLL_OK;
}

coll_result coll_init(coll_comm **out, const coll_plan_set *plans, const coll_config *cfg)
{
	return init(out, plans, cfg, NULL);
}

coll_result coll_init_env(coll_comm **out, const coll_plan_set *plans) { return coll_init(out, plans, NULL); }

coll_result coll_init_mpi(coll_comm **out, const coll_plan_set *plans, const coll_config *cfg, const void *mpi_comm)
{
	if (!mpi_comm) {
		if (out)
			*out = NULL;
		return rt_err(NULL, COLL_ERR_INVALID, "coll_init_mpi: NULL MPI communicator");
	}
	return init(out, plans, cfg, mpi_comm);
}

void coll_finalize(coll_comm *c)
{
	if (!c)
		return;
	if (c->tp)
		c->tp->ops->close(c->tp);
	rt_boot_close(c);
	rt_p2p_free(c);
	for (rt_prep *p = c->preps, *nx; p; p = nx) {
		nx = p->next;
		rt_prep_free(p);
	}
	rt_straggler_free(c);
	rt_tuning_free(c);
	free(c->perm);
	free(c->inv);
	free(c->hosts);
	free(c->scratch);
	free(c->stage);
	free(c);
}

