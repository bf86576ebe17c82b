/* test_flatbuf.c — unit tests for the flatbuffers layer (src/ipc/flatbuf.c,
 * flatbuf_builder.c): builder -> verifier -> reader round trips for every
 * field kind, and crafted corrupt buffers (truncation, vtable out of
 * bounds, bad vtable sizes, vector length overflow, strings without NUL,
 * deep nesting, shared sub-objects exhausting the work budget), each
 * checked against its exact error text. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/flatbuf.h"
#include "qv_test.h"

/*
 * A test schema exercising every descriptor kind:
 *   table T { i: int; s: string; v: [long]; child: T; u_type; u: U;
 *             kids: [T]; names: [string]; b: bool; l: long; }
 *   union U { T }
 */
enum { T_I, T_S, T_V, T_CHILD, T_U_TYPE, T_U, T_KIDS, T_NAMES, T_B, T_L };
static const qv_fb_table_desc t_desc;
static const qv_fb_table_desc *const u_members[1] = {&t_desc};
static const qv_fb_union_desc u_desc = {"U", 1, u_members};
static const qv_fb_field_desc t_fields[] = {
    {"i", T_I, QV_FB_SCALAR, 4, 0, NULL, NULL},
    {"s", T_S, QV_FB_STRING, 0, 0, NULL, NULL},
    {"v", T_V, QV_FB_VEC_SCALAR, 8, 8, NULL, NULL},
    {"child", T_CHILD, QV_FB_TABLE, 0, 0, &t_desc, NULL},
    {"u_type", T_U_TYPE, QV_FB_UNION_TYPE, 1, 1, NULL, NULL},
    {"u", T_U, QV_FB_UNION, 0, 0, NULL, &u_desc},
    {"kids", T_KIDS, QV_FB_VEC_TABLE, 0, 0, &t_desc, NULL},
    {"names", T_NAMES, QV_FB_VEC_STRING, 0, 0, NULL, NULL},
    {"b", T_B, QV_FB_SCALAR, 1, 0, NULL, NULL},
    {"l", T_L, QV_FB_SCALAR, 8, 0, NULL, NULL},
};
static const qv_fb_table_desc t_desc = {"T", 10, t_fields};

typedef struct built {
  qv_fb_builder b;
  uint8_t *data; /* private copy, safe to corrupt */
  int64_t size;
} built;

static void finish(built *out, qv_fb_ref root) {
  const uint8_t *d = NULL;
  qv_error err;
  out->data = NULL;
  out->size = 0;
  if (qv_fb_builder_finish(&out->b, root, &d, &out->size, &err) != QV_OK) {
    fprintf(stderr, "finish: %s\n", err.message);
    return;
  }
  out->data = malloc((size_t)out->size);
  memcpy(out->data, d, (size_t)out->size);
}

static void built_free(built *x) {
  qv_fb_builder_reset(&x->b);
  free(x->data);
}

/* A leaf T with only i set. */
static qv_fb_ref leaf(qv_fb_builder *b, int32_t i) {
  qv_fb_start_table(b);
  qv_fb_add_i32(b, T_I, i, 0);
  return qv_fb_end_table(b);
}

/* A T using every field. */
static void build_full(built *x) {
  qv_fb_builder *b = &x->b;
  qv_fb_builder_init(b);
  qv_fb_ref s = qv_fb_create_string(b, "hello", 5);
  int64_t longs[3] = {1, -2, INT64_MAX};
  uint8_t le[24];
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 8; k++) le[8 * i + k] = (uint8_t)((uint64_t)longs[i] >> (8 * k));
  qv_fb_ref v = qv_fb_create_vector(b, le, 3, 8, 8);
  qv_fb_ref child = leaf(b, 7);
  qv_fb_ref u = leaf(b, 8);
  qv_fb_ref kids_refs[2] = {leaf(b, 10), leaf(b, 11)};
  qv_fb_ref kids = qv_fb_create_vector_refs(b, kids_refs, 2);
  qv_fb_ref n0 = qv_fb_create_string(b, "a", 1);
  qv_fb_ref n1 = qv_fb_create_string(b, "", 0);
  qv_fb_ref names_refs[2] = {n0, n1};
  qv_fb_ref names = qv_fb_create_vector_refs(b, names_refs, 2);
  qv_fb_start_table(b);
  qv_fb_add_i32(b, T_I, 42, 0);
  qv_fb_add_ref(b, T_S, s);
  qv_fb_add_ref(b, T_V, v);
  qv_fb_add_ref(b, T_CHILD, child);
  qv_fb_add_u8(b, T_U_TYPE, 1, 0);
  qv_fb_add_ref(b, T_U, u);
  qv_fb_add_ref(b, T_KIDS, kids);
  qv_fb_add_ref(b, T_NAMES, names);
  qv_fb_add_bool(b, T_B, true, false);
  qv_fb_add_i64(b, T_L, -5, 0);
  finish(x, qv_fb_end_table(b));
}

static void test_round_trip_all_kinds(void) {
  built x;
  build_full(&x);
  QV_REQUIRE(x.data != NULL);
  qv_error err;
  QV_CHECK_EQ_INT(x.size % 8, 0);
  QV_REQUIRE(qv_fb_verify(x.data, x.size, &t_desc, &err) == QV_OK);
  qv_fb_table t, c;
  QV_REQUIRE(qv_fb_root(x.data, x.size, &t));
  QV_CHECK_EQ_INT(qv_fb_i32(&t, T_I, 0), 42);
  QV_CHECK_EQ_INT(qv_fb_i64(&t, T_L, 0), -5);
  QV_CHECK(qv_fb_bool(&t, T_B, false));
  const char *s;
  int64_t n;
  QV_REQUIRE(qv_fb_string(&t, T_S, &s, &n));
  QV_CHECK_EQ_INT(n, 5);
  QV_CHECK_EQ_STR(s, "hello");
  qv_fb_vec v;
  QV_REQUIRE(qv_fb_vector(&t, T_V, &v));
  QV_CHECK_EQ_INT(v.len, 3);
  QV_CHECK_EQ_INT(qv_fb_read_i64(qv_fb_vec_elem(&v, 1, 8)), -2);
  QV_CHECK(qv_fb_read_i64(qv_fb_vec_elem(&v, 2, 8)) == INT64_MAX);
  QV_CHECK_EQ_INT(v.pos % 8, 0); /* struct/long vectors are 8-aligned */
  QV_REQUIRE(qv_fb_table_field(&t, T_CHILD, &c));
  QV_CHECK_EQ_INT(qv_fb_i32(&c, T_I, 0), 7);
  QV_CHECK(!qv_fb_has(&c, T_S));
  QV_CHECK_EQ_INT(qv_fb_i32(&c, T_L, 99), 99); /* absent: default */
  QV_CHECK_EQ_INT(qv_fb_u8(&t, T_U_TYPE, 0), 1);
  QV_REQUIRE(qv_fb_table_field(&t, T_U, &c));
  QV_CHECK_EQ_INT(qv_fb_i32(&c, T_I, 0), 8);
  QV_REQUIRE(qv_fb_vector(&t, T_KIDS, &v));
  QV_CHECK_EQ_INT(v.len, 2);
  QV_REQUIRE(qv_fb_vec_table(&v, 1, &c));
  QV_CHECK_EQ_INT(qv_fb_i32(&c, T_I, 0), 11);
  QV_CHECK(!qv_fb_vec_table(&v, 2, &c));
  QV_REQUIRE(qv_fb_vector(&t, T_NAMES, &v));
  QV_REQUIRE(qv_fb_vec_string(&v, 0, &s, &n));
  QV_CHECK_EQ_STR(s, "a");
  QV_REQUIRE(qv_fb_vec_string(&v, 1, &s, &n));
  QV_CHECK_EQ_INT(n, 0);
  /* A field beyond the vtable is absent. */
  QV_CHECK_EQ_INT(qv_fb_field_offset(&c, 30), 0);
  built_free(&x);
}

static void test_defaults_not_written(void) {
  built x;
  qv_fb_builder_init(&x.b);
  qv_fb_start_table(&x.b);
  qv_fb_add_i32(&x.b, T_I, 0, 0);        /* equals default: omitted */
  qv_fb_add_bool(&x.b, T_B, true, true); /* equals default: omitted */
  finish(&x, qv_fb_end_table(&x.b));
  QV_REQUIRE(x.data);
  qv_error err;
  QV_REQUIRE(qv_fb_verify(x.data, x.size, &t_desc, &err) == QV_OK);
  qv_fb_table t;
  QV_REQUIRE(qv_fb_root(x.data, x.size, &t));
  QV_CHECK(!qv_fb_has(&t, T_I));
  QV_CHECK_EQ_INT(qv_fb_i32(&t, T_I, 5), 5);
  QV_CHECK_EQ_INT(t.vsize, 4); /* no field entries at all */
  built_free(&x);
}

static void test_builder_misuse(void) {
  qv_fb_builder b;
  qv_fb_builder_init(&b);
  qv_fb_start_table(&b);
  qv_fb_start_table(&b); /* nested construction is an error */
  const uint8_t *d;
  int64_t n;
  qv_error err;
  QV_CHECK_EQ_INT(qv_fb_builder_finish(&b, 0, &d, &n, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "flatbuffer builder: nested table construction");
  qv_fb_builder_reset(&b);
}

static void expect_verify(const uint8_t *data, int64_t size, const char *want) {
  qv_error err;
  memset(&err, 0, sizeof err);
  QV_CHECK_EQ_INT(qv_fb_verify(data, size, &t_desc, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, want);
}

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static void test_corrupt_root_and_vtable(void) {
  built x;
  build_full(&x);
  QV_REQUIRE(x.data);
  qv_fb_table t;
  QV_REQUIRE(qv_fb_root(x.data, x.size, &t));
  char want[512];
  int64_t P = t.pos, S = x.size;

  expect_verify(x.data, 3,
                "flatbuffer: buffer of 3 bytes is too small (need at least 4 "
                "for the root offset)");
  uint8_t *d = malloc((size_t)S);

  /* Root offset out of bounds. */
  memcpy(d, x.data, (size_t)S);
  put_u32(d, (uint32_t)S + 100);
  snprintf(want, sizeof want,
           "flatbuffer: root table offset %" PRId64 " out of bounds [0, %" PRId64 ")", S + 100, S);
  expect_verify(d, S, want);

  /* Root table misaligned. */
  memcpy(d, x.data, (size_t)S);
  put_u32(d, (uint32_t)P + 2);
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": misaligned (must be a multiple of 4)",
           P + 2);
  expect_verify(d, S, want);

  /* vtable before the buffer start. */
  memcpy(d, x.data, (size_t)S);
  put_u32(d + P, (uint32_t)(P + 1000));
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64
           ": vtable offset -1000 out of bounds [0, %" PRId64 ")",
           P, S);
  expect_verify(d, S, want);

  /* vtable past the end. */
  memcpy(d, x.data, (size_t)S);
  put_u32(d + P, (uint32_t)(int32_t)(P - S - 6)); /* vt = S + 6 */
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": vtable offset %" PRId64
           " out of bounds [0, %" PRId64 ")",
           P, S + 6, S);
  expect_verify(d, S, want);

  /* Odd vtable size. */
  memcpy(d, x.data, (size_t)S);
  put_u16(d + t.vtable, 7);
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64
           ": vtable size 7 invalid (must be even and >= 4)",
           P);
  expect_verify(d, S, want);

  /* vtable size reaching past the end. */
  memcpy(d, x.data, (size_t)S);
  put_u16(d + t.vtable, 60000);
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": vtable at offset %" PRId64
           " of size 60000 extends past end of buffer (%" PRId64 " bytes)",
           P, t.vtable, S);
  expect_verify(d, S, want);

  /* Object size too small for the fields the vtable lists. */
  memcpy(d, x.data, (size_t)S);
  put_u16(d + t.vtable + 2, 4);
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64
           ": field 'i' at table offset %u with size 4 "
           "is outside the table object [4, 4)",
           P, qv_fb_field_offset(&t, T_I));
  expect_verify(d, S, want);

  /* Object size below 4. */
  memcpy(d, x.data, (size_t)S);
  put_u16(d + t.vtable + 2, 2);
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": object size 2 invalid (must be >= 4)", P);
  expect_verify(d, S, want);

  /* A field offset that overlaps the soffset. */
  memcpy(d, x.data, (size_t)S);
  put_u16(d + t.vtable + 4 + 2 * T_L, 2);
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64
           ": field 'l' at table offset 2 with size 8 "
           "is outside the table object [4, %u)",
           P, t.tsize);
  expect_verify(d, S, want);

  /* A misaligned int64 field (moved by 4 bytes inside the object). */
  memcpy(d, x.data, (size_t)S);
  uint16_t loff = qv_fb_field_offset(&t, T_L);
  uint16_t ioff = qv_fb_field_offset(&t, T_I);
  put_u16(d + t.vtable + 4 + 2 * T_L, ioff); /* 4-aligned, not 8-aligned */
  if ((P + ioff) % 8 != 0) {
    snprintf(want, sizeof want,
             "flatbuffer: table T at offset %" PRId64 ": field 'l' at offset %" PRId64
             " misaligned (must be a multiple of 8)",
             P, P + ioff);
    expect_verify(d, S, want);
  }
  (void)loff;

  /* Truncation: every prefix fails cleanly, except cutting the trailing
   * alignment padding the builder left after the first object ("hello"
   * string: 4 + 5 + NUL = 10 bytes, padded to 12). */
  qv_error err;
  for (int64_t n = 0; n < S; n++) {
    qv_status want_st = n >= S - 2 ? QV_OK : QV_EINVAL;
    QV_CHECK_EQ_INT(qv_fb_verify(x.data, n, &t_desc, &err), want_st);
  }
  free(d);
  built_free(&x);
}

/* Position of the target of the uoffset field `slot` of t. */
static int64_t target_of(const qv_fb_table *t, int slot) {
  int64_t at = t->pos + qv_fb_field_offset(t, slot);
  return at + qv_fb_read_u32(t->buf + at);
}

static void test_corrupt_offsets_vectors_strings(void) {
  built x;
  build_full(&x);
  QV_REQUIRE(x.data);
  qv_fb_table t;
  QV_REQUIRE(qv_fb_root(x.data, x.size, &t));
  int64_t P = t.pos, S = x.size;
  char want[512];
  uint8_t *d = malloc((size_t)S);

  /* String offset pointing past the end. */
  memcpy(d, x.data, (size_t)S);
  int64_t s_at = P + qv_fb_field_offset(&t, T_S);
  put_u32(d + s_at, (uint32_t)(S - s_at + 4));
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": field 's': offset %" PRId64 " at %" PRId64
           " points to %" PRId64 ", outside buffer [0, %" PRId64 ")",
           P, S - s_at + 4, s_at, S + 4, S);
  expect_verify(d, S, want);

  /* Zero offset. */
  memcpy(d, x.data, (size_t)S);
  put_u32(d + s_at, 0);
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": field 's': offset 0 at %" PRId64
           " points to %" PRId64 ", outside buffer [0, %" PRId64 ")",
           P, s_at, s_at, S);
  expect_verify(d, S, want);

  /* String without its NUL terminator. */
  memcpy(d, x.data, (size_t)S);
  int64_t str = target_of(&t, T_S);
  d[str + 4 + 5] = 'X';
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": field 's': string at offset %" PRId64
           " of length 5 is missing its NUL terminator",
           P, str);
  expect_verify(d, S, want);

  /* String length past the end. */
  memcpy(d, x.data, (size_t)S);
  put_u32(d + str, 0x7FFFFFF0u);
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": field 's': string at offset %" PRId64
           " of length %u (plus NUL) extends past end of buffer (%" PRId64 " bytes)",
           P, str, 0x7FFFFFF0u, S);
  expect_verify(d, S, want);

  /* Vector length whose byte size overflows 32 bits. */
  memcpy(d, x.data, (size_t)S);
  int64_t vec = target_of(&t, T_V);
  put_u32(d + vec, 0xFFFFFFFFu);
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": field 'v': vector at offset %" PRId64
           " of 4294967295 elements x 8 bytes extends past end of buffer (%" PRId64 " bytes)",
           P, vec, S);
  expect_verify(d, S, want);

  /* Vector of tables: an element pointing outside. */
  memcpy(d, x.data, (size_t)S);
  int64_t kids = target_of(&t, T_KIDS);
  put_u32(d + kids + 8, 0x40000000u);
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": field 'kids': offset %u at %" PRId64
           " points to %" PRId64 ", outside buffer [0, %" PRId64 ")",
           P, 0x40000000u, kids + 8, kids + 8 + (int64_t)0x40000000, S);
  expect_verify(d, S, want);

  /* Union value with a corrupt member table (vtable out of bounds). */
  memcpy(d, x.data, (size_t)S);
  int64_t u = target_of(&t, T_U);
  put_u32(d + u, (uint32_t)(u + 4));
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": vtable offset -4 out of bounds [0, %" PRId64
           ")",
           u, S);
  expect_verify(d, S, want);

  /* Unknown union tag: the value is verified as an opaque table. */
  memcpy(d, x.data, (size_t)S);
  d[P + qv_fb_field_offset(&t, T_U_TYPE)] = 9;
  qv_error err;
  QV_CHECK_EQ_INT(qv_fb_verify(d, S, &t_desc, &err), QV_OK);
  put_u32(d + u, (uint32_t)(u + 4));
  snprintf(want, sizeof want,
           "flatbuffer: table (unknown union member) at offset %" PRId64
           ": vtable offset -4 out of bounds [0, %" PRId64 ")",
           u, S);
  expect_verify(d, S, want);

  /* Union tag NONE: the value is ignored even when corrupt. */
  d[P + qv_fb_field_offset(&t, T_U_TYPE)] = 0;
  QV_CHECK_EQ_INT(qv_fb_verify(d, S, &t_desc, &err), QV_OK);

  free(d);
  built_free(&x);
}

static void test_deep_nesting(void) {
  built x;
  qv_fb_builder_init(&x.b);
  qv_fb_ref r = leaf(&x.b, 0);
  for (int i = 0; i < 200; i++) {
    qv_fb_start_table(&x.b);
    qv_fb_add_ref(&x.b, T_CHILD, r);
    r = qv_fb_end_table(&x.b);
  }
  finish(&x, r);
  QV_REQUIRE(x.data);
  /* Walk to the 129th table to learn its offset. */
  qv_fb_table t;
  QV_REQUIRE(qv_fb_root(x.data, x.size, &t));
  for (int i = 1; i < QV_FB_MAX_DEPTH + 1; i++) QV_REQUIRE(qv_fb_table_field(&t, T_CHILD, &t));
  char want[256];
  snprintf(want, sizeof want,
           "flatbuffer: table T at offset %" PRId64 ": nesting depth exceeds 128", t.pos);
  expect_verify(x.data, x.size, want);
  built_free(&x);

  /* 127 levels below the root are fine. */
  qv_fb_builder_init(&x.b);
  r = leaf(&x.b, 0);
  for (int i = 0; i < QV_FB_MAX_DEPTH - 1; i++) {
    qv_fb_start_table(&x.b);
    qv_fb_add_ref(&x.b, T_CHILD, r);
    r = qv_fb_end_table(&x.b);
  }
  finish(&x, r);
  qv_error err;
  QV_CHECK_EQ_INT(qv_fb_verify(x.data, x.size, &t_desc, &err), QV_OK);
  built_free(&x);
}

static void test_shared_subobjects_budget(void) {
  /* kids -> 2000 x the same table, which has 2000 kids -> 4M visits from a
   * ~16 KB buffer: the work budget must stop it. */
  built x;
  qv_fb_builder_init(&x.b);
  enum { N = 2000 };
  static qv_fb_ref refs[N];
  qv_fb_ref l = leaf(&x.b, 1);
  for (int i = 0; i < N; i++) refs[i] = l;
  qv_fb_ref inner_kids = qv_fb_create_vector_refs(&x.b, refs, N);
  qv_fb_start_table(&x.b);
  qv_fb_add_ref(&x.b, T_KIDS, inner_kids);
  qv_fb_ref mid = qv_fb_end_table(&x.b);
  for (int i = 0; i < N; i++) refs[i] = mid;
  qv_fb_ref outer_kids = qv_fb_create_vector_refs(&x.b, refs, N);
  qv_fb_start_table(&x.b);
  qv_fb_add_ref(&x.b, T_KIDS, outer_kids);
  finish(&x, qv_fb_end_table(&x.b));
  QV_REQUIRE(x.data);
  qv_error err;
  QV_CHECK_EQ_INT(qv_fb_verify(x.data, x.size, &t_desc, &err), QV_EINVAL);
  char want[256];
  snprintf(want, sizeof want,
           "tables and vector elements visited (limit for a %" PRId64 "-byte buffer)", x.size);
  QV_CHECK(strstr(err.message, want) != NULL);
  QV_CHECK(strncmp(err.message, "flatbuffer: ", 12) == 0);
  built_free(&x);
}

int main(void) {
  QV_RUN(test_round_trip_all_kinds);
  QV_RUN(test_defaults_not_written);
  QV_RUN(test_builder_misuse);
  QV_RUN(test_corrupt_root_and_vtable);
  QV_RUN(test_corrupt_offsets_vectors_strings);
  QV_RUN(test_deep_nesting);
  QV_RUN(test_shared_subobjects_budget);
  return QV_TEST_END();
}
