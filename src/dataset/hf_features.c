/*
 * hf_features.c — Hugging Face `datasets` Features: parsing the JSON kept
 * under the "huggingface" schema metadata key into a qv_hf_feature tree,
 * emitting it back byte-for-byte as datasets writes it, the Arrow type each
 * feature implies, deriving features from Arrow types, and resolving a
 * file's schema against its features. Dataset layer; needs core (types,
 * metadata) only. The rules mirror datasets' features/features.py
 * (generate_from_dict, Features.__init__'s legacy-list fix-up,
 * get_nested_type, generate_from_arrow_type, Features.from_arrow_schema,
 * asdict); each quirk reproduced is commented where it is handled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/name_index_internal.h"
#include "dataset/hf_internal.h"
#include "quiver/fingerprint.h"

/* ------------------------------------------------------------------------ */
/* Parameters of the features whose only state is a few scalars              */

/* One dataclass field: its name and default as JSON text. */
typedef struct hf_param {
  const char *name;
  const char *default_json;
} hf_param;

typedef struct hf_plain_type {
  const char *type_name;
  qv_hf_kind kind;
  hf_param params[7]; /* in dataclass field order, before `id`; {NULL} ends */
} hf_plain_type;

/* Json and the media features (image.py, audio.py, video.py, pdf.py,
 * nifti.py, mesh.py, bio_sequence.py, bio_structure.py). */
static const hf_plain_type kPlainTypes[] = {
    {"Json", QV_HF_JSON, {{"decode", "true"}, {NULL, NULL}}},
    {"Image", QV_HF_MEDIA, {{"mode", "null"}, {"decode", "true"}, {NULL, NULL}}},
    {"Audio",
     QV_HF_MEDIA,
     {{"sampling_rate", "null"},
      {"decode", "true"},
      {"num_channels", "null"},
      {"stream_index", "null"},
      {NULL, NULL}}},
    {"Video",
     QV_HF_MEDIA,
     {{"decode", "true"},
      {"stream_index", "null"},
      {"dimension_order", "\"NCHW\""},
      {"num_ffmpeg_threads", "1"},
      {"device", "\"cpu\""},
      {"seek_mode", "\"exact\""},
      {NULL, NULL}}},
    {"Pdf", QV_HF_MEDIA, {{"decode", "true"}, {NULL, NULL}}},
    {"Nifti", QV_HF_MEDIA, {{"decode", "true"}, {NULL, NULL}}},
    {"Mesh", QV_HF_MEDIA, {{"decode", "true"}, {NULL, NULL}}},
    {"BioSequence", QV_HF_MEDIA, {{"format", "\"fasta\""}, {"decode", "true"}, {NULL, NULL}}},
    {"BioStructure", QV_HF_MEDIA, {{"format", "\"pdb\""}, {"decode", "true"}, {NULL, NULL}}},
};
#define N_PLAIN_TYPES (sizeof kPlainTypes / sizeof kPlainTypes[0])

static const hf_plain_type *plain_type(const char *type_name) {
  for (size_t i = 0; i < N_PLAIN_TYPES; i++)
    if (strcmp(kPlainTypes[i].type_name, type_name) == 0) return &kPlainTypes[i];
  return NULL;
}

static const char *const kArrayNames[6] = {NULL, NULL, "Array2D", "Array3D", "Array4D", "Array5D"};

/* Extension names pyarrow registers itself: a file column carrying one is
 * read as that extension type, which datasets has no feature for (except
 * arrow.json -> Json). */
static const char *const kCanonicalExtensions[] = {
    "arrow.uuid", "arrow.bool8", "arrow.fixed_shape_tensor", "arrow.variable_shape_tensor",
    "arrow.opaque", "arrow.parquet.variant"};

#define EXT_NAME_KEY "ARROW:extension:name"
#define EXT_META_KEY "ARROW:extension:metadata"
#define JSON_EXT_NAME "arrow.json"

/* ------------------------------------------------------------------------ */
/* Nodes                                                                     */

static char *dup_str(const char *s) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

static qv_hf_feature *node_new(qv_hf_kind kind, const char *type_name) {
  qv_hf_feature *f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  f->kind = kind;
  f->type_name = type_name;
  f->length = -1;
  return f;
}

static void free_strs(char **s, int64_t n) {
  if (s == NULL) return;
  for (int64_t i = 0; i < n; i++) free(s[i]);
  free(s);
}

void qv_hf_feature_free(qv_hf_feature *f) {
  if (f == NULL) return;
  free(f->dtype);
  free_strs(f->names, f->n_names);
  for (int32_t i = 0; i < f->n_children; i++) {
    if (f->keys) free(f->keys[i]);
    qv_hf_feature_free(f->children[i]);
  }
  free(f->keys);
  free(f->children);
  json_decref((json_t *)f->params_);
  free(f);
}

static char **copy_strs(char *const *s, int64_t n) {
  char **d = calloc(n > 0 ? (size_t)n : 1, sizeof *d);
  if (d == NULL) return NULL;
  for (int64_t i = 0; i < n; i++) {
    d[i] = dup_str(s[i]);
    if (d[i] == NULL) {
      free_strs(d, i);
      return NULL;
    }
  }
  return d;
}

qv_hf_feature *qv_hf_feature_copy(const qv_hf_feature *f) {
  if (f == NULL) return NULL;
  qv_hf_feature *c = node_new(f->kind, f->type_name);
  if (c == NULL) return NULL;
  c->length = f->length;
  c->ndims = f->ndims;
  memcpy(c->shape, f->shape, sizeof c->shape);
  c->n_names = f->n_names;
  if (f->dtype && (c->dtype = dup_str(f->dtype)) == NULL) goto fail;
  if (f->names && (c->names = copy_strs(f->names, f->n_names)) == NULL) {
    c->n_names = 0;
    goto fail;
  }
  if (f->params_ && (c->params_ = json_deep_copy((json_t *)f->params_)) == NULL) goto fail;
  if (f->n_children > 0) {
    c->children = calloc((size_t)f->n_children, sizeof *c->children);
    if (f->keys) c->keys = calloc((size_t)f->n_children, sizeof *c->keys);
    if (c->children == NULL || (f->keys && c->keys == NULL)) goto fail;
    for (int32_t i = 0; i < f->n_children; i++) {
      c->n_children = i + 1;
      if (f->keys && (c->keys[i] = dup_str(f->keys[i])) == NULL) goto fail;
      if ((c->children[i] = qv_hf_feature_copy(f->children[i])) == NULL) goto fail;
    }
  }
  return c;
fail:
  qv_hf_feature_free(c);
  return NULL;
}

/* Append a child (and key, for dicts); takes `child` over on success. */
static qv_status add_child(qv_hf_feature *f, const char *key, qv_hf_feature *child,
                           qv_error *err) {
  if (f->n_children >= INT32_MAX - 1) return qv_error_set(err, QV_ENOMEM, "too many features");
  qv_hf_feature **ch = realloc(f->children, sizeof *ch * (size_t)(f->n_children + 1));
  if (ch == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  f->children = ch;
  if (key != NULL) {
    char **ks = realloc(f->keys, sizeof *ks * (size_t)(f->n_children + 1));
    if (ks == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
    f->keys = ks;
    if ((ks[f->n_children] = dup_str(key)) == NULL)
      return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  }
  ch[f->n_children++] = child;
  return QV_OK;
}

static const char *feature_key_at(const void *ctx, int32_t i) {
  return ((const qv_hf_feature *)ctx)->keys[i];
}

static const char *type_child_name_at(const void *ctx, int32_t i) {
  return ((const qv_type *)ctx)->children[i].name;
}

static const char *schema_name_at(const void *ctx, int32_t i) {
  return qv_schema_field((const qv_schema *)ctx, i)->name;
}

const qv_hf_feature *qv_hf_dict_child(const qv_hf_feature *dict, int32_t hint, const char *name) {
  if (dict != NULL && dict->kind == QV_HF_DICT && dict->keys != NULL && hint >= 0 &&
      hint < dict->n_children && strcmp(dict->keys[hint], name) == 0)
    return dict->children[hint];
  return qv_hf_feature_get(dict, name);
}

const qv_hf_feature *qv_hf_feature_get(const qv_hf_feature *dict, const char *name) {
  if (dict == NULL || dict->kind != QV_HF_DICT || dict->keys == NULL) return NULL;
  for (int32_t i = 0; i < dict->n_children; i++)
    if (strcmp(dict->keys[i], name) == 0) return dict->children[i];
  return NULL;
}

static json_t *feature_id(const qv_hf_feature *f) {
  return f->params_ ? json_object_get((json_t *)f->params_, "id") : NULL;
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
static qv_status dtype_to_type(const char *dtype, const char *where, qv_type **out,
                               qv_error *err) {
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
      else
        snprintf(buf, cap, "timestamp[%s, tz=%s]", kUnitNames[t->unit], t->timezone);
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
    case QV_DICTIONARY:
      return t->value_type != NULL && type_to_dtype(t->value_type, buf, cap);
    default: return false;
  }
  snprintf(buf, cap, "%s", name);
  return true;
}

/* ------------------------------------------------------------------------ */
/* Parsing (generate_from_dict + Features.__init__)                          */

typedef struct parse_ctx {
  qv_error *err;
} parse_ctx;

/* Path of the node being parsed, for messages: features['a'].feature. */
typedef struct path_buf {
  char s[512];
} path_buf;

static void path_key(path_buf *dst, const char *base, const char *key) {
  int n = snprintf(dst->s, sizeof dst->s, "%s['%s']", base, key);
  if (n < 0 || (size_t)n >= sizeof dst->s) snprintf(dst->s + sizeof dst->s - 5, 5, "...");
}

static void path_attr(path_buf *dst, const char *base, const char *attr) {
  int n = snprintf(dst->s, sizeof dst->s, "%s%s", base, attr);
  if (n < 0 || (size_t)n >= sizeof dst->s) snprintf(dst->s + sizeof dst->s - 5, 5, "...");
}

static qv_status parse_node(const json_t *v, const char *path, int depth, qv_hf_feature **out,
                            qv_error *err);

/* Keep a non-null "id" in params_ (datasets keeps it and writes it back). */
static qv_status keep_id(qv_hf_feature *f, const json_t *obj, qv_error *err) {
  json_t *id = json_object_get(obj, "id");
  if (id == NULL || json_is_null(id)) return QV_OK;
  if (f->params_ == NULL && (f->params_ = json_object()) == NULL)
    return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  if (json_object_set((json_t *)f->params_, "id", id) != 0)
    return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  return QV_OK;
}

static qv_status get_string_list(const json_t *v, const char *path, const char *what,
                                 char ***out, int64_t *out_n, qv_error *err) {
  if (!json_is_array(v))
    return qv_error_set(err, QV_EINVAL, "%s: '%s' must be a list of strings, found %s", path, what,
                        qv_hf_json_kind(v));
  size_t n = json_array_size(v);
  char **s = calloc(n > 0 ? n : 1, sizeof *s);
  if (s == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(v, i);
    if (!json_is_string(e)) {
      free_strs(s, (int64_t)i);
      return qv_error_set(err, QV_EINVAL, "%s: '%s' must be a list of strings, found %s at index %zu",
                          path, what, qv_hf_json_kind(e), i);
    }
    if ((s[i] = dup_str(json_string_value(e))) == NULL) {
      free_strs(s, (int64_t)i);
      return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
    }
  }
  *out = s;
  *out_n = (int64_t)n;
  return QV_OK;
}

static int cmp_strp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted pointer copy of names for duplicate checks and sorting. */
static char **sorted_view(char *const *names, int64_t n) {
  char **v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
  if (v == NULL) return NULL;
  if (n > 0) memcpy(v, names, sizeof *v * (size_t)n);
  if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_strp);
  return v;
}

/* Only the listed keys (plus "_type") may appear: List, LargeList and
 * Sequence get the remaining JSON keys as keyword arguments, so anything
 * else is a TypeError in datasets. */
static qv_status only_keys(const json_t *obj, const char *path, const char *type_name,
                           const char *const *allowed, qv_error *err) {
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)obj, key, val) {
    if (strcmp(key, "_type") == 0) continue;
    bool ok = false;
    for (const char *const *a = allowed; *a; a++)
      if (strcmp(*a, key) == 0) ok = true;
    if (!ok)
      return qv_error_set(err, QV_EINVAL, "%s: %s got an unexpected key '%s'", path, type_name,
                          key);
  }
  return QV_OK;
}

static qv_status get_length(const json_t *obj, const char *path, const char *type_name,
                            int64_t *out, qv_error *err) {
  json_t *len = json_object_get(obj, "length");
  *out = -1;
  if (len == NULL) return QV_OK;
  if (!json_is_integer(len) || json_integer_value(len) < -1 ||
      json_integer_value(len) > INT32_MAX)
    return qv_error_set(err, QV_EINVAL,
                        "%s: %s 'length' must be -1 or a non-negative 32-bit integer, found %s",
                        path, type_name, qv_hf_json_kind(len));
  *out = json_integer_value(len);
  return QV_OK;
}

static qv_status make_list(qv_hf_kind kind, qv_hf_feature *item, int64_t length,
                           qv_hf_feature **out, qv_error *err) {
  qv_hf_feature *l = node_new(kind, kind == QV_HF_LIST ? "List" : "LargeList");
  if (l == NULL) {
    qv_hf_feature_free(item);
    return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  }
  l->length = kind == QV_HF_LIST ? length : -1;
  qv_status st = add_child(l, NULL, item, err);
  if (st != QV_OK) {
    qv_hf_feature_free(item);
    qv_hf_feature_free(l);
    return st;
  }
  *out = l;
  return QV_OK;
}

static qv_status parse_dict(const json_t *obj, const char *path, int depth, qv_hf_feature **out,
                            qv_error *err) {
  qv_hf_feature *d = node_new(QV_HF_DICT, NULL);
  if (d == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)obj, key, val) {
    path_buf p;
    path_key(&p, path, key);
    qv_hf_feature *c = NULL;
    qv_status st = parse_node(val, p.s, depth + 1, &c, err);
    if (st == QV_OK) {
      st = add_child(d, key, c, err);
      if (st != QV_OK) qv_hf_feature_free(c);
    }
    if (st != QV_OK) {
      qv_hf_feature_free(d);
      return st;
    }
  }
  *out = d;
  return QV_OK;
}

static qv_status parse_array_shape(const json_t *obj, const char *path, qv_hf_feature *f,
                                   qv_error *err) {
  const json_t *shape = json_object_get(obj, "shape");
  if (shape == NULL)
    return qv_error_set(err, QV_EINVAL, "%s: %s is missing 'shape'", path, f->type_name);
  if (!json_is_array(shape) || json_array_size(shape) != (size_t)f->ndims)
    return qv_error_set(err, QV_EINVAL, "%s: %s 'shape' must be a list of %d dimensions, found %s",
                        path, f->type_name, (int)f->ndims,
                        json_is_array(shape) ? "a list of another length" : qv_hf_json_kind(shape));
  for (int32_t i = 0; i < f->ndims; i++) {
    const json_t *d = json_array_get(shape, (size_t)i);
    if (i == 0 && json_is_null(d)) {
      f->shape[0] = -1;
      continue;
    }
    if (!json_is_integer(d) || json_integer_value(d) < 0)
      return qv_error_set(err, QV_EINVAL,
                          "%s: %s 'shape' dimension %d must be a non-negative integer%s, found %s",
                          path, f->type_name, (int)i, i == 0 ? " or null" : "",
                          qv_hf_json_kind(d));
    f->shape[i] = json_integer_value(d);
  }
  return QV_OK;
}

static qv_status require_dtype(const json_t *obj, const char *path, qv_hf_feature *f,
                               qv_error *err) {
  const json_t *dt = json_object_get(obj, "dtype");
  if (dt == NULL)
    return qv_error_set(err, QV_EINVAL, "%s: %s is missing 'dtype'", path, f->type_name);
  if (!json_is_string(dt))
    return qv_error_set(err, QV_EINVAL, "%s: %s 'dtype' must be a string, found %s", path,
                        f->type_name, qv_hf_json_kind(dt));
  const char *s = json_string_value(dt);
  /* Value normalises the two numpy-style aliases (Value.__post_init__). */
  if (f->kind == QV_HF_VALUE && strcmp(s, "double") == 0) s = "float64";
  if (f->kind == QV_HF_VALUE && strcmp(s, "float") == 0) s = "float32";
  if ((f->dtype = dup_str(s)) == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  qv_type *t = NULL;
  qv_status st = dtype_to_type(f->dtype, path, &t, err);
  qv_type_unref(t);
  return st;
}

static qv_status parse_typed(const json_t *obj, const char *type_name, const char *path,
                             int depth, qv_hf_feature **out, qv_error *err) {
  qv_status st = QV_OK;
  qv_hf_feature *f = NULL;
  path_buf sub;
  if (strcmp(type_name, "List") == 0 || strcmp(type_name, "Sequence") == 0 ||
      strcmp(type_name, "LargeList") == 0) {
    bool large = type_name[0] == 'L' && type_name[1] == 'a';
    bool seq = type_name[0] == 'S';
    static const char *const kListKeys[] = {"feature", "length", "id", NULL};
    static const char *const kLargeKeys[] = {"feature", "id", NULL};
    QV_RETURN_NOT_OK(only_keys(obj, path, type_name, large ? kLargeKeys : kListKeys, err));
    const json_t *feat = json_object_get(obj, "feature");
    if (feat == NULL)
      return qv_error_set(err, QV_EINVAL, "%s: %s is missing 'feature'", path, type_name);
    int64_t length = -1;
    if (!large) QV_RETURN_NOT_OK(get_length(obj, path, type_name, &length, err));
    path_attr(&sub, path, ".feature");
    qv_hf_feature *item = NULL;
    QV_RETURN_NOT_OK(parse_node(feat, sub.s, depth + 1, &item, err));
    /* The ids of List and LargeList do not survive Features.__init__ (its
     * _visit rebuilds them as List(feature, length=...)), so none is kept. */
    if (seq && item->kind == QV_HF_DICT) {
      /* Sequence of a dict becomes a dict of Lists (the TFDS layout),
       * unless every sub-feature is already a List. */
      bool all_lists = true;
      for (int32_t i = 0; i < item->n_children; i++)
        if (item->children[i]->kind != QV_HF_LIST) all_lists = false;
      if (!all_lists) {
        for (int32_t i = 0; i < item->n_children && st == QV_OK; i++) {
          qv_hf_feature *wrapped = NULL;
          st = make_list(QV_HF_LIST, item->children[i], length, &wrapped, err);
          item->children[i] = wrapped; /* NULL on failure: freed as such */
        }
        if (st != QV_OK) {
          qv_hf_feature_free(item);
          return st;
        }
        *out = item;
        return QV_OK;
      }
    }
    return make_list(large ? QV_HF_LARGE_LIST : QV_HF_LIST, item, length, out, err);
  }
  if (strcmp(type_name, "Value") == 0) {
    if ((f = node_new(QV_HF_VALUE, "Value")) == NULL) goto oom;
    st = require_dtype(obj, path, f, err);
  } else if (strcmp(type_name, "ClassLabel") == 0) {
    if ((f = node_new(QV_HF_CLASS_LABEL, "ClassLabel")) == NULL) goto oom;
    const json_t *names = json_object_get(obj, "names");
    const json_t *num = json_object_get(obj, "num_classes");
    if (names != NULL && !json_is_null(names)) {
      st = get_string_list(names, path, "names", &f->names, &f->n_names, err);
    } else if (num != NULL && json_is_integer(num)) {
      /* datasets ignores num_classes in from_dict (an InitVar); files from
       * datasets 1.x carry it alone, so quiver accepts it as ClassLabel(
       * num_classes=N) would: names "0".."N-1". */
      int64_t k = json_integer_value(num);
      if (k < 0 || k > (1 << 20)) {
        st = qv_error_set(err, QV_EINVAL,
                          "%s: ClassLabel 'num_classes' must be in [0, 1048576], found %lld", path,
                          (long long)k);
      } else {
        f->names = calloc(k > 0 ? (size_t)k : 1, sizeof *f->names);
        if (f->names == NULL) goto oom;
        for (int64_t i = 0; i < k; i++) {
          char tmp[24];
          snprintf(tmp, sizeof tmp, "%lld", (long long)i);
          if ((f->names[i] = dup_str(tmp)) == NULL) goto oom;
          f->n_names = i + 1;
        }
      }
    } else {
      st = qv_error_set(err, QV_EINVAL, "%s: ClassLabel needs 'names' (or 'num_classes')", path);
    }
    if (st == QV_OK && f->n_names > 1) {
      char **v = sorted_view(f->names, f->n_names);
      if (v == NULL) goto oom;
      for (int64_t i = 1; i < f->n_names && st == QV_OK; i++)
        if (strcmp(v[i - 1], v[i]) == 0)
          st = qv_error_set(err, QV_EINVAL, "%s: ClassLabel label name '%s' is duplicated", path,
                            v[i]);
      free(v);
    }
  } else if (strncmp(type_name, "Array", 5) == 0 && type_name[5] >= '2' && type_name[5] <= '5' &&
             strcmp(type_name + 6, "D") == 0) {
    int nd = type_name[5] - '0';
    if ((f = node_new(QV_HF_ARRAY, kArrayNames[nd])) == NULL) goto oom;
    f->ndims = nd;
    st = parse_array_shape(obj, path, f, err);
    if (st == QV_OK) st = require_dtype(obj, path, f, err);
  } else if (strcmp(type_name, "Translation") == 0) {
    if ((f = node_new(QV_HF_TRANSLATION, "Translation")) == NULL) goto oom;
    const json_t *langs = json_object_get(obj, "languages");
    if (langs == NULL)
      st = qv_error_set(err, QV_EINVAL, "%s: Translation is missing 'languages'", path);
    else
      st = get_string_list(langs, path, "languages", &f->names, &f->n_names, err);
  } else if (strcmp(type_name, "TranslationVariableLanguages") == 0) {
    if ((f = node_new(QV_HF_TRANSLATION_VL, "TranslationVariableLanguages")) == NULL) goto oom;
    f->n_names = -1;
    const json_t *langs = json_object_get(obj, "languages");
    /* __post_init__: sorted(set(languages)) if languages else None. */
    if (langs != NULL && !json_is_null(langs) &&
        !(json_is_array(langs) && json_array_size(langs) == 0)) {
      char **names = NULL;
      int64_t n = 0;
      st = get_string_list(langs, path, "languages", &names, &n, err);
      if (st == QV_OK) {
        qsort(names, (size_t)n, sizeof *names, cmp_strp);
        int64_t m = 0;
        for (int64_t i = 0; i < n; i++) {
          if (m > 0 && strcmp(names[m - 1], names[i]) == 0) {
            free(names[i]);
            continue;
          }
          names[m++] = names[i];
        }
        f->names = names;
        f->n_names = m;
      }
    }
  } else {
    const hf_plain_type *pt = plain_type(type_name);
    if (pt == NULL)
      return qv_error_set(err, QV_ENOTSUP, "%s: feature type '%s' is not supported", path,
                          type_name);
    if ((f = node_new(pt->kind, pt->type_name)) == NULL) goto oom;
    json_t *params = json_object();
    if (params == NULL) goto oom;
    f->params_ = params;
    for (const hf_param *p = pt->params; p->name && st == QV_OK; p++) {
      json_t *v = json_object_get(obj, p->name);
      json_t *val = v ? json_incref(v) : json_loads(p->default_json, JSON_DECODE_ANY, NULL);
      if (val == NULL || json_object_set_new(params, p->name, val) != 0) goto oom;
    }
  }
  if (st == QV_OK) st = keep_id(f, obj, err);
  if (st != QV_OK) {
    qv_hf_feature_free(f);
    return st;
  }
  *out = f;
  return QV_OK;
oom:
  qv_hf_feature_free(f);
  return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
}

static qv_status parse_node(const json_t *v, const char *path, int depth, qv_hf_feature **out,
                            qv_error *err) {
  if (depth > QV_HF_MAX_DEPTH)
    return qv_error_set(err, QV_EINVAL, "%s: features nested deeper than %d levels", path,
                        QV_HF_MAX_DEPTH);
  if (json_is_array(v)) {
    /* Legacy [feature]: Features.__init__ turns it into List(feature[0]). */
    if (json_array_size(v) == 0)
      return qv_error_set(err, QV_EINVAL, "%s: a list feature must hold one feature, found []",
                          path);
    path_buf p;
    path_attr(&p, path, "[0]");
    qv_hf_feature *item = NULL;
    QV_RETURN_NOT_OK(parse_node(json_array_get(v, 0), p.s, depth + 1, &item, err));
    return make_list(QV_HF_LIST, item, -1, out, err);
  }
  if (!json_is_object(v))
    return qv_error_set(err, QV_EINVAL,
                        "%s: a feature must be an object or a one-element list, found %s", path,
                        qv_hf_json_kind(v));
  const json_t *type = json_object_get(v, "_type");
  /* No "_type", or a "_type" that is itself a dict (a column named
   * "_type"): a dict of features. */
  if (type == NULL || json_is_object(type)) return parse_dict(v, path, depth, out, err);
  if (!json_is_string(type))
    return qv_error_set(err, QV_EINVAL, "%s: '_type' must be a string, found %s", path,
                        qv_hf_json_kind(type));
  return parse_typed(v, json_string_value(type), path, depth, out, err);
}

qv_status qv_hf_features_from_json(const json_t *obj, const char *where, qv_hf_feature **out,
                                   qv_error *err) {
  if (!json_is_object(obj))
    return qv_error_set(err, QV_EINVAL, "%s: must be an object of columns, found %s", where,
                        qv_hf_json_kind(obj));
  const json_t *type = json_object_get(obj, "_type");
  if (type != NULL && !json_is_object(type))
    return qv_error_set(err, QV_EINVAL,
                        "%s: must be an object of columns, found a single feature ('_type')",
                        where);
  return parse_dict(obj, where, 0, out, err);
}

qv_status qv_hf_features_parse(const char *text, int64_t len, qv_hf_feature **out,
                               qv_error *err) {
  json_t *v = NULL;
  QV_RETURN_NOT_OK(qv_hf_json_load("features", text, len, &v, err));
  qv_status st = qv_hf_features_from_json(v, "features", out, err);
  json_decref(v);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Emission (Features.to_dict through datasets' asdict)                      */

static json_t *str_list_json(char *const *s, int64_t n) {
  json_t *a = json_array();
  for (int64_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, json_string(s[i])) != 0) {
      json_decref(a);
      return NULL;
    }
  return a;
}

/* Set key (stealing v); on failure drops o and returns NULL. */
static json_t *set_or_fail(json_t *o, const char *key, json_t *v) {
  if (o == NULL || v == NULL || json_object_set_new(o, key, v) != 0) {
    json_decref(o);
    if (o == NULL) json_decref(v);
    return NULL;
  }
  return o;
}

static json_t *finish_typed(json_t *o, const qv_hf_feature *f) {
  json_t *id = feature_id(f);
  if (o && id) o = set_or_fail(o, "id", json_incref(id));
  if (o) o = set_or_fail(o, "_type", json_string(f->type_name));
  return o;
}

json_t *qv_hf_feature_to_json(const qv_hf_feature *f) {
  json_t *o = json_object();
  if (o == NULL) return NULL;
  switch (f->kind) {
    case QV_HF_DICT:
      for (int32_t i = 0; o && i < f->n_children; i++)
        o = set_or_fail(o, f->keys[i], qv_hf_feature_to_json(f->children[i]));
      return o;
    case QV_HF_VALUE:
      return finish_typed(set_or_fail(o, "dtype", json_string(f->dtype)), f);
    case QV_HF_CLASS_LABEL:
      return finish_typed(set_or_fail(o, "names", str_list_json(f->names, f->n_names)), f);
    case QV_HF_LIST:
      o = set_or_fail(o, "feature", qv_hf_feature_to_json(f->children[0]));
      if (o && f->length != -1) o = set_or_fail(o, "length", json_integer(f->length));
      return finish_typed(o, f);
    case QV_HF_LARGE_LIST:
      return finish_typed(set_or_fail(o, "feature", qv_hf_feature_to_json(f->children[0])), f);
    case QV_HF_ARRAY: {
      json_t *shape = json_array();
      for (int32_t i = 0; shape && i < f->ndims; i++)
        if (json_array_append_new(shape, f->shape[i] < 0 ? json_null() : json_integer(f->shape[i])))
          shape = (json_decref(shape), NULL);
      o = set_or_fail(o, "shape", shape);
      if (o) o = set_or_fail(o, "dtype", json_string(f->dtype));
      return finish_typed(o, f);
    }
    case QV_HF_TRANSLATION:
      return finish_typed(set_or_fail(o, "languages", str_list_json(f->names, f->n_names)), f);
    case QV_HF_TRANSLATION_VL:
      if (f->n_names >= 0) {
        o = set_or_fail(o, "languages", str_list_json(f->names, f->n_names));
        if (o) o = set_or_fail(o, "num_languages", json_integer(f->n_names));
      }
      return finish_typed(o, f);
    case QV_HF_JSON:
    case QV_HF_MEDIA: {
      const hf_plain_type *pt = plain_type(f->type_name);
      for (const hf_param *p = pt->params; o && p->name; p++) {
        json_t *v = json_object_get((json_t *)f->params_, p->name);
        json_t *def = json_loads(p->default_json, JSON_DECODE_ANY, NULL);
        bool is_default = v == NULL || qv_hf_json_py_equal(v, def);
        json_decref(def);
        if (!is_default) o = set_or_fail(o, p->name, json_incref(v));
      }
      return finish_typed(o, f);
    }
  }
  json_decref(o);
  return NULL;
}

qv_status qv_hf_feature_emit(const qv_hf_feature *f, qv_hf_json_style style, qv_strbuf *out,
                             qv_error *err) {
  json_t *j = qv_hf_feature_to_json(f);
  if (j == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (features JSON)");
  qv_status st = qv_pyjson_dump(out, j, style == QV_HF_JSON_INDENT2 ? 2 : -1, false, err);
  json_decref(j);
  return st;
}

/* ------------------------------------------------------------------------ */
/* repr()                                                                    */

static qv_status repr_str(qv_strbuf *out, const char *s, qv_error *err) {
  char q = (strchr(s, '\'') && !strchr(s, '"')) ? '"' : '\'';
  QV_RETURN_NOT_OK(qv_strbuf_append_char(out, q, err));
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '\\' || *p == (unsigned char)q) {
      QV_RETURN_NOT_OK(qv_strbuf_append_char(out, '\\', err));
      QV_RETURN_NOT_OK(qv_strbuf_append_char(out, (char)*p, err));
    } else if (*p == '\n') {
      QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "\\n", err));
    } else if (*p == '\t') {
      QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "\\t", err));
    } else if (*p == '\r') {
      QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "\\r", err));
    } else if (*p < 0x20 || *p == 0x7f) {
      QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "\\x%02x", *p));
    } else {
      QV_RETURN_NOT_OK(qv_strbuf_append_char(out, (char)*p, err));
    }
  }
  return qv_strbuf_append_char(out, q, err);
}

static qv_status repr_json(qv_strbuf *out, const json_t *v, qv_error *err) {
  switch (json_typeof(v)) {
    case JSON_NULL: return qv_strbuf_append_str(out, "None", err);
    case JSON_TRUE: return qv_strbuf_append_str(out, "True", err);
    case JSON_FALSE: return qv_strbuf_append_str(out, "False", err);
    case JSON_STRING: return repr_str(out, json_string_value(v), err);
    case JSON_INTEGER: return qv_strbuf_printf(out, err, "%lld", (long long)json_integer_value(v));
    case JSON_REAL: return qv_format_double(out, json_real_value(v), err);
    default: return qv_pyjson_dump(out, v, -1, false, err);
  }
}

static qv_status repr_names(qv_strbuf *out, char *const *names, int64_t n, qv_error *err) {
  QV_RETURN_NOT_OK(qv_strbuf_append_char(out, '[', err));
  for (int64_t i = 0; i < n; i++) {
    if (i) QV_RETURN_NOT_OK(qv_strbuf_append_str(out, ", ", err));
    QV_RETURN_NOT_OK(repr_str(out, names[i], err));
  }
  return qv_strbuf_append_char(out, ']', err);
}

static qv_status repr_node(const qv_hf_feature *f, qv_strbuf *out, int depth, qv_error *err) {
  if (depth > QV_HF_MAX_DEPTH + 2) return qv_error_set(err, QV_EINVAL, "features nested too deeply");
  switch (f->kind) {
    case QV_HF_DICT:
      QV_RETURN_NOT_OK(qv_strbuf_append_char(out, '{', err));
      for (int32_t i = 0; i < f->n_children; i++) {
        if (i) QV_RETURN_NOT_OK(qv_strbuf_append_str(out, ", ", err));
        QV_RETURN_NOT_OK(repr_str(out, f->keys[i], err));
        QV_RETURN_NOT_OK(qv_strbuf_append_str(out, ": ", err));
        QV_RETURN_NOT_OK(repr_node(f->children[i], out, depth + 1, err));
      }
      return qv_strbuf_append_char(out, '}', err);
    case QV_HF_VALUE:
      QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "Value(", err));
      QV_RETURN_NOT_OK(repr_str(out, f->dtype, err));
      return qv_strbuf_append_char(out, ')', err);
    case QV_HF_CLASS_LABEL:
      QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "ClassLabel(names=", err));
      QV_RETURN_NOT_OK(repr_names(out, f->names, f->n_names, err));
      return qv_strbuf_append_char(out, ')', err);
    case QV_HF_LIST:
    case QV_HF_LARGE_LIST:
      QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "%s(", f->type_name));
      QV_RETURN_NOT_OK(repr_node(f->children[0], out, depth + 1, err));
      if (f->kind == QV_HF_LIST && f->length != -1)
        QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, ", length=%lld", (long long)f->length));
      return qv_strbuf_append_char(out, ')', err);
    case QV_HF_ARRAY:
      QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "%s(shape=(", f->type_name));
      for (int32_t i = 0; i < f->ndims; i++) {
        if (i) QV_RETURN_NOT_OK(qv_strbuf_append_str(out, ", ", err));
        if (f->shape[i] < 0) QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "None", err));
        else QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "%lld", (long long)f->shape[i]));
      }
      QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "), dtype=", err));
      QV_RETURN_NOT_OK(repr_str(out, f->dtype, err));
      return qv_strbuf_append_char(out, ')', err);
    case QV_HF_TRANSLATION:
      QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "Translation(languages=", err));
      QV_RETURN_NOT_OK(repr_names(out, f->names, f->n_names, err));
      return qv_strbuf_append_char(out, ')', err);
    case QV_HF_TRANSLATION_VL:
      QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "TranslationVariableLanguages(languages=", err));
      if (f->n_names < 0) {
        QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "None, num_languages=None)", err));
        return QV_OK;
      }
      QV_RETURN_NOT_OK(repr_names(out, f->names, f->n_names, err));
      return qv_strbuf_printf(out, err, ", num_languages=%lld)", (long long)f->n_names);
    case QV_HF_JSON:
    case QV_HF_MEDIA: {
      const hf_plain_type *pt = plain_type(f->type_name);
      QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "%s(", f->type_name));
      for (const hf_param *p = pt->params; p->name; p++) {
        if (p != pt->params) QV_RETURN_NOT_OK(qv_strbuf_append_str(out, ", ", err));
        QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "%s=", p->name));
        QV_RETURN_NOT_OK(repr_json(out, json_object_get((json_t *)f->params_, p->name), err));
      }
      return qv_strbuf_append_char(out, ')', err);
    }
  }
  return QV_OK;
}

qv_status qv_hf_feature_repr(const qv_hf_feature *f, qv_strbuf *out, qv_error *err) {
  return repr_node(f, out, 0, err);
}

/* ------------------------------------------------------------------------ */
/* Equality                                                                  */

static bool strs_equal(char *const *a, int64_t na, char *const *b, int64_t nb) {
  if (na != nb) return false;
  for (int64_t i = 0; i < na; i++)
    if (strcmp(a[i], b[i]) != 0) return false;
  return true;
}

/* Children of two dicts with as many children, equal by key whatever
 * their order. Keys at the same place (the usual case) need no lookup;
 * otherwise b's keys are indexed once (a scan per key only when that
 * index cannot be allocated). */
static bool dict_children_equal(const qv_hf_feature *a, const qv_hf_feature *b) {
  if (a->n_children == 0) return true;
  if (a->keys == NULL || b->keys == NULL) return false;
  qv_name_index ix = {0};
  bool indexed = false, eq = true;
  for (int32_t i = 0; i < a->n_children && eq; i++) {
    const qv_hf_feature *bc = NULL;
    if (strcmp(a->keys[i], b->keys[i]) == 0) {
      bc = b->children[i];
    } else {
      if (!indexed) {
        qv_error e;
        indexed = qv_name_index_build(&ix, feature_key_at, b, b->n_children, &e) == QV_OK;
      }
      int32_t k = indexed ? qv_name_index_find(&ix, a->keys[i]) : -1;
      bc = indexed ? (k >= 0 ? b->children[k] : NULL) : qv_hf_feature_get(b, a->keys[i]);
    }
    eq = qv_hf_feature_equals(a->children[i], bc);
  }
  qv_name_index_free(&ix);
  return eq;
}

bool qv_hf_feature_equals(const qv_hf_feature *a, const qv_hf_feature *b) {
  if (a == b) return true;
  if (a == NULL || b == NULL || a->kind != b->kind) return false;
  if (a->kind != QV_HF_DICT && strcmp(a->type_name, b->type_name) != 0) return false;
  if (!qv_hf_json_py_equal(feature_id(a), feature_id(b))) return false;
  switch (a->kind) {
    case QV_HF_DICT: /* Python dict equality ignores key order */
      if (a->n_children != b->n_children) return false;
      return dict_children_equal(a, b);
    case QV_HF_VALUE: return strcmp(a->dtype, b->dtype) == 0;
    case QV_HF_CLASS_LABEL:
    case QV_HF_TRANSLATION:
    case QV_HF_TRANSLATION_VL:
      return strs_equal(a->names, a->n_names, b->names, b->n_names);
    case QV_HF_LIST:
      if (a->length != b->length) return false;
      return qv_hf_feature_equals(a->children[0], b->children[0]);
    case QV_HF_LARGE_LIST: return qv_hf_feature_equals(a->children[0], b->children[0]);
    case QV_HF_ARRAY:
      if (a->ndims != b->ndims || strcmp(a->dtype, b->dtype) != 0) return false;
      for (int32_t i = 0; i < a->ndims; i++)
        if (a->shape[i] != b->shape[i]) return false;
      return true;
    case QV_HF_JSON:
    case QV_HF_MEDIA: {
      const hf_plain_type *pt = plain_type(a->type_name);
      for (const hf_param *p = pt->params; p->name; p++)
        if (!qv_hf_json_py_equal(json_object_get((json_t *)a->params_, p->name),
                                 json_object_get((json_t *)b->params_, p->name)))
          return false;
      return true;
    }
  }
  return false;
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
  if (depth > QV_HF_MAX_DEPTH + 2) return qv_error_set(err, QV_EINVAL, "features nested too deeply");
  qv_type *t = NULL;
  qv_status st = QV_OK;
  switch (f->kind) {
    case QV_HF_VALUE: return dtype_to_type(f->dtype, "Value", out, err);
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
      st = dtype_to_type(f->dtype, f->type_name, &inner, err);
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
      char **v = sorted_view(f->names, f->n_names);
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
  if (starts_with(name, QV_HF_ARRAY_EXT_PREFIX) && strlen(name) == strlen(QV_HF_ARRAY_EXT_PREFIX) +
                                                                      1 +
                                                                      strlen(QV_HF_ARRAY_EXT_SUFFIX))
    return name;
  return NULL; /* unregistered: pyarrow reads the storage type */
}

static int array_ext_ndims(const char *name) {
  size_t p = strlen(QV_HF_ARRAY_EXT_PREFIX);
  if (!starts_with(name, QV_HF_ARRAY_EXT_PREFIX) || strlen(name) != p + 1 + strlen(QV_HF_ARRAY_EXT_SUFFIX) ||
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
  qv_hf_feature *f = node_new(QV_HF_ARRAY, kArrayNames[ndims]);
  qv_status st = QV_OK;
  if (f == NULL) {
    json_decref(v);
    return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  }
  f->ndims = ndims;
  if (!json_is_array(v) || json_array_size(v) != 2) {
    st = qv_error_set(err, QV_EINVAL,
                      "%s: extension %s metadata must be [shape, dtype], found '%.*s'", path,
                      qv_field_extension_name(field), (int)(kv->value_len > 80 ? 80 : kv->value_len),
                      kv->value);
  } else {
    json_t *obj = json_object();
    if (obj == NULL || json_object_set(obj, "shape", json_array_get(v, 0)) != 0 ||
        json_object_set(obj, "dtype", json_array_get(v, 1)) != 0)
      st = qv_error_set(err, QV_ENOMEM, "out of memory (features)");
    if (st == QV_OK) st = parse_array_shape(obj, path, f, err);
    if (st == QV_OK) st = require_dtype(obj, path, f, err);
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
      qv_status st = obj ? parse_typed(obj, "Json", path, depth, out, err)
                         : qv_error_set(err, QV_ENOMEM, "out of memory");
      json_decref(obj);
      return st;
    }
    return qv_error_set(err, QV_ENOTSUP, "%s: extension type %s has no datasets feature", path,
                        ext);
  }
  qv_status st = QV_OK;
  path_buf sub;
  switch (t->id) {
    case QV_STRUCT: {
      qv_hf_feature *d = node_new(QV_HF_DICT, NULL);
      if (d == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
      qv_name_index seen = {0};
      st = qv_name_index_init(&seen, type_child_name_at, t, t->n_children, err);
      for (int32_t i = 0; i < t->n_children && st == QV_OK; i++) {
        qv_hf_feature *c = NULL;
        int32_t dup = -1;
        path_key(&sub, path, t->children[i].name);
        st = derive(&t->children[i], sub.s, depth + 1, &c, err);
        if (st == QV_OK) st = qv_name_index_add(&seen, i, &dup, err);
        if (st == QV_OK && dup >= 0) {
          qv_hf_feature_free(c);
          st = qv_error_set(err, QV_EINVAL, "%s: duplicate field name", sub.s);
        } else if (st != QV_OK || (st = add_child(d, t->children[i].name, c, err)) != QV_OK) {
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
      path_attr(&sub, path, ".feature");
      QV_RETURN_NOT_OK(derive(&t->children[0], sub.s, depth + 1, &item, err));
      return make_list(t->id == QV_LARGE_LIST ? QV_HF_LARGE_LIST : QV_HF_LIST, item,
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
      qv_hf_feature *f = node_new(QV_HF_VALUE, "Value");
      if (f == NULL || (f->dtype = dup_str(dtype)) == NULL) {
        qv_hf_feature_free(f);
        return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
      }
      *out = f;
      return QV_OK;
    }
  }
}

qv_status qv_hf_feature_from_arrow(const qv_field *field, qv_hf_feature **out, qv_error *err) {
  path_buf p;
  path_key(&p, "column", field->name);
  return derive(field, p.s, 0, out, err);
}

/* ------------------------------------------------------------------------ */
/* Schema metadata                                                           */

void qv_hf_metadata_reset(qv_hf_metadata *md) {
  if (md == NULL) return;
  qv_hf_feature_free(md->features);
  free(md->fingerprint);
  md->features = NULL;
  md->fingerprint = NULL;
}

qv_status qv_hf_metadata_parse(const char *text, int64_t len, qv_hf_metadata *out,
                               qv_error *err) {
  json_t *v = NULL;
  QV_RETURN_NOT_OK(qv_hf_json_load("huggingface metadata", text, len, &v, err));
  qv_hf_metadata md = {NULL, NULL};
  qv_status st = QV_OK;
  if (!json_is_object(v)) {
    st = qv_error_set(err, QV_EINVAL, "huggingface metadata: must be an object, found %s",
                      qv_hf_json_kind(v));
    goto done;
  }
  json_t *info = json_object_get(v, "info");
  if (info != NULL && !json_is_null(info)) {
    if (!json_is_object(info)) {
      st = qv_error_set(err, QV_EINVAL, "huggingface metadata: 'info' must be an object, found %s",
                        qv_hf_json_kind(info));
      goto done;
    }
    json_t *feats = json_object_get(info, "features");
    if (feats != NULL && !json_is_null(feats))
      st = qv_hf_features_from_json(feats, "huggingface metadata: features", &md.features, err);
    if (st != QV_OK) goto done;
  }
  json_t *fp = json_object_get(v, "fingerprint");
  if (fp != NULL && !json_is_null(fp)) {
    if (!json_is_string(fp)) {
      st = qv_error_set(err, QV_EINVAL,
                        "huggingface metadata: 'fingerprint' must be a string, found %s",
                        qv_hf_json_kind(fp));
      goto done;
    }
    /* A fingerprint becomes part of cache file names: validate it. */
    if (qv_fingerprint_validate(json_string_value(fp), err) != QV_OK) {
      st = qv_error_prefix(err, QV_EINVAL, "huggingface metadata: ");
      goto done;
    }
    if ((md.fingerprint = dup_str(json_string_value(fp))) == NULL)
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
done:
  json_decref(v);
  if (st != QV_OK) qv_hf_metadata_reset(&md);
  else *out = md;
  return st;
}

qv_status qv_hf_metadata_emit(const qv_hf_feature *features, const char *fingerprint,
                              qv_strbuf *out, qv_error *err) {
  /* ArrowWriter._build_metadata: json.dumps({"info": {"features": ...},
   * "fingerprint": ...}) */
  QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "{\"info\": {\"features\": ", err));
  if (features == NULL) QV_RETURN_NOT_OK(qv_strbuf_append_str(out, "null", err));
  else QV_RETURN_NOT_OK(qv_hf_feature_emit(features, QV_HF_JSON_COMPACT, out, err));
  QV_RETURN_NOT_OK(qv_strbuf_append_char(out, '}', err));
  if (fingerprint != NULL) {
    QV_RETURN_NOT_OK(qv_strbuf_append_str(out, ", \"fingerprint\": ", err));
    QV_RETURN_NOT_OK(qv_pyjson_string(out, fingerprint, strlen(fingerprint), err));
  }
  return qv_strbuf_append_char(out, '}', err);
}

/* ------------------------------------------------------------------------ */
/* Resolving and checking a schema                                           */

qv_status qv_hf_features_resolve(const qv_schema *schema, qv_hf_feature **out,
                                 bool **out_from_metadata, qv_error *err) {
  qv_hf_metadata md = {NULL, NULL};
  const qv_kv *kv = qv_metadata_find(&schema->metadata, QV_HF_METADATA_KEY);
  if (kv != NULL) QV_RETURN_NOT_OK(qv_hf_metadata_parse(kv->value, kv->value_len, &md, err));
  int32_t n = qv_schema_num_fields(schema);
  qv_hf_feature *res = node_new(QV_HF_DICT, NULL);
  bool *from = calloc(n > 0 ? (size_t)n : 1, sizeof *from);
  /* Hash lookups, so that n columns cost O(n) (a scan per column made
   * 1M columns take minutes): the metadata's features by key, and the
   * schema's names for the duplicate check. */
  qv_name_index by_key = {0}, seen = {0};
  bool md_dict = md.features != NULL && md.features->kind == QV_HF_DICT &&
                 md.features->keys != NULL;
  qv_status st = QV_OK;
  if (res == NULL || from == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  if (st == QV_OK && md_dict)
    st = qv_name_index_build(&by_key, feature_key_at, md.features, md.features->n_children, err);
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
      c = qv_hf_feature_copy(mf);
      if (c == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory (features)");
      from[i] = true;
    } else {
      st = qv_hf_feature_from_arrow(field, &c, err);
    }
    if (st == QV_OK && (st = add_child(res, field->name, c, err)) != QV_OK) qv_hf_feature_free(c);
  }
  qv_name_index_free(&by_key);
  qv_name_index_free(&seen);
  qv_hf_metadata_reset(&md);
  if (st != QV_OK) {
    qv_hf_feature_free(res);
    free(from);
    return st;
  }
  *out = res;
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
    qv_status st = qv_error_set(err, QV_EINVAL, "column '%s': features imply %s but the file has %s%s",
                                field->name, want, have, why);
    qv_type_unref(t);
    qv_metadata_reset(&md);
    return st;
  }
  return QV_OK;
}
