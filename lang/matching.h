/*
 * matching.h - maximum-weight matching on general (non-bipartite) graphs.
 *
 * Schedulers that pair ranks up per round (StragglAR-style: weight 2 when
 * both endpoints have something for each other, 1 when only one does) need
 * the best pairing, not a greedy one; odd cycles make this a blossom
 * problem, so this is Edmonds' algorithm in Galil's primal-dual O(n^3) form.
 * Pure computation: no global state, no printing, never exits.
 */
#ifndef COLL_MATCHING_H
#define COLL_MATCHING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest accepted |w|; keeps every dual and slack far from int64 overflow. */
#define MATCH_MAX_WEIGHT ((int64_t)1 << 40)

/*
 * Maximum-weight matching of a general graph with nv vertices (0..nv-1) and
 * ne edges (eu[i], ev[i], w[i]).  When maxcard is true, find the
 * maximum-weight matching among maximum-cardinality matchings.
 * On success returns 0 and sets mate[v] to v's partner or -1.  On bad input
 * (vertex out of range, self-loop, nv < 0, ne < 0, |w| > MATCH_MAX_WEIGHT,
 * missing arrays, nv or ne >= INT_MAX/2) or out of memory returns -1 and
 * writes a one-line reason into err (errlen bytes; err may be NULL).
 * Never exits, never prints.
 * Edges with w <= 0 are ignored unless maxcard; of parallel edges only the
 * heaviest counts.  Deterministic: same input, same mate.
 */
int match_max_weight(int nv, int ne, const int *eu, const int *ev,
		     const int64_t *w, bool maxcard, int *mate,
		     char *err, size_t errlen);

#endif
