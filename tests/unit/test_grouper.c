/* test_grouper.c — qv_grouper and qv_unique against a brute-force oracle:
 * each key row is rendered to text by array_oracle.h's renderer (bytes in
 * hex, so floats compare bitwise; dictionaries through their values) and
 * the oracle assigns ids by first appearance with a linear table. Random
 * multi-key batches of every groupable type (nulls, NaN, -0.0, views,
 * dictionaries that differ between batches), several consume calls,
 * lookups, uniques decoded back to the key types, a large batch that grows
 * the hash table many times, qv_unique on chunked columns and tables, and
 * errors with exact messages. */
#include "array_oracle.h"
#include "quiver/compute.h"
#include "qv_test.h"

/* ------------------------------------------------------------ oracle -- */

typedef struct oracle {
  char **keys; /* rendered key of each group */
  int64_t n, cap;
} oracle;

/* Rendered key of row i over nk columns; a null dictionary value and a
 * null index are both "null" (the grouper groups by decoded value). */
static char *render_key(qv_array *const *cols, int nk, int64_t i) {
  orc_sb s = {NULL, 0, 0};
  orc_put_s(&s, "%s", "");
  for (int k = 0; k < nk; k++) {
    char *v = orc_str(cols[k], i);
    orc_put_s(&s, "%s|", strcmp(v, "dnull") == 0 ? "null" : v);
    free(v);
  }
  return s.p;
}

/* Id of a rendered key (added when new unless lookup_only). */
static int64_t oracle_id(oracle *o, char *key, bool lookup_only) {
  for (int64_t g = 0; g < o->n; g++)
    if (strcmp(o->keys[g], key) == 0) {
      free(key);
      return g;
    }
  if (lookup_only) {
    free(key);
    return (int64_t)QV_GROUP_NONE;
  }
  if (o->n == o->cap) {
    o->cap = o->cap ? 2 * o->cap : 64;
    o->keys = realloc(o->keys, sizeof(char *) * (size_t)o->cap);
  }
  o->keys[o->n] = key;
  return o->n++;
}

static void oracle_free(oracle *o) {
  for (int64_t g = 0; g < o->n; g++) free(o->keys[g]);
  free(o->keys);
}

/* Groupable test types: everything the sort test uses except half floats
 * (sortable, groupable too) plus a dictionary of views. */
static qv_type *group_type(int i) {
  switch (i) {
    case 0: return orc_t(QV_NA);
    case 1: return orc_t(QV_BOOL);
    case 2: return orc_t(QV_INT8);
    case 3: return orc_t(QV_UINT16);
    case 4: return orc_t(QV_INT32);
    case 5: return orc_t(QV_INT64);
    case 6: return orc_t(QV_HALF_FLOAT);
    case 7: return orc_t(QV_FLOAT);
    case 8: return orc_t(QV_DOUBLE);
    case 9: {
      qv_type *t = orc_t(QV_DECIMAL128);
      t->precision = 30;
      return t;
    }
    case 10: {
      qv_type *t = orc_t(QV_DECIMAL256);
      t->precision = 60;
      return t;
    }
    case 11: return qv_type_timestamp(QV_NANO, NULL);
    case 12: return orc_t(QV_INTERVAL_MONTH_DAY_NANO);
    case 13: return orc_fsb(3);
    case 14: return orc_fsb(24);
    case 15: return orc_t(QV_STRING);
    case 16: return orc_t(QV_BINARY);
    case 17: return orc_t(QV_LARGE_STRING);
    case 18: return orc_t(QV_STRING_VIEW);
    case 19: return orc_t(QV_BINARY_VIEW);
    case 20: return orc_dict(QV_INT8, orc_t(QV_STRING));
    case 21: return orc_dict(QV_UINT32, orc_t(QV_DOUBLE));
    default: return orc_dict(QV_INT16, orc_t(QV_STRING_VIEW));
  }
}
#define N_GROUP_TYPES 23

static qv_array *gen(qv_type *t, int64_t len, bool low) {
  qv_array *a = orc_gen_sliced(t, len);
  orc_reshape(a, low);
  return a;
}

static int64_t checked;

/* Group-id checks of one batch against the oracle. */
static void check_ids(const uint32_t *ids, qv_array *const *cols, int nk, int64_t n, oracle *o,
                      bool lookup_only, const char *label) {
  for (int64_t i = 0; i < n; i++) {
    int64_t want = oracle_id(o, render_key(cols, nk, i), lookup_only);
    if ((int64_t)ids[i] != want) {
      char *k = render_key(cols, nk, i);
      fprintf(stderr, "%s: row %lld key %s: id %u, expected %lld\n", label, (long long)i, k, ids[i],
              (long long)want);
      free(k);
      QV_CHECK((int64_t)ids[i] == want);
      return;
    }
    checked++;
  }
}

/* Uniques render like the rows where each group first appeared. */
static void check_uniques(qv_grouper *g, qv_type *const *types, int nk, oracle *o,
                          const char *label) {
  qv_array *u[4] = {NULL, NULL, NULL, NULL};
  qv_error err;
  qv_status st = qv_grouper_uniques(g, u, &err);
  if (st != QV_OK) fprintf(stderr, "%s: uniques: %s\n", label, err.message);
  QV_REQUIRE(st == QV_OK);
  for (int k = 0; k < nk; k++) {
    QV_CHECK_EQ_INT(u[k]->length, o->n);
    if (types[k]->id != QV_DICTIONARY) QV_CHECK(qv_type_equals(u[k]->type, types[k], false));
    if (qv_array_validate(u[k], QV_VALIDATE_FULL, "uniques", &err) != QV_OK) {
      fprintf(stderr, "%s: uniques invalid: %s\n", label, err.message);
      QV_CHECK(false);
    }
  }
  for (int64_t gi = 0; gi < o->n; gi++) {
    char *k = render_key(u, nk, gi);
    if (strcmp(k, o->keys[gi]) != 0) {
      fprintf(stderr, "%s: group %lld\n", label, (long long)gi);
      QV_CHECK_EQ_STR(k, o->keys[gi]);
      free(k);
      break;
    }
    free(k);
  }
  for (int k = 0; k < nk; k++) qv_array_unref(u[k]);
}

/* -------------------------------------------------------------- tests -- */

static void test_random_batches(void) {
  for (int trial = 0; trial < 300; trial++) {
    int nk = 1 + (int)orc_int(3);
    qv_type *types[3];
    for (int k = 0; k < nk; k++) types[k] = group_type((int)orc_int(N_GROUP_TYPES));
    qv_grouper *g = NULL;
    qv_error err;
    QV_REQUIRE(qv_grouper_new(types, nk, &g, &err) == QV_OK);
    oracle o = {NULL, 0, 0};
    char label[96];
    snprintf(label, sizeof label, "trial %d (%s, ...)", trial, qv_type_id_name(types[0]->id));
    int batches = 1 + (int)orc_int(4);
    for (int b = 0; b <= batches; b++) {
      bool lookup = b == batches; /* the last batch is only looked up */
      int64_t n = trial % 25 == 24 ? 5000 + orc_int(5000) : orc_int(200);
      qv_array *cols[3];
      for (int k = 0; k < nk; k++) cols[k] = gen(types[k], n, orc_int(3) != 0);
      uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)(n + 1));
      int64_t before = qv_grouper_num_groups(g);
      {
        qv_status st =
            lookup ? qv_grouper_lookup(g, cols, ids, &err) : qv_grouper_consume(g, cols, ids, &err);
        if (st != QV_OK) fprintf(stderr, "%s: %s\n", label, err.message);
        QV_CHECK(st == QV_OK);
      }
      check_ids(ids, cols, nk, n, &o, lookup, label);
      if (lookup) QV_CHECK_EQ_INT(qv_grouper_num_groups(g), before);
      QV_CHECK_EQ_INT(qv_grouper_num_groups(g), o.n);
      free(ids);
      for (int k = 0; k < nk; k++) qv_array_unref(cols[k]);
    }
    check_uniques(g, types, nk, &o, label);
    oracle_free(&o);
    qv_grouper_free(g);
    for (int k = 0; k < nk; k++) qv_type_unref(types[k]);
  }
}

/* Many groups: the table doubles many times; ids stay dense and keys
 * equal exactly when ids are. */
static void test_many_groups(void) {
  int64_t n = 300000;
  qv_type *t[2] = {orc_t(QV_INT64), orc_t(QV_STRING)};
  qv_array *a = qv_array_new(t[0], 2, 0);
  a->length = n;
  a->null_count = 0;
  a->buffers[1] = orc_buf(8 * n);
  int64_t *v = (int64_t *)(void *)a->buffers[1]->data;
  for (int64_t i = 0; i < n; i++) v[i] = (int64_t)orc_int(100000) * 1000003;
  /* Strings "x<v % 7>" so pairs (v, s) repeat exactly when v repeats. */
  qv_array *s = qv_array_new(t[1], 3, 0);
  s->length = n;
  s->null_count = 0;
  s->buffers[1] = orc_buf(4 * (n + 1));
  s->buffers[2] = orc_buf(2 * n);
  int32_t *off = (int32_t *)(void *)s->buffers[1]->data;
  for (int64_t i = 0; i < n; i++) {
    off[i] = (int32_t)(2 * i);
    s->buffers[2]->data[2 * i] = 'x';
    s->buffers[2]->data[2 * i + 1] = (uint8_t)('0' + (v[i] / 1000003) % 7);
  }
  off[n] = (int32_t)(2 * n);
  qv_array *cols[2] = {a, s};
  qv_grouper *g = NULL;
  qv_error err;
  QV_REQUIRE(qv_grouper_new(t, 2, &g, &err) == QV_OK);
  uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)n);
  QV_REQUIRE(qv_grouper_consume(g, cols, ids, &err) == QV_OK);
  int64_t groups = qv_grouper_num_groups(g);
  int64_t *first = malloc(sizeof(int64_t) * (size_t)groups);
  uint32_t next = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    if (ids[i] == next) first[next++] = v[i];
    else if (ids[i] > next) bad++;
    else if (first[ids[i]] != v[i]) bad++;
  }
  QV_CHECK_EQ_INT(bad, 0);
  QV_CHECK_EQ_INT(next, groups);
  /* Distinct groups hold distinct values: count distinct values directly. */
  uint8_t *seen = calloc(100000, 1);
  int64_t distinct = 0;
  for (int64_t i = 0; i < n; i++)
    if (!seen[v[i] / 1000003]) {
      seen[v[i] / 1000003] = 1;
      distinct++;
    }
  QV_CHECK_EQ_INT(groups, distinct);
  /* The same keys again map to the same ids, by lookup and by consume. */
  uint32_t *again = malloc(sizeof(uint32_t) * (size_t)n);
  QV_CHECK(qv_grouper_lookup(g, cols, again, &err) == QV_OK);
  QV_CHECK(memcmp(ids, again, sizeof(uint32_t) * (size_t)n) == 0);
  QV_CHECK(qv_grouper_consume(g, cols, again, &err) == QV_OK);
  QV_CHECK(memcmp(ids, again, sizeof(uint32_t) * (size_t)n) == 0);
  QV_CHECK_EQ_INT(qv_grouper_num_groups(g), groups);
  qv_array *u[2];
  QV_CHECK(qv_grouper_uniques(g, u, &err) == QV_OK);
  QV_CHECK_EQ_INT(u[0]->length, groups);
  const int64_t *uv = (const int64_t *)(const void *)u[0]->buffers[1]->data;
  int64_t wrong = 0;
  for (int64_t j = 0; j < groups; j++) wrong += uv[j] != first[j];
  QV_CHECK_EQ_INT(wrong, 0);
  qv_array_unref(u[0]);
  qv_array_unref(u[1]);
  free(seen);
  free(again);
  free(first);
  free(ids);
  qv_grouper_free(g);
  qv_array_unref(a);
  qv_array_unref(s);
  qv_type_unref(t[0]);
  qv_type_unref(t[1]);
}

/* qv_unique over chunked columns: values in order of first appearance,
 * the column's own type, gathered from the inputs. */
static void test_unique(void) {
  for (int trial = 0; trial < 200; trial++) {
    qv_type *t = group_type((int)orc_int(N_GROUP_TYPES));
    int64_t nc = orc_int(4);
    qv_array *chunks[4];
    oracle o = {NULL, 0, 0};
    for (int64_t c = 0; c < nc; c++) {
      chunks[c] = gen(t, orc_int(150), orc_int(4) != 0);
      for (int64_t i = 0; i < chunks[c]->length; i++)
        oracle_id(&o, render_key(&chunks[c], 1, i), false);
    }
    qv_chunked_column col = {t, chunks, nc};
    qv_array *u = NULL;
    qv_error err;
    qv_status st = qv_unique(&col, &u, &err);
    if (st != QV_OK) fprintf(stderr, "unique trial %d: %s\n", trial, err.message);
    QV_REQUIRE(st == QV_OK);
    QV_CHECK(qv_type_equals(u->type, t, false));
    QV_CHECK_EQ_INT(u->length, o.n);
    for (int64_t j = 0; j < u->length && j < o.n; j++) {
      char *k = render_key(&u, 1, j);
      if (strcmp(k, o.keys[j]) != 0) {
        fprintf(stderr, "unique trial %d (%s) value %lld\n", trial, qv_type_id_name(t->id),
                (long long)j);
        QV_CHECK_EQ_STR(k, o.keys[j]);
        free(k);
        break;
      }
      free(k);
    }
    qv_array_unref(u);
    oracle_free(&o);
    for (int64_t c = 0; c < nc; c++) qv_array_unref(chunks[c]);
    qv_type_unref(t);
  }
}

/* pyarrow: pc.unique([0.0, -0.0, nan, None, 3.0, None, nan]) is
 * [0, -0, nan, null, 3] (values told apart by their bytes). */
static void test_unique_floats(void) {
  double vals[7] = {0.0, -0.0, NAN, 0, 3.0, 0, NAN};
  uint8_t valid = 0x57; /* 1110101 */
  qv_type *t = orc_t(QV_DOUBLE);
  qv_array *a = qv_array_new(t, 2, 0);
  a->length = 7;
  a->null_count = 2;
  a->buffers[0] = orc_buf(1);
  a->buffers[0]->data[0] = valid;
  a->buffers[1] = orc_buf(sizeof vals);
  memcpy(a->buffers[1]->data, vals, sizeof vals);
  qv_chunked_column col = {NULL, &a, 1};
  qv_array *u = NULL;
  qv_error err;
  QV_REQUIRE(qv_unique(&col, &u, &err) == QV_OK);
  QV_REQUIRE(u->length == 5);
  const double *d = (const double *)(const void *)u->buffers[1]->data;
  QV_CHECK(d[0] == 0.0 && !signbit(d[0]));
  QV_CHECK(d[1] == 0.0 && signbit(d[1]));
  QV_CHECK(isnan(d[2]));
  QV_CHECK(!qv_array_is_valid(u, 3));
  QV_CHECK(d[4] == 3.0);
  qv_array_unref(u);
  qv_array_unref(a);
  qv_type_unref(t);
}

static void test_table_unique(void) {
  qv_type *st = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(st, "label", true, orc_dict(QV_INT8, orc_t(QV_STRING)), NULL, NULL) ==
           QV_OK);
  qv_schema *schema = qv_schema_new(st);
  qv_array *batches[3];
  oracle o = {NULL, 0, 0};
  for (int b = 0; b < 3; b++) {
    int64_t n = 40 + orc_int(40);
    qv_array *kid = gen(schema->type->children[0].type, n, true);
    for (int64_t i = 0; i < n; i++) oracle_id(&o, render_key(&kid, 1, i), false);
    batches[b] = qv_array_new(schema->type, 1, 1);
    batches[b]->length = n;
    batches[b]->null_count = 0;
    batches[b]->children[0] = kid;
  }
  qv_table *t = NULL;
  qv_error err;
  QV_REQUIRE(qv_table_from_batches(schema, batches, 3, &t, &err) == QV_OK);
  qv_array *u = NULL;
  QV_REQUIRE(qv_table_unique(t, "label", &u, &err) == QV_OK);
  QV_CHECK_EQ_INT(u->length, o.n);
  for (int64_t j = 0; j < u->length && j < o.n; j++) {
    char *k = render_key(&u, 1, j);
    QV_CHECK_EQ_STR(k, o.keys[j]);
    free(k);
  }
  QV_CHECK_EQ_INT(qv_table_unique(t, "nope", &u, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "no column named 'nope' in the table");
  qv_array_unref(u);
  oracle_free(&o);
  qv_table_unref(t);
  for (int b = 0; b < 3; b++) qv_array_unref(batches[b]);
  qv_schema_unref(schema);
}

static void test_errors(void) {
  qv_error err;
  qv_grouper *g = NULL;
  qv_type *lt = orc_list(QV_LIST, orc_t(QV_INT32));
  QV_CHECK_EQ_INT(qv_grouper_new(&lt, 1, &g, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message, "grouper: key 0: cannot group values of type list<item: int32>");
  QV_CHECK_EQ_INT(qv_grouper_new(&lt, 0, &g, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "grouper: at least one key is needed (got 0)");
  qv_type *t[2] = {orc_t(QV_INT32), orc_t(QV_STRING)};
  QV_REQUIRE(qv_grouper_new(t, 2, &g, &err) == QV_OK);
  qv_array *a = gen(t[0], 5, true), *b = gen(t[1], 4, true), *c = gen(t[0], 4, true);
  uint32_t ids[8];
  qv_array *k1[2] = {a, b};
  QV_CHECK_EQ_INT(qv_grouper_consume(g, k1, ids, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "grouper: key 1 has 4 rows but key 0 has 5");
  qv_array *k2[2] = {c, c};
  QV_CHECK_EQ_INT(qv_grouper_consume(g, k2, ids, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message, "grouper: key 1 has type int32, expected string");
  QV_CHECK_EQ_INT(qv_grouper_num_groups(g), 0);
  /* A dictionary index outside its dictionary. */
  qv_type *dt = orc_dict(QV_INT8, orc_t(QV_INT64));
  qv_grouper *dg = NULL;
  QV_REQUIRE(qv_grouper_new(&dt, 1, &dg, &err) == QV_OK);
  qv_array *d = gen(dt, 6, true);
  if (d->buffers[0]) qv_bit_set(d->buffers[0]->data, d->offset + 2);
  d->buffers[1]->data[d->offset + 2] = 100;
  QV_CHECK_EQ_INT(qv_grouper_consume(dg, &d, ids, &err), QV_EINVAL);
  char want[128];
  snprintf(want, sizeof want,
           "grouper: dictionary index 100 at row 2 is outside the %lld-value dictionary",
           (long long)d->dictionary->length);
  QV_CHECK_EQ_STR(err.message, want);
  qv_array_unref(d);
  qv_grouper_free(dg);
  qv_type_unref(dt);
  qv_array_unref(a);
  qv_array_unref(b);
  qv_array_unref(c);
  qv_grouper_free(g);
  qv_type_unref(t[0]);
  qv_type_unref(t[1]);
  qv_type_unref(lt);
}

int main(void) {
  QV_RUN(test_random_batches);
  QV_RUN(test_many_groups);
  QV_RUN(test_unique);
  QV_RUN(test_unique_floats);
  QV_RUN(test_table_unique);
  QV_RUN(test_errors);
  printf("%lld rows checked against the oracle\n", (long long)checked);
  return QV_TEST_END();
}
