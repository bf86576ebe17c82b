/*
 * test_writer.c — the IPC writer: hand-built batches (sliced at bit
 * offsets, strings with rebased offsets, lists, structs, fixed-size lists,
 * run-end encoded, dictionaries) written in both formats with every codec
 * and read back through the reader; dictionary deltas / replacements;
 * atomic writes (abort and failure leave the target untouched and no
 * temporary behind); writing a C stream (qv_write_arrow_stream_*), also
 * from a producer that fails mid-stream; slices of dense unions, list
 * views and binary views carry only the child values / data bytes they
 * refer to.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quiver/builder.h"
#include "quiver/cdata.h"
#include "quiver/ipc.h"
#include "quiver/writer.h"
#include "qv_build.h"
#include "qv_test.h"

static char g_dir[256];

static void path_in_dir(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

/* Number of directory entries whose name contains "tmp-quiver". */
static int count_temps(void) {
  DIR *d = opendir(g_dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (strstr(e->d_name, "tmp-quiver")) n++;
  if (d) closedir(d);
  return n;
}

static int32_t i32_at(const qv_array *a, int64_t i) {
  int32_t v;
  memcpy(&v, a->buffers[1]->data + 4 * (a->offset + i), 4);
  return v;
}

static int64_t off_at(const qv_array *a, int64_t i) {
  int32_t v;
  memcpy(&v, a->buffers[1]->data + 4 * (a->offset + i), 4);
  return v;
}

/* String i of a STRING array as a NUL-terminated copy in buf. */
static const char *str_at(const qv_array *a, int64_t i, char *buf, size_t cap) {
  int64_t s = off_at(a, i), e = off_at(a, i + 1);
  size_t n = (size_t)(e - s) < cap - 1 ? (size_t)(e - s) : cap - 1;
  memcpy(buf, a->buffers[2]->data + s, n);
  buf[n] = '\0';
  return buf;
}

/* 20 rows: a int32 (i*10, null when i%3==0), s string ("r<i>", null when
 * i%4==1), l list<int32> (i%3 items: i, i+1, ...), st struct{x int32 = -i},
 * f fsl<int32>[2] (2i, 2i+1). */
#define NROWS 20

static qv_type *make_schema_type(void) {
  qv_type *t = tb_type(QV_STRUCT);
  tb_child(t, "a", tb_type(QV_INT32));
  tb_child(t, "s", tb_type(QV_STRING));
  tb_child(t, "l", tb_child(tb_type(QV_LIST), "item", tb_type(QV_INT32)));
  tb_child(t, "st", tb_child(tb_type(QV_STRUCT), "x", tb_type(QV_INT32)));
  qv_type *f = tb_child(tb_type(QV_FIXED_SIZE_LIST), "item", tb_type(QV_INT32));
  f->list_size = 2;
  tb_child(t, "f", f);
  return t;
}

static qv_array *make_batch(qv_type *st) {
  int32_t av[NROWS];
  uint8_t avalid[3] = {0}, svalid[3] = {0};
  int32_t soffs[NROWS + 1], loffs[NROWS + 1], xs[NROWS], fv[2 * NROWS];
  char sdata[256];
  int32_t litems[64];
  int64_t an = 0, sn = 0, li = 0;
  int32_t sl = 0;
  soffs[0] = 0;
  loffs[0] = 0;
  for (int i = 0; i < NROWS; i++) {
    av[i] = i * 10;
    if (i % 3 != 0) qv_bit_set(avalid, i);
    else an++;
    if (i % 4 != 1) {
      qv_bit_set(svalid, i);
      sl += sprintf(sdata + sl, "r%d", i);
    } else {
      sn++;
    }
    soffs[i + 1] = sl;
    for (int k = 0; k < i % 3; k++) litems[li++] = i + k;
    loffs[i + 1] = (int32_t)li;
    xs[i] = -i;
    fv[2 * i] = 2 * i;
    fv[2 * i + 1] = 2 * i + 1;
  }
  qv_array *cols[5];
  cols[0] = tb_prim_raw(QV_INT32, NROWS, an, avalid, 3, av, sizeof av);
  cols[1] = tb_str_raw(QV_STRING, NROWS, sn, svalid, soffs, sdata, sl);
  qv_array *items = tb_int32(litems, li);
  qv_buffer *lb[2] = {NULL, tb_buf(loffs, sizeof loffs)};
  cols[2] = tb_array_nc(qv_type_ref(st->children[2].type), NROWS, 0, 2, lb, 1, &items);
  qv_array *x = tb_int32(xs, NROWS);
  qv_buffer *sb[1] = {NULL};
  cols[3] = tb_array_nc(qv_type_ref(st->children[3].type), NROWS, 0, 1, sb, 1, &x);
  qv_array *fc = tb_int32(fv, 2 * NROWS);
  qv_buffer *fb[1] = {NULL};
  cols[4] = tb_array_nc(qv_type_ref(st->children[4].type), NROWS, 0, 1, fb, 1, &fc);
  qv_buffer *bb[1] = {NULL};
  return tb_array_nc(qv_type_ref(st), NROWS, 0, 1, bb, 5, cols);
}

/* Check that batch b holds rows [first, first + b->length) of make_batch. */
static void check_rows(qv_array *b, int64_t first) {
  char buf[32], want[32];
  const qv_array *a = b->children[0], *s = b->children[1], *l = b->children[2],
                 *st = b->children[3], *f = b->children[4];
  for (int64_t r = 0; r < b->length; r++) {
    int64_t i = first + r;
    QV_CHECK_EQ_INT(qv_array_is_valid(a, r), i % 3 != 0);
    if (i % 3 != 0) QV_CHECK_EQ_INT(i32_at(a, r), i * 10);
    QV_CHECK_EQ_INT(qv_array_is_valid(s, r), i % 4 != 1);
    if (i % 4 != 1) {
      snprintf(want, sizeof want, "r%lld", (long long)i);
      QV_CHECK_EQ_STR(str_at(s, r, buf, sizeof buf), want);
    }
    int64_t ls = off_at(l, r), le = off_at(l, r + 1);
    QV_CHECK_EQ_INT(le - ls, i % 3);
    for (int64_t k = ls; k < le; k++) QV_CHECK_EQ_INT(i32_at(l->children[0], k), i + (k - ls));
    QV_CHECK_EQ_INT(i32_at(st->children[0], st->offset + r), -i);
    const qv_array *fc = f->children[0];
    QV_CHECK_EQ_INT(i32_at(fc, 2 * (f->offset + r)), 2 * i);
    QV_CHECK_EQ_INT(i32_at(fc, 2 * (f->offset + r) + 1), 2 * i + 1);
  }
}

static void roundtrip(qv_ipc_format fmt, qv_compression comp, int64_t start, int64_t len,
                      int64_t max_rows, int align) {
  qv_error err;
  qv_type *st = make_schema_type();
  qv_schema *schema = qv_schema_new(qv_type_ref(st));
  QV_CHECK(qv_metadata_append(&schema->metadata, "k", 1, "v", 1, NULL) == QV_OK);
  qv_array *full = make_batch(st);
  qv_array *batch = NULL;
  QV_REQUIRE(qv_array_slice(full, start, len, &batch, &err) == QV_OK);
  char path[512];
  path_in_dir(path, sizeof path, "rt.arrow");
  qv_write_options o = {fmt, comp, 0, align, max_rows, 0};
  qv_writer *w = NULL;
  qv_status s = qv_writer_open_path(path, schema, &o, &w, &err);
  QV_REQUIRE(s == QV_OK);
  s = qv_writer_write_batch(w, batch, &err);
  if (s != QV_OK) fprintf(stderr, "%s\n", err.message);
  QV_CHECK(s == QV_OK);
  QV_CHECK(qv_writer_close(w, &err) == QV_OK);
  QV_CHECK_EQ_INT(count_temps(), 0);

  qv_read_options ro = {QV_VALIDATE_FULL, true, 0};
  qv_reader *r = NULL;
  s = qv_reader_open_path(path, &ro, &r, &err);
  if (s != QV_OK) fprintf(stderr, "%s\n", err.message);
  QV_REQUIRE(s == QV_OK);
  QV_CHECK_EQ_INT(qv_reader_format(r), fmt);
  QV_CHECK(qv_schema_equals(qv_reader_schema(r), schema, true));
  QV_CHECK_EQ_INT(qv_reader_compression(r), len > 0 ? comp : qv_reader_compression(r));
  int64_t seen = 0, nb = 0;
  for (;;) {
    qv_array *b = NULL;
    s = qv_reader_next(r, &b, &err);
    if (s != QV_OK) fprintf(stderr, "%s\n", err.message);
    QV_CHECK(s == QV_OK);
    if (b == NULL) break;
    QV_CHECK(max_rows < 0 || b->length <= max_rows);
    check_rows(b, start + seen);
    seen += b->length;
    nb++;
    qv_array_unref(b);
  }
  QV_CHECK_EQ_INT(seen, len);
  if (max_rows > 0 && len > 0) QV_CHECK_EQ_INT(nb, (len + max_rows - 1) / max_rows);
  qv_reader_close(r);
  qv_array_unref(batch);
  qv_array_unref(full);
  qv_schema_unref(schema);
  qv_type_unref(st);
  unlink(path);
}

static void test_roundtrip_matrix(void) {
  qv_ipc_format fmts[2] = {QV_FORMAT_FILE, QV_FORMAT_STREAM};
  qv_compression comps[3] = {QV_COMPRESSION_NONE, QV_COMPRESSION_LZ4_FRAME, QV_COMPRESSION_ZSTD};
  for (int f = 0; f < 2; f++)
    for (int c = 0; c < 3; c++) {
      roundtrip(fmts[f], comps[c], 0, NROWS, -1, 8);
      roundtrip(fmts[f], comps[c], 3, 13, -1, 8);  /* bit offset 3 */
      roundtrip(fmts[f], comps[c], 8, 12, -1, 64); /* byte-aligned slice */
      roundtrip(fmts[f], comps[c], 5, 14, 4, 8);   /* split into 4-row batches */
      roundtrip(fmts[f], comps[c], 7, 0, -1, 8);   /* empty */
    }
}

/* Run-end encoded int32 runs: ends 3,5,9 values 7,8,9; sliced [2, 8). */
static void test_ree_slice(void) {
  qv_error err;
  int32_t ends[3] = {3, 5, 9}, vals[3] = {7, 8, 9};
  qv_type *ree = tb_type(QV_RUN_END_ENCODED);
  tb_child(ree, "run_ends", tb_type(QV_INT32));
  tb_child(ree, "values", tb_type(QV_INT32));
  qv_type *st = tb_child(tb_type(QV_STRUCT), "r", ree);
  qv_array *kids[2] = {tb_int32(ends, 3), tb_int32(vals, 3)};
  qv_array *col = tb_array_nc(qv_type_ref(ree), 9, 0, 0, NULL, 2, kids);
  qv_buffer *bb[1] = {NULL};
  qv_array *full = tb_array_nc(qv_type_ref(st), 9, 0, 1, bb, 1, &col);
  qv_array *batch = NULL;
  QV_REQUIRE(qv_array_slice(full, 2, 6, &batch, &err) == QV_OK);
  qv_schema *schema = qv_schema_new(qv_type_ref(st));
  char path[512];
  path_in_dir(path, sizeof path, "ree.arrows");
  qv_write_options o = {QV_FORMAT_STREAM, QV_COMPRESSION_NONE, 0, 0, 0, 0};
  qv_writer *w = NULL;
  QV_REQUIRE(qv_writer_open_path(path, schema, &o, &w, &err) == QV_OK);
  QV_CHECK(qv_writer_write_batch(w, batch, &err) == QV_OK);
  QV_CHECK(qv_writer_close(w, &err) == QV_OK);
  qv_reader *r = NULL;
  QV_REQUIRE(qv_reader_open_path(path, NULL, &r, &err) == QV_OK);
  qv_array *b = NULL;
  QV_REQUIRE(qv_reader_next(r, &b, &err) == QV_OK && b != NULL);
  const qv_array *c = b->children[0];
  QV_CHECK_EQ_INT(c->length, 6);
  QV_CHECK_EQ_INT(c->children[0]->length, 3);
  /* logical rows 2..7 of the original: 7, 8, 8, 9, 9, 9 -> runs end 1, 3, 6 */
  QV_CHECK_EQ_INT(i32_at(c->children[0], 0), 1);
  QV_CHECK_EQ_INT(i32_at(c->children[0], 1), 3);
  QV_CHECK_EQ_INT(i32_at(c->children[0], 2), 6);
  QV_CHECK_EQ_INT(i32_at(c->children[1], 0), 7);
  QV_CHECK_EQ_INT(i32_at(c->children[1], 2), 9);
  qv_array_unref(b);
  qv_reader_close(r);
  unlink(path);
  qv_schema_unref(schema);
  qv_array_unref(batch);
  qv_array_unref(full);
  qv_type_unref(st);
}

/* Dictionary<int8, string> column with dictionary `words` (n of them). */
static qv_array *dict_batch(qv_type *st, const char *const *words, int n, const int8_t *idx,
                            int64_t len) {
  int32_t offs[8] = {0};
  char data[64];
  int32_t pos = 0;
  for (int i = 0; i < n; i++) {
    pos += sprintf(data + pos, "%s", words[i]);
    offs[i + 1] = pos;
  }
  qv_array *dict = tb_str_raw(QV_STRING, n, 0, NULL, offs, data, pos);
  qv_array *col = tb_prim_raw(QV_DICTIONARY, len, 0, NULL, 0, idx, len);
  qv_type_unref(col->type);
  col->type = qv_type_ref(st->children[0].type);
  col->dictionary = dict;
  qv_buffer *bb[1] = {NULL};
  return tb_array_nc(qv_type_ref(st), len, 0, 1, bb, 1, &col);
}

static qv_type *dict_type(void) {
  qv_type *d = tb_type(QV_DICTIONARY);
  d->index_type = tb_type(QV_INT8);
  d->value_type = tb_type(QV_STRING);
  d->dict_id = 7;
  return tb_child(tb_type(QV_STRUCT), "d", d);
}

static void test_dictionary_delta_and_replacement(void) {
  qv_error err;
  qv_type *st = dict_type();
  qv_schema *schema = qv_schema_new(qv_type_ref(st));
  const char *w1[] = {"a", "b"}, *w2[] = {"a", "b", "c"}, *w3[] = {"z"};
  int8_t i1[] = {0, 1, 1}, i2[] = {2, 0}, i3[] = {0};
  qv_array *b1 = dict_batch(st, w1, 2, i1, 3), *b2 = dict_batch(st, w2, 3, i2, 2),
           *b3 = dict_batch(st, w3, 1, i3, 1);
  char path[512];
  path_in_dir(path, sizeof path, "dict.arrows");

  /* Stream: b2 extends b1 (delta), b3 replaces. */
  qv_write_options o = {QV_FORMAT_STREAM, QV_COMPRESSION_NONE, 0, 0, 0, 0};
  qv_writer *w = NULL;
  QV_REQUIRE(qv_writer_open_path(path, schema, &o, &w, &err) == QV_OK);
  QV_CHECK(qv_writer_write_batch(w, b1, &err) == QV_OK);
  QV_CHECK(qv_writer_write_batch(w, b1, &err) == QV_OK); /* same: nothing */
  QV_CHECK(qv_writer_write_batch(w, b2, &err) == QV_OK);
  QV_CHECK(qv_writer_write_batch(w, b3, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_writer_batches_written(w), 4); /* as the reader counts below */
  QV_CHECK(qv_writer_close(w, &err) == QV_OK);
  qv_reader *r = NULL;
  QV_REQUIRE(qv_reader_open_path(path, NULL, &r, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_reader_num_batches(r), 4);
  QV_CHECK_EQ_INT(qv_reader_num_dictionary_batches(r), 3);
  /* Deltas need qv_array_equals (core); until it lands the writer sends a
   * replacement, which is still correct. */
  int32_t probe[2] = {1, 2};
  qv_array *p1 = tb_int32(probe, 2), *p2 = tb_int32(probe, 2);
  bool have_equals = qv_array_equals(p1, p2, NULL);
  qv_array_unref(p1);
  qv_array_unref(p2);
  if (!have_equals) fprintf(stderr, "note: qv_array_equals missing: delta checks skipped\n");
  if (qv_reader_num_dictionary_batches(r) == 3) {
    QV_CHECK(!qv_reader_dictionary_location(r, 0)->is_delta);
    QV_CHECK(!have_equals || qv_reader_dictionary_location(r, 1)->is_delta);
    QV_CHECK_EQ_INT(qv_reader_dictionary_location(r, 1)->num_rows, have_equals ? 1 : 3);
    QV_CHECK(!qv_reader_dictionary_location(r, 2)->is_delta);
  }
  char buf[16];
  qv_array *b = NULL;
  QV_REQUIRE(qv_reader_batch(r, 2, &b, &err) == QV_OK);
  QV_CHECK_EQ_INT(b->children[0]->dictionary->length, 3);
  QV_CHECK_EQ_STR(str_at(b->children[0]->dictionary, 2, buf, sizeof buf), "c");
  qv_array_unref(b);
  QV_REQUIRE(qv_reader_batch(r, 3, &b, &err) == QV_OK);
  QV_CHECK_EQ_STR(str_at(b->children[0]->dictionary, 0, buf, sizeof buf), "z");
  qv_array_unref(b);
  qv_reader_close(r);
  unlink(path);

  /* File: a change of dictionary is refused and nothing is committed. */
  path_in_dir(path, sizeof path, "dict.arrow");
  o.format = QV_FORMAT_FILE;
  QV_REQUIRE(qv_writer_open_path(path, schema, &o, &w, &err) == QV_OK);
  QV_CHECK(qv_writer_write_batch(w, b1, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_writer_write_batch(w, b3, &err), QV_ENOTSUP);
  QV_CHECK_EQ_STR(err.message,
                  "writer: dictionary id 7 changes between record batches; the IPC "
                  "file format cannot replace a dictionary (write a stream, or unify "
                  "the dictionaries first)");
  QV_CHECK(qv_writer_close(w, &err) != QV_OK);
  QV_CHECK(access(path, F_OK) != 0);
  QV_CHECK_EQ_INT(count_temps(), 0);

  qv_array_unref(b1);
  qv_array_unref(b2);
  qv_array_unref(b3);
  qv_schema_unref(schema);
  qv_type_unref(st);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  fputs(text, f);
  fclose(f);
}

static int file_is(const char *path, const char *text) {
  char buf[64] = {0};
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  return n == strlen(text) && memcmp(buf, text, n) == 0;
}

static void test_atomic(void) {
  qv_error err;
  qv_type *st = make_schema_type();
  qv_schema *schema = qv_schema_new(qv_type_ref(st));
  qv_array *batch = make_batch(st);
  char path[512];
  path_in_dir(path, sizeof path, "target.arrow");
  write_file(path, "old");
  qv_writer *w = NULL;

  /* Abort: the temporary is gone, the target untouched. */
  QV_REQUIRE(qv_writer_open_path(path, schema, NULL, &w, &err) == QV_OK);
  QV_CHECK(qv_writer_write_batch(w, batch, &err) == QV_OK);
  QV_CHECK_EQ_INT(count_temps(), 1);
  qv_writer_abort(w);
  QV_CHECK(file_is(path, "old"));
  QV_CHECK_EQ_INT(count_temps(), 0);

  /* A failing write (wrong batch type) fails the writer; close commits
   * nothing. */
  QV_REQUIRE(qv_writer_open_path(path, schema, NULL, &w, &err) == QV_OK);
  qv_array *col = NULL;
  col = qv_array_ref(batch->children[0]);
  QV_CHECK_EQ_INT(qv_writer_write_batch(w, col, &err), QV_ETYPE);
  qv_array_unref(col);
  QV_CHECK_EQ_INT(qv_writer_close(w, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "writer: an earlier write failed; nothing was committed");
  QV_CHECK(file_is(path, "old"));
  QV_CHECK_EQ_INT(count_temps(), 0);

  /* A directory that does not exist: clear error, nothing created. */
  char bad[600];
  snprintf(bad, sizeof bad, "%s/missing/x.arrow", g_dir);
  QV_CHECK_EQ_INT(qv_writer_open_path(bad, schema, NULL, &w, &err), QV_EIO);
  QV_CHECK(strstr(err.message, "cannot create a temporary file beside") != NULL);

  /* Success replaces the target. */
  QV_REQUIRE(qv_writer_open_path(path, schema, NULL, &w, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_writer_batches_written(w), 0);
  QV_CHECK(qv_writer_write_batch(w, batch, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_writer_rows_written(w), NROWS);
  QV_CHECK_EQ_INT(qv_writer_batches_written(w), 1);
  QV_CHECK(qv_writer_close(w, &err) == QV_OK);
  QV_CHECK(!file_is(path, "old"));
  qv_reader *r = NULL;
  QV_CHECK(qv_reader_open_path(path, NULL, &r, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_reader_num_rows(r), NROWS);
  qv_reader_close(r);
  unlink(path);

  /* Bad options. */
  qv_write_options o = {QV_FORMAT_FILE, QV_COMPRESSION_NONE, 0, 16, 0, 0};
  QV_CHECK_EQ_INT(qv_writer_open_path(path, schema, &o, &w, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "writer: alignment must be 8 or 64, found 16");
  QV_CHECK_EQ_INT(count_temps(), 0);

  qv_array_unref(batch);
  qv_schema_unref(schema);
  qv_type_unref(st);
}

/* A C stream producer that hands out `batch` n_ok times, then fails with
 * EIO and the message "disk on fire". Counts releases. */
typedef struct fail_stream {
  qv_array *batch;
  int n_ok, served, releases;
  const qv_schema *schema;
} fail_stream;

static int fs_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  fail_stream *f = s->private_data;
  return qv_export_schema(f->schema, out, NULL) == QV_OK ? 0 : EINVAL;
}
static int fs_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  fail_stream *f = s->private_data;
  if (f->served >= f->n_ok) return EIO;
  f->served++;
  return qv_export_array(f->batch, out, NULL) == QV_OK ? 0 : EINVAL;
}
static const char *fs_error(struct ArrowArrayStream *s) {
  (void)s;
  return "disk on fire";
}
static void fs_release(struct ArrowArrayStream *s) {
  ((fail_stream *)s->private_data)->releases++;
  s->release = NULL;
}

static void test_write_c_stream(void) {
  qv_error err;
  qv_type *st = make_schema_type();
  qv_schema *schema = qv_schema_new(qv_type_ref(st));
  QV_CHECK(qv_metadata_append(&schema->metadata, "k", 1, "v", 1, NULL) == QV_OK);
  qv_array *full = make_batch(st);
  char src[512], dst[512];
  path_in_dir(src, sizeof src, "src.arrow");
  path_in_dir(dst, sizeof dst, "dst.arrows");
  qv_write_options o = {QV_FORMAT_FILE, QV_COMPRESSION_NONE, 0, 0, 7, 0};
  qv_writer *w = NULL;
  QV_REQUIRE(qv_writer_open_path(src, schema, &o, &w, &err) == QV_OK);
  QV_CHECK(qv_writer_write_batch(w, full, &err) == QV_OK);
  QV_REQUIRE(qv_writer_close(w, &err) == QV_OK);

  /* reader -> C stream -> qv_write_arrow_stream_path (zstd stream). */
  qv_reader *r = NULL;
  QV_REQUIRE(qv_reader_open_path(src, NULL, &r, &err) == QV_OK);
  struct ArrowArrayStream cs;
  QV_REQUIRE(qv_export_reader_stream(r, &cs, &err) == QV_OK);
  qv_write_options so = {QV_FORMAT_STREAM, QV_COMPRESSION_ZSTD, 0, 0, 0, 0};
  int64_t rows = -1;
  qv_status s = qv_write_arrow_stream_path(&cs, dst, &so, &rows, &err);
  if (s != QV_OK) fprintf(stderr, "%s\n", err.message);
  QV_CHECK(s == QV_OK);
  QV_CHECK(cs.release == NULL);
  QV_CHECK_EQ_INT(rows, NROWS);
  QV_CHECK_EQ_INT(count_temps(), 0);
  QV_REQUIRE(qv_reader_open_path(dst, NULL, &r, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_reader_format(r), QV_FORMAT_STREAM);
  QV_CHECK(qv_schema_equals(qv_reader_schema(r), schema, true));
  int64_t seen = 0, nb = 0;
  for (;;) {
    qv_array *b = NULL;
    QV_CHECK(qv_reader_next(r, &b, &err) == QV_OK);
    if (b == NULL) break;
    check_rows(b, seen);
    seen += b->length;
    nb++;
    qv_array_unref(b);
  }
  QV_CHECK_EQ_INT(qv_reader_compression(r), QV_COMPRESSION_ZSTD);
  QV_CHECK_EQ_INT(seen, NROWS);
  QV_CHECK_EQ_INT(nb, 3); /* the source's 7-row batches, kept */
  qv_reader_close(r);

  /* A producer failing after one batch: its error text, the target
   * untouched, no temporary, the stream released exactly once. */
  fail_stream f = {full, 1, 0, 0, schema};
  struct ArrowArrayStream fs = {fs_schema, fs_next, fs_error, fs_release, &f};
  s = qv_write_arrow_stream_path(&fs, dst, NULL, &rows, &err);
  QV_CHECK_EQ_INT(s, QV_EIO);
  QV_CHECK_EQ_STR(err.message,
                  "C stream batch 1: C stream get_next failed "
                  "(Input/output error): disk on fire");
  QV_CHECK(fs.release == NULL);
  QV_CHECK_EQ_INT(f.releases, 1);
  QV_CHECK_EQ_INT(rows, 0);
  QV_CHECK_EQ_INT(count_temps(), 0);
  QV_REQUIRE(qv_reader_open_path(dst, NULL, &r, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_reader_format(r), QV_FORMAT_STREAM); /* the old file */
  qv_reader_close(r);

  /* Bad arguments still consume the stream. */
  f.releases = 0;
  fs.release = fs_release;
  QV_CHECK_EQ_INT(qv_write_arrow_stream_fd(&fs, -1, NULL, NULL, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "qv_write_arrow_stream_fd: bad descriptor -1");
  QV_CHECK_EQ_INT(f.releases, 1);
  fs.release = fs_release;
  qv_write_options bad = {QV_FORMAT_FILE, QV_COMPRESSION_NONE, 0, 3, 0, 0};
  QV_CHECK_EQ_INT(qv_write_arrow_stream_path(&fs, dst, &bad, NULL, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "writer: alignment must be 8 or 64, found 3");
  QV_CHECK_EQ_INT(f.releases, 2);
  QV_CHECK_EQ_INT(count_temps(), 0);

  unlink(src);
  unlink(dst);
  qv_array_unref(full);
  qv_schema_unref(schema);
  qv_type_unref(st);
}

/* 100 rows: dense_union<i: int32=0, s: string=1> (even rows i = r, odd rows
 * s = "s<r>"), list_view<int32> (row r = [r, r+1], child values 2r, 2r+1),
 * string_view (rows of 24 bytes: out of line). */
static qv_array *compact_batch(qv_type **out_type) {
  qv_type *du = tb_type(QV_DENSE_UNION);
  tb_child(du, "i", tb_type(QV_INT32));
  tb_child(du, "s", tb_type(QV_STRING));
  du->type_codes = calloc(2, sizeof(int32_t));
  du->type_codes[1] = 1;
  qv_type *st = tb_type(QV_STRUCT);
  tb_child(st, "u", du);
  tb_child(st, "lv", qv_type_list_of(QV_LIST_VIEW, tb_type(QV_INT32)));
  tb_child(st, "sv", tb_type(QV_STRING_VIEW));
  qv_builder *b = NULL;
  qv_error err;
  if (qv_builder_new(st, &b, &err) != QV_OK) return NULL;
  qv_builder *u = qv_builder_child(b, 0), *lv = qv_builder_child(b, 1),
             *sv = qv_builder_child(b, 2);
  qv_builder *item = qv_builder_child(lv, 0);
  char text[64];
  for (int r = 0; r < 100; r++) {
    QV_CHECK(qv_builder_begin_union(u, (int8_t)(r % 2), &err) == QV_OK);
    if (r % 2 == 0) QV_CHECK(qv_builder_append_int(qv_builder_child(u, 0), r, &err) == QV_OK);
    else {
      snprintf(text, sizeof text, "s%d", r);
      QV_CHECK(qv_builder_append_string(qv_builder_child(u, 1), text, &err) == QV_OK);
    }
    QV_CHECK(qv_builder_end_union(u, &err) == QV_OK);
    QV_CHECK(qv_builder_begin_list(lv, &err) == QV_OK);
    QV_CHECK(qv_builder_append_int(item, r, &err) == QV_OK);
    QV_CHECK(qv_builder_append_int(item, r + 1, &err) == QV_OK);
    QV_CHECK(qv_builder_end_list(lv, &err) == QV_OK);
    snprintf(text, sizeof text, "a long string value #%03d", r);
    QV_CHECK(qv_builder_append_string(sv, text, &err) == QV_OK);
  }
  QV_CHECK(qv_builder_append_structs(b, 100, &err) == QV_OK);
  qv_array *a = NULL;
  if (qv_builder_finish(b, &a, &err) != QV_OK) fprintf(stderr, "%s\n", err.message);
  qv_builder_free(b);
  *out_type = st;
  return a;
}

static void test_compact_slices(void) {
  qv_error err;
  qv_type *st = NULL;
  qv_array *full = compact_batch(&st);
  QV_REQUIRE(full != NULL);
  QV_CHECK(qv_array_validate(full, QV_VALIDATE_FULL, "batch", &err) == QV_OK);
  qv_schema *schema = qv_schema_new(qv_type_ref(st));
  char path[512];
  path_in_dir(path, sizeof path, "compact.arrows");
  /* rows [41, 51) as one batch */
  qv_array *slice = NULL;
  QV_REQUIRE(qv_array_slice(full, 41, 10, &slice, &err) == QV_OK);
  qv_write_options o = {QV_FORMAT_STREAM, QV_COMPRESSION_NONE, 0, 0, -1, 0};
  qv_writer *w = NULL;
  QV_REQUIRE(qv_writer_open_path(path, schema, &o, &w, &err) == QV_OK);
  QV_CHECK(qv_writer_write_batch(w, slice, &err) == QV_OK);
  QV_CHECK(qv_writer_close(w, &err) == QV_OK);
  qv_read_options ro = {QV_VALIDATE_FULL, true, 0};
  qv_reader *r = NULL;
  QV_REQUIRE(qv_reader_open_path(path, &ro, &r, &err) == QV_OK);
  qv_array *got = NULL;
  QV_REQUIRE(qv_reader_next(r, &got, &err) == QV_OK && got != NULL);
  QV_CHECK(qv_array_equals(slice, got, &err));
  const qv_array *u = got->children[0], *lv = got->children[1], *sv = got->children[2];
  /* 5 ints and 5 strings, not 50 + 50 */
  QV_CHECK_EQ_INT(u->children[0]->length, 5);
  QV_CHECK_EQ_INT(u->children[1]->length, 5);
  QV_CHECK_EQ_INT(((const int32_t *)u->buffers[1]->data)[0], 0); /* rebased */
  /* rows 41..50 cover child values 82..101 */
  QV_CHECK_EQ_INT(lv->children[0]->length, 20);
  QV_CHECK_EQ_INT(((const int32_t *)lv->buffers[1]->data)[0], 0);
  /* one data buffer of exactly 10 values of 24 bytes */
  QV_CHECK_EQ_INT(sv->n_buffers, 3);
  QV_CHECK_EQ_INT(sv->buffers[2]->size, 240);
  qv_array_unref(got);
  qv_reader_close(r);

  /* 10 batches of 10 rows: the file grows linearly, and reads back equal */
  o.max_batch_rows = 10;
  QV_REQUIRE(qv_writer_open_path(path, schema, &o, &w, &err) == QV_OK);
  QV_CHECK(qv_writer_write_batch(w, full, &err) == QV_OK);
  QV_CHECK(qv_writer_close(w, &err) == QV_OK);
  QV_REQUIRE(qv_reader_open_path(path, &ro, &r, &err) == QV_OK);
  QV_CHECK(qv_reader_size(r) < 20000);
  int64_t row = 0, sv_bytes = 0;
  for (;;) {
    QV_CHECK(qv_reader_next(r, &got, &err) == QV_OK);
    if (got == NULL) break;
    qv_array *want = NULL;
    QV_REQUIRE(qv_array_slice(full, row, got->length, &want, &err) == QV_OK);
    QV_CHECK(qv_array_equals(want, got, &err));
    sv_bytes += got->children[2]->buffers[2]->size;
    row += got->length;
    qv_array_unref(want);
    qv_array_unref(got);
  }
  QV_CHECK_EQ_INT(row, 100);
  QV_CHECK_EQ_INT(sv_bytes, 2400);
  qv_reader_close(r);
  unlink(path);
  qv_array_unref(slice);
  qv_array_unref(full);
  qv_schema_unref(schema);
  qv_type_unref(st);
}

/* The compressed bytes do not depend on the number of threads (batches
 * are compressed in the background, several in flight). */
static void test_threads_same_bytes(void) {
  qv_error err;
  qv_type *st = make_schema_type();
  qv_schema *schema = qv_schema_new(qv_type_ref(st));
  qv_array *batch = make_batch(st);
  char p1[512], p2[512];
  path_in_dir(p1, sizeof p1, "t1.arrow");
  path_in_dir(p2, sizeof p2, "t4.arrow");
  for (int codec = 1; codec <= 2; codec++) {
    for (int k = 0; k < 2; k++) {
      qv_write_options o = {QV_FORMAT_FILE, (qv_compression)codec, 0, 0, 3, k ? 4 : 1};
      qv_writer *w = NULL;
      QV_REQUIRE(qv_writer_open_path(k ? p2 : p1, schema, &o, &w, &err) == QV_OK);
      for (int rep = 0; rep < 3; rep++) QV_CHECK(qv_writer_write_batch(w, batch, &err) == QV_OK);
      QV_CHECK(qv_writer_close(w, &err) == QV_OK);
    }
    qv_buffer *a = NULL, *b = NULL;
    QV_REQUIRE(qv_buffer_map_file(p1, &a, NULL, &err) == QV_OK);
    QV_REQUIRE(qv_buffer_map_file(p2, &b, NULL, &err) == QV_OK);
    QV_CHECK(a->size == b->size && memcmp(a->data, b->data, (size_t)a->size) == 0);
    qv_buffer_unref(a);
    qv_buffer_unref(b);
  }
  unlink(p1);
  unlink(p2);
  /* Batches still being compressed when the write is abandoned, or when a
   * later batch fails: nothing is committed, nothing leaks (ASan). */
  for (int k = 0; k < 2; k++) {
    qv_write_options o = {QV_FORMAT_STREAM, QV_COMPRESSION_ZSTD, 0, 0, 2, 3};
    qv_writer *w = NULL;
    QV_REQUIRE(qv_writer_open_path(p1, schema, &o, &w, &err) == QV_OK);
    for (int rep = 0; rep < 2; rep++) QV_CHECK(qv_writer_write_batch(w, batch, &err) == QV_OK);
    if (k == 0) {
      qv_writer_abort(w);
    } else {
      QV_CHECK_EQ_INT(qv_writer_write_batch(w, batch->children[0], &err), QV_ETYPE);
      QV_CHECK_EQ_INT(qv_writer_close(w, &err), QV_EARG);
    }
    QV_CHECK(access(p1, F_OK) != 0);
    QV_CHECK_EQ_INT(count_temps(), 0);
  }
  qv_array_unref(batch);
  qv_schema_unref(schema);
  qv_type_unref(st);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/qv_test_writer_XXXXXX");
  if (mkdtemp(g_dir) == NULL) return 1;
  QV_RUN(test_roundtrip_matrix);
  QV_RUN(test_ree_slice);
  QV_RUN(test_dictionary_delta_and_replacement);
  QV_RUN(test_atomic);
  QV_RUN(test_write_c_stream);
  QV_RUN(test_compact_slices);
  QV_RUN(test_threads_same_bytes);
  rmdir(g_dir);
  return QV_TEST_END();
}
