/*
 * test_print.c — JSON rendering of values and rows (src/core/print.c):
 * exact expected text for every type family and the edge cases named in
 * docs/json-rows.md (negative decimals, 256-bit decimals, pre-1970 and
 * far-away dates, int64 extremes, float shortest round trip, invalid UTF-8).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "quiver/print.h"
#include "qv_build.h"
#include "qv_test.h"

/* Render every row of `a` joined by ',' and compare with `want`; consumes a. */
static void check_rows_(qv_array *a, const char *want, const char *file, int line) {
  if (!a) {
    fprintf(stderr, "%s:%d: array construction failed\n", file, line);
    qv_test_failed_checks_++;
    return;
  }
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_error err = {{0}};
  for (int64_t i = 0; i < a->length; i++) {
    if (i) qv_strbuf_append_char(&sb, ',', NULL);
    if (qv_format_value_json(a, i, &sb, &err) != QV_OK) {
      fprintf(stderr, "%s:%d: row %lld failed: %s\n", file, line, (long long)i, err.message);
      qv_test_failed_checks_++;
      break;
    }
  }
  if (strcmp(qv_strbuf_cstr(&sb), want) != 0) {
    fprintf(stderr, "%s:%d: rendering mismatch\n  got:      %s\n  expected: %s\n", file, line,
            qv_strbuf_cstr(&sb), want);
    qv_test_failed_checks_++;
  }
  qv_strbuf_reset(&sb);
  qv_array_unref(a);
}
#define CHECK_ROWS(a, want) check_rows_((a), (want), __FILE__, __LINE__)

static qv_type *unit_type(qv_type_id id, qv_time_unit u) {
  qv_type *t = qv_type_new(id);
  t->unit = u;
  return t;
}

static qv_type *dec_type(qv_type_id id, int32_t p, int32_t s) {
  qv_type *t = qv_type_new(id);
  t->precision = p;
  t->scale = s;
  return t;
}

static void test_strbuf(void) {
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), "");
  for (int i = 0; i < 1000; i++) qv_strbuf_printf(&sb, NULL, "%d,", i % 10);
  QV_CHECK_EQ_INT(sb.len, 2000);
  QV_CHECK(strncmp(sb.data, "0,1,2,", 6) == 0);
  char big[300];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  qv_strbuf_clear(&sb);
  QV_CHECK_EQ_INT(qv_strbuf_printf(&sb, NULL, "<%s>", big), QV_OK);
  QV_CHECK_EQ_INT(sb.len, 301);
  QV_CHECK(sb.data[300] == '>' && sb.data[301] == 0);
  qv_strbuf_reset(&sb);
  qv_strbuf_reset(NULL);
}

static void test_null_bool_ints(void) {
  qv_array *na = tb_array(tb_type(QV_NA), 2, 0, NULL, 0, NULL);
  CHECK_ROWS(na, "null,null");
  uint8_t bits = 0x05; /* 1,0,1 */
  CHECK_ROWS(tb_prim(tb_type(QV_BOOL), 3, "110", &bits, 1), "true,false,null");
  int64_t i64[] = {INT64_MIN, -1, 0, INT64_MAX};
  CHECK_ROWS(tb_prim(tb_type(QV_INT64), 4, NULL, i64, sizeof i64),
             "-9223372036854775808,-1,0,9223372036854775807");
  uint64_t u64[] = {0, UINT64_MAX};
  CHECK_ROWS(tb_prim(tb_type(QV_UINT64), 2, NULL, u64, sizeof u64), "0,18446744073709551615");
  int8_t i8[] = {-128, 127, 5};
  CHECK_ROWS(tb_prim(tb_type(QV_INT8), 3, "101", i8, sizeof i8), "-128,null,5");
  uint8_t u8[] = {255, 0};
  CHECK_ROWS(tb_prim(tb_type(QV_UINT8), 2, NULL, u8, 2), "255,0");
  int16_t i16[] = {-32768, 32767};
  CHECK_ROWS(tb_prim(tb_type(QV_INT16), 2, NULL, i16, 4), "-32768,32767");
  uint16_t u16[] = {65535};
  CHECK_ROWS(tb_prim(tb_type(QV_UINT16), 1, NULL, u16, 2), "65535");
  int32_t i32[] = {INT32_MIN, 7};
  CHECK_ROWS(tb_prim(tb_type(QV_INT32), 2, NULL, i32, 8), "-2147483648,7");
  uint32_t u32[] = {UINT32_MAX};
  CHECK_ROWS(tb_prim(tb_type(QV_UINT32), 1, NULL, u32, 4), "4294967295");

  /* a slice applies the offset */
  qv_array *a = tb_prim(tb_type(QV_INT64), 4, "1011", i64, sizeof i64);
  qv_array *s = NULL;
  QV_REQUIRE(qv_array_slice(a, 1, 3, &s, NULL) == QV_OK);
  qv_array_unref(a);
  CHECK_ROWS(s, "null,0,9223372036854775807");
}

static void test_floats(void) {
  double d[] = {0.1,
                1.0,
                1e16,
                1.5e-5,
                123456.789,
                -0.0,
                NAN,
                INFINITY,
                -INFINITY,
                5e-324,
                1e-4,
                1234567890123456.0,
                100.0,
                1.7976931348623157e308,
                0.30000000000000004,
                2.5e-7};
  CHECK_ROWS(tb_prim(tb_type(QV_DOUBLE), 16, NULL, d, sizeof d),
             "0.1,1.0,1e+16,1.5e-05,123456.789,-0.0,\"NaN\",\"Infinity\","
             "\"-Infinity\",5e-324,0.0001,1234567890123456.0,100.0,"
             "1.7976931348623157e+308,0.30000000000000004,2.5e-07");
  float f[] = {0.1f, 16777216.0f, 3.4028235e38f, -2.5f, 1e-45f};
  CHECK_ROWS(tb_prim(tb_type(QV_FLOAT), 5, NULL, f, sizeof f),
             "0.1,16777216.0,3.4028235e+38,-2.5,1e-45");
  /* half: 1.0, 0.333251953125, 65504, smallest subnormal, -2, inf, nan,
   * 0.1 (0x2e66 = 0.0999755859375). Shortest round trip is per width:
   * 65504 prints as 65500.0, which reads back as the same half (numpy's
   * repr of float16(65504) agrees). */
  uint16_t h[] = {0x3c00, 0x3555, 0x7bff, 0x0001, 0xc000, 0x7c00, 0x7e00, 0x2e66};
  CHECK_ROWS(tb_prim(tb_type(QV_HALF_FLOAT), 8, NULL, h, sizeof h),
             "1.0,0.3333,65500.0,6e-08,-2.0,\"Infinity\",\"NaN\",0.1");
  qv_strbuf sb = {0};
  qv_format_double(&sb, NAN, NULL);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), "NaN");
  qv_strbuf_reset(&sb);
}

/* The float printer against brute force: for every half, and for random
 * float and double bit patterns (normals, subnormals, powers of two, short
 * decimals), the text reads back to the same value at its width and has as
 * few significant digits as the smallest %.*e precision that round-trips
 * (searched from 1 digit up, independently of print.c's shortcut). */
static uint64_t fl_rng = 0x9e3779b97f4a7c15u;
static uint64_t fl_next(void) {
  uint64_t z = (fl_rng += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static double fl_half(uint16_t h) { /* exact half -> double */
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* width 16/32/64: does text read back as v at that width? */
static bool fl_back(const char *text, double v, int width) {
  if (width == 64) return strtod(text, NULL) == v;
  if (width == 32) return strtof(text, NULL) == (float)v;
  double b = fabs(strtod(text, NULL)); /* nearest half of b equals v? */
  if (b >= 65520.0) return false;      /* rounds to infinity */
  uint32_t lo = 0, hi = 0x7bff;        /* positive finite halves ascend */
  while (lo < hi) {                    /* first half >= b */
    uint32_t mid = (lo + hi) / 2;
    if (fl_half((uint16_t)mid) < b) lo = mid + 1;
    else hi = mid;
  }
  uint32_t best = lo;
  if (lo > 0) {
    double dl = b - fl_half((uint16_t)(lo - 1)), dh = fl_half((uint16_t)lo) - b;
    if (dl < dh || (dl == dh && ((lo - 1) & 1) == 0)) best = lo - 1;
  }
  return fl_half(best) == fabs(v);
}

static int fl_sig_digits(const char *s) { /* significant digits of a repr */
  int n = 0, lead = 1, trailing = 0;
  for (; *s && *s != 'e'; s++) {
    if (*s < '0' || *s > '9') continue;
    if (lead && *s == '0') continue;
    lead = 0;
    n++;
    trailing = *s == '0' ? trailing + 1 : 0;
  }
  n -= trailing;
  return n < 1 ? 1 : n;
}

static void fl_check(qv_array *a, int width) {
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  for (int64_t i = 0; i < a->length; i++) {
    double v = width == 64   ? ((const double *)a->buffers[1]->data)[i]
               : width == 32 ? ((const float *)a->buffers[1]->data)[i]
                             : fl_half(((const uint16_t *)a->buffers[1]->data)[i]);
    if (!isfinite(v) || v == 0) continue;
    qv_strbuf_clear(&sb);
    QV_REQUIRE(qv_format_value_json(a, i, &sb, NULL) == QV_OK);
    const char *text = qv_strbuf_cstr(&sb);
    int want = 0;
    char buf[40];
    for (int p = 1; p <= 17; p++) {
      snprintf(buf, sizeof buf, "%.*e", p - 1, fabs(v));
      if (fl_back(buf, fabs(v), width)) {
        want = p;
        break;
      }
    }
    bool ok = fl_back(text, v, width) && fl_sig_digits(text) == want;
    if (!ok) {
      fprintf(stderr, "width %d value %.17g printed %s (want %d digits)\n", width, v, text, want);
      qv_test_failed_checks_++;
      break;
    }
  }
  qv_strbuf_reset(&sb);
  qv_array_unref(a);
}

static void test_floats_brute_force(void) {
  enum { N = 20000 };
  uint16_t *h = malloc(65536 * sizeof *h);
  for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
  fl_check(tb_prim(tb_type(QV_HALF_FLOAT), 65536, NULL, h, 65536 * sizeof *h), 16);
  free(h);
  float *f = malloc(N * sizeof *f);
  double *d = malloc(N * sizeof *d);
  for (int i = 0; i < N; i++) {
    uint64_t r = fl_next();
    switch (i % 4) {
      case 0: {
        uint32_t b = (uint32_t)r;
        memcpy(&f[i], &b, 4);
        memcpy(&d[i], &r, 8);
        break;
      }
      case 1: {
        uint32_t b = (uint32_t)r & 0x807fffffu;
        memcpy(&f[i], &b, 4); /* subnormal */
        uint64_t c = r & 0x800fffffffffffffu;
        memcpy(&d[i], &c, 8);
        break;
      }
      case 2:
        f[i] = ldexpf(1.0f, (int)(r % 250) - 125);
        d[i] = ldexp(1.0, (int)(r % 2000) - 1000);
        break;
      default:
        f[i] = (float)((double)(r % 100000) / 1000.0);
        d[i] = (double)(r % 10000000) / 1e4;
        break;
    }
  }
  fl_check(tb_prim(tb_type(QV_FLOAT), N, NULL, f, N * sizeof *f), 32);
  fl_check(tb_prim(tb_type(QV_DOUBLE), N, NULL, d, N * sizeof *d), 64);
  free(f);
  free(d);
}

static void test_decimals(void) {
  /* decimal128 as two int64 halves, little-endian */
  int64_t d128[][2] = {{12345, 0}, {-12345, -1}, {5, 0},        {-5, -1},
                       {0, 0},     {123, 0},     {0, INT64_MIN}};
  qv_array *a = tb_prim(dec_type(QV_DECIMAL128, 38, 2), 5, NULL, d128, 80);
  CHECK_ROWS(a, "\"123.45\",\"-123.45\",\"0.05\",\"-0.05\",\"0.00\"");
  a = tb_prim(dec_type(QV_DECIMAL128, 38, 3), 2, NULL, d128 + 2, 32);
  CHECK_ROWS(a, "\"0.005\",\"-0.005\"");
  a = tb_prim(dec_type(QV_DECIMAL128, 38, -2), 3, NULL, d128 + 4, 48);
  CHECK_ROWS(a, "\"0\",\"12300\",\"-17014118346046923173168730371588410572800\"");
  /* 10^38 - 1 = 0x4b3b4ca85a86c47a098a223fffffffff */
  uint64_t max38[2] = {0x098a223fffffffffULL, 0x4b3b4ca85a86c47aULL};
  a = tb_prim(dec_type(QV_DECIMAL128, 38, 0), 1, NULL, max38, 16);
  CHECK_ROWS(a, "\"99999999999999999999999999999999999999\"");
  a = tb_prim(dec_type(QV_DECIMAL128, 38, 38), 1, NULL, max38, 16);
  CHECK_ROWS(a, "\"0.99999999999999999999999999999999999999\"");
  /* decimal256: -1, 2^255 - 1, -2^255 */
  uint64_t d256[3][4] = {{UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX},
                         {UINT64_MAX, UINT64_MAX, UINT64_MAX, INT64_MAX},
                         {0, 0, 0, (uint64_t)1 << 63}};
  a = tb_prim(dec_type(QV_DECIMAL256, 76, 0), 3, "111", d256, sizeof d256);
  CHECK_ROWS(a,
             "\"-1\","
             "\"57896044618658097711785492504343953926634992332820282019728792003956564819967\","
             "\"-57896044618658097711785492504343953926634992332820282019728792003956564819968\"");
  a = tb_prim(dec_type(QV_DECIMAL256, 76, 10), 2, "01", d256, 64);
  CHECK_ROWS(
      a, "null,\"5789604461865809771178549250434395392663499233282028201972879200395.6564819967\"");
  int32_t d32[] = {1234, -1};
  CHECK_ROWS(tb_prim(dec_type(QV_DECIMAL32, 9, 1), 2, NULL, d32, 8), "\"123.4\",\"-0.1\"");
  int64_t d64[] = {INT64_MIN};
  CHECK_ROWS(tb_prim(dec_type(QV_DECIMAL64, 18, 4), 1, NULL, d64, 8), "\"-922337203685477.5808\"");
}

static void test_dates(void) {
  int32_t d32[] = {0, -1, 11016, 11017, -719528, -719529, 2932896, 2932897, -25508, -25509};
  CHECK_ROWS(tb_prim(tb_type(QV_DATE32), 10, NULL, d32, sizeof d32),
             "\"1970-01-01\",\"1969-12-31\",\"2000-02-29\",\"2000-03-01\","
             "\"0000-01-01\",\"-0001-12-31\",\"9999-12-31\",\"+10000-01-01\","
             "\"1900-03-01\",\"1900-02-28\"");
  int64_t d64[] = {-1, 86400000, 951782400000LL};
  CHECK_ROWS(tb_prim(tb_type(QV_DATE64), 3, NULL, d64, sizeof d64),
             "\"1969-12-31\",\"1970-01-02\",\"2000-02-29\"");
}

static void test_timestamps(void) {
  int64_t v = 1577836800123LL;
  CHECK_ROWS(tb_prim(qv_type_timestamp(QV_MILLI, "UTC"), 1, NULL, &v, 8),
             "\"2020-01-01T00:00:00.123Z\"");
  int64_t s[] = {-1, 0, 951782400};
  CHECK_ROWS(tb_prim(qv_type_timestamp(QV_SECOND, NULL), 3, NULL, s, 24),
             "\"1969-12-31T23:59:59\",\"1970-01-01T00:00:00\","
             "\"2000-02-29T00:00:00\"");
  int64_t us = -1;
  CHECK_ROWS(tb_prim(qv_type_timestamp(QV_MICRO, ""), 1, NULL, &us, 8),
             "\"1969-12-31T23:59:59.999999\"");
  int64_t ns[] = {INT64_MIN, INT64_MAX};
  CHECK_ROWS(tb_prim(qv_type_timestamp(QV_NANO, "Etc/UTC"), 2, NULL, ns, 16),
             "\"1677-09-21T00:12:43.145224192Z\","
             "\"2262-04-11T23:47:16.854775807Z\"");
  int64_t z = 0;
  CHECK_ROWS(tb_prim(qv_type_timestamp(QV_SECOND, "+05:30"), 1, NULL, &z, 8),
             "\"1970-01-01T05:30:00+05:30\"");
  CHECK_ROWS(tb_prim(qv_type_timestamp(QV_SECOND, "-08:00"), 1, NULL, &z, 8),
             "\"1969-12-31T16:00:00-08:00\"");
  CHECK_ROWS(tb_prim(qv_type_timestamp(QV_MILLI, "America/New_York"), 1, NULL, &z, 8),
             "\"1970-01-01T00:00:00.000Z[America/New_York]\"");
}

static void test_times_durations_intervals(void) {
  int32_t t32s[] = {3661, 0};
  CHECK_ROWS(tb_prim(unit_type(QV_TIME32, QV_SECOND), 2, NULL, t32s, 8),
             "\"01:01:01\",\"00:00:00\"");
  int32_t t32ms = 45296789;
  CHECK_ROWS(tb_prim(unit_type(QV_TIME32, QV_MILLI), 1, NULL, &t32ms, 4), "\"12:34:56.789\"");
  int64_t t64[] = {86399999999LL};
  CHECK_ROWS(tb_prim(unit_type(QV_TIME64, QV_MICRO), 1, NULL, t64, 8), "\"23:59:59.999999\"");
  int64_t t64n = 1;
  CHECK_ROWS(tb_prim(unit_type(QV_TIME64, QV_NANO), 1, NULL, &t64n, 8), "\"00:00:00.000000001\"");
  int64_t dms[] = {1500, 1000, -1};
  CHECK_ROWS(tb_prim(unit_type(QV_DURATION, QV_MILLI), 3, NULL, dms, 24),
             "\"PT1.5S\",\"PT1S\",\"-PT0.001S\"");
  int64_t ds[] = {-90, 0};
  CHECK_ROWS(tb_prim(unit_type(QV_DURATION, QV_SECOND), 2, NULL, ds, 16), "\"-PT90S\",\"PT0S\"");
  int64_t dns[] = {INT64_MIN, 1};
  CHECK_ROWS(tb_prim(unit_type(QV_DURATION, QV_NANO), 2, NULL, dns, 16),
             "\"-PT9223372036.854775808S\",\"PT0.000000001S\"");
  int32_t months[] = {14, -3};
  CHECK_ROWS(tb_prim(tb_type(QV_INTERVAL_MONTHS), 2, "10", months, 8), "{\"months\":14},null");
  int32_t dt[] = {1, -500};
  CHECK_ROWS(tb_prim(tb_type(QV_INTERVAL_DAY_TIME), 1, NULL, dt, 8),
             "{\"days\":1,\"milliseconds\":-500}");
  struct {
    int32_t m, d;
    int64_t ns;
  } mdn = {1, 2, -3};
  CHECK_ROWS(tb_prim(tb_type(QV_INTERVAL_MONTH_DAY_NANO), 1, NULL, &mdn, 16),
             "{\"months\":1,\"days\":2,\"nanoseconds\":-3}");
}

static void test_strings_binary(void) {
  const char *s[] = {"plain",
                     "a\"b\\c\n\x01\x1f/",
                     NULL,
                     "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80",
                     "bad\xff",
                     "trunc\xe2\x82",
                     "sur\xed\xa0\x80",
                     "over\xc0\xaf",
                     ""};
  CHECK_ROWS(tb_str(QV_STRING, 9, s, NULL),
             "\"plain\",\"a\\\"b\\\\c\\n\\u0001\\u001f/\",null,"
             "\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\",\"bad\\ufffd\","
             "\"trunc\\ufffd\\ufffd\",\"sur\\ufffd\\ufffd\\ufffd\","
             "\"over\\ufffd\\ufffd\",\"\"");
  const char *ls[] = {"x", NULL, "tab\there"};
  CHECK_ROWS(tb_str(QV_LARGE_STRING, 3, ls, NULL), "\"x\",null,\"tab\\there\"");
  const char *b[] = {"", "f", "fo", "foo", "foob", "\xff\x00", NULL};
  int64_t bl[] = {0, 1, 2, 3, 4, 2, 0};
  CHECK_ROWS(tb_str(QV_BINARY, 7, b, bl),
             "\"\",\"Zg==\",\"Zm8=\",\"Zm9v\",\"Zm9vYg==\",\"/wA=\",null");
  CHECK_ROWS(tb_str(QV_LARGE_BINARY, 2, b + 3, bl + 3), "\"Zm9v\",\"Zm9vYg==\"");
  const char fsb[] = "abcdef";
  qv_type *ft = tb_type(QV_FIXED_SIZE_BINARY);
  ft->byte_width = 3;
  CHECK_ROWS(tb_prim(ft, 2, "01", fsb, 6), "null,\"ZGVm\"");
}

/* A view array: one inline string, one out-of-line in data buffer 1. */
static qv_array *make_view(qv_type_id id) {
  uint8_t views[32] = {0};
  int32_t len0 = 5;
  memcpy(views, &len0, 4);
  memcpy(views + 4, "short", 5);
  int32_t len1 = 20, bufi = 1, off = 3;
  memcpy(views + 16, &len1, 4);
  memcpy(views + 20, "0123", 4);
  memcpy(views + 24, &bufi, 4);
  memcpy(views + 28, &off, 4);
  qv_buffer *b[4] = {NULL, tb_buf(views, 32), tb_buf("unused", 6),
                     tb_buf("xxx0123456789abcdefghijyy", 25)};
  return tb_array(tb_type(id), 2, 4, b, 0, NULL);
}

static void test_views(void) {
  CHECK_ROWS(make_view(QV_STRING_VIEW), "\"short\",\"0123456789abcdefghij\"");
  CHECK_ROWS(make_view(QV_BINARY_VIEW), "\"c2hvcnQ=\",\"MDEyMzQ1Njc4OWFiY2RlZmdoaWo=\"");
}

static qv_array *int32s(int64_t n, const int32_t *v, const char *valid) {
  return tb_prim(tb_type(QV_INT32), n, valid, v, n * 4);
}

static void test_lists(void) {
  int32_t items[] = {1, 2, 3, 4, 5};
  int32_t offs[] = {0, 2, 2, 2, 5};
  qv_array *child = int32s(5, items, "11011");
  qv_buffer *b[2] = {tb_bits("1011"), tb_buf(offs, sizeof offs)};
  qv_array *list = tb_array(qv_type_list_of(QV_LIST, tb_type(QV_INT32)), 4, 2, b, 1, &child);
  qv_array *sl = NULL;
  QV_REQUIRE(qv_array_slice(list, 1, 3, &sl, NULL) == QV_OK);
  CHECK_ROWS(list, "[1,2],null,[],[null,4,5]");
  CHECK_ROWS(sl, "null,[],[null,4,5]");

  int64_t loffs[] = {1, 3};
  child = int32s(5, items, NULL);
  qv_buffer *lb[2] = {NULL, tb_buf(loffs, 16)};
  CHECK_ROWS(tb_array(qv_type_list_of(QV_LARGE_LIST, tb_type(QV_INT32)), 1, 2, lb, 1, &child),
             "[2,3]");

  /* list view: out-of-order and overlapping views */
  int32_t vo[] = {3, 0, 1}, vs[] = {2, 1, 0};
  child = int32s(5, items, NULL);
  qv_buffer *vb[3] = {NULL, tb_buf(vo, 12), tb_buf(vs, 12)};
  CHECK_ROWS(tb_array(qv_type_list_of(QV_LIST_VIEW, tb_type(QV_INT32)), 3, 3, vb, 1, &child),
             "[4,5],[1],[]");
  int64_t lvo[] = {4}, lvs[] = {1};
  child = int32s(5, items, NULL);
  qv_buffer *lvb[3] = {NULL, tb_buf(lvo, 8), tb_buf(lvs, 8)};
  CHECK_ROWS(tb_array(qv_type_list_of(QV_LARGE_LIST_VIEW, tb_type(QV_INT32)), 1, 3, lvb, 1, &child),
             "[5]");

  /* fixed size list<int16>[2], sliced: offset scales into the child */
  int16_t fv[] = {1, 2, 3, 4, 5, 6};
  qv_array *fc = tb_prim(tb_type(QV_INT16), 6, NULL, fv, 12);
  qv_type *ft = qv_type_list_of(QV_FIXED_SIZE_LIST, tb_type(QV_INT16));
  ft->list_size = 2;
  qv_buffer *fb[1] = {tb_bits("101")};
  qv_array *fsl = tb_array(ft, 3, 1, fb, 1, &fc);
  QV_REQUIRE(qv_array_slice(fsl, 1, 2, &sl, NULL) == QV_OK);
  CHECK_ROWS(fsl, "[1,2],null,[5,6]");
  CHECK_ROWS(sl, "null,[5,6]");

  /* corrupt offsets are an error, not a crash */
  int32_t bad[] = {0, 9};
  child = int32s(5, items, NULL);
  qv_buffer *bb[2] = {NULL, tb_buf(bad, 8)};
  qv_array *badl = tb_array(qv_type_list_of(QV_LIST, tb_type(QV_INT32)), 1, 2, bb, 1, &child);
  qv_strbuf sb = {0};
  qv_error err;
  QV_CHECK_EQ_INT(qv_format_value_json(badl, 0, &sb, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "list array: element 0 spans child range [0, 9) but the "
                  "child has 5 elements");
  QV_CHECK_EQ_INT(qv_format_value_json(badl, 1, &sb, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message, "row 1 is outside [0, 1)");
  qv_strbuf_reset(&sb);
  qv_array_unref(badl);
}

static void test_struct_map(void) {
  int32_t a[] = {1, 2, 3};
  const char *s[] = {"x", NULL, "z"};
  qv_array *kids[2] = {int32s(3, a, NULL), tb_str(QV_STRING, 3, s, NULL)};
  qv_type *st =
      tb_child(tb_child(tb_type(QV_STRUCT), "a", tb_type(QV_INT32)), "b \"q\"", tb_type(QV_STRING));
  qv_buffer *b[1] = {tb_bits("101")};
  qv_array *sa = tb_array(st, 3, 1, b, 2, kids);
  qv_array *sl = NULL;
  QV_REQUIRE(qv_array_slice(sa, 1, 2, &sl, NULL) == QV_OK);
  CHECK_ROWS(sa, "{\"a\":1,\"b \\\"q\\\"\":\"x\"},null,{\"a\":3,\"b \\\"q\\\"\":\"z\"}");
  CHECK_ROWS(sl, "null,{\"a\":3,\"b \\\"q\\\"\":\"z\"}");

  /* map<string, int32>: [{"k1":1,"k2":null}, null, {}] */
  const char *keys[] = {"k1", "k2"};
  int32_t vals[] = {1, 0};
  qv_array *ek[2] = {tb_str(QV_STRING, 2, keys, NULL), int32s(2, vals, "10")};
  qv_type *et =
      tb_child(tb_child(tb_type(QV_STRUCT), "key", tb_type(QV_STRING)), "value", tb_type(QV_INT32));
  qv_array *entries = tb_array(et, 2, 1, (qv_buffer *[]){NULL}, 2, ek);
  qv_type *mt = tb_child(tb_type(QV_MAP), "entries", qv_type_ref(entries->type));
  int32_t mo[] = {0, 2, 2, 2};
  qv_buffer *mb[2] = {tb_bits("101"), tb_buf(mo, 16)};
  CHECK_ROWS(tb_array(mt, 3, 2, mb, 1, &entries),
             "[{\"key\":\"k1\",\"value\":1},{\"key\":\"k2\",\"value\":null}],null,[]");
}

static void test_unions(void) {
  /* sparse union<i: int32 (code 5), s: string (code 7)> */
  int32_t iv[] = {10, 11, 12};
  const char *sv[] = {"a", "b", NULL};
  qv_array *kids[2] = {int32s(3, iv, NULL), tb_str(QV_STRING, 3, sv, NULL)};
  qv_type *ut =
      tb_child(tb_child(tb_type(QV_SPARSE_UNION), "i", tb_type(QV_INT32)), "s", tb_type(QV_STRING));
  ut->type_codes = malloc(2 * sizeof(int32_t));
  ut->type_codes[0] = 5;
  ut->type_codes[1] = 7;
  int8_t ids[] = {5, 7, 7};
  qv_buffer *b[1] = {tb_buf(ids, 3)};
  qv_array *u = tb_array(ut, 3, 1, b, 2, kids);
  qv_array *sl = NULL;
  QV_REQUIRE(qv_array_slice(u, 1, 2, &sl, NULL) == QV_OK);
  CHECK_ROWS(u, "10,\"b\",null");
  CHECK_ROWS(sl, "\"b\",null");

  /* dense union */
  int32_t dv[] = {42};
  const char *ds[] = {"p", "q"};
  qv_array *dk[2] = {int32s(1, dv, NULL), tb_str(QV_STRING, 2, ds, NULL)};
  qv_type *dt =
      tb_child(tb_child(tb_type(QV_DENSE_UNION), "i", tb_type(QV_INT32)), "s", tb_type(QV_STRING));
  int8_t dids[] = {1, 0, 1};
  int32_t doffs[] = {1, 0, 0};
  qv_buffer *db[2] = {tb_buf(dids, 3), tb_buf(doffs, 12)};
  CHECK_ROWS(tb_array(dt, 3, 2, db, 2, dk), "\"q\",42,\"p\"");
}

static void test_dictionary_ree(void) {
  const char *dv[] = {"red", "green", NULL};
  qv_array *dict = tb_str(QV_STRING, 3, dv, NULL);
  qv_type *t = tb_type(QV_DICTIONARY);
  t->index_type = tb_type(QV_INT8);
  t->value_type = tb_type(QV_STRING);
  int8_t idx[] = {1, 0, 0, 2};
  qv_array *a = tb_prim(t, 4, "1101", idx, 4);
  a->dictionary = dict;
  CHECK_ROWS(a, "\"green\",\"red\",null,null");

  /* run-end encoded<int32, string>: runs end at 2, 3, 6 */
  int32_t ends[] = {2, 3, 6};
  const char *vals[] = {"a", NULL, "c"};
  qv_array *kids[2] = {int32s(3, ends, NULL), tb_str(QV_STRING, 3, vals, NULL)};
  qv_type *rt = tb_child(tb_child(tb_type(QV_RUN_END_ENCODED), "run_ends", tb_type(QV_INT32)),
                         "values", tb_type(QV_STRING));
  qv_array *ree = tb_array(rt, 6, 0, NULL, 2, kids);
  qv_array *sl = NULL;
  QV_REQUIRE(qv_array_slice(ree, 1, 4, &sl, NULL) == QV_OK);
  CHECK_ROWS(ree, "\"a\",\"a\",null,\"c\",\"c\",\"c\"");
  CHECK_ROWS(sl, "\"a\",null,\"c\",\"c\"");
}

static void test_rows(void) {
  int64_t ids[] = {1, 2, 3};
  const char *names[] = {"ann", NULL, "cy"};
  double score[] = {0.5, 1.0, NAN};
  qv_array *cols[3] = {tb_prim(tb_type(QV_INT64), 3, NULL, ids, 24),
                       tb_str(QV_STRING, 3, names, NULL),
                       tb_prim(tb_type(QV_DOUBLE), 3, NULL, score, 24)};
  qv_type *st = tb_child(
      tb_child(tb_child(tb_type(QV_STRUCT), "id", tb_type(QV_INT64)), "name", tb_type(QV_STRING)),
      "score", tb_type(QV_DOUBLE));
  qv_array *batch = tb_array(st, 3, 1, (qv_buffer *[]){NULL}, 3, cols);
  qv_strbuf sb = {0};
  qv_error err;
  QV_CHECK_EQ_INT(qv_format_row_json(batch, 1, &sb, &err), QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), "{\"id\":2,\"name\":null,\"score\":1.0}");
  qv_strbuf_clear(&sb);
  qv_array *sl = NULL;
  QV_REQUIRE(qv_array_slice(batch, 2, 1, &sl, NULL) == QV_OK);
  QV_CHECK_EQ_INT(qv_format_row_json(sl, 0, &sb, &err), QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), "{\"id\":3,\"name\":\"cy\",\"score\":\"NaN\"}");
  QV_CHECK_EQ_INT(qv_format_row_json(sl, 1, &sb, &err), QV_ERANGE);
  QV_CHECK_EQ_INT(qv_format_row_json(cols[0], 0, &sb, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message,
                  "qv_format_row_json: expected a struct (record "
                  "batch) array, found int64");
  qv_strbuf_reset(&sb);
  qv_array_unref(sl);
  qv_array_unref(batch);
}

int main(void) {
  QV_RUN(test_strbuf);
  QV_RUN(test_null_bool_ints);
  QV_RUN(test_floats);
  QV_RUN(test_floats_brute_force);
  QV_RUN(test_decimals);
  QV_RUN(test_dates);
  QV_RUN(test_timestamps);
  QV_RUN(test_times_durations_intervals);
  QV_RUN(test_strings_binary);
  QV_RUN(test_views);
  QV_RUN(test_lists);
  QV_RUN(test_struct_map);
  QV_RUN(test_unions);
  QV_RUN(test_dictionary_ree);
  QV_RUN(test_rows);
  return QV_TEST_END();
}
