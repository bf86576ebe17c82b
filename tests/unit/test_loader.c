/* test_loader.c — unit tests for src/ipc/loader.c (qv_ipc_load_batch):
 * hand-built message bodies and batch descriptions for every type family,
 * zero-copy checks, compression (LZ4/ZSTD, -1 prefix, max_alloc), big-endian
 * conversion of each fixed-width family, V4 union validity slots, variadic
 * view buffers, dictionaries, and corrupt descriptions with exact errors. */
#include <stdio.h>

#include "ipc/ipc_internal.h"
#include "qv_build.h"
#include "qv_test.h"

/* ------------------------------------------------------------------------ */
/* A message body under construction plus its RecordBatch description.     */

typedef struct tbody {
  uint8_t data[16384];
  int64_t size;
  qv_ipc_buffer_spec specs[64];
  int64_t n_specs;
  qv_ipc_node nodes[32];
  int64_t n_nodes;
  int64_t var[8];
  int64_t n_var;
  qv_compression codec;
} tbody;

static void B_node(tbody *b, int64_t length, int64_t nulls) {
  b->nodes[b->n_nodes++] = (qv_ipc_node){length, nulls};
}

/* Append a buffer (compressed when b->codec is set), 8-byte aligned. */
static void B_buf(tbody *b, const void *p, int64_t n) {
  qv_buffer *c = NULL;
  if (b->codec != QV_COMPRESSION_NONE && n > 0) {
    qv_ipc_compress(b->codec, 0, p, n, &c, NULL);
    p = c->data;
    n = c->size;
  }
  b->specs[b->n_specs++] = (qv_ipc_buffer_spec){b->size, n};
  if (n) memcpy(b->data + b->size, p, (size_t)n);
  b->size += (n + 7) & ~(int64_t)7;
  qv_buffer_unref(c);
}

static void B_empty(tbody *b) { B_buf(b, "", 0); }

static qv_ipc_batch_desc B_desc(tbody *b, int64_t length) {
  qv_ipc_batch_desc d;
  memset(&d, 0, sizeof d);
  d.length = length;
  d.n_nodes = b->n_nodes;
  d.nodes = b->nodes;
  d.n_buffers = b->n_specs;
  d.buffers = b->specs;
  d.compression = b->codec;
  d.n_variadic = b->n_var;
  d.variadic_counts = b->n_var ? b->var : NULL;
  return d;
}

static qv_array *g_dicts[4];
static qv_array *find_dict(void *ctx, int64_t id) {
  (void)ctx;
  return id >= 0 && id < 4 ? g_dicts[id] : NULL;
}

static qv_ipc_load_ctx g_ctx;
static qv_error err;

static void reset_ctx(void) {
  memset(&g_ctx, 0, sizeof g_ctx);
  g_ctx.validation = QV_VALIDATE_DEFAULT;
  g_ctx.metadata_version = QV_METADATA_V5;
  g_ctx.message_index = 3;
  g_ctx.dicts.find = find_dict;
}

/* Load `b` as a batch of `schema` (borrowed). The body is copied into a
 * heap buffer kept alive by the arrays. */
static qv_status load(const qv_type *schema, tbody *b, int64_t length, qv_array **out) {
  qv_buffer *body = tb_buf(b->data, b->size);
  g_ctx.body = body;
  qv_ipc_batch_desc d = B_desc(b, length);
  err.message[0] = '\0';
  qv_status st = qv_ipc_load_batch(schema, &d, &g_ctx, out, &err);
  g_ctx.body = NULL;
  qv_buffer_unref(body);
  return st;
}

static const char *load_err(const qv_type *schema, tbody *b, int64_t length) {
  qv_array *out = NULL;
  if (load(schema, b, length, &out) == QV_OK) {
    qv_array_unref(out);
    return "(loaded)";
  }
  return err.message;
}

static qv_type *schema1(const char *name, qv_type *t) {
  return tb_child(tb_type(QV_STRUCT), name, t);
}

#define I32(a, i) (((const int32_t *)(a)->buffers[1]->data)[i])
#define I64(a, i) (((const int64_t *)(a)->buffers[1]->data)[i])

/* ------------------------------------------------------------------------ */

static void test_primitives(void) {
  reset_ctx();
  tbody *b = calloc(1, sizeof *b);
  qv_type *s = tb_type(QV_STRUCT);
  tb_child(s, "i", tb_type(QV_INT32));
  tb_child(s, "flag", tb_type(QV_BOOL));
  tb_child(s, "str", tb_type(QV_STRING));
  tb_child(s, "big", tb_type(QV_LARGE_BINARY));
  tb_child(s, "nothing", tb_type(QV_NA));
  qv_type *fsb = tb_type(QV_FIXED_SIZE_BINARY);
  fsb->byte_width = 3;
  tb_child(s, "fsb", fsb);
  tb_child(s, "dec", tb_type(QV_DECIMAL128));

  int32_t iv[3] = {10, 0, 30};
  uint8_t ivalid = 0x05;
  B_node(b, 3, 1);
  B_buf(b, &ivalid, 1);
  B_buf(b, iv, 12);
  uint8_t bits = 0x06;
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, &bits, 1);
  int32_t so[4] = {0, 2, 2, 5};
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, so, 16);
  B_buf(b, "hiabc", 5);
  int64_t lo[4] = {0, 1, 2, 3};
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, lo, 32);
  B_buf(b, "xyz", 3);
  B_node(b, 3, 3); /* null: no buffers */
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, "abcdefghi", 9);
  uint8_t dec[48] = {0};
  dec[0] = 1;
  dec[16] = 2;
  dec[32] = 3;
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, dec, 48);

  qv_array *out = NULL;
  qv_buffer *body = tb_buf(b->data, b->size);
  g_ctx.body = body;
  qv_ipc_batch_desc d = B_desc(b, 3);
  QV_REQUIRE(qv_ipc_load_batch(s, &d, &g_ctx, &out, &err) == QV_OK);
  QV_CHECK_EQ_INT(out->length, 3);
  QV_CHECK_EQ_INT(out->n_children, 7);
  qv_array *i = out->children[0];
  QV_CHECK_EQ_INT(i->null_count, 1);
  QV_CHECK(i->buffers[1]->data == body->data + b->specs[1].offset); /* zero copy */
  QV_CHECK_EQ_INT(I32(i, 2), 30);
  QV_CHECK(!qv_array_is_valid(i, 1));
  QV_CHECK(out->children[1]->buffers[0] == NULL); /* no nulls: no validity */
  QV_CHECK(qv_bit_get(out->children[1]->buffers[1]->data, 2));
  QV_CHECK(memcmp(out->children[2]->buffers[2]->data + 2, "abc", 3) == 0);
  QV_CHECK_EQ_INT(I64(out->children[3], 3), 3);
  QV_CHECK_EQ_INT(out->children[4]->n_buffers, 0);
  QV_CHECK_EQ_INT(out->children[4]->null_count, 3);
  QV_CHECK(memcmp(out->children[5]->buffers[1]->data + 6, "ghi", 3) == 0);
  QV_CHECK_EQ_INT(out->children[6]->buffers[1]->data[32], 3);
  QV_CHECK_EQ_INT(qv_array_validate(out->children[2], QV_VALIDATE_FULL, "x", &err), QV_OK);
  qv_array_unref(out);
  /* The arrays kept the body alive; dropping it last is fine too. */
  qv_buffer_unref(body);
  qv_type_unref(s);
  free(b);
}

static void test_nested(void) {
  reset_ctx();
  tbody *b = calloc(1, sizeof *b);
  /* st: struct<x: int32, l: list<int16>>, m: map<int32, int32>,
   * f: fixed_size_list<int8>[2], v: list_view<int32> */
  qv_type *st = tb_type(QV_STRUCT);
  tb_child(st, "x", tb_type(QV_INT32));
  tb_child(st, "l", qv_type_list_of(QV_LIST, tb_type(QV_INT16)));
  qv_type *entries = tb_type(QV_STRUCT);
  tb_child(entries, "key", tb_type(QV_INT32));
  tb_child(entries, "value", tb_type(QV_INT32));
  qv_type *map = tb_child(tb_type(QV_MAP), "entries", entries);
  qv_type *fsl = qv_type_list_of(QV_FIXED_SIZE_LIST, tb_type(QV_INT8));
  fsl->list_size = 2;
  qv_type *lv = qv_type_list_of(QV_LIST_VIEW, tb_type(QV_INT32));
  qv_type *s = tb_type(QV_STRUCT);
  tb_child(s, "st", st);
  tb_child(s, "m", map);
  tb_child(s, "f", fsl);
  tb_child(s, "v", lv);

  int32_t x[2] = {1, 2};
  int32_t loff[3] = {0, 1, 3};
  int16_t items[3] = {5, 6, 7};
  B_node(b, 2, 0);
  B_empty(b); /* st */
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, x, 8); /* st.x */
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, loff, 12); /* st.l */
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, items, 6); /* st.l.item */
  int32_t moff[3] = {0, 2, 3};
  int32_t keys[3] = {1, 2, 3}, vals[3] = {4, 5, 6};
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, moff, 12); /* m */
  B_node(b, 3, 0);
  B_empty(b); /* m.entries */
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, keys, 12); /* key */
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, vals, 12); /* value */
  int8_t fv[4] = {1, 2, 3, 4};
  B_node(b, 2, 0);
  B_empty(b); /* f */
  B_node(b, 4, 0);
  B_empty(b);
  B_buf(b, fv, 4); /* f.item */
  int32_t vo[2] = {1, 0}, vs[2] = {2, 1}, vv[3] = {9, 8, 7};
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, vo, 8);
  B_buf(b, vs, 8); /* v */
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, vv, 12); /* v.item */

  qv_array *out = NULL;
  QV_REQUIRE(load(s, b, 2, &out) == QV_OK);
  qv_array *l = out->children[0]->children[1];
  QV_CHECK_EQ_INT(l->children[0]->length, 3);
  QV_CHECK_EQ_INT(((int16_t *)l->children[0]->buffers[1]->data)[2], 7);
  QV_CHECK_EQ_INT(I32(out->children[1]->children[0]->children[1], 2), 6);
  QV_CHECK_EQ_INT(out->children[2]->children[0]->length, 4);
  QV_CHECK_EQ_INT(((int32_t *)out->children[3]->buffers[2]->data)[0], 2);
  qv_array_unref(out);

  /* The fixed-size list child is too short for 2 lists of 2. */
  b->nodes[9].length = 3;
  QV_CHECK_EQ_STR(load_err(s, b, 2),
                  "message 3: field 'f': child 'item' has length 3 but 2 lists of size 2 need 4");
  b->nodes[9].length = 4;
  /* A struct child shorter than the struct. */
  b->nodes[1].length = 1;
  QV_CHECK_EQ_STR(load_err(s, b, 2),
                  "message 3: field 'st': child 'x' has length 1, less than the struct's 2");
  b->nodes[1].length = 2;
  /* A list offset past the child, found by validation with the path. */
  loff[2] = 4;
  memcpy(b->data + b->specs[4].offset, loff, 12);
  QV_CHECK_EQ_STR(load_err(s, b, 2),
                  "message 3: field 'st.l': last offset 4 exceeds child length 3");
  qv_type_unref(s);
  free(b);
}

static void test_unions(void) {
  reset_ctx();
  tbody *b = calloc(1, sizeof *b);
  qv_type *u = tb_type(QV_DENSE_UNION);
  tb_child(u, "i", tb_type(QV_INT32));
  tb_child(u, "s", tb_type(QV_STRING));
  qv_type *s = schema1("u", u);
  int8_t ids[3] = {0, 1, 0};
  int32_t offs[3] = {0, 0, 1};
  int32_t iv[2] = {7, 8};
  int32_t so[2] = {0, 2};
  B_node(b, 3, 0);
  B_buf(b, ids, 3);
  B_buf(b, offs, 12);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, iv, 8);
  B_node(b, 1, 0);
  B_empty(b);
  B_buf(b, so, 8);
  B_buf(b, "ok", 2);
  qv_array *out = NULL;
  QV_REQUIRE(load(s, b, 3, &out) == QV_OK);
  qv_array *a = out->children[0];
  QV_CHECK_EQ_INT(a->n_buffers, 2);
  QV_CHECK_EQ_INT(a->buffers[0]->data[1], 1);
  QV_CHECK_EQ_INT(I32(a, 2), 1);
  QV_CHECK_EQ_INT(a->null_count, 0);
  qv_array_unref(out);
  /* Under V4 metadata the same buffers are one short: the first is taken as
   * the validity slot. */
  g_ctx.metadata_version = QV_METADATA_V4;
  QV_CHECK_EQ_STR(
      load_err(s, b, 3),
      "message 3: field 'u.s': buffer 2 (data) is missing: the record batch has only 7 buffers");
  free(b);

  /* V4: an empty validity slot first, skipped. */
  b = calloc(1, sizeof *b);
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, ids, 3);
  B_buf(b, offs, 12);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, iv, 8);
  B_node(b, 1, 0);
  B_empty(b);
  B_buf(b, so, 8);
  B_buf(b, "ok", 2);
  QV_REQUIRE(load(s, b, 3, &out) == QV_OK);
  QV_CHECK_EQ_INT(out->children[0]->buffers[0]->data[1], 1);
  qv_array_unref(out);
  /* V4 with a real top-level validity bitmap: not representable in V5. */
  uint8_t valid = 0x05;
  b->n_specs = 0;
  b->size = 0;
  b->nodes[0].null_count = 1;
  B_buf(b, &valid, 1);
  B_buf(b, ids, 3);
  B_buf(b, offs, 12);
  B_empty(b);
  B_buf(b, iv, 8);
  B_empty(b);
  B_buf(b, so, 8);
  B_buf(b, "ok", 2);
  QV_CHECK_EQ_STR(
      load_err(s, b, 3),
      "message 3: field 'u': cannot read a pre-1.0 union with a top-level validity bitmap");
  qv_type_unref(s);
  free(b);

  /* Sparse, V5: type ids only; a bad type id caught by validation. */
  reset_ctx();
  b = calloc(1, sizeof *b);
  u = tb_type(QV_SPARSE_UNION);
  tb_child(u, "a", tb_type(QV_INT8));
  s = schema1("u", u);
  int8_t sids[2] = {0, 0};
  int8_t av[2] = {1, 2};
  B_node(b, 2, 0);
  B_buf(b, sids, 2);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, av, 2);
  QV_REQUIRE(load(s, b, 2, &out) == QV_OK);
  QV_CHECK_EQ_INT(out->children[0]->n_buffers, 1);
  qv_array_unref(out);
  b->data[1] = 3;
  QV_CHECK_EQ_STR(
      load_err(s, b, 2),
      "message 3: field 'u': type id 3 at index 1 is not one of the union's type codes");
  qv_type_unref(s);
  free(b);
}

static void test_views(void) {
  reset_ctx();
  tbody *b = calloc(1, sizeof *b);
  qv_type *s = tb_type(QV_STRUCT);
  tb_child(s, "a", tb_type(QV_STRING_VIEW));
  tb_child(s, "b", tb_type(QV_BINARY_VIEW));
  uint8_t v[2][16];
  tb_view(v[0], "tiny", 4, 0, 0);
  tb_view(v[1], "a much longer value", 19, 1, 3);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, v, 32);
  B_buf(b, "unused", 6);
  B_buf(b, "...a much longer value", 22);
  uint8_t w[2][16];
  tb_view(w[0], "", 0, 0, 0);
  tb_view(w[1], "bytes", 5, 0, 0);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, w, 32);
  b->var[0] = 2;
  b->var[1] = 0;
  b->n_var = 2;
  qv_array *out = NULL;
  QV_REQUIRE(load(s, b, 2, &out) == QV_OK);
  QV_CHECK_EQ_INT(out->children[0]->n_buffers, 4);
  QV_CHECK(memcmp(out->children[0]->buffers[3]->data + 3, "a much", 6) == 0);
  QV_CHECK_EQ_INT(out->children[1]->n_buffers, 2);
  qv_array_unref(out);
  b->n_var = 1;
  QV_CHECK_EQ_STR(
      load_err(s, b, 2),
      "message 3: field 'b': record batch has 1 variadic buffer counts but the schema needs more");
  b->n_var = 3;
  b->var[2] = 0;
  QV_CHECK_EQ_STR(
      load_err(s, b, 2),
      "message 3: record batch has 3 variadic buffer counts but the schema has 2 view fields");
  b->n_var = 2;
  b->var[0] = 9;
  QV_CHECK_EQ_STR(
      load_err(s, b, 2),
      "message 3: field 'a': variadic buffer count 9 is negative or exceeds the 6 buffers left");
  b->var[0] = 1; /* view 1 now refers to a missing data buffer 1 */
  b->var[1] = 1;
  QV_CHECK_EQ_STR(
      load_err(s, b, 2),
      "message 3: field 'a': view at index 1 refers to data buffer 1 but the array has 1");
  qv_type_unref(s);
  free(b);
}

static void test_dictionary(void) {
  reset_ctx();
  tbody *b = calloc(1, sizeof *b);
  qv_type *dt = tb_type(QV_DICTIONARY);
  dt->index_type = tb_type(QV_INT16);
  dt->value_type = tb_type(QV_INT32);
  dt->dict_id = 2;
  qv_type *s = schema1("d", dt);
  int16_t idx[3] = {2, 0, 1};
  B_node(b, 3, 0);
  B_empty(b);
  B_buf(b, idx, 6);
  QV_CHECK_EQ_STR(load_err(s, b, 3), "message 3: field 'd': no dictionary with id 2");
  int32_t dv[3] = {100, 200, 300};
  g_dicts[2] = tb_int32(dv, 3);
  qv_array *out = NULL;
  QV_REQUIRE(load(s, b, 3, &out) == QV_OK);
  QV_CHECK(out->children[0]->dictionary == g_dicts[2]);
  QV_CHECK_EQ_INT(((int16_t *)out->children[0]->buffers[1]->data)[0], 2);
  qv_array_unref(out);
  g_dicts[2]->length = 2; /* index 2 now out of range */
  QV_CHECK_EQ_STR(load_err(s, b, 3),
                  "message 3: field 'd': dictionary index 2 at index 0 is out of range [0, 2)");
  /* ... but dictionary values themselves are not revalidated per batch:
   * a dictionary too short for its claimed length is the dictionary
   * batch's problem. */
  g_dicts[2]->length = 4;
  QV_REQUIRE(load(s, b, 3, &out) == QV_OK);
  qv_array_unref(out);
  qv_array_unref(g_dicts[2]);
  g_dicts[2] = NULL;
  qv_type_unref(s);
  free(b);
}

static void test_run_end_encoded(void) {
  reset_ctx();
  tbody *b = calloc(1, sizeof *b);
  qv_type *r = tb_type(QV_RUN_END_ENCODED);
  tb_child(r, "run_ends", tb_type(QV_INT32));
  tb_child(r, "values", tb_type(QV_STRING));
  qv_type *s = schema1("r", r);
  int32_t ends[2] = {3, 5};
  int32_t so[3] = {0, 1, 2};
  B_node(b, 5, 0);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, ends, 8);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, so, 12);
  B_buf(b, "ab", 2);
  qv_array *out = NULL;
  QV_REQUIRE(load(s, b, 5, &out) == QV_OK);
  QV_CHECK_EQ_INT(out->children[0]->n_buffers, 0);
  QV_CHECK_EQ_INT(I32(out->children[0]->children[0], 1), 5);
  qv_array_unref(out);
  QV_CHECK_EQ_STR(load_err(s, b, 6) /* column 5 != batch 6 */,
                  "message 3: field 'r': length 5 differs from the record batch length 6");
  b->nodes[0].length = 6;
  QV_CHECK_EQ_STR(load_err(s, b, 6),
                  "message 3: field 'r': last run end 5 is less than offset + length 6");
  qv_type_unref(s);
  free(b);
}

static void test_corrupt_descriptions(void) {
  reset_ctx();
  tbody *b = calloc(1, sizeof *b);
  qv_type *st = tb_type(QV_STRUCT);
  tb_child(st, "a", tb_type(QV_INT32));
  tb_child(st, "b", tb_type(QV_STRING));
  qv_type *s = schema1("s", st);
  int32_t av[2] = {1, 2};
  int32_t so[3] = {0, 1, 2};
  B_node(b, 2, 0);
  B_empty(b);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, av, 8);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, so, 12);
  B_buf(b, "xy", 2);
  qv_array *out = NULL;
  QV_REQUIRE(load(s, b, 2, &out) == QV_OK);
  qv_array_unref(out);

  /* The data buffer points past the body. */
  qv_ipc_buffer_spec keep = b->specs[5];
  b->specs[5] = (qv_ipc_buffer_spec){64, 1000};
  QV_CHECK_EQ_STR(load_err(s, b, 2),
                  "message 3: field 's.b': buffer 2 (data) requires body range [64, 1064) "
                  "but body has 32 bytes");
  b->specs[5] = (qv_ipc_buffer_spec){-8, 2};
  QV_CHECK_EQ_STR(load_err(s, b, 2),
                  "message 3: field 's.b': buffer 2 (data) has negative offset -8 or length 2");
  b->specs[5] = (qv_ipc_buffer_spec){INT64_MAX, 2};
  QV_CHECK_EQ_STR(load_err(s, b, 2),
                  "message 3: field 's.b': buffer 2 (data): offset 9223372036854775807 + "
                  "length 2 overflows");
  b->specs[5] = keep;

  /* Too few / too many nodes and buffers. */
  b->n_nodes = 2;
  QV_CHECK_EQ_STR(
      load_err(s, b, 2),
      "message 3: field 's.b': record batch has 2 field nodes but the schema needs more");
  b->n_nodes = 4;
  b->nodes[3] = (qv_ipc_node){2, 0};
  QV_CHECK_EQ_STR(load_err(s, b, 2),
                  "message 3: record batch has 4 field nodes but the schema uses 3");
  b->n_nodes = 3;
  b->n_specs = 5;
  QV_CHECK_EQ_STR(
      load_err(s, b, 2),
      "message 3: field 's.b': buffer 2 (data) is missing: the record batch has only 5 buffers");
  b->n_specs = 7;
  b->specs[6] = (qv_ipc_buffer_spec){0, 0};
  QV_CHECK_EQ_STR(load_err(s, b, 2), "message 3: record batch has 7 buffers but the schema uses 6");
  b->n_specs = 6;

  /* Node counts out of range. */
  b->nodes[1].null_count = 3;
  QV_CHECK_EQ_STR(load_err(s, b, 2), "message 3: field 's.a': null_count 3 outside [0, length 2]");
  b->nodes[1].null_count = 1; /* claims a null but the validity slot is empty */
  QV_CHECK_EQ_STR(load_err(s, b, 2), "message 3: field 's.a': null_count 1 but no validity buffer");
  b->nodes[1].null_count = 0;
  b->nodes[1].length = -1;
  QV_CHECK_EQ_STR(load_err(s, b, 2), "message 3: field 's.a': negative length -1");
  b->nodes[1].length = 2;

  /* Minimal validation runs even when the caller asked for none. */
  g_ctx.validation = QV_VALIDATE_NONE;
  b->specs[2].length = 4;
  QV_CHECK_EQ_STR(load_err(s, b, 2),
                  "message 3: field 's.a': buffer 1 (values) has 4 bytes but 8 are required "
                  "(length 2, offset 0)");
  b->specs[2].length = 8;
  /* Non-monotonic offsets: only from DEFAULT. */
  int32_t bad_off[3] = {0, 2, 1};
  memcpy(b->data + b->specs[4].offset, bad_off, 12);
  QV_CHECK_EQ_INT(load(s, b, 2, &out), QV_OK);
  qv_array_unref(out);
  g_ctx.validation = QV_VALIDATE_DEFAULT;
  QV_CHECK_EQ_STR(load_err(s, b, 2),
                  "message 3: field 's.b': offsets not monotonic at index 1 (2 > 1)");
  QV_CHECK_EQ_STR(load_err(s, b, -1), "message 3: negative record batch length -1");
  qv_type_unref(s);
  free(b);
}

static void test_compression(void) {
  const qv_compression codecs[2] = {QV_COMPRESSION_LZ4_FRAME, QV_COMPRESSION_ZSTD};
  for (int c = 0; c < 2; c++) {
    reset_ctx();
    tbody *b = calloc(1, sizeof *b);
    b->codec = codecs[c];
    qv_type *s = tb_type(QV_STRUCT);
    tb_child(s, "a", tb_type(QV_INT64));
    tb_child(s, "b", tb_type(QV_STRING));
    int64_t av[100];
    for (int i = 0; i < 100; i++) av[i] = i * i;
    uint8_t valid[13];
    memset(valid, 0xFF, sizeof valid);
    valid[0] = 0xFE; /* slot 0 null */
    B_node(b, 100, 1);
    B_buf(b, valid, 13);
    B_buf(b, av, 800);
    /* b: offsets compressed; data stored with the -1 prefix */
    int32_t so[101];
    for (int i = 0; i <= 100; i++) so[i] = i / 10;
    B_node(b, 100, 0);
    B_empty(b);
    B_buf(b, so, 404);
    uint8_t raw[8 + 10];
    int64_t m1 = -1;
    memcpy(raw, &m1, 8);
    memcpy(raw + 8, "0123456789", 10);
    b->codec = QV_COMPRESSION_NONE; /* append as-is */
    B_buf(b, raw, 18);
    b->codec = codecs[c];
    qv_array *out = NULL;
    QV_REQUIRE(load(s, b, 100, &out) == QV_OK);
    QV_CHECK_EQ_INT(I64(out->children[0], 99), 99 * 99);
    QV_CHECK_EQ_INT(out->children[0]->buffers[1]->size, 800);
    QV_CHECK(!qv_array_is_valid(out->children[0], 0));
    QV_CHECK_EQ_INT(I32(out->children[1], 100), 10);
    QV_CHECK(memcmp(out->children[1]->buffers[2]->data, "0123456789", 10) == 0);
    qv_array_unref(out);
    /* max_alloc bounds each buffer. */
    g_ctx.max_alloc = 500;
    char expect[300];
    snprintf(expect, sizeof expect,
             "message 3: field 'a': buffer 1 (values): %s: uncompressed length 800 "
             "exceeds the limit of 500 bytes (max_alloc)",
             c == 0 ? "LZ4_FRAME" : "ZSTD");
    QV_CHECK_EQ_STR(load_err(s, b, 100), expect);
    qv_type_unref(s);
    free(b);
  }
}

/* Big-endian bodies: every multi-byte family is converted into owned,
 * little-endian memory. */
static void be16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}
static void be32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static void be64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static void test_big_endian(void) {
  reset_ctx();
  g_ctx.big_endian = true;
  tbody *b = calloc(1, sizeof *b);
  qv_type *s = tb_type(QV_STRUCT);
  tb_child(s, "i16", tb_type(QV_INT16));
  tb_child(s, "i32", tb_type(QV_INT32));
  tb_child(s, "f64", tb_type(QV_DOUBLE));
  tb_child(s, "ts", qv_type_timestamp(QV_MICRO, "UTC"));
  tb_child(s, "dt", tb_type(QV_INTERVAL_DAY_TIME));
  tb_child(s, "mdn", tb_type(QV_INTERVAL_MONTH_DAY_NANO));
  tb_child(s, "d128", tb_type(QV_DECIMAL128));
  tb_child(s, "d256", tb_type(QV_DECIMAL256));
  tb_child(s, "str", tb_type(QV_STRING));
  tb_child(s, "ll", qv_type_list_of(QV_LARGE_LIST, tb_type(QV_INT8)));
  qv_type *dt = tb_type(QV_DICTIONARY);
  dt->index_type = tb_type(QV_UINT16);
  dt->value_type = tb_type(QV_INT32);
  dt->dict_id = 1;
  tb_child(s, "dict", dt);
  qv_type *u = tb_type(QV_DENSE_UNION);
  tb_child(u, "x", tb_type(QV_INT8));
  tb_child(s, "u", u);
  tb_child(s, "sv", tb_type(QV_STRING_VIEW));
  qv_type *r = tb_type(QV_RUN_END_ENCODED);
  tb_child(r, "run_ends", tb_type(QV_INT64));
  tb_child(r, "values", tb_type(QV_FLOAT));
  tb_child(s, "ree", r);
  tb_child(s, "lv", qv_type_list_of(QV_LIST_VIEW, tb_type(QV_INT8)));
  int32_t dv[3] = {0, 0, 0};
  g_dicts[1] = tb_int32(dv, 3);

  uint8_t buf[128];
  /* i16: 0x0102, -2 */
  be16(buf, 0x0102);
  be16(buf + 2, 0xFFFE);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 4);
  be32(buf, 0x01020304);
  be32(buf + 4, (uint32_t)-5);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 8);
  double d = 1.5;
  uint64_t dbits;
  memcpy(&dbits, &d, 8);
  be64(buf, dbits);
  be64(buf + 8, 0);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 16);
  be64(buf, 1700000000000000ull);
  be64(buf + 8, (uint64_t)-1);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 16);
  /* day_time: (days 3, ms 4), (days -1, ms 9) */
  be32(buf, 3);
  be32(buf + 4, 4);
  be32(buf + 8, (uint32_t)-1);
  be32(buf + 12, 9);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 16);
  /* month_day_nano: (1, 2, 3), (-1, 5, 1<<40) */
  be32(buf, 1);
  be32(buf + 4, 2);
  be64(buf + 8, 3);
  be32(buf + 16, (uint32_t)-1);
  be32(buf + 20, 5);
  be64(buf + 24, 1ull << 40);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 32);
  /* decimal128: 2^64 + 2 and -2, as big-endian 128-bit integers */
  be64(buf, 1);
  be64(buf + 8, 2);
  be64(buf + 16, UINT64_MAX);
  be64(buf + 24, (uint64_t)-2);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 32);
  /* decimal256: bytes 0..31 then 31..0 reversed */
  for (int i = 0; i < 32; i++) {
    buf[i] = (uint8_t)i;
    buf[32 + i] = 0;
  }
  buf[63] = 7; /* value 7 */
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 64);
  /* string offsets */
  be32(buf, 0);
  be32(buf + 4, 1);
  be32(buf + 8, 3);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 12);
  B_buf(b, "abc", 3);
  /* large list offsets */
  be64(buf, 0);
  be64(buf + 8, 2);
  be64(buf + 16, 2);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 24);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, "\x01\x02", 2);
  /* dictionary indices uint16 */
  be16(buf, 2);
  be16(buf + 2, 1);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 4);
  /* dense union: ids bytes, offsets int32 */
  B_node(b, 2, 0);
  B_buf(b, "\0\0", 2);
  be32(buf, 1);
  be32(buf + 4, 0);
  B_buf(b, buf, 8);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, "\x05\x06", 2);
  /* string view: one inline, one out of line in buffer 0 at offset 2 */
  memset(buf, 0, 32);
  be32(buf, 3);
  memcpy(buf + 4, "abc", 3);
  be32(buf + 16, 14);
  memcpy(buf + 20, "xxxx", 4);
  be32(buf + 24, 0);
  be32(buf + 28, 2);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 32);
  B_buf(b, "..xxxxxxxxxxxxxx", 16);
  b->var[0] = 1;
  b->n_var = 1;
  /* REE: run ends int64 [1, 2], values float */
  B_node(b, 2, 0);
  be64(buf, 1);
  be64(buf + 8, 2);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 16);
  float f = -0.25f;
  uint32_t fbits;
  memcpy(&fbits, &f, 4);
  be32(buf, fbits);
  be32(buf + 4, fbits);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 8);
  /* list view offsets/sizes */
  be32(buf, 1);
  be32(buf + 4, 0);
  be32(buf + 8, 1);
  be32(buf + 12, 2);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, buf, 8);
  B_buf(b, buf + 8, 8);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, "\x09\x08", 2);

  qv_array *out = NULL;
  qv_buffer *body = tb_buf(b->data, b->size);
  g_ctx.body = body;
  qv_ipc_batch_desc desc = B_desc(b, 2);
  qv_status st = qv_ipc_load_batch(s, &desc, &g_ctx, &out, &err);
  if (st != QV_OK) fprintf(stderr, "%s\n", err.message);
  QV_REQUIRE(st == QV_OK);
  qv_array **c = out->children;
  const int16_t *i16 = (const int16_t *)c[0]->buffers[1]->data;
  QV_CHECK_EQ_INT(i16[0], 0x0102);
  QV_CHECK_EQ_INT(i16[1], -2);
  QV_CHECK(c[0]->buffers[1]->data < body->data ||
           c[0]->buffers[1]->data >= body->data + body->size); /* owned copy */
  QV_CHECK_EQ_INT(I32(c[1], 0), 0x01020304);
  QV_CHECK_EQ_INT(I32(c[1], 1), -5);
  QV_CHECK(((const double *)c[2]->buffers[1]->data)[0] == 1.5);
  QV_CHECK_EQ_INT(I64(c[3], 0), 1700000000000000ll);
  QV_CHECK_EQ_INT(I64(c[3], 1), -1);
  const int32_t *dtv = (const int32_t *)c[4]->buffers[1]->data;
  QV_CHECK(dtv[0] == 3 && dtv[1] == 4 && dtv[2] == -1 && dtv[3] == 9);
  const uint8_t *mdn = c[5]->buffers[1]->data;
  int32_t m0, d0;
  int64_t n0, n1;
  memcpy(&m0, mdn + 16, 4);
  memcpy(&d0, mdn + 20, 4);
  memcpy(&n1, mdn + 24, 8);
  memcpy(&n0, mdn + 8, 8);
  QV_CHECK(m0 == -1 && d0 == 5 && n1 == (int64_t)1 << 40 && n0 == 3);
  const uint64_t *d128 = (const uint64_t *)c[6]->buffers[1]->data;
  QV_CHECK(d128[0] == 2 && d128[1] == 1);                     /* low word first */
  QV_CHECK(d128[2] == (uint64_t)-2 && d128[3] == UINT64_MAX); /* -2 */
  const uint8_t *d256 = c[7]->buffers[1]->data;
  int rev = 1;
  for (int i = 0; i < 32; i++) rev &= d256[i] == 31 - i;
  QV_CHECK(rev);
  QV_CHECK(d256[32] == 7 && d256[63] == 0);
  QV_CHECK_EQ_INT(I32(c[8], 2), 3);
  QV_CHECK(c[8]->buffers[2]->data == body->data + b->specs[18].offset); /* data: zero copy */
  QV_CHECK_EQ_INT(I64(c[9], 1), 2);
  QV_CHECK_EQ_INT(((const uint16_t *)c[10]->buffers[1]->data)[0], 2);
  QV_CHECK_EQ_INT(I32(c[11], 0), 1);
  const int32_t *views = (const int32_t *)c[12]->buffers[1]->data;
  QV_CHECK(views[0] == 3 && memcmp(views + 1, "abc", 3) == 0);
  QV_CHECK(views[4] == 14 && memcmp(views + 5, "xxxx", 4) == 0 && views[6] == 0 && views[7] == 2);
  QV_CHECK_EQ_INT(I64(c[13]->children[0], 1), 2);
  QV_CHECK(((const float *)c[13]->children[1]->buffers[1]->data)[1] == -0.25f);
  QV_CHECK(((const int32_t *)c[14]->buffers[2]->data)[1] == 2);
  QV_CHECK_EQ_INT(qv_array_validate(c[12], QV_VALIDATE_FULL, "sv", &err), QV_OK);
  qv_array_unref(out);
  qv_buffer_unref(body);

  /* Big-endian and compressed: swapped in place in the decompressed copy. */
  tbody *z = calloc(1, sizeof *z);
  z->codec = QV_COMPRESSION_ZSTD;
  qv_type *s2 = schema1("i32", tb_type(QV_INT32));
  be32(buf, 0x0A0B0C0D);
  be32(buf + 4, 7);
  B_node(z, 2, 0);
  B_empty(z);
  B_buf(z, buf, 8);
  QV_REQUIRE(load(s2, z, 2, &out) == QV_OK);
  QV_CHECK_EQ_INT(I32(out->children[0], 0), 0x0A0B0C0D);
  QV_CHECK_EQ_INT(I32(out->children[0], 1), 7);
  qv_array_unref(out);
  qv_type_unref(s2);
  qv_array_unref(g_dicts[1]);
  g_dicts[1] = NULL;
  qv_type_unref(s);
  free(z);
  free(b);
}

/* A body that is not 8-byte aligned in memory: multi-byte buffers are
 * copied to aligned memory; byte buffers stay views. */
static void test_misaligned_body(void) {
  reset_ctx();
  tbody *b = calloc(1, sizeof *b);
  qv_type *s = tb_type(QV_STRUCT);
  tb_child(s, "a", tb_type(QV_INT64));
  tb_child(s, "b", tb_type(QV_BINARY));
  int64_t av[2] = {-3, 4};
  int32_t so[3] = {0, 1, 2};
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, av, 16);
  B_node(b, 2, 0);
  B_empty(b);
  B_buf(b, so, 12);
  B_buf(b, "pq", 2);
  uint8_t *shifted = calloc(1, (size_t)b->size + 4);
  memcpy(shifted + 4, b->data, (size_t)b->size);
  qv_buffer *parent = tb_buf(shifted, b->size + 4), *body = NULL;
  QV_REQUIRE(qv_buffer_view(parent, 4, b->size, &body, &err) == QV_OK);
  g_ctx.body = body;
  qv_ipc_batch_desc d = B_desc(b, 2);
  qv_array *out = NULL;
  QV_REQUIRE(qv_ipc_load_batch(s, &d, &g_ctx, &out, &err) == QV_OK);
  QV_CHECK_EQ_INT(I64(out->children[0], 0), -3);
  QV_CHECK(((uintptr_t)out->children[0]->buffers[1]->data & 7) == 0);
  QV_CHECK(out->children[1]->buffers[2]->data == body->data + b->specs[4].offset);
  qv_array_unref(out);
  qv_buffer_unref(body);
  qv_buffer_unref(parent);
  free(shifted);
  qv_type_unref(s);
  free(b);
}

int main(void) {
  QV_RUN(test_primitives);
  QV_RUN(test_nested);
  QV_RUN(test_unions);
  QV_RUN(test_views);
  QV_RUN(test_dictionary);
  QV_RUN(test_run_end_encoded);
  QV_RUN(test_corrupt_descriptions);
  QV_RUN(test_compression);
  QV_RUN(test_big_endian);
  QV_RUN(test_misaligned_body);
  return QV_TEST_END();
}
