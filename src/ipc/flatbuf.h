/*
 * flatbuf.h — a small, self-contained implementation of the flatbuffers
 * binary format (google/flatbuffers docs/source/internals.md) for the ipc
 * layer: a schema-driven VERIFIER, a READER for verified buffers, and a
 * back-to-front BUILDER. Not installed; Arrow's own tables are described in
 * arrow_fbs.h on top of this.
 *
 * Format summary (all scalars little-endian):
 *  - A buffer starts with a uoffset (uint32) to the root table.
 *  - A table starts with an soffset (int32): its vtable lives at
 *    table - soffset. A vtable is uint16 entries: [vtable size in bytes,
 *    table object size in bytes, field offsets...]; a field offset is
 *    relative to the table start, 0 (or beyond the vtable) means absent
 *    and the field takes its schema default.
 *  - Strings, vectors and sub-tables are referenced by a uoffset stored in
 *    the table, relative to the position of that uoffset (always forward).
 *  - A vector is a uint32 element count followed by the elements; a string
 *    is a vector of bytes followed by a NUL byte that the count excludes.
 *  - A union is two fields: a uint8 type tag (0 = NONE) and an offset to a
 *    table whose kind the tag names.
 *
 * Verification walks a buffer against table descriptors (qv_fb_table_desc)
 * and checks every rule before a single value is decoded; the reader then
 * trusts those checks (it still never reads outside the buffer).
 */
#ifndef QUIVER_IPC_FLATBUF_H
#define QUIVER_IPC_FLATBUF_H

#include "quiver/core.h"

/* ------------------------------------------------------------------------ */
/* Verifier                                                                  */

/** Maximum nesting of tables (Arrow C++ uses the same bound). */
#define QV_FB_MAX_DEPTH 128
/** Buffers larger than this are refused (flatbuffers offsets are 31-bit). */
#define QV_FB_MAX_SIZE ((int64_t)INT32_MAX)

/** What a described field holds. */
typedef enum qv_fb_kind {
  QV_FB_SCALAR = 1, /* inline scalar of `size` bytes, aligned to its size */
  QV_FB_STRUCT,     /* inline struct of `size` bytes aligned to `align` */
  QV_FB_STRING,     /* offset to a string */
  QV_FB_TABLE,      /* offset to a table described by `table` */
  QV_FB_VEC_SCALAR, /* offset to a vector of `size`-byte scalars/structs */
  QV_FB_VEC_STRING, /* offset to a vector of offsets to strings */
  QV_FB_VEC_TABLE,  /* offset to a vector of offsets to `table` tables */
  QV_FB_UNION_TYPE, /* the uint8 tag of a union */
  QV_FB_UNION       /* the union value; its tag is the field at slot-1 */
} qv_fb_kind;

struct qv_fb_table_desc;
struct qv_fb_union_desc;

/** One field of a table, as the schema declares it. */
typedef struct qv_fb_field_desc {
  const char *name;                     /* schema name, used in error text */
  uint16_t slot;                        /* declaration index (vtable entry = 2 + slot) */
  uint8_t kind;                         /* qv_fb_kind */
  uint8_t size;                         /* SCALAR/STRUCT/VEC_SCALAR element size in bytes */
  uint8_t align;                        /* STRUCT / VEC_SCALAR element alignment (0 = size) */
  const struct qv_fb_table_desc *table; /* TABLE / VEC_TABLE */
  const struct qv_fb_union_desc *un;    /* UNION */
} qv_fb_field_desc;

/** A table type: its name and the fields the verifier checks. Fields the
 *  descriptor omits are never read and so need no checking. */
typedef struct qv_fb_table_desc {
  const char *name;
  int n_fields;
  const qv_fb_field_desc *fields;
} qv_fb_table_desc;

/** A union type: members[tag - 1] describes the table of each tag. A tag
 *  above n_members (a newer producer) is verified as an opaque table; the
 *  decoder decides whether it can use it. */
typedef struct qv_fb_union_desc {
  const char *name;
  int n_members;
  const qv_fb_table_desc *const *members;
} qv_fb_union_desc;

/**
 * Verify that `data[0, size)` is a well-formed flatbuffer whose root table
 * is `root`. Checks: root offset; for every reachable table, its alignment,
 * vtable position/alignment/size (even, >= 4, inside the buffer) and object
 * size (>= 4, inside the buffer); every described field inside the table
 * object and aligned; every offset positive and in bounds; every vector
 * length (overflow-checked) and string NUL terminator; union members;
 * nesting depth <= QV_FB_MAX_DEPTH; and a total work budget of tables +
 * vector elements visited (8 * size + 1024, after Arrow C++'s max_tables
 * heuristic), so shared sub-objects cannot make verification quadratic.
 * Errors are QV_EINVAL with text starting "flatbuffer: ".
 */
qv_status qv_fb_verify(const uint8_t *data, int64_t size, const qv_fb_table_desc *root,
                       qv_error *err);

/* ------------------------------------------------------------------------ */
/* Reader (for verified buffers)                                             */

/** Little-endian loads from unaligned memory. */
static inline uint16_t qv_fb_read_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t qv_fb_read_u32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t qv_fb_read_u64(const uint8_t *p) {
  return (uint64_t)qv_fb_read_u32(p) | ((uint64_t)qv_fb_read_u32(p + 4) << 32);
}
static inline int16_t qv_fb_read_i16(const uint8_t *p) { return (int16_t)qv_fb_read_u16(p); }
static inline int32_t qv_fb_read_i32(const uint8_t *p) { return (int32_t)qv_fb_read_u32(p); }
static inline int64_t qv_fb_read_i64(const uint8_t *p) { return (int64_t)qv_fb_read_u64(p); }

/** A table inside a buffer. Zero-initialised means "absent". */
typedef struct qv_fb_table {
  const uint8_t *buf;
  int64_t size;   /* of the whole buffer */
  int64_t pos;    /* table start */
  int64_t vtable; /* vtable start */
  uint16_t vsize; /* vtable size in bytes */
  uint16_t tsize; /* table object size in bytes */
} qv_fb_table;

/** A vector inside a buffer (elements start at `pos`). */
typedef struct qv_fb_vec {
  const uint8_t *buf;
  int64_t size;
  int64_t pos; /* first element */
  int64_t len; /* element count */
} qv_fb_vec;

/** The root table of a verified buffer. Returns false (and a zeroed *out)
 *  only if the buffer is malformed, which verification rules out. */
bool qv_fb_root(const uint8_t *data, int64_t size, qv_fb_table *out);

/** Offset of field `slot` from the table start, 0 when absent. */
uint16_t qv_fb_field_offset(const qv_fb_table *t, int slot);
static inline bool qv_fb_has(const qv_fb_table *t, int slot) {
  return qv_fb_field_offset(t, slot) != 0;
}

/** Scalar field values, or `def` when absent. */
uint8_t qv_fb_u8(const qv_fb_table *t, int slot, uint8_t def);
int8_t qv_fb_i8(const qv_fb_table *t, int slot, int8_t def);
bool qv_fb_bool(const qv_fb_table *t, int slot, bool def);
int16_t qv_fb_i16(const qv_fb_table *t, int slot, int16_t def);
int32_t qv_fb_i32(const qv_fb_table *t, int slot, int32_t def);
int64_t qv_fb_i64(const qv_fb_table *t, int slot, int64_t def);

/** Sub-table field; false (and *out zeroed) when absent. */
bool qv_fb_table_field(const qv_fb_table *t, int slot, qv_fb_table *out);
/** String field: *s points into the buffer (NUL-terminated), *len excludes
 *  the NUL. False when absent. */
bool qv_fb_string(const qv_fb_table *t, int slot, const char **s, int64_t *len);
/** Vector field; false (and an empty *out) when absent. */
bool qv_fb_vector(const qv_fb_table *t, int slot, qv_fb_vec *out);

/** Element i of a vector of scalars/structs of elem_size bytes. */
static inline const uint8_t *qv_fb_vec_elem(const qv_fb_vec *v, int64_t i, int64_t elem_size) {
  return v->buf + v->pos + i * elem_size;
}
/** Element i of a vector of tables / strings. */
bool qv_fb_vec_table(const qv_fb_vec *v, int64_t i, qv_fb_table *out);
bool qv_fb_vec_string(const qv_fb_vec *v, int64_t i, const char **s, int64_t *len);

/* ------------------------------------------------------------------------ */
/* Builder                                                                   */

/** A reference to a finished object (string, vector, table) inside a
 *  builder: its distance from the end of the buffer. 0 = none. */
typedef uint32_t qv_fb_ref;

/** Most fields a table under construction may have. */
#define QV_FB_BUILDER_MAX_SLOTS 32

/**
 * Builds a flatbuffer back to front, leaves first, like the reference
 * implementation: create strings, vectors and sub-tables, then the table
 * that refers to them, and finally qv_fb_builder_finish(root). Only one
 * table can be under construction at a time. Errors (allocation failure,
 * misuse, buffer over 2 GiB) are sticky: every call becomes a no-op
 * returning ref 0, and qv_fb_builder_finish reports the first one.
 */
typedef struct qv_fb_builder {
  uint8_t *buf; /* data lives at buf[cap - used, cap) */
  int64_t cap;
  int64_t used;
  int64_t minalign; /* largest alignment requested so far */
  qv_status status; /* first error, QV_OK while healthy */
  char error[160];
  /* table under construction */
  bool in_table;
  int64_t table_start;                        /* `used` when the table started */
  int n_slots;                                /* 1 + highest slot added */
  uint32_t slot_ref[QV_FB_BUILDER_MAX_SLOTS]; /* field position; 0 = absent */
} qv_fb_builder;

void qv_fb_builder_init(qv_fb_builder *b);
/** Free the builder's memory (bytes returned by finish become invalid). */
void qv_fb_builder_reset(qv_fb_builder *b);

/** A string (bytes need not be NUL-free; a NUL is appended). */
qv_fb_ref qv_fb_create_string(qv_fb_builder *b, const char *s, int64_t len);
/** A vector of `count` scalars/structs of `elem_size` bytes each, given in
 *  their little-endian wire form, elements aligned to `align`. */
qv_fb_ref qv_fb_create_vector(qv_fb_builder *b, const void *elems, int64_t count, int64_t elem_size,
                              int64_t align);
/** A vector of offsets to strings or tables. */
qv_fb_ref qv_fb_create_vector_refs(qv_fb_builder *b, const qv_fb_ref *refs, int64_t count);

void qv_fb_start_table(qv_fb_builder *b);
/** Scalar fields: written only when different from the default `def`
 *  (the reader then supplies the default), as the reference builder does. */
void qv_fb_add_u8(qv_fb_builder *b, int slot, uint8_t v, uint8_t def);
void qv_fb_add_bool(qv_fb_builder *b, int slot, bool v, bool def);
void qv_fb_add_i16(qv_fb_builder *b, int slot, int16_t v, int16_t def);
void qv_fb_add_i32(qv_fb_builder *b, int slot, int32_t v, int32_t def);
void qv_fb_add_i64(qv_fb_builder *b, int slot, int64_t v, int64_t def);
/** Offset field to a finished object; ref 0 means "leave absent". */
void qv_fb_add_ref(qv_fb_builder *b, int slot, qv_fb_ref ref);
qv_fb_ref qv_fb_end_table(qv_fb_builder *b);

/**
 * Write the root offset and return the finished buffer: *out points into
 * the builder (valid until the builder is reset), its size a multiple of
 * the largest alignment used (>= 8).
 */
qv_status qv_fb_builder_finish(qv_fb_builder *b, qv_fb_ref root, const uint8_t **out,
                               int64_t *out_size, qv_error *err);

#endif /* QUIVER_IPC_FLATBUF_H */
