/*
 * thrift_write.h — a Thrift compact-protocol encoder into a growable heap
 * buffer: field headers with id deltas, nested structs, lists, binary,
 * zigzag varints. Formats layer (private header); used by the Parquet
 * writer for the footer and the page headers.
 *
 * Errors are sticky: an allocation failure (or nesting past
 * QV_TW_MAX_DEPTH) sets `failed`, later calls do nothing, and the caller
 * checks qv_tw_ok() once at the end.
 */
#ifndef QUIVER_FORMATS_THRIFT_WRITE_H
#define QUIVER_FORMATS_THRIFT_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#define QV_TW_MAX_DEPTH 32

typedef struct qv_tw {
  uint8_t *data; /* malloc'ed; owned by the encoder until qv_tw_take */
  int64_t size;
  int64_t cap;
  bool failed;
  int depth;
  int16_t last_id[QV_TW_MAX_DEPTH + 1]; /* last field id per open struct */
} qv_tw;

/** Empty encoder (no allocation until the first byte). */
void qv_tw_init(qv_tw *w);
/** Free the bytes; the encoder is empty again. */
void qv_tw_reset(qv_tw *w);
/** Forget the bytes but keep the allocation (for the next message). */
void qv_tw_clear(qv_tw *w);
static inline bool qv_tw_ok(const qv_tw *w) { return !w->failed; }

/* Raw bytes and varints. */
void qv_tw_bytes(qv_tw *w, const void *p, int64_t n);
void qv_tw_uvarint(qv_tw *w, uint64_t v);
void qv_tw_zigzag(qv_tw *w, int64_t v);

/* Field headers and values. Ids must increase within a struct for the
 * short form; any order is accepted (the long form is used otherwise). */
void qv_tw_field(qv_tw *w, int16_t id, int ctype);
void qv_tw_field_i32(qv_tw *w, int16_t id, int32_t v);
void qv_tw_field_i64(qv_tw *w, int16_t id, int64_t v);
void qv_tw_field_i8(qv_tw *w, int16_t id, int8_t v);
void qv_tw_field_bool(qv_tw *w, int16_t id, bool v);
void qv_tw_field_binary(qv_tw *w, int16_t id, const void *p, int64_t n);
void qv_tw_field_string(qv_tw *w, int16_t id, const char *s);
/** Field header of a struct, then the struct's fields, then qv_tw_end. */
void qv_tw_field_struct(qv_tw *w, int16_t id);
/** Start a top-level (or list element) struct. */
void qv_tw_struct_begin(qv_tw *w);
/** STOP byte; closes the innermost struct. */
void qv_tw_struct_end(qv_tw *w);
/** List header of n elements of `ctype` (as field `id`, or bare with id 0
 *  through qv_tw_list_header). Elements follow: values with
 *  qv_tw_zigzag/qv_tw_binary, structs with qv_tw_struct_begin/end. */
void qv_tw_field_list(qv_tw *w, int16_t id, int ctype, int64_t n);
void qv_tw_list_header(qv_tw *w, int ctype, int64_t n);
/** A binary or string value (length varint + bytes), e.g. a list element. */
void qv_tw_binary(qv_tw *w, const void *p, int64_t n);

#endif /* QUIVER_FORMATS_THRIFT_WRITE_H */
