/*
 * cmd_select.h - what `collc check` and `collc show` take: files, an
 * algorithm, a rank count (or range), -D parameters and show's format.
 */
#ifndef COLL_CMD_SELECT_H
#define COLL_CMD_SELECT_H

#include <stdbool.h>

#include "driver.h"

typedef struct {
	char **files;
	int nfiles;
	const char *algo;
	int nlo, nhi;
	bool have_n;
	drv_define defs[32];
	int ndefs;
	const char *format;
	bool perm;             /* show --perm: the rank order of a cluster's library */
	const char *cluster;   /* show --cluster NAME (with --perm) */
	int kind;              /* show -t COLL: the first algorithm of that collective (-1: any) */
} sel_opts;

/* cmd_select.c */
/* Parse check's (show false) or show's arguments; 0, or 2 after printing a
 * usage error.  Free with sel_free whatever it returns. */
int sel_parse(int argc, char **argv, sel_opts *o, bool show);
/* Every -D must name a parameter of some loaded algorithm: 0, or 1 after
 * printing which does not. */
int sel_check_defines(drv_prog *p, const sel_opts *o);
void sel_free(sel_opts *o);

#endif
