/*
 * cmd_show.c - `collc show`: one verified schedule as a table of rounds x
 * ranks, as JSON (the stable format, README "The schedule as JSON") or as
 * a Graphviz graph (cmd.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_select.h"
#include "export.h"

int cmd_show(int argc, char **argv)
{
	sel_opts o;
	int rc = sel_parse(argc, argv, &o, true);
	drv_prog *p = rc ? NULL : drv_load(o.nfiles, o.files);
	if (!p) {
		sel_free(&o);
		return rc ? rc : 1;
	}
	const char *algo = o.algo;
	for (int i = 0; !algo && i < drv_nalgos(p); i++)
		if (drv_algo_named(p, i))
			algo = drv_algo_name(p, i);
	rc = 1;
	if (!algo) {
		diag_file_error(o.files[0], "declares no algorithm%s (nothing to show)",
				o.nfiles > 1 ? ", nor do the other files given" : "");
	} else if (sel_check_defines(p, &o) == 0) {
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
	sel_free(&o);
	return rc;
}

