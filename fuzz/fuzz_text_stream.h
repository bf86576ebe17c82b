/*
 * fuzz_text_stream.h — the differential half of fuzz_csv / fuzz_jsonl: the
 * same text read by the streaming reader (through a memfd, so windows,
 * carried rows and restarts run) must give the rows the whole-buffer
 * reader gives. Fuzz harness; not part of the library.
 */
#ifndef QUIVER_FUZZ_TEXT_STREAM_H
#define QUIVER_FUZZ_TEXT_STREAM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "quiver/csv.h"
#include "quiver/jsonl.h"
#include "quiver/print.h"

typedef struct fz_gather {
  qv_strbuf rows;
  qv_schema *schema;
} fz_gather;

static qv_status fz_begin(void *ctx, const qv_schema *schema, qv_error *err) {
  (void)err;
  fz_gather *g = ctx;
  qv_strbuf_clear(&g->rows);
  qv_schema_unref(g->schema);
  g->schema = qv_schema_ref((qv_schema *)schema);
  return QV_OK;
}

static qv_status fz_batch(void *ctx, qv_array *b, qv_error *err) {
  fz_gather *g = ctx;
  if (qv_array_validate(b, QV_VALIDATE_FULL, "batch", err) != QV_OK) abort();
  for (int64_t r = 0; r < b->length; r++) {
    if (qv_format_row_json(b, r, &g->rows, err) != QV_OK) abort();
    qv_strbuf_append_char(&g->rows, '\n', NULL);
  }
  return QV_OK;
}

/* The rows of a whole-buffer result, one JSON object a line. */
static void fz_rows(const qv_read_result *res, qv_strbuf *sb) {
  qv_error err;
  for (int64_t i = 0; i < res->n_batches; i++)
    for (int64_t r = 0; r < res->batches[i]->length; r++) {
      if (qv_format_row_json(res->batches[i], r, sb, &err) != QV_OK) abort();
      qv_strbuf_append_char(sb, '\n', NULL);
    }
}

/* Stream `data` (csv or JSON Lines) and compare with `whole` (NULL: the
 * whole-buffer reader refused it). must_agree: the stream must then
 * refuse it too (CSV; JSON Lines objects over several lines depend on
 * where blocks fall, so only successes are compared there). */
static void fz_stream_check(const uint8_t *data, size_t size, bool csv,
                            const qv_csv_read_options *co, const qv_jsonl_read_options *jo,
                            const qv_read_result *whole, bool must_agree) {
  /* compressed by its magic: the stream would decompress it */
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) return;
  if (size >= 4 && memcmp(data, "\x28\xb5\x2f\xfd", 4) == 0) return;
  int fd = memfd_create("fuzz-text", 0);
  if (fd < 0) return;
  if (size > 0 && write(fd, data, size) != (ssize_t)size) abort();
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  fz_gather g;
  memset(&g, 0, sizeof g);
  qv_strbuf_init(&g.rows);
  qv_batch_sink sink = {fz_begin, fz_batch, &g};
  qv_error err;
  qv_status st = csv ? qv_csv_stream_path(path, co, &sink, NULL, NULL, NULL, &err)
                     : qv_jsonl_stream_path(path, jo, &sink, NULL, NULL, NULL, &err);
  if (st != QV_OK && err.message[0] == '\0') abort();
  if (whole == NULL) {
    if (must_agree && st == QV_OK) abort();
  } else if (st == QV_OK) {
    qv_strbuf want;
    qv_strbuf_init(&want);
    fz_rows(whole, &want);
    if (!qv_schema_equals(whole->schema, g.schema, false)) abort();
    if (strcmp(qv_strbuf_cstr(&want), qv_strbuf_cstr(&g.rows)) != 0) abort();
    qv_strbuf_reset(&want);
  } else if (must_agree) {
    abort();
  }
  qv_strbuf_reset(&g.rows);
  qv_schema_unref(g.schema);
  close(fd);
}

#endif /* QUIVER_FUZZ_TEXT_STREAM_H */
