/*
 * dataset_internal.h — the shape behind qv_dataset and the helpers shared
 * by the files of the Dataset object (dataset layer, private):
 *
 *   dataset.c        lifetime, opening, inspection, row access, iteration,
 *                    cache files, feature-tree helpers
 *   dataset_index.c  indices mappings: building (in memory or written to a
 *                    cache file), reopening, reading values, composing
 *   dataset_ops.c    select / shuffle / shard / split / filter / flatten /
 *                    concatenate and the column transforms
 *   dataset_sort.c   sort (and unique) over the rows as mapped
 *   dataset_map.c    map, single process and worker processes
 *   dataset_map_exprs.c  map with expressions (quiver.map_set@1)
 *   dataset_save.c   save_to_disk (Dataset and DatasetDict layouts)
 *   dataset_sink.c   the row sink (memory or cache file) of map, indices
 *                    and written rows
 */
#ifndef QUIVER_DATASET_INTERNAL_H
#define QUIVER_DATASET_INTERNAL_H

#include "quiver/dataset.h"

struct qv_dataset {
  long refcount;
  qv_table *data;    /* reference */
  qv_table *indices; /* reference or NULL */
  char fingerprint[QV_FINGERPRINT_SIZE];
  qv_hf_feature *features; /* owned QV_HF_DICT, one key per column */
  char *info_json;         /* dataset_info.json text (NULL: a fresh info) */
  char *split;             /* NULL for None */
  /* output format (state.json) */
  char *format_type;   /* NULL for None */
  char *format_kwargs; /* compact JSON object text, never NULL */
  bool has_format_columns;
  int32_t n_format_columns;
  char **format_columns;
  bool output_all_columns;
};

/* ---------------------------------------------------------------- meta -- */

/* strdup that reports failure as NULL (NULL in, NULL out). */
char *qv_ds_strdup(const char *s);
/* dataset_text.c: whether `path` ends in `suffix` (ASCII case ignored).
 * CSV / JSON Lines files open through qv_table_open_text (quiver/dataset.h):
 * converted once, streaming, into a cached Arrow file that is mapped. */
bool qv_ds_has_suffix(const char *path, const char *suffix);

/* A new dataset over `data` and `indices` (references taken when not NULL)
 * with fingerprint `fp` and features `features` (taken over), copying
 * info, split and format from `meta` (may be NULL: fresh). On failure the
 * taken features are freed. */
qv_status qv_ds_new(qv_table *data, qv_table *indices, const char *fp, qv_hf_feature *features,
                    const qv_dataset *meta, qv_dataset **out, qv_error *err);

/* The same dataset with another data table / indices / fingerprint; the
 * features are copied from `ds` unless `features` (taken over) is given. */
qv_status qv_ds_derive(const qv_dataset *ds, qv_table *data, qv_table *indices, const char *fp,
                       qv_hf_feature *features, qv_dataset **out, qv_error *err);

/* Fingerprint of a transform: opts->new_fingerprint when given (validated),
 * else qv_fingerprint_update(ds's, transform, args). */
qv_status qv_ds_fingerprint(const qv_dataset *ds, const qv_dataset_options *opts,
                            const char *transform, const qv_fingerprint_args *args,
                            char out[QV_FINGERPRINT_SIZE], qv_error *err);

/* Digest of a whole argument set as a 16-hex string (for nesting a
 * caller's params into a transform's arguments). */
qv_status qv_ds_args_digest(const qv_fingerprint_args *args, char out[QV_FINGERPRINT_SIZE],
                            qv_error *err);

/* ------------------------------------------------------------ features -- */

/* A QV_HF_DICT holding copies of the children `idx[0..n)` of `dict`, keyed
 * by `names` (NULL: the original keys). NULL on allocation failure. */
qv_hf_feature *qv_ds_features_pick(const qv_hf_feature *dict, const int32_t *idx, int32_t n,
                                   const char *const *names);
/* Append key `name` with `feature` (taken over) to a QV_HF_DICT. */
qv_status qv_ds_features_append(qv_hf_feature *dict, const char *name, qv_hf_feature *feature,
                                qv_error *err);
/* Features for the columns of `schema`: the feature of the same-named key
 * of `like` when its implied Arrow type equals the column's, else derived
 * from the column's type. */
qv_status qv_ds_features_for_schema(const qv_schema *schema, const qv_hf_feature *like,
                                    qv_hf_feature **out, qv_error *err);
/* The schema files written for `ds` carry: the data table's columns and the
 * schema metadata "huggingface" = {"info": {"features": F}, "fingerprint":
 * fp} (fp may be NULL). */
qv_status qv_ds_file_schema(const qv_schema *data_schema, const qv_hf_feature *features,
                            const char *fp, qv_schema **out, qv_error *err);

/* -------------------------------------------------------------- batches -- */

/* A STRUCT array of `type` (offset 0, no validity) over `children` (taken
 * over, each `length` rows). */
qv_status qv_ds_make_struct(qv_type *type, int64_t length, qv_array **children, int32_t n,
                            qv_array **out, qv_error *err);
/* Rows [off, off+len) of a STRUCT batch as a new STRUCT array whose
 * children are sliced (offset 0 at the top). */
qv_status qv_ds_struct_slice(const qv_array *batch, int64_t off, int64_t len, qv_array **out,
                             qv_error *err);

/* ---------------------------------------------------------- cache files -- */

/* Directory of the first cache file (malloc'ed), or NULL (with QV_OK) when
 * the dataset is not file-backed. */
qv_status qv_ds_cache_dir(const qv_dataset *ds, char **out, qv_error *err);
/* Path of the cache file a transform writes: opts->cache_file_name, else
 * `<cache dir>/cache-<fp><suffix>.arrow` (suffix may be NULL), else NULL
 * (not file-backed, or keep_in_memory). QV_EARG for keep_in_memory with a
 * cache file name. */
qv_status qv_ds_cache_path(const qv_dataset *ds, const qv_dataset_options *opts, const char *fp,
                           const char *suffix, char **out, qv_error *err);
bool qv_ds_file_exists(const char *path);
/* Whether the existing cache file `path` may be reused: false when it is
 * missing, and when it is damaged (truncated — no end-of-stream marker or
 * footer — or refused by the reader as invalid data): then it is moved
 * aside to `<path>.corrupt-<unix time>` (removed if that fails) with a
 * warning naming it and what is wrong, and the caller rebuilds it. */
bool qv_ds_cache_reusable(const char *path);
/* A warning through qv_dataset_set_warning_handler's handler. */
void qv_ds_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Dataset.from_file: the file at `path` as it is; `table` is that file
 * already mapped (borrowed; NULL: opened here). Errors name the path. */
qv_status qv_ds_open_file(const char *path, qv_table *table, qv_dataset **out, qv_error *err);
/* A Dataset directory, a DatasetDict split or a builder split (its error,
 * if it has one); errors name its directory. */
qv_status qv_ds_open_split(const qv_hf_split *sp, qv_dataset **out, qv_error *err);
/* Append "split 'a' (3 rows), file 'b.arrow' (5 rows)" for the sources
 * idx[0..n) of d (all of them in order when idx is NULL). */
void qv_ds_list_sources(const qv_hf_dir *d, const int64_t *idx, int64_t n, qv_strbuf *sb);

/* ------------------------------------------------------------- indices -- */

/* An indices mapping over the uint64 (or int64, non-negative) array
 * `values` (a reference is taken): written to `path` (atomically; stream
 * format, writer_batch_size rows per batch, the `huggingface` metadata with
 * fingerprint `fp`) and mapped back, or, when path is NULL, an in-memory
 * table. */
qv_status qv_ds_indices_build(qv_array *values, const char *path, const char *fp,
                              int64_t writer_batch_size, qv_table **out, qv_error *err);
/* An int64 array over `buf` (reference taken), n values, as indices. */
qv_status qv_ds_indices_array(qv_buffer *buf, int64_t n, qv_array **out, qv_error *err);
/* Check that `t` (the mapped file `path`) is an indices mapping: one
 * unsigned 64-bit column "indices" (QV_EINVAL otherwise); expected_rows
 * >= 0 is checked. */
qv_status qv_ds_indices_check(const char *path, qv_table *t, int64_t expected_rows, qv_error *err);
/* One pass over an indices table: nulls fail (naming the row); with
 * bound >= 0 the first value >= bound fails; *out_max gets the largest
 * value (-1 when empty, INT64_MAX when >= 2^63). */
qv_status qv_ds_indices_scan(qv_table *t, const char *path, int64_t bound, int64_t *out_max,
                             qv_error *err);
/* qv_dataset_with_indices_file over `t`, the file `path` already mapped
 * and checked (qv_ds_indices_check); `max` is its largest value when
 * `scanned` (nulls refused already), else it is scanned here. */
qv_status qv_ds_with_indices_table(qv_dataset *data, const char *path, qv_table *t, bool scanned,
                                   int64_t max, qv_dataset **out, qv_error *err);
/* The sources of `dir` with more rows than `max` (all of them for -1):
 * *out (free()) their indices, *out_n their number. */
qv_status qv_ds_indices_fit(const qv_hf_dir *dir, int64_t max, int64_t **out, int64_t *out_n,
                            qv_error *err);
/* Open an indices cache file: one unsigned 64-bit column "indices"
 * (QV_EINVAL otherwise); expected_rows >= 0 is checked. */
qv_status qv_ds_indices_open(const char *path, int64_t expected_rows, qv_table **out,
                             qv_error *err);
/* The mapping's values at rows[0..n) of `ds` (rows checked against
 * num_rows), composed: out[i] = data row behind dataset row rows[i].
 * Returns a UINT64 array (new). Without a mapping, the rows themselves. */
qv_status qv_ds_compose(const qv_dataset *ds, const int64_t *rows, int64_t n, qv_array **out,
                        qv_error *err);
/* A dataset equal to `ds` but with mapping `indices` (reference taken) and
 * fingerprint fp. */
qv_status qv_ds_with_indices(const qv_dataset *ds, qv_table *indices, const char *fp,
                             qv_dataset **out, qv_error *err);
/* Select with a precomputed fingerprint (the shared body of select,
 * shuffle, shard, split, sort). `path` is where a new mapping is written
 * (NULL: memory). */
qv_status qv_ds_select_fp(qv_dataset *ds, const int64_t *indices, int64_t n, const char *fp,
                          const char *path, int64_t writer_batch_size, qv_dataset **out,
                          qv_error *err);
/* qv_ds_select_fp of the n int64 values at `offset` of heap buffer `buf`,
 * shared (not copied) when they become the mapping as they are. */
qv_status qv_ds_select_buf(qv_dataset *ds, qv_buffer *buf, int64_t offset, int64_t n,
                           const char *fp, const char *path, int64_t writer_batch_size,
                           qv_dataset **out, qv_error *err);
/* Contiguous select with a precomputed fingerprint. */
qv_status qv_ds_select_contiguous(qv_dataset *ds, int64_t start, int64_t length, const char *fp,
                                  qv_dataset **out, qv_error *err);

/* The columns cols[0..n) of ds's data over the rows as mapped: zero copy
 * without a mapping, gathered into memory with one. *out: new reference. */
qv_status qv_ds_mapped_columns(qv_dataset *ds, const int32_t *cols, int32_t n, qv_table **out,
                               qv_error *err);
/* Append "'a', 'b', ..." (the dataset's column names, as datasets' error
 * messages list them) to sb. */
void qv_ds_column_list(const qv_dataset *ds, qv_strbuf *sb);

/* ---------------------------------------------------------------- sink -- */

/* The one "memory or cache file" row sink (dataset_sink.c): map outputs,
 * indices mappings, written rows. */
typedef struct qv_ds_sink qv_ds_sink;
/* Rows of `schema` (a reference is taken; the file schema) go to `path`, an
 * IPC stream written atomically in record batches of at most `batch_rows`
 * rows (0: QV_DATASET_WRITER_BATCH_SIZE), or, when path is NULL, are kept
 * in memory as pushed. With `gather`, pushes are buffered until they hold
 * batch_rows rows and written as one (map's small outputs); without, each
 * push is written as it comes (split by the writer). */
qv_status qv_ds_sink_open(const char *path, const qv_schema *schema, int64_t batch_rows,
                          bool gather, qv_ds_sink **out, qv_error *err);
/* Push one STRUCT batch of the schema's type (the reference is taken over,
 * also on failure). After a failure only qv_ds_sink_abort may follow. */
qv_status qv_ds_sink_push(qv_ds_sink *s, qv_array *batch, qv_error *err);
/* Write what is gathered, commit the file and map it back into *out (the
 * file's table), or make the in-memory table of every pushed batch.
 * `out` may be NULL for a file (commit only). Frees the sink in every case
 * (on failure the temporary is removed, the target untouched). */
qv_status qv_ds_sink_finish(qv_ds_sink *s, qv_table **out, qv_error *err);
/* Abandon: remove the temporary, free. NULL-safe. */
void qv_ds_sink_abort(qv_ds_sink *s);

/* ------------------------------------------------------------ flatten -- */

/* Write the rows of `ds` (as mapped) to `path` (NULL: an in-memory table)
 * with schema `schema` (the file schema), windows of `window` rows. */
qv_status qv_ds_write_rows(qv_dataset *ds, const char *path, const qv_schema *schema,
                           int64_t writer_batch_size, qv_progress_fn progress, void *progress_ctx,
                           const char *what, qv_table **out_table, qv_error *err);
/* flatten_indices with explicit options (used by concatenate/add_column). */
qv_status qv_ds_flatten(qv_dataset *ds, const qv_dataset_options *opts, qv_dataset **out,
                        qv_error *err);
/* A dataset over a data file (mapped) written for `like`: features and
 * meta copied from `like`, fingerprint fp. */
qv_status qv_ds_from_written(const qv_dataset *like, qv_table *data, const char *fp,
                             qv_hf_feature *features, qv_dataset **out, qv_error *err);

#endif /* QUIVER_DATASET_INTERNAL_H */
