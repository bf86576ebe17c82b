/*
 * test_row_big.c — row tables whose var-length data exceeds 4 GiB (as Arrow's
 * GH-43495 tests): nine 512 MiB binary keys encoded at once, and appended
 * one by one with append_selection_from. Row offsets are 64-bit, so the
 * last offsets pass 2^32. Uses about 5 GB of memory for a few seconds.
 */
#include <stdio.h>
#include <time.h>

#include "quiver/row.h"
#include "qv_test.h"

#define VALUE_LEN ((int64_t)512 * 1024 * 1024)
#define NUM_ROWS 9

#if defined(__SANITIZE_ADDRESS__)
#define QV_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QV_UNDER_ASAN 1
#endif
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One binary value of VALUE_LEN bytes: 'X' with a marker at each end. */
static qv_array *big_binary(void) {
  qv_type *t = qv_type_new(QV_BINARY);
  qv_array *a = qv_array_new(t, 3, 0);
  qv_type_unref(t);
  a->length = 1;
  a->null_count = 0;
  QV_CHECK(qv_buffer_alloc(8, &a->buffers[1], NULL) == QV_OK);
  QV_CHECK(qv_buffer_alloc(VALUE_LEN, &a->buffers[2], NULL) == QV_OK);
  int32_t offs[2] = {0, (int32_t)VALUE_LEN};
  memcpy(a->buffers[1]->data, offs, 8);
  memset(a->buffers[2]->data, 'X', (size_t)VALUE_LEN);
  a->buffers[2]->data[0] = 'A';
  a->buffers[2]->data[VALUE_LEN - 1] = 'Z';
  return a;
}

static void check_offsets(const qv_row_table *t) {
  int64_t row_len = t->md.fixed_length + VALUE_LEN;
  const int64_t *o = qv_row_table_offsets(t);
  QV_CHECK_EQ_INT(t->num_rows, NUM_ROWS);
  QV_CHECK_EQ_INT(o[NUM_ROWS - 1], row_len * (NUM_ROWS - 1));
  QV_CHECK_EQ_INT(o[NUM_ROWS], row_len * NUM_ROWS);
  QV_CHECK(o[NUM_ROWS] > ((int64_t)1 << 32));
  /* The last row's field: begins at fixed_length, 'A' ... 'Z'. */
  const uint8_t *row = t->var + o[NUM_ROWS - 1];
  uint32_t end;
  memcpy(&end, row + t->md.varbinary_end_array_offset, 4);
  QV_CHECK_EQ_INT(end, t->md.fixed_length + VALUE_LEN);
  QV_CHECK_EQ_INT(row[t->md.fixed_length], 'A');
  QV_CHECK_EQ_INT(row[t->md.fixed_length + 1], 'X');
  QV_CHECK_EQ_INT(row[end - 1], 'Z');
}

static void test_encode_over_4gb(void) {
  double t0 = now();
  qv_array *col = big_binary();
  qv_type *types[1] = {col->type};
  qv_row_metadata md;
  qv_error err;
  QV_REQUIRE(qv_row_metadata_from_types(&md, types, 1, 4, 4, &err) == QV_OK);
  qv_row_table t;
  QV_REQUIRE(qv_row_table_init(&t, &md, &err) == QV_OK);
  int64_t sel[NUM_ROWS] = {0};
  qv_status st = qv_row_encode(&t, &col, sel, NUM_ROWS, &err);
  if (st != QV_OK) fprintf(stderr, "%s\n", err.message);
  QV_REQUIRE(st == QV_OK);
  check_offsets(&t);
  /* The key past 4 GiB still compares and hashes like the column key. */
  int64_t last = NUM_ROWS - 1, zero = 0;
  uint8_t match = 0;
  QV_REQUIRE(qv_row_compare_columns(&t, &col, &zero, &last, 1, true, &match, NULL, NULL, &err) ==
             QV_OK);
  QV_CHECK_EQ_INT(match & 1, 1);
  uint64_t hr = 0, hc = 1;
  QV_REQUIRE(qv_row_hash_rows64(&t, &last, 1, &hr, &err) == QV_OK);
  QV_REQUIRE(qv_row_hash_columns64(&md, &col, &zero, 1, &hc, &err) == QV_OK);
  QV_CHECK(hr == hc);
  const int64_t *o = qv_row_table_offsets(&t);
  QV_CHECK(memcmp(t.var + o[last] + t.md.fixed_length, col->buffers[2]->data, (size_t)VALUE_LEN) ==
           0);
  qv_row_table_reset(&t);
  qv_row_metadata_reset(&md);
  qv_array_unref(col);
  fprintf(stderr, "encode > 4 GiB: %.1f s\n", now() - t0);
}

static void test_append_over_4gb(void) {
#ifdef QV_UNDER_ASAN
  fprintf(stderr, "append > 4 GiB: skipped under ASan (its realloc copies)\n");
  return;
#else
  double t0 = now();
  qv_array *col = big_binary();
  qv_type *types[1] = {col->type};
  qv_row_metadata md;
  qv_error err;
  QV_REQUIRE(qv_row_metadata_from_types(&md, types, 1, 4, 4, &err) == QV_OK);
  qv_row_table seed, t;
  QV_REQUIRE(qv_row_table_init(&seed, &md, &err) == QV_OK);
  QV_REQUIRE(qv_row_encode(&seed, &col, NULL, 1, &err) == QV_OK);
  qv_array_unref(col);
  QV_REQUIRE(qv_row_table_init(&t, &md, &err) == QV_OK);
  for (int i = 0; i < NUM_ROWS; i++) {
    qv_status st = qv_row_table_append_selection_from(&t, &seed, NULL, 1, &err);
    if (st != QV_OK) fprintf(stderr, "%s\n", err.message);
    QV_REQUIRE(st == QV_OK);
  }
  check_offsets(&t);
  int64_t a = 0, b = NUM_ROWS - 1;
  uint8_t match = 0;
  QV_REQUIRE(qv_row_compare_rows(&seed, &a, &t, &b, 1, true, &match, NULL, NULL, &err) == QV_OK);
  QV_CHECK_EQ_INT(match & 1, 1);
  qv_row_table_reset(&t);
  qv_row_table_reset(&seed);
  qv_row_metadata_reset(&md);
  fprintf(stderr, "append > 4 GiB: %.1f s\n", now() - t0);
#endif
}

int main(void) {
  QV_RUN(test_encode_over_4gb);
  QV_RUN(test_append_over_4gb);
  return QV_TEST_END();
}
