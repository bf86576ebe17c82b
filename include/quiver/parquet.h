/*
 * quiver/parquet.h — reading Apache Parquet files into Arrow arrays, with
 * quiver's own Thrift decoder and page decoders (no Parquet library).
 * Formats layer: sits on core (arrays, types), beside ipc.
 *
 * A qv_parquet_file is a mapped Parquet file with its footer decoded and
 * its schema mapped to Arrow types the way pyarrow.parquet.read_table
 * does by default (logical and converted types, INT96 -> timestamp[ns],
 * nesting through repetition/definition levels: structs, 3-level and
 * legacy 2-level lists, maps). Reading decodes column chunks page by page
 * (PLAIN, dictionary, RLE, DELTA_*, BYTE_STREAM_SPLIT; data pages v1 and
 * v2; every codec but LZO), checking page CRCs when present, into one
 * record batch (a STRUCT array, array.h) per row group; row groups are
 * decoded in parallel. Every size the file declares is bounded before it
 * drives an allocation (options->max_alloc). Encrypted files are refused
 * ("encrypted Parquet is not supported"). Errors name the file, row
 * group, column and page.
 *
 * A file object is immutable once open and may be read from several
 * threads; arrays returned are independent of it (they own their heap
 * buffers).
 */
#ifndef QUIVER_PARQUET_H
#define QUIVER_PARQUET_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qv_parquet_file qv_parquet_file;

/**
 * Map the file at `path` and decode its footer and schema. On success the
 * caller owns *out (close with qv_parquet_close). QV_EINVAL for a file
 * that is not Parquet or is corrupt, QV_ENOTSUP for encrypted files and
 * features quiver does not read (the message says which).
 */
QV_API qv_status qv_parquet_open_path(const char *path, qv_parquet_file **out,
                                      qv_error *err) QV_NODISCARD;

/**
 * The same over bytes already in memory: a reference on `buf` is taken
 * and held until qv_parquet_close. `name` (may be NULL) names the data in
 * messages.
 */
QV_API qv_status qv_parquet_open_buffer(qv_buffer *buf, const char *name, qv_parquet_file **out,
                                        qv_error *err) QV_NODISCARD;

/** Close a file (NULL-safe). Arrays read from it stay valid. */
QV_API void qv_parquet_close(qv_parquet_file *f);

/** The Arrow schema the file reads as (borrowed; lives as long as f):
 *  the types pyarrow gives without the stored ARROW:schema, and the
 *  file's key/value metadata as schema metadata minus "ARROW:schema". */
QV_API const qv_schema *qv_parquet_schema(const qv_parquet_file *f);

/** The file's key/value metadata, all of it (borrowed). */
QV_API const qv_metadata *qv_parquet_key_value_metadata(const qv_parquet_file *f);

QV_API int64_t qv_parquet_num_rows(const qv_parquet_file *f);
QV_API int32_t qv_parquet_num_row_groups(const qv_parquet_file *f);
/** Rows of row group i (0 when i is out of range). */
QV_API int64_t qv_parquet_row_group_rows(const qv_parquet_file *f, int32_t i);
/** Leaf (primitive) columns of the Parquet schema. */
QV_API int32_t qv_parquet_num_leaf_columns(const qv_parquet_file *f);
/** FileMetaData.created_by ("" when absent; borrowed). */
QV_API const char *qv_parquet_created_by(const qv_parquet_file *f);
/** FileMetaData.version. */
QV_API int32_t qv_parquet_format_version(const qv_parquet_file *f);

/** Column chunks decoded by qv_parquet_read on f so far (an atomic
 *  counter: reads from several threads add up). For tests and stats. */
QV_API int64_t qv_parquet_decoded_chunks(const qv_parquet_file *f);

/** What the footer says of one column chunk (for `quiver info`). Strings
 *  are static or borrowed from the file (valid while it is open). */
#define QV_PARQUET_MAX_ENCODINGS 16
typedef struct qv_parquet_column_info {
  const char *path;          /* dotted path in the schema */
  const char *physical_type; /* "INT64", "BYTE_ARRAY", ... */
  const char *codec;         /* "SNAPPY", ... */
  int32_t n_encodings;
  const char *encodings[QV_PARQUET_MAX_ENCODINGS];
  int64_t num_values;
  int64_t compressed_size;
  int64_t uncompressed_size;
  int16_t max_definition_level;
  int16_t max_repetition_level;
  bool has_statistics;
  int64_t null_count;     /* -1 when not recorded */
  int64_t distinct_count; /* -1 when not recorded */
  bool has_min_max;
  char min[64], max[64]; /* rendered in the column's type (truncated) */
} qv_parquet_column_info;

/** Fill *out for leaf column `column` of row group `row_group`
 *  (QV_ERANGE when either is out of range). */
QV_API qv_status qv_parquet_column_info_get(const qv_parquet_file *f, int32_t row_group,
                                            int32_t column, qv_parquet_column_info *out,
                                            qv_error *err) QV_NODISCARD;

/** What to read. Zero-initialised means: every column and row group, on
 *  all cores, the default allocation bound, the file's own types. */
typedef struct qv_parquet_read_options {
  const int32_t *columns; /* top-level column indices, in output order */
  int32_t n_columns;      /* 0: all columns */
  const int32_t *row_groups;
  int32_t n_row_groups; /* 0: all row groups */
  int threads;          /* 0: every core; 1: the calling thread only */
  int64_t max_alloc;    /* bound on one allocation a file's sizes drive; 0: 1 GiB */
  /* Optional target schema (e.g. decoded from the stored ARROW:schema)
   * with the same columns as qv_parquet_schema: each column is cast to
   * its type where qv_array_cast converts; others keep the file's type.
   * Field metadata and schema metadata are taken from it (without it,
   * schema metadata is the file's key/value metadata minus
   * "ARROW:schema"). Borrowed. */
  const qv_schema *arrow_schema;
} qv_parquet_read_options;

/**
 * Read row groups into record batches, one per row group in the order
 * asked (empty row groups included as zero-length batches). On success
 * *out_batches (malloc'd array, free with free()) holds *out_n references
 * the caller owns, and *out_schema (may be NULL) one reference on the
 * schema of the batches (the selected columns, with any target types).
 * At most `threads` row groups are held decoded in memory at a time
 * besides the results.
 */
QV_API qv_status qv_parquet_read(qv_parquet_file *f, const qv_parquet_read_options *options,
                                 qv_array ***out_batches, int64_t *out_n, qv_schema **out_schema,
                                 qv_error *err) QV_NODISCARD;

/**
 * The schema qv_parquet_read gives with these options (selected columns,
 * target types where they convert), without reading data. On success the
 * caller owns *out.
 */
QV_API qv_status qv_parquet_read_schema(const qv_parquet_file *f,
                                        const qv_parquet_read_options *options, qv_schema **out,
                                        qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_PARQUET_H */
