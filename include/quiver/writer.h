/*
 * quiver/writer.h — writing Arrow IPC data: the stream format and the file
 * format (Feather v2), optionally with LZ4_FRAME / ZSTD body compression.
 * The ipc layer; sits on core. Everything is written little-endian with
 * metadata version V5.
 *
 * Writes to a path are atomic: the bytes go to a temporary file in the
 * target's directory named ".<name>.tmp-quiver-<pid>-<start>-<rand>" (a
 * hidden name that does not end in ".arrow", so no dataset loader takes a
 * leftover for a data file; pid and start time name the writer), which is
 * fsync'ed, renamed over the target, and the directory is fsync'ed. On any
 * error or qv_writer_abort the temporary is removed and the target is left
 * untouched. A crash (SIGKILL, power loss) may leave such a temporary
 * behind, never a torn target; the next write into that directory removes
 * the temporaries whose writer is gone (docs/writing.md, "Atomic writes").
 *
 * Buffers of the arrays handed in are written without an intermediate copy
 * (writev of the array's bytes plus padding); only sliced validity bitmaps
 * at a bit offset, rebased offsets and re-based run ends are rebuilt, and
 * compressed buffers are compressed into owned memory. A slice writes only
 * what it refers to: the child range of list views and dense unions, the
 * referenced part of view data buffers.
 *
 * With compression, the buffers of each record batch are compressed on a
 * pool of threads (qv_write_options.threads) while the caller goes on:
 * up to threads + 1 batches are in flight (the writer keeps a reference
 * to each) and are written in order. The bytes written do not depend on
 * the number of threads. An error compressing a batch in flight is
 * reported by a later qv_writer_write_batch or by qv_writer_close.
 */
#ifndef QUIVER_WRITER_H
#define QUIVER_WRITER_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/ipc.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Default rows per record batch (as Hugging Face `datasets`). */
#define QV_WRITE_DEFAULT_BATCH_ROWS 1000

typedef struct qv_write_options {
  qv_ipc_format format;       /**< QV_FORMAT_FILE (0, default) or STREAM */
  qv_compression compression; /**< body compression, NONE by default */
  int compression_level;      /**< codec level; 0 = the codec's default */
  int alignment;              /**< body/buffer alignment: 8 (0 = 8) or 64 */
  /** Larger batches are split (zero-copy slices) into record batches of at
   *  most this many rows. 0 = QV_WRITE_DEFAULT_BATCH_ROWS; < 0 = never
   *  split. */
  int64_t max_batch_rows;
  /** Threads compressing the buffers of a record batch in parallel (the
   *  caller's included): 0 = one per CPU (default), 1 = the calling thread
   *  only. Unused without compression. */
  int threads;
} qv_write_options;

typedef struct qv_writer qv_writer;

/**
 * Start writing `schema` (a reference is taken) atomically to `path` (see
 * the file comment). `options` may be NULL (file format, uncompressed).
 * The schema message is written immediately. Fails with QV_EARG for bad
 * options, QV_EIO when the temporary cannot be created.
 */
QV_API qv_status qv_writer_open_path(const char *path, const qv_schema *schema,
                                     const qv_write_options *options, qv_writer **out,
                                     qv_error *err) QV_NODISCARD;

/**
 * Start writing to an open descriptor (stdout, a pipe, a socket). The
 * descriptor is not closed by the writer. No atomicity: on error the bytes
 * already written stay written.
 */
QV_API qv_status qv_writer_open_fd(int fd, const qv_schema *schema, const qv_write_options *options,
                                   qv_writer **out, qv_error *err) QV_NODISCARD;

/**
 * Write one record batch: a STRUCT array whose children are the columns
 * and whose type equals the schema's (QV_ETYPE otherwise). Sliced arrays
 * are written as their logical contents. Dictionaries are written before
 * the first batch that uses them; a batch carrying a different dictionary
 * for an id already written is written in streams as a delta when the old
 * dictionary is a prefix of the new one, else as a replacement; the file
 * format cannot replace a dictionary (QV_ENOTSUP). After a failure the
 * writer is failed: later writes return an error, close aborts.
 * The batch is not retained after the call returns.
 */
QV_API qv_status qv_writer_write_batch(qv_writer *w, qv_array *batch, qv_error *err) QV_NODISCARD;

/** Rows and record batches written to the output so far (batches still
 *  being compressed count once written). */
QV_API int64_t qv_writer_rows_written(const qv_writer *w);
QV_API int64_t qv_writer_batches_written(const qv_writer *w);

/**
 * Finish: end-of-stream marker (streams) or footer (files), fsync, and for
 * paths rename over the target and fsync the directory. Frees the writer
 * in every case (on failure the temporary is removed). NULL-safe.
 */
QV_API qv_status qv_writer_close(qv_writer *w, qv_error *err) QV_NODISCARD;

/** Abandon the write: remove the temporary (the target is untouched) and
 *  free the writer. For descriptors, stops writing. NULL-safe. */
QV_API void qv_writer_abort(qv_writer *w);

/* ------------------------------------------------------------------------ */
/* Writing a C stream (Arrow C Stream Interface)                             */

struct ArrowArrayStream;

/**
 * Write every record batch of an Arrow C stream (any producer: pyarrow's
 * RecordBatchReader._export_to_c, DuckDB, polars, qv_export_reader_stream)
 * to `path`, atomically as qv_writer_open_path does. The stream's schema
 * (with schema and field metadata) becomes the file's schema; dictionary
 * ids are assigned 0, 1, 2... depth-first (see qv_import_schema).
 *
 * The stream is imported with quiver/cdata.h: the producer's buffers are
 * wrapped, not copied, and written straight from its memory (only the
 * cases listed in the file comment — sliced bitmaps, rebased offsets and
 * run ends, compression — allocate). Each batch is released back to the
 * producer as soon as it has been written. Batches are split into record
 * batches of at most options->max_batch_rows rows as by
 * qv_writer_write_batch.
 *
 * Consumes `in` on success and on failure (its `release` is NULL after the
 * call; quiver released it). On failure the target is untouched and no
 * temporary is left; producer errors are reported with the producer's
 * get_last_error text. `out_rows` (may be NULL) receives the number of
 * rows written.
 */
QV_API qv_status qv_write_arrow_stream_path(struct ArrowArrayStream *in, const char *path,
                                            const qv_write_options *options, int64_t *out_rows,
                                            qv_error *err) QV_NODISCARD;

/**
 * As qv_write_arrow_stream_path, to an open descriptor (not closed; no
 * atomicity: on failure the bytes already written stay written).
 */
QV_API qv_status qv_write_arrow_stream_fd(struct ArrowArrayStream *in, int fd,
                                          const qv_write_options *options, int64_t *out_rows,
                                          qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_WRITER_H */
