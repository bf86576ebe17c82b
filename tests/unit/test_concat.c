/* test_concat.c — qv_array_concat against a brute-force oracle: random
 * arrays of every type (nulls, sliced inputs and children, empty inputs,
 * shared and distinct dictionaries), checked element by element through
 * array_oracle.h's renderer and structure checker; plus the error cases
 * with their exact messages. */
#include "array_oracle.h"
#include "qv_test.h"

static int64_t compared; /* elements checked against the oracle */

/* Concatenate `in` and compare every output element with its source. */
static void check_concat(qv_array **in, int n, int type_no) {
  qv_error err;
  qv_array *out = NULL;
  qv_status st = qv_array_concat(in, n, &out, &err);
  if (st != QV_OK) {
    fprintf(stderr, "type %d: concat failed: %s\n", type_no, err.message);
    QV_CHECK(st == QV_OK);
    return;
  }
  int64_t total = 0, nulls = 0;
  for (int i = 0; i < n; i++) {
    total += in[i]->length;
    nulls += qv_array_null_count(in[i]);
  }
  QV_CHECK_EQ_INT(out->length, total);
  const char *bad = orc_check(out);
  if (bad) fprintf(stderr, "type %d: %s\n", type_no, bad);
  QV_CHECK(bad == NULL);
  qv_error verr;
  if (qv_array_validate(out, QV_VALIDATE_FULL, "out", &verr) != QV_OK) {
    fprintf(stderr, "type %d: validate: %s\n", type_no, verr.message);
    QV_CHECK(false);
  }
  QV_CHECK_EQ_INT(out->null_count, nulls);
  QV_CHECK_EQ_INT(qv_array_null_count(out), nulls);
  if (nulls == 0 && out->n_buffers > 0 && out->type->id != QV_SPARSE_UNION &&
      out->type->id != QV_DENSE_UNION)
    QV_CHECK(out->buffers[0] == NULL);
  int64_t pos = 0;
  for (int i = 0; i < n; i++) {
    for (int64_t j = 0; j < in[i]->length; j++, pos++) {
      char *want = orc_str(in[i], j), *got = orc_str(out, pos);
      if (strcmp(want, got) != 0) {
        fprintf(stderr, "type %d: input %d row %lld\n", type_no, i, (long long)j);
        QV_CHECK_EQ_STR(got, want);
      }
      free(want);
      free(got);
      compared++;
    }
  }
  qv_array_unref(out);
}

static void test_concat_random(void) {
  for (int ti = 0; ti < ORC_N_TYPES; ti++) {
    qv_type *t = orc_type(ti);
    for (int trial = 0; trial < 100; trial++) {
      qv_array *in[5];
      int n = 1 + (int)orc_int(5);
      bool same_base = orc_int(3) == 0; /* slices of one array: shared dictionary/buffers */
      qv_array *base = same_base ? orc_gen_sliced(t, 12) : NULL;
      for (int i = 0; i < n; i++) {
        int64_t len = orc_int(4) == 0 ? 0 : orc_int(trial % 8 == 7 ? 150 : 10);
        if (same_base) {
          int64_t off = orc_int(13);
          if (len > 12 - off) len = 12 - off;
          QV_CHECK(qv_array_slice(base, off, len, &in[i], NULL) == QV_OK);
        } else {
          in[i] = orc_gen_sliced(t, len);
        }
      }
      check_concat(in, n, ti);
      for (int i = 0; i < n; i++) qv_array_unref(in[i]);
      qv_array_unref(base);
    }
    qv_type_unref(t);
  }
  QV_CHECK(compared > 5000);
}

/* Results stay valid after the inputs are gone (shared buffers are refs). */
static void test_concat_outlives_inputs(void) {
  qv_type *t = orc_list(QV_LIST, orc_t(QV_STRING_VIEW));
  qv_array *in[3] = {orc_gen_sliced(t, 5), orc_gen_sliced(t, 0), orc_gen_sliced(t, 7)};
  char *want[12];
  int64_t k = 0;
  for (int i = 0; i < 3; i++)
    for (int64_t j = 0; j < in[i]->length; j++) want[k++] = orc_str(in[i], j);
  qv_array *out = NULL;
  QV_REQUIRE(qv_array_concat(in, 3, &out, NULL) == QV_OK);
  for (int i = 0; i < 3; i++) qv_array_unref(in[i]);
  for (int64_t j = 0; j < k; j++) {
    char *got = orc_str(out, j);
    QV_CHECK_EQ_STR(got, want[j]);
    free(got);
    free(want[j]);
  }
  qv_array_unref(out);
  qv_type_unref(t);
}

static void test_concat_shares(void) {
  /* Same dictionary: kept by pointer. */
  qv_type *d = orc_dict(QV_INT8, orc_t(QV_STRING));
  qv_array *a = orc_gen(d, 10), *in[2], *out = NULL;
  QV_CHECK(qv_array_slice(a, 1, 3, &in[0], NULL) == QV_OK);
  QV_CHECK(qv_array_slice(a, 6, 4, &in[1], NULL) == QV_OK);
  QV_REQUIRE(qv_array_concat(in, 2, &out, NULL) == QV_OK);
  QV_CHECK(out->dictionary == a->dictionary);
  qv_array_unref(out);
  /* Two dictionaries among three inputs: each distinct one merged once. */
  qv_array *b = orc_gen(d, 4);
  qv_array *three[3] = {in[0], b, in[1]};
  check_concat(three, 3, 300);
  QV_REQUIRE(qv_array_concat(three, 3, &out, NULL) == QV_OK);
  QV_CHECK_EQ_INT(out->dictionary->length, a->dictionary->length + b->dictionary->length);
  qv_array_unref(out);
  qv_array_unref(b);
  qv_array_unref(in[0]);
  qv_array_unref(in[1]);
  qv_array_unref(a);
  qv_type_unref(d);
  /* Views: variadic buffers are shared, re-indexed. */
  qv_type *v = orc_t(QV_BINARY_VIEW);
  in[0] = orc_gen(v, 6);
  in[1] = orc_gen(v, 6);
  QV_REQUIRE(qv_array_concat(in, 2, &out, NULL) == QV_OK);
  QV_CHECK_EQ_INT(out->n_buffers, in[0]->n_buffers + in[1]->n_buffers - 2);
  QV_CHECK(out->buffers[2] == in[0]->buffers[2]);
  QV_CHECK(out->buffers[in[0]->n_buffers] == in[1]->buffers[2]);
  qv_array_unref(out);
  qv_array_unref(in[0]);
  qv_array_unref(in[1]);
  qv_type_unref(v);
}

/* A string array of one element whose offsets claim [0, end). The data
 * buffer is never read when the concat fails first. */
static qv_array *fake_string(qv_type *t, int32_t end) {
  qv_array *a = qv_array_new(t, 3, 0);
  a->buffers[1] = orc_buf(8);
  memcpy(a->buffers[1]->data + 4, &end, 4);
  a->buffers[2] = orc_buf(0);
  a->length = 1;
  a->null_count = 0;
  return a;
}

static void test_concat_errors(void) {
  qv_error err;
  qv_array *out = NULL;
  qv_type *i32 = orc_t(QV_INT32), *i64 = orc_t(QV_INT64);
  qv_array *in[2] = {orc_gen(i32, 3), orc_gen(i64, 3)};
  QV_CHECK_EQ_INT(qv_array_concat(in, 2, &out, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message, "concat: array 1 has type int64, expected int32");
  QV_CHECK_EQ_INT(qv_array_concat(in, 0, &out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "concat: needs at least one array (got 0)");
  qv_array_unref(in[0]);
  qv_array_unref(in[1]);

  /* 32-bit offsets overflow: 1.5e9 + 1.5e9 bytes of string data. */
  qv_type *s = orc_t(QV_STRING);
  in[0] = fake_string(s, 1500000000);
  in[1] = fake_string(s, 1500000000);
  QV_CHECK_EQ_INT(qv_array_concat(in, 2, &out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "concat: combined string data needs offset 3000000000, beyond "
                  "the 32-bit offset limit 2147483647; use the large_ variant");
  qv_array_unref(in[0]);
  qv_array_unref(in[1]);

  /* Lists too (the child is never touched before the check). */
  qv_type *l = orc_list(QV_LIST, orc_t(QV_INT8));
  for (int i = 0; i < 2; i++) {
    in[i] = qv_array_new(l, 2, 1);
    in[i]->buffers[1] = orc_buf(8);
    int32_t end = 2000000000;
    memcpy(in[i]->buffers[1]->data + 4, &end, 4);
    in[i]->length = 1;
    in[i]->children[0] = orc_gen(l->children[0].type, 0);
  }
  QV_CHECK_EQ_INT(qv_array_concat(in, 2, &out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "concat: combined list<item: int8> data needs offset "
                  "4000000000, beyond the 32-bit offset limit 2147483647; use "
                  "the large_ variant");
  qv_array_unref(in[0]);
  qv_array_unref(in[1]);

  /* Run ends: 2 x 20000 rows do not fit int16 run ends. */
  qv_type *r = orc_ree(QV_INT16, orc_t(QV_INT8));
  for (int i = 0; i < 2; i++) {
    qv_array *re = qv_array_new(r->children[0].type, 2, 0);
    re->buffers[1] = orc_buf(2);
    int16_t e = 20000;
    memcpy(re->buffers[1]->data, &e, 2);
    re->length = 1;
    in[i] = qv_array_new(r, 0, 2);
    in[i]->children[0] = re;
    in[i]->children[1] = orc_gen(r->children[1].type, 1);
    in[i]->length = 20000;
  }
  QV_CHECK_EQ_INT(qv_array_concat(in, 2, &out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "concat: run-end encoded length 40000 does not fit run end "
                  "type int16");
  /* ...but a slice of each fits, with partial first and last runs. */
  qv_array *s0 = NULL, *s1 = NULL;
  QV_CHECK(qv_array_slice(in[0], 100, 50, &s0, NULL) == QV_OK);
  QV_CHECK(qv_array_slice(in[1], 19990, 10, &s1, NULL) == QV_OK);
  qv_array *parts[2] = {s0, s1};
  QV_REQUIRE(qv_array_concat(parts, 2, &out, &err) == QV_OK);
  QV_CHECK_EQ_INT(out->length, 60);
  QV_CHECK_EQ_INT(out->children[0]->length, 2);
  QV_CHECK(orc_check(out) == NULL);
  qv_array_unref(out);
  qv_array_unref(s0);
  qv_array_unref(s1);
  qv_array_unref(in[0]);
  qv_array_unref(in[1]);

  /* Distinct dictionaries whose merged indices overflow int8. */
  qv_type *d = orc_dict(QV_INT8, orc_t(QV_INT32));
  for (int i = 0; i < 2; i++) {
    in[i] = qv_array_new(d, 2, 0);
    in[i]->buffers[1] = orc_buf(1);
    in[i]->buffers[1]->data[0] = 100;
    in[i]->length = 1;
    in[i]->dictionary = orc_gen(d->value_type, 120);
  }
  QV_CHECK_EQ_INT(qv_array_concat(in, 2, &out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "concat: dictionary index 220 (array 1, row 0) does not fit "
                  "index type int8 (max 127)");
  qv_array_unref(in[0]);
  qv_array_unref(in[1]);

  qv_type_unref(d);
  qv_type_unref(r);
  qv_type_unref(l);
  qv_type_unref(s);
  qv_type_unref(i32);
  qv_type_unref(i64);
}

/* Empty inputs may come without buffers (IPC writers often send empty
 * offsets buffers for length-0 arrays); they must not be dereferenced. */
static void test_concat_empty_without_buffers(void) {
  qv_type *types[5] = {orc_t(QV_STRING), orc_t(QV_BOOL), orc_t(QV_INT32),
                       orc_list(QV_LARGE_LIST, orc_t(QV_INT8)), orc_t(QV_BINARY_VIEW)};
  for (int ti = 0; ti < 5; ti++) {
    qv_type *t = types[ti];
    qv_array *empty = qv_array_new(t, qv_type_num_buffers(t->id), t->n_children);
    if (t->n_children) empty->children[0] = orc_gen(t->children[0].type, 0);
    empty->null_count = 0;
    qv_array *in[3] = {orc_gen_sliced(t, 5), empty, orc_gen_sliced(t, 3)};
    check_concat(in, 3, 100 + ti);
    qv_array *only[2] = {empty, empty};
    check_concat(only, 2, 200 + ti);
    for (int i = 0; i < 3; i++) qv_array_unref(in[i]);
    qv_type_unref(t);
  }
}

int main(void) {
  QV_RUN(test_concat_random);
  QV_RUN(test_concat_outlives_inputs);
  QV_RUN(test_concat_shares);
  QV_RUN(test_concat_empty_without_buffers);
  QV_RUN(test_concat_errors);
  return QV_TEST_END();
}
