/*
 * quiver/type.h — the Arrow type model: data types, fields, key/value
 * metadata and schemas. Part of the core layer; every other layer speaks it.
 *
 * A qv_type is an immutable, reference-counted node. Nested types own their
 * child fields. A schema is a struct type plus schema-level metadata; a
 * record batch is an array of that struct type (see array.h).
 *
 * Extension types are represented as their storage type with the field
 * metadata keys "ARROW:extension:name" / "ARROW:extension:metadata" kept, as
 * in the IPC format and the C Data Interface (qv_field_extension_name()).
 */
#ifndef QUIVER_TYPE_H
#define QUIVER_TYPE_H

#include "quiver/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qv_type_id {
  QV_NA = 0, /* the null type */
  QV_BOOL,
  QV_INT8,
  QV_UINT8,
  QV_INT16,
  QV_UINT16,
  QV_INT32,
  QV_UINT32,
  QV_INT64,
  QV_UINT64,
  QV_HALF_FLOAT,
  QV_FLOAT,
  QV_DOUBLE,
  QV_DECIMAL32,
  QV_DECIMAL64,
  QV_DECIMAL128,
  QV_DECIMAL256,
  QV_DATE32, /* days since epoch, int32 */
  QV_DATE64, /* ms since epoch, int64 */
  QV_TIME32, /* unit s or ms */
  QV_TIME64, /* unit us or ns */
  QV_TIMESTAMP,
  QV_DURATION,
  QV_INTERVAL_MONTHS,         /* int32 months */
  QV_INTERVAL_DAY_TIME,       /* int32 days, int32 ms */
  QV_INTERVAL_MONTH_DAY_NANO, /* int32 months, int32 days, int64 ns */
  QV_BINARY,
  QV_STRING,
  QV_LARGE_BINARY,
  QV_LARGE_STRING,
  QV_BINARY_VIEW,
  QV_STRING_VIEW,
  QV_FIXED_SIZE_BINARY,
  QV_LIST,
  QV_LARGE_LIST,
  QV_LIST_VIEW,
  QV_LARGE_LIST_VIEW,
  QV_FIXED_SIZE_LIST,
  QV_STRUCT,
  QV_MAP,
  QV_SPARSE_UNION,
  QV_DENSE_UNION,
  QV_DICTIONARY,
  QV_RUN_END_ENCODED,
  QV_TYPE_ID_COUNT
} qv_type_id;

typedef enum qv_time_unit { QV_SECOND = 0, QV_MILLI = 1, QV_MICRO = 2, QV_NANO = 3 } qv_time_unit;

/** One key/value pair. Both are NUL-terminated copies; the explicit
 *  lengths allow embedded NUL bytes (Arrow metadata is bytes). */
typedef struct qv_kv {
  char *key;
  char *value;
  int64_t key_len;
  int64_t value_len;
} qv_kv;

/** Ordered key/value metadata (order and duplicates preserved). */
typedef struct qv_metadata {
  int64_t n;
  qv_kv *kv;
} qv_metadata;

typedef struct qv_type qv_type;

/** A named child of a nested type, or a top-level column. */
typedef struct qv_field {
  char *name; /* owned, never NULL ("" when the file has none) */
  bool nullable;
  qv_type *type; /* owned reference */
  qv_metadata metadata;
} qv_field;

/**
 * A data type. Which parameters are meaningful depends on `id`:
 *  - decimals: precision, scale (bit width follows from id)
 *  - TIME32/TIME64/TIMESTAMP/DURATION: unit; TIMESTAMP: timezone (NULL = none)
 *  - FIXED_SIZE_BINARY: byte_width; FIXED_SIZE_LIST: list_size
 *  - MAP: keys_sorted
 *  - unions: type_codes[n_children]
 *  - DICTIONARY: index_type (an integer type), value_type, dict_id, ordered
 *  - children: LIST/LARGE_LIST/LIST_VIEW/LARGE_LIST_VIEW/FIXED_SIZE_LIST one
 *    (the item); MAP one (struct "entries" of key, value); STRUCT and unions
 *    any number; RUN_END_ENCODED two (run_ends, values).
 */
struct qv_type {
  qv_type_id id;
  long refcount_;
  int32_t precision;
  int32_t scale;
  qv_time_unit unit;
  char *timezone;
  int32_t byte_width;
  int32_t list_size;
  bool keys_sorted;
  int32_t *type_codes;
  qv_type *index_type;
  qv_type *value_type;
  int64_t dict_id;
  bool ordered;
  int32_t n_children;
  qv_field *children;
};

/** New type with all parameters zero and no children; one reference.
 *  Returns NULL on allocation failure. Callers fill parameters and add
 *  children (qv_type_add_child) before sharing it. */
QV_API qv_type *qv_type_new(qv_type_id id);
QV_API qv_type *qv_type_ref(qv_type *t);
QV_API void qv_type_unref(qv_type *t);

/** Append a child field (name copied; `type` reference taken over on
 *  success; metadata copied when not NULL). */
QV_API qv_status qv_type_add_child(qv_type *t, const char *name, bool nullable, qv_type *type,
                                   const qv_metadata *metadata, qv_error *err) QV_NODISCARD;

/** Convenience constructors (one reference, NULL on allocation failure). */
QV_API qv_type *qv_type_timestamp(qv_time_unit unit, const char *timezone);
QV_API qv_type *qv_type_list_of(qv_type_id list_id, qv_type *item /* taken */);

/** Deep structural equality. With check_metadata, field metadata too. */
QV_API bool qv_type_equals(const qv_type *a, const qv_type *b, bool check_metadata);

/** Short name of a type id ("int32", "large_string", ...). Static. */
QV_API const char *qv_type_id_name(qv_type_id id);

/**
 * Human-readable rendering in pyarrow's style, e.g. "int32",
 * "timestamp[ms, tz=UTC]", "list<item: string>",
 * "dictionary<values=string, indices=int8, ordered=0>". Writes at most
 * `cap` bytes (always NUL-terminated); returns the length it needed.
 */
QV_API int64_t qv_type_to_string(const qv_type *t, char *out, int64_t cap);

/** Bit width of one value for fixed-width types (bool: 1; decimals:
 *  32..256; interval month_day_nano: 128; fixed_size_binary: 8*byte_width),
 *  0 for anything else. */
QV_API int32_t qv_type_bit_width(const qv_type *t);

/** Bytes per value of fixed-width types other than bool (fixed_size_binary:
 *  byte_width; decimals and intervals included), 0 for anything else. */
QV_API int32_t qv_type_byte_width(const qv_type *t);

/** True for integer ids (signed or unsigned). */
QV_API bool qv_type_id_is_integer(qv_type_id id);
QV_API bool qv_type_id_is_signed_integer(qv_type_id id);

/** Number of buffers an array of this type carries in quiver's layout
 *  (see array.h), not counting variadic view data buffers. */
QV_API int32_t qv_type_num_buffers(qv_type_id id);

/* ------------------------------------------------------------------------ */
/* Metadata                                                                  */

/** Deep copy of src into *dst (dst's previous content is not freed). */
QV_API qv_status qv_metadata_copy(qv_metadata *dst, const qv_metadata *src,
                                  qv_error *err) QV_NODISCARD;
/** Append a pair (copied). */
QV_API qv_status qv_metadata_append(qv_metadata *md, const char *key, int64_t key_len,
                                    const char *value, int64_t value_len,
                                    qv_error *err) QV_NODISCARD;
/** Free contents and reset to empty. */
QV_API void qv_metadata_reset(qv_metadata *md);
/** Value of the last pair with this key, or NULL. Points into md. */
QV_API const qv_kv *qv_metadata_find(const qv_metadata *md, const char *key);
QV_API bool qv_metadata_equals(const qv_metadata *a, const qv_metadata *b);

/** Extension name from a field's metadata, or NULL. Points into field. */
QV_API const char *qv_field_extension_name(const qv_field *f);

/* ------------------------------------------------------------------------ */
/* Schemas                                                                   */

/**
 * A schema: top-level fields (as the children of a STRUCT type) plus
 * schema metadata. Reference-counted, immutable once shared.
 */
typedef struct qv_schema {
  long refcount_;
  qv_type *type; /* STRUCT; its children are the columns */
  qv_metadata metadata;
} qv_schema;

/** New schema over `struct_type` (reference taken over). */
QV_API qv_schema *qv_schema_new(qv_type *struct_type);
QV_API qv_schema *qv_schema_ref(qv_schema *s);
QV_API void qv_schema_unref(qv_schema *s);
static inline int32_t qv_schema_num_fields(const qv_schema *s) { return s->type->n_children; }
static inline const qv_field *qv_schema_field(const qv_schema *s, int32_t i) {
  return &s->type->children[i];
}
/** Index of the first column with this name, or -1. */
QV_API int32_t qv_schema_find(const qv_schema *s, const char *name);
QV_API bool qv_schema_equals(const qv_schema *a, const qv_schema *b, bool check_metadata);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_TYPE_H */
