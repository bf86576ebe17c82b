/*
 * unique.c — compute layer: distinct values of a column in order of first
 * appearance (quiver/compute.h; pyarrow's `unique`, what `datasets`'
 * Dataset.unique calls). The column's chunks go through a one-key grouper
 * (grouper.c); the row where each new group id first appears is recorded,
 * and the result is gathered from the input chunks with
 * qv_array_take_chunked, so it has exactly the column's type (views stay
 * views, dictionaries stay dictionary-encoded).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/compute_internal.h"

qv_status qv_unique(const qv_chunked_column *column, qv_array **out, qv_error *err) {
  int64_t n;
  QV_RETURN_NOT_OK(qvc_column_check(column, "unique column", 0, &n, err));
  qv_type *type = (qv_type *)qvc_column_type(column);
  if (column->n_chunks == 0) return qv_array_nulls(type, 0, out, err);
  qv_grouper *g = NULL;
  QV_RETURN_NOT_OK(qv_grouper_new(&type, 1, &g, err));
  int64_t max_len = 0;
  for (int64_t c = 0; c < column->n_chunks; c++)
    if (column->chunks[c]->length > max_len) max_len = column->chunks[c]->length;
  uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)(max_len ? max_len : 1));
  int64_t cap = 64, k = 0;
  int64_t *first_chunk = malloc(sizeof(int64_t) * (size_t)cap);
  int64_t *first_row = malloc(sizeof(int64_t) * (size_t)cap);
  qv_status st = QV_OK;
  if (!ids || !first_chunk || !first_row)
    st = qv_error_set(err, QV_ENOMEM, "unique: out of memory");
  for (int64_t c = 0; c < column->n_chunks && st == QV_OK; c++) {
    qv_array *chunk = column->chunks[c];
    if ((st = qv_grouper_consume(g, &chunk, ids, err)) != QV_OK) break;
    for (int64_t i = 0; i < chunk->length; i++) {
      if ((int64_t)ids[i] != k) continue; /* ids are dense: k is the next new one */
      if (k == cap) {
        cap *= 2;
        int64_t *a = realloc(first_chunk, sizeof(int64_t) * (size_t)cap);
        if (a) first_chunk = a;
        int64_t *b = realloc(first_row, sizeof(int64_t) * (size_t)cap);
        if (b) first_row = b;
        if (!a || !b) {
          st = qv_error_set(err, QV_ENOMEM, "unique: out of memory (%" PRId64 " values)", k);
          break;
        }
      }
      first_chunk[k] = c;
      first_row[k] = i;
      k++;
    }
  }
  if (st == QV_OK)
    st = qv_array_take_chunked(column->chunks, column->n_chunks, first_chunk, first_row, k, out,
                               err);
  qv_grouper_free(g);
  free(ids);
  free(first_chunk);
  free(first_row);
  return st;
}

qv_status qv_table_unique(qv_table *t, const char *column, qv_array **out, qv_error *err) {
  int32_t idx;
  QV_RETURN_NOT_OK(qvc_find_column(t, column, &idx, err));
  qvc_columns cols;
  qv_status st = qvc_columns_load(&cols, t, &idx, 1, err);
  if (st == QV_OK) st = qv_unique(&cols.columns[0], out, err);
  qvc_columns_reset(&cols);
  return st;
}
