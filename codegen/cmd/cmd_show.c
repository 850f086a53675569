/*
 * cmd_show.c - `collc show`: one verified schedule as a table of rounds x
 * ranks, as JSON (the stable format, codegen/README.md, "The schedule as JSON") or as
 * a Graphviz graph (cmd.h); and `collc show CLUSTER.coll --perm`, the rank
 * order the cluster's library would use (the same computation as collc
 * build's, without generating anything).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cmd.h"
#include "cmd_flags.h"
#include "export.h"

/* --perm: the order a cluster's library uses. */
static int show_perm(drv_prog *p, const cmd_opts *o)
{
	cluster_desc d;
	libplan c;
	if (cluster_check(p, o->cluster, &d) != 0)
		return 1;
	int rc = 1;
	if (libplan_make(&d, NULL, &c) == 0) {
		printf("cluster %s: %d ranks, links %s%s\n", d.name, d.ranks, d.links ? d.links : "uniform",
		       d.ndecls ? " and segments declared in the cluster" : "");
		cmd_print_order(&c, "");
		libplan_free(&c);
		rc = 0;
	}
	cluster_desc_free(&d);
	return rc;
}

int cmd_show(int argc, char **argv)
{
	cmd_opts o;
	int rc = cmd_parse(argc, argv, CMD_SHOW, &o);
	drv_prog *p = rc ? NULL : drv_load(o.nfiles, o.files);
	if (!p) {
		cmd_free_opts(&o);
		return rc < 0 ? 0 : rc ? rc : 1;
	}
	if (o.show_perm) {
		rc = show_perm(p, &o);
		drv_free(p);
		cmd_free_opts(&o);
		return rc;
	}
	/* default: the first algorithm of the files (of collective -t) */
	const char *algo = o.algo;
	for (int i = 0; !algo && i < drv_nalgos(p); i++)
		if (drv_algo_named(p, i) && (o.kind < 0 || (int)drv_algo_kind(p, i) == o.kind))
			algo = drv_algo_name(p, i);
	rc = 1;
	if (!algo) {
		diag_file_error(o.files[0], "declares no %s%salgorithm%s (nothing to show)",
				o.kind < 0 ? "" : ir_kind_info((ir_kind)o.kind)->name, o.kind < 0 ? "" : " ",
				o.nfiles > 1 ? ", nor do the other files given" : "");
	} else if (cmd_check_defines(p, &o) == 0 && cmd_check_algo(p, algo) == 0) {
		ir_sched *s = drv_run(p, algo, o.nlo, o.defs, o.ndefs, true);
		if (s) {
			if (strcmp(o.format, "json") == 0)
				export_json(stdout, s);
			else if (strcmp(o.format, "dot") == 0)
				export_dot(stdout, s);
			else
				export_table(stdout, s);
			ir_free(s);
			rc = 0;
		}
	}
	drv_free(p);
	cmd_free_opts(&o);
	return rc;
}

