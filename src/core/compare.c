/*
 * compare.c — logical equality of arrays (qv_array_equals) and the type and
 * field comparison behind it (compare_internal.h, which the ipc layer's
 * schema diffs in ipc/schema_diff.c share), with a description of the first
 * difference. Core layer; used by tests and by `quiver integration
 * --mode=VALIDATE` (a JSON file against an IPC file).
 *
 * Arrays are compared by logical value: offsets and slices are applied,
 * the contents of null slots are ignored, floats are equal when bitwise
 * equal or both NaN (so -0.0 != 0.0), string/binary views compare by the
 * bytes they denote, list views by the elements they denote, run-end
 * encoded arrays by their logical (expanded) values, unions by type code
 * and then the selected child's value.
 *
 * Dictionary-encoded arrays are compared by decoded values: element i is
 * dictionary[index[i]], and null when either the index or that dictionary
 * value is null. Two arrays with different dictionaries (another order,
 * duplicates, unused entries, deltas) but the same decoded values are
 * equal. This is deliberately more lenient than Arrow C++'s
 * ArrayEquals (which compares indices and dictionaries separately): the
 * IPC format lets a writer choose its dictionary layout, while the values
 * a reader sees are the contract. Index types must still match (they are
 * part of the type).
 *
 * A difference is reported as "row R, field 'PATH': expected X, found Y",
 * where R is the row of the top-level array, PATH names struct children by
 * name and list elements by [k] (e.g. "a.b[2].c"), and X/Y are the values
 * rendered readably (strings quoted, binary with \x escapes, decimals with
 * their scale, nested values in brackets).
 *
 * Both arrays must be well-formed (qv_array_validate at DEFAULT level):
 * the comparison trusts offsets, run ends, type codes and dictionary
 * indices; only string views are bounds-checked here.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compare_internal.h"
#include "core/numeric_internal.h"
#include "quiver/array.h"
#include "quiver/type.h"

/* ------------------------------------------------------------------------ */
/* Bounded string builder                                                    */

typedef struct sbuf {
  char *p;
  size_t cap; /* including the NUL */
  size_t len;
} sbuf;

static void sb_vput(sbuf *s, const char *fmt, va_list ap) {
  if (s->len + 1 >= s->cap) return;
  int n = vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
  if (n < 0) return;
  s->len += (size_t)n;
  if (s->len >= s->cap) s->len = s->cap - 1;
}

static void sb_put(sbuf *s, const char *fmt, ...) QV_PRINTF(2, 3);
static void sb_put(sbuf *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vput(s, fmt, ap);
  va_end(ap);
}

static bool sb_full(const sbuf *s) { return s->len + 1 >= s->cap; }

/* ------------------------------------------------------------------------ */
/* Element access helpers (indices are logical: before array->offset)        */

/* Byte width of the values of a fixed-width type other than bool, or 0. */
static int64_t fixed_width(const qv_type *t) { return qv_type_byte_width(t); }

static bool bitmap_valid(const qv_array *arr, int64_t i) {
  if (arr->n_buffers == 0 || arr->buffers[0] == NULL) return true;
  return qv_bit_get(arr->buffers[0]->data, arr->offset + i);
}

/* Physical run index holding logical element i of a run-end encoded array. */
static int64_t ree_run(const qv_array *arr, int64_t i) {
  const qv_array *re = arr->children[0];
  int64_t pos = arr->offset + i, lo = 0, hi = re->length;
  while (lo < hi) { /* first run whose end is > pos */
    int64_t mid = lo + (hi - lo) / 2;
    if (qv_array_int_at(re, mid) > pos) hi = mid;
    else lo = mid + 1;
  }
  return lo < re->length ? lo : re->length - 1;
}

static int union_child(const qv_array *arr, int64_t i) {
  int8_t code = (int8_t)arr->buffers[0]->data[arr->offset + i];
  for (int32_t k = 0; k < arr->type->n_children; k++)
    if (arr->type->type_codes[k] == code) return k;
  return -1;
}

static int64_t union_child_index(const qv_array *arr, int64_t i) {
  if (arr->type->id == QV_SPARSE_UNION) return arr->offset + i;
  int32_t off;
  memcpy(&off, arr->buffers[1]->data + (arr->offset + i) * 4, 4);
  return off;
}

/* Logical validity: dictionaries, unions and run-end encoded arrays are
 * null where the value they select is null. */
static bool lvalid(const qv_array *arr, int64_t i) {
  switch (arr->type->id) {
    case QV_NA: return false;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      int k = union_child(arr, i);
      if (k < 0) return true; /* invalid code: compared as a value */
      return lvalid(arr->children[k], union_child_index(arr, i));
    }
    case QV_RUN_END_ENCODED:
      if (arr->children[0]->length == 0) return false;
      return lvalid(arr->children[1], ree_run(arr, i));
    case QV_DICTIONARY:
      if (!bitmap_valid(arr, i)) return false;
      return arr->dictionary != NULL && lvalid(arr->dictionary, qv_array_int_at(arr, i));
    default: return bitmap_valid(arr, i);
  }
}

/* Start and length of list element i (list, large list, map, list views,
 * fixed-size list), as logical indices into the child. */
static void list_range(const qv_array *arr, int64_t i, int64_t *start, int64_t *len) {
  int64_t p = arr->offset + i;
  switch (arr->type->id) {
    case QV_LIST:
    case QV_MAP: {
      int32_t o[2];
      memcpy(o, arr->buffers[1]->data + p * 4, 8);
      *start = o[0];
      *len = (int64_t)o[1] - o[0];
      return;
    }
    case QV_LARGE_LIST: {
      int64_t o[2];
      memcpy(o, arr->buffers[1]->data + p * 8, 16);
      *start = o[0];
      *len = o[1] - o[0];
      return;
    }
    case QV_LIST_VIEW: {
      int32_t o, s;
      memcpy(&o, arr->buffers[1]->data + p * 4, 4);
      memcpy(&s, arr->buffers[2]->data + p * 4, 4);
      *start = o;
      *len = s;
      return;
    }
    case QV_LARGE_LIST_VIEW:
      memcpy(start, arr->buffers[1]->data + p * 8, 8);
      memcpy(len, arr->buffers[2]->data + p * 8, 8);
      return;
    default: /* FIXED_SIZE_LIST */
      *start = p * arr->type->list_size;
      *len = arr->type->list_size;
      return;
  }
}

/* Bytes of element i of a binary-like array; false for a malformed view. */
static bool bytes_at(const qv_array *arr, int64_t i, const uint8_t **data, int64_t *len) {
  int64_t p = arr->offset + i;
  switch (arr->type->id) {
    case QV_BINARY:
    case QV_STRING: {
      int32_t o[2];
      memcpy(o, arr->buffers[1]->data + p * 4, 8);
      *data = arr->buffers[2] ? arr->buffers[2]->data + o[0] : (const uint8_t *)"";
      *len = (int64_t)o[1] - o[0];
      return true;
    }
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int64_t o[2];
      memcpy(o, arr->buffers[1]->data + p * 8, 16);
      *data = arr->buffers[2] ? arr->buffers[2]->data + o[0] : (const uint8_t *)"";
      *len = o[1] - o[0];
      return true;
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: {
      int32_t size;
      if (!qv_array_view_bytes(arr, i, data, &size)) return false;
      *len = size;
      return true;
    }
    default: /* FIXED_SIZE_BINARY */
      *len = arr->type->byte_width;
      *data = arr->buffers[1]->data + p * arr->type->byte_width;
      return true;
  }
}

/* ------------------------------------------------------------------------ */
/* Rendering values                                                          */

#define RENDER_MAX_BYTES 48
#define RENDER_MAX_ITEMS 8
#define RENDER_MAX_DEPTH 4

static void render_bytes(sbuf *s, const uint8_t *d, int64_t n, bool text) {
  sb_put(s, text ? "\"" : "b\"");
  int64_t shown = n < RENDER_MAX_BYTES ? n : RENDER_MAX_BYTES;
  for (int64_t k = 0; k < shown; k++) {
    uint8_t ch = d[k];
    if (ch == '"' || ch == '\\') sb_put(s, "\\%c", ch);
    else if (ch >= 0x20 && ch < 0x7f) sb_put(s, "%c", ch);
    else if (text && ch >= 0x80) sb_put(s, "%c", ch); /* UTF-8 as is */
    else if (ch == '\n') sb_put(s, "\\n");
    else sb_put(s, "\\x%02x", ch);
  }
  if (shown < n) sb_put(s, "...\" (%" PRId64 " bytes)", n);
  else sb_put(s, "\"");
}

static void render(sbuf *s, const qv_array *arr, int64_t i, int depth);

static void render_list(sbuf *s, const qv_array *child, int64_t start, int64_t len, int depth,
                        bool map) {
  sb_put(s, map ? "{" : "[");
  for (int64_t k = 0; k < len && !sb_full(s); k++) {
    if (k) sb_put(s, ", ");
    if (k == RENDER_MAX_ITEMS) {
      sb_put(s, "... %" PRId64 " more", len - k);
      break;
    }
    if (map && child->type->id == QV_STRUCT && child->n_children == 2 && lvalid(child, start + k)) {
      render(s, child->children[0], child->offset + start + k, depth + 1);
      sb_put(s, ": ");
      render(s, child->children[1], child->offset + start + k, depth + 1);
    } else {
      render(s, child, start + k, depth + 1);
    }
  }
  sb_put(s, map ? "}" : "]");
}

static void render(sbuf *s, const qv_array *arr, int64_t i, int depth) {
  const qv_type *t = arr->type;
  if (!lvalid(arr, i)) {
    sb_put(s, "null");
    return;
  }
  if (depth > RENDER_MAX_DEPTH) {
    sb_put(s, "...");
    return;
  }
  int64_t p = arr->offset + i;
  const uint8_t *v = (arr->n_buffers > 1 && arr->buffers[1]) ? arr->buffers[1]->data : NULL;
  switch (t->id) {
    case QV_BOOL: sb_put(s, qv_bit_get(arr->buffers[1]->data, p) ? "true" : "false"); return;
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
    case QV_DATE32:
    case QV_DATE64:
    case QV_TIME32:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DURATION:
    case QV_INTERVAL_MONTHS: {
      int64_t x = qv_load_int(v, (int32_t)fixed_width(t), false, p);
      sb_put(s, "%" PRId64, x);
      return;
    }
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64: {
      sb_put(s, "%" PRIu64, qv_array_uint_at(arr, i));
      return;
    }
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE: {
      char buf[32];
      if (t->id == QV_HALF_FLOAT) {
        uint16_t h;
        memcpy(&h, v + p * 2, 2);
        qv_num_format_double(qv_half_to_double(h), false, buf);
      } else if (t->id == QV_FLOAT) {
        float f;
        memcpy(&f, v + p * 4, 4);
        qv_num_format_double(f, true, buf);
      } else {
        double d;
        memcpy(&d, v + p * 8, 8);
        qv_num_format_double(d, false, buf);
      }
      sb_put(s, "%s", buf);
      return;
    }
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256: {
      char buf[QV_DECIMAL_STRING_MAX];
      int64_t w = fixed_width(t);
      qv_decimal_to_string(v + p * w, (int)w, t->scale, buf);
      sb_put(s, "%s", buf);
      return;
    }
    case QV_INTERVAL_DAY_TIME: {
      int32_t d[2];
      memcpy(d, v + p * 8, 8);
      sb_put(s, "{days: %d, milliseconds: %d}", d[0], d[1]);
      return;
    }
    case QV_INTERVAL_MONTH_DAY_NANO: {
      int32_t md[2];
      int64_t ns;
      memcpy(md, v + p * 16, 8);
      memcpy(&ns, v + p * 16 + 8, 8);
      sb_put(s, "{months: %d, days: %d, nanoseconds: %" PRId64 "}", md[0], md[1], ns);
      return;
    }
    case QV_BINARY:
    case QV_LARGE_BINARY:
    case QV_BINARY_VIEW:
    case QV_FIXED_SIZE_BINARY:
    case QV_STRING:
    case QV_LARGE_STRING:
    case QV_STRING_VIEW: {
      const uint8_t *d;
      int64_t n;
      if (!bytes_at(arr, i, &d, &n)) {
        sb_put(s, "<invalid view>");
        return;
      }
      bool text = t->id == QV_STRING || t->id == QV_LARGE_STRING || t->id == QV_STRING_VIEW;
      render_bytes(s, d, n, text);
      return;
    }
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_FIXED_SIZE_LIST:
    case QV_MAP: {
      int64_t start, len;
      list_range(arr, i, &start, &len);
      render_list(s, arr->children[0], start, len, depth, t->id == QV_MAP);
      return;
    }
    case QV_STRUCT:
      sb_put(s, "{");
      for (int32_t k = 0; k < arr->n_children && !sb_full(s); k++) {
        sb_put(s, "%s%s: ", k ? ", " : "", t->children[k].name);
        render(s, arr->children[k], p, depth + 1);
      }
      sb_put(s, "}");
      return;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      int k = union_child(arr, i);
      if (k < 0) {
        sb_put(s, "<type code %d>", (int8_t)arr->buffers[0]->data[p]);
        return;
      }
      sb_put(s, "%s=", t->children[k].name);
      render(s, arr->children[k], union_child_index(arr, i), depth + 1);
      return;
    }
    case QV_DICTIONARY: render(s, arr->dictionary, qv_array_int_at(arr, i), depth); return;
    case QV_RUN_END_ENCODED: render(s, arr->children[1], ree_run(arr, i), depth); return;
    default: sb_put(s, "?"); return;
  }
}

/* ------------------------------------------------------------------------ */
/* Comparison                                                                */

#define PATH_CAP 512
#define MSG_CAP 768

typedef struct cmp_ctx {
  char path[PATH_CAP]; /* built by prepending while unwinding */
  size_t path_len;
  char msg[MSG_CAP];
} cmp_ctx;

static void path_prepend(cmp_ctx *c, const char *fmt, ...) QV_PRINTF(2, 3);
static void path_prepend(cmp_ctx *c, const char *fmt, ...) {
  char comp[160];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(comp, sizeof comp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof comp) n = (int)sizeof comp - 1;
  if (c->path_len + (size_t)n >= PATH_CAP) return; /* keep the innermost part */
  memmove(c->path + n, c->path, c->path_len + 1);
  memcpy(c->path, comp, (size_t)n);
  c->path_len += (size_t)n;
}

/* Record "expected X, found Y" for element i of e vs element j of a. */
static bool mismatch(cmp_ctx *c, const qv_array *e, int64_t i, const qv_array *a, int64_t j) {
  sbuf s = {c->msg, sizeof c->msg, 0};
  c->msg[0] = '\0';
  sb_put(&s, "expected ");
  render(&s, e, i, 0);
  sb_put(&s, ", found ");
  render(&s, a, j, 0);
  return false;
}

static bool cmp_range(cmp_ctx *c, const qv_array *e, int64_t ei, const qv_array *a, int64_t ai,
                      int64_t n, int64_t *at);

static bool has_nulls(const qv_array *arr, int64_t i, int64_t n) {
  if (n == 0 || arr->n_buffers == 0 || arr->buffers[0] == NULL) return false;
  return qv_bitmap_count(arr->buffers[0]->data, arr->offset + i, n) != n;
}

static bool float_eq(const qv_type *t, const uint8_t *x, const uint8_t *y) {
  switch (t->id) {
    case QV_HALF_FLOAT: {
      uint16_t hx, hy;
      memcpy(&hx, x, 2);
      memcpy(&hy, y, 2);
      bool nx = (hx & 0x7c00) == 0x7c00 && (hx & 0x3ff);
      bool ny = (hy & 0x7c00) == 0x7c00 && (hy & 0x3ff);
      return hx == hy || (nx && ny);
    }
    case QV_FLOAT: {
      float fx, fy;
      memcpy(&fx, x, 4);
      memcpy(&fy, y, 4);
      return memcmp(x, y, 4) == 0 || (isnan(fx) && isnan(fy));
    }
    default: {
      double dx, dy;
      memcpy(&dx, x, 8);
      memcpy(&dy, y, 8);
      return memcmp(x, y, 8) == 0 || (isnan(dx) && isnan(dy));
    }
  }
}

static bool cmp_fixed(cmp_ctx *c, const qv_array *e, int64_t ei, const qv_array *a, int64_t ai,
                      int64_t n, int64_t *at) {
  int64_t w = fixed_width(e->type);
  const uint8_t *ve = e->buffers[1]->data + (e->offset + ei) * w;
  const uint8_t *va = a->buffers[1]->data + (a->offset + ai) * w;
  bool nulls = has_nulls(e, ei, n) || has_nulls(a, ai, n);
  if (!nulls && memcmp(ve, va, (size_t)(n * w)) == 0) return true;
  bool is_float =
      e->type->id == QV_HALF_FLOAT || e->type->id == QV_FLOAT || e->type->id == QV_DOUBLE;
  for (int64_t k = 0; k < n; k++) {
    if (nulls) {
      bool be = bitmap_valid(e, ei + k), ba = bitmap_valid(a, ai + k);
      if (be != ba) {
        *at = k;
        return mismatch(c, e, ei + k, a, ai + k);
      }
      if (!be) continue;
    }
    const uint8_t *x = ve + k * w, *y = va + k * w;
    if (memcmp(x, y, (size_t)w) == 0) continue;
    if (is_float && float_eq(e->type, x, y)) continue;
    *at = k;
    return mismatch(c, e, ei + k, a, ai + k);
  }
  return true;
}

/* Compare one element known to be logically valid on both sides. */
static bool cmp_value(cmp_ctx *c, const qv_array *e, int64_t i, const qv_array *a, int64_t j) {
  const qv_type *t = e->type;
  switch (t->id) {
    case QV_BOOL:
      if (qv_bit_get(e->buffers[1]->data, e->offset + i) !=
          qv_bit_get(a->buffers[1]->data, a->offset + j))
        return mismatch(c, e, i, a, j);
      return true;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
    case QV_FIXED_SIZE_BINARY: {
      const uint8_t *de, *da;
      int64_t ne, na;
      if (!bytes_at(e, i, &de, &ne) || !bytes_at(a, j, &da, &na) || ne != na ||
          (ne > 0 && memcmp(de, da, (size_t)ne) != 0))
        return mismatch(c, e, i, a, j);
      return true;
    }
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_FIXED_SIZE_LIST:
    case QV_MAP: {
      int64_t se, le, sa, la, k;
      list_range(e, i, &se, &le);
      list_range(a, j, &sa, &la);
      if (le != la) return mismatch(c, e, i, a, j);
      if (!cmp_range(c, e->children[0], se, a->children[0], sa, le, &k)) {
        path_prepend(c, "[%" PRId64 "]", k);
        return false;
      }
      return true;
    }
    case QV_STRUCT:
      for (int32_t f = 0; f < e->n_children; f++) {
        int64_t k;
        if (!cmp_range(c, e->children[f], e->offset + i, a->children[f], a->offset + j, 1, &k)) {
          path_prepend(c, ".%s", t->children[f].name);
          return false;
        }
      }
      return true;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      int ke = union_child(e, i), ka = union_child(a, j);
      if (ke != ka || ke < 0) return mismatch(c, e, i, a, j);
      int64_t k;
      if (!cmp_range(c, e->children[ke], union_child_index(e, i), a->children[ka],
                     union_child_index(a, j), 1, &k)) {
        path_prepend(c, ".%s", t->children[ke].name);
        return false;
      }
      return true;
    }
    case QV_DICTIONARY: {
      int64_t k;
      return cmp_range(c, e->dictionary, qv_array_int_at(e, i), a->dictionary,
                       qv_array_int_at(a, j), 1, &k);
    }
    case QV_RUN_END_ENCODED: {
      int64_t k;
      return cmp_range(c, e->children[1], ree_run(e, i), a->children[1], ree_run(a, j), 1, &k);
    }
    default: {
      int64_t k;
      return cmp_fixed(c, e, i, a, j, 1, &k);
    }
  }
}

/* Compare e[ei, ei+n) with a[ai, ai+n) (logical indices). On a difference
 * returns false with *at the position within the range, c->msg the values
 * and c->path the location below this array. */
static bool cmp_range(cmp_ctx *c, const qv_array *e, int64_t ei, const qv_array *a, int64_t ai,
                      int64_t n, int64_t *at) {
  const qv_type *t = e->type;
  if (n == 0 || t->id == QV_NA) return true;
  if (fixed_width(t) > 0 && t->id != QV_FIXED_SIZE_BINARY) return cmp_fixed(c, e, ei, a, ai, n, at);
  /* Record batches and null-free structs: compare column by column so
   * that the fast paths of the children apply. */
  if (t->id == QV_STRUCT && !has_nulls(e, ei, n) && !has_nulls(a, ai, n)) {
    int64_t best = -1;
    cmp_ctx first;
    for (int32_t f = 0; f < e->n_children; f++) {
      int64_t k;
      cmp_ctx tmp;
      tmp.path_len = 0;
      tmp.path[0] = '\0';
      if (!cmp_range(&tmp, e->children[f], e->offset + ei, a->children[f], a->offset + ai,
                     best < 0 ? n : best, &k)) {
        /* keep the earliest row; among equal rows the first column */
        if (best < 0 || k < best) {
          best = k;
          first = tmp;
          path_prepend(&first, ".%s", t->children[f].name);
        }
      }
    }
    if (best < 0) return true;
    memcpy(c->msg, first.msg, sizeof c->msg);
    c->path_len = 0;
    c->path[0] = '\0';
    /* prepend the child's path in front of whatever deeper levels add */
    memcpy(c->path, first.path, first.path_len + 1);
    c->path_len = first.path_len;
    *at = best;
    return false;
  }
  for (int64_t k = 0; k < n; k++) {
    bool ve = lvalid(e, ei + k), va = lvalid(a, ai + k);
    if (ve != va) {
      *at = k;
      return mismatch(c, e, ei + k, a, ai + k);
    }
    if (!ve) continue;
    if (!cmp_value(c, e, ei + k, a, ai + k)) {
      *at = k;
      return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* Type and field differences (compare_internal.h)                           */

static void render_metadata(sbuf *s, const qv_metadata *md) {
  sb_put(s, "[");
  for (int64_t k = 0; k < md->n && !sb_full(s); k++)
    sb_put(s, "%s%s='%s'", k ? ", " : "", md->kv[k].key, md->kv[k].value);
  sb_put(s, "]");
}

void qv_metadata_render(const qv_metadata *md, char *buf, size_t cap) {
  if (cap == 0) return;
  sbuf s = {buf, cap, 0};
  buf[0] = '\0';
  render_metadata(&s, md);
}

static int bytes_cmp(const char *a, int64_t na, const char *b, int64_t nb) {
  int c = memcmp(a, b, (size_t)(na < nb ? na : nb));
  if (c != 0) return c;
  return na < nb ? -1 : na > nb;
}

static int kv_cmp(const void *x, const void *y) {
  const qv_kv *p = *(const qv_kv *const *)x, *q = *(const qv_kv *const *)y;
  int c = bytes_cmp(p->key, p->key_len, q->key, q->key_len);
  return c != 0 ? c : bytes_cmp(p->value, p->value_len, q->value, q->value_len);
}

/* Both sides are compared as sorted multisets of (key, value). */
bool qv_metadata_equal_unordered(const qv_metadata *x, const qv_metadata *y) {
  if (x->n != y->n) return false;
  if (x->n == 0) return true;
  const qv_kv **px = malloc(sizeof *px * (size_t)x->n), **py = malloc(sizeof *py * (size_t)y->n);
  bool eq = px != NULL && py != NULL;
  if (eq) {
    for (int64_t k = 0; k < x->n; k++) {
      px[k] = &x->kv[k];
      py[k] = &y->kv[k];
    }
    qsort(px, (size_t)x->n, sizeof *px, kv_cmp);
    qsort(py, (size_t)y->n, sizeof *py, kv_cmp);
    for (int64_t k = 0; k < x->n && eq; k++) eq = kv_cmp(&px[k], &py[k]) == 0;
  }
  free(px);
  free(py);
  return eq;
}

static bool diff_fail(qv_error *diff, const char *path, const char *fmt, ...) QV_PRINTF(3, 4);
static bool diff_fail(qv_error *diff, const char *path, const char *fmt, ...) {
  if (diff == NULL) return false;
  sbuf s = {diff->message, sizeof diff->message, 0};
  diff->message[0] = '\0';
  if (path[0] != '\0') sb_put(&s, "field '%s': ", path);
  va_list ap;
  va_start(ap, fmt);
  sb_vput(&s, fmt, ap);
  va_end(ap);
  return false;
}

static bool type_params_equal(const qv_type *x, const qv_type *y) {
  switch (x->id) {
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256: return x->precision == y->precision && x->scale == y->scale;
    case QV_TIME32:
    case QV_TIME64:
    case QV_DURATION: return x->unit == y->unit;
    case QV_TIMESTAMP:
      if (x->unit != y->unit) return false;
      if (x->timezone == NULL || y->timezone == NULL) return x->timezone == y->timezone;
      return strcmp(x->timezone, y->timezone) == 0;
    case QV_FIXED_SIZE_BINARY: return x->byte_width == y->byte_width;
    case QV_FIXED_SIZE_LIST: return x->list_size == y->list_size;
    case QV_MAP: return x->keys_sorted == y->keys_sorted;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION:
      if (x->n_children != y->n_children) return false;
      for (int32_t k = 0; k < x->n_children; k++)
        if (x->type_codes[k] != y->type_codes[k]) return false;
      return true;
    default: return true;
  }
}

bool qv_field_diff_at(const qv_field *e, const qv_field *a, char *path, size_t path_len,
                      bool check_md, qv_error *diff) {
  if (strcmp(e->name, a->name) != 0)
    return diff_fail(diff, path, "name: expected '%s', found '%s'", e->name, a->name);
  if (e->nullable != a->nullable)
    return diff_fail(diff, path, "nullable: expected %s, found %s", e->nullable ? "true" : "false",
                     a->nullable ? "true" : "false");
  if (check_md && !qv_metadata_equal_unordered(&e->metadata, &a->metadata)) {
    if (diff == NULL) return false;
    char me[384], ma[384];
    sbuf s1 = {me, sizeof me, 0}, s2 = {ma, sizeof ma, 0};
    me[0] = ma[0] = '\0';
    render_metadata(&s1, &e->metadata);
    render_metadata(&s2, &a->metadata);
    return diff_fail(diff, path, "metadata: expected %s, found %s", me, ma);
  }
  return qv_type_diff_at(e->type, a->type, path, path_len, check_md, diff);
}

bool qv_type_diff_at(const qv_type *e, const qv_type *a, char *path, size_t path_len, bool check_md,
                     qv_error *diff) {
  if (e->id != a->id || !type_params_equal(e, a)) {
    if (diff == NULL) return false;
    char te[256], ta[256];
    qv_type_to_string(e, te, sizeof te);
    qv_type_to_string(a, ta, sizeof ta);
    return diff_fail(diff, path, "type: expected %s, found %s", te, ta);
  }
  if (e->id == QV_DICTIONARY) {
    if (e->index_type->id != a->index_type->id)
      return diff_fail(diff, path, "dictionary index type: expected %s, found %s",
                       qv_type_id_name(e->index_type->id), qv_type_id_name(a->index_type->id));
    if (e->ordered != a->ordered)
      return diff_fail(diff, path, "dictionary ordered: expected %s, found %s",
                       e->ordered ? "true" : "false", a->ordered ? "true" : "false");
    return qv_type_diff_at(e->value_type, a->value_type, path, path_len, check_md, diff);
  }
  if (e->n_children != a->n_children)
    return diff_fail(diff, path, "expected %d children, found %d", (int)e->n_children,
                     (int)a->n_children);
  for (int32_t k = 0; k < e->n_children; k++) {
    size_t room = QV_DIFF_PATH_CAP - path_len;
    int n = snprintf(path + path_len, room, "%s%s", path_len ? "." : "", e->children[k].name);
    size_t child_len = path_len + (n < 0 ? 0 : ((size_t)n < room ? (size_t)n : room - 1));
    bool ok = qv_field_diff_at(&e->children[k], &a->children[k], path, child_len, check_md, diff);
    path[path_len] = '\0';
    if (!ok) return false;
  }
  return true;
}

/* ------------------------------------------------------------------------ */

bool qv_array_equals(const qv_array *expected, const qv_array *actual, qv_error *diff) {
  if (expected == actual) return true;
  if (expected == NULL || actual == NULL) {
    if (diff)
      snprintf(diff->message, sizeof diff->message, "expected %s array, found %s",
               expected ? "an" : "no", actual ? "one" : "none");
    return false;
  }
  char path[QV_DIFF_PATH_CAP];
  path[0] = '\0';
  if (!qv_type_diff_at(expected->type, actual->type, path, 0, false, diff)) return false;
  if (expected->length != actual->length) {
    if (diff)
      snprintf(diff->message, sizeof diff->message, "length: expected %" PRId64 ", found %" PRId64,
               expected->length, actual->length);
    return false;
  }
  cmp_ctx c;
  c.path[0] = '\0';
  c.path_len = 0;
  c.msg[0] = '\0';
  int64_t row = 0;
  if (cmp_range(&c, expected, 0, actual, 0, expected->length, &row)) return true;
  if (diff != NULL) {
    const char *p = c.path[0] == '.' ? c.path + 1 : c.path;
    sbuf s = {diff->message, sizeof diff->message, 0};
    diff->message[0] = '\0';
    if (*p) sb_put(&s, "row %" PRId64 ", field '%s': %s", row, p, c.msg);
    else sb_put(&s, "row %" PRId64 ": %s", row, c.msg);
  }
  return false;
}
