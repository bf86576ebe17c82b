/*
 * flatbuf.c — flatbuffers verifier and reader (ipc layer, below the Arrow
 * metadata decoder in metadata.c). The verifier walks a buffer against
 * table descriptors and checks every offset, vtable, vector, string, union
 * and the nesting depth before anything is decoded; the reader then reads
 * fields of verified buffers without re-checking their contents. The
 * builder lives in flatbuf_builder.c. See flatbuf.h for the format.
 */
#include "ipc/flatbuf.h"

#include <inttypes.h>
#include <string.h>

/* Sizes of the format's offset types. */
#define FB_UOFFSET_SIZE 4  /* uint32 forward offset; also vector lengths */
#define FB_SOFFSET_SIZE 4  /* int32 table -> vtable offset */
#define FB_VOFFSET_SIZE 2  /* uint16 vtable entries */
#define FB_VTABLE_HEADER 4 /* vtable size + object size */

typedef struct fb_verifier {
  const uint8_t *buf;
  int64_t size;
  int64_t budget; /* tables + vector elements still allowed */
  int64_t limit;  /* the initial budget, for error text */
  qv_error *err;
} fb_verifier;

/* An opaque table: a union member this build does not know about. */
static const qv_fb_table_desc fb_opaque_table = {"(unknown union member)", 0, NULL};

static int64_t fb_field_size(const qv_fb_field_desc *f) {
  switch (f->kind) {
    case QV_FB_SCALAR:
    case QV_FB_STRUCT: return f->size;
    case QV_FB_UNION_TYPE: return 1;
    default: return FB_UOFFSET_SIZE;
  }
}

static int64_t fb_field_align(const qv_fb_field_desc *f) {
  switch (f->kind) {
    case QV_FB_SCALAR: return f->size;
    case QV_FB_STRUCT: return f->align ? f->align : 1;
    case QV_FB_UNION_TYPE: return 1;
    default: return FB_UOFFSET_SIZE;
  }
}

/* Charge `n` units of work; fails once the budget is spent. */
static qv_status fb_charge(fb_verifier *v, int64_t n, const char *what, int64_t pos) {
  v->budget -= n;
  if (v->budget < 0) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: %s at offset %" PRId64 ": more than %" PRId64
                        " tables and vector elements visited (limit for a "
                        "%" PRId64 "-byte buffer)",
                        what, pos, v->limit, v->size);
  }
  return QV_OK;
}

/*
 * Follow the uoffset stored at `at` (already known to lie inside the
 * table object). The target must lie strictly inside the buffer; offsets
 * are forward-only, non-zero and below 2^31 as the reference verifier
 * requires.
 */
static qv_status fb_deref(fb_verifier *v, const char *table, int64_t tpos, const char *field,
                          int64_t at, int64_t *target) {
  uint32_t off = qv_fb_read_u32(v->buf + at);
  int64_t t = at + (int64_t)off;
  if (off == 0 || off > (uint32_t)INT32_MAX || t >= v->size) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64 ": field '%s': offset %" PRIu32
                        " at %" PRId64 " points to %" PRId64 ", outside buffer [0, %" PRId64 ")",
                        table, tpos, field, off, at, t, v->size);
  }
  *target = t;
  return QV_OK;
}

/* Check a vector header at `pos`: aligned length, elements in bounds. */
static qv_status fb_verify_vector(fb_verifier *v, const char *table, int64_t tpos,
                                  const char *field, int64_t pos, int64_t elem_size,
                                  int64_t *len_out) {
  if (pos % FB_UOFFSET_SIZE != 0) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": field '%s': vector at offset %" PRId64
                        " misaligned (must be a multiple of 4)",
                        table, tpos, field, pos);
  }
  if (pos > v->size - FB_UOFFSET_SIZE) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": field '%s': vector length at offset %" PRId64
                        " extends past end of buffer (%" PRId64 " bytes)",
                        table, tpos, field, pos, v->size);
  }
  int64_t len = (int64_t)qv_fb_read_u32(v->buf + pos);
  int64_t bytes, end;
  if (qv_mul_overflow(len, elem_size, &bytes) ||
      qv_add_overflow(pos + FB_UOFFSET_SIZE, bytes, &end) || end > v->size) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": field '%s': vector at offset %" PRId64 " of %" PRId64
                        " elements x %" PRId64 " bytes extends past end of buffer (%" PRId64
                        " bytes)",
                        table, tpos, field, pos, len, elem_size, v->size);
  }
  *len_out = len;
  return QV_OK;
}

/* Check a string at `pos`: length in bounds and a NUL terminator. */
static qv_status fb_verify_string(fb_verifier *v, const char *table, int64_t tpos,
                                  const char *field, int64_t pos) {
  if (pos % FB_UOFFSET_SIZE != 0) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": field '%s': string at offset %" PRId64
                        " misaligned (must be a multiple of 4)",
                        table, tpos, field, pos);
  }
  if (pos > v->size - FB_UOFFSET_SIZE) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": field '%s': string length at offset %" PRId64
                        " extends past end of buffer (%" PRId64 " bytes)",
                        table, tpos, field, pos, v->size);
  }
  int64_t len = (int64_t)qv_fb_read_u32(v->buf + pos);
  int64_t nul = pos + FB_UOFFSET_SIZE + len; /* no overflow: len < 2^32 */
  if (nul >= v->size) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": field '%s': string at offset %" PRId64 " of length %" PRId64
                        " (plus NUL) extends past end of buffer (%" PRId64 " bytes)",
                        table, tpos, field, pos, len, v->size);
  }
  if (v->buf[nul] != 0) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": field '%s': string at offset %" PRId64 " of length %" PRId64
                        " is missing its NUL terminator",
                        table, tpos, field, pos, len);
  }
  return QV_OK;
}

static qv_status fb_verify_table(fb_verifier *v, int64_t pos, const qv_fb_table_desc *desc,
                                 int depth);

/* Verify one described field of the table at tpos (vtable entries read). */
static qv_status fb_verify_field(fb_verifier *v, const qv_fb_table_desc *desc, int64_t tpos,
                                 int64_t vt, uint16_t vsize, uint16_t tsize,
                                 const qv_fb_field_desc *f, int depth) {
  int64_t entry = FB_VTABLE_HEADER + (int64_t)FB_VOFFSET_SIZE * f->slot;
  uint16_t off = entry + FB_VOFFSET_SIZE <= vsize ? qv_fb_read_u16(v->buf + vt + entry) : 0;
  if (off == 0) return QV_OK; /* absent: the schema default applies */
  int64_t fsize = fb_field_size(f);
  if (off < FB_SOFFSET_SIZE || off + fsize > tsize) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": field '%s' at table offset %u with size %" PRId64
                        " is outside the table object [4, %u)",
                        desc->name, tpos, f->name, off, fsize, tsize);
  }
  int64_t at = tpos + off;
  int64_t align = fb_field_align(f);
  if (at % align != 0) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64 ": field '%s' at offset %" PRId64
                        " misaligned (must be a multiple of %" PRId64 ")",
                        desc->name, tpos, f->name, at, align);
  }
  int64_t target, len;
  switch (f->kind) {
    case QV_FB_SCALAR:
    case QV_FB_STRUCT:
    case QV_FB_UNION_TYPE: return QV_OK; /* inline: in bounds is all there is to check */
    case QV_FB_STRING:
      QV_RETURN_NOT_OK(fb_deref(v, desc->name, tpos, f->name, at, &target));
      return fb_verify_string(v, desc->name, tpos, f->name, target);
    case QV_FB_TABLE:
      QV_RETURN_NOT_OK(fb_deref(v, desc->name, tpos, f->name, at, &target));
      return fb_verify_table(v, target, f->table, depth + 1);
    case QV_FB_VEC_SCALAR:
      QV_RETURN_NOT_OK(fb_deref(v, desc->name, tpos, f->name, at, &target));
      QV_RETURN_NOT_OK(fb_verify_vector(v, desc->name, tpos, f->name, target, f->size, &len));
      return fb_charge(v, 1, "vector", target);
    case QV_FB_VEC_STRING:
    case QV_FB_VEC_TABLE: {
      QV_RETURN_NOT_OK(fb_deref(v, desc->name, tpos, f->name, at, &target));
      QV_RETURN_NOT_OK(
          fb_verify_vector(v, desc->name, tpos, f->name, target, FB_UOFFSET_SIZE, &len));
      QV_RETURN_NOT_OK(fb_charge(v, 1 + len, "vector", target));
      for (int64_t i = 0; i < len; i++) {
        int64_t elem_at = target + FB_UOFFSET_SIZE + i * FB_UOFFSET_SIZE;
        int64_t elem;
        QV_RETURN_NOT_OK(fb_deref(v, desc->name, tpos, f->name, elem_at, &elem));
        if (f->kind == QV_FB_VEC_STRING) {
          QV_RETURN_NOT_OK(fb_verify_string(v, desc->name, tpos, f->name, elem));
        } else {
          QV_RETURN_NOT_OK(fb_verify_table(v, elem, f->table, depth + 1));
        }
      }
      return QV_OK;
    }
    case QV_FB_UNION: {
      /* The tag is the field declared just before the value. */
      int64_t tag_entry = entry - FB_VOFFSET_SIZE;
      uint16_t tag_off = f->slot > 0 && tag_entry + FB_VOFFSET_SIZE <= vsize
                             ? qv_fb_read_u16(v->buf + vt + tag_entry)
                             : 0;
      uint8_t tag = 0;
      if (tag_off >= FB_SOFFSET_SIZE && tag_off < tsize) {
        tag = v->buf[tpos + tag_off];
      }
      if (tag == 0) return QV_OK; /* NONE: the value is never read */
      const qv_fb_table_desc *member = &fb_opaque_table;
      if (f->un && tag <= f->un->n_members && f->un->members[tag - 1]) {
        member = f->un->members[tag - 1];
      }
      QV_RETURN_NOT_OK(fb_deref(v, desc->name, tpos, f->name, at, &target));
      return fb_verify_table(v, target, member, depth + 1);
    }
    default:
      return qv_error_set(v->err, QV_EINVAL,
                          "flatbuffer: table %s: field '%s' has an invalid "
                          "descriptor kind %d",
                          desc->name, f->name, f->kind);
  }
}

static qv_status fb_verify_table(fb_verifier *v, int64_t pos, const qv_fb_table_desc *desc,
                                 int depth) {
  const char *name = desc->name;
  if (depth > QV_FB_MAX_DEPTH) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64 ": nesting depth exceeds %d",
                        name, pos, QV_FB_MAX_DEPTH);
  }
  QV_RETURN_NOT_OK(fb_charge(v, 1, "table", pos));
  if (pos % FB_SOFFSET_SIZE != 0) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": misaligned (must be a multiple of 4)",
                        name, pos);
  }
  if (pos < 0 || pos > v->size - FB_SOFFSET_SIZE) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": vtable offset extends past end of buffer (%" PRId64 " bytes)",
                        name, pos, v->size);
  }
  int64_t vt = pos - (int64_t)qv_fb_read_i32(v->buf + pos);
  if (vt < 0 || vt >= v->size) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64 ": vtable offset %" PRId64
                        " out of bounds [0, %" PRId64 ")",
                        name, pos, vt, v->size);
  }
  if (vt % FB_VOFFSET_SIZE != 0) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64 ": vtable at offset %" PRId64
                        " misaligned (must be a multiple of 2)",
                        name, pos, vt);
  }
  if (vt > v->size - FB_VTABLE_HEADER) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": vtable header at offset %" PRId64 " extends past end of buffer (%" PRId64
                        " bytes)",
                        name, pos, vt, v->size);
  }
  uint16_t vsize = qv_fb_read_u16(v->buf + vt);
  uint16_t tsize = qv_fb_read_u16(v->buf + vt + FB_VOFFSET_SIZE);
  if (vsize < FB_VTABLE_HEADER || vsize % FB_VOFFSET_SIZE != 0) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": vtable size %u invalid (must be even and >= 4)",
                        name, pos, vsize);
  }
  if (vt + vsize > v->size) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64 ": vtable at offset %" PRId64
                        " of size %u extends past end of buffer (%" PRId64 " bytes)",
                        name, pos, vt, vsize, v->size);
  }
  if (tsize < FB_SOFFSET_SIZE) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": object size %u invalid (must be >= 4)",
                        name, pos, tsize);
  }
  if (pos + tsize > v->size) {
    return qv_error_set(v->err, QV_EINVAL,
                        "flatbuffer: table %s at offset %" PRId64
                        ": object of size %u extends past end of buffer "
                        "(%" PRId64 " bytes)",
                        name, pos, tsize, v->size);
  }
  for (int i = 0; i < desc->n_fields; i++) {
    QV_RETURN_NOT_OK(fb_verify_field(v, desc, pos, vt, vsize, tsize, &desc->fields[i], depth));
  }
  return QV_OK;
}

qv_status qv_fb_verify(const uint8_t *data, int64_t size, const qv_fb_table_desc *root,
                       qv_error *err) {
  if (size < FB_UOFFSET_SIZE) {
    return qv_error_set(err, QV_EINVAL,
                        "flatbuffer: buffer of %" PRId64
                        " bytes is too small (need at least 4 for the root "
                        "offset)",
                        size);
  }
  if (size > QV_FB_MAX_SIZE) {
    return qv_error_set(err, QV_EINVAL,
                        "flatbuffer: buffer of %" PRId64 " bytes exceeds the format's 2 GiB limit",
                        size);
  }
  fb_verifier v = {data, size, 0, 0, err};
  v.limit = 8 * size + 1024;
  v.budget = v.limit;
  uint32_t root_off = qv_fb_read_u32(data);
  if ((int64_t)root_off >= size) {
    return qv_error_set(err, QV_EINVAL,
                        "flatbuffer: root table offset %" PRIu32 " out of bounds [0, %" PRId64 ")",
                        root_off, size);
  }
  return fb_verify_table(&v, (int64_t)root_off, root, 1);
}

/* ------------------------------------------------------------------------ */
/* Reader                                                                    */

/* Locate the table at pos. Cheap bounds checks only: verification has
 * already proven the structure, these keep a misuse from reading wild. */
static bool fb_make_table(const uint8_t *buf, int64_t size, int64_t pos, qv_fb_table *out) {
  memset(out, 0, sizeof *out);
  if (pos < 0 || pos > size - FB_SOFFSET_SIZE) return false;
  int64_t vt = pos - (int64_t)qv_fb_read_i32(buf + pos);
  if (vt < 0 || vt > size - FB_VTABLE_HEADER) return false;
  uint16_t vsize = qv_fb_read_u16(buf + vt);
  uint16_t tsize = qv_fb_read_u16(buf + vt + FB_VOFFSET_SIZE);
  if (vt + vsize > size || pos + tsize > size) return false;
  out->buf = buf;
  out->size = size;
  out->pos = pos;
  out->vtable = vt;
  out->vsize = vsize;
  out->tsize = tsize;
  return true;
}

bool qv_fb_root(const uint8_t *data, int64_t size, qv_fb_table *out) {
  if (size < FB_UOFFSET_SIZE) {
    memset(out, 0, sizeof *out);
    return false;
  }
  return fb_make_table(data, size, (int64_t)qv_fb_read_u32(data), out);
}

uint16_t qv_fb_field_offset(const qv_fb_table *t, int slot) {
  if (!t->buf || slot < 0) return 0;
  int64_t entry = FB_VTABLE_HEADER + (int64_t)FB_VOFFSET_SIZE * slot;
  if (entry + FB_VOFFSET_SIZE > t->vsize) return 0;
  return qv_fb_read_u16(t->buf + t->vtable + entry);
}

/* Position of an inline field of n bytes, or -1 when absent. */
static int64_t fb_inline(const qv_fb_table *t, int slot, int64_t n) {
  uint16_t off = qv_fb_field_offset(t, slot);
  if (off == 0 || off + n > t->tsize) return -1;
  return t->pos + off;
}

uint8_t qv_fb_u8(const qv_fb_table *t, int slot, uint8_t def) {
  int64_t at = fb_inline(t, slot, 1);
  return at < 0 ? def : t->buf[at];
}
int8_t qv_fb_i8(const qv_fb_table *t, int slot, int8_t def) {
  int64_t at = fb_inline(t, slot, 1);
  return at < 0 ? def : (int8_t)t->buf[at];
}
bool qv_fb_bool(const qv_fb_table *t, int slot, bool def) {
  int64_t at = fb_inline(t, slot, 1);
  return at < 0 ? def : t->buf[at] != 0;
}
int16_t qv_fb_i16(const qv_fb_table *t, int slot, int16_t def) {
  int64_t at = fb_inline(t, slot, 2);
  return at < 0 ? def : qv_fb_read_i16(t->buf + at);
}
int32_t qv_fb_i32(const qv_fb_table *t, int slot, int32_t def) {
  int64_t at = fb_inline(t, slot, 4);
  return at < 0 ? def : qv_fb_read_i32(t->buf + at);
}
int64_t qv_fb_i64(const qv_fb_table *t, int slot, int64_t def) {
  int64_t at = fb_inline(t, slot, 8);
  return at < 0 ? def : qv_fb_read_i64(t->buf + at);
}

/* Target of the uoffset field at `slot`, or -1. */
static int64_t fb_indirect(const qv_fb_table *t, int slot) {
  int64_t at = fb_inline(t, slot, FB_UOFFSET_SIZE);
  if (at < 0) return -1;
  int64_t target = at + (int64_t)qv_fb_read_u32(t->buf + at);
  return target < t->size ? target : -1;
}

bool qv_fb_table_field(const qv_fb_table *t, int slot, qv_fb_table *out) {
  int64_t target = fb_indirect(t, slot);
  if (target < 0) {
    memset(out, 0, sizeof *out);
    return false;
  }
  return fb_make_table(t->buf, t->size, target, out);
}

/* String at pos: bounds-checked against the buffer. */
static bool fb_string_at(const uint8_t *buf, int64_t size, int64_t pos, const char **s,
                         int64_t *len) {
  if (pos < 0 || pos > size - FB_UOFFSET_SIZE) return false;
  int64_t n = (int64_t)qv_fb_read_u32(buf + pos);
  if (pos + FB_UOFFSET_SIZE + n >= size) return false;
  *s = (const char *)buf + pos + FB_UOFFSET_SIZE;
  *len = n;
  return true;
}

bool qv_fb_string(const qv_fb_table *t, int slot, const char **s, int64_t *len) {
  int64_t target = fb_indirect(t, slot);
  *s = NULL;
  *len = 0;
  return target >= 0 && fb_string_at(t->buf, t->size, target, s, len);
}

bool qv_fb_vector(const qv_fb_table *t, int slot, qv_fb_vec *out) {
  int64_t target = fb_indirect(t, slot);
  memset(out, 0, sizeof *out);
  if (target < 0 || target > t->size - FB_UOFFSET_SIZE) return false;
  out->buf = t->buf;
  out->size = t->size;
  out->pos = target + FB_UOFFSET_SIZE;
  out->len = (int64_t)qv_fb_read_u32(t->buf + target);
  return true;
}

bool qv_fb_vec_table(const qv_fb_vec *v, int64_t i, qv_fb_table *out) {
  int64_t at = v->pos + i * FB_UOFFSET_SIZE;
  if (i < 0 || i >= v->len || at > v->size - FB_UOFFSET_SIZE) {
    memset(out, 0, sizeof *out);
    return false;
  }
  return fb_make_table(v->buf, v->size, at + (int64_t)qv_fb_read_u32(v->buf + at), out);
}

bool qv_fb_vec_string(const qv_fb_vec *v, int64_t i, const char **s, int64_t *len) {
  int64_t at = v->pos + i * FB_UOFFSET_SIZE;
  *s = NULL;
  *len = 0;
  if (i < 0 || i >= v->len || at > v->size - FB_UOFFSET_SIZE) return false;
  return fb_string_at(v->buf, v->size, at + (int64_t)qv_fb_read_u32(v->buf + at), s, len);
}
