/*
 * fuzz_index_cache.c — libFuzzer target for the stream index cache file
 * parser (qv_index_cache_parse, src/ipc/index_cache.c). The input is a
 * cache file; its key fields and first-message offset are taken from the
 * input itself and its checksum is recomputed, so that mutations reach the
 * entry checks instead of stopping at the key or the checksum. Invariant
 * defended: no input crashes, leaks or allocates more than the input's own
 * size; every accepted input describes entries that tile [first, end)
 * inside the stream size without overlap, and encodes back to exactly the
 * input bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ipc/ipc_internal.h"

#define FUZZ_MAX_INPUT (1 << 20)

static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  uint8_t *p = malloc(size + 1);
  if (p == NULL) return 0;
  memcpy(p, data, size);
  qv_index_key key = {0, 0, 0, 0, 0};
  int64_t first = 0;
  if (size >= 80 + 8) {
    uint64_t h = XXH64(p, size - 8, 0);
    for (int i = 0; i < 8; i++) p[size - 8 + i] = (uint8_t)(h >> (8 * i));
    key.dev = get_u64(p + 8);
    key.ino = get_u64(p + 16);
    key.size = (int64_t)get_u64(p + 24);
    key.mtime_ns = (int64_t)get_u64(p + 32);
    key.content = get_u64(p + 40);
    first = (int64_t)get_u64(p + 48);
  }
  qv_index_msg *m = NULL;
  int64_t n = 0, end = 0;
  qv_compression comp;
  qv_error err;
  if (qv_index_cache_parse(p, (int64_t)size, &key, first, &m, &n, &end, &comp, &err) == QV_OK) {
    int64_t at = first;
    for (int64_t k = 0; k < n; k++) {
      if (m[k].offset != at || m[k].body_offset < m[k].offset || m[k].body_length < 0 ||
          m[k].body_offset + m[k].body_length > key.size) {
        fprintf(stderr, "accepted entry %lld does not tile the stream\n", (long long)k);
        abort();
      }
      at = m[k].body_offset + m[k].body_length;
    }
    if (at != end || end > key.size) abort();
    uint8_t *again = NULL;
    int64_t len = 0;
    if (qv_index_cache_encode(&key, first, end, comp, m, n, &again, &len, &err) == QV_OK) {
      if (len != (int64_t)size || memcmp(again, p, size) != 0) {
        fprintf(stderr, "an accepted cache file does not encode back to itself\n");
        abort();
      }
      free(again);
    }
  }
  free(m);
  free(p);
  return 0;
}
