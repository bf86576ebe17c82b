/*
 * dataset_groupby.c — group-by with aggregate expressions over the rows as
 * a dataset shows them (qv_dataset_group_by, quiver/dataset.h). Without an
 * indices mapping the data table is grouped in place (mapped, zero copy up
 * to the decoding of its batches); with one, the columns the keys and
 * expressions can use are gathered through the mapping first
 * (qv_ds_mapped_columns) and grouped. The result is a new in-memory
 * dataset whose fingerprint is the source's updated with the call. Dataset layer, on the compute layer's qv_table_group_by_exprs.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_internal.h"
#include "quiver/compute.h"
#include "quiver/fingerprint.h"

static void arg_texts(qv_fingerprint_args *a, const char *key, const char *const *texts, int32_t n,
                      qv_error *err) {
  (void)qv_fingerprint_arg_begin_list(a, key, err);
  for (int32_t i = 0; i < n; i++) (void)qv_fingerprint_arg_str(a, NULL, texts[i], err);
  (void)qv_fingerprint_arg_end(a, err);
}

qv_status qv_dataset_group_by(qv_dataset *ds, const char *const *keys, int32_t n_keys,
                              const char *const *aggs, int32_t n_aggs,
                              const qv_group_by_options *opts, qv_dataset **out, qv_error *err) {
  if (!ds || !out) return qv_error_set(err, QV_EARG, "group-by: no dataset");
  qv_table *src = NULL;
  qv_status st = QV_OK;
  if (ds->indices == NULL) {
    src = qv_table_ref(ds->data);
  } else {
    /* Gather the columns a key or an expression can name: every column
     * whose name occurs in them (a superset of what is used). */
    const qv_schema *s = qv_table_schema(ds->data);
    int32_t nc = s->type->n_children, n = 0;
    int32_t *cols = malloc(sizeof(int32_t) * (size_t)(nc ? nc : 1));
    if (!cols) return qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
    for (int32_t c = 0; c < nc; c++) {
      const char *name = s->type->children[c].name;
      bool used = false;
      for (int32_t i = 0; i < n_keys && !used; i++) used = keys[i] && strcmp(keys[i], name) == 0;
      for (int32_t i = 0; i < n_aggs && !used; i++) used = aggs[i] && strstr(aggs[i], name);
      if (used) cols[n++] = c;
    }
    st = qv_ds_mapped_columns(ds, cols, n, &src, err);
    free(cols);
  }
  qv_table *res = NULL;
  if (st == QV_OK) st = qv_table_group_by_exprs(src, keys, n_keys, aggs, n_aggs, opts, &res, err);
  /* The result's fingerprint follows from the source's and the call (as
   * the other transforms'), never from hashing the result's bytes. */
  char fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = NULL;
  if (st == QV_OK) st = qv_fingerprint_args_new(&a, err);
  if (st == QV_OK) {
    arg_texts(a, "keys", keys, n_keys, err);
    arg_texts(a, "aggs", aggs, n_aggs, err);
    (void)qv_fingerprint_arg_bool(a, "sort", opts && opts->sort, err);
    st = qv_fingerprint_update(qv_dataset_fingerprint(ds), "quiver.group_by", a, fp, err);
  }
  qv_fingerprint_args_free(a);
  if (st == QV_OK) st = qv_dataset_from_table(res, fp, out, err);
  if (res) qv_table_unref(res);
  if (src) qv_table_unref(src);
  return st;
}
