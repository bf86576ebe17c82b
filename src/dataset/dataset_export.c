/*
 * dataset_export.c — a dataset out of quiver as an Arrow C Stream (struct
 * ArrowArrayStream): the rows as the dataset shows them. Without an
 * indices mapping this is the data table's stream (zero copy: every
 * exported array shares the mapped buffers and keeps the mapping alive);
 * with one, the rows are gathered a window at a time through a dataset
 * iterator (qv_dataset_iter), a batch source for the ipc layer's stream
 * adapter (qv_export_batch_stream). Dataset layer; the Python binding's
 * __arrow_c_stream__ sits on it.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_internal.h"
#include "quiver/cdata.h"
#include "quiver/ipc.h"

/* The C stream with an indices mapping: a batch source over an iterator. */
typedef struct dstream {
  qv_dataset *ds;      /* reference: the schema */
  qv_dataset_iter *it; /* holds its own dataset reference */
} dstream;

static const qv_schema *ds_schema(void *ctx) { return qv_dataset_schema(((dstream *)ctx)->ds); }

static qv_status ds_next(void *ctx, qv_array **batch, qv_error *err) {
  return qv_dataset_iter_next(((dstream *)ctx)->it, batch, NULL, err);
}

static void ds_release(void *ctx) {
  dstream *p = ctx;
  qv_dataset_iter_free(p->it);
  qv_dataset_unref(p->ds);
  free(p);
}

qv_status qv_dataset_export_stream(qv_dataset *ds, int64_t batch_size, struct ArrowArrayStream *out,
                                   qv_error *err) {
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
  qv_batch_source src = {p, ds_schema, ds_next, ds_release};
  return qv_export_batch_stream(&src, out, err);
}
