/*
 * dataset_index.c — indices mappings of the Dataset object: building one
 * (through the row sink of dataset_sink.c: in memory, or written atomically as `cache-<fingerprint>.arrow` the way
 * datasets' ArrowWriter writes it: an IPC stream, one uint64 column
 * "indices", batches of QV_DATASET_INDICES_BATCH_SIZE rows unless a
 * writer_batch_size is given, the `huggingface` schema
 * metadata with features and fingerprint), reopening a cache file,
 * composing a selection with an existing mapping (datasets'
 * `self._indices.column(0).take(indices)`), the select paths every
 * indices transform ends in, and composing an indices mapping file with
 * its data (dataset_open.c finds the data). Dataset layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_internal.h"
#include "dataset/hf_internal.h"
#include "quiver/writer.h"

static qv_status oom(qv_error *err) {
  return qv_error_set(err, QV_ENOMEM, "dataset: out of memory");
}

/* struct<indices: uint64> with the given metadata value (may be NULL). */
static qv_status indices_schema(const char *fp, qv_schema **out, qv_error *err) {
  qv_type *st = qv_type_new(QV_STRUCT);
  qv_type *u64 = qv_type_new(QV_UINT64);
  if (st == NULL || u64 == NULL) {
    qv_type_unref(st);
    qv_type_unref(u64);
    return oom(err);
  }
  qv_status s = qv_type_add_child(st, QV_DATASET_INDICES_COLUMN, true, u64, NULL, err);
  if (s != QV_OK) {
    qv_type_unref(u64);
    qv_type_unref(st);
    return s;
  }
  qv_schema *bare = qv_schema_new(st);
  if (bare == NULL) return oom(err);
  qv_hf_feature *features = NULL;
  s = qv_hf_features_resolve(bare, &features, NULL, err);
  if (s == QV_OK) s = qv_ds_file_schema(bare, features, fp, out, err);
  qv_hf_feature_free(features);
  qv_schema_unref(bare);
  return s;
}

qv_status qv_ds_indices_array(qv_buffer *buf, int64_t n, qv_array **out, qv_error *err) {
  qv_type *t = qv_type_new(QV_UINT64);
  qv_array *a = t ? qv_array_new(t, 2, 0) : NULL;
  qv_type_unref(t);
  if (a == NULL) return oom(err);
  a->length = n;
  a->null_count = 0;
  a->buffers[1] = qv_buffer_ref(buf);
  *out = a;
  return QV_OK;
}

/* A UINT64 view of an INT64 / UINT64 array (shares the buffers). */
static qv_status as_uint64(qv_array *values, qv_array **out, qv_error *err) {
  if (values->type->id == QV_UINT64) {
    *out = qv_array_ref(values);
    return QV_OK;
  }
  if (values->type->id != QV_INT64 || values->n_buffers != 2)
    return qv_error_set(err, QV_ETYPE, "indices must be int64 or uint64, found %s",
                        qv_type_id_name(values->type->id));
  qv_type *t = qv_type_new(QV_UINT64);
  qv_array *a = t ? qv_array_new(t, 2, 0) : NULL;
  qv_type_unref(t);
  if (a == NULL) return oom(err);
  a->length = values->length;
  a->offset = values->offset;
  a->null_count = values->null_count;
  a->buffers[0] = qv_buffer_ref(values->buffers[0]);
  a->buffers[1] = qv_buffer_ref(values->buffers[1]);
  *out = a;
  return QV_OK;
}

qv_status qv_ds_indices_check(const char *path, qv_table *t, int64_t expected_rows, qv_error *err) {
  const qv_schema *s = qv_table_schema(t);
  if (!qv_hf_is_indices_schema(s)) {
    char ty[64] = "";
    if (qv_schema_num_fields(s) >= 1) qv_type_to_string(qv_schema_field(s, 0)->type, ty, sizeof ty);
    return qv_error_set(err, QV_EINVAL,
                        "%s: not an indices mapping: expected one uint64 column 'indices', found "
                        "%d column(s)%s%s%s%s",
                        path, qv_schema_num_fields(s),
                        qv_schema_num_fields(s) ? ", the first '" : "",
                        qv_schema_num_fields(s) ? qv_schema_field(s, 0)->name : "",
                        qv_schema_num_fields(s) ? "': " : "", ty);
  }
  if (expected_rows >= 0 && qv_table_num_rows(t) != expected_rows)
    return qv_error_set(err, QV_EINVAL, "%s: indices mapping has %lld rows, expected %lld", path,
                        (long long)qv_table_num_rows(t), (long long)expected_rows);
  return QV_OK;
}

qv_status qv_ds_indices_open(const char *path, int64_t expected_rows, qv_table **out,
                             qv_error *err) {
  qv_table *t = NULL;
  QV_RETURN_NOT_OK(qv_table_open_path(path, NULL, &t, err));
  qv_status st = qv_ds_indices_check(path, t, expected_rows, err);
  if (st != QV_OK) {
    qv_table_unref(t);
    return st;
  }
  *out = t;
  return QV_OK;
}

qv_status qv_ds_indices_build(qv_array *values, const char *path, const char *fp,
                              int64_t writer_batch_size, qv_table **out, qv_error *err) {
  qv_array *u64 = NULL;
  QV_RETURN_NOT_OK(as_uint64(values, &u64, err));
  qv_schema *schema = NULL;
  qv_status st = indices_schema(fp, &schema, err);
  qv_array *batch = NULL;
  int64_t n = u64->length;
  if (st == QV_OK) {
    qv_array *ch = qv_array_ref(u64);
    st = qv_ds_make_struct(schema->type, n, &ch, 1, &batch, err);
  }
  qv_ds_sink *sink = NULL;
  if (st == QV_OK)
    st = qv_ds_sink_open(path, schema,
                         writer_batch_size > 0 ? writer_batch_size : QV_DATASET_INDICES_BATCH_SIZE,
                         false, &sink, err);
  if (st == QV_OK && n > 0) {
    st = qv_ds_sink_push(sink, batch, err);
    batch = NULL; /* taken over */
  }
  if (st != QV_OK) {
    qv_ds_sink_abort(sink);
  } else if (path == NULL) {
    st = qv_ds_sink_finish(sink, out, err);
  } else {
    /* committed, then reopened with the indices checks */
    st = qv_ds_sink_finish(sink, NULL, err);
    if (st == QV_OK) st = qv_ds_indices_open(path, n, out, err);
  }
  qv_array_unref(batch);
  qv_array_unref(u64);
  qv_schema_unref(schema);
  return st;
}

qv_status qv_ds_compose(const qv_dataset *ds, const int64_t *rows, int64_t n, qv_array **out,
                        qv_error *err) {
  int64_t size = qv_dataset_num_rows(ds);
  for (int64_t i = 0; i < n; i++)
    if (rows[i] < 0 || rows[i] >= size)
      return qv_error_set(err, QV_ERANGE, "index %lld out of range for dataset of size %lld",
                          (long long)rows[i], (long long)size);
  if (ds->indices == NULL) {
    qv_buffer *buf = NULL;
    QV_RETURN_NOT_OK(qv_buffer_alloc(n * 8, &buf, err));
    if (n > 0) memcpy(buf->data, rows, (size_t)n * 8);
    qv_status st = qv_ds_indices_array(buf, n, out, err);
    qv_buffer_unref(buf);
    return st;
  }
  qv_array *g = NULL;
  QV_RETURN_NOT_OK(qv_table_gather(ds->indices, rows, n, &g, err));
  qv_array *col = g->children[0];
  qv_status st = QV_OK;
  if (qv_array_null_count(col) > 0)
    st = qv_error_set(err, QV_EINVAL, "indices mapping holds nulls");
  else *out = qv_array_ref(col);
  qv_array_unref(g);
  return st;
}

qv_status qv_ds_with_indices(const qv_dataset *ds, qv_table *indices, const char *fp,
                             qv_dataset **out, qv_error *err) {
  return qv_ds_derive(ds, ds->data, indices, fp, NULL, out, err);
}

qv_status qv_ds_select_contiguous(qv_dataset *ds, int64_t start, int64_t length, const char *fp,
                                  qv_dataset **out, qv_error *err) {
  int64_t size = qv_dataset_num_rows(ds);
  if (size == 0) {
    *out = qv_dataset_ref(ds);
    return QV_OK;
  }
  if (start < 0 || start >= size || length < 0 || length > size - start)
    return qv_error_set(err, QV_ERANGE, "rows [%lld, %lld) out of range for dataset of size %lld",
                        (long long)start, (long long)(start + length), (long long)size);
  qv_table *t = NULL;
  qv_status st;
  if (ds->indices == NULL || length == 0) {
    QV_RETURN_NOT_OK(qv_table_slice(ds->data, length == 0 ? 0 : start, length, &t, err));
    st = qv_ds_derive(ds, t, NULL, fp, NULL, out, err);
  } else {
    QV_RETURN_NOT_OK(qv_table_slice(ds->indices, start, length, &t, err));
    st = qv_ds_derive(ds, ds->data, t, fp, NULL, out, err);
  }
  qv_table_unref(t);
  return st;
}

/* The body of qv_ds_select_fp / qv_ds_select_buf: `owner` (may be NULL)
 * is a heap buffer holding `indices`, shared instead of copied when the
 * selection is used as it is (no mapping to compose with). */
static qv_status select_impl(qv_dataset *ds, const int64_t *indices, int64_t n, qv_buffer *owner,
                             const char *fp, const char *path, int64_t writer_batch_size,
                             qv_dataset **out, qv_error *err) {
  if (qv_dataset_num_rows(ds) == 0) {
    *out = qv_dataset_ref(ds);
    return QV_OK;
  }
  if (n == 0) return qv_ds_select_contiguous(ds, 0, 0, fp, out, err);
  int64_t start = indices[0];
  bool contiguous = start >= 0;
  for (int64_t i = 1; contiguous && i < n; i++) contiguous = indices[i] == start + i;
  if (contiguous) return qv_ds_select_contiguous(ds, start, n, fp, out, err);
  qv_array *values = NULL;
  if (owner != NULL && ds->indices == NULL) {
    int64_t size = qv_dataset_num_rows(ds);
    for (int64_t i = 0; i < n; i++)
      if (indices[i] < 0 || indices[i] >= size)
        return qv_error_set(err, QV_ERANGE, "index %lld out of range for dataset of size %lld",
                            (long long)indices[i], (long long)size);
    qv_buffer *view = NULL;
    QV_RETURN_NOT_OK(qv_buffer_view(owner, (int64_t)((const uint8_t *)indices - owner->data), n * 8,
                                    &view, err));
    qv_status st = qv_ds_indices_array(view, n, &values, err);
    qv_buffer_unref(view);
    QV_RETURN_NOT_OK(st);
  } else {
    QV_RETURN_NOT_OK(qv_ds_compose(ds, indices, n, &values, err));
  }
  qv_table *idx = NULL;
  qv_status st = qv_ds_indices_build(values, path, fp, writer_batch_size, &idx, err);
  qv_array_unref(values);
  if (st == QV_OK) st = qv_ds_with_indices(ds, idx, fp, out, err);
  qv_table_unref(idx);
  return st;
}

qv_status qv_ds_select_fp(qv_dataset *ds, const int64_t *indices, int64_t n, const char *fp,
                          const char *path, int64_t writer_batch_size, qv_dataset **out,
                          qv_error *err) {
  return select_impl(ds, indices, n, NULL, fp, path, writer_batch_size, out, err);
}

qv_status qv_ds_select_buf(qv_dataset *ds, qv_buffer *buf, int64_t offset, int64_t n,
                           const char *fp, const char *path, int64_t writer_batch_size,
                           qv_dataset **out, qv_error *err) {
  return select_impl(ds, (const int64_t *)buf->data + offset, n, buf, fp, path, writer_batch_size,
                     out, err);
}

/* ------------------------------------------------------------------------ */
/* Indices mapping files                                                     */

qv_status qv_ds_indices_scan(qv_table *t, const char *path, int64_t bound, int64_t *out_max,
                             qv_error *err) {
  uint64_t max = 0;
  bool any = false;
  int64_t base = 0;
  for (int64_t b = 0; b < qv_table_num_batches(t); b++) {
    qv_array *batch = NULL;
    QV_RETURN_NOT_OK(qv_table_batch(t, b, &batch, err));
    const qv_array *col = batch->children[0];
    qv_status st = QV_OK;
    if (qv_array_null_count((qv_array *)col) > 0)
      for (int64_t i = 0; i < col->length && st == QV_OK; i++)
        if (!qv_array_is_valid(col, i))
          st = qv_error_set(err, QV_EINVAL, "%s: indices mapping row %lld is null", path,
                            (long long)(base + i));
    const uint64_t *v =
        col->length > 0 ? (const uint64_t *)col->buffers[1]->data + col->offset : NULL;
    uint64_t bmax = 0;
    for (int64_t i = 0; st == QV_OK && i < col->length; i++) bmax = v[i] > bmax ? v[i] : bmax;
    if (st == QV_OK && col->length > 0) {
      if (bound >= 0 && bmax >= (uint64_t)bound)
        for (int64_t i = 0; i < col->length; i++)
          if (v[i] >= (uint64_t)bound) {
            st = qv_error_set(err, QV_EINVAL,
                              "%s: row %lld holds index %llu, outside the data's %lld rows "
                              "(indices must be < %lld)",
                              path, (long long)(base + i), (unsigned long long)v[i],
                              (long long)bound, (long long)bound);
            break;
          }
      if (!any || bmax > max) max = bmax;
      any = true;
    }
    base += col->length;
    qv_array_unref(batch);
    if (st != QV_OK) return st;
  }
  *out_max = !any ? -1 : max >> 63 ? INT64_MAX : (int64_t)max;
  return QV_OK;
}

qv_status qv_ds_with_indices_table(qv_dataset *data, const char *path, qv_table *t, bool scanned,
                                   int64_t max, qv_dataset **out, qv_error *err) {
  if (data->indices != NULL)
    return qv_error_set(err, QV_EARG,
                        "%s: the data to map already has an indices mapping; an indices file "
                        "indexes a data table: name the data it was derived from",
                        path);
  int64_t rows = qv_table_num_rows(data->data);
  qv_status st = QV_OK;
  /* Scanned already: a second pass only to name the first bad row. */
  if (!scanned || max >= rows) st = qv_ds_indices_scan(t, path, rows, &max, err);
  char fp[QV_FINGERPRINT_SIZE];
  bool found = false;
  if (st == QV_OK) {
    st = qv_fingerprint_from_metadata(&qv_table_schema(t)->metadata, fp, &found, err);
    if (st != QV_OK) qv_error_prefix(err, st, "%s: ", path);
  }
  if (st == QV_OK && !found) {
    char id[QV_FINGERPRINT_SIZE];
    qv_fingerprint_args *args = NULL;
    st = qv_fingerprint_of_file(path, NULL, NULL, id, err);
    if (st == QV_OK) st = qv_fingerprint_args_new(&args, err);
    if (st == QV_OK) st = qv_fingerprint_arg_str(args, "file", id, err);
    if (st == QV_OK)
      st = qv_fingerprint_update(data->fingerprint, "quiver.indices_file", args, fp, err);
    qv_fingerprint_args_free(args);
  }
  if (st == QV_OK) st = qv_ds_with_indices(data, t, fp, out, err);
  return st;
}

qv_status qv_dataset_with_indices_file(qv_dataset *data, const char *path, qv_dataset **out,
                                       qv_error *err) {
  if (data->indices != NULL) return qv_ds_with_indices_table(data, path, NULL, false, 0, out, err);
  qv_table *t = NULL;
  QV_RETURN_NOT_OK(qv_ds_indices_open(path, -1, &t, err));
  qv_status st = qv_ds_with_indices_table(data, path, t, false, 0, out, err);
  qv_table_unref(t);
  return st;
}

qv_status qv_ds_indices_fit(const qv_hf_dir *dir, int64_t max, int64_t **out, int64_t *out_n,
                            qv_error *err) {
  int64_t *idx = calloc((size_t)(dir->n_sources > 0 ? dir->n_sources : 1), sizeof *idx);
  if (idx == NULL) return oom(err);
  int64_t n = 0;
  for (int64_t i = 0; i < dir->n_sources; i++)
    if (dir->sources[i].rows > max) idx[n++] = i;
  *out = idx;
  *out_n = n;
  return QV_OK;
}

qv_status qv_dataset_indices_candidates(const qv_hf_dir *dir, const char *indices_path,
                                        int64_t **out_sources, int64_t *out_n, int64_t *out_max,
                                        qv_error *err) {
  qv_table *t = NULL;
  QV_RETURN_NOT_OK(qv_ds_indices_open(indices_path, -1, &t, err));
  int64_t max = 0;
  qv_status st = qv_ds_indices_scan(t, indices_path, -1, &max, err);
  qv_table_unref(t);
  if (st != QV_OK) return st;
  QV_RETURN_NOT_OK(qv_ds_indices_fit(dir, max, out_sources, out_n, err));
  *out_max = max;
  return QV_OK;
}
