/*
 * cmd_select.c - the argument parser `collc check` and `collc show` share
 * (cmd_select.h): which files, which algorithm, which n and parameters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_select.h"

static int parse_n_range(const char *s, int *lo, int *hi)
{
	char *end;
	long a = strtol(s, &end, 10);
	if (end == s || strncmp(end, "..", 2) != 0)
		return -1;
	const char *t = end + 2;
	long b = strtol(t, &end, 10);
	if (end == t || *end || a < 1 || b < a || b > 65536)
		return -1;
	*lo = (int)a;
	*hi = (int)b;
	return 0;
}

static int parse_int_arg(const char *flag, const char *v, int lo, int hi, int *out)
{
	char *end;
	long x = v ? strtol(v, &end, 10) : 0;
	if (!v || end == v || *end || x < lo || x > hi) {
		diag_tool_error("%s needs an integer in %d..%d, found '%s'", flag, lo, hi, v ? v : "");
		return -1;
	}
	*out = (int)x;
	return 0;
}

int sel_parse(int argc, char **argv, sel_opts *o, bool show)
{
	memset(o, 0, sizeof *o);
	o->files = calloc(argc, sizeof *o->files);
	o->format = "table";
	o->kind = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "-a") == 0 && v) {
			o->algo = v;
			i++;
		} else if (strcmp(a, "-n") == 0) {
			if (parse_int_arg("-n", v, 1, 65536, &o->nlo))
				return 2;
			o->nhi = o->nlo;
			o->have_n = true;
			i++;
		} else if (strcmp(a, "--n-range") == 0 && !show) {
			if (!v || parse_n_range(v, &o->nlo, &o->nhi)) {
				diag_tool_error("--n-range needs A..B with 1 <= A <= B, found '%s'", v ? v : "");
				return 2;
			}
			o->have_n = true;
			i++;
		} else if (strcmp(a, "-D") == 0 && v) {
			if (o->ndefs == 32 || drv_parse_define(v, &o->defs[o->ndefs]))
				return 2;
			o->ndefs++;
			i++;
		} else if (strncmp(a, "-D", 2) == 0 && a[2]) {
			if (o->ndefs == 32 || drv_parse_define(a + 2, &o->defs[o->ndefs]))
				return 2;
			o->ndefs++;
		} else if (strcmp(a, "--format") == 0 && v && show) {
			if (strcmp(v, "table") && strcmp(v, "json") && strcmp(v, "dot")) {
				diag_tool_error("--format must be table, json or dot, found '%s'", v);
				return 2;
			}
			o->format = v;
			i++;
		} else if (strcmp(a, "-t") == 0 && v && show) {
			if ((o->kind = ir_kind_from_name(v)) < 0) {
				diag_tool_error("-t needs a collective (allreduce, reduce_scatter, allgather, broadcast, reduce, "
						"alltoall), found '%s'", v);
				return 2;
			}
			i++;
		} else if (strcmp(a, "--perm") == 0 && show) {
			o->perm = true;
		} else if (strcmp(a, "--cluster") == 0 && v && show) {
			o->cluster = v;
			i++;
		} else if (strcmp(a, "--max-steps") == 0 && v) {
			char *end;
			long long m = strtoll(v, &end, 10);
			if (end == v || *end || m < 1) {
				diag_tool_error("--max-steps needs a positive integer, found '%s'", v);
				return 2;
			}
			drv_max_steps = m;
			i++;
		} else if (a[0] == '-' && a[1]) {
			diag_tool_error("unknown or incomplete option '%s' for '%s' (see collc --help)", a,
				argv[0]);
			return 2;
		} else {
			o->files[o->nfiles++] = argv[i];
		}
	}
	if (o->nfiles == 0) {
		diag_tool_error("%s needs at least one .coll file", argv[0]);
		return 2;
	}
	if (show && !o->have_n && !o->perm) {
		diag_tool_error("show needs the rank count: -n N");
		return 2;
	}
	if (!o->have_n) {
		o->nlo = 2;
		o->nhi = 16;
	}
	return 0;
}

int sel_check_defines(drv_prog *p, const sel_opts *o)
{
	const char *bad = drv_unknown_define(p, o->defs, o->ndefs);
	if (bad)
		diag_tool_error("-D %s: no algorithm has a parameter named '%s'", bad, bad);
	return bad ? 1 : 0;
}

void sel_free(sel_opts *o)
{
	for (int d = 0; d < o->ndefs; d++)
		free((char *)o->defs[d].name);
	free(o->files);
}

