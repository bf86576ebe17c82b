/*
 * fuzz_jsonl.c — libFuzzer target for the JSON Lines reader
 * (include/quiver/jsonl.h). Invariant defended: no text makes the reader
 * crash, hang, leak or read out of bounds (deep nesting included); every
 * input is either read into batches that validate at the full level and
 * render as JSON rows, or refused with a status and a message. Byte 0
 * picks a tiny block size (several blocks, unified across) and the thread
 * count; the rest is the text. The streaming reader must give the same
 * rows when it succeeds (fuzz_text_stream.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text_stream.h"
#include "quiver/jsonl.h"
#include "quiver/print.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  qv_jsonl_read_options o;
  memset(&o, 0, sizeof o);
  o.block_size = (data[0] & 1) ? 16 : 0;
  o.threads = (data[0] & 2) ? 2 : 1;
  qv_read_result res;
  qv_error err;
  if (qv_jsonl_read_buffer(data + 1, (int64_t)size - 1, "fuzz.jsonl", &o, &res, &err) != QV_OK) {
    if (err.message[0] == '\0') abort();
    fz_stream_check(data + 1, size - 1, false, NULL, &o, NULL, false);
    return 0;
  }
  fz_stream_check(data + 1, size - 1, false, NULL, &o, &res, false);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  for (int64_t i = 0; i < res.n_batches; i++) {
    if (qv_array_validate(res.batches[i], QV_VALIDATE_FULL, "batch", &err) != QV_OK) abort();
    for (int64_t r = 0; r < res.batches[i]->length; r++) {
      qv_strbuf_clear(&sb);
      if (qv_format_row_json(res.batches[i], r, &sb, &err) != QV_OK) abort();
    }
  }
  qv_strbuf_reset(&sb);
  qv_read_result_reset(&res);
  return 0;
}
