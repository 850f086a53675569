/*
 * emit_cuda.c - lower the allreduce schedules of a `transport nccl` or
 * `transport cuda` cluster to CUDA source for the device executor.
 *
 * Pipeline: lang/cluster.c, choose.c (verified schedules + size table) -> emit_c.c (host
 * plan tables, still used for bootstrap and host buffers) and this file ->
 * NAME_gpu.h + NAME_gpu.cu -> nvcc with runtime/transport/gpu/coll_gpu.cu ->
 * libNAME.so (cmd_build.c).
 *
 * Per algorithm and rank the schedule is unrolled into one function of
 * executor calls (the CG_* macros of runtime/transport/gpu/coll_gpu_plan.h, which
 * explains them).  Rounds are fused into groups globally, so every rank
 * runs the same groups and NCCL sees matching groups on both sides of
 * every transfer: round k joins the open group unless one of its sends
 * reads a (rank, chunk) that a transfer of the group wrote, the only way
 * fusing could change what is sent, because receives of a group are
 * applied after it, in schedule order.  A copy receive goes straight into
 * the buffer when its rank touches that chunk nowhere else in the group
 * (no send to overlap with, no other receive to order against); every other
 * receive takes a staging slot.  The output is meant to be read: each call
 * carries a comment with its round and what moves.  Strings and paths go
 * through emit_str.c, as in emit_c.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"

/* Per transfer: its group, and on the receiving rank a staging slot (-1:
 * received straight into the buffer). */
typedef struct {
	int *group_of_round;   /* nrounds */
	int *slot;             /* nxfers */
	int ngroups, maxslots;
} lowering;

static void lower(const ir_sched *s, lowering *lw)
{
	size_t cells = (size_t)s->n * (size_t)s->chunks;
	/* stamps instead of clearing per group: an entry is valid when it
	 * holds the current group's stamp */
	int *wstamp = calloc(cells, sizeof *wstamp), *tstamp = calloc(cells, sizeof *tstamp);
	int *touch = calloc(cells, sizeof *touch);
	int *sstamp = calloc(s->n, sizeof *sstamp), *nslot = calloc(s->n, sizeof *nslot);
	lw->group_of_round = calloc(s->nrounds > 0 ? s->nrounds : 1, sizeof *lw->group_of_round);
	lw->slot = calloc(s->nxfers > 0 ? s->nxfers : 1, sizeof *lw->slot);
	lw->ngroups = 0;
	lw->maxslots = 0;
	int g = -1;
	for (int k = 0; k < s->nrounds; k++) {
		const ir_round *rd = &s->rounds[k];
		bool fuse = g >= 0;
		for (int i = rd->first; fuse && i < rd->first + rd->count; i++) {
			const ir_xfer *x = &s->xfers[i];
			fuse = wstamp[(size_t)x->src * s->chunks + x->chunk] != g + 1;
		}
		if (!fuse)
			g++;
		lw->group_of_round[k] = g;
		for (int i = rd->first; i < rd->first + rd->count; i++) {
			const ir_xfer *x = &s->xfers[i];
			wstamp[(size_t)x->dst * s->chunks + x->chunk] = g + 1;
		}
	}
	lw->ngroups = g + 1;
	/* slots: per group, count the touches of every (rank, chunk) first */
	for (int k0 = 0; k0 < s->nrounds;) {
		int k1 = k0;
		while (k1 < s->nrounds && lw->group_of_round[k1] == lw->group_of_round[k0])
			k1++;
		int stamp = lw->group_of_round[k0] + 1;
		int first = s->rounds[k0].first, last = s->rounds[k1 - 1].first + s->rounds[k1 - 1].count;
		for (int i = first; i < last; i++) {
			const ir_xfer *x = &s->xfers[i];
			size_t a = (size_t)x->src * s->chunks + x->chunk, b = (size_t)x->dst * s->chunks + x->chunk;
			if (tstamp[a] != stamp)
				tstamp[a] = stamp, touch[a] = 0;
			if (tstamp[b] != stamp)
				tstamp[b] = stamp, touch[b] = 0;
			touch[a]++;
			touch[b]++;
		}
		for (int i = first; i < last; i++) {
			const ir_xfer *x = &s->xfers[i];
			if (x->op == IR_COPY && touch[(size_t)x->dst * s->chunks + x->chunk] == 1) {
				lw->slot[i] = -1;
				continue;
			}
			if (sstamp[x->dst] != stamp)
				sstamp[x->dst] = stamp, nslot[x->dst] = 0;
			lw->slot[i] = nslot[x->dst]++;
			if (nslot[x->dst] > lw->maxslots)
				lw->maxslots = nslot[x->dst];
		}
		k0 = k1;
	}
	free(wstamp);
	free(tstamp);
	free(touch);
	free(sstamp);
	free(nslot);
}

static void ident(char *buf, size_t len, const cluster_entry *a)
{
	snprintf(buf, len, "%s_%s", ir_kind_names[a->s->kind], a->label);
}

static void emit_rank(FILE *f, const ir_sched *s, const lowering *lw, const char *id, int r)
{
	fprintf(f, "static coll_result %s_rank%d(cg_run *x)\n{\n", id, r);
	if (s->nrounds == 0)
		fprintf(f, "\t(void)x;\n");
	for (int k0 = 0; k0 < s->nrounds;) {
		int g = lw->group_of_round[k0], k1 = k0;
		while (k1 < s->nrounds && lw->group_of_round[k1] == g)
			k1++;
		int first = s->rounds[k0].first, last = s->rounds[k1 - 1].first + s->rounds[k1 - 1].count;
		char call[96];
		if (k1 - k0 == 1)
			fprintf(f, "\t/* group %d: round %d */\n", g, k0);
		else
			fprintf(f, "\t/* group %d: rounds %d-%d */\n", g, k0, k1 - 1);
		fprintf(f, "\tCG_BEGIN(x, %d);\n", g);
		int k = k0;
		for (int i = first; i < last; i++) {
			while (i >= s->rounds[k].first + s->rounds[k].count)
				k++;
			const ir_xfer *t = &s->xfers[i];
			if (t->src == r) {
				snprintf(call, sizeof call, "CG_SEND(x, %d, %d);", t->dst, t->chunk);
				fprintf(f, "\t%-32s /* round %d: chunk %d -> rank %d */\n", call, k, t->chunk, t->dst);
			}
			if (t->dst == r && lw->slot[i] < 0) {
				snprintf(call, sizeof call, "CG_RECV_DIRECT(x, %d, %d);", t->src, t->chunk);
				fprintf(f, "\t%-32s /* round %d: chunk %d <- rank %d */\n", call, k, t->chunk, t->src);
			} else if (t->dst == r) {
				snprintf(call, sizeof call, "CG_RECV(x, %d, %d, %d);", t->src, t->chunk, lw->slot[i]);
				fprintf(f, "\t%-32s /* round %d: chunk %d <- rank %d into slot %d */\n", call, k, t->chunk,
					t->src, lw->slot[i]);
			}
		}
		fprintf(f, "\tCG_END(x);\n");
		k = k0;
		for (int i = first; i < last; i++) {
			while (i >= s->rounds[k].first + s->rounds[k].count)
				k++;
			const ir_xfer *t = &s->xfers[i];
			if (t->dst != r || lw->slot[i] < 0)
				continue;
			bool red = t->op == IR_REDUCE_OP;
			snprintf(call, sizeof call, "%s(x, %d, %d);", red ? "CG_REDUCE" : "CG_COPY", t->chunk, lw->slot[i]);
			fprintf(f, "\t%-32s /* round %d: chunk %d %s slot %d */\n", call, k, t->chunk,
				red ? "op=" : ":=", lw->slot[i]);
		}
		k0 = k1;
	}
	fprintf(f, "\treturn COLL_OK;\n}\n\n");
}

static void emit_algo(FILE *f, const cluster_entry *a)
{
	const ir_sched *s = a->s;
	char id[256];
	ident(id, sizeof id, a);
	lowering lw;
	lower(s, &lw);
	fprintf(f, "/*\n * %s \"%s\": %d chunks, %d rounds in %d transfer groups, %d staging slot%s;\n"
		" * verified for %d ranks.\n */\n", ir_kind_names[s->kind], a->label, s->chunks, s->nrounds, lw.ngroups,
		lw.maxslots, lw.maxslots == 1 ? "" : "s", s->n);
	for (int r = 0; r < s->n; r++)
		emit_rank(f, s, &lw, id, r);
	fprintf(f, "static cg_rank_fn *const %s_fns[] = {\n", id);
	for (int r = 0; r < s->n; r++)
		fprintf(f, "\t%s_rank%d,\n", id, r);
	char *q = emit_cstr(a->label);
	fprintf(f, "};\nstatic const cg_algo %s_gpu = { %s, COLL_ALLREDUCE, %d, %d, %d, %d, %d, %s_fns };\n\n", id,
		q, s->n, s->chunks, s->nrounds, lw.ngroups, lw.maxslots, id);
	free(q);
	free(lw.group_of_round);
	free(lw.slot);
}

static FILE *open_out(const char *dir, const char *name, const char *suffix, char *path, size_t len)
{
	snprintf(path, len, "%s/%s%s", dir, name, suffix);
	FILE *f = fopen(path, "w");
	if (!f) {
		diag_tool_error("cannot write '%s': %s", path, strerror(errno));
		diag_errors++;
	}
	return f;
}

int emit_cuda(const libplan *c, const char *dir, const char *source)
{
	char path[4096];
	if (emit_check_names(c, c->d->target->name) != 0)
		return -1;
	FILE *h = open_out(dir, c->d->name, "_gpu.h", path, sizeof path);
	if (!h)
		return -1;
	/* the source path as the command line gave it: any bytes */
	char *src = emit_comment(source);
	fprintf(h, "/*\n * %s_gpu.h - device buffers for cluster '%s' (%d ranks, transport %s).\n"
		" * Generated by `collc build %s`; do not edit, edit the cluster file.\n"
		" *\n * Link with -l%s; the API is coll_gpu.h (included) over the host\n"
		" * communicator of %s.h.\n */\n", c->d->name, c->d->name, c->d->ranks, c->d->target->name, src, c->d->name, c->d->name);
	fprintf(h, "#ifndef COLL_GEN_%s_GPU_H\n#define COLL_GEN_%s_GPU_H\n\n#include \"%s.h\"\n"
		"#include \"coll_gpu_plan.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", c->d->name, c->d->name, c->d->name);
	fprintf(h, "/* The allreduce schedules unrolled for the device, and their size table. */\n"
		"extern const coll_gpu_plans %s_gpu_plans;\n\n", c->d->name);
	fprintf(h, "/* coll_gpu_init with these plans: collective over comm (from %s_init);\n"
		" * device < 0 picks the rank modulo the device count. */\n"
		"coll_result %s_gpu_init(coll_gpu **g, coll_comm *comm, int device);\n\n", c->d->name, c->d->name);
	fprintf(h, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
	if (fclose(h) != 0) {
		free(src);
		return -1;
	}

	FILE *f = open_out(dir, c->d->name, "_gpu.cu", path, sizeof path);
	if (!f) {
		free(src);
		return -1;
	}
	fprintf(f, "/*\n * %s_gpu.cu - the allreduce schedules of cluster '%s' unrolled for the\n"
		" * device executor (runtime/transport/gpu/coll_gpu.cu, transport %s).\n"
		" * Generated by `collc build %s`; do not edit, edit the cluster file.\n"
		" *\n * Per algorithm and rank, one function: per transfer group (fused rounds)\n"
		" * CG_BEGIN, the sends and receives (one ncclGroupStart/End on nccl),\n"
		" * CG_END, then the received chunks applied in schedule order (reduction\n"
		" * kernels, copies).  Chunks are padded to %llu bytes (%s_GPU_ALIGN).\n"
		" * coll_gpu_plan.h explains the macros.\n */\n",
		c->d->name, c->d->name, c->d->target->name, src, (unsigned long long)c->d->align, c->d->name);
	free(src);
	fprintf(f, "#include \"%s_gpu.h\"\n\n#define %s_GPU_ALIGN %lluu   /* the cluster's `align` */\n\n", c->d->name,
		c->d->name, (unsigned long long)c->d->align);
	int ngpu = 0;
	for (int i = 0; i < c->nalgos; i++) {
		if (c->algos[i].s->kind == IR_ALLREDUCE) {
			emit_algo(f, &c->algos[i]);
			ngpu++;
		} else
			fprintf(f, "/* %s \"%s\": host buffers only (coll.h); the device executor runs allreduce */\n\n",
				ir_kind_names[c->algos[i].s->kind], c->algos[i].label);
	}
	int nch = 0;
	for (int i = 0; i < c->nchoices; i++)
		nch += c->choices[i].kind == IR_ALLREDUCE;
	if (ngpu) {
		fprintf(f, "static const cg_algo *const %s_gpu_algos[] = {\n", c->d->name);
		for (int i = 0; i < c->nalgos; i++) {
			char id[256];
			ident(id, sizeof id, &c->algos[i]);
			if (c->algos[i].s->kind == IR_ALLREDUCE)
				fprintf(f, "\t&%s_gpu,\n", id);
		}
		fprintf(f, "};\n\n");
	}
	if (nch) {
		fprintf(f, "/* Size -> algorithm, the allreduce rows of the cluster's table. */\n"
			"static const coll_choice %s_gpu_choices[] = {\n", c->d->name);
		for (int i = 0; i < c->nchoices; i++) {
			const lib_choice *ch = &c->choices[i];
			if (ch->kind != IR_ALLREDUCE)
				continue;
			char *q = emit_cstr(c->algos[ch->algo].label);
			if (ch->max_bytes == UINT64_MAX)
				fprintf(f, "\t{ COLL_ALLREDUCE, COLL_BYTES_MAX, %s },\n", q);
			else
				fprintf(f, "\t{ COLL_ALLREDUCE, %lluu, %s },\n", (unsigned long long)ch->max_bytes, q);
			free(q);
		}
		fprintf(f, "};\n\n");
	}
	char *qn = emit_cstr(c->d->name), *qt = emit_cstr(c->d->target->name);
	fprintf(f, "const coll_gpu_plans %s_gpu_plans = {\n\tCOLL_GPU_PLAN_ABI, %s, %d, %s, %s_GPU_ALIGN,\n",
		c->d->name, qn, c->d->ranks, qt, c->d->name);
	free(qn);
	free(qt);
	if (ngpu)
		fprintf(f, "\t%s_gpu_algos, %d,\n", c->d->name, ngpu);
	else
		fprintf(f, "\tNULL, 0,\n");
	if (nch)
		fprintf(f, "\t%s_gpu_choices, %d,\n};\n\n", c->d->name, nch);
	else
		fprintf(f, "\tNULL, 0,\n};\n\n");
	fprintf(f, "coll_result %s_gpu_init(coll_gpu **g, coll_comm *comm, int device)\n{\n"
		"\treturn coll_gpu_init(g, comm, &%s_gpu_plans, device);\n}\n", c->d->name, c->d->name);
	return fclose(f) == 0 ? 0 : -1;
}
