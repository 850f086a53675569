/*
 * costplan.h - a verified schedule as the cost model's plan (costplan.c).
 */
#ifndef COLL_COSTPLAN_H
#define COLL_COSTPLAN_H

#include "cost.h"
#include "ir.h"

/* The cost plan of s (free with cost_plan_free); NULL with err set when a
 * transfer names a rank or chunk out of range (an unverified schedule) or
 * memory runs out. */
cost_plan *costplan_from_ir(const ir_sched *s, link_error *err);

#endif
