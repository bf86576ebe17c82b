/* test_element_access.c — the public element accessors and layout
 * constants of quiver/array.h (qv_array_int_at, qv_array_uint_at,
 * qv_array_offset_at, qv_array_view_bytes, qv_load_int, qv_load_offset,
 * QV_VIEW_*) and its numeric helpers (qv_half_to_double,
 * qv_double_to_half, qv_decimal_to_string), against values the test
 * builds itself (brute force: what was appended is what must be read). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/array.h"
#include "quiver/builder.h"
#include "qv_test.h"

#define OK(expr) QV_REQUIRE((expr) == QV_OK)

static qv_array *build_ints(qv_type_id id, const int64_t *v, int n) {
  qv_type *t = qv_type_new(id);
  qv_builder *b = NULL;
  qv_array *a = NULL;
  qv_error err;
  if (qv_builder_new(t, &b, &err) == QV_OK) {
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
      ok = (id == QV_UINT64 ? qv_builder_append_uint(b, (uint64_t)v[i], &err)
                            : qv_builder_append_int(b, v[i], &err)) == QV_OK;
    if (!ok || qv_builder_finish(b, &a, &err) != QV_OK) fprintf(stderr, "%s\n", err.message);
  }
  qv_builder_free(b);
  qv_type_unref(t);
  return a;
}

static void test_int_at_every_width(void) {
  static const struct {
    qv_type_id id;
    int64_t lo, hi;
  } types[] = {{QV_INT8, INT8_MIN, INT8_MAX},    {QV_UINT8, 0, UINT8_MAX},
               {QV_INT16, INT16_MIN, INT16_MAX}, {QV_UINT16, 0, UINT16_MAX},
               {QV_INT32, INT32_MIN, INT32_MAX}, {QV_UINT32, 0, UINT32_MAX},
               {QV_INT64, INT64_MIN, INT64_MAX}, {QV_UINT64, 0, -1 /* UINT64_MAX */}};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    int64_t v[6] = {types[t].lo, types[t].hi, 0, 1, types[t].lo + 1, types[t].hi - 1};
    if (types[t].id == QV_UINT64) v[5] = INT64_MAX;
    qv_array *a = build_ints(types[t].id, v, 6);
    QV_REQUIRE(a != NULL);
    QV_CHECK_EQ_INT(qv_int_type_bytes(types[t].id), qv_type_byte_width(a->type));
    for (int i = 0; i < 6; i++) {
      QV_CHECK_EQ_INT(qv_array_int_at(a, i), v[i]);
      QV_CHECK(qv_array_uint_at(a, i) == (uint64_t)v[i]);
      QV_CHECK_EQ_INT(qv_load_int(a->buffers[1]->data, qv_int_type_bytes(types[t].id),
                                  types[t].lo == 0, a->offset + i),
                      v[i]);
    }
    /* logical indices: a slice reads through its offset */
    qv_array *s = NULL;
    OK(qv_array_slice(a, 2, 4, &s, NULL));
    for (int i = 0; i < 4; i++) QV_CHECK_EQ_INT(qv_array_int_at(s, i), v[2 + i]);
    qv_array_unref(s);
    qv_array_unref(a);
  }
  QV_CHECK_EQ_INT(qv_int_type_bytes(QV_DOUBLE), 0);
  qv_array *u = build_ints(QV_UINT64, (const int64_t[]){-1}, 1);
  QV_REQUIRE(u != NULL);
  QV_CHECK(qv_array_uint_at(u, 0) == UINT64_MAX);
  qv_array_unref(u);
}

static void test_dictionary_indices(void) {
  qv_type *t = qv_type_new(QV_DICTIONARY);
  t->index_type = qv_type_new(QV_INT16);
  t->value_type = qv_type_new(QV_STRING);
  qv_builder *b = NULL;
  qv_error err;
  OK(qv_builder_new(t, &b, &err));
  const char *words[] = {"a", "b", "c"};
  for (int i = 0; i < 3; i++) OK(qv_builder_append_string(qv_builder_values(b), words[i], &err));
  const int64_t idx[] = {2, 0, 1, 1, 2, 0, 0};
  for (int i = 0; i < 7; i++) OK(qv_builder_append_index(b, idx[i], &err));
  qv_array *a = NULL;
  OK(qv_builder_finish(b, &a, &err));
  qv_builder_free(b);
  qv_type_unref(t);
  qv_array *s = NULL;
  OK(qv_array_slice(a, 3, 4, &s, &err));
  for (int i = 0; i < 4; i++) QV_CHECK_EQ_INT(qv_array_int_at(s, i), idx[3 + i]);
  qv_array_unref(s);
  qv_array_unref(a);
}

static void test_offsets_and_views(void) {
  static const char *const strs[] = {
      "", "x", "twelve bytes", "thirteen byte", "é", "a string longer than any inline view"};
  const int n = 6;
  static const qv_type_id ids[] = {QV_STRING, QV_LARGE_STRING, QV_BINARY, QV_STRING_VIEW};
  for (int t = 0; t < 4; t++) {
    qv_type *ty = qv_type_new(ids[t]);
    qv_builder *b = NULL;
    qv_error err;
    OK(qv_builder_new(ty, &b, &err));
    for (int i = 0; i < n; i++) OK(qv_builder_append_string(b, strs[i], &err));
    qv_array *a = NULL, *s = NULL;
    OK(qv_builder_finish(b, &a, &err));
    qv_builder_free(b);
    qv_type_unref(ty);
    OK(qv_array_slice(a, 1, n - 1, &s, &err));
    for (int i = 0; i < n - 1; i++) {
      const char *want = strs[1 + i];
      int64_t len = (int64_t)strlen(want);
      const uint8_t *data = NULL;
      if (ids[t] == QV_STRING_VIEW) {
        int32_t vlen = -1;
        QV_REQUIRE(qv_array_view_bytes(s, i, &data, &vlen));
        QV_CHECK_EQ_INT(vlen, len);
        /* inline exactly up to QV_VIEW_INLINE_MAX bytes: the bytes sit in the view */
        const uint8_t *view = s->buffers[1]->data + (s->offset + i) * QV_VIEW_SIZE;
        QV_CHECK((data == view + 4) == (len <= QV_VIEW_INLINE_MAX));
        if (len > QV_VIEW_INLINE_MAX) QV_CHECK(memcmp(view + 4, want, QV_VIEW_PREFIX_SIZE) == 0);
      } else {
        int64_t b0 = qv_array_offset_at(s, i), b1 = qv_array_offset_at(s, i + 1);
        QV_CHECK_EQ_INT(b1 - b0, len);
        QV_CHECK_EQ_INT(
            b0, qv_load_offset(a->buffers[1]->data, ids[t] == QV_LARGE_STRING ? 8 : 4, 1 + i));
        data = s->buffers[2]->data + b0;
      }
      QV_CHECK(len == 0 || memcmp(data, want, (size_t)len) == 0);
    }
    if (ids[t] == QV_STRING_VIEW) {
      /* a view naming a variadic buffer that does not exist is refused */
      uint8_t *view = a->buffers[1]->data + 5 * QV_VIEW_SIZE;
      int32_t bad = a->n_buffers - QV_VIEW_FIXED_BUFFERS, len = -1;
      memcpy(view + QV_VIEW_BUFFER_INDEX_AT, &bad, 4);
      const uint8_t *data = NULL;
      QV_CHECK(!qv_array_view_bytes(a, 5, &data, &len));
      QV_CHECK(data == NULL && len == -1);
      int32_t off = 1 << 30;
      bad = 0;
      memcpy(view + QV_VIEW_BUFFER_INDEX_AT, &bad, 4);
      memcpy(view + QV_VIEW_OFFSET_AT, &off, 4);
      QV_CHECK(!qv_array_view_bytes(a, 5, &data, &len));
    }
    qv_array_unref(s);
    qv_array_unref(a);
  }
}

static void test_half_floats(void) {
  /* every binary16: the conversion to double is exact, so back is the same bits */
  int checked = 0;
  for (uint32_t h = 0; h <= 0xffff; h++) {
    double d = qv_half_to_double((uint16_t)h);
    if (isnan(d)) {
      QV_CHECK((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0);
      QV_CHECK(isnan(qv_half_to_double(qv_double_to_half(d))));
      continue;
    }
    if (qv_double_to_half(d) != h) {
      fprintf(stderr, "half 0x%04x -> %g -> 0x%04x\n", h, d, qv_double_to_half(d));
      QV_CHECK(false);
    }
    checked++;
  }
  QV_CHECK_EQ_INT(checked, 65536 - 2046);
  QV_CHECK(qv_half_to_double(0x3c00) == 1.0);
  QV_CHECK(qv_half_to_double(0xc000) == -2.0);
  QV_CHECK(qv_half_to_double(0x7bff) == 65504.0);
  QV_CHECK(qv_half_to_double(0x0001) == ldexp(1.0, -24));
  QV_CHECK_EQ_INT(qv_double_to_half(1e6), 0x7c00);                       /* overflow: +inf */
  QV_CHECK_EQ_INT(qv_double_to_half(1.0 + ldexp(1.0, -11)), 0x3c00);     /* tie: to even */
  QV_CHECK_EQ_INT(qv_double_to_half(1.0 + 3 * ldexp(1.0, -11)), 0x3c02); /* tie: to even */
}

/* v as an nbytes little-endian two's complement integer (sign-extended). */
static void le_bytes(int64_t v, int nbytes, uint8_t *out) {
  for (int i = 0; i < nbytes; i++)
    out[i] = i < 8 ? (uint8_t)((uint64_t)v >> (8 * i)) : (v < 0 ? 0xff : 0);
}

static void test_decimal_text(void) {
  char got[QV_DECIMAL_STRING_MAX], want[QV_DECIMAL_STRING_MAX];
  uint8_t b[32];
  /* brute force against printf for values that fit 64 bits, every width and scales */
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int k = 0; k < 2000; k++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int nbytes = 4 << (k % 4); /* 4, 8, 16, 32 */
    int64_t v = nbytes == 4 ? (int64_t)(int32_t)x : (int64_t)x >> (k % 40);
    int32_t scale = (int32_t)(k % 7) - 2; /* -2..4 */
    le_bytes(v, nbytes, b);
    int n = qv_decimal_to_string(b, nbytes, scale, got);
    char digits[32];
    snprintf(digits, sizeof digits, "%" PRIu64, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    int nd = (int)strlen(digits);
    if (scale <= 0) {
      snprintf(want, sizeof want, "%s%s", v < 0 ? "-" : "", digits);
      if (scale < 0) snprintf(want + strlen(want), sizeof want - strlen(want), "e%d", -scale);
    } else {
      char padded[64]; /* the digits with leading zeros up to scale + 1 of them */
      int zeros = nd <= scale ? scale + 1 - nd : 0;
      memset(padded, '0', (size_t)zeros);
      memcpy(padded + zeros, digits, (size_t)nd + 1);
      int np = zeros + nd;
      snprintf(want, sizeof want, "%s%.*s.%s", v < 0 ? "-" : "", np - scale, padded,
               padded + np - scale);
    }
    if (strcmp(got, want) != 0 || n != (int)strlen(got)) {
      fprintf(stderr, "decimal%d %" PRId64 " scale %d: got '%s', want '%s'\n", nbytes * 8, v, scale,
              got, want);
      QV_CHECK(false);
      break;
    }
  }
  static const struct {
    int64_t v;
    int32_t scale;
    const char *text;
  } small[] = {{-5, 2, "-0.05"}, {0, 3, "0.000"}, {7, 1, "0.7"}, {-120, 0, "-120"}, {3, -3, "3e3"}};
  for (size_t k = 0; k < sizeof small / sizeof small[0]; k++) {
    le_bytes(small[k].v, 16, b);
    qv_decimal_to_string(b, 16, small[k].scale, got);
    QV_CHECK_EQ_STR(got, small[k].text);
  }
  /* the extremes of decimal256 */
  memset(b, 0xff, 32);
  b[31] = 0x7f;
  qv_decimal_to_string(b, 32, 0, got);
  QV_CHECK_EQ_STR(got,
                  "57896044618658097711785492504343953926634992332820282019728792003956564819967");
  memset(b, 0, 32);
  b[31] = 0x80;
  qv_decimal_to_string(b, 32, 76, got);
  QV_CHECK_EQ_STR(
      got, "-5.7896044618658097711785492504343953926634992332820282019728792003956564819968");
}

int main(void) {
  QV_RUN(test_int_at_every_width);
  QV_RUN(test_dictionary_indices);
  QV_RUN(test_offsets_and_views);
  QV_RUN(test_half_floats);
  QV_RUN(test_decimal_text);
  return QV_TEST_END();
}
