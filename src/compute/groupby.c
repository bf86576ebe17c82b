/*
 * groupby.c — compute layer: hash group-by over a qv_table
 * (qv_table_group_by, quiver/compute.h), the driver. The key and input
 * columns are loaded one chunk per record batch (lazily decoded mapped
 * batches are decoded here). Every row gets a dense group id in order of
 * first appearance from one of three paths: direct index (small integer
 * domains, below), the hash path on all cores (groupby_hash.c: fixed-width
 * and binary keys) or the grouper (grouper.c: row-table encoding, for the
 * other keys, dictionaries). The aggregates (aggregate.c) are then updated
 * columnwise, on all cores: thread-local pre-aggregation with merged
 * states when groups are few (ranges of batches per thread), else per
 * partition of the groups, each group's rows in table order. Holistic
 * aggregates (median, quantile, top_k, list) get the rows of each group at
 * the end, grouped by a counting sort on the ids. The output is the
 * distinct keys followed by the aggregate columns, optionally reordered by
 * sorting the keys (qv_sort_indices).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/compute_internal.h"
#include "compute/groupby_internal.h"
#include "core/parallel_internal.h"

static qv_status find_col(const qv_schema *s, const char *name, const char *what, int32_t *out,
                          qv_error *err) {
  if (name == NULL) return qv_error_set(err, QV_EARG, "%s: no column given", what);
  int32_t i = qv_schema_find(s, name);
  if (i >= 0) {
    *out = i;
    return QV_OK;
  }
  int32_t n = s->type->n_children;
  const char **names = malloc(sizeof(char *) * (size_t)(n ? n : 1));
  const char *close = NULL;
  if (names) {
    for (int32_t j = 0; j < n; j++) names[j] = s->type->children[j].name;
    close = qvg_closest_name(name, names, n);
  }
  qv_status st;
  if (close)
    st = qv_error_set(err, QV_EARG, "%s: no column named '%s' (did you mean '%s'?)", what, name,
                      close);
  else st = qv_error_set(err, QV_EARG, "%s: no column named '%s'", what, name);
  free(names);
  return st;
}

/* Canonical text of an aggregate: "sum(v1)", "count(*)", "quantile(v1, 0.9)". */
static void agg_label(const qv_aggregate *a, char *out, size_t cap) {
  const char *fn = qv_agg_kind_name(a->kind);
  const char *c = a->column ? a->column : "?";
  switch (a->kind) {
    case QV_AGG_COUNT_ALL: snprintf(out, cap, "count(*)"); break;
    case QV_AGG_QUANTILE: snprintf(out, cap, "%s(%s, %g)", fn, c, a->q); break;
    case QV_AGG_TOP_K:
    case QV_AGG_BOTTOM_K: snprintf(out, cap, "%s(%s, %" PRId64 ")", fn, c, a->k); break;
    case QV_AGG_CORR:
    case QV_AGG_COVAR:
    case QV_AGG_COVAR_POP:
      snprintf(out, cap, "%s(%s, %s)", fn, c, a->column2 ? a->column2 : "?");
      break;
    default: snprintf(out, cap, "%s(%s)", fn, c); break;
  }
}

typedef struct gb_state {
  qv_table *table; /* the input, its batches released once aggregated (qv_table_batch_done);
                    * NULL: kept (an input well inside the budget) */
  int32_t n_need;
  int32_t *need; /* table columns loaded */
  qvc_columns cols;
  int32_t *key_pos; /* into need */
  int32_t *x_pos, *y_pos;
  qvg_agg **aggs;
  char **labels;
  qv_grouper *grouper;
  uint32_t *ids; /* one batch (or all rows when holistic) */
  qvg_rows rows;
  qv_array **outs; /* n_keys + n_aggs result columns */
} gb_state;

static int32_t need_col(gb_state *s, int32_t col) {
  for (int32_t i = 0; i < s->n_need; i++)
    if (s->need[i] == col) return i;
  s->need[s->n_need] = col;
  return s->n_need++;
}

qv_status qvg_build_table(const char *const *names, qv_array **cols, int32_t n, int64_t len,
                          qv_table **out, qv_error *err) {
  qv_type *st_type = qv_type_new(QV_STRUCT);
  if (!st_type) return qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  qv_status st = QV_OK;
  for (int32_t i = 0; i < n && st == QV_OK; i++)
    st = qv_type_add_child(st_type, names[i], true, qv_type_ref(cols[i]->type), NULL, err);
  qv_array *batch = st == QV_OK ? qv_array_new(st_type, 1, n) : NULL;
  if (st == QV_OK && !batch) st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  qv_schema *schema = NULL;
  if (st == QV_OK) {
    batch->length = len;
    batch->null_count = 0;
    for (int32_t i = 0; i < n; i++) batch->children[i] = qv_array_ref(cols[i]);
    schema = qv_schema_new(qv_type_ref(st_type)); /* takes that reference over */
    if (!schema) st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  }
  if (st == QV_OK) st = qv_table_from_batches(schema, &batch, 1, out, err);
  if (schema) qv_schema_unref(schema);
  if (batch) qv_array_unref(batch);
  qv_type_unref(st_type);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Direct-index path: integer keys whose value ranges multiply to a small
 * domain are mapped straight to a slot (sum of (value - min) * stride, a
 * null its own value), and slots to group ids in order of first
 * appearance, without hashing. */

#define DIRECT_MAX_SLOTS (1 << 22)

typedef struct direct_map {
  int32_t n_keys;
  uint16_t **codes; /* per key: a string key's codes (qvg_code_strings), else NULL */
  int64_t *min, *stride;
  int64_t *null_slot; /* per key: the value index of null (range - 1), -1 if no nulls */
  int64_t n_slots;
  uint32_t *slot_gid; /* QV_GROUP_NONE: not seen */
  int64_t n_groups, cap;
  int64_t *first_chunk, *first_row; /* first row of each group */
} direct_map;

static void direct_free(direct_map *d) {
  for (int32_t k = 0; d->codes && k < d->n_keys; k++) free(d->codes[k]);
  free(d->codes);
  free(d->min);
  free(d->stride);
  free(d->null_slot);
  free(d->slot_gid);
  free(d->first_chunk);
  free(d->first_row);
  memset(d, 0, sizeof *d);
}

static bool direct_key_type(qv_type_id id) {
  return id == QV_INT8 || id == QV_INT16 || id == QV_INT32 || id == QV_INT64 || id == QV_UINT8 ||
         id == QV_UINT16 || id == QV_UINT32 || id == QV_BOOL;
}

static inline int64_t key_int(const qv_array *a, int64_t i) {
  if (a->type->id == QV_BOOL) return qv_bit_get(a->buffers[1]->data, a->offset + i);
  return qv_array_int_at(a, i);
}

/* String keys of at most DIRECT_MAX_CODES values (judged on a sample of
 * the first batch first) take the direct path by their codes. */
#define DIRECT_MAX_CODES 1024
#define DIRECT_CODE_SAMPLE 8192

static bool string_key_type(qv_type_id id) {
  return id == QV_STRING || id == QV_LARGE_STRING || id == QV_BINARY || id == QV_LARGE_BINARY ||
         id == QV_STRING_VIEW || id == QV_BINARY_VIEW;
}

/* Decide whether the keys fit the direct path (false: use the hash path
 * or the grouper). String keys are coded here (on the pool). */
static bool direct_plan(qv_pool *pool, qv_table *table, const qv_chunked_column *const *keys,
                        int32_t nk, int64_t total, const int64_t *boff, int64_t nb, direct_map *d) {
  memset(d, 0, sizeof *d);
  uint64_t str_slots = 1; /* at least the string keys' slots (their values in the sample) */
  for (int32_t k = 0; k < nk; k++) {
    qv_type_id id = keys[k]->type->id;
    if (direct_key_type(id)) continue;
    if (!string_key_type(id) || nb < 1 || keys[k]->n_chunks != nb) return false;
    int64_t sample = boff[1] < DIRECT_CODE_SAMPLE ? boff[1] : DIRECT_CODE_SAMPLE;
    int64_t dist = qvg_hash_sample_distinct(keys + k, 1, 0, sample);
    if (dist < 0 || dist > DIRECT_MAX_CODES / 2) return false;
    str_slots *= (uint64_t)(dist > 0 ? dist : 1);
    if (str_slots > DIRECT_MAX_SLOTS) return false;
  }
  d->n_keys = nk;
  d->codes = calloc((size_t)nk, sizeof(uint16_t *));
  d->min = calloc((size_t)nk, sizeof(int64_t));
  d->stride = calloc((size_t)nk, sizeof(int64_t));
  d->null_slot = calloc((size_t)nk, sizeof(int64_t));
  if (!d->codes || !d->min || !d->stride || !d->null_slot) {
    direct_free(d);
    return false;
  }
  int64_t limit = total * 2 > 1024 ? total * 2 : 1024;
  if (limit > DIRECT_MAX_SLOTS) limit = DIRECT_MAX_SLOTS;
  int64_t slots = 1;
  /* the integer keys first (a scan each), so that the strings are coded
   * only when the integers leave room for them */
  for (int32_t kk = 0; kk < 2 * nk; kk++) {
    int32_t k = kk % nk;
    if ((kk < nk) != direct_key_type(keys[k]->type->id)) continue;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    bool nulls = false;
    if (kk < nk && (uint64_t)slots * str_slots > (uint64_t)limit) {
      direct_free(d);
      return false;
    }
    if (!direct_key_type(keys[k]->type->id)) {
      int32_t nv = 0;
      d->codes[k] = malloc(sizeof(uint16_t) * (size_t)(total ? total : 1));
      if (!d->codes[k] || !qvg_code_strings(pool, keys[k], boff, nb, DIRECT_MAX_CODES, table,
                                            d->codes[k], &nv, &nulls)) {
        direct_free(d);
        return false;
      }
      lo = 0, hi = nv - 1;
    }
    for (int64_t c = 0; c < keys[k]->n_chunks && !d->codes[k]; c++) {
      const qv_array *a = keys[k]->chunks[c];
      const uint8_t *valid = a->buffers[0] ? a->buffers[0]->data : NULL;
      if (a->type->id == QV_INT32 && !valid) {
        const int32_t *v = (const int32_t *)(const void *)a->buffers[1]->data + a->offset;
        for (int64_t i = 0; i < a->length; i++) {
          if (v[i] < lo) lo = v[i];
          if (v[i] > hi) hi = v[i];
        }
        qv_table_batch_done(table, c); /* every pass over the keys releases as it goes */
        continue;
      }
      for (int64_t i = 0; i < a->length; i++) {
        if (valid && !qv_bit_get(valid, a->offset + i)) {
          nulls = true;
          continue;
        }
        int64_t x = key_int(a, i);
        if (x < lo) lo = x;
        if (x > hi) hi = x;
      }
      qv_table_batch_done(table, c);
    }
    if (lo > hi) lo = hi = 0; /* only nulls, or no rows */
    uint64_t range = (uint64_t)hi - (uint64_t)lo + 1 + (nulls ? 1 : 0);
    uint64_t more = kk < nk ? str_slots : 1; /* room left for the strings */
    if (range > (uint64_t)limit || (uint64_t)slots * range > (uint64_t)limit ||
        (uint64_t)slots * range * more > (uint64_t)limit) {
      direct_free(d);
      return false;
    }
    d->min[k] = lo;
    d->stride[k] = slots;
    d->null_slot[k] = nulls ? (int64_t)range - 1 : -1;
    slots *= (int64_t)range;
  }
  d->n_slots = slots;
  d->slot_gid = malloc(sizeof(uint32_t) * (size_t)slots);
  d->cap = 1024;
  d->first_chunk = malloc(sizeof(int64_t) * (size_t)d->cap);
  d->first_row = malloc(sizeof(int64_t) * (size_t)d->cap);
  if (!d->slot_gid || !d->first_chunk || !d->first_row) {
    direct_free(d);
    return false;
  }
  memset(d->slot_gid, 0xff, sizeof(uint32_t) * (size_t)slots);
  return true;
}

/* The slots of batch b's rows into ids (key by key, columnwise; one task
 * per batch). Slots are below DIRECT_MAX_SLOTS, so they fit 32 bits. */
typedef struct dslot_ctx {
  const direct_map *d;
  qv_table *table; /* batches released once their slots are known */
  const qv_chunked_column *const *keys;
  const int64_t *boff;
  uint32_t *ids;
} dslot_ctx;

static void direct_slot_task(void *ctx, int64_t b, int worker) {
  (void)worker;
  dslot_ctx *c = ctx;
  const direct_map *d = c->d;
  int64_t len = c->boff[b + 1] - c->boff[b];
  uint32_t *slot = c->ids + c->boff[b];
  memset(slot, 0, sizeof(uint32_t) * (size_t)len);
  for (int32_t k = 0; k < d->n_keys; k++) {
    const qv_array *a = c->keys[k]->chunks[b];
    const uint8_t *valid = a->buffers[0] ? a->buffers[0]->data : NULL;
    int64_t lo = d->min[k], st = d->stride[k];
    if (d->codes[k]) { /* a null's code is the value count: its null slot */
      const uint16_t *code = d->codes[k] + c->boff[b];
      for (int64_t i = 0; i < len; i++) slot[i] += (uint32_t)((int64_t)code[i] * st);
      continue;
    }
    if (a->type->id == QV_INT32 && !valid) {
      const int32_t *v = (const int32_t *)(const void *)a->buffers[1]->data + a->offset;
      for (int64_t i = 0; i < len; i++) slot[i] += (uint32_t)(((int64_t)v[i] - lo) * st);
      continue;
    }
    for (int64_t i = 0; i < len; i++) {
      bool ok = !valid || qv_bit_get(valid, a->offset + i);
      slot[i] += (uint32_t)((ok ? key_int(a, i) - lo : d->null_slot[k]) * st);
    }
  }
  qv_table_batch_done(c->table, b);
}

/* Slots of batch b (in ids) to group ids, new groups in order of first
 * appearance. */
static qv_status direct_assign(direct_map *d, int64_t b, int64_t len, uint32_t *ids,
                               qv_error *err) {
  for (int64_t i = 0; i < len; i++) {
    uint32_t sl = ids[i], g = d->slot_gid[sl];
    if (g == QV_GROUP_NONE) {
      if (d->n_groups == d->cap) {
        int64_t cap = d->cap * 2;
        int64_t *fc = realloc(d->first_chunk, sizeof(int64_t) * (size_t)cap);
        if (fc) d->first_chunk = fc;
        int64_t *fr = realloc(d->first_row, sizeof(int64_t) * (size_t)cap);
        if (fr) d->first_row = fr;
        if (!fc || !fr) return qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
        d->cap = cap;
      }
      g = (uint32_t)d->n_groups;
      d->first_chunk[g] = b;
      d->first_row[g] = i;
      d->n_groups++;
      d->slot_gid[sl] = g;
    }
    ids[i] = g;
  }
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Aggregate updates: one thread over the batches, or one task per
 * partition of the groups (each partition's rows in table order, so every
 * group is updated in the same sequence either way). */

#define GB_PARALLEL_MIN_ROWS 65536

typedef struct agg_ctx {
  gb_state *s;
  const qvg_parts *parts;
  const int64_t *boff;
  int64_t nb;
  int32_t n_aggs;
  qvg_scratch *scratch; /* per worker */
  qv_status *st;        /* per partition */
  qv_error *errs;
} agg_ctx;

static void agg_task(void *ctx, int64_t p, int worker) {
  agg_ctx *c = ctx;
  gb_state *s = c->s;
  qvg_scratch *sc = &c->scratch[worker];
  for (int64_t b = 0; b < c->nb; b++) {
    int64_t lo = c->parts->off[p * c->nb + b], hi = c->parts->off[p * c->nb + b + 1];
    if (lo == hi) continue;
    for (int32_t i = 0; i < c->n_aggs; i++) {
      if (!qvg_agg_parallel_ok(s->aggs[i])) continue;
      qv_array *x = s->x_pos[i] >= 0 ? s->cols.columns[s->x_pos[i]].chunks[b] : NULL;
      qv_array *y = s->y_pos[i] >= 0 ? s->cols.columns[s->y_pos[i]].chunks[b] : NULL;
      qv_status st = qvg_agg_update_sel(s->aggs[i], sc, s->ids + c->boff[b], c->parts->rows + lo,
                                        hi - lo, (int32_t)b, x, y, &c->errs[p]);
      if (st != QV_OK) {
        c->st[p] = st;
        return;
      }
    }
  }
}

/* Few groups, every aggregate mergeable: each task updates its own states
 * over a contiguous range of batches (ids already global), merged in
 * range order. */
typedef struct range_ctx {
  gb_state *s;
  const int64_t *boff;
  int64_t nb, ng;
  int32_t n_aggs, nr;
  qvg_agg ***aggs;
  qv_status *st;
  qv_error *errs;
} range_ctx;

static void range_task(void *ctx, int64_t w, int worker) {
  (void)worker;
  range_ctx *c = ctx;
  gb_state *s = c->s;
  qv_error *err = &c->errs[w];
  int64_t b0 = w * c->nb / c->nr, b1 = (w + 1) * c->nb / c->nr;
  c->aggs[w] = calloc((size_t)(c->n_aggs ? c->n_aggs : 1), sizeof(qvg_agg *));
  qv_status st = c->aggs[w] ? QV_OK : qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  for (int32_t i = 0; i < c->n_aggs && st == QV_OK; i++) {
    st = qvg_agg_clone_empty(s->aggs[i], &c->aggs[w][i], err);
    if (st == QV_OK) st = qvg_agg_reserve(c->aggs[w][i], c->ng, err);
  }
  for (int64_t b = b0; b < b1 && st == QV_OK; b++)
    for (int32_t i = 0; i < c->n_aggs && st == QV_OK; i++) {
      qv_array *x = s->x_pos[i] >= 0 ? s->cols.columns[s->x_pos[i]].chunks[b] : NULL;
      qv_array *y = s->y_pos[i] >= 0 ? s->cols.columns[s->y_pos[i]].chunks[b] : NULL;
      st = qvg_agg_update(c->aggs[w][i], s->ids + c->boff[b], c->boff[b + 1] - c->boff[b],
                          (int32_t)b, x, y, err);
      if (i == c->n_aggs - 1) qv_table_batch_done(s->table, b);
    }
  c->st[w] = st;
}

static qv_status update_by_ranges(gb_state *s, qv_pool *pool, int32_t nr, const int64_t *boff,
                                  int64_t nb, int32_t n_aggs, int64_t ng, qv_error *err) {
  range_ctx c = {s, boff, nb, ng, n_aggs, nr, NULL, NULL, NULL};
  c.aggs = calloc((size_t)nr, sizeof *c.aggs);
  c.st = calloc((size_t)nr, sizeof *c.st);
  c.errs = calloc((size_t)nr, sizeof *c.errs);
  qv_status st =
      c.aggs && c.st && c.errs ? QV_OK : qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  if (st == QV_OK) {
    qv_pool_run(pool, nr, range_task, &c);
    st = qv_pool_check(pool, err);
  }
  for (int32_t w = 0; w < nr && st == QV_OK; w++)
    if (c.st[w] != QV_OK) {
      st = c.st[w];
      if (err) *err = c.errs[w];
    }
  for (int32_t i = 0; i < n_aggs && st == QV_OK; i++)
    for (int32_t w = 0; w < nr && st == QV_OK; w++)
      st = qvg_agg_merge(s->aggs[i], c.aggs[w][i], NULL, ng, err);
  for (int32_t w = 0; c.aggs && w < nr; w++) {
    for (int32_t i = 0; c.aggs[w] && i < n_aggs; i++) qvg_agg_free(c.aggs[w][i]);
    free(c.aggs[w]);
  }
  free(c.aggs);
  free(c.st);
  free(c.errs);
  return st;
}

static qv_status update_aggregates(gb_state *s, qv_pool *pool, int32_t n_parts, qvg_parts *parts,
                                   const int64_t *boff, int64_t nb, int32_t n_aggs, int64_t ng,
                                   const qv_group_by_options *o, int64_t total, qv_error *err) {
  bool ranges = n_parts > 1 && nb >= 2 && ng > 0 && ng * 16 <= total && n_aggs > 0;
  for (int32_t i = 0; i < n_aggs && ranges; i++) ranges = qvg_agg_mergeable(s->aggs[i]);
  if (ranges) {
    int32_t nr = qv_pool_size(pool) < nb ? qv_pool_size(pool) : (int32_t)nb;
    if (nr < 2) nr = 2;
    qv_status st = update_by_ranges(s, pool, nr, boff, nb, n_aggs, ng, err);
    if (st == QV_OK && o->progress) o->progress(o->progress_ctx, total, total);
    return st;
  }
  bool par = false;
  for (int32_t i = 0; i < n_aggs; i++)
    if (qvg_agg_parallel_ok(s->aggs[i]) && !qvg_agg_is_holistic(s->aggs[i])) par = true;
  par = par && n_parts > 1 && ng > 0 && total > 0;
  qv_status st = QV_OK;
  if (par) {
    if (!parts->rows) st = qvg_parts_by_group(pool, s->ids, boff, nb, n_parts, parts, err);
    int nw = qv_pool_size(pool);
    agg_ctx c = {s, parts, boff, nb, n_aggs, NULL, NULL, NULL};
    c.scratch = calloc((size_t)nw, sizeof(qvg_scratch));
    c.st = calloc((size_t)n_parts, sizeof(qv_status));
    c.errs = calloc((size_t)n_parts, sizeof(qv_error));
    if (st == QV_OK && (!c.scratch || !c.st || !c.errs))
      st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
    /* null counts are cached in the arrays: settle them before the tasks */
    for (int32_t i = 0; i < n_aggs && st == QV_OK; i++)
      for (int64_t b = 0; b < nb; b++) {
        if (s->x_pos[i] >= 0) (void)qv_array_null_count(s->cols.columns[s->x_pos[i]].chunks[b]);
        if (s->y_pos[i] >= 0) (void)qv_array_null_count(s->cols.columns[s->y_pos[i]].chunks[b]);
      }
    if (st == QV_OK) {
      qv_pool_run(pool, n_parts, agg_task, &c);
      st = qv_pool_check(pool, err);
    }
    for (int32_t p = 0; p < n_parts && st == QV_OK; p++)
      if (c.st[p] != QV_OK) {
        st = c.st[p];
        if (err) *err = c.errs[p];
      }
    for (int w = 0; c.scratch && w < nw; w++) qvg_scratch_free(&c.scratch[w]);
    free(c.scratch);
    free(c.st);
    free(c.errs);
  }
  for (int64_t b = 0; b < nb && st == QV_OK; b++) {
    int64_t len = boff[b + 1] - boff[b];
    for (int32_t i = 0; i < n_aggs && st == QV_OK; i++) {
      if (par && qvg_agg_parallel_ok(s->aggs[i])) continue;
      qv_array *x = s->x_pos[i] >= 0 ? s->cols.columns[s->x_pos[i]].chunks[b] : NULL;
      qv_array *y = s->y_pos[i] >= 0 ? s->cols.columns[s->y_pos[i]].chunks[b] : NULL;
      st = qvg_agg_update(s->aggs[i], s->ids + boff[b], len, (int32_t)b, x, y, err);
    }
    if (!par) qv_table_batch_done(s->table, b);
    if (st == QV_OK && o->progress && !par) o->progress(o->progress_ctx, boff[b + 1], total);
  }
  for (int64_t b = 0; par && b < nb; b++) qv_table_batch_done(s->table, b);
  if (st == QV_OK && o->progress && par) o->progress(o->progress_ctx, total, total);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Thread-local pre-aggregation (hash-path keys, mergeable aggregates, few
 * groups for the rows): worker w groups the contiguous batches
 * [w nb / T, (w + 1) nb / T) into its own table and updates its own
 * aggregate states; the tables are then merged in worker order (so the
 * groups keep their order of first appearance) and each worker's states
 * merged into the result's. A worker that finds about as many groups as
 * rows in its first batch stops them all and the partitioned path runs
 * instead. */

#define PRE_SAMPLE_ROWS 65536
#define PRE_MAX_DISTINCT_PCT 85

typedef struct pre_ctx {
  gb_state *s;
  const qv_chunked_column *const *kcols;
  int32_t nk, n_aggs, nw;
  const int64_t *boff;
  int64_t nb, max_batch;
  qvg_htab **tabs;
  qvg_agg ***aggs;
  qv_status *st;
  qv_error *errs;
  int stop;
  bool may_stop; /* false: no partitioned run to fall back on (the budget) */
} pre_ctx;

static void pre_task(void *ctx, int64_t w, int worker) {
  (void)worker;
  pre_ctx *c = ctx;
  gb_state *s = c->s;
  qv_error *err = &c->errs[w];
  int64_t b0 = w * c->nb / c->nw, b1 = (w + 1) * c->nb / c->nw;
  uint64_t *h = malloc(sizeof(uint64_t) * (size_t)(c->max_batch ? c->max_batch : 1));
  uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)(c->max_batch ? c->max_batch : 1));
  c->aggs[w] = calloc((size_t)(c->n_aggs ? c->n_aggs : 1), sizeof(qvg_agg *));
  qv_status st =
      h && ids && c->aggs[w] ? QV_OK : qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  if (st == QV_OK) st = qvg_htab_new(c->kcols, c->nk, &c->tabs[w], err);
  for (int32_t i = 0; i < c->n_aggs && st == QV_OK; i++)
    st = qvg_agg_clone_empty(s->aggs[i], &c->aggs[w][i], err);
  for (int64_t b = b0; b < b1 && st == QV_OK; b++) {
    if (__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) break;
    int64_t len = c->boff[b + 1] - c->boff[b];
    st = qvg_htab_batch(c->tabs[w], b, len, h, ids, err);
    int64_t ng = st == QV_OK ? qvg_htab_groups(c->tabs[w]) : 0;
    if (st == QV_OK && c->may_stop && b == b0 && len >= 4096 && ng * 2 > len) {
      __atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED); /* too many groups: partition instead */
      break;
    }
    for (int32_t i = 0; i < c->n_aggs && st == QV_OK; i++) {
      st = qvg_agg_reserve(c->aggs[w][i], ng, err);
      qv_array *x = s->x_pos[i] >= 0 ? s->cols.columns[s->x_pos[i]].chunks[b] : NULL;
      qv_array *y = s->y_pos[i] >= 0 ? s->cols.columns[s->y_pos[i]].chunks[b] : NULL;
      if (st == QV_OK) st = qvg_agg_update(c->aggs[w][i], ids, len, (int32_t)b, x, y, err);
    }
    /* resident memory stays flat: the batch's pages go once aggregated (the
     * output keys' first rows fault back in from the page cache) */
    if (st == QV_OK) qv_table_batch_done(s->table, b);
  }
  c->st[w] = st;
  free(h);
  free(ids);
}

static qv_status preaggregate(gb_state *s, qv_pool *pool, int threads,
                              const qv_chunked_column *const *kcols, int32_t nk,
                              const int64_t *boff, int64_t nb, int64_t max_batch, int32_t n_aggs,
                              int64_t *n_groups, int64_t **first_chunk, int64_t **first_row,
                              bool may_stop, bool *done, qv_error *err) {
  *done = false;
  int32_t nw = threads < nb ? threads : (int32_t)nb;
  if (nw < 1) nw = 1;
  pre_ctx c = {s, kcols, nk, n_aggs, nw, boff, nb, max_batch, NULL, NULL, NULL, NULL, 0, may_stop};
  c.tabs = calloc((size_t)nw, sizeof *c.tabs);
  c.aggs = calloc((size_t)nw, sizeof *c.aggs);
  c.st = calloc((size_t)nw, sizeof *c.st);
  c.errs = calloc((size_t)nw, sizeof *c.errs);
  uint32_t **maps = calloc((size_t)nw, sizeof *maps);
  qvg_htab *glob = NULL;
  qv_status st = c.tabs && c.aggs && c.st && c.errs && maps
                     ? QV_OK
                     : qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  if (st == QV_OK) {
    qv_pool_run(pool, nw, pre_task, &c);
    st = qv_pool_check(pool, err);
  }
  for (int32_t w = 0; w < nw && st == QV_OK; w++)
    if (c.st[w] != QV_OK) {
      st = c.st[w];
      if (err) *err = c.errs[w];
    }
  bool stopped = __atomic_load_n(&c.stop, __ATOMIC_RELAXED) != 0;
  if (st == QV_OK && !stopped) st = qvg_htab_new(kcols, nk, &glob, err);
  for (int32_t w = 0; w < nw && st == QV_OK && !stopped; w++) {
    int64_t n = qvg_htab_groups(c.tabs[w]);
    maps[w] = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
    st = maps[w] ? qvg_htab_merge(glob, c.tabs[w], maps[w], err)
                 : qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  }
  int64_t ng = glob ? qvg_htab_groups(glob) : 0;
  if (st == QV_OK && !stopped) {
    *first_chunk = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
    *first_row = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
    if (!*first_chunk || !*first_row) st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
    else qvg_htab_firsts(glob, *first_chunk, *first_row);
  }
  for (int32_t i = 0; i < n_aggs && st == QV_OK && !stopped; i++) {
    st = qvg_agg_reserve(s->aggs[i], ng, err);
    for (int32_t w = 0; w < nw && st == QV_OK; w++)
      st = qvg_agg_merge(s->aggs[i], c.aggs[w][i], maps[w], qvg_htab_groups(c.tabs[w]), err);
  }
  if (st == QV_OK && !stopped) {
    *n_groups = ng;
    *done = true;
  }
  for (int32_t w = 0; w < nw; w++) {
    if (c.tabs) qvg_htab_free(c.tabs[w]);
    for (int32_t i = 0; c.aggs && c.aggs[w] && i < n_aggs; i++) qvg_agg_free(c.aggs[w][i]);
    if (c.aggs) free(c.aggs[w]);
    if (maps) free(maps[w]);
  }
  qvg_htab_free(glob);
  free(c.tabs);
  free(c.aggs);
  free(c.st);
  free(c.errs);
  free(maps);
  return st;
}

qv_status qvg_group_by_memory(qv_table *t, const char *const *keys, int32_t n_keys,
                              const qv_aggregate *aggs, int32_t n_aggs,
                              const qv_group_by_options *opts, qv_table **out, qv_error *err) {
  if (t == NULL || out == NULL || n_keys < 0 || n_aggs < 0 || (n_keys && !keys) ||
      (n_aggs && !aggs))
    return qv_error_set(err, QV_EARG, "group-by: needs a table, keys and aggregates");
  qv_group_by_options o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  const qv_schema *schema = qv_table_schema(t);
  gb_state s;
  memset(&s, 0, sizeof s);
  s.table = t;
  qv_status st = QV_OK;
  int32_t max_need = n_keys + 2 * n_aggs;
  s.need = malloc(sizeof(int32_t) * (size_t)(max_need ? max_need : 1));
  s.key_pos = malloc(sizeof(int32_t) * (size_t)(n_keys ? n_keys : 1));
  s.x_pos = malloc(sizeof(int32_t) * (size_t)(n_aggs ? n_aggs : 1));
  s.y_pos = malloc(sizeof(int32_t) * (size_t)(n_aggs ? n_aggs : 1));
  s.aggs = calloc((size_t)(n_aggs ? n_aggs : 1), sizeof *s.aggs);
  s.labels = calloc((size_t)(n_aggs ? n_aggs : 1), sizeof *s.labels);
  s.outs = calloc((size_t)(n_keys + n_aggs ? n_keys + n_aggs : 1), sizeof *s.outs);
  const char **names = calloc((size_t)(n_keys + n_aggs ? n_keys + n_aggs : 1), sizeof *names);
  if (!s.need || !s.key_pos || !s.x_pos || !s.y_pos || !s.aggs || !s.labels || !s.outs || !names)
    st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  /* Resolve the columns. */
  for (int32_t i = 0; i < n_keys && st == QV_OK; i++) {
    int32_t c;
    char what[64];
    snprintf(what, sizeof what, "group-by key %d", i + 1);
    st = find_col(schema, keys[i], what, &c, err);
    if (st == QV_OK) s.key_pos[i] = need_col(&s, c);
    for (int32_t j = 0; j < i && st == QV_OK; j++)
      if (strcmp(keys[j], keys[i]) == 0)
        st = qv_error_set(err, QV_EARG, "group-by: key '%s' given twice", keys[i]);
  }
  bool holistic = false;
  for (int32_t i = 0; i < n_aggs && st == QV_OK; i++) {
    char label[192];
    agg_label(&aggs[i], label, sizeof label);
    s.labels[i] = strdup(aggs[i].name ? aggs[i].name : label);
    if (!s.labels[i]) {
      st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
      break;
    }
    s.x_pos[i] = s.y_pos[i] = -1;
    const qv_type *tx = NULL, *ty = NULL;
    int32_t c;
    if (aggs[i].kind != QV_AGG_COUNT_ALL) {
      st = find_col(schema, aggs[i].column, label, &c, err);
      if (st != QV_OK) break;
      s.x_pos[i] = need_col(&s, c);
      tx = qv_schema_field(schema, c)->type;
      if (aggs[i].kind == QV_AGG_CORR || aggs[i].kind == QV_AGG_COVAR ||
          aggs[i].kind == QV_AGG_COVAR_POP) {
        st = find_col(schema, aggs[i].column2, label, &c, err);
        if (st != QV_OK) break;
        s.y_pos[i] = need_col(&s, c);
        ty = qv_schema_field(schema, c)->type;
      }
    }
    st = qvg_agg_new(&aggs[i], tx, ty, label, &s.aggs[i], err);
    if (st == QV_OK && qvg_agg_is_holistic(s.aggs[i])) holistic = true;
  }
  for (int32_t i = 0; i < n_keys + n_aggs && st == QV_OK; i++) {
    names[i] = i < n_keys ? keys[i] : s.labels[i - n_keys];
    for (int32_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0) {
        st = qv_error_set(err, QV_EARG,
                          "group-by: two output columns are named '%s' (name one with AS)",
                          names[i]);
        break;
      }
  }
  if (st == QV_OK && n_keys > 0) { /* checked here, used once the columns are loaded */
    qv_type **kt = malloc(sizeof(qv_type *) * (size_t)n_keys);
    if (!kt) st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
    for (int32_t i = 0; i < n_keys && st == QV_OK; i++)
      kt[i] = qv_schema_field(schema, s.need[s.key_pos[i]])->type;
    if (st == QV_OK) {
      st = qv_grouper_new(kt, n_keys, &s.grouper, err);
      if (st != QV_OK) qv_error_prefix(err, st, "group-by keys: ");
    }
    free(kt);
  }
  if (st == QV_OK) st = qvc_columns_load(&s.cols, t, s.need, s.n_need, err);
  /* Batches are dropped from the process once read (qv_table_batch_done)
   * only when what the run reads passes half the memory budget: then
   * resident memory stays flat as the input grows; below it the pages stay,
   * as a buffer manager keeps what fits, and the next run over the same
   * table does not fault them in again. */
  if (st == QV_OK) {
    int64_t bytes = 0;
    for (int32_t i = 0; i < s.cols.n; i++)
      for (int64_t c = 0; c < s.cols.columns[i].n_chunks; c++)
        bytes += qv_array_buffer_bytes(s.cols.columns[i].chunks[c]);
    if (o.memory_limit <= 0 || bytes <= o.memory_limit / 2) s.table = NULL;
  }
  direct_map dm;
  memset(&dm, 0, sizeof dm);
  bool direct = false;
  const qv_chunked_column **kcols = NULL;
  if (st == QV_OK && n_keys > 0) {
    kcols = malloc(sizeof(*kcols) * (size_t)n_keys);
    if (!kcols) st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
    for (int32_t i = 0; i < n_keys && st == QV_OK; i++) kcols[i] = &s.cols.columns[s.key_pos[i]];
  }
  /* Group ids of every row (table order), then the aggregates. */
  int64_t total = qv_table_num_rows(t), nb = qv_table_num_batches(t);
  int64_t ng = n_keys ? 0 : 1, max_batch = 0;
  int64_t *boff = malloc(sizeof(int64_t) * (size_t)(nb + 1));
  if (!boff && st == QV_OK) st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
  if (boff) {
    boff[0] = 0;
    for (int64_t b = 0; b < nb; b++) {
      int64_t len = qv_table_batch_rows(t, b);
      if (len > max_batch) max_batch = len;
      boff[b + 1] = boff[b] + len;
    }
  }
  int threads = o.threads > 0 ? o.threads : (total >= GB_PARALLEL_MIN_ROWS ? qv_cpu_count() : 1);
  if (threads > 64) threads = 64;
  bool small_batches = max_batch <= (int64_t)UINT32_MAX; /* rows in a batch are uint32 */
  if (!small_batches) threads = 1;
  int32_t n_parts = 1;
  while (n_parts < threads) n_parts *= 2;
  qv_pool *pool = NULL;
  if (st == QV_OK) st = qv_pool_new(threads, &pool, err);
  /* The direct path holds every row's slot (and a string key's codes, 2
   * bytes a row) at once: past the budget the keys take the hash path,
   * whose pre-aggregation holds a batch's per thread (few groups), or the
   * run spills. */
  bool direct_fits = true;
  if (st == QV_OK && n_keys > 0 && o.memory_limit > 0) {
    int64_t per_row = QVG_ROW_BYTES_IDS;
    for (int32_t i = 0; i < n_keys; i++)
      if (!direct_key_type(kcols[i]->type->id)) per_row += (int64_t)sizeof(uint16_t);
    direct_fits = total <= o.memory_limit / per_row;
  }
  if (st == QV_OK && n_keys > 0 && direct_fits)
    direct = direct_plan(pool, s.table, kcols, n_keys, total, boff, nb, &dm);
  bool hashp = st == QV_OK && n_keys > 0 && !direct && small_batches;
  for (int32_t i = 0; i < n_keys && hashp; i++) hashp = qvg_hash_eligible(kcols[i]->type);
  int64_t *hfirst_chunk = NULL, *hfirst_row = NULL;
  qvg_parts parts;
  memset(&parts, 0, sizeof parts);
  /* Few groups for many rows (estimated on a sample of the first batch)
   * and mergeable aggregates: thread-local pre-aggregation. */
  bool mergeable = st == QV_OK;
  for (int32_t i = 0; i < n_aggs && mergeable; i++) mergeable = qvg_agg_mergeable(s.aggs[i]);
  bool pre = mergeable && hashp && threads > 1 && nb >= 2;
  double distinct_frac = 0;
  if (st == QV_OK && hashp && threads > 1 && nb >= 1) {
    int64_t sample = boff[1] < PRE_SAMPLE_ROWS ? boff[1] : PRE_SAMPLE_ROWS;
    int64_t dist = qvg_hash_sample_distinct(kcols, n_keys, 0, sample);
    pre = pre && dist >= 0 && dist * 100 <= sample * PRE_MAX_DISTINCT_PCT;
    /* a partitioned table is sized for the sample's share of new keys
     * when nearly all are new (else it grows as groups come) */
    if (dist >= 0 && sample > 0 && dist * 100 > sample * PRE_MAX_DISTINCT_PCT)
      distinct_frac = (double)dist / (double)sample;
  }
  bool pre_done = false;
  if (pre)
    st = preaggregate(&s, pool, threads, kcols, n_keys, boff, nb, max_batch, n_aggs, &ng,
                      &hfirst_chunk, &hfirst_row, true, &pre_done, err);
  /* The per-row state of the paths below (QVG_ROW_BYTES_*) counts against
   * the budget before it is allocated: past it the caller spills instead
   * (groupby_spill.c), rather than the run holding ~17 bytes a row of a
   * table larger than memory. */
  if (st == QV_OK && !pre_done && o.memory_limit > 0) {
    int64_t per_row = QVG_ROW_BYTES_IDS + (hashp ? QVG_ROW_BYTES_HASH : 0) +
                      (holistic ? QVG_ROW_BYTES_HOLISTIC : 0);
    if (total > o.memory_limit / per_row && hashp && mergeable && !holistic)
      /* one batch at a time on one thread: the per-row state of a batch only */
      st = preaggregate(&s, pool, 1, kcols, n_keys, boff, nb, max_batch, n_aggs, &ng, &hfirst_chunk,
                        &hfirst_row, false, &pre_done, err);
    else if (total > o.memory_limit / per_row)
      st = qv_error_set(err, QV_ENOMEM,
                        "group-by: %" PRId64 " rows need about %" PRId64
                        " bytes of row state, more than the memory limit of %" PRId64 " bytes",
                        total, total * per_row, o.memory_limit);
  }
  if (st == QV_OK && !pre_done) {
    s.ids = malloc(sizeof(uint32_t) * (size_t)(total ? total : 1));
    if (!s.ids)
      st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory (%" PRId64 " rows)", total);
  }
  if (st == QV_OK && hashp && !pre_done) {
    st = qvg_hash_group(pool, n_parts, distinct_frac, kcols, n_keys, boff, nb, s.ids, &hfirst_chunk,
                        &hfirst_row, &ng, &parts, err);
  } else if (!pre_done) {
    for (int64_t b = 0; b < nb && st == QV_OK; b++) {
      int64_t len = boff[b + 1] - boff[b];
      uint32_t *ids = s.ids + boff[b];
      if (direct) {
        if (b == 0) { /* every batch's slots on all cores, then numbered in order */
          dslot_ctx dc = {&dm, s.table, kcols, boff, s.ids};
          qv_pool_run(pool, nb, direct_slot_task, &dc);
          st = qv_pool_check(pool, err);
          if (st != QV_OK) break;
          for (int32_t k = 0; k < n_keys; k++) { /* string keys' codes: in the slots now */
            free(dm.codes[k]);
            dm.codes[k] = NULL;
          }
        }
        st = direct_assign(&dm, b, len, ids, err);
        ng = dm.n_groups;
      } else if (n_keys) {
        qv_array **kc = calloc((size_t)n_keys, sizeof(qv_array *));
        if (!kc) {
          st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
          break;
        }
        for (int32_t i = 0; i < n_keys && st == QV_OK; i++)
          st = qvg_normalize_floats(s.cols.columns[s.key_pos[i]].chunks[b], &kc[i], err);
        if (st == QV_OK) st = qv_grouper_consume(s.grouper, kc, ids, err);
        for (int32_t i = 0; i < n_keys; i++)
          if (kc[i]) qv_array_unref(kc[i]);
        free(kc);
        if (st == QV_OK) ng = qv_grouper_num_groups(s.grouper);
      } else {
        memset(ids, 0, sizeof(uint32_t) * (size_t)len);
      }
    }
  }
  int64_t per_group = 32;
  for (int32_t i = 0; i < n_aggs && st == QV_OK; i++) per_group += qvg_agg_group_bytes(s.aggs[i]);
  if (st == QV_OK && o.memory_limit > 0) {
    /* the rows' group ids: all of them, or (pre-aggregation) a batch's per thread */
    int64_t rows_bytes =
        pre_done ? (int64_t)threads * max_batch * QVG_ROW_BYTES_IDS : total * (holistic ? 20 : 4);
    int64_t bytes = ng * per_group + rows_bytes;
    if (bytes > o.memory_limit)
      st = qv_error_set(err, QV_ENOMEM,
                        "group-by: %" PRId64 " groups need about %" PRId64
                        " bytes of state, more than the memory limit of %" PRId64 " bytes",
                        ng, bytes, o.memory_limit);
  }
  if (st == QV_OK && pre_done && o.progress) o.progress(o.progress_ctx, total, total);
  for (int32_t i = 0; i < n_aggs && st == QV_OK && !pre_done; i++)
    st = qvg_agg_reserve(s.aggs[i], ng, err);
  if (st == QV_OK && !pre_done)
    st = update_aggregates(&s, pool, n_parts, &parts, boff, nb, n_aggs, ng, &o, total, err);
  /* Group the rows for the holistic aggregates (counting sort on ids). */
  bool need_rows = false; /* median/quantile alone need only start[] */
  for (int32_t i = 0; i < n_aggs && holistic; i++) need_rows |= qvg_agg_needs_rows(s.aggs[i]);
  if (st == QV_OK && holistic) {
    s.rows.start = calloc((size_t)(ng + 1), sizeof(int64_t));
    if (need_rows) {
      s.rows.chunk = malloc(sizeof(int32_t) * (size_t)(total ? total : 1));
      s.rows.row = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
    }
    s.rows.ids = s.ids;
    if (!s.rows.start || (need_rows && (!s.rows.chunk || !s.rows.row)))
      st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory (%" PRId64 " rows)", total);
    if (st == QV_OK) {
      for (int64_t i = 0; i < total; i++) s.rows.start[s.ids[i] + 1]++;
      for (int64_t g = 0; g < ng; g++) s.rows.start[g + 1] += s.rows.start[g];
    }
    if (st == QV_OK && need_rows) {
      int64_t *fill = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
      if (!fill) st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
      else {
        memcpy(fill, s.rows.start, sizeof(int64_t) * (size_t)ng);
        int64_t r = 0;
        for (int64_t b = 0; b < nb; b++) {
          int64_t len = qv_table_batch_rows(t, b);
          for (int64_t i = 0; i < len; i++, r++) {
            int64_t e = fill[s.ids[r]]++;
            s.rows.chunk[e] = (int32_t)b;
            s.rows.row[e] = i;
          }
        }
        free(fill);
      }
    }
  }
  /* Results. */
  if (st == QV_OK && n_keys && !direct && !hashp) st = qv_grouper_uniques(s.grouper, s.outs, err);
  for (int32_t i = 0; i < n_keys && (direct || hashp) && st == QV_OK; i++) {
    st = ng == 0 ? qv_array_nulls((qv_type *)kcols[i]->type, 0, &s.outs[i], err)
                 : qv_array_take_chunked(kcols[i]->chunks, kcols[i]->n_chunks,
                                         direct ? dm.first_chunk : hfirst_chunk,
                                         direct ? dm.first_row : hfirst_row, ng, &s.outs[i], err);
    if (st == QV_OK && hashp) { /* the canonical float, as the grouper keeps it */
      qv_array *norm = NULL;
      st = qvg_normalize_floats(s.outs[i], &norm, err);
      if (st == QV_OK) {
        qv_array_unref(s.outs[i]);
        s.outs[i] = norm;
      }
    }
  }
  for (int32_t i = 0; i < n_aggs && st == QV_OK; i++) {
    qv_chunked_column *xc = s.x_pos[i] >= 0 ? &s.cols.columns[s.x_pos[i]] : NULL;
    st = qvg_agg_finish(s.aggs[i], ng, xc ? xc->chunks : NULL, xc ? xc->n_chunks : 0,
                        holistic ? &s.rows : NULL, pool, &s.outs[n_keys + i], err);
  }
  if (st == QV_OK && o.sort && n_keys > 0 && ng > 1) {
    qv_sort_key *sk = calloc((size_t)n_keys, sizeof *sk);
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)ng);
    if (!sk || !perm) st = qv_error_set(err, QV_ENOMEM, "group-by: out of memory");
    for (int32_t i = 0; i < n_keys && st == QV_OK; i++) {
      sk[i].column.type = s.outs[i]->type;
      sk[i].column.chunks = &s.outs[i];
      sk[i].column.n_chunks = 1;
      sk[i].null_placement = QV_NULLS_AT_END;
    }
    if (st == QV_OK) st = qv_sort_indices(sk, n_keys, perm, err);
    for (int32_t i = 0; i < n_keys + n_aggs && st == QV_OK; i++) {
      qv_array *sorted = NULL;
      st = qv_array_take(s.outs[i], perm, ng, &sorted, err);
      if (st == QV_OK) {
        qv_array_unref(s.outs[i]);
        s.outs[i] = sorted;
      }
    }
    free(sk);
    free(perm);
  }
  if (st == QV_OK) st = qvg_build_table(names, s.outs, n_keys + n_aggs, ng, out, err);
  /* Cleanup. */
  direct_free(&dm);

  free(boff);
  free(hfirst_chunk);
  free(hfirst_row);
  qvg_parts_free(&parts);
  qv_pool_free(pool);
  free(kcols);
  for (int32_t i = 0; i < n_keys + n_aggs && s.outs; i++)
    if (s.outs[i]) qv_array_unref(s.outs[i]);
  for (int32_t i = 0; i < n_aggs && s.aggs; i++) qvg_agg_free(s.aggs[i]);
  for (int32_t i = 0; i < n_aggs && s.labels; i++) free(s.labels[i]);
  qvc_columns_reset(&s.cols);
  qv_grouper_free(s.grouper);
  free(s.need);
  free(s.key_pos);
  free(s.x_pos);
  free(s.y_pos);
  free(s.aggs);
  free(s.labels);
  free(s.outs);
  free(s.ids);
  free(s.rows.start);
  free(s.rows.chunk);
  free(s.rows.row);
  free(names);
  return st;
}
