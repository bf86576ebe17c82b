/* test_groupby.c — qv_table_group_by / qv_table_group_by_exprs against a
 * brute-force oracle: random tables in several record batches (int32 and
 * string keys with nulls, a dictionary key whose dictionary differs per
 * batch, doubles with NaN / -0.0 / nulls, int64s, bools, strings), every
 * aggregate recomputed per group by scanning all rows of the plain C data
 * the arrays were built from. Also: first-appearance order, --sort order,
 * no keys (one group, also over an empty table), one group, many groups,
 * all-null groups, aggregate expressions, and errors with their messages.
 * Every shape runs on one thread and on several (the partitioned paths
 * forced on small tables with qv_group_by_options.threads), and the two
 * results must be equal bit for bit. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/builder.h"
#include "quiver/compute.h"
#include "quiver/table.h"
#include "qv_build.h"
#include "qv_test.h"

typedef struct data {
  int64_t n;
  int32_t *k1;
  bool *k1n;
  int *k2; /* index into K2 or -1 null */
  int *d;  /* dictionary value index into DV or -1 */
  double *x;
  bool *xn;
  int64_t *iv;
  bool *in;
  bool *bv, *bn;
  int *s; /* index into SV or -1 */
} data;

static const char *K2[] = {"a", "bb", "", "dd", "e"};
static const char *DV[] = {"p", "q", "r", "s"};
static const char *SV[] = {"zeta", "alpha", "mu", "", "omega", "beta"};

static data gen(int64_t n, int groups, bool all_null_x_for_even) {
  data d;
  d.n = n;
  d.k1 = calloc((size_t)n + 1, 4);
  d.k1n = calloc((size_t)n + 1, 1);
  d.k2 = calloc((size_t)n + 1, sizeof(int));
  d.d = calloc((size_t)n + 1, sizeof(int));
  d.x = calloc((size_t)n + 1, 8);
  d.xn = calloc((size_t)n + 1, 1);
  d.iv = calloc((size_t)n + 1, 8);
  d.in = calloc((size_t)n + 1, 1);
  d.bv = calloc((size_t)n + 1, 1);
  d.bn = calloc((size_t)n + 1, 1);
  d.s = calloc((size_t)n + 1, sizeof(int));
  for (int64_t r = 0; r < n; r++) {
    /* skewed: half the rows in group 0 */
    d.k1[r] = tb_rint(2) ? 0 : tb_rint(groups);
    d.k1n[r] = tb_rint(20) == 0;
    d.k2[r] = tb_rint(12) == 0 ? -1 : tb_rint(groups > 1 ? 5 : 1);
    d.d[r] = tb_rint(10) == 0 ? -1 : tb_rint(4);
    int c = tb_rint(20);
    d.x[r] = c == 0 ? NAN : c == 1 ? -0.0 : c == 2 ? 0.0 : (tb_runif() - 0.5) * 1000;
    d.xn[r] = tb_rint(10) == 0 || (all_null_x_for_even && d.k1[r] % 2 == 0);
    d.iv[r] = (int64_t)tb_rint(2001) - 1000;
    d.in[r] = tb_rint(10) == 0;
    d.bv[r] = tb_rint(2);
    d.bn[r] = tb_rint(10) == 0;
    d.s[r] = tb_rint(10) == 0 ? -1 : tb_rint(6);
  }
  return d;
}

static void data_free(data *d) {
  free(d->k1);
  free(d->k1n);
  free(d->k2);
  free(d->d);
  free(d->x);
  free(d->xn);
  free(d->iv);
  free(d->in);
  free(d->bv);
  free(d->bn);
  free(d->s);
}

static qv_type *dict_type(void) {
  qv_type *t = qv_type_new(QV_DICTIONARY);
  t->index_type = qv_type_new(QV_INT8);
  t->value_type = qv_type_new(QV_STRING);
  return t;
}

static qv_type *schema_type(void) {
  qv_type *st = qv_type_new(QV_STRUCT);
  qv_error err;
  QV_CHECK(qv_type_add_child(st, "k1", true, qv_type_new(QV_INT32), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "k2", true, qv_type_new(QV_STRING), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "d", true, dict_type(), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "x", true, qv_type_new(QV_DOUBLE), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "i", true, qv_type_new(QV_INT64), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "b", true, qv_type_new(QV_BOOL), NULL, &err) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "s", true, qv_type_new(QV_STRING), NULL, &err) == QV_OK);
  return st;
}

/* Rows [lo, hi) as one record batch; the dictionary of column d is a
 * rotation of DV that changes with `rot`. */
static qv_array *make_batch(const data *d, int64_t lo, int64_t hi, int rot) {
  qv_type *st = schema_type();
  qv_builder *b = NULL;
  qv_error err;
  QV_CHECK(qv_builder_new(st, &b, &err) == QV_OK);
  for (int64_t r = lo; r < hi; r++) {
    QV_CHECK(qv_builder_begin_struct(b, &err) == QV_OK);
    qv_builder *c;
    c = qv_builder_child(b, 0);
    QV_CHECK((d->k1n[r] ? qv_builder_append_null(c, &err)
                        : qv_builder_append_int(c, d->k1[r], &err)) == QV_OK);
    c = qv_builder_child(b, 1);
    QV_CHECK((d->k2[r] < 0 ? qv_builder_append_null(c, &err)
                           : qv_builder_append_string(c, K2[d->k2[r]], &err)) == QV_OK);
    c = qv_builder_child(b, 2);
    QV_CHECK((d->d[r] < 0 ? qv_builder_append_null(c, &err)
                          : qv_builder_append_index(c, (d->d[r] + 4 - rot) % 4, &err)) == QV_OK);
    c = qv_builder_child(b, 3);
    QV_CHECK((d->xn[r] ? qv_builder_append_null(c, &err)
                       : qv_builder_append_double(c, d->x[r], &err)) == QV_OK);
    c = qv_builder_child(b, 4);
    QV_CHECK((d->in[r] ? qv_builder_append_null(c, &err)
                       : qv_builder_append_int(c, d->iv[r], &err)) == QV_OK);
    c = qv_builder_child(b, 5);
    QV_CHECK((d->bn[r] ? qv_builder_append_null(c, &err)
                       : qv_builder_append_bool(c, d->bv[r], &err)) == QV_OK);
    c = qv_builder_child(b, 6);
    QV_CHECK((d->s[r] < 0 ? qv_builder_append_null(c, &err)
                          : qv_builder_append_string(c, SV[d->s[r]], &err)) == QV_OK);
    QV_CHECK(qv_builder_end_struct(b, &err) == QV_OK);
  }
  /* the dictionary values: DV rotated by rot */
  qv_builder *dv = qv_builder_values(qv_builder_child(b, 2));
  for (int j = 0; j < 4; j++)
    QV_CHECK(qv_builder_append_string(dv, DV[(j + rot) % 4], &err) == QV_OK);
  qv_array *out = NULL;
  QV_CHECK(qv_builder_finish(b, &out, &err) == QV_OK);
  qv_builder_free(b);
  qv_type_unref(st);
  return out;
}

static qv_table *make_table(const data *d, int n_batches) {
  qv_array **bs = calloc((size_t)n_batches + 1, sizeof *bs);
  int64_t per = d->n / n_batches + 1;
  int nb = 0;
  for (int64_t lo = 0; lo < d->n || nb == 0; lo += per) {
    int64_t hi = lo + per < d->n ? lo + per : d->n;
    bs[nb] = make_batch(d, lo, hi, nb % 4);
    nb++;
    if (hi >= d->n) break;
  }
  qv_type *st = schema_type();
  qv_schema *schema = qv_schema_new(st);
  qv_table *t = NULL;
  qv_error err;
  QV_CHECK(qv_table_from_batches(schema, bs, nb, &t, &err) == QV_OK);
  for (int i = 0; i < nb; i++) qv_array_unref(bs[i]);
  qv_schema_unref(schema);
  free(bs);
  return t;
}

/* ------------------------------------------------------------ reading -- */

static bool valid_at(const qv_array *a, int64_t i) { return qv_array_is_valid(a, i); }
static double dbl_at(const qv_array *a, int64_t i) {
  double v;
  memcpy(&v, a->buffers[1]->data + (a->offset + i) * 8, 8);
  return v;
}
static const char *str_at(const qv_array *a, int64_t i, char *buf) {
  const qv_array *v = a;
  int64_t k = i;
  if (a->type->id == QV_DICTIONARY) {
    k = qv_array_int_at(a, i);
    v = a->dictionary;
  }
  int64_t s = qv_array_offset_at(v, k), e = qv_array_offset_at(v, k + 1);
  memcpy(buf, v->buffers[2]->data + s, (size_t)(e - s));
  buf[e - s] = '\0';
  return buf;
}

static bool same_double(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == b) return true;
  return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  if (isnan(x) || isnan(y)) return isnan(x) ? (isnan(y) ? 0 : 1) : -1;
  return x < y ? -1 : x > y;
}
static int cmp_i64_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x > y ? -1 : x < y;
}

/* ------------------------------------------------------------- oracle -- */

static const char *AGGS[] = {
    "count(*) AS n",
    "count(x) AS cx",
    "count_distinct(i) AS cdi",
    "count_distinct(x) AS cdx",
    "sum(i) AS si",
    "sum(x) AS sx",
    "mean(x) AS mx",
    "min(x) AS minx",
    "max(x) AS maxx",
    "min(s) AS mins",
    "max(s) AS maxs",
    "first(x) AS fx",
    "last(s) AS ls",
    "var(x) AS vx",
    "stddev_pop(i) AS sdi",
    "median(x) AS medx",
    "quantile(i, 0.3) AS q3",
    "top_k(i, 3) AS topi",
    "corr(x, i) AS cxi",
    "covar(x, i) AS cvxi",
    "any(b) AS anyb",
    "all(b) AS allb",
    "list(i) AS li",
    "max(x) - min(i) AS rng",
    "bottom_k(s, 2) AS bs",
    "sum(i * 2 - 1) AS s2i", /* expressions inside aggregate calls */
    "max(len(s)) AS mls",
};
#define N_AGGS ((int)(sizeof AGGS / sizeof AGGS[0]))

/* The mergeable aggregates (a group-by of only these takes the thread-local
 * pre-aggregation path on several threads). */
static const char *MAGGS[] = {
    "count(*) AS n",        "count(x) AS cx",         "sum(i) AS si",          "sum(x) AS sx",
    "mean(x) AS mx",        "min(x) AS minx",         "max(x) AS maxx",        "min(s) AS mins",
    "max(s) AS maxs",       "first(x) AS fx",         "last(s) AS ls",         "var(x) AS vx",
    "stddev_pop(i) AS sdi", "corr(x, i) AS cxi",      "covar(x, i) AS cvxi",   "any(b) AS anyb",
    "all(b) AS allb",       "max(x) - min(i) AS rng", "sum(i * 2 - 1) AS s2i",
};
#define N_MAGGS ((int)(sizeof MAGGS / sizeof MAGGS[0]))

/* Column `name` of `got` equals the one of `want` (the checked result):
 * doubles to 1e-9 relative (sums merged pairwise round differently),
 * everything else exactly. */
static void check_column_close(qv_table *want, qv_table *got, const char *name) {
  qv_error err;
  int32_t iw = qv_schema_find(qv_table_schema(want), name);
  int32_t ig = qv_schema_find(qv_table_schema(got), name);
  QV_REQUIRE(iw >= 0 && ig >= 0);
  QV_REQUIRE(qv_table_num_rows(want) == qv_table_num_rows(got));
  if (qv_table_num_rows(want) == 0) return;
  qv_array *bw = NULL, *bg = NULL;
  QV_REQUIRE(qv_table_batch(want, 0, &bw, &err) == QV_OK);
  QV_REQUIRE(qv_table_batch(got, 0, &bg, &err) == QV_OK);
  qv_array *w = bw->children[iw], *g = bg->children[ig];
  if (w->type->id == QV_DOUBLE) {
    QV_CHECK(g->type->id == QV_DOUBLE);
    for (int64_t r = 0; r < w->length; r++) {
      QV_CHECK(valid_at(w, r) == valid_at(g, r));
      if (!valid_at(w, r)) continue;
      double a = dbl_at(w, r), b = dbl_at(g, r);
      bool ok = same_double(a, b) || fabs(a - b) < 1e-9 * fmax(1, fabs(a)) * 1000;
      if (a == 0 && b == 0) ok = signbit(a) == signbit(b); /* min/max ties: the first row's */
      if (!ok) fprintf(stderr, "%s row %lld: %.17g vs %.17g\n", name, (long long)r, a, b);
      QV_CHECK(ok);
    }
  } else {
    qv_error diff;
    diff.message[0] = 0;
    bool eq = qv_array_equals(w, g, &diff);
    if (!eq) fprintf(stderr, "%s: %s\n", name, diff.message);
    QV_CHECK(eq);
  }
  qv_array_unref(bw);
  qv_array_unref(bg);
}

typedef struct keyset {
  bool use_k1, use_k2, use_d;
} keyset;

/* Does row r have the key of output row g? */
static bool row_matches(const data *d, keyset ks, qv_array *const *keys, int64_t g, int64_t r) {
  int kc = 0;
  char buf[64];
  if (ks.use_k1) {
    const qv_array *a = keys[kc++];
    if (valid_at(a, g) != !d->k1n[r]) return false;
    if (!d->k1n[r] && qv_array_int_at(a, g) != d->k1[r]) return false;
  }
  if (ks.use_k2) {
    const qv_array *a = keys[kc++];
    if (valid_at(a, g) != (d->k2[r] >= 0)) return false;
    if (d->k2[r] >= 0 && strcmp(str_at(a, g, buf), K2[d->k2[r]]) != 0) return false;
  }
  if (ks.use_d) {
    const qv_array *a = keys[kc++];
    if (valid_at(a, g) != (d->d[r] >= 0)) return false;
    if (d->d[r] >= 0 && strcmp(str_at(a, g, buf), DV[d->d[r]]) != 0) return false;
  }
  return true;
}

static void check_group(const data *d, const qv_array *batch, int nk, int64_t g,
                        const int64_t *rows, int64_t m) {
  qv_array *const *c = batch->children + nk;
  char buf[64], buf2[64];
  int64_t cnt_x = 0, cnt_i = 0, si = 0, cnt_b = 0;
  double sx = 0, *xs = malloc(sizeof(double) * (size_t)(m + 1));
  double *is = malloc(sizeof(double) * (size_t)(m + 1));
  int64_t *ii = malloc(sizeof(int64_t) * (size_t)(m + 1));
  bool any = false, all = true;
  int distinct_i = 0, distinct_x = 0;
  const char *mins = NULL, *maxs = NULL;
  int64_t ni = 0, nx = 0;
  double mx = 0, minx = NAN, maxx = NAN;
  bool have_minx = false;
  for (int64_t e = 0; e < m; e++) {
    int64_t r = rows[e];
    if (!d->xn[r]) {
      double v = d->x[r];
      bool seen = false;
      for (int64_t q = 0; q < nx && !seen; q++) seen = (xs[q] == v) || (isnan(xs[q]) && isnan(v));
      if (!seen) distinct_x++;
      xs[nx++] = v;
      sx += v;
      cnt_x++;
      if (!have_minx || cmp_dbl(&v, &minx) < 0) minx = v;
      if (!have_minx || cmp_dbl(&v, &maxx) > 0) maxx = v;
      have_minx = true;
    }
    if (!d->in[r]) {
      bool seen = false;
      for (int64_t q = 0; q < ni && !seen; q++) seen = ii[q] == d->iv[r];
      if (!seen) distinct_i++;
      ii[ni] = d->iv[r];
      is[ni++] = (double)d->iv[r];
      si += d->iv[r];
      cnt_i++;
    }
    if (!d->bn[r]) {
      cnt_b++;
      any = any || d->bv[r];
      all = all && d->bv[r];
    }
    if (d->s[r] >= 0) {
      const char *sv = SV[d->s[r]];
      if (!mins || strcmp(sv, mins) < 0) mins = sv;
      if (!maxs || strcmp(sv, maxs) > 0) maxs = sv;
    }
  }
  if (cnt_x) mx = sx / (double)cnt_x;
  QV_CHECK_EQ_INT(qv_array_int_at(c[0], g), m);
  QV_CHECK_EQ_INT(qv_array_int_at(c[1], g), cnt_x);
  QV_CHECK_EQ_INT(qv_array_int_at(c[2], g), distinct_i);
  QV_CHECK_EQ_INT(qv_array_int_at(c[3], g), distinct_x);
  QV_CHECK(valid_at(c[4], g) == (cnt_i > 0));
  if (cnt_i) QV_CHECK_EQ_INT(qv_array_int_at(c[4], g), si);
  QV_CHECK(valid_at(c[5], g) == (cnt_x > 0));
  if (cnt_x) {
    /* sums in another order may differ in the last bits */
    QV_CHECK(same_double(dbl_at(c[5], g), sx) || fabs(dbl_at(c[5], g) - sx) < 1e-9 * 1000 * m);
    QV_CHECK(same_double(dbl_at(c[6], g), mx) || fabs(dbl_at(c[6], g) - mx) < 1e-9 * 1000);
    QV_CHECK(same_double(dbl_at(c[7], g), minx));
    QV_CHECK(same_double(dbl_at(c[8], g), maxx));
  } else {
    QV_CHECK(!valid_at(c[6], g) && !valid_at(c[7], g) && !valid_at(c[8], g));
  }
  QV_CHECK(valid_at(c[9], g) == (mins != NULL));
  if (mins) QV_CHECK_EQ_STR(str_at(c[9], g, buf), mins);
  if (maxs) QV_CHECK_EQ_STR(str_at(c[10], g, buf), maxs);
  /* first(x), last(s): nulls included */
  int64_t r0 = rows[0], rl = rows[m - 1];
  QV_CHECK(valid_at(c[11], g) == !d->xn[r0]);
  if (!d->xn[r0])
    QV_CHECK(same_double(dbl_at(c[11], g), d->x[r0]) &&
             signbit(dbl_at(c[11], g)) == signbit(d->x[r0]));
  QV_CHECK(valid_at(c[12], g) == (d->s[rl] >= 0));
  if (d->s[rl] >= 0) QV_CHECK_EQ_STR(str_at(c[12], g, buf2), SV[d->s[rl]]);
  /* var(x) two-pass */
  QV_CHECK(valid_at(c[13], g) == (cnt_x > 1));
  if (cnt_x > 1) {
    double ss = 0;
    for (int64_t q = 0; q < nx; q++) ss += (xs[q] - mx) * (xs[q] - mx);
    double want = ss / (double)(cnt_x - 1), got = dbl_at(c[13], g);
    QV_CHECK(same_double(got, want) || fabs(got - want) < 1e-6 * fmax(1, want));
  }
  if (cnt_i > 0) {
    double mi = (double)si / (double)cnt_i, ss = 0;
    for (int64_t q = 0; q < ni; q++) ss += (is[q] - mi) * (is[q] - mi);
    double want = cnt_i == 1 ? 0 : sqrt(ss / (double)cnt_i), got = dbl_at(c[14], g);
    QV_CHECK(same_double(got, want) || fabs(got - want) < 1e-9 * fmax(1, want));
  }
  /* median(x), quantile(i, 0.3) */
  QV_CHECK(valid_at(c[15], g) == (cnt_x > 0));
  if (cnt_x > 0) {
    qsort(xs, (size_t)nx, 8, cmp_dbl);
    double rn = (double)(nx - 1) * 0.5;
    int64_t lo = (int64_t)floor(rn), hi = (int64_t)ceil(rn);
    double want = xs[lo] + (rn - (double)lo) * (xs[hi] - xs[lo]);
    QV_CHECK(same_double(dbl_at(c[15], g), want));
  }
  if (cnt_i > 0) {
    qsort(is, (size_t)ni, 8, cmp_dbl);
    double rn = (double)(ni - 1) * 0.3;
    int64_t lo = (int64_t)floor(rn), hi = (int64_t)ceil(rn);
    double want = is[lo] + (rn - (double)lo) * (is[hi] - is[lo]);
    QV_CHECK(same_double(dbl_at(c[16], g), want));
  }
  /* top_k(i, 3) */
  QV_CHECK(valid_at(c[17], g) == (cnt_i > 0));
  if (cnt_i > 0) {
    int64_t *sorted = malloc(sizeof(int64_t) * (size_t)ni);
    memcpy(sorted, ii, sizeof(int64_t) * (size_t)ni);
    qsort(sorted, (size_t)ni, 8, cmp_i64_desc);
    int64_t s0 = qv_array_offset_at(c[17], g), s1 = qv_array_offset_at(c[17], g + 1);
    QV_CHECK_EQ_INT(s1 - s0, ni < 3 ? ni : 3);
    for (int64_t q = 0; q < s1 - s0 && q < 3; q++)
      QV_CHECK_EQ_INT(qv_array_int_at(c[17]->children[0], s0 + q), sorted[q]);
    free(sorted);
  }
  /* corr(x, i), covar(x, i) over the pairs where both are valid */
  {
    int64_t np = 0;
    double sxp = 0, syp = 0;
    for (int64_t e = 0; e < m; e++) {
      int64_t r = rows[e];
      if (d->xn[r] || d->in[r]) continue;
      np++;
      sxp += d->x[r];
      syp += (double)d->iv[r];
    }
    QV_CHECK(valid_at(c[19], g) == (np > 1));
    QV_CHECK(valid_at(c[18], g) == (np > 0));
    if (np > 1) {
      double ax = sxp / (double)np, ay = syp / (double)np, cxy = 0, vx = 0, vy = 0;
      for (int64_t e = 0; e < m; e++) {
        int64_t r = rows[e];
        if (d->xn[r] || d->in[r]) continue;
        cxy += (d->x[r] - ax) * ((double)d->iv[r] - ay);
        vx += (d->x[r] - ax) * (d->x[r] - ax);
        vy += ((double)d->iv[r] - ay) * ((double)d->iv[r] - ay);
      }
      double want = cxy / (double)(np - 1), got = dbl_at(c[19], g);
      QV_CHECK(same_double(got, want) || fabs(got - want) < 1e-6 * fmax(1, fabs(want)));
      double wc = cxy / sqrt(vx * vy), gc = dbl_at(c[18], g);
      QV_CHECK(same_double(gc, wc) || fabs(gc - wc) < 1e-9);
    }
  }
  QV_CHECK(valid_at(c[20], g) == (cnt_b > 0));
  if (cnt_b) {
    QV_CHECK(qv_bit_get(c[20]->buffers[1]->data, c[20]->offset + g) == any);
    QV_CHECK(qv_bit_get(c[21]->buffers[1]->data, c[21]->offset + g) == all);
  }
  /* list(i): every row in order, nulls included */
  {
    int64_t s0 = qv_array_offset_at(c[22], g), s1 = qv_array_offset_at(c[22], g + 1);
    QV_CHECK_EQ_INT(s1 - s0, m);
    const qv_array *ch = c[22]->children[0];
    for (int64_t e = 0; e < m && e < s1 - s0; e++) {
      QV_CHECK(valid_at(ch, s0 + e) == !d->in[rows[e]]);
      if (!d->in[rows[e]]) QV_CHECK_EQ_INT(qv_array_int_at(ch, s0 + e), d->iv[rows[e]]);
    }
  }
  /* max(x) - min(i): an expression over two aggregates (double) */
  QV_CHECK(valid_at(c[23], g) == (cnt_x > 0 && cnt_i > 0));
  if (cnt_x > 0 && cnt_i > 0) {
    int64_t mi = INT64_MAX;
    for (int64_t q = 0; q < ni; q++)
      if (ii[q] < mi) mi = ii[q];
    QV_CHECK(same_double(dbl_at(c[23], g), maxx - (double)mi));
  }
  /* sum(i * 2 - 1), max(len(s)) */
  QV_CHECK(valid_at(c[25], g) == (cnt_i > 0));
  if (cnt_i) QV_CHECK_EQ_INT(qv_array_int_at(c[25], g), 2 * si - cnt_i);
  QV_CHECK(valid_at(c[26], g) == (mins != NULL));
  {
    int64_t ml = -1;
    for (int64_t e = 0; e < m; e++)
      if (d->s[rows[e]] >= 0 && (int64_t)strlen(SV[d->s[rows[e]]]) > ml)
        ml = (int64_t)strlen(SV[d->s[rows[e]]]);
    if (ml >= 0) QV_CHECK_EQ_INT(qv_array_int_at(c[26], g), ml);
  }
  free(xs);
  free(is);
  free(ii);
}

/* The group-by of t on one thread and on `threads` (the partitioned path
 * forced on a small table): the two results must be equal value for value
 * (floats bitwise), since each group's rows are aggregated in table order
 * either way. Returns the multi-threaded one. */
static qv_status group_both(qv_table *t, const char *const *keys, int nk, const char *const *aggs,
                            int na, qv_group_by_options o, int threads, qv_table **out,
                            qv_error *err) {
  qv_table *one = NULL;
  o.threads = 1;
  qv_status st = qv_table_group_by_exprs(t, keys, nk, aggs, na, &o, &one, err);
  if (st != QV_OK) return st;
  o.threads = threads;
  st = qv_table_group_by_exprs(t, keys, nk, aggs, na, &o, out, err);
  if (st == QV_OK) {
    qv_error diff;
    diff.message[0] = 0;
    bool eq = qv_table_equals(one, *out, &diff);
    if (!eq) fprintf(stderr, "1 vs %d threads: %s\n", threads, diff.message);
    QV_CHECK(eq);
  }
  qv_table_unref(one);
  return st;
}

static void run_case_t(int64_t n, int groups, int n_batches, keyset ks, bool sort,
                       bool all_null_even, int threads) {
  data d = gen(n, groups, all_null_even);
  qv_table *t = make_table(&d, n_batches);
  const char *keys[3];
  int nk = 0;
  if (ks.use_k1) keys[nk++] = "k1";
  if (ks.use_k2) keys[nk++] = "k2";
  if (ks.use_d) keys[nk++] = "d";
  qv_group_by_options o;
  memset(&o, 0, sizeof o);
  o.sort = sort;
  qv_table *out = NULL;
  qv_error err;
  err.message[0] = 0;
  qv_status st = group_both(t, keys, nk, AGGS, N_AGGS, o, threads, &out, &err);
  if (st != QV_OK) fprintf(stderr, "group-by failed: %s\n", err.message);
  QV_CHECK(st == QV_OK);
  if (st != QV_OK) {
    qv_table_unref(t);
    data_free(&d);
    return;
  }
  QV_CHECK_EQ_INT(qv_table_num_columns(out), nk + N_AGGS);
  int64_t ng = qv_table_num_rows(out);
  /* every row belongs to exactly one group */
  int64_t *rows = malloc(sizeof(int64_t) * (size_t)(n + 1));
  int64_t *first = malloc(sizeof(int64_t) * (size_t)(ng + 1));
  int64_t covered = 0;
  if (ng > 0) {
    qv_array *batch = NULL;
    QV_CHECK(qv_table_batch(out, 0, &batch, &err) == QV_OK);
    for (int64_t g = 0; g < ng; g++) {
      int64_t m = 0;
      for (int64_t r = 0; r < n; r++)
        if (row_matches(&d, ks, batch->children, g, r)) rows[m++] = r;
      QV_CHECK(m > 0);
      if (m == 0) continue;
      first[g] = rows[0];
      covered += m;
      check_group(&d, batch, nk, g, rows, m);
    }
    if (!sort)
      for (int64_t g = 1; g < ng; g++) QV_CHECK(first[g - 1] < first[g]);
    if (sort && ks.use_k1 && nk == 1) /* ascending, nulls last */
      for (int64_t g = 1; g < ng; g++) {
        qv_array *k = batch->children[0];
        if (!valid_at(k, g - 1)) QV_CHECK(!valid_at(k, g) && false);
        else if (valid_at(k, g)) QV_CHECK(qv_array_int_at(k, g - 1) < qv_array_int_at(k, g));
      }
    qv_array_unref(batch);
  }
  QV_CHECK_EQ_INT(covered, nk == 0 ? n * ng : n);
  /* the mergeable aggregates alone (thread-local pre-aggregation on
   * several threads, merged states): the checked result's columns */
  if (!sort && nk > 0) {
    for (int pass = 0; pass < 2; pass++) {
      qv_table *m = NULL;
      o.threads = pass == 0 ? 1 : threads;
      qv_status sm = qv_table_group_by_exprs(t, keys, nk, MAGGS, N_MAGGS, &o, &m, &err);
      if (sm != QV_OK) fprintf(stderr, "mergeable group-by failed: %s\n", err.message);
      QV_CHECK(sm == QV_OK);
      if (sm != QV_OK) continue;
      for (int j = 0; j < nk; j++) check_column_close(out, m, keys[j]);
      for (int j = 0; j < N_MAGGS; j++) {
        const char *as = strstr(MAGGS[j], " AS ");
        check_column_close(out, m, as + 4);
      }
      qv_table_unref(m);
    }
  }
  free(rows);
  free(first);
  qv_table_unref(out);
  qv_table_unref(t);
  data_free(&d);
}

/* Every shape on one thread and on 2, 3 and 4 (partitioned paths). */
static void run_case(int64_t n, int groups, int n_batches, keyset ks, bool sort,
                     bool all_null_even) {
  static const int THREADS[] = {2, 3, 4};
  static int turn = 0;
  run_case_t(n, groups, n_batches, ks, sort, all_null_even, THREADS[turn++ % 3]);
}

static void test_many_shapes(void) {
  keyset k1 = {true, false, false}, k12 = {true, true, false}, kd = {false, false, true};
  keyset kd2 = {false, true, true}, none = {false, false, false};
  run_case(2000, 30, 5, k1, false, false);
  run_case(2000, 30, 5, k1, true, false);
  run_case(1500, 10, 4, k12, false, true); /* all-null x in half the groups */
  run_case(1200, 8, 6, kd, false, false);  /* dictionary per batch */
  run_case(1200, 8, 3, kd2, true, false);
  run_case(500, 1, 2, k1, false, false);      /* one group (plus null) */
  run_case(300, 100000, 3, k1, false, false); /* nearly every row its own group */
  run_case(700, 5, 1, none, false, false);    /* no keys: one group */
  run_case(1, 5, 1, k12, false, false);
  keyset k2 = {false, true, false}, k1d = {true, false, true};
  run_case(3000, 40, 7, k2, false, false);         /* one string key (inline path) */
  run_case(2500, 20000, 9, k12, true, false);      /* many groups, sorted */
  run_case(1800, 50, 4, k1d, false, true);         /* int + dictionary (grouper) */
  run_case_t(4000, 300, 11, k12, false, false, 8); /* more partitions than batches */
  run_case_t(2000, 30, 5, k1, false, false, 1);    /* one thread only */
}

/* corr / covar / covar_pop on both update paths (shifted per-group sums
 * for up to 65536 groups, Welford's update beyond), values far from zero
 * (1e8 + a little) so that a naive sum of squares would lose them, each
 * group's rows spread over the batches, on 1 and 2 threads; checked
 * against a two-pass brute force per group (median keeps it on the
 * partitioned path, so 1 and 2 threads must agree bitwise). corr(x, y) *
 * corr(x, y) reads one aggregate twice and must equal the square. */
static void test_corr_paths(void) {
  static const int64_t GROUPS[] = {500, 70000};
  for (int which = 0; which < 2; which++) {
    int64_t ng = GROUPS[which], per_g = 3, n = ng * per_g, nbat = 4;
    qv_type *st = qv_type_new(QV_STRUCT);
    qv_error err;
    QV_REQUIRE(qv_type_add_child(st, "k", true, qv_type_new(QV_INT64), NULL, &err) == QV_OK);
    QV_REQUIRE(qv_type_add_child(st, "x", true, qv_type_new(QV_DOUBLE), NULL, &err) == QV_OK);
    QV_REQUIRE(qv_type_add_child(st, "y", true, qv_type_new(QV_INT32), NULL, &err) == QV_OK);
    double *x = malloc(sizeof(double) * (size_t)n);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
    bool *xn = malloc((size_t)n);
    QV_REQUIRE(x && y && xn);
    qv_array *bs[4];
    int64_t per = n / nbat;
    tb_seed(0x5eed + (uint64_t)which);
    for (int64_t b = 0; b < nbat; b++) {
      qv_builder *bl = NULL;
      QV_REQUIRE(qv_builder_new(st, &bl, &err) == QV_OK);
      int64_t hi = b == nbat - 1 ? n : (b + 1) * per;
      for (int64_t r = b * per; r < hi; r++) {
        x[r] = 1e8 + (double)tb_rint(1000) / 8;
        y[r] = tb_rint(17) - 8;
        xn[r] = tb_rint(11) == 0;
        QV_REQUIRE(qv_builder_begin_struct(bl, &err) == QV_OK);
        QV_REQUIRE(qv_builder_append_int(qv_builder_child(bl, 0), r % ng, &err) == QV_OK);
        qv_builder *cx = qv_builder_child(bl, 1);
        QV_REQUIRE((xn[r] ? qv_builder_append_null(cx, &err)
                          : qv_builder_append_double(cx, x[r], &err)) == QV_OK);
        QV_REQUIRE(qv_builder_append_int(qv_builder_child(bl, 2), y[r], &err) == QV_OK);
        QV_REQUIRE(qv_builder_end_struct(bl, &err) == QV_OK);
      }
      QV_REQUIRE(qv_builder_finish(bl, &bs[b], &err) == QV_OK);
      qv_builder_free(bl);
    }
    qv_schema *schema = qv_schema_new(st);
    qv_table *t = NULL;
    QV_REQUIRE(qv_table_from_batches(schema, bs, nbat, &t, &err) == QV_OK);
    for (int64_t b = 0; b < nbat; b++) qv_array_unref(bs[b]);
    qv_schema_unref(schema);
    const char *keys[] = {"k"};
    const char *aggs[] = {"corr(x, y) AS c", "covar(x, y) AS cv", "covar_pop(x, y) AS cvp",
                          "corr(x, y) * corr(x, y) AS r2", "median(y) AS md"};
    qv_group_by_options o;
    memset(&o, 0, sizeof o);
    qv_table *out = NULL;
    qv_status s2 = group_both(t, keys, 1, aggs, 5, o, 2, &out, &err);
    if (s2 != QV_OK) fprintf(stderr, "corr paths %d: %s\n", which, err.message);
    QV_REQUIRE(s2 == QV_OK);
    QV_CHECK_EQ_INT(qv_table_num_rows(out), ng);
    qv_array *res = NULL;
    QV_REQUIRE(qv_table_batch(out, 0, &res, &err) == QV_OK);
    int bad = 0;
    for (int64_t g = 0; g < ng && bad < 5; g++) {
      int64_t kg = qv_array_int_at(res->children[0], g); /* first appearance: k == g */
      QV_CHECK_EQ_INT(kg, g);
      double sx = 0, sy = 0;
      int64_t np = 0;
      for (int64_t r = kg; r < n; r += ng)
        if (!xn[r]) np++, sx += x[r], sy += y[r];
      double ax = np ? sx / (double)np : 0, ay = np ? sy / (double)np : 0, cxy = 0, vx = 0, vy = 0;
      for (int64_t r = kg; r < n; r += ng)
        if (!xn[r]) {
          cxy += (x[r] - ax) * (y[r] - ay);
          vx += (x[r] - ax) * (x[r] - ax);
          vy += (y[r] - ay) * (y[r] - ay);
        }
      bool ok = valid_at(res->children[1], g) == (np > 0) &&
                valid_at(res->children[2], g) == (np > 1) &&
                valid_at(res->children[3], g) == (np > 0);
      if (np > 1) {
        double wc = cxy / sqrt(vx * vy), gc = dbl_at(res->children[1], g);
        double wcv = cxy / (double)(np - 1), gcv = dbl_at(res->children[2], g);
        double wcp = cxy / (double)np, gcp = dbl_at(res->children[3], g);
        double gr2 = dbl_at(res->children[4], g);
        ok = ok && (same_double(gc, wc) || fabs(gc - wc) < 1e-9);
        ok = ok && (same_double(gr2, gc * gc));
        ok = ok && fabs(gcv - wcv) < 1e-9 * fmax(1, fabs(wcv));
        ok = ok && fabs(gcp - wcp) < 1e-9 * fmax(1, fabs(wcp));
      }
      if (!ok) {
        bad++;
        fprintf(stderr, "corr paths %d: group %" PRId64 " (%" PRId64 " pairs) differs\n", which, g,
                np);
      }
    }
    QV_CHECK(bad == 0);
    qv_array_unref(res);
    qv_table_unref(out);
    qv_table_unref(t);
    free(x);
    free(y);
    free(xn);
  }
}

/* Hash-path keys the shapes above do not cover: a double key (-0.0 with
 * 0.0, every NaN one group, nulls one group) and strings longer than the
 * 16 inline bytes, alone and beside an int64 key, checked against counts
 * found by brute force, on 1 and 4 threads. `dom` string values: 60 take
 * the direct path by their codes, 1500 the hash path (the thread-local
 * one-string-key table). */
static void hash_keys_case(int dom) {
  int64_t n = 5000;
  qv_type *st = qv_type_new(QV_STRUCT);
  qv_error err;
  QV_REQUIRE(qv_type_add_child(st, "f", true, qv_type_new(QV_DOUBLE), NULL, &err) == QV_OK);
  QV_REQUIRE(qv_type_add_child(st, "s", true, qv_type_new(QV_LARGE_STRING), NULL, &err) == QV_OK);
  QV_REQUIRE(qv_type_add_child(st, "i", true, qv_type_new(QV_INT32), NULL, &err) == QV_OK);
  double *f = malloc(sizeof(double) * (size_t)n);
  int *sv = malloc(sizeof(int) * (size_t)n), *iv = malloc(sizeof(int) * (size_t)n);
  bool *fn = malloc((size_t)n);
  char buf[64];
  qv_array *bs[5];
  int64_t per = n / 5;
  for (int b = 0; b < 5; b++) {
    qv_builder *bl = NULL;
    QV_REQUIRE(qv_builder_new(st, &bl, &err) == QV_OK);
    for (int64_t r = b * per; r < (b + 1) * per; r++) {
      int c = tb_rint(8);
      f[r] = c == 0 ? NAN : c == 1 ? -NAN : c == 2 ? -0.0 : c == 3 ? 0.0 : (double)tb_rint(40) / 4;
      fn[r] = tb_rint(15) == 0;
      sv[r] = tb_rint(25) == 0 ? -1 : tb_rint(dom);
      iv[r] = tb_rint(3);
      QV_REQUIRE(qv_builder_begin_struct(bl, &err) == QV_OK);
      qv_builder *ch = qv_builder_child(bl, 0);
      QV_REQUIRE((fn[r] ? qv_builder_append_null(ch, &err)
                        : qv_builder_append_double(ch, f[r], &err)) == QV_OK);
      ch = qv_builder_child(bl, 1);
      /* 14..31 bytes: some inline, most not; equal prefixes of 16 bytes */
      snprintf(buf, sizeof buf, "a-long-prefix-%0*d", 1 + sv[r] % 17, sv[r]);
      QV_REQUIRE((sv[r] < 0 ? qv_builder_append_null(ch, &err)
                            : qv_builder_append_string(ch, buf, &err)) == QV_OK);
      ch = qv_builder_child(bl, 2);
      QV_REQUIRE(qv_builder_append_int(ch, iv[r], &err) == QV_OK);
      QV_REQUIRE(qv_builder_end_struct(bl, &err) == QV_OK);
    }
    QV_REQUIRE(qv_builder_finish(bl, &bs[b], &err) == QV_OK);
    qv_builder_free(bl);
  }
  qv_schema *schema = qv_schema_new(st);
  qv_table *t = NULL;
  QV_REQUIRE(qv_table_from_batches(schema, bs, 5, &t, &err) == QV_OK);
  for (int b = 0; b < 5; b++) qv_array_unref(bs[b]);
  qv_schema_unref(schema);
  n = per * 5;
  /* canonical key of row r for the brute force */
  const char *aggs[] = {"count(*) AS n", "first(i) AS fi", "mean(i) AS mi", "sum(i) AS si"};
  for (int which = 0; which < 3; which++) {
    const char *k_f = "f", *k_s[] = {"s", "i"};
    const char *const *keys = which == 0 ? &k_f : k_s;
    int nk = which == 0 ? 1 : (which == 1 ? 1 : 2);
    qv_group_by_options o;
    memset(&o, 0, sizeof o);
    qv_table *out = NULL;
    qv_status s2 = group_both(t, keys, nk, aggs, 4, o, 4, &out, &err);
    if (s2 != QV_OK) fprintf(stderr, "hash keys %d: %s\n", which, err.message);
    QV_REQUIRE(s2 == QV_OK);
    int64_t ng = qv_table_num_rows(out);
    qv_array *res = NULL;
    QV_REQUIRE(qv_table_batch(out, 0, &res, &err) == QV_OK);
    int64_t covered = 0, prev_first = -1;
    for (int64_t g = 0; g < ng; g++) {
      qv_array *k0 = res->children[0];
      int64_t m = 0, first = -1, isum = 0;
      for (int64_t r = 0; r < n; r++) {
        bool match;
        if (which == 0) {
          if (!valid_at(k0, g)) match = fn[r];
          else if (fn[r]) match = false;
          else {
            double kv = dbl_at(k0, g);
            match = isnan(kv) ? isnan(f[r]) : kv == f[r];
            /* the key comes back canonical: 0.0, not -0.0 */
            if (kv == 0.0) QV_CHECK(!signbit(kv));
          }
        } else {
          if (!valid_at(k0, g)) match = sv[r] < 0;
          else if (sv[r] < 0) match = false;
          else {
            char want[64];
            int64_t s0 = qv_array_offset_at(k0, g), s1 = qv_array_offset_at(k0, g + 1);
            snprintf(want, sizeof want, "a-long-prefix-%0*d", 1 + sv[r] % 17, sv[r]);
            match = (int64_t)strlen(want) == s1 - s0 &&
                    memcmp(want, k0->buffers[2]->data + s0, (size_t)(s1 - s0)) == 0;
          }
          if (which == 2 && match) match = qv_array_int_at(res->children[1], g) == iv[r];
        }
        if (match) {
          if (first < 0) first = r;
          m++;
          isum += iv[r];
        }
      }
      QV_CHECK(m > 0);
      QV_CHECK_EQ_INT(qv_array_int_at(res->children[nk], g), m);
      QV_CHECK_EQ_INT(qv_array_int_at(res->children[nk + 1], g), iv[first]);
      QV_CHECK(fabs(dbl_at(res->children[nk + 2], g) - (double)isum / (double)m) < 1e-12);
      QV_CHECK_EQ_INT(qv_array_int_at(res->children[nk + 3], g), isum);
      QV_CHECK(first > prev_first); /* first-appearance order */
      prev_first = first;
      covered += m;
    }
    QV_CHECK_EQ_INT(covered, n);
    qv_array_unref(res);
    qv_table_unref(out);
  }
  qv_table_unref(t); /* the schema took the struct type's reference */
  free(f);
  free(sv);
  free(iv);
  free(fn);
}

static void test_hash_keys(void) {
  hash_keys_case(60);
  hash_keys_case(1500);
}

static void test_empty_and_errors(void) {
  data d = gen(0, 3, false);
  qv_table *t = make_table(&d, 1);
  qv_error err;
  qv_table *out = NULL;
  const char *k = "k1";
  const char *aggs[] = {"count(*)", "sum(x)", "max(s)", "list(i)"};
  qv_status st0 = qv_table_group_by_exprs(t, &k, 1, aggs, 4, NULL, &out, &err);
  if (st0 != QV_OK) fprintf(stderr, "%s\n", err.message);
  QV_REQUIRE(st0 == QV_OK);
  QV_CHECK_EQ_INT(qv_table_num_rows(out), 0);
  QV_CHECK_EQ_INT(qv_table_num_columns(out), 5);
  qv_table_unref(out);
  QV_REQUIRE(qv_table_group_by_exprs(t, NULL, 0, aggs, 4, NULL, &out, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_table_num_rows(out), 1);
  qv_array *b = NULL;
  QV_REQUIRE(qv_table_batch(out, 0, &b, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_array_int_at(b->children[0], 0), 0);
  QV_CHECK(!valid_at(b->children[1], 0) && !valid_at(b->children[2], 0));
  qv_array_unref(b);
  qv_table_unref(out);
  qv_table_unref(t);
  data_free(&d);

  d = gen(50, 3, false);
  t = make_table(&d, 2);
  struct {
    const char *key, *agg, *msg;
    qv_status st;
  } cases[] = {
      {"k3", "count(*)", "group-by key 1: no column named 'k3' (did you mean 'k1'?)", QV_EARG},
      {"k1", "sum(s)", "sum(s): sum is not defined for a column of type string", QV_ETYPE},
      {"k1", "any(x)", "any(x): any is not defined for a column of type double", QV_ETYPE},
      {"k1", "mean(xx)", "mean(xx): no column named 'xx' (did you mean 'x'?)", QV_EARG},
      {"k1", "quantile(x, 2)", "the quantile must be between 0 and 1", QV_EARG},
      {"k1", "sum(x", "unbalanced parentheses", QV_EARG},
      {"k1", "x + 1", "no aggregate call in 'x + 1'", QV_EARG},
      {"k1", "sum(x) AS k1", "two output columns are named 'k1'", QV_EARG},
      {"k1", "corr(x)", "corr takes 2 arguments, not 1", QV_EARG},
      {"k1", "sum(x) + nope", "aggregate 1 ('sum(x) + nope')", QV_EINVAL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    out = NULL;
    err.message[0] = 0;
    qv_status st = qv_table_group_by_exprs(t, &cases[i].key, 1, &cases[i].agg, 1, NULL, &out, &err);
    QV_CHECK_EQ_INT(st, cases[i].st);
    if (!strstr(err.message, cases[i].msg))
      fprintf(stderr, "case %zu: message '%s' lacks '%s'\n", i, err.message, cases[i].msg);
    QV_CHECK(strstr(err.message, cases[i].msg) != NULL);
    QV_CHECK(out == NULL);
  }
  /* an int64 sum that overflows */
  qv_table_unref(t);
  data_free(&d);
}

static void test_overflow_and_budget(void) {
  data d = gen(10, 1, false);
  for (int64_t r = 0; r < 10; r++) {
    d.iv[r] = INT64_MAX / 4;
    d.in[r] = false;
    d.k1[r] = 0;
    d.k1n[r] = false;
  }
  qv_table *t = make_table(&d, 2);
  const char *k = "k1", *agg = "sum(i)";
  qv_table *out = NULL;
  qv_error err;
  QV_CHECK(qv_table_group_by_exprs(t, &k, 1, &agg, 1, NULL, &out, &err) == QV_ERANGE);
  QV_CHECK(strstr(err.message, "sum(i): the sum overflows int64") != NULL);
  qv_group_by_options o;
  memset(&o, 0, sizeof o);
  o.memory_limit = 16;
  agg = "count(*)";
  QV_CHECK(qv_table_group_by_exprs(t, &k, 1, &agg, 1, &o, &out, &err) == QV_ENOMEM);
  QV_CHECK(strstr(err.message, "memory limit of 16 bytes") != NULL);
  qv_table_unref(t);
  data_free(&d);
}

int main(void) {
  tb_seed(88172645463325252ull);
  QV_RUN(test_many_shapes);
  QV_RUN(test_hash_keys);
  QV_RUN(test_corr_paths);
  QV_RUN(test_empty_and_errors);
  QV_RUN(test_overflow_and_budget);
  return QV_TEST_END();
}
