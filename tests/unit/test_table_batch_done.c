/*
 * test_table_batch_done.c — qv_table_batch_done (quiver/table.h), table
 * layer: a mapped table's batch read, released and read again. The pages of
 * the released range must leave the process (checked in /proc/self/pagemap:
 * mincore cannot say, as for a file the test owns it reports the page
 * cache, which keeps the pages), the values read again must be the values
 * written, and in-memory tables must be left alone.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "quiver/compute.h"
#include "table_test_util.h"

#define ROWS_PER_BATCH ((int64_t)1 << 18) /* 2 MiB of int64 a batch */
#define BATCHES 3

static int64_t value_at(int64_t row) { return (int64_t)((uint64_t)row * 0x9E3779B97F4A7C15u >> 7); }

/* Pages of [p, p + n) (whole pages inside it) present in this process. */
static int64_t present_pages(const void *p, int64_t n, int64_t *total) {
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
  uintptr_t hi = ((uintptr_t)p + (uintptr_t)n) & ~((uintptr_t)page - 1);
  int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) {
    perror("/proc/self/pagemap");
    abort();
  }
  int64_t present = 0;
  *total = 0;
  for (uintptr_t a = lo; a < hi; a += (uintptr_t)page) {
    uint64_t e = 0;
    if (pread(fd, &e, sizeof e, (off_t)(a / (uintptr_t)page * sizeof e)) != sizeof e) abort();
    present += (int64_t)(e >> 63);
    (*total)++;
  }
  close(fd);
  return present;
}

/* Column v (value_at), and with `with_key` a double column k of 3 values
 * (few groups, a hashed key: the group-by's pre-aggregation path). */
static qv_table *make_table_k(bool with_key) {
  qv_type *st = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(st, "v", false, qv_type_new(QV_INT64), NULL, NULL) == QV_OK);
  if (with_key)
    QV_CHECK(qv_type_add_child(st, "k", false, qv_type_new(QV_DOUBLE), NULL, NULL) == QV_OK);
  qv_schema *s = qv_schema_new(st);
  qv_array *batches[BATCHES];
  for (int b = 0; b < BATCHES; b++) {
    qv_array *v = qv_array_new(st->children[0].type, 2, 0);
    v->length = ROWS_PER_BATCH;
    v->null_count = 0;
    RT_OK(qv_buffer_alloc(ROWS_PER_BATCH * 8, &v->buffers[1], &E));
    int64_t *d = (int64_t *)(void *)v->buffers[1]->data;
    for (int64_t i = 0; i < ROWS_PER_BATCH; i++) d[i] = value_at(b * ROWS_PER_BATCH + i);
    batches[b] = qv_array_new(st, 1, with_key ? 2 : 1);
    batches[b]->length = ROWS_PER_BATCH;
    batches[b]->null_count = 0;
    batches[b]->children[0] = v;
    if (with_key) {
      qv_array *k = qv_array_new(st->children[1].type, 2, 0);
      k->length = ROWS_PER_BATCH;
      k->null_count = 0;
      RT_OK(qv_buffer_alloc(ROWS_PER_BATCH * 8, &k->buffers[1], &E));
      double *kd = (double *)(void *)k->buffers[1]->data;
      for (int64_t i = 0; i < ROWS_PER_BATCH; i++) kd[i] = (double)((b * ROWS_PER_BATCH + i) % 3);
      batches[b]->children[1] = k;
    }
  }
  qv_table *t = NULL;
  RT_OK(qv_table_from_batches(s, batches, BATCHES, &t, &E));
  for (int b = 0; b < BATCHES; b++) qv_array_unref(batches[b]);
  qv_schema_unref(s);
  return t;
}

static qv_table *make_table(void) { return make_table_k(false); }

/* Every value of batch b as written; touches (faults in) all its pages. */
static bool batch_ok(qv_table *t, int64_t b, const qv_buffer **values) {
  qv_array *a = NULL;
  RT_OK(qv_table_batch(t, b, &a, &E));
  if (!a) return false;
  const qv_array *v = a->children[0];
  bool ok = v->length == ROWS_PER_BATCH;
  const int64_t *d = (const int64_t *)(const void *)v->buffers[1]->data + v->offset;
  for (int64_t i = 0; ok && i < v->length; i++) ok = d[i] == value_at(b * ROWS_PER_BATCH + i);
  *values = v->buffers[1];
  qv_array_unref(a); /* the table keeps the decoded batch */
  return ok;
}

static void test_mapped_release(void) {
  qv_table *mem = make_table();
  qv_table *m = rt_mapped(mem);
  QV_REQUIRE(qv_table_num_batches(m) == BATCHES);
  const qv_buffer *buf[BATCHES];
  for (int64_t b = 0; b < BATCHES; b++) QV_CHECK(batch_ok(m, b, &buf[b]));
  QV_REQUIRE(qv_buffer_is_mapped(buf[1]));
  int64_t total = 0;
  QV_CHECK_EQ_INT(present_pages(buf[1]->data, buf[1]->size, &total), total);
  QV_CHECK(total >= 500); /* 2 MiB of 4 KiB pages, less the partial ends */
  qv_table_batch_done(m, 1);
  QV_CHECK_EQ_INT(present_pages(buf[1]->data, buf[1]->size, &total), 0);
  /* the neighbours are untouched */
  int64_t t0 = 0, t2 = 0;
  QV_CHECK_EQ_INT(present_pages(buf[0]->data, buf[0]->size, &t0), t0);
  QV_CHECK_EQ_INT(present_pages(buf[2]->data, buf[2]->size, &t2), t2);
  /* read again: the same values, the pages back */
  const qv_buffer *again = NULL;
  QV_CHECK(batch_ok(m, 1, &again));
  QV_CHECK(again == buf[1]);
  QV_CHECK_EQ_INT(present_pages(buf[1]->data, buf[1]->size, &total), total);
  /* out of range and repeated calls are no-ops */
  qv_table_batch_done(m, -1);
  qv_table_batch_done(m, BATCHES);
  qv_table_batch_done(m, 1);
  qv_table_batch_done(m, 1);
  QV_CHECK(batch_ok(m, 1, &again));
  qv_table_unref(m);
  qv_table_unref(mem);
}

static void test_in_memory_untouched(void) {
  qv_table *t = make_table();
  const qv_buffer *buf = NULL;
  QV_CHECK(batch_ok(t, 0, &buf));
  QV_CHECK(!qv_buffer_is_mapped(buf));
  qv_table_batch_done(t, 0);
  int64_t total = 0;
  QV_CHECK_EQ_INT(present_pages(buf->data, buf->size, &total), total); /* heap: kept */
  QV_CHECK(batch_ok(t, 0, &buf));
  qv_table_batch_done(NULL, 0);
  qv_table_unref(t);
}

static void test_not_decoded_noop(void) {
  qv_table *mem = make_table();
  qv_table *m = rt_mapped(mem);
  qv_table_batch_done(m, 2); /* never decoded: nothing to drop, nothing decoded */
  const qv_buffer *buf = NULL;
  QV_CHECK(batch_ok(m, 2, &buf));
  qv_table_unref(m);
  qv_table_unref(mem);
}

/* max(v) by k of the mapped table m on `threads` threads under `budget`
 * (*out: the result); *present / *pages: the pages of v's values left in
 * the process afterwards, of all of them. */
static void group_and_count(qv_table *m, int threads, int64_t budget, qv_table **out,
                            int64_t *present, int64_t *pages) {
  const char *keys[] = {"k"};
  qv_aggregate agg;
  memset(&agg, 0, sizeof agg);
  agg.kind = QV_AGG_MAX;
  agg.column = "v";
  agg.name = "s";
  qv_group_by_options o;
  memset(&o, 0, sizeof o);
  o.threads = threads;
  o.memory_limit = budget;
  RT_OK(qv_table_group_by(m, keys, 1, &agg, 1, &o, out, &E));
  *present = *pages = 0;
  for (int64_t b = 0; b < BATCHES; b++) {
    qv_array *a = NULL;
    RT_OK(qv_table_batch(m, b, &a, &E)); /* decoded by the group-by: no page touched */
    const qv_buffer *vb = a->children[0]->buffers[1];
    int64_t total = 0;
    QV_CHECK(qv_buffer_is_mapped(vb));
    *present += present_pages(vb->data, vb->size, &total);
    *pages += total;
    qv_array_unref(a);
  }
}

/* A group-by whose input passes half its memory budget releases each batch
 * once aggregated (resident memory stays flat as the input grows), on one
 * thread and with thread-local pre-aggregation on two: after the call
 * (nearly) no page of the input's values is left in the process, and the
 * maxima are right. Under a budget the input fits well inside, the pages
 * stay. */
static void test_group_by_releases(void) {
  qv_table *mem = make_table_k(true);
  for (int threads = 1; threads <= 2; threads++) {
    qv_table *m = rt_mapped(mem);
    qv_table *out = NULL;
    int64_t present = 0, pages = 0;
    /* the 12 MiB read pass half of 8 MiB: released */
    group_and_count(m, threads, 8 << 20, &out, &present, &pages);
    QV_CHECK_EQ_INT(qv_table_num_rows(out), 3);
    /* Not 0: reading the output keys' first rows maps back the page-cache
     * folio around them (with large folios up to ~2 MiB of the neighbouring
     * values); without the release all BATCHES batches stay in. */
    QV_CHECK(pages >= BATCHES * 500);
    if (present * BATCHES > pages)
      fprintf(stderr, "threads %d: %" PRId64 " of %" PRId64 " pages left in\n", threads, present,
              pages);
    QV_CHECK(present * BATCHES <= pages);
    int64_t want[3] = {INT64_MIN, INT64_MIN, INT64_MIN};
    for (int64_t r = 0; r < BATCHES * ROWS_PER_BATCH; r++)
      if (value_at(r) > want[r % 3]) want[r % 3] = value_at(r);
    qv_array *res = NULL;
    RT_OK(qv_table_batch(out, 0, &res, &E));
    const double *k = (const double *)(const void *)res->children[0]->buffers[1]->data;
    const int64_t *mx = (const int64_t *)(const void *)res->children[1]->buffers[1]->data;
    for (int g = 0; g < 3; g++) QV_CHECK(mx[g] == want[(int)k[g]]);
    qv_array_unref(res);
    qv_table_unref(out);
    qv_table_unref(m);
  }
  /* a budget far above the input: nothing released */
  qv_table *m = rt_mapped(mem);
  qv_table *out = NULL;
  int64_t present = 0, pages = 0;
  group_and_count(m, 2, (int64_t)1 << 30, &out, &present, &pages);
  QV_CHECK_EQ_INT(present, pages);
  qv_table_unref(out);
  qv_table_unref(m);
  qv_table_unref(mem);
}

int main(void) {
  QV_RUN(test_mapped_release);
  QV_RUN(test_in_memory_untouched);
  QV_RUN(test_not_decoded_noop);
  QV_RUN(test_group_by_releases);
  rt_cleanup();
  return QV_TEST_END();
}
