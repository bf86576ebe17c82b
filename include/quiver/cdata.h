/*
 * quiver/cdata.h — the Arrow C Data Interface and C Stream Interface:
 * the ABI structs (struct ArrowSchema, struct ArrowArray,
 * struct ArrowArrayStream, defined exactly as in Arrow's
 * CDataInterface.rst / CStreamInterface.rst, under their canonical guards so
 * that a project including another copy compiles), and quiver's IMPORT side.
 * The EXPORT side (qv_export_field / _schema / _array / _reader_stream) is
 * declared in quiver/ipc.h. Part of the ipc layer; sits on core.
 *
 * Ownership model of the import functions: each takes the C struct over
 * ("moves" it in). After the call, on success AND on failure, the caller's
 * struct is marked released (its `release` is NULL) and must not be used;
 * quiver calls the producer's release callback when it no longer needs the
 * data (for arrays: when the last qv_buffer built on it is dropped).
 *
 * Exported buffers (qv_export_array, the streams of readers, tables and
 * datasets) are shared, not copied: for a file quiver mapped they point
 * into the mapping. A consumer reading them reads the mapping outside
 * quiver's guard (quiver/guard.h), so if the file shrinks while they are
 * alive, reading a page past its new end raises SIGBUS in the consumer —
 * the same as with pyarrow's memory-mapped files. quiver's own calls on
 * the same data fail with QV_ECHANGED instead. To be safe, copy what you
 * keep, or never truncate or rewrite an open file in place (replace it by
 * rename, as quiver's writers do; the old mapping stays intact).
 */
#ifndef QUIVER_CDATA_H
#define QUIVER_CDATA_H

#include <stdint.h>

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Arrow C Data Interface (verbatim ABI; keep the guard as-is) ------- */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  /* Array type description */
  const char *format;
  const char *name;
  const char *metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema **children;
  struct ArrowSchema *dictionary;

  /* Release callback */
  void (*release)(struct ArrowSchema *);
  /* Opaque producer-specific data */
  void *private_data;
};

struct ArrowArray {
  /* Array data description */
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void **buffers;
  struct ArrowArray **children;
  struct ArrowArray *dictionary;

  /* Release callback */
  void (*release)(struct ArrowArray *);
  /* Opaque producer-specific data */
  void *private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

/* ---- Arrow C Stream Interface (verbatim ABI; keep the guard as-is) ----- */
#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
  /* Callback to get the stream type (will be the same for all arrays in
   * the stream). Return value: 0 if successful, an `errno`-compatible
   * error code otherwise. On success, *out must be released independently
   * of the stream. */
  int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);

  /* Callback to get the next array (if no error and the array is released,
   * the stream has ended). Return value: 0 if successful, an
   * `errno`-compatible error code otherwise. */
  int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);

  /* Callback to get optional detailed error information. Only valid after
   * the last call returned an error; the string lives until the next call
   * on this stream. */
  const char *(*get_last_error)(struct ArrowArrayStream *);

  /* Release callback: release the stream's own resources. Arrays and
   * schemas already handed out stay valid. */
  void (*release)(struct ArrowArrayStream *);

  /* Opaque producer-specific data */
  void *private_data;
};

#endif /* ARROW_C_STREAM_INTERFACE */

/* ------------------------------------------------------------------------ */
/* Import                                                                    */

/**
 * Import a type description as a field (name, nullability from
 * ARROW_FLAG_NULLABLE, metadata, type). Dictionary-encoded types become
 * QV_DICTIONARY types with dict_id assigned 0, 1, 2... in depth-first order
 * (the C interface carries no ids). Extension metadata stays field
 * metadata. Consumes `in` (see the file comment). On success the caller
 * owns the contents of *out and frees them with qv_import_field_reset.
 */
QV_API qv_status qv_import_field(struct ArrowSchema *in, qv_field *out, qv_error *err) QV_NODISCARD;

/** Free what qv_import_field put into a field (name, type reference,
 *  metadata) and zero it. NULL-safe. */
QV_API void qv_import_field_reset(qv_field *f);

/**
 * Import a record-batch schema: `in` must have format "+s"; its children
 * are the columns and its metadata becomes the schema metadata.
 * Dictionary ids are assigned 0, 1, 2... depth-first over the columns.
 * Consumes `in`. Caller owns one reference on *out.
 */
QV_API qv_status qv_import_schema(struct ArrowSchema *in, qv_schema **out,
                                  qv_error *err) QV_NODISCARD;

/**
 * Import an array of the given type (e.g. from qv_import_field, or a
 * schema's struct type for a record batch). Takes ownership of `in`: the
 * struct is moved into a holder and the producer's release callback runs
 * when the last qv_buffer of the resulting array tree (including slices
 * and views taken later) is dropped — or immediately on failure.
 * No buffer is copied, except that a NULL buffer pointer which the layout
 * needs non-empty (the single 0 offset of an empty string/list array) is
 * replaced by a zeroed heap buffer. Buffer sizes are derived from the type,
 * offset + length, the last offset of variable-size arrays, and the
 * trailing variadic-sizes buffer of view arrays. The result is validated at
 * QV_VALIDATE_MINIMAL. Caller owns one reference on *out.
 */
QV_API qv_status qv_import_array(struct ArrowArray *in, const qv_type *type, qv_array **out,
                                 qv_error *err) QV_NODISCARD;

/** Incremental import of a C stream (see qv_stream_import_open). */
typedef struct qv_stream_import qv_stream_import;

/**
 * Take over `stream` (moved in; the caller's struct is marked released) and
 * fetch and import its schema. On failure the stream has been released.
 * Close with qv_stream_import_close, which releases the stream.
 */
QV_API qv_status qv_stream_import_open(struct ArrowArrayStream *stream, qv_stream_import **out,
                                       qv_error *err) QV_NODISCARD;

/** The stream's schema (borrowed; valid until close). */
QV_API const qv_schema *qv_stream_import_schema(const qv_stream_import *s);

/**
 * Next record batch as a STRUCT array of the schema's type (validated at
 * MINIMAL), or *out = NULL at the end of the stream. Producer errors are
 * reported as QV_EIO (or the matching status for EINVAL/ENOMEM/ENOTSUP)
 * with the producer's get_last_error text.
 */
QV_API qv_status qv_stream_import_next(qv_stream_import *s, qv_array **out,
                                       qv_error *err) QV_NODISCARD;

/** Release the stream and free the importer (NULL-safe). Batches already
 *  returned stay valid. */
QV_API void qv_stream_import_close(qv_stream_import *s);

/**
 * Import a whole stream: schema plus every batch. Consumes `stream`.
 * On success *out_batches is a malloc'ed array of *out_n batch references
 * (free each with qv_array_unref, then free() the array) and *out_schema
 * one schema reference.
 */
QV_API qv_status qv_import_stream(struct ArrowArrayStream *stream, qv_schema **out_schema,
                                  qv_array ***out_batches, int64_t *out_n,
                                  qv_error *err) QV_NODISCARD;

/** Format string of a type as the C Data Interface spells it ("i",
 *  "tsu:UTC", "d:10,2", "+w:4", "+ud:0,1"...). For a dictionary type this
 *  is the index type's format. Writes at most `cap` bytes (NUL-terminated);
 *  returns the length needed, or -1 for a type with no format. */
QV_API int64_t qv_cdata_format(const qv_type *t, char *out, int64_t cap);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_CDATA_H */
