/*
 * quiver/array.h — immutable, reference-counted Arrow arrays over
 * qv_buffers, and their validation. Part of the core layer.
 *
 * Buffer layout per type follows the Arrow C Data Interface
 * (CDataInterface.rst), so export is a direct mapping:
 *   NA: none                              RUN_END_ENCODED: none
 *   BOOL, fixed-width, decimals, FSB: [validity, values]
 *   BINARY/STRING (+LARGE): [validity, offsets, data]
 *   BINARY_VIEW/STRING_VIEW: [validity, views, variadic data 0..k-1]
 *        (no trailing sizes buffer; the C exporter adds it)
 *   LIST/LARGE_LIST/MAP: [validity, offsets]
 *   LIST_VIEW/LARGE_LIST_VIEW: [validity, offsets, sizes]
 *   FIXED_SIZE_LIST, STRUCT: [validity]
 *   SPARSE_UNION: [type_ids]      DENSE_UNION: [type_ids, offsets]
 *   DICTIONARY: [validity, indices] plus `dictionary`
 * A NULL validity buffer means "no nulls". `offset` is the logical start,
 * applied as in Arrow: for STRUCT, SPARSE_UNION and FIXED_SIZE_LIST it also
 * shifts (or, for FSL, scales into) the children; for RUN_END_ENCODED it is
 * a logical offset into the runs.
 * A record batch is an array of STRUCT type with no validity buffer.
 */
#ifndef QUIVER_ARRAY_H
#define QUIVER_ARRAY_H

#include <string.h>

#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qv_array {
  long refcount_;
  qv_type *type; /* owned reference */
  int64_t length;
  int64_t offset;
  int64_t null_count; /* -1 when not yet computed */
  int32_t n_buffers;
  qv_buffer **buffers; /* owned references; entries may be NULL */
  int32_t n_children;
  struct qv_array **children;  /* owned references */
  struct qv_array *dictionary; /* DICTIONARY only; owned reference */
} qv_array;

/**
 * New empty array shell of `type` (a reference is taken) with room for
 * n_buffers buffer slots and n_children child slots, all NULL. The caller
 * fills the slots (transferring references) before sharing it.
 * Returns NULL on allocation failure.
 */
QV_API qv_array *qv_array_new(qv_type *type, int32_t n_buffers, int32_t n_children);
QV_API qv_array *qv_array_ref(qv_array *a);
QV_API void qv_array_unref(qv_array *a);

/** Null count, computing and caching it when it is -1. Union and
 *  run-end-encoded arrays report 0 (their nulls live in the children). */
QV_API int64_t qv_array_null_count(qv_array *a);

/** Bytes of every buffer of `a`, its children and its dictionary (whole
 *  buffers, whatever the array's offset and length: an estimate of what
 *  the array holds or maps). Borrows `a`. */
QV_API int64_t qv_array_buffer_bytes(const qv_array *a);

/** True when element i (0-based, before `offset`) is valid. Does not look
 *  into dictionary values or union/REE children. */
static inline bool qv_array_is_valid(const qv_array *a, int64_t i) {
  if (a->n_buffers == 0 || a->buffers[0] == NULL) return true;
  if (a->type->id == QV_SPARSE_UNION || a->type->id == QV_DENSE_UNION) return true;
  return qv_bit_get(a->buffers[0]->data, a->offset + i);
}

/* ------------------------------------------------------------------------ */
/* Element access                                                            */
/*
 * Reading values straight from an array's buffers, for code that walks
 * arrays in loops (all static inline). None of these checks validity (see
 * qv_array_is_valid) and, except qv_array_view_bytes, none checks bounds:
 * the array must be valid at QV_VALIDATE_DEFAULT (as every reader returns)
 * and i inside [0, length). Indices `i` of the qv_array_* functions are
 * logical (the array's offset is added); `k` of qv_load_* is physical.
 */

/** Binary and string views (BINARY_VIEW / STRING_VIEW): buffers[1] holds
 *  one QV_VIEW_SIZE-byte view per element: an int32 length, then either
 *  the bytes inline (length <= QV_VIEW_INLINE_MAX, zero padded) or a
 *  QV_VIEW_PREFIX_SIZE-byte prefix, the int32 index of a variadic data
 *  buffer (at QV_VIEW_BUFFER_INDEX_AT) and an int32 offset into it (at
 *  QV_VIEW_OFFSET_AT). Variadic buffer b is buffers[QV_VIEW_FIXED_BUFFERS + b]. */
#define QV_VIEW_SIZE 16
#define QV_VIEW_INLINE_MAX 12
#define QV_VIEW_PREFIX_SIZE 4
#define QV_VIEW_BUFFER_INDEX_AT 8
#define QV_VIEW_OFFSET_AT 12
#define QV_VIEW_FIXED_BUFFERS 2

/** Integer k of a buffer of `bytes`-wide (1, 2, 4 or 8) little-endian
 *  integers, signed unless is_unsigned, as int64 (a uint64 above
 *  INT64_MAX comes back as its two's complement). */
static inline int64_t qv_load_int(const uint8_t *p, int32_t bytes, bool is_unsigned, int64_t k) {
  switch (bytes) {
    case 1: return is_unsigned ? (int64_t)p[k] : (int64_t)(int8_t)p[k];
    case 2: {
      uint16_t v;
      memcpy(&v, p + k * 2, 2);
      return is_unsigned ? (int64_t)v : (int64_t)(int16_t)v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p + k * 4, 4);
      return is_unsigned ? (int64_t)v : (int64_t)(int32_t)v;
    }
    default: {
      int64_t v;
      memcpy(&v, p + k * 8, 8);
      return v;
    }
  }
}

/** Offset k of a buffer of 32-bit (`bytes` 4) or 64-bit (`bytes` 8)
 *  offsets. */
static inline int64_t qv_load_offset(const uint8_t *p, int32_t bytes, int64_t k) {
  if (bytes == 4) {
    int32_t v;
    memcpy(&v, p + k * 4, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, p + k * 8, 8);
  return v;
}

/** Bytes of one integer of type id (1, 2, 4 or 8), 0 for other types. */
static inline int32_t qv_int_type_bytes(qv_type_id id) {
  switch (id) {
    case QV_INT8:
    case QV_UINT8: return 1;
    case QV_INT16:
    case QV_UINT16: return 2;
    case QV_INT32:
    case QV_UINT32: return 4;
    case QV_INT64:
    case QV_UINT64: return 8;
    default: return 0;
  }
}

/** Element i of an integer array (any width and signedness), or index i
 *  of a dictionary array, as int64 (uint64 values above INT64_MAX as their
 *  two's complement: read those with qv_array_uint_at). */
static inline int64_t qv_array_int_at(const qv_array *a, int64_t i) {
  qv_type_id id = a->type->id == QV_DICTIONARY ? a->type->index_type->id : a->type->id;
  bool is_unsigned = id == QV_UINT8 || id == QV_UINT16 || id == QV_UINT32 || id == QV_UINT64;
  return qv_load_int(a->buffers[1]->data, qv_int_type_bytes(id), is_unsigned, a->offset + i);
}

/** As qv_array_int_at, as uint64 (for UINT64; negative values of signed
 *  types come back as their two's complement). */
static inline uint64_t qv_array_uint_at(const qv_array *a, int64_t i) {
  return (uint64_t)qv_array_int_at(a, i);
}

/** Offset entry i (logical: offset + i) of an array with an offsets buffer
 *  in buffers[1]: binary, string, list, map (32-bit), their large variants
 *  (64-bit), list views and dense unions (their offsets). Element i spans
 *  [qv_array_offset_at(a, i), qv_array_offset_at(a, i + 1)) of the data or
 *  child for the binary, string, list and map types. */
static inline int64_t qv_array_offset_at(const qv_array *a, int64_t i) {
  qv_type_id id = a->type->id;
  bool large = id == QV_LARGE_BINARY || id == QV_LARGE_STRING || id == QV_LARGE_LIST ||
               id == QV_LARGE_LIST_VIEW;
  return qv_load_offset(a->buffers[1]->data, large ? 8 : 4, a->offset + i);
}

/** Bytes of element i of a BINARY_VIEW or STRING_VIEW array: *data and
 *  *len (borrowed from the array's buffers). Bounds-checked: returns false
 *  (and leaves the outputs unset) when the view's length is negative or
 *  its buffer index or offset fall outside the array's buffers. */
static inline bool qv_array_view_bytes(const qv_array *a, int64_t i, const uint8_t **data,
                                       int32_t *len) {
  const uint8_t *v = a->buffers[1]->data + (a->offset + i) * QV_VIEW_SIZE;
  int32_t size, bi, off;
  memcpy(&size, v, 4);
  if (size < 0) return false;
  if (size <= QV_VIEW_INLINE_MAX) {
    *data = v + 4;
    *len = size;
    return true;
  }
  memcpy(&bi, v + QV_VIEW_BUFFER_INDEX_AT, 4);
  memcpy(&off, v + QV_VIEW_OFFSET_AT, 4);
  if (bi < 0 || bi >= a->n_buffers - QV_VIEW_FIXED_BUFFERS || off < 0 ||
      a->buffers[QV_VIEW_FIXED_BUFFERS + bi] == NULL ||
      (int64_t)off + size > a->buffers[QV_VIEW_FIXED_BUFFERS + bi]->size)
    return false;
  *data = a->buffers[QV_VIEW_FIXED_BUFFERS + bi]->data + off;
  *len = size;
  return true;
}

/* ------------------------------------------------------------------------ */
/* Numeric values                                                            */

/** Room for any decimal (up to decimal256) rendered by
 *  qv_decimal_to_string, with its sign, point or exponent and the NUL. */
#define QV_DECIMAL_STRING_MAX 96

/** Exact value of an IEEE 754 binary16 (the bits of a HALF_FLOAT). */
QV_API double qv_half_to_double(uint16_t h);
/** Nearest binary16 (round half to even; overflow to infinity; NaN kept). */
QV_API uint16_t qv_double_to_half(double d);

/**
 * Render an `nbytes`-wide (4, 8, 16 or 32: decimal32..256) two's
 * complement little-endian unscaled decimal in base 10 into `out`, which
 * needs QV_DECIMAL_STRING_MAX bytes (NUL-terminated). With scale > 0 a
 * decimal point is inserted (12345, scale 2 -> "123.45"); with scale < 0
 * the value is followed by "e<-scale>" ("12345e2"); scale 0 gives the plain
 * integer. Returns the length of the text.
 */
QV_API int qv_decimal_to_string(const uint8_t *in, int nbytes, int32_t scale, char *out);

/**
 * Zero-copy slice [offset, offset+length) sharing all buffers. Fails with
 * QV_ERANGE when the range is outside the array.
 */
QV_API qv_status qv_array_slice(qv_array *a, int64_t offset, int64_t length, qv_array **out,
                                qv_error *err) QV_NODISCARD;

/**
 * Concatenate arrays of equal type (qv_type_equals) into one new array with
 * freshly allocated, contiguous buffers (offsets rebased, validity merged,
 * view buffers re-indexed and shared; per-layout details in concat.c).
 * n >= 1. Inputs sharing one dictionary array keep it; otherwise the
 * dictionaries are concatenated and indices shifted. Fails with QV_ETYPE
 * when types differ (metadata ignored) and QV_ERANGE when a 32-bit offset,
 * a run end or a shifted dictionary index overflows its type.
 */
QV_API qv_status qv_array_concat(qv_array *const *arrays, int64_t n, qv_array **out,
                                 qv_error *err) QV_NODISCARD;

/**
 * Gather: a new array whose element i is element indices[i] of `a`
 * (0 <= indices[i] < a->length, checked: QV_ERANGE otherwise), in new
 * contiguous buffers, for every type (nested, dictionary: indices gathered
 * and dictionary shared; views: view structs gathered, data buffers shared;
 * run-end encoded: re-encoded). Repeats and any order allowed.
 */
QV_API qv_status qv_array_take(qv_array *a, const int64_t *indices, int64_t n, qv_array **out,
                               qv_error *err) QV_NODISCARD;

/**
 * Gather across chunks: a new array whose element i is element
 * row_index[i] of chunks[chunk_index[i]], without concatenating the chunks
 * first. All chunks must have equal types (QV_ETYPE otherwise); every
 * (chunk, row) pair is checked (QV_ERANGE). Same layouts as qv_array_take;
 * view data buffers of the chunks used are shared, list views are
 * compacted into a new child when n_chunks > 1, and dictionary chunks with
 * different dictionary arrays get one concatenated dictionary (QV_ERANGE
 * when a shifted index no longer fits the index type).
 */
QV_API qv_status qv_array_take_chunked(qv_array *const *chunks, int64_t n_chunks,
                                       const int64_t *chunk_index, const int64_t *row_index,
                                       int64_t n, qv_array **out, qv_error *err) QV_NODISCARD;

/**
 * Convert `a` to type `to` (a reference on `to` is taken by the result),
 * "safely" as pyarrow's default cast: a value that would change is an
 * error (QV_ERANGE naming the row and value: integer overflow, a float
 * that is not an integer, an integer a float cannot hold exactly, a unit
 * change that loses data, 64-bit offsets that do not fit 32 bits) and
 * binary -> string checks UTF-8 (QV_EINVAL). Conversions: equal types
 * (zero copy, field names and metadata taken from `to`), null -> any,
 * numeric <-> numeric (bool, integers, half/float/double), timestamp /
 * duration / time / date units, temporal <-> integer of the same width,
 * binary/string/large variants among themselves, dictionary -> values (or
 * anything they cast to) and dictionary -> dictionary, list/large_list,
 * fixed_size_list and struct (by position) recursively. Anything else is
 * QV_ENOTSUP. Buffers are shared wherever the layout allows. Null slots
 * are never checked.
 */
QV_API qv_status qv_array_cast(qv_array *a, qv_type *to, qv_array **out,
                               qv_error *err) QV_NODISCARD;

/**
 * An array of `length` nulls of any type (a reference on `type` is
 * taken): validity all zero and zeroed values; unions select their first
 * child, which holds the nulls; run-end encoded arrays hold runs of null
 * values; dictionaries get an empty dictionary. length 0 gives an empty
 * array of the type.
 */
QV_API qv_status qv_array_nulls(qv_type *type, int64_t length, qv_array **out,
                                qv_error *err) QV_NODISCARD;

/** Validation depth, as nanoarrow's levels. */
typedef enum qv_validate_level {
  QV_VALIDATE_NONE = 0,    /**< trust the producer */
  QV_VALIDATE_MINIMAL = 1, /**< buffer sizes vs lengths, O(1) per array */
  QV_VALIDATE_DEFAULT = 2, /**< + offsets, type ids, dictionary indices,
                                run ends, views: O(n) per array */
  QV_VALIDATE_FULL = 3     /**< + UTF-8 of string data */
} qv_validate_level;

/**
 * Check that the array (recursively) is well-formed at `level`, so that
 * reading any element stays inside its buffers. On failure the message
 * names the field path (`path` is the prefix to use, e.g. "column 'a'"),
 * the buffer, and expected vs found.
 */
QV_API qv_status qv_array_validate(const qv_array *a, qv_validate_level level, const char *path,
                                   qv_error *err) QV_NODISCARD;

/**
 * Compare two arrays value by value (logical values: offsets, slicing and
 * null slots' contents ignored; floats compared bitwise except that NaN
 * equals NaN). Returns true when equal; otherwise false and, when `diff`
 * is not NULL, a description of the first difference ("row 3: expected 5,
 * found 7" with the field path) is written into diff->message.
 */
QV_API bool qv_array_equals(const qv_array *expected, const qv_array *actual, qv_error *diff);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_ARRAY_H */
