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
 * Streams opened by path are indexed from pread of their message headers
 * (no page of the mapping is touched), optionally lazily, and the index is
 * kept in a per-user cache ($XDG_CACHE_HOME/quiver; QV_INDEX_CACHE=0 turns
 * it off) so that a reopen walks nothing; see docs/design.md, "Stream
 * index".
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
  QV_FORMAT_FILE = 0,  /**< IPC file format (Feather v2) */
  QV_FORMAT_STREAM = 1 /**< IPC stream format */
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
  int64_t num_rows; /**< record batches: rows; dictionaries: values */
  int64_t dict_id;  /**< dictionary batches only; else -1 */
  bool is_delta;    /**< dictionary batches only */
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
QV_API qv_status qv_reader_open_fd(int fd, const qv_read_options *options, qv_reader **out,
                                   qv_error *err) QV_NODISCARD;

/** Whether the persisted stream index (docs/design.md, "Stream index") is
 *  used: DEFAULT = yes unless QV_INDEX_CACHE=0 (or off/no/false) is set. */
typedef enum qv_index_cache_mode {
  QV_INDEX_CACHE_DEFAULT = 0,
  QV_INDEX_CACHE_OFF = 1
} qv_index_cache_mode;

/** How qv_reader_open_file indexes a stream. Zero-initialised = eager
 *  index, cache per the environment. */
typedef struct qv_index_options {
  /** Streams only: index no message at open beyond the schema; the index
   *  is extended on demand, as far as a call needs it (qv_reader_next and
   *  qv_reader_batch(i): up to that batch; num_batches, num_rows and the
   *  other whole-file accessors: to the end). Errors in messages not yet
   *  indexed surface from those calls instead of from the open. */
  bool lazy;
  qv_index_cache_mode cache;
} qv_index_options;

/**
 * Open a file by path like qv_reader_open_path, with index options
 * (`index` may be NULL: eager, cache per the environment). A stream's
 * index is read from the per-user cache when a valid entry for this exact
 * file exists, else built by pread of the message headers (bodies are
 * skipped by offset, never touched through the mapping) and stored in the
 * cache when the stream has at least 32 messages. The cache never makes an
 * open fail. The reader may keep a descriptor on the file open until its
 * index is complete (lazy streams); qv_reader_close closes it.
 */
QV_API qv_status qv_reader_open_file(const char *path, const qv_read_options *options,
                                     const qv_index_options *index, qv_reader **out,
                                     qv_error *err) QV_NODISCARD;

/**
 * qv_reader_open_file on a mapping the caller made of `path` with
 * qv_buffer_map_file (`id` its identity; a reference on `map` is taken).
 * Headers are pread from `path` only if it is still that file (else they
 * are read from the mapping and the cache is not used). Errors carry no
 * path prefix.
 */
QV_API qv_status qv_reader_open_mapped(qv_buffer *map, const char *path, const qv_file_identity *id,
                                       const qv_read_options *options,
                                       const qv_index_options *index, qv_reader **out,
                                       qv_error *err) QV_NODISCARD;

/**
 * Extend the index of a lazily opened stream to record batch `upto`
 * (-1: to the end). QV_OK when batch `upto` is indexed or the stream ends
 * before it; otherwise the error of the first bad message (kept: later
 * calls return it again). A no-op on eagerly indexed readers.
 */
QV_API qv_status qv_reader_index(qv_reader *r, int64_t upto, qv_error *err) QV_NODISCARD;

/** State of the batch index (for inspection, tests and benchmarks). */
typedef struct qv_reader_index_info {
  int64_t batches_indexed; /**< record batches located so far */
  bool complete;           /**< every message located */
  bool from_cache;         /**< the index came from the persisted cache */
  bool stored;             /**< this reader wrote the cache entry */
} qv_reader_index_info;
QV_API void qv_reader_index_state(const qv_reader *r, qv_reader_index_info *out);

/** Identity (size, mtime, device, inode) of the file a reader was opened
 *  on by path, at open; false for buffers and descriptors. */
QV_API bool qv_reader_file_identity(const qv_reader *r, qv_file_identity *out);

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

/** Number of record batches (random-access readers only; -1 otherwise).
 *  On a lazily indexed stream this and the whole-file accessors below
 *  complete the index first; if that fails they return -1 / NULL and
 *  qv_reader_index(r, -1, err) gives the error. */
QV_API int64_t qv_reader_num_batches(const qv_reader *r);
/** Total rows over all record batches (-1 when not known up front). */
QV_API int64_t qv_reader_num_rows(const qv_reader *r);
/** Rows of batch i (random access only). */
QV_API int64_t qv_reader_batch_rows(const qv_reader *r, int64_t i);
/** Location of record batch i (random access only), or NULL. */
QV_API const qv_batch_location *qv_reader_batch_location(const qv_reader *r, int64_t i);
/** Number of dictionary batches and their locations (random access). */
QV_API int64_t qv_reader_num_dictionary_batches(const qv_reader *r);
QV_API const qv_batch_location *qv_reader_dictionary_location(const qv_reader *r, int64_t i);
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
QV_API qv_status qv_reader_batch_select(qv_reader *r, int64_t i, const int32_t *columns,
                                        int32_t n_columns, int64_t max_rows, qv_array **out,
                                        qv_error *err) QV_NODISCARD;

/** qv_reader_next with the selection of qv_reader_batch_select (every
 *  reader kind; the cursor moves by one batch whatever max_rows is). */
QV_API qv_status qv_reader_next_select(qv_reader *r, const int32_t *columns, int32_t n_columns,
                                       int64_t max_rows, qv_array **out,
                                       qv_error *err) QV_NODISCARD;

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
 * bounds each buffer. Mapped tables (qv_table_open_path, datasets) keep
 * the batches they decode and, when this budget refuses a decode, first
 * release the least recently used ones that nothing else references.
 */
QV_API void qv_reader_set_decompress_budget(qv_reader *r, int64_t bytes);
QV_API int64_t qv_reader_decompress_budget(const qv_reader *r);
/** Decompressed bytes held now by arrays of this reader (`held`) and
 *  decompressed since it opened (`total`); either pointer may be NULL. */
QV_API void qv_reader_decompress_stats(const qv_reader *r, int64_t *held, int64_t *total);

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
QV_API qv_status qv_export_batch_stream(const qv_batch_source *src, struct ArrowArrayStream *out,
                                        qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_IPC_H */
