/*
 * dataset_map_exprs.c — datasets' batched map with a function made of
 * expressions (quiver/expr.h): each (NAME, EXPR) pair is evaluated over the
 * batch of input columns and gives column NAME. It is qv_dataset_map with a
 * built-in qv_map_fn, "quiver.map_set@1", whose params list the pairs with
 * the canonical rendering of each expression, so the CLI (`quiver map
 * --set`) and the Python binding (`Dataset.map(set=...)`) give the same
 * fingerprints and share one implementation. Dataset layer.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_internal.h"
#include "quiver/expr.h"

typedef struct set_fn {
  int32_t n;
  const char *const *names;
  qv_bound_expr **bound; /* [n], bound to the input schema */
} set_fn;

/* qv_map_fn.call: one column per expression, evaluated over the batch. */
static qv_status set_call(void *ctx, const qv_array *batch, int64_t first_row, int rank,
                          qv_array **out, qv_error *err) {
  (void)first_row;
  (void)rank;
  const set_fn *f = ctx;
  int32_t n = f->n;
  qv_array **cols = calloc((size_t)n, sizeof *cols);
  qv_type *type = qv_type_new(QV_STRUCT);
  qv_status st = cols && type ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory");
  for (int32_t i = 0; i < n && st == QV_OK; i++) {
    st = qv_bound_expr_eval(f->bound[i], batch, &cols[i], err);
    if (st != QV_OK) {
      st = qv_error_prefix(err, st, "set %s: ", f->names[i]);
      break;
    }
    st = qv_type_add_child(type, f->names[i], true, qv_type_ref(cols[i]->type), NULL, err);
    if (st != QV_OK) qv_type_unref(cols[i]->type);
  }
  if (st == QV_OK) {
    st = qv_ds_make_struct(type, batch->length, cols, n, out, err);
    memset(cols, 0, sizeof *cols * (size_t)n); /* taken over (or freed) */
  }
  for (int32_t i = 0; cols && i < n; i++) qv_array_unref(cols[i]);
  free(cols);
  qv_type_unref(type);
  return st;
}

/* The params of the fingerprint: "set": [[NAME, canonical EXPR], ...]. */
static qv_status set_params(const char *const *names, qv_expr *const *parsed, int32_t n,
                            qv_fingerprint_args **out, qv_error *err) {
  qv_fingerprint_args *p = NULL;
  QV_RETURN_NOT_OK(qv_fingerprint_args_new(&p, err));
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_status st = qv_fingerprint_arg_begin_list(p, "set", err);
  for (int32_t i = 0; i < n && st == QV_OK; i++) {
    qv_strbuf_clear(&sb);
    st = qv_expr_to_string(parsed[i], &sb, err);
    if (st != QV_OK) break;
    qv_fingerprint_arg_begin_list(p, NULL, err);
    qv_fingerprint_arg_str(p, NULL, names[i], err);
    qv_fingerprint_arg_strn(p, NULL, qv_strbuf_cstr(&sb), (size_t)sb.len, err);
    st = qv_fingerprint_arg_end(p, err);
  }
  if (st == QV_OK) st = qv_fingerprint_arg_end(p, err);
  qv_strbuf_reset(&sb);
  if (st != QV_OK) {
    qv_fingerprint_args_free(p);
    return st;
  }
  *out = p;
  return QV_OK;
}

qv_status qv_dataset_map_exprs(qv_dataset *ds, const char *const *names, const char *const *exprs,
                               int32_t n, const qv_map_options *map_opts,
                               const qv_dataset_options *opts, qv_dataset **out, qv_error *err) {
  if (ds == NULL || out == NULL) return qv_error_set(err, QV_EARG, "map: no dataset");
  if (n < 1 || names == NULL || exprs == NULL)
    return qv_error_set(err, QV_EARG, "map: no expression to set (at least one NAME=EXPR)");
  for (int32_t i = 0; i < n; i++) {
    if (names[i] == NULL || names[i][0] == '\0' || exprs[i] == NULL)
      return qv_error_set(err, QV_EARG, "map: set %d: empty column name or expression", (int)i);
    for (int32_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return qv_error_set(err, QV_EARG, "map: column '%s' is set twice", names[i]);
  }
  qv_map_options mo;
  memset(&mo, 0, sizeof mo);
  if (map_opts != NULL) mo = *map_opts;
  mo.batched = true;
  qv_expr **parsed = calloc((size_t)n, sizeof *parsed);
  set_fn f = {n, names, calloc((size_t)n, sizeof(qv_bound_expr *))};
  qv_status st = parsed && f.bound ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory");
  for (int32_t i = 0; i < n && st == QV_OK; i++) {
    st = qv_expr_parse(exprs[i], -1, &parsed[i], err);
    if (st == QV_OK) st = qv_expr_bind(parsed[i], qv_dataset_schema(ds), &f.bound[i], err);
    /* Syntax, unknown columns and type errors are the caller's to fix. */
    if (st == QV_EINVAL || st == QV_ETYPE) st = qv_error_prefix(err, QV_EARG, "set %s: ", names[i]);
    else if (st != QV_OK) st = qv_error_prefix(err, st, "set %s: ", names[i]);
  }
  qv_fingerprint_args *params = NULL;
  if (st == QV_OK) st = set_params(names, parsed, n, &params, err);
  if (st == QV_OK) {
    qv_map_fn fn = {"quiver.map_set", "1", set_call, &f, params};
    st = qv_dataset_map(ds, &fn, &mo, opts, out, err);
  }
  qv_fingerprint_args_free(params);
  for (int32_t i = 0; i < n; i++) {
    if (f.bound) qv_bound_expr_free(f.bound[i]);
    if (parsed) qv_expr_free(parsed[i]);
  }
  free(f.bound);
  free(parsed);
  return st;
}
