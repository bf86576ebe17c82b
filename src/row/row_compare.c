/*
 * row_compare.c — row layer: key equality between column-format keys and
 * encoded rows (column by column over minibatches, small fixed-width columns
 * through the AVX2 gather/compare kernels when enabled), and between rows of
 * two tables (canonical encoding makes that a byte comparison). Output is a
 * match bit-vector and/or the selection of mismatching ids.
 */
#include <stdlib.h>

#include "row/row_internal.h"

/* eq[0..m) holds 0/1 per position base + i; base is a multiple of 8. */
static void emit(const uint8_t *eq, int64_t base, int64_t m, const int64_t *ids, uint8_t *out_match,
                 int64_t *out_mismatch, int64_t *num_mismatch) {
  if (out_match) {
    int64_t i = 0;
    for (; i + 8 <= m; i += 8) {
      uint64_t w;
      memcpy(&w, eq + i, 8);
      /* gather bit 0 of each byte into one byte */
      out_match[(base + i) >> 3] =
          (uint8_t)(((w & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56);
    }
    for (; i < m; i++) qv_bit_put(out_match, base + i, eq[i] != 0);
  }
  if (out_mismatch) {
    for (int64_t i = 0; i < m; i++) {
      int64_t pos = base + i;
      if (!eq[i]) out_mismatch[(*num_mismatch)++] = ids ? ids[pos] : pos;
    }
  }
}

static qv_status check_outputs(uint8_t *out_match, int64_t *out_mismatch, int64_t *out_num_mismatch,
                               qv_error *err) {
  if (!out_match && !out_mismatch)
    return qv_error_set(err, QV_EARG, "row compare: no output requested");
  if (out_mismatch && !out_num_mismatch)
    return qv_error_set(err, QV_EARG, "row compare: out_num_mismatch is NULL");
  return QV_OK;
}

qv_status qv_row_compare_columns(const qv_row_table *t, qv_array *const *cols, const int64_t *sel,
                                 const int64_t *row_ids, int64_t n, bool null_equals_null,
                                 uint8_t *out_match, int64_t *out_mismatch,
                                 int64_t *out_num_mismatch, qv_error *err) {
  const qv_row_metadata *md = &t->md;
  int32_t nc = md->num_cols;
  QV_RETURN_NOT_OK(check_outputs(out_match, out_mismatch, out_num_mismatch, err));
  if (row_ids == NULL) return qv_error_set(err, QV_EARG, "row compare: row_ids is NULL");
  QV_RETURN_NOT_OK(qv_row_check_sel(row_ids, n, t->num_rows, "row compare row ids", err));
  qv_row_colview *views = malloc(sizeof(qv_row_colview) * (size_t)nc);
  uint64_t *a = malloc(sizeof(uint64_t) * QV_ROW_MINIBATCH);
  uint64_t *b = malloc(sizeof(uint64_t) * QV_ROW_MINIBATCH);
  uint8_t *eq = malloc(QV_ROW_MINIBATCH);
  uint8_t *eqc = malloc(QV_ROW_MINIBATCH);
  qv_status st = QV_OK;
  if (!views || !a || !b || !eq || !eqc) {
    st = qv_error_set(err, QV_ENOMEM, "row compare: out of memory");
    goto done;
  }
  if ((st = qv_row_colviews(md, cols, views, err)) != QV_OK) goto done;
  for (int32_t c = 0; c < nc; c++)
    if ((st = qv_row_check_sel(sel, n, views[c].length, "row compare selection", err)) != QV_OK)
      goto done;
  if (out_num_mismatch) *out_num_mismatch = 0;
  int64_t npr = md->null_masks_bytes_per_row;
  for (int64_t base = 0; base < n; base += QV_ROW_MINIBATCH) {
    int64_t m = n - base < QV_ROW_MINIBATCH ? n - base : QV_ROW_MINIBATCH;
    const int64_t *bsel = sel ? sel + base : NULL;
    const int64_t *bids = row_ids + base;
    memset(eq, 1, (size_t)m);
    bool row_nulls = false;
    for (int64_t i = 0; i < m && !row_nulls; i++) {
      const uint8_t *mask = t->null_masks + bids[i] * npr;
      for (int64_t k = 0; k < npr; k++)
        if (mask[k]) row_nulls = true;
    }
    int32_t kvar = 0;
    for (int32_t j = 0; j < nc; j++) {
      const qv_row_colview *v = &views[md->column_order[j]];
      const qv_row_column_meta *cm = &v->meta;
      int32_t off = md->column_offsets[j];
      if (cm->is_null_type) {
        memset(eqc, 1, (size_t)m);
      } else if (cm->is_fixed_length &&
                 (cm->fixed_length == 0 || cm->fixed_length == 1 || cm->fixed_length == 2 ||
                  cm->fixed_length == 4 || cm->fixed_length == 8)) {
        int32_t w = cm->fixed_length == 0 ? 1 : cm->fixed_length;
        qv_row_col_small_values(v, bsel, base, m, a);
        qv_row_row_small_values(t, off, w, bids, 0, m, b);
        int64_t done = 0;
        if (qv_row_use_avx2()) done = qv_row_avx2_eq64(a, b, m, eqc);
        for (int64_t i = done; i < m; i++) eqc[i] = a[i] == b[i];
      } else if (cm->is_fixed_length) {
        int32_t w = cm->fixed_length;
        for (int64_t i = 0; i < m; i++) {
          int64_t r = bsel ? bsel[i] : base + i;
          const uint8_t *row = qv_row_table_row(t, bids[i], NULL);
          eqc[i] = memcmp(v->values + r * w, row + off, (size_t)w) == 0;
        }
      } else {
        for (int64_t i = 0; i < m; i++) {
          int64_t r = bsel ? bsel[i] : base + i;
          const uint8_t *row = qv_row_table_row(t, bids[i], NULL);
          uint32_t beg, rlen;
          qv_row_var_field(md, row, kvar, &beg, &rlen);
          const uint8_t *p;
          int64_t len;
          qv_row_colview_var(v, r, &p, &len);
          eqc[i] = len == (int64_t)rlen && memcmp(p, row + beg, (size_t)len) == 0;
        }
      }
      if (!cm->is_fixed_length) kvar++;
      if (v->validity || row_nulls || cm->is_null_type) {
        for (int64_t i = 0; i < m; i++) {
          int64_t r = bsel ? bsel[i] : base + i;
          bool ln = qv_row_colview_is_null(v, r);
          bool rn = qv_bit_get(t->null_masks + bids[i] * npr, j);
          if (ln || rn) eqc[i] = ln && rn && null_equals_null;
        }
      }
      for (int64_t i = 0; i < m; i++) eq[i] &= eqc[i];
    }
    emit(eq, base, m, sel, out_match, out_mismatch, out_num_mismatch);
  }
done:
  free(views);
  free(a);
  free(b);
  free(eq);
  free(eqc);
  return st;
}

static bool mask_any(const uint8_t *mask, int64_t npr) {
  for (int64_t k = 0; k < npr; k++)
    if (mask[k]) return true;
  return false;
}

qv_status qv_row_compare_rows(const qv_row_table *a, const int64_t *a_ids, const qv_row_table *b,
                              const int64_t *b_ids, int64_t n, bool null_equals_null,
                              uint8_t *out_match, int64_t *out_mismatch, int64_t *out_num_mismatch,
                              qv_error *err) {
  QV_RETURN_NOT_OK(check_outputs(out_match, out_mismatch, out_num_mismatch, err));
  if (!qv_row_metadata_compatible(&a->md, &b->md))
    return qv_error_set(err, QV_EARG, "row compare: tables are not compatible");
  QV_RETURN_NOT_OK(qv_row_check_sel(a_ids, n, a->num_rows, "row compare ids (a)", err));
  QV_RETURN_NOT_OK(qv_row_check_sel(b_ids, n, b->num_rows, "row compare ids (b)", err));
  if (out_num_mismatch) *out_num_mismatch = 0;
  int64_t npr = a->md.null_masks_bytes_per_row;
  uint8_t eq[QV_ROW_MINIBATCH];
  for (int64_t base = 0; base < n; base += QV_ROW_MINIBATCH) {
    int64_t m = n - base < QV_ROW_MINIBATCH ? n - base : QV_ROW_MINIBATCH;
    for (int64_t i = 0; i < m; i++) {
      int64_t ra = a_ids ? a_ids[base + i] : base + i;
      int64_t rb = b_ids ? b_ids[base + i] : base + i;
      const uint8_t *ma = a->null_masks + ra * npr, *mb = b->null_masks + rb * npr;
      int64_t la, lb;
      const uint8_t *pa = qv_row_table_row(a, ra, &la);
      const uint8_t *pb = qv_row_table_row(b, rb, &lb);
      bool e = la == lb && memcmp(ma, mb, (size_t)npr) == 0 && memcmp(pa, pb, (size_t)la) == 0;
      if (e && !null_equals_null && mask_any(ma, npr)) e = false;
      eq[i] = e;
    }
    emit(eq, base, m, a_ids, out_match, out_mismatch, out_num_mismatch);
  }
  return QV_OK;
}
