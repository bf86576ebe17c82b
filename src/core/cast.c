/*
 * cast.c — qv_array_cast (convert an array to another type, "safe" as
 * pyarrow's default: a value that does not survive the conversion is an
 * error, never silently changed) and qv_array_nulls (an all-null array of
 * any type). Core layer; the table layer's cast transform and the dataset
 * layer's feature casts are built on these.
 *
 * Supported conversions (anything else is QV_ENOTSUP, naming both types):
 *  - equal types (metadata and field names ignored): zero copy, the result
 *    carries the target type;
 *  - null -> any type: all nulls;
 *  - numeric <-> numeric among bool, integers, half/float/double: integer
 *    narrowing checks the range; float -> integer checks that the value is
 *    integral and in range; integer -> float checks that the integer is
 *    exactly representable (|v| <= 2^53 for double, 2^24 float, 2^11 half)
 *    as Arrow C++ does; float -> float and integer/float -> bool (v != 0)
 *    are unchecked; bool -> numeric gives 0/1;
 *  - timestamp <-> timestamp (any time zones), duration <-> duration,
 *    time32/time64 <-> time32/time64, date32 <-> date64: the unit factor is
 *    applied, multiplication checked for overflow, division checked for a
 *    zero remainder ("would lose data");
 *  - a temporal type <-> the signed integer of its width: zero copy;
 *  - binary, string, large_binary, large_string among themselves: the data
 *    buffer is shared (a view of the referenced range when offsets are
 *    rebased); 64 -> 32-bit offsets check the data fits; binary -> string
 *    checks UTF-8 of every valid value;
 *  - dictionary -> its value type (or anything the values cast to):
 *    decoded by gathering the dictionary; dictionary -> dictionary: indices
 *    and dictionary cast separately;
 *  - list/large_list -> list/large_list, fixed_size_list -> fixed_size_list
 *    of the same size, struct -> struct with the same number of fields (by
 *    position): children cast recursively over the referenced range only.
 * Null slots are never checked. Results have offset 0 unless zero copy.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/guard_internal.h"
#include "core/kernels_internal.h"
#include "core/numeric_internal.h"

static qv_status cast_impl(qv_array *a, qv_type *to, qv_array **out, qv_error *err);

/* Types as text for messages. */
typedef struct cast_names {
  char from[128];
  char to[128];
} cast_names;

static void names_of(const qv_type *from, const qv_type *to, cast_names *n) {
  qv_type_to_string(from, n->from, sizeof n->from);
  qv_type_to_string(to, n->to, sizeof n->to);
}

static qv_status unsupported(const qv_type *from, const qv_type *to, qv_error *err) {
  cast_names n;
  names_of(from, to, &n);
  return qv_error_set(err, QV_ENOTSUP, "cast from %s to %s is not supported", n.from, n.to);
}

static qv_status oom(qv_error *err) { return qv_error_set(err, QV_ENOMEM, "cast: out of memory"); }

static bool valid_at(const qv_array *a, int64_t i) {
  return a->buffers[0] == NULL || qv_bit_get(a->buffers[0]->data, a->offset + i);
}

/* Validity of a at offset 0: NULL when no nulls, a shared reference when
 * already at offset 0, else a fresh copy of the bits. */
static qv_status validity_at_zero(qv_array *a, qv_buffer **out, qv_error *err) {
  *out = NULL;
  if (a->buffers[0] == NULL || qv_array_null_count(a) == 0) return QV_OK;
  if (a->offset == 0) {
    *out = qv_buffer_ref(a->buffers[0]);
    return QV_OK;
  }
  QV_RETURN_NOT_OK(qv_buffer_alloc((a->length + 7) / 8, out, err));
  qv_bitmap_copy((*out)->data, 0, a->buffers[0]->data, a->offset, a->length);
  return QV_OK;
}

/* A new shell of type `to` sharing every buffer, child and dictionary of
 * a (NULL on allocation failure). */
static qv_array *shell_copy(qv_array *a, qv_type *to) {
  qv_array *r = qv_array_new(to, a->n_buffers, a->n_children);
  if (r == NULL) return NULL;
  for (int32_t i = 0; i < a->n_buffers; i++) r->buffers[i] = qv_buffer_ref(a->buffers[i]);
  for (int32_t i = 0; i < a->n_children; i++) r->children[i] = qv_array_ref(a->children[i]);
  r->dictionary = qv_array_ref(a->dictionary);
  r->length = a->length;
  r->offset = a->offset;
  r->null_count = a->null_count;
  return r;
}

/* a itself when it already has type `to`, else a zero-copy shell of it. */
static qv_status retype(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  *out = a->type == to ? qv_array_ref(a) : shell_copy(a, to);
  return *out == NULL ? oom(err) : QV_OK;
}

/* ------------------------------------------------------------------------ */
/* All-null arrays                                                           */

static qv_status alloc_zero(int64_t bytes, qv_buffer **out, qv_error *err) {
  return qv_buffer_alloc(bytes < 0 ? 0 : bytes, out, err);
}

qv_status qv_array_nulls(qv_type *type, int64_t length, qv_array **out, qv_error *err) {
  if (type == NULL || length < 0)
    return qv_error_set(err, QV_EARG, "nulls: needs a type and a length >= 0 (got %lld)",
                        (long long)length);
  qv_type_id id = type->id;
  int32_t nb = qv_type_num_buffers(id);
  int32_t nc = id == QV_DICTIONARY ? 0 : type->n_children;
  qv_array *a = qv_array_new(type, nb, nc);
  if (a == NULL) return oom(err);
  a->length = length;
  a->null_count = qvk_has_validity_slot(id) ? length : 0;
  if (id == QV_NA) a->null_count = length;
  qv_status st = QV_OK;
  if (qvk_has_validity_slot(id) && id != QV_NA)
    st = alloc_zero((length + 7) / 8, &a->buffers[0], err);
  int64_t n = length;
  switch (id) {
    case QV_NA: break;
    case QV_BOOL:
      if (st == QV_OK) st = alloc_zero((n + 7) / 8, &a->buffers[1], err);
      break;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int64_t w = qvk_is_large(id) ? 8 : 4;
      if (st == QV_OK) st = alloc_zero((n + 1) * w, &a->buffers[1], err);
      if (st == QV_OK) st = alloc_zero(0, &a->buffers[2], err);
      break;
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
      if (st == QV_OK) st = alloc_zero(n * QV_VIEW_SIZE, &a->buffers[1], err);
      break;
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: {
      int64_t w = qvk_is_large(id) ? 8 : 4;
      if (st == QV_OK) st = alloc_zero((n + 1) * w, &a->buffers[1], err);
      if (st == QV_OK) st = qv_array_nulls(type->children[0].type, 0, &a->children[0], err);
      break;
    }
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: {
      int64_t w = qvk_is_large(id) ? 8 : 4;
      if (st == QV_OK) st = alloc_zero(n * w, &a->buffers[1], err);
      if (st == QV_OK) st = alloc_zero(n * w, &a->buffers[2], err);
      if (st == QV_OK) st = qv_array_nulls(type->children[0].type, 0, &a->children[0], err);
      break;
    }
    case QV_FIXED_SIZE_LIST: {
      int64_t m;
      if (qv_mul_overflow(n, type->list_size, &m)) {
        st = qv_error_set(err, QV_ENOMEM, "nulls: %lld lists of %d values overflow", (long long)n,
                          type->list_size);
        break;
      }
      if (st == QV_OK) st = qv_array_nulls(type->children[0].type, m, &a->children[0], err);
      break;
    }
    case QV_STRUCT:
      for (int32_t k = 0; k < nc && st == QV_OK; k++)
        st = qv_array_nulls(type->children[k].type, n, &a->children[k], err);
      break;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      if (nc == 0 && n > 0) {
        st = qv_error_set(err, QV_ETYPE, "nulls: a union without children has no null value");
        break;
      }
      int8_t code = (int8_t)(nc > 0 && type->type_codes ? type->type_codes[0] : 0);
      if (st == QV_OK) st = alloc_zero(n, &a->buffers[0], err);
      if (st == QV_OK) memset(a->buffers[0]->data, code, (size_t)n);
      if (st == QV_OK && id == QV_DENSE_UNION) {
        st = alloc_zero(n * 4, &a->buffers[1], err);
        for (int64_t i = 0; st == QV_OK && i < n; i++) {
          int32_t v = (int32_t)i;
          memcpy(a->buffers[1]->data + 4 * i, &v, 4);
        }
      }
      for (int32_t k = 0; k < nc && st == QV_OK; k++)
        st = qv_array_nulls(type->children[k].type, (id == QV_SPARSE_UNION || k == 0) ? n : 0,
                            &a->children[k], err);
      if (id == QV_DENSE_UNION && n > INT32_MAX)
        st = qv_error_set(err, QV_ERANGE, "nulls: dense union of %lld rows", (long long)n);
      break;
    }
    case QV_DICTIONARY: {
      int64_t w = qv_type_bit_width(type->index_type) / 8;
      if (st == QV_OK) st = alloc_zero(n * w, &a->buffers[1], err);
      if (st == QV_OK) st = qv_array_nulls(type->value_type, 0, &a->dictionary, err);
      break;
    }
    case QV_RUN_END_ENCODED: {
      const qv_type *re = type->children[0].type;
      int64_t max = qvk_int_max(re->id);
      int64_t runs = n == 0 ? 0 : 1 + (n - 1) / max;
      qv_array *ends = qv_array_new(type->children[0].type, 2, 0);
      if (ends == NULL) {
        st = oom(err);
        break;
      }
      a->children[0] = ends;
      ends->length = runs;
      ends->null_count = 0;
      int32_t w = qv_type_bit_width(re) / 8;
      st = alloc_zero(runs * w, &ends->buffers[1], err);
      for (int64_t r = 0; st == QV_OK && r < runs; r++)
        qvk_store_int(ends->buffers[1]->data, w, r, r + 1 == runs ? n : (r + 1) * max);
      if (st == QV_OK) st = qv_array_nulls(type->children[1].type, runs, &a->children[1], err);
      break;
    }
    default: {
      int32_t w = qvk_value_bytes(type);
      if (w <= 0) {
        st = qv_error_set(err, QV_ENOTSUP, "nulls: type %s is not supported", qv_type_id_name(id));
        break;
      }
      int64_t bytes;
      if (qv_mul_overflow(n, w, &bytes)) {
        st = qv_error_set(err, QV_ENOMEM, "nulls: %lld values overflow", (long long)n);
        break;
      }
      if (st == QV_OK) st = alloc_zero(bytes, &a->buffers[1], err);
    }
  }
  if (st != QV_OK) {
    qv_array_unref(a);
    return st;
  }
  *out = a;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Numbers                                                                   */

typedef __int128 i128;

static bool is_numeric(qv_type_id id) {
  return id == QV_BOOL || qv_type_id_is_integer(id) || id == QV_HALF_FLOAT || id == QV_FLOAT ||
         id == QV_DOUBLE;
}
static bool is_float(qv_type_id id) {
  return id == QV_HALF_FLOAT || id == QV_FLOAT || id == QV_DOUBLE;
}

static i128 int_min(qv_type_id id) {
  switch (id) {
    case QV_INT8: return INT8_MIN;
    case QV_INT16: return INT16_MIN;
    case QV_INT32: return INT32_MIN;
    case QV_INT64: return INT64_MIN;
    default: return 0;
  }
}
static i128 int_max(qv_type_id id) {
  if (id == QV_UINT64) return (i128)UINT64_MAX;
  return qvk_int_max(id);
}

/* Integer element i (physical) of a buffer of integer type id. */
static i128 load_int(const uint8_t *p, qv_type_id id, int64_t i) {
  if (id == QV_UINT64) {
    uint64_t v;
    memcpy(&v, p + 8 * i, 8);
    return (i128)v;
  }
  return qv_load_int(p, qv_type_bit_width(&(qv_type){.id = id}) / 8,
                     !qv_type_id_is_signed_integer(id), i);
}

static double load_float(const uint8_t *p, qv_type_id id, int64_t i) {
  if (id == QV_DOUBLE) {
    double v;
    memcpy(&v, p + 8 * i, 8);
    return v;
  }
  if (id == QV_FLOAT) {
    float v;
    memcpy(&v, p + 4 * i, 4);
    return v;
  }
  uint16_t h;
  memcpy(&h, p + 2 * i, 2);
  return qv_half_to_double(h);
}

static void store_float(uint8_t *p, qv_type_id id, int64_t i, double v) {
  if (id == QV_DOUBLE) {
    memcpy(p + 8 * i, &v, 8);
  } else if (id == QV_FLOAT) {
    float f = (float)v;
    memcpy(p + 4 * i, &f, 4);
  } else {
    uint16_t h = qv_double_to_half(v);
    memcpy(p + 2 * i, &h, 2);
  }
}

static void store_int(uint8_t *p, qv_type_id id, int64_t i, i128 v) {
  int32_t w = qv_type_bit_width(&(qv_type){.id = id}) / 8;
  qvk_store_int(p, w, i, (int64_t)(uint64_t)v);
}

/* Largest integer magnitude a float type represents exactly. */
static i128 float_exact_limit(qv_type_id id) {
  return id == QV_DOUBLE ? ((i128)1 << 53) : id == QV_FLOAT ? ((i128)1 << 24) : ((i128)1 << 11);
}

static void i128_text(i128 v, char *out, size_t cap) {
  char tmp[48];
  int n = 0;
  bool neg = v < 0;
  unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
  do {
    tmp[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u != 0);
  size_t k = 0;
  if (neg && k + 1 < cap) out[k++] = '-';
  while (n > 0 && k + 1 < cap) out[k++] = tmp[--n];
  out[k] = '\0';
}

static qv_status cast_numeric(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  qv_type_id f = a->type->id, t = to->id;
  int64_t n = a->length;
  qv_array *r = qv_array_new(to, 2, 0);
  if (r == NULL) return oom(err);
  r->length = n;
  qv_status st = validity_at_zero(a, &r->buffers[0], err);
  r->null_count = r->buffers[0] ? qv_array_null_count(a) : 0;
  int64_t bytes = t == QV_BOOL ? (n + 7) / 8 : n * (qv_type_bit_width(to) / 8);
  if (st == QV_OK) st = qv_buffer_alloc(bytes, &r->buffers[1], err);
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  const uint8_t *src = a->buffers[1]->data;
  uint8_t *dst = r->buffers[1]->data;
  int64_t off = a->offset;
  cast_names nm;
  for (int64_t i = 0; i < n; i++) {
    if (!valid_at(a, i)) continue;
    int64_t p = off + i;
    if (f == QV_BOOL || qv_type_id_is_integer(f)) {
      i128 v = f == QV_BOOL ? (i128)qv_bit_get(src, p) : load_int(src, f, p);
      if (t == QV_BOOL) {
        if (v != 0) qv_bit_set(dst, i);
      } else if (is_float(t)) {
        i128 lim = float_exact_limit(t);
        if (v > lim || v < -lim) {
          char txt[48];
          i128_text(v, txt, sizeof txt);
          names_of(a->type, to, &nm);
          st = qv_error_set(err, QV_ERANGE,
                            "cast from %s to %s: row %lld: integer value %s is not exactly "
                            "representable (limit +/-%lld)",
                            nm.from, nm.to, (long long)i, txt, (long long)lim);
          break;
        }
        store_float(dst, t, i, (double)v);
      } else {
        if (v < int_min(t) || v > int_max(t)) {
          char txt[48], lo[48], hi[48];
          i128_text(v, txt, sizeof txt);
          i128_text(int_min(t), lo, sizeof lo);
          i128_text(int_max(t), hi, sizeof hi);
          names_of(a->type, to, &nm);
          st = qv_error_set(err, QV_ERANGE,
                            "cast from %s to %s: row %lld: value %s is out of range [%s, %s]",
                            nm.from, nm.to, (long long)i, txt, lo, hi);
          break;
        }
        store_int(dst, t, i, v);
      }
    } else { /* from a float */
      double v = load_float(src, f, p);
      if (t == QV_BOOL) {
        if (v != 0) qv_bit_set(dst, i);
      } else if (is_float(t)) {
        store_float(dst, t, i, v);
      } else {
        names_of(a->type, to, &nm);
        if (!isfinite(v) || v != trunc(v)) {
          st = qv_error_set(err, QV_ERANGE,
                            "cast from %s to %s: row %lld: float value %.17g is not an integer",
                            nm.from, nm.to, (long long)i, v);
          break;
        }
        /* Exact comparison against the bounds: |v| < 2^64 fits i128. */
        if (v < -18446744073709551616.0 || v >= 18446744073709551616.0 || (i128)v < int_min(t) ||
            (i128)v > int_max(t)) {
          st = qv_error_set(err, QV_ERANGE,
                            "cast from %s to %s: row %lld: float value %.17g is out of range",
                            nm.from, nm.to, (long long)i, v);
          break;
        }
        store_int(dst, t, i, (i128)v);
      }
    }
  }
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  *out = r;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Temporal units                                                            */

static bool is_temporal(qv_type_id id) {
  return id == QV_DATE32 || id == QV_DATE64 || id == QV_TIME32 || id == QV_TIME64 ||
         id == QV_TIMESTAMP || id == QV_DURATION;
}

/* Ticks per second of a unit. */
static int64_t unit_ticks(qv_time_unit u) {
  switch (u) {
    case QV_SECOND: return 1;
    case QV_MILLI: return 1000;
    case QV_MICRO: return 1000000;
    default: return 1000000000;
  }
}

/* Integer conversion v -> v * mul / div (one of them 1), int32 or int64
 * storage, with overflow and data-loss checks. */
static qv_status cast_scaled(qv_array *a, qv_type *to, int64_t mul, int64_t div, qv_array **out,
                             qv_error *err) {
  int64_t n = a->length;
  int32_t wf = qv_type_bit_width(a->type) / 8, wt = qv_type_bit_width(to) / 8;
  qv_array *r = qv_array_new(to, 2, 0);
  if (r == NULL) return oom(err);
  r->length = n;
  qv_status st = validity_at_zero(a, &r->buffers[0], err);
  r->null_count = r->buffers[0] ? qv_array_null_count(a) : 0;
  if (st == QV_OK) st = qv_buffer_alloc(n * wt, &r->buffers[1], err);
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  const uint8_t *src = a->buffers[1]->data;
  int64_t lo = wt == 4 ? INT32_MIN : INT64_MIN, hi = wt == 4 ? INT32_MAX : INT64_MAX;
  cast_names nm;
  for (int64_t i = 0; i < n; i++) {
    if (!valid_at(a, i)) continue;
    int64_t v = qv_load_int(src, wf, false, a->offset + i), x;
    if (div > 1) {
      if (v % div != 0) {
        names_of(a->type, to, &nm);
        st =
            qv_error_set(err, QV_ERANGE, "cast from %s to %s would lose data: row %lld: value %lld",
                         nm.from, nm.to, (long long)i, (long long)v);
        break;
      }
      x = v / div;
    } else if (qv_mul_overflow(v, mul, &x)) {
      names_of(a->type, to, &nm);
      st = qv_error_set(err, QV_ERANGE, "cast from %s to %s: row %lld: value %lld overflows",
                        nm.from, nm.to, (long long)i, (long long)v);
      break;
    }
    if (x < lo || x > hi) {
      names_of(a->type, to, &nm);
      st = qv_error_set(err, QV_ERANGE, "cast from %s to %s: row %lld: value %lld overflows",
                        nm.from, nm.to, (long long)i, (long long)v);
      break;
    }
    qvk_store_int(r->buffers[1]->data, wt, i, x);
  }
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  *out = r;
  return QV_OK;
}

static qv_status cast_temporal(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  qv_type_id f = a->type->id, t = to->id;
  int64_t from_ticks, to_ticks; /* per second, or per day for dates */
  if (f == QV_TIMESTAMP && t == QV_TIMESTAMP) {
    from_ticks = unit_ticks(a->type->unit);
    to_ticks = unit_ticks(to->unit);
  } else if (f == QV_DURATION && t == QV_DURATION) {
    from_ticks = unit_ticks(a->type->unit);
    to_ticks = unit_ticks(to->unit);
  } else if ((f == QV_TIME32 || f == QV_TIME64) && (t == QV_TIME32 || t == QV_TIME64)) {
    from_ticks = unit_ticks(a->type->unit);
    to_ticks = unit_ticks(to->unit);
  } else if ((f == QV_DATE32 || f == QV_DATE64) && (t == QV_DATE32 || t == QV_DATE64)) {
    from_ticks = f == QV_DATE32 ? 1 : 86400000;
    to_ticks = t == QV_DATE32 ? 1 : 86400000;
  } else {
    return unsupported(a->type, to, err);
  }
  if (from_ticks == to_ticks && qv_type_bit_width(a->type) == qv_type_bit_width(to))
    return retype(a, to, out, err);
  if (to_ticks >= from_ticks) return cast_scaled(a, to, to_ticks / from_ticks, 1, out, err);
  return cast_scaled(a, to, 1, from_ticks / to_ticks, out, err);
}

/* ------------------------------------------------------------------------ */
/* Binary and string                                                         */

static bool is_binary_like(qv_type_id id) {
  return id == QV_BINARY || id == QV_STRING || id == QV_LARGE_BINARY || id == QV_LARGE_STRING;
}

/* Offsets of a binary or list array, rebased to start at 0, in `wt` bytes
 * per entry (4 or 8). *first / *last receive the referenced range. Shares
 * the buffer when nothing changes. */
static qv_status rebase_offsets(qv_array *a, int32_t wt, qv_buffer **out, int64_t *first,
                                int64_t *last, const cast_names *nm, qv_error *err) {
  int32_t wf = qvk_is_large(a->type->id) ? 8 : 4;
  int64_t n = a->length;
  const uint8_t *p = a->buffers[1]->data;
  *first = n == 0 && a->buffers[1]->size < wf ? 0 : qv_load_int(p, wf, false, a->offset);
  *last = n == 0 ? *first : qv_load_int(p, wf, false, a->offset + n);
  if (wt == 4 && *last - *first > INT32_MAX)
    return qv_error_set(err, QV_ERANGE,
                        "cast from %s to %s: %lld bytes/values do not fit 32-bit offsets", nm->from,
                        nm->to, (long long)(*last - *first));
  if (wf == wt && *first == 0 && a->offset == 0) {
    *out = qv_buffer_ref(a->buffers[1]);
    return QV_OK;
  }
  QV_RETURN_NOT_OK(qv_buffer_alloc((n + 1) * wt, out, err));
  for (int64_t i = 0; i <= n; i++) {
    int64_t v = n == 0 ? *first : qv_load_int(p, wf, false, a->offset + i);
    qvk_store_int((*out)->data, wt, i, v - *first);
  }
  return QV_OK;
}

static qv_status cast_binary(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  cast_names nm;
  names_of(a->type, to, &nm);
  int32_t wt = qvk_is_large(to->id) ? 8 : 4;
  qv_array *r = qv_array_new(to, 3, 0);
  if (r == NULL) return oom(err);
  *out = r; /* in the caller's context at once: a fault below frees it there */
  r->length = a->length;
  int64_t first = 0, last = 0;
  qv_status st = validity_at_zero(a, &r->buffers[0], err);
  r->null_count = r->buffers[0] ? qv_array_null_count(a) : 0;
  if (st == QV_OK) st = rebase_offsets(a, wt, &r->buffers[1], &first, &last, &nm, err);
  if (st == QV_OK) {
    if (first == 0 && last == a->buffers[2]->size) r->buffers[2] = qv_buffer_ref(a->buffers[2]);
    else st = qv_buffer_view(a->buffers[2], first, last - first, &r->buffers[2], err);
  }
  bool to_string = to->id == QV_STRING || to->id == QV_LARGE_STRING;
  bool from_string = a->type->id == QV_STRING || a->type->id == QV_LARGE_STRING;
  if (st == QV_OK && to_string && !from_string) {
    char path[300];
    snprintf(path, sizeof path, "cast from %s to %s", nm.from, nm.to);
    st = qv_array_validate(r, QV_VALIDATE_FULL, path, err);
  }
  if (st != QV_OK) {
    qv_array_unref(r);
    *out = NULL;
    return st;
  }
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Nested                                                                    */

static qv_status cast_list(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  cast_names nm;
  names_of(a->type, to, &nm);
  int32_t wt = qvk_is_large(to->id) ? 8 : 4;
  qv_array *r = qv_array_new(to, 2, 1);
  if (r == NULL) return oom(err);
  r->length = a->length;
  int64_t first = 0, last = 0;
  qv_array *child = NULL;
  qv_status st = validity_at_zero(a, &r->buffers[0], err);
  r->null_count = r->buffers[0] ? qv_array_null_count(a) : 0;
  if (st == QV_OK) st = rebase_offsets(a, wt, &r->buffers[1], &first, &last, &nm, err);
  if (st == QV_OK) st = qv_array_slice(a->children[0], first, last - first, &child, err);
  if (st == QV_OK) st = cast_impl(child, to->children[0].type, &r->children[0], err);
  qv_array_unref(child);
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  *out = r;
  return QV_OK;
}

static qv_status cast_fsl(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  int32_t size = a->type->list_size;
  qv_array *r = qv_array_new(to, 1, 1);
  if (r == NULL) return oom(err);
  r->length = a->length;
  qv_array *child = NULL;
  qv_status st = validity_at_zero(a, &r->buffers[0], err);
  r->null_count = r->buffers[0] ? qv_array_null_count(a) : 0;
  if (st == QV_OK)
    st = qv_array_slice(a->children[0], a->offset * size, a->length * size, &child, err);
  if (st == QV_OK) st = cast_impl(child, to->children[0].type, &r->children[0], err);
  qv_array_unref(child);
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  *out = r;
  return QV_OK;
}

static qv_status cast_struct(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  qv_array *r = qv_array_new(to, 1, to->n_children);
  if (r == NULL) return oom(err);
  r->length = a->length;
  qv_status st = validity_at_zero(a, &r->buffers[0], err);
  r->null_count = r->buffers[0] ? qv_array_null_count(a) : 0;
  for (int32_t k = 0; k < to->n_children && st == QV_OK; k++) {
    qv_array *child = NULL;
    st = qv_array_slice(a->children[k], a->offset, a->length, &child, err);
    if (st == QV_OK) st = cast_impl(child, to->children[k].type, &r->children[k], err);
    if (st != QV_OK) qv_error_prefix(err, st, "field '%s': ", to->children[k].name);
    qv_array_unref(child);
  }
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  *out = r;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Dictionaries                                                              */

/* Decode a dictionary array into its value type. */
static qv_status dict_decode(qv_array *a, qv_array **out, qv_error *err) {
  qv_type *vt = a->type->value_type;
  int64_t n = a->length, nulls = qv_array_null_count(a);
  if (a->dictionary == NULL || a->dictionary->length == 0 || nulls == n)
    return qv_array_nulls(vt, n, out, err);
  int64_t *idx = malloc(sizeof *idx * (size_t)(n > 0 ? n : 1));
  if (idx == NULL) return oom(err);
  const qv_type *it = a->type->index_type;
  int32_t w = qv_type_bit_width(it) / 8;
  bool is_unsigned = !qv_type_id_is_signed_integer(it->id);
  for (int64_t i = 0; i < n; i++)
    idx[i] = valid_at(a, i) ? qv_load_int(a->buffers[1]->data, w, is_unsigned, a->offset + i) : 0;
  qv_array *taken = NULL;
  qv_status st = qv_array_take(a->dictionary, idx, n, &taken, err);
  free(idx);
  if (st != QV_OK) return st;
  if (nulls == 0) {
    *out = taken;
    return QV_OK;
  }
  if (!qvk_has_validity_slot(vt->id) || vt->id == QV_NA) {
    qv_array_unref(taken);
    return qv_error_set(err, QV_ENOTSUP,
                        "cast: decoding a dictionary of %s with null indices is not supported",
                        qv_type_id_name(vt->id));
  }
  /* Null indices: AND the indices' validity into the gathered values'. */
  qv_array *r = shell_copy(taken, taken->type);
  qv_buffer *bits = NULL;
  st = r == NULL ? oom(err) : qv_buffer_alloc((n + 7) / 8, &bits, err);
  if (st == QV_OK)
    for (int64_t i = 0; i < n; i++)
      if (valid_at(a, i) && valid_at(taken, i)) qv_bit_set(bits->data, i);
  qv_array_unref(taken);
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  qv_buffer_unref(r->buffers[0]);
  r->buffers[0] = bits;
  r->null_count = -1;
  *out = r;
  return QV_OK;
}

static qv_status cast_dict_to_dict(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  qv_array *indices = qv_array_new(a->type->index_type, 2, 0);
  if (indices == NULL) return oom(err);
  indices->length = a->length;
  indices->offset = a->offset;
  indices->null_count = a->null_count;
  indices->buffers[0] = qv_buffer_ref(a->buffers[0]);
  indices->buffers[1] = qv_buffer_ref(a->buffers[1]);
  qv_array *ci = NULL, *cd = NULL;
  qv_status st = cast_impl(indices, to->index_type, &ci, err);
  qv_array_unref(indices);
  if (st == QV_OK && a->dictionary != NULL) st = cast_impl(a->dictionary, to->value_type, &cd, err);
  if (st == QV_OK && a->dictionary == NULL) st = qv_array_nulls(to->value_type, 0, &cd, err);
  if (st != QV_OK) {
    qv_array_unref(ci);
    qv_array_unref(cd);
    return st;
  }
  qv_array *r = qv_array_new(to, 2, 0);
  if (r == NULL) {
    qv_array_unref(ci);
    qv_array_unref(cd);
    return oom(err);
  }
  r->length = ci->length;
  r->offset = ci->offset;
  r->null_count = ci->null_count;
  r->buffers[0] = qv_buffer_ref(ci->buffers[0]);
  r->buffers[1] = qv_buffer_ref(ci->buffers[1]);
  r->dictionary = cd;
  qv_array_unref(ci);
  *out = r;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */

static qv_status cast_impl(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  qv_type_id f = a->type->id, t = to->id;
  if (qv_type_equals(a->type, to, false)) return retype(a, to, out, err);
  if (f == QV_NA) return qv_array_nulls(to, a->length, out, err);
  if (f == QV_DICTIONARY) {
    if (t == QV_DICTIONARY) return cast_dict_to_dict(a, to, out, err);
    qv_array *dec = NULL;
    QV_RETURN_NOT_OK(dict_decode(a, &dec, err));
    qv_status st = cast_impl(dec, to, out, err);
    qv_array_unref(dec);
    return st;
  }
  if (is_numeric(f) && is_numeric(t)) return cast_numeric(a, to, out, err);
  if (is_temporal(f) && is_temporal(t)) return cast_temporal(a, to, out, err);
  if ((is_temporal(f) && qv_type_id_is_signed_integer(t)) ||
      (is_temporal(t) && qv_type_id_is_signed_integer(f))) {
    if (qv_type_bit_width(a->type) != qv_type_bit_width(to)) return unsupported(a->type, to, err);
    return retype(a, to, out, err);
  }
  if (is_binary_like(f) && is_binary_like(t)) return cast_binary(a, to, out, err);
  if ((f == QV_LIST || f == QV_LARGE_LIST) && (t == QV_LIST || t == QV_LARGE_LIST))
    return cast_list(a, to, out, err);
  if (f == QV_FIXED_SIZE_LIST && t == QV_FIXED_SIZE_LIST && a->type->list_size == to->list_size)
    return cast_fsl(a, to, out, err);
  if (f == QV_STRUCT && t == QV_STRUCT && a->type->n_children == to->n_children)
    return cast_struct(a, to, out, err);
  return unsupported(a->type, to, err);
}

/* cast_impl under the mapped-read guard (guard.c), after the input's
 * mapped buffers are checked. */
typedef struct cast_call {
  qv_array *a;
  qv_type *to;
  qv_array *out;
} cast_call;

static qv_status cast_body(void *ctx, qv_error *err) {
  cast_call *c = ctx;
  return cast_impl(c->a, c->to, &c->out, err);
}

qv_status qv_array_cast(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  if (a == NULL || to == NULL)
    return qv_error_set(err, QV_EARG, "cast: needs an array and a target type");
  cast_call c = {a, to, NULL};
  const qv_array *in = a;
  qv_status st = qv_guard_run_checked(&in, 1, cast_body, &c, err);
  if (st != QV_OK) {
    qv_array_unref(c.out);
    return st;
  }
  *out = c.out;
  return QV_OK;
}
