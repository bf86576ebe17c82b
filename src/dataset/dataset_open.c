/*
 * dataset_open.c — the one open of the dataset layer, used by every front
 * end (CLI, Python): a path is sniffed (qv_path_sniff: a directory by its
 * marker files, a file by its first bytes — Arrow IPC file or stream,
 * Parquet (opened lazily by qv_table_open_parquet), CSV and JSON Lines
 * (converted once, streaming, into a cached Arrow file that is mapped:
 * qv_table_open_text in dataset_text.c)), classified
 * once (qv_path_classify: a file mapped as a table, an indices mapping
 * scanned once, a directory listed by qv_hf_dir_open) and opened from that
 * classification (qv_dataset_open_classified), which nothing reopens.
 * A needed choice ("which split", "which data does this indices mapping
 * index") comes back typed (qv_dataset_choice) besides a message that
 * names no front end's options. Dataset layer.
 *
 * Map: qv_path_sniff classifies by bytes; qv_path_classify opens what the
 * path is (qv_table_open_path / qv_hf_dir_open); qv_dataset_open_classified
 * turns that into a dataset (qv_ds_open_file, qv_ds_open_split,
 * qv_dataset_open_source, qv_ds_with_indices_table); qv_dataset_open and
 * qv_dataset_open_ex are classify + open.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset/dataset_internal.h"
#include "dataset/hf_internal.h"

static qv_status oom(qv_error *err) {
  return qv_error_set(err, QV_ENOMEM, "dataset: out of memory");
}

const char *qv_path_kind_name(qv_path_kind kind) {
  switch (kind) {
    case QV_PATH_ARROW_FILE: return "arrow file";
    case QV_PATH_ARROW_STREAM: return "arrow stream";
    case QV_PATH_INDICES: return "indices mapping";
    case QV_PATH_DATASET: return "dataset";
    case QV_PATH_DATASET_DICT: return "dataset dict";
    case QV_PATH_CACHE_DIR: return "cache directory";
    case QV_PATH_PARQUET: return "parquet";
    case QV_PATH_CSV: return "csv";
    case QV_PATH_JSON: return "json";
  }
  return "unknown";
}

/* ------------------------------------------------------------------------ */
/* Sniffing                                                                  */

static bool is_regular_in(const char *dir, const char *name) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p) return false;
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Text: no control bytes but tab / newline / carriage return (bytes >=
 * 0x80 allowed: UTF-8). */
static bool looks_like_text(const uint8_t *b, size_t n) {
  if (n == 0) return false;
  for (size_t i = 0; i < n; i++)
    if ((b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' && b[i] != '\r') || b[i] == 0x7f) return false;
  return true;
}

/* "6e 6f 74 20 ... (\"not ...\")": the first bytes as hex and ASCII. */
static void describe_bytes(const uint8_t *b, size_t n, char *out, size_t cap) {
  size_t show = n < 8 ? n : 8, len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < show && len < cap; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s%02x", i ? " " : "", b[i]);
  if (len < cap) len += (size_t)snprintf(out + len, cap - len, " (\"");
  for (size_t i = 0; i < show && len + 1 < cap; i++) {
    out[len++] = b[i] >= 0x20 && b[i] < 0x7f ? (char)b[i] : '.';
    out[len] = '\0';
  }
  if (len < cap) snprintf(out + len, cap - len, "\")");
}

/* The kind of a regular file from its first `n` bytes (`size` in all). */
static qv_status sniff_bytes(const char *path, const uint8_t *b, size_t n, int64_t size,
                             qv_path_kind *out, qv_error *err) {
  if (n == 0)
    return qv_error_set(err, QV_EINVAL, "%s: not an Arrow IPC file or stream: the file is empty",
                        path);
  if (n >= 6 && memcmp(b, "ARROW1", 6) == 0) {
    *out = QV_PATH_ARROW_FILE;
    return QV_OK;
  }
  if (n >= 4 && memcmp(b, "\xff\xff\xff\xff", 4) == 0) {
    *out = QV_PATH_ARROW_STREAM;
    return QV_OK;
  }
  if (n >= 4 && (memcmp(b, "PAR1", 4) == 0 || memcmp(b, "PARE", 4) == 0)) {
    *out = QV_PATH_PARQUET; /* PARE: encrypted, refused when opened */
    return QV_OK;
  }
  char found[64];
  describe_bytes(b, n, found, sizeof found);
  /* Text: CSV and JSON Lines (src/formats), by extension first, else by a
   * simple sniff of the first bytes. */
  if (looks_like_text(b, n)) {
    if (qv_ds_has_suffix(path, ".csv") || qv_ds_has_suffix(path, ".tsv")) {
      *out = QV_PATH_CSV;
      return QV_OK;
    }
    if (qv_ds_has_suffix(path, ".json") || qv_ds_has_suffix(path, ".jsonl") ||
        qv_ds_has_suffix(path, ".ndjson")) {
      *out = QV_PATH_JSON;
      return QV_OK;
    }
    size_t i = n >= 3 && memcmp(b, "\xef\xbb\xbf", 3) == 0 ? 3 : 0; /* UTF-8 BOM */
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) i++;
    if (i < n && (b[i] == '{' || b[i] == '[')) {
      *out = QV_PATH_JSON;
      return QV_OK;
    }
    bool sep = false;
    for (size_t k = i; k < n && b[k] != '\n' && !sep; k++)
      sep = b[k] == ',' || b[k] == '\t' || b[k] == ';' || b[k] == '|';
    if (sep) {
      *out = QV_PATH_CSV;
      return QV_OK;
    }
  } else if (n >= 4) {
    /* A stream from before Arrow 0.15: a little-endian int32 metadata
     * length, no continuation marker (0: the end-of-stream marker). A
     * length past the end of a small file is left to the reader to call
     * truncated when it is plausible for one message. */
    int32_t len = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                            (uint32_t)b[3] << 24);
    if (len >= 0 && (len <= (16 << 20) || (int64_t)len <= size - 4)) {
      *out = QV_PATH_ARROW_STREAM;
      return QV_OK;
    }
  }
  return qv_error_set(err, QV_EINVAL, "%s: not an Arrow, Parquet, CSV or JSON file: found %s", path,
                      found);
}

qv_status qv_path_sniff(const char *path, qv_path_kind *out, qv_error *err) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return qv_error_set(err, QV_EIO, "cannot open '%s': %s", path, strerror(errno));
  if (S_ISDIR(sb.st_mode)) {
    *out = is_regular_in(path, QV_HF_DICT_JSON)    ? QV_PATH_DATASET_DICT
           : is_regular_in(path, QV_HF_STATE_JSON) ? QV_PATH_DATASET
                                                   : QV_PATH_CACHE_DIR;
    return QV_OK;
  }
  if (!S_ISREG(sb.st_mode)) { /* a pipe or device: only a stream can come from it */
    *out = QV_PATH_ARROW_STREAM;
    return QV_OK;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return qv_error_set(err, QV_EIO, "cannot open '%s': %s", path, strerror(errno));
  uint8_t b[64];
  ssize_t n;
  do n = pread(fd, b, sizeof b, 0);
  while (n < 0 && errno == EINTR);
  int saved = errno;
  close(fd);
  if (n < 0) return qv_error_set(err, QV_EIO, "%s: cannot read: %s", path, strerror(saved));
  return sniff_bytes(path, b, (size_t)n, (int64_t)sb.st_size, out, err);
}

/* ------------------------------------------------------------------------ */
/* Classification                                                            */

void qv_path_info_reset(qv_path_info *info) {
  if (info == NULL) return;
  free(info->path);
  qv_table_unref(info->table);
  qv_hf_dir_free(info->dir);
  memset(info, 0, sizeof *info);
}

qv_status qv_path_classify(const char *path, qv_path_info *out, qv_error *err) {
  memset(out, 0, sizeof *out);
  qv_path_kind kind;
  QV_RETURN_NOT_OK(qv_path_sniff(path, &kind, err));
  qv_path_info info;
  memset(&info, 0, sizeof info);
  info.kind = kind;
  info.indices_max = -1;
  if ((info.path = qv_ds_strdup(path)) == NULL) return oom(err);
  qv_status st = QV_OK;
  if (kind == QV_PATH_DATASET || kind == QV_PATH_DATASET_DICT || kind == QV_PATH_CACHE_DIR) {
    st = qv_hf_dir_open(path, &info.dir, err);
  } else if (kind == QV_PATH_CSV || kind == QV_PATH_JSON) {
    st = qv_table_open_text(path, kind, NULL, &info.table, err); /* dataset_text.c */
  } else if (kind == QV_PATH_PARQUET) {
    /* pyarrow's types; only the footer now, row groups decoded lazily */
    st = qv_table_open_parquet(path, &info.table, err);
  } else {
    st = qv_table_open_path(path, NULL, &info.table, err);
    if (st == QV_OK &&
        qv_hf_file_role_of(path, qv_table_schema(info.table)) == QV_HF_FILE_INDICES) {
      info.kind = QV_PATH_INDICES;
      st = qv_ds_indices_scan(info.table, path, -1, &info.indices_max, err);
    }
  }
  if (st != QV_OK) {
    qv_path_info_reset(&info);
    return st;
  }
  *out = info;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Choices                                                                   */

void qv_dataset_choice_reset(qv_dataset_choice *c) {
  if (c == NULL) return;
  free(c->path);
  free(c->dir);
  for (int64_t i = 0; i < c->n; i++) free(c->names[i]);
  free(c->names);
  free(c->rows);
  memset(c, 0, sizeof *c);
}

/* Fill `c` (may be NULL) with kind/container/path and room for n names.
 * On failure it stays reset: a choice is a courtesy, the error stands. */
static bool choice_begin(qv_dataset_choice *c, qv_dataset_choice_kind kind, qv_path_kind container,
                         const char *path, int64_t n, bool with_rows) {
  if (c == NULL) return false;
  qv_dataset_choice_reset(c);
  c->kind = kind;
  c->container = container;
  c->path = qv_ds_strdup(path);
  c->names = calloc((size_t)(n > 0 ? n : 1), sizeof *c->names);
  c->rows = with_rows ? calloc((size_t)(n > 0 ? n : 1), sizeof *c->rows) : NULL;
  if (c->path == NULL || c->names == NULL || (with_rows && c->rows == NULL)) {
    qv_dataset_choice_reset(c);
    return false;
  }
  return true;
}

static void choice_add(qv_dataset_choice *c, const char *name, int64_t rows) {
  if (c == NULL || c->kind == QV_CHOICE_NONE) return;
  char *d = qv_ds_strdup(name);
  if (d == NULL) {
    qv_dataset_choice_reset(c);
    return;
  }
  if (c->rows) c->rows[c->n] = rows;
  c->names[c->n++] = d;
}

static void choice_splits(qv_dataset_choice *c, const qv_hf_dir *d, qv_path_kind container,
                          const char *wanted) {
  if (!choice_begin(c, QV_CHOICE_SPLIT, container, d->path, d->n_splits, false)) return;
  c->wanted = wanted;
  for (int64_t i = 0; i < d->n_splits; i++) choice_add(c, d->splits[i].name, 0);
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                   */

static char *parent_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  if (slash == NULL) return qv_ds_strdup(".");
  if (slash == path) return qv_ds_strdup("/");
  return strndup(path, (size_t)(slash - path));
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* An indices mapping file composed with the one dataset of its directory
 * it can index. The file is the classified table (scanned already); the
 * directory listing takes its role and rows from there. */
static qv_status open_indices(const qv_path_info *info, qv_dataset_choice *choice, qv_dataset **out,
                              qv_error *err) {
  const char *path = info->path;
  char *dir = parent_dir(path);
  if (dir == NULL) return oom(err);
  qv_hf_known_file known = {base_name(path), qv_hf_file_role_of(path, qv_table_schema(info->table)),
                            qv_table_num_rows(info->table), info->table};
  qv_hf_dir *d = NULL;
  qv_status st = qv_hf_dir_open_known(dir, &known, &d, err);
  int64_t *idx = NULL, n = 0, max = info->indices_max;
  if (st == QV_OK && d->layout == QV_HF_LAYOUT_DATASET_DICT)
    st = qv_error_set(err, QV_EINVAL, "%s: beside a DatasetDict, not in a dataset's directory",
                      path);
  if (st == QV_OK) st = qv_ds_indices_fit(d, max, &idx, &n, err);
  if (st == QV_OK && n != 1) {
    qv_strbuf sb;
    qv_strbuf_init(&sb);
    if (n == 0) {
      qv_strbuf_printf(&sb, NULL, "no dataset in %s has more than %lld rows", dir, (long long)max);
      if (d->n_sources > 0) qv_strbuf_printf(&sb, NULL, " (");
      qv_ds_list_sources(d, NULL, d->n_sources, &sb);
      if (d->n_sources > 0) qv_strbuf_printf(&sb, NULL, ")");
    } else {
      qv_strbuf_printf(&sb, NULL,
                       "ambiguous: %lld datasets in %s have more than %lld rows: ", (long long)n,
                       dir, (long long)max);
      qv_ds_list_sources(d, idx, n, &sb);
    }
    st = qv_error_set(err, QV_EINVAL,
                      "%s: cannot tell which data this indices mapping indexes: %s; name the "
                      "data it indexes",
                      path, qv_strbuf_cstr(&sb));
    qv_strbuf_reset(&sb);
    int64_t shown = n > 0 ? n : d->n_sources;
    if (choice_begin(choice, QV_CHOICE_DATA, QV_PATH_INDICES, path, shown, true)) {
      choice->dir = qv_ds_strdup(dir);
      choice->max_index = max;
      choice->ambiguous = n > 1;
      for (int64_t i = 0; i < shown; i++) {
        const qv_hf_source *s = &d->sources[n > 0 ? idx[i] : i];
        choice_add(choice, s->name, s->rows);
      }
    }
  }
  qv_dataset *data = NULL;
  if (st == QV_OK) st = qv_dataset_open_source(d, idx[0], &data, err);
  if (st == QV_OK) st = qv_ds_with_indices_table(data, path, info->table, true, max, out, err);
  qv_dataset_unref(data);
  free(idx);
  qv_hf_dir_free(d);
  free(dir);
  return st;
}

/* A builder split or another dataset of a cache or Dataset directory. */
static qv_status open_in_cache(const qv_hf_dir *d, const char *split, qv_dataset_choice *choice,
                               qv_dataset **out, qv_error *err) {
  if (split == NULL && d->layout == QV_HF_LAYOUT_CACHE && d->n_splits == 1)
    return qv_ds_open_split(&d->splits[0], out, err);
  /* A builder split by its name first (also one that cannot open: its
   * error), then any other dataset of the directory by its name. */
  for (int64_t i = 0; split != NULL && d->layout == QV_HF_LAYOUT_CACHE && i < d->n_splits; i++)
    if (strcmp(d->splits[i].name, split) == 0) return qv_ds_open_split(&d->splits[i], out, err);
  int64_t src = split ? qv_hf_dir_find_source(d, split) : -1;
  if (src >= 0 && strcmp(split, ".") != 0) return qv_dataset_open_source(d, src, out, err);
  qv_strbuf names;
  qv_strbuf_init(&names);
  for (int64_t i = 0; i < d->n_splits; i++)
    qv_strbuf_printf(&names, NULL, "%s'%s'", i ? ", " : "", d->splits[i].name);
  qv_strbuf others;
  qv_strbuf_init(&others);
  qv_ds_list_sources(d, NULL, d->n_sources, &others);
  qv_status st;
  if (d->layout == QV_HF_LAYOUT_DATASET)
    st = qv_error_set(err, QV_EARG, "%s: a Dataset directory has no split '%s' (its datasets: %s)",
                      d->path, split, qv_strbuf_cstr(&others));
  else
    st = qv_error_set(err, QV_EARG,
                      "%s: a load_dataset cache directory: %s%s%s (splits: %s; "
                      "datasets: %s)",
                      d->path, split ? "no split or dataset '" : "choose a split",
                      split ? split : "", split ? "'" : "",
                      d->n_splits ? qv_strbuf_cstr(&names) : "none", qv_strbuf_cstr(&others));
  qv_strbuf_reset(&names);
  qv_strbuf_reset(&others);
  choice_splits(choice, d, d->layout == QV_HF_LAYOUT_DATASET ? QV_PATH_DATASET : QV_PATH_CACHE_DIR,
                split);
  return st;
}

static qv_status open_dir(const qv_hf_dir *d, const char *split, qv_dataset_choice *choice,
                          qv_dataset **out, qv_error *err) {
  if (d->layout == QV_HF_LAYOUT_DATASET)
    return split != NULL ? open_in_cache(d, split, choice, out, err)
                         : qv_ds_open_split(&d->splits[0], out, err);
  if (d->layout != QV_HF_LAYOUT_DATASET_DICT) return open_in_cache(d, split, choice, out, err);
  for (int64_t i = 0; split != NULL && i < d->n_splits; i++)
    if (strcmp(d->splits[i].name, split) == 0) return qv_ds_open_split(&d->splits[i], out, err);
  qv_strbuf names;
  qv_strbuf_init(&names);
  for (int64_t i = 0; i < d->n_splits; i++)
    qv_strbuf_printf(&names, NULL, "%s'%s'", i ? ", " : "", d->splits[i].name);
  qv_status st = qv_error_set(err, QV_EARG, "%s: a DatasetDict: %s%s%s (splits: %s)", d->path,
                              split ? "no split '" : "choose a split", split ? split : "",
                              split ? "'" : "", qv_strbuf_cstr(&names));
  qv_strbuf_reset(&names);
  choice_splits(choice, d, QV_PATH_DATASET_DICT, split);
  return st;
}

qv_status qv_dataset_open_classified(const qv_path_info *info,
                                     const qv_dataset_open_options *options, qv_dataset **out,
                                     qv_error *err) {
  const char *split = options ? options->split : NULL;
  const char *data = options ? options->data : NULL;
  qv_dataset_choice *choice = options ? options->choice : NULL;
  qv_dataset_choice_reset(choice);
  if (data != NULL) {
    /* `info` is an indices mapping file over the dataset at `data`. */
    if (info->dir != NULL)
      return qv_error_set(err, QV_EARG,
                          "%s is a directory: only an indices mapping file is applied to given "
                          "data",
                          info->path);
    qv_dataset_open_options o = {split, NULL, choice};
    qv_dataset *base = NULL;
    QV_RETURN_NOT_OK(qv_dataset_open_ex(data, &o, &base, err));
    qv_status st = qv_ds_indices_check(info->path, info->table, -1, err);
    if (st == QV_OK)
      st = qv_ds_with_indices_table(base, info->path, info->table, info->kind == QV_PATH_INDICES,
                                    info->indices_max, out, err);
    qv_dataset_unref(base);
    return st;
  }
  if (info->dir != NULL) return open_dir(info->dir, split, choice, out, err);
  if (split != NULL)
    return qv_error_set(err, QV_EARG,
                        "%s: a split name applies to a DatasetDict or cache directory", info->path);
  if (info->kind == QV_PATH_INDICES) return open_indices(info, choice, out, err);
  return qv_ds_open_file(info->path, info->table, out, err);
}

qv_status qv_dataset_open_ex(const char *path, const qv_dataset_open_options *options,
                             qv_dataset **out, qv_error *err) {
  if (options != NULL) qv_dataset_choice_reset(options->choice);
  qv_path_info info;
  QV_RETURN_NOT_OK(qv_path_classify(path, &info, err));
  qv_status st = qv_dataset_open_classified(&info, options, out, err);
  qv_path_info_reset(&info);
  return st;
}

qv_status qv_dataset_open(const char *path, const char *split, qv_dataset **out, qv_error *err) {
  qv_dataset_open_options o = {split, NULL, NULL};
  return qv_dataset_open_ex(path, &o, out, err);
}

qv_status qv_dataset_open_indices_file(const char *path, qv_dataset **out, qv_error *err) {
  qv_path_info info;
  QV_RETURN_NOT_OK(qv_path_classify(path, &info, err));
  qv_status st = QV_OK;
  if (info.kind != QV_PATH_INDICES) {
    /* Not named cache-*.arrow: still a mapping when its schema says so. */
    st = info.table ? qv_ds_indices_check(path, info.table, -1, err)
                    : qv_error_set(err, QV_EINVAL, "%s: a directory, not an indices mapping", path);
    if (st == QV_OK) st = qv_ds_indices_scan(info.table, path, -1, &info.indices_max, err);
    if (st == QV_OK) info.kind = QV_PATH_INDICES;
  }
  if (st == QV_OK) st = open_indices(&info, NULL, out, err);
  qv_path_info_reset(&info);
  return st;
}
