/*
 * cluster.c - check a `cluster` declaration into a cluster_desc (see
 * cluster.h): the front end's last pass, after which no syntax tree is
 * needed.
 *
 *   cluster lab4 {
 *     ranks 4;  transport shm;
 *     allreduce { rhd below 256KiB; ring; }
 *     reduce_scatter { ring_rs; }
 *     broadcast { binomial_bcast; }
 *   }
 *
 * Settings are validated here (ranks, transport from the targets table,
 * straggler, align, alpha, bw, links), each given at most once, their
 * strings limited to what the setting can hold (a generated library
 * carries some of them), the links file read and checked; every entry of
 * every collective block is evaluated and verified for the cluster's rank
 * count, so no library is ever built around a schedule that does not
 * implement its collective; thresholds must grow and only a block's last
 * entry may lack one.  Choosing by cost and the critical delays of `straggler auto` need
 * the cost model and are the back end's (codegen/choose.c).
 *
 * `straggler R;` / `straggler auto;` need an allreduce algorithm with a
 * straggler role: a rank absent from the precondition rounds (phase
 * "pre...") in which every other rank takes part, such as StragglAR's rank
 * n-1.  Under `straggler auto` a straggler algorithm listed without
 * `below` stays out of the size table (`aside`): `allreduce { ring;
 * stragglar; }` reads "ring, or stragglar when it pays".
 *
 * Rank reordering: `reorder by cost;` has collc build choose the rank
 * order (codegen/choose.c) under the cluster's link model, which must be
 * able to tell ranks apart (`links "lab8.tsv";` from collprobe, or
 * segments declared here); `reorder at init;` leaves it to the library
 * when it starts.  `reorder_algo NAME;` and `reorder_size "64MiB";` say
 * what to order for.  Shared segments are the links file's lines as
 * two-word settings, `group rack0 "0 3 5 6";`, `uplink rack0 "4Gbit/s";`,
 * `segment trunk "rack0 <-> rack1 10Gbit/s";`, and `rank_bw "400Mbit/s";`,
 * checked here with the link model's own parser.
 *
 * One algorithm may be listed more than once in a block with different
 * parameters (`bcube(B = 2) below 1MiB, bcube(B = 4)`); each instance is
 * then named in the library by its parameters (bcube_B2, bcube_B4).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "ast.h"
#include "cluster.h"
#include "linkmodel.h"
#include "policy.h"
#include "xalloc.h"

/* --- targets ----------------------------------------------------------------- */

/* The host transports of libcollrt (coll_transports.def), then `auto`,
 * then the GPU targets: allreduce on device buffers, their host plans on
 * `auto` (bootstrap and host buffers). */
static const cluster_target targets[] = {
#define COLL_TRANSPORT(name, where, rail, order, what) { #name, #name, false, false, rail, order },
#include "coll_transports.def"
#undef COLL_TRANSPORT
	{ "auto", "auto", false, false, false, -1 },   /* shm on one host, else tcp: see choose.c */
	{ "nccl", "auto", true, true, false, 0 },     /* NCCL send/recv per round, reduction kernels */
	{ "cuda", "auto", true, false, false, 0 },    /* CUDA IPC between the ranks of one node */
};
#define NTARGETS (int)(sizeof targets / sizeof targets[0])

const cluster_target *cluster_target_find(const char *name)
{
	for (int i = 0; i < NTARGETS; i++)
		if (strcmp(targets[i].name, name) == 0)
			return &targets[i];
	return NULL;
}

/* "shm, tcp, mpi, auto, nccl or cuda" */
static const char *target_list(void)
{
	static char buf[256];
	size_t at = 0;
	for (int i = 0; i < NTARGETS && at < sizeof buf; i++)
		at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s",
				       i == 0 ? "" : i == NTARGETS - 1 ? " or " : ", ", targets[i].name);
	return buf;
}

/* --- strings ------------------------------------------------------------------ */

/* What a setting's string may hold.  Control characters never: they would
 * break a message about the value, or a line of the generated library;
 * bytes past ASCII only in a path (`links`); a rail's network only what an
 * interface name, an IPv4 or IPv6 address or "device:port" is spelt with,
 * so it reaches libcollrt's rail list ("tcp:eth0,ibverbs:mlx5_0:1") and
 * the generated C as it was written. */
typedef enum { STR_TEXT, STR_PATH, STR_NETWORK } str_class;

/* The first byte of s that class c does not allow, or NULL. */
static const char *bad_byte(const char *s, str_class c)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool ok;
		if (c == STR_NETWORK)
			ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			     strchr("_.:-", *p);
		else
			ok = *p >= 0x20 && *p != 0x7f && (*p < 0x80 || c == STR_PATH);
		if (!ok)
			return (const char *)p;
	}
	return NULL;
}

/* "byte 0x0a" or "'\"'": a byte named so that the message stays one line. */
static const char *byte_name(const char *p, char *buf, size_t len)
{
	unsigned char b = (unsigned char)*p;
	if (b >= 0x21 && b < 0x7f)
		snprintf(buf, len, "'%c'", b);
	else
		snprintf(buf, len, "byte 0x%02x", b);
	return buf;
}

/* Check string value v of setting k against class c; error at v. */
static int check_string(const cluster_desc *d, const char *k, const ast *v, str_class c)
{
	const char *bad = bad_byte(v->str, c);
	if (!bad)
		return 0;
	char b[16];
	byte_name(bad, b, sizeof b);
	if (c == STR_PATH)
		diag_error(v->pos, "cluster '%s': '%s' takes a path without control characters; this one holds %s",
			   d->name, k, b);
	else
		diag_error(v->pos, "cluster '%s': '%s' takes printable ASCII text; this string holds %s (at byte %zu)",
			   d->name, k, b, (size_t)(bad - v->str) + 1);
	return -1;
}

/* "on line 3", or "at lab.coll:3" in another file: where an earlier
 * setting was. */
static const char *where_first(srcpos first, srcpos now, char *buf, size_t len)
{
	int line, col;
	diag_linecol(first, &line, &col);
	if (first.file == now.file)
		snprintf(buf, len, "on line %d", line);
	else
		snprintf(buf, len, "at %s:%d", first.file->name, line);
	return buf;
}

/* --- entries ----------------------------------------------------------------- */

/* The straggler role of s: the one rank absent from its precondition
 * rounds while every other rank takes part in them; -1 when none. */
static int straggler_role(const ir_sched *s)
{
	if (s->kind != IR_ALLREDUCE || s->n < 2)
		return -1;
	char *in = xcalloc((size_t)s->n, 1);
	int haspre = 0, role = -1, absent = 0;
	for (int k = 0; k < s->nrounds; k++) {
		const ir_round *rd = &s->rounds[k];
		if (strncmp(s->phases[rd->phase], "pre", 3) != 0)
			continue;
		haspre = 1;
		for (int i = rd->first; i < rd->first + rd->count; i++)
			in[s->xfers[i].src] = in[s->xfers[i].dst] = 1;
	}
	for (int r = 0; haspre && r < s->n; r++)
		if (!in[r])
			role = r, absent++;
	free(in);
	return absent == 1 ? role : -1;
}

static bool same_defs(const cluster_entry *a, const cluster_entry *b)
{
	if (a->ndefs != b->ndefs)
		return false;
	for (int i = 0; i < a->ndefs; i++) {
		bool found = false;
		for (int j = 0; j < b->ndefs && !found; j++)
			found = strcmp(a->defs[i].name, b->defs[j].name) == 0 && a->defs[i].value == b->defs[j].value;
		if (!found)
			return false;
	}
	return true;
}

/* algo_k1v1_k2v2: the name of one instance among several of an algorithm
 * (a C identifier: it names the tables of the generated library). */
static char *instance_label(const cluster_entry *e)
{
	size_t cap = strlen(e->algo) + 1;
	for (int i = 0; i < e->ndefs; i++)
		cap += strlen(e->defs[i].name) + 24;
	char *s = xmalloc(cap);
	size_t at = (size_t)snprintf(s, cap, "%s", e->algo);
	for (int i = 0; i < e->ndefs; i++)
		at += (size_t)snprintf(s + at, cap - at, "_%s%s%lld", e->defs[i].name, e->defs[i].value < 0 ? "m" : "",
				       e->defs[i].value < 0 ? -(long long)e->defs[i].value : (long long)e->defs[i].value);
	return s;
}

static void entry_free(cluster_entry *e)
{
	ir_free(e->s);
	free(e->algo);
	free(e->label);
	for (int i = 0; i < e->ndefs; i++)
		free((char *)e->defs[i].name);
	free(e->defs);
}

/* Check one `algo(k = v, ...) [below SIZE]` entry of block b and evaluate
 * it for the cluster's ranks; appended to d->entries. */
static int entry(drv_prog *p, cluster_desc *d, const cluster_block *b, const ast *coll, ast *e)
{
	if (e->b) {
		diag_error(e->b->pos, "cluster '%s': a string names a rail's network, in 'rails { %s \"eth0\"; ... }'; "
			   "%s entries are algorithms", d->name, e->str, coll->str);
		return -1;
	}
	int i = drv_find_algo(p, e->str);
	if (i < 0) {
		diag_suggest near = diag_suggest_start(e->str);
		for (int k = 0; k < drv_nalgos(p); k++)
			diag_suggest_add(&near, drv_algo_name(p, k));
		if (near.best)
			diag_error(e->pos, "cluster '%s': no algorithm named '%s' (did you mean '%s'?)", d->name, e->str,
				   near.best);
		else
			diag_error(e->pos, "cluster '%s': no algorithm named '%s'", d->name, e->str);
		return -1;
	}
	if (drv_algo_kind(p, i) != b->kind) {
		diag_error(e->pos, "cluster '%s': '%s' is %s algorithm, listed under %s", d->name, e->str,
			   drv_algo_kind(p, i) == IR_ALLREDUCE ? "an allreduce" : ir_kind_names[drv_algo_kind(p, i)],
			   coll->str);
		return -1;
	}
	cluster_entry x = { .algo = xstrdup(e->str), .pos = e->pos, .straggler_role = -1 };
	x.defs = xcalloc((size_t)e->list.n + 1, sizeof *x.defs);
	for (int j = 0; j < e->list.n; j++) {
		ast *bnd = e->list.v[j], *v = bnd->a;
		long long val;
		if (v->kind == A_INT)
			val = v->ival;
		else if (v->kind == A_UNOP && v->op == OP_NEG && v->a->kind == A_INT)
			val = -v->a->ival;
		else {
			diag_error(v->pos, "cluster parameters must be integer literals");
			entry_free(&x);
			return -1;
		}
		for (int q = 0; q < j; q++)
			if (strcmp(e->list.v[q]->str, bnd->str) == 0) {
				char w[256];
				diag_error(bnd->pos, "cluster '%s': '%s' is given parameter '%s' twice (first %s)", d->name,
					   e->str, bnd->str, where_first(e->list.v[q]->pos, bnd->pos, w, sizeof w));
				diag_note(e->list.v[q]->pos, "first here");
				entry_free(&x);
				return -1;
			}
		x.defs[x.ndefs++] = (drv_define){ xstrdup(bnd->str), val };
		/* a misspelt parameter would silently build the default (bcube(b = 4) built B = 2) */
		const char *names[64];
		int k = drv_algo_params(p, i, names, 64);
		bool known = false;
		for (int q = 0; q < k && !known; q++)
			known = strcmp(names[q], bnd->str) == 0;
		if (!known) {
			char have[256] = "";
			size_t at = 0;
			for (int q = 0; q < k && at < sizeof have; q++)
				at += (size_t)snprintf(have + at, sizeof have - at, "%s%s", q ? ", " : "", names[q]);
			diag_error(bnd->pos, "cluster '%s': '%s' has no parameter '%s' (%s%s)", d->name, e->str, bnd->str,
				   k ? "its parameters are " : "it has no parameters", have);
			entry_free(&x);
			return -1;
		}
	}
	if (e->a) {
		x.below = e->a->ival > 0 ? (uint64_t)e->a->ival : 0;
		x.below_pos = e->a->pos;
	}
	/* one algorithm twice in a block: fine with other parameters, each
	 * instance then named by them */
	for (int j = b->first; j < d->nentries; j++) {
		cluster_entry *o = &d->entries[j];
		if (strcmp(o->algo, x.algo) != 0)
			continue;
		if (same_defs(o, &x)) {
			diag_error(e->pos, "cluster '%s': '%s' is listed twice under %s", d->name, e->str, coll->str);
			entry_free(&x);
			return -1;
		}
		if (strcmp(o->label, o->algo) == 0) {
			free(o->label);
			o->label = instance_label(o);
		}
		x.label = instance_label(&x);
	}
	if (!x.label)
		x.label = xstrdup(x.algo);
	if (strlen(x.label) > CLUSTER_MAX_NAME) {   /* it names C symbols of the library */
		diag_error(e->pos, "cluster '%s': the library would name this algorithm '%.20s...' (%zu characters); "
			   "C symbols take at most %d", d->name, x.label, strlen(x.label), CLUSTER_MAX_NAME);
		entry_free(&x);
		return -1;
	}
	int before = diag_errors;
	x.s = drv_run(p, x.algo, d->ranks, x.defs, x.ndefs, true);
	if (!x.s) {
		if (diag_errors == before)
			diag_error(e->pos, "cluster '%s': '%s' failed for %d ranks", d->name, e->str, d->ranks);
		diag_note(e->pos, "included in cluster '%s' (%d ranks) here", d->name, d->ranks);
		entry_free(&x);
		return -1;
	}
	x.straggler_role = straggler_role(x.s);
	d->entries = xrealloc(d->entries, (size_t)(d->nentries + 1) * sizeof *d->entries);
	d->entries[d->nentries++] = x;
	return 0;
}

/* One `collective { entries } [choose by cost]` block. */
static int block(drv_prog *p, cluster_desc *d, ast *coll)
{
	int kind = ir_kind_from_name(coll->str);
	if (kind < 0) {
		diag_error(coll->pos, "unknown collective '%s' (expected %s)", coll->str, ir_kind_list());
		return -1;
	}
	for (int j = 0; j < d->nblocks; j++)
		if (d->blocks[j].kind == (ir_kind)kind) {
			diag_error(coll->pos, "cluster '%s': a second %s block", d->name, coll->str);
			return -1;
		}
	cluster_block b = { (ir_kind)kind, coll->pos, coll->ival != 0, coll->ival == 2, d->nentries, 0 };
	for (int j = 0; j < coll->list.n; j++)
		if (entry(p, d, &b, coll, coll->list.v[j]) < 0)
			return -1;
	b.count = d->nentries - b.first;
	d->blocks = xrealloc(d->blocks, (size_t)(d->nblocks + 1) * sizeof *d->blocks);
	d->blocks[d->nblocks++] = b;
	if (b.by_cost)   /* thresholds come from the cost model (codegen/choose.c) */
		return 0;
	/* the last entry of the table takes every larger size; a straggler
	 * algorithm without a threshold under `straggler auto` is no entry */
	int last = -1;
	for (int j = 0; j < b.count; j++) {
		cluster_entry *x = &d->entries[b.first + j];
		ast *e = coll->list.v[j];
		x->aside = d->straggler == CLUSTER_STRAGGLER_AUTO && !e->a && x->straggler_role >= 0;
		if (!x->aside)
			last = j;
	}
	uint64_t prev = 0;
	for (int j = 0; j < b.count; j++) {
		cluster_entry *x = &d->entries[b.first + j];
		ast *e = coll->list.v[j];
		if (x->aside)
			continue;
		if (!e->a && j != last) {
			diag_error(e->pos, "cluster '%s': '%s' has no 'below SIZE' but is not the last %s algorithm, "
				   "so the ones after it could never be chosen (or say 'choose by cost')",
				   d->name, e->str, coll->str);
			return -1;
		}
		uint64_t below = e->a ? (uint64_t)e->a->ival : 0;
		if (e->a && (e->a->ival <= 0 || below <= prev)) {
			diag_error(e->a->pos, "cluster '%s': thresholds must grow: 'below %llu' after 'below %llu'",
				   d->name, (unsigned long long)below, (unsigned long long)prev);
			return -1;
		}
		prev = below;
	}
	return 0;
}

/* --- rails -------------------------------------------------------------------- */

/* `rails { tcp "eth0"; tcp "eth1"; ibverbs "mlx5_0:1"; }`: the networks a
 * rank's messages use at once, as libcollrt's rail list. */
static int rails_block(cluster_desc *d, ast *blk)
{
	if (d->rails) {
		diag_error(blk->pos, "cluster '%s': a second rails block", d->name);
		return -1;
	}
	if (blk->ival) {
		diag_error(blk->pos, "cluster '%s': rails are not chosen by cost; every rail is used by the policy", d->name);
		return -1;
	}
	if (blk->list.n > COLL_MAX_RAILS) {
		diag_error(blk->list.v[COLL_MAX_RAILS]->pos, "cluster '%s': more than %d rails", d->name, COLL_MAX_RAILS);
		return -1;
	}
	char buf[COLL_MAX_RAILS * 80] = "";
	size_t at = 0;
	for (int j = 0; j < blk->list.n; j++) {
		ast *e = blk->list.v[j];
		const cluster_target *t = cluster_target_find(e->str);
		if (!t || !t->rail) {
			char names[128] = "";
			size_t k = 0;
			for (int i = 0; i < NTARGETS; i++)
				if (targets[i].rail)
					k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", k ? " or " : "", targets[i].name);
			diag_error(e->pos, "'%s' cannot be a rail (expected %s)", e->str, names);
			return -1;
		}
		if (e->list.n || e->a) {
			diag_error(e->pos, "a rail is a transport and a string naming its network, such as %s \"eth0\"",
				   e->str);
			return -1;
		}
		const char *where = e->b ? e->b->str : "";
		const char *bad = bad_byte(where, STR_NETWORK);
		if (strlen(where) > 63 || bad) {
			char b[16] = "";
			if (bad)
				byte_name(bad, b, sizeof b);
			diag_error(e->b->pos, "a rail's network is an interface, address or device: at most 63 letters, "
				   "digits, '_', '.', ':' or '-'; this one %s%s", bad ? "holds " : "is too long",
				   bad ? b : "");
			return -1;
		}
		/* the same network twice is one network, not two rails' worth */
		for (int i = 0; i < j; i++) {
			ast *o = blk->list.v[i];
			if (strcmp(o->str, e->str) == 0 && strcmp(o->b ? o->b->str : "", where) == 0) {
				char w[256];
				diag_error(e->pos, "cluster '%s': rail %s \"%s\" is listed twice (first %s)", d->name, e->str,
					   where, where_first(o->pos, e->pos, w, sizeof w));
				diag_note(o->pos, "first here");
				return -1;
			}
		}
		at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s%s%s", j ? "," : "", e->str, *where ? ":" : "", where);
	}
	if (blk->list.n == 0) {
		diag_error(blk->pos, "cluster '%s': rails { } lists no rail (such as tcp \"eth0\";)", d->name);
		return -1;
	}
	d->rails = xstrdup(buf);
	return 0;
}

/* --- settings ---------------------------------------------------------------- */

/* A shared-segment declaration (`group NAME "ranks"`, `uplink NAME "bw"`,
 * `segment NAME "from -> to bw"`, `rank_bw "bw"`): its text is a
 * links-file line (linkmodel.h), read into the cluster's own model of
 * its segments (d->segs) and checked against the ones before it. */
static int declaration(cluster_desc *d, ast *it)
{
	ast *v = it->a;
	const char *k = it->str;
	if (v->kind != A_STR) {
		diag_error(v->pos, "'%s' needs a string: %s", k,
			   strcmp(k, "group") == 0 ? "group rack0 \"0 3 5 6\";" :
			   strcmp(k, "uplink") == 0 ? "uplink rack0 \"4Gbit/s\";" :
			   strcmp(k, "segment") == 0 ? "segment trunk \"rack0 <-> rack1 10Gbit/s\";" : "rank_bw \"400Mbit/s\";");
		return -1;
	}
	char *line = xmalloc(strlen(v->str) + 160);
	if (it->b)
		sprintf(line, "%s %s %s", k, it->b->str, v->str);
	else
		sprintf(line, "rank-bw %s", v->str);
	link_error err;
	int had = d->segs.ngroups;
	int rc = link_declare(&d->segs, line, &err);
	free(line);
	if (rc <= 0) {
		diag_error(v->pos, "%s", rc < 0 ? err.msg : "not a declaration");
		return -1;
	}
	if (d->segs.ngroups > had) {
		d->group_pos = xrealloc(d->group_pos, (size_t)d->segs.ngroups * sizeof *d->group_pos);
		d->group_pos[had] = v->pos;
	}
	d->ndecls++;
	return 0;
}

static int setting(drv_prog *p, cluster_desc *d, ast *it)
{
	ast *v = it->a;
	const char *k = it->str;
	link_error err;
	if (v->kind == A_STR && check_string(d, k, v, strcmp(k, "links") == 0 ? STR_PATH : STR_TEXT) != 0)
		return -1;
	if (it->b) {
		/* two-word settings */
		if (strcmp(k, "reorder") == 0) {
			const char *w = it->b->str, *x = v->kind == A_NAME ? v->str : "";
			if (strcmp(w, "by") == 0 && strcmp(x, "cost") == 0)
				d->reorder = CLUSTER_REORDER_COST;
			else if (strcmp(w, "at") == 0 && strcmp(x, "init") == 0)
				d->reorder = CLUSTER_REORDER_INIT;
			else {
				diag_error(it->b->pos, "expected 'reorder by cost' or 'reorder at init'");
				return -1;
			}
			d->reorder_pos = it->pos;
			return 0;
		}
		if (strcmp(k, "group") == 0 || strcmp(k, "uplink") == 0 || strcmp(k, "segment") == 0)
			return declaration(d, it);
		diag_error(it->pos, "unknown cluster setting '%s %s' (the two-word settings are reorder by cost, "
			   "reorder at init, group, uplink and segment)", k, it->b->str);
		return -1;
	}
	if (strcmp(k, "ranks") == 0) {
		if (v->kind != A_INT || v->ival < 1 || v->ival > 65536) {
			diag_error(v->pos, "'ranks' needs an integer in 1..65536");
			return -1;
		}
		d->ranks = (int)v->ival;
	} else if (strcmp(k, "transport") == 0) {
		const cluster_target *t = cluster_target_find(v->kind == A_NAME || v->kind == A_STR ? v->str : "");
		if (!t) {
			diag_error(v->pos, "unknown transport '%s' (expected %s)",
				   v->kind == A_NAME || v->kind == A_STR ? v->str : "", target_list());
			return -1;
		}
		d->target = t;
	} else if (strcmp(k, "straggler") == 0) {
		/* the rank is checked against `ranks` once every setting is read */
		if (v->kind == A_NAME && strcmp(v->str, "auto") == 0) {
			d->straggler = CLUSTER_STRAGGLER_AUTO;
		} else if (v->kind == A_INT && v->ival >= 0 && v->ival < 65536) {
			d->straggler = (int)v->ival;
		} else {
			diag_error(v->pos, "'straggler' needs a rank (0..ranks-1) or 'auto'");
			return -1;
		}
		d->straggler_pos = v->pos;
	} else if (strcmp(k, "align") == 0) {
		/* device chunk padding: a power of two of at least 16 bytes so
		 * every chunk starts where a 16-byte vector load may */
		if (v->kind != A_INT || v->ival < 16 || v->ival > (1 << 24) || (v->ival & (v->ival - 1))) {
			diag_error(v->pos, "'align' needs a power of two from 16 to 16MiB, such as 1KiB");
			return -1;
		}
		d->align = (uint64_t)v->ival;
	} else if (strcmp(k, "alpha") == 0 || strcmp(k, "bw") == 0 || strcmp(k, "links") == 0) {
		if (v->kind != A_STR) {
			diag_error(v->pos, "'%s' needs a string such as %s", k,
				   k[0] == 'a' ? "\"3us\"" : k[0] == 'b' ? "\"450GB/s\"" : "\"lab8.links\"");
			return -1;
		}
		int rc = 0;
		if (k[0] == 'a')
			rc = link_parse_time(v->str, &d->alpha, &err);
		else if (k[0] == 'b')
			rc = link_parse_bw(v->str, &d->bw, &err);
		else {
			/* relative to the cluster file, like imports */
			const char *slash = strrchr(v->pos.file->name, '/');
			char buf[4096];
			if (v->str[0] == '/' || !slash)
				snprintf(buf, sizeof buf, "%s", v->str);
			else
				snprintf(buf, sizeof buf, "%.*s/%s", (int)(slash - v->pos.file->name), v->pos.file->name,
					 v->str);
			free(d->links);
			d->links = xstrdup(buf);
			d->links_pos = v->pos;
		}
		if (rc != 0) {
			diag_error(v->pos, "%s", err.msg);
			return -1;
		}
	} else if (strcmp(k, "policy") == 0) {
		ast *decl = drv_policy_ast(p, v->str);
		if (!decl) {
			diag_error(v->pos, "no policy named '%s' here or in what it imports (stdlib/policies.coll has nezha, "
				   "equal and single)", v->str);
			return -1;
		}
		/* checked into a copy: policy_check's name is the tree's, which
		 * the description must not hold (cluster_desc_free frees its own) */
		coll_rail_policy pol;
		if (policy_check(decl, &pol) != 0) {
			diag_note(v->pos, "the policy of cluster '%s'", d->name);
			return -1;
		}
		d->policy = pol;
		d->policy.name = xstrdup(decl->str);
		d->has_policy = true;
	} else if (strcmp(k, "reorder") == 0) {
		diag_error(v->pos, "expected 'reorder by cost' or 'reorder at init'");
		return -1;
	} else if (strcmp(k, "reorder_algo") == 0) {
		if (v->kind != A_NAME) {
			diag_error(v->pos, "'reorder_algo' needs the name of one of the cluster's algorithms");
			return -1;
		}
		free(d->reorder_algo);
		d->reorder_algo = xstrdup(v->str);
	} else if (strcmp(k, "reorder_size") == 0) {
		double b = 0;
		if (v->kind == A_INT && v->ival > 0)
			b = (double)v->ival;
		else if (v->kind != A_STR || link_parse_size(v->str, &b, &err) != 0) {
			diag_error(v->pos, "'reorder_size' needs a size such as \"64MiB\"%s%s", v->kind == A_STR ? ": " : "",
				   v->kind == A_STR ? err.msg : "");
			return -1;
		}
		d->reorder_size = (uint64_t)b;
	} else if (strcmp(k, "rank_bw") == 0) {
		return declaration(d, it);
	} else if (strcmp(k, "group") == 0 || strcmp(k, "uplink") == 0 || strcmp(k, "segment") == 0) {
		diag_error(v->pos, "'%s' needs a name and a string: %s", k,
			   strcmp(k, "group") == 0 ? "group rack0 \"0 3 5 6\";" :
			   strcmp(k, "uplink") == 0 ? "uplink rack0 \"4Gbit/s\";" : "segment trunk \"rack0 <-> rack1 10Gbit/s\";");
		return -1;
	} else {
		diag_error(it->pos, "unknown cluster setting '%s' (expected ranks, transport, straggler, align, alpha, bw, "
			   "links, reorder, reorder_algo, reorder_size, group, uplink, segment, rank_bw or policy)", k);
		return -1;
	}
	return 0;
}

/* The settings a cluster gives at most once: a second would silently
 * replace the first.  group, uplink and segment repeat under other names
 * (the link model's parser refuses a name given twice). */
static const char *const once[] = { "ranks", "transport", "straggler", "align", "alpha", "bw", "links",
				    "policy", "reorder", "reorder_algo", "reorder_size", "rank_bw" };
#define NONCE (int)(sizeof once / sizeof once[0])

/* Refuse item `it` when its setting came before (first[k] set); else
 * remember it. */
static int once_only(const cluster_desc *d, const ast *it, srcpos *first)
{
	for (int k = 0; k < NONCE; k++) {
		if (strcmp(it->str, once[k]) != 0)
			continue;
		if (first[k].file) {
			char w[256];
			diag_error(it->pos, "cluster '%s': '%s' is set twice (first %s); a cluster gives each setting once",
				   d->name, once[k], where_first(first[k], it->pos, w, sizeof w));
			diag_note(first[k], "first here");
			return -1;
		}
		first[k] = it->pos;
	}
	return 0;
}

/* The links file a cluster names is read when it is named, whether or not
 * this build needs it (`reorder at init` never does): a regular file (not
 * a device or a pipe, which could be endless or block) that parses as a
 * link matrix for the cluster's rank count.  Its errors point at its own
 * lines (FILE:LINE: error: ...). */
static int links_setting(cluster_desc *d)
{
	struct stat st;
	if (stat(d->links, &st) != 0) {
		diag_error(d->links_pos, "cluster '%s': cannot read links file '%s': %s", d->name, d->links,
			   strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		diag_error(d->links_pos, "cluster '%s': links file '%s' is not a regular file (a %s); give a link "
			   "matrix such as collprobe writes", d->name, d->links,
			   S_ISDIR(st.st_mode) ? "directory" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "device" :
			   S_ISFIFO(st.st_mode) ? "pipe" : S_ISSOCK(st.st_mode) ? "socket" : "special file");
		return -1;
	}
	link_model lm;
	link_error err;
	int rc = link_read_matrix(&lm, d->links, &err);
	if (rc == 0 && link_check_n(&lm, d->ranks, &err) != 0) {
		diag_error(d->links_pos, "cluster '%s': links file '%s': %s", d->name, d->links, err.msg);
		rc = -1;
	} else if (rc != 0 && err.loc_len > 0) {
		char loc[512];
		snprintf(loc, sizeof loc, "%.*s", err.loc_len, err.msg);
		diag_file_error(loc, "%s", link_error_text(&err));
		diag_errors++;
	} else if (rc != 0) {
		diag_error(d->links_pos, "cluster '%s': links file '%s': %s", d->name, d->links, err.msg);
	}
	link_free(&lm);
	return rc == 0 ? 0 : -1;
}

/* The reorder settings and the segments against the rank count and the
 * algorithms. */
static int reorder_settings(cluster_desc *d)
{
	const link_model *segs = &d->segs;
	for (int g = 0; g < segs->ngroups; g++)
		if (segs->groups[g].len > d->ranks) {
			diag_error(d->group_pos[g], "cluster '%s': group %s names rank %d, but the cluster has %d ranks",
				   d->name, segs->groups[g].name, segs->groups[g].len - 1, d->ranks);
			return -1;
		}
	if (d->reorder == CLUSTER_REORDER_COST && !d->links && segs->nsegs == 0) {
		diag_error(d->reorder_pos, "cluster '%s': 'reorder by cost' needs a network that tells ranks apart: "
			   "'links \"FILE\";' (from collprobe) or group/uplink/segment settings", d->name);
		return -1;
	}
	if (d->reorder_algo) {
		bool found = false;
		for (int i = 0; i < d->nentries && !found; i++)
			found = strcmp(d->entries[i].label, d->reorder_algo) == 0;
		if (!found) {
			diag_error(d->reorder_pos.file ? d->reorder_pos : d->pos,
				   "cluster '%s': reorder_algo '%s' is not one of the cluster's algorithms", d->name,
				   d->reorder_algo);
			return -1;
		}
	}
	return 0;
}

/* The `straggler` setting against the rank count and the algorithms. */
static int straggler_setting(cluster_desc *d)
{
	bool have = false, other = false;
	for (int i = 0; i < d->nentries; i++) {
		have |= d->entries[i].straggler_role >= 0;
		other |= d->entries[i].s->kind == IR_ALLREDUCE && d->entries[i].straggler_role < 0;
	}
	if (d->straggler >= d->ranks) {
		diag_error(d->straggler_pos, "cluster '%s': straggler %d is not a rank of %d ranks", d->name, d->straggler,
			   d->ranks);
		return -1;
	}
	if (!have) {
		diag_error(d->straggler_pos, "cluster '%s': 'straggler' needs an allreduce algorithm with a straggler "
			   "role (a precondition phase without one rank), such as stragglar", d->name);
		return -1;
	}
	if (d->straggler == CLUSTER_STRAGGLER_AUTO && !other) {
		diag_error(d->straggler_pos, "cluster '%s': 'straggler auto' needs another allreduce algorithm to use "
			   "while no straggler is detected", d->name);
		return -1;
	}
	return 0;
}

int cluster_check(drv_prog *p, const char *name, cluster_desc *d)
{
	memset(d, 0, sizeof *d);
	ast *decl = drv_cluster_ast(p, name);
	if (!decl) {
		if (name)
			diag_file_error(drv_main_file(p), "no cluster named '%s' here or in what it imports", name);
		else
			diag_file_error(drv_main_file(p), "declares no cluster (collc build needs one: see lang/README.md, "
					"\"Cluster declarations\")");
		diag_errors++;
		return -1;
	}
	d->name = xstrdup(decl->str);
	d->pos = decl->pos;
	if (strlen(d->name) > CLUSTER_MAX_NAME) {
		/* it names files (NAME_plans.c) and C symbols (NAME_plans) */
		diag_error(decl->pos, "cluster name is %zu characters long; generated files and C symbols take at most %d",
			   strlen(d->name), CLUSTER_MAX_NAME);
		cluster_desc_free(d);
		return -1;
	}
	if (strncasecmp(d->name, "coll", 4) == 0 && (d->name[4] == '\0' || d->name[4] == '_')) {
		/* NAME_init, NAME_gpu_plans, NAME_GPU_ALIGN would be libcollrt's own names */
		diag_error(decl->pos, "cluster name '%s' is in libcollrt's namespace (coll_, COLL_): the library's "
			   "symbols %s_init and %s_plans would collide with the runtime's", d->name, d->name, d->name);
		cluster_desc_free(d);
		return -1;
	}
	d->target = cluster_target_find("auto");
	d->align = 1024;
	d->alpha = 3e-6;
	d->bw = 450e9;
	d->straggler = CLUSTER_STRAGGLER_NONE;
	int rc = 0;
	srcpos first[NONCE] = { { 0 } };
	for (int i = 0; i < decl->list.n && rc == 0; i++)
		if (decl->list.v[i]->kind == A_CITEM)
			rc = once_only(d, decl->list.v[i], first) != 0 ? -1 : setting(p, d, decl->list.v[i]);
	for (int i = 0; i < decl->list.n && rc == 0; i++)
		if (decl->list.v[i]->kind == A_CCOLL && strcmp(decl->list.v[i]->str, "rails") == 0)
			rc = rails_block(d, decl->list.v[i]);
	if (rc == 0 && d->has_policy && !d->rails) {
		diag_error(decl->pos, "cluster '%s' has a policy but no rails for it (add e.g. 'rails { tcp \"eth0\"; "
			   "tcp \"eth1\"; }')", d->name);
		rc = -1;
	}
	if (rc == 0 && d->rails && (d->target->gpu || strcmp(d->target->name, "shm") == 0 ||
				    strcmp(d->target->name, "mpi") == 0)) {
		diag_error(decl->pos, "cluster '%s': rails carry a network transport's messages; transport %s has none",
			   d->name, d->target->name);
		rc = -1;
	}
	if (rc == 0 && d->ranks == 0) {
		diag_error(decl->pos, "cluster '%s' needs 'ranks N;'", d->name);
		rc = -1;
	}
	if (rc == 0 && d->links)
		rc = links_setting(d);
	for (int i = 0; i < decl->list.n && rc == 0; i++)
		if (decl->list.v[i]->kind == A_CCOLL && strcmp(decl->list.v[i]->str, "rails") != 0)
			rc = block(p, d, decl->list.v[i]);
	if (rc == 0 && d->nblocks == 0) {
		diag_error(decl->pos, "cluster '%s' includes no algorithms (add e.g. 'allreduce { ring; }')", d->name);
		rc = -1;
	}
	if (rc == 0 && d->straggler != CLUSTER_STRAGGLER_NONE)
		rc = straggler_setting(d);
	if (rc == 0)
		rc = reorder_settings(d);
	if (rc != 0) {
		cluster_desc_free(d);
		return -1;
	}
	return 0;
}

void cluster_desc_free(cluster_desc *d)
{
	for (int i = 0; i < d->nentries; i++)
		entry_free(&d->entries[i]);
	free(d->entries);
	free(d->blocks);
	free(d->name);
	free(d->links);
	free(d->rails);
	free((char *)d->policy.name);
	free(d->reorder_algo);
	link_free(&d->segs);
	free(d->group_pos);
	memset(d, 0, sizeof *d);
}
