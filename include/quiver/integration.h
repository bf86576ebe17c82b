/*
 * quiver/integration.h — Apache Arrow's integration-test JSON format
 * (docs/source/format/Integration.rst in apache/arrow) and schema diffs.
 * The ipc layer; the CLI builds `quiver integration --mode=VALIDATE|
 * ARROW_TO_JSON|JSON_TO_ARROW` on it.
 *
 * Reading builds ordinary quiver arrays (heap buffers, the layout of
 * array.h) from a JSON file, gzip-compressed or not (detected by the gzip
 * magic bytes 1f 8b, not by the file name). Writing produces the same
 * format, so that read(write(x)) compares equal to x with qv_array_equals.
 *
 * Conventions of the format as quiver reads and writes it:
 *  - 64-bit integers (int64/uint64, date64, time64, timestamp, duration,
 *    64-bit offsets) are JSON strings; JSON integers are accepted too.
 *  - floats are JSON numbers; float16 values are JSON numbers holding the
 *    value (rounded to the nearest half on reading). JSON has no NaN or
 *    infinity: quiver writes them as the strings "NaN", "Infinity",
 *    "-Infinity" and reads those back (an extension of the format).
 *  - decimals are base-10 strings of the unscaled integer.
 *  - values in null slots are ignored on reading (read as zero), as Arrow
 *    C++ does; variable-length offsets must nevertheless agree with DATA.
 *  - the "dictionaries" section holds one dictionary per id. Writing uses
 *    the dictionary attached to the arrays of the last batch for each id;
 *    earlier batches must carry the same dictionary or a prefix of it
 *    (delta-extended), otherwise writing fails with QV_ENOTSUP.
 */
#ifndef QUIVER_INTEGRATION_H
#define QUIVER_INTEGRATION_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One dictionary of a JSON file: its id and its values. */
typedef struct qv_json_dictionary {
  int64_t id;
  qv_array *values; /* owned reference */
} qv_json_dictionary;

/** Everything a JSON integration file holds. */
typedef struct qv_json_data {
  qv_schema *schema; /* owned reference */
  int64_t n_batches;
  qv_array **batches; /* owned; STRUCT arrays (record batches) */
  int64_t n_dictionaries;
  qv_json_dictionary *dictionaries; /* owned; in file order */
} qv_json_data;

typedef struct qv_json_read_options {
  /** Upper bound on the (decompressed) JSON text in bytes; 0 = 4 GiB. */
  int64_t max_bytes;
} qv_json_read_options;

/**
 * Read a JSON integration file (plain or gzip) at `path`. On success *out
 * holds the schema, the record batches (each a STRUCT array whose children
 * are the columns; dictionary-encoded columns have `dictionary` attached)
 * and the dictionaries; release it with qv_json_data_reset. On failure
 * *out is left empty and the message says where, e.g.
 * "batch 2: column 'a.b': DATA has 3 values, expected count 4".
 * `options` may be NULL.
 */
QV_API qv_status qv_json_read(const char *path, const qv_json_read_options *options,
                              qv_json_data *out, qv_error *err) QV_NODISCARD;

/** As qv_json_read, from bytes in memory (plain or gzip). The bytes are
 *  not referenced after the call. */
QV_API qv_status qv_json_read_bytes(const void *data, int64_t size,
                                    const qv_json_read_options *options, qv_json_data *out,
                                    qv_error *err) QV_NODISCARD;

/** Release everything in `d` and zero it. NULL-safe. */
QV_API void qv_json_data_reset(qv_json_data *d);

typedef struct qv_json_write_options {
  bool gzip; /**< compress the output with gzip */
} qv_json_write_options;

/**
 * Render `schema` and `batches` (STRUCT arrays matching the schema; any
 * offsets or slices are honoured) as JSON integration text into a new heap
 * buffer (*out, caller owns one reference). Dictionaries come from the
 * arrays themselves (see the file comment). Nothing is compressed here.
 */
QV_API qv_status qv_json_write_buffer(const qv_schema *schema, qv_array *const *batches,
                                      int64_t n_batches, qv_buffer **out,
                                      qv_error *err) QV_NODISCARD;

/**
 * Write the JSON integration file to `path` atomically (a temporary file
 * beside it, fsync, rename). `options` may be NULL (plain JSON).
 */
QV_API qv_status qv_json_write(const char *path, const qv_schema *schema, qv_array *const *batches,
                               int64_t n_batches, const qv_json_write_options *options,
                               qv_error *err) QV_NODISCARD;

/**
 * Describe the first difference between two schemas. Returns true when
 * they are equal: same fields in order with the same names, types (deep,
 * with dictionary index type and ordering), nullability and field
 * metadata, and the same schema metadata. Metadata is compared as an
 * unordered collection of (key, value) pairs, as Arrow C++ does (writers
 * reorder the ARROW:extension:* keys). Otherwise returns false and,
 * when `diff` is not NULL, writes e.g.
 * "field 'a.item': type: expected int32, found int64" or
 * "schema metadata: expected [k='v'], found []".
 */
QV_API bool qv_schema_diff(const qv_schema *expected, const qv_schema *actual, qv_error *diff);

/**
 * As qv_schema_diff for two fields, with `path` naming the field in the
 * message ("field 'path': ..."). Compares name, nullability, type and,
 * with check_metadata, metadata (recursively).
 */
QV_API bool qv_field_diff(const qv_field *expected, const qv_field *actual, const char *path,
                          bool check_metadata, qv_error *diff);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_INTEGRATION_H */
