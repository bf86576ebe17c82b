/* test_groupby_spill.c — group-by beyond memory (groupby_spill.c): with a
 * memory budget far below the data (64 KiB on 200k rows), qv_table_group_by
 * must spill (the spill statistics say so) and return exactly the table the
 * in-memory run returns (qv_table_equals: names, types, every value, in
 * first-appearance order and sorted), for every aggregate kind, over keys
 * with nulls (an int32 key of many groups, strings, a dictionary whose
 * dictionary differs per batch, doubles with NaN / -0.0), both for an
 * in-memory table and a memory-mapped IPC stream. The private spill
 * directory is gone afterwards, a dead writer's leftover directory is
 * reclaimed, and an unusable temp directory gives QV_EIO naming it. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quiver/builder.h"
#include "quiver/compute.h"
#include "quiver/table.h"
#include "quiver/writer.h"
#include "qv_build.h"
#include "qv_test.h"

static const char *SV[] = {"zeta", "alpha", "mu", "", "omega", "beta", "a-rather-longer-string"};
static const char *DV[] = {"p", "q", "r", "s"};

static qv_type *schema_type(void) {
  qv_type *st = qv_type_new(QV_STRUCT);
  qv_error err;
  qv_type *dt = qv_type_new(QV_DICTIONARY);
  dt->index_type = qv_type_new(QV_INT8);
  dt->value_type = qv_type_new(QV_STRING);
  QV_CHECK(qv_type_add_child(st, "k1", true, qv_type_new(QV_INT32), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "ks", true, qv_type_new(QV_STRING), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "d", true, dt, NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "kf", true, qv_type_new(QV_DOUBLE), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "x", true, qv_type_new(QV_DOUBLE), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "i", true, qv_type_new(QV_INT64), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "b", true, qv_type_new(QV_BOOL), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "s", true, qv_type_new(QV_STRING), NULL, &err) == QV_OK);
  return st;
}

/* One batch of `n` random rows; k1 takes `groups` values (and nulls), the
 * dictionary of d is DV rotated by `rot`. */
static qv_array *make_batch(int64_t n, int groups, int rot) {
  static const double KF[] = {0.0, -0.0, 1.5, -2.25, 1e300};
  qv_type *st = schema_type();
  qv_builder *b = NULL;
  qv_error err;
  QV_CHECK(qv_builder_new(st, &b, &err) == QV_OK);
  for (int64_t r = 0; r < n; r++) {
    QV_CHECK(qv_builder_begin_struct(b, &err) == QV_OK);
    qv_builder *c = qv_builder_child(b, 0);
    QV_CHECK((tb_rint(50) == 0 ? qv_builder_append_null(c, &err)
                               : qv_builder_append_int(c, tb_rint(groups), &err)) == QV_OK);
    c = qv_builder_child(b, 1);
    int s = tb_rint(8);
    QV_CHECK((s == 7 ? qv_builder_append_null(c, &err)
                     : qv_builder_append_string(c, SV[s], &err)) == QV_OK);
    c = qv_builder_child(b, 2);
    int dv = tb_rint(5);
    QV_CHECK((dv == 4 ? qv_builder_append_null(c, &err)
                      : qv_builder_append_index(c, (dv + 4 - rot) % 4, &err)) == QV_OK);
    c = qv_builder_child(b, 3);
    int f = tb_rint(7);
    QV_CHECK((f == 6 ? qv_builder_append_null(c, &err)
                     : qv_builder_append_double(c, f == 5 ? NAN : KF[f], &err)) == QV_OK);
    c = qv_builder_child(b, 4);
    int xk = tb_rint(20);
    QV_CHECK((xk == 0   ? qv_builder_append_null(c, &err)
              : xk == 1 ? qv_builder_append_double(c, NAN, &err)
              : xk == 2
                  ? qv_builder_append_double(c, -0.0, &err)
                  : qv_builder_append_double(c, (double)tb_rint(100000) / 7.0, &err)) == QV_OK);
    c = qv_builder_child(b, 5);
    QV_CHECK((tb_rint(10) == 0
                  ? qv_builder_append_null(c, &err)
                  : qv_builder_append_int(c, tb_rint(1000000) - 500000, &err)) == QV_OK);
    c = qv_builder_child(b, 6);
    int bv = tb_rint(3);
    QV_CHECK((bv == 2 ? qv_builder_append_null(c, &err) : qv_builder_append_bool(c, bv, &err)) ==
             QV_OK);
    c = qv_builder_child(b, 7);
    s = tb_rint(8);
    QV_CHECK((s == 7 ? qv_builder_append_null(c, &err)
                     : qv_builder_append_string(c, SV[s], &err)) == QV_OK);
    QV_CHECK(qv_builder_end_struct(b, &err) == QV_OK);
  }
  qv_builder *dvb = qv_builder_values(qv_builder_child(b, 2));
  for (int j = 0; j < 4; j++)
    QV_CHECK(qv_builder_append_string(dvb, DV[(j + rot) % 4], &err) == QV_OK);
  qv_array *out = NULL;
  QV_CHECK(qv_builder_finish(b, &out, &err) == QV_OK);
  qv_builder_free(b);
  qv_type_unref(st);
  return out;
}

static qv_table *make_table(int64_t rows, int n_batches, int groups) {
  qv_array **bs = calloc((size_t)n_batches, sizeof *bs);
  for (int i = 0; i < n_batches; i++) bs[i] = make_batch(rows / n_batches, groups, i % 4);
  qv_schema *schema = qv_schema_new(schema_type());
  qv_table *t = NULL;
  qv_error err;
  QV_CHECK(qv_table_from_batches(schema, bs, n_batches, &t, &err) == QV_OK);
  for (int i = 0; i < n_batches; i++) qv_array_unref(bs[i]);
  qv_schema_unref(schema);
  free(bs);
  return t;
}

/* Every aggregate kind, over several input types. */
static const char *AGGS[] = {
    "count(*) AS n",
    "count(x) AS cx",
    "count_distinct(i) AS cdi",
    "count_distinct(s) AS cds",
    "sum(i) AS si",
    "sum(x) AS sx",
    "mean(x) AS mx",
    "min(x) AS minx",
    "max(i) AS maxi",
    "min(s) AS mins",
    "max(s) AS maxs",
    "first(x) AS fx",
    "last(ks) AS lks",
    "last(s) AS ls",
    "var(x) AS vx",
    "var_pop(i) AS vpi",
    "stddev(x) AS sdx",
    "stddev_pop(i) AS sdi",
    "median(x) AS medx",
    "quantile(i, 0.3) AS q3",
    "top_k(i, 3) AS topi",
    "bottom_k(s, 2) AS bs",
    "corr(x, i) AS cxi",
    "covar(x, i) AS cvxi",
    "covar_pop(i, x) AS cvpix",
    "any(b) AS anyb",
    "all(b) AS allb",
    "list(i) AS li",
    "max(x) - min(i) AS rng",
};
#define N_AGGS ((int)(sizeof AGGS / sizeof AGGS[0]))

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static char tmp_root[256];

static void make_tmp_root(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmp_root, sizeof tmp_root, "%s/qv-spill-test-XXXXXX", base && *base ? base : "/tmp");
  QV_CHECK(mkdtemp(tmp_root) != NULL);
}

/* Group t by keys in memory and under a 64 KiB budget; both equal. */
static void compare_runs(qv_table *t, const char *const *keys, int32_t nk, bool sort,
                         int64_t budget) {
  qv_error err;
  char spill_dir[300];
  snprintf(spill_dir, sizeof spill_dir, "%s/spill", tmp_root);
  mkdir(spill_dir, 0755);
  qv_group_by_options mem;
  memset(&mem, 0, sizeof mem);
  mem.sort = sort;
  mem.memory_limit = -1;
  qv_table *expected = NULL, *actual = NULL;
  qv_status st = qv_table_group_by_exprs(t, keys, nk, AGGS, N_AGGS, &mem, &expected, &err);
  if (st != QV_OK) fprintf(stderr, "in memory: %s\n", err.message);
  QV_REQUIRE(st == QV_OK);
  qv_spill_stats stats;
  qv_group_by_options o = mem;
  o.memory_limit = budget;
  o.temp_directory = spill_dir;
  o.spill_stats = &stats;
  st = qv_table_group_by_exprs(t, keys, nk, AGGS, N_AGGS, &o, &actual, &err);
  if (st != QV_OK) fprintf(stderr, "spilled: %s\n", err.message);
  QV_REQUIRE(st == QV_OK);
  QV_CHECK(stats.spilled);
  QV_CHECK(stats.files >= 2);
  QV_CHECK(stats.partitions_grouped >= 2);
  QV_CHECK(stats.fanout >= 2);
  fprintf(stderr, "keys %d%s: %lld groups, fanout %d, depth %d, %lld files, %lld partitions\n", nk,
          sort ? " sorted" : "", (long long)qv_table_num_rows(expected), stats.fanout, stats.depth,
          (long long)stats.files, (long long)stats.partitions_grouped);
  qv_error diff;
  diff.message[0] = '\0';
  bool same = qv_table_equals(expected, actual, &diff);
  if (!same) fprintf(stderr, "difference: %s\n", diff.message);
  QV_CHECK(same);
  QV_CHECK_EQ_INT(count_entries(spill_dir), 0); /* the private directory is gone */
  qv_table_unref(expected);
  qv_table_unref(actual);
}

/* Sanitizer builds run the engine 10-50x slower: a fifth of the rows and
 * of the budgets there (the same shapes: every budget still spills). */
#if defined(__SANITIZE_ADDRESS__)
#define SCALE 5
#else
#define SCALE 1
#endif

static void test_spill_equals_memory(void) {
  qv_table *t = make_table(200000 / SCALE, 25, 20000 / SCALE);
  const char *k1[] = {"k1"};
  const char *k3[] = {"ks", "d", "kf"};
  const char *k4[] = {"k1", "ks", "d", "kf"};
  compare_runs(t, k3, 3, true, (64 << 10) / SCALE);
  compare_runs(t, k1, 1, false, (512 << 10) / SCALE);
  compare_runs(t, k4, 4, true, (2 << 20) / SCALE);
  /* The same data memory-mapped from an IPC stream. */
  char path[300];
  snprintf(path, sizeof path, "%s/data.arrows", tmp_root);
  qv_write_options wo;
  memset(&wo, 0, sizeof wo);
  wo.format = QV_FORMAT_STREAM;
  qv_error err;
  QV_REQUIRE(qv_table_write_path(t, path, &wo, &err) == QV_OK);
  qv_table *m = NULL;
  QV_REQUIRE(qv_table_open_path(path, NULL, &m, &err) == QV_OK);
  QV_CHECK(qv_table_get_kind(m) == QV_TABLE_MAPPED);
  compare_runs(m, k1, 1, true, (256 << 10) / SCALE);
  compare_runs(m, k4, 4, false, (2 << 20) / SCALE);
  qv_table_unref(m);
  unlink(path);
  qv_table_unref(t);
}

/* A dead writer's spill directory is reclaimed; a bad temp directory is
 * a clear error; a budget no partitioning can meet (one group) is too. */
static void test_temp_dir_and_errors(void) {
  qv_table *t = make_table(20000, 4, 5000);
  const char *k1[] = {"k1"};
  const char *agg[] = {"sum(i) AS si", "list(s) AS ls"};
  char spill_dir[300], dead[400], file[450];
  snprintf(spill_dir, sizeof spill_dir, "%s/spill2", tmp_root);
  QV_CHECK(mkdir(spill_dir, 0755) == 0);
  /* pid 999999999 cannot exist (pid_max is at most 2^22) */
  snprintf(dead, sizeof dead, "%s/.quiver-spill-7.tmp-quiver-999999999-12345-abcdef", spill_dir);
  QV_CHECK(mkdir(dead, 0700) == 0);
  snprintf(file, sizeof file, "%s/part-0-0.arrows", dead);
  FILE *f = fopen(file, "w");
  QV_CHECK(f != NULL);
  if (f) fclose(f);
  qv_spill_stats stats;
  qv_group_by_options o;
  memset(&o, 0, sizeof o);
  o.memory_limit = 32 << 10;
  o.temp_directory = spill_dir;
  o.spill_stats = &stats;
  qv_table *out = NULL;
  qv_error err;
  qv_status st = qv_table_group_by_exprs(t, k1, 1, agg, 2, &o, &out, &err);
  if (st != QV_OK) fprintf(stderr, "%s\n", err.message);
  QV_CHECK(st == QV_OK);
  QV_CHECK(stats.spilled);
  QV_CHECK_EQ_INT(count_entries(spill_dir), 0); /* ours removed, the dead one reclaimed */
  if (out) qv_table_unref(out);
  out = NULL;
  /* A temp directory that cannot be made: under a regular file. */
  char bad[400];
  snprintf(bad, sizeof bad, "%s/plainfile", tmp_root);
  f = fopen(bad, "w");
  QV_CHECK(f != NULL);
  if (f) fclose(f);
  snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "/sub");
  o.temp_directory = bad;
  st = qv_table_group_by_exprs(t, k1, 1, agg, 2, &o, &out, &err);
  QV_CHECK(st == QV_EIO);
  QV_CHECK(out == NULL);
  QV_CHECK(strstr(err.message, "temp directory") != NULL);
  QV_CHECK(strstr(err.message, bad) != NULL);
  fprintf(stderr, "bad temp dir: %s\n", err.message);
  /* One group of 20000 rows whose list cannot fit 1 KiB. */
  const char *none[] = {"ks"};
  const char *lst[] = {"list(i) AS li"};
  o.temp_directory = spill_dir;
  o.memory_limit = 1 << 10;
  st = qv_table_group_by_exprs(t, none, 1, lst, 1, &o, &out, &err);
  QV_CHECK(st == QV_ENOMEM);
  QV_CHECK(strstr(err.message, "memory limit of 1024 bytes") != NULL);
  QV_CHECK(strstr(err.message, "they are one group") != NULL);
  fprintf(stderr, "too small: %s\n", err.message);
  QV_CHECK_EQ_INT(count_entries(spill_dir), 0); /* removed on failure too */
  /* memory_limit < 0: no bound, no spill */
  o.memory_limit = -1;
  st = qv_table_group_by_exprs(t, k1, 1, agg, 2, &o, &out, &err);
  QV_CHECK(st == QV_OK);
  QV_CHECK(!stats.spilled);
  if (out) qv_table_unref(out);
  qv_table_unref(t);
  char p[450];
  snprintf(p, sizeof p, "%s/plainfile", tmp_root);
  unlink(p);
  rmdir(spill_dir);
}

int main(void) {
  tb_seed(0x9E3779B97F4A7C15ull);
  make_tmp_root();
  QV_RUN(test_spill_equals_memory);
  QV_RUN(test_temp_dir_and_errors);
  char p[300];
  snprintf(p, sizeof p, "%s/spill", tmp_root);
  rmdir(p);
  rmdir(tmp_root);
  return QV_TEST_END();
}
