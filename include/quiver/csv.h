/*
 * quiver/csv.h — CSV reader and writer (formats layer). The reader parses
 * RFC 4180 text (quoted fields with embedded delimiters, quotes and
 * newlines; LF, CRLF or CR line ends; a UTF-8 BOM) into record batches with
 * the types `pyarrow.csv.read_csv` infers by default: null, int64, bool,
 * date32, time32[s], timestamp[s], timestamp[ns] (with tz=UTC when every
 * value carries a zone), double, string, binary (text that is not UTF-8).
 * The file is read into memory (not mapped) and split into blocks of about `block_size` bytes at row
 * boundaries and blocks are parsed and converted on all cores; one record
 * batch per block. The writer renders batches as `pyarrow.csv.write_csv`
 * does (header of quoted names, strings always quoted, nulls as empty
 * fields). Every write is atomic (temporary + rename).
 */
#ifndef QUIVER_CSV_H
#define QUIVER_CSV_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a text reader (CSV, JSON Lines) returns: a schema and its record
 *  batches (STRUCT arrays), all owned by the result. */
typedef struct qv_read_result {
  qv_schema *schema;
  qv_array **batches;
  int64_t n_batches;
  int64_t n_rows;
} qv_read_result;

/** Drop everything a result holds and zero it. NULL-safe. */
QV_API void qv_read_result_reset(qv_read_result *r);

/** Reader options; zero-initialised means pyarrow's defaults. */
typedef struct qv_csv_read_options {
  char delimiter;  /* 0: ',' (a path ending in .tsv: '\t') */
  char quote;      /* 0: '"' */
  bool no_quoting; /* quote characters are ordinary bytes */
  char escape;     /* 0: none (quotes inside quotes are doubled) */
  bool no_header;  /* the first row is data; names are f0, f1, ... */
  /* column names to use instead of a header: the first row is then data,
   * as with pyarrow's column_names */
  const char *const *column_names;
  int32_t n_column_names;
  /* strings read as null (NULL: pyarrow's list "", "#N/A", "NA", "null",
   * "nan", ...); they apply to every type but string */
  const char *const *null_values;
  int32_t n_null_values;
  /* explicit types for columns by name (others are inferred); a value
   * that does not convert is an error naming file, line and column */
  const char *const *type_names;
  qv_type *const *types;
  int32_t n_types;
  int64_t block_size; /* 0: 1 MiB */
  int threads;        /* 0: every core */
  /* the types datasets.load_dataset("csv") gets (it reads with
   * pandas.read_csv): int64, bool, float64 (integers with missing values
   * and all-missing columns too), large_string; no dates or times; pandas'
   * null strings (pyarrow's plus "<NA>", "None") null in every column */
  bool pandas_types;
} qv_csv_read_options;

/**
 * Read a whole CSV file (read into memory, not mapped, so a file that
 * shrinks meanwhile cannot fault the parser; the result copies what it
 * keeps). `options` may be NULL. On success `out` owns a schema and the
 * batches (free with qv_read_result_reset); on failure `out` is zeroed and
 * `err` names the file, line (1-based) and column (1-based byte) of a
 * malformed row: a row with the wrong number of fields, an unterminated
 * quote, a value that does not convert to an explicit type.
 */
QV_API qv_status qv_csv_read_path(const char *path, const qv_csv_read_options *options,
                                  qv_read_result *out, qv_error *err) QV_NODISCARD;

/** The same over `size` bytes at `data` (not retained); `name` is used
 *  in messages (may be NULL: "<buffer>"). */
QV_API qv_status qv_csv_read_buffer(const void *data, int64_t size, const char *name,
                                    const qv_csv_read_options *options, qv_read_result *out,
                                    qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Streaming                                                                 */

/** Where a streaming text reader (qv_csv_stream_path, qv_jsonl_stream_path)
 *  delivers its record batches, in file order. */
typedef struct qv_batch_sink {
  /* Called with the schema (borrowed for the call) before the first
   * batch. Called AGAIN, with a wider schema, when a later block holds a
   * value the types inferred so far do not take (an int64 column meets
   * "1.5", a null column its first value): the reader then starts over
   * at the first row, and the sink must discard every batch it was given
   * (a writer aborts and reopens). The final types are the ones the whole
   * -file reader infers. */
  qv_status (*begin)(void *ctx, const qv_schema *schema, qv_error *err);
  /* One record batch (a STRUCT array, borrowed: take a reference to keep
   * it). */
  qv_status (*batch)(void *ctx, qv_array *batch, qv_error *err);
  void *ctx;
} qv_batch_sink;

/** What a streaming read did (for progress, tests and benchmarks). */
typedef struct qv_text_stream_stats {
  int64_t rows;       /* rows delivered by the last (successful) pass */
  int64_t windows;    /* windows parsed, all passes */
  int64_t restarts;   /* passes started over because a type widened */
  int64_t peak_bytes; /* most bytes the reader itself held at once: the
                         window, field spans, converted blocks not yet
                         delivered (not the sink's memory) */
} qv_text_stream_stats;

/** Called after each window with the bytes read so far and the file's
 *  size (progress bars); may be NULL. */
typedef void (*qv_text_progress_fn)(void *ctx, int64_t done_bytes, int64_t total_bytes);

/**
 * Read a CSV file in windows of about threads x 2 x block_size bytes
 * (each cut at a row boundary: a quoted newline never splits a row),
 * parsing each window's blocks on all cores while the sink consumes the
 * previous window's batches, so memory stays O(threads x block_size)
 * whatever the file's size (a single row larger than the window grows
 * it; a file with CR-only line ends is one window). Types, values and
 * errors are those of qv_csv_read_path (see qv_batch_sink.begin for the
 * restart a late wider value costs: each restart widens at least one
 * column, so there are at most columns x 9). The file must be seekable.
 * `stats` and `progress` may be NULL. On failure the sink has been given
 * a partial result it must drop; `err` names file, line and column.
 */
QV_API qv_status qv_csv_stream_path(const char *path, const qv_csv_read_options *options,
                                    const qv_batch_sink *sink, qv_text_progress_fn progress,
                                    void *progress_ctx, qv_text_stream_stats *stats,
                                    qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Writer                                                                    */

/** Compression of a text writer's output. AUTO (zero) infers it from the
 *  path as pandas' compression="infer" does: ".gz" gzip, ".zst" zstd,
 *  anything else none. */
typedef enum qv_text_compression {
  QV_TEXT_COMPRESSION_AUTO = 0,
  QV_TEXT_COMPRESSION_NONE,
  QV_TEXT_COMPRESSION_GZIP, /* one gzip member (zlib; level 0: 6) */
  QV_TEXT_COMPRESSION_ZSTD  /* one zstd frame (level 0: 3) */
} qv_text_compression;

typedef struct qv_csv_write_options {
  char delimiter; /* 0: ',' */
  bool no_header; /* no header row */
  bool crlf;      /* "\r\n" line ends instead of "\n" */
  qv_text_compression compression;
  int compression_level; /* 0: the codec's default */
} qv_csv_write_options;

typedef struct qv_csv_writer qv_csv_writer;

/**
 * Start writing CSV to `path` (a temporary beside it until close) with
 * the columns of `schema` (a reference is taken). Nested, dictionary-free
 * types are written as JSON text; dictionaries as their values.
 * `options` may be NULL. The writer is freed by close or abort.
 */
QV_API qv_status qv_csv_writer_open(const char *path, const qv_schema *schema,
                                    const qv_csv_write_options *options, qv_csv_writer **out,
                                    qv_error *err) QV_NODISCARD;
/** Append the rows of one record batch (borrowed). */
QV_API qv_status qv_csv_writer_write(qv_csv_writer *w, const qv_array *batch,
                                     qv_error *err) QV_NODISCARD;
/** Flush, fsync and rename into place; frees the writer in every case
 *  (on failure the target is untouched). */
QV_API qv_status qv_csv_writer_close(qv_csv_writer *w, qv_error *err) QV_NODISCARD;
/** Drop the temporary and free the writer. NULL-safe. */
QV_API void qv_csv_writer_abort(qv_csv_writer *w);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_CSV_H */
