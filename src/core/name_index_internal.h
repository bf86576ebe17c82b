/*
 * name_index_internal.h — a hash index from names (NUL-terminated
 * strings) to their positions in a list the caller keeps (schema fields,
 * features keys, column selections), so that looking a name up is O(1)
 * instead of a scan (src/core/name_index.c). Core layer; internal, not
 * installed.
 */
#ifndef QUIVER_CORE_NAME_INDEX_INTERNAL_H
#define QUIVER_CORE_NAME_INDEX_INTERNAL_H

#include <stdint.h>

#include "quiver/core.h"

/** Returns the name at position i of the caller's list (borrowed). */
typedef const char *(*qv_name_at_fn)(const void *ctx, int32_t i);

/**
 * The index. Names are borrowed: the list behind `name_at` must outlive
 * the index and must not change while it is used. Zero-initialise, then
 * qv_name_index_init; free with qv_name_index_free.
 */
typedef struct qv_name_index {
  qv_name_at_fn name_at;
  const void *ctx;
  int64_t cap;      /* slots, a power of two (0 before the first add) */
  int64_t n;        /* positions added */
  int32_t *slots;   /* position + 1; 0 = empty */
  uint64_t *hashes; /* per slot */
} qv_name_index;

/** Set up an empty index over `name_at(ctx, i)` with room for `expect`
 *  names before it grows (0 = grow as needed). QV_ENOMEM on failure. */
qv_status qv_name_index_init(qv_name_index *ix, qv_name_at_fn name_at, const void *ctx,
                             int64_t expect, qv_error *err);

/**
 * Add position i (its name is name_at(ctx, i)). When the name is already
 * present, nothing is added and *first receives the position that has it;
 * otherwise *first = -1. QV_ENOMEM when the table cannot grow.
 */
qv_status qv_name_index_add(qv_name_index *ix, int32_t i, int32_t *first, qv_error *err);

/** Init + add positions 0..n-1 (duplicates keep their first position). */
qv_status qv_name_index_build(qv_name_index *ix, qv_name_at_fn name_at, const void *ctx, int32_t n,
                              qv_error *err);

/** First position added with this name, or -1. */
int32_t qv_name_index_find(const qv_name_index *ix, const char *name);

/** Free the table (NULL-safe; the names are not touched). */
void qv_name_index_free(qv_name_index *ix);

#endif /* QUIVER_CORE_NAME_INDEX_INTERNAL_H */
