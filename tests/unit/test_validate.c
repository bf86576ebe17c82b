/* test_validate.c — unit tests for src/core/validate.c: every type family
 * valid at every level, and corrupt variants each asserting the exact
 * error text; the UTF-8 validator against hand-picked edge cases. */
#include <stdio.h>

#include "qv_build.h"
#include "qv_test.h"

#define MINIMAL QV_VALIDATE_MINIMAL
#define DEFAULT QV_VALIDATE_DEFAULT
#define FULL QV_VALIDATE_FULL

static qv_error err;

/* Validate, expecting success. */
static int ok(const qv_array *a, qv_validate_level level) {
  qv_status st = qv_array_validate(a, level, "column 'a'", &err);
  if (st != QV_OK) fprintf(stderr, "  unexpected: %s\n", err.message);
  return st == QV_OK;
}

/* Validate, expecting QV_EINVAL; returns the message. */
static const char *bad(const qv_array *a, qv_validate_level level) {
  err.message[0] = '\0';
  qv_status st = qv_array_validate(a, level, "column 'a'", &err);
  if (st != QV_EINVAL) return "(validation passed)";
  return err.message;
}

static void test_primitive(void) {
  int32_t v[4] = {1, 2, 3, 4};
  uint8_t valid = 0x0B; /* 1101: slot 2 null */
  qv_array *a = tb_prim_raw(QV_INT32, 4, 1, &valid, 1, v, 16);
  QV_CHECK(ok(a, FULL));
  a->null_count = 2;
  QV_CHECK_EQ_STR(bad(a, DEFAULT),
                  "column 'a': null_count 2 does not match the validity bitmap (1 nulls)");
  QV_CHECK(ok(a, MINIMAL)); /* the bitmap is not counted at MINIMAL */
  a->null_count = 5;
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': null_count 5 exceeds length 4");
  a->null_count = -1; /* unknown: fine */
  QV_CHECK(ok(a, FULL));
  a->offset = 1; /* needs 5 values */
  a->length = 4;
  QV_CHECK_EQ_STR(bad(a, MINIMAL),
                  "column 'a': buffer 1 (values) has 16 bytes but 20 are required "
                  "(length 4, offset 1)");
  a->offset = 0;
  qv_buffer_unref(a->buffers[0]);
  a->buffers[0] = NULL;
  a->null_count = 1;
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': null_count 1 but no validity buffer");
  qv_array_unref(a);

  a = tb_prim_raw(QV_INT64, 3, 0, NULL, 0, v, 16);
  QV_CHECK_EQ_STR(bad(a, MINIMAL),
                  "column 'a': buffer 1 (values) has 16 bytes but 24 are required "
                  "(length 3, offset 0)");
  qv_array_unref(a);

  /* 9 bits of bool need 2 bytes of values and validity. */
  uint8_t bits[2] = {0xFF, 0x01};
  a = tb_prim_raw(QV_BOOL, 9, 0, bits, 1, bits, 2);
  QV_CHECK_EQ_STR(bad(a, MINIMAL),
                  "column 'a': buffer 0 (validity) has 1 bytes but 2 are required "
                  "(length 9, offset 0)");
  qv_array_unref(a);

  qv_type *fsb = tb_type(QV_FIXED_SIZE_BINARY);
  fsb->byte_width = 3;
  qv_buffer *b[2] = {NULL, tb_buf("abcdefgh", 8)};
  a = tb_array_nc(fsb, 3, 0, 2, b, 0, NULL);
  QV_CHECK_EQ_STR(bad(a, MINIMAL),
                  "column 'a': buffer 1 (values) has 8 bytes but 9 are required "
                  "(length 3, offset 0)");
  a->length = 2;
  QV_CHECK(ok(a, FULL));
  qv_array_unref(a);

  /* decimal256: 32 bytes per value. */
  uint8_t dec[64] = {0};
  a = tb_prim_raw(QV_DECIMAL256, 2, 0, NULL, 0, dec, 64);
  QV_CHECK(ok(a, FULL));
  a->length = 3;
  QV_CHECK_EQ_STR(bad(a, MINIMAL),
                  "column 'a': buffer 1 (values) has 64 bytes but 96 are required "
                  "(length 3, offset 0)");
  qv_array_unref(a);

  /* null type: no buffers, null_count == length. */
  a = tb_array_nc(tb_type(QV_NA), 5, 5, 0, NULL, 0, NULL);
  QV_CHECK(ok(a, FULL));
  a->null_count = 0;
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': null array has null_count 0, expected 5");
  qv_array_unref(a);

  /* Wrong buffer count. */
  qv_buffer *b1[1] = {tb_buf(v, 16)};
  a = tb_array_nc(tb_type(QV_INT32), 4, 0, 1, b1, 0, NULL);
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': int32 array has 1 buffers, expected 2");
  qv_array_unref(a);
}

static void test_binary(void) {
  int32_t off[5] = {0, 3, 3, 5, 9};
  qv_array *a = tb_str_raw(QV_STRING, 4, 0, NULL, off, "abcdefghi", 9);
  QV_CHECK(ok(a, FULL));
  a->offset = 1;
  a->length = 3;
  QV_CHECK(ok(a, FULL));
  a->offset = 0;
  a->length = 4;
  ((int32_t *)a->buffers[1]->data)[2] = 6; /* 0 3 6 5 9 */
  QV_CHECK_EQ_STR(bad(a, DEFAULT), "column 'a': offsets not monotonic at index 2 (6 > 5)");
  QV_CHECK(ok(a, MINIMAL)); /* only first/last at MINIMAL */
  ((int32_t *)a->buffers[1]->data)[2] = 3;
  ((int32_t *)a->buffers[1]->data)[4] = 10;
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': last offset 10 exceeds data size 9");
  ((int32_t *)a->buffers[1]->data)[4] = 9;
  ((int32_t *)a->buffers[1]->data)[0] = -1;
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': first offset -1 is negative");
  ((int32_t *)a->buffers[1]->data)[0] = 0;
  a->length = 5;
  QV_CHECK_EQ_STR(bad(a, MINIMAL),
                  "column 'a': buffer 1 (offsets) has 20 bytes but 24 are required "
                  "(length 5, offset 0)");
  /* Empty arrays may have empty offsets. */
  a->length = 0;
  QV_CHECK(ok(a, FULL));
  qv_array_unref(a);

  int64_t loff[3] = {0, 2, 1};
  qv_buffer *b[3] = {NULL, tb_buf(loff, 24), tb_buf("xyz", 3)};
  a = tb_array_nc(tb_type(QV_LARGE_BINARY), 2, 0, 3, b, 0, NULL);
  QV_CHECK_EQ_STR(bad(a, DEFAULT), "column 'a': offsets not monotonic at index 1 (2 > 1)");
  QV_CHECK(ok(a, MINIMAL)); /* first 0 <= last 1 <= 3 */
  ((int64_t *)a->buffers[1]->data)[2] = -1;
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': first offset 0 is greater than last offset -1");
  qv_array_unref(a);
}

static void test_utf8(void) {
  struct {
    const char *s;
    int ok;
  } cases[] = {
      {"plain ascii text longer than sixteen bytes", 1},
      {"\xC3\xA9t\xC3\xA9", 1},           /* été */
      {"\xE2\x82\xAC", 1},                /* euro sign */
      {"\xF0\x9F\x98\x80", 1},            /* emoji, 4 bytes */
      {"\xF4\x8F\xBF\xBF", 1},            /* U+10FFFF */
      {"\xC0\x80", 0},                    /* overlong NUL */
      {"\xE0\x80\xAF", 0},                /* overlong */
      {"\xED\xA0\x80", 0},                /* surrogate */
      {"\xF4\x90\x80\x80", 0},            /* > U+10FFFF */
      {"\xE2\x82", 0},                    /* truncated */
      {"abcdefghijklmnopqrstuvw\x80", 0}, /* stray continuation after ASCII run */
      {"\xF8\x88\x80\x80\x80", 0},        /* 5-byte form */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int32_t len = (int32_t)strlen(cases[i].s);
    int32_t off[2] = {0, len};
    qv_array *a = tb_str_raw(QV_STRING, 1, 0, NULL, off, cases[i].s, len);
    if (cases[i].ok) {
      QV_CHECK(ok(a, FULL));
    } else {
      QV_CHECK_EQ_STR(bad(a, FULL), "column 'a': invalid UTF-8 in value at index 0");
      QV_CHECK(ok(a, DEFAULT)); /* UTF-8 only at FULL */
    }
    /* binary is never UTF-8 checked */
    qv_array *b = tb_str_raw(QV_BINARY, 1, 0, NULL, off, cases[i].s, len);
    QV_CHECK(ok(b, FULL));
    qv_array_unref(a);
    qv_array_unref(b);
  }
  /* A character split across two values: the whole range is valid UTF-8
   * but each value is not. */
  int32_t off[3] = {0, 1, 2};
  qv_array *a = tb_str_raw(QV_STRING, 2, 0, NULL, off, "\xC3\xA9", 2);
  QV_CHECK_EQ_STR(bad(a, FULL), "column 'a': invalid UTF-8 in value at index 0");
  qv_array_unref(a);
  /* Invalid bytes only under a null slot are fine. */
  uint8_t valid = 0x01;
  int32_t off2[3] = {0, 1, 2};
  a = tb_str_raw(QV_STRING, 2, 1, &valid, off2, "a\xFF", 2);
  QV_CHECK(ok(a, FULL));
  valid = 0x02;
  ((uint8_t *)a->buffers[0]->data)[0] = 0x02;
  a->buffers[2]->data[0] = 0xFF;
  a->buffers[2]->data[1] = 0xFF;
  QV_CHECK_EQ_STR(bad(a, FULL), "column 'a': invalid UTF-8 in value at index 1");
  qv_array_unref(a);
}

static qv_array *make_views(qv_type_id id, uint8_t (*views)[16], int n, const char *data,
                            int64_t data_len) {
  qv_buffer *b[3] = {NULL, tb_buf(views, 16 * n), tb_buf(data, data_len)};
  return tb_array_nc(tb_type(id), n, 0, 3, b, 0, NULL);
}

static void test_views(void) {
  const char *data = "0123456789abcdefghijklmnopqrstuvwxyz";
  uint8_t v[3][16];
  tb_view(v[0], "short", 5, 0, 0);
  tb_view(v[1], data + 10, 20, 0, 10);
  tb_view(v[2], "", 0, 0, 0);
  qv_array *a = make_views(QV_STRING_VIEW, v, 3, data, 36);
  QV_CHECK(ok(a, FULL));
  uint8_t *views = a->buffers[1]->data;
  /* buffer index out of range */
  int32_t bi = 1;
  memcpy(views + 16 + 8, &bi, 4);
  QV_CHECK_EQ_STR(bad(a, DEFAULT),
                  "column 'a': view at index 1 refers to data buffer 1 but the array has 1");
  QV_CHECK(ok(a, MINIMAL));
  bi = 0;
  memcpy(views + 16 + 8, &bi, 4);
  int32_t off = 20; /* [20, 40) > 36 */
  memcpy(views + 16 + 12, &off, 4);
  QV_CHECK_EQ_STR(
      bad(a, DEFAULT),
      "column 'a': view at index 1: range [20, 40) is outside data buffer 0 of 36 bytes");
  off = 10;
  memcpy(views + 16 + 12, &off, 4);
  views[16 + 4] = 'X'; /* prefix mismatch: FULL only */
  QV_CHECK(ok(a, DEFAULT));
  QV_CHECK_EQ_STR(bad(a, FULL), "column 'a': view at index 1: inline prefix differs from its data");
  views[16 + 4] = 'a';
  views[4 + 7] = 'Z'; /* padding after "short" */
  QV_CHECK_EQ_STR(
      bad(a, FULL),
      "column 'a': view at index 0 is inline with length 5 but its padding is not zero");
  views[4 + 7] = 0;
  views[4] = 0xFF; /* invalid UTF-8 inline */
  QV_CHECK_EQ_STR(bad(a, FULL), "column 'a': invalid UTF-8 in value at index 0");
  views[4] = 's';
  int32_t neg = -3;
  memcpy(views + 32, &neg, 4);
  QV_CHECK_EQ_STR(bad(a, DEFAULT), "column 'a': view at index 2 has negative length -3");
  qv_array_unref(a);
  /* binary view: no UTF-8 check */
  tb_view(v[0], "\xFF\xFE", 2, 0, 0);
  a = make_views(QV_BINARY_VIEW, v, 1, data, 36);
  QV_CHECK(ok(a, FULL));
  a->length = 2;
  QV_CHECK_EQ_STR(bad(a, MINIMAL),
                  "column 'a': buffer 1 (views) has 16 bytes but 32 are required "
                  "(length 2, offset 0)");
  qv_array_unref(a);
}

static qv_array *make_list(qv_type_id id, int64_t n, const void *offsets, int width,
                           qv_array *child) {
  qv_type *t = tb_child(tb_type(id), "item", qv_type_ref(child->type));
  qv_buffer *b[2] = {NULL, tb_buf(offsets, (n + 1) * width)};
  return tb_array_nc(t, n, 0, 2, b, 1, &child);
}

static void test_lists(void) {
  int32_t vals[4] = {1, 2, 3, 4};
  int32_t off[4] = {0, 2, 2, 4};
  qv_array *a = make_list(QV_LIST, 3, off, 4, tb_int32(vals, 4));
  QV_CHECK(ok(a, FULL));
  a->children[0]->length = 3;
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': last offset 4 exceeds child length 3");
  a->children[0]->length = 5; /* child's own buffer too short: path names it */
  QV_CHECK_EQ_STR(bad(a, MINIMAL),
                  "column 'a.item': buffer 1 (values) has 16 bytes but 20 are required "
                  "(length 5, offset 0)");
  qv_array_unref(a);

  int64_t loff[3] = {0, 3, 1};
  a = make_list(QV_LARGE_LIST, 2, loff, 8, tb_int32(vals, 4));
  QV_CHECK_EQ_STR(bad(a, DEFAULT), "column 'a': offsets not monotonic at index 1 (3 > 1)");
  qv_array_unref(a);

  /* list view: [offset, size] pairs inside the child, any order */
  int32_t vo[3] = {2, 0, 4}, vs[3] = {2, 3, 0};
  qv_array *child = tb_int32(vals, 4);
  qv_type *t = tb_child(tb_type(QV_LIST_VIEW), "item", qv_type_ref(child->type));
  qv_buffer *b[3] = {NULL, tb_buf(vo, 12), tb_buf(vs, 12)};
  a = tb_array_nc(t, 3, 0, 3, b, 1, &child);
  QV_CHECK(ok(a, FULL));
  ((int32_t *)a->buffers[2]->data)[0] = 3; /* 2 + 3 > 4 */
  QV_CHECK_EQ_STR(
      bad(a, DEFAULT),
      "column 'a': list view at index 0 has offset 2 and size 3 outside child length 4");
  ((int32_t *)a->buffers[2]->data)[0] = 2;
  ((int32_t *)a->buffers[1]->data)[1] = -1;
  QV_CHECK_EQ_STR(
      bad(a, DEFAULT),
      "column 'a': list view at index 1 has offset -1 and size 3 outside child length 4");
  qv_array_unref(a);

  /* fixed-size list: child needs length * list_size */
  child = tb_int32(vals, 4);
  t = tb_child(tb_type(QV_FIXED_SIZE_LIST), "item", qv_type_ref(child->type));
  t->list_size = 2;
  qv_buffer *nb[1] = {NULL};
  a = tb_array_nc(t, 3, 0, 1, nb, 1, &child);
  QV_CHECK_EQ_STR(bad(a, MINIMAL),
                  "column 'a': child 'item' has length 4 but 3 lists of size 2 need 6");
  a->length = 2;
  QV_CHECK(ok(a, FULL));
  qv_array_unref(a);
}

static void test_struct_and_map(void) {
  int32_t vals[3] = {1, 2, 3};
  qv_array *kids[2] = {tb_int32(vals, 3), tb_int32(vals, 2)};
  qv_type *t = tb_type(QV_STRUCT);
  tb_child(t, "a", tb_type(QV_INT32));
  tb_child(t, "b", tb_type(QV_INT32));
  qv_buffer *nb[1] = {NULL};
  qv_array *s = tb_array_nc(t, 3, 0, 1, nb, 2, kids);
  QV_CHECK_EQ_STR(bad(s, MINIMAL), "column 'a': child 'b' has length 2, less than the struct's 3");
  s->length = 2;
  QV_CHECK(ok(s, FULL));
  qv_array_unref(s);

  /* map<int32, int32> with a null key */
  uint8_t kvalid = 0x05; /* key 1 null */
  qv_array *ek[2] = {tb_prim_raw(QV_INT32, 3, 1, &kvalid, 1, vals, 12), tb_int32(vals, 3)};
  qv_type *et = tb_type(QV_STRUCT);
  tb_child(et, "key", tb_type(QV_INT32));
  tb_child(et, "value", tb_type(QV_INT32));
  qv_buffer *eb[1] = {NULL};
  qv_array *entries = tb_array_nc(et, 3, 0, 1, eb, 2, ek);
  int32_t off[3] = {0, 1, 3};
  qv_array *m = make_list(QV_MAP, 2, off, 4, entries);
  QV_CHECK_EQ_STR(bad(m, DEFAULT), "column 'a': map keys contain nulls");
  QV_CHECK(ok(m, MINIMAL));
  qv_array_unref(m);

  /* keys whose validity bitmap is too short for their 200 rows: reported
   * as such, never read past its end (found by fuzz_ipc_stream: the null
   * checks ran before the children were validated) */
  static int32_t many[200];
  uint8_t short_valid = 0xff;
  qv_array *ek2[2] = {tb_prim_raw(QV_INT32, 200, 0, &short_valid, 1, many, 800),
                      tb_int32(many, 200)};
  qv_type *et2 = tb_type(QV_STRUCT);
  tb_child(et2, "key", tb_type(QV_INT32));
  tb_child(et2, "value", tb_type(QV_INT32));
  qv_buffer *eb2[1] = {NULL};
  qv_array *entries2 = tb_array_nc(et2, 200, 0, 1, eb2, 2, ek2);
  int32_t off2[3] = {0, 100, 200};
  qv_array *m2 = make_list(QV_MAP, 2, off2, 4, entries2);
  const char *msg = bad(m2, DEFAULT);
  QV_CHECK(strstr(msg, "validity") != NULL);
  qv_array_unref(m2);
}

static void test_unions(void) {
  int32_t vals[4] = {10, 20, 30, 40};
  int8_t ids[4] = {5, 7, 5, 7};
  qv_type *t = tb_type(QV_SPARSE_UNION);
  tb_child(t, "x", tb_type(QV_INT32));
  tb_child(t, "y", tb_type(QV_INT32));
  t->type_codes = malloc(2 * sizeof(int32_t));
  t->type_codes[0] = 5;
  t->type_codes[1] = 7;
  qv_array *kids[2] = {tb_int32(vals, 4), tb_int32(vals, 4)};
  qv_buffer *b[1] = {tb_buf(ids, 4)};
  qv_array *u = tb_array_nc(t, 4, 0, 1, b, 2, kids);
  QV_CHECK(ok(u, FULL));
  u->buffers[0]->data[2] = 6;
  QV_CHECK_EQ_STR(bad(u, DEFAULT),
                  "column 'a': type id 6 at index 2 is not one of the union's type codes");
  u->buffers[0]->data[2] = (uint8_t)-1;
  QV_CHECK_EQ_STR(bad(u, DEFAULT),
                  "column 'a': type id -1 at index 2 is not one of the union's type codes");
  u->buffers[0]->data[2] = 5;
  u->children[1]->length = 3;
  QV_CHECK_EQ_STR(bad(u, MINIMAL),
                  "column 'a': child 'y' has length 3 but the sparse union needs 4");
  qv_array_unref(u);

  /* dense: offsets into each child */
  t = tb_type(QV_DENSE_UNION);
  tb_child(t, "x", tb_type(QV_INT32));
  tb_child(t, "y", tb_type(QV_INT32));
  int8_t dids[4] = {0, 1, 0, 1};
  int32_t doff[4] = {0, 0, 1, 1};
  qv_array *dk[2] = {tb_int32(vals, 2), tb_int32(vals, 2)};
  qv_buffer *db[2] = {tb_buf(dids, 4), tb_buf(doff, 16)};
  u = tb_array_nc(t, 4, 0, 2, db, 2, dk);
  QV_CHECK(ok(u, FULL));
  ((int32_t *)u->buffers[1]->data)[3] = 2;
  QV_CHECK_EQ_STR(
      bad(u, DEFAULT),
      "column 'a': dense union offset 2 at index 3 is out of range for child 'y' of length 2");
  u->length = 5;
  QV_CHECK_EQ_STR(bad(u, MINIMAL),
                  "column 'a': buffer 0 (type_ids) has 4 bytes but 5 are required "
                  "(length 5, offset 0)");
  qv_array_unref(u);
}

static qv_array *make_dict(qv_type_id index_id, const void *idx, int64_t n, int width,
                           const uint8_t *validity, int64_t nulls, qv_array *dict) {
  qv_type *t = tb_type(QV_DICTIONARY);
  t->index_type = tb_type(index_id);
  t->value_type = qv_type_ref(dict->type);
  t->dict_id = 0;
  qv_buffer *b[2] = {validity ? tb_buf(validity, 1) : NULL, tb_buf(idx, n * width)};
  qv_array *a = tb_array_nc(t, n, nulls, 2, b, 0, NULL);
  a->dictionary = dict;
  return a;
}

static void test_dictionary(void) {
  int32_t dvals[3] = {7, 8, 9};
  int8_t idx[4] = {0, 2, 1, 3};
  uint8_t valid = 0x07; /* slot 3 null: its bad index is ignored */
  qv_array *a = make_dict(QV_INT8, idx, 4, 1, &valid, 1, tb_int32(dvals, 3));
  QV_CHECK(ok(a, FULL));
  a->buffers[0]->data[0] = 0x0F;
  a->null_count = 0;
  QV_CHECK_EQ_STR(bad(a, DEFAULT),
                  "column 'a': dictionary index 3 at index 3 is out of range [0, 3)");
  qv_array_unref(a);

  int16_t sidx[2] = {1, -1};
  a = make_dict(QV_INT16, sidx, 2, 2, NULL, 0, tb_int32(dvals, 3));
  QV_CHECK_EQ_STR(bad(a, DEFAULT),
                  "column 'a': dictionary index -1 at index 1 is out of range [0, 3)");
  qv_array_unref(a);

  uint32_t uidx[2] = {2, 3000000000u};
  a = make_dict(QV_UINT32, uidx, 2, 4, NULL, 0, tb_int32(dvals, 3));
  QV_CHECK_EQ_STR(bad(a, DEFAULT),
                  "column 'a': dictionary index 3000000000 at index 1 is out of range [0, 3)");
  qv_array_unref(a);

  /* The dictionary values are validated too, under '<path>.dictionary'. */
  int64_t lidx[1] = {0};
  a = make_dict(QV_INT64, lidx, 1, 8, NULL, 0, tb_int32(dvals, 3));
  a->dictionary->length = 4;
  QV_CHECK_EQ_STR(bad(a, MINIMAL),
                  "column 'a.dictionary': buffer 1 (values) has 12 bytes but 16 are required "
                  "(length 4, offset 0)");
  qv_array_unref(a->dictionary);
  a->dictionary = NULL;
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': dictionary is missing");
  qv_array_unref(a);
}

static qv_array *make_ree(const int32_t *ends, int64_t n_runs, int64_t length) {
  int32_t vals[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  qv_type *t = tb_type(QV_RUN_END_ENCODED);
  tb_child(t, "run_ends", tb_type(QV_INT32));
  tb_child(t, "values", tb_type(QV_INT32));
  qv_array *kids[2] = {tb_int32(ends, n_runs), tb_int32(vals, n_runs)};
  return tb_array_nc(t, length, 0, 0, NULL, 2, kids);
}

static void test_run_end_encoded(void) {
  int32_t ends[3] = {2, 5, 7};
  qv_array *a = make_ree(ends, 3, 7);
  QV_CHECK(ok(a, FULL));
  a->length = 8;
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': last run end 7 is less than offset + length 8");
  a->length = 6;
  a->offset = 1;
  QV_CHECK(ok(a, FULL));
  qv_array_unref(a);
  int32_t flat[3] = {2, 2, 7};
  a = make_ree(flat, 3, 7);
  QV_CHECK_EQ_STR(bad(a, DEFAULT),
                  "column 'a': run ends not strictly increasing at index 0 (2 >= 2)");
  qv_array_unref(a);
  int32_t down[3] = {3, 2, 7};
  a = make_ree(down, 3, 7);
  QV_CHECK_EQ_STR(bad(a, DEFAULT),
                  "column 'a': run ends not strictly increasing at index 0 (3 >= 2)");
  qv_array_unref(a);
  int32_t zero[2] = {0, 7};
  a = make_ree(zero, 2, 7);
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': run end 0 at index 0 is not positive");
  a->children[1]->length = 1;
  QV_CHECK_EQ_STR(bad(a, MINIMAL), "column 'a': values length 1 is less than run ends length 2");
  qv_array_unref(a);
}

static void test_null_path_and_levels(void) {
  int32_t v[1] = {1};
  qv_array *a = tb_int32(v, 1);
  a->length = 2;
  QV_CHECK_EQ_INT(qv_array_validate(a, QV_VALIDATE_NONE, NULL, &err), QV_OK);
  QV_CHECK_EQ_INT(qv_array_validate(a, MINIMAL, NULL, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "array: buffer 1 (values) has 4 bytes but 8 are required (length 2, offset 0)");
  QV_CHECK_EQ_INT(qv_array_validate(a, MINIMAL, "x", &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "x: buffer 1 (values) has 4 bytes but 8 are required (length 2, offset 0)");
  qv_array_unref(a);
}

/* A long offsets run crossing several validation blocks. */
static void test_long_offsets(void) {
  int64_t n = 10000;
  int32_t *off = malloc((size_t)(n + 1) * 4);
  for (int64_t i = 0; i <= n; i++) off[i] = (int32_t)i;
  char *data = malloc((size_t)n);
  memset(data, 'x', (size_t)n);
  qv_array *a = tb_str_raw(QV_STRING, n, 0, NULL, off, data, n);
  QV_CHECK(ok(a, FULL));
  ((int32_t *)a->buffers[1]->data)[9000] = 9002;
  QV_CHECK_EQ_STR(bad(a, DEFAULT), "column 'a': offsets not monotonic at index 9000 (9002 > 9001)");
  qv_array_unref(a);
  free(off);
  free(data);
}

int main(void) {
  QV_RUN(test_primitive);
  QV_RUN(test_binary);
  QV_RUN(test_utf8);
  QV_RUN(test_views);
  QV_RUN(test_lists);
  QV_RUN(test_struct_and_map);
  QV_RUN(test_unions);
  QV_RUN(test_dictionary);
  QV_RUN(test_run_end_encoded);
  QV_RUN(test_null_path_and_levels);
  QV_RUN(test_long_offsets);
  return QV_TEST_END();
}
