/*
 * metadata.c — Arrow IPC metadata decoding (ipc layer): verifies a Message
 * or Footer flatbuffer (flatbuf.c against the descriptors of arrow_fbs.c)
 * and turns it into quiver's shapes: qv_schema / qv_type / qv_field trees
 * for Schema, qv_ipc_batch_desc for RecordBatch and DictionaryBatch, and
 * qv_ipc_footer for the file footer. The stream/file reader calls it for
 * every message; the body loader consumes what it produces.
 *
 * Nothing is decoded before the whole buffer verifies. Decoding then
 * checks the Arrow-level rules (valid bit widths and units, child counts of
 * nested types, union type ids, map and run-end shapes, dictionary index
 * types) and names the offending field by its path ("field 'a.b': ...").
 * Shared sub-objects in a hostile buffer could expand into many decoded
 * fields, so the number of fields and the bytes of copied strings are
 * bounded.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/arrow_fbs.h"
#include "ipc/ipc_internal.h"

/** Most fields (at all nesting levels) one schema may declare. */
#define QV_IPC_MAX_FIELDS 1000000
/** Deepest nesting of fields accepted. */
#define QV_IPC_MAX_FIELD_DEPTH 100
/** Longest field path kept for error text. */
#define MD_PATH_MAX 256

typedef struct md_ctx {
  qv_error *err;
  int64_t n_fields;
  int64_t string_budget; /* bytes of names/metadata still allowed */
  char path[MD_PATH_MAX];
  size_t path_len;
} md_ctx;

/* Names of the Type union members, by tag, for error text. */
static const char *const kFbsTypeNames[QV_FBS_TYPE_COUNT] = {
    "NONE",          "Null",      "Int",           "FloatingPoint",
    "Binary",        "Utf8",      "Bool",          "Decimal",
    "Date",          "Time",      "Timestamp",     "Interval",
    "List",          "Struct_",   "Union",         "FixedSizeBinary",
    "FixedSizeList", "Map",       "Duration",      "LargeBinary",
    "LargeUtf8",     "LargeList", "RunEndEncoded", "BinaryView",
    "Utf8View",      "ListView",  "LargeListView"};

static const char *const kTimeUnitNames[4] = {"SECOND", "MILLISECOND", "MICROSECOND", "NANOSECOND"};

/* Fail with "schema: field '<path>': <message>". */
static qv_status md_field_error(md_ctx *c, qv_status st, const char *fmt, ...) QV_PRINTF(3, 4);
static qv_status md_field_error(md_ctx *c, qv_status st, const char *fmt, ...) {
  char msg[QV_ERROR_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return qv_error_set(c->err, st, "schema: field '%s': %s", c->path, msg);
}

/* Append a path component; returns the previous length for md_path_pop. */
static size_t md_path_push(md_ctx *c, const char *name, int64_t index) {
  size_t old = c->path_len;
  char comp[48];
  const char *part = name;
  if (name == NULL || name[0] == '\0') {
    snprintf(comp, sizeof comp, "[%" PRId64 "]", index);
    part = comp;
  }
  int n = snprintf(c->path + old, sizeof c->path - old, "%s%s", old ? "." : "", part);
  if (n < 0 || (size_t)n >= sizeof c->path - old) {
    /* Truncated: mark it and stop growing. */
    strcpy(c->path + sizeof c->path - 4, "...");
    c->path_len = sizeof c->path - 1;
  } else {
    c->path_len = old + (size_t)n;
  }
  return old;
}

static void md_path_pop(md_ctx *c, size_t old) {
  c->path_len = old;
  c->path[old] = '\0';
}

static qv_status md_charge_string(md_ctx *c, int64_t len) {
  c->string_budget -= len;
  if (c->string_budget < 0) {
    return qv_error_set(c->err, QV_EINVAL,
                        "names and metadata exceed the bound for a "
                        "buffer of this size (shared strings?)");
  }
  return QV_OK;
}

/* Decode a [KeyValue] vector into md (appending). */
static qv_status md_decode_kv(md_ctx *c, const qv_fb_table *t, int slot, qv_metadata *md) {
  qv_fb_vec v;
  if (!qv_fb_vector(t, slot, &v)) return QV_OK;
  for (int64_t i = 0; i < v.len; i++) {
    qv_fb_table kv;
    const char *key = "", *value = "";
    int64_t key_len = 0, value_len = 0;
    if (!qv_fb_vec_table(&v, i, &kv)) {
      return qv_error_set(c->err, QV_EINVAL, "custom_metadata entry %" PRId64 " is unreadable", i);
    }
    qv_fb_string(&kv, QV_FBS_KEY_VALUE_KEY, &key, &key_len);
    qv_fb_string(&kv, QV_FBS_KEY_VALUE_VALUE, &value, &value_len);
    if (!key) key = "";
    if (!value) value = "";
    QV_RETURN_NOT_OK(md_charge_string(c, key_len + value_len));
    QV_RETURN_NOT_OK(qv_metadata_append(md, key, key_len, value, value_len, c->err));
  }
  return QV_OK;
}

/* Map an Arrow Int table (bitWidth, is_signed) to a type id. */
static bool md_int_id(int32_t bit_width, bool is_signed, qv_type_id *out) {
  switch (bit_width) {
    case 8: *out = is_signed ? QV_INT8 : QV_UINT8; return true;
    case 16: *out = is_signed ? QV_INT16 : QV_UINT16; return true;
    case 32: *out = is_signed ? QV_INT32 : QV_UINT32; return true;
    case 64: *out = is_signed ? QV_INT64 : QV_UINT64; return true;
    default: return false;
  }
}

static qv_status md_time_unit(md_ctx *c, const char *what, int16_t unit, qv_time_unit *out) {
  if (unit < 0 || unit > QV_FBS_TIME_NANOSECOND) {
    return md_field_error(c, QV_EINVAL, "%s unit %d is invalid", what, unit);
  }
  *out = (qv_time_unit)unit;
  return QV_OK;
}

/*
 * The declared type of a field from its Type union member: the id and the
 * scalar parameters. Children are added by the caller.
 */
static qv_status md_new_type(md_ctx *c, uint8_t tag, const qv_fb_table *tt, qv_type **out) {
  qv_type_id id = QV_NA;
  qv_type tmp;
  memset(&tmp, 0, sizeof tmp);
  const char *tz = NULL;
  int64_t tz_len = 0;

  switch (tag) {
    case QV_FBS_TYPE_NULL: id = QV_NA; break;
    case QV_FBS_TYPE_BOOL: id = QV_BOOL; break;
    case QV_FBS_TYPE_BINARY: id = QV_BINARY; break;
    case QV_FBS_TYPE_UTF8: id = QV_STRING; break;
    case QV_FBS_TYPE_LARGE_BINARY: id = QV_LARGE_BINARY; break;
    case QV_FBS_TYPE_LARGE_UTF8: id = QV_LARGE_STRING; break;
    case QV_FBS_TYPE_BINARY_VIEW: id = QV_BINARY_VIEW; break;
    case QV_FBS_TYPE_UTF8_VIEW: id = QV_STRING_VIEW; break;
    case QV_FBS_TYPE_LIST: id = QV_LIST; break;
    case QV_FBS_TYPE_LARGE_LIST: id = QV_LARGE_LIST; break;
    case QV_FBS_TYPE_LIST_VIEW: id = QV_LIST_VIEW; break;
    case QV_FBS_TYPE_LARGE_LIST_VIEW: id = QV_LARGE_LIST_VIEW; break;
    case QV_FBS_TYPE_STRUCT: id = QV_STRUCT; break;
    case QV_FBS_TYPE_RUN_END_ENCODED: id = QV_RUN_END_ENCODED; break;
    case QV_FBS_TYPE_INT: {
      int32_t bw = qv_fb_i32(tt, QV_FBS_INT_BIT_WIDTH, 0);
      bool is_signed = qv_fb_bool(tt, QV_FBS_INT_IS_SIGNED, false);
      if (!md_int_id(bw, is_signed, &id)) {
        return md_field_error(c, QV_EINVAL,
                              "Int bit width %d is invalid (expected 8, 16, 32 "
                              "or 64)",
                              bw);
      }
      break;
    }
    case QV_FBS_TYPE_FLOATING_POINT: {
      int16_t p = qv_fb_i16(tt, QV_FBS_FLOATING_POINT_PRECISION, 0);
      if (p == QV_FBS_PRECISION_HALF) id = QV_HALF_FLOAT;
      else if (p == QV_FBS_PRECISION_SINGLE) id = QV_FLOAT;
      else if (p == QV_FBS_PRECISION_DOUBLE) id = QV_DOUBLE;
      else return md_field_error(c, QV_EINVAL, "FloatingPoint precision %d is invalid", p);
      break;
    }
    case QV_FBS_TYPE_DECIMAL: {
      int32_t bw = qv_fb_i32(tt, QV_FBS_DECIMAL_BIT_WIDTH, QV_FBS_DECIMAL_DEFAULT_BIT_WIDTH);
      int32_t max_precision;
      switch (bw) {
        case 32:
          id = QV_DECIMAL32;
          max_precision = 9;
          break;
        case 64:
          id = QV_DECIMAL64;
          max_precision = 18;
          break;
        case 128:
          id = QV_DECIMAL128;
          max_precision = 38;
          break;
        case 256:
          id = QV_DECIMAL256;
          max_precision = 76;
          break;
        default:
          return md_field_error(c, QV_EINVAL,
                                "Decimal bit width %d is invalid (expected 32, "
                                "64, 128 or 256)",
                                bw);
      }
      tmp.precision = qv_fb_i32(tt, QV_FBS_DECIMAL_PRECISION, 0);
      tmp.scale = qv_fb_i32(tt, QV_FBS_DECIMAL_SCALE, 0);
      if (tmp.precision < 1 || tmp.precision > max_precision) {
        return md_field_error(c, QV_EINVAL,
                              "Decimal precision %d out of range [1, %d] for "
                              "bit width %d",
                              tmp.precision, max_precision, bw);
      }
      break;
    }
    case QV_FBS_TYPE_DATE: {
      int16_t unit = qv_fb_i16(tt, QV_FBS_DATE_UNIT, QV_FBS_DATE_DEFAULT_UNIT);
      if (unit == QV_FBS_DATE_DAY) id = QV_DATE32;
      else if (unit == QV_FBS_DATE_MILLISECOND) id = QV_DATE64;
      else return md_field_error(c, QV_EINVAL, "Date unit %d is invalid", unit);
      break;
    }
    case QV_FBS_TYPE_TIME: {
      int16_t unit = qv_fb_i16(tt, QV_FBS_TIME_UNIT, QV_FBS_TIME_DEFAULT_UNIT);
      int32_t bw = qv_fb_i32(tt, QV_FBS_TIME_BIT_WIDTH, QV_FBS_TIME_DEFAULT_BIT_WIDTH);
      QV_RETURN_NOT_OK(md_time_unit(c, "Time", unit, &tmp.unit));
      int32_t expected = tmp.unit <= QV_MILLI ? 32 : 64;
      if (bw != expected) {
        return md_field_error(c, QV_EINVAL,
                              "Time bit width %d does not match unit %s "
                              "(expected %d)",
                              bw, kTimeUnitNames[tmp.unit], expected);
      }
      id = expected == 32 ? QV_TIME32 : QV_TIME64;
      break;
    }
    case QV_FBS_TYPE_TIMESTAMP: {
      int16_t unit = qv_fb_i16(tt, QV_FBS_TIMESTAMP_UNIT, QV_FBS_TIME_SECOND);
      QV_RETURN_NOT_OK(md_time_unit(c, "Timestamp", unit, &tmp.unit));
      qv_fb_string(tt, QV_FBS_TIMESTAMP_TIMEZONE, &tz, &tz_len);
      if (tz != NULL && tz_len == 0) tz = NULL; /* "" means no timezone */
      if (tz != NULL) QV_RETURN_NOT_OK(md_charge_string(c, tz_len));
      id = QV_TIMESTAMP;
      break;
    }
    case QV_FBS_TYPE_DURATION: {
      int16_t unit = qv_fb_i16(tt, QV_FBS_DURATION_UNIT, QV_FBS_DURATION_DEFAULT_UNIT);
      QV_RETURN_NOT_OK(md_time_unit(c, "Duration", unit, &tmp.unit));
      id = QV_DURATION;
      break;
    }
    case QV_FBS_TYPE_INTERVAL: {
      int16_t unit = qv_fb_i16(tt, QV_FBS_INTERVAL_UNIT, 0);
      if (unit == QV_FBS_INTERVAL_YEAR_MONTH) id = QV_INTERVAL_MONTHS;
      else if (unit == QV_FBS_INTERVAL_DAY_TIME) id = QV_INTERVAL_DAY_TIME;
      else if (unit == QV_FBS_INTERVAL_MONTH_DAY_NANO) id = QV_INTERVAL_MONTH_DAY_NANO;
      else return md_field_error(c, QV_EINVAL, "Interval unit %d is invalid", unit);
      break;
    }
    case QV_FBS_TYPE_FIXED_SIZE_BINARY:
      tmp.byte_width = qv_fb_i32(tt, QV_FBS_FIXED_SIZE_BINARY_BYTE_WIDTH, 0);
      if (tmp.byte_width < 0) {
        return md_field_error(c, QV_EINVAL, "FixedSizeBinary byte width %d is negative",
                              tmp.byte_width);
      }
      id = QV_FIXED_SIZE_BINARY;
      break;
    case QV_FBS_TYPE_FIXED_SIZE_LIST:
      tmp.list_size = qv_fb_i32(tt, QV_FBS_FIXED_SIZE_LIST_LIST_SIZE, 0);
      if (tmp.list_size < 0) {
        return md_field_error(c, QV_EINVAL, "FixedSizeList list size %d is negative",
                              tmp.list_size);
      }
      id = QV_FIXED_SIZE_LIST;
      break;
    case QV_FBS_TYPE_MAP:
      tmp.keys_sorted = qv_fb_bool(tt, QV_FBS_MAP_KEYS_SORTED, false);
      id = QV_MAP;
      break;
    case QV_FBS_TYPE_UNION: {
      int16_t mode = qv_fb_i16(tt, QV_FBS_UNION_MODE, QV_FBS_UNION_SPARSE);
      if (mode == QV_FBS_UNION_SPARSE) id = QV_SPARSE_UNION;
      else if (mode == QV_FBS_UNION_DENSE) id = QV_DENSE_UNION;
      else return md_field_error(c, QV_EINVAL, "Union mode %d is invalid", mode);
      break;
    }
    default: return md_field_error(c, QV_ENOTSUP, "unsupported type (Type union tag %u)", tag);
  }

  qv_type *t = qv_type_new(id);
  if (t == NULL) return qv_error_set(c->err, QV_ENOMEM, "out of memory (type)");
  t->precision = tmp.precision;
  t->scale = tmp.scale;
  t->unit = tmp.unit;
  t->byte_width = tmp.byte_width;
  t->list_size = tmp.list_size;
  t->keys_sorted = tmp.keys_sorted;
  if (tz != NULL) {
    t->timezone = malloc((size_t)tz_len + 1);
    if (t->timezone == NULL) {
      qv_type_unref(t);
      return qv_error_set(c->err, QV_ENOMEM, "out of memory (timezone)");
    }
    memcpy(t->timezone, tz, (size_t)tz_len + 1);
  }
  *out = t;
  return QV_OK;
}

/* Check the children of a freshly decoded nested type; sets union codes. */
static qv_status md_check_children(md_ctx *c, uint8_t tag, const qv_fb_table *tt, qv_type *t) {
  const char *tname = kFbsTypeNames[tag];
  int32_t n = t->n_children;
  switch (t->id) {
    case QV_STRUCT: return QV_OK;
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_FIXED_SIZE_LIST:
      if (n != 1) {
        return md_field_error(c, QV_EINVAL, "%s must have exactly 1 child, found %d", tname, n);
      }
      return QV_OK;
    case QV_MAP: {
      if (n != 1) {
        return md_field_error(c, QV_EINVAL, "Map must have exactly 1 child, found %d", n);
      }
      const qv_field *entries = &t->children[0];
      if (entries->type->id != QV_STRUCT || entries->type->n_children != 2) {
        return md_field_error(c, QV_EINVAL,
                              "Map entries child must be a struct of 2 fields "
                              "(key, value), found %s with %d children",
                              qv_type_id_name(entries->type->id), entries->type->n_children);
      }
      if (entries->nullable) {
        return md_field_error(c, QV_EINVAL, "Map entries child must not be nullable");
      }
      if (entries->type->children[0].nullable) {
        return md_field_error(c, QV_EINVAL, "Map key field must not be nullable");
      }
      return QV_OK;
    }
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      qv_fb_vec ids;
      bool has_ids = qv_fb_vector(tt, QV_FBS_UNION_TYPE_IDS, &ids);
      if (has_ids && ids.len != n) {
        return md_field_error(c, QV_EINVAL, "Union has %" PRId64 " type ids but %d children",
                              ids.len, n);
      }
      if (n > 128) {
        return md_field_error(c, QV_EINVAL, "Union has %d children (at most 128 allowed)", n);
      }
      if (n == 0) return QV_OK;
      t->type_codes = malloc(sizeof *t->type_codes * (size_t)n);
      if (t->type_codes == NULL) {
        return qv_error_set(c->err, QV_ENOMEM, "out of memory (union codes)");
      }
      bool seen[128] = {false};
      for (int32_t i = 0; i < n; i++) {
        int32_t code = has_ids ? qv_fb_read_i32(qv_fb_vec_elem(&ids, i, 4)) : i;
        if (code < 0 || code > 127) {
          return md_field_error(c, QV_EINVAL, "Union type id %d out of range [0, 127]", code);
        }
        if (seen[code]) {
          return md_field_error(c, QV_EINVAL, "Union type id %d is repeated", code);
        }
        seen[code] = true;
        t->type_codes[i] = code;
      }
      return QV_OK;
    }
    case QV_RUN_END_ENCODED: {
      if (n != 2) {
        return md_field_error(c, QV_EINVAL,
                              "RunEndEncoded must have exactly 2 children "
                              "(run_ends, values), found %d",
                              n);
      }
      qv_type_id re = t->children[0].type->id;
      if (re != QV_INT16 && re != QV_INT32 && re != QV_INT64) {
        return md_field_error(c, QV_EINVAL,
                              "RunEndEncoded run_ends must be int16, int32 or "
                              "int64, found %s",
                              qv_type_id_name(re));
      }
      return QV_OK;
    }
    default:
      if (n != 0) {
        return md_field_error(c, QV_EINVAL, "%s must have no children, found %d", tname, n);
      }
      return QV_OK;
  }
}

/* Wrap the declared type `value` in a DICTIONARY type (value taken). */
static qv_status md_wrap_dictionary(md_ctx *c, const qv_fb_table *de, qv_type *value,
                                    qv_type **out) {
  qv_type_id index_id = QV_INT32;
  qv_fb_table it;
  if (qv_fb_table_field(de, QV_FBS_DICT_ENCODING_INDEX_TYPE, &it)) {
    int32_t bw = qv_fb_i32(&it, QV_FBS_INT_BIT_WIDTH, 0);
    bool is_signed = qv_fb_bool(&it, QV_FBS_INT_IS_SIGNED, false);
    if (!md_int_id(bw, is_signed, &index_id)) {
      qv_type_unref(value);
      return md_field_error(c, QV_EINVAL,
                            "dictionary index bit width %d is invalid "
                            "(expected 8, 16, 32 or 64)",
                            bw);
    }
  }
  int16_t kind = qv_fb_i16(de, QV_FBS_DICT_ENCODING_KIND, QV_FBS_DICTIONARY_KIND_DENSE_ARRAY);
  if (kind != QV_FBS_DICTIONARY_KIND_DENSE_ARRAY) {
    qv_type_unref(value);
    return md_field_error(c, QV_ENOTSUP, "dictionary kind %d is not supported", kind);
  }
  qv_type *d = qv_type_new(QV_DICTIONARY);
  qv_type *index = qv_type_new(index_id);
  if (d == NULL || index == NULL) {
    qv_type_unref(d);
    qv_type_unref(index);
    qv_type_unref(value);
    return qv_error_set(c->err, QV_ENOMEM, "out of memory (dictionary type)");
  }
  d->index_type = index;
  d->value_type = value;
  d->dict_id = qv_fb_i64(de, QV_FBS_DICT_ENCODING_ID, 0);
  d->ordered = qv_fb_bool(de, QV_FBS_DICT_ENCODING_IS_ORDERED, false);
  *out = d;
  return QV_OK;
}

/*
 * Decode Field table `ft` (at nesting `depth`) and append it as a child of
 * `parent`. The path already names this field.
 */
static qv_status md_decode_field(md_ctx *c, const qv_fb_table *ft, int depth, qv_type *parent);

static qv_status md_decode_children(md_ctx *c, const qv_fb_vec *v, int depth, qv_type *parent) {
  for (int64_t i = 0; i < v->len; i++) {
    qv_fb_table child;
    if (!qv_fb_vec_table(v, i, &child)) {
      return md_field_error(c, QV_EINVAL, "child %" PRId64 " is unreadable", i);
    }
    const char *name = NULL;
    int64_t name_len = 0;
    qv_fb_string(&child, QV_FBS_FIELD_NAME, &name, &name_len);
    size_t mark = md_path_push(c, name, i);
    qv_status st = md_decode_field(c, &child, depth, parent);
    md_path_pop(c, mark);
    QV_RETURN_NOT_OK(st);
  }
  return QV_OK;
}

static qv_status md_decode_field(md_ctx *c, const qv_fb_table *ft, int depth, qv_type *parent) {
  if (++c->n_fields > QV_IPC_MAX_FIELDS) {
    return qv_error_set(c->err, QV_EINVAL, "schema: more than %d fields", QV_IPC_MAX_FIELDS);
  }
  if (depth > QV_IPC_MAX_FIELD_DEPTH) {
    return md_field_error(c, QV_EINVAL, "nested deeper than %d levels", QV_IPC_MAX_FIELD_DEPTH);
  }
  const char *name = NULL;
  int64_t name_len = 0;
  qv_fb_string(ft, QV_FBS_FIELD_NAME, &name, &name_len);
  if (name == NULL) name = "";
  QV_RETURN_NOT_OK(md_charge_string(c, name_len));
  bool nullable = qv_fb_bool(ft, QV_FBS_FIELD_NULLABLE, false);

  uint8_t tag = qv_fb_u8(ft, QV_FBS_FIELD_TYPE_TYPE, QV_FBS_TYPE_NONE);
  qv_fb_table tt;
  bool has_type = qv_fb_table_field(ft, QV_FBS_FIELD_TYPE, &tt);
  if (tag == QV_FBS_TYPE_NONE) {
    return md_field_error(c, QV_EINVAL, "missing type (Type union is NONE)");
  }
  if (tag >= QV_FBS_TYPE_COUNT) {
    return md_field_error(c, QV_ENOTSUP, "unsupported type (Type union tag %u)", tag);
  }
  if (!has_type) {
    return md_field_error(c, QV_EINVAL, "Type union tag %u (%s) has no table", tag,
                          kFbsTypeNames[tag]);
  }

  qv_type *t = NULL;
  QV_RETURN_NOT_OK(md_new_type(c, tag, &tt, &t));
  qv_fb_vec kids;
  qv_status st = QV_OK;
  if (qv_fb_vector(ft, QV_FBS_FIELD_CHILDREN, &kids)) {
    st = md_decode_children(c, &kids, depth + 1, t);
  }
  if (st == QV_OK) st = md_check_children(c, tag, &tt, t);
  if (st != QV_OK) {
    qv_type_unref(t);
    return st;
  }

  qv_fb_table de;
  if (qv_fb_table_field(ft, QV_FBS_FIELD_DICTIONARY, &de)) {
    QV_RETURN_NOT_OK(md_wrap_dictionary(c, &de, t, &t));
  }

  qv_metadata md = {0, NULL};
  st = md_decode_kv(c, ft, QV_FBS_FIELD_CUSTOM_METADATA, &md);
  if (st == QV_OK) st = qv_type_add_child(parent, name, nullable, t, &md, c->err);
  qv_metadata_reset(&md);
  if (st != QV_OK) qv_type_unref(t);
  return st;
}

/* Decode a Schema table into a new qv_schema. */
static qv_status md_decode_schema(const qv_fb_table *st_, int64_t buf_size, qv_schema **out,
                                  bool *big_endian, qv_error *err) {
  md_ctx c;
  memset(&c, 0, sizeof c);
  c.err = err;
  c.string_budget = 16 * buf_size + (1 << 20);

  int16_t endian = qv_fb_i16(st_, QV_FBS_SCHEMA_ENDIANNESS, QV_FBS_ENDIAN_LITTLE);
  if (endian != QV_FBS_ENDIAN_LITTLE && endian != QV_FBS_ENDIAN_BIG) {
    return qv_error_set(err, QV_EINVAL, "schema: endianness %d is invalid", endian);
  }
  qv_type *root = qv_type_new(QV_STRUCT);
  if (root == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (schema)");
  qv_status s = QV_OK;
  qv_fb_vec fields;
  if (qv_fb_vector(st_, QV_FBS_SCHEMA_FIELDS, &fields)) {
    s = md_decode_children(&c, &fields, 1, root);
  }
  if (s != QV_OK) {
    qv_type_unref(root);
    return s;
  }
  qv_schema *schema = qv_schema_new(root);
  if (schema == NULL) { /* qv_schema_new released root */
    return qv_error_set(err, QV_ENOMEM, "out of memory (schema)");
  }
  s = md_decode_kv(&c, st_, QV_FBS_SCHEMA_CUSTOM_METADATA, &schema->metadata);
  if (s != QV_OK) {
    qv_schema_unref(schema);
    return s;
  }
  *out = schema;
  *big_endian = endian == QV_FBS_ENDIAN_BIG;
  return QV_OK;
}

/* Decode a RecordBatch table (`what` names it in errors). */
static qv_status md_decode_batch(const qv_fb_table *rb, const char *what, qv_ipc_batch_desc *out,
                                 qv_error *err) {
  memset(out, 0, sizeof *out);
  out->length = qv_fb_i64(rb, QV_FBS_RECORD_BATCH_LENGTH, 0);
  if (out->length < 0) {
    return qv_error_set(err, QV_EINVAL, "%s: negative length %" PRId64, what, out->length);
  }
  qv_fb_vec v;
  if (qv_fb_vector(rb, QV_FBS_RECORD_BATCH_NODES, &v) && v.len > 0) {
    out->nodes = malloc(sizeof *out->nodes * (size_t)v.len);
    if (out->nodes == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (nodes)");
    out->n_nodes = v.len;
    for (int64_t i = 0; i < v.len; i++) {
      const uint8_t *p = qv_fb_vec_elem(&v, i, QV_FBS_FIELD_NODE_SIZE);
      qv_ipc_node *n = &out->nodes[i];
      n->length = qv_fb_read_i64(p);
      n->null_count = qv_fb_read_i64(p + 8);
      if (n->length < 0 || n->null_count < 0) {
        return qv_error_set(err, QV_EINVAL, "%s: field node %" PRId64 " has negative %s %" PRId64,
                            what, i, n->length < 0 ? "length" : "null count",
                            n->length < 0 ? n->length : n->null_count);
      }
    }
  }
  if (qv_fb_vector(rb, QV_FBS_RECORD_BATCH_BUFFERS, &v) && v.len > 0) {
    out->buffers = malloc(sizeof *out->buffers * (size_t)v.len);
    if (out->buffers == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (buffers)");
    out->n_buffers = v.len;
    for (int64_t i = 0; i < v.len; i++) {
      const uint8_t *p = qv_fb_vec_elem(&v, i, QV_FBS_BUFFER_SIZE);
      qv_ipc_buffer_spec *b = &out->buffers[i];
      b->offset = qv_fb_read_i64(p);
      b->length = qv_fb_read_i64(p + 8);
      int64_t end;
      if (b->offset < 0 || b->length < 0 || qv_add_overflow(b->offset, b->length, &end)) {
        return qv_error_set(err, QV_EINVAL,
                            "%s: buffer %" PRId64 " has invalid range offset %" PRId64
                            ", length %" PRId64,
                            what, i, b->offset, b->length);
      }
    }
  }
  qv_fb_table comp;
  if (qv_fb_table_field(rb, QV_FBS_RECORD_BATCH_COMPRESSION, &comp)) {
    int8_t codec = qv_fb_i8(&comp, QV_FBS_BODY_COMPRESSION_CODEC, QV_FBS_COMPRESSION_LZ4_FRAME);
    int8_t method =
        qv_fb_i8(&comp, QV_FBS_BODY_COMPRESSION_METHOD, QV_FBS_COMPRESSION_METHOD_BUFFER);
    if (codec == QV_FBS_COMPRESSION_LZ4_FRAME) {
      out->compression = QV_COMPRESSION_LZ4_FRAME;
    } else if (codec == QV_FBS_COMPRESSION_ZSTD) {
      out->compression = QV_COMPRESSION_ZSTD;
    } else {
      return qv_error_set(err, QV_ENOTSUP, "%s: unknown compression codec %d", what, codec);
    }
    if (method != QV_FBS_COMPRESSION_METHOD_BUFFER) {
      return qv_error_set(err, QV_ENOTSUP, "%s: unknown body compression method %d", what, method);
    }
  }
  if (qv_fb_vector(rb, QV_FBS_RECORD_BATCH_VARIADIC_COUNTS, &v)) {
    out->variadic_counts = malloc(sizeof *out->variadic_counts * (size_t)(v.len > 0 ? v.len : 1));
    if (out->variadic_counts == NULL) {
      return qv_error_set(err, QV_ENOMEM, "out of memory (variadic counts)");
    }
    out->n_variadic = v.len;
    for (int64_t i = 0; i < v.len; i++) {
      out->variadic_counts[i] = qv_fb_read_i64(qv_fb_vec_elem(&v, i, 8));
      if (out->variadic_counts[i] < 0) {
        return qv_error_set(err, QV_EINVAL,
                            "%s: variadic buffer count %" PRId64 " is negative (%" PRId64 ")", what,
                            i, out->variadic_counts[i]);
      }
    }
  }
  return QV_OK;
}

static void md_batch_reset(qv_ipc_batch_desc *b) {
  free(b->nodes);
  free(b->buffers);
  free(b->variadic_counts);
  memset(b, 0, sizeof *b);
}

/* Accept metadata versions V4 and V5 only. */
static qv_status md_check_version(int16_t version, qv_error *err) {
  if (version >= QV_METADATA_V1 && version < QV_METADATA_V4) {
    return qv_error_set(err, QV_ENOTSUP,
                        "metadata version V%d is not supported (V4 or later "
                        "required; written by Arrow before 0.8)",
                        version + 1);
  }
  if (version < QV_METADATA_V1 || version > QV_METADATA_V5) {
    return qv_error_set(err, QV_ENOTSUP,
                        "metadata version %d is unknown (V4 and V5 are "
                        "supported)",
                        version);
  }
  return QV_OK;
}

static const char *const kHeaderNames[6] = {"NONE",        "Schema", "DictionaryBatch",
                                            "RecordBatch", "Tensor", "SparseTensor"};

qv_status qv_ipc_decode_message(const uint8_t *data, int64_t size, qv_ipc_message *out,
                                qv_error *err) {
  memset(out, 0, sizeof *out);
  QV_RETURN_NOT_OK(qv_fb_verify(data, size, &qv_fbs_message_desc, err));
  qv_fb_table msg;
  if (!qv_fb_root(data, size, &msg)) {
    return qv_error_set(err, QV_EINVAL, "flatbuffer: unreadable root table");
  }
  int16_t version = qv_fb_i16(&msg, QV_FBS_MESSAGE_VERSION, QV_METADATA_V1);
  QV_RETURN_NOT_OK(md_check_version(version, err));
  int64_t body = qv_fb_i64(&msg, QV_FBS_MESSAGE_BODY_LENGTH, 0);
  if (body < 0) {
    return qv_error_set(err, QV_EINVAL, "negative body length %" PRId64, body);
  }
  uint8_t tag = qv_fb_u8(&msg, QV_FBS_MESSAGE_HEADER_TYPE, QV_MSG_NONE);
  qv_fb_table h;
  bool has_header = qv_fb_table_field(&msg, QV_FBS_MESSAGE_HEADER, &h);
  if (tag == QV_MSG_NONE) {
    return qv_error_set(err, QV_EINVAL, "message has no header (MessageHeader union is NONE)");
  }
  if (tag > QV_MSG_SPARSE_TENSOR) {
    return qv_error_set(err, QV_ENOTSUP, "unknown message header type %u (newer format?)", tag);
  }
  if (tag == QV_MSG_TENSOR || tag == QV_MSG_SPARSE_TENSOR) {
    return qv_error_set(err, QV_ENOTSUP, "%s messages are not supported", kHeaderNames[tag]);
  }
  if (!has_header) {
    return qv_error_set(err, QV_EINVAL, "MessageHeader union tag %u (%s) has no table", tag,
                        kHeaderNames[tag]);
  }
  out->version = version;
  out->type = (qv_msg_type)tag;
  out->body_length = body;
  qv_status st = QV_OK;
  qv_metadata_reset(&out->custom_metadata);
  switch (tag) {
    case QV_MSG_SCHEMA: st = md_decode_schema(&h, size, &out->schema, &out->big_endian, err); break;
    case QV_MSG_RECORD_BATCH: st = md_decode_batch(&h, "record batch", &out->batch, err); break;
    case QV_MSG_DICTIONARY_BATCH: {
      out->dict_id = qv_fb_i64(&h, QV_FBS_DICTIONARY_BATCH_ID, 0);
      out->is_delta = qv_fb_bool(&h, QV_FBS_DICTIONARY_BATCH_IS_DELTA, false);
      qv_fb_table data_table;
      if (!qv_fb_table_field(&h, QV_FBS_DICTIONARY_BATCH_DATA, &data_table)) {
        st = qv_error_set(err, QV_EINVAL, "dictionary batch (id %" PRId64 "): missing data",
                          out->dict_id);
      } else {
        st = md_decode_batch(&data_table, "dictionary batch", &out->batch, err);
      }
      break;
    }
    default: break;
  }
  if (st == QV_OK) {
    md_ctx c;
    memset(&c, 0, sizeof c);
    c.err = err;
    c.string_budget = 16 * size + (1 << 20);
    st = md_decode_kv(&c, &msg, QV_FBS_MESSAGE_CUSTOM_METADATA, &out->custom_metadata);
  }
  if (st != QV_OK) qv_ipc_message_reset(out);
  return st;
}

void qv_ipc_message_reset(qv_ipc_message *m) {
  if (m == NULL) return;
  qv_schema_unref(m->schema);
  md_batch_reset(&m->batch);
  qv_metadata_reset(&m->custom_metadata);
  memset(m, 0, sizeof *m);
}

/* Decode a [Block] vector; `what` is "dictionary" or "record batch". */
static qv_status md_decode_blocks(const qv_fb_table *f, int slot, const char *what, int64_t *n_out,
                                  qv_ipc_block **out, qv_error *err) {
  qv_fb_vec v;
  *n_out = 0;
  *out = NULL;
  if (!qv_fb_vector(f, slot, &v) || v.len == 0) return QV_OK;
  qv_ipc_block *blocks = malloc(sizeof *blocks * (size_t)v.len);
  if (blocks == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (blocks)");
  *out = blocks;
  *n_out = v.len;
  for (int64_t i = 0; i < v.len; i++) {
    const uint8_t *p = qv_fb_vec_elem(&v, i, QV_FBS_BLOCK_SIZE);
    qv_ipc_block *b = &blocks[i];
    b->offset = qv_fb_read_i64(p + QV_FBS_BLOCK_OFFSET);
    b->metadata_length = qv_fb_read_i32(p + QV_FBS_BLOCK_METADATA_LENGTH);
    b->body_length = qv_fb_read_i64(p + QV_FBS_BLOCK_BODY_LENGTH);
    if (b->offset < 0 || b->metadata_length < 0 || b->body_length < 0) {
      return qv_error_set(err, QV_EINVAL,
                          "%s block %" PRId64 " is invalid (offset %" PRId64
                          ", metadata length %d, body length %" PRId64 ")",
                          what, i, b->offset, b->metadata_length, b->body_length);
    }
  }
  return QV_OK;
}

qv_status qv_ipc_decode_footer(const uint8_t *data, int64_t size, qv_ipc_footer *out,
                               qv_error *err) {
  memset(out, 0, sizeof *out);
  QV_RETURN_NOT_OK(qv_fb_verify(data, size, &qv_fbs_footer_desc, err));
  qv_fb_table f;
  if (!qv_fb_root(data, size, &f)) {
    return qv_error_set(err, QV_EINVAL, "flatbuffer: unreadable root table");
  }
  /* Arrow C++ before 0.15 left the footer's version out (so it reads as
   * V1) while its messages say V4; the messages' versions are what count,
   * so only versions unknown to the format are refused here. */
  int16_t version = qv_fb_i16(&f, QV_FBS_FOOTER_VERSION, QV_METADATA_V1);
  if (version < QV_METADATA_V1 || version > QV_METADATA_V5) {
    return md_check_version(version, err);
  }
  out->version = version;
  qv_fb_table s;
  if (!qv_fb_table_field(&f, QV_FBS_FOOTER_SCHEMA, &s)) {
    return qv_error_set(err, QV_EINVAL, "footer has no schema");
  }
  qv_status st = md_decode_schema(&s, size, &out->schema, &out->big_endian, err);
  if (st == QV_OK) {
    st = md_decode_blocks(&f, QV_FBS_FOOTER_DICTIONARIES, "dictionary", &out->n_dictionaries,
                          &out->dictionaries, err);
  }
  if (st == QV_OK) {
    st = md_decode_blocks(&f, QV_FBS_FOOTER_RECORD_BATCHES, "record batch", &out->n_record_batches,
                          &out->record_batches, err);
  }
  if (st == QV_OK) {
    md_ctx c;
    memset(&c, 0, sizeof c);
    c.err = err;
    c.string_budget = 16 * size + (1 << 20);
    st = md_decode_kv(&c, &f, QV_FBS_FOOTER_CUSTOM_METADATA, &out->custom_metadata);
  }
  if (st != QV_OK) qv_ipc_footer_reset(out);
  return st;
}

void qv_ipc_footer_reset(qv_ipc_footer *f) {
  if (f == NULL) return;
  qv_schema_unref(f->schema);
  free(f->dictionaries);
  free(f->record_batches);
  qv_metadata_reset(&f->custom_metadata);
  memset(f, 0, sizeof *f);
}
