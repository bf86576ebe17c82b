/*
 * row_avx2.c — row layer: AVX2 kernels for the hot loops (fixed-width
 * encode/decode, value gathers for compare and hash, the hash mixer).
 * Compiled with per-function target attributes (no global -mavx2) and only
 * called when qv_row_use_avx2() says the CPU supports AVX2. Every kernel
 * handles a prefix of its input (whole vectors) and returns its length; the
 * scalar caller finishes the tail, so results are identical either way.
 *
 * Loads from row-table buffers may read up to 7 bytes past a value (the
 * table keeps 64 bytes of padding); loads from caller arrays never read
 * outside the values they address.
 */
#include "row/row_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define QV_AVX2 __attribute__((target("avx2")))

/* 64x64 -> low 64-bit product with a constant, from three 32x32 products. */
QV_AVX2 static inline __m256i mul64c(__m256i x, __m256i m_lo, __m256i m_hi) {
  __m256i lo = _mm256_mul_epu32(x, m_lo);
  __m256i t1 = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m_lo);
  __m256i t2 = _mm256_mul_epu32(x, m_hi);
  return _mm256_add_epi64(lo, _mm256_slli_epi64(_mm256_add_epi64(t1, t2), 32));
}

QV_AVX2 static inline __m256i mix64v(__m256i x) {
  const __m256i m_lo = _mm256_set1_epi64x((long long)(QV_ROW_HASH_M & 0xffffffffu));
  const __m256i m_hi = _mm256_set1_epi64x((long long)(QV_ROW_HASH_M >> 32));
  x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 32));
  x = mul64c(x, m_lo, m_hi);
  x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 32));
  x = mul64c(x, m_lo, m_hi);
  x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 32));
  return x;
}

QV_AVX2 int64_t qv_row_avx2_hash_small(const uint64_t *x, int64_t n, uint64_t *out) {
  const __m256i k = _mm256_set1_epi64x((long long)QV_ROW_HASH_K);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(x + i));
    _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_add_epi64(v, k));
  }
  return i;
}

QV_AVX2 int64_t qv_row_avx2_combine(uint64_t *h, const uint64_t *v, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(h + i));
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(v + i));
    _mm256_storeu_si256((__m256i *)(void *)(h + i), mix64v(_mm256_xor_si256(a, b)));
  }
  return i;
}

QV_AVX2 int64_t qv_row_avx2_eq64(const uint64_t *a, const uint64_t *b, int64_t n, uint8_t *eq) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(a + i));
    __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(b + i));
    int bits = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(x, y)));
    eq[i] = bits & 1;
    eq[i + 1] = (bits >> 1) & 1;
    eq[i + 2] = (bits >> 2) & 1;
    eq[i + 3] = (bits >> 3) & 1;
  }
  return i;
}

static inline long long width_mask(int32_t w) {
  return w >= 8 ? -1LL : (long long)((1ull << (8 * w)) - 1);
}

QV_AVX2 int64_t qv_row_avx2_gather_rows(const qv_row_locator *loc, const int64_t *ids,
                                        int64_t first, int64_t n, int32_t w, uint64_t *out) {
  const long long *base = (const long long *)(const void *)loc->base;
  const __m256i mask = _mm256_set1_epi64x(width_mask(w));
  int64_t i = 0;
  if (loc->stride) {
    const __m256i stride = _mm256_set1_epi64x(loc->stride);
    if (ids) {
      for (; i + 4 <= n; i += 4) {
        __m256i r = _mm256_loadu_si256((const __m256i *)(const void *)(ids + i));
        if (!_mm256_testz_si256(r, _mm256_set1_epi64x((long long)0xffffffff00000000ull)))
          break; /* ids >= 2^32: leave to the scalar loop */
        __m256i idx = _mm256_mul_epu32(r, stride);
        __m256i v = _mm256_i64gather_epi64(base, idx, 1);
        _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_and_si256(v, mask));
      }
    } else {
      int64_t s = loc->stride;
      __m256i idx = _mm256_set_epi64x((first + 3) * s, (first + 2) * s, (first + 1) * s, first * s);
      const __m256i step = _mm256_set1_epi64x(4 * s);
      for (; i + 4 <= n; i += 4) {
        __m256i v = _mm256_i64gather_epi64(base, idx, 1);
        _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_and_si256(v, mask));
        idx = _mm256_add_epi64(idx, step);
      }
    }
  } else {
    const long long *offs = (const long long *)(const void *)loc->offsets;
    for (; i + 4 <= n; i += 4) {
      __m256i idx;
      if (ids) {
        __m256i r = _mm256_loadu_si256((const __m256i *)(const void *)(ids + i));
        idx = _mm256_i64gather_epi64(offs, r, 8);
      } else {
        idx = _mm256_loadu_si256((const __m256i *)(const void *)(offs + first + i));
      }
      __m256i v = _mm256_i64gather_epi64(base, idx, 1);
      _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_and_si256(v, mask));
    }
  }
  return i;
}

QV_AVX2 int64_t qv_row_avx2_gather_col(const uint8_t *values, const int64_t *sel, int64_t n,
                                       int32_t w, uint64_t *out) {
  int64_t i = 0;
  if (sel) {
    if (w == 8) {
      const long long *b = (const long long *)(const void *)values;
      for (; i + 4 <= n; i += 4) {
        __m256i r = _mm256_loadu_si256((const __m256i *)(const void *)(sel + i));
        _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_i64gather_epi64(b, r, 8));
      }
    } else if (w == 4) {
      const int *b = (const int *)(const void *)values;
      for (; i + 4 <= n; i += 4) {
        __m256i r = _mm256_loadu_si256((const __m256i *)(const void *)(sel + i));
        __m128i v = _mm256_i64gather_epi32(b, r, 4);
        _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_cvtepu32_epi64(v));
      }
    }
    return i;
  }
  for (; i + 4 <= n; i += 4) {
    __m256i v;
    switch (w) {
      case 8: v = _mm256_loadu_si256((const __m256i *)(const void *)(values + i * 8)); break;
      case 4:
        v = _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i *)(const void *)(values + i * 4)));
        break;
      case 2:
        v = _mm256_cvtepu16_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(values + i * 2)));
        break;
      case 1: {
        int32_t b4;
        memcpy(&b4, values + i, 4);
        v = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(b4));
        break;
      }
      default: return i;
    }
    _mm256_storeu_si256((__m256i *)(void *)(out + i), v);
  }
  return i;
}

QV_AVX2 int64_t qv_row_avx2_encode_gather(uint8_t *dst, const uint8_t *src, const int64_t *sel,
                                          int64_t n, int32_t w) {
  int64_t i = 0;
  if (w == 8) {
    const long long *b = (const long long *)(const void *)src;
    for (; i + 4 <= n; i += 4) {
      __m256i r = _mm256_loadu_si256((const __m256i *)(const void *)(sel + i));
      _mm256_storeu_si256((__m256i *)(void *)(dst + i * 8), _mm256_i64gather_epi64(b, r, 8));
    }
  } else if (w == 4) {
    const int *b = (const int *)(const void *)src;
    for (; i + 4 <= n; i += 4) {
      __m256i r = _mm256_loadu_si256((const __m256i *)(const void *)(sel + i));
      _mm_storeu_si128((__m128i *)(void *)(dst + i * 4), _mm256_i64gather_epi32(b, r, 4));
    }
  }
  return i;
}

QV_AVX2 int64_t qv_row_avx2_encode_pair(uint8_t *dst, const uint8_t *a, const uint8_t *b, int64_t n,
                                        int32_t w) {
  int64_t i = 0;
  if (w == 4) {
    for (; i + 8 <= n; i += 8) {
      __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(a + i * 4));
      __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(b + i * 4));
      __m256i lo = _mm256_unpacklo_epi32(x, y);
      __m256i hi = _mm256_unpackhi_epi32(x, y);
      _mm256_storeu_si256((__m256i *)(void *)(dst + i * 8),
                          _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256((__m256i *)(void *)(dst + i * 8 + 32),
                          _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  } else if (w == 8) {
    for (; i + 4 <= n; i += 4) {
      __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(a + i * 8));
      __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(b + i * 8));
      __m256i lo = _mm256_unpacklo_epi64(x, y);
      __m256i hi = _mm256_unpackhi_epi64(x, y);
      _mm256_storeu_si256((__m256i *)(void *)(dst + i * 16),
                          _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256((__m256i *)(void *)(dst + i * 16 + 32),
                          _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
  return i;
}

QV_AVX2 int64_t qv_row_avx2_decode_strided(uint8_t *out, const uint8_t *src, int64_t stride,
                                           int64_t n, int32_t w) {
  int64_t i = 0;
  if (stride > (INT32_MAX / 8)) return 0;
  int s = (int)stride;
  if (w == 8) {
    const __m128i idx = _mm_setr_epi32(0, s, 2 * s, 3 * s);
    for (; i + 4 <= n; i += 4) {
      const long long *b = (const long long *)(const void *)(src + i * stride);
      _mm256_storeu_si256((__m256i *)(void *)(out + i * 8), _mm256_i32gather_epi64(b, idx, 1));
    }
    return i;
  }
  const __m256i idx = _mm256_setr_epi32(0, s, 2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s);
  for (; i + 8 <= n; i += 8) {
    const int *b = (const int *)(const void *)(src + i * stride);
    __m256i v = _mm256_i32gather_epi32(b, idx, 1);
    if (w == 4) {
      _mm256_storeu_si256((__m256i *)(void *)(out + i * 4), v);
    } else if (w == 2) {
      v = _mm256_and_si256(v, _mm256_set1_epi32(0xffff));
      v = _mm256_packus_epi32(v, v);         /* per lane: 4 u16 twice */
      v = _mm256_permute4x64_epi64(v, 0x08); /* lanes 0 and 2 */
      _mm_storeu_si128((__m128i *)(void *)(out + i * 2), _mm256_castsi256_si128(v));
    } else if (w == 1) {
      v = _mm256_and_si256(v, _mm256_set1_epi32(0xff));
      v = _mm256_packus_epi32(v, v);
      v = _mm256_packus_epi16(v, v); /* per lane: 4 u8 in dword 0 */
      v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
      _mm_storel_epi64((__m128i *)(void *)(out + i), _mm256_castsi256_si128(v));
    } else {
      return i;
    }
  }
  return i;
}

#else /* no AVX2 on this target: the kernels handle nothing */

int64_t qv_row_avx2_gather_rows(const qv_row_locator *loc, const int64_t *ids, int64_t first,
                                int64_t n, int32_t w, uint64_t *out) {
  return 0;
}
int64_t qv_row_avx2_gather_col(const uint8_t *values, const int64_t *sel, int64_t n, int32_t w,
                               uint64_t *out) {
  return 0;
}
int64_t qv_row_avx2_hash_small(const uint64_t *x, int64_t n, uint64_t *out) { return 0; }
int64_t qv_row_avx2_combine(uint64_t *h, const uint64_t *v, int64_t n) { return 0; }
int64_t qv_row_avx2_eq64(const uint64_t *a, const uint64_t *b, int64_t n, uint8_t *eq) { return 0; }
int64_t qv_row_avx2_encode_gather(uint8_t *dst, const uint8_t *src, const int64_t *sel, int64_t n,
                                  int32_t w) {
  return 0;
}
int64_t qv_row_avx2_encode_pair(uint8_t *dst, const uint8_t *a, const uint8_t *b, int64_t n,
                                int32_t w) {
  return 0;
}
int64_t qv_row_avx2_decode_strided(uint8_t *out, const uint8_t *src, int64_t stride, int64_t n,
                                   int32_t w) {
  return 0;
}
#endif
