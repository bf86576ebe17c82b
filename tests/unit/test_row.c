/*
 * test_row.c — the row table (src/row/): the seed's two worked examples
 * byte for byte, metadata rules, type errors, buffer growth (memory test),
 * random encode -> decode round trips with nulls, offsets and selections,
 * equal keys <=> equal rows, equal keys => equal hashes, rows vs columns
 * hashing, compare outputs, scalar vs AVX2 producing identical results, and
 * the encoded bytes (padding included) against the layout computed here.
 */
#include <stdio.h>

#include "qv_test.h"
#include "row_test_util.h"

/* ------------------------------------------------------------------------ */
/* Small builders                                                            */

static qv_array *i32_array(const int32_t *v, int64_t n) {
  mcol c;
  mcol_init(&c, qv_type_new(QV_INT32), n);
  memcpy(c.fixed, v, (size_t)n * 4);
  qv_array *a = mcol_array(&c, 0, 0);
  mcol_free(&c);
  return a;
}

static qv_array *bool_array(const int *v, int64_t n) {
  mcol c;
  mcol_init(&c, qv_type_new(QV_BOOL), n);
  for (int64_t i = 0; i < n; i++) c.fixed[i] = (uint8_t)v[i];
  qv_array *a = mcol_array(&c, 0, 0);
  mcol_free(&c);
  return a;
}

static qv_array *str_array(const char *const *v, int64_t n) {
  mcol c;
  mcol_init(&c, qv_type_new(QV_STRING), n);
  for (int64_t i = 0; i < n; i++) mcol_set_str(&c, i, v[i], (int64_t)strlen(v[i]));
  qv_array *a = mcol_array(&c, 0, 0);
  mcol_free(&c);
  return a;
}

static int encode_with(qv_row_table *t, qv_array **cols, int nc, int ra, int sa, const int64_t *sel,
                       int64_t n) {
  qv_type *types[16];
  for (int i = 0; i < nc; i++) types[i] = cols[i]->type;
  qv_row_metadata md;
  qv_error err;
  if (qv_row_metadata_from_types(&md, types, nc, ra, sa, &err) != QV_OK) {
    fprintf(stderr, "metadata: %s\n", err.message);
    return 1;
  }
  qv_status st = qv_row_table_init(t, &md, &err);
  qv_row_metadata_reset(&md);
  if (st == QV_OK) st = qv_row_encode(t, cols, sel, n, &err);
  if (st != QV_OK) fprintf(stderr, "encode: %s\n", err.message);
  return st != QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Seed examples                                                             */

/* (int32, boolean) rows [7,false], [8,true], [9,false]. The seed shows each
 * row as "7 0 0 0, 0 (padding)"; the padding width is not given there, we
 * use the 8-byte row alignment Arrow's grouper uses. */
static void test_seed_example_fixed(void) {
  int32_t a[] = {7, 8, 9};
  int b[] = {0, 1, 0};
  qv_array *cols[2] = {i32_array(a, 3), bool_array(b, 3)};
  qv_row_table t;
  QV_REQUIRE(encode_with(&t, cols, 2, 8, 8, NULL, 3) == 0);
  QV_CHECK(t.md.is_fixed_length);
  QV_CHECK_EQ_INT(t.md.fixed_length, 8);
  QV_CHECK_EQ_INT(t.md.column_order[0], 0);
  QV_CHECK_EQ_INT(t.md.column_order[1], 1);
  QV_CHECK_EQ_INT(t.md.column_offsets[0], 0);
  QV_CHECK_EQ_INT(t.md.column_offsets[1], 4);
  QV_CHECK_EQ_INT(t.md.null_masks_bytes_per_row, 1);
  QV_CHECK(t.var == NULL);
  const uint8_t want[] = {7, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0};
  QV_CHECK(memcmp(t.fixed, want, sizeof want) == 0);
  for (int i = 0; i < 3; i++) QV_CHECK_EQ_INT(t.null_masks[i], 0);
  qv_row_table_reset(&t);

  /* Row alignment 1: no padding at all (5-byte rows). */
  QV_REQUIRE(encode_with(&t, cols, 2, 1, 1, NULL, 3) == 0);
  QV_CHECK_EQ_INT(t.md.fixed_length, 5);
  const uint8_t want1[] = {7, 0, 0, 0, 0, 8, 0, 0, 0, 1, 9, 0, 0, 0, 0};
  QV_CHECK(memcmp(t.fixed, want1, sizeof want1) == 0);
  qv_row_table_reset(&t);

  char *json = NULL;
  qv_error err;
  QV_REQUIRE(qv_row_layout_json(cols, 2, 8, 8, 0, 3, &json, &err) == QV_OK);
  QV_CHECK_EQ_STR(json,
                  "{\"row_alignment\":8,\"string_alignment\":8,"
                  "\"null_masks_bytes_per_row\":1,\"is_fixed_length\":true,"
                  "\"fixed_length\":8,\"varbinary_end_array_offset\":0,"
                  "\"column_order\":[0,1],\"column_offsets\":[0,4],"
                  "\"row_offsets\":null,\"rows\":[\"0700000000000000\","
                  "\"0800000001000000\",\"0900000000000000\"],"
                  "\"null_masks\":[\"00\",\"00\",\"00\"]}");
  free(json);
  qv_array_unref(cols[0]);
  qv_array_unref(cols[1]);
}

/* (int32, string, string, int32) rows [7,"Alice","x",0], [8,"Bob","y",1],
 * [9,"Charlotte","z",2] at 8-byte alignment. */
static void test_seed_example_var(void) {
  int32_t a[] = {7, 8, 9}, d[] = {0, 1, 2};
  const char *b[] = {"Alice", "Bob", "Charlotte"}, *c[] = {"x", "y", "z"};
  qv_array *cols[4] = {i32_array(a, 3), str_array(b, 3), str_array(c, 3), i32_array(d, 3)};
  qv_row_table t;
  QV_REQUIRE(encode_with(&t, cols, 4, 8, 8, NULL, 3) == 0);
  QV_CHECK(!t.md.is_fixed_length);
  QV_CHECK_EQ_INT(t.md.fixed_length, 16);
  QV_CHECK_EQ_INT(t.md.varbinary_end_array_offset, 8);
  int32_t order[] = {0, 3, 1, 2}, offs[] = {0, 4, 8, 12};
  for (int i = 0; i < 4; i++) {
    QV_CHECK_EQ_INT(t.md.column_order[i], order[i]);
    QV_CHECK_EQ_INT(t.md.column_offsets[i], offs[i]);
    QV_CHECK_EQ_INT(t.md.inverse_column_order[order[i]], i);
  }
  const int64_t *ro = qv_row_table_offsets(&t);
  QV_CHECK_EQ_INT(ro[0], 0);
  QV_CHECK_EQ_INT(ro[1], 32);
  QV_CHECK_EQ_INT(ro[2], 64);
  QV_CHECK_EQ_INT(ro[3], 104);
  /* The seed's table, '~' being zero padding. */
  const uint8_t row0[32] = {7,   0,   0,   0,   0,   0, 0, 0, 21,  0, 0, 0, 25, 0, 0, 0,
                            'A', 'l', 'i', 'c', 'e', 0, 0, 0, 'x', 0, 0, 0, 0,  0, 0, 0};
  const uint8_t row1[32] = {8,   0,   0,   0, 1, 0, 0, 0, 19,  0, 0, 0, 25, 0, 0, 0,
                            'B', 'o', 'b', 0, 0, 0, 0, 0, 'y', 0, 0, 0, 0,  0, 0, 0};
  const uint8_t row2[40] = {9, 0, 0,   0,   2,   0,   0,   0,   25,  0,   0,   0, 33, 0,
                            0, 0, 'C', 'h', 'a', 'r', 'l', 'o', 't', 't', 'e', 0, 0,  0,
                            0, 0, 0,   0,   'z', 0,   0,   0,   0,   0,   0,   0};
  QV_CHECK(memcmp(t.var, row0, 32) == 0);
  QV_CHECK(memcmp(t.var + 32, row1, 32) == 0);
  QV_CHECK(memcmp(t.var + 64, row2, 40) == 0);

  /* Decode back. */
  qv_type *types[4];
  for (int i = 0; i < 4; i++) types[i] = cols[i]->type;
  qv_array *out[4];
  qv_error err;
  QV_REQUIRE(qv_row_decode(&t, 0, 3, types, NULL, out, &err) == QV_OK);
  QV_CHECK(memcmp(out[1]->buffers[2]->data, "AliceBobCharlotte", 17) == 0);
  int32_t o[4];
  memcpy(o, out[1]->buffers[1]->data, 16);
  QV_CHECK(o[0] == 0 && o[1] == 5 && o[2] == 8 && o[3] == 17);
  QV_CHECK(memcmp(out[3]->buffers[1]->data, d, 12) == 0);
  QV_CHECK(out[0]->buffers[0] == NULL && out[0]->null_count == 0);
  for (int i = 0; i < 4; i++) qv_array_unref(out[i]);
  qv_row_table_reset(&t);

  char *json = NULL;
  QV_REQUIRE(qv_row_layout_json(cols, 4, 8, 8, 0, 3, &json, &err) == QV_OK);
  QV_CHECK_EQ_STR(json,
                  "{\"row_alignment\":8,\"string_alignment\":8,"
                  "\"null_masks_bytes_per_row\":1,\"is_fixed_length\":false,"
                  "\"fixed_length\":16,\"varbinary_end_array_offset\":8,"
                  "\"column_order\":[0,3,1,2],\"column_offsets\":[0,4,8,12],"
                  "\"row_offsets\":[0,32,64,104],\"rows\":["
                  "\"07000000000000001500000019000000416c69636500000078000000"
                  "00000000\","
                  "\"08000000010000001300000019000000426f62000000000079000000"
                  "00000000\","
                  "\"09000000020000001900000021000000436861726c6f7474650000000"
                  "00000007a00000000000000\"],"
                  "\"null_masks\":[\"00\",\"00\",\"00\"]}");
  free(json);
  /* A sub-range. */
  QV_REQUIRE(qv_row_layout_json(cols, 4, 8, 8, 1, 2, &json, &err) == QV_OK);
  QV_CHECK(strstr(json, "\"row_offsets\":[0,32]") != NULL);
  free(json);
  QV_CHECK_EQ_INT(qv_row_layout_json(cols, 4, 8, 8, 2, 4, &json, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message, "row layout: rows 2:4 are outside [0, 3]");
  QV_CHECK_EQ_INT(qv_row_layout_json(cols, 4, 8, 16, 0, 3, &json, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "string alignment 16 is not a power of two <= row alignment 8");
  for (int i = 0; i < 4; i++) qv_array_unref(cols[i]);
}

/* ------------------------------------------------------------------------ */
/* Metadata rules                                                            */

static qv_type *fsb(int w) {
  qv_type *t = qv_type_new(QV_FIXED_SIZE_BINARY);
  t->byte_width = w;
  return t;
}

static void test_metadata_rules(void) {
  qv_error err;
  qv_row_column_meta m;
  /* Type mapping. */
  qv_type *t = qv_type_new(QV_DICTIONARY);
  t->index_type = qv_type_new(QV_UINT16);
  t->value_type = qv_type_new(QV_STRING);
  QV_CHECK(qv_row_column_meta_from_type(t, &m, &err) == QV_OK);
  QV_CHECK(m.is_fixed_length && m.fixed_length == 2 && !m.is_null_type);
  qv_type_unref(t);
  t = qv_type_new(QV_BOOL);
  QV_CHECK(qv_row_column_meta_from_type(t, &m, &err) == QV_OK);
  QV_CHECK(m.is_fixed_length && m.fixed_length == 0 && !m.is_null_type);
  qv_type_unref(t);
  t = qv_type_new(QV_DECIMAL128);
  QV_CHECK(qv_row_column_meta_from_type(t, &m, &err) == QV_OK);
  QV_CHECK(m.is_fixed_length && m.fixed_length == 16);
  qv_type_unref(t);
  t = qv_type_new(QV_LARGE_STRING);
  QV_CHECK(qv_row_column_meta_from_type(t, &m, &err) == QV_OK);
  QV_CHECK(!m.is_fixed_length && m.offset_width == 8);
  qv_type_unref(t);
  t = qv_type_new(QV_BINARY);
  QV_CHECK(qv_row_column_meta_from_type(t, &m, &err) == QV_OK);
  QV_CHECK(!m.is_fixed_length && m.offset_width == 4);
  qv_type_unref(t);
  t = qv_type_new(QV_NA);
  QV_CHECK(qv_row_column_meta_from_type(t, &m, &err) == QV_OK);
  QV_CHECK(m.is_fixed_length && m.is_null_type && m.fixed_length == 0);
  qv_type_unref(t);
  t = qv_type_list_of(QV_LIST, qv_type_new(QV_INT32));
  QV_CHECK_EQ_INT(qv_row_column_meta_from_type(t, &m, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message, "type list<item: int32> is nested; row keys must be non-nested");
  qv_type *types[2] = {qv_type_new(QV_INT64), t};
  qv_row_metadata md;
  QV_CHECK_EQ_INT(qv_row_metadata_from_types(&md, types, 2, 8, 8, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message,
                  "row key column 1: type list<item: int32> is nested; row keys must be "
                  "non-nested");
  qv_type_unref(t);
  qv_type_unref(types[0]);
  t = qv_type_new(QV_STRING_VIEW);
  QV_CHECK_EQ_INT(qv_row_column_meta_from_type(t, &m, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message,
                  "type string_view cannot be a row key (not fixed-width, "
                  "binary-like or dictionary)");
  qv_type_unref(t);

  /* Ordering: bool counts as 1 byte (ties with int8 by index); powers of two
   * and multiples of the row alignment first by width descending; fixed
   * before var at width 4; others (fsb(3), fsb(12)) last in input order. */
  qv_row_column_meta cols[9] = {
      {true, false, 0, 0},  /* 0 bool */
      {true, false, 3, 0},  /* 1 fsb(3) */
      {false, false, 0, 4}, /* 2 string */
      {true, false, 1, 0},  /* 3 int8 */
      {true, false, 4, 0},  /* 4 int32 */
      {true, false, 24, 0}, /* 5 fsb(24): multiple of 8 */
      {true, false, 12, 0}, /* 6 fsb(12) */
      {true, false, 8, 0},  /* 7 int64 */
      {true, true, 0, 0},   /* 8 null */
  };
  QV_REQUIRE(qv_row_metadata_init(&md, cols, 9, 8, 4, &err) == QV_OK);
  int32_t order[9] = {5, 7, 4, 2, 0, 3, 8, 1, 6};
  /* offsets: fsb24 0, int64 24, int32 32, string end slot 36, bool 40,
   * int8 41, null 42, fsb3 at 44 (pad to 4), fsb12 at 48 */
  int32_t offs[9] = {0, 24, 32, 36, 40, 41, 42, 44, 48};
  for (int i = 0; i < 9; i++) {
    QV_CHECK_EQ_INT(md.column_order[i], order[i]);
    QV_CHECK_EQ_INT(md.column_offsets[i], offs[i]);
    QV_CHECK_EQ_INT(md.inverse_column_order[order[i]], i);
  }
  QV_CHECK(!md.is_fixed_length);
  QV_CHECK_EQ_INT(md.varbinary_end_array_offset, 36);
  QV_CHECK_EQ_INT(md.fixed_length, 60); /* 60 is a multiple of 4 */
  QV_CHECK_EQ_INT(md.null_masks_bytes_per_row, 2);
  qv_row_metadata_reset(&md);

  /* null_masks_bytes_per_row: smallest power of two with 8 * bytes >= cols. */
  qv_row_column_meta many[40];
  for (int i = 0; i < 40; i++) many[i] = (qv_row_column_meta){true, false, 4, 0};
  int counts[] = {1, 8, 9, 16, 17, 33}, want[] = {1, 1, 2, 2, 4, 8};
  for (int k = 0; k < 6; k++) {
    QV_REQUIRE(qv_row_metadata_init(&md, many, counts[k], 4, 4, &err) == QV_OK);
    QV_CHECK_EQ_INT(md.null_masks_bytes_per_row, want[k]);
    QV_CHECK(md.is_fixed_length);
    QV_CHECK_EQ_INT(md.fixed_length, 4 * counts[k]);
    qv_row_metadata_reset(&md);
  }
  /* Padding helper and alignment errors. */
  QV_CHECK_EQ_INT(qv_row_padding(13, 8), 3);
  QV_CHECK_EQ_INT(qv_row_padding(16, 8), 0);
  QV_CHECK_EQ_INT(qv_row_padding(0, 1), 0);
  QV_CHECK_EQ_INT(qv_row_metadata_init(&md, many, 1, 3, 1, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "row alignment 3 is not a power of two in [1, 64]");
  QV_CHECK_EQ_INT(qv_row_metadata_init(&md, many, 0, 8, 8, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "row metadata: 0 key columns (expected 1 to 65536)");
  /* fixed-length table with a fsb(3) column, row alignment 8. */
  qv_row_column_meta c2[2] = {{true, false, 3, 0}, {true, false, 2, 0}};
  QV_REQUIRE(qv_row_metadata_init(&md, c2, 2, 8, 2, &err) == QV_OK);
  QV_CHECK_EQ_INT(md.column_order[0], 1);
  QV_CHECK_EQ_INT(md.column_offsets[1], 2);
  QV_CHECK_EQ_INT(md.fixed_length, 8);
  qv_row_metadata_reset(&md);
}

/* ------------------------------------------------------------------------ */
/* Random schemas                                                            */

#define NTYPES 17
static qv_type *type_by_index(int k) {
  switch (k) {
    case 0: return qv_type_new(QV_INT8);
    case 1: return qv_type_new(QV_UINT16);
    case 2: return qv_type_new(QV_INT32);
    case 3: return qv_type_new(QV_INT64);
    case 4: return qv_type_new(QV_DOUBLE);
    case 5: return qv_type_new(QV_BOOL);
    case 6: return fsb(3);
    case 7: return fsb(16);
    case 8: return qv_type_new(QV_DECIMAL128);
    case 9: return qv_type_new(QV_STRING);
    case 10: return qv_type_new(QV_LARGE_BINARY);
    case 11: return qv_type_new(QV_BINARY);
    case 12: {
      qv_type *t = qv_type_new(QV_DICTIONARY);
      t->index_type = qv_type_new(QV_INT16);
      t->value_type = qv_type_new(QV_STRING);
      return t;
    }
    case 13: return qv_type_new(QV_NA);
    case 14: return fsb(24);
    case 15: return qv_type_new(QV_UINT64);
    default: return qv_type_new(QV_FLOAT);
  }
}

/* Fill a model column with values from a domain of `domain` distinct values
 * per column and null probability pnull (percent). */
static void fill_random(mcol *c, int domain, int pnull) {
  for (int64_t i = 0; i < c->n; i++) {
    if (c->kind == 3) continue;
    c->null[i] = rnd_below(100) < pnull;
    int64_t v = rnd_below(domain);
    if (c->kind == 1) {
      c->fixed[i] = (uint8_t)(v & 1);
    } else if (c->kind == 0) {
      for (int b = 0; b < c->w; b++)
        c->fixed[i * c->w + b] = (uint8_t)(b == 0 ? v : (v * 31 + b) & 0xff);
      if (c->type->id == QV_DICTIONARY) {
        int16_t idx = (int16_t)v;
        memcpy(c->fixed + i * c->w, &idx, 2);
      }
    } else if (c->kind == 2) {
      char buf[64];
      int len = (int)(v % 23);
      for (int b = 0; b < len; b++) buf[b] = (char)('a' + (v + b) % 26);
      mcol_set_str(c, i, buf, len);
    }
  }
}

typedef struct schema {
  int nc;
  mcol cols[8];
  qv_array *arrays[8];
  qv_type *types[8];
  qv_array *dicts[8];
  int ra, sa;
} schema;

static void schema_make(schema *s, int64_t n, int domain, int pnull) {
  memset(s, 0, sizeof *s);
  s->nc = 1 + (int)rnd_below(6);
  int ras[] = {1, 2, 4, 8, 16};
  s->ra = ras[rnd_below(5)];
  s->sa = 1;
  while (s->sa * 2 <= s->ra && rnd_below(2)) s->sa *= 2;
  for (int k = 0; k < s->nc; k++) {
    mcol *c = &s->cols[k];
    mcol_init(c, type_by_index((int)rnd_below(NTYPES)), n);
    if (c->type->id == QV_DICTIONARY) {
      mcol d;
      mcol_init(&d, qv_type_new(QV_STRING), domain);
      for (int64_t i = 0; i < domain; i++) mcol_set_str(&d, i, "v", 1);
      c->dict = mcol_array(&d, 0, 0);
      mcol_free(&d);
    }
    fill_random(c, domain, pnull);
    s->arrays[k] = mcol_array(c, rnd_below(3) == 0 ? 0 : rnd_below(13), (int)rnd_below(3));
    s->types[k] = c->type;
    s->dicts[k] = c->dict;
  }
}

static void schema_free(schema *s) {
  for (int k = 0; k < s->nc; k++) {
    qv_array_unref(s->arrays[k]);
    mcol_free(&s->cols[k]);
  }
}

static void test_roundtrip_random(void) {
  for (int iter = 0; iter < 300; iter++) {
    int64_t n = 1 + rnd_below(iter < 250 ? 200 : 5000);
    schema s;
    schema_make(&s, n, 1 + (int)rnd_below(1000), (int)rnd_below(3) * 20);
    int64_t nsel = rnd_below(2) ? n : 1 + rnd_below(2 * n);
    int64_t *sel = NULL;
    if (nsel != n || rnd_below(2)) {
      sel = malloc(sizeof(int64_t) * (size_t)nsel);
      for (int64_t i = 0; i < nsel; i++) sel[i] = rnd_below(n);
    }
    qv_row_metadata md;
    qv_error err;
    QV_REQUIRE(qv_row_metadata_from_types(&md, s.types, s.nc, s.ra, s.sa, &err) == QV_OK);
    qv_row_table t;
    QV_REQUIRE(qv_row_table_init(&t, &md, &err) == QV_OK);
    /* Encode in up to three appends. */
    int64_t done = 0;
    while (done < nsel) {
      int64_t part = 1 + rnd_below(nsel - done);
      if (!sel) part = nsel; /* without a selection, rows start at 0 */
      qv_status st = qv_row_encode_append(&t, s.arrays, sel ? sel + done : NULL, part, &err);
      if (st != QV_OK) fprintf(stderr, "%s\n", err.message);
      QV_REQUIRE(st == QV_OK);
      done += part;
    }
    QV_CHECK_EQ_INT(t.num_rows, nsel);
    /* Decode a random sub-range and check against the model. */
    int64_t start = rnd_below(nsel), len = rnd_below(nsel - start + 1);
    qv_array *out[8];
    QV_REQUIRE(qv_row_decode(&t, start, len, s.types, s.dicts, out, &err) == QV_OK);
    for (int k = 0; k < s.nc; k++) {
      int64_t *ids = malloc(sizeof(int64_t) * (size_t)(len + 1));
      for (int64_t i = 0; i < len; i++) ids[i] = sel ? sel[start + i] : start + i;
      int64_t bad = mcol_check(&s.cols[k], ids, len, out[k]);
      free(ids);
      if (bad != -1)
        fprintf(stderr, "iter %d col %d (%s) mismatch at %lld\n", iter, k,
                qv_type_id_name(s.types[k]->id), (long long)bad);
      QV_CHECK(bad == -1);
      if (s.types[k]->id == QV_DICTIONARY) QV_CHECK(out[k]->dictionary == s.dicts[k]);
      qv_array_unref(out[k]);
    }
    /* Padding is canonical: encoding the same keys again gives the same
     * bytes, and append_selection_from copies exactly. */
    qv_row_table t2;
    QV_REQUIRE(qv_row_table_init(&t2, &md, &err) == QV_OK);
    QV_REQUIRE(qv_row_table_append_selection_from(&t2, &t, NULL, t.num_rows, &err) == QV_OK);
    uint8_t *match = calloc((size_t)(nsel + 7) / 8 + 1, 1);
    int64_t nm = -1;
    QV_REQUIRE(qv_row_compare_rows(&t, NULL, &t2, NULL, nsel, true, match, NULL, &nm, &err) ==
               QV_OK);
    QV_CHECK_EQ_INT(qv_bitmap_count(match, 0, nsel), nsel);
    free(match);
    qv_row_table_reset(&t2);
    qv_row_table_reset(&t);
    qv_row_metadata_reset(&md);
    free(sel);
    schema_free(&s);
  }
}

/* Equal keys <=> equal rows (bytes, compare_rows, compare_columns), equal
 * keys => equal hashes, hashes from rows == hashes from columns. */
static void test_equal_keys(void) {
  for (int iter = 0; iter < 120; iter++) {
    int64_t n = 50 + rnd_below(400);
    schema s;
    schema_make(&s, n, 1 + (int)rnd_below(4), (int)rnd_below(3) * 15);
    qv_row_table t;
    QV_REQUIRE(encode_with(&t, s.arrays, s.nc, s.ra, s.sa, NULL, n) == 0);
    qv_error err;
    uint64_t *hr = malloc(sizeof(uint64_t) * (size_t)n);
    uint64_t *hc = malloc(sizeof(uint64_t) * (size_t)n);
    uint32_t *hr32 = malloc(sizeof(uint32_t) * (size_t)n);
    uint32_t *hc32 = malloc(sizeof(uint32_t) * (size_t)n);
    QV_REQUIRE(qv_row_hash_rows64(&t, NULL, n, hr, &err) == QV_OK);
    QV_REQUIRE(qv_row_hash_columns64(&t.md, s.arrays, NULL, n, hc, &err) == QV_OK);
    QV_REQUIRE(qv_row_hash_rows32(&t, NULL, n, hr32, &err) == QV_OK);
    QV_REQUIRE(qv_row_hash_columns32(&t.md, s.arrays, NULL, n, hc32, &err) == QV_OK);
    QV_CHECK(memcmp(hr, hc, sizeof(uint64_t) * (size_t)n) == 0);
    QV_CHECK(memcmp(hr32, hc32, sizeof(uint32_t) * (size_t)n) == 0);

    int64_t npairs = 2000;
    int64_t *li = malloc(sizeof(int64_t) * (size_t)npairs);
    int64_t *ri = malloc(sizeof(int64_t) * (size_t)npairs);
    for (int64_t p = 0; p < npairs; p++) {
      li[p] = rnd_below(n);
      ri[p] = rnd_below(4) == 0 ? li[p] : rnd_below(n);
    }
    uint8_t *m_rows = calloc((size_t)npairs / 8 + 1, 1);
    uint8_t *m_cols = calloc((size_t)npairs / 8 + 1, 1);
    uint8_t *m_rows_sql = calloc((size_t)npairs / 8 + 1, 1);
    uint8_t *m_cols_sql = calloc((size_t)npairs / 8 + 1, 1);
    int64_t *mism = malloc(sizeof(int64_t) * (size_t)npairs);
    int64_t nmism = 0;
    QV_REQUIRE(qv_row_compare_rows(&t, li, &t, ri, npairs, true, m_rows, NULL, NULL, &err) ==
               QV_OK);
    QV_REQUIRE(qv_row_compare_columns(&t, s.arrays, li, ri, npairs, true, m_cols, mism, &nmism,
                                      &err) == QV_OK);
    QV_REQUIRE(qv_row_compare_rows(&t, li, &t, ri, npairs, false, m_rows_sql, NULL, NULL, &err) ==
               QV_OK);
    QV_REQUIRE(qv_row_compare_columns(&t, s.arrays, li, ri, npairs, false, m_cols_sql, NULL, NULL,
                                      &err) == QV_OK);
    int64_t expect_mism = 0, bad = 0;
    for (int64_t p = 0; p < npairs; p++) {
      bool eq = mcols_key_equal(s.cols, s.nc, li[p], ri[p]);
      bool anynull =
          mcols_key_has_null(s.cols, s.nc, li[p]) || mcols_key_has_null(s.cols, s.nc, ri[p]);
      int64_t la, lb;
      const uint8_t *pa = qv_row_table_row(&t, li[p], &la);
      const uint8_t *pb = qv_row_table_row(&t, ri[p], &lb);
      bool bytes_eq = la == lb && memcmp(pa, pb, (size_t)la) == 0 &&
                      memcmp(qv_row_table_null_mask(&t, li[p]), qv_row_table_null_mask(&t, ri[p]),
                             (size_t)t.md.null_masks_bytes_per_row) == 0;
      if (bytes_eq != eq) bad++;
      if (qv_bit_get(m_rows, p) != eq) bad++;
      if (qv_bit_get(m_cols, p) != eq) bad++;
      if (qv_bit_get(m_rows_sql, p) != (eq && !anynull)) bad++;
      if (qv_bit_get(m_cols_sql, p) != (eq && !anynull)) bad++;
      if (eq && (hr[li[p]] != hr[ri[p]] || hr32[li[p]] != hr32[ri[p]])) bad++;
      if (!eq) {
        if (expect_mism < nmism && mism[expect_mism] != li[p]) bad++;
        expect_mism++;
      }
    }
    if (bad) fprintf(stderr, "iter %d: %lld disagreements\n", iter, (long long)bad);
    QV_CHECK_EQ_INT(bad, 0);
    QV_CHECK_EQ_INT(nmism, expect_mism);
    free(li);
    free(ri);
    free(m_rows);
    free(m_cols);
    free(m_rows_sql);
    free(m_cols_sql);
    free(mism);
    free(hr);
    free(hc);
    free(hr32);
    free(hc32);
    qv_row_table_reset(&t);
    schema_free(&s);
  }
}

/* Hashes of distinct keys rarely collide (a sanity check of the mixer). */
static void test_hash_spread(void) {
  int64_t n = 100000;
  int64_t *v = malloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) v[i] = i;
  mcol c;
  mcol_init(&c, qv_type_new(QV_INT64), n);
  memcpy(c.fixed, v, (size_t)n * 8);
  qv_array *a = mcol_array(&c, 0, 0);
  qv_row_table t;
  QV_REQUIRE(encode_with(&t, &a, 1, 8, 8, NULL, n) == 0);
  uint32_t *h = malloc(sizeof(uint32_t) * (size_t)n);
  qv_error err;
  QV_REQUIRE(qv_row_hash_rows32(&t, NULL, n, h, &err) == QV_OK);
  /* Bucket into 1024 bins by the top bits: each should hold ~98. */
  int bins[1024] = {0};
  for (int64_t i = 0; i < n; i++) bins[h[i] >> 22]++;
  int mn = 1 << 30, mx = 0;
  for (int i = 0; i < 1024; i++) {
    if (bins[i] < mn) mn = bins[i];
    if (bins[i] > mx) mx = bins[i];
  }
  QV_CHECK(mn > 50 && mx < 150);
  free(h);
  free(v);
  qv_row_table_reset(&t);
  qv_array_unref(a);
  mcol_free(&c);
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */

static void test_memory(void) {
  qv_type_id ids[] = {
      QV_INT8,  QV_UINT16, QV_INT32, QV_UINT64, QV_FIXED_SIZE_BINARY, QV_FIXED_SIZE_BINARY,
      QV_STRING};
  int widths[] = {1, 2, 4, 8, 16, 32, 0};
  int64_t sizes[] = {1, 7, 1023, 1024, 1025, 4095, 4096, 4097};
  for (int k = 0; k < 7; k++) {
    for (int si = 0; si < 8; si++) {
      for (int chunked = 0; chunked < 2; chunked++) {
        int64_t n = sizes[si];
        qv_type *ty = ids[k] == QV_FIXED_SIZE_BINARY ? fsb(widths[k]) : qv_type_new(ids[k]);
        mcol c;
        mcol_init(&c, ty, n);
        for (int64_t i = 0; i < n; i++) {
          if (c.kind == 2) mcol_set_str(&c, i, "X", 1);
        }
        qv_array *a = mcol_array(&c, 0, 0);
        qv_row_metadata md;
        qv_error err;
        int ra = widths[k] ? (widths[k] > 8 ? 8 : widths[k]) : 4;
        QV_REQUIRE(qv_row_metadata_from_types(&md, &ty, 1, ra, ra, &err) == QV_OK);
        qv_row_table t;
        QV_REQUIRE(qv_row_table_init(&t, &md, &err) == QV_OK);
        int64_t *sel = malloc(sizeof(int64_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++) sel[i] = i;
        int64_t step = chunked ? 100 : n;
        for (int64_t d = 0; d < n; d += step) {
          int64_t m = n - d < step ? n - d : step;
          QV_REQUIRE(qv_row_encode_append(&t, &a, sel + d, m, &err) == QV_OK);
        }
        int64_t need0 = n * md.null_masks_bytes_per_row;
        int64_t need1 = md.is_fixed_length ? n * md.fixed_length : (n + 1) * 8;
        int64_t s0 = qv_row_table_buffer_size(&t, 0), s1 = qv_row_table_buffer_size(&t, 1);
        QV_CHECK(s0 >= need0 + 64 && s0 <= 2 * need0 + 64);
        QV_CHECK(s1 >= need1 + 64 && s1 <= 2 * need1 + 64);
        if (!md.is_fixed_length) {
          int64_t need2 = qv_row_table_offsets(&t)[n];
          int64_t s2 = qv_row_table_buffer_size(&t, 2);
          QV_CHECK_EQ_INT(need2, n * qv_row_table_offsets(&t)[1]);
          QV_CHECK(s2 >= need2 + 64 && s2 <= 2 * need2 + 64);
        } else {
          QV_CHECK_EQ_INT(qv_row_table_buffer_size(&t, 2), 0);
        }
        /* Clean keeps capacity; re-encoding fits without growth. */
        int64_t cap = qv_row_table_buffer_size(&t, 1);
        qv_row_table_clean(&t);
        QV_CHECK_EQ_INT(t.num_rows, 0);
        QV_REQUIRE(qv_row_encode(&t, &a, NULL, n, &err) == QV_OK);
        QV_CHECK_EQ_INT(qv_row_table_buffer_size(&t, 1), cap);
        free(sel);
        qv_row_table_reset(&t);
        qv_row_metadata_reset(&md);
        qv_array_unref(a);
        mcol_free(&c);
      }
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Table operations and errors                                               */

static void test_table_ops(void) {
  int32_t a[] = {1, 2, 3, 4};
  const char *b[] = {"a", "bb", "ccc", ""};
  qv_array *cols[2] = {i32_array(a, 4), str_array(b, 4)};
  qv_row_table t, u;
  QV_REQUIRE(encode_with(&t, cols, 2, 4, 4, NULL, 4) == 0);
  qv_error err;
  QV_REQUIRE(qv_row_table_init(&u, &t.md, &err) == QV_OK);
  QV_REQUIRE(qv_row_table_append_empty(&u, 2, 100, &err) == QV_OK);
  QV_CHECK_EQ_INT(u.num_rows, 2);
  QV_CHECK_EQ_INT(qv_row_table_offsets(&u)[2], 0);
  QV_CHECK(qv_row_table_buffer_size(&u, 2) >= 164);
  int64_t ids[] = {3, 1, 1};
  QV_REQUIRE(qv_row_table_append_selection_from(&u, &t, ids, 3, &err) == QV_OK);
  QV_CHECK_EQ_INT(u.num_rows, 5);
  int64_t la, lb;
  const uint8_t *pa = qv_row_table_row(&u, 3, &la);
  const uint8_t *pb = qv_row_table_row(&t, 1, &lb);
  QV_CHECK(la == lb && memcmp(pa, pb, (size_t)la) == 0);
  int64_t bad[] = {4};
  QV_CHECK_EQ_INT(qv_row_table_append_selection_from(&u, &t, bad, 1, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message, "append selection: index 4 at position 0 is outside [0, 4)");
  QV_CHECK_EQ_INT(qv_row_table_append_selection_from(&u, &u, NULL, 1, &err), QV_EARG);

  /* Encode errors. */
  qv_array *wrong[2] = {cols[1], cols[0]};
  QV_CHECK_EQ_INT(qv_row_encode(&u, wrong, NULL, 4, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message, "row key column 0: type string does not match the row metadata");
  int64_t sel[] = {0, 9};
  QV_CHECK_EQ_INT(qv_row_encode(&u, cols, sel, 2, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "row key column 0: row encode selection: index 9 at position 1 is "
                  "outside [0, 4)");
  QV_CHECK_EQ_INT(qv_row_encode(&u, cols, NULL, 5, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message,
                  "row key column 0: row encode selection: 5 rows requested but only 4 exist");
  qv_type *types[2] = {cols[0]->type, cols[1]->type};
  qv_array *out[2];
  QV_CHECK_EQ_INT(qv_row_decode(&t, 2, 3, types, NULL, out, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message, "row decode: rows [2, 2 + 3) are outside the table's 4 rows");
  qv_type *wrong_types[2] = {cols[1]->type, cols[0]->type};
  QV_CHECK_EQ_INT(qv_row_decode(&t, 0, 1, wrong_types, NULL, out, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message, "row decode: key column 0: type does not match the row metadata");
  uint8_t m[1];
  int64_t rid[] = {0};
  QV_CHECK_EQ_INT(qv_row_compare_columns(&t, cols, NULL, rid, 1, true, NULL, NULL, NULL, &err),
                  QV_EARG);
  QV_CHECK_EQ_STR(err.message, "row compare: no output requested");
  int64_t rbad[] = {7};
  QV_CHECK_EQ_INT(qv_row_compare_columns(&t, cols, NULL, rbad, 1, true, m, NULL, NULL, &err),
                  QV_ERANGE);
  QV_CHECK_EQ_STR(err.message, "row compare row ids: index 7 at position 0 is outside [0, 4)");
  qv_row_table_reset(&u);
  qv_row_table_reset(&t);
  qv_array_unref(cols[0]);
  qv_array_unref(cols[1]);
}

/* Null columns and nulls: masks, canonical zero bytes, decode. */
static void test_nulls(void) {
  mcol c[3];
  mcol_init(&c[0], qv_type_new(QV_INT64), 3);
  mcol_init(&c[1], qv_type_new(QV_NA), 3);
  mcol_init(&c[2], qv_type_new(QV_STRING), 3);
  int64_t v[] = {5, 6, 7};
  memcpy(c[0].fixed, v, 24);
  c[0].null[1] = 1;
  mcol_set_str(&c[2], 0, "hello", 5);
  c[2].null[1] = 1;
  c[2].null[2] = 1;
  qv_array *a[3];
  for (int k = 0; k < 3; k++) a[k] = mcol_array(&c[k], 2, 1);
  qv_row_table t;
  QV_REQUIRE(encode_with(&t, a, 3, 8, 8, NULL, 3) == 0);
  /* order: int64 (0), string end slot (2), null (1) */
  QV_CHECK_EQ_INT(t.md.column_order[0], 0);
  QV_CHECK_EQ_INT(t.md.column_order[1], 2);
  QV_CHECK_EQ_INT(t.md.column_order[2], 1);
  QV_CHECK_EQ_INT(t.null_masks[0], 4); /* null column only */
  QV_CHECK_EQ_INT(t.null_masks[1], 4 | 1 | 2);
  QV_CHECK_EQ_INT(t.null_masks[2], 4 | 2);
  int64_t len;
  const uint8_t *r1 = qv_row_table_row(&t, 1, &len);
  QV_CHECK_EQ_INT(len, 16);
  const uint8_t zero16[16] = {16, 0, 0, 0};
  /* int64 null -> zeros; end offset 16 (empty); null column byte 0 */
  QV_CHECK(memcmp(r1, (const uint8_t[16]){0}, 8) == 0);
  QV_CHECK(memcmp(r1 + 8, zero16, 8) == 0);
  qv_type *types[3] = {c[0].type, c[1].type, c[2].type};
  qv_array *out[3];
  qv_error err;
  QV_REQUIRE(qv_row_decode(&t, 0, 3, types, NULL, out, &err) == QV_OK);
  for (int k = 0; k < 3; k++) {
    QV_CHECK_EQ_INT(mcol_check(&c[k], (const int64_t[]){0, 1, 2}, 3, out[k]), -1);
    qv_array_unref(out[k]);
    qv_array_unref(a[k]);
    mcol_free(&c[k]);
  }
  qv_row_table_reset(&t);
}

/* ------------------------------------------------------------------------ */
/* Scalar vs AVX2                                                            */

typedef struct run_result {
  qv_row_table t;
  uint64_t *h_rows, *h_cols;
  uint8_t *match;
  int64_t *mism, nmism;
  qv_array *dec[8];
} run_result;

static void run_once(schema *s, const int64_t *sel, int64_t n, const int64_t *pairs_l,
                     const int64_t *pairs_r, int64_t np, run_result *r) {
  qv_error err;
  memset(r, 0, sizeof *r);
  if (encode_with(&r->t, s->arrays, s->nc, s->ra, s->sa, sel, n)) return;
  r->h_rows = malloc(sizeof(uint64_t) * (size_t)n);
  r->h_cols = malloc(sizeof(uint64_t) * (size_t)n);
  QV_CHECK(qv_row_hash_rows64(&r->t, NULL, n, r->h_rows, &err) == QV_OK);
  QV_CHECK(qv_row_hash_columns64(&r->t.md, s->arrays, sel, n, r->h_cols, &err) == QV_OK);
  r->match = calloc((size_t)np / 8 + 1, 1);
  r->mism = malloc(sizeof(int64_t) * (size_t)np);
  QV_CHECK(qv_row_compare_columns(&r->t, s->arrays, pairs_l, pairs_r, np, true, r->match, r->mism,
                                  &r->nmism, &err) == QV_OK);
  QV_CHECK(qv_row_decode(&r->t, 0, n, s->types, s->dicts, r->dec, &err) == QV_OK);
}

static bool same_array(const qv_array *a, const qv_array *b) {
  if (a->length != b->length || a->null_count != b->null_count || a->n_buffers != b->n_buffers)
    return false;
  for (int i = 0; i < a->n_buffers; i++) {
    if (!a->buffers[i] != !b->buffers[i]) return false;
    if (a->buffers[i] &&
        (a->buffers[i]->size != b->buffers[i]->size ||
         memcmp(a->buffers[i]->data, b->buffers[i]->data, (size_t)a->buffers[i]->size) != 0))
      return false;
  }
  return true;
}

static void test_scalar_vs_avx2(void) {
  qv_row_simd have = qv_row_set_simd_level(QV_ROW_SIMD_AUTO);
  if (have != QV_ROW_SIMD_AVX2)
    fprintf(stderr, "note: no AVX2 here; comparing scalar with itself\n");
  for (int iter = 0; iter < 150; iter++) {
    int64_t n = 1 + rnd_below(3000);
    schema s;
    schema_make(&s, n, 1 + (int)rnd_below(50), (int)rnd_below(3) * 10);
    if (iter % 3 == 0) { /* favour the pair and single-column kernels */
      schema_free(&s);
      memset(&s, 0, sizeof s);
      s.nc = 1 + (int)rnd_below(2);
      s.ra = s.sa = 4 << rnd_below(2);
      int k = (int)rnd_below(4);
      qv_type_id tid = k == 0 ? QV_INT32 : k == 1 ? QV_INT64 : k == 2 ? QV_UINT8 : QV_INT16;
      for (int c = 0; c < s.nc; c++) {
        mcol_init(&s.cols[c], qv_type_new(tid), n);
        fill_random(&s.cols[c], 1000, iter % 2 ? 0 : 10);
        s.arrays[c] = mcol_array(&s.cols[c], rnd_below(5), 1);
        s.types[c] = s.cols[c].type;
      }
    }
    int64_t nsel = 1 + rnd_below(2 * n);
    int64_t *sel = NULL;
    if (rnd_below(2)) {
      sel = malloc(sizeof(int64_t) * (size_t)nsel);
      for (int64_t i = 0; i < nsel; i++) sel[i] = rnd_below(n);
    } else {
      nsel = n;
    }
    int64_t np = 1 + rnd_below(1000);
    int64_t *pl = malloc(sizeof(int64_t) * (size_t)np), *pr = malloc(sizeof(int64_t) * (size_t)np);
    for (int64_t i = 0; i < np; i++) {
      pl[i] = rnd_below(n);
      pr[i] = rnd_below(nsel);
    }
    run_result rs, rv;
    qv_row_set_simd_level(QV_ROW_SIMD_SCALAR);
    QV_CHECK_EQ_INT(qv_row_simd_level(), QV_ROW_SIMD_SCALAR);
    run_once(&s, sel, nsel, pl, pr, np, &rs);
    qv_row_set_simd_level(QV_ROW_SIMD_AUTO);
    run_once(&s, sel, nsel, pl, pr, np, &rv);
    QV_REQUIRE(rs.h_rows && rv.h_rows);
    int64_t s1 =
        rs.t.md.is_fixed_length ? nsel * rs.t.md.fixed_length : qv_row_table_offsets(&rs.t)[nsel];
    QV_CHECK(memcmp(rs.t.fixed, rv.t.fixed,
                    (size_t)(rs.t.md.is_fixed_length ? s1 : (nsel + 1) * 8)) == 0);
    if (!rs.t.md.is_fixed_length) QV_CHECK(memcmp(rs.t.var, rv.t.var, (size_t)s1) == 0);
    QV_CHECK(memcmp(rs.t.null_masks, rv.t.null_masks,
                    (size_t)(nsel * rs.t.md.null_masks_bytes_per_row)) == 0);
    QV_CHECK(memcmp(rs.h_rows, rv.h_rows, sizeof(uint64_t) * (size_t)nsel) == 0);
    QV_CHECK(memcmp(rs.h_cols, rv.h_cols, sizeof(uint64_t) * (size_t)nsel) == 0);
    QV_CHECK(memcmp(rs.h_rows, rs.h_cols, sizeof(uint64_t) * (size_t)nsel) == 0);
    QV_CHECK(memcmp(rs.match, rv.match, (size_t)np / 8 + 1) == 0);
    QV_CHECK_EQ_INT(rs.nmism, rv.nmism);
    QV_CHECK(memcmp(rs.mism, rv.mism, sizeof(int64_t) * (size_t)rs.nmism) == 0);
    /* Expected compare results from the model. */
    int64_t badm = 0;
    for (int64_t i = 0; i < np; i++) {
      int64_t right_key = sel ? sel[pr[i]] : pr[i];
      if (qv_bit_get(rs.match, i) != mcols_key_equal(s.cols, s.nc, pl[i], right_key)) badm++;
    }
    QV_CHECK_EQ_INT(badm, 0);
    for (int k = 0; k < s.nc; k++) {
      QV_CHECK(rs.dec[k] && rv.dec[k] && same_array(rs.dec[k], rv.dec[k]));
      qv_array_unref(rs.dec[k]);
      qv_array_unref(rv.dec[k]);
    }
    run_result *rr[2] = {&rs, &rv};
    for (int q = 0; q < 2; q++) {
      qv_row_table_reset(&rr[q]->t);
      free(rr[q]->h_rows);
      free(rr[q]->h_cols);
      free(rr[q]->match);
      free(rr[q]->mism);
    }
    free(pl);
    free(pr);
    free(sel);
    schema_free(&s);
  }
}

/* ------------------------------------------------------------------------ */
/* Encoded bytes against a layout written from the seed's description       */

/* Expected rows of model keys: fixed part (columns at their offsets, nulls
 * as zero bytes, bool 0/1, var end offsets), var fields each aligned to the
 * string alignment, rows padded to the row alignment, every padding byte
 * zero. Writes the rows' bytes to *out (malloc'd) and their offsets. */
static int64_t expected_rows(const qv_row_metadata *md, const schema *s, const int64_t *sel,
                             int64_t n, uint8_t **out, int64_t *offs) {
  int64_t fl = md->fixed_length, total = 0;
  offs[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t r = sel ? sel[i] : i, L = fl;
    if (!md->is_fixed_length) {
      for (int32_t j = 0, k = 0; j < md->num_cols; j++) {
        const mcol *c = &s->cols[md->column_order[j]];
        if (c->kind != 2) continue;
        if (k++ > 0) L += qv_row_padding(L, md->string_alignment);
        L += c->null[r] ? 0 : c->len[r];
      }
      L += qv_row_padding(L, md->row_alignment);
    }
    total += L;
    offs[i + 1] = total;
  }
  uint8_t *b = calloc((size_t)total + 1, 1);
  for (int64_t i = 0; i < n; i++) {
    int64_t r = sel ? sel[i] : i;
    uint8_t *row = b + offs[i];
    int64_t pos = fl;
    for (int32_t j = 0, k = 0; j < md->num_cols; j++) {
      const mcol *c = &s->cols[md->column_order[j]];
      uint8_t *at = row + md->column_offsets[j];
      if (c->kind == 0 && !c->null[r]) memcpy(at, c->fixed + r * c->w, (size_t)c->w);
      if (c->kind == 1 && !c->null[r]) *at = c->fixed[r];
      if (c->kind != 2) continue;
      if (k++ > 0) pos += qv_row_padding(pos, md->string_alignment);
      int64_t len = c->null[r] ? 0 : c->len[r];
      if (len) memcpy(row + pos, c->str[r], (size_t)len);
      pos += len;
      uint32_t end = (uint32_t)pos;
      memcpy(at, &end, 4);
    }
  }
  *out = b;
  return total;
}

/* Random keys (nulls or none, strings of 0-70 bytes, selections, several
 * appends) encode to exactly the expected bytes: values, in-row offsets,
 * zero padding, row offsets and null masks; the 32 bytes past the last row
 * are zero. Covers the one-pass paths of row_encode.c (one var
 * column without nulls; any other shape) and the fixed-length one. */
static void test_encoded_bytes(void) {
  for (int iter = 0; iter < 400; iter++) {
    int64_t n = 1 + rnd_below(iter < 300 ? 100 : 3000);
    schema s;
    schema_make(&s, n, 1 + (int)rnd_below(500), iter % 3 == 0 ? 25 : 0);
    if (iter % 2 == 0) { /* one string column and fixed ones: the common key */
      for (int k = 0; k < s.nc; k++)
        if (s.cols[k].kind == 2 && k != 0) {
          qv_array_unref(s.arrays[k]);
          mcol_free(&s.cols[k]);
          mcol_init(&s.cols[k], qv_type_new(QV_INT32), n);
          for (int64_t i = 0; i < n; i++) s.cols[k].null[i] = 0;
          s.arrays[k] = mcol_array(&s.cols[k], 0, 0);
          s.types[k] = s.cols[k].type;
          s.dicts[k] = NULL;
        }
    }
    for (int k = 0; k < s.nc; k++) { /* longer strings, some of the time */
      mcol *c = &s.cols[k];
      if (c->kind != 2 || rnd_below(2)) continue;
      for (int64_t i = 0; i < n; i++) {
        char buf[80];
        int len = (int)rnd_below(71);
        for (int b = 0; b < len; b++) buf[b] = (char)('A' + rnd_below(50));
        mcol_set_str(c, i, buf, len);
      }
      qv_array_unref(s.arrays[k]);
      s.arrays[k] = mcol_array(c, rnd_below(5), (int)rnd_below(3));
    }
    int64_t nsel = rnd_below(2) ? n : 1 + rnd_below(2 * n);
    int64_t *sel = NULL;
    if (nsel != n || rnd_below(2)) {
      sel = malloc(sizeof(int64_t) * (size_t)nsel);
      for (int64_t i = 0; i < nsel; i++) sel[i] = rnd_below(n);
    }
    qv_row_metadata md;
    qv_error err;
    QV_REQUIRE(qv_row_metadata_from_types(&md, s.types, s.nc, s.ra, s.sa, &err) == QV_OK);
    qv_row_table t;
    QV_REQUIRE(qv_row_table_init(&t, &md, &err) == QV_OK);
    int64_t done = 0;
    while (done < nsel) {
      int64_t part = sel ? 1 + rnd_below(nsel - done) : nsel;
      QV_REQUIRE(qv_row_encode_append(&t, s.arrays, sel ? sel + done : NULL, part, &err) == QV_OK);
      done += part;
    }
    uint8_t *want = NULL;
    int64_t *woffs = malloc(sizeof(int64_t) * (size_t)(nsel + 1));
    int64_t total = expected_rows(&md, &s, sel, nsel, &want, woffs);
    const uint8_t *got = md.is_fixed_length ? t.fixed : t.var;
    bool same = memcmp(got, want, (size_t)total) == 0;
    if (!same)
      for (int64_t b = 0; b < total; b++)
        if (got[b] != want[b]) {
          fprintf(stderr, "iter %d: byte %lld: got %d, expected %d (fixed part %d, %d cols)\n",
                  iter, (long long)b, got[b], want[b], md.fixed_length, md.num_cols);
          break;
        }
    QV_CHECK(same);
    if (!md.is_fixed_length) {
      QV_CHECK(memcmp(qv_row_table_offsets(&t), woffs, sizeof(int64_t) * (size_t)(nsel + 1)) == 0);
      /* The stores that run past the last row are undone (the buffer keeps
       * QV_ROW_PADDING bytes past its capacity, zero). */
      bool zero = true;
      for (int64_t b = total; b < total + 32; b++) zero = zero && t.var[b] == 0;
      QV_CHECK(zero);
    }
    int64_t npr = md.null_masks_bytes_per_row;
    bool masks = true;
    for (int64_t i = 0; i < nsel; i++)
      for (int32_t j = 0; j < md.num_cols; j++) {
        const mcol *c = &s.cols[md.column_order[j]];
        bool null = c->null[sel ? sel[i] : i] != 0;
        masks = masks && qv_bit_get(t.null_masks + i * npr, j) == null;
      }
    QV_CHECK(masks);
    free(want);
    free(woffs);
    free(sel);
    qv_row_table_reset(&t);
    qv_row_metadata_reset(&md);
    schema_free(&s);
  }
}

int main(void) {
  const char *env = getenv("QV_ROW_SIMD");
  if (env) fprintf(stderr, "QV_ROW_SIMD=%s -> level %d\n", env, (int)qv_row_simd_level());
  QV_RUN(test_seed_example_fixed);
  QV_RUN(test_seed_example_var);
  QV_RUN(test_metadata_rules);
  QV_RUN(test_table_ops);
  QV_RUN(test_nulls);
  QV_RUN(test_memory);
  /* The randomized suites run under both instruction sets. */
  qv_row_simd levels[2] = {QV_ROW_SIMD_SCALAR, QV_ROW_SIMD_AUTO};
  for (int l = 0; l < 2; l++) {
    qv_row_set_simd_level(levels[l]);
    QV_RUN(test_roundtrip_random);
    QV_RUN(test_encoded_bytes);
    QV_RUN(test_equal_keys);
    QV_RUN(test_hash_spread);
  }
  QV_RUN(test_scalar_vs_avx2);
  return QV_TEST_END();
}
