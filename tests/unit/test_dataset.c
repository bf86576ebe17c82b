/*
 * test_dataset.c — the Dataset object (quiver/dataset.h) through its C API,
 * on a table whose column `a` holds the row number (so every result can be
 * checked by the row numbers it shows): opening and fingerprints, select
 * (slices vs composed mappings), shuffle against qv_permutation, filter,
 * shard, split_by_node, train_test_split (sizes, order, errors),
 * flatten_indices, concatenate (axis 0 and 1, with mappings), column
 * transforms, iteration across batch boundaries and through mappings,
 * cache files (written beside the data, reused, ignored, kept in memory,
 * cleaned up), map (single process, worker processes, cache reuse, a
 * failing callback leaving no cache file, row-count changes) and
 * save_to_disk round trips, map with expressions (qv_dataset_map_exprs:
 * values, fingerprint, errors, empty datasets), indices mapping files
 * (composed with given data, resolved among their directory's datasets,
 * errors).
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/atomic_internal.h"
#include "dataset/dataset_internal.h" /* qv_ds_args_digest */
#include "quiver/dataset.h"
#include "quiver/random.h"
#include "quiver/writer.h"
#include "qv_build.h"
#include "qv_test.h"

static qv_error E;

#define OK(expr)                                                                                   \
  do {                                                                                             \
    E.message[0] = '\0';                                                                           \
    qv_status ok_st_ = (expr);                                                                     \
    if (ok_st_ != QV_OK)                                                                           \
      fprintf(stderr, "%s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #expr, (int)ok_st_, E.message); \
    QV_REQUIRE(ok_st_ == QV_OK);                                                                   \
  } while (0)

static char tmp[256];

static const char *tmpdir(void) {
  if (tmp[0] == '\0') {
    snprintf(tmp, sizeof tmp, "/tmp/qv-dataset-test-XXXXXX");
    if (mkdtemp(tmp) == NULL) abort();
  }
  return tmp;
}

static void cleanup(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (tmp[0] && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
}

/* A fresh subdirectory of the temporary directory. */
static const char *subdir(const char *name) {
  static char path[8][300];
  static int k;
  char *p = path[k++ % 8];
  snprintf(p, 300, "%s/%s", tmpdir(), name);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", p, p);
  if (system(cmd) != 0) abort();
  return p;
}

/* Rows [first, first+n): a = row, t = "r<row>", label = row % 3. */
static qv_type *row_type(void) {
  qv_type *st = tb_type(QV_STRUCT);
  tb_child(st, "a", tb_type(QV_INT64));
  tb_child(st, "t", tb_type(QV_STRING));
  tb_child(st, "label", tb_type(QV_INT64));
  return st;
}

static qv_array *rows_batch(qv_type *st, int64_t first, int64_t n) {
  int64_t *a = malloc(sizeof(int64_t) * (size_t)n), *l = malloc(sizeof(int64_t) * (size_t)n);
  int32_t *off = malloc(sizeof(int32_t) * (size_t)(n + 1));
  char *data = malloc((size_t)n * 24 + 1);
  off[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    a[i] = first + i;
    l[i] = (first + i) % 3;
    off[i + 1] = off[i] + sprintf(data + off[i], "r%lld", (long long)(first + i));
  }
  qv_array *ch[3] = {tb_prim_raw(QV_INT64, n, 0, NULL, 0, a, n * 8),
                     tb_str_raw(QV_STRING, n, 0, NULL, off, data, off[n]),
                     tb_prim_raw(QV_INT64, n, 0, NULL, 0, l, n * 8)};
  qv_array *b = tb_array_nc(qv_type_ref(st), n, 0, 1, (qv_buffer *[]){NULL}, 3, ch);
  free(a);
  free(l);
  free(off);
  free(data);
  return b;
}

/* An in-memory table of `n` rows in batches of `per` rows. */
static qv_table *rows_table(int64_t n, int64_t per) {
  qv_type *st = row_type();
  qv_schema *s = qv_schema_new(st);
  int64_t nb = (n + per - 1) / per;
  qv_array **b = calloc((size_t)(nb > 0 ? nb : 1), sizeof *b);
  for (int64_t i = 0; i < nb; i++)
    b[i] = rows_batch(s->type, i * per, n - i * per < per ? n - i * per : per);
  qv_table *t = NULL;
  if (qv_table_from_batches(s, b, nb, &t, &E) != QV_OK) abort();
  for (int64_t i = 0; i < nb; i++) qv_array_unref(b[i]);
  free(b);
  qv_schema_unref(s);
  return t;
}

/* The table written as an IPC stream in `dir` and opened as a dataset. */
static qv_dataset *file_dataset(const char *dir, int64_t n, int64_t per) {
  char path[400];
  snprintf(path, sizeof path, "%s/data.arrow", dir);
  qv_table *t = rows_table(n, per);
  qv_write_options wo;
  memset(&wo, 0, sizeof wo);
  wo.format = QV_FORMAT_STREAM;
  wo.max_batch_rows = -1;
  if (qv_table_write_path(t, path, &wo, &E) != QV_OK) abort();
  qv_table_unref(t);
  qv_dataset *ds = NULL;
  if (qv_dataset_open(path, NULL, &ds, &E) != QV_OK) {
    fprintf(stderr, "open: %s\n", E.message);
    abort();
  }
  return ds;
}

static qv_dataset *memory_dataset(int64_t n, int64_t per) {
  qv_table *t = rows_table(n, per);
  qv_dataset *ds = NULL;
  if (qv_dataset_from_table(t, NULL, &ds, &E) != QV_OK) abort();
  qv_table_unref(t);
  return ds;
}

/* Column `a` of every row, by iteration in batches of `bs` (malloc'ed). */
static int64_t *column_a(qv_dataset *ds, int64_t bs) {
  int64_t n = qv_dataset_num_rows(ds);
  int64_t *v = malloc(sizeof(int64_t) * (size_t)(n + 1));
  qv_dataset_iter *it = NULL;
  if (qv_dataset_iter_new(ds, bs, false, &it, &E) != QV_OK) abort();
  int64_t k = 0;
  for (;;) {
    qv_array *b = NULL;
    if (qv_dataset_iter_next(it, &b, NULL, &E) != QV_OK) {
      fprintf(stderr, "iter: %s\n", E.message);
      abort();
    }
    if (b == NULL) break;
    const qv_array *a = b->children[qv_schema_find(qv_dataset_schema(ds), "a")];
    for (int64_t i = 0; i < b->length; i++)
      v[k++] = ((const int64_t *)a->buffers[1]->data)[a->offset + i];
    qv_array_unref(b);
  }
  qv_dataset_iter_free(it);
  if (k != n) abort();
  return v;
}

static bool same_a(qv_dataset *ds, const int64_t *want, int64_t n) {
  if (qv_dataset_num_rows(ds) != n) {
    fprintf(stderr, "rows %lld, expected %lld\n", (long long)qv_dataset_num_rows(ds), (long long)n);
    return false;
  }
  int64_t bss[] = {1, 3, 7, 64, 5000};
  for (int k = 0; k < 5; k++) {
    int64_t *got = column_a(ds, bss[k]);
    for (int64_t i = 0; i < n; i++)
      if (got[i] != want[i]) {
        fprintf(stderr, "batch size %lld: row %lld: a=%lld, expected %lld\n", (long long)bss[k],
                (long long)i, (long long)got[i], (long long)want[i]);
        free(got);
        return false;
      }
    free(got);
  }
  return true;
}

static int count_files(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  if (d) closedir(d);
  return n;
}

static int64_t n_cache_files(qv_dataset *ds) {
  char **p = NULL;
  int64_t n = 0;
  if (qv_dataset_cache_files(ds, &p, &n, &E) != QV_OK) abort();
  qv_table_free_paths(p, n);
  return n;
}

/* ------------------------------------------------------------------ tests -- */

static void test_open_and_fingerprints(void) {
  const char *dir = subdir("open");
  qv_dataset *ds = file_dataset(dir, 50, 7);
  QV_CHECK_EQ_INT(qv_dataset_num_rows(ds), 50);
  QV_CHECK_EQ_INT(qv_dataset_num_columns(ds), 3);
  QV_CHECK(qv_dataset_indices(ds) == NULL);
  QV_CHECK_EQ_INT(strlen(qv_dataset_fingerprint(ds)), 16);
  char path[400], fp[QV_FINGERPRINT_SIZE];
  snprintf(path, sizeof path, "%s/data.arrow", dir);
  OK(qv_fingerprint_of_file(path, NULL, NULL, fp, &E));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(ds), fp);
  QV_CHECK_EQ_INT(n_cache_files(ds), 1);
  /* Reopening gives the same fingerprint; an in-memory table's is
   * deterministic too. */
  qv_dataset *again = NULL;
  OK(qv_dataset_open(path, NULL, &again, &E));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(again), qv_dataset_fingerprint(ds));
  qv_dataset *m1 = memory_dataset(20, 6), *m2 = memory_dataset(20, 6), *m3 = memory_dataset(21, 6);
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(m1), qv_dataset_fingerprint(m2));
  QV_CHECK(strcmp(qv_dataset_fingerprint(m1), qv_dataset_fingerprint(m3)) != 0);
  QV_CHECK_EQ_INT(n_cache_files(m1), 0);
  /* Transform fingerprints are deterministic and depend on the arguments. */
  qv_dataset *s1 = NULL, *s2 = NULL, *s3 = NULL;
  OK(qv_dataset_shuffle(m1, 5, NULL, &s1, &E));
  OK(qv_dataset_shuffle(m2, 5, NULL, &s2, &E));
  OK(qv_dataset_shuffle(m1, 6, NULL, &s3, &E));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(s1), qv_dataset_fingerprint(s2));
  QV_CHECK(strcmp(qv_dataset_fingerprint(s1), qv_dataset_fingerprint(s3)) != 0);
  qv_fingerprint_args *a = NULL;
  OK(qv_fingerprint_args_new(&a, &E));
  OK(qv_fingerprint_arg_uint(a, "seed", 5, &E));
  OK(qv_fingerprint_update(qv_dataset_fingerprint(m1), "quiver.shuffle", a, fp, &E));
  qv_fingerprint_args_free(a);
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(s1), fp);
  /* Errors name the path. */
  qv_dataset *bad = NULL;
  QV_CHECK(qv_dataset_open("/nonexistent/x.arrow", NULL, &bad, &E) == QV_EIO);
  QV_CHECK(strstr(E.message, "/nonexistent/x.arrow") != NULL);
  qv_dataset_unref(s1);
  qv_dataset_unref(s2);
  qv_dataset_unref(s3);
  qv_dataset_unref(m1);
  qv_dataset_unref(m2);
  qv_dataset_unref(m3);
  qv_dataset_unref(again);
  qv_dataset_unref(ds);
}

static void test_select(void) {
  qv_dataset *ds = memory_dataset(40, 7), *r = NULL, *c = NULL, *e = NULL;
  /* contiguous -> slice, no mapping */
  int64_t run[] = {5, 6, 7, 8, 9};
  OK(qv_dataset_select(ds, run, 5, NULL, &r, &E));
  QV_CHECK(qv_dataset_indices(r) == NULL);
  QV_CHECK(same_a(r, run, 5));
  /* composed */
  int64_t pick[] = {3, 1, 4, 1, 39};
  OK(qv_dataset_select(ds, pick, 5, NULL, &c, &E));
  QV_CHECK(qv_dataset_indices(c) != NULL);
  QV_CHECK(same_a(c, pick, 5));
  qv_dataset *cc = NULL, *cr = NULL;
  int64_t pick2[] = {4, 0, 2};
  OK(qv_dataset_select(c, pick2, 3, NULL, &cc, &E));
  int64_t want2[] = {39, 3, 4};
  QV_CHECK(same_a(cc, want2, 3));
  /* a contiguous run of a mapped dataset slices the mapping */
  int64_t run2[] = {1, 2, 3};
  OK(qv_dataset_select(c, run2, 3, NULL, &cr, &E));
  int64_t want3[] = {1, 4, 1};
  QV_CHECK(same_a(cr, want3, 3));
  QV_CHECK(qv_dataset_indices(cr) != NULL);
  QV_CHECK_EQ_INT(qv_table_num_rows(qv_dataset_indices(cr)), 3);
  /* empty */
  OK(qv_dataset_select(ds, NULL, 0, NULL, &e, &E));
  QV_CHECK_EQ_INT(qv_dataset_num_rows(e), 0);
  /* out of range */
  qv_dataset *bad = NULL;
  int64_t oob[] = {2, 40};
  QV_CHECK(qv_dataset_select(ds, oob, 2, NULL, &bad, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message, "index 40 out of range for dataset of size 40");
  int64_t neg[] = {-1, 2};
  QV_CHECK(qv_dataset_select(ds, neg, 2, NULL, &bad, &E) == QV_ERANGE);
  /* row access through the mapping */
  qv_array *row = NULL;
  OK(qv_dataset_row(c, 4, &row, &E));
  QV_CHECK_EQ_INT(((int64_t *)row->children[0]->buffers[1]->data)[row->children[0]->offset], 39);
  qv_array_unref(row);
  qv_array *tk = NULL;
  int64_t rows[] = {4, 0};
  OK(qv_dataset_take(c, rows, 2, &tk, &E));
  QV_CHECK_EQ_INT(((int64_t *)tk->children[0]->buffers[1]->data)[0], 39);
  QV_CHECK_EQ_INT(((int64_t *)tk->children[0]->buffers[1]->data)[1], 3);
  qv_array_unref(tk);
  qv_table *sl = NULL;
  OK(qv_dataset_slice(c, 1, 3, &sl, &E));
  QV_CHECK_EQ_INT(qv_table_num_rows(sl), 3);
  qv_table_unref(sl);
  qv_table *col = NULL;
  OK(qv_dataset_column(c, "label", &col, &E));
  QV_CHECK_EQ_INT(qv_table_num_rows(col), 5);
  QV_CHECK_EQ_INT(qv_table_num_columns(col), 1);
  qv_table_unref(col);
  QV_CHECK(qv_dataset_column(c, "nope", &col, &E) == QV_EARG);
  qv_dataset_unref(cr);
  qv_dataset_unref(cc);
  qv_dataset_unref(e);
  qv_dataset_unref(c);
  qv_dataset_unref(r);
  qv_dataset_unref(ds);
}

static void test_shuffle_and_cache(void) {
  const char *dir = subdir("shuffle");
  qv_dataset *ds = file_dataset(dir, 100, 9), *s = NULL, *s2 = NULL, *s3 = NULL, *m = NULL;
  int64_t perm[100];
  OK(qv_permutation(42, 100, perm, &E));
  OK(qv_dataset_shuffle(ds, 42, NULL, &s, &E));
  QV_CHECK(same_a(s, perm, 100));
  /* the mapping was written beside the data, under the fingerprint */
  char path[400];
  snprintf(path, sizeof path, "%s/cache-%s.arrow", dir, qv_dataset_fingerprint(s));
  struct stat sb1, sb2;
  QV_REQUIRE(stat(path, &sb1) == 0);
  QV_CHECK_EQ_INT(n_cache_files(s), 2);
  QV_CHECK_EQ_INT(qv_table_get_kind(qv_dataset_indices(s)), QV_TABLE_MAPPED);
  /* same transform again: the file is reused, not rewritten */
  OK(qv_dataset_shuffle(ds, 42, NULL, &s2, &E));
  QV_REQUIRE(stat(path, &sb2) == 0);
  QV_CHECK(sb1.st_ino == sb2.st_ino && sb1.st_mtim.tv_nsec == sb2.st_mtim.tv_nsec);
  QV_CHECK(same_a(s2, perm, 100));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(s2), qv_dataset_fingerprint(s));
  /* keep_in_memory writes nothing */
  qv_dataset_options o;
  memset(&o, 0, sizeof o);
  o.keep_in_memory = true;
  OK(qv_dataset_shuffle(ds, 43, &o, &m, &E));
  QV_CHECK_EQ_INT(n_cache_files(m), 1);
  QV_CHECK_EQ_INT(count_files(dir, "cache-"), 1);
  /* shuffle of a shuffle composes */
  OK(qv_dataset_shuffle(s, 7, NULL, &s3, &E));
  int64_t p2[100], want[100];
  OK(qv_permutation(7, 100, p2, &E));
  for (int i = 0; i < 100; i++) want[i] = perm[p2[i]];
  QV_CHECK(same_a(s3, want, 100));
  QV_CHECK_EQ_INT(count_files(dir, "cache-"), 2);
  /* a stale cache file with the wrong row count is an error, not silently used */
  qv_dataset *small = NULL, *bad = NULL;
  OK(qv_dataset_select_range(ds, 0, 10, NULL, &small, &E));
  char spath[400];
  qv_dataset *tmpd = NULL;
  OK(qv_dataset_shuffle(small, 1, &o, &tmpd, &E));
  snprintf(spath, sizeof spath, "%s/cache-%s.arrow", dir, qv_dataset_fingerprint(tmpd));
  char cmd[1000];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, spath);
  QV_REQUIRE(system(cmd) == 0);
  QV_CHECK(qv_dataset_shuffle(small, 1, NULL, &bad, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "indices mapping has 100 rows, expected 10") != NULL);
  /* ignore_cache recomputes and replaces it */
  memset(&o, 0, sizeof o);
  o.ignore_cache = true;
  OK(qv_dataset_shuffle(small, 1, &o, &bad, &E));
  QV_CHECK_EQ_INT(qv_dataset_num_rows(bad), 10);
  qv_dataset_unref(bad);
  /* cleanup removes the unused cache files, never this dataset's; also a
   * quarantined cache file and what a dead writer left, never what a live
   * writer (here: this process) is writing */
  char live[600];
  snprintf(live, sizeof live, "%s/live.arrow", dir);
  qv_atomic_file *af = NULL;
  OK(qv_atomic_file_open(live, &af, &E)); /* (itself reclaims beside it) */
  char junk[600];
  snprintf(junk, sizeof junk, "%s/cache-0123456789abcdef.arrow.corrupt-1700000000", dir);
  FILE *jf = fopen(junk, "w");
  QV_REQUIRE(jf != NULL);
  fclose(jf);
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, NULL, 0);
  snprintf(junk, sizeof junk, "%s/.x.arrow.tmp-quiver-%d-1-abcdef", dir, (int)gone);
  QV_REQUIRE(mkdir(junk, 0777) == 0);
  int64_t removed = -1;
  OK(qv_dataset_cleanup_cache_files(s3, &removed, &E));
  QV_CHECK_EQ_INT(removed, 4);
  QV_CHECK_EQ_INT(count_files(dir, "cache-"), 1);
  QV_CHECK_EQ_INT(count_files(dir, ".x.arrow.tmp-quiver-"), 0);
  QV_CHECK_EQ_INT(count_files(dir, ".live.arrow.tmp-quiver-"), 1);
  qv_atomic_file_abort(af);
  QV_CHECK(same_a(s3, want, 100));
  OK(qv_dataset_cleanup_cache_files(m, &removed, &E));
  QV_CHECK_EQ_INT(removed, 1);
  qv_dataset_unref(tmpd);
  qv_dataset_unref(small);
  qv_dataset_unref(s3);
  qv_dataset_unref(m);
  qv_dataset_unref(s2);
  qv_dataset_unref(s);
  qv_dataset_unref(ds);
}

static void test_filter(void) {
  const char *dir = subdir("filter");
  qv_dataset *ds = file_dataset(dir, 100, 8), *f = NULL, *s = NULL, *sf = NULL, *f2 = NULL;
  OK(qv_dataset_filter(ds, "a % 3 == 0 and a > 10", NULL, &f, &E));
  int64_t want[100];
  int64_t n = 0;
  for (int64_t i = 0; i < 100; i++)
    if (i % 3 == 0 && i > 10) want[n++] = i;
  QV_CHECK(same_a(f, want, n));
  QV_CHECK_EQ_INT(n_cache_files(f), 2);
  /* spacing does not change the fingerprint */
  OK(qv_dataset_filter(ds, "(a%3==0) and (a>10)", NULL, &f2, &E));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(f2), qv_dataset_fingerprint(f));
  /* through a shuffle */
  int64_t perm[100];
  OK(qv_permutation(3, 100, perm, &E));
  OK(qv_dataset_shuffle(ds, 3, NULL, &s, &E));
  OK(qv_dataset_filter(s, "label == 1", NULL, &sf, &E));
  n = 0;
  for (int64_t i = 0; i < 100; i++)
    if (perm[i] % 3 == 1) want[n++] = perm[i];
  QV_CHECK(same_a(sf, want, n));
  /* nothing kept */
  qv_dataset *none = NULL;
  OK(qv_dataset_filter(s, "a < 0", NULL, &none, &E));
  QV_CHECK_EQ_INT(qv_dataset_num_rows(none), 0);
  /* bad expressions are errors with the caret */
  qv_dataset *bad = NULL;
  QV_CHECK(qv_dataset_filter(ds, "nope > 1", NULL, &bad, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "nope") != NULL);
  qv_dataset_unref(none);
  qv_dataset_unref(f2);
  qv_dataset_unref(sf);
  qv_dataset_unref(s);
  qv_dataset_unref(f);
  qv_dataset_unref(ds);
}

static qv_status keep_even(void *ctx, const qv_array *batch, int64_t first_row, uint8_t *keep,
                           qv_error *err) {
  (void)ctx;
  (void)err;
  const qv_array *a = batch->children[0];
  for (int64_t i = 0; i < batch->length; i++)
    if (((const int64_t *)a->buffers[1]->data)[a->offset + i] % 2 == 0 && first_row + i >= 0)
      qv_bit_set(keep, i);
  return QV_OK;
}

static void test_filter_fn(void) {
  qv_dataset *ds = memory_dataset(30, 4), *f = NULL;
  qv_filter_fn fn = {"keep_even", "1", keep_even, NULL, NULL};
  OK(qv_dataset_filter_fn(ds, &fn, 7, NULL, &f, &E));
  int64_t want[15];
  for (int i = 0; i < 15; i++) want[i] = 2 * i;
  QV_CHECK(same_a(f, want, 15));
  qv_dataset_unref(f);
  qv_dataset_unref(ds);
}

static void test_shard_and_split_by_node(void) {
  qv_dataset *ds = memory_dataset(10, 3);
  /* 10 rows in 3 contiguous shards: 4, 3, 3 */
  int64_t sizes[3] = {4, 3, 3}, start = 0;
  for (int i = 0; i < 3; i++) {
    qv_dataset *sh = NULL;
    OK(qv_dataset_shard(ds, 3, i, true, NULL, &sh, &E));
    int64_t want[4];
    for (int k = 0; k < sizes[i]; k++) want[k] = start + k;
    QV_CHECK(same_a(sh, want, sizes[i]));
    QV_CHECK(qv_dataset_indices(sh) == NULL);
    start += sizes[i];
    qv_dataset_unref(sh);
    OK(qv_dataset_split_by_node(ds, i, 3, &sh, &E));
    QV_CHECK_EQ_INT(qv_dataset_num_rows(sh), sizes[i]);
    qv_dataset_unref(sh);
  }
  qv_dataset *st = NULL;
  OK(qv_dataset_shard(ds, 3, 1, false, NULL, &st, &E));
  int64_t want[] = {1, 4, 7};
  QV_CHECK(same_a(st, want, 3));
  qv_dataset *bad = NULL;
  QV_CHECK(qv_dataset_shard(ds, 3, 3, true, NULL, &bad, &E) == QV_EARG);
  qv_dataset_unref(st);
  qv_dataset_unref(ds);
}

static void test_train_test_split(void) {
  const char *dir = subdir("split");
  qv_dataset *ds = file_dataset(dir, 10, 3), *tr = NULL, *te = NULL;
  qv_split_size none = {QV_SIZE_NONE, 0, 0}, q = {QV_SIZE_FRACTION, 0.25, 0};
  OK(qv_dataset_train_test_split(ds, none, none, true, 9, NULL, &tr, &te, &E));
  int64_t perm[10];
  OK(qv_permutation(9, 10, perm, &E));
  /* test = ceil(0.25 * 10) = 3 rows: perm[:3]; train = perm[3:10] */
  QV_CHECK(same_a(te, perm, 3));
  QV_CHECK(same_a(tr, perm + 3, 7));
  QV_CHECK(strcmp(qv_dataset_fingerprint(tr), qv_dataset_fingerprint(te)) != 0);
  QV_CHECK_EQ_INT(count_files(dir, "cache-"), 2);
  qv_dataset_unref(tr);
  qv_dataset_unref(te);
  /* explicit sizes, train fraction floors */
  qv_split_size tr_f = {QV_SIZE_FRACTION, 0.55, 0}, te_c = {QV_SIZE_COUNT, 0, 2};
  OK(qv_dataset_train_test_split(ds, te_c, tr_f, true, 9, NULL, &tr, &te, &E));
  QV_CHECK_EQ_INT(qv_dataset_num_rows(tr), 5);
  QV_CHECK_EQ_INT(qv_dataset_num_rows(te), 2);
  QV_CHECK(same_a(te, perm, 2));
  QV_CHECK(same_a(tr, perm + 2, 5));
  qv_dataset_unref(tr);
  qv_dataset_unref(te);
  /* no shuffle: slices, train first */
  OK(qv_dataset_train_test_split(ds, q, none, false, 0, NULL, &tr, &te, &E));
  int64_t w1[] = {0, 1, 2, 3, 4, 5, 6}, w2[] = {7, 8, 9};
  QV_CHECK(same_a(tr, w1, 7));
  QV_CHECK(same_a(te, w2, 3));
  QV_CHECK(qv_dataset_indices(tr) == NULL);
  qv_dataset_unref(tr);
  qv_dataset_unref(te);
  /* errors as datasets words them */
  qv_split_size big = {QV_SIZE_COUNT, 0, 10}, one = {QV_SIZE_FRACTION, 1.0, 0};
  QV_CHECK(qv_dataset_train_test_split(ds, big, none, true, 0, NULL, &tr, &te, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message,
                  "test_size=10 should be either positive and smaller than the "
                  "number of samples 10 or a float in the (0, 1) range");
  QV_CHECK(qv_dataset_train_test_split(ds, one, none, true, 0, NULL, &tr, &te, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message,
                  "test_size=1.0 should be either positive and smaller than the "
                  "number of samples 10 or a float in the (0, 1) range");
  qv_split_size a6 = {QV_SIZE_FRACTION, 0.6, 0}, b6 = {QV_SIZE_FRACTION, 0.5, 0};
  QV_CHECK(qv_dataset_train_test_split(ds, a6, b6, true, 0, NULL, &tr, &te, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message,
                  "The sum of test_size and train_size = 1.1, should be in the (0, 1) "
                  "range. Reduce test_size and/or train_size.");
  qv_split_size c7 = {QV_SIZE_COUNT, 0, 7}, c4 = {QV_SIZE_COUNT, 0, 4};
  QV_CHECK(qv_dataset_train_test_split(ds, c7, c4, true, 0, NULL, &tr, &te, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message,
                  "The sum of train_size and test_size = 11, should be smaller than "
                  "the number of samples 10. Reduce test_size and/or train_size.");
  qv_dataset_unref(ds);
}

static void test_flatten_and_save(void) {
  const char *dir = subdir("flatten");
  qv_dataset *ds = file_dataset(dir, 60, 7), *s = NULL, *f = NULL, *back = NULL;
  int64_t perm[60];
  OK(qv_permutation(11, 60, perm, &E));
  OK(qv_dataset_shuffle(ds, 11, NULL, &s, &E));
  OK(qv_dataset_flatten_indices(s, NULL, &f, &E));
  QV_CHECK(qv_dataset_indices(f) == NULL);
  QV_CHECK(same_a(f, perm, 60));
  QV_CHECK_EQ_INT(n_cache_files(f), 1);
  char out[400];
  snprintf(out, sizeof out, "%s/saved", dir);
  int64_t shards = 0;
  qv_save_options so;
  memset(&so, 0, sizeof so);
  so.num_shards = 3;
  OK(qv_dataset_save_to_disk(s, out, &so, &shards, &E));
  QV_CHECK_EQ_INT(shards, 3);
  OK(qv_dataset_open(out, NULL, &back, &E));
  QV_CHECK(same_a(back, perm, 60));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(back), qv_dataset_fingerprint(s));
  /* saving again with fewer shards removes the old ones */
  so.num_shards = 1;
  qv_dataset *back2 = NULL;
  OK(qv_dataset_save_to_disk(f, out, &so, &shards, &E));
  QV_CHECK_EQ_INT(count_files(out, "data-"), 1);
  OK(qv_dataset_open(out, NULL, &back2, &E));
  QV_CHECK(same_a(back2, perm, 60));
  /* a dataset cannot overwrite its own directory */
  QV_CHECK(qv_dataset_save_to_disk(back2, out, NULL, NULL, &E) == QV_EARG);
  QV_CHECK(strstr(E.message, "can't overwrite itself") != NULL);
  {
    /* dataset_info.json whose features name other columns than the data's
     * (found by fuzz_hf_dir: the message used a freed schema) */
    char info[1024];
    snprintf(info, sizeof info, "%s/dataset_info.json", out);
    FILE *fi = fopen(info, "w");
    QV_CHECK(fi != NULL);
    fputs(
        "{\"features\": {\"a\": {\"dtype\": \"int64\", \"_type\": \"Value\"}, "
        "\"zz\": {\"dtype\": \"string\", \"_type\": \"Value\"}, "
        "\"label\": {\"dtype\": \"int64\", \"_type\": \"Value\"}}}",
        fi);
    fclose(fi);
    qv_dataset *bad = NULL;
    QV_CHECK(qv_dataset_open(out, NULL, &bad, &E) == QV_EINVAL);
    QV_CHECK(strstr(E.message,
                    "features list column 'zz' where the data has column 't' "
                    "(position 1)") != NULL);
    QV_CHECK(bad == NULL);
  }
  qv_dataset_unref(back2);
  qv_dataset_unref(back);
  qv_dataset_unref(f);
  qv_dataset_unref(s);
  qv_dataset_unref(ds);
}

static void test_concatenate(void) {
  qv_dataset *a = memory_dataset(10, 4), *b = memory_dataset(6, 5), *sa = NULL, *c = NULL;
  int64_t pick[] = {9, 2, 5};
  OK(qv_dataset_select(a, pick, 3, NULL, &sa, &E));
  qv_dataset *parts[] = {sa, b};
  OK(qv_dataset_concatenate(parts, 2, 0, NULL, &c, &E));
  int64_t want[] = {9, 2, 5, 0, 1, 2, 3, 4, 5};
  QV_CHECK(same_a(c, want, 9));
  qv_dataset_unref(c);
  qv_dataset *parts2[] = {b, a};
  OK(qv_dataset_concatenate(parts2, 2, 0, NULL, &c, &E));
  QV_CHECK(qv_dataset_indices(c) == NULL);
  QV_CHECK_EQ_INT(qv_dataset_num_rows(c), 16);
  qv_dataset_unref(c);
  /* axis 1: renamed columns side by side, the mapped one flattened */
  qv_dataset *rb = NULL, *sb3 = NULL;
  const char *from[] = {"a", "t", "label"}, *to[] = {"a2", "t2", "label2"};
  int64_t pick3[] = {5, 4, 3};
  OK(qv_dataset_select(b, pick3, 3, NULL, &sb3, &E));
  OK(qv_dataset_rename_columns(sb3, from, to, 3, &rb, &E));
  qv_dataset *parts3[] = {sa, rb};
  OK(qv_dataset_concatenate(parts3, 2, 1, NULL, &c, &E));
  QV_CHECK_EQ_INT(qv_dataset_num_columns(c), 6);
  QV_CHECK(same_a(c, pick, 3));
  qv_table *col = NULL;
  OK(qv_dataset_column(c, "a2", &col, &E));
  qv_array *b0 = NULL;
  OK(qv_table_batch(col, 0, &b0, &E));
  QV_CHECK_EQ_INT(((int64_t *)b0->children[0]->buffers[1]->data)[b0->children[0]->offset], 5);
  qv_array_unref(b0);
  qv_table_unref(col);
  qv_dataset *bad = NULL;
  qv_dataset *parts4[] = {a, b};
  QV_CHECK(qv_dataset_concatenate(parts4, 2, 1, NULL, &bad, &E) == QV_EARG);
  qv_dataset_unref(c);
  qv_dataset_unref(rb);
  qv_dataset_unref(sb3);
  qv_dataset_unref(sa);
  qv_dataset_unref(b);
  qv_dataset_unref(a);
}

static void test_columns(void) {
  qv_dataset *ds = memory_dataset(12, 5), *r = NULL, *rm = NULL, *sel = NULL, *add = NULL;
  const char *from[] = {"label"}, *to[] = {"y"};
  OK(qv_dataset_rename_columns(ds, from, to, 1, &r, &E));
  QV_CHECK_EQ_INT(qv_dataset_column_index(r, "y"), 2);
  QV_CHECK_EQ_STR(qv_dataset_features(r)->keys[2], "y");
  const char *drop[] = {"t"};
  OK(qv_dataset_remove_columns(r, drop, 1, &rm, &E));
  QV_CHECK_EQ_INT(qv_dataset_num_columns(rm), 2);
  const char *keep[] = {"y", "a"};
  OK(qv_dataset_select_columns(r, keep, 2, &sel, &E));
  QV_CHECK_EQ_STR(qv_schema_field(qv_dataset_schema(sel), 0)->name, "y");
  QV_CHECK_EQ_STR(qv_dataset_features(sel)->keys[1], "a");
  int32_t v[12];
  for (int i = 0; i < 12; i++) v[i] = 100 + i;
  qv_array *col = tb_int32(v, 12);
  OK(qv_dataset_add_column(sel, "z", &col, 1, NULL, NULL, &add, &E));
  QV_CHECK_EQ_INT(qv_dataset_num_columns(add), 3);
  QV_CHECK_EQ_STR(qv_dataset_features(add)->children[2]->dtype, "int32");
  qv_dataset *bad = NULL;
  QV_CHECK(qv_dataset_add_column(sel, "a", &col, 1, NULL, NULL, &bad, &E) == QV_EARG);
  QV_CHECK(qv_dataset_remove_columns(r, from, 1, &bad, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message, "remove_columns: column 'label' not in the dataset");
  /* cast: a -> int32 through features */
  qv_hf_feature *f = NULL;
  const char *js =
      "{\"y\": {\"dtype\": \"int8\", \"_type\": \"Value\"}, \"a\": {\"dtype\": "
      "\"int32\", \"_type\": \"Value\"}}";
  OK(qv_hf_features_parse(js, (int64_t)strlen(js), &f, &E));
  qv_dataset *cast = NULL;
  OK(qv_dataset_cast(sel, f, &cast, &E));
  QV_CHECK_EQ_INT(qv_schema_field(qv_dataset_schema(cast), 1)->type->id, QV_INT32);
  QV_CHECK_EQ_INT(qv_schema_field(qv_dataset_schema(cast), 0)->type->id, QV_INT8);
  qv_hf_feature_free(f);
  qv_dataset_unref(cast);
  /* add_column on a mapped dataset flattens it first (values in dataset order) */
  qv_dataset *sh = NULL, *sh_add = NULL;
  OK(qv_dataset_shuffle(ds, 2, NULL, &sh, &E));
  OK(qv_dataset_add_column(sh, "z", &col, 1, NULL, NULL, &sh_add, &E));
  QV_CHECK(qv_dataset_indices(sh_add) == NULL);
  int64_t perm[12];
  OK(qv_permutation(2, 12, perm, &E));
  QV_CHECK(same_a(sh_add, perm, 12));
  qv_array_unref(col);
  qv_dataset_unref(sh_add);
  qv_dataset_unref(sh);
  qv_dataset_unref(add);
  qv_dataset_unref(sel);
  qv_dataset_unref(rm);
  qv_dataset_unref(r);
  qv_dataset_unref(ds);
}

static void test_iteration(void) {
  qv_dataset *ds = memory_dataset(23, 5), *s = NULL;
  qv_dataset_iter *it = NULL;
  OK(qv_dataset_iter_new(ds, 4, true, &it, &E));
  int64_t nb = 0, rows = 0;
  for (;;) {
    qv_array *b = NULL;
    OK(qv_dataset_iter_next(it, &b, NULL, &E));
    if (b == NULL) break;
    QV_CHECK_EQ_INT(b->length, 4);
    QV_CHECK_EQ_INT(b->offset, 0);
    nb++;
    rows += b->length;
    qv_array_unref(b);
  }
  qv_dataset_iter_free(it);
  QV_CHECK_EQ_INT(nb, 5);
  QV_CHECK_EQ_INT(rows, 20);
  int64_t id[23];
  for (int i = 0; i < 23; i++) id[i] = i;
  QV_CHECK(same_a(ds, id, 23));
  OK(qv_dataset_shuffle(ds, 99, NULL, &s, &E));
  int64_t perm[23];
  OK(qv_permutation(99, 23, perm, &E));
  QV_CHECK(same_a(s, perm, 23));
  QV_CHECK(qv_dataset_iter_new(ds, 0, false, &it, &E) == QV_EARG);
  qv_dataset_unref(s);
  qv_dataset_unref(ds);
}

/* map callbacks -------------------------------------------------------- */

static int g_calls;

/* Adds b = 2 * a (int64); fails on the call whose first row is ctx's value. */
static qv_status double_a(void *ctx, const qv_array *batch, int64_t first_row, int rank,
                          qv_array **out, qv_error *err) {
  (void)rank;
  g_calls++;
  if (ctx != NULL && first_row == *(int64_t *)ctx)
    return qv_error_set(err, QV_EINVAL, "boom at row %lld", (long long)first_row);
  const qv_array *a = batch->children[0];
  int64_t n = batch->length;
  int64_t *v = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = 2 * ((const int64_t *)a->buffers[1]->data)[a->offset + i];
  qv_array *col = tb_prim_raw(QV_INT64, n, 0, NULL, 0, v, n * 8);
  free(v);
  qv_type *st = tb_child(tb_type(QV_STRUCT), "b", tb_type(QV_INT64));
  *out = tb_array_nc(st, n, 0, 1, (qv_buffer *[]){NULL}, 1, &col);
  return QV_OK;
}

/* Each row becomes `a % 3` copies of column c = a (rows change count). */
static qv_status explode(void *ctx, const qv_array *batch, int64_t first_row, int rank,
                         qv_array **out, qv_error *err) {
  (void)ctx;
  (void)first_row;
  (void)rank;
  (void)err;
  const qv_array *a = batch->children[0];
  int64_t *v = malloc(sizeof(int64_t) * (size_t)(batch->length * 2 + 1)), n = 0;
  for (int64_t i = 0; i < batch->length; i++) {
    int64_t x = ((const int64_t *)a->buffers[1]->data)[a->offset + i];
    for (int64_t k = 0; k < x % 3; k++) v[n++] = x;
  }
  qv_array *col = tb_prim_raw(QV_INT64, n, 0, NULL, 0, v, n * 8);
  free(v);
  qv_type *st = tb_child(tb_type(QV_STRUCT), "a", tb_type(QV_INT64));
  *out = tb_array_nc(st, n, 0, 1, (qv_buffer *[]){NULL}, 1, &col);
  return QV_OK;
}

/* double_a, but worker 1 dies (SIGKILL) half-way through its shard. */
static qv_status die_in_worker_1(void *ctx, const qv_array *batch, int64_t first_row, int rank,
                                 qv_array **out, qv_error *err) {
  if (rank == 1 && first_row >= 40) kill(getpid(), SIGKILL);
  return double_a(ctx, batch, first_row, rank, out, err);
}

static bool column_equals(qv_dataset *ds, const char *name, const int64_t *want, int64_t n) {
  qv_table *t = NULL;
  if (qv_dataset_column(ds, name, &t, &E) != QV_OK || qv_table_num_rows(t) != n) {
    qv_table_unref(t);
    return false;
  }
  int64_t k = 0;
  bool ok = true;
  for (int64_t b = 0; b < qv_table_num_batches(t); b++) {
    qv_array *batch = NULL;
    if (qv_table_batch(t, b, &batch, &E) != QV_OK) abort();
    const qv_array *c = batch->children[0];
    for (int64_t i = 0; i < c->length; i++, k++)
      if (((const int64_t *)c->buffers[1]->data)[c->offset + i] != want[k]) ok = false;
    qv_array_unref(batch);
  }
  qv_table_unref(t);
  return ok;
}

static void test_map(void) {
  const char *dir = subdir("map");
  qv_dataset *ds = file_dataset(dir, 50, 6), *m = NULL, *m2 = NULL, *mp = NULL, *s = NULL;
  qv_map_fn fn = {"double_a", "1", double_a, NULL, NULL};
  qv_map_options mo;
  memset(&mo, 0, sizeof mo);
  mo.batched = true;
  mo.batch_size = 8;
  g_calls = 0;
  OK(qv_dataset_map(ds, &fn, &mo, NULL, &m, &E));
  QV_CHECK_EQ_INT(g_calls, 7);
  QV_CHECK_EQ_INT(qv_dataset_num_columns(m), 4);
  int64_t want[50], id[50];
  for (int i = 0; i < 50; i++) {
    want[i] = 2 * i;
    id[i] = i;
  }
  QV_CHECK(column_equals(m, "b", want, 50));
  QV_CHECK(same_a(m, id, 50));
  char path[400];
  snprintf(path, sizeof path, "%s/cache-%s.arrow", dir, qv_dataset_fingerprint(m));
  QV_CHECK(access(path, F_OK) == 0);
  /* same map again: reused, the function is not called */
  g_calls = 0;
  OK(qv_dataset_map(ds, &fn, &mo, NULL, &m2, &E));
  QV_CHECK_EQ_INT(g_calls, 0);
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(m2), qv_dataset_fingerprint(m));
  QV_CHECK(column_equals(m2, "b", want, 50));
  /* num_proc = 3: per-worker files, joined; same rows as one process */
  mo.num_proc = 3;
  qv_dataset_options o;
  memset(&o, 0, sizeof o);
  o.ignore_cache = true;
  OK(qv_dataset_map(ds, &fn, &mo, &o, &mp, &E));
  QV_CHECK(column_equals(mp, "b", want, 50));
  QV_CHECK(same_a(mp, id, 50));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(mp), qv_dataset_fingerprint(m));
  QV_CHECK_EQ_INT(qv_table_get_kind(qv_dataset_data(mp)), QV_TABLE_CONCAT);
  char wpath[400];
  snprintf(wpath, sizeof wpath, "%s/cache-%s_00001_of_00003.arrow", dir, qv_dataset_fingerprint(m));
  QV_CHECK(access(wpath, F_OK) == 0);
  QV_CHECK_EQ_INT(n_cache_files(mp), 3);
  /* a run without num_proc now prefers... the single file exists too: it is complete */
  qv_dataset_unref(mp);
  mp = NULL;
  /* through a shuffle, in worker processes, kept in memory */
  OK(qv_dataset_shuffle(ds, 4, NULL, &s, &E));
  int64_t perm[50], wperm[50];
  OK(qv_permutation(4, 50, perm, &E));
  for (int i = 0; i < 50; i++) wperm[i] = 2 * perm[i];
  o.ignore_cache = false;
  o.keep_in_memory = true;
  OK(qv_dataset_map(s, &fn, &mo, &o, &mp, &E));
  QV_CHECK(column_equals(mp, "b", wperm, 50));
  QV_CHECK(same_a(mp, perm, 50));
  QV_CHECK_EQ_INT(n_cache_files(mp), 0);
  qv_dataset_unref(mp);
  /* a failing callback leaves no cache file (single and workers) */
  int64_t fail_at = 24;
  qv_map_fn bad = {"double_a", "2", double_a, &fail_at, NULL};
  qv_dataset *r = NULL;
  int before = count_files(dir, "cache-");
  mo.num_proc = 0;
  QV_CHECK(qv_dataset_map(ds, &bad, &mo, NULL, &r, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "boom at row 24") != NULL);
  mo.num_proc = 2;
  QV_CHECK(qv_dataset_map(ds, &bad, &mo, NULL, &r, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "map worker 0: ") != NULL);
  QV_CHECK(strstr(E.message, "boom at row 24") != NULL);
  QV_CHECK_EQ_INT(count_files(dir, "cache-"), before + 1); /* worker 1's file only */
  QV_CHECK_EQ_INT(count_files(dir, ".cache-"), 0);
  /* a worker killed mid-map: an error naming it, no file under its name, no
   * temporary; the next run reuses worker 0's file and redoes worker 1 */
  qv_map_fn killer = {"double_a", "3", die_in_worker_1, NULL, NULL};
  mo.num_proc = 2;
  mo.batch_size = 8;
  QV_CHECK(qv_dataset_map(ds, &killer, &mo, NULL, &r, &E) == QV_EIO);
  QV_CHECK(strstr(E.message, "map worker 1 died (signal 9)") != NULL);
  QV_CHECK_EQ_INT(count_files(dir, ".cache-"), 0);
  QV_CHECK_EQ_INT(count_files(dir, "cache-"), before + 2);
  {
    /* worker 0's file exists; worker 1's does not */
    char p0[600];
    qv_map_fn same = {"double_a", "3", double_a, NULL, NULL};
    qv_dataset *probe = NULL;
    qv_dataset_options mem;
    memset(&mem, 0, sizeof mem);
    mem.keep_in_memory = true;
    mo.num_proc = 0;
    OK(qv_dataset_map(ds, &same, &mo, &mem, &probe, &E)); /* fingerprint only */
    snprintf(p0, sizeof p0, "%s/cache-%s_00000_of_00002.arrow", dir, qv_dataset_fingerprint(probe));
    struct stat s0, s0b;
    QV_CHECK(stat(p0, &s0) == 0);
    snprintf(p0, sizeof p0, "%s/cache-%s_00001_of_00002.arrow", dir, qv_dataset_fingerprint(probe));
    QV_CHECK(access(p0, F_OK) != 0);
    mo.num_proc = 2;
    qv_dataset *redo = NULL;
    OK(qv_dataset_map(ds, &same, &mo, NULL, &redo, &E));
    QV_CHECK(column_equals(redo, "b", want, 50));
    QV_CHECK(access(p0, F_OK) == 0);
    snprintf(p0, sizeof p0, "%s/cache-%s_00000_of_00002.arrow", dir, qv_dataset_fingerprint(probe));
    QV_CHECK(stat(p0, &s0b) == 0 && s0b.st_mtim.tv_nsec == s0.st_mtim.tv_nsec &&
             s0b.st_ino == s0.st_ino);
    qv_dataset_unref(redo);
    qv_dataset_unref(probe);
  }
  /* rows change when every input column is removed */
  qv_map_fn ex = {"explode", "1", explode, NULL, NULL};
  const char *all[] = {"a", "t", "label"};
  memset(&mo, 0, sizeof mo);
  mo.batched = true;
  mo.batch_size = 7;
  mo.remove_columns = all;
  mo.n_remove_columns = 3;
  qv_dataset *x = NULL;
  OK(qv_dataset_map(ds, &ex, &mo, NULL, &x, &E));
  int64_t wx[100], nx = 0;
  for (int64_t i = 0; i < 50; i++)
    for (int64_t k = 0; k < i % 3; k++) wx[nx++] = i;
  QV_CHECK(same_a(x, wx, nx));
  QV_CHECK_EQ_INT(qv_dataset_num_columns(x), 1);
  mo.n_remove_columns = 1;
  QV_CHECK(qv_dataset_map(ds, &ex, &mo, NULL, &r, &E) == QV_EARG);
  QV_CHECK(strstr(E.message, "remove_columns") != NULL);
  /* unknown columns: datasets' messages */
  const char *nope[] = {"zz"};
  mo.remove_columns = nope;
  QV_CHECK(qv_dataset_map(ds, &ex, &mo, NULL, &r, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message,
                  "Column to remove ['zz'] not in the dataset. Current columns in the "
                  "dataset: ['a', 't', 'label']");
  mo.n_remove_columns = 0;
  mo.input_columns = nope;
  mo.n_input_columns = 1;
  QV_CHECK(qv_dataset_map(ds, &ex, &mo, NULL, &r, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message,
                  "Input column ['zz'] not in the dataset. Current columns in the "
                  "dataset: ['a', 't', 'label']");
  /* one row per call (not batched) */
  memset(&mo, 0, sizeof mo);
  qv_dataset *one = NULL;
  g_calls = 0;
  OK(qv_dataset_map(ds, &fn, &mo, NULL, &one, &E));
  QV_CHECK_EQ_INT(g_calls, 50);
  QV_CHECK(column_equals(one, "b", want, 50));
  qv_dataset_unref(one);
  qv_dataset_unref(x);
  qv_dataset_unref(s);
  qv_dataset_unref(m2);
  qv_dataset_unref(m);
  qv_dataset_unref(ds);
}

/* qv_dataset_map_exprs against values computed here, its fingerprint
 * against the one qv_dataset_map gives "quiver.map_set@1" with the params
 * built by hand (what `quiver map --set` computed before the function
 * moved into the library), and its errors. */
static void test_map_exprs(void) {
  const char *dir = subdir("map_exprs");
  qv_dataset *ds = file_dataset(dir, 50, 6), *m = NULL, *m2 = NULL, *mp = NULL, *r = NULL;
  const char *names[] = {"label", "b", "n"};
  const char *exprs[] = {"label * 10", "a * 2 + 1", "len(t)"};
  qv_map_options mo;
  memset(&mo, 0, sizeof mo);
  mo.batch_size = 8;
  OK(qv_dataset_map_exprs(ds, names, exprs, 3, &mo, NULL, &m, &E));
  QV_CHECK_EQ_INT(qv_dataset_num_columns(m), 5);
  const char *order[] = {"a", "t", "label", "b", "n"};
  for (int32_t c = 0; c < 5; c++)
    QV_CHECK_EQ_STR(qv_schema_field(qv_dataset_schema(m), c)->name, order[c]);
  int64_t id[50], lab[50], b[50], n[50];
  for (int i = 0; i < 50; i++) {
    char tx[16];
    id[i] = i;
    lab[i] = 10 * (i % 3);
    b[i] = 2 * i + 1;
    n[i] = snprintf(tx, sizeof tx, "r%d", i);
  }
  QV_CHECK(same_a(m, id, 50));
  QV_CHECK(column_equals(m, "label", lab, 50));
  QV_CHECK(column_equals(m, "b", b, 50));
  QV_CHECK(column_equals(m, "n", n, 50));
  /* the fingerprint: map_set@1 with params {set: [[NAME, canonical]...]} */
  {
    qv_fingerprint_args *p = NULL, *a = NULL;
    const char *canon[] = {"(label * 10)", "((a * 2) + 1)", "len(t)"};
    OK(qv_fingerprint_args_new(&p, &E));
    qv_fingerprint_arg_begin_list(p, "set", &E);
    for (int i = 0; i < 3; i++) {
      qv_fingerprint_arg_begin_list(p, NULL, &E);
      qv_fingerprint_arg_str(p, NULL, names[i], &E);
      qv_fingerprint_arg_str(p, NULL, canon[i], &E);
      qv_fingerprint_arg_end(p, &E);
    }
    OK(qv_fingerprint_arg_end(p, &E));
    char digest[QV_FINGERPRINT_SIZE], want[QV_FINGERPRINT_SIZE];
    OK(qv_ds_args_digest(p, digest, &E));
    OK(qv_fingerprint_args_new(&a, &E));
    qv_fingerprint_arg_bool(a, "batched", true, &E);
    qv_fingerprint_arg_int(a, "batch_size", 8, &E);
    qv_fingerprint_arg_str(a, "params", digest, &E);
    OK(qv_fingerprint_update(qv_dataset_fingerprint(ds), "quiver.map_set@1", a, want, &E));
    QV_CHECK_EQ_STR(qv_dataset_fingerprint(m), want);
    qv_fingerprint_args_free(p);
    qv_fingerprint_args_free(a);
  }
  /* spacing and parentheses do not matter; the cache file is reused */
  const char *exprs2[] = {"(label)*10", " a*2 + (1)", "len( t )"};
  OK(qv_dataset_map_exprs(ds, names, exprs2, 3, &mo, NULL, &m2, &E));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(m2), qv_dataset_fingerprint(m));
  /* worker processes and remove_columns */
  const char *rm[] = {"t"};
  mo.num_proc = 2;
  mo.remove_columns = rm;
  mo.n_remove_columns = 1;
  qv_dataset_options mem;
  memset(&mem, 0, sizeof mem);
  mem.keep_in_memory = true;
  /* in memory, the workers' results go through a private directory in
   * $TMPDIR, named as atomic temporaries are: what a dead run left there
   * is reclaimed, and nothing is left after the call */
  const char *scratch = subdir("map-scratch");
  char leftover[400];
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, NULL, 0);
  snprintf(leftover, sizeof leftover, "%s/.quiver-map.tmp-quiver-%d-1-abcdef", scratch, (int)gone);
  QV_REQUIRE(mkdir(leftover, 0777) == 0);
  const char *saved = getenv("TMPDIR");
  char *saved_copy = saved ? strdup(saved) : NULL;
  setenv("TMPDIR", scratch, 1);
  OK(qv_dataset_map_exprs(ds, names, exprs, 3, &mo, &mem, &mp, &E));
  if (saved_copy) setenv("TMPDIR", saved_copy, 1);
  else unsetenv("TMPDIR");
  free(saved_copy);
  QV_CHECK_EQ_INT(count_files(scratch, ".quiver-map"), 0);
  QV_CHECK_EQ_INT(qv_dataset_num_columns(mp), 4);
  QV_CHECK(qv_dataset_column_index(mp, "t") < 0);
  QV_CHECK(column_equals(mp, "b", b, 50));
  QV_CHECK(column_equals(mp, "label", lab, 50));
  QV_CHECK(strcmp(qv_dataset_fingerprint(mp), qv_dataset_fingerprint(m)) != 0);
  mo.num_proc = 0;
  mo.n_remove_columns = 0;
  /* errors */
  const char *bad_col[] = {"label", "a", "zz + 1"};
  QV_CHECK(qv_dataset_map_exprs(ds, names, bad_col, 3, &mo, NULL, &r, &E) == QV_EARG);
  QV_CHECK(strstr(E.message, "set n: ") == E.message);
  QV_CHECK(strstr(E.message, "unknown column 'zz'") != NULL);
  const char *bad_type[] = {"t + 1"};
  QV_CHECK(qv_dataset_map_exprs(ds, names, bad_type, 1, &mo, NULL, &r, &E) == QV_EARG);
  QV_CHECK(strstr(E.message, "set label: ") == E.message);
  QV_CHECK(strstr(E.message, "cannot apply '+'") != NULL);
  const char *bad_syntax[] = {"a *"};
  QV_CHECK(qv_dataset_map_exprs(ds, names, bad_syntax, 1, &mo, NULL, &r, &E) == QV_EARG);
  QV_CHECK(strstr(E.message, "expected an expression after '*'") != NULL);
  const char *twice[] = {"b", "b"};
  QV_CHECK(qv_dataset_map_exprs(ds, twice, exprs, 2, &mo, NULL, &r, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message, "map: column 'b' is set twice");
  QV_CHECK(qv_dataset_map_exprs(ds, names, exprs, 0, &mo, NULL, &r, &E) == QV_EARG);
  /* an evaluation error (overflow) keeps its status and leaves no file */
  int before = count_files(dir, "cache-");
  const char *ovf[] = {"a * 9223372036854775807"};
  QV_CHECK(qv_dataset_map_exprs(ds, names, ovf, 1, &mo, NULL, &r, &E) == QV_ERANGE);
  QV_CHECK(strstr(E.message, "set label: ") != NULL);
  QV_CHECK(strstr(E.message, "integer overflow") != NULL);
  QV_CHECK_EQ_INT(count_files(dir, "cache-"), before);
  QV_CHECK_EQ_INT(count_files(dir, ".cache-"), 0);
  /* an empty dataset: expressions still checked; returned as map does */
  qv_dataset *empty = memory_dataset(0, 4), *e = NULL;
  QV_CHECK(qv_dataset_map_exprs(empty, names, bad_col, 3, &mo, NULL, &r, &E) == QV_EARG);
  mo.remove_columns = rm;
  mo.n_remove_columns = 1;
  OK(qv_dataset_map_exprs(empty, names, exprs, 3, &mo, NULL, &e, &E));
  QV_CHECK_EQ_INT(qv_dataset_num_rows(e), 0);
  QV_CHECK_EQ_INT(qv_dataset_num_columns(e), 2);
  qv_dataset_unref(e);
  qv_dataset_unref(empty);
  qv_dataset_unref(mp);
  qv_dataset_unref(m2);
  qv_dataset_unref(m);
  qv_dataset_unref(ds);
}

static void test_sort_and_unique(void) {
  const char *dir = subdir("sort");
  qv_dataset *ds = file_dataset(dir, 30, 4), *s = NULL, *sorted = NULL, *again = NULL;
  /* by label descending, then a ascending (stable), through a shuffle */
  OK(qv_dataset_shuffle(ds, 5, NULL, &s, &E));
  const char *cols[] = {"label", "a"};
  bool desc[] = {true, false};
  OK(qv_dataset_sort(s, cols, 2, desc, QV_NULLS_AT_END, NULL, &sorted, &E));
  int64_t want[30], k = 0;
  for (int64_t l = 2; l >= 0; l--)
    for (int64_t a = 0; a < 30; a++)
      if (a % 3 == l) want[k++] = a;
  QV_CHECK(same_a(sorted, want, 30));
  QV_CHECK_EQ_INT(n_cache_files(sorted), 2); /* data + the sorted mapping */
  char path[400];
  snprintf(path, sizeof path, "%s/cache-%s.arrow", dir, qv_dataset_fingerprint(sorted));
  QV_CHECK(access(path, F_OK) == 0);
  OK(qv_dataset_sort(s, cols, 2, desc, QV_NULLS_AT_END, NULL, &again, &E));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(again), qv_dataset_fingerprint(sorted));
  QV_CHECK(same_a(again, want, 30));
  /* stability: sorting by label alone keeps the shuffled order inside a label */
  qv_dataset *by_label = NULL;
  OK(qv_dataset_sort(s, cols, 1, NULL, QV_NULLS_AT_END, NULL, &by_label, &E));
  int64_t perm[30];
  OK(qv_permutation(5, 30, perm, &E));
  k = 0;
  for (int64_t l = 0; l < 3; l++)
    for (int i = 0; i < 30; i++)
      if (perm[i] % 3 == l) want[k++] = perm[i];
  QV_CHECK(same_a(by_label, want, 30));
  qv_dataset *bad = NULL;
  const char *nope[] = {"nope"};
  QV_CHECK(qv_dataset_sort(s, nope, 1, NULL, QV_NULLS_AT_END, NULL, &bad, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message,
                  "Column 'nope' not found in the dataset. Please provide a column "
                  "selected in: ['a', 't', 'label']");
  /* unique: data order when the mapping is a permutation, mapped order otherwise */
  qv_array *u = NULL;
  OK(qv_dataset_unique(s, "label", &u, &E));
  QV_REQUIRE(u != NULL);
  QV_CHECK_EQ_INT(u->length, 3);
  QV_CHECK_EQ_INT(((int64_t *)u->buffers[1]->data)[u->offset], 0);
  qv_array_unref(u);
  qv_dataset *f = NULL;
  OK(qv_dataset_filter(sorted, "label != 2", NULL, &f, &E));
  OK(qv_dataset_unique(f, "label", &u, &E));
  QV_CHECK_EQ_INT(u->length, 2);
  QV_CHECK_EQ_INT(((int64_t *)u->buffers[1]->data)[u->offset], 1);
  QV_CHECK_EQ_INT(((int64_t *)u->buffers[1]->data)[u->offset + 1], 0);
  qv_array_unref(u);
  QV_CHECK(qv_dataset_unique(f, "nope", &u, &E) == QV_EARG);
  qv_dataset_unref(f);
  qv_dataset_unref(by_label);
  qv_dataset_unref(again);
  qv_dataset_unref(sorted);
  qv_dataset_unref(s);
  qv_dataset_unref(ds);
}

/* A dataset of one Image column (struct<bytes: binary, path: string>). */
static qv_dataset *image_dataset(int64_t n, const char *const *bytes, const int64_t *lens,
                                 const char *const *paths) {
  qv_type *img = tb_type(QV_STRUCT);
  tb_child(img, "bytes", tb_type(QV_BINARY));
  tb_child(img, "path", tb_type(QV_STRING));
  qv_type *st = tb_child(tb_type(QV_STRUCT), "img", qv_type_ref(img));
  qv_array *ch[2] = {tb_str(QV_BINARY, n, bytes, lens), tb_str(QV_STRING, n, paths, NULL)};
  qv_array *col = tb_array_nc(img, n, 0, 1, (qv_buffer *[]){NULL}, 2, ch);
  qv_array *batch = tb_array_nc(qv_type_ref(st), n, 0, 1, (qv_buffer *[]){NULL}, 1, &col);
  qv_schema *s = qv_schema_new(st);
  qv_table *t = NULL;
  qv_dataset *plain = NULL, *ds = NULL;
  qv_hf_feature *f = NULL;
  const char *json = "{\"img\": {\"decode\": true, \"_type\": \"Image\"}}";
  if (qv_table_from_batches(s, &batch, 1, &t, &E) != QV_OK ||
      qv_dataset_from_table(t, NULL, &plain, &E) != QV_OK ||
      qv_hf_features_parse(json, (int64_t)strlen(json), &f, &E) != QV_OK ||
      qv_dataset_cast(plain, f, &ds, &E) != QV_OK) {
    fprintf(stderr, "image_dataset: %s\n", E.message);
    abort();
  }
  qv_hf_feature_free(f);
  qv_dataset_unref(plain);
  qv_table_unref(t);
  qv_schema_unref(s);
  qv_array_unref(batch);
  return ds;
}

static void test_save_media_estimate(void) {
  /* datasets' _estimate_nbytes with media columns: the path strings' bytes
   * are subtracted, files referenced by path only are added. */
  const char *dir = subdir("media");
  char out[400];
  snprintf(out, sizeof out, "%s/saved", dir);
  qv_save_options so;
  memset(&so, 0, sizeof so);
  int64_t shards = 0;
  /* 100 images of 100 bytes, no path: nbytes 10826 = bytes (13 validity +
   * 400 offsets (pyarrow counts one per element) + 10000) + path (13 + 400);
   * estimate 10826 - 413 = 10413. */
  const char *b[100], *p[100];
  int64_t lens[100];
  static const char blob[100] = "0123456789";
  for (int i = 0; i < 100; i++) {
    b[i] = blob;
    lens[i] = 100;
    p[i] = NULL;
  }
  qv_dataset *ds = image_dataset(100, b, lens, p);
  so.max_shard_size = 10414;
  OK(qv_dataset_save_to_disk(ds, out, &so, &shards, &E));
  QV_CHECK_EQ_INT(shards, 1);
  so.max_shard_size = 10413;
  OK(qv_dataset_save_to_disk(ds, out, &so, &shards, &E));
  QV_CHECK_EQ_INT(shards, 2);
  qv_dataset_unref(ds);
  /* 10 images stored by path only, a file of 5000 bytes each: estimate
   * 42 (bytes: 2 validity + 40 offsets) + 10 * 5000. */
  char file[400];
  snprintf(file, sizeof file, "%s/f.bin", dir);
  FILE *fp = fopen(file, "wb");
  QV_CHECK(fp != NULL);
  for (int i = 0; fp && i < 5000; i++) fputc('x', fp);
  if (fp) fclose(fp);
  for (int i = 0; i < 10; i++) {
    b[i] = NULL;
    p[i] = file;
  }
  ds = image_dataset(10, b, NULL, p);
  so.max_shard_size = 50043;
  OK(qv_dataset_save_to_disk(ds, out, &so, &shards, &E));
  QV_CHECK_EQ_INT(shards, 1);
  so.max_shard_size = 50042;
  OK(qv_dataset_save_to_disk(ds, out, &so, &shards, &E));
  QV_CHECK_EQ_INT(shards, 2);
  /* through a mapping, one-row slices are visited: 10 * (1 validity + 4
   * offset + L) path bytes instead of 2 + 40 + 10 L */
  qv_dataset *sh = NULL;
  OK(qv_dataset_shuffle(ds, 3, NULL, &sh, &E));
  size_t L = strlen(file);
  int64_t est = 42 + 2 + 40 + 10 * (int64_t)L + 10 * 5000 - 10 * (5 + (int64_t)L);
  so.max_shard_size = est + 1;
  OK(qv_dataset_save_to_disk(sh, out, &so, &shards, &E));
  QV_CHECK_EQ_INT(shards, 1);
  so.max_shard_size = est;
  OK(qv_dataset_save_to_disk(sh, out, &so, &shards, &E));
  QV_CHECK_EQ_INT(shards, 2);
  qv_dataset_unref(sh);
  qv_dataset_unref(ds);
}

/* Write a bare indices file (no huggingface metadata) of `n` values. */
static void write_indices(const char *path, const uint64_t *v, int64_t n, const uint8_t *validity,
                          int64_t null_count) {
  qv_type *st = tb_type(QV_STRUCT);
  tb_child(st, "indices", tb_type(QV_UINT64));
  qv_schema *s = qv_schema_new(st);
  qv_array *ch = tb_prim_raw(QV_UINT64, n, null_count, validity, validity ? 1 : 0, v, n * 8);
  qv_array *b = tb_array_nc(qv_type_ref(s->type), n, 0, 1, (qv_buffer *[]){NULL}, 1, &ch);
  qv_table *t = NULL;
  if (qv_table_from_batches(s, &b, 1, &t, &E) != QV_OK) abort();
  qv_write_options wo;
  memset(&wo, 0, sizeof wo);
  wo.format = QV_FORMAT_STREAM;
  if (qv_table_write_path(t, path, &wo, &E) != QV_OK) abort();
  qv_table_unref(t);
  qv_array_unref(b);
  qv_schema_unref(s);
}

/* Indices mapping files: composed with given data, resolved among the
 * datasets of their directory, and every error. */
static void test_indices_file(void) {
  const char *dir = subdir("indices");
  qv_dataset *ds = file_dataset(dir, 100, 9), *s = NULL, *v = NULL, *o = NULL;
  int64_t perm[100];
  OK(qv_permutation(42, 100, perm, &E));
  OK(qv_dataset_shuffle(ds, 42, NULL, &s, &E));
  char path[400], want[1200];
  snprintf(path, sizeof path, "%s/cache-%s.arrow", dir, qv_dataset_fingerprint(s));
  /* given the data: the rows and the fingerprint of the shuffled dataset */
  OK(qv_dataset_with_indices_file(ds, path, &v, &E));
  QV_CHECK(same_a(v, perm, 100));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(v), qv_dataset_fingerprint(s));
  /* opened alone: the only dataset of the directory is its data */
  OK(qv_dataset_open(path, NULL, &o, &E));
  QV_CHECK(same_a(o, perm, 100));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(o), qv_dataset_fingerprint(s));
  qv_dataset_unref(o);
  o = NULL;
  qv_hf_dir *d = NULL;
  int64_t *idx = NULL, n = 0, max = 0;
  OK(qv_hf_dir_open(dir, &d, &E));
  OK(qv_dataset_indices_candidates(d, path, &idx, &n, &max, &E));
  QV_CHECK(n == 1 && max == 99 && d->n_sources == 1);
  QV_CHECK_EQ_STR(d->sources[idx[0]].name, "data.arrow");
  free(idx);
  qv_hf_dir_free(d);
  /* a second dataset of 100 rows makes it ambiguous */
  char path2[400], cmd[1000];
  snprintf(path2, sizeof path2, "%s/data.arrow", dir);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s/other.arrow'", path2, dir);
  QV_REQUIRE(system(cmd) == 0);
  QV_CHECK(qv_dataset_open(path, NULL, &o, &E) == QV_EINVAL);
  snprintf(want, sizeof want,
           "%s: cannot tell which data this indices mapping indexes: ambiguous: 2 datasets in "
           "%s have more than 99 rows: file 'data.arrow' (100 rows), file 'other.arrow' (100 "
           "rows); name the data it indexes",
           path, dir);
  QV_CHECK_EQ_STR(E.message, want);
  /* the same failure, typed: the candidates with their rows */
  qv_dataset_choice ch;
  memset(&ch, 0, sizeof ch);
  qv_dataset_open_options oo = {NULL, NULL, &ch};
  QV_CHECK(qv_dataset_open_ex(path, &oo, &o, &E) == QV_EINVAL);
  QV_CHECK(ch.kind == QV_CHOICE_DATA && ch.container == QV_PATH_INDICES && ch.ambiguous);
  QV_CHECK(ch.n == 2 && ch.max_index == 99 && ch.rows[0] == 100 && ch.rows[1] == 100);
  QV_CHECK_EQ_STR(ch.names[0], "data.arrow");
  QV_CHECK_EQ_STR(ch.names[1], "other.arrow");
  QV_CHECK_EQ_STR(ch.path, path);
  QV_CHECK_EQ_STR(ch.dir, dir);
  /* ... and named, the data composes (the classified file reused) */
  oo.data = path2;
  OK(qv_dataset_open_ex(path, &oo, &o, &E));
  QV_CHECK(ch.kind == QV_CHOICE_NONE && same_a(o, perm, 100));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(o), qv_dataset_fingerprint(s));
  qv_dataset_unref(o);
  o = NULL;
  qv_dataset_choice_reset(&ch);
  /* ... and a smaller one is no candidate */
  snprintf(cmd, sizeof cmd, "rm '%s/other.arrow'", dir);
  QV_REQUIRE(system(cmd) == 0);
  qv_dataset *small = NULL;
  OK(qv_dataset_select_range(ds, 0, 10, NULL, &small, &E));
  snprintf(path2, sizeof path2, "%s/small", dir);
  OK(qv_dataset_save_to_disk(small, path2, NULL, NULL, &E));
  snprintf(cmd, sizeof cmd, "mv '%s/small/data-00000-of-00001.arrow' '%s/small.arrow'", dir, dir);
  QV_REQUIRE(system(cmd) == 0);
  OK(qv_dataset_open(path, NULL, &o, &E));
  QV_CHECK(same_a(o, perm, 100));
  qv_dataset_unref(o);
  o = NULL;
  /* out of range for the given data: file, row, value and bound */
  qv_dataset *sm = NULL;
  snprintf(path2, sizeof path2, "%s/small.arrow", dir);
  OK(qv_dataset_open(path2, NULL, &sm, &E));
  QV_CHECK(qv_dataset_with_indices_file(sm, path, &o, &E) == QV_EINVAL);
  int64_t r = 0;
  while (perm[r] < 10) r++;
  snprintf(want, sizeof want,
           "%s: row %lld holds index %lld, outside the data's 10 rows (indices must be < 10)", path,
           (long long)r, (long long)perm[r]);
  QV_CHECK_EQ_STR(E.message, want);
  /* not an indices file; data that has a mapping already */
  snprintf(path2, sizeof path2, "%s/data.arrow", dir);
  QV_CHECK(qv_dataset_with_indices_file(ds, path2, &o, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "not an indices mapping: expected one uint64 column 'indices'") !=
           NULL);
  QV_CHECK(qv_dataset_with_indices_file(s, path, &o, &E) == QV_EARG);
  QV_CHECK(strstr(E.message, "already has an indices mapping") != NULL);
  /* a mapping without metadata: fingerprint derived, deterministic */
  uint64_t vals[4] = {3, 1, 99, 0};
  snprintf(path2, sizeof path2, "%s/cache-bare.arrow", dir);
  write_indices(path2, vals, 4, NULL, 0);
  qv_dataset *b1 = NULL, *b2 = NULL;
  OK(qv_dataset_with_indices_file(ds, path2, &b1, &E));
  OK(qv_dataset_open(path2, NULL, &b2, &E));
  int64_t wantv[4] = {3, 1, 99, 0};
  QV_CHECK(same_a(b1, wantv, 4) && same_a(b2, wantv, 4));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(b1), qv_dataset_fingerprint(b2));
  QV_CHECK(strcmp(qv_dataset_fingerprint(b1), qv_dataset_fingerprint(ds)) != 0);
  /* nulls are refused, naming the row */
  uint8_t valid = 0x0d; /* rows 0, 2, 3 */
  snprintf(path2, sizeof path2, "%s/cache-null.arrow", dir);
  write_indices(path2, vals, 4, &valid, 1);
  QV_CHECK(qv_dataset_with_indices_file(ds, path2, &o, &E) == QV_EINVAL);
  snprintf(want, sizeof want, "%s: indices mapping row 1 is null", path2);
  QV_CHECK_EQ_STR(E.message, want);
  unlink(path2);
  /* no dataset large enough */
  uint64_t big[2] = {0, 1000};
  snprintf(path2, sizeof path2, "%s/cache-big.arrow", dir);
  write_indices(path2, big, 2, NULL, 0);
  QV_CHECK(qv_dataset_open(path2, NULL, &o, &E) == QV_EINVAL);
  snprintf(want, sizeof want,
           "%s: cannot tell which data this indices mapping indexes: no dataset in %s has more "
           "than 1000 rows (file 'data.arrow' (100 rows), file 'small.arrow' (10 rows)); name "
           "the data it indexes",
           path2, dir);
  QV_CHECK_EQ_STR(E.message, want);
  qv_dataset_unref(b1);
  qv_dataset_unref(b2);
  qv_dataset_unref(sm);
  qv_dataset_unref(small);
  qv_dataset_unref(v);
  qv_dataset_unref(s);
  qv_dataset_unref(ds);
}

/* Write `n` bytes to dir/name; returns the path (static, one of 4). */
static const char *put_file(const char *dir, const char *name, const char *bytes, size_t n) {
  static char paths[4][400];
  static int k;
  char *p = paths[k++ % 4];
  snprintf(p, 400, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  if (f == NULL || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) abort();
  return p;
}

/* One classification for every kind of path: sniffing by magic bytes
 * (with the formats recognised but not read), classification handing
 * the opened table / scanned mapping / listed directory down, typed
 * split choices, and a DatasetDict with a missing split. */
static void test_open_paths(void) {
  const char *dir = subdir("paths");
  qv_dataset *ds = file_dataset(dir, 30, 7), *o = NULL;
  char path[400], want[1200];
  qv_path_kind k = QV_PATH_JSON;
  snprintf(path, sizeof path, "%s/data.arrow", dir);
  OK(qv_path_sniff(path, &k, &E));
  QV_CHECK(k == QV_PATH_ARROW_STREAM);
  /* the same rows in the file format */
  char fpath[400];
  snprintf(fpath, sizeof fpath, "%s/file.arrow", dir);
  qv_write_options wo;
  memset(&wo, 0, sizeof wo);
  wo.format = QV_FORMAT_FILE;
  OK(qv_table_write_path(qv_dataset_data(ds), fpath, &wo, &E));
  OK(qv_path_sniff(fpath, &k, &E));
  QV_CHECK(k == QV_PATH_ARROW_FILE);
  /* what is not Arrow is named; Parquet is sniffed and read (a bad footer
   * is named); CSV and JSON Lines are read (src/formats) */
  const char *p = put_file(dir, "x.parquet", "PAR1\x15\x04\x15\x10PAR1", 12);
  QV_CHECK(qv_path_sniff(p, &k, &E) == QV_OK && k == QV_PATH_PARQUET);
  snprintf(want, sizeof want,
           "%s: footer length 269812757 runs past the start of the file (12 bytes)", p);
  QV_CHECK(qv_dataset_open(p, NULL, &o, &E) == QV_EINVAL);
  QV_CHECK_EQ_STR(E.message, want);
  p = put_file(dir, "x.csv", "a,b\n1,2\n", 8);
  QV_CHECK(qv_path_sniff(p, &k, &E) == QV_OK && k == QV_PATH_CSV);
  OK(qv_dataset_open(p, NULL, &o, &E));
  QV_CHECK(qv_dataset_num_rows(o) == 1);
  qv_dataset_unref(o);
  o = NULL;
  p = put_file(dir, "x.jsonl", " {\"a\": 1}\n", 10);
  QV_CHECK(qv_path_sniff(p, &k, &E) == QV_OK && k == QV_PATH_JSON);
  p = put_file(dir, "sniffed", "a;b\n1;2\n", 8);
  QV_CHECK(qv_path_sniff(p, &k, &E) == QV_OK && k == QV_PATH_CSV);
  p = put_file(dir, "junk", "not an arrow file at all", 24);
  QV_CHECK(qv_dataset_open(p, NULL, &o, &E) == QV_EINVAL);
  snprintf(
      want, sizeof want,
      "%s: not an Arrow, Parquet, CSV or JSON file: found 6e 6f 74 20 61 6e 20 61 (\"not an a\")",
      p);
  QV_CHECK_EQ_STR(E.message, want);
  p = put_file(dir, "bin", "\x01\x02\x03\xa0\xb0\xc0\xd0\xe0\xf0", 9);
  QV_CHECK(qv_path_sniff(p, &k, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "found 01 02 03 a0 b0 c0 d0 e0 (\"........\")") != NULL);
  p = put_file(dir, "empty", "", 0);
  QV_CHECK(qv_path_sniff(p, &k, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "the file is empty") != NULL);
  /* a pre-0.15 stream of only the end-of-stream marker is Arrow */
  p = put_file(dir, "old.stream", "\0\0\0\0", 4);
  OK(qv_path_sniff(p, &k, &E));
  QV_CHECK(k == QV_PATH_ARROW_STREAM);
  QV_CHECK(qv_path_sniff("/nonexistent/x.arrow", &k, &E) == QV_EIO);
  QV_CHECK_EQ_STR(E.message, "cannot open '/nonexistent/x.arrow': No such file or directory");
  /* classification: the file mapped once, handed to the open */
  qv_path_info info;
  OK(qv_path_classify(path, &info, &E));
  QV_CHECK(info.kind == QV_PATH_ARROW_STREAM && info.dir == NULL && info.table != NULL);
  QV_CHECK(qv_table_num_rows(info.table) == 30);
  OK(qv_dataset_open_classified(&info, NULL, &o, &E));
  QV_CHECK(qv_dataset_data(o) == info.table && qv_dataset_num_rows(o) == 30);
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(o), qv_dataset_fingerprint(ds));
  qv_dataset_unref(o);
  o = NULL;
  qv_dataset_open_options oo = {"train", NULL, NULL};
  QV_CHECK(qv_dataset_open_classified(&info, &oo, &o, &E) == QV_EARG);
  qv_path_info_reset(&info);
  QV_CHECK(info.table == NULL && info.path == NULL);
  /* an indices mapping: classified with its largest value */
  qv_dataset *sh = NULL;
  OK(qv_dataset_shuffle(ds, 5, NULL, &sh, &E));
  snprintf(path, sizeof path, "%s/cache-%s.arrow", dir, qv_dataset_fingerprint(sh));
  OK(qv_path_classify(path, &info, &E));
  QV_CHECK(info.kind == QV_PATH_INDICES && info.indices_max == 29);
  /* the directory holds data.arrow and file.arrow (30 rows each): which? */
  qv_dataset_choice ch;
  memset(&ch, 0, sizeof ch);
  oo.split = NULL;
  oo.choice = &ch;
  QV_CHECK(qv_dataset_open_classified(&info, &oo, &o, &E) == QV_EINVAL);
  QV_CHECK(ch.kind == QV_CHOICE_DATA && ch.ambiguous && ch.n == 2);
  QV_CHECK(strstr(E.message, "quiver:") == NULL && strstr(E.message, "--") == NULL);
  qv_dataset_choice_reset(&ch);
  QV_CHECK(ch.names == NULL && ch.n == 0);
  qv_path_info_reset(&info);
  /* a DatasetDict: the split to choose, typed */
  qv_hf_dir *dd = NULL;
  char dpath[400];
  snprintf(dpath, sizeof dpath, "%s/dict", dir);
  qv_dataset *parts[2] = {ds, sh};
  const char *names[2] = {"train", "test"};
  OK(qv_dataset_dict_save_to_disk(parts, names, 2, dpath, NULL, &E));
  OK(qv_path_sniff(dpath, &k, &E));
  QV_CHECK(k == QV_PATH_DATASET_DICT);
  /* the split's shard is mapped once, by the listing, and the open shares it */
  OK(qv_path_classify(dpath, &info, &E));
  QV_CHECK(info.kind == QV_PATH_DATASET_DICT && info.dir != NULL && info.table == NULL);
  QV_REQUIRE(info.dir->n_splits == 2 && info.dir->splits[0].n_files == 1);
  oo.split = "train";
  OK(qv_dataset_open_classified(&info, &oo, &o, &E));
  QV_CHECK(qv_dataset_data(o) == info.dir->splits[0].files[0].table);
  qv_dataset_unref(o);
  o = NULL;
  qv_path_info_reset(&info);
  oo.split = NULL;
  /* in a directory listing, data files stay mapped and cache-* files not */
  OK(qv_hf_dir_open(dir, &dd, &E));
  for (int64_t i = 0; i < dd->n_files; i++)
    QV_CHECK((dd->files[i].table == NULL) == (strncmp(dd->files[i].name, "cache-", 6) == 0));
  QV_CHECK(dd->n_files == 3); /* data.arrow, file.arrow, the shuffle's mapping */
  qv_hf_dir_free(dd);
  QV_CHECK(qv_dataset_open_ex(dpath, &oo, &o, &E) == QV_EARG);
  QV_CHECK(ch.kind == QV_CHOICE_SPLIT && ch.container == QV_PATH_DATASET_DICT && ch.n == 2 &&
           ch.wanted == NULL);
  QV_CHECK_EQ_STR(ch.names[0], "train");
  QV_CHECK_EQ_STR(ch.names[1], "test");
  snprintf(want, sizeof want, "%s: a DatasetDict: choose a split (splits: 'train', 'test')", dpath);
  QV_CHECK_EQ_STR(E.message, want);
  oo.split = "nope";
  QV_CHECK(qv_dataset_open_ex(dpath, &oo, &o, &E) == QV_EARG);
  QV_CHECK(ch.kind == QV_CHOICE_SPLIT && ch.wanted != NULL);
  QV_CHECK_EQ_STR(ch.wanted, "nope");
  /* one split's directory missing: the other opens, it fails naming it */
  char cmd[1000];
  snprintf(cmd, sizeof cmd, "rm -r '%s/test'", dpath);
  QV_REQUIRE(system(cmd) == 0);
  oo.split = "train";
  OK(qv_dataset_open_ex(dpath, &oo, &o, &E));
  QV_CHECK(ch.kind == QV_CHOICE_NONE && qv_dataset_num_rows(o) == 30);
  qv_dataset_unref(o);
  o = NULL;
  QV_CHECK(qv_dataset_open(dpath, "test", &o, &E) == QV_EINVAL);
  snprintf(want, sizeof want,
           "%s/test: split 'test' of %s/dataset_dict.json is missing (no such directory)", dpath,
           dpath);
  QV_CHECK_EQ_STR(E.message, want);
  /* ... and one split's data file missing: named too */
  snprintf(cmd, sizeof cmd, "rm '%s/train/data-00000-of-00001.arrow'", dpath);
  QV_REQUIRE(system(cmd) == 0);
  QV_CHECK(qv_dataset_open(dpath, "train", &o, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message,
                  "train/state.json: _data_files[0].filename "
                  "'data-00000-of-00001.arrow': no such file") != NULL);
  qv_dataset_choice_reset(&ch);
  /* save_to_disk with more shards than rows fails as datasets' does
   * (shard `rows` would start past the end), writing nothing */
  qv_save_options so;
  memset(&so, 0, sizeof so);
  so.num_shards = 31;
  snprintf(dpath, sizeof dpath, "%s/shards", dir);
  QV_CHECK(qv_dataset_save_to_disk(ds, dpath, &so, NULL, &E) == QV_ERANGE);
  QV_CHECK(strstr(E.message, "num_shards=31 is more than the dataset's 30 rows") != NULL);
  struct stat sb;
  QV_CHECK(stat(dpath, &sb) != 0);
  so.num_shards = 30;
  int64_t written = 0;
  OK(qv_dataset_save_to_disk(ds, dpath, &so, &written, &E));
  QV_CHECK(written == 30);
  qv_dataset *empty = NULL;
  OK(qv_dataset_select_range(ds, 0, 0, NULL, &empty, &E));
  so.num_shards = 2;
  snprintf(dpath, sizeof dpath, "%s/empty_ds", dir);
  OK(qv_dataset_save_to_disk(empty, dpath, &so, &written, &E));
  QV_CHECK(written == 2);
  qv_dataset_unref(empty);
  qv_dataset_unref(sh);
  qv_dataset_unref(ds);
}

/* qv_dataset_assemble_save (shards written elsewhere -> a save_to_disk
 * directory), qv_dataset_info_json and qv_dataset_with_info. */
static void test_assemble_save(void) {
  const char *dir = subdir("assemble");
  qv_dataset *ds = memory_dataset(50, 7), *few = NULL, *back = NULL, *wi = NULL;
  char src[400], src2[400], stage[400], out[400], other[400], sp[4][500];
  snprintf(src, sizeof src, "%s/src", dir);
  snprintf(src2, sizeof src2, "%s/src2", dir);
  snprintf(stage, sizeof stage, "%s/stage", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(other, sizeof other, "%s/other", dir);
  QV_REQUIRE(mkdir(stage, 0777) == 0 && mkdir(other, 0777) == 0);
  qv_save_options so;
  memset(&so, 0, sizeof so);
  so.num_shards = 3;
  OK(qv_dataset_save_to_disk(ds, src, &so, NULL, &E));
  const char *drop[] = {"t"};
  OK(qv_dataset_remove_columns(ds, drop, 1, &few, &E));
  so.num_shards = 1;
  OK(qv_dataset_save_to_disk(few, src2, &so, NULL, &E));
  for (int i = 0; i < 4; i++) {
    char from[500];
    if (i < 3) snprintf(from, sizeof from, "%s/data-%05d-of-00003.arrow", src, i);
    else snprintf(from, sizeof from, "%s/data-00000-of-00001.arrow", src2);
    snprintf(sp[i], sizeof sp[i], "%s/s%d.arrow", stage, i);
    QV_REQUIRE(rename(from, sp[i]) == 0);
  }
  const char *shards[4] = {sp[0], sp[1], sp[2], sp[3]};
  qv_assemble_options o;
  memset(&o, 0, sizeof o);
  /* refusals leave the shards where they are and no destination */
  QV_CHECK(qv_dataset_assemble_save(out, shards, 0, NULL, &E) == QV_EARG);
  QV_CHECK(qv_dataset_assemble_save(out, shards, 4, NULL, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "shard 3 has 2 columns where shard 0 has 3") != NULL);
  o.fingerprint = "../x";
  QV_CHECK(qv_dataset_assemble_save(out, shards, 3, &o, &E) != QV_OK);
  o.fingerprint = NULL;
  o.features_json = "{\"a\": {\"dtype\": \"int32\", \"_type\": \"Value\"}}";
  QV_CHECK(qv_dataset_assemble_save(out, shards, 3, &o, &E) == QV_EINVAL);
  char keep[500];
  snprintf(keep, sizeof keep, "%s/keep", other);
  OK(qv_atomic_write_file(keep, "mine", 4, &E));
  QV_CHECK(qv_dataset_assemble_save(other, shards, 3, NULL, &E) == QV_EARG);
  QV_CHECK(access(keep, F_OK) == 0);
  struct stat st;
  QV_CHECK(stat(out, &st) != 0);
  for (int i = 0; i < 4; i++) QV_CHECK(access(sp[i], F_OK) == 0);
  /* the directory: shards moved in order, fingerprint and split given */
  o.features_json = NULL;
  o.fingerprint = "0123456789abcdef";
  o.split = "train";
  OK(qv_dataset_assemble_save(out, shards, 3, &o, &E));
  for (int i = 0; i < 3; i++) QV_CHECK(access(sp[i], F_OK) != 0);
  QV_CHECK_EQ_INT(count_files(out, "data-"), 3);
  OK(qv_dataset_open(out, NULL, &back, &E));
  int64_t want[50];
  for (int i = 0; i < 50; i++) want[i] = i;
  QV_CHECK(same_a(back, want, 50));
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(back), "0123456789abcdef");
  QV_CHECK(qv_dataset_split(back) != NULL && strcmp(qv_dataset_split(back), "train") == 0);
  /* info: dataset_info.json text, and a copy carrying another one */
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  OK(qv_dataset_info_json(back, &sb, &E));
  QV_CHECK(strstr(qv_strbuf_cstr(&sb), "\"features\"") != NULL);
  QV_CHECK(strstr(qv_strbuf_cstr(&sb), "\"description\": \"\"") != NULL);
  const char *info = "{\"description\": \"d\", \"builder_name\": \"b\"}";
  OK(qv_dataset_with_info(back, info, (int64_t)strlen(info), &wi, &E));
  qv_strbuf_clear(&sb);
  OK(qv_dataset_info_json(wi, &sb, &E));
  QV_CHECK(strstr(qv_strbuf_cstr(&sb), "\"description\": \"d\"") != NULL);
  QV_CHECK(strstr(qv_strbuf_cstr(&sb), "\"builder_name\": \"b\"") != NULL);
  QV_CHECK(strstr(qv_strbuf_cstr(&sb), "\"features\"") != NULL);
  QV_CHECK_EQ_STR(qv_dataset_fingerprint(wi), "0123456789abcdef");
  qv_dataset *bad = NULL;
  QV_CHECK(qv_dataset_with_info(back, "[1]", 3, &bad, &E) != QV_OK && bad == NULL);
  qv_strbuf_reset(&sb);
  /* over an existing dataset directory: replaced whole */
  const char *last[] = {sp[3]};
  OK(qv_dataset_assemble_save(out, last, 1, NULL, &E));
  QV_CHECK_EQ_INT(count_files(out, "data-"), 1);
  qv_dataset_unref(wi);
  qv_dataset_unref(back);
  OK(qv_dataset_open(out, NULL, &back, &E));
  QV_CHECK_EQ_INT(qv_dataset_num_columns(back), 2);
  qv_dataset_unref(back);
  qv_dataset_unref(few);
  qv_dataset_unref(ds);
}

int main(void) {
  QV_RUN(test_open_and_fingerprints);
  QV_RUN(test_select);
  QV_RUN(test_shuffle_and_cache);
  QV_RUN(test_filter);
  QV_RUN(test_filter_fn);
  QV_RUN(test_shard_and_split_by_node);
  QV_RUN(test_train_test_split);
  QV_RUN(test_flatten_and_save);
  QV_RUN(test_concatenate);
  QV_RUN(test_columns);
  QV_RUN(test_iteration);
  QV_RUN(test_map);
  QV_RUN(test_map_exprs);
  QV_RUN(test_sort_and_unique);
  QV_RUN(test_save_media_estimate);
  QV_RUN(test_indices_file);
  QV_RUN(test_open_paths);
  QV_RUN(test_assemble_save);
  cleanup();
  return QV_TEST_END();
}
