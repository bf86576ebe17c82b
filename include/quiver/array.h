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

#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qv_array {
  long refcount_;
  qv_type *type;        /* owned reference */
  int64_t length;
  int64_t offset;
  int64_t null_count;   /* -1 when not yet computed */
  int32_t n_buffers;
  qv_buffer **buffers;  /* owned references; entries may be NULL */
  int32_t n_children;
  struct qv_array **children; /* owned references */
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

/** True when element i (0-based, before `offset`) is valid. Does not look
 *  into dictionary values or union/REE children. */
static inline bool qv_array_is_valid(const qv_array *a, int64_t i) {
  if (a->n_buffers == 0 || a->buffers[0] == NULL) return true;
  if (a->type->id == QV_SPARSE_UNION || a->type->id == QV_DENSE_UNION)
    return true;
  return qv_bit_get(a->buffers[0]->data, a->offset + i);
}

/**
 * Zero-copy slice [offset, offset+length) sharing all buffers. Fails with
 * QV_ERANGE when the range is outside the array.
 */
QV_API qv_status qv_array_slice(qv_array *a, int64_t offset, int64_t length,
                                qv_array **out, qv_error *err) QV_NODISCARD;

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
QV_API qv_status qv_array_take(qv_array *a, const int64_t *indices, int64_t n,
                               qv_array **out, qv_error *err) QV_NODISCARD;

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
QV_API qv_status qv_array_cast(qv_array *a, qv_type *to, qv_array **out, qv_error *err)
    QV_NODISCARD;

/**
 * An array of `length` nulls of any type (a reference on `type` is
 * taken): validity all zero and zeroed values; unions select their first
 * child, which holds the nulls; run-end encoded arrays hold runs of null
 * values; dictionaries get an empty dictionary. length 0 gives an empty
 * array of the type.
 */
QV_API qv_status qv_array_nulls(qv_type *type, int64_t length, qv_array **out, qv_error *err)
    QV_NODISCARD;

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
QV_API qv_status qv_array_validate(const qv_array *a, qv_validate_level level,
                                   const char *path, qv_error *err) QV_NODISCARD;

/**
 * Compare two arrays value by value (logical values: offsets, slicing and
 * null slots' contents ignored; floats compared bitwise except that NaN
 * equals NaN). Returns true when equal; otherwise false and, when `diff`
 * is not NULL, a description of the first difference ("row 3: expected 5,
 * found 7" with the field path) is written into diff->message.
 */
QV_API bool qv_array_equals(const qv_array *expected, const qv_array *actual,
                            qv_error *diff);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_ARRAY_H */
