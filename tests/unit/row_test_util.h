/*
 * row_test_util.h — helpers shared by the row-table tests: a host-side model
 * of key columns (null flags + value bytes) that builds qv_arrays (with an
 * array offset, optional validity) and checks decoded arrays against it.
 */
#ifndef QV_ROW_TEST_UTIL_H
#define QV_ROW_TEST_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/row.h"
#include "qv_test.h"

typedef struct mcol {
  qv_type *type;
  int kind; /* 0 fixed, 1 bool, 2 var, 3 null type */
  int w;    /* fixed width */
  int64_t n;
  uint8_t *null;  /* 1 = null */
  uint8_t *fixed; /* n * w (kind 0), n bytes 0/1 (kind 1) */
  uint8_t **str;  /* kind 2 */
  int64_t *len;
  qv_array *dict; /* dictionary columns: the dictionary */
} mcol;

static uint64_t rng_state = 0x853c49e6748fea9bull;
static inline uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static inline int64_t rnd_below(int64_t n) { return (int64_t)(rnd() % (uint64_t)n); }

static inline void mcol_init(mcol *c, qv_type *type, int64_t n) {
  memset(c, 0, sizeof *c);
  c->type = type;
  c->n = n;
  c->null = calloc((size_t)n + 1, 1);
  qv_row_column_meta m;
  QV_CHECK(qv_row_column_meta_from_type(type, &m, NULL) == QV_OK);
  if (m.is_null_type) {
    c->kind = 3;
    for (int64_t i = 0; i < n; i++) c->null[i] = 1;
  } else if (!m.is_fixed_length) {
    c->kind = 2;
    c->str = calloc((size_t)n + 1, sizeof(uint8_t *));
    c->len = calloc((size_t)n + 1, sizeof(int64_t));
  } else if (m.fixed_length == 0) {
    c->kind = 1;
    c->w = 1;
    c->fixed = calloc((size_t)n + 1, 1);
  } else {
    c->kind = 0;
    c->w = m.fixed_length;
    c->fixed = calloc((size_t)n * (size_t)c->w + 1, 1);
  }
}

static inline void mcol_free(mcol *c) {
  if (c->str)
    for (int64_t i = 0; i < c->n; i++) free(c->str[i]);
  free(c->str);
  free(c->len);
  free(c->null);
  free(c->fixed);
  qv_array_unref(c->dict);
  qv_type_unref(c->type);
  memset(c, 0, sizeof *c);
}

static inline void mcol_set_str(mcol *c, int64_t i, const void *p, int64_t len) {
  free(c->str[i]);
  c->str[i] = malloc((size_t)len + 1);
  if (len) memcpy(c->str[i], p, (size_t)len);
  c->len[i] = len;
}

static inline bool mcol_has_nulls(const mcol *c) {
  for (int64_t i = 0; i < c->n; i++)
    if (c->null[i]) return true;
  return false;
}

static inline qv_buffer *buf_of(int64_t size) {
  qv_buffer *b = NULL;
  QV_CHECK(qv_buffer_alloc(size, &b, NULL) == QV_OK);
  return b;
}

/* Build an array of the model's rows, stored at offset `off` of its buffers.
 * with_validity: 0 or 1 when there are nulls, 2 always. */
static inline qv_array *mcol_array(const mcol *c, int64_t off, int with_validity) {
  int64_t n = c->n, total = n + off;
  if (c->kind == 3) {
    qv_array *a = qv_array_new(c->type, 0, 0);
    a->length = n;
    a->null_count = n;
    return a;
  }
  qv_array *a = qv_array_new(c->type, c->kind == 2 ? 3 : 2, 0);
  a->length = n;
  a->offset = off;
  a->null_count = -1;
  bool nulls = mcol_has_nulls(c);
  if (with_validity == 2 || nulls) {
    a->buffers[0] = buf_of((total + 7) / 8);
    for (int64_t i = 0; i < total; i++)
      if (i < off ? (i & 1) : !c->null[i - off]) qv_bit_set(a->buffers[0]->data, i);
  }
  if (c->kind == 1) {
    a->buffers[1] = buf_of((total + 7) / 8);
    for (int64_t i = 0; i < total; i++)
      if (i < off ? (i % 3 == 0) : c->fixed[i - off]) qv_bit_set(a->buffers[1]->data, i);
  } else if (c->kind == 0) {
    a->buffers[1] = buf_of(total * c->w);
    for (int64_t i = 0; i < total * c->w; i++) a->buffers[1]->data[i] = (uint8_t)(i * 7 + 1);
    memcpy(a->buffers[1]->data + off * c->w, c->fixed, (size_t)(n * c->w));
  } else {
    bool large = c->type->id == QV_LARGE_BINARY || c->type->id == QV_LARGE_STRING;
    int ow = large ? 8 : 4;
    int64_t bytes = 3 * off; /* garbage before the offset */
    for (int64_t i = 0; i < n; i++) bytes += c->len[i] + (c->null[i] ? 2 : 0);
    a->buffers[1] = buf_of((total + 1) * ow);
    a->buffers[2] = buf_of(bytes);
    uint8_t *ob = a->buffers[1]->data, *d = a->buffers[2]->data;
    int64_t pos = 0;
    for (int64_t i = 0; i <= total; i++) {
      if (ow == 4) {
        int32_t v = (int32_t)pos;
        memcpy(ob + i * 4, &v, 4);
      } else {
        memcpy(ob + i * 8, &pos, 8);
      }
      if (i == total) break;
      if (i < off) {
        memcpy(d + pos, "zzz", 3);
        pos += 3;
      } else if (c->null[i - off]) {
        memcpy(d + pos, "NN", 2); /* a null slot with bytes behind it */
        pos += 2;
      } else {
        if (c->len[i - off]) memcpy(d + pos, c->str[i - off], (size_t)c->len[i - off]);
        pos += c->len[i - off];
      }
    }
  }
  if (c->dict) a->dictionary = qv_array_ref(c->dict);
  return a;
}

/* Do rows sel[i] of model c equal decoded array a (row i)? Returns the first
 * mismatching row or -1. */
static inline int64_t mcol_check(const mcol *c, const int64_t *sel, int64_t n, const qv_array *a) {
  if (a->length != n) return -2;
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t r = sel ? sel[i] : i;
    bool isnull =
        c->kind == 3 ? true : (a->buffers[0] && !qv_bit_get(a->buffers[0]->data, a->offset + i));
    if (isnull != (bool)c->null[r]) return i;
    nulls += isnull;
    if (isnull) continue;
    if (c->kind == 1) {
      if (qv_bit_get(a->buffers[1]->data, a->offset + i) != (bool)c->fixed[r]) return i;
    } else if (c->kind == 0) {
      if (memcmp(a->buffers[1]->data + (a->offset + i) * c->w, c->fixed + r * c->w, (size_t)c->w) !=
          0)
        return i;
    } else if (c->kind == 2) {
      bool large = c->type->id == QV_LARGE_BINARY || c->type->id == QV_LARGE_STRING;
      int64_t b, e;
      if (large) {
        memcpy(&b, a->buffers[1]->data + (a->offset + i) * 8, 8);
        memcpy(&e, a->buffers[1]->data + (a->offset + i + 1) * 8, 8);
      } else {
        int32_t b4, e4;
        memcpy(&b4, a->buffers[1]->data + (a->offset + i) * 4, 4);
        memcpy(&e4, a->buffers[1]->data + (a->offset + i + 1) * 4, 4);
        b = b4;
        e = e4;
      }
      if (e - b != c->len[r]) return i;
      if (c->len[r] && memcmp(a->buffers[2]->data + b, c->str[r], (size_t)c->len[r]) != 0) return i;
    }
  }
  if (a->null_count != nulls) return -3;
  return -1;
}

/* Are keys r1 and r2 equal (NULL == NULL)? */
static inline bool mcols_key_equal(const mcol *cols, int nc, int64_t r1, int64_t r2) {
  for (int k = 0; k < nc; k++) {
    const mcol *c = &cols[k];
    if (c->null[r1] != c->null[r2]) return false;
    if (c->null[r1]) continue;
    if (c->kind == 0 || c->kind == 1) {
      if (memcmp(c->fixed + r1 * c->w, c->fixed + r2 * c->w, (size_t)c->w)) return false;
    } else if (c->kind == 2) {
      if (c->len[r1] != c->len[r2]) return false;
      if (c->len[r1] && memcmp(c->str[r1], c->str[r2], (size_t)c->len[r1])) return false;
    }
  }
  return true;
}

static inline bool mcols_key_has_null(const mcol *cols, int nc, int64_t r) {
  for (int k = 0; k < nc; k++)
    if (cols[k].null[r]) return true;
  return false;
}

#endif
