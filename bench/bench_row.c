/*
 * bench_row.c [ROWS...] — row-table throughput (issue 5): encode, decode,
 * compare (column keys vs rows) and hash (rows and columns, 64-bit) for
 * int64, int32+int32, string and mixed (int64, int32, string, bool) keys,
 * each next to a memcpy of the same number of bytes (the encoded rows'
 * size) in the same run, at the scalar and the AVX2 level. Prints one line
 * per measurement: rows/s, GB/s (encoded bytes per second) and the ratio
 * to memcpy's GB/s. Best of 5 runs, in thread CPU time (the machine is
 * shared: wall time measures the other processes). Not part of the tests.
 * Default sizes: 1M and 10M rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "quiver/row.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static qv_buffer *buf(int64_t size) {
  qv_buffer *b = NULL;
  if (qv_buffer_alloc(size, &b, NULL) != QV_OK) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return b;
}

static qv_array *fixed_col(qv_type_id id, int w, int64_t n) {
  qv_type *t = qv_type_new(id);
  qv_array *a = qv_array_new(t, 2, 0);
  qv_type_unref(t);
  a->length = n;
  a->null_count = 0;
  a->buffers[1] = buf(id == QV_BOOL ? (n + 7) / 8 : n * w);
  uint8_t *d = a->buffers[1]->data;
  int64_t bytes = id == QV_BOOL ? (n + 7) / 8 : n * w;
  for (int64_t i = 0; i < bytes; i += 8) {
    uint64_t v = rnd();
    memcpy(d + i, &v, (size_t)(bytes - i < 8 ? bytes - i : 8));
  }
  return a;
}

static qv_array *string_col(int64_t n) {
  qv_type *t = qv_type_new(QV_STRING);
  qv_array *a = qv_array_new(t, 3, 0);
  qv_type_unref(t);
  a->length = n;
  a->null_count = 0;
  a->buffers[1] = buf((n + 1) * 4);
  int32_t *o = (int32_t *)(void *)a->buffers[1]->data;
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    o[i] = (int32_t)total;
    total += 4 + (int64_t)(rnd() % 13); /* 4..16 bytes, like short names */
  }
  o[n] = (int32_t)total;
  a->buffers[2] = buf(total);
  for (int64_t i = 0; i < total; i++) a->buffers[2]->data[i] = (uint8_t)('a' + rnd() % 26);
  return a;
}

typedef struct keyset {
  const char *name;
  int nc;
  qv_array *cols[4];
} keyset;

/* A benchmark step that fails ends the run with its message. */
static void ok(qv_status st, const qv_error *err) {
  if (st == QV_OK) return;
  fprintf(stderr, "bench_row: %s\n", err->message);
  exit(1);
}

#define REPS 5

static double best_of(double t[REPS]) {
  double b = t[0];
  for (int i = 1; i < REPS; i++)
    if (t[i] < b) b = t[i];
  return b;
}

static void report(const char *keys, int64_t n, const char *level, const char *op, double secs,
                   double bytes, double memcpy_gbs) {
  double gbs = bytes / secs / 1e9;
  printf("%-14s %9lld rows  %-6s %-12s %8.1f Mrows/s %7.2f GB/s  %5.0f%% of memcpy\n", keys,
         (long long)n, level, op, n / secs / 1e6, gbs, 100.0 * gbs / memcpy_gbs);
  fflush(stdout);
}

static void bench(keyset *ks, int64_t n) {
  qv_type *types[4];
  for (int i = 0; i < ks->nc; i++) types[i] = ks->cols[i]->type;
  qv_row_metadata md;
  qv_error err;
  if (qv_row_metadata_from_types(&md, types, ks->nc, 8, 8, &err) != QV_OK) {
    fprintf(stderr, "%s\n", err.message);
    exit(1);
  }
  qv_row_table t;
  ok(qv_row_table_init(&t, &md, &err), &err);
  if (qv_row_encode(&t, ks->cols, NULL, n, &err) != QV_OK) {
    fprintf(stderr, "%s\n", err.message);
    exit(1);
  }
  double bytes =
      md.is_fixed_length ? (double)n * md.fixed_length : (double)qv_row_table_offsets(&t)[n];
  /* memcpy of the same bytes, both sides touched beforehand. */
  size_t nb = (size_t)bytes;
  uint8_t *src = malloc(nb), *dst = malloc(nb);
  memset(src, 1, nb);
  memset(dst, 2, nb);
  double ts[REPS];
  for (int r = 0; r < REPS; r++) {
    double t0 = cpu_now();
    memcpy(dst, src, nb);
    ts[r] = cpu_now() - t0;
  }
  double memcpy_gbs = bytes / best_of(ts) / 1e9;
  printf("%-14s %9lld rows  memcpy of %.0f MB: %.2f GB/s (%d bytes/row fixed part)\n", ks->name,
         (long long)n, bytes / 1e6, memcpy_gbs, md.fixed_length);
  free(src);
  free(dst);

  int64_t *ids = malloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) ids[i] = i;
  uint8_t *match = malloc((size_t)n / 8 + 1);
  uint64_t *h = malloc(sizeof(uint64_t) * (size_t)n);
  qv_row_simd levels[2] = {QV_ROW_SIMD_SCALAR, QV_ROW_SIMD_AVX2};
  for (int l = 0; l < 2; l++) {
    if (qv_row_set_simd_level(levels[l]) != levels[l]) continue;
    const char *lv = l ? "avx2" : "scalar";
    for (int r = 0; r < REPS; r++) {
      double t0 = cpu_now();
      ok(qv_row_encode(&t, ks->cols, NULL, n, &err), &err);
      ts[r] = cpu_now() - t0;
    }
    report(ks->name, n, lv, "encode", best_of(ts), bytes, memcpy_gbs);
    for (int r = 0; r < REPS; r++) {
      qv_array *out[4];
      double t0 = cpu_now();
      ok(qv_row_decode(&t, 0, n, types, NULL, out, &err), &err);
      ts[r] = cpu_now() - t0;
      for (int i = 0; i < ks->nc; i++) qv_array_unref(out[i]);
    }
    report(ks->name, n, lv, "decode", best_of(ts), bytes, memcpy_gbs);
    for (int r = 0; r < REPS; r++) {
      double t0 = cpu_now();
      ok(qv_row_compare_columns(&t, ks->cols, NULL, ids, n, true, match, NULL, NULL, &err), &err);
      ts[r] = cpu_now() - t0;
    }
    report(ks->name, n, lv, "compare", best_of(ts), bytes, memcpy_gbs);
    for (int r = 0; r < REPS; r++) {
      double t0 = cpu_now();
      ok(qv_row_hash_rows64(&t, NULL, n, h, &err), &err);
      ts[r] = cpu_now() - t0;
    }
    report(ks->name, n, lv, "hash rows", best_of(ts), bytes, memcpy_gbs);
    for (int r = 0; r < REPS; r++) {
      double t0 = cpu_now();
      ok(qv_row_hash_columns64(&md, ks->cols, NULL, n, h, &err), &err);
      ts[r] = cpu_now() - t0;
    }
    report(ks->name, n, lv, "hash columns", best_of(ts), bytes, memcpy_gbs);
  }
  qv_row_set_simd_level(QV_ROW_SIMD_AUTO);
  free(ids);
  free(match);
  free(h);
  qv_row_table_reset(&t);
  qv_row_metadata_reset(&md);
}

int main(int argc, char **argv) {
  int64_t sizes[8] = {1000000, 10000000};
  int nsizes = 2;
  if (argc > 1) {
    nsizes = 0;
    for (int i = 1; i < argc && nsizes < 8; i++) sizes[nsizes++] = atoll(argv[i]);
  }
  for (int s = 0; s < nsizes; s++) {
    int64_t n = sizes[s];
    keyset sets[4] = {
        {"int64", 1, {fixed_col(QV_INT64, 8, n)}},
        {"int32+int32", 2, {fixed_col(QV_INT32, 4, n), fixed_col(QV_INT32, 4, n)}},
        {"string", 1, {string_col(n)}},
        {"mixed",
         4,
         {fixed_col(QV_INT64, 8, n), fixed_col(QV_INT32, 4, n), string_col(n),
          fixed_col(QV_BOOL, 0, n)}},
    };
    for (int k = 0; k < 4; k++) {
      bench(&sets[k], n);
      for (int i = 0; i < sets[k].nc; i++) qv_array_unref(sets[k].cols[i]);
    }
  }
  return 0;
}
