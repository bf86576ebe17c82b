/*
 * reader.c — the Arrow IPC reader: format detection, message framing,
 * the batch index built at open, dictionary state, and batch decoding on
 * demand. ipc layer; uses metadata.c (flatbuffer verify + decode), loader.c
 * (body -> arrays) and core buffers/mmap.
 *
 * Framing (Columnar.rst, "Encapsulated message format"):
 *   [0xFFFFFFFF][int32 metadata_size][flatbuffer Message, padded][body]
 * or, before Arrow 0.15, without the continuation marker:
 *   [int32 metadata_size][flatbuffer Message, padded][body]
 * A metadata size of 0 is the end-of-stream marker. The file format wraps
 * a stream in "ARROW1\0\0" ... [footer flatbuffer][int32 footer size]"ARROW1".
 *
 * Opening decodes only message headers (flatbuffers): for each record
 * batch it records where it lives, its row count, and how many dictionary
 * messages precede it. The dictionaries in force for batch i are rebuilt
 * from those messages when batch i is read (replacement: the last
 * non-delta message wins; deltas append).
 *
 * Streams opened by path are indexed from pread of the headers (a window
 * of about the last header's size at each message, or 64 KiB while
 * messages are small; bodies skipped by offset), never through the
 * mapping, so indexing faults in no page and leaves RSS flat. The index is built eagerly at open, or lazily
 * (qv_index_options.lazy) as far as a call needs it, and persisted in the
 * per-user index cache (index_cache.c) so that a reopen walks nothing.
 * Every message decoded later is checked against its index entry, so an
 * index that disagrees with the file (a forged cache entry, a file changed
 * under the reader) is an error, never a wrong read.
 *
 * Reads of a mapped input run under the mapped-read guard (core guard.c):
 * open, qv_reader_batch and the end of qv_reader_next check the last byte
 * they will read first, so a file that shrank since it was mapped gives
 * QV_ECHANGED before anything is allocated, then run under a recovery
 * point.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/atomic_internal.h"
#include "core/guard_internal.h"
#include "ipc/ipc_internal.h"

/* Bounds on what a file's metadata may make us hold. */
#define QV_MAX_METADATA_SIZE ((int64_t)1 << 30) /* one flatbuffer message */
#define QV_INDEX_CACHE_MIN_MESSAGES 32          /* smaller streams are not worth a file */
#define QV_WIN_SMALL 4096                       /* first read: the schema message, usually */
#define QV_WIN_LARGE 65536                      /* while messages are small */

typedef struct dict_state {
  int64_t id;
  const qv_type *value_type; /* borrowed from the schema */
  qv_array *values;          /* current dictionary, NULL before the first */
} dict_state;

typedef struct rec_loc {
  qv_batch_location loc;
  int64_t dicts_before; /* dictionary messages preceding this batch */
} rec_loc;

struct qv_reader {
  qv_read_options opts;
  qv_buffer *data; /* the mapping or in-memory bytes; NULL for fd streams */
  int fd;          /* fd streams only, else -1 */
  qv_ipc_format format;
  qv_schema *schema;
  int version;
  bool big_endian;
  qv_compression compression;
  qv_metadata footer_metadata;
  bool has_footer;

  rec_loc *batches;
  int64_t n_batches, cap_batches;
  qv_batch_location *dicts;
  int32_t *dict_slot; /* dstate index of each dictionary message */
  int64_t n_dicts, cap_dicts;
  int64_t total_rows;

  dict_state *dstate;
  int32_t n_dstate;
  int64_t dicts_applied; /* dictionary messages applied to dstate so far */

  qv_ipc_budget *budget; /* decompressed bytes held; shared with buffers */

  int64_t next_batch;      /* sequential cursor */
  int64_t stream_messages; /* fd streams: messages consumed */
  bool stream_done;

  /* Indexing. Streams: messages before scan_pos are indexed; the schema
   * message ends at schema_end. Opened by path, headers are read with
   * pread on idx_fd through the window win[0, win_len) = file bytes from
   * win_off, until the index is complete. */
  int idx_fd;
  uint8_t *win;
  int64_t win_off, win_len, win_cap, win_hint;
  int64_t schema_end, scan_pos, scan_index;
  bool indexed, lazy, cache_on, cache_tried, from_cache, stored, has_identity;
  qv_file_identity identity;
  qv_status index_st;  /* sticky error of a lazy index extension */
  qv_error *index_err; /* its text (heap), NULL while none */
};

/* ------------------------------------------------------------------------ */

static uint32_t rd_u32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void apply_defaults(qv_reader *r, const qv_read_options *o) {
  if (o != NULL) r->opts = *o;
  if (!r->opts.validation_set && r->opts.validation == QV_VALIDATE_NONE)
    r->opts.validation = QV_VALIDATE_DEFAULT;
  if (r->opts.max_alloc <= 0) r->opts.max_alloc = QV_DEFAULT_MAX_ALLOC;
}

/* Collect the dictionary ids used anywhere in a type tree (including inside
 * dictionary value types) so that state exists for each. */
static qv_status collect_dicts(qv_reader *r, const qv_type *t, qv_error *err) {
  if (t->id == QV_DICTIONARY) {
    for (int32_t i = 0; i < r->n_dstate; i++)
      if (r->dstate[i].id == t->dict_id) {
        if (!qv_type_equals(r->dstate[i].value_type, t->value_type, false))
          return qv_error_set(err, QV_EINVAL,
                              "schema: dictionary id %lld is used by fields of "
                              "different value types",
                              (long long)t->dict_id);
        goto recurse;
      }
    dict_state *g = realloc(r->dstate, sizeof *g * (size_t)(r->n_dstate + 1));
    if (g == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (dictionaries)");
    r->dstate = g;
    g[r->n_dstate].id = t->dict_id;
    g[r->n_dstate].value_type = t->value_type;
    g[r->n_dstate].values = NULL;
    r->n_dstate++;
  recurse:
    return collect_dicts(r, t->value_type, err);
  }
  for (int32_t i = 0; i < t->n_children; i++)
    QV_RETURN_NOT_OK(collect_dicts(r, t->children[i].type, err));
  return QV_OK;
}

static dict_state *find_dstate(qv_reader *r, int64_t id) {
  for (int32_t i = 0; i < r->n_dstate; i++)
    if (r->dstate[i].id == id) return &r->dstate[i];
  return NULL;
}

static qv_array *dict_find_cb(void *ctx, int64_t id) {
  dict_state *d = find_dstate((qv_reader *)ctx, id);
  return d ? d->values : NULL;
}

static qv_status set_schema(qv_reader *r, qv_schema *schema, int version, bool big_endian,
                            qv_error *err) {
  r->schema = schema;
  r->version = version;
  r->big_endian = big_endian;
  return collect_dicts(r, schema->type, err);
}

static qv_status push_batch(qv_reader *r, const qv_batch_location *loc, qv_error *err) {
  if (r->n_batches == r->cap_batches) {
    int64_t cap = r->cap_batches ? r->cap_batches * 2 : 16;
    rec_loc *g = realloc(r->batches, sizeof *g * (size_t)cap);
    if (g == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (batch index)");
    r->batches = g;
    r->cap_batches = cap;
  }
  r->batches[r->n_batches].loc = *loc;
  r->batches[r->n_batches].dicts_before = r->n_dicts;
  r->n_batches++;
  if (qv_add_overflow(r->total_rows, loc->num_rows, &r->total_rows))
    return qv_error_set(err, QV_EINVAL, "total row count overflows int64");
  return QV_OK;
}

static qv_status push_dict(qv_reader *r, const qv_batch_location *loc, int32_t slot,
                           qv_error *err) {
  if (r->n_dicts == r->cap_dicts) {
    int64_t cap = r->cap_dicts ? r->cap_dicts * 2 : 8;
    qv_batch_location *g = realloc(r->dicts, sizeof *g * (size_t)cap);
    if (g == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (dictionary index)");
    r->dicts = g;
    int32_t *gs = realloc(r->dict_slot, sizeof *gs * (size_t)cap);
    if (gs == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (dictionary index)");
    r->dict_slot = gs;
    r->cap_dicts = cap;
  }
  r->dict_slot[r->n_dicts] = slot;
  r->dicts[r->n_dicts++] = *loc;
  return QV_OK;
}

/* Bytes [pos, pos + len) of the input: from the mapping, or (while idx_fd
 * is open) from the pread window, refilled from pos when they are not in
 * it. The pointer is valid until the next fetch. */
static qv_status fetch(qv_reader *r, int64_t pos, int64_t len, const uint8_t **out, qv_error *err) {
  int64_t size = r->data->size;
  if (pos < 0 || len < 0 || pos > size || len > size - pos)
    return qv_error_set(err, QV_EINVAL,
                        "read of %lld bytes at offset %lld runs past the end of the data "
                        "(%lld bytes)",
                        (long long)len, (long long)pos, (long long)size);
  if (r->idx_fd < 0) {
    *out = r->data->data + pos;
    return QV_OK;
  }
  if (pos >= r->win_off && pos - r->win_off + len <= r->win_len) {
    *out = r->win + (pos - r->win_off);
    return QV_OK;
  }
  int64_t want = len > r->win_hint ? len : r->win_hint;
  if (want > size - pos) want = size - pos;
  if (want > r->win_cap) {
    uint8_t *g = realloc(r->win, (size_t)(want > 0 ? want : 1));
    if (g == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (header window)");
    r->win = g;
    r->win_cap = want;
  }
  int64_t got = 0;
  while (got < want) {
    ssize_t k = pread(r->idx_fd, r->win + got, (size_t)(want - got), pos + got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      r->win_len = 0;
      return qv_error_set(err, QV_EIO, "read of %lld bytes at offset %lld failed: %s",
                          (long long)want, (long long)pos, strerror(errno));
    }
    if (k == 0) break;
    got += k;
  }
  r->win_off = pos;
  r->win_len = got;
  if (got < len)
    return qv_error_set(err, QV_ECHANGED,
                        "the file shrank while open (%lld of %lld bytes at offset %lld read; "
                        "%lld bytes when opened)",
                        (long long)got, (long long)len, (long long)pos, (long long)size);
  *out = r->win;
  return QV_OK;
}

/* Read the framing of the message at `pos` of a mapped input. On success
 * meta and meta_len give the flatbuffer and body_start the offset past the
 * framing + metadata; eos is set for the end-of-stream marker. */
static qv_status frame_at(qv_reader *r, int64_t pos, int64_t limit, int64_t index,
                          const uint8_t **meta, int64_t *meta_len, int64_t *body_start, bool *eos,
                          qv_error *err) {
  const uint8_t *d = NULL;
  *eos = false;
  if (limit - pos < 4) {
    /* Fewer than 4 bytes left: a clean end without the end marker is
     * accepted (as pyarrow does) only when nothing is left at all. */
    if (limit == pos) {
      *eos = true;
      return QV_OK;
    }
    return qv_error_set(err, QV_EINVAL,
                        "message %lld at offset %lld: truncated framing (%lld bytes left, "
                        "expected at least 4)",
                        (long long)index, (long long)pos, (long long)(limit - pos));
  }
  QV_RETURN_NOT_OK(fetch(r, pos, limit - pos < 8 ? limit - pos : 8, &d, err));
  uint32_t first = rd_u32le(d);
  int64_t hdr = 4;
  uint32_t len = first;
  if (first == QV_IPC_CONTINUATION) {
    if (limit - pos < 8) {
      if (limit - pos == 4) { /* continuation with nothing after: treat as end */
        return qv_error_set(err, QV_EINVAL,
                            "message %lld at offset %lld: truncated after the continuation "
                            "marker (expected a 4-byte metadata length)",
                            (long long)index, (long long)pos);
      }
      return qv_error_set(err, QV_EINVAL, "message %lld at offset %lld: truncated framing",
                          (long long)index, (long long)pos);
    }
    len = rd_u32le(d + 4);
    hdr = 8;
  }
  if (len == 0) {
    *eos = true;
    *body_start = pos + hdr;
    return QV_OK;
  }
  if ((int32_t)len < 0 || (int64_t)len > QV_MAX_METADATA_SIZE)
    return qv_error_set(err, QV_EINVAL,
                        "message %lld at offset %lld: metadata length %lld is invalid "
                        "(expected 1..%lld)",
                        (long long)index, (long long)pos, (long long)(int32_t)len,
                        (long long)QV_MAX_METADATA_SIZE);
  if ((int64_t)len > limit - pos - hdr)
    return qv_error_set(err, QV_EINVAL,
                        "message %lld at offset %lld: metadata of %u bytes runs past the "
                        "end of the data (%lld bytes left)",
                        (long long)index, (long long)pos, len, (long long)(limit - pos - hdr));
  QV_RETURN_NOT_OK(fetch(r, pos + hdr, len, meta, err));
  *meta_len = len;
  *body_start = pos + hdr + len;
  return QV_OK;
}

/* Check a decoded message's body fits and record it in the index. */
static qv_status index_message(qv_reader *r, const qv_ipc_message *m, int64_t pos, int64_t meta_len,
                               int64_t body_start, int64_t limit, int64_t index, qv_error *err) {
  if (m->body_length < 0 || m->body_length > limit - body_start)
    return qv_error_set(err, QV_EINVAL,
                        "message %lld at offset %lld: body of %lld bytes runs past the end "
                        "of the data (%lld bytes left)",
                        (long long)index, (long long)pos, (long long)m->body_length,
                        (long long)(limit - body_start));
  qv_batch_location loc = {pos, meta_len, body_start, m->body_length, m->batch.length, -1, false};
  if (m->batch.compression != QV_COMPRESSION_NONE) r->compression = m->batch.compression;
  if (m->type == QV_MSG_RECORD_BATCH) return push_batch(r, &loc, err);
  if (m->type == QV_MSG_DICTIONARY_BATCH) {
    dict_state *ds = find_dstate(r, m->dict_id);
    if (ds == NULL)
      return qv_error_set(err, QV_EINVAL,
                          "message %lld at offset %lld: dictionary batch for id %lld, "
                          "which no field of the schema uses",
                          (long long)index, (long long)pos, (long long)m->dict_id);
    loc.dict_id = m->dict_id;
    loc.is_delta = m->is_delta;
    return push_dict(r, &loc, (int32_t)(ds - r->dstate), err);
  }
  if (m->type == QV_MSG_SCHEMA)
    return qv_error_set(err, QV_EINVAL,
                        "message %lld at offset %lld: unexpected second schema message",
                        (long long)index, (long long)pos);
  return qv_error_set(err, QV_ENOTSUP, "message %lld at offset %lld: unsupported message type %d",
                      (long long)index, (long long)pos, (int)m->type);
}

/* Index the message at scan_pos (one step of the walk). */
static qv_status scan_one(qv_reader *r, qv_error *err) {
  int64_t pos = r->scan_pos, limit = r->data->size, index = r->scan_index;
  const uint8_t *meta = NULL;
  int64_t meta_len = 0, body_start = 0;
  bool eos;
  QV_RETURN_NOT_OK(frame_at(r, pos, limit, index, &meta, &meta_len, &body_start, &eos, err));
  if (eos) {
    r->indexed = true;
    return QV_OK;
  }
  qv_ipc_message m;
  qv_status st = qv_ipc_decode_message(meta, meta_len, &m, err);
  if (st != QV_OK)
    return qv_error_prefix(err, st, "message %lld at offset %lld: ", (long long)index,
                           (long long)pos);
  st = index_message(r, &m, pos, meta_len, body_start, limit, index, err);
  int64_t body = m.body_length;
  qv_ipc_message_reset(&m);
  QV_RETURN_NOT_OK(st);
  r->scan_pos = body_start + body;
  r->scan_index++;
  /* Small messages: one window holds several. Else read what the next
   * header probably needs (this one's size and a quarter, in 512-byte
   * steps): the copy out of the page cache is most of a walk's cost. */
  int64_t head = body_start - pos;
  if (head + body < QV_WIN_LARGE / 4) r->win_hint = QV_WIN_LARGE;
  else r->win_hint = (head + head / 4 + 511) / 512 * 512;
  return QV_OK;
}

/* The schema message at offset 0 of a stream. */
static qv_status open_stream_schema(qv_reader *r, qv_error *err) {
  int64_t limit = r->data->size;
  const uint8_t *meta = NULL;
  int64_t meta_len = 0, body_start = 0;
  bool eos;
  QV_RETURN_NOT_OK(frame_at(r, 0, limit, 0, &meta, &meta_len, &body_start, &eos, err));
  if (eos)
    return qv_error_set(err, QV_EINVAL, "stream has no schema message (it ends at offset 0)");
  qv_ipc_message m;
  qv_status st = qv_ipc_decode_message(meta, meta_len, &m, err);
  if (st != QV_OK) return qv_error_prefix(err, st, "message 0 at offset 0: ");
  if (m.type != QV_MSG_SCHEMA) {
    qv_ipc_message_reset(&m);
    return qv_error_set(err, QV_EINVAL,
                        "message 0 at offset 0: expected a schema message, found message "
                        "type %d",
                        (int)m.type);
  }
  qv_schema *sch = m.schema;
  m.schema = NULL;
  int version = m.version;
  bool be = m.big_endian;
  int64_t body = m.body_length;
  qv_ipc_message_reset(&m);
  QV_RETURN_NOT_OK(set_schema(r, sch, version, be, err));
  if (body < 0 || body > limit - body_start)
    return qv_error_set(err, QV_EINVAL, "message 0: schema body length %lld is invalid",
                        (long long)body);
  r->schema_end = r->scan_pos = body_start + body;
  r->scan_index = 1;
  return QV_OK;
}

/* The cache key of the stream: identity + xxh64 of the schema message (at
 * most its first MiB, at least the first 4 KiB of the file) and the last
 * 4 KiB. Read with pread, so it faults no page of the mapping. */
static bool cache_key(qv_reader *r, qv_index_key *key) {
  if (!r->has_identity || r->idx_fd < 0) return false;
  int64_t size = r->identity.size;
  int64_t head = r->schema_end < ((int64_t)1 << 20) ? r->schema_end : (int64_t)1 << 20;
  if (head < 4096) head = 4096;
  if (head > size) head = size;
  int64_t tail = size < 4096 ? size : 4096;
  uint8_t *buf = malloc((size_t)(head > tail ? head : tail) + 1);
  if (buf == NULL) return false;
  XXH64_state_t *st = XXH64_createState();
  bool ok = st != NULL && XXH64_reset(st, 0) == XXH_OK && qv_pread_full(r->idx_fd, buf, head, 0);
  if (ok) XXH64_update(st, buf, (size_t)head);
  ok = ok && qv_pread_full(r->idx_fd, buf, tail, size - tail);
  if (ok) XXH64_update(st, buf, (size_t)tail);
  free(buf);
  key->content = ok ? XXH64_digest(st) : 0;
  XXH64_freeState(st);
  key->dev = r->identity.dev;
  key->ino = r->identity.ino;
  key->size = size;
  key->mtime_ns = r->identity.mtime_ns;
  return ok;
}

static bool loc_equal(const qv_batch_location *a, const qv_batch_location *b) {
  return a->offset == b->offset && a->metadata_length == b->metadata_length &&
         a->body_offset == b->body_offset && a->body_length == b->body_length &&
         a->num_rows == b->num_rows && a->dict_id == b->dict_id && a->is_delta == b->is_delta;
}

/* A cache entry's index, built in t's arrays as the entries are checked. */
typedef struct cache_fill {
  qv_reader *r;
  qv_reader t;
  bool ok;
} cache_fill;

static bool fill_one(void *ctx, const qv_index_msg *x, int64_t count) {
  cache_fill *f = ctx;
  if (f->t.cap_batches == 0 && count > 0) { /* room for all (count <= file size / 48) */
    f->t.batches = malloc(sizeof *f->t.batches * (size_t)count);
    if (f->t.batches == NULL) return f->ok = false;
    f->t.cap_batches = count;
  }
  qv_batch_location loc = {x->offset,   x->metadata_length, x->body_offset, x->body_length,
                           x->num_rows, x->dict_id,         x->is_delta};
  if (x->kind == QV_MSG_RECORD_BATCH) {
    f->ok = push_batch(&f->t, &loc, NULL) == QV_OK;
  } else {
    dict_state *ds = find_dstate(f->r, x->dict_id);
    f->ok = ds != NULL && push_dict(&f->t, &loc, (int32_t)(ds - f->r->dstate), NULL) == QV_OK;
  }
  return f->ok;
}

/* Replace the index with the cache entry's, if there is a valid one that
 * names only dictionary ids of the schema and agrees with what is already
 * indexed. */
static bool try_cache(qv_reader *r) {
  qv_index_key key;
  if (!cache_key(r, &key)) return false;
  cache_fill f;
  memset(&f, 0, sizeof f);
  f.r = r;
  f.ok = true;
  int64_t end = 0;
  qv_compression comp = QV_COMPRESSION_NONE;
  qv_reader *t = &f.t;
  bool ok = qv_index_cache_load(&key, r->schema_end, fill_one, &f, &end, &comp) && f.ok;
  ok = ok && t->n_batches >= r->n_batches && t->n_dicts >= r->n_dicts;
  for (int64_t i = 0; ok && i < r->n_batches; i++)
    ok = loc_equal(&t->batches[i].loc, &r->batches[i].loc) &&
         t->batches[i].dicts_before == r->batches[i].dicts_before;
  for (int64_t i = 0; ok && i < r->n_dicts; i++) ok = loc_equal(&t->dicts[i], &r->dicts[i]);
  if (!ok) {
    free(t->batches);
    free(t->dicts);
    free(t->dict_slot);
    return false;
  }
  free(r->batches);
  free(r->dicts);
  free(r->dict_slot);
  r->batches = t->batches;
  r->n_batches = t->n_batches;
  r->cap_batches = t->cap_batches;
  r->dicts = t->dicts;
  r->dict_slot = t->dict_slot;
  r->n_dicts = t->n_dicts;
  r->cap_dicts = t->cap_dicts;
  r->total_rows = t->total_rows;
  if (comp != QV_COMPRESSION_NONE) r->compression = comp;
  r->scan_pos = end;
  r->scan_index = 1 + t->n_batches + t->n_dicts;
  r->indexed = true;
  r->from_cache = true;
  return true;
}

/* The index is complete: store it (streams opened by path, enough
 * messages, not from the cache) and drop the pread state. */
static void finish_index(qv_reader *r) {
  int64_t n = r->n_batches + r->n_dicts;
  qv_index_key key;
  if (r->format == QV_FORMAT_STREAM && r->cache_on && !r->from_cache &&
      n >= QV_INDEX_CACHE_MIN_MESSAGES && cache_key(r, &key)) {
    qv_index_msg *msgs = malloc(sizeof *msgs * (size_t)n);
    if (msgs != NULL) {
      int64_t ib = 0, id = 0;
      for (int64_t k = 0; k < n; k++) { /* both lists are in stream order */
        bool dict = id < r->n_dicts &&
                    (ib >= r->n_batches || r->dicts[id].offset < r->batches[ib].loc.offset);
        const qv_batch_location *l = dict ? &r->dicts[id++] : &r->batches[ib++].loc;
        msgs[k].offset = l->offset;
        msgs[k].body_offset = l->body_offset;
        msgs[k].body_length = l->body_length;
        msgs[k].num_rows = l->num_rows;
        msgs[k].dict_id = dict ? l->dict_id : -1;
        msgs[k].metadata_length = (int32_t)l->metadata_length;
        msgs[k].kind = dict ? QV_MSG_DICTIONARY_BATCH : QV_MSG_RECORD_BATCH;
        msgs[k].is_delta = dict && l->is_delta;
      }
      r->stored = qv_index_cache_store(&key, r->schema_end, r->scan_pos, r->compression, msgs, n);
      free(msgs);
    }
  }
  if (r->idx_fd >= 0) close(r->idx_fd);
  r->idx_fd = -1;
  free(r->win);
  r->win = NULL;
  r->win_len = r->win_cap = 0;
}

/* Index at least up to record batch `upto` (INT64_MAX: everything). */
static qv_status ensure_index(qv_reader *r, int64_t upto, qv_error *err) {
  if (r->indexed || upto < r->n_batches) return QV_OK;
  if (r->index_err != NULL) {
    if (err != NULL) *err = *r->index_err;
    return r->index_st;
  }
  /* The cache when the whole index (or much of it) is wanted; the first
   * rows of a lazy stream never pay for it. */
  if (!r->cache_tried && r->cache_on && r->format == QV_FORMAT_STREAM &&
      (upto == INT64_MAX || upto >= r->n_batches + 16)) {
    r->cache_tried = true;
    if (try_cache(r)) {
      finish_index(r);
      return QV_OK;
    }
  }
  qv_error local;
  qv_status st = QV_OK;
  while (st == QV_OK && !r->indexed && r->n_batches <= upto) st = scan_one(r, &local);
  if (st != QV_OK) {
    r->index_err = malloc(sizeof *r->index_err);
    if (r->index_err != NULL) {
      *r->index_err = local;
      r->index_st = st;
    }
    if (err != NULL) *err = local;
    return st;
  }
  if (r->indexed) finish_index(r);
  return QV_OK;
}

/* File format: "ARROW1\0\0" <stream> <footer> <int32 footer len> "ARROW1". */
static qv_status open_file_format(qv_reader *r, qv_error *err) {
  const uint8_t *d = r->data->data;
  int64_t n = r->data->size;
  if (n < QV_IPC_MAGIC_PADDED + 4 + QV_IPC_MAGIC_LEN)
    return qv_error_set(err, QV_EINVAL,
                        "file of %lld bytes is too small for the IPC file format "
                        "(expected at least %d)",
                        (long long)n, QV_IPC_MAGIC_PADDED + 4 + QV_IPC_MAGIC_LEN);
  if (memcmp(d + n - QV_IPC_MAGIC_LEN, QV_IPC_MAGIC, QV_IPC_MAGIC_LEN) != 0)
    return qv_error_set(err, QV_EINVAL,
                        "file starts with the ARROW1 magic but does not end with it "
                        "(truncated or not an Arrow file)");
  int64_t footer_len = (int32_t)rd_u32le(d + n - QV_IPC_MAGIC_LEN - 4);
  int64_t footer_end = n - QV_IPC_MAGIC_LEN - 4;
  if (footer_len <= 0 || footer_len > footer_end - QV_IPC_MAGIC_PADDED)
    return qv_error_set(err, QV_EINVAL, "footer length %lld is invalid (expected 1..%lld)",
                        (long long)footer_len, (long long)(footer_end - QV_IPC_MAGIC_PADDED));
  int64_t footer_start = footer_end - footer_len;
  qv_ipc_footer f;
  qv_status st = qv_ipc_decode_footer(d + footer_start, footer_len, &f, err);
  if (st != QV_OK)
    return qv_error_prefix(err, st, "footer at offset %lld: ", (long long)footer_start);
  qv_schema *s = f.schema;
  f.schema = NULL;
  st = set_schema(r, s, f.version, f.big_endian, err);
  if (st == QV_OK) st = qv_metadata_copy(&r->footer_metadata, &f.custom_metadata, err);
  r->has_footer = true;
  /* Visit dictionary and record batch blocks in file order so that the
   * dictionaries in force for each batch are those before it. */
  int64_t nd = f.n_dictionaries, nb = f.n_record_batches;
  int64_t id = 0, ib = 0;
  while (st == QV_OK && (id < nd || ib < nb)) {
    bool take_dict =
        id < nd && (ib >= nb || f.dictionaries[id].offset <= f.record_batches[ib].offset);
    const qv_ipc_block *blk = take_dict ? &f.dictionaries[id] : &f.record_batches[ib];
    int64_t index = take_dict ? id : ib;
    const char *what = take_dict ? "dictionary block" : "record batch block";
    int64_t end;
    if (blk->offset < QV_IPC_MAGIC_PADDED || blk->metadata_length <= 0 || blk->body_length < 0 ||
        qv_add_overflow(blk->offset, blk->metadata_length, &end) ||
        qv_add_overflow(end, blk->body_length, &end) || end > footer_start) {
      st = qv_error_set(err, QV_EINVAL,
                        "footer: %s %lld (offset %lld, metadata %d bytes, body %lld bytes) "
                        "lies outside the data region [8, %lld)",
                        what, (long long)index, (long long)blk->offset, blk->metadata_length,
                        (long long)blk->body_length, (long long)footer_start);
      break;
    }
    const uint8_t *meta = NULL;
    int64_t meta_len = 0, body_start = 0;
    bool eos = false;
    st = frame_at(r, blk->offset, blk->offset + blk->metadata_length, index, &meta, &meta_len,
                  &body_start, &eos, err);
    if (st == QV_OK && eos)
      st = qv_error_set(err, QV_EINVAL,
                        "%s %lld at offset %lld: end-of-stream marker where "
                        "a message was expected",
                        what, (long long)index, (long long)blk->offset);
    if (st != QV_OK) break;
    qv_ipc_message m;
    st = qv_ipc_decode_message(meta, meta_len, &m, err);
    if (st != QV_OK) {
      qv_error_prefix(err, st, "%s %lld at offset %lld: ", what, (long long)index,
                      (long long)blk->offset);
      break;
    }
    qv_msg_type want = take_dict ? QV_MSG_DICTIONARY_BATCH : QV_MSG_RECORD_BATCH;
    if (m.type != want) {
      st = qv_error_set(err, QV_EINVAL, "%s %lld at offset %lld: message type %d, expected %d",
                        what, (long long)index, (long long)blk->offset, (int)m.type, (int)want);
    } else if (m.body_length != blk->body_length) {
      /* Arrow C++ trusts the block; we require them to agree. */
      st = qv_error_set(err, QV_EINVAL,
                        "%s %lld at offset %lld: message body length %lld differs from the "
                        "footer's %lld",
                        what, (long long)index, (long long)blk->offset, (long long)m.body_length,
                        (long long)blk->body_length);
    } else {
      int64_t body_at = blk->offset + blk->metadata_length;
      st = index_message(r, &m, blk->offset, meta_len, body_at, footer_start, index, err);
    }
    qv_ipc_message_reset(&m);
    if (take_dict) id++;
    else ib++;
  }
  qv_ipc_footer_reset(&f);
  return st;
}

static qv_status open_common(qv_reader *r, qv_error *err) {
  const uint8_t *d = r->data->data;
  int64_t n = r->data->size;
  if (n >= QV_IPC_MAGIC_LEN && memcmp(d, QV_IPC_MAGIC, QV_IPC_MAGIC_LEN) == 0) {
    r->format = QV_FORMAT_FILE;
    qv_status st = open_file_format(r, err);
    r->indexed = true;
    finish_index(r);
    return st;
  }
  r->format = QV_FORMAT_STREAM;
  if (n == 0) return qv_error_set(err, QV_EINVAL, "empty input: not an Arrow IPC file or stream");
  if (n < 4)
    return qv_error_set(err, QV_EINVAL, "input of %lld bytes is not an Arrow IPC file or stream",
                        (long long)n);
  QV_RETURN_NOT_OK(open_stream_schema(r, err));
  return r->lazy ? QV_OK : ensure_index(r, INT64_MAX, err);
}

static qv_reader *reader_alloc(const qv_read_options *options) {
  qv_reader *r = calloc(1, sizeof *r);
  if (r == NULL) return NULL;
  r->fd = -1;
  r->idx_fd = -1;
  r->win_hint = QV_WIN_SMALL;
  apply_defaults(r, options);
  r->budget = qv_ipc_budget_new(qv_ipc_default_budget());
  if (r->budget == NULL) {
    free(r);
    return NULL;
  }
  return r;
}

static qv_status open_body(void *r, qv_error *err) { return open_common(r, err); }

qv_status qv_reader_open_buffer(qv_buffer *buf, const qv_read_options *options, qv_reader **out,
                                qv_error *err) {
  qv_reader *r = reader_alloc(options);
  if (r == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (reader)");
  r->data = qv_buffer_ref(buf);
  qv_status st = qv_guard_check_buffer(buf, err);
  if (st == QV_OK) st = qv_guard_run(open_body, r, err);
  if (st != QV_OK) {
    qv_reader_close(r);
    return st;
  }
  *out = r;
  return QV_OK;
}

qv_status qv_reader_open_mapped(qv_buffer *map, const char *path, const qv_file_identity *id,
                                const qv_read_options *options, const qv_index_options *index,
                                qv_reader **out, qv_error *err) {
  /* A second descriptor for pread of the headers; used only when it is
   * the file that was mapped. */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd >= 0 &&
      (fstat(fd, &sb) != 0 || (uint64_t)sb.st_dev != id->dev || (uint64_t)sb.st_ino != id->ino ||
       (int64_t)sb.st_size != id->size || (int64_t)sb.st_size != map->size)) {
    close(fd);
    fd = -1;
  }
#ifdef POSIX_FADV_RANDOM
  if (fd >= 0) posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM); /* no read-ahead of bodies */
#endif
  qv_reader *r = reader_alloc(options);
  if (r == NULL) {
    if (fd >= 0) close(fd);
    return qv_error_set(err, QV_ENOMEM, "out of memory (reader)");
  }
  r->data = qv_buffer_ref(map);
  r->idx_fd = fd;
  r->identity = *id;
  r->has_identity = fd >= 0;
  /* Lazy needs pread: without it, the walk through the mapping happens at
   * open, under the guard. */
  r->lazy = index != NULL && index->lazy && fd >= 0;
  r->cache_on = qv_index_cache_enabled(index != NULL ? index->cache : QV_INDEX_CACHE_DEFAULT);
  qv_status st = qv_guard_check_buffer(map, err);
  if (st == QV_OK) st = qv_guard_run(open_body, r, err);
  if (st != QV_OK) {
    qv_reader_close(r);
    return st;
  }
  *out = r;
  return QV_OK;
}

qv_status qv_reader_open_file(const char *path, const qv_read_options *options,
                              const qv_index_options *index, qv_reader **out, qv_error *err) {
  qv_buffer *map = NULL;
  qv_file_identity id;
  QV_RETURN_NOT_OK(qv_buffer_map_file(path, &map, &id, err));
  qv_status st = qv_reader_open_mapped(map, path, &id, options, index, out, err);
  qv_buffer_unref(map);
  if (st != QV_OK) qv_error_prefix(err, st, "%s: ", path);
  return st;
}

qv_status qv_reader_open_path(const char *path, const qv_read_options *options, qv_reader **out,
                              qv_error *err) {
  return qv_reader_open_file(path, options, NULL, out, err);
}

qv_status qv_reader_index(qv_reader *r, int64_t upto, qv_error *err) {
  if (r->data == NULL) return QV_OK;
  return ensure_index(r, upto < 0 ? INT64_MAX : upto, err);
}

void qv_reader_index_state(const qv_reader *r, qv_reader_index_info *out) {
  out->batches_indexed = r->n_batches;
  out->complete = r->data != NULL && r->indexed;
  out->from_cache = r->from_cache;
  out->stored = r->stored;
}

bool qv_reader_file_identity(const qv_reader *r, qv_file_identity *out) {
  if (!r->has_identity) return false;
  *out = r->identity;
  return true;
}

/* The whole index, for the accessors (errors: see qv_reader_index). */
static bool index_all(const qv_reader *r) {
  if (r->data == NULL) return false;
  if (r->indexed) return true;
  return ensure_index((qv_reader *)r, INT64_MAX, NULL) == QV_OK;
}

void qv_reader_close(qv_reader *r) {
  if (r == NULL) return;
  for (int32_t i = 0; i < r->n_dstate; i++) qv_array_unref(r->dstate[i].values);
  free(r->dstate);
  free(r->batches);
  free(r->dicts);
  free(r->dict_slot);
  if (r->idx_fd >= 0) close(r->idx_fd);
  free(r->win);
  free(r->index_err);
  qv_metadata_reset(&r->footer_metadata);
  qv_schema_unref(r->schema);
  qv_buffer_unref(r->data);
  qv_ipc_budget_unref(r->budget);
  free(r);
}

const qv_schema *qv_reader_schema(const qv_reader *r) { return r->schema; }
qv_ipc_format qv_reader_format(const qv_reader *r) { return r->format; }
qv_compression qv_reader_compression(const qv_reader *r) { return r->compression; }
int64_t qv_reader_size(const qv_reader *r) { return r->data ? r->data->size : 0; }
bool qv_reader_big_endian(const qv_reader *r) { return r->big_endian; }
int qv_reader_metadata_version(const qv_reader *r) { return r->version + 1; }
int64_t qv_reader_num_batches(const qv_reader *r) { return index_all(r) ? r->n_batches : -1; }
int64_t qv_reader_num_rows(const qv_reader *r) { return index_all(r) ? r->total_rows : -1; }

int64_t qv_reader_batch_rows(const qv_reader *r, int64_t i) {
  if (r->data == NULL || i < 0) return -1;
  if (i >= r->n_batches && ensure_index((qv_reader *)r, i, NULL) != QV_OK) return -1;
  if (i >= r->n_batches) return -1;
  return r->batches[i].loc.num_rows;
}

const qv_batch_location *qv_reader_batch_location(const qv_reader *r, int64_t i) {
  if (r->data == NULL || i < 0) return NULL;
  if (i >= r->n_batches && ensure_index((qv_reader *)r, i, NULL) != QV_OK) return NULL;
  if (i >= r->n_batches) return NULL;
  return &r->batches[i].loc;
}

int64_t qv_reader_num_dictionary_batches(const qv_reader *r) {
  if (r->data != NULL && !index_all(r)) return -1;
  return r->n_dicts;
}

const qv_batch_location *qv_reader_dictionary_location(const qv_reader *r, int64_t i) {
  if (r->data == NULL || i < 0 || !index_all(r) || i >= r->n_dicts) return NULL;
  return &r->dicts[i];
}

const qv_metadata *qv_reader_footer_metadata(const qv_reader *r) {
  return r->has_footer ? &r->footer_metadata : NULL;
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */

/* What a record batch decode loads: the columns (a mask over the
 * schema's, NULL = all) and at most max_rows rows (< 0 = all). */
typedef struct batch_sel {
  const bool *columns;
  int64_t max_rows;
} batch_sel;

/* Decode the body of a record batch / dictionary batch message. */
static qv_status load_message_sel(qv_reader *r, const qv_type *struct_type, const qv_ipc_message *m,
                                  qv_buffer *body, int64_t index, const batch_sel *sel,
                                  qv_array **out, qv_error *err) {
  qv_ipc_load_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.body = body;
  ctx.big_endian = r->big_endian;
  ctx.max_alloc = r->opts.max_alloc;
  ctx.validation = r->opts.validation;
  ctx.dicts.find = dict_find_cb;
  ctx.dicts.ctx = r;
  ctx.message_index = index;
  ctx.metadata_version = m->version;
  ctx.columns = sel ? sel->columns : NULL;
  ctx.limit_rows = sel != NULL && sel->max_rows >= 0;
  ctx.max_rows = sel ? sel->max_rows : -1;
  ctx.budget = r->budget;
  return qv_ipc_load_batch(struct_type, &m->batch, &ctx, out, err);
}

/* A message that disagrees with its index entry: the file changed under
 * the reader, or a (forged) cache entry does not describe it. */
static qv_status mismatch(qv_error *err, const char *what, int64_t i,
                          const qv_batch_location *loc) {
  return qv_error_set(err, QV_ECHANGED,
                      "%s %lld at offset %lld: the message there does not match the index "
                      "(expected a body of %lld bytes at offset %lld, %lld rows): the file "
                      "changed while open, or its index cache entry is corrupt",
                      what, (long long)i, (long long)loc->offset, (long long)loc->body_length,
                      (long long)loc->body_offset, (long long)loc->num_rows);
}

static qv_status load_message(qv_reader *r, const qv_type *struct_type, const qv_ipc_message *m,
                              qv_buffer *body, int64_t index, qv_array **out, qv_error *err) {
  return load_message_sel(r, struct_type, m, body, index, NULL, out, err);
}

/* Concatenate the values of a delta dictionary onto the current ones. */
static qv_status dict_apply(qv_reader *r, dict_state *ds, qv_array *values, bool is_delta,
                            qv_error *err) {
  if (!is_delta || ds->values == NULL) {
    qv_array_unref(ds->values);
    ds->values = values;
    return QV_OK;
  }
  qv_array *parts[2] = {ds->values, values};
  qv_array *joined = NULL;
  qv_status st = qv_array_concat(parts, 2, &joined, err);
  qv_array_unref(values);
  if (st != QV_OK) return st;
  qv_array_unref(ds->values);
  ds->values = joined;
  return QV_OK;
}

/* Decode one dictionary message (from the mapped index) into its state. */
static qv_status apply_dict_message(qv_reader *r, int64_t k, qv_error *err) {
  const qv_batch_location *loc = &r->dicts[k];
  const uint8_t *meta = NULL;
  int64_t meta_len = 0, body_start = 0;
  bool eos = false;
  QV_RETURN_NOT_OK(
      frame_at(r, loc->offset, r->data->size, k, &meta, &meta_len, &body_start, &eos, err));
  qv_ipc_message m;
  QV_RETURN_NOT_OK(qv_ipc_decode_message(meta, meta_len, &m, err));
  if (m.type != QV_MSG_DICTIONARY_BATCH || body_start != loc->body_offset ||
      m.body_length != loc->body_length || m.dict_id != loc->dict_id ||
      m.is_delta != loc->is_delta || m.batch.length != loc->num_rows) {
    qv_ipc_message_reset(&m);
    return mismatch(err, "dictionary batch", k, loc);
  }
  dict_state *ds = find_dstate(r, m.dict_id);
  qv_buffer *body = NULL;
  qv_type *wrap = NULL;
  qv_array *batch = NULL;
  qv_status st = qv_buffer_view(r->data, loc->body_offset, loc->body_length, &body, err);
  if (st == QV_OK) {
    wrap = qv_type_new(QV_STRUCT);
    if (wrap == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  if (st == QV_OK)
    st = qv_type_add_child(wrap, "dictionary", true, qv_type_ref((qv_type *)ds->value_type), NULL,
                           err);
  if (st == QV_OK) st = load_message(r, wrap, &m, body, k, &batch, err);
  if (st == QV_OK) {
    qv_array *values = qv_array_ref(batch->children[0]);
    st = dict_apply(r, ds, values, m.is_delta, err);
  }
  if (st != QV_OK)
    qv_error_prefix(err, st, "dictionary batch %lld (id %lld): ", (long long)k,
                    (long long)m.dict_id);
  qv_array_unref(batch);
  qv_type_unref(wrap);
  qv_buffer_unref(body);
  qv_ipc_message_reset(&m);
  return st;
}

/* Bring the dictionary state to "the first `upto` dictionary messages
 * applied". Moving backwards replays from the start. */
static qv_status dicts_seek(qv_reader *r, int64_t upto, qv_error *err) {
  if (upto < r->dicts_applied) {
    for (int32_t i = 0; i < r->n_dstate; i++) {
      qv_array_unref(r->dstate[i].values);
      r->dstate[i].values = NULL;
    }
    r->dicts_applied = 0;
  }
  int64_t from = r->dicts_applied;
  if (upto <= from) return QV_OK;
  /* Skip replacement-superseded messages: for each id only the last
   * non-delta message before `upto` and the deltas after it matter. One
   * backward pass marks them (linear, whatever a file's message count). */
  bool *replaced = calloc((size_t)r->n_dstate + 1, sizeof *replaced);
  bool *needed = calloc((size_t)(upto - from), sizeof *needed);
  qv_status st = QV_OK;
  if (replaced == NULL || needed == NULL) {
    st = qv_error_set(err, QV_ENOMEM, "out of memory (dictionary replay)");
  } else {
    for (int64_t k = upto - 1; k >= from; k--) {
      int32_t slot = r->dict_slot[k];
      needed[k - from] = !replaced[slot];
      if (!r->dicts[k].is_delta) replaced[slot] = true;
    }
    for (int64_t k = from; st == QV_OK && k < upto; k++) {
      if (needed[k - from]) st = apply_dict_message(r, k, err);
      if (st == QV_OK) r->dicts_applied = k + 1;
    }
  }
  free(replaced);
  free(needed);
  return st;
}

static qv_status batch_sel_load(qv_reader *r, int64_t i, const batch_sel *sel, qv_array **out,
                                qv_error *err) {
  if (r->data == NULL)
    return qv_error_set(err, QV_EARG,
                        "random access is not available on a stream read "
                        "from a pipe; use qv_reader_next");
  if (i >= 0) QV_RETURN_NOT_OK(ensure_index(r, i, err));
  if (i < 0 || i >= r->n_batches)
    return qv_error_set(err, QV_ERANGE, "record batch %lld does not exist (the file has %lld)",
                        (long long)i, (long long)r->n_batches);
  const rec_loc *rl = &r->batches[i];
  QV_RETURN_NOT_OK(dicts_seek(r, rl->dicts_before, err));
  const uint8_t *meta = NULL;
  int64_t meta_len = 0, body_start = 0;
  bool eos = false;
  QV_RETURN_NOT_OK(
      frame_at(r, rl->loc.offset, r->data->size, i, &meta, &meta_len, &body_start, &eos, err));
  qv_ipc_message m;
  QV_RETURN_NOT_OK(qv_ipc_decode_message(meta, meta_len, &m, err));
  if (m.type != QV_MSG_RECORD_BATCH || body_start != rl->loc.body_offset ||
      m.body_length != rl->loc.body_length || m.batch.length != rl->loc.num_rows) {
    qv_ipc_message_reset(&m);
    return mismatch(err, "record batch", i, &rl->loc);
  }
  qv_buffer *body = NULL;
  qv_status st = qv_buffer_view(r->data, rl->loc.body_offset, rl->loc.body_length, &body, err);
  if (st == QV_OK) st = load_message_sel(r, r->schema->type, &m, body, i, sel, out, err);
  if (st != QV_OK) qv_error_prefix(err, st, "record batch %lld: ", (long long)i);
  qv_buffer_unref(body);
  qv_ipc_message_reset(&m);
  return st;
}

/* End of the bytes that decoding batch i reads: its message and the
 * dictionary messages dicts_seek will apply. */
static int64_t batch_extent(const qv_reader *r, int64_t i) {
  const rec_loc *rl = &r->batches[i];
  int64_t end = rl->loc.body_offset + rl->loc.body_length;
  int64_t upto = rl->dicts_before;
  for (int64_t k = upto < r->dicts_applied ? 0 : r->dicts_applied; k < upto; k++) {
    int64_t e = r->dicts[k].body_offset + r->dicts[k].body_length;
    if (e > end) end = e;
  }
  return end;
}

typedef struct batch_call {
  qv_reader *r;
  int64_t i;
  const batch_sel *sel;
  qv_array *out;
} batch_call;

static qv_status batch_body(void *ctx, qv_error *err) {
  batch_call *c = ctx;
  return batch_sel_load(c->r, c->i, c->sel, &c->out, err);
}

/* Batch i (with a selection, NULL: everything), decoded under the mapped-
 * read guard. */
static qv_status guarded_batch(qv_reader *r, int64_t i, const batch_sel *sel, qv_array **out,
                               qv_error *err) {
  /* A lazy index is extended first (pread, outside the guard), so that the
   * decode below is guarded like any other. */
  if (r->data != NULL && i >= 0) QV_RETURN_NOT_OK(ensure_index(r, i, err));
  if (r->data == NULL || i < 0 || i >= r->n_batches) return batch_sel_load(r, i, sel, out, err);
  batch_call c = {r, i, sel, NULL};
  qv_status st = qv_guard_check_prefix(r->data, batch_extent(r, i), err);
  if (st == QV_OK) st = qv_guard_run(batch_body, &c, err);
  if (st != QV_OK) {
    qv_array_unref(c.out);
    if (st == QV_ECHANGED) qv_error_prefix(err, st, "record batch %lld: ", (long long)i);
    return st;
  }
  *out = c.out;
  return QV_OK;
}

qv_status qv_reader_batch(qv_reader *r, int64_t i, qv_array **out, qv_error *err) {
  return guarded_batch(r, i, NULL, out, err);
}

/* A STRUCT array of the schema's columns `cols` taken from `full` (whose
 * children at those places are loaded). */
static qv_status project_batch(const qv_schema *schema, qv_array *full, const int32_t *cols,
                               int32_t n, qv_array **out, qv_error *err) {
  *out = NULL;
  qv_type *t = qv_type_new(QV_STRUCT);
  if (t == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (projection)");
  qv_status st = QV_OK;
  for (int32_t k = 0; k < n && st == QV_OK; k++) {
    const qv_field *f = qv_schema_field(schema, cols[k]);
    st = qv_type_add_child(t, f->name, f->nullable, qv_type_ref(f->type), &f->metadata, err);
  }
  qv_array *a = st == QV_OK ? qv_array_new(t, 1, n) : NULL;
  if (st == QV_OK && a == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory (projection)");
  qv_type_unref(t); /* the array holds its own reference */
  if (st != QV_OK) return st;
  a->length = full->length;
  a->null_count = 0;
  for (int32_t k = 0; k < n; k++) a->children[k] = qv_array_ref(full->children[cols[k]]);
  *out = a;
  return QV_OK;
}

/* The load mask of a column list (NULL = all columns). */
static qv_status select_mask(const qv_reader *r, const int32_t *columns, int32_t n_columns,
                             bool **mask, qv_error *err) {
  *mask = NULL;
  if (columns == NULL) return QV_OK;
  int32_t nf = qv_schema_num_fields(r->schema);
  if (n_columns < 0) return qv_error_set(err, QV_EARG, "negative column count %d", (int)n_columns);
  *mask = calloc((size_t)(nf > 0 ? nf : 1), sizeof **mask);
  if (*mask == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (column mask)");
  for (int32_t k = 0; k < n_columns; k++) {
    if (columns[k] < 0 || columns[k] >= nf) {
      free(*mask);
      *mask = NULL;
      return qv_error_set(err, QV_ERANGE, "column %d does not exist (the schema has %d)",
                          (int)columns[k], (int)nf);
    }
    (*mask)[columns[k]] = true;
  }
  return QV_OK;
}

/* After a load with a selection's mask: keep the columns asked for, in
 * their order (consumes `full`). */
static qv_status select_finish(qv_reader *r, const int32_t *columns, int32_t n_columns,
                               qv_array *full, qv_array **out, qv_error *err) {
  if (columns == NULL || full == NULL) {
    *out = full;
    return QV_OK;
  }
  qv_status st = project_batch(r->schema, full, columns, n_columns, out, err);
  qv_array_unref(full);
  return st;
}

qv_status qv_reader_batch_select(qv_reader *r, int64_t i, const int32_t *columns, int32_t n_columns,
                                 int64_t max_rows, qv_array **out, qv_error *err) {
  *out = NULL;
  bool *mask = NULL;
  QV_RETURN_NOT_OK(select_mask(r, columns, n_columns, &mask, err));
  batch_sel sel = {mask, max_rows};
  qv_array *full = NULL;
  qv_status st = guarded_batch(r, i, &sel, &full, err);
  free(mask);
  if (st != QV_OK) return st;
  return select_finish(r, columns, n_columns, full, out, err);
}

qv_status qv_reader_batch_masked(qv_reader *r, int64_t i, const bool *load, qv_array **out,
                                 qv_error *err) {
  batch_sel sel = {load, -1};
  return guarded_batch(r, i, &sel, out, err);
}

void qv_reader_set_decompress_budget(qv_reader *r, int64_t bytes) {
  r->budget->limit = bytes > 0 ? bytes : 0;
}

int64_t qv_reader_decompress_budget(const qv_reader *r) { return r->budget->limit; }

void qv_reader_decompress_stats(const qv_reader *r, int64_t *held, int64_t *total) {
  if (held) *held = __atomic_load_n(&r->budget->held, __ATOMIC_RELAXED);
  if (total) *total = __atomic_load_n(&r->budget->total, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------ */
/* Streams from a descriptor                                                 */

static qv_status read_exact(int fd, void *dst, int64_t n, int64_t *got, qv_error *err) {
  int64_t done = 0;
  while (done < n) {
    ssize_t k = read(fd, (uint8_t *)dst + done, (size_t)(n - done));
    if (k == 0) break;
    if (k < 0) {
      if (errno == EINTR) continue;
      return qv_error_set(err, QV_EIO, "read failed: %s", strerror(errno));
    }
    done += k;
  }
  *got = done;
  return QV_OK;
}

/* Read the next message from the descriptor into a heap buffer holding
 * metadata + body; *m decoded. Sets *eos at the end of the stream. */
static qv_status fd_next_message(qv_reader *r, qv_ipc_message *m, qv_buffer **body, bool *eos,
                                 qv_error *err) {
  int64_t index = r->stream_messages;
  uint8_t hdr[4];
  int64_t got;
  *eos = false;
  QV_RETURN_NOT_OK(read_exact(r->fd, hdr, 4, &got, err));
  if (got == 0) {
    *eos = true;
    return QV_OK;
  }
  if (got < 4)
    return qv_error_set(err, QV_EINVAL, "message %lld: truncated framing (%lld of 4 bytes)",
                        (long long)index, (long long)got);
  uint32_t len = rd_u32le(hdr);
  if (len == QV_IPC_CONTINUATION) {
    QV_RETURN_NOT_OK(read_exact(r->fd, hdr, 4, &got, err));
    if (got < 4)
      return qv_error_set(err, QV_EINVAL, "message %lld: truncated after the continuation marker",
                          (long long)index);
    len = rd_u32le(hdr);
  }
  if (len == 0) {
    *eos = true;
    return QV_OK;
  }
  if ((int32_t)len < 0 || (int64_t)len > QV_MAX_METADATA_SIZE || (int64_t)len > r->opts.max_alloc)
    return qv_error_set(err, QV_EINVAL, "message %lld: metadata length %lld is invalid",
                        (long long)index, (long long)(int32_t)len);
  qv_buffer *meta = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(len, &meta, err));
  qv_status st = read_exact(r->fd, meta->data, len, &got, err);
  if (st == QV_OK && got < (int64_t)len)
    st = qv_error_set(err, QV_EINVAL, "message %lld: metadata truncated (%lld of %u bytes)",
                      (long long)index, (long long)got, len);
  if (st == QV_OK) st = qv_ipc_decode_message(meta->data, len, m, err);
  qv_buffer_unref(meta);
  if (st != QV_OK) return qv_error_prefix(err, st, "message %lld: ", (long long)index);
  if (m->body_length < 0 || m->body_length > r->opts.max_alloc) {
    st = qv_error_set(err, QV_ENOMEM,
                      "message %lld: body of %lld bytes exceeds the limit of %lld bytes",
                      (long long)index, (long long)m->body_length, (long long)r->opts.max_alloc);
    qv_ipc_message_reset(m);
    return st;
  }
  st = qv_buffer_alloc(m->body_length, body, err);
  if (st == QV_OK) st = read_exact(r->fd, (*body)->data, m->body_length, &got, err);
  if (st == QV_OK && got < m->body_length)
    st = qv_error_set(err, QV_EINVAL, "message %lld: body truncated (%lld of %lld bytes)",
                      (long long)index, (long long)got, (long long)m->body_length);
  if (st != QV_OK) {
    qv_buffer_unref(*body);
    *body = NULL;
    qv_ipc_message_reset(m);
    return st;
  }
  r->stream_messages++;
  return QV_OK;
}

qv_status qv_reader_open_fd(int fd, const qv_read_options *options, qv_reader **out,
                            qv_error *err) {
  qv_reader *r = reader_alloc(options);
  if (r == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (reader)");
  r->fd = fd;
  r->format = QV_FORMAT_STREAM;
  qv_ipc_message m;
  qv_buffer *body = NULL;
  bool eos;
  qv_status st = fd_next_message(r, &m, &body, &eos, err);
  if (st == QV_OK && eos) st = qv_error_set(err, QV_EINVAL, "stream has no schema message");
  if (st == QV_OK && !eos && m.type != QV_MSG_SCHEMA) {
    st = qv_error_set(err, QV_EINVAL, "message 0: expected a schema message, found type %d",
                      (int)m.type);
    qv_ipc_message_reset(&m);
  }
  if (st == QV_OK) {
    qv_schema *s = m.schema;
    m.schema = NULL;
    st = set_schema(r, s, m.version, m.big_endian, err);
    qv_ipc_message_reset(&m);
  }
  qv_buffer_unref(body);
  if (st != QV_OK) {
    qv_reader_close(r);
    return st;
  }
  *out = r;
  return QV_OK;
}

static qv_status fd_next(qv_reader *r, const batch_sel *sel, qv_array **out, qv_error *err) {
  *out = NULL;
  while (!r->stream_done) {
    qv_ipc_message m;
    qv_buffer *body = NULL;
    bool eos;
    QV_RETURN_NOT_OK(fd_next_message(r, &m, &body, &eos, err));
    if (eos) {
      r->stream_done = true;
      return QV_OK;
    }
    int64_t index = r->stream_messages - 1;
    qv_status st = QV_OK;
    if (m.batch.compression != QV_COMPRESSION_NONE) r->compression = m.batch.compression;
    if (m.type == QV_MSG_RECORD_BATCH) {
      st = load_message_sel(r, r->schema->type, &m, body, index, sel, out, err);
      if (st != QV_OK) qv_error_prefix(err, st, "record batch %lld: ", (long long)r->next_batch);
      r->next_batch++;
    } else if (m.type == QV_MSG_DICTIONARY_BATCH) {
      dict_state *ds = find_dstate(r, m.dict_id);
      if (ds == NULL) {
        st = qv_error_set(err, QV_EINVAL,
                          "message %lld: dictionary batch for id %lld, which no field uses",
                          (long long)index, (long long)m.dict_id);
      } else {
        qv_type *wrap = qv_type_new(QV_STRUCT);
        qv_array *batch = NULL;
        if (wrap == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
        if (st == QV_OK)
          st = qv_type_add_child(wrap, "dictionary", true, qv_type_ref((qv_type *)ds->value_type),
                                 NULL, err);
        if (st == QV_OK) st = load_message(r, wrap, &m, body, index, &batch, err);
        if (st == QV_OK) st = dict_apply(r, ds, qv_array_ref(batch->children[0]), m.is_delta, err);
        qv_array_unref(batch);
        qv_type_unref(wrap);
      }
    } else {
      st = qv_error_set(err, QV_EINVAL, "message %lld: unexpected message type %d",
                        (long long)index, (int)m.type);
    }
    qv_ipc_message_reset(&m);
    qv_buffer_unref(body);
    QV_RETURN_NOT_OK(st);
    if (*out != NULL) return QV_OK;
  }
  return QV_OK;
}

/* At the end of a sequential read every dictionary message has been
 * decoded once, as a sequential stream reader would (even those no batch
 * needed, e.g. in a stream without record batches), so that reading a
 * file to the end checks all of it. */
static qv_status dicts_decode_all(qv_reader *r, qv_error *err) {
  for (int32_t i = 0; i < r->n_dstate; i++) {
    qv_array_unref(r->dstate[i].values);
    r->dstate[i].values = NULL;
  }
  r->dicts_applied = 0;
  for (int64_t k = 0; k < r->n_dicts; k++) {
    QV_RETURN_NOT_OK(apply_dict_message(r, k, err));
    r->dicts_applied = k + 1;
  }
  return QV_OK;
}

static qv_status dicts_all_body(void *r, qv_error *err) { return dicts_decode_all(r, err); }

static qv_status next_sel(qv_reader *r, const batch_sel *sel, qv_array **out, qv_error *err) {
  if (r->data == NULL) return fd_next(r, sel, out, err);
  QV_RETURN_NOT_OK(ensure_index(r, r->next_batch, err));
  if (r->next_batch >= r->n_batches) {
    *out = NULL;
    if (!r->stream_done) {
      QV_RETURN_NOT_OK(qv_guard_check_buffer(r->data, err));
      QV_RETURN_NOT_OK(qv_guard_run(dicts_all_body, r, err));
      r->stream_done = true;
    }
    return QV_OK;
  }
  QV_RETURN_NOT_OK(guarded_batch(r, r->next_batch, sel, out, err));
  r->next_batch++;
  return QV_OK;
}

qv_status qv_reader_next(qv_reader *r, qv_array **out, qv_error *err) {
  return next_sel(r, NULL, out, err);
}

qv_status qv_reader_next_select(qv_reader *r, const int32_t *columns, int32_t n_columns,
                                int64_t max_rows, qv_array **out, qv_error *err) {
  *out = NULL;
  bool *mask = NULL;
  QV_RETURN_NOT_OK(select_mask(r, columns, n_columns, &mask, err));
  batch_sel sel = {mask, max_rows};
  qv_array *full = NULL;
  qv_status st = next_sel(r, &sel, &full, err);
  free(mask);
  if (st != QV_OK) return st;
  return select_finish(r, columns, n_columns, full, out, err);
}
