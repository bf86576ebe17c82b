/*
 * kernels_internal.h — small helpers shared by the array kernels
 * (concat.c, take.c, cast.c): storing integers of any width, run-end
 * lookup, union type-code maps. Core layer, private to src/core.
 */
#ifndef QUIVER_KERNELS_INTERNAL_H
#define QUIVER_KERNELS_INTERNAL_H

#include <string.h>

#include "quiver/array.h"

/* The binary/string view layout (QV_VIEW_*) and the integer and offset
 * loaders (qv_load_int, qv_array_int_at, ...) are public: quiver/array.h. */

/* qv_buffer_alloc without zeroing the `size` bytes (the padding after them
 * is zeroed): for outputs the caller writes whole before anyone reads them
 * (buffer.c). */
qv_status qvk_buffer_alloc_uninit(int64_t size, qv_buffer **out, qv_error *err) QV_NODISCARD;

/* Union type ids are int8, so a code -> child map has 128 entries. */
#define QVK_UNION_CODES 128

/* True when the type's arrays carry a validity bitmap in buffers[0]. */
static inline bool qvk_has_validity_slot(qv_type_id id) {
  return id != QV_NA && id != QV_SPARSE_UNION && id != QV_DENSE_UNION && id != QV_RUN_END_ENCODED;
}

/* Bytes per value of a fixed-width (non-bool) type, or 0. */
static inline int32_t qvk_value_bytes(const qv_type *t) {
  if (t->id == QV_BOOL) return 0;
  return qv_type_bit_width(t) / 8;
}

/* True for the 64-bit-offset variants. */
static inline bool qvk_is_large(qv_type_id id) {
  return id == QV_LARGE_BINARY || id == QV_LARGE_STRING || id == QV_LARGE_LIST ||
         id == QV_LARGE_LIST_VIEW;
}

/* Store v (already range-checked) as an integer of `bytes` width. */
static inline void qvk_store_int(uint8_t *p, int32_t bytes, int64_t i, int64_t v) {
  switch (bytes) {
    case 1: p[i] = (uint8_t)v; break;
    case 2: {
      uint16_t x = (uint16_t)v;
      memcpy(p + i * 2, &x, 2);
      break;
    }
    case 4: {
      uint32_t x = (uint32_t)v;
      memcpy(p + i * 4, &x, 4);
      break;
    }
    default: memcpy(p + i * 8, &v, 8); break;
  }
}

/* Largest value an integer type id can hold (uint64 is capped). */
static inline int64_t qvk_int_max(qv_type_id id) {
  switch (id) {
    case QV_INT8: return INT8_MAX;
    case QV_UINT8: return UINT8_MAX;
    case QV_INT16: return INT16_MAX;
    case QV_UINT16: return UINT16_MAX;
    case QV_INT32: return INT32_MAX;
    case QV_UINT32: return UINT32_MAX;
    default: return INT64_MAX;
  }
}

/* Physical run holding logical position `pos` of a run-end-encoded array
 * whose run_ends child is `re` (the smallest j with run_end[j] > pos), or
 * re->length when pos is past the last run. Binary search. */
static inline int64_t qvk_ree_find(const qv_array *re, int64_t pos) {
  const uint8_t *p = re->buffers[1]->data;
  int32_t bytes = qv_type_bit_width(re->type) / 8;
  int64_t lo = 0, hi = re->length;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (qv_load_int(p, bytes, false, re->offset + mid) > pos) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Fill map[code] = child index for a union type, -1 for unused codes. */
static inline void qvk_union_map(const qv_type *t, int8_t map[QVK_UNION_CODES]) {
  memset(map, -1, QVK_UNION_CODES);
  for (int32_t k = 0; k < t->n_children; k++) {
    int32_t code = t->type_codes ? t->type_codes[k] : k;
    if (code >= 0 && code < QVK_UNION_CODES) map[code] = (int8_t)k;
  }
}

/* Set bits [off, off+len) of dst. */
static inline void qvk_bits_set_range(uint8_t *dst, int64_t off, int64_t len) {
  int64_t i = off, end = off + len;
  while (i < end && (i & 7)) qv_bit_set(dst, i++);
  if (end - i >= 8) {
    memset(dst + (i >> 3), 0xff, (size_t)((end - i) >> 3));
    i += ((end - i) >> 3) << 3;
  }
  while (i < end) qv_bit_set(dst, i++);
}

/*
 * Merge the dictionaries of n dictionary arrays into one new dictionary:
 * distinct dictionary arrays (by pointer) are concatenated in first-seen
 * order and base[i] receives where array i's dictionary starts in it.
 * (Defined in concat.c.)
 */
qv_status qvk_unify_dictionaries(qv_array *const *arrays, int64_t n, int64_t *base, qv_array **out,
                                 qv_error *err);

#endif /* QUIVER_KERNELS_INTERNAL_H */
