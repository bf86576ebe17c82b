/*
 * row_encode.c — row layer: the encoder (column-format keys -> rows) and
 * the decoder (rows -> new qv_arrays on heap buffers). Encoding runs in the
 * seed's two phases: grow the fixed buffers and compute row offsets from the
 * var-length sizes, grow the var buffer, then write fixed columns, in-row
 * var-length end offsets, var-length bytes (with zeroed padding) and null
 * masks. Hot fixed-width loops dispatch to AVX2 kernels (row_avx2.c).
 */
#include <stdlib.h>

#include "core/guard_internal.h"
#include "row/row_internal.h"

/* A byte range of a row not covered by any column (alignment padding). */
typedef struct gap {
  int32_t begin, end;
} gap;

/* Gaps of the fixed part [0, fixed_length). Returns their number; `gaps`
 * must hold num_cols + 1 entries. */
static int32_t fixed_part_gaps(const qv_row_metadata *md, gap *gaps) {
  int32_t ng = 0, pos = 0;
  for (int32_t j = 0; j < md->num_cols; j++) {
    int32_t o = md->column_offsets[j];
    if (o > pos) gaps[ng++] = (gap){pos, o};
    pos = o + qv_row_col_width(&md->cols[md->column_order[j]]);
  }
  if (md->fixed_length > pos) gaps[ng++] = (gap){pos, md->fixed_length};
  return ng;
}

static inline uint8_t *row_ptr(uint8_t *fixed_base, int64_t stride, const int64_t *offs,
                               uint8_t *var, int64_t i) {
  return stride ? fixed_base + i * stride : var + offs[i];
}

/* Write fixed-width column `v` at byte `col_off` of n new rows (row i at
 * row_ptr(..., i)); NULL values become zero bytes. */
static void encode_fixed_col(uint8_t *fixed_base, int64_t stride, const int64_t *offs, uint8_t *var,
                             int32_t col_off, const qv_row_colview *v, const int64_t *sel,
                             int64_t n) {
  const qv_row_column_meta *m = &v->meta;
  if (m->is_null_type) {
    for (int64_t i = 0; i < n; i++) row_ptr(fixed_base, stride, offs, var, i)[col_off] = 0;
    return;
  }
  if (m->fixed_length == 0) { /* boolean: one byte 0/1 */
    for (int64_t i = 0; i < n; i++) {
      int64_t r = sel ? sel[i] : i;
      row_ptr(fixed_base, stride, offs, var, i)[col_off] =
          (uint8_t)qv_bit_get(v->values, v->values_bit_offset + r);
    }
  } else {
    int32_t w = m->fixed_length;
    const uint8_t *src = v->values;
    int64_t done = 0;
    if (stride == w && col_off == 0) {
      /* The column is the whole row. */
      if (sel == NULL) {
        memcpy(fixed_base, src, (size_t)(n * w));
        done = n;
      } else if (qv_row_use_avx2() && (w == 4 || w == 8)) {
        done = qv_row_avx2_encode_gather(fixed_base, src, sel, n, w);
      }
    }
    /* Separate loops per addressing mode so each compiles to a tight loop. */
#define QV_ENC_LOOP(W)                                                                             \
  if (stride && !sel) {                                                                            \
    uint8_t *dst = fixed_base + col_off;                                                           \
    for (int64_t i = done; i < n; i++) memcpy(dst + i * stride, src + i * (W), (W));               \
  } else if (stride) {                                                                             \
    uint8_t *dst = fixed_base + col_off;                                                           \
    for (int64_t i = done; i < n; i++) memcpy(dst + i * stride, src + sel[i] * (W), (W));          \
  } else {                                                                                         \
    for (int64_t i = done; i < n; i++) {                                                           \
      int64_t r = sel ? sel[i] : i;                                                                \
      memcpy(var + offs[i] + col_off, src + r * (W), (W));                                         \
    }                                                                                              \
  }
    switch (w) {
      case 1: QV_ENC_LOOP(1); break;
      case 2: QV_ENC_LOOP(2); break;
      case 4: QV_ENC_LOOP(4); break;
      case 8: QV_ENC_LOOP(8); break;
      case 16: QV_ENC_LOOP(16); break;
      default: QV_ENC_LOOP((size_t)w); break;
    }
#undef QV_ENC_LOOP
  }
  if (v->validity) {
    int32_t w = qv_row_col_width(m);
    for (int64_t i = 0; i < n; i++) {
      int64_t r = sel ? sel[i] : i;
      if (!qv_bit_get(v->validity, v->validity_offset + r))
        memset(row_ptr(fixed_base, stride, offs, var, i) + col_off, 0, (size_t)w);
    }
  }
}

static int64_t var_len(const qv_row_colview *v, int64_t r) {
  if (v->validity && !qv_bit_get(v->validity, v->validity_offset + r)) return 0;
  const uint8_t *p;
  int64_t len;
  qv_row_colview_var(v, r, &p, &len);
  return len;
}

static qv_status encode_impl(qv_row_table *t, qv_array *const *cols, const int64_t *sel, int64_t n,
                             qv_error *err) {
  const qv_row_metadata *md = &t->md;
  int32_t nc = md->num_cols;
  qv_row_colview *views = malloc(sizeof(qv_row_colview) * (size_t)nc);
  gap *gaps = malloc(sizeof(gap) * (size_t)(nc + 1));
  qv_status st = QV_OK;
  if (!views || !gaps) {
    st = qv_error_set(err, QV_ENOMEM, "row encode: out of memory");
    goto done;
  }
  if ((st = qv_row_colviews(md, cols, views, err)) != QV_OK) goto done;
  for (int32_t c = 0; c < nc; c++) {
    if ((st = qv_row_check_sel(sel, n, views[c].length, "row encode selection", err)) != QV_OK) {
      qv_error_prefix(err, st, "row key column %d: ", (int)c);
      goto done;
    }
  }
  int64_t base = t->num_rows;
  if ((st = qv_row_table_reserve_rows(t, n, err)) != QV_OK) goto done;

  int64_t fl = md->fixed_length;
  int64_t *offs = NULL;
  if (!md->is_fixed_length) {
    /* Phase 1b: row lengths (kept in offs[1..n] until the prefix sum). */
    offs = (int64_t *)(void *)t->fixed + base;
    for (int64_t i = 0; i < n; i++) offs[i + 1] = fl;
    for (int32_t j = 0; j < nc; j++) {
      const qv_row_colview *v = &views[md->column_order[j]];
      if (v->meta.is_fixed_length) continue;
      for (int64_t i = 0; i < n; i++) {
        int64_t r = sel ? sel[i] : i;
        int64_t L = offs[i + 1];
        L += qv_row_padding(L, md->string_alignment) + var_len(v, r);
        if (L > (int64_t)UINT32_MAX) {
          st = qv_error_set(err, QV_ERANGE,
                            "row encode: row %lld would take %lld bytes; in-row "
                            "offsets are 32-bit (at most %lld)",
                            (long long)r, (long long)L, (long long)UINT32_MAX);
          goto done;
        }
        offs[i + 1] = L;
      }
    }
    int64_t total = offs[0];
    for (int64_t i = 0; i < n; i++) {
      int64_t L = offs[i + 1];
      L += qv_row_padding(L, md->row_alignment);
      if (qv_add_overflow(total, L, &total)) {
        st = qv_error_set(err, QV_ENOMEM, "row encode: var size overflows");
        goto done;
      }
      offs[i + 1] = total;
    }
    /* Phase 2: grow the var buffer to the exact size. */
    if ((st = qv_row_table_reserve_bytes(t, total, err)) != QV_OK) goto done;
  }
  uint8_t *fixed_base = md->is_fixed_length ? t->fixed + base * fl : NULL;
  int64_t stride = md->is_fixed_length ? fl : 0;
  uint8_t *var = t->var;
  int32_t ng = fixed_part_gaps(md, gaps);

  /* Padding of the fixed part. */
  if (ng > 0) {
    if (md->is_fixed_length) {
      memset(fixed_base, 0, (size_t)(n * fl));
    } else {
      for (int64_t i = 0; i < n; i++) {
        uint8_t *row = var + offs[i];
        for (int32_t g = 0; g < ng; g++)
          memset(row + gaps[g].begin, 0, (size_t)(gaps[g].end - gaps[g].begin));
      }
    }
  }

  /* Fixed-width columns. A pair of adjacent equal-width 4- or 8-byte
   * columns filling a whole fixed row interleaves with AVX2. */
  int32_t first_fixed = 0;
  if (md->is_fixed_length && nc == 2 && sel == NULL && qv_row_use_avx2()) {
    const qv_row_colview *a = &views[md->column_order[0]];
    const qv_row_colview *b = &views[md->column_order[1]];
    int32_t w = a->meta.fixed_length;
    if ((w == 4 || w == 8) && b->meta.fixed_length == w && !a->meta.is_null_type &&
        !b->meta.is_null_type && fl == 2 * w) {
      int64_t done = qv_row_avx2_encode_pair(fixed_base, a->values, b->values, n, w);
      if (done < n) {
        qv_row_colview a2 = *a, b2 = *b;
        a2.validity = b2.validity = NULL;
        a2.values += done * w;
        b2.values += done * w;
        encode_fixed_col(fixed_base + done * fl, stride, NULL, NULL, 0, &a2, NULL, n - done);
        encode_fixed_col(fixed_base + done * fl, stride, NULL, NULL, w, &b2, NULL, n - done);
      }
      /* Nulls: zero the null values. */
      for (int32_t j = 0; j < 2; j++) {
        const qv_row_colview *v = j ? b : a;
        if (!v->validity) continue;
        for (int64_t i = 0; i < n; i++)
          if (!qv_bit_get(v->validity, v->validity_offset + i))
            memset(fixed_base + i * fl + j * w, 0, (size_t)w);
      }
      first_fixed = 2;
    }
  }
  for (int32_t j = first_fixed; j < nc; j++) {
    const qv_row_colview *v = &views[md->column_order[j]];
    if (!v->meta.is_fixed_length) continue;
    encode_fixed_col(fixed_base, stride, offs, var, md->column_offsets[j], v, sel, n);
  }

  if (!md->is_fixed_length) {
    /* In-row end offsets, then the var-length bytes with zeroed padding. */
    int32_t k = 0;
    for (int32_t j = 0; j < nc; j++) {
      const qv_row_colview *v = &views[md->column_order[j]];
      if (v->meta.is_fixed_length) continue;
      int64_t end_slot = md->varbinary_end_array_offset + 4 * k;
      for (int64_t i = 0; i < n; i++) {
        int64_t r = sel ? sel[i] : i;
        uint8_t *row = var + offs[i];
        uint32_t begin;
        if (k == 0) {
          begin = (uint32_t)fl;
        } else {
          uint32_t prev;
          memcpy(&prev, row + end_slot - 4, 4);
          uint32_t pad = (uint32_t)qv_row_padding(prev, md->string_alignment);
          memset(row + prev, 0, pad);
          begin = prev + pad;
        }
        int64_t len = 0;
        if (!(v->validity && !qv_bit_get(v->validity, v->validity_offset + r))) {
          const uint8_t *p;
          qv_row_colview_var(v, r, &p, &len);
          memcpy(row + begin, p, (size_t)len);
        }
        uint32_t end = begin + (uint32_t)len;
        memcpy(row + end_slot, &end, 4);
      }
      k++;
    }
    /* Row-end padding. */
    int64_t last_slot = md->varbinary_end_array_offset + 4 * (k - 1);
    for (int64_t i = 0; i < n; i++) {
      uint8_t *row = var + offs[i];
      uint32_t end;
      memcpy(&end, row + last_slot, 4);
      int64_t row_len = offs[i + 1] - offs[i];
      memset(row + end, 0, (size_t)(row_len - end));
    }
  }

  /* Null masks: bit j set when the column at encoded position j is null. */
  int64_t npr = md->null_masks_bytes_per_row;
  uint8_t *masks = t->null_masks + base * npr;
  memset(masks, 0, (size_t)(n * npr));
  for (int32_t j = 0; j < nc; j++) {
    const qv_row_colview *v = &views[md->column_order[j]];
    if (v->meta.is_null_type) {
      for (int64_t i = 0; i < n; i++) qv_bit_set(masks + i * npr, j);
    } else if (v->validity) {
      for (int64_t i = 0; i < n; i++) {
        int64_t r = sel ? sel[i] : i;
        if (!qv_bit_get(v->validity, v->validity_offset + r)) qv_bit_set(masks + i * npr, j);
      }
    }
  }
  t->num_rows = base + n;

done:
  free(views);
  free(gaps);
  return st;
}

/* encode_impl under the mapped-read guard (core guard.c), after the
 * columns' mapped buffers are checked; the row table is the caller's. */
typedef struct encode_call {
  qv_row_table *t;
  qv_array *const *cols;
  const int64_t *sel;
  int64_t n;
} encode_call;

static qv_status encode_body(void *ctx, qv_error *err) {
  encode_call *c = ctx;
  return encode_impl(c->t, c->cols, c->sel, c->n, err);
}

static qv_status guarded_encode(qv_row_table *t, qv_array *const *cols, const int64_t *sel,
                                int64_t n, qv_error *err) {
  encode_call c = {t, cols, sel, n};
  return qv_guard_run_checked((const qv_array *const *)cols, cols ? t->md.num_cols : 0, encode_body,
                              &c, err);
}

qv_status qv_row_encode_append(qv_row_table *t, qv_array *const *cols, const int64_t *sel,
                               int64_t n, qv_error *err) {
  return guarded_encode(t, cols, sel, n, err);
}

qv_status qv_row_encode(qv_row_table *t, qv_array *const *cols, const int64_t *sel, int64_t n,
                        qv_error *err) {
  qv_row_table_clean(t);
  return guarded_encode(t, cols, sel, n, err);
}

/* ------------------------------------------------------------------------ */
/* Decode                                                                    */

static void decode_fixed_values(const qv_row_table *t, int64_t start, int64_t n, int32_t col_off,
                                int32_t w, uint8_t *out) {
  const qv_row_metadata *md = &t->md;
  if (md->is_fixed_length) {
    int64_t fl = md->fixed_length;
    const uint8_t *src = t->fixed + start * fl + col_off;
    if (fl == w) {
      memcpy(out, src, (size_t)(n * w));
      return;
    }
    int64_t done = 0;
    if (qv_row_use_avx2()) done = qv_row_avx2_decode_strided(out, src, fl, n, w);
#define QV_DEC_LOOP(W)                                                                             \
  for (int64_t i = done; i < n; i++) memcpy(out + i * (W), src + i * fl, (W));
    switch (w) {
      case 1: QV_DEC_LOOP(1); break;
      case 2: QV_DEC_LOOP(2); break;
      case 4: QV_DEC_LOOP(4); break;
      case 8: QV_DEC_LOOP(8); break;
      default: QV_DEC_LOOP((size_t)w); break;
    }
#undef QV_DEC_LOOP
  } else {
    const int64_t *offs = qv_row_table_offsets(t) + start;
    const uint8_t *src = t->var + col_off;
    for (int64_t i = 0; i < n; i++) memcpy(out + i * w, src + offs[i], (size_t)w);
  }
}

static qv_status new_buffer(int64_t size, qv_buffer **out, qv_error *err) {
  qv_status st = qv_buffer_alloc(size, out, err);
  if (st != QV_OK) return qv_error_prefix(err, st, "row decode: ");
  return QV_OK;
}

/* Decode logical column c into a new array. */
static qv_status decode_column(const qv_row_table *t, int64_t start, int64_t n, int32_t c,
                               qv_type *type, qv_array *dict, qv_array **out, qv_error *err) {
  const qv_row_metadata *md = &t->md;
  const qv_row_column_meta *m = &md->cols[c];
  int32_t j = md->inverse_column_order[c];
  int32_t col_off = md->column_offsets[j];
  int64_t npr = md->null_masks_bytes_per_row;
  const uint8_t *masks = t->null_masks + start * npr;
  qv_status st;

  if (m->is_null_type) {
    qv_array *a = qv_array_new(type, 0, 0);
    if (!a) return qv_error_set(err, QV_ENOMEM, "row decode: out of memory");
    a->length = n;
    a->null_count = n;
    *out = a;
    return QV_OK;
  }
  int32_t nbuf = m->is_fixed_length ? 2 : 3;
  qv_array *a = qv_array_new(type, nbuf, 0);
  if (!a) return qv_error_set(err, QV_ENOMEM, "row decode: out of memory");
  a->length = n;
  if (dict) a->dictionary = qv_array_ref(dict);

  /* Validity. */
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; i++) nulls += qv_bit_get(masks + i * npr, j);
  a->null_count = nulls;
  if (nulls > 0) {
    if ((st = new_buffer((n + 7) / 8, &a->buffers[0], err)) != QV_OK) goto fail;
    uint8_t *bits = a->buffers[0]->data;
    for (int64_t i = 0; i < n; i++)
      if (!qv_bit_get(masks + i * npr, j)) qv_bit_set(bits, i);
  }

  if (m->is_fixed_length && m->fixed_length == 0) { /* boolean */
    if ((st = new_buffer((n + 7) / 8, &a->buffers[1], err)) != QV_OK) goto fail;
    uint8_t *bits = a->buffers[1]->data;
    for (int64_t i = 0; i < n; i++) {
      const uint8_t *row = qv_row_table_row(t, start + i, NULL);
      if (row[col_off]) qv_bit_set(bits, i);
    }
  } else if (m->is_fixed_length) {
    int32_t w = m->fixed_length;
    if ((st = new_buffer(n * w, &a->buffers[1], err)) != QV_OK) goto fail;
    decode_fixed_values(t, start, n, col_off, w, a->buffers[1]->data);
  } else {
    /* Var-length: offsets first (from the end arrays), then the bytes. */
    int32_t k = (col_off - md->varbinary_end_array_offset) / 4;
    int32_t ow = m->offset_width;
    if ((st = new_buffer((n + 1) * ow, &a->buffers[1], err)) != QV_OK) goto fail;
    uint8_t *ob = a->buffers[1]->data;
    const int64_t *offs = qv_row_table_offsets(t) + start;
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
      uint32_t b, len;
      qv_row_var_field(md, t->var + offs[i], k, &b, &len);
      total += len;
      if (ow == 4 && total > INT32_MAX) {
        st = qv_error_set(err, QV_ERANGE,
                          "row decode: key column %d: %lld bytes of data exceed "
                          "32-bit offsets",
                          (int)c, (long long)total);
        goto fail;
      }
      if (ow == 4) {
        int32_t v = (int32_t)total;
        memcpy(ob + (i + 1) * 4, &v, 4);
      } else {
        memcpy(ob + (i + 1) * 8, &total, 8);
      }
    }
    /* The bytes are copied by decode_var_bytes once every column's fixed
     * buffers are done. */
    if ((st = new_buffer(total, &a->buffers[2], err)) != QV_OK) goto fail;
  }
  *out = a;
  return QV_OK;
fail:
  qv_array_unref(a);
  return st;
}

/* Second decoding step: copy var-length bytes into the data buffer sized by
 * decode_column. */
static void decode_var_bytes(const qv_row_table *t, int64_t start, int64_t n, int32_t c,
                             qv_array *a) {
  const qv_row_metadata *md = &t->md;
  int32_t j = md->inverse_column_order[c];
  int32_t k = (md->column_offsets[j] - md->varbinary_end_array_offset) / 4;
  const int64_t *offs = qv_row_table_offsets(t) + start;
  uint8_t *data = a->buffers[2]->data;
  int64_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    uint32_t b, len;
    const uint8_t *row = t->var + offs[i];
    qv_row_var_field(md, row, k, &b, &len);
    memcpy(data + pos, row + b, len);
    pos += len;
  }
}

qv_status qv_row_decode(const qv_row_table *t, int64_t start, int64_t n, qv_type *const *types,
                        qv_array *const *dictionaries, qv_array **out, qv_error *err) {
  const qv_row_metadata *md = &t->md;
  int64_t end;
  if (start < 0 || n < 0 || qv_add_overflow(start, n, &end) || end > t->num_rows)
    return qv_error_set(err, QV_ERANGE,
                        "row decode: rows [%lld, %lld + %lld) are outside the "
                        "table's %lld rows",
                        (long long)start, (long long)start, (long long)n, (long long)t->num_rows);
  for (int32_t c = 0; c < md->num_cols; c++) {
    out[c] = NULL;
    qv_row_column_meta m;
    qv_status st = qv_row_column_meta_from_type(types[c], &m, err);
    if (st != QV_OK) return qv_error_prefix(err, st, "row decode: key column %d: ", (int)c);
    const qv_row_column_meta *w = &md->cols[c];
    if (m.is_fixed_length != w->is_fixed_length || m.is_null_type != w->is_null_type ||
        m.fixed_length != w->fixed_length || m.offset_width != w->offset_width)
      return qv_error_set(err, QV_ETYPE,
                          "row decode: key column %d: type does not match the "
                          "row metadata",
                          (int)c);
  }
  for (int32_t c = 0; c < md->num_cols; c++) {
    qv_array *dict = dictionaries ? dictionaries[c] : NULL;
    if (types[c]->id != QV_DICTIONARY) dict = NULL;
    qv_status st = decode_column(t, start, n, c, types[c], dict, &out[c], err);
    if (st != QV_OK) {
      for (int32_t k = 0; k < c; k++) {
        qv_array_unref(out[k]);
        out[k] = NULL;
      }
      return st;
    }
  }
  for (int32_t c = 0; c < md->num_cols; c++)
    if (!md->cols[c].is_fixed_length) decode_var_bytes(t, start, n, c, out[c]);
  return QV_OK;
}
