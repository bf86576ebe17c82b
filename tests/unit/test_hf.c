/*
 * test_hf.c — unit tests of the Hugging Face `datasets` modules
 * (src/dataset/hf_*.c): Python-compatible JSON emission, features parsing
 * (with exact error texts), emission, implied Arrow types, derivation from
 * Arrow types, schema resolution, labelled rows, state.json /
 * dataset_info.json / dataset_dict.json, shard planning and directory
 * classification. Expected JSON texts are what datasets 5.2.0 writes for
 * the same objects (captured from json.dumps / save_to_disk).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset/hf_internal.h"
#include "quiver/hf.h"
#include "quiver/ipc.h"
#include "qv_build.h"
#include "qv_test.h"

/* Parse features text; return the error message ("" on success). */
static const char *parse_err(const char *json) {
  static qv_error err;
  qv_hf_feature *f = NULL;
  err.message[0] = '\0';
  if (qv_hf_features_parse(json, (int64_t)strlen(json), &f, &err) == QV_OK) err.message[0] = '\0';
  qv_hf_feature_free(f);
  return err.message;
}

/* Parse + emit (compact) into a static buffer. */
static const char *roundtrip(const char *json) {
  static char out[8192];
  qv_hf_feature *f = NULL;
  qv_error err;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  if (qv_hf_features_parse(json, (int64_t)strlen(json), &f, &err) != QV_OK) {
    snprintf(out, sizeof out, "ERROR %s", err.message);
  } else if (qv_hf_feature_emit(f, QV_HF_JSON_COMPACT, &sb, &err) != QV_OK) {
    snprintf(out, sizeof out, "ERROR %s", err.message);
  } else {
    snprintf(out, sizeof out, "%s", qv_strbuf_cstr(&sb));
  }
  qv_strbuf_reset(&sb);
  qv_hf_feature_free(f);
  return out;
}

static void test_pyjson(void) {
  json_error_t jerr;
  json_t *v = json_loads(
      "{\"b\": [1, 1.0, 1e16, 0.1, null, true, false], \"a\": \"\\u00e9\\u007f\\n\\t\\\"\\\\"
      "\\ud83d\\udc0d/\", \"d\": [], \"c\": {}}",
      0, &jerr);
  QV_REQUIRE(v != NULL);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  QV_CHECK(qv_pyjson_dump(&sb, v, -1, false, NULL) == QV_OK);
  /* json.dumps of the same dict */
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb),
                  "{\"b\": [1, 1.0, 1e+16, 0.1, null, true, false], \"a\": "
                  "\"\\u00e9\\u007f\\n\\t\\\"\\\\\\ud83d\\udc0d/\", \"d\": [], \"c\": {}}");
  qv_strbuf_clear(&sb);
  /* json.dumps(..., indent=2, sort_keys=True) */
  QV_CHECK(qv_pyjson_dump(&sb, v, 2, true, NULL) == QV_OK);
  QV_CHECK_EQ_STR(
      qv_strbuf_cstr(&sb),
      "{\n  \"a\": \"\\u00e9\\u007f\\n\\t\\\"\\\\\\ud83d\\udc0d/\",\n  \"b\": [\n    1,\n"
      "    1.0,\n    1e+16,\n    0.1,\n    null,\n    true,\n    false\n  ],\n"
      "  \"c\": {},\n  \"d\": []\n}");
  qv_strbuf_clear(&sb);
  /* invalid UTF-8 becomes U+FFFD */
  QV_CHECK(qv_pyjson_string(&sb,
                            "a\xff"
                            "b\xc3",
                            4, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), "\"a\\ufffdb\\ufffd\"");
  qv_strbuf_reset(&sb);
  json_decref(v);
  /* Python equality: True == 1 == 1.0 */
  json_t *t = json_true(), *one = json_integer(1), *onef = json_real(1.0), *two = json_integer(2);
  QV_CHECK(qv_hf_json_py_equal(t, one) && qv_hf_json_py_equal(one, onef));
  QV_CHECK(!qv_hf_json_py_equal(t, two));
  json_decref(one);
  json_decref(onef);
  json_decref(two);
}

/* The features of a dataset saved by datasets 5.2.0 (its metadata text). */
static const char kMainFeatures[] =
    "{\"i8\": {\"dtype\": \"int8\", \"_type\": \"Value\"}, \"s\": {\"dtype\": \"string\", "
    "\"_type\": \"Value\"}, \"ts\": {\"dtype\": \"timestamp[ms, tz=UTC]\", \"_type\": \"Value\"}, "
    "\"lab\": {\"names\": [\"neg\", \"pos\"], \"_type\": \"ClassLabel\"}, \"seq\": {\"feature\": "
    "{\"dtype\": \"int32\", \"_type\": \"Value\"}, \"_type\": \"List\"}, \"seqf\": {\"feature\": "
    "{\"dtype\": \"float32\", \"_type\": \"Value\"}, \"length\": 2, \"_type\": \"List\"}, "
    "\"seqd\": {\"a\": {\"feature\": {\"dtype\": \"int32\", \"_type\": \"Value\"}, \"_type\": "
    "\"List\"}, \"b\": {\"feature\": {\"dtype\": \"string\", \"_type\": \"Value\"}, \"_type\": "
    "\"List\"}}, \"ll\": {\"feature\": {\"dtype\": \"int64\", \"_type\": \"Value\"}, \"_type\": "
    "\"LargeList\"}, \"a2\": {\"shape\": [2, 3], \"dtype\": \"int32\", \"_type\": \"Array2D\"}, "
    "\"a3\": {\"shape\": [null, 2, 2], \"dtype\": \"float32\", \"_type\": \"Array3D\"}, \"img\": "
    "{\"_type\": \"Image\"}, \"aud\": {\"sampling_rate\": 16000, \"_type\": \"Audio\"}, \"vid\": "
    "{\"_type\": \"Video\"}, \"tr\": {\"languages\": [\"fr\", \"en\"], \"_type\": "
    "\"Translation\"}, \"tvl\": {\"languages\": [\"de\", \"en\", \"fr\"], \"num_languages\": 3, "
    "\"_type\": \"TranslationVariableLanguages\"}, \"nest\": {\"x\": {\"dtype\": \"bool\", "
    "\"_type\": \"Value\"}, \"y\": {\"feature\": {\"dtype\": \"string\", \"_type\": \"Value\"}, "
    "\"_type\": \"List\"}}}";

static void test_features_roundtrip(void) {
  QV_CHECK_EQ_STR(roundtrip(kMainFeatures), kMainFeatures);
  /* legacy forms, normalised as Features.from_dict does */
  QV_CHECK_EQ_STR(
      roundtrip("{\"a\": {\"feature\": {\"x\": {\"dtype\": \"int32\", \"_type\": \"Value\"}}, "
                "\"length\": 2, \"id\": \"q\", \"_type\": \"Sequence\"}}"),
      "{\"a\": {\"x\": {\"feature\": {\"dtype\": \"int32\", \"_type\": \"Value\"}, \"length\": 2, "
      "\"_type\": \"List\"}}}");
  QV_CHECK_EQ_STR(roundtrip("{\"b\": [{\"dtype\": \"double\", \"_type\": \"Value\"}]}"),
                  "{\"b\": {\"feature\": {\"dtype\": \"float64\", \"_type\": \"Value\"}, "
                  "\"_type\": \"List\"}}");
  QV_CHECK_EQ_STR(roundtrip("{\"c\": {\"num_classes\": 3, \"_type\": \"ClassLabel\"}}"),
                  "{\"c\": {\"names\": [\"0\", \"1\", \"2\"], \"_type\": \"ClassLabel\"}}");
  QV_CHECK_EQ_STR(roundtrip("{\"i\": {\"mode\": null, \"decode\": 1, \"id\": 7, \"x\": 1, "
                            "\"_type\": \"Image\"}}"),
                  "{\"i\": {\"id\": 7, \"_type\": \"Image\"}}");
  QV_CHECK_EQ_STR(roundtrip("{\"_type\": {\"dtype\": \"utf8\", \"_type\": \"Value\"}}"),
                  "{\"_type\": {\"dtype\": \"utf8\", \"_type\": \"Value\"}}");
  QV_CHECK_EQ_STR(roundtrip("{\"t\": {\"languages\": [], \"_type\": "
                            "\"TranslationVariableLanguages\"}}"),
                  "{\"t\": {\"_type\": \"TranslationVariableLanguages\"}}");
}

static void test_features_errors(void) {
  QV_CHECK_EQ_STR(parse_err("[1]"), "features: must be an object of columns, found list");
  QV_CHECK_EQ_STR(parse_err("{\"dtype\": \"int8\", \"_type\": \"Value\"}"),
                  "features: must be an object of columns, found a single feature ('_type')");
  QV_CHECK_EQ_STR(parse_err("{\"a\": 5}"),
                  "features['a']: a feature must be an object or a one-element list, found "
                  "integer");
  QV_CHECK_EQ_STR(parse_err("{\"a\": []}"),
                  "features['a']: a list feature must hold one feature, found []");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"_type\": \"Value\"}}"),
                  "features['a']: Value is missing 'dtype'");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"_type\": 3}}"),
                  "features['a']: '_type' must be a string, found integer");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"_type\": \"Nope\"}}"),
                  "features['a']: feature type 'Nope' is not supported");
  QV_CHECK_EQ_STR(
      parse_err("{\"a\": {\"names\": [\"x\", \"y\", \"x\"], \"_type\": \"ClassLabel\"}}"),
      "features['a']: ClassLabel label name 'x' is duplicated");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"names\": [\"x\", 1], \"_type\": \"ClassLabel\"}}"),
                  "features['a']: 'names' must be a list of strings, found integer at index 1");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"_type\": \"ClassLabel\"}}"),
                  "features['a']: ClassLabel needs 'names' (or 'num_classes')");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"num_classes\": 99999999, \"_type\": \"ClassLabel\"}}"),
                  "features['a']: ClassLabel 'num_classes' must be in [0, 1048576], found "
                  "99999999");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"shape\": [null, null], \"dtype\": \"int8\", \"_type\": "
                            "\"Array2D\"}}"),
                  "features['a']: Array2D 'shape' dimension 1 must be a non-negative integer, "
                  "found null");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"shape\": [1, 2], \"dtype\": \"int8\", \"_type\": "
                            "\"Array3D\"}}"),
                  "features['a']: Array3D 'shape' must be a list of 3 dimensions, found a list of "
                  "another length");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"feature\": {\"dtype\": \"int8\", \"_type\": \"Value\"}, "
                            "\"foo\": 1, \"_type\": \"List\"}}"),
                  "features['a']: List got an unexpected key 'foo'");
  QV_CHECK_EQ_STR(
      parse_err("{\"a\": {\"feature\": {\"b\": {\"dtype\": \"int8\"}}, \"_type\": "
                "\"LargeList\"}}"),
      "features['a'].feature['b']['dtype']: a feature must be an object or a one-element "
      "list, found string");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"dtype\": \"timestamp[xs]\", \"_type\": \"Value\"}}"),
                  "features['a']: dtype 'timestamp[xs]' is not a valid timestamp (expected e.g. "
                  "'timestamp[us]' or 'timestamp[us, tz=America/New_York]')");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"dtype\": \"decimal128(39, 2)\", \"_type\": \"Value\"}}"),
                  "features['a']: dtype 'decimal128(39, 2)' is not a valid decimal (expected e.g. "
                  "'decimal128(10, 2)' or 'decimal256(40, 6)')");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"dtype\": \"time32[us]\", \"_type\": \"Value\"}}"),
                  "features['a']: dtype 'time32[us]' is not a valid time type (time32[s|ms] or "
                  "time64[us|ns])");
  QV_CHECK_EQ_STR(parse_err("{\"a\": {\"languages\": 3, \"_type\": \"Translation\"}}"),
                  "features['a']: 'languages' must be a list of strings, found integer");
  QV_CHECK(strncmp(parse_err("{\"a\": }"), "features: invalid JSON at line 1, column 7: ", 44) ==
           0);
  /* nesting is bounded */
  char deep[2 * 200 + 16];
  int n = 0;
  n += sprintf(deep + n, "{\"a\": ");
  for (int i = 0; i < 200; i++) deep[n++] = '[';
  n += sprintf(deep + n, "{}");
  for (int i = 0; i < 200; i++) deep[n++] = ']';
  deep[n++] = '}';
  deep[n] = '\0';
  const char *e = parse_err(deep);
  QV_CHECK(strstr(e, "features nested deeper than 128 levels") != NULL);
}

static qv_hf_feature *parse(const char *json) {
  qv_hf_feature *f = NULL;
  if (qv_hf_features_parse(json, (int64_t)strlen(json), &f, NULL) != QV_OK) return NULL;
  return f;
}

static void test_arrow_types(void) {
  qv_hf_feature *f = parse(kMainFeatures);
  QV_REQUIRE(f != NULL);
  qv_schema *s = NULL;
  QV_REQUIRE(qv_hf_features_arrow_schema(f, &s, NULL) == QV_OK);
  char buf[512];
  static const char *const kWant[] = {
      "int8",
      "string",
      "timestamp[ms, tz=UTC]",
      "int64",
      "list<item: int32>",
      "fixed_size_list<item: float>[2]",
      "struct<a: list<item: int32>, b: list<item: string>>",
      "large_list<item: int64>",
      "list<item: list<item: int32>>",
      "list<item: list<item: list<item: float>>>",
      "struct<bytes: binary, path: string>",
      "struct<bytes: binary, path: string>",
      "struct<bytes: binary, path: string>",
      "struct<en: string, fr: string>",
      "struct<language: list<item: string>, translation: list<item: string>>",
      "struct<x: bool, y: list<item: string>>"};
  QV_REQUIRE(qv_schema_num_fields(s) == 16);
  for (int i = 0; i < 16; i++) {
    qv_type_to_string(qv_schema_field(s, i)->type, buf, sizeof buf);
    QV_CHECK_EQ_STR(buf, kWant[i]);
    QV_CHECK(qv_schema_field(s, i)->nullable);
  }
  const qv_field *a3 = qv_schema_field(s, 9);
  QV_CHECK_EQ_STR(qv_field_extension_name(a3), "datasets.features.features.Array3DExtensionType");
  QV_CHECK_EQ_STR(qv_metadata_find(&a3->metadata, "ARROW:extension:metadata")->value,
                  "[[null, 2, 2], \"float32\"]");
  /* the schema carries {"info": {"features": ...}} exactly as datasets */
  const qv_kv *md = qv_metadata_find(&s->metadata, "huggingface");
  QV_REQUIRE(md != NULL);
  char want[4096];
  snprintf(want, sizeof want, "{\"info\": {\"features\": %s}}", kMainFeatures);
  QV_CHECK_EQ_STR(md->value, want);
  /* the implied schema resolves back to the same features, all from metadata */
  qv_hf_feature *back = NULL;
  bool *from = NULL;
  QV_REQUIRE(qv_hf_features_resolve(s, &back, &from, NULL) == QV_OK);
  QV_CHECK(qv_hf_feature_equals(back, f));
  for (int i = 0; i < 16; i++) QV_CHECK(from[i]);
  QV_CHECK(qv_hf_features_check(f, s, NULL) == QV_OK);
  free(from);
  qv_hf_feature_free(back);
  /* repr */
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  QV_CHECK(qv_hf_feature_repr(qv_hf_feature_get(f, "a3"), &sb, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), "Array3D(shape=(None, 2, 2), dtype='float32')");
  qv_strbuf_clear(&sb);
  QV_CHECK(qv_hf_feature_repr(qv_hf_feature_get(f, "seqd"), &sb, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), "{'a': List(Value('int32')), 'b': List(Value('string'))}");
  qv_strbuf_reset(&sb);
  qv_schema_unref(s);
  qv_hf_feature_free(f);
}

static qv_schema *schema_of(qv_type *st, const char *hf_json) {
  qv_schema *s = qv_schema_new(st);
  if (s && hf_json)
    QV_CHECK(qv_metadata_append(&s->metadata, "huggingface", 11, hf_json, (int64_t)strlen(hf_json),
                                NULL) == QV_OK);
  return s;
}

static void test_derive_and_resolve(void) {
  qv_type *st = tb_type(QV_STRUCT);
  qv_type *ts = qv_type_timestamp(QV_MICRO, "Asia/Tokyo");
  tb_child(st, "ts", ts);
  qv_type *dec = tb_type(QV_DECIMAL128);
  dec->precision = 7, dec->scale = -3;
  tb_child(st, "d", dec);
  qv_type *fsl = tb_type(QV_FIXED_SIZE_LIST);
  fsl->list_size = 2;
  tb_child(fsl, "element", tb_type(QV_INT8));
  tb_child(st, "fl", fsl);
  qv_type *dict = tb_type(QV_DICTIONARY);
  dict->index_type = tb_type(QV_INT32);
  dict->value_type = tb_type(QV_LARGE_STRING);
  tb_child(st, "cat", dict);
  tb_child(st, "lab", tb_type(QV_INT64));
  qv_schema *s = schema_of(st,
                           "{\"info\": {\"features\": {\"lab\": {\"names\": [\"a\"], "
                           "\"_type\": \"ClassLabel\"}, \"cat\": {\"dtype\": \"int8\", "
                           "\"_type\": \"Value\"}}}, \"fingerprint\": \"f00\"}");
  qv_hf_feature *f = NULL;
  bool *from = NULL;
  QV_REQUIRE(qv_hf_features_resolve(s, &f, &from, NULL) == QV_OK);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  QV_CHECK(qv_hf_feature_emit(f, QV_HF_JSON_COMPACT, &sb, NULL) == QV_OK);
  /* Features.from_arrow_schema on the same pyarrow schema */
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb),
                  "{\"ts\": {\"dtype\": \"timestamp[us, tz=Asia/Tokyo]\", \"_type\": \"Value\"}, "
                  "\"d\": {\"dtype\": \"decimal128(7, -3)\", \"_type\": \"Value\"}, \"fl\": "
                  "{\"feature\": {\"dtype\": \"int8\", \"_type\": \"Value\"}, \"length\": 2, "
                  "\"_type\": \"List\"}, \"cat\": {\"dtype\": \"large_string\", \"_type\": "
                  "\"Value\"}, \"lab\": {\"names\": [\"a\"], \"_type\": \"ClassLabel\"}}");
  QV_CHECK(!from[3] && from[4]);
  free(from);
  /* The same features and the metadata's fingerprint from one parse. */
  qv_hf_feature *f2 = NULL;
  char *fp = NULL;
  from = NULL;
  QV_REQUIRE(qv_hf_features_resolve_fingerprint(s, &f2, &from, &fp, NULL) == QV_OK);
  qv_strbuf sb2;
  qv_strbuf_init(&sb2);
  QV_CHECK(qv_hf_feature_emit(f2, QV_HF_JSON_COMPACT, &sb2, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb2), qv_strbuf_cstr(&sb));
  QV_CHECK(fp != NULL && strcmp(fp, "f00") == 0);
  QV_CHECK(!from[3] && from[4]);
  free(fp);
  free(from);
  qv_hf_feature_free(f2);
  qv_strbuf_reset(&sb2);
  qv_hf_feature *meta = parse("{\"ts\": {\"dtype\": \"timestamp[us]\", \"_type\": \"Value\"}}");
  qv_error err;
  QV_CHECK(qv_hf_features_check(meta, s, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "features describe 1 columns but the file has 5");
  qv_hf_feature_free(meta);
  meta = parse(
      "{\"ts\": {\"dtype\": \"timestamp[us]\", \"_type\": \"Value\"}, \"d\": {\"dtype\": "
      "\"int8\", \"_type\": \"Value\"}, \"fl\": {\"dtype\": \"int8\", \"_type\": "
      "\"Value\"}, \"cat\": {\"dtype\": \"int8\", \"_type\": \"Value\"}, \"lab\": "
      "{\"dtype\": \"int8\", \"_type\": \"Value\"}}");
  QV_CHECK(qv_hf_features_check(meta, s, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "column 'ts': features imply timestamp[us] but the file has "
                  "timestamp[us, tz=Asia/Tokyo]");
  qv_hf_feature_free(meta);
  qv_strbuf_reset(&sb);
  qv_hf_feature_free(f);
  qv_schema_unref(s);

  /* types datasets cannot express */
  qv_type *m = tb_type(QV_STRUCT);
  qv_type *lv = tb_type(QV_LIST_VIEW);
  tb_child(lv, "item", tb_type(QV_INT32));
  tb_child(m, "v", lv);
  qv_schema *s2 = schema_of(m, NULL);
  QV_CHECK(qv_hf_features_resolve(s2, &f, NULL, &err) == QV_ENOTSUP);
  QV_CHECK_EQ_STR(err.message,
                  "column['v']: Arrow type list_view<item: int32> has no datasets feature "
                  "(datasets cannot load it either)");
  qv_schema_unref(s2);
  /* bad metadata is an error, not ignored */
  qv_type *one = tb_child(tb_type(QV_STRUCT), "a", tb_type(QV_INT8));
  s2 = schema_of(one, "{\"info\": {\"features\": {\"a\": 3}}}");
  QV_CHECK(qv_hf_features_resolve(s2, &f, NULL, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "huggingface metadata: features['a']: a feature must be an object or a "
                  "one-element list, found integer");
  char *fp2 = (char *)"untouched";
  QV_CHECK(qv_hf_features_resolve_fingerprint(s2, &f, NULL, &fp2, &err) == QV_EINVAL);
  QV_CHECK(strcmp(fp2, "untouched") == 0); /* nothing returned on failure */
  qv_schema_unref(s2);
  /* No metadata, or metadata without a fingerprint: NULL. */
  s2 = schema_of(tb_child(tb_type(QV_STRUCT), "a", tb_type(QV_INT8)),
                 "{\"info\": {\"features\": {\"a\": {\"dtype\": \"int8\", \"_type\": "
                 "\"Value\"}}}}");
  fp2 = NULL;
  QV_CHECK(qv_hf_features_resolve_fingerprint(s2, &f, NULL, &fp2, &err) == QV_OK);
  QV_CHECK(fp2 == NULL);
  qv_hf_feature_free(f);
  qv_schema_unref(s2);
  s2 = schema_of(tb_child(tb_type(QV_STRUCT), "a", tb_type(QV_INT8)), NULL);
  QV_CHECK(qv_hf_features_resolve_fingerprint(s2, &f, NULL, &fp2, &err) == QV_OK);
  QV_CHECK(fp2 == NULL && f != NULL && f->n_children == 1);
  qv_hf_feature_free(f);
  qv_schema_unref(s2);
}

static void test_metadata(void) {
  qv_hf_metadata md;
  const char *txt =
      "{\"info\": {\"features\": {\"x\": {\"dtype\": \"int64\", \"_type\": \"Value\"}}}, "
      "\"fingerprint\": \"b095d079253eedf3\"}";
  QV_REQUIRE(qv_hf_metadata_parse(txt, (int64_t)strlen(txt), &md, NULL) == QV_OK);
  QV_CHECK_EQ_STR(md.fingerprint, "b095d079253eedf3");
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  QV_CHECK(qv_hf_metadata_emit(md.features, md.fingerprint, &sb, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), txt);
  qv_hf_metadata_reset(&md);
  qv_strbuf_reset(&sb);
  qv_error err;
  QV_CHECK(qv_hf_metadata_parse("{\"fingerprint\": 5}", 18, &md, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "huggingface metadata: 'fingerprint' must be a string, found integer");
  QV_CHECK(qv_hf_metadata_parse("{\"fingerprint\": \"a/b\"}", 22, &md, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "huggingface metadata: invalid fingerprint 'a/b': character '/' at byte 1 is "
                  "not allowed (none of <>:/\\|?* or control characters)");
  QV_CHECK(qv_hf_metadata_parse("{}", 2, &md, &err) == QV_OK);
  QV_CHECK(md.features == NULL && md.fingerprint == NULL);
}

static void test_labelled_rows(void) {
  int64_t labels[4] = {0, 1, -1, 7};
  qv_array *lab = tb_prim(tb_type(QV_INT64), 4, "1110", labels, sizeof labels);
  int64_t tags[5] = {2, 0, 1, 2, 2};
  qv_array *tag_values = tb_prim(tb_type(QV_INT64), 5, NULL, tags, sizeof tags);
  int32_t offs[5] = {0, 2, 2, 5, 5};
  qv_buffer *lb[2] = {NULL, tb_buf(offs, sizeof offs)};
  qv_type *lt = tb_child(tb_type(QV_LIST), "item", tb_type(QV_INT64));
  qv_array *tag = tb_array(lt, 4, 2, lb, 1, &tag_values);
  qv_type *bt = tb_type(QV_STRUCT);
  tb_child(bt, "label", tb_type(QV_INT64));
  tb_child(bt, "tags", qv_type_ref(lt));
  qv_array *kids[2] = {lab, tag};
  qv_array *batch = tb_array(bt, 4, 1, (qv_buffer *[]){NULL}, 2, kids);
  qv_hf_feature *f = parse(
      "{\"label\": {\"names\": [\"neg\", \"p\\\"os\"], \"_type\": "
      "\"ClassLabel\"}, \"tags\": [{\"names\": [\"O\", \"B\", \"I\"], "
      "\"_type\": \"ClassLabel\"}]}");
  QV_REQUIRE(batch != NULL && f != NULL);
  static const char *const kWant[4] = {
      "{\"label\":\"neg\",\"tags\":[\"I\",\"O\"]}",
      "{\"label\":\"p\\\"os\",\"tags\":[]}",
      "{\"label\":-1,\"tags\":[\"B\",\"I\",\"I\"]}",
      "{\"label\":null,\"tags\":[]}",
  };
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  for (int i = 0; i < 4; i++) {
    qv_strbuf_clear(&sb);
    QV_CHECK(qv_hf_format_row_json(batch, i, f, &sb, NULL) == QV_OK);
    QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), kWant[i]);
  }
  /* id 7 of a 2-name label prints as the number */
  labels[0] = 0;
  qv_strbuf_clear(&sb);
  memcpy(lab->buffers[1]->data, (int64_t[]){7}, 8);
  QV_CHECK(qv_hf_format_row_json(batch, 0, f, &sb, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), "{\"label\":7,\"tags\":[\"I\",\"O\"]}");
  /* corrupt offsets are an error, not a read out of bounds */
  memcpy(tag->buffers[1]->data + 4, (int32_t[]){99}, 4);
  qv_error err;
  QV_CHECK(qv_hf_format_row_json(batch, 0, f, &sb, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "list array: element 0 has out-of-bounds offsets");
  qv_strbuf_reset(&sb);
  qv_hf_feature_free(f);
  qv_array_unref(batch);
}

static const char kState[] =
    "{\n  \"_data_files\": [\n    {\n      \"filename\": \"data-00000-of-00001.arrow\"\n    }\n"
    "  ],\n  \"_fingerprint\": \"f0ed07064a142514\",\n  \"_format_columns\": [\n    \"x\"\n  ],\n"
    "  \"_format_kwargs\": {},\n  \"_format_type\": \"numpy\",\n  \"_output_all_columns\": false,\n"
    "  \"_split\": \"train\"\n}";

static const char *state_err(const char *json) {
  static qv_error err;
  qv_hf_state st;
  err.message[0] = '\0';
  if (qv_hf_state_parse(json, (int64_t)strlen(json), &st, &err) == QV_OK) qv_hf_state_reset(&st);
  return err.message;
}

static void test_state(void) {
  qv_hf_state st;
  QV_REQUIRE(qv_hf_state_parse(kState, (int64_t)strlen(kState), &st, NULL) == QV_OK);
  QV_CHECK_EQ_INT(st.n_data_files, 1);
  QV_CHECK_EQ_STR(st.data_files[0], "data-00000-of-00001.arrow");
  QV_CHECK_EQ_STR(st.format_type, "numpy");
  QV_CHECK(st.has_format_columns && st.n_format_columns == 1);
  QV_CHECK(st.split && st.fingerprint);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  QV_CHECK(qv_hf_state_emit(&st, &sb, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), kState);
  qv_strbuf_reset(&sb);
  qv_hf_state_reset(&st);
  /* nested kwargs keep sort_keys */
  const char *kw =
      "{\"_data_files\": [], \"_fingerprint\": \"x\", \"_format_columns\": null, "
      "\"_format_kwargs\": {\"z\": {\"b\": 1, \"a\": [2]}, \"dtype\": \"f\"}, "
      "\"_format_type\": null, \"_output_all_columns\": true, \"_split\": null}";
  QV_REQUIRE(qv_hf_state_parse(kw, (int64_t)strlen(kw), &st, NULL) == QV_OK);
  QV_CHECK_EQ_STR(st.format_kwargs, "{\"dtype\": \"f\", \"z\": {\"a\": [2], \"b\": 1}}");
  qv_strbuf_init(&sb);
  QV_CHECK(qv_hf_state_emit(&st, &sb, NULL) == QV_OK);
  QV_CHECK_EQ_STR(
      qv_strbuf_cstr(&sb),
      "{\n  \"_data_files\": [],\n  \"_fingerprint\": \"x\",\n  \"_format_columns\": "
      "null,\n  \"_format_kwargs\": {\n    \"dtype\": \"f\",\n    \"z\": {\n      "
      "\"a\": [\n        2\n      ],\n      \"b\": 1\n    }\n  },\n  "
      "\"_format_type\": null,\n  \"_output_all_columns\": true,\n  \"_split\": null\n}");
  qv_strbuf_reset(&sb);
  qv_hf_state_reset(&st);

  QV_CHECK_EQ_STR(state_err("{\"_data_files\": [{\"filename\": \"../x.arrow\"}]}"),
                  "state.json: _data_files[0].filename '../x.arrow' escapes the dataset "
                  "directory (contains '..')");
  QV_CHECK_EQ_STR(state_err("{\"_data_files\": [{\"filename\": \"a\"}, {\"filename\": "
                            "\"/tmp/x\"}]}"),
                  "state.json: _data_files[1].filename '/tmp/x' escapes the dataset directory "
                  "(absolute path)");
  QV_CHECK_EQ_STR(state_err("{\"_data_files\": [{\"filename\": \"a/b/../../..\"}]}"),
                  "state.json: _data_files[0].filename 'a/b/../../..' escapes the dataset "
                  "directory (contains '..')");
  QV_CHECK_EQ_STR(state_err("{\"_data_files\": [{\"filename\": \"\"}]}"),
                  "state.json: _data_files[0].filename is empty");
  QV_CHECK_EQ_STR(state_err("{\"_data_files\": [\"x.arrow\"]}"),
                  "state.json: _data_files[0] must be {\"filename\": STRING}, found string");
  QV_CHECK_EQ_STR(state_err("{\"_data_files\": []}"), "state.json: missing '_fingerprint'");
  QV_CHECK_EQ_STR(state_err("{\"_data_files\": [], \"_fingerprint\": \"x\", \"_format_columns\": "
                            "null, \"_format_kwargs\": [], \"_format_type\": null}"),
                  "state.json: '_format_kwargs' must be an object, found list");
  QV_CHECK_EQ_STR(state_err("[]"), "state.json: must be an object, found list");
  QV_CHECK_EQ_STR(state_err("{\"_data_files\": [], \"_fingerprint\": \"\"}"),
                  "state.json: '_fingerprint': invalid fingerprint '': it must be a non-empty "
                  "string");
  /* names that stay inside are fine */
  QV_CHECK(qv_hf_check_relative_name("n", "sub/./a..b/data.arrow", NULL) == QV_OK);
}

/* dataset_info.json of a load_dataset("json") cache (compact, unsorted) and
 * the file save_to_disk wrote for the same info. */
static const char kCacheInfo[] =
    "{\"description\": \"\", \"citation\": \"\", \"homepage\": \"\", \"license\": \"\", "
    "\"features\": {\"x\": {\"dtype\": \"int64\", \"_type\": \"Value\"}, \"t\": {\"dtype\": "
    "\"string\", \"_type\": \"Value\"}}, \"builder_name\": \"json\", \"dataset_name\": \"json\", "
    "\"config_name\": \"default\", \"version\": {\"version_str\": \"0.0.0\", \"major\": 0, "
    "\"minor\": 0, \"patch\": 0}, \"splits\": {\"train\": {\"name\": \"train\", \"num_bytes\": "
    "140, \"num_examples\": 10, \"dataset_name\": \"json\"}}, \"download_size\": 200, "
    "\"dataset_size\": 140, \"size_in_bytes\": 340, \"unknown_key\": 1, \"post_processed\": null}";
static const char kSavedInfo[] =
    "{\n  \"builder_name\": \"json\",\n  \"citation\": \"\",\n  \"config_name\": \"default\",\n"
    "  \"dataset_name\": \"json\",\n  \"dataset_size\": 140,\n  \"description\": \"\",\n"
    "  \"download_size\": 200,\n  \"features\": {\n    \"x\": {\n      \"dtype\": \"int64\",\n"
    "      \"_type\": \"Value\"\n    },\n    \"t\": {\n      \"dtype\": \"string\",\n"
    "      \"_type\": \"Value\"\n    }\n  },\n  \"homepage\": \"\",\n  \"license\": \"\",\n"
    "  \"size_in_bytes\": 340,\n  \"splits\": {\n    \"train\": {\n      \"name\": \"train\",\n"
    "      \"num_bytes\": 140,\n      \"num_examples\": 10,\n      \"dataset_name\": \"json\"\n"
    "    }\n  },\n  \"version\": {\n    \"version_str\": \"0.0.0\",\n    \"major\": 0,\n"
    "    \"minor\": 0,\n    \"patch\": 0\n  }\n}";

static void test_info_and_dict(void) {
  qv_hf_info *info = NULL;
  QV_REQUIRE(qv_hf_info_parse(kCacheInfo, (int64_t)strlen(kCacheInfo), &info, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_hf_info_string(info, "builder_name"), "json");
  QV_CHECK(qv_hf_info_features(info) != NULL);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  QV_CHECK(qv_hf_info_emit(info, &sb, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), kSavedInfo);
  qv_hf_info_free(info);
  /* a fresh dataset's info (Dataset.from_dict + save_to_disk) */
  qv_hf_feature *f = parse("{\"a\": {\"dtype\": \"int8\", \"_type\": \"Value\"}}");
  QV_REQUIRE(qv_hf_info_new(f, &info, NULL) == QV_OK);
  qv_strbuf_clear(&sb);
  QV_CHECK(qv_hf_info_emit(info, &sb, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb),
                  "{\n  \"citation\": \"\",\n  \"description\": \"\",\n  \"features\": {\n    "
                  "\"a\": {\n      \"dtype\": \"int8\",\n      \"_type\": \"Value\"\n    }\n  },\n"
                  "  \"homepage\": \"\",\n  \"license\": \"\"\n}");
  qv_hf_info_free(info);
  qv_hf_feature_free(f);

  char **names = NULL;
  int64_t n = 0;
  const char *dd = "{\"splits\": [\"train\", \"test\"]}";
  QV_REQUIRE(qv_hf_dict_parse(dd, (int64_t)strlen(dd), &names, &n, NULL) == QV_OK);
  QV_CHECK_EQ_INT(n, 2);
  qv_strbuf_clear(&sb);
  QV_CHECK(qv_hf_dict_emit(names, n, &sb, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_strbuf_cstr(&sb), dd);
  for (int64_t i = 0; i < n; i++) free(names[i]);
  free(names);
  qv_strbuf_reset(&sb);
  qv_error err;
  QV_CHECK(qv_hf_dict_parse("{\"splits\": [\"a/b\"]}", 19, &names, &n, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "dataset_dict.json: split name 'a/b' is not a single directory name");
  QV_CHECK(qv_hf_dict_parse("{\"splits\": [\"a\", \"a\"]}", 22, &names, &n, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "dataset_dict.json: split 'a' is listed twice");
  QV_CHECK(qv_hf_dict_parse("{\"split\": []}", 13, &names, &n, &err) == QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "dataset_dict.json: expected {\"splits\": [NAME, ...]}, found no 'splits' list");
}

static void test_shards(void) {
  char name[64];
  qv_hf_shard_name(3, 12, name, sizeof name);
  QV_CHECK_EQ_STR(name, "data-00003-of-00012.arrow");
  qv_hf_shard_name(3, 123456, name, sizeof name);
  QV_CHECK_EQ_STR(name, "data-00003-of-123456.arrow");
  /* int(nbytes / max) + 1, >= num_proc, <= rows */
  QV_CHECK_EQ_INT(qv_hf_plan_num_shards(0, 0, 0, 10), 1);
  QV_CHECK_EQ_INT(qv_hf_plan_num_shards(0, 0, 0, 0), 0);
  QV_CHECK_EQ_INT(qv_hf_plan_num_shards(499999999, 0, 0, 1000), 1);
  QV_CHECK_EQ_INT(qv_hf_plan_num_shards(500000000, 0, 0, 1000), 2);
  QV_CHECK_EQ_INT(qv_hf_plan_num_shards(1234, 300, 0, 7), 5);
  QV_CHECK_EQ_INT(qv_hf_plan_num_shards(1234, 300, 0, 3), 3);
  QV_CHECK_EQ_INT(qv_hf_plan_num_shards(10, 300, 4, 100), 4);
  int64_t s, e;
  /* 7 rows over 5 shards: 2, 2, 1, 1, 1 */
  int64_t want[5][2] = {{0, 2}, {2, 4}, {4, 5}, {5, 6}, {6, 7}};
  for (int i = 0; i < 5; i++) {
    qv_hf_shard_range(7, 5, i, &s, &e);
    QV_CHECK(s == want[i][0] && e == want[i][1]);
  }
  int64_t v;
  QV_CHECK(qv_hf_parse_size("500MB", &v, NULL) == QV_OK && v == 500000000);
  QV_CHECK(qv_hf_parse_size("500mb", &v, NULL) == QV_OK && v == 62500000);
  QV_CHECK(qv_hf_parse_size("1GiB", &v, NULL) == QV_OK && v == (INT64_C(1) << 30));
  QV_CHECK(qv_hf_parse_size("2kib", &v, NULL) == QV_OK && v == 2048);
  QV_CHECK(qv_hf_parse_size("123", &v, NULL) == QV_OK && v == 123);
  qv_error err;
  QV_CHECK(qv_hf_parse_size("5XB", &v, &err) == QV_EARG);
  QV_CHECK_EQ_STR(err.message,
                  "size '5XB' is not in a valid format: use an integer followed by a unit, e.g. "
                  "'500MB' or '1GiB'");
  QV_CHECK(qv_hf_parse_size("99999999999PB", &v, &err) == QV_EARG);
  QV_CHECK(qv_hf_parse_size("MB", &v, &err) == QV_EARG);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static bool copy_file(const char *from, const char *to) {
  qv_buffer *b = NULL;
  if (qv_buffer_map_file(from, &b, NULL, NULL) != QV_OK) return false;
  FILE *f = fopen(to, "wb");
  bool ok = f && fwrite(b->data, 1, (size_t)b->size, f) == (size_t)b->size;
  if (f) fclose(f);
  qv_buffer_unref(b);
  return ok;
}

static void test_dir_open(void) {
  const char *shared = getenv("QV_SHARED");
  QV_REQUIRE(shared != NULL);
  char src[1024], root[] = "/tmp/qv-hf-test-XXXXXX", p[1200], q[1200];
  snprintf(src, sizeof src,
           "%s/testdata/arrow-testing/data/arrow-ipc-stream/integration/1.0.0-littleendian/"
           "generated_primitive.stream",
           shared);
  QV_REQUIRE(mkdtemp(root) != NULL);
  snprintf(p, sizeof p, "%s/ds", root);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/ds/data-00000-of-00001.arrow", root);
  QV_REQUIRE(copy_file(src, p));
  snprintf(p, sizeof p, "%s/ds/state.json", root);
  write_file(p,
             "{\"_data_files\": [{\"filename\": \"data-00000-of-00001.arrow\"}], "
             "\"_fingerprint\": \"abc\", \"_format_columns\": null, \"_format_kwargs\": {}, "
             "\"_format_type\": null, \"_output_all_columns\": false, \"_split\": null}");
  snprintf(p, sizeof p, "%s/ds/dataset_info.json", root);
  write_file(p, "{}");
  snprintf(p, sizeof p, "%s/ds", root);
  qv_hf_dir *d = NULL;
  qv_error err;
  QV_REQUIRE(qv_hf_dir_open(p, &d, &err) == QV_OK);
  QV_CHECK(d->layout == QV_HF_LAYOUT_DATASET && d->n_splits == 1);
  QV_CHECK_EQ_INT(d->splits[0].n_files, 1);
  QV_CHECK_EQ_STR(d->splits[0].state->fingerprint, "abc");
  qv_hf_dir_free(d);
  /* a symlinked data file that leads outside */
  snprintf(q, sizeof q, "%s/ds/data-00000-of-00001.arrow", root);
  snprintf(p, sizeof p, "%s/outside.arrow", root);
  QV_REQUIRE(rename(q, p) == 0);
  QV_REQUIRE(symlink(p, q) == 0);
  snprintf(p, sizeof p, "%s/ds", root);
  QV_CHECK(qv_hf_dir_open(p, &d, &err) == QV_EINVAL);
  char want[2048];
  snprintf(want, sizeof want,
           "%s/ds/state.json: _data_files[0].filename 'data-00000-of-00001.arrow' escapes the "
           "dataset directory (resolves to '%s/outside.arrow')",
           root, root);
  QV_CHECK_EQ_STR(err.message, want);
  /* a missing data file */
  unlink(q);
  QV_CHECK(qv_hf_dir_open(p, &d, &err) == QV_EINVAL);
  snprintf(want, sizeof want,
           "%s/ds/state.json: _data_files[0].filename 'data-00000-of-00001.arrow': no such file",
           root);
  QV_CHECK_EQ_STR(err.message, want);
  /* a DatasetDict over it, and a cache directory of .arrow files */
  snprintf(q, sizeof q, "%s/outside.arrow", root);
  snprintf(p, sizeof p, "%s/ds/data-00000-of-00001.arrow", root);
  QV_REQUIRE(rename(q, p) == 0);
  snprintf(p, sizeof p, "%s/dataset_dict.json", root);
  write_file(p, "{\"splits\": [\"ds\"]}");
  QV_REQUIRE(qv_hf_dir_open(root, &d, &err) == QV_OK);
  QV_CHECK(d->layout == QV_HF_LAYOUT_DATASET_DICT && d->n_splits == 1);
  QV_CHECK_EQ_STR(d->splits[0].name, "ds");
  qv_hf_dir_free(d);
  unlink(p);
  snprintf(p, sizeof p, "%s/ds", root);
  QV_CHECK(qv_hf_dir_open(root, &d, &err) == QV_EINVAL);
  snprintf(want, sizeof want,
           "%s: not a datasets directory: no state.json, dataset_dict.json or *.arrow file", root);
  QV_CHECK_EQ_STR(err.message, want);
  snprintf(p, sizeof p, "%s/ds/state.json", root);
  unlink(p);
  snprintf(p, sizeof p, "%s/ds", root);
  QV_REQUIRE(qv_hf_dir_open(p, &d, &err) == QV_OK);
  /* (dataset_info.json without "splits": no builder split) */
  QV_CHECK(d->layout == QV_HF_LAYOUT_CACHE && d->n_splits == 0 && d->n_files == 1);
  QV_CHECK(d->files[0].role == QV_HF_FILE_DATA && d->files[0].source == 0);
  QV_CHECK(d->n_sources == 1 && d->sources[0].kind == QV_HF_SOURCE_FILE);
  QV_CHECK_EQ_STR(d->sources[0].name, "data-00000-of-00001.arrow");
  qv_hf_dir_free(d);
  /* clean up */
  snprintf(p, sizeof p, "%s/ds/data-00000-of-00001.arrow", root);
  unlink(p);
  snprintf(p, sizeof p, "%s/ds/dataset_info.json", root);
  unlink(p);
  snprintf(p, sizeof p, "%s/ds", root);
  rmdir(p);
  rmdir(root);
}

int main(void) {
  QV_RUN(test_pyjson);
  QV_RUN(test_features_roundtrip);
  QV_RUN(test_features_errors);
  QV_RUN(test_arrow_types);
  QV_RUN(test_derive_and_resolve);
  QV_RUN(test_metadata);
  QV_RUN(test_labelled_rows);
  QV_RUN(test_state);
  QV_RUN(test_info_and_dict);
  QV_RUN(test_shards);
  QV_RUN(test_dir_open);
  return QV_TEST_END();
}
