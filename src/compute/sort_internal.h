/*
 * sort_internal.h — shapes shared by the sort kernels (src/compute/
 * sort_keys.c builds normalised keys, sort.c sorts them) and by the
 * dictionary ranking they need. Compute layer, private to src/compute.
 *
 * A normalised key is one sort key flattened over all n rows of its
 * column, whatever its chunks: a class per row (value, NaN or null) and,
 * for value rows, an order-preserving representation:
 *  - QVS_U64: one uint64 per row whose unsigned order is the value order
 *    (already inverted for descending keys);
 *  - QVS_WIDE: nwords uint64 per row, most significant first (decimal128,
 *    decimal256, fixed_size_binary wider than 8 bytes), also inverted for
 *    descending keys;
 *  - QVS_BYTES: binary/string of every layout, compared byte-wise: each
 *    row's string key at depth 0 (qvs_str_key: the first 7 bytes and a
 *    length marker) in `u64`, which decides most comparisons; the bytes
 *    themselves are reached through the row's chunk (qvs_bytes, a binary
 *    search over the chunks' first rows) only past the first 7 bytes. The
 *    order flag is applied while sorting.
 */
#ifndef QV_SORT_INTERNAL_H
#define QV_SORT_INTERNAL_H

#include <string.h>

#include "quiver/compute.h"

/* Row classes. */
#define QVS_VALUE 0
#define QVS_NAN 1
#define QVS_NULL 2

typedef enum qvs_kind { QVS_U64, QVS_WIDE, QVS_BYTES } qvs_kind;

/** A chunk of a QVS_BYTES key, to reach the bytes of a row. */
typedef struct qvs_chunk {
  int64_t start;         /* first row of the chunk in the column */
  int64_t offset;        /* the array's offset */
  int32_t layout;        /* 4, 8: offsets of that width; 16: views */
  const uint8_t *values; /* offsets or views buffer */
  const uint8_t *data;   /* offsets layouts: the data buffer */
  const qv_array *array; /* views: the variadic data buffers */
} qvs_chunk;

typedef struct qvs_key {
  qvs_kind kind;
  bool descending;
  bool nulls_first;
  int64_t n;
  uint8_t *cls; /* n classes; NULL when every row is a value */
  int64_t n_nan, n_null;
  uint64_t *u64;     /* QVS_U64: n keys; QVS_BYTES: n depth-0 string keys */
  int32_t nwords;    /* QVS_WIDE */
  uint64_t *words;   /* QVS_WIDE: n * nwords */
  qvs_chunk *chunks; /* QVS_BYTES: n_chunks (empty chunks left out) */
  int64_t n_chunks;
} qvs_key;

/** Bytes of value row `row` of a QVS_BYTES key (checked when the key was
 *  built). */
static inline void qvs_bytes(const qvs_key *k, int64_t row, const uint8_t **p, uint32_t *len) {
  int64_t lo = 0, hi = k->n_chunks - 1;
  while (lo < hi) { /* the last chunk starting at or before row */
    int64_t mid = (lo + hi + 1) / 2;
    if (k->chunks[mid].start <= row) lo = mid;
    else hi = mid - 1;
  }
  const qvs_chunk *c = &k->chunks[lo];
  int64_t i = row - c->start + c->offset;
  if (c->layout == 4) {
    int32_t b, e;
    memcpy(&b, c->values + 4 * i, 4);
    memcpy(&e, c->values + 4 * i + 4, 4);
    *p = c->data + b;
    *len = (uint32_t)(e - b);
  } else if (c->layout == 8) {
    int64_t b, e;
    memcpy(&b, c->values + 8 * i, 8);
    memcpy(&e, c->values + 8 * i + 8, 8);
    *p = c->data + b;
    *len = (uint32_t)(e - b);
  } else {
    const uint8_t *v = c->values + QV_VIEW_SIZE * i;
    int32_t n, bi, off;
    memcpy(&n, v, 4);
    *len = (uint32_t)n;
    if (n <= QV_VIEW_INLINE_MAX) {
      *p = v + 4;
    } else {
      memcpy(&bi, v + 8, 4);
      memcpy(&off, v + 12, 4);
      *p = c->array->buffers[2 + bi]->data + off;
    }
  }
}

/**
 * Working memory for per-row arrays: at least `bytes` bytes (uninitialised,
 * zeroed with `zero`), 16-byte aligned; from 2 MiB up, a mapping of its
 * own on 2 MiB boundaries with transparent huge pages requested (fewer
 * page faults and TLB misses in the scattering passes). Free with
 * qvs_free, never free(). NULL on failure.
 */
void *qvs_alloc(size_t bytes, bool zero);

/** Free a qvs_alloc block. NULL-safe. */
void qvs_free(void *p);

/**
 * The sort key of byte string p[0..len) at `depth` (len >= depth): bytes
 * [depth, depth+7) big-endian in the top 7 bytes (zero-padded) and, in the
 * low byte, the number of bytes left when fewer than 8 remain, else 8
 * ("continues past these 7"). Equal keys with a low byte below 8 are equal
 * strings; a prefix sorts before its extensions.
 */
static inline uint64_t qvs_str_key(const uint8_t *p, uint32_t len, int64_t depth) {
  int64_t rem = (int64_t)len - depth;
  uint64_t x;
  if (rem >= 8) {
    memcpy(&x, p + depth, 8);
    return (__builtin_bswap64(x) & ~(uint64_t)0xff) | 8;
  }
  uint8_t tmp[8] = {0};
  if (rem > 0) memcpy(tmp, p + depth, (size_t)rem);
  memcpy(&x, tmp, 8);
  return __builtin_bswap64(x) | (uint64_t)rem;
}

/** qvs_str_key at depth 0 when 8 bytes may be read at p whatever len. */
static inline uint64_t qvs_str_key0_padded(const uint8_t *p, uint32_t len) {
  uint64_t x;
  memcpy(&x, p, 8);
  x = __builtin_bswap64(x);
  if (len >= 8) return (x & ~(uint64_t)0xff) | 8;
  uint64_t keep = len ? ~(uint64_t)0 << (64 - 8 * len) : 0;
  return (x & keep) | len;
}

/**
 * Build the normalised key of a chunked column of `n` rows in all. `what`
 * names the key in errors ("sort key 0"). Ownership: k owns its arrays
 * (free with qvs_key_reset); QVS_BYTES keys point into the chunks, which
 * must outlive k.
 */
qv_status qvs_key_build(qvs_key *k, const qv_type *type, qv_array *const *chunks, int64_t n_chunks,
                        int64_t n, bool descending, bool nulls_first, const char *what,
                        qv_error *err);

/** Free what qvs_key_build allocated and zero k. NULL-safe. */
void qvs_key_reset(qvs_key *k);

/**
 * Stable sort of rows 0..n-1 by keys[0..n_keys): perm[0..n) receives the
 * row ids in order. `scratch` is n uint64 of caller memory (may be the
 * output buffer of the public call). With `clobber`, keys[0].u64 is used
 * as working memory (the keys cannot be compared afterwards).
 * QV_ENOMEM on allocation failure.
 */
qv_status qvs_sort(const qvs_key *keys, int32_t n_keys, int64_t n, uint32_t *perm,
                   uint64_t *scratch, bool clobber, qv_error *err);

/** True when rows a and b of key k are equal (same class; equal values). */
bool qvs_equal(const qvs_key *k, uint32_t a, uint32_t b);

#endif /* QV_SORT_INTERNAL_H */
