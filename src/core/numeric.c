/*
 * numeric.c — value conversions with exact semantics: decimal integers of
 * 32..256 bits to and from base-10 text, IEEE binary16 to and from double,
 * and shortest round-trip formatting of floating-point values. Core layer;
 * used by the JSON integration format (src/ipc/json.c) and by the value
 * rendering of array comparison (compare.c).
 */
#include "core/numeric_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A 256-bit magnitude as eight 32-bit limbs, least significant first. */
#define LIMBS 8

static bool mag_mul10_add(uint32_t *m, uint32_t digit) {
  uint64_t carry = digit;
  for (int i = 0; i < LIMBS; i++) {
    uint64_t v = (uint64_t)m[i] * 10u + carry;
    m[i] = (uint32_t)v;
    carry = v >> 32;
  }
  return carry == 0;
}

/* Two's complement negation of a 256-bit value. */
static void mag_negate(uint32_t *m) {
  uint64_t carry = 1;
  for (int i = 0; i < LIMBS; i++) {
    uint64_t v = (uint64_t)(uint32_t)~m[i] + carry;
    m[i] = (uint32_t)v;
    carry = v >> 32;
  }
}

/* Compare magnitude with 2^bitpos: <0, 0, >0. */
static int mag_cmp_pow2(const uint32_t *m, int bitpos) {
  int limb = bitpos / 32, bit = bitpos % 32;
  for (int i = LIMBS - 1; i > limb; i--)
    if (m[i] != 0) return 1;
  uint32_t top = m[limb], want = 1u << bit;
  if (top > want) return 1;
  if (top < want) return -1;
  for (int i = limb - 1; i >= 0; i--)
    if (m[i] != 0) return 1;
  return 0;
}

bool qv_num_decimal_parse(const char *s, int64_t len, int nbytes, uint8_t *out) {
  if (nbytes != 4 && nbytes != 8 && nbytes != 16 && nbytes != 32) return false;
  int64_t i = 0;
  bool neg = false;
  if (i < len && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  if (i >= len) return false;
  uint32_t m[LIMBS] = {0};
  for (; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (!mag_mul10_add(m, (uint32_t)(s[i] - '0'))) return false;
  }
  int bits = nbytes * 8;
  /* Range of a signed bits-wide integer: [-2^(bits-1), 2^(bits-1)). */
  int c = mag_cmp_pow2(m, bits - 1);
  if (c > 0 || (c == 0 && !neg)) return false;
  if (neg) mag_negate(m);
  for (int b = 0; b < nbytes; b++) out[b] = (uint8_t)(m[b / 4] >> (8 * (b % 4)));
  return true;
}

int qv_decimal_to_string(const uint8_t *in, int nbytes, int32_t scale, char *out) {
  uint32_t m[LIMBS];
  bool neg = nbytes > 0 && (in[nbytes - 1] & 0x80);
  uint8_t bytes[QV_DECIMAL_MAX_BYTES];
  if (nbytes > QV_DECIMAL_MAX_BYTES) nbytes = QV_DECIMAL_MAX_BYTES;
  memcpy(bytes, in, (size_t)nbytes);
  memset(bytes + nbytes, neg ? 0xff : 0, (size_t)(QV_DECIMAL_MAX_BYTES - nbytes));
  for (int i = 0; i < LIMBS; i++)
    m[i] = (uint32_t)bytes[4 * i] | (uint32_t)bytes[4 * i + 1] << 8 |
           (uint32_t)bytes[4 * i + 2] << 16 | (uint32_t)bytes[4 * i + 3] << 24;
  if (neg) mag_negate(m);
  /* Repeated division by 10^9 gives base-1e9 chunks, least significant
   * first; at most 78 decimal digits for 256 bits. */
  char digits[88];
  int nd = 0;
  for (;;) {
    bool zero = true;
    uint64_t rem = 0;
    for (int i = LIMBS - 1; i >= 0; i--) {
      uint64_t cur = (rem << 32) | m[i];
      m[i] = (uint32_t)(cur / 1000000000u);
      rem = cur % 1000000000u;
      if (m[i] != 0) zero = false;
    }
    for (int k = 0; k < 9; k++) {
      digits[nd++] = (char)('0' + rem % 10);
      rem /= 10;
    }
    if (zero) break;
  }
  while (nd > 1 && digits[nd - 1] == '0') nd--; /* strip leading zeros */
  int n = 0;
  if (neg) out[n++] = '-';
  if (scale > 0) {
    int32_t sc = scale > 80 ? 80 : scale;
    if (nd <= sc) {
      out[n++] = '0';
      out[n++] = '.';
      for (int k = 0; k < sc - nd; k++) out[n++] = '0';
      for (int k = nd - 1; k >= 0; k--) out[n++] = digits[k];
    } else {
      for (int k = nd - 1; k >= 0; k--) {
        out[n++] = digits[k];
        if (k == sc && k > 0) out[n++] = '.';
      }
    }
  } else {
    for (int k = nd - 1; k >= 0; k--) out[n++] = digits[k];
    if (scale < 0) n += snprintf(out + n, 16, "e%ld", -(long)scale);
  }
  out[n] = '\0';
  return n;
}

double qv_half_to_double(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = ldexp((double)mant, -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = ldexp((double)(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

uint16_t qv_double_to_half(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  double a = fabs(d);
  if (isnan(d)) return (uint16_t)(sign | 0x7e00);
  /* 65520 is halfway between the largest half (65504) and 2^16; ties go
   * to even, which is the infinity encoding. */
  if (a >= 65520.0) return (uint16_t)(sign | 0x7c00);
  if (a < ldexp(1.0, -14)) { /* subnormal (or rounds up to min normal) */
    double m = rint(ldexp(a, 24));
    return (uint16_t)(sign | (uint16_t)m);
  }
  int e;
  double f = frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
  int exp = e - 1;         /* a = (2f) * 2^exp */
  double mant = rint((2.0 * f - 1.0) * 1024.0);
  if (mant >= 1024.0) {
    mant = 0;
    exp++;
  }
  if (exp + 15 >= 31) return (uint16_t)(sign | 0x7c00);
  return (uint16_t)(sign | (uint16_t)((exp + 15) << 10) | (uint16_t)mant);
}

int qv_num_format_double(double v, bool single, char *out) {
  if (isnan(v)) return snprintf(out, 32, "NaN");
  if (isinf(v)) return snprintf(out, 32, v < 0 ? "-Infinity" : "Infinity");
  int maxp = single ? 9 : 17;
  for (int p = 1; p <= maxp; p++) {
    int n = snprintf(out, 32, "%.*g", p, v);
    double back = strtod(out, NULL);
    if (single ? (float)back == (float)v : back == v) return n;
  }
  return snprintf(out, 32, "%.*g", maxp, v);
}

bool qv_num_parse_uint64(const char *s, int64_t len, uint64_t *out) {
  int64_t i = 0;
  if (i < len && s[i] == '+') i++;
  if (i >= len) return false;
  uint64_t v = 0;
  for (; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    uint64_t d = (uint64_t)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool qv_num_parse_int64(const char *s, int64_t len, int64_t *out) {
  bool neg = len > 0 && s[0] == '-';
  uint64_t mag;
  if (neg) {
    if (len < 2 || s[1] == '+' || !qv_num_parse_uint64(s + 1, len - 1, &mag)) return false;
    if (mag > (uint64_t)INT64_MAX + 1) return false;
    *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
  } else {
    if (!qv_num_parse_uint64(s, len, &mag) || mag > (uint64_t)INT64_MAX) return false;
    *out = (int64_t)mag;
  }
  return true;
}
