/*
 * defs.h - a -D override (`-D B=3` on the command line, or a cluster's
 * parameter binding): the one type both the driver, which collects them,
 * and the evaluator, which binds them to an algorithm's `param`s, need.
 * It lives here, below both, so that eval.h need not include driver.h:
 * the evaluator is called by the driver and never reaches back up to it.
 */
#ifndef COLL_DEFS_H
#define COLL_DEFS_H

typedef struct {
	const char *name;   /* -D name=value */
	long long value;
} drv_define;

#endif
