/*
 * fuzz_csv.c — libFuzzer target for the CSV reader (include/quiver/csv.h).
 * Invariant defended: no text makes the reader crash, hang, leak or read
 * out of bounds; every input is either read into batches that validate
 * at the full level and render as JSON rows, or refused with a status and
 * a message. Byte 0 picks the options (delimiter, quoting, escape,
 * header, pandas types, a tiny block size so that the speculative block
 * starts are exercised, one or two threads); the rest is the text. The
 * streaming reader must agree with it (fuzz_text_stream.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text_stream.h"
#include "quiver/csv.h"
#include "quiver/print.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t sel = data[0];
  qv_csv_read_options o;
  memset(&o, 0, sizeof o);
  o.delimiter = (sel & 3) == 1 ? ';' : (sel & 3) == 2 ? '\t' : ',';
  o.no_quoting = (sel & 4) != 0;
  o.escape = (sel & 8) ? '\\' : 0;
  o.no_header = (sel & 16) != 0;
  o.pandas_types = (sel & 32) != 0;
  o.block_size = (sel & 64) ? 16 : 0;
  o.threads = (sel & 128) ? 2 : 1;
  qv_read_result res;
  qv_error err;
  if (qv_csv_read_buffer(data + 1, (int64_t)size - 1, "fuzz.csv", &o, &res, &err) != QV_OK) {
    if (err.message[0] == '\0') abort();
    fz_stream_check(data + 1, size - 1, true, &o, NULL, NULL, true);
    return 0;
  }
  fz_stream_check(data + 1, size - 1, true, &o, NULL, &res, true);
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
