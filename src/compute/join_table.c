/*
 * join_table.c — compute layer: the output table of a hash join
 * (qv_table_join, quiver/compute.h). The row pairs come from join.c; the
 * output is cut into ranges (one record batch each) gathered in parallel,
 * one range per task, every column of a range gathered from its side's
 * record batches (core/take_internal.h, the pairs correct by
 * construction), absent partners reading one extra one-row chunk of
 * nulls; the key columns of right / full joins are gathered from both
 * sides' unified keys (SQL's USING: the right key where the left row is
 * absent).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/join_internal.h"
#include "core/parallel_internal.h"
#include "core/take_internal.h"

/* The output is cut into ranges of rows, one record batch each, gathered
 * in parallel (one range per task): a range ends after RANGE_MAX rows, or
 * after RANGE_MIN rows where the sorted side (the probe side, whose rows
 * come in order) moves to its next record batch, so that most ranges read
 * one batch of it. The (chunk, row) pairs of a range are computed into
 * the worker's scratch, reused from range to range, never for the whole
 * output at once. */
#define RANGE_MAX ((int64_t)1 << 19)
#define RANGE_MIN ((int64_t)1 << 16)
int64_t qvj_random_min = (int64_t)1 << 18;

/* One output column: where its values come from. */
typedef struct col_src {
  qv_array **chunks; /* owned list: nb chunks, then the null chunk if any */
  int64_t nb;
  const qv_type *type;
  qv_array *null_chunk; /* one null of `type` (absent partners), or NULL */
  int side;             /* 0 left, 1 right, 2 key coalesced from both */
} col_src;

typedef struct range_ctx {
  const qvj_side *l, *r;
  const int64_t *pl, *pr;
  /* The sides the keys were joined over and the pairs in their rows: the
   * same as l, r, pl, pr unless the join is over row lists
   * (qv_table_join_rows); coalesced key columns are read from them. */
  const qvj_side *kl, *kr;
  const int64_t *kpl, *kpr;
  const int64_t *rstart; /* nr + 1 range starts */
  int64_t nr, rmax;
  const col_src *cols;
  int32_t nj;
  qv_type *st_type;
  int64_t **scratch;  /* per worker: 6 * rmax */
  qv_array **batches; /* nr */
  qv_status *st;      /* nr */
  qv_error *errs;     /* nr */
} range_ctx;

/* Batch of side row x, starting the search at *hint. */
static inline int64_t batch_of(const qvj_side *s, int64_t x, int64_t *hint) {
  int64_t b = *hint;
  if (x >= s->boff[b] && x < s->boff[b + 1]) return b;
  if (b + 1 < s->nb && x >= s->boff[b + 1] && x < s->boff[b + 2]) return *hint = b + 1;
  int64_t lo = 0, hi = s->nb - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (s->boff[mid] <= x) lo = mid;
    else hi = mid - 1;
  }
  return *hint = lo;
}

/* Chunk and row of idx[0..n) (-1 -> chunk nb, row 0); returns the one
 * chunk every row comes from, or -1 when they come from several or one
 * is absent; *sorted: whether the present rows come in order; *run:
 * whether they are consecutive rows (each the one after the last; with
 * one chunk, the range is a slice of it). */
static int64_t locate(const qvj_side *s, const int64_t *idx, int64_t n, int64_t *chunk,
                      int64_t *row, bool *sorted, bool *run) {
  int64_t hint = 0, one = -2, last = -1;
  bool in_order = true, consecutive = n > 0 && idx[0] >= 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t x = idx[i];
    if (x < 0) {
      chunk[i] = s->nb;
      row[i] = 0;
      one = -1;
      continue;
    }
    in_order &= x >= last;
    consecutive &= i == 0 || x == last + 1;
    last = x;
    int64_t b = batch_of(s, x, &hint);
    chunk[i] = b;
    row[i] = x - s->boff[b];
    if (one == -2) one = b;
    else if (one != b) one = -1;
  }
  *sorted = in_order;
  *run = consecutive;
  return one < 0 ? -1 : one;
}

static void range_task(void *ctx, int64_t k, int worker) {
  range_ctx *c = ctx;
  int64_t a = c->rstart[k], n = c->rstart[k + 1] - a;
  qv_error *err = &c->errs[k];
  if (!c->scratch[worker]) {
    c->scratch[worker] = malloc(sizeof(int64_t) * 11 * (size_t)(c->rmax ? c->rmax : 1));
    if (!c->scratch[worker]) {
      c->st[k] = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      return;
    }
    int64_t *ident = c->scratch[worker] + 6 * c->rmax;
    for (int64_t i = 0; i < c->rmax; i++) ident[i] = i;
  }
  int64_t *lc = c->scratch[worker], *lr = lc + c->rmax, *rc = lr + c->rmax, *rr = rc + c->rmax;
  int64_t *cc = rr + c->rmax, *crow = cc + c->rmax, *ident = crow + c->rmax;
  int64_t *klc = ident + c->rmax, *klr = klc + c->rmax, *krc = klr + c->rmax, *krr = krc + c->rmax;
  /* A side of qvj_random_min rows or more read out of order is gathered with
   * output rows given (the identity): that path prefetches the rows
   * ahead, hiding the cache misses of random reads (j5 of bench_join.py:
   * 6.9 -> 3.7 s of CPU). A smaller side stays in cache. */
  bool lsorted, rsorted, lrun, rrun;
  int64_t lone = locate(c->l, c->pl + a, n, lc, lr, &lsorted, &lrun);
  int64_t rone = locate(c->r, c->pr + a, n, rc, rr, &rsorted, &rrun);
  bool coalesced = false;
  qv_array *batch = qv_array_new(c->st_type, 1, c->nj);
  if (!batch) {
    c->st[k] = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    return;
  }
  batch->length = n;
  batch->null_count = 0;
  qv_status st = QV_OK;
  for (int32_t j = 0; j < c->nj && st == QV_OK; j++) {
    const col_src *col = &c->cols[j];
    qv_array **out = &batch->children[j];
    if (n == 0) {
      st = qv_array_nulls((qv_type *)col->type, 0, out, err);
      continue;
    }
    if (col->side == 2) {
      if (!coalesced) {
        if (c->kl == c->l && c->kr == c->r) {
          klc = lc, klr = lr, krc = rc, krr = rr;
        } else {
          bool unused, unused_run;
          (void)locate(c->kl, c->kpl + a, n, klc, klr, &unused, &unused_run);
          (void)locate(c->kr, c->kpr + a, n, krc, krr, &unused, &unused_run);
        }
        for (int64_t i = 0; i < n; i++) {
          bool lp = c->kpl[a + i] >= 0;
          cc[i] = lp ? klc[i] : c->kl->nb + krc[i];
          crow[i] = lp ? klr[i] : krr[i];
        }
        coalesced = true;
      }
      st = qv_take_chunked_to(col->chunks, col->nb, cc, crow, ident, n, NULL, out, err);
      continue;
    }
    int64_t one = col->side == 0 ? lone : rone;
    const int64_t *ci = col->side == 0 ? lc : rc, *ri = col->side == 0 ? lr : rr;
    const qvj_side *sd = col->side == 0 ? c->l : c->r;
    bool sorted = col->side == 0 ? lsorted : rsorted;
    const int64_t *dest = sorted || sd->n < qvj_random_min ? NULL : ident;
    /* Consecutive rows of one chunk (every probe row of a left join whose
     * build keys are unique, in order): a zero-copy slice of the chunk. */
    if (one >= 0 && (col->side == 0 ? lrun : rrun))
      st = qv_array_slice(col->chunks[one], ri[0], n, out, err);
    else if (one >= 0)
      st = qv_take_chunked_to(&col->chunks[one], 1, NULL, ri, dest, n, NULL, out, err);
    else
      st = qv_take_chunked_to(col->chunks, col->nb + (col->null_chunk ? 1 : 0), ci, ri, dest, n,
                              NULL, out, err);
  }
  if (st != QV_OK) {
    qv_array_unref(batch);
    c->st[k] = st;
    return;
  }
  c->batches[k] = batch;
}

/* Range starts over the n output rows (see RANGE_MAX). */
static qv_status cut_ranges(const qvj_side *l, const qvj_side *r, const int64_t *pl,
                            const int64_t *pr, int64_t n, int64_t **out, int64_t *nr,
                            qv_error *err) {
  /* The sorted side: rows nondecreasing where present. */
  const int64_t *sorted = NULL;
  const qvj_side *ss = NULL;
  for (int s = 0; s < 2 && !sorted; s++) {
    const int64_t *p = s == 0 ? pl : pr;
    int64_t last = -1;
    bool ok = true;
    for (int64_t i = 0; i < n && ok; i++)
      if (p[i] >= 0) {
        ok = p[i] >= last;
        last = p[i];
      }
    if (ok) {
      sorted = p;
      ss = s == 0 ? l : r;
    }
  }
  int64_t cap = n / RANGE_MIN + n / RANGE_MAX + 2;
  int64_t *rs = malloc(sizeof(int64_t) * (size_t)cap);
  if (!rs) return qv_error_set(err, QV_ENOMEM, "join: out of memory");
  int64_t k = 0, begin = 0, cur = -1, hint = 0;
  rs[k++] = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t b = sorted && sorted[i] >= 0 ? batch_of(ss, sorted[i], &hint) : cur;
    int64_t len = i - begin;
    if (len >= RANGE_MAX || (len >= RANGE_MIN && b != cur && cur >= 0)) {
      rs[k++] = i;
      begin = i;
    }
    cur = b;
  }
  if (n > 0 || k == 1) rs[k++] = n;
  *out = rs;
  *nr = k - 1;
  return QV_OK;
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

/* The output table of pairs pl / pr (rows of l and r); the sides kl / kr
 * the keys were joined over, with the pairs kpl / kpr in their rows (l,
 * r, pl, pr when the join is over whole tables), give the coalesced keys
 * of right / full joins. lidx / ridx: the key columns in l's and r's
 * tables. */
static qv_status build_output(qvj_side *l, qvj_side *r, qvj_side *kl, qvj_side *kr,
                              const int32_t *lidx, const int32_t *ridx, qv_type **types,
                              const qv_join_options *o, const int64_t *pl, const int64_t *pr,
                              const int64_t *kpl, const int64_t *kpr, int64_t n, qv_table **out,
                              qv_error *err) {
  int32_t nk = o->n_keys;
  const qv_schema *ls = qv_table_schema(l->t), *rs = qv_table_schema(r->t);
  int32_t lcols = ls->type->n_children, rcols = rs->type->n_children;
  bool coalesce = o->how == QV_JOIN_RIGHT || o->how == QV_JOIN_FULL;
  const char *lsuf = o->left_suffix ? o->left_suffix : "";
  const char *rsuf = o->right_suffix ? o->right_suffix : "_right";
  bool l_absent = false, r_absent = false;
  for (int64_t i = 0; i < n && !(l_absent && r_absent); i++) {
    l_absent |= pl[i] < 0;
    r_absent |= pr[i] < 0;
  }
  qvc_columns la, ra;
  memset(&la, 0, sizeof la);
  memset(&ra, 0, sizeof ra);
  int32_t ncols = lcols + rcols;
  int32_t *all = malloc(sizeof(int32_t) * (size_t)(ncols + 1));
  col_src *cols = calloc((size_t)(ncols + 1), sizeof *cols);
  const qv_field **fields = calloc((size_t)(ncols + 1), sizeof *fields);
  char **names = calloc((size_t)(ncols + 1), sizeof *names);
  qv_type *st_type = qv_type_new(QV_STRUCT);
  qv_pool *pool = NULL;
  range_ctx rc;
  memset(&rc, 0, sizeof rc);
  int64_t *rstart = NULL, nr = 0;
  int threads = 1;
  int32_t nj = 0;
  qv_status st = QV_OK;
  if (!all || !cols || !fields || !names || !st_type) {
    st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    goto done;
  }
  for (int32_t c = 0; c < ncols; c++) all[c] = c < lcols ? c : c - lcols;
  if ((st = qvc_columns_load(&la, l->t, all, lcols, err)) != QV_OK ||
      (st = qvc_columns_load(&ra, r->t, all + lcols, rcols, err)) != QV_OK)
    goto done;
  /* The columns: left columns, then the right's non-key columns. */
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
    col_src *j = &cols[nj];
    fields[nj] = f;
    int32_t key = left ? key_of(lidx, nk, d) : -1;
    if (coalesce && key >= 0) {
      j->type = types[key];
      j->side = 2;
      j->nb = kl->nb + kr->nb;
      j->chunks = malloc(sizeof(qv_array *) * (size_t)(j->nb + 1));
      if (j->chunks) {
        for (int64_t b = 0; b < kl->nb; b++) j->chunks[b] = kl->ukeys[(int64_t)key * kl->nb + b];
        for (int64_t b = 0; b < kr->nb; b++)
          j->chunks[kl->nb + b] = kr->ukeys[(int64_t)key * kr->nb + b];
      }
    } else {
      const qvc_columns *cs = left ? &la : &ra;
      j->type = f->type;
      j->side = left ? 0 : 1;
      j->nb = left ? l->nb : r->nb;
      j->chunks = malloc(sizeof(qv_array *) * (size_t)(j->nb + 1));
      if (j->chunks) {
        for (int64_t b = 0; b < j->nb; b++) j->chunks[b] = cs->columns[d].chunks[b];
        j->chunks[j->nb] = NULL;
        if ((left ? l_absent : r_absent) &&
            (st = qv_array_nulls((qv_type *)f->type, 1, &j->null_chunk, err)) != QV_OK) {
          nj++;
          goto done;
        }
        j->chunks[j->nb] = j->null_chunk;
      }
    }
    nj++;
    if (!j->chunks || !names[nj - 1]) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      goto done;
    }
  }
  for (int32_t k = 0; k < nj && st == QV_OK; k++)
    st = qv_type_add_child(st_type, names[k], true, qv_type_ref((qv_type *)cols[k].type),
                           &fields[k]->metadata, err);
  if (st != QV_OK) goto done;
  /* The ranges, gathered on all cores, one range per task. */
  if ((st = cut_ranges(l, r, pl, pr, n, &rstart, &nr, err)) != QV_OK) goto done;
  threads = qv_cpu_count();
  if (threads > nr) threads = (int)nr;
  if (threads > 1 && n >= 4096 && qv_pool_new(threads, &pool, NULL) != QV_OK) pool = NULL;
  rc = (range_ctx){l,  r, pl,   pr, kl,      kr,   kpl,  kpr,  rstart,
                   nr, 0, cols, nj, st_type, NULL, NULL, NULL, NULL};
  for (int64_t k = 0; k < nr; k++)
    if (rstart[k + 1] - rstart[k] > rc.rmax) rc.rmax = rstart[k + 1] - rstart[k];
  rc.scratch = calloc(64, sizeof *rc.scratch);
  rc.batches = calloc((size_t)(nr ? nr : 1), sizeof *rc.batches);
  rc.st = calloc((size_t)(nr ? nr : 1), sizeof *rc.st);
  rc.errs = calloc((size_t)(nr ? nr : 1), sizeof *rc.errs);
  if (!rc.scratch || !rc.batches || !rc.st || !rc.errs) {
    st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    goto done;
  }
  qv_pool_run(pool, nr, range_task, &rc);
  st = qv_pool_check(pool, err);
  for (int64_t k = 0; k < nr && st == QV_OK; k++)
    if (rc.st[k] != QV_OK) {
      *err = rc.errs[k];
      st = rc.st[k];
    }
  if (st != QV_OK) goto done;
  {
    qv_schema *schema = qv_schema_new(qv_type_ref(st_type));
    if (!schema) st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    else st = qv_table_from_batches(schema, rc.batches, nr, out, err);
    qv_schema_unref(schema);
  }
done:
  qv_pool_free(pool);
  if (rc.batches)
    for (int64_t k = 0; k < nr; k++) qv_array_unref(rc.batches[k]);
  if (rc.scratch)
    for (int w = 0; w < 64; w++) free(rc.scratch[w]);
  free(rc.scratch);
  free(rc.batches);
  free(rc.st);
  free(rc.errs);
  free(rstart);
  for (int32_t k = 0; k < nj; k++) {
    qv_array_unref(cols[k].null_chunk);
    free(cols[k].chunks);
    free(names[k]);
  }
  free(cols);
  free(names);
  free(fields);
  qv_type_unref(st_type);
  qvc_columns_reset(&la);
  qvc_columns_reset(&ra);
  free(all);
  return st;
}

/* The join's key columns of side t (resolved by name), in one list. */
static qv_status key_columns(qv_table *t, const qv_join_options *o, bool right, int32_t *idx,
                             qv_error *err) {
  for (int32_t j = 0; j < o->n_keys; j++) {
    const char *name = right && o->right_on ? o->right_on[j] : o->left_on[j];
    QV_RETURN_NOT_OK(
        qvj_find_column(t, right ? "join: right key" : "join: left key", name, &idx[j], err));
  }
  return QV_OK;
}

/* Rows `rows` of t's key columns as a table (the keys only, so the join
 * reads no other column before the output); every column when a key
 * column is listed twice. */
static qv_status key_rows(qv_table *t, const int32_t *idx, int32_t nk, const int64_t *rows,
                          int64_t n, qv_table **out, qv_error *err) {
  bool dup = false;
  for (int32_t a = 0; a < nk; a++)
    for (int32_t b = 0; b < a; b++) dup |= idx[a] == idx[b];
  if (dup) return qv_table_take(t, rows, n, out, err);
  qv_table *sel = NULL;
  QV_RETURN_NOT_OK(qv_table_select(t, idx, nk, &sel, err));
  qv_status st = qv_table_take(sel, rows, n, out, err);
  qv_table_unref(sel);
  return st;
}

qv_status qv_table_join_rows(qv_table *left, const int64_t *left_rows, int64_t n_left_rows,
                             qv_table *right, const int64_t *right_rows, int64_t n_right_rows,
                             const qv_join_options *opts, qv_table **out, qv_error *err) {
  if (!out) return qv_error_set(err, QV_EARG, "join: out is NULL");
  *out = NULL;
  if (!left || !right) return qv_error_set(err, QV_EARG, "join: a table is NULL");
  if (!opts || opts->n_keys < 1 || !opts->left_on)
    return qv_error_set(err, QV_EARG, "join: at least one key column is needed");
  if ((unsigned)opts->how > QV_JOIN_ANTI || (unsigned)opts->build > QV_JOIN_BUILD_RIGHT)
    return qv_error_set(err, QV_EARG, "join: unknown join type or build side");
  if ((left_rows == NULL && n_left_rows != 0) || (right_rows == NULL && n_right_rows != 0) ||
      n_left_rows < 0 || n_right_rows < 0)
    return qv_error_set(err, QV_EARG, "join: a row list is NULL with a non-zero length");
  int32_t nk = opts->n_keys;
  int32_t *idx = malloc(sizeof(int32_t) * 4 * (size_t)nk);
  qv_type **types = calloc((size_t)nk, sizeof *types);
  qvj_side l, r, dl, dr;
  memset(&l, 0, sizeof l);
  memset(&r, 0, sizeof r);
  memset(&dl, 0, sizeof dl);
  memset(&dr, 0, sizeof dr);
  qv_table *kt[2] = {NULL, NULL};
  int64_t *pl = NULL, *pr = NULL, *ml = NULL, *mr = NULL, n = 0;
  qv_status st = QV_OK;
  if (!idx || !types) st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
  /* Sides over row lists: their key rows joined as tables of their own. */
  qv_table *jt[2] = {left, right};
  const int64_t *rows[2] = {left_rows, right_rows};
  int64_t nrows[2] = {n_left_rows, n_right_rows};
  for (int s = 0; s < 2 && st == QV_OK; s++) {
    if (!rows[s]) continue;
    int32_t *di = idx + (2 + s) * nk;
    st = key_columns(jt[s], opts, s == 1, di, err);
    if (st == QV_OK) st = key_rows(jt[s], di, nk, rows[s], nrows[s], &kt[s], err);
    if (st == QV_OK) st = qvj_side_load(s == 0 ? &dl : &dr, jt[s], di, nk, err);
    if (st == QV_OK) jt[s] = kt[s];
  }
  if (st == QV_OK)
    st = qvj_join(jt[0], jt[1], opts, &l, &r, idx, idx + nk, types, &pl, &pr, &n, err);
  /* The pairs as rows of the tables. */
  if (st == QV_OK && (left_rows || right_rows)) {
    ml = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    mr = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!ml || !mr) st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    for (int64_t i = 0; st == QV_OK && i < n; i++) {
      ml[i] = pl[i] < 0 || !left_rows ? pl[i] : left_rows[pl[i]];
      if (pr) mr[i] = pr[i] < 0 || !right_rows ? pr[i] : right_rows[pr[i]];
    }
  }
  if (st == QV_OK) {
    const int64_t *tl = ml ? ml : pl, *tr = mr ? mr : pr;
    qvj_side *sl = left_rows ? &dl : &l, *sr = right_rows ? &dr : &r;
    const int32_t *li = left_rows ? idx + 2 * nk : idx, *ri = right_rows ? idx + 3 * nk : idx + nk;
    if (opts->how == QV_JOIN_SEMI || opts->how == QV_JOIN_ANTI)
      st = qv_table_take(left, tl, n, out, err);
    else st = build_output(sl, sr, &l, &r, li, ri, types, opts, tl, tr, pl, pr, n, out, err);
  }
  qvj_side_reset(&l);
  qvj_side_reset(&r);
  qvj_side_reset(&dl);
  qvj_side_reset(&dr);
  qv_table_unref(kt[0]);
  qv_table_unref(kt[1]);
  if (types)
    for (int32_t j = 0; j < nk; j++) qv_type_unref(types[j]);
  free(types);
  free(idx);
  free(pl);
  free(pr);
  free(ml);
  free(mr);
  return st;
}

qv_status qv_table_join(qv_table *left, qv_table *right, const qv_join_options *opts,
                        qv_table **out, qv_error *err) {
  return qv_table_join_rows(left, NULL, 0, right, NULL, 0, opts, out, err);
}
