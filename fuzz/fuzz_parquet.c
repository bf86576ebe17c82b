/*
 * fuzz_parquet.c — libFuzzer target for the whole Parquet reader over a
 * file in memory: magic, footer, schema tree, every row group's pages
 * (headers, CRCs, decompression, levels, every value encoding) and the
 * assembly of nested arrays. Invariant defended: no input makes the
 * reader crash, hang, leak or allocate past the bound given; every input
 * either reads (every array valid at FULL validation) or fails with a
 * status. Inputs without the PAR1 magic get it at both ends.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  qv_error err;
  bool wrap = size < 8 || memcmp(data, "PAR1", 4) != 0;
  int64_t n = (int64_t)size + (wrap ? 8 : 0);
  qv_buffer *buf = NULL;
  if (qv_buffer_alloc(n, &buf, &err) != QV_OK) return 0;
  if (wrap) {
    memcpy(buf->data, "PAR1", 4);
    if (size) memcpy(buf->data + 4, data, size);
    memcpy(buf->data + 4 + size, "PAR1", 4);
  } else if (size) {
    memcpy(buf->data, data, size);
  }
  qv_parquet_file *f = NULL;
  if (qv_parquet_open_buffer(buf, "fuzz", &f, &err) == QV_OK) {
    qv_parquet_read_options o;
    memset(&o, 0, sizeof o);
    o.threads = 1;
    o.max_alloc = (int64_t)32 << 20;
    qv_array **batches = NULL;
    int64_t nb = 0;
    if (qv_parquet_read(f, &o, &batches, &nb, NULL, &err) == QV_OK) {
      for (int64_t i = 0; i < nb; i++) {
        if (qv_array_validate(batches[i], QV_VALIDATE_FULL, "fuzz", &err) != QV_OK) abort();
        qv_array_unref(batches[i]);
      }
      free(batches);
    }
    qv_parquet_column_info ci;
    for (int32_t g = 0; g < qv_parquet_num_row_groups(f); g++)
      for (int32_t c = 0; c < qv_parquet_num_leaf_columns(f); c++)
        if (qv_parquet_column_info_get(f, g, c, &ci, &err) != QV_OK) abort();
    qv_parquet_close(f);
  }
  qv_buffer_unref(buf);
  return 0;
}
