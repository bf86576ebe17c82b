/*
 * join_table.c — compute layer: the output table of a hash join
 * (qv_table_join, quiver/compute.h). The row pairs come from join.c; each
 * output column is gathered from its side's record batches with
 * qv_array_take_chunked, absent partners reading one extra one-row chunk
 * of nulls; the key columns of right / full joins are gathered from both
 * sides' unified keys (SQL's USING: the right key where the left row is
 * absent).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/join_internal.h"

/* Chunk and row of each side row in idx[0..n) (-1 -> chunk nb, row 0). */
static qv_status locate_rows(const qvj_side *s, const int64_t *idx, int64_t n, int64_t **chunk,
                             int64_t **row, bool *any_absent, qv_error *err) {
  *chunk = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  *row = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!*chunk || !*row) return qv_error_set(err, QV_ENOMEM, "join: out of memory");
  *any_absent = false;
  int64_t last = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t x = idx[i];
    if (x < 0) {
      (*chunk)[i] = s->nb;
      (*row)[i] = 0;
      *any_absent = true;
      continue;
    }
    int64_t b = last;
    if (!(x >= s->boff[b] && x < s->boff[b + 1])) { /* binary search */
      int64_t lo = 0, hi = s->nb - 1;
      while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (s->boff[mid] <= x) lo = mid;
        else hi = mid - 1;
      }
      b = lo;
    }
    last = b;
    (*chunk)[i] = b;
    (*row)[i] = x - s->boff[b];
  }
  return QV_OK;
}

/* Gather one column: chunks[0..nb) plus a null chunk when needed. */
static qv_status gather(qv_array *const *chunks, int64_t nb, const qv_type *type, bool null_chunk,
                        const int64_t *ci, const int64_t *ri, int64_t n, qv_array **out,
                        qv_error *err) {
  if (n == 0) return qv_array_nulls((qv_type *)type, 0, out, err);
  qv_array **list = malloc(sizeof(qv_array *) * (size_t)(nb + 1));
  if (!list) return qv_error_set(err, QV_ENOMEM, "join: out of memory");
  for (int64_t b = 0; b < nb; b++) list[b] = chunks[b];
  qv_status st = QV_OK;
  list[nb] = NULL;
  if (null_chunk) st = qv_array_nulls((qv_type *)type, 1, &list[nb], err);
  if (st == QV_OK) st = qv_array_take_chunked(list, nb + (null_chunk ? 1 : 0), ci, ri, n, out, err);
  qv_array_unref(list[nb]);
  free(list);
  return st;
}

static bool in_idx(const int32_t *idx, int32_t n, int32_t c) {
  for (int32_t j = 0; j < n; j++)
    if (idx[j] == c) return true;
  return false;
}

static int32_t key_of(const int32_t *idx, int32_t n, int32_t c) {
  for (int32_t j = 0; j < n; j++)
    if (idx[j] == c) return j;
  return -1;
}

/* Name with a suffix (malloc'ed). */
static char *suffixed(const char *name, const char *suffix) {
  size_t a = strlen(name), b = strlen(suffix);
  char *s = malloc(a + b + 1);
  if (s) {
    memcpy(s, name, a);
    memcpy(s + a, suffix, b + 1);
  }
  return s;
}

typedef struct out_cols {
  qv_type *st; /* STRUCT of the output columns */
  qv_array **cols;
  int32_t n, cap;
} out_cols;

static qv_status add_col(out_cols *o, const qv_field *f, const char *name, qv_type *type,
                         qv_array *col, qv_error *err) {
  qv_status st = qv_type_add_child(o->st, name, true, qv_type_ref(type), &f->metadata, err);
  if (st != QV_OK) {
    qv_type_unref(type);
    qv_array_unref(col);
    return st;
  }
  o->cols[o->n++] = col;
  return QV_OK;
}

static qv_status build_output(qvj_side *l, qvj_side *r, const int32_t *lidx, const int32_t *ridx,
                              qv_type **types, const qv_join_options *o, const int64_t *pl,
                              const int64_t *pr, int64_t n, qv_table **out, qv_error *err) {
  int32_t nk = o->n_keys;
  const qv_schema *ls = qv_table_schema(l->t), *rs = qv_table_schema(r->t);
  int32_t lcols = ls->type->n_children, rcols = rs->type->n_children;
  bool coalesce = o->how == QV_JOIN_RIGHT || o->how == QV_JOIN_FULL;
  const char *lsuf = o->left_suffix ? o->left_suffix : "";
  const char *rsuf = o->right_suffix ? o->right_suffix : "_right";
  int64_t *lc = NULL, *lr = NULL, *rc = NULL, *rr = NULL, *cc = NULL;
  bool l_absent = false, r_absent = false;
  qvc_columns la, ra;
  memset(&la, 0, sizeof la);
  memset(&ra, 0, sizeof ra);
  int32_t *all = malloc(sizeof(int32_t) * (size_t)(lcols + rcols + 1));
  out_cols oc = {qv_type_new(QV_STRUCT), calloc((size_t)(lcols + rcols + 1), sizeof(qv_array *)), 0,
                 lcols + rcols};
  qv_array **klist = malloc(sizeof(qv_array *) * (size_t)(l->nb + r->nb + 1));
  qv_status st = QV_OK;
  if (!all || !oc.st || !oc.cols || !klist) {
    st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    goto done;
  }
  for (int32_t c = 0; c < lcols + rcols; c++) all[c] = c < lcols ? c : c - lcols;
  if ((st = qvc_columns_load(&la, l->t, all, lcols, err)) != QV_OK ||
      (st = qvc_columns_load(&ra, r->t, all + lcols, rcols, err)) != QV_OK ||
      (st = locate_rows(l, pl, n, &lc, &lr, &l_absent, err)) != QV_OK ||
      (st = locate_rows(r, pr, n, &rc, &rr, &r_absent, err)) != QV_OK)
    goto done;
  if (coalesce) { /* chunk of the key: the left's, else the right's after them */
    cc = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!cc) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      goto done;
    }
    for (int64_t i = 0; i < n; i++) cc[i] = pl[i] >= 0 ? lc[i] : l->nb + rc[i];
  }
  for (int32_t c = 0; c < lcols && st == QV_OK; c++) {
    const qv_field *f = qv_schema_field(ls, c);
    bool clash = false;
    for (int32_t d = 0; d < rcols && !clash; d++)
      clash = !in_idx(ridx, nk, d) && strcmp(qv_schema_field(rs, d)->name, f->name) == 0;
    char *name = clash ? suffixed(f->name, lsuf) : NULL;
    if (clash && !name) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      break;
    }
    int32_t j = key_of(lidx, nk, c);
    qv_array *col = NULL;
    qv_type *type = f->type;
    if (coalesce && j >= 0) {
      type = types[j];
      for (int64_t b = 0; b < l->nb; b++) klist[b] = l->ukeys[(int64_t)j * l->nb + b];
      for (int64_t b = 0; b < r->nb; b++) klist[l->nb + b] = r->ukeys[(int64_t)j * r->nb + b];
      const int64_t *ri = lr, *ri2 = rr;
      int64_t *rowi = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
      if (!rowi) st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      else {
        for (int64_t i = 0; i < n; i++) rowi[i] = pl[i] >= 0 ? ri[i] : ri2[i];
        st = gather(klist, l->nb + r->nb, type, false, cc, rowi, n, &col, err);
        free(rowi);
      }
    } else {
      st = gather(la.columns[c].chunks, l->nb, type, l_absent, lc, lr, n, &col, err);
    }
    if (st == QV_OK) st = add_col(&oc, f, name ? name : f->name, type, col, err);
    free(name);
  }
  for (int32_t d = 0; d < rcols && st == QV_OK; d++) {
    if (in_idx(ridx, nk, d)) continue;
    const qv_field *f = qv_schema_field(rs, d);
    bool clash = qv_schema_find(ls, f->name) >= 0;
    char *name = clash ? suffixed(f->name, rsuf) : NULL;
    if (clash && !name) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      break;
    }
    qv_array *col = NULL;
    st = gather(ra.columns[d].chunks, r->nb, f->type, r_absent, rc, rr, n, &col, err);
    if (st == QV_OK) st = add_col(&oc, f, name ? name : f->name, f->type, col, err);
    free(name);
  }
  if (st != QV_OK) goto done;
  {
    qv_array *batch = qv_array_new(oc.st, 1, oc.n);
    if (!batch) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      goto done;
    }
    batch->length = n;
    batch->null_count = 0;
    for (int32_t c = 0; c < oc.n; c++) {
      batch->children[c] = oc.cols[c];
      oc.cols[c] = NULL;
    }
    qv_schema *schema = qv_schema_new(qv_type_ref(oc.st));
    if (!schema) st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    else st = qv_table_from_batches(schema, &batch, 1, out, err);
    qv_schema_unref(schema);
    qv_array_unref(batch);
  }
done:
  if (oc.cols)
    for (int32_t c = 0; c < oc.n; c++) qv_array_unref(oc.cols[c]);
  free(oc.cols);
  qv_type_unref(oc.st);
  qvc_columns_reset(&la);
  qvc_columns_reset(&ra);
  free(all);
  free(klist);
  free(lc);
  free(lr);
  free(rc);
  free(rr);
  free(cc);
  return st;
}

qv_status qv_table_join(qv_table *left, qv_table *right, const qv_join_options *opts,
                        qv_table **out, qv_error *err) {
  if (!out) return qv_error_set(err, QV_EARG, "join: out is NULL");
  *out = NULL;
  if (!left || !right) return qv_error_set(err, QV_EARG, "join: a table is NULL");
  if (!opts || opts->n_keys < 1 || !opts->left_on)
    return qv_error_set(err, QV_EARG, "join: at least one key column is needed");
  if ((unsigned)opts->how > QV_JOIN_ANTI || (unsigned)opts->build > QV_JOIN_BUILD_RIGHT)
    return qv_error_set(err, QV_EARG, "join: unknown join type or build side");
  int32_t nk = opts->n_keys;
  int32_t *idx = malloc(sizeof(int32_t) * 2 * (size_t)nk);
  qv_type **types = calloc((size_t)nk, sizeof *types);
  qvj_side l, r;
  memset(&l, 0, sizeof l);
  memset(&r, 0, sizeof r);
  int64_t *pl = NULL, *pr = NULL, n = 0;
  qv_status st = QV_OK;
  if (!idx || !types) st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
  else st = qvj_join(left, right, opts, &l, &r, idx, idx + nk, types, &pl, &pr, &n, err);
  if (st == QV_OK) {
    if (opts->how == QV_JOIN_SEMI || opts->how == QV_JOIN_ANTI)
      st = qv_table_take(left, pl, n, out, err);
    else st = build_output(&l, &r, idx, idx + nk, types, opts, pl, pr, n, out, err);
  }
  qvj_side_reset(&l);
  qvj_side_reset(&r);
  if (types)
    for (int32_t j = 0; j < nk; j++) qv_type_unref(types[j]);
  free(types);
  free(idx);
  free(pl);
  free(pr);
  return st;
}
