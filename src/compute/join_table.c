/*
 * join_table.c — compute layer: the output table of a hash join
 * (qv_table_join, quiver/compute.h). The row pairs come from join.c; each
 * output column is gathered from its side's record batches with
 * qv_array_take_chunked, absent partners reading one extra one-row chunk
 * of nulls; the key columns of right / full joins are gathered from both
 * sides' unified keys (SQL's USING: the right key where the left row is
 * absent).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/join_internal.h"
#include "core/parallel_internal.h"

/* Chunk and row of each side row in idx[0..n) (-1 -> chunk nb, row 0). */
static qv_status locate_rows(const qvj_side *s, const int64_t *idx, int64_t n, int64_t **chunk,
                             int64_t **row, bool *any_absent, qv_error *err) {
  *chunk = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  *row = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!*chunk || !*row) return qv_error_set(err, QV_ENOMEM, "join: out of memory");
  *any_absent = false;
  int64_t last = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t x = idx[i];
    if (x < 0) {
      (*chunk)[i] = s->nb;
      (*row)[i] = 0;
      *any_absent = true;
      continue;
    }
    int64_t b = last;
    if (!(x >= s->boff[b] && x < s->boff[b + 1])) { /* binary search */
      int64_t lo = 0, hi = s->nb - 1;
      while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (s->boff[mid] <= x) lo = mid;
        else hi = mid - 1;
      }
      b = lo;
    }
    last = b;
    (*chunk)[i] = b;
    (*row)[i] = x - s->boff[b];
  }
  return QV_OK;
}

/* Gather one column: chunks[0..nb) plus a null chunk when needed. */
static qv_status gather(qv_array *const *chunks, int64_t nb, const qv_type *type, bool null_chunk,
                        const int64_t *ci, const int64_t *ri, int64_t n, qv_array **out,
                        qv_error *err) {
  if (n == 0) return qv_array_nulls((qv_type *)type, 0, out, err);
  qv_array **list = malloc(sizeof(qv_array *) * (size_t)(nb + 1));
  if (!list) return qv_error_set(err, QV_ENOMEM, "join: out of memory");
  for (int64_t b = 0; b < nb; b++) list[b] = chunks[b];
  qv_status st = QV_OK;
  list[nb] = NULL;
  if (null_chunk) st = qv_array_nulls((qv_type *)type, 1, &list[nb], err);
  if (st == QV_OK) st = qv_array_take_chunked(list, nb + (null_chunk ? 1 : 0), ci, ri, n, out, err);
  qv_array_unref(list[nb]);
  free(list);
  return st;
}

/* One output column to gather (run on the pool's threads). */
typedef struct gather_job {
  qv_array **chunks; /* owned copy of the chunk list (nb entries) */
  int64_t nb;
  const qv_type *type;
  bool null_chunk;
  const int64_t *ci, *ri;
  int64_t n;
  qv_array *out;
  qv_status st;
  qv_error err;
} gather_job;

static void gather_task(void *ctx, int64_t i, int worker) {
  (void)worker;
  gather_job *j = &((gather_job *)ctx)[i];
  j->st = gather(j->chunks, j->nb, j->type, j->null_chunk, j->ci, j->ri, j->n, &j->out, &j->err);
}

static bool in_idx(const int32_t *idx, int32_t n, int32_t c) {
  for (int32_t j = 0; j < n; j++)
    if (idx[j] == c) return true;
  return false;
}

static int32_t key_of(const int32_t *idx, int32_t n, int32_t c) {
  for (int32_t j = 0; j < n; j++)
    if (idx[j] == c) return j;
  return -1;
}

/* Name with a suffix (malloc'ed). */
static char *suffixed(const char *name, const char *suffix) {
  size_t a = strlen(name), b = strlen(suffix);
  char *s = malloc(a + b + 1);
  if (s) {
    memcpy(s, name, a);
    memcpy(s + a, suffix, b + 1);
  }
  return s;
}

static qv_status build_output(qvj_side *l, qvj_side *r, const int32_t *lidx, const int32_t *ridx,
                              qv_type **types, const qv_join_options *o, const int64_t *pl,
                              const int64_t *pr, int64_t n, qv_table **out, qv_error *err) {
  int32_t nk = o->n_keys;
  const qv_schema *ls = qv_table_schema(l->t), *rs = qv_table_schema(r->t);
  int32_t lcols = ls->type->n_children, rcols = rs->type->n_children;
  bool coalesce = o->how == QV_JOIN_RIGHT || o->how == QV_JOIN_FULL;
  const char *lsuf = o->left_suffix ? o->left_suffix : "";
  const char *rsuf = o->right_suffix ? o->right_suffix : "_right";
  int64_t *lc = NULL, *lr = NULL, *rc = NULL, *rr = NULL, *cc = NULL, *crow = NULL;
  bool l_absent = false, r_absent = false;
  qvc_columns la, ra;
  memset(&la, 0, sizeof la);
  memset(&ra, 0, sizeof ra);
  int32_t ncols = lcols + rcols;
  int32_t *all = malloc(sizeof(int32_t) * (size_t)(ncols + 1));
  gather_job *jobs = calloc((size_t)(ncols + 1), sizeof *jobs);
  const qv_field **fields = calloc((size_t)(ncols + 1), sizeof *fields);
  char **names = calloc((size_t)(ncols + 1), sizeof *names);
  qv_type *st_type = qv_type_new(QV_STRUCT);
  qv_pool *pool = NULL;
  int32_t nj = 0;
  qv_status st = QV_OK;
  if (!all || !jobs || !fields || !names || !st_type) {
    st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    goto done;
  }
  for (int32_t c = 0; c < ncols; c++) all[c] = c < lcols ? c : c - lcols;
  if ((st = qvc_columns_load(&la, l->t, all, lcols, err)) != QV_OK ||
      (st = qvc_columns_load(&ra, r->t, all + lcols, rcols, err)) != QV_OK ||
      (st = locate_rows(l, pl, n, &lc, &lr, &l_absent, err)) != QV_OK ||
      (st = locate_rows(r, pr, n, &rc, &rr, &r_absent, err)) != QV_OK)
    goto done;
  if (coalesce) { /* the key's chunk: the left's, else the right's after them */
    cc = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    crow = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!cc || !crow) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      goto done;
    }
    for (int64_t i = 0; i < n; i++) {
      cc[i] = pl[i] >= 0 ? lc[i] : l->nb + rc[i];
      crow[i] = pl[i] >= 0 ? lr[i] : rr[i];
    }
  }
  /* The jobs: left columns, then the right's non-key columns. */
  for (int32_t c = 0; c < ncols; c++) {
    bool left = c < lcols;
    int32_t d = left ? c : c - lcols;
    if (!left && in_idx(ridx, nk, d)) continue;
    const qv_field *f = qv_schema_field(left ? ls : rs, d);
    bool clash = false;
    if (left) {
      for (int32_t e = 0; e < rcols && !clash; e++)
        clash = !in_idx(ridx, nk, e) && strcmp(qv_schema_field(rs, e)->name, f->name) == 0;
    } else {
      clash = qv_schema_find(ls, f->name) >= 0;
    }
    names[nj] = suffixed(f->name, clash ? (left ? lsuf : rsuf) : "");
    gather_job *j = &jobs[nj];
    fields[nj] = f;
    j->n = n;
    int32_t key = left ? key_of(lidx, nk, d) : -1;
    if (coalesce && key >= 0) {
      j->type = types[key];
      j->nb = l->nb + r->nb;
      j->chunks = malloc(sizeof(qv_array *) * (size_t)(j->nb + 1));
      if (j->chunks) {
        for (int64_t b = 0; b < l->nb; b++) j->chunks[b] = l->ukeys[(int64_t)key * l->nb + b];
        for (int64_t b = 0; b < r->nb; b++)
          j->chunks[l->nb + b] = r->ukeys[(int64_t)key * r->nb + b];
      }
      j->ci = cc;
      j->ri = crow;
    } else {
      const qvc_columns *cols = left ? &la : &ra;
      j->type = f->type;
      j->nb = left ? l->nb : r->nb;
      j->chunks = malloc(sizeof(qv_array *) * (size_t)(j->nb + 1));
      if (j->chunks)
        for (int64_t b = 0; b < j->nb; b++) j->chunks[b] = cols->columns[d].chunks[b];
      j->null_chunk = left ? l_absent : r_absent;
      j->ci = left ? lc : rc;
      j->ri = left ? lr : rr;
    }
    nj++;
    if (!j->chunks || !names[nj - 1]) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      goto done;
    }
  }
  /* Gather the columns on all cores, one column per task. */
  int threads = qv_cpu_count();
  if (threads > nj) threads = nj;
  if (threads > 1 && n >= 4096 && qv_pool_new(threads, &pool, NULL) == QV_OK) {
    qv_pool_run(pool, nj, gather_task, jobs);
    st = qv_pool_check(pool, err);
  } else {
    for (int32_t k = 0; k < nj; k++) gather_task(jobs, k, 0);
  }
  for (int32_t k = 0; k < nj && st == QV_OK; k++)
    if (jobs[k].st != QV_OK) {
      *err = jobs[k].err;
      st = jobs[k].st;
    }
  for (int32_t k = 0; k < nj && st == QV_OK; k++) {
    st = qv_type_add_child(st_type, names[k], true, qv_type_ref((qv_type *)jobs[k].type),
                           &fields[k]->metadata, err);
  }
  if (st != QV_OK) goto done;
  {
    qv_array *batch = qv_array_new(st_type, 1, nj);
    if (!batch) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      goto done;
    }
    batch->length = n;
    batch->null_count = 0;
    for (int32_t k = 0; k < nj; k++) {
      batch->children[k] = jobs[k].out;
      jobs[k].out = NULL;
    }
    qv_schema *schema = qv_schema_new(qv_type_ref(st_type));
    if (!schema) st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    else st = qv_table_from_batches(schema, &batch, 1, out, err);
    qv_schema_unref(schema);
    qv_array_unref(batch);
  }
done:
  qv_pool_free(pool);
  for (int32_t k = 0; k < nj; k++) {
    qv_array_unref(jobs[k].out);
    free(jobs[k].chunks);
    free(names[k]);
  }
  free(jobs);
  free(names);
  free(fields);
  qv_type_unref(st_type);
  qvc_columns_reset(&la);
  qvc_columns_reset(&ra);
  free(all);
  free(lc);
  free(lr);
  free(rc);
  free(rr);
  free(cc);
  free(crow);
  return st;
}

qv_status qv_table_join(qv_table *left, qv_table *right, const qv_join_options *opts,
                        qv_table **out, qv_error *err) {
  if (!out) return qv_error_set(err, QV_EARG, "join: out is NULL");
  *out = NULL;
  if (!left || !right) return qv_error_set(err, QV_EARG, "join: a table is NULL");
  if (!opts || opts->n_keys < 1 || !opts->left_on)
    return qv_error_set(err, QV_EARG, "join: at least one key column is needed");
  if ((unsigned)opts->how > QV_JOIN_ANTI || (unsigned)opts->build > QV_JOIN_BUILD_RIGHT)
    return qv_error_set(err, QV_EARG, "join: unknown join type or build side");
  int32_t nk = opts->n_keys;
  int32_t *idx = malloc(sizeof(int32_t) * 2 * (size_t)nk);
  qv_type **types = calloc((size_t)nk, sizeof *types);
  qvj_side l, r;
  memset(&l, 0, sizeof l);
  memset(&r, 0, sizeof r);
  int64_t *pl = NULL, *pr = NULL, n = 0;
  qv_status st = QV_OK;
  if (!idx || !types) st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
  else st = qvj_join(left, right, opts, &l, &r, idx, idx + nk, types, &pl, &pr, &n, err);
  if (st == QV_OK) {
    if (opts->how == QV_JOIN_SEMI || opts->how == QV_JOIN_ANTI)
      st = qv_table_take(left, pl, n, out, err);
    else st = build_output(&l, &r, idx, idx + nk, types, opts, pl, pr, n, out, err);
  }
  qvj_side_reset(&l);
  qvj_side_reset(&r);
  if (types)
    for (int32_t j = 0; j < nk; j++) qv_type_unref(types[j]);
  free(types);
  free(idx);
  free(pl);
  free(pr);
  return st;
}
