/*
 * groupby_hash.c — compute layer: the group-by's hash path on all cores
 * (groupby.c calls it; groupby_internal.h). For keys of fixed-width types
 * (bool, integers, floats, temporal types, decimals, fixed_size_binary)
 * and binary/string keys in every layout, group ids are assigned without
 * the row-table encoding:
 *  1. per record batch (one task each): every row's key columns are hashed
 *     columnwise into one 64-bit hash (floats canonical: -0.0 as 0.0, one
 *     NaN; a null its own value), and the rows of the batch are counted
 *     per partition (the hash's top bits);
 *  2. per batch: the row numbers are scattered into their partition's
 *     list (a partition's rows stay in table order);
 *  3. per partition (one task each, no lock): the partition's rows are
 *     grouped into its own open-addressing table (linear probing; entries
 *     of 32 hash bits and a local group id). A group is represented by its
 *     first row in the input columns themselves, so comparing a key reads
 *     the input (hash bits first, then the key columns); with one or two
 *     keys, each group also keeps its keys inline (canonical fixed-width
 *     values, strings of up to 16 bytes zero-padded into two words), so a
 *     probe compares words and reads the input only for longer strings; a
 *     new group flags its first row;
 *  4. per batch: the flagged first rows, counted and prefix-summed over
 *     the batches, give every group its global id in order of first
 *     appearance (smallest row first, exactly the grouper's order); then
 *     every row's local id is replaced by the global one.
 * The partition lists are kept (qvg_parts): the aggregates are updated per
 * partition in parallel, each group's rows in table order (groupby.c).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compute/compute_internal.h"
#include "compute/groupby_internal.h"
#include "core/parallel_internal.h"

#define INLINE_MAX 16
#define MAX_INLINE_KEYS 2
#define PREFETCH_AHEAD 16

typedef enum hk_kind { HK_FIXED, HK_BOOL, HK_BIN32, HK_BIN64, HK_VIEW, HK_FSB } hk_kind;

typedef struct hkey {
  hk_kind kind;
  int width; /* HK_FIXED: 1, 2, 4, 8; HK_FSB: bytes */
  int fl;    /* HK_FIXED: 4 float, 8 double (canonicalised), 0 otherwise */
  qv_array *const *chunks;
} hkey;

static bool kind_of(const qv_type *t, hkey *k) {
  memset(k, 0, sizeof *k);
  switch (t->id) {
    case QV_BOOL: k->kind = HK_BOOL; return true;
    case QV_BINARY:
    case QV_STRING: k->kind = HK_BIN32; return true;
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: k->kind = HK_BIN64; return true;
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: k->kind = HK_VIEW; return true;
    case QV_FIXED_SIZE_BINARY:
    case QV_DECIMAL128:
    case QV_DECIMAL256:
      if (t->byte_width <= 0 && qv_type_byte_width(t) <= 0) return false;
      k->kind = HK_FSB;
      k->width = t->id == QV_FIXED_SIZE_BINARY ? t->byte_width : qv_type_byte_width(t);
      return k->width > 0;
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64:
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE:
    case QV_DATE32:
    case QV_DATE64:
    case QV_TIME32:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DURATION: {
      int w = qv_type_byte_width(t);
      if (!(w == 1 || w == 2 || w == 4 || w == 8) || qv_type_bit_width(t) != w * 8) return false;
      k->kind = HK_FIXED;
      k->width = w;
      k->fl = t->id == QV_FLOAT ? 4 : (t->id == QV_DOUBLE ? 8 : 0);
      return true;
    }
    default: return false;
  }
}

bool qvg_hash_eligible(const qv_type *t) {
  hkey k;
  return kind_of(t, &k);
}

/* ------------------------------------------------------------------------ */
/* Values and hashes                                                         */

/* The n <= 8 bytes at p as a zero-padded little-endian word, without
 * reading past p + n. */
static inline uint64_t load_pad(const uint8_t *p, int64_t n) {
  if (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
  }
  if (n >= 4) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + n - 4, 4);
    return (uint64_t)lo | ((uint64_t)hi << ((n - 4) * 8));
  }
  if (n == 0) return 0;
  return (uint64_t)p[0] | ((uint64_t)p[n / 2] << (8 * (n / 2))) |
         ((uint64_t)p[n - 1] << (8 * (n - 1)));
}

static inline uint64_t hash_bytes(const uint8_t *p, int64_t len) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)len * 0xc2b2ae3d27d4eb4full);
  while (len > 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0x9fb21c651e98df25ull;
    h ^= h >> 29;
    p += 8;
    len -= 8;
  }
  h = (h ^ load_pad(p, len)) * 0x9fb21c651e98df25ull;
  return qv_mix64(h);
}

/* Canonical 64-bit value of fixed-width element i (offset applied). */
static inline uint64_t fixed_value(const uint8_t *d, int w, int fl, int64_t i) {
  switch (w) {
    case 1: return d[i];
    case 2: {
      uint16_t x;
      memcpy(&x, d + i * 2, 2);
      return x;
    }
    case 4: {
      if (fl) {
        float f;
        memcpy(&f, d + i * 4, 4);
        f = qvg_canon_float(f);
        uint32_t x;
        memcpy(&x, &f, 4);
        return x;
      }
      uint32_t x;
      memcpy(&x, d + i * 4, 4);
      return x;
    }
    default: {
      if (fl) {
        double f;
        memcpy(&f, d + i * 8, 8);
        f = qvg_canon_double(f);
        uint64_t x;
        memcpy(&x, &f, 8);
        return x;
      }
      uint64_t x;
      memcpy(&x, d + i * 8, 8);
      return x;
    }
  }
}

/* Bytes of element i of a binary-like chunk (checked by check_chunk). */
static inline const uint8_t *bytes_at(const hkey *k, const qv_array *a, int64_t i, int64_t *len) {
  int64_t j = a->offset + i;
  switch (k->kind) {
    case HK_BIN32: {
      const int32_t *o = (const int32_t *)(const void *)a->buffers[1]->data;
      *len = (int64_t)o[j + 1] - o[j];
      return a->buffers[2]->data + o[j];
    }
    case HK_BIN64: {
      const int64_t *o = (const int64_t *)(const void *)a->buffers[1]->data;
      *len = o[j + 1] - o[j];
      return a->buffers[2]->data + o[j];
    }
    case HK_VIEW: {
      const uint8_t *p = NULL;
      int32_t l = 0;
      if (!qv_array_view_bytes(a, i, &p, &l)) l = 0; /* checked by check_chunk */
      *len = l;
      return p;
    }
    default: *len = k->width; return a->buffers[1]->data + j * k->width;
  }
}

/* The chunk's buffers hold what its rows address (offsets monotonic and
 * inside the data buffer; views inside theirs). */
static bool check_chunk(const hkey *k, const qv_array *a) {
  int64_t n = a->length;
  if (n == 0) return true;
  if (a->n_buffers < 2 || (k->kind != HK_BOOL && !a->buffers[1])) return false;
  switch (k->kind) {
    case HK_BOOL: return a->buffers[1] && a->buffers[1]->size * 8 >= a->offset + n;
    case HK_FIXED:
    case HK_FSB: return a->buffers[1]->size >= (a->offset + n) * (int64_t)k->width;
    case HK_BIN32:
    case HK_BIN64: {
      int w = k->kind == HK_BIN32 ? 4 : 8;
      if (a->n_buffers < 3 || a->buffers[1]->size < (a->offset + n + 1) * w) return false;
      int64_t dsize = a->buffers[2] ? a->buffers[2]->size : 0, first, last;
      bool bad = false;
      if (w == 4) {
        const int32_t *o = (const int32_t *)(const void *)a->buffers[1]->data + a->offset;
        for (int64_t i = 0; i < n; i++) bad |= o[i + 1] < o[i];
        first = o[0], last = o[n];
      } else {
        const int64_t *o = (const int64_t *)(const void *)a->buffers[1]->data + a->offset;
        for (int64_t i = 0; i < n; i++) bad |= o[i + 1] < o[i];
        first = o[0], last = o[n];
      }
      return !bad && first >= 0 && last <= dsize && (last == 0 || a->buffers[2]);
    }
    case HK_VIEW: {
      if (a->buffers[1]->size < (a->offset + n) * QV_VIEW_SIZE) return false;
      const uint8_t *valid = a->buffers[0] ? a->buffers[0]->data : NULL;
      for (int64_t i = 0; i < n; i++) {
        const uint8_t *p;
        int32_t l;
        if (valid && !qv_bit_get(valid, a->offset + i)) continue;
        if (!qv_array_view_bytes(a, i, &p, &l)) return false;
      }
      return true;
    }
  }
  return false;
}

static inline bool is_valid(const qv_array *a, int64_t i) {
  return !a->buffers[0] || qv_bit_get(a->buffers[0]->data, a->offset + i);
}

/* Rows (b1, r1) and (b2, r2) have equal keys (NULL equal to NULL). */
static inline bool same_keys(const hkey *keys, int32_t nk, int64_t b1, int64_t r1, int64_t b2,
                             int64_t r2) {
  for (int32_t j = 0; j < nk; j++) {
    const hkey *k = &keys[j];
    const qv_array *a = k->chunks[b1], *c = k->chunks[b2];
    bool va = is_valid(a, r1), vc = is_valid(c, r2);
    if (va != vc) return false;
    if (!va) continue;
    switch (k->kind) {
      case HK_FIXED:
        if (fixed_value(a->buffers[1]->data, k->width, k->fl, a->offset + r1) !=
            fixed_value(c->buffers[1]->data, k->width, k->fl, c->offset + r2))
          return false;
        break;
      case HK_BOOL:
        if (qv_bit_get(a->buffers[1]->data, a->offset + r1) !=
            qv_bit_get(c->buffers[1]->data, c->offset + r2))
          return false;
        break;
      default: {
        int64_t la, lc;
        const uint8_t *pa = bytes_at(k, a, r1, &la), *pc = bytes_at(k, c, r2, &lc);
        if (la != lc || (la && memcmp(pa, pc, (size_t)la) != 0)) return false;
      }
    }
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* The work                                                                  */

typedef struct ginline {
  uint64_t w0, w1; /* the first INLINE_MAX bytes, zero-padded */
  uint64_t len;    /* > INLINE_MAX: compare with the first row (UINT64_MAX: null) */
} ginline;

static inline void inline_words(const uint8_t *p, int64_t len, uint64_t *w0, uint64_t *w1) {
  *w0 = load_pad(p, len < 8 ? len : 8);
  *w1 = len > 8 ? load_pad(p + 8, len - 8) : 0;
}

typedef struct part_state {
  uint64_t *tab; /* entries: hash bits << 32 | (local id + 1); 0 empty */
  int64_t cap;   /* power of two */
  int64_t n;     /* groups */
  int64_t gcap;
  uint32_t *rep_b, *rep_r; /* first row of each local group */
  ginline *inl;            /* n_inline records per group */
  uint32_t *map;           /* local id -> global id */
  uint64_t *ghash;         /* hash of each group (kept for tables that are merged) */
  int64_t hcap;
  qv_status st;
  qv_error err;
} part_state;

typedef struct hctx {
  hkey *keys;
  int32_t nk;
  int64_t nb;
  const int64_t *boff;
  int32_t n_parts;
  int pshift; /* 64 - log2(n_parts); 64 when one partition */
  uint64_t *hashes;
  uint32_t *ids;
  uint8_t *first;
  int64_t *cnt; /* nb * n_parts: rows of batch b in partition p, then write positions */
  qvg_parts *parts;
  part_state *ps;
  int64_t *gbase; /* nb + 1 */
  int64_t *first_chunk, *first_row;
  qv_status *bst;       /* per batch: a chunk's buffers are inconsistent */
  int32_t n_inline;     /* keys kept inline beside each group (all of them, or 0) */
  double distinct_frac; /* expected groups per row (tables are sized for it) */
} hctx;

static inline int32_t part_of(const hctx *c, uint64_t h) {
  return c->pshift >= 64 ? 0 : (int32_t)(h >> c->pshift);
}

/* Hashes of the n rows of batch b; false when a chunk's buffers do not
 * hold what its rows address. */
static bool hash_rows(const hkey *keys, int32_t nk, int64_t b, int64_t n, uint64_t *h) {
  for (int32_t j = 0; j < nk; j++) {
    const hkey *k = &keys[j];
    const qv_array *a = k->chunks[b];
    if (a->length < n || !check_chunk(k, a)) return false;
    const uint8_t *valid =
        a->buffers[0] && qv_array_null_count((qv_array *)a) > 0 ? a->buffers[0]->data : NULL;
    uint64_t seed = 0x632be59bd9b4e019ull * (uint64_t)(j + 1);
    uint64_t vnull = 0x5bd1e9955bd1e995ull ^ seed;
    const uint8_t *d = a->buffers[1] ? a->buffers[1]->data : NULL;
    int64_t off = a->offset;
#define QV_COMBINE(V)                                                                              \
  do {                                                                                             \
    uint64_t v_ = (V);                                                                             \
    h[i] = j == 0 ? v_ : qv_mix64(h[i] * 0x9e3779b97f4a7c15ull + v_);                              \
  } while (0)
    if (k->kind == HK_BIN32 || k->kind == HK_BIN64) {
      const uint8_t *data = a->buffers[2] ? a->buffers[2]->data : NULL;
      if (k->kind == HK_BIN32) {
        const int32_t *o = (const int32_t *)(const void *)d + off;
        for (int64_t i = 0; i < n; i++) {
          if (valid && !qv_bit_get(valid, off + i)) QV_COMBINE(vnull);
          else QV_COMBINE(hash_bytes(data + o[i], (int64_t)o[i + 1] - o[i]) ^ seed);
        }
      } else {
        const int64_t *o = (const int64_t *)(const void *)d + off;
        for (int64_t i = 0; i < n; i++) {
          if (valid && !qv_bit_get(valid, off + i)) QV_COMBINE(vnull);
          else QV_COMBINE(hash_bytes(data + o[i], o[i + 1] - o[i]) ^ seed);
        }
      }
      continue;
    }
    if (k->kind == HK_FIXED && !valid && !k->fl && k->width == 4) {
      const uint32_t *v = (const uint32_t *)(const void *)d + off;
      for (int64_t i = 0; i < n; i++) QV_COMBINE(qv_mix64(v[i] + seed));
      continue;
    }
    for (int64_t i = 0; i < n; i++) {
      if (valid && !qv_bit_get(valid, off + i)) QV_COMBINE(vnull);
      else if (k->kind == HK_FIXED)
        QV_COMBINE(qv_mix64(fixed_value(d, k->width, k->fl, off + i) + seed));
      else if (k->kind == HK_BOOL) QV_COMBINE(qv_mix64(qv_bit_get(d, off + i) + 1 + seed));
      else {
        int64_t len;
        const uint8_t *p = bytes_at(k, a, i, &len);
        QV_COMBINE(hash_bytes(p, len) ^ seed);
      }
    }
#undef QV_COMBINE
  }
  return true;
}

static void hash_task(void *ctx, int64_t b, int worker) {
  (void)worker;
  hctx *c = ctx;
  int64_t base = c->boff[b], n = c->boff[b + 1] - base;
  uint64_t *h = c->hashes + base;
  if (!hash_rows(c->keys, c->nk, b, n, h)) {
    c->bst[b] = QV_EINVAL;
    return;
  }
  int64_t *cnt = c->cnt + b * c->n_parts;
  for (int64_t i = 0; i < n; i++) cnt[part_of(c, h[i])]++;
}

static void scatter_task(void *ctx, int64_t b, int worker) {
  (void)worker;
  hctx *c = ctx;
  int64_t base = c->boff[b], n = c->boff[b + 1] - base;
  const uint64_t *h = c->hashes + base;
  int64_t *pos = c->cnt + b * c->n_parts;
  uint32_t *rows = c->parts->rows;
  if (c->n_parts == 1) {
    for (int64_t i = 0; i < n; i++) rows[pos[0] + i] = (uint32_t)i;
    return;
  }
  for (int64_t i = 0; i < n; i++) rows[pos[part_of(c, h[i])]++] = (uint32_t)i;
}

static bool part_grow_groups(part_state *s, int32_t n_inline) {
  int64_t cap = s->gcap ? s->gcap * 2 : 1024;
  uint32_t *b = realloc(s->rep_b, sizeof(uint32_t) * (size_t)cap);
  if (b) s->rep_b = b;
  uint32_t *r = realloc(s->rep_r, sizeof(uint32_t) * (size_t)cap);
  if (r) s->rep_r = r;
  ginline *g = n_inline ? realloc(s->inl, sizeof(ginline) * (size_t)(cap * n_inline)) : NULL;
  if (g) s->inl = g;
  if (!b || !r || (n_inline && !g)) return false;
  s->gcap = cap;
  return true;
}

static bool part_grow_table(part_state *s) {
  int64_t cap = s->cap * 2;
  uint64_t *t = calloc((size_t)cap, sizeof(uint64_t));
  if (!t) return false;
  uint64_t mask = (uint64_t)cap - 1;
  for (int64_t e = 0; e < s->cap; e++) {
    uint64_t v = s->tab[e];
    if (!v) continue;
    uint64_t slot = (v >> 32) & mask; /* entries keep the hash's low 32 bits */
    while (t[slot]) slot = (slot + 1) & mask;
    t[slot] = v;
  }
  free(s->tab);
  s->tab = t;
  s->cap = cap;
  return true;
}

/* Inline record of key k at row r of chunk a: a null has len UINT64_MAX; a
 * fixed-width value is w0 (canonical) with len 0; bytes up to INLINE_MAX
 * are w0, w1 zero-padded; longer bytes keep only their length. */
static inline void row_inline(const hkey *k, const qv_array *a, int64_t r, ginline *out) {
  out->w0 = out->w1 = 0;
  if (!is_valid(a, r)) {
    out->len = UINT64_MAX;
    return;
  }
  switch (k->kind) {
    case HK_FIXED:
      out->len = 0;
      out->w0 = fixed_value(a->buffers[1]->data, k->width, k->fl, a->offset + r);
      return;
    case HK_BOOL:
      out->len = 0;
      out->w0 = qv_bit_get(a->buffers[1]->data, a->offset + r);
      return;
    default: {
      int64_t len;
      const uint8_t *p = bytes_at(k, a, r, &len);
      out->len = (uint64_t)len;
      if (len <= INLINE_MAX) inline_words(p, len, &out->w0, &out->w1);
    }
  }
}

/* Key j of rows (b1, r1) and (b2, r2) is equal (both valid, bytes). */
static inline bool same_bytes(const hkey *k, int64_t b1, int64_t r1, int64_t b2, int64_t r2) {
  int64_t la, lc;
  const uint8_t *pa = bytes_at(k, k->chunks[b1], r1, &la);
  const uint8_t *pc = bytes_at(k, k->chunks[b2], r2, &lc);
  return la == lc && memcmp(pa, pc, (size_t)la) == 0;
}

/* An empty table sized for about `expect` groups. */
static bool part_init(part_state *s, int32_t ni, int64_t expect) {
  s->cap = 1024;
  while (s->cap * 7 < expect * 10) s->cap *= 2;
  s->tab = calloc((size_t)s->cap, sizeof(uint64_t));
  s->gcap = expect > 1024 ? expect / 2 : 0; /* part_grow_groups doubles it */
  return s->tab && part_grow_groups(s, ni);
}

static void part_free(part_state *s) {
  free(s->tab);
  free(s->rep_b);
  free(s->rep_r);
  free(s->inl);
  free(s->map);
  free(s->ghash);
}

/* The group of row r of batch b (hash h) in s, made when new (*is_new);
 * QV_GROUP_NONE with s->st set on failure. */
static inline uint32_t probe_insert(const hkey *keys, int32_t nk, int32_t ni, part_state *s,
                                    int64_t b, uint32_t r, uint64_t h, bool keep_hash,
                                    bool *is_new) {
  ginline cur[MAX_INLINE_KEYS];
  uint32_t tag = (uint32_t)h;
  uint64_t mask = (uint64_t)s->cap - 1;
  uint64_t slot = tag & mask;
  *is_new = false;
  for (int32_t j = 0; j < ni; j++) row_inline(&keys[j], keys[j].chunks[b], r, &cur[j]);
  for (;;) {
    uint64_t v = s->tab[slot];
    if (!v) break;
    if ((uint32_t)(v >> 32) == tag) {
      uint32_t g = (uint32_t)v - 1;
      bool eq = true;
      if (ni) {
        const ginline *rec = s->inl + (int64_t)g * ni;
        for (int32_t j = 0; j < ni && eq; j++) {
          if (rec[j].len != cur[j].len || rec[j].w0 != cur[j].w0 || rec[j].w1 != cur[j].w1)
            eq = false;
          else if (cur[j].len > INLINE_MAX && cur[j].len != UINT64_MAX)
            eq = same_bytes(&keys[j], s->rep_b[g], s->rep_r[g], b, r);
        }
      } else {
        eq = same_keys(keys, nk, s->rep_b[g], s->rep_r[g], b, r);
      }
      if (eq) return g;
    }
    slot = (slot + 1) & mask;
  }
  if (s->n + 1 >= (int64_t)QV_GROUP_NONE) {
    s->st = qv_error_set(&s->err, QV_ERANGE, "group-by: more than %" PRIu32 " groups",
                         (uint32_t)(QV_GROUP_NONE - 1));
    return QV_GROUP_NONE;
  }
  if (s->n == s->gcap && !part_grow_groups(s, ni)) {
    s->st = qv_error_set(&s->err, QV_ENOMEM, "group-by: out of memory");
    return QV_GROUP_NONE;
  }
  if (keep_hash && s->n >= s->hcap) {
    int64_t hc = s->hcap ? s->hcap * 2 : 1024;
    uint64_t *gh = realloc(s->ghash, sizeof(uint64_t) * (size_t)hc);
    if (!gh) {
      s->st = qv_error_set(&s->err, QV_ENOMEM, "group-by: out of memory");
      return QV_GROUP_NONE;
    }
    s->ghash = gh;
    s->hcap = hc;
  }
  uint32_t id = (uint32_t)s->n++;
  s->rep_b[id] = (uint32_t)b;
  s->rep_r[id] = r;
  if (keep_hash) s->ghash[id] = h;
  for (int32_t j = 0; j < ni; j++) s->inl[(int64_t)id * ni + j] = cur[j];
  s->tab[slot] = ((uint64_t)tag << 32) | ((uint64_t)id + 1);
  *is_new = true;
  if (s->n * 10 > s->cap * 7 && !part_grow_table(s)) { /* at most 70% full */
    s->st = qv_error_set(&s->err, QV_ENOMEM, "group-by: out of memory (hash table)");
    return QV_GROUP_NONE;
  }
  return id;
}

static void group_task(void *ctx, int64_t p, int worker) {
  (void)worker;
  hctx *c = ctx;
  part_state *s = &c->ps[p];
  int32_t ni = c->n_inline;
  int64_t rows = c->parts->off[(p + 1) * c->nb] - c->parts->off[p * c->nb];
  if (!part_init(s, ni, (int64_t)((double)rows * c->distinct_frac))) {
    s->st = qv_error_set(&s->err, QV_ENOMEM, "group-by: out of memory");
    return;
  }
  for (int64_t b = 0; b < c->nb; b++) {
    int64_t lo = c->parts->off[p * c->nb + b], hi = c->parts->off[p * c->nb + b + 1];
    int64_t base = c->boff[b];
    for (int64_t e = lo; e < hi; e++) {
      uint32_t r = c->parts->rows[e];
      uint64_t h = c->hashes[base + r];
      if (e + PREFETCH_AHEAD < hi) /* the table is probed at random: fetch ahead */
        __builtin_prefetch(&s->tab[(uint32_t)c->hashes[base + c->parts->rows[e + PREFETCH_AHEAD]] &
                                   (uint64_t)(s->cap - 1)]);
      if (ni && e + PREFETCH_AHEAD / 2 < hi) { /* then the inline keys of that slot's group */
        uint64_t v = s->tab[(uint32_t)c->hashes[base + c->parts->rows[e + PREFETCH_AHEAD / 2]] &
                            (uint64_t)(s->cap - 1)];
        if (v) __builtin_prefetch(&s->inl[(int64_t)((uint32_t)v - 1) * ni]);
      }
      bool is_new;
      uint32_t id = probe_insert(c->keys, c->nk, ni, s, b, r, h, false, &is_new);
      if (id == QV_GROUP_NONE) return;
      if (is_new) c->first[base + r] = 1;
      c->ids[base + r] = id;
    }
  }
  s->map = malloc(sizeof(uint32_t) * (size_t)(s->n ? s->n : 1));
  if (!s->map) s->st = qv_error_set(&s->err, QV_ENOMEM, "group-by: out of memory");
}

static void count_first_task(void *ctx, int64_t b, int worker) {
  (void)worker;
  hctx *c = ctx;
  int64_t n = 0;
  for (int64_t r = c->boff[b]; r < c->boff[b + 1]; r++) n += c->first[r];
  c->gbase[b + 1] = n;
}

static void number_task(void *ctx, int64_t b, int worker) {
  (void)worker;
  hctx *c = ctx;
  int64_t g = c->gbase[b], base = c->boff[b];
  for (int64_t r = base; r < c->boff[b + 1]; r++) {
    if (!c->first[r]) continue;
    part_state *s = &c->ps[part_of(c, c->hashes[r])];
    s->map[c->ids[r]] = (uint32_t)g;
    c->first_chunk[g] = b;
    c->first_row[g] = r - base;
    g++;
  }
}

static void remap_task(void *ctx, int64_t b, int worker) {
  (void)worker;
  hctx *c = ctx;
  if (c->n_parts == 1) {
    const uint32_t *map = c->ps[0].map;
    for (int64_t r = c->boff[b]; r < c->boff[b + 1]; r++) c->ids[r] = map[c->ids[r]];
    return;
  }
  for (int64_t r = c->boff[b]; r < c->boff[b + 1]; r++)
    c->ids[r] = c->ps[part_of(c, c->hashes[r])].map[c->ids[r]];
}

void qvg_parts_free(qvg_parts *p) {
  free(p->off);
  free(p->rows);
  memset(p, 0, sizeof *p);
}

qv_status qvg_hash_group(qv_pool *pool, int32_t n_parts, double distinct_frac,
                         const qv_chunked_column *const *kcols, int32_t nk, const int64_t *boff,
                         int64_t nb, uint32_t *ids, int64_t **first_chunk, int64_t **first_row,
                         int64_t *n_groups, qvg_parts *parts, qv_error *err) {
  int64_t total = boff[nb];
  hctx c;
  memset(&c, 0, sizeof c);
  memset(parts, 0, sizeof *parts);
  *first_chunk = *first_row = NULL;
  *n_groups = 0;
  c.nk = nk;
  c.nb = nb;
  c.boff = boff;
  c.n_parts = n_parts;
  int bits = 0;
  while ((1 << bits) < n_parts) bits++;
  c.pshift = 64 - bits;
  c.parts = parts;
  c.ids = ids;
  c.keys = calloc((size_t)nk, sizeof(hkey));
  c.hashes = malloc(sizeof(uint64_t) * (size_t)(total ? total : 1));
  c.first = calloc((size_t)(total ? total : 1), 1);
  c.cnt = calloc((size_t)(nb * n_parts + 1), sizeof(int64_t));
  c.bst = calloc((size_t)(nb ? nb : 1), sizeof(qv_status));
  c.ps = calloc((size_t)n_parts, sizeof(part_state));
  c.gbase = calloc((size_t)(nb + 1), sizeof(int64_t));
  parts->n_parts = n_parts;
  parts->n_batches = nb;
  parts->off = calloc((size_t)(nb * n_parts + 1), sizeof(int64_t));
  parts->rows = malloc(sizeof(uint32_t) * (size_t)(total ? total : 1));
  qv_status st = QV_OK;
  if (!c.keys || !c.hashes || !c.first || !c.cnt || !c.bst || !c.ps || !c.gbase || !parts->off ||
      !parts->rows)
    st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory (%" PRId64 " rows)", total);
  for (int32_t j = 0; j < nk && st == QV_OK; j++) {
    if (!kind_of(kcols[j]->type, &c.keys[j]))
      st = qv_error_set(err, QV_ETYPE, "group-by: key %d: not a hash-path type", j);
    c.keys[j].chunks = kcols[j]->chunks;
  }
  c.n_inline = nk <= MAX_INLINE_KEYS ? nk : 0;
  c.distinct_frac = distinct_frac;
  /* null counts are cached in the arrays: settle them before the tasks */
  for (int32_t j = 0; j < nk && st == QV_OK; j++)
    for (int64_t b = 0; b < nb; b++) (void)qv_array_null_count(kcols[j]->chunks[b]);
  if (st == QV_OK) qv_pool_run(pool, nb, hash_task, &c);
  if (st == QV_OK) st = qv_pool_check(pool, err);
  for (int64_t b = 0; b < nb && st == QV_OK; b++)
    if (c.bst[b] != QV_OK)
      st = qv_error_set(err, QV_EINVAL,
                        "group-by: a key column of batch %" PRId64
                        " has offsets or views outside its buffers",
                        b);
  if (st == QV_OK) {
    /* partition p's rows: batch 0's, then batch 1's ...; c.cnt becomes the
     * write position of (b, p) */
    int64_t pos = 0;
    for (int32_t p = 0; p < n_parts; p++)
      for (int64_t b = 0; b < nb; b++) {
        int64_t n = c.cnt[b * n_parts + p];
        parts->off[p * nb + b] = pos;
        c.cnt[b * n_parts + p] = pos;
        pos += n;
      }
    parts->off[(int64_t)n_parts * nb] = pos;
    qv_pool_run(pool, nb, scatter_task, &c);
    qv_pool_run(pool, n_parts, group_task, &c);
    st = qv_pool_check(pool, err);
  }
  for (int32_t p = 0; p < n_parts && st == QV_OK; p++)
    if (c.ps[p].st != QV_OK) {
      st = c.ps[p].st;
      if (err) *err = c.ps[p].err;
    }
  int64_t ng = 0;
  if (st == QV_OK) {
    for (int32_t p = 0; p < n_parts; p++) ng += c.ps[p].n;
    *first_chunk = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
    *first_row = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
    if (!*first_chunk || !*first_row) st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  }
  if (st == QV_OK) {
    c.first_chunk = *first_chunk;
    c.first_row = *first_row;
    qv_pool_run(pool, nb, count_first_task, &c);
    for (int64_t b = 0; b < nb; b++) c.gbase[b + 1] += c.gbase[b];
    qv_pool_run(pool, nb, number_task, &c);
    qv_pool_run(pool, nb, remap_task, &c);
    st = qv_pool_check(pool, err);
    *n_groups = ng;
  }
  if (st != QV_OK) {
    free(*first_chunk);
    free(*first_row);
    *first_chunk = *first_row = NULL;
    *n_groups = 0;
    qvg_parts_free(parts);
  }
  for (int32_t p = 0; c.ps && p < n_parts; p++) part_free(&c.ps[p]);
  free(c.keys);
  free(c.hashes);
  free(c.first);
  free(c.cnt);
  free(c.bst);
  free(c.ps);
  free(c.gbase);
  return st;
}

/* Partition lists by group id, for the paths that assign ids without
 * hash partitions (direct index, grouper). */
typedef struct pg_ctx {
  const uint32_t *ids;
  const int64_t *boff;
  int64_t nb;
  int32_t n_parts;
  int pshift;
  int64_t *cnt;
  qvg_parts *parts;
  bool scatter;
} pg_ctx;

static inline int32_t gid_part(const pg_ctx *c, uint32_t g) {
  return (int32_t)((uint32_t)(g * 0x9e3779b1u) >> c->pshift);
}

static void pg_task(void *ctx, int64_t b, int worker) {
  (void)worker;
  pg_ctx *c = ctx;
  int64_t base = c->boff[b], n = c->boff[b + 1] - base;
  const uint32_t *ids = c->ids + base;
  int64_t *cnt = c->cnt + b * c->n_parts;
  if (!c->scatter) {
    for (int64_t i = 0; i < n; i++) cnt[gid_part(c, ids[i])]++;
    return;
  }
  uint32_t *rows = c->parts->rows;
  for (int64_t i = 0; i < n; i++) rows[cnt[gid_part(c, ids[i])]++] = (uint32_t)i;
}

qv_status qvg_parts_by_group(qv_pool *pool, const uint32_t *ids, const int64_t *boff, int64_t nb,
                             int32_t n_parts, qvg_parts *parts, qv_error *err) {
  int64_t total = boff[nb];
  memset(parts, 0, sizeof *parts);
  int bits = 0;
  while ((1 << bits) < n_parts) bits++;
  if (bits == 0) return qv_error_set(err, QV_EARG, "group-by: partitions need 2 or more parts");
  pg_ctx c = {ids, boff, nb, n_parts, 32 - bits, NULL, parts, false};
  c.cnt = calloc((size_t)(nb * n_parts + 1), sizeof(int64_t));
  parts->n_parts = n_parts;
  parts->n_batches = nb;
  parts->off = calloc((size_t)(nb * n_parts + 1), sizeof(int64_t));
  parts->rows = malloc(sizeof(uint32_t) * (size_t)(total ? total : 1));
  if (!c.cnt || !parts->off || !parts->rows) {
    free(c.cnt);
    qvg_parts_free(parts);
    return qv_error_set(err, QV_ENOMEM, "group-by: out of memory (%" PRId64 " rows)", total);
  }
  qv_pool_run(pool, nb, pg_task, &c);
  int64_t pos = 0;
  for (int32_t p = 0; p < n_parts; p++)
    for (int64_t b = 0; b < nb; b++) {
      int64_t n = c.cnt[b * n_parts + p];
      parts->off[p * nb + b] = pos;
      c.cnt[b * n_parts + p] = pos;
      pos += n;
    }
  parts->off[(int64_t)n_parts * nb] = pos;
  c.scatter = true;
  qv_pool_run(pool, nb, pg_task, &c);
  free(c.cnt);
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* One table over whole batches (thread-local pre-aggregation, groupby.c)   */

struct qvg_htab {
  hkey *keys;
  int32_t nk, ni;
  part_state s;
};

qv_status qvg_htab_new(const qv_chunked_column *const *kcols, int32_t nk, qvg_htab **out,
                       qv_error *err) {
  qvg_htab *t = calloc(1, sizeof *t);
  if (t) t->keys = calloc((size_t)nk, sizeof(hkey));
  if (!t || !t->keys) {
    if (t) free(t);
    return qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  }
  t->nk = nk;
  t->ni = nk <= MAX_INLINE_KEYS ? nk : 0;
  for (int32_t j = 0; j < nk; j++) {
    if (!kind_of(kcols[j]->type, &t->keys[j])) {
      qvg_htab_free(t);
      return qv_error_set(err, QV_ETYPE, "group-by: key %d: not a hash-path type", j);
    }
    t->keys[j].chunks = kcols[j]->chunks;
  }
  if (!part_init(&t->s, t->ni, 0)) {
    qvg_htab_free(t);
    return qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  }
  *out = t;
  return QV_OK;
}

void qvg_htab_free(qvg_htab *t) {
  if (!t) return;
  part_free(&t->s);
  free(t->keys);
  free(t);
}

int64_t qvg_htab_groups(const qvg_htab *t) { return t->s.n; }

/* The group of a valid short string (len <= INLINE_MAX, words w0 w1) of
 * a one-key table when it exists; QV_GROUP_NONE otherwise. */
static inline uint32_t find_short(const part_state *s, uint64_t h, uint64_t len, uint64_t w0,
                                  uint64_t w1) {
  uint32_t tag = (uint32_t)h;
  uint64_t mask = (uint64_t)s->cap - 1;
  for (uint64_t slot = tag & mask;; slot = (slot + 1) & mask) {
    uint64_t v = s->tab[slot];
    if (!v) return QV_GROUP_NONE;
    if ((uint32_t)(v >> 32) != tag) continue;
    const ginline *rec = &s->inl[(uint32_t)v - 1];
    if (rec->len == len && rec->w0 == w0 && rec->w1 == w1) return (uint32_t)v - 1;
  }
}

qv_status qvg_htab_batch(qvg_htab *t, int64_t b, int64_t n, uint64_t *h, uint32_t *ids,
                         qv_error *err) {
  if (!hash_rows(t->keys, t->nk, b, n, h))
    return qv_error_set(
        err, QV_EINVAL,
        "group-by: a key column of batch %" PRId64 " has offsets or views outside its buffers", b);
  part_state *s = &t->s;
  const hkey *k0 = &t->keys[0];
  const qv_array *a0 = k0->chunks[b];
  /* one string key: found groups compared inline without the general
   * probe (new groups, nulls and long strings take it) */
  bool one_str = t->nk == 1 && (k0->kind == HK_BIN32 || k0->kind == HK_BIN64);
  const uint8_t *valid0 =
      a0->buffers[0] && qv_array_null_count((qv_array *)a0) > 0 ? a0->buffers[0]->data : NULL;
  const uint8_t *data0 =
      one_str && a0->n_buffers > 2 && a0->buffers[2] ? a0->buffers[2]->data : NULL;
  for (int64_t i = 0; i < n && one_str; i++) {
    if (i + PREFETCH_AHEAD < n)
      __builtin_prefetch(&s->tab[(uint32_t)h[i + PREFETCH_AHEAD] & (uint64_t)(s->cap - 1)]);
    uint32_t id = QV_GROUP_NONE;
    if (!valid0 || qv_bit_get(valid0, a0->offset + i)) {
      int64_t st0, en;
      if (k0->kind == HK_BIN32) {
        const int32_t *o = (const int32_t *)(const void *)a0->buffers[1]->data + a0->offset;
        st0 = o[i], en = o[i + 1];
      } else {
        const int64_t *o = (const int64_t *)(const void *)a0->buffers[1]->data + a0->offset;
        st0 = o[i], en = o[i + 1];
      }
      int64_t len = en - st0;
      if (len <= INLINE_MAX) {
        uint64_t w0, w1;
        inline_words(data0 + st0, len, &w0, &w1);
        id = find_short(s, h[i], (uint64_t)len, w0, w1);
      }
    }
    if (id == QV_GROUP_NONE) {
      bool is_new;
      id = probe_insert(t->keys, t->nk, t->ni, s, b, (uint32_t)i, h[i], true, &is_new);
      if (id == QV_GROUP_NONE) {
        if (err) *err = s->err;
        return s->st;
      }
    }
    ids[i] = id;
  }
  if (one_str) return QV_OK;
  for (int64_t i = 0; i < n; i++) {
    /* two stages: the table slot of row i + 16, then the inline keys of
     * the group in the (by now loaded) slot of row i + 8 */
    if (i + PREFETCH_AHEAD < n)
      __builtin_prefetch(&s->tab[(uint32_t)h[i + PREFETCH_AHEAD] & (uint64_t)(s->cap - 1)]);
    if (t->ni && i + PREFETCH_AHEAD / 2 < n) {
      uint64_t v = s->tab[(uint32_t)h[i + PREFETCH_AHEAD / 2] & (uint64_t)(s->cap - 1)];
      if (v) __builtin_prefetch(&s->inl[(int64_t)((uint32_t)v - 1) * t->ni]);
    }
    bool is_new;
    ids[i] = probe_insert(t->keys, t->nk, t->ni, s, b, (uint32_t)i, h[i], true, &is_new);
    if (ids[i] == QV_GROUP_NONE) {
      if (err) *err = s->err;
      return s->st;
    }
  }
  return QV_OK;
}

qv_status qvg_htab_merge(qvg_htab *dst, const qvg_htab *src, uint32_t *map, qv_error *err) {
  const part_state *ss = &src->s;
  for (int64_t g = 0; g < ss->n; g++) {
    bool is_new;
    map[g] = probe_insert(dst->keys, dst->nk, dst->ni, &dst->s, ss->rep_b[g], ss->rep_r[g],
                          ss->ghash[g], true, &is_new);
    if (map[g] == QV_GROUP_NONE) {
      if (err) *err = dst->s.err;
      return dst->s.st;
    }
  }
  return QV_OK;
}

void qvg_htab_firsts(const qvg_htab *t, int64_t *chunk, int64_t *row) {
  for (int64_t g = 0; g < t->s.n; g++) {
    chunk[g] = t->s.rep_b[g];
    row[g] = t->s.rep_r[g];
  }
}

int64_t qvg_hash_sample_distinct(const qv_chunked_column *const *kcols, int32_t nk, int64_t b,
                                 int64_t n) {
  hkey *keys = calloc((size_t)nk, sizeof(hkey));
  uint64_t *h = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
  int64_t cap = 1;
  while (cap < 2 * n) cap *= 2;
  uint64_t *set = calloc((size_t)cap, sizeof(uint64_t));
  int64_t distinct = -1;
  bool ok = keys && h && set;
  for (int32_t j = 0; j < nk && ok; j++) {
    ok = kind_of(kcols[j]->type, &keys[j]);
    keys[j].chunks = kcols[j]->chunks;
  }
  int64_t len = ok ? kcols[0]->chunks[b]->length : 0;
  if (n > len) n = len;
  if (ok && hash_rows(keys, nk, b, n, h)) {
    distinct = 0;
    uint64_t mask = (uint64_t)cap - 1;
    for (int64_t i = 0; i < n && i < len; i++) {
      uint64_t v = h[i] | 1; /* 0 marks an empty slot */
      uint64_t slot = v & mask;
      while (set[slot] && set[slot] != v) slot = (slot + 1) & mask;
      if (!set[slot]) {
        set[slot] = v;
        distinct++;
      }
    }
  }
  free(keys);
  free(h);
  free(set);
  return distinct;
}

/* ------------------------------------------------------------------------ */
/* String keys of few values coded for the direct path (groupby.c): each
 * batch (one task each) codes its rows by a small local table of the
 * values in their order there; the local values are then merged batch by
 * batch into one global table (sequential, a few values per batch), and
 * every row's local code replaced by the global one. */

#define CODE_LOCAL_NULL 0xffffu

typedef struct code_ctx {
  hkey k;
  const int64_t *boff;
  int32_t max;
  uint16_t *codes;
  uint32_t *lrow; /* nb * max: the first row of each local value */
  int32_t *ln;    /* nb: local values */
  uint8_t *bad;   /* nb: too many values, inconsistent buffers, no memory */
  uint8_t *nulls; /* nb */
  uint16_t *map;  /* nb * max: local code -> global code */
  int32_t n_values;
  qv_table *release; /* batch b released once coded (qv_table_batch_done), or NULL */
} code_ctx;

static inline uint64_t code_hash(const uint8_t *p, int64_t len, uint64_t *w0, uint64_t *w1) {
  if (len > INLINE_MAX) {
    *w0 = *w1 = 0;
    return hash_bytes(p, len);
  }
  inline_words(p, len, w0, w1);
  uint64_t h = (*w0 ^ (*w1 * 0xc2b2ae3d27d4eb4full + (uint64_t)len)) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29); /* slots from the low bits, tags from the high */
}

/* A small open-addressing table of byte strings: entries hash high bits
 * << 32 | (code + 1); recs the inline words of each code, rows the row
 * (batch, row) of each code's value. */
typedef struct code_tab {
  uint64_t *tab;
  uint64_t mask;
  ginline *recs;
  uint32_t *rb, *rr;
  int32_t n;
} code_tab;

static bool code_tab_init(code_tab *t, int32_t max) {
  memset(t, 0, sizeof *t);
  int64_t cap = 16;
  while (cap < 2 * (int64_t)max) cap *= 2;
  t->tab = calloc((size_t)cap, sizeof(uint64_t));
  t->recs = malloc(sizeof(ginline) * (size_t)max);
  t->rb = malloc(sizeof(uint32_t) * (size_t)max);
  t->rr = malloc(sizeof(uint32_t) * (size_t)max);
  t->mask = (uint64_t)cap - 1;
  return t->tab && t->recs && t->rb && t->rr;
}

static void code_tab_free(code_tab *t) {
  free(t->tab);
  free(t->recs);
  free(t->rb);
  free(t->rr);
}

/* The code of value (p, len) found at row (b, r), added when new; -1 when
 * the table already holds max values. */
static inline __attribute__((always_inline)) int32_t code_find(code_tab *t, const hkey *k,
                                                               int32_t max, const uint8_t *p,
                                                               int64_t len, uint32_t b,
                                                               uint32_t r) {
  uint64_t w0, w1, h = code_hash(p, len, &w0, &w1);
  uint32_t tag = (uint32_t)(h >> 32);
  for (uint64_t slot = h & t->mask;; slot = (slot + 1) & t->mask) {
    uint64_t v = t->tab[slot];
    if (!v) {
      if (t->n == max) return -1;
      int32_t c = t->n++;
      t->recs[c].w0 = w0, t->recs[c].w1 = w1, t->recs[c].len = (uint64_t)len;
      t->rb[c] = b, t->rr[c] = r;
      t->tab[slot] = ((uint64_t)tag << 32) | (uint64_t)(c + 1);
      return c;
    }
    if ((uint32_t)(v >> 32) != tag) continue;
    int32_t c = (int32_t)(uint32_t)v - 1;
    const ginline *rec = &t->recs[c];
    if (rec->len != (uint64_t)len || rec->w0 != w0 || rec->w1 != w1) continue;
    if (len <= INLINE_MAX) return c;
    int64_t l2;
    const uint8_t *q = bytes_at(k, k->chunks[t->rb[c]], t->rr[c], &l2);
    if (l2 == len && memcmp(p, q, (size_t)len) == 0) return c;
  }
}

static void code_task(void *ctx, int64_t b, int worker) {
  (void)worker;
  code_ctx *c = ctx;
  const qv_array *a = c->k.chunks[b];
  int64_t n = c->boff[b + 1] - c->boff[b];
  uint16_t *out = c->codes + c->boff[b];
  if (a->length < n || !check_chunk(&c->k, a)) {
    c->bad[b] = 1;
    return;
  }
  code_tab t;
  if (!code_tab_init(&t, c->max)) {
    code_tab_free(&t);
    c->bad[b] = 1;
    return;
  }
  const uint8_t *valid =
      a->buffers[0] && qv_array_null_count((qv_array *)a) > 0 ? a->buffers[0]->data : NULL;
  /* offsets read in place for the offset layouts, bytes_at for views */
  const uint8_t *data = c->k.kind != HK_VIEW && a->buffers[2] ? a->buffers[2]->data
                                                              : (const uint8_t *)""; /* all empty */
  const int32_t *o32 =
      c->k.kind == HK_BIN32 ? (const int32_t *)(const void *)a->buffers[1]->data + a->offset : NULL;
  const int64_t *o64 =
      c->k.kind == HK_BIN64 ? (const int64_t *)(const void *)a->buffers[1]->data + a->offset : NULL;
  for (int64_t i = 0; i < n; i++) {
    if (valid && !qv_bit_get(valid, a->offset + i)) {
      out[i] = CODE_LOCAL_NULL;
      c->nulls[b] = 1;
      continue;
    }
    int64_t len;
    const uint8_t *p;
    if (o32) p = data + o32[i], len = (int64_t)o32[i + 1] - o32[i];
    else if (o64) p = data + o64[i], len = o64[i + 1] - o64[i];
    else p = bytes_at(&c->k, a, i, &len);
    int32_t code = code_find(&t, &c->k, c->max, p, len, (uint32_t)b, (uint32_t)i);
    if (code < 0) {
      c->bad[b] = 1;
      break;
    }
    out[i] = (uint16_t)code;
  }
  c->ln[b] = t.n;
  memcpy(c->lrow + b * c->max, t.rr, sizeof(uint32_t) * (size_t)t.n);
  code_tab_free(&t);
  qv_table_batch_done(c->release, b);
}

static void code_remap_task(void *ctx, int64_t b, int worker) {
  (void)worker;
  code_ctx *c = ctx;
  int64_t n = c->boff[b + 1] - c->boff[b];
  uint16_t *out = c->codes + c->boff[b];
  const uint16_t *map = c->map + b * c->max;
  uint16_t null_code = (uint16_t)c->n_values;
  for (int64_t i = 0; i < n; i++) out[i] = out[i] == CODE_LOCAL_NULL ? null_code : map[out[i]];
}

bool qvg_code_strings(qv_pool *pool, const qv_chunked_column *col, const int64_t *boff, int64_t nb,
                      int32_t max_values, qv_table *release, uint16_t *codes, int32_t *n_values,
                      bool *nulls) {
  code_ctx c;
  memset(&c, 0, sizeof c);
  if (!kind_of(col->type, &c.k) ||
      (c.k.kind != HK_BIN32 && c.k.kind != HK_BIN64 && c.k.kind != HK_VIEW) || max_values < 1 ||
      max_values >= (int32_t)CODE_LOCAL_NULL || col->n_chunks != nb)
    return false;
  c.k.chunks = col->chunks;
  c.boff = boff;
  c.max = max_values;
  c.release = release;
  c.codes = codes;
  size_t nbs = (size_t)(nb ? nb : 1);
  c.lrow = malloc(sizeof(uint32_t) * nbs * (size_t)max_values);
  c.map = malloc(sizeof(uint16_t) * nbs * (size_t)max_values);
  c.ln = calloc(nbs, sizeof(int32_t));
  c.bad = calloc(nbs, 1);
  c.nulls = calloc(nbs, 1);
  bool ok = c.lrow && c.map && c.ln && c.bad && c.nulls;
  if (ok) {
    qv_pool_run(pool, nb, code_task, &c);
    qv_error perr;
    ok = qv_pool_check(pool, &perr) == QV_OK;
  }
  for (int64_t b = 0; b < nb && ok; b++) ok = !c.bad[b];
  code_tab g;
  memset(&g, 0, sizeof g);
  ok = ok && code_tab_init(&g, max_values);
  bool any_null = false;
  for (int64_t b = 0; b < nb && ok; b++) {
    any_null |= c.nulls[b] != 0;
    const qv_array *a = col->chunks[b];
    for (int32_t lc = 0; lc < c.ln[b] && ok; lc++) {
      uint32_t r = c.lrow[b * max_values + lc];
      int64_t len;
      const uint8_t *p = bytes_at(&c.k, a, r, &len);
      int32_t gc = code_find(&g, &c.k, max_values, p, len, (uint32_t)b, r);
      ok = gc >= 0;
      if (ok) c.map[b * max_values + lc] = (uint16_t)gc;
    }
  }
  if (ok) {
    c.n_values = g.n;
    qv_pool_run(pool, nb, code_remap_task, &c);
    qv_error perr;
    ok = qv_pool_check(pool, &perr) == QV_OK;
  }
  if (ok) {
    *n_values = g.n;
    *nulls = any_null;
  }
  code_tab_free(&g);
  free(c.lrow);
  free(c.map);
  free(c.ln);
  free(c.bad);
  free(c.nulls);
  return ok;
}
