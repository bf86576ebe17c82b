/*
 * concat.c — qv_array_concat: join arrays of one type into a single array
 * with fresh contiguous buffers. Core layer; the IPC reader uses it for
 * delta dictionaries and the table layer to combine batches.
 *
 * Per layout:
 *  - validity bitmaps are merged honouring each input's offset, and left
 *    out (NULL) when no input has nulls;
 *  - fixed-width values and bool bits are copied;
 *  - binary/string/list/map offsets are rebased onto the concatenated data
 *    or child (only each input's referenced range [off[o], off[o+len]) is
 *    copied); a 32-bit offset that would pass INT32_MAX is QV_ERANGE;
 *  - binary/string views: the 16-byte views are copied with their buffer
 *    index shifted, and the variadic data buffers are shared, not copied;
 *  - list views: each input's child is cut to the range its (non-empty)
 *    views reference, concatenated, and its offsets shifted accordingly;
 *  - fixed_size_list: child ranges [off*size, (off+len)*size);
 *  - struct / sparse union: children sliced by the parent offset/length,
 *    then concatenated; union type ids copied;
 *  - dense union: for each input and child, the referenced child range
 *    [min offset, max offset] is concatenated and offsets shifted;
 *  - dictionary: inputs sharing one dictionary (same pointer) keep it and
 *    concatenate indices; otherwise the distinct dictionaries (by pointer,
 *    first-seen order) are concatenated once each and each input's valid
 *    indices shifted (QV_ERANGE if the index type overflows; null slots
 *    get index 0). Equal-by-value dictionaries behind different pointers
 *    are not detected (no value comparison);
 *  - run-end encoded: only the runs an input's logical range covers, with
 *    the first and last runs clipped, run ends shifted; values
 *    concatenated over the same physical runs;
 *  - null type: lengths add up.
 * Inputs are assumed structurally valid (qv_array_validate); types must be
 * equal ignoring metadata. The copy runs under the mapped-read guard
 * (guard.c), after the inputs' mapped buffers are checked.
 */
#include <stdlib.h>
#include <string.h>

#include "core/guard_internal.h"
#include "core/kernels_internal.h"

static qv_status concat_impl(qv_array *const *in, int64_t n, qv_array **out, qv_error *err);

static qv_status oom(qv_error *err, const char *what) {
  return qv_error_set(err, QV_ENOMEM, "concat: out of memory (%s)", what);
}

/* Temporaries are the guard's (core/guard_internal.h): a fault in the
 * middle of a concat (a file shrinking while it runs) frees them. Output
 * arrays and buffers are linked into the result as soon as they exist, so
 * that the caller's unref of the partial result frees them. */
static void *tcalloc(size_t n, size_t size) { return qv_guard_tmp_alloc((int64_t)n, size, true); }
static void *tmalloc(size_t bytes) { return qv_guard_tmp_alloc(1, bytes, false); }
static void tfree(void *p) { qv_guard_tmp_free(p); }

/* Merge validity bitmaps into out->buffers[0] (left NULL if no nulls). */
static qv_status concat_validity(qv_array *const *in, int64_t n, int64_t total, qv_array *out,
                                 qv_error *err) {
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; i++) nulls += qv_array_null_count(in[i]);
  out->null_count = nulls;
  if (nulls == 0) return QV_OK;
  QV_RETURN_NOT_OK(qv_buffer_alloc((total + 7) / 8, &out->buffers[0], err));
  qv_buffer *bits = out->buffers[0];
  int64_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    const qv_array *a = in[i];
    if (a->buffers[0] == NULL) qvk_bits_set_range(bits->data, pos, a->length);
    else qv_bitmap_copy(bits->data, pos, a->buffers[0]->data, a->offset, a->length);
    pos += a->length;
  }
  return QV_OK;
}

/* Slices of child `k` of each input, over per-input ranges, concatenated. */
static qv_status concat_child_ranges(qv_array *const *in, int64_t n, int32_t k,
                                     const int64_t *start, const int64_t *len, qv_array **out,
                                     qv_error *err) {
  qv_array **parts = tcalloc((size_t)(n > 0 ? n : 1), sizeof *parts);
  if (parts == NULL) return oom(err, "child slices");
  qv_guard_tmp_on_recover(parts, qv_guard_tmp_unref_arrays);
  qv_status st = QV_OK;
  for (int64_t i = 0; i < n && st == QV_OK; i++)
    st = qv_array_slice(in[i]->children[k], len[i] > 0 ? start[i] : 0, len[i], &parts[i], err);
  if (st == QV_OK) st = concat_impl(parts, n, out, err);
  for (int64_t i = 0; i < n; i++) qv_array_unref(parts[i]);
  tfree(parts);
  return st;
}

/* Copy buffer `slot` (values of `width` bytes, indexed by the input's
 * offset) of every input into one new buffer. */
static qv_status concat_slot(qv_array *const *in, int64_t n, int64_t total, int32_t width,
                             int32_t slot, qv_buffer **out, qv_error *err) {
  int64_t bytes;
  if (qv_mul_overflow(total, width, &bytes)) return oom(err, "values");
  QV_RETURN_NOT_OK(qv_buffer_alloc(bytes, out, err));
  uint8_t *dst = (*out)->data;
  for (int64_t i = 0; i < n; i++) {
    const qv_array *a = in[i];
    if (a->length == 0) continue;
    memcpy(dst, a->buffers[slot]->data + a->offset * width, (size_t)(a->length * width));
    dst += a->length * width;
  }
  return QV_OK;
}

static qv_status concat_fixed(qv_array *const *in, int64_t n, int64_t total, int32_t width,
                              qv_array *out, qv_error *err) {
  return concat_slot(in, n, total, width, 1, &out->buffers[1], err);
}

static qv_status concat_bool(qv_array *const *in, int64_t n, int64_t total, qv_array *out,
                             qv_error *err) {
  QV_RETURN_NOT_OK(qv_buffer_alloc((total + 7) / 8, &out->buffers[1], err));
  qv_buffer *buf = out->buffers[1];
  int64_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    if (in[i]->length == 0) continue; /* empty arrays may lack buffers */
    qv_bitmap_copy(buf->data, pos, in[i]->buffers[1]->data, in[i]->offset, in[i]->length);
    pos += in[i]->length;
  }
  return QV_OK;
}

static qv_status offsets_overflow(qv_error *err, const qv_type *t, int64_t need) {
  char name[128];
  qv_type_to_string(t, name, sizeof name);
  return qv_error_set(err, QV_ERANGE,
                      "concat: combined %s data needs offset %lld, beyond the 32-bit "
                      "offset limit %d; use the large_ variant",
                      name, (long long)need, INT32_MAX);
}

/*
 * Offsets-based layouts (binary, string, list, map, 32- or 64-bit). Writes
 * the rebased offsets buffer; fills start[i]/len[i] with the range of data
 * or child that input i references.
 */
static qv_status concat_offsets(qv_array *const *in, int64_t n, int64_t total, bool large,
                                qv_array *out, int64_t *start, int64_t *len, qv_error *err) {
  int32_t w = large ? 8 : 4;
  QV_RETURN_NOT_OK(qv_buffer_alloc((total + 1) * w, &out->buffers[1], err));
  qv_buffer *buf = out->buffers[1]; /* in the output already: freed with it */
  int64_t base = 0, pos = 0;
  for (int64_t i = 0; i < n; i++) {
    const qv_array *a = in[i];
    if (a->length == 0) { /* may have an empty offsets buffer */
      start[i] = len[i] = 0;
      continue;
    }
    const uint8_t *src = a->buffers[1]->data;
    int64_t first = qv_load_int(src, w, false, a->offset);
    int64_t last = qv_load_int(src, w, false, a->offset + a->length);
    start[i] = first;
    len[i] = last - first;
    if (len[i] < 0 || (!large && base + len[i] > INT32_MAX)) {
      if (len[i] < 0)
        return qv_error_set(err, QV_EINVAL,
                            "concat: array %lld has decreasing offsets (%lld then %lld)",
                            (long long)i, (long long)first, (long long)last);
      return offsets_overflow(err, a->type, base + len[i]);
    }
    if (large) {
      int64_t *d = (int64_t *)buf->data + pos;
      for (int64_t j = 0; j < a->length; j++)
        d[j] = base + qv_load_int(src, 8, false, a->offset + j) - first;
    } else {
      int32_t *d = (int32_t *)buf->data + pos;
      const int32_t *s = (const int32_t *)src + a->offset;
      int32_t delta = (int32_t)(base - first);
      for (int64_t j = 0; j < a->length; j++) d[j] = s[j] + delta;
    }
    pos += a->length;
    base += len[i];
  }
  qvk_store_int(buf->data, w, total, base);
  return QV_OK;
}

static qv_status concat_binary(qv_array *const *in, int64_t n, int64_t total, bool large,
                               qv_array *out, qv_error *err) {
  int64_t *start = tcalloc((size_t)(2 * n), sizeof *start);
  if (start == NULL) return oom(err, "ranges");
  int64_t *len = start + n;
  qv_status st = concat_offsets(in, n, total, large, out, start, len, err);
  int64_t bytes = 0;
  for (int64_t i = 0; st == QV_OK && i < n; i++) bytes += len[i];
  if (st == QV_OK) st = qv_buffer_alloc(bytes, &out->buffers[2], err);
  if (st == QV_OK) {
    uint8_t *dst = out->buffers[2]->data;
    for (int64_t i = 0; i < n; i++) {
      if (len[i] == 0) continue;
      memcpy(dst, in[i]->buffers[2]->data + start[i], (size_t)len[i]);
      dst += len[i];
    }
  }
  tfree(start);
  return st;
}

static qv_status concat_list(qv_array *const *in, int64_t n, int64_t total, bool large,
                             qv_array *out, qv_error *err) {
  int64_t *start = tcalloc((size_t)(2 * n), sizeof *start);
  if (start == NULL) return oom(err, "ranges");
  int64_t *len = start + n;
  qv_status st = concat_offsets(in, n, total, large, out, start, len, err);
  if (st == QV_OK) st = concat_child_ranges(in, n, 0, start, len, &out->children[0], err);
  tfree(start);
  return st;
}

static qv_status concat_views(qv_array *const *in, int64_t n, int64_t total, qv_array *out,
                              qv_error *err) {
  int64_t n_data = 0;
  for (int64_t i = 0; i < n; i++) n_data += in[i]->n_buffers - QV_VIEW_FIXED_BUFFERS;
  if (n_data > INT32_MAX - QV_VIEW_FIXED_BUFFERS)
    return qv_error_set(err, QV_ERANGE, "concat: %lld view data buffers exceed the limit %d",
                        (long long)n_data, INT32_MAX - QV_VIEW_FIXED_BUFFERS);
  qv_buffer **bufs = realloc(out->buffers, sizeof *bufs * (size_t)(QV_VIEW_FIXED_BUFFERS + n_data));
  if (bufs == NULL) return oom(err, "view buffers");
  out->buffers = bufs;
  for (int64_t j = out->n_buffers; j < QV_VIEW_FIXED_BUFFERS + n_data; j++) bufs[j] = NULL;
  out->n_buffers = (int32_t)(QV_VIEW_FIXED_BUFFERS + n_data);
  QV_RETURN_NOT_OK(concat_fixed(in, n, total, QV_VIEW_SIZE, out, err));
  uint8_t *views = out->buffers[1]->data;
  int32_t base = 0, next = QV_VIEW_FIXED_BUFFERS;
  for (int64_t i = 0; i < n; i++) {
    const qv_array *a = in[i];
    if (base != 0) {
      for (int64_t j = 0; j < a->length; j++) {
        uint8_t *v = views + j * QV_VIEW_SIZE;
        int32_t vlen, idx;
        memcpy(&vlen, v, 4);
        if (vlen <= QV_VIEW_INLINE_MAX) continue;
        memcpy(&idx, v + QV_VIEW_BUFFER_INDEX_AT, 4);
        idx += base;
        memcpy(v + QV_VIEW_BUFFER_INDEX_AT, &idx, 4);
      }
    }
    views += a->length * QV_VIEW_SIZE;
    for (int32_t b = QV_VIEW_FIXED_BUFFERS; b < a->n_buffers; b++)
      bufs[next++] = qv_buffer_ref(a->buffers[b]);
    base += a->n_buffers - QV_VIEW_FIXED_BUFFERS;
  }
  return QV_OK;
}

static qv_status concat_list_view(qv_array *const *in, int64_t n, int64_t total, bool large,
                                  qv_array *out, qv_error *err) {
  int32_t w = large ? 8 : 4;
  int64_t *start = tcalloc((size_t)(2 * n), sizeof *start);
  if (start == NULL) return oom(err, "ranges");
  int64_t *len = start + n;
  qv_status st = concat_slot(in, n, total, w, 1, &out->buffers[1], err);
  if (st == QV_OK) st = concat_slot(in, n, total, w, 2, &out->buffers[2], err);
  qv_buffer *sizes = out->buffers[2];
  /* Referenced child range of each input, and offsets shifted onto it. */
  int64_t base = 0, pos = 0;
  for (int64_t i = 0; st == QV_OK && i < n; i++) {
    const qv_array *a = in[i];
    int64_t lo = INT64_MAX, hi = 0;
    for (int64_t j = 0; j < a->length; j++) {
      int64_t sz = qv_load_int(sizes->data, w, false, pos + j);
      if (sz <= 0) continue;
      int64_t o = qv_load_int(out->buffers[1]->data, w, false, pos + j);
      if (o < lo) lo = o;
      if (o + sz > hi) hi = o + sz;
    }
    if (lo == INT64_MAX) lo = hi = 0;
    start[i] = lo;
    len[i] = hi - lo;
    if (!large && base + len[i] > INT32_MAX) {
      st = offsets_overflow(err, a->type, base + len[i]);
      break;
    }
    for (int64_t j = 0; j < a->length; j++) {
      int64_t sz = qv_load_int(sizes->data, w, false, pos + j);
      int64_t o = qv_load_int(out->buffers[1]->data, w, false, pos + j);
      qvk_store_int(out->buffers[1]->data, w, pos + j, sz <= 0 ? 0 : o - lo + base);
      if (sz < 0) qvk_store_int(sizes->data, w, pos + j, 0);
    }
    pos += a->length;
    base += len[i];
  }
  if (st == QV_OK) st = concat_child_ranges(in, n, 0, start, len, &out->children[0], err);
  tfree(start);
  return st;
}

static qv_status concat_struct_like(qv_array *const *in, int64_t n, qv_array *out, qv_error *err) {
  int64_t *start = tcalloc((size_t)(2 * n + 1), sizeof *start);
  if (start == NULL) return oom(err, "ranges");
  int64_t *len = start + n;
  int64_t size = out->type->id == QV_FIXED_SIZE_LIST ? out->type->list_size : 1;
  for (int64_t i = 0; i < n; i++) {
    start[i] = in[i]->offset * size;
    len[i] = in[i]->length * size;
  }
  qv_status st = QV_OK;
  for (int32_t k = 0; k < out->n_children && st == QV_OK; k++)
    st = concat_child_ranges(in, n, k, start, len, &out->children[k], err);
  tfree(start);
  return st;
}

static qv_status concat_dense_union(qv_array *const *in, int64_t n, int64_t total, qv_array *out,
                                    qv_error *err) {
  int8_t map[QVK_UNION_CODES];
  qvk_union_map(out->type, map);
  int32_t nk = out->n_children;
  /* lo/hi[i*nk+k]: referenced range of child k in input i. */
  int64_t cells = n * (int64_t)(nk > 0 ? nk : 1);
  int64_t *lo = tmalloc(sizeof *lo * (size_t)(4 * cells));
  qv_buffer *offs = NULL;
  if (lo == NULL) return oom(err, "union ranges");
  int64_t *hi = lo + cells, *start = hi + cells, *len = start + cells;
  qv_status st = qv_buffer_alloc(total * 4, &offs, err);
  if (st != QV_OK) {
    tfree(lo);
    return st;
  }
  out->buffers[1] = offs;
  for (int64_t c = 0; c < cells; c++) lo[c] = INT64_MAX, hi[c] = 0;
  for (int64_t i = 0; i < n; i++) {
    const qv_array *a = in[i];
    const int8_t *ids = (const int8_t *)a->buffers[0]->data + a->offset;
    const int32_t *o = (const int32_t *)a->buffers[1]->data + a->offset;
    for (int64_t j = 0; j < a->length; j++) {
      int k = ids[j] >= 0 ? map[ids[j]] : -1;
      if (k < 0) {
        tfree(lo);
        return qv_error_set(err, QV_EINVAL,
                            "concat: array %lld: row %lld has type id %d "
                            "that is not in the union",
                            (long long)i, (long long)j, ids[j]);
      }
      int64_t c = i * nk + k;
      if (o[j] < lo[c]) lo[c] = o[j];
      if (o[j] + 1 > hi[c]) hi[c] = o[j] + 1;
    }
  }
  int64_t pos = 0;
  int64_t *base = tcalloc((size_t)(nk > 0 ? nk : 1), sizeof *base);
  if (base == NULL) {
    tfree(lo);
    return oom(err, "union bases");
  }
  for (int64_t i = 0; i < n; i++) {
    const qv_array *a = in[i];
    const int8_t *ids = (const int8_t *)a->buffers[0]->data + a->offset;
    const int32_t *o = (const int32_t *)a->buffers[1]->data + a->offset;
    int32_t *d = (int32_t *)offs->data + pos;
    for (int32_t k = 0; k < nk; k++) {
      int64_t c = i * nk + k;
      if (lo[c] == INT64_MAX) lo[c] = hi[c] = 0;
      start[k * n + i] = lo[c];
      len[k * n + i] = hi[c] - lo[c];
    }
    for (int32_t k = 0; k < nk; k++) {
      int64_t need = base[k] + len[k * n + i];
      if (need > INT32_MAX) {
        tfree(lo);
        tfree(base);
        return offsets_overflow(err, out->type, need);
      }
    }
    for (int64_t j = 0; j < a->length; j++) {
      int k = map[ids[j]];
      d[j] = (int32_t)(o[j] - lo[i * nk + k] + base[k]);
    }
    for (int32_t k = 0; k < nk; k++) base[k] += len[k * n + i];
    pos += a->length;
  }
  for (int32_t k = 0; k < nk && st == QV_OK; k++)
    st = concat_child_ranges(in, n, k, start + k * n, len + k * n, &out->children[k], err);
  tfree(lo);
  tfree(base);
  return st;
}

static qv_status concat_dictionary(qv_array *const *in, int64_t n, int64_t total, qv_array *out,
                                   qv_error *err) {
  const qv_type *it = out->type->index_type;
  int32_t w = qv_type_bit_width(it) / 8;
  QV_RETURN_NOT_OK(concat_fixed(in, n, total, w, out, err));
  bool shared = true;
  for (int64_t i = 1; i < n; i++) shared = shared && in[i]->dictionary == in[0]->dictionary;
  if (shared) {
    out->dictionary = qv_array_ref(in[0]->dictionary);
    return QV_OK;
  }
  int64_t *bases = tmalloc(sizeof *bases * (size_t)n);
  if (bases == NULL) return oom(err, "dictionaries");
  qv_status st = qvk_unify_dictionaries(in, n, bases, &out->dictionary, err);
  if (st != QV_OK) {
    tfree(bases);
    return qv_error_prefix(err, st, "concat: dictionary: ");
  }
  bool is_unsigned = !qv_type_id_is_signed_integer(it->id);
  int64_t imax = qvk_int_max(it->id);
  uint8_t *idx = out->buffers[1]->data;
  const uint8_t *valid = out->buffers[0] ? out->buffers[0]->data : NULL;
  int64_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t base = bases[i];
    for (int64_t j = 0; j < in[i]->length; j++, pos++) {
      if (valid != NULL && !qv_bit_get(valid, pos)) {
        qvk_store_int(idx, w, pos, 0);
        continue;
      }
      int64_t v = qv_load_int(idx, w, is_unsigned, pos) + base;
      if (v > imax) {
        tfree(bases);
        return qv_error_set(err, QV_ERANGE,
                            "concat: dictionary index %lld (array %lld, row %lld) does not "
                            "fit index type %s (max %lld)",
                            (long long)v, (long long)i, (long long)j, qv_type_id_name(it->id),
                            (long long)imax);
      }
      qvk_store_int(idx, w, pos, v);
    }
  }
  tfree(bases);
  return QV_OK;
}

qv_status qvk_unify_dictionaries(qv_array *const *arrays, int64_t n, int64_t *base, qv_array **out,
                                 qv_error *err) {
  qv_array **distinct = tmalloc(sizeof *distinct * (size_t)(n > 0 ? n : 1));
  int64_t *start = tmalloc(sizeof *start * (size_t)(n > 0 ? n : 1));
  if (distinct == NULL || start == NULL) {
    tfree(distinct);
    tfree(start);
    return oom(err, "dictionaries");
  }
  int64_t nd = 0, total = 0;
  for (int64_t i = 0; i < n; i++) {
    qv_array *d = arrays[i]->dictionary;
    int64_t k = 0;
    while (k < nd && distinct[k] != d) k++;
    if (k == nd) {
      distinct[nd] = d;
      start[nd++] = total;
      total += d->length;
    }
    base[i] = start[k];
  }
  qv_status st = qv_array_concat(distinct, nd, out, err);
  tfree(distinct);
  tfree(start);
  return st;
}

static qv_status concat_ree(qv_array *const *in, int64_t n, int64_t total, qv_array *out,
                            qv_error *err) {
  const qv_type *rt = out->type->children[0].type;
  int32_t w = qv_type_bit_width(rt) / 8;
  int64_t rmax = qvk_int_max(rt->id);
  if (total > rmax)
    return qv_error_set(err, QV_ERANGE,
                        "concat: run-end encoded length %lld does not fit run end type %s",
                        (long long)total, qv_type_id_name(rt->id));
  int64_t *start = tcalloc((size_t)(2 * n), sizeof *start);
  if (start == NULL) return oom(err, "runs");
  int64_t *len = start + n;
  int64_t runs = 0;
  for (int64_t i = 0; i < n; i++) {
    const qv_array *a = in[i];
    if (a->length == 0) continue;
    int64_t p0 = qvk_ree_find(a->children[0], a->offset);
    int64_t p1 = qvk_ree_find(a->children[0], a->offset + a->length - 1) + 1;
    if (p1 > a->children[0]->length) {
      tfree(start);
      return qv_error_set(err, QV_EINVAL,
                          "concat: array %lld: run ends end before logical length %lld",
                          (long long)i, (long long)(a->offset + a->length));
    }
    start[i] = p0;
    len[i] = p1 - p0;
    runs += len[i];
  }
  qv_array *re = qv_array_new((qv_type *)rt, 2, 0);
  out->children[0] = re; /* in the result at once */
  qv_status st = re ? qv_buffer_alloc(runs * w, &re->buffers[1], err) : oom(err, "run ends");
  if (st == QV_OK) {
    qv_buffer *buf = re->buffers[1];
    re->length = runs;
    re->null_count = 0;
    int64_t base = 0, r = 0;
    for (int64_t i = 0; i < n; i++) {
      const qv_array *a = in[i], *ends = a->children[0];
      for (int64_t p = start[i]; p < start[i] + len[i]; p++) {
        int64_t e = qv_load_int(ends->buffers[1]->data, w, false, ends->offset + p);
        if (e > a->offset + a->length) e = a->offset + a->length;
        qvk_store_int(buf->data, w, r++, e - a->offset + base);
      }
      base += a->length;
    }
    st = concat_child_ranges(in, n, 1, start, len, &out->children[1], err);
  }
  tfree(start);
  return st;
}

static qv_status concat_impl(qv_array *const *in, int64_t n, qv_array **out, qv_error *err) {
  qv_type *t = in[0]->type;
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++)
    if (qv_add_overflow(total, in[i]->length, &total))
      return qv_error_set(err, QV_ERANGE, "concat: total length overflows int64");
  qv_array *a = qv_array_new(t, qv_type_num_buffers(t->id), t->n_children);
  if (a == NULL) return oom(err, "array");
  *out = a; /* in the result (or the caller's call context) at once */
  a->length = total;
  a->null_count = 0;
  qv_status st = QV_OK;
  if (qvk_has_validity_slot(t->id)) st = concat_validity(in, n, total, a, err);
  if (st == QV_OK) {
    switch (t->id) {
      case QV_NA: a->null_count = total; break;
      case QV_BOOL: st = concat_bool(in, n, total, a, err); break;
      case QV_BINARY:
      case QV_STRING: st = concat_binary(in, n, total, false, a, err); break;
      case QV_LARGE_BINARY:
      case QV_LARGE_STRING: st = concat_binary(in, n, total, true, a, err); break;
      case QV_BINARY_VIEW:
      case QV_STRING_VIEW: st = concat_views(in, n, total, a, err); break;
      case QV_LIST:
      case QV_MAP: st = concat_list(in, n, total, false, a, err); break;
      case QV_LARGE_LIST: st = concat_list(in, n, total, true, a, err); break;
      case QV_LIST_VIEW:
      case QV_LARGE_LIST_VIEW:
        st = concat_list_view(in, n, total, t->id == QV_LARGE_LIST_VIEW, a, err);
        break;
      case QV_FIXED_SIZE_LIST:
      case QV_STRUCT: st = concat_struct_like(in, n, a, err); break;
      case QV_SPARSE_UNION:
        st = concat_slot(in, n, total, 1, 0, &a->buffers[0], err);
        if (st == QV_OK) st = concat_struct_like(in, n, a, err);
        break;
      case QV_DENSE_UNION:
        st = concat_slot(in, n, total, 1, 0, &a->buffers[0], err);
        if (st == QV_OK) st = concat_dense_union(in, n, total, a, err);
        break;
      case QV_DICTIONARY: st = concat_dictionary(in, n, total, a, err); break;
      case QV_RUN_END_ENCODED: st = concat_ree(in, n, total, a, err); break;
      default: {
        int32_t width = qvk_value_bytes(t);
        if (width <= 0) {
          st = qv_error_set(err, QV_ENOTSUP, "concat: type %s is not supported",
                            qv_type_id_name(t->id));
          break;
        }
        st = concat_fixed(in, n, total, width, a, err);
      }
    }
  }
  if (st != QV_OK) {
    qv_array_unref(a);
    *out = NULL;
    return st;
  }
  return QV_OK;
}

/* concat_impl under the mapped-read guard (guard.c), after checking the
 * inputs' mapped buffers. */
typedef struct concat_call {
  qv_array *const *arrays;
  int64_t n;
  qv_array *out;
} concat_call;

static qv_status concat_body(void *ctx, qv_error *err) {
  concat_call *c = ctx;
  return concat_impl(c->arrays, c->n, &c->out, err);
}

qv_status qv_array_concat(qv_array *const *arrays, int64_t n, qv_array **out, qv_error *err) {
  if (arrays == NULL || n < 1)
    return qv_error_set(err, QV_EARG, "concat: needs at least one array (got %lld)", (long long)n);
  for (int64_t i = 0; i < n; i++) {
    if (arrays[i] == NULL)
      return qv_error_set(err, QV_EARG, "concat: array %lld is NULL", (long long)i);
    if (!qv_type_equals(arrays[0]->type, arrays[i]->type, false)) {
      char a[128], b[128];
      qv_type_to_string(arrays[0]->type, a, sizeof a);
      qv_type_to_string(arrays[i]->type, b, sizeof b);
      return qv_error_set(err, QV_ETYPE, "concat: array %lld has type %s, expected %s",
                          (long long)i, b, a);
    }
  }
  concat_call c = {arrays, n, NULL};
  qv_status st = qv_guard_run_checked((const qv_array *const *)arrays, n, concat_body, &c, err);
  if (st != QV_OK) {
    qv_array_unref(c.out);
    return st;
  }
  *out = c.out;
  return QV_OK;
}
