/*
 * dataset_text.c — CSV and JSON Lines files in the dataset layer's one
 * open path, as datasets.load_dataset("csv"|"json") does it: the text is
 * converted once, streaming (the formats layer's qv_csv_stream_path /
 * qv_jsonl_stream_path: windows parsed on all cores, memory O(cores x
 * block) whatever the file's size), into an Arrow IPC stream written by
 * the dataset row sink (dataset_sink.c, atomic), and that file is mapped.
 * Nothing ever holds the decoded file in memory. Dataset layer.
 *
 * The conversion is cached per user beside the stream index
 * (ipc/index_cache.c: same directory, same keying, same off switch):
 *   <cache dir>/text-<dev>-<ino>-<variant>-<key>.arrow
 * (16 hex digits each; the variant names the reader options: j JSON
 * Lines, c<delimiter> pyarrow's CSV types, p<delimiter> pandas'), where
 * <key> is xxh64 of the file's size, mtime (ns), xxh64 of its first
 * and last 4 KiB (the content check), the reader options and a format
 * version. A hit maps the file and refreshes its mtime (LRU); a miss
 * converts, removes the other text-<dev>-<ino>-<variant>-*.arrow files
 * (conversions of older versions of the same file) and bounds all text conversions to
 * QV_TEXT_CACHE_MAX_BYTES (default 8 GiB; the one just written is kept).
 * A damaged cache file is moved aside and rebuilt (qv_ds_cache_reusable).
 * With the cache off (QV_INDEX_CACHE=0, qv_text_open_options.no_cache) or
 * unwritable, the conversion goes to a temporary in $TMPDIR that is
 * unlinked once mapped (the mapping keeps it alive).
 *
 * qv_table_open_text_head serves `quiver head`: a valid cached conversion
 * when there is one, else only the first windows (of 1 MiB: 2 threads x 2
 * blocks of 256 KiB; the types are those the first window infers, as with
 * pyarrow.csv.open_csv), kept in memory, never cached.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/atomic_internal.h"
#include "dataset/dataset_internal.h"
#include "ipc/ipc_internal.h"
#include "quiver/csv.h"
#include "quiver/jsonl.h"
#include "quiver/table.h"

#define TEXT_CACHE_VERSION 1
#define TEXT_DEFAULT_MAX_BYTES ((int64_t)8 << 30)
/* Rows per record batch of a conversion at most: a reader block (about 1
 * MiB of text) is one batch unless it holds more rows. Big batches keep
 * the scans of the mapping cheap and let them drop the pages they read
 * (qv_table_batch_done works on whole pages inside a buffer: a batch of
 * datasets' 1,000 rows is only a few pages per column). */
#define CONV_BATCH_ROWS ((int64_t)1 << 17)
/* qv_table_open_text_head: windows of 2 x 2 x 256 KiB = 1 MiB */
#define HEAD_BLOCK ((int64_t)256 << 10)
#define HEAD_THREADS 2

bool qv_ds_has_suffix(const char *path, const char *suffix) {
  size_t a = strlen(path), b = strlen(suffix);
  if (a < b) return false;
  for (size_t i = 0; i < b; i++) {
    char c = path[a - b + i];
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    if (c != suffix[i]) return false;
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* Keying                                                                    */

typedef struct text_key {
  uint64_t dev, ino;
  int64_t size, mtime_ns;
  uint64_t content; /* xxh64 of the first and last 4 KiB */
  uint64_t hash;    /* of all of the above and the options */
} text_key;

static qv_status key_of(const char *path, qv_path_kind kind, const qv_text_open_options *o,
                        text_key *key, qv_error *err) {
  memset(key, 0, sizeof *key);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return qv_error_set(err, QV_EIO, "cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  uint8_t buf[4096];
  bool ok = fstat(fd, &sb) == 0;
  XXH64_state_t *h = XXH64_createState();
  ok = ok && h != NULL && XXH64_reset(h, 0) == XXH_OK;
  if (ok) {
    int64_t size = (int64_t)sb.st_size, n = size < 4096 ? size : 4096;
    ok = qv_pread_full(fd, buf, n, 0);
    if (ok) XXH64_update(h, buf, (size_t)n);
    ok = ok && qv_pread_full(fd, buf, n, size - n);
    if (ok) XXH64_update(h, buf, (size_t)n);
  }
  int saved = errno;
  close(fd);
  if (!ok) {
    XXH64_freeState(h);
    return qv_error_set(err, QV_EIO, "%s: cannot read: %s", path, strerror(saved));
  }
  key->dev = (uint64_t)sb.st_dev;
  key->ino = (uint64_t)sb.st_ino;
  key->size = (int64_t)sb.st_size;
  key->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
  key->content = XXH64_digest(h);
  XXH64_freeState(h);
  uint64_t words[9] = {TEXT_CACHE_VERSION,
                       key->dev,
                       key->ino,
                       (uint64_t)key->size,
                       (uint64_t)key->mtime_ns,
                       key->content,
                       (uint64_t)kind,
                       o->pandas_types ? 1u : 0u,
                       (uint64_t)(unsigned char)o->delimiter};
  key->hash = XXH64(words, sizeof words, 0);
  return QV_OK;
}

static bool same_key(const text_key *a, const text_key *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns &&
         a->content == b->content;
}

static int64_t text_cache_max_bytes(void) {
  const char *v = getenv("QV_TEXT_CACHE_MAX_BYTES");
  if (v != NULL && *v != '\0') {
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (end != NULL && *end == '\0' && x >= 0) return (int64_t)x;
  }
  return TEXT_DEFAULT_MAX_BYTES;
}

/* "text-<dev>-<ino>-<variant>-" (the variant: j for JSON Lines, c / p
 * for CSV with pyarrow / pandas types and the delimiter in hex) and the
 * whole name of the conversion. */
static void entry_names(const text_key *k, qv_path_kind kind, const qv_text_open_options *o,
                        char *prefix, size_t pcap, char *name, size_t ncap) {
  char variant[8];
  if (kind == QV_PATH_JSON) snprintf(variant, sizeof variant, "j");
  else
    snprintf(variant, sizeof variant, "%c%02x", o->pandas_types ? 'p' : 'c',
             (unsigned)(unsigned char)o->delimiter);
  snprintf(prefix, pcap, "text-%016llx-%016llx-%s-", (unsigned long long)k->dev,
           (unsigned long long)k->ino, variant);
  snprintf(name, ncap, "%s%016llx.arrow", prefix, (unsigned long long)k->hash);
}

/* ------------------------------------------------------------------------ */
/* Streaming into the row sink                                               */

typedef struct conv {
  const char *dst; /* NULL: in memory */
  qv_ds_sink *sink;
  int64_t stop_rows; /* > 0: stop once this many rows were taken */
  int64_t rows;
  bool stopped;
} conv;

static qv_status conv_begin(void *ctx, const qv_schema *schema, qv_error *err) {
  conv *c = ctx;
  /* called again when a type widened: the rows so far are dropped and the
   * file (a temporary until committed) reopened */
  qv_ds_sink_abort(c->sink);
  c->sink = NULL;
  c->rows = 0;
  return qv_ds_sink_open(c->dst, schema, CONV_BATCH_ROWS, false, &c->sink, err);
}

static qv_status conv_batch(void *ctx, qv_array *batch, qv_error *err) {
  conv *c = ctx;
  c->rows += batch->length;
  QV_RETURN_NOT_OK(qv_ds_sink_push(c->sink, qv_array_ref(batch), err));
  if (c->stop_rows > 0 && c->rows >= c->stop_rows) {
    c->stopped = true; /* not an error: the reader stops on any status */
    return qv_error_set(err, QV_ERANGE, "enough rows");
  }
  return QV_OK;
}

/* Stream `path` into a sink at `dst` (NULL: memory); *out: the sink's
 * table (mapped from dst, or in memory). */
static qv_status convert(const char *path, qv_path_kind kind, const qv_text_open_options *o,
                         const char *dst, int64_t stop_rows, qv_table **out, qv_error *err) {
  *out = NULL;
  conv c = {dst, NULL, stop_rows, 0, false};
  qv_batch_sink sink = {conv_begin, conv_batch, &c};
  /* a head reads small windows (HEAD_THREADS x 2 x HEAD_BLOCK bytes) */
  int64_t block = stop_rows > 0 ? HEAD_BLOCK : 0;
  int threads = stop_rows > 0 ? HEAD_THREADS : 0;
  qv_status st;
  if (kind == QV_PATH_CSV) {
    qv_csv_read_options ro;
    memset(&ro, 0, sizeof ro);
    ro.pandas_types = o->pandas_types;
    ro.delimiter = o->delimiter;
    ro.block_size = block;
    ro.threads = threads;
    st = qv_csv_stream_path(path, &ro, &sink, NULL, NULL, NULL, err);
  } else {
    qv_jsonl_read_options jo;
    memset(&jo, 0, sizeof jo);
    jo.block_size = block;
    jo.threads = threads;
    st = qv_jsonl_stream_path(path, &jo, &sink, NULL, NULL, NULL, err);
  }
  if (c.stopped) st = QV_OK;
  if (st == QV_OK && c.sink == NULL) /* no schema: the reader refused nothing? */
    st = qv_error_set(err, QV_EINVAL, "%s: no columns", path);
  if (st != QV_OK) {
    qv_ds_sink_abort(c.sink);
    return st;
  }
  return qv_ds_sink_finish(c.sink, out, err);
}

/* A temporary name in $TMPDIR for an uncached conversion. */
static qv_status temp_name(char *buf, size_t cap, qv_error *err) {
  const char *t = getenv("TMPDIR");
  if (t == NULL || t[0] != '/') t = "/tmp";
  static int counter;
  int k = snprintf(buf, cap, "%s/quiver-text-%ld-%d.arrow", t, (long)getpid(),
                   __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
  if (k <= 0 || (size_t)k >= cap) return qv_error_set(err, QV_EARG, "TMPDIR is too long");
  return QV_OK;
}

static qv_status convert_uncached(const char *path, qv_path_kind kind,
                                  const qv_text_open_options *o, qv_table **out, qv_error *err) {
  char tmp[4200];
  QV_RETURN_NOT_OK(temp_name(tmp, sizeof tmp, err));
  qv_status st = convert(path, kind, o, tmp, 0, out, err);
  unlink(tmp); /* the mapping keeps the data */
  return st;
}

qv_status qv_table_open_text(const char *path, qv_path_kind kind,
                             const qv_text_open_options *options, qv_table **out, qv_error *err) {
  *out = NULL;
  if (kind != QV_PATH_CSV && kind != QV_PATH_JSON)
    return qv_error_set(err, QV_EARG, "%s: not a CSV or JSON Lines kind", path);
  qv_text_open_options o;
  memset(&o, 0, sizeof o);
  if (options != NULL) o = *options;
  text_key key;
  QV_RETURN_NOT_OK(key_of(path, kind, &o, &key, err));
  char dir[4096], prefix[64], name[96], full[4300];
  entry_names(&key, kind, &o, prefix, sizeof prefix, name, sizeof name);
  if (o.no_cache || !qv_index_cache_enabled(QV_INDEX_CACHE_DEFAULT) ||
      !qv_cache_dir_name(dir, sizeof dir) || !qv_cache_dir_create(dir) ||
      snprintf(full, sizeof full, "%s/%s", dir, name) >= (int)sizeof full)
    return convert_uncached(path, kind, &o, out, err);
  if (qv_ds_file_exists(full) && qv_ds_cache_reusable(full) &&
      qv_table_open_path(full, NULL, out, NULL) == QV_OK) {
    /* most recently used: evicted last. The access time only: the mtime is
     * part of the identity recipes record for the mapped file. */
    struct timespec ts[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    utimensat(AT_FDCWD, full, ts, 0);
    return QV_OK;
  }
  qv_status st = convert(path, kind, &o, full, 0, out, err);
  if (st != QV_OK) {
    /* an unwritable cache is not the caller's problem */
    if (st == QV_EIO && !qv_ds_file_exists(full)) {
      return convert_uncached(path, kind, &o, out, err);
    }
    return st;
  }
  text_key after;
  if (key_of(path, kind, &o, &after, NULL) != QV_OK || !same_key(&key, &after)) {
    unlink(full);
    qv_table_unref(*out);
    *out = NULL;
    return qv_error_set(err, QV_ECHANGED, "%s: the file changed while it was converted", path);
  }
  /* older versions of the same file, then the bound */
  qv_cache_dir_evict(dir, prefix, ".arrow", 0, name);
  qv_cache_dir_evict(dir, "text-", ".arrow", text_cache_max_bytes(), name);
  return QV_OK;
}

qv_status qv_dataset_open_text(const char *path, qv_path_kind kind,
                               const qv_text_open_options *options, qv_dataset **out,
                               qv_error *err) {
  *out = NULL;
  qv_table *t = NULL;
  QV_RETURN_NOT_OK(qv_table_open_text(path, kind, options, &t, err));
  qv_status st = qv_ds_open_file(path, t, out, err);
  qv_table_unref(t);
  return st;
}

qv_status qv_table_open_text_head(const char *path, qv_path_kind kind, int64_t rows, qv_table **out,
                                  qv_error *err) {
  *out = NULL;
  if (kind != QV_PATH_CSV && kind != QV_PATH_JSON)
    return qv_error_set(err, QV_EARG, "%s: not a CSV or JSON Lines kind", path);
  qv_text_open_options o;
  memset(&o, 0, sizeof o);
  text_key key;
  QV_RETURN_NOT_OK(key_of(path, kind, &o, &key, err));
  char dir[4096], prefix[64], name[96], full[4300];
  entry_names(&key, kind, &o, prefix, sizeof prefix, name, sizeof name);
  if (qv_index_cache_enabled(QV_INDEX_CACHE_DEFAULT) && qv_cache_dir_name(dir, sizeof dir) &&
      snprintf(full, sizeof full, "%s/%s", dir, name) < (int)sizeof full &&
      qv_ds_file_exists(full) && qv_ds_cache_reusable(full) &&
      qv_table_open_path(full, NULL, out, NULL) == QV_OK)
    return QV_OK;
  return convert(path, kind, &o, NULL, rows > 0 ? rows : 1, out, err);
}
