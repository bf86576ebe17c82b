/*
 * json_internal.h — helpers shared by the reader (json.c) and the writer
 * (json_write.c) of Arrow's integration JSON format. ipc layer, internal.
 */
#ifndef QUIVER_IPC_JSON_INTERNAL_H
#define QUIVER_IPC_JSON_INTERNAL_H

#include <string.h>

#include "quiver/array.h"

/* gzip magic bytes (RFC 1952). */
#define GZIP_MAGIC0 0x1f
#define GZIP_MAGIC1 0x8b
/* Binary/string views: 16-byte view structs, up to 12 bytes inline. */
#define VIEW_SIZE 16
#define VIEW_INLINE_MAX 12
#define VIEW_PREFIX 4

/* Byte width of one value of a fixed-width type (not bool), else 0. */
static inline int64_t value_width(const qv_type *t) {
  switch (t->id) {
    case QV_INT8: case QV_UINT8: return 1;
    case QV_INT16: case QV_UINT16: case QV_HALF_FLOAT: return 2;
    case QV_INT32: case QV_UINT32: case QV_FLOAT: case QV_DATE32: case QV_TIME32:
    case QV_INTERVAL_MONTHS: case QV_DECIMAL32: return 4;
    case QV_INT64: case QV_UINT64: case QV_DOUBLE: case QV_DATE64: case QV_TIME64:
    case QV_TIMESTAMP: case QV_DURATION: case QV_INTERVAL_DAY_TIME: case QV_DECIMAL64: return 8;
    case QV_DECIMAL128: case QV_INTERVAL_MONTH_DAY_NANO: return 16;
    case QV_DECIMAL256: return 32;
    case QV_FIXED_SIZE_BINARY: return t->byte_width;
    default: return 0;
  }
}

/* Offset k of a 32- or 64-bit offsets buffer. */
static inline int64_t load_off(const qv_buffer *b, int width, int64_t k) {
  if (width == 4) {
    int32_t v;
    memcpy(&v, b->data + 4 * k, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, b->data + 8 * k, 8);
  return v;
}

/* Types whose arrays carry a validity bitmap (and a VALIDITY member). */
static inline bool has_validity(qv_type_id id) {
  return id != QV_NA && id != QV_SPARSE_UNION && id != QV_DENSE_UNION &&
         id != QV_RUN_END_ENCODED;
}

#endif /* QUIVER_IPC_JSON_INTERNAL_H */
