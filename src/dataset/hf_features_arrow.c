/*
 * hf_features_arrow.c — Hugging Face `datasets` Features and Arrow types:
 * Value dtype strings <-> Arrow types, the Arrow type (and extension
 * metadata) each feature implies, deriving features from Arrow types, and
 * resolving or checking a file's schema against its features. Dataset
 * layer; needs core (types, metadata) and the feature tree of
 * hf_features_json.c. The rules mirror datasets' features/features.py
 * (string_to_arrow, _arrow_to_datasets_dtype, get_nested_type,
 * generate_from_arrow_type, Features.from_arrow_schema).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/name_index_internal.h"
#include "dataset/dataset_internal.h"
#include "dataset/hf_internal.h"

/* Extension names pyarrow registers itself: a file column carrying one is
 * read as that extension type, which datasets has no feature for (except
 * arrow.json -> Json). */
static const char *const kCanonicalExtensions[] = {"arrow.uuid",
                                                   "arrow.bool8",
                                                   "arrow.fixed_shape_tensor",
                                                   "arrow.variable_shape_tensor",
                                                   "arrow.opaque",
                                                   "arrow.parquet.variant"};

#define EXT_NAME_KEY "ARROW:extension:name"
#define EXT_META_KEY "ARROW:extension:metadata"
#define JSON_EXT_NAME "arrow.json"

static const char *type_child_name_at(const void *ctx, int32_t i) {
  return ((const qv_type *)ctx)->children[i].name;
}

static const char *schema_name_at(const void *ctx, int32_t i) {
  return qv_schema_field((const qv_schema *)ctx, i)->name;
}

/* ------------------------------------------------------------------------ */
/* Value dtypes <-> Arrow types (string_to_arrow / _arrow_to_datasets_dtype) */

typedef struct dtype_name {
  const char *name;
  qv_type_id id;
} dtype_name;

/* dtype strings resolved by name through pyarrow's namespace (pa.<name>()
 * or pa.<name>_()) that yield a plain Arrow type. */
static const dtype_name kDtypeNames[] = {
    {"null", QV_NA},
    {"bool", QV_BOOL},
    {"bool_", QV_BOOL},
    {"int8", QV_INT8},
    {"int16", QV_INT16},
    {"int32", QV_INT32},
    {"int64", QV_INT64},
    {"uint8", QV_UINT8},
    {"uint16", QV_UINT16},
    {"uint32", QV_UINT32},
    {"uint64", QV_UINT64},
    {"float16", QV_HALF_FLOAT},
    {"float32", QV_FLOAT},
    {"float64", QV_DOUBLE},
    {"date32", QV_DATE32},
    {"date64", QV_DATE64},
    {"binary", QV_BINARY},
    {"string", QV_STRING},
    {"utf8", QV_STRING},
    {"large_binary", QV_LARGE_BINARY},
    {"large_string", QV_LARGE_STRING},
    {"large_utf8", QV_LARGE_STRING},
    {"binary_view", QV_BINARY_VIEW},
    {"string_view", QV_STRING_VIEW},
    {"month_day_nano_interval", QV_INTERVAL_MONTH_DAY_NANO},
};

static const char *const kUnitNames[4] = {"s", "ms", "us", "ns"};

static bool parse_unit(const char *s, size_t n, qv_time_unit *u) {
  for (int i = 0; i < 4; i++)
    if (strlen(kUnitNames[i]) == n && memcmp(s, kUnitNames[i], n) == 0) {
      *u = (qv_time_unit)i;
      return true;
    }
  return false;
}

static bool is_py_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Parse decimal digits [s, e) (optionally signed) into an int32 range. */
static bool parse_int_range(const char *s, const char *e, bool allow_sign, int64_t lo, int64_t hi,
                            int64_t *out) {
  bool neg = false;
  if (allow_sign && s < e && *s == '-') neg = true, s++;
  if (s == e) return false;
  int64_t v = 0;
  for (; s < e; s++) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + (*s - '0');
    if (v > (int64_t)1 << 40) return false;
  }
  if (neg) v = -v;
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

static bool starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* dtype string -> new qv_type (one reference), as string_to_arrow. */
qv_status qv_hf_dtype_to_type(const char *dtype, const char *where, qv_type **out, qv_error *err) {
  for (size_t i = 0; i < sizeof kDtypeNames / sizeof kDtypeNames[0]; i++)
    if (strcmp(dtype, kDtypeNames[i].name) == 0) {
      *out = qv_type_new(kDtypeNames[i].id);
      return *out ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory (type)");
    }
  size_t n = strlen(dtype);
  const char *end = dtype + n;
  qv_time_unit unit = QV_SECOND;
  if (starts_with(dtype, "timestamp[") && n > 11 && dtype[n - 1] == ']') {
    /* ^timestamp\[(s|ms|us|ns)\]$ or ^timestamp\[(unit),\s*tz=([a-zA-Z0-9/_+\-:]*)\]$ */
    const char *in = dtype + 10, *in_end = end - 1;
    const char *comma = memchr(in, ',', (size_t)(in_end - in));
    if (comma == NULL && parse_unit(in, (size_t)(in_end - in), &unit)) {
      *out = qv_type_timestamp(unit, NULL);
      return *out ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory (type)");
    }
    if (comma != NULL && parse_unit(in, (size_t)(comma - in), &unit)) {
      const char *p = comma + 1;
      while (p < in_end && is_py_space(*p)) p++;
      if (in_end - p >= 3 && memcmp(p, "tz=", 3) == 0) {
        p += 3;
        bool ok = true;
        for (const char *q = p; q < in_end; q++)
          if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
                *q == '/' || *q == '_' || *q == '+' || *q == '-' || *q == ':'))
            ok = false;
        if (ok) {
          char tz[256];
          size_t tzn = (size_t)(in_end - p);
          if (tzn >= sizeof tz)
            return qv_error_set(err, QV_EINVAL, "%s: timezone in dtype '%s' is too long", where,
                                dtype);
          memcpy(tz, p, tzn);
          tz[tzn] = '\0';
          *out = qv_type_timestamp(unit, tzn > 0 ? tz : NULL);
          return *out ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory (type)");
        }
      }
    }
    return qv_error_set(err, QV_EINVAL,
                        "%s: dtype '%s' is not a valid timestamp (expected e.g. 'timestamp[us]' or "
                        "'timestamp[us, tz=America/New_York]')",
                        where, dtype);
  }
  if (starts_with(dtype, "duration[") && dtype[n - 1] == ']') {
    if (parse_unit(dtype + 9, n - 10, &unit)) {
      qv_type *t = qv_type_new(QV_DURATION);
      if (t == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (type)");
      t->unit = unit;
      *out = t;
      return QV_OK;
    }
    return qv_error_set(err, QV_EINVAL,
                        "%s: dtype '%s' is not a valid duration (expected e.g. 'duration[s]')",
                        where, dtype);
  }
  if (starts_with(dtype, "time") && n > 5) {
    const char *br = strchr(dtype, '[');
    if (br != NULL && dtype[n - 1] == ']') {
      bool is32 = (size_t)(br - dtype) == 6 && memcmp(dtype, "time32", 6) == 0;
      bool is64 = (size_t)(br - dtype) == 6 && memcmp(dtype, "time64", 6) == 0;
      bool unit_ok = parse_unit(br + 1, (size_t)(end - 1 - br - 1), &unit);
      if ((is32 && unit_ok && unit <= QV_MILLI) || (is64 && unit_ok && unit >= QV_MICRO)) {
        qv_type *t = qv_type_new(is32 ? QV_TIME32 : QV_TIME64);
        if (t == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (type)");
        t->unit = unit;
        *out = t;
        return QV_OK;
      }
      return qv_error_set(err, QV_EINVAL,
                          "%s: dtype '%s' is not a valid time type (time32[s|ms] or "
                          "time64[us|ns])",
                          where, dtype);
    }
  }
  if (starts_with(dtype, "decimal") && dtype[n - 1] == ')') {
    const char *par = strchr(dtype, '(');
    bool is128 = par == dtype + 10 && memcmp(dtype, "decimal128", 10) == 0;
    bool is256 = par == dtype + 10 && memcmp(dtype, "decimal256", 10) == 0;
    if (is128 || is256) {
      const char *in = par + 1, *in_end = end - 1;
      const char *comma = memchr(in, ',', (size_t)(in_end - in));
      int64_t prec, scale;
      if (comma != NULL) {
        const char *s = comma + 1;
        while (s < in_end && is_py_space(*s)) s++;
        if (parse_int_range(in, comma, false, 1, is128 ? 38 : 76, &prec) &&
            parse_int_range(s, in_end, true, INT32_MIN, INT32_MAX, &scale)) {
          qv_type *t = qv_type_new(is128 ? QV_DECIMAL128 : QV_DECIMAL256);
          if (t == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (type)");
          t->precision = (int32_t)prec;
          t->scale = (int32_t)scale;
          *out = t;
          return QV_OK;
        }
      }
    }
    return qv_error_set(err, QV_EINVAL,
                        "%s: dtype '%s' is not a valid decimal (expected e.g. 'decimal128(10, 2)' "
                        "or 'decimal256(40, 6)')",
                        where, dtype);
  }
  if (starts_with(dtype, "fixed_size_binary[") && dtype[n - 1] == ']') {
    int64_t w;
    if (parse_int_range(dtype + 18, end - 1, false, 0, INT32_MAX, &w)) {
      qv_type *t = qv_type_new(QV_FIXED_SIZE_BINARY);
      if (t == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (type)");
      t->byte_width = (int32_t)w;
      *out = t;
      return QV_OK;
    }
  }
  if (strcmp(dtype, "uuid") == 0 || strcmp(dtype, "bool8") == 0 || strcmp(dtype, "json_") == 0)
    return qv_error_set(err, QV_ENOTSUP,
                        "%s: dtype '%s' names an Arrow extension type; quiver supports it only "
                        "as the Json() feature",
                        where, dtype);
  return qv_error_set(err, QV_EINVAL, "%s: dtype '%s' is not a pyarrow data type", where, dtype);
}

/* Arrow type -> datasets dtype string (_arrow_to_datasets_dtype) into buf.
 * False when datasets has no dtype for it. */
static bool type_to_dtype(const qv_type *t, char *buf, size_t cap) {
  const char *name = NULL;
  switch (t->id) {
    case QV_NA: name = "null"; break;
    case QV_BOOL: name = "bool"; break;
    case QV_INT8: name = "int8"; break;
    case QV_INT16: name = "int16"; break;
    case QV_INT32: name = "int32"; break;
    case QV_INT64: name = "int64"; break;
    case QV_UINT8: name = "uint8"; break;
    case QV_UINT16: name = "uint16"; break;
    case QV_UINT32: name = "uint32"; break;
    case QV_UINT64: name = "uint64"; break;
    case QV_HALF_FLOAT: name = "float16"; break;
    case QV_FLOAT: name = "float32"; break;
    case QV_DOUBLE: name = "float64"; break;
    case QV_DATE32: name = "date32"; break;
    case QV_DATE64: name = "date64"; break;
    case QV_BINARY: name = "binary"; break;
    case QV_LARGE_BINARY: name = "large_binary"; break;
    case QV_BINARY_VIEW: name = "binary_view"; break;
    case QV_STRING: name = "string"; break;
    case QV_LARGE_STRING: name = "large_string"; break;
    case QV_STRING_VIEW: name = "string_view"; break;
    case QV_TIME32:
    case QV_TIME64:
      if ((unsigned)t->unit > 3) return false;
      snprintf(buf, cap, "%s[%s]", t->id == QV_TIME32 ? "time32" : "time64", kUnitNames[t->unit]);
      return true;
    case QV_TIMESTAMP:
      if ((unsigned)t->unit > 3) return false;
      if (t->timezone == NULL || t->timezone[0] == '\0')
        snprintf(buf, cap, "timestamp[%s]", kUnitNames[t->unit]);
      else snprintf(buf, cap, "timestamp[%s, tz=%s]", kUnitNames[t->unit], t->timezone);
      return strlen(buf) < cap - 1;
    case QV_DURATION:
      if ((unsigned)t->unit > 3) return false;
      snprintf(buf, cap, "duration[%s]", kUnitNames[t->unit]);
      return true;
    case QV_DECIMAL128:
    case QV_DECIMAL256:
      snprintf(buf, cap, "decimal%s(%d, %d)", t->id == QV_DECIMAL128 ? "128" : "256",
               (int)t->precision, (int)t->scale);
      return true;
    case QV_FIXED_SIZE_BINARY:
      snprintf(buf, cap, "fixed_size_binary[%d]", (int)t->byte_width);
      return true;
    case QV_DICTIONARY: return t->value_type != NULL && type_to_dtype(t->value_type, buf, cap);
    default: return false;
  }
  snprintf(buf, cap, "%s", name);
  return true;
}

/* ------------------------------------------------------------------------ */
/* Implied Arrow types (get_nested_type)                                     */

static qv_status array_ext_metadata(const qv_hf_feature *f, qv_metadata *md, qv_error *err) {
  char name[64];
  snprintf(name, sizeof name, "%s%d%s", QV_HF_ARRAY_EXT_PREFIX, (int)f->ndims,
           QV_HF_ARRAY_EXT_SUFFIX);
  /* __arrow_ext_serialize__: json.dumps((shape, dtype)) */
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_status st = qv_strbuf_append_str(&sb, "[[", err);
  for (int32_t i = 0; st == QV_OK && i < f->ndims; i++) {
    if (i) st = qv_strbuf_append_str(&sb, ", ", err);
    if (st == QV_OK)
      st = f->shape[i] < 0 ? qv_strbuf_append_str(&sb, "null", err)
                           : qv_strbuf_printf(&sb, err, "%lld", (long long)f->shape[i]);
  }
  if (st == QV_OK) st = qv_strbuf_append_str(&sb, "], ", err);
  if (st == QV_OK) st = qv_pyjson_string(&sb, f->dtype, strlen(f->dtype), err);
  if (st == QV_OK) st = qv_strbuf_append_char(&sb, ']', err);
  if (st == QV_OK)
    st = qv_metadata_append(md, EXT_NAME_KEY, (int64_t)strlen(EXT_NAME_KEY), name,
                            (int64_t)strlen(name), err);
  if (st == QV_OK)
    st = qv_metadata_append(md, EXT_META_KEY, (int64_t)strlen(EXT_META_KEY), qv_strbuf_cstr(&sb),
                            sb.len, err);
  qv_strbuf_reset(&sb);
  return st;
}

static qv_status implied(const qv_hf_feature *f, int depth, qv_type **out, qv_metadata *md,
                         qv_error *err);

/* Add a nullable child named `name` of feature `f` to `parent`. */
static qv_status add_type_child(qv_type *parent, const char *name, const qv_hf_feature *f,
                                int depth, qv_error *err) {
  qv_type *t = NULL;
  qv_metadata md = {0, NULL};
  qv_status st = implied(f, depth + 1, &t, &md, err);
  if (st == QV_OK) st = qv_type_add_child(parent, name, true, t, &md, err);
  if (st != QV_OK) qv_type_unref(t);
  qv_metadata_reset(&md);
  return st;
}

static qv_status simple_child(qv_type *parent, const char *name, qv_type_id id, qv_error *err) {
  qv_type *t = qv_type_new(id);
  if (t == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (type)");
  qv_status st = qv_type_add_child(parent, name, true, t, NULL, err);
  if (st != QV_OK) qv_type_unref(t);
  return st;
}

static qv_status list_of_string_child(qv_type *parent, const char *name, qv_error *err) {
  qv_type *l = qv_type_new(QV_LIST);
  if (l == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (type)");
  qv_status st = simple_child(l, "item", QV_STRING, err);
  if (st == QV_OK) st = qv_type_add_child(parent, name, true, l, NULL, err);
  if (st != QV_OK) qv_type_unref(l);
  return st;
}

static qv_status implied(const qv_hf_feature *f, int depth, qv_type **out, qv_metadata *md,
                         qv_error *err) {
  if (depth > QV_HF_MAX_DEPTH + 2)
    return qv_error_set(err, QV_EINVAL, "features nested too deeply");
  qv_type *t = NULL;
  qv_status st = QV_OK;
  switch (f->kind) {
    case QV_HF_VALUE: return qv_hf_dtype_to_type(f->dtype, "Value", out, err);
    case QV_HF_CLASS_LABEL: t = qv_type_new(QV_INT64); break;
    case QV_HF_DICT:
      if ((t = qv_type_new(QV_STRUCT)) == NULL) break;
      for (int32_t i = 0; i < f->n_children && st == QV_OK; i++)
        st = add_type_child(t, f->keys[i], f->children[i], depth, err);
      break;
    case QV_HF_LIST:
    case QV_HF_LARGE_LIST:
      t = qv_type_new(f->kind == QV_HF_LARGE_LIST ? QV_LARGE_LIST
                      : f->length >= 0            ? QV_FIXED_SIZE_LIST
                                                  : QV_LIST);
      if (t == NULL) break;
      if (t->id == QV_FIXED_SIZE_LIST) t->list_size = (int32_t)f->length;
      st = add_type_child(t, "item", f->children[0], depth, err);
      break;
    case QV_HF_ARRAY: {
      /* _generate_dtype: dtype wrapped in one pa.list_ per dimension. */
      qv_type *inner = NULL;
      st = qv_hf_dtype_to_type(f->dtype, f->type_name, &inner, err);
      for (int32_t i = 0; st == QV_OK && i < f->ndims; i++) {
        qv_type *l = qv_type_new(QV_LIST);
        if (l == NULL) {
          st = qv_error_set(err, QV_ENOMEM, "out of memory (type)");
          break;
        }
        st = qv_type_add_child(l, "item", true, inner, NULL, err);
        if (st != QV_OK) {
          qv_type_unref(l);
          break;
        }
        inner = l;
      }
      if (st != QV_OK) {
        qv_type_unref(inner);
        return st;
      }
      t = inner;
      if (md) st = array_ext_metadata(f, md, err);
      break;
    }
    case QV_HF_TRANSLATION: {
      if ((t = qv_type_new(QV_STRUCT)) == NULL) break;
      char **v = qv_hf_sorted_view(f->names, f->n_names);
      if (v == NULL) break;
      for (int64_t i = 0; i < f->n_names && st == QV_OK; i++)
        st = simple_child(t, v[i], QV_STRING, err);
      free(v);
      break;
    }
    case QV_HF_TRANSLATION_VL:
      if ((t = qv_type_new(QV_STRUCT)) == NULL) break;
      st = list_of_string_child(t, "language", err);
      if (st == QV_OK) st = list_of_string_child(t, "translation", err);
      break;
    case QV_HF_JSON:
      t = qv_type_new(QV_STRING);
      if (t && md)
        st = qv_metadata_append(md, EXT_NAME_KEY, (int64_t)strlen(EXT_NAME_KEY), JSON_EXT_NAME,
                                (int64_t)strlen(JSON_EXT_NAME), err);
      if (st == QV_OK && t && md)
        st = qv_metadata_append(md, EXT_META_KEY, (int64_t)strlen(EXT_META_KEY), "", 0, err);
      break;
    case QV_HF_MEDIA:
      if ((t = qv_type_new(QV_STRUCT)) == NULL) break;
      st = simple_child(t, "bytes", QV_BINARY, err);
      if (st == QV_OK) st = simple_child(t, "path", QV_STRING, err);
      break;
  }
  if (t == NULL && st == QV_OK) st = qv_error_set(err, QV_ENOMEM, "out of memory (type)");
  if (st != QV_OK) {
    qv_type_unref(t);
    return st;
  }
  *out = t;
  return QV_OK;
}

qv_status qv_hf_feature_arrow_type(const qv_hf_feature *f, qv_type **out, qv_metadata *out_metadata,
                                   qv_error *err) {
  qv_metadata md = {0, NULL};
  qv_status st = implied(f, 0, out, &md, err);
  if (st == QV_OK && out_metadata) *out_metadata = md;
  else qv_metadata_reset(&md);
  return st;
}

qv_status qv_hf_schema_with_features(qv_type *struct_type, const qv_hf_feature *features,
                                     const char *fp, qv_schema **out, qv_error *err) {
  qv_schema *s = qv_schema_new(struct_type);
  if (s == NULL) {
    qv_type_unref(struct_type);
    return qv_error_set(err, QV_ENOMEM, "out of memory (schema)");
  }
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_status st = qv_hf_metadata_emit(features, fp, &sb, err);
  if (st == QV_OK)
    st = qv_metadata_append(&s->metadata, QV_HF_METADATA_KEY, (int64_t)strlen(QV_HF_METADATA_KEY),
                            qv_strbuf_cstr(&sb), sb.len, err);
  qv_strbuf_reset(&sb);
  if (st != QV_OK) {
    qv_schema_unref(s);
    return st;
  }
  *out = s;
  return QV_OK;
}

qv_status qv_hf_features_arrow_schema(const qv_hf_feature *features, qv_schema **out,
                                      qv_error *err) {
  if (features == NULL || features->kind != QV_HF_DICT)
    return qv_error_set(err, QV_EARG, "features must be a dict of columns");
  qv_type *t = NULL;
  QV_RETURN_NOT_OK(implied(features, 0, &t, NULL, err));
  return qv_hf_schema_with_features(t, features, NULL, out, err);
}

/* ------------------------------------------------------------------------ */
/* Comparing an implied field with a file's field (pyarrow Field.equals)     */

static const char *registered_ext(const qv_field *f) {
  const char *name = qv_field_extension_name(f);
  if (name == NULL) return NULL;
  if (strcmp(name, JSON_EXT_NAME) == 0) return name;
  for (size_t i = 0; i < sizeof kCanonicalExtensions / sizeof kCanonicalExtensions[0]; i++)
    if (strcmp(name, kCanonicalExtensions[i]) == 0) return name;
  if (starts_with(name, QV_HF_ARRAY_EXT_PREFIX) &&
      strlen(name) == strlen(QV_HF_ARRAY_EXT_PREFIX) + 1 + strlen(QV_HF_ARRAY_EXT_SUFFIX))
    return name;
  return NULL; /* unregistered: pyarrow reads the storage type */
}

static int array_ext_ndims(const char *name) {
  size_t p = strlen(QV_HF_ARRAY_EXT_PREFIX);
  if (!starts_with(name, QV_HF_ARRAY_EXT_PREFIX) ||
      strlen(name) != p + 1 + strlen(QV_HF_ARRAY_EXT_SUFFIX) ||
      strcmp(name + p + 1, QV_HF_ARRAY_EXT_SUFFIX) != 0)
    return 0;
  int nd = name[p] - '0';
  return nd >= 2 && nd <= 5 ? nd : 0;
}

/* Parse the ArrayND extension metadata [[shape...], "dtype"] of field f
 * into a new QV_HF_ARRAY feature. */
static qv_status array_from_ext(const qv_field *field, int ndims, const char *path,
                                qv_hf_feature **out, qv_error *err) {
  const qv_kv *kv = qv_metadata_find(&field->metadata, EXT_META_KEY);
  json_t *v = NULL;
  if (kv == NULL)
    return qv_error_set(err, QV_EINVAL, "%s: extension %s has no metadata", path,
                        qv_field_extension_name(field));
  json_error_t jerr;
  v = json_loadb(kv->value, (size_t)kv->value_len, JSON_DECODE_ANY, &jerr);
  qv_hf_feature *f = qv_hf_node_new(QV_HF_ARRAY, qv_hf_array_names[ndims]);
  qv_status st = QV_OK;
  if (f == NULL) {
    json_decref(v);
    return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  }
  f->ndims = ndims;
  if (!json_is_array(v) || json_array_size(v) != 2) {
    st = qv_error_set(
        err, QV_EINVAL, "%s: extension %s metadata must be [shape, dtype], found '%.*s'", path,
        qv_field_extension_name(field), (int)(kv->value_len > 80 ? 80 : kv->value_len), kv->value);
  } else {
    json_t *obj = json_object();
    if (obj == NULL || json_object_set(obj, "shape", json_array_get(v, 0)) != 0 ||
        json_object_set(obj, "dtype", json_array_get(v, 1)) != 0)
      st = qv_error_set(err, QV_ENOMEM, "out of memory (features)");
    if (st == QV_OK) st = qv_hf_parse_array_shape(obj, path, f, err);
    if (st == QV_OK) st = qv_hf_require_dtype(obj, path, f, err);
    json_decref(obj);
  }
  json_decref(v);
  if (st != QV_OK) {
    qv_hf_feature_free(f);
    return st;
  }
  *out = f;
  return QV_OK;
}

static bool ext_equal(const qv_field *expected, const qv_field *actual) {
  const char *a = registered_ext(expected), *b = registered_ext(actual);
  if (a == NULL || b == NULL) return a == b;
  if (strcmp(a, b) != 0) return false;
  int nd = array_ext_ndims(a);
  if (nd == 0) return true;
  /* pyarrow compares the re-serialised (shape, dtype). */
  qv_hf_feature *fa = NULL, *fb = NULL;
  bool eq = array_from_ext(expected, nd, "", &fa, NULL) == QV_OK &&
            array_from_ext(actual, nd, "", &fb, NULL) == QV_OK && qv_hf_feature_equals(fa, fb);
  qv_hf_feature_free(fa);
  qv_hf_feature_free(fb);
  return eq;
}

static bool tz_equal(const char *a, const char *b) {
  if (a && !*a) a = NULL;
  if (b && !*b) b = NULL;
  if (a == NULL || b == NULL) return a == b;
  return strcmp(a, b) == 0;
}

static bool types_match(const qv_type *e, const qv_type *a, int depth);

/* Field equality as pyarrow's (metadata ignored but extension identity). */
static bool fields_match(const qv_field *e, const qv_field *a, bool compare_name, int depth) {
  if (compare_name && strcmp(e->name, a->name) != 0) return false;
  if (e->nullable != a->nullable) return false;
  if (!ext_equal(e, a)) return false;
  return types_match(e->type, a->type, depth + 1);
}

static bool types_match(const qv_type *e, const qv_type *a, int depth) {
  if (depth > 4 * QV_HF_MAX_DEPTH) return false;
  if (e->id != a->id) return false;
  if (e->id == QV_TIMESTAMP) {
    if (e->unit != a->unit || !tz_equal(e->timezone, a->timezone)) return false;
  } else if (e->id == QV_STRUCT) {
    if (e->n_children != a->n_children) return false;
    for (int32_t i = 0; i < e->n_children; i++)
      if (!fields_match(&e->children[i], &a->children[i], true, depth)) return false;
    return true;
  } else if (e->id == QV_LIST || e->id == QV_LARGE_LIST || e->id == QV_FIXED_SIZE_LIST) {
    if (e->id == QV_FIXED_SIZE_LIST && e->list_size != a->list_size) return false;
    if (e->n_children != 1 || a->n_children != 1) return false;
    /* list item names are not compared by pyarrow */
    return fields_match(&e->children[0], &a->children[0], false, depth);
  } else if (e->n_children > 0 || a->n_children > 0 || e->id == QV_DICTIONARY) {
    return qv_type_equals(e, a, false);
  }
  /* Scalar parameters: reuse core equality (no children here). */
  qv_type ec = *e, ac = *a;
  ec.timezone = ac.timezone = NULL;
  return qv_type_equals(&ec, &ac, false);
}

/* Does the feature's implied field equal `field` (name aside)? */
static qv_status feature_matches(const qv_hf_feature *f, const qv_field *field, bool *match,
                                 qv_error *err) {
  qv_field e = {(char *)field->name, true, NULL, {0, NULL}};
  QV_RETURN_NOT_OK(implied(f, 0, &e.type, &e.metadata, err));
  *match = fields_match(&e, field, false, 0);
  qv_type_unref(e.type);
  qv_metadata_reset(&e.metadata);
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Deriving features from Arrow types (generate_from_arrow_type)             */

static qv_status derive(const qv_field *field, const char *path, int depth, qv_hf_feature **out,
                        qv_error *err) {
  if (depth > QV_HF_MAX_DEPTH)
    return qv_error_set(err, QV_EINVAL, "%s: type nested deeper than %d levels", path,
                        QV_HF_MAX_DEPTH);
  const qv_type *t = field->type;
  const char *ext = registered_ext(field);
  if (ext != NULL) {
    int nd = array_ext_ndims(ext);
    if (nd > 0) return array_from_ext(field, nd, path, out, err);
    if (strcmp(ext, JSON_EXT_NAME) == 0) {
      json_t *obj = json_pack("{s:s}", "_type", "Json");
      qv_status st = obj ? qv_hf_parse_typed(obj, "Json", path, depth, out, err)
                         : qv_error_set(err, QV_ENOMEM, "out of memory");
      json_decref(obj);
      return st;
    }
    return qv_error_set(err, QV_ENOTSUP, "%s: extension type %s has no datasets feature", path,
                        ext);
  }
  qv_status st = QV_OK;
  qv_hf_path sub;
  switch (t->id) {
    case QV_STRUCT: {
      qv_hf_feature *d = qv_hf_node_new(QV_HF_DICT, NULL);
      if (d == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
      qv_name_index seen = {0};
      st = qv_name_index_init(&seen, type_child_name_at, t, t->n_children, err);
      for (int32_t i = 0; i < t->n_children && st == QV_OK; i++) {
        qv_hf_feature *c = NULL;
        int32_t dup = -1;
        qv_hf_path_key(&sub, path, t->children[i].name);
        st = derive(&t->children[i], sub.s, depth + 1, &c, err);
        if (st == QV_OK) st = qv_name_index_add(&seen, i, &dup, err);
        if (st == QV_OK && dup >= 0) {
          qv_hf_feature_free(c);
          st = qv_error_set(err, QV_EINVAL, "%s: duplicate field name", sub.s);
        } else if (st != QV_OK || (st = qv_hf_add_child(d, t->children[i].name, c, err)) != QV_OK) {
          qv_hf_feature_free(c);
        }
      }
      qv_name_index_free(&seen);
      if (st != QV_OK) {
        qv_hf_feature_free(d);
        return st;
      }
      *out = d;
      return QV_OK;
    }
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_FIXED_SIZE_LIST: {
      if (t->n_children != 1)
        return qv_error_set(err, QV_EINVAL, "%s: list type without an item field", path);
      qv_hf_feature *item = NULL;
      qv_hf_path_attr(&sub, path, ".feature");
      QV_RETURN_NOT_OK(derive(&t->children[0], sub.s, depth + 1, &item, err));
      return qv_hf_make_list(t->id == QV_LARGE_LIST ? QV_HF_LARGE_LIST : QV_HF_LIST, item,
                             t->id == QV_FIXED_SIZE_LIST ? t->list_size : -1, out, err);
    }
    default: {
      char dtype[300];
      char tbuf[256];
      if (!type_to_dtype(t, dtype, sizeof dtype)) {
        qv_type_to_string(t, tbuf, sizeof tbuf);
        return qv_error_set(err, QV_ENOTSUP,
                            "%s: Arrow type %s has no datasets feature (datasets cannot load it "
                            "either)",
                            path, tbuf);
      }
      qv_hf_feature *f = qv_hf_node_new(QV_HF_VALUE, "Value");
      if (f == NULL || (f->dtype = qv_ds_strdup(dtype)) == NULL) {
        qv_hf_feature_free(f);
        return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
      }
      *out = f;
      return QV_OK;
    }
  }
}

qv_status qv_hf_feature_from_arrow(const qv_field *field, qv_hf_feature **out, qv_error *err) {
  qv_hf_path p;
  qv_hf_path_key(&p, "column", field->name);
  return derive(field, p.s, 0, out, err);
}

/* ------------------------------------------------------------------------ */
/* Resolving and checking a schema                                           */

qv_status qv_hf_features_resolve(const qv_schema *schema, qv_hf_feature **out,
                                 bool **out_from_metadata, qv_error *err) {
  return qv_hf_features_resolve_fingerprint(schema, out, out_from_metadata, NULL, err);
}

qv_status qv_hf_features_resolve_fingerprint(const qv_schema *schema, qv_hf_feature **out,
                                             bool **out_from_metadata, char **out_fingerprint,
                                             qv_error *err) {
  qv_hf_metadata md = {NULL, NULL};
  const qv_kv *kv = qv_metadata_find(&schema->metadata, QV_HF_METADATA_KEY);
  if (kv != NULL) QV_RETURN_NOT_OK(qv_hf_metadata_parse(kv->value, kv->value_len, &md, err));
  int32_t n = qv_schema_num_fields(schema);
  qv_hf_feature *res = qv_hf_node_new(QV_HF_DICT, NULL);
  bool *from = calloc(n > 0 ? (size_t)n : 1, sizeof *from);
  /* Hash lookups, so that n columns cost O(n) (a scan per column made
   * 1M columns take minutes): the metadata's features by key, and the
   * schema's names for the duplicate check. */
  qv_name_index by_key = {0}, seen = {0};
  bool md_dict =
      md.features != NULL && md.features->kind == QV_HF_DICT && md.features->keys != NULL;
  qv_status st = QV_OK;
  if (res == NULL || from == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  if (st == QV_OK && md_dict)
    st = qv_name_index_build(&by_key, qv_hf_feature_key_at, md.features, md.features->n_children,
                             err);
  if (st == QV_OK) st = qv_name_index_init(&seen, schema_name_at, schema, n, err);
  for (int32_t i = 0; i < n && st == QV_OK; i++) {
    const qv_field *field = qv_schema_field(schema, i);
    int32_t dup = -1;
    st = qv_name_index_add(&seen, i, &dup, err);
    if (st != QV_OK) break;
    if (dup >= 0) {
      st = qv_error_set(err, QV_EINVAL,
                        "column '%s' appears twice (datasets features cannot describe it)",
                        field->name);
      break;
    }
    int32_t k = md_dict ? qv_name_index_find(&by_key, field->name) : -1;
    const qv_hf_feature *mf = k >= 0 ? md.features->children[k] : NULL;
    bool match = false;
    if (mf != NULL) st = feature_matches(mf, field, &match, err);
    if (st != QV_OK) break;
    qv_hf_feature *c = NULL;
    if (match) {
      /* Taken from the parsed metadata, not copied: each key matches one
       * column at most (names are unique, checked above). */
      c = md.features->children[k];
      md.features->children[k] = NULL;
      from[i] = true;
    } else {
      st = qv_hf_feature_from_arrow(field, &c, err);
    }
    if (st == QV_OK && (st = qv_hf_add_child(res, field->name, c, err)) != QV_OK)
      qv_hf_feature_free(c);
  }
  qv_name_index_free(&by_key);
  qv_name_index_free(&seen);
  char *fp = md.fingerprint;
  md.fingerprint = NULL;
  qv_hf_metadata_reset(&md);
  if (st != QV_OK) {
    qv_hf_feature_free(res);
    free(from);
    free(fp);
    return st;
  }
  *out = res;
  if (out_fingerprint) *out_fingerprint = fp;
  else free(fp);
  if (out_from_metadata) *out_from_metadata = from;
  else free(from);
  return QV_OK;
}

qv_status qv_hf_features_check(const qv_hf_feature *features, const qv_schema *schema,
                               qv_error *err) {
  if (features == NULL || features->kind != QV_HF_DICT)
    return qv_error_set(err, QV_EARG, "features must be a dict of columns");
  int32_t n = qv_schema_num_fields(schema);
  if (features->n_children != n)
    return qv_error_set(err, QV_EINVAL, "features describe %d columns but the file has %d",
                        (int)features->n_children, (int)n);
  for (int32_t i = 0; i < n; i++) {
    const qv_field *field = qv_schema_field(schema, i);
    if (strcmp(features->keys[i], field->name) != 0)
      return qv_error_set(err, QV_EINVAL, "column %d: features name it '%s' but the file has '%s'",
                          (int)i, features->keys[i], field->name);
    bool match;
    QV_RETURN_NOT_OK(feature_matches(features->children[i], field, &match, err));
    if (match) continue;
    qv_type *t = NULL;
    qv_metadata md = {0, NULL};
    QV_RETURN_NOT_OK(implied(features->children[i], 0, &t, &md, err));
    char want[512], have[512];
    qv_type_to_string(t, want, sizeof want);
    qv_type_to_string(field->type, have, sizeof have);
    const char *why = "";
    if (strcmp(want, have) == 0)
      why = !field->nullable ? " (the file's column is not nullable)"
                             : " (the extension types differ)";
    qv_status st =
        qv_error_set(err, QV_EINVAL, "column '%s': features imply %s but the file has %s%s",
                     field->name, want, have, why);
    qv_type_unref(t);
    qv_metadata_reset(&md);
    return st;
  }
  return QV_OK;
}
