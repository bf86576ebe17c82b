/*
 * quiver/print.h — rendering array values and record-batch rows as JSON
 * (what `quiver head` / `quiver get` print), plus the growable string
 * buffer used to build the text. Part of the core layer (needs only arrays
 * and types). The value mapping is documented in docs/json-rows.md.
 */
#ifndef QUIVER_PRINT_H
#define QUIVER_PRINT_H

#include "quiver/array.h"
#include "quiver/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A growable, always NUL-terminated byte string. Zero-initialise it (or
 * call qv_strbuf_init); free with qv_strbuf_reset. `data` may be NULL
 * while nothing has been appended; qv_strbuf_cstr never returns NULL.
 * The appending functions (and qv_format_double) are not QV_NODISCARD
 * (see core.h): text built for a message or a summary line may ignore their
 * QV_ENOMEM and come out shorter; a caller that needs the whole text checks
 * the status.
 */
typedef struct qv_strbuf {
  char *data;
  int64_t len;
  int64_t cap;
} qv_strbuf;

/** Set `sb` to the empty state (same as zero-initialising it). */
QV_API void qv_strbuf_init(qv_strbuf *sb);
/** Free the memory and return to the empty state. NULL-safe. */
QV_API void qv_strbuf_reset(qv_strbuf *sb);
/** Set the length to 0, keeping the memory. */
QV_API void qv_strbuf_clear(qv_strbuf *sb);
/** The text ("" when empty). Valid until the next append or reset. */
QV_API const char *qv_strbuf_cstr(const qv_strbuf *sb);
/** Make room for `n` more bytes (plus the NUL). QV_ENOMEM on failure. */
QV_API qv_status qv_strbuf_reserve(qv_strbuf *sb, int64_t n, qv_error *err);
QV_API qv_status qv_strbuf_append(qv_strbuf *sb, const void *bytes, int64_t n, qv_error *err);
QV_API qv_status qv_strbuf_append_str(qv_strbuf *sb, const char *s, qv_error *err);
QV_API qv_status qv_strbuf_append_char(qv_strbuf *sb, char c, qv_error *err);
QV_API qv_status qv_strbuf_printf(qv_strbuf *sb, qv_error *err, const char *fmt, ...)
    QV_PRINTF(3, 4);

/**
 * Append the JSON rendering of element `row` (0-based logical index, the
 * array's offset is applied internally) of `array` to `out`. The array must
 * be valid at QV_VALIDATE_DEFAULT (as every reader returns); offsets and
 * indices are still bounds-checked, and a violation gives QV_EINVAL rather
 * than a read out of bounds. QV_ERANGE when `row` is outside the array.
 * On failure `out` may hold a partial rendering.
 */
QV_API qv_status qv_format_value_json(const qv_array *array, int64_t row, qv_strbuf *out,
                                      qv_error *err) QV_NODISCARD;

/**
 * Append row `row` of a record batch (a STRUCT array) as one JSON object
 * {"column": value, ...} (columns in schema order, no trailing newline).
 * QV_ETYPE when `batch` is not a STRUCT array.
 */
QV_API qv_status qv_format_row_json(const qv_array *batch, int64_t row, qv_strbuf *out,
                                    qv_error *err) QV_NODISCARD;

/**
 * Append the JSON string literal (with quotes) for `n` bytes of text.
 * Valid UTF-8 is kept as is (only '"', '\\' and control characters are
 * escaped); every byte that is not part of a valid UTF-8 sequence becomes
 * \ufffd (U+FFFD REPLACEMENT CHARACTER).
 */
QV_API qv_status qv_json_append_string(qv_strbuf *out, const uint8_t *s, int64_t n,
                                       qv_error *err) QV_NODISCARD;

/** Append the shortest decimal text that round-trips to `v` in Python's
 *  repr style ("0.1", "1.0", "1e+16", "1.5e-05"); NaN and infinities as
 *  "NaN" / "Infinity" / "-Infinity" (bare, unquoted). */
QV_API qv_status qv_format_double(qv_strbuf *out, double v, qv_error *err);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_PRINT_H */
