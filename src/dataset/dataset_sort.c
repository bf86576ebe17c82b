/*
 * dataset_sort.c — datasets' Dataset.sort and Dataset.unique over the rows
 * as the dataset shows them (through its indices mapping), built on the
 * compute layer's stable sort indices and distinct values (compute.h).
 * Sort gathers only the key columns (datasets' query_table gathers every
 * column), sorts their rows, and composes the result with the mapping like
 * any select; the mapping goes to the cache file when the dataset is
 * file-backed. Dataset layer.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_internal.h"
#include "quiver/compute.h"
#include "quiver/print.h"

static qv_status oom(qv_error *err) {
  return qv_error_set(err, QV_ENOMEM, "dataset: out of memory");
}

/* "Column 'x' not found in the dataset. Please provide a column selected
 * in: ['a', 'b']" (datasets' message). */
static qv_status unknown_column(const qv_dataset *ds, const char *name, qv_error *err) {
  qv_strbuf cols;
  qv_strbuf_init(&cols);
  qv_ds_column_list(ds, &cols);
  qv_status st = qv_error_set(err, QV_EARG,
                              "Column '%s' not found in the dataset. Please provide a column "
                              "selected in: [%s]",
                              name ? name : "(null)", qv_strbuf_cstr(&cols));
  qv_strbuf_reset(&cols);
  return st;
}

qv_status qv_dataset_sort(qv_dataset *ds, const char *const *columns, int32_t n,
                          const bool *descending, qv_null_placement nulls,
                          const qv_dataset_options *opts, qv_dataset **out, qv_error *err) {
  if (n < 1 || columns == NULL) return qv_error_set(err, QV_EARG, "sort: no column to sort by");
  if (nulls != QV_NULLS_AT_END && nulls != QV_NULLS_AT_START)
    return qv_error_set(err, QV_EARG, "sort: null placement must be at_end or at_start");
  int32_t *idx = calloc((size_t)n, sizeof *idx), nk = 0;
  qv_sort_spec *specs = calloc((size_t)n, sizeof *specs);
  if (idx == NULL || specs == NULL) {
    free(idx);
    free(specs);
    return oom(err);
  }
  qv_status st = QV_OK;
  for (int32_t i = 0; i < n && st == QV_OK; i++) {
    int32_t c = columns[i] ? qv_dataset_column_index(ds, columns[i]) : -1;
    if (c < 0) {
      st = unknown_column(ds, columns[i], err);
      break;
    }
    bool seen = false;
    for (int32_t k = 0; k < nk && !seen; k++) seen = idx[k] == c;
    if (!seen) idx[nk++] = c;
    specs[i].column = columns[i];
    specs[i].descending = descending ? descending[i] : false;
    specs[i].null_placement = nulls;
  }
  int64_t rows = qv_dataset_num_rows(ds);
  if (st != QV_OK || rows == 0) {
    free(idx);
    free(specs);
    if (st == QV_OK) *out = qv_dataset_ref(ds);
    return st;
  }
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    qv_fingerprint_arg_begin_list(a, "column_names", err);
    for (int32_t i = 0; i < n; i++) qv_fingerprint_arg_str(a, NULL, columns[i], err);
    qv_fingerprint_arg_end(a, err);
    qv_fingerprint_arg_begin_list(a, "reverse", err);
    for (int32_t i = 0; i < n; i++) qv_fingerprint_arg_bool(a, NULL, specs[i].descending, err);
    qv_fingerprint_arg_end(a, err);
    qv_fingerprint_arg_str(a, "null_placement", nulls == QV_NULLS_AT_END ? "at_end" : "at_start",
                           err);
    st = qv_ds_fingerprint(ds, opts, "quiver.sort", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  char *path = NULL;
  if (st == QV_OK) st = qv_ds_cache_path(ds, opts, fp, NULL, &path, err);
  if (st == QV_OK && path != NULL && !(opts && opts->ignore_cache) && qv_ds_cache_reusable(path)) {
    qv_table *mapping = NULL;
    st = qv_ds_indices_open(path, rows, &mapping, err);
    if (st == QV_OK) st = qv_ds_with_indices(ds, mapping, fp, out, err);
    qv_table_unref(mapping);
  } else if (st == QV_OK) {
    qv_table *keys = NULL;
    qv_buffer *order = NULL;
    st = qv_ds_mapped_columns(ds, idx, nk, &keys, err);
    if (st == QV_OK) st = qv_buffer_alloc(rows * 8, &order, err);
    if (st == QV_OK) st = qv_table_sort_indices(keys, specs, n, (int64_t *)order->data, err);
    if (st == QV_OK) {
      int64_t wbs = opts && opts->writer_batch_size > 0 ? opts->writer_batch_size : 0;
      st = qv_ds_select_buf(ds, order, 0, rows, fp, path, wbs, out, err);
    }
    qv_buffer_unref(order);
    qv_table_unref(keys);
  }
  free(path);
  free(idx);
  free(specs);
  return st;
}

qv_status qv_dataset_unique(qv_dataset *ds, const char *column, qv_array **out, qv_error *err) {
  int32_t c = column ? qv_dataset_column_index(ds, column) : -1;
  if (c < 0)
    return qv_error_set(err, QV_EARG, "unique: column '%s' not in the dataset",
                        column ? column : "(null)");
  /* datasets: the data's column as it is when the mapping covers every
   * data row (a permutation: same values, data order), else the rows as
   * mapped. */
  if (ds->indices == NULL || qv_table_num_rows(ds->indices) == qv_table_num_rows(ds->data))
    return qv_table_unique(ds->data, column, out, err);
  qv_table *col = NULL;
  QV_RETURN_NOT_OK(qv_ds_mapped_columns(ds, &c, 1, &col, err));
  qv_status st = qv_table_unique(col, column, out, err);
  qv_table_unref(col);
  return st;
}
