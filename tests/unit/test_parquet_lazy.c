/*
 * test_parquet_lazy.c — Parquet files opened lazily as mapped tables
 * (qv_table_open_parquet, the open path's qv_path_classify): only the
 * footer is read at open; head, get of the last row and a one-column
 * select decode exactly the row groups and column chunks they need
 * (counted by qv_table_parquet_decoded_chunks); every value equals the
 * whole-file read (qv_table_read_parquet, itself checked against pyarrow
 * in tests/python/test_parquet*.py) and the random source table the file
 * was written from; recipes reopen the file; a file that shrinks while
 * open fails with QV_ECHANGED, no crash; dictionary columns fall back to
 * the whole read. qv_table_scan_parquet hands over the schema, then every
 * row group in order, equal to the whole read, and stops on the
 * callback's error.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quiver/dataset.h"
#include "quiver/parquet_writer.h"
#include "table_test_util.h"

#define ROWS 1000
#define RG_ROWS 100
#define N_RG (ROWS / RG_ROWS)

/* bool, int64, double, timestamp[us, UTC], string, list<int32>: one leaf
 * column each */
static const int kTypes[] = {1, 5, 7, 11, 15, 20};
#define N_COLS ((int32_t)(sizeof kTypes / sizeof kTypes[0]))

/* Write `t` as Parquet in row groups of RG_ROWS rows; returns the path. */
static const char *write_parquet(qv_table *t, const char *name) {
  static char path[8][300];
  static int k;
  char *p = path[k++ % 8];
  snprintf(p, 300, "%s/%s", rt_tmpdir(), name);
  qv_parquet_write_options o;
  memset(&o, 0, sizeof o);
  o.codec = QV_PARQUET_SNAPPY;
  o.row_group_rows = RG_ROWS;
  qv_parquet_writer *w = NULL;
  RT_OK(qv_parquet_writer_open_path(p, qv_table_schema(t), &o, &w, &E));
  for (int64_t i = 0; i < qv_table_num_batches(t); i++) {
    qv_array *b = NULL;
    RT_OK(qv_table_batch(t, i, &b, &E));
    RT_OK(qv_parquet_writer_write_batch(w, b, &E));
    qv_array_unref(b);
  }
  RT_OK(qv_parquet_writer_close(w, &E));
  return p;
}

static qv_table *source_table(void) {
  qv_schema *s = rt_schema(kTypes, N_COLS);
  qv_table *t = rt_table(s, ROWS, 37);
  qv_schema_unref(s);
  return t;
}

static void test_open_reads_only_the_footer_and_equals_the_whole_read(void) {
  qv_table *src = source_table();
  const char *path = write_parquet(src, "a.parquet");
  qv_table *lazy = NULL, *whole = NULL;
  RT_OK(qv_table_open_parquet(path, &lazy, &E));
  QV_REQUIRE(lazy != NULL);
  QV_CHECK(qv_table_get_kind(lazy) == QV_TABLE_MAPPED);
  QV_CHECK_EQ_INT(qv_table_parquet_decoded_chunks(lazy), 0);
  QV_CHECK_EQ_INT(qv_table_num_rows(lazy), ROWS);
  QV_CHECK_EQ_INT(qv_table_num_batches(lazy), N_RG);
  QV_CHECK_EQ_INT(qv_table_num_columns(lazy), N_COLS);
  /* the Parquet file is data, not a cache file to write caches beside */
  char **files = NULL;
  int64_t n_files = -1;
  RT_OK(qv_table_cache_files(lazy, &files, &n_files, &E));
  QV_CHECK_EQ_INT(n_files, 0);
  qv_table_free_paths(files, n_files);
  RT_OK(qv_table_read_parquet(path, NULL, &whole, &E));
  QV_CHECK(qv_table_get_kind(whole) == QV_TABLE_IN_MEMORY);
  QV_CHECK_EQ_INT(qv_table_parquet_decoded_chunks(whole), -1);
  qv_error diff;
  QV_CHECK(qv_table_equals(whole, lazy, &diff));
  grid g = grid_of(src);
  QV_CHECK(grid_matches(lazy, &g, "lazy vs source"));
  grid_free(&g);
  /* every chunk decoded exactly once, however often it is read */
  QV_CHECK_EQ_INT(qv_table_parquet_decoded_chunks(lazy), N_RG * N_COLS);
  QV_CHECK(qv_table_equals(whole, lazy, &diff));
  QV_CHECK_EQ_INT(qv_table_parquet_decoded_chunks(lazy), N_RG * N_COLS);
  qv_table_unref(whole);
  qv_table_unref(lazy);
  qv_table_unref(src);
}

static void test_head_get_and_select_decode_only_what_they_need(void) {
  qv_table *src = source_table();
  const char *path = write_parquet(src, "b.parquet");
  qv_path_info info;
  RT_OK(qv_path_classify(path, &info, &E));
  QV_CHECK(info.kind == QV_PATH_PARQUET);
  qv_table *t = info.table;
  QV_REQUIRE(t != NULL);
  QV_CHECK_EQ_INT(qv_table_parquet_decoded_chunks(t), 0);
  grid g = grid_of(src);
  /* head -n 1: the first row group, every column */
  qv_table *h = NULL;
  RT_OK(qv_table_slice(t, 0, 1, &h, &E));
  grid gh = grid_slice(&g, 0, 1);
  QV_CHECK(grid_matches(h, &gh, "head"));
  grid_free(&gh);
  QV_CHECK_EQ_INT(qv_table_parquet_decoded_chunks(t), N_COLS);
  qv_table_unref(h);
  /* get of the last row: only the last row group more */
  int64_t last = ROWS - 1;
  qv_array *row = NULL;
  RT_OK(qv_table_gather(t, &last, 1, &row, &E));
  QV_REQUIRE(row != NULL && row->length == 1);
  for (int32_t c = 0; c < N_COLS; c++) {
    char *cell = orc_str(row->children[c], 0);
    QV_CHECK(strcmp(cell, g.cell[last][c]) == 0);
    free(cell);
  }
  QV_CHECK_EQ_INT(qv_table_parquet_decoded_chunks(t), 2 * N_COLS);
  qv_array_unref(row);
  /* one column of a middle row group: one chunk */
  int32_t col = 4;
  qv_table *sel = NULL;
  RT_OK(qv_table_select(t, &col, 1, &sel, &E));
  qv_table *s1 = NULL;
  RT_OK(qv_table_slice(sel, 5 * RG_ROWS + 3, 10, &s1, &E));
  grid gsel = grid_select(&g, &col, 1);
  grid gs1 = grid_slice(&gsel, 5 * RG_ROWS + 3, 10);
  QV_CHECK(grid_matches(s1, &gs1, "select + slice"));
  QV_CHECK_EQ_INT(qv_table_parquet_decoded_chunks(t), 2 * N_COLS + 1);
  /* a recipe reopens the file (lazily) and gives the same rows */
  uint8_t *rec = NULL;
  int64_t rec_len = 0;
  RT_OK(qv_table_recipe(s1, &rec, &rec_len, &E));
  qv_table *back = NULL;
  RT_OK(qv_table_from_recipe(rec, rec_len, &back, &E));
  QV_REQUIRE(back != NULL);
  QV_CHECK(grid_matches(back, &gs1, "recipe"));
  QV_CHECK(qv_table_get_kind(back) == QV_TABLE_MAPPED);
  free(rec);
  grid_free(&gs1);
  grid_free(&gsel);
  grid_free(&g);
  qv_table_unref(back);
  qv_table_unref(s1);
  qv_table_unref(sel);
  qv_path_info_reset(&info);
  qv_table_unref(src);
}

static void test_a_file_that_shrinks_while_open_is_echanged(void) {
  qv_table *src = source_table();
  const char *path = write_parquet(src, "c.parquet");
  qv_table *t = NULL;
  RT_OK(qv_table_open_parquet(path, &t, &E));
  qv_array *b = NULL;
  RT_OK(qv_table_batch(t, 0, &b, &E));
  qv_array_unref(b);
  int fd = open(path, O_RDWR);
  QV_REQUIRE(fd >= 0);
  off_t size = lseek(fd, 0, SEEK_END);
  QV_REQUIRE(size > 3 * 4096);
  QV_CHECK(ftruncate(fd, size / 2) == 0);
  close(fd);
  qv_status st = qv_table_batch(t, N_RG - 1, &b, &E);
  QV_CHECK_EQ_INT(st, QV_ECHANGED);
  QV_CHECK(strstr(E.message, "shrank") != NULL);
  /* the batch decoded before is heap memory: still readable */
  st = qv_table_batch(t, 0, &b, &E);
  QV_CHECK_EQ_INT(st, QV_OK);
  if (st == QV_OK) qv_array_unref(b);
  qv_table_unref(t);
  qv_table_unref(src);
}

static void test_dictionary_columns_are_read_whole(void) {
  static const int types[] = {5, 31};
  qv_schema *s = rt_schema(types, 2);
  qv_table *src = rt_table(s, ROWS, 37);
  qv_schema_unref(s);
  const char *path = write_parquet(src, "d.parquet");
  qv_table *t = NULL, *whole = NULL;
  RT_OK(qv_table_open_parquet(path, &t, &E));
  RT_OK(qv_table_read_parquet(path, NULL, &whole, &E));
  QV_REQUIRE(t != NULL && whole != NULL);
  QV_CHECK(qv_table_get_kind(t) == QV_TABLE_IN_MEMORY);
  QV_CHECK(qv_schema_field(qv_table_schema(t), 1)->type->id == QV_DICTIONARY);
  qv_error diff;
  QV_CHECK(qv_table_equals(whole, t, &diff));
  qv_table_unref(t);
  qv_table_unref(whole);
  qv_table_unref(src);
}

typedef struct scan_ctx {
  int calls;
  qv_schema *schema;
  qv_array *batches[64];
  int64_t n;
  int stop_after; /* 0: never */
} scan_ctx;

static qv_status scan_fn(void *ctx, const qv_schema *schema, qv_array *batch, qv_error *err) {
  scan_ctx *k = ctx;
  k->calls++;
  if (batch == NULL) {
    QV_CHECK(k->calls == 1 && k->schema == NULL);
    k->schema = qv_schema_ref((qv_schema *)schema);
    return QV_OK;
  }
  QV_CHECK(k->schema != NULL && k->n < 64);
  if (k->n < 64) k->batches[k->n++] = qv_array_ref(batch);
  if (k->stop_after > 0 && k->n == k->stop_after) return qv_error_set(err, QV_EIO, "stop here");
  return QV_OK;
}

static void test_scan_streams_every_row_group_in_order(void) {
  static const int types[] = {5, 31, 15};
  qv_schema *s = rt_schema(types, 3);
  qv_table *plain = source_table(), *dict = rt_table(s, ROWS, 37);
  qv_schema_unref(s);
  const char *paths[2] = {write_parquet(plain, "e.parquet"), write_parquet(dict, "f.parquet")};
  for (int p = 0; p < 2; p++) {
    for (int threads = 0; threads <= 3; threads++) {
      scan_ctx k;
      memset(&k, 0, sizeof k);
      RT_OK(qv_table_scan_parquet(paths[p], threads, scan_fn, &k, &E));
      QV_CHECK_EQ_INT(k.n, N_RG);
      qv_table *got = NULL, *whole = NULL;
      RT_OK(qv_table_from_batches(k.schema, k.batches, k.n, &got, &E));
      RT_OK(qv_table_read_parquet(paths[p], NULL, &whole, &E));
      qv_error diff;
      QV_CHECK(got && whole && qv_table_equals(whole, got, &diff));
      if (got) QV_CHECK_EQ_INT(qv_table_num_batches(got), N_RG);
      qv_table_unref(got);
      qv_table_unref(whole);
      for (int64_t i = 0; i < k.n; i++) qv_array_unref(k.batches[i]);
      qv_schema_unref(k.schema);
    }
    /* the callback's error stops the scan */
    scan_ctx k;
    memset(&k, 0, sizeof k);
    k.stop_after = 3;
    QV_CHECK_EQ_INT(qv_table_scan_parquet(paths[p], 2, scan_fn, &k, &E), QV_EIO);
    QV_CHECK(strcmp(E.message, "stop here") == 0);
    QV_CHECK_EQ_INT(k.n, 3);
    for (int64_t i = 0; i < k.n; i++) qv_array_unref(k.batches[i]);
    qv_schema_unref(k.schema);
  }
  qv_table_unref(plain);
  qv_table_unref(dict);
}

static void test_not_parquet_is_refused(void) {
  qv_table *src = source_table();
  const char *path = rt_write(src);
  qv_table *t = NULL;
  QV_CHECK(qv_table_open_parquet(path, &t, &E) == QV_EINVAL);
  QV_CHECK(t == NULL);
  qv_table_unref(src);
}

int main(void) {
  QV_RUN(test_open_reads_only_the_footer_and_equals_the_whole_read);
  QV_RUN(test_head_get_and_select_decode_only_what_they_need);
  QV_RUN(test_a_file_that_shrinks_while_open_is_echanged);
  QV_RUN(test_dictionary_columns_are_read_whole);
  QV_RUN(test_scan_streams_every_row_group_in_order);
  QV_RUN(test_not_parquet_is_refused);
  rt_cleanup();
  return QV_TEST_END();
}
