/*
 * json_write.c — writing Arrow's integration-test JSON format: a schema and
 * record batches (any offset or slice honoured) rendered into a heap buffer,
 * and files written atomically (core/atomic_internal.h), optionally
 * gzip-compressed. ipc layer; the reader is json.c. Dictionaries are taken
 * from the arrays (one per id; see quiver/integration.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/atomic_internal.h"
#include "core/numeric_internal.h"
#include "ipc/json_internal.h"
#include "quiver/integration.h"

/* ======================================================================== */
/* Writing                                                                   */
/* ======================================================================== */

#define W_MAX_DEPTH 128

typedef struct writer {
  qv_buffer *out;
  qv_error *err;
  qv_status st;
  int depth;
  bool after_key;
  bool first[W_MAX_DEPTH];
  bool inl[W_MAX_DEPTH];
  char tmp[4096];
  int tmp_len;
} writer;

static void w_flush(writer *w) {
  if (w->tmp_len > 0 && w->st == QV_OK)
    w->st = qv_buffer_append(w->out, w->tmp, w->tmp_len, w->err);
  w->tmp_len = 0;
}

static void w_raw(writer *w, const char *s, size_t n) {
  if (n > sizeof w->tmp / 2) {
    w_flush(w);
    if (w->st == QV_OK) w->st = qv_buffer_append(w->out, s, (int64_t)n, w->err);
    return;
  }
  if (w->tmp_len + (int)n > (int)sizeof w->tmp) w_flush(w);
  memcpy(w->tmp + w->tmp_len, s, n);
  w->tmp_len += (int)n;
}

static void w_lit(writer *w, const char *s) { w_raw(w, s, strlen(s)); }

static void w_fmt(writer *w, const char *fmt, ...) QV_PRINTF(2, 3);
static void w_fmt(writer *w, const char *fmt, ...) {
  char b[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  if (n > 0) w_raw(w, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

static void w_newline(writer *w, int depth) {
  static const char spaces[] = "                                                                ";
  w_raw(w, "\n", 1);
  int n = 2 * depth;
  while (n > 0) {
    int k = n > 64 ? 64 : n;
    w_raw(w, spaces, (size_t)k);
    n -= k;
  }
}

/* Separator before a value or key in the current container. */
static void w_prefix(writer *w) {
  if (w->after_key) {
    w->after_key = false;
    return;
  }
  if (w->depth == 0) return;
  bool first = w->first[w->depth];
  if (!first) w_raw(w, ",", 1);
  if (w->inl[w->depth]) {
    if (!first) w_raw(w, " ", 1);
  } else {
    w_newline(w, w->depth);
  }
  w->first[w->depth] = false;
}

static void w_begin(writer *w, char open, bool inline_) {
  w_prefix(w);
  w_raw(w, &open, 1);
  if (w->depth + 1 >= W_MAX_DEPTH) {
    if (w->st == QV_OK) w->st = qv_error_set(w->err, QV_ENOTSUP, "JSON nesting too deep");
    return;
  }
  w->depth++;
  w->first[w->depth] = true;
  w->inl[w->depth] = inline_ || w->inl[w->depth - 1];
}

static void w_end(writer *w, char close) {
  if (w->depth == 0) return;
  if (!w->inl[w->depth] && !w->first[w->depth]) w_newline(w, w->depth - 1);
  w->depth--;
  w_raw(w, &close, 1);
}

static void w_string(writer *w, const char *s, size_t n) {
  w_prefix(w);
  w_raw(w, "\"", 1);
  size_t start = 0;
  for (size_t k = 0; k < n; k++) {
    unsigned char c = (unsigned char)s[k];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    w_raw(w, s + start, k - start);
    start = k + 1;
    switch (c) {
      case '"': w_raw(w, "\\\"", 2); break;
      case '\\': w_raw(w, "\\\\", 2); break;
      case '\n': w_raw(w, "\\n", 2); break;
      case '\t': w_raw(w, "\\t", 2); break;
      case '\r': w_raw(w, "\\r", 2); break;
      default: w_fmt(w, "\\u%04x", c); break;
    }
  }
  w_raw(w, s + start, n - start);
  w_raw(w, "\"", 1);
}

static void w_str(writer *w, const char *s) { w_string(w, s, strlen(s)); }

static void w_key(writer *w, const char *k) {
  w_str(w, k);
  w_raw(w, ": ", 2);
  w->after_key = true;
}

static void w_int(writer *w, int64_t v) {
  w_prefix(w);
  w_fmt(w, "%" PRId64, v);
}

/* 64-bit integers are written as strings. */
static void w_int_str(writer *w, int64_t v) {
  char b[32];
  int n = snprintf(b, sizeof b, "%" PRId64, v);
  w_string(w, b, (size_t)n);
}

static void w_bool(writer *w, bool v) {
  w_prefix(w);
  w_lit(w, v ? "true" : "false");
}

static void w_hex(writer *w, const uint8_t *p, int64_t n) {
  static const char digits[] = "0123456789ABCDEF";
  w_prefix(w);
  w_raw(w, "\"", 1);
  char b[256];
  int bl = 0;
  for (int64_t k = 0; k < n; k++) {
    b[bl++] = digits[p[k] >> 4];
    b[bl++] = digits[p[k] & 15];
    if (bl == (int)sizeof b) {
      w_raw(w, b, (size_t)bl);
      bl = 0;
    }
  }
  w_raw(w, b, (size_t)bl);
  w_raw(w, "\"", 1);
}

static void w_double(writer *w, double v, bool single) {
  char b[32];
  int n = qv_num_format_double(v, single, b);
  if (isnan(v) || isinf(v)) {
    w_string(w, b, (size_t)n);
    return;
  }
  /* "-0" would read back as the JSON integer 0: keep a fraction part. */
  if (strpbrk(b, ".eE") == NULL && n + 2 < (int)sizeof b) {
    memcpy(b + n, ".0", 3);
    n += 2;
  }
  w_prefix(w);
  w_raw(w, b, (size_t)n);
}

/* ---- schema ---- */

static const char *unit_json(qv_time_unit u) {
  switch (u) {
    case QV_SECOND: return "SECOND";
    case QV_MILLI: return "MILLISECOND";
    case QV_MICRO: return "MICROSECOND";
    default: return "NANOSECOND";
  }
}

static void w_int_type(writer *w, qv_type_id id) {
  int bw = id == QV_INT8 || id == QV_UINT8     ? 8
           : id == QV_INT16 || id == QV_UINT16 ? 16
           : id == QV_INT32 || id == QV_UINT32 ? 32
                                               : 64;
  w_key(w, "name");
  w_str(w, "int");
  w_key(w, "bitWidth");
  w_int(w, bw);
  w_key(w, "isSigned");
  w_bool(w, qv_type_id_is_signed_integer(id));
}

static void w_type(writer *w, const qv_type *t) {
  w_begin(w, '{', true);
  switch (t->id) {
    case QV_NA:
      w_key(w, "name");
      w_str(w, "null");
      break;
    case QV_BOOL:
      w_key(w, "name");
      w_str(w, "bool");
      break;
    case QV_INT8:
    case QV_UINT8:
    case QV_INT16:
    case QV_UINT16:
    case QV_INT32:
    case QV_UINT32:
    case QV_INT64:
    case QV_UINT64: w_int_type(w, t->id); break;
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE:
      w_key(w, "name");
      w_str(w, "floatingpoint");
      w_key(w, "precision");
      w_str(w, t->id == QV_HALF_FLOAT ? "HALF" : t->id == QV_FLOAT ? "SINGLE" : "DOUBLE");
      break;
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256:
      w_key(w, "name");
      w_str(w, "decimal");
      w_key(w, "precision");
      w_int(w, t->precision);
      w_key(w, "scale");
      w_int(w, t->scale);
      w_key(w, "bitWidth");
      w_int(w, value_width(t) * 8);
      break;
    case QV_DATE32:
    case QV_DATE64:
      w_key(w, "name");
      w_str(w, "date");
      w_key(w, "unit");
      w_str(w, t->id == QV_DATE32 ? "DAY" : "MILLISECOND");
      break;
    case QV_TIME32:
    case QV_TIME64:
      w_key(w, "name");
      w_str(w, "time");
      w_key(w, "unit");
      w_str(w, unit_json(t->unit));
      w_key(w, "bitWidth");
      w_int(w, t->id == QV_TIME32 ? 32 : 64);
      break;
    case QV_TIMESTAMP:
      w_key(w, "name");
      w_str(w, "timestamp");
      w_key(w, "unit");
      w_str(w, unit_json(t->unit));
      if (t->timezone != NULL) {
        w_key(w, "timezone");
        w_str(w, t->timezone);
      }
      break;
    case QV_DURATION:
      w_key(w, "name");
      w_str(w, "duration");
      w_key(w, "unit");
      w_str(w, unit_json(t->unit));
      break;
    case QV_INTERVAL_MONTHS:
    case QV_INTERVAL_DAY_TIME:
    case QV_INTERVAL_MONTH_DAY_NANO:
      w_key(w, "name");
      w_str(w, "interval");
      w_key(w, "unit");
      w_str(w, t->id == QV_INTERVAL_MONTHS     ? "YEAR_MONTH"
               : t->id == QV_INTERVAL_DAY_TIME ? "DAY_TIME"
                                               : "MONTH_DAY_NANO");
      break;
    case QV_BINARY:
      w_key(w, "name");
      w_str(w, "binary");
      break;
    case QV_STRING:
      w_key(w, "name");
      w_str(w, "utf8");
      break;
    case QV_LARGE_BINARY:
      w_key(w, "name");
      w_str(w, "largebinary");
      break;
    case QV_LARGE_STRING:
      w_key(w, "name");
      w_str(w, "largeutf8");
      break;
    case QV_BINARY_VIEW:
      w_key(w, "name");
      w_str(w, "binaryview");
      break;
    case QV_STRING_VIEW:
      w_key(w, "name");
      w_str(w, "utf8view");
      break;
    case QV_FIXED_SIZE_BINARY:
      w_key(w, "name");
      w_str(w, "fixedsizebinary");
      w_key(w, "byteWidth");
      w_int(w, t->byte_width);
      break;
    case QV_LIST:
      w_key(w, "name");
      w_str(w, "list");
      break;
    case QV_LARGE_LIST:
      w_key(w, "name");
      w_str(w, "largelist");
      break;
    case QV_LIST_VIEW:
      w_key(w, "name");
      w_str(w, "listview");
      break;
    case QV_LARGE_LIST_VIEW:
      w_key(w, "name");
      w_str(w, "largelistview");
      break;
    case QV_FIXED_SIZE_LIST:
      w_key(w, "name");
      w_str(w, "fixedsizelist");
      w_key(w, "listSize");
      w_int(w, t->list_size);
      break;
    case QV_STRUCT:
      w_key(w, "name");
      w_str(w, "struct");
      break;
    case QV_MAP:
      w_key(w, "name");
      w_str(w, "map");
      w_key(w, "keysSorted");
      w_bool(w, t->keys_sorted);
      break;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION:
      w_key(w, "name");
      w_str(w, "union");
      w_key(w, "mode");
      w_str(w, t->id == QV_SPARSE_UNION ? "SPARSE" : "DENSE");
      w_key(w, "typeIds");
      w_begin(w, '[', true);
      for (int32_t k = 0; k < t->n_children; k++) w_int(w, t->type_codes[k]);
      w_end(w, ']');
      break;
    case QV_RUN_END_ENCODED:
      w_key(w, "name");
      w_str(w, "runendencoded");
      break;
    default:
      if (w->st == QV_OK)
        w->st =
            qv_error_set(w->err, QV_ENOTSUP, "JSON: cannot write type %s", qv_type_id_name(t->id));
      break;
  }
  w_end(w, '}');
}

static void w_metadata(writer *w, const qv_metadata *md) {
  if (md->n == 0) return;
  w_key(w, "metadata");
  w_begin(w, '[', false);
  for (int64_t k = 0; k < md->n; k++) {
    w_begin(w, '{', true);
    w_key(w, "key");
    w_string(w, md->kv[k].key, (size_t)md->kv[k].key_len);
    w_key(w, "value");
    w_string(w, md->kv[k].value, (size_t)md->kv[k].value_len);
    w_end(w, '}');
  }
  w_end(w, ']');
}

static void w_field(writer *w, const qv_field *f) {
  const qv_type *t = f->type;
  const qv_type *vt = t->id == QV_DICTIONARY ? t->value_type : t;
  w_begin(w, '{', false);
  w_key(w, "name");
  w_str(w, f->name);
  w_key(w, "nullable");
  w_bool(w, f->nullable);
  w_key(w, "type");
  w_type(w, vt);
  w_key(w, "children");
  w_begin(w, '[', false);
  for (int32_t k = 0; k < vt->n_children; k++) w_field(w, &vt->children[k]);
  w_end(w, ']');
  if (t->id == QV_DICTIONARY) {
    w_key(w, "dictionary");
    w_begin(w, '{', true);
    w_key(w, "id");
    w_int(w, t->dict_id);
    w_key(w, "indexType");
    w_begin(w, '{', true);
    w_int_type(w, t->index_type->id);
    w_end(w, '}');
    w_key(w, "isOrdered");
    w_bool(w, t->ordered);
    w_end(w, '}');
  }
  w_metadata(w, &f->metadata);
  w_end(w, '}');
}

/* ---- data ---- */

static bool arr_valid(const qv_array *a, int64_t i) {
  return a->n_buffers == 0 || a->buffers[0] == NULL ||
         qv_bit_get(a->buffers[0]->data, a->offset + i);
}

static int64_t arr_off(const qv_array *a, int width, int64_t i) {
  return load_off(a->buffers[1], width, a->offset + i);
}

/* The integer at p of an integer or temporal type (date32, time32 and
 * interval[months] are int32; the other temporal types int64). */
static int64_t int_value(const qv_type *t, const uint8_t *p) {
  int32_t bytes = qv_int_type_bytes(t->id);
  bool is_unsigned = t->id == QV_UINT8 || t->id == QV_UINT16 || t->id == QV_UINT32;
  if (bytes == 0)
    bytes = t->id == QV_DATE32 || t->id == QV_TIME32 || t->id == QV_INTERVAL_MONTHS ? 4 : 8;
  return qv_load_int(p, bytes, is_unsigned, 0);
}

static void w_fixed_value(writer *w, const qv_type *t, const uint8_t *p) {
  switch (t->id) {
    case QV_INT8:
    case QV_UINT8:
    case QV_INT16:
    case QV_UINT16:
    case QV_INT32:
    case QV_UINT32:
    case QV_DATE32:
    case QV_TIME32:
    case QV_INTERVAL_MONTHS: w_int(w, int_value(t, p)); return;
    case QV_UINT64: {
      uint64_t v;
      char b[32];
      memcpy(&v, p, 8);
      int n = snprintf(b, sizeof b, "%" PRIu64, v);
      w_string(w, b, (size_t)n);
      return;
    }
    case QV_INT64:
    case QV_DATE64:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DURATION: w_int_str(w, int_value(t, p)); return;
    case QV_HALF_FLOAT: {
      uint16_t h;
      memcpy(&h, p, 2);
      w_double(w, qv_half_to_double(h), false);
      return;
    }
    case QV_FLOAT: {
      float f;
      memcpy(&f, p, 4);
      w_double(w, f, true);
      return;
    }
    case QV_DOUBLE: {
      double d;
      memcpy(&d, p, 8);
      w_double(w, d, false);
      return;
    }
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256: {
      char b[QV_DECIMAL_STRING_MAX];
      int n = qv_decimal_to_string(p, (int)value_width(t), 0, b);
      w_string(w, b, (size_t)n);
      return;
    }
    case QV_INTERVAL_DAY_TIME: {
      int32_t d[2];
      memcpy(d, p, 8);
      w_begin(w, '{', true);
      w_key(w, "days");
      w_int(w, d[0]);
      w_key(w, "milliseconds");
      w_int(w, d[1]);
      w_end(w, '}');
      return;
    }
    case QV_INTERVAL_MONTH_DAY_NANO: {
      int32_t md[2];
      int64_t ns;
      memcpy(md, p, 8);
      memcpy(&ns, p + 8, 8);
      w_begin(w, '{', true);
      w_key(w, "months");
      w_int(w, md[0]);
      w_key(w, "days");
      w_int(w, md[1]);
      w_key(w, "nanoseconds");
      w_int(w, ns);
      w_end(w, '}');
      return;
    }
    default: /* FIXED_SIZE_BINARY */ w_hex(w, p, t->byte_width); return;
  }
}

static void w_validity(writer *w, const qv_array *a, int64_t i0, int64_t n) {
  w_key(w, "VALIDITY");
  w_begin(w, '[', true);
  for (int64_t k = 0; k < n; k++) w_int(w, arr_valid(a, i0 + k) ? 1 : 0);
  w_end(w, ']');
}

/* An offsets-like array written as 32-bit numbers or 64-bit strings. */
static void w_offsets(writer *w, const char *key, const qv_buffer *b, int width, int64_t first,
                      int64_t n, int64_t base) {
  w_key(w, key);
  w_begin(w, '[', true);
  for (int64_t k = 0; k < n; k++) {
    int64_t v = load_off(b, width, first + k) - base;
    if (width == 8) w_int_str(w, v);
    else w_int(w, v);
  }
  w_end(w, ']');
}

static void w_column(writer *w, const char *name, const qv_array *a, int64_t i0, int64_t n);

static void w_children_open(writer *w) {
  w_key(w, "children");
  w_begin(w, '[', false);
}

static int64_t ree_run_at(const qv_array *a, int64_t pos) {
  const qv_array *re = a->children[0];
  int64_t lo = 0, hi = re->length;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int64_t e =
        int_value(re->type, re->buffers[1]->data + (re->offset + mid) * value_width(re->type));
    if (e > pos) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Run-end encoded: the logical runs covering [i0, i0+n), run ends made
 * relative to i0 (as Arrow C++'s LogicalRunEnds). */
static void w_ree(writer *w, const qv_array *a, int64_t i0, int64_t n) {
  const qv_type *t = a->type;
  const qv_array *re = a->children[0];
  int64_t pos = a->offset + i0;
  int64_t r0 = 0, r1 = -1;
  if (n > 0) {
    r0 = ree_run_at(a, pos);
    r1 = ree_run_at(a, pos + n - 1);
    if (r1 >= re->length) r1 = re->length - 1;
  }
  int64_t runs = r1 - r0 + 1;
  int64_t rw = value_width(re->type);
  w_children_open(w);
  /* run_ends */
  w_begin(w, '{', false);
  w_key(w, "name");
  w_str(w, t->children[0].name);
  w_key(w, "count");
  w_int(w, runs);
  w_key(w, "VALIDITY");
  w_begin(w, '[', true);
  for (int64_t k = 0; k < runs; k++) w_int(w, 1);
  w_end(w, ']');
  w_key(w, "DATA");
  w_begin(w, '[', true);
  for (int64_t k = 0; k < runs; k++) {
    int64_t e = int_value(re->type, re->buffers[1]->data + (re->offset + r0 + k) * rw) - pos;
    if (e > n) e = n;
    if (rw == 8) w_int_str(w, e);
    else w_int(w, e);
  }
  w_end(w, ']');
  w_end(w, '}');
  w_column(w, t->children[1].name, a->children[1], r0, runs);
  w_end(w, ']');
}

static void w_column_body(writer *w, const qv_array *a, int64_t i0, int64_t n) {
  const qv_type *t = a->type;
  int64_t p0 = a->offset + i0;
  switch (t->id) {
    case QV_NA: return;
    case QV_BOOL:
      w_validity(w, a, i0, n);
      w_key(w, "DATA");
      w_begin(w, '[', true);
      for (int64_t k = 0; k < n; k++) w_bool(w, qv_bit_get(a->buffers[1]->data, p0 + k));
      w_end(w, ']');
      return;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int width = (t->id == QV_LARGE_BINARY || t->id == QV_LARGE_STRING) ? 8 : 4;
      bool text = t->id == QV_STRING || t->id == QV_LARGE_STRING;
      int64_t base = arr_off(a, width, i0);
      w_validity(w, a, i0, n);
      w_offsets(w, "OFFSET", a->buffers[1], width, p0, n + 1, base);
      w_key(w, "DATA");
      w_begin(w, '[', true);
      for (int64_t k = 0; k < n; k++) {
        int64_t s = arr_off(a, width, i0 + k), e = arr_off(a, width, i0 + k + 1);
        const uint8_t *d = a->buffers[2] ? a->buffers[2]->data + s : (const uint8_t *)"";
        if (text) w_string(w, (const char *)d, (size_t)(e - s));
        else w_hex(w, d, e - s);
      }
      w_end(w, ']');
      return;
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: {
      bool text = t->id == QV_STRING_VIEW;
      w_validity(w, a, i0, n);
      w_key(w, "VIEWS");
      w_begin(w, '[', false);
      for (int64_t k = 0; k < n; k++) {
        const uint8_t *v = a->buffers[1]->data + (p0 + k) * QV_VIEW_SIZE;
        int32_t size;
        memcpy(&size, v, 4);
        if (!arr_valid(a, i0 + k)) size = 0;
        w_begin(w, '{', true);
        w_key(w, "SIZE");
        w_int(w, size);
        if (size <= QV_VIEW_INLINE_MAX) {
          w_key(w, "INLINED");
          if (text) w_string(w, (const char *)v + 4, (size_t)size);
          else w_hex(w, v + 4, size);
        } else {
          int32_t bi, off;
          memcpy(&bi, v + 8, 4);
          memcpy(&off, v + 12, 4);
          w_key(w, "PREFIX_HEX");
          w_hex(w, v + 4, QV_VIEW_PREFIX_SIZE);
          w_key(w, "BUFFER_INDEX");
          w_int(w, bi);
          w_key(w, "OFFSET");
          w_int(w, off);
        }
        w_end(w, '}');
      }
      w_end(w, ']');
      w_key(w, "VARIADIC_DATA_BUFFERS");
      w_begin(w, '[', false);
      for (int32_t b = 2; b < a->n_buffers; b++) {
        if (a->buffers[b]) w_hex(w, a->buffers[b]->data, a->buffers[b]->size);
        else w_hex(w, NULL, 0);
      }
      w_end(w, ']');
      return;
    }
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: {
      int width = t->id == QV_LARGE_LIST ? 8 : 4;
      int64_t s = arr_off(a, width, i0), e = arr_off(a, width, i0 + n);
      w_validity(w, a, i0, n);
      w_offsets(w, "OFFSET", a->buffers[1], width, p0, n + 1, s);
      w_children_open(w);
      w_column(w, t->children[0].name, a->children[0], s, e - s);
      w_end(w, ']');
      return;
    }
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: {
      int width = t->id == QV_LARGE_LIST_VIEW ? 8 : 4;
      w_validity(w, a, i0, n);
      w_offsets(w, "OFFSET", a->buffers[1], width, p0, n, 0);
      w_offsets(w, "SIZE", a->buffers[2], width, p0, n, 0);
      w_children_open(w);
      w_column(w, t->children[0].name, a->children[0], 0, a->children[0]->length);
      w_end(w, ']');
      return;
    }
    case QV_FIXED_SIZE_LIST:
      w_validity(w, a, i0, n);
      w_children_open(w);
      w_column(w, t->children[0].name, a->children[0], p0 * t->list_size, n * t->list_size);
      w_end(w, ']');
      return;
    case QV_STRUCT:
      w_validity(w, a, i0, n);
      if (t->n_children == 0) return;
      w_children_open(w);
      for (int32_t k = 0; k < t->n_children; k++)
        w_column(w, t->children[k].name, a->children[k], p0, n);
      w_end(w, ']');
      return;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      bool dense = t->id == QV_DENSE_UNION;
      w_key(w, "TYPE_ID");
      w_begin(w, '[', true);
      for (int64_t k = 0; k < n; k++) w_int(w, (int8_t)a->buffers[0]->data[p0 + k]);
      w_end(w, ']');
      if (dense) w_offsets(w, "OFFSET", a->buffers[1], 4, p0, n, 0);
      if (t->n_children == 0) return;
      w_children_open(w);
      for (int32_t k = 0; k < t->n_children; k++) {
        if (dense) w_column(w, t->children[k].name, a->children[k], 0, a->children[k]->length);
        else w_column(w, t->children[k].name, a->children[k], p0, n);
      }
      w_end(w, ']');
      return;
    }
    case QV_RUN_END_ENCODED: w_ree(w, a, i0, n); return;
    case QV_DICTIONARY: {
      const qv_type *it = t->index_type;
      int64_t iw = value_width(it);
      w_validity(w, a, i0, n);
      w_key(w, "DATA");
      w_begin(w, '[', true);
      for (int64_t k = 0; k < n; k++) w_fixed_value(w, it, a->buffers[1]->data + (p0 + k) * iw);
      w_end(w, ']');
      return;
    }
    default: {
      int64_t vw = value_width(t);
      w_validity(w, a, i0, n);
      w_key(w, "DATA");
      w_begin(w, '[', t->id != QV_INTERVAL_DAY_TIME && t->id != QV_INTERVAL_MONTH_DAY_NANO);
      for (int64_t k = 0; k < n; k++) w_fixed_value(w, t, a->buffers[1]->data + (p0 + k) * vw);
      w_end(w, ']');
      return;
    }
  }
}

/* FieldData for elements [i0, i0+n) of `a` (logical indices). */
static void w_column(writer *w, const char *name, const qv_array *a, int64_t i0, int64_t n) {
  w_begin(w, '{', false);
  w_key(w, "name");
  w_str(w, name);
  w_key(w, "count");
  w_int(w, n);
  w_column_body(w, a, i0, n);
  w_end(w, '}');
}

/* An empty column of type t (dictionaries of files without batches). */
static void w_empty_column(writer *w, const char *name, const qv_type *t) {
  w_begin(w, '{', false);
  w_key(w, "name");
  w_str(w, name);
  w_key(w, "count");
  w_int(w, 0);
  if (has_validity(t->id)) {
    w_key(w, "VALIDITY");
    w_begin(w, '[', true);
    w_end(w, ']');
  }
  switch (t->id) {
    case QV_NA:
    case QV_RUN_END_ENCODED:
    case QV_STRUCT:
    case QV_FIXED_SIZE_LIST: break;
    case QV_BINARY:
    case QV_STRING:
    case QV_LIST:
    case QV_MAP:
      w_key(w, "OFFSET");
      w_begin(w, '[', true);
      w_int(w, 0);
      w_end(w, ']');
      break;
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_LARGE_LIST:
      w_key(w, "OFFSET");
      w_begin(w, '[', true);
      w_int_str(w, 0);
      w_end(w, ']');
      break;
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
      w_key(w, "OFFSET");
      w_begin(w, '[', true);
      w_end(w, ']');
      w_key(w, "SIZE");
      w_begin(w, '[', true);
      w_end(w, ']');
      break;
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
      w_key(w, "VIEWS");
      w_begin(w, '[', true);
      w_end(w, ']');
      w_key(w, "VARIADIC_DATA_BUFFERS");
      w_begin(w, '[', true);
      w_end(w, ']');
      break;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION:
      w_key(w, "TYPE_ID");
      w_begin(w, '[', true);
      w_end(w, ']');
      if (t->id == QV_DENSE_UNION) {
        w_key(w, "OFFSET");
        w_begin(w, '[', true);
        w_end(w, ']');
      }
      break;
    default:
      w_key(w, "DATA");
      w_begin(w, '[', true);
      w_end(w, ']');
      break;
  }
  if (t->id == QV_BINARY || t->id == QV_STRING || t->id == QV_LARGE_BINARY ||
      t->id == QV_LARGE_STRING) {
    w_key(w, "DATA");
    w_begin(w, '[', true);
    w_end(w, ']');
  }
  const qv_type *ct = t->id == QV_DICTIONARY ? NULL : t;
  if (ct != NULL && ct->n_children > 0) {
    w_children_open(w);
    for (int32_t k = 0; k < ct->n_children; k++)
      w_empty_column(w, ct->children[k].name, ct->children[k].type);
    w_end(w, ']');
  }
  w_end(w, '}');
}

/* ---- dictionaries found on the arrays ---- */

typedef struct dict_found {
  int64_t id;
  const qv_type *value_type;
  qv_array *chosen; /* borrowed: dictionary of the last batch seen */
  qv_array **all;   /* borrowed: every distinct dictionary seen */
  int64_t n_all;
} dict_found;

typedef struct dict_set {
  dict_found *d;
  int64_t n;
} dict_set;

static qv_status note_dicts_in_type(dict_set *ds, const qv_type *t, qv_error *err) {
  if (t->id == QV_DICTIONARY) {
    bool seen = false;
    for (int64_t k = 0; k < ds->n; k++) seen |= ds->d[k].id == t->dict_id;
    if (!seen) {
      dict_found *g = realloc(ds->d, sizeof *g * (size_t)(ds->n + 1));
      if (g == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
      ds->d = g;
      memset(&ds->d[ds->n], 0, sizeof ds->d[ds->n]);
      ds->d[ds->n].id = t->dict_id;
      ds->d[ds->n].value_type = t->value_type;
      ds->n++;
    }
    return note_dicts_in_type(ds, t->value_type, err);
  }
  for (int32_t k = 0; k < t->n_children; k++)
    QV_RETURN_NOT_OK(note_dicts_in_type(ds, t->children[k].type, err));
  return QV_OK;
}

static qv_status note_dicts_in_array(dict_set *ds, qv_array *a, int depth, qv_error *err) {
  if (depth > W_MAX_DEPTH) return qv_error_set(err, QV_ENOTSUP, "arrays nest too deep");
  if (a->type->id == QV_DICTIONARY && a->dictionary != NULL) {
    dict_found *f = NULL;
    for (int64_t k = 0; k < ds->n; k++)
      if (ds->d[k].id == a->type->dict_id) f = &ds->d[k];
    if (f == NULL)
      return qv_error_set(err, QV_EARG, "dictionary id %" PRId64 " is not in the schema",
                          a->type->dict_id);
    bool have = false;
    for (int64_t k = 0; k < f->n_all; k++) have |= f->all[k] == a->dictionary;
    if (!have) {
      qv_array **g = realloc(f->all, sizeof *g * (size_t)(f->n_all + 1));
      if (g == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
      f->all = g;
      f->all[f->n_all++] = a->dictionary;
    }
    f->chosen = a->dictionary;
    QV_RETURN_NOT_OK(note_dicts_in_array(ds, a->dictionary, depth + 1, err));
  }
  for (int32_t k = 0; k < a->n_children; k++)
    QV_RETURN_NOT_OK(note_dicts_in_array(ds, a->children[k], depth + 1, err));
  return QV_OK;
}

static void dict_set_free(dict_set *ds) {
  for (int64_t k = 0; k < ds->n; k++) free(ds->d[k].all);
  free(ds->d);
}

static int cmp_dict_id(const void *x, const void *y) {
  int64_t a = ((const dict_found *)x)->id, b = ((const dict_found *)y)->id;
  return a < b ? -1 : a > b;
}

qv_status qv_json_write_buffer(const qv_schema *schema, qv_array *const *batches, int64_t n_batches,
                               qv_buffer **out, qv_error *err) {
  dict_set ds = {NULL, 0};
  qv_status st = note_dicts_in_type(&ds, schema->type, err);
  for (int64_t b = 0; b < n_batches && st == QV_OK; b++) {
    if (batches[b]->type->id != QV_STRUCT || batches[b]->n_children != schema->type->n_children)
      st = qv_error_set(err, QV_EARG,
                        "batch %" PRId64
                        " is not a record batch of the schema's %d "
                        "columns",
                        b, (int)schema->type->n_children);
    else st = note_dicts_in_array(&ds, batches[b], 0, err);
  }
  for (int64_t k = 0; k < ds.n && st == QV_OK; k++) {
    if (ds.d[k].id < 0) {
      st = qv_error_set(err, QV_EARG, "a dictionary field has no dictionary id");
      break;
    }
    dict_found *f = &ds.d[k];
    for (int64_t j = 0; j < f->n_all && st == QV_OK; j++) {
      qv_array *other = f->all[j], *prefix = NULL;
      if (other == f->chosen) continue;
      qv_error diff;
      bool ok = other->length <= f->chosen->length &&
                qv_array_slice(f->chosen, 0, other->length, &prefix, NULL) == QV_OK &&
                qv_array_equals(other, prefix, &diff);
      qv_array_unref(prefix);
      if (!ok)
        st = qv_error_set(err, QV_ENOTSUP,
                          "dictionary id %" PRId64
                          ": the batches carry different "
                          "dictionaries (a replacement, not a delta); the JSON format holds one "
                          "dictionary per id",
                          f->id);
    }
  }
  if (st == QV_OK && ds.n > 1) qsort(ds.d, (size_t)ds.n, sizeof *ds.d, cmp_dict_id);

  writer w;
  memset(&w, 0, sizeof w);
  w.err = err;
  if (st == QV_OK) st = qv_buffer_alloc(0, &w.out, err);
  if (st != QV_OK) {
    dict_set_free(&ds);
    return st;
  }
  w_begin(&w, '{', false);
  w_key(&w, "schema");
  w_begin(&w, '{', false);
  w_key(&w, "fields");
  w_begin(&w, '[', false);
  for (int32_t k = 0; k < schema->type->n_children; k++) w_field(&w, &schema->type->children[k]);
  w_end(&w, ']');
  w_metadata(&w, &schema->metadata);
  w_end(&w, '}');
  if (ds.n > 0) {
    w_key(&w, "dictionaries");
    w_begin(&w, '[', false);
    for (int64_t k = 0; k < ds.n; k++) {
      dict_found *f = &ds.d[k];
      w_begin(&w, '{', false);
      w_key(&w, "id");
      w_int(&w, f->id);
      w_key(&w, "data");
      w_begin(&w, '{', false);
      w_key(&w, "count");
      w_int(&w, f->chosen ? f->chosen->length : 0);
      w_key(&w, "columns");
      w_begin(&w, '[', false);
      char name[32];
      snprintf(name, sizeof name, "DICT%" PRId64, f->id);
      if (f->chosen) w_column(&w, name, f->chosen, 0, f->chosen->length);
      else w_empty_column(&w, name, f->value_type);
      w_end(&w, ']');
      w_end(&w, '}');
      w_end(&w, '}');
    }
    w_end(&w, ']');
  }
  w_key(&w, "batches");
  w_begin(&w, '[', false);
  for (int64_t b = 0; b < n_batches; b++) {
    const qv_array *batch = batches[b];
    w_begin(&w, '{', false);
    w_key(&w, "count");
    w_int(&w, batch->length);
    w_key(&w, "columns");
    w_begin(&w, '[', false);
    for (int32_t k = 0; k < schema->type->n_children; k++)
      w_column(&w, schema->type->children[k].name, batch->children[k], batch->offset,
               batch->length);
    w_end(&w, ']');
    w_end(&w, '}');
  }
  w_end(&w, ']');
  w_end(&w, '}');
  w_raw(&w, "\n", 1);
  w_flush(&w);
  dict_set_free(&ds);
  if (w.st != QV_OK) {
    qv_buffer_unref(w.out);
    return w.st;
  }
  *out = w.out;
  return QV_OK;
}

/* gzip `in` into a new malloc'd buffer. */
static qv_status gzip_bytes(const uint8_t *in, int64_t n, uint8_t **out, int64_t *out_len,
                            qv_error *err) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK)
    return qv_error_set(err, QV_ENOMEM, "gzip: cannot initialise zlib");
  uLong bound = deflateBound(&zs, (uLong)n);
  uint8_t *buf = malloc(bound + 64);
  if (buf == NULL) {
    deflateEnd(&zs);
    return qv_error_set(err, QV_ENOMEM, "gzip: out of memory");
  }
  zs.next_in = (Bytef *)in;
  zs.avail_in = (uInt)n;
  zs.next_out = buf;
  zs.avail_out = (uInt)(bound + 64);
  int zr = deflate(&zs, Z_FINISH);
  *out_len = (int64_t)zs.total_out;
  deflateEnd(&zs);
  if (zr != Z_STREAM_END) {
    free(buf);
    return qv_error_set(err, QV_ENOMEM, "gzip: compression failed");
  }
  *out = buf;
  return QV_OK;
}

qv_status qv_json_write(const char *path, const qv_schema *schema, qv_array *const *batches,
                        int64_t n_batches, const qv_json_write_options *options, qv_error *err) {
  qv_buffer *text = NULL;
  QV_RETURN_NOT_OK(qv_json_write_buffer(schema, batches, n_batches, &text, err));
  const uint8_t *bytes = text->data;
  int64_t len = text->size;
  uint8_t *gz = NULL;
  qv_status st = QV_OK;
  if (options != NULL && options->gzip) {
    if (len > (int64_t)UINT32_MAX / 2) st = qv_error_set(err, QV_ENOTSUP, "gzip: JSON too large");
    else st = gzip_bytes(text->data, text->size, &gz, &len, err);
    bytes = gz;
  }
  /* atomically: hidden temporary beside the target, fsync, rename, fsync
   * the directory (core/atomic_internal.h) */
  if (st == QV_OK) st = qv_atomic_write_file(path, bytes, len, err);
  free(gz);
  qv_buffer_unref(text);
  return st;
}
