/* test_take.c — qv_array_take and qv_array_take_chunked against a
 * brute-force oracle: random arrays of every type (nulls, sliced inputs
 * and children), random indices with repeats and any order, empty takes,
 * several chunks with distinct or shared dictionaries; zero-copy sharing
 * where the contract promises it; error cases with exact messages. */
#include "array_oracle.h"
#include "core/take_internal.h"
#include "qv_build.h"
#include "qv_test.h"

static int64_t compared; /* elements checked against the oracle */

/* Compare out[i] with chunks[chunk[i]][row[i]] (chunk NULL: chunk 0). */
static void check_gather(qv_array *out, qv_array *const *chunks, const int64_t *chunk,
                         const int64_t *row, int64_t n, int type_no) {
  QV_CHECK_EQ_INT(out->length, n);
  const char *bad = orc_check(out);
  if (bad) fprintf(stderr, "type %d: %s\n", type_no, bad);
  QV_CHECK(bad == NULL);
  qv_error verr;
  if (qv_array_validate(out, QV_VALIDATE_FULL, "out", &verr) != QV_OK) {
    fprintf(stderr, "type %d: validate: %s\n", type_no, verr.message);
    QV_CHECK(false);
  }
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; i++) {
    qv_array *src = chunks[chunk ? chunk[i] : 0];
    if (src->type->id == QV_NA ||
        (src->n_buffers > 0 && src->type->id != QV_SPARSE_UNION &&
         src->type->id != QV_DENSE_UNION && !qv_array_is_valid(src, row[i])))
      nulls++;
    char *want = orc_str(src, row[i]), *got = orc_str(out, i);
    if (strcmp(want, got) != 0) {
      fprintf(stderr, "type %d: output row %lld (row %lld)\n", type_no, (long long)i,
              (long long)row[i]);
      QV_CHECK_EQ_STR(got, want);
    }
    free(want);
    free(got);
    compared++;
  }
  QV_CHECK_EQ_INT(out->null_count, nulls);
  QV_CHECK_EQ_INT(qv_array_null_count(out), nulls);
}

static void random_rows(int64_t *row, int64_t n, int64_t len) {
  int mode = (int)orc_int(4);
  for (int64_t i = 0; i < n; i++) {
    if (mode == 0) row[i] = i % len;                /* ascending runs */
    else if (mode == 1) row[i] = len - 1 - i % len; /* descending */
    else if (mode == 2) row[i] = orc_int(2) ? orc_int(len) : row[i > 0 ? i - 1 : 0] % len;
    else row[i] = orc_int(len); /* random, with repeats */
  }
}

static void test_take_random(void) {
  for (int ti = 0; ti < ORC_N_TYPES; ti++) {
    qv_type *t = orc_type(ti);
    for (int trial = 0; trial < 100; trial++) {
      bool big = trial % 8 == 7; /* bitmaps over several words */
      int64_t len = orc_int(5) == 0 ? 0 : 1 + orc_int(big ? 150 : 14);
      qv_array *a = orc_gen_sliced(t, len);
      int64_t n = len == 0 ? 0 : orc_int(big ? 300 : 25);
      int64_t idx[300];
      random_rows(idx, n, len);
      qv_array *out = NULL;
      qv_error err;
      qv_status st = qv_array_take(a, idx, n, &out, &err);
      if (st != QV_OK) fprintf(stderr, "type %d: take failed: %s\n", ti, err.message);
      QV_CHECK(st == QV_OK);
      if (st == QV_OK) {
        check_gather(out, &a, NULL, idx, n, ti);
        if (qv_array_null_count(a) == 0 && out->n_buffers > 0 && t->id != QV_SPARSE_UNION &&
            t->id != QV_DENSE_UNION)
          QV_CHECK(out->buffers[0] == NULL);
        /* Outputs outlive their source. */
        char *first = n > 0 ? orc_str(out, 0) : NULL;
        qv_array_unref(a);
        a = NULL;
        if (first) {
          char *again = orc_str(out, 0);
          QV_CHECK_EQ_STR(again, first);
          free(again);
          free(first);
        }
        qv_array_unref(out);
      }
      qv_array_unref(a);
    }
    qv_type_unref(t);
  }
  QV_CHECK(compared > 5000);
}

static void test_take_chunked_random(void) {
  for (int ti = 0; ti < ORC_N_TYPES; ti++) {
    qv_type *t = orc_type(ti);
    for (int trial = 0; trial < 100; trial++) {
      qv_array *chunks[4];
      int nc = 1 + (int)orc_int(4);
      bool same_base = orc_int(3) == 0; /* slices of one array: shared dictionary */
      qv_array *base = same_base ? orc_gen_sliced(t, 10) : NULL;
      int64_t lens[4];
      for (int c = 0; c < nc; c++) {
        int64_t len = orc_int(4) == 0 ? 0 : 1 + orc_int(trial % 8 == 7 ? 90 : 9);
        if (same_base) {
          int64_t off = orc_int(11);
          if (len > 10 - off) len = 10 - off;
          QV_CHECK(qv_array_slice(base, off, len, &chunks[c], NULL) == QV_OK);
        } else {
          chunks[c] = orc_gen_sliced(t, len);
        }
        lens[c] = len;
      }
      int64_t n = orc_int(trial % 8 == 7 ? 300 : 30), ci[300], ri[300], k = 0;
      for (int64_t i = 0; i < n; i++) {
        int c = (int)orc_int(nc);
        if (lens[c] == 0) continue;
        ci[k] = c;
        ri[k] = orc_int(lens[c]);
        k++;
      }
      qv_array *out = NULL;
      qv_error err;
      qv_status st = qv_array_take_chunked(chunks, nc, ci, ri, k, &out, &err);
      if (st != QV_OK) fprintf(stderr, "type %d: take_chunked failed: %s\n", ti, err.message);
      QV_CHECK(st == QV_OK);
      if (st == QV_OK) {
        check_gather(out, chunks, ci, ri, k, ti);
        qv_array_unref(out);
      }
      for (int c = 0; c < nc; c++) qv_array_unref(chunks[c]);
      qv_array_unref(base);
    }
    qv_type_unref(t);
  }
}

/* qv_take_chunked_to (source row i to output row dest[i]) gives the same
 * bits as qv_array_take_chunked over the pairs put in output order, for
 * every type: the layouts written in place and those permuted after. The
 * source rows come sorted (as the table gather sends them), in random
 * order, or with dest the identity; repeats, descending runs, empty
 * chunks; with and without a pool of two threads. */
static void test_take_chunked_to(void) {
  qv_pool *pool = NULL;
  QV_REQUIRE(qv_pool_new(2, &pool, NULL) == QV_OK);
  int64_t save_par = qv_take_parallel_min_n, save_part = qv_take_part_min_rows;
  qv_take_parallel_min_n = 2; /* odd trials: loops in parts on two threads */
  qv_take_part_min_rows = 3;  /* many small parts, taken by whichever thread is free */
  for (int ti = 0; ti < ORC_N_TYPES; ti++) {
    qv_type *t = orc_type(ti);
    for (int trial = 0; trial < 60; trial++) {
      qv_array *chunks[4];
      int nc = 1 + (int)orc_int(4);
      int64_t lens[4];
      for (int c = 0; c < nc; c++) {
        lens[c] = orc_int(4) == 0 ? 0 : 1 + orc_int(trial % 8 == 7 ? 90 : 9);
        chunks[c] = orc_gen_sliced(t, lens[c]);
      }
      int64_t n = orc_int(trial % 8 == 7 ? 300 : 30), ci[300], ri[300], k = 0;
      for (int64_t i = 0; i < n; i++) {
        int c = (int)orc_int(nc);
        if (lens[c] == 0) continue;
        ci[k] = c;
        ri[k] = trial % 5 == 4 ? 0 : orc_int(lens[c]); /* all-equal rows now and then */
        k++;
      }
      int mode = trial % 3; /* 0: sorted source, 1: random, 2: identity */
      if (mode == 0)
        for (int64_t i = 1; i < k; i++)
          for (int64_t j = i;
               j > 0 && (ci[j - 1] > ci[j] || (ci[j - 1] == ci[j] && ri[j - 1] > ri[j])); j--) {
            int64_t x = ci[j];
            ci[j] = ci[j - 1];
            ci[j - 1] = x;
            x = ri[j];
            ri[j] = ri[j - 1];
            ri[j - 1] = x;
          }
      int64_t dest[300], oc[300], orow[300];
      for (int64_t i = 0; i < k; i++) dest[i] = i;
      for (int64_t i = k - 1; mode != 2 && i > 0; i--) { /* random permutation */
        int64_t j = orc_int(i + 1), x = dest[i];
        dest[i] = dest[j];
        dest[j] = x;
      }
      for (int64_t i = 0; i < k; i++) {
        oc[dest[i]] = ci[i];
        orow[dest[i]] = ri[i];
      }
      qv_array *want = NULL, *got = NULL;
      qv_error err;
      QV_CHECK(qv_array_take_chunked(chunks, nc, oc, orow, k, &want, &err) == QV_OK);
      qv_status st =
          qv_take_chunked_to(chunks, nc, ci, ri, dest, k, trial % 2 ? pool : NULL, &got, &err);
      if (st != QV_OK) fprintf(stderr, "type %d: take_chunked_to failed: %s\n", ti, err.message);
      QV_CHECK(st == QV_OK);
      if (st == QV_OK && want != NULL) {
        check_gather(got, chunks, oc, orow, k, ti);
        const char *diff = orc_same_bits(want, got);
        if (diff != NULL) fprintf(stderr, "type %d trial %d: %s differ\n", ti, trial, diff);
        QV_CHECK(diff == NULL);
      }
      qv_array_unref(want);
      qv_array_unref(got);
      for (int c = 0; c < nc; c++) qv_array_unref(chunks[c]);
    }
    qv_type_unref(t);
  }
  qv_take_parallel_min_n = save_par;
  qv_take_part_min_rows = save_part;
  qv_pool_free(pool);
}

/* Strings of every length from 0 to 80 bytes (the copy pass moves 16 to
 * 64 bytes as two overlapping fixed-size moves) and nulls, both offset
 * widths, gathered to output rows on two threads: the same bits as in
 * output order. */
static void test_take_chunked_to_lengths(void) {
  qv_pool *pool = NULL;
  QV_REQUIRE(qv_pool_new(2, &pool, NULL) == QV_OK);
  int64_t save_par = qv_take_parallel_min_n, save_part = qv_take_part_min_rows;
  qv_take_parallel_min_n = 2;
  qv_take_part_min_rows = 5;
  static char text[3][100][81];
  for (int large = 0; large < 2; large++) {
    qv_array *chunks[3];
    for (int c = 0; c < 3; c++) {
      const char *strs[100];
      int64_t lens[100];
      for (int i = 0; i < 100; i++) {
        lens[i] = (i * 7 + c) % 81;
        for (int64_t k = 0; k < lens[i]; k++) text[c][i][k] = (char)('a' + orc_int(26));
        strs[i] = i % 13 == 5 ? NULL : text[c][i];
      }
      chunks[c] = tb_str(large ? QV_LARGE_STRING : QV_STRING, 100, strs, lens);
    }
    int64_t n = 600, ci[600], ri[600], dest[600], oc[600], orow[600];
    for (int64_t i = 0; i < n; i++) {
      ci[i] = orc_int(3);
      ri[i] = orc_int(100);
      dest[i] = i;
    }
    for (int64_t i = n - 1; i > 0; i--) {
      int64_t j = orc_int(i + 1), x = dest[i];
      dest[i] = dest[j];
      dest[j] = x;
    }
    for (int64_t i = 0; i < n; i++) {
      oc[dest[i]] = ci[i];
      orow[dest[i]] = ri[i];
    }
    qv_array *want = NULL, *got = NULL;
    QV_CHECK(qv_array_take_chunked(chunks, 3, oc, orow, n, &want, NULL) == QV_OK);
    QV_CHECK(qv_take_chunked_to(chunks, 3, ci, ri, dest, n, pool, &got, NULL) == QV_OK);
    if (want != NULL && got != NULL) {
      check_gather(got, chunks, oc, orow, n, large ? 17 : 15);
      QV_CHECK(orc_same_bits(want, got) == NULL);
    }
    qv_array_unref(want);
    qv_array_unref(got);
    for (int c = 0; c < 3; c++) qv_array_unref(chunks[c]);
  }
  qv_take_parallel_min_n = save_par;
  qv_take_part_min_rows = save_part;
  qv_pool_free(pool);
}

static void test_take_zero_copy_parts(void) {
  int64_t idx[] = {3, 0, 3, 5};
  qv_array *out = NULL;
  /* Dictionary shared. */
  qv_type *d = orc_dict(QV_INT16, orc_t(QV_STRING));
  qv_array *a = orc_gen(d, 6);
  QV_REQUIRE(qv_array_take(a, idx, 4, &out, NULL) == QV_OK);
  QV_CHECK(out->dictionary == a->dictionary);
  qv_array_unref(out);
  /* Chunks A, B, A: the merged dictionary holds A and B once each. */
  qv_array *b = orc_gen(d, 5), *abc[3] = {a, b, a};
  int64_t ci[] = {0, 1, 2, 2}, ri[] = {1, 4, 0, 5};
  QV_REQUIRE(qv_array_take_chunked(abc, 3, ci, ri, 4, &out, NULL) == QV_OK);
  check_gather(out, abc, ci, ri, 4, 300);
  QV_CHECK_EQ_INT(out->dictionary->length, a->dictionary->length + b->dictionary->length);
  qv_array_unref(out);
  qv_array_unref(b);
  qv_array_unref(a);
  /* List view child shared. */
  qv_type *lv = orc_list(QV_LIST_VIEW, orc_t(QV_INT64));
  a = orc_gen(lv, 6);
  QV_REQUIRE(qv_array_take(a, idx, 4, &out, NULL) == QV_OK);
  QV_CHECK(out->children[0] == a->children[0]);
  qv_array_unref(out);
  qv_array_unref(a);
  /* View data buffers shared. */
  qv_type *sv = orc_t(QV_STRING_VIEW);
  a = orc_gen(sv, 6);
  QV_REQUIRE(qv_array_take(a, idx, 4, &out, NULL) == QV_OK);
  QV_CHECK_EQ_INT(out->n_buffers, a->n_buffers);
  QV_CHECK(out->buffers[2] == a->buffers[2]);
  qv_array_unref(out);
  qv_array_unref(a);
  /* REE: consecutive rows of one run merge into one output run. */
  qv_type *r = orc_ree(QV_INT32, orc_t(QV_INT8));
  a = qv_array_new(r, 0, 2);
  a->length = 10;
  qv_array *re = qv_array_new(r->children[0].type, 2, 0);
  re->buffers[1] = orc_buf(8);
  int32_t ends[2] = {4, 10};
  memcpy(re->buffers[1]->data, ends, 8);
  re->length = 2;
  a->children[0] = re;
  a->children[1] = orc_gen(r->children[1].type, 2);
  int64_t ridx[] = {0, 3, 1, 7, 9, 2, 2};
  QV_REQUIRE(qv_array_take(a, ridx, 7, &out, NULL) == QV_OK);
  QV_CHECK_EQ_INT(out->children[0]->length, 3);
  int32_t got[3];
  memcpy(got, out->children[0]->buffers[1]->data, 12);
  QV_CHECK_EQ_INT(got[0], 3);
  QV_CHECK_EQ_INT(got[1], 5);
  QV_CHECK_EQ_INT(got[2], 7);
  qv_array_unref(out);
  qv_array_unref(a);
  qv_type_unref(r);
  qv_type_unref(sv);
  qv_type_unref(lv);
  qv_type_unref(d);
}

static void test_take_errors(void) {
  qv_error err;
  qv_array *out = NULL;
  qv_type *i32 = orc_t(QV_INT32), *i64 = orc_t(QV_INT64);
  qv_array *a = orc_gen(i32, 4), *b = orc_gen(i64, 4);
  int64_t idx[] = {1, 4};
  QV_CHECK_EQ_INT(qv_array_take(a, idx, 2, &out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "take: index 4 (position 1) is out of range for an array of length 4");
  int64_t neg[] = {-1};
  QV_CHECK_EQ_INT(qv_array_take(a, neg, 1, &out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "take: index -1 (position 0) is out of range for an array of length 4");
  QV_CHECK_EQ_INT(qv_array_take(a, NULL, 3, &out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "take: needs an array and 3 indices");

  qv_array *chunks[2] = {a, b};
  int64_t ci[] = {0, 1}, ri[] = {0, 0};
  QV_CHECK_EQ_INT(qv_array_take_chunked(chunks, 2, ci, ri, 2, &out, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message, "take_chunked: chunk 1 has type int64, expected int32");
  chunks[1] = a;
  int64_t ci2[] = {0, 2};
  QV_CHECK_EQ_INT(qv_array_take_chunked(chunks, 2, ci2, ri, 2, &out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "take_chunked: chunk index 2 (position 1) is out of range for 2 chunks");
  int64_t ri2[] = {0, 9};
  QV_CHECK_EQ_INT(qv_array_take_chunked(chunks, 2, ci, ri2, 2, &out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "take_chunked: row 9 (position 1) is out of range for chunk 1 of length 4");
  QV_CHECK_EQ_INT(qv_array_take_chunked(chunks, 0, ci, ri, 2, &out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message,
                  "take_chunked: needs at least one chunk (got 0) and 2 (chunk, row) pairs");
  qv_array_unref(a);
  qv_array_unref(b);

  /* 32-bit offset overflow: one string of 1.5e9 bytes, taken twice. The
   * data buffer claims that size but is never read (the size pass fails). */
  static uint8_t tiny[1];
  qv_type *s = orc_t(QV_STRING);
  a = qv_array_new(s, 3, 0);
  a->buffers[1] = orc_buf(8);
  int32_t end = 1500000000;
  memcpy(a->buffers[1]->data + 4, &end, 4);
  QV_REQUIRE(qv_buffer_wrap(tiny, end, NULL, NULL, &a->buffers[2], NULL) == QV_OK);
  a->length = 1;
  int64_t twice[] = {0, 0};
  QV_CHECK_EQ_INT(qv_array_take(a, twice, 2, &out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "take: gathered string data needs offset 3000000000, beyond "
                  "the 32-bit offset limit 2147483647; use the large_ variant");
  /* Offsets pointing past the data are reported, not followed. */
  qv_buffer_unref(a->buffers[2]);
  a->buffers[2] = orc_buf(10);
  QV_CHECK_EQ_INT(qv_array_take(a, twice, 1, &out, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "take: row 0 of chunk 0 has offsets [0, 1500000000) outside [0, 10)");
  qv_array_unref(a);

  /* Merging two dictionaries overflows the int8 index. */
  qv_type *d = orc_dict(QV_INT8, orc_t(QV_INT32));
  for (int i = 0; i < 2; i++) {
    chunks[i] = qv_array_new(d, 2, 0);
    chunks[i]->buffers[1] = orc_buf(1);
    chunks[i]->buffers[1]->data[0] = 100;
    chunks[i]->length = 1;
    chunks[i]->dictionary = orc_gen(d->value_type, 120);
  }
  QV_CHECK_EQ_INT(qv_array_take_chunked(chunks, 2, ci, ri, 2, &out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "take: dictionary index 220 (chunk 1, row 0) does not fit index "
                  "type int8 (max 127) after merging dictionaries");
  qv_array_unref(chunks[0]);
  qv_array_unref(chunks[1]);
  qv_type_unref(d);
  qv_type_unref(s);
  qv_type_unref(i32);
  qv_type_unref(i64);
}

/* Empty chunks may come without buffers; taking nothing from them, or
 * rows from the other chunks, must not touch them. */
static void test_take_empty_without_buffers(void) {
  qv_type *types[5] = {orc_t(QV_STRING), orc_t(QV_BOOL), orc_t(QV_INT32),
                       orc_list(QV_LARGE_LIST, orc_t(QV_INT8)), orc_t(QV_BINARY_VIEW)};
  for (int ti = 0; ti < 5; ti++) {
    qv_type *t = types[ti];
    qv_array *empty = qv_array_new(t, qv_type_num_buffers(t->id), t->n_children);
    if (t->n_children) empty->children[0] = orc_gen(t->children[0].type, 0);
    empty->null_count = 0;
    qv_array *out = NULL;
    QV_REQUIRE(qv_array_take(empty, NULL, 0, &out, NULL) == QV_OK);
    check_gather(out, &empty, NULL, NULL, 0, 100 + ti);
    qv_array_unref(out);
    qv_array *chunks[3] = {empty, orc_gen_sliced(t, 4), empty};
    int64_t ci[] = {1, 1, 1}, ri[] = {3, 0, 2};
    QV_REQUIRE(qv_array_take_chunked(chunks, 3, ci, ri, 3, &out, NULL) == QV_OK);
    check_gather(out, chunks, ci, ri, 3, 200 + ti);
    qv_array_unref(out);
    qv_array_unref(chunks[1]);
    qv_array_unref(empty);
    qv_type_unref(t);
  }
}

int main(void) {
  QV_RUN(test_take_random);
  QV_RUN(test_take_chunked_random);
  QV_RUN(test_take_chunked_to);
  QV_RUN(test_take_chunked_to_lengths);
  QV_RUN(test_take_zero_copy_parts);
  QV_RUN(test_take_empty_without_buffers);
  QV_RUN(test_take_errors);
  return QV_TEST_END();
}
