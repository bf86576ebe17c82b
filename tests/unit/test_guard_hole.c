/*
 * test_guard_hole.c — a mapped file that changes *during* a guarded call
 * (include/quiver/guard.h): every guarded entry point first checks the last
 * byte of each mapped buffer, so a file already cut fails before anything
 * is built; a cut that happens while the call runs faults inside its body
 * instead, and whatever the body had allocated must still be freed. The
 * test makes that happen deterministically: after decoding a batch of an
 * IPC file it maps an empty file over one page inside the string column's
 * data (MAP_FIXED over quiver's own mapping), so the buffer's last byte
 * still reads but its first pages raise SIGBUS, as pages past a new end
 * of file do. Each call (row encode, sort, take, gather, concat, cast,
 * validation, row formatting, the grouper, an expression, the writer,
 * unique) must fail with an error (QV_EIO: the file itself did not
 * shrink) and leave nothing behind: run under ASan/LSan by `make asan`,
 * a leak fails the test. The rows before the hole still read.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quiver/quiver.h"
#include "qv_build.h"
#include "qv_test.h"

#define N_ROWS 1000 /* one batch */

static char dir[256];

static void str_of(int64_t i, char *out, size_t n) {
  snprintf(out, n, "row-%06lld-%.*s", (long long)i, (int)(i % 37),
           "abcdefghijklmnopqrstuvwxyz0123456789");
}

/* One batch: id (int64), s (string). */
static char path[400];

/* Write the file to `path`. */
static void write_file(void) {
  snprintf(path, sizeof path, "%s/hole.arrow", dir);
  qv_type *type = tb_type(QV_STRUCT);
  tb_child(type, "id", tb_type(QV_INT64));
  tb_child(type, "s", tb_type(QV_STRING));
  int64_t n = N_ROWS;
  qv_buffer *ids = tb_buf(NULL, n * 8);
  qv_buffer *offs = tb_buf(NULL, (n + 1) * 4);
  char tmp[128];
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    str_of(i, tmp, sizeof tmp);
    total += (int64_t)strlen(tmp);
  }
  qv_buffer *data = tb_buf(NULL, total);
  int32_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    memcpy(ids->data + 8 * i, &i, 8);
    memcpy(offs->data + 4 * i, &pos, 4);
    str_of(i, tmp, sizeof tmp);
    memcpy(data->data + pos, tmp, strlen(tmp));
    pos += (int32_t)strlen(tmp);
  }
  memcpy(offs->data + 4 * n, &pos, 4);
  qv_buffer *ib[2] = {NULL, ids};
  qv_buffer *sb[3] = {NULL, offs, data};
  qv_array *cols[2] = {tb_array(tb_type(QV_INT64), n, 2, ib, 0, NULL),
                       tb_array(tb_type(QV_STRING), n, 3, sb, 0, NULL)};
  qv_array *batch = tb_array(qv_type_ref(type), n, 1, (qv_buffer *[]){NULL}, 2, cols);
  qv_schema *schema = qv_schema_new(type);
  qv_writer *w = NULL;
  qv_error e;
  QV_REQUIRE(qv_writer_open_path(path, schema, NULL, &w, &e) == QV_OK);
  QV_REQUIRE(qv_writer_write_batch(w, batch, &e) == QV_OK);
  QV_REQUIRE(qv_writer_close(w, &e) == QV_OK);
  qv_array_unref(batch);
  qv_schema_unref(schema);
}

/* Map an empty file over the page of the mapping at `at` (page aligned):
 * reading it raises SIGBUS (BUS_ADRERR), as a page past a new end does. */
static void punch(const void *at) {
  char p[400];
  snprintf(p, sizeof p, "%s/empty", dir);
  int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
  QV_REQUIRE(fd >= 0);
  long page = sysconf(_SC_PAGESIZE);
  void *m = mmap((void *)at, (size_t)page, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  QV_REQUIRE(m == at);
  close(fd);
}

static bool failed(qv_status st, const qv_error *e, const char *what) {
  if (st == QV_EIO || st == QV_ECHANGED) {
    if (strstr(e->message, "hole.arrow") != NULL) return true;
    fprintf(stderr, "  %s: message does not name the file: %s\n", what, e->message);
    return false;
  }
  fprintf(stderr, "  %s: status %d (%s)\n", what, (int)st, e->message);
  return false;
}

/* A call that fails leaves its output NULL; one that (wrongly) succeeds
 * has its result dropped here, so that only the library's leaks count. */
static void drop(qv_array **got) {
  QV_CHECK(*got == NULL);
  qv_array_unref(*got);
  *got = NULL;
}

static void test_hole_during_calls(void) {
  write_file();
  qv_table *t = NULL;
  qv_error e;
  QV_REQUIRE(qv_table_open_path(path, NULL, &t, &e) == QV_OK);
  qv_array *b = NULL;
  QV_REQUIRE(qv_table_batch(t, 0, &b, &e) == QV_OK);
  qv_array *s = b->children[1];
  int64_t n = b->length; /* the writer's first batch */
  const uint8_t *data = s->buffers[2]->data;
  int64_t size = s->buffers[2]->size;
  long page = sysconf(_SC_PAGESIZE);
  const uint8_t *hole =
      (const uint8_t *)(((uintptr_t)data + 2 * (uintptr_t)page - 1) & ~((uintptr_t)page - 1));
  QV_REQUIRE(hole + page < data + size - 1); /* the last byte stays readable */
  /* Rows whose strings end before the hole. */
  const int32_t *off = (const int32_t *)(const void *)s->buffers[1]->data;
  int64_t intact = 0;
  while (intact < n && data + off[intact + 1] < hole) intact++;
  QV_REQUIRE(intact > 10);
  int64_t in_hole = intact + 1; /* a row whose string lies in the hole */
  QV_REQUIRE(data + off[in_hole] >= hole && data + off[in_hole + 1] <= hole + page);
  punch(hole);
  QV_CHECK_EQ_INT(qv_guard_check_array(b, &e), QV_OK); /* the check cannot see it */

  qv_status st;
  /* Row encoding (var-length rows: one pass, and the grouper on top). */
  qv_row_metadata md;
  qv_type *kt[2] = {b->children[0]->type, s->type};
  QV_REQUIRE(qv_row_metadata_from_types(&md, kt, 2, 8, 8, &e) == QV_OK);
  qv_row_table rt;
  QV_REQUIRE(qv_row_table_init(&rt, &md, &e) == QV_OK);
  st = qv_row_encode(&rt, b->children, NULL, n, &e);
  QV_CHECK(failed(st, &e, "row encode"));
  qv_row_table_reset(&rt);
  qv_row_metadata_reset(&md);
  qv_grouper *g = NULL;
  QV_REQUIRE(qv_grouper_new(kt, 2, &g, &e) == QV_OK);
  uint32_t *gid = malloc(sizeof(uint32_t) * n);
  st = qv_grouper_consume(g, b->children, gid, &e);
  QV_CHECK(failed(st, &e, "grouper"));
  free(gid);
  qv_grouper_free(g);
  /* Sort by the strings, unique. */
  int64_t *order = malloc(sizeof(int64_t) * n);
  st = qv_sort_indices_array(s, false, QV_NULLS_AT_END, order, &e);
  QV_CHECK(failed(st, &e, "sort"));
  free(order);
  qv_array *got = NULL;
  qv_chunked_column cc = {s->type, &s, 1};
  st = qv_unique(&cc, &got, &e);
  QV_CHECK(failed(st, &e, "unique"));
  drop(&got);
  /* take, gather, concat, cast, validation, formatting. */
  int64_t *idx = malloc(sizeof(int64_t) * n);
  for (int64_t i = 0; i < n; i++) idx[i] = n - 1 - i;
  st = qv_array_take(s, idx, n, &got, &e);
  QV_CHECK(failed(st, &e, "take"));
  drop(&got);
  st = qv_table_gather(t, idx, n, &got, &e);
  QV_CHECK(failed(st, &e, "gather"));
  drop(&got);
  free(idx);
  qv_array *parts[2] = {s, s};
  st = qv_array_concat(parts, 2, &got, &e);
  QV_CHECK(failed(st, &e, "concat"));
  drop(&got);
  /* binary -> string checks the bytes are UTF-8: the same buffers as s. */
  qv_buffer *bb[3] = {NULL, qv_buffer_ref(s->buffers[1]), qv_buffer_ref(s->buffers[2])};
  qv_array *bin = tb_array(tb_type(QV_BINARY), n, 3, bb, 0, NULL);
  bin->offset = s->offset;
  qv_type *st_type = qv_type_new(QV_STRING);
  st = qv_array_cast(bin, st_type, &got, &e);
  QV_CHECK(failed(st, &e, "cast"));
  drop(&got);
  qv_type_unref(st_type);
  qv_array_unref(bin);
  st = qv_array_validate(b, QV_VALIDATE_FULL, "batch", &e);
  QV_CHECK(failed(st, &e, "validate"));
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  st = qv_format_row_json(b, in_hole, &sb, &e);
  QV_CHECK(failed(st, &e, "format"));
  /* An expression over the strings. */
  qv_expr *x = NULL;
  qv_bound_expr *bx = NULL;
  QV_REQUIRE(qv_expr_parse("s > 'row'", -1, &x, &e) == QV_OK);
  QV_REQUIRE(qv_expr_bind(x, qv_table_schema(t), &bx, &e) == QV_OK);
  st = qv_bound_expr_eval(bx, b, &got, &e);
  QV_CHECK(failed(st, &e, "expression"));
  drop(&got);
  qv_bound_expr_free(bx);
  qv_expr_free(x);
  /* The writer copying the batch out. */
  char out_path[400];
  snprintf(out_path, sizeof out_path, "%s/copy.arrow", dir);
  qv_writer *w = NULL;
  QV_REQUIRE(qv_writer_open_path(out_path, qv_table_schema(t), NULL, &w, &e) == QV_OK);
  st = qv_writer_write_batch(w, b, &e);
  QV_CHECK(failed(st, &e, "writer"));
  qv_writer_abort(w);

  /* Rows before the hole still format. */
  qv_strbuf_clear(&sb);
  QV_CHECK_EQ_INT(qv_format_row_json(b, intact - 1, &sb, &e), QV_OK);
  char want[200], text[128];
  str_of(intact - 1, text, sizeof text);
  snprintf(want, sizeof want, "{\"id\":%lld,\"s\":\"%s\"}", (long long)(intact - 1), text);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), want);
  qv_strbuf_reset(&sb);
  qv_array_unref(b);
  qv_table_unref(t);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/qv-hole-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  QV_RUN(test_hole_during_calls);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return QV_TEST_END();
}
