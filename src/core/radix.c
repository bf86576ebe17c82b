/*
 * radix.c — stable LSD radix sort of packed 64-bit words by a bit field,
 * shared by the compute layer's sort (compute/sort.c: (key, row) pairs
 * packed into one word) and the table layer's large gathers (table.c:
 * (row, output position) words sorted by row). Core layer; the interface
 * is core/radix_internal.h.
 */
#include <string.h>

#include "core/radix_internal.h"

/* Stable insertion sort of words by their bits from `lo` up. */
void qv_radix_insertion_words(uint64_t *w, int64_t m, int lo) {
  for (int64_t i = 1; i < m; i++) {
    uint64_t x = w[i];
    int64_t j = i;
    while (j > 0 && (w[j - 1] >> lo) > (x >> lo)) {
      w[j] = w[j - 1];
      j--;
    }
    w[j] = x;
  }
}

/* Digit width of an LSD sort of m packed words by `bits` bits: as few
 * passes of at most QV_RADIX_DIGIT_MAX bits as the bits need, the bits
 * shared evenly between them; smaller arrays get narrower digits (at most
 * m/4 counters a pass, but 8 bits at least). */
static int digit_bits(int64_t m, int bits) {
  int lg = 63 - __builtin_clzll((uint64_t)m) - 2;
  int maxw = lg > QV_RADIX_DIGIT_MAX ? QV_RADIX_DIGIT_MAX : lg < 8 ? 8 : lg;
  int passes = (bits + maxw - 1) / maxw;
  return (bits + passes - 1) / passes;
}

/* Two sets of counters, for even and odd keys, summed at the end: a digit
 * that repeats (a skewed top digit) would otherwise make each count wait
 * for the previous one. */
void qv_radix_count(const uint64_t *k, int64_t m, uint64_t sub, int lo, int dw, int passes,
                    uint32_t *hist) {
  size_t nd = (size_t)1 << dw;
  uint64_t dm = nd - 1;
  uint32_t *h2 = hist + (size_t)passes * nd;
  memset(hist, 0, sizeof(uint32_t) * 2 * nd * (size_t)passes);
#define QVS_COUNT(NP)                                                                              \
  for (int64_t i = 0; i + 1 < m; i += 2) {                                                         \
    uint64_t x = (k[i] - sub) >> lo, y = (k[i + 1] - sub) >> lo;                                   \
    for (int p = 0; p < (NP); p++) {                                                               \
      hist[(size_t)p * nd + ((x >> (p * dw)) & dm)]++;                                             \
      h2[(size_t)p * nd + ((y >> (p * dw)) & dm)]++;                                               \
    }                                                                                              \
  }                                                                                                \
  break;
  switch (passes) {
    case 1: QVS_COUNT(1)
    case 2: QVS_COUNT(2)
    case 3: QVS_COUNT(3)
    case 4: QVS_COUNT(4)
    case 5: QVS_COUNT(5)
    case 6: QVS_COUNT(6)
    default: QVS_COUNT(passes) /* narrower digits: up to 8 passes */
  }
#undef QVS_COUNT
  if (m & 1) {
    uint64_t x = (k[m - 1] - sub) >> lo;
    for (int p = 0; p < passes; p++) hist[(size_t)p * nd + ((x >> (p * dw)) & dm)]++;
  }
  for (size_t d = 0; d < (size_t)passes * nd; d++) hist[d] += h2[d];
}

/* The counts of every pass are taken in one read (qv_radix_count). */
bool qv_radix_sort_words(uint64_t *w, uint64_t *t, int64_t m, int lo, int bits, uint32_t *hist,
                         uint64_t t_mask) {
  int dw = digit_bits(m, bits);
  int passes = (bits + dw - 1) / dw;
  size_t nd = (size_t)1 << dw;
  uint64_t dm = nd - 1;
  qv_radix_count(w, m, 0, lo, dw, passes, hist);
  uint64_t x0 = w[0] >> lo;
  int used[8], n_used = 0; /* the passes whose digit varies */
  for (int p = 0; p < passes; p++)
    if (hist[(size_t)p * nd + ((x0 >> (p * dw)) & dm)] != (uint64_t)m) used[n_used++] = p;
  uint64_t *src = w, *dst = t;
  for (int u = 0; u < n_used; u++) {
    int p = used[u], sh = lo + p * dw;
    uint32_t *h = hist + (size_t)p * nd;
    uint32_t at = 0;
    for (size_t d = 0; d < nd; d++) {
      uint32_t c = h[d];
      h[d] = at;
      at += c;
    }
    uint64_t mask = u == n_used - 1 && dst == t ? t_mask : ~(uint64_t)0;
    for (int64_t i = 0; i < m; i++) {
      uint64_t x = src[i];
      dst[h[(x >> sh) & dm]++] = x & mask;
    }
    uint64_t *tmp = src;
    src = dst;
    dst = tmp;
  }
  return src != w;
}
