/*
 * fuzz_parquet_page.c — libFuzzer target for the Parquet page decoders one
 * encoding at a time, straight on fuzz bytes (no file, footer or page
 * header around them), through parquet_page_internal.h. Layout of an
 * input:
 *   byte 0: bits 0-2 the values' encoding (PLAIN, RLE, PLAIN_DICTIONARY,
 *           RLE_DICTIONARY, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY,
 *           DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT), bits 3-5 the physical
 *           type, bits 6-7 the maximum definition level (so the level bit
 *           width);
 *   byte 1: bits 0-1 the maximum repetition level, bit 2 a DATA_PAGE_V2,
 *           bits 3/4 BIT_PACKED (not RLE) definition/repetition levels in
 *           a v1 page, bits 5-7 a FIXED_LEN_BYTE_ARRAY length (1..7, 16);
 *   bytes 2-3: the page's value count (little-endian);
 *   bytes 4-5: bytes of a PLAIN dictionary page (dictionary encodings);
 *   bytes 6-7: values in that dictionary page;
 *   bytes 8/9: v2 repetition / definition level bytes;
 *   then the dictionary page, then the data page.
 * Invariant defended: no input reads out of bounds, leaks, crashes or
 * allocates past the bound; a decode either fails with a status or yields
 * at most as many values as levels.
 */
#include <stdint.h>
#include <string.h>

#include "formats/parquet_page_internal.h"

static const int32_t encodings[8] = {QV_PQ_PLAIN,
                                     QV_PQ_RLE,
                                     QV_PQ_PLAIN_DICTIONARY,
                                     QV_PQ_RLE_DICTIONARY,
                                     QV_PQ_DELTA_BINARY_PACKED,
                                     QV_PQ_DELTA_LENGTH_BYTE_ARRAY,
                                     QV_PQ_DELTA_BYTE_ARRAY,
                                     QV_PQ_BYTE_STREAM_SPLIT};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 10) return 0;
  qv_pq_page_probe pr;
  memset(&pr, 0, sizeof pr);
  pr.encoding = encodings[data[0] & 7];
  pr.physical = (data[0] >> 3) & 7;
  pr.max_def = (int16_t)(data[0] >> 6);
  pr.max_rep = (int16_t)(data[1] & 3);
  pr.v2 = (data[1] >> 2) & 1;
  pr.def_encoding = (data[1] >> 3) & 1 ? QV_PQ_BIT_PACKED : QV_PQ_RLE;
  pr.rep_encoding = (data[1] >> 4) & 1 ? QV_PQ_BIT_PACKED : QV_PQ_RLE;
  int tl = (data[1] >> 5) & 7;
  pr.type_length = tl == 0 ? 16 : tl;
  pr.num_values = data[2] | data[3] << 8;
  int64_t dict_len = data[4] | data[5] << 8;
  pr.dict_count = data[6] | data[7] << 8;
  pr.rep_len = data[8];
  pr.def_len = data[9];
  const uint8_t *p = data + 10;
  int64_t left = (int64_t)size - 10;
  if (pr.encoding == QV_PQ_PLAIN_DICTIONARY || pr.encoding == QV_PQ_RLE_DICTIONARY) {
    if (dict_len > left) dict_len = left;
    pr.dict = p;
    pr.dict_len = dict_len;
    p += dict_len;
    left -= dict_len;
  }
  pr.page = p;
  pr.page_len = left;
  pr.max_alloc = (int64_t)64 << 20;
  qv_error err;
  int64_t values = -1, levels = -1;
  if (qv_pq_page_probe_decode(&pr, &values, &levels, &err) == QV_OK &&
      (values < 0 || values > pr.num_values || levels != pr.num_values))
    __builtin_trap();
  return 0;
}
