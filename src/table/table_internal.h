/*
 * table_internal.h — the shapes behind qv_table, shared by the files of
 * src/table: mapped-file sources, lazy batch entries, transform ops and
 * replay chains, and the grid of a concatenation table. Table layer,
 * private (not installed).
 *
 *   table.c            lifetime, entries (lazy decode), batch index,
 *                      fast_slice / gather, inspection, equality
 *   table_transform.c  the transforms on entries, op construction,
 *                      dispatch by kind and replay recording
 *   table_concat.c     concatenation tables: construction (axis 0/1,
 *                      _split_both_like), per-block transforms
 *   recipe.c           recipe encoding / decoding
 *   table_export.c     Arrow C stream export
 */
#ifndef QUIVER_TABLE_INTERNAL_H
#define QUIVER_TABLE_INTERNAL_H

#include <pthread.h>

#include "quiver/ipc.h"
#include "quiver/table.h"
#include "quiver/writer.h"

/* One mapped IPC file, shared by every table and entry built on it. File
 * batches are decoded on first use (under `mu`) and cached until the
 * source is dropped, or, in a compressed file, until the reader's
 * decompression budget needs their memory: a decode that would pass the
 * budget first releases the least recently used cached batches that
 * nothing else references (`last_use`), then retries. */
typedef struct qv_tsource {
  long refcount;
  char *path;
  qv_file_identity identity;
  qv_reader *reader;
  qv_schema *schema;  /* the file's schema (reference) */
  int64_t n_batches;  /* record batches in the file */
  qv_array **decoded; /* [n_batches], NULL until decoded */
  uint64_t *last_use; /* [n_batches], tick of the last use (LRU release) */
  uint64_t tick;
  int64_t released; /* batches released for the budget (tests, stats) */
  pthread_mutex_t mu;
  /* A Parquet file (table_parquet.c) instead of an IPC one: `reader` is
   * NULL, batch i is row group i, decoded column by column on first use
   * through the formats layer's reader, with pyarrow's types. */
  qv_parquet_file *pq;
  qv_buffer *pq_map; /* the file's mapping (checked before each decode) */
} qv_tsource;

qv_tsource *qv_tsource_ref(qv_tsource *s);
void qv_tsource_unref(qv_tsource *s);

/* A column projection of a source batch: table column c is source column
 * cols[c]. Immutable, shared. */
typedef struct qv_tproj {
  long refcount;
  int32_t n;
  int32_t cols[];
} qv_tproj;

qv_tproj *qv_tproj_new(int32_t n);
qv_tproj *qv_tproj_ref(qv_tproj *p);
void qv_tproj_unref(qv_tproj *p);

/*
 * One batch of a table. Either materialised (`array`, a STRUCT array of
 * the owning table's schema type, offset 0, `length` rows) or lazy: rows
 * [offset, offset+length) of file batch `src_batch` of `src`, columns
 * `proj` (NULL: all, in file order). A lazy entry caches its array in
 * `array` (set once, atomically) when first needed; it keeps `src` so that
 * slicing and selecting stay lazy.
 */
typedef struct qv_tbatch {
  qv_array *array;
  qv_tsource *src;
  qv_tproj *proj;
  int64_t src_batch;
  int64_t offset;
  int64_t length;
} qv_tbatch;

/* ------------------------------------------------------------------------ */
/* Transform ops (what a replay step records)                                */

typedef enum qv_op_kind {
  QV_OP_SLICE = 1,
  QV_OP_TAKE = 2,
  QV_OP_FILTER = 3,
  QV_OP_SELECT = 4,
  QV_OP_RENAME = 5,
  QV_OP_CAST = 6,
  QV_OP_ADD_COLUMN = 7,
  QV_OP_SET_COLUMN = 8,
  QV_OP_COMBINE = 9
} qv_op_kind;
#define QV_OP_LAST QV_OP_COMBINE

/* An immutable, shared transform with its arguments (owned). */
typedef struct qv_top {
  long refcount;
  qv_op_kind kind;
  int64_t offset, length; /* SLICE */
  int64_t *indices;       /* TAKE */
  int64_t n_indices;
  qv_array *mask; /* FILTER: BOOL, table rows */
  int32_t *cols;  /* SELECT */
  int32_t n_cols;
  char **names; /* RENAME */
  int32_t n_names;
  qv_schema *schema; /* CAST target */
  int32_t pos;       /* ADD_COLUMN / SET_COLUMN */
  qv_field field;
  qv_array **chunks;
  int64_t n_chunks;
} qv_top;

qv_top *qv_top_new(qv_op_kind kind);
qv_top *qv_top_ref(qv_top *op);
void qv_top_unref(qv_top *op);
const char *qv_op_name(qv_op_kind kind);

/* The replay chain of a mapped table: newest step first. Shared. */
typedef struct qv_treplay {
  long refcount;
  struct qv_treplay *prev;
  qv_top *op;
} qv_treplay;

void qv_treplay_unref(qv_treplay *r);

/* ------------------------------------------------------------------------ */
/* Tables                                                                    */

/* One row of blocks of a concatenation table. Table column c is column
 * col_index[c] of block col_block[c]; every block column is used exactly
 * once (the map is a bijection), so per-block renames and casts never
 * conflict. */
typedef struct qv_trow {
  int32_t n_blocks;
  qv_table **blocks; /* IN_MEMORY or MAPPED, references */
  int32_t *col_block;
  int32_t *col_index;
  int64_t length;
} qv_trow;

struct qv_table {
  long refcount;
  qv_table_kind kind;
  qv_schema *schema;
  int64_t num_rows;
  int64_t n_batches;
  qv_tbatch *batches;
  int64_t *offsets; /* [n_batches + 1] prefix sums of batch rows */
  int64_t cap_batches;
  /* QV_TABLE_MAPPED */
  qv_tsource *src;
  qv_treplay *replays;
  int64_t n_replays;
  /* QV_TABLE_CONCAT */
  int64_t n_rows_blocks;
  qv_trow *rows;
};

/* A new empty table of `kind` over `schema` (reference taken). */
qv_table *qv_tbl_new(qv_table_kind kind, qv_schema *schema);
/* Append an entry (its references are taken over; zero-length entries are
 * released and skipped). */
qv_status qv_tbl_push(qv_table *t, qv_tbatch *e, qv_error *err);
/* Append a materialised batch (reference taken over). */
qv_status qv_tbl_push_array(qv_table *t, qv_array *batch, qv_error *err);
/* Release an entry's references. */
void qv_tbatch_reset(qv_tbatch *e);
/* A copy of an entry (references added). */
qv_tbatch qv_tbatch_copy(const qv_tbatch *e);

/* Entry i's materialised batch (decoded on first use): one new reference
 * the caller drops with qv_array_unref. Entries of compressed files do not
 * keep their array (their decompressed columns may be released for the
 * budget once no caller holds them); others cache it. */
qv_status qv_tbl_entry_array(qv_table *t, int64_t i, qv_array **out, qv_error *err);
/* Entry `e` re-expressed for a table of struct type `type` with columns
 * cols[0..n) of the entry's columns (n < 0: all, same order): lazy stays
 * lazy, a cached array is re-wrapped (zero copy). */
qv_status qv_tbatch_project(const qv_tbatch *e, qv_type *type, const int32_t *cols, int32_t n,
                            qv_tbatch *out, qv_error *err);
/* Entry rows [off, off+len) (zero copy). */
qv_status qv_tbatch_slice(const qv_tbatch *e, int64_t off, int64_t len, qv_tbatch *out,
                          qv_error *err);

/* A STRUCT array of `type` with `length` rows over `children` (references
 * taken over, each `length` long). */
qv_status qv_make_batch(qv_type *type, int64_t length, qv_array **children, int32_t n,
                        qv_array **out, qv_error *err);

/* Schema from fields (copied) and metadata (copied; may be NULL). */
qv_status qv_schema_from_fields(const qv_field *fields, int32_t n, const qv_metadata *md,
                                qv_schema **out, qv_error *err);

/* Gathers of at least qv_tbl_gather_sort_min_n rows (1 Ki) from tables of
 * at least qv_tbl_gather_sort_min_rows rows (1 Mi), in no order, run in
 * row order, each value written to its output row (table.c:
 * gather_sorted): measured faster from 1 Ki rows of a 1M-row table up;
 * slower on tables that fit the caches. Variables so that tests can
 * change them. */
extern int64_t qv_tbl_gather_sort_min_n;
extern int64_t qv_tbl_gather_sort_min_rows;

/* Batch containing `row` (0 <= row < num_rows) by interpolation search. */
int64_t qv_tbl_find_batch(const qv_table *t, int64_t row);

/* A mapped table over a whole source (no replays). */
qv_status qv_tbl_from_source(qv_tsource *src, qv_table **out, qv_error *err);
/* Open a source: map `path`, check it against `expect` when not NULL
 * (QV_ECHANGED), open the reader. */
qv_status qv_tsource_open(const char *path, const qv_read_options *opts,
                          const qv_file_identity *expect, qv_tsource **out, qv_error *err);

/* Parquet sources (table_parquet.c). Open the Parquet file mapped in `map`
 * (a reference is taken) into `s` (pq, schema, n_batches). QV_ENOTSUP when
 * its stored ARROW:schema asks for dictionary columns (one dictionary
 * across row groups needs the whole file: qv_table_read_parquet). */
qv_status qv_tsource_open_parquet(qv_tsource *s, qv_buffer *map, const char *path, qv_error *err);
/* Rows of row group i. */
int64_t qv_tsource_parquet_rows(const qv_tsource *s, int64_t i);
/* Fill the missing columns among cols[0..n) (NULL: all) of s->decoded[i]
 * (created on first use). Called with s->mu held. */
qv_status qv_tsource_parquet_batch(qv_tsource *s, int64_t i, const int32_t *cols, int32_t n,
                                   qv_error *err);

/* Apply an op (borrowed) to any table, recording it on mapped tables. */
qv_status qv_tbl_apply(qv_table *t, qv_top *op, qv_table **out, qv_error *err);
/* The op's effect on a table's data only: new schema and entries, as a
 * table of `kind` (no replay recorded). */
qv_status qv_tbl_apply_data(qv_table *t, qv_top *op, qv_table_kind kind, qv_table **out,
                            qv_error *err);
/* The op applied to a concatenation table (table_concat.c). */
qv_status qv_concat_apply(qv_table *t, qv_top *op, qv_table **out, qv_error *err);

/* Build a concatenation table from rows (taken over, `rows` freed) and
 * schema metadata (copied). */
qv_status qv_concat_build(qv_trow *rows, int64_t n_rows, const qv_metadata *md, qv_table **out,
                          qv_error *err);
void qv_trow_reset(qv_trow *r);

/* Sum of chunk lengths. */
int64_t qv_chunks_length(qv_array *const *chunks, int64_t n);
/* Rows [off, off+len) of a chunked column as one array: a slice of one
 * chunk when possible, else the pieces concatenated. */
qv_status qv_chunks_range(qv_array *const *chunks, int64_t n, int64_t off, int64_t len,
                          qv_type *type, qv_array **out, qv_error *err);

/* Write batches through a writer that `open` creates for the schema with
 * dictionary ids renumbered (table_export.c); closes or aborts it. */
typedef qv_status (*qv_writer_open_fn)(void *ctx, const qv_schema *schema,
                                       const qv_write_options *options, qv_writer **out,
                                       qv_error *err);
qv_status qv_tbl_write_batches(qv_writer_open_fn open, void *ctx, const qv_schema *schema,
                               qv_array *const *batches, int64_t n, const qv_write_options *options,
                               qv_error *err);

/* Arrow IPC stream bytes of a schema + batches (malloc'ed). */
qv_status qv_ipc_stream_bytes(const qv_schema *schema, qv_array *const *batches, int64_t n,
                              uint8_t **out, int64_t *out_len, qv_error *err);

#endif /* QUIVER_TABLE_INTERNAL_H */
