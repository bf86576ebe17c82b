/*
 * test_parquet_decode.c — the Parquet reader's byte-level decoders on
 * hand-built bytes: the Thrift compact protocol (varints, zigzag, field
 * headers in delta and long form, lists, skipping unknown fields, the
 * nesting limit, lengths past the end), FileMetaData and PageHeader
 * decoding, the RLE/bit-packed hybrid, the deprecated BIT_PACKED levels,
 * DELTA_BINARY_PACKED, single pages through the reader's decoders, and
 * decompression size checks. Expected values are worked out by hand from
 * the specifications (thrift-compact-protocol.md, Encodings.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/parquet_internal.h"
#include "formats/parquet_page_internal.h"
#include "qv_test.h"

static void test_varints(void) {
  qv_error e;
  qv_thrift t;
  const uint8_t b[] = {0x00, 0x01, 0x7f, 0x80, 0x01, 0xff, 0xff, 0x03, 0x03, 0x04};
  qv_thrift_init(&t, b, sizeof b, "t", &e);
  QV_CHECK_EQ_INT(qv_thrift_uvarint(&t), 0);
  QV_CHECK_EQ_INT(qv_thrift_uvarint(&t), 1);
  QV_CHECK_EQ_INT(qv_thrift_uvarint(&t), 127);
  QV_CHECK_EQ_INT(qv_thrift_uvarint(&t), 128);
  QV_CHECK_EQ_INT(qv_thrift_uvarint(&t), 65535);
  QV_CHECK_EQ_INT(qv_thrift_i32(&t), -2); /* zigzag 3 */
  QV_CHECK_EQ_INT(qv_thrift_i32(&t), 2);  /* zigzag 4 */
  QV_CHECK(t.st == QV_OK);
  /* past the end: sticky error naming the offset */
  QV_CHECK_EQ_INT(qv_thrift_uvarint(&t), 0);
  QV_CHECK(t.st == QV_EINVAL && strstr(e.message, "truncated varint") != NULL);
  /* 11-byte varint */
  const uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  qv_thrift_init(&t, big, sizeof big, "t", &e);
  (void)qv_thrift_uvarint(&t);
  QV_CHECK(t.st == QV_EINVAL);
  /* i32 out of range */
  const uint8_t wide[] = {0x80, 0x80, 0x80, 0x80, 0x20};
  qv_thrift_init(&t, wide, sizeof wide, "t", &e);
  (void)qv_thrift_i32(&t);
  QV_CHECK(t.st == QV_EINVAL && strstr(e.message, "out of range") != NULL);
}

static void test_fields_and_skip(void) {
  qv_error e;
  qv_thrift t;
  /* field 1 i32 (delta 1), field 5 binary "ab" (delta 4), field 300 in
   * long form (type i64, zigzag id 300 = 600 = 0xd8 0x04) value 7, a bool
   * true at field 301, a list<i32> of 2 at field 302, a nested struct at
   * 303 holding field 1 i32, then STOP */
  const uint8_t b[] = {0x15, 0x08, 0x48, 0x02, 'a',  'b',  0x06, 0xd8, 0x04, 0x0e,
                       0x11, 0x19, 0x25, 0x02, 0x04, 0x1c, 0x15, 0x02, 0x00, 0x00};
  qv_thrift_init(&t, b, sizeof b, "t", &e);
  int16_t last = 0, id;
  int ty;
  QV_REQUIRE(qv_thrift_field(&t, &last, &id, &ty));
  QV_CHECK(id == 1 && ty == QV_TC_I32);
  QV_CHECK_EQ_INT(qv_thrift_get_i32(&t, ty, "f1"), 4);
  QV_REQUIRE(qv_thrift_field(&t, &last, &id, &ty));
  QV_CHECK(id == 5 && ty == QV_TC_BINARY);
  int32_t n;
  const uint8_t *s = qv_thrift_get_binary(&t, ty, "f5", &n);
  QV_CHECK(n == 2 && s && memcmp(s, "ab", 2) == 0);
  QV_REQUIRE(qv_thrift_field(&t, &last, &id, &ty));
  QV_CHECK(id == 300 && ty == QV_TC_I64);
  QV_CHECK_EQ_INT(qv_thrift_get_i64(&t, ty, "f300"), 7);
  QV_REQUIRE(qv_thrift_field(&t, &last, &id, &ty));
  QV_CHECK(id == 301 && ty == QV_TC_BOOL_TRUE && qv_thrift_get_bool(&t, ty, "b"));
  /* skip the rest: list and struct */
  while (qv_thrift_field(&t, &last, &id, &ty)) qv_thrift_skip(&t, ty);
  QV_CHECK(t.st == QV_OK);
  QV_CHECK(t.p == b + sizeof b);
  /* a wrong type for a field is named */
  qv_thrift_init(&t, b, sizeof b, "t", &e);
  last = 0;
  QV_REQUIRE(qv_thrift_field(&t, &last, &id, &ty));
  (void)qv_thrift_get_binary(&t, ty, "SchemaElement.name", &n);
  QV_CHECK(t.st == QV_EINVAL && strstr(e.message, "SchemaElement.name") != NULL);
}

static void test_lengths_and_depth(void) {
  qv_error e;
  qv_thrift t;
  /* binary of 100 bytes with 2 left */
  const uint8_t b1[] = {0x64, 'x', 'y'};
  qv_thrift_init(&t, b1, sizeof b1, "t", &e);
  int32_t n;
  QV_CHECK(qv_thrift_binary(&t, &n) == NULL && t.st == QV_EINVAL);
  QV_CHECK(strstr(e.message, "runs past the end") != NULL);
  /* list claiming 1000 elements in 3 bytes */
  const uint8_t b2[] = {0xf5, 0xe8, 0x07, 0x02};
  qv_thrift_init(&t, b2, sizeof b2, "t", &e);
  int et;
  QV_CHECK_EQ_INT(qv_thrift_list(&t, &et), 0);
  QV_CHECK(t.st == QV_EINVAL && strstr(e.message, "longer than") != NULL);
  /* structs nested 100 deep while skipping: the depth limit */
  uint8_t deep[202];
  for (int i = 0; i < 100; i++) deep[i] = 0x1c; /* field +1, struct */
  memset(deep + 100, 0, 102);
  qv_thrift_init(&t, deep, sizeof deep, "t", &e);
  qv_thrift_skip(&t, QV_TC_STRUCT);
  QV_CHECK(t.st == QV_EINVAL && strstr(e.message, "nesting deeper") != NULL);
}

/* A minimal FileMetaData: version 1, schema [root(1 child), int64 "x"
 * required], num_rows 3, one row group with one column chunk. */
static void test_file_meta(void) {
  const uint8_t b[] = {
      0x15, 0x02,                                           /* 1: version = 1 */
      0x19, 0x2c,                                           /* 2: list<struct> of 2 */
      0x48, 0x04, 'r',  'o',  'o',  't',  0x15, 0x02, 0x00, /* name "root", num_children 1 */
      0x15, 0x04, 0x25, 0x00, 0x18, 0x01, 'x',  0x00,       /* type INT64, REQUIRED, name "x" */
      0x16, 0x06,                                           /* 3: num_rows = 3 */
      0x19, 0x1c,                                           /* 4: list<struct> of 1 */
      0x19, 0x1c,                                           /* RowGroup.1 columns: 1 */
      0x26, 0x08,                                           /* ColumnChunk.2 file_offset = 4 */
      0x1c,                                                 /* 3: meta_data */
      0x15, 0x04, 0x19, 0x15, 0x00, 0x19, 0x18, 0x01, 'x',
      0x15, 0x02,                                     /* type, [PLAIN], ["x"], SNAPPY */
      0x16, 0x06, 0x16, 0x40, 0x16, 0x40, 0x26, 0x08, /* num_values 3, sizes 32, 32, dpo 4 (9) */
      0x00,                                           /* end ColumnMetaData */
      0x00,                                           /* end ColumnChunk */
      0x16, 0x30, 0x16, 0x06,                         /* RowGroup.2 total 24, 3 num_rows 3 */
      0x00,                                           /* end RowGroup */
      0x00};
  qv_pq_file_meta m;
  qv_error e;
  qv_status st = qv_pq_decode_file_meta(b, sizeof b, &m, &e);
  QV_REQUIRE(st == QV_OK);
  QV_CHECK_EQ_INT(m.version, 1);
  QV_CHECK_EQ_INT(m.n_schema, 2);
  QV_CHECK_EQ_STR(m.schema[0].name, "root");
  QV_CHECK_EQ_INT(m.schema[0].num_children, 1);
  QV_CHECK_EQ_INT(m.schema[1].type, QV_PQ_INT64);
  QV_CHECK_EQ_INT(m.schema[1].repetition, QV_PQ_REQUIRED);
  QV_CHECK_EQ_INT(m.num_rows, 3);
  QV_REQUIRE(m.n_row_groups == 1 && m.row_groups[0].n_columns == 1);
  const qv_pq_column_meta *cm = &m.row_groups[0].columns[0].meta;
  QV_CHECK_EQ_INT(cm->codec, QV_PQ_SNAPPY);
  QV_CHECK(cm->n_encodings == 1 && cm->encodings[0] == QV_PQ_PLAIN);
  QV_CHECK_EQ_STR(cm->path, "x");
  QV_CHECK_EQ_INT(cm->num_values, 3);
  QV_CHECK_EQ_INT(cm->total_compressed_size, 32);
  QV_CHECK_EQ_INT(cm->data_page_offset, 4);
  QV_CHECK_EQ_INT(m.row_groups[0].num_rows, 3);
  qv_pq_file_meta_reset(&m);
  /* every truncation fails cleanly */
  for (size_t cut = 0; cut + 1 < sizeof b; cut++) {
    st = qv_pq_decode_file_meta(b, (int64_t)cut, &m, &e);
    QV_CHECK(st != QV_OK);
  }
}

static void test_page_header(void) {
  /* DATA_PAGE_V2: type 3, sizes 10/8, crc, v2 header (values 4, nulls 1,
   * rows 4, encoding RLE_DICTIONARY, def len 2, rep len 0, not compressed) */
  const uint8_t b[] = {0x15, 0x06, 0x15, 0x14, 0x15, 0x10, 0x15, 0x02, 0x4c, 0x15, 0x08, 0x15, 0x02,
                       0x15, 0x08, 0x15, 0x10, 0x15, 0x04, 0x15, 0x00, 0x12, 0x00, 0x00, 0xee};
  qv_pq_page_header h;
  int64_t hl = 0;
  qv_error e;
  QV_REQUIRE(qv_pq_decode_page_header(b, sizeof b, &h, &hl, &e) == QV_OK);
  QV_CHECK_EQ_INT(hl, sizeof b - 1);
  QV_CHECK(h.type == QV_PQ_DATA_PAGE_V2 && h.has_v2);
  QV_CHECK(h.uncompressed_size == 10 && h.compressed_size == 8);
  QV_CHECK(h.has_crc && h.crc == 1);
  QV_CHECK(h.num_values == 4 && h.num_nulls == 1 && h.num_rows == 4);
  QV_CHECK(h.encoding == QV_PQ_RLE_DICTIONARY && h.def_len == 2 && h.rep_len == 0);
  QV_CHECK(!h.is_compressed);
  /* a negative size is refused */
  const uint8_t neg[] = {0x15, 0x00, 0x15, 0x01, 0x15, 0x00, 0x00};
  QV_CHECK(qv_pq_decode_page_header(neg, sizeof neg, &h, &hl, &e) == QV_EINVAL);
}

static void test_rle(void) {
  /* Encodings.md example: bit width 3, values 0..7 bit-packed (one group):
   * header (1 << 1) | 1 = 3, bytes 10001000 11000110 11111010 */
  const uint8_t bp[] = {0x03, 0x88, 0xc6, 0xfa};
  uint32_t out[16];
  qv_pq_rle r;
  qv_error e;
  qv_pq_rle_init(&r, bp, sizeof bp, 3);
  QV_REQUIRE(qv_pq_rle_get(&r, out, 8, &e) == QV_OK);
  for (uint32_t i = 0; i < 8; i++) QV_CHECK_EQ_INT(out[i], i);
  /* RLE run: 5 x value 2 (header 5 << 1 = 10, one value byte), then a
   * bit-packed run of width 1 (8 values 1,0,1,1,0,0,0,1) */
  const uint8_t mix[] = {0x0a, 0x02, 0x03, 0x8d};
  qv_pq_rle_init(&r, mix, sizeof mix, 2);
  QV_REQUIRE(qv_pq_rle_get(&r, out, 5, &e) == QV_OK);
  for (int i = 0; i < 5; i++) QV_CHECK_EQ_INT(out[i], 2);
  QV_REQUIRE(qv_pq_rle_get(&r, out, 4, &e) == QV_OK); /* width 2 over 0x8d = 10 00 11 01 */
  QV_CHECK(out[0] == 1 && out[1] == 3 && out[2] == 0 && out[3] == 2);
  /* running out of data is an error, not garbage */
  qv_pq_rle_init(&r, mix, 2, 2);
  QV_CHECK(qv_pq_rle_get(&r, out, 6, &e) == QV_EINVAL);
  /* an RLE value wider than the bit width */
  const uint8_t wide[] = {0x04, 0x07};
  qv_pq_rle_init(&r, wide, sizeof wide, 2);
  QV_CHECK(qv_pq_rle_get(&r, out, 2, &e) == QV_EINVAL);
}

static void test_delta(void) {
  /* Encodings.md example 1: 1 2 3 4 5 -> block 128, 4 miniblocks, 5
   * values, first 1; min delta 1, all bit widths 0. */
  const uint8_t d1[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
  int64_t out[8], n = 0, used = 0;
  qv_error e;
  QV_REQUIRE(qv_pq_delta_decode(d1, sizeof d1, 8, 5, out, &n, &used, &e) == QV_OK);
  QV_CHECK_EQ_INT(n, 5);
  for (int i = 0; i < 5; i++) QV_CHECK_EQ_INT(out[i], i + 1);
  QV_CHECK_EQ_INT(used, sizeof d1);
  /* example 2: 7 5 3 1 2 3 4 5: deltas -2 -2 -2 1 1 1 1, min -2, so
   * values 0 0 0 3 3 3 3 in width 2: bytes 0xc0 0xff then zeros */
  const uint8_t d2[] = {0x80, 0x01, 0x04, 0x08, 0x0e, 0x03, 0x02, 0x00, 0x00,
                        0x00, 0xc0, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  int32_t o32[8];
  QV_REQUIRE(qv_pq_delta_decode(d2, sizeof d2, 4, 8, o32, &n, &used, &e) == QV_OK);
  const int32_t want[] = {7, 5, 3, 1, 2, 3, 4, 5};
  for (int i = 0; i < 8; i++) QV_CHECK_EQ_INT(o32[i], want[i]);
  /* more values than the page holds, a bad block size, truncation */
  QV_CHECK(qv_pq_delta_decode(d2, sizeof d2, 4, 3, o32, &n, &used, &e) == QV_EINVAL);
  const uint8_t bad[] = {0x81, 0x01, 0x04, 0x01, 0x00};
  QV_CHECK(qv_pq_delta_decode(bad, sizeof bad, 4, 3, o32, &n, &used, &e) == QV_EINVAL);
  QV_CHECK(qv_pq_delta_decode(d2, 11, 4, 8, o32, &n, &used, &e) == QV_EINVAL);
}

/* A DELTA_BINARY_PACKED encoder written from Encodings.md for the round
 * trips below: block size 128, 4 miniblocks of 32, deltas and min deltas
 * in modular uint64 arithmetic, each miniblock packed LSB first in the
 * bit width of its largest (delta - min delta); the last miniblock padded
 * to its full width as writers do. Returns the bytes written. */
static size_t put_uvarint(uint8_t *o, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    o[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  o[n++] = (uint8_t)v;
  return n;
}

static uint64_t zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static size_t dbp_encode(const int64_t *v, int64_t n, uint8_t *o, size_t *pad) {
  size_t at = 0;
  *pad = 0;
  at += put_uvarint(o + at, 128);
  at += put_uvarint(o + at, 4);
  at += put_uvarint(o + at, (uint64_t)n);
  at += put_uvarint(o + at, zigzag64(n ? v[0] : 0));
  for (int64_t b = 1; b < n; b += 128) {
    int64_t cnt = n - b < 128 ? n - b : 128;
    uint64_t d[128] = {0};
    int64_t mind = INT64_MAX;
    for (int64_t j = 0; j < cnt; j++) {
      d[j] = (uint64_t)v[b + j] - (uint64_t)v[b + j - 1];
      if ((int64_t)d[j] < mind) mind = (int64_t)d[j];
    }
    at += put_uvarint(o + at, zigzag64(mind));
    uint8_t *widths = o + at;
    at += 4;
    for (int m = 0; m < 4; m++) {
      uint64_t hi = 0;
      for (int64_t j = m * 32; j < (m + 1) * 32 && j < cnt; j++) hi |= d[j] - (uint64_t)mind;
      int w = 0;
      while (w < 64 && (hi >> w) != 0) w++;
      widths[m] = (uint8_t)(m * 32 < cnt ? w : 0);
      if (m * 32 >= cnt) continue;
      memset(o + at, 0, (size_t)(32 * w / 8));
      for (int64_t j = 0; j < 32; j++) {
        uint64_t x = m * 32 + j < cnt ? d[m * 32 + j] - (uint64_t)mind : 0;
        for (int bit = 0; bit < w; bit++)
          if ((x >> bit) & 1)
            o[at + (size_t)((j * w + bit) / 8)] |= (uint8_t)(1u << ((j * w + bit) % 8));
      }
      int64_t in_mb = cnt - m * 32 < 32 ? cnt - m * 32 : 32;
      *pad = (size_t)(32 * w / 8 - (in_mb * w + 7) / 8);
      at += (size_t)(32 * w / 8);
    }
  }
  return at;
}

/* Miniblocks of bit width 57..64, where a value's bits span 9 bytes
 * (shift + width > 64): int64 timestamps spread over +-2^62 give these
 * (issue #15, test_generated_matrix[2.0-none-delta] off by 1 ns for some
 * hash seeds). Every width decodes to the values encoded, also with the
 * last partial miniblock cut to the bytes its values need (the buffer's
 * end inside a value's 9 bytes). */
static void test_delta_wide(void) {
  enum { N = 32 * 8 * 4 + 1 + 13 };
  int64_t *v = malloc(N * sizeof *v), *out = malloc(N * sizeof *out);
  uint8_t *buf = malloc(N * 9 + 64);
  QV_REQUIRE(v && out && buf);
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int w = 57; w <= 64; w++) {
    /* deltas of exactly w bits in every miniblock (one delta 0 per
     * block keeps min delta 0 for w < 64) */
    v[0] = (int64_t)(x ^ (uint64_t)w);
    for (int64_t i = 1; i < N; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      uint64_t mask = w == 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1;
      uint64_t d = (i - 1) % 32 == 0 ? 0 : (x & mask) | (UINT64_C(1) << (w - 1));
      v[i] = (int64_t)((uint64_t)v[i - 1] + d);
    }
    size_t pad = 0;
    size_t len = dbp_encode(v, N, buf, &pad);
    int64_t n = 0, used = 0;
    qv_error e;
    QV_REQUIRE(qv_pq_delta_decode(buf, (int64_t)len, 8, N, out, &n, &used, &e) == QV_OK);
    QV_CHECK_EQ_INT(n, N);
    QV_CHECK_EQ_INT(used, (int64_t)len);
    int64_t bad = -1;
    for (int64_t i = 0; i < N && bad < 0; i++)
      if (out[i] != v[i]) bad = i;
    if (bad >= 0)
      fprintf(stderr, "width %d: value %lld is %lld, expected %lld\n", w, (long long)bad,
              (long long)out[bad], (long long)v[bad]);
    QV_CHECK_EQ_INT(bad, -1);
    /* the last miniblock holds 13 deltas, padded to 32: cut the padding */
    int64_t cut = (int64_t)(len - pad);
    QV_CHECK(pad > 0);
    memset(out, 0, N * sizeof *out);
    QV_REQUIRE(qv_pq_delta_decode(buf, cut, 8, N, out, &n, &used, &e) == QV_OK);
    QV_CHECK_EQ_INT(used, cut);
    QV_CHECK(memcmp(out, v, N * sizeof *v) == 0);
  }
  free(v);
  free(out);
  free(buf);
}

static void test_decompress(void) {
  qv_error e;
  uint8_t dst[16];
  const uint8_t raw[] = "abcd";
  QV_CHECK(qv_pq_decompress(QV_PQ_UNCOMPRESSED, raw, 4, dst, 4, &e) == QV_OK);
  QV_CHECK(qv_pq_decompress(QV_PQ_UNCOMPRESSED, raw, 4, dst, 5, &e) == QV_EINVAL);
  /* snappy: length 4 then a literal of 4 bytes (tag (4-1) << 2) */
  const uint8_t sn[] = {0x04, 0x0c, 'w', 'x', 'y', 'z'};
  QV_CHECK(qv_pq_decompress(QV_PQ_SNAPPY, sn, sizeof sn, dst, 4, &e) == QV_OK);
  QV_CHECK(memcmp(dst, "wxyz", 4) == 0);
  QV_CHECK(qv_pq_decompress(QV_PQ_SNAPPY, sn, sizeof sn, dst, 8, &e) == QV_EINVAL);
  QV_CHECK(qv_pq_decompress(QV_PQ_LZO, sn, sizeof sn, dst, 4, &e) == QV_ENOTSUP);
  QV_CHECK(qv_pq_decompress(99, sn, sizeof sn, dst, 4, &e) == QV_ENOTSUP);
}

/* Encodings.md "Bit-packed (Deprecated)": 0..7 in 3 bits are
 * 00000101 00111001 01110111, most significant bit first. */
static void test_bit_packed_levels(void) {
  qv_error e;
  const uint8_t spec[] = {0x05, 0x39, 0x77};
  int16_t out[8];
  int64_t used = 0;
  QV_CHECK(qv_pq_bit_packed_levels(spec, sizeof spec, 8, 7, out, &used, &e) == QV_OK);
  QV_CHECK(used == 3);
  for (int i = 0; i < 8; i++) QV_CHECK(out[i] == i);
  /* 5 levels of width 3 take 2 bytes (15 bits, one padding bit) */
  QV_CHECK(qv_pq_bit_packed_levels(spec, sizeof spec, 5, 7, out, &used, &e) == QV_OK);
  QV_CHECK(used == 2 && out[4] == 4);
  /* max 5 still needs 3 bits; level 6 is above it */
  QV_CHECK(qv_pq_bit_packed_levels(spec, sizeof spec, 8, 5, out, &used, &e) == QV_EINVAL);
  QV_CHECK(strstr(e.message, "level 6 at 6 above the maximum 5") != NULL);
  /* too few bytes for the levels */
  QV_CHECK(qv_pq_bit_packed_levels(spec, 2, 8, 7, out, &used, &e) == QV_EINVAL);
  QV_CHECK(strstr(e.message, "need 3 bytes, 2 left") != NULL);
  /* width 1: 10110000 */
  const uint8_t one[] = {0xB0};
  QV_CHECK(qv_pq_bit_packed_levels(one, 1, 4, 1, out, &used, &e) == QV_OK);
  QV_CHECK(used == 1 && out[0] == 1 && out[1] == 0 && out[2] == 1 && out[3] == 1);
}

/* Pages through the reader's decoders (parquet_page_internal.h): cases
 * fuzz_parquet_page found. */
static void test_page_probe(void) {
  qv_error e;
  int64_t nv = -1, nl = -1;
  /* PLAIN byte arrays whose first value takes the bytes the second's
   * length needs: refused (once written past the values' buffer). */
  const uint8_t ba[] = {1, 0, 0, 0, 'a', 0, 0, 0x12};
  qv_pq_page_probe pr;
  memset(&pr, 0, sizeof pr);
  pr.physical = QV_PQ_BYTE_ARRAY;
  pr.encoding = QV_PQ_PLAIN;
  pr.page = ba;
  pr.page_len = sizeof ba;
  pr.num_values = 2;
  QV_CHECK(qv_pq_page_probe_decode(&pr, &nv, &nl, &e) == QV_EINVAL);
  QV_CHECK(strstr(e.message, "byte array 0 of 1 bytes runs past the page") != NULL);
  /* one value fits */
  pr.num_values = 1;
  QV_CHECK(qv_pq_page_probe_decode(&pr, &nv, &nl, &e) == QV_OK && nv == 1 && nl == 1);
  /* an empty v1 page of nullable values (levels of 0 bytes): nothing */
  const uint8_t empty[] = {0, 0, 0, 0};
  pr.max_def = 1;
  pr.def_encoding = QV_PQ_RLE;
  pr.num_values = 0;
  pr.page = empty;
  pr.page_len = sizeof empty;
  QV_CHECK(qv_pq_page_probe_decode(&pr, &nv, &nl, &e) == QV_OK && nv == 0 && nl == 0);
  /* BIT_PACKED definition levels 1,0,1,1 (0xB0) then PLAIN int32 values */
  const uint8_t bp[] = {0xB0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0};
  memset(&pr, 0, sizeof pr);
  pr.physical = QV_PQ_INT32;
  pr.encoding = QV_PQ_PLAIN;
  pr.max_def = 1;
  pr.def_encoding = QV_PQ_BIT_PACKED;
  pr.page = bp;
  pr.page_len = sizeof bp;
  pr.num_values = 4;
  QV_CHECK(qv_pq_page_probe_decode(&pr, &nv, &nl, &e) == QV_OK && nv == 3 && nl == 4);
}

int main(void) {
  QV_RUN(test_varints);
  QV_RUN(test_fields_and_skip);
  QV_RUN(test_lengths_and_depth);
  QV_RUN(test_file_meta);
  QV_RUN(test_page_header);
  QV_RUN(test_rle);
  QV_RUN(test_bit_packed_levels);
  QV_RUN(test_page_probe);
  QV_RUN(test_delta);
  QV_RUN(test_delta_wide);
  QV_RUN(test_decompress);
  return QV_TEST_END();
}
