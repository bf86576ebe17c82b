/*
 * dataset_ops.c — the transforms of the Dataset object, with the semantics
 * of `datasets`' arrow_dataset.py: select, shuffle, filter, shard,
 * split_by_node, train_test_split, flatten_indices, concatenate, the
 * column transforms (rename / remove / select / cast / add) and
 * with_format. Each computes its fingerprint first (the arguments listed
 * in dataset.h), then looks for its cache file (file-backed datasets),
 * then computes. Dataset layer.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_internal.h"
#include "dataset/hf_internal.h"
#include "quiver/expr.h"
#include "quiver/print.h"
#include "quiver/random.h"

static qv_status oom(qv_error *err) {
  return qv_error_set(err, QV_ENOMEM, "dataset: out of memory");
}

static int64_t wbs(const qv_dataset_options *opts) {
  return opts && opts->writer_batch_size > 0 ? opts->writer_batch_size
                                             : QV_DATASET_WRITER_BATCH_SIZE;
}

/* Rows per batch of indices files: the caller's, else (0) the default of
 * qv_ds_indices_build. */
static int64_t idx_wbs(const qv_dataset_options *opts) {
  return opts && opts->writer_batch_size > 0 ? opts->writer_batch_size : 0;
}

static bool ignore_cache(const qv_dataset_options *opts) { return opts && opts->ignore_cache; }

/* New argument set; fingerprint of `transform` with it; freed. Errors of
 * the argument calls are sticky and reported by qv_fingerprint_update. */
#define FP_ARGS_BEGIN(a)                                                                           \
  qv_fingerprint_args *a = NULL;                                                                   \
  QV_RETURN_NOT_OK(qv_fingerprint_args_new(&a, err))
#define FP_ARGS_END(a, ds, opts, transform, fp)                                                    \
  do {                                                                                             \
    qv_status fp_st_ = qv_ds_fingerprint(ds, opts, transform, a, fp, err);                         \
    qv_fingerprint_args_free(a);                                                                   \
    if (fp_st_ != QV_OK) return fp_st_;                                                            \
  } while (0)

/* The cache file of an indices transform and, when it exists (and may be
 * reused), the dataset over it in *hit. */
static qv_status indices_cache(qv_dataset *ds, const qv_dataset_options *opts, const char *fp,
                               int64_t expected_rows, char **path, qv_dataset **hit,
                               qv_error *err) {
  *hit = NULL;
  QV_RETURN_NOT_OK(qv_ds_cache_path(ds, opts, fp, NULL, path, err));
  if (*path == NULL || ignore_cache(opts) || !qv_ds_cache_reusable(*path)) return QV_OK;
  qv_table *idx = NULL;
  qv_status st = qv_ds_indices_open(*path, expected_rows, &idx, err);
  if (st == QV_OK) st = qv_ds_with_indices(ds, idx, fp, hit, err);
  qv_table_unref(idx);
  return st;
}

/* ------------------------------------------------------------------------ */
/* select / shuffle / shard                                                  */

qv_status qv_dataset_select(qv_dataset *ds, const int64_t *indices, int64_t n,
                            const qv_dataset_options *opts, qv_dataset **out, qv_error *err) {
  if (n < 0 || (n > 0 && indices == NULL))
    return qv_error_set(err, QV_EARG, "select: bad index list");
  if (opts && opts->keep_in_memory && opts->cache_file_name)
    return qv_error_set(err, QV_EARG, "use either keep_in_memory or a cache file name, not both");
  char fp[QV_FINGERPRINT_SIZE];
  FP_ARGS_BEGIN(a);
  qv_fingerprint_arg_int_array(a, "indices", indices, n, err);
  FP_ARGS_END(a, ds, opts, "quiver.select", fp);
  const char *path = opts && !opts->keep_in_memory ? opts->cache_file_name : NULL;
  return qv_ds_select_fp(ds, indices, n, fp, path, idx_wbs(opts), out, err);
}

qv_status qv_dataset_select_range(qv_dataset *ds, int64_t start, int64_t length,
                                  const qv_dataset_options *opts, qv_dataset **out, qv_error *err) {
  if (start < 0 || length < 0)
    return qv_error_set(err, QV_EARG, "select: bad range start %lld length %lld", (long long)start,
                        (long long)length);
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)(length > 0 ? length : 1));
  if (idx == NULL) return oom(err);
  for (int64_t i = 0; i < length; i++) idx[i] = start + i;
  qv_status st = qv_dataset_select(ds, idx, length, opts, out, err);
  free(idx);
  return st;
}

qv_status qv_dataset_shuffle(qv_dataset *ds, uint64_t seed, const qv_dataset_options *opts,
                             qv_dataset **out, qv_error *err) {
  int64_t n = qv_dataset_num_rows(ds);
  if (n == 0) {
    *out = qv_dataset_ref(ds);
    return QV_OK;
  }
  char fp[QV_FINGERPRINT_SIZE];
  FP_ARGS_BEGIN(a);
  qv_fingerprint_arg_uint(a, "seed", seed, err);
  FP_ARGS_END(a, ds, opts, "quiver.shuffle", fp);
  char *path = NULL;
  qv_status st = indices_cache(ds, opts, fp, n, &path, out, err);
  if (st != QV_OK || *out != NULL) {
    free(path);
    return st;
  }
  qv_buffer *perm = NULL;
  st = qv_buffer_alloc(n * 8, &perm, err);
  if (st == QV_OK) st = qv_permutation(seed, n, (int64_t *)perm->data, err);
  if (st == QV_OK) st = qv_ds_select_buf(ds, perm, 0, n, fp, path, idx_wbs(opts), out, err);
  qv_buffer_unref(perm);
  free(path);
  return st;
}

qv_status qv_dataset_shard(qv_dataset *ds, int64_t num_shards, int64_t index, bool contiguous,
                           const qv_dataset_options *opts, qv_dataset **out, qv_error *err) {
  if (num_shards < 1 || index < 0 || index >= num_shards)
    return qv_error_set(err, QV_EARG,
                        "shard: index should be in [0, num_shards-1] (index %lld, "
                        "num_shards %lld)",
                        (long long)index, (long long)num_shards);
  char fp[QV_FINGERPRINT_SIZE];
  FP_ARGS_BEGIN(a);
  qv_fingerprint_arg_int(a, "num_shards", num_shards, err);
  qv_fingerprint_arg_int(a, "index", index, err);
  if (!contiguous) qv_fingerprint_arg_bool(a, "contiguous", false, err);
  FP_ARGS_END(a, ds, opts, "quiver.shard", fp);
  int64_t n = qv_dataset_num_rows(ds);
  if (contiguous) {
    int64_t start = 0, end = 0;
    qv_hf_shard_range(n, num_shards, index, &start, &end);
    if (end - start == 0) return qv_ds_select_contiguous(ds, 0, 0, fp, out, err);
    return qv_ds_select_contiguous(ds, start, end - start, fp, out, err);
  }
  int64_t m = index < n ? (n - index + num_shards - 1) / num_shards : 0;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)(m > 0 ? m : 1));
  if (idx == NULL) return oom(err);
  for (int64_t i = 0; i < m; i++) idx[i] = index + i * num_shards;
  const char *path = opts && !opts->keep_in_memory ? opts->cache_file_name : NULL;
  qv_status st = qv_ds_select_fp(ds, idx, m, fp, path, idx_wbs(opts), out, err);
  free(idx);
  return st;
}

qv_status qv_dataset_split_by_node(qv_dataset *ds, int64_t rank, int64_t world_size,
                                   qv_dataset **out, qv_error *err) {
  return qv_dataset_shard(ds, world_size, rank, true, NULL, out, err);
}

/* ------------------------------------------------------------------------ */
/* train_test_split                                                          */

static void size_text(qv_split_size s, char *buf, size_t cap) {
  if (s.kind == QV_SIZE_NONE) {
    snprintf(buf, cap, "None");
  } else if (s.kind == QV_SIZE_COUNT) {
    snprintf(buf, cap, "%lld", (long long)s.count);
  } else {
    qv_strbuf sb;
    qv_strbuf_init(&sb);
    qv_format_double(&sb, s.fraction, NULL);
    snprintf(buf, cap, "%s", qv_strbuf_cstr(&sb));
    qv_strbuf_reset(&sb);
  }
}

static bool size_invalid(qv_split_size s, int64_t n) {
  if (s.kind == QV_SIZE_COUNT) return s.count >= n || s.count <= 0;
  if (s.kind == QV_SIZE_FRACTION) return !(s.fraction > 0 && s.fraction < 1);
  return false;
}

static void size_arg(qv_fingerprint_args *a, const char *key, qv_split_size s, qv_error *err) {
  if (s.kind == QV_SIZE_COUNT) qv_fingerprint_arg_int(a, key, s.count, err);
  if (s.kind == QV_SIZE_FRACTION) qv_fingerprint_arg_float(a, key, s.fraction, err);
}

static qv_status split_fp(qv_dataset *ds, const qv_dataset_options *opts, qv_split_size test,
                          qv_split_size train, bool shuffle, uint64_t seed, const char *name,
                          char fp[QV_FINGERPRINT_SIZE], qv_error *err) {
  FP_ARGS_BEGIN(a);
  size_arg(a, "test_size", test, err);
  size_arg(a, "train_size", train, err);
  if (!shuffle) qv_fingerprint_arg_bool(a, "shuffle", false, err);
  if (shuffle) qv_fingerprint_arg_uint(a, "seed", seed, err);
  qv_fingerprint_arg_str(a, "fingerprint_name", name, err);
  /* opts->new_fingerprint would give both splits one name: not used here. */
  (void)opts;
  FP_ARGS_END(a, ds, NULL, "quiver.train_test_split", fp);
  return QV_OK;
}

qv_status qv_dataset_train_test_split(qv_dataset *ds, qv_split_size test_size,
                                      qv_split_size train_size, bool shuffle, uint64_t seed,
                                      const qv_dataset_options *opts, qv_dataset **out_train,
                                      qv_dataset **out_test, qv_error *err) {
  int64_t n = qv_dataset_num_rows(ds);
  *out_train = *out_test = NULL;
  if (n == 0) {
    *out_train = qv_dataset_ref(ds);
    *out_test = qv_dataset_ref(ds);
    return QV_OK;
  }
  if (opts && opts->cache_file_name)
    return qv_error_set(err, QV_EARG,
                        "train_test_split: one cache file name cannot name two "
                        "splits");
  if (test_size.kind == QV_SIZE_NONE && train_size.kind == QV_SIZE_NONE) {
    test_size.kind = QV_SIZE_FRACTION;
    test_size.fraction = 0.25;
  }
  char tb[64], rb[64];
  size_text(test_size, tb, sizeof tb);
  size_text(train_size, rb, sizeof rb);
  if (size_invalid(test_size, n))
    return qv_error_set(err, QV_EARG,
                        "test_size=%s should be either positive and smaller than the number of "
                        "samples %lld or a float in the (0, 1) range",
                        tb, (long long)n);
  if (size_invalid(train_size, n))
    return qv_error_set(err, QV_EARG,
                        "train_size=%s should be either positive and smaller than the number of "
                        "samples %lld or a float in the (0, 1) range",
                        rb, (long long)n);
  if (test_size.kind == QV_SIZE_FRACTION && train_size.kind == QV_SIZE_FRACTION &&
      train_size.fraction + test_size.fraction > 1) {
    qv_strbuf sb;
    qv_strbuf_init(&sb);
    qv_format_double(&sb, train_size.fraction + test_size.fraction, NULL);
    qv_status st = qv_error_set(err, QV_EARG,
                                "The sum of test_size and train_size = %s, should be in the (0, 1) "
                                "range. Reduce test_size and/or train_size.",
                                qv_strbuf_cstr(&sb));
    qv_strbuf_reset(&sb);
    return st;
  }
  double dn = (double)n;
  int64_t n_test = 0, n_train = 0;
  if (test_size.kind == QV_SIZE_FRACTION) n_test = (int64_t)ceil(test_size.fraction * dn);
  if (test_size.kind == QV_SIZE_COUNT) n_test = test_size.count;
  if (train_size.kind == QV_SIZE_FRACTION) n_train = (int64_t)floor(train_size.fraction * dn);
  if (train_size.kind == QV_SIZE_COUNT) n_train = train_size.count;
  if (train_size.kind == QV_SIZE_NONE) n_train = n - n_test;
  else if (test_size.kind == QV_SIZE_NONE) n_test = n - n_train;
  if (n_train + n_test > n)
    return qv_error_set(err, QV_EARG,
                        "The sum of train_size and test_size = %lld, should be smaller than the "
                        "number of samples %lld. Reduce test_size and/or train_size.",
                        (long long)(n_train + n_test), (long long)n);
  if (n_train == 0)
    return qv_error_set(err, QV_EARG,
                        "With n_samples=%lld, test_size=%s and train_size=%s, the resulting train "
                        "set will be empty. Adjust any of the aforementioned parameters.",
                        (long long)n, tb, rb);
  char fp_train[QV_FINGERPRINT_SIZE], fp_test[QV_FINGERPRINT_SIZE];
  QV_RETURN_NOT_OK(split_fp(ds, opts, test_size, train_size, shuffle, seed, "train_new_fingerprint",
                            fp_train, err));
  QV_RETURN_NOT_OK(split_fp(ds, opts, test_size, train_size, shuffle, seed, "test_new_fingerprint",
                            fp_test, err));
  if (!shuffle) {
    qv_status st = qv_ds_select_contiguous(ds, 0, n_train, fp_train, out_train, err);
    if (st == QV_OK) st = qv_ds_select_contiguous(ds, n_train, n_test, fp_test, out_test, err);
    if (st != QV_OK) {
      qv_dataset_unref(*out_train);
      *out_train = NULL;
    }
    return st;
  }
  char *path_train = NULL, *path_test = NULL;
  qv_status st = qv_ds_cache_path(ds, opts, fp_train, NULL, &path_train, err);
  if (st == QV_OK) st = qv_ds_cache_path(ds, opts, fp_test, NULL, &path_test, err);
  if (st == QV_OK && path_train && path_test && !ignore_cache(opts) &&
      qv_ds_cache_reusable(path_train) && qv_ds_cache_reusable(path_test)) {
    qv_table *a = NULL, *b = NULL;
    st = qv_ds_indices_open(path_train, n_train, &a, err);
    if (st == QV_OK) st = qv_ds_indices_open(path_test, n_test, &b, err);
    if (st == QV_OK) st = qv_ds_with_indices(ds, a, fp_train, out_train, err);
    if (st == QV_OK) st = qv_ds_with_indices(ds, b, fp_test, out_test, err);
    qv_table_unref(a);
    qv_table_unref(b);
  } else if (st == QV_OK) {
    qv_buffer *perm = NULL;
    st = qv_buffer_alloc(n * 8, &perm, err);
    if (st == QV_OK) st = qv_permutation(seed, n, (int64_t *)perm->data, err);
    if (st == QV_OK)
      st = qv_ds_select_buf(ds, perm, n_test, n_train, fp_train, path_train, idx_wbs(opts),
                            out_train, err);
    if (st == QV_OK)
      st = qv_ds_select_buf(ds, perm, 0, n_test, fp_test, path_test, idx_wbs(opts), out_test, err);
    qv_buffer_unref(perm);
  }
  free(path_train);
  free(path_test);
  if (st != QV_OK) {
    qv_dataset_unref(*out_train);
    qv_dataset_unref(*out_test);
    *out_train = *out_test = NULL;
  }
  return st;
}

/* ------------------------------------------------------------------------ */
/* filter                                                                    */

/* Growing list of kept data rows. */
typedef struct kept {
  qv_buffer *buf;
  int64_t n;
} kept;

static qv_status kept_push_bits(kept *k, const uint8_t *bits, int64_t len, int64_t count,
                                const int64_t *rows, int64_t first, qv_error *err) {
  if (count == 0) return QV_OK;
  int64_t need = (k->n + count) * 8;
  if (need > k->buf->size) {
    int64_t want = k->buf->size * 2 > need ? k->buf->size * 2 : need;
    QV_RETURN_NOT_OK(qv_buffer_resize(k->buf, want, err));
  }
  int64_t *out = (int64_t *)k->buf->data + k->n;
  int64_t j = 0;
  for (int64_t i = 0; i < len; i++)
    if ((bits[i >> 3] >> (i & 7)) & 1) out[j++] = rows ? rows[i] : first + i;
  k->n += j;
  return QV_OK;
}

typedef struct filter_pred {
  qv_bound_expr *expr; /* or */
  const qv_filter_fn *fn;
} filter_pred;

static qv_status pred_eval(filter_pred *p, const qv_array *batch, int64_t first, uint8_t *bits,
                           int64_t *count, qv_error *err) {
  if (p->expr != NULL) return qv_bound_expr_select(p->expr, batch, bits, count, err);
  memset(bits, 0, (size_t)((batch->length + 7) / 8));
  qv_status st = p->fn->call(p->fn->ctx, batch, first, bits, err);
  if (st != QV_OK) return qv_error_prefix(err, st, "filter %s@%s: ", p->fn->name, p->fn->version);
  *count = qv_bitmap_count(bits, 0, batch->length);
  return QV_OK;
}

static void progress(const qv_dataset_options *opts, const char *what, int64_t done,
                     int64_t total) {
  if (opts && opts->progress) opts->progress(opts->progress_ctx, what, done, total);
}

static qv_status filter_run(qv_dataset *ds, filter_pred *p, int64_t batch_size, const char *fp,
                            const qv_dataset_options *opts, qv_dataset **out, qv_error *err) {
  int64_t n = qv_dataset_num_rows(ds);
  char *path = NULL;
  qv_status st = indices_cache(ds, opts, fp, -1, &path, out, err);
  if (st != QV_OK || *out != NULL) {
    free(path);
    return st;
  }
  kept k = {NULL, 0};
  st = qv_buffer_alloc(8 * 1024, &k.buf, err);
  uint8_t *bits = NULL;
  int64_t *rows = NULL;
  int64_t cap = 0;
  if (st == QV_OK && ds->indices == NULL && p->expr != NULL) {
    /* Unmapped, expression: evaluate data batch by data batch (zero copy). */
    qv_table *t = ds->data;
    for (int64_t b = 0; st == QV_OK && b < qv_table_num_batches(t); b++) {
      qv_array *batch = NULL;
      st = qv_table_batch(t, b, &batch, err);
      if (st != QV_OK) break;
      if (batch->length > cap) {
        free(bits);
        cap = batch->length;
        if ((bits = malloc((size_t)((cap + 7) / 8))) == NULL) st = oom(err);
      }
      int64_t count = 0, first = qv_table_batch_offset(t, b);
      if (st == QV_OK) st = pred_eval(p, batch, first, bits, &count, err);
      if (st == QV_OK) st = kept_push_bits(&k, bits, batch->length, count, NULL, first, err);
      qv_array_unref(batch);
      progress(opts, "filter", qv_table_batch_offset(t, b + 1), n);
    }
  } else if (st == QV_OK) {
    qv_dataset_iter *it = NULL;
    st = qv_dataset_iter_new(ds, batch_size, false, &it, err);
    cap = batch_size < n ? batch_size : n;
    if (st == QV_OK && ((bits = malloc((size_t)((cap + 7) / 8 + 1))) == NULL ||
                        (rows = malloc(sizeof(int64_t) * (size_t)(cap + 1))) == NULL))
      st = oom(err);
    while (st == QV_OK) {
      qv_array *batch = NULL;
      int64_t first = 0, count = 0;
      st = qv_dataset_iter_next(it, &batch, &first, err);
      if (st != QV_OK || batch == NULL) break;
      st = pred_eval(p, batch, first, bits, &count, err);
      if (st == QV_OK && ds->indices != NULL)
        st = qv_dataset_data_rows(ds, first, batch->length, rows, err);
      if (st == QV_OK)
        st = kept_push_bits(&k, bits, batch->length, count, ds->indices ? rows : NULL, first, err);
      progress(opts, "filter", first + batch->length, n);
      qv_array_unref(batch);
    }
    qv_dataset_iter_free(it);
  }
  free(bits);
  free(rows);
  qv_array *values = NULL;
  qv_table *idx = NULL;
  if (st == QV_OK) st = qv_ds_indices_array(k.buf, k.n, &values, err);
  if (st == QV_OK) st = qv_ds_indices_build(values, path, fp, idx_wbs(opts), &idx, err);
  if (st == QV_OK) st = qv_ds_with_indices(ds, idx, fp, out, err);
  qv_table_unref(idx);
  qv_array_unref(values);
  qv_buffer_unref(k.buf);
  free(path);
  return st;
}

qv_status qv_dataset_filter(qv_dataset *ds, const char *where, const qv_dataset_options *opts,
                            qv_dataset **out, qv_error *err) {
  if (where == NULL) return qv_error_set(err, QV_EARG, "filter: no expression");
  filter_pred p = {NULL, NULL};
  QV_RETURN_NOT_OK(qv_predicate_compile(where, qv_table_schema(ds->data), &p.expr, err));
  if (qv_dataset_num_rows(ds) == 0) {
    qv_bound_expr_free(p.expr);
    *out = qv_dataset_ref(ds);
    return QV_OK;
  }
  /* The canonical rendering names the predicate in the fingerprint. */
  qv_expr *e = NULL;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_status st = qv_expr_parse(where, -1, &e, err);
  if (st == QV_OK) st = qv_expr_to_string(e, &sb, err);
  qv_expr_free(e);
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    qv_fingerprint_arg_strn(a, "where", qv_strbuf_cstr(&sb), (size_t)sb.len, err);
    st = qv_ds_fingerprint(ds, opts, "quiver.filter", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  qv_strbuf_reset(&sb);
  if (st == QV_OK) st = filter_run(ds, &p, QV_DATASET_READAHEAD_ROWS, fp, opts, out, err);
  qv_bound_expr_free(p.expr);
  return st;
}

qv_status qv_dataset_filter_fn(qv_dataset *ds, const qv_filter_fn *fn, int64_t batch_size,
                               const qv_dataset_options *opts, qv_dataset **out, qv_error *err) {
  if (fn == NULL || fn->call == NULL || fn->name == NULL || fn->version == NULL)
    return qv_error_set(err, QV_EARG, "filter: the function needs a name, a version and a call");
  if (batch_size < 0) return qv_error_set(err, QV_EARG, "filter: negative batch size");
  if (qv_dataset_num_rows(ds) == 0) {
    *out = qv_dataset_ref(ds);
    return QV_OK;
  }
  char fp[QV_FINGERPRINT_SIZE], digest[QV_FINGERPRINT_SIZE], id[512];
  if ((size_t)snprintf(id, sizeof id, "%s@%s", fn->name, fn->version) >= sizeof id)
    return qv_error_set(err, QV_EARG, "filter: function name and version are too long");
  if (fn->params != NULL) QV_RETURN_NOT_OK(qv_ds_args_digest(fn->params, digest, err));
  FP_ARGS_BEGIN(a);
  qv_fingerprint_arg_str(a, "function", id, err);
  if (fn->params != NULL) qv_fingerprint_arg_str(a, "params", digest, err);
  if (batch_size != 0 && batch_size != QV_DATASET_MAP_BATCH_SIZE)
    qv_fingerprint_arg_int(a, "batch_size", batch_size, err);
  FP_ARGS_END(a, ds, opts, "quiver.filter", fp);
  filter_pred p = {NULL, fn};
  return filter_run(ds, &p, batch_size ? batch_size : QV_DATASET_MAP_BATCH_SIZE, fp, opts, out,
                    err);
}

/* ------------------------------------------------------------------------ */
/* flatten_indices                                                           */

/* A cached data file may be reused when its columns are the dataset's. */
static qv_status check_same_columns(const char *path, const qv_schema *want, const qv_schema *got,
                                    qv_error *err) {
  bool same = qv_schema_num_fields(want) == qv_schema_num_fields(got);
  for (int32_t c = 0; same && c < qv_schema_num_fields(want); c++)
    same = strcmp(qv_schema_field(want, c)->name, qv_schema_field(got, c)->name) == 0 &&
           qv_type_equals(qv_schema_field(want, c)->type, qv_schema_field(got, c)->type, false);
  if (!same)
    return qv_error_set(err, QV_EINVAL,
                        "%s: cache file columns differ from the dataset's (a stale file?)", path);
  return QV_OK;
}

qv_status qv_ds_from_written(const qv_dataset *like, qv_table *data, const char *fp,
                             qv_hf_feature *features, qv_dataset **out, qv_error *err) {
  return qv_ds_derive(like, data, NULL, fp, features, out, err);
}

qv_status qv_ds_flatten(qv_dataset *ds, const qv_dataset_options *opts, qv_dataset **out,
                        qv_error *err) {
  char fp[QV_FINGERPRINT_SIZE];
  QV_RETURN_NOT_OK(qv_ds_fingerprint(ds, opts, "quiver.flatten_indices", NULL, fp, err));
  if (qv_dataset_num_rows(ds) == 0) {
    qv_table *t = NULL;
    QV_RETURN_NOT_OK(qv_table_slice(ds->data, 0, 0, &t, err));
    qv_status st = qv_ds_from_written(ds, t, fp, NULL, out, err);
    qv_table_unref(t);
    return st;
  }
  char *path = NULL;
  QV_RETURN_NOT_OK(qv_ds_cache_path(ds, opts, fp, NULL, &path, err));
  qv_table *t = NULL;
  qv_status st = QV_OK;
  if (path != NULL && !ignore_cache(opts) && qv_ds_cache_reusable(path)) {
    st = qv_table_open_path(path, NULL, &t, err);
    if (st == QV_OK)
      st = check_same_columns(path, qv_table_schema(ds->data), qv_table_schema(t), err);
  } else {
    qv_schema *schema = NULL;
    st = qv_ds_file_schema(qv_table_schema(ds->data), ds->features, fp, &schema, err);
    if (st == QV_OK)
      st = qv_ds_write_rows(ds, path, schema, wbs(opts), opts ? opts->progress : NULL,
                            opts ? opts->progress_ctx : NULL, "flatten", &t, err);
    qv_schema_unref(schema);
  }
  if (st == QV_OK) st = qv_ds_from_written(ds, t, fp, NULL, out, err);
  qv_table_unref(t);
  free(path);
  return st;
}

qv_status qv_dataset_flatten_indices(qv_dataset *ds, const qv_dataset_options *opts,
                                     qv_dataset **out, qv_error *err) {
  return qv_ds_flatten(ds, opts, out, err);
}

/* ------------------------------------------------------------------------ */
/* concatenate                                                               */

static bool same_format(const qv_dataset *a, const qv_dataset *b) {
  if ((a->format_type == NULL) != (b->format_type == NULL)) return false;
  if (a->format_type && strcmp(a->format_type, b->format_type) != 0) return false;
  if (strcmp(a->format_kwargs, b->format_kwargs) != 0) return false;
  if (a->has_format_columns != b->has_format_columns ||
      a->n_format_columns != b->n_format_columns || a->output_all_columns != b->output_all_columns)
    return false;
  for (int32_t i = 0; i < a->n_format_columns; i++)
    if (strcmp(a->format_columns[i], b->format_columns[i]) != 0) return false;
  return true;
}

static void reset_format(qv_dataset *ds) {
  free(ds->format_type);
  ds->format_type = NULL;
  char *kw = qv_ds_strdup("{}");
  if (kw != NULL) {
    free(ds->format_kwargs);
    ds->format_kwargs = kw;
  }
  for (int32_t i = 0; i < ds->n_format_columns; i++) free(ds->format_columns[i]);
  free(ds->format_columns);
  ds->format_columns = NULL;
  ds->n_format_columns = 0;
  ds->has_format_columns = false;
  ds->output_all_columns = false;
}

/* One in-memory mapping over datasets stacked vertically (axis 0): each
 * dataset's rows as data rows, shifted by the data rows before it. */
static qv_status stacked_indices(qv_dataset *const *d, int64_t n, qv_table **out, qv_error *err) {
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) total += qv_dataset_num_rows(d[i]);
  qv_buffer *buf = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(total * 8, &buf, err));
  int64_t *v = (int64_t *)buf->data, pos = 0, shift = 0;
  qv_status st = QV_OK;
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    int64_t m = qv_dataset_num_rows(d[i]);
    st = qv_dataset_data_rows(d[i], 0, m, v + pos, err);
    for (int64_t j = 0; j < m; j++) v[pos + j] += shift;
    pos += m;
    shift += qv_table_num_rows(d[i]->data);
  }
  qv_array *values = NULL;
  if (st == QV_OK) st = qv_ds_indices_array(buf, total, &values, err);
  if (st == QV_OK) st = qv_ds_indices_build(values, NULL, "concatenated", 0, out, err);
  qv_array_unref(values);
  qv_buffer_unref(buf);
  return st;
}

qv_status qv_dataset_concatenate(qv_dataset *const *datasets, int64_t n, int axis,
                                 const qv_dataset_options *opts, qv_dataset **out, qv_error *err) {
  if (n < 1 || datasets == NULL) return qv_error_set(err, QV_EARG, "concatenate: no datasets");
  if (axis != 0 && axis != 1)
    return qv_error_set(err, QV_EARG, "concatenate: axis must be 0 or 1, found %d", axis);
  qv_dataset **d = calloc((size_t)n, sizeof *d);
  qv_table **tables = calloc((size_t)n, sizeof *tables);
  if (d == NULL || tables == NULL) {
    free(d);
    free(tables);
    return oom(err);
  }
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    if (qv_dataset_num_rows(datasets[i]) > 0) d[m++] = qv_dataset_ref(datasets[i]);
  qv_status st = QV_OK;
  if (m == 0) {
    *out = qv_dataset_ref(datasets[0]);
    goto done;
  }
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    qv_fingerprint_arg_begin_list(a, "fingerprints", err);
    for (int64_t i = 0; i < m; i++) qv_fingerprint_arg_str(a, NULL, d[i]->fingerprint, err);
    qv_fingerprint_arg_end(a, err);
    qv_fingerprint_arg_int(a, "axis", axis, err);
    st = qv_ds_fingerprint(d[0], opts, "quiver.concatenate", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  if (st != QV_OK) goto done;
  qv_table *indices = NULL;
  qv_hf_feature *features = NULL;
  bool any_mapped = false;
  for (int64_t i = 0; i < m; i++) any_mapped |= d[i]->indices != NULL;
  if (axis == 0) {
    /* Same columns (matched by name, any order) with equal features. */
    const qv_hf_feature *f0 = d[0]->features;
    for (int64_t i = 1; i < m && st == QV_OK; i++) {
      const qv_hf_feature *fi = d[i]->features;
      if (fi->n_children != f0->n_children)
        st =
            qv_error_set(err, QV_EARG, "concatenate: dataset %lld has %d columns, dataset 0 has %d",
                         (long long)i, fi->n_children, f0->n_children);
      for (int32_t c = 0; c < f0->n_children && st == QV_OK; c++) {
        const qv_hf_feature *g = qv_hf_dict_child(fi, c, f0->keys[c]);
        if (g == NULL)
          st = qv_error_set(err, QV_EARG, "concatenate: dataset %lld has no column '%s'",
                            (long long)i, f0->keys[c]);
        else if (!qv_hf_feature_equals(f0->children[c], g))
          st = qv_error_set(err, QV_EARG,
                            "concatenate: column '%s' of dataset %lld has another feature "
                            "than in dataset 0",
                            f0->keys[c], (long long)i);
      }
    }
    if (st == QV_OK && any_mapped) st = stacked_indices(d, m, &indices, err);
    if (st == QV_OK && (features = qv_hf_feature_copy(d[0]->features)) == NULL) st = oom(err);
  } else {
    for (int64_t i = 1; i < m && st == QV_OK; i++)
      if (qv_dataset_num_rows(d[i]) != qv_dataset_num_rows(d[0]))
        st = qv_error_set(err, QV_EARG,
                          "concatenate: number of rows must match for all datasets (dataset "
                          "%lld has %lld, dataset 0 %lld)",
                          (long long)i, (long long)qv_dataset_num_rows(d[i]),
                          (long long)qv_dataset_num_rows(d[0]));
    for (int64_t i = 0; i < m && st == QV_OK; i++)
      for (int32_t c = 0; c < d[i]->features->n_children && st == QV_OK; c++)
        for (int64_t j = 0; j <= i && st == QV_OK; j++)
          for (int32_t k = 0; k < (j < i ? d[j]->features->n_children : c); k++)
            if (strcmp(d[i]->features->keys[c], d[j]->features->keys[k]) == 0) {
              st = qv_error_set(err, QV_EARG, "concatenate: duplicate column '%s'",
                                d[i]->features->keys[c]);
              break;
            }
    if (st == QV_OK && m > 1 && any_mapped) {
      for (int64_t i = 0; i < m && st == QV_OK; i++) {
        if (d[i]->indices == NULL) continue;
        qv_dataset *flat = NULL;
        st = qv_ds_flatten(d[i], opts && !opts->new_fingerprint ? opts : NULL, &flat, err);
        if (st == QV_OK) {
          qv_dataset_unref(d[i]);
          d[i] = flat;
        }
      }
    }
    if (st == QV_OK && m == 1 && d[0]->indices) indices = qv_table_ref(d[0]->indices);
    if (st == QV_OK && (features = qv_hf_feature_copy(d[0]->features)) == NULL) st = oom(err);
    for (int64_t i = 1; i < m && st == QV_OK; i++)
      for (int32_t c = 0; c < d[i]->features->n_children && st == QV_OK; c++) {
        qv_hf_feature *f = qv_hf_feature_copy(d[i]->features->children[c]);
        st = f ? qv_ds_features_append(features, d[i]->features->keys[c], f, err) : oom(err);
      }
  }
  qv_table *data = NULL;
  for (int64_t i = 0; i < m; i++) tables[i] = d[i]->data;
  if (st == QV_OK) st = qv_table_concat(tables, m, axis, &data, err);
  if (st == QV_OK) {
    st = qv_ds_new(data, indices, fp, features, d[0], out, err);
    features = NULL;
    if (st == QV_OK)
      for (int64_t i = 1; i < m; i++)
        if (!same_format(d[0], d[i])) reset_format(*out);
  }
  qv_hf_feature_free(features);
  qv_table_unref(data);
  qv_table_unref(indices);
done:
  for (int64_t i = 0; i < m; i++) qv_dataset_unref(d[i]);
  free(d);
  free(tables);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Column transforms                                                         */

static qv_status find_columns(const qv_dataset *ds, const char *what, const char *const *names,
                              int32_t n, int32_t *idx, qv_error *err) {
  for (int32_t i = 0; i < n; i++) {
    idx[i] = names[i] ? qv_dataset_column_index(ds, names[i]) : -1;
    if (idx[i] < 0)
      return qv_error_set(err, QV_EARG, "%s: column '%s' not in the dataset", what,
                          names[i] ? names[i] : "(null)");
    for (int32_t j = 0; j < i; j++)
      if (idx[j] == idx[i])
        return qv_error_set(err, QV_EARG, "%s: column '%s' given twice", what, names[i]);
  }
  return QV_OK;
}

static qv_status names_arg(qv_fingerprint_args *a, const char *key, const char *const *names,
                           int32_t n, qv_error *err) {
  qv_fingerprint_arg_begin_list(a, key, err);
  for (int32_t i = 0; i < n; i++) qv_fingerprint_arg_str(a, NULL, names[i], err);
  return qv_fingerprint_arg_end(a, err);
}

/* Dataset with data `t` (reference kept by the caller) and features
 * picked from ds by `idx` (names: new names or NULL). */
static qv_status with_columns(qv_dataset *ds, qv_table *t, const int32_t *idx, int32_t n,
                              const char *const *names, const char *fp, qv_dataset **out,
                              qv_error *err) {
  qv_hf_feature *f = qv_ds_features_pick(ds->features, idx, n, names);
  if (f == NULL) return oom(err);
  return qv_ds_derive(ds, t, ds->indices, fp, f, out, err);
}

qv_status qv_dataset_rename_columns(qv_dataset *ds, const char *const *from, const char *const *to,
                                    int32_t n, qv_dataset **out, qv_error *err) {
  int32_t nc = qv_dataset_num_columns(ds);
  int32_t *idx = calloc((size_t)(n > 0 ? n : 1), sizeof *idx);
  int32_t *all = calloc((size_t)(nc > 0 ? nc : 1), sizeof *all);
  const char **names = calloc((size_t)(nc > 0 ? nc : 1), sizeof *names);
  if (idx == NULL || all == NULL || names == NULL) {
    free(idx);
    free(all);
    free(names);
    return oom(err);
  }
  qv_status st = find_columns(ds, "rename_columns", from, n, idx, err);
  for (int32_t c = 0; c < nc; c++) {
    all[c] = c;
    names[c] = ds->features->keys[c];
  }
  for (int32_t i = 0; st == QV_OK && i < n; i++) {
    if (to[i] == NULL || to[i][0] == '\0')
      st = qv_error_set(err, QV_EARG, "rename_columns: empty new name for '%s'", from[i]);
    else names[idx[i]] = to[i];
  }
  for (int32_t c = 0; st == QV_OK && c < nc; c++)
    for (int32_t j = 0; j < c && st == QV_OK; j++)
      if (strcmp(names[c], names[j]) == 0)
        st = qv_error_set(err, QV_EARG, "rename_columns: column '%s' would appear twice", names[c]);
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    qv_fingerprint_arg_begin_dict(a, "column_mapping", err);
    for (int32_t i = 0; i < n; i++) qv_fingerprint_arg_str(a, from[i], to[i], err);
    qv_fingerprint_arg_end(a, err);
    st = qv_ds_fingerprint(ds, NULL, "quiver.rename_columns", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  qv_table *t = NULL;
  if (st == QV_OK) st = qv_table_rename(ds->data, names, nc, &t, err);
  if (st == QV_OK) st = with_columns(ds, t, all, nc, names, fp, out, err);
  if (st == QV_OK) {
    /* Format columns follow the rename. */
    for (int32_t i = 0; i < (*out)->n_format_columns; i++)
      for (int32_t j = 0; j < n; j++)
        if (strcmp((*out)->format_columns[i], from[j]) == 0) {
          char *nn = qv_ds_strdup(to[j]);
          if (nn) {
            free((*out)->format_columns[i]);
            (*out)->format_columns[i] = nn;
          }
          break;
        }
  }
  qv_table_unref(t);
  free(idx);
  free(all);
  free(names);
  return st;
}

qv_status qv_dataset_remove_columns(qv_dataset *ds, const char *const *names, int32_t n,
                                    qv_dataset **out, qv_error *err) {
  int32_t nc = qv_dataset_num_columns(ds);
  int32_t *idx = calloc((size_t)(n > 0 ? n : 1), sizeof *idx);
  int32_t *keep = calloc((size_t)(nc > 0 ? nc : 1), sizeof *keep);
  if (idx == NULL || keep == NULL) {
    free(idx);
    free(keep);
    return oom(err);
  }
  qv_status st = find_columns(ds, "remove_columns", names, n, idx, err);
  int32_t nk = 0;
  for (int32_t c = 0; c < nc; c++) {
    bool drop = false;
    for (int32_t i = 0; i < n && !drop; i++) drop = idx[i] == c;
    if (!drop) keep[nk++] = c;
  }
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    names_arg(a, "column_names", names, n, err);
    st = qv_ds_fingerprint(ds, NULL, "quiver.remove_columns", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  qv_table *t = NULL;
  if (st == QV_OK) st = qv_table_select(ds->data, keep, nk, &t, err);
  if (st == QV_OK) st = with_columns(ds, t, keep, nk, NULL, fp, out, err);
  qv_table_unref(t);
  free(idx);
  free(keep);
  return st;
}

qv_status qv_dataset_select_columns(qv_dataset *ds, const char *const *names, int32_t n,
                                    qv_dataset **out, qv_error *err) {
  int32_t *idx = calloc((size_t)(n > 0 ? n : 1), sizeof *idx);
  if (idx == NULL) return oom(err);
  qv_status st = find_columns(ds, "select_columns", names, n, idx, err);
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    names_arg(a, "column_names", names, n, err);
    st = qv_ds_fingerprint(ds, NULL, "quiver.select_columns", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  qv_table *t = NULL;
  if (st == QV_OK) st = qv_table_select(ds->data, idx, n, &t, err);
  if (st == QV_OK) st = with_columns(ds, t, idx, n, NULL, fp, out, err);
  qv_table_unref(t);
  free(idx);
  return st;
}

static qv_status feature_json(const qv_hf_feature *f, qv_strbuf *sb, qv_error *err) {
  return qv_hf_feature_emit(f, QV_HF_JSON_COMPACT, sb, err);
}

/* Cast the data to `features` (taken over; keys = the dataset's columns). */
static qv_status cast_to(qv_dataset *ds, qv_hf_feature *features, const char *fp, qv_dataset **out,
                         qv_error *err) {
  int32_t nc = qv_dataset_num_columns(ds);
  int32_t *idx = calloc((size_t)(nc > 0 ? nc : 1), sizeof *idx);
  qv_status st = idx ? QV_OK : oom(err);
  if (st == QV_OK && features->n_children != nc)
    st = qv_error_set(err, QV_EARG,
                      "cast: the features have %d columns, the dataset %d (the names must be the "
                      "same)",
                      features->n_children, nc);
  if (st == QV_OK) st = find_columns(ds, "cast", (const char *const *)features->keys, nc, idx, err);
  qv_table *sel = NULL, *t = NULL;
  qv_schema *target = NULL;
  if (st == QV_OK) st = qv_table_select(ds->data, idx, nc, &sel, err);
  if (st == QV_OK) st = qv_hf_features_arrow_schema(features, &target, err);
  if (st == QV_OK) st = qv_table_cast(sel, target, &t, err);
  if (st == QV_OK) {
    st = qv_ds_derive(ds, t, ds->indices, fp, features, out, err);
    features = NULL;
  }
  qv_hf_feature_free(features);
  qv_schema_unref(target);
  qv_table_unref(sel);
  qv_table_unref(t);
  free(idx);
  return st;
}

qv_status qv_dataset_cast(qv_dataset *ds, const qv_hf_feature *features, qv_dataset **out,
                          qv_error *err) {
  if (features == NULL || features->kind != QV_HF_DICT)
    return qv_error_set(err, QV_EARG, "cast: features must be a dict of columns");
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_status st = feature_json(features, &sb, err);
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    qv_fingerprint_arg_strn(a, "features", qv_strbuf_cstr(&sb), (size_t)sb.len, err);
    st = qv_ds_fingerprint(ds, NULL, "quiver.cast", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  qv_strbuf_reset(&sb);
  if (st != QV_OK) return st;
  qv_hf_feature *copy = qv_hf_feature_copy(features);
  if (copy == NULL) return oom(err);
  return cast_to(ds, copy, fp, out, err);
}

qv_status qv_dataset_cast_column(qv_dataset *ds, const char *column, const qv_hf_feature *feature,
                                 qv_dataset **out, qv_error *err) {
  int32_t c = column ? qv_dataset_column_index(ds, column) : -1;
  if (c < 0)
    return qv_error_set(err, QV_EARG, "cast_column: column '%s' not in the dataset",
                        column ? column : "(null)");
  if (feature == NULL) return qv_error_set(err, QV_EARG, "cast_column: no feature");
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_status st = feature_json(feature, &sb, err);
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    qv_fingerprint_arg_str(a, "column", column, err);
    qv_fingerprint_arg_strn(a, "feature", qv_strbuf_cstr(&sb), (size_t)sb.len, err);
    st = qv_ds_fingerprint(ds, NULL, "quiver.cast_column", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  qv_strbuf_reset(&sb);
  if (st != QV_OK) return st;
  qv_hf_feature *f = qv_hf_feature_copy(ds->features);
  qv_hf_feature *nf = qv_hf_feature_copy(feature);
  if (f == NULL || nf == NULL) {
    qv_hf_feature_free(f);
    qv_hf_feature_free(nf);
    return oom(err);
  }
  qv_hf_feature_free(f->children[c]);
  f->children[c] = nf;
  return cast_to(ds, f, fp, out, err);
}

qv_status qv_dataset_add_column(qv_dataset *ds, const char *name, qv_array *const *chunks,
                                int64_t n_chunks, const qv_hf_feature *feature,
                                const qv_dataset_options *opts, qv_dataset **out, qv_error *err) {
  if (name == NULL || name[0] == '\0') return qv_error_set(err, QV_EARG, "add_column: no name");
  if (qv_dataset_column_index(ds, name) >= 0)
    return qv_error_set(err, QV_EARG, "add_column: column '%s' already exists", name);
  if (n_chunks < 1 || chunks == NULL) return qv_error_set(err, QV_EARG, "add_column: no values");
  int64_t total = 0;
  for (int64_t i = 0; i < n_chunks; i++) total += chunks[i]->length;
  if (total != qv_dataset_num_rows(ds))
    return qv_error_set(err, QV_EARG, "add_column: %lld values for a dataset of %lld rows",
                        (long long)total, (long long)qv_dataset_num_rows(ds));
  /* The values' digest: the recipe of a one-column in-memory table (IPC
   * stream bytes of the values). */
  qv_type *st_type = qv_type_new(QV_STRUCT);
  if (st_type == NULL) return oom(err);
  qv_status st = qv_type_add_child(st_type, name, true, qv_type_ref(chunks[0]->type), NULL, err);
  qv_schema *col_schema = st == QV_OK ? qv_schema_new(st_type) : NULL;
  if (st != QV_OK) qv_type_unref(st_type);
  if (st == QV_OK && col_schema == NULL) st = oom(err);
  qv_array **batches = calloc((size_t)n_chunks, sizeof *batches);
  if (st == QV_OK && batches == NULL) st = oom(err);
  for (int64_t i = 0; st == QV_OK && i < n_chunks; i++) {
    qv_array *ch = qv_array_ref(chunks[i]);
    st = qv_ds_make_struct(col_schema->type, chunks[i]->length, &ch, 1, &batches[i], err);
  }
  qv_table *col = NULL;
  if (st == QV_OK) st = qv_table_from_batches(col_schema, batches, n_chunks, &col, err);
  for (int64_t i = 0; batches && i < n_chunks; i++) qv_array_unref(batches[i]);
  free(batches);
  uint8_t *recipe = NULL;
  int64_t recipe_len = 0;
  if (st == QV_OK) st = qv_table_recipe(col, &recipe, &recipe_len, err);
  qv_table_unref(col);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  if (st == QV_OK && feature != NULL) st = feature_json(feature, &sb, err);
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    qv_fingerprint_arg_str(a, "name", name, err);
    qv_fingerprint_arg_bytes(a, "column", recipe, (size_t)recipe_len, err);
    if (feature != NULL)
      qv_fingerprint_arg_strn(a, "feature", qv_strbuf_cstr(&sb), (size_t)sb.len, err);
    st = qv_ds_fingerprint(ds, opts, "quiver.add_column", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  qv_strbuf_reset(&sb);
  free(recipe);
  qv_dataset *base = NULL;
  if (st == QV_OK) {
    if (ds->indices != NULL) {
      qv_dataset_options fo;
      memset(&fo, 0, sizeof fo);
      if (opts) fo = *opts;
      fo.new_fingerprint = NULL;
      fo.cache_file_name = NULL;
      st = qv_ds_flatten(ds, &fo, &base, err);
    } else {
      base = qv_dataset_ref(ds);
    }
  }
  qv_hf_feature *f = NULL, *nf = NULL;
  if (st == QV_OK) {
    const qv_field *field = qv_schema_field(col_schema, 0);
    if (feature != NULL) {
      nf = qv_hf_feature_copy(feature);
      if (nf == NULL) st = oom(err);
    } else {
      st = qv_hf_feature_from_arrow(field, &nf, err);
    }
    if (st == QV_OK && (f = qv_hf_feature_copy(base->features)) == NULL) st = oom(err);
    if (st == QV_OK) {
      st = qv_ds_features_append(f, name, nf, err);
      nf = NULL;
    }
  }
  qv_table *t = NULL;
  if (st == QV_OK)
    st = qv_table_append_column(base->data, qv_schema_field(col_schema, 0), chunks, n_chunks, &t,
                                err);
  if (st == QV_OK) {
    st = qv_ds_derive(base, t, NULL, fp, f, out, err);
    f = NULL;
  }
  qv_hf_feature_free(f);
  qv_hf_feature_free(nf);
  qv_table_unref(t);
  qv_dataset_unref(base);
  qv_schema_unref(col_schema);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Format                                                                    */

qv_status qv_dataset_with_format(qv_dataset *ds, const char *type, const char *kwargs_json,
                                 const char *const *columns, int32_t n_columns,
                                 bool output_all_columns, qv_dataset **out, qv_error *err) {
  const char *kw = kwargs_json ? kwargs_json : "{}";
  json_error_t je;
  json_t *obj = json_loads(kw, 0, &je);
  bool is_obj = json_is_object(obj);
  char *compact = is_obj ? json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(obj);
  if (!is_obj || compact == NULL) {
    free(compact);
    return qv_error_set(err, QV_EARG, "with_format: format kwargs must be a JSON object");
  }
  qv_status st = QV_OK;
  int32_t *idx = calloc((size_t)(n_columns > 0 ? n_columns : 1), sizeof *idx);
  if (idx == NULL) st = oom(err);
  if (st == QV_OK && columns != NULL)
    st = find_columns(ds, "with_format", columns, n_columns, idx, err);
  free(idx);
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    if (type) qv_fingerprint_arg_str(a, "type", type, err);
    if (columns) names_arg(a, "columns", columns, n_columns, err);
    if (output_all_columns) qv_fingerprint_arg_bool(a, "output_all_columns", true, err);
    if (strcmp(compact, "{}") != 0) qv_fingerprint_arg_str(a, "format_kwargs", compact, err);
    st = qv_ds_fingerprint(ds, NULL, "quiver.set_format", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  qv_dataset *r = NULL;
  if (st == QV_OK) st = qv_ds_derive(ds, ds->data, ds->indices, fp, NULL, &r, err);
  if (st == QV_OK) {
    reset_format(r);
    free(r->format_kwargs);
    r->format_kwargs = compact;
    compact = NULL;
    r->output_all_columns = output_all_columns;
    if (type && (r->format_type = qv_ds_strdup(type)) == NULL) st = oom(err);
    if (columns != NULL) {
      r->has_format_columns = true;
      r->format_columns = calloc((size_t)(n_columns > 0 ? n_columns : 1), sizeof(char *));
      if (r->format_columns == NULL) st = oom(err);
      for (int32_t i = 0; st == QV_OK && i < n_columns; i++) {
        if ((r->format_columns[i] = qv_ds_strdup(columns[i])) == NULL) st = oom(err);
        else r->n_format_columns = i + 1;
      }
    }
  }
  free(compact);
  if (st != QV_OK) {
    qv_dataset_unref(r);
    return st;
  }
  *out = r;
  return QV_OK;
}
