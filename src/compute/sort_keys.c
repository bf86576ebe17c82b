/*
 * sort_keys.c — compute layer: turns one sort key (a chunked column of any
 * comparable type) into a normalised key over all its rows (see
 * sort_internal.h): a row class (value / NaN / null) and an
 * order-preserving uint64, a run of uint64 words, or a byte string.
 *
 * Transforms (ascending; descending keys invert every bit, which reverses
 * the unsigned order and keeps equal values equal):
 *  - signed integers, decimals up to 64 bits, date/time/timestamp/duration:
 *    the value as uint64 with the sign bit flipped;
 *  - unsigned integers, booleans: the value;
 *  - half/float/double: NaN is its own class; -0.0 becomes 0.0; then the
 *    IEEE bits with the sign bit set for positives and all bits inverted
 *    for negatives (the usual sign-magnitude to unsigned order map);
 *  - decimal128/256: little-endian 64-bit limbs, most significant first,
 *    with the top limb's sign bit flipped;
 *  - fixed_size_binary: the bytes big-endian in 64-bit words (zero-padded;
 *    all values have the same width, so padding never decides);
 *  - dictionaries: the rank of the decoded value among all distinct values
 *    of the column's dictionaries (the dictionaries are sorted once with
 *    the same machinery; values equal across dictionaries share a rank).
 * Buffers are checked as they are read: an offset, view or dictionary
 * index outside its buffer is QV_EINVAL, never a read out of bounds.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "compute/sort_internal.h"

#define SIGN64 0x8000000000000000ull

/* Arrays at least this large get their own mapping, on huge pages. */
#define HUGE_ALLOC_MIN ((size_t)2 << 20)
#define HUGE_PAGE ((size_t)2 << 20)
/* Bytes before every qvs_alloc block: how to free it. */
#define ALLOC_HEADER 16

typedef struct alloc_header {
  void *base;    /* what malloc or mmap returned */
  size_t mapped; /* bytes mapped at base; 0: from malloc */
} alloc_header;

void *qvs_alloc(size_t bytes, bool zero) {
  if (bytes == 0) bytes = 1;
  alloc_header h = {NULL, 0};
  uint8_t *p;
  if (bytes >= HUGE_ALLOC_MIN && bytes <= SIZE_MAX - 2 * HUGE_PAGE) {
    /* A fresh mapping (zeroed by the kernel) with a huge-page-aligned
     * block inside and the header just before it: faulting 2 MiB pages
     * costs a fraction of faulting 4 KiB ones, and freed blocks go back
     * to the system instead of leaving a heap to trim. */
    size_t rounded = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    h.mapped = rounded + HUGE_PAGE;
    h.base = mmap(NULL, h.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (h.base == MAP_FAILED) return NULL;
    p = (uint8_t *)(((uintptr_t)h.base + ALLOC_HEADER + HUGE_PAGE - 1) &
                    ~(uintptr_t)(HUGE_PAGE - 1));
#ifdef MADV_HUGEPAGE
    madvise(p, rounded, MADV_HUGEPAGE);
#endif
  } else {
    h.base = zero ? calloc(1, bytes + ALLOC_HEADER) : malloc(bytes + ALLOC_HEADER);
    if (h.base == NULL) return NULL;
    p = (uint8_t *)h.base + ALLOC_HEADER;
  }
  memcpy(p - ALLOC_HEADER, &h, sizeof h);
  return p;
}

void qvs_free(void *p) {
  if (p == NULL) return;
  alloc_header h;
  memcpy(&h, (uint8_t *)p - ALLOC_HEADER, sizeof h);
  if (h.mapped) munmap(h.base, h.mapped);
  else free(h.base);
}

void qvs_key_reset(qvs_key *k) {
  if (!k) return;
  qvs_free(k->cls);
  qvs_free(k->u64);
  qvs_free(k->words);
  free(k->chunks);
  memset(k, 0, sizeof *k);
}

static const uint8_t *validity_of(const qv_array *a) {
  return (a->n_buffers > 0 && a->buffers[0] != NULL) ? a->buffers[0]->data : NULL;
}

/* Mark row r with class c (allocating the class array on first use). */
static qv_status set_class(qvs_key *k, int64_t r, uint8_t c, qv_error *err) {
  if (k->cls == NULL) {
    k->cls = qvs_alloc((size_t)(k->n > 0 ? k->n : 1), true);
    if (k->cls == NULL)
      return qv_error_set(err, QV_ENOMEM, "sort: out of memory (%" PRId64 " row classes)", k->n);
  }
  k->cls[r] = c;
  if (c == QVS_NAN) k->n_nan++;
  else if (c == QVS_NULL) k->n_null++;
  return QV_OK;
}

/* The values buffer must hold (offset + length) elements of `w` bytes. */
static qv_status check_values(const qv_array *a, int64_t w, const char *what, int64_t chunk,
                              qv_error *err) {
  int64_t need = (a->offset + a->length) * w;
  if (a->length == 0 || w == 0) return QV_OK;
  if (a->n_buffers < 2 || a->buffers[1] == NULL || a->buffers[1]->size < need)
    return qv_error_set(
        err, QV_EINVAL,
        "%s: chunk %" PRId64 ": values buffer holds %" PRId64 " bytes, needs %" PRId64, what, chunk,
        (a->n_buffers < 2 || a->buffers[1] == NULL) ? (int64_t)0 : a->buffers[1]->size, need);
  return QV_OK;
}

static uint64_t load_le(const uint8_t *p, int w) { return (uint64_t)qv_load_int(p, w, true, 0); }

static uint64_t sign_extend(uint64_t x, int w) {
  int sh = 64 - 8 * w;
  return sh == 0 ? x : (uint64_t)((int64_t)(x << sh) >> sh);
}

/* How a fixed-width type maps to a uint64 key. */
typedef enum fixed_kind {
  FK_UNSIGNED,
  FK_SIGNED,
  FK_HALF,
  FK_FLOAT,
  FK_DOUBLE,
  FK_BYTES
} fixed_kind;

static bool fixed_kind_of(const qv_type *t, fixed_kind *fk, int *w) {
  switch (t->id) {
    case QV_UINT8:
      *fk = FK_UNSIGNED;
      *w = 1;
      return true;
    case QV_UINT16:
      *fk = FK_UNSIGNED;
      *w = 2;
      return true;
    case QV_UINT32:
      *fk = FK_UNSIGNED;
      *w = 4;
      return true;
    case QV_UINT64:
      *fk = FK_UNSIGNED;
      *w = 8;
      return true;
    case QV_INT8:
      *fk = FK_SIGNED;
      *w = 1;
      return true;
    case QV_INT16:
      *fk = FK_SIGNED;
      *w = 2;
      return true;
    case QV_INT32:
    case QV_DATE32:
    case QV_TIME32:
    case QV_DECIMAL32:
      *fk = FK_SIGNED;
      *w = 4;
      return true;
    case QV_INT64:
    case QV_DATE64:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DURATION:
    case QV_DECIMAL64:
      *fk = FK_SIGNED;
      *w = 8;
      return true;
    case QV_HALF_FLOAT:
      *fk = FK_HALF;
      *w = 2;
      return true;
    case QV_FLOAT:
      *fk = FK_FLOAT;
      *w = 4;
      return true;
    case QV_DOUBLE:
      *fk = FK_DOUBLE;
      *w = 8;
      return true;
    case QV_FIXED_SIZE_BINARY:
      if (t->byte_width < 0 || t->byte_width > 8) return false;
      *fk = FK_BYTES;
      *w = t->byte_width;
      return true;
    default: return false;
  }
}

/* Order-preserving map of IEEE bits of `bits` width (sign at bit top). */
static uint64_t float_order(uint64_t x, int bits) {
  uint64_t sign = 1ull << (bits - 1);
  uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  if ((x & ~sign & mask) == 0) x = 0; /* -0.0 == 0.0 */
  return (x & sign) ? (~x & mask) : (x | sign);
}

static bool is_nan_bits(uint64_t x, int bits) {
  switch (bits) {
    case 16: return (x & 0x7c00) == 0x7c00 && (x & 0x3ff) != 0;
    case 32: return (x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0;
    default:
      return (x & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (x & 0xfffffffffffffull) != 0;
  }
}

/* Keys of `len` integers of width w at v. Inlined for each constant
 * width. */
static inline __attribute__((always_inline)) void int_keys(uint64_t *out, const uint8_t *v,
                                                           int64_t len, int w, bool sign,
                                                           uint64_t flip) {
  if (sign) {
    for (int64_t i = 0; i < len; i++)
      out[i] = (sign_extend(load_le(v + i * w, w), w) ^ SIGN64) ^ flip;
  } else {
    for (int64_t i = 0; i < len; i++) out[i] = load_le(v + i * w, w) ^ flip;
  }
}

/* Keys of `len` floats of width w at v (rows row.. of the column): valid
 * NaN rows get class NaN (and key 0). Inlined for each constant width. */
static inline __attribute__((always_inline)) qv_status float_keys(qvs_key *k, const uint8_t *v,
                                                                  const uint8_t *valid,
                                                                  int64_t voff, int64_t row,
                                                                  int64_t len, int w, uint64_t flip,
                                                                  qv_error *err) {
  uint64_t *out = k->u64 + row;
  for (int64_t i = 0; i < len; i++) {
    uint64_t x = load_le(v + i * w, w);
    if (__builtin_expect(is_nan_bits(x, 8 * w), 0) && (!valid || qv_bit_get(valid, voff + i))) {
      QV_RETURN_NOT_OK(set_class(k, row + i, QVS_NAN, err));
      out[i] = 0;
    } else {
      out[i] = float_order(x, 8 * w) ^ flip;
    }
  }
  return QV_OK;
}

static qv_status build_fixed(qvs_key *k, const qv_type *t, qv_array *const *chunks,
                             int64_t n_chunks, const char *what, qv_error *err) {
  fixed_kind fk;
  int w;
  fixed_kind_of(t, &fk, &w);
  uint64_t flip = k->descending ? ~0ull : 0;
  int64_t row = 0;
  for (int64_t c = 0; c < n_chunks; c++) {
    const qv_array *a = chunks[c];
    QV_RETURN_NOT_OK(check_values(a, w, what, c, err));
    const uint8_t *valid = validity_of(a);
    const uint8_t *v = (a->length && w) ? a->buffers[1]->data + a->offset * w : NULL;
    uint64_t *out = k->u64 + row;
    switch (fk) {
      case FK_UNSIGNED:
      case FK_SIGNED: {
        bool sign = fk == FK_SIGNED;
        switch (w) {
          case 1: int_keys(out, v, a->length, 1, sign, flip); break;
          case 2: int_keys(out, v, a->length, 2, sign, flip); break;
          case 4: int_keys(out, v, a->length, 4, sign, flip); break;
          default: int_keys(out, v, a->length, 8, sign, flip);
        }
        break;
      }
      case FK_BYTES:
        for (int64_t i = 0; i < a->length; i++) {
          uint64_t x = 0;
          for (int j = 0; j < w; j++) x |= (uint64_t)v[i * w + j] << (56 - 8 * j);
          out[i] = x ^ flip;
        }
        break;
      case FK_HALF:
        QV_RETURN_NOT_OK(float_keys(k, v, valid, a->offset, row, a->length, 2, flip, err));
        break;
      case FK_FLOAT:
        QV_RETURN_NOT_OK(float_keys(k, v, valid, a->offset, row, a->length, 4, flip, err));
        break;
      default: QV_RETURN_NOT_OK(float_keys(k, v, valid, a->offset, row, a->length, 8, flip, err));
    }
    if (valid) {
      for (int64_t i = 0; i < a->length; i++)
        if (!qv_bit_get(valid, a->offset + i)) {
          QV_RETURN_NOT_OK(set_class(k, row + i, QVS_NULL, err));
          out[i] = 0;
        }
    }
    row += a->length;
  }
  return QV_OK;
}

static qv_status build_bool(qvs_key *k, qv_array *const *chunks, int64_t n_chunks, const char *what,
                            qv_error *err) {
  uint64_t flip = k->descending ? ~0ull : 0;
  int64_t row = 0;
  for (int64_t c = 0; c < n_chunks; c++) {
    const qv_array *a = chunks[c];
    int64_t need = (a->offset + a->length + 7) / 8;
    if (a->length && (a->n_buffers < 2 || !a->buffers[1] || a->buffers[1]->size < need))
      return qv_error_set(err, QV_EINVAL, "%s: chunk %" PRId64 ": boolean values buffer too small",
                          what, c);
    const uint8_t *valid = validity_of(a);
    for (int64_t i = 0; i < a->length; i++) {
      if (valid && !qv_bit_get(valid, a->offset + i)) {
        QV_RETURN_NOT_OK(set_class(k, row + i, QVS_NULL, err));
        k->u64[row + i] = 0;
      } else {
        k->u64[row + i] = (uint64_t)qv_bit_get(a->buffers[1]->data, a->offset + i) ^ flip;
      }
    }
    row += a->length;
  }
  return QV_OK;
}

static qv_status build_wide(qvs_key *k, const qv_type *t, qv_array *const *chunks, int64_t n_chunks,
                            const char *what, qv_error *err) {
  bool decimal = t->id == QV_DECIMAL128 || t->id == QV_DECIMAL256;
  int w = decimal ? (t->id == QV_DECIMAL128 ? 16 : 32) : t->byte_width;
  int nw = k->nwords;
  uint64_t flip = k->descending ? ~0ull : 0;
  int64_t row = 0;
  for (int64_t c = 0; c < n_chunks; c++) {
    const qv_array *a = chunks[c];
    QV_RETURN_NOT_OK(check_values(a, w, what, c, err));
    const uint8_t *valid = validity_of(a);
    for (int64_t i = 0; i < a->length; i++) {
      uint64_t *out = k->words + (row + i) * nw;
      if (valid && !qv_bit_get(valid, a->offset + i)) {
        QV_RETURN_NOT_OK(set_class(k, row + i, QVS_NULL, err));
        memset(out, 0, sizeof(uint64_t) * (size_t)nw);
        continue;
      }
      const uint8_t *p = a->buffers[1]->data + (a->offset + i) * w;
      if (decimal) {
        for (int j = 0; j < nw; j++) {
          uint64_t limb;
          memcpy(&limb, p + 8 * (nw - 1 - j), 8);
          out[j] = (j == 0 ? limb ^ SIGN64 : limb) ^ flip;
        }
      } else {
        for (int j = 0; j < nw; j++) {
          uint64_t x = 0;
          for (int b = 0; b < 8 && 8 * j + b < w; b++) x |= (uint64_t)p[8 * j + b] << (56 - 8 * b);
          out[j] = x ^ flip;
        }
      }
    }
    row += a->length;
  }
  return QV_OK;
}

/* Binary/string with 32- or 64-bit offsets, and views: every value is
 * checked against its buffers here, so qvs_bytes may read without checks. */
static qv_status build_bytes(qvs_key *k, const qv_type *t, qv_array *const *chunks,
                             int64_t n_chunks, const char *what, qv_error *err) {
  bool view = t->id == QV_BINARY_VIEW || t->id == QV_STRING_VIEW;
  bool large = t->id == QV_LARGE_BINARY || t->id == QV_LARGE_STRING;
  int64_t row = 0;
  for (int64_t c = 0; c < n_chunks; c++) {
    const qv_array *a = chunks[c];
    const uint8_t *valid = validity_of(a);
    if (a->length == 0) continue;
    if (view) {
      if (a->n_buffers < 2 || !a->buffers[1] ||
          a->buffers[1]->size < (a->offset + a->length) * QV_VIEW_SIZE)
        return qv_error_set(err, QV_EINVAL, "%s: chunk %" PRId64 ": views buffer too small", what,
                            c);
    } else {
      int64_t ow = large ? 8 : 4;
      if (a->n_buffers < 3 || !a->buffers[1] ||
          a->buffers[1]->size < (a->offset + a->length + 1) * ow)
        return qv_error_set(err, QV_EINVAL, "%s: chunk %" PRId64 ": offsets buffer too small", what,
                            c);
    }
    int64_t data_size = (!view && a->buffers[2]) ? a->buffers[2]->size : 0;
    static const uint8_t empty[8];
    const uint8_t *data = (!view && a->buffers[2]) ? a->buffers[2]->data : empty;
    qvs_chunk *ch = &k->chunks[k->n_chunks++];
    ch->start = row;
    ch->offset = a->offset;
    ch->layout = view ? QV_VIEW_SIZE : large ? 8 : 4;
    ch->values = a->buffers[1]->data;
    ch->data = data;
    ch->array = a;
    for (int64_t i = 0; i < a->length; i++) {
      int64_t r = row + i, p = a->offset + i;
      if (valid && !qv_bit_get(valid, p)) {
        QV_RETURN_NOT_OK(set_class(k, r, QVS_NULL, err));
        k->u64[r] = 0;
        continue;
      }
      int64_t b, e;
      const uint8_t *base;
      bool room; /* 8 bytes can be read at base + b whatever the length */
      if (view) {
        const uint8_t *v = a->buffers[1]->data + p * QV_VIEW_SIZE;
        int32_t len, bi, off;
        memcpy(&len, v, 4);
        if (len < 0)
          return qv_error_set(err, QV_EINVAL,
                              "%s: chunk %" PRId64 ": view %" PRId64 " has negative length %d",
                              what, c, i, len);
        if (len <= QV_VIEW_INLINE_MAX) {
          base = v + 4; /* 12 inline bytes */
          b = 0;
          e = len;
          room = true;
        } else {
          memcpy(&bi, v + 8, 4);
          memcpy(&off, v + 12, 4);
          if (bi < 0 || bi >= a->n_buffers - 2 || a->buffers[2 + bi] == NULL || off < 0 ||
              (int64_t)off + len > a->buffers[2 + bi]->size)
            return qv_error_set(err, QV_EINVAL,
                                "%s: chunk %" PRId64 ": view %" PRId64
                                " points outside its data buffers (buffer %d, range [%d, %" PRId64
                                "))",
                                what, c, i, bi, off, (int64_t)off + len);
          base = a->buffers[2 + bi]->data;
          b = off;
          e = (int64_t)off + len;
          room = true; /* len > 12 */
        }
      } else {
        if (large) {
          const int64_t *o = (const int64_t *)(const void *)a->buffers[1]->data;
          b = o[p];
          e = o[p + 1];
        } else {
          const int32_t *o = (const int32_t *)(const void *)a->buffers[1]->data;
          b = o[p];
          e = o[p + 1];
        }
        if (b < 0 || e < b || e > data_size)
          return qv_error_set(err, QV_EINVAL,
                              "%s: chunk %" PRId64 ": value %" PRId64 " spans [%" PRId64
                              ", %" PRId64 ") outside the %" PRId64 "-byte data buffer",
                              what, c, i, b, e, data_size);
        base = data;
        room = b + 8 <= data_size;
      }
      if (e - b > (int64_t)UINT32_MAX)
        return qv_error_set(err, QV_ENOTSUP,
                            "%s: chunk %" PRId64 ": value %" PRId64 " is %" PRId64
                            " bytes long; sort keys are limited to 4 GiB",
                            what, c, i, e - b);
      uint32_t len = (uint32_t)(e - b);
      k->u64[r] = room ? qvs_str_key0_padded(base + b, len) : qvs_str_key(base + b, len, 0);
    }
    row += a->length;
  }
  return QV_OK;
}

static uint64_t dict_index(const uint8_t *p, qv_type_id id, int64_t i, bool *neg) {
  *neg = false;
  switch (id) {
    case QV_INT8: {
      int8_t v = (int8_t)p[i];
      *neg = v < 0;
      return (uint64_t)(int64_t)v;
    }
    case QV_UINT8: return p[i];
    case QV_INT16: {
      int16_t v;
      memcpy(&v, p + 2 * i, 2);
      *neg = v < 0;
      return (uint64_t)(int64_t)v;
    }
    case QV_UINT16: {
      uint16_t v;
      memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case QV_INT32: {
      int32_t v;
      memcpy(&v, p + 4 * i, 4);
      *neg = v < 0;
      return (uint64_t)(int64_t)v;
    }
    case QV_UINT32: {
      uint32_t v;
      memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case QV_INT64: {
      int64_t v;
      memcpy(&v, p + 8 * i, 8);
      *neg = v < 0;
      return (uint64_t)v;
    }
    default: {
      uint64_t v;
      memcpy(&v, p + 8 * i, 8);
      return v;
    }
  }
}

/* Dictionary keys: rank of each decoded value among all dictionary values. */
static qv_status build_dict(qvs_key *k, const qv_type *t, qv_array *const *chunks, int64_t n_chunks,
                            const char *what, qv_error *err) {
  qv_status st = QV_OK;
  int iw = qv_type_byte_width(t->index_type);
  qv_array **dicts = calloc((size_t)(n_chunks ? n_chunks : 1), sizeof *dicts);
  int64_t *dict_of = calloc((size_t)(n_chunks ? n_chunks : 1), sizeof *dict_of);
  int64_t *dict_base = calloc((size_t)(n_chunks ? n_chunks : 1) + 1, sizeof *dict_base);
  uint32_t *perm = NULL, *rank = NULL;
  uint64_t *scratch = NULL;
  qvs_key dk;
  memset(&dk, 0, sizeof dk);
  if (!dicts || !dict_of || !dict_base) {
    st = qv_error_set(err, QV_ENOMEM, "sort: out of memory");
    goto done;
  }
  /* The distinct dictionary arrays (by identity), in chunk order. */
  int64_t nd = 0, total = 0;
  for (int64_t c = 0; c < n_chunks; c++) {
    qv_array *d = chunks[c]->dictionary;
    if (d == NULL) {
      st = qv_error_set(err, QV_EINVAL, "%s: chunk %" PRId64 ": dictionary array has no dictionary",
                        what, c);
      goto done;
    }
    if (!qv_type_equals(d->type, t->value_type, false)) {
      st = qv_error_set(err, QV_ETYPE,
                        "%s: chunk %" PRId64 ": dictionary values do not have the value type", what,
                        c);
      goto done;
    }
    int64_t j = nd;
    for (int64_t q = 0; q < nd; q++)
      if (dicts[q] == d) j = q;
    if (j == nd) {
      dicts[nd] = d;
      dict_base[nd] = total;
      total += d->length;
      nd++;
    }
    dict_of[c] = j;
  }
  if (total > QV_SORT_MAX_ROWS) {
    st = qv_error_set(err, QV_ENOTSUP, "%s: dictionaries hold %" PRId64 " values in all", what,
                      total);
    goto done;
  }
  char dwhat[96];
  snprintf(dwhat, sizeof dwhat, "%s (dictionary values)", what);
  if ((st = qvs_key_build(&dk, t->value_type, dicts, nd, total, false, false, dwhat, err)) != QV_OK)
    goto done;
  perm = malloc(sizeof(uint32_t) * (size_t)(total ? total : 1));
  rank = malloc(sizeof(uint32_t) * (size_t)(total ? total : 1));
  scratch = malloc(sizeof(uint64_t) * (size_t)(total ? total : 1));
  if (!perm || !rank || !scratch) {
    st = qv_error_set(err, QV_ENOMEM, "sort: out of memory (%" PRId64 " dictionary values)", total);
    goto done;
  }
  if ((st = qvs_sort(&dk, 1, total, perm, scratch, false, err)) != QV_OK) goto done;
  uint32_t r = 0;
  for (int64_t j = 0; j < total; j++) {
    if (j > 0 && !qvs_equal(&dk, perm[j - 1], perm[j])) r++;
    rank[perm[j]] = r;
  }
  uint64_t flip = k->descending ? ~0ull : 0;
  int64_t row = 0;
  for (int64_t c = 0; c < n_chunks && st == QV_OK; c++) {
    const qv_array *a = chunks[c];
    if ((st = check_values(a, iw, what, c, err)) != QV_OK) break;
    const uint8_t *valid = validity_of(a);
    const uint8_t *idx = a->length ? a->buffers[1]->data + a->offset * iw : NULL;
    int64_t dlen = dicts[dict_of[c]]->length, base = dict_base[dict_of[c]];
    for (int64_t i = 0; i < a->length; i++) {
      int64_t rr = row + i;
      if (valid && !qv_bit_get(valid, a->offset + i)) {
        if ((st = set_class(k, rr, QVS_NULL, err)) != QV_OK) break;
        k->u64[rr] = 0;
        continue;
      }
      bool neg;
      uint64_t x = dict_index(idx, t->index_type->id, i, &neg);
      if (neg || x >= (uint64_t)dlen) {
        st = qv_error_set(err, QV_EINVAL,
                          "%s: chunk %" PRId64 ": dictionary index %s%" PRIu64 " at row %" PRId64
                          " is outside the %" PRId64 "-value dictionary",
                          what, c, neg ? "-" : "", neg ? (uint64_t)0 - x : x, i, dlen);
        break;
      }
      int64_t g = base + (int64_t)x;
      uint8_t cl = dk.cls ? dk.cls[g] : QVS_VALUE;
      if (cl != QVS_VALUE) {
        if ((st = set_class(k, rr, cl, err)) != QV_OK) break;
        k->u64[rr] = 0;
      } else {
        k->u64[rr] = (uint64_t)rank[g] ^ flip;
      }
    }
    row += a->length;
  }
done:
  qvs_key_reset(&dk);
  free(dicts);
  free(dict_of);
  free(dict_base);
  free(perm);
  free(rank);
  free(scratch);
  return st;
}

qv_status qvs_key_build(qvs_key *k, const qv_type *type, qv_array *const *chunks, int64_t n_chunks,
                        int64_t n, bool descending, bool nulls_first, const char *what,
                        qv_error *err) {
  memset(k, 0, sizeof *k);
  k->descending = descending;
  k->nulls_first = nulls_first;
  k->n = n;
  size_t rows = (size_t)(n > 0 ? n : 1);
  char tname[128];
  fixed_kind fk;
  int w;
  qv_status st = QV_OK;
  switch (type->id) {
    case QV_NA:
      k->kind = QVS_U64;
      k->u64 = qvs_alloc(rows * sizeof(uint64_t), true);
      k->cls = qvs_alloc(rows, false);
      if (!k->u64 || !k->cls) goto nomem;
      memset(k->cls, QVS_NULL, rows);
      k->n_null = n;
      return QV_OK;
    case QV_BOOL:
      k->kind = QVS_U64;
      if (!(k->u64 = qvs_alloc(rows * sizeof(uint64_t), false))) goto nomem;
      st = build_bool(k, chunks, n_chunks, what, err);
      break;
    case QV_DECIMAL128:
    case QV_DECIMAL256:
      k->kind = QVS_WIDE;
      k->nwords = type->id == QV_DECIMAL128 ? 2 : 4;
      if (!(k->words = qvs_alloc(rows * sizeof(uint64_t) * (size_t)k->nwords, false))) goto nomem;
      st = build_wide(k, type, chunks, n_chunks, what, err);
      break;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
      k->kind = QVS_BYTES;
      k->chunks = malloc(sizeof(qvs_chunk) * (size_t)(n_chunks > 0 ? n_chunks : 1));
      k->u64 = qvs_alloc(rows * sizeof(uint64_t), false);
      if (!k->chunks || !k->u64) goto nomem;
      st = build_bytes(k, type, chunks, n_chunks, what, err);
      break;
    case QV_DICTIONARY:
      k->kind = QVS_U64;
      if (!(k->u64 = qvs_alloc(rows * sizeof(uint64_t), false))) goto nomem;
      st = build_dict(k, type, chunks, n_chunks, what, err);
      break;
    default:
      if (type->id == QV_FIXED_SIZE_BINARY && type->byte_width > 8) {
        k->kind = QVS_WIDE;
        k->nwords = (type->byte_width + 7) / 8;
        size_t bytes;
        if (__builtin_mul_overflow(rows, sizeof(uint64_t) * (size_t)k->nwords, &bytes) ||
            !(k->words = qvs_alloc(bytes, false)))
          goto nomem;
        st = build_wide(k, type, chunks, n_chunks, what, err);
        break;
      }
      if (!fixed_kind_of(type, &fk, &w)) {
        qv_type_to_string(type, tname, sizeof tname);
        return qv_error_set(err, QV_ETYPE, "%s: cannot sort values of type %s", what, tname);
      }
      k->kind = QVS_U64;
      if (!(k->u64 = qvs_alloc(rows * sizeof(uint64_t), false))) goto nomem;
      st = build_fixed(k, type, chunks, n_chunks, what, err);
  }
  if (st != QV_OK) qvs_key_reset(k);
  return st;
nomem:
  qvs_key_reset(k);
  return qv_error_set(err, QV_ENOMEM, "%s: out of memory for %" PRId64 " rows", what, n);
}
