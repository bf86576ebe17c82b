/*
 * hfdir.c — the CLI's view of Hugging Face `datasets` directories:
 * `quiver info` on a save_to_disk Dataset / DatasetDict directory or a
 * load_dataset cache directory (builder splits, every .arrow file with its
 * role, and for each indices mapping the dataset it maps), and `quiver
 * head` / `quiver get` on anything the dataset layer opens (directories,
 * indices mapping files, `--data` overrides), read through qv_dataset
 * (optionally with ClassLabel names). Top layer.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "quiver/dataset.h"
#include "quiver/hf.h"
#include "quiver/ipc.h"
#include "quiver/print.h"

bool cli_is_directory(const char *path) {
  struct stat sb;
  return strcmp(path, "-") != 0 && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Canonical features JSON (as datasets writes it) as a jansson value. */
static json_t *features_json(const qv_hf_feature *f) {
  if (f == NULL) return json_null();
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  json_t *j = NULL;
  if (qv_hf_feature_emit(f, QV_HF_JSON_COMPACT, &sb, NULL) == QV_OK)
    j = json_loadb(qv_strbuf_cstr(&sb), (size_t)sb.len, 0, NULL);
  qv_strbuf_reset(&sb);
  return j ? j : json_null();
}

static void print_features_text(const qv_hf_feature *f, int indent) {
  if (f == NULL) return;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  for (int32_t i = 0; i < f->n_children; i++) {
    qv_strbuf_clear(&sb);
    if (qv_hf_feature_repr(f->children[i], &sb, NULL) == QV_OK)
      printf("%*s%s: %s\n", indent, "", f->keys[i], qv_strbuf_cstr(&sb));
  }
  qv_strbuf_reset(&sb);
}

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

/* Shards of one split: readers, row counts, and the features datasets
 * would use (dataset_info.json's, else resolved from the first shard). */
typedef struct shard_set {
  int64_t n;
  qv_reader **readers;
  int64_t *prefix; /* prefix[i] = rows before shard i; prefix[n] = total */
  qv_hf_feature *features;
} shard_set;

static void shards_close(shard_set *s) {
  for (int64_t i = 0; i < s->n; i++) qv_reader_close(s->readers[i]);
  free(s->readers);
  free(s->prefix);
  qv_hf_feature_free(s->features);
  memset(s, 0, sizeof *s);
}

static qv_status shards_open(const qv_hf_split *sp, shard_set *s, qv_error *err) {
  memset(s, 0, sizeof *s);
  s->readers = calloc((size_t)sp->n_files + 1, sizeof *s->readers);
  s->prefix = calloc((size_t)sp->n_files + 1, sizeof *s->prefix);
  if (s->readers == NULL || s->prefix == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  qv_read_options opts = {QV_VALIDATE_DEFAULT, true, 0};
  for (int64_t i = 0; i < sp->n_files; i++) {
    qv_status st = qv_reader_open_path(sp->files[i].path, &opts, &s->readers[i], err);
    if (st != QV_OK) return qv_error_prefix(err, st, "%s: ", sp->files[i].path);
    s->n = i + 1;
    if (i > 0 && !qv_schema_equals(qv_reader_schema(s->readers[0]),
                                   qv_reader_schema(s->readers[i]), false))
      return qv_error_set(err, QV_EINVAL, "%s: schema differs from the first shard's (%s)",
                          sp->files[i].path, sp->files[0].name);
    int64_t rows = qv_reader_num_rows(s->readers[i]);
    if (rows < 0 || qv_add_overflow(s->prefix[i], rows, &s->prefix[i + 1]))
      return qv_error_set(err, QV_EINVAL, "%s: row count unknown", sp->files[i].path);
  }
  const qv_hf_feature *info_features = qv_hf_info_features(sp->info);
  if (info_features != NULL) {
    s->features = qv_hf_feature_copy(info_features);
    if (s->features == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  } else if (s->n > 0) {
    QV_RETURN_NOT_OK(qv_hf_features_resolve(qv_reader_schema(s->readers[0]), &s->features, NULL, err));
  }
  return QV_OK;
}

static const char *role_name(qv_hf_file_role r) {
  return r == QV_HF_FILE_INDICES ? "indices" : r == QV_HF_FILE_UNREADABLE ? "unreadable" : "data";
}

static json_t *state_json(const qv_hf_state *st) {
  json_t *o = json_object();
  json_object_set_new(o, "fingerprint", str_or_null(st->fingerprint));
  json_object_set_new(o, "split", str_or_null(st->split));
  json_object_set_new(o, "format_type", str_or_null(st->format_type));
  json_t *cols = json_null();
  if (st->has_format_columns) {
    cols = json_array();
    for (int64_t i = 0; i < st->n_format_columns; i++)
      json_array_append_new(cols, json_string(st->format_columns[i]));
  }
  json_object_set_new(o, "format_columns", cols);
  json_t *kw = json_loads(st->format_kwargs ? st->format_kwargs : "{}", 0, NULL);
  json_object_set_new(o, "format_kwargs", kw ? kw : json_object());
  json_object_set_new(o, "output_all_columns", json_boolean(st->output_all_columns));
  return o;
}

/* Info of one Dataset split (a Dataset dir or one split of a dict). */
static qv_status split_info(const qv_hf_split *sp, json_t **out_json, bool as_json, qv_error *err) {
  if (sp->error != NULL) { /* a builder split that cannot be opened */
    if (as_json)
    {
      json_t *o = json_object();
      json_object_set_new(o, "name", str_or_null(sp->name));
      json_object_set_new(o, "dir", str_or_null(sp->dir));
      json_object_set_new(o, "error", json_string(sp->error));
      *out_json = o;
    }
    else
      printf("split %s:\n  error:        %s\n", sp->name, sp->error);
    return QV_OK;
  }
  shard_set s;
  qv_status st = shards_open(sp, &s, err);
  if (st != QV_OK) {
    shards_close(&s);
    return st;
  }
  int64_t rows = s.prefix[s.n];
  if (as_json) {
    json_t *o = json_object();
    json_object_set_new(o, "name", str_or_null(sp->name));
    json_object_set_new(o, "dir", json_string(sp->dir));
    json_object_set_new(o, "rows", json_integer(rows));
    json_object_set_new(o, "num_shards", json_integer(s.n));
    json_t *files = json_array();
    for (int64_t i = 0; i < s.n; i++) {
      json_t *f = json_object();
      json_object_set_new(f, "name", json_string(sp->files[i].name));
      json_object_set_new(f, "rows", json_integer(s.prefix[i + 1] - s.prefix[i]));
      json_object_set_new(f, "format", json_string(qv_reader_format(s.readers[i]) == QV_FORMAT_FILE
                                                       ? "file"
                                                       : "stream"));
      json_array_append_new(files, f);
    }
    json_object_set_new(o, "files", files);
    if (sp->state) {
      json_t *stj = state_json(sp->state);
      json_object_set(o, "fingerprint", json_object_get(stj, "fingerprint"));
      json_object_set_new(o, "state", stj);
    } else if (sp->fingerprint) {
      json_object_set_new(o, "fingerprint", json_string(sp->fingerprint));
    }
    json_t *schema_fields = json_array();
    if (s.n > 0) {
      const qv_schema *sc = qv_reader_schema(s.readers[0]);
      for (int32_t i = 0; i < qv_schema_num_fields(sc); i++) {
        char buf[1024];
        qv_type_to_string(qv_schema_field(sc, i)->type, buf, sizeof buf);
        json_array_append_new(schema_fields,
                              json_pack("{s:s,s:s}", "name", qv_schema_field(sc, i)->name,
                                        "type", buf));
      }
    }
    json_object_set_new(o, "schema", schema_fields);
    json_object_set_new(o, "features", features_json(s.features));
    *out_json = o;
  } else {
    if (sp->name) printf("split %s:\n", sp->name);
    int ind = sp->name ? 2 : 0;
    printf("%*srows:         %lld\n", ind, "", (long long)rows);
    printf("%*sshards:       %lld\n", ind, "", (long long)s.n);
    for (int64_t i = 0; i < s.n; i++)
      printf("%*s  %s  (%lld rows)\n", ind, "", sp->files[i].name,
             (long long)(s.prefix[i + 1] - s.prefix[i]));
    if (sp->state) {
      printf("%*sfingerprint:  %s\n", ind, "", sp->state->fingerprint);
      if (sp->state->split) printf("%*ssplit:        %s\n", ind, "", sp->state->split);
      if (sp->state->format_type) printf("%*sformat:       %s\n", ind, "", sp->state->format_type);
    } else if (sp->fingerprint) {
      printf("%*sfingerprint:  %s\n", ind, "", sp->fingerprint);
    }
    if (s.n > 0) {
      printf("%*sschema:\n", ind, "");
      const qv_schema *sc = qv_reader_schema(s.readers[0]);
      for (int32_t i = 0; i < qv_schema_num_fields(sc); i++) {
        char buf[1024];
        qv_type_to_string(qv_schema_field(sc, i)->type, buf, sizeof buf);
        printf("%*s  %s: %s\n", ind, "", qv_schema_field(sc, i)->name, buf);
      }
    }
    if (s.features) {
      printf("%*sfeatures:\n", ind, "");
      print_features_text(s.features, ind + 2);
    }
  }
  shards_close(&s);
  return QV_OK;
}

/* What an indices mapping file of `d` maps: JSON members (arr != NULL)
 * or a text line. */
static qv_status indices_target(const qv_hf_dir *d, const qv_hf_file *f, json_t *o,
                                qv_error *err) {
  int64_t *idx = NULL, n = 0, max = -1;
  QV_RETURN_NOT_OK(qv_dataset_indices_candidates(d, f->path, &idx, &n, &max, err));
  if (o != NULL) {
    json_object_set_new(o, "max_index", max >= 0 ? json_integer(max) : json_null());
    json_object_set_new(o, "status", json_string(n == 1 ? "resolved" : n ? "ambiguous" : "none"));
    json_object_set_new(o, "maps", n == 1 ? json_string(d->sources[idx[0]].name) : json_null());
    json_t *cands = json_array();
    for (int64_t i = 0; i < n; i++) {
      const qv_hf_source *s = &d->sources[idx[i]];
      json_array_append_new(cands, json_pack("{s:s,s:s,s:I}", "name", s->name, "kind",
                                             qv_hf_source_kind_name(s->kind), "rows",
                                             (json_int_t)s->rows));
    }
    json_object_set_new(o, "candidates", cands);
  } else if (n == 0) {
    printf("    maps: nothing found (no dataset here has more than %lld rows)\n", (long long)max);
  } else {
    printf("    %s", n == 1 ? "maps: " : "ambiguous: ");
    for (int64_t i = 0; i < n; i++) {
      const qv_hf_source *s = &d->sources[idx[i]];
      printf("%s%s '%s' (%lld rows)", i ? ", " : "", qv_hf_source_kind_name(s->kind), s->name,
             (long long)s->rows);
    }
    printf("\n");
  }
  free(idx);
  return QV_OK;
}

/* One .arrow file of a cache (or Dataset) directory. */
static qv_status dir_file_info(const qv_hf_dir *d, const qv_hf_file *f, json_t *arr,
                               qv_error *err) {
  if (f->role == QV_HF_FILE_UNREADABLE) {
    if (arr != NULL) {
      json_t *o = json_object();
      json_object_set_new(o, "name", json_string(f->name));
      json_object_set_new(o, "role", json_string(role_name(f->role)));
      json_object_set_new(o, "error", json_string(f->error));
      json_array_append_new(arr, o);
    } else {
      printf("  %s  (unreadable: %s)\n", f->name, f->error);
    }
    return QV_OK;
  }
  qv_reader *r = NULL;
  QV_RETURN_NOT_OK(qv_reader_open_path(f->path, NULL, &r, err));
  const qv_schema *sc = qv_reader_schema(r);
  qv_hf_feature *feats = NULL;
  qv_error ferr;
  qv_status fst = qv_hf_features_resolve(sc, &feats, NULL, &ferr);
  qv_hf_metadata md = {NULL, NULL};
  const qv_kv *kv = qv_metadata_find(&sc->metadata, QV_HF_METADATA_KEY);
  if (kv) (void)qv_hf_metadata_parse(kv->value, kv->value_len, &md, NULL);
  const char *dataset = f->source >= 0 ? d->sources[f->source].name : NULL;
  qv_status st = QV_OK;
  if (arr != NULL) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(f->name));
    json_object_set_new(o, "role", json_string(role_name(f->role)));
    json_object_set_new(o, "rows", json_integer(f->rows));
    json_object_set_new(o, "fingerprint", str_or_null(md.fingerprint));
    json_object_set_new(o, "features", features_json(feats));
    if (fst != QV_OK) json_object_set_new(o, "features_error", json_string(ferr.message));
    if (f->role == QV_HF_FILE_DATA) json_object_set_new(o, "dataset", str_or_null(dataset));
    else st = indices_target(d, f, o, err);
    json_array_append_new(arr, o);
  } else {
    printf("  %s  (%s, %lld rows%s%s)\n", f->name, role_name(f->role), (long long)f->rows,
           md.fingerprint ? ", fingerprint " : "", md.fingerprint ? md.fingerprint : "");
    if (f->role == QV_HF_FILE_INDICES) st = indices_target(d, f, NULL, err);
    else if (dataset != NULL) printf("    dataset: %s\n", dataset);
    if (f->role == QV_HF_FILE_DATA) {
      if (fst == QV_OK) print_features_text(feats, 4);
      else printf("    features: %s\n", ferr.message);
    }
  }
  qv_hf_metadata_reset(&md);
  qv_hf_feature_free(feats);
  qv_reader_close(r);
  return st;
}

/* The datasets of a cache / Dataset directory (what indices files map). */
static json_t *sources_json(const qv_hf_dir *d) {
  json_t *a = json_array();
  for (int64_t i = 0; i < d->n_sources; i++) {
    const qv_hf_source *s = &d->sources[i];
    json_t *o = json_pack("{s:s,s:s,s:I}", "name", s->name, "kind",
                          qv_hf_source_kind_name(s->kind), "rows", (json_int_t)s->rows);
    const char *fp = s->fingerprint;
    if (s->split >= 0)
      fp = d->splits[s->split].state ? d->splits[s->split].state->fingerprint
                                     : d->splits[s->split].fingerprint;
    if (fp) json_object_set_new(o, "fingerprint", json_string(fp));
    json_array_append_new(a, o);
  }
  return a;
}

int cli_info_dir(const char *path, bool as_json) {
  qv_error err;
  qv_hf_dir *d = NULL;
  qv_status st = qv_hf_dir_open(path, &d, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  json_t *o = as_json ? json_object() : NULL;
  if (as_json) {
    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "layout", json_string(qv_hf_layout_name(d->layout)));
  } else {
    printf("path:         %s\n", path);
    printf("layout:       datasets %s\n", qv_hf_layout_name(d->layout));
  }
  json_t *splits = as_json ? json_array() : NULL;
  for (int64_t i = 0; st == QV_OK && i < d->n_splits; i++) {
    json_t *sj = NULL;
    st = split_info(&d->splits[i], &sj, as_json, &err);
    if (st == QV_OK && as_json) json_array_append_new(splits, sj);
  }
  if (as_json) {
    /* A Dataset directory is one dataset: lift its summary to the top. */
    if (st == QV_OK && d->layout == QV_HF_LAYOUT_DATASET) {
      json_t *one = json_array_get(splits, 0);
      const char *keys[] = {"rows", "num_shards", "fingerprint", "schema", "features", "state"};
      for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (json_object_get(one, keys[k]))
          json_object_set(o, keys[k], json_object_get(one, keys[k]));
    }
    json_object_set_new(o, "splits", splits);
  }
  /* Every .arrow file of a cache directory; the files of a Dataset
   * directory beyond its shards (cache files of its transforms). */
  bool listed = false;
  json_t *files = as_json ? json_array() : NULL;
  for (int64_t i = 0; st == QV_OK && i < d->n_files; i++) {
    const qv_hf_file *f = &d->files[i];
    if (d->layout == QV_HF_LAYOUT_DATASET && f->source >= 0 &&
        d->sources[f->source].kind == QV_HF_SOURCE_DATASET)
      continue;
    if (!as_json && !listed) printf("files:\n");
    listed = true;
    st = dir_file_info(d, f, files, &err);
  }
  if (as_json && (d->layout == QV_HF_LAYOUT_CACHE || listed)) {
    json_object_set_new(o, "files", files);
    json_object_set_new(o, "datasets", sources_json(d));
  } else {
    json_decref(files);
  }
  if (st == QV_OK && as_json) {
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
  }
  json_decref(o);
  qv_hf_dir_free(d);
  if (st != QV_OK) return cli_fail(st, &err);
  return fflush(stdout) == 0 ? QV_EXIT_OK : QV_EXIT_DATA;
}

/* ------------------------------------------------------------------------ */
/* head / get through the dataset layer                                      */

bool cli_is_indices_file(const char *path) {
  if (strcmp(path, "-") == 0 || cli_is_directory(path)) return false;
  /* Only a cache-* file with one uint64 column "indices" can be one (the
   * layout's rule): decide the common "no" from the schema alone, without
   * indexing a stream's batches (which the layout's row counts need). */
  const char *slash = strrchr(path, '/');
  if (strncmp(slash ? slash + 1 : path, "cache-", 6) != 0) return false;
  qv_index_options lazy = {true, QV_INDEX_CACHE_DEFAULT};
  qv_reader *r = NULL;
  if (qv_reader_open_file(path, NULL, &lazy, &r, NULL) != QV_OK) return false;
  const qv_schema *s = qv_reader_schema(r);
  bool maybe = qv_schema_num_fields(s) == 1 && qv_schema_field(s, 0)->type->id == QV_UINT64 &&
               strcmp(qv_schema_field(s, 0)->name, "indices") == 0;
  qv_reader_close(r);
  if (!maybe) return false;
  qv_hf_dir *d = NULL;
  if (qv_hf_dir_open(path, &d, NULL) != QV_OK) return false;
  bool yes = d->splits[0].files[0].role == QV_HF_FILE_INDICES;
  qv_hf_dir_free(d);
  return yes;
}

static qv_status put_row(const qv_array *b, int64_t row, const qv_hf_feature *features,
                         qv_strbuf *sb, qv_error *err) {
  qv_strbuf_clear(sb);
  QV_RETURN_NOT_OK(features ? qv_hf_format_row_json(b, row, features, sb, err)
                            : qv_format_row_json(b, row, sb, err));
  QV_RETURN_NOT_OK(qv_strbuf_append_char(sb, '\n', err));
  if (fwrite(qv_strbuf_cstr(sb), 1, (size_t)sb->len, stdout) != (size_t)sb->len)
    return qv_error_set(err, QV_EIO, "cannot write to standard output");
  return QV_OK;
}

qv_status cli_open_dataset(const char *path, const char *split, const char *data,
                           qv_dataset **out, qv_error *err) {
  if (data != NULL) {
    if (cli_is_directory(path))
      return qv_error_set(err, QV_EARG, "--data applies to an indices mapping file, not to the "
                          "directory %s", path);
    qv_dataset *base = NULL;
    QV_RETURN_NOT_OK(qv_dataset_open(data, split, &base, err));
    qv_status st = qv_dataset_with_indices_file(base, path, out, err);
    qv_dataset_unref(base);
    return st;
  }
  if (split == NULL && cli_is_directory(path)) {
    /* Several splits: say how to choose one. */
    char **names = NULL;
    int64_t n = 0;
    qv_hf_dir *d = NULL;
    if (qv_hf_dir_open(path, &d, NULL) == QV_OK && d->n_splits > 1 &&
        qv_dataset_dict_splits(path, &names, &n, NULL) == QV_OK) {
      qv_strbuf sb;
      qv_strbuf_init(&sb);
      for (int64_t i = 0; i < n; i++) qv_strbuf_printf(&sb, NULL, "%s%s", i ? ", " : "", names[i]);
      qv_status st = qv_error_set(err, QV_EARG, "%s is a %s with splits %s: choose one with "
                                  "--split NAME",
                                  path, d->layout == QV_HF_LAYOUT_DATASET_DICT
                                            ? "DatasetDict"
                                            : "load_dataset cache directory",
                                  qv_strbuf_cstr(&sb));
      qv_strbuf_reset(&sb);
      qv_table_free_paths(names, n);
      qv_hf_dir_free(d);
      return st;
    }
    qv_hf_dir_free(d);
  }
  return qv_dataset_open(path, split, out, err);
}

int cli_rows_dataset(const char *path, const char *split, const char *data, bool decode_labels,
                     int64_t head_n, const int64_t *rows, int64_t n_rows) {
  qv_error err;
  qv_dataset *ds = NULL;
  qv_status st = cli_open_dataset(path, split, data, &ds, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  const qv_hf_feature *features = decode_labels ? qv_dataset_features(ds) : NULL;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_array *b = NULL;
  if (rows == NULL && head_n > 0) {
    int64_t total = qv_dataset_num_rows(ds), n = head_n < total ? head_n : total;
    qv_dataset_iter *it = NULL;
    if (n > 0) st = qv_dataset_iter_new(ds, n < 1000 ? n : 1000, false, &it, &err);
    for (int64_t done = 0; st == QV_OK && done < n;) {
      st = qv_dataset_iter_next(it, &b, NULL, &err);
      if (st != QV_OK || b == NULL) break;
      for (int64_t i = 0; st == QV_OK && i < b->length && done < n; i++, done++)
        st = put_row(b, i, features, &sb, &err);
      qv_array_unref(b);
      b = NULL;
    }
    qv_dataset_iter_free(it);
  } else if (rows != NULL) {
    int64_t total = qv_dataset_num_rows(ds);
    for (int64_t k = 0; st == QV_OK && k < n_rows; k++)
      if (rows[k] >= total)
        st = qv_error_set(&err, QV_ERANGE,
                          "%s: row %lld is out of range (the dataset has %lld rows)", path,
                          (long long)rows[k], (long long)total);
    if (st == QV_OK) st = qv_dataset_take(ds, rows, n_rows, &b, &err);
    for (int64_t k = 0; st == QV_OK && k < n_rows; k++) st = put_row(b, k, features, &sb, &err);
    qv_array_unref(b);
  }
  qv_strbuf_reset(&sb);
  qv_dataset_unref(ds);
  if (st != QV_OK) return cli_fail(st, &err);
  return fflush(stdout) == 0 ? QV_EXIT_OK : QV_EXIT_DATA;
}
/* ------------------------------------------------------------------------ */
/* quiver debug hf-emit / hf-features                                        */

static int emit_out(qv_status st, qv_strbuf *sb, qv_error *err) {
  if (st == QV_OK && fwrite(qv_strbuf_cstr(sb), 1, (size_t)sb->len, stdout) != (size_t)sb->len)
    st = qv_error_set(err, QV_EIO, "cannot write to standard output");
  qv_strbuf_reset(sb);
  if (st != QV_OK) return cli_fail(st, err);
  return fflush(stdout) == 0 ? QV_EXIT_OK : QV_EXIT_DATA;
}

/* `quiver debug hf-emit PATH [--what=metadata|state|info|dict]`: print, byte
 * for byte, what quiver would write for PATH: the "huggingface" metadata
 * value of a file (features resolved as datasets does), or state.json /
 * dataset_info.json of a Dataset directory / dataset_dict.json of a
 * DatasetDict. */
int cli_debug_hf_emit(int argc, char **argv) {
  const char *path = NULL, *what = NULL;
  for (int i = 1; i < argc; i++) {
    bool matched;
    const char *v = cli_opt_value(argv[i], "--what", argc, argv, &i, &matched);
    if (matched) {
      if (v == NULL) return cli_usage("debug hf-emit", "option --what needs a value");
      what = v;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return cli_usage("debug hf-emit", "unknown option '%s'", argv[i]);
    } else if (path == NULL) {
      path = argv[i];
    } else {
      return cli_usage("debug hf-emit", "unexpected argument '%s'", argv[i]);
    }
  }
  if (path == NULL) return cli_usage("debug hf-emit", "missing PATH");
  if (what == NULL) what = cli_is_directory(path) ? "state" : "metadata";
  qv_error err;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_status st = QV_OK;
  if (strcmp(what, "metadata") == 0) {
    qv_reader *r = NULL;
    st = qv_reader_open_path(path, NULL, &r, &err);
    qv_hf_feature *features = NULL;
    qv_hf_metadata md = {NULL, NULL};
    if (st == QV_OK) st = qv_hf_features_resolve(qv_reader_schema(r), &features, NULL, &err);
    const qv_kv *kv = st == QV_OK ? qv_metadata_find(&qv_reader_schema(r)->metadata,
                                                      QV_HF_METADATA_KEY)
                                  : NULL;
    if (kv != NULL) st = qv_hf_metadata_parse(kv->value, kv->value_len, &md, &err);
    if (st == QV_OK) st = qv_hf_metadata_emit(features, md.fingerprint, &sb, &err);
    qv_hf_metadata_reset(&md);
    qv_hf_feature_free(features);
    qv_reader_close(r);
    return emit_out(st, &sb, &err);
  }
  if (strcmp(what, "state") != 0 && strcmp(what, "info") != 0 && strcmp(what, "dict") != 0)
    return cli_usage("debug hf-emit", "--what expects metadata, state, info or dict");
  qv_hf_dir *d = NULL;
  st = qv_hf_dir_open(path, &d, &err);
  if (st == QV_OK && strcmp(what, "dict") == 0) {
    if (d->layout != QV_HF_LAYOUT_DATASET_DICT) {
      st = qv_error_set(&err, QV_EARG, "%s is not a DatasetDict directory", path);
    } else {
      char **names = calloc((size_t)d->n_splits + 1, sizeof *names);
      if (names == NULL) st = qv_error_set(&err, QV_ENOMEM, "out of memory");
      for (int64_t i = 0; names && i < d->n_splits; i++) names[i] = d->splits[i].name;
      if (st == QV_OK) st = qv_hf_dict_emit(names, d->n_splits, &sb, &err);
      free(names);
    }
  } else if (st == QV_OK) {
    if (d->layout != QV_HF_LAYOUT_DATASET)
      st = qv_error_set(&err, QV_EARG, "%s is not a Dataset directory", path);
    else if (what[0] == 's')
      st = qv_hf_state_emit(d->splits[0].state, &sb, &err);
    else
      st = qv_hf_info_emit(d->splits[0].info, &sb, &err);
  }
  qv_hf_dir_free(d);
  return emit_out(st, &sb, &err);
}

/* `quiver debug hf-features FILE|-`: read a Features JSON object and print
 * it as datasets would write it (json.dumps of Features.from_dict(...)
 * .to_dict()), legacy forms normalised. */
int cli_debug_hf_features(int argc, char **argv) {
  if (argc != 2) return cli_usage("debug hf-features", "expected one FILE (or '-')");
  qv_error err;
  qv_buffer *buf = NULL;
  qv_status st;
  if (strcmp(argv[1], "-") == 0) st = qv_buffer_read_fd(0, 64 << 20, &buf, &err);
  else st = qv_buffer_map_file(argv[1], &buf, NULL, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  qv_hf_feature *f = NULL;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  st = qv_hf_features_parse((const char *)buf->data, buf->size, &f, &err);
  if (st == QV_OK) st = qv_hf_feature_emit(f, QV_HF_JSON_COMPACT, &sb, &err);
  qv_hf_feature_free(f);
  qv_buffer_unref(buf);
  return emit_out(st, &sb, &err);
}
