/* test_json.c — the Arrow integration JSON format (src/ipc/json.c) and
 * logical comparison (src/core/compare.c): every golden .json.gz of
 * arrow-testing read, checked against an independent jansson walk,
 * written back and compared; hand-checked values per type family; exact
 * first-difference texts; exact error texts for malformed files. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "quiver/array.h"
#include "quiver/integration.h"
#include "qv_test.h"

/* ------------------------------------------------------------------------ */
/* helpers                                                                   */

/* JSON written with ' for " (readability in C source). */
static char *J(const char *s) {
  char *d = strdup(s);
  for (char *p = d; *p; p++)
    if (*p == '\'') *p = '"';
  return d;
}

static qv_status read_text(const char *json_sq, qv_json_data *out, qv_error *err) {
  char *t = J(json_sq);
  memset(out, 0, sizeof *out);
  qv_status st = qv_json_read_bytes(t, (int64_t)strlen(t), NULL, out, err);
  free(t);
  return st;
}

/* Expect a read to fail with exactly `msg`. */
static void expect_error(const char *json_sq, qv_status st, const char *msg, int line) {
  qv_json_data d;
  qv_error err;
  err.message[0] = '\0';
  qv_status got = read_text(json_sq, &d, &err);
  if (got != st || strcmp(err.message, msg) != 0) {
    fprintf(stderr, "%s:%d: expected status %d '%s'\n   got status %d '%s'\n", __FILE__, line,
            (int)st, msg, (int)got, err.message);
    qv_test_failed_checks_++;
  }
  if (got == QV_OK) qv_json_data_reset(&d);
}
#define EXPECT_ERROR(json, st, msg) expect_error(json, st, msg, __LINE__)

/* Write, read back, compare everything. */
static bool roundtrip_equal(const qv_json_data *d, qv_error *err) {
  qv_buffer *text = NULL;
  if (qv_json_write_buffer(d->schema, d->batches, d->n_batches, &text, err) != QV_OK) return false;
  qv_json_data back;
  memset(&back, 0, sizeof back);
  qv_status st = qv_json_read_bytes(text->data, text->size, NULL, &back, err);
  qv_buffer_unref(text);
  if (st != QV_OK) return false;
  bool ok = qv_schema_diff(d->schema, back.schema, err) && back.n_batches == d->n_batches;
  for (int64_t b = 0; ok && b < d->n_batches; b++)
    ok = qv_array_equals(d->batches[b], back.batches[b], err);
  qv_json_data_reset(&back);
  return ok;
}

static const qv_array *col(const qv_json_data *d, int64_t batch, int32_t c) {
  return d->batches[batch]->children[c];
}

static json_t *load_gz_independently(const char *path) {
  gzFile f = gzopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  int n;
  while ((n = gzread(f, buf + len, (unsigned)(cap - len))) > 0) {
    len += (size_t)n;
    if (len == cap) buf = realloc(buf, cap *= 2);
  }
  gzclose(f);
  json_t *root = json_loadb(buf, len, 0, NULL);
  free(buf);
  return root;
}

/* ------------------------------------------------------------------------ */
/* golden files                                                              */

static int n_golden;

static void check_golden(const char *path) {
  qv_json_data d;
  qv_error err;
  memset(&d, 0, sizeof d);
  qv_status st = qv_json_read(path, NULL, &d, &err);
  if (st != QV_OK) {
    fprintf(stderr, "%s: %s\n", path, err.message);
    qv_test_failed_checks_++;
    return;
  }
  n_golden++;
  /* Independent oracle: the raw JSON tree walked with jansson here. */
  json_t *root = load_gz_independently(path);
  QV_REQUIRE(root != NULL);
  json_t *fields = json_object_get(json_object_get(root, "schema"), "fields");
  json_t *batches = json_object_get(root, "batches");
  QV_CHECK_EQ_INT(qv_schema_num_fields(d.schema), json_array_size(fields));
  for (int32_t k = 0; k < qv_schema_num_fields(d.schema) && k < (int32_t)json_array_size(fields);
       k++) {
    json_t *f = json_array_get(fields, (size_t)k);
    QV_CHECK_EQ_STR(qv_schema_field(d.schema, k)->name,
                    json_string_value(json_object_get(f, "name")));
    QV_CHECK_EQ_INT(qv_schema_field(d.schema, k)->nullable,
                    json_is_true(json_object_get(f, "nullable")));
    QV_CHECK_EQ_INT(qv_schema_field(d.schema, k)->type->id == QV_DICTIONARY,
                    json_object_get(f, "dictionary") != NULL);
  }
  QV_CHECK_EQ_INT(d.n_batches, json_array_size(batches));
  for (int64_t b = 0; b < d.n_batches && b < (int64_t)json_array_size(batches); b++) {
    json_t *jb = json_array_get(batches, (size_t)b);
    QV_CHECK_EQ_INT(d.batches[b]->length, json_integer_value(json_object_get(jb, "count")));
    QV_CHECK_EQ_INT(d.batches[b]->n_children, json_array_size(json_object_get(jb, "columns")));
  }
  json_t *dicts = json_object_get(root, "dictionaries");
  QV_CHECK_EQ_INT(d.n_dictionaries, dicts ? json_array_size(dicts) : 0);
  json_decref(root);
  /* The JSON equals itself, and survives write + read. */
  for (int64_t b = 0; b < d.n_batches; b++)
    QV_CHECK(qv_array_equals(d.batches[b], d.batches[b], &err));
  if (!roundtrip_equal(&d, &err)) {
    fprintf(stderr, "%s: round trip: %s\n", path, err.message);
    qv_test_failed_checks_++;
  }
  qv_json_data_reset(&d);
}

static void test_golden_files(void) {
  const char *shared = getenv("QV_SHARED");
  QV_REQUIRE(shared != NULL);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/testdata/arrow-testing/data/arrow-ipc-stream/integration", shared);
  DIR *top = opendir(dir);
  QV_REQUIRE(top != NULL);
  struct dirent *producer;
  int producers = 0;
  while ((producer = readdir(top)) != NULL) {
    if (producer->d_name[0] == '.') continue;
    char sub[1536];
    snprintf(sub, sizeof sub, "%s/%s", dir, producer->d_name);
    DIR *pd = opendir(sub);
    if (pd == NULL) continue;
    producers++;
    struct dirent *f;
    while ((f = readdir(pd)) != NULL) {
      size_t n = strlen(f->d_name);
      if (strncmp(f->d_name, "generated_", 10) != 0 || n < 8 ||
          strcmp(f->d_name + n - 8, ".json.gz") != 0)
        continue;
      char path[2048];
      snprintf(path, sizeof path, "%s/%s", sub, f->d_name);
      check_golden(path);
    }
    closedir(pd);
  }
  closedir(top);
  QV_CHECK(producers >= 6);
  QV_CHECK(n_golden >= 62); /* 8 + 15 + 15 + 3 + 1 + 20 in arrow-testing today */
}

/* A few values of the golden files checked against their JSON text. */
static void test_golden_values(void) {
  const char *shared = getenv("QV_SHARED");
  QV_REQUIRE(shared != NULL);
  char path[1024];
  qv_json_data d;
  qv_error err;
  snprintf(path, sizeof path,
           "%s/testdata/arrow-testing/data/arrow-ipc-stream/integration/cpp-21.0.0/"
           "generated_primitive.json.gz",
           shared);
  QV_REQUIRE(qv_json_read(path, NULL, &d, &err) == QV_OK);
  /* batch 0: int8_nullable DATA[0..1] = -128, 127; bool_nullable VALIDITY
   * [0, 0, 1, ...] DATA [false, true, true, ...]; float32 641.818 */
  const qv_array *i8 = col(&d, 0, 2);
  QV_CHECK_EQ_INT((int8_t)i8->buffers[1]->data[0], -128);
  QV_CHECK_EQ_INT((int8_t)i8->buffers[1]->data[1], 127);
  const qv_array *b = col(&d, 0, 0);
  QV_CHECK(!qv_bit_get(b->buffers[0]->data, 0) && qv_bit_get(b->buffers[0]->data, 2));
  QV_CHECK(qv_bit_get(b->buffers[1]->data, 2));
  const qv_array *i64 = col(&d, 0, 9); /* int64_nonnullable: '-2147483648', '2147483647' */
  int64_t v[2];
  memcpy(v, i64->buffers[1]->data, 16);
  QV_CHECK_EQ_INT(v[0], -2147483648LL);
  QV_CHECK_EQ_INT(v[1], 2147483647LL);
  QV_CHECK(i64->buffers[0] == NULL); /* all valid -> no bitmap */
  float f;
  memcpy(&f, col(&d, 0, 18)->buffers[1]->data, 4); /* float32_nullable[0] */
  QV_CHECK(f == (float)641.818);
  qv_json_data_reset(&d);

  /* decimal: first value of batch 0 column f0 (precision 3, scale 2) */
  snprintf(path, sizeof path,
           "%s/testdata/arrow-testing/data/arrow-ipc-stream/integration/cpp-21.0.0/"
           "generated_decimal.json.gz",
           shared);
  QV_REQUIRE(qv_json_read(path, NULL, &d, &err) == QV_OK);
  json_t *root = load_gz_independently(path);
  json_t *c0 = json_array_get(
      json_object_get(json_array_get(json_object_get(root, "batches"), 0), "columns"), 0);
  size_t first = 0; /* first valid slot (null slots read as zero) */
  while (json_integer_value(json_array_get(json_object_get(c0, "VALIDITY"), first)) == 0) first++;
  const char *s0 = json_string_value(json_array_get(json_object_get(c0, "DATA"), first));
  long long want = strtoll(s0, NULL, 10);
  int64_t lo;
  memcpy(&lo, col(&d, 0, 0)->buffers[1]->data + 16 * first, 8);
  QV_CHECK(want != 0);
  QV_CHECK_EQ_INT(lo, want);
  QV_CHECK_EQ_INT(col(&d, 0, 0)->buffers[1]->data[16 * first + 15], want < 0 ? 0xff : 0);
  json_decref(root);
  qv_json_data_reset(&d);
}

/* ------------------------------------------------------------------------ */
/* hand-checked values per type family                                       */

static const char *kHead = "{'schema': {'fields': [";

static void test_integers_and_floats(void) {
  qv_json_data d;
  qv_error err;
  const char *j =
      "{'schema': {'fields': ["
      "{'name': 'i64', 'nullable': true, 'type': {'name': 'int', 'isSigned': true, 'bitWidth': "
      "64}, 'children': []},"
      "{'name': 'u64', 'nullable': false, 'type': {'name': 'int', 'isSigned': false, 'bitWidth': "
      "64}, 'children': []},"
      "{'name': 'h', 'nullable': true, 'type': {'name': 'floatingpoint', 'precision': 'HALF'}, "
      "'children': []},"
      "{'name': 'd', 'nullable': true, 'type': {'name': 'floatingpoint', 'precision': 'DOUBLE'}, "
      "'children': []},"
      "{'name': 'u8', 'nullable': true, 'type': {'name': 'int', 'isSigned': false, 'bitWidth': 8}, "
      "'children': []}"
      "]}, 'batches': [{'count': 3, 'columns': ["
      "{'name': 'i64', 'count': 3, 'VALIDITY': [1, 1, 0], 'DATA': ['-9223372036854775808', "
      "'9223372036854775807', 'junk']},"
      "{'name': 'u64', 'count': 3, 'VALIDITY': [1, 1, 1], 'DATA': ['18446744073709551615', '0', "
      "5]},"
      "{'name': 'h', 'count': 3, 'VALIDITY': [1, 1, 1], 'DATA': [0.1, -2.5, 65504]},"
      "{'name': 'd', 'count': 3, 'VALIDITY': [1, 1, 1], 'DATA': ['NaN', '-Infinity', -0.0]},"
      "{'name': 'u8', 'count': 3, 'VALIDITY': [1, 0, 1], 'DATA': [255, 'ignored in a null slot', "
      "0]}"
      "]}]}";
  QV_REQUIRE(read_text(j, &d, &err) == QV_OK);
  int64_t i[3];
  memcpy(i, col(&d, 0, 0)->buffers[1]->data, 24);
  QV_CHECK(i[0] == INT64_MIN && i[1] == INT64_MAX && i[2] == 0);
  QV_CHECK_EQ_INT(col(&d, 0, 0)->null_count, 1);
  uint64_t u[3];
  memcpy(u, col(&d, 0, 1)->buffers[1]->data, 24);
  QV_CHECK(u[0] == UINT64_MAX && u[1] == 0 && u[2] == 5);
  uint16_t h[3];
  memcpy(h, col(&d, 0, 2)->buffers[1]->data, 6);
  QV_CHECK_EQ_INT(h[0], 0x2e66); /* numpy: float16(0.1) bits 11878 */
  QV_CHECK_EQ_INT(h[1], 0xc100);
  QV_CHECK_EQ_INT(h[2], 0x7bff);
  double dd[3];
  memcpy(dd, col(&d, 0, 3)->buffers[1]->data, 24);
  QV_CHECK(isnan(dd[0]) && isinf(dd[1]) && dd[1] < 0 && dd[2] == 0 && signbit(dd[2]));
  QV_CHECK_EQ_INT(col(&d, 0, 4)->buffers[1]->data[0], 255);
  if (!roundtrip_equal(&d, &err)) {
    fprintf(stderr, "round trip: %s\n", err.message);
    qv_test_failed_checks_++;
  }
  qv_json_data_reset(&d);
}

static void test_decimals(void) {
  qv_json_data d;
  qv_error err;
  const char *j =
      "{'schema': {'fields': ["
      "{'name': 'd32', 'nullable': true, 'type': {'name': 'decimal', 'precision': 9, 'scale': 2, "
      "'bitWidth': 32}, 'children': []},"
      "{'name': 'd64', 'nullable': true, 'type': {'name': 'decimal', 'precision': 18, 'scale': 2, "
      "'bitWidth': 64}, 'children': []},"
      "{'name': 'd128', 'nullable': true, 'type': {'name': 'decimal', 'precision': 38, 'scale': "
      "2}, 'children': []},"
      "{'name': 'd256', 'nullable': true, 'type': {'name': 'decimal', 'precision': 76, 'scale': 5, "
      "'bitWidth': 256}, 'children': []}"
      "]}, 'batches': [{'count': 2, 'columns': ["
      "{'name': 'd32', 'count': 2, 'VALIDITY': [1, 1], 'DATA': ['2147483647', '-1']},"
      "{'name': 'd64', 'count': 2, 'VALIDITY': [1, 1], 'DATA': ['-12345', '0']},"
      "{'name': 'd128', 'count': 2, 'VALIDITY': [1, 1], 'DATA': ['123456789012345678901234567890', "
      "'-170141183460469231731687303715884105728']},"
      "{'name': 'd256', 'count': 2, 'VALIDITY': [1, 1], 'DATA': "
      "['-98765432109876543210987654321098765432109876543210', '1']}"
      "]}]}";
  QV_REQUIRE(read_text(j, &d, &err) == QV_OK);
  /* Expected bytes from Python: int.to_bytes(n, 'little', signed=True). */
  static const uint8_t d32[8] = {0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff};
  static const uint8_t d64[8] = {0xc7, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  static const uint8_t d128a[16] = {0xd2, 0x0a, 0x3f, 0x4e, 0xee, 0xe0, 0x73, 0xc3,
                                    0xf6, 0x0f, 0xe9, 0x8e, 0x01, 0x00, 0x00, 0x00};
  static const uint8_t d128b[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80};
  static const uint8_t d256[32] = {0x16, 0x81, 0x39, 0xae, 0x28, 0x98, 0x49, 0x30, 0xa8, 0xd6, 0x31,
                                   0xf7, 0xd6, 0x17, 0x7f, 0xcb, 0x5d, 0xda, 0x04, 0x6c, 0xbc, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  QV_CHECK(memcmp(col(&d, 0, 0)->buffers[1]->data, d32, 8) == 0);
  QV_CHECK(memcmp(col(&d, 0, 1)->buffers[1]->data, d64, 8) == 0);
  QV_CHECK(memcmp(col(&d, 0, 2)->buffers[1]->data, d128a, 16) == 0);
  QV_CHECK(memcmp(col(&d, 0, 2)->buffers[1]->data + 16, d128b, 16) == 0);
  QV_CHECK(memcmp(col(&d, 0, 3)->buffers[1]->data, d256, 32) == 0);
  QV_CHECK_EQ_INT(col(&d, 0, 2)->type->id, QV_DECIMAL128);
  QV_CHECK(roundtrip_equal(&d, &err));
  /* Rendering in a diff uses the scale. */
  qv_json_data e;
  const char *j2 =
      "{'schema': {'fields': ["
      "{'name': 'd32', 'nullable': true, 'type': {'name': 'decimal', 'precision': 9, 'scale': 2, "
      "'bitWidth': 32}, 'children': []},"
      "{'name': 'd64', 'nullable': true, 'type': {'name': 'decimal', 'precision': 18, 'scale': 2, "
      "'bitWidth': 64}, 'children': []},"
      "{'name': 'd128', 'nullable': true, 'type': {'name': 'decimal', 'precision': 38, 'scale': "
      "2}, 'children': []},"
      "{'name': 'd256', 'nullable': true, 'type': {'name': 'decimal', 'precision': 76, 'scale': 5, "
      "'bitWidth': 256}, 'children': []}"
      "]}, 'batches': [{'count': 2, 'columns': ["
      "{'name': 'd32', 'count': 2, 'VALIDITY': [1, 1], 'DATA': ['2147483647', '-1']},"
      "{'name': 'd64', 'count': 2, 'VALIDITY': [1, 1], 'DATA': ['-12345', '0']},"
      "{'name': 'd128', 'count': 2, 'VALIDITY': [1, 1], 'DATA': ['123456789012345678901234567890', "
      "'-170141183460469231731687303715884105728']},"
      "{'name': 'd256', 'count': 2, 'VALIDITY': [1, 1], 'DATA': "
      "['-98765432109876543210987654321098765432109876543210', '2']}"
      "]}]}";
  QV_REQUIRE(read_text(j2, &e, &err) == QV_OK);
  QV_CHECK(!qv_array_equals(d.batches[0], e.batches[0], &err));
  QV_CHECK_EQ_STR(err.message, "row 1, field 'd256': expected 0.00001, found 0.00002");
  QV_CHECK(!qv_array_equals(col(&d, 0, 1), col(&e, 0, 0), &err));
  QV_CHECK_EQ_STR(err.message, "type: expected decimal64(18, 2), found decimal32(9, 2)");
  qv_json_data_reset(&e);
  qv_json_data_reset(&d);
}

static void test_temporal_and_intervals(void) {
  qv_json_data d;
  qv_error err;
  const char *j =
      "{'schema': {'fields': ["
      "{'name': 'ts', 'nullable': true, 'type': {'name': 'timestamp', 'unit': 'NANOSECOND', "
      "'timezone': 'UTC'}, 'children': []},"
      "{'name': 't32', 'nullable': true, 'type': {'name': 'time', 'unit': 'MILLISECOND', "
      "'bitWidth': 32}, 'children': []},"
      "{'name': 'dt', 'nullable': true, 'type': {'name': 'interval', 'unit': 'DAY_TIME'}, "
      "'children': []},"
      "{'name': 'mdn', 'nullable': true, 'type': {'name': 'interval', 'unit': 'MONTH_DAY_NANO'}, "
      "'children': []},"
      "{'name': 'dur', 'nullable': true, 'type': {'name': 'duration', 'unit': 'SECOND'}, "
      "'children': []}"
      "]}, 'batches': [{'count': 1, 'columns': ["
      "{'name': 'ts', 'count': 1, 'VALIDITY': [1], 'DATA': ['-1']},"
      "{'name': 't32', 'count': 1, 'VALIDITY': [1], 'DATA': [86399999]},"
      "{'name': 'dt', 'count': 1, 'VALIDITY': [1], 'DATA': [{'days': -5, 'milliseconds': 1000}]},"
      "{'name': 'mdn', 'count': 1, 'VALIDITY': [1], 'DATA': [{'months': 1, 'days': -2, "
      "'nanoseconds': 8820212087008106548}]},"
      "{'name': 'dur', 'count': 1, 'VALIDITY': [0], 'DATA': ['0']}"
      "]}]}";
  QV_REQUIRE(read_text(j, &d, &err) == QV_OK);
  QV_CHECK_EQ_STR(col(&d, 0, 0)->type->timezone, "UTC");
  QV_CHECK_EQ_INT(col(&d, 0, 0)->type->unit, QV_NANO);
  QV_CHECK_EQ_INT(col(&d, 0, 1)->type->id, QV_TIME32);
  int32_t dt[2];
  memcpy(dt, col(&d, 0, 2)->buffers[1]->data, 8);
  QV_CHECK(dt[0] == -5 && dt[1] == 1000);
  int32_t md[2];
  int64_t ns;
  memcpy(md, col(&d, 0, 3)->buffers[1]->data, 8);
  memcpy(&ns, col(&d, 0, 3)->buffers[1]->data + 8, 8);
  QV_CHECK(md[0] == 1 && md[1] == -2 && ns == 8820212087008106548LL);
  QV_CHECK(roundtrip_equal(&d, &err));
  qv_json_data_reset(&d);
}

static void test_binary_and_views(void) {
  qv_json_data d;
  qv_error err;
  const char *j =
      "{'schema': {'fields': ["
      "{'name': 'b', 'nullable': true, 'type': {'name': 'binary'}, 'children': []},"
      "{'name': 'ls', 'nullable': true, 'type': {'name': 'largeutf8'}, 'children': []},"
      "{'name': 'sv', 'nullable': true, 'type': {'name': 'utf8view'}, 'children': []},"
      "{'name': 'fsb', 'nullable': true, 'type': {'name': 'fixedsizebinary', 'byteWidth': 3}, "
      "'children': []}"
      "]}, 'batches': [{'count': 3, 'columns': ["
      "{'name': 'b', 'count': 3, 'VALIDITY': [1, 0, 1], 'OFFSET': [0, 2, 2, 5], 'DATA': ['00ff', "
      "'', 'AbCdEf']},"
      "{'name': 'ls', 'count': 3, 'VALIDITY': [1, 1, 1], 'OFFSET': ['0', '3', '3', '5'], 'DATA': "
      "['h\\u00e9', '', 'xy']},"
      "{'name': 'sv', 'count': 3, 'VALIDITY': [1, 1, 0], 'VIEWS': ["
      "  {'SIZE': 5, 'INLINED': 'short'},"
      "  {'SIZE': 16, 'PREFIX_HEX': '6C6F6E67', 'BUFFER_INDEX': 1, 'OFFSET': 2},"
      "  {'SIZE': 0, 'INLINED': ''}],"
      " 'VARIADIC_DATA_BUFFERS': ['616263', '78796C6F6E6720737472696E67207669657721']},"
      "{'name': 'fsb', 'count': 3, 'VALIDITY': [1, 1, 0], 'DATA': ['010203', 'FFFEFD', '']}"
      "]}]}";
  QV_REQUIRE(read_text(j, &d, &err) == QV_OK);
  const qv_array *b = col(&d, 0, 0);
  QV_CHECK_EQ_INT(b->buffers[2]->size, 5);
  QV_CHECK(memcmp(b->buffers[2]->data, "\x00\xff\xab\xcd\xef", 5) == 0);
  const qv_array *ls = col(&d, 0, 1);
  int64_t off[4];
  memcpy(off, ls->buffers[1]->data, 32);
  QV_CHECK(off[0] == 0 && off[1] == 3 && off[3] == 5);
  QV_CHECK(memcmp(ls->buffers[2]->data, "h\xc3\xa9xy", 5) == 0);
  /* The view of 16 bytes points into variadic buffer 1 at offset 2. */
  const qv_array *sv = col(&d, 0, 2);
  QV_CHECK_EQ_INT(sv->n_buffers, 4);
  const uint8_t *v0 = sv->buffers[1]->data, *v1 = v0 + 16;
  int32_t size, bi, o;
  memcpy(&size, v0, 4);
  QV_CHECK(size == 5 && memcmp(v0 + 4, "short\0\0\0\0\0\0\0", 12) == 0);
  memcpy(&size, v1, 4);
  memcpy(&bi, v1 + 8, 4);
  memcpy(&o, v1 + 12, 4);
  QV_CHECK(size == 16 && memcmp(v1 + 4, "long", 4) == 0 && bi == 1 && o == 2);
  QV_CHECK(memcmp(sv->buffers[3]->data + o, "long string view", 16) == 0);
  const qv_array *fsb = col(&d, 0, 3);
  QV_CHECK(memcmp(fsb->buffers[1]->data, "\x01\x02\x03\xff\xfe\xfd\x00\x00\x00", 9) == 0);
  QV_CHECK(roundtrip_equal(&d, &err));

  /* The same strings laid out differently in the view buffers compare
   * equal (views compare by the bytes they denote). */
  qv_json_data e;
  const char *j2 =
      "{'schema': {'fields': [{'name': 'sv', 'nullable': true, 'type': {'name': 'utf8view'}, "
      "'children': []}]},"
      " 'batches': [{'count': 3, 'columns': ["
      "{'name': 'sv', 'count': 3, 'VALIDITY': [1, 1, 0], 'VIEWS': ["
      "  {'SIZE': 5, 'INLINED': 'short'},"
      "  {'SIZE': 16, 'PREFIX_HEX': '6C6F6E67', 'BUFFER_INDEX': 0, 'OFFSET': 0},"
      "  {'SIZE': 0, 'INLINED': ''}],"
      " 'VARIADIC_DATA_BUFFERS': ['6C6F6E6720737472696E672076696577']}]}]}";
  QV_REQUIRE(read_text(j2, &e, &err) == QV_OK);
  QV_CHECK(qv_array_equals(sv, col(&e, 0, 0), &err));
  qv_json_data_reset(&e);
  qv_json_data_reset(&d);
}

static const char *kNested =
    "{'schema': {'fields': ["
    "{'name': 'a', 'nullable': true, 'type': {'name': 'int', 'isSigned': true, 'bitWidth': 32}, "
    "'children': []},"
    "{'name': 's', 'nullable': true, 'type': {'name': 'struct'}, 'children': ["
    "  {'name': 'x', 'nullable': true, 'type': {'name': 'utf8'}, 'children': []},"
    "  {'name': 'l', 'nullable': true, 'type': {'name': 'list'}, 'children': ["
    "    {'name': 'item', 'nullable': true, 'type': {'name': 'int', 'isSigned': true, 'bitWidth': "
    "64}, 'children': []}]}]},"
    "{'name': 'm', 'nullable': true, 'type': {'name': 'map', 'keysSorted': false}, 'children': ["
    "  {'name': 'entries', 'nullable': false, 'type': {'name': 'struct'}, 'children': ["
    "    {'name': 'key', 'nullable': false, 'type': {'name': 'utf8'}, 'children': []},"
    "    {'name': 'value', 'nullable': true, 'type': {'name': 'int', 'isSigned': true, 'bitWidth': "
    "8}, 'children': []}]}]},"
    "{'name': 'f', 'nullable': true, 'type': {'name': 'fixedsizelist', 'listSize': 2}, 'children': "
    "["
    "  {'name': 'item', 'nullable': true, 'type': {'name': 'floatingpoint', 'precision': SINGLEQ}, "
    "'children': []}]},"
    "{'name': 'lv', 'nullable': true, 'type': {'name': 'listview'}, 'children': ["
    "  {'name': 'item', 'nullable': true, 'type': {'name': 'int', 'isSigned': true, 'bitWidth': "
    "16}, 'children': []}]}"
    "], 'metadata': [{'key': 'k', 'value': 'v'}]},"
    " 'batches': [{'count': 3, 'columns': ["
    "{'name': 'a', 'count': 3, 'VALIDITY': [0, 1, 1], 'DATA': [1, 2, 3]},"
    "{'name': 's', 'count': 3, 'VALIDITY': [1, 1, 0], 'children': ["
    "  {'name': 'x', 'count': 3, 'VALIDITY': [1, 1, 1], 'OFFSET': [0, 1, 3, 3], 'DATA': ['a', "
    "'bc', '']},"
    "  {'name': 'l', 'count': 3, 'VALIDITY': [1, 1, 1], 'OFFSET': [0, 2, 4, 4], 'children': ["
    "    {'name': 'item', 'count': 4, 'VALIDITY': [1, 1, 1, 0], 'DATA': ['1', '2', 'LV', '4']}]}]},"
    "{'name': 'm', 'count': 3, 'VALIDITY': [1, 0, 1], 'OFFSET': [0, 2, 2, 3], 'children': ["
    "  {'name': 'entries', 'count': 3, 'VALIDITY': [1, 1, 1], 'children': ["
    "    {'name': 'key', 'count': 3, 'VALIDITY': [1, 1, 1], 'OFFSET': [0, 1, 2, 3], 'DATA': ['p', "
    "'q', 'r']},"
    "    {'name': 'value', 'count': 3, 'VALIDITY': [1, 0, 1], 'DATA': [7, 0, -7]}]}]},"
    "{'name': 'f', 'count': 3, 'VALIDITY': [1, 1, 1], 'children': ["
    "  {'name': 'item', 'count': 6, 'VALIDITY': [1, 1, 1, 1, 1, 1], 'DATA': [0.5, 1, 1.5, 2, 2.5, "
    "FV]}]},"
    "{'name': 'lv', 'count': 3, 'VALIDITY': [1, 1, 1], 'OFFSET': [2, 0, 1], 'SIZE': [2, 1, 0], "
    "'children': ["
    "  {'name': 'item', 'count': 4, 'VALIDITY': [1, 1, 1, 1], 'DATA': [10, 20, 30, 40]}]}"
    "]}]}";

/* kNested with placeholders substituted. */
static char *nested(const char *lv, const char *fv) {
  static char buf[8192];
  char tmp[8192];
  snprintf(tmp, sizeof tmp, "%s", kNested);
  const char *subs[3][2] = {{"SINGLEQ", "'SINGLE'"}, {"LV", lv}, {"FV", fv}};
  for (int k = 0; k < 3; k++) {
    char *p = strstr(tmp, subs[k][0]);
    if (!p) continue;
    size_t pre = (size_t)(p - tmp);
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)pre, tmp, subs[k][1], p + strlen(subs[k][0]));
    snprintf(tmp, sizeof tmp, "%s", buf);
  }
  snprintf(buf, sizeof buf, "%s", tmp);
  return buf;
}

static void test_nested_and_diffs(void) {
  qv_json_data d, e;
  qv_error err;
  QV_REQUIRE(read_text(nested("3", "3"), &d, &err) == QV_OK);
  QV_CHECK_EQ_INT(d.schema->metadata.n, 1);
  QV_CHECK(roundtrip_equal(&d, &err));
  const qv_array *lv = col(&d, 0, 4);
  QV_CHECK_EQ_INT(lv->n_buffers, 3);

  /* A changed list element deep inside a struct. */
  QV_REQUIRE(read_text(nested("6", "3"), &e, &err) == QV_OK);
  QV_CHECK(!qv_array_equals(d.batches[0], e.batches[0], &err));
  QV_CHECK_EQ_STR(err.message, "row 1, field 's.l[0]': expected 3, found 6");
  qv_json_data_reset(&e);

  /* Floats: exact; NaN equals NaN; -0.0 differs from 0.0. */
  QV_REQUIRE(read_text(nested("3", "3.25"), &e, &err) == QV_OK);
  QV_CHECK(!qv_array_equals(d.batches[0], e.batches[0], &err));
  QV_CHECK_EQ_STR(err.message, "row 2, field 'f[1]': expected 3, found 3.25");
  qv_json_data_reset(&e);
  qv_json_data dn, en;
  QV_REQUIRE(read_text(nested("3", "'NaN'"), &dn, &err) == QV_OK);
  QV_REQUIRE(read_text(nested("3", "'NaN'"), &en, &err) == QV_OK);
  QV_CHECK(qv_array_equals(dn.batches[0], en.batches[0], &err));
  QV_CHECK(roundtrip_equal(&dn, &err));
  qv_json_data_reset(&dn);
  qv_json_data_reset(&en);
  QV_REQUIRE(read_text(nested("3", "0.0"), &dn, &err) == QV_OK);
  QV_REQUIRE(read_text(nested("3", "-0.0"), &en, &err) == QV_OK);
  QV_CHECK(!qv_array_equals(dn.batches[0], en.batches[0], &err));
  QV_CHECK_EQ_STR(err.message, "row 2, field 'f[1]': expected 0, found -0");
  qv_json_data_reset(&dn);
  qv_json_data_reset(&en);

  /* Slices: honoured by compare and by the writer. */
  qv_array *s1 = NULL, *s2 = NULL;
  QV_REQUIRE(qv_array_slice(d.batches[0], 1, 2, &s1, &err) == QV_OK);
  qv_buffer *text = NULL;
  QV_REQUIRE(qv_json_write_buffer(d.schema, &s1, 1, &text, &err) == QV_OK);
  QV_REQUIRE(qv_json_read_bytes(text->data, text->size, NULL, &e, &err) == QV_OK);
  QV_CHECK_EQ_INT(e.batches[0]->length, 2);
  QV_CHECK(qv_array_equals(s1, e.batches[0], &err));
  QV_REQUIRE(qv_array_slice(d.batches[0], 0, 2, &s2, &err) == QV_OK);
  QV_CHECK(!qv_array_equals(s2, s1, &err));
  QV_CHECK_EQ_STR(err.message, "row 0, field 'a': expected null, found 2");
  qv_buffer_unref(text);
  qv_array_unref(s1);
  qv_array_unref(s2);
  qv_json_data_reset(&e);

  /* Schema differences. */
  qv_json_data_reset(&d);
  char *mod = strdup(nested("3", "3"));
  char *p = strstr(mod, "'bitWidth': 64");
  memcpy(p, "'bitWidth': 32", 14);
  QV_REQUIRE(read_text(nested("3", "3"), &d, &err) == QV_OK);
  qv_json_data_reset(&e);
  char *mod2 = strdup(mod);
  /* keep DATA valid for int32: 64-bit strings are accepted for int64 only */
  char *q = strstr(mod2, "'DATA': ['1', '2', '3', '4']");
  memcpy(q, "'DATA': [ 1 ,  2 ,  3 ,  4 ]", 28);
  QV_REQUIRE(read_text(mod2, &e, &err) == QV_OK);
  QV_CHECK(!qv_schema_diff(d.schema, e.schema, &err));
  QV_CHECK_EQ_STR(err.message, "field 's.l.item': type: expected int64, found int32");
  QV_CHECK(!qv_array_equals(d.batches[0], e.batches[0], &err));
  QV_CHECK_EQ_STR(err.message, "field 's.l.item': type: expected int64, found int32");
  qv_json_data_reset(&e);
  free(mod);
  free(mod2);
  mod = strdup(nested("3", "3"));
  p = strstr(mod, "'value': 'v'");
  memcpy(p, "'value': 'w'", 12);
  QV_REQUIRE(read_text(mod, &e, &err) == QV_OK);
  QV_CHECK(!qv_schema_diff(d.schema, e.schema, &err));
  QV_CHECK_EQ_STR(err.message, "schema metadata: expected [k='v'], found [k='w']");
  qv_json_data_reset(&e);
  free(mod);
  /* metadata order does not matter; content does */
  qv_json_data m1, m2;
  const char *md1 =
      "{'schema': {'fields': [{'name': 'a', 'nullable': true, 'type': {'name': 'null'}, "
      "'children': [],"
      " 'metadata': [{'key': 'x', 'value': '1'}, {'key': 'y', 'value': '2'}]}]}, 'batches': []}";
  const char *md2 =
      "{'schema': {'fields': [{'name': 'a', 'nullable': true, 'type': {'name': 'null'}, "
      "'children': [],"
      " 'metadata': [{'key': 'y', 'value': '2'}, {'key': 'x', 'value': '1'}]}]}, 'batches': []}";
  const char *md3 =
      "{'schema': {'fields': [{'name': 'a', 'nullable': true, 'type': {'name': 'null'}, "
      "'children': [],"
      " 'metadata': [{'key': 'y', 'value': '2'}, {'key': 'x', 'value': '2'}]}]}, 'batches': []}";
  QV_REQUIRE(read_text(md1, &m1, &err) == QV_OK);
  QV_REQUIRE(read_text(md2, &m2, &err) == QV_OK);
  QV_CHECK(qv_schema_diff(m1.schema, m2.schema, &err));
  qv_json_data_reset(&m2);
  QV_REQUIRE(read_text(md3, &m2, &err) == QV_OK);
  QV_CHECK(!qv_schema_diff(m1.schema, m2.schema, &err));
  QV_CHECK_EQ_STR(err.message,
                  "field 'a': metadata: expected [x='1', y='2'], found [y='2', x='2']");
  /* qv_field_diff: one field under the caller's path, metadata on request */
  const qv_field *f1 = qv_schema_field(m1.schema, 0), *f2 = qv_schema_field(m2.schema, 0);
  QV_CHECK(!qv_field_diff(f1, f2, "col", true, &err));
  QV_CHECK_EQ_STR(err.message,
                  "field 'col': metadata: expected [x='1', y='2'], found [y='2', x='2']");
  QV_CHECK(qv_field_diff(f1, f2, "col", false, &err));
  QV_CHECK(qv_field_diff(f1, f1, NULL, true, NULL));
  QV_CHECK(!qv_field_diff(f1, f2, NULL, true, NULL));
  qv_field renamed = *f1;
  renamed.name = (char *)"b";
  QV_CHECK(!qv_field_diff(f1, &renamed, "", false, &err));
  QV_CHECK_EQ_STR(err.message, "name: expected 'a', found 'b'");
  qv_json_data_reset(&m1);
  qv_json_data_reset(&m2);
  mod = strdup(nested("3", "3"));
  p = strstr(mod, "{'name': 'x', 'nullable': true");
  memcpy(p, "{'name': 'x', 'nullable':false", 30);
  QV_REQUIRE(read_text(mod, &e, &err) == QV_OK);
  QV_CHECK(!qv_schema_diff(d.schema, e.schema, &err));
  QV_CHECK_EQ_STR(err.message, "field 's.x': nullable: expected true, found false");
  qv_json_data_reset(&e);
  free(mod);
  qv_json_data_reset(&d);
}

static void test_dictionaries(void) {
  qv_json_data d, e;
  qv_error err;
  /* Nested dictionaries: d (id 1) is a list of dictionary-encoded strings
   * (id 0); entries listed outer first, inner second. */
  const char *j =
      "{'schema': {'fields': ["
      "{'name': 'd', 'nullable': true, 'type': {'name': 'list'}, 'children': ["
      "  {'name': 'item', 'nullable': true, 'type': {'name': 'utf8'}, 'children': [],"
      "   'dictionary': {'id': 0, 'indexType': {'name': 'int', 'isSigned': true, 'bitWidth': 8}, "
      "'isOrdered': false}}],"
      " 'dictionary': {'id': 1, 'indexType': {'name': 'int', 'isSigned': false, 'bitWidth': 16}, "
      "'isOrdered': true}}]},"
      " 'dictionaries': ["
      "  {'id': 1, 'data': {'count': 2, 'columns': [{'name': 'DICT1', 'count': 2, 'VALIDITY': [1, "
      "1], 'OFFSET': [0, 2, 3],"
      "     'children': [{'name': 'item', 'count': 3, 'VALIDITY': [1, 1, 0], 'DATA': [1, 0, "
      "0]}]}]}},"
      "  {'id': 0, 'data': {'count': 2, 'columns': [{'name': 'DICT0', 'count': 2, 'VALIDITY': [1, "
      "1], 'OFFSET': [0, 1, 3], 'DATA': ['a', 'bc']}]}}],"
      " 'batches': [{'count': 3, 'columns': [{'name': 'd', 'count': 3, 'VALIDITY': [1, 0, 1], "
      "'DATA': [1, 7, 0]}]}]}";
  QV_REQUIRE(read_text(j, &d, &err) == QV_OK);
  const qv_array *c = col(&d, 0, 0);
  QV_CHECK_EQ_INT(c->type->id, QV_DICTIONARY);
  QV_CHECK_EQ_INT(c->type->index_type->id, QV_UINT16);
  QV_CHECK(c->type->ordered);
  QV_REQUIRE(c->dictionary != NULL);
  QV_CHECK_EQ_INT(c->dictionary->length, 2);
  QV_CHECK_EQ_INT(c->dictionary->children[0]->type->id, QV_DICTIONARY);
  QV_CHECK_EQ_INT(c->dictionary->children[0]->dictionary->length, 2);
  QV_CHECK_EQ_INT(d.n_dictionaries, 2);
  QV_CHECK_EQ_INT(d.dictionaries[0].id, 1); /* file order */
  QV_CHECK(roundtrip_equal(&d, &err));

  /* A different dictionary layout with the same decoded values is equal;
   * a different decoded value is reported as values. */
  const char *j2 =
      "{'schema': {'fields': ["
      "{'name': 'd', 'nullable': true, 'type': {'name': 'list'}, 'children': ["
      "  {'name': 'item', 'nullable': true, 'type': {'name': 'utf8'}, 'children': [],"
      "   'dictionary': {'id': 0, 'indexType': {'name': 'int', 'isSigned': true, 'bitWidth': 8}, "
      "'isOrdered': false}}],"
      " 'dictionary': {'id': 1, 'indexType': {'name': 'int', 'isSigned': false, 'bitWidth': 16}, "
      "'isOrdered': true}}]},"
      " 'dictionaries': ["
      "  {'id': 0, 'data': {'count': 3, 'columns': [{'name': 'DICT0', 'count': 3, 'VALIDITY': [1, "
      "1, 1], 'OFFSET': [0, 2, 3, 4], 'DATA': ['bc', 'a', 'z']}]}},"
      "  {'id': 1, 'data': {'count': 3, 'columns': [{'name': 'DICT1', 'count': 3, 'VALIDITY': [1, "
      "1, 1], 'OFFSET': [0, 0, 2, 3],"
      "     'children': [{'name': 'item', 'count': 3, 'VALIDITY': [1, 1, 0], 'DATA': [0, ITEM, "
      "0]}]}]}}],"
      " 'batches': [{'count': 3, 'columns': [{'name': 'd', 'count': 3, 'VALIDITY': [1, 0, 1], "
      "'DATA': [2, 0, 1]}]}]}";
  char *same = strdup(j2), *diff = strdup(j2);
  memcpy(strstr(same, "ITEM"), "1   ", 4);
  memcpy(strstr(diff, "ITEM"), "2   ", 4);
  QV_REQUIRE(read_text(same, &e, &err) == QV_OK);
  QV_CHECK(qv_array_equals(d.batches[0], e.batches[0], &err));
  qv_json_data_reset(&e);
  QV_REQUIRE(read_text(diff, &e, &err) == QV_OK);
  QV_CHECK(!qv_array_equals(d.batches[0], e.batches[0], &err));
  QV_CHECK_EQ_STR(err.message, "row 2, field 'd[1]': expected \"a\", found \"z\"");
  qv_json_data_reset(&e);
  free(same);
  free(diff);
  qv_json_data_reset(&d);

  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'd', 'nullable': true, 'type': {'name': 'utf8'}, "
      "'children': [],"
      " 'dictionary': {'id': 4, 'indexType': {'name': 'int', 'isSigned': true, 'bitWidth': 8}, "
      "'isOrdered': false}}]},"
      " 'batches': [{'count': 1, 'columns': [{'name': 'd', 'count': 1, 'VALIDITY': [1], 'DATA': "
      "[0]}]}]}",
      QV_EINVAL, "batch 0: column 'd': dictionary id 4 has no entry in 'dictionaries'");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'd', 'nullable': true, 'type': {'name': 'utf8'}, "
      "'children': [],"
      " 'dictionary': {'id': 4, 'indexType': {'name': 'int', 'isSigned': true, 'bitWidth': 8}, "
      "'isOrdered': false}}]},"
      " 'dictionaries': [{'id': 4, 'data': {'count': 1, 'columns': [{'name': 'x', 'count': 1, "
      "'VALIDITY': [1], 'OFFSET': [0, 1], 'DATA': ['a']}]}}],"
      " 'batches': [{'count': 2, 'columns': [{'name': 'd', 'count': 2, 'VALIDITY': [1, 1], 'DATA': "
      "[0, 1]}]}]}",
      QV_EINVAL, "batch 0: column 'd': DATA[1]: index 1 is outside dictionary id 4 of 1 values");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'd', 'nullable': true, 'type': {'name': 'utf8'}, "
      "'children': [],"
      " 'dictionary': {'id': 4, 'indexType': {'name': 'int', 'isSigned': true, 'bitWidth': 8}, "
      "'isOrdered': false}}]},"
      " 'dictionaries': [{'id': 4, 'data': {'count': 1, 'columns': [{'name': 'x', 'count': 1, "
      "'VALIDITY': [1], 'OFFSET': [0, 2], 'DATA': ['a']}]}}],"
      " 'batches': [{'count': 1, 'columns': [{'name': 'd', 'count': 1, 'VALIDITY': [1], 'DATA': "
      "[0]}]}]}",
      QV_EINVAL, "dictionary id 4: column 'values': DATA[0] has 1 bytes, but OFFSET gives 2");
}

static void test_unions_ree_null(void) {
  qv_json_data d, e;
  qv_error err;
  const char *j =
      "{'schema': {'fields': ["
      "{'name': 'su', 'nullable': true, 'type': {'name': 'union', 'mode': 'SPARSE', 'typeIds': [5, "
      "2]}, 'children': ["
      "  {'name': 'i', 'nullable': true, 'type': {'name': 'int', 'isSigned': true, 'bitWidth': "
      "32}, 'children': []},"
      "  {'name': 's', 'nullable': true, 'type': {'name': 'utf8'}, 'children': []}]},"
      "{'name': 'du', 'nullable': true, 'type': {'name': 'union', 'mode': 'DENSE', 'typeIds': [0, "
      "1]}, 'children': ["
      "  {'name': 'i', 'nullable': true, 'type': {'name': 'int', 'isSigned': true, 'bitWidth': "
      "32}, 'children': []},"
      "  {'name': 'n', 'nullable': true, 'type': {'name': 'null'}, 'children': []}]},"
      "{'name': 'r', 'nullable': true, 'type': {'name': 'runendencoded'}, 'children': ["
      "  {'name': 'run_ends', 'nullable': false, 'type': {'name': 'int', 'isSigned': true, "
      "'bitWidth': 32}, 'children': []},"
      "  {'name': 'values', 'nullable': true, 'type': {'name': 'utf8'}, 'children': []}]},"
      "{'name': 'n', 'nullable': true, 'type': {'name': 'null'}, 'children': []},"
      "{'name': 'n', 'nullable': true, 'type': {'name': 'int', 'isSigned': true, 'bitWidth': 8}, "
      "'children': [],"
      " 'metadata': [{'key': 'ARROW:extension:name', 'value': 'my.ext'}, {'key': "
      "'ARROW:extension:metadata', 'value': ''}]}"
      "]}, 'batches': [{'count': 3, 'columns': ["
      "{'name': 'su', 'count': 3, 'TYPE_ID': [5, 2, 5], 'children': ["
      "  {'name': 'i', 'count': 3, 'VALIDITY': [1, 1, 0], 'DATA': [10, 11, 12]},"
      "  {'name': 's', 'count': 3, 'VALIDITY': [1, 1, 1], 'OFFSET': [0, 1, 2, 3], 'DATA': ['a', "
      "'b', 'c']}]},"
      "{'name': 'du', 'count': 3, 'TYPE_ID': [1, 0, 0], 'OFFSET': [0, 1, 0], 'children': ["
      "  {'name': 'i', 'count': 2, 'VALIDITY': [1, 1], 'DATA': [7, 8]},"
      "  {'name': 'n', 'count': 1}]},"
      "{'name': 'r', 'count': 3, 'children': ["
      "  {'name': 'run_ends', 'count': 2, 'VALIDITY': [1, 1], 'DATA': [2, RE]},"
      "  {'name': 'values', 'count': 2, 'VALIDITY': [1, 1], 'OFFSET': [0, 1, 2], 'DATA': ['x', "
      "'y']}]},"
      "{'name': 'n', 'count': 3},"
      "{'name': 'n', 'count': 3, 'VALIDITY': [1, 1, 1], 'DATA': [1, 2, 3]}"
      "]}]}";
  char *a = strdup(j), *b = strdup(j);
  memcpy(strstr(a, "RE"), "3 ", 2);
  memcpy(strstr(b, "RE"), "4 ", 2);
  QV_REQUIRE(read_text(a, &d, &err) == QV_OK);
  QV_CHECK_EQ_INT(col(&d, 0, 0)->type->type_codes[0], 5);
  QV_CHECK_EQ_STR(qv_field_extension_name(qv_schema_field(d.schema, 4)), "my.ext");
  QV_CHECK_EQ_STR(qv_schema_field(d.schema, 3)->name, qv_schema_field(d.schema, 4)->name);
  QV_CHECK_EQ_INT(col(&d, 0, 3)->null_count, 3);
  QV_CHECK(roundtrip_equal(&d, &err));
  /* REE compares logical values: a longer last run beyond count is equal. */
  QV_REQUIRE(read_text(b, &e, &err) == QV_OK);
  QV_CHECK(qv_array_equals(d.batches[0], e.batches[0], &err));
  qv_json_data_reset(&e);
  /* Slicing an REE column keeps logical values through the writer. */
  qv_array *s = NULL;
  QV_REQUIRE(qv_array_slice(d.batches[0], 1, 2, &s, &err) == QV_OK);
  qv_buffer *text = NULL;
  QV_REQUIRE(qv_json_write_buffer(d.schema, &s, 1, &text, &err) == QV_OK);
  QV_REQUIRE(qv_json_read_bytes(text->data, text->size, NULL, &e, &err) == QV_OK);
  QV_CHECK(qv_array_equals(s, e.batches[0], &err));
  qv_json_data_reset(&e);
  qv_buffer_unref(text);
  qv_array_unref(s);
  /* Union: a different type code is a difference of values. */
  char *c = strdup(a);
  memcpy(strstr(c, "'TYPE_ID': [5, 2, 5]"), "'TYPE_ID': [5, 5, 5]", 20);
  QV_REQUIRE(read_text(c, &e, &err) == QV_OK);
  QV_CHECK(!qv_array_equals(d.batches[0], e.batches[0], &err));
  QV_CHECK_EQ_STR(err.message, "row 1, field 'su': expected s=\"b\", found i=11");
  qv_json_data_reset(&e);
  free(c);
  free(a);
  free(b);
  qv_json_data_reset(&d);
}

/* ------------------------------------------------------------------------ */
/* malformed files                                                           */

#define F_INT8                                                                                     \
  "{'name': 'a', 'nullable': true, 'type': {'name': 'int', 'isSigned': true, 'bitWidth': 8}, "     \
  "'children': []}"

static void test_malformed(void) {
  (void)kHead;
  EXPECT_ERROR("{'schema': {'fields': [" F_INT8
               "]}, 'batches': [{'count': 4, 'columns': ["
               "{'name': 'a', 'count': 4, 'VALIDITY': [1, 1, 1, 1], 'DATA': [1, 2, 3]}]}]}",
               QV_EINVAL, "batch 0: column 'a': DATA has 3 values, expected count 4");
  EXPECT_ERROR("{'schema': {'fields': [" F_INT8
               "]}, 'batches': [{'count': 2, 'columns': ["
               "{'name': 'a', 'count': 2, 'VALIDITY': [1, 1], 'DATA': [1, 300]}]}]}",
               QV_EINVAL, "batch 0: column 'a': DATA[1]: 300 is out of range for int8");
  EXPECT_ERROR("{'schema': {'fields': [" F_INT8
               "]}, 'batches': [{'count': 1, 'columns': ["
               "{'name': 'a', 'count': 1, 'DATA': [1]}]}]}",
               QV_EINVAL, "batch 0: column 'a': missing VALIDITY");
  EXPECT_ERROR("{'schema': {'fields': [" F_INT8
               "]}, 'batches': [{'count': 1, 'columns': ["
               "{'name': 'a', 'count': 1, 'VALIDITY': [2], 'DATA': [1]}]}]}",
               QV_EINVAL, "batch 0: column 'a': VALIDITY[0] must be 0 or 1, found an integer");
  EXPECT_ERROR("{'schema': {'fields': [" F_INT8
               "]}, 'batches': [{'count': 1, 'columns': ["
               "{'name': 'b', 'count': 1, 'VALIDITY': [1], 'DATA': [1]}]}]}",
               QV_EINVAL,
               "batch 0: column 'a': column name 'b' does not match the schema field 'a'");
  EXPECT_ERROR("{'schema': {'fields': [" F_INT8 "]}, 'batches': [{'count': 1, 'columns': []}]}",
               QV_EINVAL, "batch 0: 0 columns, but the schema has 1 fields");
  EXPECT_ERROR("{'schema': {'fields': [" F_INT8
               "]}, 'batches': [{'count': 2, 'columns': ["
               "{'name': 'a', 'count': 1, 'VALIDITY': [1], 'DATA': [1]}]}]}",
               QV_EINVAL, "batch 0: column 'a': count is 1, but the batch count is 2");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'a', 'nullable': true, 'type': {'name': 'int33'}, "
      "'children': []}]}, 'batches': []}",
      QV_EINVAL, "schema: field 'a': unknown type name 'int33'");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 's', 'nullable': true, 'type': {'name': 'struct'}, "
      "'children': ["
      "{'name': 'x', 'nullable': true, 'type': {'name': 'int', 'isSigned': true, 'bitWidth': 12}, "
      "'children': []}]}]}, 'batches': []}",
      QV_EINVAL, "schema: field 's.x': int bitWidth 12 is not 8, 16, 32 or 64");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'l', 'nullable': true, 'type': {'name': 'list'}, "
      "'children': []}]}, 'batches': []}",
      QV_EINVAL, "schema: field 'l': list must have exactly 1 child, found 0");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'a', 'type': {'name': 'null'}, 'children': []}]}, "
      "'batches': []}",
      QV_EINVAL, "schema: field 'a': missing 'nullable'");
  EXPECT_ERROR("{'batches': []}", QV_EINVAL, "schema: missing 'schema'");
  EXPECT_ERROR("[1]", QV_EINVAL, "JSON: top level must be an object, found an array");
  /* nested paths in batches */
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 's', 'nullable': true, 'type': {'name': 'struct'}, "
      "'children': ["
      "{'name': 'b', 'nullable': true, 'type': {'name': 'utf8'}, 'children': []}]}]},"
      " 'batches': [{'count': 0, 'columns': [{'name': 's', 'count': 0, 'VALIDITY': [], 'children': "
      "[]}]},"
      "  {'count': 2, 'columns': [{'name': 's', 'count': 2, 'VALIDITY': [1, 1], 'children': ["
      "   {'name': 'b', 'count': 2, 'VALIDITY': [1, 1], 'OFFSET': [0, 1, 3], 'DATA': ['a', "
      "'b']}]}]}]}",
      QV_EINVAL, "batch 0: column 's': 'children' has 0 columns, expected 1");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 's', 'nullable': true, 'type': {'name': 'struct'}, "
      "'children': ["
      "{'name': 'b', 'nullable': true, 'type': {'name': 'utf8'}, 'children': []}]}]},"
      " 'batches': [{'count': 2, 'columns': [{'name': 's', 'count': 2, 'VALIDITY': [1, 1], "
      "'children': ["
      "   {'name': 'b', 'count': 2, 'VALIDITY': [1, 1], 'OFFSET': [0, 1, 3], 'DATA': ['a', "
      "'b']}]}]}]}",
      QV_EINVAL, "batch 0: column 's.b': DATA[1] has 1 bytes, but OFFSET gives 2");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'b', 'nullable': true, 'type': {'name': 'binary'}, "
      "'children': []}]},"
      " 'batches': [{'count': 1, 'columns': [{'name': 'b', 'count': 1, 'VALIDITY': [1], 'OFFSET': "
      "[0, 1], 'DATA': ['G0']}]}]}",
      QV_EINVAL, "batch 0: column 'b': DATA[0]: 'G0' is not hex");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'b', 'nullable': true, 'type': {'name': 'utf8'}, "
      "'children': []}]},"
      " 'batches': [{'count': 2, 'columns': [{'name': 'b', 'count': 2, 'VALIDITY': [1, 1], "
      "'OFFSET': [0, 1], 'DATA': ['a', 'b']}]}]}",
      QV_EINVAL, "batch 0: column 'b': OFFSET has 2 values, expected count + 1 = 3");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'l', 'nullable': true, 'type': {'name': 'list'}, "
      "'children': [" F_INT8
      "]}]},"
      " 'batches': [{'count': 1, 'columns': [{'name': 'l', 'count': 1, 'VALIDITY': [1], 'OFFSET': "
      "[0, 3], 'children': ["
      "  {'name': 'a', 'count': 2, 'VALIDITY': [1, 1], 'DATA': [1, 2]}]}]}]}",
      QV_EINVAL, "batch 0: column 'l': OFFSET[1] = 3 exceeds the child's count (2)");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'd', 'nullable': true, 'type': {'name': 'decimal', "
      "'precision': 5, 'scale': 2, 'bitWidth': 32}, 'children': []}]},"
      " 'batches': [{'count': 1, 'columns': [{'name': 'd', 'count': 1, 'VALIDITY': [1], 'DATA': "
      "['2147483648']}]}]}",
      QV_EINVAL, "batch 0: column 'd': DATA[0]: '2147483648' is not a valid decimal32(5, 2) value");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'v', 'nullable': true, 'type': {'name': 'binaryview'}, "
      "'children': []}]},"
      " 'batches': [{'count': 1, 'columns': [{'name': 'v', 'count': 1, 'VALIDITY': [1], 'VIEWS': ["
      "  {'SIZE': 13, 'PREFIX_HEX': '00000000', 'BUFFER_INDEX': 0, 'OFFSET': 0}],"
      " 'VARIADIC_DATA_BUFFERS': ['01020304050607080910111213']}]}]}",
      QV_EINVAL,
      "batch 0: column 'v': VIEWS[0]: PREFIX_HEX 00000000 does not match the first 4 bytes of its "
      "data 01020304");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'v', 'nullable': true, 'type': {'name': 'binaryview'}, "
      "'children': []}]},"
      " 'batches': [{'count': 1, 'columns': [{'name': 'v', 'count': 1, 'VALIDITY': [1], 'VIEWS': ["
      "  {'SIZE': 13, 'PREFIX_HEX': '01020304', 'BUFFER_INDEX': 0, 'OFFSET': 1}],"
      " 'VARIADIC_DATA_BUFFERS': ['01020304050607080910111213']}]}]}",
      QV_EINVAL,
      "batch 0: column 'v': VIEWS[0]: bytes [1, 14) are outside variadic buffer 0 of 13 bytes");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'u', 'nullable': true, 'type': {'name': 'union', 'mode': "
      "'SPARSE', 'typeIds': [3]}, 'children': [" F_INT8
      "]}]},"
      " 'batches': [{'count': 1, 'columns': [{'name': 'u', 'count': 1, 'TYPE_ID': [4], 'children': "
      "["
      "  {'name': 'a', 'count': 1, 'VALIDITY': [1], 'DATA': [1]}]}]}]}",
      QV_EINVAL, "batch 0: column 'u': TYPE_ID[0]: 4 is not one of the union's typeIds");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'r', 'nullable': true, 'type': {'name': 'runendencoded'}, "
      "'children': ["
      "  {'name': 'run_ends', 'nullable': false, 'type': {'name': 'int', 'isSigned': true, "
      "'bitWidth': 16}, 'children': []},"
      "  {'name': 'values', 'nullable': true, 'type': {'name': 'null'}, 'children': []}]}]},"
      " 'batches': [{'count': 5, 'columns': [{'name': 'r', 'count': 5, 'children': ["
      "  {'name': 'run_ends', 'count': 2, 'VALIDITY': [1, 1], 'DATA': [3, 2]}, {'name': 'values', "
      "'count': 2}]}]}]}",
      QV_EINVAL, "batch 0: column 'r': run_ends[1] = 2 must be greater than 3");
  EXPECT_ERROR(
      "{'schema': {'fields': [{'name': 'f', 'nullable': true, 'type': {'name': 'fixedsizelist', "
      "'listSize': 2}, 'children': [" F_INT8
      "]}]},"
      " 'batches': [{'count': 2, 'columns': [{'name': 'f', 'count': 2, 'VALIDITY': [1, 1], "
      "'children': ["
      "  {'name': 'a', 'count': 3, 'VALIDITY': [1, 1, 1], 'DATA': [1, 2, 3]}]}]}]}",
      QV_EINVAL, "batch 0: column 'f': child 'a' has count 3, expected count * listSize = 2 * 2");

  /* syntax errors and gzip */
  qv_json_data d;
  qv_error err;
  QV_CHECK_EQ_INT(qv_json_read_bytes("{\"schema\": ", 11, NULL, &d, &err), QV_EINVAL);
  QV_CHECK(strncmp(err.message, "JSON syntax error at line 1, column 11: ", 40) == 0);
  static const uint8_t bad_gz[] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03, 0xab, 0x56};
  QV_CHECK_EQ_INT(qv_json_read_bytes(bad_gz, sizeof bad_gz, NULL, &d, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "gzip: truncated input after 12 bytes");
  qv_json_read_options small = {16};
  const char *big = "{\"schema\": {\"fields\": []}, \"batches\": []}";
  QV_CHECK_EQ_INT(qv_json_read_bytes(big, (int64_t)strlen(big), &small, &d, &err), QV_ENOMEM);
  QV_CHECK_EQ_STR(err.message, "JSON of 41 bytes exceeds the limit of 16");
  QV_CHECK_EQ_INT(qv_json_read("/nonexistent.json", NULL, &d, &err), QV_EIO);
}

/* gzip file written by qv_json_write is detected by content, not name. */
static void test_write_gzip_file(void) {
  qv_json_data d, e;
  qv_error err;
  QV_REQUIRE(read_text(nested("3", "3"), &d, &err) == QV_OK);
  char path[] = "/tmp/qv_test_json_XXXXXX";
  int fd = mkstemp(path);
  QV_REQUIRE(fd >= 0);
  close(fd);
  qv_json_write_options gz = {true};
  QV_REQUIRE(qv_json_write(path, d.schema, d.batches, d.n_batches, &gz, &err) == QV_OK);
  FILE *f = fopen(path, "rb");
  QV_REQUIRE(f != NULL);
  int c0 = fgetc(f), c1 = fgetc(f);
  fclose(f);
  QV_CHECK(c0 == 0x1f && c1 == 0x8b);
  QV_REQUIRE(qv_json_read(path, NULL, &e, &err) == QV_OK);
  QV_CHECK(qv_schema_diff(d.schema, e.schema, &err));
  QV_CHECK(qv_array_equals(d.batches[0], e.batches[0], &err));
  qv_json_data_reset(&e);
  QV_REQUIRE(qv_json_write(path, d.schema, d.batches, d.n_batches, NULL, &err) == QV_OK);
  QV_REQUIRE(qv_json_read(path, NULL, &e, &err) == QV_OK);
  QV_CHECK(qv_array_equals(d.batches[0], e.batches[0], &err));
  qv_json_data_reset(&e);
  unlink(path);
  qv_json_data_reset(&d);
}

int main(void) {
  QV_RUN(test_golden_files);
  QV_RUN(test_golden_values);
  QV_RUN(test_integers_and_floats);
  QV_RUN(test_decimals);
  QV_RUN(test_temporal_and_intervals);
  QV_RUN(test_binary_and_views);
  QV_RUN(test_nested_and_diffs);
  QV_RUN(test_dictionaries);
  QV_RUN(test_unions_ree_null);
  QV_RUN(test_malformed);
  QV_RUN(test_write_gzip_file);
  return QV_TEST_END();
}
