/*
 * hf_print.c — rows as JSON with ClassLabel ids shown as their label names
 * (`quiver head --decode-labels`). Walks a record batch alongside its
 * datasets features: where a feature is a ClassLabel the integer becomes
 * the name; dicts and lists are followed (offsets bounds-checked as in
 * core/print.c); everything else is rendered by qv_format_value_json, so
 * the value mapping stays the one in docs/json-rows.md. Runs under the
 * mapped-read guard (quiver/guard.h). Dataset layer.
 */
#include <string.h>

#include "core/guard_internal.h"
#include "dataset/hf_internal.h"

/* Does any ClassLabel live under f? */
static bool has_label(const qv_hf_feature *f, int depth) {
  if (f == NULL || depth > QV_HF_MAX_DEPTH + 2) return false;
  if (f->kind == QV_HF_CLASS_LABEL) return true;
  if (f->kind == QV_HF_DICT || f->kind == QV_HF_LIST || f->kind == QV_HF_LARGE_LIST)
    for (int32_t i = 0; i < f->n_children; i++)
      if (has_label(f->children[i], depth + 1)) return true;
  return false;
}

static qv_status bad(qv_error *err, const qv_array *a, int64_t row) {
  return qv_error_set(err, QV_EINVAL, "%s array: element %lld has out-of-bounds offsets",
                      qv_type_id_name(a->type->id), (long long)row);
}

/* Read the integer at physical index k of an integer array (false when it
 * is outside the values buffer, or a uint64 above INT64_MAX). */
static bool read_int(const qv_array *a, int64_t k, int64_t *out) {
  int32_t w = qv_int_type_bytes(a->type->id);
  bool sign = qv_type_id_is_signed_integer(a->type->id);
  if (w == 0 || a->n_buffers < 2 || a->buffers[1] == NULL || k < 0 ||
      (k + 1) * w > a->buffers[1]->size)
    return false;
  *out = qv_load_int(a->buffers[1]->data, w, !sign, k);
  return sign || w < 8 || *out >= 0;
}

static qv_status render(const qv_array *a, int64_t row, const qv_hf_feature *f, qv_strbuf *out,
                        int depth, qv_error *err);

static qv_status render_range(const qv_array *child, int64_t s, int64_t e, const qv_hf_feature *f,
                              qv_strbuf *out, int depth, qv_error *err) {
  QV_RETURN_NOT_OK(qv_strbuf_append_char(out, '[', err));
  for (int64_t j = s; j < e; j++) {
    if (j > s) QV_RETURN_NOT_OK(qv_strbuf_append_char(out, ',', err));
    QV_RETURN_NOT_OK(render(child, j, f, out, depth + 1, err));
  }
  return qv_strbuf_append_char(out, ']', err);
}

static qv_status render_struct(const qv_array *a, int64_t k, const qv_hf_feature *f, qv_strbuf *out,
                               int depth, qv_error *err) {
  QV_RETURN_NOT_OK(qv_strbuf_append_char(out, '{', err));
  for (int32_t i = 0; i < a->type->n_children && i < a->n_children; i++) {
    if (i) QV_RETURN_NOT_OK(qv_strbuf_append_char(out, ',', err));
    const char *name = a->type->children[i].name;
    QV_RETURN_NOT_OK(qv_json_append_string(out, (const uint8_t *)name, (int64_t)strlen(name), err));
    QV_RETURN_NOT_OK(qv_strbuf_append_char(out, ':', err));
    const qv_array *c = a->children[i];
    if (c == NULL || k < 0 || k >= c->length) return bad(err, a, k);
    QV_RETURN_NOT_OK(render(c, k, qv_hf_dict_child(f, i, name), out, depth + 1, err));
  }
  return qv_strbuf_append_char(out, '}', err);
}

static qv_status render(const qv_array *a, int64_t row, const qv_hf_feature *f, qv_strbuf *out,
                        int depth, qv_error *err) {
  if (depth > 256) return qv_error_set(err, QV_ENOTSUP, "value nested deeper than 256 levels");
  if (!has_label(f, 0)) return qv_format_value_json(a, row, out, err);
  if (row < 0 || row >= a->length)
    return qv_error_set(err, QV_ERANGE, "row %lld is outside [0, %lld)", (long long)row,
                        (long long)a->length);
  int64_t k = a->offset + row;
  qv_type_id id = a->type->id;
  if (a->n_buffers > 0 && a->buffers[0] != NULL) {
    if ((k >> 3) >= a->buffers[0]->size) return bad(err, a, row);
    if (!qv_bit_get(a->buffers[0]->data, k)) return qv_strbuf_append_str(out, "null", err);
  }
  if (f->kind == QV_HF_CLASS_LABEL && qv_type_id_is_integer(id)) {
    int64_t v;
    if (!read_int(a, k, &v)) return bad(err, a, row);
    if (v >= 0 && v < f->n_names)
      return qv_json_append_string(out, (const uint8_t *)f->names[v], (int64_t)strlen(f->names[v]),
                                   err);
    return qv_format_value_json(a, row, out, err);
  }
  if (f->kind == QV_HF_DICT && id == QV_STRUCT) return render_struct(a, k, f, out, depth, err);
  if ((f->kind == QV_HF_LIST || f->kind == QV_HF_LARGE_LIST) && a->n_children == 1 &&
      a->children[0] != NULL) {
    const qv_array *child = a->children[0];
    int64_t s, e;
    if (id == QV_LIST || id == QV_LARGE_LIST) {
      int w = id == QV_LARGE_LIST ? 8 : 4;
      if (a->n_buffers < 2 || a->buffers[1] == NULL || (k + 2) * w > a->buffers[1]->size)
        return bad(err, a, row);
      const uint8_t *p = a->buffers[1]->data + k * w;
      if (w == 4) {
        int32_t x, y;
        memcpy(&x, p, 4);
        memcpy(&y, p + 4, 4);
        s = x, e = y;
      } else {
        memcpy(&s, p, 8);
        memcpy(&e, p + 8, 8);
      }
    } else if (id == QV_FIXED_SIZE_LIST) {
      if (qv_mul_overflow(k, a->type->list_size, &s) || qv_add_overflow(s, a->type->list_size, &e))
        return bad(err, a, row);
    } else {
      return qv_format_value_json(a, row, out, err);
    }
    if (s < 0 || e < s || e > child->length) return bad(err, a, row);
    return render_range(child, s, e, f->children[0], out, depth, err);
  }
  return qv_format_value_json(a, row, out, err);
}

/* The walk under the mapped-read guard (core guard.c); the text goes to
 * the caller's strbuf, so a recovery leaves nothing to free. */
typedef struct hf_format_call {
  const qv_array *batch;
  int64_t k;
  const qv_hf_feature *features;
  qv_strbuf *out;
} hf_format_call;

static qv_status hf_format_body(void *ctx, qv_error *err) {
  const hf_format_call *c = ctx;
  return render_struct(c->batch, c->k, c->features, c->out, 0, err);
}

qv_status qv_hf_format_row_json(const qv_array *batch, int64_t row, const qv_hf_feature *features,
                                qv_strbuf *out, qv_error *err) {
  if (!has_label(features, 0)) return qv_format_row_json(batch, row, out, err);
  if (batch->type->id != QV_STRUCT)
    return qv_error_set(err, QV_ETYPE, "a record batch must be a struct array");
  if (row < 0 || row >= batch->length)
    return qv_error_set(err, QV_ERANGE, "row %lld is outside [0, %lld)", (long long)row,
                        (long long)batch->length);
  hf_format_call c = {batch, batch->offset + row, features, out};
  return qv_guard_run_leaf(hf_format_body, &c, err);
}
