/*
 * export.c - JSON, table and Graphviz exports of the schedule IR (see
 * export.h).
 *
 * Pipeline position: back end, after verification.  These writers only
 * read the ir_sched; they still skip out-of-range ranks instead of trusting
 * them, so that `collc export` of an unverified schedule cannot crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "xalloc.h"

static const char *phase_name(const ir_sched *s, const ir_round *rd)
{
	return rd->phase >= 0 && rd->phase < s->nphases ? s->phases[rd->phase] : "main";
}

/* --- JSON ----------------------------------------------------------------- */

static void json_str(FILE *out, const char *str)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)(str ? str : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p == '\t')
			fputs("\\t", out);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

/* Append a string literal; sizeof makes the copy a few moves. */
#define put_lit(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) + sizeof(s) - 1)

/* Any int, for values outside the table below. */
static char *put_int(char *p, int32_t v)
{
	char tmp[12];
	int k = 12;
	uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
	do {
		tmp[--k] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*p++ = '-';
	memcpy(p, tmp + k, (size_t)(12 - k));
	return p + (12 - k);
}

/* The decimal text of 0 .. NUMS_MAX-1 (at most 5 digits), padded to 8
 * bytes so that one 8-byte move copies it: the JSON writer prints three
 * ranks or chunks per transfer (millions at n = 1024), and a lookup is a
 * fraction of the cost of converting. */
#define NUMS_MAX 65536
typedef struct { char d[7]; uint8_t len; } num_text;

static num_text *nums_new(int count)
{
	num_text *t = xmalloc((size_t)(count > 0 ? count : 1) * sizeof *t);
	for (int v = 0; v < count; v++) {
		memset(t[v].d, 0, sizeof t[v].d);
		t[v].len = (uint8_t)(put_int(t[v].d, v) - t[v].d);
	}
	return t;
}

/* v from the table when it is there.  Writes up to 8 bytes at p. */
static inline __attribute__((always_inline)) char *put_num(char *p, int32_t v, const num_text *t, uint32_t count)
{
	if ((uint32_t)v < count) {
		memcpy(p, t[v].d, 8);
		return p + t[v].len;
	}
	return put_int(p, v);
}

/* The JSON string literal of str, malloc'd, into *len. */
static char *json_quote(const char *str, size_t *len)
{
	char *buf = NULL;
	FILE *m = open_memstream(&buf, len);
	if (!m) {
		fputs("collc: out of memory\n", stderr);
		abort();
	}
	json_str(m, str);
	fclose(m);
	return buf;
}

/* Size of the JSON writer's buffer; it is written out when fewer than
 * JSON_SLACK bytes are left (one transfer's text is under 100). */
#define JSON_BUF (1 << 16)
#define JSON_SLACK 128

void export_json(FILE *out, const ir_sched *s)
{
	const char *kind = (int)s->kind >= 0 && s->kind < IR_NKINDS ? ir_kind_names[s->kind] : "unknown";
	fputs("{\"collective\": ", out);
	json_str(out, kind);
	fputs(", \"algorithm\": ", out);
	json_str(out, s->algo);
	fprintf(out, ", \"n\": %d, \"chunks\": %d, \"root\": %d, \"ports\": {\"send\": %d, \"recv\": %d}, \"rounds\": [",
		s->n, s->chunks, s->root, s->ports_send, s->ports_recv);

	/* The rounds are the bulk (7 MB at n = 256, millions of transfers at
	 * n = 1024): formatted by hand into one buffer, written when full. */
	int count = s->n > s->chunks ? s->n : s->chunks;
	if (count > NUMS_MAX)
		count = NUMS_MAX;
	if (count < 0)
		count = 0;
	num_text *nums = nums_new(count);
	/* each phase's quoted name once, not once per round */
	int nq = s->nphases + 1;
	char **quoted = xmalloc((size_t)nq * sizeof *quoted);
	size_t *qlen = xmalloc((size_t)nq * sizeof *qlen);
	for (int i = 0; i < nq; i++)
		quoted[i] = json_quote(i < s->nphases ? s->phases[i] : "main", &qlen[i]);
	char buf[JSON_BUF];
	char *p = buf;
	for (int r = 0; r < s->nrounds; r++) {
		const ir_round *rd = &s->rounds[r];
		int ph = rd->phase >= 0 && rd->phase < s->nphases ? rd->phase : s->nphases;
		if (p - buf > (long)(sizeof buf - JSON_SLACK - qlen[ph])) {
			fwrite(buf, 1, (size_t)(p - buf), out);
			p = buf;
		}
		if (qlen[ph] > sizeof buf - JSON_SLACK) {   /* a phase name longer than the buffer */
			fputs(r ? ",\n  {\"phase\": " : "\n  {\"phase\": ", out);
			fwrite(quoted[ph], 1, qlen[ph], out);
		} else {
			if (r)
				*p++ = ',';
			p = put_lit(p, "\n  {\"phase\": ");
			memcpy(p, quoted[ph], qlen[ph]);
			p += qlen[ph];
		}
		p = put_lit(p, ", \"transfers\": [");
		for (int t = rd->first; t < rd->first + rd->count; t++) {
			const ir_xfer *x = &s->xfers[t];
			if (p - buf > (long)sizeof buf - JSON_SLACK) {
				fwrite(buf, 1, (size_t)(p - buf), out);
				p = buf;
			}
			if (t > rd->first) { *p++ = ','; *p++ = ' '; }
			p = put_lit(p, "{\"src\": ");
			p = put_num(p, x->src, nums, (uint32_t)count);
			p = put_lit(p, ", \"dst\": ");
			p = put_num(p, x->dst, nums, (uint32_t)count);
			p = put_lit(p, ", \"chunk\": ");
			p = put_num(p, x->chunk, nums, (uint32_t)count);
			if (x->op == IR_COPY)
				p = put_lit(p, ", \"op\": \"copy\"}");
			else
				p = put_lit(p, ", \"op\": \"reduce\"}");
		}
		p = put_lit(p, "]}");
	}
	fwrite(buf, 1, (size_t)(p - buf), out);
	fputs(s->nrounds ? "\n]}\n" : "]}\n", out);
	for (int i = 0; i < nq; i++)
		free(quoted[i]);
	free(quoted);
	free(qlen);
	free(nums);
}

/* --- table ---------------------------------------------------------------- */

static int entry_len(const ir_xfer *x)
{
	return snprintf(NULL, 0, "%sc%d>%d", x->op == IR_COPY ? "" : "+", x->chunk, x->dst);
}

static int digits(long long v)
{
	return snprintf(NULL, 0, "%lld", v);
}

void export_table(FILE *out, const ir_sched *s)
{
	int n = s->n > 0 ? s->n : 0;
	int *width = xcalloc((size_t)n, sizeof *width);
	int *cur = xcalloc((size_t)n, sizeof *cur);
	int *seen = xcalloc((size_t)n, sizeof *seen);
	int *start = xcalloc((size_t)n + 1, sizeof *start);
	long long *sent = xcalloc((size_t)n, sizeof *sent), *recvd = xcalloc((size_t)n, sizeof *recvd);
	int maxcount = 0, phw = 5, show_phase = 0;
	long long ncopy = 0, nreduce = 0;

	/* pass 1: column widths (a cell is all of one rank's sends in a round) */
	for (int r = 0; r < n; r++) {
		width[r] = digits(r) + 1;  /* "r12" */
		seen[r] = -1;
	}
	for (int i = 0; i < s->nrounds; i++) {
		const ir_round *rd = &s->rounds[i];
		const char *ph = phase_name(s, rd);
		if (strcmp(ph, "main") != 0)
			show_phase = 1;
		if ((int)strlen(ph) > phw)
			phw = (int)strlen(ph);
		if (rd->count > maxcount)
			maxcount = rd->count;
		for (int t = rd->first; t < rd->first + rd->count; t++) {
			const ir_xfer *x = &s->xfers[t];
			if (x->op == IR_COPY)
				ncopy++;
			else
				nreduce++;
			if (x->dst >= 0 && x->dst < n)
				recvd[x->dst]++;
			if (x->src < 0 || x->src >= n)
				continue;
			sent[x->src]++;
			int l = entry_len(x);
			cur[x->src] = seen[x->src] == i ? cur[x->src] + 1 + l : l;
			seen[x->src] = i;
			if (cur[x->src] > width[x->src])
				width[x->src] = cur[x->src];
		}
	}
	int rw = digits(s->nrounds > 0 ? s->nrounds - 1 : 0);
	if (rw < 5)
		rw = 5;

	fprintf(out, "%*s", rw, "round");
	if (show_phase)
		fprintf(out, "  %-*s", phw, "phase");
	for (int r = 0; r < n; r++)
		fprintf(out, "  r%-*d", r + 1 < n ? width[r] - 1 : 0, r);
	fputc('\n', out);

	/* pass 2: per round, bucket the transfers by sender (stable, so a cell
	 * lists them in program order) and print the row */
	int *order = xcalloc((size_t)maxcount, sizeof *order);
	char cell[64];
	for (int i = 0; i < s->nrounds; i++) {
		const ir_round *rd = &s->rounds[i];
		memset(start, 0, ((size_t)n + 1) * sizeof *start);
		for (int t = rd->first; t < rd->first + rd->count; t++)
			if (s->xfers[t].src >= 0 && s->xfers[t].src < n)
				start[s->xfers[t].src + 1]++;
		for (int r = 0; r < n; r++)
			start[r + 1] += start[r];
		memcpy(cur, start, (size_t)n * sizeof *cur);
		for (int t = rd->first; t < rd->first + rd->count; t++)
			if (s->xfers[t].src >= 0 && s->xfers[t].src < n)
				order[cur[s->xfers[t].src]++] = t;

		fprintf(out, "%*d", rw, i);
		if (show_phase)
			fprintf(out, "  %-*s", phw, phase_name(s, rd));
		for (int r = 0; r < n; r++) {
			fputs("  ", out);
			int used = 0;
			for (int k = start[r]; k < start[r + 1]; k++) {
				const ir_xfer *x = &s->xfers[order[k]];
				used += snprintf(cell, sizeof cell, "%s%sc%d>%d", k > start[r] ? "," : "",
						 x->op == IR_COPY ? "" : "+", x->chunk, x->dst);
				fputs(cell, out);
			}
			if (start[r] == start[r + 1]) {
				fputc('.', out);
				used = 1;
			}
			if (r + 1 < n)   /* no trailing blanks */
				fprintf(out, "%*s", width[r] - used, "");
		}
		fputc('\n', out);
	}

	int ms = 0, mr = 0;
	for (int r = 1; r < n; r++) {
		if (sent[r] > sent[ms])
			ms = r;
		if (recvd[r] > recvd[mr])
			mr = r;
	}
	fprintf(out, "%d round%s, %lld transfers (%lld copy, %lld reduce)", s->nrounds,
		s->nrounds == 1 ? "" : "s", ncopy + nreduce, ncopy, nreduce);
	if (n > 0)
		fprintf(out, ", max per rank: %lld sent (rank %d), %lld received (rank %d)", sent[ms], ms,
			recvd[mr], mr);
	fputc('\n', out);

	free(order);
	free(width);
	free(cur);
	free(seen);
	free(start);
	free(sent);
	free(recvd);
}

/* --- Graphviz ------------------------------------------------------------- */

/* Past this many (rank, step) nodes the time-expanded picture is unreadable
 * (and slow to lay out); draw one node per rank instead. */
#define DOT_MAX_NODES 4000

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void dot_header(FILE *out, const ir_sched *s)
{
	const char *kind = (int)s->kind >= 0 && s->kind < IR_NKINDS ? ir_kind_names[s->kind] : "unknown";
	fputs("digraph ", out);
	json_str(out, s->algo);   /* a DOT ID in quotes has JSON-like escapes */
	fputs(" {\n  label=", out);
	char buf[256];
	snprintf(buf, sizeof buf, "%s %s: n = %d, %d chunk%s, %d round%s", kind, s->algo ? s->algo : "?",
		 s->n, s->chunks, s->chunks == 1 ? "" : "s", s->nrounds, s->nrounds == 1 ? "" : "s");
	json_str(out, buf);
	fputs("; labelloc=t; fontname=\"Helvetica\";\n"
	      "  node [fontname=\"Helvetica\", fontsize=10];\n"
	      "  edge [fontname=\"Helvetica\", fontsize=9];\n", out);
}

/* Small schedules: lane per rank, row per step (row 0 the start, row t+1
 * the state after round t), transfers as edges between adjacent rows. */
static void dot_timeline(FILE *out, const ir_sched *s)
{
	fputs("  node [shape=circle, fixedsize=true, width=0.35];\n", out);
	for (int t = 0; t <= s->nrounds; t++) {
		fprintf(out, "  { rank=same; s%d [shape=plaintext, fixedsize=false, label=", t);
		if (t == 0) {
			fputs("\"start\"", out);
		} else {
			const char *ph = phase_name(s, &s->rounds[t - 1]);
			char buf[160];
			if (strcmp(ph, "main") != 0)
				snprintf(buf, sizeof buf, "round %d (%s)", t - 1, ph);
			else
				snprintf(buf, sizeof buf, "round %d", t - 1);
			json_str(out, buf);
		}
		fputs("];", out);
		for (int r = 0; r < s->n; r++)
			fprintf(out, " n%d_%d [label=\"%d\"];", r, t, r);
		/* flat edges inside a row fix the left-to-right order of the lanes */
		fprintf(out, " s%d", t);
		for (int r = 0; r < s->n; r++)
			fprintf(out, " -> n%d_%d", r, t);
		fputs(" [style=invis]; }\n", out);
	}
	/* invisible spine and dotted lanes keep rows in order and ranks in columns */
	for (int t = 0; t < s->nrounds; t++)
		fprintf(out, "  s%d -> s%d [style=invis];\n", t, t + 1);
	for (int r = 0; r < s->n; r++)
		for (int t = 0; t < s->nrounds; t++)
			fprintf(out, "  n%d_%d -> n%d_%d [style=dotted, color=gray70, arrowhead=none, weight=100];\n",
				r, t, r, t + 1);
	for (int t = 0; t < s->nrounds; t++) {
		const ir_round *rd = &s->rounds[t];
		for (int k = rd->first; k < rd->first + rd->count; k++) {
			const ir_xfer *x = &s->xfers[k];
			if (x->src < 0 || x->src >= s->n || x->dst < 0 || x->dst >= s->n)
				continue;
			fprintf(out, "  n%d_%d -> n%d_%d [label=\"%d:%s%d\", color=%s, fontcolor=%s];\n", x->src, t,
				x->dst, t + 1, t, x->op == IR_COPY ? "" : "+", x->chunk,
				x->op == IR_COPY ? "royalblue" : "firebrick", x->op == IR_COPY ? "royalblue" : "firebrick");
		}
	}
}

/* Large schedules: one node per rank, one edge per (src, dst) pair that
 * ever talks, labelled with its first few "round:chunk" and a count. */
static void dot_ranks(FILE *out, const ir_sched *s)
{
	uint64_t *keys = xcalloc((size_t)s->nxfers, sizeof *keys);
	int nk = 0;
	for (int t = 0; t < s->nrounds; t++) {
		const ir_round *rd = &s->rounds[t];
		for (int k = rd->first; k < rd->first + rd->count; k++) {
			const ir_xfer *x = &s->xfers[k];
			if (x->src < 0 || x->src >= s->n || x->dst < 0 || x->dst >= s->n)
				continue;
			/* (src, dst) pair, then the transfer index: sorting groups
			 * the pairs and keeps program order within each */
			keys[nk++] = ((uint64_t)x->src * (uint64_t)s->n + (uint64_t)x->dst) << 32 | (uint32_t)k;
		}
	}
	qsort(keys, (size_t)nk, sizeof *keys, cmp_u64);
	/* round of each transfer, by index: rounds are contiguous slices */
	int *round_of = xcalloc((size_t)s->nxfers, sizeof *round_of);
	for (int t = 0; t < s->nrounds; t++)
		for (int k = s->rounds[t].first; k < s->rounds[t].first + s->rounds[t].count; k++)
			round_of[k] = t;
	fputs("  layout=circo; node [shape=circle];\n", out);
	for (int r = 0; r < s->n; r++)
		fprintf(out, "  n%d [label=\"%d\"];\n", r, r);
	for (int i = 0; i < nk;) {
		uint64_t pair = keys[i] >> 32;
		int j = i;
		while (j < nk && keys[j] >> 32 == pair)
			j++;
		int src = (int)(pair / (uint64_t)s->n), dst = (int)(pair % (uint64_t)s->n);
		fprintf(out, "  n%d -> n%d [label=\"", src, dst);
		for (int k = i; k < j && k < i + 3; k++) {
			const ir_xfer *x = &s->xfers[(uint32_t)keys[k]];
			fprintf(out, "%s%d:%s%d", k > i ? " " : "", round_of[(uint32_t)keys[k]],
				x->op == IR_COPY ? "" : "+", x->chunk);
		}
		if (j - i > 3)
			fprintf(out, " (+%d)", j - i - 3);
		fputs("\"];\n", out);
		i = j;
	}
	free(round_of);
	free(keys);
}

void export_dot(FILE *out, const ir_sched *s)
{
	dot_header(out, s);
	if ((long long)(s->nrounds + 1) * s->n <= DOT_MAX_NODES)
		dot_timeline(out, s);
	else
		dot_ranks(out, s);
	fputs("}\n", out);
}
