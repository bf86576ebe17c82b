/*
 * row_hash.c — row layer: 32/64-bit hashes of keys, computed identically
 * from encoded rows and from column-format keys (the scheme is documented
 * in quiver/row.h), plus the value-gathering helpers that compare shares.
 * Works a minibatch of QV_ROW_MINIBATCH keys at a time, column by column;
 * small fixed-width values go through AVX2 kernels when enabled.
 * Var-length and wide values are hashed with libxxhash's XXH3_64bits.
 */
#include <stdlib.h>
#include <xxhash.h>

#include "row/row_internal.h"

uint64_t qv_row_hash_bytes(const uint8_t *p, int64_t len) {
  return (uint64_t)XXH3_64bits(p, (size_t)len);
}

static bool is_small_width(int32_t w) { return w == 1 || w == 2 || w == 4 || w == 8; }

void qv_row_col_small_values(const qv_row_colview *v, const int64_t *sel, int64_t first, int64_t n,
                             uint64_t *out) {
  if (v->meta.fixed_length == 0) { /* boolean */
    for (int64_t i = 0; i < n; i++) {
      int64_t r = sel ? sel[i] : first + i;
      out[i] = qv_bit_get(v->values, v->values_bit_offset + r);
    }
    return;
  }
  int32_t w = v->meta.fixed_length;
  int64_t done = 0;
  if (sel == NULL) {
    const uint8_t *src = v->values + first * w;
    switch (w) {
      case 8: memcpy(out, src, (size_t)(n * 8)); return;
      default: break;
    }
  }
  if (qv_row_use_avx2()) {
    if (sel) {
      done = qv_row_avx2_gather_col(v->values, sel, n, w, out);
    } else {
      done = qv_row_avx2_gather_col(v->values + first * w, NULL, n, w, out);
    }
  }
  for (int64_t i = done; i < n; i++) {
    int64_t r = sel ? sel[i] : first + i;
    out[i] = qv_row_load_le(v->values + r * w, w);
  }
}

void qv_row_row_small_values(const qv_row_table *t, int32_t col_off, int32_t w, const int64_t *ids,
                             int64_t first, int64_t n, uint64_t *out) {
  qv_row_locator loc;
  if (t->md.is_fixed_length) {
    loc.base = t->fixed + col_off;
    loc.stride = t->md.fixed_length;
    loc.offsets = NULL;
  } else {
    loc.base = t->var + col_off;
    loc.stride = 0;
    loc.offsets = qv_row_table_offsets(t);
  }
  int64_t done = 0;
  if (ids == NULL && loc.stride == 8 && w == 8) { /* rows are the values */
    memcpy(out, loc.base + first * 8, (size_t)(n * 8));
    return;
  }
  if (qv_row_use_avx2()) done = qv_row_avx2_gather_rows(&loc, ids, first, n, w, out);
  for (int64_t i = done; i < n; i++) {
    int64_t r = ids ? ids[i] : first + i;
    const uint8_t *p = loc.stride ? loc.base + r * loc.stride : loc.base + loc.offsets[r];
    out[i] = qv_row_load_le(p, w);
  }
}

static void hash_small_values(uint64_t *x, int64_t n) {
  int64_t done = 0;
  if (qv_row_use_avx2()) done = qv_row_avx2_hash_small(x, n, x);
  for (int64_t i = done; i < n; i++) x[i] = qv_row_hash_small(x[i]);
}

static void combine(uint64_t *h, const uint64_t *v, int64_t n) {
  int64_t done = 0;
  if (qv_row_use_avx2()) done = qv_row_avx2_combine(h, v, n);
  for (int64_t i = done; i < n; i++) h[i] = qv_row_mix64(h[i] ^ v[i]);
}

/* Per-column value hashes of keys in column form. */
static void column_value_hashes(const qv_row_colview *v, const int64_t *sel, int64_t first,
                                int64_t n, uint64_t *vals) {
  const qv_row_column_meta *m = &v->meta;
  if (m->is_null_type) {
    for (int64_t i = 0; i < n; i++) vals[i] = QV_ROW_HASH_NULL;
    return;
  }
  if (m->is_fixed_length && (m->fixed_length == 0 || is_small_width(m->fixed_length))) {
    qv_row_col_small_values(v, sel, first, n, vals);
    hash_small_values(vals, n);
  } else if (m->is_fixed_length) {
    int32_t w = m->fixed_length;
    for (int64_t i = 0; i < n; i++) {
      int64_t r = sel ? sel[i] : first + i;
      vals[i] = qv_row_hash_bytes(v->values + r * w, w);
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      int64_t r = sel ? sel[i] : first + i;
      const uint8_t *p;
      int64_t len;
      qv_row_colview_var(v, r, &p, &len);
      vals[i] = qv_row_hash_bytes(p, len);
    }
  }
  if (v->validity) {
    for (int64_t i = 0; i < n; i++) {
      int64_t r = sel ? sel[i] : first + i;
      if (!qv_bit_get(v->validity, v->validity_offset + r)) vals[i] = QV_ROW_HASH_NULL;
    }
  }
}

qv_status qv_row_hash_columns64(const qv_row_metadata *md, qv_array *const *cols,
                                const int64_t *sel, int64_t n, uint64_t *out, qv_error *err) {
  int32_t nc = md->num_cols;
  qv_row_colview *views = malloc(sizeof(qv_row_colview) * (size_t)nc);
  uint64_t *vals = malloc(sizeof(uint64_t) * QV_ROW_MINIBATCH);
  qv_status st = QV_OK;
  if (!views || !vals) {
    st = qv_error_set(err, QV_ENOMEM, "row hash: out of memory");
    goto done;
  }
  if ((st = qv_row_colviews(md, cols, views, err)) != QV_OK) goto done;
  for (int32_t c = 0; c < nc; c++)
    if ((st = qv_row_check_sel(sel, n, views[c].length, "row hash selection", err)) != QV_OK)
      goto done;
  for (int64_t b = 0; b < n; b += QV_ROW_MINIBATCH) {
    int64_t m = n - b < QV_ROW_MINIBATCH ? n - b : QV_ROW_MINIBATCH;
    uint64_t *h = out + b;
    for (int64_t i = 0; i < m; i++) h[i] = QV_ROW_HASH_H0;
    for (int32_t j = 0; j < nc; j++) {
      column_value_hashes(&views[md->column_order[j]], sel ? sel + b : NULL, b, m, vals);
      combine(h, vals, m);
    }
  }
done:
  free(views);
  free(vals);
  return st;
}

/* True when any of the rows has a null in its mask. */
static bool rows_have_nulls(const qv_row_table *t, const int64_t *ids, int64_t first, int64_t n) {
  int64_t npr = t->md.null_masks_bytes_per_row;
  if (ids == NULL) { /* contiguous masks: test 8 bytes at a time */
    const uint8_t *p = t->null_masks + first * npr;
    int64_t bytes = n * npr, k = 0;
    uint64_t acc = 0;
    for (; k + 8 <= bytes; k += 8) {
      uint64_t w;
      memcpy(&w, p + k, 8);
      acc |= w;
    }
    for (; k < bytes; k++) acc |= p[k];
    return acc != 0;
  }
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *mask = t->null_masks + (ids ? ids[i] : first + i) * npr;
    for (int64_t k = 0; k < npr; k++)
      if (mask[k]) return true;
  }
  return false;
}

qv_status qv_row_hash_rows64(const qv_row_table *t, const int64_t *ids, int64_t n, uint64_t *out,
                             qv_error *err) {
  const qv_row_metadata *md = &t->md;
  QV_RETURN_NOT_OK(qv_row_check_sel(ids, n, t->num_rows, "row hash ids", err));
  uint64_t *vals = malloc(sizeof(uint64_t) * QV_ROW_MINIBATCH);
  if (!vals) return qv_error_set(err, QV_ENOMEM, "row hash: out of memory");
  int64_t npr = md->null_masks_bytes_per_row;
  for (int64_t b = 0; b < n; b += QV_ROW_MINIBATCH) {
    int64_t m = n - b < QV_ROW_MINIBATCH ? n - b : QV_ROW_MINIBATCH;
    const int64_t *bids = ids ? ids + b : NULL;
    uint64_t *h = out + b;
    for (int64_t i = 0; i < m; i++) h[i] = QV_ROW_HASH_H0;
    bool nulls = rows_have_nulls(t, bids, b, m);
    int32_t k = 0; /* var-length column index */
    for (int32_t j = 0; j < md->num_cols; j++) {
      const qv_row_column_meta *cm = &md->cols[md->column_order[j]];
      int32_t off = md->column_offsets[j];
      if (cm->is_null_type) {
        for (int64_t i = 0; i < m; i++) vals[i] = QV_ROW_HASH_NULL;
      } else if (cm->is_fixed_length &&
                 (cm->fixed_length == 0 || is_small_width(cm->fixed_length))) {
        int32_t w = cm->fixed_length == 0 ? 1 : cm->fixed_length;
        qv_row_row_small_values(t, off, w, bids, b, m, vals);
        hash_small_values(vals, m);
      } else if (cm->is_fixed_length) {
        for (int64_t i = 0; i < m; i++) {
          const uint8_t *row = qv_row_table_row(t, bids ? bids[i] : b + i, NULL);
          vals[i] = qv_row_hash_bytes(row + off, cm->fixed_length);
        }
      } else {
        for (int64_t i = 0; i < m; i++) {
          const uint8_t *row = qv_row_table_row(t, bids ? bids[i] : b + i, NULL);
          uint32_t beg, len;
          qv_row_var_field(md, row, k, &beg, &len);
          vals[i] = qv_row_hash_bytes(row + beg, len);
        }
      }
      if (!cm->is_fixed_length) k++;
      if (nulls) {
        for (int64_t i = 0; i < m; i++) {
          const uint8_t *mask = t->null_masks + (bids ? bids[i] : b + i) * npr;
          if (qv_bit_get(mask, j)) vals[i] = QV_ROW_HASH_NULL;
        }
      }
      combine(h, vals, m);
    }
  }
  free(vals);
  return QV_OK;
}

static void fold32(const uint64_t *h, int64_t n, uint32_t *out) {
  for (int64_t i = 0; i < n; i++) out[i] = (uint32_t)(h[i] ^ (h[i] >> 32));
}

qv_status qv_row_hash_rows32(const qv_row_table *t, const int64_t *ids, int64_t n, uint32_t *out,
                             qv_error *err) {
  uint64_t *h = malloc(sizeof(uint64_t) * (size_t)(n > 0 ? n : 1));
  if (!h) return qv_error_set(err, QV_ENOMEM, "row hash: out of memory");
  qv_status st = qv_row_hash_rows64(t, ids, n, h, err);
  if (st == QV_OK) fold32(h, n, out);
  free(h);
  return st;
}

qv_status qv_row_hash_columns32(const qv_row_metadata *md, qv_array *const *cols,
                                const int64_t *sel, int64_t n, uint32_t *out, qv_error *err) {
  uint64_t *h = malloc(sizeof(uint64_t) * (size_t)(n > 0 ? n : 1));
  if (!h) return qv_error_set(err, QV_ENOMEM, "row hash: out of memory");
  qv_status st = qv_row_hash_columns64(md, cols, sel, n, h, err);
  if (st == QV_OK) fold32(h, n, out);
  free(h);
  return st;
}
