/*
 * serve_stats.c — per-column statistics of `quiver serve` (/api/stats),
 * computed incrementally over the dataset layer's iterator so that the
 * answer streams progress and stops when the client goes away: nulls,
 * min/max/mean, a distinct estimate (HyperLogLog, 4096 registers over
 * xxh3), a histogram of values (numbers) or lengths (strings, binary,
 * lists) in a second pass, and top values — exact counts for ClassLabel
 * columns, a bounded space-saving summary for strings and binary. Memory
 * is bounded whatever the data (no per-value allocation). Every batch is
 * read under quiver's SIGBUS guard. Top layer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "quiver/array.h"
#include "quiver/dataset.h"
#include "quiver/guard.h"
#include "quiver/hf.h"
#include "quiver/print.h"
#include "serve.h"

#define HLL_BITS 12
#define HLL_M (1 << HLL_BITS)
#define TOPK 64      /* space-saving counters */
#define TOP_SHOWN 20 /* values reported */
#define KEY_MAX 200  /* bytes of a top value kept */
#define NBINS 20     /* histogram bins (fewer for small integer ranges) */
#define MAX_LABELS (1 << 20)

typedef enum stats_kind { K_NUM, K_LEN, K_LABEL, K_OTHER } stats_kind;

typedef struct topk_entry {
  uint64_t hash;
  int64_t count;
  int64_t err; /* space-saving: count - err is a lower bound */
  int32_t len;
  bool truncated;
  char key[KEY_MAX];
} topk_entry;

struct serve_stats {
  qv_dataset *ds; /* the one column */
  char *column;
  const char *kind_name;
  stats_kind kind;
  bool is_int;       /* K_NUM: an integer or bool column */
  bool bytes_values; /* K_LEN: strings or binary (hashed, top values) */
  bool is_string;
  const qv_hf_feature *feature; /* borrowed from ds */
  int64_t rows, done, batch;
  int phase, phases;
  qv_dataset_iter *it;
  qv_array *cur;
  /* accumulators */
  int64_t nulls, valid, nan;
  double min, max, sum;
  uint8_t hll[HLL_M];
  int nbins;
  double lo, width;
  int64_t hist[NBINS];
  topk_entry *top;
  int n_top;
  bool top_evicted;
  int64_t *labels;
  int64_t n_labels, out_of_range;
};

static stats_kind kind_of(const qv_hf_feature *f, const qv_type *t, serve_stats *s) {
  switch (t->id) {
    case QV_BOOL:
    case QV_INT8:
    case QV_UINT8:
    case QV_INT16:
    case QV_UINT16:
    case QV_INT32:
    case QV_UINT32:
    case QV_INT64:
    case QV_UINT64:
      s->is_int = true;
      if (f != NULL && f->kind == QV_HF_CLASS_LABEL && f->n_names <= MAX_LABELS && t->id != QV_BOOL)
        return K_LABEL;
      return K_NUM;
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE: return K_NUM;
    case QV_STRING:
    case QV_LARGE_STRING:
    case QV_STRING_VIEW: s->is_string = true; /* fall through */
    case QV_BINARY:
    case QV_LARGE_BINARY:
    case QV_BINARY_VIEW:
    case QV_FIXED_SIZE_BINARY: s->bytes_values = true; return K_LEN;
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_FIXED_SIZE_LIST: return K_LEN;
    default: return K_OTHER;
  }
}

qv_status serve_stats_new(qv_dataset *ds, const char *column, serve_stats **out, qv_error *err) {
  *out = NULL;
  int32_t ci = qv_dataset_column_index(ds, column);
  if (ci < 0) return qv_error_set(err, QV_EARG, "unknown column '%s'", column);
  serve_stats *s = calloc(1, sizeof *s);
  if (s == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  size_t n = strlen(column) + 1;
  s->column = malloc(n);
  if (s->column == NULL) {
    free(s);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  memcpy(s->column, column, n);
  qv_status st = qv_dataset_select_columns(ds, &column, 1, &s->ds, err);
  if (st != QV_OK) {
    serve_stats_free(s);
    return st;
  }
  const qv_type *t = qv_dataset_schema(s->ds)->type->children[0].type;
  const qv_hf_feature *fs = qv_dataset_features(s->ds);
  s->feature = fs ? qv_hf_feature_get(fs, column) : NULL;
  s->kind_name = serve_column_kind(s->feature, t);
  s->kind = kind_of(s->feature, t, s);
  s->rows = qv_dataset_num_rows(s->ds);
  s->phases = s->kind == K_NUM || s->kind == K_LEN ? 2 : 1;
  s->phase = 1;
  s->batch = s->rows / 100;
  if (s->batch < 65536) s->batch = 65536;
  if (s->batch > (1 << 20)) s->batch = 1 << 20;
  s->min = INFINITY;
  s->max = -INFINITY;
  if (s->kind == K_LEN && s->bytes_values) {
    s->top = calloc(TOPK, sizeof *s->top);
    if (s->top == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  if (s->kind == K_LABEL) {
    s->n_labels = s->feature->n_names;
    s->labels = calloc((size_t)(s->n_labels > 0 ? s->n_labels : 1), sizeof *s->labels);
    if (s->labels == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  if (st != QV_OK) {
    serve_stats_free(s);
    return st;
  }
  *out = s;
  return QV_OK;
}

void serve_stats_free(serve_stats *s) {
  if (s == NULL) return;
  qv_array_unref(s->cur);
  qv_dataset_iter_free(s->it);
  qv_dataset_unref(s->ds);
  free(s->top);
  free(s->labels);
  free(s->column);
  free(s);
}

static double num_at(const qv_array *a, int64_t i) {
  switch (a->type->id) {
    case QV_BOOL: return qv_bit_get(a->buffers[1]->data, a->offset + i) ? 1.0 : 0.0;
    case QV_UINT64: return (double)qv_array_uint_at(a, i);
    case QV_HALF_FLOAT: {
      uint16_t h;
      memcpy(&h, a->buffers[1]->data + (a->offset + i) * 2, 2);
      return qv_half_to_double(h);
    }
    case QV_FLOAT: {
      float f;
      memcpy(&f, a->buffers[1]->data + (a->offset + i) * 4, 4);
      return f;
    }
    case QV_DOUBLE: {
      double d;
      memcpy(&d, a->buffers[1]->data + (a->offset + i) * 8, 8);
      return d;
    }
    default: return (double)qv_array_int_at(a, i);
  }
}

bool serve_value_bytes(const qv_array *a, int64_t i, const uint8_t **data, int64_t *len) {
  switch (a->type->id) {
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: {
      int32_t l;
      if (!qv_array_view_bytes(a, i, data, &l)) return false;
      *len = l;
      return true;
    }
    case QV_FIXED_SIZE_BINARY:
      *len = a->type->byte_width;
      *data = a->buffers[1]->data + (a->offset + i) * (int64_t)a->type->byte_width;
      return true;
    case QV_BINARY:
    case QV_LARGE_BINARY:
    case QV_STRING:
    case QV_LARGE_STRING: {
      int64_t s = qv_array_offset_at(a, i), e = qv_array_offset_at(a, i + 1);
      if (s < 0 || e < s || a->buffers[2] == NULL || e > a->buffers[2]->size) return false;
      *data = a->buffers[2]->data + s;
      *len = e - s;
      return true;
    }
    default: return false;
  }
}

static int64_t list_len(const qv_array *a, int64_t i) {
  if (a->type->id == QV_FIXED_SIZE_LIST) return a->type->list_size;
  return qv_array_offset_at(a, i + 1) - qv_array_offset_at(a, i);
}

static void hll_add(uint8_t *reg, uint64_t h) {
  uint32_t idx = (uint32_t)(h >> (64 - HLL_BITS));
  uint64_t w = (h << HLL_BITS) | ((uint64_t)1 << (HLL_BITS - 1));
  uint8_t rho = (uint8_t)(__builtin_clzll(w) + 1);
  if (rho > reg[idx]) reg[idx] = rho;
}

static double hll_estimate(const uint8_t *reg) {
  double sum = 0, m = HLL_M;
  int zeros = 0;
  for (int i = 0; i < HLL_M; i++) {
    sum += ldexp(1.0, -reg[i]);
    zeros += reg[i] == 0;
  }
  double e = 0.7213 / (1 + 1.079 / m) * m * m / sum;
  if (e <= 2.5 * m && zeros > 0) e = m * log(m / zeros);
  return e;
}

static void top_add(serve_stats *s, const uint8_t *p, int64_t n) {
  uint64_t h = XXH3_64bits(p, (size_t)n);
  int min_i = 0;
  for (int i = 0; i < s->n_top; i++) {
    if (s->top[i].hash == h) {
      s->top[i].count++;
      return;
    }
    if (s->top[i].count < s->top[min_i].count) min_i = i;
  }
  topk_entry *e;
  int64_t base = 0;
  if (s->n_top < TOPK) {
    e = &s->top[s->n_top++];
  } else {
    e = &s->top[min_i];
    base = e->count;
    s->top_evicted = true;
  }
  e->hash = h;
  e->count = base + 1;
  e->err = base;
  e->len = (int32_t)(n < KEY_MAX ? n : KEY_MAX);
  e->truncated = n > KEY_MAX;
  memcpy(e->key, p, (size_t)e->len);
}

/* Edge k of the histogram: lo + k * width, the last one the maximum (so the
 * edges printed are the ones the counts use, as numpy.histogram's). */
static double edge(const serve_stats *s, int k) {
  return k == s->nbins && !(s->is_int || s->kind == K_LEN) ? s->max : s->lo + s->width * k;
}

static void hist_add(serve_stats *s, double v) {
  if (s->nbins == 0 || isnan(v)) return;
  int b = s->width > 0 ? (int)((v - s->lo) / s->width) : 0;
  if (b < 0) b = 0;
  if (b >= s->nbins) b = s->nbins - 1;
  if (b + 1 < s->nbins && v >= edge(s, b + 1)) b++;
  else if (b > 0 && v < edge(s, b)) b--;
  s->hist[b]++;
}

static void observe(serve_stats *s, double v, uint64_t h, bool hash) {
  if (s->phase == 2) {
    hist_add(s, v);
    return;
  }
  if (isnan(v)) {
    s->nan++;
    return;
  }
  if (v < s->min) s->min = v;
  if (v > s->max) s->max = v;
  s->sum += v;
  if (hash) hll_add(s->hll, h);
}

static qv_status process(void *p, qv_error *err) {
  serve_stats *s = p;
  (void)err;
  const qv_array *a = s->cur->children[0];
  for (int64_t i = 0; i < a->length; i++) {
    if (!qv_array_is_valid(a, i)) {
      if (s->phase == 1) s->nulls++;
      continue;
    }
    if (s->phase == 1) s->valid++;
    switch (s->kind) {
      case K_NUM: {
        double v = num_at(a, i);
        uint64_t bits;
        memcpy(&bits, &v, 8);
        observe(s, v, XXH3_64bits(&bits, 8), true);
        break;
      }
      case K_LABEL: {
        int64_t v = qv_array_int_at(a, i);
        if (v >= 0 && v < s->n_labels) s->labels[v]++;
        else s->out_of_range++;
        if (v < s->min) s->min = (double)v;
        if (v > s->max) s->max = (double)v;
        break;
      }
      case K_LEN: {
        if (s->bytes_values) {
          const uint8_t *d;
          int64_t n;
          if (!serve_value_bytes(a, i, &d, &n))
            return qv_error_set(err, QV_EINVAL, "malformed value");
          observe(s, (double)n, XXH3_64bits(d, (size_t)n), true);
          if (s->phase == 1) top_add(s, d, n);
        } else {
          observe(s, (double)list_len(a, i), 0, false);
        }
        break;
      }
      case K_OTHER: break;
    }
  }
  return QV_OK;
}

static void setup_bins(serve_stats *s) {
  s->lo = s->min;
  double range = s->max - s->min;
  if (s->is_int || s->kind == K_LEN) {
    if (range < NBINS) {
      s->nbins = (int)range + 1;
      s->width = 1;
      return;
    }
    s->width = ceil((range + 1) / NBINS);
    s->nbins = (int)ceil((range + 1) / s->width);
    if (s->nbins > NBINS) s->nbins = NBINS;
    return;
  }
  s->nbins = NBINS;
  s->width = range / NBINS;
  if (!(s->width > 0) || !isfinite(s->width)) {
    s->nbins = 1;
    s->width = 0;
  }
}

static void put_num(qv_strbuf *o, const serve_stats *s, double v, bool integral) {
  if (integral && fabs(v) < 9.2e18) qv_strbuf_printf(o, NULL, "%lld", (long long)v);
  else if (isfinite(v)) qv_format_double(o, v, NULL);
  else qv_strbuf_append_str(o, "null", NULL);
  (void)s;
}

static void put_error(qv_strbuf *o, const char *msg) {
  qv_strbuf_append_str(o, "{\"error\": ", NULL);
  if (qv_json_append_string(o, (const uint8_t *)msg, (int64_t)strlen(msg), NULL) !=
      QV_OK) { /* shorter text */
  }
  qv_strbuf_append_str(o, "}\n", NULL);
}

static int cmp_top(const void *a, const void *b) {
  const topk_entry *x = a, *y = b;
  int64_t a1 = x->count - x->err, b1 = y->count - y->err;
  return a1 < b1 ? 1 : a1 > b1 ? -1 : 0;
}

static void summary(serve_stats *s, qv_strbuf *o) {
  qv_strbuf_append_str(o, "{\"done\": true, \"stats\": {\"column\": ", NULL);
  if (qv_json_append_string(o, (const uint8_t *)s->column, (int64_t)strlen(s->column), NULL) !=
      QV_OK) { /* shorter text */
  }
  qv_strbuf_printf(o, NULL, ", \"kind\": \"%s\", \"count\": %lld, \"nulls\": %lld, \"valid\": %lld",
                   s->kind_name, (long long)s->rows, (long long)s->nulls, (long long)s->valid);
  bool any = s->valid - s->nan > 0 && s->kind != K_OTHER;
  bool integral = s->is_int || s->kind == K_LEN;
  const char *pre = s->kind == K_LEN ? "_length" : "";
  if (s->kind == K_NUM) qv_strbuf_printf(o, NULL, ", \"nan\": %lld", (long long)s->nan);
  if (s->kind == K_NUM || s->kind == K_LEN || s->kind == K_LABEL) {
    qv_strbuf_printf(o, NULL, ", \"min%s\": ", pre);
    if (any) put_num(o, s, s->min, integral);
    else qv_strbuf_append_str(o, "null", NULL);
    qv_strbuf_printf(o, NULL, ", \"max%s\": ", pre);
    if (any) put_num(o, s, s->max, integral);
    else qv_strbuf_append_str(o, "null", NULL);
  }
  if (s->kind == K_NUM || s->kind == K_LEN) {
    qv_strbuf_printf(o, NULL, ", \"mean%s\": ", pre);
    if (any) put_num(o, s, s->sum / (double)(s->valid - s->nan), false);
    else qv_strbuf_append_str(o, "null", NULL);
  }
  if (s->kind == K_NUM || (s->kind == K_LEN && s->bytes_values))
    qv_strbuf_printf(o, NULL, ", \"distinct_estimate\": %lld",
                     (long long)llround(any ? hll_estimate(s->hll) : 0));
  if (s->nbins > 0) {
    qv_strbuf_printf(o, NULL, ", \"histogram\": {\"of\": \"%s\", \"edges\": [",
                     s->kind == K_LEN ? "lengths" : "values");
    for (int b = 0; b <= s->nbins; b++) {
      if (b) qv_strbuf_append_str(o, ", ", NULL);
      put_num(o, s, edge(s, b), integral);
    }
    qv_strbuf_append_str(o, "], \"counts\": [", NULL);
    for (int b = 0; b < s->nbins; b++)
      qv_strbuf_printf(o, NULL, "%s%lld", b ? ", " : "", (long long)s->hist[b]);
    qv_strbuf_append_str(o, "]}", NULL);
  }
  if (s->kind == K_LABEL) {
    int64_t distinct = 0;
    for (int64_t k = 0; k < s->n_labels; k++) distinct += s->labels[k] > 0;
    qv_strbuf_printf(o, NULL, ", \"distinct\": %lld, \"out_of_range\": %lld, \"top\": [",
                     (long long)distinct, (long long)s->out_of_range);
    /* The TOP_SHOWN largest counts, by repeated selection (bounded). */
    bool *used = calloc((size_t)(s->n_labels > 0 ? s->n_labels : 1), 1);
    for (int shown = 0; used != NULL && shown < TOP_SHOWN; shown++) {
      int64_t best = -1;
      for (int64_t k = 0; k < s->n_labels; k++)
        if (!used[k] && s->labels[k] > 0 && (best < 0 || s->labels[k] > s->labels[best])) best = k;
      if (best < 0) break;
      used[best] = true;
      qv_strbuf_printf(o, NULL, "%s{\"value\": %lld, \"label\": ", shown ? ", " : "",
                       (long long)best);
      const char *nm = s->feature->names[best];
      if (qv_json_append_string(o, (const uint8_t *)nm, (int64_t)strlen(nm), NULL) !=
          QV_OK) { /* shorter text */
      }
      qv_strbuf_printf(o, NULL, ", \"count\": %lld}", (long long)s->labels[best]);
    }
    free(used);
    qv_strbuf_append_str(o, "], \"top_approximate\": false", NULL);
  }
  if (s->top != NULL) {
    qsort(s->top, (size_t)s->n_top, sizeof *s->top, cmp_top);
    qv_strbuf_append_str(o, ", \"top\": [", NULL);
    for (int k = 0; k < s->n_top && k < TOP_SHOWN; k++) {
      qv_strbuf_append_str(o, k ? ", {\"value\": " : "{\"value\": ", NULL);
      if (s->is_string) {
        if (qv_json_append_string(o, (const uint8_t *)s->top[k].key, s->top[k].len, NULL) !=
            QV_OK) { /* shorter text */
        }
      } else { /* binary: hex of the first bytes */
        qv_strbuf_append_char(o, '"', NULL);
        for (int32_t j = 0; j < s->top[k].len && j < 32; j++)
          qv_strbuf_printf(o, NULL, "%02x", (unsigned char)s->top[k].key[j]);
        qv_strbuf_append_char(o, '"', NULL);
      }
      qv_strbuf_printf(
          o, NULL, ", \"count\": %lld, \"count_max\": %lld, \"truncated\": %s}",
          (long long)(s->top[k].count - s->top[k].err), (long long)s->top[k].count,
          s->top[k].truncated || (!s->is_string && s->top[k].len > 32) ? "true" : "false");
    }
    qv_strbuf_printf(o, NULL, "], \"top_approximate\": %s", s->top_evicted ? "true" : "false");
  }
  qv_strbuf_append_str(o, "}}\n", NULL);
}

void serve_stats_step(serve_stats *s, qv_strbuf *o, bool *finished) {
  qv_error err;
  *finished = false;
  if (s->it == NULL) {
    if (qv_dataset_iter_new(s->ds, s->batch, false, &s->it, &err) != QV_OK) {
      put_error(o, err.message);
      *finished = true;
      return;
    }
  }
  qv_array_unref(s->cur);
  s->cur = NULL;
  qv_status st = qv_dataset_iter_next(s->it, &s->cur, NULL, &err);
  if (st == QV_OK && s->cur != NULL) st = qv_guard_run(process, s, &err);
  if (st != QV_OK) {
    put_error(o, err.message);
    *finished = true;
    return;
  }
  if (s->cur == NULL) { /* the pass is over */
    qv_dataset_iter_free(s->it);
    s->it = NULL;
    if (s->phase < s->phases && s->valid - s->nan > 0) {
      s->phase = 2;
      setup_bins(s);
      return; /* nothing to say; the caller steps again */
    }
    summary(s, o);
    *finished = true;
    return;
  }
  s->done += s->cur->length;
  qv_strbuf_printf(o, NULL, "{\"progress\": %lld, \"total\": %lld}\n", (long long)s->done,
                   (long long)(s->rows * s->phases));
}
