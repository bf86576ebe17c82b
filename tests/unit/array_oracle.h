/*
 * array_oracle.h — test-only helpers for the array kernel tests
 * (test_concat.c, test_take.c, test_sort.c, test_grouper.c): a
 * deterministic RNG, builders of random arrays of every Arrow type (with
 * nulls, sliced inputs and sliced children), a reshaper that makes random
 * values collide (small pools, NaN, -0.0, shared string prefixes), a
 * brute-force renderer of one logical element to text, and a structural
 * checker for kernel outputs. The renderer is written independently of the
 * kernels (linear scans, no shared helpers) so it can serve as their
 * oracle.
 */
#ifndef QV_ARRAY_ORACLE_H
#define QV_ARRAY_ORACLE_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/array.h"
#include "qv_test.h"

/* Each test uses a subset of these helpers. */
#pragma GCC diagnostic ignored "-Wunused-function"

/* ---------------------------------------------------------------- RNG -- */

static uint64_t orc_state = 0x9E3779B97F4A7C15ull;
static uint64_t orc_next(void) {
  uint64_t z = (orc_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int64_t orc_int(int64_t n) { return n <= 0 ? 0 : (int64_t)(orc_next() % (uint64_t)n); }

/* -------------------------------------------------------------- types -- */

static qv_type *orc_t(qv_type_id id) { return qv_type_new(id); }
static qv_type *orc_list(qv_type_id id, qv_type *item) { return qv_type_list_of(id, item); }
static qv_type *orc_fsl(qv_type *item, int32_t size) {
  qv_type *t = qv_type_new(QV_FIXED_SIZE_LIST);
  t->list_size = size;
  QV_CHECK(qv_type_add_child(t, "item", true, item, NULL, NULL) == QV_OK);
  return t;
}
static qv_type *orc_fsb(int32_t w) {
  qv_type *t = qv_type_new(QV_FIXED_SIZE_BINARY);
  t->byte_width = w;
  return t;
}
/* orc_nested(id, n, types...): struct / union with children c0, c1, ... */
static qv_type *orc_nested(qv_type_id id, const int32_t *codes, int n, ...) {
  qv_type *t = qv_type_new(id);
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "c%d", i);
    QV_CHECK(qv_type_add_child(t, name, true, va_arg(ap, qv_type *), NULL, NULL) == QV_OK);
  }
  va_end(ap);
  if (codes != NULL) {
    t->type_codes = malloc(sizeof(int32_t) * (size_t)n);
    memcpy(t->type_codes, codes, sizeof(int32_t) * (size_t)n);
  }
  return t;
}
static qv_type *orc_map(qv_type *key, qv_type *value) {
  qv_type *entries = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(entries, "key", false, key, NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(entries, "value", true, value, NULL, NULL) == QV_OK);
  qv_type *t = qv_type_new(QV_MAP);
  QV_CHECK(qv_type_add_child(t, "entries", false, entries, NULL, NULL) == QV_OK);
  return t;
}
static qv_type *orc_dict(qv_type_id index, qv_type *value) {
  qv_type *t = qv_type_new(QV_DICTIONARY);
  t->index_type = qv_type_new(index);
  t->value_type = value;
  return t;
}
static qv_type *orc_ree(qv_type_id run_end, qv_type *value) {
  qv_type *t = qv_type_new(QV_RUN_END_ENCODED);
  QV_CHECK(qv_type_add_child(t, "run_ends", false, qv_type_new(run_end), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(t, "values", true, value, NULL, NULL) == QV_OK);
  return t;
}

/* ------------------------------------------------------------ builders -- */

static qv_buffer *orc_buf(int64_t size) {
  qv_buffer *b = NULL;
  if (qv_buffer_alloc(size, &b, NULL) != QV_OK) abort();
  return b;
}
static void orc_random_bytes(uint8_t *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) p[i] = (uint8_t)orc_next();
}
static int orc_int_width(qv_type_id id) {
  switch (id) {
    case QV_INT8:
    case QV_UINT8: return 1;
    case QV_INT16:
    case QV_UINT16: return 2;
    case QV_INT32:
    case QV_UINT32: return 4;
    default: return 8;
  }
}
static void orc_put(uint8_t *p, int w, int64_t i, int64_t v) {
  if (w == 1) {
    int8_t x = (int8_t)v;
    memcpy(p + i, &x, 1);
  } else if (w == 2) {
    int16_t x = (int16_t)v;
    memcpy(p + 2 * i, &x, 2);
  } else if (w == 4) {
    int32_t x = (int32_t)v;
    memcpy(p + 4 * i, &x, 4);
  } else memcpy(p + 8 * i, &v, 8);
}
static int64_t orc_get(const uint8_t *p, int w, int64_t i) {
  if (w == 1) return (int8_t)p[i];
  if (w == 2) {
    int16_t x;
    memcpy(&x, p + 2 * i, 2);
    return x;
  }
  if (w == 4) {
    int32_t x;
    memcpy(&x, p + 4 * i, 4);
    return x;
  }
  int64_t x;
  memcpy(&x, p + 8 * i, 8);
  return x;
}
static int64_t orc_get_u(const uint8_t *p, qv_type_id id, int64_t i) {
  int w = orc_int_width(id);
  if (id == QV_UINT8) return p[i];
  if (id == QV_UINT16) {
    uint16_t x;
    memcpy(&x, p + 2 * i, 2);
    return x;
  }
  if (id == QV_UINT32) {
    uint32_t x;
    memcpy(&x, p + 4 * i, 4);
    return x;
  }
  return orc_get(p, w, i);
}

static qv_array *orc_gen_sliced(qv_type *t, int64_t len);

/* A random array of `len` elements at offset 0. */
static qv_array *orc_gen(qv_type *t, int64_t len) {
  qv_array *a = qv_array_new(t, qv_type_num_buffers(t->id), t->n_children);
  a->length = len;
  bool validity = t->id != QV_NA && t->id != QV_SPARSE_UNION && t->id != QV_DENSE_UNION &&
                  t->id != QV_RUN_END_ENCODED;
  if (validity && orc_int(3) != 0) {
    a->buffers[0] = orc_buf((len + 7) / 8);
    for (int64_t i = 0; i < len; i++)
      if (orc_int(4) != 0) qv_bit_set(a->buffers[0]->data, i);
  }
  switch (t->id) {
    case QV_NA: break;
    case QV_BOOL:
      a->buffers[1] = orc_buf((len + 7) / 8);
      orc_random_bytes(a->buffers[1]->data, (len + 7) / 8);
      break;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int w = (t->id == QV_LARGE_BINARY || t->id == QV_LARGE_STRING) ? 8 : 4;
      a->buffers[1] = orc_buf((len + 1) * w);
      int64_t total = 0;
      for (int64_t i = 0; i < len; i++) {
        total += orc_int(8);
        orc_put(a->buffers[1]->data, w, i + 1, total);
      }
      a->buffers[2] = orc_buf(total);
      for (int64_t i = 0; i < total; i++) a->buffers[2]->data[i] = (uint8_t)('a' + orc_int(26));
      break;
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: {
      int nd = (int)orc_int(3) + 1;
      qv_buffer **bufs = realloc(a->buffers, sizeof *bufs * (size_t)(2 + nd));
      a->buffers = bufs;
      a->n_buffers = 2 + nd;
      for (int d = 0; d < nd; d++) bufs[2 + d] = orc_buf(0);
      bufs[1] = orc_buf(len * 16);
      for (int64_t i = 0; i < len; i++) {
        uint8_t *v = bufs[1]->data + 16 * i;
        int32_t n = (int32_t)orc_int(30);
        char tmp[32];
        for (int j = 0; j < n; j++) tmp[j] = (char)('A' + orc_int(26));
        memcpy(v, &n, 4);
        if (n <= 12) {
          memcpy(v + 4, tmp, (size_t)n);
        } else {
          int32_t d = (int32_t)orc_int(nd);
          int32_t off = (int32_t)(bufs[2 + d]->size + orc_int(3));
          QV_CHECK(qv_buffer_resize(bufs[2 + d], off, NULL) == QV_OK);
          QV_CHECK(qv_buffer_append(bufs[2 + d], tmp, n, NULL) == QV_OK);
          memcpy(v + 4, tmp, 4);
          memcpy(v + 8, &d, 4);
          memcpy(v + 12, &off, 4);
        }
      }
      break;
    }
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: {
      int w = t->id == QV_LARGE_LIST ? 8 : 4;
      a->buffers[1] = orc_buf((len + 1) * w);
      int64_t total = orc_int(3);
      orc_put(a->buffers[1]->data, w, 0, total);
      for (int64_t i = 0; i < len; i++) {
        total += orc_int(4);
        orc_put(a->buffers[1]->data, w, i + 1, total);
      }
      a->children[0] = orc_gen_sliced(t->children[0].type, total + orc_int(3));
      if (t->id == QV_MAP) { /* entries and keys are never null */
        qv_array *e = a->children[0], *k = e->children[0];
        qv_buffer_unref(e->buffers[0]);
        qv_buffer_unref(k->buffers[0]);
        e->buffers[0] = k->buffers[0] = NULL;
        e->null_count = k->null_count = 0;
      }
      break;
    }
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: {
      int w = t->id == QV_LARGE_LIST_VIEW ? 8 : 4;
      int64_t m = orc_int(3 * len + 2);
      a->buffers[1] = orc_buf(len * w);
      a->buffers[2] = orc_buf(len * w);
      for (int64_t i = 0; i < len; i++) {
        int64_t o = orc_int(m + 1), sz = orc_int(m - o + 1);
        if (sz > 4) sz = 4;
        orc_put(a->buffers[1]->data, w, i, o);
        orc_put(a->buffers[2]->data, w, i, sz);
      }
      a->children[0] = orc_gen_sliced(t->children[0].type, m);
      break;
    }
    case QV_FIXED_SIZE_LIST:
      a->children[0] = orc_gen_sliced(t->children[0].type, len * t->list_size);
      break;
    case QV_STRUCT:
      for (int32_t k = 0; k < t->n_children; k++)
        a->children[k] = orc_gen_sliced(t->children[k].type, len);
      a->null_count = -1;
      break;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      bool dense = t->id == QV_DENSE_UNION;
      a->buffers[0] = orc_buf(len);
      if (dense) a->buffers[1] = orc_buf(4 * len);
      int64_t clen[8];
      for (int32_t k = 0; k < t->n_children; k++) {
        clen[k] = dense ? 1 + orc_int(len + 2) : len;
        a->children[k] = orc_gen_sliced(t->children[k].type, clen[k]);
      }
      for (int64_t i = 0; i < len; i++) {
        int32_t k = (int32_t)orc_int(t->n_children);
        a->buffers[0]->data[i] = (uint8_t)t->type_codes[k];
        if (dense) orc_put(a->buffers[1]->data, 4, i, orc_int(clen[k]));
      }
      break;
    }
    case QV_DICTIONARY: {
      int64_t d = 1 + orc_int(6);
      a->dictionary = orc_gen_sliced(t->value_type, d);
      int w = orc_int_width(t->index_type->id);
      a->buffers[1] = orc_buf(len * w);
      for (int64_t i = 0; i < len; i++) orc_put(a->buffers[1]->data, w, i, orc_int(d));
      break;
    }
    case QV_RUN_END_ENCODED: {
      qv_type *rt = t->children[0].type;
      int w = orc_int_width(rt->id);
      int64_t junk = orc_int(3);
      qv_array *re = qv_array_new(rt, 2, 0);
      re->buffers[1] = orc_buf((len + junk) * w);
      int64_t runs = 0, pos = 0;
      for (int64_t j = 0; j < junk; j++) orc_put(re->buffers[1]->data, w, runs++, 99);
      while (pos < len) {
        pos += 1 + orc_int(4);
        if (pos > len) pos = len;
        orc_put(re->buffers[1]->data, w, runs++, pos);
      }
      re->length = runs;
      re->null_count = 0;
      qv_array *sl = NULL;
      QV_CHECK(qv_array_slice(re, junk, runs - junk, &sl, NULL) == QV_OK);
      qv_array_unref(re);
      a->children[0] = sl;
      a->children[1] = orc_gen_sliced(t->children[1].type, runs - junk);
      break;
    }
    default: {
      int64_t w = qv_type_bit_width(t) / 8;
      a->buffers[1] = orc_buf(len * w);
      orc_random_bytes(a->buffers[1]->data, len * w);
    }
  }
  return a;
}

/* A random array of `len` elements, sliced out of a longer one. */
static qv_array *orc_gen_sliced(qv_type *t, int64_t len) {
  int64_t front = orc_int(2) ? orc_int(5) : 0, back = orc_int(3);
  qv_array *base = orc_gen(t, front + len + back), *s = NULL;
  if (qv_array_slice(base, front, len, &s, NULL) != QV_OK) abort();
  qv_array_unref(base);
  qv_error err; /* the generator itself must produce valid arrays */
  if (qv_array_validate(s, QV_VALIDATE_FULL, "generated", &err) != QV_OK) {
    fprintf(stderr, "array_oracle: invalid generated array: %s\n", err.message);
    abort();
  }
  return s;
}

/* ------------------------------------------------------------ renderer -- */

typedef struct orc_sb {
  char *p;
  size_t len, cap;
} orc_sb;

static void orc_put_s(orc_sb *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (s->len + (size_t)n + 1 > s->cap) {
    s->cap = (s->len + (size_t)n + 1) * 2;
    s->p = realloc(s->p, s->cap);
  }
  memcpy(s->p + s->len, tmp, (size_t)n + 1);
  s->len += (size_t)n;
}
static void orc_bytes(orc_sb *s, const uint8_t *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) orc_put_s(s, "%02x", p[i]);
}

/* Logical element i of a, as text ("null" for nulls). */
static void orc_render(const qv_array *a, int64_t i, orc_sb *s) {
  const qv_type *t = a->type;
  int64_t p = a->offset + i;
  if (t->id == QV_NA) {
    orc_put_s(s, "null");
    return;
  }
  bool validity =
      t->id != QV_SPARSE_UNION && t->id != QV_DENSE_UNION && t->id != QV_RUN_END_ENCODED;
  if (validity && a->buffers[0] != NULL && !qv_bit_get(a->buffers[0]->data, p)) {
    orc_put_s(s, "null");
    return;
  }
  switch (t->id) {
    case QV_BOOL: orc_put_s(s, qv_bit_get(a->buffers[1]->data, p) ? "true" : "false"); return;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int w = (t->id == QV_LARGE_BINARY || t->id == QV_LARGE_STRING) ? 8 : 4;
      int64_t b = orc_get(a->buffers[1]->data, w, p), e = orc_get(a->buffers[1]->data, w, p + 1);
      orc_put_s(s, "'");
      orc_bytes(s, a->buffers[2]->data + b, e - b);
      orc_put_s(s, "'");
      return;
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: {
      const uint8_t *v = a->buffers[1]->data + 16 * p;
      int32_t n, d, off;
      memcpy(&n, v, 4);
      orc_put_s(s, "'");
      if (n <= 12) {
        orc_bytes(s, v + 4, n);
      } else {
        memcpy(&d, v + 8, 4);
        memcpy(&off, v + 12, 4);
        orc_bytes(s, a->buffers[2 + d]->data + off, n);
      }
      orc_put_s(s, "'");
      return;
    }
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_FIXED_SIZE_LIST: {
      int64_t b, e;
      int w = (t->id == QV_LARGE_LIST || t->id == QV_LARGE_LIST_VIEW) ? 8 : 4;
      if (t->id == QV_FIXED_SIZE_LIST) {
        b = p * t->list_size;
        e = b + t->list_size;
      } else if (t->id == QV_LIST_VIEW || t->id == QV_LARGE_LIST_VIEW) {
        b = orc_get(a->buffers[1]->data, w, p);
        e = b + orc_get(a->buffers[2]->data, w, p);
      } else {
        b = orc_get(a->buffers[1]->data, w, p);
        e = orc_get(a->buffers[1]->data, w, p + 1);
      }
      orc_put_s(s, "[");
      for (int64_t j = b; j < e; j++) {
        if (j > b) orc_put_s(s, ", ");
        orc_render(a->children[0], j, s);
      }
      orc_put_s(s, "]");
      return;
    }
    case QV_STRUCT:
      orc_put_s(s, "{");
      for (int32_t k = 0; k < a->n_children; k++) {
        if (k) orc_put_s(s, ", ");
        orc_render(a->children[k], p, s);
      }
      orc_put_s(s, "}");
      return;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      int8_t code = (int8_t)a->buffers[0]->data[p];
      int32_t k = 0;
      while (t->type_codes[k] != code) k++;
      int64_t j = t->id == QV_SPARSE_UNION ? p : orc_get(a->buffers[1]->data, 4, p);
      orc_put_s(s, "%d:", code);
      orc_render(a->children[k], j, s);
      return;
    }
    case QV_DICTIONARY:
      orc_put_s(s, "d");
      orc_render(a->dictionary, orc_get_u(a->buffers[1]->data, t->index_type->id, p), s);
      return;
    case QV_RUN_END_ENCODED: {
      const qv_array *re = a->children[0];
      int w = orc_int_width(re->type->id);
      int64_t j = 0;
      while (orc_get(re->buffers[1]->data, w, re->offset + j) <= p) j++;
      orc_put_s(s, "r");
      orc_render(a->children[1], j, s);
      return;
    }
    default: {
      int64_t w = qv_type_bit_width(t) / 8;
      orc_bytes(s, a->buffers[1]->data + p * w, w);
    }
  }
}

/* Rendering as a fresh string (caller frees). */
static char *orc_str(const qv_array *a, int64_t i) {
  orc_sb s = {NULL, 0, 0};
  orc_put_s(&s, "%s", "");
  orc_render(a, i, &s);
  return s.p;
}

/* ------------------------------------------------------- reshaping -- */

/* Byte map used to make strings share prefixes: mostly 'a'. */
static uint8_t orc_squash(uint8_t c) { return (c % 5 == 0) ? 'b' : (c % 17 == 0 ? 0 : 'a'); }

/* Reshape the random values of a generated array (orc_gen) in place: with `low`,
 * values come from a small pool (many ties); floats always get NaN, -0.0
 * and infinities mixed in. Recurses into dictionaries. */
static void orc_reshape(qv_array *a, bool low) {
  static const double orc_float_pool[] = {-INFINITY, -2.5,     -0.0, 0.0,    1.0,
                                          3.25,      INFINITY, NAN,  -1e300, 7.0};
  static const uint16_t orc_half_pool[] = {0xfc00, 0xc100, 0x8000, 0x0000, 0x3c00,
                                           0x4280, 0x7c00, 0x7e00, 0x7d01, 0x0001};
  const qv_type *t = a->type;
  int64_t n = a->offset + a->length; /* every physical slot up to the end */
  switch (t->id) {
    case QV_NA:
    case QV_BOOL: return;
    case QV_DICTIONARY: orc_reshape(a->dictionary, low || orc_int(2)); return;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
      if (low)
        for (int64_t i = 0; i < a->buffers[2]->size; i++)
          a->buffers[2]->data[i] = orc_squash(a->buffers[2]->data[i]);
      return;
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
      if (low) {
        for (int32_t b = 2; b < a->n_buffers; b++)
          for (int64_t i = 0; i < a->buffers[b]->size; i++)
            a->buffers[b]->data[i] = orc_squash(a->buffers[b]->data[i]);
        for (int64_t i = 0; i < n; i++) { /* inline bytes and prefixes */
          uint8_t *v = a->buffers[1]->data + 16 * i;
          int32_t len;
          memcpy(&len, v, 4);
          for (int j = 0; j < (len <= 12 ? len : 4); j++) v[4 + j] = orc_squash(v[4 + j]);
        }
      }
      return;
    case QV_HALF_FLOAT:
      for (int64_t i = 0; i < n; i++)
        if (low || orc_int(3) == 0)
          memcpy(a->buffers[1]->data + 2 * i, &orc_half_pool[orc_int(10)], 2);
      return;
    case QV_FLOAT:
    case QV_DOUBLE:
      for (int64_t i = 0; i < n; i++) {
        if (!(low || orc_int(3) == 0)) continue;
        double d = orc_float_pool[orc_int(10)];
        if (t->id == QV_FLOAT) {
          float f = (float)d;
          memcpy(a->buffers[1]->data + 4 * i, &f, 4);
        } else memcpy(a->buffers[1]->data + 8 * i, &d, 8);
      }
      return;
    default: {
      int w = qv_type_bit_width(t) / 8;
      if (!low || w == 0) return; /* nested types are left alone */
      for (int64_t i = 0; i < n; i++) {
        uint8_t *p = a->buffers[1]->data + i * w;
        int64_t v = orc_int(7) - 3; /* small signed values, sign-extended */
        for (int j = 0; j < w; j++) p[j] = (uint8_t)(v >> (8 * (j < 8 ? j : 7)));
        if (t->id == QV_FIXED_SIZE_BINARY)
          for (int j = 0; j < w; j++) p[j] = (uint8_t)(orc_int(3) == 0 ? 0xff : orc_int(2));
      }
    }
  }
}

/* ----------------------------------------------------- structure check -- */

/*
 * Check that a kernel output (offset 0, fresh buffers) is well-formed for
 * its length: buffer sizes, offsets within data/children, view buffer
 * indexes, union offsets, run ends. Returns NULL or a static message.
 */
static const char *orc_check(const qv_array *a) {
  static char msg[256];
  const qv_type *t = a->type;
  int64_t n = a->length;
#define ORC_FAIL(...)                                                                              \
  do {                                                                                             \
    snprintf(msg, sizeof msg, __VA_ARGS__);                                                        \
    return msg;                                                                                    \
  } while (0)
  if (a->offset != 0) ORC_FAIL("%s: offset %lld", qv_type_id_name(t->id), (long long)a->offset);
  if (a->n_buffers > 0 && a->buffers[0] && t->id != QV_SPARSE_UNION && t->id != QV_DENSE_UNION &&
      a->buffers[0]->size < (n + 7) / 8)
    ORC_FAIL("validity too small");
  if (a->null_count < 0) ORC_FAIL("null count not computed");
  switch (t->id) {
    case QV_NA:
      if (a->n_buffers != 0 || a->null_count != n) ORC_FAIL("null array shape");
      return NULL;
    case QV_BOOL:
      if (a->buffers[1]->size < (n + 7) / 8) ORC_FAIL("bool values too small");
      return NULL;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: {
      int w =
          (t->id == QV_LARGE_BINARY || t->id == QV_LARGE_STRING || t->id == QV_LARGE_LIST) ? 8 : 4;
      if (a->buffers[1]->size < (n + 1) * w) ORC_FAIL("offsets too small");
      int64_t limit = (t->id == QV_LIST || t->id == QV_LARGE_LIST || t->id == QV_MAP)
                          ? a->children[0]->length
                          : a->buffers[2]->size;
      for (int64_t i = 0; i < n; i++)
        if (orc_get(a->buffers[1]->data, w, i) > orc_get(a->buffers[1]->data, w, i + 1))
          ORC_FAIL("offsets decrease at %lld", (long long)i);
      if (orc_get(a->buffers[1]->data, w, 0) < 0 || orc_get(a->buffers[1]->data, w, n) > limit)
        ORC_FAIL("offsets outside [0, %lld]", (long long)limit);
      if (a->n_children) return orc_check(a->children[0]);
      return NULL;
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
      if (a->buffers[1]->size < n * 16) ORC_FAIL("views too small");
      for (int64_t i = 0; i < n; i++) {
        int32_t len, d, off;
        memcpy(&len, a->buffers[1]->data + 16 * i, 4);
        if (len <= 12) continue;
        memcpy(&d, a->buffers[1]->data + 16 * i + 8, 4);
        memcpy(&off, a->buffers[1]->data + 16 * i + 12, 4);
        if (d < 0 || d >= a->n_buffers - 2) ORC_FAIL("view %lld: buffer %d", (long long)i, d);
        if (off < 0 || off + len > a->buffers[2 + d]->size)
          ORC_FAIL("view %lld range", (long long)i);
        if (memcmp(a->buffers[1]->data + 16 * i + 4, a->buffers[2 + d]->data + off, 4) != 0)
          ORC_FAIL("view %lld prefix", (long long)i);
      }
      return NULL;
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: {
      int w = t->id == QV_LARGE_LIST_VIEW ? 8 : 4;
      if (a->buffers[1]->size < n * w || a->buffers[2]->size < n * w) ORC_FAIL("views small");
      for (int64_t i = 0; i < n; i++) {
        int64_t o = orc_get(a->buffers[1]->data, w, i), sz = orc_get(a->buffers[2]->data, w, i);
        if (o < 0 || sz < 0 || o + sz > a->children[0]->length)
          ORC_FAIL("list view %lld", (long long)i);
      }
      return NULL; /* child may be shared (not offset 0) */
    }
    case QV_FIXED_SIZE_LIST:
      if (a->children[0]->length != n * t->list_size) ORC_FAIL("fsl child length");
      return orc_check(a->children[0]);
    case QV_STRUCT:
    case QV_SPARSE_UNION:
      for (int32_t k = 0; k < a->n_children; k++) {
        if (a->children[k]->length != n) ORC_FAIL("child %d length", k);
        const char *m = orc_check(a->children[k]);
        if (m) return m;
      }
      if (t->id == QV_SPARSE_UNION && a->buffers[0]->size < n) ORC_FAIL("type ids small");
      return NULL;
    case QV_DENSE_UNION:
      if (a->buffers[0]->size < n || a->buffers[1]->size < 4 * n) ORC_FAIL("union buffers");
      for (int64_t i = 0; i < n; i++) {
        int32_t k = 0;
        while (k < t->n_children && t->type_codes[k] != (int8_t)a->buffers[0]->data[i]) k++;
        if (k == t->n_children) ORC_FAIL("bad type id");
        int64_t o = orc_get(a->buffers[1]->data, 4, i);
        if (o < 0 || o >= a->children[k]->length) ORC_FAIL("union offset %lld", (long long)i);
      }
      for (int32_t k = 0; k < a->n_children; k++) {
        const char *m = orc_check(a->children[k]);
        if (m) return m;
      }
      return NULL;
    case QV_DICTIONARY: {
      int w = orc_int_width(t->index_type->id);
      if (a->buffers[1]->size < n * w) ORC_FAIL("indices small");
      for (int64_t i = 0; i < n; i++) {
        if (a->buffers[0] && !qv_bit_get(a->buffers[0]->data, i)) continue;
        int64_t v = orc_get_u(a->buffers[1]->data, t->index_type->id, i);
        if (v < 0 || v >= a->dictionary->length) ORC_FAIL("index %lld", (long long)i);
      }
      return NULL;
    }
    case QV_RUN_END_ENCODED: {
      const qv_array *re = a->children[0];
      int w = orc_int_width(re->type->id);
      if (re->length != a->children[1]->length) ORC_FAIL("runs vs values");
      if (re->buffers[1]->size < re->length * w) ORC_FAIL("run ends small");
      int64_t prev = 0;
      for (int64_t j = 0; j < re->length; j++) {
        int64_t e = orc_get(re->buffers[1]->data, w, j);
        if (e <= prev) ORC_FAIL("run ends not increasing at %lld", (long long)j);
        prev = e;
      }
      if (prev != n) ORC_FAIL("last run end %lld != length %lld", (long long)prev, (long long)n);
      return orc_check(a->children[1]);
    }
    default:
      if (a->buffers[1]->size < n * (qv_type_bit_width(t) / 8)) ORC_FAIL("values small");
      return NULL;
  }
#undef ORC_FAIL
}

/* ---------------------------------------------------- the type catalog -- */

/* NULL when a and b are the same bits: type, length, offset, null count,
 * every buffer (size and bytes), children and dictionary, recursively;
 * else what differs first. For results that must be identical, not only
 * equal in value. */
static const char *orc_same_bits(const qv_array *a, const qv_array *b) {
  if (!qv_type_equals(a->type, b->type, true)) return "type";
  if (a->length != b->length || a->offset != b->offset) return "length or offset";
  if (qv_array_null_count((qv_array *)a) != qv_array_null_count((qv_array *)b)) return "null count";
  if (a->n_buffers != b->n_buffers || a->n_children != b->n_children) return "layout";
  for (int32_t i = 0; i < a->n_buffers; i++) {
    const qv_buffer *x = a->buffers[i], *y = b->buffers[i];
    if ((x == NULL) != (y == NULL)) return "a buffer is missing";
    if (x != NULL && (x->size != y->size || memcmp(x->data, y->data, (size_t)x->size) != 0))
      return "buffer bytes";
  }
  for (int32_t i = 0; i < a->n_children; i++) {
    const char *d = orc_same_bits(a->children[i], b->children[i]);
    if (d != NULL) return d;
  }
  if ((a->dictionary == NULL) != (b->dictionary == NULL)) return "dictionary";
  return a->dictionary ? orc_same_bits(a->dictionary, b->dictionary) : NULL;
}

#define ORC_N_TYPES 44
/* The i-th test type (a new reference). Covers every type id, nested
 * combinations, and every fixed width the kernels specialise. */
static qv_type *orc_type(int i) {
  static const int32_t codes_a[] = {5, 2, 9}, codes_b[] = {0, 3, 7};
  switch (i) {
    case 0: return orc_t(QV_NA);
    case 1: return orc_t(QV_BOOL);
    case 2: return orc_t(QV_INT8);
    case 3: return orc_t(QV_UINT16);
    case 4: return orc_t(QV_INT32);
    case 5: return orc_t(QV_INT64);
    case 6: return orc_t(QV_HALF_FLOAT);
    case 7: return orc_t(QV_DOUBLE);
    case 8: {
      qv_type *t = orc_t(QV_DECIMAL128);
      t->precision = 20;
      t->scale = 2;
      return t;
    }
    case 9: {
      qv_type *t = orc_t(QV_DECIMAL256);
      t->precision = 50;
      return t;
    }
    case 10: return orc_t(QV_DATE32);
    case 11: return qv_type_timestamp(QV_MICRO, "UTC");
    case 12: return orc_t(QV_INTERVAL_MONTH_DAY_NANO);
    case 13: return orc_fsb(3);
    case 14: return orc_t(QV_BINARY);
    case 15: return orc_t(QV_STRING);
    case 16: return orc_t(QV_LARGE_BINARY);
    case 17: return orc_t(QV_LARGE_STRING);
    case 18: return orc_t(QV_BINARY_VIEW);
    case 19: return orc_t(QV_STRING_VIEW);
    case 20: return orc_list(QV_LIST, orc_t(QV_INT32));
    case 21: return orc_list(QV_LARGE_LIST, orc_t(QV_STRING));
    case 22: return orc_map(orc_t(QV_STRING), orc_t(QV_INT64));
    case 23: return orc_list(QV_LIST_VIEW, orc_t(QV_STRING_VIEW));
    case 24: return orc_list(QV_LARGE_LIST_VIEW, orc_t(QV_INT16));
    case 25: return orc_fsl(orc_t(QV_BOOL), 3);
    case 26: return orc_fsl(orc_list(QV_LIST, orc_t(QV_INT8)), 2);
    case 27:
      return orc_nested(QV_STRUCT, NULL, 3, orc_t(QV_INT8), orc_t(QV_STRING),
                        orc_list(QV_LIST, orc_t(QV_INT64)));
    case 28:
      return orc_nested(QV_SPARSE_UNION, codes_a, 3, orc_t(QV_INT32), orc_t(QV_STRING),
                        orc_nested(QV_STRUCT, NULL, 1, orc_t(QV_BOOL)));
    case 29:
      return orc_nested(QV_DENSE_UNION, codes_b, 3, orc_t(QV_STRING), orc_t(QV_INT64),
                        orc_list(QV_LIST, orc_t(QV_INT8)));
    case 30: return orc_dict(QV_INT8, orc_t(QV_STRING));
    case 31: return orc_dict(QV_UINT16, orc_t(QV_INT64));
    case 32: return orc_ree(QV_INT32, orc_t(QV_STRING));
    case 33: return orc_ree(QV_INT16, orc_list(QV_LIST, orc_t(QV_INT32)));
    case 34: return orc_ree(QV_INT64, orc_t(QV_DOUBLE));
    case 35: return orc_list(QV_LIST, orc_dict(QV_INT32, orc_t(QV_STRING)));
    case 36:
      return orc_nested(QV_STRUCT, NULL, 2,
                        orc_nested(QV_DENSE_UNION, codes_b, 3, orc_t(QV_INT8),
                                   orc_t(QV_BINARY_VIEW), orc_t(QV_NA)),
                        orc_ree(QV_INT32, orc_t(QV_INT8)));
    case 37:
      return orc_list(QV_LIST, orc_nested(QV_STRUCT, NULL, 2,
                                          orc_nested(QV_SPARSE_UNION, codes_a, 3, orc_t(QV_INT8),
                                                     orc_t(QV_LARGE_STRING), orc_t(QV_BOOL)),
                                          orc_fsl(orc_t(QV_INT16), 2)));
    case 38: return orc_fsl(orc_t(QV_INT32), 0);
    case 39: return orc_fsb(16);
    case 40: return orc_fsb(32);
    case 41: return orc_fsb(5);
    case 42: return orc_list(QV_LIST_VIEW, orc_list(QV_LIST, orc_t(QV_STRING)));
    default: return orc_dict(QV_UINT8, orc_list(QV_LIST, orc_t(QV_STRING)));
  }
}

#endif /* QV_ARRAY_ORACLE_H */
