/*
 * columns.c — compute layer: chunked-column plumbing for the kernels that
 * work on whole columns (sort, unique): type and length checks of a
 * qv_chunked_column, and a table's columns as one chunk per record batch.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/compute_internal.h"

const qv_type *qvc_column_type(const qv_chunked_column *c) {
  if (c->type) return c->type;
  if (c->n_chunks > 0 && c->chunks && c->chunks[0]) return c->chunks[0]->type;
  return NULL;
}

qv_status qvc_column_check(const qv_chunked_column *c, const char *what, int32_t index,
                           int64_t *out_len, qv_error *err) {
  const qv_type *t = qvc_column_type(c);
  if (t == NULL) return qv_error_set(err, QV_EARG, "%s %d: no type and no chunks", what, index);
  if (c->n_chunks < 0 || (c->n_chunks > 0 && c->chunks == NULL))
    return qv_error_set(err, QV_EARG, "%s %d: %" PRId64 " chunks but no chunk array", what, index,
                        c->n_chunks);
  int64_t len = 0;
  for (int64_t i = 0; i < c->n_chunks; i++) {
    const qv_array *a = c->chunks[i];
    if (a == NULL)
      return qv_error_set(err, QV_EARG, "%s %d: chunk %" PRId64 " is NULL", what, index, i);
    if (!qv_type_equals(a->type, t, false)) {
      char got[128], want[128];
      qv_type_to_string(a->type, got, sizeof got);
      qv_type_to_string(t, want, sizeof want);
      return qv_error_set(err, QV_ETYPE, "%s %d: chunk %" PRId64 " has type %s, expected %s", what,
                          index, i, got, want);
    }
    if (a->length < 0 || qv_add_overflow(len, a->length, &len))
      return qv_error_set(err, QV_EARG, "%s %d: chunk lengths overflow", what, index);
  }
  *out_len = len;
  return QV_OK;
}

qv_status qvc_find_column(const qv_table *t, const char *name, int32_t *out, qv_error *err) {
  if (name == NULL) return qv_error_set(err, QV_EARG, "column name is NULL");
  int32_t i = qv_schema_find(qv_table_schema(t), name);
  if (i < 0) return qv_error_set(err, QV_EARG, "no column named '%s' in the table", name);
  *out = i;
  return QV_OK;
}

void qvc_columns_reset(qvc_columns *c) {
  if (c->arrays)
    for (int64_t i = 0; i < (int64_t)c->n * c->n_batches; i++) qv_array_unref(c->arrays[i]);
  free(c->arrays);
  free(c->columns);
  memset(c, 0, sizeof *c);
}

qv_status qvc_columns_load(qvc_columns *out, qv_table *t, const int32_t *idx, int32_t n,
                           qv_error *err) {
  memset(out, 0, sizeof *out);
  int64_t nb = qv_table_num_batches(t);
  const qv_schema *schema = qv_table_schema(t);
  out->columns = calloc((size_t)(n > 0 ? n : 1), sizeof *out->columns);
  out->arrays = calloc((size_t)((int64_t)n * nb > 0 ? (int64_t)n * nb : 1), sizeof *out->arrays);
  if (!out->columns || !out->arrays) {
    qvc_columns_reset(out);
    return qv_error_set(err, QV_ENOMEM, "out of memory (%" PRId64 " batches)", nb);
  }
  out->n = n;
  out->n_batches = nb;
  for (int32_t k = 0; k < n; k++) {
    out->columns[k].type = qv_schema_field(schema, idx[k])->type;
    out->columns[k].chunks = out->arrays + (int64_t)k * nb;
    out->columns[k].n_chunks = nb;
  }
  for (int64_t b = 0; b < nb; b++) {
    qv_array *batch = NULL;
    QV_RETURN_NOT_OK(qv_table_batch(t, b, &batch, err));
    for (int32_t k = 0; k < n; k++) {
      qv_array *child = batch->children[idx[k]];
      qv_array **slot = &out->arrays[(int64_t)k * nb + b];
      if (child->length == batch->length && batch->offset == 0) {
        *slot = qv_array_ref(child);
      } else {
        qv_status st = qv_array_slice(child, batch->offset, batch->length, slot, err);
        if (st != QV_OK) {
          qv_array_unref(batch);
          return st;
        }
      }
    }
    qv_array_unref(batch);
  }
  return QV_OK;
}
