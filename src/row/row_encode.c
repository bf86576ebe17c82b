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

/* Fixed-length tables: the fixed-part padding zeroed at once, then the
 * columns one at a time (a pair of adjacent equal-width 4- or 8-byte
 * columns filling a whole row interleaves with AVX2). */
static void encode_fixed_rows(const qv_row_metadata *md, const qv_row_colview *views,
                              const int64_t *sel, int64_t n, uint8_t *fixed_base, int64_t stride,
                              int32_t ng) {
  int32_t nc = md->num_cols;
  int64_t fl = md->fixed_length;
  if (ng > 0) memset(fixed_base, 0, (size_t)(n * fl));
  int32_t first_fixed = 0;
  if (nc == 2 && sel == NULL && qv_row_use_avx2()) {
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
  for (int32_t j = first_fixed; j < nc; j++)
    encode_fixed_col(fixed_base, stride, NULL, NULL, md->column_offsets[j],
                     &views[md->column_order[j]], sel, n);
}

/* How encode_var_rows writes one column of a row. */
enum { ENC_NULLTYPE, ENC_BOOL, ENC_W1, ENC_W2, ENC_W4, ENC_W8, ENC_W16, ENC_WN, ENC_VAR };

typedef struct enc_col {
  const qv_row_colview *v;
  int32_t kind;
  int32_t w;            /* fixed width (ENC_W*) */
  int32_t off;          /* byte of the row: the value, or the var field's end slot */
  const uint8_t *bound; /* var: end of the column's bytes (the last offset) */
} enc_col;

/* Copy len bytes of a var field. Short fields (the common case: names,
 * words, ids) are copied as one or two 16-byte moves when the source has
 * that many bytes left before `bound`; the copy may then write up to 31
 * bytes past dst + len, which encode_var_rows allows (see there). */
static inline void copy_field(uint8_t *dst, const uint8_t *src, int64_t len, const uint8_t *bound) {
  if (len <= 16 && src + 16 <= bound) {
    memcpy(dst, src, 16);
  } else if (len <= 32 && src + 32 <= bound) {
    memcpy(dst, src, 16);
    memcpy(dst + 16, src + 16, 16);
  } else {
    memcpy(dst, src, (size_t)len);
  }
}

/* kFieldMask[len]: 0xff for the first len bytes of 16, 0 after. */
static const uint8_t kFieldMask[17][16] = {
#define M(n)                                                                                       \
  {                                                                                                \
    0 < n ? 0xff : 0, 1 < n ? 0xff : 0, 2 < n ? 0xff : 0, 3 < n ? 0xff : 0, 4 < n ? 0xff : 0,      \
        5 < n ? 0xff : 0, 6 < n ? 0xff : 0, 7 < n ? 0xff : 0, 8 < n ? 0xff : 0, 9 < n ? 0xff : 0,  \
        10 < n ? 0xff : 0, 11 < n ? 0xff : 0, 12 < n ? 0xff : 0, 13 < n ? 0xff : 0,                \
        14 < n ? 0xff : 0, 15 < n ? 0xff : 0                                                       \
  }
    M(0), M(1),  M(2),  M(3),  M(4),  M(5),  M(6),  M(7),  M(8),
    M(9), M(10), M(11), M(12), M(13), M(14), M(15), M(16),
#undef M
};

/* Zero [p, p + len) for a padding run of fewer than row_alignment bytes:
 * one 16-byte store when len <= 16 (writing past p + len, as copy_field). */
static inline void zero_pad(uint8_t *p, int64_t len) {
  static const uint8_t zeros[16];
  if (len <= 16) memcpy(p, zeros, 16);
  else memset(p, 0, (size_t)len);
}

/* Varying-length tables: one pass over the rows, each written whole (its
 * fixed-part padding, fixed columns, var fields with their end offsets and
 * alignment padding, the row-end padding) while it is in cache, instead of
 * one pass per column. Rows are written in order and every byte of a row
 * is written, so the stores that run past a field (copy_field, zero_pad:
 * at most 31 bytes) only touch bytes that a later row or field rewrites;
 * past the last row they land in the buffer's padding (QV_ROW_PADDING,
 * 64 bytes), which is zeroed again at the end. */
static void encode_var_rows(const qv_row_metadata *md, const qv_row_colview *views,
                            const int64_t *sel, int64_t n, uint8_t *var, const int64_t *offs,
                            const gap *gaps, int32_t ng, enc_col *cols) {
  int32_t nc = md->num_cols;
  int32_t fl = md->fixed_length;
  int32_t salign = md->string_alignment;
  for (int32_t j = 0, k = 0; j < nc; j++) {
    const qv_row_colview *v = &views[md->column_order[j]];
    enc_col *c = &cols[j];
    c->v = v;
    c->off = md->column_offsets[j];
    c->w = v->meta.fixed_length;
    c->bound = NULL;
    if (!v->meta.is_fixed_length) {
      c->kind = ENC_VAR;
      c->off = md->varbinary_end_array_offset + 4 * k++;
      int64_t last = v->off32 ? v->off32[v->length] : v->off64[v->length];
      c->bound = v->data + last;
    } else if (v->meta.is_null_type) {
      c->kind = ENC_NULLTYPE;
    } else if (c->w == 0) {
      c->kind = ENC_BOOL;
    } else {
      c->kind = c->w == 1    ? ENC_W1
                : c->w == 2  ? ENC_W2
                : c->w == 4  ? ENC_W4
                : c->w == 8  ? ENC_W8
                : c->w == 16 ? ENC_W16
                             : ENC_WN;
    }
  }
  /* The common key: one var field, no nulls, a fixed part of at most 32
   * bytes (zeroed with two stores before the fields are written over it). */
  bool fast = md->num_varbinary_cols == 1 && fl <= 32;
  for (int32_t j = 0; j < nc && fast; j++)
    fast = cols[j].v->validity == NULL && cols[j].kind != ENC_WN && cols[j].kind != ENC_W16;
  if (fast) {
    /* Everything the loop reads lives in locals: the row stores (uint8_t)
     * may alias any memory, so fields read through pointers would be
     * reloaded after each of them. */
    enum { MAX_FAST_FIXED = 8 };
    int32_t nf = 0, voff = 0;
    int32_t fkind[MAX_FAST_FIXED], foff[MAX_FAST_FIXED];
    const uint8_t *fval[MAX_FAST_FIXED];
    int64_t fbit[MAX_FAST_FIXED];
    const qv_row_colview *vv = NULL;
    const uint8_t *bound = NULL;
    for (int32_t j = 0; j < nc; j++) {
      const enc_col *c = &cols[j];
      if (c->kind == ENC_VAR) {
        vv = c->v;
        voff = c->off;
        bound = c->bound;
      } else if (c->kind != ENC_NULLTYPE && nf < MAX_FAST_FIXED) {
        fkind[nf] = c->kind;
        foff[nf] = c->off;
        fval[nf] = c->v->values;
        fbit[nf] = c->v->values_bit_offset;
        nf++;
      } else if (c->kind != ENC_NULLTYPE) {
        fast = false;
      }
    }
    if (fast && vv->off32 != NULL) {
      const int32_t *o32 = vv->off32;
      const uint8_t *data = vv->data;
      bool two = fl > 16;
      for (int64_t i = 0; i < n; i++) {
        int64_t r = sel ? sel[i] : i;
        uint8_t *row = var + offs[i];
        int64_t row_len = offs[i + 1] - offs[i];
        int64_t b = o32[r], len = (int64_t)o32[r + 1] - b;
        /* The fixed part zeroed (its tail past fl is overwritten by the
         * field below), then its columns. */
        zero_pad(row, 16);
        if (two) zero_pad(row + 16, 16);
        for (int32_t f = 0; f < nf; f++) {
          uint8_t *dst = row + foff[f];
          const uint8_t *src = fval[f];
          switch (fkind[f]) {
            case ENC_BOOL: *dst = (uint8_t)qv_bit_get(src, fbit[f] + r); break;
            case ENC_W1: *dst = src[r]; break;
            case ENC_W2: memcpy(dst, src + r * 2, 2); break;
            case ENC_W4: memcpy(dst, src + r * 4, 4); break;
            default: memcpy(dst, src + r * 8, 8); break; /* ENC_W8 */
          }
        }
        uint32_t end = (uint32_t)(fl + len);
        memcpy(row + voff, &end, 4);
        const uint8_t *p = data + b;
        if (len <= 16 && p + 16 <= bound && row_len <= fl + 16) {
          /* Field and row-end padding in one 16-byte store, the bytes past
           * the field masked to zero. */
          uint8_t w[16];
          memcpy(w, p, 16);
          for (int k = 0; k < 16; k++) w[k] &= kFieldMask[len][k];
          memcpy(row + fl, w, 16);
        } else {
          copy_field(row + fl, p, len, bound);
          if (row_len > (int64_t)end) zero_pad(row + end, row_len - (int64_t)end);
        }
      }
      memset(var + offs[n], 0, 32);
      return;
    }
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t r = sel ? sel[i] : i;
    uint8_t *row = var + offs[i];
    int64_t row_len = offs[i + 1] - offs[i];
    for (int32_t g = 0; g < ng; g++)
      memset(row + gaps[g].begin, 0, (size_t)(gaps[g].end - gaps[g].begin));
    int64_t pos = fl; /* end of the var bytes written so far */
    bool first_var = true;
    for (int32_t j = 0; j < nc; j++) {
      const enc_col *c = &cols[j];
      const qv_row_colview *v = c->v;
      bool null = v->validity && !qv_bit_get(v->validity, v->validity_offset + r);
      uint8_t *dst = row + c->off;
      switch (c->kind) {
        case ENC_NULLTYPE: *dst = 0; break;
        case ENC_BOOL:
          *dst = null ? 0 : (uint8_t)qv_bit_get(v->values, v->values_bit_offset + r);
          break;
        case ENC_W1: *dst = null ? 0 : v->values[r]; break;
        case ENC_W2:
          if (null) memset(dst, 0, 2);
          else memcpy(dst, v->values + r * 2, 2);
          break;
        case ENC_W4:
          if (null) memset(dst, 0, 4);
          else memcpy(dst, v->values + r * 4, 4);
          break;
        case ENC_W8:
          if (null) memset(dst, 0, 8);
          else memcpy(dst, v->values + r * 8, 8);
          break;
        case ENC_W16:
          if (null) memset(dst, 0, 16);
          else memcpy(dst, v->values + r * 16, 16);
          break;
        case ENC_WN:
          if (null) memset(dst, 0, (size_t)c->w);
          else memcpy(dst, v->values + r * c->w, (size_t)c->w);
          break;
        default: { /* ENC_VAR */
          if (!first_var) {
            int64_t pad = qv_row_padding(pos, salign);
            if (pad) zero_pad(row + pos, pad);
            pos += pad;
          }
          first_var = false;
          int64_t len = 0;
          if (!null) {
            const uint8_t *p;
            qv_row_colview_var(v, r, &p, &len);
            copy_field(row + pos, p, len, c->bound);
          }
          pos += len;
          uint32_t end = (uint32_t)pos;
          memcpy(dst, &end, 4);
          break;
        }
      }
    }
    if (row_len > pos) zero_pad(row + pos, row_len - pos);
  }
  /* What the last row's stores wrote past its end. */
  memset(var + offs[n], 0, 32);
}

static qv_status encode_impl(qv_row_table *t, qv_array *const *cols, const int64_t *sel, int64_t n,
                             qv_error *err) {
  const qv_row_metadata *md = &t->md;
  int32_t nc = md->num_cols;
  /* Guard temporaries (core/guard_internal.h): freed also when a mapped
   * column's file shrinks while this runs. */
  qv_row_colview *views = qv_guard_tmp_alloc(nc, sizeof(qv_row_colview), false);
  gap *gaps = qv_guard_tmp_alloc(nc + 1, sizeof(gap), false);
  enc_col *ecols = qv_guard_tmp_alloc(nc, sizeof(enc_col), false);
  qv_status st = QV_OK;
  if (!views || !gaps || !ecols) {
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
    const qv_row_colview *one = NULL; /* the only var column, when it has no nulls */
    for (int32_t j = 0; j < nc && md->num_varbinary_cols == 1; j++)
      if (!views[j].meta.is_fixed_length && views[j].validity == NULL) one = &views[j];
    int64_t total = offs[0];
    if (one != NULL && one->off32 != NULL) {
      /* One pass: lengths, alignment and prefix sums (32-bit offsets: a
       * row cannot pass the in-row offsets' range, nor the sum int64's). */
      int64_t ra = md->row_alignment;
      for (int64_t i = 0; i < n; i++) {
        int64_t r = sel ? sel[i] : i;
        int64_t L = fl + (int64_t)one->off32[r + 1] - (int64_t)one->off32[r];
        total += (L + ra - 1) & ~(ra - 1);
        offs[i + 1] = total;
      }
      goto sized;
    }
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
    for (int64_t i = 0; i < n; i++) {
      int64_t L = offs[i + 1];
      L += qv_row_padding(L, md->row_alignment);
      if (qv_add_overflow(total, L, &total)) {
        st = qv_error_set(err, QV_ENOMEM, "row encode: var size overflows");
        goto done;
      }
      offs[i + 1] = total;
    }
  sized:
    /* Phase 2: grow the var buffer to the exact size. */
    if ((st = qv_row_table_reserve_bytes(t, total, err)) != QV_OK) goto done;
  }
  uint8_t *fixed_base = md->is_fixed_length ? t->fixed + base * fl : NULL;
  int64_t stride = md->is_fixed_length ? fl : 0;
  int32_t ng = fixed_part_gaps(md, gaps);
  if (!md->is_fixed_length) {
    encode_var_rows(md, views, sel, n, t->var, offs, gaps, ng, ecols);
  } else {
    encode_fixed_rows(md, views, sel, n, fixed_base, stride, ng);
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
  qv_guard_tmp_free(views);
  qv_guard_tmp_free(gaps);
  qv_guard_tmp_free(ecols);
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
