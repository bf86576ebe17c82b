/*
 * table_concat.c — concatenation tables: a 2-D grid of in-memory and
 * mapped blocks (Hugging Face `datasets`' ConcatenationTable). Table layer.
 *
 * Rows of blocks stack vertically; the blocks of one row stand side by
 * side, and a per-row column map says which block column is which table
 * column (a bijection: every block column is used exactly once, so renames
 * and casts can be pushed into the blocks without conflicts).
 *
 * The table's own batch entries are derived from the grid: a row with one
 * block reuses that block's entries (lazy mapped entries stay lazy, with
 * the column map folded into their projection); a row of several blocks
 * is cut at the union of the blocks' batch boundaries and each piece
 * becomes one batch of zero-copy child slices.
 *
 * Transforms are applied block by block, so each block keeps its kind (a
 * mapped block records its own replays): slice and filter cut rows, select
 * re-maps columns (selecting inside the blocks), rename and cast go to
 * the blocks that hold the columns, add/set column add an in-memory block
 * to every row, combine combines each block. take with non-decreasing
 * indices is split by row; any other order gathers into an in-memory
 * table, as there is no block structure to keep.
 *
 * Horizontal concatenation re-slices the row blocks of its inputs so that
 * their boundaries line up (`_split_both_like` in datasets).
 */
#include <stdlib.h>
#include <string.h>

#include "table/table_internal.h"

static qv_status oom(qv_error *err, const char *what) {
  return qv_error_set(err, QV_ENOMEM, "concat: out of memory (%s)", what);
}

/* ------------------------------------------------------------------------ */
/* Rows                                                                      */

static qv_status row_init(qv_trow *r, int32_t n_blocks, int32_t n_cols, qv_error *err) {
  memset(r, 0, sizeof *r);
  r->blocks = calloc((size_t)(n_blocks > 0 ? n_blocks : 1), sizeof *r->blocks);
  r->col_block = calloc((size_t)(n_cols > 0 ? n_cols : 1), sizeof *r->col_block);
  r->col_index = calloc((size_t)(n_cols > 0 ? n_cols : 1), sizeof *r->col_index);
  if (r->blocks == NULL || r->col_block == NULL || r->col_index == NULL) {
    qv_trow_reset(r);
    return oom(err, "row");
  }
  return QV_OK;
}

static qv_status row_copy(const qv_trow *src, int32_t n_cols, qv_trow *dst, qv_error *err) {
  QV_RETURN_NOT_OK(row_init(dst, src->n_blocks, n_cols, err));
  for (int32_t j = 0; j < src->n_blocks; j++) dst->blocks[j] = qv_table_ref(src->blocks[j]);
  dst->n_blocks = src->n_blocks;
  memcpy(dst->col_block, src->col_block, sizeof(int32_t) * (size_t)n_cols);
  memcpy(dst->col_index, src->col_index, sizeof(int32_t) * (size_t)n_cols);
  dst->length = src->length;
  return QV_OK;
}

static void rows_free(qv_trow *rows, int64_t n) {
  for (int64_t i = 0; i < n; i++) qv_trow_reset(&rows[i]);
  free(rows);
}

/* The rows of any table: a concatenation's own (copied), or one row with
 * the table as its only block. */
static qv_status as_rows(qv_table *t, qv_trow **out, int64_t *n_out, qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  int64_t n = t->kind == QV_TABLE_CONCAT ? t->n_rows_blocks : 1;
  qv_trow *rows = calloc((size_t)n, sizeof *rows);
  if (rows == NULL) return oom(err, "rows");
  qv_status st = QV_OK;
  if (t->kind == QV_TABLE_CONCAT) {
    for (int64_t r = 0; r < n && st == QV_OK; r++) st = row_copy(&t->rows[r], nc, &rows[r], err);
  } else {
    st = row_init(&rows[0], 1, nc, err);
    if (st == QV_OK) {
      rows[0].blocks[0] = qv_table_ref(t);
      rows[0].n_blocks = 1;
      rows[0].length = t->num_rows;
      for (int32_t c = 0; c < nc; c++) rows[0].col_index[c] = c;
    }
  }
  if (st != QV_OK) {
    rows_free(rows, n);
    return st;
  }
  *out = rows;
  *n_out = n;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Building the table from its grid                                          */

/* Check a row against the table schema: blocks are in-memory or mapped
 * with the row's length, the column map is a bijection onto the blocks'
 * columns, and names/types match. */
static qv_status check_row(const qv_trow *row, int64_t r, const qv_schema *schema, qv_error *err) {
  int32_t nc = qv_schema_num_fields(schema);
  int32_t total = 0;
  if (row->n_blocks < 1)
    return qv_error_set(err, QV_EINVAL, "concat: row %lld has no blocks", (long long)r);
  for (int32_t j = 0; j < row->n_blocks; j++) {
    const qv_table *b = row->blocks[j];
    if (b->kind == QV_TABLE_CONCAT)
      return qv_error_set(err, QV_EINVAL, "concat: row %lld block %d is a concatenation",
                          (long long)r, j);
    if (b->num_rows != row->length)
      return qv_error_set(err, QV_EINVAL, "concat: row %lld block %d has %lld rows, expected %lld",
                          (long long)r, j, (long long)b->num_rows, (long long)row->length);
    total += qv_table_num_columns(b);
  }
  if (total != nc)
    return qv_error_set(err, QV_EINVAL, "concat: row %lld blocks hold %d columns, expected %d",
                        (long long)r, total, nc);
  /* used[j][k] through a flat array: block j's columns start at base[j]. */
  int32_t *base = calloc((size_t)row->n_blocks + 1, sizeof *base);
  bool *used = calloc((size_t)(total > 0 ? total : 1), sizeof *used);
  qv_status st = base && used ? QV_OK : oom(err, "check");
  for (int32_t j = 0; st == QV_OK && j < row->n_blocks; j++)
    base[j + 1] = base[j] + qv_table_num_columns(row->blocks[j]);
  for (int32_t c = 0; c < nc && st == QV_OK; c++) {
    int32_t j = row->col_block[c], k = row->col_index[c];
    if (j < 0 || j >= row->n_blocks || k < 0 || k >= qv_table_num_columns(row->blocks[j])) {
      st = qv_error_set(err, QV_EINVAL,
                        "concat: row %lld column %d maps to block %d column %d, "
                        "which does not exist",
                        (long long)r, c, j, k);
      break;
    }
    if (used[base[j] + k]) {
      st = qv_error_set(err, QV_EINVAL, "concat: row %lld: block %d column %d is mapped twice",
                        (long long)r, j, k);
      break;
    }
    used[base[j] + k] = true;
    const qv_field *f = qv_schema_field(row->blocks[j]->schema, k);
    const qv_field *want = qv_schema_field(schema, c);
    if (strcmp(f->name, want->name) != 0 || !qv_type_equals(f->type, want->type, false)) {
      char a[256], b[256];
      qv_type_to_string(want->type, a, sizeof a);
      qv_type_to_string(f->type, b, sizeof b);
      st = qv_error_set(err, QV_ETYPE, "concat: row %lld column %d is '%s' %s, expected '%s' %s",
                        (long long)r, c, f->name, b, want->name, a);
    }
  }
  free(base);
  free(used);
  return st;
}

/* Entries of a row of several blocks: cut at every block's boundaries. */
static qv_status push_aligned(qv_table *t, const qv_trow *row, qv_error *err) {
  int32_t nb = row->n_blocks, nc = qv_table_num_columns(t);
  int64_t *bi = calloc((size_t)nb, sizeof *bi), *pos = calloc((size_t)nb, sizeof *pos);
  qv_array **cur = calloc((size_t)nb, sizeof *cur);
  qv_array **ch = calloc((size_t)(nc > 0 ? nc : 1), sizeof *ch);
  qv_status st = bi && pos && cur && ch ? QV_OK : oom(err, "row");
  int64_t left = row->length;
  while (st == QV_OK && left > 0) {
    int64_t seg = left;
    for (int32_t j = 0; j < nb; j++) {
      qv_array_unref(cur[j]);
      cur[j] = NULL;
    }
    for (int32_t j = 0; j < nb && st == QV_OK; j++) {
      qv_table *b = row->blocks[j];
      st = qv_tbl_entry_array(b, bi[j], &cur[j], err);
      if (st == QV_OK && b->batches[bi[j]].length - pos[j] < seg)
        seg = b->batches[bi[j]].length - pos[j];
    }
    memset(ch, 0, sizeof *ch * (size_t)nc);
    for (int32_t c = 0; c < nc && st == QV_OK; c++) {
      int32_t j = row->col_block[c];
      st = qv_array_slice(cur[j]->children[row->col_index[c]], pos[j], seg, &ch[c], err);
    }
    if (st != QV_OK) {
      for (int32_t k = 0; k < nc; k++) qv_array_unref(ch[k]);
      break;
    }
    qv_array *batch = NULL;
    st = qv_make_batch(t->schema->type, seg, ch, nc, &batch, err);
    if (st == QV_OK) st = qv_tbl_push_array(t, batch, err);
    for (int32_t j = 0; j < nb; j++) {
      pos[j] += seg;
      if (pos[j] == row->blocks[j]->batches[bi[j]].length) bi[j]++, pos[j] = 0;
    }
    left -= seg;
  }
  for (int32_t j = 0; cur != NULL && j < nb; j++) qv_array_unref(cur[j]);
  free(bi);
  free(pos);
  free(cur);
  free(ch);
  return st;
}

static qv_status push_row(qv_table *t, const qv_trow *row, qv_error *err) {
  if (row->n_blocks > 1) return push_aligned(t, row, err);
  qv_table *b = row->blocks[0];
  int32_t nc = qv_table_num_columns(t);
  bool identity = nc == qv_table_num_columns(b);
  for (int32_t c = 0; c < nc && identity; c++) identity = row->col_index[c] == c;
  for (int64_t i = 0; i < b->n_batches; i++) {
    qv_tbatch e;
    QV_RETURN_NOT_OK(qv_tbatch_project(&b->batches[i], t->schema->type,
                                       identity ? NULL : row->col_index, identity ? -1 : nc, &e,
                                       err));
    QV_RETURN_NOT_OK(qv_tbl_push(t, &e, err));
  }
  return QV_OK;
}

qv_status qv_concat_build(qv_trow *rows, int64_t n_rows, const qv_metadata *md, qv_table **out,
                          qv_error *err) {
  if (n_rows < 1) {
    rows_free(rows, n_rows);
    return qv_error_set(err, QV_EINVAL, "concat: no rows of blocks");
  }
  /* The schema: row 0's columns through its column map. */
  qv_status st = QV_OK;
  int32_t nc = 0;
  for (int32_t j = 0; j < rows[0].n_blocks; j++) nc += qv_table_num_columns(rows[0].blocks[j]);
  qv_field *f = calloc((size_t)(nc > 0 ? nc : 1), sizeof *f);
  if (f == NULL) st = oom(err, "schema");
  for (int32_t c = 0; c < nc && st == QV_OK; c++) {
    int32_t j = rows[0].col_block[c], k = rows[0].col_index[c];
    if (j < 0 || j >= rows[0].n_blocks || k < 0 || k >= qv_table_num_columns(rows[0].blocks[j]))
      st = qv_error_set(err, QV_EINVAL,
                        "concat: row 0 column %d maps to block %d column %d, "
                        "which does not exist",
                        c, j, k);
    else f[c] = *qv_schema_field(rows[0].blocks[j]->schema, k);
  }
  qv_schema *schema = NULL;
  if (st == QV_OK) st = qv_schema_from_fields(f, nc, md, &schema, err);
  free(f);
  qv_table *t = NULL;
  if (st == QV_OK) {
    t = qv_tbl_new(QV_TABLE_CONCAT, schema);
    if (t == NULL) st = oom(err, "table");
  }
  qv_schema_unref(schema);
  for (int64_t r = 0; r < n_rows && st == QV_OK; r++) st = check_row(&rows[r], r, t->schema, err);
  if (st != QV_OK) {
    qv_table_unref(t);
    rows_free(rows, n_rows);
    return st;
  }
  t->rows = rows;
  t->n_rows_blocks = n_rows;
  for (int64_t r = 0; r < n_rows && st == QV_OK; r++) st = push_row(t, &rows[r], err);
  if (st != QV_OK) {
    qv_table_unref(t);
    return st;
  }
  *out = t;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Construction                                                              */

static bool names_unique(const qv_schema *s) {
  int32_t n = qv_schema_num_fields(s);
  for (int32_t a = 0; a < n; a++)
    for (int32_t b = a + 1; b < n; b++)
      if (strcmp(qv_schema_field(s, a)->name, qv_schema_field(s, b)->name) == 0) return false;
  return true;
}

/* perm[c] = column of `s` that matches column c of `ref`: by position when
 * names and types agree in order, else by (unique) name. */
static qv_status match_columns(const qv_schema *ref, const qv_schema *s, int64_t which,
                               int32_t *perm, qv_error *err) {
  int32_t n = qv_schema_num_fields(ref);
  if (qv_schema_num_fields(s) != n)
    return qv_error_set(err, QV_ETYPE, "concat: table %lld has %d columns, table 0 has %d",
                        (long long)which, qv_schema_num_fields(s), n);
  bool in_order = true;
  for (int32_t c = 0; c < n && in_order; c++)
    in_order = strcmp(qv_schema_field(ref, c)->name, qv_schema_field(s, c)->name) == 0;
  for (int32_t c = 0; c < n; c++) {
    int32_t k = c;
    if (!in_order) {
      if (!names_unique(ref) || !names_unique(s))
        return qv_error_set(err, QV_ETYPE,
                            "concat: table %lld has columns in another order and names are "
                            "not unique",
                            (long long)which);
      k = qv_schema_find(s, qv_schema_field(ref, c)->name);
      if (k < 0)
        return qv_error_set(err, QV_ETYPE, "concat: table %lld has no column '%s'",
                            (long long)which, qv_schema_field(ref, c)->name);
    }
    const qv_type *want = qv_schema_field(ref, c)->type, *got = qv_schema_field(s, k)->type;
    if (!qv_type_equals(want, got, false)) {
      char a[256], b[256];
      qv_type_to_string(want, a, sizeof a);
      qv_type_to_string(got, b, sizeof b);
      return qv_error_set(err, QV_ETYPE, "concat: table %lld column '%s' has type %s, expected %s",
                          (long long)which, qv_schema_field(ref, c)->name, b, a);
    }
    perm[c] = k;
  }
  return QV_OK;
}

static qv_status concat_rows(qv_table *const *tables, int64_t n, qv_table **out, qv_error *err) {
  const qv_schema *ref = tables[0]->schema;
  int32_t nc = qv_schema_num_fields(ref);
  qv_trow *all = NULL;
  int64_t n_all = 0;
  int32_t *perm = calloc((size_t)(nc > 0 ? nc : 1), sizeof *perm);
  int32_t *tmp = calloc((size_t)(nc > 0 ? nc : 1), sizeof *tmp);
  qv_status st = perm && tmp ? QV_OK : oom(err, "columns");
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    st = match_columns(ref, tables[i]->schema, i, perm, err);
    qv_trow *rows = NULL;
    int64_t nr = 0;
    if (st == QV_OK) st = as_rows(tables[i], &rows, &nr, err);
    if (st != QV_OK) break;
    qv_trow *grown = realloc(all, sizeof *all * (size_t)(n_all + nr));
    if (grown == NULL) {
      rows_free(rows, nr);
      st = oom(err, "rows");
      break;
    }
    all = grown;
    for (int64_t r = 0; r < nr; r++) {
      qv_trow *row = &rows[r];
      for (int32_t c = 0; c < nc; c++) tmp[c] = row->col_block[perm[c]];
      memcpy(row->col_block, tmp, sizeof *tmp * (size_t)nc);
      for (int32_t c = 0; c < nc; c++) tmp[c] = row->col_index[perm[c]];
      memcpy(row->col_index, tmp, sizeof *tmp * (size_t)nc);
      all[n_all++] = *row;
    }
    free(rows);
  }
  free(perm);
  free(tmp);
  if (st != QV_OK) {
    rows_free(all, n_all);
    return st;
  }
  return qv_concat_build(all, n_all, &ref->metadata, out, err);
}

/* Rows [off, off+len) of a row: each block sliced (a mapped block records
 * the slice). */
static qv_status row_slice(const qv_trow *row, int32_t nc, int64_t off, int64_t len, qv_trow *out,
                           qv_error *err) {
  if (off == 0 && len == row->length) return row_copy(row, nc, out, err);
  QV_RETURN_NOT_OK(row_copy(row, nc, out, err));
  qv_top *op = qv_top_new(QV_OP_SLICE);
  if (op == NULL) {
    qv_trow_reset(out);
    return oom(err, "op");
  }
  op->offset = off;
  op->length = len;
  qv_status st = QV_OK;
  for (int32_t j = 0; j < out->n_blocks && st == QV_OK; j++) {
    qv_table *s = NULL;
    st = qv_tbl_apply(out->blocks[j], op, &s, err);
    if (st == QV_OK) {
      qv_table_unref(out->blocks[j]);
      out->blocks[j] = s;
    }
  }
  qv_top_unref(op);
  out->length = len;
  if (st != QV_OK) qv_trow_reset(out);
  return st;
}

/* Append the blocks and column map of `piece` (columns shifted by c0)
 * to `dst`. */
static qv_status row_append(qv_trow *dst, int32_t c0, const qv_trow *piece, int32_t nc,
                            qv_error *err) {
  qv_table **b = realloc(dst->blocks, sizeof *b * (size_t)(dst->n_blocks + piece->n_blocks));
  if (b == NULL) return oom(err, "row");
  dst->blocks = b;
  for (int32_t c = 0; c < nc; c++) {
    dst->col_block[c0 + c] = piece->col_block[c] + dst->n_blocks;
    dst->col_index[c0 + c] = piece->col_index[c];
  }
  for (int32_t j = 0; j < piece->n_blocks; j++)
    dst->blocks[dst->n_blocks++] = qv_table_ref(piece->blocks[j]);
  return QV_OK;
}

/* axis 1: _split_both_like over all inputs at once. */
static qv_status concat_columns(qv_table *const *tables, int64_t n, qv_table **out, qv_error *err) {
  int64_t rows_total = tables[0]->num_rows;
  int32_t nc_total = 0;
  for (int64_t i = 0; i < n; i++) {
    if (tables[i]->num_rows != rows_total)
      return qv_error_set(err, QV_EARG,
                          "concat: table %lld has %lld rows, table 0 has %lld (axis 1 needs "
                          "equal row counts)",
                          (long long)i, (long long)tables[i]->num_rows, (long long)rows_total);
    nc_total += qv_table_num_columns(tables[i]);
  }
  qv_trow **in = calloc((size_t)n, sizeof *in);
  int64_t *n_in = calloc((size_t)n, sizeof *n_in), *ri = calloc((size_t)n, sizeof *ri),
          *pi = calloc((size_t)n, sizeof *pi);
  qv_trow *res = NULL;
  int64_t n_res = 0;
  qv_status st = in && n_in && ri && pi ? QV_OK : oom(err, "rows");
  for (int64_t i = 0; i < n && st == QV_OK; i++) st = as_rows(tables[i], &in[i], &n_in[i], err);
  int64_t done = 0;
  do {
    /* Next boundary: the nearest end of a current row (skip empty rows). */
    int64_t seg = rows_total - done;
    for (int64_t i = 0; i < n && st == QV_OK && rows_total > 0; i++) {
      while (ri[i] < n_in[i] && pi[i] == in[i][ri[i]].length) ri[i]++, pi[i] = 0;
      if (in[i][ri[i]].length - pi[i] < seg) seg = in[i][ri[i]].length - pi[i];
    }
    if (st != QV_OK) break;
    qv_trow *grown = realloc(res, sizeof *res * (size_t)(n_res + 1));
    if (grown == NULL) {
      st = oom(err, "rows");
      break;
    }
    res = grown;
    qv_trow *row = &res[n_res];
    st = row_init(row, 0, nc_total, err);
    if (st != QV_OK) break;
    n_res++;
    row->length = seg;
    int32_t c0 = 0;
    for (int64_t i = 0; i < n && st == QV_OK; i++) {
      int32_t nc = qv_table_num_columns(tables[i]);
      qv_trow piece;
      st = row_slice(&in[i][ri[i]], nc, pi[i], seg, &piece, err);
      if (st == QV_OK) {
        st = row_append(row, c0, &piece, nc, err);
        qv_trow_reset(&piece);
      }
      pi[i] += seg;
      c0 += nc;
    }
    done += seg;
  } while (st == QV_OK && done < rows_total);
  for (int64_t i = 0; in != NULL && i < n; i++) rows_free(in[i], n_in[i]);
  free(in);
  free(n_in);
  free(ri);
  free(pi);
  if (st != QV_OK) {
    rows_free(res, n_res);
    return st;
  }
  return qv_concat_build(res, n_res, &tables[0]->schema->metadata, out, err);
}

qv_status qv_table_concat(qv_table *const *tables, int64_t n, int axis, qv_table **out,
                          qv_error *err) {
  if (tables == NULL || n < 1)
    return qv_error_set(err, QV_EARG, "concat: needs at least one table (got %lld)", (long long)n);
  if (axis != 0 && axis != 1)
    return qv_error_set(err, QV_EARG, "concat: axis must be 0 (rows) or 1 (columns), got %d", axis);
  for (int64_t i = 0; i < n; i++)
    if (tables[i] == NULL)
      return qv_error_set(err, QV_EARG, "concat: table %lld is NULL", (long long)i);
  if (n == 1) {
    *out = qv_table_ref(tables[0]);
    return QV_OK;
  }
  return axis == 0 ? concat_rows(tables, n, out, err) : concat_columns(tables, n, out, err);
}

/* ------------------------------------------------------------------------ */
/* Transforms, block by block                                                */

/* Apply `op` to every block of `row` in place (NULL ops skip the block). */
static qv_status row_apply(qv_trow *row, qv_top *const *ops, qv_error *err) {
  for (int32_t j = 0; j < row->n_blocks; j++) {
    if (ops[j] == NULL) continue;
    qv_table *s = NULL;
    QV_RETURN_NOT_OK(qv_tbl_apply(row->blocks[j], ops[j], &s, err));
    qv_table_unref(row->blocks[j]);
    row->blocks[j] = s;
  }
  return QV_OK;
}

/* Same op for every block. */
static qv_status row_apply_all(qv_trow *row, qv_top *op, qv_error *err) {
  for (int32_t j = 0; j < row->n_blocks; j++) {
    qv_table *s = NULL;
    QV_RETURN_NOT_OK(qv_tbl_apply(row->blocks[j], op, &s, err));
    qv_table_unref(row->blocks[j]);
    row->blocks[j] = s;
  }
  return QV_OK;
}

/* Rows of t restricted to rows kept by a per-row function, collected. */
typedef struct row_list {
  qv_trow *rows;
  int64_t n;
} row_list;

static qv_status list_push(row_list *l, qv_trow *row, qv_error *err) {
  qv_trow *g = realloc(l->rows, sizeof *g * (size_t)(l->n + 1));
  if (g == NULL) {
    qv_trow_reset(row);
    return oom(err, "rows");
  }
  l->rows = g;
  l->rows[l->n++] = *row;
  return QV_OK;
}

static qv_status concat_slice(qv_table *t, const qv_top *op, row_list *l, qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  int64_t start = 0, off = op->offset, end = op->offset + op->length;
  for (int64_t r = 0; r < t->n_rows_blocks; r++) {
    const qv_trow *row = &t->rows[r];
    int64_t lo = off > start ? off : start;
    int64_t hi = end < start + row->length ? end : start + row->length;
    if (lo < hi) {
      qv_trow piece;
      QV_RETURN_NOT_OK(row_slice(row, nc, lo - start, hi - lo, &piece, err));
      QV_RETURN_NOT_OK(list_push(l, &piece, err));
    }
    start += row->length;
  }
  if (l->n == 0) { /* keep the first row, emptied, for the schema */
    qv_trow piece;
    QV_RETURN_NOT_OK(row_slice(&t->rows[0], nc, 0, 0, &piece, err));
    QV_RETURN_NOT_OK(list_push(l, &piece, err));
  }
  return QV_OK;
}

static qv_status concat_filter(qv_table *t, const qv_top *op, row_list *l, qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  const qv_array *m = op->mask;
  int64_t start = 0;
  for (int64_t r = 0; r < t->n_rows_blocks; r++) {
    const qv_trow *row = &t->rows[r];
    int64_t kept = 0;
    for (int64_t i = start; i < start + row->length; i++)
      kept += qv_array_is_valid(m, i) && qv_bit_get(m->buffers[1]->data, m->offset + i);
    qv_trow piece;
    QV_RETURN_NOT_OK(row_copy(row, nc, &piece, err));
    qv_status st = QV_OK;
    if (kept != row->length) {
      qv_top *sub = qv_top_new(QV_OP_FILTER);
      st = sub ? qv_array_slice(op->mask, start, row->length, &sub->mask, err) : oom(err, "op");
      if (st == QV_OK) st = row_apply_all(&piece, sub, err);
      qv_top_unref(sub);
      piece.length = kept;
    }
    if (st == QV_OK && (kept > 0 || (l->n == 0 && r + 1 == t->n_rows_blocks)))
      st = list_push(l, &piece, err);
    else qv_trow_reset(&piece);
    if (st != QV_OK) return st;
    start += row->length;
  }
  return QV_OK;
}

static bool non_decreasing(const int64_t *v, int64_t n) {
  for (int64_t i = 1; i < n; i++)
    if (v[i] < v[i - 1]) return false;
  return true;
}

static qv_status concat_take_sorted(qv_table *t, const qv_top *op, row_list *l, qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  int64_t start = 0, k = 0;
  for (int64_t r = 0; r < t->n_rows_blocks; r++) {
    const qv_trow *row = &t->rows[r];
    int64_t first = k;
    while (k < op->n_indices && op->indices[k] < start + row->length) k++;
    int64_t cnt = k - first;
    bool identity = cnt == row->length;
    for (int64_t i = 0; i < cnt && identity; i++) identity = op->indices[first + i] == start + i;
    if (cnt > 0 || (l->n == 0 && r + 1 == t->n_rows_blocks)) {
      qv_trow piece;
      QV_RETURN_NOT_OK(row_copy(row, nc, &piece, err));
      qv_status st = QV_OK;
      if (!identity) {
        qv_top *sub = qv_top_new(QV_OP_TAKE);
        if (sub) sub->indices = malloc(sizeof(int64_t) * (size_t)(cnt > 0 ? cnt : 1));
        if (sub == NULL || sub->indices == NULL) st = oom(err, "take");
        for (int64_t i = 0; st == QV_OK && i < cnt; i++)
          sub->indices[i] = op->indices[first + i] - start;
        if (sub) sub->n_indices = cnt;
        if (st == QV_OK) st = row_apply_all(&piece, sub, err);
        qv_top_unref(sub);
        piece.length = cnt;
      }
      if (st == QV_OK) st = list_push(l, &piece, err);
      else qv_trow_reset(&piece);
      if (st != QV_OK) return st;
    }
    start += row->length;
  }
  return QV_OK;
}

/* select: keep the column map a bijection by selecting inside blocks. */
static qv_status concat_select(qv_table *t, const qv_top *op, row_list *l, qv_error *err) {
  int32_t n = op->n_cols;
  for (int64_t r = 0; r < t->n_rows_blocks; r++) {
    const qv_trow *row = &t->rows[r];
    int32_t nb = row->n_blocks;
    qv_trow nr;
    QV_RETURN_NOT_OK(row_init(&nr, nb, n, err));
    nr.length = row->length;
    int32_t *cnt = calloc((size_t)nb, sizeof *cnt);
    qv_top **ops = calloc((size_t)nb, sizeof *ops);
    int32_t *renum = calloc((size_t)nb, sizeof *renum);
    qv_status st = cnt && ops && renum ? QV_OK : oom(err, "select");
    for (int32_t c = 0; c < n && st == QV_OK; c++) cnt[row->col_block[op->cols[c]]]++;
    /* Keep at least one block so the row keeps its length. */
    bool any = false;
    for (int32_t j = 0; j < nb; j++) any |= cnt[j] > 0;
    for (int32_t j = 0; j < nb && st == QV_OK; j++) {
      if (cnt[j] == 0 && (any || j > 0)) continue;
      ops[j] = qv_top_new(QV_OP_SELECT);
      if (ops[j]) ops[j]->cols = malloc(sizeof(int32_t) * (size_t)(cnt[j] > 0 ? cnt[j] : 1));
      if (ops[j] == NULL || ops[j]->cols == NULL) st = oom(err, "select");
    }
    for (int32_t c = 0; c < n && st == QV_OK; c++) {
      int32_t j = row->col_block[op->cols[c]];
      nr.col_block[c] = j;
      nr.col_index[c] = ops[j]->n_cols;
      ops[j]->cols[ops[j]->n_cols++] = row->col_index[op->cols[c]];
    }
    /* Blocks kept, renumbered; selects that keep a block as is dropped. */
    for (int32_t j = 0; j < nb && st == QV_OK; j++) {
      if (ops[j] == NULL) continue;
      bool same = ops[j]->n_cols == qv_table_num_columns(row->blocks[j]);
      for (int32_t k = 0; k < ops[j]->n_cols && same; k++) same = ops[j]->cols[k] == k;
      renum[j] = nr.n_blocks;
      if (same) {
        nr.blocks[nr.n_blocks++] = qv_table_ref(row->blocks[j]);
      } else {
        st = qv_tbl_apply(row->blocks[j], ops[j], &nr.blocks[nr.n_blocks], err);
        if (st == QV_OK) nr.n_blocks++;
      }
    }
    for (int32_t c = 0; c < n && st == QV_OK; c++) nr.col_block[c] = renum[nr.col_block[c]];
    for (int32_t j = 0; ops != NULL && j < nb; j++) qv_top_unref(ops[j]);
    free(cnt);
    free(ops);
    free(renum);
    if (st == QV_OK) st = list_push(l, &nr, err);
    else qv_trow_reset(&nr);
    if (st != QV_OK) return st;
  }
  return QV_OK;
}

/* rename / cast: one op per block for the columns it holds. */
static qv_status concat_per_block_columns(qv_table *t, const qv_top *op, row_list *l,
                                          qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  for (int64_t r = 0; r < t->n_rows_blocks; r++) {
    const qv_trow *row = &t->rows[r];
    qv_trow nr;
    QV_RETURN_NOT_OK(row_copy(row, nc, &nr, err));
    qv_top **ops = calloc((size_t)nr.n_blocks, sizeof *ops);
    qv_status st = ops ? QV_OK : oom(err, "ops");
    for (int32_t j = 0; j < nr.n_blocks && st == QV_OK; j++) {
      qv_table *b = nr.blocks[j];
      int32_t bn = qv_table_num_columns(b);
      if (op->kind == QV_OP_RENAME) {
        const char **names = calloc((size_t)(bn > 0 ? bn : 1), sizeof *names);
        if (names == NULL) {
          st = oom(err, "rename");
          break;
        }
        for (int32_t c = 0; c < nc; c++)
          if (nr.col_block[c] == j) names[nr.col_index[c]] = op->names[c];
        bool same = true;
        for (int32_t k = 0; k < bn && same; k++)
          same = strcmp(names[k], qv_schema_field(b->schema, k)->name) == 0;
        if (!same) {
          ops[j] = qv_top_new(QV_OP_RENAME);
          if (ops[j]) ops[j]->names = calloc((size_t)(bn > 0 ? bn : 1), sizeof(char *));
          if (ops[j] == NULL || ops[j]->names == NULL) st = oom(err, "rename");
          for (int32_t k = 0; k < bn && st == QV_OK; k++) {
            ops[j]->names[k] = strdup(names[k]);
            if (ops[j]->names[k] == NULL) st = oom(err, "rename");
            else ops[j]->n_names = k + 1;
          }
        }
        free(names);
      } else { /* CAST */
        qv_field *f = calloc((size_t)(bn > 0 ? bn : 1), sizeof *f);
        if (f == NULL) {
          st = oom(err, "cast");
          break;
        }
        for (int32_t c = 0; c < nc; c++)
          if (nr.col_block[c] == j) f[nr.col_index[c]] = *qv_schema_field(op->schema, c);
        qv_schema *sub = NULL;
        st = qv_schema_from_fields(f, bn, &op->schema->metadata, &sub, err);
        free(f);
        if (st == QV_OK && !qv_schema_equals(sub, b->schema, true)) {
          ops[j] = qv_top_new(QV_OP_CAST);
          if (ops[j] == NULL) st = oom(err, "cast");
          else ops[j]->schema = qv_schema_ref(sub);
        }
        qv_schema_unref(sub);
      }
    }
    if (st == QV_OK) st = row_apply(&nr, ops, err);
    for (int32_t j = 0; ops != NULL && j < nr.n_blocks; j++) qv_top_unref(ops[j]);
    free(ops);
    if (st == QV_OK) st = list_push(l, &nr, err);
    else qv_trow_reset(&nr);
    if (st != QV_OK) return st;
  }
  return QV_OK;
}

/* add_column: every row gets an in-memory block with its rows of the new
 * column. */
static qv_status concat_add(qv_table *t, const qv_top *op, row_list *l, qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  qv_schema *one = NULL;
  QV_RETURN_NOT_OK(qv_schema_from_fields(&op->field, 1, NULL, &one, err));
  int64_t start = 0;
  qv_status st = QV_OK;
  for (int64_t r = 0; r < t->n_rows_blocks && st == QV_OK; r++) {
    const qv_trow *row = &t->rows[r];
    qv_array *col = NULL, *batch = NULL;
    qv_table *blk = NULL;
    st = qv_chunks_range(op->chunks, op->n_chunks, start, row->length, op->field.type, &col, err);
    if (st == QV_OK) st = qv_make_batch(one->type, row->length, &col, 1, &batch, err);
    if (st == QV_OK) {
      st = qv_table_from_batches(one, &batch, 1, &blk, err);
      qv_array_unref(batch);
    }
    qv_trow nr;
    if (st == QV_OK) st = row_init(&nr, row->n_blocks + 1, nc + 1, err);
    if (st != QV_OK) {
      qv_table_unref(blk);
      break;
    }
    for (int32_t j = 0; j < row->n_blocks; j++) nr.blocks[j] = qv_table_ref(row->blocks[j]);
    nr.blocks[row->n_blocks] = blk;
    nr.n_blocks = row->n_blocks + 1;
    nr.length = row->length;
    for (int32_t c = 0, k = 0; c <= nc; c++) {
      if (c == op->pos) {
        nr.col_block[c] = row->n_blocks;
        nr.col_index[c] = 0;
      } else {
        nr.col_block[c] = row->col_block[k];
        nr.col_index[c] = row->col_index[k++];
      }
    }
    st = list_push(l, &nr, err);
    start += row->length;
  }
  qv_schema_unref(one);
  return st;
}

static qv_status concat_combine(qv_table *t, const qv_top *op, row_list *l, qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  for (int64_t r = 0; r < t->n_rows_blocks; r++) {
    qv_trow nr;
    QV_RETURN_NOT_OK(row_copy(&t->rows[r], nc, &nr, err));
    qv_status st = row_apply_all(&nr, (qv_top *)op, err);
    if (st == QV_OK) st = list_push(l, &nr, err);
    else qv_trow_reset(&nr);
    if (st != QV_OK) return st;
  }
  return QV_OK;
}

qv_status qv_concat_apply(qv_table *t, qv_top *op, qv_table **out, qv_error *err) {
  if (op->kind == QV_OP_TAKE && !non_decreasing(op->indices, op->n_indices))
    return qv_tbl_apply_data(t, op, QV_TABLE_IN_MEMORY, out, err);
  if (op->kind == QV_OP_SET_COLUMN) { /* drop the column, then add the new one */
    int32_t nc = qv_table_num_columns(t);
    qv_top *sel = qv_top_new(QV_OP_SELECT), *add = qv_top_new(QV_OP_ADD_COLUMN);
    qv_status st = sel && add ? QV_OK : oom(err, "op");
    if (st == QV_OK) {
      sel->cols = malloc(sizeof(int32_t) * (size_t)(nc > 0 ? nc : 1));
      if (sel->cols == NULL) st = oom(err, "op");
      for (int32_t c = 0; st == QV_OK && c < nc; c++)
        if (c != op->pos) sel->cols[sel->n_cols++] = c;
    }
    qv_table *mid = NULL;
    if (st == QV_OK) st = qv_concat_apply(t, sel, &mid, err);
    if (st == QV_OK) {
      add->pos = op->pos;
      add->field = op->field; /* borrowed: cleared before the unref below */
      add->chunks = op->chunks;
      add->n_chunks = op->n_chunks;
      st = qv_concat_apply(mid, add, out, err);
      memset(&add->field, 0, sizeof add->field);
      add->chunks = NULL;
      add->n_chunks = 0;
    }
    qv_table_unref(mid);
    qv_top_unref(sel);
    qv_top_unref(add);
    return st;
  }
  row_list l = {NULL, 0};
  qv_status st;
  switch (op->kind) {
    case QV_OP_SLICE: st = concat_slice(t, op, &l, err); break;
    case QV_OP_FILTER: st = concat_filter(t, op, &l, err); break;
    case QV_OP_TAKE: st = concat_take_sorted(t, op, &l, err); break;
    case QV_OP_SELECT: st = concat_select(t, op, &l, err); break;
    case QV_OP_RENAME:
    case QV_OP_CAST: st = concat_per_block_columns(t, op, &l, err); break;
    case QV_OP_ADD_COLUMN: st = concat_add(t, op, &l, err); break;
    case QV_OP_COMBINE: st = concat_combine(t, op, &l, err); break;
    default: st = qv_error_set(err, QV_EARG, "concat: unknown op %d", (int)op->kind);
  }
  if (st != QV_OK) {
    rows_free(l.rows, l.n);
    return qv_error_prefix(err, st, "%s: ", qv_op_name(op->kind));
  }
  const qv_metadata *md = op->kind == QV_OP_CAST ? &op->schema->metadata : &t->schema->metadata;
  return qv_concat_build(l.rows, l.n, md, out, err);
}
