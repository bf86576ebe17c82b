/*
 * fuzz_thrift.c — libFuzzer target for the Parquet metadata decoders on
 * the bounded Thrift compact reader: byte 0 picks FileMetaData or
 * PageHeader, the rest is decoded. Invariant defended: no input reads
 * past its end, recurses without bound, leaks or crashes; decoding either
 * succeeds (and the result is freed) or fails with a status.
 */
#include <stdint.h>
#include <string.h>

#include "formats/parquet_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  qv_error err;
  if (data[0] & 1) {
    qv_pq_page_header h;
    int64_t hl = 0;
    if (qv_pq_decode_page_header(data + 1, (int64_t)size - 1, &h, &hl, &err) == QV_OK &&
        (hl < 1 || hl > (int64_t)size - 1))
      __builtin_trap();
  } else {
    qv_pq_file_meta m;
    if (qv_pq_decode_file_meta(data + 1, (int64_t)size - 1, &m, &err) == QV_OK)
      qv_pq_file_meta_reset(&m);
  }
  return 0;
}
