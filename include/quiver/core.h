/*
 * quiver/core.h — status codes, error text, reference-counted buffers,
 * bitmaps and file mapping. The bottom layer of quiver: everything else
 * returns a qv_status and fills a caller-provided qv_error.
 *
 * Conventions used across the whole public API:
 *  - Every fallible function returns a qv_status (QV_OK == 0) and, when it
 *    fails and `err` is not NULL, writes a human-readable message into
 *    `err->message` saying what failed, where, and expected vs found.
 *  - `err` is the last parameter (printf-like functions take their format
 *    and arguments after it). Results returned through pointers (`T **out`
 *    for new objects, `T *out` for filled structs, `out_*` when there are
 *    several) come just before it. On failure `*out` is left untouched or
 *    set to NULL; nothing needs releasing. The exception is the object a
 *    function works on or initialises in place (a qv_strbuf appended to, a
 *    qv_row_table or qv_row_metadata being set up): it comes first.
 *  - Functions returning a qv_status are QV_NODISCARD: ignoring the status
 *    is a compile-time warning. The exceptions return a status only for
 *    convenience: qv_error_set and qv_error_prefix (which return their
 *    argument), the qv_fingerprint_arg_* adders (their errors are sticky and
 *    checked once, see fingerprint.h) and the qv_strbuf appenders (see
 *    print.h).
 *  - Every function is declared with QV_API, the only symbols libquiver.so
 *    exports.
 *  - Reference-counted objects (qv_buffer, qv_type, qv_array, qv_schema)
 *    are returned with one reference owned by the caller, who drops it with
 *    the matching *_unref. *_unref accepts NULL. Objects are immutable once
 *    shared, so references may be used from several threads.
 */
#ifndef QUIVER_CORE_H
#define QUIVER_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QV_VERSION_MAJOR 0
#define QV_VERSION_MINOR 1
#define QV_VERSION_PATCH 0
#define QV_VERSION_STRING "0.1.0"

/* QV_API marks every function of the public API. The library is compiled
 * with -fvisibility=hidden, so libquiver.so exports exactly the functions
 * the headers in include/quiver/ declare with QV_API
 * (tests/headers/public_api.py checks it). QV_PRINTF marks printf-like
 * functions for format checking. */
#if defined(__GNUC__)
#define QV_API __attribute__((visibility("default")))
#define QV_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define QV_NODISCARD __attribute__((warn_unused_result))
#else
#define QV_API
#define QV_PRINTF(fmt, args)
#define QV_NODISCARD
#endif

/** Runtime version string of the linked library, e.g. "0.1.0". Static. */
QV_API const char *qv_version(void);

/** Status codes. Stable numbers; 0 is success. */
typedef enum qv_status {
  QV_OK = 0,
  QV_EINVAL = 1,  /**< invalid or corrupt input data (a bad file) */
  QV_ENOTSUP = 2, /**< valid input using a feature quiver does not support */
  QV_ENOMEM = 3,  /**< allocation failed or a declared size exceeds a bound */
  QV_EIO = 4,     /**< operating-system I/O failure (errno text in message) */
  QV_EARG = 5,    /**< bad argument from the caller (a usage error) */
  QV_ETYPE = 6,   /**< operation not defined for this type */
  QV_ERANGE = 7,  /**< index or value out of range */
  QV_ECHANGED = 8 /**< a file behind an object changed or disappeared */
} qv_status;

/** Size of the message buffer inside qv_error. */
#define QV_ERROR_SIZE 1024

/** Caller-owned error text. Pass NULL where the text is not wanted. */
typedef struct qv_error {
  char message[QV_ERROR_SIZE];
} qv_error;

/** Short name of a status ("invalid data", "unsupported", ...). Static. */
QV_API const char *qv_status_name(qv_status st);

/**
 * Format a message into err (if not NULL) and return `st`, so that call
 * sites read `return qv_error_set(err, QV_EINVAL, "...", ...);`.
 */
QV_API qv_status qv_error_set(qv_error *err, qv_status st, const char *fmt, ...) QV_PRINTF(3, 4);

/** Prefix the existing message with formatted context ("message 3: ").
 *  Returns `st` unchanged. No-op when err is NULL. */
QV_API qv_status qv_error_prefix(qv_error *err, qv_status st, const char *fmt, ...) QV_PRINTF(3, 4);

/** Return early with the status of `expr` if it is not QV_OK. */
#define QV_RETURN_NOT_OK(expr)                                                                     \
  do {                                                                                             \
    qv_status qv_st_ = (expr);                                                                     \
    if (qv_st_ != QV_OK) return qv_st_;                                                            \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Allocation                                                                */

/** Bytes of zeroed padding kept past the end of every heap buffer quiver
 *  allocates, so that vector loads may read past the last element. */
#define QV_BUFFER_PADDING 64
/** Alignment of heap buffers. */
#define QV_BUFFER_ALIGNMENT 64

/* ------------------------------------------------------------------------ */
/* Buffers                                                                   */

typedef struct qv_buffer qv_buffer;

/**
 * A reference-counted, contiguous run of bytes. Three kinds exist:
 *  - heap buffers from qv_buffer_alloc (owned, growable while unshared);
 *  - views from qv_buffer_view, which keep their parent alive;
 *  - foreign memory from qv_buffer_wrap / qv_buffer_map_file (a mapping,
 *    memory released by a callback when the last reference goes).
 * `data` and `size` are public and stable for the buffer's lifetime (a heap
 * buffer may move while its owner still grows it before sharing).
 * Fields ending in `_` are private.
 */
struct qv_buffer {
  uint8_t *data;
  int64_t size;
  int64_t capacity_; /* heap buffers: usable bytes allocated (>= size) */
  long refcount_;
  qv_buffer *parent_; /* views: the buffer viewed */
  void (*release_)(void *ctx, void *data, int64_t size);
  void *ctx_;
};

/**
 * Allocate a heap buffer of `size` bytes (contents zeroed, 64-byte aligned,
 * QV_BUFFER_PADDING zero bytes past `capacity`). Fails with QV_ENOMEM when
 * size is negative or the allocation fails. Caller owns one reference.
 */
QV_API qv_status qv_buffer_alloc(int64_t size, qv_buffer **out, qv_error *err) QV_NODISCARD;

/**
 * Resize a heap buffer that has exactly one reference and no views. Growth
 * doubles capacity at least; new bytes are zeroed; never shrinks capacity.
 * Fails with QV_EARG on a non-heap or shared buffer.
 */
QV_API qv_status qv_buffer_resize(qv_buffer *buf, int64_t new_size, qv_error *err) QV_NODISCARD;

/** Append `n` bytes to a heap buffer (see qv_buffer_resize). */
QV_API qv_status qv_buffer_append(qv_buffer *buf, const void *src, int64_t n,
                                  qv_error *err) QV_NODISCARD;

/**
 * A zero-copy view of parent bytes [offset, offset+size). Fails with
 * QV_EINVAL when the range is outside the parent. The view holds a
 * reference on the parent (on its root, for views of views).
 */
QV_API qv_status qv_buffer_view(qv_buffer *parent, int64_t offset, int64_t size, qv_buffer **out,
                                qv_error *err) QV_NODISCARD;

/**
 * Wrap foreign memory. `release(ctx, data, size)` runs when the last
 * reference is dropped (may be NULL for static memory).
 */
QV_API qv_status qv_buffer_wrap(void *data, int64_t size,
                                void (*release)(void *ctx, void *data, int64_t size), void *ctx,
                                qv_buffer **out, qv_error *err) QV_NODISCARD;

/**
 * Map a whole regular file read-only (MAP_SHARED, PROT_READ). A zero-byte
 * file gives an empty buffer. The mapping lives until the last reference
 * (including every view and array built on it) is dropped.
 * `out_identity` (may be NULL) receives the file's size and mtime in ns.
 */
typedef struct qv_file_identity {
  int64_t size;
  int64_t mtime_ns;
  uint64_t dev;
  uint64_t ino;
} qv_file_identity;
QV_API qv_status qv_buffer_map_file(const char *path, qv_buffer **out,
                                    qv_file_identity *out_identity, qv_error *err) QV_NODISCARD;

/** Read everything from a file descriptor (pipe, stdin) into a heap
 *  buffer, refusing more than `max_bytes` (0 = no limit). */
QV_API qv_status qv_buffer_read_fd(int fd, int64_t max_bytes, qv_buffer **out,
                                   qv_error *err) QV_NODISCARD;

/** Add a reference. Returns buf. NULL-safe. */
QV_API qv_buffer *qv_buffer_ref(qv_buffer *buf);
/** Drop a reference; frees on the last. NULL-safe. */
QV_API void qv_buffer_unref(qv_buffer *buf);
/** True when the buffer's bytes live in a file mapping. */
QV_API bool qv_buffer_is_mapped(const qv_buffer *buf);

/* ------------------------------------------------------------------------ */
/* Bitmaps (LSB-first, as Arrow)                                             */

static inline bool qv_bit_get(const uint8_t *bits, int64_t i) {
  return (bits[i >> 3] >> (i & 7)) & 1;
}
static inline void qv_bit_set(uint8_t *bits, int64_t i) {
  bits[i >> 3] |= (uint8_t)(1u << (i & 7));
}
static inline void qv_bit_clear(uint8_t *bits, int64_t i) {
  bits[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}
static inline void qv_bit_put(uint8_t *bits, int64_t i, bool v) {
  if (v) qv_bit_set(bits, i);
  else qv_bit_clear(bits, i);
}
/** Number of set bits in bits [offset, offset+length). */
QV_API int64_t qv_bitmap_count(const uint8_t *bits, int64_t offset, int64_t length);
/** Copy `length` bits from src at src_offset to dst at dst_offset. */
QV_API void qv_bitmap_copy(uint8_t *dst, int64_t dst_offset, const uint8_t *src, int64_t src_offset,
                           int64_t length);

/* ------------------------------------------------------------------------ */
/* Checked arithmetic for sizes read from files                              */

static inline bool qv_add_overflow(int64_t a, int64_t b, int64_t *out) {
  return __builtin_add_overflow(a, b, out);
}
static inline bool qv_mul_overflow(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_CORE_H */
