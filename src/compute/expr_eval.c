/*
 * expr_eval.c — vectorised evaluation of a bound expression (expr_bind.c)
 * over one record batch at a time. Compute layer; needs only core.
 *
 * Every node computes a whole column of results (a qvx_vec) into working
 * memory it owns and reuses from batch to batch; no allocation happens per
 * row. Validity is a bitmap aligned at bit 0 (NULL when every row is
 * valid); comparisons and logic produce bitmaps a byte or a word at a time.
 * Null semantics are SQL's three-valued logic (docs/expressions.md).
 *
 * Errors are raised only for rows whose value decides the result: each
 * node receives a "care" bitmap (NULL: every row), and `and` / `or` narrow
 * it for their right operand to the rows the left operand did not already
 * decide. So `x != 0 and 10 % x > 1` never reports a division by zero.
 *
 * Dictionary-encoded columns: the binder wraps the largest null-propagating
 * sub-expression over one dictionary column in a DICT node, evaluated over
 * the dictionary's values once (and cached while batches share the
 * dictionary array), then mapped to the rows through the indices. Columns
 * used elsewhere are decoded through the indices (strings by an indirection
 * table, never copied).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/expr_internal.h"
#include "core/guard_internal.h"
#include "core/numeric_internal.h"

/* A column resolved in the current batch. */
typedef struct colref {
  const qv_array *leaf; /* the column's array */
  int64_t base;         /* physical slot in leaf of logical row 0 */
  int32_t n_anc;        /* validity bitmaps of enclosing structs */
  const qv_buffer *anc_bits[QVX_MAX_PATH + 1];
  int64_t anc_off[QVX_MAX_PATH + 1];
} colref;

typedef struct ctx {
  qv_bound_expr *b;
  int64_t n; /* rows being computed */
  colref *cols;
  const qv_array *dict; /* inside a DICT node: the dictionary array */
  qv_error *err;
} ctx;

/* ======================================================================== */
/* Working memory and bitmaps                                                */

/* Bitmap bytes for n bits, rounded to whole 64-bit words. */
static int64_t bm_bytes(int64_t n) { return n <= 0 ? 8 : ((n + 63) / 64) * 8; }

static void *grow(ctx *c, qvx_scratch *s, int64_t bytes) {
  if (bytes < 8) bytes = 8;
  if (s->cap < bytes) {
    int64_t cap = s->cap ? s->cap : 64;
    while (cap < bytes) cap *= 2;
    void *p = realloc(s->p, (size_t)cap);
    if (!p) {
      qv_error_set(c->err, QV_ENOMEM, "out of memory evaluating an expression (%" PRId64 " bytes)",
                   cap);
      return NULL;
    }
    s->p = p;
    s->cap = cap;
  }
  return s->p;
}

#define GROW(var, type, scratch, bytes)                                                            \
  type var = grow(c, (scratch), (bytes));                                                          \
  if (!var) return QV_ENOMEM

/* dst[0, n) = src[off, off + n); src holds at least ceil((off+n)/8) bytes. */
static void copy_bits0(uint8_t *dst, const uint8_t *src, int64_t off, int64_t n) {
  int64_t nb = (n + 7) / 8;
  const uint8_t *s = src + (off >> 3);
  int sh = (int)(off & 7);
  if (sh == 0) {
    memcpy(dst, s, (size_t)nb);
    return;
  }
  int64_t last = (off + n - 1) >> 3; /* last source byte that may be read */
  for (int64_t k = 0; k < nb; k++) {
    uint8_t lo = s[k] >> sh;
    uint8_t hi = ((off >> 3) + k + 1 <= last) ? (uint8_t)(s[k + 1] << (8 - sh)) : 0;
    dst[k] = lo | hi;
  }
}

/* True when any of bits [0, n) is set. */
static bool bits_any(const uint8_t *bits, int64_t n) {
  int64_t full = n / 8;
  for (int64_t k = 0; k < full; k++)
    if (bits[k]) return true;
  if (n & 7) return (bits[full] & ((1u << (n & 7)) - 1)) != 0;
  return false;
}

static inline bool vbit(const uint8_t *valid, int64_t i) { return !valid || qv_bit_get(valid, i); }

/* out = a & b for bitmaps that may be NULL (all ones). Returns the result
 * bitmap (one of the inputs when the other is NULL). */
static const uint8_t *and_valid(const uint8_t *a, const uint8_t *b, uint8_t *out, int64_t n) {
  if (!a) return b;
  if (!b) return a;
  int64_t words = bm_bytes(n) / 8;
  for (int64_t w = 0; w < words; w++) {
    uint64_t x, y;
    memcpy(&x, a + 8 * w, 8);
    memcpy(&y, b + 8 * w, 8);
    x &= y;
    memcpy(out + 8 * w, &x, 8);
  }
  return out;
}

/* ======================================================================== */
/* Messages                                                                  */

static qv_status eval_err(ctx *c, const qvx_bnode *n, qv_status st, int64_t row, const char *fmt,
                          ...) QV_PRINTF(5, 6);
static qv_status eval_err(ctx *c, const qvx_bnode *n, qv_status st, int64_t row, const char *fmt,
                          ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int len = (int)(n->end - n->start);
  const char *t = c->b->text + n->start;
  if (len > 60) return qv_error_set(c->err, st, "%s in '%.57s...' at row %" PRId64, msg, t, row);
  return qv_error_set(c->err, st, "%s in '%.*s' at row %" PRId64, msg, len, t, row);
}

static qv_status col_err(ctx *c, int32_t col, qv_status st, const char *fmt, ...) QV_PRINTF(4, 5);
static qv_status col_err(ctx *c, int32_t col, qv_status st, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return qv_error_set(c->err, st, "column '%s'%s: %s", c->b->cols[col].name,
                      c->dict ? " (dictionary values)" : "", msg);
}

/* ======================================================================== */
/* Strings                                                                   */

/* Bytes of logical element i. False when the array's offsets or views
 * point outside its buffers (a malformed array). */
static inline bool str_at(const qvx_str *s, int64_t i, const uint8_t **p, int64_t *len) {
  if (s->mode == QVX_S_SCALAR) {
    *p = s->data;
    *len = s->data_size;
    return true;
  }
  int64_t j = s->base + (s->indirect ? s->indirect[i] : i);
  if (s->mode == QVX_S_OFF32) {
    int32_t b, e;
    memcpy(&b, s->offsets + 4 * j, 4);
    memcpy(&e, s->offsets + 4 * j + 4, 4);
    if (b < 0 || e < b || e > s->data_size) return false;
    *p = s->data + b;
    *len = e - b;
    return true;
  }
  if (s->mode == QVX_S_OFF64) {
    int64_t b, e;
    memcpy(&b, s->offsets + 8 * j, 8);
    memcpy(&e, s->offsets + 8 * j + 8, 8);
    if (b < 0 || e < b || e > s->data_size) return false;
    *p = s->data + b;
    *len = e - b;
    return true;
  }
  const uint8_t *v = s->offsets + QV_VIEW_SIZE * j;
  int32_t n;
  memcpy(&n, v, 4);
  if (n < 0) return false;
  if (n <= QV_VIEW_INLINE_MAX) {
    *p = v + 4;
    *len = n;
    return true;
  }
  int32_t bi, off;
  memcpy(&bi, v + 8, 4);
  memcpy(&off, v + 12, 4);
  if (bi < 0 || bi >= s->n_vbufs || off < 0 || !s->vbufs[bi] ||
      (int64_t)off + n > s->vbufs[bi]->size)
    return false;
  *p = s->vbufs[bi]->data + off;
  *len = n;
  return true;
}

static qv_status bad_str(ctx *c, const qvx_bnode *n, int64_t row) {
  return eval_err(c, n, QV_EINVAL, row,
                  "string offsets or views point outside their buffers (malformed array)");
}

static int bytes_cmp(const uint8_t *a, int64_t an, const uint8_t *b, int64_t bn) {
  int64_t m = an < bn ? an : bn;
  int r = m ? memcmp(a, b, (size_t)m) : 0;
  if (r) return r < 0 ? -1 : 1;
  return (an > bn) - (an < bn);
}

/* ======================================================================== */
/* Columns                                                                   */

static bool has_validity_slot(qv_type_id id) {
  return id != QV_NA && id != QV_SPARSE_UNION && id != QV_DENSE_UNION && id != QV_RUN_END_ENCODED;
}

/* Resolve every bound column in the batch and check its type. */
static qv_status resolve_columns(ctx *c, const qv_array *batch) {
  qv_bound_expr *b = c->b;
  for (int32_t k = 0; k < b->n_cols; k++) {
    const qvx_col *col = &b->cols[k];
    colref *r = &c->cols[k];
    r->n_anc = 0;
    const qv_array *a = batch;
    int64_t pos = 0; /* logical index in `a` of row 0 */
    for (int32_t d = 0; d < col->depth; d++) {
      if (a->type->id != QV_STRUCT || col->path[d] >= a->n_children || !a->children[col->path[d]])
        return qv_error_set(c->err, QV_ETYPE,
                            "batch does not match the expression's schema: no column '%s'",
                            col->name);
      int64_t phys = a->offset + pos;
      if (a->n_buffers > 0 && a->buffers[0]) {
        if (a->buffers[0]->size < (phys + c->n + 7) / 8)
          return col_err(c, k, QV_EINVAL, "a parent struct's validity bitmap is too short");
        r->anc_bits[r->n_anc] = a->buffers[0];
        r->anc_off[r->n_anc++] = phys;
      }
      a = a->children[col->path[d]];
      pos = phys;
      if (a->length < pos + c->n)
        return col_err(c, k, QV_EINVAL, "child array has %" PRId64 " elements, needs %" PRId64,
                       a->length, pos + c->n);
    }
    if (!qv_type_equals(a->type, col->type, false)) {
      char want[96], got[96];
      qv_type_to_string(col->type, want, sizeof want);
      qv_type_to_string(a->type, got, sizeof got);
      return qv_error_set(c->err, QV_ETYPE,
                          "batch does not match the expression's schema: column '%s' is %s, "
                          "the expression was bound to %s",
                          col->name, got, want);
    }
    r->leaf = a;
    r->base = a->offset + pos;
  }
  return QV_OK;
}

/* Validity of a column (its own bitmap and its parents'), into s. */
static qv_status load_validity(ctx *c, int32_t col, const colref *r, qvx_scratch *s,
                               qvx_scratch *tmp, const uint8_t **out) {
  int64_t n = c->n;
  const qv_array *a = r->leaf;
  *out = NULL;
  if (a->type->id == QV_NA) { /* every row null */
    GROW(v, uint8_t *, s, bm_bytes(n));
    memset(v, 0, (size_t)bm_bytes(n));
    *out = v;
    return QV_OK;
  }
  const qv_buffer *own =
      (has_validity_slot(a->type->id) && a->n_buffers > 0) ? a->buffers[0] : NULL;
  if (own && own->size < (r->base + n + 7) / 8)
    return col_err(c, col, QV_EINVAL, "validity bitmap has %" PRId64 " bytes, needs %" PRId64,
                   own->size, (r->base + n + 7) / 8);
  int32_t count = r->n_anc + (own ? 1 : 0);
  if (count == 0) return QV_OK;
  GROW(v, uint8_t *, s, bm_bytes(n));
  bool first = true;
  for (int32_t k = 0; k < count; k++) {
    const qv_buffer *bits = k < r->n_anc ? r->anc_bits[k] : own;
    int64_t off = k < r->n_anc ? r->anc_off[k] : r->base;
    if (first) {
      copy_bits0(v, bits->data, off, n);
      first = false;
      continue;
    }
    GROW(t, uint8_t *, tmp, bm_bytes(n));
    copy_bits0(t, bits->data, off, n);
    for (int64_t w = 0; w < (n + 7) / 8; w++) v[w] &= t[w];
  }
  *out = v;
  return QV_OK;
}

/* Numbers of a fixed-width array, slots [base, base + n), as int64 /
 * uint64 / double (by the type) into out. */
static qv_status load_numbers(ctx *c, int32_t col, const qv_array *a, int64_t base, int64_t n,
                              void *out) {
  int32_t w = qv_type_byte_width(a->type);
  if (a->n_buffers < 2 || !a->buffers[1] || a->buffers[1]->size < (base + n) * (int64_t)w)
    return col_err(c, col, QV_EINVAL, "values buffer is too short for %" PRId64 " values",
                   base + n);
  const uint8_t *p = a->buffers[1]->data + base * w;
  int64_t *oi = out;
  double *of = out;
  switch (a->type->id) {
#define LOAD(ID, T, DST, CAST)                                                                     \
  case ID:                                                                                         \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T x;                                                                                         \
      memcpy(&x, p + sizeof(T) * (size_t)i, sizeof(T));                                            \
      DST[i] = (CAST)x;                                                                            \
    }                                                                                              \
    break;
    LOAD(QV_INT8, int8_t, oi, int64_t)
    LOAD(QV_INT16, int16_t, oi, int64_t)
    LOAD(QV_INT32, int32_t, oi, int64_t)
    LOAD(QV_INT64, int64_t, oi, int64_t)
    LOAD(QV_UINT8, uint8_t, oi, int64_t)
    LOAD(QV_UINT16, uint16_t, oi, int64_t)
    LOAD(QV_UINT32, uint32_t, oi, int64_t)
    LOAD(QV_FLOAT, float, of, double)
    LOAD(QV_DOUBLE, double, of, double)
#undef LOAD
    case QV_UINT64: memcpy(out, p, (size_t)(8 * n)); break;
    case QV_HALF_FLOAT:
      for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        of[i] = qv_half_to_double(h);
      }
      break;
    default: return col_err(c, col, QV_ETYPE, "not a numeric column");
  }
  return QV_OK;
}

/* String access over slots [base, base + n) of a string-like array. */
static qv_status load_str(ctx *c, int32_t col, const qv_array *a, int64_t base, int64_t n,
                          qvx_str *s) {
  memset(s, 0, sizeof *s);
  s->base = base;
  qv_type_id id = a->type->id;
  if (id == QV_STRING_VIEW || id == QV_BINARY_VIEW) {
    if (a->n_buffers < 2 || !a->buffers[1] || a->buffers[1]->size < (base + n) * QV_VIEW_SIZE)
      return col_err(c, col, QV_EINVAL, "views buffer is too short");
    s->mode = QVX_S_VIEW;
    s->offsets = a->buffers[1]->data;
    s->vbufs = (qv_buffer *const *)a->buffers + 2;
    s->n_vbufs = a->n_buffers - 2;
    return QV_OK;
  }
  int w = (id == QV_LARGE_STRING || id == QV_LARGE_BINARY) ? 8 : 4;
  if (a->n_buffers < 3 || !a->buffers[1] || a->buffers[1]->size < (base + n + 1) * w)
    return col_err(c, col, QV_EINVAL, "offsets buffer is too short");
  s->mode = w == 8 ? QVX_S_OFF64 : QVX_S_OFF32;
  s->offsets = a->buffers[1]->data;
  s->data = a->buffers[2] ? a->buffers[2]->data : (const uint8_t *)"";
  s->data_size = a->buffers[2] ? a->buffers[2]->size : 0;
  return QV_OK;
}

/* Dictionary indices of slots [base, base+n) as int64 into idx, checked
 * against the dictionary length on valid rows (null rows get 0). Also
 * clears validity where the dictionary value itself is null. */
static qv_status load_indices(ctx *c, int32_t col, const qv_array *a, int64_t base,
                              uint8_t *valid /* may be NULL: then allocated */, qvx_bnode *n,
                              const uint8_t **valid_out, int64_t **idx_out) {
  int64_t rows = c->n;
  const qv_array *dict = a->dictionary;
  if (!dict) return col_err(c, col, QV_EINVAL, "dictionary-encoded array has no dictionary");
  qv_array tmp = *a;
  tmp.type = a->type->index_type;
  GROW(idx, int64_t *, &n->s_aux2, 8 * rows);
  QV_RETURN_NOT_OK(load_numbers(c, col, &tmp, base, rows, idx));
  int64_t d = dict->length;
  for (int64_t i = 0; i < rows; i++) {
    if (!vbit(valid, i)) {
      idx[i] = 0;
      continue;
    }
    if ((uint64_t)idx[i] >= (uint64_t)d)
      return col_err(c, col, QV_EINVAL,
                     "row %" PRId64 ": dictionary index %" PRId64
                     " is out of range (the "
                     "dictionary has %" PRId64 " values)",
                     i, idx[i], d);
  }
  /* Null dictionary values make their rows null. */
  const qv_buffer *dv =
      has_validity_slot(dict->type->id) && dict->n_buffers > 0 ? dict->buffers[0] : NULL;
  if (dict->type->id == QV_NA) dv = NULL;
  if (dv && dv->size < (dict->offset + d + 7) / 8)
    return col_err(c, col, QV_EINVAL, "dictionary validity bitmap is too short");
  if (dv || dict->type->id == QV_NA) {
    uint8_t *v = (uint8_t *)valid;
    if (!v) {
      GROW(nv, uint8_t *, &n->s_valid, bm_bytes(rows));
      memset(nv, 0xff, (size_t)bm_bytes(rows));
      v = nv;
    }
    for (int64_t i = 0; i < rows; i++)
      if (dict->type->id == QV_NA || !qv_bit_get(dv->data, dict->offset + idx[i]))
        qv_bit_clear(v, i);
    valid = v;
  }
  *valid_out = valid;
  *idx_out = idx;
  return QV_OK;
}

/* A column: validity, then values of its kind. */
static qv_status eval_col(ctx *c, qvx_bnode *n, qvx_vec *out) {
  int64_t rows = c->n;
  colref local;
  const colref *r = &c->cols[n->col];
  if (n->in_dict) { /* the dictionary's values, as a plain column */
    memset(&local, 0, sizeof local);
    local.leaf = c->dict;
    local.base = c->dict->offset;
    r = &local;
  }
  const qv_array *a = r->leaf;
  memset(out, 0, sizeof *out);
  out->kind = n->out;
  out->is_binary = n->is_binary;
  out->n = rows;
  const uint8_t *valid;
  QV_RETURN_NOT_OK(load_validity(c, n->col, r, &n->s_valid, &n->s_aux, &valid));
  int64_t base = r->base;
  int64_t *idx = NULL;
  if (a->type->id == QV_DICTIONARY) {
    QV_RETURN_NOT_OK(load_indices(c, n->col, a, base, (uint8_t *)valid, n, &valid, &idx));
    a = a->dictionary;
    base = a->offset;
  }
  out->valid = valid;
  switch (n->out) {
    case QVX_K_ANY: return QV_OK;
    case QVX_K_LIST:
      out->list = a;
      out->list_base = base;
      return QV_OK;
    case QVX_K_STR:
      QV_RETURN_NOT_OK(load_str(c, n->col, a, base, idx ? a->length : rows, &out->str));
      out->str.indirect = idx;
      return QV_OK;
    case QVX_K_BOOL: {
      int64_t len = idx ? a->length : rows;
      if (a->n_buffers < 2 || !a->buffers[1] || a->buffers[1]->size < (base + len + 7) / 8)
        return col_err(c, n->col, QV_EINVAL, "values bitmap is too short");
      GROW(bits, uint8_t *, &n->s_values, bm_bytes(rows));
      if (!idx) {
        copy_bits0(bits, a->buffers[1]->data, base, rows);
      } else {
        memset(bits, 0, (size_t)bm_bytes(rows));
        for (int64_t i = 0; i < rows; i++)
          if (qv_bit_get(a->buffers[1]->data, base + idx[i])) qv_bit_set(bits, i);
      }
      out->values = bits;
      return QV_OK;
    }
    default: { /* numbers */
      GROW(vals, int64_t *, &n->s_values, 8 * rows);
      if (!idx) {
        QV_RETURN_NOT_OK(load_numbers(c, n->col, a, base, rows, vals));
      } else {
        int64_t d = a->length;
        GROW(dv, int64_t *, &n->s_aux, 8 * (d ? d : 1));
        QV_RETURN_NOT_OK(load_numbers(c, n->col, a, base, d, dv));
        for (int64_t i = 0; i < rows; i++) vals[i] = dv[idx[i]];
      }
      out->values = vals;
      return QV_OK;
    }
  }
}

/* ======================================================================== */
/* Literals                                                                  */

static qv_status eval_lit(ctx *c, qvx_bnode *n, qvx_vec *out) {
  int64_t rows = c->n;
  memset(out, 0, sizeof *out);
  out->kind = n->out;
  out->n = rows;
  out->is_binary = n->is_binary;
  bool is_null = n->lit.kind == QVX_LIT_NULL;
  if (is_null) {
    GROW(v, uint8_t *, &n->s_valid, bm_bytes(rows));
    memset(v, 0, (size_t)bm_bytes(rows));
    out->valid = v;
  }
  if (n->out == QVX_K_STR) {
    out->str.mode = QVX_S_SCALAR;
    out->str.data = is_null ? (const uint8_t *)"" : (const uint8_t *)n->lit.s;
    out->str.data_size = is_null ? 0 : n->lit.slen;
    return QV_OK;
  }
  if (n->out == QVX_K_NULL) return QV_OK;
  if (n->out == QVX_K_BOOL) {
    GROW(bits, uint8_t *, &n->s_values, bm_bytes(rows));
    memset(bits, !is_null && n->lit.b ? 0xff : 0, (size_t)bm_bytes(rows));
    out->values = bits;
    return QV_OK;
  }
  /* Numbers: fill once, reuse while the batch is no longer. */
  int64_t have = n->lit_filled;
  GROW(vals, uint64_t *, &n->s_values, 8 * rows);
  if (n->s_values.p != (uint8_t *)vals || have > n->s_values.cap / 8) have = 0;
  if (have < rows) {
    uint64_t bits = 0;
    if (!is_null) {
      if (n->lit.kind == QVX_LIT_INT) {
        if (n->out == QVX_K_F64) {
          double f = (double)n->lit.i;
          memcpy(&bits, &f, 8);
        } else {
          bits = (uint64_t)n->lit.i;
        }
      } else if (n->lit.kind == QVX_LIT_UINT) {
        bits = n->lit.u;
      } else if (n->lit.kind == QVX_LIT_FLOAT) {
        memcpy(&bits, &n->lit.f, 8);
      }
    }
    for (int64_t i = 0; i < rows; i++) vals[i] = bits;
    n->lit_filled = rows;
  }
  out->values = vals;
  return QV_OK;
}

/* ======================================================================== */
/* Numeric conversions                                                       */

/* The values of a numeric vector as doubles (into s when converted). */
static qv_status as_f64(ctx *c, const qvx_vec *v, qvx_scratch *s, const double **out) {
  if (v->kind == QVX_K_F64) {
    *out = v->values;
    return QV_OK;
  }
  GROW(d, double *, s, 8 * v->n);
  if (v->kind == QVX_K_U64) {
    const uint64_t *u = v->values;
    for (int64_t i = 0; i < v->n; i++) d[i] = (double)u[i];
  } else {
    const int64_t *x = v->values;
    for (int64_t i = 0; i < v->n; i++) d[i] = (double)x[i];
  }
  *out = d;
  return QV_OK;
}

/* The values of an integer vector as int64: uint64 values above INT64_MAX
 * are an error on rows where the operation's result is valid (`valid`:
 * every operand valid) and cared for. */
static qv_status as_i64(ctx *c, const qvx_bnode *n, const qvx_vec *v, const uint8_t *valid,
                        const uint8_t *care, const int64_t **out) {
  if (v->kind == QVX_K_I64) {
    *out = v->values;
    return QV_OK;
  }
  const uint64_t *u = v->values;
  uint64_t any = 0;
  for (int64_t i = 0; i < v->n; i++) any |= u[i];
  if (any >> 63) {
    for (int64_t i = 0; i < v->n; i++)
      if ((u[i] >> 63) && vbit(valid, i) && vbit(care, i))
        return eval_err(c, n, QV_ERANGE, i,
                        "integer overflow: uint64 value %" PRIu64 " does not fit int64", u[i]);
  }
  *out = (const int64_t *)u; /* the rows above INT64_MAX do not matter */
  return QV_OK;
}

/* ======================================================================== */
/* Operators                                                                 */

static qv_status eval(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out);

static void bool_result(qvx_vec *out, int64_t rows, const uint8_t *valid, const uint8_t *values) {
  memset(out, 0, sizeof *out);
  out->kind = QVX_K_BOOL;
  out->n = rows;
  out->valid = valid;
  out->values = values;
}

static qv_status eval_not(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  int64_t rows = c->n;
  GROW(bits, uint8_t *, &n->s_values, bm_bytes(rows));
  const uint8_t *x = a.values;
  for (int64_t k = 0; k < bm_bytes(rows); k++) bits[k] = (uint8_t)~x[k];
  bool_result(out, rows, a.valid, bits);
  return QV_OK;
}

/* and / or with SQL's three-valued logic, word at a time. */
static qv_status eval_logic(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  bool is_and = n->kind == QVX_B_AND;
  int64_t rows = c->n, words = bm_bytes(rows) / 8;
  qvx_vec a;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  /* Rows the right side must decide: `and` where the left is not false,
   * `or` where it is not true. */
  GROW(rc, uint8_t *, &n->s_care, bm_bytes(rows));
  for (int64_t w = 0; w < words; w++) {
    uint64_t av, aval, cw = ~(uint64_t)0;
    memcpy(&aval, (const uint8_t *)a.values + 8 * w, 8);
    if (a.valid) memcpy(&av, a.valid + 8 * w, 8);
    else av = ~(uint64_t)0;
    if (care) memcpy(&cw, care + 8 * w, 8);
    uint64_t decided = is_and ? (av & ~aval) : (av & aval);
    uint64_t r = cw & ~decided;
    memcpy(rc + 8 * w, &r, 8);
  }
  if (!bits_any(rc, rows)) { /* the left side decided every row that matters */
    *out = a;
    return QV_OK;
  }
  qvx_vec b;
  QV_RETURN_NOT_OK(eval(c, n->b, rc, &b));
  GROW(val, uint8_t *, &n->s_values, bm_bytes(rows));
  const uint8_t *valid = NULL;
  uint8_t *vout = NULL;
  if (a.valid || b.valid) {
    GROW(v, uint8_t *, &n->s_valid, bm_bytes(rows));
    vout = v;
    valid = v;
  }
  for (int64_t w = 0; w < words; w++) {
    uint64_t av = ~(uint64_t)0, bv = ~(uint64_t)0, ax, bx;
    if (a.valid) memcpy(&av, a.valid + 8 * w, 8);
    if (b.valid) memcpy(&bv, b.valid + 8 * w, 8);
    memcpy(&ax, (const uint8_t *)a.values + 8 * w, 8);
    memcpy(&bx, (const uint8_t *)b.values + 8 * w, 8);
    uint64_t r, rv;
    if (is_and) { /* true if both true; false if either is false */
      r = av & ax & bv & bx;
      rv = (av & bv) | (av & ~ax) | (bv & ~bx);
    } else { /* true if either is true; false if both are false */
      r = (av & ax) | (bv & bx);
      rv = (av & bv) | r;
    }
    memcpy(val + 8 * w, &r, 8);
    if (vout) memcpy(vout + 8 * w, &rv, 8);
  }
  bool_result(out, rows, valid, val);
  return QV_OK;
}

/* Pack `cond(i)` for i in [0, rows) into bits, eight rows per byte. */
#define PACK_BITS(bits, rows, COND)                                                                \
  do {                                                                                             \
    int64_t full_ = (rows) / 8;                                                                    \
    for (int64_t k_ = 0; k_ < full_; k_++) {                                                       \
      uint8_t byte_ = 0;                                                                           \
      for (int j_ = 0; j_ < 8; j_++) {                                                             \
        int64_t i = k_ * 8 + j_;                                                                   \
        byte_ |= (uint8_t)((COND) ? 1u << j_ : 0u);                                                \
      }                                                                                            \
      (bits)[k_] = byte_;                                                                          \
    }                                                                                              \
    if ((rows)&7) {                                                                                \
      uint8_t byte_ = 0;                                                                           \
      for (int j_ = 0; j_ < (int)((rows)&7); j_++) {                                               \
        int64_t i = full_ * 8 + j_;                                                                \
        byte_ |= (uint8_t)((COND) ? 1u << j_ : 0u);                                                \
      }                                                                                            \
      (bits)[full_] = byte_;                                                                       \
    }                                                                                              \
  } while (0)

/* Expand one comparison loop per operator. */
#define CMP_OPS(bits, rows, X, Y)                                                                  \
  switch (op) {                                                                                    \
    case QVX_EQ: PACK_BITS(bits, rows, (X) == (Y)); break;                                         \
    case QVX_NE: PACK_BITS(bits, rows, (X) != (Y)); break;                                         \
    case QVX_LT: PACK_BITS(bits, rows, (X) < (Y)); break;                                          \
    case QVX_LE: PACK_BITS(bits, rows, (X) <= (Y)); break;                                         \
    case QVX_GT: PACK_BITS(bits, rows, (X) > (Y)); break;                                          \
    default: PACK_BITS(bits, rows, (X) >= (Y)); break;                                             \
  }

/* Three-way comparison of int64 with uint64. */
static inline int cmp_iu(int64_t x, uint64_t y) {
  if (x < 0) return -1;
  return ((uint64_t)x > y) - ((uint64_t)x < y);
}

static qv_status cmp_strings(ctx *c, qvx_bnode *n, const qvx_vec *a, const qvx_vec *b,
                             const uint8_t *valid, const uint8_t *care, uint8_t *bits) {
  int op = n->op;
  int64_t rows = c->n;
  memset(bits, 0, (size_t)bm_bytes(rows));
  for (int64_t i = 0; i < rows; i++) {
    if (!vbit(valid, i) || !vbit(care, i)) continue; /* rows that do not matter are skipped */
    const uint8_t *p, *q;
    int64_t pn, qn;
    if (!str_at(&a->str, i, &p, &pn) || !str_at(&b->str, i, &q, &qn)) return bad_str(c, n, i);
    bool r;
    if (op == QVX_EQ || op == QVX_NE) {
      bool eq = pn == qn && (pn == 0 || memcmp(p, q, (size_t)pn) == 0);
      r = (op == QVX_EQ) == eq;
    } else {
      int k = bytes_cmp(p, pn, q, qn);
      r = op == QVX_LT ? k < 0 : op == QVX_LE ? k <= 0 : op == QVX_GT ? k > 0 : k >= 0;
    }
    if (r) qv_bit_set(bits, i);
  }
  return QV_OK;
}

static qv_status eval_cmp(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a, b;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  QV_RETURN_NOT_OK(eval(c, n->b, care, &b));
  int64_t rows = c->n;
  int op = n->op;
  GROW(vbuf, uint8_t *, &n->s_valid, bm_bytes(rows));
  const uint8_t *valid = and_valid(a.valid, b.valid, vbuf, rows);
  GROW(bits, uint8_t *, &n->s_values, bm_bytes(rows));
  if (a.kind == QVX_K_STR) {
    QV_RETURN_NOT_OK(cmp_strings(c, n, &a, &b, valid, care, bits));
  } else if (a.kind == QVX_K_BOOL) {
    const uint8_t *x = a.values, *y = b.values;
    for (int64_t k = 0; k < bm_bytes(rows); k++) {
      uint8_t p = x[k], q = y[k], r;
      switch (op) {
        case QVX_EQ: r = (uint8_t) ~(p ^ q); break;
        case QVX_NE: r = p ^ q; break;
        case QVX_LT: r = (uint8_t)(~p & q); break;
        case QVX_LE: r = (uint8_t)(~p | q); break;
        case QVX_GT: r = (uint8_t)(p & ~q); break;
        default: r = (uint8_t)(p | ~q); break;
      }
      bits[k] = r;
    }
  } else if (a.kind == QVX_K_F64 || b.kind == QVX_K_F64) {
    const double *x, *y;
    QV_RETURN_NOT_OK(as_f64(c, &a, &n->s_aux, &x));
    QV_RETURN_NOT_OK(as_f64(c, &b, &n->s_aux2, &y));
    CMP_OPS(bits, rows, x[i], y[i]);
  } else if (a.kind == QVX_K_I64 && b.kind == QVX_K_I64) {
    const int64_t *x = a.values, *y = b.values;
    CMP_OPS(bits, rows, x[i], y[i]);
  } else if (a.kind == QVX_K_U64 && b.kind == QVX_K_U64) {
    const uint64_t *x = a.values, *y = b.values;
    CMP_OPS(bits, rows, x[i], y[i]);
  } else if (a.kind == QVX_K_I64) {
    const int64_t *x = a.values;
    const uint64_t *y = b.values;
    CMP_OPS(bits, rows, cmp_iu(x[i], y[i]), 0);
  } else {
    const uint64_t *x = a.values;
    const int64_t *y = b.values;
    CMP_OPS(bits, rows, -cmp_iu(y[i], x[i]), 0);
  }
  bool_result(out, rows, valid, bits);
  return QV_OK;
}

/* Python's modulo: the result has the sign of the divisor. */
static inline double fmod_py(double x, double y) {
  double r = fmod(x, y);
  if (r != 0) {
    if ((r < 0) != (y < 0)) r += y;
  } else {
    r = copysign(0.0, y);
  }
  return r;
}

/* First row where `bad(i)` holds on a valid, cared-for row, or -1. */
#define FIRST_BAD(rows, valid, care, BAD, result)                                                  \
  do {                                                                                             \
    (result) = -1;                                                                                 \
    for (int64_t i = 0; i < (rows); i++)                                                           \
      if ((BAD) && vbit((valid), i) && vbit((care), i)) {                                          \
        (result) = i;                                                                              \
        break;                                                                                     \
      }                                                                                            \
  } while (0)

static qv_status eval_arith(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a, b;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  QV_RETURN_NOT_OK(eval(c, n->b, care, &b));
  int64_t rows = c->n;
  GROW(vbuf, uint8_t *, &n->s_valid, bm_bytes(rows));
  const uint8_t *valid = and_valid(a.valid, b.valid, vbuf, rows);
  memset(out, 0, sizeof *out);
  out->kind = n->out;
  out->n = rows;
  out->valid = valid;
  if (n->out == QVX_K_F64) {
    const double *x, *y;
    QV_RETURN_NOT_OK(as_f64(c, &a, &n->s_aux, &x));
    QV_RETURN_NOT_OK(as_f64(c, &b, &n->s_aux2, &y));
    GROW(r, double *, &n->s_values, 8 * rows);
    switch (n->op) {
      case QVX_ADD:
        for (int64_t i = 0; i < rows; i++) r[i] = x[i] + y[i];
        break;
      case QVX_SUB:
        for (int64_t i = 0; i < rows; i++) r[i] = x[i] - y[i];
        break;
      case QVX_MUL:
        for (int64_t i = 0; i < rows; i++) r[i] = x[i] * y[i];
        break;
      case QVX_DIV:
        for (int64_t i = 0; i < rows; i++) r[i] = x[i] / y[i];
        break;
      default:
        for (int64_t i = 0; i < rows; i++) r[i] = fmod_py(x[i], y[i]);
        break;
    }
    out->values = r;
    return QV_OK;
  }
  const int64_t *x, *y;
  QV_RETURN_NOT_OK(as_i64(c, n, &a, valid, care, &x));
  QV_RETURN_NOT_OK(as_i64(c, n, &b, valid, care, &y));
  GROW(r, int64_t *, &n->s_values, 8 * rows);
  bool ovf = false;
  int64_t bad;
  switch (n->op) {
    case QVX_ADD:
      for (int64_t i = 0; i < rows; i++) ovf |= __builtin_add_overflow(x[i], y[i], &r[i]);
      break;
    case QVX_SUB:
      for (int64_t i = 0; i < rows; i++) ovf |= __builtin_sub_overflow(x[i], y[i], &r[i]);
      break;
    case QVX_MUL:
      for (int64_t i = 0; i < rows; i++) ovf |= __builtin_mul_overflow(x[i], y[i], &r[i]);
      break;
    default: { /* % */
      bool zero = false;
      for (int64_t i = 0; i < rows; i++) {
        int64_t d = y[i];
        zero |= d == 0;
        /* x % 1 and x % -1 are both 0; this also avoids INT64_MIN % -1. */
        if (d == 0 || d == -1) d = 1;
        int64_t m = x[i] % d;
        if (m != 0 && ((m < 0) != (d < 0))) m += d;
        r[i] = m;
      }
      if (zero) {
        FIRST_BAD(rows, valid, care, y[i] == 0, bad);
        if (bad >= 0) return eval_err(c, n, QV_ERANGE, bad, "division by zero");
      }
      out->values = r;
      return QV_OK;
    }
  }
  if (ovf) {
    int64_t tmp;
    switch (n->op) {
      case QVX_ADD:
        FIRST_BAD(rows, valid, care, __builtin_add_overflow(x[i], y[i], &tmp), bad);
        break;
      case QVX_SUB:
        FIRST_BAD(rows, valid, care, __builtin_sub_overflow(x[i], y[i], &tmp), bad);
        break;
      default: FIRST_BAD(rows, valid, care, __builtin_mul_overflow(x[i], y[i], &tmp), bad); break;
    }
    if (bad >= 0)
      return eval_err(c, n, QV_ERANGE, bad,
                      "integer overflow: %" PRId64 " %s %" PRId64 " does not fit int64", x[bad],
                      qvx_op_name(n->op), y[bad]);
  }
  out->values = r;
  return QV_OK;
}

/* unary minus and abs() */
static qv_status eval_unary_num(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  int64_t rows = c->n;
  bool neg = n->kind == QVX_B_NEG;
  memset(out, 0, sizeof *out);
  out->kind = n->out;
  out->n = rows;
  out->valid = a.valid;
  if (n->out == QVX_K_F64) {
    const double *x = a.values;
    GROW(r, double *, &n->s_values, 8 * rows);
    if (neg)
      for (int64_t i = 0; i < rows; i++) r[i] = -x[i];
    else
      for (int64_t i = 0; i < rows; i++) r[i] = fabs(x[i]);
    out->values = r;
    return QV_OK;
  }
  const int64_t *x;
  QV_RETURN_NOT_OK(as_i64(c, n, &a, a.valid, care, &x));
  GROW(r, int64_t *, &n->s_values, 8 * rows);
  bool ovf = false;
  for (int64_t i = 0; i < rows; i++) {
    ovf |= x[i] == INT64_MIN;
    int64_t v = x[i] == INT64_MIN ? 0 : x[i];
    r[i] = neg ? -v : (v < 0 ? -v : v);
  }
  if (ovf) {
    int64_t bad;
    FIRST_BAD(rows, a.valid, care, x[i] == INT64_MIN, bad);
    if (bad >= 0)
      return eval_err(c, n, QV_ERANGE, bad, "integer overflow: %s(%" PRId64 ") does not fit int64",
                      neg ? "-" : "abs", x[bad]);
  }
  out->values = r;
  return QV_OK;
}

/* sqrt, exp, ln, log10, log2, floor, ceil, round, pow: IEEE results (NaN for
 * sqrt/log of negatives, -inf for log(0)); floor/ceil/round of integers are
 * the integers. */
static qv_status eval_math(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a, b;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  int64_t rows = c->n;
  memset(out, 0, sizeof *out);
  out->kind = n->out;
  out->n = rows;
  out->valid = a.valid;
  if (n->out == QVX_K_I64) {
    const int64_t *x;
    QV_RETURN_NOT_OK(as_i64(c, n, &a, a.valid, care, &x));
    out->values = x;
    return QV_OK;
  }
  const double *x, *y = NULL;
  QV_RETURN_NOT_OK(as_f64(c, &a, &n->s_aux, &x));
  if (n->op == QVX_FN_POW) {
    QV_RETURN_NOT_OK(eval(c, n->b, care, &b));
    GROW(vbuf, uint8_t *, &n->s_valid, bm_bytes(rows));
    out->valid = and_valid(a.valid, b.valid, vbuf, rows);
    QV_RETURN_NOT_OK(as_f64(c, &b, &n->s_aux2, &y));
  }
  GROW(r, double *, &n->s_values, 8 * rows);
  switch (n->op) {
    case QVX_FN_SQRT:
      for (int64_t i = 0; i < rows; i++) r[i] = sqrt(x[i]);
      break;
    case QVX_FN_EXP:
      for (int64_t i = 0; i < rows; i++) r[i] = exp(x[i]);
      break;
    case QVX_FN_LN:
      for (int64_t i = 0; i < rows; i++) r[i] = log(x[i]);
      break;
    case QVX_FN_LOG10:
      for (int64_t i = 0; i < rows; i++) r[i] = log10(x[i]);
      break;
    case QVX_FN_LOG2:
      for (int64_t i = 0; i < rows; i++) r[i] = log2(x[i]);
      break;
    case QVX_FN_FLOOR:
      for (int64_t i = 0; i < rows; i++) r[i] = floor(x[i]);
      break;
    case QVX_FN_CEIL:
      for (int64_t i = 0; i < rows; i++) r[i] = ceil(x[i]);
      break;
    case QVX_FN_ROUND: /* half away from zero, as DuckDB */
      for (int64_t i = 0; i < rows; i++) r[i] = round(x[i]);
      break;
    default:
      for (int64_t i = 0; i < rows; i++) r[i] = pow(x[i], y[i]);
      break;
  }
  out->values = r;
  return QV_OK;
}

static int64_t count_continuation(const uint8_t *p, int64_t n);

/* A string result of `rows` rows into the node's scratch: offsets (int64,
 * s_values) and bytes (s_aux, grown as needed). */
typedef struct str_out {
  int64_t *off;
  uint8_t *data;
  int64_t len, cap;
} str_out;

static qv_status str_out_begin(ctx *c, qvx_bnode *n, int64_t rows, str_out *o) {
  GROW(off, int64_t *, &n->s_values, 8 * (rows + 1));
  o->off = off;
  o->cap = n->s_aux.cap > 64 ? n->s_aux.cap : 64;
  GROW(d, uint8_t *, &n->s_aux, o->cap);
  o->data = d;
  o->len = 0;
  return QV_OK;
}

static qv_status str_out_put(ctx *c, qvx_bnode *n, str_out *o, const uint8_t *p, int64_t len) {
  if (o->len + len > o->cap) {
    int64_t cap = o->cap;
    while (cap < o->len + len) cap *= 2;
    GROW(d, uint8_t *, &n->s_aux, cap); /* grow keeps the bytes (realloc) */
    o->data = d;
    o->cap = cap;
  }
  if (len) memcpy(o->data + o->len, p, (size_t)len);
  o->len += len;
  return QV_OK;
}

static void str_out_finish(str_out *o, int64_t rows, const uint8_t *valid, bool is_binary,
                           qvx_vec *out) {
  o->off[rows] = o->len;
  memset(out, 0, sizeof *out);
  out->kind = QVX_K_STR;
  out->is_binary = is_binary;
  out->n = rows;
  out->valid = valid;
  out->str.mode = QVX_S_OFF64;
  out->str.offsets = (const uint8_t *)o->off;
  out->str.data = o->data;
  out->str.data_size = o->len;
}

/* Byte offset of code point k (0-based; the end when k >= the count) of
 * p[0..len); binary strings count bytes. */
static int64_t cp_offset(const uint8_t *p, int64_t len, int64_t k, bool binary) {
  if (binary) return k < len ? k : len;
  int64_t seen = 0;
  for (int64_t i = 0; i < len; i++)
    if ((p[i] & 0xC0) != 0x80 && seen++ == k) return i;
  return len;
}

/* lower / upper (ASCII letters) and substr(s, start[, length]) with
 * DuckDB's positions: 1 is the first code point, 0 just before it,
 * negative ones count from the end; a negative length takes the code
 * points before start. */
static qv_status eval_strmap(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a, b, l;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  int64_t rows = c->n;
  const uint8_t *valid = a.valid;
  const int64_t *start = NULL, *length = NULL;
  if (n->op == QVX_FN_SUBSTR) {
    QV_RETURN_NOT_OK(eval(c, n->b, care, &b));
    GROW(vb, uint8_t *, &n->s_valid, bm_bytes(rows));
    valid = and_valid(valid, b.valid, vb, rows);
    if (n->third) {
      QV_RETURN_NOT_OK(eval(c, n->third, care, &l));
      GROW(vc, uint8_t *, &n->s_care, bm_bytes(rows));
      valid = and_valid(valid, l.valid, vc, rows);
    }
    QV_RETURN_NOT_OK(as_i64(c, n, &b, valid, care, &start));
    if (n->third) QV_RETURN_NOT_OK(as_i64(c, n, &l, valid, care, &length));
  }
  str_out o;
  QV_RETURN_NOT_OK(str_out_begin(c, n, rows, &o));
  for (int64_t i = 0; i < rows; i++) {
    o.off[i] = o.len;
    if (!vbit(valid, i) || !vbit(care, i)) continue;
    const uint8_t *p;
    int64_t len;
    if (!str_at(&a.str, i, &p, &len)) return bad_str(c, n, i);
    if (n->op == QVX_FN_SUBSTR) {
      int64_t chars = a.is_binary ? len : len - count_continuation(p, len);
      int64_t st = start[i], pos = st > 0 ? st : (st < 0 ? chars + st + 1 : 0), lo, hi;
      if (!length) {
        lo = pos;
        hi = chars + 1;
      } else if (length[i] >= 0) {
        lo = pos;
        if (__builtin_add_overflow(pos, length[i], &hi)) hi = INT64_MAX;
      } else {
        hi = pos;
        if (__builtin_add_overflow(pos, length[i], &lo)) lo = INT64_MIN;
      }
      if (lo < 1) lo = 1;
      if (hi > chars + 1) hi = chars + 1;
      if (lo >= hi) continue;
      int64_t b0 = cp_offset(p, len, lo - 1, a.is_binary);
      int64_t b1 = cp_offset(p, len, hi - 1, a.is_binary);
      QV_RETURN_NOT_OK(str_out_put(c, n, &o, p + b0, b1 - b0));
      continue;
    }
    int64_t at = o.len;
    QV_RETURN_NOT_OK(str_out_put(c, n, &o, p, len));
    uint8_t *q = o.data + at;
    if (n->op == QVX_FN_LOWER) {
      for (int64_t k = 0; k < len; k++)
        if (q[k] >= 'A' && q[k] <= 'Z') q[k] = (uint8_t)(q[k] + 32);
    } else {
      for (int64_t k = 0; k < len; k++)
        if (q[k] >= 'a' && q[k] <= 'z') q[k] = (uint8_t)(q[k] - 32);
    }
  }
  str_out_finish(&o, rows, valid, n->is_binary, out);
  return QV_OK;
}

/* coalesce(a, b): a where a is valid, else b. if(cond, a, b): a where cond
 * is true, else b (false or null). Each branch is evaluated only for the
 * rows that take it (errors elsewhere do not count). */
static qv_status eval_choice(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  int64_t rows = c->n, nb = bm_bytes(rows);
  qvx_vec cond, a, b;
  qvx_bnode *na = n->a, *nb_ = n->b;
  GROW(pick, uint8_t *, &n->s_care, nb); /* 1: take a */
  GROW(care_a, uint8_t *, &n->s_aux2, 2 * nb);
  uint8_t *care_b = care_a + nb;
  if (n->kind == QVX_B_IF) {
    QV_RETURN_NOT_OK(eval(c, n->a, care, &cond));
    for (int64_t w = 0; w < nb; w++) {
      uint8_t t = cond.values ? ((const uint8_t *)cond.values)[w] : 0;
      if (cond.valid) t &= cond.valid[w];
      pick[w] = t;
    }
    na = n->b;
    nb_ = n->third;
    for (int64_t w = 0; w < nb; w++) {
      uint8_t cw = care ? care[w] : 0xff;
      care_a[w] = cw & pick[w];
      care_b[w] = cw & (uint8_t)~pick[w];
    }
    QV_RETURN_NOT_OK(eval(c, na, care_a, &a));
  } else {
    QV_RETURN_NOT_OK(eval(c, na, care, &a));
    for (int64_t w = 0; w < nb; w++) {
      pick[w] = a.valid ? a.valid[w] : 0xff;
      care_b[w] = (care ? care[w] : 0xff) & (uint8_t)~pick[w];
    }
  }
  QV_RETURN_NOT_OK(eval(c, nb_, care_b, &b));
  GROW(valid, uint8_t *, &n->s_valid, nb);
  for (int64_t i = 0; i < rows; i++) {
    bool v = qv_bit_get(pick, i) ? vbit(a.valid, i) : vbit(b.valid, i);
    if (v) qv_bit_set(valid, i);
    else qv_bit_clear(valid, i);
  }
  memset(out, 0, sizeof *out);
  out->kind = n->out;
  out->n = rows;
  out->valid = valid;
  switch (n->out) {
    case QVX_K_NULL: return QV_OK;
    case QVX_K_BOOL: {
      GROW(bits, uint8_t *, &n->s_values, nb);
      const uint8_t *x = a.values, *y = b.values;
      for (int64_t w = 0; w < nb; w++)
        bits[w] = (uint8_t)((x ? x[w] & pick[w] : 0) | (y ? y[w] & (uint8_t)~pick[w] : 0));
      out->values = bits;
      return QV_OK;
    }
    case QVX_K_F64: {
      const double *x, *y;
      QV_RETURN_NOT_OK(as_f64(c, &a, &n->s_aux, &x));
      GROW(r, double *, &n->s_values, 8 * rows);
      if (b.kind == QVX_K_F64) {
        y = b.values;
      } else {
        const int64_t *yi = b.values;
        const uint64_t *yu = b.values;
        for (int64_t i = 0; i < rows; i++)
          r[i] = b.kind == QVX_K_U64 ? (double)yu[i] : (yi ? (double)yi[i] : 0.0);
        y = r;
      }
      for (int64_t i = 0; i < rows; i++) r[i] = qv_bit_get(pick, i) ? x[i] : y[i];
      out->values = r;
      return QV_OK;
    }
    case QVX_K_I64:
    case QVX_K_U64: {
      GROW(r, uint64_t *, &n->s_values, 8 * rows);
      const uint64_t *x = a.values, *y = b.values;
      for (int64_t i = 0; i < rows; i++)
        r[i] = qv_bit_get(pick, i) ? (x ? x[i] : 0) : (y ? y[i] : 0);
      out->values = r;
      return QV_OK;
    }
    case QVX_K_STR: {
      str_out o;
      QV_RETURN_NOT_OK(str_out_begin(c, n, rows, &o));
      for (int64_t i = 0; i < rows; i++) {
        o.off[i] = o.len;
        if (!qv_bit_get(valid, i) || !vbit(care, i)) continue;
        const qvx_vec *src = qv_bit_get(pick, i) ? &a : &b;
        const uint8_t *p;
        int64_t len;
        if (!str_at(&src->str, i, &p, &len)) return bad_str(c, n, i);
        QV_RETURN_NOT_OK(str_out_put(c, n, &o, p, len));
      }
      str_out_finish(&o, rows, valid, n->is_binary, out);
      return QV_OK;
    }
    default: return eval_err(c, n, QV_ETYPE, 0, "unsupported value kind in a choice");
  }
}

/* cast(x, type): numbers and bools convert as DuckDB's CAST (double to
 * int64 rounds half away from zero; out of range or NaN is an error),
 * strings parse (surrounding spaces allowed; junk is an error), numbers
 * print as decimal text (doubles in the shortest round-trip form). */
static qv_status eval_cast(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  int64_t rows = c->n;
  if (a.kind == n->out && (n->out != QVX_K_STR || !a.is_binary)) {
    *out = a;
    return QV_OK;
  }
  memset(out, 0, sizeof *out);
  out->kind = n->out;
  out->n = rows;
  out->valid = a.valid;
  char buf[128];
  if (n->out == QVX_K_STR) {
    str_out o;
    QV_RETURN_NOT_OK(str_out_begin(c, n, rows, &o));
    qv_strbuf sb;
    qv_strbuf_init(&sb);
    for (int64_t i = 0; i < rows; i++) {
      o.off[i] = o.len;
      if (!vbit(a.valid, i) || !vbit(care, i)) continue;
      const uint8_t *p = (const uint8_t *)buf;
      int64_t len = 0;
      switch (a.kind) {
        case QVX_K_BOOL:
          len = snprintf(buf, sizeof buf, "%s", qv_bit_get(a.values, i) ? "true" : "false");
          break;
        case QVX_K_I64:
          len = snprintf(buf, sizeof buf, "%" PRId64, ((const int64_t *)a.values)[i]);
          break;
        case QVX_K_U64:
          len = snprintf(buf, sizeof buf, "%" PRIu64, ((const uint64_t *)a.values)[i]);
          break;
        case QVX_K_F64: {
          qv_strbuf_clear(&sb);
          (void)qv_format_double(&sb, ((const double *)a.values)[i], NULL);
          p = (const uint8_t *)qv_strbuf_cstr(&sb);
          len = (int64_t)strlen((const char *)p);
          break;
        }
        case QVX_K_STR:
          if (!str_at(&a.str, i, &p, &len)) {
            qv_strbuf_reset(&sb);
            return bad_str(c, n, i);
          }
          break;
        default: break;
      }
      qv_status st = str_out_put(c, n, &o, p, len);
      if (st != QV_OK) {
        qv_strbuf_reset(&sb);
        return st;
      }
    }
    qv_strbuf_reset(&sb);
    str_out_finish(&o, rows, a.valid, false, out);
    return QV_OK;
  }
  if (n->out == QVX_K_BOOL) {
    GROW(bits, uint8_t *, &n->s_values, bm_bytes(rows));
    memset(bits, 0, (size_t)bm_bytes(rows));
    for (int64_t i = 0; i < rows; i++) {
      if (!vbit(a.valid, i) || !vbit(care, i)) continue;
      bool v = false;
      if (a.kind == QVX_K_I64 || a.kind == QVX_K_U64) v = ((const int64_t *)a.values)[i] != 0;
      else if (a.kind == QVX_K_F64) v = ((const double *)a.values)[i] != 0;
      else if (a.kind == QVX_K_STR) {
        const uint8_t *p;
        int64_t len;
        if (!str_at(&a.str, i, &p, &len)) return bad_str(c, n, i);
        while (len && (*p == ' ' || *p == '\t')) p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        snprintf(buf, sizeof buf, "%.*s", (int)(len < 100 ? len : 100), (const char *)p);
        if (!strcasecmp(buf, "true") || !strcasecmp(buf, "t") || !strcmp(buf, "1")) v = true;
        else if (strcasecmp(buf, "false") && strcasecmp(buf, "f") && strcmp(buf, "0"))
          return eval_err(c, n, QV_EINVAL, i, "cannot cast '%s' to bool", buf);
      }
      if (v) qv_bit_set(bits, i);
    }
    out->values = bits;
    return QV_OK;
  }
  GROW(r, int64_t *, &n->s_values, 8 * rows);
  double *rd = (double *)(void *)r;
  for (int64_t i = 0; i < rows; i++) {
    r[i] = 0;
    if (!vbit(a.valid, i) || !vbit(care, i)) continue;
    double d = 0;
    int64_t iv = 0;
    bool is_int = false;
    switch (a.kind) {
      case QVX_K_BOOL: iv = qv_bit_get(a.values, i), is_int = true; break;
      case QVX_K_I64: iv = ((const int64_t *)a.values)[i], is_int = true; break;
      case QVX_K_U64: {
        uint64_t u = ((const uint64_t *)a.values)[i];
        if (n->out == QVX_K_I64 && u > (uint64_t)INT64_MAX)
          return eval_err(c, n, QV_ERANGE, i, "cannot cast %" PRIu64 " to int64", u);
        iv = (int64_t)u, is_int = n->out == QVX_K_I64, d = (double)u;
        break;
      }
      case QVX_K_F64: d = ((const double *)a.values)[i]; break;
      case QVX_K_STR: {
        const uint8_t *p;
        int64_t len;
        if (!str_at(&a.str, i, &p, &len)) return bad_str(c, n, i);
        snprintf(buf, sizeof buf, "%.*s", (int)(len < 100 ? len : 100), (const char *)p);
        char *e = NULL;
        errno = 0;
        if (n->out == QVX_K_I64) {
          long long v = strtoll(buf, &e, 10);
          is_int = true;
          iv = v;
        } else {
          d = strtod(buf, &e);
        }
        while (e && (*e == ' ' || *e == '\t')) e++;
        if (len >= 100 || e == buf || (e && *e) || (errno == ERANGE && n->out == QVX_K_I64))
          return eval_err(c, n, QV_EINVAL, i, "cannot cast '%s' to %s", buf,
                          n->out == QVX_K_I64 ? "int64" : "double");
        break;
      }
      default: break;
    }
    if (n->out == QVX_K_F64) {
      rd[i] = is_int ? (double)iv : d;
      continue;
    }
    if (!is_int) {
      double rr = round(d);
      if (!(rr >= -9223372036854775808.0 && rr < 9223372036854775808.0))
        return eval_err(c, n, QV_ERANGE, i, "cannot cast %g to int64", d);
      iv = (int64_t)rr;
    }
    r[i] = iv;
  }
  out->values = r;
  return QV_OK;
}

static qv_status eval_is_null(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  int64_t rows = c->n;
  GROW(bits, uint8_t *, &n->s_values, bm_bytes(rows));
  if (!a.valid) memset(bits, n->negated ? 0xff : 0, (size_t)bm_bytes(rows));
  else if (n->negated) memcpy(bits, a.valid, (size_t)bm_bytes(rows));
  else
    for (int64_t k = 0; k < bm_bytes(rows); k++) bits[k] = (uint8_t)~a.valid[k];
  bool_result(out, rows, NULL, bits);
  return QV_OK;
}

/* Binary search helpers for `in`. */
#define BSEARCH(arr, cnt, key, found)                                                              \
  do {                                                                                             \
    int64_t lo_ = 0, hi_ = (cnt);                                                                  \
    (found) = false;                                                                               \
    while (lo_ < hi_) {                                                                            \
      int64_t mid_ = lo_ + (hi_ - lo_) / 2;                                                        \
      if ((arr)[mid_] < (key)) lo_ = mid_ + 1;                                                     \
      else hi_ = mid_;                                                                             \
    }                                                                                              \
    (found) = lo_ < (cnt) && (arr)[lo_] == (key);                                                  \
  } while (0)

static bool str_in_set(const qvx_bnode *n, const uint8_t *p, int64_t len) {
  int64_t lo = 0, hi = n->in_n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (bytes_cmp(n->in_str[mid], n->in_str_len[mid], p, len) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < n->in_n && bytes_cmp(n->in_str[lo], n->in_str_len[lo], p, len) == 0;
}

static qv_status eval_in(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  int64_t rows = c->n;
  GROW(found, uint8_t *, &n->s_values, bm_bytes(rows));
  memset(found, 0, (size_t)bm_bytes(rows));
  switch (n->in_kind) {
    case QVX_K_BOOL: {
      const uint8_t *x = a.values;
      for (int64_t k = 0; k < bm_bytes(rows); k++)
        found[k] = (uint8_t)((n->in_has_true ? x[k] : 0) | (n->in_has_false ? ~x[k] : 0));
      break;
    }
    case QVX_K_STR:
      for (int64_t i = 0; i < rows; i++) {
        if (!vbit(a.valid, i) || !vbit(care, i)) continue;
        const uint8_t *p;
        int64_t len;
        if (!str_at(&a.str, i, &p, &len)) return bad_str(c, n, i);
        if (str_in_set(n, p, len)) qv_bit_set(found, i);
      }
      break;
    case QVX_K_F64: {
      const double *x;
      QV_RETURN_NOT_OK(as_f64(c, &a, &n->s_aux, &x));
      for (int64_t i = 0; i < rows; i++) {
        bool f;
        BSEARCH(n->in_f64, n->in_n, x[i], f);
        if (f) qv_bit_set(found, i);
      }
      break;
    }
    case QVX_K_U64: {
      const uint64_t *x = a.values;
      for (int64_t i = 0; i < rows; i++) {
        bool f;
        BSEARCH(n->in_u64, n->in_n, x[i], f);
        if (f) qv_bit_set(found, i);
      }
      break;
    }
    default: {
      const int64_t *x = a.values;
      for (int64_t i = 0; i < rows; i++) {
        bool f;
        BSEARCH(n->in_i64, n->in_n, x[i], f);
        if (f) qv_bit_set(found, i);
      }
      break;
    }
  }
  /* found -> !negated; not found -> negated, or null when the list has a
   * null. */
  const uint8_t *valid = a.valid;
  if (n->in_has_null) {
    GROW(v, uint8_t *, &n->s_valid, bm_bytes(rows));
    for (int64_t k = 0; k < bm_bytes(rows); k++)
      v[k] = (uint8_t)((a.valid ? a.valid[k] : 0xff) & found[k]);
    valid = v;
  }
  if (n->negated)
    for (int64_t k = 0; k < bm_bytes(rows); k++) found[k] = (uint8_t)~found[k];
  bool_result(out, rows, valid, found);
  return QV_OK;
}

/* UTF-8 continuation bytes (10xxxxxx) among n bytes, eight at a time. */
static int64_t count_continuation(const uint8_t *p, int64_t n) {
  const uint64_t high = 0x8080808080808080ull;
  int64_t cont = 0, k = 0;
  for (; k + 8 <= n; k += 8) {
    uint64_t w;
    memcpy(&w, p + k, 8);
    cont += __builtin_popcountll(w & ~(w << 1) & high); /* bit 7 set, bit 6 clear */
  }
  for (; k < n; k++) cont += (p[k] & 0xC0) == 0x80;
  return cont;
}

static qv_status eval_len(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  int64_t rows = c->n;
  GROW(r, int64_t *, &n->s_values, 8 * rows);
  memset(out, 0, sizeof *out);
  out->kind = QVX_K_I64;
  out->n = rows;
  out->valid = a.valid;
  out->values = r;
  if (a.kind == QVX_K_STR) {
    for (int64_t i = 0; i < rows; i++) {
      r[i] = 0;
      if (!vbit(a.valid, i) || !vbit(care, i)) continue;
      const uint8_t *p;
      int64_t len;
      if (!str_at(&a.str, i, &p, &len)) return bad_str(c, n, i);
      if (!a.is_binary) len -= count_continuation(p, len); /* code points */
      r[i] = len;
    }
    return QV_OK;
  }
  /* A list column. */
  const qv_array *l = a.list;
  int64_t base = a.list_base;
  qv_type_id id = l->type->id;
  if (id == QV_FIXED_SIZE_LIST) {
    for (int64_t i = 0; i < rows; i++) r[i] = l->type->list_size;
    return QV_OK;
  }
  bool view = id == QV_LIST_VIEW || id == QV_LARGE_LIST_VIEW;
  int w = (id == QV_LARGE_LIST || id == QV_LARGE_LIST_VIEW) ? 8 : 4;
  int64_t need = view ? (base + rows) * w : (base + rows + 1) * w;
  int slot = view ? 2 : 1;
  if (l->n_buffers <= slot || !l->buffers[slot] || l->buffers[slot]->size < need)
    return eval_err(c, n, QV_EINVAL, 0, "list %s buffer is too short (malformed array)",
                    view ? "sizes" : "offsets");
  const uint8_t *p = l->buffers[slot]->data;
  for (int64_t i = 0; i < rows; i++) {
    int64_t v;
    if (w == 4) {
      int32_t e, b = 0;
      memcpy(&e, p + 4 * (base + i + (view ? 0 : 1)), 4);
      if (!view) memcpy(&b, p + 4 * (base + i), 4);
      v = (int64_t)e - b;
    } else {
      int64_t e, b = 0;
      memcpy(&e, p + 8 * (base + i + (view ? 0 : 1)), 8);
      if (!view) memcpy(&b, p + 8 * (base + i), 8);
      if (__builtin_sub_overflow(e, b, &v)) v = -1;
    }
    r[i] = v;
    if (v < 0 && vbit(a.valid, i))
      return eval_err(c, n, QV_EINVAL, i, "negative list length (malformed array)");
  }
  return QV_OK;
}

static qv_status eval_strfn(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  qvx_vec a, b;
  QV_RETURN_NOT_OK(eval(c, n->a, care, &a));
  QV_RETURN_NOT_OK(eval(c, n->b, care, &b));
  int64_t rows = c->n;
  GROW(vbuf, uint8_t *, &n->s_valid, bm_bytes(rows));
  const uint8_t *valid = and_valid(a.valid, b.valid, vbuf, rows);
  GROW(bits, uint8_t *, &n->s_values, bm_bytes(rows));
  memset(bits, 0, (size_t)bm_bytes(rows));
  for (int64_t i = 0; i < rows; i++) {
    if (!vbit(valid, i) || !vbit(care, i)) continue; /* rows that do not matter are skipped */
    const uint8_t *s, *p;
    int64_t sn, pn;
    if (!str_at(&a.str, i, &s, &sn) || !str_at(&b.str, i, &p, &pn)) return bad_str(c, n, i);
    bool r;
    if (pn > sn) r = false;
    else if (pn == 0) r = true;
    else if (n->op == QVX_FN_STARTS_WITH) r = memcmp(s, p, (size_t)pn) == 0;
    else if (n->op == QVX_FN_ENDS_WITH) r = memcmp(s + sn - pn, p, (size_t)pn) == 0;
    else r = memmem(s, (size_t)sn, p, (size_t)pn) != NULL;
    if (r) qv_bit_set(bits, i);
  }
  bool_result(out, rows, valid, bits);
  return QV_OK;
}

/* A sub-expression over one dictionary column: computed over the
 * dictionary's values (once per dictionary array), then mapped. */
static qv_status eval_dict(ctx *c, qvx_bnode *n, qvx_vec *out) {
  const colref *r = &c->cols[n->col];
  const qv_array *a = r->leaf;
  const qv_array *dict = a->dictionary;
  if (!dict) return col_err(c, n->col, QV_EINVAL, "dictionary-encoded array has no dictionary");
  if (n->cached_dict != dict) {
    qv_array_unref(n->cached_dict);
    n->cached_dict = NULL;
    ctx dc = *c;
    dc.n = dict->length;
    dc.dict = dict;
    QV_RETURN_NOT_OK(eval(&dc, n->a, NULL, &n->cached));
    n->cached_dict = qv_array_ref((qv_array *)dict);
  }
  int64_t rows = c->n;
  const uint8_t *valid;
  QV_RETURN_NOT_OK(load_validity(c, n->col, r, &n->s_valid, &n->s_aux, &valid));
  /* Indices (dictionary value nulls are part of the cached result). */
  qv_array tmp = *a;
  tmp.type = a->type->index_type;
  GROW(idx, int64_t *, &n->s_aux2, 8 * rows);
  QV_RETURN_NOT_OK(load_numbers(c, n->col, &tmp, r->base, rows, idx));
  int64_t d = dict->length;
  for (int64_t i = 0; i < rows; i++) {
    if (!vbit(valid, i)) {
      idx[i] = 0;
      continue;
    }
    if ((uint64_t)idx[i] >= (uint64_t)d)
      return col_err(c, n->col, QV_EINVAL,
                     "row %" PRId64 ": dictionary index %" PRId64
                     " is out of range (the "
                     "dictionary has %" PRId64 " values)",
                     i, idx[i], d);
  }
  const qvx_vec *res = &n->cached;
  if (res->valid) {
    uint8_t *v = (uint8_t *)valid;
    if (!v) {
      GROW(nv, uint8_t *, &n->s_valid, bm_bytes(rows));
      memset(nv, 0xff, (size_t)bm_bytes(rows));
      v = nv;
    }
    for (int64_t i = 0; i < rows; i++)
      if (qv_bit_get(v, i) && !qv_bit_get(res->valid, idx[i])) qv_bit_clear(v, i);
    valid = v;
  }
  memset(out, 0, sizeof *out);
  out->kind = n->out;
  out->n = rows;
  out->valid = valid;
  if (res->kind == QVX_K_BOOL) {
    GROW(bits, uint8_t *, &n->s_values, bm_bytes(rows));
    memset(bits, 0, (size_t)bm_bytes(rows));
    const uint8_t *src = res->values;
    for (int64_t i = 0; i < rows; i++)
      if (qv_bit_get(src, idx[i])) qv_bit_set(bits, i);
    out->values = bits;
  } else {
    GROW(vals, uint64_t *, &n->s_values, 8 * rows);
    const uint64_t *src = res->values;
    if (d == 0) memset(vals, 0, (size_t)(8 * rows));
    else
      for (int64_t i = 0; i < rows; i++) vals[i] = src[idx[i]];
    out->values = vals;
  }
  return QV_OK;
}

static qv_status eval(ctx *c, qvx_bnode *n, const uint8_t *care, qvx_vec *out) {
  switch (n->kind) {
    case QVX_B_LIT: return eval_lit(c, n, out);
    case QVX_B_COL: return eval_col(c, n, out);
    case QVX_B_NOT: return eval_not(c, n, care, out);
    case QVX_B_AND:
    case QVX_B_OR: return eval_logic(c, n, care, out);
    case QVX_B_CMP: return eval_cmp(c, n, care, out);
    case QVX_B_ARITH: return eval_arith(c, n, care, out);
    case QVX_B_NEG:
    case QVX_B_ABS: return eval_unary_num(c, n, care, out);
    case QVX_B_MATH: return eval_math(c, n, care, out);
    case QVX_B_STRMAP: return eval_strmap(c, n, care, out);
    case QVX_B_COALESCE:
    case QVX_B_IF: return eval_choice(c, n, care, out);
    case QVX_B_CAST: return eval_cast(c, n, care, out);
    case QVX_B_IS_NULL: return eval_is_null(c, n, care, out);
    case QVX_B_IN: return eval_in(c, n, care, out);
    case QVX_B_LEN: return eval_len(c, n, care, out);
    case QVX_B_STRFN: return eval_strfn(c, n, care, out);
    case QVX_B_DICT: return eval_dict(c, n, out);
  }
  return qv_error_set(c->err, QV_EARG, "bad expression node");
}

/* ======================================================================== */
/* Entry points                                                              */

static qv_status run(qv_bound_expr *b, const qv_array *batch, qvx_vec *out, qv_error *err) {
  if (!b || !batch)
    return qv_error_set(err, QV_EARG, "expression evaluation needs a bound expression and a batch");
  if (batch->length < 0) return qv_error_set(err, QV_EINVAL, "batch has a negative length");
  if (batch->type->id != QV_STRUCT)
    return qv_error_set(err, QV_ETYPE,
                        "expression evaluation needs a record batch (a struct array)");
  colref stack_cols[8];
  colref *cols = b->n_cols <= 8 ? stack_cols : malloc(sizeof *cols * (size_t)b->n_cols);
  if (!cols) return qv_error_set(err, QV_ENOMEM, "out of memory evaluating an expression");
  ctx c = {b, batch->length, cols, NULL, err};
  qv_status st = resolve_columns(&c, batch);
  if (st == QV_OK) st = eval(&c, b->root, NULL, out);
  if (cols != stack_cols) free(cols);
  return st;
}

static qv_status new_buffer_copy(const void *src, int64_t n, qv_buffer **out, qv_error *err) {
  QV_RETURN_NOT_OK(qv_buffer_alloc(n, out, err));
  if (n > 0) memcpy((*out)->data, src, (size_t)n);
  return QV_OK;
}

static qv_status eval_impl(qv_bound_expr *b, const qv_array *batch, qv_array **out, qv_error *err) {
  *out = NULL;
  qvx_vec v;
  QV_RETURN_NOT_OK(run(b, batch, &v, err));
  int64_t rows = batch->length;
  qv_type_id id = qv_bound_expr_result_type(b);
  qv_type *t = qv_type_new(id);
  qv_array *a = t ? qv_array_new(t, qv_type_num_buffers(id), 0) : NULL;
  qv_type_unref(t);
  if (!a) return qv_error_set(err, QV_ENOMEM, "out of memory building an expression result");
  a->length = rows;
  a->null_count = -1;
  qv_status st = QV_OK;
  if (v.kind == QVX_K_NULL) {
    a->null_count = rows;
    *out = a;
    return QV_OK;
  }
  if (v.valid) st = new_buffer_copy(v.valid, (rows + 7) / 8, &a->buffers[0], err);
  if (st == QV_OK) {
    switch (v.kind) {
      case QVX_K_BOOL: st = new_buffer_copy(v.values, (rows + 7) / 8, &a->buffers[1], err); break;
      case QVX_K_STR: {
        /* Copy the strings out (int32 offsets; refuse more than 2 GiB). */
        int64_t total = 0;
        for (int64_t i = 0; i < rows && st == QV_OK; i++) {
          const uint8_t *p;
          int64_t len;
          if (!vbit(v.valid, i)) continue;
          if (!str_at(&v.str, i, &p, &len)) {
            st = qv_error_set(err, QV_EINVAL,
                              "row %" PRId64
                              ": string offsets or views point "
                              "outside their buffers (malformed array)",
                              i);
            break;
          }
          total += len;
          if (total > INT32_MAX)
            st = qv_error_set(err, QV_ERANGE, "expression result holds more than 2 GiB of strings");
        }
        if (st == QV_OK) st = qv_buffer_alloc(4 * (rows + 1), &a->buffers[1], err);
        if (st == QV_OK) st = qv_buffer_alloc(total, &a->buffers[2], err);
        if (st != QV_OK) break;
        int32_t pos = 0;
        for (int64_t i = 0; i < rows; i++) {
          memcpy(a->buffers[1]->data + 4 * i, &pos, 4);
          const uint8_t *p;
          int64_t len;
          if (!vbit(v.valid, i) || !str_at(&v.str, i, &p, &len)) continue;
          if (len) memcpy(a->buffers[2]->data + pos, p, (size_t)len);
          pos += (int32_t)len;
        }
        memcpy(a->buffers[1]->data + 4 * rows, &pos, 4);
        break;
      }
      default: st = new_buffer_copy(v.values, 8 * rows, &a->buffers[1], err); break;
    }
  }
  if (st != QV_OK) {
    qv_array_unref(a);
    return st;
  }
  *out = a;
  return QV_OK;
}

static qv_status select_impl(qv_bound_expr *b, const qv_array *batch, uint8_t *out_bits,
                             int64_t *out_count, qv_error *err) {
  if (out_count) *out_count = 0;
  if (b && b->root->out != QVX_K_BOOL)
    return qv_error_set(err, QV_ETYPE, "a filter needs a boolean expression, found %s",
                        qvx_kind_name(b->root->out, b->root->is_binary));
  qvx_vec v;
  QV_RETURN_NOT_OK(run(b, batch, &v, err));
  int64_t rows = batch->length, nb = (rows + 7) / 8, count = 0;
  const uint8_t *x = v.values;
  for (int64_t k = 0; k < nb; k++) {
    uint8_t byte = x[k];
    if (v.valid) byte &= v.valid[k];
    if (k == nb - 1 && (rows & 7)) byte &= (uint8_t)((1u << (rows & 7)) - 1);
    out_bits[k] = byte;
    count += __builtin_popcount(byte);
  }
  if (out_count) *out_count = count;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Entry points under the mapped-read guard (core guard.c): the batch's
 * mapped buffers are checked first; scratch vectors are the bound
 * expression's. */

typedef struct eval_call {
  qv_bound_expr *b;
  const qv_array *batch;
  qv_array *out;
  uint8_t *out_bits;
  int64_t *out_count;
} eval_call;

static qv_status eval_body(void *call, qv_error *err) {
  eval_call *c = call;
  return eval_impl(c->b, c->batch, &c->out, err);
}

static qv_status select_body(void *call, qv_error *err) {
  eval_call *c = call;
  return select_impl(c->b, c->batch, c->out_bits, c->out_count, err);
}

qv_status qv_bound_expr_eval(qv_bound_expr *b, const qv_array *batch, qv_array **out,
                             qv_error *err) {
  *out = NULL;
  eval_call c = {b, batch, NULL, NULL, NULL};
  qv_status st = qv_guard_run_checked(&batch, 1, eval_body, &c, err);
  if (st != QV_OK) {
    qv_array_unref(c.out);
    return st;
  }
  *out = c.out;
  return QV_OK;
}

qv_status qv_bound_expr_select(qv_bound_expr *b, const qv_array *batch, uint8_t *out_bits,
                               int64_t *out_count, qv_error *err) {
  if (out_count) *out_count = 0;
  eval_call c = {b, batch, NULL, out_bits, out_count};
  return qv_guard_run_checked(&batch, 1, select_body, &c, err);
}
