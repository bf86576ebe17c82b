/*
 * test_decompress.c — "decompress only what is read" (src/ipc/loader.c,
 * codec.c, the reader's qv_reader_batch_select): ZSTD / LZ4 files written
 * by quiver's writer are read back by column and by row prefix, and the
 * reader's decompression counters (qv_reader_decompress_stats) show what
 * was decoded: one column of a projection, a few hundred bytes for a
 * 3-row prefix of 32 MiB columns. The budget refuses a decode that would
 * hold more than it allows, counting arrays the caller still holds, and
 * a compressed buffer declaring more than its rows need is refused with
 * batch, column, buffer, declared and needed in the message; a mapped
 * table's column selection reaches the loader; a long scan of a mapped
 * table (and a dataset) under a small budget releases least recently used
 * batches no one holds. The oracle for every value
 * is the whole batch read by qv_reader_batch (or the values written).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quiver/dataset.h"
#include "quiver/ipc.h"
#include "quiver/table.h"
#include "quiver/writer.h"
#include "qv_build.h"
#include "qv_test.h"

#define NCOLS 4
#define ROWS ((int64_t)4 << 20) /* 32 MiB per int64 column */

static char g_dir[256];

static int64_t i64_at(const qv_array *a, int64_t i) {
  int64_t v;
  memcpy(&v, a->buffers[1]->data + 8 * (a->offset + i), 8);
  return v;
}

static const char *str_at(const qv_array *a, int64_t i, int32_t *len) {
  int32_t o[2];
  memcpy(o, a->buffers[1]->data + 4 * (a->offset + i), 8);
  *len = o[1] - o[0];
  return (const char *)a->buffers[2]->data + o[0];
}

/* NCOLS int64 columns c0.. (zeros but for rows 0-2: 7+c, -1-c, 42*c) and a
 * string column s ("" but for rows 0-2), one batch of `rows` rows. */
static qv_status write_file(const char *path, qv_compression comp, int64_t rows, qv_error *err) {
  qv_type *st = tb_type(QV_STRUCT);
  char name[16];
  for (int c = 0; c < NCOLS; c++) {
    snprintf(name, sizeof name, "c%d", c);
    tb_child(st, name, tb_type(QV_INT64));
  }
  tb_child(st, "s", tb_type(QV_STRING));
  qv_array *ch[NCOLS + 1];
  for (int c = 0; c < NCOLS; c++) {
    qv_buffer *v = tb_buf(NULL, rows * 8);
    int64_t first[3] = {7 + c, -1 - c, 42 * c};
    memcpy(v->data, first, sizeof first);
    qv_buffer *b[2] = {NULL, v};
    ch[c] = tb_array(tb_type(QV_INT64), rows, 2, b, 0, NULL);
  }
  qv_buffer *off = tb_buf(NULL, (rows + 1) * 4), *data = tb_buf("alphabetagamma", 14);
  int32_t o[4] = {0, 5, 9, 14};
  memcpy(off->data, o, sizeof o);
  for (int64_t i = 4; i <= rows; i++) memcpy(off->data + 4 * i, &o[3], 4);
  qv_buffer *sb[3] = {NULL, off, data};
  ch[NCOLS] = tb_array(tb_type(QV_STRING), rows, 3, sb, 0, NULL);
  qv_array *batch = tb_array(qv_type_ref(st), rows, 1, (qv_buffer *[]){NULL}, NCOLS + 1, ch);
  batch->null_count = 0;
  for (int c = 0; c <= NCOLS; c++) ch[c]->null_count = 0;
  qv_schema *schema = qv_schema_new(st);
  qv_write_options o2 = {QV_FORMAT_FILE, comp, 0, 0, -1, 1};
  qv_writer *w = NULL;
  qv_status s = qv_writer_open_path(path, schema, &o2, &w, err);
  if (s == QV_OK) s = qv_writer_write_batch(w, batch, err);
  if (w != NULL) {
    qv_error e2;
    qv_status s2 = qv_writer_close(w, s == QV_OK ? err : &e2);
    if (s == QV_OK) s = s2;
  }
  qv_array_unref(batch);
  qv_schema_unref(schema);
  return s;
}

static qv_reader *open_file(const char *path) {
  qv_error err;
  qv_reader *r = NULL;
  qv_read_options ro = {QV_VALIDATE_FULL, true, 0};
  if (qv_reader_open_path(path, &ro, &r, &err) != QV_OK) {
    fprintf(stderr, "%s\n", err.message);
    return NULL;
  }
  return r;
}

static void stats(const qv_reader *r, int64_t *held, int64_t *total) {
  qv_reader_decompress_stats(r, held, total);
}

static void check_projection(qv_compression comp, const char *file) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", g_dir, file);
  qv_error err;
  qv_status s = write_file(path, comp, ROWS, &err);
  if (s != QV_OK) fprintf(stderr, "%s\n", err.message);
  QV_REQUIRE(s == QV_OK);
  qv_reader *r = open_file(path);
  QV_REQUIRE(r != NULL);
  QV_CHECK_EQ_INT(qv_reader_compression(r), comp);
  int64_t held = -1, total = -1;
  stats(r, &held, &total);
  QV_CHECK_EQ_INT(held, 0);
  QV_CHECK_EQ_INT(total, 0);

  /* One column: only its values buffer is decompressed. */
  qv_array *one = NULL;
  int32_t col2 = 2;
  QV_REQUIRE(qv_reader_batch_select(r, 0, &col2, 1, -1, &one, &err) == QV_OK);
  QV_CHECK_EQ_INT(one->n_children, 1);
  QV_CHECK_EQ_STR(one->type->children[0].name, "c2");
  QV_CHECK_EQ_INT(one->length, ROWS);
  QV_CHECK_EQ_INT(i64_at(one->children[0], 0), 9);
  QV_CHECK_EQ_INT(i64_at(one->children[0], 2), 84);
  QV_CHECK_EQ_INT(i64_at(one->children[0], ROWS - 1), 0);
  stats(r, &held, &total);
  QV_CHECK_EQ_INT(total, ROWS * 8);
  QV_CHECK_EQ_INT(held, ROWS * 8);
  qv_array_unref(one);
  stats(r, &held, NULL);
  QV_CHECK_EQ_INT(held, 0);

  /* A 3-row prefix of every column decodes a few bytes per column, and
   * equals the first rows of the whole batch (the oracle). */
  qv_array *head = NULL, *full = NULL;
  QV_REQUIRE(qv_reader_batch_select(r, 0, NULL, 0, 3, &head, &err) == QV_OK);
  int64_t after_head;
  stats(r, NULL, &after_head);
  QV_CHECK(after_head - ROWS * 8 < 4096);
  QV_CHECK_EQ_INT(head->length, 3);
  QV_REQUIRE(qv_reader_batch(r, 0, &full, &err) == QV_OK);
  stats(r, &held, NULL);
  QV_CHECK(held >= (int64_t)NCOLS * ROWS * 8);
  QV_REQUIRE(head->n_children == full->n_children);
  for (int c = 0; c < NCOLS; c++) {
    QV_CHECK_EQ_INT(head->children[c]->length, 3);
    for (int64_t i = 0; i < 3; i++)
      QV_CHECK_EQ_INT(i64_at(head->children[c], i), i64_at(full->children[c], i));
  }
  for (int64_t i = 0; i < 3; i++) {
    int32_t la, lb;
    const char *a = str_at(head->children[NCOLS], i, &la),
               *b = str_at(full->children[NCOLS], i, &lb);
    QV_CHECK(la == lb && memcmp(a, b, (size_t)la) == 0);
  }
  int32_t l0;
  QV_CHECK(memcmp(str_at(head->children[NCOLS], 1, &l0), "beta", 4) == 0 && l0 == 4);
  qv_array_unref(head);
  qv_array_unref(full);
  stats(r, &held, NULL);
  QV_CHECK_EQ_INT(held, 0);

  /* Columns in another order, with a repeat, and a bad index. */
  int32_t cols[3] = {4, 0, 4};
  qv_array *p = NULL;
  QV_REQUIRE(qv_reader_batch_select(r, 0, cols, 3, 2, &p, &err) == QV_OK);
  QV_CHECK_EQ_STR(p->type->children[0].name, "s");
  QV_CHECK_EQ_STR(p->type->children[1].name, "c0");
  QV_CHECK_EQ_INT(i64_at(p->children[1], 1), -1);
  QV_CHECK(p->children[0] == p->children[2]);
  qv_array_unref(p);
  int32_t bad = NCOLS + 1;
  QV_CHECK(qv_reader_batch_select(r, 0, &bad, 1, -1, &p, &err) == QV_ERANGE);
  qv_reader_close(r);
  unlink(path);
}

static void test_projection_zstd(void) { check_projection(QV_COMPRESSION_ZSTD, "z.arrow"); }
static void test_projection_lz4(void) { check_projection(QV_COMPRESSION_LZ4_FRAME, "l.arrow"); }

static void test_budget(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/b.arrow", g_dir);
  qv_error err;
  QV_REQUIRE(write_file(path, QV_COMPRESSION_ZSTD, ROWS, &err) == QV_OK);
  qv_reader *r = open_file(path);
  QV_REQUIRE(r != NULL);
  int64_t col = ROWS * 8, held;
  qv_reader_set_decompress_budget(r, 2 * col + 4096);
  QV_CHECK_EQ_INT(qv_reader_decompress_budget(r), 2 * col + 4096);
  /* The whole batch needs 4 columns: refused, nothing left held. */
  qv_array *a = NULL, *b = NULL, *c = NULL;
  QV_CHECK(qv_reader_batch(r, 0, &a, &err) == QV_ENOMEM);
  QV_CHECK(a == NULL);
  QV_CHECK(strstr(err.message, "record batch 0: message 0: field 'c2': buffer 1 (values)") != NULL);
  QV_CHECK(strstr(err.message, "over the reader's budget of") != NULL);
  stats(r, &held, NULL);
  QV_CHECK_EQ_INT(held, 0);
  /* Arrays the caller holds count: with c0 and c1 held, c2 does not fit
   * until one of them is released. */
  int32_t k0 = 0, k1 = 1, k2 = 2;
  QV_REQUIRE(qv_reader_batch_select(r, 0, &k0, 1, -1, &a, &err) == QV_OK);
  QV_REQUIRE(qv_reader_batch_select(r, 0, &k1, 1, -1, &b, &err) == QV_OK);
  QV_CHECK(qv_reader_batch_select(r, 0, &k2, 1, -1, &c, &err) == QV_ENOMEM);
  qv_array_unref(a);
  QV_CHECK(qv_reader_batch_select(r, 0, &k2, 1, -1, &c, &err) == QV_OK);
  if (c) QV_CHECK_EQ_INT(i64_at(c->children[0], 0), 9);
  /* Buffers outlive the reader and still release their bytes. */
  qv_reader_close(r);
  qv_array_unref(b);
  qv_array_unref(c);
  unlink(path);
}

/* A compressed buffer declaring more than its rows need is refused before
 * anything is allocated. */
static void test_declared_over_need(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/n.arrow", g_dir);
  qv_error err;
  const int64_t rows = 1000;
  QV_REQUIRE(write_file(path, QV_COMPRESSION_ZSTD, rows, &err) == QV_OK);
  FILE *f = fopen(path, "rb");
  QV_REQUIRE(f != NULL);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *bytes = malloc((size_t)size);
  QV_REQUIRE(fread(bytes, 1, (size_t)size, f) == (size_t)size);
  fclose(f);
  qv_reader *r = open_file(path);
  QV_REQUIRE(r != NULL);
  const qv_batch_location *loc = qv_reader_batch_location(r, 0);
  QV_REQUIRE(loc != NULL);
  int64_t body = loc->body_offset;
  qv_reader_close(r);
  /* The first 8-byte prefix declaring rows * 8 in the body is c0's values. */
  int64_t at = -1;
  for (int64_t p = body; p + 8 <= size && at < 0; p += 8) {
    int64_t v;
    memcpy(&v, bytes + p, 8);
    if (v == rows * 8) at = p;
  }
  QV_REQUIRE(at >= 0);
  int64_t bigger = rows * 8 + 4096;
  memcpy(bytes + at, &bigger, 8);
  qv_buffer *buf = tb_buf(bytes, size);
  free(bytes);
  qv_read_options ro = {QV_VALIDATE_FULL, true, 0};
  QV_REQUIRE(qv_reader_open_buffer(buf, &ro, &r, &err) == QV_OK);
  qv_array *a = NULL;
  QV_CHECK(qv_reader_batch(r, 0, &a, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "record batch 0: message 0: field 'c0': buffer 1 (values) declares 12096 "
                  "uncompressed bytes but 1000 rows of int64 need 8000");
  /* The other columns still read. */
  int32_t k1 = 1;
  QV_CHECK(qv_reader_batch_select(r, 0, &k1, 1, -1, &a, &err) == QV_OK);
  if (a) QV_CHECK_EQ_INT(i64_at(a->children[0], 0), 8);
  qv_array_unref(a);
  qv_reader_close(r);
  qv_buffer_unref(buf);
  unlink(path);
}

/* Uncompressed files stay zero-copy views of the mapping. */
static void test_uncompressed_zero_copy(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/u.arrow", g_dir);
  qv_error err;
  QV_REQUIRE(write_file(path, QV_COMPRESSION_NONE, 1000, &err) == QV_OK);
  qv_reader *r = open_file(path);
  QV_REQUIRE(r != NULL);
  qv_array *a = NULL;
  int32_t k = 3;
  QV_REQUIRE(qv_reader_batch_select(r, 0, &k, 1, 10, &a, &err) == QV_OK);
  QV_CHECK_EQ_INT(a->length, 10);
  QV_CHECK(qv_buffer_is_mapped(a->children[0]->buffers[1]));
  QV_CHECK_EQ_INT(i64_at(a->children[0], 0), 10);
  int64_t total;
  stats(r, NULL, &total);
  QV_CHECK_EQ_INT(total, 0);
  qv_array_unref(a);
  qv_reader_close(r);
  unlink(path);
}

/* A mapped table pushes its column selection down to the loader: with a
 * budget of two columns, one selected column of the five reads, while the
 * whole batch is refused. */
static void test_table_projection(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/t.arrow", g_dir);
  qv_error err;
  QV_REQUIRE(write_file(path, QV_COMPRESSION_ZSTD, ROWS, &err) == QV_OK);
  char budget[32];
  snprintf(budget, sizeof budget, "%lld", (long long)(2 * ROWS * 8 + 4096));
  setenv("QUIVER_DECOMPRESS_BUDGET", budget, 1);
  qv_table *t = NULL, *one = NULL, *two = NULL;
  qv_status s = qv_table_open_path(path, NULL, &t, &err);
  unsetenv("QUIVER_DECOMPRESS_BUDGET");
  QV_REQUIRE(s == QV_OK);
  int32_t c3 = 3, c1 = 1;
  QV_REQUIRE(qv_table_select(t, &c3, 1, &one, &err) == QV_OK);
  QV_REQUIRE(qv_table_select(t, &c1, 1, &two, &err) == QV_OK);
  qv_array *b = NULL;
  s = qv_table_batch(one, 0, &b, &err);
  if (s != QV_OK) fprintf(stderr, "%s\n", err.message);
  QV_REQUIRE(s == QV_OK);
  QV_CHECK_EQ_INT(b->n_children, 1);
  QV_CHECK_EQ_INT(i64_at(b->children[0], 0), 10);
  QV_CHECK_EQ_INT(i64_at(b->children[0], 2), 126);
  qv_array_unref(b);
  /* A second column of the same cached file batch is added to it. */
  QV_REQUIRE(qv_table_batch(two, 0, &b, &err) == QV_OK);
  QV_CHECK_EQ_INT(i64_at(b->children[0], 1), -2);
  qv_array_unref(b);
  /* All five columns do not fit the budget. */
  s = qv_table_batch(t, 0, &b, &err);
  QV_CHECK(s == QV_ENOMEM);
  if (s == QV_OK) qv_array_unref(b);
  else QV_CHECK(strstr(err.message, "over the reader's budget") != NULL);
  qv_table_unref(one);
  qv_table_unref(two);
  qv_table_unref(t);
  unlink(path);
}

/* A long scan over a compressed file under a small budget: the mapped
 * table releases the least recently used decompressed batches that no one
 * holds, so every batch reads (before: the budget refused the fifth); a
 * batch the caller still holds is never released (its values stay); when
 * the held batches fill the budget, the next decode is refused; a dataset
 * iterating the file in batches reads every row. Oracle: the values
 * written (row r holds 3r + 1). */
#define LRU_BATCHES 12
#define LRU_ROWS ((int64_t)64 << 10) /* 512 KiB of int64 per batch */

static void check_lru_batch(const qv_array *b, int64_t k) {
  QV_REQUIRE(b != NULL && b->length == LRU_ROWS && b->n_children == 1);
  bool ok = true;
  for (int64_t i = 0; i < LRU_ROWS; i += 997)
    ok = ok && i64_at(b->children[0], i) == 3 * (k * LRU_ROWS + i) + 1;
  ok = ok && i64_at(b->children[0], LRU_ROWS - 1) == 3 * (k * LRU_ROWS + LRU_ROWS - 1) + 1;
  QV_CHECK(ok);
}

static void test_lru_release(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/lru.arrows", g_dir);
  qv_type *st = tb_type(QV_STRUCT);
  tb_child(st, "v", tb_type(QV_INT64));
  int64_t n = LRU_BATCHES * LRU_ROWS;
  qv_buffer *v = tb_buf(NULL, n * 8);
  for (int64_t r = 0; r < n; r++) {
    int64_t x = 3 * r + 1;
    memcpy(v->data + 8 * r, &x, 8);
  }
  qv_buffer *vb[2] = {NULL, v};
  qv_array *col = tb_array(tb_type(QV_INT64), n, 2, vb, 0, NULL);
  col->null_count = 0;
  qv_array *batch = tb_array(qv_type_ref(st), n, 1, (qv_buffer *[]){NULL}, 1, &col);
  batch->null_count = 0;
  qv_schema *schema = qv_schema_new(st);
  qv_write_options o = {QV_FORMAT_STREAM, QV_COMPRESSION_ZSTD, 0, 0, LRU_ROWS, 1};
  qv_writer *w = NULL;
  qv_error err;
  QV_REQUIRE(qv_writer_open_path(path, schema, &o, &w, &err) == QV_OK);
  QV_REQUIRE(qv_writer_write_batch(w, batch, &err) == QV_OK);
  QV_REQUIRE(qv_writer_close(w, &err) == QV_OK);
  qv_array_unref(batch);
  qv_schema_unref(schema);

  char budget[32]; /* four batches and a little */
  snprintf(budget, sizeof budget, "%lld", (long long)(4 * LRU_ROWS * 8 + 4096));
  setenv("QUIVER_DECOMPRESS_BUDGET", budget, 1);
  qv_table *t = NULL;
  qv_dataset *ds = NULL;
  qv_status s = qv_table_open_path(path, NULL, &t, &err);
  if (s == QV_OK) s = qv_dataset_open(path, NULL, &ds, &err);
  unsetenv("QUIVER_DECOMPRESS_BUDGET");
  QV_REQUIRE(s == QV_OK);
  QV_REQUIRE(qv_table_num_batches(t) == LRU_BATCHES);

  /* Every batch, twice over, each dropped after use. */
  for (int pass = 0; pass < 2; pass++)
    for (int64_t k = 0; k < LRU_BATCHES; k++) {
      qv_array *b = NULL;
      s = qv_table_batch(t, k, &b, &err);
      if (s != QV_OK) fprintf(stderr, "  batch %lld: %s\n", (long long)k, err.message);
      QV_REQUIRE(s == QV_OK);
      check_lru_batch(b, k);
      qv_array_unref(b);
    }
  /* A batch held by the caller stays while the others come and go. */
  qv_array *held[4] = {NULL, NULL, NULL, NULL};
  QV_REQUIRE(qv_table_batch(t, 0, &held[0], &err) == QV_OK);
  for (int64_t k = 1; k < LRU_BATCHES; k++) {
    qv_array *b = NULL;
    QV_REQUIRE(qv_table_batch(t, k, &b, &err) == QV_OK);
    check_lru_batch(b, k);
    qv_array_unref(b);
  }
  check_lru_batch(held[0], 0);
  /* Four held fill the budget: a fifth is refused, not allocated. */
  for (int k = 1; k < 4; k++) QV_REQUIRE(qv_table_batch(t, k, &held[k], &err) == QV_OK);
  qv_array *b = NULL;
  s = qv_table_batch(t, 7, &b, &err);
  QV_CHECK_EQ_INT(s, QV_ENOMEM);
  if (s == QV_OK) qv_array_unref(b);
  else QV_CHECK(strstr(err.message, "over the reader's budget") != NULL);
  for (int k = 0; k < 4; k++) {
    check_lru_batch(held[k], k);
    qv_array_unref(held[k]);
  }
  QV_REQUIRE(qv_table_batch(t, 7, &b, &err) == QV_OK);
  check_lru_batch(b, 7);
  qv_array_unref(b);

  /* The dataset layer's iteration over the same kind of file. */
  qv_dataset_iter *it = NULL;
  QV_REQUIRE(qv_dataset_iter_new(ds, 1000, false, &it, &err) == QV_OK);
  int64_t rows = 0;
  bool same = true;
  for (;;) {
    qv_array *x = NULL;
    int64_t first = 0;
    s = qv_dataset_iter_next(it, &x, &first, &err);
    if (s != QV_OK) fprintf(stderr, "  iterate: %s\n", err.message);
    QV_REQUIRE(s == QV_OK);
    if (x == NULL) break;
    for (int64_t i = 0; i < x->length; i++)
      same = same && i64_at(x->children[0], i) == 3 * (first + i) + 1;
    rows += x->length;
    qv_array_unref(x);
  }
  QV_CHECK(same);
  QV_CHECK_EQ_INT(rows, n);
  qv_dataset_iter_free(it);
  qv_dataset_unref(ds);
  qv_table_unref(t);
  unlink(path);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/qv_decompress_XXXXXX");
  if (mkdtemp(g_dir) == NULL) return 1;
  QV_RUN(test_projection_zstd);
  QV_RUN(test_projection_lz4);
  QV_RUN(test_budget);
  QV_RUN(test_declared_over_need);
  QV_RUN(test_uncompressed_zero_copy);
  QV_RUN(test_table_projection);
  QV_RUN(test_lru_release);
  rmdir(g_dir);
  return QV_TEST_END();
}
