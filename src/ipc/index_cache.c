/*
 * index_cache.c — the persisted batch index of IPC streams: one small file
 * per stream under $XDG_CACHE_HOME/quiver (default ~/.cache/quiver), so
 * that reopening a stream of many batches does not walk its headers again.
 * ipc layer; uses core (errors) and libxxhash. The reader (reader.c) builds
 * the index; this file encodes, parses, validates, loads, stores and
 * evicts it.
 *
 * A cache file is named index-<dev>-<ino>.qvi (16 hex digits each) and
 * holds, little-endian:
 *   0   "QVSIDX01"
 *   8   u64 device, u64 inode, i64 size, i64 mtime (ns), u64 content
 *       (xxh64 of the stream's first and last 4 KiB and schema message,
 *       see reader.c) — the key; any difference is a miss
 *   48  i64 first (offset of the first message after the schema),
 *       i64 end (offset where the walk stopped: end-of-stream marker or
 *       end of file), i64 n (messages), i64 compression (the last body
 *       codec seen, qv_compression)
 *   80  n entries of 48 bytes: i64 offset, i64 body_offset, i64 body_length,
 *       i64 num_rows, i64 dict_id (-1 for record batches), i32 metadata
 *       length, u8 kind (3 record batch, 2 dictionary), u8 is_delta, u16 0
 *   80+48n  u64 xxh64 (seed 0) of everything before.
 * The file is untrusted input: parse checks its exact size, checksum and
 * key, and that the entries tile the stream from `first` to `end` without
 * gaps or overlaps inside the stream's size (so nothing it says can point
 * outside the file); the reader additionally checks each dictionary id
 * against the schema and, when it decodes a batch, that the message found
 * at the offset agrees with the entry. A bad or stale file is a miss and
 * is rewritten by the next full walk; nothing here ever fails an open.
 *
 * Writes go through the core atomic-file helper (a hidden temporary with
 * the writer's pid, fsync, rename; a torn file would fail its checksum and
 * be a miss anyway). After each store, the
 * directory is bounded to QV_INDEX_CACHE_MAX_BYTES (default 64 MiB) by
 * removing the least recently used files first (a hit refreshes a file's
 * mtime); temporaries of dead writers are reclaimed by the atomic-file
 * helper itself.
 * Off switch: QV_INDEX_CACHE=0 (or off/no/false) in the environment, or
 * qv_index_options.cache = QV_INDEX_CACHE_OFF.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/atomic_internal.h"
#include "ipc/ipc_internal.h"

#define IDX_MAGIC "QVSIDX01"
#define IDX_HEADER 80
#define IDX_ENTRY 48
#define IDX_MAX_FILE ((int64_t)256 << 20) /* never read a bigger cache file */
#define IDX_DEFAULT_MAX_BYTES ((int64_t)64 << 20)

static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get_u64(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
#else
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
#endif
}
static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static qv_status bad(qv_error *err, const char *what) {
  return qv_error_set(err, QV_EINVAL, "stream index cache: %s", what);
}

/* The checks, fed the file front to back: the header (with the file's
 * total size), each entry, then the stored checksum. Entries are handed to
 * `emit` as they are checked; callers discard them unless the whole parse
 * succeeds. */
typedef struct parser {
  const qv_index_key *key;
  int64_t first, end, count, k, expect;
  qv_compression comp;
  qv_index_emit emit;
  void *ctx;
} parser;

static qv_status parse_header(parser *ps, const uint8_t *p, int64_t n, qv_error *err) {
  if (n < IDX_HEADER + 8 || memcmp(p, IDX_MAGIC, 8) != 0) return bad(err, "not an index file");
  if ((n - IDX_HEADER - 8) % IDX_ENTRY != 0) return bad(err, "size is not header + entries");
  ps->count = (n - IDX_HEADER - 8) / IDX_ENTRY;
  if ((int64_t)get_u64(p + 64) != ps->count)
    return qv_error_set(err, QV_EINVAL, "stream index cache: declares %lld entries, holds %lld",
                        (long long)(int64_t)get_u64(p + 64), (long long)ps->count);
  const qv_index_key *key = ps->key;
  if (get_u64(p + 8) != key->dev || get_u64(p + 16) != key->ino ||
      (int64_t)get_u64(p + 24) != key->size || (int64_t)get_u64(p + 32) != key->mtime_ns ||
      get_u64(p + 40) != key->content)
    return bad(err, "written for another version of the file");
  if ((int64_t)get_u64(p + 48) != ps->first) return bad(err, "first message offset differs");
  ps->end = (int64_t)get_u64(p + 56);
  if (ps->end < ps->first || ps->end > key->size) return bad(err, "end offset outside the file");
  uint64_t comp = get_u64(p + 72);
  if (comp > QV_COMPRESSION_ZSTD) return bad(err, "unknown compression");
  ps->comp = (qv_compression)comp;
  ps->expect = ps->first;
  ps->k = 0;
  return QV_OK;
}

static qv_status parse_entry(parser *ps, const uint8_t *e, qv_error *err) {
  qv_index_msg x;
  x.offset = (int64_t)get_u64(e);
  x.body_offset = (int64_t)get_u64(e + 8);
  x.body_length = (int64_t)get_u64(e + 16);
  x.num_rows = (int64_t)get_u64(e + 24);
  x.dict_id = (int64_t)get_u64(e + 32);
  x.metadata_length = (int32_t)get_u32(e + 40);
  x.kind = e[44];
  x.is_delta = e[45] != 0;
  int64_t size = ps->key->size, stop = 0, hdr = 0;
  /* In this order: the subtraction runs only on offsets within [0, size]. */
  bool ok = x.offset == ps->expect && x.metadata_length > 0 && x.body_offset >= x.offset &&
            x.body_offset <= size &&
            ((hdr = x.body_offset - x.offset - x.metadata_length) == 4 || hdr == 8) &&
            x.body_length >= 0 && x.num_rows >= 0 && e[45] <= 1 && e[46] == 0 && e[47] == 0 &&
            !qv_add_overflow(x.body_offset, x.body_length, &stop) && stop <= size &&
            ((x.kind == QV_MSG_RECORD_BATCH && x.dict_id == -1 && !x.is_delta) ||
             x.kind == QV_MSG_DICTIONARY_BATCH);
  if (!ok)
    return qv_error_set(err, QV_EINVAL, "stream index cache: entry %lld is invalid",
                        (long long)ps->k);
  if (!ps->emit(ps->ctx, &x, ps->count))
    return qv_error_set(err, QV_EINVAL, "stream index cache: entry %lld refused by the reader",
                        (long long)ps->k);
  ps->expect = stop;
  ps->k++;
  return QV_OK;
}

static qv_status parse_end(parser *ps, uint64_t computed, const uint8_t *stored, qv_error *err) {
  if (computed != get_u64(stored)) return bad(err, "checksum mismatch");
  if (ps->expect != ps->end) return bad(err, "entries do not end at the recorded end");
  return QV_OK;
}

typedef struct collect {
  qv_index_msg *m;
  int64_t n;
} collect;

static bool collect_one(void *ctx, const qv_index_msg *m, int64_t count) {
  (void)count;
  collect *c = ctx;
  c->m[c->n++] = *m;
  return true;
}

qv_status qv_index_cache_parse(const uint8_t *p, int64_t n, const qv_index_key *key, int64_t first,
                               qv_index_msg **out, int64_t *n_out, int64_t *end_out,
                               qv_compression *comp_out, qv_error *err) {
  *out = NULL;
  *n_out = 0;
  *end_out = 0;
  *comp_out = QV_COMPRESSION_NONE;
  collect c = {NULL, 0};
  parser ps = {key, first, 0, 0, 0, 0, QV_COMPRESSION_NONE, collect_one, &c};
  QV_RETURN_NOT_OK(parse_header(&ps, p, n, err));
  if (ps.count > 0 && (c.m = malloc(sizeof *c.m * (size_t)ps.count)) == NULL)
    return qv_error_set(err, QV_ENOMEM, "out of memory (index cache)");
  qv_status st = QV_OK;
  for (int64_t k = 0; st == QV_OK && k < ps.count; k++)
    st = parse_entry(&ps, p + IDX_HEADER + k * IDX_ENTRY, err);
  if (st == QV_OK) st = parse_end(&ps, XXH64(p, (size_t)(n - 8), 0), p + n - 8, err);
  if (st != QV_OK) {
    free(c.m);
    return st;
  }
  *out = c.m;
  *n_out = c.n;
  *end_out = ps.end;
  *comp_out = ps.comp;
  return QV_OK;
}

qv_status qv_index_cache_encode(const qv_index_key *key, int64_t first, int64_t end,
                                qv_compression comp, const qv_index_msg *msgs, int64_t n,
                                uint8_t **out, int64_t *out_size, qv_error *err) {
  int64_t size = IDX_HEADER + IDX_ENTRY * n + 8;
  uint8_t *p = calloc(1, (size_t)size);
  if (p == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (index cache)");
  memcpy(p, IDX_MAGIC, 8);
  put_u64(p + 8, key->dev);
  put_u64(p + 16, key->ino);
  put_u64(p + 24, (uint64_t)key->size);
  put_u64(p + 32, (uint64_t)key->mtime_ns);
  put_u64(p + 40, key->content);
  put_u64(p + 48, (uint64_t)first);
  put_u64(p + 56, (uint64_t)end);
  put_u64(p + 64, (uint64_t)n);
  put_u64(p + 72, (uint64_t)comp);
  for (int64_t k = 0; k < n; k++) {
    uint8_t *e = p + IDX_HEADER + k * IDX_ENTRY;
    put_u64(e, (uint64_t)msgs[k].offset);
    put_u64(e + 8, (uint64_t)msgs[k].body_offset);
    put_u64(e + 16, (uint64_t)msgs[k].body_length);
    put_u64(e + 24, (uint64_t)msgs[k].num_rows);
    put_u64(e + 32, (uint64_t)msgs[k].dict_id);
    put_u32(e + 40, (uint32_t)msgs[k].metadata_length);
    e[44] = msgs[k].kind;
    e[45] = msgs[k].is_delta ? 1 : 0;
  }
  put_u64(p + size - 8, XXH64(p, (size_t)(size - 8), 0));
  *out = p;
  *out_size = size;
  return QV_OK;
}

bool qv_index_cache_enabled(qv_index_cache_mode mode) {
  if (mode == QV_INDEX_CACHE_OFF) return false;
  const char *v = getenv("QV_INDEX_CACHE");
  if (v != NULL && (strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "no") == 0 ||
                    strcasecmp(v, "false") == 0))
    return false;
  return true;
}

/* The cache directory into buf ("" when none can be named). */
bool qv_cache_dir_name(char *buf, size_t cap) {
  const char *x = getenv("XDG_CACHE_HOME");
  int k;
  if (x != NULL && x[0] == '/') { /* the spec ignores relative values */
    k = snprintf(buf, cap, "%s/quiver", x);
  } else {
    const char *h = getenv("HOME");
    if (h == NULL || h[0] != '/') return false;
    k = snprintf(buf, cap, "%s/.cache/quiver", h);
  }
  return k > 0 && (size_t)k < cap;
}

static bool entry_path(const qv_index_key *key, char *buf, size_t cap) {
  char dir[4096];
  if (!qv_cache_dir_name(dir, sizeof dir)) return false;
  int k = snprintf(buf, cap, "%s/index-%016llx-%016llx.qvi", dir, (unsigned long long)key->dev,
                   (unsigned long long)key->ino);
  return k > 0 && (size_t)k < cap;
}

bool qv_index_cache_load(const qv_index_key *key, int64_t first, qv_index_emit emit, void *ctx,
                         int64_t *end_out, qv_compression *comp_out) {
  char path[4200];
  if (!entry_path(key, path, sizeof path)) return false;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct stat sb;
  /* Streamed through one small buffer (no memory the size of the file),
   * checksummed as it goes. */
  enum { CHUNK = IDX_ENTRY * 1024 };
  uint8_t *buf = NULL;
  XXH64_state_t *h = NULL;
  bool hit = false;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size >= IDX_HEADER + 8 &&
      sb.st_size <= IDX_MAX_FILE && (buf = malloc(CHUNK)) != NULL &&
      (h = XXH64_createState()) != NULL && XXH64_reset(h, 0) == XXH_OK) {
    int64_t n = (int64_t)sb.st_size;
    parser ps = {key, first, 0, 0, 0, 0, QV_COMPRESSION_NONE, emit, ctx};
    bool ok = qv_pread_full(fd, buf, IDX_HEADER, 0) && parse_header(&ps, buf, n, NULL) == QV_OK;
    if (ok) XXH64_update(h, buf, IDX_HEADER);
    int64_t at = IDX_HEADER;
    while (ok && ps.k < ps.count) {
      int64_t m = ps.count - ps.k < CHUNK / IDX_ENTRY ? ps.count - ps.k : CHUNK / IDX_ENTRY;
      ok = qv_pread_full(fd, buf, m * IDX_ENTRY, at);
      if (ok) XXH64_update(h, buf, (size_t)(m * IDX_ENTRY));
      for (int64_t i = 0; ok && i < m; i++)
        ok = parse_entry(&ps, buf + i * IDX_ENTRY, NULL) == QV_OK;
      at += m * IDX_ENTRY;
    }
    ok = ok && qv_pread_full(fd, buf, 8, at) && parse_end(&ps, XXH64_digest(h), buf, NULL) == QV_OK;
    if (ok) {
      *end_out = ps.end;
      *comp_out = ps.comp;
      hit = true;
    }
  }
  if (hit) futimens(fd, NULL); /* most recently used: evicted last */
  XXH64_freeState(h);
  free(buf);
  close(fd);
  return hit;
}

typedef struct cache_file {
  char name[300];
  int64_t size;
  int64_t mtime_ns;
} cache_file;

static int by_mtime(const void *a, const void *b) {
  const cache_file *x = a, *y = b;
  return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

static bool has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), k = strlen(suf);
  return n >= k && strcmp(s + n - k, suf) == 0;
}

int64_t qv_index_cache_max_bytes(void) {
  const char *v = getenv("QV_INDEX_CACHE_MAX_BYTES");
  if (v != NULL && *v != '\0') {
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (end != NULL && *end == '\0' && x >= 0) return (int64_t)x;
  }
  return IDX_DEFAULT_MAX_BYTES;
}

/* Remove the least recently used files named <prefix>*<suffix> until the
 * directory holds at most `max` bytes of them (never `keep`, a name). */
void qv_cache_dir_evict(const char *dir, const char *prefix, const char *suffix, int64_t max,
                        const char *keep) {
  DIR *d = opendir(dir);
  if (d == NULL) return;
  int dfd = dirfd(d);
  cache_file *files = NULL;
  size_t n = 0, cap = 0;
  int64_t total = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    bool idx = strncmp(nm, prefix, strlen(prefix)) == 0 && has_suffix(nm, suffix);
    /* Temporaries are the atomic-file helper's: it reclaims those of dead
     * writers whenever it creates one here (core/atomic_internal.h). */
    if (!idx || strlen(nm) >= sizeof files->name) continue;
    struct stat sb;
    if (fstatat(dfd, nm, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode)) continue;
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 64;
      cache_file *g = realloc(files, sizeof *g * nc);
      if (g == NULL) break;
      files = g;
      cap = nc;
    }
    snprintf(files[n].name, sizeof files[n].name, "%s", nm);
    files[n].size = (int64_t)sb.st_size;
    /* last use: the later of the access and modification times (a hit
     * refreshes one of them) */
    int64_t m = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    int64_t a = (int64_t)sb.st_atim.tv_sec * 1000000000 + sb.st_atim.tv_nsec;
    files[n].mtime_ns = a > m ? a : m;
    total += files[n].size;
    n++;
  }
  if (total > max && n > 0) {
    qsort(files, n, sizeof *files, by_mtime);
    for (size_t i = 0; i < n && total > max; i++)
      if ((keep == NULL || strcmp(files[i].name, keep) != 0) &&
          unlinkat(dfd, files[i].name, 0) == 0)
        total -= files[i].size;
  }
  free(files);
  closedir(d);
}

/* mkdir -p of the cache directory (0700 for what it creates). */
bool qv_cache_dir_create(char *dir) {
  struct stat sb;
  if (stat(dir, &sb) == 0) return S_ISDIR(sb.st_mode);
  for (char *s = dir + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
      *s = '/';
      return false;
    }
    *s = '/';
  }
  return mkdir(dir, 0700) == 0 || errno == EEXIST;
}

bool qv_index_cache_store(const qv_index_key *key, int64_t first, int64_t end, qv_compression comp,
                          const qv_index_msg *msgs, int64_t n) {
  char dir[4096], path[4200];
  int64_t max = qv_index_cache_max_bytes();
  if ((int64_t)IDX_HEADER + 8 + (int64_t)IDX_ENTRY * n > max) return false;
  if (!qv_cache_dir_name(dir, sizeof dir) || !qv_cache_dir_create(dir) ||
      !entry_path(key, path, sizeof path))
    return false;
  uint8_t *bytes = NULL;
  int64_t size = 0;
  if (qv_index_cache_encode(key, first, end, comp, msgs, n, &bytes, &size, NULL) != QV_OK)
    return false;
  /* The one atomic writer (core/atomic_internal.h): a hidden temporary
   * carrying this process's pid (reclaimed if it dies), fsync, rename. */
  qv_atomic_file *f = NULL;
  bool ok = qv_atomic_file_open(path, &f, NULL) == QV_OK;
  if (ok && qv_atomic_file_write(f, bytes, size, NULL) != QV_OK) {
    qv_atomic_file_abort(f);
    ok = false;
  }
  free(bytes);
  if (!ok || qv_atomic_file_commit(f, NULL) != QV_OK) return false;
  qv_cache_dir_evict(dir, "index-", ".qvi", max, NULL);
  return true;
}
