/*
 * dataset_export.c — a dataset out of quiver as an Arrow C Stream (struct
 * ArrowArrayStream): the rows as the dataset shows them. Without an
 * indices mapping this is the data table's stream (zero copy: every
 * exported array shares the mapped buffers and keeps the mapping alive);
 * with one, the rows are gathered a window at a time through a dataset
 * iterator (qv_dataset_iter) and each window is exported. Dataset layer;
 * the Python binding's __arrow_c_stream__ sits on it.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_internal.h"
#include "quiver/cdata.h"
#include "quiver/ipc.h"

typedef struct dstream {
  qv_dataset *ds;       /* reference: the schema */
  qv_dataset_iter *it;  /* holds its own dataset reference */
  qv_error error;
} dstream;

static int ds_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  dstream *p = s->private_data;
  qv_status st = qv_export_schema(qv_dataset_schema(p->ds), out, &p->error);
  return st == QV_OK ? 0 : qv_cdata_errno(st);
}

static int ds_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  dstream *p = s->private_data;
  qv_array *b = NULL;
  qv_status st = qv_dataset_iter_next(p->it, &b, NULL, &p->error);
  if (st == QV_OK && b == NULL) {
    memset(out, 0, sizeof *out); /* released: end of stream */
    return 0;
  }
  if (st == QV_OK) st = qv_export_array(b, out, &p->error);
  qv_array_unref(b);
  return st == QV_OK ? 0 : qv_cdata_errno(st);
}

static const char *ds_last_error(struct ArrowArrayStream *s) {
  dstream *p = s->private_data;
  return p->error.message;
}

static void ds_release(struct ArrowArrayStream *s) {
  dstream *p = s->private_data;
  qv_dataset_iter_free(p->it);
  qv_dataset_unref(p->ds);
  free(p);
  s->release = NULL;
}

qv_status qv_dataset_export_stream(qv_dataset *ds, int64_t batch_size,
                                   struct ArrowArrayStream *out, qv_error *err) {
  if (ds == NULL || out == NULL)
    return qv_error_set(err, QV_EARG, "qv_dataset_export_stream: NULL argument");
  if (batch_size < 0)
    return qv_error_set(err, QV_EARG, "qv_dataset_export_stream: batch size %lld is negative",
                        (long long)batch_size);
  if (ds->indices == NULL) return qv_table_export_stream(ds->data, out, err);
  dstream *p = calloc(1, sizeof *p);
  if (p == NULL) return qv_error_set(err, QV_ENOMEM, "export: out of memory");
  qv_status st = qv_dataset_iter_new(ds, batch_size > 0 ? batch_size : QV_DATASET_READAHEAD_ROWS,
                                     false, &p->it, err);
  if (st != QV_OK) {
    free(p);
    return st;
  }
  p->ds = qv_dataset_ref(ds);
  out->get_schema = ds_get_schema;
  out->get_next = ds_get_next;
  out->get_last_error = ds_last_error;
  out->release = ds_release;
  out->private_data = p;
  return QV_OK;
}
