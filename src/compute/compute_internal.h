/*
 * compute_internal.h — helpers shared by the compute kernels that take
 * chunked columns (sort.c, unique.c): checking a qv_chunked_column, and
 * loading table columns as chunks (one per record batch), and the 64-bit
 * hash finaliser of the hash group-by and join. Compute layer,
 * private to src/compute; implemented in columns.c.
 */
#ifndef QV_COMPUTE_INTERNAL_H
#define QV_COMPUTE_INTERNAL_H

#include "quiver/compute.h"

/** A 64-bit finaliser (splitmix64's): spreads a key or hash over all bits
 *  (the hash-path group-by and the fixed-width join partition by it). */
static inline uint64_t qv_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/** The column's type: `type`, else the first chunk's (NULL if neither). */
const qv_type *qvc_column_type(const qv_chunked_column *c);

/**
 * Check a chunked column: a type is known, every chunk is non-NULL and has
 * that type (QV_ETYPE otherwise, naming `what` and `index`, e.g.
 * "sort key 1: chunk 3 has type int64, expected string"); *out_len gets
 * the total number of rows.
 */
qv_status qvc_column_check(const qv_chunked_column *c, const char *what, int32_t index,
                           int64_t *out_len, qv_error *err);

/** Index of the column named `name` in t (QV_EARG naming it when absent). */
qv_status qvc_find_column(const qv_table *t, const char *name, int32_t *out, qv_error *err);

/** Columns of a table as chunked columns (one chunk per batch). */
typedef struct qvc_columns {
  int32_t n;
  int64_t n_batches;
  qv_chunked_column *columns; /* n entries; chunks point into `arrays` */
  qv_array **arrays;          /* n * n_batches references */
} qvc_columns;

/** Load columns idx[0..n) of every batch of t (decoding batches). Release
 *  with qvc_columns_reset (also after a failure). */
qv_status qvc_columns_load(qvc_columns *out, qv_table *t, const int32_t *idx, int32_t n,
                           qv_error *err);
void qvc_columns_reset(qvc_columns *c);

#endif /* QV_COMPUTE_INTERNAL_H */
