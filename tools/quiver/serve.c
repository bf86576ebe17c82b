/*
 * serve.c — `quiver serve PATH`: a local, read-only dataset viewer. The
 * HTTP server is GNU libmicrohttpd (one thread per connection, bounded
 * connections, request memory and idle time); the page's HTML/CSS/JS are
 * embedded in the binary (serve_assets.c, generated from tools/quiver/web/)
 * and the JSON API (docs/serve.md) reads data only through the dataset
 * layer: the path is opened once (every split of a DatasetDict) with the
 * CLI's one open path, rows come out in `quiver head`'s JSON mapping, and
 * where/sort/seed views are qv_dataset_filter/sort/shuffle results (what
 * `quiver filter/sort/shuffle` compute), kept in a small LRU cache. No URL
 * ever names a file. A data file replaced or truncated while serving is
 * noticed (file identity checked at most twice a second, QV_ECHANGED from a
 * guarded read) and the path reopened; a failure is a JSON error.
 * Top layer.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "quiver/dataset.h"
#include "quiver/expr.h"
#include "quiver/guard.h"
#include "quiver/hf.h"
#include "quiver/print.h"
#include "serve.h"

extern char **environ;

static const char kServeHelp[] =
    "usage: quiver serve PATH [--host=127.0.0.1] [--port=8000] [--open] [--json]\n"
    "\n"
    "Serve a read-only viewer of PATH (what 'quiver info'/'head' take: an Arrow\n"
    "file or stream, a save_to_disk Dataset or DatasetDict directory (all its\n"
    "splits), a load_dataset cache directory, an indices mapping file) at\n"
    "http://HOST:PORT/ until interrupted (Ctrl-C / SIGTERM). The page shows the\n"
    "schema and features, a paged table with filter/sort/shuffle, column\n"
    "statistics, images and audio; the JSON API it uses is in docs/serve.md.\n"
    "  --host=ADDR   address to bind (default 127.0.0.1; any other prints a\n"
    "                warning: the viewer has no authentication)\n"
    "  --port=N      port (default 8000; 0 picks a free one, printed)\n"
    "  --open        open the page in a browser (xdg-open)\n"
    "  --json        print the address as one JSON line {\"url\",\"host\",\"port\"}\n";

#define SERVE_MAX_LENGTH 1000        /* rows per /api/rows answer */
#define SERVE_DEFAULT_LENGTH 100     /* rows when length= is absent */
#define SERVE_CACHE_ENTRIES 8        /* where/sort/seed views kept */
#define SERVE_CACHE_ROWS 200000000   /* total rows of the views kept */
#define SERVE_MAX_ANSWER (256 << 20) /* bytes of one JSON answer */
#define SERVE_CHECK_NS 500000000LL   /* file identity checked at most this often */

/* ------------------------------------------------------------------------ */
/* The served datasets                                                       */

typedef struct split_entry {
  char *name;
  qv_dataset *ds;
} split_entry;

typedef struct file_sig {
  char *path;
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
} file_sig;

typedef struct view_entry {
  char *key; /* split \x1f where \x1f sort \x1f seed; NULL when free */
  qv_dataset *ds;
  uint64_t used;
} view_entry;

typedef struct server {
  const char *path;
  pthread_mutex_t mu; /* guards everything below */
  split_entry *splits;
  int64_t n_splits;
  file_sig *files;
  int64_t n_files;
  int64_t last_check_ns;
  uint64_t generation; /* bumped by every reopen */
  char reopen_error[1600];
  view_entry cache[SERVE_CACHE_ENTRIES];
  uint64_t tick;
} server;

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p != NULL) memcpy(p, s, n);
  return p;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void free_splits(split_entry *s, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    free(s[i].name);
    qv_dataset_unref(s[i].ds);
  }
  free(s);
}

static void free_files(file_sig *f, int64_t n) {
  for (int64_t i = 0; i < n; i++) free(f[i].path);
  free(f);
}

static void sig_stat(file_sig *f) {
  struct stat st;
  if (stat(f->path, &st) != 0) {
    memset(&st, 0, sizeof st);
  }
  f->dev = st.st_dev;
  f->ino = st.st_ino;
  f->size = st.st_size;
  f->mtime = st.st_mtim;
}

static bool sig_same(const file_sig *f) {
  file_sig now = *f;
  sig_stat(&now);
  return now.dev == f->dev && now.ino == f->ino && now.size == f->size &&
         now.mtime.tv_sec == f->mtime.tv_sec && now.mtime.tv_nsec == f->mtime.tv_nsec;
}

/* Open every split of `path`: a DatasetDict (or a cache directory with
 * builder splits) gives one entry per split; anything else one entry. The
 * files behind them are recorded for change detection. */
static qv_status open_all(const char *path, split_entry **out, int64_t *n_out, file_sig **files,
                          int64_t *n_files, qv_error *err) {
  *out = NULL;
  *n_out = 0;
  *files = NULL;
  *n_files = 0;
  qv_path_info info;
  QV_RETURN_NOT_OK(qv_path_classify(path, &info, err));
  char **names = NULL;
  int64_t n_names = 0;
  qv_status st = QV_OK;
  if (info.kind == QV_PATH_DATASET_DICT || info.kind == QV_PATH_CACHE_DIR) {
    st = qv_dataset_dict_splits(path, &names, &n_names, err);
    if (st != QV_OK && info.kind == QV_PATH_CACHE_DIR) {
      st = QV_OK;
      n_names = 0;
    }
  }
  int64_t n = n_names > 0 ? n_names : 1;
  split_entry *s = st == QV_OK ? calloc((size_t)n, sizeof *s) : NULL;
  if (st == QV_OK && s == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  for (int64_t i = 0; st == QV_OK && i < n; i++) {
    st = cli_open_classified(&info, n_names > 0 ? names[i] : NULL, NULL, &s[i].ds, err);
    if (st != QV_OK) break;
    const char *nm = n_names > 0 ? names[i] : qv_dataset_split(s[i].ds);
    s[i].name = dup_str(nm != NULL && *nm ? nm : "default");
    if (s[i].name == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  if (names != NULL) qv_table_free_paths(names, n_names);
  qv_path_info_reset(&info);
  /* The files behind the datasets. */
  file_sig *f = NULL;
  int64_t nf = 0;
  for (int64_t i = 0; st == QV_OK && i < n; i++) {
    char **paths = NULL;
    int64_t np = 0;
    if (qv_dataset_cache_files(s[i].ds, &paths, &np, NULL) != QV_OK) continue;
    file_sig *g = realloc(f, (size_t)(nf + np + 1) * sizeof *f);
    if (g == NULL) {
      qv_table_free_paths(paths, np);
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
      break;
    }
    f = g;
    for (int64_t k = 0; k < np; k++) {
      f[nf].path = dup_str(paths[k]);
      if (f[nf].path == NULL) continue;
      sig_stat(&f[nf]);
      nf++;
    }
    qv_table_free_paths(paths, np);
  }
  if (st != QV_OK) {
    free_splits(s, n);
    free_files(f, nf);
    return st;
  }
  *out = s;
  *n_out = n;
  *files = f;
  *n_files = nf;
  return QV_OK;
}

static void cache_clear_locked(server *srv) {
  for (int i = 0; i < SERVE_CACHE_ENTRIES; i++) {
    free(srv->cache[i].key);
    qv_dataset_unref(srv->cache[i].ds);
    srv->cache[i].key = NULL;
    srv->cache[i].ds = NULL;
  }
}

/* Reopen the path when `force` or when a file behind it changed (checked
 * at most every SERVE_CHECK_NS). On failure the old datasets stay and the
 * reason is kept for the answers. Takes the lock. */
static void server_refresh(server *srv, bool force) {
  pthread_mutex_lock(&srv->mu);
  int64_t t = now_ns();
  bool changed = force;
  if (!changed && t - srv->last_check_ns >= SERVE_CHECK_NS) {
    srv->last_check_ns = t;
    for (int64_t i = 0; i < srv->n_files && !changed; i++) changed = !sig_same(&srv->files[i]);
  }
  if (changed) {
    split_entry *s;
    file_sig *f;
    int64_t n, nf;
    qv_error err;
    if (open_all(srv->path, &s, &n, &f, &nf, &err) == QV_OK) {
      free_splits(srv->splits, srv->n_splits);
      free_files(srv->files, srv->n_files);
      srv->splits = s;
      srv->n_splits = n;
      srv->files = f;
      srv->n_files = nf;
      srv->reopen_error[0] = '\0';
      fprintf(stderr, "quiver serve: %s changed; reopened\n", srv->path);
    } else {
      snprintf(srv->reopen_error, sizeof srv->reopen_error, "%s changed and cannot be reopened: %s",
               srv->path, err.message);
      /* Check again soon, but not on every request. */
    }
    cache_clear_locked(srv);
    srv->generation++;
    srv->last_check_ns = t;
  }
  pthread_mutex_unlock(&srv->mu);
}

/* ------------------------------------------------------------------------ */
/* Answers                                                                   */

typedef struct request {
  struct MHD_Connection *c;
  server *srv;
} request;

static void add_common_headers(struct MHD_Response *r, const char *mime) {
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, mime);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  MHD_add_response_header(r, "X-Frame-Options", "DENY");
}

static enum MHD_Result send_bytes(struct MHD_Connection *c, unsigned code, const char *mime,
                                  const void *data, size_t n, enum MHD_ResponseMemoryMode mode) {
  struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)data, mode);
  if (r == NULL) return MHD_NO;
  add_common_headers(r, mime);
  if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  enum MHD_Result ret = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned code, const qv_strbuf *sb) {
  return send_bytes(c, code, "application/json", qv_strbuf_cstr(sb), (size_t)sb->len,
                    MHD_RESPMEM_MUST_COPY);
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned code, const char *fmt, ...)
    QV_PRINTF(3, 4);
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned code, const char *fmt, ...) {
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_strbuf_printf(&sb, NULL, "{\"error\": ");
  if (qv_json_append_string(&sb, (const uint8_t *)msg, (int64_t)strlen(msg), NULL) !=
      QV_OK) { /* shorter text */
  }
  qv_strbuf_printf(&sb, NULL, ", \"status\": %u}", code);
  enum MHD_Result r = send_json(c, code, &sb);
  qv_strbuf_reset(&sb);
  return r;
}

static unsigned http_code(qv_status st) {
  switch (st) {
    case QV_EARG:
    case QV_ETYPE:
    case QV_ERANGE: return MHD_HTTP_BAD_REQUEST;
    case QV_ECHANGED: return MHD_HTTP_SERVICE_UNAVAILABLE;
    case QV_ENOMEM: return MHD_HTTP_INSUFFICIENT_STORAGE;
    default: return MHD_HTTP_INTERNAL_SERVER_ERROR;
  }
}

static enum MHD_Result send_status(struct MHD_Connection *c, qv_status st, const qv_error *err) {
  return send_error(c, http_code(st), "%s", err->message);
}

static const char *arg(struct MHD_Connection *c, const char *name) {
  return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* An integer parameter: absent gives `def`; junk, negative or overflow is
 * false (the caller answers 400). */
static bool int_arg(struct MHD_Connection *c, const char *name, int64_t def, int64_t *out) {
  const char *v = arg(c, name);
  if (v == NULL || *v == '\0') {
    *out = def;
    return true;
  }
  return cli_parse_i64(v, out);
}

/* The split named by split= (the first when absent): a new reference, or
 * NULL with *code / msg set. */
static qv_dataset *get_split(server *srv, const char *name, char *msg, size_t cap, unsigned *code) {
  qv_dataset *ds = NULL;
  pthread_mutex_lock(&srv->mu);
  if (srv->reopen_error[0]) {
    snprintf(msg, cap, "%s", srv->reopen_error);
    *code = MHD_HTTP_SERVICE_UNAVAILABLE;
  } else {
    for (int64_t i = 0; i < srv->n_splits && ds == NULL; i++)
      if (name == NULL || *name == '\0' || strcmp(srv->splits[i].name, name) == 0)
        ds = qv_dataset_ref(srv->splits[i].ds);
    if (ds == NULL) {
      int k = snprintf(msg, cap, "unknown split '%s' (splits:", name);
      for (int64_t i = 0; i < srv->n_splits && k > 0 && (size_t)k < cap; i++)
        k += snprintf(msg + k, cap - (size_t)k, " %s", srv->splits[i].name);
      if (k > 0 && (size_t)k < cap) snprintf(msg + k, cap - (size_t)k, ")");
      *code = MHD_HTTP_NOT_FOUND;
    }
  }
  pthread_mutex_unlock(&srv->mu);
  return ds;
}

/* sort=COL[:asc|:desc][,COL...] through qv_dataset_sort (nulls last, as
 * `quiver sort`). */
static qv_status apply_sort(qv_dataset *ds, const char *spec, const qv_dataset_options *o,
                            qv_dataset **out, qv_error *err) {
  char *copy = dup_str(spec);
  int32_t n = 1;
  for (const char *p = spec; *p; p++) n += *p == ',';
  const char **cols = calloc((size_t)n, sizeof *cols);
  bool *desc = calloc((size_t)n, sizeof *desc);
  qv_status st = copy && cols && desc ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory");
  int32_t k = 0;
  for (char *save = NULL, *tok = st == QV_OK ? strtok_r(copy, ",", &save) : NULL;
       tok != NULL && st == QV_OK; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strrchr(tok, ':');
    if (colon != NULL && (strcmp(colon, ":desc") == 0 || strcmp(colon, ":asc") == 0)) {
      desc[k] = colon[1] == 'd';
      *colon = '\0';
    }
    if (*tok == '\0') st = qv_error_set(err, QV_EARG, "sort: empty column name in '%s'", spec);
    else if (qv_dataset_column_index(ds, tok) < 0)
      st = qv_error_set(err, QV_EARG, "sort: unknown column '%s'", tok);
    cols[k++] = tok;
  }
  if (st == QV_OK && k == 0) st = qv_error_set(err, QV_EARG, "sort: no column in '%s'", spec);
  if (st == QV_OK) st = qv_dataset_sort(ds, cols, k, desc, QV_NULLS_AT_END, o, out, err);
  free(cols);
  free(desc);
  free(copy);
  return st;
}

/* The view a request asks for: split, then where= (qv_dataset_filter),
 * then sort= (qv_dataset_sort), then seed= (qv_dataset_shuffle) — the
 * functions `quiver filter/sort/shuffle` call, kept in memory (nothing is
 * written: the viewer is read-only). Cached per (split, where, sort, seed).
 * *out: a new reference; on failure *code is the HTTP status. */
static qv_status get_view(server *srv, struct MHD_Connection *c, qv_dataset **out, unsigned *code,
                          qv_error *err) {
  *out = NULL;
  const char *split = arg(c, "split"), *where = arg(c, "where"), *sort = arg(c, "sort"),
             *seed_s = arg(c, "seed");
  if (where != NULL && *where == '\0') where = NULL;
  if (sort != NULL && *sort == '\0') sort = NULL;
  if (seed_s != NULL && *seed_s == '\0') seed_s = NULL;
  int64_t seed = 0;
  if (seed_s != NULL && !cli_parse_i64(seed_s, &seed)) {
    *code = MHD_HTTP_BAD_REQUEST;
    return qv_error_set(err, QV_EARG, "seed must be a non-negative integer, found '%s'", seed_s);
  }
  char msg[2048];
  qv_dataset *base = get_split(srv, split, msg, sizeof msg, code);
  if (base == NULL) return qv_error_set(err, QV_EARG, "%s", msg);
  if (where == NULL && sort == NULL && seed_s == NULL) {
    *out = base;
    return QV_OK;
  }
  qv_strbuf key;
  qv_strbuf_init(&key);
  qv_status st = qv_strbuf_printf(&key, err, "%s\x1f%s\x1f%s", split ? split : "",
                                  where ? where : "", sort ? sort : "");
  if (st == QV_OK) st = qv_strbuf_printf(&key, err, "\x1f%s", seed_s ? seed_s : "");
  if (st != QV_OK) {
    qv_dataset_unref(base);
    qv_strbuf_reset(&key);
    *code = MHD_HTTP_INSUFFICIENT_STORAGE;
    return st;
  }
  uint64_t gen;
  pthread_mutex_lock(&srv->mu);
  gen = srv->generation;
  for (int i = 0; i < SERVE_CACHE_ENTRIES && *out == NULL; i++)
    if (srv->cache[i].key != NULL && strcmp(srv->cache[i].key, qv_strbuf_cstr(&key)) == 0) {
      *out = qv_dataset_ref(srv->cache[i].ds);
      srv->cache[i].used = ++srv->tick;
    }
  pthread_mutex_unlock(&srv->mu);
  if (*out != NULL) {
    qv_dataset_unref(base);
    qv_strbuf_reset(&key);
    return QV_OK;
  }
  qv_dataset_options o;
  memset(&o, 0, sizeof o);
  o.keep_in_memory = true;
  qv_dataset *cur = base, *next = NULL;
  if (where != NULL) {
    qv_bound_expr *b = NULL;
    st = qv_predicate_compile(where, qv_dataset_schema(cur), &b, err);
    qv_bound_expr_free(b);
    if (st == QV_OK) st = qv_dataset_filter(cur, where, &o, &next, err);
    else if (st == QV_EINVAL || st == QV_ETYPE) st = qv_error_prefix(err, QV_EARG, "where: ");
    if (st == QV_OK) {
      qv_dataset_unref(cur);
      cur = next;
    }
  }
  if (st == QV_OK && sort != NULL) {
    st = apply_sort(cur, sort, &o, &next, err);
    if (st == QV_OK) {
      qv_dataset_unref(cur);
      cur = next;
    }
  }
  if (st == QV_OK && seed_s != NULL) {
    st = qv_dataset_shuffle(cur, (uint64_t)seed, &o, &next, err);
    if (st == QV_OK) {
      qv_dataset_unref(cur);
      cur = next;
    }
  }
  if (st != QV_OK) {
    qv_dataset_unref(cur);
    qv_strbuf_reset(&key);
    *code = http_code(st);
    return st;
  }
  /* Keep it: evict the least recently used entries while over the bounds. */
  pthread_mutex_lock(&srv->mu);
  if (gen == srv->generation && qv_dataset_num_rows(cur) <= SERVE_CACHE_ROWS) {
    for (;;) {
      int64_t rows = qv_dataset_num_rows(cur);
      int free_slot = -1, lru = -1;
      for (int i = 0; i < SERVE_CACHE_ENTRIES; i++) {
        if (srv->cache[i].key == NULL) {
          if (free_slot < 0) free_slot = i;
          continue;
        }
        rows += qv_dataset_num_rows(srv->cache[i].ds);
        if (lru < 0 || srv->cache[i].used < srv->cache[lru].used) lru = i;
      }
      if (free_slot >= 0 && rows <= SERVE_CACHE_ROWS) {
        srv->cache[free_slot].key = dup_str(qv_strbuf_cstr(&key));
        if (srv->cache[free_slot].key != NULL) {
          srv->cache[free_slot].ds = qv_dataset_ref(cur);
          srv->cache[free_slot].used = ++srv->tick;
        }
        break;
      }
      if (lru < 0) break;
      free(srv->cache[lru].key);
      qv_dataset_unref(srv->cache[lru].ds);
      srv->cache[lru].key = NULL;
      srv->cache[lru].ds = NULL;
    }
  }
  pthread_mutex_unlock(&srv->mu);
  qv_strbuf_reset(&key);
  *out = cur;
  return QV_OK;
}

const char *serve_column_kind(const qv_hf_feature *f, const qv_type *t) {
  if (f != NULL && f->kind == QV_HF_CLASS_LABEL) return "label";
  if (f != NULL && f->kind == QV_HF_MEDIA && f->type_name != NULL) {
    if (strcmp(f->type_name, "Image") == 0) return "image";
    if (strcmp(f->type_name, "Audio") == 0) return "audio";
    return "media";
  }
  switch (t->id) {
    case QV_BOOL: return "bool";
    case QV_INT8:
    case QV_UINT8:
    case QV_INT16:
    case QV_UINT16:
    case QV_INT32:
    case QV_UINT32:
    case QV_INT64:
    case QV_UINT64:
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE: return "number";
    case QV_STRING:
    case QV_LARGE_STRING:
    case QV_STRING_VIEW: return "string";
    case QV_BINARY:
    case QV_LARGE_BINARY:
    case QV_BINARY_VIEW:
    case QV_FIXED_SIZE_BINARY: return "binary";
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_FIXED_SIZE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: return "list";
    case QV_STRUCT: return "struct";
    default: return "other";
  }
}

static qv_status json_str(qv_strbuf *sb, const char *s, qv_error *err) {
  return qv_json_append_string(sb, (const uint8_t *)s, (int64_t)strlen(s), err);
}

/* One split's entry of /api/info. */
static qv_status info_split(const split_entry *e, qv_strbuf *sb, qv_error *err) {
  qv_dataset *ds = e->ds;
  const qv_schema *schema = qv_dataset_schema(ds);
  const qv_hf_feature *features = qv_dataset_features(ds);
  QV_RETURN_NOT_OK(qv_strbuf_printf(sb, err, "{\"name\": "));
  QV_RETURN_NOT_OK(json_str(sb, e->name, err));
  QV_RETURN_NOT_OK(qv_strbuf_printf(sb, err, ", \"num_rows\": %lld, \"num_columns\": %d",
                                    (long long)qv_dataset_num_rows(ds),
                                    (int)qv_dataset_num_columns(ds)));
  const char *fp = qv_dataset_fingerprint(ds);
  QV_RETURN_NOT_OK(qv_strbuf_printf(sb, err, ", \"fingerprint\": "));
  QV_RETURN_NOT_OK(fp ? json_str(sb, fp, err) : qv_strbuf_append_str(sb, "null", err));
  QV_RETURN_NOT_OK(
      qv_strbuf_printf(sb, err, ", \"indices\": %s", qv_dataset_indices(ds) ? "true" : "false"));
  QV_RETURN_NOT_OK(qv_strbuf_append_str(sb, ", \"columns\": [", err));
  const qv_type *st = schema->type;
  for (int32_t i = 0; i < st->n_children; i++) {
    const qv_field *fld = &st->children[i];
    const qv_hf_feature *f = features ? qv_hf_feature_get(features, fld->name) : NULL;
    char tbuf[512];
    qv_type_to_string(fld->type, tbuf, sizeof tbuf);
    QV_RETURN_NOT_OK(qv_strbuf_append_str(sb, i ? ", {\"name\": " : "{\"name\": ", err));
    QV_RETURN_NOT_OK(json_str(sb, fld->name, err));
    QV_RETURN_NOT_OK(qv_strbuf_append_str(sb, ", \"type\": ", err));
    QV_RETURN_NOT_OK(json_str(sb, tbuf, err));
    QV_RETURN_NOT_OK(qv_strbuf_printf(sb, err, ", \"kind\": \"%s\", \"nullable\": %s",
                                      serve_column_kind(f, fld->type),
                                      fld->nullable ? "true" : "false"));
    QV_RETURN_NOT_OK(qv_strbuf_append_str(sb, ", \"feature\": ", err));
    QV_RETURN_NOT_OK(f ? qv_hf_feature_emit(f, QV_HF_JSON_COMPACT, sb, err)
                       : qv_strbuf_append_str(sb, "null", err));
    if (f != NULL && f->kind == QV_HF_CLASS_LABEL) {
      QV_RETURN_NOT_OK(qv_strbuf_append_str(sb, ", \"names\": [", err));
      for (int64_t k = 0; k < f->n_names; k++) {
        if (k) QV_RETURN_NOT_OK(qv_strbuf_append_str(sb, ", ", err));
        QV_RETURN_NOT_OK(json_str(sb, f->names[k], err));
      }
      QV_RETURN_NOT_OK(qv_strbuf_append_char(sb, ']', err));
    }
    QV_RETURN_NOT_OK(qv_strbuf_append_char(sb, '}', err));
  }
  QV_RETURN_NOT_OK(qv_strbuf_append_str(sb, "], \"features\": ", err));
  QV_RETURN_NOT_OK(features ? qv_hf_feature_emit(features, QV_HF_JSON_COMPACT, sb, err)
                            : qv_strbuf_append_str(sb, "null", err));
  QV_RETURN_NOT_OK(qv_strbuf_append_str(sb, ", \"files\": [", err));
  char **paths = NULL;
  int64_t np = 0, total = 0;
  if (qv_dataset_cache_files(ds, &paths, &np, NULL) != QV_OK) np = 0;
  qv_status s2 = QV_OK;
  for (int64_t k = 0; k < np && s2 == QV_OK; k++) {
    struct stat fs;
    int64_t size = stat(paths[k], &fs) == 0 ? (int64_t)fs.st_size : -1;
    if (size > 0) total += size;
    s2 = qv_strbuf_append_str(sb, k ? ", {\"path\": " : "{\"path\": ", err);
    if (s2 == QV_OK) s2 = json_str(sb, paths[k], err);
    if (s2 == QV_OK) s2 = qv_strbuf_printf(sb, err, ", \"size\": %lld}", (long long)size);
  }
  if (paths != NULL) qv_table_free_paths(paths, np);
  QV_RETURN_NOT_OK(s2);
  return qv_strbuf_printf(sb, err, "], \"size\": %lld}", (long long)total);
}

static enum MHD_Result api_info(request *rq) {
  server *srv = rq->srv;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_error err;
  pthread_mutex_lock(&srv->mu);
  qv_status st = qv_strbuf_append_str(&sb, "{\"path\": ", &err);
  if (st == QV_OK) st = json_str(&sb, srv->path, &err);
  if (st == QV_OK) st = qv_strbuf_printf(&sb, &err, ", \"version\": \"%s\"", qv_version());
  if (st == QV_OK) st = qv_strbuf_append_str(&sb, ", \"splits\": [", &err);
  for (int64_t i = 0; st == QV_OK && i < srv->n_splits; i++) {
    if (i) st = qv_strbuf_append_str(&sb, ", ", &err);
    if (st == QV_OK) st = info_split(&srv->splits[i], &sb, &err);
  }
  if (st == QV_OK) st = qv_strbuf_printf(&sb, &err, "], \"max_length\": %d}\n", SERVE_MAX_LENGTH);
  pthread_mutex_unlock(&srv->mu);
  enum MHD_Result r =
      st == QV_OK ? send_json(rq->c, MHD_HTTP_OK, &sb) : send_status(rq->c, st, &err);
  qv_strbuf_reset(&sb);
  return r;
}

/* Rows [offset, offset+length) of a view, each as `quiver head` prints it:
 * qv_dataset_slice (zero copy of the mapped batches without an indices
 * mapping, a gather with one), then the slice's batches formatted. What
 * it holds is reachable from the context, as a guard's recovery needs. */
typedef struct rows_ctx {
  qv_dataset *view;
  int64_t offset, length;
  qv_table *slice;
  qv_array *batch;
  qv_strbuf *sb;
} rows_ctx;

static qv_status rows_body(void *p, qv_error *err) {
  rows_ctx *x = p;
  QV_RETURN_NOT_OK(qv_strbuf_append_str(x->sb, "\"rows\": [", err));
  if (x->length > 0)
    QV_RETURN_NOT_OK(qv_dataset_slice(x->view, x->offset, x->length, &x->slice, err));
  int64_t done = 0;
  for (int64_t bi = 0; x->slice != NULL && bi < qv_table_num_batches(x->slice); bi++) {
    qv_array_unref(x->batch);
    x->batch = NULL;
    QV_RETURN_NOT_OK(qv_table_batch(x->slice, bi, &x->batch, err));
    for (int64_t i = 0; i < x->batch->length; i++, done++) {
      if (done) QV_RETURN_NOT_OK(qv_strbuf_append_str(x->sb, ",\n", err));
      QV_RETURN_NOT_OK(qv_format_row_json(x->batch, i, x->sb, err));
      if (x->sb->len > SERVE_MAX_ANSWER)
        return qv_error_set(err, QV_ENOMEM,
                            "the answer would exceed %d MiB at row %lld: ask for fewer rows",
                            SERVE_MAX_ANSWER >> 20, (long long)(x->offset + done));
    }
  }
  if (done != x->length)
    return qv_error_set(err, QV_EINVAL, "rows %lld..%lld: the slice has %lld rows",
                        (long long)x->offset, (long long)(x->offset + x->length), (long long)done);
  return qv_strbuf_append_str(x->sb, "]}\n", err);
}

/* columns=A,B,...: the view reduced to those columns (qv_dataset_select_columns),
 * in the order given. */
static qv_status select_columns(qv_dataset **view, const char *spec, qv_error *err) {
  char *copy = dup_str(spec);
  int32_t n = 1;
  for (const char *p = spec; *p; p++) n += *p == ',';
  const char **names = calloc((size_t)n, sizeof *names);
  qv_status st = copy && names ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory");
  int32_t k = 0;
  for (char *save = NULL, *tok = st == QV_OK ? strtok_r(copy, ",", &save) : NULL;
       tok != NULL && st == QV_OK; tok = strtok_r(NULL, ",", &save)) {
    if (qv_dataset_column_index(*view, tok) < 0)
      st = qv_error_set(err, QV_EARG, "columns: unknown column '%s'", tok);
    names[k++] = tok;
  }
  if (st == QV_OK && k == 0) st = qv_error_set(err, QV_EARG, "columns: no column in '%s'", spec);
  qv_dataset *sub = NULL;
  if (st == QV_OK) st = qv_dataset_select_columns(*view, names, k, &sub, err);
  if (st == QV_OK) {
    qv_dataset_unref(*view);
    *view = sub;
  }
  free(names);
  free(copy);
  return st;
}

static enum MHD_Result api_rows(request *rq, bool retried) {
  int64_t t0 = now_ns();
  int64_t offset, length;
  if (!int_arg(rq->c, "offset", 0, &offset))
    return send_error(rq->c, MHD_HTTP_BAD_REQUEST,
                      "offset must be a non-negative integer, found '%s'", arg(rq->c, "offset"));
  if (!int_arg(rq->c, "length", SERVE_DEFAULT_LENGTH, &length) || length > SERVE_MAX_LENGTH)
    return send_error(rq->c, MHD_HTTP_BAD_REQUEST,
                      "length must be an integer from 0 to %d, found '%s'", SERVE_MAX_LENGTH,
                      arg(rq->c, "length"));
  qv_error err;
  unsigned code = 0;
  qv_dataset *view = NULL;
  qv_status st = get_view(rq->srv, rq->c, &view, &code, &err);
  if (st != QV_OK) {
    if (st == QV_ECHANGED && !retried) {
      server_refresh(rq->srv, true);
      return api_rows(rq, true);
    }
    return send_error(rq->c, code, "%s", err.message);
  }
  const char *columns = arg(rq->c, "columns");
  if (columns != NULL && *columns != '\0' && (st = select_columns(&view, columns, &err)) != QV_OK) {
    qv_dataset_unref(view);
    return send_status(rq->c, st, &err);
  }
  int64_t n = qv_dataset_num_rows(view);
  if (offset > n) {
    qv_dataset_unref(view);
    return send_error(rq->c, MHD_HTTP_BAD_REQUEST, "offset %lld is past the %lld rows",
                      (long long)offset, (long long)n);
  }
  if (length > n - offset) length = n - offset;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  rows_ctx x = {view, offset, length, NULL, NULL, &sb};
  const char *split = arg(rq->c, "split");
  if (st == QV_OK) st = qv_strbuf_append_str(&sb, "{\"split\": ", &err);
  if (st == QV_OK) {
    const char *name = split;
    if (name == NULL || *name == '\0') {
      pthread_mutex_lock(&rq->srv->mu);
      name = NULL;
      st = json_str(&sb, rq->srv->n_splits > 0 ? rq->srv->splits[0].name : "", &err);
      pthread_mutex_unlock(&rq->srv->mu);
    } else {
      st = json_str(&sb, name, &err);
    }
  }
  if (st == QV_OK)
    st = qv_strbuf_printf(&sb, &err, ", \"offset\": %lld, \"length\": %lld, \"num_rows\": %lld, ",
                          (long long)offset, (long long)length, (long long)n);
  if (st == QV_OK) st = qv_guard_run(rows_body, &x, &err);
  qv_array_unref(x.batch);
  qv_table_unref(x.slice);
  qv_dataset_unref(view);
  enum MHD_Result r;
  if (st == QV_ECHANGED && !retried) {
    qv_strbuf_reset(&sb);
    server_refresh(rq->srv, true);
    return api_rows(rq, true);
  }
  if (st == QV_OK) {
    /* Server-Timing: the server's time for the answer (view, gather,
     * formatting), shown by browsers' devtools and read by the bench. */
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        (size_t)sb.len, (void *)qv_strbuf_cstr(&sb), MHD_RESPMEM_MUST_COPY);
    if (resp == NULL) {
      qv_strbuf_reset(&sb);
      return MHD_NO;
    }
    add_common_headers(resp, "application/json");
    char timing[64];
    snprintf(timing, sizeof timing, "total;dur=%.3f", (double)(now_ns() - t0) / 1e6);
    MHD_add_response_header(resp, "Server-Timing", timing);
    r = MHD_queue_response(rq->c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
  } else {
    r = send_status(rq->c, st, &err);
  }
  qv_strbuf_reset(&sb);
  return r;
}

/* The content type of a payload by its first bytes; application/octet-stream
 * when unknown (never text/html: the bytes come from the data). */
static const char *sniff(const uint8_t *p, int64_t n) {
  if (n >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) return "image/png";
  if (n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return "image/jpeg";
  if (n >= 6 && (memcmp(p, "GIF87a", 6) == 0 || memcmp(p, "GIF89a", 6) == 0)) return "image/gif";
  if (n >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0) return "image/webp";
  if (n >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WAVE", 4) == 0) return "audio/wav";
  if (n >= 2 && p[0] == 'B' && p[1] == 'M') return "image/bmp";
  if (n >= 4 && (memcmp(p, "II*\0", 4) == 0 || memcmp(p, "MM\0*", 4) == 0)) return "image/tiff";
  if (n >= 3 && memcmp(p, "ID3", 3) == 0) return "audio/mpeg";
  if (n >= 2 && p[0] == 0xFF && (p[1] & 0xE0) == 0xE0) return "audio/mpeg";
  if (n >= 4 && memcmp(p, "fLaC", 4) == 0) return "audio/flac";
  if (n >= 4 && memcmp(p, "OggS", 4) == 0) return "audio/ogg";
  if (n >= 12 && memcmp(p + 4, "ftyp", 4) == 0) return "video/mp4";
  if (n >= 4 && memcmp(p, "%PDF", 4) == 0) return "application/pdf";
  return "application/octet-stream";
}

typedef struct cell_ctx {
  qv_dataset *view;
  int64_t row;
  const char *column;
  qv_dataset *one;
  qv_array *batch;
  uint8_t *copy;
  int64_t len;
  const char *mime;
  unsigned code;
  char msg[512];
} cell_ctx;

static qv_status cell_body(void *p, qv_error *err) {
  cell_ctx *x = p;
  QV_RETURN_NOT_OK(qv_dataset_select_columns(x->view, &x->column, 1, &x->one, err));
  QV_RETURN_NOT_OK(qv_dataset_take(x->one, &x->row, 1, &x->batch, err));
  const qv_array *a = x->batch->children[0];
  bool is_string = false;
  if (!qv_array_is_valid(a, 0)) {
    x->code = MHD_HTTP_NOT_FOUND;
    snprintf(x->msg, sizeof x->msg, "row %lld of column '%s' is null", (long long)x->row,
             x->column);
    return QV_OK;
  }
  int64_t i = 0;
  if (a->type->id == QV_STRUCT) { /* Image/Audio: struct<bytes, path> */
    const qv_array *child = NULL;
    for (int32_t k = 0; k < a->type->n_children; k++)
      if (strcmp(a->type->children[k].name, "bytes") == 0) child = a->children[k];
    if (child == NULL) {
      x->code = MHD_HTTP_BAD_REQUEST;
      snprintf(x->msg, sizeof x->msg, "column '%s' is a struct without a 'bytes' field", x->column);
      return QV_OK;
    }
    i = a->offset; /* the struct's offset shifts its children */
    a = child;
    if (!qv_array_is_valid(a, i)) {
      x->code = MHD_HTTP_NOT_FOUND;
      snprintf(x->msg, sizeof x->msg,
               "row %lld of column '%s' has no bytes (only a path, which the viewer never reads)",
               (long long)x->row, x->column);
      return QV_OK;
    }
  }
  is_string =
      a->type->id == QV_STRING || a->type->id == QV_LARGE_STRING || a->type->id == QV_STRING_VIEW;
  const uint8_t *data = NULL;
  int64_t len = 0;
  if (!serve_value_bytes(a, i, &data, &len)) {
    char tbuf[256];
    qv_type_to_string(x->batch->children[0]->type, tbuf, sizeof tbuf);
    x->code = MHD_HTTP_BAD_REQUEST;
    snprintf(x->msg, sizeof x->msg, "column '%s' holds %s, not bytes (read it with /api/rows)",
             x->column, tbuf);
    return QV_OK;
  }
  x->copy = malloc((size_t)(len > 0 ? len : 1));
  if (x->copy == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  memcpy(x->copy, data, (size_t)len); /* under the guard: the mapping may shrink */
  x->len = len;
  x->mime = is_string ? "text/plain; charset=utf-8" : sniff(data, len);
  x->code = MHD_HTTP_OK;
  return QV_OK;
}

static enum MHD_Result api_cell(request *rq, bool retried) {
  int64_t row;
  const char *column = arg(rq->c, "column"), *row_s = arg(rq->c, "row");
  if (row_s == NULL || !cli_parse_i64(row_s, &row))
    return send_error(rq->c, MHD_HTTP_BAD_REQUEST, "row must be a non-negative integer, found '%s'",
                      row_s ? row_s : "nothing");
  if (column == NULL || *column == '\0')
    return send_error(rq->c, MHD_HTTP_BAD_REQUEST, "column= is required");
  qv_error err;
  unsigned code = 0;
  qv_dataset *view = NULL;
  qv_status st = get_view(rq->srv, rq->c, &view, &code, &err);
  if (st != QV_OK) return send_error(rq->c, code, "%s", err.message);
  if (qv_dataset_column_index(view, column) < 0) {
    qv_dataset_unref(view);
    return send_error(rq->c, MHD_HTTP_BAD_REQUEST, "unknown column '%s'", column);
  }
  if (row >= qv_dataset_num_rows(view)) {
    int64_t n = qv_dataset_num_rows(view);
    qv_dataset_unref(view);
    return send_error(rq->c, MHD_HTTP_BAD_REQUEST, "row %lld is out of range (%lld rows)",
                      (long long)row, (long long)n);
  }
  cell_ctx x;
  memset(&x, 0, sizeof x);
  x.view = view;
  x.row = row;
  x.column = column;
  st = qv_guard_run(cell_body, &x, &err);
  qv_array_unref(x.batch);
  qv_dataset_unref(x.one);
  qv_dataset_unref(view);
  if (st == QV_ECHANGED && !retried) {
    free(x.copy);
    server_refresh(rq->srv, true);
    return api_cell(rq, true);
  }
  enum MHD_Result r;
  if (st != QV_OK) {
    r = send_status(rq->c, st, &err);
  } else if (x.code != MHD_HTTP_OK) {
    r = send_error(rq->c, x.code, "%s", x.msg);
  } else {
    struct MHD_Response *resp =
        MHD_create_response_from_buffer((size_t)x.len, x.copy, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
      free(x.copy);
      return MHD_NO;
    }
    x.copy = NULL;
    add_common_headers(resp, x.mime);
    MHD_add_response_header(resp, "Content-Security-Policy", "sandbox; default-src 'none'");
    r = MHD_queue_response(rq->c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
  }
  free(x.copy);
  return r;
}

/* /api/stats streams JSON lines from a content-reader callback, one step
 * (a batch of rows) per call: a client that goes away (the page's cancel)
 * ends the computation, as MHD then frees the response. */
typedef struct stats_stream {
  serve_stats *job;
  qv_strbuf out;
  int64_t pos;
  bool finished;
} stats_stream;

static ssize_t stats_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  stats_stream *s = cls;
  while (s->pos >= s->out.len) {
    if (s->finished) return MHD_CONTENT_READER_END_OF_STREAM;
    qv_strbuf_clear(&s->out);
    s->pos = 0;
    serve_stats_step(s->job, &s->out, &s->finished);
  }
  size_t n = (size_t)(s->out.len - s->pos);
  if (n > max) n = max;
  memcpy(buf, s->out.data + s->pos, n);
  s->pos += (int64_t)n;
  return (ssize_t)n;
}

static void stats_free(void *cls) {
  stats_stream *s = cls;
  serve_stats_free(s->job);
  qv_strbuf_reset(&s->out);
  free(s);
}

static enum MHD_Result api_stats(request *rq) {
  const char *column = arg(rq->c, "column");
  if (column == NULL || *column == '\0')
    return send_error(rq->c, MHD_HTTP_BAD_REQUEST, "column= is required");
  qv_error err;
  unsigned code = 0;
  qv_dataset *view = NULL;
  qv_status st = get_view(rq->srv, rq->c, &view, &code, &err);
  if (st != QV_OK) return send_error(rq->c, code, "%s", err.message);
  serve_stats *job = NULL;
  st = serve_stats_new(view, column, &job, &err);
  qv_dataset_unref(view);
  if (st != QV_OK) return send_status(rq->c, st, &err);
  stats_stream *s = calloc(1, sizeof *s);
  if (s == NULL) {
    serve_stats_free(job);
    return send_error(rq->c, MHD_HTTP_INSUFFICIENT_STORAGE, "out of memory");
  }
  s->job = job;
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stats_read, s, stats_free);
  if (r == NULL) {
    stats_free(s);
    return MHD_NO;
  }
  add_common_headers(r, "application/x-ndjson");
  enum MHD_Result ret = MHD_queue_response(rq->c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ret;
}

static const char kCsp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "media-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

static enum MHD_Result send_asset(struct MHD_Connection *c, const char *url) {
  if (strcmp(url, "/") == 0) url = "/index.html";
  for (const serve_asset *a = serve_assets; a->path != NULL; a++)
    if (strcmp(a->path, url) == 0) {
      struct MHD_Response *r =
          MHD_create_response_from_buffer(a->size, (void *)a->data, MHD_RESPMEM_PERSISTENT);
      if (r == NULL) return MHD_NO;
      add_common_headers(r, a->mime);
      MHD_add_response_header(r, "Content-Security-Policy", kCsp);
      enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
      MHD_destroy_response(r);
      return ret;
    }
  return send_error(c, MHD_HTTP_NOT_FOUND,
                    "no such page (the viewer serves /, /api/info, "
                    "/api/rows, /api/stats and /api/cell)");
}

/* The raw request target, before MHD unescapes it (kept as the request's
 * context, freed when it completes): the path part must be plain. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)cls;
  (void)c;
  return dup_str(uri);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  free(*con_cls);
  *con_cls = NULL;
}

/* Whether the raw path (up to '?') holds only [A-Za-z0-9/._-]: no escapes
 * (so no encoded traversal or NUL), no "..". */
static bool plain_path(const char *raw) {
  if (raw == NULL) return false;
  for (const char *p = raw; *p && *p != '?'; p++) {
    char ch = *p;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '/' || ch == '.' || ch == '_' || ch == '-';
    if (!ok || (ch == '.' && p[1] == '.')) return false;
  }
  return true;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls) {
  (void)version;
  (void)upload_data;
  server *srv = cls;
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    *upload_data_size = 0; /* the body is not read */
    return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
                      "method %s not allowed: the viewer is "
                      "read-only (GET, HEAD)",
                      method);
  }
  if (!plain_path(*con_cls))
    return send_error(c, MHD_HTTP_NOT_FOUND,
                      "no such page: the viewer's paths are plain "
                      "(no escapes, no '..'); it never serves files by name");
  request rq = {c, srv};
  if (strncmp(url, "/api/", 5) == 0) {
    server_refresh(srv, false);
    if (strcmp(url, "/api/info") == 0) return api_info(&rq);
    if (strcmp(url, "/api/rows") == 0) return api_rows(&rq, false);
    if (strcmp(url, "/api/cell") == 0) return api_cell(&rq, false);
    if (strcmp(url, "/api/stats") == 0) return api_stats(&rq);
    return send_error(c, MHD_HTTP_NOT_FOUND, "unknown API endpoint");
  }
  return send_asset(c, url);
}

/* ------------------------------------------------------------------------ */
/* The command                                                               */

static bool is_loopback(const char *host) {
  return strcmp(host, "127.0.0.1") == 0 || strcmp(host, "localhost") == 0 ||
         strcmp(host, "::1") == 0 || strncmp(host, "127.", 4) == 0;
}

static void log_mhd(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  fputs("quiver serve: ", stderr);
  vfprintf(stderr, fmt, ap);
}

static void open_browser(const char *url) {
  pid_t pid;
  char *argv[] = {(char *)"xdg-open", (char *)url, NULL};
  if (posix_spawnp(&pid, "xdg-open", NULL, NULL, argv, environ) != 0)
    fprintf(stderr, "quiver serve: cannot start xdg-open; open %s yourself\n", url);
}

int cmd_serve(int argc, char **argv) {
  const char *path = NULL, *host = "127.0.0.1";
  int64_t port = 8000;
  bool open_it = false, as_json = false;
  for (int i = 1; i < argc; i++) {
    bool matched;
    const char *v;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(kServeHelp, stdout);
      return QV_EXIT_OK;
    }
    if ((v = cli_opt_value(argv[i], "--host", argc, argv, &i, &matched)) != NULL || matched) {
      if (v == NULL || *v == '\0') return cli_usage("serve", "option --host needs a value");
      host = v;
    } else if ((v = cli_opt_value(argv[i], "--port", argc, argv, &i, &matched)) != NULL ||
               matched) {
      if (v == NULL) return cli_usage("serve", "option --port needs a value");
      if (!cli_parse_i64(v, &port) || port > 65535)
        return cli_usage("serve", "--port expects 0..65535, found '%s'", v);
    } else if (strcmp(argv[i], "--open") == 0) {
      open_it = true;
    } else if (strcmp(argv[i], "--json") == 0) {
      as_json = true;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return cli_usage("serve", "unknown option '%s'", argv[i]);
    } else if (path == NULL) {
      path = argv[i];
    } else {
      return cli_usage("serve", "unexpected argument '%s'", argv[i]);
    }
  }
  if (path == NULL) return cli_usage("serve", "missing PATH");
  if (strcmp(path, "-") == 0)
    return cli_usage("serve", "PATH must be a file or directory, not '-'");

  server srv;
  memset(&srv, 0, sizeof srv);
  srv.path = path;
  pthread_mutex_init(&srv.mu, NULL);
  qv_error err;
  qv_status st = open_all(path, &srv.splits, &srv.n_splits, &srv.files, &srv.n_files, &err);
  if (st != QV_OK) {
    pthread_mutex_destroy(&srv.mu);
    return cli_fail(st, &err);
  }
  srv.last_check_ns = now_ns();

  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  char port_s[16];
  snprintf(port_s, sizeof port_s, "%d", (int)port);
  int gai = getaddrinfo(host, port_s, &hints, &ai);
  if (gai != 0) {
    free_splits(srv.splits, srv.n_splits);
    free_files(srv.files, srv.n_files);
    pthread_mutex_destroy(&srv.mu);
    return cli_usage("serve", "cannot resolve --host '%s': %s", host, gai_strerror(gai));
  }
  if (!is_loopback(host))
    fprintf(stderr,
            "quiver serve: warning: binding %s, not 127.0.0.1: anyone who can reach this "
            "address can read the dataset (the viewer has no authentication)\n",
            host);

  /* SIGPIPE ignored (a client gone mid-answer is an error on the socket);
   * SIGINT/SIGTERM blocked in every thread and taken by sigwait below. */
  signal(SIGPIPE, SIG_IGN);
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);

  unsigned flags =
      MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, (uint16_t)port, NULL, NULL, answer, &srv, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL,
      MHD_OPTION_URI_LOG_CALLBACK, uri_log, NULL, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
      MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)256, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      (size_t)(128 * 1024), MHD_OPTION_END);
  freeaddrinfo(ai);
  int rc = QV_EXIT_OK;
  if (d == NULL) {
    fprintf(stderr, "quiver serve: cannot listen on %s:%d: %s\n", host, (int)port,
            strerror(errno ? errno : EADDRINUSE));
    rc = QV_EXIT_DATA;
  } else {
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    int bound = di != NULL ? (int)di->port : (int)port;
    char url[512];
    bool v6 = strchr(host, ':') != NULL;
    snprintf(url, sizeof url, "http://%s%s%s:%d/", v6 ? "[" : "", host, v6 ? "]" : "", bound);
    if (as_json) {
      qv_strbuf sb;
      qv_strbuf_init(&sb);
      qv_strbuf_append_str(&sb, "{\"url\": ", NULL);
      if (json_str(&sb, url, NULL) != QV_OK) { /* shorter text */
      }
      qv_strbuf_append_str(&sb, ", \"host\": ", NULL);
      if (json_str(&sb, host, NULL) != QV_OK) { /* shorter text */
      }
      qv_strbuf_printf(&sb, NULL, ", \"port\": %d}\n", bound);
      fputs(qv_strbuf_cstr(&sb), stdout);
      qv_strbuf_reset(&sb);
    } else {
      printf("quiver serve: %s at %s (port %d; Ctrl-C to stop)\n", path, url, bound);
    }
    fflush(stdout);
    if (open_it) open_browser(url);
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "quiver serve: %s: stopping\n", sig == SIGINT ? "interrupted" : "terminated");
    MHD_stop_daemon(d);
  }
  pthread_mutex_lock(&srv.mu);
  cache_clear_locked(&srv);
  pthread_mutex_unlock(&srv.mu);
  free_splits(srv.splits, srv.n_splits);
  free_files(srv.files, srv.n_files);
  pthread_mutex_destroy(&srv.mu);
  return rc;
}
