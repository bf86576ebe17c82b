/* test_table.c — in-memory and memory-mapped tables against a brute-force
 * reference grid (table_test_util.h): random tables of every catalog type
 * with nulls and many small batches; fast_slice (interpolation search on
 * skewed batch sizes, zero copy, lazy mapped entries), gather/take (any
 * order, repeats), filter (null mask values drop), select / drop / rename /
 * reorder, add / append / set column across chunk boundaries, combine;
 * replays recorded on mapped tables (and merged where exact); empty tables
 * (0 rows, 0 batches, 0 columns) through every operation; argument errors
 * with their exact text. */
#include "core/take_internal.h"
#include "quiver/cdata.h"
#include "table/table_internal.h"
#include "table_test_util.h"

static int32_t rand_types(int *types, int32_t max) {
  int32_t n = (int32_t)(1 + orc_int(max));
  for (int32_t c = 0; c < n; c++) types[c] = (int)orc_int(ORC_N_TYPES);
  return n;
}

static void random_indices(int64_t *idx, int64_t n, int64_t rows) {
  int mode = (int)orc_int(3);
  for (int64_t i = 0; i < n; i++) {
    if (mode == 0) idx[i] = orc_int(rows);
    else if (mode == 1) idx[i] = (i * 7) % rows;
    else idx[i] = rows - 1 - orc_int(rows < 4 ? rows : 4);
  }
}

/* A random bool mask of n values with nulls; keep[i] = valid && true. */
static qv_array *random_mask(int64_t n, bool *keep) {
  qv_type *bt = qv_type_new(QV_BOOL);
  qv_array *m = orc_gen_sliced(bt, n);
  qv_type_unref(bt);
  for (int64_t i = 0; i < n; i++)
    keep[i] = qv_array_is_valid(m, i) && qv_bit_get(m->buffers[1]->data, m->offset + i);
  return m;
}

/* Every transform on `t` (in-memory or mapped) against the grid. */
static void check_transforms(qv_table *t, const grid *g, const char *what) {
  int64_t rows = g->rows;
  int32_t nc = g->cols;
  qv_table_kind kind = qv_table_get_kind(t);
  char label[128];
  /* slice */
  for (int k = 0; k < 4; k++) {
    int64_t off = orc_int(rows + 1), len = orc_int(rows - off + 1);
    qv_table *s = NULL;
    RT_OK(qv_table_slice(t, off, len, &s, &E));
    if (s == NULL) continue;
    grid want = grid_slice(g, off, len);
    snprintf(label, sizeof label, "%s: slice(%lld, %lld)", what, (long long)off, (long long)len);
    QV_CHECK(grid_matches(s, &want, label));
    QV_CHECK_EQ_INT(qv_table_get_kind(s), kind);
    grid_free(&want);
    qv_table_unref(s);
  }
  /* take */
  int64_t n = rows == 0 ? 0 : orc_int(3 * rows + 2);
  int64_t *idx = malloc(sizeof *idx * (size_t)(n + 1));
  random_indices(idx, n, rows);
  qv_table *tk = NULL;
  RT_OK(qv_table_take(t, idx, n, &tk, &E));
  if (tk != NULL) {
    grid want = grid_copy_rows(g, idx, n);
    snprintf(label, sizeof label, "%s: take(%lld)", what, (long long)n);
    QV_CHECK(grid_matches(tk, &want, label));
    QV_CHECK_EQ_INT(qv_table_get_kind(tk), kind);
    QV_CHECK(qv_table_num_batches(tk) == (n > 0));
    grid_free(&want);
    qv_table_unref(tk);
  }
  free(idx);
  /* filter */
  bool *keep = malloc((size_t)rows + 1);
  qv_array *mask = random_mask(rows, keep);
  int64_t *rowsel = malloc(sizeof *rowsel * (size_t)(rows + 1));
  int64_t kept = 0;
  for (int64_t i = 0; i < rows; i++)
    if (keep[i]) rowsel[kept++] = i;
  qv_table *f = NULL;
  RT_OK(qv_table_filter(t, mask, &f, &E));
  if (f != NULL) {
    grid want = grid_copy_rows(g, rowsel, kept);
    snprintf(label, sizeof label, "%s: filter", what);
    QV_CHECK(grid_matches(f, &want, label));
    grid_free(&want);
    qv_table_unref(f);
  }
  qv_array_unref(mask);
  free(keep);
  free(rowsel);
  /* select (reorder, repeats), drop, rename */
  int32_t sel[8], ns = (int32_t)orc_int(6);
  for (int32_t i = 0; i < ns; i++) sel[i] = (int32_t)orc_int(nc);
  if (nc == 0) ns = 0;
  qv_table *s = NULL;
  RT_OK(qv_table_select(t, sel, ns, &s, &E));
  if (s != NULL) {
    grid want = grid_select(g, sel, ns);
    snprintf(label, sizeof label, "%s: select", what);
    QV_CHECK(grid_matches(s, &want, label));
    QV_CHECK_EQ_INT(qv_table_num_rows(s), rows);
    grid_free(&want);
    /* rename the selection */
    const char *names[8];
    char buf[8][16];
    for (int32_t i = 0; i < ns; i++) {
      snprintf(buf[i], sizeof buf[i], "r%d", i);
      names[i] = buf[i];
    }
    qv_table *rn = NULL;
    RT_OK(qv_table_rename(s, names, ns, &rn, &E));
    if (rn != NULL) {
      for (int32_t i = 0; i < ns; i++)
        QV_CHECK_EQ_STR(qv_schema_field(qv_table_schema(rn), i)->name, buf[i]);
      grid g2 = grid_of(s), g3 = grid_of(rn);
      for (int64_t r = 0; r < rows; r++)
        for (int32_t c = 0; c < ns; c++) QV_CHECK_EQ_STR(g3.cell[r][c], g2.cell[r][c]);
      grid_free(&g2);
      grid_free(&g3);
      qv_table_unref(rn);
    }
    qv_table_unref(s);
  }
  if (nc > 0) {
    int32_t d = (int32_t)orc_int(nc), keepc[8], nk = 0;
    for (int32_t c = 0; c < nc; c++)
      if (c != d) keepc[nk++] = c;
    qv_table *dr = NULL;
    RT_OK(qv_table_drop(t, &d, 1, &dr, &E));
    if (dr != NULL) {
      grid want = grid_select(g, keepc, nk);
      snprintf(label, sizeof label, "%s: drop", what);
      QV_CHECK(grid_matches(dr, &want, label));
      grid_free(&want);
      qv_table_unref(dr);
    }
  }
  /* combine */
  qv_table *cb = NULL;
  RT_OK(qv_table_combine_batches(t, &cb, &E));
  if (cb != NULL) {
    snprintf(label, sizeof label, "%s: combine", what);
    QV_CHECK(grid_matches(cb, g, label));
    QV_CHECK_EQ_INT(qv_table_num_batches(cb), rows > 0 ? 1 : 0);
    qv_table_unref(cb);
  }
  /* chained: slice, select, take, filter */
  if (rows > 2 && nc > 0) {
    qv_table *a = NULL, *b = NULL, *c = NULL;
    int64_t off = orc_int(rows / 2), len = rows - off - orc_int(rows - off);
    int32_t col = (int32_t)orc_int(nc);
    RT_OK(qv_table_slice(t, off, len, &a, &E));
    RT_OK(qv_table_select(a, &col, 1, &b, &E));
    int64_t ix[5] = {len - 1, 0, len / 2, 0, len - 1};
    if (len > 0) RT_OK(qv_table_take(b, ix, 5, &c, &E));
    if (c != NULL) {
      grid g1 = grid_slice(g, off, len), g2 = grid_select(&g1, &col, 1),
           g3 = grid_copy_rows(&g2, ix, 5);
      snprintf(label, sizeof label, "%s: slice/select/take", what);
      QV_CHECK(grid_matches(c, &g3, label));
      if (kind == QV_TABLE_MAPPED) QV_CHECK_EQ_INT(qv_table_num_replays(c), 3);
      grid_free(&g1);
      grid_free(&g2);
      grid_free(&g3);
    }
    qv_table_unref(a);
    qv_table_unref(b);
    qv_table_unref(c);
  }
}

static void test_transforms_random(void) {
  for (int trial = 0; trial < 120; trial++) {
    int types[8];
    int32_t nc = rand_types(types, trial % 10 == 0 ? 0 : 5);
    if (trial % 10 == 0) nc = 0;
    qv_schema *s = rt_schema(types, nc);
    int64_t rows = trial % 7 == 0 ? 0 : orc_int(120);
    qv_table *t = rt_table(s, rows, 1 + orc_int(12));
    grid g = grid_of(t);
    check_transforms(t, &g, "in-memory");
    if (nc > 0) { /* a 0-column table has no batches to write */
      qv_table *m = rt_mapped(t);
      QV_CHECK_EQ_INT(qv_table_get_kind(m), QV_TABLE_MAPPED);
      QV_CHECK(grid_matches(m, &g, "mapped"));
      check_transforms(m, &g, "mapped");
      qv_table_unref(m);
    }
    grid_free(&g);
    qv_table_unref(t);
    qv_schema_unref(s);
  }
}

/* Every catalog type once, as one column, through gather and filter. */
static void test_every_type(void) {
  for (int ti = 0; ti < ORC_N_TYPES; ti++) {
    int types[2] = {ti, 5};
    qv_schema *s = rt_schema(types, 2);
    qv_table *t = rt_table(s, 200, 9);
    qv_table *m = rt_mapped(t);
    grid g = grid_of(t);
    for (int k = 0; k < 2; k++) {
      qv_table *x = k ? m : t;
      int64_t idx[300];
      for (int i = 0; i < 300; i++) idx[i] = orc_int(200);
      qv_array *out = NULL;
      RT_OK(qv_table_gather(x, idx, 300, &out, &E));
      if (out == NULL) {
        fprintf(stderr, "type %d\n", ti);
        continue;
      }
      QV_CHECK_EQ_INT(out->length, 300);
      qv_error verr;
      QV_CHECK(qv_array_validate(out, QV_VALIDATE_FULL, "gather", &verr) == QV_OK);
      for (int i = 0; i < 300; i++) {
        char *got = orc_str(out->children[0], i);
        if (strcmp(got, g.cell[idx[i]][0]) != 0) {
          fprintf(stderr, "type %d (%s) row %d\n", ti, k ? "mapped" : "memory", i);
          QV_CHECK_EQ_STR(got, g.cell[idx[i]][0]);
        }
        free(got);
      }
      qv_array_unref(out);
    }
    grid_free(&g);
    qv_table_unref(m);
    qv_table_unref(t);
    qv_schema_unref(s);
  }
}

/* Gather `idx` with the sorted path (thresholds lowered, the kernels'
 * loops on two threads) and with the direct path (thresholds raised, one
 * thread): the same bits (or the same error), and the grid's cells. */
static void check_gather_paths(qv_table *t, const grid *g, const int64_t *idx, int64_t n,
                               const char *what) {
  int64_t save_n = qv_tbl_gather_sort_min_n, save_rows = qv_tbl_gather_sort_min_rows;
  int64_t save_par = qv_take_parallel_min_n;
  qv_array *sorted = NULL, *direct = NULL;
  qv_error e1, e2;
  qv_tbl_gather_sort_min_n = 1; /* sorted, columns on two threads */
  qv_tbl_gather_sort_min_rows = 1;
  qv_take_parallel_min_n = 1;
  qv_status s1 = qv_table_gather(t, idx, n, &sorted, &e1);
  qv_tbl_gather_sort_min_n = INT64_MAX; /* direct, one column after the other */
  qv_take_parallel_min_n = INT64_MAX;
  qv_status s2 = qv_table_gather(t, idx, n, &direct, &e2);
  qv_tbl_gather_sort_min_n = save_n;
  qv_tbl_gather_sort_min_rows = save_rows;
  qv_take_parallel_min_n = save_par;
  if (s1 != QV_OK || s2 != QV_OK) {
    /* The same error either way (an int8 dictionary index that overflows
     * once the batches' dictionaries are merged). */
    QV_CHECK_EQ_INT(s1, s2);
    QV_CHECK_EQ_INT(s2, QV_ERANGE);
    if (s1 != QV_OK && s2 != QV_OK) QV_CHECK_EQ_STR(e1.message, e2.message);
    qv_array_unref(sorted);
    qv_array_unref(direct);
    return;
  }
  const char *diff = orc_same_bits(direct, sorted);
  if (diff != NULL) fprintf(stderr, "%s: %s differ\n", what, diff);
  QV_CHECK(diff == NULL);
  qv_error verr;
  QV_CHECK(qv_array_validate(sorted, QV_VALIDATE_FULL, "gather", &verr) == QV_OK);
  QV_CHECK_EQ_INT(sorted->length, n);
  for (int64_t i = 0; i < n && i < sorted->length; i++) {
    for (int32_t c = 0; c < g->cols; c++) {
      char *got = orc_str(sorted->children[c], i);
      if (strcmp(got, g->cell[idx[i]][c]) != 0) {
        fprintf(stderr, "%s: row %lld column %d\n", what, (long long)i, c);
        QV_CHECK_EQ_STR(got, g->cell[idx[i]][c]);
        i = n;
      }
      free(got);
    }
  }
  qv_array_unref(sorted);
  qv_array_unref(direct);
}

/* Large gathers from large tables run in row order, each value written to
 * its output row: the same bits as the gather in output order, for every
 * type (those written in place and those put in output order first), in
 * memory (batches of uneven sizes, empty batches given) and mapped; around
 * the size threshold; with repeats, all-equal, ascending and descending
 * indices, and rows at every batch boundary. */
static void test_gather_sorted(void) {
  for (int k = 0; k < ORC_N_TYPES; k++) {
    int types[2] = {k, (k + 15) % ORC_N_TYPES};
    qv_schema *s = rt_schema(types, 2);
    qv_table *t = rt_table(s, 700, 40);
    /* The same rows with empty batches in between. */
    int64_t nb = qv_table_num_batches(t);
    qv_array **bs = calloc((size_t)(2 * nb), sizeof *bs);
    for (int64_t b = 0; b < nb; b++) {
      qv_array *full = NULL;
      RT_OK(qv_table_batch(t, b, &full, &E));
      bs[2 * b] = full;
      RT_OK(qv_array_slice(full, 0, 0, &bs[2 * b + 1], &E));
    }
    qv_table *with_empty = NULL;
    RT_OK(qv_table_from_batches(s, bs, 2 * nb, &with_empty, &E));
    for (int64_t b = 0; b < 2 * nb; b++) qv_array_unref(bs[b]);
    free(bs);
    qv_table *x = k % 3 == 0 ? rt_mapped(t) : k % 3 == 1 ? qv_table_ref(t) : with_empty;
    if (x == with_empty) with_empty = NULL;
    grid g = grid_of(t);
    int64_t rows = g.rows, n = 900;
    int64_t *idx = malloc(sizeof *idx * (size_t)(n + 2 * nb));
    char what[64];
    for (int mode = 0; mode < 5; mode++) {
      for (int64_t i = 0; i < n; i++) {
        if (mode == 0) idx[i] = i > 0 && i % 7 == 0 ? idx[i / 2] : orc_int(rows); /* repeats */
        else if (mode == 1) idx[i] = 37 % rows;                                   /* all equal */
        else if (mode == 2) idx[i] = i * rows / n;                                /* ascending */
        else if (mode == 3) idx[i] = rows - 1 - i * rows / n;                     /* descending */
        else idx[i] = orc_int(2) ? orc_int(rows) : rows - 1 - orc_int(3);         /* near the end */
      }
      snprintf(what, sizeof what, "type %d mode %d", k, mode);
      check_gather_paths(x, &g, idx, n, what);
    }
    /* Every batch's first and last row, in reverse. */
    int64_t m = 0;
    for (int64_t b = qv_table_num_batches(x) - 1; b >= 0; b--) {
      int64_t first = 0, len = 0;
      for (int64_t j = 0; j < b; j++) first += qv_table_batch_rows(x, j);
      len = qv_table_batch_rows(x, b);
      idx[m++] = first + len - 1;
      idx[m++] = first;
    }
    snprintf(what, sizeof what, "type %d boundaries", k);
    check_gather_paths(x, &g, idx, m, what);
    free(idx);
    grid_free(&g);
    qv_table_unref(x);
    qv_table_unref(with_empty);
    qv_table_unref(t);
    qv_schema_unref(s);
  }
}

/* The size threshold of the sorted path: just below, at and above it the
 * results are the cells (the sorted path itself is compared with the
 * direct one above). */
static void test_gather_threshold(void) {
  int64_t save_n = qv_tbl_gather_sort_min_n, save_rows = qv_tbl_gather_sort_min_rows;
  qv_tbl_gather_sort_min_n = 500;
  qv_tbl_gather_sort_min_rows = 1000;
  int types[3] = {5, 15, 1};
  qv_schema *s = rt_schema(types, 3);
  qv_table *t = rt_table(s, 1000, 64);
  grid g = grid_of(t);
  for (int64_t n = 499; n <= 501; n++) {
    int64_t *idx = malloc(sizeof *idx * (size_t)n);
    for (int64_t i = 0; i < n; i++) idx[i] = orc_int(1000);
    qv_array *out = NULL;
    RT_OK(qv_table_gather(t, idx, n, &out, &E));
    for (int64_t i = 0; out != NULL && i < n; i++)
      for (int32_t c = 0; c < 3; c++) {
        char *got = orc_str(out->children[c], i);
        QV_CHECK_EQ_STR(got, g.cell[idx[i]][c]);
        free(got);
      }
    qv_array_unref(out);
    free(idx);
  }
  grid_free(&g);
  qv_table_unref(t);
  qv_schema_unref(s);
  qv_tbl_gather_sort_min_n = save_n;
  qv_tbl_gather_sort_min_rows = save_rows;
}

/* Batches of very uneven sizes: locate and slice every boundary. */
static void test_interpolation_search(void) {
  static const int64_t sizes[] = {1, 1, 1, 5000, 1, 2, 3, 1, 70000, 1, 1, 9, 1};
  int64_t nb = (int64_t)(sizeof sizes / sizeof sizes[0]);
  int types[1] = {4};
  qv_schema *s = rt_schema(types, 1);
  qv_array **batches = calloc((size_t)nb, sizeof *batches);
  for (int64_t b = 0; b < nb; b++) {
    batches[b] = qv_array_new(s->type, 1, 1);
    batches[b]->length = sizes[b];
    batches[b]->null_count = 0;
    batches[b]->children[0] = orc_gen(s->type->children[0].type, sizes[b]);
  }
  qv_table *t = NULL;
  RT_OK(qv_table_from_batches(s, batches, nb, &t, &E));
  int64_t row = 0;
  for (int64_t b = 0; b < nb; b++) {
    for (int64_t i = 0; i < sizes[b]; i++, row++) {
      if (i > 3 && i < sizes[b] - 3 && i % 97 != 0) continue;
      int64_t gb = -1, gr = -1;
      RT_OK(qv_table_locate(t, row, &gb, &gr, &E));
      if (gb != b || gr != i) {
        fprintf(stderr, "row %lld: located (%lld, %lld), expected (%lld, %lld)\n", (long long)row,
                (long long)gb, (long long)gr, (long long)b, (long long)i);
        QV_CHECK(false);
      }
    }
  }
  QV_CHECK(qv_table_locate(t, row, NULL, NULL, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message, "table: row 75022 is out of range (75022 rows)");
  /* Slices spanning the skewed batches share the middle batches. */
  qv_table *sl = NULL;
  RT_OK(qv_table_slice(t, 2, 75010, &sl, &E));
  QV_CHECK_EQ_INT(qv_table_num_batches(sl), 9);
  for (int64_t b = 1; sl && b + 1 < qv_table_num_batches(sl); b++) {
    qv_array *x = NULL, *y = NULL;
    RT_OK(qv_table_batch(sl, b, &x, &E));
    RT_OK(qv_table_batch(t, b + 2, &y, &E));
    QV_CHECK(x == y);
    qv_array_unref(x);
    qv_array_unref(y);
  }
  /* The sliced first batch shares its buffers. */
  qv_array *first = NULL;
  RT_OK(qv_table_batch(sl, 0, &first, &E));
  QV_CHECK(first->children[0]->buffers[1] == batches[2]->children[0]->buffers[1]);
  qv_array_unref(first);
  qv_table_unref(sl);
  for (int64_t b = 0; b < nb; b++) qv_array_unref(batches[b]);
  free(batches);
  qv_table_unref(t);
  qv_schema_unref(s);
}

/* Mapped tables: batches decode lazily; slice / select / rename stay lazy;
 * replays are recorded (consecutive slices, selects, renames merged). */
static void test_mapped_lazy(void) {
  int types[3] = {5, 15, 7};
  qv_schema *s = rt_schema(types, 3);
  qv_table *t = rt_table(s, 500, 20);
  qv_table *m = rt_mapped(t);
  QV_CHECK(m->n_batches > 10);
  for (int64_t b = 0; b < m->n_batches; b++) QV_CHECK(m->batches[b].array == NULL);
  qv_table *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  RT_OK(qv_table_slice(m, 10, 400, &a, &E));
  RT_OK(qv_table_slice(a, 5, 300, &b, &E));
  int32_t cols[2] = {2, 0};
  RT_OK(qv_table_select(b, cols, 2, &c, &E));
  const char *names[2] = {"x", "id"};
  RT_OK(qv_table_rename(c, names, 2, &d, &E));
  QV_CHECK_EQ_INT(qv_table_num_replays(a), 1);
  QV_CHECK_EQ_INT(qv_table_num_replays(b), 1); /* slice of a slice: one step */
  QV_CHECK_EQ_INT(b->replays->op->offset, 15);
  QV_CHECK_EQ_INT(b->replays->op->length, 300);
  QV_CHECK_EQ_INT(qv_table_num_replays(d), 3);
  for (int64_t i = 0; i < d->n_batches; i++) QV_CHECK(d->batches[i].array == NULL);
  for (int64_t i = 0; i < m->src->n_batches; i++) QV_CHECK(m->src->decoded[i] == NULL);
  /* Values decode on use. */
  grid g = grid_of(t), g1 = grid_slice(&g, 15, 300), g2 = grid_select(&g1, cols, 2);
  free(g2.names[0]);
  free(g2.names[1]);
  g2.names[0] = xstrdup("x");
  g2.names[1] = xstrdup("id");
  QV_CHECK(grid_matches(d, &g2, "lazy chain"));
  QV_CHECK(d->batches[0].array != NULL);
  /* cache files */
  char **paths = NULL;
  int64_t np = 0;
  RT_OK(qv_table_cache_files(d, &paths, &np, &E));
  QV_CHECK_EQ_INT(np, 1);
  if (np == 1) QV_CHECK_EQ_STR(paths[0], m->src->path);
  qv_table_free_paths(paths, np);
  RT_OK(qv_table_cache_files(t, &paths, &np, &E));
  QV_CHECK_EQ_INT(np, 0);
  qv_table_free_paths(paths, np);
  /* Copies share: the same source, no data copied. */
  qv_table *copy = qv_table_ref(d);
  QV_CHECK(copy == d);
  qv_table_unref(copy);
  grid_free(&g);
  grid_free(&g1);
  grid_free(&g2);
  qv_table_unref(a);
  qv_table_unref(b);
  qv_table_unref(c);
  qv_table_unref(d);
  qv_table_unref(m);
  qv_table_unref(t);
  qv_schema_unref(s);
}

/* add / append / set column with chunk boundaries unlike the batches'. */
static void test_columns(void) {
  for (int trial = 0; trial < 40; trial++) {
    int types[4];
    int32_t nc = rand_types(types, 3);
    qv_schema *s = rt_schema(types, nc);
    int64_t rows = trial % 9 == 0 ? 0 : 1 + orc_int(90);
    qv_table *t = rt_table(s, rows, 1 + orc_int(10));
    qv_table *m = trial % 2 ? rt_mapped(t) : qv_table_ref(t);
    grid g = grid_of(t);
    qv_type *ct = orc_type((int)orc_int(ORC_N_TYPES));
    qv_array *chunks[40];
    int64_t nch = 0, done = 0;
    while (done < rows) {
      int64_t len = orc_int(2) ? 1 + orc_int(15) : 0;
      if (len > rows - done) len = rows - done;
      chunks[nch++] = orc_gen_sliced(ct, len);
      done += len;
      if (nch == 39) {
        chunks[nch++] = orc_gen_sliced(ct, rows - done);
        done = rows;
      }
    }
    grid col = grid_new(rows, 1);
    col.names[0] = xstrdup("new");
    for (int64_t k = 0, r = 0; k < nch; k++)
      for (int64_t i = 0; i < chunks[k]->length; i++) col.cell[r++][0] = orc_str(chunks[k], i);
    qv_field f = {"new", true, ct, {0, NULL}};
    int32_t pos = (int32_t)orc_int(nc + 1);
    qv_table *a = NULL, *ap = NULL, *st = NULL;
    RT_OK(qv_table_add_column(m, pos, &f, chunks, nch, &a, &E));
    RT_OK(qv_table_append_column(m, &f, chunks, nch, &ap, &E));
    int32_t spos = (int32_t)orc_int(nc);
    RT_OK(qv_table_set_column(m, spos, &f, chunks, nch, &st, &E));
    /* reference: columns around the inserted one */
    int32_t left[8], right[8], nl = 0, nr = 0;
    for (int32_t c = 0; c < nc; c++) {
      if (c < pos) left[nl++] = c;
      else right[nr++] = c;
    }
    grid gl = grid_select(&g, left, nl), gr = grid_select(&g, right, nr);
    grid w1 = grid_hcat(&gl, &col), w2 = grid_hcat(&w1, &gr), w3 = grid_hcat(&g, &col);
    if (a) QV_CHECK(grid_matches(a, &w2, "add_column"));
    if (ap) QV_CHECK(grid_matches(ap, &w3, "append_column"));
    grid_free(&gl);
    grid_free(&gr);
    grid_free(&w1);
    grid_free(&w2);
    nl = nr = 0;
    for (int32_t c = 0; c < nc; c++) {
      if (c < spos) left[nl++] = c;
      else if (c > spos) right[nr++] = c;
    }
    gl = grid_select(&g, left, nl);
    gr = grid_select(&g, right, nr);
    w1 = grid_hcat(&gl, &col);
    w2 = grid_hcat(&w1, &gr);
    if (st) QV_CHECK(grid_matches(st, &w2, "set_column"));
    if (a && qv_table_get_kind(m) == QV_TABLE_MAPPED) QV_CHECK_EQ_INT(qv_table_num_replays(a), 1);
    grid_free(&gl);
    grid_free(&gr);
    grid_free(&w1);
    grid_free(&w2);
    grid_free(&w3);
    grid_free(&col);
    qv_table_unref(a);
    qv_table_unref(ap);
    qv_table_unref(st);
    for (int64_t k = 0; k < nch; k++) qv_array_unref(chunks[k]);
    qv_type_unref(ct);
    grid_free(&g);
    qv_table_unref(m);
    qv_table_unref(t);
    qv_schema_unref(s);
  }
}

/* Filter keeps all-true batches as they are (zero copy) and drops
 * all-false ones. */
static void test_filter_zero_copy(void) {
  int types[1] = {5};
  qv_schema *s = rt_schema(types, 1);
  qv_table *t = rt_table(s, 100, 10);
  qv_type *bt = qv_type_new(QV_BOOL);
  qv_array *mask = NULL;
  RT_OK(qv_array_nulls(bt, 100, &mask, &E));
  /* mask: rows of batch 0 true, batch 1 false, the rest alternate */
  qv_buffer_unref(mask->buffers[0]);
  mask->buffers[0] = NULL;
  mask->null_count = 0;
  int64_t b0 = qv_table_batch_rows(t, 0), b1 = qv_table_batch_rows(t, 1);
  for (int64_t i = 0; i < 100; i++)
    if (i < b0 || (i >= b0 + b1 && i % 2 == 0)) qv_bit_set(mask->buffers[1]->data, i);
  qv_table *f = NULL;
  RT_OK(qv_table_filter(t, mask, &f, &E));
  qv_array *x = NULL, *y = NULL;
  RT_OK(qv_table_batch(f, 0, &x, &E));
  RT_OK(qv_table_batch(t, 0, &y, &E));
  QV_CHECK(x == y);
  qv_array_unref(x);
  qv_array_unref(y);
  QV_CHECK(qv_table_batch_offset(f, 1) == b0);
  qv_table_unref(f);
  qv_array_unref(mask);
  qv_type_unref(bt);
  qv_table_unref(t);
  qv_schema_unref(s);
}

/* 0 rows, 0 batches, 0 columns: every operation is defined. */
static void test_empty(void) {
  qv_type *st = qv_type_new(QV_STRUCT);
  qv_schema *s0 = qv_schema_new(st);
  int types[2] = {15, 30};
  qv_schema *s2 = rt_schema(types, 2);
  for (int k = 0; k < 3; k++) {
    qv_table *t = NULL;
    if (k == 0) {
      RT_OK(qv_table_from_batches(s0, NULL, 0, &t, &E));
    } else if (k == 1) {
      RT_OK(qv_table_from_batches(s2, NULL, 0, &t, &E));
    } else { /* 0 columns, 7 rows */
      qv_array *b = qv_array_new(s0->type, 1, 0);
      b->length = 7;
      b->null_count = 0;
      RT_OK(qv_table_from_batches(s0, &b, 1, &t, &E));
      qv_array_unref(b);
    }
    if (t == NULL) continue;
    int64_t rows = qv_table_num_rows(t);
    int32_t nc = qv_table_num_columns(t);
    QV_CHECK_EQ_INT(qv_table_num_batches(t), rows > 0 ? 1 : 0);
    qv_table *r = NULL;
    RT_OK(qv_table_slice(t, 0, rows, &r, &E));
    QV_CHECK(r && qv_table_num_rows(r) == rows);
    qv_table_unref(r);
    RT_OK(qv_table_slice(t, rows, 0, &r, &E));
    QV_CHECK(r && qv_table_num_rows(r) == 0 && qv_table_num_batches(r) == 0);
    qv_table_unref(r);
    int64_t idx[3] = {0, 0, 0};
    RT_OK(qv_table_take(t, idx, rows > 0 ? 3 : 0, &r, &E));
    QV_CHECK(r && qv_table_num_rows(r) == (rows > 0 ? 3 : 0));
    QV_CHECK(r && qv_table_num_columns(r) == nc);
    qv_table_unref(r);
    qv_array *g = NULL;
    RT_OK(qv_table_gather(t, idx, 0, &g, &E));
    QV_CHECK(g && g->length == 0 && g->n_children == nc);
    qv_array_unref(g);
    qv_type *bt = qv_type_new(QV_BOOL);
    qv_array *mask = NULL;
    RT_OK(qv_array_nulls(bt, rows, &mask, &E));
    RT_OK(qv_table_filter(t, mask, &r, &E));
    QV_CHECK(r && qv_table_num_rows(r) == 0);
    qv_table_unref(r);
    qv_array_unref(mask);
    qv_type_unref(bt);
    RT_OK(qv_table_select(t, NULL, 0, &r, &E));
    QV_CHECK(r && qv_table_num_columns(r) == 0 && qv_table_num_rows(r) == rows);
    qv_table_unref(r);
    RT_OK(qv_table_drop(t, NULL, 0, &r, &E));
    QV_CHECK(r && qv_table_num_columns(r) == nc);
    qv_table_unref(r);
    const char *names[2] = {"p", "q"};
    RT_OK(qv_table_rename(t, names, nc, &r, &E));
    qv_table_unref(r);
    RT_OK(qv_table_cast(t, qv_table_schema(t), &r, &E));
    qv_table_unref(r);
    RT_OK(qv_table_combine_batches(t, &r, &E));
    QV_CHECK(r && qv_table_num_batches(r) == (rows > 0));
    qv_table_unref(r);
    qv_type *it = qv_type_new(QV_INT64);
    qv_array *col = NULL;
    RT_OK(qv_array_nulls(it, rows, &col, &E));
    qv_field f = {"z", true, it, {0, NULL}};
    RT_OK(qv_table_add_column(t, 0, &f, &col, 1, &r, &E));
    QV_CHECK(r && qv_table_num_columns(r) == nc + 1 && qv_table_num_rows(r) == rows);
    qv_table *r2 = NULL;
    if (r && nc == 0) {
      RT_OK(qv_table_set_column(r, 0, &f, &col, 1, &r2, &E));
      qv_table_unref(r2);
    }
    qv_table_unref(r);
    r = NULL;
    qv_status ast = qv_table_add_column(t, nc, &f, NULL, 0, &r, &E);
    QV_CHECK(ast == (rows > 0 ? QV_EARG : QV_OK));
    qv_table_unref(r);
    qv_array_unref(col);
    qv_type_unref(it);
    qv_table *pair[2] = {t, t};
    RT_OK(qv_table_concat(pair, 2, 0, &r, &E));
    QV_CHECK(r && qv_table_num_rows(r) == 2 * rows);
    qv_table_unref(r);
    RT_OK(qv_table_concat(pair, 2, 1, &r, &E));
    QV_CHECK(r && qv_table_num_columns(r) == 2 * nc && qv_table_num_rows(r) == rows);
    qv_table_unref(r);
    QV_CHECK(qv_table_equals(t, t, &E));
    qv_table_unref(t);
  }
  qv_schema_unref(s0);
  qv_schema_unref(s2);
}

static void test_errors(void) {
  int types[2] = {5, 15};
  qv_schema *s = rt_schema(types, 2);
  qv_table *t = rt_table(s, 10, 4), *r = NULL;
  QV_CHECK(qv_table_slice(t, 4, 7, &r, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message, "slice: rows [4, 4 + 7) are outside a table of 10 rows");
  int64_t idx[2] = {3, 10};
  QV_CHECK(qv_table_take(t, idx, 2, &r, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message, "take: index 10 (position 1) is out of range for a table of 10 rows");
  QV_CHECK(qv_table_gather(t, idx, 2, NULL, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message,
                  "gather: index 10 (position 1) is out of range for a table of 10 rows");
  int32_t cols[1] = {2};
  QV_CHECK(qv_table_select(t, cols, 1, &r, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message, "select: column 2 (position 0) is out of range for 2 columns");
  QV_CHECK(qv_table_drop(t, cols, 1, &r, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message, "drop: column 2 (position 0) is out of range for 2 columns");
  const char *names[1] = {"a"};
  QV_CHECK(qv_table_rename(t, names, 1, &r, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message, "rename: 1 names for 2 columns");
  qv_type *it = qv_type_new(QV_INT32);
  qv_array *col = orc_gen(it, 9);
  qv_field f = {"n", true, it, {0, NULL}};
  QV_CHECK(qv_table_add_column(t, 0, &f, &col, 1, &r, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message, "add_column: column 'n' has 9 values for a table of 10 rows");
  QV_CHECK(qv_table_add_column(t, 3, &f, &col, 1, &r, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message, "add_column: position 3 is out of range [0, 2]");
  QV_CHECK(qv_table_set_column(t, 2, &f, &col, 1, &r, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message, "set_column: position 2 is out of range [0, 1]");
  qv_type *lt = qv_type_new(QV_INT64);
  qv_field f2 = {"n", true, lt, {0, NULL}};
  QV_CHECK(qv_table_add_column(t, 0, &f2, &col, 1, &r, &E) == QV_ETYPE);
  QV_CHECK_EQ_STR(E.message, "add_column: chunk 0 has type int32, expected int64");
  QV_CHECK(qv_table_filter(t, col, &r, &E) == QV_ETYPE);
  QV_CHECK_EQ_STR(E.message, "filter: the mask must be a bool array (got int32)");
  qv_type *bt = qv_type_new(QV_BOOL);
  qv_array *m = orc_gen(bt, 3);
  QV_CHECK(qv_table_filter(t, m, &r, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message, "filter: mask has 3 values for a table of 10 rows");
  int types2[2] = {5, 5};
  qv_schema *s2 = rt_schema(types2, 2);
  QV_CHECK(qv_table_cast(t, s2, &r, &E) == QV_ENOTSUP);
  QV_CHECK_EQ_STR(E.message, "cast: column 'c1': cast from string to int64 is not supported");
  qv_table *t2 = rt_table(s2, 10, 3);
  qv_table *pair[2] = {t, t2};
  QV_CHECK(qv_table_concat(pair, 2, 0, &r, &E) == QV_ETYPE);
  QV_CHECK_EQ_STR(E.message, "concat: table 1 column 'c1' has type int64, expected string");
  qv_table *t3 = rt_table(s2, 11, 3);
  pair[1] = t3;
  QV_CHECK(qv_table_concat(pair, 2, 1, &r, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message,
                  "concat: table 1 has 11 rows, table 0 has 10 (axis 1 needs equal row counts)");
  QV_CHECK(qv_table_concat(pair, 2, 2, &r, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message, "concat: axis must be 0 (rows) or 1 (columns), got 2");
  QV_CHECK(qv_table_open_path("/nonexistent/x.arrow", NULL, &r, &E) == QV_EIO);
  QV_CHECK_EQ_STR(E.message, "cannot open '/nonexistent/x.arrow': No such file or directory");
  qv_array *bad = orc_gen(s2->type, 4);
  QV_CHECK(qv_table_from_batches(s, &bad, 1, &r, &E) == QV_ETYPE);
  QV_CHECK(strncmp(E.message, "table: batch 0 has type struct<", 31) == 0);
  qv_array_unref(bad);
  qv_table_unref(t2);
  qv_table_unref(t3);
  qv_schema_unref(s2);
  qv_array_unref(m);
  qv_type_unref(bt);
  qv_type_unref(lt);
  qv_array_unref(col);
  qv_type_unref(it);
  qv_table_unref(t);
  qv_schema_unref(s);
}

/* Export as a C stream and import it back. */
static void test_export_stream(void) {
  int types[3] = {15, 30, 27};
  qv_schema *s = rt_schema(types, 3);
  qv_table *t = rt_table(s, 80, 9);
  qv_table *m = rt_mapped(t);
  struct ArrowArrayStream st;
  RT_OK(qv_table_export_stream(m, &st, &E));
  qv_schema *is = NULL;
  qv_array **b = NULL;
  int64_t nb = 0;
  RT_OK(qv_import_stream(&st, &is, &b, &nb, &E));
  QV_CHECK_EQ_INT(nb, qv_table_num_batches(m));
  qv_table *back = NULL;
  if (is) RT_OK(qv_table_from_batches(is, b, nb, &back, &E));
  if (back) QV_CHECK(qv_table_equals(t, back, &E));
  QV_CHECK(is && qv_metadata_find(&is->metadata, "k") != NULL);
  for (int64_t i = 0; i < nb; i++) qv_array_unref(b[i]);
  free(b);
  qv_schema_unref(is);
  qv_table_unref(back);
  qv_table_unref(m);
  qv_table_unref(t);
  qv_schema_unref(s);
}

int main(void) {
  QV_RUN(test_transforms_random);
  QV_RUN(test_every_type);
  QV_RUN(test_gather_sorted);
  QV_RUN(test_gather_threshold);
  QV_RUN(test_interpolation_search);
  QV_RUN(test_mapped_lazy);
  QV_RUN(test_columns);
  QV_RUN(test_filter_zero_copy);
  QV_RUN(test_empty);
  QV_RUN(test_errors);
  QV_RUN(test_export_stream);
  rt_cleanup();
  return QV_TEST_END();
}
