/*
 * test_parquet_write.c — unit tests of the Parquet writer's encoders and
 * of the writer's file structure: the thrift compact encoder (field
 * deltas short and long, every value kind, nested structs, short and long
 * list headers) and the RLE/bit-packing hybrid encoder are decoded with a
 * small decoder written here from the specs; a written file has the magic
 * at both ends and a footer whose FileMetaData (decoded generically) holds
 * the row count, the schema elements and the row groups; errors leave no
 * file. Values against pyarrow/DuckDB are in tests/python/test_parquet_write.py.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/parquet_format.h"
#include "formats/parquet_write_internal.h"
#include "formats/thrift_write.h"
#include "quiver/parquet_writer.h"
#include "qv_build.h"
#include "qv_test.h"

static char g_dir[64];

/* ------------------------------------------------ test-only decoders */

typedef struct rd {
  const uint8_t *p;
  int64_t n, at;
  bool bad;
} rd;

static uint64_t rd_uvarint(rd *r) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->at >= r->n) {
      r->bad = true;
      return 0;
    }
    uint8_t b = r->p[r->at++];
    v |= (uint64_t)(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  r->bad = true;
  return 0;
}

static int64_t rd_zigzag(rd *r) {
  uint64_t u = rd_uvarint(r);
  return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static uint8_t rd_byte(rd *r) {
  if (r->at >= r->n) {
    r->bad = true;
    return 0;
  }
  return r->p[r->at++];
}

/* Field header: *id and *type; false at STOP. */
static bool rd_field(rd *r, int16_t *last, int16_t *id, int *type) {
  uint8_t b = rd_byte(r);
  if (r->bad || b == 0) return false;
  *type = b & 15;
  if (b >> 4) *id = (int16_t)(*last + (b >> 4));
  else *id = (int16_t)rd_zigzag(r);
  *last = *id;
  return true;
}

static void rd_skip(rd *r, int type, int depth);

static void rd_skip_struct(rd *r, int depth) {
  int16_t last = 0, id;
  int type;
  if (depth > 20) {
    r->bad = true;
    return;
  }
  while (!r->bad && rd_field(r, &last, &id, &type)) rd_skip(r, type, depth + 1);
}

static void rd_list_header(rd *r, int *etype, int64_t *n) {
  uint8_t b = rd_byte(r);
  *etype = b & 15;
  *n = b >> 4;
  if (*n == 15) *n = (int64_t)rd_uvarint(r);
}

static void rd_skip(rd *r, int type, int depth) {
  switch (type) {
    case QV_TC_BOOL_TRUE:
    case QV_TC_BOOL_FALSE: break;
    case QV_TC_BYTE: rd_byte(r); break;
    case QV_TC_I16:
    case QV_TC_I32:
    case QV_TC_I64: rd_zigzag(r); break;
    case QV_TC_DOUBLE: r->at += 8; break;
    case QV_TC_BINARY: r->at += (int64_t)rd_uvarint(r); break;
    case QV_TC_LIST: {
      int et;
      int64_t n;
      rd_list_header(r, &et, &n);
      for (int64_t i = 0; i < n && !r->bad; i++) {
        if (et == QV_TC_BOOL_TRUE) rd_byte(r); /* list bools are one byte each */
        else rd_skip(r, et, depth + 1);
      }
      break;
    }
    case QV_TC_STRUCT: rd_skip_struct(r, depth); break;
    default: r->bad = true;
  }
  if (r->at > r->n) r->bad = true;
}

/* RLE/bit-packing hybrid decoder of exactly n values. */
static bool rle_decode(const uint8_t *p, int64_t len, int bw, uint32_t *out, int64_t n) {
  rd r = {p, len, 0, false};
  int64_t k = 0;
  while (k < n) {
    uint64_t h = rd_uvarint(&r);
    if (r.bad) return false;
    if (h & 1) {
      int64_t count = (int64_t)(h >> 1) * 8;
      uint64_t acc = 0;
      int bits = 0;
      for (int64_t i = 0; i < count; i++) {
        while (bits < bw) {
          acc |= (uint64_t)rd_byte(&r) << bits;
          bits += 8;
        }
        uint32_t v = (uint32_t)(acc & ((1ull << bw) - 1));
        acc >>= bw;
        bits -= bw;
        if (k < n) out[k++] = v;
        else if (v != 0) return false; /* padding must be zero */
      }
    } else {
      int64_t count = (int64_t)(h >> 1);
      uint32_t v = 0;
      for (int i = 0; i < (bw + 7) / 8; i++) v |= (uint32_t)rd_byte(&r) << (8 * i);
      if (count == 0 || k + count > n) return false;
      for (int64_t i = 0; i < count; i++) out[k++] = v;
    }
    if (r.bad) return false;
  }
  return r.at == len;
}

/* --------------------------------------------------------------- tests */

static void test_thrift_encoder(void) {
  qv_tw w;
  qv_tw_init(&w);
  qv_tw_struct_begin(&w);
  qv_tw_field_i32(&w, 1, -5);
  qv_tw_field_i64(&w, 2, INT64_MIN);
  qv_tw_field_bool(&w, 3, true);
  qv_tw_field_bool(&w, 4, false);
  qv_tw_field_i32(&w, 40, 123456789); /* delta > 15: long form */
  qv_tw_field_string(&w, 41, "hello");
  qv_tw_field_struct(&w, 42);
  qv_tw_field_i8(&w, 1, -3);
  qv_tw_struct_end(&w);
  qv_tw_field_list(&w, 43, QV_TC_I32, 20); /* long list header */
  for (int i = 0; i < 20; i++) qv_tw_zigzag(&w, i - 10);
  qv_tw_field_list(&w, 44, QV_TC_STRUCT, 2);
  for (int i = 0; i < 2; i++) {
    qv_tw_struct_begin(&w);
    qv_tw_field_i32(&w, 7, i);
    qv_tw_struct_end(&w);
  }
  qv_tw_field_i32(&w, 45, 0);
  qv_tw_struct_end(&w);
  QV_REQUIRE(qv_tw_ok(&w));

  rd r = {w.data, w.size, 0, false};
  int16_t last = 0, id;
  int type;
  int seen = 0;
  while (rd_field(&r, &last, &id, &type)) {
    seen++;
    switch (id) {
      case 1: QV_CHECK(type == QV_TC_I32 && rd_zigzag(&r) == -5); break;
      case 2: QV_CHECK(type == QV_TC_I64 && rd_zigzag(&r) == INT64_MIN); break;
      case 3: QV_CHECK(type == QV_TC_BOOL_TRUE); break;
      case 4: QV_CHECK(type == QV_TC_BOOL_FALSE); break;
      case 40: QV_CHECK(type == QV_TC_I32 && rd_zigzag(&r) == 123456789); break;
      case 41: {
        QV_CHECK(type == QV_TC_BINARY);
        int64_t n = (int64_t)rd_uvarint(&r);
        QV_CHECK(n == 5 && memcmp(w.data + r.at, "hello", 5) == 0);
        r.at += n;
        break;
      }
      case 42: {
        QV_CHECK(type == QV_TC_STRUCT);
        int16_t l2 = 0, id2;
        int t2;
        QV_CHECK(rd_field(&r, &l2, &id2, &t2) && id2 == 1 && t2 == QV_TC_BYTE);
        QV_CHECK((int8_t)rd_byte(&r) == -3);
        QV_CHECK(!rd_field(&r, &l2, &id2, &t2));
        break;
      }
      case 43: {
        int et;
        int64_t n;
        rd_list_header(&r, &et, &n);
        QV_CHECK(et == QV_TC_I32 && n == 20);
        for (int i = 0; i < 20; i++) QV_CHECK(rd_zigzag(&r) == i - 10);
        break;
      }
      case 44: {
        int et;
        int64_t n;
        rd_list_header(&r, &et, &n);
        QV_CHECK(et == QV_TC_STRUCT && n == 2);
        for (int i = 0; i < 2; i++) {
          int16_t l2 = 0, id2;
          int t2;
          QV_CHECK(rd_field(&r, &l2, &id2, &t2) && id2 == 7 && rd_zigzag(&r) == i);
          QV_CHECK(!rd_field(&r, &l2, &id2, &t2));
        }
        break;
      }
      case 45: QV_CHECK(rd_zigzag(&r) == 0); break;
      default: QV_CHECK(!"unexpected field");
    }
  }
  QV_CHECK(!r.bad && r.at == w.size);
  QV_CHECK_EQ_INT(seen, 10);
  qv_tw_reset(&w);
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 11);
}

static void test_rle_hybrid_round_trip(void) {
  enum { N = 5000 };
  static uint32_t v[N], back[N];
  for (int bw = 1; bw <= 32; bw += (bw < 4 ? 1 : 5)) {
    for (int pattern = 0; pattern < 4; pattern++) {
      int64_t n = pattern == 3 ? (int64_t)(rnd() % 20) : N - (int64_t)(rnd() % 13);
      uint64_t mask = bw == 32 ? 0xFFFFFFFFull : (1ull << bw) - 1;
      for (int64_t i = 0; i < n;) {
        /* runs of random length (some >= 8) mixed with noise */
        uint32_t x = (uint32_t)(rnd() & mask);
        int64_t len = pattern == 0 ? 1 : pattern == 1 ? 1 + rnd() % 20 : 1 + rnd() % 3;
        for (int64_t j = 0; j < len && i < n; j++) v[i++] = x;
      }
      qv_tw w;
      qv_tw_init(&w);
      qv_pw_rle_encode_u32(v, n, bw, &w);
      QV_REQUIRE(qv_tw_ok(&w));
      bool ok = rle_decode(w.data, w.size, bw, back, n);
      QV_CHECK(ok);
      if (ok) QV_CHECK(n == 0 || memcmp(v, back, sizeof(uint32_t) * (size_t)n) == 0);
      if (pattern == 1 && bw > 1) QV_CHECK(w.size < n * bw / 8); /* runs compress */
      qv_tw_reset(&w);
    }
  }
  QV_CHECK_EQ_INT(qv_pw_bit_width(0), 0);
  QV_CHECK_EQ_INT(qv_pw_bit_width(1), 1);
  QV_CHECK_EQ_INT(qv_pw_bit_width(255), 8);
  QV_CHECK_EQ_INT(qv_pw_bit_width(256), 9);
}

static void test_base64(void) {
  const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  const char *want[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
  for (int i = 0; i < 7; i++) {
    qv_tw w;
    qv_tw_init(&w);
    qv_pw_base64((const uint8_t *)in[i], (int64_t)strlen(in[i]), &w);
    qv_tw_bytes(&w, "", 1);
    QV_CHECK_EQ_STR(w.data ? (const char *)w.data : "", want[i]);
    qv_tw_reset(&w);
  }
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

/* A batch {a: int32 with a null, s: string, l: list<int32>} of 3 rows. */
static qv_array *small_batch(qv_schema **schema) {
  int32_t av[3] = {7, 0, -9};
  qv_array *a = tb_prim(qv_type_new(QV_INT32), 3, "101", av, sizeof av);
  const char *sv[3] = {"x", "yy", NULL};
  qv_array *s = tb_str(QV_STRING, 3, sv, NULL);
  int32_t items[3] = {1, 2, 3};
  int32_t offs[4] = {0, 2, 2, 3};
  qv_array *child = tb_prim(qv_type_new(QV_INT32), 3, NULL, items, sizeof items);
  qv_buffer *lb[2] = {NULL, tb_buf(offs, sizeof offs)};
  qv_type *lt = qv_type_list_of(QV_LIST, qv_type_new(QV_INT32));
  qv_array *l = tb_array(qv_type_ref(lt), 3, 2, lb, 1, &child);
  qv_type *st = qv_type_new(QV_STRUCT);
  st = tb_child(st, "a", qv_type_new(QV_INT32));
  st = tb_child(st, "s", qv_type_new(QV_STRING));
  st = tb_child(st, "l", lt);
  qv_array *cols[3] = {a, s, l};
  qv_array *batch = tb_array(qv_type_ref(st), 3, 0, NULL, 3, cols);
  *schema = qv_schema_new(st);
  return batch;
}

static void test_file_structure(void) {
  qv_schema *schema = NULL;
  qv_array *batch = small_batch(&schema);
  QV_REQUIRE(batch && schema);
  char path[128];
  snprintf(path, sizeof path, "%s/t.parquet", g_dir);
  qv_error err;
  qv_parquet_write_options o;
  memset(&o, 0, sizeof o);
  o.row_group_rows = 2;
  o.codec = QV_PARQUET_ZSTD;
  qv_parquet_writer *w = NULL;
  QV_REQUIRE(qv_parquet_writer_open_path(path, schema, &o, &w, &err) == QV_OK);
  QV_CHECK(qv_parquet_writer_write_batch(w, batch, &err) == QV_OK);
  QV_CHECK(qv_parquet_writer_write_batch(w, batch, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_parquet_writer_rows(w), 6);
  QV_REQUIRE(qv_parquet_writer_close(w, &err) == QV_OK);
  QV_CHECK_EQ_INT(count_entries(g_dir), 1); /* no temporary left */

  FILE *f = fopen(path, "rb");
  QV_REQUIRE(f);
  static uint8_t buf[1 << 16];
  int64_t n = (int64_t)fread(buf, 1, sizeof buf, f);
  fclose(f);
  QV_REQUIRE(n > 12);
  QV_CHECK(memcmp(buf, "PAR1", 4) == 0 && memcmp(buf + n - 4, "PAR1", 4) == 0);
  uint32_t flen;
  memcpy(&flen, buf + n - 8, 4);
  QV_REQUIRE(flen < n - 12);
  rd r = {buf + n - 8 - flen, flen, 0, false};
  int16_t last = 0, id;
  int type;
  int64_t num_rows = -1, n_elems = -1, n_rgs = -1;
  bool arrow_schema = false;
  while (rd_field(&r, &last, &id, &type)) {
    if (id == 3) {
      num_rows = rd_zigzag(&r);
    } else if (id == 2 || id == 4) {
      int et;
      int64_t k;
      rd_list_header(&r, &et, &k);
      if (id == 2) n_elems = k;
      else n_rgs = k;
      for (int64_t i = 0; i < k; i++) rd_skip(&r, et, 0);
    } else if (id == 5) {
      int et;
      int64_t k;
      rd_list_header(&r, &et, &k);
      for (int64_t i = 0; i < k; i++) {
        int64_t at = r.at;
        rd_skip(&r, et, 0);
        for (int64_t j = at; j + 12 <= r.at; j++)
          if (memcmp(r.p + j, "ARROW:schema", 12) == 0) arrow_schema = true;
      }
    } else {
      rd_skip(&r, type, 0);
    }
  }
  QV_CHECK(!r.bad && r.at == (int64_t)flen);
  QV_CHECK_EQ_INT(num_rows, 6);
  /* schema, a, s, l, list, element */
  QV_CHECK_EQ_INT(n_elems, 6);
  QV_CHECK_EQ_INT(n_rgs, 3);
  QV_CHECK(arrow_schema);
  unlink(path);
  qv_array_unref(batch);
  qv_schema_unref(schema);
}

static void test_errors_leave_nothing(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/e.parquet", g_dir);
  qv_error err;
  /* a union column cannot be written */
  qv_type *u = qv_type_new(QV_SPARSE_UNION);
  qv_type *st = tb_child(qv_type_new(QV_STRUCT), "u", u);
  qv_schema *schema = qv_schema_new(st);
  qv_parquet_writer *w = NULL;
  QV_CHECK(qv_parquet_writer_open_path(path, schema, NULL, &w, &err) == QV_ENOTSUP);
  QV_CHECK(strstr(err.message, "column 'u'") != NULL);
  QV_CHECK(w == NULL);
  qv_schema_unref(schema);
  QV_CHECK_EQ_INT(count_entries(g_dir), 0);

  qv_array *batch = small_batch(&schema);
  qv_parquet_write_options o;
  memset(&o, 0, sizeof o);
  o.page_version = 3;
  QV_CHECK(qv_parquet_writer_open_path(path, schema, &o, &w, &err) == QV_EARG);
  o.page_version = 2;
  o.codec = (qv_parquet_codec)3; /* LZO */
  QV_CHECK(qv_parquet_writer_open_path(path, schema, &o, &w, &err) == QV_EARG);
  o.codec = QV_PARQUET_GZIP;
  QV_REQUIRE(qv_parquet_writer_open_path(path, schema, &o, &w, &err) == QV_OK);
  QV_CHECK(qv_parquet_writer_write_batch(w, batch, &err) == QV_OK);
  /* a batch of another type is refused */
  QV_CHECK(qv_parquet_writer_write_batch(w, batch->children[0], &err) == QV_ETYPE);
  qv_parquet_writer_abort(w);
  QV_CHECK_EQ_INT(count_entries(g_dir), 0);
  qv_array_unref(batch);
  qv_schema_unref(schema);

  qv_parquet_codec c;
  QV_CHECK(qv_parquet_codec_from_name("zstd", &c) && c == QV_PARQUET_ZSTD);
  QV_CHECK(qv_parquet_codec_from_name("lz4", &c) && c == QV_PARQUET_LZ4_RAW);
  QV_CHECK(!qv_parquet_codec_from_name("lzo", &c));
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/qv_test_pqwrite_XXXXXX");
  if (mkdtemp(g_dir) == NULL) return 1;
  QV_RUN(test_thrift_encoder);
  QV_RUN(test_rle_hybrid_round_trip);
  QV_RUN(test_base64);
  QV_RUN(test_file_structure);
  QV_RUN(test_errors_leave_nothing);
  rmdir(g_dir);
  return QV_TEST_END();
}
