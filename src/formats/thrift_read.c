/*
 * thrift_read.c — the bounded Thrift compact-protocol reader behind the
 * Parquet footer and page-header decoders (thrift_internal.h): varints,
 * zigzag integers, field headers in delta and long form, list headers,
 * binaries and the skipping of unknown fields, every length checked
 * against the bytes left and nesting limited. Formats layer.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "formats/thrift_internal.h"

void qv_thrift_init(qv_thrift *t, const uint8_t *data, int64_t len, const char *what,
                    qv_error *err) {
  t->base = data;
  t->p = data;
  t->end = data + (len > 0 ? len : 0);
  t->depth = 0;
  t->st = QV_OK;
  t->err = err;
  t->what = what;
}

qv_status qv_thrift_fail(qv_thrift *t, qv_status st, const char *fmt, ...) {
  if (t->st != QV_OK) return t->st;
  t->st = st;
  if (t->err != NULL) {
    char msg[QV_ERROR_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    qv_error_set(t->err, st, "%s at byte %lld: %s", t->what, (long long)(t->p - t->base), msg);
  }
  t->p = t->end;
  return st;
}

uint8_t qv_thrift_byte(qv_thrift *t) {
  if (t->st != QV_OK) return 0;
  if (t->p >= t->end) {
    qv_thrift_fail(t, QV_EINVAL, "truncated: expected 1 more byte, found the end of the data");
    return 0;
  }
  return *t->p++;
}

uint64_t qv_thrift_uvarint(qv_thrift *t) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (t->st != QV_OK) return 0;
    if (t->p >= t->end) {
      qv_thrift_fail(t, QV_EINVAL, "truncated varint");
      return 0;
    }
    uint8_t b = *t->p++;
    if (shift == 63 && (b & 0x7e)) break;
    v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  qv_thrift_fail(t, QV_EINVAL, "varint longer than 10 bytes or over 64 bits");
  return 0;
}

int64_t qv_thrift_i64(qv_thrift *t) {
  uint64_t u = qv_thrift_uvarint(t);
  return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

int32_t qv_thrift_i32(qv_thrift *t) {
  int64_t v = qv_thrift_i64(t);
  if (v < INT32_MIN || v > INT32_MAX) {
    qv_thrift_fail(t, QV_EINVAL, "i32 value %lld out of range", (long long)v);
    return 0;
  }
  return (int32_t)v;
}

double qv_thrift_double(qv_thrift *t) {
  if (t->st != QV_OK) return 0;
  if (t->end - t->p < 8) {
    qv_thrift_fail(t, QV_EINVAL, "truncated double");
    return 0;
  }
  double d;
  memcpy(&d, t->p, 8);
  t->p += 8;
  return d;
}

const uint8_t *qv_thrift_binary(qv_thrift *t, int32_t *len) {
  *len = 0;
  uint64_t n = qv_thrift_uvarint(t);
  if (t->st != QV_OK) return NULL;
  if (n > (uint64_t)(t->end - t->p)) {
    qv_thrift_fail(t, QV_EINVAL, "binary of %llu bytes runs past the end (%lld bytes left)",
                   (unsigned long long)n, (long long)(t->end - t->p));
    return NULL;
  }
  const uint8_t *s = t->p;
  t->p += n;
  *len = (int32_t)n;
  return s;
}

bool qv_thrift_field(qv_thrift *t, int16_t *last, int16_t *id, int *type) {
  uint8_t b = qv_thrift_byte(t);
  if (t->st != QV_OK || b == QV_TC_STOP) return false;
  int ty = b & 0x0f, delta = b >> 4;
  int64_t fid;
  if (delta != 0) {
    fid = (int64_t)*last + delta;
  } else {
    fid = qv_thrift_i64(t);
  }
  if (t->st != QV_OK) return false;
  if (fid < INT16_MIN || fid > INT16_MAX) {
    qv_thrift_fail(t, QV_EINVAL, "field id %lld out of range", (long long)fid);
    return false;
  }
  if (ty > QV_TC_UUID) {
    qv_thrift_fail(t, QV_EINVAL, "field %lld has unknown compact type %d", (long long)fid, ty);
    return false;
  }
  *last = (int16_t)fid;
  *id = (int16_t)fid;
  *type = ty;
  return true;
}

int64_t qv_thrift_list(qv_thrift *t, int *elem_type) {
  uint8_t b = qv_thrift_byte(t);
  if (t->st != QV_OK) return 0;
  *elem_type = b & 0x0f;
  uint64_t n = b >> 4;
  if (n == 15) n = qv_thrift_uvarint(t);
  if (t->st != QV_OK) return 0;
  if (*elem_type == QV_TC_STOP || *elem_type > QV_TC_UUID) {
    qv_thrift_fail(t, QV_EINVAL, "list of unknown element type %d", *elem_type);
    return 0;
  }
  if (n > (uint64_t)(t->end - t->p)) {
    qv_thrift_fail(t, QV_EINVAL, "list of %llu elements longer than the %lld bytes left",
                   (unsigned long long)n, (long long)(t->end - t->p));
    return 0;
  }
  return (int64_t)n;
}

bool qv_thrift_enter(qv_thrift *t) {
  if (t->st != QV_OK) return false;
  if (++t->depth > QV_THRIFT_MAX_DEPTH) {
    qv_thrift_fail(t, QV_EINVAL, "nesting deeper than %d", QV_THRIFT_MAX_DEPTH);
    return false;
  }
  return true;
}

void qv_thrift_leave(qv_thrift *t) { t->depth--; }

static void skip_bytes(qv_thrift *t, int64_t n) {
  if (t->st != QV_OK) return;
  if (t->end - t->p < n) {
    qv_thrift_fail(t, QV_EINVAL, "truncated value");
    return;
  }
  t->p += n;
}

void qv_thrift_skip(qv_thrift *t, int type) {
  if (t->st != QV_OK) return;
  switch (type) {
    case QV_TC_BOOL_TRUE:
    case QV_TC_BOOL_FALSE: return; /* the value is in the field header */
    case QV_TC_BYTE: skip_bytes(t, 1); return;
    case QV_TC_I16:
    case QV_TC_I32:
    case QV_TC_I64: (void)qv_thrift_uvarint(t); return;
    case QV_TC_DOUBLE: skip_bytes(t, 8); return;
    case QV_TC_UUID: skip_bytes(t, 16); return;
    case QV_TC_BINARY: {
      int32_t len;
      (void)qv_thrift_binary(t, &len);
      return;
    }
    case QV_TC_LIST:
    case QV_TC_SET: {
      if (!qv_thrift_enter(t)) return;
      int et;
      int64_t n = qv_thrift_list(t, &et);
      for (int64_t i = 0; i < n && t->st == QV_OK; i++) {
        if (et == QV_TC_BOOL_TRUE || et == QV_TC_BOOL_FALSE) skip_bytes(t, 1);
        else qv_thrift_skip(t, et);
      }
      qv_thrift_leave(t);
      return;
    }
    case QV_TC_MAP: {
      if (!qv_thrift_enter(t)) return;
      uint64_t n = qv_thrift_uvarint(t);
      if (n > 0) {
        uint8_t kv = qv_thrift_byte(t);
        if (n > (uint64_t)(t->end - t->p)) {
          qv_thrift_fail(t, QV_EINVAL, "map of %llu entries longer than the bytes left",
                         (unsigned long long)n);
        }
        int kt = kv >> 4, vt = kv & 0x0f;
        for (uint64_t i = 0; i < n && t->st == QV_OK; i++) {
          if (kt == QV_TC_BOOL_TRUE || kt == QV_TC_BOOL_FALSE) skip_bytes(t, 1);
          else qv_thrift_skip(t, kt);
          if (vt == QV_TC_BOOL_TRUE || vt == QV_TC_BOOL_FALSE) skip_bytes(t, 1);
          else qv_thrift_skip(t, vt);
        }
      }
      qv_thrift_leave(t);
      return;
    }
    case QV_TC_STRUCT: {
      if (!qv_thrift_enter(t)) return;
      int16_t last = 0, id;
      int ft;
      while (qv_thrift_field(t, &last, &id, &ft)) qv_thrift_skip(t, ft);
      qv_thrift_leave(t);
      return;
    }
    default: qv_thrift_fail(t, QV_EINVAL, "cannot skip a value of unknown compact type %d", type);
  }
}

static bool check_type(qv_thrift *t, int type, bool ok, const char *want, const char *field) {
  if (ok) return true;
  qv_thrift_fail(t, QV_EINVAL, "field %s: expected %s, found compact type %d", field, want, type);
  return false;
}

int32_t qv_thrift_get_i32(qv_thrift *t, int type, const char *field) {
  if (!check_type(t, type, type == QV_TC_I32 || type == QV_TC_I16 || type == QV_TC_BYTE, "an i32",
                  field))
    return 0;
  if (type == QV_TC_BYTE) return (int8_t)qv_thrift_byte(t);
  return qv_thrift_i32(t);
}

int64_t qv_thrift_get_i64(qv_thrift *t, int type, const char *field) {
  if (!check_type(t, type, type == QV_TC_I64 || type == QV_TC_I32 || type == QV_TC_I16, "an i64",
                  field))
    return 0;
  return qv_thrift_i64(t);
}

bool qv_thrift_get_bool(qv_thrift *t, int type, const char *field) {
  if (!check_type(t, type, type == QV_TC_BOOL_TRUE || type == QV_TC_BOOL_FALSE, "a bool", field))
    return false;
  return type == QV_TC_BOOL_TRUE;
}

const uint8_t *qv_thrift_get_binary(qv_thrift *t, int type, const char *field, int32_t *len) {
  *len = 0;
  if (!check_type(t, type, type == QV_TC_BINARY, "a binary", field)) return NULL;
  return qv_thrift_binary(t, len);
}

bool qv_thrift_expect(qv_thrift *t, int type, int want, const char *field) {
  return check_type(t, type, type == want,
                    want == QV_TC_STRUCT ? "a struct"
                    : want == QV_TC_LIST ? "a list"
                                         : "another type",
                    field);
}
