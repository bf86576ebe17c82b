/*
 * thrift_write.c — the Thrift compact-protocol encoder of the Parquet
 * writer (apache/thrift doc/specs/thrift-compact-protocol.md): field
 * headers as id deltas in the high nibble (long form with a zigzag i16 id
 * when the delta is not 1..15), booleans in the type nibble, zigzag
 * varints for i16/i32/i64, length-prefixed binary, list headers with the
 * size in the high nibble below 15. Formats layer.
 */
#include "formats/thrift_write.h"

#include <stdlib.h>
#include <string.h>

#include "formats/parquet_format.h"

void qv_tw_init(qv_tw *w) { memset(w, 0, sizeof *w); }

void qv_tw_reset(qv_tw *w) {
  free(w->data);
  qv_tw_init(w);
}

void qv_tw_clear(qv_tw *w) {
  w->size = 0;
  w->failed = false;
  w->depth = 0;
  w->last_id[0] = 0;
}

static bool tw_reserve(qv_tw *w, int64_t n) {
  if (w->failed) return false;
  if (w->size + n <= w->cap) return true;
  int64_t cap = w->cap ? w->cap : 256;
  while (cap < w->size + n) cap *= 2;
  uint8_t *p = realloc(w->data, (size_t)cap);
  if (p == NULL) {
    w->failed = true;
    return false;
  }
  w->data = p;
  w->cap = cap;
  return true;
}

void qv_tw_bytes(qv_tw *w, const void *p, int64_t n) {
  if (n <= 0 || !tw_reserve(w, n)) return;
  memcpy(w->data + w->size, p, (size_t)n);
  w->size += n;
}

static void tw_byte(qv_tw *w, uint8_t b) {
  if (!tw_reserve(w, 1)) return;
  w->data[w->size++] = b;
}

void qv_tw_uvarint(qv_tw *w, uint64_t v) {
  if (!tw_reserve(w, 10)) return;
  while (v >= 0x80) {
    w->data[w->size++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  w->data[w->size++] = (uint8_t)v;
}

void qv_tw_zigzag(qv_tw *w, int64_t v) {
  qv_tw_uvarint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void qv_tw_field(qv_tw *w, int16_t id, int ctype) {
  int16_t *last = &w->last_id[w->depth];
  int delta = id - *last;
  if (delta > 0 && delta <= 15) {
    tw_byte(w, (uint8_t)(delta << 4 | ctype));
  } else {
    tw_byte(w, (uint8_t)ctype);
    qv_tw_zigzag(w, id);
  }
  *last = id;
}

void qv_tw_field_i32(qv_tw *w, int16_t id, int32_t v) {
  qv_tw_field(w, id, QV_TC_I32);
  qv_tw_zigzag(w, v);
}

void qv_tw_field_i64(qv_tw *w, int16_t id, int64_t v) {
  qv_tw_field(w, id, QV_TC_I64);
  qv_tw_zigzag(w, v);
}

void qv_tw_field_i8(qv_tw *w, int16_t id, int8_t v) {
  qv_tw_field(w, id, QV_TC_BYTE);
  tw_byte(w, (uint8_t)v);
}

void qv_tw_field_bool(qv_tw *w, int16_t id, bool v) {
  qv_tw_field(w, id, v ? QV_TC_BOOL_TRUE : QV_TC_BOOL_FALSE);
}

void qv_tw_binary(qv_tw *w, const void *p, int64_t n) {
  qv_tw_uvarint(w, (uint64_t)n);
  qv_tw_bytes(w, p, n);
}

void qv_tw_field_binary(qv_tw *w, int16_t id, const void *p, int64_t n) {
  qv_tw_field(w, id, QV_TC_BINARY);
  qv_tw_binary(w, p, n);
}

void qv_tw_field_string(qv_tw *w, int16_t id, const char *s) {
  qv_tw_field_binary(w, id, s, (int64_t)strlen(s));
}

void qv_tw_struct_begin(qv_tw *w) {
  if (w->depth >= QV_TW_MAX_DEPTH) {
    w->failed = true;
    return;
  }
  w->last_id[++w->depth] = 0;
}

void qv_tw_field_struct(qv_tw *w, int16_t id) {
  qv_tw_field(w, id, QV_TC_STRUCT);
  qv_tw_struct_begin(w);
}

void qv_tw_struct_end(qv_tw *w) {
  tw_byte(w, QV_TC_STOP);
  if (w->depth > 0) w->depth--;
}

void qv_tw_list_header(qv_tw *w, int ctype, int64_t n) {
  if (n < 15) {
    tw_byte(w, (uint8_t)(n << 4 | ctype));
  } else {
    tw_byte(w, (uint8_t)(0xF0 | ctype));
    qv_tw_uvarint(w, (uint64_t)n);
  }
}

void qv_tw_field_list(qv_tw *w, int16_t id, int ctype, int64_t n) {
  qv_tw_field(w, id, QV_TC_LIST);
  qv_tw_list_header(w, ctype, n);
}
