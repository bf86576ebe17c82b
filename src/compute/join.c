/*
 * join.c — compute layer: hash join of two tables (quiver/compute.h,
 * qv_join_indices / qv_table_join), on the grouper (grouper.c, row
 * table + swiss table).
 *
 * 1. Keys: each pair of key columns is unified to one type (dictionaries
 *    decoded, integer widths widened, string layouts made large_string;
 *    qv_array_cast does the conversions) and floats are canonicalised
 *    (-0.0 -> 0.0, every NaN -> one NaN) so that equal keys have equal
 *    bytes in the row encoding.
 * 2. Build: the build side's keys are consumed by a qv_grouper; every
 *    build row gets a group id (QV_GROUP_NONE when a key is null: nulls
 *    never match), and the rows of each group are listed in build order
 *    (counting sort: offsets per group, then rows).
 * 3. Probe: the probe side's keys are looked up (qv_grouper_lookup, no
 *    insertion); the output is counted, then the (probe, build) row
 *    pairs are written in probe order, each group's rows in build order,
 *    then the unmatched build rows when the join keeps them.
 * 4. Output (qv_table_join): every column is gathered with
 *    qv_array_take_chunked from the side's record batches (one extra
 *    one-row null chunk serves the absent partners of outer joins); key
 *    columns of right / full joins are gathered from both sides' unified
 *    keys (SQL's USING).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compute/compute_internal.h"
#include "compute/join_internal.h"
#include "core/parallel_internal.h"

bool qv_join_type_parse(const char *name, qv_join_type *out) {
  static const struct {
    const char *name;
    qv_join_type how;
  } names[] = {{"inner", QV_JOIN_INNER}, {"left", QV_JOIN_LEFT},  {"right", QV_JOIN_RIGHT},
               {"full", QV_JOIN_FULL},   {"outer", QV_JOIN_FULL}, {"semi", QV_JOIN_SEMI},
               {"anti", QV_JOIN_ANTI}};
  if (!name) return false;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i].name) == 0) {
      *out = names[i].how;
      return true;
    }
  return false;
}

const char *qv_join_type_name(qv_join_type how) {
  switch (how) {
    case QV_JOIN_INNER: return "inner";
    case QV_JOIN_LEFT: return "left";
    case QV_JOIN_RIGHT: return "right";
    case QV_JOIN_FULL: return "full";
    case QV_JOIN_SEMI: return "semi";
    case QV_JOIN_ANTI: return "anti";
  }
  return "?";
}

/* ------------------------------------------------------------------------ */
/* Column names                                                              */

static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return 99;
  int prev[65], cur[65];
  for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      int del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
    memcpy(prev, cur, sizeof(int) * (lb + 1));
  }
  return prev[lb];
}

qv_status qvj_find_column(const qv_table *t, const char *what, const char *name, int32_t *out,
                          qv_error *err) {
  if (name == NULL) return qv_error_set(err, QV_EARG, "%s: column name is NULL", what);
  const qv_schema *s = qv_table_schema(t);
  int32_t i = qv_schema_find(s, name);
  if (i >= 0) {
    *out = i;
    return QV_OK;
  }
  const char *best = NULL;
  int bd = 3;
  for (int32_t k = 0; k < s->type->n_children; k++) {
    int d = edit_distance(name, s->type->children[k].name);
    if (d < bd) {
      bd = d;
      best = s->type->children[k].name;
    }
  }
  if (best)
    return qv_error_set(err, QV_EARG, "%s: no column named '%s' (did you mean '%s'?)", what, name,
                        best);
  return qv_error_set(err, QV_EARG, "%s: no column named '%s'", what, name);
}

/* ------------------------------------------------------------------------ */
/* Key unification                                                           */

static bool is_int(qv_type_id id) { return qv_type_id_is_integer(id); }
static bool is_float(qv_type_id id) {
  return id == QV_HALF_FLOAT || id == QV_FLOAT || id == QV_DOUBLE;
}
static bool is_str(qv_type_id id) {
  return id == QV_STRING || id == QV_LARGE_STRING || id == QV_STRING_VIEW;
}
static bool is_bin(qv_type_id id) {
  return id == QV_BINARY || id == QV_LARGE_BINARY || id == QV_BINARY_VIEW;
}

static const qv_type *value_type(const qv_type *t) {
  return t->id == QV_DICTIONARY ? t->value_type : t;
}

/* The type both key columns are converted to, or NULL if incompatible. */
static qv_type *unify(const qv_type *a, const qv_type *b) {
  a = value_type(a);
  b = value_type(b);
  qv_type_id x = a->id, y = b->id;
  if (x == QV_NA && y == QV_NA) return qv_type_new(QV_NA);
  if (x == QV_NA) return unify(b, b);
  if (y == QV_NA) return unify(a, a);
  if (qv_type_equals(a, b, false)) {
    if (x == QV_HALF_FLOAT) return qv_type_new(QV_DOUBLE);
    return qv_type_ref((qv_type *)a);
  }
  if (is_int(x) && is_int(y)) {
    bool su = !qv_type_id_is_signed_integer(x), sv = !qv_type_id_is_signed_integer(y);
    return qv_type_new(su && sv ? QV_UINT64 : QV_INT64);
  }
  if ((is_int(x) || is_float(x)) && (is_int(y) || is_float(y))) return qv_type_new(QV_DOUBLE);
  if (is_str(x) && is_str(y)) return qv_type_new(QV_LARGE_STRING);
  if ((is_str(x) || is_bin(x)) && (is_str(y) || is_bin(y))) return qv_type_new(QV_LARGE_BINARY);
  return NULL;
}

/* A copy of float array `a` (FLOAT or DOUBLE) with -0.0 -> 0.0 and NaN ->
 * one NaN, or a reference when nothing changes. */
static qv_status canonical_floats(qv_array *a, qv_array **out, qv_error *err) {
  int64_t n = a->length;
  bool dbl = a->type->id == QV_DOUBLE;
  int w = dbl ? 8 : 4;
  if (n == 0 || a->n_buffers < 2 || !a->buffers[1]) {
    *out = qv_array_ref(a);
    return QV_OK;
  }
  const uint8_t *src = a->buffers[1]->data + a->offset * w;
  bool change = false;
  for (int64_t i = 0; i < n && !change; i++) {
    if (dbl) {
      double v, c;
      memcpy(&v, src + i * 8, 8);
      c = isnan(v) ? NAN : v == 0.0 ? 0.0 : v;
      change = memcmp(&v, &c, 8) != 0;
    } else {
      float v, c;
      memcpy(&v, src + i * 4, 4);
      c = isnan(v) ? NAN : v == 0.0f ? 0.0f : v;
      change = memcmp(&v, &c, 4) != 0;
    }
  }
  if (!change) {
    *out = qv_array_ref(a);
    return QV_OK;
  }
  qv_array *r = qv_array_new(a->type, 2, 0);
  if (!r) return qv_error_set(err, QV_ENOMEM, "join: out of memory");
  r->length = n;
  r->offset = 0;
  r->null_count = -1;
  qv_status st = qv_buffer_alloc(n * w, &r->buffers[1], err);
  if (st == QV_OK && a->buffers[0]) {
    st = qv_buffer_alloc((n + 7) / 8, &r->buffers[0], err);
    if (st == QV_OK) qv_bitmap_copy(r->buffers[0]->data, 0, a->buffers[0]->data, a->offset, n);
  }
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  uint8_t *dst = r->buffers[1]->data;
  for (int64_t i = 0; i < n; i++) {
    if (dbl) {
      double v;
      memcpy(&v, src + i * 8, 8);
      v = isnan(v) ? NAN : v == 0.0 ? 0.0 : v;
      memcpy(dst + i * 8, &v, 8);
    } else {
      float v;
      memcpy(&v, src + i * 4, 4);
      v = isnan(v) ? NAN : v == 0.0f ? 0.0f : v;
      memcpy(dst + i * 4, &v, 4);
    }
  }
  *out = r;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Sides                                                                     */

void qvj_side_reset(qvj_side *s) {
  qvc_columns_reset(&s->keys);
  if (s->ukeys)
    for (int64_t i = 0; i < (int64_t)s->n_keys * s->nb; i++) qv_array_unref(s->ukeys[i]);
  if (s->hkeys)
    for (int64_t i = 0; i < (int64_t)s->n_keys * s->nb; i++) qv_array_unref(s->hkeys[i]);
  free(s->ukeys);
  free(s->hkeys);
  free(s->boff);
  memset(s, 0, sizeof *s);
}

qv_status qvj_side_load(qvj_side *s, qv_table *t, const int32_t *idx, int32_t nk, qv_error *err) {
  memset(s, 0, sizeof *s);
  s->t = t;
  s->n = qv_table_num_rows(t);
  s->nb = qv_table_num_batches(t);
  s->n_keys = nk;
  s->boff = malloc(sizeof(int64_t) * (size_t)(s->nb + 1));
  if (!s->boff) return qv_error_set(err, QV_ENOMEM, "join: out of memory");
  for (int64_t b = 0; b < s->nb; b++) s->boff[b] = qv_table_batch_offset(t, b);
  s->boff[s->nb] = s->n;
  return qvc_columns_load(&s->keys, t, idx, nk, err);
}

/* Unify the key columns of both sides: ukeys (cast) and hkeys (hashed). */
static qv_status unify_keys(qvj_side *l, qvj_side *r, const int32_t *lidx, const int32_t *ridx,
                            qv_type **types, qv_error *err) {
  int32_t nk = l->n_keys;
  qvj_side *sides[2] = {l, r};
  for (int s = 0; s < 2; s++) {
    int64_t cnt = (int64_t)nk * sides[s]->nb;
    sides[s]->ukeys = calloc((size_t)(cnt ? cnt : 1), sizeof(qv_array *));
    sides[s]->hkeys = calloc((size_t)(cnt ? cnt : 1), sizeof(qv_array *));
    if (!sides[s]->ukeys || !sides[s]->hkeys)
      return qv_error_set(err, QV_ENOMEM, "join: out of memory");
  }
  const qv_schema *ls = qv_table_schema(l->t), *rs = qv_table_schema(r->t);
  for (int32_t j = 0; j < nk; j++) {
    const qv_field *lf = qv_schema_field(ls, lidx[j]), *rf = qv_schema_field(rs, ridx[j]);
    types[j] = unify(lf->type, rf->type);
    if (!types[j]) {
      char a[128], b[128];
      qv_type_to_string(lf->type, a, sizeof a);
      qv_type_to_string(rf->type, b, sizeof b);
      return qv_error_set(err, QV_ETYPE,
                          "join: key %d: left column '%s' (%s) and right column '%s' (%s) have "
                          "incompatible types",
                          j, lf->name, a, rf->name, b);
    }
    for (int s = 0; s < 2; s++) {
      qvj_side *sd = sides[s];
      for (int64_t b = 0; b < sd->nb; b++) {
        qv_array *src = sd->keys.columns[j].chunks[b];
        qv_array **u = &sd->ukeys[(int64_t)j * sd->nb + b];
        qv_status st = qv_array_cast(src, types[j], u, err);
        if (st != QV_OK)
          return qv_error_prefix(err, st, "join: %s key '%s': ", s == 0 ? "left" : "right",
                                 s == 0 ? lf->name : rf->name);
        qv_array **h = &sd->hkeys[(int64_t)j * sd->nb + b];
        if (types[j]->id == QV_FLOAT || types[j]->id == QV_DOUBLE)
          QV_RETURN_NOT_OK(canonical_floats(*u, h, err));
        else *h = qv_array_ref(*u);
      }
    }
  }
  return QV_OK;
}

/* Group ids of every row of a side (consume or lookup); rows with a null
 * key get QV_GROUP_NONE. */
static qv_status side_ids(qv_grouper *g, qvj_side *s, bool insert, uint32_t *ids, qv_error *err) {
  int32_t nk = s->n_keys;
  qv_array *keys[64];
  qv_array **kp = nk <= 64 ? keys : malloc(sizeof(qv_array *) * (size_t)nk);
  if (!kp) return qv_error_set(err, QV_ENOMEM, "join: out of memory");
  qv_status st = QV_OK;
  for (int64_t b = 0; b < s->nb && st == QV_OK; b++) {
    for (int32_t j = 0; j < nk; j++) kp[j] = s->hkeys[(int64_t)j * s->nb + b];
    uint32_t *out = ids + s->boff[b];
    st = insert ? qv_grouper_consume(g, kp, out, err) : qv_grouper_lookup(g, kp, out, err);
    if (st != QV_OK) break;
    int64_t len = kp[0]->length;
    for (int32_t j = 0; j < nk; j++) {
      qv_array *a = kp[j];
      if (a->type->id == QV_NA) {
        for (int64_t i = 0; i < len; i++) out[i] = QV_GROUP_NONE;
      } else if (a->buffers[0] && qv_array_null_count(a) > 0) {
        for (int64_t i = 0; i < len; i++)
          if (!qv_bit_get(a->buffers[0]->data, a->offset + i)) out[i] = QV_GROUP_NONE;
      }
    }
  }
  if (kp != keys) free(kp);
  return st;
}

/* The probe side's ids on all cores (keys the fixed-width path does not
 * take): a grouper is not thread-safe, so each worker builds its own over
 * the whole build side (the same rows in the same order give the same
 * group ids) and looks up whole record batches of the probe side with it.
 * Used when the build side is small against the probe side
 * (PAR_PROBE_RATIO), where the extra builds cost little. */
#define PAR_PROBE_RATIO 8
#define PAR_PROBE_MIN ((int64_t)1 << 16)

bool qvj_serial_probe = false;

typedef struct par_probe {
  qv_type **types;
  qvj_side *bs, *ps;
  qv_grouper **g; /* per worker, built on first use */
  uint32_t *scratch_ids;
  qv_status *st; /* per batch */
  qv_error *errs;
} par_probe;

static void par_probe_task(void *ctx, int64_t b, int worker) {
  par_probe *c = ctx;
  qv_error *err = &c->errs[b];
  qvj_side *ps = c->ps;
  int32_t nk = ps->n_keys;
  if (!c->g[worker]) {
    uint32_t *bids = malloc(sizeof(uint32_t) * (size_t)(c->bs->n ? c->bs->n : 1));
    qv_status st = bids ? qv_grouper_new(c->types, nk, &c->g[worker], err)
                        : qv_error_set(err, QV_ENOMEM, "join: out of memory");
    if (st == QV_OK) st = side_ids(c->g[worker], c->bs, true, bids, err);
    free(bids);
    if (st != QV_OK) {
      qv_grouper_free(c->g[worker]);
      c->g[worker] = NULL;
      c->st[b] = st;
      return;
    }
  }
  qvj_side one = *ps; /* batch b alone */
  one.nb = 1;
  int64_t boff[2] = {0, ps->boff[b + 1] - ps->boff[b]};
  one.boff = boff;
  qv_array *ks[64];
  qv_array **kp = nk <= 64 ? ks : malloc(sizeof(qv_array *) * (size_t)nk);
  if (!kp) {
    c->st[b] = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    return;
  }
  for (int32_t j = 0; j < nk; j++) kp[j] = ps->hkeys[(int64_t)j * ps->nb + b];
  one.hkeys = kp;
  c->st[b] = side_ids(c->g[worker], &one, false, c->scratch_ids + ps->boff[b], err);
  if (kp != ks) free(kp);
}

static qv_status probe_ids(qv_grouper *g, qv_type **types, qvj_side *bs, qvj_side *ps,
                           uint32_t *pids, qv_error *err) {
  int threads = qv_cpu_count();
  if (qvj_serial_probe || threads < 2 || ps->nb < 2 || ps->n < PAR_PROBE_MIN ||
      bs->n > ps->n / PAR_PROBE_RATIO)
    return side_ids(g, ps, false, pids, err);
  qv_pool *pool = NULL;
  if (qv_pool_new(threads, &pool, NULL) != QV_OK) return side_ids(g, ps, false, pids, err);
  par_probe c = {types,
                 bs,
                 ps,
                 calloc(64, sizeof(qv_grouper *)),
                 pids,
                 calloc((size_t)ps->nb, sizeof(qv_status)),
                 calloc((size_t)ps->nb, sizeof(qv_error))};
  qv_status st = QV_OK;
  if (!c.g || !c.st || !c.errs) st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
  if (st == QV_OK) {
    c.g[0] = g; /* the calling thread's: the grouper already built */
    qv_pool_run(pool, ps->nb, par_probe_task, &c);
    st = qv_pool_check(pool, err);
  }
  for (int64_t b = 0; st == QV_OK && b < ps->nb; b++)
    if (c.st[b] != QV_OK) {
      *err = c.errs[b];
      st = c.st[b];
    }
  qv_pool_free(pool);
  if (c.g)
    for (int w = 1; w < 64; w++) qv_grouper_free(c.g[w]);
  free(c.g);
  free(c.st);
  free(c.errs);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Join indices                                                              */

bool qvj_force_grouper = false;

static qv_status resolve_keys(qv_table *left, qv_table *right, const qv_join_options *o,
                              int32_t *lidx, int32_t *ridx, qv_error *err) {
  for (int32_t j = 0; j < o->n_keys; j++) {
    const char *rn = o->right_on ? o->right_on[j] : o->left_on[j];
    QV_RETURN_NOT_OK(qvj_find_column(left, "join: left key", o->left_on[j], &lidx[j], err));
    QV_RETURN_NOT_OK(qvj_find_column(right, "join: right key", rn, &ridx[j], err));
  }
  return QV_OK;
}

static qv_status check_opts(const qv_join_options *o, qv_error *err) {
  if (!o) return qv_error_set(err, QV_EARG, "join: options are NULL");
  if (o->n_keys < 1 || !o->left_on)
    return qv_error_set(err, QV_EARG, "join: at least one key column is needed");
  if ((unsigned)o->how > QV_JOIN_ANTI)
    return qv_error_set(err, QV_EARG, "join: unknown join type %d", (int)o->how);
  if ((unsigned)o->build > QV_JOIN_BUILD_RIGHT)
    return qv_error_set(err, QV_EARG, "join: unknown build side %d", (int)o->build);
  return QV_OK;
}

/* The (probe, build) pairs, counted then written on all cores: the probe
 * rows in parts of qvj_emit_part, each part's output counted (and its matched
 * groups marked for the unmatched-build emit) by one task, the counts
 * summed into each part's first output row, then each part's pairs
 * written by one task into its place: the same pairs, in probe order, as
 * one serial pass. */
int64_t qvj_emit_part = (int64_t)1 << 16;

typedef struct emit_ctx {
  const uint32_t *pids;
  const int64_t *start, *rows;
  int64_t n;
  bool keep_probe;
  uint8_t *matched; /* NULL unless the join keeps the unmatched build rows */
  int64_t *first;   /* per part: its output count, then its first output row */
  int64_t *pp, *bp; /* NULL in the count pass */
  int64_t part;     /* probe rows per part */
} emit_ctx;

static void emit_task(void *ctx, int64_t part, int worker) {
  (void)worker;
  emit_ctx *c = ctx;
  int64_t lo = part * c->part, hi = lo + c->part < c->n ? lo + c->part : c->n;
  const uint32_t *pids = c->pids;
  const int64_t *start = c->start, *rows = c->rows;
  if (!c->pp) {
    int64_t total = 0;
    for (int64_t i = lo; i < hi; i++) {
      uint32_t id = pids[i];
      int64_t k = id == QV_GROUP_NONE ? 0 : start[id + 1] - start[id];
      total += k == 0 && c->keep_probe ? 1 : k;
      if (c->matched && id != QV_GROUP_NONE) __atomic_store_n(&c->matched[id], 1, __ATOMIC_RELAXED);
    }
    c->first[part] = total;
    return;
  }
  int64_t *pp = c->pp, *bp = c->bp, k = c->first[part];
  for (int64_t i = lo; i < hi; i++) {
    uint32_t id = pids[i];
    if (id != QV_GROUP_NONE && start[id + 1] > start[id]) {
      for (int64_t q = start[id]; q < start[id + 1]; q++) {
        pp[k] = i;
        bp[k++] = rows[q];
      }
    } else if (c->keep_probe) {
      pp[k] = i;
      bp[k++] = -1;
    }
  }
}

/* The join proper over loaded sides (keys not yet unified). */
static qv_status join_core(qvj_side *l, qvj_side *r, const int32_t *lidx, const int32_t *ridx,
                           const qv_join_options *o, qv_type **types, int64_t **out_l,
                           int64_t **out_r, int64_t *out_n, qv_error *err) {
  int32_t nk = o->n_keys;
  QV_RETURN_NOT_OK(unify_keys(l, r, lidx, ridx, types, err));
  bool semi = o->how == QV_JOIN_SEMI || o->how == QV_JOIN_ANTI;
  bool build_left =
      o->build == QV_JOIN_BUILD_LEFT || (o->build == QV_JOIN_BUILD_AUTO && l->n < r->n);
  qvj_side *bs = build_left ? l : r, *ps = build_left ? r : l;
  bool keep_probe = o->how == QV_JOIN_FULL || (o->how == QV_JOIN_LEFT && !build_left) ||
                    (o->how == QV_JOIN_RIGHT && build_left);
  bool keep_build = o->how == QV_JOIN_FULL || (o->how == QV_JOIN_LEFT && build_left) ||
                    (o->how == QV_JOIN_RIGHT && !build_left);

  qv_grouper *g = NULL;
  uint32_t *bids = NULL, *pids = NULL;
  int64_t *start = NULL, *rows = NULL, *pl = NULL, *pr = NULL;
  uint8_t *matched = NULL;
  int64_t *first = NULL;
  qv_pool *pool = NULL;
  qv_status st = QV_OK;
  int64_t ng = 0;
  bids = malloc(sizeof(uint32_t) * (size_t)(bs->n ? bs->n : 1));
  pids = malloc(sizeof(uint32_t) * (size_t)(ps->n ? ps->n : 1));
  if (!bids || !pids) {
    st = qv_error_set(err, QV_ENOMEM, "join: out of memory (%" PRId64 " rows)", bs->n + ps->n);
    goto done;
  }
  {
    int parts = qvj_spill_partitions(bs, o->memory_limit);
    if (parts > 0) {
      st = qvj_grace(l, r, types, o, build_left, parts, out_l, out_r, out_n, err);
      goto done;
    }
  }
  if (bs->n >= (int64_t)QV_GROUP_NONE) {
    st = qv_error_set(err, QV_ENOTSUP, "join: more than %" PRIu32 " build rows",
                      (uint32_t)(QV_GROUP_NONE - 1));
    goto done;
  }
  if (nk == 1 && qvj_fast_eligible(types[0]) && !qvj_force_grouper) {
    if ((st = qvj_fast_ids(bs, ps, types[0], bids, pids, &ng, err)) != QV_OK) goto done;
  } else {
    if ((st = qv_grouper_new(types, nk, &g, err)) != QV_OK) goto done;
    if ((st = side_ids(g, bs, true, bids, err)) != QV_OK) goto done;
    if ((st = probe_ids(g, types, bs, ps, pids, err)) != QV_OK) goto done;
    ng = qv_grouper_num_groups(g);
    qv_grouper_free(g);
    g = NULL;
  }

  if (semi) {
    /* Left rows whose key matched (semi) or not (anti), in left order. */
    matched = calloc((size_t)(ng ? ng : 1), 1);
    if (!matched) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      goto done;
    }
    for (int64_t i = 0; i < r->n; i++) {
      uint32_t id = build_left ? pids[i] : bids[i];
      if (id != QV_GROUP_NONE) matched[id] = 1;
    }
    const uint32_t *lids = build_left ? bids : pids;
    int64_t k = 0;
    bool want = o->how == QV_JOIN_SEMI;
    for (int64_t i = 0; i < l->n; i++) k += (lids[i] != QV_GROUP_NONE && matched[lids[i]]) == want;
    pl = malloc(sizeof(int64_t) * (size_t)(k ? k : 1));
    if (!pl) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory (%" PRId64 " rows)", k);
      goto done;
    }
    k = 0;
    for (int64_t i = 0; i < l->n; i++)
      if ((lids[i] != QV_GROUP_NONE && matched[lids[i]]) == want) pl[k++] = i;
    *out_l = pl;
    *out_r = NULL;
    *out_n = k;
    pl = NULL;
    goto done;
  }

  /* Rows of each group in build order (counting sort). */
  start = calloc((size_t)ng + 1, sizeof(int64_t));
  rows = malloc(sizeof(int64_t) * (size_t)(bs->n ? bs->n : 1));
  matched = keep_build ? calloc((size_t)(ng ? ng : 1), 1) : NULL;
  if (!start || !rows || (keep_build && !matched)) {
    st = qv_error_set(err, QV_ENOMEM, "join: out of memory (%" PRId64 " groups)", ng);
    goto done;
  }
  for (int64_t i = 0; i < bs->n; i++)
    if (bids[i] != QV_GROUP_NONE) start[bids[i] + 1]++;
  for (int64_t k = 0; k < ng; k++) start[k + 1] += start[k];
  {
    int64_t *pos = pl = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
    if (!pos) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory (%" PRId64 " groups)", ng);
      goto done;
    }
    memcpy(pos, start, sizeof(int64_t) * (size_t)ng);
    for (int64_t i = 0; i < bs->n; i++)
      if (bids[i] != QV_GROUP_NONE) rows[pos[bids[i]]++] = i;
    free(pl);
    pl = NULL;
  }
  /* Count the output (on all cores, see emit_task). */
  int64_t epart = qvj_emit_part > 0 ? qvj_emit_part : 1;
  int64_t nparts = (ps->n + epart - 1) / epart;
  first = malloc(sizeof(int64_t) * (size_t)(nparts ? nparts : 1));
  if (!first) {
    st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
    goto done;
  }
  if (nparts > 1 && qv_cpu_count() > 1) (void)qv_pool_new(qv_cpu_count(), &pool, NULL);
  emit_ctx ec = {pids, start, rows, ps->n, keep_probe, matched, first, NULL, NULL, epart};
  qv_pool_run(pool, nparts, emit_task, &ec);
  if ((st = qv_pool_check(pool, err)) != QV_OK) goto done;
  int64_t total = 0;
  for (int64_t p = 0; p < nparts; p++) {
    int64_t c = first[p];
    first[p] = total;
    if (qv_add_overflow(total, c, &total)) {
      st = qv_error_set(err, QV_ERANGE, "join: the output has more than 2^63 rows");
      goto done;
    }
  }
  int64_t probe_total = total;
  if (keep_build) {
    for (int64_t i = 0; i < bs->n; i++)
      if (bids[i] == QV_GROUP_NONE || !matched[bids[i]]) total++;
  }
  if (total > INT64_MAX / 16) {
    st = qv_error_set(err, QV_ENOMEM, "join: the output has %" PRId64 " rows", total);
    goto done;
  }
  pl = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
  pr = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
  if (!pl || !pr) {
    st = qv_error_set(err, QV_ENOMEM, "join: out of memory (%" PRId64 " output rows)", total);
    goto done;
  }
  int64_t *pp = build_left ? pr : pl, *bp = build_left ? pl : pr, k = probe_total;
  ec.pp = pp;
  ec.bp = bp;
  qv_pool_run(pool, nparts, emit_task, &ec);
  if ((st = qv_pool_check(pool, err)) != QV_OK) goto done;
  if (keep_build)
    for (int64_t i = 0; i < bs->n; i++)
      if (bids[i] == QV_GROUP_NONE || !matched[bids[i]]) {
        pp[k] = -1;
        bp[k++] = i;
      }
  *out_l = pl;
  *out_r = pr;
  *out_n = k;
  pl = pr = NULL;
done:
  qv_pool_free(pool);
  free(first);
  qv_grouper_free(g);
  free(bids);
  free(pids);
  free(start);
  free(rows);
  free(matched);
  free(pl);
  free(pr);
  return st;
}

qv_status qvj_join(qv_table *left, qv_table *right, const qv_join_options *o, qvj_side *l,
                   qvj_side *r, int32_t *lidx, int32_t *ridx, qv_type **types, int64_t **out_l,
                   int64_t **out_r, int64_t *out_n, qv_error *err) {
  QV_RETURN_NOT_OK(resolve_keys(left, right, o, lidx, ridx, err));
  QV_RETURN_NOT_OK(qvj_side_load(l, left, lidx, o->n_keys, err));
  QV_RETURN_NOT_OK(qvj_side_load(r, right, ridx, o->n_keys, err));
  return join_core(l, r, lidx, ridx, o, types, out_l, out_r, out_n, err);
}

qv_status qv_join_indices(qv_table *left, qv_table *right, const qv_join_options *opts,
                          int64_t **out_left, int64_t **out_right, int64_t *out_n, qv_error *err) {
  if (!out_left || !out_right || !out_n) return qv_error_set(err, QV_EARG, "join: outputs NULL");
  *out_left = *out_right = NULL;
  *out_n = 0;
  QV_RETURN_NOT_OK(check_opts(opts, err));
  if (!left || !right) return qv_error_set(err, QV_EARG, "join: a table is NULL");
  int32_t nk = opts->n_keys;
  int32_t *idx = malloc(sizeof(int32_t) * 2 * (size_t)nk);
  qv_type **types = calloc((size_t)nk, sizeof *types);
  qvj_side l, r;
  memset(&l, 0, sizeof l);
  memset(&r, 0, sizeof r);
  qv_status st = QV_OK;
  if (!idx || !types) st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
  else
    st = qvj_join(left, right, opts, &l, &r, idx, idx + nk, types, out_left, out_right, out_n, err);
  qvj_side_reset(&l);
  qvj_side_reset(&r);
  if (types)
    for (int32_t j = 0; j < nk; j++) qv_type_unref(types[j]);
  free(types);
  free(idx);
  return st;
}
