/*
 * dataset_join.c — dataset layer: hash join, distinct rows and value
 * counts of datasets (quiver/dataset.h), over the compute layer's table
 * operations (compute/join.c, distinct.c). A dataset's indices mapping is
 * honoured: joins read through it (qv_table_join_rows over the data rows
 * the mapping lists: only the keys are gathered before the join), distinct
 * takes the rows as mapped (qv_dataset_slice: zero copy without a mapping,
 * gathered with one); the result is an in-memory
 * dataset whose fingerprint is derived from the inputs' fingerprints and
 * the arguments (datasets' update_fingerprint).
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_internal.h"
#include "quiver/compute.h"
#include "quiver/fingerprint.h"

/* The dataset's rows as mapped, as a table. */
static qv_status rows_of(qv_dataset *ds, qv_table **out, qv_error *err) {
  return qv_dataset_slice(ds, 0, qv_dataset_num_rows(ds), out, err);
}

static void arg_names(qv_fingerprint_args *a, const char *key, const char *const *names, int32_t n,
                      qv_error *err) {
  (void)qv_fingerprint_arg_begin_list(a, key, err);
  for (int32_t i = 0; i < n; i++) (void)qv_fingerprint_arg_str(a, NULL, names[i], err);
  (void)qv_fingerprint_arg_end(a, err);
}

/* Wrap a result table in a dataset with the fingerprint of `transform`. */
static qv_status wrap(qv_dataset *ds, qv_table *t, const char *transform, qv_fingerprint_args *a,
                      qv_dataset **out, qv_error *err) {
  char fp[QV_FINGERPRINT_SIZE];
  qv_status st = qv_fingerprint_update(qv_dataset_fingerprint(ds), transform, a, fp, err);
  if (st == QV_OK) st = qv_dataset_from_table(t, fp, out, err);
  return st;
}

/* The data rows of a dataset with an indices mapping (NULL without one:
 * its data table's rows are its rows). */
static qv_status mapped_rows(qv_dataset *ds, int64_t **out, int64_t *n, qv_error *err) {
  *out = NULL;
  *n = qv_dataset_num_rows(ds);
  if (ds->indices == NULL) return QV_OK;
  *out = malloc(sizeof(int64_t) * (size_t)(*n ? *n : 1));
  if (!*out) return qv_error_set(err, QV_ENOMEM, "join: out of memory (%lld rows)", (long long)*n);
  return qv_dataset_data_rows(ds, 0, *n, *out, err);
}

qv_status qv_dataset_join(qv_dataset *left, qv_dataset *right, const qv_join_options *opts,
                          qv_dataset **out, qv_error *err) {
  if (!left || !right || !out || !opts) return qv_error_set(err, QV_EARG, "join: NULL argument");
  *out = NULL;
  qv_table *j = NULL;
  qv_fingerprint_args *a = NULL;
  int64_t *lrows = NULL, *rrows = NULL, nl = 0, nr = 0;
  /* Through the indices mappings: the join gathers the key columns, then
   * the output, through them; no mapped dataset is materialised first. */
  qv_status st = mapped_rows(left, &lrows, &nl, err);
  if (st == QV_OK) st = mapped_rows(right, &rrows, &nr, err);
  if (st == QV_OK)
    st = qv_table_join_rows(left->data, lrows, lrows ? nl : 0, right->data, rrows, rrows ? nr : 0,
                            opts, &j, err);
  free(lrows);
  free(rrows);
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    (void)qv_fingerprint_arg_str(a, "other", qv_dataset_fingerprint(right), err);
    (void)qv_fingerprint_arg_str(a, "how", qv_join_type_name(opts->how), err);
    arg_names(a, "left_on", opts->left_on, opts->n_keys, err);
    arg_names(a, "right_on", opts->right_on ? opts->right_on : opts->left_on, opts->n_keys, err);
    (void)qv_fingerprint_arg_str(a, "left_suffix", opts->left_suffix ? opts->left_suffix : "", err);
    (void)qv_fingerprint_arg_str(a, "right_suffix",
                                 opts->right_suffix ? opts->right_suffix : "_right", err);
    (void)qv_fingerprint_arg_int(a, "build", (int64_t)opts->build, err);
    st = wrap(left, j, "quiver.join", a, out, err);
  }
  qv_fingerprint_args_free(a);
  qv_table_unref(j);
  return st;
}

qv_status qv_dataset_distinct(qv_dataset *ds, const char *const *on, int32_t n_on, qv_dataset **out,
                              qv_error *err) {
  if (!ds || !out) return qv_error_set(err, QV_EARG, "distinct: NULL argument");
  *out = NULL;
  qv_table *t = NULL, *d = NULL;
  qv_fingerprint_args *a = NULL;
  qv_status st = rows_of(ds, &t, err);
  if (st == QV_OK) st = qv_table_distinct(t, on, n_on, &d, err);
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    arg_names(a, "on", on, n_on, err);
    st = wrap(ds, d, "quiver.distinct", a, out, err);
  }
  qv_fingerprint_args_free(a);
  qv_table_unref(t);
  qv_table_unref(d);
  return st;
}

qv_status qv_dataset_value_counts(qv_dataset *ds, const char *column, qv_dataset **out,
                                  qv_error *err) {
  if (!ds || !out) return qv_error_set(err, QV_EARG, "value_counts: NULL argument");
  *out = NULL;
  int32_t c = column ? qv_dataset_column_index(ds, column) : -1;
  if (c < 0)
    return qv_error_set(err, QV_EARG, "value_counts: column '%s' not in the dataset",
                        column ? column : "(null)");
  qv_table *t = NULL, *v = NULL;
  qv_fingerprint_args *a = NULL;
  qv_status st = qv_dataset_column(ds, column, &t, err);
  if (st == QV_OK) st = qv_table_value_counts(t, column, &v, err);
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    (void)qv_fingerprint_arg_str(a, "column", column, err);
    st = wrap(ds, v, "quiver.value_counts", a, out, err);
  }
  qv_fingerprint_args_free(a);
  qv_table_unref(t);
  qv_table_unref(v);
  return st;
}
