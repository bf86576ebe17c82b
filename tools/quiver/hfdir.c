/*
 * hfdir.c — the CLI's view of Hugging Face `datasets` directories:
 * `quiver info` on a save_to_disk Dataset / DatasetDict directory or a
 * load_dataset cache directory (builder splits, every .arrow file with its
 * role, and for each indices mapping the dataset it maps), and `quiver
 * head` / `quiver get` on anything the dataset layer opens (directories,
 * indices mapping files, `--data` overrides), read through qv_dataset
 * (optionally with ClassLabel names). The dataset layer classifies and
 * opens (qv_path_classify, qv_dataset_open_classified); this file only
 * puts its typed choices (qv_dataset_choice) in the CLI's words. Top
 * layer.
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

/* "file" or "stream": the IPC format of a data file, by its magic. */
static const char *file_format(const char *path) {
  qv_path_kind k = QV_PATH_ARROW_STREAM;
  if (qv_path_sniff(path, &k, NULL) != QV_OK) return "stream"; /* listed as readable */
  return k == QV_PATH_ARROW_FILE ? "file" : "stream";
}

/* Info of one Dataset split (a Dataset dir or one split of a dict), opened
 * by the dataset layer as head/get open it (its shards concatenated, cast
 * to the features). */
static qv_status split_info(const qv_path_info *info, const qv_hf_split *sp, json_t **out_json,
                            bool as_json, qv_error *err) {
  if (sp->error != NULL) { /* a builder split that cannot be opened */
    if (as_json) {
      json_t *o = json_object();
      json_object_set_new(o, "name", str_or_null(sp->name));
      json_object_set_new(o, "dir", str_or_null(sp->dir));
      json_object_set_new(o, "error", json_string(sp->error));
      *out_json = o;
    } else printf("split %s:\n  error:        %s\n", sp->name, sp->error);
    return QV_OK;
  }
  qv_dataset *ds = NULL;
  qv_dataset_open_options oo = {info->dir->layout == QV_HF_LAYOUT_DATASET ? NULL : sp->name, NULL,
                                NULL};
  QV_RETURN_NOT_OK(qv_dataset_open_classified(info, &oo, &ds, err));
  int64_t rows = qv_dataset_num_rows(ds);
  const qv_schema *sc = qv_dataset_schema(ds);
  const qv_hf_feature *features = qv_dataset_features(ds);
  if (as_json) {
    json_t *o = json_object();
    json_object_set_new(o, "name", str_or_null(sp->name));
    json_object_set_new(o, "dir", json_string(sp->dir));
    json_object_set_new(o, "rows", json_integer(rows));
    json_object_set_new(o, "num_shards", json_integer(sp->n_files));
    json_t *files = json_array();
    for (int64_t i = 0; i < sp->n_files; i++) {
      json_t *f = json_object();
      json_object_set_new(f, "name", json_string(sp->files[i].name));
      json_object_set_new(f, "rows", json_integer(sp->files[i].rows));
      json_object_set_new(f, "format", json_string(file_format(sp->files[i].path)));
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
    for (int32_t i = 0; sp->n_files > 0 && i < qv_schema_num_fields(sc); i++) {
      char buf[1024];
      qv_type_to_string(qv_schema_field(sc, i)->type, buf, sizeof buf);
      json_array_append_new(
          schema_fields, json_pack("{s:s,s:s}", "name", qv_schema_field(sc, i)->name, "type", buf));
    }
    json_object_set_new(o, "schema", schema_fields);
    json_object_set_new(o, "features", features_json(features));
    *out_json = o;
  } else {
    if (sp->name) printf("split %s:\n", sp->name);
    int ind = sp->name ? 2 : 0;
    printf("%*srows:         %lld\n", ind, "", (long long)rows);
    printf("%*sshards:       %lld\n", ind, "", (long long)sp->n_files);
    for (int64_t i = 0; i < sp->n_files; i++)
      printf("%*s  %s  (%lld rows)\n", ind, "", sp->files[i].name, (long long)sp->files[i].rows);
    if (sp->state) {
      printf("%*sfingerprint:  %s\n", ind, "", sp->state->fingerprint);
      if (sp->state->split) printf("%*ssplit:        %s\n", ind, "", sp->state->split);
      if (sp->state->format_type) printf("%*sformat:       %s\n", ind, "", sp->state->format_type);
    } else if (sp->fingerprint) {
      printf("%*sfingerprint:  %s\n", ind, "", sp->fingerprint);
    }
    if (sp->n_files > 0) {
      printf("%*sschema:\n", ind, "");
      for (int32_t i = 0; i < qv_schema_num_fields(sc); i++) {
        char buf[1024];
        qv_type_to_string(qv_schema_field(sc, i)->type, buf, sizeof buf);
        printf("%*s  %s: %s\n", ind, "", qv_schema_field(sc, i)->name, buf);
      }
    }
    if (features) {
      printf("%*sfeatures:\n", ind, "");
      print_features_text(features, ind + 2);
    }
  }
  qv_dataset_unref(ds);
  return QV_OK;
}

/* What an indices mapping file of `d` maps: JSON members (arr != NULL)
 * or a text line. */
static qv_status indices_target(const qv_hf_dir *d, const qv_hf_file *f, json_t *o, qv_error *err) {
  int64_t *idx = NULL, n = 0, max = -1;
  QV_RETURN_NOT_OK(qv_dataset_indices_candidates(d, f->path, &idx, &n, &max, err));
  if (o != NULL) {
    json_object_set_new(o, "max_index", max >= 0 ? json_integer(max) : json_null());
    json_object_set_new(o, "status", json_string(n == 1 ? "resolved" : n ? "ambiguous" : "none"));
    json_object_set_new(o, "maps", n == 1 ? json_string(d->sources[idx[0]].name) : json_null());
    json_t *cands = json_array();
    for (int64_t i = 0; i < n; i++) {
      const qv_hf_source *s = &d->sources[idx[i]];
      json_array_append_new(
          cands, json_pack("{s:s,s:s,s:I}", "name", s->name, "kind",
                           qv_hf_source_kind_name(s->kind), "rows", (json_int_t)s->rows));
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
  qv_table *t = f->table ? qv_table_ref(f->table) : NULL; /* mapped when listed, or now */
  if (t == NULL) QV_RETURN_NOT_OK(qv_table_open_path(f->path, NULL, &t, err));
  const qv_schema *sc = qv_table_schema(t);
  qv_hf_feature *feats = NULL;
  qv_error ferr;
  /* Features and fingerprint from one parse of the metadata. */
  qv_hf_metadata md = {NULL, NULL};
  qv_status fst = qv_hf_features_resolve_fingerprint(sc, &feats, NULL, &md.fingerprint, &ferr);
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
  qv_table_unref(t);
  return st;
}

/* The datasets of a cache / Dataset directory (what indices files map). */
static json_t *sources_json(const qv_hf_dir *d) {
  json_t *a = json_array();
  for (int64_t i = 0; i < d->n_sources; i++) {
    const qv_hf_source *s = &d->sources[i];
    json_t *o = json_pack("{s:s,s:s,s:I}", "name", s->name, "kind", qv_hf_source_kind_name(s->kind),
                          "rows", (json_int_t)s->rows);
    const char *fp = s->fingerprint;
    if (s->split >= 0)
      fp = d->splits[s->split].state ? d->splits[s->split].state->fingerprint
                                     : d->splits[s->split].fingerprint;
    if (fp) json_object_set_new(o, "fingerprint", json_string(fp));
    json_array_append_new(a, o);
  }
  return a;
}

/* Files listed one by one in `quiver info DIR` text; beyond, one line per
 * role with counts (a day of `datasets` use leaves dozens of cache files)
 * unless --files is given. --json always lists every file. */
#define CLI_INFO_MAX_LISTED 20

/* The summary of the files of a directory: counts per role, and per
 * status of what the indices mappings map. */
static qv_status files_summary(const qv_hf_dir *d, bool skip_shards, qv_error *err) {
  int64_t n = 0, data = 0, data_rows = 0, indices = 0, unreadable = 0, resolved = 0, ambiguous = 0,
          none = 0;
  for (int64_t i = 0; i < d->n_files; i++) {
    const qv_hf_file *f = &d->files[i];
    if (skip_shards && f->source >= 0 && d->sources[f->source].kind == QV_HF_SOURCE_DATASET)
      continue;
    n++;
    if (f->role == QV_HF_FILE_UNREADABLE) {
      unreadable++;
    } else if (f->role == QV_HF_FILE_DATA) {
      data++;
      data_rows += f->rows;
    } else {
      indices++;
      int64_t *idx = NULL, k = 0, max = -1;
      QV_RETURN_NOT_OK(qv_dataset_indices_candidates(d, f->path, &idx, &k, &max, err));
      free(idx);
      if (k == 1) resolved++;
      else if (k > 1) ambiguous++;
      else none++;
    }
  }
  printf("files:        %lld .arrow files (list them with --files, or --json)\n", (long long)n);
  if (data) printf("  data:       %lld (%lld rows)\n", (long long)data, (long long)data_rows);
  if (indices)
    printf("  indices:    %lld (%lld map one dataset, %lld ambiguous, %lld map none)\n",
           (long long)indices, (long long)resolved, (long long)ambiguous, (long long)none);
  if (unreadable) printf("  unreadable: %lld\n", (long long)unreadable);
  return QV_OK;
}

int cli_info_dir(const char *path, bool as_json, bool all_files) {
  qv_error err;
  qv_path_info info;
  qv_status st = qv_path_classify(path, &info, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  const qv_hf_dir *d = info.dir;
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
    st = split_info(&info, &d->splits[i], &sj, as_json, &err);
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
  bool skip_shards = d->layout == QV_HF_LAYOUT_DATASET;
  int64_t n_listed = 0;
  for (int64_t i = 0; i < d->n_files; i++)
    n_listed += !(skip_shards && d->files[i].source >= 0 &&
                  d->sources[d->files[i].source].kind == QV_HF_SOURCE_DATASET);
  bool listed = false;
  json_t *files = as_json ? json_array() : NULL;
  if (st == QV_OK && !as_json && !all_files && n_listed > CLI_INFO_MAX_LISTED) {
    st = files_summary(d, skip_shards, &err);
  } else {
    for (int64_t i = 0; st == QV_OK && i < d->n_files; i++) {
      const qv_hf_file *f = &d->files[i];
      if (skip_shards && f->source >= 0 && d->sources[f->source].kind == QV_HF_SOURCE_DATASET)
        continue;
      if (!as_json && !listed) printf("files:\n");
      listed = true;
      st = dir_file_info(d, f, files, &err);
    }
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
  qv_path_info_reset(&info);
  if (st != QV_OK) return cli_fail(st, &err);
  return fflush(stdout) == 0 ? QV_EXIT_OK : QV_EXIT_DATA;
}

/* ------------------------------------------------------------------------ */
/* head / get through the dataset layer                                      */

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

/* The library's failure in the CLI's words: how to choose a split, or
 * the option that names the data an indices mapping indexes. */
static qv_status choice_words(qv_status st, const qv_dataset_choice *c, qv_error *err) {
  if (c->kind == QV_CHOICE_SPLIT && c->wanted == NULL && c->n > 1 &&
      c->container != QV_PATH_DATASET) {
    qv_strbuf sb;
    qv_strbuf_init(&sb);
    for (int64_t i = 0; i < c->n; i++)
      qv_strbuf_printf(&sb, NULL, "%s%s", i ? ", " : "", c->names[i]);
    st = qv_error_set(
        err, QV_EARG, "%s is a %s with splits %s: choose one with --split NAME", c->path,
        c->container == QV_PATH_DATASET_DICT ? "DatasetDict" : "load_dataset cache directory",
        qv_strbuf_cstr(&sb));
    qv_strbuf_reset(&sb);
  } else if (c->kind == QV_CHOICE_DATA) {
    size_t n = strlen(err->message);
    snprintf(err->message + n, sizeof err->message - n, " (quiver: --data PATH [--split NAME])");
  }
  return st;
}

qv_status cli_open_classified(const qv_path_info *info, const char *split, const char *data,
                              qv_dataset **out, qv_error *err) {
  if (data != NULL && info->dir != NULL)
    return qv_error_set(err, QV_EARG,
                        "--data applies to an indices mapping file, not to the "
                        "directory %s",
                        info->path);
  qv_dataset_choice choice;
  memset(&choice, 0, sizeof choice);
  qv_dataset_open_options o = {split, data, &choice};
  qv_status st = qv_dataset_open_classified(info, &o, out, err);
  if (st != QV_OK) st = choice_words(st, &choice, err);
  qv_dataset_choice_reset(&choice);
  return st;
}

qv_status cli_open_dataset(const char *path, const char *split, const char *data, qv_dataset **out,
                           qv_error *err) {
  qv_path_info info;
  QV_RETURN_NOT_OK(qv_path_classify(path, &info, err));
  qv_status st = cli_open_classified(&info, split, data, out, err);
  qv_path_info_reset(&info);
  return st;
}

qv_status cli_resolve_row(const char *path, const char *what, int64_t row, int64_t total,
                          int64_t *out, qv_error *err) {
  int64_t r = row < 0 ? total + row : row;
  if (r < 0 || r >= total)
    return qv_error_set(err, QV_ERANGE, "%s: row %lld is out of range (the %s has %lld rows%s)",
                        path, (long long)row, what, (long long)total,
                        row < 0 ? "; negative rows count from the end" : "");
  *out = r;
  return QV_OK;
}

int cli_rows_dataset(const qv_path_info *info, const char *split, const char *data,
                     bool decode_labels, int64_t head_n, const int64_t *rows, int64_t n_rows) {
  qv_error err;
  qv_dataset *ds = NULL;
  qv_status st = cli_open_classified(info, split, data, &ds, &err);
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
    int64_t *resolved = calloc((size_t)(n_rows > 0 ? n_rows : 1), sizeof *resolved);
    if (resolved == NULL) st = qv_error_set(&err, QV_ENOMEM, "out of memory");
    for (int64_t k = 0; st == QV_OK && k < n_rows; k++)
      st = cli_resolve_row(info->path, "dataset", rows[k], total, &resolved[k], &err);
    if (st == QV_OK) st = qv_dataset_take(ds, resolved, n_rows, &b, &err);
    for (int64_t k = 0; st == QV_OK && k < n_rows; k++) st = put_row(b, k, features, &sb, &err);
    qv_array_unref(b);
    free(resolved);
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
    if (st == QV_OK)
      st = qv_hf_features_resolve_fingerprint(qv_reader_schema(r), &features, NULL, &md.fingerprint,
                                              &err);
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
    else if (what[0] == 's') st = qv_hf_state_emit(d->splits[0].state, &sb, &err);
    else st = qv_hf_info_emit(d->splits[0].info, &sb, &err);
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
