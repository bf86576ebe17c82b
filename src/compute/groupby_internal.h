/*
 * groupby_internal.h — the aggregate states of the group-by (aggregate.c)
 * as the driver (groupby.c) uses them: type checks, per-batch columnwise
 * updates over group ids, and results. Compute layer, private to
 * src/compute.
 */
#ifndef QV_GROUPBY_INTERNAL_H
#define QV_GROUPBY_INTERNAL_H

#include "quiver/compute.h"

typedef struct qvg_agg qvg_agg;

/** Rows of every group, grouped (the holistic aggregates' input): the rows
 *  of group g are entries [start[g], start[g+1]) of chunk[] / row[], in
 *  input order. */
typedef struct qvg_rows {
  int64_t *start; /* n_groups + 1 */
  int32_t *chunk;
  int64_t *row;
  const uint32_t *ids; /* group id of every row, in table order */
} qvg_rows;

/** True for aggregates that need every row of a group at the end. */
bool qvg_kind_is_holistic(qv_agg_kind kind);

/** True when this aggregate needs every row of a group at the end (the
 *  holistic kinds, except top_k/bottom_k of numbers with a small k, kept
 *  per group as they stream). */
bool qvg_agg_is_holistic(const qvg_agg *a);

/** Check the aggregate against its input types (type2 NULL unless corr /
 *  covar) and make its state. `label` names it in errors ("sum(v1)"). */
qv_status qvg_agg_new(const qv_aggregate *spec, const qv_type *type, const qv_type *type2,
                      const char *label, qvg_agg **out, qv_error *err);
void qvg_agg_free(qvg_agg *a);

/** Make room for n_groups groups (new groups start empty). */
qv_status qvg_agg_reserve(qvg_agg *a, int64_t n_groups, qv_error *err);

/** Bytes of state per group (for the memory budget). */
int64_t qvg_agg_group_bytes(const qvg_agg *a);

/** Update with one batch: ids[0..n) group ids of the rows of chunk `c`
 *  (input columns x, and y for two-input aggregates; NULL for count(*)). */
qv_status qvg_agg_update(qvg_agg *a, const uint32_t *ids, int64_t n, int32_t c, qv_array *x,
                         const qv_array *y, qv_error *err);

/** The result column of n_groups rows. chunks: the input column's chunks
 *  (for results gathered from the input); rows: NULL unless holistic. */
qv_status qvg_agg_finish(qvg_agg *a, int64_t n_groups, qv_array *const *chunks, int64_t n_chunks,
                         const qvg_rows *rows, qv_array **out, qv_error *err);

/** x with float/double values made canonical for grouping as DuckDB
 *  groups them (-0.0 -> 0.0, every NaN one NaN): a new array, or a new
 *  reference to x itself for other types. */
qv_status qvg_normalize_floats(qv_array *x, qv_array **out, qv_error *err);

/** Closest of names[0..n) to `name` by edit distance (NULL when none is
 *  close), for "did you mean" messages. */
const char *qvg_closest_name(const char *name, const char *const *names, int32_t n);

/** An in-memory table of one batch of `len` rows: columns cols[0..n)
 *  (references taken) under names[0..n). */
qv_status qvg_build_table(const char *const *names, qv_array **cols, int32_t n, int64_t len,
                          qv_table **out, qv_error *err);

/** The in-memory group-by engine (groupby.c): qv_table_group_by's
 *  contract, except that state past opts->memory_limit (> 0) is QV_ENOMEM
 *  rather than a spill. qv_table_group_by (groupby_spill.c) calls it, and
 *  calls it again on each spilled partition. */
qv_status qvg_group_by_memory(qv_table *t, const char *const *keys, int32_t n_keys,
                              const qv_aggregate *aggs, int32_t n_aggs,
                              const qv_group_by_options *opts, qv_table **out, qv_error *err);

/** The default group-by memory budget: a quarter of physical memory. */
int64_t qvg_default_memory_limit(void);

#endif /* QV_GROUPBY_INTERNAL_H */
