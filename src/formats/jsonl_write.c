/*
 * jsonl_write.c — the JSON Lines writer of quiver/jsonl.h (formats layer):
 * one object per row, rendered by quiver/print.h's row JSON (the records
 * form of `datasets` to_json; docs/json-rows.md), through the atomic file
 * helper.
 */
#include <stdlib.h>
#include <string.h>

#include "core/atomic_internal.h"
#include "formats/text_internal.h"
#include "quiver/jsonl.h"
#include "quiver/print.h"

struct qv_jsonl_writer {
  qv_text_out out;
  qv_strbuf buf;
};

qv_status qv_jsonl_writer_open(const char *path, qv_jsonl_writer **out, qv_error *err) {
  return qv_jsonl_writer_open_options(path, NULL, out, err);
}

qv_status qv_jsonl_writer_open_options(const char *path, const qv_jsonl_write_options *options,
                                       qv_jsonl_writer **out, qv_error *err) {
  *out = NULL;
  qv_jsonl_write_options dflt = {QV_TEXT_COMPRESSION_AUTO, 0};
  if (options == NULL) options = &dflt;
  qv_jsonl_writer *w = calloc(1, sizeof *w);
  if (w == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  qv_status st =
      qv_text_out_open(&w->out, path, options->compression, options->compression_level, err);
  if (st != QV_OK) {
    free(w);
    return st;
  }
  qv_strbuf_init(&w->buf);
  *out = w;
  return QV_OK;
}

static qv_status flush(qv_jsonl_writer *w, bool force, qv_error *err) {
  if (w->buf.len == 0 || (!force && w->buf.len < (1 << 20))) return QV_OK;
  qv_status st = qv_text_out_write(&w->out, w->buf.data, w->buf.len, err);
  qv_strbuf_clear(&w->buf);
  return st;
}

qv_status qv_jsonl_writer_write(qv_jsonl_writer *w, const qv_array *batch, qv_error *err) {
  if (batch->type->id != QV_STRUCT)
    return qv_error_set(err, QV_ETYPE, "jsonl: a record batch (struct array) is needed");
  for (int64_t r = 0; r < batch->length; r++) {
    QV_RETURN_NOT_OK(qv_format_row_json(batch, r, &w->buf, err));
    QV_RETURN_NOT_OK(qv_strbuf_append_char(&w->buf, '\n', err));
    QV_RETURN_NOT_OK(flush(w, false, err));
  }
  return QV_OK;
}

qv_status qv_jsonl_writer_close(qv_jsonl_writer *w, qv_error *err) {
  qv_status st = flush(w, true, err);
  if (st == QV_OK) st = qv_text_out_commit(&w->out, err);
  else qv_text_out_abort(&w->out);
  qv_strbuf_reset(&w->buf);
  free(w);
  return st;
}

void qv_jsonl_writer_abort(qv_jsonl_writer *w) {
  if (w == NULL) return;
  qv_text_out_abort(&w->out);
  qv_strbuf_reset(&w->buf);
  free(w);
}
