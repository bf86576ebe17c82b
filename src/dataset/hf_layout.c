/*
 * hf_layout.c — the on-disk layouts of Hugging Face `datasets`: state.json,
 * dataset_info.json and dataset_dict.json (parsed, validated and written
 * byte-for-byte as datasets writes them), shard naming and shard-count
 * planning of save_to_disk, and classification of a path as a single Arrow
 * file, a save_to_disk Dataset or DatasetDict directory, or a cache
 * directory. Dataset layer; uses core, the ipc reader (to tell indices
 * mappings from data files) and the features (hf_features_json.c,
 * hf_features_arrow.c).
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
    return qv_error_set(err, QV_EINVAL, "%s '%s' escapes the dataset directory (absolute path)",
                        what, name);
  const char *p = name;
  while (*p) {
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return qv_error_set(err, QV_EINVAL, "%s '%s' escapes the dataset directory (contains '..')",
                          what, name);
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
                        "dataset_dict.json: split name '%s' is not a single directory name", name);
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
    json_t *cols =
        s->has_format_columns ? strs_json(s->format_columns, s->n_format_columns) : json_null();
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
  json_t *obj;             /* the whole object, "features" as read */
  qv_hf_feature *features; /* parsed features or NULL */
};

/* DatasetInfo's dataclass fields; the first four have default_factory=str
 * (always written), the rest default to None (omitted when None). */
static const char *const kInfoFields[] = {"description",
                                          "citation",
                                          "homepage",
                                          "license",
                                          "features",
                                          "post_processed",
                                          "supervised_keys",
                                          "builder_name",
                                          "dataset_name",
                                          "config_name",
                                          "version",
                                          "splits",
                                          "download_checksums",
                                          "download_size",
                                          "post_processing_size",
                                          "dataset_size",
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

qv_status qv_hf_info_set_features(qv_hf_info *info, const qv_hf_feature *features, qv_error *err) {
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
      {"PIB", INT64_C(1) << 50, false},     {"TIB", INT64_C(1) << 40, false},
      {"GIB", INT64_C(1) << 30, false},     {"MIB", INT64_C(1) << 20, false},
      {"KIB", INT64_C(1) << 10, false},     {"PB", INT64_C(1000000000000000), true},
      {"TB", INT64_C(1000000000000), true}, {"GB", INT64_C(1000000000), true},
      {"MB", INT64_C(1000000), true},       {"KB", INT64_C(1000), true},
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

static bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

bool qv_hf_is_indices_schema(const qv_schema *s) {
  return qv_schema_num_fields(s) == 1 && strcmp(qv_schema_field(s, 0)->name, "indices") == 0 &&
         qv_schema_field(s, 0)->type->id == QV_UINT64;
}

qv_hf_file_role qv_hf_file_role_of(const char *path, const qv_schema *s) {
  return starts_with(base_name(path), "cache-") && qv_hf_is_indices_schema(s) ? QV_HF_FILE_INDICES
                                                                              : QV_HF_FILE_DATA;
}

/* Role and rows of a file, mapped once as a table (*table: a new
 * reference): an indices mapping is a cache-*.arrow file whose schema is
 * one uint64 column "indices" (what datasets writes). */
static qv_status file_info(const char *path, qv_hf_file_role *role, int64_t *rows, qv_table **table,
                           qv_error *err) {
  qv_table *t = NULL;
  qv_status st = qv_table_open_path(path, NULL, &t, err);
  if (st != QV_OK && st != QV_ENOMEM) {
    /* the reader's own words for why (it names the path) */
    qv_reader *r = NULL;
    st = qv_reader_open_path(path, NULL, &r, err);
    qv_reader_close(r);
    if (st == QV_OK) st = qv_error_set(err, QV_EINVAL, "%s: cannot be mapped as a table", path);
  }
  if (st != QV_OK) return st;
  *role = qv_hf_file_role_of(path, qv_table_schema(t));
  *rows = qv_table_num_rows(t);
  if (*rows < 0) {
    qv_table_unref(t);
    return qv_error_set(err, QV_EINVAL, "%s: row count unknown", path);
  }
  *table = t;
  return QV_OK;
}

static void files_free(qv_hf_file *files, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    qv_table_unref(files[i].table);
    free(files[i].name);
    free(files[i].path);
    free(files[i].error);
  }
  free(files);
}

static void split_reset(qv_hf_split *sp) {
  free(sp->name);
  free(sp->dir);
  free(sp->fingerprint);
  free(sp->error);
  if (sp->state) {
    qv_hf_state_reset(sp->state);
    free(sp->state);
  }
  qv_hf_info_free(sp->info);
  files_free(sp->files, sp->n_files);
  memset(sp, 0, sizeof *sp);
}

void qv_hf_dir_free(qv_hf_dir *dir) {
  if (dir == NULL) return;
  for (int64_t i = 0; i < dir->n_splits; i++) split_reset(&dir->splits[i]);
  free(dir->splits);
  files_free(dir->files, dir->n_files);
  for (int64_t i = 0; i < dir->n_sources; i++) {
    free(dir->sources[i].name);
    free(dir->sources[i].files);
    free(dir->sources[i].fingerprint);
  }
  free(dir->sources);
  free(dir->path);
  free(dir);
}

/* Append a file; `table` (may be NULL) gets a reference of its own. */
static qv_status add_file(qv_hf_file **files, int64_t *n, const char *name, const char *path,
                          qv_hf_file_role role, int64_t rows, qv_table *table, qv_error *err) {
  qv_hf_file *g = realloc(*files, sizeof *g * (size_t)(*n + 1));
  if (g == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  *files = g;
  qv_hf_file *f = &g[*n];
  f->name = dup_str(name);
  f->path = dup_str(path);
  f->role = role;
  f->rows = rows;
  f->error = NULL;
  f->source = -1;
  f->table = NULL;
  if (f->name == NULL || f->path == NULL) {
    free(f->name);
    free(f->path);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  f->table = qv_table_ref(table);
  (*n)++;
  return QV_OK;
}

/* Add the data file `path` to a split, with its rows. */
static qv_status add_split_file(qv_hf_split *sp, const char *name, const char *path,
                                qv_error *err) {
  qv_hf_file_role role;
  int64_t rows = 0;
  qv_table *t = NULL;
  QV_RETURN_NOT_OK(file_info(path, &role, &rows, &t, err));
  qv_status st = add_file(&sp->files, &sp->n_files, name, path, QV_HF_FILE_DATA, rows, t, err);
  qv_table_unref(t);
  return st;
}

/* The resolved file must lie inside the resolved directory. */
static qv_status check_inside(const char *dir_real, const char *file_path, const char *what,
                              const char *name, qv_error *err) {
  char *real = realpath(file_path, NULL);
  if (real == NULL)
    return qv_error_set(err, errno == ENOENT ? QV_EINVAL : QV_EIO, "%s '%s': %s", what, name,
                        errno == ENOENT ? "no such file" : strerror(errno));
  size_t n = strlen(dir_real);
  bool inside =
      strncmp(real, dir_real, n) == 0 && (real[n] == '/' || (n == 1 && dir_real[0] == '/'));
  qv_status st = QV_OK;
  if (!inside)
    st = qv_error_set(err, QV_EINVAL, "%s '%s' escapes the dataset directory (resolves to '%s')",
                      what, name, real);
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
    if (st == QV_OK) st = add_split_file(sp, name, p, err);
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

/* Every regular *.arrow file directly in `dir` (not hidden: temporaries of
 * atomic writes start with '.'), sorted by name, into d->files. */
static qv_status list_arrow_files(const char *dir, const qv_hf_known_file *known,
                                  const qv_hf_split *shards, qv_hf_dir *d, qv_error *err) {
  DIR *dp = opendir(dir);
  if (dp == NULL)
    return qv_error_set(err, QV_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
  char **names = NULL;
  size_t n = 0, cap = 0;
  qv_status st = QV_OK;
  struct dirent *de;
  while ((de = readdir(dp)) != NULL) {
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
  closedir(dp);
  if (st == QV_OK && n > 1) qsort(names, n, sizeof *names, cmp_cstr);
  for (size_t i = 0; i < n && st == QV_OK; i++) {
    char *p = join_path(dir, names[i]);
    if (p == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
    if (st == QV_OK && is_regular(p)) {
      qv_hf_file_role role = QV_HF_FILE_DATA;
      int64_t rows = 0;
      qv_error ferr = {{0}};
      /* A file that does not open is listed as unreadable rather than
       * failing the directory: a stray torn cache file must not hide the
       * datasets beside it. A dataset that needs it fails when opened. */
      qv_status fst = QV_OK;
      qv_table *t = NULL;
      int64_t shard = -1; /* a shard listed (and opened) already */
      for (int64_t k = 0; shards != NULL && k < shards->n_files && shard < 0; k++)
        if (strcmp(shards->files[k].name, names[i]) == 0) shard = k;
      if (known != NULL && strcmp(names[i], known->name) == 0) /* opened by the caller */
        role = known->role, rows = known->rows, t = qv_table_ref(known->table);
      else if (shard >= 0)
        role = QV_HF_FILE_DATA, rows = shards->files[shard].rows,
        t = qv_table_ref(shards->files[shard].table);
      else fst = file_info(p, &role, &rows, &t, &ferr);
      if (fst == QV_ENOMEM) st = qv_error_set(err, QV_ENOMEM, "out of memory");
      if (fst != QV_OK && fst != QV_ENOMEM) role = QV_HF_FILE_UNREADABLE, rows = 0;
      /* The cache files of transforms (cache-*) are not kept mapped: a
       * directory holds dozens, the listing reads their headers only, and
       * keeping them would keep every touched page resident. Data files
       * (shards, builder outputs, a user's files) are kept for the open. */
      if (fst == QV_OK && shard < 0 && (known == NULL || strcmp(names[i], known->name) != 0) &&
          starts_with(names[i], "cache-")) {
        qv_table_unref(t);
        t = NULL;
      }
      if (st == QV_OK) st = add_file(&d->files, &d->n_files, names[i], p, role, rows, t, err);
      qv_table_unref(t);
      if (st == QV_OK && fst != QV_OK &&
          (d->files[d->n_files - 1].error = dup_str(ferr.message)) == NULL)
        st = qv_error_set(err, QV_ENOMEM, "out of memory");
    }
    free(p);
  }
  free_strs(names, (int64_t)n);
  return st;
}

/* datasets' camelcase_to_snakecase (naming.py) on ASCII: "_" before the
 * last capital of a run followed by a lowercase letter, "_" between a
 * lowercase letter or digit and a capital, then lowercase. */
static char *snake_case(const char *name) {
  size_t n = strlen(name);
  char *a = malloc(2 * n + 1), *b = malloc(4 * n + 1);
  if (a == NULL || b == NULL) {
    free(a);
    free(b);
    return NULL;
  }
#define UP(c) ((c) >= 'A' && (c) <= 'Z')
#define LO(c) ((c) >= 'a' && (c) <= 'z')
#define DG(c) ((c) >= '0' && (c) <= '9')
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && UP(name[i - 1]) && UP(name[i]) && LO(name[i + 1])) a[k++] = '_';
    a[k++] = name[i];
  }
  a[k] = '\0';
  size_t m = 0;
  for (size_t i = 0; i < k; i++) {
    if (i > 0 && (LO(a[i - 1]) || DG(a[i - 1])) && UP(a[i])) b[m++] = '_';
    b[m++] = UP(a[i]) ? (char)(a[i] - 'A' + 'a') : a[i];
  }
  b[m] = '\0';
#undef UP
#undef LO
#undef DG
  free(a);
  return b;
}

static int64_t find_file(const qv_hf_dir *d, const char *name) {
  for (int64_t i = 0; i < d->n_files; i++)
    if (strcmp(d->files[i].name, name) == 0) return i;
  return -1;
}

/* The relative data directory datasets hashes for a builder split
 * (`dataset_name/config_id/version[/hash]`), or NULL when `dir_real` does
 * not look like one. */
static char *builder_relative_dir(const char *dir_real, const char *version) {
  if (version == NULL) return NULL;
  /* Components from the end: comp[0] = basename. */
  const char *ends[5], *starts[5];
  const char *end = dir_real + strlen(dir_real);
  int nc = 0;
  while (nc < 5 && end > dir_real) {
    const char *s = end;
    while (s > dir_real && s[-1] != '/') s--;
    starts[nc] = s;
    ends[nc] = end;
    nc++;
    end = s > dir_real ? s - 1 : s;
  }
  int want = 0;
  size_t vl = strlen(version);
  if (nc >= 4 && (size_t)(ends[1] - starts[1]) == vl && strncmp(starts[1], version, vl) == 0)
    want = 4;
  else if (nc >= 3 && (size_t)(ends[0] - starts[0]) == vl && strncmp(starts[0], version, vl) == 0)
    want = 3;
  if (want == 0 || starts[want - 1] == ends[want - 1]) return NULL;
  return strndup(starts[want - 1], (size_t)(ends[0] - starts[want - 1]));
}

static json_t *json_get_string_member(json_t *o, const char *key) {
  json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
  return json_is_string(v) ? v : NULL;
}

/* One builder split `name` (its SplitInfo `si`) of cache directory `dir`. */
static qv_status open_builder_split(const char *dir, const char *dir_real, const qv_hf_dir *d,
                                    const char *info_text, int64_t info_len, json_t *info,
                                    const char *name, json_t *si, qv_hf_split *sp, qv_error *err) {
  char what[256];
  snprintf(what, sizeof what, "%s/dataset_info.json: split", dir);
  QV_RETURN_NOT_OK(qv_hf_check_relative_name(what, name, err));
  if (strchr(name, '/') != NULL)
    return qv_error_set(err, QV_EINVAL, "%s name '%s' is not a single file name component", what,
                        name);
  if ((sp->name = dup_str(name)) == NULL || (sp->dir = dup_str(dir)) == NULL)
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  qv_status st = qv_hf_info_parse(info_text, info_len, &sp->info, err);
  if (st != QV_OK) return qv_error_prefix(err, st, "%s/", dir);
  json_t *dn = json_get_string_member(si, "dataset_name");
  if (dn == NULL) dn = json_get_string_member(info, "dataset_name");
  if (dn == NULL) dn = json_get_string_member(info, "builder_name");
  if (dn == NULL)
    return qv_error_set(err, QV_EINVAL,
                        "%s '%s': no dataset_name or builder_name to name its files", what, name);
  const char *dname = json_string_value(dn);
  if (dname[0] == '\0' || strchr(dname, '/') != NULL || strcmp(dname, "..") == 0 ||
      strcmp(dname, ".") == 0)
    return qv_error_set(err, QV_EINVAL, "%s '%s': dataset name '%s' is not a file name", what, name,
                        dname);
  json_t *lens = json_is_object(si) ? json_object_get(si, "shard_lengths") : NULL;
  if (lens != NULL && !json_is_null(lens) && !json_is_array(lens))
    return qv_error_set(err, QV_EINVAL, "%s '%s': shard_lengths must be a list, found %s", what,
                        name, qv_hf_json_kind(lens));
  int64_t n_shards =
      json_is_array(lens) && json_array_size(lens) > 1 ? (int64_t)json_array_size(lens) : 1;
  char *prefix = snake_case(dname);
  if (prefix == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  int64_t total = 0;
  for (int64_t i = 0; i < n_shards && st == QV_OK; i++) {
    char fname[1024];
    if (n_shards == 1) snprintf(fname, sizeof fname, "%s-%s.arrow", prefix, name);
    else
      snprintf(fname, sizeof fname, "%s-%s-%05lld-of-%05lld.arrow", prefix, name, (long long)i,
               (long long)n_shards);
    int64_t fi = find_file(d, fname);
    if (fi < 0) {
      st =
          qv_error_set(err, QV_EINVAL, "%s '%s': its data file '%s' is missing", what, name, fname);
      break;
    }
    const qv_hf_file *f = &d->files[fi];
    json_t *len_i = n_shards > 1 ? json_array_get(lens, (size_t)i) : NULL;
    if (n_shards > 1 && (!json_is_integer(len_i) || json_integer_value(len_i) != f->rows))
      st = qv_error_set(err, QV_EINVAL,
                        "%s '%s': '%s' holds %lld rows, shard_lengths[%lld] says %s%lld", what,
                        name, fname, (long long)f->rows, (long long)i,
                        json_is_integer(len_i) ? "" : "(not an integer) ",
                        json_is_integer(len_i) ? (long long)json_integer_value(len_i) : 0LL);
    if (f->role == QV_HF_FILE_UNREADABLE)
      st = qv_error_set(err, QV_EINVAL, "%s '%s': %s", what, name, f->error);
    else if (st == QV_OK && f->role != QV_HF_FILE_DATA)
      st = qv_error_set(err, QV_EINVAL, "%s '%s': '%s' is not a data file", what, name, fname);
    if (st == QV_OK)
      st = add_file(&sp->files, &sp->n_files, f->name, f->path, f->role, f->rows, f->table, err);
    if (st == QV_OK && qv_add_overflow(total, f->rows, &total))
      st = qv_error_set(err, QV_EINVAL, "%s '%s': row count overflows", what, name);
  }
  free(prefix);
  json_t *ne = json_is_object(si) ? json_object_get(si, "num_examples") : NULL;
  if (st == QV_OK && json_is_integer(ne) && json_integer_value(ne) != total)
    st = qv_error_set(err, QV_EINVAL, "%s '%s': its files hold %lld rows, num_examples says %lld",
                      what, name, (long long)total, (long long)json_integer_value(ne));
  if (st != QV_OK) return st;
  /* The fingerprint datasets gives the split (builder._get_dataset_fingerprint). */
  json_t *ver = json_is_object(info) ? json_object_get(info, "version") : NULL;
  json_t *vs = json_get_string_member(ver, "version_str");
  if (vs == NULL && json_is_string(ver)) vs = ver;
  char *rel = builder_relative_dir(dir_real, vs ? json_string_value(vs) : NULL);
  char fp[QV_FINGERPRINT_SIZE];
  if (rel != NULL) {
    st = qv_fingerprint_builder_split(rel, name, fp, err);
  } else {
    qv_fingerprint_args *args = NULL;
    st = qv_fingerprint_args_new(&args, err);
    if (st == QV_OK) st = qv_fingerprint_arg_str(args, "dir", dir_real, err);
    if (st == QV_OK) st = qv_fingerprint_arg_str(args, "split", name, err);
    if (st == QV_OK)
      st = qv_fingerprint_update("quiver-builder", "quiver.builder_split", args, fp, err);
    qv_fingerprint_args_free(args);
  }
  free(rel);
  if (st == QV_OK && (sp->fingerprint = dup_str(fp)) == NULL)
    st = qv_error_set(err, QV_ENOMEM, "out of memory");
  return st;
}

/* A builder split that fails to open (a missing, torn or short data file)
 * is kept with its error instead of failing the directory: the other
 * splits and files stay usable, and opening this split reports why it
 * cannot be. Errors before the split has a name (and out of memory) still
 * fail the directory. */
static qv_status keep_split_error(qv_status st, qv_hf_split *sp, const qv_error *serr,
                                  qv_error *err) {
  if (st == QV_OK) return QV_OK;
  if (st == QV_ENOMEM || sp->name == NULL) return qv_error_set(err, st, "%s", serr->message);
  files_free(sp->files, sp->n_files);
  sp->files = NULL;
  sp->n_files = 0;
  free(sp->fingerprint);
  sp->fingerprint = NULL;
  if ((sp->error = dup_str(serr->message)) == NULL)
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  return QV_OK;
}

/* The builder splits listed in dataset_info.json's "splits" (an object of
 * SplitInfo, or a list of them: legacy) of cache directory `dir`. */
static qv_status open_builder_splits(const char *dir, qv_hf_dir *d, qv_error *err) {
  char *info_path = join_path(dir, QV_HF_INFO_JSON);
  if (info_path == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  if (!is_regular(info_path)) {
    free(info_path);
    return QV_OK;
  }
  char *text = NULL, *dir_real = NULL;
  int64_t len = 0;
  json_t *info = NULL;
  qv_error serr = {{0}};
  qv_status st = read_text(info_path, &text, &len, err);
  free(info_path);
  if (st == QV_OK) st = qv_hf_json_load("dataset_info.json", text, len, &info, err);
  if (st != QV_OK) qv_error_prefix(err, st, "%s/", dir);
  json_t *splits = json_is_object(info) ? json_object_get(info, "splits") : NULL;
  size_t n = json_is_object(splits)  ? json_object_size(splits)
             : json_is_array(splits) ? json_array_size(splits)
                                     : 0;
  if (st == QV_OK && n > 0) {
    if ((dir_real = realpath(dir, NULL)) == NULL)
      st = qv_error_set(err, QV_EIO, "%s: %s", dir, strerror(errno));
    else if ((d->splits = calloc(n, sizeof *d->splits)) == NULL)
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  if (st == QV_OK && n > 0) {
    size_t i = 0;
    const char *key;
    json_t *si;
    if (json_is_object(splits)) {
      json_object_foreach(splits, key, si) {
        if (st != QV_OK) break;
        d->n_splits = (int64_t)i + 1;
        st = keep_split_error(
            open_builder_split(dir, dir_real, d, text, len, info, key, si, &d->splits[i], &serr),
            &d->splits[i], &serr, err);
        i++;
      }
    } else {
      json_array_foreach(splits, i, si) {
        if (st != QV_OK) break;
        json_t *nm = json_get_string_member(si, "name");
        d->n_splits = (int64_t)i + 1;
        if (nm == NULL)
          st =
              qv_error_set(err, QV_EINVAL, "%s/dataset_info.json: splits[%zu] has no name", dir, i);
        else
          st = keep_split_error(open_builder_split(dir, dir_real, d, text, len, info,
                                                   json_string_value(nm), si, &d->splits[i], &serr),
                                &d->splits[i], &serr, err);
      }
    }
  }
  for (int64_t i = 1; st == QV_OK && i < d->n_splits; i++)
    for (int64_t j = 0; j < i; j++)
      if (d->splits[i].name && d->splits[j].name &&
          strcmp(d->splits[i].name, d->splits[j].name) == 0) {
        st = qv_error_set(err, QV_EINVAL, "%s/dataset_info.json: split '%s' is listed twice", dir,
                          d->splits[i].name);
        break;
      }
  json_decref(info);
  free(text);
  free(dir_real);
  return st;
}

const char *qv_hf_source_kind_name(qv_hf_source_kind kind) {
  switch (kind) {
    case QV_HF_SOURCE_SPLIT: return "split";
    case QV_HF_SOURCE_DATASET: return "dataset";
    case QV_HF_SOURCE_GROUP: return "map output group";
    case QV_HF_SOURCE_FILE: return "file";
  }
  return "unknown";
}

int64_t qv_hf_dir_find_source(const qv_hf_dir *dir, const char *name) {
  for (int64_t i = 0; i < dir->n_sources; i++)
    if (strcmp(dir->sources[i].name, name) == 0) return i;
  return -1;
}

static qv_status add_source(qv_hf_dir *d, qv_hf_source_kind kind, const char *name, int64_t split,
                            const char *fp, qv_hf_source **out, qv_error *err) {
  qv_hf_source *g = realloc(d->sources, sizeof *g * (size_t)(d->n_sources + 1));
  if (g == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  d->sources = g;
  qv_hf_source *s = &g[d->n_sources];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->split = split;
  s->name = dup_str(name);
  s->fingerprint = fp ? dup_str(fp) : NULL;
  if (s->name == NULL || (fp && s->fingerprint == NULL)) {
    free(s->name);
    free(s->fingerprint);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  d->n_sources++;
  *out = s;
  return QV_OK;
}

static qv_status source_add_file(qv_hf_dir *d, int64_t src, int64_t file, qv_error *err) {
  qv_hf_source *s = &d->sources[src];
  int64_t *g = realloc(s->files, sizeof *g * (size_t)(s->n_files + 1));
  if (g == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  s->files = g;
  s->files[s->n_files++] = file;
  s->rows += d->files[file].rows;
  d->files[file].source = src;
  return QV_OK;
}

/* "cache-<fp>_RRRRR_of_NNNNN.arrow": the worker file of rank R of N of a
 * map with num_proc N. Fills fp (validated) and returns true when it is. */
static bool parse_worker_name(const char *name, char fp[QV_FINGERPRINT_SIZE], long *rank,
                              long *count) {
  size_t n = strlen(name);
  if (!starts_with(name, "cache-") || n < 6 + 1 + 15 + 6) return false;
  const char *end = name + n - 6; /* ".arrow" */
  const char *of = NULL;
  for (const char *p = end - 1; p > name; p--)
    if (strncmp(p, "_of_", 4) == 0) {
      of = p;
      break;
    }
  if (of == NULL) return false;
  const char *us = of - 1;
  while (us > name && *us != '_') us--;
  if (*us != '_' || us <= name + 6) return false;
  char *e = NULL;
  *rank = strtol(us + 1, &e, 10);
  if (e != of || of - (us + 1) < 5) return false;
  *count = strtol(of + 4, &e, 10);
  if (e != end || end - (of + 4) < 5 || *count < 1 || *rank < 0 || *rank >= *count) return false;
  size_t fl = (size_t)(us - (name + 6));
  if (fl >= QV_FINGERPRINT_SIZE) return false;
  memcpy(fp, name + 6, fl);
  fp[fl] = '\0';
  return qv_fingerprint_validate(fp, NULL) == QV_OK;
}

/* Group d->files into d->sources: the splits first (files matched by
 * name), then complete map worker groups, then the other data files. */
static qv_status build_sources(qv_hf_dir *d, qv_error *err) {
  qv_status st = QV_OK;
  for (int64_t i = 0; i < d->n_splits && st == QV_OK; i++) {
    const qv_hf_split *sp = &d->splits[i];
    if (sp->error != NULL) continue; /* not a dataset anything can map */
    qv_hf_source *s = NULL;
    bool dataset = d->layout == QV_HF_LAYOUT_DATASET;
    st = add_source(d, dataset ? QV_HF_SOURCE_DATASET : QV_HF_SOURCE_SPLIT,
                    dataset ? "." : sp->name, i, NULL, &s, err);
    for (int64_t k = 0; st == QV_OK && k < sp->n_files; k++) {
      s->rows += sp->files[k].rows;
      int64_t fi = find_file(d, sp->files[k].name);
      if (fi >= 0) d->files[fi].source = d->n_sources - 1;
    }
  }
  for (int64_t i = 0; i < d->n_files && st == QV_OK; i++) {
    qv_hf_file *f = &d->files[i];
    if (f->role != QV_HF_FILE_DATA || f->source >= 0) continue;
    char fp[QV_FINGERPRINT_SIZE];
    long rank, count;
    if (!parse_worker_name(f->name, fp, &rank, &count) || rank != 0 || count > d->n_files) continue;
    /* Ranks 1..count-1 with the same fingerprint and count. */
    int64_t *members = calloc((size_t)count, sizeof *members);
    if (members == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
    for (long r = 0; r < count; r++) members[r] = -1;
    members[0] = i;
    long found = 1;
    for (int64_t j = 0; j < d->n_files; j++) {
      char fp2[QV_FINGERPRINT_SIZE];
      long r2, c2;
      if (j != i && d->files[j].role == QV_HF_FILE_DATA && d->files[j].source < 0 &&
          parse_worker_name(d->files[j].name, fp2, &r2, &c2) && c2 == count && r2 > 0 &&
          strcmp(fp, fp2) == 0 && members[r2] < 0) {
        members[r2] = j;
        found++;
      }
    }
    if (found == count) {
      char name[QV_FINGERPRINT_SIZE + 64];
      snprintf(name, sizeof name, "cache-%s_*_of_%05ld.arrow", fp, count);
      qv_hf_source *s = NULL;
      st = add_source(d, QV_HF_SOURCE_GROUP, name, -1, fp, &s, err);
      for (long r = 0; r < count && st == QV_OK; r++)
        st = source_add_file(d, d->n_sources - 1, members[r], err);
    }
    free(members);
  }
  for (int64_t i = 0; i < d->n_files && st == QV_OK; i++) {
    qv_hf_file *f = &d->files[i];
    if (f->role != QV_HF_FILE_DATA || f->source >= 0) continue;
    qv_hf_source *s = NULL;
    st = add_source(d, QV_HF_SOURCE_FILE, f->name, -1, NULL, &s, err);
    if (st == QV_OK) st = source_add_file(d, d->n_sources - 1, i, err);
  }
  return st;
}

qv_status qv_hf_dir_open(const char *path, qv_hf_dir **out, qv_error *err) {
  return qv_hf_dir_open_known(path, NULL, out, err);
}

qv_status qv_hf_dir_open_known(const char *path, const qv_hf_known_file *known, qv_hf_dir **out,
                               qv_error *err) {
  struct stat sb;
  if (stat(path, &sb) != 0) return qv_error_set(err, QV_EIO, "%s: %s", path, strerror(errno));
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
      d->splits[0].dir =
          slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : dup_str(".");
      qv_hf_file_role role = QV_HF_FILE_DATA;
      int64_t rows = 0;
      qv_table *t = NULL;
      if (d->splits[0].dir == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
      if (st == QV_OK) st = file_info(path, &role, &rows, &t, err);
      if (st == QV_OK)
        st = add_file(&d->splits[0].files, &d->splits[0].n_files, base_name(path), path, role, rows,
                      t, err);
      qv_table_unref(t);
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
      if (st == QV_OK && real == NULL)
        st = qv_error_set(err, QV_EIO, "%s: %s", path, strerror(errno));
      for (int64_t i = 0; i < n && st == QV_OK; i++) {
        d->n_splits = i + 1;
        char *sdir = join_path(path, names[i]);
        char what[64];
        snprintf(what, sizeof what, "dataset_dict.json: split");
        if (sdir == NULL || (d->splits[i].name = dup_str(names[i])) == NULL)
          st = qv_error_set(err, QV_ENOMEM, "out of memory");
        struct stat ss;
        if (st == QV_OK && lstat(sdir, &ss) != 0 && errno == ENOENT) {
          /* A split whose directory is missing fails when it is opened,
           * naming it; the other splits stay usable. */
          qv_error serr = {{0}};
          qv_error_set(&serr, QV_EINVAL, "%s: split '%s' of %s is missing (no such directory)",
                       sdir, names[i], dict_path);
          st = keep_split_error(QV_EINVAL, &d->splits[i], &serr, err);
          free(sdir);
          continue;
        }
        if (st == QV_OK) st = check_inside(real, sdir, what, names[i], err);
        if (st == QV_OK) {
          qv_error serr = {{0}};
          st =
              keep_split_error(open_dataset(sdir, &d->splits[i], &serr), &d->splits[i], &serr, err);
        }
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
      if (st == QV_OK) st = list_arrow_files(path, known, &d->splits[0], d, err);
      if (st == QV_OK) st = build_sources(d, err);
    } else {
      d->layout = QV_HF_LAYOUT_CACHE;
      st = list_arrow_files(path, known, NULL, d, err);
      if (st == QV_OK && d->n_files == 0)
        st = qv_error_set(err, QV_EINVAL,
                          "%s: not a datasets directory: no state.json, dataset_dict.json or "
                          "*.arrow file",
                          path);
      if (st == QV_OK) st = open_builder_splits(path, d, err);
      if (st == QV_OK) st = build_sources(d, err);
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
