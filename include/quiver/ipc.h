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
qv_status qv_reader_open_path(const char *path, const qv_read_options *options,
                              qv_reader **out, qv_error *err);

/**
 * Open in-memory bytes (a reference on `buf` is taken). Same as
 * qv_reader_open_path otherwise; used by fuzzers and tests.
 */
qv_status qv_reader_open_buffer(qv_buffer *buf, const qv_read_options *options,
                                qv_reader **out, qv_error *err);

/**
 * Open a stream-format reader on a file descriptor that cannot be mapped
 * (a pipe or stdin). Messages are read on demand by qv_reader_next; random
 * access (qv_reader_batch) is not available and fails with QV_EARG.
 * The descriptor is not closed by the reader.
 */
qv_status qv_reader_open_fd(int fd, const qv_read_options *options,
                            qv_reader **out, qv_error *err);

/** Close and free (NULL-safe). Arrays already returned stay valid. */
void qv_reader_close(qv_reader *r);

/** Schema (borrowed; valid until qv_reader_close; qv_schema_ref to keep). */
const qv_schema *qv_reader_schema(const qv_reader *r);
qv_ipc_format qv_reader_format(const qv_reader *r);
/** Body compression found in the batches seen so far (NONE if none). */
qv_compression qv_reader_compression(const qv_reader *r);
/** Total bytes of the mapped input (0 for descriptors). */
int64_t qv_reader_size(const qv_reader *r);
/** True when the file declared big-endian data (converted on decode). */
bool qv_reader_big_endian(const qv_reader *r);
/** Metadata version of the schema message (4 = V4, 5 = V5). */
int qv_reader_metadata_version(const qv_reader *r);

/** Number of record batches (random-access readers only; -1 otherwise). */
int64_t qv_reader_num_batches(const qv_reader *r);
/** Total rows over all record batches (-1 when not known up front). */
int64_t qv_reader_num_rows(const qv_reader *r);
/** Rows of batch i (random access only). */
int64_t qv_reader_batch_rows(const qv_reader *r, int64_t i);
/** Location of record batch i (random access only), or NULL. */
const qv_batch_location *qv_reader_batch_location(const qv_reader *r,
                                                  int64_t i);
/** Number of dictionary batches and their locations (random access). */
int64_t qv_reader_num_dictionary_batches(const qv_reader *r);
const qv_batch_location *qv_reader_dictionary_location(const qv_reader *r,
                                                       int64_t i);
/** Custom metadata of the file footer (file format), or NULL. */
const qv_metadata *qv_reader_footer_metadata(const qv_reader *r);

/**
 * Decode record batch i (random access) into a STRUCT array whose children
 * are the columns, with the dictionaries in force at that batch. Validated
 * at the reader's level. Caller owns the returned reference.
 */
qv_status qv_reader_batch(qv_reader *r, int64_t i, qv_array **out,
                          qv_error *err);

/**
 * Sequential access: the next record batch, or *out = NULL at the end.
 * Works for every reader kind.
 */
qv_status qv_reader_next(qv_reader *r, qv_array **out, qv_error *err);

/**
 * Decompress only what is read. As qv_reader_batch, but:
 *  - `columns` (n_columns schema column indices, in the order wanted;
 *    NULL = all columns) selects the columns of the result, a STRUCT of
 *    those fields. The other columns' buffers are range-checked but not
 *    decompressed, byte-swapped or referenced.
 *  - max_rows >= 0 limits the result to min(max_rows, batch rows) rows;
 *    in a compressed batch, columns laid out as a prefix of rows (fixed
 *    width, bool, binary/string, dictionary indices) decompress only those
 *    rows' bytes (nested and view columns decompress whole, then are
 *    sliced). max_rows < 0: all rows.
 * Uncompressed batches stay zero-copy views of the mapping. Caller owns
 * the returned reference. QV_ERANGE for a column index out of range;
 * QV_ENOMEM when the decompression would pass the reader's budget
 * (qv_reader_set_decompress_budget).
 */
qv_status qv_reader_batch_select(qv_reader *r, int64_t i, const int32_t *columns,
                                 int32_t n_columns, int64_t max_rows, qv_array **out,
                                 qv_error *err);

/** qv_reader_next with the selection of qv_reader_batch_select (every
 *  reader kind; the cursor moves by one batch whatever max_rows is). */
qv_status qv_reader_next_select(qv_reader *r, const int32_t *columns, int32_t n_columns,
                                int64_t max_rows, qv_array **out, qv_error *err);

/**
 * The decompression budget: a bound on the bytes of decompressed buffers
 * this reader's arrays hold at once (counted from decompression until the
 * last reference to each buffer goes, whoever holds it, even after
 * qv_reader_close). A decode that would pass it fails with QV_ENOMEM and
 * a message naming the batch, column and buffer, instead of allocating.
 * 0 = no bound. The default is $QUIVER_DECOMPRESS_BUDGET (bytes, optional
 * K/M/G/T suffix) when set, else the smallest of 4 GiB, a quarter of
 * physical memory and half of the address-space limit (RLIMIT_AS). Set it
 * before decoding from other threads. Independent of max_alloc, which
 * bounds each buffer.
 */
void qv_reader_set_decompress_budget(qv_reader *r, int64_t bytes);
int64_t qv_reader_decompress_budget(const qv_reader *r);
/** Decompressed bytes held now by arrays of this reader (`held`) and
 *  decompressed since it opened (`total`); either pointer may be NULL. */
void qv_reader_decompress_stats(const qv_reader *r, int64_t *held, int64_t *total);

/* ------------------------------------------------------------------------ */
/* Arrow C Data / C Stream Interface                                         */

struct ArrowSchema;
struct ArrowArray;
struct ArrowArrayStream;

/** Export a field as an ArrowSchema (caller releases it via ->release). */
qv_status qv_export_field(const qv_field *field, struct ArrowSchema *out,
                          qv_error *err);
/** Export a schema as a struct ArrowSchema. */
qv_status qv_export_schema(const qv_schema *schema, struct ArrowSchema *out,
                           qv_error *err);
/** Export an array. Buffers are shared (no copy): the ArrowArray holds
 *  references that keep mappings alive until its release. */
qv_status qv_export_array(qv_array *array, struct ArrowArray *out,
                          qv_error *err);
/** The errno-compatible code a C Stream callback returns for a status
 *  (0 for QV_OK; EINVAL, ENOTSUP, ENOMEM, EIO, ERANGE), for every stream
 *  quiver exports (readers, tables, datasets). */
int qv_cdata_errno(qv_status st);
/**
 * Export a reader as a C stream. Ownership of `r` passes to the stream
 * (closed by the stream's release), on success and on failure.
 */
qv_status qv_export_reader_stream(qv_reader *r, struct ArrowArrayStream *out,
                                  qv_error *err);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_IPC_H */
