/*
 * parquet_read_page.c — the byte-level pieces of Parquet page decoding:
 * decompression of a page by its column's codec (snappy, gzip with
 * concatenated members, brotli, zstd, LZ4_RAW, Hadoop-framed LZ4 with the
 * legacy raw-LZ4 fallback) into a buffer of exactly the declared size, the
 * RLE/bit-packed hybrid decoder (levels and dictionary indices), the
 * deprecated BIT_PACKED level encoding and the DELTA_BINARY_PACKED decoder (Encodings.md). Every length is checked
 * against the bytes left. Formats layer.
 */
#include <brotli/decode.h>
#include <lz4.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "formats/parquet_internal.h"

static qv_status gzip_decode(const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_len,
                             qv_error *err) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 32) != Z_OK)
    return qv_error_set(err, QV_ENOMEM, "GZIP: cannot initialise zlib");
  z.next_in = (Bytef *)src;
  z.avail_in = (uInt)src_len;
  z.next_out = dst;
  z.avail_out = (uInt)dst_len;
  qv_status st = QV_OK;
  for (;;) {
    int rc = inflate(&z, Z_FINISH);
    if (rc == Z_STREAM_END) {
      /* Concatenated gzip members: go on while input remains. */
      if (z.avail_in > 0 && z.avail_out > 0) {
        if (inflateReset(&z) != Z_OK) {
          st = qv_error_set(err, QV_EINVAL, "GZIP: cannot reset for the next member");
          break;
        }
        continue;
      }
      break;
    }
    if (rc == Z_BUF_ERROR && z.avail_out == 0) {
      st = qv_error_set(err, QV_EINVAL, "GZIP: data decompresses to more than the declared %lld",
                        (long long)dst_len);
      break;
    }
    st = qv_error_set(err, QV_EINVAL, "GZIP: corrupt data (%s)", z.msg ? z.msg : "inflate error");
    break;
  }
  int64_t got = dst_len - (int64_t)z.avail_out;
  inflateEnd(&z);
  if (st == QV_OK && got != dst_len)
    st = qv_error_set(err, QV_EINVAL, "GZIP: decompressed %lld bytes, expected %lld",
                      (long long)got, (long long)dst_len);
  return st;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Hadoop's LZ4 framing: blocks of [BE32 decompressed][BE32 compressed][raw LZ4]. */
static bool hadoop_lz4(const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_len) {
  int64_t in = 0, out = 0;
  while (src_len - in >= 8) {
    uint32_t dn = be32(src + in), cn = be32(src + in + 4);
    in += 8;
    if ((int64_t)cn > src_len - in || (int64_t)dn > dst_len - out) return false;
    int rc = LZ4_decompress_safe((const char *)src + in, (char *)dst + out, (int)cn, (int)dn);
    if (rc < 0 || (uint32_t)rc != dn) return false;
    in += cn;
    out += dn;
  }
  return in == src_len && out == dst_len;
}

qv_status qv_pq_decompress(int32_t codec, const uint8_t *src, int64_t src_len, uint8_t *dst,
                           int64_t dst_len, qv_error *err) {
  if (src_len > INT32_MAX || dst_len > INT32_MAX)
    return qv_error_set(err, QV_EINVAL, "page larger than 2 GiB");
  switch (codec) {
    case QV_PQ_UNCOMPRESSED:
      if (src_len != dst_len)
        return qv_error_set(err, QV_EINVAL,
                            "uncompressed page: compressed size %lld differs from the "
                            "uncompressed size %lld",
                            (long long)src_len, (long long)dst_len);
      memcpy(dst, src, (size_t)src_len);
      return QV_OK;
    case QV_PQ_SNAPPY: {
      size_t n = 0;
      if (snappy_uncompressed_length((const char *)src, (size_t)src_len, &n) != SNAPPY_OK)
        return qv_error_set(err, QV_EINVAL, "SNAPPY: corrupt length header");
      if ((int64_t)n != dst_len)
        return qv_error_set(err, QV_EINVAL, "SNAPPY: data holds %lld bytes, the page declares %lld",
                            (long long)n, (long long)dst_len);
      if (snappy_uncompress((const char *)src, (size_t)src_len, (char *)dst, &n) != SNAPPY_OK ||
          (int64_t)n != dst_len)
        return qv_error_set(err, QV_EINVAL, "SNAPPY: corrupt data");
      return QV_OK;
    }
    case QV_PQ_GZIP: return gzip_decode(src, src_len, dst, dst_len, err);
    case QV_PQ_BROTLI: {
      size_t n = (size_t)dst_len;
      if (BrotliDecoderDecompress((size_t)src_len, src, &n, dst) != BROTLI_DECODER_RESULT_SUCCESS)
        return qv_error_set(err, QV_EINVAL, "BROTLI: corrupt data or more than the declared %lld",
                            (long long)dst_len);
      if ((int64_t)n != dst_len)
        return qv_error_set(err, QV_EINVAL, "BROTLI: decompressed %lld bytes, expected %lld",
                            (long long)n, (long long)dst_len);
      return QV_OK;
    }
    case QV_PQ_ZSTD: {
      size_t n = ZSTD_decompress(dst, (size_t)dst_len, src, (size_t)src_len);
      if (ZSTD_isError(n)) return qv_error_set(err, QV_EINVAL, "ZSTD: %s", ZSTD_getErrorName(n));
      if ((int64_t)n != dst_len)
        return qv_error_set(err, QV_EINVAL, "ZSTD: decompressed %lld bytes, expected %lld",
                            (long long)n, (long long)dst_len);
      return QV_OK;
    }
    case QV_PQ_LZ4_RAW:
    case QV_PQ_LZ4: {
      if (codec == QV_PQ_LZ4 && hadoop_lz4(src, src_len, dst, dst_len)) return QV_OK;
      int rc = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len, (int)dst_len);
      if (rc < 0 || (int64_t)rc != dst_len)
        return qv_error_set(err, QV_EINVAL, "%s: corrupt data or not %lld bytes",
                            qv_pq_codec_name(codec), (long long)dst_len);
      return QV_OK;
    }
    case QV_PQ_LZO: return qv_error_set(err, QV_ENOTSUP, "the LZO codec is not supported");
  }
  return qv_error_set(err, QV_ENOTSUP, "unknown compression codec %d", codec);
}

int qv_pq_bit_width(uint64_t max) {
  int w = 0;
  while (max) {
    w++;
    max >>= 1;
  }
  return w;
}

/* ------------------------------------------------------------------------ */
/* RLE / bit-packed hybrid                                                   */

void qv_pq_rle_init(qv_pq_rle *r, const uint8_t *data, int64_t len, int bit_width) {
  memset(r, 0, sizeof *r);
  r->p = data;
  r->end = data + len;
  r->bit_width = bit_width;
}

static bool uvarint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
  const uint8_t *p = *pp;
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) return false;
    uint8_t b = *p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *pp = p;
      *out = v;
      return true;
    }
  }
  return false;
}

/* Value k of a bit-packed run (LSB first) of bit width w. */
static inline uint64_t unpack_at(const uint8_t *bp, int64_t avail_bytes, int w, int64_t k) {
  int64_t bit = k * w;
  int64_t byte = bit >> 3;
  int shift = (int)(bit & 7);
  uint64_t v = 0;
  if (avail_bytes - byte >= 8 && w + shift <= 64) {
    memcpy(&v, bp + byte, 8);
    v >>= shift;
  } else {
    /* 1..9 bytes; the first 8 shifted in here (a shift by 64 is undefined
     * and, on x86, ORed byte 8 into the low bits: issue #15), byte 8 (when
     * w + shift > 64) after the shift */
    int need = (w + shift + 7) / 8;
    for (int i = 0; i < need && i < 8 && byte + i < avail_bytes; i++)
      v |= (uint64_t)bp[byte + i] << (8 * i);
    v >>= shift;
    if (need > 8 && byte + 8 < avail_bytes) v |= (uint64_t)bp[byte + 8] << (64 - shift);
  }
  return w == 64 ? v : v & ((UINT64_C(1) << w) - 1);
}

/* Values [k, k+8*groups) of a bit-packed run of width W (a constant in
 * each instance, so the shifts and masks fold), k a multiple of 8: 8
 * values are W bytes, each read with one unaligned 8-byte load. The
 * caller leaves at least 8 bytes readable past the last group. */
#define QV_PQ_UNPACK8(T, W)                                                                        \
  static void unpack8_##T##_##W(const uint8_t *bp, int64_t k, int64_t groups, T *out) {            \
    const uint8_t *p = bp + k / 8 * (W);                                                           \
    const uint64_t mask = (W) == 64 ? ~UINT64_C(0) : (UINT64_C(1) << (W)) - 1;                     \
    for (int64_t g = 0; g < groups; g++, p += (W), out += 8) {                                     \
      for (int j = 0; j < 8; j++) {                                                                \
        uint64_t v;                                                                                \
        memcpy(&v, p + (j * (W)) / 8, 8);                                                          \
        out[j] = (T)((v >> ((j * (W)) % 8)) & mask);                                               \
      }                                                                                            \
    }                                                                                              \
  }
#define QV_PQ_UNPACK_WIDTHS(T)                                                                     \
  QV_PQ_UNPACK8(T, 1)                                                                              \
  QV_PQ_UNPACK8(T, 2)                                                                              \
  QV_PQ_UNPACK8(T, 3)                                                                              \
  QV_PQ_UNPACK8(T, 4)                                                                              \
  QV_PQ_UNPACK8(T, 5)                                                                              \
  QV_PQ_UNPACK8(T, 6)                                                                              \
  QV_PQ_UNPACK8(T, 7)                                                                              \
  QV_PQ_UNPACK8(T, 8)                                                                              \
  QV_PQ_UNPACK8(T, 9)                                                                              \
  QV_PQ_UNPACK8(T, 10)                                                                             \
  QV_PQ_UNPACK8(T, 11)                                                                             \
  QV_PQ_UNPACK8(T, 12)                                                                             \
  QV_PQ_UNPACK8(T, 13)                                                                             \
  QV_PQ_UNPACK8(T, 14)                                                                             \
  QV_PQ_UNPACK8(T, 15)                                                                             \
  QV_PQ_UNPACK8(T, 16)
QV_PQ_UNPACK_WIDTHS(int16_t)
QV_PQ_UNPACK_WIDTHS(uint32_t)
QV_PQ_UNPACK8(uint32_t, 17)
QV_PQ_UNPACK8(uint32_t, 18)
QV_PQ_UNPACK8(uint32_t, 19)
QV_PQ_UNPACK8(uint32_t, 20)
QV_PQ_UNPACK8(uint32_t, 21)
QV_PQ_UNPACK8(uint32_t, 22)
QV_PQ_UNPACK8(uint32_t, 23)
QV_PQ_UNPACK8(uint32_t, 24)

#define QV_PQ_UNPACK_CASE(T, W)                                                                    \
  case W: unpack8_##T##_##W(bp, k, groups, out); return true;
/* Whole groups of 8 by width (false: no fast path for this width). */
static bool unpack_groups_int16(const uint8_t *bp, int w, int64_t k, int64_t groups, int16_t *out) {
  switch (w) {
    QV_PQ_UNPACK_CASE(int16_t, 1)
    QV_PQ_UNPACK_CASE(int16_t, 2)
    QV_PQ_UNPACK_CASE(int16_t, 3)
    QV_PQ_UNPACK_CASE(int16_t, 4)
    QV_PQ_UNPACK_CASE(int16_t, 5)
    QV_PQ_UNPACK_CASE(int16_t, 6)
    QV_PQ_UNPACK_CASE(int16_t, 7)
    QV_PQ_UNPACK_CASE(int16_t, 8)
    QV_PQ_UNPACK_CASE(int16_t, 9)
    QV_PQ_UNPACK_CASE(int16_t, 10)
    QV_PQ_UNPACK_CASE(int16_t, 11)
    QV_PQ_UNPACK_CASE(int16_t, 12)
    QV_PQ_UNPACK_CASE(int16_t, 13)
    QV_PQ_UNPACK_CASE(int16_t, 14)
    QV_PQ_UNPACK_CASE(int16_t, 15)
    QV_PQ_UNPACK_CASE(int16_t, 16)
    default: return false;
  }
}
static bool unpack_groups_uint32(const uint8_t *bp, int w, int64_t k, int64_t groups,
                                 uint32_t *out) {
  switch (w) {
    QV_PQ_UNPACK_CASE(uint32_t, 1)
    QV_PQ_UNPACK_CASE(uint32_t, 2)
    QV_PQ_UNPACK_CASE(uint32_t, 3)
    QV_PQ_UNPACK_CASE(uint32_t, 4)
    QV_PQ_UNPACK_CASE(uint32_t, 5)
    QV_PQ_UNPACK_CASE(uint32_t, 6)
    QV_PQ_UNPACK_CASE(uint32_t, 7)
    QV_PQ_UNPACK_CASE(uint32_t, 8)
    QV_PQ_UNPACK_CASE(uint32_t, 9)
    QV_PQ_UNPACK_CASE(uint32_t, 10)
    QV_PQ_UNPACK_CASE(uint32_t, 11)
    QV_PQ_UNPACK_CASE(uint32_t, 12)
    QV_PQ_UNPACK_CASE(uint32_t, 13)
    QV_PQ_UNPACK_CASE(uint32_t, 14)
    QV_PQ_UNPACK_CASE(uint32_t, 15)
    QV_PQ_UNPACK_CASE(uint32_t, 16)
    QV_PQ_UNPACK_CASE(uint32_t, 17)
    QV_PQ_UNPACK_CASE(uint32_t, 18)
    QV_PQ_UNPACK_CASE(uint32_t, 19)
    QV_PQ_UNPACK_CASE(uint32_t, 20)
    QV_PQ_UNPACK_CASE(uint32_t, 21)
    QV_PQ_UNPACK_CASE(uint32_t, 22)
    QV_PQ_UNPACK_CASE(uint32_t, 23)
    QV_PQ_UNPACK_CASE(uint32_t, 24)
    default: return false;
  }
}

/* How many whole groups of 8 from value k (k % 8 == 0) of a bit-packed
 * run of width w, at most n/8 of them, leave 8 bytes readable past their
 * last byte in [bp, bp+avail). */
static int64_t fast_groups(int64_t avail, int w, int64_t k, int64_t n) {
  if (k % 8 != 0) return 0;
  int64_t start = k / 8 * w, g = n / 8;
  int64_t room = avail - start - 8;
  if (room <= 0) return 0;
  if (g * w > room) g = room / w;
  return g;
}

/* Read the header of the next run (an RLE run or a bit-packed one) at
 * r->p, bit width > 0, and set the run's state; `i` of `n` values are
 * decoded so far (for the error). Shared by both getters below. */
static qv_status rle_next_run(qv_pq_rle *r, int64_t i, int64_t n, qv_error *err) {
  int w = r->bit_width;
  uint64_t h;
  if (!uvarint(&r->p, r->end, &h))
    return qv_error_set(err, QV_EINVAL, "RLE/bit-packed data ends after %lld of %lld values",
                        (long long)i, (long long)n);
  if (h & 1) {
    uint64_t groups = h >> 1;
    int64_t left = r->end - r->p;
    if (groups == 0 || groups > (uint64_t)left)
      return qv_error_set(err, QV_EINVAL, "RLE/bit-packed: bad bit-packed run of %llu groups",
                          (unsigned long long)groups);
    int64_t bytes = (int64_t)groups * w;
    int64_t values = (int64_t)groups * 8;
    if (bytes > left) { /* a truncated last run: only the values present */
      values = left * 8 / w;
      bytes = left;
    }
    r->bp = r->p;
    r->bp_pos = 0;
    r->bp_left = values;
    r->p += bytes;
    if (values == 0) return qv_error_set(err, QV_EINVAL, "RLE/bit-packed: empty bit-packed run");
  } else {
    uint64_t count = h >> 1;
    int nb = (w + 7) / 8;
    if (count == 0 || r->end - r->p < nb)
      return qv_error_set(err, QV_EINVAL, "RLE/bit-packed: bad RLE run (count %llu)",
                          (unsigned long long)count);
    uint64_t v = 0;
    for (int b = 0; b < nb; b++) v |= (uint64_t)r->p[b] << (8 * b);
    r->p += nb;
    if (w < 64 && (v >> w) != 0)
      return qv_error_set(err, QV_EINVAL, "RLE run value %llu wider than %d bits",
                          (unsigned long long)v, w);
    r->rle_value = v;
    r->rle_left = count > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)count;
  }
  return QV_OK;
}

qv_status qv_pq_rle_get(qv_pq_rle *r, uint32_t *out, int64_t n, qv_error *err) {
  int64_t i = 0;
  int w = r->bit_width;
  while (i < n) {
    if (r->rle_left > 0) {
      int64_t k = r->rle_left < n - i ? r->rle_left : n - i;
      for (int64_t j = 0; j < k; j++) out[i + j] = (uint32_t)r->rle_value;
      i += k;
      r->rle_left -= k;
      continue;
    }
    if (r->bp_left > 0) {
      int64_t k = r->bp_left < n - i ? r->bp_left : n - i;
      int64_t avail = r->end - r->bp;
      int64_t g = fast_groups(avail, w, r->bp_pos, k);
      int64_t j = 0;
      if (g > 0 && unpack_groups_uint32(r->bp, w, r->bp_pos, g, out + i)) j = g * 8;
      for (; j < k; j++) out[i + j] = (uint32_t)unpack_at(r->bp, avail, w, r->bp_pos + j);
      r->bp_pos += k;
      r->bp_left -= k;
      i += k;
      continue;
    }
    if (w == 0) { /* every value is 0 and there may be no data at all */
      memset(out + i, 0, (size_t)(n - i) * sizeof *out);
      return QV_OK;
    }
    QV_RETURN_NOT_OK(rle_next_run(r, i, n, err));
  }
  return QV_OK;
}

/* The same decoder writing int16 (levels: bit width <= 16, so every
 * value fits), without a 32-bit temporary. */
static qv_status rle_get16(qv_pq_rle *r, int16_t *out, int64_t n, qv_error *err) {
  int64_t i = 0;
  int w = r->bit_width;
  while (i < n) {
    if (r->rle_left > 0) {
      int64_t k = r->rle_left < n - i ? r->rle_left : n - i;
      for (int64_t j = 0; j < k; j++) out[i + j] = (int16_t)r->rle_value;
      i += k;
      r->rle_left -= k;
      continue;
    }
    if (r->bp_left > 0) {
      int64_t k = r->bp_left < n - i ? r->bp_left : n - i;
      int64_t avail = r->end - r->bp;
      int64_t g = fast_groups(avail, w, r->bp_pos, k);
      int64_t j = 0;
      if (g > 0 && unpack_groups_int16(r->bp, w, r->bp_pos, g, out + i)) j = g * 8;
      for (; j < k; j++) out[i + j] = (int16_t)unpack_at(r->bp, avail, w, r->bp_pos + j);
      r->bp_pos += k;
      r->bp_left -= k;
      i += k;
      continue;
    }
    if (w == 0) { /* every value is 0 and there may be no data at all */
      memset(out + i, 0, (size_t)(n - i) * sizeof *out);
      return QV_OK;
    }
    QV_RETURN_NOT_OK(rle_next_run(r, i, n, err));
  }
  return QV_OK;
}

qv_status qv_pq_rle_get_levels(qv_pq_rle *r, int16_t *out, int64_t n, int16_t max, qv_error *err) {
  if (r->bit_width > 16) return qv_error_set(err, QV_EINVAL, "levels wider than 16 bits");
  QV_RETURN_NOT_OK(rle_get16(r, out, n, err));
  /* values of bit_width bits cannot exceed a maximum of all ones */
  if (r->bit_width < 16 && (1 << r->bit_width) - 1 <= max) return QV_OK;
  int16_t hi = 0;
  for (int64_t i = 0; i < n; i++) hi = out[i] > hi ? out[i] : hi;
  if (hi > max) {
    for (int64_t i = 0; i < n; i++)
      if (out[i] > max)
        return qv_error_set(err, QV_EINVAL, "level %d at %lld above the maximum %d", out[i],
                            (long long)i, max);
  }
  return QV_OK;
}

/* The deprecated BIT_PACKED level encoding (Encodings.md "Bit-packed
 * (Deprecated)"): n values of the level's bit width back to back, packed
 * from the most significant bit of each byte down (unlike the hybrid's
 * runs), the last byte zero-padded; no length prefix. Deprecated and rare:
 * one bit at a time is fast enough. */
qv_status qv_pq_bit_packed_levels(const uint8_t *p, int64_t len, int64_t n, int16_t max,
                                  int16_t *out, int64_t *used, qv_error *err) {
  int w = qv_pq_bit_width((uint64_t)(max > 0 ? max : 0));
  if (w > 16) return qv_error_set(err, QV_EINVAL, "levels wider than 16 bits");
  if (n < 0 || n > (INT64_MAX - 7) / 16)
    return qv_error_set(err, QV_EINVAL, "BIT_PACKED: bad level count %lld", (long long)n);
  int64_t bytes = (n * w + 7) / 8;
  if (bytes > len)
    return qv_error_set(err, QV_EINVAL,
                        "BIT_PACKED: %lld levels of %d bits need %lld bytes, %lld left",
                        (long long)n, w, (long long)bytes, (long long)len);
  uint64_t bit = 0;
  for (int64_t i = 0; i < n; i++) {
    int v = 0;
    for (int b = 0; b < w; b++, bit++) v = v << 1 | ((p[bit >> 3] >> (7 - (bit & 7))) & 1);
    if (v > max)
      return qv_error_set(err, QV_EINVAL, "level %d at %lld above the maximum %d", v, (long long)i,
                          max);
    out[i] = (int16_t)v;
  }
  *used = bytes;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* DELTA_BINARY_PACKED                                                       */

typedef struct dbp_header {
  uint64_t block_size, miniblocks, total;
  int64_t first;
  const uint8_t *body;
} dbp_header;

static qv_status dbp_read_header(const uint8_t *data, int64_t len, dbp_header *h, qv_error *err) {
  const uint8_t *p = data, *end = data + len;
  uint64_t zz;
  if (!uvarint(&p, end, &h->block_size) || !uvarint(&p, end, &h->miniblocks) ||
      !uvarint(&p, end, &h->total) || !uvarint(&p, end, &zz))
    return qv_error_set(err, QV_EINVAL, "DELTA_BINARY_PACKED: truncated header");
  h->first = (int64_t)(zz >> 1) ^ -(int64_t)(zz & 1);
  if (h->block_size == 0 || h->block_size % 128 != 0 || h->block_size > (1u << 20) ||
      h->miniblocks == 0 || h->block_size % h->miniblocks != 0 ||
      (h->block_size / h->miniblocks) % 32 != 0)
    return qv_error_set(err, QV_EINVAL,
                        "DELTA_BINARY_PACKED: bad header (block size %llu, %llu miniblocks)",
                        (unsigned long long)h->block_size, (unsigned long long)h->miniblocks);
  h->body = p;
  return QV_OK;
}

qv_status qv_pq_delta_count(const uint8_t *data, int64_t len, int64_t *n, qv_error *err) {
  dbp_header h;
  QV_RETURN_NOT_OK(dbp_read_header(data, len, &h, err));
  if (h.total > (uint64_t)INT32_MAX)
    return qv_error_set(err, QV_EINVAL, "DELTA_BINARY_PACKED: %llu values",
                        (unsigned long long)h.total);
  *n = (int64_t)h.total;
  return QV_OK;
}

qv_status qv_pq_delta_decode(const uint8_t *data, int64_t len, int width, int64_t max_values,
                             void *out, int64_t *n_out, int64_t *used, qv_error *err) {
  dbp_header h;
  QV_RETURN_NOT_OK(dbp_read_header(data, len, &h, err));
  const uint8_t *p = h.body, *end = data + len;
  int64_t total = (int64_t)(h.total > (uint64_t)max_values ? (uint64_t)max_values : h.total);
  if (h.total > (uint64_t)max_values)
    return qv_error_set(err, QV_EINVAL,
                        "DELTA_BINARY_PACKED: %llu values, more than the %lld the page holds",
                        (unsigned long long)h.total, (long long)max_values);
  int64_t *o64 = width == 8 ? out : NULL;
  int32_t *o32 = width == 4 ? out : NULL;
  uint64_t cur = (uint64_t)h.first;
  int64_t k = 0;
  if (total > 0) {
    if (o64) o64[0] = (int64_t)cur;
    else o32[0] = (int32_t)(uint32_t)cur;
    k = 1;
  }
  int64_t per_mb = (int64_t)(h.block_size / h.miniblocks);
  int maxw = width * 8;
  while (k < total) {
    uint64_t zz;
    if (!uvarint(&p, end, &zz))
      return qv_error_set(err, QV_EINVAL, "DELTA_BINARY_PACKED: truncated block header");
    uint64_t min_delta = (uint64_t)((int64_t)(zz >> 1) ^ -(int64_t)(zz & 1));
    if ((uint64_t)(end - p) < h.miniblocks)
      return qv_error_set(err, QV_EINVAL, "DELTA_BINARY_PACKED: truncated bit widths");
    const uint8_t *widths = p;
    p += h.miniblocks;
    for (uint64_t m = 0; m < h.miniblocks && k < total; m++) {
      int w = widths[m];
      if (w > maxw)
        return qv_error_set(err, QV_EINVAL, "DELTA_BINARY_PACKED: miniblock bit width %d > %d", w,
                            maxw);
      int64_t bytes = per_mb * w / 8;
      int64_t n = per_mb < total - k ? per_mb : total - k;
      int64_t avail = end - p;
      if (avail < (n * w + 7) / 8)
        return qv_error_set(err, QV_EINVAL, "DELTA_BINARY_PACKED: truncated miniblock");
      for (int64_t j = 0; j < n; j++) {
        uint64_t d = w ? unpack_at(p, avail, w, j) : 0;
        cur += min_delta + d;
        if (o64) o64[k + j] = (int64_t)cur;
        else o32[k + j] = (int32_t)(uint32_t)cur;
      }
      k += n;
      p += bytes <= avail ? bytes : avail;
    }
  }
  *n_out = total;
  *used = p - data;
  return QV_OK;
}
