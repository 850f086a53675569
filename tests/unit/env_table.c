/*
 * env_table.c - prints libcollrt's table of COLL_* variables (env.def) as
 * the runtime reads it, for the tests that check the manual and drive
 * every variable with bad values.
 *
 *   env_table                 one line per variable: NAME, kind, what it
 *                             accepts (rt_env_expect), tab-separated
 *   env_table NAME VALUE      parse VALUE as NAME's row does: prints the
 *                             number, or the error; exit 0 or 1
 *   env_table init            coll_init_env with no plan set, as a program
 *                             started by collrun would: "init ok", or
 *                             "init failed: " and coll_last_error; exit 0
 *                             or 1 (the bad-settings test drives it, since
 *                             it reads nothing of the environment itself)
 */
#include <stdio.h>
#include <string.h>

#include "rt.h"

static const char *kind_name(rt_env_kind k)
{
	static const char *const names[] = {"str", "int", "real", "size", "pow2", "bool", "enum"};
	return names[k];
}

int main(int argc, char **argv)
{
	char buf[300];
	if (argc == 3) {
		const rt_env_row *r = rt_env_find(argv[1]);
		double v;
		if (!r) {
			fprintf(stderr, "env_table: %s is not in env.def\n", argv[1]);
			return 2;
		}
		if (rt_env_parse(r, argv[2], &v, buf, sizeof buf)) {
			printf("%s\n", buf);
			return 1;
		}
		printf("%.17g\n", v);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "init") == 0) {
		coll_comm *c;
		coll_result rc = coll_init_env(&c, NULL);
		if (rc == COLL_OK)
			printf("init ok: rank %d of %d\n", coll_rank(c), coll_nranks(c));
		else
			printf("init failed: %s: %s\n", coll_strerror(rc), coll_last_error(NULL));
		coll_finalize(c);
		return rc != COLL_OK;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: env_table [NAME VALUE | init]\n");
		return 2;
	}
	const rt_env_row *rows;
	size_t n = rt_env_table(&rows);
	for (size_t i = 0; i < n; i++)
		printf("%s\t%s\t%s\n", rows[i].name, kind_name(rows[i].kind), rt_env_expect(&rows[i], buf, sizeof buf));
	return 0;
}
