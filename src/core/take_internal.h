/*
 * take_internal.h — the gather engine of take.c with output rows given:
 * for the table layer's large gathers, which read the source rows in
 * sorted order and write each to its place in the output. Core layer;
 * internal, not installed.
 */
#ifndef QUIVER_CORE_TAKE_INTERNAL_H
#define QUIVER_CORE_TAKE_INTERNAL_H

#include "core/parallel_internal.h"
#include "quiver/array.h"

/**
 * As qv_array_take_chunked, except that source row i (chunks[chunk_index[i]],
 * row row_index[i]) becomes output row dest[i]: the result equals
 * qv_array_take_chunked over the pairs reordered so that pair i is at
 * position dest[i]. Nothing is checked: the chunks must share one type,
 * every (chunk, row) pair must be in range and dest must be a permutation
 * of 0..n-1 (the caller builds all three). Fixed-width, bool, binary and
 * string (+large), view and struct layouts are written in place, in the
 * given order (prefetching ahead, so sorted rows read the mapping in file
 * order); for the other layouts the pairs are put in output order first.
 * dest NULL: row i goes to output row i. With a pool (may be NULL), dest
 * and at least qv_take_parallel_min_n rows, the loops over the rows of
 * those layouts run in parts on the pool's threads; the result is the
 * same.
 * *out is a new array the caller owns; the chunks are unchanged.
 */
qv_status qv_take_chunked_to(qv_array *const *chunks, int64_t n_chunks, const int64_t *chunk_index,
                             const int64_t *row_index, const int64_t *dest, int64_t n,
                             qv_pool *pool, qv_array **out, qv_error *err);

/* Rows from which qv_take_chunked_to splits its loops over a pool's
 * threads: 64 Ki (a variable so that tests can lower it). */
extern int64_t qv_take_parallel_min_n;

/* Fewest rows per part of such a split loop: 8 Ki (a variable so that
 * tests can lower it); a loop runs in up to 8 parts per thread, taken by
 * whichever thread is free. */
extern int64_t qv_take_part_min_rows;

#endif
