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

/* "00" .. "99": put_int writes two digits per lookup instead of dividing
 * once per digit (ranks and chunks are mostly 2-4 digits at large n); it
 * is inlined, three times per transfer. */
static const char digit_pairs[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static inline __attribute__((always_inline)) char *put_int(char *p, int32_t v)
{
	uint32_t u = (uint32_t)v;
	if (u < 10) {   /* most ranks and chunks of small schedules */
		*p++ = (char)('0' + u);
		return p;
	}
	if (u < 100) {
		memcpy(p, digit_pairs + 2 * u, 2);
		return p + 2;
	}
	if (u < 1000) {
		*p = (char)('0' + u / 100);
		memcpy(p + 1, digit_pairs + 2 * (u % 100), 2);
		return p + 3;
	}
	if (u < 10000) {
		memcpy(p, digit_pairs + 2 * (u / 100), 2);
		memcpy(p + 2, digit_pairs + 2 * (u % 100), 2);
		return p + 4;
	}
	char tmp[12];
	int k = 12;
	u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
	do {
		tmp[--k] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*p++ = '-';
	memcpy(p, tmp + k, (size_t)(12 - k));
	return p + (12 - k);
}

void export_json(FILE *out, const ir_sched *s)
{
	const char *kind = (int)s->kind >= 0 && s->kind < IR_NKINDS ? ir_kind_names[s->kind] : "unknown";
	fputs("{\"collective\": ", out);
	json_str(out, kind);
	fputs(", \"algorithm\": ", out);
	json_str(out, s->algo);
	fprintf(out, ", \"n\": %d, \"chunks\": %d, \"root\": %d, \"ports\": {\"send\": %d, \"recv\": %d}, \"rounds\": [",
		s->n, s->chunks, s->root, s->ports_send, s->ports_recv);
	for (int r = 0; r < s->nrounds; r++) {
		const ir_round *rd = &s->rounds[r];
		fputs(r ? ",\n  {\"phase\": " : "\n  {\"phase\": ", out);
		json_str(out, phase_name(s, rd));
		fputs(", \"transfers\": [", out);
		/* the hot loop of `collc show --format json` (millions of
		 * transfers at n = 1024): format by hand, write in one call */
		char buf[1 << 16];
		char *p = buf;
		for (int t = rd->first; t < rd->first + rd->count; t++) {
			const ir_xfer *x = &s->xfers[t];
			if (p - buf > (long)sizeof buf - 128) {
				fwrite(buf, 1, (size_t)(p - buf), out);
				p = buf;
			}
			if (t > rd->first) { *p++ = ','; *p++ = ' '; }
			p = put_lit(p, "{\"src\": ");
			p = put_int(p, x->src);
			p = put_lit(p, ", \"dst\": ");
			p = put_int(p, x->dst);
			p = put_lit(p, ", \"chunk\": ");
			p = put_int(p, x->chunk);
			if (x->op == IR_COPY)
				p = put_lit(p, ", \"op\": \"copy\"}");
			else
				p = put_lit(p, ", \"op\": \"reduce\"}");
		}
		fwrite(buf, 1, (size_t)(p - buf), out);
		fputs("]}", out);
	}
	fputs(s->nrounds ? "\n]}\n" : "]}\n", out);
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
