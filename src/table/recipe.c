/*
 * recipe.c — table recipes: a compact byte string that rebuilds a table in
 * any process (what `datasets` pickles for a MemoryMappedTable: the path
 * and the replays, never the data). Table layer.
 *
 * Format (all integers LEB128 varints: "u" unsigned, "s" zigzag signed;
 * "bytes" is a u length then that many bytes; "kvs" is a u count of
 * (key bytes, value bytes) pairs):
 *
 *   recipe  := "QVR1" node                       (nothing may follow)
 *   node    := tag body replays
 *     'F'  path:bytes size:u mtime_ns:s dev:u ino:u     a mapped file
 *     'M'  ipc:bytes                                    inline Arrow IPC
 *                                                       stream (in memory)
 *     'C'  metadata:kvs rows:u { blocks:u node*blocks   a concatenation
 *            cols:u { block:u column:u }*cols }*rows
 *   replays := count:u step*count                    applied in order
 *   step    := op:u8 args
 *     1 slice   offset:u length:u
 *     2 take    n:u delta:s*n        (index i = index i-1 + delta, from 0)
 *     3 filter  n:u bits:((n+7)/8 bytes, LSB first)
 *     4 select  n:u column:u*n
 *     5 rename  n:u name:bytes*n
 *     6 cast    schema
 *     7 add     position:u ipc:bytes  (one-column IPC stream: the field
 *     8 set     position:u ipc:bytes   and its chunks)
 *     9 combine
 *   schema  := metadata:kvs n:u field*n      (C Data Interface terms:)
 *   field   := format:bytes name:bytes flags:u metadata:kvs
 *              n:u field*n has_dictionary:u8 [field]
 *
 * The writer emits replays only on 'F' nodes (in-memory data is written
 * as it is; a concatenation's transforms live in its blocks), but the
 * reader accepts them on every node.
 *
 * Decoding treats the input as untrusted: every count is bounded by the
 * bytes left (each element takes at least one byte), lengths by the input
 * size, nesting by QV_RECIPE_MAX_DEPTH / QV_RECIPE_MAX_TYPE_DEPTH; inline
 * IPC is read at QV_VALIDATE_FULL; every replay goes through the public
 * transform functions, which check their arguments. Errors name the byte
 * offset. A mapped file that is missing or whose identity differs is
 * QV_ECHANGED (checked by stat before the file is opened).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "quiver/cdata.h"
#include "quiver/writer.h"
#include "table/table_internal.h"

#define QV_RECIPE_MAGIC "QVR1"
#define QV_RECIPE_MAGIC_LEN 4
#define QV_RECIPE_TAG_FILE 'F'
#define QV_RECIPE_TAG_MEMORY 'M'
#define QV_RECIPE_TAG_CONCAT 'C'
/* Nesting of nodes ('C' inside 'C' is never written but is parsed). */
#define QV_RECIPE_MAX_DEPTH 8
/* Nesting of types in a cast schema. */
#define QV_RECIPE_MAX_TYPE_DEPTH 64
/* Longest path accepted in an 'F' node. */
#define QV_RECIPE_MAX_PATH 4096
/* A varint takes at most 10 bytes. */
#define QV_VARINT_MAX 10

static qv_status oom(qv_error *err) {
  return qv_error_set(err, QV_ENOMEM, "recipe: out of memory");
}

/* ------------------------------------------------------------------------ */
/* IPC stream bytes in memory                                                */

static qv_status open_fd(void *ctx, const qv_schema *s, const qv_write_options *wo, qv_writer **w,
                         qv_error *err) {
  return qv_writer_open_fd(*(int *)ctx, s, wo, w, err);
}

qv_status qv_ipc_stream_bytes(const qv_schema *schema, qv_array *const *batches, int64_t n,
                              uint8_t **out, int64_t *out_len, qv_error *err) {
  int fd = memfd_create("quiver-recipe", MFD_CLOEXEC);
  if (fd < 0) return qv_error_set(err, QV_EIO, "recipe: memfd_create failed");
  qv_write_options wo = {0};
  wo.format = QV_FORMAT_STREAM;
  wo.max_batch_rows = -1;
  qv_status st = qv_tbl_write_batches(open_fd, &fd, schema, batches, n, &wo, err);
  off_t size = st == QV_OK ? lseek(fd, 0, SEEK_END) : -1;
  if (st == QV_OK && size < 0) st = qv_error_set(err, QV_EIO, "recipe: memfd size");
  uint8_t *bytes = NULL;
  if (st == QV_OK) {
    bytes = malloc((size_t)size + 1);
    if (bytes == NULL) st = oom(err);
  }
  if (st == QV_OK && pread(fd, bytes, (size_t)size, 0) != size)
    st = qv_error_set(err, QV_EIO, "recipe: reading back the IPC bytes failed");
  close(fd);
  if (st != QV_OK) {
    free(bytes);
    return st;
  }
  *out = bytes;
  *out_len = size;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

typedef struct wbuf {
  uint8_t *p;
  int64_t n, cap;
  bool failed;
} wbuf;

static void put_raw(wbuf *w, const void *src, int64_t n) {
  if (w->failed || n == 0) return;
  if (w->n + n > w->cap) {
    int64_t cap = w->cap ? w->cap : 256;
    while (cap < w->n + n) cap *= 2;
    uint8_t *p = realloc(w->p, (size_t)cap);
    if (p == NULL) {
      w->failed = true;
      return;
    }
    w->p = p;
    w->cap = cap;
  }
  memcpy(w->p + w->n, src, (size_t)n);
  w->n += n;
}

static void put_u8(wbuf *w, uint8_t v) { put_raw(w, &v, 1); }

static void put_uvar(wbuf *w, uint64_t v) {
  uint8_t b[QV_VARINT_MAX];
  int n = 0;
  do {
    b[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  put_raw(w, b, n);
}

static void put_svar(wbuf *w, int64_t v) { put_uvar(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }

static void put_bytes(wbuf *w, const void *p, int64_t n) {
  put_uvar(w, (uint64_t)n);
  put_raw(w, p, n);
}

static void put_str(wbuf *w, const char *s) { put_bytes(w, s, (int64_t)strlen(s)); }

static void put_kvs(wbuf *w, const qv_metadata *md) {
  put_uvar(w, (uint64_t)md->n);
  for (int64_t i = 0; i < md->n; i++) {
    put_bytes(w, md->kv[i].key, md->kv[i].key_len);
    put_bytes(w, md->kv[i].value, md->kv[i].value_len);
  }
}

/* ArrowSchema metadata blob (int32 count, then int32-length-prefixed
 * keys and values, native endian) -> kvs. */
static void put_cdata_metadata(wbuf *w, const char *blob) {
  if (blob == NULL) {
    put_uvar(w, 0);
    return;
  }
  int32_t n, len;
  const char *p = blob;
  memcpy(&n, p, 4);
  p += 4;
  put_uvar(w, (uint64_t)n);
  for (int32_t i = 0; i < 2 * n; i++) {
    memcpy(&len, p, 4);
    p += 4;
    put_bytes(w, p, len);
    p += len;
  }
}

static void put_field(wbuf *w, const struct ArrowSchema *s) {
  put_str(w, s->format);
  put_str(w, s->name ? s->name : "");
  put_uvar(w, (uint64_t)s->flags);
  put_cdata_metadata(w, s->metadata);
  put_uvar(w, (uint64_t)s->n_children);
  for (int64_t i = 0; i < s->n_children; i++) put_field(w, s->children[i]);
  put_u8(w, s->dictionary != NULL);
  if (s->dictionary != NULL) put_field(w, s->dictionary);
}

static qv_status put_schema(wbuf *w, const qv_schema *schema, qv_error *err) {
  struct ArrowSchema as;
  QV_RETURN_NOT_OK(qv_export_schema(schema, &as, err));
  put_kvs(w, &schema->metadata);
  put_uvar(w, (uint64_t)as.n_children);
  for (int64_t i = 0; i < as.n_children; i++) put_field(w, as.children[i]);
  as.release(&as);
  return QV_OK;
}

static qv_status put_ipc(wbuf *w, const qv_schema *schema, qv_array *const *batches, int64_t n,
                         qv_error *err) {
  uint8_t *bytes = NULL;
  int64_t len = 0;
  QV_RETURN_NOT_OK(qv_ipc_stream_bytes(schema, batches, n, &bytes, &len, err));
  put_bytes(w, bytes, len);
  free(bytes);
  return QV_OK;
}

/* One-column stream of an add/set column op. */
static qv_status put_column(wbuf *w, const qv_top *op, qv_error *err) {
  qv_schema *one = NULL;
  QV_RETURN_NOT_OK(qv_schema_from_fields(&op->field, 1, NULL, &one, err));
  qv_array **b = calloc((size_t)(op->n_chunks > 0 ? op->n_chunks : 1), sizeof *b);
  qv_status st = b ? QV_OK : oom(err);
  int64_t nb = 0;
  for (int64_t i = 0; i < op->n_chunks && st == QV_OK; i++) {
    qv_array *c = qv_array_ref(op->chunks[i]);
    st = qv_make_batch(one->type, c->length, &c, 1, &b[nb], err);
    if (st == QV_OK) nb++;
  }
  if (st == QV_OK) st = put_ipc(w, one, b, nb, err);
  for (int64_t i = 0; i < nb; i++) qv_array_unref(b[i]);
  free(b);
  qv_schema_unref(one);
  return st;
}

static qv_status put_op(wbuf *w, const qv_top *op, qv_error *err) {
  put_u8(w, (uint8_t)op->kind);
  switch (op->kind) {
    case QV_OP_SLICE:
      put_uvar(w, (uint64_t)op->offset);
      put_uvar(w, (uint64_t)op->length);
      return QV_OK;
    case QV_OP_TAKE: {
      put_uvar(w, (uint64_t)op->n_indices);
      int64_t prev = 0;
      for (int64_t i = 0; i < op->n_indices; i++) {
        put_svar(w, op->indices[i] - prev);
        prev = op->indices[i];
      }
      return QV_OK;
    }
    case QV_OP_FILTER: {
      const qv_array *m = op->mask;
      int64_t n = m->length;
      put_uvar(w, (uint64_t)n);
      uint8_t byte = 0;
      for (int64_t i = 0; i < n; i++) {
        if (qv_array_is_valid(m, i) && qv_bit_get(m->buffers[1]->data, m->offset + i))
          byte |= (uint8_t)(1u << (i & 7));
        if ((i & 7) == 7 || i + 1 == n) {
          put_u8(w, byte);
          byte = 0;
        }
      }
      return QV_OK;
    }
    case QV_OP_SELECT:
      put_uvar(w, (uint64_t)op->n_cols);
      for (int32_t c = 0; c < op->n_cols; c++) put_uvar(w, (uint64_t)op->cols[c]);
      return QV_OK;
    case QV_OP_RENAME:
      put_uvar(w, (uint64_t)op->n_names);
      for (int32_t c = 0; c < op->n_names; c++) put_str(w, op->names[c]);
      return QV_OK;
    case QV_OP_CAST: return put_schema(w, op->schema, err);
    case QV_OP_ADD_COLUMN:
    case QV_OP_SET_COLUMN: put_uvar(w, (uint64_t)op->pos); return put_column(w, op, err);
    case QV_OP_COMBINE: return QV_OK;
  }
  return qv_error_set(err, QV_EARG, "recipe: unknown op %d", (int)op->kind);
}

static qv_status put_replays(wbuf *w, const qv_table *t, qv_error *err) {
  put_uvar(w, (uint64_t)t->n_replays);
  if (t->n_replays == 0) return QV_OK;
  const qv_treplay **chain = malloc(sizeof *chain * (size_t)t->n_replays);
  if (chain == NULL) return oom(err);
  int64_t n = 0;
  for (const qv_treplay *r = t->replays; r != NULL && n < t->n_replays; r = r->prev) chain[n++] = r;
  qv_status st = QV_OK;
  for (int64_t i = n - 1; i >= 0 && st == QV_OK; i--) st = put_op(w, chain[i]->op, err);
  free(chain);
  return st;
}

static qv_status put_node(wbuf *w, qv_table *t, qv_error *err) {
  switch (t->kind) {
    case QV_TABLE_MAPPED: {
      const qv_tsource *s = t->src;
      put_u8(w, QV_RECIPE_TAG_FILE);
      put_str(w, s->path);
      put_uvar(w, (uint64_t)s->identity.size);
      put_svar(w, s->identity.mtime_ns);
      put_uvar(w, s->identity.dev);
      put_uvar(w, s->identity.ino);
      return put_replays(w, t, err);
    }
    case QV_TABLE_IN_MEMORY: {
      put_u8(w, QV_RECIPE_TAG_MEMORY);
      qv_array **b = calloc((size_t)(t->n_batches > 0 ? t->n_batches : 1), sizeof *b);
      if (b == NULL) return oom(err);
      qv_status st = QV_OK;
      for (int64_t i = 0; i < t->n_batches && st == QV_OK; i++)
        st = qv_tbl_entry_array(t, i, &b[i], err);
      if (st == QV_OK) st = put_ipc(w, t->schema, b, t->n_batches, err);
      for (int64_t i = 0; i < t->n_batches; i++) qv_array_unref(b[i]);
      free(b);
      put_uvar(w, 0);
      return st;
    }
    case QV_TABLE_CONCAT: {
      put_u8(w, QV_RECIPE_TAG_CONCAT);
      put_kvs(w, &t->schema->metadata);
      put_uvar(w, (uint64_t)t->n_rows_blocks);
      int32_t nc = qv_table_num_columns(t);
      for (int64_t r = 0; r < t->n_rows_blocks; r++) {
        const qv_trow *row = &t->rows[r];
        put_uvar(w, (uint64_t)row->n_blocks);
        for (int32_t j = 0; j < row->n_blocks; j++)
          QV_RETURN_NOT_OK(put_node(w, row->blocks[j], err));
        put_uvar(w, (uint64_t)nc);
        for (int32_t c = 0; c < nc; c++) {
          put_uvar(w, (uint64_t)row->col_block[c]);
          put_uvar(w, (uint64_t)row->col_index[c]);
        }
      }
      put_uvar(w, 0);
      return QV_OK;
    }
  }
  return qv_error_set(err, QV_EARG, "recipe: unknown table kind");
}

qv_status qv_table_recipe(qv_table *t, uint8_t **out, int64_t *out_len, qv_error *err) {
  if (t == NULL || out == NULL || out_len == NULL)
    return qv_error_set(err, QV_EARG, "recipe: needs a table and outputs");
  wbuf w = {0};
  put_raw(&w, QV_RECIPE_MAGIC, QV_RECIPE_MAGIC_LEN);
  qv_status st = put_node(&w, t, err);
  if (st == QV_OK && w.failed) st = oom(err);
  if (st != QV_OK) {
    free(w.p);
    return st;
  }
  *out = w.p;
  *out_len = w.n;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

typedef struct rbuf {
  const uint8_t *p;
  int64_t n, pos;
  qv_error *err;
} rbuf;

static qv_status bad(rbuf *r, const char *what) {
  return qv_error_set(r->err, QV_EINVAL, "recipe: byte %lld: %s", (long long)r->pos, what);
}

static int64_t left(const rbuf *r) { return r->n - r->pos; }

static qv_status get_u8(rbuf *r, uint8_t *v) {
  *v = 0;
  if (left(r) < 1) return bad(r, "unexpected end");
  *v = r->p[r->pos++];
  return QV_OK;
}

/* Unsigned varint of at most 10 bytes; errors name its first byte. */
static qv_status get_uvar_raw(rbuf *r, uint64_t *v) {
  uint64_t x = 0;
  int64_t at = r->pos;
  *v = 0;
  for (int i = 0; i < QV_VARINT_MAX; i++) {
    if (left(r) < 1) {
      r->pos = at;
      return bad(r, "truncated varint");
    }
    uint8_t b = r->p[r->pos++];
    if (i == QV_VARINT_MAX - 1 && b > 1) {
      r->pos = at;
      return bad(r, "varint overflows 64 bits");
    }
    x |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = x;
      return QV_OK;
    }
  }
  r->pos = at;
  return bad(r, "varint longer than 10 bytes");
}

static qv_status get_uvar(rbuf *r, int64_t *v) {
  uint64_t x = 0;
  *v = 0;
  QV_RETURN_NOT_OK(get_uvar_raw(r, &x));
  if (x > (uint64_t)INT64_MAX) return bad(r, "value exceeds 2^63-1");
  *v = (int64_t)x;
  return QV_OK;
}

static qv_status get_svar(rbuf *r, int64_t *v) {
  uint64_t x = 0;
  *v = 0;
  QV_RETURN_NOT_OK(get_uvar_raw(r, &x));
  *v = (int64_t)(x >> 1) ^ -(int64_t)(x & 1);
  return QV_OK;
}

/* A count of elements that each take at least `min_bytes` bytes. */
static qv_status get_count(rbuf *r, int64_t min_bytes, int64_t *n, const char *what) {
  int64_t at = r->pos;
  QV_RETURN_NOT_OK(get_uvar(r, n));
  if (*n > left(r) / min_bytes) {
    int64_t rem = left(r);
    r->pos = at;
    return qv_error_set(r->err, QV_EINVAL,
                        "recipe: byte %lld: %s count %lld exceeds the %lld bytes left",
                        (long long)at, what, (long long)*n, (long long)rem);
  }
  return QV_OK;
}

static qv_status get_int32(rbuf *r, int32_t *v, const char *what) {
  int64_t x = 0, at = r->pos;
  *v = 0;
  QV_RETURN_NOT_OK(get_uvar(r, &x));
  if (x > INT32_MAX) {
    r->pos = at;
    char msg[96];
    snprintf(msg, sizeof msg, "%s %lld exceeds 2^31-1", what, (long long)x);
    return bad(r, msg);
  }
  *v = (int32_t)x;
  return QV_OK;
}

/* Length-prefixed bytes: a pointer into the input. */
static qv_status get_bytes(rbuf *r, const uint8_t **p, int64_t *len) {
  QV_RETURN_NOT_OK(get_count(r, 1, len, "byte"));
  *p = r->p + r->pos;
  r->pos += *len;
  return QV_OK;
}

/* Bytes as a NUL-terminated string (no NUL inside). malloc'ed. */
static qv_status get_cstr(rbuf *r, int64_t max, char **out, const char *what) {
  const uint8_t *p;
  int64_t len, at = r->pos;
  QV_RETURN_NOT_OK(get_bytes(r, &p, &len));
  if (len > max || memchr(p, 0, (size_t)len) != NULL) {
    r->pos = at;
    char msg[96];
    snprintf(msg, sizeof msg, "%s is longer than %lld bytes or contains NUL", what, (long long)max);
    return bad(r, msg);
  }
  char *s = malloc((size_t)len + 1);
  if (s == NULL) return oom(r->err);
  memcpy(s, p, (size_t)len);
  s[len] = '\0';
  *out = s;
  return QV_OK;
}

static qv_status get_kvs(rbuf *r, qv_metadata *md) {
  int64_t n;
  QV_RETURN_NOT_OK(get_count(r, 2, &n, "metadata"));
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *k, *v;
    int64_t kl, vl;
    QV_RETURN_NOT_OK(get_bytes(r, &k, &kl));
    QV_RETURN_NOT_OK(get_bytes(r, &v, &vl));
    QV_RETURN_NOT_OK(qv_metadata_append(md, (const char *)k, kl, (const char *)v, vl, r->err));
  }
  return QV_OK;
}

/* Read inline IPC into (schema, batches). */
static qv_status read_ipc(rbuf *r, qv_schema **schema, qv_array ***batches, int64_t *n) {
  const uint8_t *p;
  int64_t len, at = r->pos;
  QV_RETURN_NOT_OK(get_bytes(r, &p, &len));
  qv_buffer *buf = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(len, &buf, r->err));
  if (len > 0) memcpy(buf->data, p, (size_t)len);
  qv_read_options ro = {QV_VALIDATE_FULL, true, 0};
  qv_reader *rd = NULL;
  qv_status st = qv_reader_open_buffer(buf, &ro, &rd, r->err);
  qv_buffer_unref(buf);
  qv_array **b = NULL;
  int64_t nb = 0;
  while (st == QV_OK) {
    qv_array *a = NULL;
    st = qv_reader_next(rd, &a, r->err);
    if (st != QV_OK || a == NULL) break;
    qv_array **g = realloc(b, sizeof *g * (size_t)(nb + 1));
    if (g == NULL) {
      qv_array_unref(a);
      st = oom(r->err);
      break;
    }
    b = g;
    b[nb++] = a;
  }
  if (st == QV_OK) *schema = qv_schema_ref((qv_schema *)qv_reader_schema(rd));
  qv_reader_close(rd);
  if (st != QV_OK) {
    for (int64_t i = 0; i < nb; i++) qv_array_unref(b[i]);
    free(b);
    return qv_error_prefix(r->err, st, "recipe: byte %lld: inline IPC: ", (long long)at);
  }
  *batches = b;
  *n = nb;
  return QV_OK;
}

static void free_batches(qv_array **b, int64_t n) {
  for (int64_t i = 0; i < n; i++) qv_array_unref(b[i]);
  free(b);
}

/* --- schemas through the C Data Interface importer ---------------------- */

typedef struct rs_private {
  char *format;
  char *name;
  char *metadata;
  struct ArrowSchema **children;
} rs_private;

static void rs_release(struct ArrowSchema *s) {
  rs_private *p = s->private_data;
  for (int64_t i = 0; i < s->n_children; i++) {
    struct ArrowSchema *c = p->children[i];
    if (c != NULL && c->release != NULL) c->release(c);
    free(c);
  }
  if (s->dictionary != NULL) {
    if (s->dictionary->release != NULL) s->dictionary->release(s->dictionary);
    free(s->dictionary);
  }
  free(p->format);
  free(p->name);
  free(p->metadata);
  free(p->children);
  free(p);
  s->release = NULL;
}

/* kvs -> ArrowSchema metadata blob (NULL when empty). */
static qv_status get_cdata_metadata(rbuf *r, char **out) {
  int64_t n;
  *out = NULL;
  QV_RETURN_NOT_OK(get_count(r, 2, &n, "metadata"));
  if (n == 0) return QV_OK;
  if (n > INT32_MAX) return bad(r, "too many metadata pairs");
  const uint8_t **ptr = calloc((size_t)(2 * n), sizeof *ptr);
  int64_t *len = calloc((size_t)(2 * n), sizeof *len);
  qv_status st = ptr && len ? QV_OK : oom(r->err);
  int64_t total = 4;
  for (int64_t i = 0; i < 2 * n && st == QV_OK; i++) {
    st = get_bytes(r, &ptr[i], &len[i]);
    if (st == QV_OK && len[i] > INT32_MAX) st = bad(r, "metadata entry too long");
    total += 4 + len[i];
  }
  char *blob = st == QV_OK ? malloc((size_t)total) : NULL;
  if (st == QV_OK && blob == NULL) st = oom(r->err);
  if (st == QV_OK) {
    int32_t cnt = (int32_t)n;
    char *q = blob;
    memcpy(q, &cnt, 4);
    q += 4;
    for (int64_t i = 0; i < 2 * n; i++) {
      int32_t l = (int32_t)len[i];
      memcpy(q, &l, 4);
      q += 4;
      if (l > 0) memcpy(q, ptr[i], (size_t)l);
      q += l;
    }
    *out = blob;
  }
  free(ptr);
  free(len);
  return st;
}

static qv_status get_field(rbuf *r, int depth, struct ArrowSchema *s) {
  memset(s, 0, sizeof *s);
  if (depth > QV_RECIPE_MAX_TYPE_DEPTH) return bad(r, "types nested too deeply");
  rs_private *p = calloc(1, sizeof *p);
  if (p == NULL) return oom(r->err);
  s->private_data = p;
  s->release = rs_release;
  int64_t flags = 0, n = 0;
  uint8_t has_dict = 0;
  QV_RETURN_NOT_OK(get_cstr(r, INT32_MAX, &p->format, "format"));
  s->format = p->format;
  QV_RETURN_NOT_OK(get_cstr(r, INT32_MAX, &p->name, "name"));
  s->name = p->name;
  QV_RETURN_NOT_OK(get_uvar(r, &flags));
  s->flags = flags;
  QV_RETURN_NOT_OK(get_cdata_metadata(r, &p->metadata));
  s->metadata = p->metadata;
  QV_RETURN_NOT_OK(get_count(r, 6, &n, "child"));
  p->children = calloc((size_t)(n > 0 ? n : 1), sizeof *p->children);
  if (p->children == NULL) return oom(r->err);
  s->children = p->children;
  for (int64_t i = 0; i < n; i++) {
    p->children[i] = calloc(1, sizeof(struct ArrowSchema));
    if (p->children[i] == NULL) return oom(r->err);
    s->n_children = i + 1;
    QV_RETURN_NOT_OK(get_field(r, depth + 1, p->children[i]));
  }
  QV_RETURN_NOT_OK(get_u8(r, &has_dict));
  if (has_dict > 1) return bad(r, "has_dictionary must be 0 or 1");
  if (has_dict) {
    s->dictionary = calloc(1, sizeof(struct ArrowSchema));
    if (s->dictionary == NULL) return oom(r->err);
    QV_RETURN_NOT_OK(get_field(r, depth + 1, s->dictionary));
  }
  return QV_OK;
}

static qv_status get_schema(rbuf *r, qv_schema **out) {
  int64_t at = r->pos;
  qv_metadata md = {0, NULL};
  qv_status st = get_kvs(r, &md);
  struct ArrowSchema root;
  memset(&root, 0, sizeof root);
  rs_private *p = st == QV_OK ? calloc(1, sizeof *p) : NULL;
  if (st == QV_OK && p == NULL) st = oom(r->err);
  if (st != QV_OK) {
    qv_metadata_reset(&md);
    return st;
  }
  root.private_data = p;
  root.release = rs_release;
  p->format = strdup("+s");
  p->name = strdup("");
  root.format = p->format;
  root.name = p->name;
  int64_t n = 0;
  st = p->format && p->name ? QV_OK : oom(r->err);
  if (st == QV_OK) st = get_count(r, 6, &n, "field");
  if (st == QV_OK) {
    p->children = calloc((size_t)(n > 0 ? n : 1), sizeof *p->children);
    root.children = p->children;
    if (p->children == NULL) st = oom(r->err);
  }
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    p->children[i] = calloc(1, sizeof(struct ArrowSchema));
    if (p->children[i] == NULL) {
      st = oom(r->err);
      break;
    }
    root.n_children = i + 1;
    st = get_field(r, 1, p->children[i]);
  }
  if (st != QV_OK) {
    root.release(&root);
    qv_metadata_reset(&md);
    return st;
  }
  qv_schema *s = NULL;
  st = qv_import_schema(&root, &s, r->err); /* consumes root */
  if (st != QV_OK) {
    qv_metadata_reset(&md);
    return qv_error_prefix(r->err, st, "recipe: byte %lld: schema: ", (long long)at);
  }
  qv_metadata_reset(&s->metadata);
  s->metadata = md;
  *out = s;
  return QV_OK;
}

/* --- replays ------------------------------------------------------------- */

/* A BOOL array over mask bits read from the recipe. */
static qv_status mask_from_bits(const uint8_t *bits, int64_t n, qv_array **out, qv_error *err) {
  qv_type *bt = qv_type_new(QV_BOOL);
  qv_array *m = bt ? qv_array_new(bt, 2, 0) : NULL;
  qv_type_unref(bt);
  if (m == NULL) return oom(err);
  m->length = n;
  m->null_count = 0;
  qv_status st = qv_buffer_alloc((n + 7) / 8, &m->buffers[1], err);
  if (st != QV_OK) {
    qv_array_unref(m);
    return st;
  }
  if (n > 0) memcpy(m->buffers[1]->data, bits, (size_t)((n + 7) / 8));
  *out = m;
  return QV_OK;
}

/* One replay step: parse its arguments (errors name the byte), then run
 * the public transform (its errors are prefixed with the step's byte). */
static qv_status get_step(rbuf *r, qv_table *t, qv_table **out) {
  int64_t at = r->pos;
  uint8_t op;
  QV_RETURN_NOT_OK(get_u8(r, &op));
  qv_status st = QV_OK; /* parsing */
  qv_status ts = QV_OK; /* the transform */
  switch (op) {
    case QV_OP_SLICE: {
      int64_t off, len;
      QV_RETURN_NOT_OK(get_uvar(r, &off));
      QV_RETURN_NOT_OK(get_uvar(r, &len));
      ts = qv_table_slice(t, off, len, out, r->err);
      break;
    }
    case QV_OP_TAKE: {
      int64_t n, prev = 0;
      QV_RETURN_NOT_OK(get_count(r, 1, &n, "index"));
      int64_t *idx = malloc(sizeof *idx * (size_t)(n > 0 ? n : 1));
      if (idx == NULL) return oom(r->err);
      for (int64_t i = 0; i < n && st == QV_OK; i++) {
        int64_t d;
        st = get_svar(r, &d);
        if (st == QV_OK && qv_add_overflow(prev, d, &idx[i])) st = bad(r, "index overflows");
        if (st == QV_OK) prev = idx[i];
      }
      if (st == QV_OK) ts = qv_table_take(t, idx, n, out, r->err);
      free(idx);
      break;
    }
    case QV_OP_FILTER: {
      int64_t n, at2 = r->pos;
      QV_RETURN_NOT_OK(get_uvar(r, &n));
      if (n / 8 > left(r) || (n + 7) / 8 > left(r)) {
        r->pos = at2;
        return bad(r, "filter mask longer than the bytes left");
      }
      qv_array *m = NULL;
      QV_RETURN_NOT_OK(mask_from_bits(r->p + r->pos, n, &m, r->err));
      r->pos += (n + 7) / 8;
      ts = qv_table_filter(t, m, out, r->err);
      qv_array_unref(m);
      break;
    }
    case QV_OP_SELECT: {
      int64_t n;
      QV_RETURN_NOT_OK(get_count(r, 1, &n, "column"));
      if (n > INT32_MAX) return bad(r, "too many columns");
      int32_t *cols = malloc(sizeof *cols * (size_t)(n > 0 ? n : 1));
      if (cols == NULL) return oom(r->err);
      for (int64_t i = 0; i < n && st == QV_OK; i++) st = get_int32(r, &cols[i], "column");
      if (st == QV_OK) ts = qv_table_select(t, cols, (int32_t)n, out, r->err);
      free(cols);
      break;
    }
    case QV_OP_RENAME: {
      int64_t n;
      QV_RETURN_NOT_OK(get_count(r, 1, &n, "name"));
      if (n > INT32_MAX) return bad(r, "too many names");
      char **names = calloc((size_t)(n > 0 ? n : 1), sizeof *names);
      if (names == NULL) return oom(r->err);
      for (int64_t i = 0; i < n && st == QV_OK; i++) st = get_cstr(r, INT32_MAX, &names[i], "name");
      if (st == QV_OK) ts = qv_table_rename(t, (const char *const *)names, (int32_t)n, out, r->err);
      for (int64_t i = 0; i < n; i++) free(names[i]);
      free(names);
      break;
    }
    case QV_OP_CAST: {
      qv_schema *s = NULL;
      QV_RETURN_NOT_OK(get_schema(r, &s));
      ts = qv_table_cast(t, s, out, r->err);
      qv_schema_unref(s);
      break;
    }
    case QV_OP_ADD_COLUMN:
    case QV_OP_SET_COLUMN: {
      int32_t pos;
      qv_schema *s = NULL;
      qv_array **b = NULL;
      int64_t nb = 0;
      QV_RETURN_NOT_OK(get_int32(r, &pos, "column position"));
      int64_t at2 = r->pos;
      QV_RETURN_NOT_OK(read_ipc(r, &s, &b, &nb));
      qv_array **chunks = calloc((size_t)(nb > 0 ? nb : 1), sizeof *chunks);
      if (chunks == NULL) st = oom(r->err);
      else if (qv_schema_num_fields(s) != 1)
        st = qv_error_set(r->err, QV_EINVAL,
                          "recipe: byte %lld: a column stream has %d fields, expected 1",
                          (long long)at2, qv_schema_num_fields(s));
      for (int64_t i = 0; i < nb && st == QV_OK; i++) chunks[i] = b[i]->children[0];
      if (st == QV_OK) {
        const qv_field *f = qv_schema_field(s, 0);
        ts = op == QV_OP_SET_COLUMN ? qv_table_set_column(t, pos, f, chunks, nb, out, r->err)
                                    : qv_table_add_column(t, pos, f, chunks, nb, out, r->err);
      }
      free(chunks);
      free_batches(b, nb);
      qv_schema_unref(s);
      break;
    }
    case QV_OP_COMBINE: ts = qv_table_combine_batches(t, out, r->err); break;
    default: {
      r->pos = at;
      char msg[64];
      snprintf(msg, sizeof msg, "unknown replay op %u", op);
      return bad(r, msg);
    }
  }
  if (st != QV_OK) return st;
  if (ts != QV_OK) qv_error_prefix(r->err, ts, "recipe: byte %lld: replay: ", (long long)at);
  return ts;
}

static qv_status get_replays(rbuf *r, qv_table **t) {
  int64_t n;
  QV_RETURN_NOT_OK(get_count(r, 1, &n, "replay"));
  for (int64_t i = 0; i < n; i++) {
    qv_table *next = NULL;
    qv_status st = get_step(r, *t, &next);
    if (st != QV_OK) return st;
    qv_table_unref(*t);
    *t = next;
  }
  return QV_OK;
}

/* --- nodes --------------------------------------------------------------- */

static qv_status get_node(rbuf *r, int depth, qv_table **out);

static qv_status get_file(rbuf *r, qv_table **out) {
  char *path = NULL;
  qv_file_identity id;
  int64_t size;
  uint64_t udev, uino;
  int64_t at = r->pos;
  QV_RETURN_NOT_OK(get_cstr(r, QV_RECIPE_MAX_PATH, &path, "path"));
  if (path[0] == '\0') {
    free(path);
    r->pos = at;
    return bad(r, "empty path");
  }
  qv_status st = get_uvar(r, &size);
  if (st == QV_OK) st = get_svar(r, &id.mtime_ns);
  if (st == QV_OK) st = get_uvar_raw(r, &udev);
  if (st == QV_OK) st = get_uvar_raw(r, &uino);
  qv_tsource *src = NULL;
  if (st == QV_OK) {
    id.size = size;
    id.dev = udev;
    id.ino = uino;
    st = qv_tsource_open(path, NULL, &id, &src, r->err);
    if (st != QV_OK) qv_error_prefix(r->err, st, "recipe: ");
  }
  if (st == QV_OK) st = qv_tbl_from_source(src, out, r->err);
  qv_tsource_unref(src);
  free(path);
  return st;
}

static qv_status get_memory(rbuf *r, qv_table **out) {
  qv_schema *s = NULL;
  qv_array **b = NULL;
  int64_t nb = 0;
  QV_RETURN_NOT_OK(read_ipc(r, &s, &b, &nb));
  qv_status st = qv_table_from_batches(s, b, nb, out, r->err);
  free_batches(b, nb);
  qv_schema_unref(s);
  return st;
}

static qv_status get_concat(rbuf *r, int depth, qv_table **out) {
  qv_metadata md = {0, NULL};
  int64_t n_rows = 0;
  qv_trow *rows = NULL;
  int64_t got = 0;
  qv_status st = get_kvs(r, &md);
  if (st == QV_OK) st = get_count(r, 3, &n_rows, "row");
  if (st == QV_OK && (n_rows < 1 || n_rows > INT32_MAX))
    st = bad(r, "a concatenation needs 1 to 2^31-1 rows");
  if (st == QV_OK) {
    rows = calloc((size_t)n_rows, sizeof *rows);
    if (rows == NULL) st = oom(r->err);
  }
  for (int64_t i = 0; i < n_rows && st == QV_OK; i++) {
    qv_trow *row = &rows[i];
    got = i + 1;
    int64_t nb = 0, nc = 0;
    st = get_count(r, 3, &nb, "block");
    if (st == QV_OK && (nb < 1 || nb > INT32_MAX)) st = bad(r, "a row needs 1 to 2^31-1 blocks");
    if (st == QV_OK) {
      row->blocks = calloc((size_t)nb, sizeof *row->blocks);
      if (row->blocks == NULL) st = oom(r->err);
    }
    int64_t cols = 0;
    for (int64_t j = 0; j < nb && st == QV_OK; j++) {
      st = get_node(r, depth + 1, &row->blocks[j]);
      if (st == QV_OK) {
        row->n_blocks = (int32_t)(j + 1);
        cols += qv_table_num_columns(row->blocks[j]);
        if (row->blocks[j]->kind == QV_TABLE_CONCAT)
          st = bad(r, "a block is a concatenation (blocks must be in-memory or mapped)");
      }
    }
    int64_t at = r->pos;
    if (st == QV_OK) st = get_count(r, 2, &nc, "column");
    if (st == QV_OK && nc != cols) {
      r->pos = at;
      st = bad(r, "the column map does not cover the row's block columns");
    }
    if (st == QV_OK) {
      row->col_block = calloc((size_t)(nc > 0 ? nc : 1), sizeof *row->col_block);
      row->col_index = calloc((size_t)(nc > 0 ? nc : 1), sizeof *row->col_index);
      if (row->col_block == NULL || row->col_index == NULL) st = oom(r->err);
    }
    for (int64_t c = 0; c < nc && st == QV_OK; c++) {
      st = get_int32(r, &row->col_block[c], "block index");
      if (st == QV_OK) st = get_int32(r, &row->col_index[c], "column index");
    }
    if (st == QV_OK) row->length = row->blocks[0]->num_rows;
  }
  if (st == QV_OK) {
    st = qv_concat_build(rows, n_rows, &md, out, r->err); /* takes the rows */
    rows = NULL;
    if (st != QV_OK) qv_error_prefix(r->err, st, "recipe: byte %lld: ", (long long)r->pos);
  }
  for (int64_t i = 0; rows != NULL && i < got; i++) qv_trow_reset(&rows[i]);
  free(rows);
  qv_metadata_reset(&md);
  return st;
}

static qv_status get_node(rbuf *r, int depth, qv_table **out) {
  if (depth > QV_RECIPE_MAX_DEPTH) return bad(r, "nodes nested too deeply");
  int64_t at = r->pos;
  uint8_t tag;
  QV_RETURN_NOT_OK(get_u8(r, &tag));
  qv_table *t = NULL;
  qv_status st;
  switch (tag) {
    case QV_RECIPE_TAG_FILE: st = get_file(r, &t); break;
    case QV_RECIPE_TAG_MEMORY: st = get_memory(r, &t); break;
    case QV_RECIPE_TAG_CONCAT: st = get_concat(r, depth, &t); break;
    default: {
      r->pos = at;
      char msg[64];
      snprintf(msg, sizeof msg, "unknown node tag 0x%02x", tag);
      return bad(r, msg);
    }
  }
  if (st == QV_OK) st = get_replays(r, &t);
  if (st != QV_OK) {
    qv_table_unref(t);
    return st;
  }
  *out = t;
  return QV_OK;
}

qv_status qv_table_from_recipe(const uint8_t *data, int64_t len, qv_table **out, qv_error *err) {
  if ((data == NULL && len > 0) || len < 0 || out == NULL)
    return qv_error_set(err, QV_EARG, "recipe: needs bytes and an output");
  rbuf r = {data, len, 0, err};
  if (len < QV_RECIPE_MAGIC_LEN || memcmp(data, QV_RECIPE_MAGIC, QV_RECIPE_MAGIC_LEN) != 0)
    return qv_error_set(err, QV_EINVAL, "recipe: missing the \"%s\" magic (%lld bytes)",
                        QV_RECIPE_MAGIC, (long long)len);
  r.pos = QV_RECIPE_MAGIC_LEN;
  qv_table *t = NULL;
  QV_RETURN_NOT_OK(get_node(&r, 0, &t));
  if (r.pos != r.n) {
    qv_table_unref(t);
    return qv_error_set(err, QV_EINVAL,
                        "recipe: %lld unexpected bytes after the table at "
                        "byte %lld",
                        (long long)(r.n - r.pos), (long long)r.pos);
  }
  *out = t;
  return QV_OK;
}
