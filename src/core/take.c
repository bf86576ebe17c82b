/*
 * take.c — gather kernels: qv_array_take (rows of one array, by index)
 * and qv_array_take_chunked (rows picked across several chunks of one
 * type, without concatenating the chunks first). Core layer; the table
 * layer's fast_gather, shuffle and sort are built on these.
 *
 * One engine serves both: a gather source is a list of chunks plus, for
 * every output row, the chunk it comes from (NULL when there is one chunk)
 * and its logical row inside that chunk (chunk offset not yet applied).
 * Indices are bounds-checked once, at the public entry points; every
 * index list the engine derives for children (list child ranges, struct
 * rows, union child offsets, run-end physical runs) is correct by
 * construction from offsets that are checked against the child's length as
 * they are read. There is no per-row allocation: every level allocates its
 * output buffers and at most a few index arrays, once.
 *
 * Per layout:
 *  - fixed widths: tight loops specialised on 1/2/4/8/16/32 bytes, memcpy
 *    otherwise (fixed_size_binary); bool: bits;
 *  - binary/string (+large): a size pass builds the offsets (32-bit
 *    overflow is QV_ERANGE), then a copy pass moves the bytes;
 *  - views: the 16-byte view structs are gathered and the variadic data
 *    buffers shared (for chunks: those of the chunks actually used, their
 *    buffer indexes shifted);
 *  - list/large_list/map: child row lists computed from the offsets, the
 *    child gathered once with them (linear in the selected child rows);
 *    a child of fixed-width values is copied range by range instead (one
 *    memcpy per selected list);
 *  - list_view: offsets and sizes gathered, the child shared (zero copy);
 *    across several chunks the selected ranges are gathered into a new
 *    child instead (a compact list view);
 *  - fixed_size_list: child rows idx*size + j; struct / sparse union: the
 *    same rows (parent offset applied) gathered from every child;
 *  - dense union: type ids gathered, and each child gathered at the
 *    selected child offsets, which become 0..k-1 per child;
 *  - dictionary: indices gathered, dictionary shared (across chunks with
 *    different dictionary pointers: the distinct dictionaries concatenated
 *    once each, indices shifted, QV_ERANGE if the index type overflows);
 *  - run-end encoded: each logical row mapped to its run by binary search,
 *    consecutive rows of one run merged into one output run, values
 *    gathered per output run;
 *  - null type: a length.
 * A validity bitmap is produced only when a source chunk has nulls.
 *
 * Output rows (qv_take_chunked_to, core/take_internal.h): source row i
 * may go to output row dest[i], so that the table layer can read rows in
 * file order. Fixed widths, bits, strings (sizes scattered, summed in
 * output order, bytes copied to their output offsets), views and struct
 * children write in place, their loops optionally split over a pool's
 * threads; the other layouts put the rows in output order first.
 * Inputs are assumed structurally valid (qv_array_validate).
 * Every entry point runs the engine under a mapped-read guard (guard.c)
 * after checking the chunks' mapped buffers, so a file that shrank gives
 * QV_ECHANGED before anything is allocated.
 */
#include <stdlib.h>
#include <string.h>

#include "core/guard_internal.h"
#include "core/kernels_internal.h"
#include "core/take_internal.h"

/* Rows to gather: row i comes from chunks[chunk ? chunk[i] : 0], logical
 * row row[i] (that chunk's offset not applied), and goes to output row
 * dest ? dest[i] : i (dest: a permutation of 0..n-1). */
typedef struct gsrc {
  qv_array *const *chunks;
  int64_t n_chunks;
  const int64_t *chunk;
  const int64_t *row;
  int64_t n;
  const int64_t *dest;
  qv_pool *pool; /* optional: threads for the loops over output rows */
} gsrc;

#define SRC_CHUNK(s, i) ((s)->chunk ? (s)->chunk[i] : 0)
#define DEST(s, i) ((s)->dest ? (s)->dest[i] : (i))

static qv_status gather(const gsrc *s, qv_array **out, qv_error *err);

static qv_status oom(qv_error *err, const char *what) {
  return qv_error_set(err, QV_ENOMEM, "take: out of memory (%s)", what);
}

/* Temporaries are the guard's (core/guard_internal.h): a fault in the
 * middle of a gather (a file shrinking while it runs) frees them. Output
 * arrays and buffers are linked into the result as soon as they exist, so
 * that the caller's unref of the partial result frees them. */
static void *xcalloc(int64_t n, size_t size) { return qv_guard_tmp_alloc(n, size, true); }
static void xfree(void *p) { qv_guard_tmp_free(p); }

/* Child k of every chunk (malloc'd list the caller frees). */
static qv_array **child_chunks(const gsrc *s, int32_t k) {
  qv_array **c = xcalloc(s->n_chunks, sizeof *c);
  if (c != NULL)
    for (int64_t i = 0; i < s->n_chunks; i++) c[i] = s->chunks[i]->children[k];
  return c;
}

/* Gather a child (children[k] of every chunk) at the given rows, to the
 * given output rows (dest may be NULL). */
static qv_status gather_child(const gsrc *s, int32_t k, const int64_t *chunk, const int64_t *row,
                              int64_t n, const int64_t *dest, qv_array **out, qv_error *err) {
  qv_array **cc = child_chunks(s, k);
  if (cc == NULL) return oom(err, "child list");
  gsrc cs = {cc, s->n_chunks, s->n_chunks > 1 ? chunk : NULL, row, n, dest, s->pool};
  qv_status st = gather(&cs, out, err);
  xfree(cc);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Validity and fixed-width slots                                            */

static qv_status gather_validity(const gsrc *s, qv_array *out, qv_error *err) {
  bool any = false;
  for (int64_t c = 0; c < s->n_chunks && !any; c++) any = qv_array_null_count(s->chunks[c]) > 0;
  out->null_count = 0;
  if (!any) return QV_OK;
  QV_RETURN_NOT_OK(qv_buffer_alloc((s->n + 7) / 8, &out->buffers[0], err));
  uint8_t *d = out->buffers[0]->data;
  int64_t valid = 0;
  if (s->n_chunks == 1 || s->chunk == NULL) {
    const qv_array *a = s->chunks[0];
    const uint8_t *v = a->buffers[0]->data;
    const int64_t *row = s->row;
    int64_t off = a->offset;
    for (int64_t i = 0; i < s->n; i++) {
      uint8_t b = (uint8_t)qv_bit_get(v, off + row[i]);
      int64_t j = DEST(s, i);
      d[j >> 3] |= (uint8_t)(b << (j & 7));
      valid += b;
    }
  } else {
    const uint8_t **vb = xcalloc(s->n_chunks, sizeof *vb);
    int64_t *vo = xcalloc(s->n_chunks, sizeof *vo);
    if (vb == NULL || vo == NULL) {
      xfree(vb);
      xfree(vo);
      return oom(err, "validity");
    }
    for (int64_t c = 0; c < s->n_chunks; c++) {
      const qv_array *a = s->chunks[c];
      vb[c] = a->buffers[0] ? a->buffers[0]->data : NULL;
      vo[c] = a->offset;
    }
    for (int64_t i = 0; i < s->n; i++) {
      int64_t c = s->chunk[i];
      uint8_t b = vb[c] == NULL ? 1 : (uint8_t)qv_bit_get(vb[c], vo[c] + s->row[i]);
      int64_t j = DEST(s, i);
      d[j >> 3] |= (uint8_t)(b << (j & 7));
      valid += b;
    }
    xfree(vb);
    xfree(vo);
  }
  out->null_count = s->n - valid;
  return QV_OK;
}

/* Start of buffer `slot` at the array's offset; NULL when absent (empty
 * arrays may come without buffers; no row is then read from them). */
static const uint8_t *slot_base(const qv_array *a, int32_t slot, int32_t width) {
  if (slot >= a->n_buffers || a->buffers[slot] == NULL) return NULL;
  return a->buffers[slot]->data + a->offset * width;
}

/* A loop over rows [0, n) of a gather with output rows (dest), split
 * into one part per thread of s->pool when there is one and at least
 * qv_take_parallel_min_n rows: the parts write disjoint output bytes. */
int64_t qv_take_parallel_min_n = (int64_t)1 << 16;

typedef void (*rows_fn)(void *ctx, int64_t lo, int64_t hi);
typedef struct rows_job {
  rows_fn fn;
  void *ctx;
  int64_t n;
  int parts;
} rows_job;

static void rows_task(void *ctx, int64_t p, int worker) {
  (void)worker;
  const rows_job *j = ctx;
  j->fn(j->ctx, j->n * p / j->parts, j->n * (p + 1) / j->parts);
}

/* Parts per thread: small parts let whichever thread runs take the next
 * one (the waiting caller runs them too), so a thread the scheduler holds
 * back on a loaded machine delays the loop by one part, not by its half. */
#define PARTS_PER_THREAD 8
int64_t qv_take_part_min_rows = 8192;

static void run_rows(const gsrc *s, rows_fn fn, void *ctx) {
  int parts = 1;
  if (s->pool != NULL && s->dest != NULL && s->n >= qv_take_parallel_min_n) {
    int64_t most = s->n / qv_take_part_min_rows;
    parts = qv_pool_size(s->pool) * PARTS_PER_THREAD;
    if (parts > most) parts = most > 2 ? (int)most : 2;
  }
  if (parts <= 1) {
    fn(ctx, 0, s->n);
    return;
  }
  rows_job j = {fn, ctx, s->n, parts};
  qv_pool_run(s->pool, parts, rows_task, &j);
}

/* Inner loops with a compile-time width so the copies become plain moves.
 * With output rows (dest), the source rows come sorted (the table layer's
 * large gathers): the value PREFETCH_AHEAD rows on is prefetched, its
 * address now being a good guess of what the loop reads next. */
#define PREFETCH_AHEAD 16
#define GATHER_WIDTH(W)                                                                            \
  do {                                                                                             \
    if (dest != NULL && bases != NULL) {                                                           \
      int64_t m = hi - lo > PREFETCH_AHEAD ? hi - PREFETCH_AHEAD : lo;                             \
      for (int64_t i = lo; i < m; i++) {                                                           \
        int64_t a = i + PREFETCH_AHEAD;                                                            \
        __builtin_prefetch(bases[chunk[a]] + row[a] * (W));                                        \
        __builtin_prefetch(dst + dest[a] * (W), 1);                                                \
        memcpy(dst + dest[i] * (W), bases[chunk[i]] + row[i] * (W), (W));                          \
      }                                                                                            \
      for (int64_t i = m; i < hi; i++)                                                             \
        memcpy(dst + dest[i] * (W), bases[chunk[i]] + row[i] * (W), (W));                          \
    } else if (dest != NULL) {                                                                     \
      for (int64_t i = lo; i < hi; i++) memcpy(dst + dest[i] * (W), base0 + row[i] * (W), (W));    \
    } else if (bases == NULL) {                                                                    \
      for (int64_t i = lo; i < hi; i++) memcpy(dst + i * (W), base0 + row[i] * (W), (W));          \
    } else {                                                                                       \
      for (int64_t i = lo; i < hi; i++)                                                            \
        memcpy(dst + i * (W), bases[chunk[i]] + row[i] * (W), (W));                                \
    }                                                                                              \
  } while (0)

typedef struct slot_rows_ctx {
  const gsrc *s;
  int32_t width;
  const uint8_t *base0;        /* one chunk */
  const uint8_t *const *bases; /* several */
  uint8_t *dst;
} slot_rows_ctx;

static void slot_rows(void *ctx, int64_t lo, int64_t hi) {
  const slot_rows_ctx *x = ctx;
  const gsrc *s = x->s;
  const int64_t *row = s->row, *chunk = s->chunk, *dest = s->dest;
  const uint8_t *base0 = x->base0, *const *bases = x->bases;
  uint8_t *dst = x->dst;
  int32_t width = x->width;
  switch (width) {
    case 1: GATHER_WIDTH(1); break;
    case 2: GATHER_WIDTH(2); break;
    case 4: GATHER_WIDTH(4); break;
    case 8: GATHER_WIDTH(8); break;
    case 16: GATHER_WIDTH(16); break;
    case 32: GATHER_WIDTH(32); break;
    default:
      for (int64_t i = lo; i < hi; i++)
        memcpy(dst + DEST(s, i) * width, (bases ? bases[chunk[i]] : base0) + row[i] * width,
               (size_t)width);
  }
}

/* Gather buffer `slot` (values of `width` bytes at the chunk's offset)
 * into a new buffer. */
static qv_status gather_slot(const gsrc *s, int32_t width, int32_t slot, qv_buffer **out,
                             qv_error *err) {
  int64_t n = s->n, bytes;
  if (qv_mul_overflow(n, width, &bytes)) return oom(err, "values");
  QV_RETURN_NOT_OK(qvk_buffer_alloc_uninit(bytes, out, err)); /* every row written */
  qv_buffer *buf = *out;
  const uint8_t **bases = NULL;
  const uint8_t *base0 = NULL;
  if (s->chunk == NULL || s->n_chunks == 1) {
    base0 = slot_base(s->chunks[0], slot, width);
  } else {
    bases = xcalloc(s->n_chunks, sizeof *bases);
    if (bases == NULL) return oom(err, "chunk bases");
    for (int64_t c = 0; c < s->n_chunks; c++) bases[c] = slot_base(s->chunks[c], slot, width);
  }
  slot_rows_ctx x = {s, width, base0, bases, buf->data};
  run_rows(s, slot_rows, &x);
  xfree(bases);
  return QV_OK;
}

static qv_status gather_bool(const gsrc *s, qv_array *out, qv_error *err) {
  QV_RETURN_NOT_OK(qv_buffer_alloc((s->n + 7) / 8, &out->buffers[1], err));
  uint8_t *d = out->buffers[1]->data;
  if (s->chunk == NULL) {
    const qv_array *a = s->chunks[0];
    const uint8_t *v = s->n > 0 ? a->buffers[1]->data : NULL;
    const int64_t *row = s->row;
    int64_t off = a->offset;
    for (int64_t i = 0; i < s->n; i++) {
      int64_t j = DEST(s, i);
      d[j >> 3] |= (uint8_t)(qv_bit_get(v, off + row[i]) << (j & 7));
    }
  } else {
    for (int64_t i = 0; i < s->n; i++) {
      const qv_array *a = s->chunks[s->chunk[i]];
      uint8_t b = (uint8_t)qv_bit_get(a->buffers[1]->data, a->offset + s->row[i]);
      int64_t j = DEST(s, i);
      d[j >> 3] |= (uint8_t)(b << (j & 7));
    }
  }
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Variable-length: binary/string, views                                     */

static qv_status offset_overflow(qv_error *err, const qv_type *t, int64_t need) {
  char name[128];
  qv_type_to_string(t, name, sizeof name);
  return qv_error_set(err, QV_ERANGE,
                      "take: gathered %s data needs offset %lld, beyond the 32-bit "
                      "offset limit %d; use the large_ variant",
                      name, (long long)need, INT32_MAX);
}

/* Range [*start, *end) that row `r` of chunk `a` covers in its offsets. */
static inline void range_of(const qv_array *a, bool large, int64_t r, int64_t *start,
                            int64_t *end) {
  const uint8_t *o = a->buffers[1]->data;
  int64_t p = a->offset + r;
  if (large) {
    memcpy(start, o + p * 8, 8);
    memcpy(end, o + p * 8 + 8, 8);
  } else {
    int32_t s4, e4;
    memcpy(&s4, o + p * 4, 4);
    memcpy(&e4, o + p * 4 + 4, 4);
    *start = s4;
    *end = e4;
  }
}

/*
 * Size pass shared by binary and list layouts: new offsets (cumulative
 * sizes of the selected ranges) into *offsets_out, the total into *total.
 * `limit` is the length of what offsets index (data bytes or child rows)
 * per chunk, checked.
 */
static qv_status build_offsets(const gsrc *s, bool large, bool child_limit, qv_buffer **offsets_out,
                               int64_t *starts, int64_t *total, qv_error *err) {
  int32_t w = large ? 8 : 4;
  QV_RETURN_NOT_OK(qvk_buffer_alloc_uninit((s->n + 1) * w, offsets_out, err));
  qv_buffer *buf = *offsets_out; /* in the output already: freed with it */
  qvk_store_int(buf->data, w, 0, 0);
  int64_t sum = 0;
  for (int64_t i = 0; i < s->n; i++) {
    if (i + PREFETCH_AHEAD < s->n) { /* rows in any order: their offsets are cache misses */
      const qv_array *pa = s->chunks[SRC_CHUNK(s, i + PREFETCH_AHEAD)];
      __builtin_prefetch(pa->buffers[1]->data + (pa->offset + s->row[i + PREFETCH_AHEAD]) * w);
    }
    int64_t c = SRC_CHUNK(s, i);
    const qv_array *a = s->chunks[c];
    int64_t start, end;
    range_of(a, large, s->row[i], &start, &end);
    int64_t limit = child_limit ? a->children[0]->length : a->buffers[2]->size;
    if (start < 0 || end < start || end > limit) {
      return qv_error_set(err, QV_EINVAL,
                          "take: row %lld of chunk %lld has offsets [%lld, %lld) outside "
                          "[0, %lld)",
                          (long long)s->row[i], (long long)c, (long long)start, (long long)end,
                          (long long)limit);
    }
    starts[i] = start;
    sum += end - start;
    if (!large && sum > INT32_MAX) return offset_overflow(err, a->type, sum);
    qvk_store_int(buf->data, w, i + 1, sum);
  }
  *total = sum;
  return QV_OK;
}

/* With output rows (dest): the sizes are stored at their output rows
 * (source rows read in the given, sorted, order), summed into offsets in
 * output order, then the bytes are copied in source order again, each to
 * its output offset. Same offsets and bytes as in output order, the same
 * overflow error (the first output offset beyond the limit). Both passes
 * over the rows run in parts on the pool's threads (run_rows). */
typedef struct bin_rows_ctx {
  const gsrc *s;
  int32_t w;            /* offset width */
  const uint8_t **from; /* where the bytes of row i start */
  uint8_t *offs, *data; /* output */
  int64_t bad;          /* first row with offsets outside its data (n: none) */
} bin_rows_ctx;

static void bin_size_rows(void *ctx, int64_t lo, int64_t hi) {
  bin_rows_ctx *x = ctx;
  const gsrc *s = x->s;
  int32_t w = x->w;
  for (int64_t i = lo; i < hi; i++) {
    if (i + PREFETCH_AHEAD < hi) {
      const qv_array *a = s->chunks[SRC_CHUNK(s, i + PREFETCH_AHEAD)];
      __builtin_prefetch(a->buffers[1]->data + (a->offset + s->row[i + PREFETCH_AHEAD]) * w);
      __builtin_prefetch(x->offs + (s->dest[i + PREFETCH_AHEAD] + 1) * w, 1);
    }
    const qv_array *a = s->chunks[SRC_CHUNK(s, i)];
    int64_t start, end;
    range_of(a, w == 8, s->row[i], &start, &end);
    if (start < 0 || end < start || end > a->buffers[2]->size) {
      int64_t seen = __atomic_load_n(&x->bad, __ATOMIC_RELAXED);
      while (i < seen && !__atomic_compare_exchange_n(&x->bad, &seen, i, false, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED)) {}
      return;
    }
    x->from[i] = a->buffers[2]->data + start;
    qvk_store_int(x->offs, w, s->dest[i] + 1, end - start);
  }
}

/* Copy pass: the output offsets of a row are prefetched two distances
 * ahead, its source bytes and output place one distance ahead (measured
 * 55 -> 47 ms on the benchmark's string column, two threads). Strings of
 * 16 to 64 bytes are copied by two overlapping fixed-size moves (inlined,
 * no library call), each byte of [b, e) written, nothing outside it. */
static void bin_copy_rows(void *ctx, int64_t lo, int64_t hi) {
  const bin_rows_ctx *x = ctx;
  const int64_t *dest = x->s->dest;
  const uint8_t *const *from = x->from;
  const uint8_t *o = x->offs;
  int32_t w = x->w;
  for (int64_t i = lo; i < hi; i++) {
    if (i + 2 * PREFETCH_AHEAD < hi) __builtin_prefetch(o + dest[i + 2 * PREFETCH_AHEAD] * w);
    if (i + PREFETCH_AHEAD < hi) {
      int64_t a = i + PREFETCH_AHEAD;
      __builtin_prefetch(from[a]);
      __builtin_prefetch(x->data + qv_load_int(o, w, false, dest[a]), 1);
    }
    int64_t j = dest[i];
    int64_t b = qv_load_int(o, w, false, j), e = qv_load_int(o, w, false, j + 1);
    uint8_t *d = x->data + b;
    const uint8_t *src = from[i];
    size_t len = (size_t)(e - b);
    if (len >= 32 && len <= 64) {
      memcpy(d, src, 32);
      memcpy(d + len - 32, src + len - 32, 32);
    } else if (len >= 16 && len < 32) {
      memcpy(d, src, 16);
      memcpy(d + len - 16, src + len - 16, 16);
    } else if (len > 0) {
      memcpy(d, src, len);
    }
  }
}

static qv_status gather_binary_to(const gsrc *s, bool large, qv_array *out, qv_error *err) {
  int32_t w = large ? 8 : 4;
  int64_t n = s->n;
  bin_rows_ctx x = {s, w, xcalloc(n, sizeof(const uint8_t *)), NULL, NULL, n};
  qv_status st = x.from ? QV_OK : oom(err, "string starts");
  if (st == QV_OK) st = qv_buffer_alloc((n + 1) * w, &out->buffers[1], err);
  if (st == QV_OK) {
    x.offs = out->buffers[1]->data;
    run_rows(s, bin_size_rows, &x);
    if (x.bad < n) {
      int64_t i = x.bad, c = SRC_CHUNK(s, i), start, end;
      const qv_array *a = s->chunks[c];
      range_of(a, large, s->row[i], &start, &end);
      st = qv_error_set(err, QV_EINVAL,
                        "take: row %lld of chunk %lld has offsets [%lld, %lld) outside "
                        "[0, %lld)",
                        (long long)s->row[i], (long long)c, (long long)start, (long long)end,
                        (long long)a->buffers[2]->size);
    }
  }
  int64_t sum = 0;
  for (int64_t j = 1; st == QV_OK && j <= n; j++) {
    sum += qv_load_int(x.offs, w, false, j);
    if (!large && sum > INT32_MAX) st = offset_overflow(err, s->chunks[0]->type, sum);
    else qvk_store_int(x.offs, w, j, sum);
  }
  if (st == QV_OK) st = qv_buffer_alloc(sum, &out->buffers[2], err);
  if (st == QV_OK) {
    x.data = out->buffers[2]->data;
    run_rows(s, bin_copy_rows, &x);
  }
  xfree(x.from);
  return st;
}

/* Two passes: sizes (building the offsets and remembering each source
 * start, so the copy pass reads the source offsets only once), then bytes. */
static qv_status gather_binary(const gsrc *s, bool large, qv_array *out, qv_error *err) {
  if (s->dest != NULL) return gather_binary_to(s, large, out, err);
  int64_t total = 0;
  int64_t *starts = xcalloc(s->n, sizeof *starts);
  if (starts == NULL) return oom(err, "string starts");
  qv_status st = build_offsets(s, large, false, &out->buffers[1], starts, &total, err);
  if (st == QV_OK) st = qv_buffer_alloc(total, &out->buffers[2], err);
  if (st == QV_OK) {
    const uint8_t *o = out->buffers[1]->data;
    uint8_t *d = out->buffers[2]->data;
    const uint8_t *src0 = s->chunk == NULL && s->n > 0 ? s->chunks[0]->buffers[2]->data : NULL;
    for (int64_t i = 0; i < s->n; i++) {
      const uint8_t *src = s->chunk ? s->chunks[s->chunk[i]]->buffers[2]->data : src0;
      int64_t b = qv_load_int(o, large ? 8 : 4, false, i);
      int64_t e = qv_load_int(o, large ? 8 : 4, false, i + 1);
      if (e > b) memcpy(d + b, src + starts[i], (size_t)(e - b));
    }
  }
  xfree(starts);
  return st;
}

static qv_status gather_views(const gsrc *s, qv_array *out, qv_error *err) {
  QV_RETURN_NOT_OK(gather_slot(s, QV_VIEW_SIZE, 1, &out->buffers[1], err));
  /* Data buffers of the chunks used, in chunk order; base[c] is where chunk
   * c's buffers start among them. */
  int32_t *base = xcalloc(s->n_chunks, sizeof *base);
  bool *used = xcalloc(s->n_chunks, sizeof *used);
  if (base == NULL || used == NULL) {
    xfree(base);
    xfree(used);
    return oom(err, "view buffers");
  }
  if (s->chunk == NULL) used[0] = true; /* one chunk: share all its buffers */
  else
    for (int64_t i = 0; i < s->n; i++) used[s->chunk[i]] = true;
  int64_t n_data = 0;
  for (int64_t c = 0; c < s->n_chunks; c++) {
    base[c] = (int32_t)n_data;
    if (used[c]) n_data += s->chunks[c]->n_buffers - QV_VIEW_FIXED_BUFFERS;
    if (n_data > INT32_MAX - QV_VIEW_FIXED_BUFFERS) {
      xfree(base);
      xfree(used);
      return qv_error_set(err, QV_ERANGE, "take: %lld view data buffers exceed the limit",
                          (long long)n_data);
    }
  }
  qv_status st = QV_OK;
  qv_buffer **bufs = realloc(out->buffers, sizeof *bufs * (size_t)(QV_VIEW_FIXED_BUFFERS + n_data));
  if (bufs == NULL) {
    st = oom(err, "view buffers");
  } else {
    out->buffers = bufs;
    int32_t next = QV_VIEW_FIXED_BUFFERS;
    for (int64_t c = 0; c < s->n_chunks; c++) {
      if (!used[c]) continue;
      for (int32_t b = QV_VIEW_FIXED_BUFFERS; b < s->chunks[c]->n_buffers; b++)
        bufs[next++] = qv_buffer_ref(s->chunks[c]->buffers[b]);
    }
    out->n_buffers = next;
    if (s->chunk != NULL) {
      for (int64_t i = 0; i < s->n; i++) {
        uint8_t *v = out->buffers[1]->data + DEST(s, i) * QV_VIEW_SIZE;
        int32_t len, idx, shift = base[s->chunk[i]];
        memcpy(&len, v, 4);
        if (len <= QV_VIEW_INLINE_MAX || shift == 0) continue;
        memcpy(&idx, v + QV_VIEW_BUFFER_INDEX_AT, 4);
        idx += shift;
        memcpy(v + QV_VIEW_BUFFER_INDEX_AT, &idx, 4);
      }
    }
  }
  xfree(base);
  xfree(used);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Nested                                                                    */

/* list / large_list / map (and list views across chunks): a compact list
 * whose child is gathered at the selected child rows. */
/* Byte width of the list child's values when the child is a plain
 * fixed-width array (validity + values; not bool, not a dictionary) in
 * every chunk, else 0. */
static int32_t flat_child_width(const gsrc *s) {
  const qv_type *t = s->chunks[0]->children[0]->type;
  if (t->id == QV_BOOL || t->id == QV_DICTIONARY || qv_type_num_buffers(t->id) != 2) return 0;
  int32_t w = qv_type_byte_width(t);
  for (int64_t c = 0; w > 0 && c < s->n_chunks; c++) {
    const qv_array *ch = s->chunks[c]->children[0];
    if (ch->n_buffers != 2 || (ch->length > 0 && ch->buffers[1] == NULL)) w = 0;
  }
  return w;
}

/* The child of a list whose values are fixed-width: each selected range is
 * one memcpy (and one bitmap copy when the child has nulls), rather than a
 * child row list gathered element by element. `starts` are the ranges'
 * first child rows, `offs` the new offsets. */
#define LIST_PREFETCH_BYTES 512
#define LIST_PREFETCH_ROWS 6
static qv_status gather_list_flat(const gsrc *s, bool large, int32_t width, const int64_t *starts,
                                  const qv_buffer *offs, int64_t total, qv_array **out,
                                  qv_error *err) {
  qv_type *t = s->chunks[0]->children[0]->type;
  qv_array *a = qv_array_new(t, 2, 0);
  if (a == NULL) return oom(err, "array");
  *out = a; /* in the result at once (a fault below: freed with it) */
  a->length = total;
  a->null_count = 0;
  int64_t bytes;
  qv_status st = qv_mul_overflow(total, width, &bytes)
                     ? oom(err, "values")
                     : qvk_buffer_alloc_uninit(bytes, &a->buffers[1], err);
  bool nulls = false;
  for (int64_t c = 0; c < s->n_chunks && !nulls; c++)
    nulls = qv_array_null_count(s->chunks[c]->children[0]) > 0;
  if (st == QV_OK && nulls) {
    st = qv_buffer_alloc((total + 7) / 8, &a->buffers[0], err);
    if (st == QV_OK) memset(a->buffers[0]->data, 0xff, (size_t)((total + 7) / 8));
  }
  if (st != QV_OK) return st;
  uint8_t *dst = a->buffers[1]->data;
  uint8_t *bits = nulls ? a->buffers[0]->data : NULL;
  int32_t ow = large ? 8 : 4;
  int64_t k = 0;
  for (int64_t i = 0; i < s->n; i++) {
    if (i + LIST_PREFETCH_ROWS < s->n) {
      /* The ranges LIST_PREFETCH_ROWS rows on, up to LIST_PREFETCH_BYTES of each:
       * rows in random order start a new page each, which the hardware
       * prefetcher does not follow. */
      int64_t ahead = i + LIST_PREFETCH_ROWS;
      const qv_array *pch = s->chunks[SRC_CHUNK(s, ahead)]->children[0];
      int64_t pl =
          qv_load_int(offs->data, ow, false, ahead + 1) - qv_load_int(offs->data, ow, false, ahead);
      const uint8_t *p = pch->buffers[1]->data + (pch->offset + starts[ahead]) * width;
      int64_t pb = pl * width < LIST_PREFETCH_BYTES ? pl * width : LIST_PREFETCH_BYTES;
      for (int64_t o = 0; o < pb; o += 64) __builtin_prefetch(p + o);
    }
    int64_t len = qv_load_int(offs->data, ow, false, i + 1) - qv_load_int(offs->data, ow, false, i);
    if (len == 0) continue;
    const qv_array *ch = s->chunks[SRC_CHUNK(s, i)]->children[0];
    int64_t from = ch->offset + starts[i];
    memcpy(dst + k * width, ch->buffers[1]->data + from * width, (size_t)(len * width));
    if (bits != NULL && ch->buffers[0] != NULL)
      qv_bitmap_copy(bits, k, ch->buffers[0]->data, from, len);
    k += len;
  }
  if (bits != NULL) a->null_count = total - qv_bitmap_count(bits, 0, total);
  return QV_OK;
}

static qv_status gather_list(const gsrc *s, bool large, bool is_view, qv_array *out,
                             qv_error *err) {
  int32_t w = large ? 8 : 4;
  int64_t total = 0;
  qv_buffer *offs = NULL;
  if (!is_view) {
    int64_t *starts = xcalloc(s->n, sizeof *starts);
    if (starts == NULL) return oom(err, "list starts");
    qv_status st = build_offsets(s, large, true, &out->buffers[1], starts, &total, err);
    offs = out->buffers[1];
    int32_t cw = st == QV_OK ? flat_child_width(s) : 0;
    if (cw > 0) st = gather_list_flat(s, large, cw, starts, offs, total, &out->children[0], err);
    xfree(starts);
    if (st != QV_OK || cw > 0) return st;
  } else {
    /* Views: sizes gathered verbatim; offsets become cumulative. */
    QV_RETURN_NOT_OK(gather_slot(s, w, 2, &out->buffers[2], err));
    QV_RETURN_NOT_OK(qv_buffer_alloc(s->n * w, &offs, err));
    out->buffers[1] = offs;
    for (int64_t i = 0; i < s->n; i++) {
      int64_t c = SRC_CHUNK(s, i);
      const qv_array *a = s->chunks[c];
      int64_t p = a->offset + s->row[i];
      int64_t o = qv_load_int(a->buffers[1]->data, w, false, p);
      int64_t sz = qv_load_int(a->buffers[2]->data, w, false, p);
      if (sz < 0 || o < 0 || o + sz > a->children[0]->length)
        return qv_error_set(err, QV_EINVAL,
                            "take: row %lld of chunk %lld has list view [%lld, +%lld) outside "
                            "a child of length %lld",
                            (long long)s->row[i], (long long)c, (long long)o, (long long)sz,
                            (long long)a->children[0]->length);
      qvk_store_int(offs->data, w, i, total);
      total += sz;
      if (!large && total > INT32_MAX) return offset_overflow(err, a->type, total);
    }
  }
  int64_t *rows = xcalloc(total, sizeof *rows);
  int64_t *chunks = s->chunk ? xcalloc(total, sizeof *chunks) : NULL;
  if (rows == NULL || (s->chunk && chunks == NULL)) {
    xfree(rows);
    xfree(chunks);
    return oom(err, "child rows");
  }
  int64_t k = 0;
  for (int64_t i = 0; i < s->n; i++) {
    int64_t c = SRC_CHUNK(s, i);
    const qv_array *a = s->chunks[c];
    int64_t start, end;
    if (is_view) {
      int64_t p = a->offset + s->row[i];
      start = qv_load_int(a->buffers[1]->data, w, false, p);
      end = start + qv_load_int(a->buffers[2]->data, w, false, p);
    } else {
      range_of(a, large, s->row[i], &start, &end);
    }
    for (int64_t j = start; j < end; j++, k++) {
      rows[k] = j;
      if (chunks) chunks[k] = c;
    }
  }
  qv_status st = gather_child(s, 0, chunks, rows, total, NULL, &out->children[0], err);
  xfree(rows);
  xfree(chunks);
  return st;
}

/* list_view from one chunk: offsets and sizes gathered, child shared. */
static qv_status gather_list_view(const gsrc *s, bool large, qv_array *out, qv_error *err) {
  if (s->n_chunks > 1) return gather_list(s, large, true, out, err);
  int32_t w = large ? 8 : 4;
  QV_RETURN_NOT_OK(gather_slot(s, w, 1, &out->buffers[1], err));
  QV_RETURN_NOT_OK(gather_slot(s, w, 2, &out->buffers[2], err));
  out->children[0] = qv_array_ref(s->chunks[0]->children[0]);
  return QV_OK;
}

/* Rows of the children of struct / sparse union chunks: row + offset. */
static qv_status shifted_rows(const gsrc *s, int64_t **out, qv_error *err) {
  bool zero = true;
  for (int64_t c = 0; c < s->n_chunks; c++) zero = zero && s->chunks[c]->offset == 0;
  *out = NULL;
  if (zero) return QV_OK;
  int64_t *rows = xcalloc(s->n, sizeof *rows);
  if (rows == NULL) return oom(err, "child rows");
  for (int64_t i = 0; i < s->n; i++) rows[i] = s->chunks[SRC_CHUNK(s, i)]->offset + s->row[i];
  *out = rows;
  return QV_OK;
}

static qv_status gather_struct_like(const gsrc *s, qv_array *out, qv_error *err) {
  int64_t *rows = NULL;
  QV_RETURN_NOT_OK(shifted_rows(s, &rows, err));
  qv_status st = QV_OK;
  for (int32_t k = 0; k < out->n_children && st == QV_OK; k++)
    st = gather_child(s, k, s->chunk, rows ? rows : s->row, s->n, s->dest, &out->children[k], err);
  xfree(rows);
  return st;
}

static qv_status gather_fsl(const gsrc *s, qv_array *out, qv_error *err) {
  int64_t size = out->type->list_size, total;
  if (size < 0 || qv_mul_overflow(s->n, size, &total)) return oom(err, "fixed_size_list");
  int64_t *rows = xcalloc(total, sizeof *rows);
  int64_t *chunks = s->chunk ? xcalloc(total, sizeof *chunks) : NULL;
  if (rows == NULL || (s->chunk && chunks == NULL)) {
    xfree(rows);
    xfree(chunks);
    return oom(err, "child rows");
  }
  int64_t k = 0;
  for (int64_t i = 0; i < s->n; i++) {
    int64_t c = SRC_CHUNK(s, i);
    int64_t first = (s->chunks[c]->offset + s->row[i]) * size;
    for (int64_t j = 0; j < size; j++, k++) {
      rows[k] = first + j;
      if (chunks) chunks[k] = c;
    }
  }
  qv_status st = gather_child(s, 0, chunks, rows, total, NULL, &out->children[0], err);
  xfree(rows);
  xfree(chunks);
  return st;
}

static qv_status gather_dense_union(const gsrc *s, qv_array *out, qv_error *err) {
  QV_RETURN_NOT_OK(gather_slot(s, 1, 0, &out->buffers[0], err));
  qv_buffer *offs = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(s->n * 4, &offs, err));
  out->buffers[1] = offs;
  int8_t map[QVK_UNION_CODES];
  qvk_union_map(out->type, map);
  int32_t nk = out->n_children;
  int64_t *count = xcalloc(nk + 1, sizeof *count);
  int64_t *rows = xcalloc(s->n, sizeof *rows);
  int64_t *chunks = s->chunk ? xcalloc(s->n, sizeof *chunks) : NULL;
  qv_status st = QV_OK;
  if (count == NULL || rows == NULL || (s->chunk && chunks == NULL)) {
    st = oom(err, "union rows");
    goto done;
  }
  const int8_t *ids = (const int8_t *)out->buffers[0]->data;
  int32_t *o = (int32_t *)offs->data;
  /* Counting pass: output offsets are each row's rank within its child. */
  for (int64_t i = 0; i < s->n; i++) {
    int k = ids[i] >= 0 ? map[ids[i]] : -1;
    if (k < 0) {
      st = qv_error_set(err, QV_EINVAL,
                        "take: row %lld of chunk %lld has type id %d that is not in the union",
                        (long long)s->row[i], (long long)SRC_CHUNK(s, i), ids[i]);
      goto done;
    }
    o[i] = (int32_t)count[k + 1]++;
  }
  for (int32_t k = 0; k < nk; k++) count[k + 1] += count[k]; /* segment starts */
  for (int64_t i = 0; i < s->n; i++) {
    int64_t c = SRC_CHUNK(s, i);
    const qv_array *a = s->chunks[c];
    int k = map[ids[i]];
    int32_t child_row;
    memcpy(&child_row, a->buffers[1]->data + (a->offset + s->row[i]) * 4, 4);
    if (child_row < 0 || child_row >= a->children[k]->length) {
      st = qv_error_set(err, QV_EINVAL,
                        "take: row %lld of chunk %lld has union offset %d outside child %d of "
                        "length %lld",
                        (long long)s->row[i], (long long)c, child_row, k,
                        (long long)a->children[k]->length);
      goto done;
    }
    int64_t at = count[k] + o[i];
    rows[at] = child_row;
    if (chunks) chunks[at] = c;
  }
  for (int32_t k = 0; k < nk && st == QV_OK; k++)
    st = gather_child(s, k, chunks ? chunks + count[k] : NULL, rows + count[k],
                      count[k + 1] - count[k], NULL, &out->children[k], err);
done:
  xfree(count);
  xfree(rows);
  xfree(chunks);
  return st;
}

static qv_status gather_dictionary(const gsrc *s, qv_array *out, qv_error *err) {
  const qv_type *it = out->type->index_type;
  int32_t w = qv_type_bit_width(it) / 8;
  QV_RETURN_NOT_OK(gather_slot(s, w, 1, &out->buffers[1], err));
  bool shared = true;
  for (int64_t c = 1; c < s->n_chunks; c++)
    shared = shared && s->chunks[c]->dictionary == s->chunks[0]->dictionary;
  if (shared) {
    out->dictionary = qv_array_ref(s->chunks[0]->dictionary);
    return QV_OK;
  }
  /* Different dictionaries: one concatenated dictionary, indices shifted. */
  int64_t *base = xcalloc(s->n_chunks, sizeof *base);
  qv_status st = QV_OK;
  if (base == NULL) {
    st = oom(err, "dictionaries");
    goto done;
  }
  st = qvk_unify_dictionaries(s->chunks, s->n_chunks, base, &out->dictionary, err);
  if (st != QV_OK) {
    qv_error_prefix(err, st, "take: dictionary: ");
    goto done;
  }
  bool is_unsigned = !qv_type_id_is_signed_integer(it->id);
  int64_t imax = qvk_int_max(it->id);
  uint8_t *idx = out->buffers[1]->data;
  const uint8_t *valid = out->buffers[0] ? out->buffers[0]->data : NULL;
  for (int64_t i = 0; i < s->n; i++) {
    if (valid != NULL && !qv_bit_get(valid, i)) {
      qvk_store_int(idx, w, i, 0);
      continue;
    }
    int64_t v = qv_load_int(idx, w, is_unsigned, i) + base[s->chunk[i]];
    if (v > imax) {
      st = qv_error_set(err, QV_ERANGE,
                        "take: dictionary index %lld (chunk %lld, row %lld) does not fit "
                        "index type %s (max %lld) after merging dictionaries",
                        (long long)v, (long long)s->chunk[i], (long long)s->row[i],
                        qv_type_id_name(it->id), (long long)imax);
      goto done;
    }
    qvk_store_int(idx, w, i, v);
  }
done:
  xfree(base);
  return st;
}

static qv_status gather_ree(const gsrc *s, qv_array *out, qv_error *err) {
  const qv_type *rt = out->type->children[0].type;
  int32_t w = qv_type_bit_width(rt) / 8;
  if (s->n > qvk_int_max(rt->id))
    return qv_error_set(err, QV_ERANGE,
                        "take: run-end encoded length %lld does not fit run end type %s",
                        (long long)s->n, qv_type_id_name(rt->id));
  int64_t *phys = xcalloc(s->n, sizeof *phys);
  int64_t *chunks = s->chunk ? xcalloc(s->n, sizeof *chunks) : NULL;
  qv_array *re = qv_array_new((qv_type *)rt, 2, 0);
  qv_buffer *ends = NULL;
  qv_status st = QV_OK;
  if (phys == NULL || (s->chunk && chunks == NULL) || re == NULL) {
    st = oom(err, "runs");
    goto done;
  }
  out->children[0] = re; /* in the result at once */
  re = NULL;
  if ((st = qv_buffer_alloc(s->n * w, &out->children[0]->buffers[1], err)) != QV_OK) goto done;
  ends = out->children[0]->buffers[1];
  int64_t runs = 0;
  for (int64_t i = 0; i < s->n; i++) {
    int64_t c = SRC_CHUNK(s, i);
    const qv_array *a = s->chunks[c];
    int64_t p = qvk_ree_find(a->children[0], a->offset + s->row[i]);
    if (p >= a->children[0]->length || p >= a->children[1]->length) {
      st = qv_error_set(err, QV_EINVAL,
                        "take: row %lld of chunk %lld is past the last run (%lld runs)",
                        (long long)s->row[i], (long long)c, (long long)a->children[0]->length);
      goto done;
    }
    if (runs > 0 && phys[runs - 1] == p && (!chunks || chunks[runs - 1] == c)) {
      qvk_store_int(ends->data, w, runs - 1, i + 1);
      continue;
    }
    phys[runs] = p;
    if (chunks) chunks[runs] = c;
    qvk_store_int(ends->data, w, runs, i + 1);
    runs++;
  }
  if ((st = qv_buffer_resize(ends, runs * w, err)) != QV_OK) goto done;
  out->children[0]->length = runs;
  out->children[0]->null_count = 0;
  st = gather_child(s, 1, chunks, phys, runs, NULL, &out->children[1], err);
done:
  qv_array_unref(re);
  xfree(phys);
  xfree(chunks);
  return st;
}

/* ------------------------------------------------------------------------ */

/* Layouts whose kernels write to output rows (gsrc.dest) themselves. */
static bool scatters(qv_type_id id) {
  switch (id) {
    case QV_LIST:
    case QV_MAP:
    case QV_LARGE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_FIXED_SIZE_LIST:
    case QV_DENSE_UNION:
    case QV_DICTIONARY:
    case QV_RUN_END_ENCODED: return false;
    default: return true;
  }
}

/* Any other layout with output rows: the rows are put in output order
 * and gathered as without them (the same bits by construction; these
 * layouts gather child row lists, merge runs or share children in ways
 * that depend on the order). */
static qv_status gather_in_output_order(const gsrc *s, qv_array **out, qv_error *err) {
  int64_t *chunk = s->chunk ? xcalloc(s->n, sizeof *chunk) : NULL;
  int64_t *row = xcalloc(s->n, sizeof *row);
  qv_status st = row && (chunk || !s->chunk) ? QV_OK : oom(err, "output order");
  if (st == QV_OK) {
    for (int64_t i = 0; i < s->n; i++) {
      row[s->dest[i]] = s->row[i];
      if (chunk) chunk[s->dest[i]] = s->chunk[i];
    }
    gsrc o = {s->chunks, s->n_chunks, chunk, row, s->n, NULL, NULL};
    st = gather(&o, out, err);
  }
  xfree(chunk);
  xfree(row);
  return st;
}

static qv_status gather(const gsrc *s, qv_array **out, qv_error *err) {
  qv_type *t = s->chunks[0]->type;
  if (s->dest != NULL && !scatters(t->id)) return gather_in_output_order(s, out, err);
  qv_array *a = qv_array_new(t, qv_type_num_buffers(t->id), t->n_children);
  if (a == NULL) return oom(err, "array");
  *out = a; /* in the result (or the caller's call context) at once */
  a->length = s->n;
  a->null_count = 0;
  qv_status st = QV_OK;
  if (qvk_has_validity_slot(t->id)) st = gather_validity(s, a, err);
  if (st == QV_OK) {
    switch (t->id) {
      case QV_NA: a->null_count = s->n; break;
      case QV_BOOL: st = gather_bool(s, a, err); break;
      case QV_BINARY:
      case QV_STRING: st = gather_binary(s, false, a, err); break;
      case QV_LARGE_BINARY:
      case QV_LARGE_STRING: st = gather_binary(s, true, a, err); break;
      case QV_BINARY_VIEW:
      case QV_STRING_VIEW: st = gather_views(s, a, err); break;
      case QV_LIST:
      case QV_MAP: st = gather_list(s, false, false, a, err); break;
      case QV_LARGE_LIST: st = gather_list(s, true, false, a, err); break;
      case QV_LIST_VIEW:
      case QV_LARGE_LIST_VIEW: st = gather_list_view(s, t->id == QV_LARGE_LIST_VIEW, a, err); break;
      case QV_FIXED_SIZE_LIST: st = gather_fsl(s, a, err); break;
      case QV_STRUCT: st = gather_struct_like(s, a, err); break;
      case QV_SPARSE_UNION:
        st = gather_slot(s, 1, 0, &a->buffers[0], err);
        if (st == QV_OK) st = gather_struct_like(s, a, err);
        break;
      case QV_DENSE_UNION: st = gather_dense_union(s, a, err); break;
      case QV_DICTIONARY: st = gather_dictionary(s, a, err); break;
      case QV_RUN_END_ENCODED: st = gather_ree(s, a, err); break;
      default: {
        int32_t width = qvk_value_bytes(t);
        if (width <= 0) {
          st = qv_error_set(err, QV_ENOTSUP, "take: type %s is not supported",
                            qv_type_id_name(t->id));
          break;
        }
        st = gather_slot(s, width, 1, &a->buffers[1], err);
      }
    }
  }
  if (st != QV_OK) {
    qv_array_unref(a);
    *out = NULL;
    return st;
  }
  return QV_OK;
}

typedef struct gather_call {
  const gsrc *s;
  qv_array *out;
} gather_call;

static qv_status gather_body(void *ctx, qv_error *err) {
  gather_call *g = ctx;
  return gather(g->s, &g->out, err);
}

/* gather() under a guard; a pool task that stopped on a fault fails it. */
static qv_status guarded_gather(const gsrc *s, qv_array **out, qv_error *err) {
  gather_call g = {s, NULL};
  qv_status st =
      qv_guard_run_checked((const qv_array *const *)s->chunks, s->n_chunks, gather_body, &g, err);
  if (st == QV_OK) st = qv_pool_check(s->pool, err);
  if (st != QV_OK) {
    qv_array_unref(g.out);
    return st;
  }
  *out = g.out;
  return QV_OK;
}

qv_status qv_array_take(qv_array *a, const int64_t *indices, int64_t n, qv_array **out,
                        qv_error *err) {
  if (a == NULL || n < 0 || (indices == NULL && n > 0))
    return qv_error_set(err, QV_EARG, "take: needs an array and %lld indices", (long long)n);
  for (int64_t i = 0; i < n; i++)
    if (indices[i] < 0 || indices[i] >= a->length)
      return qv_error_set(err, QV_ERANGE,
                          "take: index %lld (position %lld) is out of range for an array of "
                          "length %lld",
                          (long long)indices[i], (long long)i, (long long)a->length);
  gsrc s = {&a, 1, NULL, indices, n, NULL, NULL};
  return guarded_gather(&s, out, err);
}

qv_status qv_take_chunked_to(qv_array *const *chunks, int64_t n_chunks, const int64_t *chunk_index,
                             const int64_t *row_index, const int64_t *dest, int64_t n,
                             qv_pool *pool, qv_array **out, qv_error *err) {
  gsrc s = {chunks, n_chunks, n_chunks > 1 ? chunk_index : NULL, row_index, n, dest, pool};
  return guarded_gather(&s, out, err);
}

qv_status qv_array_take_chunked(qv_array *const *chunks, int64_t n_chunks,
                                const int64_t *chunk_index, const int64_t *row_index, int64_t n,
                                qv_array **out, qv_error *err) {
  if (chunks == NULL || n_chunks < 1 || n < 0 ||
      ((chunk_index == NULL || row_index == NULL) && n > 0))
    return qv_error_set(err, QV_EARG,
                        "take_chunked: needs at least one chunk (got %lld) "
                        "and %lld (chunk, row) pairs",
                        (long long)n_chunks, (long long)n);
  for (int64_t c = 0; c < n_chunks; c++) {
    if (chunks[c] == NULL)
      return qv_error_set(err, QV_EARG, "take_chunked: chunk %lld is NULL", (long long)c);
    if (!qv_type_equals(chunks[0]->type, chunks[c]->type, false)) {
      char a[128], b[128];
      qv_type_to_string(chunks[0]->type, a, sizeof a);
      qv_type_to_string(chunks[c]->type, b, sizeof b);
      return qv_error_set(err, QV_ETYPE, "take_chunked: chunk %lld has type %s, expected %s",
                          (long long)c, b, a);
    }
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t c = chunk_index[i];
    if (c < 0 || c >= n_chunks)
      return qv_error_set(err, QV_ERANGE,
                          "take_chunked: chunk index %lld (position %lld) is out of range for "
                          "%lld chunks",
                          (long long)c, (long long)i, (long long)n_chunks);
    if (row_index[i] < 0 || row_index[i] >= chunks[c]->length)
      return qv_error_set(err, QV_ERANGE,
                          "take_chunked: row %lld (position %lld) is out of range for chunk "
                          "%lld of length %lld",
                          (long long)row_index[i], (long long)i, (long long)c,
                          (long long)chunks[c]->length);
  }
  gsrc s = {chunks, n_chunks, n_chunks > 1 ? chunk_index : NULL, row_index, n, NULL, NULL};
  return guarded_gather(&s, out, err);
}
