/*
 * cmd_check.c - `collc check`: evaluate and verify algorithms over a range
 * of n, one summary line per algorithm (cmd.h).
 *
 * A sweep skips the n an algorithm rejects with `require` (unsupported,
 * counted and explained); a single n reports it as a failure, and so does
 * a sweep in which an algorithm supports no n at all (nothing was checked).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_select.h"

int cmd_check(int argc, char **argv)
{
	sel_opts o;
	int rc = sel_parse(argc, argv, &o, false);
	drv_prog *p = rc ? NULL : drv_load(o.nfiles, o.files);
	if (!p || sel_check_defines(p, &o) ||
	    (o.algo && drv_find_algo(p, o.algo) < 0 && !drv_run(p, o.algo, 1, NULL, 0, false))) {
		/* drv_run of an unknown name prints the "no algorithm" error */
		drv_free(p);
		sel_free(&o);
		return rc ? rc : 1;
	}
	/* a sweep skips the n an algorithm rejects with `require`; one n does not */
	bool sweep = o.nlo != o.nhi;
	drv_set_quiet_require(p, sweep);
	int failed = 0, checked = 0;
	for (int i = 0; i < drv_nalgos(p); i++) {
		const char *name = drv_algo_name(p, i);
		if (o.algo ? strcmp(name, o.algo) != 0 : !drv_algo_named(p, i))
			continue;
		int ok = 0, bad = 0, skipped = 0, rounds = 0, xfers = 0;
		char why[256] = "";
		const char *reason;
		for (int n = o.nlo; n <= o.nhi; n++) {
			ir_sched *s = drv_run(p, name, n, o.defs, o.ndefs, true);
			if (s) {
				ok++;
				rounds = s->nrounds;
				xfers = s->nxfers;
				ir_free(s);
			} else if (drv_unsupported(p, &reason)) {
				if (!skipped++)   /* the first reason; later runs overwrite it */
					snprintf(why, sizeof why, "%s", reason);
			} else {
				bad++;
				/* a runaway loop or a memory hog: reported once, not once per n */
				if (sweep && drv_hit_limit(p) && n < o.nhi) {
					fprintf(stderr, "%s: note: '%s': not trying n = %d..%d after that\n", diag_tool, name,
						n + 1, o.nhi);
					break;
				}
			}
		}
		checked++;
		if (bad || (sweep && ok == 0))
			failed++;
		if (!sweep)
			printf("%s: n=%d %s", name, o.nlo, bad ? "FAILED\n" : "");
		else
			printf("%s: n=%d..%d: %d verified, %d failed, %d unsupported", name, o.nlo, o.nhi, ok, bad, skipped);
		if (!bad && !sweep)
			printf("verified (%d rounds, %d transfers)\n", rounds, xfers);
		else if (sweep)
			printf("%s%s%s\n", skipped ? " (" : "", skipped ? why : "", skipped ? ")" : "");
		if (sweep && ok == 0 && bad == 0)   /* nothing was checked at all: not a pass */
			diag_error(drv_algo_pos(p, i), "'%s' supports none of n = %d..%d (%s)", name, o.nlo, o.nhi, why);
	}
	if (checked == 0) {
		diag_file_error(o.files[0], "declares no algorithm%s (nothing to check: the files hold only comments, "
				"imports, functions or clusters)", o.nfiles > 1 ? ", nor do the other files given" : "");
		failed = 1;
	}
	drv_free(p);
	sel_free(&o);
	return failed ? 1 : 0;
}

