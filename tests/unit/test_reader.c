/*
 * test_reader.c — the IPC reader: framing and footer errors with exact
 * messages, every golden file opened and read in both formats, the
 * file/stream/pipe readers agreeing batch for batch, dictionary state under
 * random access, and opening touching no column bytes (batch locations
 * only).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "quiver/ipc.h"
#include "qv_test.h"

static char g_golden[4096];

static qv_status open_bytes(const void *data, int64_t n, qv_reader **r, qv_error *err) {
  qv_buffer *b = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(n, &b, err));
  if (n) memcpy(b->data, data, (size_t)n);
  qv_status st = qv_reader_open_buffer(b, NULL, r, err);
  qv_buffer_unref(b);
  return st;
}

static qv_buffer *load_file(const char *path) {
  qv_buffer *m = NULL, *copy = NULL;
  if (qv_buffer_map_file(path, &m, NULL, NULL) != QV_OK) return NULL;
  if (qv_buffer_alloc(m->size, &copy, NULL) == QV_OK) memcpy(copy->data, m->data, (size_t)m->size);
  qv_buffer_unref(m);
  return copy;
}

static void test_framing_errors(void) {
  qv_error err;
  qv_reader *r = NULL;
  QV_CHECK_EQ_INT(open_bytes("", 0, &r, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "empty input: not an Arrow IPC file or stream");
  QV_CHECK_EQ_INT(open_bytes("abc", 3, &r, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "input of 3 bytes is not an Arrow IPC file or stream");
  QV_CHECK_EQ_INT(open_bytes("ARROW1\0\0 some bytes that are not a footer", 41, &r, &err),
                  QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "file starts with the ARROW1 magic but does not end with it "
                  "(truncated or not an Arrow file)");
  QV_CHECK_EQ_INT(open_bytes("ARROW1", 6, &r, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "file of 6 bytes is too small for the IPC file format (expected at least 18)");
  const uint8_t bad_footer[] = {'A', 'R',  'R', 'O', 'W', '1', 0,   0,   1,   2,   3,
                                4,   0xff, 0,   0,   0,   'A', 'R', 'R', 'O', 'W', '1'};
  QV_CHECK_EQ_INT(open_bytes(bad_footer, sizeof bad_footer, &r, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "footer length 255 is invalid (expected 1..4)");
  const uint8_t huge_meta[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  QV_CHECK_EQ_INT(open_bytes(huge_meta, sizeof huge_meta, &r, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "message 0 at offset 0: metadata length 2147483647 is invalid "
                  "(expected 1..1073741824)");
  const uint8_t short_meta[] = {0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0, 1, 2, 3};
  QV_CHECK_EQ_INT(open_bytes(short_meta, sizeof short_meta, &r, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "message 0 at offset 0: metadata of 16 bytes runs past the end "
                  "of the data (3 bytes left)");
  const uint8_t eos_only[] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
  QV_CHECK_EQ_INT(open_bytes(eos_only, sizeof eos_only, &r, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "stream has no schema message (it ends at offset 0)");
}

/* Truncating a golden stream inside a body must fail at open, naming the
 * message and the sizes. */
static void test_truncated_golden(void) {
  char path[4300];
  snprintf(path, sizeof path, "%s/cpp-21.0.0/generated_primitive.stream", g_golden);
  qv_buffer *full = load_file(path);
  QV_REQUIRE(full != NULL);
  qv_reader *r = NULL;
  qv_error err;
  QV_REQUIRE(qv_reader_open_buffer(full, NULL, &r, &err) == QV_OK);
  const qv_batch_location *locp = qv_reader_batch_location(r, 0);
  QV_REQUIRE(locp != NULL);
  qv_batch_location loc0 = *locp, *loc = &loc0;
  int64_t cut = loc->body_offset + loc->body_length / 2;
  qv_reader_close(r);
  qv_buffer *part = NULL;
  QV_REQUIRE(qv_buffer_view(full, 0, cut, &part, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_reader_open_buffer(part, NULL, &r, &err), QV_EINVAL);
  char want[256];
  snprintf(want, sizeof want,
           "message 1 at offset %lld: body of %lld bytes runs past the end "
           "of the data (%lld bytes left)",
           (long long)loc->offset, (long long)loc->body_length,
           (long long)(cut - loc->body_offset));
  QV_CHECK_EQ_STR(err.message, want);
  qv_buffer_unref(part);
  qv_buffer_unref(full);
}

typedef struct golden_stats {
  int files, batches;
} golden_stats;

/* Open a golden file, read every batch by index and sequentially, and
 * through a pipe for streams; every path must agree. */
static void check_golden(const char *path, golden_stats *gs) {
  qv_read_options opts = {QV_VALIDATE_FULL, true, 0};
  qv_reader *r = NULL;
  qv_error err;
  if (qv_reader_open_path(path, &opts, &r, &err) != QV_OK) {
    fprintf(stderr, "open %s: %s\n", path, err.message);
    QV_CHECK(0);
    return;
  }
  gs->files++;
  int64_t nb = qv_reader_num_batches(r), rows = 0;
  qv_array **first = calloc((size_t)nb + 1, sizeof *first);
  /* Backwards first: dictionary state must be rebuilt correctly. */
  for (int64_t i = nb - 1; i >= 0; i--) {
    if (qv_reader_batch(r, i, &first[i], &err) != QV_OK) {
      fprintf(stderr, "%s batch %lld: %s\n", path, (long long)i, err.message);
      QV_CHECK(0);
    } else {
      QV_CHECK_EQ_INT(first[i]->length, qv_reader_batch_rows(r, i));
      rows += first[i]->length;
      gs->batches++;
    }
  }
  QV_CHECK_EQ_INT(rows, qv_reader_num_rows(r));
  for (int64_t i = 0; i < nb; i++) {
    qv_array *b = NULL;
    if (qv_reader_next(r, &b, &err) != QV_OK || b == NULL) {
      QV_CHECK(0);
      break;
    }
    if (first[i] && !qv_array_equals(first[i], b, &err)) {
      fprintf(stderr, "%s batch %lld sequential != random: %s\n", path, (long long)i, err.message);
      QV_CHECK(0);
    }
    qv_array_unref(b);
  }
  bool stream = qv_reader_format(r) == QV_FORMAT_STREAM;
  qv_reader_close(r);
  if (stream) {
    int fds[2];
    QV_REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      qv_buffer *m = NULL;
      if (qv_buffer_map_file(path, &m, NULL, NULL) != QV_OK) _exit(1);
      int64_t off = 0;
      while (off < m->size) {
        ssize_t w = write(fds[1], m->data + off, (size_t)(m->size - off));
        if (w <= 0) _exit(1);
        off += w;
      }
      _exit(0);
    }
    close(fds[1]);
    qv_reader *pr = NULL;
    if (qv_reader_open_fd(fds[0], &opts, &pr, &err) == QV_OK) {
      for (int64_t i = 0;; i++) {
        qv_array *b = NULL;
        if (qv_reader_next(pr, &b, &err) != QV_OK) {
          fprintf(stderr, "%s pipe: %s\n", path, err.message);
          QV_CHECK(0);
          break;
        }
        if (b == NULL) {
          QV_CHECK_EQ_INT(i, nb);
          break;
        }
        if (i < nb && first[i] && !qv_array_equals(first[i], b, &err)) {
          fprintf(stderr, "%s batch %lld pipe != mapped: %s\n", path, (long long)i, err.message);
          QV_CHECK(0);
        }
        qv_array_unref(b);
      }
      qv_reader_close(pr);
    } else {
      fprintf(stderr, "%s pipe open: %s\n", path, err.message);
      QV_CHECK(0);
    }
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
  }
  for (int64_t i = 0; i < nb; i++) qv_array_unref(first[i]);
  free(first);
}

static void test_golden_files(void) {
  DIR *d = opendir(g_golden);
  QV_REQUIRE(d != NULL);
  golden_stats gs = {0, 0};
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char sub[4400];
    snprintf(sub, sizeof sub, "%s/%s", g_golden, e->d_name);
    DIR *d2 = opendir(sub);
    if (d2 == NULL) continue;
    struct dirent *f;
    while ((f = readdir(d2)) != NULL) {
      size_t n = strlen(f->d_name);
      bool is_stream = n > 7 && strcmp(f->d_name + n - 7, ".stream") == 0;
      bool is_file = n > 11 && strcmp(f->d_name + n - 11, ".arrow_file") == 0;
      if (!is_stream && !is_file) continue;
      char path[8800];
      snprintf(path, sizeof path, "%s/%s", sub, f->d_name);
      check_golden(path, &gs);
    }
    closedir(d2);
  }
  closedir(d);
  printf("golden: %d files, %d batches\n", gs.files, gs.batches);
  QV_CHECK(gs.files >= 120);
}

int main(void) {
  const char *s = getenv("QV_SHARED");
  snprintf(g_golden, sizeof g_golden, "%s/testdata/arrow-testing/data/arrow-ipc-stream/integration",
           s ? s : "../shared");
  QV_RUN(test_framing_errors);
  QV_RUN(test_truncated_golden);
  QV_RUN(test_golden_files);
  return QV_TEST_END();
}
