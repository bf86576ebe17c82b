/*
 * hf_features_json.c — Hugging Face `datasets` Features as JSON: parsing
 * the JSON kept under the "huggingface" schema metadata key (and in
 * dataset_info.json) into a qv_hf_feature tree, emitting it back
 * byte-for-byte as datasets writes it, repr(), equality, copying and
 * freeing the tree, and the whole "huggingface" metadata value. Dataset
 * layer; the Arrow side of the tree is hf_features_arrow.c. The rules
 * mirror datasets' features/features.py (generate_from_dict,
 * Features.__init__'s legacy-list fix-up, asdict); each quirk reproduced is
 * commented where it is handled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/name_index_internal.h"
#include "dataset/dataset_internal.h"
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

const char *const qv_hf_array_names[6] = {NULL, NULL, "Array2D", "Array3D", "Array4D", "Array5D"};

/* ------------------------------------------------------------------------ */
/* Nodes                                                                     */

qv_hf_feature *qv_hf_node_new(qv_hf_kind kind, const char *type_name) {
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
    d[i] = qv_ds_strdup(s[i]);
    if (d[i] == NULL) {
      free_strs(d, i);
      return NULL;
    }
  }
  return d;
}

qv_hf_feature *qv_hf_feature_copy(const qv_hf_feature *f) {
  if (f == NULL) return NULL;
  qv_hf_feature *c = qv_hf_node_new(f->kind, f->type_name);
  if (c == NULL) return NULL;
  c->length = f->length;
  c->ndims = f->ndims;
  memcpy(c->shape, f->shape, sizeof c->shape);
  c->n_names = f->n_names;
  if (f->dtype && (c->dtype = qv_ds_strdup(f->dtype)) == NULL) goto fail;
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
      if (f->keys && (c->keys[i] = qv_ds_strdup(f->keys[i])) == NULL) goto fail;
      if ((c->children[i] = qv_hf_feature_copy(f->children[i])) == NULL) goto fail;
    }
  }
  return c;
fail:
  qv_hf_feature_free(c);
  return NULL;
}

/* Append a child (and key, for dicts); takes `child` over on success. */
qv_status qv_hf_add_child(qv_hf_feature *f, const char *key, qv_hf_feature *child, qv_error *err) {
  if (f->n_children >= INT32_MAX - 1) return qv_error_set(err, QV_ENOMEM, "too many features");
  qv_hf_feature **ch = realloc(f->children, sizeof *ch * (size_t)(f->n_children + 1));
  if (ch == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  f->children = ch;
  if (key != NULL) {
    char **ks = realloc(f->keys, sizeof *ks * (size_t)(f->n_children + 1));
    if (ks == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
    f->keys = ks;
    if ((ks[f->n_children] = qv_ds_strdup(key)) == NULL)
      return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  }
  ch[f->n_children++] = child;
  return QV_OK;
}

const char *qv_hf_feature_key_at(const void *ctx, int32_t i) {
  return ((const qv_hf_feature *)ctx)->keys[i];
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
/* Parsing (generate_from_dict + Features.__init__)                          */

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

static qv_status get_string_list(const json_t *v, const char *path, const char *what, char ***out,
                                 int64_t *out_n, qv_error *err) {
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
      return qv_error_set(err, QV_EINVAL,
                          "%s: '%s' must be a list of strings, found %s at index %zu", path, what,
                          qv_hf_json_kind(e), i);
    }
    if ((s[i] = qv_ds_strdup(json_string_value(e))) == NULL) {
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
char **qv_hf_sorted_view(char *const *names, int64_t n) {
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
  if (!json_is_integer(len) || json_integer_value(len) < -1 || json_integer_value(len) > INT32_MAX)
    return qv_error_set(err, QV_EINVAL,
                        "%s: %s 'length' must be -1 or a non-negative 32-bit integer, found %s",
                        path, type_name, qv_hf_json_kind(len));
  *out = json_integer_value(len);
  return QV_OK;
}

qv_status qv_hf_make_list(qv_hf_kind kind, qv_hf_feature *item, int64_t length, qv_hf_feature **out,
                          qv_error *err) {
  qv_hf_feature *l = qv_hf_node_new(kind, kind == QV_HF_LIST ? "List" : "LargeList");
  if (l == NULL) {
    qv_hf_feature_free(item);
    return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  }
  l->length = kind == QV_HF_LIST ? length : -1;
  qv_status st = qv_hf_add_child(l, NULL, item, err);
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
  qv_hf_feature *d = qv_hf_node_new(QV_HF_DICT, NULL);
  if (d == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (features)");
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)obj, key, val) {
    qv_hf_path p;
    qv_hf_path_key(&p, path, key);
    qv_hf_feature *c = NULL;
    qv_status st = parse_node(val, p.s, depth + 1, &c, err);
    if (st == QV_OK) {
      st = qv_hf_add_child(d, key, c, err);
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

qv_status qv_hf_parse_array_shape(const json_t *obj, const char *path, qv_hf_feature *f,
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
                          path, f->type_name, (int)i, i == 0 ? " or null" : "", qv_hf_json_kind(d));
    f->shape[i] = json_integer_value(d);
  }
  return QV_OK;
}

qv_status qv_hf_require_dtype(const json_t *obj, const char *path, qv_hf_feature *f,
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
  if ((f->dtype = qv_ds_strdup(s)) == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  qv_type *t = NULL;
  qv_status st = qv_hf_dtype_to_type(f->dtype, path, &t, err);
  qv_type_unref(t);
  return st;
}

qv_status qv_hf_parse_typed(const json_t *obj, const char *type_name, const char *path, int depth,
                            qv_hf_feature **out, qv_error *err) {
  qv_status st = QV_OK;
  qv_hf_feature *f = NULL;
  qv_hf_path sub;
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
    qv_hf_path_attr(&sub, path, ".feature");
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
          st = qv_hf_make_list(QV_HF_LIST, item->children[i], length, &wrapped, err);
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
    return qv_hf_make_list(large ? QV_HF_LARGE_LIST : QV_HF_LIST, item, length, out, err);
  }
  if (strcmp(type_name, "Value") == 0) {
    if ((f = qv_hf_node_new(QV_HF_VALUE, "Value")) == NULL) goto oom;
    st = qv_hf_require_dtype(obj, path, f, err);
  } else if (strcmp(type_name, "ClassLabel") == 0) {
    if ((f = qv_hf_node_new(QV_HF_CLASS_LABEL, "ClassLabel")) == NULL) goto oom;
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
          if ((f->names[i] = qv_ds_strdup(tmp)) == NULL) goto oom;
          f->n_names = i + 1;
        }
      }
    } else {
      st = qv_error_set(err, QV_EINVAL, "%s: ClassLabel needs 'names' (or 'num_classes')", path);
    }
    if (st == QV_OK && f->n_names > 1) {
      char **v = qv_hf_sorted_view(f->names, f->n_names);
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
    if ((f = qv_hf_node_new(QV_HF_ARRAY, qv_hf_array_names[nd])) == NULL) goto oom;
    f->ndims = nd;
    st = qv_hf_parse_array_shape(obj, path, f, err);
    if (st == QV_OK) st = qv_hf_require_dtype(obj, path, f, err);
  } else if (strcmp(type_name, "Translation") == 0) {
    if ((f = qv_hf_node_new(QV_HF_TRANSLATION, "Translation")) == NULL) goto oom;
    const json_t *langs = json_object_get(obj, "languages");
    if (langs == NULL)
      st = qv_error_set(err, QV_EINVAL, "%s: Translation is missing 'languages'", path);
    else st = get_string_list(langs, path, "languages", &f->names, &f->n_names, err);
  } else if (strcmp(type_name, "TranslationVariableLanguages") == 0) {
    if ((f = qv_hf_node_new(QV_HF_TRANSLATION_VL, "TranslationVariableLanguages")) == NULL)
      goto oom;
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
    if ((f = qv_hf_node_new(pt->kind, pt->type_name)) == NULL) goto oom;
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
    qv_hf_path p;
    qv_hf_path_attr(&p, path, "[0]");
    qv_hf_feature *item = NULL;
    QV_RETURN_NOT_OK(parse_node(json_array_get(v, 0), p.s, depth + 1, &item, err));
    return qv_hf_make_list(QV_HF_LIST, item, -1, out, err);
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
  return qv_hf_parse_typed(v, json_string_value(type), path, depth, out, err);
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

qv_status qv_hf_features_parse(const char *text, int64_t len, qv_hf_feature **out, qv_error *err) {
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
    case QV_HF_VALUE: return finish_typed(set_or_fail(o, "dtype", json_string(f->dtype)), f);
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
  if (depth > QV_HF_MAX_DEPTH + 2)
    return qv_error_set(err, QV_EINVAL, "features nested too deeply");
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
        indexed = qv_name_index_build(&ix, qv_hf_feature_key_at, b, b->n_children, &e) == QV_OK;
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
    case QV_HF_TRANSLATION_VL: return strs_equal(a->names, a->n_names, b->names, b->n_names);
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
/* Schema metadata                                                           */

void qv_hf_metadata_reset(qv_hf_metadata *md) {
  if (md == NULL) return;
  qv_hf_feature_free(md->features);
  free(md->fingerprint);
  md->features = NULL;
  md->fingerprint = NULL;
}

qv_status qv_hf_metadata_parse(const char *text, int64_t len, qv_hf_metadata *out, qv_error *err) {
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
    if ((md.fingerprint = qv_ds_strdup(json_string_value(fp))) == NULL)
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
