/*
 * writer.c — the Arrow IPC writer (stream and file formats). ipc layer:
 * uses metadata_encode.c (flatbuffers), codec.c (compression) and core
 * (buffers, arrays, bitmaps). The inverse of reader.c + loader.c.
 *
 * A record batch is serialised by walking its columns depth-first in
 * pre-order, emitting one FieldNode per array and the buffers each type
 * has in IPC (the same order loader.c consumes): a validity slot for every
 * type except null, unions and run-end encoded; views list their variadic
 * data buffers and a variadic count. Sliced arrays are written as their
 * logical contents: bitmaps at a bit offset are copied to bit 0, values
 * are byte views, offsets are rebased to start at 0 (children / data cut
 * to the referenced range), run ends are re-based. Everything else is
 * written from the caller's memory with writev (no intermediate copy).
 * Files the writer opens itself get their writeback started as they are
 * written (sync_file_range, no wait) and one fsync at close.
 *
 * Framing of every message: [0xFFFFFFFF][int32 n][flatbuffer + padding to
 * the alignment][body]. File format: "ARROW1\0\0", the stream messages,
 * the footer flatbuffer, its int32 size and "ARROW1".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/atomic_internal.h"
#include "core/guard_internal.h"
#include "core/parallel_internal.h"
#include "ipc/ipc_internal.h"
#include "quiver/writer.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the IPC writer assumes a little-endian host"
#endif

#define QV_WRITER_MAX_DEPTH 128
/* Most messages in flight (being compressed) at once. */
#define QV_WRITER_MAX_SLOTS 8

static const uint8_t kZeros[64];
static const uint8_t kUncompressedPrefix[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

/* ------------------------------------------------------------------------ */
/* Body under construction                                                   */

typedef struct seg {
  const uint8_t *p;
  int64_t len;
} seg;

/* One IPC buffer before layout: the bytes to write (uncompressed). */
typedef struct rawbuf {
  const uint8_t *p;
  int64_t len;
} rawbuf;

/* Compression state shared by all messages: the thread pool and one codec
 * context per pool thread. */
typedef struct compressor {
  qv_compression codec;
  int level;
  int threads;   /* from the options: 0 = one per CPU */
  qv_pool *pool; /* created at the first compressed message */
  qv_codec_ctx **ctx;
  int n_ctx;
} compressor;

/* What a body becomes when written. */
typedef enum msg_kind { MSG_RECORD_BATCH, MSG_DICTIONARY } msg_kind;

/* The body of one message: field nodes and raw buffers (emit), then the
 * laid-out segments and buffer specs (layout). With compression a body is
 * also a slot of the pipeline: its buffers are compressed by the pool into
 * its arena while the caller goes on; `batch` keeps the memory the raw
 * buffers point into alive until the message is written. Arrays are kept
 * between messages; body_clear only forgets their contents. */
typedef struct body {
  int64_t align;
  compressor *comp;
  qv_error *err;
  seg *segs;
  int64_t n_segs, cap_segs;
  qv_buffer **keep; /* owned buffers that raw buffers point into */
  int64_t n_keep, cap_keep;
  qv_ipc_node *nodes;
  int64_t n_nodes, cap_nodes;
  rawbuf *raw;
  int64_t n_raw, cap_raw;
  qv_ipc_buffer_spec *bufs;
  int64_t n_bufs, cap_bufs;
  int64_t *variadic;
  int64_t n_variadic, cap_variadic;
  int64_t size;
  /* the message */
  msg_kind kind;
  int64_t length; /* rows (record batch) or values (dictionary) */
  int64_t dict_id;
  bool delta;
  qv_array *batch; /* reference held while in flight */
  /* compression of this body's buffers */
  uint8_t *arena;
  int64_t arena_cap;
  int64_t *off, *bound, *written; /* per raw buffer */
  qv_status *st;
  int64_t cap_jobs;
  qv_pool_group group;
} body;

static bool grow(void **arr, int64_t *cap, int64_t need, size_t elem) {
  if (need <= *cap) return true;
  int64_t nc = *cap ? *cap * 2 : 16;
  while (nc < need) nc *= 2;
  void *p = realloc(*arr, (size_t)nc * elem);
  if (p == NULL) return false;
  *arr = p;
  *cap = nc;
  return true;
}

/* Forget the previous message (drop the buffers it kept alive). The
 * body's compression tasks must have finished. */
static void body_clear(body *b) {
  for (int64_t i = 0; i < b->n_keep; i++) qv_buffer_unref(b->keep[i]);
  b->n_keep = b->n_segs = b->n_nodes = b->n_raw = b->n_bufs = b->n_variadic = 0;
  b->size = 0;
  qv_array_unref(b->batch);
  b->batch = NULL;
}

static void body_free(body *b) {
  body_clear(b);
  free(b->segs);
  free(b->keep);
  free(b->nodes);
  free(b->raw);
  free(b->bufs);
  free(b->variadic);
  free(b->arena);
  free(b->off);
  free(b->bound);
  free(b->written);
  free(b->st);
}

static void compressor_free(compressor *c) {
  qv_pool_free(c->pool);
  for (int i = 0; i < c->n_ctx; i++) qv_codec_ctx_free(c->ctx[i]);
  free(c->ctx);
}

static qv_status oom(body *b, const char *what) {
  return qv_error_set(b->err, QV_ENOMEM, "writer: out of memory (%s)", what);
}

static qv_status push_seg(body *b, const uint8_t *p, int64_t len) {
  if (len == 0) return QV_OK;
  if (!grow((void **)&b->segs, &b->cap_segs, b->n_segs + 1, sizeof(seg))) return oom(b, "segments");
  b->segs[b->n_segs++] = (seg){p, len};
  b->size += len;
  return QV_OK;
}

/* Take over one reference to buf (kept alive until the body is written). */
static qv_status keep(body *b, qv_buffer *buf) {
  if (!grow((void **)&b->keep, &b->cap_keep, b->n_keep + 1, sizeof(qv_buffer *))) {
    qv_buffer_unref(buf);
    return oom(b, "buffers");
  }
  b->keep[b->n_keep++] = buf;
  return QV_OK;
}

static qv_status push_node(body *b, int64_t length, int64_t null_count) {
  if (!grow((void **)&b->nodes, &b->cap_nodes, b->n_nodes + 1, sizeof(qv_ipc_node)))
    return oom(b, "field nodes");
  b->nodes[b->n_nodes++] = (qv_ipc_node){length, null_count};
  return QV_OK;
}

static qv_status pad(body *b) {
  int64_t r = b->size % b->align;
  return r ? push_seg(b, kZeros, b->align - r) : QV_OK;
}

/* Append one IPC buffer of `len` bytes at p (memory kept alive by the
 * caller or by keep()); laid out (and compressed) by layout(). */
static qv_status push_buffer(body *b, const uint8_t *p, int64_t len) {
  if (!grow((void **)&b->raw, &b->cap_raw, b->n_raw + 1, sizeof(rawbuf))) return oom(b, "buffers");
  b->raw[b->n_raw++] = (rawbuf){p, len};
  return QV_OK;
}

static void compress_one(void *ctx, int64_t i, int worker) {
  body *b = ctx;
  compressor *c = b->comp;
  if (b->raw[i].len == 0) return;
  b->st[i] = qv_ipc_compress_into(&c->ctx[worker], c->codec, c->level, b->raw[i].p, b->raw[i].len,
                                  b->arena + b->off[i], b->bound[i], &b->written[i], NULL);
}

/* Queue the compression of every non-empty raw buffer of b on the pool
 * (into b's arena); compress_finish waits for it. */
static qv_status compress_start(body *b) {
  compressor *c = b->comp;
  int64_t n = b->n_raw, total = 0;
  if (n > b->cap_jobs) {
    int64_t cap = b->cap_jobs ? b->cap_jobs : 16;
    while (cap < n) cap *= 2;
    int64_t *off = realloc(b->off, sizeof *off * (size_t)cap);
    if (off) b->off = off;
    int64_t *bound = realloc(b->bound, sizeof *bound * (size_t)cap);
    if (bound) b->bound = bound;
    int64_t *written = realloc(b->written, sizeof *written * (size_t)cap);
    if (written) b->written = written;
    qv_status *st = realloc(b->st, sizeof *st * (size_t)cap);
    if (st) b->st = st;
    if (!off || !bound || !written || !st) return oom(b, "compression jobs");
    b->cap_jobs = cap;
  }
  for (int64_t i = 0; i < n; i++) {
    b->st[i] = QV_OK;
    b->off[i] = total;
    b->bound[i] = 0;
    b->written[i] = 0;
    if (b->raw[i].len == 0) continue;
    b->bound[i] = qv_ipc_compress_bound(c->codec, c->level, b->raw[i].len);
    if (b->bound[i] < 0 || qv_add_overflow(total, b->bound[i], &total))
      return qv_error_set(b->err, QV_ENOMEM, "writer: cannot compress a buffer of %lld bytes",
                          (long long)b->raw[i].len);
  }
  if (total > b->arena_cap) {
    free(b->arena);
    b->arena = malloc((size_t)total);
    b->arena_cap = b->arena ? total : 0;
    if (b->arena == NULL) return oom(b, "compression arena");
  }
  if (c->pool == NULL) {
    int threads = c->threads > 0 ? c->threads : qv_cpu_count();
    QV_RETURN_NOT_OK(qv_pool_new(threads, &c->pool, b->err));
    c->n_ctx = qv_pool_size(c->pool);
    c->ctx = calloc((size_t)c->n_ctx, sizeof *c->ctx);
    if (c->ctx == NULL) return oom(b, "codec contexts");
  }
  if (!qv_pool_submit(c->pool, &b->group, n, compress_one, b))
    for (int64_t i = 0; i < n; i++) compress_one(b, i, 0); /* no room: do it here */
  return QV_OK;
}

/* Wait for b's compression; report the first failure (on this thread). */
static qv_status compress_finish(body *b) {
  compressor *c = b->comp;
  if (c->pool) qv_pool_wait(c->pool, &b->group);
  QV_RETURN_NOT_OK(qv_pool_check(c->pool, b->err)); /* a task read a file that shrank */
  for (int64_t i = 0; i < b->n_raw; i++)
    if (b->st[i] != QV_OK)
      return qv_ipc_compress_into(NULL, c->codec, c->level, b->raw[i].p, b->raw[i].len,
                                  b->arena + b->off[i], b->bound[i], &b->written[i], b->err);
  return QV_OK;
}

/* Lay the raw buffers out as the body: each at an aligned offset,
 * compressed when the body is (stored raw behind the -1 prefix when
 * compression does not pay, as Arrow C++ does). With compression,
 * compress_start must have run. */
static qv_status layout(body *b) {
  if (!grow((void **)&b->bufs, &b->cap_bufs, b->n_raw, sizeof(qv_ipc_buffer_spec)))
    return oom(b, "buffer specs");
  bool compressed = b->comp->codec != QV_COMPRESSION_NONE;
  if (compressed) QV_RETURN_NOT_OK(compress_finish(b));
  for (int64_t i = 0; i < b->n_raw; i++) {
    const rawbuf *r = &b->raw[i];
    int64_t start = b->size;
    if (compressed && r->len > 0) {
      if (b->written[i] < r->len + 8) {
        QV_RETURN_NOT_OK(push_seg(b, b->arena + b->off[i], b->written[i]));
      } else {
        QV_RETURN_NOT_OK(push_seg(b, kUncompressedPrefix, 8));
        QV_RETURN_NOT_OK(push_seg(b, r->p, r->len));
      }
    } else {
      QV_RETURN_NOT_OK(push_seg(b, r->p, r->len));
    }
    b->bufs[i] = (qv_ipc_buffer_spec){start, b->size - start};
    QV_RETURN_NOT_OK(pad(b));
  }
  b->n_bufs = b->n_raw;
  return QV_OK;
}

static qv_status push_owned(body *b, qv_buffer *buf) {
  const uint8_t *p = buf->data;
  int64_t len = buf->size;
  QV_RETURN_NOT_OK(keep(b, buf));
  return push_buffer(b, p, len);
}

/* ------------------------------------------------------------------------ */
/* Arrays -> nodes and buffers                                               */

static int64_t range_nulls(const qv_array *a, int64_t off, int64_t len) {
  if (a->n_buffers == 0 || a->buffers[0] == NULL || len == 0) return 0;
  return len - qv_bitmap_count(a->buffers[0]->data, off, len);
}

/* A bitmap (validity or bool values) for bits [off, off+len). */
static qv_status push_bitmap(body *b, const qv_buffer *bits, int64_t off, int64_t len) {
  int64_t nbytes = (len + 7) / 8;
  if (bits == NULL) return push_buffer(b, NULL, 0);
  if (off % 8 == 0) return push_buffer(b, bits->data + off / 8, nbytes);
  qv_buffer *c = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(nbytes, &c, b->err));
  qv_bitmap_copy(c->data, 0, bits->data, off, len);
  return push_owned(b, c);
}

static qv_status push_validity(body *b, const qv_array *a, int64_t off, int64_t len,
                               int64_t nulls) {
  if (nulls == 0) return push_buffer(b, NULL, 0);
  return push_bitmap(b, a->buffers[0], off, len);
}

static int64_t load_off(const uint8_t *p, int64_t i, int w) { return qv_load_offset(p, w, i); }

/* Offsets [off, off+len] rebased to start at 0; first and last get the
 * referenced range of the child/data. */
static qv_status push_offsets(body *b, const qv_buffer *offs, int w, int64_t off, int64_t len,
                              int64_t *first, int64_t *last) {
  if (offs == NULL || offs->size == 0) { /* empty array without offsets */
    *first = *last = 0;
    if (len != 0) return qv_error_set(b->err, QV_EINVAL, "writer: missing offsets buffer");
    int64_t zero = 0;
    qv_buffer *c = NULL;
    QV_RETURN_NOT_OK(qv_buffer_alloc(w, &c, b->err));
    memcpy(c->data, &zero, (size_t)w);
    return push_owned(b, c);
  }
  *first = load_off(offs->data, off, w);
  *last = load_off(offs->data, off + len, w);
  if (*first == 0) return push_buffer(b, offs->data + off * w, (len + 1) * w);
  qv_buffer *c = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc((len + 1) * w, &c, b->err));
  for (int64_t i = 0; i <= len; i++) {
    int64_t v = load_off(offs->data, off + i, w) - *first;
    if (w == 4) {
      int32_t v32 = (int32_t)v;
      memcpy(c->data + 4 * i, &v32, 4);
    } else {
      memcpy(c->data + 8 * i, &v, 8);
    }
  }
  return push_owned(b, c);
}

static qv_status emit(body *b, const qv_array *a, int64_t off, int64_t len, int depth);

/* Run-end encoded: logical range [off, off+len) of a. */
static qv_status emit_ree(body *b, const qv_array *a, int64_t off, int64_t len, int depth) {
  const qv_array *re = a->children[0], *vals = a->children[1];
  QV_RETURN_NOT_OK(push_node(b, len, 0));
  if (off == 0) {
    QV_RETURN_NOT_OK(emit(b, re, re->offset, re->length, depth + 1));
    return emit(b, vals, vals->offset, vals->length, depth + 1);
  }
  int w = qv_type_bit_width(re->type) / 8;
  const uint8_t *p = re->buffers[1] ? re->buffers[1]->data : NULL;
  int64_t n = re->length, i0 = 0, i1;
  if (len == 0) {
    i0 = 0;
    i1 = -1;
  } else {
    /* first run whose end > off, first run whose end >= off+len */
#define RUN_END(k)                                                                                 \
  (w == 2   ? (int64_t)((const int16_t *)(const void *)p)[re->offset + (k)]                        \
   : w == 4 ? (int64_t)((const int32_t *)(const void *)p)[re->offset + (k)]                        \
            : ((const int64_t *)(const void *)p)[re->offset + (k)])
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (RUN_END(mid) > off) hi = mid;
      else lo = mid + 1;
    }
    i0 = lo;
    lo = i0;
    hi = n;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (RUN_END(mid) >= off + len) hi = mid;
      else lo = mid + 1;
    }
    i1 = lo;
    if (i1 >= n) return qv_error_set(b->err, QV_EINVAL, "writer: run ends do not cover the array");
  }
  int64_t runs = i1 - i0 + 1;
  QV_RETURN_NOT_OK(push_node(b, runs, 0));
  QV_RETURN_NOT_OK(push_buffer(b, NULL, 0)); /* run ends: no validity */
  qv_buffer *c = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(runs * w, &c, b->err));
  for (int64_t k = 0; k < runs; k++) {
    int64_t e = RUN_END(i0 + k);
    if (e > off + len) e = off + len;
    e -= off;
    if (w == 2) {
      int16_t v = (int16_t)e;
      memcpy(c->data + 2 * k, &v, 2);
    } else if (w == 4) {
      int32_t v = (int32_t)e;
      memcpy(c->data + 4 * k, &v, 4);
    } else {
      memcpy(c->data + 8 * k, &e, 8);
    }
  }
#undef RUN_END
  QV_RETURN_NOT_OK(push_owned(b, c));
  return emit(b, vals, vals->offset + i0, runs, depth + 1);
}

/* bytes of `buf` from byte `off` (NULL for a missing buffer). */
static const uint8_t *bytes_at(const qv_buffer *buf, int64_t off) {
  return buf ? buf->data + off : NULL;
}

/* Dense union [off, off+len): each child is cut to the range of its
 * values the slice refers to (offsets per child are increasing, but only
 * min/max matter here), and the offsets are rebased when a range does not
 * start at 0 — so a small slice of a large union does not carry the whole
 * children. */
static qv_status emit_dense_union(body *b, const qv_array *a, int64_t off, int64_t len, int depth) {
  int32_t nc = a->n_children;
  int child_of[256];
  for (int k = 0; k < 256; k++) child_of[k] = -1;
  for (int32_t c = 0; c < nc; c++) child_of[(uint8_t)(int8_t)a->type->type_codes[c]] = c;
  int64_t lo[128], hi[128];
  if (nc > 128) return qv_error_set(b->err, QV_EINVAL, "writer: union with %d children", (int)nc);
  for (int32_t c = 0; c < nc; c++) {
    lo[c] = INT64_MAX;
    hi[c] = -1;
  }
  const int8_t *ids = (const int8_t *)bytes_at(a->buffers[0], off);
  const uint8_t *offs = bytes_at(a->buffers[1], 4 * off);
  bool rebase = false;
  for (int64_t i = 0; i < len; i++) {
    int c = child_of[(uint8_t)ids[i]];
    int32_t o;
    memcpy(&o, offs + 4 * i, 4);
    if (c < 0 || o < 0 || o >= a->children[c]->length)
      return qv_error_set(b->err, QV_EINVAL,
                          "writer: dense union slot %lld: type id %d / offset %d is "
                          "outside the union's children",
                          (long long)(off + i), (int)ids[i], (int)o);
    if (o < lo[c]) lo[c] = o;
    if (o > hi[c]) hi[c] = o;
  }
  for (int32_t c = 0; c < nc; c++) {
    if (hi[c] < 0) lo[c] = hi[c] = -1; /* unused: written empty */
    else if (lo[c] > 0) rebase = true;
  }
  QV_RETURN_NOT_OK(push_node(b, len, 0));
  QV_RETURN_NOT_OK(push_buffer(b, (const uint8_t *)ids, len));
  if (!rebase) {
    QV_RETURN_NOT_OK(push_buffer(b, offs, 4 * len));
  } else {
    qv_buffer *nb = NULL;
    QV_RETURN_NOT_OK(qv_buffer_alloc(4 * len, &nb, b->err));
    for (int64_t i = 0; i < len; i++) {
      int32_t o;
      memcpy(&o, offs + 4 * i, 4);
      o -= (int32_t)lo[child_of[(uint8_t)ids[i]]];
      memcpy(nb->data + 4 * i, &o, 4);
    }
    QV_RETURN_NOT_OK(push_owned(b, nb));
  }
  for (int32_t c = 0; c < nc; c++) {
    const qv_array *ch = a->children[c];
    if (hi[c] < 0) QV_RETURN_NOT_OK(emit(b, ch, ch->offset, 0, depth + 1));
    else QV_RETURN_NOT_OK(emit(b, ch, ch->offset + lo[c], hi[c] - lo[c] + 1, depth + 1));
  }
  return QV_OK;
}

/* List views [off, off+len) (node and validity already pushed): the child
 * is cut to the range [lo, hi) the slice's views cover; offsets are
 * rebased (and empty or out-of-range null views zeroed) when needed. */
static qv_status emit_list_view(body *b, const qv_array *a, int64_t off, int64_t len, int depth) {
  int w = a->type->id == QV_LIST_VIEW ? 4 : 8;
  const qv_array *c = a->children[0];
  const uint8_t *po = bytes_at(a->buffers[1], w * off), *ps = bytes_at(a->buffers[2], w * off);
  int64_t lo = INT64_MAX, hi = 0;
  bool rewrite = false;
  for (int64_t i = 0; i < len; i++) {
    int64_t o = load_off(po, i, w), sz = load_off(ps, i, w), end;
    if (o < 0 || sz < 0 || qv_add_overflow(o, sz, &end) || end > c->length) {
      if (qv_array_is_valid(a, off - a->offset + i))
        return qv_error_set(b->err, QV_EINVAL,
                            "writer: list view slot %lld: offset %lld + size %lld is outside "
                            "the child of %lld values",
                            (long long)(off + i), (long long)o, (long long)sz,
                            (long long)c->length);
      rewrite = true;
      continue;
    }
    if (sz == 0) continue;
    if (o < lo) lo = o;
    if (end > hi) hi = end;
  }
  if (lo == INT64_MAX) lo = hi = 0;
  if (lo > 0) rewrite = true;
  for (int64_t i = 0; i < len && !rewrite; i++)
    if (load_off(po, i, w) > hi) rewrite = true; /* an empty view past the cut */
  if (!rewrite) {
    QV_RETURN_NOT_OK(push_buffer(b, po, w * len));
    QV_RETURN_NOT_OK(push_buffer(b, ps, w * len));
  } else {
    qv_buffer *no = NULL, *ns = NULL;
    QV_RETURN_NOT_OK(qv_buffer_alloc(w * len, &no, b->err));
    qv_status st = qv_buffer_alloc(w * len, &ns, b->err);
    if (st != QV_OK) {
      qv_buffer_unref(no);
      return st;
    }
    for (int64_t i = 0; i < len; i++) {
      int64_t o = load_off(po, i, w), sz = load_off(ps, i, w), end;
      bool keep_it = sz > 0 && o >= lo && !qv_add_overflow(o, sz, &end) && end <= hi;
      int64_t no_v = keep_it ? o - lo : 0, ns_v = keep_it ? sz : 0;
      if (w == 4) {
        int32_t x = (int32_t)no_v, y = (int32_t)ns_v;
        memcpy(no->data + 4 * i, &x, 4);
        memcpy(ns->data + 4 * i, &y, 4);
      } else {
        memcpy(no->data + 8 * i, &no_v, 8);
        memcpy(ns->data + 8 * i, &ns_v, 8);
      }
    }
    st = push_owned(b, no);
    if (st != QV_OK) {
      qv_buffer_unref(ns);
      return st;
    }
    QV_RETURN_NOT_OK(push_owned(b, ns));
  }
  return emit(b, c, c->offset + lo, hi - lo, depth + 1);
}

/* Binary / string views [off, off+len) (node and validity pushed): only
 * the data buffers the slice's out-of-line views refer to are written, each
 * cut to the referenced range [lo, hi); views are rewritten (buffer index
 * and offset) when a buffer is dropped or cut at the front. */
static qv_status emit_views(body *b, const qv_array *a, int64_t off, int64_t len) {
  int64_t nv = a->n_buffers - 2;
  const uint8_t *v = bytes_at(a->buffers[1], QV_VIEW_SIZE * off);
  int64_t *lo = NULL, *hi = NULL, *map = NULL;
  if (nv > 0) {
    lo = malloc(sizeof *lo * (size_t)nv);
    hi = malloc(sizeof *hi * (size_t)nv);
    map = malloc(sizeof *map * (size_t)nv);
    if (!lo || !hi || !map) {
      free(lo);
      free(hi);
      free(map);
      return oom(b, "views");
    }
  }
  for (int64_t k = 0; k < nv; k++) {
    lo[k] = INT64_MAX;
    hi[k] = 0;
  }
  bool rewrite = false;
  qv_status st = QV_OK;
  for (int64_t i = 0; i < len; i++) {
    int32_t n, idx, o;
    memcpy(&n, v + QV_VIEW_SIZE * i, 4);
    if (n <= QV_VIEW_INLINE_MAX) continue;
    memcpy(&idx, v + QV_VIEW_SIZE * i + 8, 4);
    memcpy(&o, v + QV_VIEW_SIZE * i + 12, 4);
    const qv_buffer *d = idx >= 0 && idx < nv ? a->buffers[2 + idx] : NULL;
    if (d == NULL || o < 0 || (int64_t)o + n > d->size) {
      if (qv_array_is_valid(a, off - a->offset + i)) {
        st = qv_error_set(b->err, QV_EINVAL,
                          "writer: view slot %lld: %d bytes at buffer %d offset %d are "
                          "outside the data buffers",
                          (long long)(off + i), (int)n, (int)idx, (int)o);
        goto done;
      }
      rewrite = true; /* a null slot with a dangling view: zeroed */
      continue;
    }
    if (o < lo[idx]) lo[idx] = o;
    if ((int64_t)o + n > hi[idx]) hi[idx] = (int64_t)o + n;
  }
  int64_t used = 0;
  for (int64_t k = 0; k < nv; k++) {
    if (lo[k] == INT64_MAX) {
      map[k] = -1;
      rewrite = true;
    } else {
      map[k] = used++;
      if (lo[k] > 0) rewrite = true;
    }
  }
  if (!rewrite) {
    st = push_buffer(b, v, QV_VIEW_SIZE * len);
  } else {
    qv_buffer *nb = NULL;
    st = qv_buffer_alloc(QV_VIEW_SIZE * len, &nb, b->err);
    if (st != QV_OK) goto done;
    for (int64_t i = 0; i < len; i++) {
      uint8_t *dst = nb->data + QV_VIEW_SIZE * i;
      int32_t n, idx, o;
      memcpy(&n, v + QV_VIEW_SIZE * i, 4);
      if (n <= QV_VIEW_INLINE_MAX) {
        memcpy(dst, v + QV_VIEW_SIZE * i, QV_VIEW_SIZE);
        continue;
      }
      memcpy(&idx, v + QV_VIEW_SIZE * i + 8, 4);
      memcpy(&o, v + QV_VIEW_SIZE * i + 12, 4);
      const qv_buffer *d = idx >= 0 && idx < nv ? a->buffers[2 + idx] : NULL;
      if (d == NULL || o < 0 || (int64_t)o + n > d->size) continue; /* zeroed */
      int32_t ni = (int32_t)map[idx], no = (int32_t)(o - lo[idx]);
      memcpy(dst, v + QV_VIEW_SIZE * i, 8); /* length + prefix */
      memcpy(dst + 8, &ni, 4);
      memcpy(dst + 12, &no, 4);
    }
    st = push_owned(b, nb);
  }
  for (int64_t k = 0; k < nv && st == QV_OK; k++)
    if (map[k] >= 0) st = push_buffer(b, a->buffers[2 + k]->data + lo[k], hi[k] - lo[k]);
  if (st == QV_OK &&
      !grow((void **)&b->variadic, &b->cap_variadic, b->n_variadic + 1, sizeof(int64_t)))
    st = oom(b, "variadic counts");
  if (st == QV_OK) b->variadic[b->n_variadic++] = used;
done:
  free(lo);
  free(hi);
  free(map);
  return st;
}

/* Emit array a's elements [off, off+len) where off already includes
 * a->offset (an index into a's buffers). */
static qv_status emit(body *b, const qv_array *a, int64_t off, int64_t len, int depth) {
  const qv_type *t = a->type;
  if (depth > QV_WRITER_MAX_DEPTH)
    return qv_error_set(b->err, QV_EARG, "writer: nesting deeper than %d", QV_WRITER_MAX_DEPTH);
  switch (t->id) {
    case QV_NA: return push_node(b, len, len);
    case QV_RUN_END_ENCODED: return emit_ree(b, a, off, len, depth);
    case QV_SPARSE_UNION:
      QV_RETURN_NOT_OK(push_node(b, len, 0));
      QV_RETURN_NOT_OK(push_buffer(b, bytes_at(a->buffers[0], off), len));
      for (int32_t c = 0; c < a->n_children; c++)
        QV_RETURN_NOT_OK(emit(b, a->children[c], a->children[c]->offset + off, len, depth + 1));
      return QV_OK;
    case QV_DENSE_UNION: return emit_dense_union(b, a, off, len, depth);
    default: break;
  }
  int64_t nulls = range_nulls(a, off, len);
  QV_RETURN_NOT_OK(push_node(b, len, nulls));
  QV_RETURN_NOT_OK(push_validity(b, a, off, len, nulls));
  int64_t first = 0, last = 0;
  switch (t->id) {
    case QV_BOOL: return push_bitmap(b, a->buffers[1], off, len);
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int w = (t->id == QV_BINARY || t->id == QV_STRING) ? 4 : 8;
      QV_RETURN_NOT_OK(push_offsets(b, a->buffers[1], w, off, len, &first, &last));
      const qv_buffer *d = a->buffers[2];
      return push_buffer(b, d ? d->data + first : NULL, last - first);
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: return emit_views(b, a, off, len);
    case QV_LIST:
    case QV_MAP:
    case QV_LARGE_LIST: {
      int w = t->id == QV_LARGE_LIST ? 8 : 4;
      QV_RETURN_NOT_OK(push_offsets(b, a->buffers[1], w, off, len, &first, &last));
      const qv_array *c = a->children[0];
      return emit(b, c, c->offset + first, last - first, depth + 1);
    }
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: return emit_list_view(b, a, off, len, depth);
    case QV_FIXED_SIZE_LIST: {
      const qv_array *c = a->children[0];
      int64_t n = t->list_size;
      return emit(b, c, c->offset + off * n, len * n, depth + 1);
    }
    case QV_STRUCT:
      for (int32_t k = 0; k < a->n_children; k++)
        QV_RETURN_NOT_OK(emit(b, a->children[k], a->children[k]->offset + off, len, depth + 1));
      return QV_OK;
    case QV_DICTIONARY: {
      int64_t w = qv_type_bit_width(t->index_type) / 8;
      return push_buffer(b, a->buffers[1] ? a->buffers[1]->data + w * off : NULL, w * len);
    }
    default: {
      int64_t w = qv_type_bit_width(t) / 8;
      if (w <= 0)
        return qv_error_set(b->err, QV_ENOTSUP, "writer: cannot write type %s",
                            qv_type_id_name(t->id));
      return push_buffer(b, a->buffers[1] ? a->buffers[1]->data + w * off : NULL, w * len);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Sink                                                                      */

typedef struct dict_entry {
  int64_t id;
  qv_array *values; /* the dictionary as last written (full content) */
} dict_entry;

struct qv_writer {
  qv_write_options opts;
  qv_schema *schema;
  int fd;
  bool own_fd;
  qv_atomic_file *af; /* path writers: the temporary (core/atomic_internal.h) */
  const char *tmp;    /* its name, for messages (owned by af) */
  int64_t pos;
  bool failed;
  /* Bodies: one without compression; with compression a ring of slots,
   * messages in flight at slots[(head + k) % n_slots] for k < n_pending,
   * written in order. */
  body *slots;
  int n_slots, head, n_pending;
  compressor comp;
  dict_entry *dicts;
  int64_t n_dicts, cap_dicts;
  qv_ipc_block *dict_blocks, *batch_blocks;
  int64_t n_dict_blocks, cap_dict_blocks, n_batch_blocks, cap_batch_blocks;
  int64_t rows, batches; /* written so far */
  int64_t flushed;       /* own file: bytes whose writeback was started */
  bool efault;           /* a write failed with EFAULT (see writev_all) */
};

/* Own files: writeback is started every this many bytes written
 * (measured on a 4 MB indices file: the fsync at close took 4.2 ms without,
 * 2-2.7 ms with writeback started every 0.5-1 MB). */
#define QV_WRITER_FLUSH_AHEAD ((int64_t)512 << 10)

/* writev all of iov[0..n), retrying partial writes and EINTR. */
static qv_status writev_all(qv_writer *w, struct iovec *iov, int n, qv_error *err) {
  int i = 0;
  while (i < n) {
    int cnt = n - i > IOV_MAX ? IOV_MAX : n - i;
    ssize_t r = writev(w->fd, iov + i, cnt);
    if (r < 0) {
      if (errno == EINTR) continue;
      /* A write from a mapping whose file shrank fails with EFAULT rather
       * than raising SIGBUS: qv_writer_write_batch then reads the batch's
       * pages under a guard to say which file (quiver/guard.h). */
      if (errno == EFAULT) w->efault = true;
      return qv_error_set(err, QV_EIO, "writer: write to %s failed: %s",
                          w->tmp ? w->tmp : "descriptor", strerror(errno));
    }
    w->pos += r;
    if (w->af != NULL) qv_crash_point("write");
#ifdef SYNC_FILE_RANGE_WRITE
    if (w->own_fd && w->pos - w->flushed >= QV_WRITER_FLUSH_AHEAD) {
      /* Start writeback of what is written so far (no wait), so the disk
       * works while the rest is written and the final fsync waits for
       * less. Only a hint: the fsync in qv_writer_close still decides. */
      (void)sync_file_range(w->fd, w->flushed, w->pos - w->flushed, SYNC_FILE_RANGE_WRITE);
      w->flushed = w->pos;
    }
#endif
    size_t left = (size_t)r;
    while (i < n && left >= iov[i].iov_len) {
      left -= iov[i].iov_len;
      i++;
    }
    if (i < n && left > 0) {
      iov[i].iov_base = (uint8_t *)iov[i].iov_base + left;
      iov[i].iov_len -= left;
    }
  }
  return QV_OK;
}

/* Segments of at least this many bytes get a write() of their own; the
 * small ones between them (framing, metadata, padding, small buffers) are
 * gathered into one writev. Measured: big writev segments made buffered
 * writes of large buffers less steady than one write() per buffer. */
#define QV_WRITER_BIG_SEGMENT (64 * 1024)

static qv_status write_iov(qv_writer *w, struct iovec *iov, int n, qv_error *err) {
  int start = 0;
  for (int k = 0; k < n; k++) {
    if (iov[k].iov_len < QV_WRITER_BIG_SEGMENT) continue;
    if (k > start) QV_RETURN_NOT_OK(writev_all(w, iov + start, k - start, err));
    QV_RETURN_NOT_OK(writev_all(w, iov + k, 1, err));
    start = k + 1;
  }
  return n > start ? writev_all(w, iov + start, n - start, err) : QV_OK;
}

static qv_status write_bytes(qv_writer *w, const void *p, int64_t n, qv_error *err) {
  struct iovec iov = {(void *)p, (size_t)n};
  return n > 0 ? write_iov(w, &iov, 1, err) : QV_OK;
}

/* Frame and write one message (flatbuffer meta + the current body).
 * *block receives where it went. */
static qv_status write_message(qv_writer *w, const body *b, const uint8_t *meta, int64_t meta_size,
                               qv_ipc_block *block, qv_error *err) {
  int64_t align = w->opts.alignment;
  int64_t framed = 8 + meta_size;
  int64_t end = w->pos + framed;
  int64_t padn = (align - end % align) % align;
  if (meta_size + padn > INT32_MAX)
    return qv_error_set(err, QV_EARG, "writer: metadata of %lld bytes is too large",
                        (long long)meta_size);
  uint8_t prefix[8];
  uint32_t cont = QV_IPC_CONTINUATION;
  int32_t n32 = (int32_t)(meta_size + padn);
  memcpy(prefix, &cont, 4);
  memcpy(prefix + 4, &n32, 4);
  block->offset = w->pos;
  block->metadata_length = (int32_t)(framed + padn);
  block->body_length = b ? b->size : 0;
  int64_t niov = 3 + (b ? b->n_segs : 0);
  struct iovec *iov = qv_guard_tmp_alloc(niov, sizeof *iov, false); /* core/guard_internal.h */
  if (iov == NULL) return qv_error_set(err, QV_ENOMEM, "writer: out of memory (iovec)");
  int k = 0;
  iov[k++] = (struct iovec){prefix, 8};
  iov[k++] = (struct iovec){(void *)meta, (size_t)meta_size};
  if (padn) iov[k++] = (struct iovec){(void *)kZeros, (size_t)padn};
  for (int64_t s = 0; b && s < b->n_segs; s++)
    iov[k++] = (struct iovec){(void *)b->segs[s].p, (size_t)b->segs[s].len};
  qv_status st = write_iov(w, iov, k, err);
  qv_guard_tmp_free(iov);
  return st;
}

static qv_status push_block(qv_ipc_block **arr, int64_t *n, int64_t *cap, qv_ipc_block blk,
                            qv_error *err) {
  if (!grow((void **)arr, cap, *n + 1, sizeof(qv_ipc_block)))
    return qv_error_set(err, QV_ENOMEM, "writer: out of memory (blocks)");
  (*arr)[(*n)++] = blk;
  return QV_OK;
}

static qv_ipc_batch_desc body_desc(body *b, int64_t length) {
  qv_ipc_batch_desc d;
  memset(&d, 0, sizeof d);
  d.length = length;
  d.n_nodes = b->n_nodes;
  d.nodes = b->nodes;
  d.n_buffers = b->n_bufs;
  d.buffers = b->bufs;
  d.compression = b->comp->codec;
  d.n_variadic = b->n_variadic;
  d.variadic_counts = b->n_variadic ? b->variadic : NULL;
  return d;
}

/* Write b's message: lay the body out (waiting for its compression),
 * encode the flatbuffer, write, record the block (file format). */
static qv_status finish_message(qv_writer *w, body *b, qv_error *err) {
  b->err = err;
  qv_status st = layout(b);
  uint8_t *meta = NULL;
  int64_t meta_size = 0;
  if (st == QV_OK) {
    qv_ipc_batch_desc d = body_desc(b, b->length);
    st = b->kind == MSG_DICTIONARY
             ? qv_ipc_encode_dictionary_message(b->dict_id, b->delta, &d, b->size, &meta,
                                                &meta_size, err)
             : qv_ipc_encode_record_batch_message(&d, b->size, &meta, &meta_size, err);
  }
  qv_ipc_block blk;
  if (st == QV_OK) st = write_message(w, b, meta, meta_size, &blk, err);
  free(meta);
  if (st == QV_OK && w->opts.format == QV_FORMAT_FILE)
    st = b->kind == MSG_DICTIONARY
             ? push_block(&w->dict_blocks, &w->n_dict_blocks, &w->cap_dict_blocks, blk, err)
             : push_block(&w->batch_blocks, &w->n_batch_blocks, &w->cap_batch_blocks, blk, err);
  if (st == QV_OK && b->kind == MSG_RECORD_BATCH) {
    w->rows += b->length;
    w->batches++;
  }
  body_clear(b);
  return st;
}

/* Wait for (without writing) every message still in flight. */
static void drain_pending(qv_writer *w) {
  for (int k = 0; k < w->n_pending; k++) {
    body *b = &w->slots[(w->head + k) % w->n_slots];
    if (w->comp.pool) qv_pool_wait(w->comp.pool, &b->group);
    body_clear(b);
  }
  w->n_pending = 0;
}

/* Write out the oldest message in flight. */
static qv_status flush_one(qv_writer *w, qv_error *err) {
  body *b = &w->slots[w->head];
  w->head = (w->head + 1) % w->n_slots;
  w->n_pending--;
  qv_status st = finish_message(w, b, err);
  if (st != QV_OK) drain_pending(w);
  return st;
}

static qv_status flush_all(qv_writer *w, qv_error *err) {
  while (w->n_pending > 0) QV_RETURN_NOT_OK(flush_one(w, err));
  return QV_OK;
}

/* A free body for the next message (writing the oldest one out when every
 * slot is in flight). */
static qv_status next_body(qv_writer *w, body **out, qv_error *err) {
  if (w->n_pending == w->n_slots) QV_RETURN_NOT_OK(flush_one(w, err));
  body *b = &w->slots[(w->head + w->n_pending) % w->n_slots];
  body_clear(b);
  b->err = err;
  *out = b;
  return QV_OK;
}

/* b (from next_body) holds an emitted message: without compression write
 * it now; with compression start compressing it and leave it in flight.
 * `keep_alive` is the array b's raw buffers point into. */
static qv_status submit(qv_writer *w, body *b, qv_array *keep_alive, qv_error *err) {
  b->batch = qv_array_ref(keep_alive);
  if (w->comp.codec == QV_COMPRESSION_NONE) return finish_message(w, b, err);
  qv_status st = compress_start(b);
  if (st != QV_OK) {
    body_clear(b);
    return st;
  }
  w->n_pending++;
  return QV_OK;
}

/* Write `values` (elements [start, values->length)) as a dictionary batch. */
static qv_status write_dictionary(qv_writer *w, int64_t id, bool delta, const qv_array *values,
                                  int64_t start, qv_error *err) {
  body *b = NULL;
  QV_RETURN_NOT_OK(next_body(w, &b, err));
  b->kind = MSG_DICTIONARY;
  b->dict_id = id;
  b->delta = delta;
  b->length = values->length - start;
  qv_status st = emit(b, values, values->offset + start, b->length, 0);
  if (st != QV_OK) {
    body_clear(b);
    return st;
  }
  return submit(w, b, (qv_array *)values, err);
}

static dict_entry *find_dict(qv_writer *w, int64_t id) {
  for (int64_t i = 0; i < w->n_dicts; i++)
    if (w->dicts[i].id == id) return &w->dicts[i];
  return NULL;
}

/* Is `old` equal to the first old->length elements of `cur`? */
static bool is_prefix(qv_array *old, qv_array *cur) {
  if (old->length > cur->length) return false;
  qv_array *s = NULL;
  if (qv_array_slice(cur, 0, old->length, &s, NULL) != QV_OK) return false;
  bool eq = qv_array_equals(old, s, NULL);
  qv_array_unref(s);
  return eq;
}

/* Write the dictionaries `a` uses (nested ones first) that are new or
 * changed since they were last written. */
static qv_status sync_dicts(qv_writer *w, const qv_array *a, int depth, qv_error *err) {
  if (depth > QV_WRITER_MAX_DEPTH)
    return qv_error_set(err, QV_EARG, "writer: nesting deeper than %d", QV_WRITER_MAX_DEPTH);
  for (int32_t c = 0; c < a->n_children; c++)
    QV_RETURN_NOT_OK(sync_dicts(w, a->children[c], depth + 1, err));
  if (a->type->id != QV_DICTIONARY) return QV_OK;
  qv_array *dict = a->dictionary;
  int64_t id = a->type->dict_id;
  if (dict == NULL)
    return qv_error_set(err, QV_EARG, "writer: dictionary array (id %lld) has no dictionary",
                        (long long)id);
  QV_RETURN_NOT_OK(sync_dicts(w, dict, depth + 1, err));
  dict_entry *e = find_dict(w, id);
  if (e != NULL) {
    if (e->values == dict) return QV_OK;
    if (e->values->length == dict->length && qv_array_equals(e->values, dict, NULL)) return QV_OK;
    bool prefix = is_prefix(e->values, dict);
    if (w->opts.format == QV_FORMAT_FILE)
      return qv_error_set(err, QV_ENOTSUP,
                          "writer: dictionary id %lld changes between record batches; the "
                          "IPC file format cannot replace %s dictionary (write a stream, or "
                          "unify the dictionaries first)",
                          (long long)id, prefix ? "or extend a" : "a");
    if (prefix) QV_RETURN_NOT_OK(write_dictionary(w, id, true, dict, e->values->length, err));
    else QV_RETURN_NOT_OK(write_dictionary(w, id, false, dict, 0, err));
    qv_array_unref(e->values);
    e->values = qv_array_ref(dict);
    return QV_OK;
  }
  QV_RETURN_NOT_OK(write_dictionary(w, id, false, dict, 0, err));
  if (!grow((void **)&w->dicts, &w->cap_dicts, w->n_dicts + 1, sizeof(dict_entry)))
    return qv_error_set(err, QV_ENOMEM, "writer: out of memory (dictionaries)");
  w->dicts[w->n_dicts++] = (dict_entry){id, qv_array_ref(dict)};
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Open / write / close                                                      */

static qv_status check_options(const qv_write_options *in, qv_write_options *o, qv_error *err) {
  memset(o, 0, sizeof *o);
  if (in) *o = *in;
  if (o->format != QV_FORMAT_FILE && o->format != QV_FORMAT_STREAM)
    return qv_error_set(err, QV_EARG, "writer: unknown format %d", (int)o->format);
  if (o->compression != QV_COMPRESSION_NONE && o->compression != QV_COMPRESSION_LZ4_FRAME &&
      o->compression != QV_COMPRESSION_ZSTD)
    return qv_error_set(err, QV_EARG, "writer: unknown compression %d", (int)o->compression);
  if (o->alignment == 0) o->alignment = 8;
  if (o->alignment != 8 && o->alignment != 64)
    return qv_error_set(err, QV_EARG, "writer: alignment must be 8 or 64, found %d", o->alignment);
  if (o->max_batch_rows == 0) o->max_batch_rows = QV_WRITE_DEFAULT_BATCH_ROWS;
  return QV_OK;
}

static qv_status writer_new(const qv_schema *schema, const qv_write_options *options,
                            qv_writer **out, qv_error *err) {
  *out = NULL;
  if (schema == NULL || schema->type == NULL || schema->type->id != QV_STRUCT)
    return qv_error_set(err, QV_EARG, "writer: schema is missing");
  qv_writer *w = calloc(1, sizeof *w);
  if (w == NULL) return qv_error_set(err, QV_ENOMEM, "writer: out of memory");
  qv_status st = check_options(options, &w->opts, err);
  if (st != QV_OK) {
    free(w);
    return st;
  }
  w->schema = qv_schema_ref((qv_schema *)schema);
  w->fd = -1;
  w->comp.codec = w->opts.compression;
  w->comp.level = w->opts.compression_level;
  w->comp.threads = w->opts.threads;
  /* With compression, as many messages in flight as threads, plus one. */
  int threads = w->opts.threads > 0 ? w->opts.threads : qv_cpu_count();
  w->n_slots = w->opts.compression == QV_COMPRESSION_NONE ? 1
               : threads + 1 > QV_WRITER_MAX_SLOTS        ? QV_WRITER_MAX_SLOTS
                                                          : threads + 1;
  w->slots = calloc((size_t)w->n_slots, sizeof *w->slots);
  if (w->slots == NULL) {
    qv_schema_unref(w->schema);
    free(w);
    return qv_error_set(err, QV_ENOMEM, "writer: out of memory");
  }
  for (int k = 0; k < w->n_slots; k++) {
    w->slots[k].align = w->opts.alignment;
    w->slots[k].comp = &w->comp;
  }
  *out = w;
  return QV_OK;
}

static void writer_free(qv_writer *w) {
  drain_pending(w);
  for (int k = 0; k < w->n_slots; k++) body_free(&w->slots[k]);
  free(w->slots);
  compressor_free(&w->comp);
  for (int64_t i = 0; i < w->n_dicts; i++) qv_array_unref(w->dicts[i].values);
  free(w->dicts);
  free(w->dict_blocks);
  free(w->batch_blocks);
  qv_schema_unref(w->schema);
  free(w);
}

/* Write the magic (files) and the schema message. */
static qv_status write_start(qv_writer *w, qv_error *err) {
  if (w->opts.format == QV_FORMAT_FILE) {
    uint8_t magic[8] = {'A', 'R', 'R', 'O', 'W', '1', 0, 0};
    QV_RETURN_NOT_OK(write_bytes(w, magic, 8, err));
  }
  uint8_t *meta = NULL;
  int64_t meta_size = 0;
  QV_RETURN_NOT_OK(qv_ipc_encode_schema_message(w->schema, &meta, &meta_size, err));
  qv_ipc_block blk;
  qv_status st = write_message(w, NULL, meta, meta_size, &blk, err);
  free(meta);
  return st;
}

static void remove_tmp(qv_writer *w) {
  qv_atomic_file_abort(w->af); /* closes the descriptor too */
  w->af = NULL;
  w->tmp = NULL;
  w->fd = -1;
}

qv_status qv_writer_open_fd(int fd, const qv_schema *schema, const qv_write_options *options,
                            qv_writer **out, qv_error *err) {
  qv_writer *w = NULL;
  QV_RETURN_NOT_OK(writer_new(schema, options, &w, err));
  w->fd = fd;
  qv_status st = write_start(w, err);
  if (st != QV_OK) {
    writer_free(w);
    return st;
  }
  *out = w;
  return QV_OK;
}

qv_status qv_writer_open_path(const char *path, const qv_schema *schema,
                              const qv_write_options *options, qv_writer **out, qv_error *err) {
  *out = NULL;
  if (path == NULL || path[0] == '\0') return qv_error_set(err, QV_EARG, "writer: empty path");
  qv_writer *w = NULL;
  QV_RETURN_NOT_OK(writer_new(schema, options, &w, err));
  qv_status ost = qv_atomic_file_open(path, &w->af, err);
  if (ost != QV_OK) {
    writer_free(w);
    return qv_error_prefix(err, ost, "writer: ");
  }
  w->fd = qv_atomic_file_fd(w->af);
  w->tmp = qv_atomic_file_tmp(w->af);
  w->own_fd = true;
  qv_status st = write_start(w, err);
  if (st != QV_OK) {
    remove_tmp(w);
    writer_free(w);
    return st;
  }
  *out = w;
  return QV_OK;
}

static qv_status write_one(qv_writer *w, qv_array *batch, qv_error *err) {
  QV_RETURN_NOT_OK(sync_dicts(w, batch, 0, err));
  body *b = NULL;
  QV_RETURN_NOT_OK(next_body(w, &b, err));
  b->kind = MSG_RECORD_BATCH;
  b->length = batch->length;
  qv_status st = QV_OK;
  for (int32_t c = 0; c < batch->n_children && st == QV_OK; c++) {
    const qv_array *col = batch->children[c];
    st = emit(b, col, col->offset + batch->offset, batch->length, 0);
    if (st != QV_OK) qv_error_prefix(err, st, "column '%s': ", batch->type->children[c].name);
  }
  if (st != QV_OK) {
    body_clear(b);
    return st;
  }
  return submit(w, b, batch, err);
}

typedef struct write_call {
  qv_writer *w;
  qv_array *batch;
} write_call;

static qv_status write_body(void *ctx, qv_error *err) {
  write_call *c = ctx;
  qv_writer *w = c->w;
  qv_array *batch = c->batch;
  int64_t step = w->opts.max_batch_rows;
  qv_status st = QV_OK;
  if (step < 0 || batch->length <= step) {
    st = write_one(w, batch, err);
  } else {
    for (int64_t s = 0; s < batch->length && st == QV_OK; s += step) {
      int64_t n = batch->length - s < step ? batch->length - s : step;
      qv_array *piece = NULL;
      st = qv_array_slice(batch, s, n, &piece, err);
      if (st == QV_OK) st = write_one(w, piece, err);
      qv_array_unref(piece);
    }
  }
  return st;
}

qv_status qv_writer_write_batch(qv_writer *w, qv_array *batch, qv_error *err) {
  if (w == NULL || batch == NULL) return qv_error_set(err, QV_EARG, "writer: NULL writer or batch");
  if (w->failed) return qv_error_set(err, QV_EARG, "writer: an earlier write failed");
  if (!qv_type_equals(w->schema->type, batch->type, false)) {
    char want[256], got[256];
    qv_type_to_string(w->schema->type, want, sizeof want);
    qv_type_to_string(batch->type, got, sizeof got);
    w->failed = true;
    return qv_error_set(err, QV_ETYPE, "writer: batch type %s differs from the schema %s", got,
                        want);
  }
  /* The batch may live in a mapped file: its bytes are checked, then read
   * under the mapped-read guard (core/guard_internal.h). */
  write_call c = {w, batch};
  qv_status st = qv_guard_check_array(batch, err);
  if (st == QV_OK) st = qv_guard_run(write_body, &c, err);
  if (st == QV_EIO && w->efault) {
    qv_error pe;
    qv_status pst = qv_guard_check_array_pages(batch, &pe);
    if (pst != QV_OK) {
      if (err != NULL) *err = pe;
      st = pst;
    }
  }
  if (st != QV_OK) w->failed = true;
  return st;
}

int64_t qv_writer_rows_written(const qv_writer *w) { return w ? w->rows : 0; }
int64_t qv_writer_batches_written(const qv_writer *w) { return w ? w->batches : 0; }

static qv_status write_end(qv_writer *w, qv_error *err) {
  QV_RETURN_NOT_OK(flush_all(w, err));
  if (w->opts.format == QV_FORMAT_STREAM) {
    uint8_t eos[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    return write_bytes(w, eos, 8, err);
  }
  qv_ipc_footer f;
  memset(&f, 0, sizeof f);
  f.schema = w->schema;
  f.n_dictionaries = w->n_dict_blocks;
  f.dictionaries = w->dict_blocks;
  f.n_record_batches = w->n_batch_blocks;
  f.record_batches = w->batch_blocks;
  uint8_t *meta = NULL;
  int64_t meta_size = 0;
  QV_RETURN_NOT_OK(qv_ipc_encode_footer(&f, &meta, &meta_size, err));
  if (meta_size > INT32_MAX) {
    free(meta);
    return qv_error_set(err, QV_EARG, "writer: footer too large");
  }
  int32_t n32 = (int32_t)meta_size;
  uint8_t tail[10];
  memcpy(tail, &n32, 4);
  memcpy(tail + 4, QV_IPC_MAGIC, 6);
  qv_status st = write_bytes(w, meta, meta_size, err);
  free(meta);
  if (st == QV_OK) st = write_bytes(w, tail, 10, err);
  return st;
}

qv_status qv_writer_close(qv_writer *w, qv_error *err) {
  if (w == NULL) return QV_OK;
  qv_status st = QV_OK;
  if (w->failed)
    st = qv_error_set(err, QV_EARG, "writer: an earlier write failed; nothing was committed");
  if (st == QV_OK) st = write_end(w, err);
  if (st == QV_OK && w->af != NULL) {
    /* fsync, rename over the target, fsync the directory (frees af) */
    st = qv_atomic_file_commit(w->af, err);
    if (st != QV_OK) qv_error_prefix(err, st, "writer: ");
    w->af = NULL;
    w->tmp = NULL;
    w->fd = -1;
  }
  if (st != QV_OK) remove_tmp(w);
  writer_free(w);
  return st;
}

void qv_writer_abort(qv_writer *w) {
  if (w == NULL) return;
  remove_tmp(w);
  writer_free(w);
}
