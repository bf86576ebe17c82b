/*
 * row_table.c — row layer: the row table's three buffers (null masks, fixed
 * rows or int64 row offsets, var-length rows), their growth (by doubling,
 * at least to what is needed, never shrinking, 64 zero bytes of padding
 * past each), clean / append-empty / append-selection-from.
 *
 * Buffers are plain malloc/realloc memory owned by the table: realloc lets
 * glibc grow multi-gigabyte buffers with mremap instead of copying, which
 * keeps the >4 GB case within about its own size of memory.
 */
#include <stdlib.h>

#include "row/row_internal.h"

/* Bytes allocated for a buffer that can hold `bytes` bytes of content. */
static int64_t padded(int64_t bytes) { return bytes + QV_ROW_PADDING; }

static int64_t fixed_bytes_for_rows(const qv_row_metadata *md, int64_t rows) {
  return md->is_fixed_length ? rows * (int64_t)md->fixed_length
                             : (rows + 1) * (int64_t)sizeof(int64_t);
}

/* Grow *p from old_bytes to new_bytes (both content sizes, padding added),
 * zeroing the padding past the new content. */
static qv_status grow(uint8_t **p, int64_t old_bytes, int64_t new_bytes, const char *what,
                      qv_error *err) {
  (void)old_bytes;
  if (new_bytes > INT64_MAX / 2 || (uint64_t)padded(new_bytes) > SIZE_MAX)
    return qv_error_set(err, QV_ENOMEM, "row table: %s of %lld bytes is too large", what,
                        (long long)new_bytes);
  uint8_t *q = realloc(*p, (size_t)padded(new_bytes));
  if (q == NULL)
    return qv_error_set(err, QV_ENOMEM, "row table: cannot grow %s to %lld bytes", what,
                        (long long)padded(new_bytes));
  memset(q + new_bytes, 0, QV_ROW_PADDING);
  *p = q;
  return QV_OK;
}

qv_status qv_row_table_init(qv_row_table *t, const qv_row_metadata *md, qv_error *err) {
  memset(t, 0, sizeof *t);
  QV_RETURN_NOT_OK(qv_row_metadata_copy(&t->md, md, err));
  t->null_masks = calloc(1, padded(0));
  t->fixed = calloc(1, (size_t)padded(fixed_bytes_for_rows(&t->md, 0)));
  if (!t->md.is_fixed_length) t->var = calloc(1, padded(0));
  if (!t->null_masks || !t->fixed || (!t->md.is_fixed_length && !t->var)) {
    qv_row_table_reset(t);
    return qv_error_set(err, QV_ENOMEM, "row table: out of memory");
  }
  return QV_OK;
}

void qv_row_table_reset(qv_row_table *t) {
  if (t == NULL) return;
  free(t->null_masks);
  free(t->fixed);
  free(t->var);
  qv_row_metadata_reset(&t->md);
  memset(t, 0, sizeof *t);
}

void qv_row_table_clean(qv_row_table *t) {
  t->num_rows = 0;
  if (!t->md.is_fixed_length) ((int64_t *)(void *)t->fixed)[0] = 0;
}

int64_t qv_row_table_buffer_size(const qv_row_table *t, int buffer_index) {
  switch (buffer_index) {
    case 0: return padded(t->rows_capacity_ * (int64_t)t->md.null_masks_bytes_per_row);
    case 1: return padded(fixed_bytes_for_rows(&t->md, t->rows_capacity_));
    case 2: return t->md.is_fixed_length ? 0 : padded(t->bytes_capacity_);
    default: return 0;
  }
}

/* Make room for `extra` more rows in the null masks and fixed buffers. */
qv_status qv_row_table_reserve_rows(qv_row_table *t, int64_t extra, qv_error *err) {
  int64_t need;
  if (extra < 0 || qv_add_overflow(t->num_rows, extra, &need) ||
      need > (INT64_MAX / 64) / (t->md.fixed_length + 16))
    return qv_error_set(err, QV_ENOMEM, "row table: %lld rows are too many", (long long)extra);
  if (need <= t->rows_capacity_) return QV_OK;
  int64_t cap = t->rows_capacity_ * 2;
  if (cap < need) cap = need;
  int64_t npr = t->md.null_masks_bytes_per_row;
  QV_RETURN_NOT_OK(grow(&t->null_masks, t->rows_capacity_ * npr, cap * npr, "null masks", err));
  QV_RETURN_NOT_OK(grow(&t->fixed, fixed_bytes_for_rows(&t->md, t->rows_capacity_),
                        fixed_bytes_for_rows(&t->md, cap),
                        t->md.is_fixed_length ? "fixed rows" : "row offsets", err));
  t->rows_capacity_ = cap;
  return QV_OK;
}

/* Make room for var bytes up to `total` (absolute size of the var data). */
qv_status qv_row_table_reserve_bytes(qv_row_table *t, int64_t total, qv_error *err) {
  if (total <= t->bytes_capacity_) return QV_OK;
  int64_t cap = t->bytes_capacity_ * 2;
  if (cap < total) cap = total;
  QV_RETURN_NOT_OK(grow(&t->var, t->bytes_capacity_, cap, "var-length rows", err));
  t->bytes_capacity_ = cap;
  return QV_OK;
}

qv_status qv_row_table_append_empty(qv_row_table *t, int64_t num_rows, int64_t num_extra_bytes,
                                    qv_error *err) {
  if (num_rows < 0 || num_extra_bytes < 0)
    return qv_error_set(err, QV_EARG, "row table: negative append size");
  QV_RETURN_NOT_OK(qv_row_table_reserve_rows(t, num_rows, err));
  int64_t npr = t->md.null_masks_bytes_per_row;
  memset(t->null_masks + t->num_rows * npr, 0, (size_t)(num_rows * npr));
  if (t->md.is_fixed_length) {
    memset(t->fixed + t->num_rows * (int64_t)t->md.fixed_length, 0,
           (size_t)(num_rows * t->md.fixed_length));
  } else {
    int64_t *off = (int64_t *)(void *)t->fixed;
    int64_t end = off[t->num_rows], want;
    if (qv_add_overflow(end, num_extra_bytes, &want))
      return qv_error_set(err, QV_ENOMEM, "row table: var size overflows");
    QV_RETURN_NOT_OK(qv_row_table_reserve_bytes(t, want, err));
    for (int64_t i = 1; i <= num_rows; i++) off[t->num_rows + i] = end;
  }
  t->num_rows += num_rows;
  return QV_OK;
}

qv_status qv_row_table_append_selection_from(qv_row_table *t, const qv_row_table *from,
                                             const int64_t *ids, int64_t n, qv_error *err) {
  if (t == from) return qv_error_set(err, QV_EARG, "row table: cannot append a table to itself");
  if (!qv_row_metadata_compatible(&t->md, &from->md))
    return qv_error_set(err, QV_EARG, "row table: source metadata is not compatible");
  QV_RETURN_NOT_OK(qv_row_check_sel(ids, n, from->num_rows, "append selection", err));
  QV_RETURN_NOT_OK(qv_row_table_reserve_rows(t, n, err));
  int64_t base = t->num_rows;
  if (t->md.is_fixed_length) {
    int64_t fl = t->md.fixed_length;
    uint8_t *dst = t->fixed + base * fl;
    if (ids == NULL) {
      memcpy(dst, from->fixed, (size_t)(n * fl));
    } else {
      for (int64_t i = 0; i < n; i++) memcpy(dst + i * fl, from->fixed + ids[i] * fl, (size_t)fl);
    }
  } else {
    const int64_t *src_off = qv_row_table_offsets(from);
    int64_t *off = (int64_t *)(void *)t->fixed;
    int64_t total = off[base];
    for (int64_t i = 0; i < n; i++) {
      int64_t r = ids ? ids[i] : i;
      total += src_off[r + 1] - src_off[r];
      off[base + i + 1] = total;
    }
    QV_RETURN_NOT_OK(qv_row_table_reserve_bytes(t, total, err));
    if (ids == NULL) {
      memcpy(t->var + off[base], from->var, (size_t)(src_off[n] - src_off[0]));
    } else {
      for (int64_t i = 0; i < n; i++) {
        int64_t r = ids[i];
        memcpy(t->var + off[base + i], from->var + src_off[r],
               (size_t)(src_off[r + 1] - src_off[r]));
      }
    }
  }
  int64_t npr = t->md.null_masks_bytes_per_row;
  if (ids == NULL) {
    memcpy(t->null_masks + base * npr, from->null_masks, (size_t)(n * npr));
  } else {
    for (int64_t i = 0; i < n; i++)
      memcpy(t->null_masks + (base + i) * npr, from->null_masks + ids[i] * npr, (size_t)npr);
  }
  t->num_rows += n;
  return QV_OK;
}
