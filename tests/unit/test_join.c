/* test_join.c — hash join (qv_join_indices, qv_table_join), distinct rows
 * (qv_table_distinct) and value counts against brute force. Random tables
 * of several batches, keys drawn from small domains (duplicates, skew,
 * all-match, no-match), nulls, NaN (two bit patterns), +-0.0, empty sides,
 * dictionaries that differ per batch, multi-column keys and mixed key
 * types (int32 vs int64, uint8 vs double, string vs large_string,
 * dictionary vs string); every join type and build side. The oracle
 * compares every left row with every right row and emits the pairs in the
 * documented order; the tables carry a row-number payload column per side,
 * so the joined table's rows are checked against the oracle's pairs too. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "compute/join_internal.h"
#include "quiver/compute.h"
#include "qv_build.h"
#include "table_test_util.h"

/* ----------------------------------------------------------- keys -- */

typedef enum kt { K_I32, K_I64, K_U8, K_F64, K_F32, K_STR, K_LSTR, K_DICT } kt;

/* A key cell as the oracle sees it. */
typedef struct cell {
  bool null;
  bool is_str;
  double d;
  char s[24];
} cell;

static bool cell_eq(const cell *a, const cell *b) {
  if (a->null || b->null || a->is_str != b->is_str) return false;
  if (a->is_str) return strcmp(a->s, b->s) == 0;
  if (isnan(a->d) || isnan(b->d)) return isnan(a->d) && isnan(b->d);
  return a->d == b->d;
}

static qv_type *kt_type(kt k) {
  switch (k) {
    case K_I32: return qv_type_new(QV_INT32);
    case K_I64: return qv_type_new(QV_INT64);
    case K_U8: return qv_type_new(QV_UINT8);
    case K_F64: return qv_type_new(QV_DOUBLE);
    case K_F32: return qv_type_new(QV_FLOAT);
    case K_STR: return qv_type_new(QV_STRING);
    case K_LSTR: return qv_type_new(QV_LARGE_STRING);
    case K_DICT: {
      qv_type *t = qv_type_new(QV_DICTIONARY);
      t->index_type = qv_type_new(QV_INT8);
      t->value_type = qv_type_new(QV_STRING);
      return t;
    }
  }
  return NULL;
}

/* The number of a key value v in [0, domain) ("skewed": half the rows 0). */
static int64_t draw(int64_t domain, bool skew) {
  if (skew && orc_int(2) == 0) return 0;
  return orc_int(domain);
}

static const double special[4] = {0.0, -0.0, NAN, 0.5};

/* Value number v as a double: 0 -> 0.0, 1 -> -0.0, 2 -> NaN, 3 -> 0.5, v >= 4 -> v. */
static double num_of(int64_t v, int64_t shift) {
  if (v < 4) return special[v];
  return (double)(v + shift);
}

/* A string / large_string array of any length (tb_str takes at most 255
 * strings); NULL entries are null. */
static qv_array *str_array(qv_type_id id, int64_t n, const char *const *s) {
  bool large = id == QV_LARGE_STRING;
  int w = large ? 8 : 4;
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++)
    if (s[i]) total += (int64_t)strlen(s[i]);
  qv_buffer *bits = tb_buf(NULL, (n + 7) / 8), *offs = tb_buf(NULL, (n + 1) * w);
  qv_buffer *data = tb_buf(NULL, total);
  int64_t pos = 0;
  for (int64_t i = 0; i <= n; i++) {
    if (large) memcpy(offs->data + 8 * i, &pos, 8);
    else {
      int32_t p32 = (int32_t)pos;
      memcpy(offs->data + 4 * i, &p32, 4);
    }
    if (i < n && s[i]) {
      qv_bit_set(bits->data, i);
      size_t l = strlen(s[i]);
      memcpy(data->data + pos, s[i], l);
      pos += (int64_t)l;
    }
  }
  qv_buffer *b[3] = {bits, offs, data};
  return tb_array(tb_type(id), n, 3, b, 0, NULL);
}

/* One batch of a key column of `len` rows; cells receive the oracle's view. */
static qv_array *gen_keys(kt k, int64_t len, int64_t domain, bool skew, double null_p,
                          int64_t shift, cell *cells) {
  qv_type *t = kt_type(k);
  int64_t *vals = malloc(sizeof(int64_t) * (size_t)(len ? len : 1));
  char *valid = malloc((size_t)len + 1);
  for (int64_t i = 0; i < len; i++) {
    vals[i] = draw(domain, skew);
    bool null = orc_int(1000) < (int64_t)(null_p * 1000);
    valid[i] = null ? '0' : '1';
    cells[i].null = null;
    cells[i].is_str = k == K_STR || k == K_LSTR || k == K_DICT;
    if (cells[i].is_str)
      snprintf(cells[i].s, sizeof cells[i].s, "k%lld", (long long)(vals[i] + shift));
    else if (k == K_F64 || k == K_F32) cells[i].d = num_of(vals[i], shift);
    else cells[i].d = (double)(vals[i] + shift);
  }
  valid[len] = 0;
  qv_array *a = NULL;
  if (k == K_I32 || k == K_I64 || k == K_U8 || k == K_F64 || k == K_F32) {
    int w = k == K_I32 || k == K_F32 ? 4 : k == K_U8 ? 1 : 8;
    uint8_t *buf = calloc((size_t)(len ? len : 1), (size_t)w);
    for (int64_t i = 0; i < len; i++) {
      int64_t x = vals[i] + shift;
      if (k == K_I32) {
        int32_t y = (int32_t)x;
        memcpy(buf + 4 * i, &y, 4);
      } else if (k == K_I64) memcpy(buf + 8 * i, &x, 8);
      else if (k == K_U8) buf[i] = (uint8_t)x;
      else if (k == K_F64) {
        double d = num_of(vals[i], shift);
        if (vals[i] == 2 && orc_int(2)) { /* a second NaN bit pattern */
          uint64_t bits;
          memcpy(&bits, &d, 8);
          bits |= 1;
          memcpy(&d, &bits, 8);
        }
        memcpy(buf + 8 * i, &d, 8);
      } else {
        float f = (float)num_of(vals[i], shift);
        memcpy(buf + 4 * i, &f, 4);
      }
    }
    a = tb_prim(t, len, valid, buf, len * w);
    free(buf);
  } else if (k == K_STR || k == K_LSTR) {
    const char **s = malloc(sizeof(char *) * (size_t)(len ? len : 1));
    for (int64_t i = 0; i < len; i++) s[i] = cells[i].null ? NULL : cells[i].s;
    a = len < 256 ? tb_str(k == K_STR ? QV_STRING : QV_LARGE_STRING, len, s, NULL)
                  : str_array(k == K_STR ? QV_STRING : QV_LARGE_STRING, len, s);
    qv_type_unref(t);
    free(s);
  } else { /* dictionary: this batch's own dictionary, values in a shuffled order */
    int64_t nd = domain < 100 ? domain : 100;
    char names[100][24];
    const char *dv[100];
    int64_t perm[100];
    for (int64_t j = 0; j < nd; j++) perm[j] = j;
    for (int64_t j = nd - 1; j > 0; j--) {
      int64_t r = orc_int(j + 1), x = perm[j];
      perm[j] = perm[r];
      perm[r] = x;
    }
    for (int64_t j = 0; j < nd; j++) {
      snprintf(names[j], sizeof names[j], "k%lld", (long long)(perm[j] + shift));
      dv[j] = names[j];
    }
    int8_t *idx = calloc((size_t)(len ? len : 1), 1);
    for (int64_t i = 0; i < len; i++) {
      int64_t v = vals[i] % nd;
      snprintf(cells[i].s, sizeof cells[i].s, "k%lld", (long long)(v + shift));
      for (int64_t j = 0; j < nd; j++)
        if (perm[j] == v) idx[i] = (int8_t)j;
    }
    a = tb_prim(t, len, valid, idx, len);
    a->dictionary = tb_str(QV_STRING, nd, dv, NULL);
    free(idx);
  }
  free(vals);
  free(valid);
  return a;
}

/* A table side: key columns "k0".., a payload "row" (row number) and "v". */
typedef struct side {
  qv_table *t;
  int64_t n;
  int nk;
  cell *cells; /* n * nk, row-major */
} side;

static side make_side(const kt *kts, int nk, int64_t n, int64_t domain, bool skew, double null_p,
                      int64_t shift, const char *payload) {
  side s = {NULL, n, nk, calloc((size_t)(n * nk + 1), sizeof(cell))};
  qv_type *st = qv_type_new(QV_STRUCT);
  for (int j = 0; j < nk; j++) {
    char name[16];
    snprintf(name, sizeof name, "k%d", j);
    tb_child(st, name, kt_type(kts[j]));
  }
  tb_child(st, payload, qv_type_new(QV_INT64));
  tb_child(st, "v", qv_type_new(QV_INT32));
  qv_schema *schema = qv_schema_new(st);
  qv_array **batches = NULL;
  int64_t nb = 0, done = 0;
  cell *tmp = calloc((size_t)(n + 1), sizeof(cell));
  while (done < n) {
    int64_t len = 1 + orc_int(n / 3 + 2);
    if (len > n - done) len = n - done;
    qv_array *b = qv_array_new(st, 1, nk + 2);
    b->length = len;
    b->null_count = 0;
    for (int j = 0; j < nk; j++) {
      b->children[j] = gen_keys(kts[j], len, domain, skew, null_p, shift, tmp);
      for (int64_t i = 0; i < len; i++) s.cells[(done + i) * nk + j] = tmp[i];
    }
    int64_t *rows = malloc(sizeof(int64_t) * (size_t)len);
    int32_t *v = malloc(sizeof(int32_t) * (size_t)len);
    for (int64_t i = 0; i < len; i++) {
      rows[i] = done + i;
      v[i] = (int32_t)(done + i) * 10;
    }
    b->children[nk] = tb_prim(qv_type_new(QV_INT64), len, NULL, rows, len * 8);
    b->children[nk + 1] = tb_prim(qv_type_new(QV_INT32), len, NULL, v, len * 4);
    free(rows);
    free(v);
    batches = realloc(batches, sizeof *batches * (size_t)(nb + 1));
    batches[nb++] = b;
    done += len;
  }
  free(tmp);
  RT_OK(qv_table_from_batches(schema, batches, nb, &s.t, &E));
  for (int64_t i = 0; i < nb; i++) qv_array_unref(batches[i]);
  free(batches);
  qv_schema_unref(schema);
  return s;
}

static void free_side(side *s) {
  qv_table_unref(s->t);
  free(s->cells);
}

static bool rows_eq(const side *l, int64_t i, const side *r, int64_t j) {
  for (int k = 0; k < l->nk; k++)
    if (!cell_eq(&l->cells[i * l->nk + k], &r->cells[j * r->nk + k])) return false;
  return true;
}

/* ---------------------------------------------------------- oracle -- */

static int64_t oracle(const side *l, const side *r, qv_join_type how, qv_join_build build,
                      int64_t **ol, int64_t **or_) {
  int64_t cap = 16, n = 0;
  int64_t *a = malloc(sizeof(int64_t) * (size_t)cap), *b = malloc(sizeof(int64_t) * (size_t)cap);
#define EMIT(x, y)                                                                                 \
  do {                                                                                             \
    if (n == cap) {                                                                                \
      cap *= 2;                                                                                    \
      a = realloc(a, sizeof(int64_t) * (size_t)cap);                                               \
      b = realloc(b, sizeof(int64_t) * (size_t)cap);                                               \
    }                                                                                              \
    a[n] = (x);                                                                                    \
    b[n++] = (y);                                                                                  \
  } while (0)
  if (how == QV_JOIN_SEMI || how == QV_JOIN_ANTI) {
    for (int64_t i = 0; i < l->n; i++) {
      bool m = false;
      for (int64_t j = 0; j < r->n && !m; j++) m = rows_eq(l, i, r, j);
      if (m == (how == QV_JOIN_SEMI)) EMIT(i, -1);
    }
  } else {
    bool bl = build == QV_JOIN_BUILD_LEFT || (build == QV_JOIN_BUILD_AUTO && l->n < r->n);
    const side *bs = bl ? l : r, *ps = bl ? r : l;
    bool keep_p =
        how == QV_JOIN_FULL || (how == QV_JOIN_LEFT && !bl) || (how == QV_JOIN_RIGHT && bl);
    bool keep_b =
        how == QV_JOIN_FULL || (how == QV_JOIN_LEFT && bl) || (how == QV_JOIN_RIGHT && !bl);
    bool *hit = calloc((size_t)(bs->n + 1), 1);
    for (int64_t i = 0; i < ps->n; i++) {
      bool any = false;
      for (int64_t j = 0; j < bs->n; j++)
        if (bl ? rows_eq(bs, j, ps, i) : rows_eq(ps, i, bs, j)) {
          any = hit[j] = true;
          if (bl) EMIT(j, i);
          else EMIT(i, j);
        }
      if (!any && keep_p) {
        if (bl) EMIT(-1, i);
        else EMIT(i, -1);
      }
    }
    if (keep_b)
      for (int64_t j = 0; j < bs->n; j++)
        if (!hit[j]) {
          if (bl) EMIT(j, -1);
          else EMIT(-1, j);
        }
    free(hit);
  }
#undef EMIT
  *ol = a;
  *or_ = b;
  return n;
}

/* Column `name` of a table's single batch, or NULL (0 rows). */
static qv_array *col_of(qv_table *t, const char *name) {
  int32_t c = qv_schema_find(qv_table_schema(t), name);
  if (c < 0 || qv_table_num_batches(t) == 0) return NULL;
  qv_array *b = NULL;
  int64_t n = qv_table_num_rows(t);
  int64_t *all = malloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) all[i] = i;
  RT_OK(qv_table_gather(t, all, n, &b, &E));
  free(all);
  qv_array *r = qv_array_ref(b->children[c]);
  qv_array_unref(b);
  return r;
}

/* The int64 payload column equals the oracle's rows (null for -1). */
static bool payload_matches(qv_table *t, const char *name, const int64_t *want, int64_t n) {
  if (qv_table_num_rows(t) != n) {
    fprintf(stderr, "payload %s: %lld rows, want %lld\n", name, (long long)qv_table_num_rows(t),
            (long long)n);
    return false;
  }
  if (n == 0) return true;
  qv_array *a = col_of(t, name);
  if (!a) return false;
  bool ok = true;
  for (int64_t i = 0; i < n && ok; i++) {
    bool valid = qv_array_is_valid(a, i);
    if (want[i] < 0 ? valid : (!valid || qv_array_int_at(a, i) != want[i])) {
      fprintf(stderr, "payload %s row %lld: want %lld\n", name, (long long)i, (long long)want[i]);
      ok = false;
    }
  }
  qv_array_unref(a);
  return ok;
}

static const char *const ON[3] = {"k0", "k1", "k2"};

/* Every join type and build side over one pair of sides. */
static void check_all(const side *l, const side *r, const char *what) {
  /* the fixed-width path, the grouper's, and a grace hash join (a budget
   * of one byte, at most 4 partitions) */
  for (int force = 0; force < 3; force++)
    for (int how = 0; how <= QV_JOIN_ANTI; how++)
      for (int build = 0; build <= QV_JOIN_BUILD_RIGHT; build++) {
        qvj_force_grouper = force == 1;
        qvj_spill_max_parts = 4;
        qv_join_options o = {0};
        o.how = (qv_join_type)how;
        o.build = (qv_join_build)build;
        o.left_on = ON;
        o.n_keys = l->nk;
        o.memory_limit = force == 2 ? 1 : -1;
        int64_t spills = qvj_spill_runs;
        int64_t *wl, *wr, *gl = NULL, *gr = NULL, gn = -1;
        int64_t wn = oracle(l, r, o.how, o.build, &wl, &wr);
        RT_OK(qv_join_indices(l->t, r->t, &o, &gl, &gr, &gn, &E));
        bool ok = gn == wn;
        for (int64_t i = 0; ok && i < wn; i++)
          ok = gl[i] == wl[i] && (how >= QV_JOIN_SEMI || gr[i] == wr[i]);
        if (!ok)
          fprintf(stderr,
                  "%s: %s build %d: %lld pairs, oracle %lld (first difference shown above)\n", what,
                  qv_join_type_name(o.how), build, (long long)gn, (long long)wn);
        QV_CHECK(ok);
        /* a side with rows builds a hash table: spilled under the budget */
        bool bl = build == QV_JOIN_BUILD_LEFT || (build == QV_JOIN_BUILD_AUTO && l->n < r->n);
        QV_CHECK_EQ_INT(qvj_spill_runs - spills, force == 2 && (bl ? l->n : r->n) > 0 ? 1 : 0);
        qv_table *j = NULL;
        RT_OK(qv_table_join(l->t, r->t, &o, &j, &E));
        if (j) {
          QV_CHECK(payload_matches(j, "lrow", wl, wn));
          if (how < QV_JOIN_SEMI) {
            QV_CHECK(payload_matches(j, "rrow", wr, wn));
            const qv_schema *s = qv_table_schema(j);
            QV_CHECK(qv_schema_find(s, "v") >= 0 && qv_schema_find(s, "v_right") >= 0);
            QV_CHECK(qv_schema_find(s, "k0_right") < 0);
            QV_CHECK(qv_schema_num_fields(s) == l->nk * 1 + 2 + 2);
          } else {
            QV_CHECK(qv_schema_num_fields(qv_table_schema(j)) == l->nk + 2);
          }
        }
        qv_table_unref(j);
        free(gl);
        free(gr);
        free(wl);
        free(wr);
      }
  qvj_force_grouper = false;
  qvj_spill_max_parts = 256;
}

static void run_case(const kt *lk, const kt *rk, int nk, int64_t nl, int64_t nr, int64_t domain,
                     bool skew, double null_p, int64_t rshift, const char *what) {
  side l = make_side(lk, nk, nl, domain, skew, null_p, 0, "lrow");
  side r = make_side(rk, nk, nr, domain, skew, null_p, rshift, "rrow");
  check_all(&l, &r, what);
  free_side(&l);
  free_side(&r);
}

static void test_join_types(void) {
  const kt i64[1] = {K_I64}, i32[1] = {K_I32}, f64[1] = {K_F64}, f32[1] = {K_F32}, u8[1] = {K_U8};
  const kt str[1] = {K_STR}, lstr[1] = {K_LSTR}, dict[1] = {K_DICT};
  run_case(i64, i64, 1, 60, 40, 12, false, 0.1, 0, "int64");
  run_case(i64, i64, 1, 30, 50, 12, false, 0.1, 0, "int64 larger right");
  run_case(i32, i64, 1, 50, 50, 10, false, 0.15, 0, "int32 vs int64");
  run_case(u8, f64, 1, 40, 45, 9, false, 0.1, 0, "uint8 vs double");
  run_case(f64, f64, 1, 60, 50, 6, false, 0.1, 0, "double NaN +-0");
  run_case(f32, f64, 1, 40, 30, 6, false, 0.1, 0, "float vs double");
  run_case(str, lstr, 1, 50, 40, 15, false, 0.1, 0, "string vs large_string");
  run_case(dict, str, 1, 50, 40, 8, false, 0.1, 0, "dictionary vs string");
  run_case(dict, dict, 1, 60, 50, 8, true, 0.1, 0, "dictionaries per batch, skewed");
  run_case(i64, i64, 1, 40, 30, 1, false, 0.0, 0, "all match");
  run_case(i64, i64, 1, 40, 30, 20, false, 0.1, 1000, "no match");
  run_case(i64, i64, 1, 0, 30, 5, false, 0.1, 0, "empty left");
  run_case(i64, i64, 1, 30, 0, 5, false, 0.1, 0, "empty right");
  run_case(i64, i64, 1, 0, 0, 5, false, 0.1, 0, "both empty");
  run_case(i64, i64, 1, 80, 80, 5, true, 0.05, 0, "skewed");
  run_case(i64, i64, 1, 30, 30, 5, false, 1.0, 0, "all null");
  const kt ml[3] = {K_I32, K_STR, K_F64}, mr[3] = {K_I64, K_LSTR, K_F64};
  run_case(ml, mr, 3, 70, 60, 3, false, 0.05, 0, "three keys, mixed widths");
  const kt dl[2] = {K_DICT, K_U8}, dr[2] = {K_STR, K_I32};
  run_case(dl, dr, 2, 60, 70, 4, true, 0.1, 0, "dictionary + uint8 vs string + int32");
}

/* A larger random run (hash table growth, many batches), and mapped tables. */
static void test_join_larger_mapped(void) {
  const kt i64[1] = {K_I64};
  side l = make_side(i64, 1, 3000, 900, false, 0.02, 0, "lrow");
  side r = make_side(i64, 1, 2000, 900, false, 0.02, 0, "rrow");
  qv_table *ml = rt_mapped(l.t), *mr = rt_mapped(r.t);
  qv_table_unref(l.t);
  qv_table_unref(r.t);
  l.t = ml;
  r.t = mr;
  check_all(&l, &r, "mapped int64");
  /* the pairs counted and written in many parts (join.c's emit) */
  int64_t emit_part = qvj_emit_part;
  qvj_emit_part = 97;
  check_all(&l, &r, "mapped int64, parts of 97 probe rows");
  qvj_emit_part = emit_part;
  free_side(&l);
  free_side(&r);
  rt_cleanup();
}

/* Two runs' pairs (a and b) are the same, pair for pair (semi/anti: the
 * left rows only); frees both. */
static void check_same_pairs(int how, int64_t *al, int64_t *ar, int64_t an, int64_t *bl,
                             int64_t *br, int64_t bn) {
  bool same = an == bn;
  for (int64_t i = 0; same && i < an; i++)
    same = al[i] == bl[i] && (how >= QV_JOIN_SEMI || ar[i] == br[i]);
  QV_CHECK(same);
  free(al);
  free(ar);
  free(bl);
  free(br);
}

/* For every join type on one key column: the pairs of the default path
 * (fixed-width, partitioned) equal the grouper path's, pair for pair, and
 * there are more than min_pairs of them (-1: any number). */
static void check_pairs_like_grouper(const side *l, const side *r, int64_t min_pairs) {
  for (int how = 0; how <= QV_JOIN_ANTI; how++) {
    qv_join_options o = {0};
    o.how = (qv_join_type)how;
    o.left_on = ON;
    o.n_keys = 1;
    int64_t *al = NULL, *ar = NULL, an = -1, *bl = NULL, *br = NULL, bn = -2;
    qvj_force_grouper = false;
    RT_OK(qv_join_indices(l->t, r->t, &o, &al, &ar, &an, &E));
    qvj_force_grouper = true;
    RT_OK(qv_join_indices(l->t, r->t, &o, &bl, &br, &bn, &E));
    qvj_force_grouper = false;
    QV_CHECK_EQ_INT(an, bn);
    QV_CHECK(an > min_pairs);
    check_same_pairs(how, al, ar, an, bl, br, bn);
  }
}

/* Large sides (the fixed-width path's partitioned build and parallel
 * probe): its pairs equal the grouper path's, pair for pair. */
static void test_fast_path_large(void) {
  const kt ks[2][1] = {{K_I64}, {K_F64}};
  for (int k = 0; k < 2; k++) {
    side l = make_side(ks[k], 1, 150000, 60000, false, 0.01, 0, "lrow");
    side r = make_side(ks[k], 1, 100000, 60000, k == 1, 0.01, 0, "rrow");
    check_pairs_like_grouper(&l, &r, 1000);
    free_side(&l);
    free_side(&r);
  }
}

/* The fixed-width path's bloom filters (forced on; off and auto are the
 * default runs): every join type against the oracle with probes that all
 * hit, all miss, half miss, with null keys; then larger pairs (2 and 128
 * partitions) equal to the grouper's pairs with the filters on. */
static void test_bloom_filter(void) {
  const kt i64[1] = {K_I64}, i32[1] = {K_I32}, f64[1] = {K_F64};
  qvj_bloom_mode = 1;
  run_case(i64, i64, 1, 300, 200, 40, false, 0.0, 0, "bloom all hit");
  run_case(i64, i64, 1, 300, 200, 40, false, 0.1, 40, "bloom all miss");
  run_case(i32, i64, 1, 250, 260, 60, true, 0.05, 30, "bloom half miss");
  run_case(f64, f64, 1, 200, 300, 50, false, 0.05, 25, "bloom floats");
  for (int shift = 0; shift <= 60000; shift += 30000) {
    qvj_part_keys = shift == 30000 ? 1000 : (int64_t)1 << 17; /* 128 partitions, or 2 */
    side l = make_side(i64, 1, 150000, 60000, false, 0.01, 0, "lrow");
    side r = make_side(i64, 1, 100000, 60000, shift == 30000, 0.01, shift, "rrow");
    check_pairs_like_grouper(&l, &r, -1);
    free_side(&l);
    free_side(&r);
  }
  qvj_bloom_mode = -1;
  qvj_part_keys = (int64_t)1 << 17;
}

/* The grouper path's parallel probe (a small build side, a probe side of
 * many batches: one grouper per worker) gives the serial probe's pairs,
 * pair for pair, for every join type; string and two-column keys. */
static void test_parallel_probe(void) {
  const kt ks[2][2] = {{K_STR, K_STR}, {K_I32, K_LSTR}};
  for (int k = 0; k < 2; k++) {
    int nk = k + 1;
    int64_t domain = k == 0 ? 4000 : 60;
    /* the parallel probe needs a probe side of 64 Ki rows, 8x the build's */
    side l = make_side(ks[k], nk, 72000, domain, k == 1, 0.01, 0, "lrow");
    side r = make_side(ks[k], nk, 8500, domain, false, 0.01, 5, "rrow");
    for (int how = 0; how <= QV_JOIN_ANTI; how++) {
      qv_join_options o = {0};
      o.how = (qv_join_type)how;
      o.left_on = ON;
      o.n_keys = nk;
      int64_t *al = NULL, *ar = NULL, an = -1, *bl = NULL, *br = NULL, bn = -2;
      RT_OK(qv_join_indices(l.t, r.t, &o, &al, &ar, &an, &E));
      qvj_serial_probe = true;
      RT_OK(qv_join_indices(l.t, r.t, &o, &bl, &br, &bn, &E));
      qvj_serial_probe = false;
      QV_CHECK_EQ_INT(an, bn);
      QV_CHECK(an > (how == QV_JOIN_ANTI ? 0 : 1000));
      check_same_pairs(how, al, ar, an, bl, br, bn);
    }
    free_side(&l);
    free_side(&r);
  }
}

/* qv_table_join_rows over row lists (repeats, any order; a dataset's
 * indices mapping) equals qv_table_join over the tables taken at those
 * rows, table for table, for every join type and build side, integer and
 * string keys; a row outside the table is QV_ERANGE. */
static void test_join_rows(void) {
  const kt ks[2][1] = {{K_I64}, {K_STR}};
  for (int k = 0; k < 2; k++) {
    side l = make_side(ks[k], 1, 3000, 400, false, 0.05, 0, "lrow");
    side r = make_side(ks[k], 1, 2000, 400, true, 0.05, 2, "rrow");
    int64_t nl = 2500, nr = 2600;
    int64_t *lrows = malloc(sizeof(int64_t) * (size_t)nl),
            *rrows = malloc(sizeof(int64_t) * (size_t)nr);
    for (int64_t i = 0; i < nl; i++) lrows[i] = orc_int(l.n);
    for (int64_t i = 0; i < nr; i++) rrows[i] = orc_int(r.n);
    qv_table *lt = NULL, *rt = NULL;
    RT_OK(qv_table_take(l.t, lrows, nl, &lt, &E));
    RT_OK(qv_table_take(r.t, rrows, nr, &rt, &E));
    for (int how = 0; how <= QV_JOIN_ANTI; how++)
      for (int build = 0; build <= QV_JOIN_BUILD_RIGHT; build++)
        for (int which = 0; which < 3; which++) { /* rows on the left, the right, both */
          qv_join_options o = {0};
          o.how = (qv_join_type)how;
          o.build = (qv_join_build)build;
          o.left_on = ON;
          o.n_keys = 1;
          qv_table *want = NULL, *got = NULL;
          RT_OK(qv_table_join(which == 1 ? l.t : lt, which == 0 ? r.t : rt, &o, &want, &E));
          RT_OK(qv_table_join_rows(l.t, which == 1 ? NULL : lrows, which == 1 ? 0 : nl, r.t,
                                   which == 0 ? NULL : rrows, which == 0 ? 0 : nr, &o, &got, &E));
          qv_error diff;
          bool eq = want && got && qv_table_equals(want, got, &diff);
          if (!eq && want && got)
            fprintf(stderr, "join_rows %s build %d rows %d: %s\n", qv_join_type_name(o.how), build,
                    which, diff.message);
          QV_CHECK(eq);
          QV_CHECK(qv_table_num_rows(got) > (how == QV_JOIN_ANTI ? 0 : 100));
          qv_table_unref(want);
          qv_table_unref(got);
        }
    qv_join_options o = {0};
    o.left_on = ON;
    o.n_keys = 1;
    int64_t bad[2] = {0, l.n};
    qv_table *got = NULL;
    QV_CHECK(qv_table_join_rows(l.t, bad, 2, r.t, NULL, 0, &o, &got, &E) == QV_ERANGE);
    QV_CHECK(got == NULL);
    qv_table_unref(lt);
    qv_table_unref(rt);
    free(lrows);
    free(rrows);
    free_side(&l);
    free_side(&r);
  }
}

/* Outputs of several record batches (join_table.c cuts the output into
 * ranges gathered in parallel): sides of many batches, string and integer
 * keys; the joined table's payload columns equal the pairs of
 * qv_join_indices row for row, and the key column of a full join holds
 * the left key, else the right one. */
static void test_output_ranges(void) {
  const kt ks[2][1] = {{K_STR}, {K_I64}};
  for (int k = 0; k < 2; k++) {
    /* more than join_table.c's RANGE_MIN (64 Ki) output rows: several ranges */
    side l = make_side(ks[k], 1, 100000, 12000, false, 0.01, 0, "lrow");
    side r = make_side(ks[k], 1, 40000, 12000, k == 1, 0.01, 7, "rrow");
    for (int pass = 0; pass < 2; pass++) /* sides read out of order: plain, prefetching */
      for (int how = 0; how <= QV_JOIN_ANTI; how++)
        for (int build = 0; build <= QV_JOIN_BUILD_RIGHT; build++) {
          if (pass == 1 &&
              (how == QV_JOIN_SEMI || how == QV_JOIN_ANTI || build == QV_JOIN_BUILD_AUTO))
            continue;
          int64_t random_min = qvj_random_min;
          if (pass == 1) qvj_random_min = 0;
          qv_join_options o = {0};
          o.how = (qv_join_type)how;
          o.build = (qv_join_build)build;
          o.left_on = ON;
          o.n_keys = 1;
          int64_t *pl = NULL, *pr = NULL, n = -1;
          RT_OK(qv_join_indices(l.t, r.t, &o, &pl, &pr, &n, &E));
          qv_table *j = NULL;
          RT_OK(qv_table_join(l.t, r.t, &o, &j, &E));
          QV_CHECK(n > (how == QV_JOIN_ANTI ? 0 : 70000));
          QV_CHECK(payload_matches(j, "lrow", pl, n));
          if (how < QV_JOIN_SEMI) {
            QV_CHECK(qv_table_num_batches(j) > 1);
            QV_CHECK(payload_matches(j, "rrow", pr, n));
            qv_array *key = col_of(j, "k0");
            qv_array *lk = col_of(l.t, "k0"), *rk = col_of(r.t, "k0");
            bool ok = key != NULL;
            for (int64_t i = 0; ok && i < n; i++) {
              bool coalesce = how == QV_JOIN_RIGHT || how == QV_JOIN_FULL;
              int64_t lrow = pl[i], rrow = coalesce && lrow < 0 ? pr[i] : -1;
              qv_array *src = rrow >= 0 ? rk : lk;
              int64_t at = rrow >= 0 ? rrow : lrow;
              if (at < 0 || !qv_array_is_valid(src, at)) {
                ok = !qv_array_is_valid(key, i);
              } else if (k == 0) {
                int64_t a0 = qv_array_offset_at(key, i), a1 = qv_array_offset_at(key, i + 1);
                int64_t b0 = qv_array_offset_at(src, at), b1 = qv_array_offset_at(src, at + 1);
                ok = qv_array_is_valid(key, i) && a1 - a0 == b1 - b0 &&
                     memcmp(key->buffers[2]->data + a0, src->buffers[2]->data + b0,
                            (size_t)(a1 - a0)) == 0;
              } else {
                ok = qv_array_is_valid(key, i) &&
                     qv_array_int_at(key, i) == qv_array_int_at(src, at);
              }
              if (!ok)
                fprintf(stderr, "%s row %lld: key differs\n", qv_join_type_name(o.how),
                        (long long)i);
            }
            QV_CHECK(ok);
            qv_array_unref(key);
            qv_array_unref(lk);
            qv_array_unref(rk);
          }
          qvj_random_min = random_min;
          qv_table_unref(j);
          free(pl);
          free(pr);
        }
    free_side(&l);
    free_side(&r);
  }
}

/* A left join whose build side's keys are unique keeps every left row
 * once, in order: join_table.c outputs the left columns of such ranges as
 * zero-copy slices of the left batches. Many batches, string and integer
 * keys with nulls; the payloads equal qv_join_indices' pairs, and the
 * output's left payload shares the left table's buffers. */
static void test_output_slices(void) {
  const kt ks[2][1] = {{K_STR}, {K_I64}};
  for (int k = 0; k < 2; k++) {
    side l = make_side(ks[k], 1, 200000, 50000, false, 0.01, 0, "lrow");
    side r = make_side(ks[k], 1, 12, 50000, false, 0.0, 0, "rrow");
    qv_join_options o = {0};
    o.how = QV_JOIN_LEFT;
    o.left_on = ON;
    o.n_keys = 1;
    int64_t *pl = NULL, *pr = NULL, n = -1;
    RT_OK(qv_join_indices(l.t, r.t, &o, &pl, &pr, &n, &E));
    QV_CHECK(n >= l.n);
    qv_table *j = NULL;
    RT_OK(qv_table_join(l.t, r.t, &o, &j, &E));
    QV_CHECK(payload_matches(j, "lrow", pl, n));
    QV_CHECK(payload_matches(j, "rrow", pr, n));
    if (n == l.n) { /* unique right keys (the usual draw): every range a slice */
      bool shared = false;
      int32_t c = qv_schema_find(qv_table_schema(j), "lrow");
      for (int64_t b = 0; b < qv_table_num_batches(j) && !shared; b++)
        for (int64_t d = 0; d < qv_table_num_batches(l.t) && !shared; d++) {
          qv_array *jb = NULL, *lb = NULL;
          RT_OK(qv_table_batch(j, b, &jb, &E));
          RT_OK(qv_table_batch(l.t, d, &lb, &E));
          shared = jb && lb && jb->children[c]->buffers[1] == lb->children[1]->buffers[1];
          qv_array_unref(jb);
          qv_array_unref(lb);
        }
      QV_CHECK(shared);
    }
    qv_table_unref(j);
    free(pl);
    free(pr);
    free_side(&l);
    free_side(&r);
  }
}

/* Files directly in `dir` (-1 if it cannot be read). */
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

/* A grace hash join with a realistic budget (128 KiB against ~0.65 MB of
 * build state: 16 partitions) equals the in-memory join pair for pair and table
 * for table, for every join type, string and integer keys, both build
 * sides; its private directory is gone afterwards; a temp directory that
 * does not exist is an error, not a crash. */
static void test_grace_join(void) {
  char tmpl[] = "/tmp/qv-test-join-XXXXXX";
  char *base = mkdtemp(tmpl);
  QV_CHECK(base != NULL);
  if (!base) return;
  const kt ks[2][2] = {{K_I64, K_I64}, {K_STR, K_I32}};
  for (int k = 0; k < 2; k++) {
    int nk = k == 0 ? 1 : 2;
    side l = make_side(ks[k], nk, 30000, k == 0 ? 15000 : 300, k == 1, 0.01, 0, "lrow");
    side r = make_side(ks[k], nk, 20000, k == 0 ? 15000 : 300, false, 0.01, 3, "rrow");
    for (int how = 0; how <= QV_JOIN_ANTI; how++)
      for (int build = 1; build <= QV_JOIN_BUILD_RIGHT; build++) {
        qv_join_options o = {0};
        o.how = (qv_join_type)how;
        o.build = (qv_join_build)build;
        o.left_on = ON;
        o.n_keys = nk;
        o.memory_limit = -1;
        int64_t *al = NULL, *ar = NULL, an = -1, *bl = NULL, *br = NULL, bn = -2;
        RT_OK(qv_join_indices(l.t, r.t, &o, &al, &ar, &an, &E));
        o.memory_limit = 128 << 10;
        o.temp_directory = base;
        int64_t spills = qvj_spill_runs;
        RT_OK(qv_join_indices(l.t, r.t, &o, &bl, &br, &bn, &E));
        QV_CHECK_EQ_INT(qvj_spill_runs - spills, 1);
        QV_CHECK_EQ_INT(count_entries(base), 0);
        QV_CHECK_EQ_INT(an, bn);
        QV_CHECK(an > 1000);
        bool same = an == bn;
        for (int64_t i = 0; same && i < an; i++)
          same = al[i] == bl[i] && (how >= QV_JOIN_SEMI || ar[i] == br[i]);
        if (!same) fprintf(stderr, "grace %s build %d differs\n", qv_join_type_name(o.how), build);
        QV_CHECK(same);
        qv_table *j = NULL;
        RT_OK(qv_table_join(l.t, r.t, &o, &j, &E));
        QV_CHECK(payload_matches(j, "lrow", al, an));
        if (how < QV_JOIN_SEMI) QV_CHECK(payload_matches(j, "rrow", ar, an));
        qv_table_unref(j);
        free(al);
        free(ar);
        free(bl);
        free(br);
      }
    if (k == 0) { /* no such temp directory: a clear error */
      qv_join_options o = {0};
      o.left_on = ON;
      o.n_keys = 1;
      o.memory_limit = 1;
      o.temp_directory = "/nonexistent/qv-join";
      int64_t *pl = NULL, *pr = NULL, n = 0;
      qv_status st = qv_join_indices(l.t, r.t, &o, &pl, &pr, &n, &E);
      QV_CHECK(st != QV_OK);
      QV_CHECK(strstr(E.message, "temp directory") != NULL);
      QV_CHECK(pl == NULL && pr == NULL);
    }
    free_side(&l);
    free_side(&r);
  }
  rmdir(base);
}

/* The key columns of a full join hold the right key where the left row is
 * absent, in the unified type; left_on / right_on with other names. */
static void test_full_join_keys(void) {
  const char *ls[4] = {"a", "b", NULL, "c"}, *rs[3] = {"c", "d", "a"};
  int32_t lv[4] = {1, 2, 3, 4};
  qv_type *lt = tb_child(tb_child(qv_type_new(QV_STRUCT), "key", qv_type_new(QV_STRING)), "x",
                         qv_type_new(QV_INT32));
  qv_type *rt = tb_child(qv_type_new(QV_STRUCT), "name", qv_type_new(QV_LARGE_STRING));
  qv_array *lc[2] = {tb_str(QV_STRING, 4, ls, NULL), tb_int32(lv, 4)};
  qv_array *rc[1] = {tb_str(QV_LARGE_STRING, 3, rs, NULL)};
  qv_array *lb = tb_array(qv_type_ref(lt), 4, 1, (qv_buffer *[]){NULL}, 2, lc);
  qv_array *rb = tb_array(qv_type_ref(rt), 3, 1, (qv_buffer *[]){NULL}, 1, rc);
  qv_schema *lsch = qv_schema_new(lt), *rsch = qv_schema_new(rt);
  qv_table *l = NULL, *r = NULL, *j = NULL;
  RT_OK(qv_table_from_batches(lsch, &lb, 1, &l, &E));
  RT_OK(qv_table_from_batches(rsch, &rb, 1, &r, &E));
  const char *lon[1] = {"key"}, *ron[1] = {"name"};
  qv_join_options o = {0};
  o.how = QV_JOIN_FULL;
  o.left_on = lon;
  o.right_on = ron;
  o.n_keys = 1;
  o.build = QV_JOIN_BUILD_RIGHT;
  RT_OK(qv_table_join(l, r, &o, &j, &E));
  QV_REQUIRE(j != NULL);
  /* probe = left: a(1) with a, b(2) none, null(3) none, c(4) with c; then d. */
  grid g = grid_of(j);
  QV_CHECK_EQ_INT(g.rows, 5);
  QV_CHECK_EQ_INT(g.cols, 2);
  if (g.rows == 5 && g.cols == 2) {
    QV_CHECK_EQ_STR(g.names[0], "key");
    QV_CHECK_EQ_STR(g.names[1], "x");
    const char *want[5] = {"'61'", "'62'", "null", "'63'", "'64'"}; /* hex bytes */
    for (int i = 0; i < 5; i++) QV_CHECK_EQ_STR(g.cell[i][0], want[i]);
  }
  const int64_t xs_want[5] = {1, 2, 3, 4, -1};
  QV_CHECK(payload_matches(j, "x", xs_want, 5));
  grid_free(&g);
  QV_CHECK(qv_schema_field(qv_table_schema(j), 0)->type->id == QV_LARGE_STRING);
  qv_table_unref(j);
  /* Errors: unknown column with a suggestion, incompatible types. */
  const char *bad[1] = {"kye"};
  o.left_on = bad;
  QV_CHECK(qv_table_join(l, r, &o, &j, &E) == QV_EARG);
  QV_CHECK(strstr(E.message, "did you mean 'key'") != NULL);
  const char *xs[1] = {"x"};
  o.left_on = xs;
  QV_CHECK(qv_table_join(l, r, &o, &j, &E) == QV_ETYPE);
  QV_CHECK(strstr(E.message, "incompatible") != NULL);
  qv_join_type how;
  QV_CHECK(qv_join_type_parse("outer", &how) && how == QV_JOIN_FULL);
  QV_CHECK(!qv_join_type_parse("cross", &how));
  qv_table_unref(l);
  qv_table_unref(r);
  qv_schema_unref(lsch);
  qv_schema_unref(rsch);
  qv_array_unref(lb);
  qv_array_unref(rb);
}

/* Distinct rows and value counts against brute force over rendered rows. */
static void test_distinct_value_counts(void) {
  const kt ks[2] = {K_DICT, K_F64};
  side s = make_side(ks, 2, 300, 5, true, 0.1, 0, "row");
  grid g = grid_of(s.t);
  /* Oracle: first row of each distinct (k0, k1) by rendered text (bytes). */
  int64_t *first = malloc(sizeof(int64_t) * 300), nf = 0;
  for (int64_t i = 0; i < g.rows; i++) {
    bool seen = false;
    for (int64_t q = 0; q < nf && !seen; q++)
      seen = strcmp(g.cell[first[q]][0], g.cell[i][0]) == 0 &&
             strcmp(g.cell[first[q]][1], g.cell[i][1]) == 0;
    if (!seen) first[nf++] = i;
  }
  const char *on[2] = {"k0", "k1"};
  qv_table *d = NULL;
  RT_OK(qv_table_distinct(s.t, on, 2, &d, &E));
  QV_REQUIRE(d != NULL);
  QV_CHECK(payload_matches(d, "row", first, nf));
  qv_table_unref(d);
  /* All columns: every row is distinct (the payload differs). */
  RT_OK(qv_table_distinct(s.t, NULL, 0, &d, &E));
  QV_CHECK(d && qv_table_num_rows(d) == 300);
  qv_table_unref(d);
  const char *bad[1] = {"k2"};
  QV_CHECK(qv_table_distinct(s.t, bad, 1, &d, &E) == QV_EARG);
  /* value_counts of k1 (double, bitwise as unique): counts by rendered value. */
  qv_table *vc = NULL;
  RT_OK(qv_table_value_counts(s.t, "k1", &vc, &E));
  QV_REQUIRE(vc != NULL);
  grid v = grid_of(vc);
  QV_CHECK_EQ_STR(v.names[0], "values");
  QV_CHECK_EQ_STR(v.names[1], "counts");
  int64_t total = 0, nv = 0;
  qv_array *counts = col_of(vc, "counts");
  QV_REQUIRE(counts != NULL);
  for (int64_t i = 0; i < g.rows; i++) {
    bool seen = false;
    for (int64_t q = 0; q < i && !seen; q++) seen = strcmp(g.cell[q][1], g.cell[i][1]) == 0;
    if (seen) continue;
    int64_t c = 0;
    for (int64_t q = 0; q < g.rows; q++) c += strcmp(g.cell[q][1], g.cell[i][1]) == 0;
    QV_REQUIRE(nv < v.rows);
    QV_CHECK_EQ_STR(v.cell[nv][0], g.cell[i][1]);
    QV_CHECK(qv_array_int_at(counts, nv) == c);
    total += qv_array_int_at(counts, nv);
    nv++;
  }
  QV_CHECK_EQ_INT(nv, v.rows);
  QV_CHECK_EQ_INT(total, 300);
  qv_array_unref(counts);
  grid_free(&v);
  qv_table_unref(vc);
  grid_free(&g);
  free(first);
  free_side(&s);
}

int main(void) {
  QV_RUN(test_join_types);
  QV_RUN(test_join_larger_mapped);
  QV_RUN(test_fast_path_large);
  QV_RUN(test_bloom_filter);
  QV_RUN(test_full_join_keys);
  QV_RUN(test_parallel_probe);
  QV_RUN(test_output_ranges);
  QV_RUN(test_output_slices);
  QV_RUN(test_join_rows);
  QV_RUN(test_grace_join);
  QV_RUN(test_distinct_value_counts);
  return QV_TEST_END();
}
