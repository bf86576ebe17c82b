/*
 * type.c — the Arrow type model: construction, reference counting,
 * equality and printing of qv_type, key/value metadata, and schemas.
 * Core layer; the ipc layer decodes into these, every other layer reads them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/type.h"

static const char *const kTypeNames[QV_TYPE_ID_COUNT] = {
    [QV_NA] = "null",
    [QV_BOOL] = "bool",
    [QV_INT8] = "int8",
    [QV_UINT8] = "uint8",
    [QV_INT16] = "int16",
    [QV_UINT16] = "uint16",
    [QV_INT32] = "int32",
    [QV_UINT32] = "uint32",
    [QV_INT64] = "int64",
    [QV_UINT64] = "uint64",
    [QV_HALF_FLOAT] = "halffloat",
    [QV_FLOAT] = "float",
    [QV_DOUBLE] = "double",
    [QV_DECIMAL32] = "decimal32",
    [QV_DECIMAL64] = "decimal64",
    [QV_DECIMAL128] = "decimal128",
    [QV_DECIMAL256] = "decimal256",
    [QV_DATE32] = "date32",
    [QV_DATE64] = "date64",
    [QV_TIME32] = "time32",
    [QV_TIME64] = "time64",
    [QV_TIMESTAMP] = "timestamp",
    [QV_DURATION] = "duration",
    [QV_INTERVAL_MONTHS] = "month_interval",
    [QV_INTERVAL_DAY_TIME] = "day_time_interval",
    [QV_INTERVAL_MONTH_DAY_NANO] = "month_day_nano_interval",
    [QV_BINARY] = "binary",
    [QV_STRING] = "string",
    [QV_LARGE_BINARY] = "large_binary",
    [QV_LARGE_STRING] = "large_string",
    [QV_BINARY_VIEW] = "binary_view",
    [QV_STRING_VIEW] = "string_view",
    [QV_FIXED_SIZE_BINARY] = "fixed_size_binary",
    [QV_LIST] = "list",
    [QV_LARGE_LIST] = "large_list",
    [QV_LIST_VIEW] = "list_view",
    [QV_LARGE_LIST_VIEW] = "large_list_view",
    [QV_FIXED_SIZE_LIST] = "fixed_size_list",
    [QV_STRUCT] = "struct",
    [QV_MAP] = "map",
    [QV_SPARSE_UNION] = "sparse_union",
    [QV_DENSE_UNION] = "dense_union",
    [QV_DICTIONARY] = "dictionary",
    [QV_RUN_END_ENCODED] = "run_end_encoded",
};

const char *qv_type_id_name(qv_type_id id) {
  if ((int)id < 0 || id >= QV_TYPE_ID_COUNT) return "unknown";
  return kTypeNames[id];
}

qv_type *qv_type_new(qv_type_id id) {
  qv_type *t = calloc(1, sizeof *t);
  if (t == NULL) return NULL;
  t->id = id;
  t->refcount_ = 1;
  t->dict_id = -1;
  return t;
}

qv_type *qv_type_ref(qv_type *t) {
  if (t != NULL) __atomic_add_fetch(&t->refcount_, 1, __ATOMIC_RELAXED);
  return t;
}

void qv_type_unref(qv_type *t) {
  if (t == NULL) return;
  if (__atomic_sub_fetch(&t->refcount_, 1, __ATOMIC_ACQ_REL) != 0) return;
  for (int32_t i = 0; i < t->n_children; i++) {
    free(t->children[i].name);
    qv_type_unref(t->children[i].type);
    qv_metadata_reset(&t->children[i].metadata);
  }
  free(t->children);
  free(t->timezone);
  free(t->type_codes);
  qv_type_unref(t->index_type);
  qv_type_unref(t->value_type);
  free(t);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

qv_status qv_type_add_child(qv_type *t, const char *name, bool nullable, qv_type *type,
                            const qv_metadata *metadata, qv_error *err) {
  qv_field *grown = realloc(t->children, sizeof *grown * (size_t)(t->n_children + 1));
  if (grown == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (type child)");
  t->children = grown;
  qv_field *f = &t->children[t->n_children];
  memset(f, 0, sizeof *f);
  f->name = dup_str(name ? name : "");
  if (f->name == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (field name)");
  if (metadata != NULL && metadata->n > 0) {
    qv_status st = qv_metadata_copy(&f->metadata, metadata, err);
    if (st != QV_OK) {
      free(f->name);
      return st;
    }
  }
  f->nullable = nullable;
  f->type = type;
  t->n_children++;
  return QV_OK;
}

qv_type *qv_type_timestamp(qv_time_unit unit, const char *timezone) {
  qv_type *t = qv_type_new(QV_TIMESTAMP);
  if (t == NULL) return NULL;
  t->unit = unit;
  if (timezone != NULL) {
    t->timezone = dup_str(timezone);
    if (t->timezone == NULL) {
      qv_type_unref(t);
      return NULL;
    }
  }
  return t;
}

qv_type *qv_type_list_of(qv_type_id list_id, qv_type *item) {
  qv_type *t = qv_type_new(list_id);
  if (t == NULL || qv_type_add_child(t, "item", true, item, NULL, NULL) != QV_OK) {
    qv_type_unref(t);
    qv_type_unref(item);
    return NULL;
  }
  return t;
}

static bool str_eq_nullable(const char *a, const char *b) {
  if (a == NULL || b == NULL) return a == b;
  return strcmp(a, b) == 0;
}

bool qv_type_equals(const qv_type *a, const qv_type *b, bool check_metadata) {
  if (a == b) return true;
  if (a == NULL || b == NULL || a->id != b->id) return false;
  switch (a->id) {
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256:
      if (a->precision != b->precision || a->scale != b->scale) return false;
      break;
    case QV_TIME32:
    case QV_TIME64:
    case QV_DURATION:
      if (a->unit != b->unit) return false;
      break;
    case QV_TIMESTAMP:
      if (a->unit != b->unit || !str_eq_nullable(a->timezone, b->timezone)) return false;
      break;
    case QV_FIXED_SIZE_BINARY:
      if (a->byte_width != b->byte_width) return false;
      break;
    case QV_FIXED_SIZE_LIST:
      if (a->list_size != b->list_size) return false;
      break;
    case QV_MAP:
      if (a->keys_sorted != b->keys_sorted) return false;
      break;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION:
      if (a->n_children != b->n_children) return false;
      for (int32_t i = 0; i < a->n_children; i++)
        if (a->type_codes[i] != b->type_codes[i]) return false;
      break;
    case QV_DICTIONARY:
      if (a->ordered != b->ordered ||
          !qv_type_equals(a->index_type, b->index_type, check_metadata) ||
          !qv_type_equals(a->value_type, b->value_type, check_metadata))
        return false;
      break;
    default: break;
  }
  if (a->n_children != b->n_children) return false;
  for (int32_t i = 0; i < a->n_children; i++) {
    const qv_field *fa = &a->children[i], *fb = &b->children[i];
    if (strcmp(fa->name, fb->name) != 0 || fa->nullable != fb->nullable) return false;
    if (!qv_type_equals(fa->type, fb->type, check_metadata)) return false;
    if (check_metadata && !qv_metadata_equals(&fa->metadata, &fb->metadata)) return false;
  }
  return true;
}

int32_t qv_type_bit_width(const qv_type *t) {
  switch (t->id) {
    case QV_BOOL: return 1;
    case QV_INT8:
    case QV_UINT8: return 8;
    case QV_INT16:
    case QV_UINT16:
    case QV_HALF_FLOAT: return 16;
    case QV_INT32:
    case QV_UINT32:
    case QV_FLOAT:
    case QV_DATE32:
    case QV_TIME32:
    case QV_INTERVAL_MONTHS:
    case QV_DECIMAL32: return 32;
    case QV_INT64:
    case QV_UINT64:
    case QV_DOUBLE:
    case QV_DATE64:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DURATION:
    case QV_INTERVAL_DAY_TIME:
    case QV_DECIMAL64: return 64;
    case QV_DECIMAL128:
    case QV_INTERVAL_MONTH_DAY_NANO: return 128;
    case QV_DECIMAL256: return 256;
    case QV_FIXED_SIZE_BINARY: return 8 * t->byte_width;
    default: return 0;
  }
}

int32_t qv_type_byte_width(const qv_type *t) {
  return t->id == QV_BOOL ? 0 : qv_type_bit_width(t) / 8;
}

bool qv_type_id_is_integer(qv_type_id id) { return id >= QV_INT8 && id <= QV_UINT64; }

bool qv_type_id_is_signed_integer(qv_type_id id) {
  return id == QV_INT8 || id == QV_INT16 || id == QV_INT32 || id == QV_INT64;
}

int32_t qv_type_num_buffers(qv_type_id id) {
  switch (id) {
    case QV_NA:
    case QV_RUN_END_ENCODED: return 0;
    case QV_FIXED_SIZE_LIST:
    case QV_STRUCT:
    case QV_SPARSE_UNION: return 1;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: return 3;
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP:
    case QV_DENSE_UNION:
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: return 2;
    default: return 2; /* validity + values; dictionary: validity + indices */
  }
}

/* --- printing ------------------------------------------------------------ */

typedef struct sbuf {
  char *out;
  int64_t cap, len;
} sbuf;

static void sb_put(sbuf *s, const char *fmt, ...) QV_PRINTF(2, 3);
static void sb_put(sbuf *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *dst = s->len < s->cap ? s->out + s->len : NULL;
  size_t room = s->len < s->cap ? (size_t)(s->cap - s->len) : 0;
  int n = vsnprintf(dst, room, fmt, ap);
  va_end(ap);
  if (n > 0) s->len += n;
}

static const char *unit_name(qv_time_unit u) {
  switch (u) {
    case QV_SECOND: return "s";
    case QV_MILLI: return "ms";
    case QV_MICRO: return "us";
    case QV_NANO: return "ns";
  }
  return "?";
}

static void type_print(sbuf *s, const qv_type *t) {
  const char *name = qv_type_id_name(t->id);
  switch (t->id) {
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256: sb_put(s, "%s(%d, %d)", name, t->precision, t->scale); return;
    case QV_TIME32:
    case QV_TIME64:
    case QV_DURATION: sb_put(s, "%s[%s]", name, unit_name(t->unit)); return;
    case QV_TIMESTAMP:
      if (t->timezone) sb_put(s, "timestamp[%s, tz=%s]", unit_name(t->unit), t->timezone);
      else sb_put(s, "timestamp[%s]", unit_name(t->unit));
      return;
    case QV_FIXED_SIZE_BINARY: sb_put(s, "fixed_size_binary[%d]", t->byte_width); return;
    case QV_DICTIONARY:
      sb_put(s, "dictionary<values=");
      type_print(s, t->value_type);
      sb_put(s, ", indices=%s, ordered=%d>", qv_type_id_name(t->index_type->id),
             t->ordered ? 1 : 0);
      return;
    case QV_FIXED_SIZE_LIST:
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_MAP:
    case QV_STRUCT:
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION:
    case QV_RUN_END_ENCODED: break;
    default: sb_put(s, "%s", name); return;
  }
  if (t->id == QV_MAP && t->n_children == 1 && t->children[0].type->n_children == 2) {
    const qv_type *e = t->children[0].type;
    sb_put(s, "map<");
    type_print(s, e->children[0].type);
    sb_put(s, ", ");
    type_print(s, e->children[1].type);
    sb_put(s, "%s>", t->keys_sorted ? ", keys_sorted" : "");
    return;
  }
  sb_put(s, "%s<", name);
  for (int32_t i = 0; i < t->n_children; i++) {
    if (i) sb_put(s, ", ");
    if (t->id == QV_SPARSE_UNION || t->id == QV_DENSE_UNION) sb_put(s, "%s: ", t->children[i].name);
    else sb_put(s, "%s: ", t->children[i].name);
    type_print(s, t->children[i].type);
    if (!t->children[i].nullable) sb_put(s, " not null");
    if (t->id == QV_SPARSE_UNION || t->id == QV_DENSE_UNION)
      sb_put(s, "=%d", t->type_codes ? t->type_codes[i] : i);
  }
  sb_put(s, ">");
  if (t->id == QV_FIXED_SIZE_LIST) sb_put(s, "[%d]", t->list_size);
}

int64_t qv_type_to_string(const qv_type *t, char *out, int64_t cap) {
  sbuf s = {out, cap, 0};
  if (cap > 0) out[0] = '\0';
  type_print(&s, t);
  if (cap > 0 && s.len >= cap) out[cap - 1] = '\0';
  return s.len;
}

/* --- metadata ------------------------------------------------------------ */

static char *dup_bytes(const char *p, int64_t n) {
  char *d = malloc((size_t)n + 1);
  if (d == NULL) return NULL;
  if (n > 0) memcpy(d, p, (size_t)n);
  d[n] = '\0';
  return d;
}

qv_status qv_metadata_append(qv_metadata *md, const char *key, int64_t key_len, const char *value,
                             int64_t value_len, qv_error *err) {
  if (key_len < 0) key_len = (int64_t)strlen(key);
  if (value_len < 0) value_len = (int64_t)strlen(value);
  qv_kv *grown = realloc(md->kv, sizeof *grown * (size_t)(md->n + 1));
  if (grown == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (metadata)");
  md->kv = grown;
  qv_kv *kv = &md->kv[md->n];
  kv->key = dup_bytes(key, key_len);
  kv->value = dup_bytes(value, value_len);
  if (kv->key == NULL || kv->value == NULL) {
    free(kv->key);
    free(kv->value);
    return qv_error_set(err, QV_ENOMEM, "out of memory (metadata)");
  }
  kv->key_len = key_len;
  kv->value_len = value_len;
  md->n++;
  return QV_OK;
}

qv_status qv_metadata_copy(qv_metadata *dst, const qv_metadata *src, qv_error *err) {
  dst->n = 0;
  dst->kv = NULL;
  for (int64_t i = 0; i < src->n; i++) {
    qv_status st = qv_metadata_append(dst, src->kv[i].key, src->kv[i].key_len, src->kv[i].value,
                                      src->kv[i].value_len, err);
    if (st != QV_OK) {
      qv_metadata_reset(dst);
      return st;
    }
  }
  return QV_OK;
}

void qv_metadata_reset(qv_metadata *md) {
  for (int64_t i = 0; i < md->n; i++) {
    free(md->kv[i].key);
    free(md->kv[i].value);
  }
  free(md->kv);
  md->kv = NULL;
  md->n = 0;
}

const qv_kv *qv_metadata_find(const qv_metadata *md, const char *key) {
  size_t klen = strlen(key);
  for (int64_t i = md->n - 1; i >= 0; i--)
    if ((size_t)md->kv[i].key_len == klen && memcmp(md->kv[i].key, key, klen) == 0)
      return &md->kv[i];
  return NULL;
}

bool qv_metadata_equals(const qv_metadata *a, const qv_metadata *b) {
  if (a->n != b->n) return false;
  for (int64_t i = 0; i < a->n; i++) {
    const qv_kv *x = &a->kv[i], *y = &b->kv[i];
    if (x->key_len != y->key_len || x->value_len != y->value_len ||
        memcmp(x->key, y->key, (size_t)x->key_len) != 0 ||
        memcmp(x->value, y->value, (size_t)x->value_len) != 0)
      return false;
  }
  return true;
}

const char *qv_field_extension_name(const qv_field *f) {
  const qv_kv *kv = qv_metadata_find(&f->metadata, "ARROW:extension:name");
  return kv ? kv->value : NULL;
}

/* --- schemas ------------------------------------------------------------- */

qv_schema *qv_schema_new(qv_type *struct_type) {
  qv_schema *s = calloc(1, sizeof *s);
  if (s == NULL) {
    qv_type_unref(struct_type);
    return NULL;
  }
  s->refcount_ = 1;
  s->type = struct_type;
  return s;
}

qv_schema *qv_schema_ref(qv_schema *s) {
  if (s != NULL) __atomic_add_fetch(&s->refcount_, 1, __ATOMIC_RELAXED);
  return s;
}

void qv_schema_unref(qv_schema *s) {
  if (s == NULL) return;
  if (__atomic_sub_fetch(&s->refcount_, 1, __ATOMIC_ACQ_REL) != 0) return;
  qv_type_unref(s->type);
  qv_metadata_reset(&s->metadata);
  free(s);
}

int32_t qv_schema_find(const qv_schema *s, const char *name) {
  for (int32_t i = 0; i < s->type->n_children; i++)
    if (strcmp(s->type->children[i].name, name) == 0) return i;
  return -1;
}

bool qv_schema_equals(const qv_schema *a, const qv_schema *b, bool check_metadata) {
  if (!qv_type_equals(a->type, b->type, check_metadata)) return false;
  return !check_metadata || qv_metadata_equals(&a->metadata, &b->metadata);
}
