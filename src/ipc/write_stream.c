/*
 * write_stream.c — writing an Arrow C stream (struct ArrowArrayStream) as
 * an IPC file or stream: the C Stream Interface importer (cdata.c) feeding
 * the IPC writer (writer.c). ipc layer.
 *
 * Imported batches wrap the producer's buffers (no copy); the writer emits
 * them with writev straight from that memory, and each batch goes back to
 * the producer (its release callback runs) once it is written.
 */
#include <string.h>

#include "quiver/cdata.h"
#include "quiver/writer.h"

/* Pump `s` into a writer opened by open_path or open_fd. */
static qv_status pump(qv_stream_import *s, const char *path, int fd,
                      const qv_write_options *options, int64_t *out_rows, qv_error *err) {
  const qv_schema *schema = qv_stream_import_schema(s);
  qv_writer *w = NULL;
  qv_status st = path ? qv_writer_open_path(path, schema, options, &w, err)
                      : qv_writer_open_fd(fd, schema, options, &w, err);
  if (st != QV_OK) return st;
  int64_t batches = 0, rows = 0;
  for (;;) {
    qv_array *batch = NULL;
    st = qv_stream_import_next(s, &batch, err);
    if (st != QV_OK) {
      qv_error_prefix(err, st, "C stream batch %lld: ", (long long)batches);
      break;
    }
    if (batch == NULL) break;
    st = qv_writer_write_batch(w, batch, err);
    rows += batch->length;
    qv_array_unref(batch);
    if (st != QV_OK) {
      qv_error_prefix(err, st, "C stream batch %lld: ", (long long)batches);
      break;
    }
    batches++;
  }
  if (st != QV_OK) {
    qv_writer_abort(w);
    return st;
  }
  st = qv_writer_close(w, err);
  if (st == QV_OK && out_rows) *out_rows = rows;
  return st;
}

static qv_status write_stream(struct ArrowArrayStream *in, const char *path, int fd,
                              const qv_write_options *options, int64_t *out_rows, qv_error *err) {
  if (out_rows) *out_rows = 0;
  qv_stream_import *s = NULL;
  QV_RETURN_NOT_OK(qv_stream_import_open(in, &s, err)); /* consumes `in` */
  qv_status st = pump(s, path, fd, options, out_rows, err);
  qv_stream_import_close(s);
  return st;
}

qv_status qv_write_arrow_stream_path(struct ArrowArrayStream *in, const char *path,
                                     const qv_write_options *options, int64_t *out_rows,
                                     qv_error *err) {
  if (path == NULL) {
    if (in && in->release) in->release(in);
    return qv_error_set(err, QV_EARG, "qv_write_arrow_stream_path: NULL path");
  }
  return write_stream(in, path, -1, options, out_rows, err);
}

qv_status qv_write_arrow_stream_fd(struct ArrowArrayStream *in, int fd,
                                   const qv_write_options *options, int64_t *out_rows,
                                   qv_error *err) {
  if (fd < 0) {
    if (in && in->release) in->release(in);
    return qv_error_set(err, QV_EARG, "qv_write_arrow_stream_fd: bad descriptor %d", fd);
  }
  return write_stream(in, NULL, fd, options, out_rows, err);
}
