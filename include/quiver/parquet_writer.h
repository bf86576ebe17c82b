/*
 * quiver/parquet_writer.h — writing Apache Parquet files from record
 * batches or an Arrow C stream. The formats layer; sits on core (and the
 * ipc layer's schema encoder for the stored `ARROW:schema`).
 *
 * Every Arrow type pyarrow writes maps to the Parquet schema pyarrow
 * gives it (ints with their Int logical type, strings and binary
 * (including large and view types) as BYTE_ARRAY, fixed-size binary and
 * decimals as FIXED_LEN_BYTE_ARRAY, float16 as FIXED_LEN_BYTE_ARRAY(2),
 * dates as DATE, time32/time64 as TIME, timestamps in ms/us/ns (seconds
 * become ms) with isAdjustedToUTC when a time zone is set, durations as
 * INT64, date64 as DATE, the null type as an all-null INT32 column,
 * dictionaries as their values dictionary-encoded, structs as groups,
 * lists/large lists/fixed-size lists/list views as 3-level LIST groups and
 * maps as MAP groups; nulls at every level through definition and
 * repetition levels). The Arrow schema is stored base64-encoded under
 * `ARROW:schema` so pyarrow restores the exact types; schema metadata (the
 * `huggingface` key) is kept as the file's key/value metadata. Unions,
 * run-end encoded arrays and intervals are QV_ENOTSUP.
 *
 * Values are dictionary-encoded (RLE_DICTIONARY, dictionary page PLAIN)
 * until a column chunk's dictionary passes dictionary_page_bytes, then the
 * rest of the chunk is PLAIN (booleans are always PLAIN). Pages hold about
 * page_bytes of values and start at a row boundary. Column chunks carry
 * min/max/null_count statistics ordered as pyarrow orders them.
 *
 * The columns of a row group are encoded in parallel (one column per
 * thread at a time, qv_parquet_write_options.threads) into memory, then
 * written in column order, and the row group's bytes are handed to the
 * kernel's write-back at once (sync_file_range) so the closing fsync has
 * little left to do.
 *
 * Writes are atomic (a hidden temporary beside the target, fsync, rename):
 * on any error or qv_parquet_writer_abort the target is untouched. Memory
 * is bounded by one row group: the batches of the row group being filled
 * are kept (references) and its encoded (compressed) column chunks are
 * built in memory, then written, before the next row group starts.
 */
#ifndef QUIVER_PARQUET_WRITER_H
#define QUIVER_PARQUET_WRITER_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Page compression codecs (the numbers are Parquet's CompressionCodec). */
typedef enum qv_parquet_codec {
  QV_PARQUET_UNCOMPRESSED = 0,
  QV_PARQUET_SNAPPY = 1,
  QV_PARQUET_GZIP = 2,
  QV_PARQUET_BROTLI = 4,
  QV_PARQUET_ZSTD = 6,
  QV_PARQUET_LZ4_RAW = 7
} qv_parquet_codec;

/** Default rows per row group (as pyarrow: 1Mi). */
#define QV_PARQUET_DEFAULT_ROW_GROUP_ROWS (1024 * 1024)
/** Default bytes of values per data page and dictionary limit (1 MiB). */
#define QV_PARQUET_DEFAULT_PAGE_BYTES (1024 * 1024)

typedef struct qv_parquet_write_options {
  qv_parquet_codec codec; /**< UNCOMPRESSED (0, default) */
  int compression_level;  /**< codec level; 0 = the codec's default */
  int64_t row_group_rows; /**< rows per row group; 0 = the default */
  int64_t page_bytes;     /**< target bytes of values per page; 0 = 1 MiB */
  /** A column chunk falls back to PLAIN once its dictionary holds more
   *  than this many bytes (plain-encoded), or is PLAIN from its start
   *  when its first 4096 values say the dictionary would (three in four
   *  distinct, their bytes extrapolated past this); 0 = 1 MiB. */
  int64_t dictionary_page_bytes;
  bool no_dictionary;   /**< PLAIN only */
  int page_version;     /**< data page version: 1 (0 = 1) or 2 */
  bool no_statistics;   /**< leave column statistics out */
  bool no_arrow_schema; /**< leave the `ARROW:schema` key out */
  /** Threads encoding the columns of a row group in parallel (the
   *  caller's included): 0 = one per CPU, 1 = the calling thread only.
   *  The bytes written do not depend on it. */
  int threads;
} qv_parquet_write_options;

typedef struct qv_parquet_writer qv_parquet_writer;

/**
 * Start writing `schema` (a reference is taken) atomically to `path`.
 * `options` may be NULL (defaults). Fails with QV_ENOTSUP for a column type
 * Parquet cannot hold (unions, run-end encoded, intervals), QV_EARG for bad
 * options, QV_EIO when the temporary cannot be created. On success *out
 * owns the write until qv_parquet_writer_close or _abort (exactly one).
 */
QV_API qv_status qv_parquet_writer_open_path(const char *path, const qv_schema *schema,
                                             const qv_parquet_write_options *options,
                                             qv_parquet_writer **out, qv_error *err) QV_NODISCARD;

/**
 * Append one record batch: a STRUCT array whose type equals the schema's
 * (metadata ignored; QV_ETYPE otherwise). A reference is kept until its
 * rows have been written as part of a row group (a row group is written
 * as soon as it is full). After a failure the writer is failed: later
 * calls return an error and close aborts.
 */
QV_API qv_status qv_parquet_writer_write_batch(qv_parquet_writer *w, qv_array *batch,
                                               qv_error *err) QV_NODISCARD;

/** Rows handed in so far. */
QV_API int64_t qv_parquet_writer_rows(const qv_parquet_writer *w);

/**
 * Write the last row group and the footer, fsync, rename over the target,
 * fsync the directory. Frees the writer in every case (on failure the
 * temporary is removed and the target untouched). NULL-safe.
 */
QV_API qv_status qv_parquet_writer_close(qv_parquet_writer *w, qv_error *err) QV_NODISCARD;

/** Abandon the write: remove the temporary, free the writer. NULL-safe. */
QV_API void qv_parquet_writer_abort(qv_parquet_writer *w);

struct ArrowArrayStream;

/**
 * Write every batch of an Arrow C stream (pyarrow, DuckDB, polars,
 * qv_table_export_stream, ...) to `path` as Parquet, atomically. The
 * stream's schema (with its metadata) is the file's schema. Consumes `in`
 * on success and failure (its `release` is NULL afterwards). `out_rows`
 * (may be NULL) receives the rows written. On failure the target is
 * untouched and no temporary is left.
 */
QV_API qv_status qv_parquet_write_arrow_stream_path(struct ArrowArrayStream *in, const char *path,
                                                    const qv_parquet_write_options *options,
                                                    int64_t *out_rows, qv_error *err) QV_NODISCARD;

/** Parse a codec name: "none"/"uncompressed", "snappy", "gzip", "brotli",
 *  "zstd", "lz4"/"lz4_raw". Returns false for anything else. */
QV_API bool qv_parquet_codec_from_name(const char *name, qv_parquet_codec *out);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_PARQUET_WRITER_H */
