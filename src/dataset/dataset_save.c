/*
 * dataset_save.c — writing the rows of a dataset: the shared row writer
 * behind flatten_indices, map's pass-through and save_to_disk (windows of
 * rows gathered through the mapping, or data batches written as they are
 * without one, into the row sink of dataset_sink.c), and save_to_disk
 * itself in `datasets`' layout (Dataset.save_to_disk /
 * DatasetDict.save_to_disk): shard planning from the estimated size,
 * `data-0000i-of-0000N.arrow` IPC streams with the features in the schema
 * metadata, dataset_info.json and state.json (last), the whole directory
 * built in a hidden temporary and put in place with one rename
 * (core/atomic_internal.h), destinations that would lose data refused;
 * the dataset's info (dataset_info.json) read and replaced; and a
 * save_to_disk directory assembled from Arrow shards written elsewhere
 * (quiver.ray / quiver.spark workers), atomically in the same way.
 * Dataset layer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_internal.h"
#include "dataset/dataset_internal.h"
#include "dataset/hf_internal.h"
#include "quiver/print.h"

static qv_status oom(qv_error *err) {
  return qv_error_set(err, QV_ENOMEM, "dataset: out of memory");
}

/* Rows per gathered window when writing through a mapping: a multiple of
 * the writer batch size, so that written batches are all full. */
#define WRITE_WINDOW_ROWS 65536

qv_status qv_ds_write_rows(qv_dataset *ds, const char *path, const qv_schema *schema,
                           int64_t writer_batch_size, qv_progress_fn progress, void *progress_ctx,
                           const char *what, qv_table **out_table, qv_error *err) {
  int64_t wbs = writer_batch_size > 0 ? writer_batch_size : QV_DATASET_WRITER_BATCH_SIZE;
  int64_t total = qv_dataset_num_rows(ds);
  qv_ds_sink *sink = NULL;
  QV_RETURN_NOT_OK(qv_ds_sink_open(path, schema, wbs, false, &sink, err));
  int64_t done = 0;
  qv_status st = QV_OK;
  qv_dataset_iter *it = NULL;
  int64_t b = 0;
  if (ds->indices != NULL) {
    int64_t window = WRITE_WINDOW_ROWS / wbs * wbs;
    if (window < wbs) window = wbs;
    st = qv_dataset_iter_new(ds, window, false, &it, err);
  }
  while (st == QV_OK) {
    qv_array *batch = NULL;
    if (it != NULL) {
      st = qv_dataset_iter_next(it, &batch, NULL, err);
    } else if (b < qv_table_num_batches(ds->data)) {
      st = qv_table_batch(ds->data, b++, &batch, err);
    }
    if (st != QV_OK || batch == NULL) break;
    done += batch->length;
    st = qv_ds_sink_push(sink, batch, err);
    /* written: its mapped pages leave this process (resident memory stays
     * a batch, not the dataset; the page cache keeps them) */
    if (it == NULL) qv_table_batch_done(ds->data, b - 1);
    if (progress != NULL) progress(progress_ctx, what ? what : "write", done, total);
  }
  qv_dataset_iter_free(it);
  if (st != QV_OK) {
    qv_ds_sink_abort(sink);
    return st;
  }
  return qv_ds_sink_finish(sink, out_table, err);
}

/* ------------------------------------------------------------------------ */
/* Size estimate (pyarrow's nbytes: the bytes the values use; offsets count
 * one entry per element, as pyarrow does)                                   */

static int64_t off_at(const qv_array *a, int64_t i, bool large) {
  return qv_load_offset(a->buffers[1]->data, large ? 8 : 4, i);
}

/* Bytes of rows [start, start+count) of `a` (start counts a->offset). */
static int64_t nbytes(const qv_array *a, int64_t start, int64_t count) {
  if (count <= 0) return 0;
  int64_t n = 0;
  qv_type_id id = a->type->id;
  bool has_validity =
      a->n_buffers > 0 && a->buffers[0] != NULL && id != QV_SPARSE_UNION && id != QV_DENSE_UNION;
  if (has_validity) n += (count + 7) / 8;
  int32_t bw = qv_type_byte_width(a->type);
  switch (id) {
    case QV_NA: return 0;
    case QV_BOOL: return n + (count + 7) / 8;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      bool large = id == QV_LARGE_BINARY || id == QV_LARGE_STRING;
      n += count * (large ? 8 : 4); /* pyarrow counts one offset per element */
      return n + off_at(a, start + count, large) - off_at(a, start, large);
    }
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: {
      bool large = id == QV_LARGE_LIST;
      n += count * (large ? 8 : 4);
      int64_t s = off_at(a, start, large), e = off_at(a, start + count, large);
      return n + nbytes(a->children[0], a->children[0]->offset + s, e - s);
    }
    case QV_FIXED_SIZE_LIST: {
      int64_t size = a->type->list_size;
      return n + nbytes(a->children[0], a->children[0]->offset + start * size, count * size);
    }
    case QV_STRUCT:
      for (int32_t c = 0; c < a->n_children; c++)
        n += nbytes(a->children[c], a->children[c]->offset + start, count);
      return n;
    case QV_DICTIONARY: {
      int32_t iw = qv_type_byte_width(a->type->index_type);
      n += count * iw;
      if (a->dictionary) n += nbytes(a->dictionary, a->dictionary->offset, a->dictionary->length);
      return n;
    }
    default: break;
  }
  if (bw > 0) return n + count * bw;
  /* views, unions, run-end encoded: every buffer, whole. */
  for (int32_t i = has_validity ? 1 : 0; i < a->n_buffers; i++)
    if (a->buffers[i]) n += a->buffers[i]->size;
  for (int32_t c = 0; c < a->n_children; c++)
    n += nbytes(a->children[c], a->children[c]->offset, a->children[c]->length);
  return n;
}

/* datasets' require_decoding: media and Json features (at the top level
 * whatever their `decode`; nested ones only when they decode). */
static bool needs_decoding(const qv_hf_feature *f, bool ignore_decode) {
  switch (f->kind) {
    case QV_HF_DICT:
      for (int32_t i = 0; i < f->n_children; i++)
        if (needs_decoding(f->children[i], false)) return true;
      return false;
    case QV_HF_LIST:
    case QV_HF_LARGE_LIST: return f->n_children == 1 && needs_decoding(f->children[0], false);
    case QV_HF_MEDIA:
    case QV_HF_JSON: {
      if (ignore_decode) return true;
      json_t *d = f->params_ ? json_object_get((json_t *)f->params_, "decode") : NULL;
      return d == NULL || !json_is_false(d);
    }
    default: return false;
  }
}

static const qv_array *struct_field(const qv_array *a, const qv_type *t, const char *name) {
  for (int32_t c = 0; c < t->n_children && c < a->n_children; c++)
    if (strcmp(t->children[c].name, name) == 0) return a->children[c];
  return NULL;
}

/* datasets' extra_nbytes_visitor over rows [start, start+count) of `a`
 * (start counts a->offset) with feature `f`, walked as table_visitor walks:
 * into the fields of dict features and the values of (32-bit) lists of
 * List features. An Image / Audio / Video value stored by path only adds
 * the size of that file (relative paths from the working directory; a file
 * that cannot be stat()ed adds nothing); every such struct subtracts the
 * nbytes of its path strings. */
static void media_extra(const qv_array *a, int64_t start, int64_t count, const qv_hf_feature *f,
                        int depth, int64_t *extra) {
  if (count <= 0 || depth > QV_HF_MAX_DEPTH) return;
  const qv_type *t = a->type;
  if (f->kind == QV_HF_MEDIA && t->id == QV_STRUCT && f->type_name &&
      (strcmp(f->type_name, "Image") == 0 || strcmp(f->type_name, "Audio") == 0 ||
       strcmp(f->type_name, "Video") == 0)) {
    const qv_array *bytes = struct_field(a, t, "bytes"), *path = struct_field(a, t, "path");
    if (path == NULL) return;
    bool large = path->type->id == QV_LARGE_STRING || path->type->id == QV_LARGE_BINARY;
    bool is_str = large || path->type->id == QV_STRING || path->type->id == QV_BINARY;
    for (int64_t i = start; is_str && i < start + count; i++) {
      int64_t pi = path->offset + i, bi = bytes ? bytes->offset + i : 0;
      if (!qv_array_is_valid(a, i - a->offset) || !qv_array_is_valid(path, pi - path->offset))
        continue;
      if (bytes != NULL && qv_array_is_valid(bytes, bi - bytes->offset)) continue;
      int64_t b = off_at(path, pi, large), e = off_at(path, pi + 1, large);
      char name[PATH_MAX];
      struct stat sb;
      if (e - b <= 0 || e - b >= (int64_t)sizeof name) continue;
      memcpy(name, path->buffers[2]->data + b, (size_t)(e - b));
      name[e - b] = '\0';
      if (stat(name, &sb) == 0) *extra += (int64_t)sb.st_size;
    }
    *extra -= nbytes(path, path->offset + start, count);
    return;
  }
  if (f->kind == QV_HF_DICT && t->id == QV_STRUCT) {
    for (int32_t k = 0; k < f->n_children; k++) {
      const qv_array *c = struct_field(a, t, f->keys[k]);
      if (c != NULL) media_extra(c, c->offset + start, count, f->children[k], depth + 1, extra);
    }
  } else if ((f->kind == QV_HF_LIST || f->kind == QV_HF_LARGE_LIST) && f->n_children == 1 &&
             t->id == QV_LIST) {
    int64_t b = off_at(a, start, false), e = off_at(a, start + count, false);
    const qv_array *v = a->children[0];
    media_extra(v, v->offset + b, e - b, f->children[0], depth + 1, extra);
  }
}

/* Rows of the sample datasets' _estimate_nbytes visits: the first 1000 as
 * mapped (with_format("arrow")[:1000]). */
#define EXTRA_SAMPLE_ROWS 1000

/* datasets' extra_nbytes for datasets with columns that need decoding:
 * visited over the first rows as mapped — slices of the data batches
 * without a mapping, one-row slices of them through one (fast_gather) —
 * and scaled by data rows over visited rows. */
static qv_status estimate_media_extra(const qv_dataset *ds, int64_t *out, qv_error *err) {
  *out = 0;
  const qv_hf_feature *feats = ds->features;
  bool any = false;
  for (int32_t c = 0; feats && c < feats->n_children && !any; c++)
    any = needs_decoding(feats->children[c], true);
  int64_t rows = qv_dataset_num_rows(ds);
  if (!any || rows == 0) return QV_OK;
  qv_table *t = ds->data;
  const qv_type *st = qv_table_schema(t)->type;
  int64_t m = rows < EXTRA_SAMPLE_ROWS ? rows : EXTRA_SAMPLE_ROWS, extra = 0;
  int64_t *data_rows = NULL;
  if (ds->indices != NULL) {
    if ((data_rows = malloc(sizeof(int64_t) * (size_t)m)) == NULL) return oom(err);
    qv_status s = qv_dataset_data_rows(ds, 0, m, data_rows, err);
    if (s != QV_OK) {
      free(data_rows);
      return s;
    }
  }
  qv_status s = QV_OK;
  int64_t done = 0, b = 0;
  while (s == QV_OK && done < m) {
    int64_t row = 0, count = 0;
    if (data_rows != NULL) {
      s = qv_table_locate(t, data_rows[done], &b, &row, err);
      count = 1;
    } else {
      if (b >= qv_table_num_batches(t)) break;
      count = qv_table_batch_rows(t, b);
      if (count > m - done) count = m - done;
    }
    qv_array *batch = NULL;
    if (s == QV_OK) s = qv_table_batch(t, b, &batch, err);
    if (s != QV_OK) break;
    for (int32_t c = 0; feats && c < feats->n_children; c++) {
      const qv_array *col = struct_field(batch, st, feats->keys[c]);
      if (col != NULL)
        media_extra(col, col->offset + batch->offset + row, count, feats->children[c], 0, &extra);
    }
    qv_array_unref(batch);
    done += count;
    if (data_rows == NULL) b++;
  }
  free(data_rows);
  if (s != QV_OK) return s;
  /* Python's floor division of extra * len(data) by the visited rows. */
  __int128 num = (__int128)extra * qv_table_num_rows(t);
  int64_t q = (int64_t)(num / done);
  if (num % done != 0 && num < 0) q--;
  *out = q;
  return QV_OK;
}

/* datasets' _estimate_nbytes: the data table's nbytes, plus the media
 * adjustment above, scaled by the mapping's rows over the data's rows. */
static qv_status estimate_nbytes(const qv_dataset *ds, int64_t *out, qv_error *err) {
  int64_t total = 0;
  qv_table *t = ds->data;
  for (int64_t b = 0; b < qv_table_num_batches(t); b++) {
    qv_array *batch = NULL;
    QV_RETURN_NOT_OK(qv_table_batch(t, b, &batch, err));
    total += nbytes(batch, batch->offset, batch->length);
    qv_array_unref(batch);
  }
  int64_t extra = 0;
  QV_RETURN_NOT_OK(estimate_media_extra(ds, &extra, err));
  total += extra;
  int64_t data_rows = qv_table_num_rows(t);
  if (ds->indices != NULL && data_rows > 0)
    total = (int64_t)((__int128)total * qv_table_num_rows(ds->indices) / data_rows);
  *out = total;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* The destination                                                           */

/* Write `text` to dir/name atomically (core/atomic_internal.h). */
static qv_status write_text(const char *dir, const char *name, const char *text, int64_t len,
                            qv_error *err) {
  char dst[PATH_MAX];
  if ((size_t)snprintf(dst, sizeof dst, "%s/%s", dir, name) >= sizeof dst)
    return qv_error_set(err, QV_EARG, "%s/%s: path too long", dir, name);
  return qv_atomic_write_file(dst, text, len, err);
}

/* mkdir -p */
static qv_status make_dirs(const char *path, qv_error *err) {
  char buf[PATH_MAX];
  if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf)
    return qv_error_set(err, QV_EARG, "%s: path too long", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
      return qv_error_set(err, QV_EIO, "%s: mkdir: %s", buf, strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST)
    return qv_error_set(err, QV_EIO, "%s: mkdir: %s", buf, strerror(errno));
  struct stat sb;
  if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return qv_error_set(err, QV_EIO, "%s: not a directory", buf);
  return QV_OK;
}

/* `path` without trailing slashes, its parent and its last component. */
static qv_status split_dst(const char *path, char *dst, char *parent, char *base, qv_error *err) {
  size_t len = strlen(path);
  while (len > 1 && path[len - 1] == '/') len--;
  if (len == 0 || len >= PATH_MAX) return qv_error_set(err, QV_EARG, "bad destination '%s'", path);
  memcpy(dst, path, len);
  dst[len] = '\0';
  const char *slash = strrchr(dst, '/');
  const char *b = slash ? slash + 1 : dst;
  if (b[0] == '\0' || strcmp(b, ".") == 0 || strcmp(b, "..") == 0)
    return qv_error_set(err, QV_EARG,
                        "destination '%s' must name a directory by its own name (not '/', '.' "
                        "or '..')",
                        path);
  size_t bl = strlen(b);
  if (bl > NAME_MAX) return qv_error_set(err, QV_EARG, "destination '%s': name too long", path);
  memcpy(base, b, bl + 1);
  if (slash == NULL) snprintf(parent, PATH_MAX, ".");
  else if (slash == dst) snprintf(parent, PATH_MAX, "/");
  else snprintf(parent, PATH_MAX, "%.*s", (int)(slash - dst), dst);
  return QV_OK;
}

static bool has_entry(const char *dir, const char *name) {
  char p[PATH_MAX];
  struct stat sb;
  return (size_t)snprintf(p, sizeof p, "%s/%s", dir, name) < sizeof p && lstat(p, &sb) == 0;
}

/* An existing destination may be replaced only when it is a directory that
 * is empty or a save_to_disk Dataset / DatasetDict directory (state.json or
 * dataset_dict.json): anything else would be deleted with it. */
static qv_status check_replaceable(const char *dst, qv_error *err) {
  struct stat sb;
  if (lstat(dst, &sb) != 0) return QV_OK; /* new */
  if (S_ISLNK(sb.st_mode))
    return qv_error_set(
        err, QV_EARG, "destination '%s' is a symbolic link; give the directory it points to", dst);
  if (!S_ISDIR(sb.st_mode))
    return qv_error_set(err, QV_EARG, "destination '%s' exists and is not a directory", dst);
  if (has_entry(dst, QV_HF_STATE_JSON) || has_entry(dst, QV_HF_DICT_JSON)) return QV_OK;
  DIR *d = opendir(dst);
  if (d == NULL) return qv_error_set(err, QV_EIO, "%s: %s", dst, strerror(errno));
  struct dirent *e;
  char other[NAME_MAX + 1] = "";
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      snprintf(other, sizeof other, "%s", e->d_name);
      break;
    }
  closedir(d);
  if (other[0] != '\0')
    return qv_error_set(err, QV_EARG,
                        "destination '%s' exists and is not a dataset directory (no %s or %s; "
                        "it holds '%s'): refusing to replace it",
                        dst, QV_HF_STATE_JSON, QV_HF_DICT_JSON, other);
  return QV_OK;
}

/* Whether `dir` is a save_to_disk directory (or a split of a DatasetDict). */
static bool is_dataset_dir(const char *dir) {
  if (has_entry(dir, QV_HF_STATE_JSON) || has_entry(dir, QV_HF_DICT_JSON)) return true;
  return false;
}

/* QV_EARG when the destination `real` (resolved) holds one of the
 * dataset's own files (it is SRC's directory or above it), or lies inside
 * the save_to_disk directory SRC is read from. */
static qv_status check_not_self(const qv_dataset *ds, const char *real, qv_error *err) {
  char **paths = NULL;
  int64_t n = 0;
  QV_RETURN_NOT_OK(qv_dataset_cache_files(ds, &paths, &n, err));
  size_t rl = strlen(real);
  qv_status st = QV_OK;
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    char rp[PATH_MAX];
    if (realpath(paths[i], rp) == NULL) continue;
    if (strncmp(rp, real, rl) == 0 && (rp[rl] == '/' || (rl == 1 && real[0] == '/'))) {
      st = qv_error_set(err, QV_EARG,
                        "Tried to overwrite %s but a dataset can't overwrite itself (it reads "
                        "%s)",
                        real, paths[i]);
      break;
    }
    /* SRC's directory, and the DatasetDict above a split */
    char *slash = strrchr(rp, '/');
    for (int up = 0; up < 2 && slash != NULL && slash != rp; up++) {
      *slash = '\0';
      size_t sl = strlen(rp);
      if ((up == 0 ? is_dataset_dir(rp) : has_entry(rp, QV_HF_DICT_JSON)) &&
          strncmp(real, rp, sl) == 0 && real[sl] == '/') {
        st = qv_error_set(err, QV_EARG,
                          "destination %s is inside the dataset directory %s that the dataset "
                          "reads (%s)",
                          real, rp, paths[i]);
        break;
      }
      slash = strrchr(rp, '/');
    }
  }
  qv_table_free_paths(paths, n);
  return st;
}

/* Check the destination for `n` datasets, create its parent, and open the
 * temporary directory beside it. */
static qv_status dst_begin(qv_dataset *const *dss, int64_t n, const char *path, qv_atomic_dir **out,
                           qv_error *err) {
  char dst[PATH_MAX], parent[PATH_MAX], base[NAME_MAX + 1];
  QV_RETURN_NOT_OK(split_dst(path, dst, parent, base, err));
  QV_RETURN_NOT_OK(make_dirs(parent, err));
  char real[PATH_MAX], rparent[PATH_MAX];
  if (realpath(parent, rparent) == NULL)
    return qv_error_set(err, QV_EIO, "%s: %s", parent, strerror(errno));
  if ((size_t)snprintf(real, sizeof real, "%s%s%s", rparent, strcmp(rparent, "/") == 0 ? "" : "/",
                       base) >= sizeof real)
    return qv_error_set(err, QV_EARG, "%s: path too long", path);
  for (int64_t i = 0; i < n; i++) QV_RETURN_NOT_OK(check_not_self(dss[i], real, err));
  QV_RETURN_NOT_OK(check_replaceable(dst, err));
  return qv_atomic_dir_open(dst, out, err);
}

/* ------------------------------------------------------------------------ */
/* The dataset's info (dataset_info.json)                                    */

qv_status qv_dataset_info_json(const qv_dataset *ds, qv_strbuf *out, qv_error *err) {
  qv_hf_info *info = NULL;
  qv_status st = ds->info_json
                     ? qv_hf_info_parse(ds->info_json, (int64_t)strlen(ds->info_json), &info, err)
                     : qv_hf_info_new(ds->features, &info, err);
  if (st == QV_OK) st = qv_hf_info_set_features(info, ds->features, err);
  if (st == QV_OK) st = qv_hf_info_emit(info, out, err);
  qv_hf_info_free(info);
  return st;
}

qv_status qv_dataset_with_info(qv_dataset *ds, const char *json, int64_t len, qv_dataset **out,
                               qv_error *err) {
  *out = NULL;
  qv_hf_info *info = NULL;
  QV_RETURN_NOT_OK(qv_hf_info_parse(json, len, &info, err));
  qv_hf_info_free(info);
  char *text = malloc((size_t)len + 1);
  if (text == NULL) return oom(err);
  memcpy(text, json, (size_t)len);
  text[len] = '\0';
  qv_dataset *d = NULL;
  qv_status st = qv_ds_derive(ds, ds->data, ds->indices, ds->fingerprint, NULL, &d, err);
  if (st != QV_OK) {
    free(text);
    return st;
  }
  free(d->info_json);
  d->info_json = text;
  *out = d;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* save_to_disk                                                              */

/* The save_to_disk layout of `ds` into the existing empty directory `dir`
 * (a temporary of dst_begin). */
static qv_status save_into(qv_dataset *ds, const char *dir, const qv_save_options *opts,
                           int64_t *out_num_shards, qv_error *err) {
  qv_save_options o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  int64_t nbytes_est = 0;
  QV_RETURN_NOT_OK(estimate_nbytes(ds, &nbytes_est, err));
  int64_t rows = qv_dataset_num_rows(ds);
  int64_t num_shards = o.num_shards;
  if (num_shards == 0)
    num_shards =
        qv_hf_plan_num_shards(nbytes_est, o.max_shard_size, 0, qv_table_num_rows(ds->data));
  /* datasets: min(DEFAULT_MAX_BATCH_SIZE, get_writer_batch_size_from_data_size) */
  int64_t wbs = QV_DATASET_WRITER_BATCH_SIZE;
  if (nbytes_est > 0) {
    int64_t by_size = (int64_t)((__int128)rows * 100000000 / nbytes_est);
    if (by_size < 1) by_size = 1;
    if (by_size < wbs) wbs = by_size;
  }
  qv_schema *schema = NULL;
  QV_RETURN_NOT_OK(qv_ds_file_schema(qv_table_schema(ds->data), ds->features, NULL, &schema, err));
  qv_hf_state state;
  memset(&state, 0, sizeof state);
  state.data_files = calloc((size_t)(num_shards > 0 ? num_shards : 1), sizeof(char *));
  qv_status st = state.data_files ? QV_OK : oom(err);
  int64_t done_rows = 0;
  for (int64_t i = 0; st == QV_OK && i < num_shards; i++) {
    char name[64];
    qv_hf_shard_name(i, num_shards, name, sizeof name);
    if ((state.data_files[i] = qv_ds_strdup(name)) == NULL) {
      st = oom(err);
      break;
    }
    state.n_data_files = i + 1;
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
      st = qv_error_set(err, QV_EARG, "%s: path too long", dir);
      break;
    }
    int64_t start = 0, end = 0;
    qv_hf_shard_range(rows, num_shards, i, &start, &end);
    qv_dataset *shard = NULL;
    if (rows == 0) {
      shard = qv_dataset_ref(ds);
    } else if (end > start) {
      st = qv_ds_select_contiguous(ds, start, end - start, ds->fingerprint, &shard, err);
    } else {
      st = qv_ds_select_contiguous(ds, 0, 0, ds->fingerprint, &shard, err);
    }
    /* the shard is not reopened: mapping it would walk (and make resident)
     * a page per batch for nothing */
    if (st == QV_OK) st = qv_ds_write_rows(shard, path, schema, wbs, NULL, NULL, "save", NULL, err);
    qv_dataset_unref(shard);
    done_rows += end - start;
    if (o.progress) o.progress(o.progress_ctx, "save", done_rows, rows);
  }
  qv_schema_unref(schema);
  /* dataset_info.json: the dataset's info with its current features. */
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  if (st == QV_OK) st = qv_dataset_info_json(ds, &sb, err);
  if (st == QV_OK) st = write_text(dir, QV_HF_INFO_JSON, qv_strbuf_cstr(&sb), sb.len, err);
  if (st == QV_OK) {
    state.fingerprint = ds->fingerprint;
    state.has_format_columns = ds->has_format_columns;
    state.n_format_columns = ds->n_format_columns;
    state.format_columns = ds->format_columns;
    state.format_kwargs = ds->format_kwargs;
    state.format_type = ds->format_type;
    state.output_all_columns = ds->output_all_columns;
    state.split = ds->split;
    qv_strbuf_clear(&sb);
    st = qv_hf_state_emit(&state, &sb, err);
  }
  if (st == QV_OK) st = write_text(dir, QV_HF_STATE_JSON, qv_strbuf_cstr(&sb), sb.len, err);
  qv_strbuf_reset(&sb);
  for (int64_t i = 0; i < state.n_data_files; i++) free(state.data_files[i]);
  free(state.data_files);
  if (st == QV_OK && out_num_shards) *out_num_shards = num_shards;
  return st;
}

static qv_status check_save_options(const qv_dataset *ds, const qv_save_options *opts,
                                    qv_error *err) {
  if (opts == NULL) return QV_OK;
  if (opts->num_shards < 0 || opts->max_shard_size < 0)
    return qv_error_set(err, QV_EARG, "save_to_disk: negative shard count or size");
  /* datasets' save_to_disk takes shard(num_shards, i, contiguous=True) for
   * every i: with more shards than rows, shard `rows` starts past the end
   * and select raises IndexError (an empty dataset writes empty shards). */
  int64_t rows = qv_dataset_num_rows(ds);
  if (opts->num_shards > 0 && rows > 0 && opts->num_shards > rows)
    return qv_error_set(err, QV_ERANGE,
                        "save_to_disk: num_shards=%lld is more than the dataset's %lld rows "
                        "(index %lld out of range for dataset of size %lld)",
                        (long long)opts->num_shards, (long long)rows, (long long)rows,
                        (long long)rows);
  return QV_OK;
}

qv_status qv_dataset_save_to_disk(qv_dataset *ds, const char *dir, const qv_save_options *opts,
                                  int64_t *out_num_shards, qv_error *err) {
  QV_RETURN_NOT_OK(check_save_options(ds, opts, err));
  qv_atomic_dir *ad = NULL;
  QV_RETURN_NOT_OK(dst_begin(&ds, 1, dir, &ad, err));
  int64_t shards = 0;
  qv_status st = save_into(ds, qv_atomic_dir_tmp(ad), opts, &shards, err);
  if (st != QV_OK) {
    qv_atomic_dir_abort(ad);
    return st;
  }
  st = qv_atomic_dir_commit(ad, NULL, err);
  if (st == QV_OK && out_num_shards) *out_num_shards = shards;
  return st;
}

qv_status qv_dataset_dict_save_to_disk(qv_dataset *const *datasets, const char *const *names,
                                       int64_t n, const char *dir, const qv_save_options *opts,
                                       qv_error *err) {
  for (int64_t i = 0; i < n; i++) {
    QV_RETURN_NOT_OK(check_save_options(datasets[i], opts, err));
    QV_RETURN_NOT_OK(qv_hf_check_relative_name("split name", names[i], err));
    if (strchr(names[i], '/') != NULL || strcmp(names[i], ".") == 0)
      return qv_error_set(err, QV_EARG, "split name '%s' must be a single path component",
                          names[i]);
    for (int64_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return qv_error_set(err, QV_EARG, "split name '%s' given twice", names[i]);
  }
  qv_atomic_dir *ad = NULL;
  QV_RETURN_NOT_OK(dst_begin(datasets, n, dir, &ad, err));
  const char *tmp = qv_atomic_dir_tmp(ad);
  qv_status st = QV_OK;
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    char sub[PATH_MAX];
    if ((size_t)snprintf(sub, sizeof sub, "%s/%s", tmp, names[i]) >= sizeof sub)
      st = qv_error_set(err, QV_EARG, "%s: path too long", dir);
    else if (mkdir(sub, 0777) != 0)
      st = qv_error_set(err, QV_EIO, "%s: mkdir: %s", sub, strerror(errno));
    else st = save_into(datasets[i], sub, opts, NULL, err);
  }
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  if (st == QV_OK) st = qv_hf_dict_emit((char *const *)names, n, &sb, err);
  if (st == QV_OK) st = write_text(tmp, QV_HF_DICT_JSON, qv_strbuf_cstr(&sb), sb.len, err);
  qv_strbuf_reset(&sb);
  if (st != QV_OK) {
    qv_atomic_dir_abort(ad);
    return st;
  }
  return qv_atomic_dir_commit(ad, NULL, err);
}

/* ------------------------------------------------------------------------ */
/* Assembling a save_to_disk directory from shards written elsewhere         */

/* Move the shards already moved into `tmp` (the first `moved`) back. */
static void assemble_undo(const char *tmp, const char *const *shards, int64_t moved, int64_t n) {
  for (int64_t i = 0; i < moved; i++) {
    char name[64], p[PATH_MAX];
    qv_hf_shard_name(i, n, name, sizeof name);
    if ((size_t)snprintf(p, sizeof p, "%s/%s", tmp, name) < sizeof p) (void)rename(p, shards[i]);
  }
}

/* Types equal but for nullability and the names of list items (Spark says
 * "element", pyarrow "item"; datasets casts either on load). */
static bool same_type(const qv_type *a, const qv_type *b, int depth) {
  if (a->id != b->id || a->n_children != b->n_children || depth > 64) return false;
  switch (a->id) {
    case QV_FIXED_SIZE_LIST:
      if (a->list_size != b->list_size) return false;
      /* fall through */
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_LIST_VIEW:
    case QV_STRUCT:
      for (int32_t i = 0; i < a->n_children; i++) {
        if (a->id == QV_STRUCT && strcmp(a->children[i].name, b->children[i].name) != 0)
          return false;
        if (!same_type(a->children[i].type, b->children[i].type, depth + 1)) return false;
      }
      return true;
    default: return qv_type_equals(a, b, false);
  }
}

/* Whether `b` has the columns of `a` (names and types; nullability and the
 * names of list items are not compared: writers differ there, datasets
 * ignores them).
 * QV_EINVAL naming the first difference otherwise. */
static qv_status same_columns(const qv_schema *a, const qv_schema *b, const char *what,
                              qv_error *err) {
  int32_t n = qv_schema_num_fields(a);
  if (qv_schema_num_fields(b) != n)
    return qv_error_set(err, QV_EINVAL, "assemble: %s has %d columns where shard 0 has %d", what,
                        (int)qv_schema_num_fields(b), (int)n);
  for (int32_t i = 0; i < n; i++) {
    const qv_field *fa = qv_schema_field(a, i), *fb = qv_schema_field(b, i);
    if (strcmp(fa->name, fb->name) != 0)
      return qv_error_set(err, QV_EINVAL, "assemble: %s: column %d is '%s' where shard 0 has '%s'",
                          what, (int)i, fb->name, fa->name);
    if (!same_type(fa->type, fb->type, 0))
      return qv_error_set(err, QV_EINVAL,
                          "assemble: %s: column '%s' does not have the type it has in shard 0",
                          what, fb->name);
  }
  return QV_OK;
}

qv_status qv_dataset_assemble_save(const char *dir, const char *const *shards, int64_t n,
                                   const qv_assemble_options *opts, qv_error *err) {
  qv_assemble_options o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  if (n < 1) return qv_error_set(err, QV_EARG, "assemble: no shards (datasets needs one)");
  if (o.fingerprint) QV_RETURN_NOT_OK(qv_fingerprint_validate(o.fingerprint, err));
  /* every shard readable, with the first's columns */
  qv_dataset *first = NULL;
  qv_fingerprint_args *args = NULL;
  qv_status st = qv_fingerprint_args_new(&args, err);
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    qv_dataset *d = NULL;
    st = qv_dataset_open(shards[i], NULL, &d, err);
    if (st != QV_OK) {
      qv_error_prefix(err, st, "assemble: shard %lld: ", (long long)i);
      break;
    }
    if (first != NULL) {
      char what[64];
      snprintf(what, sizeof what, "shard %lld", (long long)i);
      st = same_columns(qv_table_schema(first->data), qv_table_schema(d->data), what, err);
    }
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)i);
    if (st == QV_OK) st = qv_fingerprint_arg_str(args, key, d->fingerprint, err);
    if (first == NULL) first = d;
    else qv_dataset_unref(d);
  }
  /* the features: given (checked against the columns) or the first shard's */
  qv_hf_feature *given = NULL;
  if (st == QV_OK && o.features_json != NULL) {
    st = qv_hf_features_parse(o.features_json, (int64_t)strlen(o.features_json), &given, err);
    qv_schema *implied = NULL;
    if (st == QV_OK) st = qv_hf_features_arrow_schema(given, &implied, err);
    if (st == QV_OK) st = same_columns(qv_table_schema(first->data), implied, "the features", err);
    qv_schema_unref(implied);
  }
  char fp[QV_FINGERPRINT_SIZE];
  if (st == QV_OK) {
    if (o.fingerprint) snprintf(fp, sizeof fp, "%s", o.fingerprint);
    else st = qv_fingerprint_update(first->fingerprint, "quiver.assemble", args, fp, err);
  }
  qv_fingerprint_args_free(args);
  qv_hf_info *info = NULL;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  if (st == QV_OK) st = qv_hf_info_new(given ? given : first->features, &info, err);
  if (st == QV_OK) st = qv_hf_info_emit(info, &sb, err);
  qv_hf_info_free(info);
  qv_hf_feature_free(given);
  qv_dataset_unref(first);
  qv_atomic_dir *ad = NULL;
  if (st == QV_OK) st = dst_begin(NULL, 0, dir, &ad, err);
  if (st != QV_OK) {
    qv_strbuf_reset(&sb);
    return st;
  }
  const char *tmp = qv_atomic_dir_tmp(ad);
  qv_hf_state state;
  memset(&state, 0, sizeof state);
  state.data_files = calloc((size_t)n, sizeof(char *));
  if (state.data_files == NULL) st = oom(err);
  int64_t moved = 0;
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    char name[64], p[PATH_MAX];
    qv_hf_shard_name(i, n, name, sizeof name);
    if ((state.data_files[i] = qv_ds_strdup(name)) == NULL) st = oom(err);
    else state.n_data_files = i + 1;
    if (st == QV_OK && (size_t)snprintf(p, sizeof p, "%s/%s", tmp, name) >= sizeof p)
      st = qv_error_set(err, QV_EARG, "%s: path too long", dir);
    if (st == QV_OK && rename(shards[i], p) != 0)
      st = qv_error_set(err, QV_EIO,
                        "assemble: moving %s into %s: %s (shards must be on the "
                        "file system of the destination)",
                        shards[i], dir, strerror(errno));
    if (st == QV_OK) moved = i + 1;
  }
  if (st == QV_OK) st = write_text(tmp, QV_HF_INFO_JSON, qv_strbuf_cstr(&sb), sb.len, err);
  if (st == QV_OK) {
    state.fingerprint = fp;
    state.format_kwargs = NULL;
    state.split = (char *)o.split;
    qv_strbuf_clear(&sb);
    st = qv_hf_state_emit(&state, &sb, err);
  }
  if (st == QV_OK) st = write_text(tmp, QV_HF_STATE_JSON, qv_strbuf_cstr(&sb), sb.len, err);
  qv_strbuf_reset(&sb);
  for (int64_t i = 0; i < state.n_data_files; i++) free(state.data_files[i]);
  free(state.data_files);
  if (st != QV_OK) {
    assemble_undo(tmp, shards, moved, n);
    qv_atomic_dir_abort(ad);
    return st;
  }
  return qv_atomic_dir_commit(ad, NULL, err);
}
