/*
 * dataset.c — the qv_dataset object (datasets' Dataset, arrow_dataset.py):
 * lifetime, opening a file or a save_to_disk directory, inspection, row
 * access and iteration through the indices mapping, cache files, and the
 * feature-tree helpers the transforms share. Dataset layer, on table + hf.
 *
 * Rows through a mapping: a dataset row r is data row indices[r]. Row
 * access resolves a run of rows to data rows at once (qv_dataset_data_rows
 * walks the mapping's batches) and gathers them with qv_table_gather,
 * which groups rows by source batch; iteration does the same for a window
 * of QV_DATASET_READAHEAD_ROWS rows and hands out zero-copy slices of it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/atomic_internal.h"
#include "dataset/dataset_internal.h"
#include "dataset/hf_internal.h"
#include "quiver/guard.h"
#include "quiver/print.h"

static qv_status oom(qv_error *err) {
  return qv_error_set(err, QV_ENOMEM, "dataset: out of memory");
}

char *qv_ds_strdup(const char *s) {
  if (s == NULL) return NULL;
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

/* ------------------------------------------------------------------------ */
/* Lifetime and metadata                                                     */

static void ds_free(qv_dataset *ds) {
  qv_table_unref(ds->data);
  qv_table_unref(ds->indices);
  qv_hf_feature_free(ds->features);
  free(ds->info_json);
  free(ds->split);
  free(ds->format_type);
  free(ds->format_kwargs);
  for (int32_t i = 0; i < ds->n_format_columns; i++) free(ds->format_columns[i]);
  free(ds->format_columns);
  free(ds);
}

qv_dataset *qv_dataset_ref(qv_dataset *ds) {
  if (ds != NULL) __atomic_add_fetch(&ds->refcount, 1, __ATOMIC_RELAXED);
  return ds;
}

void qv_dataset_unref(qv_dataset *ds) {
  if (ds == NULL || __atomic_sub_fetch(&ds->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  ds_free(ds);
}

/* Copy info, split and format of `meta` into ds (fresh when NULL). */
static qv_status copy_meta(qv_dataset *ds, const qv_dataset *meta) {
  if (meta == NULL) {
    ds->format_kwargs = qv_ds_strdup("{}");
    return ds->format_kwargs ? QV_OK : QV_ENOMEM;
  }
  if ((meta->info_json && !(ds->info_json = qv_ds_strdup(meta->info_json))) ||
      (meta->split && !(ds->split = qv_ds_strdup(meta->split))) ||
      (meta->format_type && !(ds->format_type = qv_ds_strdup(meta->format_type))) ||
      !(ds->format_kwargs = qv_ds_strdup(meta->format_kwargs ? meta->format_kwargs : "{}")))
    return QV_ENOMEM;
  ds->has_format_columns = meta->has_format_columns;
  ds->output_all_columns = meta->output_all_columns;
  if (meta->n_format_columns > 0) {
    ds->format_columns = calloc((size_t)meta->n_format_columns, sizeof(char *));
    if (ds->format_columns == NULL) return QV_ENOMEM;
    for (int32_t i = 0; i < meta->n_format_columns; i++) {
      if ((ds->format_columns[i] = qv_ds_strdup(meta->format_columns[i])) == NULL) return QV_ENOMEM;
      ds->n_format_columns = i + 1;
    }
  }
  return QV_OK;
}

/* Format columns that no longer exist are dropped (datasets keeps the
 * format columns a subset of the dataset's columns). */
static void prune_format_columns(qv_dataset *ds) {
  int32_t k = 0;
  for (int32_t i = 0; i < ds->n_format_columns; i++) {
    if (qv_schema_find(qv_table_schema(ds->data), ds->format_columns[i]) >= 0)
      ds->format_columns[k++] = ds->format_columns[i];
    else free(ds->format_columns[i]);
  }
  ds->n_format_columns = k;
}

qv_status qv_ds_new(qv_table *data, qv_table *indices, const char *fp, qv_hf_feature *features,
                    const qv_dataset *meta, qv_dataset **out, qv_error *err) {
  qv_dataset *ds = calloc(1, sizeof *ds);
  if (ds == NULL) {
    qv_hf_feature_free(features);
    return oom(err);
  }
  ds->refcount = 1;
  ds->data = qv_table_ref(data);
  ds->indices = qv_table_ref(indices);
  ds->features = features;
  snprintf(ds->fingerprint, sizeof ds->fingerprint, "%s", fp);
  if (copy_meta(ds, meta) != QV_OK) {
    ds_free(ds);
    return oom(err);
  }
  if (ds->features == NULL || ds->features->kind != QV_HF_DICT ||
      ds->features->n_children != qv_table_num_columns(data)) {
    int64_t nf = ds->features ? ds->features->n_children : -1;
    ds_free(ds);
    return qv_error_set(err, QV_EARG,
                        "dataset: features describe %lld columns but the table has %d",
                        (long long)nf, qv_table_num_columns(data));
  }
  prune_format_columns(ds);
  *out = ds;
  return QV_OK;
}

qv_status qv_ds_derive(const qv_dataset *ds, qv_table *data, qv_table *indices, const char *fp,
                       qv_hf_feature *features, qv_dataset **out, qv_error *err) {
  if (features == NULL && (features = qv_hf_feature_copy(ds->features)) == NULL) return oom(err);
  return qv_ds_new(data, indices, fp, features, ds, out, err);
}

qv_status qv_ds_fingerprint(const qv_dataset *ds, const qv_dataset_options *opts,
                            const char *transform, const qv_fingerprint_args *args,
                            char out[QV_FINGERPRINT_SIZE], qv_error *err) {
  if (opts != NULL && opts->new_fingerprint != NULL) {
    QV_RETURN_NOT_OK(qv_fingerprint_validate(opts->new_fingerprint, err));
    snprintf(out, QV_FINGERPRINT_SIZE, "%s", opts->new_fingerprint);
    return QV_OK;
  }
  return qv_fingerprint_update(ds->fingerprint, transform, args, out, err);
}

qv_status qv_ds_args_digest(const qv_fingerprint_args *args, char out[QV_FINGERPRINT_SIZE],
                            qv_error *err) {
  return qv_fingerprint_update("quiver-args", "quiver.args", args, out, err);
}

/* ------------------------------------------------------------------------ */
/* Feature trees                                                             */

static qv_hf_feature *dict_new(int32_t n) {
  qv_hf_feature *f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  f->kind = QV_HF_DICT;
  f->length = -1;
  f->keys = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
  f->children = calloc((size_t)(n > 0 ? n : 1), sizeof(qv_hf_feature *));
  if (f->keys == NULL || f->children == NULL) {
    qv_hf_feature_free(f);
    return NULL;
  }
  return f;
}

qv_hf_feature *qv_ds_features_pick(const qv_hf_feature *dict, const int32_t *idx, int32_t n,
                                   const char *const *names) {
  qv_hf_feature *f = dict_new(n);
  if (f == NULL) return NULL;
  for (int32_t i = 0; i < n; i++) {
    f->keys[i] = qv_ds_strdup(names ? names[i] : dict->keys[idx[i]]);
    f->children[i] = qv_hf_feature_copy(dict->children[idx[i]]);
    f->n_children = i + 1;
    if (f->keys[i] == NULL || f->children[i] == NULL) {
      qv_hf_feature_free(f);
      return NULL;
    }
  }
  return f;
}

qv_status qv_ds_features_append(qv_hf_feature *dict, const char *name, qv_hf_feature *feature,
                                qv_error *err) {
  int32_t n = dict->n_children;
  char **keys = realloc(dict->keys, sizeof(char *) * (size_t)(n + 1));
  if (keys != NULL) dict->keys = keys;
  qv_hf_feature **ch = realloc(dict->children, sizeof(qv_hf_feature *) * (size_t)(n + 1));
  if (ch != NULL) dict->children = ch;
  char *key = qv_ds_strdup(name);
  if (keys == NULL || ch == NULL || key == NULL) {
    free(key);
    qv_hf_feature_free(feature);
    return oom(err);
  }
  dict->keys[n] = key;
  dict->children[n] = feature;
  dict->n_children = n + 1;
  return QV_OK;
}

qv_status qv_ds_features_for_schema(const qv_schema *schema, const qv_hf_feature *like,
                                    qv_hf_feature **out, qv_error *err) {
  int32_t nc = qv_schema_num_fields(schema);
  qv_hf_feature *f = dict_new(nc);
  if (f == NULL) return oom(err);
  for (int32_t c = 0; c < nc; c++) {
    const qv_field *field = qv_schema_field(schema, c);
    const qv_hf_feature *old = like ? qv_hf_dict_child(like, c, field->name) : NULL;
    qv_hf_feature *child = NULL;
    if (old != NULL) {
      qv_type *t = NULL;
      if (qv_hf_feature_arrow_type(old, &t, NULL, NULL) == QV_OK &&
          qv_type_equals(t, field->type, false))
        child = qv_hf_feature_copy(old);
      qv_type_unref(t);
    }
    qv_status st = QV_OK;
    if (child == NULL) st = qv_hf_feature_from_arrow(field, &child, err);
    if (st == QV_OK && child == NULL) st = oom(err);
    if (st == QV_OK && (f->keys[c] = qv_ds_strdup(field->name)) == NULL) st = oom(err);
    if (st != QV_OK) {
      qv_hf_feature_free(child);
      qv_hf_feature_free(f);
      return st;
    }
    f->children[c] = child;
    f->n_children = c + 1;
  }
  *out = f;
  return QV_OK;
}

qv_status qv_ds_file_schema(const qv_schema *data_schema, const qv_hf_feature *features,
                            const char *fp, qv_schema **out, qv_error *err) {
  return qv_hf_schema_with_features(qv_type_ref(data_schema->type), features, fp, out, err);
}

/* ------------------------------------------------------------------------ */
/* Batches                                                                   */

qv_status qv_ds_make_struct(qv_type *type, int64_t length, qv_array **children, int32_t n,
                            qv_array **out, qv_error *err) {
  qv_array *a = qv_array_new(type, 1, n);
  if (a == NULL) {
    for (int32_t i = 0; i < n; i++) qv_array_unref(children[i]);
    return oom(err);
  }
  a->length = length;
  a->null_count = 0;
  for (int32_t i = 0; i < n; i++) a->children[i] = children[i];
  *out = a;
  return QV_OK;
}

qv_status qv_ds_struct_slice(const qv_array *batch, int64_t off, int64_t len, qv_array **out,
                             qv_error *err) {
  int32_t n = batch->n_children;
  qv_array **ch = calloc((size_t)(n > 0 ? n : 1), sizeof *ch);
  if (ch == NULL) return oom(err);
  for (int32_t c = 0; c < n; c++) {
    qv_status st = qv_array_slice(batch->children[c], batch->offset + off, len, &ch[c], err);
    if (st != QV_OK) {
      for (int32_t j = 0; j < c; j++) qv_array_unref(ch[j]);
      free(ch);
      return st;
    }
  }
  qv_status st = qv_ds_make_struct(batch->type, len, ch, n, out, err);
  free(ch);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Creating and opening                                                      */

/* The fingerprint of a table without a given one (see the header). */
static qv_status table_fingerprint(qv_table *t, char out[QV_FINGERPRINT_SIZE], qv_error *err) {
  bool found = false;
  QV_RETURN_NOT_OK(qv_fingerprint_from_metadata(&qv_table_schema(t)->metadata, out, &found, err));
  if (found) return QV_OK;
  if (qv_table_get_kind(t) == QV_TABLE_MAPPED && qv_table_num_replays(t) == 0) {
    char **paths = NULL;
    int64_t n = 0;
    QV_RETURN_NOT_OK(qv_table_cache_files(t, &paths, &n, err));
    qv_status st = n == 1 ? qv_fingerprint_of_file(paths[0], NULL, NULL, out, err) : QV_EARG;
    qv_table_free_paths(paths, n);
    if (st == QV_OK || n == 1) return st;
  }
  uint8_t *recipe = NULL;
  int64_t len = 0;
  QV_RETURN_NOT_OK(qv_table_recipe(t, &recipe, &len, err));
  qv_fingerprint_args *args = NULL;
  qv_status st = qv_fingerprint_args_new(&args, err);
  if (st == QV_OK) st = qv_fingerprint_arg_bytes(args, "recipe", recipe, (size_t)len, err);
  if (st == QV_OK) st = qv_fingerprint_update("quiver-table", "quiver.from_table", args, out, err);
  qv_fingerprint_args_free(args);
  free(recipe);
  return st;
}

qv_status qv_dataset_from_table(qv_table *data, const char *fingerprint, qv_dataset **out,
                                qv_error *err) {
  char fp[QV_FINGERPRINT_SIZE];
  if (fingerprint != NULL) {
    QV_RETURN_NOT_OK(qv_fingerprint_validate(fingerprint, err));
    snprintf(fp, sizeof fp, "%s", fingerprint);
  } else {
    QV_RETURN_NOT_OK(table_fingerprint(data, fp, err));
  }
  qv_hf_feature *features = NULL;
  QV_RETURN_NOT_OK(qv_hf_features_resolve(qv_table_schema(data), &features, NULL, err));
  return qv_ds_new(data, NULL, fp, features, NULL, out, err);
}

qv_status qv_ds_open_file(const char *path, qv_table *table, qv_dataset **out, qv_error *err) {
  qv_table *t = NULL;
  if (table != NULL) t = qv_table_ref(table);
  else QV_RETURN_NOT_OK(qv_table_open_path(path, NULL, &t, err));
  char fp[QV_FINGERPRINT_SIZE];
  qv_hf_feature *features = NULL;
  qv_status st = qv_fingerprint_of_file(path, &qv_table_schema(t)->metadata, NULL, fp, err);
  if (st == QV_OK) st = qv_hf_features_resolve(qv_table_schema(t), &features, NULL, err);
  if (st == QV_OK) st = qv_ds_new(t, NULL, fp, features, NULL, out, err);
  qv_table_unref(t);
  if (st != QV_OK) qv_error_prefix(err, st, "%s: ", path);
  return st;
}

/* The data table of a Dataset directory: its shards, concatenated. */
static qv_status open_shards(const qv_hf_split *sp, const qv_hf_feature *features, qv_table **out,
                             qv_error *err) {
  if (sp->n_files == 0) {
    if (features == NULL)
      return qv_error_set(err, QV_EINVAL, "%s: no data files and no features", sp->dir);
    qv_schema *s = NULL;
    QV_RETURN_NOT_OK(qv_hf_features_arrow_schema(features, &s, err));
    qv_status st = qv_table_from_batches(s, NULL, 0, out, err);
    qv_schema_unref(s);
    return st;
  }
  qv_table **tables = calloc((size_t)sp->n_files, sizeof *tables);
  if (tables == NULL) return oom(err);
  qv_status st = QV_OK;
  int64_t opened = 0;
  for (; opened < sp->n_files && st == QV_OK; opened++) {
    /* mapped once, when the directory was listed */
    if (sp->files[opened].table != NULL) {
      tables[opened] = qv_table_ref(sp->files[opened].table);
      continue;
    }
    st = qv_table_open_path(sp->files[opened].path, NULL, &tables[opened], err);
    if (st != QV_OK) {
      qv_error_prefix(err, st, "%s: ", sp->files[opened].path);
      break;
    }
  }
  if (st == QV_OK) st = qv_table_concat(tables, sp->n_files, 0, out, err);
  for (int64_t i = 0; i < opened; i++) qv_table_unref(tables[i]);
  free(tables);
  return st;
}

/* Cast the table to the features' Arrow types when they differ (datasets'
 * Dataset.__init__: `self.data.cast(self.info.features.arrow_schema)`). */
static qv_status align_to_features(qv_table **t, const qv_hf_feature *features, qv_error *err) {
  const qv_schema *have = qv_table_schema(*t);
  if (features->n_children != qv_schema_num_fields(have))
    return qv_hf_features_check(features, have, err);
  qv_schema *want = NULL;
  QV_RETURN_NOT_OK(qv_hf_features_arrow_schema(features, &want, err));
  bool same = true;
  for (int32_t c = 0; c < qv_schema_num_fields(have); c++) {
    const qv_field *a = qv_schema_field(have, c), *b = qv_schema_field(want, c);
    if (strcmp(a->name, b->name) != 0) {
      /* the message first: b belongs to want */
      qv_status st = qv_error_set(
          err, QV_EINVAL, "features list column '%s' where the data has column '%s' (position %d)",
          b->name, a->name, c);
      qv_schema_unref(want);
      return st;
    }
    if (!qv_type_equals(a->type, b->type, false)) same = false;
  }
  qv_status st = QV_OK;
  if (!same) {
    qv_table *cast = NULL;
    st = qv_table_cast(*t, want, &cast, err);
    if (st == QV_OK) {
      qv_table_unref(*t);
      *t = cast;
    }
  }
  qv_schema_unref(want);
  return st;
}

qv_status qv_ds_open_split(const qv_hf_split *sp, qv_dataset **out, qv_error *err) {
  if (sp->error != NULL) return qv_error_set(err, QV_EINVAL, "%s", sp->error);
  const qv_hf_feature *info_features = qv_hf_info_features(sp->info);
  qv_table *t = NULL;
  QV_RETURN_NOT_OK(open_shards(sp, info_features, &t, err));
  qv_hf_feature *features = NULL;
  qv_status st = QV_OK;
  if (info_features != NULL) {
    features = qv_hf_feature_copy(info_features);
    if (features == NULL) st = oom(err);
    if (st == QV_OK) st = align_to_features(&t, features, err);
  } else {
    st = qv_hf_features_resolve(qv_table_schema(t), &features, NULL, err);
  }
  /* Meta from state.json / dataset_info.json, through a template dataset. */
  qv_dataset meta;
  memset(&meta, 0, sizeof meta);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  if (st == QV_OK && sp->info != NULL) st = qv_hf_info_emit(sp->info, &sb, err);
  if (st == QV_OK) {
    const qv_hf_state *s = sp->state;
    const char *fp = s ? s->fingerprint : sp->fingerprint;
    meta.info_json = sp->info ? (char *)qv_strbuf_cstr(&sb) : NULL;
    if (s != NULL) {
      meta.split = s->split;
      meta.format_type = s->format_type;
      meta.format_kwargs = s->format_kwargs;
      meta.has_format_columns = s->has_format_columns;
      meta.n_format_columns = (int32_t)s->n_format_columns;
      meta.format_columns = s->format_columns;
      meta.output_all_columns = s->output_all_columns;
    } else {
      meta.split = sp->name; /* a builder split: Dataset(split=...) */
    }
    st = fp ? qv_fingerprint_validate(fp, err)
            : qv_error_set(err, QV_EINVAL, "no fingerprint for the dataset");
    if (st == QV_OK) {
      st = qv_ds_new(t, NULL, fp, features, &meta, out, err);
      features = NULL;
    }
  }
  qv_strbuf_reset(&sb);
  qv_hf_feature_free(features);
  qv_table_unref(t);
  if (st != QV_OK) qv_error_prefix(err, st, "%s: ", sp->dir);
  return st;
}

/* A map worker group: its files concatenated in rank order. */
static qv_status open_group(const qv_hf_dir *d, const qv_hf_source *src, qv_dataset **out,
                            qv_error *err) {
  qv_table **tables = calloc((size_t)src->n_files, sizeof *tables);
  if (tables == NULL) return oom(err);
  qv_status st = QV_OK;
  int64_t opened = 0;
  for (; opened < src->n_files && st == QV_OK; opened++) {
    const char *p = d->files[src->files[opened]].path;
    if (d->files[src->files[opened]].table != NULL) {
      tables[opened] = qv_table_ref(d->files[src->files[opened]].table);
      continue;
    }
    st = qv_table_open_path(p, NULL, &tables[opened], err);
    if (st != QV_OK) qv_error_prefix(err, st, "%s: ", p);
    if (st != QV_OK) break;
  }
  qv_table *t = NULL;
  if (st == QV_OK) st = qv_table_concat(tables, src->n_files, 0, &t, err);
  for (int64_t i = 0; i < opened; i++) qv_table_unref(tables[i]);
  free(tables);
  qv_hf_feature *features = NULL;
  if (st == QV_OK) st = qv_fingerprint_validate(src->fingerprint, err);
  if (st == QV_OK) st = qv_hf_features_resolve(qv_table_schema(t), &features, NULL, err);
  if (st == QV_OK) st = qv_ds_new(t, NULL, src->fingerprint, features, NULL, out, err);
  qv_table_unref(t);
  if (st != QV_OK) qv_error_prefix(err, st, "%s/%s: ", d->path, src->name);
  return st;
}

qv_status qv_dataset_open_source(const qv_hf_dir *dir, int64_t source, qv_dataset **out,
                                 qv_error *err) {
  if (source < 0 || source >= dir->n_sources)
    return qv_error_set(err, QV_EARG, "%s: no dataset %lld (the directory has %lld)", dir->path,
                        (long long)source, (long long)dir->n_sources);
  const qv_hf_source *src = &dir->sources[source];
  switch (src->kind) {
    case QV_HF_SOURCE_SPLIT:
    case QV_HF_SOURCE_DATASET: return qv_ds_open_split(&dir->splits[src->split], out, err);
    case QV_HF_SOURCE_GROUP: return open_group(dir, src, out, err);
    case QV_HF_SOURCE_FILE:
      return qv_ds_open_file(dir->files[src->files[0]].path, dir->files[src->files[0]].table, out,
                             err);
  }
  return qv_error_set(err, QV_EARG, "%s: unknown dataset kind", dir->path);
}

void qv_ds_list_sources(const qv_hf_dir *d, const int64_t *idx, int64_t n, qv_strbuf *sb) {
  for (int64_t i = 0; i < n; i++) {
    const qv_hf_source *s = &d->sources[idx ? idx[i] : i];
    qv_strbuf_printf(sb, NULL, "%s%s '%s' (%lld rows)", i ? ", " : "",
                     qv_hf_source_kind_name(s->kind), s->name, (long long)s->rows);
  }
}

qv_status qv_dataset_dict_splits(const char *path, char ***out_names, int64_t *out_n,
                                 qv_error *err) {
  qv_hf_dir *d = NULL;
  QV_RETURN_NOT_OK(qv_hf_dir_open(path, &d, err));
  qv_status st = QV_OK;
  if (d->layout != QV_HF_LAYOUT_DATASET_DICT && d->layout != QV_HF_LAYOUT_CACHE) {
    st = qv_error_set(err, QV_EINVAL, "%s: not a DatasetDict or cache directory (a %s)", path,
                      qv_hf_layout_name(d->layout));
  } else {
    char **names = calloc((size_t)(d->n_splits > 0 ? d->n_splits : 1), sizeof *names);
    if (names == NULL) st = oom(err);
    for (int64_t i = 0; st == QV_OK && i < d->n_splits; i++)
      if ((names[i] = qv_ds_strdup(d->splits[i].name)) == NULL) st = oom(err);
    if (st == QV_OK) {
      *out_names = names;
      *out_n = d->n_splits;
    } else {
      qv_table_free_paths(names, d->n_splits);
    }
  }
  qv_hf_dir_free(d);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Inspection                                                                */

int64_t qv_dataset_num_rows(const qv_dataset *ds) {
  return qv_table_num_rows(ds->indices ? ds->indices : ds->data);
}
int32_t qv_dataset_num_columns(const qv_dataset *ds) { return qv_table_num_columns(ds->data); }
const qv_schema *qv_dataset_schema(const qv_dataset *ds) { return qv_table_schema(ds->data); }
int32_t qv_dataset_column_index(const qv_dataset *ds, const char *name) {
  return qv_schema_find(qv_table_schema(ds->data), name);
}
const char *qv_dataset_fingerprint(const qv_dataset *ds) { return ds->fingerprint; }
qv_table *qv_dataset_data(const qv_dataset *ds) { return ds->data; }
qv_table *qv_dataset_indices(const qv_dataset *ds) { return ds->indices; }
const qv_hf_feature *qv_dataset_features(const qv_dataset *ds) { return ds->features; }
const char *qv_dataset_split(const qv_dataset *ds) { return ds->split; }

qv_status qv_dataset_with_fingerprint(qv_dataset *ds, const char *fingerprint, qv_dataset **out,
                                      qv_error *err) {
  QV_RETURN_NOT_OK(qv_fingerprint_validate(fingerprint, err));
  return qv_ds_derive(ds, ds->data, ds->indices, fingerprint, NULL, out, err);
}

qv_dataset_format qv_dataset_get_format(const qv_dataset *ds) {
  qv_dataset_format f;
  f.type = ds->format_type;
  f.kwargs_json = ds->format_kwargs;
  f.has_columns = ds->has_format_columns;
  f.n_columns = ds->n_format_columns;
  f.columns = (const char *const *)ds->format_columns;
  f.output_all_columns = ds->output_all_columns;
  return f;
}

/* ------------------------------------------------------------------------ */
/* Cache files                                                               */

qv_status qv_dataset_cache_files(const qv_dataset *ds, char ***out_paths, int64_t *out_n,
                                 qv_error *err) {
  char **a = NULL, **b = NULL;
  int64_t na = 0, nb = 0;
  QV_RETURN_NOT_OK(qv_table_cache_files(ds->data, &a, &na, err));
  if (ds->indices != NULL) {
    qv_status st = qv_table_cache_files(ds->indices, &b, &nb, err);
    if (st != QV_OK) {
      qv_table_free_paths(a, na);
      return st;
    }
  }
  char **all = calloc((size_t)(na + nb > 0 ? na + nb : 1), sizeof *all);
  if (all == NULL) {
    qv_table_free_paths(a, na);
    qv_table_free_paths(b, nb);
    return oom(err);
  }
  int64_t n = 0;
  for (int64_t i = 0; i < na + nb; i++) {
    char *p = i < na ? a[i] : b[i - na];
    bool dup = false;
    for (int64_t j = 0; j < n && !dup; j++) dup = strcmp(all[j], p) == 0;
    if (dup) {
      free(p);
    } else {
      all[n++] = p;
    }
  }
  free(a);
  free(b);
  *out_paths = all;
  *out_n = n;
  return QV_OK;
}

static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (slash == NULL) return qv_ds_strdup(".");
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  char *d = malloc(n + 1);
  if (d == NULL) return NULL;
  memcpy(d, path, n);
  d[n] = '\0';
  return d;
}

qv_status qv_ds_cache_dir(const qv_dataset *ds, char **out, qv_error *err) {
  char **paths = NULL;
  int64_t n = 0;
  *out = NULL;
  QV_RETURN_NOT_OK(qv_dataset_cache_files(ds, &paths, &n, err));
  qv_status st = QV_OK;
  if (n > 0 && (*out = dir_of(paths[0])) == NULL) st = oom(err);
  qv_table_free_paths(paths, n);
  return st;
}

qv_status qv_ds_cache_path(const qv_dataset *ds, const qv_dataset_options *opts, const char *fp,
                           const char *suffix, char **out, qv_error *err) {
  *out = NULL;
  if (opts != NULL && opts->cache_file_name != NULL) {
    if (opts->keep_in_memory)
      return qv_error_set(err, QV_EARG, "use either keep_in_memory or a cache file name, not both");
    if (suffix == NULL) {
      *out = qv_ds_strdup(opts->cache_file_name);
    } else {
      /* "name.arrow" -> "name<suffix>.arrow" (datasets' suffix_template). */
      const char *name = opts->cache_file_name;
      const char *dot = strrchr(name, '.'), *slash = strrchr(name, '/');
      if (dot == NULL || (slash != NULL && dot < slash))
        return qv_error_set(err, QV_EARG, "cache file name '%s' has no extension", name);
      size_t n = strlen(name) + strlen(suffix) + 1;
      if ((*out = malloc(n)) != NULL)
        snprintf(*out, n, "%.*s%s%s", (int)(dot - name), name, suffix, dot);
    }
    return *out ? QV_OK : oom(err);
  }
  if (opts != NULL && opts->keep_in_memory) return QV_OK;
  char *dir = NULL;
  QV_RETURN_NOT_OK(qv_ds_cache_dir(ds, &dir, err));
  if (dir == NULL) return QV_OK;
  size_t n = strlen(dir) + strlen(fp) + (suffix ? strlen(suffix) : 0) + 16;
  *out = malloc(n);
  if (*out != NULL) snprintf(*out, n, "%s/cache-%s%s.arrow", dir, fp, suffix ? suffix : "");
  free(dir);
  return *out ? QV_OK : oom(err);
}

bool qv_ds_file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* ------------------------------------------------------------------------ */
/* Warnings and damaged cache files                                          */

static void warn_stderr(void *ctx, const char *message) {
  (void)ctx;
  fprintf(stderr, "quiver: warning: %s\n", message);
}

static qv_warning_fn warn_fn = warn_stderr;
static void *warn_ctx;

void qv_dataset_set_warning_handler(qv_warning_fn fn, void *ctx) {
  warn_fn = fn ? fn : warn_stderr;
  warn_ctx = fn ? ctx : NULL;
}

void qv_ds_warn(const char *fmt, ...) {
  char msg[QV_ERROR_SIZE + PATH_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  warn_fn(warn_ctx, msg);
}

/* What is wrong with a cache file's last bytes, or NULL when it ends as a
 * complete stream (end-of-stream marker) or IPC file ("ARROW1") does. */
static const char *tail_problem(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(buf, cap, "cannot be opened: %s", strerror(errno));
    return buf;
  }
  struct stat sb;
  unsigned char t[8];
  const char *problem = NULL;
  if (fstat(fd, &sb) != 0) {
    snprintf(buf, cap, "cannot be read: %s", strerror(errno));
    problem = buf;
  } else if (sb.st_size < 8) {
    snprintf(buf, cap, "truncated: %lld bytes", (long long)sb.st_size);
    problem = buf;
  } else if (pread(fd, t, 8, sb.st_size - 8) != 8) {
    snprintf(buf, cap, "cannot be read: %s", strerror(errno));
    problem = buf;
  } else {
    static const unsigned char eos[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    bool stream_end = memcmp(t, eos, 8) == 0;
    bool file_end = memcmp(t + 2, "ARROW1", 6) == 0;
    if (!stream_end && !file_end) {
      snprintf(buf, cap,
               "truncated: its %lld bytes end without the end-of-stream marker or file footer",
               (long long)sb.st_size);
      problem = buf;
    }
  }
  close(fd);
  return problem;
}

bool qv_ds_cache_reusable(const char *path) {
  if (!qv_ds_file_exists(path)) return false;
  char why[QV_ERROR_SIZE];
  const char *problem = tail_problem(path, why, sizeof why);
  if (problem == NULL) {
    qv_table *t = NULL;
    qv_error e;
    qv_status st = qv_table_open_path(path, NULL, &t, &e);
    qv_table_unref(t);
    if (st == QV_OK) return true;
    if (st != QV_EINVAL) return true; /* not damage: the reuse reports it */
    snprintf(why, sizeof why, "%s", e.message);
    problem = why;
  }
  char aside[PATH_MAX];
  if ((size_t)snprintf(aside, sizeof aside, "%s.corrupt-%lld", path, (long long)time(NULL)) >=
          sizeof aside ||
      rename(path, aside) != 0) {
    if (unlink(path) == 0)
      qv_ds_warn("cache file '%s' is corrupt (%s); removed it, rebuilding", path, problem);
    else
      qv_ds_warn("cache file '%s' is corrupt (%s) and cannot be moved aside: %s; rebuilding", path,
                 problem, strerror(errno));
    return false;
  }
  qv_ds_warn("cache file '%s' is corrupt (%s); moved aside to '%s', rebuilding", path, problem,
             aside);
  return false;
}

qv_status qv_dataset_cleanup_cache_files(const qv_dataset *ds, int64_t *out_removed,
                                         qv_error *err) {
  *out_removed = 0;
  char **keep = NULL;
  int64_t n_keep = 0;
  QV_RETURN_NOT_OK(qv_dataset_cache_files(ds, &keep, &n_keep, err));
  if (n_keep == 0) {
    qv_table_free_paths(keep, n_keep);
    return QV_OK;
  }
  char *dir = dir_of(keep[0]);
  DIR *d = dir ? opendir(dir) : NULL;
  qv_status st = QV_OK;
  if (dir == NULL) {
    st = oom(err);
  } else if (d == NULL) {
    st = qv_error_set(err, QV_EIO, "%s: %s", dir, strerror(errno));
  }
  struct dirent *e;
  while (st == QV_OK && (e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    bool quarantined =
        strncmp(e->d_name, "cache-", 6) == 0 && strstr(e->d_name, ".arrow.corrupt-") != NULL;
    if (!quarantined && (strncmp(e->d_name, "cache-", 6) != 0 || len < 12 ||
                         strcmp(e->d_name + len - 6, ".arrow") != 0))
      continue;
    char full[PATH_MAX];
    if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, e->d_name) >= sizeof full) continue;
    bool in_use = false;
    for (int64_t i = 0; i < n_keep && !in_use; i++) in_use = strcmp(keep[i], full) == 0;
    if (in_use) continue;
    if (unlink(full) != 0)
      st = qv_error_set(err, QV_EIO, "%s: cannot remove: %s", full, strerror(errno));
    else (*out_removed)++;
  }
  if (d != NULL) closedir(d);
  /* and what dead writers left there (core/atomic_internal.h) */
  int64_t reclaimed = 0;
  if (st == QV_OK) st = qv_atomic_reclaim(dir, &reclaimed, err);
  *out_removed += reclaimed;
  free(dir);
  qv_table_free_paths(keep, n_keep);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Row access                                                                */

typedef struct copy_call {
  const uint64_t *v;
  int64_t n;
  int64_t *out;
  uint64_t any; /* OR of the values */
} copy_call;

static qv_status copy_body(void *ctx, qv_error *err) {
  (void)err;
  copy_call *c = ctx;
  uint64_t any = 0;
  for (int64_t i = 0; i < c->n; i++) {
    c->out[i] = (int64_t)c->v[i];
    any |= c->v[i];
  }
  c->any = any;
  return QV_OK;
}

qv_status qv_dataset_data_rows(const qv_dataset *ds, int64_t offset, int64_t n, int64_t *out,
                               qv_error *err) {
  int64_t rows = qv_dataset_num_rows(ds);
  if (offset < 0 || n < 0 || offset > rows || n > rows - offset)
    return qv_error_set(err, QV_ERANGE, "dataset: rows [%lld, %lld) outside [0, %lld)",
                        (long long)offset, (long long)(offset + n), (long long)rows);
  if (ds->indices == NULL) {
    for (int64_t i = 0; i < n; i++) out[i] = offset + i;
    return QV_OK;
  }
  if (n == 0) return QV_OK;
  int64_t b = 0, r = 0, done = 0;
  QV_RETURN_NOT_OK(qv_table_locate(ds->indices, offset, &b, &r, err));
  while (done < n) {
    qv_array *batch = NULL;
    QV_RETURN_NOT_OK(qv_table_batch(ds->indices, b, &batch, err));
    const qv_array *col = batch->children[0];
    int64_t take = col->length - r;
    if (take > n - done) take = n - done;
    if (col->null_count != 0 && qv_array_null_count((qv_array *)col) > 0) {
      for (int64_t i = 0; i < take; i++)
        if (!qv_array_is_valid(col, r + i)) {
          qv_array_unref(batch);
          return qv_error_set(err, QV_EINVAL, "indices mapping: row %lld is null",
                              (long long)(offset + done + i));
        }
    }
    /* The indices may be a mapped file: copied under the mapped-read guard
     * (quiver/guard.h), which allocates nothing. */
    copy_call c = {(const uint64_t *)col->buffers[1]->data + col->offset + r, take, out + done, 0};
    qv_status st = qv_guard_run(copy_body, &c, err);
    qv_array_unref(batch);
    QV_RETURN_NOT_OK(st);
    uint64_t any = c.any;
    if (any >> 63)
      return qv_error_set(err, QV_EINVAL,
                          "indices mapping: a value in rows [%lld, %lld) is >= 2^63",
                          (long long)(offset + done), (long long)(offset + done + take));
    done += take;
    b++;
    r = 0;
  }
  return QV_OK;
}

static qv_status check_row(const qv_dataset *ds, int64_t row, qv_error *err) {
  int64_t n = qv_dataset_num_rows(ds);
  if (row < 0 || row >= n)
    return qv_error_set(err, QV_ERANGE, "dataset: row %lld is out of range (%lld rows)",
                        (long long)row, (long long)n);
  return QV_OK;
}

qv_status qv_dataset_take(qv_dataset *ds, const int64_t *rows, int64_t n, qv_array **out,
                          qv_error *err) {
  for (int64_t i = 0; i < n; i++) QV_RETURN_NOT_OK(check_row(ds, rows[i], err));
  if (ds->indices == NULL) return qv_table_gather(ds->data, rows, n, out, err);
  qv_array *mapped = NULL;
  QV_RETURN_NOT_OK(qv_ds_compose(ds, rows, n, &mapped, err));
  qv_status st = qv_table_gather(
      ds->data, (const int64_t *)mapped->buffers[1]->data + mapped->offset, n, out, err);
  qv_array_unref(mapped);
  return st;
}

qv_status qv_dataset_row(qv_dataset *ds, int64_t row, qv_array **out, qv_error *err) {
  QV_RETURN_NOT_OK(check_row(ds, row, err));
  int64_t data_row = row;
  if (ds->indices != NULL) {
    QV_RETURN_NOT_OK(qv_dataset_data_rows(ds, row, 1, &data_row, err));
    if (data_row >= qv_table_num_rows(ds->data))
      return qv_error_set(err, QV_ERANGE, "indices mapping: row %lld maps to data row %lld of %lld",
                          (long long)row, (long long)data_row,
                          (long long)qv_table_num_rows(ds->data));
  }
  int64_t b = 0, r = 0;
  QV_RETURN_NOT_OK(qv_table_locate(ds->data, data_row, &b, &r, err));
  qv_array *batch = NULL;
  QV_RETURN_NOT_OK(qv_table_batch(ds->data, b, &batch, err));
  qv_status st = qv_ds_struct_slice(batch, r, 1, out, err);
  qv_array_unref(batch);
  return st;
}

/* Rows of the dataset gathered into one batch. */
static qv_status gather_range(qv_dataset *ds, int64_t offset, int64_t n, int64_t *scratch,
                              qv_array **out, qv_error *err) {
  QV_RETURN_NOT_OK(qv_dataset_data_rows(ds, offset, n, scratch, err));
  return qv_table_gather(ds->data, scratch, n, out, err);
}

qv_status qv_dataset_slice(qv_dataset *ds, int64_t offset, int64_t length, qv_table **out,
                           qv_error *err) {
  int64_t rows = qv_dataset_num_rows(ds);
  if (offset < 0 || length < 0 || offset > rows || length > rows - offset)
    return qv_error_set(err, QV_ERANGE, "dataset: rows [%lld, %lld) outside [0, %lld)",
                        (long long)offset, (long long)(offset + length), (long long)rows);
  if (ds->indices == NULL) return qv_table_slice(ds->data, offset, length, out, err);
  int64_t *scratch = malloc(sizeof(int64_t) * (size_t)(length > 0 ? length : 1));
  if (scratch == NULL) return oom(err);
  qv_array *batch = NULL;
  qv_status st = gather_range(ds, offset, length, scratch, &batch, err);
  free(scratch);
  if (st == QV_OK)
    st = qv_table_from_batches(qv_table_schema(ds->data), &batch, batch->length > 0 ? 1 : 0, out,
                               err);
  qv_array_unref(batch);
  return st;
}

qv_status qv_ds_mapped_columns(qv_dataset *ds, const int32_t *cols, int32_t n, qv_table **out,
                               qv_error *err) {
  qv_table *sel = NULL;
  QV_RETURN_NOT_OK(qv_table_select(ds->data, cols, n, &sel, err));
  if (ds->indices == NULL) {
    *out = sel;
    return QV_OK;
  }
  qv_dataset tmp = *ds;
  tmp.data = sel;
  qv_status st = qv_ds_write_rows(&tmp, NULL, qv_table_schema(sel), 0, NULL, NULL, NULL, out, err);
  qv_table_unref(sel);
  return st;
}

void qv_ds_column_list(const qv_dataset *ds, qv_strbuf *sb) {
  for (int32_t c = 0; c < qv_dataset_num_columns(ds); c++)
    qv_strbuf_printf(sb, NULL, "%s'%s'", c ? ", " : "",
                     qv_schema_field(qv_dataset_schema(ds), c)->name);
}

qv_status qv_dataset_column(qv_dataset *ds, const char *name, qv_table **out, qv_error *err) {
  int32_t c = qv_dataset_column_index(ds, name);
  if (c < 0) return qv_error_set(err, QV_EARG, "dataset: no column '%s'", name);
  return qv_ds_mapped_columns(ds, &c, 1, out, err);
}

/* ------------------------------------------------------------------------ */
/* Iteration                                                                 */

struct qv_dataset_iter {
  qv_dataset *ds;
  int64_t batch_size;
  int64_t pos, end;
  /* with a mapping: the gathered window [win_start, win_start+window->length) */
  qv_array *window;
  int64_t win_start;
  int64_t win_rows; /* rows gathered per window */
  int64_t *scratch; /* win_rows data row numbers */
  /* without: the data batch holding `pos` */
  qv_array *cur;
  int64_t cur_batch, cur_start;
};

qv_status qv_dataset_iter_new(qv_dataset *ds, int64_t batch_size, bool drop_last_batch,
                              qv_dataset_iter **out, qv_error *err) {
  if (batch_size < 1)
    return qv_error_set(err, QV_EARG, "dataset iteration: batch size %lld must be >= 1",
                        (long long)batch_size);
  qv_dataset_iter *it = calloc(1, sizeof *it);
  if (it == NULL) return oom(err);
  it->ds = qv_dataset_ref(ds);
  it->batch_size = batch_size;
  int64_t n = qv_dataset_num_rows(ds);
  it->end = drop_last_batch ? n / batch_size * batch_size : n;
  it->cur_batch = -1;
  if (ds->indices != NULL) {
    int64_t w = QV_DATASET_READAHEAD_ROWS / batch_size * batch_size;
    if (w < batch_size) w = batch_size;
    if (w > it->end) w = it->end;
    it->win_rows = w;
    it->scratch = malloc(sizeof(int64_t) * (size_t)(w > 0 ? w : 1));
    if (it->scratch == NULL) {
      qv_dataset_iter_free(it);
      return oom(err);
    }
  }
  *out = it;
  return QV_OK;
}

void qv_dataset_iter_free(qv_dataset_iter *it) {
  if (it == NULL) return;
  qv_array_unref(it->window);
  qv_array_unref(it->cur);
  free(it->scratch);
  qv_dataset_unref(it->ds);
  free(it);
}

/* Rows [pos, pos+len) of an unmapped dataset: a slice of one data batch,
 * or slices of several concatenated column by column. */
static qv_status next_unmapped(qv_dataset_iter *it, int64_t len, qv_array **out, qv_error *err) {
  qv_table *t = it->ds->data;
  if (it->cur == NULL || it->pos >= it->cur_start + it->cur->length) {
    int64_t b = 0, r = 0;
    QV_RETURN_NOT_OK(qv_table_locate(t, it->pos, &b, &r, err));
    qv_array_unref(it->cur);
    it->cur = NULL;
    QV_RETURN_NOT_OK(qv_table_batch(t, b, &it->cur, err));
    it->cur_batch = b;
    it->cur_start = it->pos - r;
  }
  int64_t r = it->pos - it->cur_start;
  if (r + len <= it->cur->length) return qv_ds_struct_slice(it->cur, r, len, out, err);
  /* Straddles batches: collect the pieces, concatenate per column. */
  int32_t nc = it->cur->n_children;
  int64_t cap = 8, np = 0;
  qv_array **pieces = calloc((size_t)cap, sizeof *pieces);
  if (pieces == NULL) return oom(err);
  qv_status st = QV_OK;
  int64_t got = 0;
  while (st == QV_OK && got < len) {
    int64_t avail = it->cur->length - r, take = len - got < avail ? len - got : avail;
    if (np == cap) {
      qv_array **p = realloc(pieces, sizeof *pieces * (size_t)(cap * 2));
      if (p == NULL) {
        st = oom(err);
        break;
      }
      pieces = p;
      cap *= 2;
    }
    st = qv_ds_struct_slice(it->cur, r, take, &pieces[np], err);
    if (st != QV_OK) break;
    np++;
    got += take;
    if (got < len) {
      qv_array_unref(it->cur);
      it->cur = NULL;
      it->cur_start += it->cur_batch >= 0 ? qv_table_batch_rows(t, it->cur_batch) : 0;
      it->cur_batch++;
      st = qv_table_batch(t, it->cur_batch, &it->cur, err);
      r = 0;
    }
  }
  qv_array **cols = calloc((size_t)(nc > 0 ? nc : 1), sizeof *cols);
  qv_array **parts = calloc((size_t)(np > 0 ? np : 1), sizeof *parts);
  if (st == QV_OK && (cols == NULL || parts == NULL)) st = oom(err);
  int32_t made = 0;
  for (int32_t c = 0; st == QV_OK && c < nc; c++) {
    for (int64_t p = 0; p < np; p++) parts[p] = pieces[p]->children[c];
    st = qv_array_concat(parts, np, &cols[c], err);
    if (st == QV_OK) made = c + 1;
  }
  if (st == QV_OK) {
    st = qv_ds_make_struct(it->cur->type, len, cols, nc, out, err);
  } else {
    for (int32_t c = 0; c < made; c++) qv_array_unref(cols[c]);
  }
  for (int64_t p = 0; p < np; p++) qv_array_unref(pieces[p]);
  free(pieces);
  free(parts);
  free(cols);
  return st;
}

qv_status qv_dataset_iter_next(qv_dataset_iter *it, qv_array **out, int64_t *out_first_row,
                               qv_error *err) {
  *out = NULL;
  if (it->pos >= it->end) return QV_OK;
  int64_t len = it->end - it->pos < it->batch_size ? it->end - it->pos : it->batch_size;
  if (it->ds->indices == NULL) {
    QV_RETURN_NOT_OK(next_unmapped(it, len, out, err));
  } else {
    if (it->window == NULL || it->pos >= it->win_start + it->window->length) {
      qv_array_unref(it->window);
      it->window = NULL;
      int64_t w = it->end - it->pos < it->win_rows ? it->end - it->pos : it->win_rows;
      QV_RETURN_NOT_OK(gather_range(it->ds, it->pos, w, it->scratch, &it->window, err));
      it->win_start = it->pos;
    }
    QV_RETURN_NOT_OK(qv_ds_struct_slice(it->window, it->pos - it->win_start, len, out, err));
  }
  if (out_first_row != NULL) *out_first_row = it->pos;
  it->pos += len;
  return QV_OK;
}
