/*
 * parquet_write_internal.h — what the Parquet writer's files share: the
 * leaf columns derived from an Arrow schema (the path of Arrow nodes from
 * a top-level column down to a primitive, with their definition and
 * repetition levels), the flattened Parquet schema elements, and the
 * RLE/bit-packing hybrid encoder. Formats layer (private header).
 */
#ifndef QUIVER_FORMATS_PARQUET_WRITE_INTERNAL_H
#define QUIVER_FORMATS_PARQUET_WRITE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/thrift_write.h"
#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/type.h"

/* Deepest Arrow nesting a column may have. */
#define QV_PW_MAX_DEPTH 32

/* One step of a leaf's path through the Arrow arrays. */
typedef enum qv_pw_step_kind {
  QV_PW_STEP_LEAF = 0,
  QV_PW_STEP_STRUCT = 1, /* into children[child] */
  QV_PW_STEP_LIST = 2    /* list, large list, fixed-size list, list view, map */
} qv_pw_step_kind;

typedef struct qv_pw_step {
  qv_pw_step_kind kind;
  bool nullable; /* adds a definition level */
  int32_t child;
  int16_t rep; /* LIST: the repetition level of its elements */
} qv_pw_step;

/* How an Arrow value becomes a Parquet physical value. */
typedef enum qv_pw_conv {
  QV_PW_CV_NULL,
  QV_PW_CV_BOOL,
  QV_PW_CV_INT32, /* any integer of up to 32 bits (int8..uint32), date32, time32[ms] */
  QV_PW_CV_INT64, /* int64, uint64, time64, timestamp, duration */
  QV_PW_CV_DATE64,
  QV_PW_CV_TIME32_S,
  QV_PW_CV_TS_S,
  QV_PW_CV_FLOAT,
  QV_PW_CV_DOUBLE,
  QV_PW_CV_HALF,
  QV_PW_CV_DECIMAL, /* decimals -> big-endian FIXED_LEN_BYTE_ARRAY */
  QV_PW_CV_BINARY,
  QV_PW_CV_LARGE_BINARY,
  QV_PW_CV_VIEW,
  QV_PW_CV_FSB
} qv_pw_conv;

/* How statistics order the values (as pyarrow's writer orders them). */
typedef enum qv_pw_order {
  QV_PW_ORD_NONE,
  QV_PW_ORD_BOOL,
  QV_PW_ORD_I32,
  QV_PW_ORD_U32,
  QV_PW_ORD_I64,
  QV_PW_ORD_U64,
  QV_PW_ORD_FLOAT,
  QV_PW_ORD_DOUBLE,
  QV_PW_ORD_HALF,
  QV_PW_ORD_BYTES,  /* unsigned lexicographic */
  QV_PW_ORD_DECIMAL /* signed big-endian two's complement */
} qv_pw_order;

typedef struct qv_pw_leaf {
  int32_t column; /* top-level column */
  int32_t n_steps;
  qv_pw_step steps[QV_PW_MAX_DEPTH];
  int16_t max_def, max_rep;
  int ptype;       /* qv_pq_type */
  int type_length; /* FIXED_LEN_BYTE_ARRAY */
  qv_pw_conv conv;
  qv_pw_order order;
  int32_t src_width; /* bytes of the Arrow value (integers, decimals) */
  bool src_unsigned; /* integers */
  bool dictionary;   /* the leaf array is dictionary-encoded */
  int32_t n_path;
  char **path; /* path_in_schema (owned) */
} qv_pw_leaf;

/* One Parquet SchemaElement. */
typedef struct qv_pw_elem {
  char *name; /* owned */
  int repetition;
  int ptype; /* -1: a group */
  int type_length;
  int converted; /* -1: none */
  int scale, precision;
  int logical; /* qv_pq_logical; 0: none */
  int bit_width;
  bool is_signed;
  int unit; /* qv_pq_time_unit */
  bool utc;
  int32_t n_children;
} qv_pw_elem;

typedef struct qv_pw_schema {
  int32_t n_elems, cap_elems;
  qv_pw_elem *elems;
  int32_t n_leaves, cap_leaves;
  qv_pw_leaf *leaves;
} qv_pw_schema;

/** Build the Parquet schema of an Arrow schema (QV_ENOTSUP naming the
 *  column for a type Parquet cannot hold). On failure *out is reset. */
qv_status qv_pw_schema_build(const qv_schema *schema, qv_pw_schema *out, qv_error *err);
void qv_pw_schema_reset(qv_pw_schema *s);
/** Append the thrift list<SchemaElement> of FileMetaData field 2. */
void qv_pw_schema_encode(const qv_pw_schema *s, qv_tw *w);

/** Bits needed for values 0..max (0 for max 0). */
static inline int qv_pw_bit_width(uint64_t max) {
  int b = 0;
  while (max) {
    b++;
    max >>= 1;
  }
  return b;
}

/**
 * Append the RLE/bit-packing hybrid encoding (Encodings.md) of n values of
 * `bit_width` bits (0..32) to `w` (its bytes only; no length prefix, no
 * bit-width byte). Runs of 8 or more equal values become RLE runs, the rest
 * bit-packed groups of 8 (the last group zero-padded).
 */
void qv_pw_rle_encode_u32(const uint32_t *v, int64_t n, int bit_width, qv_tw *w);

/** Standard base64 (RFC 4648, '=' padded) of n bytes appended to w. */
void qv_pw_base64(const uint8_t *p, int64_t n, qv_tw *w);

#endif /* QUIVER_FORMATS_PARQUET_WRITE_INTERNAL_H */
