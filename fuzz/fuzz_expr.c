/*
 * fuzz_expr.c — libFuzzer target for the expression language
 * (include/quiver/expr.h). Invariant defended: no text makes the parser,
 * the binder or the evaluator crash, hang, leak or read out of bounds;
 * every input either parses, binds and evaluates, or fails with a status
 * and a message. Each input is parsed, rendered and re-parsed (the
 * rendering must parse back to itself), bound against a fixed schema with
 * every supported kind of column, and evaluated on a small fixed batch
 * (with nulls, a struct parent, a dictionary and views) and on a slice of
 * it, twice each (working memory and the dictionary cache are reused).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/expr.h"

#define ROWS 7

static qv_buffer *buf_of(const void *data, int64_t n) {
  qv_buffer *b = NULL;
  if (qv_buffer_alloc(n, &b, NULL) != QV_OK) abort();
  if (n) memcpy(b->data, data, (size_t)n);
  return b;
}

static qv_array *arr(qv_type *t, int32_t nb, int32_t nc) {
  qv_array *a = qv_array_new(t, nb, nc);
  qv_type_unref(t);
  a->length = ROWS;
  a->null_count = -1;
  return a;
}

static const uint8_t VALID[1] = {0x6f}; /* rows 4 and 7.. null */

static qv_array *prim(qv_type_id id, const void *values, int w, bool nulls) {
  qv_array *a = arr(qv_type_new(id), 2, 0);
  if (nulls) a->buffers[0] = buf_of(VALID, 1);
  a->buffers[1] = buf_of(values, (int64_t)w * ROWS);
  return a;
}

static qv_array *strings(qv_type_id id, const char *const *s) {
  qv_array *a = arr(qv_type_new(id), 3, 0);
  int32_t offs[ROWS + 1];
  char data[256];
  int32_t pos = 0;
  for (int i = 0; i < ROWS; i++) {
    offs[i] = pos;
    size_t n = strlen(s[i]);
    memcpy(data + pos, s[i], n);
    pos += (int32_t)n;
  }
  offs[ROWS] = pos;
  a->buffers[0] = buf_of(VALID, 1);
  a->buffers[1] = buf_of(offs, sizeof offs);
  a->buffers[2] = buf_of(data, pos);
  return a;
}

static qv_array *make_batch(void) {
  static const int8_t i8[ROWS] = {1, -2, 3, 127, -128, 0, 5};
  static const int32_t i32[ROWS] = {10, 20, -30, 40, 50, 2147483647, 0};
  static const int64_t i64[ROWS] = {INT64_MAX, INT64_MIN, 0, -1, 1, 100, 7};
  static const uint64_t u64[ROWS] = {0, UINT64_MAX, 1, (uint64_t)1 << 63, 5, 6, 7};
  static const double f64[ROWS] = {1.5, -0.0, 1e308, -1e308, 0.25, 3.0, 0.0};
  static const uint16_t f16[ROWS] = {0x3C00, 0x7E00, 0x7C00, 0x8000, 0x3800, 0, 0x4500};
  static const uint8_t bits[1] = {0x35};
  static const char *const s[ROWS] = {"hello", "", "abc", "h\xc3\xa9llo", "xyz", "a", "bb"};
  static const int8_t idx[ROWS] = {0, 1, 2, 1, 0, 2, 1};
  static const char *const dv[ROWS] = {"red", "green", "blue", "", "", "", ""};
  static const int32_t lofs[ROWS + 1] = {0, 1, 1, 3, 5, 5, 6, 7};

  qv_type *st = qv_type_new(QV_STRUCT);
  qv_type_add_child(st, "i8", true, qv_type_new(QV_INT8), NULL, NULL);
  qv_type_add_child(st, "i32", true, qv_type_new(QV_INT32), NULL, NULL);
  qv_type_add_child(st, "i64", true, qv_type_new(QV_INT64), NULL, NULL);
  qv_type_add_child(st, "u64", true, qv_type_new(QV_UINT64), NULL, NULL);
  qv_type_add_child(st, "f64", true, qv_type_new(QV_DOUBLE), NULL, NULL);
  qv_type_add_child(st, "f16", true, qv_type_new(QV_HALF_FLOAT), NULL, NULL);
  qv_type_add_child(st, "b", true, qv_type_new(QV_BOOL), NULL, NULL);
  qv_type_add_child(st, "s", true, qv_type_new(QV_STRING), NULL, NULL);
  qv_type_add_child(st, "bin", true, qv_type_new(QV_LARGE_BINARY), NULL, NULL);
  qv_type_add_child(st, "sv", true, qv_type_new(QV_STRING_VIEW), NULL, NULL);
  qv_type *dt = qv_type_new(QV_DICTIONARY);
  dt->index_type = qv_type_new(QV_INT8);
  dt->value_type = qv_type_new(QV_STRING);
  qv_type_add_child(st, "d", true, dt, NULL, NULL);
  qv_type_add_child(st, "l", true, qv_type_list_of(QV_LIST, qv_type_new(QV_INT32)), NULL, NULL);
  qv_type *inner = qv_type_new(QV_STRUCT);
  qv_type_add_child(inner, "x", true, qv_type_new(QV_INT32), NULL, NULL);
  qv_type_add_child(inner, "y", true, qv_type_new(QV_STRING), NULL, NULL);
  qv_type_add_child(st, "st", true, inner, NULL, NULL);
  qv_type_add_child(st, "n", true, qv_type_new(QV_NA), NULL, NULL);
  qv_type_add_child(st, "ts", true, qv_type_timestamp(QV_MILLI, NULL), NULL, NULL);

  qv_array *b = qv_array_new(st, 1, st->n_children);
  b->length = ROWS;
  b->null_count = 0;
  int k = 0;
  b->children[k++] = prim(QV_INT8, i8, 1, true);
  b->children[k++] = prim(QV_INT32, i32, 4, false);
  b->children[k++] = prim(QV_INT64, i64, 8, true);
  b->children[k++] = prim(QV_UINT64, u64, 8, false);
  b->children[k++] = prim(QV_DOUBLE, f64, 8, true);
  b->children[k++] = prim(QV_HALF_FLOAT, f16, 2, false);
  qv_array *ba = arr(qv_type_new(QV_BOOL), 2, 0);
  ba->buffers[0] = buf_of(VALID, 1);
  ba->buffers[1] = buf_of(bits, 1);
  b->children[k++] = ba;
  b->children[k++] = strings(QV_STRING, s);
  qv_array *bin = arr(qv_type_new(QV_LARGE_BINARY), 3, 0);
  int64_t loffs[ROWS + 1] = {0, 1, 2, 3, 4, 5, 6, 7};
  bin->buffers[1] = buf_of(loffs, sizeof loffs);
  bin->buffers[2] = buf_of(
      "\x00\xff\x80"
      "abcd",
      7);
  b->children[k++] = bin;
  qv_array *sv = arr(qv_type_new(QV_STRING_VIEW), 3, 0);
  uint8_t views[16 * ROWS];
  memset(views, 0, sizeof views);
  const char *longs = "a string longer than twelve bytes";
  for (int i = 0; i < ROWS; i++) {
    int32_t n = i % 2 ? (int32_t)strlen(longs) - i : i;
    memcpy(views + 16 * i, &n, 4);
    if (n <= 12) {
      memcpy(views + 16 * i + 4, longs, (size_t)n);
    } else {
      int32_t bi = 0, off = i;
      memcpy(views + 16 * i + 4, longs + i, 4);
      memcpy(views + 16 * i + 8, &bi, 4);
      memcpy(views + 16 * i + 12, &off, 4);
    }
  }
  sv->buffers[0] = buf_of(VALID, 1);
  sv->buffers[1] = buf_of(views, sizeof views);
  sv->buffers[2] = buf_of(longs, (int64_t)strlen(longs));
  b->children[k++] = sv;
  qv_array *d = prim(QV_INT8, idx, 1, true);
  qv_type_unref(d->type);
  d->type = qv_type_ref(dt);
  d->dictionary = strings(QV_STRING, dv);
  d->dictionary->length = 3;
  b->children[k++] = d;
  qv_array *l = arr(qv_type_ref(st->children[11].type), 2, 1);
  l->buffers[0] = buf_of(VALID, 1);
  l->buffers[1] = buf_of(lofs, sizeof lofs);
  l->children[0] = prim(QV_INT32, i32, 4, false);
  l->children[0]->length = ROWS;
  l->children[0]->offset = 0;
  b->children[k++] = l;
  qv_array *sa = arr(qv_type_ref(inner), 1, 2);
  static const uint8_t sval[1] = {0x5b};
  sa->buffers[0] = buf_of(sval, 1);
  sa->children[0] = prim(QV_INT32, i32, 4, true);
  sa->children[1] = strings(QV_STRING, s);
  b->children[k++] = sa;
  b->children[k++] = arr(qv_type_new(QV_NA), 0, 0);
  qv_array *ts = prim(QV_INT64, i64, 8, true);
  qv_type_unref(ts->type);
  ts->type = qv_type_ref(st->children[14].type);
  b->children[k++] = ts;
  return b;
}

static qv_array *g_batch;
static qv_array *g_slice;
static qv_schema *g_schema;

static void eval_all(qv_bound_expr *b) {
  qv_error err;
  const qv_array *batches[2] = {g_batch, g_slice};
  for (int rep = 0; rep < 2; rep++) {
    for (int k = 0; k < 2; k++) {
      qv_array *out = NULL;
      if (qv_bound_expr_eval(b, batches[k], &out, &err) == QV_OK) {
        if (qv_array_validate(out, QV_VALIDATE_FULL, "result", &err) != QV_OK) abort();
        qv_array_unref(out);
      }
      uint8_t bits[2];
      int64_t count;
      (void)qv_bound_expr_select(b, batches[k], bits, &count, &err);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_batch) {
    g_batch = make_batch();
    g_schema = qv_schema_new(qv_type_ref(g_batch->type));
    qv_error err;
    if (qv_array_validate(g_batch, QV_VALIDATE_DEFAULT, "batch", &err) != QV_OK) {
      fprintf(stderr, "fuzz_expr: bad fixed batch: %s\n", err.message);
      abort();
    }
    if (qv_array_slice(g_batch, 2, 4, &g_slice, &err) != QV_OK) abort();
  }
  qv_error err;
  qv_expr *e = NULL;
  if (qv_expr_parse((const char *)data, (int64_t)size, &e, &err) != QV_OK) return 0;
  /* The canonical rendering parses back to the same rendering. */
  qv_strbuf r1, r2;
  qv_strbuf_init(&r1);
  qv_strbuf_init(&r2);
  if (qv_expr_to_string(e, &r1, &err) == QV_OK) {
    qv_expr *again = NULL;
    if (qv_expr_parse(r1.data, r1.len, &again, &err) == QV_OK) {
      if (qv_expr_to_string(again, &r2, &err) == QV_OK &&
          (r1.len != r2.len || memcmp(r1.data, r2.data, (size_t)r1.len) != 0))
        abort();
      qv_expr_free(again);
    } else if (r1.len <= QV_EXPR_MAX_LENGTH) {
      /* Re-parse may only fail on limits the rendering itself exceeds. */
      if (strstr(err.message, "nests deeper") == NULL) abort();
    }
  }
  qv_strbuf_reset(&r1);
  qv_strbuf_reset(&r2);
  qv_bound_expr *b = NULL;
  if (qv_expr_bind(e, g_schema, &b, &err) == QV_OK) {
    eval_all(b);
    qv_bound_expr_free(b);
  }
  qv_expr_free(e);
  return 0;
}
