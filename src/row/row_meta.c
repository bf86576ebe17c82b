/*
 * row_meta.c — row layer: key column metadata from qv_types, row metadata
 * (column order, offsets, alignment, null mask width), flat column views of
 * qv_arrays, and the process-wide SIMD level. Sits on core only.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "row/row_internal.h"

/* ------------------------------------------------------------------------ */
/* Key column metadata                                                       */

qv_status qv_row_column_meta_from_type(const qv_type *t, qv_row_column_meta *out, qv_error *err) {
  if (t == NULL) return qv_error_set(err, QV_EARG, "row key type is NULL");
  qv_row_column_meta m = {0};
  switch (t->id) {
    case QV_NA:
      m.is_fixed_length = true;
      m.is_null_type = true;
      break;
    case QV_BOOL:
      m.is_fixed_length = true;
      m.fixed_length = 0;
      break;
    case QV_DICTIONARY: {
      int32_t bw = t->index_type ? qv_type_bit_width(t->index_type) : 0;
      if (t->index_type == NULL || !qv_type_id_is_integer(t->index_type->id) || bw < 8)
        return qv_error_set(err, QV_ETYPE, "dictionary key column has no integer index type");
      m.is_fixed_length = true;
      m.fixed_length = bw / 8;
      break;
    }
    case QV_BINARY:
    case QV_STRING: m.offset_width = 4; break;
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: m.offset_width = 8; break;
    default: {
      int32_t bw = qv_type_bit_width(t);
      char name[256];
      qv_type_to_string(t, name, sizeof name);
      if (t->n_children > 0 || t->id == QV_STRUCT || t->id == QV_SPARSE_UNION ||
          t->id == QV_DENSE_UNION)
        return qv_error_set(err, QV_ETYPE, "type %s is nested; row keys must be non-nested", name);
      if (bw <= 0 || bw % 8 != 0)
        return qv_error_set(err, QV_ETYPE,
                            "type %s cannot be a row key (not fixed-width, "
                            "binary-like or dictionary)",
                            name);
      m.is_fixed_length = true;
      m.fixed_length = bw / 8;
      break;
    }
  }
  *out = m;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Row metadata                                                              */

static bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/* The seed's rule b: widths that are powers of two or multiples of the row
 * alignment go first (var-length columns count as their 4-byte end slot). */
static bool sorts_first(const qv_row_column_meta *m, int32_t row_alignment) {
  int32_t w = qv_row_col_width(m);
  return is_pow2(w) || w % row_alignment == 0;
}

/* Strict "a goes before b" for the column order. */
static bool order_before(const qv_row_column_meta *cols, int32_t a, int32_t b,
                         int32_t row_alignment) {
  bool fa = sorts_first(&cols[a], row_alignment);
  bool fb = sorts_first(&cols[b], row_alignment);
  if (fa != fb) return fa;
  if (!fa) return a < b;
  int32_t wa = qv_row_col_width(&cols[a]), wb = qv_row_col_width(&cols[b]);
  if (wa != wb) return wa > wb;
  if (cols[a].is_fixed_length != cols[b].is_fixed_length) return cols[a].is_fixed_length;
  return a < b;
}

void qv_row_metadata_reset(qv_row_metadata *md) {
  if (md == NULL) return;
  free(md->cols);
  free(md->column_order);
  free(md->inverse_column_order);
  free(md->column_offsets);
  memset(md, 0, sizeof *md);
}

qv_status qv_row_metadata_init(qv_row_metadata *md, const qv_row_column_meta *cols,
                               int32_t num_cols, int32_t row_alignment, int32_t string_alignment,
                               qv_error *err) {
  memset(md, 0, sizeof *md);
  if (num_cols < 1 || num_cols > 65536)
    return qv_error_set(err, QV_EARG, "row metadata: %d key columns (expected 1 to 65536)",
                        (int)num_cols);
  if (!is_pow2(row_alignment) || row_alignment > 64)
    return qv_error_set(err, QV_EARG, "row alignment %d is not a power of two in [1, 64]",
                        (int)row_alignment);
  if (!is_pow2(string_alignment) || string_alignment > row_alignment)
    return qv_error_set(err, QV_EARG,
                        "string alignment %d is not a power of two <= row "
                        "alignment %d",
                        (int)string_alignment, (int)row_alignment);
  for (int32_t i = 0; i < num_cols; i++) {
    const qv_row_column_meta *c = &cols[i];
    if (c->is_fixed_length ? (c->fixed_length < 0 || c->fixed_length > (1 << 20))
                           : (c->offset_width != 4 && c->offset_width != 8))
      return qv_error_set(err, QV_EARG, "row metadata: key column %d is malformed", (int)i);
  }
  md->num_cols = num_cols;
  md->cols = malloc(sizeof(qv_row_column_meta) * (size_t)num_cols);
  md->column_order = malloc(sizeof(int32_t) * (size_t)num_cols);
  md->inverse_column_order = malloc(sizeof(int32_t) * (size_t)num_cols);
  md->column_offsets = malloc(sizeof(int32_t) * (size_t)num_cols);
  if (!md->cols || !md->column_order || !md->inverse_column_order || !md->column_offsets) {
    qv_row_metadata_reset(md);
    return qv_error_set(err, QV_ENOMEM, "row metadata: out of memory");
  }
  memcpy(md->cols, cols, sizeof(qv_row_column_meta) * (size_t)num_cols);
  md->row_alignment = row_alignment;
  md->string_alignment = string_alignment;

  /* Stable insertion sort by order_before. */
  int32_t *order = md->column_order;
  for (int32_t i = 0; i < num_cols; i++) {
    int32_t j = i;
    while (j > 0 && order_before(cols, i, order[j - 1], row_alignment)) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = i;
  }
  for (int32_t i = 0; i < num_cols; i++) md->inverse_column_order[order[i]] = i;

  int64_t off = 0;
  int32_t nvar = 0;
  for (int32_t i = 0; i < num_cols; i++) {
    const qv_row_column_meta *c = &cols[order[i]];
    if (c->is_fixed_length && c->fixed_length != 0 && !is_pow2(c->fixed_length))
      off += qv_row_padding(off, string_alignment);
    md->column_offsets[i] = (int32_t)off;
    if (!c->is_fixed_length) {
      if (nvar == 0) md->varbinary_end_array_offset = (int32_t)off;
      nvar++;
    }
    off += qv_row_col_width(c);
  }
  md->num_varbinary_cols = nvar;
  md->is_fixed_length = nvar == 0;
  off += qv_row_padding(off, nvar == 0 ? row_alignment : string_alignment);
  if (off > INT32_MAX / 2) {
    qv_row_metadata_reset(md);
    return qv_error_set(err, QV_EARG, "row metadata: fixed part of %lld bytes", (long long)off);
  }
  md->fixed_length = (int32_t)off;
  int32_t nb = 1;
  while (nb * 8 < num_cols) nb *= 2;
  md->null_masks_bytes_per_row = nb;
  return QV_OK;
}

qv_status qv_row_metadata_from_types(qv_row_metadata *md, qv_type *const *types, int32_t num_cols,
                                     int32_t row_alignment, int32_t string_alignment,
                                     qv_error *err) {
  memset(md, 0, sizeof *md);
  if (num_cols < 1 || num_cols > 65536)
    return qv_error_set(err, QV_EARG, "row metadata: %d key columns (expected 1 to 65536)",
                        (int)num_cols);
  qv_row_column_meta *cols = malloc(sizeof(qv_row_column_meta) * (size_t)num_cols);
  if (!cols) return qv_error_set(err, QV_ENOMEM, "row metadata: out of memory");
  for (int32_t i = 0; i < num_cols; i++) {
    qv_status st = qv_row_column_meta_from_type(types[i], &cols[i], err);
    if (st != QV_OK) {
      free(cols);
      return qv_error_prefix(err, st, "row key column %d: ", (int)i);
    }
  }
  qv_status st = qv_row_metadata_init(md, cols, num_cols, row_alignment, string_alignment, err);
  free(cols);
  return st;
}

qv_status qv_row_metadata_copy(qv_row_metadata *dst, const qv_row_metadata *src, qv_error *err) {
  return qv_row_metadata_init(dst, src->cols, src->num_cols, src->row_alignment,
                              src->string_alignment, err);
}

bool qv_row_metadata_compatible(const qv_row_metadata *a, const qv_row_metadata *b) {
  if (a->num_cols != b->num_cols || a->row_alignment != b->row_alignment ||
      a->string_alignment != b->string_alignment)
    return false;
  for (int32_t i = 0; i < a->num_cols; i++) {
    if (a->cols[i].is_fixed_length != b->cols[i].is_fixed_length ||
        a->cols[i].fixed_length != b->cols[i].fixed_length ||
        a->cols[i].is_null_type != b->cols[i].is_null_type)
      return false;
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* Column views                                                              */

static bool meta_equal(const qv_row_column_meta *a, const qv_row_column_meta *b) {
  return a->is_fixed_length == b->is_fixed_length && a->is_null_type == b->is_null_type &&
         a->fixed_length == b->fixed_length && a->offset_width == b->offset_width;
}

static qv_status colview(const qv_row_column_meta *want, const qv_array *a, int32_t i,
                         qv_row_colview *v, qv_error *err) {
  if (a == NULL || a->type == NULL)
    return qv_error_set(err, QV_EARG, "row key column %d: array is NULL", (int)i);
  qv_row_column_meta m;
  qv_status st = qv_row_column_meta_from_type(a->type, &m, err);
  if (st != QV_OK) return qv_error_prefix(err, st, "row key column %d: ", (int)i);
  if (!meta_equal(&m, want)) {
    char name[256];
    qv_type_to_string(a->type, name, sizeof name);
    return qv_error_set(err, QV_ETYPE,
                        "row key column %d: type %s does not match the row "
                        "metadata",
                        (int)i, name);
  }
  memset(v, 0, sizeof *v);
  v->meta = m;
  v->length = a->length;
  if (m.is_null_type) return QV_OK;
  int32_t need = m.is_fixed_length ? 2 : 3;
  if (a->n_buffers < need)
    return qv_error_set(err, QV_EINVAL, "row key column %d: array has %d buffers, expected %d",
                        (int)i, (int)a->n_buffers, (int)need);
  for (int32_t b = 1; b < need; b++)
    if (a->buffers[b] == NULL && a->length > 0)
      return qv_error_set(err, QV_EINVAL, "row key column %d: buffer %d is missing", (int)i,
                          (int)b);
  if (a->buffers[0] != NULL && a->null_count != 0) {
    v->validity = a->buffers[0]->data;
    v->validity_offset = a->offset;
  }
  if (a->length == 0) return QV_OK;
  const uint8_t *b1 = a->buffers[1]->data;
  if (m.is_fixed_length) {
    if (m.fixed_length == 0) {
      v->values = b1;
      v->values_bit_offset = a->offset;
    } else {
      v->values = b1 + a->offset * (int64_t)m.fixed_length;
    }
  } else {
    if (m.offset_width == 4) v->off32 = (const int32_t *)(const void *)b1 + a->offset;
    else v->off64 = (const int64_t *)(const void *)b1 + a->offset;
    v->data = a->buffers[2]->data;
  }
  return QV_OK;
}

qv_status qv_row_colviews(const qv_row_metadata *md, qv_array *const *cols, qv_row_colview *out,
                          qv_error *err) {
  if (cols == NULL) return qv_error_set(err, QV_EARG, "row key columns are NULL");
  for (int32_t i = 0; i < md->num_cols; i++)
    QV_RETURN_NOT_OK(colview(&md->cols[i], cols[i], i, &out[i], err));
  return QV_OK;
}

qv_status qv_row_check_sel(const int64_t *sel, int64_t n, int64_t length, const char *what,
                           qv_error *err) {
  if (n < 0) return qv_error_set(err, QV_EARG, "%s: negative count %lld", what, (long long)n);
  if (sel == NULL) {
    if (n > length)
      return qv_error_set(err, QV_ERANGE, "%s: %lld rows requested but only %lld exist", what,
                          (long long)n, (long long)length);
    return QV_OK;
  }
  for (int64_t i = 0; i < n; i++)
    if (sel[i] < 0 || sel[i] >= length)
      return qv_error_set(err, QV_ERANGE, "%s: index %lld at position %lld is outside [0, %lld)",
                          what, (long long)sel[i], (long long)i, (long long)length);
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* SIMD level                                                                */

static atomic_int g_simd_level = -2; /* -2: not yet initialised */

static int supported_level(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return QV_ROW_SIMD_AVX2;
#endif
  return QV_ROW_SIMD_SCALAR;
}

qv_row_simd qv_row_set_simd_level(qv_row_simd level) {
  int sup = supported_level();
  int lv = (level == QV_ROW_SIMD_AUTO || level > sup) ? sup : (int)level;
  if (lv < 0) lv = 0;
  atomic_store(&g_simd_level, lv);
  return (qv_row_simd)lv;
}

qv_row_simd qv_row_simd_level(void) {
  int lv = atomic_load_explicit(&g_simd_level, memory_order_relaxed);
  if (lv == -2) {
    const char *env = getenv("QV_ROW_SIMD");
    bool scalar = env && strcmp(env, "scalar") == 0;
    return qv_row_set_simd_level(scalar ? QV_ROW_SIMD_SCALAR : QV_ROW_SIMD_AUTO);
  }
  return (qv_row_simd)lv;
}

bool qv_row_use_avx2(void) { return qv_row_simd_level() == QV_ROW_SIMD_AVX2; }
