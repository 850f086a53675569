/*
 * policy.h - rail policies (`policy NAME { ... }`) checked by the front end
 * into libcollrt's own description of one, coll_rail_policy (coll.h), so
 * that what the language says and what the runtime does are one struct.
 */
#ifndef COLL_LANG_POLICY_H
#define COLL_LANG_POLICY_H

#include <stddef.h>

#include "ast.h"
#include "coll.h"

/* Check A_POLICY decl into *out (name borrowed from the tree).  Returns 0,
 * or -1 after printing diagnostics. */
int policy_check(ast *decl, coll_rail_policy *out);
/* Check every policy of the files given to drv_load (named_only) or of
 * everything loaded, in declaration order, calling fn for each that is
 * right.  Returns how many were wrong (diagnostics printed); *count gets
 * how many there are. */
struct drv_prog;
int policy_each(const struct drv_prog *p, bool named_only, int *count,
		void (*fn)(const coll_rail_policy *pol, void *arg), void *arg);
/* The runtime's string form of p, as COLL_POLICY and coll_policy_parse
 * take it: "cold=auto,split=throughput,rebalance=10,tolerance=5,failover=200".
 * Returns what snprintf does. */
int policy_line(const coll_rail_policy *p, char *buf, size_t len);

#endif
