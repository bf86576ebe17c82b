/*
 * hf_layout.c — the on-disk layouts of Hugging Face `datasets`: state.json,
 * dataset_info.json and dataset_dict.json (parsed, validated and written
 * byte-for-byte as datasets writes them), shard naming and shard-count
 * planning of save_to_disk, and classification of a path as a single Arrow
 * file, a save_to_disk Dataset or DatasetDict directory, or a cache
 * directory. Dataset layer; uses core, the ipc reader (to tell indices
 * mappings from data files) and hf_features.c.
 *
 * Every name read from these files is untrusted: data file names and split
 * names must stay inside their directory (no absolute paths, no '..', no
 * symlink leading out), and the JSON files themselves are size-bounded.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dataset/hf_internal.h"
#include "quiver/fingerprint.h"
#include "quiver/ipc.h"

/* Largest state.json / dataset_info.json / dataset_dict.json read. */
#define HF_MAX_JSON_FILE (64 << 20)

static char *dup_str(const char *s) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

static void free_strs(char **s, int64_t n) {
  if (s == NULL) return;
  for (int64_t i = 0; i < n; i++) free(s[i]);
  free(s);
}

/* ------------------------------------------------------------------------ */
/* Names that must stay inside their directory                               */

qv_status qv_hf_check_relative_name(const char *what, const char *name, qv_error *err) {
  if (name[0] == '\0') return qv_error_set(err, QV_EINVAL, "%s is empty", what);
  if (name[0] == '/')
    return qv_error_set(err, QV_EINVAL,
                        "%s '%s' escapes the dataset directory (absolute path)", what, name);
  const char *p = name;
  while (*p) {
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return qv_error_set(err, QV_EINVAL,
                          "%s '%s' escapes the dataset directory (contains '..')", what, name);
    p += n;
    while (*p == '/') p++;
  }
  return QV_OK;
}

/* A split name is one directory entry: a relative name without '/' that
 * is not "." either. */
static qv_status check_split_name(const char *name, qv_error *err) {
  char what[64];
  snprintf(what, sizeof what, "dataset_dict.json: split name");
  QV_RETURN_NOT_OK(qv_hf_check_relative_name(what, name, err));
  if (strchr(name, '/') != NULL || strcmp(name, ".") == 0)
    return qv_error_set(err, QV_EINVAL,
                        "dataset_dict.json: split name '%s' is not a single directory name",
                        name);
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* state.json                                                                */

void qv_hf_state_reset(qv_hf_state *st) {
  if (st == NULL) return;
  free_strs(st->data_files, st->n_data_files);
  free(st->fingerprint);
  free_strs(st->format_columns, st->n_format_columns);
  free(st->format_kwargs);
  free(st->format_type);
  free(st->split);
  memset(st, 0, sizeof *st);
}

static qv_status state_member(const json_t *obj, const char *key, json_t **out, qv_error *err) {
  *out = json_object_get(obj, key);
  if (*out == NULL) return qv_error_set(err, QV_EINVAL, "state.json: missing '%s'", key);
  return QV_OK;
}

/* A string-or-null member into *out (NULL for null). */
static qv_status state_opt_string(const json_t *obj, const char *key, bool nullable, char **out,
                                  qv_error *err) {
  json_t *v;
  QV_RETURN_NOT_OK(state_member(obj, key, &v, err));
  if (nullable && json_is_null(v)) return QV_OK;
  if (!json_is_string(v))
    return qv_error_set(err, QV_EINVAL, "state.json: '%s' must be a string%s, found %s", key,
                        nullable ? " or null" : "", qv_hf_json_kind(v));
  if ((*out = dup_str(json_string_value(v))) == NULL)
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  return QV_OK;
}

static qv_status state_from_json(const json_t *obj, qv_hf_state *s, qv_error *err) {
  if (!json_is_object(obj))
    return qv_error_set(err, QV_EINVAL, "state.json: must be an object, found %s",
                        qv_hf_json_kind(obj));
  json_t *v;
  QV_RETURN_NOT_OK(state_member(obj, "_data_files", &v, err));
  if (!json_is_array(v))
    return qv_error_set(err, QV_EINVAL, "state.json: '_data_files' must be a list, found %s",
                        qv_hf_json_kind(v));
  size_t n = json_array_size(v);
  s->data_files = calloc(n > 0 ? n : 1, sizeof *s->data_files);
  if (s->data_files == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    json_t *fn = json_is_object(e) ? json_object_get(e, "filename") : NULL;
    if (!json_is_string(fn))
      return qv_error_set(err, QV_EINVAL,
                          "state.json: _data_files[%zu] must be {\"filename\": STRING}, found %s",
                          i, json_is_object(e) ? "no string 'filename'" : qv_hf_json_kind(e));
    char what[64];
    snprintf(what, sizeof what, "state.json: _data_files[%zu].filename", i);
    QV_RETURN_NOT_OK(qv_hf_check_relative_name(what, json_string_value(fn), err));
    if ((s->data_files[i] = dup_str(json_string_value(fn))) == NULL)
      return qv_error_set(err, QV_ENOMEM, "out of memory");
    s->n_data_files = (int64_t)i + 1;
  }
  QV_RETURN_NOT_OK(state_opt_string(obj, "_fingerprint", false, &s->fingerprint, err));
  if (qv_fingerprint_validate(s->fingerprint, err) != QV_OK)
    return qv_error_prefix(err, QV_EINVAL, "state.json: '_fingerprint': ");
  QV_RETURN_NOT_OK(state_member(obj, "_format_columns", &v, err));
  if (!json_is_null(v)) {
    if (!json_is_array(v))
      return qv_error_set(err, QV_EINVAL,
                          "state.json: '_format_columns' must be a list of strings or null, "
                          "found %s",
                          qv_hf_json_kind(v));
    size_t m = json_array_size(v);
    s->has_format_columns = true;
    s->format_columns = calloc(m > 0 ? m : 1, sizeof *s->format_columns);
    if (s->format_columns == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
    for (size_t i = 0; i < m; i++) {
      json_t *e = json_array_get(v, i);
      if (!json_is_string(e))
        return qv_error_set(err, QV_EINVAL,
                            "state.json: _format_columns[%zu] must be a string, found %s", i,
                            qv_hf_json_kind(e));
      if ((s->format_columns[i] = dup_str(json_string_value(e))) == NULL)
        return qv_error_set(err, QV_ENOMEM, "out of memory");
      s->n_format_columns = (int64_t)i + 1;
    }
  }
  QV_RETURN_NOT_OK(state_member(obj, "_format_kwargs", &v, err));
  if (!json_is_object(v))
    return qv_error_set(err, QV_EINVAL, "state.json: '_format_kwargs' must be an object, found %s",
                        qv_hf_json_kind(v));
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_status st = qv_pyjson_dump(&sb, v, -1, true, err);
  if (st == QV_OK && (s->format_kwargs = dup_str(qv_strbuf_cstr(&sb))) == NULL)
    st = qv_error_set(err, QV_ENOMEM, "out of memory");
  qv_strbuf_reset(&sb);
  QV_RETURN_NOT_OK(st);
  QV_RETURN_NOT_OK(state_opt_string(obj, "_format_type", true, &s->format_type, err));
  QV_RETURN_NOT_OK(state_member(obj, "_output_all_columns", &v, err));
  if (!json_is_boolean(v))
    return qv_error_set(err, QV_EINVAL,
                        "state.json: '_output_all_columns' must be a boolean, found %s",
                        qv_hf_json_kind(v));
  s->output_all_columns = json_is_true(v);
  return state_opt_string(obj, "_split", true, &s->split, err);
}

qv_status qv_hf_state_parse(const char *text, int64_t len, qv_hf_state *out, qv_error *err) {
  json_t *v = NULL;
  QV_RETURN_NOT_OK(qv_hf_json_load("state.json", text, len, &v, err));
  qv_hf_state s;
  memset(&s, 0, sizeof s);
  qv_status st = state_from_json(v, &s, err);
  json_decref(v);
  if (st != QV_OK) {
    qv_hf_state_reset(&s);
    return st;
  }
  *out = s;
  return QV_OK;
}

static json_t *strs_json(char *const *s, int64_t n) {
  json_t *a = json_array();
  for (int64_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, json_string(s[i])) != 0) a = (json_decref(a), NULL);
  return a;
}

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

qv_status qv_hf_state_emit(const qv_hf_state *s, qv_strbuf *out, qv_error *err) {
  json_t *o = json_object();
  json_t *files = json_array();
  json_t *kwargs = NULL;
  qv_status st = QV_OK;
  if (o == NULL || files == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  for (int64_t i = 0; st == QV_OK && i < s->n_data_files; i++) {
    json_t *e = json_pack("{s:s}", "filename", s->data_files[i]);
    if (e == NULL || json_array_append_new(files, e) != 0)
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  if (st == QV_OK) {
    const char *kw = s->format_kwargs ? s->format_kwargs : "{}";
    st = qv_hf_json_load("state: format_kwargs", kw, (int64_t)strlen(kw), &kwargs, err);
    if (st == QV_OK && !json_is_object(kwargs))
      st = qv_error_set(err, QV_EARG, "state: format_kwargs must be a JSON object");
  }
  if (st == QV_OK) {
    json_t *cols = s->has_format_columns ? strs_json(s->format_columns, s->n_format_columns)
                                         : json_null();
    if (json_object_set_new(o, "_data_files", json_incref(files)) ||
        json_object_set_new(o, "_fingerprint", str_or_null(s->fingerprint)) ||
        json_object_set_new(o, "_format_columns", cols) ||
        json_object_set_new(o, "_format_kwargs", json_incref(kwargs)) ||
        json_object_set_new(o, "_format_type", str_or_null(s->format_type)) ||
        json_object_set_new(o, "_output_all_columns", json_boolean(s->output_all_columns)) ||
        json_object_set_new(o, "_split", str_or_null(s->split)))
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  /* json.dump(state, indent=2, sort_keys=True) */
  if (st == QV_OK) st = qv_pyjson_dump(out, o, 2, true, err);
  json_decref(files);
  json_decref(kwargs);
  json_decref(o);
  return st;
}

/* ------------------------------------------------------------------------ */
/* dataset_info.json                                                         */

struct qv_hf_info {
  json_t *obj;               /* the whole object, "features" as read */
  qv_hf_feature *features;   /* parsed features or NULL */
};

/* DatasetInfo's dataclass fields; the first four have default_factory=str
 * (always written), the rest default to None (omitted when None). */
static const char *const kInfoFields[] = {
    "description", "citation", "homepage", "license", "features", "post_processed",
    "supervised_keys", "builder_name", "dataset_name", "config_name", "version", "splits",
    "download_checksums", "download_size", "post_processing_size", "dataset_size",
    "size_in_bytes"};
#define N_INFO_FIELDS (sizeof kInfoFields / sizeof kInfoFields[0])
#define N_INFO_ALWAYS 4

qv_status qv_hf_info_parse(const char *text, int64_t len, qv_hf_info **out, qv_error *err) {
  json_t *v = NULL;
  QV_RETURN_NOT_OK(qv_hf_json_load("dataset_info.json", text, len, &v, err));
  if (!json_is_object(v)) {
    qv_status st = qv_error_set(err, QV_EINVAL, "dataset_info.json: must be an object, found %s",
                                qv_hf_json_kind(v));
    json_decref(v);
    return st;
  }
  qv_hf_info *info = calloc(1, sizeof *info);
  if (info == NULL) {
    json_decref(v);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  info->obj = v;
  json_t *f = json_object_get(v, "features");
  if (f != NULL && !json_is_null(f)) {
    qv_status st = qv_hf_features_from_json(f, "dataset_info.json: features", &info->features, err);
    if (st != QV_OK) {
      qv_hf_info_free(info);
      return st;
    }
  }
  *out = info;
  return QV_OK;
}

qv_status qv_hf_info_new(const qv_hf_feature *features, qv_hf_info **out, qv_error *err) {
  qv_hf_info *info = calloc(1, sizeof *info);
  if (info == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  info->obj = json_pack("{s:s,s:s,s:s,s:s}", "description", "", "citation", "", "homepage", "",
                        "license", "");
  if (info->obj == NULL) {
    free(info);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  qv_status st = qv_hf_info_set_features(info, features, err);
  if (st != QV_OK) {
    qv_hf_info_free(info);
    return st;
  }
  *out = info;
  return QV_OK;
}

void qv_hf_info_free(qv_hf_info *info) {
  if (info == NULL) return;
  json_decref(info->obj);
  qv_hf_feature_free(info->features);
  free(info);
}

const qv_hf_feature *qv_hf_info_features(const qv_hf_info *info) {
  return info ? info->features : NULL;
}

const char *qv_hf_info_string(const qv_hf_info *info, const char *key) {
  json_t *v = info ? json_object_get(info->obj, key) : NULL;
  return json_is_string(v) ? json_string_value(v) : NULL;
}

qv_status qv_hf_info_set_features(qv_hf_info *info, const qv_hf_feature *features,
                                  qv_error *err) {
  qv_hf_feature *copy = NULL;
  if (features != NULL && (copy = qv_hf_feature_copy(features)) == NULL)
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  qv_hf_feature_free(info->features);
  info->features = copy;
  return QV_OK;
}

static int cmp_cstr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

qv_status qv_hf_info_emit(const qv_hf_info *info, qv_strbuf *out, qv_error *err) {
  /* DatasetInfo.from_dict keeps known fields only; asdict drops the ones
   * still at their None default; save_to_disk sorts the top-level keys. */
  const char *keys[N_INFO_FIELDS];
  size_t n = 0;
  for (size_t i = 0; i < N_INFO_FIELDS; i++) {
    const char *k = kInfoFields[i];
    if (strcmp(k, "features") == 0) {
      if (info->features != NULL) keys[n++] = k;
      continue;
    }
    json_t *v = json_object_get(info->obj, k);
    if (i < N_INFO_ALWAYS || (v != NULL && !json_is_null(v))) keys[n++] = k;
  }
  qsort(keys, n, sizeof *keys, cmp_cstr);
  json_t *o = json_object();
  qv_status st = o ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory");
  for (size_t i = 0; st == QV_OK && i < n; i++) {
    json_t *v;
    if (strcmp(keys[i], "features") == 0) {
      v = qv_hf_feature_to_json(info->features);
    } else {
      v = json_object_get(info->obj, keys[i]);
      v = v ? json_incref(v) : json_string(""); /* default_factory=str */
    }
    if (v == NULL || json_object_set_new(o, keys[i], v) != 0)
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  if (st == QV_OK) st = qv_pyjson_dump(out, o, 2, false, err);
  json_decref(o);
  return st;
}

/* ------------------------------------------------------------------------ */
/* dataset_dict.json                                                         */

qv_status qv_hf_dict_parse(const char *text, int64_t len, char ***out_names, int64_t *out_n,
                           qv_error *err) {
  json_t *v = NULL;
  QV_RETURN_NOT_OK(qv_hf_json_load("dataset_dict.json", text, len, &v, err));
  json_t *splits = json_is_object(v) ? json_object_get(v, "splits") : NULL;
  qv_status st = QV_OK;
  char **names = NULL;
  size_t n = 0;
  if (!json_is_array(splits)) {
    st = qv_error_set(err, QV_EINVAL,
                      "dataset_dict.json: expected {\"splits\": [NAME, ...]}, found %s",
                      json_is_object(v) ? "no 'splits' list" : qv_hf_json_kind(v));
    goto done;
  }
  n = json_array_size(splits);
  names = calloc(n > 0 ? n : 1, sizeof *names);
  if (names == NULL) {
    st = qv_error_set(err, QV_ENOMEM, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < n && st == QV_OK; i++) {
    json_t *e = json_array_get(splits, i);
    if (!json_is_string(e)) {
      st = qv_error_set(err, QV_EINVAL, "dataset_dict.json: splits[%zu] must be a string, found %s",
                        i, qv_hf_json_kind(e));
      break;
    }
    const char *name = json_string_value(e);
    st = check_split_name(name, err);
    for (size_t j = 0; st == QV_OK && j < i; j++)
      if (strcmp(names[j], name) == 0)
        st = qv_error_set(err, QV_EINVAL, "dataset_dict.json: split '%s' is listed twice", name);
    if (st == QV_OK && (names[i] = dup_str(name)) == NULL)
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
done:
  json_decref(v);
  if (st != QV_OK) {
    free_strs(names, (int64_t)n);
    return st;
  }
  *out_names = names;
  *out_n = (int64_t)n;
  return QV_OK;
}

qv_status qv_hf_dict_emit(char *const *names, int64_t n, qv_strbuf *out, qv_error *err) {
  json_t *o = json_pack("{s:o}", "splits", strs_json(names, n));
  if (o == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  qv_status st = qv_pyjson_dump(out, o, -1, false, err);
  json_decref(o);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Shards                                                                    */

int qv_hf_shard_name(int64_t index, int64_t count, char *out, size_t cap) {
  return snprintf(out, cap, "data-%05lld-of-%05lld.arrow", (long long)index, (long long)count);
}

int64_t qv_hf_plan_num_shards(int64_t nbytes, int64_t max_shard_size, int64_t num_proc,
                              int64_t table_rows) {
  if (max_shard_size <= 0) max_shard_size = QV_HF_DEFAULT_MAX_SHARD_SIZE;
  if (nbytes < 0) nbytes = 0;
  /* int(dataset_nbytes / max_shard_size) + 1: true division, then int() */
  double q = (double)nbytes / (double)max_shard_size;
  int64_t n = (q >= 9.0e18 ? INT64_MAX - 1 : (int64_t)q) + 1;
  if (n < (num_proc > 0 ? num_proc : 1)) n = num_proc > 0 ? num_proc : 1;
  if (n > table_rows) n = table_rows;
  return n < 0 ? 0 : n;
}

void qv_hf_shard_range(int64_t num_rows, int64_t num_shards, int64_t index, int64_t *start,
                       int64_t *end) {
  if (num_shards <= 0 || index < 0 || index >= num_shards) {
    *start = *end = 0;
    return;
  }
  int64_t div = num_rows / num_shards, mod = num_rows % num_shards;
  *start = div * index + (index < mod ? index : mod);
  *end = *start + div + (index < mod ? 1 : 0);
}

static bool ends_with_ci(const char *s, size_t n, const char *suf) {
  size_t m = strlen(suf);
  if (n < m) return false;
  for (size_t i = 0; i < m; i++) {
    char c = s[n - m + i];
    if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
    if (c != suf[i]) return false;
  }
  return true;
}

qv_status qv_hf_parse_size(const char *text, int64_t *out, qv_error *err) {
  static const struct {
    const char *suffix;
    int64_t mult;
    bool bits_rule;
  } kUnits[] = {
      {"PIB", INT64_C(1) << 50, false}, {"TIB", INT64_C(1) << 40, false},
      {"GIB", INT64_C(1) << 30, false}, {"MIB", INT64_C(1) << 20, false},
      {"KIB", INT64_C(1) << 10, false}, {"PB", INT64_C(1000000000000000), true},
      {"TB", INT64_C(1000000000000), true}, {"GB", INT64_C(1000000000), true},
      {"MB", INT64_C(1000000), true},   {"KB", INT64_C(1000), true},
  };
  size_t n = strlen(text);
  int64_t mult = 1;
  bool bits = false;
  size_t digits = n;
  for (size_t i = 0; i < sizeof kUnits / sizeof kUnits[0]; i++)
    if (ends_with_ci(text, n, kUnits[i].suffix)) {
      mult = kUnits[i].mult;
      digits = n - strlen(kUnits[i].suffix);
      bits = kUnits[i].bits_rule && text[n - 1] == 'b';
      break;
    }
  int64_t v = 0;
  bool ok = digits > 0;
  for (size_t i = 0; ok && i < digits; i++) {
    if (text[i] < '0' || text[i] > '9' || qv_mul_overflow(v, 10, &v) ||
        qv_add_overflow(v, text[i] - '0', &v))
      ok = false;
  }
  if (ok && qv_mul_overflow(v, mult, &v)) ok = false;
  if (!ok)
    return qv_error_set(err, QV_EARG,
                        "size '%s' is not in a valid format: use an integer followed by a unit, "
                        "e.g. '500MB' or '1GiB'",
                        text);
  *out = bits ? v / 8 : v;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Classifying a path                                                        */

const char *qv_hf_layout_name(qv_hf_layout layout) {
  switch (layout) {
    case QV_HF_LAYOUT_ARROW_FILE: return "arrow file";
    case QV_HF_LAYOUT_DATASET: return "dataset";
    case QV_HF_LAYOUT_DATASET_DICT: return "dataset dict";
    case QV_HF_LAYOUT_CACHE: return "cache";
  }
  return "unknown";
}

static char *join_path(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  bool slash = a > 0 && dir[a - 1] != '/';
  char *p = malloc(a + b + 2);
  if (p == NULL) return NULL;
  memcpy(p, dir, a);
  if (slash) p[a++] = '/';
  memcpy(p + a, name, b + 1);
  return p;
}

static bool is_regular(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Read a whole small text file into a NUL-terminated heap string. */
static qv_status read_text(const char *path, char **out, int64_t *out_len, qv_error *err) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return qv_error_set(err, QV_EIO, "%s: cannot open: %s", path, strerror(errno));
  char *buf = NULL;
  size_t len = 0, cap = 0;
  qv_status st = QV_OK;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      size_t ncap = cap ? cap * 2 : 8192;
      char *nb = realloc(buf, ncap);
      if (nb == NULL) {
        st = qv_error_set(err, QV_ENOMEM, "out of memory reading %s", path);
        break;
      }
      buf = nb, cap = ncap;
    }
    size_t got = fread(buf + len, 1, cap - len - 1, f);
    len += got;
    if (len > HF_MAX_JSON_FILE) {
      st = qv_error_set(err, QV_EINVAL, "%s: larger than %d bytes", path, HF_MAX_JSON_FILE);
      break;
    }
    if (got == 0) {
      if (ferror(f)) st = qv_error_set(err, QV_EIO, "%s: read failed: %s", path, strerror(errno));
      break;
    }
  }
  fclose(f);
  if (st != QV_OK) {
    free(buf);
    return st;
  }
  buf[len] = '\0';
  *out = buf;
  *out_len = (int64_t)len;
  return QV_OK;
}

/* Is the file an indices mapping (one uint64 column "indices")? */
static qv_status file_role(const char *path, qv_hf_file_role *role, qv_error *err) {
  qv_reader *r = NULL;
  qv_status st = qv_reader_open_path(path, NULL, &r, err);
  if (st != QV_OK) return qv_error_prefix(err, st, "%s: ", path);
  const qv_schema *s = qv_reader_schema(r);
  *role = (qv_schema_num_fields(s) == 1 && strcmp(qv_schema_field(s, 0)->name, "indices") == 0 &&
           qv_schema_field(s, 0)->type->id == QV_UINT64)
              ? QV_HF_FILE_INDICES
              : QV_HF_FILE_DATA;
  qv_reader_close(r);
  return QV_OK;
}

static void split_reset(qv_hf_split *sp) {
  free(sp->name);
  free(sp->dir);
  if (sp->state) {
    qv_hf_state_reset(sp->state);
    free(sp->state);
  }
  qv_hf_info_free(sp->info);
  for (int64_t i = 0; i < sp->n_files; i++) {
    free(sp->files[i].name);
    free(sp->files[i].path);
  }
  free(sp->files);
  memset(sp, 0, sizeof *sp);
}

void qv_hf_dir_free(qv_hf_dir *dir) {
  if (dir == NULL) return;
  for (int64_t i = 0; i < dir->n_splits; i++) split_reset(&dir->splits[i]);
  free(dir->splits);
  free(dir->path);
  free(dir);
}

static qv_status add_file(qv_hf_split *sp, const char *name, const char *path,
                          qv_hf_file_role role, qv_error *err) {
  qv_hf_file *g = realloc(sp->files, sizeof *g * (size_t)(sp->n_files + 1));
  if (g == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  sp->files = g;
  qv_hf_file *f = &g[sp->n_files];
  f->name = dup_str(name);
  f->path = dup_str(path);
  f->role = role;
  if (f->name == NULL || f->path == NULL) {
    free(f->name);
    free(f->path);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  sp->n_files++;
  return QV_OK;
}

/* The resolved file must lie inside the resolved directory. */
static qv_status check_inside(const char *dir_real, const char *file_path, const char *what,
                              const char *name, qv_error *err) {
  char *real = realpath(file_path, NULL);
  if (real == NULL)
    return qv_error_set(err, errno == ENOENT ? QV_EINVAL : QV_EIO, "%s '%s': %s", what, name,
                        errno == ENOENT ? "no such file" : strerror(errno));
  size_t n = strlen(dir_real);
  bool inside = strncmp(real, dir_real, n) == 0 && (real[n] == '/' || (n == 1 && dir_real[0] == '/'));
  qv_status st = QV_OK;
  if (!inside)
    st = qv_error_set(err, QV_EINVAL,
                      "%s '%s' escapes the dataset directory (resolves to '%s')", what, name, real);
  free(real);
  return st;
}

/* Open a save_to_disk Dataset directory into `sp`. */
static qv_status open_dataset(const char *dir, qv_hf_split *sp, qv_error *err) {
  qv_status st = QV_OK;
  char *state_path = join_path(dir, QV_HF_STATE_JSON);
  char *info_path = join_path(dir, QV_HF_INFO_JSON);
  char *dir_real = NULL, *text = NULL;
  int64_t len = 0;
  if (state_path == NULL || info_path == NULL || (sp->dir = dup_str(dir)) == NULL) {
    st = qv_error_set(err, QV_ENOMEM, "out of memory");
    goto done;
  }
  if (!is_regular(state_path) || !is_regular(info_path)) {
    st = qv_error_set(err, QV_EINVAL, "%s: not a datasets Dataset directory: %s is missing", dir,
                      !is_regular(state_path) ? QV_HF_STATE_JSON : QV_HF_INFO_JSON);
    goto done;
  }
  if ((sp->state = calloc(1, sizeof *sp->state)) == NULL) {
    st = qv_error_set(err, QV_ENOMEM, "out of memory");
    goto done;
  }
  if ((st = read_text(state_path, &text, &len, err)) != QV_OK) goto done;
  st = qv_hf_state_parse(text, len, sp->state, err);
  free(text);
  text = NULL;
  if (st != QV_OK) {
    qv_error_prefix(err, st, "%s/", dir);
    goto done;
  }
  if ((st = read_text(info_path, &text, &len, err)) != QV_OK) goto done;
  st = qv_hf_info_parse(text, len, &sp->info, err);
  if (st != QV_OK) {
    qv_error_prefix(err, st, "%s/", dir);
    goto done;
  }
  if ((dir_real = realpath(dir, NULL)) == NULL) {
    st = qv_error_set(err, QV_EIO, "%s: %s", dir, strerror(errno));
    goto done;
  }
  for (int64_t i = 0; i < sp->state->n_data_files && st == QV_OK; i++) {
    const char *name = sp->state->data_files[i];
    char *p = join_path(dir, name);
    char what[128];
    snprintf(what, sizeof what, "%s/state.json: _data_files[%lld].filename", dir, (long long)i);
    if (p == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
    if (st == QV_OK) st = check_inside(dir_real, p, what, name, err);
    if (st == QV_OK && !is_regular(p))
      st = qv_error_set(err, QV_EINVAL, "%s '%s' is not a regular file", what, name);
    if (st == QV_OK) st = add_file(sp, name, p, QV_HF_FILE_DATA, err);
    free(p);
  }
done:
  free(text);
  free(dir_real);
  free(state_path);
  free(info_path);
  return st;
}

static bool has_arrow_suffix(const char *name) {
  size_t n = strlen(name);
  return n > 6 && strcmp(name + n - 6, ".arrow") == 0;
}

static qv_status open_cache(const char *dir, qv_hf_split *sp, qv_error *err) {
  DIR *d = opendir(dir);
  if (d == NULL) return qv_error_set(err, QV_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
  char **names = NULL;
  size_t n = 0, cap = 0;
  qv_status st = QV_OK;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || !has_arrow_suffix(de->d_name)) continue;
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 16;
      char **g = realloc(names, sizeof *g * ncap);
      if (g == NULL) {
        st = qv_error_set(err, QV_ENOMEM, "out of memory");
        break;
      }
      names = g, cap = ncap;
    }
    if ((names[n] = dup_str(de->d_name)) == NULL) {
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
      break;
    }
    n++;
  }
  closedir(d);
  if (st == QV_OK && n > 1) qsort(names, n, sizeof *names, cmp_cstr);
  if (st == QV_OK && (sp->dir = dup_str(dir)) == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  for (size_t i = 0; i < n && st == QV_OK; i++) {
    char *p = join_path(dir, names[i]);
    if (p == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
    if (st == QV_OK && is_regular(p)) {
      qv_hf_file_role role = QV_HF_FILE_DATA;
      st = file_role(p, &role, err);
      if (st == QV_OK) st = add_file(sp, names[i], p, role, err);
    }
    free(p);
  }
  free_strs(names, (int64_t)n);
  if (st == QV_OK && sp->n_files == 0)
    st = qv_error_set(err, QV_EINVAL,
                      "%s: not a datasets directory: no state.json, dataset_dict.json or *.arrow "
                      "file",
                      dir);
  if (st == QV_OK) {
    /* A cache directory usually has the builder's dataset_info.json. */
    char *info_path = join_path(dir, QV_HF_INFO_JSON);
    if (info_path && is_regular(info_path)) {
      char *text = NULL;
      int64_t len;
      st = read_text(info_path, &text, &len, err);
      if (st == QV_OK) st = qv_hf_info_parse(text, len, &sp->info, err);
      if (st != QV_OK) qv_error_prefix(err, st, "%s/", dir);
      free(text);
    }
    free(info_path);
  }
  return st;
}

qv_status qv_hf_dir_open(const char *path, qv_hf_dir **out, qv_error *err) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return qv_error_set(err, QV_EIO, "%s: %s", path, strerror(errno));
  qv_hf_dir *d = calloc(1, sizeof *d);
  if (d == NULL || (d->path = dup_str(path)) == NULL) {
    free(d);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  qv_status st = QV_OK;
  if (S_ISREG(sb.st_mode)) {
    d->layout = QV_HF_LAYOUT_ARROW_FILE;
    d->splits = calloc(1, sizeof *d->splits);
    if (d->splits == NULL) {
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
    } else {
      d->n_splits = 1;
      const char *slash = strrchr(path, '/');
      const char *base = slash ? slash + 1 : path;
      d->splits[0].dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path))
                               : dup_str(".");
      qv_hf_file_role role = QV_HF_FILE_DATA;
      if (d->splits[0].dir == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
      if (st == QV_OK) st = file_role(path, &role, err);
      if (st == QV_OK) st = add_file(&d->splits[0], base, path, role, err);
    }
  } else if (!S_ISDIR(sb.st_mode)) {
    st = qv_error_set(err, QV_EINVAL, "%s: not a regular file or a directory", path);
  } else {
    char *dict_path = join_path(path, QV_HF_DICT_JSON);
    char *state_path = join_path(path, QV_HF_STATE_JSON);
    if (dict_path == NULL || state_path == NULL) {
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
    } else if (is_regular(dict_path)) {
      d->layout = QV_HF_LAYOUT_DATASET_DICT;
      char *text = NULL, **names = NULL;
      int64_t len = 0, n = 0;
      st = read_text(dict_path, &text, &len, err);
      if (st == QV_OK) {
        st = qv_hf_dict_parse(text, len, &names, &n, err);
        if (st != QV_OK) qv_error_prefix(err, st, "%s/", path);
      }
      free(text);
      if (st == QV_OK && (d->splits = calloc(n > 0 ? (size_t)n : 1, sizeof *d->splits)) == NULL)
        st = qv_error_set(err, QV_ENOMEM, "out of memory");
      char *real = st == QV_OK ? realpath(path, NULL) : NULL;
      if (st == QV_OK && real == NULL) st = qv_error_set(err, QV_EIO, "%s: %s", path, strerror(errno));
      for (int64_t i = 0; i < n && st == QV_OK; i++) {
        d->n_splits = i + 1;
        char *sdir = join_path(path, names[i]);
        char what[64];
        snprintf(what, sizeof what, "dataset_dict.json: split");
        if (sdir == NULL || (d->splits[i].name = dup_str(names[i])) == NULL)
          st = qv_error_set(err, QV_ENOMEM, "out of memory");
        if (st == QV_OK) st = check_inside(real, sdir, what, names[i], err);
        if (st == QV_OK) st = open_dataset(sdir, &d->splits[i], err);
        free(sdir);
      }
      free(real);
      free_strs(names, n);
    } else if (is_regular(state_path)) {
      d->layout = QV_HF_LAYOUT_DATASET;
      if ((d->splits = calloc(1, sizeof *d->splits)) == NULL) {
        st = qv_error_set(err, QV_ENOMEM, "out of memory");
      } else {
        d->n_splits = 1;
        st = open_dataset(path, &d->splits[0], err);
      }
    } else {
      d->layout = QV_HF_LAYOUT_CACHE;
      if ((d->splits = calloc(1, sizeof *d->splits)) == NULL) {
        st = qv_error_set(err, QV_ENOMEM, "out of memory");
      } else {
        d->n_splits = 1;
        st = open_cache(path, &d->splits[0], err);
      }
    }
    free(dict_path);
    free(state_path);
  }
  if (st != QV_OK) {
    qv_hf_dir_free(d);
    return st;
  }
  *out = d;
  return QV_OK;
}
