/*
 * quiver/compute.h — sort indices, distinct values and the grouper.
 * Compute layer: sits on row (row table hashing and comparison), table and
 * core. The expression language is in quiver/expr.h.
 *
 * Sorting (qv_sort_indices, qv_table_sort_indices) follows pyarrow's
 * `sort_indices` exactly, which is what Hugging Face `datasets` calls in
 * `Dataset.sort`:
 *  - stable: rows whose keys are all equal keep their input order, in
 *    ascending and in descending order alike;
 *  - per key, nulls go first (QV_NULLS_AT_START) or last (QV_NULLS_AT_END,
 *    `datasets`'s default) whatever the order;
 *  - floating point NaN sorts between the numbers and the nulls: at_end
 *    gives [numbers, NaN, null], at_start gives [null, NaN, numbers], in
 *    both orders; all NaNs are equal to one another, and -0.0 equals 0.0;
 *  - with several keys, later keys break ties of earlier ones (null and
 *    NaN rows of a key are ties among themselves too).
 * Comparable key types: null, bool, integers, half/float/double, decimals
 * (32 to 256 bits), date, time, timestamp, duration (by their integer
 * value; a column has one unit), binary/string in every layout (32- and
 * 64-bit offsets, views), byte-wise (memcmp, a prefix before its
 * extensions), fixed_size_binary (byte-wise) and dictionaries (by decoded
 * value; chunks may carry different dictionaries). Intervals, nested,
 * union and run-end encoded keys are QV_ETYPE. Where pyarrow refuses a
 * type that quiver sorts (views, half floats, dictionaries in a table
 * sort) quiver uses the order above.
 *
 * Distinct values (qv_unique, qv_table_unique) follow pyarrow's `unique`
 * (what `Dataset.unique` calls): each distinct value once, in order of
 * first appearance; nulls form one value. Values are told apart by their
 * bytes, as pyarrow's hash kernel does: 0.0 and -0.0 are different values,
 * NaNs with different bit patterns are too. Dictionary columns are grouped
 * by decoded value (pyarrow groups by index, which differs only when one
 * dictionary repeats a value).
 *
 * The grouper (qv_grouper) assigns dense group ids 0, 1, 2... to keys in
 * order of first appearance, over any number of batches: a swiss-table
 * style hash table over the row table's hashes (qv_row_hash_rows64),
 * confirming candidates by comparing encoded rows byte for byte, the
 * criterion of qv_row_compare_rows (the encoding is canonical: equal rows
 * <=> equal keys, NULL equal to NULL). Group-by and distinct build on it.
 *
 * Group-by with aggregates (qv_table_group_by, qv_table_group_by_exprs; the
 * section at the end; docs/compute.md): keys through a hash path on all
 * cores (fixed-width and binary keys), the grouper or a direct-index path,
 * aggregates updated columnwise over group ids, result types as DuckDB's
 * (integer sums int64, checked).
 */
#ifndef QUIVER_COMPUTE_H
#define QUIVER_COMPUTE_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/table.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest number of rows one sort handles (row ids are 32-bit inside). */
#define QV_SORT_MAX_ROWS 4294967295LL

/** Where the nulls of a sort key go. */
typedef enum qv_null_placement {
  QV_NULLS_AT_END = 0,  /**< pyarrow "at_end" (datasets' default) */
  QV_NULLS_AT_START = 1 /**< pyarrow "at_start" */
} qv_null_placement;

/**
 * One column given as chunks: chunks[0..n_chunks) are arrays of one type,
 * logically concatenated. `type` may be NULL when n_chunks >= 1 (the first
 * chunk's type is used); with n_chunks == 0 the column has no rows. The
 * arrays are read, never retained.
 */
typedef struct qv_chunked_column {
  const qv_type *type;
  qv_array *const *chunks;
  int64_t n_chunks;
} qv_chunked_column;

/** One sort key: its column, its order and where its nulls go. */
typedef struct qv_sort_key {
  qv_chunked_column column;
  bool descending;
  qv_null_placement null_placement;
} qv_sort_key;

/**
 * Stable sort indices over `n_keys` keys (n_keys >= 1): out[0..n) receives
 * the row numbers 0..n-1 in sorted order, n being each key column's total
 * length (all keys must have the same length, QV_EARG otherwise, as must
 * every chunk's type, QV_ETYPE). `out` is caller memory of n entries; it is
 * also used as scratch space while sorting. Fails with QV_ETYPE naming the
 * key and type for a type that cannot be sorted, QV_EINVAL for an array
 * whose offsets, views or dictionary indices point outside its buffers,
 * QV_ENOTSUP beyond QV_SORT_MAX_ROWS rows, QV_ENOMEM when working memory
 * (about 9 bytes per row per key plus 8 per row, the 8 not needed for a
 * single key whose value range and row numbers fit in 64 bits together,
 * e.g. any float32 or 32-bit integer key; 8 more per word for
 * decimal128/256 and wide fixed_size_binary keys) is not available.
 *
 * Single keys use a stable radix sort (least significant digit first; a
 * key whose value range and row numbers fit in 64 bits is sorted as one
 * word per row, others as (key, row) pairs after a most-significant-digit
 * split for large inputs) of
 * order-preserving 64-bit transforms of the values: integers and temporal
 * values with the sign bit flipped, floats with their sign-magnitude bits
 * turned into an unsigned order, wide decimals and fixed-size binaries as
 * several 64-bit words, strings as 7-byte big-endian prefixes plus a
 * length marker (equal prefixes of longer strings are sorted again on the
 * next 7 bytes), dictionaries as the rank of their decoded value. Several
 * keys: the first key is sorted over all rows, then each run of equal
 * values is sorted by the next key (small runs with a comparator over all
 * remaining keys); docs/design.md has the measurements behind the choice.
 * Single-threaded; concurrent calls on shared arrays are safe.
 */
QV_API qv_status qv_sort_indices(const qv_sort_key *keys, int32_t n_keys, int64_t *out,
                                 qv_error *err) QV_NODISCARD;

/** qv_sort_indices over one array: out receives a->length entries. */
QV_API qv_status qv_sort_indices_array(qv_array *a, bool descending,
                                       qv_null_placement null_placement, int64_t *out,
                                       qv_error *err) QV_NODISCARD;

/** A sort key naming a table column. */
typedef struct qv_sort_spec {
  const char *column; /**< column name (the first column of that name) */
  bool descending;
  qv_null_placement null_placement;
} qv_sort_spec;

/**
 * Sort indices of a table's rows by the named columns (pyarrow
 * `pc.sort_indices(table, sort_keys=...)`): out receives num_rows entries.
 * An unknown column is QV_EARG naming it. Decodes every batch (errors of a
 * mapped table's batches surface here).
 */
QV_API qv_status qv_table_sort_indices(qv_table *t, const qv_sort_spec *specs, int32_t n_specs,
                                       int64_t *out, qv_error *err) QV_NODISCARD;

/**
 * Distinct values of a column in order of first appearance (pyarrow
 * `unique`), as a new array of the column's type (dictionary columns give a
 * dictionary array whose values are the distinct values' values; the null
 * value, when present, is a null slot at its place). Caller owns *out.
 * Same type rules as qv_grouper_new.
 */
QV_API qv_status qv_unique(const qv_chunked_column *column, qv_array **out,
                           qv_error *err) QV_NODISCARD;

/** qv_unique over a table column named `column` (QV_EARG if unknown). */
QV_API qv_status qv_table_unique(qv_table *t, const char *column, qv_array **out,
                                 qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Grouper                                                                   */

/** Group id returned by qv_grouper_lookup for keys not seen before. */
#define QV_GROUP_NONE UINT32_MAX

typedef struct qv_grouper qv_grouper;

/**
 * A grouper over keys of the given types (n_keys >= 1; the types are
 * referenced, not copied). Key types: anything the row table stores
 * (qv_row_column_meta_from_type: null, bool, fixed-width, binary/string
 * and large variants) plus binary/string views (compared by their bytes)
 * and dictionaries (grouped by decoded value, across dictionaries; value
 * types as above). Other types are QV_ETYPE. Free with qv_grouper_free.
 * Not thread-safe.
 */
QV_API qv_status qv_grouper_new(qv_type *const *key_types, int32_t n_keys, qv_grouper **out,
                                qv_error *err) QV_NODISCARD;

/** Free a grouper. NULL-safe. */
QV_API void qv_grouper_free(qv_grouper *g);

/**
 * Assign group ids to the rows of one batch of keys: n_keys arrays of the
 * grouper's types (QV_ETYPE otherwise) and equal length n (QV_EARG
 * otherwise). out_ids[i] (caller memory, n entries) receives row i's
 * group: an existing group's id when its key was seen before, in this
 * batch or an earlier one, else the next new id. Keys are equal when every
 * column is equal by bytes (floats bitwise), NULL equal to NULL. The arrays
 * must be valid at QV_VALIDATE_DEFAULT (what the reader returns); views and
 * dictionary indices are still checked as they are read (QV_EINVAL).
 * Fails with QV_ERANGE when the number of groups would reach
 * QV_GROUP_NONE. After a failure the grouper may hold part of the batch's
 * groups; free it rather than use it further.
 */
QV_API qv_status qv_grouper_consume(qv_grouper *g, qv_array *const *keys, uint32_t *out_ids,
                                    qv_error *err) QV_NODISCARD;

/** Like qv_grouper_consume without adding groups: keys never seen get
 *  QV_GROUP_NONE. */
QV_API qv_status qv_grouper_lookup(qv_grouper *g, qv_array *const *keys, uint32_t *out_ids,
                                   qv_error *err) QV_NODISCARD;

/** Number of groups so far. */
QV_API int64_t qv_grouper_num_groups(const qv_grouper *g);

/**
 * The key of every group, in group-id order: out[j] (n_keys entries)
 * receives a new array of key column j's type, one row per group.
 * Dictionary keys come back as dictionary<values=V, indices=int32> over the
 * distinct values seen. Caller owns the arrays; on failure out[] is NULL.
 */
QV_API qv_status qv_grouper_uniques(qv_grouper *g, qv_array **out, qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Group-by with aggregates (groupby.c, aggregate.c, groupby_expr.c)        */

/** Aggregate functions. Result types follow DuckDB (docs/compute.md). */
typedef enum qv_agg_kind {
  QV_AGG_COUNT_ALL = 0,  /**< count(*): rows of the group, int64 */
  QV_AGG_COUNT,          /**< count(x): non-null values, int64 */
  QV_AGG_COUNT_DISTINCT, /**< distinct non-null values, int64 */
  QV_AGG_SUM,            /**< int64 for integer/bool input (overflow is QV_ERANGE),
                             double for floats; null when no value */
  QV_AGG_MEAN,           /**< double */
  QV_AGG_MIN,            /**< the input type (NaN greatest, as DuckDB) */
  QV_AGG_MAX,            /**< the input type */
  QV_AGG_FIRST,          /**< the group's first value, null or not */
  QV_AGG_LAST,           /**< the group's last value, null or not */
  QV_AGG_VAR,            /**< sample variance, double (null below 2 values) */
  QV_AGG_VAR_POP,        /**< population variance, double */
  QV_AGG_STDDEV,         /**< sample standard deviation, double */
  QV_AGG_STDDEV_POP,     /**< population standard deviation, double */
  QV_AGG_MEDIAN,         /**< quantile_cont(x, 0.5), double */
  QV_AGG_QUANTILE,       /**< DuckDB quantile_cont(x, q), exact, double */
  QV_AGG_TOP_K,          /**< list of the k largest values, largest first */
  QV_AGG_BOTTOM_K,       /**< list of the k smallest values, smallest first */
  QV_AGG_CORR,           /**< Pearson correlation of (x, y) pairs, double */
  QV_AGG_COVAR,          /**< sample covariance, double */
  QV_AGG_COVAR_POP,      /**< population covariance, double */
  QV_AGG_ANY,            /**< bool_or over a bool column */
  QV_AGG_ALL,            /**< bool_and over a bool column */
  QV_AGG_LIST,           /**< list of the group's values (nulls included) in row order */
  QV_AGG_KIND_COUNT
} qv_agg_kind;

/** One aggregate of a group-by. */
typedef struct qv_aggregate {
  qv_agg_kind kind;
  const char *column;  /**< input column (NULL for count(*)) */
  const char *column2; /**< second input of corr / covar / covar_pop */
  double q;            /**< quantile: 0 <= q <= 1 */
  int64_t k;           /**< top_k / bottom_k: k >= 1 */
  const char *name;    /**< output column name (NULL: the canonical text, "sum(v1)") */
} qv_aggregate;

/** What a group-by's spilling did (qv_group_by_options.spill_stats). */
typedef struct qv_spill_stats {
  bool spilled;               /**< the partitioned plan ran */
  int32_t fanout;             /**< partitions of the first pass */
  int32_t depth;              /**< levels of partitioning (1: no partition split again) */
  int64_t files;              /**< partition files written */
  int64_t bytes_written;      /**< array bytes written to them */
  int64_t partitions_grouped; /**< partitions grouped in memory */
} qv_spill_stats;

/** Options of a group-by (zero-initialised: first-appearance order, a
 *  budget of a quarter of physical memory, spills under $TMPDIR). */
typedef struct qv_group_by_options {
  bool sort; /**< order the output by the keys (ascending, nulls last) */
  /** Working-memory budget of the group state in bytes: 0 = a quarter of
   *  physical memory, < 0 = no bound. When the state would pass it, the
   *  group-by spills: rows are partitioned by key hash into temporary Arrow
   *  IPC files, grouped partition by partition (docs/compute.md, "Beyond
   *  memory"); the result is the same as in memory. */
  int64_t memory_limit;
  /** Called after each batch with the rows done and the total (may be NULL). */
  void (*progress)(void *ctx, int64_t rows_done, int64_t rows_total);
  void *progress_ctx;
  /** Threads (0: every core for tables of 64 Ki rows or more, one below;
   *  1: one thread; n > 1: n threads and the parallel paths even for a
   *  small table, as the tests force it). The groups, their order and
   *  every exact result do not depend on it; float sums, means, variances
   *  and correlations of the pre-aggregation (few groups, mergeable
   *  aggregates; docs/compute.md) add partial sums per range of batches
   *  and may differ from one thread's in the last bits. */
  int32_t threads;
  /** Directory under which spilling makes its private directory (NULL:
   *  $TMPDIR, else /tmp). Borrowed for the call. */
  const char *temp_directory;
  /** When not NULL, receives what spilling did (zeroed when it did not). */
  qv_spill_stats *spill_stats;
} qv_group_by_options;

/** Name of an aggregate kind as the expression language spells it
 *  ("count", "sum", "top_k"...); "?" when out of range. Static storage. */
QV_API const char *qv_agg_kind_name(qv_agg_kind kind);

/**
 * Group the rows of `t` by the key columns `keys[0..n_keys)` (n_keys >= 0;
 * 0 gives one group over the whole table, as SQL without GROUP BY, even
 * when the table is empty) and compute `aggs[0..n_aggs)` per group. *out
 * receives a new in-memory table (one reference, the caller's): the keys
 * under their names (dictionary keys as dictionary<int32> over the values
 * seen), then each aggregate under its name, one row per group, in order
 * of first appearance or sorted by the keys (opts->sort). Keys: any type
 * qv_grouper_new takes; nulls form a group. Errors (the table is not
 * changed; *out untouched): an unknown column is QV_EARG naming it with
 * the closest name ("did you mean 'id1'?"); an aggregate undefined for the
 * column's type (sum of strings) or a key type the row table cannot store
 * QV_ETYPE naming the aggregate; an integer sum beyond int64 QV_ERANGE
 * naming the aggregate and the group's row; QV_ENOMEM when even a
 * partition of rows that cannot be split further (one group) passes
 * opts->memory_limit; QV_EIO when a spill file cannot be written (the
 * message names the directory). `opts` may be NULL. Past the memory budget
 * the rows are spilled to temporary files, grouped partition by partition
 * and merged back in first-appearance order, so the result is the
 * in-memory run's; the temporary directory is removed before the call
 * returns, on success and on failure. Mapped tables are decoded batch by
 * batch; the decoded columns of the keys and inputs are held until the
 * call returns. The table is only read (concurrent calls are safe).
 */
QV_API qv_status qv_table_group_by(qv_table *t, const char *const *keys, int32_t n_keys,
                                   const qv_aggregate *aggs, int32_t n_aggs,
                                   const qv_group_by_options *opts, qv_table **out,
                                   qv_error *err) QV_NODISCARD;

/**
 * Parse one aggregate call's text ("sum(v1)", "quantile(v3, 0.9)",
 * "top_k(v3, 2)", "count(*)", "corr(v1, v2)") into *out (strings point
 * into `text`'s copy kept in `storage`, a caller buffer of at least
 * strlen(text) + 1 bytes that must outlive *out). QV_EARG with the reason
 * when it is not one aggregate call. Used by qv_table_group_by_exprs.
 */
QV_API qv_status qv_aggregate_parse(const char *text, char *storage, qv_aggregate *out,
                                    qv_error *err) QV_NODISCARD;

/**
 * Group-by with aggregate expressions: each of `exprs[0..n_exprs)` is
 * "EXPR [AS NAME]" where EXPR is the expression language
 * (docs/expressions.md) over aggregate calls and key columns:
 * "max(v1) - min(v2) AS range_v1_v2", "corr(v1, v2) * corr(v1, v2)",
 * "count(*)". A bare aggregate call keeps the aggregate's result type;
 * any other expression is evaluated over the aggregated rows and has the
 * expression's type. Without AS the name is EXPR as written (trimmed).
 * A column argument of a call may itself be a scalar expression over the
 * table's columns ("sum(a * b)", "max(length(s))", "count(if(x > 0, 1,
 * null))"): it is evaluated batch by batch (every column of a batch is
 * decoded for it) and aggregated as a column.
 * Errors as qv_table_group_by, plus QV_EINVAL / QV_ETYPE from the
 * expression language and QV_EARG for a malformed text, each prefixed with
 * "aggregate N ('TEXT'): ". Ownership as qv_table_group_by.
 */
QV_API qv_status qv_table_group_by_exprs(qv_table *t, const char *const *keys, int32_t n_keys,
                                         const char *const *exprs, int32_t n_exprs,
                                         const qv_group_by_options *opts, qv_table **out,
                                         qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Hash join, distinct rows, value counts (join.c, distinct.c)               */

/** Join types, as SQL's (semi/anti: left rows with / without a match). */
typedef enum qv_join_type {
  QV_JOIN_INNER = 0,
  QV_JOIN_LEFT = 1,
  QV_JOIN_RIGHT = 2,
  QV_JOIN_FULL = 3,
  QV_JOIN_SEMI = 4,
  QV_JOIN_ANTI = 5
} qv_join_type;

/** Which side the hash table is built over. */
typedef enum qv_join_build {
  QV_JOIN_BUILD_AUTO = 0, /**< the side with fewer rows (right on ties) */
  QV_JOIN_BUILD_LEFT = 1,
  QV_JOIN_BUILD_RIGHT = 2
} qv_join_build;

/** Options of a join; zero-initialise, then set at least the keys. */
typedef struct qv_join_options {
  qv_join_type how;
  /** Key column names of the left table (n_keys >= 1 entries). */
  const char *const *left_on;
  /** Key column names of the right table, n_keys entries (NULL: left_on). */
  const char *const *right_on;
  int32_t n_keys;
  /** Appended to the names of left / right payload columns whose names
   *  clash (NULL: "" and "_right"). */
  const char *left_suffix;
  const char *right_suffix;
  qv_join_build build;
  /** Working-memory budget in bytes for the build side's hash state
   *  (about 24 bytes a build row plus its keys): past it the join runs as
   *  a grace hash join, both sides' keys and row numbers partitioned to
   *  temporary Arrow IPC files and joined partition by partition, with the
   *  same output, pair for pair. 0: a quarter of physical memory; < 0: no
   *  bound (always in memory). The row pairs and the output table stay in
   *  memory either way. */
  int64_t memory_limit;
  /** Where the partition files go (a private 0700 directory
   *  `quiver-join-<pid>...` made there and removed on success and
   *  failure); NULL: $TMPDIR, else /tmp. */
  const char *temp_directory;
} qv_join_options;

/** Parse "inner", "left", "right", "full" (or "outer"), "semi", "anti";
 *  false for anything else. */
QV_API bool qv_join_type_parse(const char *name, qv_join_type *out);

/** Name of a join type ("inner", ...). */
QV_API const char *qv_join_type_name(qv_join_type how);

/**
 * The matching row pairs of a hash join of `left` and `right` (the tables
 * are read, not retained): *out_left[i] and *out_right[i] are row numbers
 * of output row i in the left and right table, -1 where the row has no
 * partner (outer joins). For semi / anti joins *out_right is NULL and
 * *out_left lists the kept left rows in left order. The arrays are
 * malloc'ed and owned by the caller (free()); *out_n receives their
 * length. On failure the outputs are NULL / 0.
 *
 * Keys: opts->n_keys pairs of columns. The two columns of a pair are
 * unified before hashing: dictionaries are decoded to their values;
 * integers of different types become int64 (uint64 when both are
 * unsigned; an unsigned value above INT64_MAX is then QV_ERANGE); integers
 * and floats mixed, and half floats, become double; string / large_string
 * / string_view become large_string, binary variants (or a string and a
 * binary) large_binary; the null type takes the other column's type.
 * Other pairs must have equal types (QV_ETYPE naming both columns and
 * types). A NULL in any key column never matches (SQL); NaN matches NaN
 * and -0.0 matches 0.0 (DuckDB's equality). An unknown column is QV_EARG
 * naming it, with a "did you mean" suggestion.
 *
 * Engine: the build side's keys go through a qv_grouper (row-table
 * encoding, minibatches of 4096, swiss table); each build row's group id
 * is stored and the rows of each group listed in build order; the probe
 * side is looked up with qv_grouper_lookup.
 *
 * Order of the output (deterministic; DuckDB's is unspecified): pairs in
 * the probe side's row order, each probe row's matches in build-side row
 * order; a probe row without a match (left join with the left as probe,
 * ...) in its place; then the build rows without a match, in build order,
 * when the join keeps them. The probe side is the side not built over
 * (opts->build; AUTO builds over the smaller side, the right on ties, so
 * an equal-sized or larger left gives left order). Semi and anti joins
 * always return left rows in left order whichever side is built over.
 * Working memory: about 16 bytes per build row plus 12 per probe row and
 * 16 per output pair. A build side whose hash state would pass
 * opts->memory_limit is joined as a grace hash join (see
 * qv_join_options.memory_limit), with the same result.
 */
QV_API qv_status qv_join_indices(qv_table *left, qv_table *right, const qv_join_options *opts,
                                 int64_t **out_left, int64_t **out_right, int64_t *out_n,
                                 qv_error *err) QV_NODISCARD;

/**
 * Hash join of two tables (qv_join_indices' rules and order) as a new
 * in-memory table the caller owns. Columns: every left column, then the
 * right's non-key columns; a right column whose name is also a left
 * column's gets right_suffix and that left column left_suffix. For right
 * and full joins the left key columns hold the right key where the left
 * row is absent (SQL's USING, pandas' merge), and have the unified key
 * type; otherwise each column keeps its type. Semi / anti: the left
 * columns only. The schema carries no metadata (field metadata is kept).
 */
QV_API qv_status qv_table_join(qv_table *left, qv_table *right, const qv_join_options *opts,
                               qv_table **out, qv_error *err) QV_NODISCARD;

/**
 * qv_table_join over rows of the tables: the rows left_rows[0..n_left_rows)
 * of `left` (NULL: every row; repeats and any order allowed, each checked
 * against the table, QV_ERANGE) joined with the rows right_rows of
 * `right`. The result equals qv_table_join over qv_table_take(left,
 * left_rows) and qv_table_take(right, right_rows), but only the key
 * columns are gathered before the join: the output columns are gathered
 * once, straight from the tables through the row lists (a dataset's
 * indices mapping: qv_dataset_join). The row lists are read, not
 * retained; *out is a new in-memory table the caller owns.
 */
QV_API qv_status qv_table_join_rows(qv_table *left, const int64_t *left_rows, int64_t n_left_rows,
                                    qv_table *right, const int64_t *right_rows,
                                    int64_t n_right_rows, const qv_join_options *opts,
                                    qv_table **out, qv_error *err) QV_NODISCARD;

/**
 * Distinct rows by the columns `on` (n_on >= 1; n_on == 0: every column):
 * the first row of each distinct key, in order of first appearance, with
 * all of the table's columns (DuckDB's DISTINCT ON keeps the first row
 * too). Keys are compared as the grouper does: by bytes (floats bitwise,
 * 0.0 and -0.0 differ, as in qv_unique), NULL equal to NULL. *out: a new
 * table the caller owns. QV_EARG for an unknown column (with a
 * suggestion), QV_ETYPE for a column the grouper cannot key on.
 */
QV_API qv_status qv_table_distinct(qv_table *t, const char *const *on, int32_t n_on, qv_table **out,
                                   qv_error *err) QV_NODISCARD;

/**
 * Value counts of a column (pyarrow's value_counts): each distinct value
 * once in order of first appearance (qv_unique's rules; null is a value
 * and is counted), *out_values of the column's type and *out_counts int64,
 * both new arrays the caller owns (NULL on failure).
 */
QV_API qv_status qv_value_counts(const qv_chunked_column *column, qv_array **out_values,
                                 qv_array **out_counts, qv_error *err) QV_NODISCARD;

/** qv_value_counts of a table column as a two-column table "values"
 *  (the column's type), "counts" (int64), the fields of pyarrow's
 *  struct. *out: a new table the caller owns. */
QV_API qv_status qv_table_value_counts(qv_table *t, const char *column, qv_table **out,
                                       qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_COMPUTE_H */
