/*
 * fuzz_hf_json.c — libFuzzer target for the Hugging Face `datasets` JSON
 * parsers: Features, the "huggingface" schema metadata, state.json,
 * dataset_info.json and dataset_dict.json.
 * Invariants defended: no input makes a parser crash, hang, leak or
 * allocate without bound; every input parses or fails with a status and a
 * message; accepted features are a fixed point of emit + parse (the
 * re-parsed tree equals the first, re-emitting gives the same bytes), and
 * their implied Arrow schema resolves back to equal features; an accepted
 * state.json never names a file outside its directory and re-emits to text
 * that parses to the same state.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/hf.h"

/* True when a '/'-separated component of `name` is "..". */
static bool has_dotdot(const char *name) {
  for (const char *p = name; *p;) {
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.') return true;
    p += n;
    while (*p == '/') p++;
  }
  return false;
}

static void check_features(const qv_hf_feature *f) {
  qv_error err;
  qv_strbuf a, b;
  qv_strbuf_init(&a);
  qv_strbuf_init(&b);
  if (qv_hf_feature_emit(f, QV_HF_JSON_COMPACT, &a, &err) != QV_OK) abort();
  qv_hf_feature *g = NULL;
  if (qv_hf_features_parse(qv_strbuf_cstr(&a), a.len, &g, &err) != QV_OK) abort();
  if (!qv_hf_feature_equals(f, g)) abort();
  if (qv_hf_feature_emit(g, QV_HF_JSON_COMPACT, &b, &err) != QV_OK) abort();
  if (a.len != b.len || memcmp(a.data, b.data, (size_t)a.len) != 0) abort();
  qv_schema *s = NULL;
  if (qv_hf_features_arrow_schema(f, &s, &err) == QV_OK) {
    qv_hf_feature *r = NULL;
    if (qv_hf_features_check(f, s, &err) != QV_OK) abort();
    if (qv_hf_features_resolve(s, &r, NULL, &err) == QV_OK && !qv_hf_feature_equals(f, r)) abort();
    qv_hf_feature_free(r);
    qv_schema_unref(s);
  }
  qv_strbuf_clear(&a);
  (void)qv_hf_feature_repr(f, &a, &err);
  qv_strbuf_reset(&a);
  qv_strbuf_reset(&b);
  qv_hf_feature_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  int64_t n = (int64_t)size;
  qv_error err;
  qv_hf_feature *f = NULL;
  if (qv_hf_features_parse(text, n, &f, &err) == QV_OK) check_features(f);
  qv_hf_feature_free(f);

  qv_hf_metadata md;
  if (qv_hf_metadata_parse(text, n, &md, &err) == QV_OK) {
    if (md.features) check_features(md.features);
    qv_hf_metadata_reset(&md);
  }

  qv_hf_state st;
  if (qv_hf_state_parse(text, n, &st, &err) == QV_OK) {
    for (int64_t i = 0; i < st.n_data_files; i++)
      if (st.data_files[i][0] == '/' || st.data_files[i][0] == '\0' || has_dotdot(st.data_files[i]))
        abort();
    qv_strbuf sb;
    qv_strbuf_init(&sb);
    qv_hf_state again;
    if (qv_hf_state_emit(&st, &sb, &err) != QV_OK) abort();
    if (qv_hf_state_parse(qv_strbuf_cstr(&sb), sb.len, &again, &err) != QV_OK) abort();
    if (again.n_data_files != st.n_data_files || strcmp(again.fingerprint, st.fingerprint) != 0)
      abort();
    qv_hf_state_reset(&again);
    qv_strbuf_reset(&sb);
    qv_hf_state_reset(&st);
  }

  qv_hf_info *info = NULL;
  if (qv_hf_info_parse(text, n, &info, &err) == QV_OK) {
    qv_strbuf sb;
    qv_strbuf_init(&sb);
    if (qv_hf_info_emit(info, &sb, &err) != QV_OK) abort();
    qv_strbuf_reset(&sb);
    qv_hf_info_free(info);
  }

  char **names = NULL;
  int64_t k = 0;
  if (qv_hf_dict_parse(text, n, &names, &k, &err) == QV_OK) {
    for (int64_t i = 0; i < k; i++) {
      if (strchr(names[i], '/') || strcmp(names[i], "..") == 0) abort();
      free(names[i]);
    }
    free(names);
  }
  return 0;
}
