/*
 * parquet_write.c — the Parquet writer (quiver/parquet_writer.h): record
 * batches are kept until a row group is full; then each leaf column is
 * shredded into definition/repetition levels and leaf value indices,
 * encoded into pages (RLE_DICTIONARY with fallback to PLAIN, data page v1
 * or v2, levels in the RLE/bit-packing hybrid), compressed, and written
 * through the atomic file helper, dictionary page first; the footer
 * (thrift compact FileMetaData with the ARROW:schema key) closes the file.
 * Formats layer.
 */
#include <brotli/encode.h>
#include <fcntl.h>
#include <lz4.h>
#include <math.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zlib.h>
#include <zstd.h>

#include "core/atomic_internal.h"
#include "core/parallel_internal.h"
#include "formats/parquet_format.h"
#include "formats/parquet_write_internal.h"
#include "formats/thrift_write.h"
#include "ipc/ipc_internal.h"
#include "quiver/cdata.h"
#include "quiver/parquet_writer.h"

/* ------------------------------------------------------------- vectors */

typedef struct u32vec {
  uint32_t *p;
  int64_t n, cap;
} u32vec;

typedef struct i64vec {
  int64_t *p;
  int64_t n, cap;
} i64vec;

static bool u32_grow(u32vec *v) {
  int64_t cap = v->cap ? v->cap * 2 : 1024;
  uint32_t *p = realloc(v->p, sizeof *p * (size_t)cap);
  if (p == NULL) return false;
  v->p = p;
  v->cap = cap;
  return true;
}

static inline bool u32_push(u32vec *v, uint32_t x) {
  if (v->n == v->cap && !u32_grow(v)) return false;
  v->p[v->n++] = x;
  return true;
}

static inline bool i64_push(i64vec *v, int64_t x) {
  if (v->n == v->cap) {
    int64_t cap = v->cap ? v->cap * 2 : 1024;
    int64_t *p = realloc(v->p, sizeof *p * (size_t)cap);
    if (p == NULL) return false;
    v->p = p;
    v->cap = cap;
  }
  v->p[v->n++] = x;
  return true;
}

/* ----------------------------------------------------------- footer data */

typedef struct chunk_meta {
  int64_t file_offset;
  int64_t data_page_offset;
  int64_t dict_page_offset; /* -1: none */
  int64_t total_uncompressed, total_compressed;
  int64_t num_values;
  uint32_t encodings; /* bit per qv_pq_encoding */
  bool has_minmax;
  int64_t null_count;
  uint8_t *min, *max; /* owned */
  int32_t min_len, max_len;
} chunk_meta;

typedef struct rg_meta {
  int64_t num_rows, file_offset, total_byte_size, total_compressed;
  chunk_meta *cols;
} rg_meta;

/* ------------------------------------------------------- column encoder */

typedef struct col_state {
  const qv_pw_leaf *lf;
  bool use_dict;  /* dictionary allowed for this chunk */
  bool dict_mode; /* pages are dictionary-encoded (until fallback) */
  bool dict_used; /* some page was dictionary-encoded */
  bool fallback_pending;
  int64_t dict_seen;     /* non-null values given to the dictionary */
  int64_t expect_values; /* estimate of the chunk's leaf values */
  /* the current page */
  u32vec defs, reps, idx;
  qv_tw plain;
  int64_t page_values, page_rows, page_nulls, page_nonnull;
  /* the dictionary */
  qv_tw dict;
  int64_t dict_n, dict_cap;
  int dict_bw; /* bits of dict_n (the page size estimate) */
  int64_t *dict_off;
  int32_t *dict_len;
  uint64_t *dict_hash;
  /* two words a slot: values of 4 or 8 bytes (`fixed`) as the value and
   * id + 1; other values as the hash's high 32 bits | (id + 1), and 0;
   * id + 1 == 0: empty */
  uint64_t *ht;
  bool fixed;
  int64_t ht_cap;
  /* the shredder's output for one batch */
  u32vec sdefs, sreps;
  i64vec svidx;
  /* the chunk's dictionary page (header + body) and data pages, and scratch */
  qv_tw dictpage, pages, hdr, lev, vals, comp;
  chunk_meta *meta;
  uint8_t *min, *max;
  int32_t min_len, max_len, min_cap, max_cap;
  bool has_minmax;
} col_state;

/* One encoded column chunk of the row group being written. */
typedef struct col_out {
  qv_tw dictpage, pages;
  qv_status st;
  qv_error err;
} col_out;

struct qv_parquet_writer {
  qv_schema *schema;
  qv_parquet_write_options opt;
  qv_pw_schema ps;
  qv_atomic_file *file;
  int64_t pos;
  qv_array **pending;
  int64_t n_pending, cap_pending, pending_rows;
  int64_t rows;
  rg_meta *rgs;
  int64_t n_rgs, cap_rgs;
  bool failed;
  qv_pool *pool; /* of n_cs threads (1: the caller's only) */
  col_state *cs; /* one per thread */
  int n_cs;
  col_out *outs; /* one per leaf */
};

static const uint8_t kEmpty[8];

static qv_status pw_oom(qv_error *err) {
  return qv_error_set(err, QV_ENOMEM, "parquet writer: out of memory");
}

/* ---------------------------------------------------------- value access */

static inline const uint8_t *buf_data(const qv_array *a, int i) {
  return a->buffers[i] ? a->buffers[i]->data : kEmpty;
}

/* The Parquet physical bytes of leaf value k (physical index) of L. */
static inline const uint8_t *leaf_value(const qv_pw_leaf *lf, const qv_array *L, int64_t k,
                                        uint8_t *tmp, int32_t *len) {
  switch (lf->conv) {
    case QV_PW_CV_INT32: {
      int32_t x = (int32_t)qv_load_int(buf_data(L, 1), lf->src_width, lf->src_unsigned, k);
      memcpy(tmp, &x, 4);
      *len = 4;
      return tmp;
    }
    case QV_PW_CV_DATE64: {
      int64_t v;
      memcpy(&v, buf_data(L, 1) + k * 8, 8);
      int64_t d = v / 86400000;
      if (v % 86400000 < 0) d--;
      int32_t x = (int32_t)d;
      memcpy(tmp, &x, 4);
      *len = 4;
      return tmp;
    }
    case QV_PW_CV_TIME32_S: {
      int32_t x;
      memcpy(&x, buf_data(L, 1) + k * 4, 4);
      x = (int32_t)((uint32_t)x * 1000u);
      memcpy(tmp, &x, 4);
      *len = 4;
      return tmp;
    }
    case QV_PW_CV_TS_S: {
      int64_t x;
      memcpy(&x, buf_data(L, 1) + k * 8, 8);
      x = (int64_t)((uint64_t)x * 1000u);
      memcpy(tmp, &x, 8);
      *len = 8;
      return tmp;
    }
    case QV_PW_CV_INT64:
    case QV_PW_CV_DOUBLE: *len = 8; return buf_data(L, 1) + k * 8;
    case QV_PW_CV_FLOAT: *len = 4; return buf_data(L, 1) + k * 4;
    case QV_PW_CV_HALF: *len = 2; return buf_data(L, 1) + k * 2;
    case QV_PW_CV_DECIMAL: {
      const uint8_t *s = buf_data(L, 1) + k * lf->src_width;
      int32_t n = lf->type_length;
      for (int32_t i = 0; i < n; i++) tmp[i] = s[n - 1 - i];
      *len = n;
      return tmp;
    }
    case QV_PW_CV_BINARY:
    case QV_PW_CV_LARGE_BINARY: {
      int bytes = lf->conv == QV_PW_CV_BINARY ? 4 : 8;
      int64_t s = qv_load_offset(buf_data(L, 1), bytes, k);
      int64_t e = qv_load_offset(buf_data(L, 1), bytes, k + 1);
      *len = (int32_t)(e - s);
      return buf_data(L, 2) + s;
    }
    case QV_PW_CV_VIEW: {
      const uint8_t *p = kEmpty;
      int32_t n = 0;
      if (!qv_array_view_bytes(L, k - L->offset, &p, &n)) n = 0;
      *len = n;
      return p;
    }
    case QV_PW_CV_FSB: *len = lf->type_length; return buf_data(L, 1) + k * lf->type_length;
    case QV_PW_CV_BOOL:
      tmp[0] = qv_bit_get(buf_data(L, 1), k) ? 1 : 0;
      *len = 1;
      return tmp;
    default: *len = 0; return kEmpty;
  }
}

/* ------------------------------------------------------------ statistics */

static bool is_nan(qv_pw_order o, const uint8_t *p) {
  if (o == QV_PW_ORD_FLOAT) {
    float f;
    memcpy(&f, p, 4);
    return isnan(f);
  }
  if (o == QV_PW_ORD_DOUBLE) {
    double d;
    memcpy(&d, p, 8);
    return isnan(d);
  }
  if (o == QV_PW_ORD_HALF) {
    uint16_t h;
    memcpy(&h, p, 2);
    return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
  }
  return false;
}

/* <0, 0, >0 as a orders before, with, after b. The numeric orders differ
 * only in the C type the bytes are read as. */
#define PW_CMP_AS(T)                                                                               \
  do {                                                                                             \
    T x, y;                                                                                        \
    memcpy(&x, a, sizeof x);                                                                       \
    memcpy(&y, b, sizeof y);                                                                       \
    return (x > y) - (x < y);                                                                      \
  } while (0)

static int cmp_values(qv_pw_order o, const uint8_t *a, int32_t alen, const uint8_t *b,
                      int32_t blen) {
  switch (o) {
    case QV_PW_ORD_BOOL: return (int)a[0] - (int)b[0];
    case QV_PW_ORD_I32: PW_CMP_AS(int32_t);
    case QV_PW_ORD_U32: PW_CMP_AS(uint32_t);
    case QV_PW_ORD_I64: PW_CMP_AS(int64_t);
    case QV_PW_ORD_U64: PW_CMP_AS(uint64_t);
    case QV_PW_ORD_FLOAT: PW_CMP_AS(float);
    case QV_PW_ORD_DOUBLE: PW_CMP_AS(double);
    case QV_PW_ORD_HALF: {
      uint16_t x, y;
      memcpy(&x, a, 2);
      memcpy(&y, b, 2);
      double dx = qv_half_to_double(x), dy = qv_half_to_double(y);
      return (dx > dy) - (dx < dy);
    }
    case QV_PW_ORD_DECIMAL: {
      if ((int8_t)a[0] != (int8_t)b[0]) return (int8_t)a[0] < (int8_t)b[0] ? -1 : 1;
      return memcmp(a + 1, b + 1, (size_t)alen - 1);
    }
    case QV_PW_ORD_BYTES: {
      int32_t n = alen < blen ? alen : blen;
      int c = n > 0 ? memcmp(a, b, (size_t)n) : 0;
      if (c != 0) return c;
      return (alen > blen) - (alen < blen);
    }
    default: return 0;
  }
}

static bool set_bytes(uint8_t **dst, int32_t *dlen, int32_t *dcap, const uint8_t *p, int32_t n) {
  if (n > *dcap) {
    int32_t cap = n < 16 ? 16 : n;
    uint8_t *q = realloc(*dst, (size_t)cap);
    if (q == NULL) return false;
    *dst = q;
    *dcap = cap;
  }
  if (n > 0) memcpy(*dst, p, (size_t)n);
  *dlen = n;
  return true;
}

static inline bool stats_update(col_state *c, const uint8_t *p, int32_t n) {
  qv_pw_order o = c->lf->order;
  if (o == QV_PW_ORD_NONE || is_nan(o, p)) return true;
  if (!c->has_minmax) {
    c->has_minmax = true;
    return set_bytes(&c->min, &c->min_len, &c->min_cap, p, n) &&
           set_bytes(&c->max, &c->max_len, &c->max_cap, p, n);
  }
  if (cmp_values(o, p, n, c->min, c->min_len) < 0 &&
      !set_bytes(&c->min, &c->min_len, &c->min_cap, p, n))
    return false;
  if (cmp_values(o, p, n, c->max, c->max_len) > 0 &&
      !set_bytes(&c->max, &c->max_len, &c->max_cap, p, n))
    return false;
  return true;
}

/* ------------------------------------------------------------ dictionary */

/* The value of a fixed-width dictionary entry (4 or 8 bytes) as a word. */
static inline uint64_t fixed_word(const uint8_t *p, int32_t n) {
  if (n == 8) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
  }
  uint32_t y;
  memcpy(&y, p, 4);
  return y;
}

/* Put id (hash h) in an empty slot of a table of cap slots. */
static inline void ht_put(const col_state *c, uint64_t *ht, int64_t cap, int64_t id, uint64_t h) {
  uint64_t mask = (uint64_t)(cap - 1);
  uint64_t s = h & mask;
  if (c->fixed) {
    while (ht[2 * s + 1]) s = (s + 1) & mask;
    ht[2 * s] = fixed_word(c->dict.data + c->dict_off[id], c->dict_len[id]);
    ht[2 * s + 1] = (uint64_t)(id + 1);
  } else {
    while (ht[2 * s]) s = (s + 1) & mask;
    ht[2 * s] = (h & 0xFFFFFFFF00000000ull) | (uint64_t)(id + 1);
  }
}

static bool dict_rehash(col_state *c) {
  int64_t cap = c->ht_cap ? c->ht_cap * 2 : 1024;
  uint64_t *ht = calloc((size_t)cap * 2, sizeof *ht);
  if (ht == NULL) return false;
  for (int64_t id = 0; id < c->dict_n; id++) ht_put(c, ht, cap, id, c->dict_hash[id]);
  free(c->ht);
  c->ht = ht;
  c->ht_cap = cap;
  return true;
}

/* The hash of a value: a multiplicative one of the bits for 4- and 8-byte
 * values, xxhash for the others. */
static inline uint64_t hash_word(uint64_t x) {
  x ^= x >> 33; /* murmur3's finaliser */
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  return x ^ (x >> 33);
}

static inline uint64_t dict_hash_of(const uint8_t *p, int32_t n) {
  if (n == 8 || n == 4) {
    uint64_t x = 0;
    memcpy(&x, p, (size_t)n);
    return hash_word(x);
  }
  return XXH3_64bits(p, (size_t)n);
}

/* The index of the value of hash h in the dictionary, or -1. */
static inline int64_t dict_probe(const col_state *c, const uint8_t *p, int32_t n, uint64_t h) {
  if (c->ht_cap == 0) return -1;
  uint64_t mask = (uint64_t)(c->ht_cap - 1);
  uint64_t s = h & mask;
  if (c->fixed) {
    /* one slot holds the value: no loads through the dictionary */
    uint64_t v = fixed_word(p, n);
    for (;;) {
      uint64_t id1 = c->ht[2 * s + 1];
      if (id1 == 0) return -1;
      if (c->ht[2 * s] == v) return (int64_t)id1 - 1;
      s = (s + 1) & mask;
    }
  }
  uint64_t tag = h & 0xFFFFFFFF00000000ull;
  for (;;) {
    uint64_t e = c->ht[2 * s];
    if (e == 0) return -1;
    int64_t id = (int64_t)(e & 0xFFFFFFFFu) - 1;
    if ((e & 0xFFFFFFFF00000000ull) == tag && c->dict_len[id] == n) {
      const uint8_t *q = c->dict.data + c->dict_off[id];
      if (n == 8) {
        uint64_t x, y;
        memcpy(&x, p, 8);
        memcpy(&y, q, 8);
        if (x == y) return id;
      } else if (memcmp(q, p, (size_t)n) == 0) {
        return id;
      }
    }
    s = (s + 1) & mask;
  }
}

/* Add a value of hash h that is not in the dictionary: its index, or -1
 * on OOM. */
static int64_t dict_insert(col_state *c, const uint8_t *p, int32_t n, uint64_t h) {
  if ((c->dict_n + 1) * 2 > c->ht_cap && !dict_rehash(c)) return -1;
  if (c->dict_n == c->dict_cap) {
    int64_t cap = c->dict_cap ? c->dict_cap * 2 : 1024;
    int64_t *off = realloc(c->dict_off, sizeof *off * (size_t)cap);
    if (off) c->dict_off = off;
    int32_t *len = realloc(c->dict_len, sizeof *len * (size_t)cap);
    if (len) c->dict_len = len;
    uint64_t *hs = realloc(c->dict_hash, sizeof *hs * (size_t)cap);
    if (hs) c->dict_hash = hs;
    if (!off || !len || !hs) return -1;
    c->dict_cap = cap;
  }
  int64_t id = c->dict_n++;
  while (((int64_t)1 << c->dict_bw) <= c->dict_n) c->dict_bw++;
  if (c->lf->ptype == QV_PQ_BYTE_ARRAY) {
    uint32_t l = (uint32_t)n;
    qv_tw_bytes(&c->dict, &l, 4);
  }
  c->dict_off[id] = c->dict.size;
  qv_tw_bytes(&c->dict, p, n);
  if (!qv_tw_ok(&c->dict)) return -1;
  c->dict_len[id] = n;
  c->dict_hash[id] = h;
  ht_put(c, c->ht, c->ht_cap, id, h);
  if (!stats_update(c, p, n)) return -1;
  return id;
}

/* Index of the value in the dictionary, inserting it; -1 on OOM. */
static inline int64_t dict_find(col_state *c, const uint8_t *p, int32_t n) {
  uint64_t h = dict_hash_of(p, n);
  int64_t id = dict_probe(c, p, n, h);
  return id >= 0 ? id : dict_insert(c, p, n, h);
}

/* Non-null values after which a chunk's dictionary is judged: nearly
 * unique values that would overflow the dictionary page limit anyway go
 * PLAIN then, instead of filling the dictionary first. */
#define PW_DICT_PROBE 4096

/* Whether the first PW_DICT_PROBE values say the chunk's dictionary would
 * overflow: three in four of them distinct and the dictionary's bytes,
 * extrapolated to the chunk's values, over the limit. */
static bool dict_hopeless(const qv_parquet_writer *w, const col_state *c) {
  if (c->dict_n * 4 < c->dict_seen * 3) return false;
  double projected = (double)c->dict.size * (double)c->expect_values / (double)c->dict_seen;
  return projected > (double)w->opt.dictionary_page_bytes;
}

/* Stop dictionary-encoding the chunk. While no dictionary-encoded page has
 * been written, the current page's indices become PLAIN values again (the
 * dictionary holds their bytes, BYTE_ARRAY ones after their length) and
 * the chunk has no dictionary page; else the usual fallback at the next
 * row. False on OOM. */
static bool dict_abandon(col_state *c) {
  if (c->dict_used) {
    c->fallback_pending = true;
    return true;
  }
  qv_tw_clear(&c->plain);
  int pre = c->lf->ptype == QV_PQ_BYTE_ARRAY ? 4 : 0;
  for (int64_t i = 0; i < c->idx.n; i++) {
    uint32_t id = c->idx.p[i];
    qv_tw_bytes(&c->plain, c->dict.data + c->dict_off[id] - pre, c->dict_len[id] + pre);
  }
  if (!qv_tw_ok(&c->plain)) return false;
  c->idx.n = 0;
  c->dict_mode = false;
  qv_tw_clear(&c->dict);
  c->dict_n = 0;
  c->dict_bw = 0;
  if (c->ht) memset(c->ht, 0, sizeof *c->ht * 2 * (size_t)c->ht_cap);
  return true;
}

/* ----------------------------------------------------------- compression */

static qv_status pw_compress(const qv_parquet_write_options *o, const uint8_t *src, int64_t n,
                             qv_tw *dst, qv_error *err) {
  qv_tw_clear(dst);
  size_t cap;
  switch (o->codec) {
    case QV_PARQUET_SNAPPY: cap = snappy_max_compressed_length((size_t)n); break;
    case QV_PARQUET_ZSTD: cap = ZSTD_compressBound((size_t)n); break;
    case QV_PARQUET_GZIP: cap = compressBound((uLong)n) + 64; break;
    case QV_PARQUET_BROTLI: cap = BrotliEncoderMaxCompressedSize((size_t)n) + 64; break;
    case QV_PARQUET_LZ4_RAW: cap = (size_t)LZ4_compressBound((int)n); break;
    default: qv_tw_bytes(dst, src, n); return qv_tw_ok(dst) ? QV_OK : pw_oom(err);
  }
  if (n > INT32_MAX)
    return qv_error_set(err, QV_ERANGE,
                        "parquet writer: page of %lld bytes "
                        "is too large",
                        (long long)n);
  /* reserve cap bytes */
  qv_tw_bytes(dst, kEmpty, 1);
  if (!qv_tw_ok(dst)) return pw_oom(err);
  if ((int64_t)cap > dst->cap) {
    uint8_t *p = realloc(dst->data, cap);
    if (p == NULL) return pw_oom(err);
    dst->data = p;
    dst->cap = (int64_t)cap;
  }
  size_t out = cap;
  int level = o->compression_level;
  switch (o->codec) {
    case QV_PARQUET_SNAPPY:
      if (snappy_compress((const char *)src, (size_t)n, (char *)dst->data, &out) != SNAPPY_OK)
        return qv_error_set(err, QV_EIO, "parquet writer: snappy compression failed");
      break;
    case QV_PARQUET_ZSTD:
      out = ZSTD_compress(dst->data, cap, src, (size_t)n, level ? level : 1);
      if (ZSTD_isError(out))
        return qv_error_set(err, QV_EIO, "parquet writer: zstd: %s", ZSTD_getErrorName(out));
      break;
    case QV_PARQUET_GZIP: {
      z_stream z;
      memset(&z, 0, sizeof z);
      if (deflateInit2(&z, level ? level : Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8,
                       Z_DEFAULT_STRATEGY) != Z_OK)
        return qv_error_set(err, QV_EIO, "parquet writer: gzip initialisation failed");
      z.next_in = (Bytef *)src;
      z.avail_in = (uInt)n;
      z.next_out = dst->data;
      z.avail_out = (uInt)cap;
      int rc = deflate(&z, Z_FINISH);
      out = z.total_out;
      deflateEnd(&z);
      if (rc != Z_STREAM_END)
        return qv_error_set(err, QV_EIO, "parquet writer: gzip compression failed");
      break;
    }
    case QV_PARQUET_BROTLI:
      if (!BrotliEncoderCompress(level ? level : 1, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC,
                                 (size_t)n, src, &out, dst->data))
        return qv_error_set(err, QV_EIO, "parquet writer: brotli compression failed");
      break;
    case QV_PARQUET_LZ4_RAW: {
      int r = LZ4_compress_default((const char *)src, (char *)dst->data, (int)n, (int)cap);
      if (r <= 0) return qv_error_set(err, QV_EIO, "parquet writer: lz4 compression failed");
      out = (size_t)r;
      break;
    }
    default: break;
  }
  dst->size = (int64_t)out;
  return QV_OK;
}

/* ----------------------------------------------------------------- pages */

static void page_header(qv_tw *h, int type, int64_t usize, int64_t csize) {
  qv_tw_clear(h);
  qv_tw_struct_begin(h);
  qv_tw_field_i32(h, 1, type);
  qv_tw_field_i32(h, 2, (int32_t)usize);
  qv_tw_field_i32(h, 3, (int32_t)csize);
}

static void put_u32le(qv_tw *w, uint32_t v) { qv_tw_bytes(w, &v, 4); }

static qv_status flush_page(qv_parquet_writer *w, col_state *c, qv_error *err) {
  if (c->page_values == 0) return QV_OK;
  const qv_pw_leaf *lf = c->lf;
  int encoding = c->dict_mode ? QV_PQ_RLE_DICTIONARY : QV_PQ_PLAIN;
  if (c->page_values > INT32_MAX)
    return qv_error_set(err, QV_ERANGE, "parquet writer: page of too many values");
  /* values */
  qv_tw *vals = &c->plain; /* PLAIN: the values as they are */
  if (c->dict_mode) {
    vals = &c->vals;
    qv_tw_clear(vals);
    int bw = qv_pw_bit_width(c->dict_n > 0 ? (uint64_t)(c->dict_n - 1) : 0);
    if (bw == 0) bw = 1;
    uint8_t b = (uint8_t)bw;
    qv_tw_bytes(vals, &b, 1);
    qv_pw_rle_encode_u32(c->idx.p, c->idx.n, bw, vals);
  }
  /* levels */
  qv_tw_clear(&c->lev);
  int64_t rep_len = 0, def_len = 0;
  bool v2 = w->opt.page_version == 2;
  if (lf->max_rep > 0) {
    int64_t at = c->lev.size;
    if (!v2) put_u32le(&c->lev, 0);
    qv_pw_rle_encode_u32(c->reps.p, c->reps.n, qv_pw_bit_width((uint64_t)lf->max_rep), &c->lev);
    rep_len = c->lev.size - at - (v2 ? 0 : 4);
    if (!v2 && qv_tw_ok(&c->lev)) memcpy(c->lev.data + at, &(uint32_t){(uint32_t)rep_len}, 4);
  }
  if (lf->max_def > 0) {
    int64_t at = c->lev.size;
    if (!v2) put_u32le(&c->lev, 0);
    qv_pw_rle_encode_u32(c->defs.p, c->defs.n, qv_pw_bit_width((uint64_t)lf->max_def), &c->lev);
    def_len = c->lev.size - at - (v2 ? 0 : 4);
    if (!v2 && qv_tw_ok(&c->lev)) memcpy(c->lev.data + at, &(uint32_t){(uint32_t)def_len}, 4);
  }
  if (!qv_tw_ok(&c->lev) || !qv_tw_ok(vals)) return pw_oom(err);
  int64_t usize, csize;
  const uint8_t *body2 = NULL;
  int64_t body2_len = 0;
  if (!v2) {
    /* compress levels + values together */
    qv_tw_bytes(&c->lev, vals->data, vals->size);
    if (!qv_tw_ok(&c->lev)) return pw_oom(err);
    QV_RETURN_NOT_OK(pw_compress(&w->opt, c->lev.data, c->lev.size, &c->comp, err));
    usize = c->lev.size;
    csize = c->comp.size;
  } else {
    QV_RETURN_NOT_OK(pw_compress(&w->opt, vals->data, vals->size, &c->comp, err));
    usize = c->lev.size + vals->size;
    csize = c->lev.size + c->comp.size;
    body2 = c->lev.data;
    body2_len = c->lev.size;
  }
  if (usize > INT32_MAX || csize > INT32_MAX)
    return qv_error_set(err, QV_ERANGE, "parquet writer: page of %lld bytes is too large",
                        (long long)usize);
  page_header(&c->hdr, v2 ? QV_PQ_DATA_PAGE_V2 : QV_PQ_DATA_PAGE, usize, csize);
  if (!v2) {
    qv_tw_field_struct(&c->hdr, 5);
    qv_tw_field_i32(&c->hdr, 1, (int32_t)c->page_values);
    qv_tw_field_i32(&c->hdr, 2, encoding);
    qv_tw_field_i32(&c->hdr, 3, QV_PQ_RLE);
    qv_tw_field_i32(&c->hdr, 4, QV_PQ_RLE);
    qv_tw_struct_end(&c->hdr);
  } else {
    qv_tw_field_struct(&c->hdr, 8);
    qv_tw_field_i32(&c->hdr, 1, (int32_t)c->page_values);
    qv_tw_field_i32(&c->hdr, 2, (int32_t)c->page_nulls);
    qv_tw_field_i32(&c->hdr, 3, (int32_t)c->page_rows);
    qv_tw_field_i32(&c->hdr, 4, encoding);
    qv_tw_field_i32(&c->hdr, 5, (int32_t)def_len);
    qv_tw_field_i32(&c->hdr, 6, (int32_t)rep_len);
    qv_tw_field_bool(&c->hdr, 7, w->opt.codec != QV_PARQUET_UNCOMPRESSED);
    qv_tw_struct_end(&c->hdr);
  }
  qv_tw_struct_end(&c->hdr);
  qv_tw_bytes(&c->pages, c->hdr.data, c->hdr.size);
  if (v2) {
    /* v2: rep levels first, then def levels, both uncompressed */
    qv_tw_bytes(&c->pages, body2, body2_len);
  }
  qv_tw_bytes(&c->pages, c->comp.data, c->comp.size);
  if (!qv_tw_ok(&c->hdr) || !qv_tw_ok(&c->pages)) return pw_oom(err);
  chunk_meta *m = c->meta;
  m->total_uncompressed += c->hdr.size + usize;
  m->total_compressed += c->hdr.size + csize;
  m->encodings |= 1u << encoding;
  m->encodings |= 1u << QV_PQ_RLE;
  if (c->dict_mode) c->dict_used = true;
  c->defs.n = c->reps.n = c->idx.n = 0;
  qv_tw_clear(&c->plain);
  c->page_values = c->page_rows = c->page_nulls = c->page_nonnull = 0;
  return QV_OK;
}

static int64_t page_estimate(const col_state *c) {
  if (c->dict_mode) return c->idx.n * c->dict_bw / 8 + c->page_values / 4;
  return c->plain.size + c->page_values / 4;
}

/* One level (definition d, repetition r) and, when d is the maximum, the
 * leaf value at physical index k of L. */
static inline qv_status add_level(qv_parquet_writer *w, col_state *c, const qv_array *L, uint32_t d,
                                  uint32_t r, int64_t k, qv_error *err) {
  const qv_pw_leaf *lf = c->lf;
  if (r == 0) {
    if (c->fallback_pending) {
      QV_RETURN_NOT_OK(flush_page(w, c, err));
      c->fallback_pending = false;
      c->dict_mode = false;
    } else if (c->page_values > 0 && page_estimate(c) >= w->opt.page_bytes) {
      QV_RETURN_NOT_OK(flush_page(w, c, err));
    }
    c->page_rows++;
  }
  if (lf->max_def > 0 && !u32_push(&c->defs, d)) return pw_oom(err);
  if (lf->max_rep > 0 && !u32_push(&c->reps, r)) return pw_oom(err);
  c->page_values++;
  if (d != (uint32_t)lf->max_def) {
    c->page_nulls++;
    c->meta->null_count++;
    return QV_OK;
  }
  uint8_t tmp[32];
  int32_t len;
  const uint8_t *p = leaf_value(lf, L, k, tmp, &len);
  if (lf->conv == QV_PW_CV_BOOL) {
    if ((c->page_nonnull & 7) == 0) {
      qv_tw_bytes(&c->plain, kEmpty, 1);
      if (!qv_tw_ok(&c->plain)) return pw_oom(err);
    }
    if (p[0]) c->plain.data[c->plain.size - 1] |= (uint8_t)(1u << (c->page_nonnull & 7));
    if (!stats_update(c, p, 1)) return pw_oom(err);
  } else if (c->dict_mode) {
    int64_t id = dict_find(c, p, len);
    if (id < 0 || !u32_push(&c->idx, (uint32_t)id)) return pw_oom(err);
    if (c->dict.size > w->opt.dictionary_page_bytes || c->dict_n >= (int64_t)1 << 30) {
      c->fallback_pending = true;
    } else if (++c->dict_seen == PW_DICT_PROBE && dict_hopeless(w, c)) {
      if (!dict_abandon(c)) return pw_oom(err);
      c->page_nonnull++;
      return QV_OK;
    }
  } else {
    if (lf->ptype == QV_PQ_BYTE_ARRAY) put_u32le(&c->plain, (uint32_t)len);
    qv_tw_bytes(&c->plain, p, len);
    if (!qv_tw_ok(&c->plain)) return pw_oom(err);
    if (!stats_update(c, p, len)) return pw_oom(err);
  }
  c->page_nonnull++;
  return QV_OK;
}

/* Levels [*pk, n) of one batch into the pages while the chunk is
 * dictionary-encoded and no fallback is due: add_level's dictionary path
 * in one loop, the vectors' room reserved once. The levels come from the
 * shredder (defs, reps and vidx, the leaf indices of the non-null values;
 * *pvi the next of them) or, for a flat column (!shredded), from its
 * validity bitmap `bits` at the physical indices base + k. Stops before a
 * row that must fall back, or after the value that gave the dictionary
 * up; *pk and *pvi say where. */
static qv_status dict_levels(qv_parquet_writer *w, col_state *c, const qv_array *L, bool shredded,
                             const uint32_t *defs, const uint32_t *reps, const int64_t *vidx,
                             const uint8_t *bits, int64_t base, int64_t *pk, int64_t *pvi,
                             int64_t n, qv_error *err) {
  const qv_pw_leaf *lf = c->lf;
  uint32_t max_def = (uint32_t)lf->max_def;
  int64_t k = *pk, vi = *pvi, m = n - k;
  bool ok = true;
  while (ok && max_def > 0 && c->defs.cap < c->defs.n + m) ok = u32_grow(&c->defs);
  while (ok && reps && c->reps.cap < c->reps.n + m) ok = u32_grow(&c->reps);
  while (ok && c->idx.cap < c->idx.n + m) ok = u32_grow(&c->idx);
  if (!ok) return pw_oom(err);
  /* values copied as they are (4 or 8 bytes) take the inlined probe */
  int32_t raw = 0;
  if (c->fixed && (lf->conv == QV_PW_CV_INT64 || lf->conv == QV_PW_CV_DOUBLE)) raw = 8;
  if (c->fixed && (lf->conv == QV_PW_CV_FLOAT ||
                   (lf->conv == QV_PW_CV_INT32 && lf->src_width == 4 && !lf->dictionary)))
    raw = 4;
  if (raw > 0 && c->ht_cap == 0 && !dict_rehash(c)) return pw_oom(err);
  /* (L is not the leaf when no value is valid: then its buffers go unread) */
  const uint8_t *vals = raw > 0 && L->n_buffers > 1 ? buf_data(L, 1) : kEmpty;
  uint64_t mask = (uint64_t)(c->ht_cap - 1);
  int64_t page_bytes = w->opt.page_bytes;
  qv_status st = QV_OK;
  for (; k < n; k++) {
    uint32_t d, r = reps ? reps[k] : 0;
    if (shredded) d = max_def > 0 ? defs[k] : 0;
    else d = !bits || qv_bit_get(bits, base + k) ? max_def : 0;
    /* a row starts at r == 0: without a branch on it (lists' lengths vary)
     * unless a fallback or a full page is due */
    if (r == 0 && (c->fallback_pending || (c->page_values > 0 && page_estimate(c) >= page_bytes))) {
      if (c->fallback_pending) break;
      st = flush_page(w, c, err);
      if (st != QV_OK) break;
    }
    c->page_rows += r == 0;
    if (max_def > 0) c->defs.p[c->defs.n++] = d;
    if (reps) c->reps.p[c->reps.n++] = r;
    c->page_values++;
    if (d != max_def) {
      c->page_nulls++;
      c->meta->null_count++;
      continue;
    }
    int64_t at = shredded ? vidx[vi++] : base + k;
    int64_t id;
    if (raw > 0) {
      /* a 4- or 8-byte value as it is: hashed and probed here */
      uint64_t v = fixed_word(vals + at * raw, raw);
      uint64_t h = hash_word(v);
      uint64_t s = h & mask;
      for (;;) {
        uint64_t id1 = c->ht[2 * s + 1];
        if (id1 == 0) {
          id = dict_insert(c, (const uint8_t *)&v, raw, h);
          mask = (uint64_t)(c->ht_cap - 1);
          break;
        }
        if (c->ht[2 * s] == v) {
          id = (int64_t)id1 - 1;
          break;
        }
        s = (s + 1) & mask;
      }
    } else {
      uint8_t tmp[32];
      int32_t len;
      const uint8_t *p = leaf_value(lf, L, at, tmp, &len);
      id = dict_find(c, p, len);
    }
    if (id < 0) {
      st = pw_oom(err);
      break;
    }
    c->idx.p[c->idx.n++] = (uint32_t)id;
    c->page_nonnull++;
    if (c->dict.size > w->opt.dictionary_page_bytes || c->dict_n >= (int64_t)1 << 30) {
      c->fallback_pending = true;
    } else if (++c->dict_seen == PW_DICT_PROBE && dict_hopeless(w, c)) {
      if (!dict_abandon(c)) {
        st = pw_oom(err);
        break;
      }
      if (!c->dict_mode) {
        k++;
        break;
      }
    }
  }
  *pk = k;
  *pvi = vi;
  return st;
}

/* Feed the shredded levels and values of one column of one batch into the
 * pages. */
static qv_status consume(qv_parquet_writer *w, col_state *c, const qv_array *L, qv_error *err) {
  const qv_pw_leaf *lf = c->lf;
  int64_t n = lf->max_def > 0 ? c->sdefs.n : c->svidx.n;
  const uint32_t *reps = lf->max_rep > 0 ? c->sreps.p : NULL;
  int64_t vi = 0;
  for (int64_t k = 0; k < n;) {
    if (c->dict_mode && !c->fallback_pending) {
      QV_RETURN_NOT_OK(
          dict_levels(w, c, L, true, c->sdefs.p, reps, c->svidx.p, NULL, 0, &k, &vi, n, err));
      continue;
    }
    uint32_t d = lf->max_def > 0 ? c->sdefs.p[k] : 0;
    uint32_t r = reps ? reps[k] : 0;
    int64_t idx = d == (uint32_t)lf->max_def ? c->svidx.p[vi++] : -1;
    QV_RETURN_NOT_OK(add_level(w, c, L, d, r, idx, err));
    k++;
  }
  return QV_OK;
}

/* Min and max of the valid values [k0, k1) of a fixed-width column, in
 * one typed loop (NaN skipped), folded into the chunk's statistics. */
#define PW_MINMAX(T, ISNAN)                                                                        \
  do {                                                                                             \
    const T *v = (const T *)(const void *)data;                                                    \
    bool any = false;                                                                              \
    T lo = 0, hi = 0;                                                                              \
    for (int64_t k = k0; k < k1; k++) {                                                            \
      if (bits && !qv_bit_get(bits, k)) continue;                                                  \
      T x;                                                                                         \
      memcpy(&x, v + k, sizeof x);                                                                 \
      if (ISNAN) continue;                                                                         \
      if (!any) {                                                                                  \
        lo = hi = x;                                                                               \
        any = true;                                                                                \
      } else {                                                                                     \
        if (x < lo) lo = x;                                                                        \
        if (x > hi) hi = x;                                                                        \
      }                                                                                            \
    }                                                                                              \
    if (any && (!stats_update(c, (const uint8_t *)&lo, (int32_t)sizeof lo) ||                      \
                !stats_update(c, (const uint8_t *)&hi, (int32_t)sizeof hi)))                       \
      return false;                                                                                \
  } while (0)

static bool bulk_stats(col_state *c, const uint8_t *data, const uint8_t *bits, int64_t k0,
                       int64_t k1) {
  switch (c->lf->order) {
    case QV_PW_ORD_I64: PW_MINMAX(int64_t, false); break;
    case QV_PW_ORD_U64: PW_MINMAX(uint64_t, false); break;
    case QV_PW_ORD_DOUBLE: PW_MINMAX(double, isnan(x)); break;
    case QV_PW_ORD_FLOAT: PW_MINMAX(float, isnan(x)); break;
    default: return false;
  }
  return true;
}

/* Rows [k, k1) of a flat 4- or 8-byte column as PLAIN values in bulk:
 * page by page, the values copied in runs, the levels and the statistics
 * in typed loops. */
static qv_status plain_bulk(qv_parquet_writer *w, col_state *c, const qv_array *col,
                            const uint8_t *bits, int64_t k, int64_t k1, qv_error *err) {
  const qv_pw_leaf *lf = c->lf;
  int32_t width = lf->conv == QV_PW_CV_FLOAT ? 4 : 8;
  uint32_t max_def = (uint32_t)lf->max_def;
  const uint8_t *data = buf_data(col, 1);
  while (k < k1) {
    if (c->page_values > 0 && page_estimate(c) >= w->opt.page_bytes)
      QV_RETURN_NOT_OK(flush_page(w, c, err));
    int64_t room = (w->opt.page_bytes - page_estimate(c)) / width;
    int64_t m = k1 - k;
    if (room < 1) room = 1;
    if (m > room) m = room;
    int64_t nonnull = bits ? qv_bitmap_count(bits, k, m) : m;
    /* levels */
    if (max_def > 0) {
      while (c->defs.cap < c->defs.n + m)
        if (!u32_grow(&c->defs)) return pw_oom(err);
      uint32_t *d = c->defs.p + c->defs.n;
      if (bits)
        for (int64_t i = 0; i < m; i++) d[i] = qv_bit_get(bits, k + i) ? max_def : 0;
      else
        for (int64_t i = 0; i < m; i++) d[i] = max_def;
      c->defs.n += m;
    }
    /* values */
    if (nonnull == m) {
      qv_tw_bytes(&c->plain, data + k * width, m * width);
    } else {
      for (int64_t i = k; i < k + m;) {
        while (i < k + m && !qv_bit_get(bits, i)) i++;
        int64_t run = i;
        while (run < k + m && qv_bit_get(bits, run)) run++;
        qv_tw_bytes(&c->plain, data + i * width, (run - i) * width);
        i = run;
      }
    }
    if (!qv_tw_ok(&c->plain)) return pw_oom(err);
    if (!bulk_stats(c, data, bits, k, k + m)) return pw_oom(err);
    c->page_values += m;
    c->page_rows += m;
    c->page_nulls += m - nonnull;
    c->page_nonnull += nonnull;
    c->meta->null_count += m - nonnull;
    k += m;
  }
  return QV_OK;
}

/* Rows [k, k1) of a flat binary or string column (32- or 64-bit offsets)
 * as PLAIN values in bulk: page by page, lengths and bytes written in
 * place, the statistics from the chunk's smallest and largest value. */
static qv_status plain_bulk_binary(qv_parquet_writer *w, col_state *c, const qv_array *col,
                                   const uint8_t *bits, int64_t k, int64_t k1, qv_error *err) {
  const qv_pw_leaf *lf = c->lf;
  int ob = lf->conv == QV_PW_CV_BINARY ? 4 : 8;
  uint32_t max_def = (uint32_t)lf->max_def;
  const uint8_t *offs = buf_data(col, 1), *data = buf_data(col, 2);
  while (k < k1) {
    if (c->page_values > 0 && page_estimate(c) >= w->opt.page_bytes)
      QV_RETURN_NOT_OK(flush_page(w, c, err));
    /* values up to the page's room (at least one row) */
    int64_t room = w->opt.page_bytes - page_estimate(c);
    int64_t m = 0, bytes = 0;
    while (k + m < k1 && (m == 0 || bytes < room)) {
      if (!bits || qv_bit_get(bits, k + m))
        bytes += 4 + qv_load_offset(offs, ob, k + m + 1) - qv_load_offset(offs, ob, k + m);
      m++;
    }
    if (max_def > 0) {
      while (c->defs.cap < c->defs.n + m)
        if (!u32_grow(&c->defs)) return pw_oom(err);
      uint32_t *d = c->defs.p + c->defs.n;
      for (int64_t i = 0; i < m; i++) d[i] = !bits || qv_bit_get(bits, k + i) ? max_def : 0;
      c->defs.n += m;
    }
    int64_t at = c->plain.size;
    if (at + bytes > c->plain.cap) {
      /* grow once, then write in place */
      int64_t cap = c->plain.cap ? c->plain.cap : 256;
      while (cap < at + bytes) cap *= 2;
      uint8_t *p = realloc(c->plain.data, (size_t)cap);
      if (p == NULL) return pw_oom(err);
      c->plain.data = p;
      c->plain.cap = cap;
    }
    uint8_t *out = c->plain.data + at;
    const uint8_t *lo = NULL, *hi = NULL;
    int32_t lo_n = 0, hi_n = 0;
    int64_t nonnull = 0;
    for (int64_t i = k; i < k + m; i++) {
      if (bits && !qv_bit_get(bits, i)) continue;
      int64_t s0 = qv_load_offset(offs, ob, i);
      int32_t len = (int32_t)(qv_load_offset(offs, ob, i + 1) - s0);
      const uint8_t *p = data + s0;
      uint32_t l32 = (uint32_t)len;
      memcpy(out, &l32, 4);
      if (len > 0) memcpy(out + 4, p, (size_t)len);
      out += 4 + len;
      if (nonnull++ == 0) {
        lo = hi = p;
        lo_n = hi_n = len;
      } else {
        /* a first byte above the minimum's (below the maximum's) settles
         * the order without a call */
        if (!(len > 0 && lo_n > 0 && p[0] > lo[0]) &&
            cmp_values(QV_PW_ORD_BYTES, p, len, lo, lo_n) < 0) {
          lo = p;
          lo_n = len;
        }
        if (!(len > 0 && hi_n > 0 && p[0] < hi[0]) &&
            cmp_values(QV_PW_ORD_BYTES, p, len, hi, hi_n) > 0) {
          hi = p;
          hi_n = len;
        }
      }
    }
    c->plain.size = at + bytes;
    if (nonnull > 0 && (!stats_update(c, lo, lo_n) || !stats_update(c, hi, hi_n)))
      return pw_oom(err);
    c->page_values += m;
    c->page_rows += m;
    c->page_nulls += m - nonnull;
    c->page_nonnull += nonnull;
    c->meta->null_count += m - nonnull;
    k += m;
  }
  return QV_OK;
}

/* A top-level primitive column: rows [base, base + n) of col straight
 * into the pages, without shredding; once a chunk is PLAIN, 4- and 8-byte
 * numbers go in bulk. */
static qv_status consume_flat(qv_parquet_writer *w, col_state *c, const qv_array *col, int64_t base,
                              int64_t n, qv_error *err) {
  const qv_pw_leaf *lf = c->lf;
  uint32_t max_def = (uint32_t)lf->max_def;
  const uint8_t *bits = max_def > 0 && col->buffers[0] ? col->buffers[0]->data : NULL;
  int64_t k0 = col->offset + base;
  bool bulk =
      (lf->conv == QV_PW_CV_INT64 || lf->conv == QV_PW_CV_DOUBLE || lf->conv == QV_PW_CV_FLOAT) &&
      (lf->order == QV_PW_ORD_I64 || lf->order == QV_PW_ORD_U64 || lf->order == QV_PW_ORD_DOUBLE ||
       lf->order == QV_PW_ORD_FLOAT);
  bool bulk_binary = lf->conv == QV_PW_CV_BINARY || lf->conv == QV_PW_CV_LARGE_BINARY;
  for (int64_t k = k0; k < k0 + n;) {
    if (bulk && !c->dict_mode) return plain_bulk(w, c, col, bits, k, k0 + n, err);
    if (bulk_binary && !c->dict_mode) return plain_bulk_binary(w, c, col, bits, k, k0 + n, err);
    if (c->dict_mode && !c->fallback_pending) {
      int64_t j = k - k0, vi = 0;
      QV_RETURN_NOT_OK(dict_levels(w, c, col, false, NULL, NULL, NULL, bits, k0, &j, &vi, n, err));
      k = k0 + j;
      continue;
    }
    bool valid = bits == NULL || qv_bit_get(bits, k);
    QV_RETURN_NOT_OK(add_level(w, c, col, valid ? max_def : 0, 0, valid ? k : -1, err));
    k++;
  }
  return QV_OK;
}

/* --------------------------------------------------------------- shredder */

typedef struct shred_ctx {
  col_state *c;
  const qv_pw_leaf *lf;
  const qv_array *L;
  bool failed;
} shred_ctx;

static inline void emit(shred_ctx *s, uint32_t def, uint32_t rep, int64_t k) {
  col_state *c = s->c;
  bool ok = true;
  if (s->lf->max_def > 0) ok &= u32_push(&c->sdefs, def);
  if (s->lf->max_rep > 0) ok &= u32_push(&c->sreps, rep);
  if (k >= 0) ok &= i64_push(&c->svidx, k);
  if (!ok) s->failed = true;
}

static void shred(shred_ctx *s, const qv_array *a, int64_t i, int32_t si, uint32_t def,
                  uint32_t rep) {
  const qv_pw_step *st = &s->lf->steps[si];
  if (st->nullable) {
    bool valid = a->type->id != QV_NA && qv_array_is_valid(a, i);
    if (!valid) {
      emit(s, def, rep, -1);
      return;
    }
    def++;
  }
  switch (st->kind) {
    case QV_PW_STEP_LEAF: {
      int64_t k = a->offset + i;
      if (s->lf->dictionary) {
        s->L = a->dictionary;
        k = a->dictionary->offset + qv_array_int_at(a, i);
      } else {
        s->L = a;
      }
      emit(s, def, rep, k);
      return;
    }
    case QV_PW_STEP_STRUCT:
      shred(s, a->children[st->child], a->offset + i, si + 1, def, rep);
      return;
    case QV_PW_STEP_LIST: {
      int64_t start, end;
      switch (a->type->id) {
        case QV_FIXED_SIZE_LIST:
          start = (a->offset + i) * a->type->list_size;
          end = start + a->type->list_size;
          break;
        case QV_LIST_VIEW:
        case QV_LARGE_LIST_VIEW: {
          int bytes = a->type->id == QV_LIST_VIEW ? 4 : 8;
          start = qv_load_offset(buf_data(a, 1), bytes, a->offset + i);
          end = start + qv_load_offset(buf_data(a, 2), bytes, a->offset + i);
          break;
        }
        default:
          start = qv_array_offset_at(a, i);
          end = qv_array_offset_at(a, i + 1);
          break;
      }
      if (start >= end) {
        emit(s, def, rep, -1);
        return;
      }
      const qv_array *child = a->children[0];
      const qv_pw_step *next = &s->lf->steps[si + 1];
      if (next->kind == QV_PW_STEP_LEAF && !s->lf->dictionary && child->type->id != QV_NA) {
        /* a list of primitives: the elements without a call each */
        s->L = child;
        const uint8_t *bits = next->nullable && child->buffers[0] ? child->buffers[0]->data : NULL;
        uint32_t d_valid = def + 1 + (next->nullable ? 1 : 0);
        col_state *c = s->c;
        int64_t m = end - start;
        /* room for every element once, then written without checks */
        bool ok = true;
        while (ok && c->sdefs.cap < c->sdefs.n + m) ok = u32_grow(&c->sdefs);
        while (ok && c->sreps.cap < c->sreps.n + m) ok = u32_grow(&c->sreps);
        if (!ok) {
          s->failed = true;
          return;
        }
        for (int64_t j = start; j < end; j++) {
          int64_t k = child->offset + j;
          bool valid = !bits || qv_bit_get(bits, k);
          c->sdefs.p[c->sdefs.n++] = valid ? d_valid : def + 1;
          c->sreps.p[c->sreps.n++] = j == start ? rep : (uint32_t)st->rep;
          if (valid && !i64_push(&c->svidx, k)) s->failed = true;
        }
        return;
      }
      for (int64_t j = start; j < end && !s->failed; j++)
        shred(s, child, j, si + 1, def + 1, j == start ? rep : (uint32_t)st->rep);
      return;
    }
  }
}

/* shred_batch for a top-level list (32- or 64-bit offsets) of a
 * primitive: the rows in one loop, the room for every level and index
 * reserved once (the rows' elements, plus one level a row). The same
 * levels as shred. 1: done; 0: OOM; -1: offsets that do not increase
 * (more elements than the reserved room), for shred to take. */
static int shred_list_of_primitive(col_state *c, const qv_pw_leaf *lf, const qv_array *a,
                                   int64_t base, int64_t rows) {
  const qv_pw_step *st = &lf->steps[0], *next = &lf->steps[1];
  const qv_array *child = a->children[0];
  if (rows == 0) return 1;
  int64_t elems = qv_array_offset_at(a, base + rows) - qv_array_offset_at(a, base);
  if (elems < 0) elems = 0;
  bool ok = true;
  while (ok && c->sdefs.cap < c->sdefs.n + elems + rows) ok = u32_grow(&c->sdefs);
  while (ok && c->sreps.cap < c->sreps.n + elems + rows) ok = u32_grow(&c->sreps);
  while (ok && c->svidx.cap < c->svidx.n + elems) {
    int64_t cap = c->svidx.cap ? c->svidx.cap * 2 : 1024;
    int64_t *p = realloc(c->svidx.p, sizeof *p * (size_t)cap);
    if (p == NULL) ok = false;
    else {
      c->svidx.p = p;
      c->svidx.cap = cap;
    }
  }
  if (!ok) return 0;
  const uint8_t *bits = next->nullable && child->buffers[0] ? child->buffers[0]->data : NULL;
  uint32_t *defs = c->sdefs.p, *reps = c->sreps.p;
  int64_t *vidx = c->svidx.p;
  int64_t nd = c->sdefs.n, nv = c->svidx.n, room = elems;
  uint32_t inner_rep = (uint32_t)st->rep;
  int64_t end = qv_array_offset_at(a, base);
  for (int64_t i = base; i < base + rows; i++) {
    int64_t start = end;
    end = qv_array_offset_at(a, i + 1);
    uint32_t def = 0;
    if (st->nullable) {
      if (!qv_array_is_valid(a, i)) {
        defs[nd] = 0;
        reps[nd++] = 0;
        continue;
      }
      def = 1;
    }
    if (start >= end) {
      defs[nd] = def;
      reps[nd++] = 0;
      continue;
    }
    if (end - start > room) return -1;
    room -= end - start;
    uint32_t d_valid = def + 1 + (next->nullable ? 1 : 0);
    for (int64_t j = start; j < end; j++) {
      int64_t k = child->offset + j;
      bool valid = !bits || qv_bit_get(bits, k);
      defs[nd] = valid ? d_valid : def + 1;
      reps[nd++] = j == start ? 0 : inner_rep;
      if (valid) vidx[nv++] = k;
    }
  }
  c->sdefs.n = c->sreps.n = nd;
  c->svidx.n = nv;
  return 1;
}

/* Levels and leaf indices of column lf over batch rows [0, batch->length). */
static qv_status shred_batch(col_state *c, const qv_pw_leaf *lf, const qv_array *batch,
                             const qv_array **L, qv_error *err) {
  c->sdefs.n = c->sreps.n = c->svidx.n = 0;
  shred_ctx s = {c, lf, NULL, false};
  const qv_array *col = batch->children[lf->column];
  int64_t base = batch->offset;
  if (lf->n_steps == 2 && lf->steps[0].kind == QV_PW_STEP_LIST &&
      lf->steps[1].kind == QV_PW_STEP_LEAF && !lf->dictionary &&
      (col->type->id == QV_LIST || col->type->id == QV_LARGE_LIST) &&
      col->children[0]->type->id != QV_NA) {
    int r = shred_list_of_primitive(c, lf, col, base, batch->length);
    if (r == 0) return pw_oom(err);
    if (r == 1) {
      *L = col->children[0];
      return QV_OK;
    }
    c->sdefs.n = c->sreps.n = c->svidx.n = 0;
  }
  for (int64_t i = 0; i < batch->length && !s.failed; i++) shred(&s, col, base + i, 0, 0, 0);
  if (s.failed) return pw_oom(err);
  *L = s.L ? s.L : col;
  return QV_OK;
}

/* ----------------------------------------------------------- row groups */

static void col_free(col_state *c) {
  free(c->sdefs.p);
  free(c->sreps.p);
  free(c->svidx.p);
  qv_tw_reset(&c->dictpage);
  free(c->defs.p);
  free(c->reps.p);
  free(c->idx.p);
  qv_tw_reset(&c->plain);
  qv_tw_reset(&c->dict);
  free(c->dict_off);
  free(c->dict_len);
  free(c->dict_hash);
  free(c->ht);
  qv_tw_reset(&c->pages);
  qv_tw_reset(&c->hdr);
  qv_tw_reset(&c->lev);
  qv_tw_reset(&c->vals);
  qv_tw_reset(&c->comp);
  free(c->min);
  free(c->max);
  memset(c, 0, sizeof *c);
}

/* Reset for a new chunk, keeping the allocations. */
static void col_begin(qv_parquet_writer *w, col_state *c, const qv_pw_leaf *lf, chunk_meta *m) {
  c->lf = lf;
  c->use_dict = !w->opt.no_dictionary && lf->conv != QV_PW_CV_BOOL && lf->conv != QV_PW_CV_NULL;
  c->dict_mode = c->use_dict;
  c->fixed = lf->ptype == QV_PQ_INT32 || lf->ptype == QV_PQ_INT64 || lf->ptype == QV_PQ_FLOAT ||
             lf->ptype == QV_PQ_DOUBLE;
  c->dict_used = false;
  c->fallback_pending = false;
  c->dict_seen = 0;
  c->expect_values = w->pending_rows;
  c->defs.n = c->reps.n = c->idx.n = 0;
  qv_tw_clear(&c->plain);
  c->page_values = c->page_rows = c->page_nulls = c->page_nonnull = 0;
  qv_tw_clear(&c->dict);
  c->dict_n = 0;
  c->dict_bw = 0;
  if (c->ht_cap > 1024) {
    /* a table that an earlier chunk grew starts small again: a small
     * dictionary's slots stay few and in cache */
    free(c->ht);
    c->ht = NULL;
    c->ht_cap = 0;
  }
  if (c->ht) memset(c->ht, 0, sizeof *c->ht * 2 * (size_t)c->ht_cap);
  qv_tw_clear(&c->pages);
  qv_tw_clear(&c->dictpage);
  c->meta = m;
  c->has_minmax = false;
  c->min_len = c->max_len = 0;
  m->dict_page_offset = -1;
}

static qv_status file_write(qv_parquet_writer *w, const void *p, int64_t n, qv_error *err) {
  if (n == 0) return QV_OK;
  QV_RETURN_NOT_OK(qv_atomic_file_write(w->file, p, n, err));
  w->pos += n;
  return QV_OK;
}

static qv_status col_finish(qv_parquet_writer *w, col_state *c, qv_error *err) {
  QV_RETURN_NOT_OK(flush_page(w, c, err));
  chunk_meta *m = c->meta;
  if (c->dict_used) {
    QV_RETURN_NOT_OK(pw_compress(&w->opt, c->dict.data, c->dict.size, &c->comp, err));
    page_header(&c->hdr, QV_PQ_DICTIONARY_PAGE, c->dict.size, c->comp.size);
    qv_tw_field_struct(&c->hdr, 7);
    qv_tw_field_i32(&c->hdr, 1, (int32_t)c->dict_n);
    qv_tw_field_i32(&c->hdr, 2, QV_PQ_PLAIN);
    qv_tw_struct_end(&c->hdr);
    qv_tw_struct_end(&c->hdr);
    m->total_uncompressed += c->hdr.size + c->dict.size;
    m->total_compressed += c->hdr.size + c->comp.size;
    m->encodings |= 1u << QV_PQ_PLAIN;
    qv_tw_bytes(&c->dictpage, c->hdr.data, c->hdr.size);
    qv_tw_bytes(&c->dictpage, c->comp.data, c->comp.size);
    if (!qv_tw_ok(&c->hdr) || !qv_tw_ok(&c->dictpage)) return pw_oom(err);
  }
  if (c->has_minmax && c->min_len <= 4096 && c->max_len <= 4096 && !w->opt.no_statistics) {
    /* as Arrow: a zero minimum is -0.0, a zero maximum +0.0 */
    if (c->lf->order == QV_PW_ORD_DOUBLE || c->lf->order == QV_PW_ORD_FLOAT) {
      bool dbl = c->lf->order == QV_PW_ORD_DOUBLE;
      double lo, hi;
      if (dbl) {
        memcpy(&lo, c->min, 8);
        memcpy(&hi, c->max, 8);
      } else {
        float f;
        memcpy(&f, c->min, 4);
        lo = f;
        memcpy(&f, c->max, 4);
        hi = f;
      }
      if (lo == 0.0) {
        if (dbl) memcpy(c->min, &(double){-0.0}, 8);
        else memcpy(c->min, &(float){-0.0f}, 4);
      }
      if (hi == 0.0) {
        if (dbl) memcpy(c->max, &(double){0.0}, 8);
        else memcpy(c->max, &(float){0.0f}, 4);
      }
    }
    m->min = malloc((size_t)c->min_len + 1);
    m->max = malloc((size_t)c->max_len + 1);
    if (m->min == NULL || m->max == NULL) return pw_oom(err);
    if (c->min_len > 0) memcpy(m->min, c->min, (size_t)c->min_len);
    if (c->max_len > 0) memcpy(m->max, c->max, (size_t)c->max_len);
    m->min_len = c->min_len;
    m->max_len = c->max_len;
    m->has_minmax = true;
  }
  return QV_OK;
}

/* Encode leaf column li of the pending batches on thread `worker`'s state
 * into w->outs[li]. */
static void encode_column(void *ctx, int64_t li, int worker) {
  qv_parquet_writer *w = ctx;
  col_out *out = &w->outs[li];
  qv_error *err = &out->err;
  const qv_pw_leaf *lf = &w->ps.leaves[li];
  col_state *c = &w->cs[worker];
  col_begin(w, c, lf, &w->rgs[w->n_rgs - 1].cols[li]);
  qv_status st = QV_OK;
  bool flat = lf->n_steps == 1 && !lf->dictionary && lf->conv != QV_PW_CV_NULL;
  for (int64_t b = 0; b < w->n_pending && st == QV_OK; b++) {
    const qv_array *batch = w->pending[b];
    if (flat) {
      st = consume_flat(w, c, batch->children[lf->column], batch->offset, batch->length, err);
      c->meta->num_values += batch->length;
    } else {
      const qv_array *L = NULL;
      st = shred_batch(c, lf, batch, &L, err);
      /* the chunk's leaf values, estimated from its first batch */
      if (b == 0 && batch->length > 0)
        c->expect_values =
            (int64_t)((double)c->svidx.n * (double)w->pending_rows / (double)batch->length);
      if (st == QV_OK) st = consume(w, c, L, err);
      c->meta->num_values += lf->max_def > 0 ? c->sdefs.n : c->svidx.n;
    }
  }
  if (st == QV_OK) st = col_finish(w, c, err);
  if (st != QV_OK)
    qv_error_prefix(err, st, "row group %lld, column '%s': ", (long long)(w->n_rgs - 1),
                    lf->path[0]);
  /* hand the encoded chunk over; the slot's old buffers become scratch */
  qv_tw t = out->pages;
  out->pages = c->pages;
  c->pages = t;
  t = out->dictpage;
  out->dictpage = c->dictpage;
  c->dictpage = t;
  out->st = st;
}

static qv_status flush_row_group(qv_parquet_writer *w, qv_error *err) {
  if (w->pending_rows == 0) return QV_OK;
  if (w->n_rgs == w->cap_rgs) {
    int64_t cap = w->cap_rgs ? w->cap_rgs * 2 : 8;
    rg_meta *p = realloc(w->rgs, sizeof *p * (size_t)cap);
    if (p == NULL) return pw_oom(err);
    w->rgs = p;
    w->cap_rgs = cap;
  }
  rg_meta *rg = &w->rgs[w->n_rgs];
  memset(rg, 0, sizeof *rg);
  rg->cols = calloc((size_t)(w->ps.n_leaves ? w->ps.n_leaves : 1), sizeof(chunk_meta));
  if (rg->cols == NULL) return pw_oom(err);
  w->n_rgs++;
  rg->num_rows = w->pending_rows;
  rg->file_offset = w->pos;
  qv_pool_run(w->pool, w->ps.n_leaves, encode_column, w);
  QV_RETURN_NOT_OK(qv_pool_check(w->pool, err));
  for (int32_t li = 0; li < w->ps.n_leaves; li++) {
    col_out *out = &w->outs[li];
    if (out->st != QV_OK) {
      if (err) *err = out->err;
      return out->st;
    }
  }
  int64_t start = w->pos;
  for (int32_t li = 0; li < w->ps.n_leaves; li++) {
    col_out *out = &w->outs[li];
    chunk_meta *m = &rg->cols[li];
    m->file_offset = w->pos;
    if (out->dictpage.size > 0) m->dict_page_offset = w->pos;
    QV_RETURN_NOT_OK(file_write(w, out->dictpage.data, out->dictpage.size, err));
    m->data_page_offset = w->pos;
    QV_RETURN_NOT_OK(file_write(w, out->pages.data, out->pages.size, err));
    rg->total_byte_size += m->total_uncompressed;
    rg->total_compressed += m->total_compressed;
  }
  /* start writing the row group back now, so that the fsync at the end
   * has little left to do */
  sync_file_range(qv_atomic_file_fd(w->file), start, w->pos - start, SYNC_FILE_RANGE_WRITE);
  for (int64_t b = 0; b < w->n_pending; b++) qv_array_unref(w->pending[b]);
  w->n_pending = 0;
  w->pending_rows = 0;
  return QV_OK;
}

/* --------------------------------------------------------------- footer */

static void encode_chunk(qv_tw *t, const qv_pw_leaf *lf, const chunk_meta *m, int codec) {
  qv_tw_struct_begin(t);
  qv_tw_field_i64(t, 2, m->file_offset);
  qv_tw_field_struct(t, 3);
  qv_tw_field_i32(t, 1, lf->ptype);
  int n_enc = 0;
  for (int e = 0; e < 32; e++) n_enc += (m->encodings >> e) & 1;
  qv_tw_field_list(t, 2, QV_TC_I32, n_enc);
  for (int e = 0; e < 32; e++)
    if ((m->encodings >> e) & 1) qv_tw_zigzag(t, e);
  qv_tw_field_list(t, 3, QV_TC_BINARY, lf->n_path);
  for (int32_t i = 0; i < lf->n_path; i++)
    qv_tw_binary(t, lf->path[i], (int64_t)strlen(lf->path[i]));
  qv_tw_field_i32(t, 4, codec);
  qv_tw_field_i64(t, 5, m->num_values);
  qv_tw_field_i64(t, 6, m->total_uncompressed);
  qv_tw_field_i64(t, 7, m->total_compressed);
  qv_tw_field_i64(t, 9, m->data_page_offset);
  if (m->dict_page_offset >= 0) qv_tw_field_i64(t, 11, m->dict_page_offset);
  if (lf->order != QV_PW_ORD_NONE) {
    qv_tw_field_struct(t, 12);
    qv_tw_field_i64(t, 3, m->null_count);
    if (m->has_minmax) {
      qv_tw_field_binary(t, 5, m->max, m->max_len);
      qv_tw_field_binary(t, 6, m->min, m->min_len);
    }
    qv_tw_struct_end(t);
  }
  qv_tw_struct_end(t);
  qv_tw_struct_end(t);
}

static qv_status write_footer(qv_parquet_writer *w, qv_error *err) {
  qv_tw t;
  qv_tw_init(&t);
  uint8_t *fb = NULL;
  int64_t fb_size = 0;
  if (!w->opt.no_arrow_schema) {
    qv_status st = qv_ipc_encode_schema_message(w->schema, &fb, &fb_size, err);
    if (st != QV_OK) return qv_error_prefix(err, st, "parquet writer: ARROW:schema: ");
  }
  int64_t total_rows = 0;
  for (int64_t r = 0; r < w->n_rgs; r++) total_rows += w->rgs[r].num_rows;
  qv_tw_struct_begin(&t);
  qv_tw_field_i32(&t, 1, 2);
  qv_pw_schema_encode(&w->ps, &t);
  qv_tw_field_i64(&t, 3, total_rows);
  qv_tw_field_list(&t, 4, QV_TC_STRUCT, w->n_rgs);
  for (int64_t r = 0; r < w->n_rgs; r++) {
    const rg_meta *rg = &w->rgs[r];
    qv_tw_struct_begin(&t);
    qv_tw_field_list(&t, 1, QV_TC_STRUCT, w->ps.n_leaves);
    for (int32_t li = 0; li < w->ps.n_leaves; li++)
      encode_chunk(&t, &w->ps.leaves[li], &rg->cols[li], (int)w->opt.codec);
    qv_tw_field_i64(&t, 2, rg->total_byte_size);
    qv_tw_field_i64(&t, 3, rg->num_rows);
    qv_tw_field_i64(&t, 5, rg->file_offset);
    qv_tw_field_i64(&t, 6, rg->total_compressed);
    qv_tw_field(&t, 7, QV_TC_I16);
    qv_tw_zigzag(&t, r);
    qv_tw_struct_end(&t);
  }
  const qv_metadata *md = &w->schema->metadata;
  int64_t n_kv = 0;
  for (int64_t i = 0; i < md->n; i++)
    if (strcmp(md->kv[i].key, "ARROW:schema") != 0) n_kv++;
  if (fb) n_kv++;
  if (n_kv > 0) {
    qv_tw_field_list(&t, 5, QV_TC_STRUCT, n_kv);
    for (int64_t i = 0; i < md->n; i++) {
      if (strcmp(md->kv[i].key, "ARROW:schema") == 0) continue;
      qv_tw_struct_begin(&t);
      qv_tw_field_binary(&t, 1, md->kv[i].key, md->kv[i].key_len);
      qv_tw_field_binary(&t, 2, md->kv[i].value, md->kv[i].value_len);
      qv_tw_struct_end(&t);
    }
    if (fb) {
      /* the IPC framing pyarrow stores: continuation, length, flatbuffer,
       * padding to 8 bytes */
      qv_tw ipc;
      qv_tw_init(&ipc);
      int64_t padded = (fb_size + 7) / 8 * 8;
      put_u32le(&ipc, 0xFFFFFFFFu);
      put_u32le(&ipc, (uint32_t)padded);
      qv_tw_bytes(&ipc, fb, fb_size);
      qv_tw_bytes(&ipc, kEmpty, padded - fb_size);
      qv_tw b64;
      qv_tw_init(&b64);
      qv_pw_base64(ipc.data, ipc.size, &b64);
      qv_tw_struct_begin(&t);
      qv_tw_field_string(&t, 1, "ARROW:schema");
      qv_tw_field_binary(&t, 2, b64.data, b64.size);
      qv_tw_struct_end(&t);
      bool ok = qv_tw_ok(&ipc) && qv_tw_ok(&b64);
      qv_tw_reset(&ipc);
      qv_tw_reset(&b64);
      if (!ok) t.failed = true;
    }
  }
  free(fb);
  qv_tw_field_string(&t, 6, "quiver version " QV_VERSION_STRING);
  /* column_orders: TYPE_DEFINED_ORDER for every leaf, so readers take the
   * min_value/max_value statistics */
  qv_tw_field_list(&t, 7, QV_TC_STRUCT, w->ps.n_leaves);
  for (int32_t li = 0; li < w->ps.n_leaves; li++) {
    qv_tw_struct_begin(&t);
    qv_tw_field_struct(&t, 1);
    qv_tw_struct_end(&t);
    qv_tw_struct_end(&t);
  }
  qv_tw_struct_end(&t);
  if (!qv_tw_ok(&t)) {
    qv_tw_reset(&t);
    return pw_oom(err);
  }
  uint32_t len = (uint32_t)t.size;
  qv_tw_bytes(&t, &len, 4);
  qv_tw_bytes(&t, QV_PQ_MAGIC, QV_PQ_MAGIC_LEN);
  qv_status st = qv_tw_ok(&t) ? file_write(w, t.data, t.size, err) : pw_oom(err);
  qv_tw_reset(&t);
  return st;
}

/* ------------------------------------------------------------ public API */

bool qv_parquet_codec_from_name(const char *name, qv_parquet_codec *out) {
  static const struct {
    const char *name;
    qv_parquet_codec codec;
  } names[] = {{"none", QV_PARQUET_UNCOMPRESSED}, {"uncompressed", QV_PARQUET_UNCOMPRESSED},
               {"snappy", QV_PARQUET_SNAPPY},     {"gzip", QV_PARQUET_GZIP},
               {"brotli", QV_PARQUET_BROTLI},     {"zstd", QV_PARQUET_ZSTD},
               {"lz4", QV_PARQUET_LZ4_RAW},       {"lz4_raw", QV_PARQUET_LZ4_RAW}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strcmp(name, names[i].name) == 0) {
      *out = names[i].codec;
      return true;
    }
  }
  return false;
}

static void writer_free(qv_parquet_writer *w) {
  for (int64_t b = 0; b < w->n_pending; b++) qv_array_unref(w->pending[b]);
  free(w->pending);
  for (int64_t r = 0; r < w->n_rgs; r++) {
    for (int32_t li = 0; li < w->ps.n_leaves; li++) {
      free(w->rgs[r].cols[li].min);
      free(w->rgs[r].cols[li].max);
    }
    free(w->rgs[r].cols);
  }
  free(w->rgs);
  for (int i = 0; i < w->n_cs; i++) col_free(&w->cs[i]);
  free(w->cs);
  if (w->outs)
    for (int32_t li = 0; li < w->ps.n_leaves; li++) {
      qv_tw_reset(&w->outs[li].pages);
      qv_tw_reset(&w->outs[li].dictpage);
    }
  free(w->outs);
  qv_pool_free(w->pool);
  qv_pw_schema_reset(&w->ps);
  qv_schema_unref(w->schema);
  free(w);
}

qv_status qv_parquet_writer_open_path(const char *path, const qv_schema *schema,
                                      const qv_parquet_write_options *options,
                                      qv_parquet_writer **out, qv_error *err) {
  if (path == NULL || schema == NULL || out == NULL)
    return qv_error_set(err, QV_EARG, "qv_parquet_writer_open_path: NULL argument");
  qv_parquet_write_options o;
  memset(&o, 0, sizeof o);
  if (options) o = *options;
  switch (o.codec) {
    case QV_PARQUET_UNCOMPRESSED:
    case QV_PARQUET_SNAPPY:
    case QV_PARQUET_GZIP:
    case QV_PARQUET_BROTLI:
    case QV_PARQUET_ZSTD:
    case QV_PARQUET_LZ4_RAW: break;
    default: return qv_error_set(err, QV_EARG, "parquet writer: unknown codec %d", (int)o.codec);
  }
  if (o.page_version == 0) o.page_version = 1;
  if (o.page_version != 1 && o.page_version != 2)
    return qv_error_set(err, QV_EARG, "parquet writer: page version must be 1 or 2, found %d",
                        o.page_version);
  if (o.row_group_rows < 0 || o.page_bytes < 0 || o.dictionary_page_bytes < 0)
    return qv_error_set(err, QV_EARG, "parquet writer: negative size option");
  if (o.row_group_rows == 0) o.row_group_rows = QV_PARQUET_DEFAULT_ROW_GROUP_ROWS;
  if (o.page_bytes == 0) o.page_bytes = QV_PARQUET_DEFAULT_PAGE_BYTES;
  if (o.dictionary_page_bytes == 0) o.dictionary_page_bytes = QV_PARQUET_DEFAULT_PAGE_BYTES;
  qv_parquet_writer *w = calloc(1, sizeof *w);
  if (w == NULL) return pw_oom(err);
  w->opt = o;
  w->schema = qv_schema_ref((qv_schema *)schema);
  qv_status st = qv_pw_schema_build(schema, &w->ps, err);
  if (st == QV_OK) {
    int threads = o.threads > 0 ? o.threads : qv_cpu_count();
    if (threads > w->ps.n_leaves) threads = w->ps.n_leaves;
    if (threads < 1) threads = 1;
    /* a pool even for one thread: its tasks run under a recovery point
     * (a mapped input that shrinks gives QV_ECHANGED, not SIGBUS) */
    st = qv_pool_new(threads, &w->pool, err);
    w->n_cs = threads;
    w->cs = calloc((size_t)threads, sizeof *w->cs);
    w->outs = calloc((size_t)(w->ps.n_leaves ? w->ps.n_leaves : 1), sizeof *w->outs);
    if (st == QV_OK && (w->cs == NULL || w->outs == NULL)) st = pw_oom(err);
  }
  if (st == QV_OK) st = qv_atomic_file_open(path, &w->file, err);
  if (st == QV_OK) st = file_write(w, QV_PQ_MAGIC, QV_PQ_MAGIC_LEN, err);
  if (st != QV_OK) {
    qv_atomic_file_abort(w->file);
    writer_free(w);
    return st;
  }
  *out = w;
  return QV_OK;
}

qv_status qv_parquet_writer_write_batch(qv_parquet_writer *w, qv_array *batch, qv_error *err) {
  if (w == NULL || batch == NULL)
    return qv_error_set(err, QV_EARG, "qv_parquet_writer_write_batch: NULL argument");
  if (w->failed) return qv_error_set(err, QV_EARG, "parquet writer: an earlier write failed");
  if (batch->type->id != QV_STRUCT || !qv_type_equals(batch->type, w->schema->type, false))
    return qv_error_set(err, QV_ETYPE, "parquet writer: the batch's type is not the schema's");
  int64_t done = 0;
  while (done < batch->length) {
    int64_t take = batch->length - done;
    int64_t room = w->opt.row_group_rows - w->pending_rows;
    if (take > room) take = room;
    qv_array *slice = NULL;
    qv_status st;
    if (done == 0 && take == batch->length) {
      slice = qv_array_ref(batch);
      st = QV_OK;
    } else {
      st = qv_array_slice(batch, done, take, &slice, err);
    }
    if (st == QV_OK && w->n_pending == w->cap_pending) {
      int64_t cap = w->cap_pending ? w->cap_pending * 2 : 16;
      qv_array **p = realloc(w->pending, sizeof *p * (size_t)cap);
      if (p == NULL) {
        qv_array_unref(slice);
        st = pw_oom(err);
      } else {
        w->pending = p;
        w->cap_pending = cap;
      }
    }
    if (st == QV_OK) {
      w->pending[w->n_pending++] = slice;
      w->pending_rows += take;
      w->rows += take;
      done += take;
      if (w->pending_rows == w->opt.row_group_rows) st = flush_row_group(w, err);
    }
    if (st != QV_OK) {
      w->failed = true;
      return st;
    }
  }
  return QV_OK;
}

int64_t qv_parquet_writer_rows(const qv_parquet_writer *w) { return w ? w->rows : 0; }

qv_status qv_parquet_writer_close(qv_parquet_writer *w, qv_error *err) {
  if (w == NULL) return QV_OK;
  if (w->failed) {
    qv_parquet_writer_abort(w);
    return qv_error_set(err, QV_EARG, "parquet writer: an earlier write failed");
  }
  qv_status st = flush_row_group(w, err);
  if (st == QV_OK) st = write_footer(w, err);
  if (st != QV_OK) {
    qv_parquet_writer_abort(w);
    return st;
  }
  st = qv_atomic_file_commit(w->file, err);
  w->file = NULL;
  writer_free(w);
  return st;
}

void qv_parquet_writer_abort(qv_parquet_writer *w) {
  if (w == NULL) return;
  qv_atomic_file_abort(w->file);
  writer_free(w);
}

qv_status qv_parquet_write_arrow_stream_path(struct ArrowArrayStream *in, const char *path,
                                             const qv_parquet_write_options *options,
                                             int64_t *out_rows, qv_error *err) {
  qv_stream_import *s = NULL;
  QV_RETURN_NOT_OK(qv_stream_import_open(in, &s, err));
  qv_parquet_writer *w = NULL;
  qv_status st = qv_parquet_writer_open_path(path, qv_stream_import_schema(s), options, &w, err);
  while (st == QV_OK) {
    qv_array *batch = NULL;
    st = qv_stream_import_next(s, &batch, err);
    if (st != QV_OK || batch == NULL) break;
    st = qv_parquet_writer_write_batch(w, batch, err);
    qv_array_unref(batch);
  }
  int64_t rows = qv_parquet_writer_rows(w);
  if (st == QV_OK) st = qv_parquet_writer_close(w, err);
  else qv_parquet_writer_abort(w);
  qv_stream_import_close(s);
  if (st == QV_OK && out_rows) *out_rows = rows;
  return st;
}
