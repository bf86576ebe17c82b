/*
 * distinct.c — compute layer: distinct rows by key columns
 * (qv_table_distinct) and value counts (qv_value_counts,
 * qv_table_value_counts), quiver/compute.h. Both run the keys through a
 * qv_grouper (grouper.c) batch by batch: distinct records the first row
 * of each new group id and gathers those rows (qv_table_take); value
 * counts add one per row to its group's count and take the group keys
 * from the rows where each group first appears (qv_array_take_chunked, so
 * the values keep the column's type, as qv_unique's).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/join_internal.h"

/* Group ids of every row (caller memory n rows) and the first row of
 * each group (malloc'ed *first, *n_groups entries). */
static qv_status group_rows(qv_chunked_column *cols, int32_t nk, int64_t n, uint32_t *ids,
                            int64_t **first, int64_t *n_groups, qv_error *err) {
  *first = NULL;
  *n_groups = 0;
  qv_type **types = malloc(sizeof(qv_type *) * (size_t)nk);
  qv_array **keys = malloc(sizeof(qv_array *) * (size_t)nk);
  if (!types || !keys) {
    free(types);
    free(keys);
    return qv_error_set(err, QV_ENOMEM, "distinct: out of memory");
  }
  for (int32_t j = 0; j < nk; j++) types[j] = (qv_type *)qvc_column_type(&cols[j]);
  qv_grouper *g = NULL;
  qv_status st = qv_grouper_new(types, nk, &g, err);
  int64_t cap = 64, k = 0, base = 0;
  int64_t *f = st == QV_OK ? malloc(sizeof(int64_t) * (size_t)cap) : NULL;
  if (st == QV_OK && !f) st = qv_error_set(err, QV_ENOMEM, "distinct: out of memory");
  int64_t nb = nk > 0 ? cols[0].n_chunks : 0;
  for (int64_t b = 0; b < nb && st == QV_OK; b++) {
    for (int32_t j = 0; j < nk; j++) keys[j] = cols[j].chunks[b];
    int64_t len = keys[0]->length;
    if ((st = qv_grouper_consume(g, keys, ids + base, err)) != QV_OK) break;
    for (int64_t i = 0; i < len; i++) {
      if ((int64_t)ids[base + i] != k) continue; /* dense ids: k is the next new one */
      if (k == cap) {
        int64_t *a = realloc(f, sizeof(int64_t) * (size_t)(cap * 2));
        if (!a) {
          st = qv_error_set(err, QV_ENOMEM, "distinct: out of memory (%" PRId64 " groups)", k);
          break;
        }
        f = a;
        cap *= 2;
      }
      f[k++] = base + i;
    }
    base += len;
  }
  (void)n;
  qv_grouper_free(g);
  free(types);
  free(keys);
  if (st != QV_OK) {
    free(f);
    return st;
  }
  *first = f;
  *n_groups = k;
  return QV_OK;
}

qv_status qv_table_distinct(qv_table *t, const char *const *on, int32_t n_on, qv_table **out,
                            qv_error *err) {
  if (!t || !out) return qv_error_set(err, QV_EARG, "distinct: table or out is NULL");
  *out = NULL;
  if (n_on < 0 || (n_on > 0 && !on)) return qv_error_set(err, QV_EARG, "distinct: bad column list");
  int32_t nc = qv_table_num_columns(t);
  int32_t nk = n_on > 0 ? n_on : nc;
  if (nk == 0) return qv_error_set(err, QV_EARG, "distinct: the table has no columns");
  int32_t *idx = malloc(sizeof(int32_t) * (size_t)nk);
  if (!idx) return qv_error_set(err, QV_ENOMEM, "distinct: out of memory");
  qv_status st = QV_OK;
  for (int32_t j = 0; j < nk && st == QV_OK; j++) {
    if (n_on > 0) st = qvj_find_column(t, "distinct", on[j], &idx[j], err);
    else idx[j] = j;
  }
  int64_t n = qv_table_num_rows(t), ng = 0, *first = NULL;
  uint32_t *ids = NULL;
  qvc_columns cols;
  memset(&cols, 0, sizeof cols);
  if (st == QV_OK) st = qvc_columns_load(&cols, t, idx, nk, err);
  if (st == QV_OK) {
    ids = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
    if (!ids) st = qv_error_set(err, QV_ENOMEM, "distinct: out of memory (%" PRId64 " rows)", n);
  }
  if (st == QV_OK) st = group_rows(cols.columns, nk, n, ids, &first, &ng, err);
  if (st == QV_OK) st = qv_table_take(t, first, ng, out, err);
  qvc_columns_reset(&cols);
  free(ids);
  free(first);
  free(idx);
  return st;
}

qv_status qv_value_counts(const qv_chunked_column *column, qv_array **out_values,
                          qv_array **out_counts, qv_error *err) {
  if (!column || !out_values || !out_counts)
    return qv_error_set(err, QV_EARG, "value_counts: NULL argument");
  *out_values = *out_counts = NULL;
  int64_t n;
  QV_RETURN_NOT_OK(qvc_column_check(column, "value_counts column", 0, &n, err));
  qv_type *type = (qv_type *)qvc_column_type(column);
  qv_chunked_column col = *column;
  col.type = type;
  uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
  if (!ids)
    return qv_error_set(err, QV_ENOMEM, "value_counts: out of memory (%" PRId64 " rows)", n);
  int64_t ng = 0, *first = NULL, *fc = NULL, *fr = NULL;
  qv_array *counts = NULL;
  qv_status st = QV_OK;
  if (column->n_chunks == 0) {
    st = qv_array_nulls(type, 0, out_values, err);
    if (st == QV_OK) {
      qv_type *i64 = qv_type_new(QV_INT64);
      st = i64 ? qv_array_nulls(i64, 0, out_counts, err)
               : qv_error_set(err, QV_ENOMEM, "value_counts: out of memory");
      qv_type_unref(i64);
    }
    free(ids);
    return st;
  }
  st = group_rows(&col, 1, n, ids, &first, &ng, err);
  if (st == QV_OK) {
    fc = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
    fr = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
    qv_type *i64 = qv_type_new(QV_INT64);
    counts = i64 ? qv_array_new(i64, 2, 0) : NULL;
    qv_type_unref(i64);
    if (!fc || !fr || !counts) st = qv_error_set(err, QV_ENOMEM, "value_counts: out of memory");
  }
  if (st == QV_OK) {
    counts->length = ng;
    counts->null_count = 0;
    st = qv_buffer_alloc(ng * 8, &counts->buffers[1], err);
  }
  if (st == QV_OK) {
    int64_t *cnt = (int64_t *)(void *)counts->buffers[1]->data;
    memset(cnt, 0, (size_t)ng * 8);
    for (int64_t i = 0; i < n; i++) cnt[ids[i]]++;
    int64_t b = 0, start = 0;
    for (int64_t k = 0; k < ng; k++) { /* first rows increase: walk the chunks once */
      while (first[k] >= start + column->chunks[b]->length) start += column->chunks[b++]->length;
      fc[k] = b;
      fr[k] = first[k] - start;
    }
    st = qv_array_take_chunked(column->chunks, column->n_chunks, fc, fr, ng, out_values, err);
  }
  if (st == QV_OK) {
    *out_counts = counts;
    counts = NULL;
  }
  qv_array_unref(counts);
  free(ids);
  free(first);
  free(fc);
  free(fr);
  return st;
}

qv_status qv_table_value_counts(qv_table *t, const char *column, qv_table **out, qv_error *err) {
  if (!t || !out) return qv_error_set(err, QV_EARG, "value_counts: table or out is NULL");
  *out = NULL;
  int32_t idx;
  QV_RETURN_NOT_OK(qvj_find_column(t, "value_counts", column, &idx, err));
  qvc_columns cols;
  qv_array *v = NULL, *c = NULL;
  qv_status st = qvc_columns_load(&cols, t, &idx, 1, err);
  if (st == QV_OK) st = qv_value_counts(&cols.columns[0], &v, &c, err);
  qv_type *stype = st == QV_OK ? qv_type_new(QV_STRUCT) : NULL;
  if (st == QV_OK && !stype) st = qv_error_set(err, QV_ENOMEM, "value_counts: out of memory");
  if (st == QV_OK)
    st = qv_type_add_child(stype, "values", true, qv_type_ref(v->type),
                           &qv_schema_field(qv_table_schema(t), idx)->metadata, err);
  if (st == QV_OK) st = qv_type_add_child(stype, "counts", false, qv_type_ref(c->type), NULL, err);
  if (st == QV_OK) {
    qv_array *batch = qv_array_new(stype, 1, 2);
    qv_schema *schema = qv_schema_new(qv_type_ref(stype));
    if (!batch || !schema) st = qv_error_set(err, QV_ENOMEM, "value_counts: out of memory");
    else {
      batch->length = v->length;
      batch->null_count = 0;
      batch->children[0] = qv_array_ref(v);
      batch->children[1] = qv_array_ref(c);
      st = qv_table_from_batches(schema, &batch, 1, out, err);
    }
    qv_array_unref(batch);
    qv_schema_unref(schema);
  }
  qv_type_unref(stype);
  qv_array_unref(v);
  qv_array_unref(c);
  qvc_columns_reset(&cols);
  return st;
}
