/*
 * quiver/jsonl.h — JSON Lines reader and writer (formats layer). The
 * reader takes one JSON object per line (blank lines skipped) and infers
 * the types `pyarrow.json.read_json` does: null, bool, int64 (promoted to
 * double when a column also holds reals), double, string, timestamp[s]
 * for strings that are all ISO 8601 timestamps, list<item> for arrays,
 * struct for objects (fields in order of first appearance); a column
 * whose values mix kinds otherwise (a number and a string, a list and an
 * object) is an error, as in pyarrow. Columns missing from a row are
 * null. The writer writes one object per row in the `datasets` to_json
 * records form (quiver/print.h's row JSON). Writes are atomic.
 */
#ifndef QUIVER_JSONL_H
#define QUIVER_JSONL_H

#include "quiver/csv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qv_jsonl_read_options {
  /* explicit schema (borrowed for the call): its columns are read with
   * its types; keys not in it are dropped when `schema_only`, else
   * inferred after its columns */
  const qv_schema *schema;
  bool schema_only;
  int64_t block_size; /* 0: 1 MiB */
  int threads;        /* 0: every core */
} qv_jsonl_read_options;

/**
 * Read a whole JSON Lines file. `options` may be NULL. On success `out`
 * owns the schema and batches (qv_read_result_reset); on failure it is
 * zeroed and `err` names the file, line and column (1-based) of the
 * first malformed value or the column whose types cannot be unified.
 */
QV_API qv_status qv_jsonl_read_path(const char *path, const qv_jsonl_read_options *options,
                                    qv_read_result *out, qv_error *err) QV_NODISCARD;
/** The same over `size` bytes at `data` (not retained); `name` (may be
 *  NULL) is used in messages. */
QV_API qv_status qv_jsonl_read_buffer(const void *data, int64_t size, const char *name,
                                      const qv_jsonl_read_options *options, qv_read_result *out,
                                      qv_error *err) QV_NODISCARD;

/**
 * Read a JSON Lines file in windows of about threads x 2 x block_size
 * bytes cut at newlines, parsing each window on all cores while the sink
 * takes the previous window's batches: memory O(threads x block_size),
 * not O(file). Types, values and errors as qv_jsonl_read_path; a later
 * window that widens a type restarts the read (qv_batch_sink in
 * quiver/csv.h). The file must be seekable; `progress` and `stats` may
 * be NULL.
 */
QV_API qv_status qv_jsonl_stream_path(const char *path, const qv_jsonl_read_options *options,
                                      const qv_batch_sink *sink, qv_text_progress_fn progress,
                                      void *progress_ctx, qv_text_stream_stats *stats,
                                      qv_error *err) QV_NODISCARD;

typedef struct qv_jsonl_writer qv_jsonl_writer;

/** Start writing JSON Lines to `path` (atomic: a temporary until close),
 *  compressed as the path says (qv_text_compression AUTO). The writer is
 *  freed by close or abort. */
QV_API qv_status qv_jsonl_writer_open(const char *path, qv_jsonl_writer **out,
                                      qv_error *err) QV_NODISCARD;

typedef struct qv_jsonl_write_options {
  qv_text_compression compression; /* AUTO: from the path (.gz, .zst) */
  int compression_level;           /* 0: the codec's default */
} qv_jsonl_write_options;

/** qv_jsonl_writer_open with options (may be NULL: the defaults). */
QV_API qv_status qv_jsonl_writer_open_options(const char *path,
                                              const qv_jsonl_write_options *options,
                                              qv_jsonl_writer **out, qv_error *err) QV_NODISCARD;
/** Append one line per row of a record batch (borrowed). */
QV_API qv_status qv_jsonl_writer_write(qv_jsonl_writer *w, const qv_array *batch,
                                       qv_error *err) QV_NODISCARD;
/** Flush, fsync, rename into place; frees the writer in every case. */
QV_API qv_status qv_jsonl_writer_close(qv_jsonl_writer *w, qv_error *err) QV_NODISCARD;
/** Drop the temporary and free the writer. NULL-safe. */
QV_API void qv_jsonl_writer_abort(qv_jsonl_writer *w);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_JSONL_H */
