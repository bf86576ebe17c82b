/*
 * test_builder.c — the array builder (quiver/builder.h), one test per type
 * family: arrays built by appending must pass qv_array_validate(FULL) and
 * equal (qv_array_equals) the same data read from Arrow integration JSON
 * (qv_json_read_bytes, an independent path) or hand-built buffers (views);
 * plus misuse: wrong kinds, unbalanced nesting, ranges, nullability, each
 * with its exact message; reuse after finish; a record batch built
 * column-wise and written through the IPC writer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quiver/builder.h"
#include "quiver/integration.h"
#include "quiver/ipc.h"
#include "quiver/writer.h"
#include "qv_build.h"
#include "qv_test.h"

/* ---- JSON oracle ------------------------------------------------------- */

/* The integration JSON of one column `field` with `count` rows of data
 * `col` (and optional dictionaries), written with ' for ". */
typedef struct jcase {
  qv_json_data jd;
  qv_array *want;      /* borrowed from jd: the column */
  const qv_type *type; /* borrowed from jd: the column's type */
} jcase;

static bool jload(jcase *c, const char *field, int64_t count, const char *col, const char *dicts) {
  char *doc = malloc(strlen(field) + strlen(col) + (dicts ? strlen(dicts) : 0) + 256);
  sprintf(doc, "{'schema': {'fields': [%s]}, 'batches': [{'count': %lld, 'columns': [%s]}]%s%s%s}",
          field, (long long)count, col, dicts ? ", 'dictionaries': " : "", dicts ? dicts : "", "");
  for (char *p = doc; *p; p++)
    if (*p == '\'') *p = '"';
  qv_error err;
  memset(c, 0, sizeof *c);
  qv_status st = qv_json_read_bytes(doc, (int64_t)strlen(doc), NULL, &c->jd, &err);
  free(doc);
  if (st != QV_OK) {
    fprintf(stderr, "JSON oracle: %s\n", err.message);
    return false;
  }
  c->want = c->jd.batches[0]->children[0];
  c->type = c->want->type;
  return true;
}

static void jfree(jcase *c) { qv_json_data_reset(&c->jd); }

/* Finish b, validate FULL, compare with want. Returns the array. */
static qv_array *finish_equal(qv_builder *b, const qv_array *want, const char *what) {
  qv_error err;
  qv_array *got = NULL;
  qv_status st = qv_builder_finish(b, &got, &err);
  if (st != QV_OK) {
    fprintf(stderr, "%s: finish: %s\n", what, err.message);
    QV_CHECK(st == QV_OK);
    return NULL;
  }
  st = qv_array_validate(got, QV_VALIDATE_FULL, what, &err);
  if (st != QV_OK) fprintf(stderr, "%s: validate: %s\n", what, err.message);
  QV_CHECK(st == QV_OK);
  if (want) {
    bool eq = qv_array_equals(want, got, &err);
    if (!eq) fprintf(stderr, "%s: differs: %s\n", what, err.message);
    QV_CHECK(eq);
    QV_CHECK_EQ_INT(qv_array_null_count(got), qv_array_null_count((qv_array *)want));
  }
  return got;
}

#define OK(expr)                                                                                   \
  do {                                                                                             \
    qv_error e_;                                                                                   \
    qv_status s_ = (expr);                                                                         \
    if (s_ != QV_OK) fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, e_.message);               \
    QV_CHECK(s_ == QV_OK);                                                                         \
  } while (0)
/* OK with an error pointer the macro provides. */
#define E (&e_)

/* Expect status `st` and exact message `msg`. */
#define FAILS(expr, st, msg)                                                                       \
  do {                                                                                             \
    qv_error e_;                                                                                   \
    memset(&e_, 0, sizeof e_);                                                                     \
    QV_CHECK_EQ_INT((expr), (st));                                                                 \
    QV_CHECK_EQ_STR(e_.message, (msg));                                                            \
  } while (0)

static qv_builder *new_builder(const qv_type *t) {
  qv_builder *b = NULL;
  qv_error err;
  if (qv_builder_new(t, &b, &err) != QV_OK) fprintf(stderr, "new: %s\n", err.message);
  return b;
}

#define F(name, type) "{'name': '" name "', 'type': " type ", 'nullable': true, 'children': []}"
#define INT(bits, s) "{'name': 'int', 'bitWidth': " #bits ", 'isSigned': " #s "}"

/* ---- primitives -------------------------------------------------------- */

static void test_integers_bool_floats(void) {
  static const struct {
    const char *type;
    const char *data;
    int64_t v[4];
    bool is_unsigned;
  } cases[] = {
      {INT(8, true), "[-128, 0, 127, 5]", {-128, 0, 127, 5}, false},
      {INT(16, true), "[-32768, 0, 32767, 5]", {-32768, 0, 32767, 5}, false},
      {INT(32, true), "[-2147483648, 0, 2147483647, 5]", {INT32_MIN, 0, INT32_MAX, 5}, false},
      {INT(64, true),
       "['-9223372036854775808', '0', '9223372036854775807', '5']",
       {INT64_MIN, 0, INT64_MAX, 5},
       false},
      {INT(8, false), "[0, 1, 255, 5]", {0, 1, 255, 5}, true},
      {INT(16, false), "[0, 1, 65535, 5]", {0, 1, 65535, 5}, true},
      {INT(32, false), "[0, 1, 4294967295, 5]", {0, 1, 4294967295, 5}, true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char col[256];
    jcase c;
    char field[200];
    snprintf(field, sizeof field, "{'name': 'a', 'type': %s, 'nullable': true, 'children': []}",
             cases[i].type);
    /* DATA in slot order v0, v1, (null), v3, v2 */
    const char *d = cases[i].data + 1;
    char vals[4][32];
    for (int k = 0; k < 4; k++) {
      const char *e = strpbrk(d, ",]");
      snprintf(vals[k], sizeof vals[k], "%.*s", (int)(e - d), d);
      d = e + 2;
    }
    snprintf(col, sizeof col,
             "{'name': 'a', 'count': 5, 'VALIDITY': [1, 1, 0, 1, 1], "
             "'DATA': [%s, %s, %s, %s, %s]}",
             vals[0], vals[1], cases[i].is_unsigned ? "0" : (strchr(vals[0], '\'') ? "'0'" : "0"),
             vals[3], vals[2]);
    QV_REQUIRE(jload(&c, field, 5, col, NULL));
    qv_builder *b = new_builder(c.type);
    int64_t order[4] = {0, 1, 3, 2};
    for (int k = 0; k < 4; k++) {
      if (k == 2) OK(qv_builder_append_null(b, E));
      if (cases[i].is_unsigned) OK(qv_builder_append_uint(b, (uint64_t)cases[i].v[order[k]], E));
      else OK(qv_builder_append_int(b, cases[i].v[order[k]], E));
    }
    QV_CHECK_EQ_INT(qv_builder_length(b), 5);
    QV_CHECK_EQ_INT(qv_builder_null_count(b), 1);
    qv_array_unref(finish_equal(b, c.want, field));
    qv_builder_free(b);
    jfree(&c);
  }

  /* uint64 beyond int64, through append_uint; append_int of a negative
   * value fails. */
  jcase c;
  QV_REQUIRE(jload(&c, F("u", INT(64, false)), 2,
                   "{'name': 'u', 'count': 2, 'VALIDITY': [1, 1], "
                   "'DATA': ['18446744073709551615', '7']}",
                   NULL));
  qv_builder *b = new_builder(c.type);
  OK(qv_builder_append_uint(b, UINT64_MAX, E));
  FAILS(qv_builder_append_int(b, -1, E), QV_ERANGE,
        "builder (uint64): append_int: value -1 is out of range for uint64");
  OK(qv_builder_append_int(b, 7, E));
  qv_array_unref(finish_equal(b, c.want, "uint64"));
  qv_builder_free(b);
  jfree(&c);

  /* bool, with nulls and more than 8 values (bit packing). */
  QV_REQUIRE(jload(&c, F("b", "{'name': 'bool'}"), 10,
                   "{'name': 'b', 'count': 10, 'VALIDITY': [1,0,1,1,1,1,1,1,1,0], "
                   "'DATA': [true,false,false,true,true,false,true,true,false,false]}",
                   NULL));
  b = new_builder(c.type);
  bool bv[10] = {true, false, false, true, true, false, true, true, false, false};
  for (int k = 0; k < 10; k++) {
    if (k == 1 || k == 9) OK(qv_builder_append_null(b, E));
    else OK(qv_builder_append_bool(b, bv[k], E));
  }
  qv_array_unref(finish_equal(b, c.want, "bool"));
  qv_builder_free(b);
  jfree(&c);

  /* floats: half (rounded to nearest), single, double, NaN/inf. */
  const char *ftypes[3] = {"{'name': 'floatingpoint', 'precision': 'HALF'}",
                           "{'name': 'floatingpoint', 'precision': 'SINGLE'}",
                           "{'name': 'floatingpoint', 'precision': 'DOUBLE'}"};
  for (int k = 0; k < 3; k++) {
    char field[200];
    snprintf(field, sizeof field, "{'name': 'f', 'type': %s, 'nullable': true, 'children': []}",
             ftypes[k]);
    QV_REQUIRE(jload(&c, field, 6,
                     "{'name': 'f', 'count': 6, 'VALIDITY': [1,1,0,1,1,1], "
                     "'DATA': [1.5, -0.25, 0, 'Infinity', 'NaN', 65504]}",
                     NULL));
    b = new_builder(c.type);
    OK(qv_builder_append_double(b, 1.5, E));
    OK(qv_builder_append_double(b, -0.25, E));
    OK(qv_builder_append_null(b, E));
    OK(qv_builder_append_double(b, 1.0 / 0.0, E));
    OK(qv_builder_append_double(b, 0.0 / 0.0, E));
    OK(qv_builder_append_double(b, 65504.0, E));
    qv_array_unref(finish_equal(b, c.want, ftypes[k]));
    qv_builder_free(b);
    jfree(&c);
  }

  /* bulk append_values, then single appends, then nulls */
  QV_REQUIRE(jload(&c, F("a", INT(32, true)), 6,
                   "{'name': 'a', 'count': 6, 'VALIDITY': [1,1,1,1,0,0], "
                   "'DATA': [1, 2, 3, 4, 0, 0]}",
                   NULL));
  b = new_builder(c.type);
  int32_t three[3] = {1, 2, 3};
  OK(qv_builder_reserve(b, 100, E));
  OK(qv_builder_append_values(b, three, 3, E));
  OK(qv_builder_append_int(b, 4, E));
  OK(qv_builder_append_nulls(b, 2, E));
  qv_array_unref(finish_equal(b, c.want, "append_values"));
  /* the builder is reusable after finish */
  OK(qv_builder_append_int(b, 9, E));
  qv_array *again = NULL;
  OK(qv_builder_finish(b, &again, E));
  QV_CHECK_EQ_INT(again->length, 1);
  QV_CHECK(again->buffers[0] == NULL);
  QV_CHECK_EQ_INT(((int32_t *)again->buffers[1]->data)[0], 9);
  qv_array_unref(again);
  qv_builder_free(b);
  jfree(&c);
}

/* ---- decimals and temporal -------------------------------------------- */

static void test_decimals(void) {
  static const int widths[4] = {32, 64, 128, 256};
  for (int k = 0; k < 4; k++) {
    char field[220];
    int prec = widths[k] == 32 ? 9 : widths[k] == 64 ? 18 : widths[k] == 128 ? 38 : 76;
    snprintf(field, sizeof field,
             "{'name': 'd', 'type': {'name': 'decimal', 'precision': %d, "
             "'scale': 2, 'bitWidth': %d}, 'nullable': true, 'children': []}",
             prec, widths[k]);
    char col[512];
    snprintf(col, sizeof col,
             "{'name': 'd', 'count': 7, 'VALIDITY': [1,1,1,0,1,1,1], "
             "'DATA': ['12345', '-5', '0', '0', '-12300', '%s', '-%s']}",
             widths[k] == 32   ? "999999999"
             : widths[k] == 64 ? "999999999999999999"
             : widths[k] == 128
                 ? "99999999999999999999999999999999999999"
                 : "9999999999999999999999999999999999999999999999999999999999999999999999999999",
             widths[k] == 32   ? "999999999"
             : widths[k] == 64 ? "999999999999999999"
             : widths[k] == 128
                 ? "99999999999999999999999999999999999999"
                 : "9999999999999999999999999999999999999999999999999999999999999999999999999999");
    jcase c;
    QV_REQUIRE(jload(&c, field, 7, col, NULL));
    qv_builder *b = new_builder(c.type);
    OK(qv_builder_append_decimal(b, "123.45", E));
    OK(qv_builder_append_int(b, -5, E));
    OK(qv_builder_append_decimal(b, "-0.000", E)); /* extra zero digits are fine */
    OK(qv_builder_append_null(b, E));
    OK(qv_builder_append_decimal(b, "-123", E));
    char big[100], nbig[104];
    snprintf(big, sizeof big, "%.*s.99", prec - 2,
             "9999999999999999999999999999999999999999999999999999999999999999999999999999");
    snprintf(nbig, sizeof nbig, "-%s", big);
    OK(qv_builder_append_decimal(b, big, E));
    OK(qv_builder_append_decimal(b, nbig, E));
    qv_array_unref(finish_equal(b, c.want, field));
    qv_builder_free(b);
    jfree(&c);
  }
  /* errors, on decimal32(4, 2) */
  qv_type *t = qv_type_new(QV_DECIMAL32);
  t->precision = 4;
  t->scale = 2;
  qv_builder *b = new_builder(t);
  FAILS(qv_builder_append_decimal(b, "123.45", E), QV_ERANGE,
        "builder (decimal32(4, 2)): append_decimal: '123.45' has 5 significant digits at "
        "scale 2, more than the precision 4");
  FAILS(qv_builder_append_decimal(b, "1.234", E), QV_ERANGE,
        "builder (decimal32(4, 2)): append_decimal: '1.234' has more fractional digits than "
        "the scale 2");
  FAILS(qv_builder_append_decimal(b, "1e5", E), QV_EARG,
        "builder (decimal32(4, 2)): append_decimal: '1e5' is not a decimal number");
  FAILS(qv_builder_append_int(b, 10000, E), QV_ERANGE,
        "builder (decimal32(4, 2)): append_int: value 10000 has 5 digits, more than the "
        "precision 4");
  FAILS(qv_builder_append_double(b, 1.5, E), QV_ETYPE,
        "builder (decimal32(4, 2)): append_double: wrong kind of value for decimal32(4, 2) "
        "(it takes append_int, append_uint, append_decimal, append_values, append_bytes "
        "(raw), append_null)");
  OK(qv_builder_append_decimal(b, "99.99", E));
  OK(qv_builder_append_decimal(b, ".5", E));
  uint8_t raw[4] = {0x39, 0x30, 0, 0}; /* 12345 raw: exceeds precision, not checked */
  FAILS(qv_builder_append_bytes(b, raw, 3, E), QV_EARG,
        "builder (decimal32(4, 2)): append_bytes: decimal32 takes values of 4 bytes, found 3");
  qv_array *a = NULL;
  OK(qv_builder_finish(b, &a, E));
  QV_CHECK_EQ_INT(a->length, 2);
  QV_CHECK_EQ_INT(((int32_t *)a->buffers[1]->data)[0], 9999);
  QV_CHECK_EQ_INT(((int32_t *)a->buffers[1]->data)[1], 50);
  qv_array_unref(a);
  qv_builder_free(b);
  /* negative scale */
  t->scale = -2;
  b = new_builder(t);
  OK(qv_builder_append_decimal(b, "1200", E));
  FAILS(qv_builder_append_decimal(b, "1250", E), QV_ERANGE,
        "builder (decimal32(4, -2)): append_decimal: '1250' has more fractional digits than "
        "the scale -2");
  OK(qv_builder_finish(b, &a, E));
  QV_CHECK_EQ_INT(((int32_t *)a->buffers[1]->data)[0], 12);
  qv_array_unref(a);
  qv_builder_free(b);
  qv_type_unref(t);
}

static void test_temporal_and_intervals(void) {
  static const struct {
    const char *type, *data;
    int64_t v0, v1;
  } cases[] = {
      {"{'name': 'date', 'unit': 'DAY'}", "[-3, 0, 19000]", -3, 19000},
      {"{'name': 'date', 'unit': 'MILLISECOND'}", "['-86400000', '0', '86400000']", -86400000,
       86400000},
      {"{'name': 'time', 'unit': 'MILLISECOND', 'bitWidth': 32}", "[1, 0, 86399999]", 1, 86399999},
      {"{'name': 'time', 'unit': 'NANOSECOND', 'bitWidth': 64}", "['1', '0', '86399999999999']", 1,
       86399999999999},
      {"{'name': 'timestamp', 'unit': 'MICROSECOND', 'timezone': 'UTC'}",
       "['-1', '0', '1700000000000000']", -1, 1700000000000000},
      {"{'name': 'duration', 'unit': 'SECOND'}", "['-7', '0', '7']", -7, 7},
      {"{'name': 'interval', 'unit': 'YEAR_MONTH'}", "[-14, 0, 14]", -14, 14},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char field[240], col[240];
    snprintf(field, sizeof field, "{'name': 't', 'type': %s, 'nullable': true, 'children': []}",
             cases[i].type);
    snprintf(col, sizeof col, "{'name': 't', 'count': 3, 'VALIDITY': [1, 0, 1], 'DATA': %s}",
             cases[i].data);
    jcase c;
    QV_REQUIRE(jload(&c, field, 3, col, NULL));
    qv_builder *b = new_builder(c.type);
    OK(qv_builder_append_int(b, cases[i].v0, E));
    OK(qv_builder_append_null(b, E));
    OK(qv_builder_append_int(b, cases[i].v1, E));
    qv_array_unref(finish_equal(b, c.want, cases[i].type));
    qv_builder_free(b);
    jfree(&c);
  }
  jcase c;
  QV_REQUIRE(jload(&c, F("i", "{'name': 'interval', 'unit': 'DAY_TIME'}"), 3,
                   "{'name': 'i', 'count': 3, 'VALIDITY': [1, 0, 1], 'DATA': ["
                   "{'days': 1, 'milliseconds': -2}, {'days': 0, 'milliseconds': 0}, "
                   "{'days': -30, 'milliseconds': 86399999}]}",
                   NULL));
  qv_builder *b = new_builder(c.type);
  OK(qv_builder_append_day_time(b, 1, -2, E));
  OK(qv_builder_append_null(b, E));
  OK(qv_builder_append_day_time(b, -30, 86399999, E));
  FAILS(qv_builder_append_month_day_nano(b, 1, 2, 3, E), QV_ETYPE,
        "builder (day_time_interval): append_month_day_nano: wrong kind of value for "
        "day_time_interval (it takes append_day_time, append_values, append_bytes (raw), "
        "append_null)");
  qv_array_unref(finish_equal(b, c.want, "day_time"));
  qv_builder_free(b);
  jfree(&c);
  QV_REQUIRE(jload(&c, F("i", "{'name': 'interval', 'unit': 'MONTH_DAY_NANO'}"), 2,
                   "{'name': 'i', 'count': 2, 'VALIDITY': [1, 1], 'DATA': ["
                   "{'months': 1, 'days': -2, 'nanoseconds': '-9000000000000'}, "
                   "{'months': -1, 'days': 0, 'nanoseconds': '5'}]}",
                   NULL));
  b = new_builder(c.type);
  OK(qv_builder_append_month_day_nano(b, 1, -2, -9000000000000, E));
  OK(qv_builder_append_month_day_nano(b, -1, 0, 5, E));
  qv_array_unref(finish_equal(b, c.want, "month_day_nano"));
  qv_builder_free(b);
  jfree(&c);
  /* range: date32 takes int32 values; timestamps take no uint */
  qv_type *t = qv_type_new(QV_DATE32);
  b = new_builder(t);
  FAILS(qv_builder_append_int(b, 1ll << 40, E), QV_ERANGE,
        "builder (date32): append_int: value 1099511627776 is out of range for date32");
  qv_builder_free(b);
  qv_type_unref(t);
  t = qv_type_timestamp(QV_NANO, NULL);
  b = new_builder(t);
  FAILS(qv_builder_append_uint(b, 1, E), QV_ETYPE,
        "builder (timestamp[ns]): append_uint: wrong kind of value for timestamp[ns] (it "
        "takes append_int, append_values, append_bytes (raw), append_null)");
  qv_builder_free(b);
  qv_type_unref(t);
}

/* ---- binary ------------------------------------------------------------ */

static void test_binary_and_strings(void) {
  const char *types[4] = {"{'name': 'utf8'}", "{'name': 'binary'}", "{'name': 'largeutf8'}",
                          "{'name': 'largebinary'}"};
  for (int k = 0; k < 4; k++) {
    char field[160];
    snprintf(field, sizeof field, "{'name': 's', 'type': %s, 'nullable': true, 'children': []}",
             types[k]);
    bool bin = k % 2 == 1;
    jcase c;
    QV_REQUIRE(jload(&c, field, 4,
                     bin ? "{'name': 's', 'count': 4, 'VALIDITY': [1,0,1,1], "
                           "'OFFSET': [0, 2, 2, 2, 5], 'DATA': ['6869', '', '', '00ff41']}"
                         : "{'name': 's', 'count': 4, 'VALIDITY': [1,0,1,1], "
                           "'OFFSET': [0, 2, 2, 2, 8], 'DATA': ['hi', '', '', 'h\u00e9\u20ac']}",
                     NULL));
    qv_builder *b = new_builder(c.type);
    OK(qv_builder_append_string(b, "hi", E));
    OK(qv_builder_append_null(b, E));
    OK(qv_builder_append_bytes(b, NULL, 0, E));
    if (bin) OK(qv_builder_append_bytes(b, "\x00\xff\x41", 3, E));
    else OK(qv_builder_append_string(b, "h\xc3\xa9\xe2\x82\xac", E));
    qv_array_unref(finish_equal(b, c.want, types[k]));
    if (!bin)
      FAILS(qv_builder_append_bytes(b, "a\xff", 2, E), QV_EINVAL,
            k == 0 ? "builder (string): append_bytes: value is not valid UTF-8 (byte 1 of 2)"
                   : "builder (large_string): append_bytes: value is not valid UTF-8 (byte 1 "
                     "of 2)");
    FAILS(qv_builder_append_int(b, 1, E), QV_ETYPE,
          k == 0   ? "builder (string): append_int: wrong kind of value for string (it takes "
                     "append_bytes, append_string, append_null)"
          : k == 1 ? "builder (binary): append_int: wrong kind of value for binary (it takes "
                     "append_bytes, append_string, append_null)"
          : k == 2 ? "builder (large_string): append_int: wrong kind of value for large_string "
                     "(it takes append_bytes, append_string, append_null)"
                   : "builder (large_binary): append_int: wrong kind of value for large_binary "
                     "(it takes append_bytes, append_string, append_null)");
    qv_builder_free(b);
    jfree(&c);
  }
  jcase c;
  QV_REQUIRE(jload(&c, F("f", "{'name': 'fixedsizebinary', 'byteWidth': 3}"), 3,
                   "{'name': 'f', 'count': 3, 'VALIDITY': [1,0,1], "
                   "'DATA': ['616263', '000000', 'ffff00']}",
                   NULL));
  qv_builder *b = new_builder(c.type);
  OK(qv_builder_append_bytes(b, "abc", 3, E));
  OK(qv_builder_append_null(b, E));
  FAILS(qv_builder_append_bytes(b, "ab", 2, E), QV_EARG,
        "builder (fixed_size_binary[3]): append_bytes: fixed_size_binary takes values of 3 "
        "bytes, found 2");
  OK(qv_builder_append_values(b, "\xff\xff\x00", 1, E));
  qv_array_unref(finish_equal(b, c.want, "fsb"));
  qv_builder_free(b);
  jfree(&c);
}

static void test_views(void) {
  const char *long1 = "a string longer than twelve bytes";
  const char *long2 = "another one, also long enough";
  const char *vals[5] = {"short", NULL, long1, "", long2};
  for (int k = 0; k < 2; k++) {
    qv_type *t = qv_type_new(k ? QV_BINARY_VIEW : QV_STRING_VIEW);
    qv_builder *b = new_builder(t);
    for (int i = 0; i < 5; i++) {
      if (vals[i]) OK(qv_builder_append_string(b, vals[i], E));
      else OK(qv_builder_append_null(b, E));
    }
    /* expected, by hand: one data buffer holding long1 then long2 */
    size_t l1 = strlen(long1), l2 = strlen(long2);
    char data[128];
    memcpy(data, long1, l1);
    memcpy(data + l1, long2, l2);
    uint8_t views[5 * 16];
    tb_view(views, "short", 5, 0, 0);
    memset(views + 16, 0, 16);
    tb_view(views + 32, long1, (int32_t)l1, 0, 0);
    tb_view(views + 48, "", 0, 0, 0);
    tb_view(views + 64, long2, (int32_t)l2, 0, (int32_t)l1);
    uint8_t valid = 0x1d; /* 10111 */
    qv_buffer *bufs[3] = {tb_buf(&valid, 1), tb_buf(views, sizeof views),
                          tb_buf(data, (int64_t)(l1 + l2))};
    qv_array *want = tb_array_nc(qv_type_ref(t), 5, 1, 3, bufs, 0, NULL);
    qv_array *got = finish_equal(b, want, "views");
    if (got) {
      QV_CHECK_EQ_INT(got->n_buffers, 3);
      QV_CHECK(memcmp(got->buffers[1]->data, views, sizeof views) == 0);
      QV_CHECK(memcmp(got->buffers[2]->data, data, l1 + l2) == 0);
    }
    qv_array_unref(got);
    qv_array_unref(want);
    if (k == 0)
      FAILS(qv_builder_append_bytes(b, "\xc3(", 2, E), QV_EINVAL,
            "builder (string_view): append_bytes: value is not valid UTF-8 (byte 0 of 2)");
    qv_builder_free(b);
    qv_type_unref(t);
  }
}

/* ---- nested ------------------------------------------------------------ */

#define ITEM "[{'name': 'item', 'type': " INT(32, true) ", 'nullable': true, 'children': []}]"

/* [[1, 2], null, [], [3, null]] for list / large list / list view /
 * large list view. */
static void test_lists(void) {
  static const char *const fields[4] = {
      "{'name': 'l', 'type': {'name': 'list'}, 'nullable': true, 'children': " ITEM "}",
      "{'name': 'l', 'type': {'name': 'largelist'}, 'nullable': true, 'children': " ITEM "}",
      "{'name': 'l', 'type': {'name': 'listview'}, 'nullable': true, 'children': " ITEM "}",
      "{'name': 'l', 'type': {'name': 'largelistview'}, 'nullable': true, 'children': " ITEM "}"};
  static const char *const cols[4] = {
      "{'name': 'l', 'count': 4, 'VALIDITY': [1,0,1,1], 'OFFSET': [0,2,2,2,4], 'children': "
      "[{'name': 'item', 'count': 4, 'VALIDITY': [1,1,1,0], 'DATA': [1,2,3,0]}]}",
      "{'name': 'l', 'count': 4, 'VALIDITY': [1,0,1,1], 'OFFSET': ['0','2','2','2','4'], "
      "'children': [{'name': 'item', 'count': 4, 'VALIDITY': [1,1,1,0], 'DATA': [1,2,3,0]}]}",
      "{'name': 'l', 'count': 4, 'VALIDITY': [1,0,1,1], 'OFFSET': [0,2,2,2], 'SIZE': [2,0,0,2], "
      "'children': [{'name': 'item', 'count': 4, 'VALIDITY': [1,1,1,0], 'DATA': [1,2,3,0]}]}",
      "{'name': 'l', 'count': 4, 'VALIDITY': [1,0,1,1], 'OFFSET': ['0','2','2','2'], "
      "'SIZE': ['2','0','0','2'], 'children': [{'name': 'item', 'count': 4, "
      "'VALIDITY': [1,1,1,0], 'DATA': [1,2,3,0]}]}"};
  for (int k = 0; k < 4; k++) {
    jcase c;
    QV_REQUIRE(jload(&c, fields[k], 4, cols[k], NULL));
    qv_builder *b = new_builder(c.type);
    qv_builder *item = qv_builder_child(b, 0);
    QV_REQUIRE(item != NULL);
    QV_CHECK(qv_builder_child(b, 1) == NULL);
    /* qv_builder_type: the type given (the list) and its child's type */
    QV_CHECK(qv_type_equals(qv_builder_type(b), c.type, true));
    QV_CHECK(qv_type_equals(qv_builder_type(item), c.type->children[0].type, true));
    OK(qv_builder_begin_list(b, E));
    OK(qv_builder_append_int(item, 1, E));
    OK(qv_builder_append_int(item, 2, E));
    OK(qv_builder_end_list(b, E));
    OK(qv_builder_append_null(b, E));
    OK(qv_builder_begin_list(b, E));
    OK(qv_builder_end_list(b, E));
    OK(qv_builder_begin_list(b, E));
    OK(qv_builder_append_int(item, 3, E));
    OK(qv_builder_append_null(item, E));
    OK(qv_builder_end_list(b, E));
    qv_array_unref(finish_equal(b, c.want, fields[k]));
    qv_builder_free(b);
    jfree(&c);
  }

  /* fixed_size_list<int32>[2]: [[1, 2], null, [null, 4]] */
  jcase c;
  QV_REQUIRE(jload(&c,
                   "{'name': 'f', 'type': {'name': 'fixedsizelist', 'listSize': 2}, "
                   "'nullable': true, 'children': " ITEM "}",
                   3,
                   "{'name': 'f', 'count': 3, 'VALIDITY': [1,0,1], 'children': [{'name': "
                   "'item', 'count': 6, 'VALIDITY': [1,1,0,0,0,1], 'DATA': [1,2,0,0,0,4]}]}",
                   NULL));
  qv_builder *b = new_builder(c.type);
  qv_builder *item = qv_builder_child(b, 0);
  OK(qv_builder_begin_list(b, E));
  OK(qv_builder_append_int(item, 1, E));
  OK(qv_builder_append_int(item, 2, E));
  OK(qv_builder_end_list(b, E));
  OK(qv_builder_append_null(b, E)); /* puts two nulls into the child */
  OK(qv_builder_begin_list(b, E));
  OK(qv_builder_append_null(item, E));
  FAILS(qv_builder_end_list(b, E), QV_EARG,
        "builder (fixed_size_list<item: int32>[2]): end_list: a fixed_size_list element "
        "takes 2 values, found 1");
  OK(qv_builder_append_int(item, 4, E));
  OK(qv_builder_end_list(b, E));
  qv_array_unref(finish_equal(b, c.want, "fsl"));
  qv_builder_free(b);
  jfree(&c);

  /* map<utf8, int32>: [{a: 1, b: null}, null, {}] */
  QV_REQUIRE(jload(&c,
                   "{'name': 'm', 'type': {'name': 'map', 'keysSorted': false}, "
                   "'nullable': true, 'children': [{'name': 'entries', 'type': {'name': "
                   "'struct'}, 'nullable': false, 'children': [{'name': 'key', 'type': "
                   "{'name': 'utf8'}, 'nullable': false, 'children': []}, {'name': 'value', "
                   "'type': " INT(32, true) ", 'nullable': true, 'children': []}]}]}",
                   3,
                   "{'name': 'm', 'count': 3, 'VALIDITY': [1,0,1], 'OFFSET': [0,2,2,2], "
                   "'children': [{'name': 'entries', 'count': 2, 'VALIDITY': [1,1], "
                   "'children': [{'name': 'key', 'count': 2, 'VALIDITY': [1,1], "
                   "'OFFSET': [0,1,2], 'DATA': ['a','b']}, {'name': 'value', 'count': 2, "
                   "'VALIDITY': [1,0], 'DATA': [1,0]}]}]}",
                   NULL));
  b = new_builder(c.type);
  qv_builder *entries = qv_builder_child(b, 0);
  qv_builder *key = qv_builder_child(entries, 0), *val = qv_builder_child(entries, 1);
  OK(qv_builder_begin_list(b, E));
  OK(qv_builder_begin_struct(entries, E));
  OK(qv_builder_append_string(key, "a", E));
  OK(qv_builder_append_int(val, 1, E));
  OK(qv_builder_end_struct(entries, E));
  OK(qv_builder_append_string(key, "b", E)); /* the columnar way */
  OK(qv_builder_append_null(val, E));
  OK(qv_builder_append_structs(entries, 1, E));
  FAILS(qv_builder_append_null(key, E), QV_EARG,
        "builder 'entries.key' (string): append_null: the field is not nullable");
  FAILS(qv_builder_append_null(entries, E), QV_EARG,
        "builder 'entries' (struct<key: string not null, value: int32>): append_null: the "
        "field is not nullable");
  OK(qv_builder_end_list(b, E));
  OK(qv_builder_append_null(b, E));
  OK(qv_builder_begin_list(b, E));
  OK(qv_builder_end_list(b, E));
  qv_array_unref(finish_equal(b, c.want, "map"));
  qv_builder_free(b);
  jfree(&c);
}

static void test_struct(void) {
  /* struct<x: int32, s: utf8>: [{1, 'a'}, null, {null, 'c'}, {4, null}] */
  jcase c;
  QV_REQUIRE(jload(&c,
                   "{'name': 'st', 'type': {'name': 'struct'}, 'nullable': true, "
                   "'children': [" F("x", INT(32, true)) ", " F("s", "{'name': 'utf8'}") "]}",
                   4,
                   "{'name': 'st', 'count': 4, 'VALIDITY': [1,0,1,1], 'children': ["
                   "{'name': 'x', 'count': 4, 'VALIDITY': [1,0,0,1], 'DATA': [1,0,0,4]}, "
                   "{'name': 's', 'count': 4, 'VALIDITY': [1,0,1,0], 'OFFSET': [0,1,1,2,2], "
                   "'DATA': ['a','','c','']}]}",
                   NULL));
  qv_builder *b = new_builder(c.type);
  qv_builder *x = qv_builder_child(b, 0), *s = qv_builder_child(b, 1);
  OK(qv_builder_begin_struct(b, E));
  OK(qv_builder_append_int(x, 1, E));
  OK(qv_builder_append_string(s, "a", E));
  OK(qv_builder_end_struct(b, E));
  OK(qv_builder_append_null(b, E));
  OK(qv_builder_begin_struct(b, E));
  OK(qv_builder_append_null(x, E));
  FAILS(qv_builder_end_struct(b, E), QV_EARG,
        "builder (struct<x: int32, s: string>): end_struct: child 's' holds 0 new values, "
        "expected 1");
  FAILS(qv_builder_begin_struct(b, E), QV_EARG,
        "builder (struct<x: int32, s: string>): begin_struct: an element is already open "
        "(call end_struct first)");
  FAILS(qv_builder_finish(b, NULL, E), QV_EARG, "qv_builder_finish: NULL argument");
  qv_array *a = NULL;
  FAILS(qv_builder_finish(b, &a, E), QV_EARG,
        "builder (struct<x: int32, s: string>): finish: an element is open (call end_struct "
        "first)");
  OK(qv_builder_append_string(s, "c", E));
  OK(qv_builder_end_struct(b, E));
  OK(qv_builder_append_int(x, 4, E));
  OK(qv_builder_append_null(s, E));
  FAILS(qv_builder_append_structs(b, 2, E), QV_EARG,
        "builder (struct<x: int32, s: string>): append_structs: child 'x' holds 1 new values, "
        "expected 2");
  FAILS(qv_builder_finish(b, &a, E), QV_EARG,
        "builder (struct<x: int32, s: string>): finish: child 'x' holds 4 values, expected 3: "
        "values were appended to it outside begin_struct/end_struct (or before "
        "append_structs)");
  FAILS(qv_builder_finish(x, &a, E), QV_EARG,
        "builder 'x' (int32): finish: a child builder is finished with its parent");
  OK(qv_builder_append_structs(b, 1, E));
  qv_array_unref(finish_equal(b, c.want, "struct"));
  /* after finish the children are empty too */
  QV_CHECK_EQ_INT(qv_builder_length(x), 0);
  OK(qv_builder_append_structs(b, 0, E));
  a = finish_equal(b, NULL, "empty struct");
  QV_CHECK(a && a->length == 0 && a->children[0]->length == 0);
  qv_array_unref(a);
  qv_builder_free(b);
  jfree(&c);
}

static void test_unions(void) {
  for (int dense = 0; dense < 2; dense++) {
    char field[400];
    snprintf(field, sizeof field,
             "{'name': 'u', 'type': {'name': 'union', 'mode': '%s', "
             "'typeIds': [5, 2]}, 'nullable': true, 'children': [" F("i", INT(32, true)) ", " F(
                 "s", "{'name': 'utf8'}") "]}",
             dense ? "DENSE" : "SPARSE");
    /* values: 7 (i), 'x' (s), null (i: first child), 'y' (s) */
    const char *col =
        dense ? "{'name': 'u', 'count': 4, 'TYPE_ID': [5, 2, 5, 2], 'OFFSET': [0, 0, 1, 1], "
                "'children': [{'name': 'i', 'count': 2, 'VALIDITY': [1, 0], 'DATA': [7, 0]}, "
                "{'name': 's', 'count': 2, 'VALIDITY': [1, 1], 'OFFSET': [0, 1, 2], "
                "'DATA': ['x', 'y']}]}"
              : "{'name': 'u', 'count': 4, 'TYPE_ID': [5, 2, 5, 2], 'children': [{'name': "
                "'i', 'count': 4, 'VALIDITY': [1, 0, 0, 0], 'DATA': [7, 0, 0, 0]}, {'name': "
                "'s', 'count': 4, 'VALIDITY': [0, 1, 0, 1], 'OFFSET': [0, 0, 1, 1, 2], "
                "'DATA': ['', 'x', '', 'y']}]}";
    jcase c;
    QV_REQUIRE(jload(&c, field, 4, col, NULL));
    qv_builder *b = new_builder(c.type);
    qv_builder *i = qv_builder_child(b, 0), *s = qv_builder_child(b, 1);
    OK(qv_builder_begin_union(b, 5, E));
    OK(qv_builder_append_int(i, 7, E));
    OK(qv_builder_end_union(b, E));
    OK(qv_builder_begin_union(b, 2, E));
    OK(qv_builder_append_string(s, "x", E));
    OK(qv_builder_append_int(i, 8, E));
    FAILS(qv_builder_end_union(b, E), QV_EARG,
          dense ? "builder (dense_union<i: int32=5, s: string=2>): end_union: child 'i' got 1 "
                  "values, but the element holds child 's'"
                : "builder (sparse_union<i: int32=5, s: string=2>): end_union: child 'i' got "
                  "1 values, but the element holds child 's'");
    qv_array *junk = NULL;
    FAILS(qv_builder_finish(b, &junk, E), QV_EARG,
          dense ? "builder (dense_union<i: int32=5, s: string=2>): finish: an element is open "
                  "(call end_union first)"
                : "builder (sparse_union<i: int32=5, s: string=2>): finish: an element is "
                  "open (call end_union first)");
    qv_builder_free(b); /* start again, correctly */
    b = new_builder(c.type);
    i = qv_builder_child(b, 0);
    s = qv_builder_child(b, 1);
    FAILS(qv_builder_begin_union(b, 3, E), QV_EARG,
          dense ? "builder (dense_union<i: int32=5, s: string=2>): begin_union: type code 3 "
                  "is not one of the union's codes"
                : "builder (sparse_union<i: int32=5, s: string=2>): begin_union: type code 3 "
                  "is not one of the union's codes");
    OK(qv_builder_begin_union(b, 5, E));
    OK(qv_builder_append_int(i, 7, E));
    OK(qv_builder_end_union(b, E));
    OK(qv_builder_begin_union(b, 2, E));
    OK(qv_builder_append_string(s, "x", E));
    OK(qv_builder_end_union(b, E));
    OK(qv_builder_append_null(b, E));
    OK(qv_builder_begin_union(b, 2, E));
    OK(qv_builder_append_string(s, "y", E));
    OK(qv_builder_end_union(b, E));
    QV_CHECK_EQ_INT(qv_builder_null_count(b), 0);
    qv_array_unref(finish_equal(b, c.want, field));
    qv_builder_free(b);
    jfree(&c);
  }
}

static void test_dictionary(void) {
  const char *field =
      "{'name': 'd', 'type': {'name': 'utf8'}, 'nullable': true, 'children': [], "
      "'dictionary': {'id': 0, 'indexType': " INT(8, true) ", 'isOrdered': false}}";
  const char *dicts =
      "[{'id': 0, 'data': {'count': 3, 'columns': [{'name': 'DICT0', "
      "'count': 3, 'VALIDITY': [1,1,1], 'OFFSET': [0,3,8,12], "
      "'DATA': ['red', 'green', 'blue']}]}}]";
  jcase c;
  QV_REQUIRE(jload(&c, field, 6,
                   "{'name': 'd', 'count': 6, 'VALIDITY': [1,1,0,1,1,1], "
                   "'DATA': [0, 1, 0, 0, 2, 1]}",
                   dicts));
  /* by value */
  qv_builder *b = new_builder(c.type);
  const char *words[6] = {"red", "green", NULL, "red", "blue", "green"};
  for (int k = 0; k < 6; k++) {
    if (words[k]) OK(qv_builder_append_string(b, words[k], E));
    else OK(qv_builder_append_null(b, E));
  }
  FAILS(qv_builder_append_int(b, 1, E), QV_ETYPE,
        "builder (dictionary<values=string, indices=int8, ordered=0>): append_int: wrong kind "
        "of value for dictionary<values=string, indices=int8, ordered=0> (it takes the "
        "appends of its value type (by value), append_index, append_null)");
  qv_array *first = finish_equal(b, c.want, "dictionary by value");
  /* the dictionary is kept: a second array extends it (a prefix relation) */
  OK(qv_builder_append_string(b, "blue", E));
  OK(qv_builder_append_string(b, "violet", E));
  qv_array *second = finish_equal(b, NULL, "dictionary, second");
  if (first && second) {
    QV_CHECK_EQ_INT(first->dictionary->length, 3);
    QV_CHECK_EQ_INT(second->dictionary->length, 4);
    QV_CHECK_EQ_INT(((int8_t *)second->buffers[1]->data)[0], 2);
    QV_CHECK_EQ_INT(((int8_t *)second->buffers[1]->data)[1], 3);
    qv_array *prefix = NULL;
    OK(qv_array_slice(second->dictionary, 0, 3, &prefix, E));
    QV_CHECK(qv_array_equals(first->dictionary, prefix, NULL));
    qv_array_unref(prefix);
  }
  /* mixing: values appended directly make appends by value fail */
  OK(qv_builder_append_string(qv_builder_values(b), "cyan", E));
  FAILS(qv_builder_append_string(b, "red", E), QV_EARG,
        "builder (dictionary<values=string, indices=int8, ordered=0>): append_string: the "
        "dictionary holds values appended through qv_builder_values (by index); appends by "
        "value cannot be mixed with them");
  qv_array_unref(first);
  qv_array_unref(second);
  qv_builder_free(b);

  /* by index */
  b = new_builder(c.type);
  qv_builder *v = qv_builder_values(b);
  QV_CHECK(qv_builder_child(b, 0) == NULL);
  OK(qv_builder_append_string(v, "red", E));
  OK(qv_builder_append_string(v, "green", E));
  OK(qv_builder_append_string(v, "blue", E));
  int idx[6] = {0, 1, -1, 0, 2, 1};
  for (int k = 0; k < 6; k++) {
    if (idx[k] < 0) OK(qv_builder_append_null(b, E));
    else OK(qv_builder_append_index(b, idx[k], E));
  }
  FAILS(qv_builder_append_index(b, 128, E), QV_ERANGE,
        "builder (dictionary<values=string, indices=int8, ordered=0>): append_index: index "
        "128 is out of range for int8 indices");
  qv_array_unref(finish_equal(b, c.want, "dictionary by index"));
  OK(qv_builder_append_index(b, 5, E));
  qv_array *a = NULL;
  FAILS(qv_builder_finish(b, &a, E), QV_ERANGE,
        "builder (dictionary<values=string, indices=int8, ordered=0>): finish: index 5 is out "
        "of range for a dictionary of 3 values");
  qv_builder_free(b);
  jfree(&c);

  /* a full int8 dictionary */
  qv_type *t = qv_type_new(QV_DICTIONARY);
  t->index_type = qv_type_new(QV_INT8);
  t->value_type = qv_type_new(QV_INT64);
  b = new_builder(t);
  for (int k = 0; k < 128; k++) OK(qv_builder_append_int(b, k * 1000, E));
  OK(qv_builder_append_int(b, 5000, E)); /* already there */
  FAILS(qv_builder_append_int(b, -1, E), QV_ERANGE,
        "builder (dictionary<values=int64, indices=int8, ordered=0>): append_int: the "
        "dictionary is full: int8 indices address 128 values");
  a = finish_equal(b, NULL, "int dictionary");
  QV_CHECK(a && a->length == 129 && a->dictionary->length == 128);
  if (a) QV_CHECK_EQ_INT(((int8_t *)a->buffers[1]->data)[128], 5);
  qv_array_unref(a);
  qv_builder_free(b);
  qv_type_unref(t);
}

static void test_run_end_encoded(void) {
  const char *field =
      "{'name': 'r', 'type': {'name': 'runendencoded'}, 'nullable': true, 'children': ["
      "{'name': 'run_ends', 'type': " INT(16, true) ", 'nullable': false, 'children': []}, " F(
          "values", "{'name': 'utf8'}") "]}";
  /* a a a null null b a a -> runs (3 a) (5 null) (6 b) (8 a) */
  jcase c;
  QV_REQUIRE(jload(&c, field, 8,
                   "{'name': 'r', 'count': 8, 'children': [{'name': 'run_ends', 'count': 4, "
                   "'VALIDITY': [1,1,1,1], 'DATA': [3, 5, 6, 8]}, {'name': 'values', "
                   "'count': 4, 'VALIDITY': [1,0,1,1], 'OFFSET': [0,1,1,2,3], "
                   "'DATA': ['a', '', 'b', 'a']}]}",
                   NULL));
  qv_builder *b = new_builder(c.type);
  const char *vals[8] = {"a", "a", "a", NULL, NULL, "b", "a", "a"};
  for (int k = 0; k < 8; k++) {
    if (vals[k]) OK(qv_builder_append_string(b, vals[k], E));
    else OK(qv_builder_append_null(b, E));
  }
  qv_array_unref(finish_equal(b, c.want, "ree by value"));
  /* explicit runs */
  qv_builder *v = qv_builder_values(b);
  OK(qv_builder_begin_run(b, 3, E));
  OK(qv_builder_append_string(v, "a", E));
  OK(qv_builder_end_run(b, E));
  OK(qv_builder_begin_run(b, 2, E));
  OK(qv_builder_append_null(v, E));
  OK(qv_builder_end_run(b, E));
  OK(qv_builder_append_string(b, "b", E));
  OK(qv_builder_begin_run(b, 2, E));
  OK(qv_builder_append_string(v, "a", E));
  OK(qv_builder_append_string(v, "a", E));
  FAILS(qv_builder_end_run(b, E), QV_EARG,
        "builder (run_end_encoded<run_ends: int16 not null, values: string>): end_run: a run takes "
        "exactly one value in child 'values', found 2");
  qv_builder_free(b);
  b = new_builder(c.type);
  v = qv_builder_values(b);
  FAILS(qv_builder_begin_run(b, 0, E), QV_EARG,
        "builder (run_end_encoded<run_ends: int16 not null, values: string>): begin_run: a run has "
        "at "
        "least 1 element, found 0");
  FAILS(
      qv_builder_begin_run(b, 40000, E), QV_ERANGE,
      "builder (run_end_encoded<run_ends: int16 not null, values: string>): begin_run: 40000 more "
      "elements would pass 32767, the largest run end of int16");
  OK(qv_builder_begin_run(b, 3, E));
  OK(qv_builder_append_string(v, "a", E));
  OK(qv_builder_end_run(b, E));
  OK(qv_builder_append_nulls(b, 2, E));
  OK(qv_builder_append_string(b, "b", E));
  OK(qv_builder_begin_run(b, 2, E));
  OK(qv_builder_append_string(v, "a", E));
  OK(qv_builder_end_run(b, E));
  qv_array_unref(finish_equal(b, c.want, "ree by run"));
  OK(qv_builder_append_string(v, "stray", E));
  FAILS(qv_builder_append_string(b, "x", E), QV_EARG,
        "builder (run_end_encoded<run_ends: int16 not null, values: string>): append_string: child "
        "'values' holds 1 values, expected 0: values were appended to it outside "
        "begin_run/end_run");
  qv_builder_free(b);
  jfree(&c);
}

static void test_null_type_and_misc_errors(void) {
  jcase c;
  QV_REQUIRE(jload(&c, F("n", "{'name': 'null'}"), 3, "{'name': 'n', 'count': 3}", NULL));
  qv_builder *b = new_builder(c.type);
  OK(qv_builder_append_null(b, E));
  OK(qv_builder_append_nulls(b, 2, E));
  FAILS(qv_builder_append_bool(b, true, E), QV_ETYPE,
        "builder (null): append_bool: wrong kind of value for null (it takes append_null)");
  FAILS(qv_builder_append_nulls(b, -1, E), QV_EARG,
        "builder (null): append_nulls: negative count -1");
  qv_array_unref(finish_equal(b, c.want, "null"));
  qv_builder_free(b);
  jfree(&c);

  qv_type *l = qv_type_list_of(QV_LIST, qv_type_new(QV_INT32));
  b = new_builder(l);
  qv_builder *item = qv_builder_child(b, 0);
  FAILS(qv_builder_end_list(b, E), QV_EARG,
        "builder (list<item: int32>): end_list: no element is open (call begin_list first)");
  FAILS(qv_builder_append_int(b, 1, E), QV_ETYPE,
        "builder (list<item: int32>): append_int: wrong kind of value for list<item: int32> "
        "(it takes begin_list/end_list, append_null)");
  FAILS(qv_builder_begin_struct(b, E), QV_ETYPE,
        "builder (list<item: int32>): begin_struct: wrong kind of value for list<item: "
        "int32> (it takes begin_list/end_list, append_null)");
  OK(qv_builder_append_int(item, 1, E)); /* outside an element */
  FAILS(qv_builder_begin_list(b, E), QV_EARG,
        "builder (list<item: int32>): begin_list: child 'item' holds 1 values, expected 0: "
        "values were appended to it outside begin_list/end_list");
  FAILS(qv_builder_append_null(b, E), QV_EARG,
        "builder (list<item: int32>): append_null: child 'item' holds 1 values, expected 0: "
        "values were appended to it outside begin_list/end_list");
  qv_builder_free(b);
  b = new_builder(l);
  OK(qv_builder_begin_list(b, E));
  FAILS(qv_builder_append_null(b, E), QV_EARG,
        "builder (list<item: int32>): append_null: an element is open (call end_list first)");
  qv_builder_free(b);
  /* nested list<list<int32>>: the inner element must be closed */
  qv_type *ll = qv_type_list_of(QV_LIST, qv_type_ref(l));
  b = new_builder(ll);
  qv_builder *inner = qv_builder_child(b, 0);
  OK(qv_builder_begin_list(b, E));
  OK(qv_builder_begin_list(inner, E));
  FAILS(qv_builder_end_list(b, E), QV_EARG,
        "builder (list<item: list<item: int32>>): end_list: child 'item' has an element still "
        "open (call end_list on it)");
  OK(qv_builder_append_int(qv_builder_child(inner, 0), 3, E));
  OK(qv_builder_end_list(inner, E));
  OK(qv_builder_end_list(b, E));
  qv_array *a = finish_equal(b, NULL, "list<list>");
  QV_CHECK(a && a->length == 1 && a->children[0]->length == 1 &&
           a->children[0]->children[0]->length == 1);
  qv_array_unref(a);
  qv_builder_free(b);
  qv_type_unref(ll);
  qv_type_unref(l);

  /* integer ranges */
  qv_type *t = qv_type_new(QV_INT8);
  b = new_builder(t);
  FAILS(qv_builder_append_int(b, 128, E), QV_ERANGE,
        "builder (int8): append_int: value 128 is out of range for int8");
  FAILS(qv_builder_append_int(b, -129, E), QV_ERANGE,
        "builder (int8): append_int: value -129 is out of range for int8");
  FAILS(qv_builder_append_uint(b, 200, E), QV_ERANGE,
        "builder (int8): append_uint: value 200 is out of range for int8");
  FAILS(qv_builder_append_string(b, "12", E), QV_EARG,
        "builder (int8): append_string: int8 takes values of 1 bytes, found 2");
  QV_CHECK_EQ_INT(qv_builder_length(b), 0);
  qv_builder_free(b);
  qv_type_unref(t);
  FAILS(qv_builder_new(NULL, &b, E), QV_EARG, "qv_builder_new: NULL type");
  t = qv_type_new(QV_SPARSE_UNION);
  QV_CHECK(qv_type_add_child(t, "a", true, qv_type_new(QV_INT8), NULL, NULL) == QV_OK);
  FAILS(qv_builder_new(t, &b, E), QV_EARG,
        "builder (sparse_union<a: int8=0>): qv_builder_new: the union type has no type codes");
  qv_type_unref(t);
}

/* ---- everything nested, through the writer ----------------------------- */

/* A record batch built column-wise (append_structs) with a nested column
 * list<struct<k: dictionary<int16, utf8>, v: large_list_view<float16>>>,
 * written with the IPC writer in both formats and read back equal. */
static void test_batch_through_writer(void) {
  qv_type *dict = qv_type_new(QV_DICTIONARY);
  dict->index_type = qv_type_new(QV_INT16);
  dict->value_type = qv_type_new(QV_STRING);
  qv_type *inner = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(inner, "k", true, dict, NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(inner, "v", true,
                             qv_type_list_of(QV_LARGE_LIST_VIEW, qv_type_new(QV_HALF_FLOAT)), NULL,
                             NULL) == QV_OK);
  qv_type *st = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(st, "id", false, qv_type_new(QV_INT64), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "nested", true, qv_type_list_of(QV_LIST, inner), NULL, NULL) ==
           QV_OK);
  qv_schema *schema = qv_schema_new(qv_type_ref(st));
  qv_builder *b = new_builder(st);
  qv_builder *id = qv_builder_child(b, 0), *nested = qv_builder_child(b, 1);
  qv_builder *elem = qv_builder_child(nested, 0);
  qv_builder *k = qv_builder_child(elem, 0), *v = qv_builder_child(elem, 1);
  qv_builder *vi = qv_builder_child(v, 0);
  const char *words[3] = {"x", "y", "z"};
  for (int64_t r = 0; r < 50; r++) {
    OK(qv_builder_append_int(id, r, E));
    if (r % 7 == 3) {
      OK(qv_builder_append_null(nested, E));
      continue;
    }
    OK(qv_builder_begin_list(nested, E));
    for (int64_t e = 0; e < r % 3; e++) {
      OK(qv_builder_begin_struct(elem, E));
      if ((r + e) % 5 == 0) OK(qv_builder_append_null(k, E));
      else OK(qv_builder_append_string(k, words[(r + e) % 3], E));
      OK(qv_builder_begin_list(v, E));
      for (int64_t h = 0; h < e + 1; h++) OK(qv_builder_append_double(vi, (double)h / 4, E));
      OK(qv_builder_end_list(v, E));
      OK(qv_builder_end_struct(elem, E));
    }
    OK(qv_builder_end_list(nested, E));
  }
  OK(qv_builder_append_structs(b, 50, E));
  qv_array *batch = finish_equal(b, NULL, "batch");
  QV_REQUIRE(batch != NULL);
  QV_CHECK(batch->buffers[0] == NULL); /* no nulls: no validity */
  char path[] = "/tmp/qv_test_builder_XXXXXX";
  int fd = mkstemp(path);
  QV_REQUIRE(fd >= 0);
  close(fd);
  for (int f = 0; f < 2; f++) {
    qv_write_options o = {f ? QV_FORMAT_STREAM : QV_FORMAT_FILE, QV_COMPRESSION_ZSTD, 0, 0, 16, 0};
    qv_writer *w = NULL;
    OK(qv_writer_open_path(path, schema, &o, &w, E));
    OK(qv_writer_write_batch(w, batch, E));
    OK(qv_writer_close(w, E));
    qv_read_options ro = {QV_VALIDATE_FULL, true, 0};
    qv_reader *r = NULL;
    OK(qv_reader_open_path(path, &ro, &r, E));
    int64_t row = 0;
    for (;;) {
      qv_array *got = NULL;
      OK(qv_reader_next(r, &got, E));
      if (got == NULL) break;
      qv_array *want = NULL;
      OK(qv_array_slice(batch, row, got->length, &want, E));
      qv_error diff;
      bool eq = qv_array_equals(want, got, &diff);
      if (!eq) fprintf(stderr, "rows %lld+: %s\n", (long long)row, diff.message);
      QV_CHECK(eq);
      row += got->length;
      qv_array_unref(want);
      qv_array_unref(got);
    }
    QV_CHECK_EQ_INT(row, 50);
    qv_reader_close(r);
  }
  unlink(path);
  qv_array_unref(batch);
  qv_builder_free(b);
  qv_schema_unref(schema);
  qv_type_unref(st);
}

int main(void) {
  QV_RUN(test_integers_bool_floats);
  QV_RUN(test_decimals);
  QV_RUN(test_temporal_and_intervals);
  QV_RUN(test_binary_and_strings);
  QV_RUN(test_views);
  QV_RUN(test_lists);
  QV_RUN(test_struct);
  QV_RUN(test_unions);
  QV_RUN(test_dictionary);
  QV_RUN(test_run_end_encoded);
  QV_RUN(test_null_type_and_misc_errors);
  QV_RUN(test_batch_through_writer);
  return QV_TEST_END();
}
