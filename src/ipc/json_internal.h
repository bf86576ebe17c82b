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

/* Byte width of one value of a fixed-width type (not bool), else 0. */
static inline int64_t value_width(const qv_type *t) { return qv_type_byte_width(t); }

/* Offset k of a 32- or 64-bit offsets buffer. */
static inline int64_t load_off(const qv_buffer *b, int width, int64_t k) {
  return qv_load_offset(b->data, width, k);
}

/* Types whose arrays carry a validity bitmap (and a VALIDITY member). */
static inline bool has_validity(qv_type_id id) {
  return id != QV_NA && id != QV_SPARSE_UNION && id != QV_DENSE_UNION && id != QV_RUN_END_ENCODED;
}

#endif /* QUIVER_IPC_JSON_INTERNAL_H */
