/* test_table_concat.c — concatenation tables against the brute-force grid:
 * vertical concatenation of in-memory, mapped and concatenation tables
 * (flattened, columns matched by name when reordered), horizontal
 * concatenation with row blocks re-sliced to line up (_split_both_like),
 * then random chains of every transform on the result, checking values,
 * kinds (blocks keep theirs; mapped blocks record replays), laziness of
 * mapped blocks and cache_files. */
#include "table/table_internal.h"
#include "table_test_util.h"

/* Column types whose rendering survives string <-> large_string casts. */
/* (Dictionaries with uint16 indices: gathering across many batches merges
 * their dictionaries, which can overflow int8 indices; see test_table.c.) */
static const int kTypes[] = {15, 17, 5, 20, 31, 14, 16, 27, 22};
#define N_KTYPES ((int)(sizeof kTypes / sizeof kTypes[0]))

/* A random table piece over schema s: in-memory, mapped or a vertical
 * concatenation of both. */
static qv_table *random_piece(const qv_schema *s, int64_t rows) {
  qv_table *t = rt_table(s, rows, 1 + orc_int(9));
  int kind = (int)orc_int(3);
  if (kind == 0) return t;
  qv_table *m = rt_mapped(t);
  if (kind == 1) {
    qv_table_unref(t);
    return m;
  }
  /* split in two, one half mapped */
  int64_t cut = orc_int(rows + 1);
  qv_table *a = NULL, *b = NULL, *c = NULL;
  RT_OK(qv_table_slice(t, 0, cut, &a, &E));
  RT_OK(qv_table_slice(m, cut, rows - cut, &b, &E));
  qv_table *pair[2] = {a, b};
  RT_OK(qv_table_concat(pair, 2, 0, &c, &E));
  qv_table_unref(a);
  qv_table_unref(b);
  qv_table_unref(t);
  qv_table_unref(m);
  return c;
}

static bool no_nested_concat(const qv_table *t) {
  for (int64_t r = 0; r < qv_table_num_block_rows(t); r++)
    for (int64_t j = 0; j < qv_table_num_blocks_in_row(t, r); j++)
      if (qv_table_get_kind(qv_table_block(t, r, j)) == QV_TABLE_CONCAT &&
          qv_table_get_kind(t) == QV_TABLE_CONCAT)
        return false;
  return true;
}

/* One random transform applied to t and to its grid. */
static void random_op(qv_table **t, grid *g, char *what, size_t cap) {
  int64_t rows = g->rows;
  int32_t nc = g->cols;
  qv_table *r = NULL;
  grid ng = {0};
  int op = (int)orc_int(9);
  switch (op) {
    case 0: { /* slice */
      int64_t off = orc_int(rows + 1), len = orc_int(rows - off + 1);
      snprintf(what, cap, "slice(%lld, %lld)", (long long)off, (long long)len);
      RT_OK(qv_table_slice(*t, off, len, &r, &E));
      ng = grid_slice(g, off, len);
      break;
    }
    case 1:
    case 2: { /* take: sorted (stays a concatenation) or any order */
      int64_t n = rows == 0 ? 0 : orc_int(rows + 3);
      int64_t *idx = malloc(sizeof *idx * (size_t)(n + 1));
      for (int64_t i = 0; i < n; i++) idx[i] = orc_int(rows);
      if (op == 1)
        for (int64_t i = 1; i < n; i++)
          for (int64_t j = i; j > 0 && idx[j] < idx[j - 1]; j--) {
            int64_t x = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = x;
          }
      snprintf(what, cap, "take(%lld, %s)", (long long)n, op == 1 ? "sorted" : "any order");
      RT_OK(qv_table_take(*t, idx, n, &r, &E));
      ng = grid_copy_rows(g, idx, n);
      if (r && op == 1) QV_CHECK_EQ_INT(qv_table_get_kind(r), qv_table_get_kind(*t));
      free(idx);
      break;
    }
    case 3: { /* filter */
      qv_type *bt = qv_type_new(QV_BOOL);
      qv_array *m = orc_gen_sliced(bt, rows);
      int64_t *keep = malloc(sizeof *keep * (size_t)(rows + 1)), k = 0;
      for (int64_t i = 0; i < rows; i++)
        if (qv_array_is_valid(m, i) && qv_bit_get(m->buffers[1]->data, m->offset + i))
          keep[k++] = i;
      snprintf(what, cap, "filter(%lld kept)", (long long)k);
      RT_OK(qv_table_filter(*t, m, &r, &E));
      ng = grid_copy_rows(g, keep, k);
      free(keep);
      qv_array_unref(m);
      qv_type_unref(bt);
      break;
    }
    case 4: { /* select with reorder and repeats (at most 6 columns) */
      int32_t sel[6], n = nc == 0 ? 0 : (int32_t)orc_int(6);
      for (int32_t i = 0; i < n; i++) sel[i] = (int32_t)orc_int(nc);
      snprintf(what, cap, "select(%d)", n);
      RT_OK(qv_table_select(*t, sel, n, &r, &E));
      ng = grid_select(g, sel, n);
      break;
    }
    case 5: { /* rename */
      const char **names = calloc((size_t)nc + 1, sizeof *names);
      ng = grid_copy(g);
      for (int32_t c = 0; c < nc; c++) {
        char buf[32];
        snprintf(buf, sizeof buf, "n%lld", (long long)orc_int(1000));
        free(ng.names[c]);
        ng.names[c] = xstrdup(buf);
        names[c] = ng.names[c];
      }
      snprintf(what, cap, "rename");
      RT_OK(qv_table_rename(*t, names, nc, &r, &E));
      free(names);
      break;
    }
    case 6: { /* cast string <-> large_string (same rendering) */
      const qv_schema *s = qv_table_schema(*t);
      qv_field *f = calloc((size_t)nc + 1, sizeof *f);
      qv_type **made = calloc((size_t)nc + 1, sizeof *made);
      for (int32_t c = 0; c < nc; c++) {
        f[c] = *qv_schema_field(s, c);
        qv_type_id id = f[c].type->id;
        if (id == QV_STRING || id == QV_LARGE_STRING) {
          made[c] = qv_type_new(id == QV_STRING ? QV_LARGE_STRING : QV_STRING);
          f[c].type = made[c];
        }
      }
      qv_schema *target = NULL;
      RT_OK(qv_schema_from_fields(f, nc, &s->metadata, &target, &E));
      snprintf(what, cap, "cast");
      RT_OK(qv_table_cast(*t, target, &r, &E));
      for (int32_t c = 0; r && c < nc; c++)
        QV_CHECK(qv_type_equals(qv_schema_field(qv_table_schema(r), c)->type, f[c].type, false));
      ng = grid_copy(g);
      for (int32_t c = 0; c < nc; c++) qv_type_unref(made[c]);
      free(made);
      free(f);
      qv_schema_unref(target);
      break;
    }
    case 7: { /* add or set a column */
      qv_type *ct = orc_type(kTypes[orc_int(N_KTYPES)]);
      qv_array *chunks[8];
      int64_t nch = 0, done = 0;
      while (done < rows && nch < 7) {
        int64_t len = orc_int(rows - done + 1);
        chunks[nch++] = orc_gen_sliced(ct, len);
        done += len;
      }
      chunks[nch++] = orc_gen_sliced(ct, rows - done);
      grid col = grid_new(rows, 1);
      col.names[0] = xstrdup("added");
      for (int64_t k = 0, row = 0; k < nch; k++)
        for (int64_t i = 0; i < chunks[k]->length; i++) col.cell[row++][0] = orc_str(chunks[k], i);
      qv_field f = {"added", true, ct, {0, NULL}};
      bool set = nc > 0 && orc_int(2);
      int32_t pos = (int32_t)orc_int(set ? nc : nc + 1);
      snprintf(what, cap, "%s_column(%d)", set ? "set" : "add", pos);
      if (set) RT_OK(qv_table_set_column(*t, pos, &f, chunks, nch, &r, &E));
      else RT_OK(qv_table_add_column(*t, pos, &f, chunks, nch, &r, &E));
      int32_t left[64], right[64], nl = 0, nr = 0;
      for (int32_t c = 0; c < nc; c++) {
        if (c < pos) left[nl++] = c;
        else if (c > pos || !set) right[nr++] = c;
      }
      grid gl = grid_select(g, left, nl), gr = grid_select(g, right, nr);
      grid w1 = grid_hcat(&gl, &col);
      ng = grid_hcat(&w1, &gr);
      grid_free(&gl);
      grid_free(&gr);
      grid_free(&w1);
      grid_free(&col);
      for (int64_t k = 0; k < nch; k++) qv_array_unref(chunks[k]);
      qv_type_unref(ct);
      break;
    }
    default: { /* combine */
      snprintf(what, cap, "combine");
      RT_OK(qv_table_combine_batches(*t, &r, &E));
      ng = grid_copy(g);
    }
  }
  if (r == NULL) {
    grid_free(&ng);
    return;
  }
  QV_CHECK(no_nested_concat(r));
  qv_table_unref(*t);
  *t = r;
  grid_free(g);
  *g = ng;
}

static void test_vertical_random(void) {
  for (int trial = 0; trial < 60; trial++) {
    int32_t nc = (int32_t)(1 + orc_int(4));
    int types[4];
    for (int32_t c = 0; c < nc; c++) types[c] = kTypes[orc_int(N_KTYPES)];
    qv_schema *s = rt_schema(types, nc);
    int n = (int)(2 + orc_int(3));
    qv_table *parts[4];
    grid g = grid_new(0, nc);
    for (int32_t c = 0; c < nc; c++) g.names[c] = xstrdup(qv_schema_field(s, c)->name);
    for (int i = 0; i < n; i++) {
      parts[i] = random_piece(s, orc_int(40));
      grid gi = grid_of(parts[i]), both = grid_vcat(&g, &gi);
      grid_free(&g);
      grid_free(&gi);
      g = both;
    }
    qv_table *t = NULL;
    RT_OK(qv_table_concat(parts, n, 0, &t, &E));
    if (t == NULL) continue;
    QV_CHECK_EQ_INT(qv_table_get_kind(t), QV_TABLE_CONCAT);
    QV_CHECK(no_nested_concat(t));
    QV_CHECK(grid_matches(t, &g, "vertical concat"));
    /* cache_files: one entry per mapped block, in block order */
    char **paths = NULL;
    int64_t np = 0, mapped = 0;
    RT_OK(qv_table_cache_files(t, &paths, &np, &E));
    for (int64_t r = 0; r < qv_table_num_block_rows(t); r++)
      for (int64_t j = 0; j < qv_table_num_blocks_in_row(t, r); j++)
        mapped += qv_table_get_kind(qv_table_block(t, r, j)) == QV_TABLE_MAPPED;
    QV_CHECK_EQ_INT(np, mapped);
    qv_table_free_paths(paths, np);
    for (int step = 0; step < 6; step++) {
      char what[128];
      random_op(&t, &g, what, sizeof what);
      char label[200];
      snprintf(label, sizeof label, "trial %d step %d: %s", trial, step, what);
      QV_CHECK(grid_matches(t, &g, label));
    }
    for (int i = 0; i < n; i++) qv_table_unref(parts[i]);
    qv_table_unref(t);
    grid_free(&g);
    qv_schema_unref(s);
  }
}

static void test_horizontal(void) {
  for (int trial = 0; trial < 50; trial++) {
    int64_t rows = trial % 10 == 0 ? 0 : 1 + orc_int(60);
    int n = (int)(2 + orc_int(2));
    qv_table *parts[3];
    qv_schema *schemas[3];
    grid g = {0};
    for (int i = 0; i < n; i++) {
      int32_t nc = (int32_t)orc_int(3) + (i == 0);
      int types[3];
      for (int32_t c = 0; c < nc; c++) types[c] = kTypes[orc_int(N_KTYPES)];
      schemas[i] = rt_schema(types, nc);
      /* a vertical concatenation of random row blocks */
      int64_t done = 0;
      qv_table *rowsb[6];
      int nr = 0;
      while (nr < 5 && (done < rows || nr == 0)) {
        int64_t len = nr == 4 ? rows - done : orc_int(rows - done + 1);
        rowsb[nr++] = random_piece(schemas[i], len);
        done += len;
      }
      if (done < rows) rowsb[nr++] = random_piece(schemas[i], rows - done);
      qv_table *v = NULL;
      RT_OK(qv_table_concat(rowsb, nr, 0, &v, &E));
      for (int k = 0; k < nr; k++) qv_table_unref(rowsb[k]);
      parts[i] = v;
      grid gi = grid_of(v);
      if (i == 0) {
        g = gi;
      } else {
        grid both = grid_hcat(&g, &gi);
        grid_free(&g);
        grid_free(&gi);
        g = both;
      }
    }
    qv_table *t = NULL;
    RT_OK(qv_table_concat(parts, n, 1, &t, &E));
    if (t == NULL) continue;
    QV_CHECK(grid_matches(t, &g, "horizontal concat"));
    QV_CHECK(no_nested_concat(t));
    /* Row blocks line up: every row's blocks have the row's length. */
    for (int64_t r = 0; r < qv_table_num_block_rows(t); r++) {
      int64_t len = qv_table_num_rows(qv_table_block(t, r, 0));
      for (int64_t j = 1; j < qv_table_num_blocks_in_row(t, r); j++)
        QV_CHECK_EQ_INT(qv_table_num_rows(qv_table_block(t, r, j)), len);
    }
    for (int step = 0; step < 5; step++) {
      char what[128], label[200];
      random_op(&t, &g, what, sizeof what);
      snprintf(label, sizeof label, "horizontal trial %d step %d: %s", trial, step, what);
      QV_CHECK(grid_matches(t, &g, label));
    }
    /* vertical concat of the result with itself still works */
    qv_table *pair[2] = {t, t}, *vv = NULL;
    RT_OK(qv_table_concat(pair, 2, 0, &vv, &E));
    if (vv) {
      grid g2 = grid_vcat(&g, &g);
      QV_CHECK(grid_matches(vv, &g2, "self vertical"));
      grid_free(&g2);
      qv_table_unref(vv);
    }
    for (int i = 0; i < n; i++) {
      qv_table_unref(parts[i]);
      qv_schema_unref(schemas[i]);
    }
    qv_table_unref(t);
    grid_free(&g);
  }
}

/* _split_both_like on a known layout, and blocks keeping their kind. */
static void test_split_both_like(void) {
  int ta[1] = {5}, tb[1] = {15};
  qv_schema *sa = rt_schema(ta, 1), *sb = rt_schema(tb, 1);
  qv_table *a1 = rt_table(sa, 30, 7), *a2 = rt_table(sa, 50, 7);
  qv_table *b1 = rt_table(sb, 10, 4), *b2 = rt_table(sb, 40, 4), *b3 = rt_table(sb, 30, 4);
  qv_table *b2m = rt_mapped(b2);
  qv_table *l[2] = {a1, a2}, *rr[3] = {b1, b2m, b3}, *A = NULL, *B = NULL, *H = NULL;
  RT_OK(qv_table_concat(l, 2, 0, &A, &E));
  RT_OK(qv_table_concat(rr, 3, 0, &B, &E));
  qv_table *both[2] = {A, B};
  RT_OK(qv_table_concat(both, 2, 1, &H, &E));
  /* boundaries {30, 80} and {10, 50, 80} -> rows of 10, 20, 20, 30 */
  static const int64_t want[4] = {10, 20, 20, 30};
  QV_CHECK_EQ_INT(qv_table_num_block_rows(H), 4);
  for (int64_t r = 0; r < 4 && r < qv_table_num_block_rows(H); r++) {
    QV_CHECK_EQ_INT(qv_table_num_blocks_in_row(H, r), 2);
    QV_CHECK_EQ_INT(qv_table_num_rows(qv_table_block(H, r, 0)), want[r]);
  }
  /* rows 1 and 2 hold slices of the mapped block: still mapped, with a
   * recorded slice */
  for (int64_t r = 1; r <= 2; r++) {
    qv_table *blk = qv_table_block(H, r, 1);
    QV_CHECK_EQ_INT(qv_table_get_kind(blk), QV_TABLE_MAPPED);
    QV_CHECK_EQ_INT(qv_table_num_replays(blk), 1);
  }
  QV_CHECK_EQ_STR(qv_schema_field(qv_table_schema(H), 0)->name, "c0");
  QV_CHECK_EQ_INT(qv_table_num_columns(H), 2);
  /* A rename on the concatenation reaches the mapped blocks as a replay. */
  const char *names[2] = {"x", "y"};
  qv_table *R = NULL;
  RT_OK(qv_table_rename(H, names, 2, &R, &E));
  if (R) {
    QV_CHECK_EQ_INT(qv_table_num_replays(qv_table_block(R, 1, 1)), 2);
    QV_CHECK_EQ_STR(qv_schema_field(qv_table_schema(qv_table_block(R, 1, 1)), 0)->name, "y");
  }
  qv_table_unref(R);
  qv_table *all[6] = {a1, a2, b1, b2, b3, b2m};
  for (int i = 0; i < 6; i++) qv_table_unref(all[i]);
  qv_table_unref(A);
  qv_table_unref(B);
  qv_table_unref(H);
  qv_schema_unref(sa);
  qv_schema_unref(sb);
}

/* Vertical concatenation matches reordered columns by name, keeps lazy
 * mapped entries lazy, and single tables come back as they are. */
static void test_reorder_and_lazy(void) {
  int types[3] = {5, 15, 20};
  qv_schema *s = rt_schema(types, 3);
  qv_table *t = rt_table(s, 40, 6), *m = rt_mapped(t);
  int32_t perm[3] = {2, 0, 1};
  qv_table *p = NULL, *c = NULL;
  RT_OK(qv_table_select(m, perm, 3, &p, &E));
  qv_table *pair[2] = {t, p};
  RT_OK(qv_table_concat(pair, 2, 0, &c, &E));
  /* The mapped half was not decoded by building the concatenation. */
  for (int64_t b = 0; c && b < c->n_batches; b++)
    if (c->offsets[b] >= 40) QV_CHECK(c->batches[b].array == NULL && c->batches[b].src);
  QV_CHECK(m->src->decoded[0] == NULL);
  grid g = grid_of(t), g2 = grid_vcat(&g, &g);
  if (c) QV_CHECK(grid_matches(c, &g2, "reordered by name"));
  qv_table *one = NULL;
  RT_OK(qv_table_concat(&m, 1, 0, &one, &E));
  QV_CHECK(one == m);
  qv_table_unref(one);
  grid_free(&g);
  grid_free(&g2);
  qv_table_unref(c);
  qv_table_unref(p);
  qv_table_unref(m);
  qv_table_unref(t);
  qv_schema_unref(s);
}

int main(void) {
  QV_RUN(test_vertical_random);
  QV_RUN(test_horizontal);
  QV_RUN(test_split_both_like);
  QV_RUN(test_reorder_and_lazy);
  rt_cleanup();
  return QV_TEST_END();
}
