/*
 * text_values.c — the value parsers of text_internal.h (integers, reals,
 * booleans, dates, times, ISO 8601 timestamps, UTF-8 checks, pyarrow's
 * null strings) and the array helpers the CSV and JSON Lines readers
 * share. Formats layer.
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "core/atomic_internal.h"
#include "core/parallel_internal.h"
#include "formats/text_internal.h"
#include "quiver/csv.h"

static void trim(const uint8_t **s, int64_t *n) {
  while (*n > 0 && ((*s)[0] == ' ' || (*s)[0] == '\t')) (*s)++, (*n)--;
  while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) (*n)--;
}

#define EQ(s, n, lit) ((n) == (int64_t)sizeof(lit) - 1 && memcmp((s), (lit), sizeof(lit) - 1) == 0)

bool qv_text_is_default_null(const uint8_t *s, int64_t n) {
  switch (n) {
    case 0: return true;
    case 2: return EQ(s, n, "NA");
    case 3:
      return EQ(s, n, "#NA") || EQ(s, n, "N/A") || EQ(s, n, "NaN") || EQ(s, n, "n/a") ||
             EQ(s, n, "nan");
    case 4:
      return EQ(s, n, "#N/A") || EQ(s, n, "-NaN") || EQ(s, n, "-nan") || EQ(s, n, "NULL") ||
             EQ(s, n, "null");
    case 6: return EQ(s, n, "1.#IND");
    case 7: return EQ(s, n, "-1.#IND") || EQ(s, n, "1.#QNAN");
    case 8: return EQ(s, n, "#N/A N/A") || EQ(s, n, "-1.#QNAN");
    default: return false;
  }
}

static int hexval(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool parse_u64(const uint8_t *s, int64_t n, uint64_t *out) {
  if (n == 0) return false;
  uint64_t v = 0;
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    if (n - 2 > 16) return false;
    for (int64_t i = 2; i < n; i++) {
      int h = hexval(s[i]);
      if (h < 0) return false;
      v = v << 4 | (uint64_t)h;
    }
    *out = v;
    return true;
  }
  for (int64_t i = 0; i < n; i++) {
    unsigned d = (unsigned)s[i] - '0';
    if (d > 9) return false;
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool qv_text_parse_uint64(const uint8_t *s, int64_t n, uint64_t *out) {
  trim(&s, &n);
  return parse_u64(s, n, out);
}

bool qv_text_parse_int64(const uint8_t *s, int64_t n, int64_t *out) {
  trim(&s, &n);
  bool neg = n > 0 && s[0] == '-';
  if (neg) {
    s++, n--;
    if (n > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) return false;
  }
  uint64_t v;
  if (!parse_u64(s, n, &v)) return false;
  if (neg) {
    if (v > (uint64_t)INT64_MAX + 1) return false;
    *out = (int64_t)(0 - v);
  } else {
    if (v > (uint64_t)INT64_MAX) return false;
    *out = (int64_t)v;
  }
  return true;
}

static bool ieq(const uint8_t *s, int64_t n, const char *lit) {
  size_t l = strlen(lit);
  if ((int64_t)l != n) return false;
  for (size_t i = 0; i < l; i++) {
    uint8_t c = s[i];
    if (c >= 'A' && c <= 'Z') c = (uint8_t)(c + 32);
    if (c != (uint8_t)lit[i]) return false;
  }
  return true;
}

bool qv_text_parse_double(const uint8_t *s, int64_t n, double *out) {
  trim(&s, &n);
  if (n == 0) return false;
  const uint8_t *p = s, *end = s + n;
  bool neg = false;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  int64_t rest = end - p;
  if (rest >= 3 && (p[0] | 0x20) >= 'a' && (ieq(p, rest, "inf") || ieq(p, rest, "infinity"))) {
    *out = neg ? -INFINITY : INFINITY;
    return true;
  }
  if (rest == 3 && ieq(p, rest, "nan")) {
    *out = neg ? -NAN : NAN;
    return true;
  }
  /* validate the shape: digits [. digits] [e [+-] digits], one digit at least */
  uint64_t mant = 0;
  int digits = 0, mant_digits = 0, exp_adj = 0;
  bool exact = true;
  while (p < end && *p >= '0' && *p <= '9') {
    if (mant_digits < 19) {
      mant = mant * 10 + (uint64_t)(*p - '0');
      if (mant) mant_digits++;
    } else {
      exact = false;
      exp_adj++;
    }
    digits++, p++;
  }
  if (p < end && *p == '.') {
    p++;
    while (p < end && *p >= '0' && *p <= '9') {
      if (mant_digits < 19) {
        mant = mant * 10 + (uint64_t)(*p - '0');
        if (mant) mant_digits++;
        exp_adj--;
      } else {
        exact = false;
      }
      digits++, p++;
    }
  }
  if (digits == 0) return false;
  int64_t e = 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    bool eneg = false;
    if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    if (p >= end) return false;
    while (p < end && *p >= '0' && *p <= '9') {
      if (e < 100000) e = e * 10 + (*p - '0');
      p++;
    }
    if (eneg) e = -e;
  }
  if (p != end) return false;
  e += exp_adj;
  static const double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  if (exact && mant < ((uint64_t)1 << 53) && e >= -22 && e <= 22) {
    double v = (double)mant;
    v = e >= 0 ? v * kPow10[e] : v / kPow10[-e];
    *out = neg ? -v : v;
    return true;
  }
#if defined(__x86_64__) && LDBL_MANT_DIG == 64
  /* 16 to 19 significant digits (what printing a double gives): one
   * correctly rounded x87 operation on exact operands (a 64-bit mantissa
   * holds mant and 10^|e| for |e| <= 27), then the rounding to double.
   * Rounding twice can differ from rounding once only when the 64-bit
   * result is exactly halfway between two doubles (a midpoint lies on the
   * 64-bit grid, so none can lie strictly between the result and the true
   * value, which are less than one 64-bit step apart): then strtod. */
  static const long double kPow10L[] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,
                                        1e7L,  1e8L,  1e9L,  1e10L, 1e11L, 1e12L, 1e13L,
                                        1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L,
                                        1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
  if (exact && mant != 0 && e >= -27 && e <= 27) {
    long double l = (long double)mant;
    l = e >= 0 ? l * kPow10L[e] : l / kPow10L[-e];
    uint64_t bits;
    memcpy(&bits, &l, 8); /* the explicit 64-bit mantissa */
    if ((bits & 0x7ff) != 0x400) {
      double v = (double)l;
      *out = neg ? -v : v;
      return true;
    }
  }
#endif
  /* slow path: strtod on a copy (the shape is known to be plain decimal) */
  char buf[128];
  char *heap = NULL, *b = buf;
  if (n >= (int64_t)sizeof buf) {
    if ((heap = malloc((size_t)n + 1)) == NULL) return false;
    b = heap;
  }
  memcpy(b, s, (size_t)n);
  b[n] = '\0';
  *out = strtod(b, NULL);
  free(heap);
  return true;
}

bool qv_text_parse_bool(const uint8_t *s, int64_t n, bool *out) {
  if (n < 1 || n > 5) return false;
  if (EQ(s, n, "1") || EQ(s, n, "True") || EQ(s, n, "TRUE") || EQ(s, n, "true")) {
    *out = true;
    return true;
  }
  if (EQ(s, n, "0") || EQ(s, n, "False") || EQ(s, n, "FALSE") || EQ(s, n, "false")) {
    *out = false;
    return true;
  }
  return false;
}

static bool digits_at(const uint8_t *s, int k, int *out) {
  int v = 0;
  for (int i = 0; i < k; i++) {
    unsigned d = (unsigned)s[i] - '0';
    if (d > 9) return false;
    v = v * 10 + (int)d;
  }
  *out = v;
  return true;
}

/* Days from 1970-01-01 of a proleptic Gregorian date (the classic
 * era-based civil-to-days formula). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static bool parse_ymd(const uint8_t *s, int64_t n, int64_t *days) {
  if (n < 10 || s[4] != '-' || s[7] != '-') return false;
  int y, m, d;
  if (!digits_at(s, 4, &y) || !digits_at(s + 5, 2, &m) || !digits_at(s + 8, 2, &d)) return false;
  if (y < 1 || m < 1 || m > 12 || d < 1) return false;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int dim = kDays[m - 1] + (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
  if (d > dim) return false;
  *days = days_from_civil(y, m, d);
  return true;
}

bool qv_text_parse_date(const uint8_t *s, int64_t n, int32_t *out) {
  trim(&s, &n);
  int64_t days;
  if (n != 10 || !parse_ymd(s, n, &days)) return false;
  *out = (int32_t)days;
  return true;
}

static bool parse_hms(const uint8_t *s, int64_t n, int *secs, bool allow_hour_only) {
  int h, m = 0, sec = 0;
  if (n == 2 && allow_hour_only) {
    if (!digits_at(s, 2, &h)) return false;
  } else if (n == 5 && s[2] == ':') {
    if (!digits_at(s, 2, &h) || !digits_at(s + 3, 2, &m)) return false;
  } else if (n == 8 && s[2] == ':' && s[5] == ':') {
    if (!digits_at(s, 2, &h) || !digits_at(s + 3, 2, &m) || !digits_at(s + 6, 2, &sec))
      return false;
  } else {
    return false;
  }
  if (h > 23 || m > 59 || sec > 59) return false;
  *secs = h * 3600 + m * 60 + sec;
  return true;
}

bool qv_text_parse_time(const uint8_t *s, int64_t n, int32_t *out) {
  int secs;
  if (!parse_hms(s, n, &secs, false)) return false;
  *out = secs;
  return true;
}

bool qv_text_parse_timestamp(const uint8_t *s, int64_t n, int64_t *seconds, int32_t *nanos,
                             int *frac_digits, bool *zoned) {
  int64_t days;
  if (n < 10 || !parse_ymd(s, 10, &days)) return false;
  int64_t secs = days * 86400;
  *nanos = 0;
  *frac_digits = 0;
  *zoned = false;
  if (n == 10) {
    *seconds = secs;
    return true;
  }
  if (s[10] != 'T' && s[10] != ' ') return false;
  const uint8_t *p = s + 11, *end = s + n;
  /* the zone starts at the first Z, + or - after the time */
  const uint8_t *z = p;
  while (z < end && *z != 'Z' && *z != '+' && *z != '-') z++;
  const uint8_t *tend = z;
  /* fraction */
  const uint8_t *dot = memchr(p, '.', (size_t)(tend - p));
  int hms;
  if (!parse_hms(p, (dot ? dot : tend) - p, &hms, true)) return false;
  if (dot) {
    if ((dot - p) != 8) return false;
    int64_t k = tend - dot - 1;
    if (k < 1 || k > 9) return false;
    int32_t f = 0;
    for (int64_t i = 0; i < k; i++) {
      unsigned d = (unsigned)dot[1 + i] - '0';
      if (d > 9) return false;
      f = f * 10 + (int32_t)d;
    }
    for (int64_t i = k; i < 9; i++) f *= 10;
    *nanos = f;
    *frac_digits = (int)k;
  }
  secs += hms;
  if (z < end) {
    *zoned = true;
    if (*z == 'Z') {
      if (z + 1 != end) return false;
    } else {
      int sign = *z == '-' ? -1 : 1, zh, zm = 0;
      const uint8_t *q = z + 1;
      int64_t zn = end - q;
      if (zn == 2) {
        if (!digits_at(q, 2, &zh)) return false;
      } else if (zn == 4) {
        if (!digits_at(q, 2, &zh) || !digits_at(q + 2, 2, &zm)) return false;
      } else if (zn == 5 && q[2] == ':') {
        if (!digits_at(q, 2, &zh) || !digits_at(q + 3, 2, &zm)) return false;
      } else {
        return false;
      }
      if (zh > 23 || zm > 59) return false;
      secs -= sign * (zh * 3600 + zm * 60);
    }
  }
  *seconds = secs;
  return true;
}

bool qv_text_valid_utf8(const uint8_t *s, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    /* ASCII fast path, 8 bytes at a time */
    while (i + 8 <= n) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int k;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) k = 1, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0) k = 2, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0) k = 3, cp = c & 0x07;
    else return false;
    for (int j = 1; j <= k; j++) {
      if (i + j >= n || (s[i + j] & 0xc0) != 0x80) return false;
      cp = cp << 6 | (s[i + j] & 0x3f);
    }
    if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += k + 1;
  }
  return true;
}

/* ---- arrays ------------------------------------------------------------ */

bool qv_bytes_reserve(qv_bytes *b, int64_t extra) {
  int64_t need = b->len + extra;
  if (need <= b->cap) return true;
  int64_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap *= 2;
  uint8_t *d = realloc(b->data, (size_t)cap);
  if (d == NULL) return false;
  b->data = d;
  b->cap = cap;
  return true;
}

void qv_bytes_free(qv_bytes *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

qv_status qv_text_make_array(qv_type *type, int64_t length, int64_t null_count, qv_buffer *b0,
                             qv_buffer *b1, qv_buffer *b2, qv_array **out, qv_error *err) {
  int32_t nb = qv_type_num_buffers(type->id);
  qv_array *a = qv_array_new(type, nb, 0);
  if (a == NULL) {
    qv_buffer_unref(b0);
    qv_buffer_unref(b1);
    qv_buffer_unref(b2);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  qv_buffer *bs[3] = {b0, b1, b2};
  for (int i = 0; i < 3; i++) {
    if (i < nb) a->buffers[i] = bs[i];
    else qv_buffer_unref(bs[i]);
  }
  a->length = length;
  a->null_count = null_count;
  *out = a;
  return QV_OK;
}

qv_status qv_text_buffer_from(const void *data, int64_t n, qv_buffer **out, qv_error *err) {
  QV_RETURN_NOT_OK(qv_buffer_alloc(n, out, err));
  if (n > 0) memcpy((*out)->data, data, (size_t)n);
  return QV_OK;
}

qv_status qv_text_read_file(const char *path, qv_buffer **out, qv_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return qv_error_set(err, QV_EIO, "cannot open '%s': %s", path, strerror(errno));
  qv_status st = qv_buffer_read_fd(fd, 0, out, err);
  close(fd);
  if (st != QV_OK) qv_error_prefix(err, st, "%s: ", path);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Streaming input                                                           */

enum { ZIN_CHUNK = 1 << 17 };

qv_status qv_text_window_open(qv_text_window *w, const char *path, qv_error *err) {
  memset(w, 0, sizeof *w);
  w->path = path;
  w->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (w->fd < 0) return qv_error_set(err, QV_EIO, "cannot open '%s': %s", path, strerror(errno));
  /* compressed by its magic bytes, whatever the name */
  uint8_t magic[4] = {0};
  ssize_t got = pread(w->fd, magic, 4, 0);
  if (got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    int fd2 = dup(w->fd);
    if (fd2 < 0 || (w->gz = gzdopen(fd2, "rb")) == NULL) {
      if (fd2 >= 0) close(fd2);
      return qv_error_set(err, QV_EIO, "%s: cannot start gzip decompression", path);
    }
    gzbuffer(w->gz, 1 << 17);
  } else if (got == 4 && memcmp(magic, "\x28\xb5\x2f\xfd", 4) == 0) {
    w->zstd = ZSTD_createDCtx();
    w->zin = malloc(ZIN_CHUNK);
    if (w->zstd == NULL || w->zin == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  return QV_OK;
}

qv_status qv_text_stream_open(qv_text_window *w, const char *path, int threads, int64_t block_size,
                              qv_pool **pool, int64_t *file_size, int64_t *nbw,
                              int64_t *window_bytes, qv_error *err) {
  *pool = NULL;
  *file_size = -1;
  QV_RETURN_NOT_OK(qv_text_window_open(w, path, err));
  struct stat sb;
  if (fstat(w->fd, &sb) == 0 && !w->gz && !w->zstd) *file_size = (int64_t)sb.st_size;
  if (threads <= 0) threads = qv_cpu_count();
  int64_t bs = block_size > 0 ? block_size : (1 << 20);
  *nbw = 2 * (int64_t)threads;
  *window_bytes = *nbw * bs;
  return qv_pool_new(threads + 1, pool, err);
}

/* Up to `cap` bytes of the (decompressed) file into dst: 0 at its end. */
static int64_t window_read(qv_text_window *w, uint8_t *dst, int64_t cap, qv_error *err) {
  if (cap > (1 << 30)) cap = 1 << 30;
  if (w->gz) {
    int k = gzread(w->gz, dst, (unsigned)cap), code = Z_OK;
    if (k == 0 && (gzerror(w->gz, &code), code == Z_BUF_ERROR)) {
      /* the input ended inside a member: zlib's "more may come" */
      qv_error_set(err, QV_EINVAL, "%s: bad gzip data: the file is truncated", w->path);
      return -1;
    }
    if (k < 0) {
      const char *m = gzerror(w->gz, &code);
      qv_error_set(err, QV_EINVAL, "%s: bad gzip data: %s", w->path, m ? m : "?");
      return -1;
    }
    return k;
  }
  if (w->zstd) {
    ZSTD_outBuffer out = {dst, (size_t)cap, 0};
    while (out.pos == 0) {
      if (w->zin_pos == w->zin_len) {
        if (w->zin_eof && w->zin_mid) {
          qv_error_set(err, QV_EINVAL, "%s: bad zstd data: the file is truncated", w->path);
          return -1;
        }
        if (w->zin_eof) return 0;
        ssize_t k = read(w->fd, w->zin, ZIN_CHUNK);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
          qv_error_set(err, QV_EIO, "%s: read failed: %s", w->path, strerror(errno));
          return -1;
        }
        if (k == 0) {
          w->zin_eof = true;
          continue;
        }
        w->zin_len = k;
        w->zin_pos = 0;
      }
      ZSTD_inBuffer in = {w->zin, (size_t)w->zin_len, (size_t)w->zin_pos};
      size_t r = ZSTD_decompressStream(w->zstd, &out, &in);
      w->zin_pos = (int64_t)in.pos;
      if (ZSTD_isError(r)) {
        qv_error_set(err, QV_EINVAL, "%s: bad zstd data: %s", w->path, ZSTD_getErrorName(r));
        return -1;
      }
      w->zin_mid = r != 0;
    }
    return (int64_t)out.pos;
  }
  for (;;) {
    ssize_t k = read(w->fd, dst, (size_t)cap);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) qv_error_set(err, QV_EIO, "%s: read failed: %s", w->path, strerror(errno));
    return k;
  }
}

qv_status qv_text_window_fill(qv_text_window *w, int64_t want, qv_error *err) {
  if (want > ((int64_t)1 << 31))
    return qv_error_set(err, QV_ERANGE, "%s: a row larger than 2 GiB at byte %lld", w->path,
                        (long long)w->base);
  if (want > w->cap) {
    uint8_t *nb = realloc(w->buf, (size_t)want);
    if (nb == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
    w->buf = nb;
    w->cap = want;
  }
  while (!w->eof && w->len < want) {
    int64_t k = window_read(w, w->buf + w->len, want - w->len, err);
    if (k < 0) return w->gz || w->zstd ? QV_EINVAL : QV_EIO;
    if (k == 0) w->eof = true;
    w->len += k;
  }
  return QV_OK;
}

/* Newlines in n bytes, eight at a time: a byte of x = word ^ "\n\n..." is
 * zero exactly where the word has a newline, and ((x & 0x7f..) + 0x7f..)
 * | x has its high bit clear exactly at the zero bytes (no carries cross
 * bytes), so the count is a popcount of those bits. */
static int64_t count_newlines(const uint8_t *p, int64_t n) {
  const uint64_t nl = 0x0a0a0a0a0a0a0a0aull, lo7 = 0x7f7f7f7f7f7f7f7full;
  int64_t lines = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    memcpy(&x, p + i, 8);
    x ^= nl;
    uint64_t t = ((x & lo7) + lo7) | x;
    lines += __builtin_popcountll(~t & ~lo7);
  }
  for (; i < n; i++) lines += p[i] == '\n';
  return lines;
}

void qv_text_window_consume(qv_text_window *w, int64_t n) {
  w->line_base += count_newlines(w->buf, n);
  memmove(w->buf, w->buf + n, (size_t)(w->len - n));
  w->len -= n;
  w->base += n;
}

qv_status qv_text_window_rewind(qv_text_window *w, qv_error *err) {
  if (w->gz ? gzrewind(w->gz) != 0 : lseek(w->fd, 0, SEEK_SET) != 0)
    return qv_error_set(err, QV_EIO, "%s: cannot seek back to re-read it: %s", w->path,
                        strerror(errno));
  if (w->zstd) {
    ZSTD_DCtx_reset(w->zstd, ZSTD_reset_session_only);
    w->zin_len = w->zin_pos = 0;
    w->zin_eof = w->zin_mid = false;
  }
  w->len = w->base = w->line_base = 0;
  w->eof = false;
  return QV_OK;
}

void qv_text_window_close(qv_text_window *w) {
  if (w->gz) gzclose(w->gz);
  if (w->zstd) ZSTD_freeDCtx(w->zstd);
  free(w->zin);
  w->gz = w->zstd = NULL;
  w->zin = NULL;
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  free(w->buf);
  w->buf = NULL;
  w->cap = w->len = 0;
}

/* ------------------------------------------------------------------------ */
/* Compressed output                                                         */

enum { OB_SIZE = 1 << 17 };

static int codec_of(const char *path, int compression) {
  if (compression == QV_TEXT_COMPRESSION_GZIP) return 1;
  if (compression == QV_TEXT_COMPRESSION_ZSTD) return 2;
  if (compression == QV_TEXT_COMPRESSION_NONE) return 0;
  size_t n = strlen(path);
  if (n >= 3 && strcasecmp(path + n - 3, ".gz") == 0) return 1;
  if (n >= 4 && strcasecmp(path + n - 4, ".zst") == 0) return 2;
  return 0;
}

static void out_free_codec(qv_text_out *o) {
  if (o->z) {
    deflateEnd(o->z);
    free(o->z);
  }
  ZSTD_freeCCtx(o->zc);
  free(o->ob);
  o->z = o->zc = NULL;
  o->ob = NULL;
}

qv_status qv_text_out_open(qv_text_out *o, const char *path, int compression, int level,
                           qv_error *err) {
  memset(o, 0, sizeof *o);
  if (compression < QV_TEXT_COMPRESSION_AUTO || compression > QV_TEXT_COMPRESSION_ZSTD)
    return qv_error_set(err, QV_EARG, "text writer: unknown compression %d", compression);
  o->codec = codec_of(path, compression);
  if (o->codec == 1 && (level < 0 || level > 9))
    return qv_error_set(err, QV_EARG, "gzip level must be 1..9, found %d", level);
  if (o->codec == 2 && (level < 0 || level > ZSTD_maxCLevel()))
    return qv_error_set(err, QV_EARG, "zstd level must be 1..%d, found %d", ZSTD_maxCLevel(),
                        level);
  if (o->codec != 0 && (o->ob = malloc(OB_SIZE)) == NULL)
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  if (o->codec == 1) {
    z_stream *z = calloc(1, sizeof *z);
    if (z == NULL ||
        deflateInit2(z, level ? level : 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      free(z);
      out_free_codec(o);
      return qv_error_set(err, QV_ENOMEM, "gzip: cannot start the compressor");
    }
    o->z = z;
  } else if (o->codec == 2) {
    o->zc = ZSTD_createCCtx();
    if (o->zc == NULL ||
        ZSTD_isError(ZSTD_CCtx_setParameter(o->zc, ZSTD_c_compressionLevel, level ? level : 3))) {
      out_free_codec(o);
      return qv_error_set(err, QV_ENOMEM, "zstd: cannot start the compressor");
    }
  }
  qv_status st = qv_atomic_file_open(path, &o->f, err);
  if (st != QV_OK) out_free_codec(o);
  return st;
}

/* Compress n bytes (finish: and end the stream) into the file. */
static qv_status out_pump(qv_text_out *o, const void *data, int64_t n, bool finish, qv_error *err) {
  if (o->codec == 1) {
    z_stream *z = o->z;
    const uint8_t *p = data;
    for (;;) {
      uInt chunk = n > (1 << 30) ? (1u << 30) : (uInt)n;
      z->next_in = (Bytef *)p;
      z->avail_in = chunk;
      bool last = finish && chunk == n;
      int r;
      do {
        z->next_out = o->ob;
        z->avail_out = OB_SIZE;
        r = deflate(z, last ? Z_FINISH : Z_NO_FLUSH);
        if (r == Z_STREAM_ERROR) return qv_error_set(err, QV_EIO, "gzip: the compressor failed");
        int64_t k = OB_SIZE - z->avail_out;
        if (k > 0) QV_RETURN_NOT_OK(qv_atomic_file_write(o->f, o->ob, k, err));
      } while (z->avail_out == 0 || (last && r != Z_STREAM_END));
      p += chunk;
      n -= chunk;
      if (n == 0) return QV_OK;
    }
  }
  ZSTD_inBuffer in = {data, (size_t)n, 0};
  for (;;) {
    ZSTD_outBuffer out = {o->ob, OB_SIZE, 0};
    size_t r = ZSTD_compressStream2(o->zc, &out, &in, finish ? ZSTD_e_end : ZSTD_e_continue);
    if (ZSTD_isError(r))
      return qv_error_set(err, QV_EIO, "zstd: the compressor failed: %s", ZSTD_getErrorName(r));
    if (out.pos > 0) QV_RETURN_NOT_OK(qv_atomic_file_write(o->f, o->ob, (int64_t)out.pos, err));
    if (finish ? r == 0 : in.pos == in.size) return QV_OK;
  }
}

qv_status qv_text_out_write(qv_text_out *o, const void *data, int64_t n, qv_error *err) {
  if (n <= 0) return QV_OK;
  if (o->codec == 0) return qv_atomic_file_write(o->f, data, n, err);
  return out_pump(o, data, n, false, err);
}

qv_status qv_text_out_commit(qv_text_out *o, qv_error *err) {
  qv_status st = o->codec == 0 ? QV_OK : out_pump(o, "", 0, true, err);
  out_free_codec(o);
  if (st != QV_OK) {
    qv_atomic_file_abort(o->f);
    return st;
  }
  return qv_atomic_file_commit(o->f, err);
}

void qv_text_out_abort(qv_text_out *o) {
  out_free_codec(o);
  qv_atomic_file_abort(o->f);
}

int64_t qv_text_array_bytes(const qv_array *a) {
  if (a == NULL) return 0;
  int64_t n = 0;
  for (int32_t i = 0; i < a->n_buffers; i++)
    if (a->buffers[i]) n += a->buffers[i]->size;
  for (int32_t i = 0; i < a->n_children; i++) n += qv_text_array_bytes(a->children[i]);
  if (a->dictionary) n += qv_text_array_bytes(a->dictionary);
  return n;
}

qv_status qv_text_deliver(const qv_batch_sink *sink, const qv_schema *schema, qv_array **pending,
                          int64_t *n_pending, bool *begun, qv_error *err) {
  qv_status st = QV_OK;
  if (*n_pending > 0 && !*begun) {
    st = sink->begin(sink->ctx, schema, err);
    *begun = true;
  }
  for (int64_t i = 0; i < *n_pending; i++) {
    if (st == QV_OK) st = sink->batch(sink->ctx, pending[i], err);
    qv_array_unref(pending[i]);
  }
  *n_pending = 0;
  return st;
}
