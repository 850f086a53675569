/*
 * cmd_check.c - `collc check`: evaluate and verify algorithms over a range
 * of n, one summary line per algorithm (cmd.h).
 *
 * A sweep skips the n an algorithm rejects with `require` (unsupported,
 * counted and explained); a single n reports it as a failure, and so does
 * a sweep in which an algorithm supports no n at all (nothing was checked).
 * Rail policies in the files are checked too (no n involved), one line
 * each in the runtime's string form (policy.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_flags.h"
#include "policy.h"

static void print_policy(const coll_rail_policy *pol, void *arg)
{
	(void)arg;
	char line[160];
	policy_line(pol, line, sizeof line);
	printf("policy %s: %s\n", pol->name, line);
}

int cmd_check(int argc, char **argv)
{
	cmd_opts o;
	int rc = cmd_parse(argc, argv, CMD_CHECK, &o);
	drv_prog *p = rc ? NULL : drv_load(o.nfiles, o.files);
	if (!p || cmd_check_defines(p, &o) || cmd_check_algo(p, o.algo)) {
		drv_free(p);
		cmd_free_opts(&o);
		return rc < 0 ? 0 : rc ? rc : 1;
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
	/* rail policies: checked whole, one line each */
	int npol = 0;
	if (!o.algo)
		failed += policy_each(p, true, &npol, print_policy, NULL);
	if (checked == 0 && npol == 0) {
		diag_file_error(o.files[0], "declares no algorithm%s (nothing to check: the files hold only comments, "
				"imports, functions or clusters)", o.nfiles > 1 ? ", nor do the other files given" : "");
		failed = 1;
	}
	drv_free(p);
	cmd_free_opts(&o);
	return failed ? 1 : 0;
}

