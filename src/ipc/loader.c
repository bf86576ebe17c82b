/*
 * loader.c — turns a decoded RecordBatch (field nodes + buffer specs) and
 * its message body into qv_arrays (qv_ipc_load_batch). Part of the ipc
 * layer: sits on core (buffers, arrays, validation) and codec.c.
 *
 * The schema is walked depth-first in pre-order, consuming one field node
 * per array and the buffers each type has in IPC (Columnar.rst, "Buffer
 * Listing for Each Layout" and "Variadic buffers"). IPC differs from
 * quiver's in-memory layout (the C Data Interface order, array.h) only in
 * a few places, all handled here:
 *   - the null type has no buffers;
 *   - unions have no validity buffer, except that metadata V4 and older
 *     wrote an (empty) validity slot first, which is skipped;
 *   - run-end encoded arrays have no buffers, only two children;
 *   - view types have validity, views and then as many data buffers as
 *     the next entry of variadicBufferCounts says.
 * Every buffer is a zero-copy view of the body after its range is checked.
 * Only compressed buffers (decompressed, bounded by max_alloc), big-endian
 * buffers of multi-byte values (byte-swapped) and misaligned buffers are
 * copied into owned memory. The result is always validated at least at
 * QV_VALIDATE_MINIMAL (buffer sizes), so nothing downstream can read past
 * a buffer even when the caller asked for no validation.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/validate_internal.h"
#include "ipc/ipc_internal.h"
#include "ipc/json_internal.h" /* load_off */

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the IPC loader assumes a little-endian host"
#endif

/* Longest field path kept for error messages ("a.b.item"). */
#define QV_LOADER_PATH_MAX 512
/* Nesting bound (the schema decoder bounds it too; this is a backstop). */
#define QV_LOADER_MAX_DEPTH 128
/* IPC buffers start on 8-byte boundaries; anything less is copied. */
#define QV_LOADER_ALIGN 8

/* Element layout of a buffer: decides the byte swap of big-endian data
 * and whether the buffer needs aligned loads. */
typedef enum elem_kind {
  ELEM_BYTES = 0,      /* bytes, bits, int8: no swap, no alignment */
  ELEM_2,              /* 16-bit values */
  ELEM_4,              /* 32-bit values (also interval day_time: two int32) */
  ELEM_8,              /* 64-bit values */
  ELEM_128,            /* decimal128: one 128-bit integer */
  ELEM_256,            /* decimal256: one 256-bit integer */
  ELEM_MONTH_DAY_NANO, /* int32 months, int32 days, int64 nanoseconds */
  ELEM_VIEW            /* binary view: int32 length, then inline bytes or
                      4-byte prefix, int32 buffer index, int32 offset */
} elem_kind;

typedef struct loader {
  const qv_ipc_batch_desc *desc;
  const qv_ipc_load_ctx *ctx;
  qv_error *err;
  int64_t node_i, buf_i, var_i;
  const uint8_t *body_data;
  int64_t body_size;
  int64_t max_alloc;
  bool skip;          /* walking a column that is not loaded: buffers are
                         range-checked, nothing is materialised */
  int64_t rows_limit; /* >= 0: a top-level column of a compressed batch
                         whose layout allows it loads only its first
                         rows_limit rows (prefix decoding) */
  bool prefixed;      /* the column just loaded honoured rows_limit */
  int64_t top_length; /* node length of the top-level column just walked */
  int64_t cur_length; /* node length of the array being loaded (messages) */
  const qv_type *cur_type;
  char path[QV_LOADER_PATH_MAX];
  size_t path_len;
} loader;

QV_PRINTF(3, 4)
static qv_status lfail(loader *L, qv_status st, const char *fmt, ...) {
  char msg[QV_ERROR_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (L->path_len > 0)
    return qv_error_set(L->err, st, "message %lld: field '%s': %s",
                        (long long)L->ctx->message_index, L->path, msg);
  return qv_error_set(L->err, st, "message %lld: %s", (long long)L->ctx->message_index, msg);
}

static size_t path_push(loader *L, const char *name) {
  size_t saved = L->path_len;
  int n = snprintf(L->path + saved, sizeof L->path - saved, "%s%s", saved > 0 ? "." : "", name);
  if (n > 0) {
    L->path_len = saved + (size_t)n;
    if (L->path_len >= sizeof L->path) L->path_len = sizeof L->path - 1;
  }
  return saved;
}

static void path_pop(loader *L, size_t saved) {
  L->path_len = saved;
  L->path[saved] = '\0';
}

/* ------------------------------------------------------------------------ */
/* Element kinds and byte swapping                                           */

static elem_kind value_kind(qv_type_id id) {
  switch (id) {
    case QV_INT16:
    case QV_UINT16:
    case QV_HALF_FLOAT: return ELEM_2;
    case QV_INT32:
    case QV_UINT32:
    case QV_FLOAT:
    case QV_DATE32:
    case QV_TIME32:
    case QV_INTERVAL_MONTHS:
    case QV_INTERVAL_DAY_TIME:
    case QV_DECIMAL32: return ELEM_4;
    case QV_INT64:
    case QV_UINT64:
    case QV_DOUBLE:
    case QV_DATE64:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DURATION:
    case QV_DECIMAL64: return ELEM_8;
    case QV_DECIMAL128: return ELEM_128;
    case QV_DECIMAL256: return ELEM_256;
    case QV_INTERVAL_MONTH_DAY_NANO: return ELEM_MONTH_DAY_NANO;
    default: return ELEM_BYTES;
  }
}

static int64_t elem_size(elem_kind k) {
  static const int64_t sizes[] = {1, 2, 4, 8, 16, 32, 16, 16};
  return sizes[k];
}

static uint32_t ld32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static uint64_t ld64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void st64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Convert whole big-endian elements of src into little-endian dst (which
 * may equal src). Trailing bytes that do not form an element are copied. */
static void swap_elements(uint8_t *dst, const uint8_t *src, int64_t size, elem_kind k) {
  int64_t w = elem_size(k), n = size / w;
  switch (k) {
    case ELEM_BYTES: break;
    case ELEM_2:
      for (int64_t i = 0; i < n; i++) {
        uint16_t v;
        memcpy(&v, src + 2 * i, 2);
        v = __builtin_bswap16(v);
        memcpy(dst + 2 * i, &v, 2);
      }
      break;
    case ELEM_4:
      for (int64_t i = 0; i < n; i++) st32(dst + 4 * i, __builtin_bswap32(ld32(src + 4 * i)));
      break;
    case ELEM_8:
      for (int64_t i = 0; i < n; i++) st64(dst + 8 * i, __builtin_bswap64(ld64(src + 8 * i)));
      break;
    case ELEM_128:
      /* Big-endian 128-bit integer: reversing all 16 bytes gives the
       * little-endian one (low 64-bit word first). */
      for (int64_t i = 0; i < n; i++) {
        const uint8_t *s = src + 16 * i;
        uint64_t hi = ld64(s), lo = ld64(s + 8);
        st64(dst + 16 * i, __builtin_bswap64(lo));
        st64(dst + 16 * i + 8, __builtin_bswap64(hi));
      }
      break;
    case ELEM_256:
      for (int64_t i = 0; i < n; i++) {
        const uint8_t *s = src + 32 * i;
        uint64_t w0 = ld64(s), w1 = ld64(s + 8), w2 = ld64(s + 16), w3 = ld64(s + 24);
        uint8_t *d = dst + 32 * i;
        st64(d, __builtin_bswap64(w3));
        st64(d + 8, __builtin_bswap64(w2));
        st64(d + 16, __builtin_bswap64(w1));
        st64(d + 24, __builtin_bswap64(w0));
      }
      break;
    case ELEM_MONTH_DAY_NANO:
      for (int64_t i = 0; i < n; i++) {
        const uint8_t *s = src + 16 * i;
        uint8_t *d = dst + 16 * i;
        uint32_t months = ld32(s), days = ld32(s + 4);
        uint64_t nanos = ld64(s + 8);
        st32(d, __builtin_bswap32(months));
        st32(d + 4, __builtin_bswap32(days));
        st64(d + 8, __builtin_bswap64(nanos));
      }
      break;
    case ELEM_VIEW:
      for (int64_t i = 0; i < n; i++) {
        const uint8_t *s = src + 16 * i;
        uint8_t *d = dst + 16 * i;
        uint32_t len = __builtin_bswap32(ld32(s));
        if (d != s) memcpy(d + 4, s + 4, 12);
        st32(d, len);
        if ((int32_t)len > 12) { /* prefix stays; index and offset swap */
          st32(d + 8, __builtin_bswap32(ld32(s + 8)));
          st32(d + 12, __builtin_bswap32(ld32(s + 12)));
        }
      }
      break;
  }
  if (dst != src && n * w < size) memcpy(dst + n * w, src + n * w, (size_t)(size - n * w));
}

/* ------------------------------------------------------------------------ */
/* Nodes and buffers                                                         */

static qv_status take_node(loader *L, qv_ipc_node *out) {
  if (L->node_i >= L->desc->n_nodes)
    return lfail(L, QV_EINVAL, "record batch has %lld field nodes but the schema needs more",
                 (long long)L->desc->n_nodes);
  *out = L->desc->nodes[L->node_i++];
  if (out->length < 0) return lfail(L, QV_EINVAL, "negative length %lld", (long long)out->length);
  if (out->null_count < 0 || out->null_count > out->length)
    return lfail(L, QV_EINVAL, "null_count %lld outside [0, length %lld]",
                 (long long)out->null_count, (long long)out->length);
  return QV_OK;
}

/* n * bits / 8 rounded up, or -1 when it overflows (no bound then but
 * max_alloc). */
static int64_t bytes_for(int64_t n, int64_t bits) {
  int64_t b;
  if (n < 0 || bits <= 0 || __builtin_mul_overflow(n, bits, &b) || b > INT64_MAX - 7) return -1;
  return (b + 7) / 8;
}

/* What a decompressed buffer may declare for a real need of `need` bytes:
 * the need padded to 64 bytes, as Arrow writers pad (PaddedLength). */
static int64_t allowed_for(int64_t need) {
  if (need < 0 || need > INT64_MAX - 63) return -1;
  return (need + 63) & ~(int64_t)63;
}

/* A decompressed buffer's memory, counted against the reader's budget
 * until its last reference goes. */
typedef struct budget_hold {
  qv_ipc_budget *budget;
  qv_buffer *heap;
} budget_hold;

static void budget_release(void *ctx, void *data, int64_t size) {
  (void)data;
  budget_hold *h = ctx;
  __atomic_sub_fetch(&h->budget->held, size, __ATOMIC_RELAXED);
  qv_buffer_unref(h->heap);
  qv_ipc_budget_unref(h->budget);
  free(h);
}

/* Decompress `n` bytes of `src` (declaring `declared`) into a new buffer,
 * within the budget when there is one. */
static qv_status decompress_counted(loader *L, qv_buffer *src, int64_t n, int slot,
                                    const char *name, qv_buffer **out) {
  qv_ipc_budget *bg = L->ctx->budget;
  *out = NULL;
  if (bg != NULL) {
    int64_t held = __atomic_add_fetch(&bg->held, n, __ATOMIC_RELAXED);
    if (bg->limit > 0 && held > bg->limit) {
      __atomic_sub_fetch(&bg->held, n, __ATOMIC_RELAXED);
      return lfail(L, QV_ENOMEM,
                   "buffer %d (%s): decompressing %lld bytes would hold %lld decompressed "
                   "bytes, over the reader's budget of %lld (%lld held by arrays still in "
                   "use); read fewer columns or rows at once, or raise the budget "
                   "(qv_reader_set_decompress_budget, QUIVER_DECOMPRESS_BUDGET)",
                   slot, name, (long long)n, (long long)(held), (long long)bg->limit,
                   (long long)(held - n));
    }
  }
  qv_buffer *heap = NULL, *b = NULL;
  budget_hold *h = NULL;
  qv_status st = qv_buffer_alloc(n, &heap, L->err);
  if (st == QV_OK) st = qv_ipc_decompress_into(L->desc->compression, src, heap->data, n, L->err);
  if (st == QV_OK && bg != NULL) {
    h = malloc(sizeof *h);
    if (h == NULL) st = lfail(L, QV_ENOMEM, "out of memory (decompressed buffer)");
  }
  if (st == QV_OK && bg != NULL) {
    h->budget = bg;
    h->heap = heap;
    st = qv_buffer_wrap(heap->data, n, budget_release, h, &b, L->err);
    if (st == QV_OK) {
      __atomic_add_fetch(&bg->refcount, 1, __ATOMIC_RELAXED);
      __atomic_add_fetch(&bg->total, n, __ATOMIC_RELAXED);
      *out = b;
      return QV_OK;
    }
    free(h);
  }
  if (st == QV_OK) { /* no budget: the heap buffer itself */
    *out = heap;
    return QV_OK;
  }
  qv_buffer_unref(heap);
  if (bg != NULL) __atomic_sub_fetch(&bg->held, n, __ATOMIC_RELAXED);
  if (L->path_len > 0)
    return qv_error_prefix(L->err, st, "message %lld: field '%s': buffer %d (%s): ",
                           (long long)L->ctx->message_index, L->path, slot, name);
  return qv_error_prefix(
      L->err, st, "message %lld: buffer %d (%s): ", (long long)L->ctx->message_index, slot, name);
}

/* Consume the next buffer spec and, when `want`, materialise it: a view
 * of the body, decompressed, byte-swapped or realigned as needed. `slot`
 * and `name` describe the buffer within its array for error text. An
 * unwanted buffer is range-checked and skipped (*out = NULL).
 * `need` is the buffer's real size for its array (from the node length
 * and the type; -1 when unknown): a compressed buffer declaring more than
 * that (padded to 64 bytes) is refused before anything is allocated.
 * `prefix` >= 0 asks for only the first `prefix` bytes of a compressed
 * buffer (rows_limit); uncompressed buffers are always whole views. */
static qv_status take_buffer(loader *L, int slot, const char *name, elem_kind kind, bool want,
                             int64_t need, int64_t prefix, qv_buffer **out) {
  *out = NULL;
  if (L->buf_i >= L->desc->n_buffers)
    return lfail(L, QV_EINVAL,
                 "buffer %d (%s) is missing: the record batch has only %lld "
                 "buffers",
                 slot, name, (long long)L->desc->n_buffers);
  qv_ipc_buffer_spec spec = L->desc->buffers[L->buf_i++];
  int64_t end;
  if (spec.offset < 0 || spec.length < 0)
    return lfail(L, QV_EINVAL,
                 "buffer %d (%s) has negative offset %lld or "
                 "length %lld",
                 slot, name, (long long)spec.offset, (long long)spec.length);
  if (qv_add_overflow(spec.offset, spec.length, &end))
    return lfail(L, QV_EINVAL, "buffer %d (%s): offset %lld + length %lld overflows", slot, name,
                 (long long)spec.offset, (long long)spec.length);
  if (end > L->body_size)
    return lfail(L, QV_EINVAL,
                 "buffer %d (%s) requires body range [%lld, %lld) but body "
                 "has %lld bytes",
                 slot, name, (long long)spec.offset, (long long)end, (long long)L->body_size);
  if (!want || L->skip) return QV_OK;

  qv_buffer *b = NULL;
  qv_status st;
  if (L->ctx->body == NULL) /* only empty buffers fit an absent body */
    st = qv_buffer_alloc(0, &b, L->err);
  else st = qv_buffer_view(L->ctx->body, spec.offset, spec.length, &b, L->err);
  if (st != QV_OK) return st;
  if (spec.length == 0) {
    *out = b;
    return QV_OK;
  }
  if (L->desc->compression != QV_COMPRESSION_NONE) {
    int64_t declared = 0;
    st = qv_ipc_compressed_length(L->desc->compression, b, &declared, L->err);
    if (st != QV_OK) {
      qv_buffer_unref(b);
      if (L->path_len > 0)
        return qv_error_prefix(L->err, st, "message %lld: field '%s': buffer %d (%s): ",
                               (long long)L->ctx->message_index, L->path, slot, name);
      return qv_error_prefix(L->err, st,
                             "message %lld: buffer %d (%s): ", (long long)L->ctx->message_index,
                             slot, name);
    }
    qv_buffer *d = NULL;
    int64_t allowed = allowed_for(need);
    if (declared < 0) { /* stored uncompressed: the bytes after the prefix */
      st = qv_buffer_view(b, 8, b->size - 8, &d, L->err);
    } else if (declared > L->max_alloc) {
      st = lfail(L, QV_ENOMEM,
                 "buffer %d (%s): %s: uncompressed length %lld exceeds the limit of %lld bytes "
                 "(max_alloc)",
                 slot, name, L->desc->compression == QV_COMPRESSION_ZSTD ? "ZSTD" : "LZ4_FRAME",
                 (long long)declared, (long long)L->max_alloc);
    } else if (allowed >= 0 && declared > allowed && L->cur_length == 0) {
      /* Arrow C++ writes the whole buffers of some empty arrays (an empty
       * slice keeps its parent's offsets): accepted, and only the bytes an
       * empty array needs are decoded. */
      st = decompress_counted(L, b, allowed, slot, name, &d);
    } else if (allowed >= 0 && declared > allowed) {
      char ts[128];
      qv_type_to_string(L->cur_type, ts, sizeof ts);
      st = lfail(L, QV_EINVAL,
                 "buffer %d (%s) declares %lld uncompressed bytes but %lld rows of %s need "
                 "%lld",
                 slot, name, (long long)declared, (long long)L->cur_length, ts, (long long)need);
    } else {
      int64_t n = prefix >= 0 && prefix < declared ? prefix : declared;
      st = decompress_counted(L, b, n, slot, name, &d);
    }
    qv_buffer_unref(b);
    if (st != QV_OK) return st;
    b = d;
  }
  if (kind != ELEM_BYTES) {
    bool owned = b->data < L->body_data || b->data >= L->body_data + L->body_size;
    bool swap = L->ctx->big_endian;
    bool misaligned = ((uintptr_t)b->data & (QV_LOADER_ALIGN - 1)) != 0;
    if (swap && owned) {
      swap_elements(b->data, b->data, b->size, kind);
    } else if (swap || misaligned) {
      qv_buffer *c = NULL;
      st = qv_buffer_alloc(b->size, &c, L->err);
      if (st != QV_OK) {
        qv_buffer_unref(b);
        return st;
      }
      if (swap) swap_elements(c->data, b->data, b->size, kind);
      else memcpy(c->data, b->data, (size_t)b->size);
      qv_buffer_unref(b);
      b = c;
    }
  }
  *out = b;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                    */

static qv_status load_array(loader *L, const qv_field *field, int depth, qv_array **out);

static qv_status load_children(loader *L, qv_array *a, int depth) {
  const qv_type *t = a->type;
  for (int32_t c = 0; c < t->n_children; c++) {
    size_t saved = path_push(L, t->children[c].name);
    qv_status st = load_array(L, &t->children[c], depth + 1, &a->children[c]);
    path_pop(L, saved);
    if (st != QV_OK) return st;
  }
  return QV_OK;
}

static qv_array *new_array(loader *L, qv_type *t, int64_t n_buffers, qv_status *st) {
  qv_array *a = qv_array_new(t, (int32_t)n_buffers, t->n_children);
  *st = a ? QV_OK : lfail(L, QV_ENOMEM, "out of memory (array)");
  return a;
}

/* Offset value i of a little-endian offsets buffer of width w (4 or 8),
 * or -1 when the buffer is too short. */
static int64_t offset_at(const qv_buffer *b, int w, int64_t i) {
  if (b == NULL || i < 0 || (i + 1) > b->size / w) return -1;
  return load_off(b, w, i);
}

static qv_status load_array(loader *L, const qv_field *field, int depth, qv_array **out) {
  *out = NULL;
  qv_type *t = field->type;
  if (depth > QV_LOADER_MAX_DEPTH)
    return lfail(L, QV_EINVAL, "nesting deeper than %d levels", QV_LOADER_MAX_DEPTH);
  qv_ipc_node node = {0, 0};
  QV_RETURN_NOT_OK(take_node(L, &node));
  if (depth == 0) L->top_length = node.length;
  qv_status st = QV_OK;
  qv_array *a = NULL;
  int64_t len = node.length;
  L->cur_length = len;
  L->cur_type = t;
  /* Rows to materialise: a top-level column of a compressed batch whose
   * layout is a prefix of rows (fixed width, bool, binary/string,
   * dictionary indices, null) loads only its first rows_limit rows;
   * anything else loads whole (and the caller slices it). */
  bool prefixable = false;
  switch (t->id) {
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_DICTIONARY:
    case QV_NA: prefixable = true; break;
    default: prefixable = qv_type_bit_width(t) > 0; break;
  }
  int64_t rows = len;
  if (depth == 0 && L->rows_limit >= 0 && L->rows_limit < len && prefixable &&
      (L->desc->compression != QV_COMPRESSION_NONE || t->id == QV_NA)) {
    rows = L->rows_limit;
    L->prefixed = true;
  }
  bool partial = rows < len;
  /* Byte sizes of the whole buffers (need, checked against what a
   * compressed buffer declares) and of the rows materialised (prefix). */
  int64_t bits_need = bytes_for(len, 1), bits_prefix = partial ? bytes_for(rows, 1) : -1;

  switch (t->id) {
    case QV_NA: /* no buffers in IPC */
      a = new_array(L, t, 0, &st);
      if (a) a->null_count = rows;
      break;
    case QV_RUN_END_ENCODED: /* no buffers; run_ends and values children */
      a = new_array(L, t, 0, &st);
      if (a) a->null_count = 0;
      break;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      bool dense = t->id == QV_DENSE_UNION;
      if (L->ctx->metadata_version < QV_METADATA_V5) {
        /* Pre-1.0 writers emitted a validity slot for unions. */
        int64_t at = L->buf_i;
        st = take_buffer(L, 0, "validity", ELEM_BYTES, false, -1, -1, &(qv_buffer *){NULL});
        if (st != QV_OK) break;
        if (node.null_count > 0 && L->desc->buffers[at].length > 0) {
          st = lfail(L, QV_ENOTSUP,
                     "cannot read a pre-1.0 union with a top-level validity "
                     "bitmap");
          break;
        }
      }
      a = new_array(L, t, dense ? 2 : 1, &st);
      if (!a) break;
      a->null_count = 0;
      st = take_buffer(L, 0, "type_ids", ELEM_BYTES, true, len, -1, &a->buffers[0]);
      if (st == QV_OK && dense)
        st = take_buffer(L, 1, "offsets", ELEM_4, true, bytes_for(len, 32), -1, &a->buffers[1]);
      break;
    }
    default: {
      /* Every other type starts with a validity slot. */
      int64_t n_buffers;
      int64_t n_variadic = 0;
      switch (t->id) {
        case QV_BINARY:
        case QV_STRING:
        case QV_LARGE_BINARY:
        case QV_LARGE_STRING:
        case QV_LIST_VIEW:
        case QV_LARGE_LIST_VIEW: n_buffers = 3; break;
        case QV_FIXED_SIZE_LIST:
        case QV_STRUCT: n_buffers = 1; break;
        case QV_BINARY_VIEW:
        case QV_STRING_VIEW:
          if (L->var_i >= L->desc->n_variadic || L->desc->variadic_counts == NULL)
            return lfail(L, QV_EINVAL,
                         "record batch has %lld variadic buffer counts but "
                         "the schema needs more",
                         (long long)L->desc->n_variadic);
          n_variadic = L->desc->variadic_counts[L->var_i++];
          if (n_variadic < 0 || n_variadic > L->desc->n_buffers - L->buf_i - 2 ||
              n_variadic > INT32_MAX - 2)
            return lfail(L, QV_EINVAL,
                         "variadic buffer count %lld is negative or exceeds "
                         "the %lld buffers left",
                         (long long)n_variadic, (long long)(L->desc->n_buffers - L->buf_i));
          n_buffers = 2 + n_variadic;
          break;
        default: n_buffers = 2; break;
      }
      a = new_array(L, t, n_buffers, &st);
      if (!a) break;
      a->null_count = node.null_count == 0 || !partial ? node.null_count : -1;
      st = take_buffer(L, 0, "validity", ELEM_BYTES, node.null_count > 0, bits_need, bits_prefix,
                       &a->buffers[0]);
      if (st != QV_OK) break;
      if (a->buffers[0] && a->buffers[0]->size == 0) {
        qv_buffer_unref(a->buffers[0]); /* validate reports the mismatch */
        a->buffers[0] = NULL;
      }
      switch (t->id) {
        case QV_BINARY:
        case QV_STRING:
        case QV_LARGE_BINARY:
        case QV_LARGE_STRING: {
          int w = t->id == QV_BINARY || t->id == QV_STRING ? 4 : 8;
          int64_t need = len < INT64_MAX / 16 ? (len + 1) * w : -1;
          st = take_buffer(L, 1, "offsets", w == 4 ? ELEM_4 : ELEM_8, true, need,
                           partial ? (rows + 1) * w : -1, &a->buffers[1]);
          if (st != QV_OK) break;
          /* The data's need is the last offset; a prefix of rows needs the
           * bytes up to its own end offset (validation checks both). */
          int64_t last = offset_at(a->buffers[1], w, len);
          int64_t upto = partial ? offset_at(a->buffers[1], w, rows) : -1;
          st = take_buffer(L, 2, "data", ELEM_BYTES, true, last >= 0 ? last : -1,
                           partial ? (upto > 0 ? upto : 0) : -1, &a->buffers[2]);
          break;
        }
        case QV_BINARY_VIEW:
        case QV_STRING_VIEW:
          st = take_buffer(L, 1, "views", ELEM_VIEW, true, bytes_for(len, 128), -1, &a->buffers[1]);
          for (int64_t k = 0; st == QV_OK && k < n_variadic; k++)
            st = take_buffer(L, (int)(2 + k), "data", ELEM_BYTES, true, -1, -1, &a->buffers[2 + k]);
          break;
        case QV_LIST:
        case QV_MAP:
        case QV_LARGE_LIST: {
          int w = t->id == QV_LARGE_LIST ? 8 : 4;
          st = take_buffer(L, 1, "offsets", w == 4 ? ELEM_4 : ELEM_8, true,
                           len < INT64_MAX / 16 ? (len + 1) * w : -1, -1, &a->buffers[1]);
          break;
        }
        case QV_LIST_VIEW:
        case QV_LARGE_LIST_VIEW: {
          int w = t->id == QV_LARGE_LIST_VIEW ? 64 : 32;
          elem_kind k = w == 64 ? ELEM_8 : ELEM_4;
          st = take_buffer(L, 1, "offsets", k, true, bytes_for(len, w), -1, &a->buffers[1]);
          if (st == QV_OK)
            st = take_buffer(L, 2, "sizes", k, true, bytes_for(len, w), -1, &a->buffers[2]);
          break;
        }
        case QV_FIXED_SIZE_LIST:
        case QV_STRUCT: break;
        case QV_DICTIONARY: {
          if (t->index_type == NULL) {
            st = lfail(L, QV_EINVAL, "dictionary field has no index type");
            break;
          }
          int64_t ib = qv_type_bit_width(t->index_type);
          st = take_buffer(L, 1, "indices", value_kind(t->index_type->id), true, bytes_for(len, ib),
                           partial ? bytes_for(rows, ib) : -1, &a->buffers[1]);
          if (st != QV_OK) break;
          qv_array *dict =
              L->ctx->dicts.find ? L->ctx->dicts.find(L->ctx->dicts.ctx, t->dict_id) : NULL;
          if (dict == NULL) {
            st = lfail(L, QV_EINVAL, "no dictionary with id %lld", (long long)t->dict_id);
            break;
          }
          a->dictionary = qv_array_ref(dict);
          break;
        }
        default: {
          int64_t vb = qv_type_bit_width(t);
          st = take_buffer(L, 1, "values", value_kind(t->id), true, bytes_for(len, vb),
                           partial ? bytes_for(rows, vb) : -1, &a->buffers[1]);
          break;
        }
      }
      break;
    }
  }
  if (st == QV_OK && a) {
    a->length = rows;
    st = load_children(L, a, depth);
  }
  if (st != QV_OK) {
    qv_array_unref(a);
    return st;
  }
  *out = a;
  return QV_OK;
}

qv_status qv_ipc_load_batch(const qv_type *schema_type, const qv_ipc_batch_desc *desc,
                            const qv_ipc_load_ctx *ctx, qv_array **out, qv_error *err) {
  *out = NULL;
  if (schema_type == NULL || schema_type->id != QV_STRUCT)
    return qv_error_set(err, QV_EARG, "qv_ipc_load_batch: schema type must be a struct");
  loader L;
  memset(&L, 0, sizeof L);
  L.desc = desc;
  L.ctx = ctx;
  L.err = err;
  L.body_data = ctx->body ? ctx->body->data : NULL;
  L.body_size = ctx->body ? ctx->body->size : 0;
  L.max_alloc = ctx->max_alloc > 0 ? ctx->max_alloc : QV_DEFAULT_MAX_ALLOC;
  L.rows_limit = -1;
  if (desc->length < 0)
    return lfail(&L, QV_EINVAL, "negative record batch length %lld", (long long)desc->length);
  int64_t rows = ctx->limit_rows && ctx->max_rows >= 0 && ctx->max_rows < desc->length
                     ? ctx->max_rows
                     : desc->length;
  qv_array *batch = qv_array_new((qv_type *)schema_type, 1, schema_type->n_children);
  if (batch == NULL) return lfail(&L, QV_ENOMEM, "out of memory (batch)");
  batch->length = rows;
  batch->null_count = 0;
  qv_status st = QV_OK;
  for (int32_t c = 0; c < schema_type->n_children && st == QV_OK; c++) {
    const qv_field *f = &schema_type->children[c];
    size_t saved = path_push(&L, f->name);
    /* A column that is not asked for is walked (its nodes and buffers
     * consumed and range-checked) but nothing of it is materialised. */
    L.skip = ctx->columns != NULL && !ctx->columns[c];
    L.rows_limit = rows < desc->length ? rows : -1;
    L.prefixed = false;
    qv_array *col = NULL;
    st = load_array(&L, f, 0, &col);
    if (st == QV_OK && L.top_length != desc->length)
      st = lfail(&L, QV_EINVAL,
                 "length %lld differs from the record batch "
                 "length %lld",
                 (long long)L.top_length, (long long)desc->length);
    if (st == QV_OK && L.skip) {
      qv_array_unref(col);
      col = NULL;
    } else if (st == QV_OK && col->length > rows) { /* loaded whole: keep the rows asked */
      qv_array *cut = NULL;
      st = qv_array_slice(col, 0, rows, &cut, err);
      qv_array_unref(col);
      col = cut;
    }
    batch->children[c] = col;
    path_pop(&L, saved);
  }
  L.skip = false;
  if (st == QV_OK && L.node_i != desc->n_nodes)
    st = lfail(&L, QV_EINVAL, "record batch has %lld field nodes but the schema uses %lld",
               (long long)desc->n_nodes, (long long)L.node_i);
  if (st == QV_OK && L.buf_i != desc->n_buffers)
    st = lfail(&L, QV_EINVAL, "record batch has %lld buffers but the schema uses %lld",
               (long long)desc->n_buffers, (long long)L.buf_i);
  if (st == QV_OK && L.var_i != desc->n_variadic)
    st = lfail(&L, QV_EINVAL,
               "record batch has %lld variadic buffer counts but the schema "
               "has %lld view fields",
               (long long)desc->n_variadic, (long long)L.var_i);
  qv_validate_level level =
      ctx->validation > QV_VALIDATE_MINIMAL ? ctx->validation : QV_VALIDATE_MINIMAL;
  for (int32_t c = 0; c < schema_type->n_children && st == QV_OK; c++) {
    if (batch->children[c] == NULL) continue;
    char path[QV_LOADER_PATH_MAX];
    snprintf(path, sizeof path, "field '%s'", schema_type->children[c].name);
    st = qv_array_validate_ex(batch->children[c], level, path, QV_VALIDATE_SKIP_DICTIONARY_VALUES,
                              err);
    if (st != QV_OK) qv_error_prefix(err, st, "message %lld: ", (long long)ctx->message_index);
  }
  if (st != QV_OK) {
    qv_array_unref(batch);
    return st;
  }
  *out = batch;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Decompression budget                                                      */

qv_ipc_budget *qv_ipc_budget_new(int64_t limit) {
  qv_ipc_budget *b = calloc(1, sizeof *b);
  if (b == NULL) return NULL;
  b->refcount = 1;
  b->limit = limit;
  return b;
}

void qv_ipc_budget_unref(qv_ipc_budget *b) {
  if (b != NULL && __atomic_sub_fetch(&b->refcount, 1, __ATOMIC_ACQ_REL) == 0) free(b);
}

/* "4G", "512M", "65536" -> bytes; -1 when it does not parse. */
static int64_t parse_size(const char *s) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || end == s || v < 0) return -1;
  int shift = 0;
  switch (*end) {
    case 'k':
    case 'K':
      shift = 10;
      end++;
      break;
    case 'm':
    case 'M':
      shift = 20;
      end++;
      break;
    case 'g':
    case 'G':
      shift = 30;
      end++;
      break;
    case 't':
    case 'T':
      shift = 40;
      end++;
      break;
    default: break;
  }
  if (*end != '\0' || v > (INT64_MAX >> shift)) return -1;
  return (int64_t)v << shift;
}

int64_t qv_ipc_default_budget(void) {
  const char *env = getenv("QUIVER_DECOMPRESS_BUDGET");
  if (env != NULL && *env != '\0') {
    int64_t v = parse_size(env);
    if (v >= 0) return v;
  }
  int64_t budget = QV_DEFAULT_DECOMPRESS_BUDGET;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && (int64_t)pages <= INT64_MAX / page) {
    int64_t quarter = (int64_t)pages * page / 4;
    if (quarter < budget) budget = quarter;
  }
  struct rlimit rl; /* under an address-space limit, half of it */
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    int64_t half = (int64_t)(rl.rlim_cur / 2);
    if (half < budget) budget = half;
  }
  return budget;
}
