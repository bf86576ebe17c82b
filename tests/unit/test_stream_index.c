/*
 * test_stream_index.c — the stream batch index: built from pread of the
 * headers at open, lazily as far as needed, and from the per-user index
 * cache. Streams of many small batches (with dictionaries, delta and
 * replacement dictionaries, and ZSTD bodies) written by the quiver writer
 * read back as exactly the batches written (qv_array_equals against the
 * source arrays) and with the same batch boundaries as a reader walking an
 * in-memory copy, through a cold open, a partial lazy index and a cache
 * hit; a changed file (same size other bytes, appended, touched) never
 * uses the stale entry; corrupt, truncated and forged cache files are
 * misses or errors, never wrong rows; an unwritable cache directory and the
 * off switches (QV_INDEX_CACHE=0, QV_INDEX_CACHE_OFF) work and write
 * nothing; eviction bounds the directory. XDG_CACHE_HOME points at a
 * temporary directory of the test.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "quiver/ipc.h"
#include "quiver/writer.h"
#include "qv_build.h"
#include "qv_test.h"

#define NB 80 /* record batches of the test stream */

static char g_dir[256];   /* data files */
static char g_cache[300]; /* XDG_CACHE_HOME */

static qv_type *g_type;
static qv_array *g_src[NB + 1]; /* batch k of the stream; NB: the appended one */

/* Batch k: id int64 [3k, 3k+3), d dictionary<int8, string> (id 7) whose
 * words grow every 8 batches (written as deltas) and are replaced at NB/2. */
static qv_array *make_batch(int k) {
  int64_t ids[3] = {3 * k, 3 * k + 1, 3 * k + 2};
  int n = 1 + (k % (NB / 2)) / 8;
  char data[64];
  int32_t offs[8] = {0};
  int32_t pos = 0;
  for (int i = 0; i < n; i++) {
    pos += sprintf(data + pos, "%c%d", k >= NB / 2 ? 'r' : 'a', i);
    offs[i + 1] = pos;
  }
  int8_t idx[3] = {(int8_t)(k % n), (int8_t)((k + 1) % n), (int8_t)((k + 2) % n)};
  qv_array *dict = tb_str_raw(QV_STRING, n, 0, NULL, offs, data, pos);
  qv_array *col = tb_prim_raw(QV_DICTIONARY, 3, 0, NULL, 0, idx, 3);
  qv_type_unref(col->type);
  col->type = qv_type_ref(g_type->children[1].type);
  col->dictionary = dict;
  qv_array *cols[2] = {tb_prim_raw(QV_INT64, 3, 0, NULL, 0, ids, sizeof ids), col};
  qv_buffer *bb[1] = {NULL};
  return tb_array_nc(qv_type_ref(g_type), 3, 0, 1, bb, 2, cols);
}

static void setup_data(void) {
  qv_type *d = tb_type(QV_DICTIONARY);
  d->index_type = tb_type(QV_INT8);
  d->value_type = tb_type(QV_STRING);
  d->dict_id = 7;
  g_type = tb_child(tb_child(tb_type(QV_STRUCT), "id", tb_type(QV_INT64)), "d", d);
  for (int k = 0; k <= NB; k++) g_src[k] = make_batch(k);
}

/* Write batches [0, n) as a stream to path. */
static bool write_stream(const char *path, int n, qv_compression comp) {
  qv_error err;
  qv_schema *schema = qv_schema_new(qv_type_ref(g_type));
  qv_write_options o = {QV_FORMAT_STREAM, comp, 0, 0, 0, 1};
  qv_writer *w = NULL;
  bool ok = qv_writer_open_path(path, schema, &o, &w, &err) == QV_OK;
  for (int k = 0; ok && k < n; k++) ok = qv_writer_write_batch(w, g_src[k], &err) == QV_OK;
  if (w != NULL) ok = qv_writer_close(w, &err) == QV_OK && ok;
  if (!ok) fprintf(stderr, "write_stream: %s\n", err.message);
  qv_schema_unref(schema);
  return ok;
}

static int count_cache_files(void) {
  char dir[400];
  snprintf(dir, sizeof dir, "%s/quiver", g_cache);
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  if (d) closedir(d);
  return n;
}

static void clear_cache(void) {
  char dir[400], p[700];
  snprintf(dir, sizeof dir, "%s/quiver", g_cache);
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  if (d) closedir(d);
}

/* The cache file of `path` (index-<dev>-<ino>.qvi). */
static void cache_file_of(const char *path, char *out, size_t cap) {
  struct stat sb;
  stat(path, &sb);
  snprintf(out, cap, "%s/quiver/index-%016llx-%016llx.qvi", g_cache, (unsigned long long)sb.st_dev,
           (unsigned long long)sb.st_ino);
}

static qv_reader *open_r(const char *path, bool lazy, qv_index_cache_mode mode) {
  qv_error err;
  qv_reader *r = NULL;
  qv_index_options io = {lazy, mode};
  qv_read_options ro = {QV_VALIDATE_FULL, true, 0};
  if (qv_reader_open_file(path, &ro, &io, &r, &err) != QV_OK) {
    fprintf(stderr, "open %s: %s\n", path, err.message);
    return NULL;
  }
  return r;
}

/* Reader over an in-memory copy of the file: the mapping-walk oracle of
 * the batch boundaries. */
static qv_reader *open_copy(const char *path) {
  int fd = open(path, O_RDONLY);
  qv_buffer *b = NULL;
  qv_error err;
  qv_reader *r = NULL;
  if (fd < 0) return NULL;
  if (qv_buffer_read_fd(fd, 0, &b, &err) == QV_OK &&
      qv_reader_open_buffer(b, NULL, &r, &err) != QV_OK)
    r = NULL; /* the caller's checks fail on NULL */
  close(fd);
  qv_buffer_unref(b);
  return r;
}

/* Every batch equals its source, in random order and sequentially (from
 * batch `seq` on: where the reader's cursor is), and the locations equal
 * the oracle's. */
static void check_reader_from(qv_reader *r, const char *path, int nb, int64_t seq) {
  qv_error err;
  qv_reader *o = open_copy(path);
  QV_REQUIRE(o != NULL);
  QV_CHECK_EQ_INT(qv_reader_num_batches(r), nb);
  QV_CHECK_EQ_INT(qv_reader_num_rows(r), 3 * nb);
  QV_CHECK_EQ_INT(qv_reader_num_dictionary_batches(r), qv_reader_num_dictionary_batches(o));
  QV_CHECK_EQ_INT(qv_reader_num_batches(o), nb);
  for (int64_t i = 0; i < nb && i < qv_reader_num_batches(r); i++) {
    const qv_batch_location *a = qv_reader_batch_location(r, i);
    const qv_batch_location *b = qv_reader_batch_location(o, i);
    QV_REQUIRE(a != NULL && b != NULL);
    QV_CHECK(memcmp(a, b, sizeof *a) == 0 ||
             (a->offset == b->offset && a->body_offset == b->body_offset &&
              a->body_length == b->body_length && a->num_rows == b->num_rows &&
              a->metadata_length == b->metadata_length));
  }
  for (int64_t i = 0; i < qv_reader_num_dictionary_batches(o); i++) {
    const qv_batch_location *a = qv_reader_dictionary_location(r, i);
    const qv_batch_location *b = qv_reader_dictionary_location(o, i);
    QV_REQUIRE(a != NULL && b != NULL);
    QV_CHECK(a->offset == b->offset && a->is_delta == b->is_delta && a->dict_id == b->dict_id);
  }
  qv_reader_close(o);
  /* Backwards (replays the dictionaries), then forwards. */
  for (int64_t i = nb - 1; i >= 0; i -= 7) {
    qv_array *b = NULL;
    QV_REQUIRE(qv_reader_batch(r, i, &b, &err) == QV_OK);
    qv_error diff;
    bool eq = qv_array_equals(g_src[i], b, &diff);
    if (!eq) fprintf(stderr, "batch %lld: %s\n", (long long)i, diff.message);
    QV_CHECK(eq);
    qv_array_unref(b);
  }
  int64_t k = seq;
  for (;; k++) {
    qv_array *b = NULL;
    QV_REQUIRE(qv_reader_next(r, &b, &err) == QV_OK);
    if (b == NULL) break;
    QV_REQUIRE(k < nb);
    qv_error diff;
    bool eq = qv_array_equals(g_src[k], b, &diff);
    if (!eq) fprintf(stderr, "next %lld: %s\n", (long long)k, diff.message);
    QV_CHECK(eq);
    qv_array_unref(b);
  }
  QV_CHECK_EQ_INT(k, nb);
}

static void check_reader(qv_reader *r, const char *path, int nb) {
  check_reader_from(r, path, nb, 0);
}

static qv_reader_index_info state(const qv_reader *r) {
  qv_reader_index_info s;
  qv_reader_index_state(r, &s);
  return s;
}

/* Cold open (walk + store), cache hit, lazy partial index: same batches. */
static void run_cold_hit_lazy(qv_compression comp, const char *name) {
  char path[400];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  clear_cache();
  QV_REQUIRE(write_stream(path, NB, comp));

  qv_reader *r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(state(r).complete && !state(r).from_cache && state(r).stored);
  if (comp != QV_COMPRESSION_NONE) QV_CHECK_EQ_INT(qv_reader_compression(r), comp);
  check_reader(r, path, NB);
  qv_reader_close(r);
  QV_CHECK_EQ_INT(count_cache_files(), 1);

  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(state(r).complete && state(r).from_cache && !state(r).stored);
  QV_CHECK_EQ_INT(qv_reader_compression(r), comp);
  check_reader(r, path, NB);
  qv_reader_close(r);

  /* Lazy, no cache: the index grows only as far as asked. */
  qv_error err;
  r = open_r(path, true, QV_INDEX_CACHE_OFF);
  QV_REQUIRE(r != NULL);
  QV_CHECK_EQ_INT(state(r).batches_indexed, 0);
  QV_CHECK(!state(r).complete);
  qv_array *b = NULL;
  QV_REQUIRE(qv_reader_next(r, &b, &err) == QV_OK && b != NULL);
  QV_CHECK(qv_array_equals(g_src[0], b, NULL));
  qv_array_unref(b);
  QV_CHECK_EQ_INT(state(r).batches_indexed, 1);
  QV_REQUIRE(qv_reader_batch(r, 45, &b, &err) == QV_OK); /* past the replacement */
  QV_CHECK(qv_array_equals(g_src[45], b, NULL));
  qv_array_unref(b);
  QV_CHECK_EQ_INT(state(r).batches_indexed, 46);
  QV_CHECK(!state(r).complete && !state(r).from_cache);
  QV_REQUIRE(qv_reader_batch(r, 3, &b, &err) == QV_OK); /* back before it */
  QV_CHECK(qv_array_equals(g_src[3], b, NULL));
  qv_array_unref(b);
  QV_CHECK(qv_reader_batch(r, NB, &b, &err) == QV_ERANGE);
  QV_CHECK(state(r).complete);
  qv_reader_close(r);

  /* Lazy with the cache: a far batch loads the whole index from it. */
  r = open_r(path, true, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_REQUIRE(qv_reader_next(r, &b, &err) == QV_OK && b != NULL);
  qv_array_unref(b);
  QV_CHECK(!state(r).from_cache && state(r).batches_indexed == 1);
  QV_REQUIRE(qv_reader_batch(r, NB - 1, &b, &err) == QV_OK);
  QV_CHECK(qv_array_equals(g_src[NB - 1], b, NULL));
  qv_array_unref(b);
  QV_CHECK(state(r).from_cache && state(r).complete);
  check_reader_from(r, path, NB, 1);
  qv_reader_close(r);

  /* Lazy, walked to the end: stores the entry as an eager open does. */
  clear_cache();
  r = open_r(path, true, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK_EQ_INT(qv_reader_num_batches(r), NB);
  QV_CHECK(state(r).stored);
  qv_reader_close(r);
  QV_CHECK_EQ_INT(count_cache_files(), 1);
}

static void test_plain(void) { run_cold_hit_lazy(QV_COMPRESSION_NONE, "plain.arrows"); }
static void test_zstd(void) { run_cold_hit_lazy(QV_COMPRESSION_ZSTD, "zstd.arrows"); }
static void test_lz4(void) { run_cold_hit_lazy(QV_COMPRESSION_LZ4_FRAME, "lz4.arrows"); }

/* Overwrite `path` in place (same inode) with the bytes of `from`. */
static bool copy_in_place(const char *from, const char *path) {
  int in = open(from, O_RDONLY), out = open(path, O_WRONLY | O_TRUNC);
  char buf[65536];
  ssize_t k;
  bool ok = in >= 0 && out >= 0;
  while (ok && (k = read(in, buf, sizeof buf)) > 0) ok = write(out, buf, (size_t)k) == k;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  return ok;
}

static void set_mtime(const char *path, const struct timespec *t) {
  struct timespec ts[2] = {t[0], t[1]};
  utimensat(AT_FDCWD, path, ts, 0);
}

static void test_changed_file(void) {
  char path[400], other[400];
  snprintf(path, sizeof path, "%s/changed.arrows", g_dir);
  snprintf(other, sizeof other, "%s/other.arrows", g_dir);
  clear_cache();
  QV_REQUIRE(write_stream(path, NB, QV_COMPRESSION_NONE));
  qv_reader *r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL && state(r).stored);
  qv_reader_close(r);
  struct stat sb;
  stat(path, &sb);
  struct timespec old[2] = {sb.st_atim, sb.st_mtim};

  /* Same size, same mtime, other bytes (the last id value): a miss. */
  int fd = open(path, O_RDWR);
  QV_REQUIRE(fd >= 0);
  r = open_copy(path);
  QV_REQUIRE(r != NULL);
  const qv_batch_location *last = qv_reader_batch_location(r, NB - 1);
  int64_t lo = last->body_offset, hi = lo + last->body_length, at = -1;
  qv_reader_close(r);
  uint8_t body[4096];
  QV_REQUIRE(hi - lo <= (int64_t)sizeof body && pread(fd, body, (size_t)(hi - lo), lo) == hi - lo);
  int64_t want = 3 * (NB - 1) + 2; /* id[2] of the last batch */
  for (int64_t i = 0; at < 0 && i + 8 <= hi - lo; i += 8)
    if (memcmp(body + i, &want, 8) == 0) at = lo + i;
  QV_REQUIRE(at >= 0);
  int64_t v = 999;
  QV_REQUIRE(pwrite(fd, &v, 8, at) == 8);
  close(fd);
  set_mtime(path, old);
  stat(path, &sb);
  QV_CHECK(sb.st_mtim.tv_nsec == old[1].tv_nsec && sb.st_mtim.tv_sec == old[1].tv_sec);
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).from_cache && state(r).stored);
  qv_error err;
  qv_array *b = NULL;
  QV_REQUIRE(qv_reader_batch(r, NB - 1, &b, &err) == QV_OK);
  int64_t got;
  memcpy(&got, b->children[0]->buffers[1]->data + 16, 8);
  QV_CHECK_EQ_INT(got, 999);
  qv_array_unref(b);
  qv_reader_close(r);
  QV_REQUIRE(write_stream(path, NB, QV_COMPRESSION_NONE)); /* new inode: restore */
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  qv_reader_close(r);

  /* Appended (one more batch, same inode): a miss that sees the batch. */
  QV_REQUIRE(write_stream(other, NB + 1, QV_COMPRESSION_NONE));
  QV_REQUIRE(copy_in_place(other, path));
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).from_cache);
  check_reader(r, path, NB + 1);
  qv_reader_close(r);
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(state(r).from_cache);
  check_reader(r, path, NB + 1);
  qv_reader_close(r);

  /* Touched: same bytes, newer mtime: a miss, then stored again. */
  stat(path, &sb);
  struct timespec t[2] = {sb.st_atim, sb.st_mtim};
  t[1].tv_sec += 5;
  set_mtime(path, t);
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).from_cache && state(r).stored);
  check_reader(r, path, NB + 1);
  qv_reader_close(r);
  QV_CHECK_EQ_INT(count_cache_files(), 2); /* restore's new inode + this one */
}

static bool read_file(const char *p, uint8_t **out, long *n) {
  FILE *f = fopen(p, "rb");
  if (f == NULL) return false;
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *out = malloc((size_t)*n + 1);
  bool ok = *out && fread(*out, 1, (size_t)*n, f) == (size_t)*n;
  fclose(f);
  return ok;
}

static bool write_file(const char *p, const uint8_t *d, long n) {
  FILE *f = fopen(p, "wb");
  if (f == NULL) return false;
  bool ok = fwrite(d, 1, (size_t)n, f) == (size_t)n;
  return fclose(f) == 0 && ok;
}

static void reseal(uint8_t *d, long n) { /* recompute the checksum */
  uint64_t h = XXH64(d, (size_t)(n - 8), 0);
  for (int i = 0; i < 8; i++) d[n - 8 + i] = (uint8_t)(h >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* A corrupt, truncated or hostile cache file is ignored (or, if it forges
 * a consistent but wrong entry, reading the batch it lies about fails with
 * QV_ECHANGED): never a crash or a wrong row. */
static void test_bad_cache_files(void) {
  char path[400], cf[700];
  snprintf(path, sizeof path, "%s/bad.arrows", g_dir);
  clear_cache();
  QV_REQUIRE(write_stream(path, NB, QV_COMPRESSION_NONE));
  qv_reader *r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  qv_reader_close(r);
  cache_file_of(path, cf, sizeof cf);
  uint8_t *good = NULL;
  long n = 0;
  QV_REQUIRE(read_file(cf, &good, &n));
  QV_REQUIRE(n > 80 + 8);
  uint8_t *d = malloc((size_t)n);
  QV_REQUIRE(d != NULL);
  struct {
    const char *what;
    long len;
    long at; /* byte changed (-1 none) */
    int reseal;
  } cases[] = {
      {"flipped byte", n, 100, 0},
      {"truncated", n - 30, -1, 0},
      {"header only", 80, -1, 0},
      {"empty", 0, -1, 0},
      {"bad magic", n, 0, 1},
      {"entry offset", n, 80 + 48 * 3, 1},
      {"metadata length", n, 80 + 48 * 2 + 40, 1},
      {"kind", n, 80 + 48 * 5 + 44, 1},
      {"end", n, 56, 1},
      {"count", n, 64, 1},
      {"compression", n, 72, 1},
      {"first", n, 48, 1},
      {"body past the end", n, 80 + 48 * (NB + 8) + 16, 1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    memcpy(d, good, (size_t)n);
    if (cases[c].at >= 0 && cases[c].at < cases[c].len) d[cases[c].at] ^= 0x5a;
    if (cases[c].reseal && cases[c].len >= 8) reseal(d, cases[c].len);
    QV_REQUIRE(write_file(cf, d, cases[c].len));
    r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
    QV_REQUIRE(r != NULL);
    if (state(r).from_cache) fprintf(stderr, "case '%s' was taken\n", cases[c].what);
    QV_CHECK(!state(r).from_cache);
    check_reader(r, path, NB);
    qv_reader_close(r);
  }
  /* A dictionary id the schema does not have: ignored. */
  memcpy(d, good, (size_t)n);
  for (long e = 80; e + 48 <= n - 8; e += 48)
    if (d[e + 44] == 2) {
      put64(d + e + 32, 12345);
      break;
    }
  reseal(d, n);
  QV_REQUIRE(write_file(cf, d, n));
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).from_cache);
  qv_reader_close(r);
  /* A consistent forgery (row count of batch 10 changed): taken, but the
   * batch it lies about fails to read, with the index named. */
  memcpy(d, good, (size_t)n);
  int seen = 0;
  for (long e = 80; e + 48 <= n - 8; e += 48)
    if (d[e + 44] == 3 && seen++ == 10) put64(d + e + 24, 4);
  reseal(d, n);
  QV_REQUIRE(write_file(cf, d, n));
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(state(r).from_cache);
  qv_error err;
  qv_array *b = NULL;
  QV_CHECK(qv_reader_batch(r, 10, &b, &err) == QV_ECHANGED);
  QV_CHECK(strstr(err.message, "does not match the index") != NULL);
  QV_CHECK(qv_reader_batch(r, 11, &b, &err) == QV_OK);
  QV_CHECK(qv_array_equals(g_src[11], b, NULL));
  qv_array_unref(b);
  qv_reader_close(r);
  /* A cache file that is a directory or a symlink: ignored. */
  unlink(cf);
  QV_REQUIRE(symlink(path, cf) == 0);
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).from_cache);
  check_reader(r, path, NB);
  qv_reader_close(r);
  unlink(cf);
  free(d);
  free(good);
}

/* Unwritable cache directory; QV_INDEX_CACHE=0; QV_INDEX_CACHE_OFF. */
static void test_off_and_unwritable(void) {
  char path[400], blocker[400];
  snprintf(path, sizeof path, "%s/off.arrows", g_dir);
  QV_REQUIRE(write_stream(path, NB, QV_COMPRESSION_NONE));
  /* XDG_CACHE_HOME below a regular file: no directory can be made there
   * (as root too). */
  snprintf(blocker, sizeof blocker, "%s/not-a-dir", g_dir);
  QV_REQUIRE(write_file(blocker, (const uint8_t *)"x", 1));
  char x[500];
  snprintf(x, sizeof x, "%s/sub", blocker);
  setenv("XDG_CACHE_HOME", x, 1);
  qv_reader *r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).stored && !state(r).from_cache);
  check_reader(r, path, NB);
  qv_reader_close(r);
  setenv("XDG_CACHE_HOME", g_cache, 1);

  clear_cache();
  setenv("QV_INDEX_CACHE", "0", 1);
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).stored);
  check_reader(r, path, NB);
  qv_reader_close(r);
  QV_CHECK_EQ_INT(count_cache_files(), 0);
  unsetenv("QV_INDEX_CACHE");

  r = open_r(path, false, QV_INDEX_CACHE_OFF);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).stored);
  qv_reader_close(r);
  QV_CHECK_EQ_INT(count_cache_files(), 0);
  /* An existing entry is not read either when off. */
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL && state(r).stored);
  qv_reader_close(r);
  r = open_r(path, false, QV_INDEX_CACHE_OFF);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).from_cache);
  qv_reader_close(r);
  /* Small streams get no entry. */
  clear_cache();
  QV_REQUIRE(write_stream(path, 5, QV_COMPRESSION_NONE));
  r = open_r(path, false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).stored);
  qv_reader_close(r);
  QV_CHECK_EQ_INT(count_cache_files(), 0);
}

/* The directory stays within QV_INDEX_CACHE_MAX_BYTES, oldest out first. */
static void test_eviction(void) {
  clear_cache();
  char paths[4][400], cf[4][700];
  long size = 0;
  for (int i = 0; i < 4; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/ev%d.arrows", g_dir, i);
    QV_REQUIRE(write_stream(paths[i], NB, QV_COMPRESSION_NONE));
    cache_file_of(paths[i], cf[i], sizeof cf[i]);
  }
  char lim[32];
  for (int i = 0; i < 4; i++) {
    qv_reader *r = open_r(paths[i], false, QV_INDEX_CACHE_DEFAULT);
    QV_REQUIRE(r != NULL && state(r).stored);
    qv_reader_close(r);
    if (i == 0) {
      struct stat sb;
      QV_REQUIRE(stat(cf[0], &sb) == 0);
      size = (long)sb.st_size;
      snprintf(lim, sizeof lim, "%ld", 2 * size + size / 2); /* room for two */
      setenv("QV_INDEX_CACHE_MAX_BYTES", lim, 1);
    }
    /* distinct mtimes, oldest first */
    struct timespec t[2] = {{1000 + i, 0}, {1000 + i, 0}};
    utimensat(AT_FDCWD, cf[i], t, 0);
  }
  struct stat sb;
  QV_CHECK(stat(cf[0], &sb) != 0 && stat(cf[1], &sb) != 0);
  QV_CHECK(stat(cf[2], &sb) == 0 && stat(cf[3], &sb) == 0);
  /* A hit refreshes: ev2 used, then a new store evicts ev3, not ev2. */
  qv_reader *r = open_r(paths[2], false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL && state(r).from_cache);
  qv_reader_close(r);
  r = open_r(paths[0], false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL && state(r).stored);
  qv_reader_close(r);
  QV_CHECK(stat(cf[2], &sb) == 0 && stat(cf[3], &sb) != 0 && stat(cf[0], &sb) == 0);
  /* An entry larger than the bound is not written. */
  setenv("QV_INDEX_CACHE_MAX_BYTES", "100", 1);
  clear_cache();
  r = open_r(paths[1], false, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  QV_CHECK(!state(r).stored);
  qv_reader_close(r);
  QV_CHECK_EQ_INT(count_cache_files(), 0);
  unsetenv("QV_INDEX_CACHE_MAX_BYTES");
}

/* A lazy reader reports a bad message only when the index reaches it;
 * batches before it read. An eager open fails on it. */
static void test_lazy_errors(void) {
  char path[400];
  snprintf(path, sizeof path, "%s/trunc.arrows", g_dir);
  QV_REQUIRE(write_stream(path, NB, QV_COMPRESSION_NONE));
  qv_reader *o = open_copy(path);
  QV_REQUIRE(o != NULL);
  int64_t cut = qv_reader_batch_location(o, 20)->body_offset + 4;
  qv_reader_close(o);
  QV_REQUIRE(truncate(path, cut) == 0);
  qv_error err;
  qv_reader *r = NULL;
  QV_CHECK(qv_reader_open_file(path, NULL, NULL, &r, &err) == QV_EINVAL);
  r = open_r(path, true, QV_INDEX_CACHE_DEFAULT);
  QV_REQUIRE(r != NULL);
  qv_array *b = NULL;
  QV_REQUIRE(qv_reader_batch(r, 19, &b, &err) == QV_OK);
  QV_CHECK(qv_array_equals(g_src[19], b, NULL));
  qv_array_unref(b);
  QV_CHECK(qv_reader_batch(r, 20, &b, &err) == QV_EINVAL);
  QV_CHECK(strstr(err.message, "runs past the end") != NULL);
  QV_CHECK_EQ_INT(qv_reader_num_batches(r), -1);
  qv_error again;
  QV_CHECK(qv_reader_index(r, -1, &again) == QV_EINVAL);
  QV_CHECK_EQ_STR(again.message, err.message);
  QV_REQUIRE(qv_reader_batch(r, 2, &b, &err) == QV_OK);
  qv_array_unref(b);
  qv_reader_close(r);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/qv_stream_index_XXXXXX");
  if (mkdtemp(g_dir) == NULL) return 1;
  snprintf(g_cache, sizeof g_cache, "%s/xdg", g_dir);
  setenv("XDG_CACHE_HOME", g_cache, 1);
  unsetenv("QV_INDEX_CACHE");
  unsetenv("QV_INDEX_CACHE_MAX_BYTES");
  setup_data();
  QV_RUN(test_plain);
  QV_RUN(test_zstd);
  QV_RUN(test_lz4);
  QV_RUN(test_changed_file);
  QV_RUN(test_bad_cache_files);
  QV_RUN(test_off_and_unwritable);
  QV_RUN(test_eviction);
  QV_RUN(test_lazy_errors);
  for (int k = 0; k <= NB; k++) qv_array_unref(g_src[k]);
  qv_type_unref(g_type);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  return QV_TEST_END();
}
