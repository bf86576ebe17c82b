/*
 * bench_dataset.c DIR — quiver side of the dataset-layer benchmark (issue
 * 6) on the files bench_dataset.py generates (DIR/mapping-500k.arrow,
 * DIR/iter-50k.arrow), through the C API (quiver/dataset.h), mirroring
 * datasets' own benchmarks operation for operation:
 *  - getitem: qv_dataset_row of the first and the last row, qv_dataset_slice
 *    of 1,024 contiguous rows, qv_dataset_take of 1,024 random rows (mean
 *    of repeated calls);
 *  - indices mapping on the 500k rows, file-backed as datasets' are (cache
 *    files written beside the data, removed before each run): select of
 *    every other row, sort by numbers, shuffle(42), train_test_split(0.1,
 *    seed 42), 10 contiguous shards; best of 3;
 *  - map / filter: an identity batched map (the callback returns its input
 *    batch, all columns rewritten to the cache file; and again with
 *    keep_in_memory, where the output shares the input's buffers), filter
 *    keeping every
 *    row (a C predicate, as datasets' default function), filter
 *    `numbers > 0.5` (an expression);
 *  - iterating the 50k rows, before and after shuffle(42): every row with
 *    qv_dataset_row, and qv_dataset_iter in batches of 1, 10, 100 and
 *    1,000, each batch consumed (every float of `list` and `numbers` summed)
 *    so that both orders read the same bytes.
 * Prints one JSON line (times in seconds) with the `numbers` of the first
 * rows of each result, which must equal datasets'.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "quiver/dataset.h"
#include "quiver/random.h"

static void die(const char *what, const qv_error *err) {
  fprintf(stderr, "bench_dataset: %s: %s\n", what, err->message);
  exit(1);
}

static qv_error E;
#define CHECK(expr, what)                                                                          \
  do {                                                                                             \
    if ((expr) != QV_OK) die(what, &E);                                                            \
  } while (0)

static qv_dataset *base; /* the 500k-row dataset, for cache cleanup */

static void clean(void) {
  int64_t removed = 0;
  CHECK(qv_dataset_cleanup_cache_files(base, &removed, &E), "cleanup");
}

/* numbers of rows 0..k-1 (float32 column `numbers`) as JSON text. */
static void head(qv_dataset *ds, int k, char *out, size_t cap) {
  int64_t rows[8];
  if (k > qv_dataset_num_rows(ds)) k = (int)qv_dataset_num_rows(ds);
  for (int i = 0; i < k; i++) rows[i] = i;
  qv_array *b = NULL;
  CHECK(qv_dataset_take(ds, rows, k, &b, &E), "take");
  int c = qv_dataset_column_index(ds, "numbers");
  const qv_array *col = b->children[c];
  size_t n = 0;
  for (int i = 0; i < k; i++)
    n += (size_t)snprintf(out + n, cap - n, "%s%.9g", n ? ", " : "",
                          (double)((const float *)col->buffers[1]->data)[col->offset + i]);
  qv_array_unref(b);
}

/* Sum of every float of a batch (list<float32> and float32 columns). */
static double consume(const qv_array *b) {
  double s = 0;
  for (int32_t c = 0; c < b->n_children; c++) {
    const qv_array *a = b->children[c];
    if (a->type->id == QV_FLOAT) {
      const float *v = (const float *)a->buffers[1]->data + a->offset;
      for (int64_t i = 0; i < a->length; i++) s += v[i];
    } else if (a->type->id == QV_LIST) {
      const int32_t *off = (const int32_t *)a->buffers[1]->data + a->offset;
      const qv_array *ch = a->children[0];
      const float *v = (const float *)ch->buffers[1]->data + ch->offset;
      for (int32_t k = off[0]; k < off[a->length]; k++) s += v[k];
    }
  }
  return s;
}

static double iterate(qv_dataset *ds, int64_t bs, double *sum) {
  double t0 = now();
  qv_dataset_iter *it = NULL;
  CHECK(qv_dataset_iter_new(ds, bs, false, &it, &E), "iter");
  double s = 0;
  for (;;) {
    qv_array *b = NULL;
    CHECK(qv_dataset_iter_next(it, &b, NULL, &E), "iter next");
    if (b == NULL) break;
    s += consume(b);
    qv_array_unref(b);
  }
  qv_dataset_iter_free(it);
  *sum = s;
  return now() - t0;
}

static double read_rows(qv_dataset *ds, double *sum) {
  double t0 = now(), s = 0;
  int64_t n = qv_dataset_num_rows(ds);
  for (int64_t i = 0; i < n; i++) {
    qv_array *r = NULL;
    CHECK(qv_dataset_row(ds, i, &r, &E), "row");
    s += consume(r);
    qv_array_unref(r);
  }
  *sum = s;
  return now() - t0;
}

static qv_status identity(void *ctx, const qv_array *batch, int64_t first_row, int rank,
                          qv_array **out, qv_error *err) {
  (void)ctx;
  (void)first_row;
  (void)rank;
  (void)err;
  *out = qv_array_ref((qv_array *)batch);
  return QV_OK;
}

static qv_status keep_all(void *ctx, const qv_array *batch, int64_t first_row, uint8_t *keep,
                          qv_error *err) {
  (void)ctx;
  (void)first_row;
  (void)err;
  memset(keep, 0xff, (size_t)(batch->length / 8));
  for (int64_t i = batch->length / 8 * 8; i < batch->length; i++) qv_bit_set(keep, i);
  return QV_OK;
}

/* Best of `reps` runs of an operation producing one dataset; the last
 * result's head goes to `check`. */
#define BEST(name, reps, expr, result)                                                             \
  do {                                                                                             \
    double best_ = INFINITY, cpu_ = INFINITY;                                                      \
    for (int r_ = 0; r_ < (reps); r_++) {                                                          \
      clean();                                                                                     \
      qv_dataset_unref(result);                                                                    \
      result = NULL;                                                                               \
      double t0_ = now(), c0_ = process_cpu_now();                                                 \
      CHECK(expr, name);                                                                           \
      double t_ = now() - t0_, c_ = process_cpu_now() - c0_;                                       \
      if (t_ < best_) best_ = t_;                                                                  \
      if (c_ < cpu_) cpu_ = c_;                                                                    \
    }                                                                                              \
    printf("\"%s\": %.9f, \"%s_cpu\": %.9f, ", name, best_, name, cpu_);                           \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: bench_dataset DIR\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/mapping-500k.arrow", argv[1]);
  CHECK(qv_dataset_open(path, NULL, &base, &E), "open");
  qv_dataset *ds = base;
  int64_t n = qv_dataset_num_rows(ds);
  clean();
  printf("{");
  /* getitem */
  double t0 = now();
  for (int i = 0; i < 2000; i++) {
    qv_array *r = NULL;
    CHECK(qv_dataset_row(ds, 0, &r, &E), "row");
    qv_array_unref(r);
  }
  printf("\"getitem_first\": %.9f, ", (now() - t0) / 2000);
  t0 = now();
  for (int i = 0; i < 2000; i++) {
    qv_array *r = NULL;
    CHECK(qv_dataset_row(ds, n - 1, &r, &E), "row");
    qv_array_unref(r);
  }
  printf("\"getitem_last\": %.9f, ", (now() - t0) / 2000);
  t0 = now();
  for (int i = 0; i < 50; i++) {
    qv_table *s = NULL;
    CHECK(qv_dataset_slice(ds, n / 2, 1024, &s, &E), "slice");
    qv_table_unref(s);
  }
  printf("\"getitem_1024_contiguous\": %.9f, ", (now() - t0) / 50);
  int64_t rand_rows[1024];
  qv_rng rng;
  qv_rng_init(&rng, 42);
  for (int i = 0; i < 1024; i++) rand_rows[i] = (int64_t)qv_rng_interval(&rng, (uint64_t)n - 1);
  t0 = now();
  for (int i = 0; i < 50; i++) {
    qv_array *b = NULL;
    CHECK(qv_dataset_take(ds, rand_rows, 1024, &b, &E), "take");
    qv_array_unref(b);
  }
  printf("\"getitem_1024_random\": %.9f, ", (now() - t0) / 50);

  /* indices mapping */
  char checks[8192];
  size_t cn = 0;
  char h[512], h2[512];
  qv_dataset *res = NULL;
  int64_t *every_other = malloc(sizeof(int64_t) * (size_t)(n / 2 + 1));
  for (int64_t i = 0; i < (n + 1) / 2; i++) every_other[i] = 2 * i;
  BEST("select", 3, qv_dataset_select(ds, every_other, (n + 1) / 2, NULL, &res, &E), res);
  head(res, 5, h, sizeof h);
  cn += (size_t)snprintf(checks + cn, sizeof checks - cn, "\"select\": [%s]", h);
  const char *by[] = {"numbers"};
  BEST("sort", 3, qv_dataset_sort(ds, by, 1, NULL, QV_NULLS_AT_END, NULL, &res, &E), res);
  head(res, 5, h, sizeof h);
  cn += (size_t)snprintf(checks + cn, sizeof checks - cn, ", \"sort\": [%s]", h);
  BEST("shuffle", 3, qv_dataset_shuffle(ds, 42, NULL, &res, &E), res);
  head(res, 5, h, sizeof h);
  cn += (size_t)snprintf(checks + cn, sizeof checks - cn, ", \"shuffle\": [%s]", h);
  qv_dataset *test = NULL;
  qv_split_size tsz = {QV_SIZE_FRACTION, 0.1, 0}, none = {QV_SIZE_NONE, 0, 0};
  {
    double best = INFINITY;
    for (int r = 0; r < 3; r++) {
      clean();
      qv_dataset_unref(res);
      qv_dataset_unref(test);
      t0 = now();
      CHECK(qv_dataset_train_test_split(ds, tsz, none, true, 42, NULL, &res, &test, &E), "split");
      double t = now() - t0;
      if (t < best) best = t;
    }
    printf("\"train_test_split\": %.9f, ", best);
  }
  head(res, 5, h, sizeof h);
  head(test, 5, h2, sizeof h2);
  cn +=
      (size_t)snprintf(checks + cn, sizeof checks - cn, ", \"train_test_split\": [%s, %s]", h, h2);
  qv_dataset_unref(test);
  {
    double best = INFINITY;
    qv_dataset *shards[10] = {NULL};
    for (int r = 0; r < 3; r++) {
      clean();
      for (int i = 0; i < 10; i++) qv_dataset_unref(shards[i]);
      t0 = now();
      for (int i = 0; i < 10; i++)
        CHECK(qv_dataset_shard(ds, 10, i, true, NULL, &shards[i], &E), "shard");
      double t = now() - t0;
      if (t < best) best = t;
    }
    printf("\"shard\": %.9f, ", best);
    head(shards[9], 5, h, sizeof h);
    cn += (size_t)snprintf(checks + cn, sizeof checks - cn, ", \"shard\": [%s]", h);
    for (int i = 0; i < 10; i++) qv_dataset_unref(shards[i]);
  }

  /* map / filter */
  qv_map_fn fn = {"identity", "1", identity, NULL, NULL};
  qv_map_options mo;
  memset(&mo, 0, sizeof mo);
  mo.batched = true;
  BEST("map_identity_batched", 1, qv_dataset_map(ds, &fn, &mo, NULL, &res, &E), res);
  head(res, 5, h, sizeof h);
  cn += (size_t)snprintf(checks + cn, sizeof checks - cn, ", \"map_identity_batched\": [%s]", h);
  {
    qv_dataset_options mem;
    memset(&mem, 0, sizeof mem);
    mem.keep_in_memory = true;
    BEST("map_identity_batched_in_memory", 1, qv_dataset_map(ds, &fn, &mo, &mem, &res, &E), res);
  }
  qv_filter_fn all = {"keep_all", "1", keep_all, NULL, NULL};
  BEST("filter_all", 1, qv_dataset_filter_fn(ds, &all, 0, NULL, &res, &E), res);
  cn += (size_t)snprintf(checks + cn, sizeof checks - cn, ", \"filter_all\": [%lld]",
                         (long long)qv_dataset_num_rows(res));
  BEST("filter_numbers", 1, qv_dataset_filter(ds, "numbers > 0.5", NULL, &res, &E), res);
  head(res, 5, h, sizeof h);
  cn += (size_t)snprintf(checks + cn, sizeof checks - cn, ", \"filter_numbers\": [%lld, %s]",
                         (long long)qv_dataset_num_rows(res), h);
  qv_dataset_unref(res);
  res = NULL;
  clean();
  free(every_other);

  /* iterating */
  snprintf(path, sizeof path, "%s/iter-50k.arrow", argv[1]);
  qv_dataset *it = NULL, *sh = NULL;
  CHECK(qv_dataset_open(path, NULL, &it, &E), "open iter");
  qv_dataset_options mem;
  memset(&mem, 0, sizeof mem);
  mem.keep_in_memory = true;
  CHECK(qv_dataset_shuffle(it, 42, &mem, &sh, &E), "shuffle iter");
  head(sh, 5, h, sizeof h);
  cn += (size_t)snprintf(checks + cn, sizeof checks - cn, ", \"iter_shuffle\": [%s]", h);
  double sums[2][5];
  const int64_t bss[] = {1, 10, 100, 1000};
  /* warm: decode every batch of the file once (both orders read it) */
  double warm = 0;
  iterate(it, 1000, &warm);
  for (int pass = 0; pass < 2; pass++) {
    qv_dataset *d = pass ? sh : it;
    const char *label = pass ? "shuffled_" : "";
    printf("\"%sread_rows\": %.9f, ", label, read_rows(d, &sums[pass][0]));
    for (int k = 0; k < 4; k++) {
      double best = INFINITY, cpu = INFINITY;
      for (int r = 0; r < 3; r++) {
        double c0 = process_cpu_now();
        double t = iterate(d, bss[k], &sums[pass][k + 1]);
        double c = process_cpu_now() - c0;
        if (t < best) best = t;
        if (c < cpu) cpu = c;
      }
      printf("\"%siter_batch_%lld\": %.9f, \"%siter_batch_%lld_cpu\": %.9f, ", label,
             (long long)bss[k], best, label, (long long)bss[k], cpu);
    }
  }
  for (int k = 0; k < 5; k++)
    if (fabs(sums[0][k] - sums[1][k]) > 1e-6 * fabs(sums[0][k]) + 1e-3) {
      fprintf(stderr, "bench_dataset: shuffled iteration read other values (%f vs %f)\n",
              sums[0][k], sums[1][k]);
      return 1;
    }
  printf("\"rows\": %lld, \"iter_rows\": %lld, \"checks\": {%s}}\n", (long long)n,
         (long long)qv_dataset_num_rows(it), checks);
  qv_dataset_unref(sh);
  qv_dataset_unref(it);
  qv_dataset_unref(base);
  return 0;
}
