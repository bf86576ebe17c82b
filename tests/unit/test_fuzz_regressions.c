/*
 * test_fuzz_regressions.c — every Arrow fuzz regression file
 * (arrow-testing data/arrow-ipc-stream and data/arrow-ipc-file) is opened
 * and every batch read at FULL validation. Each must be rejected with an
 * error message and nothing may crash (this test also runs under
 * ASan+UBSan). Files that decode cleanly are failures unless they are
 * known to be valid: those that pyarrow 26.0.1 itself reads and validates
 * in full (checked with Table.validate(full=True)); quiver must read them.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/ipc.h"
#include "qv_test.h"

static char g_shared[4096];

/* Regression files that are valid Arrow data (pyarrow 26.0.1 reads them
 * and validate(full=True) passes): they must decode, not fail. Two other
 * files pyarrow tolerates are corrupt by the format's own rules and quiver
 * rejects them: arrow-ipc-file/...-6051391008473088 (footer schema
 * endianness 12, not an Endianness value) and
 * arrow-ipc-stream/...-5718685113384960 (a Field table member outside the
 * table object its vtable declares). */
static const char *const kKnownValid[] = {
    "clusterfuzz-testcase-minimized-arrow-ipc-file-fuzz-6088759971217408",
    "clusterfuzz-testcase-minimized-arrow-ipc-file-fuzz-6295340960776192",
};

static bool known_valid(const char *name) {
  for (size_t i = 0; i < sizeof kKnownValid / sizeof kKnownValid[0]; i++)
    if (strcmp(name, kKnownValid[i]) == 0) return true;
  return false;
}

/* Open + read everything; return QV_OK only if the whole file decodes. */
static qv_status read_all(const char *path, qv_error *err) {
  qv_read_options opts = {QV_VALIDATE_FULL, true, (int64_t)256 << 20};
  qv_reader *r = NULL;
  QV_RETURN_NOT_OK(qv_reader_open_path(path, &opts, &r, err));
  qv_status st = QV_OK;
  for (int64_t i = 0; st == QV_OK && i < qv_reader_num_batches(r); i++) {
    qv_array *b = NULL;
    st = qv_reader_batch(r, i, &b, err);
    qv_array_unref(b);
  }
  /* Then sequentially to the end, which also decodes every dictionary. */
  for (qv_array *b = NULL; st == QV_OK;) {
    st = qv_reader_next(r, &b, err);
    if (b == NULL) break;
    qv_array_unref(b);
  }
  qv_reader_close(r);
  return st;
}

static void check_dir(const char *sub, int *n_files) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/testdata/arrow-testing/data/%s", g_shared, sub);
  DIR *d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "cannot open %s\n", dir);
    QV_CHECK(d != NULL);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strstr(e->d_name, "fuzz") == NULL && strncmp(e->d_name, "crash-", 6) != 0) continue;
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    qv_error err = {{0}};
    qv_status st = read_all(path, &err);
    (*n_files)++;
    if (known_valid(e->d_name)) {
      if (st != QV_OK) fprintf(stderr, "valid file rejected: %s: %s\n", path, err.message);
      QV_CHECK(st == QV_OK);
    } else if (st == QV_OK) {
      fprintf(stderr, "accepted (expected an error): %s\n", path);
      QV_CHECK(st != QV_OK);
    } else {
      QV_CHECK(err.message[0] != '\0');
      if (getenv("QV_VERBOSE")) printf("%s: %s\n", e->d_name, err.message);
    }
  }
  closedir(d);
}

static void test_stream_regressions(void) {
  int n = 0;
  check_dir("arrow-ipc-stream", &n);
  QV_CHECK(n > 50);
}

static void test_file_regressions(void) {
  int n = 0;
  check_dir("arrow-ipc-file", &n);
  QV_CHECK(n > 20);
}

int main(void) {
  const char *s = getenv("QV_SHARED");
  snprintf(g_shared, sizeof g_shared, "%s", s ? s : "../shared");
  QV_RUN(test_stream_regressions);
  QV_RUN(test_file_regressions);
  return QV_TEST_END();
}
