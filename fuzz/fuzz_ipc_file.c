/*
 * fuzz_ipc_file.c — libFuzzer target for the IPC file-format reader
 * (magic, footer, blocks). Invariant defended: no input makes the reader
 * crash, hang, leak or allocate without bound; every input either decodes
 * (every batch valid at FULL validation) or fails with a status.
 * Inputs that do not start with the ARROW1 magic get it (and the trailing
 * magic) added, so that the footer path is always the one exercised.
 */
#include <stdint.h>
#include <string.h>

#include "quiver/ipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  qv_read_options opts = {QV_VALIDATE_FULL, true, (int64_t)64 << 20};
  qv_error err;
  bool wrap = size < 6 || memcmp(data, "ARROW1", 6) != 0;
  int64_t n = (int64_t)size + (wrap ? 14 : 0);
  qv_buffer *buf = NULL;
  if (qv_buffer_alloc(n, &buf, &err) != QV_OK) return 0;
  if (wrap) {
    memcpy(buf->data, "ARROW1\0\0", 8);
    if (size) memcpy(buf->data + 8, data, size);
    memcpy(buf->data + 8 + size, "ARROW1", 6);
  } else if (size) {
    memcpy(buf->data, data, size);
  }
  qv_reader *r = NULL;
  if (qv_reader_open_buffer(buf, &opts, &r, &err) == QV_OK) {
    for (int64_t i = 0; i < qv_reader_num_batches(r); i++) {
      qv_array *b = NULL;
      if (qv_reader_batch(r, i, &b, &err) == QV_OK) qv_array_unref(b);
    }
    qv_reader_close(r);
  }
  qv_buffer_unref(buf);
  return 0;
}
