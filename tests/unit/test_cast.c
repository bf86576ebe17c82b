/* test_cast.c — qv_array_cast and qv_array_nulls (core/cast.c): values
 * and nulls of every supported conversion, sliced inputs, zero copy where
 * promised, and every refusal with its exact text (overflow, truncation,
 * precision, data loss, 32-bit offsets, UTF-8, unsupported pairs); all-null
 * arrays of every catalog type; casts through tables (mapped tables record
 * a replay). */
#include "array_oracle.h"
#include "core/kernels_internal.h"
#include "quiver/table.h"
#include "qv_build.h"
#include "qv_test.h"

static qv_error E;

static qv_array *ints(qv_type_id id, const int64_t *v, int64_t n, const char *valid) {
  qv_type *t = qv_type_new(id);
  int32_t w = qv_type_bit_width(t) / 8;
  qv_buffer *vals = tb_buf(NULL, n * w);
  for (int64_t i = 0; i < n; i++) qvk_store_int(vals->data, w, i, v[i]);
  qv_buffer *b[2] = {valid ? tb_bits(valid) : NULL, vals};
  return tb_array(t, n, 2, b, 0, NULL);
}

static qv_array *doubles(const double *v, int64_t n, const char *valid) {
  return tb_prim(qv_type_new(QV_DOUBLE), n, valid, v, n * 8);
}

static qv_array *cast_to(qv_array *a, qv_type *t, qv_status want) {
  qv_array *out = NULL;
  E.message[0] = '\0';
  qv_status st = qv_array_cast(a, t, &out, &E);
  if (st != want) fprintf(stderr, "cast: status %d, expected %d: %s\n", st, want, E.message);
  QV_CHECK(st == want);
  if (st == QV_OK) {
    qv_error verr;
    qv_status v = qv_array_validate(out, QV_VALIDATE_FULL, "cast result", &verr);
    if (v != QV_OK) fprintf(stderr, "%s\n", verr.message);
    QV_CHECK(v == QV_OK);
    QV_CHECK(out->type == t);
  }
  return out;
}

static void test_integers(void) {
  int64_t v[5] = {1, -2, 300, 127, 99999};
  qv_array *a = ints(QV_INT64, v, 5, "11011"), *s = NULL;
  qv_type *i8 = qv_type_new(QV_INT8), *i32 = qv_type_new(QV_INT32), *u8 = qv_type_new(QV_UINT8);
  /* row 2 (300) is null: never checked; row 4 overflows */
  qv_array *out = cast_to(a, i8, QV_ERANGE);
  QV_CHECK_EQ_STR(E.message,
                  "cast from int64 to int8: row 4: value 99999 is out of range "
                  "[-128, 127]");
  QV_CHECK(qv_array_slice(a, 0, 4, &s, NULL) == QV_OK);
  out = cast_to(s, i8, QV_OK);
  if (out) {
    QV_CHECK_EQ_INT(qv_array_int_at(out, 0), 1);
    QV_CHECK_EQ_INT(qv_array_int_at(out, 1), -2);
    QV_CHECK_EQ_INT(qv_array_int_at(out, 3), 127);
    QV_CHECK(!qv_array_is_valid(out, 2) && qv_array_null_count(out) == 1);
  }
  qv_array_unref(out);
  out = cast_to(s, u8, QV_ERANGE);
  QV_CHECK_EQ_STR(E.message, "cast from int64 to uint8: row 1: value -2 is out of range [0, 255]");
  /* widening, sliced at a bit offset */
  qv_array *s2 = NULL;
  QV_CHECK(qv_array_slice(a, 1, 4, &s2, NULL) == QV_OK);
  out = cast_to(s2, i32, QV_OK);
  if (out) {
    QV_CHECK_EQ_INT(qv_array_int_at(out, 0), -2);
    QV_CHECK_EQ_INT(qv_array_int_at(out, 3), 99999);
    QV_CHECK(!qv_array_is_valid(out, 1));
  }
  qv_array_unref(out);
  int64_t big[1] = {-1}; /* as uint64: 2^64-1 */
  qv_array *u = ints(QV_UINT64, big, 1, NULL);
  qv_type *i64 = qv_type_new(QV_INT64);
  out = cast_to(u, i64, QV_ERANGE);
  QV_CHECK_EQ_STR(E.message,
                  "cast from uint64 to int64: row 0: value 18446744073709551615 is "
                  "out of range [-9223372036854775808, 9223372036854775807]");
  qv_array_unref(u);
  qv_array_unref(s);
  qv_array_unref(s2);
  qv_array_unref(a);
  qv_type_unref(i8);
  qv_type_unref(i32);
  qv_type_unref(u8);
  qv_type_unref(i64);
}

static void test_floats(void) {
  int64_t v[3] = {9007199254740992, 9007199254740993, 5};
  qv_array *a = ints(QV_INT64, v, 3, NULL);
  qv_type *f64 = qv_type_new(QV_DOUBLE), *f32 = qv_type_new(QV_FLOAT),
          *f16 = qv_type_new(QV_HALF_FLOAT), *i32 = qv_type_new(QV_INT32),
          *b = qv_type_new(QV_BOOL);
  qv_array *out = cast_to(a, f64, QV_ERANGE);
  QV_CHECK_EQ_STR(E.message,
                  "cast from int64 to double: row 1: integer value 9007199254740993 "
                  "is not exactly representable (limit +/-9007199254740992)");
  double d[5] = {1.0, 1.5, 3e10, -7.0, 0.0};
  qv_array *da = doubles(d, 5, "10111");
  out = cast_to(da, i32, QV_ERANGE);
  QV_CHECK_EQ_STR(E.message,
                  "cast from double to int32: row 2: float value 30000000000 is out "
                  "of range");
  qv_array *ds = NULL;
  QV_CHECK(qv_array_slice(da, 3, 2, &ds, NULL) == QV_OK);
  out = cast_to(ds, i32, QV_OK);
  if (out) QV_CHECK(qv_array_int_at(out, 0) == -7 && qv_array_int_at(out, 1) == 0);
  qv_array_unref(out);
  double frac[1] = {2.25};
  qv_array *fa = doubles(frac, 1, NULL);
  out = cast_to(fa, i32, QV_ERANGE);
  QV_CHECK_EQ_STR(E.message,
                  "cast from double to int32: row 0: float value 2.25 is not an "
                  "integer");
  out = cast_to(fa, f16, QV_OK); /* 2.25 is exact in binary16 */
  qv_array *back = out ? cast_to(out, f32, QV_OK) : NULL;
  if (back) {
    float x;
    memcpy(&x, back->buffers[1]->data, 4);
    QV_CHECK(x == 2.25f);
  }
  qv_array_unref(back);
  qv_array_unref(out);
  out = cast_to(da, b, QV_OK);
  if (out) {
    QV_CHECK(qv_bit_get(out->buffers[1]->data, 0) && !qv_bit_get(out->buffers[1]->data, 4));
    QV_CHECK(!qv_array_is_valid(out, 1));
    qv_array *again = cast_to(out, i32, QV_OK);
    if (again) QV_CHECK(qv_array_int_at(again, 0) == 1 && qv_array_int_at(again, 4) == 0);
    qv_array_unref(again);
  }
  qv_array_unref(out);
  qv_array_unref(fa);
  qv_array_unref(ds);
  qv_array_unref(da);
  qv_array_unref(a);
  qv_type_unref(f64);
  qv_type_unref(f32);
  qv_type_unref(f16);
  qv_type_unref(i32);
  qv_type_unref(b);
}

static void test_strings(void) {
  const char *s[5] = {"a", NULL, "hello", "", "\xc3\xa9t\xc3\xa9"};
  qv_array *a = tb_str(QV_STRING, 5, s, NULL), *sl = NULL;
  QV_CHECK(qv_array_slice(a, 1, 4, &sl, NULL) == QV_OK);
  qv_type *ls = qv_type_new(QV_LARGE_STRING), *st = qv_type_new(QV_STRING),
          *bin = qv_type_new(QV_BINARY);
  qv_array *l = cast_to(sl, ls, QV_OK);
  qv_array *back = l ? cast_to(l, st, QV_OK) : NULL;
  if (back) QV_CHECK(qv_array_equals(sl, back, &E));
  /* the data is shared, not copied */
  if (l) QV_CHECK(l->buffers[2]->data == a->buffers[2]->data + 1);
  qv_array *b = cast_to(sl, bin, QV_OK);
  qv_array *bs = b ? cast_to(b, st, QV_OK) : NULL;
  if (bs) QV_CHECK(qv_array_equals(sl, bs, &E));
  const char *bad[3] = {"ok", "\xff\xfe", NULL};
  qv_array *ba = tb_str(QV_BINARY, 3, bad, NULL);
  qv_array *r = cast_to(ba, st, QV_EINVAL);
  QV_CHECK_EQ_STR(E.message, "cast from binary to string: invalid UTF-8 in value at index 1");
  /* invalid bytes in a null slot are not checked */
  qv_array *ba_sl = NULL;
  QV_CHECK(qv_array_slice(ba, 2, 1, &ba_sl, NULL) == QV_OK);
  r = cast_to(ba_sl, st, QV_OK);
  qv_array_unref(r);
  /* 64-bit offsets that do not fit 32 bits: a large_string whose offsets
   * span 3e9 bytes (the data is never read). */
  int64_t offs[2] = {0, 3000000000LL};
  qv_buffer *data = NULL;
  QV_CHECK(qv_buffer_wrap((void *)16, 3000000000LL, NULL, NULL, &data, NULL) == QV_OK);
  qv_buffer *bufs[3] = {NULL, tb_buf(offs, 16), data};
  qv_array *huge = tb_array(qv_type_new(QV_LARGE_STRING), 1, 3, bufs, 0, NULL);
  qv_array *h = NULL;
  QV_CHECK(qv_array_cast(huge, st, &h, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message,
                  "cast from large_string to string: 3000000000 bytes/values do not "
                  "fit 32-bit offsets");
  qv_array_unref(huge);
  qv_array_unref(ba_sl);
  qv_array_unref(ba);
  qv_array_unref(b);
  qv_array_unref(bs);
  qv_array_unref(l);
  qv_array_unref(back);
  qv_array_unref(sl);
  qv_array_unref(a);
  qv_type_unref(ls);
  qv_type_unref(st);
  qv_type_unref(bin);
}

static void test_dictionary(void) {
  const char *vals[3] = {"x", "yy", NULL};
  qv_array *dict = tb_str(QV_STRING, 3, vals, NULL);
  int64_t idx[6] = {1, 0, 2, 1, 77, 0};
  qv_array *ind = ints(QV_INT8, idx, 6, "111101");
  qv_type *dt = qv_type_new(QV_DICTIONARY);
  dt->index_type = qv_type_new(QV_INT8);
  dt->value_type = qv_type_new(QV_STRING);
  qv_buffer *b[2] = {qv_buffer_ref(ind->buffers[0]), qv_buffer_ref(ind->buffers[1])};
  qv_array *a = tb_array(dt, 6, 2, b, 0, NULL);
  a->dictionary = dict;
  qv_type *ls = qv_type_new(QV_LARGE_STRING);
  qv_array *out = cast_to(a, ls, QV_OK);
  if (out) {
    const char *want[6] = {"yy", "x", NULL, "yy", NULL, "x"};
    qv_array *w = tb_str(QV_LARGE_STRING, 6, want, NULL);
    QV_CHECK(qv_array_equals(w, out, &E));
    qv_array_unref(w);
  }
  qv_array_unref(out);
  /* dictionary -> dictionary with wider indices */
  qv_type *d32 = qv_type_new(QV_DICTIONARY);
  d32->index_type = qv_type_new(QV_INT32);
  d32->value_type = qv_type_new(QV_LARGE_STRING);
  out = cast_to(a, d32, QV_OK);
  if (out) {
    qv_array *dec = cast_to(out, ls, QV_OK), *dec2 = cast_to(a, ls, QV_OK);
    if (dec && dec2) QV_CHECK(qv_array_equals(dec2, dec, &E));
    qv_array_unref(dec);
    qv_array_unref(dec2);
  }
  qv_array_unref(out);
  qv_array_unref(a);
  qv_array_unref(ind);
  qv_type_unref(ls);
  qv_type_unref(d32);
}

static void test_temporal(void) {
  int64_t v[3] = {1500, 2000, -3000};
  qv_array *ms = ints(QV_INT64, v, 3, NULL), *ts = NULL;
  qv_type *tms = qv_type_timestamp(QV_MILLI, "UTC"), *ts_s = qv_type_timestamp(QV_SECOND, NULL),
          *tns = qv_type_timestamp(QV_NANO, "Europe/Paris");
  ts = cast_to(ms, tms, QV_OK); /* int64 -> timestamp: zero copy */
  if (ts) QV_CHECK(ts->buffers[1] == ms->buffers[1]);
  qv_array *out = ts ? cast_to(ts, ts_s, QV_ERANGE) : NULL;
  QV_CHECK_EQ_STR(E.message,
                  "cast from timestamp[ms, tz=UTC] to timestamp[s] would lose data: "
                  "row 0: value 1500");
  qv_array *tail = NULL;
  if (ts) QV_CHECK(qv_array_slice(ts, 1, 2, &tail, NULL) == QV_OK);
  out = tail ? cast_to(tail, ts_s, QV_OK) : NULL;
  if (out) QV_CHECK(qv_array_int_at(out, 0) == 2 && qv_array_int_at(out, 1) == -3);
  qv_array_unref(out);
  out = ts ? cast_to(ts, tns, QV_OK) : NULL;
  if (out) QV_CHECK(qv_array_int_at(out, 2) == -3000000000LL);
  qv_array_unref(out);
  int64_t huge[1] = {INT64_MAX / 10};
  qv_array *hs = ints(QV_INT64, huge, 1, NULL), *hts = cast_to(hs, ts_s, QV_OK);
  out = hts ? cast_to(hts, tns, QV_ERANGE) : NULL;
  QV_CHECK_EQ_STR(E.message,
                  "cast from timestamp[s] to timestamp[ns, tz=Europe/Paris]: row 0: "
                  "value 922337203685477580 overflows");
  /* dates */
  int64_t days[2] = {1, -2};
  qv_array *d32 = ints(QV_DATE32, days, 2, NULL);
  qv_type *t64 = qv_type_new(QV_DATE64), *t32 = qv_type_new(QV_DATE32);
  out = cast_to(d32, t64, QV_OK);
  if (out) QV_CHECK(qv_array_int_at(out, 1) == -2 * 86400000LL);
  qv_array *back = out ? cast_to(out, t32, QV_OK) : NULL;
  if (back) QV_CHECK(qv_array_equals(d32, back, &E));
  qv_array_unref(back);
  qv_array_unref(out);
  /* time32[s] -> time64[us] */
  qv_type *t32s = qv_type_new(QV_TIME32), *t64us = qv_type_new(QV_TIME64);
  t32s->unit = QV_SECOND;
  t64us->unit = QV_MICRO;
  int64_t secs[1] = {59};
  qv_array *tsec = ints(QV_INT32, secs, 1, NULL), *tt = cast_to(tsec, t32s, QV_OK);
  out = tt ? cast_to(tt, t64us, QV_OK) : NULL;
  if (out) QV_CHECK(qv_array_int_at(out, 0) == 59000000);
  qv_array_unref(out);
  qv_array_unref(tt);
  qv_array_unref(tsec);
  qv_type_unref(t32s);
  qv_type_unref(t64us);
  qv_array_unref(d32);
  qv_type_unref(t64);
  qv_type_unref(t32);
  qv_array_unref(hs);
  qv_array_unref(hts);
  qv_array_unref(tail);
  qv_array_unref(ts);
  qv_array_unref(ms);
  qv_type_unref(tms);
  qv_type_unref(ts_s);
  qv_type_unref(tns);
}

static void test_nested(void) {
  /* list<int32> (sliced) -> large_list<int64> */
  qv_type *lt = orc_list(QV_LIST, orc_t(QV_INT32));
  qv_array *a = orc_gen_sliced(lt, 30);
  qv_type *to = orc_list(QV_LARGE_LIST, orc_t(QV_INT64));
  qv_array *out = cast_to(a, to, QV_OK);
  qv_array *back = out ? cast_to(out, lt, QV_OK) : NULL;
  if (back) QV_CHECK(qv_array_equals(a, back, &E));
  qv_array_unref(back);
  qv_array_unref(out);
  /* struct<int8, string, list<int64>> -> struct<int64, large_string, large_list<int64>> */
  qv_type *st = orc_type(27);
  qv_array *s = orc_gen_sliced(st, 25);
  qv_type *st2 = orc_nested(QV_STRUCT, NULL, 3, orc_t(QV_INT64), orc_t(QV_LARGE_STRING),
                            orc_list(QV_LARGE_LIST, orc_t(QV_INT64)));
  out = cast_to(s, st2, QV_OK);
  back = out ? cast_to(out, st, QV_OK) : NULL;
  if (back) QV_CHECK(qv_array_equals(s, back, &E));
  qv_array_unref(back);
  qv_array_unref(out);
  /* fixed_size_list<bool, 3> -> fixed_size_list<int8, 3> */
  qv_type *ft = orc_type(25), *ft2 = orc_fsl(orc_t(QV_INT8), 3);
  qv_array *f = orc_gen_sliced(ft, 20);
  out = cast_to(f, ft2, QV_OK);
  back = out ? cast_to(out, ft, QV_OK) : NULL;
  if (back) QV_CHECK(qv_array_equals(f, back, &E));
  qv_array_unref(back);
  qv_array_unref(out);
  /* unsupported pairs name both types */
  qv_type *i64 = orc_t(QV_INT64);
  out = cast_to(s, i64, QV_ENOTSUP);
  QV_CHECK_EQ_STR(E.message,
                  "cast from struct<c0: int8, c1: string, c2: list<item: int64>> to "
                  "int64 is not supported");
  qv_type_unref(i64);
  qv_array_unref(f);
  qv_type_unref(ft);
  qv_type_unref(ft2);
  qv_array_unref(s);
  qv_type_unref(st);
  qv_type_unref(st2);
  qv_array_unref(a);
  qv_type_unref(lt);
  qv_type_unref(to);
}

/* Equal types: zero copy; null type: all nulls; nulls of every type. */
static void test_identity_and_nulls(void) {
  for (int ti = 0; ti < ORC_N_TYPES; ti++) {
    qv_type *t = orc_type(ti);
    qv_array *a = orc_gen_sliced(t, 13);
    qv_type *t2 = orc_type(ti); /* equal, another object */
    qv_array *out = cast_to(a, t2, QV_OK);
    if (out) {
      QV_CHECK(qv_array_equals(a, out, &E));
      for (int32_t i = 0; i < a->n_buffers; i++) QV_CHECK(out->buffers[i] == a->buffers[i]);
    }
    qv_array_unref(out);
    for (int64_t n = 0; n < 40; n += 13) {
      qv_array *nl = NULL;
      QV_CHECK(qv_array_nulls(t, n, &nl, &E) == QV_OK);
      if (nl == NULL) continue;
      qv_error verr;
      qv_status v = qv_array_validate(nl, QV_VALIDATE_FULL, "nulls", &verr);
      if (v != QV_OK) fprintf(stderr, "type %d: %s\n", ti, verr.message);
      QV_CHECK(v == QV_OK);
      QV_CHECK_EQ_INT(nl->length, n);
      for (int64_t i = 0; i < n; i++) {
        char *txt = orc_str(nl, i);
        if (strstr(txt, "null") == NULL) {
          fprintf(stderr, "type %d row %lld: %s\n", ti, (long long)i, txt);
          QV_CHECK(false);
        }
        free(txt);
      }
      qv_array_unref(nl);
    }
    qv_type *na = orc_t(QV_NA);
    qv_array *nulls = NULL;
    QV_CHECK(qv_array_nulls(na, 5, &nulls, NULL) == QV_OK);
    out = ti == 0 ? NULL : cast_to(nulls, t, QV_OK);
    if (out) QV_CHECK_EQ_INT(out->length, 5);
    qv_array_unref(out);
    qv_array_unref(nulls);
    qv_type_unref(na);
    qv_array_unref(a);
    qv_type_unref(t);
    qv_type_unref(t2);
  }
}

/* Casting tables: unchanged columns shared, mapped tables record a replay,
 * errors name the column. */
static void test_table_cast(void) {
  int64_t v[4] = {1, 2, 3, 400};
  qv_array *c0 = ints(QV_INT64, v, 4, "1111");
  const char *s[4] = {"a", "b", NULL, "d"};
  qv_array *c1 = tb_str(QV_STRING, 4, s, NULL);
  qv_type *st = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(st, "n", true, qv_type_ref(c0->type), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "s", true, qv_type_ref(c1->type), NULL, NULL) == QV_OK);
  qv_schema *schema = qv_schema_new(st);
  qv_array *ch[2] = {c0, c1};
  qv_buffer *none[1] = {NULL};
  qv_array *batch = tb_array(qv_type_ref(st), 4, 1, none, 2, ch);
  batch->null_count = 0;
  qv_table *t = NULL, *r = NULL;
  QV_CHECK(qv_table_from_batches(schema, &batch, 1, &t, &E) == QV_OK);
  qv_type *t2 = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(t2, "n", false, qv_type_new(QV_INT16), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(t2, "s", true, qv_type_new(QV_LARGE_STRING), NULL, NULL) == QV_OK);
  qv_schema *target = qv_schema_new(t2);
  QV_CHECK(qv_metadata_append(&target->metadata, "huggingface", 11, "{}", 2, NULL) == QV_OK);
  QV_CHECK(qv_table_cast(t, target, &r, &E) == QV_OK);
  if (r) {
    QV_CHECK(qv_schema_equals(qv_table_schema(r), target, true));
    qv_array *b = NULL;
    QV_CHECK(qv_table_batch(r, 0, &b, NULL) == QV_OK);
    QV_CHECK(b && b->children[1]->buffers[2] == c1->buffers[2]); /* data shared */
    qv_array_unref(b);
  }
  qv_table_unref(r);
  qv_type *t3 = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(t3, "n", true, qv_type_new(QV_INT8), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(t3, "s", true, qv_type_new(QV_STRING), NULL, NULL) == QV_OK);
  qv_schema *narrow = qv_schema_new(t3);
  QV_CHECK(qv_table_cast(t, narrow, &r, &E) == QV_ERANGE);
  QV_CHECK_EQ_STR(E.message,
                  "cast: column 'n': cast from int64 to int8: row 3: value 400 is "
                  "out of range [-128, 127]");
  qv_type *t4 = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(t4, "m", true, qv_type_new(QV_INT8), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(t4, "s", true, qv_type_new(QV_STRING), NULL, NULL) == QV_OK);
  qv_schema *renamed = qv_schema_new(t4);
  QV_CHECK(qv_table_cast(t, renamed, &r, &E) == QV_EARG);
  QV_CHECK_EQ_STR(E.message,
                  "cast: target field 0 is named 'm', the column 'n' (names must "
                  "match; rename first)");
  qv_schema_unref(renamed);
  qv_schema_unref(narrow);
  qv_schema_unref(target);
  qv_array_unref(batch);
  qv_table_unref(t);
  qv_schema_unref(schema);
}

int main(void) {
  QV_RUN(test_integers);
  QV_RUN(test_floats);
  QV_RUN(test_strings);
  QV_RUN(test_dictionary);
  QV_RUN(test_temporal);
  QV_RUN(test_nested);
  QV_RUN(test_identity_and_nulls);
  QV_RUN(test_table_cast);
  return QV_TEST_END();
}
