/*
 * thrift_internal.h — a bounded reader of the Thrift compact protocol
 * (apache/thrift doc/specs/thrift-compact-protocol.md), the encoding of
 * Parquet's footer and page headers. Formats layer (private header).
 *
 * The reader walks a byte range [p, end) and never reads past `end`:
 * every varint, string and list length is checked against the bytes
 * left. Errors are sticky: the first failure sets `st` and the message in
 * `err` (with the offset from `base`), every later read returns zero, so
 * decoders check `t->st` once per loop. Nesting (structs, lists, skipped
 * unknown fields) is limited to QV_THRIFT_MAX_DEPTH.
 */
#ifndef QUIVER_FORMATS_THRIFT_INTERNAL_H
#define QUIVER_FORMATS_THRIFT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/parquet_format.h"
#include "quiver/core.h"

#define QV_THRIFT_MAX_DEPTH 64

typedef struct qv_thrift {
  const uint8_t *base; /* start of the whole range (for offsets in errors) */
  const uint8_t *p;
  const uint8_t *end;
  int depth;
  qv_status st;
  qv_error *err;
  const char *what; /* what is decoded ("footer", "page header"), for errors */
} qv_thrift;

/** Start reading [data, data + len). */
void qv_thrift_init(qv_thrift *t, const uint8_t *data, int64_t len, const char *what,
                    qv_error *err);
/** Record a failure (first one wins) and return the status. */
qv_status qv_thrift_fail(qv_thrift *t, qv_status st, const char *fmt, ...) QV_PRINTF(3, 4);

uint8_t qv_thrift_byte(qv_thrift *t);
uint64_t qv_thrift_uvarint(qv_thrift *t);
/** Zigzag varints (i16/i32 are range-checked). */
int64_t qv_thrift_i64(qv_thrift *t);
int32_t qv_thrift_i32(qv_thrift *t);
double qv_thrift_double(qv_thrift *t);
/** A binary/string: its bytes (pointing into the range) and length. */
const uint8_t *qv_thrift_binary(qv_thrift *t, int32_t *len);

/** Field iteration inside a struct: `last` starts at 0 (one per struct).
 *  Returns false at the STOP byte or on error; else the field id and
 *  compact type (QV_TC_*); booleans carry their value in the type. */
bool qv_thrift_field(qv_thrift *t, int16_t *last, int16_t *id, int *type);
/** List/set header: element type and count (count bounded by the bytes
 *  left: every element takes at least one byte). */
int64_t qv_thrift_list(qv_thrift *t, int *elem_type);
/** Skip a value of compact type `type` (nested values to the depth limit). */
void qv_thrift_skip(qv_thrift *t, int type);
/** Enter / leave a nested struct (depth accounting). */
bool qv_thrift_enter(qv_thrift *t);
void qv_thrift_leave(qv_thrift *t);

/* Typed reads of a field's value that check its compact type first (a
 * field of another type is an error naming the field). */
int32_t qv_thrift_get_i32(qv_thrift *t, int type, const char *field);
int64_t qv_thrift_get_i64(qv_thrift *t, int type, const char *field);
bool qv_thrift_get_bool(qv_thrift *t, int type, const char *field);
const uint8_t *qv_thrift_get_binary(qv_thrift *t, int type, const char *field, int32_t *len);
/** Check a field is a struct (then read it), else fail; returns ok. */
bool qv_thrift_expect(qv_thrift *t, int type, int want, const char *field);

#endif /* QUIVER_FORMATS_THRIFT_INTERNAL_H */
