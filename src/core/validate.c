/*
 * validate.c — structural validation of qv_arrays (qv_array_validate), the
 * guarantee that reading any element of a validated array stays inside its
 * buffers. Part of the core layer; used by the IPC loader for every batch
 * it decodes, by the C Data importer and by tests.
 *
 * Levels (array.h):
 *   MINIMAL  O(1) per array: buffer counts, sizes against offset+length,
 *            alignment, first/last offsets, child lengths.
 *   DEFAULT  O(n): every offset, list-view range, view, union type id and
 *            dense offset, dictionary index and run end; null counts
 *            against the validity bitmaps; map entries/keys without nulls.
 *   FULL     + UTF-8 of string, large_string and string_view data.
 * The O(n) checks run as branch-free passes over blocks that compilers
 * vectorise; only when a block is known to be bad is it rescanned to find
 * the first offending element for the error message.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/guard_internal.h"
#include "core/validate_internal.h"

/* Longest field path kept in error messages. */
#define QV_VALIDATE_PATH_MAX 512
/* Nesting bound: deeper arrays are rejected rather than recursed into. */
#define QV_VALIDATE_MAX_DEPTH 128
/* Elements per branch-free pass before testing the accumulated flag. */
#define QV_VALIDATE_BLOCK 4096

typedef struct vstate {
  qv_validate_level level;
  unsigned flags;
  qv_error *err;
} vstate;

static qv_status validate_array(vstate *V, const qv_array *a, const char *path, int depth);

QV_PRINTF(3, 4)
static qv_status fail(vstate *V, const char *path, const char *fmt, ...) {
  char msg[QV_ERROR_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return qv_error_set(V->err, QV_EINVAL, "%s: %s", path, msg);
}

/* Path of a child: "column 'a'" + "b" -> "column 'a.b'"; "x" + "b" -> "x.b". */
static void child_path(char *dst, const char *path, const char *name) {
  size_t n = strlen(path);
  if (n > 0 && path[n - 1] == '\'')
    snprintf(dst, QV_VALIDATE_PATH_MAX, "%.*s.%s'", (int)(n - 1), path, name);
  else snprintf(dst, QV_VALIDATE_PATH_MAX, "%s.%s", path, name);
}

/* ------------------------------------------------------------------------ */
/* Layout facts                                                              */

/* Bytes per value of fixed-width types; 0 for others (BOOL is bit-packed). */
static int64_t fixed_width(const qv_type *t) { return qv_type_byte_width(t); }

/* Number of buffers quiver's layout (array.h) has for a type; -1 for the
 * view types, which have at least 2. */
static int32_t expected_buffers(qv_type_id id) {
  switch (id) {
    case QV_NA:
    case QV_RUN_END_ENCODED: return 0;
    case QV_FIXED_SIZE_LIST:
    case QV_STRUCT:
    case QV_SPARSE_UNION: return 1;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: return 3;
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: return -1;
    default: return 2;
  }
}

static bool has_validity(qv_type_id id) {
  return id != QV_NA && id != QV_SPARSE_UNION && id != QV_DENSE_UNION && id != QV_RUN_END_ENCODED;
}

static int64_t buf_size(const qv_array *a, int i) {
  return a->buffers[i] ? a->buffers[i]->size : 0;
}

static const uint8_t *buf_data(const qv_array *a, int i) {
  return a->buffers[i] ? a->buffers[i]->data : NULL;
}

/* Buffer i must hold `need` bytes and be aligned for `align`-byte loads. */
static qv_status need_bytes(vstate *V, const char *path, const qv_array *a, int i, const char *name,
                            int64_t need, int64_t align) {
  if (buf_size(a, i) < need)
    return fail(V, path,
                "buffer %d (%s) has %lld bytes but %lld are required "
                "(length %lld, offset %lld)",
                i, name, (long long)buf_size(a, i), (long long)need, (long long)a->length,
                (long long)a->offset);
  if (align > 1 && need > 0 && ((uintptr_t)buf_data(a, i) & (uintptr_t)(align - 1)) != 0)
    return fail(V, path, "buffer %d (%s) is not aligned to %lld bytes", i, name, (long long)align);
  return QV_OK;
}

/* need_bytes for n elements of `width` bytes, overflow-checked. */
static qv_status need_elems(vstate *V, const char *path, const qv_array *a, int i, const char *name,
                            int64_t n, int64_t width) {
  int64_t need;
  if (qv_mul_overflow(n, width, &need))
    return fail(V, path, "buffer %d (%s): %lld elements of %lld bytes overflow", i, name,
                (long long)n, (long long)width);
  /* Loads are at most 8 bytes wide; fixed-size binary needs no alignment. */
  int64_t align = (width == 2 || width == 4 || width == 8) ? width
                  : (width == 16 || width == 32)           ? 8
                                                           : 1;
  return need_bytes(V, path, a, i, name, need, align);
}

static int64_t bitmap_bytes(int64_t bits) { return bits / 8 + (bits % 8 != 0); }

static bool slot_valid(const uint8_t *validity, int64_t i) {
  return validity == NULL || qv_bit_get(validity, i);
}

/* Nulls among bits [offset, offset+length) of an array's validity. */
static int64_t count_nulls(const qv_array *a) {
  if (!has_validity(a->type->id) || a->buffers[0] == NULL) return 0;
  return a->length - qv_bitmap_count(a->buffers[0]->data, a->offset, a->length);
}

/* ------------------------------------------------------------------------ */
/* Tight loops                                                               */

/* First i in [0, n-1) with o[i] > o[i+1], or -1. */
#define QV_DEFINE_FIRST_DECREASE(NAME, T)                                                          \
  static int64_t NAME(const T *o, int64_t n) {                                                     \
    for (int64_t base = 0; base + 1 < n; base += QV_VALIDATE_BLOCK) {                              \
      int64_t stop = n - 1 - base > QV_VALIDATE_BLOCK ? base + QV_VALIDATE_BLOCK : n - 1;          \
      int bad = 0;                                                                                 \
      for (int64_t i = base; i < stop; i++) bad |= o[i] > o[i + 1];                                \
      if (bad)                                                                                     \
        for (int64_t i = base; i < stop; i++)                                                      \
          if (o[i] > o[i + 1]) return i;                                                           \
    }                                                                                              \
    return -1;                                                                                     \
  }
QV_DEFINE_FIRST_DECREASE(first_decrease_i32, int32_t)
QV_DEFINE_FIRST_DECREASE(first_decrease_i64, int64_t)
QV_DEFINE_FIRST_DECREASE(first_decrease_i16, int16_t)

/* First i in [0, n) whose (offset, size) escapes [0, limit], or -1. */
#define QV_DEFINE_FIRST_BAD_RANGE(NAME, T)                                                         \
  static int64_t NAME(const T *off, const T *size, int64_t n, int64_t limit) {                     \
    uint64_t ulim = (uint64_t)limit;                                                               \
    for (int64_t base = 0; base < n; base += QV_VALIDATE_BLOCK) {                                  \
      int64_t stop = n - base > QV_VALIDATE_BLOCK ? base + QV_VALIDATE_BLOCK : n;                  \
      int bad = 0;                                                                                 \
      for (int64_t i = base; i < stop; i++) {                                                      \
        uint64_t uo = (uint64_t)(int64_t)off[i], us = (uint64_t)(int64_t)size[i];                  \
        bad |= (uo > ulim) | (us > ulim - uo);                                                     \
      }                                                                                            \
      if (bad)                                                                                     \
        for (int64_t i = base; i < stop; i++) {                                                    \
          uint64_t uo = (uint64_t)(int64_t)off[i], us = (uint64_t)(int64_t)size[i];                \
          if ((uo > ulim) | (us > ulim - uo)) return i;                                            \
        }                                                                                          \
    }                                                                                              \
    return -1;                                                                                     \
  }
QV_DEFINE_FIRST_BAD_RANGE(first_bad_range_i32, int32_t)
QV_DEFINE_FIRST_BAD_RANGE(first_bad_range_i64, int64_t)

/* First i in [0, n) with a valid slot (validity bit at vbase+i) whose index
 * is outside [0, limit), or -1. One branch-free pass per block ignoring
 * validity; bad blocks are rescanned honouring it. */
#define QV_DEFINE_FIRST_BAD_INDEX(NAME, T)                                                         \
  static int64_t NAME(const T *idx, int64_t n, uint64_t limit, const uint8_t *validity,            \
                      int64_t vbase) {                                                             \
    for (int64_t base = 0; base < n; base += QV_VALIDATE_BLOCK) {                                  \
      int64_t stop = n - base > QV_VALIDATE_BLOCK ? base + QV_VALIDATE_BLOCK : n;                  \
      int bad = 0;                                                                                 \
      for (int64_t i = base; i < stop; i++) bad |= (uint64_t)(int64_t)idx[i] >= limit;             \
      if (bad)                                                                                     \
        for (int64_t i = base; i < stop; i++)                                                      \
          if ((uint64_t)(int64_t)idx[i] >= limit && slot_valid(validity, vbase + i)) return i;     \
    }                                                                                              \
    return -1;                                                                                     \
  }
QV_DEFINE_FIRST_BAD_INDEX(first_bad_index_i8, int8_t)
QV_DEFINE_FIRST_BAD_INDEX(first_bad_index_i16, int16_t)
QV_DEFINE_FIRST_BAD_INDEX(first_bad_index_i32, int32_t)
QV_DEFINE_FIRST_BAD_INDEX(first_bad_index_i64, int64_t)
/* Unsigned indices: no sign extension. */
#define QV_DEFINE_FIRST_BAD_UINDEX(NAME, T)                                                        \
  static int64_t NAME(const T *idx, int64_t n, uint64_t limit, const uint8_t *validity,            \
                      int64_t vbase) {                                                             \
    for (int64_t base = 0; base < n; base += QV_VALIDATE_BLOCK) {                                  \
      int64_t stop = n - base > QV_VALIDATE_BLOCK ? base + QV_VALIDATE_BLOCK : n;                  \
      int bad = 0;                                                                                 \
      for (int64_t i = base; i < stop; i++) bad |= (uint64_t)idx[i] >= limit;                      \
      if (bad)                                                                                     \
        for (int64_t i = base; i < stop; i++)                                                      \
          if ((uint64_t)idx[i] >= limit && slot_valid(validity, vbase + i)) return i;              \
    }                                                                                              \
    return -1;                                                                                     \
  }
QV_DEFINE_FIRST_BAD_UINDEX(first_bad_index_u8, uint8_t)
QV_DEFINE_FIRST_BAD_UINDEX(first_bad_index_u16, uint16_t)
QV_DEFINE_FIRST_BAD_UINDEX(first_bad_index_u32, uint32_t)
QV_DEFINE_FIRST_BAD_UINDEX(first_bad_index_u64, uint64_t)

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */

/* Length of the valid UTF-8 prefix of s[0..n) (n when all valid). ASCII
 * runs go 16 bytes at a time; multi-byte sequences are checked against
 * the exact ranges of RFC 3629 (no overlongs, surrogates or > U+10FFFF). */
int64_t qv_utf8_valid_prefix(const uint8_t *s, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    while (i + 16 <= n) {
      uint64_t w0, w1;
      memcpy(&w0, s + i, 8);
      memcpy(&w1, s + i + 8, 8);
      if ((w0 | w1) & 0x8080808080808080ull) break;
      i += 16;
    }
    while (i < n && s[i] < 0x80) i++;
    if (i >= n) break;
    uint8_t c = s[i];
    int64_t len;
    uint8_t lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      else if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      else if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (n - i < len) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (int64_t k = 2; k < len; k++)
      if ((s[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return n;
}

static bool utf8_valid(const uint8_t *s, int64_t n) { return qv_utf8_valid_prefix(s, n) == n; }

/* ------------------------------------------------------------------------ */
/* Per-layout checks                                                         */

static qv_status check_validity(vstate *V, const qv_array *a, const char *path, int64_t end) {
  if (a->buffers[0] == NULL) {
    if (a->null_count > 0)
      return fail(V, path, "null_count %lld but no validity buffer", (long long)a->null_count);
    return QV_OK;
  }
  QV_RETURN_NOT_OK(need_bytes(V, path, a, 0, "validity", bitmap_bytes(end), 1));
  if (V->level >= QV_VALIDATE_DEFAULT && a->null_count >= 0) {
    int64_t nulls = count_nulls(a);
    if (nulls != a->null_count)
      return fail(V, path,
                  "null_count %lld does not match the validity bitmap "
                  "(%lld nulls)",
                  (long long)a->null_count, (long long)nulls);
  }
  return QV_OK;
}

/* Offsets buffer `bi` of a binary/list array: length+1 entries from the
 * array offset, monotonic (DEFAULT), first >= 0, last <= limit. */
static qv_status check_offsets(vstate *V, const qv_array *a, const char *path, int bi, int width,
                               int64_t end, int64_t limit, const char *limit_what) {
  if (a->length == 0) return QV_OK;
  int64_t n_off = a->length + 1;
  QV_RETURN_NOT_OK(need_elems(V, path, a, bi, "offsets", end + 1, width));
  const uint8_t *p = buf_data(a, bi);
  int64_t first, last;
  if (width == 4) {
    const int32_t *o = (const int32_t *)p + a->offset;
    first = o[0];
    last = o[a->length];
    if (V->level >= QV_VALIDATE_DEFAULT) {
      int64_t i = first_decrease_i32(o, n_off);
      if (i >= 0)
        return fail(V, path, "offsets not monotonic at index %lld (%d > %d)", (long long)i, o[i],
                    o[i + 1]);
    }
  } else {
    const int64_t *o = (const int64_t *)p + a->offset;
    first = o[0];
    last = o[a->length];
    if (V->level >= QV_VALIDATE_DEFAULT) {
      int64_t i = first_decrease_i64(o, n_off);
      if (i >= 0)
        return fail(V, path, "offsets not monotonic at index %lld (%lld > %lld)", (long long)i,
                    (long long)o[i], (long long)o[i + 1]);
    }
  }
  if (first < 0) return fail(V, path, "first offset %lld is negative", (long long)first);
  if (first > last)
    return fail(V, path, "first offset %lld is greater than last offset %lld", (long long)first,
                (long long)last);
  if (last > limit)
    return fail(V, path, "last offset %lld exceeds %s %lld", (long long)last, limit_what,
                (long long)limit);
  return QV_OK;
}

/* First string value (slot index, logical) that is not valid UTF-8, among
 * valid slots; -1 when all are. Fast path: the whole referenced range is
 * valid UTF-8 and every value starts on a character boundary. */
static int64_t first_bad_utf8(const qv_array *a, int width) {
  if (a->length == 0) return -1;
  const uint8_t *data = buf_data(a, 2);
  const uint8_t *validity = a->buffers[0] ? a->buffers[0]->data : NULL;
  const uint8_t *op = buf_data(a, 1);
  int64_t first, last;
#define QV_OFF(i)                                                                                  \
  (width == 4 ? (int64_t)((const int32_t *)op)[a->offset + (i)]                                    \
              : ((const int64_t *)op)[a->offset + (i)])
  first = QV_OFF(0);
  last = QV_OFF(a->length);
  if (first == last) return -1;
  bool ok = utf8_valid(data + first, last - first);
  if (ok) {
    for (int64_t i = 1; i < a->length; i++) {
      int64_t o = QV_OFF(i);
      if (o < last && (data[o] & 0xC0) == 0x80) {
        ok = false;
        break;
      }
    }
  }
  if (ok) return -1;
  for (int64_t i = 0; i < a->length; i++) {
    if (!slot_valid(validity, a->offset + i)) continue;
    int64_t s = QV_OFF(i), e = QV_OFF(i + 1);
    if (!utf8_valid(data + s, e - s)) return i;
  }
#undef QV_OFF
  return -1;
}

static qv_status validate_binary(vstate *V, const qv_array *a, const char *path, int64_t end) {
  int width = (a->type->id == QV_BINARY || a->type->id == QV_STRING) ? 4 : 8;
  QV_RETURN_NOT_OK(check_offsets(V, a, path, 1, width, end, buf_size(a, 2), "data size"));
  if (V->level >= QV_VALIDATE_FULL &&
      (a->type->id == QV_STRING || a->type->id == QV_LARGE_STRING)) {
    int64_t i = first_bad_utf8(a, width);
    if (i >= 0) return fail(V, path, "invalid UTF-8 in value at index %lld", (long long)i);
  }
  return QV_OK;
}

static qv_status validate_views(vstate *V, const qv_array *a, const char *path, int64_t end) {
  QV_RETURN_NOT_OK(need_elems(V, path, a, 1, "views", end, QV_VIEW_SIZE));
  if (V->level < QV_VALIDATE_DEFAULT) return QV_OK;
  const uint8_t *views = buf_data(a, 1);
  const uint8_t *validity = a->buffers[0] ? a->buffers[0]->data : NULL;
  int32_t n_data = a->n_buffers - 2;
  bool full = V->level >= QV_VALIDATE_FULL;
  bool is_string = a->type->id == QV_STRING_VIEW;
  for (int64_t i = 0; i < a->length; i++) {
    int64_t slot = a->offset + i;
    if (!slot_valid(validity, slot)) continue;
    const int32_t *v = (const int32_t *)(views + slot * QV_VIEW_SIZE);
    int32_t len = v[0];
    if (len < 0)
      return fail(V, path, "view at index %lld has negative length %d", (long long)i, len);
    const uint8_t *bytes;
    if (len <= QV_VIEW_INLINE_MAX) {
      bytes = (const uint8_t *)(v + 1);
      if (full) {
        for (int k = len; k < QV_VIEW_INLINE_MAX; k++)
          if (bytes[k] != 0)
            return fail(V, path,
                        "view at index %lld is inline with length %d but its "
                        "padding is not zero",
                        (long long)i, len);
      }
    } else {
      int32_t bi = v[2], off = v[3];
      if (bi < 0 || bi >= n_data)
        return fail(V, path,
                    "view at index %lld refers to data buffer %d but the "
                    "array has %d",
                    (long long)i, bi, n_data);
      int64_t size = buf_size(a, 2 + bi);
      if (off < 0 || (int64_t)off + len > size)
        return fail(V, path,
                    "view at index %lld: range [%d, %lld) is outside data "
                    "buffer %d of %lld bytes",
                    (long long)i, off, (long long)off + len, bi, (long long)size);
      bytes = buf_data(a, 2 + bi) + off;
      if (full && memcmp(bytes, v + 1, 4) != 0)
        return fail(V, path, "view at index %lld: inline prefix differs from its data",
                    (long long)i);
    }
    if (full && is_string && !utf8_valid(bytes, len))
      return fail(V, path, "invalid UTF-8 in value at index %lld", (long long)i);
  }
  return QV_OK;
}

static qv_status validate_list_view(vstate *V, const qv_array *a, const char *path, int64_t end) {
  int width = a->type->id == QV_LIST_VIEW ? 4 : 8;
  QV_RETURN_NOT_OK(need_elems(V, path, a, 1, "offsets", end, width));
  QV_RETURN_NOT_OK(need_elems(V, path, a, 2, "sizes", end, width));
  if (V->level < QV_VALIDATE_DEFAULT || a->length == 0) return QV_OK;
  int64_t limit = a->children[0]->length;
  int64_t i;
  long long o, s;
  if (width == 4) {
    const int32_t *off = (const int32_t *)buf_data(a, 1) + a->offset;
    const int32_t *sz = (const int32_t *)buf_data(a, 2) + a->offset;
    i = first_bad_range_i32(off, sz, a->length, limit);
    if (i < 0) return QV_OK;
    o = off[i];
    s = sz[i];
  } else {
    const int64_t *off = (const int64_t *)buf_data(a, 1) + a->offset;
    const int64_t *sz = (const int64_t *)buf_data(a, 2) + a->offset;
    i = first_bad_range_i64(off, sz, a->length, limit);
    if (i < 0) return QV_OK;
    o = off[i];
    s = sz[i];
  }
  return fail(V, path,
              "list view at index %lld has offset %lld and size %lld outside "
              "child length %lld",
              (long long)i, o, s, (long long)limit);
}

static qv_status validate_union(vstate *V, const qv_array *a, const char *path, int64_t end) {
  const qv_type *t = a->type;
  bool dense = t->id == QV_DENSE_UNION;
  QV_RETURN_NOT_OK(need_elems(V, path, a, 0, "type_ids", end, 1));
  if (dense) QV_RETURN_NOT_OK(need_elems(V, path, a, 1, "offsets", end, 4));
  /* type code -> child index */
  int8_t child_of[128];
  memset(child_of, -1, sizeof child_of);
  for (int32_t c = 0; c < t->n_children; c++) {
    int32_t code = t->type_codes ? t->type_codes[c] : c;
    if (code < 0 || code > 127 || child_of[code] >= 0)
      return fail(V, path, "invalid or duplicate union type code %d", (int)code);
    child_of[code] = (int8_t)c;
    if (!dense && a->children[c]->length < end)
      return fail(V, path,
                  "child '%s' has length %lld but the sparse union needs "
                  "%lld",
                  t->children[c].name, (long long)a->children[c]->length, (long long)end);
  }
  if (V->level < QV_VALIDATE_DEFAULT) return QV_OK;
  const int8_t *ids = (const int8_t *)buf_data(a, 0) + a->offset;
  for (int64_t base = 0; base < a->length; base += QV_VALIDATE_BLOCK) {
    int64_t stop = a->length - base > QV_VALIDATE_BLOCK ? base + QV_VALIDATE_BLOCK : a->length;
    int bad = 0;
    for (int64_t i = base; i < stop; i++)
      bad |= (child_of[(uint8_t)ids[i] & 0x7F] < 0) | (ids[i] < 0);
    if (bad)
      for (int64_t i = base; i < stop; i++)
        if (ids[i] < 0 || child_of[ids[i]] < 0)
          return fail(V, path,
                      "type id %d at index %lld is not one of the union's "
                      "type codes",
                      (int)ids[i], (long long)i);
  }
  if (dense) {
    int64_t child_len[128];
    for (int32_t c = 0; c < t->n_children; c++) child_len[c] = a->children[c]->length;
    const int32_t *offs = (const int32_t *)buf_data(a, 1) + a->offset;
    for (int64_t i = 0; i < a->length; i++) {
      int c = child_of[ids[i]];
      if (offs[i] < 0 || offs[i] >= child_len[c])
        return fail(V, path,
                    "dense union offset %d at index %lld is out of range for "
                    "child '%s' of length %lld",
                    offs[i], (long long)i, t->children[c].name, (long long)child_len[c]);
    }
  }
  return QV_OK;
}

static qv_status validate_dictionary(vstate *V, const qv_array *a, const char *path, int64_t end,
                                     int depth) {
  const qv_type *t = a->type;
  if (t->index_type == NULL || !qv_type_id_is_integer(t->index_type->id))
    return fail(V, path, "dictionary index type is not an integer type");
  qv_type_id ix = t->index_type->id;
  int64_t width = fixed_width(t->index_type);
  QV_RETURN_NOT_OK(need_elems(V, path, a, 1, "indices", end, width));
  if (a->dictionary == NULL) return fail(V, path, "dictionary is missing");
  if (t->value_type && a->dictionary->type->id != t->value_type->id)
    return fail(V, path, "dictionary has type %s but the field expects %s",
                qv_type_id_name(a->dictionary->type->id), qv_type_id_name(t->value_type->id));
  if (!(V->flags & QV_VALIDATE_SKIP_DICTIONARY_VALUES)) {
    char sub[QV_VALIDATE_PATH_MAX];
    child_path(sub, path, "dictionary");
    QV_RETURN_NOT_OK(validate_array(V, a->dictionary, sub, depth + 1));
  }
  if (V->level < QV_VALIDATE_DEFAULT || a->length == 0) return QV_OK;
  const uint8_t *p = buf_data(a, 1);
  const uint8_t *validity = a->buffers[0] ? a->buffers[0]->data : NULL;
  uint64_t limit = (uint64_t)a->dictionary->length;
  int64_t n = a->length, o = a->offset, i = -1;
  long long bad_value = 0;
  switch (ix) {
#define QV_IDX_CASE(ID, T, FN)                                                                     \
  case ID:                                                                                         \
    i = FN((const T *)p + o, n, limit, validity, o);                                               \
    if (i >= 0) bad_value = (long long)((const T *)p)[o + i];                                      \
    break;
    QV_IDX_CASE(QV_INT8, int8_t, first_bad_index_i8)
    QV_IDX_CASE(QV_INT16, int16_t, first_bad_index_i16)
    QV_IDX_CASE(QV_INT32, int32_t, first_bad_index_i32)
    QV_IDX_CASE(QV_INT64, int64_t, first_bad_index_i64)
    QV_IDX_CASE(QV_UINT8, uint8_t, first_bad_index_u8)
    QV_IDX_CASE(QV_UINT16, uint16_t, first_bad_index_u16)
    QV_IDX_CASE(QV_UINT32, uint32_t, first_bad_index_u32)
    QV_IDX_CASE(QV_UINT64, uint64_t, first_bad_index_u64)
#undef QV_IDX_CASE
    default: break;
  }
  if (i >= 0)
    return fail(V, path, "dictionary index %lld at index %lld is out of range [0, %lld)", bad_value,
                (long long)i, (long long)limit);
  return QV_OK;
}

/* Run ends: a child array of int16/32/64 without nulls; values at least
 * as long; strictly increasing and positive (DEFAULT); the last run end
 * covers offset + length. */
static qv_status validate_ree(vstate *V, const qv_array *a, const char *path, int64_t end) {
  const qv_array *re = a->children[0], *values = a->children[1];
  qv_type_id rid = re->type->id;
  if (rid != QV_INT16 && rid != QV_INT32 && rid != QV_INT64)
    return fail(V, path, "run ends have type %s, expected int16, int32 or int64",
                qv_type_id_name(rid));
  if (count_nulls(re) != 0) return fail(V, path, "run ends contain nulls");
  if (values->length < re->length)
    return fail(V, path, "values length %lld is less than run ends length %lld",
                (long long)values->length, (long long)re->length);
  if (re->length == 0) {
    if (end > 0)
      return fail(V, path, "run ends are empty but the array has length %lld",
                  (long long)a->length);
    return QV_OK;
  }
  const uint8_t *p = buf_data(re, 1);
  int64_t n = re->length, o = re->offset, last, first, bad = -1;
  switch (rid) {
    case QV_INT16: {
      const int16_t *r = (const int16_t *)p + o;
      first = r[0];
      last = r[n - 1];
      if (V->level >= QV_VALIDATE_DEFAULT) bad = first_decrease_i16(r, n);
      if (bad < 0 && V->level >= QV_VALIDATE_DEFAULT)
        for (int64_t i = 0; i + 1 < n; i++)
          if (r[i] == r[i + 1]) {
            bad = i;
            break;
          }
      break;
    }
    case QV_INT32: {
      const int32_t *r = (const int32_t *)p + o;
      first = r[0];
      last = r[n - 1];
      if (V->level >= QV_VALIDATE_DEFAULT) bad = first_decrease_i32(r, n);
      if (bad < 0 && V->level >= QV_VALIDATE_DEFAULT)
        for (int64_t i = 0; i + 1 < n; i++)
          if (r[i] == r[i + 1]) {
            bad = i;
            break;
          }
      break;
    }
    default: {
      const int64_t *r = (const int64_t *)p + o;
      first = r[0];
      last = r[n - 1];
      if (V->level >= QV_VALIDATE_DEFAULT) bad = first_decrease_i64(r, n);
      if (bad < 0 && V->level >= QV_VALIDATE_DEFAULT)
        for (int64_t i = 0; i + 1 < n; i++)
          if (r[i] == r[i + 1]) {
            bad = i;
            break;
          }
      break;
    }
  }
  if (first < 1) return fail(V, path, "run end %lld at index 0 is not positive", (long long)first);
  if (bad >= 0) {
    long long x, y;
    if (rid == QV_INT16) {
      x = ((const int16_t *)p)[o + bad];
      y = ((const int16_t *)p)[o + bad + 1];
    } else if (rid == QV_INT32) {
      x = ((const int32_t *)p)[o + bad];
      y = ((const int32_t *)p)[o + bad + 1];
    } else {
      x = ((const int64_t *)p)[o + bad];
      y = ((const int64_t *)p)[o + bad + 1];
    }
    return fail(V, path, "run ends not strictly increasing at index %lld (%lld >= %lld)",
                (long long)bad, x, y);
  }
  if (last < end)
    return fail(V, path, "last run end %lld is less than offset + length %lld", (long long)last,
                (long long)end);
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Driver                                                                    */

static qv_status validate_children(vstate *V, const qv_array *a, const char *path, int depth) {
  for (int32_t c = 0; c < a->n_children; c++) {
    char sub[QV_VALIDATE_PATH_MAX];
    child_path(sub, path, a->type->children[c].name);
    QV_RETURN_NOT_OK(validate_array(V, a->children[c], sub, depth + 1));
  }
  return QV_OK;
}

static qv_status validate_array(vstate *V, const qv_array *a, const char *path, int depth) {
  if (depth > QV_VALIDATE_MAX_DEPTH)
    return fail(V, path, "nesting deeper than %d levels", QV_VALIDATE_MAX_DEPTH);
  const qv_type *t = a->type;
  if (a->length < 0 || a->offset < 0)
    return fail(V, path, "negative length %lld or offset %lld", (long long)a->length,
                (long long)a->offset);
  int64_t end;
  if (qv_add_overflow(a->offset, a->length, &end))
    return fail(V, path, "offset %lld + length %lld overflows", (long long)a->offset,
                (long long)a->length);
  if (a->null_count > a->length)
    return fail(V, path, "null_count %lld exceeds length %lld", (long long)a->null_count,
                (long long)a->length);

  int32_t nb = expected_buffers(t->id);
  if (nb >= 0 ? a->n_buffers != nb : a->n_buffers < 2)
    return fail(V, path, "%s array has %d buffers, expected %s%d", qv_type_id_name(t->id),
                a->n_buffers, nb >= 0 ? "" : "at least ", nb >= 0 ? nb : 2);
  if (a->n_children != t->n_children)
    return fail(V, path, "%s array has %d children but its type has %d", qv_type_id_name(t->id),
                a->n_children, t->n_children);
  for (int32_t c = 0; c < a->n_children; c++) {
    if (a->children[c] == NULL) return fail(V, path, "child %d is missing", c);
    if (a->children[c]->type->id != t->children[c].type->id)
      return fail(V, path, "child '%s' has type %s but the type says %s", t->children[c].name,
                  qv_type_id_name(a->children[c]->type->id),
                  qv_type_id_name(t->children[c].type->id));
  }
  if (has_validity(t->id)) QV_RETURN_NOT_OK(check_validity(V, a, path, end));

  switch (t->id) {
    case QV_NA:
      if (a->null_count >= 0 && a->null_count != a->length)
        return fail(V, path, "null array has null_count %lld, expected %lld",
                    (long long)a->null_count, (long long)a->length);
      return QV_OK;
    case QV_BOOL: return need_bytes(V, path, a, 1, "values", bitmap_bytes(end), 1);
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: return validate_binary(V, a, path, end);
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: return validate_views(V, a, path, end);
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: {
      if (a->n_children != 1) return fail(V, path, "list array needs one child");
      int width = t->id == QV_LARGE_LIST ? 8 : 4;
      QV_RETURN_NOT_OK(
          check_offsets(V, a, path, 1, width, end, a->children[0]->length, "child length"));
      if (t->id == QV_MAP) {
        const qv_array *entries = a->children[0];
        if (entries->type->id != QV_STRUCT || entries->n_children != 2)
          return fail(V, path, "map entries must be a struct of key and value");
        /* Children first (as for run-end encoded arrays): their validity
         * bitmaps are only known to be long enough once validated. */
        QV_RETURN_NOT_OK(validate_children(V, a, path, depth));
        if (V->level >= QV_VALIDATE_DEFAULT) {
          if (count_nulls(entries) != 0) return fail(V, path, "map entries contain nulls");
          if (count_nulls(entries->children[0]) != 0)
            return fail(V, path, "map keys contain nulls");
        }
        return QV_OK;
      }
      return validate_children(V, a, path, depth);
    }
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
      if (a->n_children != 1) return fail(V, path, "list view array needs one child");
      QV_RETURN_NOT_OK(validate_list_view(V, a, path, end));
      return validate_children(V, a, path, depth);
    case QV_FIXED_SIZE_LIST: {
      if (a->n_children != 1) return fail(V, path, "fixed-size list array needs one child");
      int64_t need;
      if (t->list_size < 0 || qv_mul_overflow(end, t->list_size, &need))
        return fail(V, path, "invalid list size %d", t->list_size);
      if (a->children[0]->length < need)
        return fail(V, path,
                    "child '%s' has length %lld but %lld lists of size %d "
                    "need %lld",
                    t->children[0].name, (long long)a->children[0]->length, (long long)end,
                    t->list_size, (long long)need);
      return validate_children(V, a, path, depth);
    }
    case QV_STRUCT:
      for (int32_t c = 0; c < a->n_children; c++)
        if (a->children[c]->length < end)
          return fail(V, path,
                      "child '%s' has length %lld, less than the struct's "
                      "%lld",
                      t->children[c].name, (long long)a->children[c]->length, (long long)end);
      return validate_children(V, a, path, depth);
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION:
      if (a->n_children > 127)
        return fail(V, path, "union has %d children, at most 127 allowed", a->n_children);
      QV_RETURN_NOT_OK(validate_union(V, a, path, end));
      return validate_children(V, a, path, depth);
    case QV_DICTIONARY: return validate_dictionary(V, a, path, end, depth);
    case QV_RUN_END_ENCODED:
      if (a->n_children != 2) return fail(V, path, "run-end encoded array needs two children");
      QV_RETURN_NOT_OK(validate_children(V, a, path, depth));
      return validate_ree(V, a, path, end);
    default: {
      int64_t w = fixed_width(t);
      if (w <= 0 && t->id != QV_FIXED_SIZE_BINARY)
        return fail(V, path, "unknown type id %d", (int)t->id);
      return need_elems(V, path, a, 1, "values", end, w);
    }
  }
}

/* Validation reads offsets, sizes and (at the full level) bytes of
 * mapped files: it runs under the mapped-read guard (guard.c); it
 * allocates nothing, so a recovery leaves nothing behind. */
typedef struct validate_call {
  const qv_array *a;
  qv_validate_level level;
  const char *path;
  unsigned flags;
} validate_call;

static qv_status validate_body(void *ctx, qv_error *err) {
  const validate_call *c = ctx;
  vstate V = {c->level, c->flags, err};
  return validate_array(&V, c->a, c->path, 0);
}

qv_status qv_array_validate_ex(const qv_array *a, qv_validate_level level, const char *path,
                               unsigned flags, qv_error *err) {
  if (a == NULL) return qv_error_set(err, QV_EARG, "qv_array_validate: NULL array");
  if (level <= QV_VALIDATE_NONE) return QV_OK;
  validate_call c = {a, level, path && path[0] ? path : "array", flags};
  return qv_guard_run_leaf(validate_body, &c, err);
}

qv_status qv_array_validate(const qv_array *a, qv_validate_level level, const char *path,
                            qv_error *err) {
  return qv_array_validate_ex(a, level, path, 0, err);
}
