/*
 * planload.h - where the tools get plans that no generated library holds:
 * from collc, run as a subprocess (`collc show --format json` for one
 * schedule, `collc tune --json` for the size -> algorithm table), or from
 * the plan set of a library `collc build` made.  collbench
 * (runtime/tools/) and the PMPI interposition library (runtime/pmpi/)
 * both read plans this way.
 *
 * A room of its own (runtime/planload/: this, planload.c, json.c,
 * json.h), under both and above libcollrt: the two consumers call down
 * into it and neither reaches into the other's folder.  It is not part of
 * libcollrt, because an application that links libcollrt runs plans from
 * its generated library and should carry no subprocess or JSON code; the
 * makefiles link its objects into collbench, libcoll_mpi.so (kept local
 * there by pmpi.map) and the fuzz harness of this parser (PLANLOAD in
 * runtime/Makefile.frag).  Consumers include "planload/planload.h".
 *
 * The pipeline position is the end of the compiler's: collc prints the
 * verified schedule as JSON (codegen/README.md, "The schedule as JSON"), json.c parses
 * it, and coll_algo_build lowers it to rank plans for libcollrt.
 *
 * Nothing here exits or prints: errors come back as -1 or NULL with a
 * one-line reason in why[0..whylen).
 */
#ifndef COLL_PLANLOAD_H
#define COLL_PLANLOAD_H

#include <stddef.h>

#include "coll.h"
#include "coll_plan.h"

/* The collc to run: $COLLC when set, else `collc` in directory `dir` (when
 * dir is non-NULL and it is executable there), else "collc" from PATH.
 * Returns buf or a static string. */
const char *pl_find_collc(const char *dir, char *buf, size_t len);

/* Run argv[0] (looked up on PATH) with argv, the environment envp (NULL:
 * the caller's), stdin from /dev/null, never through a shell; wait for it.
 * *out and *err get its whole stdout and stderr (heap, NUL-terminated;
 * free them; err may be NULL to drop it).  Returns its exit status, 128+N
 * for a death by signal N, or -1 (why) when it could not be started. */
int pl_run(char *const argv[], char *const envp[], char **out, size_t *outlen, char **err, char *why,
           size_t whylen);

/* A collective by name ("allreduce", also "bcast", "all-gather", ...);
 * -1 when none. */
int pl_kind_by_name(const char *name);

/* The algorithm of one schedule JSON, lowered with coll_algo_build (free
 * with coll_algo_free).  nranks > 0: the schedule must be for that many
 * ranks.  An allreduce with one rank absent from its precondition rounds
 * (phase "pre...") gets that rank as its straggler role. */
coll_algo *pl_algo_from_json(const char *text, size_t len, int nranks, char *why, size_t whylen);

/* The size -> algorithm table of `collc tune --json` ("ranges"): per
 * collective in the order tune prints them, each range's algorithm up to
 * just below the next range's from_bytes, the last one to COLL_BYTES_MAX,
 * as `choose by cost` in a cluster fills it.  *out is a heap array whose
 * names are heap copies (pl_choices_free).  Returns the entry count, or -1. */
int pl_choices_from_tune(const char *text, size_t len, coll_choice **out, char *why, size_t whylen);
void pl_choices_free(coll_choice *c, int n);

/* The plan-set symbol of a library from `collc build`: NAME_plans for
 * DIR/libNAME.so (characters that cannot be in a C name become '_').
 * Returns 0, or -1 when no name can be derived from path. */
int pl_lib_symbol(const char *path, char *sym, size_t len);

#endif
