/*
 * table_test_util.h — helpers for the table tests (test_table*.c): random
 * tables of many small batches over the array_oracle.h type catalog, a
 * brute-force reference ("grid": every cell rendered to text by the
 * oracle renderer, row by row), the reference versions of every transform
 * (plain loops over the grid), comparison of a table with a grid, and
 * writing a table to an IPC stream file to open it memory-mapped.
 */
#ifndef QV_TABLE_TEST_UTIL_H
#define QV_TABLE_TEST_UTIL_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array_oracle.h"
#include "quiver/table.h"
#include "quiver/writer.h"
#include "qv_test.h"

/* --------------------------------------------------------------- grid -- */

typedef struct grid {
  int64_t rows;
  int32_t cols;
  char **names; /* [cols] */
  char ***cell; /* [rows][cols] */
} grid;

static grid grid_new(int64_t rows, int32_t cols) {
  grid g = {rows, cols, calloc((size_t)(cols > 0 ? cols : 1), sizeof(char *)),
            calloc((size_t)(rows > 0 ? rows : 1), sizeof(char **))};
  for (int64_t r = 0; r < rows; r++)
    g.cell[r] = calloc((size_t)(cols > 0 ? cols : 1), sizeof(char *));
  return g;
}

static void grid_free(grid *g) {
  for (int64_t r = 0; r < g->rows; r++) {
    for (int32_t c = 0; c < g->cols; c++) free(g->cell[r][c]);
    free(g->cell[r]);
  }
  for (int32_t c = 0; c < g->cols; c++) free(g->names[c]);
  free(g->cell);
  free(g->names);
  memset(g, 0, sizeof *g);
}

static char *xstrdup(const char *s) {
  char *d = malloc(strlen(s) + 1);
  strcpy(d, s);
  return d;
}

/* The grid of a table, rendered batch by batch (qv_table_batch, not
 * gather). */
static grid grid_of(qv_table *t) {
  const qv_schema *s = qv_table_schema(t);
  int32_t nc = qv_schema_num_fields(s);
  grid g = grid_new(qv_table_num_rows(t), nc);
  for (int32_t c = 0; c < nc; c++) g.names[c] = xstrdup(qv_schema_field(s, c)->name);
  int64_t row = 0;
  for (int64_t b = 0; b < qv_table_num_batches(t); b++) {
    qv_array *batch = NULL;
    qv_error err;
    if (qv_table_batch(t, b, &batch, &err) != QV_OK) {
      fprintf(stderr, "grid_of: batch %lld: %s\n", (long long)b, err.message);
      abort();
    }
    for (int64_t i = 0; i < batch->length; i++, row++)
      for (int32_t c = 0; c < nc; c++) g.cell[row][c] = orc_str(batch->children[c], i);
    qv_array_unref(batch);
  }
  return g;
}

static grid grid_copy_rows(const grid *src, const int64_t *rows, int64_t n) {
  grid g = grid_new(n, src->cols);
  for (int32_t c = 0; c < src->cols; c++) g.names[c] = xstrdup(src->names[c]);
  for (int64_t r = 0; r < n; r++)
    for (int32_t c = 0; c < src->cols; c++) g.cell[r][c] = xstrdup(src->cell[rows[r]][c]);
  return g;
}

static grid grid_slice(const grid *src, int64_t off, int64_t len) {
  int64_t *rows = malloc(sizeof(int64_t) * (size_t)(len > 0 ? len : 1));
  for (int64_t i = 0; i < len; i++) rows[i] = off + i;
  grid g = grid_copy_rows(src, rows, len);
  free(rows);
  return g;
}

static grid grid_select(const grid *src, const int32_t *cols, int32_t n) {
  grid g = grid_new(src->rows, n);
  for (int32_t c = 0; c < n; c++) g.names[c] = xstrdup(src->names[cols[c]]);
  for (int64_t r = 0; r < src->rows; r++)
    for (int32_t c = 0; c < n; c++) g.cell[r][c] = xstrdup(src->cell[r][cols[c]]);
  return g;
}

static grid grid_copy(const grid *src) {
  grid g = grid_new(src->rows, src->cols);
  for (int32_t c = 0; c < src->cols; c++) g.names[c] = xstrdup(src->names[c]);
  for (int64_t r = 0; r < src->rows; r++)
    for (int32_t c = 0; c < src->cols; c++) g.cell[r][c] = xstrdup(src->cell[r][c]);
  return g;
}

/* Rows of a followed by rows of b (same columns). */
static grid grid_vcat(const grid *a, const grid *b) {
  grid g = grid_new(a->rows + b->rows, a->cols);
  for (int32_t c = 0; c < a->cols; c++) g.names[c] = xstrdup(a->names[c]);
  for (int64_t r = 0; r < g.rows; r++)
    for (int32_t c = 0; c < a->cols; c++)
      g.cell[r][c] = xstrdup(r < a->rows ? a->cell[r][c] : b->cell[r - a->rows][c]);
  return g;
}

/* Columns of a followed by columns of b (same rows). */
static grid grid_hcat(const grid *a, const grid *b) {
  grid g = grid_new(a->rows, a->cols + b->cols);
  for (int32_t c = 0; c < g.cols; c++)
    g.names[c] = xstrdup(c < a->cols ? a->names[c] : b->names[c - a->cols]);
  for (int64_t r = 0; r < g.rows; r++)
    for (int32_t c = 0; c < g.cols; c++)
      g.cell[r][c] = xstrdup(c < a->cols ? a->cell[r][c] : b->cell[r][c - a->cols]);
  return g;
}

/* Compare a table with a grid: names, then every cell; reports the first
 * difference with `what`. Returns true when equal. */
static bool grid_matches(qv_table *t, const grid *want, const char *what) {
  grid got = grid_of(t);
  bool ok = true;
  if (got.rows != want->rows || got.cols != want->cols) {
    fprintf(stderr, "%s: shape %lld x %d, expected %lld x %d\n", what, (long long)got.rows,
            got.cols, (long long)want->rows, want->cols);
    ok = false;
  }
  for (int32_t c = 0; ok && c < got.cols; c++)
    if (strcmp(got.names[c], want->names[c]) != 0) {
      fprintf(stderr, "%s: column %d named '%s', expected '%s'\n", what, c, got.names[c],
              want->names[c]);
      ok = false;
    }
  for (int64_t r = 0; ok && r < got.rows; r++)
    for (int32_t c = 0; ok && c < got.cols; c++)
      if (strcmp(got.cell[r][c], want->cell[r][c]) != 0) {
        fprintf(stderr, "%s: row %lld column %d: got %s, expected %s\n", what, (long long)r, c,
                got.cell[r][c], want->cell[r][c]);
        ok = false;
      }
  grid_free(&got);
  return ok;
}

/* ------------------------------------------------------------ tables -- */

/* A schema of the given catalog types (orc_type numbers), columns "c0".. */
static qv_schema *rt_schema(const int *types, int32_t n) {
  qv_type *st = qv_type_new(QV_STRUCT);
  for (int32_t c = 0; c < n; c++) {
    char name[16];
    snprintf(name, sizeof name, "c%d", c);
    QV_CHECK(qv_type_add_child(st, name, true, orc_type(types[c]), NULL, NULL) == QV_OK);
  }
  qv_schema *s = qv_schema_new(st);
  QV_CHECK(qv_metadata_append(&s->metadata, "k", 1, "v", 1, NULL) == QV_OK);
  return s;
}

/* A random in-memory table: `rows` rows in batches of 1..max_batch rows
 * (some batches sliced out of longer ones). */
static qv_table *rt_table(const qv_schema *s, int64_t rows, int64_t max_batch) {
  int32_t nc = qv_schema_num_fields(s);
  qv_array **batches = NULL;
  int64_t nb = 0, done = 0;
  while (done < rows) {
    int64_t len = 1 + orc_int(max_batch);
    if (len > rows - done) len = rows - done;
    qv_array *b = qv_array_new(s->type, 1, nc);
    b->length = len;
    b->null_count = 0;
    for (int32_t c = 0; c < nc; c++)
      b->children[c] = orc_gen_sliced(s->type->children[c].type, len);
    batches = realloc(batches, sizeof *batches * (size_t)(nb + 1));
    batches[nb++] = b;
    done += len;
  }
  qv_table *t = NULL;
  qv_error err;
  if (qv_table_from_batches(s, batches, nb, &t, &err) != QV_OK) {
    fprintf(stderr, "rt_table: %s\n", err.message);
    abort();
  }
  for (int64_t i = 0; i < nb; i++) qv_array_unref(batches[i]);
  free(batches);
  return t;
}

/* Temporary directory for written files (removed by rt_cleanup). */
static char rt_dir[256];
static int rt_files;

static const char *rt_tmpdir(void) {
  if (rt_dir[0] == '\0') {
    snprintf(rt_dir, sizeof rt_dir, "/tmp/qv-table-test-XXXXXX");
    if (mkdtemp(rt_dir) == NULL) abort();
  }
  return rt_dir;
}

static void rt_cleanup(void) {
  if (rt_dir[0] == '\0') return;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", rt_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", rt_dir);
  rt_dir[0] = '\0';
}

/* Write a table's batches to a new IPC stream file; returns its path
 * (static storage, rotating between 8 slots). */
static const char *rt_write(qv_table *t) {
  static char paths[8][300];
  char *path = paths[rt_files % 8];
  snprintf(path, 300, "%s/t%d.arrow", rt_tmpdir(), rt_files++);
  qv_write_options wo = {0};
  wo.format = QV_FORMAT_STREAM;
  wo.max_batch_rows = -1;
  qv_error err;
  if (qv_table_write_path(t, path, &wo, &err) != QV_OK) {
    fprintf(stderr, "rt_write: %s\n", err.message);
    abort();
  }
  return path;
}

/* The same table, memory-mapped from a file. */
static qv_table *rt_mapped(qv_table *t) {
  const char *path = rt_write(t);
  qv_table *m = NULL;
  qv_error err;
  if (qv_table_open_path(path, NULL, &m, &err) != QV_OK) {
    fprintf(stderr, "rt_mapped: %s\n", err.message);
    abort();
  }
  return m;
}

/* The error every call in a test writes into; RT_OK prints it. */
static qv_error E;

#define RT_OK(expr)                                                                                \
  do {                                                                                             \
    E.message[0] = '\0';                                                                           \
    qv_status rt_st_ = (expr);                                                                     \
    if (rt_st_ != QV_OK)                                                                           \
      fprintf(stderr, "%s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #expr, (int)rt_st_, E.message); \
    QV_CHECK(rt_st_ == QV_OK);                                                                     \
  } while (0)

#endif /* QV_TABLE_TEST_UTIL_H */
