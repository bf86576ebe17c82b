/*
 * row_internal.h — shared internals of the row layer (src/row/): a flat view
 * of one key column of a qv_array, the hash primitives, and the AVX2 kernel
 * entry points that row_avx2.c implements and the scalar files dispatch to.
 */
#ifndef QV_ROW_INTERNAL_H
#define QV_ROW_INTERNAL_H

#include <string.h>

#include "quiver/row.h"

/* Rows processed per inner batch by compare and hash (temporaries stay in
 * L1). */
#define QV_ROW_MINIBATCH 1024

/** A key column of an array, flattened for the kernels. */
typedef struct qv_row_colview {
  qv_row_column_meta meta;
  int64_t length;
  const uint8_t *validity;   /* NULL: no nulls */
  int64_t validity_offset;   /* bit offset of element 0 in validity */
  const uint8_t *values;     /* fixed width: element 0 (offset applied);
                              boolean: bit base */
  int64_t values_bit_offset; /* boolean only */
  const int32_t *off32;      /* var-length (offset applied) */
  const int64_t *off64;
  const uint8_t *data; /* var-length bytes */
} qv_row_colview;

static inline bool qv_row_colview_is_null(const qv_row_colview *c, int64_t i) {
  if (c->meta.is_null_type) return true;
  return c->validity != NULL && !qv_bit_get(c->validity, c->validity_offset + i);
}

static inline void qv_row_colview_var(const qv_row_colview *c, int64_t i, const uint8_t **p,
                                      int64_t *len) {
  int64_t b, e;
  if (c->off32) {
    b = c->off32[i];
    e = c->off32[i + 1];
  } else {
    b = c->off64[i];
    e = c->off64[i + 1];
  }
  *p = c->data + b;
  *len = e - b;
}

/** Fill views for cols[0..md->num_cols) checking that each array's type maps
 *  to md->cols[i] and that it has the buffers its type needs. */
qv_status qv_row_colviews(const qv_row_metadata *md, qv_array *const *cols, qv_row_colview *out,
                          qv_error *err);

/** Check selection indices against `length` (sel may be NULL: 0..n-1). */
qv_status qv_row_check_sel(const int64_t *sel, int64_t n, int64_t length, const char *what,
                           qv_error *err);

/** Width in bytes a column occupies in a row (bool/null: 1, var: 4). */
static inline int32_t qv_row_col_width(const qv_row_column_meta *m) {
  if (!m->is_fixed_length) return 4;
  return m->fixed_length == 0 ? 1 : m->fixed_length;
}

static inline uint64_t qv_row_load_le(const uint8_t *p, int32_t w) {
  uint64_t x = 0;
  switch (w) {
    case 1: x = p[0]; break;
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      x = v;
      break;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      x = v;
      break;
    }
    case 8: memcpy(&x, p, 8); break;
    default: memcpy(&x, p, (size_t)w); break;
  }
  return x;
}

/* Make room for `extra` more rows in the null-mask and fixed buffers
 * (row_table.c). */
qv_status qv_row_table_reserve_rows(qv_row_table *t, int64_t extra, qv_error *err);
/* Make room for var-length data of `total` bytes in all. */
qv_status qv_row_table_reserve_bytes(qv_row_table *t, int64_t total, qv_error *err);

/* Offset within the row and length of the k-th var-length field. */
static inline void qv_row_var_field(const qv_row_metadata *md, const uint8_t *row, int32_t k,
                                    uint32_t *begin, uint32_t *len) {
  const uint8_t *ends = row + md->varbinary_end_array_offset;
  uint32_t b, e;
  if (k == 0) {
    b = (uint32_t)md->fixed_length;
  } else {
    memcpy(&b, ends + 4 * (k - 1), 4);
    b += (uint32_t)qv_row_padding(b, md->string_alignment);
  }
  memcpy(&e, ends + 4 * k, 4);
  *begin = b;
  *len = e - b;
}

/* ---- hashing (see row.h) ---- */
#define QV_ROW_HASH_H0 0x243F6A8885A308D3ull
#define QV_ROW_HASH_K 0x9E3779B97F4A7C15ull
#define QV_ROW_HASH_NULL 0x6A09E667F3BCC909ull
#define QV_ROW_HASH_M 0xD6E8FEB86659FD93ull

static inline uint64_t qv_row_mix64(uint64_t x) {
  x ^= x >> 32;
  x *= QV_ROW_HASH_M;
  x ^= x >> 32;
  x *= QV_ROW_HASH_M;
  x ^= x >> 32;
  return x;
}

/** Value term of one non-null value of width 1, 2, 4, 8 or a boolean (the
 *  combining step h = mix64(h ^ v) does the mixing). */
static inline uint64_t qv_row_hash_small(uint64_t x) { return x + QV_ROW_HASH_K; }

uint64_t qv_row_hash_bytes(const uint8_t *p, int64_t len);

/* Values of a boolean or 1/2/4/8-byte column, zero-extended: rows sel[i]
 * (first + i when sel is NULL) for i < n (row_hash.c). */
void qv_row_col_small_values(const qv_row_colview *v, const int64_t *sel, int64_t first, int64_t n,
                             uint64_t *out);
/* The same from rows ids[i] (first + i) of a table, width w at col_off. */
void qv_row_row_small_values(const qv_row_table *t, int32_t col_off, int32_t w, const int64_t *ids,
                             int64_t first, int64_t n, uint64_t *out);

/* ---- SIMD ---- */
bool qv_row_use_avx2(void);

/* AVX2 kernels (row_avx2.c). Each returns how many of the n items it
 * handled (a prefix); the caller finishes the rest with scalar code. */

/* Gather `n` values of width w in {1,2,4,8} at byte positions
 * base + idx[i] (idx given by the row locator) into out[i] as zero-extended
 * uint64. Row locator: fixed tables stride*row, var tables offsets[row]. */
typedef struct qv_row_locator {
  const uint8_t *base;    /* rows base plus the column offset */
  int64_t stride;         /* fixed tables: fixed_length; 0 for var tables */
  const int64_t *offsets; /* var tables: row offsets */
} qv_row_locator;

int64_t qv_row_avx2_gather_rows(const qv_row_locator *loc, const int64_t *ids, int64_t first_row,
                                int64_t n, int32_t w, uint64_t *out);
int64_t qv_row_avx2_gather_col(const uint8_t *values, const int64_t *sel, int64_t n, int32_t w,
                               uint64_t *out);
int64_t qv_row_avx2_hash_small(const uint64_t *x, int64_t n, uint64_t *out);
int64_t qv_row_avx2_combine(uint64_t *h, const uint64_t *v, int64_t n);
int64_t qv_row_avx2_eq64(const uint64_t *a, const uint64_t *b, int64_t n, uint8_t *eq);
/* Encode a fixed-width column of width w in {4, 8} that is the only content
 * of fixed rows of that same width (stride == w), gathering by sel. */
int64_t qv_row_avx2_encode_gather(uint8_t *dst, const uint8_t *src, const int64_t *sel, int64_t n,
                                  int32_t w);
/* Interleave two width-w (4 or 8) columns into rows of stride 2w. */
int64_t qv_row_avx2_encode_pair(uint8_t *dst, const uint8_t *a, const uint8_t *b, int64_t n,
                                int32_t w);
/* Decode width-w (1,2,4,8) values from fixed rows of stride `stride`
 * (starting at src, the first row's column byte) into contiguous out. */
int64_t qv_row_avx2_decode_strided(uint8_t *out, const uint8_t *src, int64_t stride, int64_t n,
                                   int32_t w);

#endif /* QV_ROW_INTERNAL_H */
