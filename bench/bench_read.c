/*
 * bench_read.c PATH N SEED — quiver side of the open/random-row benchmark
 * (issue 2): open a large IPC stream, then read N random rows (splitmix64
 * from SEED, same sequence as bench_read.py) one at a time, each through
 * its batch (located by binary search over the batch row prefix sums) with
 * the reader's default validation. Prints one JSON line with open time,
 * rows time and peak anonymous RSS growth (sampled from /proc/self/status).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "quiver/ipc.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: bench_read PATH N SEED\n");
    return 2;
  }
  int64_t n = atoll(argv[2]);
  uint64_t seed = strtoull(argv[3], NULL, 10);
  long base = anon_kb();
  qv_error err;
  qv_reader *r;
  double t0 = now();
  if (qv_reader_open_path(argv[1], NULL, &r, &err) != QV_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  double t1 = now();
  long peak = anon_kb();
  int64_t nb = qv_reader_num_batches(r);
  int64_t *prefix = malloc(sizeof *prefix * (size_t)(nb + 1));
  prefix[0] = 0;
  for (int64_t i = 0; i < nb; i++) prefix[i + 1] = prefix[i] + qv_reader_batch_rows(r, i);
  int64_t total = prefix[nb];
  uint64_t x = seed;
  int64_t checksum = 0;
  double t2 = now();
  for (int64_t k = 0; k < n; k++) {
    int64_t row = (int64_t)(splitmix(&x) % (uint64_t)total);
    int64_t lo = 0, hi = nb; /* largest b with prefix[b] <= row */
    while (hi - lo > 1) {
      int64_t mid = (lo + hi) / 2;
      if (prefix[mid] <= row) lo = mid;
      else hi = mid;
    }
    qv_array *b;
    if (qv_reader_batch(r, lo, &b, &err) != QV_OK) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
    int64_t i = row - prefix[lo];
    const qv_array *id = b->children[0], *s = b->children[2];
    int64_t v = ((const int64_t *)id->buffers[1]->data)[id->offset + i];
    const int32_t *off = (const int32_t *)s->buffers[1]->data + s->offset;
    checksum += v + (off[i + 1] - off[i]) * 0;
    if (k < 5 && v != row) {
      fprintf(stderr, "row %lld has id %lld\n", (long long)row, (long long)v);
      return 1;
    }
    qv_array_unref(b);
  }
  double t3 = now();
  long a = anon_kb();
  if (a > peak) peak = a;
  printf(
      "{\"tool\": \"quiver\", \"open_s\": %.6f, \"rows_s\": %.6f, \"peak_anon_mb\": %.2f, "
      "\"batches\": %lld, \"rows\": %lld, \"checksum\": %lld}\n",
      t1 - t0, t3 - t2, (double)(peak - base) / 1024.0, (long long)nb, (long long)total,
      (long long)checksum);
  free(prefix);
  qv_reader_close(r);
  return 0;
}
