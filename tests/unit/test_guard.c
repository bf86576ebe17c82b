/*
 * test_guard.c — SIGBUS-safe reads of mapped files (include/quiver/guard.h,
 * src/core/guard.c): a multi-batch IPC file and stream truncated while
 * open. Rows before the cut still read the values written; rows past it
 * give QV_ECHANGED naming the file and both sizes (through the reader,
 * gathers, take, concat, row formatting and a body run by qv_guard_run
 * itself, whose allocations are freed by its caller — no leaks under
 * ASan); another open file keeps reading; a SIGBUS outside a guard, or
 * inside one on memory quiver did not map, reaches the handler installed
 * before quiver's; with no such handler it kills the process (child).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/parallel_internal.h"
#include "quiver/quiver.h"
#include "qv_build.h"
#include "qv_test.h"

#define ROWS_PER_BATCH 512
#define N_BATCHES 8
#define N_ROWS (ROWS_PER_BATCH * N_BATCHES)

static char dir[256];

/* The value written in row i of column "s". */
static void str_of(int64_t i, char *out, size_t n) {
  snprintf(out, n, "row-%06lld-%s", (long long)i, "abcdefghijklmnopqrstuvwxyz0123456789");
}

/* Batch b: id (int64 = row number) and s (string). */
static qv_array *make_batch(qv_type *type, int64_t b) {
  int64_t base = b * ROWS_PER_BATCH, n = ROWS_PER_BATCH;
  qv_buffer *ids = tb_buf(NULL, n * 8);
  qv_buffer *offs = tb_buf(NULL, (n + 1) * 4);
  char tmp[128];
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    str_of(base + i, tmp, sizeof tmp);
    total += (int64_t)strlen(tmp);
  }
  qv_buffer *data = tb_buf(NULL, total);
  int32_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = base + i;
    memcpy(ids->data + 8 * i, &v, 8);
    memcpy(offs->data + 4 * i, &pos, 4);
    str_of(base + i, tmp, sizeof tmp);
    memcpy(data->data + pos, tmp, strlen(tmp));
    pos += (int32_t)strlen(tmp);
  }
  memcpy(offs->data + 4 * n, &pos, 4);
  qv_buffer *ib[2] = {NULL, ids};
  qv_buffer *sb[3] = {NULL, offs, data};
  qv_array *cols[2] = {tb_array(tb_type(QV_INT64), n, 2, ib, 0, NULL),
                       tb_array(tb_type(QV_STRING), n, 3, sb, 0, NULL)};
  qv_array *batch = tb_array(qv_type_ref(type), n, 1, (qv_buffer *[]){NULL}, 2, cols);
  return batch;
}

/* Write the file (format FILE or STREAM) to dir/name; returns its path. */
static const char *write_file(const char *name, qv_ipc_format format) {
  static char paths[4][400];
  static int slot;
  char *path = paths[slot++ % 4];
  snprintf(path, 400, "%s/%s", dir, name);
  qv_type *type = tb_type(QV_STRUCT);
  tb_child(type, "id", tb_type(QV_INT64));
  tb_child(type, "s", tb_type(QV_STRING));
  qv_schema *schema = qv_schema_new(type);
  qv_write_options o;
  memset(&o, 0, sizeof o);
  o.format = format;
  qv_writer *w = NULL;
  qv_error e;
  if (qv_writer_open_path(path, schema, &o, &w, &e) != QV_OK) {
    fprintf(stderr, "open writer: %s\n", e.message);
    exit(1);
  }
  for (int64_t b = 0; b < N_BATCHES; b++) {
    qv_array *batch = make_batch(type, b);
    if (qv_writer_write_batch(w, batch, &e) != QV_OK) {
      fprintf(stderr, "write: %s\n", e.message);
      exit(1);
    }
    qv_array_unref(batch);
  }
  if (qv_writer_close(w, &e) != QV_OK) {
    fprintf(stderr, "close: %s\n", e.message);
    exit(1);
  }
  qv_schema_unref(schema);
  return path;
}

static int64_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* Truncate `path` in place (same inode) to `size` bytes. */
static void cut(const char *path, int64_t size) {
  int fd = open(path, O_WRONLY);
  if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
    perror("truncate");
    exit(1);
  }
  close(fd);
}

/* Do the gathered rows hold the values written? */
static bool rows_match(const qv_array *batch, const int64_t *rows, int64_t n) {
  if (batch == NULL || batch->length != n || batch->n_children != 2) return false;
  const qv_array *id = batch->children[0], *s = batch->children[1];
  char want[128];
  for (int64_t i = 0; i < n; i++) {
    int64_t v;
    memcpy(&v, id->buffers[1]->data + 8 * (id->offset + i), 8);
    if (v != rows[i]) return false;
    int32_t a, b;
    memcpy(&a, s->buffers[1]->data + 4 * (s->offset + i), 4);
    memcpy(&b, s->buffers[1]->data + 4 * (s->offset + i + 1), 4);
    str_of(rows[i], want, sizeof want);
    if ((size_t)(b - a) != strlen(want) || memcmp(s->buffers[2]->data + a, want, strlen(want)) != 0)
      return false;
  }
  return true;
}

/* err names the file and both sizes, as the guard promises. */
static bool says_shrank(const qv_error *e, const char *path, int64_t from, int64_t to) {
  char want[600];
  snprintf(want, sizeof want, "'%s' shrank from %lld to %lld bytes while open", path,
           (long long)from, (long long)to);
  if (strstr(e->message, want) != NULL) return true;
  fprintf(stderr, "  message: %s\n  expected to contain: %s\n", e->message, want);
  return false;
}

/* Offset where batch b's body ends in the file the table maps. */
static int64_t batch_end(const char *path, int64_t b) {
  qv_reader *r = NULL;
  if (qv_reader_open_path(path, NULL, &r, NULL) != QV_OK) return -1;
  const qv_batch_location *l = qv_reader_batch_location(r, b);
  int64_t end = l ? l->body_offset + l->body_length : -1;
  qv_reader_close(r);
  return end;
}

/* ------------------------------------------------------------------------ */
/* Chaining: runs first, before quiver has installed its handler.            */

static sigjmp_buf test_jb;
static volatile sig_atomic_t test_handler_runs;

static void test_handler(int sig, siginfo_t *si, void *uc) {
  (void)si;
  (void)uc;
  if (sig == SIGBUS) test_handler_runs++;
  siglongjmp(test_jb, 1);
}

/* A mapping quiver knows nothing of, of a file cut to nothing. */
static const volatile uint8_t *foreign_mapping(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return NULL;
  *len = (size_t)st.st_size;
  void *p = mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? NULL : p;
}

typedef struct read_ctx {
  const volatile uint8_t *p;
  uint8_t got;
} read_ctx;

static qv_status read_body(void *ctx, qv_error *err) {
  (void)err;
  read_ctx *r = ctx;
  r->got = r->p[0];
  return QV_OK;
}

static void test_chain_to_previous_handler(void) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = test_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  QV_REQUIRE(sigaction(SIGBUS, &sa, &old) == 0);

  /* quiver installs its handler on its first mapping. */
  const char *path = write_file("chain.arrow", QV_FORMAT_FILE);
  qv_table *t = NULL;
  qv_error e;
  QV_REQUIRE(qv_table_open_path(path, NULL, &t, &e) == QV_OK);
  struct sigaction now;
  sigaction(SIGBUS, NULL, &now);
  QV_CHECK(now.sa_sigaction != test_handler); /* quiver's is in front */

  qv_array *b0 = NULL;
  QV_REQUIRE(qv_table_batch(t, N_BATCHES - 1, &b0, &e) == QV_OK);
  cut(path, 0);
  /* 1. A zero-copy consumer reads the mapping outside any guard: quiver's
   *    handler passes the SIGBUS on to the test's handler. */
  const volatile uint8_t *data = b0->children[1]->buffers[2]->data;
  test_handler_runs = 0;
  volatile uint8_t sink = 0;
  if (sigsetjmp(test_jb, 1) == 0) sink = data[0];
  QV_CHECK_EQ_INT(test_handler_runs, 1);
  (void)sink;

  /* 2. Inside a guard, but on a mapping quiver did not make: not quiver's
   *    to recover either. */
  size_t len = 0;
  const char *other = write_file("foreign.arrow", QV_FORMAT_FILE);
  const volatile uint8_t *fm = foreign_mapping(other, &len);
  QV_REQUIRE(fm != NULL);
  cut(other, 0);
  test_handler_runs = 0;
  read_ctx rc = {fm, 0};
  qv_status st = QV_OK;
  if (sigsetjmp(test_jb, 1) == 0) st = qv_guard_run(read_body, &rc, &e);
  QV_CHECK_EQ_INT(test_handler_runs, 1);
  (void)st;
  munmap((void *)fm, len);

  /* 3. The same read of quiver's mapping inside a guard is recovered by
   *    quiver: the test's handler does not run. */
  test_handler_runs = 0;
  read_ctx rq = {data, 0};
  st = qv_guard_run(read_body, &rq, &e);
  QV_CHECK_EQ_INT(st, QV_ECHANGED);
  QV_CHECK_EQ_INT(test_handler_runs, 0);
  QV_CHECK(strstr(e.message, "chain.arrow' shrank from ") != NULL);
  QV_CHECK(strstr(e.message, " to 0 bytes while open") != NULL);

  qv_array_unref(b0);
  qv_table_unref(t);
  /* quiver's handler stays in front (it cannot be taken out); the test's
   * handler behind it is not reached again: nothing below faults outside
   * a guard. */
  (void)old;
}

/* ------------------------------------------------------------------------ */

/* A guarded body that allocates into its context, then reads past the
 * cut: the caller frees what the body left (checked by ASan/LSan). */
typedef struct alloc_ctx {
  const qv_buffer *mapped;
  char *scratch;
  qv_array *partial;
} alloc_ctx;

static qv_status alloc_body(void *p, qv_error *err) {
  alloc_ctx *c = p;
  c->scratch = malloc(1 << 16);
  if (c->scratch == NULL) return qv_error_set(err, QV_ENOMEM, "oom");
  c->partial = qv_array_new(qv_type_new(QV_INT64), 2, 0);
  qv_type_unref(c->partial ? c->partial->type : NULL);
  memcpy(c->scratch, c->mapped->data + c->mapped->size - 100, 100); /* past the cut */
  return QV_OK;
}

typedef struct pool_read {
  const qv_buffer *bufs[2];
  int done[2];
} pool_read;

static void pool_task(void *ctx, int64_t i, int worker) {
  (void)worker;
  pool_read *p = ctx;
  const volatile uint8_t *last = p->bufs[i]->data + p->bufs[i]->size - 1;
  (void)*last;
  p->done[i] = 1;
}

static void check_truncation(qv_ipc_format format, const char *name) {
  const char *path = write_file(name, format);
  const char *spare = write_file(format == QV_FORMAT_FILE ? "spare.arrow" : "spare.stream", format);
  int64_t size = file_size(path);
  qv_table *t = NULL, *t2 = NULL;
  qv_error e;
  QV_REQUIRE(qv_table_open_path(path, NULL, &t, &e) == QV_OK);
  QV_REQUIRE(qv_table_open_path(spare, NULL, &t2, &e) == QV_OK);
  QV_REQUIRE(qv_table_num_rows(t) == N_ROWS);

  /* Decode the first and the last batch while the file is whole. */
  qv_array *first = NULL, *last = NULL;
  QV_REQUIRE(qv_table_batch(t, 0, &first, &e) == QV_OK);
  QV_REQUIRE(qv_table_batch(t, N_BATCHES - 1, &last, &e) == QV_OK);

  /* Cut inside batch 4: batches 0-3 stay whole. */
  int64_t keep_end = batch_end(path, 3);
  QV_REQUIRE(keep_end > 0);
  int64_t new_size = keep_end + 4096 + 100;
  QV_REQUIRE(new_size < batch_end(path, 4));
  cut(path, new_size);

  /* Rows before the cut: batch 0 (decoded before), batches 1-3 (decoded
   * now), in and out of order. */
  int64_t before[] = {0, 5, 511, 600, 1500, 3 * ROWS_PER_BATCH + 7, 4 * ROWS_PER_BATCH - 1, 2};
  qv_array *got = NULL;
  QV_CHECK(qv_table_gather(t, before, 8, &got, &e) == QV_OK);
  QV_CHECK(rows_match(got, before, 8));
  qv_array_unref(got);
  got = NULL;

  /* Rows past the cut: a batch not decoded yet (the reader) ... */
  int64_t after[] = {6 * ROWS_PER_BATCH + 3};
  QV_CHECK_EQ_INT(qv_table_gather(t, after, 1, &got, &e), QV_ECHANGED);
  QV_CHECK(got == NULL);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  qv_array *b6 = NULL;
  QV_CHECK_EQ_INT(qv_table_batch(t, 6, &b6, &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  /* ... and the last batch, decoded before the cut: handed out again,
   * gathers, take, concat and row formatting. */
  QV_CHECK_EQ_INT(qv_table_batch(t, N_BATCHES - 1, &b6, &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  qv_array *b0 = NULL;
  QV_CHECK_EQ_INT(qv_table_batch(t, 0, &b0, &e), QV_OK);
  qv_array_unref(b0);
  int64_t in_last[] = {N_ROWS - 1, N_ROWS - 2};
  QV_CHECK_EQ_INT(qv_table_gather(t, in_last, 2, &got, &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  int64_t idx[] = {0, 1};
  QV_CHECK_EQ_INT(qv_array_take(last->children[1], idx, 2, &got, &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  qv_array *parts[2] = {first->children[1], last->children[1]};
  QV_CHECK_EQ_INT(qv_array_concat(parts, 2, &got, &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  QV_CHECK_EQ_INT(qv_format_row_json(last, ROWS_PER_BATCH - 1, &sb, &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  /* Validation reads the bytes inside its guard (no check first). */
  QV_CHECK_EQ_INT(qv_array_validate(last, QV_VALIDATE_FULL, "last", &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  int64_t order[ROWS_PER_BATCH];
  QV_CHECK_EQ_INT(qv_sort_indices_array(last->children[1], false, QV_NULLS_AT_END, order, &e),
                  QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  QV_CHECK_EQ_INT(qv_sort_indices_array(first->children[1], true, QV_NULLS_AT_END, order, &e),
                  QV_OK);
  QV_CHECK_EQ_INT(order[0], ROWS_PER_BATCH - 1);
  /* Writing the batch out (the writer copies the mapped bytes). */
  char out_path[400];
  snprintf(out_path, sizeof out_path, "%s/copy.arrow", dir);
  qv_writer *w = NULL;
  QV_REQUIRE(qv_writer_open_path(out_path, qv_table_schema(t), NULL, &w, &e) == QV_OK);
  QV_CHECK_EQ_INT(qv_writer_write_batch(w, last, &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  qv_writer_abort(w);
  QV_CHECK(file_size(out_path) < 0); /* nothing left behind */
  QV_CHECK_EQ_INT(qv_guard_check_array(last, &e), QV_ECHANGED);
  QV_CHECK_EQ_INT(qv_guard_check_array(first, &e), QV_OK);
  /* The same answers from the addresses qv_guard_array_points gives. */
  const void *pts[4];
  int np_last = qv_guard_array_points(last, pts, 4);
  QV_CHECK(np_last >= 1);
  QV_CHECK_EQ_INT(qv_guard_check_points(pts, np_last, &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  int np_first = qv_guard_array_points(first, pts, 4);
  QV_CHECK(np_first >= 1);
  QV_CHECK_EQ_INT(qv_guard_check_points(pts, np_first, &e), QV_OK);
  QV_CHECK_EQ_INT(qv_guard_array_points(first, pts, 0), -1); /* more than max */
  /* A row of the first batch still formats. */
  qv_strbuf_clear(&sb);
  QV_CHECK_EQ_INT(qv_format_row_json(first, 5, &sb, &e), QV_OK);
  char want[200], text[128];
  str_of(5, text, sizeof text);
  snprintf(want, sizeof want, "{\"id\":5,\"s\":\"%s\"}", text);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), want);
  qv_strbuf_reset(&sb);

  /* Pool tasks (gathers' and the writer's worker threads) reading past the
   * cut stop, and the pool reports it; tasks on whole bytes run through. */
  qv_pool *pool = NULL;
  QV_REQUIRE(qv_pool_new(2, &pool, &e) == QV_OK);
  pool_read pr = {{first->children[1]->buffers[2], last->children[1]->buffers[2]}, {0, 0}};
  qv_pool_run(pool, 2, pool_task, &pr);
  QV_CHECK_EQ_INT(qv_pool_check(pool, &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  QV_CHECK_EQ_INT(pr.done[0], 1);
  QV_CHECK_EQ_INT(pr.done[1], 0);
  QV_CHECK_EQ_INT(qv_pool_check(pool, &e), QV_OK); /* reported once */
  /* One task runs on the caller, still under a recovery point. */
  pool_read one = {{last->children[1]->buffers[2], NULL}, {0, 0}};
  qv_pool_run(pool, 1, pool_task, &one);
  QV_CHECK_EQ_INT(qv_pool_check(pool, &e), QV_ECHANGED);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  QV_CHECK_EQ_INT(one.done[0], 0);
  qv_pool_free(pool);

  /* A guarded body's allocations are the caller's to free. */
  alloc_ctx ac = {last->children[1]->buffers[2], NULL, NULL};
  QV_CHECK_EQ_INT(qv_guard_run(alloc_body, &ac, &e), QV_ECHANGED);
  QV_CHECK(ac.scratch != NULL && ac.partial != NULL);
  QV_CHECK(says_shrank(&e, path, size, new_size));
  free(ac.scratch);
  qv_array_unref(ac.partial);

  /* The same table still reads the rows before the cut, and another file
   * reads in full. */
  QV_CHECK(qv_table_gather(t, before, 8, &got, &e) == QV_OK);
  QV_CHECK(rows_match(got, before, 8));
  qv_array_unref(got);
  int64_t all[N_ROWS];
  for (int64_t i = 0; i < N_ROWS; i++) all[i] = N_ROWS - 1 - i;
  got = NULL;
  QV_CHECK(qv_table_gather(t2, all, N_ROWS, &got, &e) == QV_OK);
  QV_CHECK(rows_match(got, all, N_ROWS));
  qv_array_unref(got);

  qv_array_unref(first);
  qv_array_unref(last);
  qv_table_unref(t);
  qv_table_unref(t2);
}

static void test_truncated_file_format(void) { check_truncation(QV_FORMAT_FILE, "cut.arrow"); }
static void test_truncated_stream(void) { check_truncation(QV_FORMAT_STREAM, "cut.stream"); }

/* The reader alone: open, then cut; batches before read, after fail. */
static void test_reader_after_cut(void) {
  const char *path = write_file("reader.stream", QV_FORMAT_STREAM);
  int64_t size = file_size(path);
  qv_reader *r = NULL;
  qv_error e;
  QV_REQUIRE(qv_reader_open_path(path, NULL, &r, &e) == QV_OK);
  const qv_batch_location *l = qv_reader_batch_location(r, 2);
  int64_t new_size = l->body_offset + l->body_length;
  cut(path, new_size);
  for (int64_t b = 0; b < N_BATCHES; b++) {
    qv_array *a = NULL;
    qv_status st = qv_reader_next(r, &a, &e);
    if (b < 3) {
      QV_CHECK_EQ_INT(st, QV_OK);
      int64_t rows[ROWS_PER_BATCH];
      for (int64_t i = 0; i < ROWS_PER_BATCH; i++) rows[i] = b * ROWS_PER_BATCH + i;
      QV_CHECK(rows_match(a, rows, ROWS_PER_BATCH));
      qv_array_unref(a);
    } else {
      QV_CHECK_EQ_INT(st, QV_ECHANGED);
      QV_CHECK(strstr(e.message, "record batch 3: ") != NULL);
      QV_CHECK(says_shrank(&e, path, size, new_size));
      break;
    }
  }
  qv_reader_close(r);
  /* Reopened, the cut stream (no end marker, as a stream being written)
   * holds the three whole batches. */
  QV_REQUIRE(qv_reader_open_path(path, NULL, &r, &e) == QV_OK);
  QV_CHECK_EQ_INT(qv_reader_num_batches(r), 3);
  qv_reader_close(r);
}

/* Without a handler before quiver's, a SIGBUS outside a guard kills the
 * process as it would without quiver (in a child: this binary re-run). */
static const char *self;

static int child_default(void) {
  const char *path = write_file("child.arrow", QV_FORMAT_FILE);
  qv_table *t = NULL;
  qv_array *b = NULL;
  if (qv_table_open_path(path, NULL, &t, NULL) != QV_OK) return 3;
  if (qv_table_batch(t, N_BATCHES - 1, &b, NULL) != QV_OK) return 3;
  cut(path, 0);
  volatile uint8_t x = b->children[1]->buffers[2]->data[0];
  (void)x;
  return 4; /* not reached */
}

static void test_default_action_kills(void) {
  pid_t pid = fork();
  QV_REQUIRE(pid >= 0);
  if (pid == 0) {
    /* Under AddressSanitizer the handler before quiver's would be ASan's
     * (which reports and exits 1): the child runs without it, so that the
     * default action is what comes before quiver's handler. */
    char opts[1024];
    const char *old = getenv("ASAN_OPTIONS");
    snprintf(opts, sizeof opts, "%s%shandle_sigbus=0", old ? old : "", old && *old ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    execl(self, self, "--child-default", dir, (char *)NULL);
    _exit(5);
  }
  int status = 0;
  QV_REQUIRE(waitpid(pid, &status, 0) == pid);
  QV_CHECK(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) QV_CHECK_EQ_INT(WTERMSIG(status), SIGBUS);
  else fprintf(stderr, "  child exited with %d\n", WEXITSTATUS(status));
}

static void cleanup(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(int argc, char **argv) {
  self = argv[0];
  if (argc == 3 && strcmp(argv[1], "--child-default") == 0) {
    snprintf(dir, sizeof dir, "%s", argv[2]);
    return child_default();
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/qv-guard-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  QV_RUN(test_chain_to_previous_handler); /* first: before quiver's handler exists */
  QV_RUN(test_truncated_file_format);
  QV_RUN(test_truncated_stream);
  QV_RUN(test_reader_after_cut);
  QV_RUN(test_default_action_kills);
  cleanup();
  return QV_TEST_END();
}
