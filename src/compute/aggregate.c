/*
 * aggregate.c — compute layer: the aggregate functions of the group-by
 * (quiver/compute.h, driven by groupby.c). Each aggregate keeps per-group
 * state in plain arrays indexed by group id, and is updated a batch at a
 * time: the batch's input column is converted once into a scratch array
 * (doubles or int64s plus a validity byte per row), then one loop per
 * aggregate kind runs over (group id, value) — never a function pointer
 * per row.
 *
 * Streaming aggregates (count, sum, mean, var/stddev with Welford's update,
 * covar/corr as shifted sums, below, min/max, first/last, any/all) keep a
 * few words per group. min/max/first/last remember the (chunk, row)
 * of the chosen value and gather the results from the input at the end,
 * so they have exactly the input's type (strings, dates...). count
 * distinct runs a second grouper over (group id, value). Holistic
 * aggregates (median, quantile, top_k/bottom_k, list) read every row of a
 * group at the end through the rows the driver grouped (qvg_rows).
 *
 * For the parallel driver an update can take a selection of a batch's
 * rows with the caller's scratch (one per thread, each on its own groups),
 * and the states of the streaming aggregates merge (qvg_agg_merge:
 * thread-local pre-aggregation; variances and co-moments by Chan et al.'s
 * pairwise update).
 *
 * Floats order as DuckDB orders them: NaN above every number, -0.0 equal
 * to 0.0; nulls are skipped except by count(*), first, last and list.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compute/groupby_internal.h"
#include "core/parallel_internal.h"

typedef enum vclass { VC_INT, VC_UINT, VC_FLOAT, VC_BOOL, VC_BYTES, VC_OTHER } vclass;

struct qvg_agg {
  qv_agg_kind kind;
  qv_type *type;  /* the input's type (a reference; NULL for count(*)) */
  qv_type *type2; /* corr / covar: the second input's type (a reference) */
  char label[192];
  double q;
  int64_t k;
  vclass vc, vc2;
  bool temporal; /* VC_INT from a date/time/timestamp/duration */
  int64_t cap;
  /* per-group state (only what the kind needs is allocated) */
  int64_t *cnt;
  int64_t *iacc;   /* integer sum; int/uint min/max */
  double *m, *m2;  /* sum or mean, second moment; float min/max in m */
  double *co;      /* covar / corr: CO_WORDS per group (CO_* below) */
  int32_t *pchunk; /* min/max/first/last: the chosen row */
  int64_t *prow;
  uint8_t *has;         /* min/max: a valid value seen; any/all: bit0 seen, bit1 value */
  const uint8_t **bptr; /* byte min/max: the chosen value */
  int64_t *blen;
  bool stream_k;   /* top_k/bottom_k of numbers, k <= STREAM_K_MAX: kept per group */
  double *kd;      /* k best values per group (floats) */
  int64_t *ki;     /* k best values per group (integers) */
  int32_t *kchunk; /* their rows */
  int64_t *krow;
  qv_grouper *distinct; /* count_distinct: over (group id, value) */
  qv_type *u32;
  int64_t n_distinct;
  qvg_scratch own; /* batch scratch of the single-threaded updates */
};

static const char *const KIND_NAMES[QV_AGG_KIND_COUNT] = {
    "count",    "count", "count_distinct", "sum",       "mean",       "min",    "max",      "first",
    "last",     "var",   "var_pop",        "stddev",    "stddev_pop", "median", "quantile", "top_k",
    "bottom_k", "corr",  "covar",          "covar_pop", "any",        "all",    "list"};

const char *qv_agg_kind_name(qv_agg_kind kind) {
  if ((int)kind < 0 || kind >= QV_AGG_KIND_COUNT) return "?";
  return KIND_NAMES[kind];
}

#define STREAM_K_MAX 16

bool qvg_agg_is_holistic(const qvg_agg *a) { return qvg_kind_is_holistic(a->kind) && !a->stream_k; }

bool qvg_agg_needs_rows(const qvg_agg *a) {
  return qvg_agg_is_holistic(a) && a->kind != QV_AGG_MEDIAN && a->kind != QV_AGG_QUANTILE;
}

bool qvg_kind_is_holistic(qv_agg_kind kind) {
  return kind == QV_AGG_MEDIAN || kind == QV_AGG_QUANTILE || kind == QV_AGG_TOP_K ||
         kind == QV_AGG_BOTTOM_K || kind == QV_AGG_LIST;
}

static vclass class_of(const qv_type *t, bool *temporal) {
  *temporal = false;
  switch (t->id) {
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64: return VC_INT;
    case QV_DATE32:
    case QV_DATE64:
    case QV_TIME32:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DURATION: *temporal = true; return VC_INT;
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64: return VC_UINT;
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE: return VC_FLOAT;
    case QV_BOOL: return VC_BOOL;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
    case QV_FIXED_SIZE_BINARY: return VC_BYTES;
    default: return VC_OTHER;
  }
}

/* ------------------------------------------------------------------------ */
/* Reading values                                                            */

static inline int64_t val_int(const qv_array *a, int64_t i) {
  if (a->type->id == QV_BOOL) return qv_bit_get(a->buffers[1]->data, a->offset + i) ? 1 : 0;
  int32_t w = qv_type_bit_width(a->type) / 8;
  bool u = a->type->id == QV_UINT8 || a->type->id == QV_UINT16 || a->type->id == QV_UINT32 ||
           a->type->id == QV_UINT64;
  return qv_load_int(a->buffers[1]->data, w, u, a->offset + i);
}

static inline double val_float(const qv_array *a, int64_t i) {
  const uint8_t *p = a->buffers[1]->data;
  int64_t k = a->offset + i;
  switch (a->type->id) {
    case QV_HALF_FLOAT: {
      uint16_t h;
      memcpy(&h, p + k * 2, 2);
      return qv_half_to_double(h);
    }
    case QV_FLOAT: {
      float f;
      memcpy(&f, p + k * 4, 4);
      return f;
    }
    default: {
      double d;
      memcpy(&d, p + k * 8, 8);
      return d;
    }
  }
}

static inline double val_double(const qv_array *a, vclass vc, int64_t i) {
  if (vc == VC_FLOAT) return val_float(a, i);
  if (vc == VC_UINT) return (double)(uint64_t)val_int(a, i);
  return (double)val_int(a, i);
}

/* Bytes of element i (binary-like types); false when out of bounds. */
static inline bool val_bytes(const qv_array *a, int64_t i, const uint8_t **p, int64_t *len) {
  switch (a->type->id) {
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: {
      int32_t l;
      if (!qv_array_view_bytes(a, i, p, &l)) return false;
      *len = l;
      return true;
    }
    case QV_FIXED_SIZE_BINARY:
      *p = a->buffers[1]->data + (a->offset + i) * a->type->byte_width;
      *len = a->type->byte_width;
      return true;
    default: {
      int64_t s = qv_array_offset_at(a, i), e = qv_array_offset_at(a, i + 1);
      if (s < 0 || e < s || a->buffers[2] == NULL || e > a->buffers[2]->size) return false;
      *p = a->buffers[2]->data + s;
      *len = e - s;
      return true;
    }
  }
}

/* DuckDB's float order: NaN above everything, -0.0 == 0.0. */
static inline int cmp_double(double a, double b) {
  bool na = isnan(a), nb = isnan(b);
  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  return a < b ? -1 : (a > b ? 1 : 0);
}

static inline int cmp_bytes(const uint8_t *a, int64_t la, const uint8_t *b, int64_t lb) {
  int64_t n = la < lb ? la : lb;
  int c = n ? memcmp(a, b, (size_t)n) : 0;
  if (c) return c < 0 ? -1 : 1;
  return la < lb ? -1 : (la > lb ? 1 : 0);
}

/* ------------------------------------------------------------------------ */
/* Construction                                                              */

static bool needs_number(qv_agg_kind k) {
  return k == QV_AGG_SUM || k == QV_AGG_MEAN || k == QV_AGG_VAR || k == QV_AGG_VAR_POP ||
         k == QV_AGG_STDDEV || k == QV_AGG_STDDEV_POP || k == QV_AGG_MEDIAN ||
         k == QV_AGG_QUANTILE || k == QV_AGG_CORR || k == QV_AGG_COVAR || k == QV_AGG_COVAR_POP;
}

static bool is_two_input(qv_agg_kind k) {
  return k == QV_AGG_CORR || k == QV_AGG_COVAR || k == QV_AGG_COVAR_POP;
}

static qv_status type_error(const char *label, const char *what, const qv_type *t, qv_error *err) {
  char tn[128];
  qv_type_to_string(t, tn, sizeof tn);
  return qv_error_set(err, QV_ETYPE, "%s: %s is not defined for a column of type %s", label, what,
                      tn);
}

qv_status qvg_agg_new(const qv_aggregate *spec, const qv_type *type, const qv_type *type2,
                      const char *label, qvg_agg **out, qv_error *err) {
  if ((int)spec->kind < 0 || spec->kind >= QV_AGG_KIND_COUNT)
    return qv_error_set(err, QV_EARG, "%s: unknown aggregate kind %d", label, (int)spec->kind);
  qvg_agg *a = calloc(1, sizeof *a);
  if (!a) return qv_error_set(err, QV_ENOMEM, "%s: out of memory", label);
  a->kind = spec->kind;
  if (type) a->type = qv_type_ref((qv_type *)type);
  if (type2) a->type2 = qv_type_ref((qv_type *)type2);
  snprintf(a->label, sizeof a->label, "%s", label);
  a->q = spec->q;
  a->k = spec->k;
  qv_agg_kind k = spec->kind;
  qv_status st = QV_OK;
  if (k != QV_AGG_COUNT_ALL) {
    a->vc = class_of(type, &a->temporal);
    const char *name = KIND_NAMES[k];
    if (needs_number(k) &&
        (a->temporal || !(a->vc == VC_INT || a->vc == VC_UINT || a->vc == VC_FLOAT ||
                          (k == QV_AGG_SUM && a->vc == VC_BOOL))))
      st = type_error(label, name, type, err);
    if ((k == QV_AGG_MIN || k == QV_AGG_MAX || k == QV_AGG_TOP_K || k == QV_AGG_BOTTOM_K) &&
        a->vc == VC_OTHER)
      st = type_error(label, name, type, err);
    if ((k == QV_AGG_ANY || k == QV_AGG_ALL) && a->vc != VC_BOOL)
      st = type_error(label, name, type, err);
    if (st == QV_OK && is_two_input(k)) {
      bool t2;
      a->vc2 = type2 ? class_of(type2, &t2) : VC_OTHER;
      if (!type2 || t2 || !(a->vc2 == VC_INT || a->vc2 == VC_UINT || a->vc2 == VC_FLOAT))
        st = type2 ? type_error(label, name, type2, err)
                   : qv_error_set(err, QV_EARG, "%s: needs two columns", label);
    }
    if (st == QV_OK && k == QV_AGG_QUANTILE && !(spec->q >= 0 && spec->q <= 1))
      st = qv_error_set(err, QV_EARG, "%s: the quantile must be between 0 and 1, not %g", label,
                        spec->q);
    if (st == QV_OK && (k == QV_AGG_TOP_K || k == QV_AGG_BOTTOM_K) && spec->k < 1)
      st = qv_error_set(err, QV_EARG, "%s: k must be at least 1, not %" PRId64, label, spec->k);
    if (st == QV_OK && (k == QV_AGG_TOP_K || k == QV_AGG_BOTTOM_K) && spec->k <= STREAM_K_MAX &&
        (a->vc == VC_FLOAT || a->vc == VC_INT || a->vc == VC_UINT || a->vc == VC_BOOL))
      a->stream_k = true;
    if (st == QV_OK && k == QV_AGG_COUNT_DISTINCT) {
      a->u32 = qv_type_new(QV_UINT32);
      qv_type *types[2] = {a->u32, (qv_type *)type};
      if (!a->u32) st = qv_error_set(err, QV_ENOMEM, "%s: out of memory", label);
      else st = qv_grouper_new(types, 2, &a->distinct, err);
      if (st != QV_OK) qv_error_prefix(err, st, "%s: ", label);
    }
  }
  if (st != QV_OK) {
    qvg_agg_free(a);
    return st;
  }
  *out = a;
  return QV_OK;
}

void qvg_agg_free(qvg_agg *a) {
  if (!a) return;
  if (a->type) qv_type_unref(a->type);
  if (a->type2) qv_type_unref(a->type2);
  free(a->cnt);
  free(a->iacc);
  free(a->m);
  free(a->m2);
  free(a->co);
  free(a->pchunk);
  free(a->prow);
  free(a->has);
  free(a->bptr);
  free(a->blen);
  free(a->kd);
  free(a->ki);
  free(a->kchunk);
  free(a->krow);
  qv_grouper_free(a->distinct);
  if (a->u32) qv_type_unref(a->u32);
  qvg_scratch_free(&a->own);
  free(a);
}

/* Which per-group arrays a kind uses. */
enum { F_CNT = 1, F_IACC = 2, F_M = 4, F_M2 = 8, F_CO = 16, F_POS = 32, F_HAS = 64, F_BYTES = 128 };

/* covar / corr state: the group's first pair (kx, ky) as shifts, and the
 * sums of the deviations from them, dx = x - kx and dy = y - ky: Σdx, Σdy,
 * Σdx², Σdy², Σdx dy, on one stretch of memory per group. A row costs a
 * few additions (no division, one group's words together), the sums are
 * the same whatever the batches (one thread or several, spilled or not,
 * give the same bits), and shifting by a value of the group keeps the
 * cancellation of Σdx² - (Σdx)²/n small as long as the first value is not
 * far out among the group's (the shifted-data algorithm). */
enum { CO_KX, CO_KY, CO_SX, CO_SY, CO_SXX, CO_SYY, CO_SXY, CO_WORDS };

/* The co-moments of one group's sums over n pairs: means, M2x, M2y, C. */
static inline void co_moments(const double *w, double n, double *mx, double *my, double *m2x,
                              double *m2y, double *cxy) {
  double sx = w[CO_SX], sy = w[CO_SY];
  *mx = w[CO_KX] + sx / n;
  *my = w[CO_KY] + sy / n;
  *m2x = w[CO_SXX] - sx * sx / n;
  *m2y = w[CO_SYY] - sy * sy / n;
  *cxy = w[CO_SXY] - sx * sy / n;
  if (*m2x < 0) *m2x = 0; /* rounding: never below zero */
  if (*m2y < 0) *m2y = 0;
}

static int fields_of(const qvg_agg *a) {
  switch (a->kind) {
    case QV_AGG_COUNT_ALL:
    case QV_AGG_COUNT:
    case QV_AGG_COUNT_DISTINCT: return F_CNT;
    case QV_AGG_SUM: return F_CNT | (a->vc == VC_FLOAT ? F_M : F_IACC);
    case QV_AGG_MEAN: return F_CNT | F_M;
    case QV_AGG_VAR:
    case QV_AGG_VAR_POP:
    case QV_AGG_STDDEV:
    case QV_AGG_STDDEV_POP: return F_CNT | F_M | F_M2;
    case QV_AGG_CORR:
    case QV_AGG_COVAR:
    case QV_AGG_COVAR_POP: return F_CNT | F_CO;
    case QV_AGG_MIN:
    case QV_AGG_MAX:
      return F_POS | F_HAS | (a->vc == VC_FLOAT ? F_M : (a->vc == VC_BYTES ? F_BYTES : F_IACC));
    case QV_AGG_FIRST:
    case QV_AGG_LAST: return F_POS | F_HAS;
    case QV_AGG_ANY:
    case QV_AGG_ALL: return F_HAS;
    case QV_AGG_TOP_K:
    case QV_AGG_BOTTOM_K: return a->stream_k ? F_CNT : 0;
    default: return 0; /* holistic */
  }
}

int64_t qvg_agg_group_bytes(const qvg_agg *a) {
  int f = fields_of(a);
  int64_t b = 0;
  if (f & F_CNT) b += 8;
  if (f & F_IACC) b += 8;
  if (f & F_M) b += 8;
  if (f & F_M2) b += 8;
  if (f & F_CO) b += 8 * CO_WORDS;
  if (f & F_POS) b += 12;
  if (f & F_HAS) b += 1;
  if (f & F_BYTES) b += 16;
  if (a->kind == QV_AGG_COUNT_DISTINCT) b += 32; /* the distinct grouper's rows, roughly */
  if (a->stream_k) b += a->k * 20;
  return b;
}

static bool grow(void **p, int64_t old_cap, int64_t cap, size_t elem) {
  void *q = realloc(*p, (size_t)cap * elem);
  if (!q) return false;
  memset((char *)q + (size_t)old_cap * elem, 0, (size_t)(cap - old_cap) * elem);
  *p = q;
  return true;
}

qv_status qvg_agg_reserve(qvg_agg *a, int64_t n_groups, qv_error *err) {
  if (n_groups <= a->cap) return QV_OK;
  int64_t cap = a->cap ? a->cap : 64;
  while (cap < n_groups) cap *= 2;
  int f = fields_of(a);
  bool ok = true;
  if (f & F_CNT) ok = ok && grow((void **)&a->cnt, a->cap, cap, sizeof(int64_t));
  if (f & F_IACC) ok = ok && grow((void **)&a->iacc, a->cap, cap, sizeof(int64_t));
  if (f & F_M) ok = ok && grow((void **)&a->m, a->cap, cap, sizeof(double));
  if (f & F_M2) ok = ok && grow((void **)&a->m2, a->cap, cap, sizeof(double));
  if (f & F_CO) ok = ok && grow((void **)&a->co, a->cap, cap, sizeof(double) * CO_WORDS);
  if (f & F_POS) {
    ok = ok && grow((void **)&a->pchunk, a->cap, cap, sizeof(int32_t));
    ok = ok && grow((void **)&a->prow, a->cap, cap, sizeof(int64_t));
  }
  if (f & F_HAS) ok = ok && grow((void **)&a->has, a->cap, cap, 1);
  if (f & F_BYTES) {
    ok = ok && grow((void **)&a->bptr, a->cap, cap, sizeof(uint8_t *));
    ok = ok && grow((void **)&a->blen, a->cap, cap, sizeof(int64_t));
  }
  if (a->stream_k) {
    size_t kk = (size_t)a->k;
    if (a->vc == VC_FLOAT) ok = ok && grow((void **)&a->kd, a->cap, cap, 8 * kk);
    else ok = ok && grow((void **)&a->ki, a->cap, cap, 8 * kk);
    ok = ok && grow((void **)&a->kchunk, a->cap, cap, 4 * kk);
    ok = ok && grow((void **)&a->krow, a->cap, cap, 8 * kk);
  }
  if (!ok)
    return qv_error_set(err, QV_ENOMEM, "%s: out of memory (%" PRId64 " groups)", a->label,
                        n_groups);
  a->cap = cap;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Updates                                                                   */

void qvg_scratch_free(qvg_scratch *s) {
  free(s->fx);
  free(s->fy);
  free(s->ix);
  free(s->vx);
  free(s->vy);
  free(s->dids);
  free(s->g);
  memset(s, 0, sizeof *s);
}

static qv_status scratch(qvg_scratch *s, const char *label, int64_t n, qv_error *err) {
  if (n <= s->cap) return QV_OK;
  int64_t c = n < 1024 ? 1024 : n;
  qvg_scratch_free(s);
  s->fx = malloc(sizeof(double) * (size_t)c);
  s->fy = malloc(sizeof(double) * (size_t)c);
  s->ix = malloc(sizeof(int64_t) * (size_t)c);
  s->vx = malloc((size_t)c);
  s->vy = malloc((size_t)c);
  s->dids = malloc(sizeof(uint32_t) * (size_t)c);
  s->g = malloc(sizeof(uint32_t) * (size_t)c);
  s->cap = c;
  if (!s->fx || !s->fy || !s->ix || !s->vx || !s->vy || !s->dids || !s->g) {
    qvg_scratch_free(s);
    return qv_error_set(err, QV_ENOMEM, "%s: out of memory", label);
  }
  return QV_OK;
}

/* Row of the j-th value of an update: sel[j], or j without a selection. */
#define ROW(j) (sel ? (int64_t)sel[j] : (int64_t)(j))

static void load_valid(const qv_array *x, const uint32_t *sel, int64_t n, uint8_t *v) {
  if (x->n_buffers == 0 || x->buffers[0] == NULL || x->null_count == 0) {
    memset(v, 1, (size_t)n);
    return;
  }
  const uint8_t *bits = x->buffers[0]->data;
  for (int64_t i = 0; i < n; i++) v[i] = qv_bit_get(bits, x->offset + ROW(i));
}

#define QV_LOAD_AS(T, DST)                                                                         \
  do {                                                                                             \
    const T *src_ = (const T *)(const void *)x->buffers[1]->data + x->offset;                      \
    if (sel)                                                                                       \
      for (int64_t i = 0; i < n; i++) out[i] = (DST)src_[sel[i]];                                  \
    else                                                                                           \
      for (int64_t i = 0; i < n; i++) out[i] = (DST)src_[i];                                       \
  } while (0)

static void load_doubles(const qv_array *x, vclass vc, const uint32_t *sel, int64_t n,
                         double *out) {
  switch (x->type->id) {
    case QV_DOUBLE:
      if (sel) QV_LOAD_AS(double, double);
      else memcpy(out, x->buffers[1]->data + x->offset * 8, (size_t)n * 8);
      return;
    case QV_FLOAT: QV_LOAD_AS(float, double); return;
    case QV_INT8: QV_LOAD_AS(int8_t, double); return;
    case QV_INT16: QV_LOAD_AS(int16_t, double); return;
    case QV_INT32: QV_LOAD_AS(int32_t, double); return;
    case QV_INT64: QV_LOAD_AS(int64_t, double); return;
    case QV_UINT8: QV_LOAD_AS(uint8_t, double); return;
    case QV_UINT16: QV_LOAD_AS(uint16_t, double); return;
    case QV_UINT32: QV_LOAD_AS(uint32_t, double); return;
    case QV_UINT64: QV_LOAD_AS(uint64_t, double); return;
    default:
      for (int64_t i = 0; i < n; i++) out[i] = val_double(x, vc, ROW(i));
  }
}

static void load_ints(const qv_array *x, const uint32_t *sel, int64_t n, int64_t *out) {
  switch (x->type->id) {
    case QV_INT8: QV_LOAD_AS(int8_t, int64_t); return;
    case QV_INT16: QV_LOAD_AS(int16_t, int64_t); return;
    case QV_INT32: QV_LOAD_AS(int32_t, int64_t); return;
    case QV_UINT8: QV_LOAD_AS(uint8_t, int64_t); return;
    case QV_UINT16: QV_LOAD_AS(uint16_t, int64_t); return;
    case QV_UINT32: QV_LOAD_AS(uint32_t, int64_t); return;
    case QV_BOOL:
      for (int64_t i = 0; i < n; i++) out[i] = val_int(x, ROW(i));
      return;
    default:
      if (qv_type_bit_width(x->type) == 64 && !sel) {
        memcpy(out, x->buffers[1]->data + x->offset * 8, (size_t)n * 8);
        return;
      }
      for (int64_t i = 0; i < n; i++) out[i] = val_int(x, ROW(i));
  }
}
#undef QV_LOAD_AS

qv_status qvg_normalize_floats(qv_array *x, qv_array **out, qv_error *err) {
  qv_type_id id = x->type->id;
  if (id != QV_FLOAT && id != QV_DOUBLE) {
    *out = qv_array_ref(x);
    return QV_OK;
  }
  int64_t n = x->length, w = id == QV_FLOAT ? 4 : 8;
  qv_buffer *vals = NULL, *valid = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(n * w, &vals, err));
  if (x->buffers[0] != NULL) {
    qv_status st = qv_buffer_alloc((n + 7) / 8, &valid, err);
    if (st != QV_OK) {
      qv_buffer_unref(vals);
      return st;
    }
    qv_bitmap_copy(valid->data, 0, x->buffers[0]->data, x->offset, n);
  }
  const uint8_t *src = x->buffers[1]->data + x->offset * w;
  if (id == QV_DOUBLE) {
    double *d = (double *)vals->data;
    memcpy(d, src, (size_t)(n * 8));
    for (int64_t i = 0; i < n; i++) d[i] = qvg_canon_double(d[i]);
  } else {
    float *f = (float *)vals->data;
    memcpy(f, src, (size_t)(n * 4));
    for (int64_t i = 0; i < n; i++) f[i] = qvg_canon_float(f[i]);
  }
  qv_array *a = qv_array_new(x->type, 2, 0);
  if (!a) {
    qv_buffer_unref(vals);
    if (valid) qv_buffer_unref(valid);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  a->length = n;
  a->null_count = x->null_count;
  a->buffers[0] = valid;
  a->buffers[1] = vals;
  *out = a;
  return QV_OK;
}

static qv_status update_distinct(qvg_agg *a, qvg_scratch *s, const uint32_t *ids, int64_t n,
                                 qv_array *x, qv_error *err) {
  qv_buffer *buf = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(n * 4, &buf, err));
  memcpy(buf->data, ids, (size_t)n * 4);
  qv_array *g = qv_array_new(a->u32, 2, 0);
  if (!g) {
    qv_buffer_unref(buf);
    return qv_error_set(err, QV_ENOMEM, "%s: out of memory", a->label);
  }
  g->length = n;
  g->null_count = 0;
  g->buffers[1] = buf;
  qv_array *xn = NULL;
  qv_status st = qvg_normalize_floats(x, &xn, err);
  if (st != QV_OK) {
    qv_array_unref(g);
    return st;
  }
  qv_array *keys[2] = {g, xn};
  st = qv_grouper_consume(a->distinct, keys, s->dids, err);
  qv_array_unref(g);
  qv_array_unref(xn);
  if (st != QV_OK) return qv_error_prefix(err, st, "%s: ", a->label);
  const uint8_t *v = s->vx;
  for (int64_t i = 0; i < n; i++)
    if ((int64_t)s->dids[i] == a->n_distinct) {
      a->n_distinct++;
      a->cnt[ids[i]] += v[i];
    }
  return QV_OK;
}

bool qvg_agg_parallel_ok(const qvg_agg *a) { return a->kind != QV_AGG_COUNT_DISTINCT; }

qv_status qvg_agg_update(qvg_agg *a, const uint32_t *ids, int64_t n, int32_t c, qv_array *x,
                         const qv_array *y, qv_error *err) {
  return qvg_agg_update_sel(a, &a->own, ids, NULL, n, c, x, y, err);
}

qv_status qvg_agg_update_sel(qvg_agg *a, qvg_scratch *s, const uint32_t *ids_b, const uint32_t *sel,
                             int64_t n, int32_t c, qv_array *x, const qv_array *y, qv_error *err) {
  qv_agg_kind k = a->kind;
  if (qvg_agg_is_holistic(a) || n == 0) return QV_OK;
  QV_RETURN_NOT_OK(scratch(s, a->label, n, err));
  const uint32_t *ids = ids_b;
  if (sel) {
    for (int64_t j = 0; j < n; j++) s->g[j] = ids_b[sel[j]];
    ids = s->g;
  }
  if (k == QV_AGG_COUNT_ALL) {
    for (int64_t i = 0; i < n; i++) a->cnt[ids[i]]++;
    return QV_OK;
  }
  if (x->null_count < 0) qv_array_null_count(x);
  /* sum / mean of a column without nulls, rows in order: straight from the
   * values (no scratch copy, no validity bytes) */
  bool no_nulls = x->n_buffers == 0 || x->buffers[0] == NULL || x->null_count == 0;
  if (!sel && no_nulls && (k == QV_AGG_MEAN || (k == QV_AGG_SUM && a->vc == VC_FLOAT)) &&
      (x->type->id == QV_DOUBLE || x->type->id == QV_INT32 || x->type->id == QV_INT64)) {
    const uint8_t *d = x->buffers[1]->data;
    if (x->type->id == QV_DOUBLE) {
      const double *xv = (const double *)(const void *)d + x->offset;
      for (int64_t i = 0; i < n; i++) a->m[ids[i]] += xv[i];
    } else if (x->type->id == QV_INT32) {
      const int32_t *xv = (const int32_t *)(const void *)d + x->offset;
      for (int64_t i = 0; i < n; i++) a->m[ids[i]] += (double)xv[i];
    } else {
      const int64_t *xv = (const int64_t *)(const void *)d + x->offset;
      for (int64_t i = 0; i < n; i++) a->m[ids[i]] += (double)xv[i];
    }
    for (int64_t i = 0; i < n; i++) a->cnt[ids[i]]++;
    return QV_OK;
  }
  if (!sel && no_nulls && k == QV_AGG_SUM && a->vc == VC_INT && x->type->id == QV_INT32) {
    const int32_t *xv = (const int32_t *)(const void *)x->buffers[1]->data + x->offset;
    for (int64_t i = 0; i < n; i++) {
      uint32_t g = ids[i];
      if (qv_add_overflow(a->iacc[g], (int64_t)xv[i], &a->iacc[g]))
        return qv_error_set(err, QV_ERANGE,
                            "%s: the sum overflows int64 at row %" PRId64
                            " of batch %d (group %u); cast the column to double first",
                            a->label, i, (int)c, g);
      a->cnt[g]++;
    }
    return QV_OK;
  }
  uint8_t *v = s->vx;
  load_valid(x, sel, n, v);
  if (a->stream_k) {
    int64_t kk = a->k;
    bool top = k == QV_AGG_TOP_K;
    if (a->vc == VC_FLOAT) {
      load_doubles(x, a->vc, sel, n, s->fx);
      for (int64_t i = 0; i < n; i++) {
        if (!v[i]) continue;
        uint32_t g = ids[i];
        double xv = s->fx[i], *kv = a->kd + (int64_t)g * kk;
        int32_t *kc = a->kchunk + (int64_t)g * kk;
        int64_t *kr = a->krow + (int64_t)g * kk, m = a->cnt[g];
        /* kv[0..m) is sorted best first; find xv's place */
        if (m == kk) {
          int cw = cmp_double(xv, kv[m - 1]);
          if (top ? cw <= 0 : cw >= 0) continue;
          m--;
        } else {
          a->cnt[g]++;
        }
        int64_t j = m;
        while (j > 0 && (top ? cmp_double(xv, kv[j - 1]) > 0 : cmp_double(xv, kv[j - 1]) < 0)) {
          kv[j] = kv[j - 1], kc[j] = kc[j - 1], kr[j] = kr[j - 1];
          j--;
        }
        kv[j] = xv, kc[j] = c, kr[j] = ROW(i);
      }
    } else {
      load_ints(x, sel, n, s->ix);
      bool u = a->vc == VC_UINT;
      for (int64_t i = 0; i < n; i++) {
        if (!v[i]) continue;
        uint32_t g = ids[i];
        int64_t xv = s->ix[i], *kv = a->ki + (int64_t)g * kk;
        int32_t *kc = a->kchunk + (int64_t)g * kk;
        int64_t *kr = a->krow + (int64_t)g * kk, m = a->cnt[g];
#define QV_KBETTER(p, q)                                                                           \
  (u ? (top ? (uint64_t)(p) > (uint64_t)(q) : (uint64_t)(p) < (uint64_t)(q))                       \
     : (top ? (p) > (q) : (p) < (q)))
        if (m == kk) {
          if (!QV_KBETTER(xv, kv[m - 1])) continue;
          m--;
        } else {
          a->cnt[g]++;
        }
        int64_t j = m;
        while (j > 0 && QV_KBETTER(xv, kv[j - 1])) {
          kv[j] = kv[j - 1], kc[j] = kc[j - 1], kr[j] = kr[j - 1];
          j--;
        }
#undef QV_KBETTER
        kv[j] = xv, kc[j] = c, kr[j] = ROW(i);
      }
    }
    return QV_OK;
  }
  switch (k) {
    case QV_AGG_COUNT:
      for (int64_t i = 0; i < n; i++) a->cnt[ids[i]] += v[i];
      return QV_OK;
    case QV_AGG_COUNT_DISTINCT: return update_distinct(a, s, ids, n, x, err);
    case QV_AGG_SUM:
      if (a->vc == VC_FLOAT) {
        load_doubles(x, a->vc, sel, n, s->fx);
        for (int64_t i = 0; i < n; i++)
          if (v[i]) {
            a->m[ids[i]] += s->fx[i];
            a->cnt[ids[i]]++;
          }
        return QV_OK;
      }
      load_ints(x, sel, n, s->ix);
      for (int64_t i = 0; i < n; i++) {
        if (!v[i]) continue;
        uint32_t g = ids[i];
        int64_t val = s->ix[i];
        bool over = a->vc == VC_UINT && val < 0; /* a uint64 above INT64_MAX */
        if (over || qv_add_overflow(a->iacc[g], val, &a->iacc[g]))
          return qv_error_set(err, QV_ERANGE,
                              "%s: the sum overflows int64 at row %" PRId64
                              " of batch %d (group %u); cast the column to double first",
                              a->label, ROW(i), (int)c, g);
        a->cnt[g]++;
      }
      return QV_OK;
    case QV_AGG_MEAN:
      load_doubles(x, a->vc, sel, n, s->fx);
      for (int64_t i = 0; i < n; i++)
        if (v[i]) {
          a->m[ids[i]] += s->fx[i];
          a->cnt[ids[i]]++;
        }
      return QV_OK;
    case QV_AGG_VAR:
    case QV_AGG_VAR_POP:
    case QV_AGG_STDDEV:
    case QV_AGG_STDDEV_POP:
      load_doubles(x, a->vc, sel, n, s->fx);
      for (int64_t i = 0; i < n; i++) {
        if (!v[i]) continue;
        uint32_t g = ids[i];
        double xv = s->fx[i];
        int64_t cn = ++a->cnt[g];
        double d = xv - a->m[g];
        a->m[g] += d / (double)cn;
        a->m2[g] += d * (xv - a->m[g]);
      }
      return QV_OK;
    case QV_AGG_CORR:
    case QV_AGG_COVAR:
    case QV_AGG_COVAR_POP: {
      load_doubles(x, a->vc, sel, n, s->fx);
      load_doubles(y, a->vc2, sel, n, s->fy);
      load_valid(y, sel, n, s->vy);
      const double *fx = s->fx, *fy = s->fy;
      const uint8_t *vy = s->vy;
      for (int64_t i = 0; i < n; i++) {
        if (!(v[i] & vy[i])) continue;
        uint32_t g = ids[i];
        double xv = fx[i], yv = fy[i], *w = a->co + (size_t)g * CO_WORDS;
        if (a->cnt[g]++ == 0) w[CO_KX] = xv, w[CO_KY] = yv;
        double dx = xv - w[CO_KX], dy = yv - w[CO_KY];
        w[CO_SX] += dx;
        w[CO_SY] += dy;
        w[CO_SXX] += dx * dx;
        w[CO_SYY] += dy * dy;
        w[CO_SXY] += dx * dy;
      }
      return QV_OK;
    }
    case QV_AGG_FIRST:
      for (int64_t i = 0; i < n; i++) {
        uint32_t g = ids[i];
        if (a->has[g]) continue;
        a->has[g] = 1;
        a->pchunk[g] = c;
        a->prow[g] = ROW(i);
      }
      return QV_OK;
    case QV_AGG_LAST:
      for (int64_t i = 0; i < n; i++) {
        uint32_t g = ids[i];
        a->has[g] = 1;
        a->pchunk[g] = c;
        a->prow[g] = ROW(i);
      }
      return QV_OK;
    case QV_AGG_ANY:
    case QV_AGG_ALL: {
      bool any = k == QV_AGG_ANY;
      for (int64_t i = 0; i < n; i++) {
        if (!v[i]) continue;
        uint32_t g = ids[i];
        uint8_t b = (uint8_t)qv_bit_get(x->buffers[1]->data, x->offset + ROW(i));
        if (!(a->has[g] & 1)) a->has[g] = (uint8_t)(1 | (b << 1));
        else if (any ? b : !b) a->has[g] = (uint8_t)(1 | (any ? 2 : 0));
      }
      return QV_OK;
    }
    case QV_AGG_MIN:
    case QV_AGG_MAX: {
      int dir = k == QV_AGG_MAX ? 1 : -1;
      /* A group's first row is its placeholder: an all-null group gathers
       * that (null) row. has: 1 placeholder, 2 a valid value chosen. */
      if (a->vc == VC_FLOAT) {
        load_doubles(x, a->vc, sel, n, s->fx);
        for (int64_t i = 0; i < n; i++) {
          uint32_t g = ids[i];
          if (!v[i]) {
            if (!a->has[g]) a->has[g] = 1, a->pchunk[g] = c, a->prow[g] = ROW(i);
            continue;
          }
          double xv = s->fx[i];
          if (a->has[g] != 2 || cmp_double(xv, a->m[g]) * dir > 0)
            a->has[g] = 2, a->m[g] = xv, a->pchunk[g] = c, a->prow[g] = ROW(i);
        }
      } else if (a->vc == VC_BYTES) {
        for (int64_t i = 0; i < n; i++) {
          uint32_t g = ids[i];
          if (!v[i]) {
            if (!a->has[g]) a->has[g] = 1, a->pchunk[g] = c, a->prow[g] = ROW(i);
            continue;
          }
          const uint8_t *p;
          int64_t len;
          if (!val_bytes(x, ROW(i), &p, &len))
            return qv_error_set(err, QV_EINVAL,
                                "%s: value at row %" PRId64
                                " of batch %d points outside its buffers",
                                a->label, ROW(i), (int)c);
          if (a->has[g] != 2 || cmp_bytes(p, len, a->bptr[g], a->blen[g]) * dir > 0)
            a->has[g] = 2, a->bptr[g] = p, a->blen[g] = len, a->pchunk[g] = c, a->prow[g] = ROW(i);
        }
      } else {
        load_ints(x, sel, n, s->ix);
        bool u = a->vc == VC_UINT;
        for (int64_t i = 0; i < n; i++) {
          uint32_t g = ids[i];
          if (!v[i]) {
            if (!a->has[g]) a->has[g] = 1, a->pchunk[g] = c, a->prow[g] = ROW(i);
            continue;
          }
          int64_t xv = s->ix[i], cur = a->iacc[g];
          int cm = u ? ((uint64_t)xv < (uint64_t)cur ? -1 : (uint64_t)xv > (uint64_t)cur)
                     : (xv < cur ? -1 : xv > cur);
          if (a->has[g] != 2 || cm * dir > 0)
            a->has[g] = 2, a->iacc[g] = xv, a->pchunk[g] = c, a->prow[g] = ROW(i);
        }
      }
      return QV_OK;
    }
    default: return QV_OK;
  }
}

/* ------------------------------------------------------------------------ */
/* Merging thread-local states                                               */

bool qvg_agg_mergeable(const qvg_agg *a) {
  return !qvg_kind_is_holistic(a->kind) && a->kind != QV_AGG_COUNT_DISTINCT;
}

qv_status qvg_agg_clone_empty(const qvg_agg *a, qvg_agg **out, qv_error *err) {
  qv_aggregate spec;
  memset(&spec, 0, sizeof spec);
  spec.kind = a->kind;
  spec.q = a->q;
  spec.k = a->k;
  return qvg_agg_new(&spec, a->type, a->type2, a->label, out, err);
}

/* dst's state of a group takes src's in: n values then nb more. Chan et
 * al.'s pairwise update of the mean and the sums of squared deviations. */
static inline void chan(double *m, double *m2, int64_t na, double mb, double m2b, int64_t nb) {
  double n = (double)(na + nb), delta = mb - *m;
  *m += delta * (double)nb / n;
  *m2 += m2b + delta * delta * (double)na * (double)nb / n;
}

qv_status qvg_agg_merge(qvg_agg *d, const qvg_agg *s, const uint32_t *map, int64_t n,
                        qv_error *err) {
  qv_agg_kind k = d->kind;
  int dir = k == QV_AGG_MAX ? 1 : -1;
  bool u = d->vc == VC_UINT;
  for (int64_t g = 0; g < n; g++) {
    uint32_t t = map ? map[g] : (uint32_t)g;
    switch (k) {
      case QV_AGG_COUNT_ALL:
      case QV_AGG_COUNT: d->cnt[t] += s->cnt[g]; break;
      case QV_AGG_SUM:
        if (d->vc == VC_FLOAT) d->m[t] += s->m[g];
        else if (qv_add_overflow(d->iacc[t], s->iacc[g], &d->iacc[t]))
          return qv_error_set(err, QV_ERANGE,
                              "%s: the sum overflows int64 (group %u); cast the column to double "
                              "first",
                              d->label, t);
        d->cnt[t] += s->cnt[g];
        break;
      case QV_AGG_MEAN:
        d->m[t] += s->m[g];
        d->cnt[t] += s->cnt[g];
        break;
      case QV_AGG_VAR:
      case QV_AGG_VAR_POP:
      case QV_AGG_STDDEV:
      case QV_AGG_STDDEV_POP:
        if (s->cnt[g] == 0) break;
        if (d->cnt[t] == 0) d->m[t] = s->m[g], d->m2[t] = s->m2[g];
        else chan(&d->m[t], &d->m2[t], d->cnt[t], s->m[g], s->m2[g], s->cnt[g]);
        d->cnt[t] += s->cnt[g];
        break;
      case QV_AGG_CORR:
      case QV_AGG_COVAR:
      case QV_AGG_COVAR_POP: {
        int64_t na = d->cnt[t], nb = s->cnt[g];
        if (nb == 0) break;
        double *dw = d->co + (size_t)t * CO_WORDS;
        const double *sw = s->co + (size_t)g * CO_WORDS;
        if (na == 0) {
          memcpy(dw, sw, sizeof(double) * CO_WORDS);
        } else { /* both as co-moments, combined (Chan et al.), back as sums */
          double ax, ay, a2x, a2y, ac, bx, by, b2x, b2y, bc;
          co_moments(dw, (double)na, &ax, &ay, &a2x, &a2y, &ac);
          co_moments(sw, (double)nb, &bx, &by, &b2x, &b2y, &bc);
          double nn = (double)(na + nb);
          ac += bc + (bx - ax) * (by - ay) * (double)na * (double)nb / nn;
          chan(&ax, &a2x, na, bx, b2x, nb);
          chan(&ay, &a2y, na, by, b2y, nb);
          double sx = nn * (ax - dw[CO_KX]), sy = nn * (ay - dw[CO_KY]);
          dw[CO_SX] = sx;
          dw[CO_SY] = sy;
          dw[CO_SXX] = a2x + sx * sx / nn;
          dw[CO_SYY] = a2y + sy * sy / nn;
          dw[CO_SXY] = ac + sx * sy / nn;
        }
        d->cnt[t] += nb;
        break;
      }
      case QV_AGG_FIRST:
        if (!d->has[t] && s->has[g])
          d->has[t] = s->has[g], d->pchunk[t] = s->pchunk[g], d->prow[t] = s->prow[g];
        break;
      case QV_AGG_LAST:
        if (s->has[g]) d->has[t] = s->has[g], d->pchunk[t] = s->pchunk[g], d->prow[t] = s->prow[g];
        break;
      case QV_AGG_ANY:
      case QV_AGG_ALL:
        if (!(s->has[g] & 1)) break;
        if (!(d->has[t] & 1)) d->has[t] = s->has[g];
        else if (k == QV_AGG_ANY) d->has[t] = (uint8_t)(1 | ((d->has[t] | s->has[g]) & 2));
        else d->has[t] = (uint8_t)(1 | (d->has[t] & s->has[g] & 2));
        break;
      case QV_AGG_MIN:
      case QV_AGG_MAX: {
        /* src's rows come after dst's: on a tie dst's (earlier) row stays */
        uint8_t sh = s->has[g], dh = d->has[t];
        if (sh == 0 || (sh == 1 && dh != 0)) break;
        bool take = dh == 0 || (dh == 1 && sh == 2);
        if (!take) {
          int cm;
          if (d->vc == VC_FLOAT) cm = cmp_double(s->m[g], d->m[t]);
          else if (d->vc == VC_BYTES)
            cm = cmp_bytes(s->bptr[g], s->blen[g], d->bptr[t], d->blen[t]);
          else {
            int64_t x = s->iacc[g], c = d->iacc[t];
            cm = u ? ((uint64_t)x < (uint64_t)c ? -1 : (uint64_t)x > (uint64_t)c)
                   : (x < c ? -1 : x > c);
          }
          take = cm * dir > 0;
        }
        if (!take) break;
        d->has[t] = sh, d->pchunk[t] = s->pchunk[g], d->prow[t] = s->prow[g];
        if (d->vc == VC_FLOAT) d->m[t] = s->m[g];
        else if (d->vc == VC_BYTES) d->bptr[t] = s->bptr[g], d->blen[t] = s->blen[g];
        else d->iacc[t] = s->iacc[g];
        break;
      }
      default: break;
    }
  }
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Results                                                                   */

static qv_status make_fixed(qv_type_id id, int64_t n, int width, qv_buffer **values,
                            qv_buffer **validity, qv_array **out, qv_error *err) {
  qv_type *t = qv_type_new(id);
  if (!t) return qv_error_set(err, QV_ENOMEM, "out of memory");
  qv_status st = qv_buffer_alloc(width ? n * width : (n + 7) / 8, values, err);
  if (st == QV_OK) st = qv_buffer_alloc((n + 7) / 8, validity, err);
  qv_array *a = st == QV_OK ? qv_array_new(t, 2, 0) : NULL;
  qv_type_unref(t);
  if (st == QV_OK && !a) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  if (st != QV_OK) {
    if (*values) qv_buffer_unref(*values);
    if (*validity) qv_buffer_unref(*validity);
    *values = *validity = NULL;
    return st;
  }
  a->length = n;
  a->buffers[0] = *validity;
  a->buffers[1] = *values;
  a->null_count = -1;
  *out = a;
  return QV_OK;
}

/* Count the nulls and drop an all-valid bitmap. */
static void settle_validity(qv_array *a) {
  int64_t valid = qv_bitmap_count(a->buffers[0]->data, 0, a->length);
  a->null_count = a->length - valid;
  if (a->null_count == 0) {
    qv_buffer_unref(a->buffers[0]);
    a->buffers[0] = NULL;
  }
}

/* The k-th smallest of v[0..n) (no NaN), reordering v: v[0..k) <= v[k] <=
 * v[k+1..n) afterwards (Hoare's selection, median-of-three pivots). */
static double select_kth(double *v, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n - 1;
  while (hi > lo) {
    int64_t mid = lo + (hi - lo) / 2;
    double a = v[lo], b = v[mid], c = v[hi];
    double p = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (v[i] < p) i++;
      while (v[j] > p) j--;
      if (i <= j) {
        double t = v[i];
        v[i] = v[j];
        v[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return v[k];
}

/* DuckDB quantile_cont of v[0..n) (any order; reordered), NaN greatest. */
static double quantile_select(double *v, int64_t n, double q) {
  int64_t m = 0; /* move the NaNs to the end */
  for (int64_t i = 0; i < n; i++)
    if (!isnan(v[i])) {
      double t = v[m];
      v[m++] = v[i];
      v[i] = t;
    }
  double rn = (double)(n - 1) * q;
  int64_t lo = (int64_t)floor(rn), hi = (int64_t)ceil(rn);
  if (hi >= m) return NAN; /* the upper neighbour is a NaN */
  double vlo = select_kth(v, m, lo);
  if (hi == lo) return vlo;
  double vhi = v[lo + 1];
  for (int64_t i = lo + 2; i < m; i++)
    if (v[i] < vhi) vhi = v[i];
  return vlo + (rn - (double)lo) * (vhi - vlo);
}

typedef struct kentry {
  double d;
  int64_t i;
  const uint8_t *p;
  int64_t len;
  int32_t chunk;
  int64_t row;
} kentry;

#define KCMP(name, expr)                                                                           \
  static int name(const void *x_, const void *y_) {                                                \
    const kentry *x = x_, *y = y_;                                                                 \
    int r = (expr);                                                                                \
    if (r) return r;                                                                               \
    return x->chunk != y->chunk ? (x->chunk < y->chunk ? -1 : 1)                                   \
                                : (x->row < y->row ? -1 : (x->row > y->row));                      \
  }
KCMP(kcmp_d_asc, cmp_double(x->d, y->d))
KCMP(kcmp_d_desc, -cmp_double(x->d, y->d))
KCMP(kcmp_i_asc, x->i < y->i ? -1 : (x->i > y->i))
KCMP(kcmp_i_desc, x->i > y->i ? -1 : (x->i < y->i))
KCMP(kcmp_u_asc, (uint64_t)x->i < (uint64_t)y->i ? -1 : ((uint64_t)x->i > (uint64_t)y->i))
KCMP(kcmp_u_desc, (uint64_t)x->i > (uint64_t)y->i ? -1 : ((uint64_t)x->i < (uint64_t)y->i))
KCMP(kcmp_b_asc, cmp_bytes(x->p, x->len, y->p, y->len))
KCMP(kcmp_b_desc, -cmp_bytes(x->p, x->len, y->p, y->len))

/* A list array over `values` with offsets[0..n] and optional validity. */
static qv_status make_list(qv_array *values, const int64_t *offsets, int64_t n,
                           const uint8_t *valid, qv_array **out, qv_error *err) {
  if (offsets[n] > INT32_MAX) {
    qv_array_unref(values);
    return qv_error_set(err, QV_ERANGE, "list result of %" PRId64 " values exceeds int32 offsets",
                        offsets[n]);
  }
  qv_type *lt = qv_type_list_of(QV_LIST, qv_type_ref(values->type));
  qv_buffer *off = NULL, *vb = NULL;
  qv_status st =
      lt ? qv_buffer_alloc((n + 1) * 4, &off, err) : qv_error_set(err, QV_ENOMEM, "out of memory");
  if (st == QV_OK && valid) st = qv_buffer_alloc((n + 7) / 8, &vb, err);
  qv_array *a = st == QV_OK ? qv_array_new(lt, 2, 1) : NULL;
  if (lt) qv_type_unref(lt);
  if (st == QV_OK && !a) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  if (st != QV_OK) {
    if (off) qv_buffer_unref(off);
    if (vb) qv_buffer_unref(vb);
    qv_array_unref(values);
    return st;
  }
  for (int64_t i = 0; i <= n; i++) {
    int32_t o = (int32_t)offsets[i];
    memcpy(off->data + i * 4, &o, 4);
  }
  a->length = n;
  a->buffers[1] = off;
  a->children[0] = values;
  a->null_count = 0;
  if (vb) {
    for (int64_t i = 0; i < n; i++)
      if (valid[i]) qv_bit_set(vb->data, i);
    a->buffers[0] = vb;
    settle_validity(a);
  }
  *out = a;
  return QV_OK;
}

/* The order statistics of the groups of task t of nt (a range of groups),
 * each selected in place in its segment of buf. */
typedef struct qsel_ctx {
  double *buf;
  const int64_t *start, *fill;
  double q;
  double *outv;
  int64_t ng, nt;
} qsel_ctx;

static void qsel_task(void *ctx, int64_t t, int worker) {
  (void)worker;
  qsel_ctx *c = ctx;
  int64_t g0 = t * c->ng / c->nt, g1 = (t + 1) * c->ng / c->nt;
  for (int64_t g = g0; g < g1; g++) {
    int64_t m = c->fill[g] - c->start[g];
    if (m > 0) c->outv[g] = quantile_select(c->buf + c->start[g], m, c->q);
  }
}

static qv_status finish_holistic(qvg_agg *a, int64_t ng, qv_array *const *chunks, int64_t nc,
                                 const qvg_rows *rows, qv_pool *pool, qv_array **out,
                                 qv_error *err) {
  qv_agg_kind k = a->kind;
  int64_t total = rows->start[ng];
  if (k == QV_AGG_LIST) {
    if (total == 0) {
      qv_array *vals = NULL;
      QV_RETURN_NOT_OK(qv_array_nulls(a->type, 0, &vals, err));
      return make_list(vals, rows->start, ng, NULL, out, err);
    }
    int64_t *ci = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
    if (!ci) return qv_error_set(err, QV_ENOMEM, "%s: out of memory", a->label);
    for (int64_t i = 0; i < total; i++) ci[i] = rows->chunk[i];
    qv_array *vals = NULL;
    qv_status st = qv_array_take_chunked(chunks, nc, ci, rows->row, total, &vals, err);
    free(ci);
    if (st != QV_OK) return st;
    return make_list(vals, rows->start, ng, NULL, out, err);
  }
  int64_t maxg = 0;
  for (int64_t g = 0; g < ng; g++)
    if (rows->start[g + 1] - rows->start[g] > maxg) maxg = rows->start[g + 1] - rows->start[g];
  if (k == QV_AGG_MEDIAN || k == QV_AGG_QUANTILE) {
    /* One pass in row order scatters the valid values to their group's
     * segment; each segment's order statistics are then selected in place. */
    double q = k == QV_AGG_MEDIAN ? 0.5 : a->q;
    double *buf = malloc(sizeof(double) * (size_t)(total ? total : 1));
    int64_t *fill = malloc(sizeof(int64_t) * (size_t)(ng > 0 ? ng : 1));
    qv_buffer *vals = NULL, *valid = NULL;
    qv_array *res = NULL;
    qv_status st = buf && fill ? make_fixed(QV_DOUBLE, ng, 8, &vals, &valid, &res, err)
                               : qv_error_set(err, QV_ENOMEM, "%s: out of memory", a->label);
    if (st != QV_OK) {
      free(buf);
      free(fill);
      return st;
    }
    memcpy(fill, rows->start, sizeof(int64_t) * (size_t)ng);
    int64_t r = 0;
    for (int64_t c = 0; c < nc; c++) {
      const qv_array *x = chunks[c];
      for (int64_t i = 0; i < x->length; i++, r++)
        if (qv_array_is_valid(x, i)) buf[fill[rows->ids[r]]++] = val_double(x, a->vc, i);
    }
    /* the groups' selections on all cores (ranges of groups), then the
     * validity bits on this thread */
    qsel_ctx qc = {buf, rows->start, fill, q, (double *)vals->data, ng, 1};
    if (pool && qv_pool_size(pool) > 1 && ng >= 64 && total >= 65536)
      qc.nt = 4 * (int64_t)qv_pool_size(pool) < ng ? 4 * (int64_t)qv_pool_size(pool) : ng;
    if (qc.nt > 1) {
      qv_pool_run(pool, qc.nt, qsel_task, &qc);
      st = qv_pool_check(pool, err);
    } else {
      qsel_task(&qc, 0, 0);
    }
    for (int64_t g = 0; g < ng && st == QV_OK; g++)
      if (fill[g] > rows->start[g]) qv_bit_set(valid->data, g);
    if (st != QV_OK) {
      free(buf);
      free(fill);
      qv_array_unref(res);
      return st;
    }
    free(buf);
    free(fill);
    settle_validity(res);
    *out = res;
    return QV_OK;
  }
  /* top_k / bottom_k */
  bool top = k == QV_AGG_TOP_K;
  int (*cmp)(const void *, const void *) = a->vc == VC_FLOAT   ? (top ? kcmp_d_desc : kcmp_d_asc)
                                           : a->vc == VC_UINT  ? (top ? kcmp_u_desc : kcmp_u_asc)
                                           : a->vc == VC_BYTES ? (top ? kcmp_b_desc : kcmp_b_asc)
                                                               : (top ? kcmp_i_desc : kcmp_i_asc);
  kentry *ent = malloc(sizeof(kentry) * (size_t)(maxg ? maxg : 1));
  int64_t *offs = malloc(sizeof(int64_t) * (size_t)(ng > 0 ? ng + 1 : 1));
  uint8_t *gvalid = malloc((size_t)(ng ? ng : 1));
  int64_t cap = 1024, n = 0;
  int64_t *ci = malloc(sizeof(int64_t) * (size_t)cap), *ri = malloc(sizeof(int64_t) * (size_t)cap);
  qv_status st = QV_OK;
  if (!ent || !offs || !gvalid || !ci || !ri)
    st = qv_error_set(err, QV_ENOMEM, "%s: out of memory", a->label);
  for (int64_t g = 0; g < ng && st == QV_OK; g++) {
    offs[g] = n;
    int64_t m = 0;
    for (int64_t e = rows->start[g]; e < rows->start[g + 1]; e++) {
      const qv_array *x = chunks[rows->chunk[e]];
      int64_t r = rows->row[e];
      if (!qv_array_is_valid(x, r)) continue;
      kentry *t = &ent[m++];
      t->chunk = rows->chunk[e];
      t->row = r;
      if (a->vc == VC_FLOAT) t->d = val_float(x, r);
      else if (a->vc == VC_BYTES) {
        if (!val_bytes(x, r, &t->p, &t->len)) {
          st = qv_error_set(err, QV_EINVAL, "%s: a value points outside its buffers", a->label);
          break;
        }
      } else t->i = val_int(x, r);
    }
    gvalid[g] = m > 0;
    qsort(ent, (size_t)m, sizeof(kentry), cmp);
    int64_t take = m < a->k ? m : a->k;
    if (n + take > cap) {
      while (n + take > cap) cap *= 2;
      int64_t *c2 = realloc(ci, sizeof(int64_t) * (size_t)cap);
      if (c2) ci = c2;
      int64_t *r2 = realloc(ri, sizeof(int64_t) * (size_t)cap);
      if (r2) ri = r2;
      if (!c2 || !r2) {
        st = qv_error_set(err, QV_ENOMEM, "%s: out of memory", a->label);
        break;
      }
    }
    for (int64_t j = 0; j < take; j++) ci[n + j] = ent[j].chunk, ri[n + j] = ent[j].row;
    n += take;
  }
  qv_array *vals = NULL;
  if (st == QV_OK) {
    offs[ng] = n;
    st = n == 0 ? qv_array_nulls(a->type, 0, &vals, err)
                : qv_array_take_chunked(chunks, nc, ci, ri, n, &vals, err);
  }
  if (st == QV_OK) st = make_list(vals, offs, ng, gvalid, out, err);
  free(ent);
  free(offs);
  free(gvalid);
  free(ci);
  free(ri);
  return st;
}

qv_status qvg_agg_finish(qvg_agg *a, int64_t ng, qv_array *const *chunks, int64_t nc,
                         const qvg_rows *rows, qv_pool *pool, qv_array **out, qv_error *err) {
  qv_agg_kind k = a->kind;
  if (ng > 0) QV_RETURN_NOT_OK(qvg_agg_reserve(a, ng, err));
  if (a->stream_k) {
    int64_t *offs = malloc(sizeof(int64_t) * (size_t)(ng > 0 ? ng + 1 : 1));
    uint8_t *gvalid = malloc((size_t)(ng > 0 ? ng : 1));
    size_t total = 1;
    for (int64_t g = 0; g < ng; g++) total += (size_t)a->cnt[g];
    int64_t *ci = malloc(sizeof(int64_t) * total);
    int64_t *ri = malloc(sizeof(int64_t) * total);
    qv_status st = QV_OK;
    qv_array *vals = NULL;
    if (!offs || !gvalid || !ci || !ri)
      st = qv_error_set(err, QV_ENOMEM, "%s: out of memory", a->label);
    int64_t pos = 0;
    for (int64_t g = 0; g < ng && st == QV_OK; g++) {
      offs[g] = pos;
      gvalid[g] = a->cnt[g] > 0;
      for (int64_t j = 0; j < a->cnt[g]; j++, pos++) {
        ci[pos] = a->kchunk[g * a->k + j];
        ri[pos] = a->krow[g * a->k + j];
      }
    }
    if (st == QV_OK) {
      offs[ng] = pos;
      st = pos == 0 ? qv_array_nulls(a->type, 0, &vals, err)
                    : qv_array_take_chunked(chunks, nc, ci, ri, pos, &vals, err);
    }
    if (st == QV_OK) st = make_list(vals, offs, ng, gvalid, out, err);
    free(offs);
    free(gvalid);
    free(ci);
    free(ri);
    return st;
  }
  if (qvg_kind_is_holistic(k)) return finish_holistic(a, ng, chunks, nc, rows, pool, out, err);
  if (k == QV_AGG_MIN || k == QV_AGG_MAX || k == QV_AGG_FIRST || k == QV_AGG_LAST) {
    if (ng == 0 || nc == 0) return qv_array_nulls(a->type, ng, out, err);
    for (int64_t g = 0; g < ng; g++) /* only a table without rows has a group without rows */
      if (!a->has[g]) return qv_array_nulls(a->type, ng, out, err);
    int64_t *ci = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
    if (!ci) return qv_error_set(err, QV_ENOMEM, "%s: out of memory", a->label);
    for (int64_t g = 0; g < ng; g++) ci[g] = a->pchunk[g];
    qv_status st = qv_array_take_chunked(chunks, nc, ci, a->prow, ng, out, err);
    free(ci);
    return st;
  }
  qv_buffer *vals = NULL, *valid = NULL;
  qv_array *res = NULL;
  bool is_bool = k == QV_AGG_ANY || k == QV_AGG_ALL;
  bool is_int = k == QV_AGG_COUNT_ALL || k == QV_AGG_COUNT || k == QV_AGG_COUNT_DISTINCT ||
                (k == QV_AGG_SUM && a->vc != VC_FLOAT);
  QV_RETURN_NOT_OK(make_fixed(is_bool ? QV_BOOL : (is_int ? QV_INT64 : QV_DOUBLE), ng,
                              is_bool ? 0 : 8, &vals, &valid, &res, err));
  int64_t *iv = (int64_t *)vals->data;
  double *dv = (double *)vals->data;
  uint8_t *vb = valid->data;
  for (int64_t g = 0; g < ng; g++) {
    int64_t c = a->cnt ? a->cnt[g] : 0;
    bool ok = true;
    switch (k) {
      case QV_AGG_COUNT_ALL:
      case QV_AGG_COUNT:
      case QV_AGG_COUNT_DISTINCT: iv[g] = c; break;
      case QV_AGG_SUM:
        ok = c > 0;
        if (a->vc == VC_FLOAT) dv[g] = a->m[g];
        else iv[g] = a->iacc[g];
        break;
      case QV_AGG_MEAN:
        ok = c > 0;
        if (ok) dv[g] = a->m[g] / (double)c;
        break;
      case QV_AGG_VAR:
      case QV_AGG_STDDEV:
        ok = c > 1;
        if (ok) dv[g] = a->m2[g] / (double)(c - 1);
        if (ok && k == QV_AGG_STDDEV) dv[g] = sqrt(dv[g]);
        break;
      case QV_AGG_VAR_POP:
      case QV_AGG_STDDEV_POP:
        ok = c > 0; /* one value: 0, as DuckDB (also for a NaN) */
        if (ok) dv[g] = c == 1 ? 0.0 : a->m2[g] / (double)c;
        if (ok && k == QV_AGG_STDDEV_POP) dv[g] = sqrt(dv[g]);
        break;
      case QV_AGG_COVAR:
      case QV_AGG_COVAR_POP:
      case QV_AGG_CORR: {
        ok = k == QV_AGG_COVAR ? c > 1 : c > 0;
        if (!ok) break;
        double mx, my, m2x, m2y, cxy;
        co_moments(a->co + (size_t)g * CO_WORDS, (double)c, &mx, &my, &m2x, &m2y, &cxy);
        if (k == QV_AGG_COVAR) dv[g] = cxy / (double)(c - 1);
        else if (k == QV_AGG_COVAR_POP) dv[g] = cxy / (double)c;
        else dv[g] = cxy / sqrt(m2x * m2y);
        break;
      }
      case QV_AGG_ANY:
      case QV_AGG_ALL:
        ok = a->has[g] & 1;
        if (a->has[g] & 2) qv_bit_set(vals->data, g);
        break;
      default: break;
    }
    if (ok) qv_bit_set(vb, g);
  }
  settle_validity(res);
  *out = res;
  return QV_OK;
}

const char *qvg_closest_name(const char *name, const char *const *names, int32_t n) {
  size_t ln = strlen(name);
  if (ln > 256) return NULL;
  int best = -1;
  const char *pick = NULL;
  int prev[258], cur[258];
  for (int32_t j = 0; j < n; j++) {
    const char *s = names[j];
    size_t ls = strlen(s);
    if (ls > 256) continue;
    for (size_t b = 0; b <= ls; b++) prev[b] = (int)b;
    for (size_t i2 = 1; i2 <= ln; i2++) {
      cur[0] = (int)i2;
      for (size_t b = 1; b <= ls; b++) {
        int cost = (name[i2 - 1] | 32) == (s[b - 1] | 32) ? 0 : 1;
        int v = prev[b - 1] + cost;
        if (prev[b] + 1 < v) v = prev[b] + 1;
        if (cur[b - 1] + 1 < v) v = cur[b - 1] + 1;
        cur[b] = v;
      }
      memcpy(prev, cur, sizeof(int) * (ls + 1));
    }
    int d = prev[ls];
    int limit = (int)(ln > ls ? ln : ls) / 2 + 1;
    if (d <= limit && (best < 0 || d < best)) best = d, pick = s;
  }
  return pick;
}
