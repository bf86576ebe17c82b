/*
 * quiver/ipc.h — reading Arrow IPC data: the file format (Feather v2,
 * "ARROW1" magic + footer) and the stream format (continuation-marker or
 * pre-0.15 length-prefixed messages), memory-mapped and zero-copy.
 * The ipc layer; sits on core.
 *
 * Opening costs O(metadata): the reader records where each record batch
 * and dictionary batch lives without touching column bytes. Batches are
 * then decoded on demand; their buffers are views into the mapping (only
 * compressed or big-endian bodies are materialised into owned memory).
 */
#ifndef QUIVER_IPC_H
#define QUIVER_IPC_H

#include <stdio.h>

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qv_ipc_format {
  QV_FORMAT_FILE = 0,   /**< IPC file format (Feather v2) */
  QV_FORMAT_STREAM = 1  /**< IPC stream format */
} qv_ipc_format;

typedef enum qv_compression {
  QV_COMPRESSION_NONE = 0,
  QV_COMPRESSION_LZ4_FRAME = 1,
  QV_COMPRESSION_ZSTD = 2
} qv_compression;

typedef struct qv_read_options {
  /** Validation applied to every batch when it is decoded.
   *  Default (zero-initialised options are upgraded to it):
   *  QV_VALIDATE_DEFAULT. Use QV_VALIDATE_FULL for untrusted files. */
  qv_validate_level validation;
  bool validation_set; /**< set true to honour validation == NONE */
  /** Upper bound on any single decompressed buffer and on the total memory
   *  a stream read from a pipe may hold. 0 = default (see docs). */
  int64_t max_alloc;
} qv_read_options;

typedef struct qv_reader qv_reader;

/** Where one message lives in the file (for inspection and tests). */
typedef struct qv_batch_location {
  int64_t offset;          /**< offset of the message's framing in the file */
  int64_t metadata_length; /**< bytes of flatbuffer metadata (incl. padding) */
  int64_t body_offset;     /**< absolute offset of the body */
  int64_t body_length;
  int64_t num_rows;        /**< record batches: rows; dictionaries: values */
  int64_t dict_id;         /**< dictionary batches only; else -1 */
  bool is_delta;           /**< dictionary batches only */
} qv_batch_location;

/**
 * Open a file by path: memory-map it, detect the format, parse and verify
 * the schema and the location of every batch. `options` may be NULL.
 * The reader owns the mapping; arrays it returns keep the mapping alive
 * on their own after qv_reader_close.
 */
QV_API qv_status qv_reader_open_path(const char *path, const qv_read_options *options,
                                     qv_reader **out, qv_error *err) QV_NODISCARD;

/**
 * Open in-memory bytes (a reference on `buf` is taken). Same as
 * qv_reader_open_path otherwise; used by fuzzers and tests.
 */
QV_API qv_status qv_reader_open_buffer(qv_buffer *buf, const qv_read_options *options,
                                       qv_reader **out, qv_error *err) QV_NODISCARD;

/**
 * Open a stream-format reader on a file descriptor that cannot be mapped
 * (a pipe or stdin). Messages are read on demand by qv_reader_next; random
 * access (qv_reader_batch) is not available and fails with QV_EARG.
 * The descriptor is not closed by the reader.
 */
QV_API qv_status qv_reader_open_fd(int fd, const qv_read_options *options,
                                   qv_reader **out, qv_error *err) QV_NODISCARD;

/** Close and free (NULL-safe). Arrays already returned stay valid. */
QV_API void qv_reader_close(qv_reader *r);

/** Schema (borrowed; valid until qv_reader_close; qv_schema_ref to keep). */
QV_API const qv_schema *qv_reader_schema(const qv_reader *r);
QV_API qv_ipc_format qv_reader_format(const qv_reader *r);
/** Body compression found in the batches seen so far (NONE if none). */
QV_API qv_compression qv_reader_compression(const qv_reader *r);
/** Total bytes of the mapped input (0 for descriptors). */
QV_API int64_t qv_reader_size(const qv_reader *r);
/** True when the file declared big-endian data (converted on decode). */
QV_API bool qv_reader_big_endian(const qv_reader *r);
/** Metadata version of the schema message (4 = V4, 5 = V5). */
QV_API int qv_reader_metadata_version(const qv_reader *r);

/** Number of record batches (random-access readers only; -1 otherwise). */
QV_API int64_t qv_reader_num_batches(const qv_reader *r);
/** Total rows over all record batches (-1 when not known up front). */
QV_API int64_t qv_reader_num_rows(const qv_reader *r);
/** Rows of batch i (random access only). */
QV_API int64_t qv_reader_batch_rows(const qv_reader *r, int64_t i);
/** Location of record batch i (random access only), or NULL. */
QV_API const qv_batch_location *qv_reader_batch_location(const qv_reader *r,
                                                         int64_t i);
/** Number of dictionary batches and their locations (random access). */
QV_API int64_t qv_reader_num_dictionary_batches(const qv_reader *r);
QV_API const qv_batch_location *qv_reader_dictionary_location(const qv_reader *r,
                                                              int64_t i);
/** Custom metadata of the file footer (file format), or NULL. */
QV_API const qv_metadata *qv_reader_footer_metadata(const qv_reader *r);

/**
 * Decode record batch i (random access) into a STRUCT array whose children
 * are the columns, with the dictionaries in force at that batch. Validated
 * at the reader's level. Caller owns the returned reference.
 */
QV_API qv_status qv_reader_batch(qv_reader *r, int64_t i, qv_array **out,
                                 qv_error *err) QV_NODISCARD;

/**
 * Sequential access: the next record batch, or *out = NULL at the end.
 * Works for every reader kind.
 */
QV_API qv_status qv_reader_next(qv_reader *r, qv_array **out, qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Arrow C Data / C Stream Interface                                         */

struct ArrowSchema;
struct ArrowArray;
struct ArrowArrayStream;

/** Export a field as an ArrowSchema (caller releases it via ->release). */
QV_API qv_status qv_export_field(const qv_field *field, struct ArrowSchema *out,
                                 qv_error *err) QV_NODISCARD;
/** Export a schema as a struct ArrowSchema. */
QV_API qv_status qv_export_schema(const qv_schema *schema, struct ArrowSchema *out,
                                  qv_error *err) QV_NODISCARD;
/** Export an array. Buffers are shared (no copy): the ArrowArray holds
 *  references that keep mappings alive until its release. */
QV_API qv_status qv_export_array(qv_array *array, struct ArrowArray *out,
                                 qv_error *err) QV_NODISCARD;
/** The errno-compatible code a C Stream callback returns for a status
 *  (0 for QV_OK; EINVAL, ENOTSUP, ENOMEM, EIO, ERANGE), for every stream
 *  quiver exports (readers, tables, datasets). */
QV_API int qv_cdata_errno(qv_status st);
/**
 * Export a reader as a C stream. Ownership of `r` passes to the stream
 * (closed by the stream's release), on success and on failure.
 */
QV_API qv_status qv_export_reader_stream(qv_reader *r, struct ArrowArrayStream *out,
                                         qv_error *err) QV_NODISCARD;

/**
 * Anything that yields record batches, for qv_export_batch_stream (the one
 * C Stream adapter behind readers, tables and datasets):
 *  - schema(ctx): the batches' schema, borrowed, valid until release;
 *  - next(ctx, &batch, err): the next record batch (a STRUCT array, a new
 *    reference the stream drops once exported) or *batch = NULL at the end;
 *  - release(ctx): frees ctx; called exactly once.
 */
typedef struct qv_batch_source {
  void *ctx;
  const qv_schema *(*schema)(void *ctx);
  qv_status (*next)(void *ctx, qv_array **batch, qv_error *err);
  void (*release)(void *ctx);
} qv_batch_source;

/**
 * Export a batch source as a struct ArrowArrayStream: get_schema exports
 * schema(ctx), get_next exports each batch (buffers shared, no copy) and a
 * released ArrowArray at the end, get_last_error gives the message of the
 * last failed call (NULL when there is none), callbacks return
 * qv_cdata_errno codes. The source (its ctx) passes to the stream, which
 * calls src->release from its own release; on failure src->release runs
 * before this returns.
 */
QV_API qv_status qv_export_batch_stream(const qv_batch_source *src,
                                        struct ArrowArrayStream *out, qv_error *err)
    QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_IPC_H */
