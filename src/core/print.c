/*
 * print.c — JSON rendering of array values and record-batch rows, used by
 * `quiver head` / `quiver get`, and the growable qv_strbuf it writes into.
 * Part of the core layer: needs only types, arrays and buffers.
 *
 * The mapping from Arrow types to JSON is specified in docs/json-rows.md;
 * the comments below only note how each rule is implemented. Every read of
 * a buffer is bounds-checked against the buffer's size (cheap, and it keeps
 * a malformed array from turning into an out-of-bounds read). The public
 * format calls run under the mapped-read guard (quiver/guard.h).
 */
#include "quiver/print.h"
#include "core/guard_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================== */
/* qv_strbuf                                                                 */

void qv_strbuf_init(qv_strbuf *sb) {
  sb->data = NULL;
  sb->len = 0;
  sb->cap = 0;
}

void qv_strbuf_reset(qv_strbuf *sb) {
  if (!sb) return;
  free(sb->data);
  qv_strbuf_init(sb);
}

void qv_strbuf_clear(qv_strbuf *sb) {
  sb->len = 0;
  if (sb->data) sb->data[0] = '\0';
}

const char *qv_strbuf_cstr(const qv_strbuf *sb) { return sb->data ? sb->data : ""; }

qv_status qv_strbuf_reserve(qv_strbuf *sb, int64_t n, qv_error *err) {
  int64_t need;
  if (n < 0 || qv_add_overflow(sb->len, n, &need) || qv_add_overflow(need, 1, &need))
    return qv_error_set(err, QV_ENOMEM, "string buffer size overflows");
  if (need <= sb->cap) return QV_OK;
  int64_t cap = sb->cap ? sb->cap : 64;
  while (cap < need) {
    if (cap > INT64_MAX / 2) return qv_error_set(err, QV_ENOMEM, "string buffer size overflows");
    cap *= 2;
  }
  char *d = realloc(sb->data, (size_t)cap);
  if (!d)
    return qv_error_set(err, QV_ENOMEM, "out of memory growing a string buffer to %lld bytes",
                        (long long)cap);
  sb->data = d;
  sb->cap = cap;
  return QV_OK;
}

qv_status qv_strbuf_append(qv_strbuf *sb, const void *bytes, int64_t n, qv_error *err) {
  QV_RETURN_NOT_OK(qv_strbuf_reserve(sb, n, err));
  if (n > 0) memcpy(sb->data + sb->len, bytes, (size_t)n);
  sb->len += n;
  sb->data[sb->len] = '\0';
  return QV_OK;
}

qv_status qv_strbuf_append_str(qv_strbuf *sb, const char *s, qv_error *err) {
  return qv_strbuf_append(sb, s, (int64_t)strlen(s), err);
}

qv_status qv_strbuf_append_char(qv_strbuf *sb, char c, qv_error *err) {
  return qv_strbuf_append(sb, &c, 1, err);
}

qv_status qv_strbuf_printf(qv_strbuf *sb, qv_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[128];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return qv_error_set(err, QV_EARG, "bad format string");
  if ((size_t)n < sizeof small) return qv_strbuf_append(sb, small, n, err);
  QV_RETURN_NOT_OK(qv_strbuf_reserve(sb, n, err));
  va_start(ap, fmt);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += n;
  return QV_OK;
}

#define APPEND(s) QV_RETURN_NOT_OK(qv_strbuf_append_str(out, (s), err))
#define APPENDC(c) QV_RETURN_NOT_OK(qv_strbuf_append_char(out, (c), err))

/* ======================================================================== */
/* Strings and bytes                                                         */

/* Length of the valid UTF-8 sequence starting at s[0] (n bytes left), or 0
 * when s[0] does not start one (overlongs, surrogates, > U+10FFFF and
 * truncated sequences are invalid). */
static int utf8_seq_len(const uint8_t *s, int64_t n) {
  uint8_t c = s[0];
  if (c < 0x80) return 1;
  int len;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c == 0xE0) {
    len = 3;
    lo = 0xA0;
  } else if (c >= 0xE1 && c <= 0xEC) len = 3;
  else if (c == 0xED) {
    len = 3;
    hi = 0x9F;
  } else if (c >= 0xEE && c <= 0xEF) len = 3;
  else if (c == 0xF0) {
    len = 4;
    lo = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) len = 4;
  else if (c == 0xF4) {
    len = 4;
    hi = 0x8F;
  } else return 0;
  if (n < len) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (int i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return len;
}

qv_status qv_json_append_string(qv_strbuf *out, const uint8_t *s, int64_t n, qv_error *err) {
  static const char hex[] = "0123456789abcdef";
  QV_RETURN_NOT_OK(qv_strbuf_reserve(out, n + 2, err));
  APPENDC('"');
  int64_t i = 0;
  while (i < n) {
    /* Copy the longest run that needs no escaping in one go. */
    int64_t j = i;
    while (j < n && s[j] >= 0x20 && s[j] < 0x80 && s[j] != '"' && s[j] != '\\') j++;
    if (j > i) {
      QV_RETURN_NOT_OK(qv_strbuf_append(out, s + i, j - i, err));
      i = j;
      continue;
    }
    uint8_t c = s[i];
    if (c == '"') {
      APPEND("\\\"");
      i++;
      continue;
    }
    if (c == '\\') {
      APPEND("\\\\");
      i++;
      continue;
    }
    if (c < 0x20) {
      switch (c) {
        case '\n': APPEND("\\n"); break;
        case '\r': APPEND("\\r"); break;
        case '\t': APPEND("\\t"); break;
        case '\b': APPEND("\\b"); break;
        case '\f': APPEND("\\f"); break;
        default: {
          char esc[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
          APPEND(esc);
        }
      }
      i++;
      continue;
    }
    int len = utf8_seq_len(s + i, n - i);
    if (len == 0) {
      APPEND("\\ufffd");
      i++;
    } else {
      QV_RETURN_NOT_OK(qv_strbuf_append(out, s + i, len, err));
      i += len;
    }
  }
  APPENDC('"');
  return QV_OK;
}

/* Standard base64 (RFC 4648 section 4, with '=' padding) as a JSON string. */
static qv_status append_base64(qv_strbuf *out, const uint8_t *s, int64_t n, qv_error *err) {
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  int64_t groups = n / 3 + (n % 3 != 0);
  int64_t need;
  if (qv_mul_overflow(groups, 4, &need))
    return qv_error_set(err, QV_ENOMEM, "binary value too large to print");
  QV_RETURN_NOT_OK(qv_strbuf_reserve(out, need + 2, err));
  char *p = out->data + out->len;
  *p++ = '"';
  int64_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
    *p++ = tbl[v >> 18];
    *p++ = tbl[(v >> 12) & 63];
    *p++ = tbl[(v >> 6) & 63];
    *p++ = tbl[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)s[i] << 16;
    *p++ = tbl[v >> 18];
    *p++ = tbl[(v >> 12) & 63];
    *p++ = '=';
    *p++ = '=';
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
    *p++ = tbl[v >> 18];
    *p++ = tbl[(v >> 12) & 63];
    *p++ = tbl[(v >> 6) & 63];
    *p++ = '=';
  }
  *p++ = '"';
  out->len = p - out->data;
  *p = '\0';
  return QV_OK;
}

/* ======================================================================== */
/* Floating point                                                            */

static double half_to_double(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0) v = ldexp((double)m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexp((double)(m | 1024), e - 25);
  return sign ? -v : v;
}

/* Round a double to the nearest half (ties to even). Exact arithmetic:
 * every step is a power-of-two scaling or an exact subtraction. */
static uint16_t half_from_double(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  d = fabs(d);
  if (isnan(d)) return sign | 0x7e00;
  if (d >= 65520.0) return sign | 0x7c00; /* rounds to infinity */
  if (d < 0x1p-14)                        /* subnormal: units of 2^-24; 1024 encodes 2^-14 */
    return sign | (uint16_t)nearbyint(d * 0x1p24);
  int e;
  double f = frexp(d, &e); /* d = f * 2^e, f in [0.5, 1) */
  double m = nearbyint((2 * f - 1) * 1024);
  int biased = e - 1 + 15;
  if (m == 1024) {
    m = 0;
    biased++;
  }
  if (biased >= 31) return sign | 0x7c00;
  return sign | (uint16_t)(biased << 10) | (uint16_t)m;
}

typedef enum { FLOAT_BITS_16, FLOAT_BITS_32, FLOAT_BITS_64 } float_bits;

static bool round_trips(const char *text, double v, float_bits bits) {
  double back = strtod(text, NULL);
  switch (bits) {
    case FLOAT_BITS_64: return back == v;
    case FLOAT_BITS_32: return strtof(text, NULL) == (float)v;
    case FLOAT_BITS_16: return half_from_double(back) == half_from_double(v);
  }
  return false;
}

/* Shortest round-tripping digits of finite v != 0 for the given width,
 * laid out as Python's repr does: positional when -4 <= exp10 < 16, else
 * d.ddde+XX. */
static qv_status format_float(qv_strbuf *out, double v, float_bits bits, qv_error *err) {
  if (isnan(v)) {
    APPEND("\"NaN\"");
    return QV_OK;
  }
  if (isinf(v)) {
    APPEND(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    return QV_OK;
  }
  if (signbit(v)) APPENDC('-');
  v = fabs(v);
  if (v == 0) {
    APPEND("0.0");
    return QV_OK;
  }
  char text[40];
  int max_digits = bits == FLOAT_BITS_64 ? 17 : bits == FLOAT_BITS_32 ? 9 : 5;
  /* Where to start the search. A normal value's rounding interval is at
   * most half an ulp wide on either side (2^-53, 2^-24, 2^-11 of v), less
   * than half the spacing of decimals with `first` significant digits
   * (>= 0.5 * 10^-first of v, at the top of a decade). So when any decimal of k <= first digits
   * round-trips, v correctly rounded to `first` digits is that decimal
   * padded with zeros, which the trimming below removes: starting at
   * `first` prints exactly what starting at 1 would, with 1-3 tries instead
   * of up to 17. Subnormals have wider intervals and search from 1. */
  double min_normal = bits == FLOAT_BITS_64   ? 0x1p-1022
                      : bits == FLOAT_BITS_32 ? 0x1p-126
                                              : 0x1p-14;
  int first = v < min_normal ? 1 : bits == FLOAT_BITS_64 ? 15 : bits == FLOAT_BITS_32 ? 6 : 3;
  for (int p = first; p <= max_digits; p++) {
    snprintf(text, sizeof text, "%.*e", p - 1, v);
    if (round_trips(text, v, bits)) break;
  }
  /* text is "d[.ddd]e[+-]XX": collect digits and exponent. */
  char digits[24];
  int nd = 0;
  const char *q = text;
  for (; *q && *q != 'e'; q++)
    if (*q >= '0' && *q <= '9') digits[nd++] = *q;
  int exp10 = atoi(q + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--; /* trailing zeros */
  digits[nd] = '\0';
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 < 0) {
      APPEND("0.");
      for (int i = 0; i < -exp10 - 1; i++) APPENDC('0');
      APPEND(digits);
    } else {
      int int_digits = exp10 + 1;
      for (int i = 0; i < int_digits; i++) APPENDC(i < nd ? digits[i] : '0');
      APPENDC('.');
      if (nd > int_digits) APPEND(digits + int_digits);
      else APPENDC('0');
    }
  } else {
    APPENDC(digits[0]);
    if (nd > 1) {
      APPENDC('.');
      APPEND(digits + 1);
    }
    QV_RETURN_NOT_OK(
        qv_strbuf_printf(out, err, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10));
  }
  return QV_OK;
}

qv_status qv_format_double(qv_strbuf *out, double v, qv_error *err) {
  if (isnan(v)) {
    APPEND("NaN");
    return QV_OK;
  }
  if (isinf(v)) {
    APPEND(v > 0 ? "Infinity" : "-Infinity");
    return QV_OK;
  }
  return format_float(out, v, FLOAT_BITS_64, err);
}

/* ======================================================================== */
/* Decimals: two's complement little-endian integers of 4..32 bytes         */

static qv_status format_decimal(qv_strbuf *out, const uint8_t *bytes, int width, int32_t scale,
                                qv_error *err) {
  uint32_t limbs[8]; /* little-endian 32-bit limbs */
  int n = width / 4;
  for (int i = 0; i < n; i++) {
    uint32_t x;
    memcpy(&x, bytes + 4 * i, 4);
    limbs[i] = x;
  }
  bool neg = (limbs[n - 1] >> 31) != 0;
  if (neg) { /* two's complement negate: invert and add one */
    uint64_t carry = 1;
    for (int i = 0; i < n; i++) {
      uint64_t s = (uint64_t)(uint32_t)~limbs[i] + carry;
      limbs[i] = (uint32_t)s;
      carry = s >> 32;
    }
  }
  /* Repeated division by 10^9 yields base-1e9 chunks, low first. */
  char digits[80];
  int nd = 0;
  int top = n;
  while (top > 0 && limbs[top - 1] == 0) top--;
  while (top > 0) {
    uint64_t rem = 0;
    for (int i = top - 1; i >= 0; i--) {
      uint64_t cur = rem << 32 | limbs[i];
      limbs[i] = (uint32_t)(cur / 1000000000u);
      rem = cur % 1000000000u;
    }
    while (top > 0 && limbs[top - 1] == 0) top--;
    for (int k = 0; k < 9 && (top > 0 || rem > 0 || k == 0); k++) {
      digits[nd++] = (char)('0' + rem % 10);
      rem /= 10;
    }
  }
  if (nd == 0) digits[nd++] = '0';
  /* digits holds the magnitude, least significant first. */
  APPENDC('"');
  if (neg) APPENDC('-');
  if (scale <= 0) {
    for (int i = nd - 1; i >= 0; i--) APPENDC(digits[i]);
    if (!(nd == 1 && digits[0] == '0'))
      for (int32_t i = 0; i < -scale; i++) APPENDC('0');
  } else if (scale >= nd) {
    APPEND("0.");
    for (int32_t i = 0; i < scale - nd; i++) APPENDC('0');
    for (int i = nd - 1; i >= 0; i--) APPENDC(digits[i]);
  } else {
    for (int i = nd - 1; i >= scale; i--) APPENDC(digits[i]);
    APPENDC('.');
    for (int i = scale - 1; i >= 0; i--) APPENDC(digits[i]);
  }
  APPENDC('"');
  return QV_OK;
}

/* ======================================================================== */
/* Dates and times                                                           */

/* Proleptic Gregorian calendar date of a day count since 1970-01-01
 * (Howard Hinnant's civil_from_days, shifted to eras starting March 1). */
static void civil_from_days(int64_t z, int64_t *year, int *month, int *day) {
  z += 719468; /* days from 0000-03-01 to 1970-01-01 */
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;                                      /* [0, 146096] */
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0,399] */
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
  int64_t mp = (5 * doy + 2) / 153;                                    /* [0, 11] */
  *day = (int)(doy - (153 * mp + 2) / 5 + 1);
  *month = (int)(mp < 10 ? mp + 3 : mp - 9);
  *year = yoe + era * 400 + (*month <= 2);
}

static qv_status append_date(qv_strbuf *out, int64_t days, qv_error *err) {
  int64_t y;
  int m, d;
  civil_from_days(days, &y, &m, &d);
  if (y >= 0 && y <= 9999) return qv_strbuf_printf(out, err, "%04" PRId64 "-%02d-%02d", y, m, d);
  return qv_strbuf_printf(out, err, "%c%04" PRId64 "-%02d-%02d", y < 0 ? '-' : '+', y < 0 ? -y : y,
                          m, d);
}

static const int64_t k_units_per_second[4] = {1, 1000, 1000000, 1000000000};
static const int k_fraction_digits[4] = {0, 3, 6, 9};

/* Floor division and the matching non-negative remainder. */
static void floor_divmod(int64_t v, int64_t d, int64_t *q, int64_t *r) {
  int64_t qq = v / d, rr = v % d;
  if (rr < 0) {
    qq--;
    rr += d;
  }
  *q = qq;
  *r = rr;
}

static qv_status append_time_of_day(qv_strbuf *out, int64_t secs, int64_t frac, qv_time_unit unit,
                                    qv_error *err) {
  QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "%02d:%02d:%02d", (int)(secs / 3600),
                                    (int)(secs / 60 % 60), (int)(secs % 60)));
  if (unit != QV_SECOND)
    QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, ".%0*" PRId64, k_fraction_digits[unit], frac));
  return QV_OK;
}

/* "+hh:mm" / "-hh:mm" -> offset in seconds. */
static bool parse_fixed_offset(const char *tz, int64_t *secs) {
  if ((tz[0] != '+' && tz[0] != '-') || strlen(tz) != 6 || tz[3] != ':') return false;
  for (int i = 1; i < 6; i++)
    if (i != 3 && (tz[i] < '0' || tz[i] > '9')) return false;
  int h = (tz[1] - '0') * 10 + (tz[2] - '0');
  int m = (tz[4] - '0') * 10 + (tz[5] - '0');
  if (h > 23 || m > 59) return false;
  *secs = (tz[0] == '-' ? -1 : 1) * (int64_t)(h * 3600 + m * 60);
  return true;
}

static qv_status format_timestamp(qv_strbuf *out, int64_t v, const qv_type *t, qv_error *err) {
  int64_t ups = k_units_per_second[t->unit];
  int64_t secs, frac, days, sod;
  floor_divmod(v, ups, &secs, &frac);
  floor_divmod(secs, 86400, &days, &sod);
  const char *tz = t->timezone;
  int64_t offset = 0;
  bool fixed = tz && parse_fixed_offset(tz, &offset);
  if (fixed) { /* shift to local wall time; at most one day either way */
    sod += offset;
    if (sod < 0) {
      sod += 86400;
      days--;
    } else if (sod >= 86400) {
      sod -= 86400;
      days++;
    }
  }
  APPENDC('"');
  QV_RETURN_NOT_OK(append_date(out, days, err));
  APPENDC('T');
  QV_RETURN_NOT_OK(append_time_of_day(out, sod, frac, t->unit, err));
  if (tz && tz[0]) {
    if (fixed) APPEND(tz);
    else if (!strcmp(tz, "UTC") || !strcmp(tz, "Z") || !strcmp(tz, "Etc/UTC")) APPENDC('Z');
    else {
      /* Named zone: no tz database here, so the UTC instant plus the zone
       * as an RFC 9557 suffix annotation. */
      APPEND("Z[");
      APPEND(tz);
      APPENDC(']');
    }
  }
  APPENDC('"');
  return QV_OK;
}

/* |v| without overflow for INT64_MIN. */
static uint64_t magnitude(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

static qv_status format_time(qv_strbuf *out, int64_t v, qv_time_unit unit, qv_error *err) {
  uint64_t mag = magnitude(v);
  uint64_t ups = (uint64_t)k_units_per_second[unit];
  uint64_t secs = mag / ups, frac = mag % ups;
  QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "\"%s%02" PRIu64 ":%02d:%02d", v < 0 ? "-" : "",
                                    secs / 3600, (int)(secs / 60 % 60), (int)(secs % 60)));
  if (unit != QV_SECOND)
    QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, ".%0*" PRIu64, k_fraction_digits[unit], frac));
  APPENDC('"');
  return QV_OK;
}

/* ISO 8601 duration in seconds: "PT1.5S", "-PT0.001S", "PT0S". */
static qv_status format_duration(qv_strbuf *out, int64_t v, qv_time_unit unit, qv_error *err) {
  uint64_t mag = magnitude(v);
  uint64_t ups = (uint64_t)k_units_per_second[unit];
  uint64_t secs = mag / ups, frac = mag % ups;
  QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "\"%sPT%" PRIu64, v < 0 ? "-" : "", secs));
  if (frac) {
    char f[16];
    snprintf(f, sizeof f, "%0*" PRIu64, k_fraction_digits[unit], frac);
    size_t n = strlen(f);
    while (n > 0 && f[n - 1] == '0') f[--n] = '\0';
    APPENDC('.');
    APPEND(f);
  }
  APPEND("S\"");
  return QV_OK;
}

/* ======================================================================== */
/* Element access                                                            */

static qv_status bad_array(qv_error *err, const qv_array *a, const char *what, int64_t index) {
  return qv_error_set(err, QV_EINVAL,
                      "%s array: %s at element %lld is out of "
                      "bounds",
                      qv_type_id_name(a->type->id), what, (long long)index);
}

/* Pointer to `width` bytes of element k (physical index) of buffer b, or
 * NULL if the buffer is absent or too short. */
static const uint8_t *elem_ptr(const qv_array *a, int b, int64_t k, int64_t width) {
  if (b >= a->n_buffers || !a->buffers[b] || k < 0) return NULL;
  int64_t end;
  if (qv_mul_overflow(k, width, &end) || qv_add_overflow(end, width, &end) ||
      end > a->buffers[b]->size)
    return NULL;
  return a->buffers[b]->data + k * width;
}

/* Signed integer of the given byte width at physical index k of buffer b. */
static bool read_int(const qv_array *a, int b, int64_t k, int width, bool is_signed, int64_t *v) {
  const uint8_t *p = elem_ptr(a, b, k, width);
  if (!p) return false;
  *v = qv_load_int(p, width, !is_signed, 0);
  return true;
}

static int int_width(qv_type_id id) {
  int32_t w = qv_int_type_bytes(id);
  return w ? w : 8;
}

static qv_status format_at(const qv_array *a, int64_t row, qv_strbuf *out, int depth,
                           qv_error *err);

/* Elements [start, end) of `child` as a JSON array. */
static qv_status format_range(const qv_array *child, int64_t start, int64_t end, qv_strbuf *out,
                              int depth, qv_error *err) {
  APPENDC('[');
  for (int64_t j = start; j < end; j++) {
    if (j > start) APPENDC(',');
    QV_RETURN_NOT_OK(format_at(child, j, out, depth + 1, err));
  }
  APPENDC(']');
  return QV_OK;
}

static qv_status check_child_range(const qv_array *a, const qv_array *child, int64_t start,
                                   int64_t end, int64_t k, qv_error *err) {
  if (!child || start < 0 || end < start || end > child->length)
    return qv_error_set(err, QV_EINVAL,
                        "%s array: element %lld spans child range [%lld, %lld) "
                        "but the child has %lld elements",
                        qv_type_id_name(a->type->id), (long long)k, (long long)start,
                        (long long)end, (long long)(child ? child->length : 0));
  return QV_OK;
}

static qv_status format_struct(const qv_array *a, int64_t k, qv_strbuf *out, int depth,
                               qv_error *err) {
  APPENDC('{');
  for (int32_t i = 0; i < a->type->n_children && i < a->n_children; i++) {
    if (i) APPENDC(',');
    const char *name = a->type->children[i].name;
    QV_RETURN_NOT_OK(qv_json_append_string(out, (const uint8_t *)name, (int64_t)strlen(name), err));
    APPENDC(':');
    const qv_array *c = a->children[i];
    if (!c || k >= c->length) return bad_array(err, a, "struct child", k);
    QV_RETURN_NOT_OK(format_at(c, k, out, depth + 1, err));
  }
  APPENDC('}');
  return QV_OK;
}

static qv_status cannot_print(qv_error *err, qv_type_id id) {
  return qv_error_set(err, QV_ENOTSUP, "cannot print values of type %s", qv_type_id_name(id));
}

/* Booleans, integers, floats and decimals at physical index k (format_at
 * sends exactly these ids here). */
static qv_status format_number(const qv_array *a, int64_t row, int64_t k, qv_strbuf *out,
                               qv_error *err) {
  const qv_type *t = a->type;
  qv_type_id id = t->id;
  switch (id) {
    case QV_BOOL: {
      if (!elem_ptr(a, 1, k >> 3, 1)) return bad_array(err, a, "value", row);
      APPEND(qv_bit_get(a->buffers[1]->data, k) ? "true" : "false");
      return QV_OK;
    }
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64: {
      int64_t v;
      if (!read_int(a, 1, k, int_width(id), true, &v)) return bad_array(err, a, "value", row);
      return qv_strbuf_printf(out, err, "%" PRId64, v);
    }
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64: {
      int64_t v;
      if (!read_int(a, 1, k, int_width(id), false, &v)) return bad_array(err, a, "value", row);
      return qv_strbuf_printf(out, err, "%" PRIu64, (uint64_t)v);
    }
    case QV_HALF_FLOAT: {
      const uint8_t *p = elem_ptr(a, 1, k, 2);
      if (!p) return bad_array(err, a, "value", row);
      uint16_t h;
      memcpy(&h, p, 2);
      return format_float(out, half_to_double(h), FLOAT_BITS_16, err);
    }
    case QV_FLOAT: {
      const uint8_t *p = elem_ptr(a, 1, k, 4);
      if (!p) return bad_array(err, a, "value", row);
      float f;
      memcpy(&f, p, 4);
      return format_float(out, f, FLOAT_BITS_32, err);
    }
    case QV_DOUBLE: {
      const uint8_t *p = elem_ptr(a, 1, k, 8);
      if (!p) return bad_array(err, a, "value", row);
      double d;
      memcpy(&d, p, 8);
      return format_float(out, d, FLOAT_BITS_64, err);
    }
    default: { /* QV_DECIMAL32, QV_DECIMAL64, QV_DECIMAL128, QV_DECIMAL256 */
      int width = id == QV_DECIMAL32 ? 4 : id == QV_DECIMAL64 ? 8 : id == QV_DECIMAL128 ? 16 : 32;
      const uint8_t *p = elem_ptr(a, 1, k, width);
      if (!p) return bad_array(err, a, "value", row);
      return format_decimal(out, p, width, t->scale, err);
    }
  }
}

/* Dates, times, timestamps, durations and intervals at physical index k
 * (format_at sends exactly these ids here). */
static qv_status format_temporal(const qv_array *a, int64_t row, int64_t k, qv_strbuf *out,
                                 qv_error *err) {
  const qv_type *t = a->type;
  qv_type_id id = t->id;
  switch (id) {
    case QV_DATE32:
    case QV_DATE64: {
      int64_t v;
      if (!read_int(a, 1, k, id == QV_DATE32 ? 4 : 8, true, &v))
        return bad_array(err, a, "value", row);
      int64_t days = v, rem;
      if (id == QV_DATE64) floor_divmod(v, 86400000, &days, &rem);
      APPENDC('"');
      QV_RETURN_NOT_OK(append_date(out, days, err));
      APPENDC('"');
      return QV_OK;
    }
    case QV_TIME32:
    case QV_TIME64: {
      int64_t v;
      if (!read_int(a, 1, k, id == QV_TIME32 ? 4 : 8, true, &v))
        return bad_array(err, a, "value", row);
      return format_time(out, v, t->unit, err);
    }
    case QV_TIMESTAMP: {
      int64_t v;
      if (!read_int(a, 1, k, 8, true, &v)) return bad_array(err, a, "value", row);
      return format_timestamp(out, v, t, err);
    }
    case QV_DURATION: {
      int64_t v;
      if (!read_int(a, 1, k, 8, true, &v)) return bad_array(err, a, "value", row);
      return format_duration(out, v, t->unit, err);
    }
    case QV_INTERVAL_MONTHS: {
      int64_t v;
      if (!read_int(a, 1, k, 4, true, &v)) return bad_array(err, a, "value", row);
      return qv_strbuf_printf(out, err, "{\"months\":%" PRId64 "}", v);
    }
    case QV_INTERVAL_DAY_TIME: {
      const uint8_t *p = elem_ptr(a, 1, k, 8);
      if (!p) return bad_array(err, a, "value", row);
      int32_t dm[2];
      memcpy(dm, p, 8);
      return qv_strbuf_printf(out, err, "{\"days\":%d,\"milliseconds\":%d}", (int)dm[0],
                              (int)dm[1]);
    }
    default: { /* QV_INTERVAL_MONTH_DAY_NANO */
      const uint8_t *p = elem_ptr(a, 1, k, 16);
      if (!p) return bad_array(err, a, "value", row);
      int32_t md[2];
      int64_t ns;
      memcpy(md, p, 8);
      memcpy(&ns, p + 8, 8);
      return qv_strbuf_printf(out, err, "{\"months\":%d,\"days\":%d,\"nanoseconds\":%" PRId64 "}",
                              (int)md[0], (int)md[1], ns);
    }
  }
}

/* Strings (JSON strings) and binaries (base64) at physical index k:
 * offset, view and fixed-size layouts. */
static qv_status format_bytes(const qv_array *a, int64_t row, int64_t k, qv_strbuf *out,
                              qv_error *err) {
  const qv_type *t = a->type;
  qv_type_id id = t->id;
  switch (id) {
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int w = (id == QV_BINARY || id == QV_STRING) ? 4 : 8;
      int64_t s, e;
      if (!read_int(a, 1, k, w, true, &s) || !read_int(a, 1, k + 1, w, true, &e))
        return bad_array(err, a, "offset", row);
      if (s < 0 || e < s || !a->buffers[2] || e > a->buffers[2]->size)
        return bad_array(err, a, "value bytes", row);
      const uint8_t *p = a->buffers[2]->data + s;
      if (id == QV_STRING || id == QV_LARGE_STRING)
        return qv_json_append_string(out, p, e - s, err);
      return append_base64(out, p, e - s, err);
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: {
      const uint8_t *v = elem_ptr(a, 1, k, 16);
      if (!v) return bad_array(err, a, "view", row);
      int32_t len, buf_index, off;
      memcpy(&len, v, 4);
      const uint8_t *p;
      if (len < 0) return bad_array(err, a, "view length", row);
      if (len <= 12) {
        p = v + 4;
      } else {
        memcpy(&buf_index, v + 8, 4);
        memcpy(&off, v + 12, 4);
        if (buf_index < 0 || buf_index >= a->n_buffers - 2 || off < 0 ||
            !a->buffers[2 + buf_index] || (int64_t)off + len > a->buffers[2 + buf_index]->size)
          return bad_array(err, a, "view data", row);
        p = a->buffers[2 + buf_index]->data + off;
      }
      if (id == QV_STRING_VIEW) return qv_json_append_string(out, p, len, err);
      return append_base64(out, p, len, err);
    }
    case QV_FIXED_SIZE_BINARY: {
      if (t->byte_width == 0) {
        APPEND("\"\"");
        return QV_OK;
      }
      const uint8_t *p = elem_ptr(a, 1, k, t->byte_width);
      if (!p) return bad_array(err, a, "value", row);
      return append_base64(out, p, t->byte_width, err);
    }
    default: return cannot_print(err, id);
  }
}

/* Entries [s, e) of a map's struct<key, value> child as
 * [{"key":..,"value":..},...]. */
static qv_status format_map_entries(const qv_array *a, int64_t row, const qv_array *child,
                                    int64_t s, int64_t e, qv_strbuf *out, int depth,
                                    qv_error *err) {
  if (child->n_children < 2) return bad_array(err, a, "map entries", row);
  APPENDC('[');
  for (int64_t j = s; j < e; j++) {
    if (j > s) APPENDC(',');
    int64_t ck = child->offset + j;
    const qv_array *keys = child->children[0], *vals = child->children[1];
    if (!keys || !vals || ck >= keys->length || ck >= vals->length)
      return bad_array(err, a, "map entry", row);
    APPEND("{\"key\":");
    QV_RETURN_NOT_OK(format_at(keys, ck, out, depth + 1, err));
    APPEND(",\"value\":");
    QV_RETURN_NOT_OK(format_at(vals, ck, out, depth + 1, err));
    APPENDC('}');
  }
  APPENDC(']');
  return QV_OK;
}

/* Lists, list views, fixed-size lists and maps at physical index k. */
static qv_status format_list(const qv_array *a, int64_t row, int64_t k, qv_strbuf *out, int depth,
                             qv_error *err) {
  const qv_type *t = a->type;
  qv_type_id id = t->id;
  switch (id) {
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: {
      int w = id == QV_LARGE_LIST ? 8 : 4;
      int64_t s, e;
      if (!read_int(a, 1, k, w, true, &s) || !read_int(a, 1, k + 1, w, true, &e))
        return bad_array(err, a, "offset", row);
      const qv_array *child = a->n_children > 0 ? a->children[0] : NULL;
      QV_RETURN_NOT_OK(check_child_range(a, child, s, e, row, err));
      if (id != QV_MAP) return format_range(child, s, e, out, depth, err);
      return format_map_entries(a, row, child, s, e, out, depth, err);
    }
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: {
      int w = id == QV_LIST_VIEW ? 4 : 8;
      int64_t s, n, e;
      if (!read_int(a, 1, k, w, true, &s) || !read_int(a, 2, k, w, true, &n))
        return bad_array(err, a, "offset/size", row);
      if (n < 0 || qv_add_overflow(s, n, &e)) return bad_array(err, a, "size", row);
      const qv_array *child = a->n_children > 0 ? a->children[0] : NULL;
      QV_RETURN_NOT_OK(check_child_range(a, child, s, e, row, err));
      return format_range(child, s, e, out, depth, err);
    }
    case QV_FIXED_SIZE_LIST: {
      int64_t s, e;
      const qv_array *child = a->n_children > 0 ? a->children[0] : NULL;
      if (qv_mul_overflow(k, t->list_size, &s) || qv_add_overflow(s, t->list_size, &e))
        return bad_array(err, a, "list", row);
      QV_RETURN_NOT_OK(check_child_range(a, child, s, e, row, err));
      return format_range(child, s, e, out, depth, err);
    }
    default: return cannot_print(err, id);
  }
}

/* The value a sparse or dense union holds at physical index k. */
static qv_status format_union(const qv_array *a, int64_t row, int64_t k, qv_strbuf *out, int depth,
                              qv_error *err) {
  const qv_type *t = a->type;
  qv_type_id id = t->id;
  int64_t code;
  if (!read_int(a, 0, k, 1, true, &code)) return bad_array(err, a, "type id", row);
  int32_t ci = -1;
  for (int32_t i = 0; i < t->n_children; i++)
    if ((t->type_codes ? t->type_codes[i] : i) == code) ci = i;
  if (ci < 0 || ci >= a->n_children || !a->children[ci]) return bad_array(err, a, "type id", row);
  int64_t ck = k;
  if (id == QV_DENSE_UNION && !read_int(a, 1, k, 4, true, &ck))
    return bad_array(err, a, "offset", row);
  const qv_array *c = a->children[ci];
  if (ck < 0 || ck >= c->length) return bad_array(err, a, "child index", row);
  return format_at(c, ck, out, depth + 1, err);
}

/* The value of the run holding physical index k of a run-end encoded array. */
static qv_status format_run_end(const qv_array *a, int64_t row, int64_t k, qv_strbuf *out,
                                int depth, qv_error *err) {
  if (a->n_children < 2 || !a->children[0] || !a->children[1])
    return bad_array(err, a, "children", row);
  const qv_array *ends = a->children[0];
  int w = int_width(ends->type->id);
  /* First run whose end is > k (run ends are strictly increasing). */
  int64_t lo = 0, hi = ends->length;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2, v;
    if (!read_int(ends, 1, ends->offset + mid, w, true, &v))
      return bad_array(err, a, "run end", row);
    if (v > k) hi = mid;
    else lo = mid + 1;
  }
  if (lo >= ends->length || lo >= a->children[1]->length) return bad_array(err, a, "run", row);
  return format_at(a->children[1], lo, out, depth + 1, err);
}

/* Element `row` (logical) of `a`. k is the physical index row + offset. */
static qv_status format_at(const qv_array *a, int64_t row, qv_strbuf *out, int depth,
                           qv_error *err) {
  if (depth > 256) return qv_error_set(err, QV_ENOTSUP, "value nested deeper than 256 levels");
  if (row < 0 || row >= a->length)
    return qv_error_set(err, QV_ERANGE, "row %lld is outside [0, %lld)", (long long)row,
                        (long long)a->length);
  const qv_type *t = a->type;
  qv_type_id id = t->id;
  int64_t k = a->offset + row;
  if (id == QV_NA) {
    APPEND("null");
    return QV_OK;
  }
  if (id != QV_SPARSE_UNION && id != QV_DENSE_UNION && id != QV_RUN_END_ENCODED &&
      a->n_buffers > 0 && a->buffers[0]) {
    if (!elem_ptr(a, 0, k >> 3, 1)) return bad_array(err, a, "validity bit", row);
    if (!qv_bit_get(a->buffers[0]->data, k)) {
      APPEND("null");
      return QV_OK;
    }
  }

  switch (id) {
    case QV_BOOL:
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64:
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE:
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256: return format_number(a, row, k, out, err);
    case QV_DATE32:
    case QV_DATE64:
    case QV_TIME32:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DURATION:
    case QV_INTERVAL_MONTHS:
    case QV_INTERVAL_DAY_TIME:
    case QV_INTERVAL_MONTH_DAY_NANO: return format_temporal(a, row, k, out, err);
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
    case QV_FIXED_SIZE_BINARY: return format_bytes(a, row, k, out, err);
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_FIXED_SIZE_LIST: return format_list(a, row, k, out, depth, err);
    case QV_STRUCT: return format_struct(a, k, out, depth, err);
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: return format_union(a, row, k, out, depth, err);
    case QV_DICTIONARY: {
      int64_t idx;
      qv_type_id iid = t->index_type->id;
      if (!read_int(a, 1, k, int_width(iid), qv_type_id_is_signed_integer(iid), &idx))
        return bad_array(err, a, "index", row);
      if (!a->dictionary || idx < 0 || idx >= a->dictionary->length)
        return bad_array(err, a, "dictionary index", row);
      return format_at(a->dictionary, idx, out, depth + 1, err);
    }
    case QV_RUN_END_ENCODED: return format_run_end(a, row, k, out, depth, err);
    case QV_NA:
    case QV_TYPE_ID_COUNT: break;
  }
  return cannot_print(err, id);
}

/* A format call under the mapped-read guard (guard.c): the text goes to
 * the caller's strbuf, so a recovery leaves nothing to free. */
typedef struct format_call {
  const qv_array *a;
  int64_t k;
  qv_strbuf *out;
  bool row; /* a whole struct row (format_struct) or one value (format_at) */
} format_call;

static qv_status format_body(void *ctx, qv_error *err) {
  const format_call *c = ctx;
  return c->row ? format_struct(c->a, c->k, c->out, 0, err) : format_at(c->a, c->k, c->out, 0, err);
}

qv_status qv_format_value_json(const qv_array *array, int64_t row, qv_strbuf *out, qv_error *err) {
  if (!array || !out) return qv_error_set(err, QV_EARG, "qv_format_value_json: NULL argument");
  format_call c = {array, row, out, false};
  return qv_guard_run_leaf(format_body, &c, err);
}

qv_status qv_format_row_json(const qv_array *batch, int64_t row, qv_strbuf *out, qv_error *err) {
  if (!batch || !out) return qv_error_set(err, QV_EARG, "qv_format_row_json: NULL argument");
  if (batch->type->id != QV_STRUCT)
    return qv_error_set(err, QV_ETYPE,
                        "qv_format_row_json: expected a struct (record batch) "
                        "array, found %s",
                        qv_type_id_name(batch->type->id));
  if (row < 0 || row >= batch->length)
    return qv_error_set(err, QV_ERANGE, "row %lld is outside [0, %lld)", (long long)row,
                        (long long)batch->length);
  format_call c = {batch, batch->offset + row, out, true};
  return qv_guard_run_leaf(format_body, &c, err);
}
