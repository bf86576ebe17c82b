/*
 * join_internal.h — the pieces of the hash join (join.c) that the table
 * output (join_table.c) and distinct (distinct.c) share: a side of the
 * join with its key columns loaded and unified, and column lookup with a
 * "did you mean" suggestion. Compute layer, private to src/compute.
 */
#ifndef QV_JOIN_INTERNAL_H
#define QV_JOIN_INTERNAL_H

#include "compute/compute_internal.h"

/** One side of a join: its table, rows, batch offsets and keys. */
typedef struct qvj_side {
  qv_table *t;   /* borrowed */
  int64_t n, nb; /* rows, record batches */
  int64_t *boff; /* nb + 1 batch start rows */
  int32_t n_keys;
  qvc_columns keys; /* the key columns as loaded */
  qv_array **ukeys; /* n_keys * nb: keys cast to the unified types */
  qv_array **hkeys; /* n_keys * nb: ukeys with floats canonicalised */
} qvj_side;

/** Index of column `name` of t; QV_EARG "WHAT: no column named 'x' (did
 *  you mean 'y'?)" when absent. */
qv_status qvj_find_column(const qv_table *t, const char *what, const char *name, int32_t *out,
                          qv_error *err);

qv_status qvj_side_load(qvj_side *s, qv_table *t, const int32_t *idx, int32_t nk, qv_error *err);
void qvj_side_reset(qvj_side *s);

/** qv_join_indices with the sides kept for the caller (reset them, and
 *  unref types[0..n_keys), also after a failure): lidx / ridx receive the
 *  key column indices, types the unified key types. */
qv_status qvj_join(qv_table *left, qv_table *right, const qv_join_options *o, qvj_side *l,
                   qvj_side *r, int32_t *lidx, int32_t *ridx, qv_type **types, int64_t **out_l,
                   int64_t **out_r, int64_t *out_n, qv_error *err);

/** Tests set this to run single fixed-width keys through the grouper too
 *  (both paths are checked against the oracle). */
extern bool qvj_force_grouper;

/** Tests set this to look the probe side up on one thread (join.c: the
 *  grouper path otherwise probes on all cores when the build side is at
 *  most an eighth of the probe side). */
extern bool qvj_serial_probe;

/** Rows from which a side read out of order is gathered with the
 *  prefetching gather (join_table.c): 256 Ki (a variable so that tests can
 *  lower it). */
extern int64_t qvj_random_min;

/** The fixed-width path's bloom filters over the build side's partitions
 *  (join_fast.c), consulted before a probe reads the table: -1 (default)
 *  when the build side is large and a sample of the probe mostly misses
 *  it, 0 never, 1 always (tests check both against the oracle). */
extern int qvj_bloom_mode;

/** Probe rows per part of the pairs' count and emit on all cores
 *  (join.c): 64 Ki (a variable so that tests can lower it and run many
 *  parts). */
extern int64_t qvj_emit_part;

/** Build rows per partition of the fixed-width path (join_fast.c): 128 Ki
 *  (a variable so that tests can lower it and run many partitions). */
extern int64_t qvj_part_keys;

/** Whether one key of unified type t takes the fixed-width path
 *  (join_fast.c): 1, 2, 4 or 8 bytes, no children, not bool. */
bool qvj_fast_eligible(const qv_type *t);

/** The fixed-width path: group ids of every build row (dense, in
 *  first-appearance order per hash partition; QV_GROUP_NONE for a null
 *  key) and of every probe row (the build group with an equal key, else
 *  QV_GROUP_NONE); *out_ng the number of groups. Keys: the sides' hkeys
 *  (one key column). */
qv_status qvj_fast_ids(const qvj_side *bs, const qvj_side *ps, const qv_type *type, uint32_t *bids,
                       uint32_t *pids, int64_t *out_ng, qv_error *err);

/** The number of partitions of a grace hash join over build side `build`
 *  (keys unified) under memory_limit (qv_join_options' rules), or 0 when
 *  the join fits in memory. */
int qvj_spill_partitions(const qvj_side *build, int64_t memory_limit);

/** The grace hash join (join_spill.c): the pairs of qv_join_indices over
 *  sides with unified keys (types), building over the left when
 *  build_left, through `parts` (a power of 2, <= 256) partition files. */
qv_status qvj_grace(qvj_side *l, qvj_side *r, qv_type **types, const qv_join_options *o,
                    bool build_left, int parts, int64_t **out_l, int64_t **out_r, int64_t *out_n,
                    qv_error *err);

/** Grace joins run so far (tests check that a join spilled), and the
 *  most partitions one may use (256; tests lower it to keep many small
 *  spilled joins quick). */
extern int64_t qvj_spill_runs;
extern int qvj_spill_max_parts;

#endif
