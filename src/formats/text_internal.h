/*
 * text_internal.h — value parsers shared by the CSV and JSON Lines readers
 * (formats layer; internal): integers, reals, booleans, dates, times and
 * ISO 8601 timestamps in the forms pyarrow's converters accept, UTF-8
 * validation, pyarrow's default null strings, and the small array-making
 * helpers both readers use.
 */
#ifndef QUIVER_FORMATS_TEXT_INTERNAL_H
#define QUIVER_FORMATS_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/csv.h"
#include "quiver/type.h"

/** pyarrow's default null strings ("", "#N/A", "NA", "null", "nan", ...). */
bool qv_text_is_default_null(const uint8_t *s, int64_t n);

/** int64 in decimal (optional '-') or hex ("0x1F"), spaces/tabs around
 *  allowed, no '+' (as Arrow's CSV converter). */
bool qv_text_parse_int64(const uint8_t *s, int64_t n, int64_t *out);
/** uint64 likewise (no sign). */
bool qv_text_parse_uint64(const uint8_t *s, int64_t n, uint64_t *out);
/** A real number: [+-]digits[.digits][e[+-]digits], ".5", "5.", inf,
 *  infinity, nan (any case); spaces/tabs around allowed. */
bool qv_text_parse_double(const uint8_t *s, int64_t n, double *out);
/** pyarrow's true ("1","True","TRUE","true") / false values. */
bool qv_text_parse_bool(const uint8_t *s, int64_t n, bool *out);
/** YYYY-MM-DD (a real calendar date) as days since 1970-01-01. */
bool qv_text_parse_date(const uint8_t *s, int64_t n, int32_t *out);
/** hh:mm or hh:mm:ss as seconds since midnight. */
bool qv_text_parse_time(const uint8_t *s, int64_t n, int32_t *out);
/**
 * ISO 8601 timestamp: YYYY-MM-DD, then optionally [T ]hh[:mm[:ss[.f]]]
 * and a zone (Z, +hh, +hhmm, +hh:mm). *seconds since the epoch in UTC
 * (zone applied), *nanos the fraction (0..999999999), *frac_digits how
 * many fractional digits there were (at most 9), *zoned whether a zone
 * was given.
 */
bool qv_text_parse_timestamp(const uint8_t *s, int64_t n, int64_t *seconds, int32_t *nanos,
                             int *frac_digits, bool *zoned);
/** Whether n bytes are valid UTF-8. */
bool qv_text_valid_utf8(const uint8_t *s, int64_t n);

/* ---- arrays --------------------------------------------------------- */

/** A growable byte vector (plain malloc; a helper for column building). */
typedef struct qv_bytes {
  uint8_t *data;
  int64_t len, cap;
} qv_bytes;
bool qv_bytes_reserve(qv_bytes *b, int64_t extra);
static inline bool qv_bytes_append(qv_bytes *b, const void *p, int64_t n) {
  if (b->len + n > b->cap && !qv_bytes_reserve(b, n)) return false;
  if (n > 0) memcpy(b->data + b->len, p, (size_t)n);
  b->len += n;
  return true;
}
void qv_bytes_free(qv_bytes *b);

/** An array of `type` (reference taken) and `length` over the given heap
 *  buffers (references taken over, any may be NULL) and null count. */
qv_status qv_text_make_array(qv_type *type, int64_t length, int64_t null_count, qv_buffer *b0,
                             qv_buffer *b1, qv_buffer *b2, qv_array **out, qv_error *err);
/** The whole file at `path` read into a heap buffer (read, not mapped: a
 *  file that shrinks while it is parsed cannot fault the parser). */
qv_status qv_text_read_file(const char *path, qv_buffer **out, qv_error *err);
/** Bytes of all buffers of an array and its children (the streaming
 *  readers' memory accounting; views count their own size). NULL: 0. */
int64_t qv_text_array_bytes(const qv_array *a);
/** Hand a streaming reader's pending batches to its sink (begin first,
 *  with `schema`, unless *begun), dropping the references in every case. */
qv_status qv_text_deliver(const qv_batch_sink *sink, const qv_schema *schema, qv_array **pending,
                          int64_t *n_pending, bool *begun, qv_error *err);
/** A heap buffer holding a copy of n bytes. */
qv_status qv_text_buffer_from(const void *data, int64_t n, qv_buffer **out, qv_error *err);

/* ---- streaming input ------------------------------------------------ */

/** A window over a text file read in pieces: bytes [0, len) of `buf` are
 *  the file's bytes from offset `base`; `line_base` newlines precede
 *  them. The streaming readers parse a window, keep the bytes of an
 *  incomplete last row (qv_text_window_consume drops the rest) and fill
 *  again, so memory is the window, not the file. */
typedef struct qv_text_window {
  int fd;
  const char *path;
  /* gzip (concatenated members too) or zstd (frames) data, known by its
   * magic bytes, is decompressed as it is read */
  void *gz;     /* gzFile */
  void *zstd;   /* ZSTD_DCtx */
  uint8_t *zin; /* zstd: compressed input */
  int64_t zin_len, zin_pos;
  bool zin_eof;
  bool zin_mid; /* zstd: inside a frame (its end not yet decoded) */
  uint8_t *buf;
  int64_t cap, len;
  int64_t base;
  int64_t line_base;
  bool eof;
} qv_text_window;

/** Open `path` for reading (nothing read yet); gzip / zstd data
 *  decompressed. */
qv_status qv_text_window_open(qv_text_window *w, const char *path, qv_error *err);
/** Read until the window holds at least `want` bytes or the file ends
 *  (w->eof); the buffer grows to `want` (at most 2 GiB: QV_ERANGE). */
qv_status qv_text_window_fill(qv_text_window *w, int64_t want, qv_error *err);
/** Drop the first n bytes (their newlines counted into line_base). */
void qv_text_window_consume(qv_text_window *w, int64_t n);
/** Back to the start of the file (a restart after a type widened). */
qv_status qv_text_window_rewind(qv_text_window *w, qv_error *err);
/** Close the file and free the buffer. NULL-safe, idempotent. */
void qv_text_window_close(qv_text_window *w);

struct qv_pool;
/** A streaming reader's start, the one setup CSV and JSON Lines share:
 *  `w` opened over `path` (qv_text_window_open), the text's size in
 *  *file_size (-1 when compressed: unknown), `threads` (<= 0: every core)
 *  and `block_size` (<= 0: 1 MiB) giving *nbw = 2 * threads blocks a
 *  window of *window_bytes = nbw * block_size, and *pool: threads + 1 (the
 *  workers parse while the calling thread feeds the sink). On failure the
 *  caller still owns and frees what was made: qv_pool_free(*pool) and
 *  qv_text_window_close(w) are safe whatever the outcome (*pool NULL when
 *  not made). */
qv_status qv_text_stream_open(qv_text_window *w, const char *path, int threads, int64_t block_size,
                              struct qv_pool **pool, int64_t *file_size, int64_t *nbw,
                              int64_t *window_bytes, qv_error *err);

/* ---- compressed output --------------------------------------------- */

/** A text writer's output: the atomic file, through gzip or zstd when
 *  asked (quiver/csv.h qv_text_compression). */
typedef struct qv_text_out {
  struct qv_atomic_file *f;
  int codec;   /* 0 none, 1 gzip, 2 zstd */
  void *z;     /* z_stream */
  void *zc;    /* ZSTD_CCtx */
  uint8_t *ob; /* compressed bytes on their way to the file */
} qv_text_out;

qv_status qv_text_out_open(qv_text_out *o, const char *path, int compression, int level,
                           qv_error *err);
qv_status qv_text_out_write(qv_text_out *o, const void *data, int64_t n, qv_error *err);
/** Finish the stream, fsync and rename into place (frees the codec). */
qv_status qv_text_out_commit(qv_text_out *o, qv_error *err);
/** Drop the temporary (frees the codec). */
void qv_text_out_abort(qv_text_out *o);

#endif /* QUIVER_FORMATS_TEXT_INTERNAL_H */
