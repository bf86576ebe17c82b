/*
 * test_text_formats.c — the CSV and JSON Lines readers' options and edge
 * cases through the C API (the inference itself is checked against
 * pyarrow in tests/python/test_csv_oracle.py / test_jsonl_oracle.py):
 * delimiter, escape, no header, column names, null strings, explicit
 * types, tiny blocks (the speculative block starts) against one block, the
 * JSON explicit schema, and the writers read back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quiver/csv.h"
#include "quiver/jsonl.h"
#include "quiver/print.h"
#include "qv_test.h"

static qv_error E;

/* Every row of a result as JSON lines, for comparisons. */
static char *rows_json(const qv_read_result *r) {
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  for (int64_t b = 0; b < r->n_batches; b++)
    for (int64_t i = 0; i < r->batches[b]->length; i++) {
      if (qv_format_row_json(r->batches[b], i, &sb, &E) != QV_OK) abort();
      qv_strbuf_append_char(&sb, '\n', NULL);
    }
  char *s = strdup(qv_strbuf_cstr(&sb));
  qv_strbuf_reset(&sb);
  return s;
}

static char *type_of(const qv_read_result *r, int32_t c) {
  static char buf[128];
  qv_type_to_string(qv_schema_field(r->schema, c)->type, buf, sizeof buf);
  return buf;
}

static void test_csv_options(void) {
  qv_csv_read_options o;
  memset(&o, 0, sizeof o);
  qv_read_result r;
  /* delimiter and escape */
  o.delimiter = ';';
  o.escape = '\\';
  const char *t1 = "a;b\nx\\;y;\"q\\\"r\"\n";
  QV_REQUIRE(qv_csv_read_buffer(t1, (int64_t)strlen(t1), "t1", &o, &r, &E) == QV_OK);
  char *j = rows_json(&r);
  QV_CHECK_EQ_STR(j, "{\"a\":\"x;y\",\"b\":\"q\\\"r\"}\n");
  free(j);
  qv_read_result_reset(&r);
  /* no header: f0, f1 */
  memset(&o, 0, sizeof o);
  o.no_header = true;
  const char *t2 = "1,x\n2,y\n";
  QV_REQUIRE(qv_csv_read_buffer(t2, 8, "t2", &o, &r, &E) == QV_OK);
  QV_CHECK_EQ_STR(qv_schema_field(r.schema, 0)->name, "f0");
  QV_CHECK_EQ_STR(qv_schema_field(r.schema, 1)->name, "f1");
  QV_CHECK_EQ_INT(r.n_rows, 2);
  qv_read_result_reset(&r);
  /* column names: the first row is data */
  const char *names[] = {"n", "s"};
  memset(&o, 0, sizeof o);
  o.column_names = names;
  o.n_column_names = 2;
  QV_REQUIRE(qv_csv_read_buffer(t2, 8, "t2", &o, &r, &E) == QV_OK);
  QV_CHECK_EQ_STR(qv_schema_field(r.schema, 1)->name, "s");
  QV_CHECK_EQ_INT(r.n_rows, 2);
  QV_CHECK_EQ_STR(type_of(&r, 0), "int64");
  qv_read_result_reset(&r);
  /* null strings of our own: "-" null ("NA" no more); strings keep them */
  const char *nulls[] = {"-"};
  memset(&o, 0, sizeof o);
  o.null_values = nulls;
  o.n_null_values = 1;
  const char *t3 = "a,b\n1,-\n-,NA\n";
  QV_REQUIRE(qv_csv_read_buffer(t3, (int64_t)strlen(t3), "t3", &o, &r, &E) == QV_OK);
  j = rows_json(&r);
  QV_CHECK_EQ_STR(j, "{\"a\":1,\"b\":\"-\"}\n{\"a\":null,\"b\":\"NA\"}\n");
  QV_CHECK_EQ_STR(type_of(&r, 0), "int64");
  free(j);
  qv_read_result_reset(&r);
}

static void test_csv_explicit_types(void) {
  qv_type *i32 = qv_type_new(QV_INT32), *str = qv_type_new(QV_STRING);
  qv_type *ts = qv_type_timestamp(QV_MILLI, "UTC");
  const char *tn[] = {"a", "b", "c"};
  qv_type *const types[] = {i32, str, ts};
  qv_csv_read_options o;
  memset(&o, 0, sizeof o);
  o.type_names = tn;
  o.types = types;
  o.n_types = 3;
  qv_read_result r;
  const char *t = "a,b,c\n1,2,2020-01-01T00:00:00.5Z\n,3,\n";
  QV_REQUIRE(qv_csv_read_buffer(t, (int64_t)strlen(t), "t", &o, &r, &E) == QV_OK);
  QV_CHECK_EQ_STR(type_of(&r, 0), "int32");
  QV_CHECK_EQ_STR(type_of(&r, 1), "string");
  QV_CHECK_EQ_STR(type_of(&r, 2), "timestamp[ms, tz=UTC]");
  char *j = rows_json(&r);
  QV_CHECK(strstr(j, "\"a\":null,\"b\":\"3\"") != NULL);
  free(j);
  qv_read_result_reset(&r);
  /* a value that does not convert: file, line, column */
  const char *bad = "a,b,c\n1,x,\n99999999999,y,\n";
  QV_CHECK(qv_csv_read_buffer(bad, (int64_t)strlen(bad), "bad.csv", &o, &r, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "bad.csv: line 3, column 1") != NULL);
  QV_CHECK(strstr(E.message, "int32") != NULL);
  QV_CHECK(r.schema == NULL && r.n_batches == 0);
  qv_type_unref(i32);
  qv_type_unref(str);
  qv_type_unref(ts);
}

/* Tiny blocks (most block starts guessed inside quoted newlines) give the
 * same rows and types as one block: the brute-force oracle. */
static void test_csv_tiny_blocks(void) {
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_strbuf_append_str(&sb, "id,text,x\n", NULL);
  for (int i = 0; i < 500; i++)
    qv_strbuf_printf(&sb, NULL, "%d,\"line %d\n\"\"%s\"\"\nend\",%s\n", i, i, i % 7 ? "q" : "a,b",
                     i == 450 ? "2.5" : "7");
  for (int threads = 1; threads <= 3; threads++) {
    qv_csv_read_options o;
    memset(&o, 0, sizeof o);
    qv_read_result one, tiny;
    QV_REQUIRE(qv_csv_read_buffer(sb.data, sb.len, "x", &o, &one, &E) == QV_OK);
    o.block_size = 37;
    o.threads = threads;
    QV_REQUIRE(qv_csv_read_buffer(sb.data, sb.len, "x", &o, &tiny, &E) == QV_OK);
    QV_CHECK(tiny.n_batches > 10);
    QV_CHECK_EQ_INT(tiny.n_rows, 500);
    QV_CHECK(qv_schema_equals(one.schema, tiny.schema, true));
    QV_CHECK_EQ_STR(type_of(&tiny, 2), "double");
    char *a = rows_json(&one), *b = rows_json(&tiny);
    QV_CHECK_EQ_STR(a, b);
    free(a);
    free(b);
    qv_read_result_reset(&one);
    qv_read_result_reset(&tiny);
  }
  qv_strbuf_reset(&sb);
}

static void test_csv_errors(void) {
  qv_read_result r;
  QV_CHECK(qv_csv_read_buffer("", 0, "empty.csv", NULL, &r, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "empty.csv: empty CSV file") != NULL);
  const char *t = "a,b\n1,2\n3,4,5\n";
  QV_CHECK(qv_csv_read_buffer(t, (int64_t)strlen(t), "r.csv", NULL, &r, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message,
                  "r.csv: line 3, column 1: wrong number of fields: expected 2 fields, "
                  "found 3") != NULL);
  qv_csv_read_options o;
  memset(&o, 0, sizeof o);
  o.delimiter = '"';
  QV_CHECK(qv_csv_read_buffer(t, (int64_t)strlen(t), "r.csv", &o, &r, &E) == QV_EARG);
}

static void test_jsonl_schema_and_blocks(void) {
  qv_type *st = qv_type_new(QV_STRUCT);
  QV_REQUIRE(qv_type_add_child(st, "a", true, qv_type_new(QV_INT16), NULL, &E) == QV_OK);
  QV_REQUIRE(qv_type_add_child(st, "t", true, qv_type_timestamp(QV_MICRO, NULL), NULL, &E) ==
             QV_OK);
  qv_schema *s = qv_schema_new(st);
  qv_jsonl_read_options o;
  memset(&o, 0, sizeof o);
  o.schema = s;
  qv_read_result r;
  const char *t = "{\"z\":1,\"a\":5,\"t\":\"2020-01-01 00:00:00.25\"}\n{\"a\":null}\n";
  QV_REQUIRE(qv_jsonl_read_buffer(t, (int64_t)strlen(t), "t", &o, &r, &E) == QV_OK);
  QV_CHECK_EQ_INT(qv_schema_num_fields(r.schema), 3);
  QV_CHECK_EQ_STR(type_of(&r, 0), "int16");
  QV_CHECK_EQ_STR(type_of(&r, 1), "timestamp[us]");
  QV_CHECK_EQ_STR(qv_schema_field(r.schema, 2)->name, "z");
  qv_read_result_reset(&r);
  o.schema_only = true;
  QV_REQUIRE(qv_jsonl_read_buffer(t, (int64_t)strlen(t), "t", &o, &r, &E) == QV_OK);
  QV_CHECK_EQ_INT(qv_schema_num_fields(r.schema), 2);
  char *j = rows_json(&r);
  QV_CHECK_EQ_STR(j, "{\"a\":5,\"t\":\"2020-01-01T00:00:00.250000\"}\n{\"a\":null,\"t\":null}\n");
  free(j);
  qv_read_result_reset(&r);
  const char *big = "{\"a\":70000}\n";
  QV_CHECK(qv_jsonl_read_buffer(big, (int64_t)strlen(big), "big.jsonl", &o, &r, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "big.jsonl: line 1, column 6") != NULL);
  qv_schema_unref(s);
  /* tiny blocks against one block, unification across them */
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  for (int i = 0; i < 300; i++)
    qv_strbuf_printf(&sb, NULL, "{\"i\":%d,\"l\":[%d],\"o\":{\"k%d\":%s}}\n", i, i, i % 3,
                     i == 299 ? "0.5" : "1");
  memset(&o, 0, sizeof o);
  qv_read_result one, tiny;
  QV_REQUIRE(qv_jsonl_read_buffer(sb.data, sb.len, "x", &o, &one, &E) == QV_OK);
  o.block_size = 50;
  o.threads = 2;
  QV_REQUIRE(qv_jsonl_read_buffer(sb.data, sb.len, "x", &o, &tiny, &E) == QV_OK);
  QV_CHECK(tiny.n_batches > 10);
  QV_CHECK(qv_schema_equals(one.schema, tiny.schema, true));
  QV_CHECK_EQ_STR(type_of(&one, 2), "struct<k0: int64, k1: int64, k2: double>");
  char *a = rows_json(&one), *b = rows_json(&tiny);
  QV_CHECK_EQ_STR(a, b);
  free(a);
  free(b);
  qv_read_result_reset(&one);
  qv_read_result_reset(&tiny);
  qv_strbuf_reset(&sb);
  /* deep nesting is refused, not a stack overflow */
  qv_strbuf_init(&sb);
  qv_strbuf_append_str(&sb, "{\"a\":", NULL);
  for (int i = 0; i < 5000; i++) qv_strbuf_append_char(&sb, '[', NULL);
  QV_CHECK(qv_jsonl_read_buffer(sb.data, sb.len, "deep", NULL, &r, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "nesting deeper than 128 levels") != NULL);
  qv_strbuf_reset(&sb);
}

static void test_writers_read_back(void) {
  char dir[] = "/tmp/qv-text-XXXXXX";
  QV_REQUIRE(mkdtemp(dir) != NULL);
  char csv[256], jl[256];
  snprintf(csv, sizeof csv, "%s/o.csv", dir);
  snprintf(jl, sizeof jl, "%s/o.jsonl", dir);
  const char *t = "a,b,c\n1,\"x\"\"y\",2020-01-01\n,\"\",1999-12-31\n";
  qv_read_result r;
  QV_REQUIRE(qv_csv_read_buffer(t, (int64_t)strlen(t), "t", NULL, &r, &E) == QV_OK);
  qv_csv_writer *w = NULL;
  QV_REQUIRE(qv_csv_writer_open(csv, r.schema, NULL, &w, &E) == QV_OK);
  for (int64_t i = 0; i < r.n_batches; i++)
    QV_CHECK(qv_csv_writer_write(w, r.batches[i], &E) == QV_OK);
  QV_REQUIRE(qv_csv_writer_close(w, &E) == QV_OK);
  qv_jsonl_writer *jw = NULL;
  QV_REQUIRE(qv_jsonl_writer_open(jl, &jw, &E) == QV_OK);
  for (int64_t i = 0; i < r.n_batches; i++)
    QV_CHECK(qv_jsonl_writer_write(jw, r.batches[i], &E) == QV_OK);
  QV_REQUIRE(qv_jsonl_writer_close(jw, &E) == QV_OK);
  qv_read_result back;
  QV_REQUIRE(qv_csv_read_path(csv, NULL, &back, &E) == QV_OK);
  QV_CHECK(qv_schema_equals(r.schema, back.schema, true));
  char *a = rows_json(&r), *b = rows_json(&back);
  QV_CHECK_EQ_STR(a, b);
  free(b);
  qv_read_result_reset(&back);
  QV_REQUIRE(qv_jsonl_read_path(jl, NULL, &back, &E) == QV_OK);
  b = rows_json(&back);
  /* JSON: dates come back as timestamp[s] strings of the same day */
  QV_CHECK(strstr(b, "\"c\":\"2020-01-01T00:00:00\"") != NULL);
  QV_CHECK_EQ_STR(type_of(&back, 0), "int64");
  free(a);
  free(b);
  qv_read_result_reset(&back);
  /* an aborted writer leaves nothing */
  char gone[256];
  snprintf(gone, sizeof gone, "%s/gone.csv", dir);
  QV_REQUIRE(qv_csv_writer_open(gone, r.schema, NULL, &w, &E) == QV_OK);
  qv_csv_writer_abort(w);
  QV_CHECK(access(gone, F_OK) != 0);
  qv_read_result_reset(&r);
  unlink(csv);
  unlink(jl);
  QV_CHECK(rmdir(dir) == 0);
}

int main(void) {
  QV_RUN(test_csv_options);
  QV_RUN(test_csv_explicit_types);
  QV_RUN(test_csv_tiny_blocks);
  QV_RUN(test_csv_errors);
  QV_RUN(test_jsonl_schema_and_blocks);
  QV_RUN(test_writers_read_back);
  return QV_TEST_END();
}
