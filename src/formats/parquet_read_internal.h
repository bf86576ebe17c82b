/*
 * parquet_read_internal.h — the reader's schema tree (parquet_read_schema.c)
 * shared with the column decoding and assembly of parquet_read.c. Formats
 * layer (private header).
 *
 * Every node knows the levels that select its slots among the
 * (repetition, definition) level pairs of a leaf below it: an entry i is a
 * slot of the node when rep[i] <= rep_ctx and def[i] >= def_ctx (rep_ctx
 * and def_ctx are the levels of the nearest repeated ancestor, 0 at the
 * top); the slot is non-null when def[i] >= def. List elements are the
 * slots of the list's child; a list slot's length counts them.
 */
#ifndef QUIVER_FORMATS_PARQUET_READ_INTERNAL_H
#define QUIVER_FORMATS_PARQUET_READ_INTERNAL_H

#include "formats/parquet_internal.h"

enum { QV_PQ_NODE_LEAF = 0, QV_PQ_NODE_STRUCT, QV_PQ_NODE_LIST, QV_PQ_NODE_MAP };

/* How a leaf's physical values become its Arrow type's values. */
enum {
  QV_PQ_CONV_COPY = 0,      /* same bytes (or bool bits, or binary) */
  QV_PQ_CONV_NARROW,        /* INT32 -> int8/uint8/int16/uint16 */
  QV_PQ_CONV_DECIMAL_INT,   /* INT32/INT64 -> decimal128/256 */
  QV_PQ_CONV_DECIMAL_BYTES, /* big-endian FIXED/BYTE_ARRAY -> decimal */
  QV_PQ_CONV_INT96,         /* INT96 -> timestamp[ns] */
  QV_PQ_CONV_NULL           /* LogicalType UNKNOWN -> null */
};

typedef struct qv_pq_node {
  int kind;
  const char *name; /* borrowed from the file metadata (or static) */
  int16_t def;      /* definition level at which the node is non-null */
  int16_t rep_ctx, def_ctx;
  bool nullable;
  qv_type *type;        /* owned */
  qv_metadata metadata; /* field metadata (PARQUET:field_id, arrow.uuid) */
  int32_t n_children;
  struct qv_pq_node **children;
  int32_t first_leaf; /* leaf whose levels give this node's slots */
  /* leaves */
  int32_t leaf; /* index among the leaf columns */
  int16_t max_def, max_rep;
  int32_t physical, type_length;
  int conv;
} qv_pq_node;

qv_status qv_pq_schema_build(const qv_pq_file_meta *m, const char *file, qv_pq_node **out_root,
                             qv_pq_node ***out_leaves, int32_t *out_n_leaves, qv_error *err);
void qv_pq_node_free(qv_pq_node *n);

#endif /* QUIVER_FORMATS_PARQUET_READ_INTERNAL_H */
