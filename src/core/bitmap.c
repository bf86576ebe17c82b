/*
 * bitmap.c — counting and copying LSB-first bitmaps (Arrow validity and
 * boolean buffers). Core layer.
 */
#include <string.h>

#include "quiver/core.h"

int64_t qv_bitmap_count(const uint8_t *bits, int64_t offset, int64_t length) {
  int64_t count = 0;
  int64_t i = offset, end = offset + length;
  /* Leading bits up to a byte boundary. */
  while (i < end && (i & 7) != 0) {
    count += qv_bit_get(bits, i);
    i++;
  }
  /* Whole 64-bit words. */
  const uint8_t *p = bits + (i >> 3);
  while (end - i >= 64) {
    uint64_t w;
    memcpy(&w, p, 8);
    count += __builtin_popcountll(w);
    p += 8;
    i += 64;
  }
  while (end - i >= 8) {
    count += __builtin_popcount(*p);
    p++;
    i += 8;
  }
  while (i < end) {
    count += qv_bit_get(bits, i);
    i++;
  }
  return count;
}

void qv_bitmap_copy(uint8_t *dst, int64_t dst_offset, const uint8_t *src, int64_t src_offset,
                    int64_t length) {
  if (length <= 0) return;
  if ((dst_offset & 7) == 0 && (src_offset & 7) == 0) {
    int64_t bytes = length >> 3;
    memcpy(dst + (dst_offset >> 3), src + (src_offset >> 3), (size_t)bytes);
    for (int64_t i = bytes * 8; i < length; i++)
      qv_bit_put(dst, dst_offset + i, qv_bit_get(src, src_offset + i));
    return;
  }
  for (int64_t i = 0; i < length; i++)
    qv_bit_put(dst, dst_offset + i, qv_bit_get(src, src_offset + i));
}
