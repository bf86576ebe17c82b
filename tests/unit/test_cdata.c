/*
 * test_cdata.c — the Arrow C Data / C Stream interface (src/ipc/cdata.c):
 * exact format strings and metadata bytes, export -> import round trips of
 * hand-built arrays of every type (values compared through their JSON
 * rendering, buffers compared by address: no copies), release-order
 * independence of moved children, import errors, and the stream import /
 * export callbacks. Run under ASan to check for leaks.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "quiver/cdata.h"
#include "quiver/ipc.h"
#include "quiver/print.h"
#include "qv_build.h"
#include "qv_test.h"

/* ---- sample arrays ----------------------------------------------------- */

static qv_type *with_unit(qv_type_id id, qv_time_unit u) {
  qv_type *t = qv_type_new(id);
  t->unit = u;
  return t;
}

static qv_type *dec(qv_type_id id, int32_t p, int32_t s) {
  qv_type *t = qv_type_new(id);
  t->precision = p;
  t->scale = s;
  return t;
}

static qv_array *i32s(int64_t n, const int32_t *v, const char *valid) {
  return tb_prim(tb_type(QV_INT32), n, valid, v, n * 4);
}

static qv_array *view_array(qv_type_id id) {
  uint8_t views[32] = {0};
  int32_t len0 = 3, len1 = 14, bufi = 1, off = 2;
  memcpy(views, &len0, 4);
  memcpy(views + 4, "abc", 3);
  memcpy(views + 16, &len1, 4);
  memcpy(views + 20, "defg", 4);
  memcpy(views + 24, &bufi, 4);
  memcpy(views + 28, &off, 4);
  qv_buffer *b[4] = {tb_bits("11"), tb_buf(views, 32), tb_buf("zzzz", 4),
                     tb_buf("..defghijklmnopq", 16)};
  return tb_array(tb_type(id), 2, 4, b, 0, NULL);
}

static qv_type *union_type(qv_type_id id, int32_t c0, int32_t c1) {
  qv_type *t = tb_child(tb_child(tb_type(id), "i", tb_type(QV_INT32)), "s", tb_type(QV_STRING));
  t->type_codes = malloc(2 * sizeof(int32_t));
  t->type_codes[0] = c0;
  t->type_codes[1] = c1;
  return t;
}

#define MAX_SAMPLES 64

/* Build one array of every type family; returns how many. */
static int build_samples(qv_array **s, const char **expect_format) {
  int n = 0;
#define ADD(arr, fmt) (expect_format[n] = (fmt), s[n++] = (arr))
  static const int64_t i64[] = {INT64_MIN, -1, 0, INT64_MAX};
  static const double dv[] = {0.5, NAN, -1e300, 0.0};
  static const int32_t i32v[] = {1, -2, 3, 4};
  uint8_t bits = 0x0b;
  ADD(tb_array(tb_type(QV_NA), 3, 0, NULL, 0, NULL), "n");
  ADD(tb_prim(tb_type(QV_BOOL), 4, "1101", &bits, 1), "b");
  ADD(tb_prim(tb_type(QV_INT8), 4, NULL, "\x01\xff\x02\x03", 4), "c");
  ADD(tb_prim(tb_type(QV_UINT8), 4, "0111", "\x01\xff\x02\x03", 4), "C");
  ADD(tb_prim(tb_type(QV_INT16), 2, NULL, i32v, 4), "s");
  ADD(tb_prim(tb_type(QV_UINT16), 2, NULL, i32v, 4), "S");
  ADD(i32s(4, i32v, "1011"), "i");
  ADD(tb_prim(tb_type(QV_UINT32), 4, NULL, i32v, 16), "I");
  ADD(tb_prim(tb_type(QV_INT64), 4, "1110", i64, 32), "l");
  ADD(tb_prim(tb_type(QV_UINT64), 4, NULL, i64, 32), "L");
  ADD(tb_prim(tb_type(QV_HALF_FLOAT), 2, NULL, "\x00\x3c\x55\x35", 4), "e");
  ADD(tb_prim(tb_type(QV_FLOAT), 2, NULL, i32v, 8), "f");
  ADD(tb_prim(tb_type(QV_DOUBLE), 4, "1011", dv, 32), "g");
  ADD(tb_prim(dec(QV_DECIMAL32, 9, 2), 2, NULL, i32v, 8), "d:9,2,32");
  ADD(tb_prim(dec(QV_DECIMAL64, 18, -3), 2, NULL, i64, 16), "d:18,-3,64");
  ADD(tb_prim(dec(QV_DECIMAL128, 38, 10), 2, "01", i64, 32), "d:38,10");
  ADD(tb_prim(dec(QV_DECIMAL256, 76, 5), 1, NULL, i64, 32), "d:76,5,256");
  ADD(tb_prim(tb_type(QV_DATE32), 4, NULL, i32v, 16), "tdD");
  ADD(tb_prim(tb_type(QV_DATE64), 2, NULL, i64 + 1, 16), "tdm");
  ADD(tb_prim(with_unit(QV_TIME32, QV_SECOND), 2, NULL, i32v + 2, 8), "tts");
  ADD(tb_prim(with_unit(QV_TIME32, QV_MILLI), 2, NULL, i32v + 2, 8), "ttm");
  ADD(tb_prim(with_unit(QV_TIME64, QV_MICRO), 1, NULL, i64 + 2, 8), "ttu");
  ADD(tb_prim(with_unit(QV_TIME64, QV_NANO), 1, NULL, i64 + 2, 8), "ttn");
  ADD(tb_prim(qv_type_timestamp(QV_MICRO, "UTC"), 4, NULL, i64, 32), "tsu:UTC");
  ADD(tb_prim(qv_type_timestamp(QV_SECOND, NULL), 4, NULL, i64, 32), "tss:");
  ADD(tb_prim(qv_type_timestamp(QV_MILLI, "+05:30"), 1, NULL, i64, 8), "tsm:+05:30");
  ADD(tb_prim(qv_type_timestamp(QV_NANO, "Europe/Paris"), 1, NULL, i64, 8), "tsn:Europe/Paris");
  ADD(tb_prim(with_unit(QV_DURATION, QV_SECOND), 2, NULL, i64, 16), "tDs");
  ADD(tb_prim(with_unit(QV_DURATION, QV_MILLI), 2, NULL, i64, 16), "tDm");
  ADD(tb_prim(with_unit(QV_DURATION, QV_MICRO), 2, NULL, i64, 16), "tDu");
  ADD(tb_prim(with_unit(QV_DURATION, QV_NANO), 2, NULL, i64, 16), "tDn");
  ADD(tb_prim(tb_type(QV_INTERVAL_MONTHS), 2, NULL, i32v, 8), "tiM");
  ADD(tb_prim(tb_type(QV_INTERVAL_DAY_TIME), 2, NULL, i32v, 16), "tiD");
  ADD(tb_prim(tb_type(QV_INTERVAL_MONTH_DAY_NANO), 2, NULL, i64, 32), "tin");
  static const char *strs[] = {"alpha", NULL, "", "\xce\xbb"};
  ADD(tb_str(QV_STRING, 4, strs, NULL), "u");
  ADD(tb_str(QV_BINARY, 4, strs, NULL), "z");
  ADD(tb_str(QV_LARGE_STRING, 4, strs, NULL), "U");
  ADD(tb_str(QV_LARGE_BINARY, 4, strs, NULL), "Z");
  ADD(view_array(QV_STRING_VIEW), "vu");
  ADD(view_array(QV_BINARY_VIEW), "vz");
  qv_type *fsb = tb_type(QV_FIXED_SIZE_BINARY);
  fsb->byte_width = 3;
  ADD(tb_prim(fsb, 2, "10", "abcdef", 6), "w:3");

  /* nested */
  int32_t offs[] = {0, 2, 2, 4};
  qv_array *c = i32s(4, i32v, "1101");
  qv_buffer *lb[2] = {tb_bits("101"), tb_buf(offs, 16)};
  ADD(tb_array(qv_type_list_of(QV_LIST, tb_type(QV_INT32)), 3, 2, lb, 1, &c), "+l");
  int64_t loffs[] = {1, 3};
  c = i32s(4, i32v, NULL);
  qv_buffer *llb[2] = {NULL, tb_buf(loffs, 16)};
  ADD(tb_array(qv_type_list_of(QV_LARGE_LIST, tb_type(QV_INT32)), 1, 2, llb, 1, &c), "+L");
  int32_t vo[] = {2, 0}, vs[] = {2, 1};
  c = i32s(4, i32v, NULL);
  qv_buffer *vb[3] = {NULL, tb_buf(vo, 8), tb_buf(vs, 8)};
  ADD(tb_array(qv_type_list_of(QV_LIST_VIEW, tb_type(QV_INT32)), 2, 3, vb, 1, &c), "+vl");
  int64_t lvo[] = {3}, lvs[] = {1};
  c = i32s(4, i32v, NULL);
  qv_buffer *lvb[3] = {NULL, tb_buf(lvo, 8), tb_buf(lvs, 8)};
  ADD(tb_array(qv_type_list_of(QV_LARGE_LIST_VIEW, tb_type(QV_INT32)), 1, 3, lvb, 1, &c), "+vL");
  qv_type *ft = qv_type_list_of(QV_FIXED_SIZE_LIST, tb_type(QV_INT32));
  ft->list_size = 2;
  c = i32s(4, i32v, NULL);
  qv_buffer *fb[1] = {tb_bits("01")};
  ADD(tb_array(ft, 2, 1, fb, 1, &c), "+w:2");
  qv_array *kids[2] = {i32s(2, i32v, NULL), tb_str(QV_STRING, 2, strs, NULL)};
  qv_type *st =
      tb_child(tb_child(tb_type(QV_STRUCT), "x", tb_type(QV_INT32)), "y", tb_type(QV_STRING));
  qv_buffer *sb[1] = {tb_bits("10")};
  ADD(tb_array(st, 2, 1, sb, 2, kids), "+s");
  /* map<string, int32> with sorted keys */
  qv_array *ek[2] = {tb_str(QV_STRING, 2, strs + 2, NULL), i32s(2, i32v, "01")};
  ek[0]->buffers[0] = (qv_buffer_unref(ek[0]->buffers[0]), NULL); /* keys non-null */
  qv_type *et = tb_type(QV_STRUCT);
  QV_CHECK(qv_type_add_child(et, "key", false, tb_type(QV_STRING), NULL, NULL) == QV_OK);
  tb_child(et, "value", tb_type(QV_INT32));
  qv_array *entries = tb_array(et, 2, 1, (qv_buffer *[]){NULL}, 2, ek);
  qv_type *mt = tb_type(QV_MAP);
  QV_CHECK(qv_type_add_child(mt, "entries", false, qv_type_ref(entries->type), NULL, NULL) ==
           QV_OK);
  mt->keys_sorted = true;
  int32_t mo[] = {0, 2, 2};
  qv_buffer *mb[2] = {tb_bits("10"), tb_buf(mo, 12)};
  ADD(tb_array(mt, 2, 2, mb, 1, &entries), "+m");
  /* unions */
  qv_array *uk[2] = {i32s(3, i32v, NULL), tb_str(QV_STRING, 3, strs, NULL)};
  int8_t ids[] = {5, 7, 7};
  qv_buffer *ub[1] = {tb_buf(ids, 3)};
  ADD(tb_array(union_type(QV_SPARSE_UNION, 5, 7), 3, 1, ub, 2, uk), "+us:5,7");
  qv_array *dk[2] = {i32s(1, i32v, NULL), tb_str(QV_STRING, 2, strs, NULL)};
  int8_t dids[] = {1, 0, 1};
  int32_t doffs[] = {1, 0, 0};
  qv_buffer *db[2] = {tb_buf(dids, 3), tb_buf(doffs, 12)};
  ADD(tb_array(union_type(QV_DENSE_UNION, 0, 1), 3, 2, db, 2, dk), "+ud:0,1");
  /* dictionary<int16, string>, ordered */
  qv_type *dt = tb_type(QV_DICTIONARY);
  dt->index_type = tb_type(QV_INT16);
  dt->value_type = tb_type(QV_STRING);
  dt->ordered = true;
  int16_t idx[] = {3, 0, 1};
  qv_array *da = tb_prim(dt, 3, "110", idx, 6);
  da->dictionary = tb_str(QV_STRING, 4, strs, NULL);
  ADD(da, "s");
  /* run-end encoded<int32, string> */
  int32_t ends[] = {2, 5};
  qv_array *rk[2] = {i32s(2, ends, NULL), tb_str(QV_STRING, 2, strs, NULL)};
  qv_type *rt = tb_type(QV_RUN_END_ENCODED);
  QV_CHECK(qv_type_add_child(rt, "run_ends", false, tb_type(QV_INT32), NULL, NULL) == QV_OK);
  tb_child(rt, "values", tb_type(QV_STRING));
  ADD(tb_array(rt, 5, 0, NULL, 2, rk), "+r");
#undef ADD
  return n;
}

/* JSON of all rows, for value comparison independent of layout. */
static char *render(const qv_array *a) {
  qv_strbuf sb = {0};
  qv_error err;
  qv_strbuf_append_char(&sb, '[', NULL);
  for (int64_t i = 0; i < a->length; i++) {
    if (i) qv_strbuf_append_char(&sb, ',', NULL);
    if (qv_format_value_json(a, i, &sb, &err) != QV_OK) {
      qv_strbuf_printf(&sb, NULL, "<error: %s>", err.message);
      break;
    }
  }
  qv_strbuf_append_char(&sb, ']', NULL);
  char *s = strdup(qv_strbuf_cstr(&sb));
  qv_strbuf_reset(&sb);
  return s;
}

/* Every non-NULL buffer of `b` (recursively) has the same bytes address
 * as the matching buffer of `a`: nothing was copied. */
static bool same_buffers(const qv_array *a, const qv_array *b) {
  if (a->n_buffers != b->n_buffers || a->n_children != b->n_children) return false;
  for (int32_t i = 0; i < a->n_buffers; i++) {
    if (!a->buffers[i] || !b->buffers[i]) {
      if ((a->buffers[i] == NULL) != (b->buffers[i] == NULL)) return false;
      continue;
    }
    if (a->buffers[i]->data != b->buffers[i]->data) return false;
  }
  for (int32_t i = 0; i < a->n_children; i++)
    if (!same_buffers(a->children[i], b->children[i])) return false;
  if (a->dictionary) return b->dictionary && same_buffers(a->dictionary, b->dictionary);
  return true;
}

/* ---- tests --------------------------------------------------------------- */

static void test_format_strings(void) {
  qv_array *s[MAX_SAMPLES];
  const char *fmt[MAX_SAMPLES];
  int n = build_samples(s, fmt);
  QV_CHECK(n > 45);
  for (int i = 0; i < n; i++) {
    qv_field f = {(char *)"col", true, s[i]->type, {0, NULL}};
    struct ArrowSchema sch;
    qv_error err;
    QV_CHECK_EQ_INT(qv_export_field(&f, &sch, &err), QV_OK);
    QV_CHECK_EQ_STR(sch.format, fmt[i]);
    QV_CHECK_EQ_STR(sch.name, "col");
    QV_CHECK(sch.metadata == NULL);
    char buf[64];
    if (s[i]->type->id == QV_DICTIONARY) {
      QV_CHECK_EQ_INT(sch.flags, ARROW_FLAG_NULLABLE | ARROW_FLAG_DICTIONARY_ORDERED);
      QV_REQUIRE(sch.dictionary != NULL);
      QV_CHECK_EQ_STR(sch.dictionary->format, "u");
    } else if (s[i]->type->id == QV_MAP) {
      QV_CHECK_EQ_INT(sch.flags, ARROW_FLAG_NULLABLE | ARROW_FLAG_MAP_KEYS_SORTED);
      QV_CHECK_EQ_INT(sch.n_children, 1);
      QV_CHECK_EQ_STR(sch.children[0]->name, "entries");
      QV_CHECK_EQ_STR(sch.children[0]->format, "+s");
      QV_CHECK_EQ_INT(sch.children[0]->flags, 0);
      QV_CHECK_EQ_STR(sch.children[0]->children[0]->name, "key");
      QV_CHECK_EQ_STR(sch.children[0]->children[1]->name, "value");
    } else {
      QV_CHECK_EQ_INT(sch.flags, ARROW_FLAG_NULLABLE);
      QV_CHECK(sch.dictionary == NULL);
    }
    QV_CHECK_EQ_INT(qv_cdata_format(s[i]->type, buf, sizeof buf), (long long)strlen(fmt[i]));
    sch.release(&sch);
    QV_CHECK(sch.release == NULL);
    qv_array_unref(s[i]);
  }
}

static void test_metadata_bytes(void) {
  qv_field f = {(char *)"m", false, qv_type_new(QV_INT32), {0, NULL}};
  QV_CHECK(qv_metadata_append(&f.metadata, "key1", 4, "value1", 6, NULL) == QV_OK);
  QV_CHECK(qv_metadata_append(&f.metadata, "k\0b", 3, "", 0, NULL) == QV_OK);
  struct ArrowSchema sch;
  QV_REQUIRE(qv_export_field(&f, &sch, NULL) == QV_OK);
  static const char want[] =
      "\x02\x00\x00\x00"
      "\x04\x00\x00\x00key1\x06\x00\x00\x00value1"
      "\x03\x00\x00\x00k\0b\x00\x00\x00\x00";
  QV_CHECK(memcmp(sch.metadata, want, sizeof want - 1) == 0);
  QV_CHECK_EQ_INT(sch.flags, 0);
  qv_field back;
  QV_REQUIRE(qv_import_field(&sch, &back, NULL) == QV_OK);
  QV_CHECK(sch.release == NULL); /* consumed */
  QV_CHECK_EQ_STR(back.name, "m");
  QV_CHECK(!back.nullable);
  QV_CHECK(qv_metadata_equals(&back.metadata, &f.metadata));
  QV_CHECK_EQ_INT(back.metadata.kv[1].key_len, 3);
  qv_import_field_reset(&back);
  qv_type_unref(f.type);
  qv_metadata_reset(&f.metadata);

  /* schema: "+s", name "", schema metadata at the top */
  qv_type *st = tb_child(tb_type(QV_STRUCT), "a", tb_type(QV_INT64));
  qv_schema *schema = qv_schema_new(st);
  QV_CHECK(qv_metadata_append(&schema->metadata, "huggingface", 11, "{}", 2, NULL) == QV_OK);
  QV_REQUIRE(qv_export_schema(schema, &sch, NULL) == QV_OK);
  QV_CHECK_EQ_STR(sch.format, "+s");
  QV_CHECK_EQ_STR(sch.name, "");
  QV_CHECK_EQ_INT(sch.n_children, 1);
  qv_schema *sback = NULL;
  QV_REQUIRE(qv_import_schema(&sch, &sback, NULL) == QV_OK);
  QV_CHECK(qv_schema_equals(schema, sback, true));
  qv_schema_unref(sback);
  qv_schema_unref(schema);
}

static void test_round_trip_every_type(void) {
  qv_array *s[MAX_SAMPLES];
  const char *fmt[MAX_SAMPLES];
  int n = build_samples(s, fmt);
  for (int i = 0; i < n; i++) {
    for (int sliced = 0; sliced < 2; sliced++) {
      qv_array *orig = s[i];
      if (sliced) {
        if (orig->length < 2) continue;
        QV_REQUIRE(qv_array_slice(s[i], 1, orig->length - 1, &orig, NULL) == QV_OK);
      }
      qv_error err = {{0}};
      qv_field f = {(char *)"v", true, orig->type, {0, NULL}};
      struct ArrowSchema sch;
      struct ArrowArray arr;
      QV_REQUIRE(qv_export_field(&f, &sch, &err) == QV_OK);
      QV_REQUIRE(qv_export_array(orig, &arr, &err) == QV_OK);
      QV_CHECK_EQ_INT(arr.offset, orig->offset);
      QV_CHECK_EQ_INT(arr.length, orig->length);
      qv_field imported;
      QV_REQUIRE(qv_import_field(&sch, &imported, &err) == QV_OK);
      if (!qv_type_equals(orig->type, imported.type, true)) {
        fprintf(stderr, "type mismatch for format %s\n", fmt[i]);
        QV_CHECK(false);
      }
      qv_array *back = NULL;
      qv_status st = qv_import_array(&arr, imported.type, &back, &err);
      if (st != QV_OK) fprintf(stderr, "import %s: %s\n", fmt[i], err.message);
      QV_CHECK_EQ_INT(st, QV_OK);
      QV_CHECK(arr.release == NULL);
      if (back) {
        char *want = render(orig), *got = render(back);
        QV_CHECK(strstr(want, "<error") == NULL);
        if (getenv("QV_TEST_VERBOSE")) fprintf(stderr, "%s %s\n", fmt[i], got);
        if (strcmp(want, got) != 0) {
          fprintf(stderr, "format %s sliced=%d:\n  want %s\n  got  %s\n", fmt[i], sliced, want,
                  got);
          QV_CHECK(false);
        }
        free(want);
        free(got);
        QV_CHECK(same_buffers(orig, back));
        QV_CHECK_EQ_INT(back->offset, orig->offset);
      }
      /* the imported array outlives the original and the field */
      qv_import_field_reset(&imported);
      if (sliced) qv_array_unref(orig);
      qv_array_unref(back);
    }
    qv_array_unref(s[i]);
  }
}

static void test_view_sizes_buffer(void) {
  qv_array *v = view_array(QV_STRING_VIEW);
  struct ArrowArray arr;
  QV_REQUIRE(qv_export_array(v, &arr, NULL) == QV_OK);
  QV_CHECK_EQ_INT(arr.n_buffers, 5);
  const int64_t *sizes = arr.buffers[4];
  QV_CHECK_EQ_INT(sizes[0], 4);
  QV_CHECK_EQ_INT(sizes[1], 16);
  QV_CHECK(arr.buffers[2] == v->buffers[2]->data);
  arr.release(&arr);
  qv_array_unref(v);
}

static void test_null_count_and_validity(void) {
  int32_t v[] = {1, 2};
  qv_array *a = i32s(2, v, NULL);
  struct ArrowArray arr;
  QV_REQUIRE(qv_export_array(a, &arr, NULL) == QV_OK);
  QV_CHECK(arr.buffers[0] == NULL);
  QV_CHECK_EQ_INT(arr.null_count, 0);
  arr.release(&arr);
  qv_array_unref(a);
  a = i32s(2, v, "10");
  QV_REQUIRE(qv_export_array(a, &arr, NULL) == QV_OK);
  QV_CHECK_EQ_INT(arr.null_count, -1); /* not computed yet: allowed */
  arr.release(&arr);
  qv_array_unref(a);
}

/* Move child 0 of an exported struct out, then release in both orders. */
static void test_release_order(void) {
  for (int parent_first = 0; parent_first < 2; parent_first++) {
    int32_t v[] = {7, 8, 9};
    const char *s[] = {"p", "q", NULL};
    qv_array *kids[2] = {i32s(3, v, NULL), tb_str(QV_STRING, 3, s, NULL)};
    qv_type *st =
        tb_child(tb_child(tb_type(QV_STRUCT), "x", tb_type(QV_INT32)), "y", tb_type(QV_STRING));
    qv_array *a = tb_array(st, 3, 1, (qv_buffer *[]){NULL}, 2, kids);
    struct ArrowArray arr;
    QV_REQUIRE(qv_export_array(a, &arr, NULL) == QV_OK);
    qv_type *ytype = qv_type_ref(a->type->children[1].type);
    qv_array_unref(a); /* the export alone keeps everything alive */

    struct ArrowArray moved = *arr.children[1];
    arr.children[1]->release = NULL;
    if (parent_first) {
      arr.release(&arr);
      QV_CHECK(arr.release == NULL);
    }
    qv_array *y = NULL;
    QV_REQUIRE(qv_import_array(&moved, ytype, &y, NULL) == QV_OK);
    char *got = render(y);
    QV_CHECK_EQ_STR(got, "[\"p\",\"q\",null]");
    free(got);
    qv_array_unref(y);
    if (!parent_first) arr.release(&arr);
    qv_type_unref(ytype);
  }
  /* dictionary moved out of a dictionary array */
  qv_type *dt = tb_type(QV_DICTIONARY);
  dt->index_type = tb_type(QV_INT8);
  dt->value_type = tb_type(QV_STRING);
  const char *dv[] = {"a", "b"};
  qv_array *da = tb_prim(dt, 2, NULL, "\x01\x00", 2);
  da->dictionary = tb_str(QV_STRING, 2, dv, NULL);
  struct ArrowArray arr;
  QV_REQUIRE(qv_export_array(da, &arr, NULL) == QV_OK);
  qv_array_unref(da);
  struct ArrowArray dict = *arr.dictionary;
  arr.dictionary->release = NULL;
  arr.release(&arr);
  QV_CHECK(dict.release != NULL);
  dict.release(&dict);
}

/* A foreign producer: a string array with static buffers and a release
 * callback that counts its calls. */
static int g_released;
static void foreign_release(struct ArrowArray *a) {
  g_released++;
  a->release = NULL;
}

static void test_foreign_producer_lifetime(void) {
  static const int32_t offsets[] = {0, 3, 3, 8};
  static const char data[] = "onethree";
  static const uint8_t validity[] = {0x05};
  const void *bufs[3] = {validity, offsets, data};
  struct ArrowArray in = {3, 1, 0, 3, 0, bufs, NULL, NULL, foreign_release, NULL};
  qv_type *t = tb_type(QV_STRING);
  qv_array *a = NULL, *sl = NULL;
  qv_error err;
  g_released = 0;
  QV_REQUIRE(qv_import_array(&in, t, &a, &err) == QV_OK);
  QV_CHECK(in.release == NULL);
  QV_CHECK(a->buffers[2]->data == (const uint8_t *)data); /* no copy */
  QV_CHECK_EQ_INT(a->buffers[2]->size, 8);
  QV_REQUIRE(qv_array_slice(a, 2, 1, &sl, NULL) == QV_OK);
  qv_array_unref(a);
  QV_CHECK_EQ_INT(g_released, 0); /* the slice still holds the buffers */
  char *got = render(sl);
  QV_CHECK_EQ_STR(got, "[\"three\"]");
  free(got);
  qv_array_unref(sl);
  QV_CHECK_EQ_INT(g_released, 1);

  /* empty array: NULL offsets and data are allowed */
  const void *empty[3] = {NULL, NULL, NULL};
  struct ArrowArray e = {0, 0, 0, 3, 0, empty, NULL, NULL, foreign_release, NULL};
  g_released = 0;
  QV_REQUIRE(qv_import_array(&e, t, &a, &err) == QV_OK);
  QV_CHECK_EQ_INT(a->length, 0);
  QV_CHECK_EQ_INT(g_released, 1); /* no foreign buffer kept: released at once */
  qv_array_unref(a);

  /* a NULL data pointer where bytes are needed is an error */
  const void *holes[3] = {NULL, offsets, NULL};
  struct ArrowArray h = {3, 0, 0, 3, 0, holes, NULL, NULL, foreign_release, NULL};
  g_released = 0;
  QV_CHECK_EQ_INT(qv_import_array(&h, t, &a, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "imported array: buffer 2 is NULL but needs 8 bytes");
  QV_CHECK_EQ_INT(g_released, 1);
  qv_type_unref(t);
}

static void test_import_errors(void) {
  int32_t v[] = {1, 2};
  qv_array *a = i32s(2, v, NULL);
  struct ArrowArray arr;
  qv_error err;
  QV_REQUIRE(qv_export_array(a, &arr, NULL) == QV_OK);
  qv_type *str = tb_type(QV_STRING);
  qv_array *out = NULL;
  QV_CHECK_EQ_INT(qv_import_array(&arr, str, &out, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "imported array: type string expects 3 buffers, found 2");
  QV_CHECK(arr.release == NULL); /* released on failure too */
  QV_CHECK(out == NULL);
  QV_CHECK_EQ_INT(qv_import_array(&arr, str, &out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "qv_import_array: NULL argument or released array");

  /* null_count > 0 without a validity buffer */
  QV_REQUIRE(qv_export_array(a, &arr, NULL) == QV_OK);
  arr.null_count = 1;
  QV_CHECK_EQ_INT(qv_import_array(&arr, a->type, &out, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "imported array: null_count is 1 but the "
                  "validity buffer is NULL");
  qv_type_unref(str);
  qv_array_unref(a);

  /* bad format strings */
  static const char *bad[] = {"d:1", "w:x", "+w:", "tsx:", "q", "+ud:1,2", "d:10,2,100", "tt"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    qv_field f = {(char *)"x", true, tb_type(QV_INT32), {0, NULL}};
    struct ArrowSchema sch;
    QV_REQUIRE(qv_export_field(&f, &sch, NULL) == QV_OK);
    qv_type_unref(f.type);
    sch.format = bad[i]; /* owned strings are still freed by release */
    qv_field back;
    qv_status st = qv_import_field(&sch, &back, &err);
    QV_CHECK(st == QV_EINVAL || st == QV_ENOTSUP);
    QV_CHECK(sch.release == NULL);
  }
  qv_field f = {(char *)"x", true, tb_type(QV_INT32), {0, NULL}};
  struct ArrowSchema sch;
  QV_REQUIRE(qv_export_field(&f, &sch, NULL) == QV_OK);
  qv_type_unref(f.type);
  sch.format = "q";
  qv_field back;
  QV_CHECK(qv_import_field(&sch, &back, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "unknown or malformed format string 'q'");
  /* schema import wants a struct */
  QV_REQUIRE(qv_export_field(&(qv_field){(char *)"x", true, str = tb_type(QV_INT32), {0, NULL}},
                             &sch, NULL) == QV_OK);
  qv_type_unref(str);
  qv_schema *schema = NULL;
  QV_CHECK_EQ_INT(qv_import_schema(&sch, &schema, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "import schema: expected a struct ('+s'), found 'i'");
}

/* ---- a hand-written C stream producer ----------------------------------- */

typedef struct test_stream {
  qv_schema *schema;
  qv_array *batches[3];
  int n, next, fail_at;
  char msg[64];
} test_stream;

static int ts_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  test_stream *t = s->private_data;
  return qv_export_schema(t->schema, out, NULL) == QV_OK ? 0 : EINVAL;
}
static int ts_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  test_stream *t = s->private_data;
  if (t->next == t->fail_at) {
    snprintf(t->msg, sizeof t->msg, "disk on fire at batch %d", t->next);
    return EIO;
  }
  if (t->next == t->n) {
    out->release = NULL;
    return 0;
  }
  return qv_export_array(t->batches[t->next++], out, NULL) == QV_OK ? 0 : EINVAL;
}
static const char *ts_last_error(struct ArrowArrayStream *s) {
  return ((test_stream *)s->private_data)->msg;
}
static void ts_release(struct ArrowArrayStream *s) {
  test_stream *t = s->private_data;
  for (int i = 0; i < t->n; i++) qv_array_unref(t->batches[i]);
  qv_schema_unref(t->schema);
  free(t);
  s->release = NULL;
}

static void make_stream(struct ArrowArrayStream *s, int fail_at) {
  test_stream *t = calloc(1, sizeof *t);
  qv_type *st =
      tb_child(tb_child(tb_type(QV_STRUCT), "n", tb_type(QV_INT32)), "s", tb_type(QV_STRING));
  t->schema = qv_schema_new(st);
  QV_CHECK(qv_metadata_append(&t->schema->metadata, "origin", 6, "test", 4, NULL) == QV_OK);
  t->n = 3;
  t->fail_at = fail_at;
  for (int b = 0; b < 3; b++) {
    int32_t v[] = {b, b + 10};
    const char *s2[] = {"x", b == 1 ? NULL : "y"};
    qv_array *cols[2] = {i32s(2, v, NULL), tb_str(QV_STRING, 2, s2, NULL)};
    t->batches[b] = tb_array(qv_type_ref(st), 2, 1, (qv_buffer *[]){NULL}, 2, cols);
  }
  s->get_schema = ts_get_schema;
  s->get_next = ts_get_next;
  s->get_last_error = ts_last_error;
  s->release = ts_release;
  s->private_data = t;
}

static void test_stream_import(void) {
  struct ArrowArrayStream s;
  make_stream(&s, -1);
  qv_schema *schema = NULL;
  qv_array **batches = NULL;
  int64_t n = 0;
  qv_error err;
  QV_REQUIRE(qv_import_stream(&s, &schema, &batches, &n, &err) == QV_OK);
  QV_CHECK(s.release == NULL);
  QV_CHECK_EQ_INT(n, 3);
  QV_CHECK_EQ_INT(qv_schema_num_fields(schema), 2);
  QV_CHECK(qv_metadata_find(&schema->metadata, "origin") != NULL);
  qv_strbuf sb = {0};
  for (int64_t i = 0; i < n; i++)
    for (int64_t r = 0; r < batches[i]->length; r++) {
      QV_CHECK(qv_format_row_json(batches[i], r, &sb, NULL) == QV_OK);
      qv_strbuf_append_char(&sb, '\n', NULL);
    }
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb),
                  "{\"n\":0,\"s\":\"x\"}\n{\"n\":10,\"s\":\"y\"}\n"
                  "{\"n\":1,\"s\":\"x\"}\n{\"n\":11,\"s\":null}\n"
                  "{\"n\":2,\"s\":\"x\"}\n{\"n\":12,\"s\":\"y\"}\n");
  qv_strbuf_reset(&sb);
  for (int64_t i = 0; i < n; i++) qv_array_unref(batches[i]);
  free(batches);
  qv_schema_unref(schema);

  /* a producer error surfaces with its text */
  make_stream(&s, 2);
  QV_CHECK_EQ_INT(qv_import_stream(&s, &schema, &batches, &n, &err), QV_EIO);
  QV_CHECK_EQ_STR(err.message,
                  "C stream get_next failed (Input/output error): "
                  "disk on fire at batch 2");
  QV_CHECK(s.release == NULL);
}

/* qv_export_batch_stream over a source of its own: n batches of one int32
 * column (values k*10 + row), then an error when fail_at is reached. */
typedef struct src_ctx {
  qv_schema *schema;
  int next, n, fail_at, released;
} src_ctx;

static const qv_schema *src_schema(void *ctx) { return ((src_ctx *)ctx)->schema; }

static qv_status src_next(void *ctx, qv_array **batch, qv_error *err) {
  src_ctx *c = ctx;
  *batch = NULL;
  if (c->next == c->fail_at) return qv_error_set(err, QV_EIO, "source broke at %d", c->next);
  if (c->next == c->n) return QV_OK;
  int32_t v[3];
  for (int i = 0; i < 3; i++) v[i] = c->next * 10 + i;
  qv_array *col = tb_int32(v, 3);
  qv_array *b = qv_array_new(c->schema->type, 1, 1); /* no validity */
  b->length = 3;
  b->null_count = 0;
  b->children[0] = col;
  *batch = b;
  c->next++;
  return QV_OK;
}

static void src_release(void *ctx) { ((src_ctx *)ctx)->released++; }

static void test_batch_source_stream(void) {
  qv_error err;
  for (int fail = 0; fail < 2; fail++) {
    src_ctx c = {qv_schema_new(tb_child(tb_type(QV_STRUCT), "x", tb_type(QV_INT32))), 0, 3,
                 fail ? 2 : -1, 0};
    qv_batch_source src = {&c, src_schema, src_next, src_release};
    struct ArrowArrayStream s;
    QV_REQUIRE(qv_export_batch_stream(&src, &s, &err) == QV_OK);
    QV_CHECK(s.get_last_error(&s) == NULL);
    qv_stream_import *imp = NULL;
    QV_REQUIRE(qv_stream_import_open(&s, &imp, &err) == QV_OK);
    int64_t rows = 0, batches = 0;
    qv_status st;
    for (;;) {
      qv_array *b = NULL;
      st = qv_stream_import_next(imp, &b, &err);
      if (st != QV_OK || b == NULL) break;
      for (int64_t i = 0; i < b->length; i++)
        QV_CHECK_EQ_INT(qv_array_int_at(b->children[0], i), batches * 10 + i);
      rows += b->length;
      batches++;
      qv_array_unref(b);
    }
    QV_CHECK_EQ_INT(batches, (fail ? 2 : 3));
    QV_CHECK_EQ_INT(rows, 3 * batches);
    if (fail) {
      QV_CHECK_EQ_INT(st, QV_EIO);
      QV_CHECK(strstr(err.message, "source broke at 2") != NULL);
    } else {
      QV_CHECK_EQ_INT(st, QV_OK);
    }
    QV_CHECK_EQ_INT(c.released, 0);
    qv_stream_import_close(imp);
    QV_CHECK_EQ_INT(c.released, 1); /* the stream's release frees the source once */
    qv_schema_unref(c.schema);
  }
  /* A bad argument still releases the source. */
  src_ctx c = {NULL, 0, 0, -1, 0};
  qv_batch_source nonext = {&c, src_schema, NULL, src_release};
  struct ArrowArrayStream s;
  QV_CHECK_EQ_INT(qv_export_batch_stream(&nonext, &s, &err), QV_EARG);
  QV_CHECK_EQ_INT(c.released, 1);
}

static void test_reader_stream_export_errors(void) {
  struct ArrowArrayStream s;
  qv_error err;
  QV_CHECK_EQ_INT(qv_export_reader_stream(NULL, &s, &err), QV_EARG);
}

/* Export a real file's reader: a golden file from the shared test data
 * (QV_SHARED, default ../shared from the repository root). A missing file
 * fails the test. */
static void test_reader_stream_export(void) {
  const char *shared = getenv("QV_SHARED");
  char path[1024];
  snprintf(path, sizeof path,
           "%s/testdata/arrow-testing/data/arrow-ipc-stream/integration/"
           "1.0.0-littleendian/generated_primitive.stream",
           shared ? shared : "../shared");
  qv_reader *r = NULL;
  qv_error err;
  qv_status open_st = qv_reader_open_path(path, NULL, &r, &err);
  if (open_st != QV_OK) fprintf(stderr, "golden file: %s\n", err.message);
  QV_REQUIRE(open_st == QV_OK);
  struct ArrowArrayStream s;
  QV_REQUIRE(qv_export_reader_stream(r, &s, &err) == QV_OK);
  qv_stream_import *imp = NULL;
  qv_status st = qv_stream_import_open(&s, &imp, &err);
  if (st != QV_OK) fprintf(stderr, "%s\n", err.message);
  QV_REQUIRE(st == QV_OK);
  int64_t rows = 0, batches = 0;
  for (;;) {
    qv_array *b = NULL;
    st = qv_stream_import_next(imp, &b, &err);
    if (st != QV_OK) {
      fprintf(stderr, "note: stream export stopped: %s\n", err.message);
      break;
    }
    if (!b) break;
    rows += b->length;
    batches++;
    qv_array_unref(b);
  }
  QV_CHECK_EQ_INT(st, QV_OK);
  QV_CHECK(batches > 0 && rows > 0);
  qv_stream_import_close(imp);
}

int main(void) {
  QV_RUN(test_format_strings);
  QV_RUN(test_metadata_bytes);
  QV_RUN(test_round_trip_every_type);
  QV_RUN(test_view_sizes_buffer);
  QV_RUN(test_null_count_and_validity);
  QV_RUN(test_release_order);
  QV_RUN(test_foreign_producer_lifetime);
  QV_RUN(test_import_errors);
  QV_RUN(test_stream_import);
  QV_RUN(test_batch_source_stream);
  QV_RUN(test_reader_stream_export_errors);
  QV_RUN(test_reader_stream_export);
  return QV_TEST_END();
}
