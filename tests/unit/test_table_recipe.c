/* test_table_recipe.c — table recipes: every kind of table (in-memory,
 * mapped with chains of every replay step, vertical and horizontal
 * concatenations mixing both) serialised and rebuilt, in this process and
 * in a freshly exec'ed child (this binary re-run with --child: it rebuilds
 * the table from the recipe file and writes it out as an IPC stream, which
 * the parent compares); recipe size; changed, replaced and missing files
 * (QV_ECHANGED with the exact text); corrupt recipes (exact messages,
 * every truncation, random byte flips: errors, never crashes). */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "table/table_internal.h"
#include "table_test_util.h"

static char self_exe[4096];

/* Child: argv = [exe, --child, recipe-file, out-file]. */
static int child_main(const char *recipe_path, const char *out_path) {
  FILE *f = fopen(recipe_path, "rb");
  if (f == NULL) return 2;
  static uint8_t buf[1 << 22];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  qv_table *t = NULL;
  qv_error err;
  qv_status st = qv_table_from_recipe(buf, (int64_t)n, &t, &err);
  if (st != QV_OK) {
    fprintf(stderr, "child: %s\n", err.message);
    return 10 + (int)st;
  }
  qv_write_options wo = {0};
  wo.format = QV_FORMAT_STREAM;
  wo.max_batch_rows = -1;
  st = qv_table_write_path(t, out_path, &wo, &err);
  if (st != QV_OK) fprintf(stderr, "child: write: %s\n", err.message);
  char **paths = NULL;
  int64_t np = 0;
  QV_CHECK(qv_table_cache_files(t, &paths, &np, &err) == QV_OK);
  qv_table_free_paths(paths, np);
  qv_table_unref(t);
  return st == QV_OK ? 0 : 3;
}

/* Run the child on a recipe; returns the table it wrote (NULL on failure). */
static qv_table *via_child(const uint8_t *recipe, int64_t len) {
  char rpath[300], opath[300];
  snprintf(rpath, sizeof rpath, "%s/recipe-%d.bin", rt_tmpdir(), rt_files);
  snprintf(opath, sizeof opath, "%s/child-%d.arrow", rt_tmpdir(), rt_files++);
  FILE *f = fopen(rpath, "wb");
  fwrite(recipe, 1, (size_t)len, f);
  fclose(f);
  pid_t pid = fork();
  if (pid == 0) {
    execl(self_exe, self_exe, "--child", rpath, opath, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "child failed: status %d\n", status);
    return NULL;
  }
  qv_table *t = NULL;
  RT_OK(qv_table_open_path(opath, NULL, &t, &E));
  return t;
}

/* Round trip a table in-process and through a child; checks equality,
 * kinds and cache files. Returns the recipe length. */
static int64_t round_trip(qv_table *t, const char *what) {
  uint8_t *rec = NULL;
  int64_t len = 0;
  RT_OK(qv_table_recipe(t, &rec, &len, &E));
  if (rec == NULL) return -1;
  qv_table *back = NULL;
  RT_OK(qv_table_from_recipe(rec, len, &back, &E));
  if (back != NULL) {
    if (!qv_table_equals(t, back, &E)) {
      fprintf(stderr, "%s: in-process: %s\n", what, E.message);
      QV_CHECK(false);
    }
    QV_CHECK_EQ_INT(qv_table_get_kind(back), qv_table_get_kind(t));
    QV_CHECK_EQ_INT(qv_table_num_replays(back), qv_table_num_replays(t));
    QV_CHECK(qv_schema_equals(qv_table_schema(back), qv_table_schema(t), true) ||
             qv_table_get_kind(t) == QV_TABLE_CONCAT);
    char **p1 = NULL, **p2 = NULL;
    int64_t n1 = 0, n2 = 0;
    QV_CHECK(qv_table_cache_files(t, &p1, &n1, NULL) == QV_OK);
    QV_CHECK(qv_table_cache_files(back, &p2, &n2, NULL) == QV_OK);
    QV_CHECK_EQ_INT(n1, n2);
    for (int64_t i = 0; i < n1 && i < n2; i++) QV_CHECK_EQ_STR(p1[i], p2[i]);
    qv_table_free_paths(p1, n1);
    qv_table_free_paths(p2, n2);
    /* A rebuilt mapped table serialises to the same bytes. */
    uint8_t *rec2 = NULL;
    int64_t len2 = 0;
    RT_OK(qv_table_recipe(back, &rec2, &len2, &E));
    if (qv_table_get_kind(t) == QV_TABLE_MAPPED)
      QV_CHECK(len2 == len && memcmp(rec, rec2, (size_t)len) == 0);
    free(rec2);
    qv_table_unref(back);
  }
  qv_table *child = via_child(rec, len);
  QV_CHECK(child != NULL);
  if (child != NULL && !qv_table_equals(t, child, &E)) {
    fprintf(stderr, "%s: child: %s\n", what, E.message);
    QV_CHECK(false);
  }
  qv_table_unref(child);
  free(rec);
  return len;
}

/* A random chain of transforms on a table. */
static qv_table *random_chain(qv_table *t, int steps) {
  qv_table *cur = qv_table_ref(t);
  for (int s = 0; s < steps; s++) {
    int64_t rows = qv_table_num_rows(cur);
    int32_t nc = qv_table_num_columns(cur);
    qv_table *next = NULL;
    switch (orc_int(9)) {
      case 0: {
        int64_t off = orc_int(rows + 1);
        RT_OK(qv_table_slice(cur, off, orc_int(rows - off + 1), &next, &E));
        break;
      }
      case 1: {
        int64_t idx[40], n = rows ? orc_int(40) : 0;
        for (int64_t i = 0; i < n; i++) idx[i] = orc_int(rows);
        RT_OK(qv_table_take(cur, idx, n, &next, &E));
        break;
      }
      case 2: {
        qv_type *bt = qv_type_new(QV_BOOL);
        qv_array *m = orc_gen_sliced(bt, rows);
        RT_OK(qv_table_filter(cur, m, &next, &E));
        qv_array_unref(m);
        qv_type_unref(bt);
        break;
      }
      case 3: {
        int32_t sel[4], n = nc ? (int32_t)(1 + orc_int(4)) : 0;
        for (int32_t i = 0; i < n; i++) sel[i] = (int32_t)orc_int(nc);
        RT_OK(qv_table_select(cur, sel, n, &next, &E));
        break;
      }
      case 4: {
        const char *names[64];
        char buf[64][12];
        for (int32_t c = 0; c < nc && c < 64; c++) {
          snprintf(buf[c], sizeof buf[c], "r%lld", (long long)orc_int(99));
          names[c] = buf[c];
        }
        RT_OK(qv_table_rename(cur, names, nc, &next, &E));
        break;
      }
      case 5: { /* string <-> large_string where present */
        const qv_schema *sc = qv_table_schema(cur);
        qv_field f[64];
        qv_type *made[64] = {0};
        for (int32_t c = 0; c < nc && c < 64; c++) {
          f[c] = *qv_schema_field(sc, c);
          if (f[c].type->id == QV_STRING) f[c].type = made[c] = qv_type_new(QV_LARGE_STRING);
          else if (f[c].type->id == QV_INT32) f[c].type = made[c] = qv_type_new(QV_INT64);
        }
        qv_schema *target = NULL;
        qv_metadata md = {0, NULL};
        QV_CHECK(qv_metadata_append(&md, "huggingface", 11, "{\"info\": 1}", 11, NULL) == QV_OK);
        RT_OK(qv_schema_from_fields(f, nc, &md, &target, &E));
        RT_OK(qv_table_cast(cur, target, &next, &E));
        qv_metadata_reset(&md);
        qv_schema_unref(target);
        for (int32_t c = 0; c < nc && c < 64; c++) qv_type_unref(made[c]);
        break;
      }
      case 6:
      case 7: {
        qv_type *ct = orc_type((int)orc_int(ORC_N_TYPES));
        qv_array *chunks[2];
        int64_t cut = orc_int(rows + 1);
        chunks[0] = orc_gen_sliced(ct, cut);
        chunks[1] = orc_gen_sliced(ct, rows - cut);
        qv_field fl = {"new", true, ct, {0, NULL}};
        if (nc > 0 && orc_int(2))
          RT_OK(qv_table_set_column(cur, (int32_t)orc_int(nc), &fl, chunks, 2, &next, &E));
        else RT_OK(qv_table_add_column(cur, (int32_t)orc_int(nc + 1), &fl, chunks, 2, &next, &E));
        qv_array_unref(chunks[0]);
        qv_array_unref(chunks[1]);
        qv_type_unref(ct);
        break;
      }
      default: RT_OK(qv_table_combine_batches(cur, &next, &E));
    }
    if (next == NULL) break;
    qv_table_unref(cur);
    cur = next;
  }
  return cur;
}

/* Column types the random chains use (dictionaries with wide indices). */
static const int kTypes[] = {5, 15, 4, 20, 31, 17, 27, 22, 11, 1, 18, 32};
#define N_KTYPES ((int)(sizeof kTypes / sizeof kTypes[0]))

static qv_schema *random_schema(void) {
  int types[4];
  int32_t nc = (int32_t)(1 + orc_int(4));
  for (int32_t c = 0; c < nc; c++) types[c] = kTypes[orc_int(N_KTYPES)];
  return rt_schema(types, nc);
}

static void test_round_trips(void) {
  for (int trial = 0; trial < 24; trial++) {
    qv_schema *s = random_schema();
    int64_t rows = trial % 8 == 0 ? 0 : orc_int(80);
    qv_table *t = rt_table(s, rows, 1 + orc_int(9));
    qv_table *m = rt_mapped(t);
    char what[64];
    snprintf(what, sizeof what, "trial %d in-memory", trial);
    round_trip(t, what);
    snprintf(what, sizeof what, "trial %d mapped", trial);
    round_trip(m, what);
    qv_table *chain = random_chain(m, 1 + (int)orc_int(8));
    QV_CHECK_EQ_INT(qv_table_get_kind(chain), QV_TABLE_MAPPED);
    snprintf(what, sizeof what, "trial %d mapped chain", trial);
    round_trip(chain, what);
    /* concatenations: vertical (mapped + in-memory), horizontal */
    qv_table *pair[2] = {m, t}, *v = NULL, *h = NULL;
    RT_OK(qv_table_concat(pair, 2, 0, &v, &E));
    if (v) {
      qv_table *vc = random_chain(v, 1 + (int)orc_int(5));
      snprintf(what, sizeof what, "trial %d vertical", trial);
      round_trip(vc, what);
      qv_table_unref(vc);
    }
    qv_table *hp[2] = {m, chain};
    if (qv_table_num_rows(chain) == rows) {
      RT_OK(qv_table_concat(hp, 2, 1, &h, &E));
      snprintf(what, sizeof what, "trial %d horizontal", trial);
      if (h) round_trip(h, what);
    }
    qv_table_unref(h);
    qv_table_unref(v);
    qv_table_unref(chain);
    qv_table_unref(m);
    qv_table_unref(t);
    qv_schema_unref(s);
  }
}

/* Empty tables: 0 rows, 0 batches, 0 columns, in every kind. */
static void test_empty_recipes(void) {
  int types[2] = {15, 31};
  qv_schema *s = rt_schema(types, 2);
  qv_table *t = rt_table(s, 12, 5), *m = rt_mapped(t), *none = NULL, *zero = NULL, *cols0 = NULL;
  RT_OK(qv_table_select(m, NULL, 0, &none, &E));  /* mapped, 0 columns, 12 rows */
  RT_OK(qv_table_slice(m, 12, 0, &zero, &E));     /* mapped, 0 rows */
  RT_OK(qv_table_select(t, NULL, 0, &cols0, &E)); /* in memory, 0 columns */
  qv_table *e = rt_table(s, 0, 1);                /* in memory, 0 batches */
  round_trip(none, "mapped, 0 columns");
  round_trip(zero, "mapped, 0 rows");
  round_trip(cols0, "in memory, 0 columns");
  round_trip(e, "in memory, empty");
  qv_table *pair[2] = {none, cols0}, *v = NULL, *h = NULL;
  RT_OK(qv_table_concat(pair, 2, 0, &v, &E));
  if (v) round_trip(v, "concat of 0-column tables");
  qv_table *pair2[2] = {zero, e};
  RT_OK(qv_table_concat(pair2, 2, 1, &h, &E));
  if (h) round_trip(h, "horizontal concat of empty tables");
  qv_table_unref(v);
  qv_table_unref(h);
  qv_table_unref(e);
  qv_table_unref(cols0);
  qv_table_unref(zero);
  qv_table_unref(none);
  qv_table_unref(m);
  qv_table_unref(t);
  qv_schema_unref(s);
}

/* 100 replays on a mapped table: the recipe stays under 1 KB. */
static void test_recipe_size(void) {
  int types[3] = {5, 7, 15};
  qv_schema *s = rt_schema(types, 3);
  qv_table *t = rt_table(s, 5000, 50), *m = rt_mapped(t);
  qv_table *cur = qv_table_ref(m);
  for (int i = 0; i < 100; i++) {
    qv_table *next = NULL;
    int32_t cols[3] = {2, 0, 1};
    const char *names[3] = {"a", "b", "c"};
    const char *names2[3] = {"x", "y", "z"};
    switch (i % 4) {
      case 0: RT_OK(qv_table_slice(cur, 1, qv_table_num_rows(cur) - 2, &next, &E)); break;
      case 1: RT_OK(qv_table_select(cur, cols, 3, &next, &E)); break;
      case 2: RT_OK(qv_table_rename(cur, i % 8 == 2 ? names : names2, 3, &next, &E)); break;
      default: {
        int64_t idx[2] = {0, 1};
        (void)idx;
        RT_OK(qv_table_combine_batches(cur, &next, &E));
      }
    }
    if (next == NULL) break;
    qv_table_unref(cur);
    cur = next;
  }
  QV_CHECK_EQ_INT(qv_table_num_replays(cur), 100);
  int64_t len = round_trip(cur, "100 replays");
  fprintf(stderr, "recipe of a mapped table with 100 replays: %lld bytes\n", (long long)len);
  QV_CHECK(len > 0 && len < 1024);
  qv_table_unref(cur);
  qv_table_unref(m);
  qv_table_unref(t);
  qv_schema_unref(s);
}

static int64_t recipe_of(qv_table *t, uint8_t **out) {
  int64_t len = 0;
  RT_OK(qv_table_recipe(t, out, &len, &E));
  return len;
}

static void test_changed_files(void) {
  int types[2] = {5, 15};
  qv_schema *s = rt_schema(types, 2);
  qv_table *t = rt_table(s, 30, 7), *m = rt_mapped(t), *sl = NULL, *r = NULL;
  RT_OK(qv_table_slice(m, 3, 20, &sl, &E));
  qv_table *pair[2] = {t, sl}, *c = NULL;
  RT_OK(qv_table_concat(pair, 2, 0, &c, &E));
  uint8_t *rec = NULL, *crec = NULL;
  int64_t len = recipe_of(sl, &rec), clen = recipe_of(c, &crec);
  const char *path = m->src->path;
  char want[600];
  /* mtime changed */
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 678}};
  QV_CHECK(utimensat(AT_FDCWD, path, times, 0) == 0);
  QV_CHECK(qv_table_from_recipe(rec, len, &r, &E) == QV_ECHANGED);
  snprintf(want, sizeof want,
           "recipe: file '%s' changed since the recipe was written (mtime_ns %lld -> "
           "12345000000678)",
           path, (long long)m->src->identity.mtime_ns);
  QV_CHECK_EQ_STR(E.message, want);
  QV_CHECK(qv_table_from_recipe(crec, clen, &r, &E) == QV_ECHANGED);
  QV_CHECK(strstr(E.message, "changed since the recipe was written") != NULL);
  /* replaced by a copy (new inode, same size, mtime restored) */
  char tmp[400];
  snprintf(tmp, sizeof tmp, "%s.new", path);
  char cmd[900];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s' && mv '%s' '%s'", path, tmp, tmp, path);
  QV_CHECK(system(cmd) == 0);
  struct timespec orig[2] = {
      {0, UTIME_OMIT},
      {m->src->identity.mtime_ns / 1000000000, m->src->identity.mtime_ns % 1000000000}};
  QV_CHECK(utimensat(AT_FDCWD, path, orig, 0) == 0);
  QV_CHECK(qv_table_from_recipe(rec, len, &r, &E) == QV_ECHANGED);
  QV_CHECK(strstr(E.message, "(device/inode ") != NULL);
  /* missing */
  QV_CHECK(unlink(path) == 0);
  QV_CHECK(qv_table_from_recipe(rec, len, &r, &E) == QV_ECHANGED);
  snprintf(want, sizeof want, "recipe: file '%s' is missing (No such file or directory)", path);
  QV_CHECK_EQ_STR(E.message, want);
  /* the tables already open keep working: the mapping outlives the file */
  QV_CHECK(qv_table_equals(t, m, &E));
  free(rec);
  free(crec);
  qv_table_unref(c);
  qv_table_unref(sl);
  qv_table_unref(m);
  qv_table_unref(t);
  qv_schema_unref(s);
}

static void expect_bad(const uint8_t *p, int64_t n, qv_status st, const char *msg) {
  qv_table *t = NULL;
  qv_status got = qv_table_from_recipe(p, n, &t, &E);
  if (got != st) fprintf(stderr, "status %d, expected %d (%s)\n", got, st, E.message);
  QV_CHECK(got == st && t == NULL);
  if (msg) QV_CHECK_EQ_STR(E.message, msg);
  qv_table_unref(t);
}

static void test_corrupt(void) {
  expect_bad((const uint8_t *)"QVR", 3, QV_EINVAL, "recipe: missing the \"QVR1\" magic (3 bytes)");
  expect_bad((const uint8_t *)"QVR1X", 5, QV_EINVAL, "recipe: byte 4: unknown node tag 0x58");
  expect_bad((const uint8_t *)"QVR1M\xff", 6, QV_EINVAL, "recipe: byte 5: truncated varint");
  expect_bad((const uint8_t *)"QVR1M\x05xx", 8, QV_EINVAL,
             "recipe: byte 5: byte count 5 exceeds the 2 bytes left");
  expect_bad((const uint8_t *)"QVR1C\x00\x7f", 7, QV_EINVAL,
             "recipe: byte 6: row count 127 exceeds the 0 bytes left");
  expect_bad((const uint8_t *)"QVR1F\x00\x00\x00\x00\x00\x00", 11, QV_EINVAL,
             "recipe: byte 5: empty path");
  expect_bad((const uint8_t *)"QVR1M\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 15, QV_EINVAL,
             "recipe: byte 5: varint overflows 64 bits");
  /* a valid in-memory recipe, then damaged */
  int types[3] = {5, 15, 30};
  qv_schema *s = rt_schema(types, 3);
  qv_table *t = rt_table(s, 20, 6);
  uint8_t *rec = NULL;
  int64_t len = recipe_of(t, &rec);
  uint8_t *bigger = malloc((size_t)len + 8);
  memcpy(bigger, rec, (size_t)len);
  bigger[len] = 0;
  char want[200];
  snprintf(want, sizeof want, "recipe: 1 unexpected bytes after the table at byte %lld",
           (long long)len);
  expect_bad(bigger, len + 1, QV_EINVAL, want);
  /* unknown replay op; a replay with a bad argument */
  memcpy(bigger, rec, (size_t)len);
  bigger[len - 1] = 1; /* one replay */
  bigger[len] = 42;
  snprintf(want, sizeof want, "recipe: byte %lld: unknown replay op 42", (long long)len);
  expect_bad(bigger, len + 1, QV_EINVAL, want);
  bigger[len] = QV_OP_SLICE;
  bigger[len + 1] = 5;
  bigger[len + 2] = 100;
  snprintf(want, sizeof want,
           "recipe: byte %lld: replay: slice: rows [5, 5 + 100) are outside a table of 20 rows",
           (long long)len);
  expect_bad(bigger, len + 3, QV_ERANGE, want);
  /* replays on an in-memory node are accepted */
  bigger[len + 2] = 10;
  qv_table *ok = NULL;
  RT_OK(qv_table_from_recipe(bigger, len + 3, &ok, &E));
  QV_CHECK(ok && qv_table_num_rows(ok) == 10);
  qv_table_unref(ok);
  /* every truncation fails cleanly */
  for (int64_t n = 0; n < len; n++) {
    qv_table *x = NULL;
    qv_status st = qv_table_from_recipe(rec, n, &x, &E);
    QV_CHECK(st != QV_OK && x == NULL);
  }
  /* random byte flips: any status, never a crash (ASan/UBSan runs) */
  for (int k = 0; k < 400; k++) {
    memcpy(bigger, rec, (size_t)len);
    int flips = 1 + (int)orc_int(3);
    for (int f = 0; f < flips; f++) bigger[orc_int(len)] = (uint8_t)orc_next();
    qv_table *x = NULL;
    if (qv_table_from_recipe(bigger, len, &x, &E) == QV_OK) {
      grid g = grid_of(x); /* values readable */
      grid_free(&g);
    }
    qv_table_unref(x);
  }
  free(bigger);
  free(rec);
  qv_table_unref(t);
  qv_schema_unref(s);
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--child") == 0) return child_main(argv[2], argv[3]);
  ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
  if (n <= 0) return 1;
  self_exe[n] = '\0';
  QV_RUN(test_round_trips);
  QV_RUN(test_empty_recipes);
  QV_RUN(test_recipe_size);
  QV_RUN(test_changed_files);
  QV_RUN(test_corrupt);
  rt_cleanup();
  return QV_TEST_END();
}
