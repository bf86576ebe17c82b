/*
 * dataset_sink.c — the one "memory or cache file" row sink of the dataset
 * layer: where map's outputs, indices mappings and the rows written by
 * flatten / save_to_disk go. Either an IPC stream written atomically
 * (ipc writer, core/atomic_internal.h) and mapped back, or the batches kept
 * in memory as an in-memory table. The only place rows are re-batched for
 * writing: small pushes may be gathered up to the batch size (map's
 * outputs, as datasets' ArrowWriter buffers examples), larger ones are split
 * by the writer into record batches of at most that many rows.
 * Dataset layer; declared in dataset_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_internal.h"
#include "quiver/writer.h"

struct qv_ds_sink {
  qv_schema *schema; /* reference */
  qv_writer *w;      /* NULL: in memory */
  char *path;
  int64_t batch_rows;
  bool gather;
  qv_array **pending; /* file: gathered, not yet written; memory: every batch */
  int64_t n_pending, cap_pending, pending_rows;
};

static qv_status oom(qv_error *err) {
  return qv_error_set(err, QV_ENOMEM, "dataset: out of memory");
}

static void drop_pending(qv_ds_sink *s) {
  for (int64_t i = 0; i < s->n_pending; i++) qv_array_unref(s->pending[i]);
  s->n_pending = 0;
  s->pending_rows = 0;
}

static void sink_free(qv_ds_sink *s) {
  drop_pending(s);
  free(s->pending);
  free(s->path);
  qv_schema_unref(s->schema);
  free(s);
}

qv_status qv_ds_sink_open(const char *path, const qv_schema *schema, int64_t batch_rows,
                          bool gather, qv_ds_sink **out, qv_error *err) {
  *out = NULL;
  qv_ds_sink *s = calloc(1, sizeof *s);
  if (s == NULL) return oom(err);
  s->schema = qv_schema_ref((qv_schema *)schema);
  s->batch_rows = batch_rows > 0 ? batch_rows : QV_DATASET_WRITER_BATCH_SIZE;
  s->gather = gather;
  if (path != NULL) {
    s->path = qv_ds_strdup(path);
    if (s->path == NULL) {
      sink_free(s);
      return oom(err);
    }
    qv_write_options wo;
    memset(&wo, 0, sizeof wo);
    wo.format = QV_FORMAT_STREAM;
    wo.max_batch_rows = s->batch_rows;
    qv_status st = qv_writer_open_path(path, schema, &wo, &s->w, err);
    if (st != QV_OK) {
      sink_free(s);
      return st;
    }
  }
  *out = s;
  return QV_OK;
}

/* Write the gathered batches as one (concatenated column by column when
 * there are several; the writer splits it into batch_rows pieces). */
static qv_status flush(qv_ds_sink *s, qv_error *err) {
  if (s->w == NULL || s->n_pending == 0) return QV_OK;
  qv_array *b = NULL;
  qv_status st = QV_OK;
  if (s->n_pending == 1) {
    b = qv_array_ref(s->pending[0]);
  } else {
    const qv_type *t = s->schema->type;
    int32_t nc = t->n_children;
    qv_array **cols = calloc((size_t)(nc > 0 ? nc : 1), sizeof *cols);
    qv_array **parts = calloc((size_t)s->n_pending, sizeof *parts);
    if (cols == NULL || parts == NULL) st = oom(err);
    int32_t made = 0;
    for (int32_t c = 0; c < nc && st == QV_OK; c++) {
      for (int64_t i = 0; i < s->n_pending; i++) parts[i] = s->pending[i]->children[c];
      st = qv_array_concat(parts, s->n_pending, &cols[c], err);
      if (st == QV_OK) made = c + 1;
    }
    if (st == QV_OK) {
      st = qv_ds_make_struct((qv_type *)t, s->pending_rows, cols, nc, &b, err);
    } else {
      for (int32_t c = 0; c < made; c++) qv_array_unref(cols[c]);
    }
    free(cols);
    free(parts);
  }
  if (st == QV_OK) st = qv_writer_write_batch(s->w, b, err);
  qv_array_unref(b);
  drop_pending(s);
  return st;
}

qv_status qv_ds_sink_push(qv_ds_sink *s, qv_array *batch, qv_error *err) {
  if (s->w != NULL && !s->gather) {
    qv_status st = qv_writer_write_batch(s->w, batch, err);
    qv_array_unref(batch);
    return st;
  }
  if (s->n_pending == s->cap_pending) {
    int64_t nc = s->cap_pending ? s->cap_pending * 2 : 16;
    qv_array **p = realloc(s->pending, sizeof *p * (size_t)nc);
    if (p == NULL) {
      qv_array_unref(batch);
      return oom(err);
    }
    s->pending = p;
    s->cap_pending = nc;
  }
  s->pending[s->n_pending++] = batch;
  s->pending_rows += batch->length;
  if (s->w != NULL && s->pending_rows >= s->batch_rows) return flush(s, err);
  return QV_OK;
}

qv_status qv_ds_sink_finish(qv_ds_sink *s, qv_table **out, qv_error *err) {
  if (out) *out = NULL;
  qv_status st = QV_OK;
  if (s->w != NULL) {
    st = flush(s, err);
    if (st == QV_OK) {
      st = qv_writer_close(s->w, err);
    } else {
      qv_writer_abort(s->w);
    }
    s->w = NULL;
    if (st == QV_OK && out != NULL) st = qv_table_open_path(s->path, NULL, out, err);
  } else if (out != NULL) {
    st = qv_table_from_batches(s->schema, s->pending, s->n_pending, out, err);
  }
  sink_free(s);
  return st;
}

void qv_ds_sink_abort(qv_ds_sink *s) {
  if (s == NULL) return;
  qv_writer_abort(s->w);
  sink_free(s);
}
