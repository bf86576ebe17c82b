/*
 * groupby_internal.h — the aggregate states of the group-by (aggregate.c)
 * as the driver (groupby.c) uses them: type checks, per-batch columnwise
 * updates over group ids, and results. Compute layer, private to
 * src/compute.
 */
#ifndef QV_GROUPBY_INTERNAL_H
#define QV_GROUPBY_INTERNAL_H

#include <math.h>

#include "quiver/compute.h"

typedef struct qvg_agg qvg_agg;

/** Batch scratch of the aggregate updates: one per thread updating (the
 *  typed values, validity bytes and group ids of one batch's rows). Zero-
 *  initialise; release with qvg_scratch_free. */
typedef struct qvg_scratch {
  double *fx, *fy;
  int64_t *ix;
  uint8_t *vx, *vy;
  uint32_t *dids, *g;
  int64_t cap;
} qvg_scratch;

void qvg_scratch_free(qvg_scratch *s);

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

/** True when the holistic aggregate reads qvg_rows' chunk/row lists
 *  (list, top_k/bottom_k kept as rows); median and quantile need only
 *  start[] and ids. */
bool qvg_agg_needs_rows(const qvg_agg *a);

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

/** As qvg_agg_update, over the rows sel[0..n) of chunk `c` (ascending
 *  row numbers; sel NULL: rows 0..n) with group ids ids_b[row], using the
 *  caller's scratch `s`. Several threads may update one aggregate at once
 *  when their rows belong to disjoint sets of groups and each processes
 *  its groups' rows in table order (then every group sees the same update
 *  sequence as one thread would give it: results are bit-identical), if
 *  qvg_agg_parallel_ok; the chunks' null counts must be known
 *  (qv_array_null_count called before). */
qv_status qvg_agg_update_sel(qvg_agg *a, qvg_scratch *s, const uint32_t *ids_b, const uint32_t *sel,
                             int64_t n, int32_t c, qv_array *x, const qv_array *y, qv_error *err);

/** False for the aggregates whose update shares state across groups
 *  (count_distinct's grouper): those are updated by one thread. */
bool qvg_agg_parallel_ok(const qvg_agg *a);

/** True when thread-local states of this aggregate can be merged
 *  (qvg_agg_merge): every kind but the holistic ones and count_distinct. */
bool qvg_agg_mergeable(const qvg_agg *a);

/** A new, empty aggregate of the same kind, inputs and label as `a`. */
qv_status qvg_agg_clone_empty(const qvg_agg *a, qvg_agg **out, qv_error *err);

/** Merge the states of src's groups 0..n into dst's groups map[g] (map
 *  NULL: the same ids). src must have seen rows that all come after the
 *  rows dst has seen (first/last and the ties of min/max follow row
 *  order). Integer sums are checked (QV_ERANGE); float sums, means,
 *  variances and co-moments are combined pairwise (Chan et al.), so they
 *  may differ from one thread's in the last bits. */
qv_status qvg_agg_merge(qvg_agg *dst, const qvg_agg *src, const uint32_t *map, int64_t n,
                        qv_error *err);

typedef struct qv_pool qv_pool;

/** The result column of n_groups rows. chunks: the input column's chunks
 *  (for results gathered from the input); rows: NULL unless holistic;
 *  pool: where median / quantile select their groups' values (NULL: this
 *  thread). */
qv_status qvg_agg_finish(qvg_agg *a, int64_t n_groups, qv_array *const *chunks, int64_t n_chunks,
                         const qvg_rows *rows, qv_pool *pool, qv_array **out, qv_error *err);

/** The canonical grouping value of one float / double, the one rule of
 *  qvg_normalize_floats and the hash group-by's key loader: -0.0 -> 0.0,
 *  every NaN the one quiet NaN (bits 0x7fc00000 / 0x7ff8000000000000),
 *  anything else itself. */
static inline float qvg_canon_float(float f) {
  if (f == 0.0f) return 0.0f; /* -0.0 too */
  if (isnan(f)) return NAN;
  return f;
}
static inline double qvg_canon_double(double d) {
  if (d == 0.0) return 0.0; /* -0.0 too */
  if (isnan(d)) return (double)NAN;
  return d;
}

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

/* ------------------------------------------------------------------------ */
/* The hash path on all cores (groupby_hash.c)                               */

/** Rows of a table split by group into n_parts partitions: the rows of
 *  partition p in batch b are rows[off[p * n_batches + b] ..
 *  off[p * n_batches + b + 1]), row numbers within the batch, ascending;
 *  every group's rows are in one partition. */
typedef struct qvg_parts {
  int32_t n_parts;
  int64_t n_batches;
  int64_t *off; /* n_parts * n_batches + 1 */
  uint32_t *rows;
} qvg_parts;

void qvg_parts_free(qvg_parts *p);

/** True when a key of type t can take the hash path (fixed-width types,
 *  decimals, fixed_size_binary, binary/string in every layout). */
bool qvg_hash_eligible(const qv_type *t);

/** Group ids of every row of keys kcols[0..nk) (chunks of nb batches with
 *  boff[b] the first row of batch b, boff[nb] the total): ids[row] dense
 *  in order of first appearance (the grouper's order; floats grouped as
 *  qvg_normalize_floats canonicalises them), *first_chunk / *first_row the
 *  first row of each of the *n_groups groups (malloc'd, the caller frees),
 *  *parts the rows by hash partition (n_parts a power of two; release with
 *  qvg_parts_free). Runs on `pool` (one task per batch, then per
 *  partition). distinct_frac: the expected groups per row (a sample's
 *  estimate; 0 when unknown), to size the tables. */
qv_status qvg_hash_group(qv_pool *pool, int32_t n_parts, double distinct_frac,
                         const qv_chunked_column *const *kcols, int32_t nk, const int64_t *boff,
                         int64_t nb, uint32_t *ids, int64_t **first_chunk, int64_t **first_row,
                         int64_t *n_groups, qvg_parts *parts, qv_error *err);

/** Rows split into n_parts (a power of two, >= 2) partitions by a hash of
 *  their group id ids[row] (for ids assigned without hash partitions). */
qv_status qvg_parts_by_group(qv_pool *pool, const uint32_t *ids, const int64_t *boff, int64_t nb,
                             int32_t n_parts, qvg_parts *parts, qv_error *err);

/** A group table over whole batches of hash-path keys (one per thread of
 * the pre-aggregation in groupby.c; not thread-safe itself). Groups are
 * dense in order of first appearance among the rows inserted. */
typedef struct qvg_htab qvg_htab;

qv_status qvg_htab_new(const qv_chunked_column *const *kcols, int32_t nk, qvg_htab **out,
                       qv_error *err);
void qvg_htab_free(qvg_htab *t);
int64_t qvg_htab_groups(const qvg_htab *t);

/** Group ids ids[0..n) of the n rows of batch b (h: n hashes of scratch). */
qv_status qvg_htab_batch(qvg_htab *t, int64_t b, int64_t n, uint64_t *h, uint32_t *ids,
                         qv_error *err);

/** Insert src's groups (in their order) into dst: map[g] = dst's id of
 *  src's group g (map has qvg_htab_groups(src) entries). */
qv_status qvg_htab_merge(qvg_htab *dst, const qvg_htab *src, uint32_t *map, qv_error *err);

/** First row (chunk, row) of every group. */
void qvg_htab_firsts(const qvg_htab *t, int64_t *chunk, int64_t *row);

/** Distinct key hashes among the first n rows of batch b (an estimate of
 *  the groups there); -1 when the batch's buffers are inconsistent. */
int64_t qvg_hash_sample_distinct(const qv_chunked_column *const *kcols, int32_t nk, int64_t b,
                                 int64_t n);
/* Bytes a row of input costs the in-memory engine before any group state
 * (checked against opts->memory_limit before they are allocated): its
 * group id; on the hash path its hash, first-of-group flag and partition
 * row list entry; with holistic aggregates its place in its group's rows. */
#define QVG_ROW_BYTES_IDS 4
#define QVG_ROW_BYTES_HASH 13
#define QVG_ROW_BYTES_HOLISTIC 16

/** Codes of a string / binary key column (any offsets layout, views) of
 *  at most max_values (< 65535) distinct values, for the direct path:
 *  codes[boff[b] + i] of row i of batch b, 0..*n_values-1 for the values
 *  and *n_values for a null (*nulls: some row is null). Runs on `pool`.
 *  False when the column is not binary-like, has more values, its buffers
 *  are inconsistent or memory runs out (then codes is garbage; nothing to
 *  free either way). Batch b of `release` (when not NULL: the table the
 *  column is read from) is released once coded (qv_table_batch_done). */
bool qvg_code_strings(qv_pool *pool, const qv_chunked_column *col, const int64_t *boff, int64_t nb,
                      int32_t max_values, qv_table *release, uint16_t *codes, int32_t *n_values,
                      bool *nulls);

/** The in-memory group-by engine (groupby.c): qv_table_group_by's
 *  contract, except that state past opts->memory_limit (> 0) is QV_ENOMEM
 *  rather than a spill. qv_table_group_by (groupby_spill.c) calls it, and
 *  calls it again on each spilled partition. */
qv_status qvg_group_by_memory(qv_table *t, const char *const *keys, int32_t n_keys,
                              const qv_aggregate *aggs, int32_t n_aggs,
                              const qv_group_by_options *opts, qv_table **out, qv_error *err);

#endif /* QV_GROUPBY_INTERNAL_H */
