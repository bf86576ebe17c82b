/*
 * quiver/table.h — tables: a schema plus an ordered list of record batches
 * (STRUCT arrays whose children are the columns), in three kinds behind
 * one interface, as Hugging Face `datasets` has them (table.py):
 *
 *  - in memory: batches own (or share) heap buffers;
 *  - memory-mapped: the batches of an Arrow IPC file (stream or file
 *    format) plus the list of transforms ("replays") applied since it was
 *    opened. Buffers are views into the mapping. Batches are decoded and
 *    validated lazily, the first time an operation needs their values, so
 *    opening, slicing and selecting columns cost O(metadata);
 *  - concatenation: a 2-D grid of in-memory / mapped blocks: rows of blocks
 *    stacked vertically, the blocks of one row side by side (their columns
 *    appended). Nothing is copied; each block keeps its kind, and
 *    transforms are applied block by block where that is possible.
 *
 * Every transform returns a new table and leaves its input unchanged;
 * the result has the input's kind (a mapped table records the transform as
 * a replay step; a concatenation table transforms its blocks), except
 * where noted. Tables are immutable and reference-counted; copying a table
 * (qv_table_ref) or transforming it shares buffers, never copies data that
 * the transform does not change.
 *
 * A table serialises to a compact "recipe" (qv_table_recipe): mapped parts
 * as path + file identity + replays, in-memory parts inline as Arrow IPC
 * stream bytes. qv_table_from_recipe rebuilds it, in any process.
 *
 * Row access: fast_slice finds the first and last batch of a range by
 * interpolation search over the batch row offsets and slices only those
 * two; gather resolves every index to (batch, row) in one pass and gathers
 * each column with the qv_array_take_chunked engine, never one slice per
 * row and never concatenating a column first. Large gathers in no order
 * from large tables read the rows in file order (indices radix-sorted) and
 * write each value to its output row, on two threads (docs/design.md).
 *
 * Invariants: batches hold no zero-length entries (an empty table has 0
 * batches); every batch has offset 0, no validity, and the table schema's
 * STRUCT type. The table layer; sits on ipc and core.
 */
#ifndef QUIVER_TABLE_H
#define QUIVER_TABLE_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/csv.h"
#include "quiver/ipc.h"
#include "quiver/jsonl.h"
#include "quiver/parquet.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ArrowArrayStream;

typedef struct qv_table qv_table;

typedef enum qv_table_kind {
  QV_TABLE_IN_MEMORY = 0,
  QV_TABLE_MAPPED = 1,
  QV_TABLE_CONCAT = 2
} qv_table_kind;

/* ------------------------------------------------------------------------ */
/* Construction and lifetime                                                 */

/**
 * An in-memory table of `schema` (a reference is taken) over `n` record
 * batches (references taken; the caller keeps its own). Each batch must be
 * a STRUCT array whose type equals the schema's (ignoring metadata;
 * QV_ETYPE otherwise) without nulls at the top level (QV_EARG). Sliced
 * batches are accepted; zero-length batches are dropped.
 */
QV_API qv_status qv_table_from_batches(const qv_schema *schema, qv_array *const *batches, int64_t n,
                                       qv_table **out, qv_error *err) QV_NODISCARD;

/**
 * Memory-map an Arrow IPC file (stream or file format) as a mapped table
 * (a Parquet file opens lazily as qv_table_open_parquet describes; the
 * ones that need a whole read are QV_ENOTSUP here).
 * Only metadata is read: batches are decoded, and validated at the level
 * in `options` (NULL: QV_VALIDATE_DEFAULT), the first time their values are
 * needed, so a corrupt batch surfaces as an error of that later call. The
 * file's absolute path (realpath) and identity (size, mtime, device,
 * inode) are recorded for recipes and qv_table_cache_files.
 */
QV_API qv_status qv_table_open_path(const char *path, const qv_read_options *options,
                                    qv_table **out, qv_error *err) QV_NODISCARD;

/**
 * Concatenate tables. axis 0 appends rows: all tables need the same column
 * names and types, in the same order or (with unique names) in any order,
 * matched by name; schema metadata comes from the first table. axis 1
 * appends columns: all tables need the same number of rows; row blocks are
 * re-sliced so their boundaries line up (as `_split_both_like`). n >= 1.
 * The result is a concatenation table whose blocks are the inputs' blocks
 * (concatenation tables are flattened, never nested). With n == 1 the
 * input itself is returned (one more reference).
 */
QV_API qv_status qv_table_concat(qv_table *const *tables, int64_t n, int axis, qv_table **out,
                                 qv_error *err) QV_NODISCARD;

/** Add a reference. Returns t. NULL-safe. */
QV_API qv_table *qv_table_ref(qv_table *t);
/** Drop a reference; frees on the last (mappings are unmapped when no
 *  array still uses them). NULL-safe. */
QV_API void qv_table_unref(qv_table *t);

/* ------------------------------------------------------------------------ */
/* Inspection                                                                */

/** Which of the table kinds `t` is (in-memory, memory-mapped, concatenation). */
QV_API qv_table_kind qv_table_get_kind(const qv_table *t);
/** The schema (borrowed; lives as long as the table). */
QV_API const qv_schema *qv_table_schema(const qv_table *t);
QV_API int64_t qv_table_num_rows(const qv_table *t);
QV_API int32_t qv_table_num_columns(const qv_table *t);
QV_API int64_t qv_table_num_batches(const qv_table *t);
/** First row of batch i (0 <= i <= num_batches; i == num_batches gives
 *  num_rows). */
QV_API int64_t qv_table_batch_offset(const qv_table *t, int64_t i);
/** Rows of batch i. */
QV_API int64_t qv_table_batch_rows(const qv_table *t, int64_t i);

/**
 * Record batch i as a STRUCT array (a new reference the caller drops).
 * For a mapped table this may decode and validate the batch (the result is
 * cached; thread-safe), hence the status. QV_ECHANGED when the file
 * shrank below the batch's bytes since it was mapped (quiver/guard.h).
 */
QV_API qv_status qv_table_batch(qv_table *t, int64_t i, qv_array **out, qv_error *err) QV_NODISCARD;

/**
 * Tells the table that the caller is done with batch i for now: the pages
 * of the file mapping that the batch's buffers cover are dropped from this
 * process (MADV_DONTNEED on the pages they touch, rounded outward within
 * the mapping, so small batches are released too; the page cache keeps
 * them, and a page shared with a neighbouring batch faults back in if that
 * one is read again), so resident memory does not grow with the input a
 * scan has read. Nothing else changes: the batch stays valid and cached,
 * and reading it again faults its pages back in with the same values.
 * A no-op for in-memory (heap) buffers, for a batch not decoded yet and
 * for i out of range. Thread-safe; borrows t.
 */
QV_API void qv_table_batch_done(qv_table *t, int64_t i);

/** Batch and row-in-batch of a row (QV_ERANGE outside [0, num_rows)). */
QV_API qv_status qv_table_locate(const qv_table *t, int64_t row, int64_t *out_batch,
                                 int64_t *out_row, qv_error *err) QV_NODISCARD;

/** Number of replay steps recorded on a mapped table (0 for the others). */
QV_API int64_t qv_table_num_replays(const qv_table *t);

/**
 * Every file mapped behind the table (a mapped table's path; the mapped
 * blocks of a concatenation), in block order, possibly repeated. Parquet
 * files opened lazily are not listed: they are data, not Arrow caches (the
 * dataset layer writes its cache files beside the listed ones, as
 * `datasets` does in its own cache directory, never beside the user's
 * Parquet files), so such a table reports what an in-memory one does.
 * *out_paths is a malloc'ed array of *out_n malloc'ed strings; free them
 * with qv_table_free_paths.
 */
QV_API qv_status qv_table_cache_files(const qv_table *t, char ***out_paths, int64_t *out_n,
                                      qv_error *err) QV_NODISCARD;
QV_API void qv_table_free_paths(char **paths, int64_t n);

/** For a concatenation table: rows of blocks, blocks in row r, and block
 *  (r, j) (borrowed). Non-concatenation tables are one row of one block:
 *  themselves. */
QV_API int64_t qv_table_num_block_rows(const qv_table *t);
QV_API int64_t qv_table_num_blocks_in_row(const qv_table *t, int64_t r);
QV_API qv_table *qv_table_block(const qv_table *t, int64_t r, int64_t j);

/**
 * Compare the logical contents: column names and types (metadata ignored)
 * and every value, whatever the batch boundaries. Returns true when equal;
 * otherwise false with the first difference in diff->message (may be NULL).
 * Batches that fail to decode compare unequal.
 */
QV_API bool qv_table_equals(qv_table *expected, qv_table *actual, qv_error *diff);

/* ------------------------------------------------------------------------ */
/* Row access                                                                */

/**
 * Gather rows: a new STRUCT array (the schema's type) whose row i is table
 * row indices[i]. Indices in any order, with repeats; each is checked
 * (QV_ERANGE). Only the batches touched are decoded. This is the kernel
 * behind qv_table_take; it records nothing.
 */
QV_API qv_status qv_table_gather(qv_table *t, const int64_t *indices, int64_t n, qv_array **out,
                                 qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Transforms (each returns a new table; see the file comment for kinds)     */

/** Rows [offset, offset+length) by fast_slice: zero copy, only the first
 *  and last batch are sliced (QV_ERANGE outside the table). */
QV_API qv_status qv_table_slice(qv_table *t, int64_t offset, int64_t length, qv_table **out,
                                qv_error *err) QV_NODISCARD;

/**
 * Rows by index (any order, repeats), gathered into one new batch.
 * On a concatenation table, non-decreasing indices are applied block by
 * block (the result stays a concatenation); other orders give an
 * in-memory table.
 */
QV_API qv_status qv_table_take(qv_table *t, const int64_t *indices, int64_t n, qv_table **out,
                               qv_error *err) QV_NODISCARD;

/**
 * Rows where `mask` (a BOOL array of num_rows values) is true; null mask
 * values drop the row (pyarrow's default). Batches whose mask is all true
 * are kept as they are (zero copy); batch boundaries are preserved.
 */
QV_API qv_status qv_table_filter(qv_table *t, qv_array *mask, qv_table **out,
                                 qv_error *err) QV_NODISCARD;

/** Columns by index, in the given order (a reorder), repeats allowed; n may
 *  be 0. Zero copy. */
QV_API qv_status qv_table_select(qv_table *t, const int32_t *columns, int32_t n, qv_table **out,
                                 qv_error *err) QV_NODISCARD;
/** Every column except the listed ones (QV_ERANGE for a bad index). */
QV_API qv_status qv_table_drop(qv_table *t, const int32_t *columns, int32_t n, qv_table **out,
                               qv_error *err) QV_NODISCARD;
/** New names for all columns (n == num_columns). Zero copy. */
QV_API qv_status qv_table_rename(qv_table *t, const char *const *names, int32_t n, qv_table **out,
                                 qv_error *err) QV_NODISCARD;

/**
 * Insert a column at position `pos` (0..num_columns). `field` gives name,
 * type, nullability and metadata (copied); the values are `n_chunks`
 * arrays of the field's type whose lengths add up to num_rows; they are
 * re-sliced to the table's batch boundaries (zero copy).
 */
QV_API qv_status qv_table_add_column(qv_table *t, int32_t pos, const qv_field *field,
                                     qv_array *const *chunks, int64_t n_chunks, qv_table **out,
                                     qv_error *err) QV_NODISCARD;
/** qv_table_add_column at the end. */
QV_API qv_status qv_table_append_column(qv_table *t, const qv_field *field, qv_array *const *chunks,
                                        int64_t n_chunks, qv_table **out,
                                        qv_error *err) QV_NODISCARD;
/** Replace column `pos` (0..num_columns-1) by a new one (see add). */
QV_API qv_status qv_table_set_column(qv_table *t, int32_t pos, const qv_field *field,
                                     qv_array *const *chunks, int64_t n_chunks, qv_table **out,
                                     qv_error *err) QV_NODISCARD;

/**
 * Cast every column to the type of the same-position field of `target`
 * (same number of fields and the same names, QV_EARG otherwise), with
 * qv_array_cast (safe: a value that would change is an error). The result
 * takes target's field nullability/metadata and schema metadata. Columns
 * whose type does not change are not touched.
 */
QV_API qv_status qv_table_cast(qv_table *t, const qv_schema *target, qv_table **out,
                               qv_error *err) QV_NODISCARD;

/** One batch per table (per block of a concatenation), each column
 *  concatenated (qv_array_concat). An empty table keeps 0 batches. */
QV_API qv_status qv_table_combine_batches(qv_table *t, qv_table **out, qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Recipes                                                                   */

/**
 * Serialise the table as a recipe: a byte string from which
 * qv_table_from_recipe rebuilds an equal table in any process (format in
 * src/table/recipe.c). Mapped parts are written as the file's path and
 * identity plus the replay steps; in-memory parts (and data carried by
 * replays, such as added columns) as Arrow IPC stream bytes. *out is
 * malloc'ed (free()).
 */
QV_API qv_status qv_table_recipe(qv_table *t, uint8_t **out, int64_t *out_len,
                                 qv_error *err) QV_NODISCARD;

/**
 * Rebuild a table from a recipe. The input is untrusted: every count and
 * length is bounded by the bytes present, nesting is bounded, inline IPC
 * is read at QV_VALIDATE_FULL. A mapped file that is missing or whose size,
 * mtime, device or inode differ from the recipe's is QV_ECHANGED, naming
 * the file and what changed. Replays are re-applied in order.
 */
QV_API qv_status qv_table_from_recipe(const uint8_t *data, int64_t len, qv_table **out,
                                      qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Export                                                                    */

struct qv_write_options;

/**
 * Write the table's batches to an Arrow IPC file or stream at `path`
 * (atomically, see writer.h; `options` may be NULL: file format).
 * Dictionary ids are renumbered 0, 1, 2... depth first, so tables whose
 * dictionary columns came from different places write correctly; the
 * file format cannot hold a dictionary that changes between batches
 * (QV_ENOTSUP; write a stream).
 */
QV_API qv_status qv_table_write_path(qv_table *t, const char *path,
                                     const struct qv_write_options *options,
                                     qv_error *err) QV_NODISCARD;

/**
 * Export the table as an ArrowArrayStream of its record batches (schema
 * with all metadata; buffers shared, no copy). The stream holds a table
 * reference until released. Batches that fail to decode are reported by
 * get_next with the error text in get_last_error (a file that shrank
 * while open: EIO, "'x.arrow' shrank from N to M bytes while open").
 * The consumer reads the exported buffers of a mapped table directly, in
 * the mapping and outside quiver's guard (quiver/guard.h): if the file
 * shrinks after export, reading a page past its new end raises SIGBUS in
 * the consumer, as with pyarrow's own memory-mapped files. Copy what must
 * outlive such a change (qv_table_gather, qv_array_concat produce heap
 * memory), or replace files by rename instead of truncating or rewriting
 * them in place.
 */
QV_API qv_status qv_table_export_stream(qv_table *t, struct ArrowArrayStream *out,
                                        qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Parquet (table_parquet.c)                                                 */

/**
 * Read a Parquet file (quiver/parquet.h) into an in-memory table with the
 * Arrow types pyarrow.parquet.read_table gives by default: the file's
 * schema mapping, then the types of the stored "ARROW:schema" (large
 * types, time zones, durations...) where the values convert; one record
 * batch per row group (empty ones dropped). `options` may be NULL (every
 * column and row group, all cores); its arrow_schema is ignored (the
 * stored one is used). On success the caller owns *out.
 */
QV_API qv_status qv_table_read_parquet(const char *path, const qv_parquet_read_options *options,
                                       qv_table **out, qv_error *err) QV_NODISCARD;

/**
 * Open a Parquet file lazily as a mapped table: only the footer is read;
 * batch i is row group i (empty ones dropped), with the types of
 * qv_table_read_parquet, and a column of a row group is decoded the first
 * time a value of it is needed (cached until the table's last reference
 * goes), so head, get, select and slices touch only the row groups and
 * columns they read. Recipes record the path and identity like any mapped
 * file (qv_table_open_path opens Parquet files the same way). A file that
 * shrinks while open fails the next decode with QV_ECHANGED. Files whose
 * stored ARROW:schema asks for dictionary columns (one dictionary across
 * row groups) are read whole instead (an in-memory table). On success the
 * caller owns *out.
 */
QV_API qv_status qv_table_open_parquet(const char *path, qv_table **out,
                                       qv_error *err) QV_NODISCARD;

/** Column chunks decoded so far behind a lazy Parquet table (the
 *  counter of qv_parquet_decoded_chunks on its file; shared by the tables
 *  derived from it); -1 for any other table. */
QV_API int64_t qv_table_parquet_decoded_chunks(const qv_table *t);

/** What qv_table_scan_parquet hands over: first the schema alone (batch
 *  NULL), then each non-empty batch in row-group order (borrowed: add a
 *  reference to keep it). A status other than QV_OK stops the scan and is
 *  returned. */
typedef qv_status (*qv_parquet_batch_fn)(void *ctx, const qv_schema *schema, qv_array *batch,
                                         qv_error *err);

/**
 * Stream a Parquet file's row groups, with the types of
 * qv_table_read_parquet, to `fn`: `threads` row groups (0: one per core)
 * are decoded in parallel, handed over in order and released before the
 * next ones are decoded, so memory stays about threads x one row group
 * (files whose stored schema asks for dictionary columns are read whole
 * first: one dictionary across row groups). For converting to Arrow
 * (`quiver convert`) and writing caches.
 */
QV_API qv_status qv_table_scan_parquet(const char *path, int threads, qv_parquet_batch_fn fn,
                                       void *ctx, qv_error *err) QV_NODISCARD;

/**
 * The schema stored by Arrow writers in a Parquet file's key/value
 * metadata ("ARROW:schema": a base64 IPC schema message), decoded; *out is
 * NULL when the file has none. A corrupt one is QV_EINVAL.
 */
QV_API qv_status qv_parquet_stored_schema(const qv_parquet_file *f, qv_schema **out,
                                          qv_error *err) QV_NODISCARD;

/**
 * The schema qv_table_read_parquet gives for `f` (all columns), without
 * reading data: the file's schema with the stored ARROW:schema's types
 * applied as pyarrow does. On success the caller owns *out.
 */
QV_API qv_status qv_parquet_arrow_schema(const qv_parquet_file *f, qv_schema **out,
                                         qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* CSV and JSON Lines (table_text.c)                                         */

/**
 * Read a CSV file (qv_csv_read_path; `options` may be NULL: pyarrow's
 * defaults) into an in-memory table of its batches. On success the caller
 * owns *out; on failure *out is NULL and the reader's error (file, line,
 * column) is kept.
 */
QV_API qv_status qv_table_read_csv(const char *path, const qv_csv_read_options *options,
                                   qv_table **out, qv_error *err) QV_NODISCARD;

/** qv_table_read_csv for a JSON Lines file (qv_jsonl_read_path). */
QV_API qv_status qv_table_read_jsonl(const char *path, const qv_jsonl_read_options *options,
                                     qv_table **out, qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_TABLE_H */
