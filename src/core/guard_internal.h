/*
 * guard_internal.h — the parts of the mapped-read guard (guard.c,
 * include/quiver/guard.h) used inside quiver: registering the file
 * mappings the SIGBUS handler recovers from (buffer.c), running a body
 * with a fault address instead of an error text (the thread pool), and
 * checking a call's input arrays before running its body. Core layer;
 * internal, not installed.
 */
#ifndef QUIVER_CORE_GUARD_INTERNAL_H
#define QUIVER_CORE_GUARD_INTERNAL_H

#include "quiver/guard.h"

typedef struct qv_guard_region qv_guard_region;

/* Record the mapping [data, data+size) of `path` (file identity dev/ino)
 * as one the handler recovers from. NULL when out of memory. The region
 * is owned by the caller until qv_guard_region_remove, which must run
 * before the mapping goes away. */
qv_guard_region *qv_guard_region_add(const void *data, int64_t size, const char *path, uint64_t dev,
                                     uint64_t ino);
void qv_guard_region_remove(qv_guard_region *r);

/* fn(ctx, err) under a recovery point; after a recovery returns
 * QV_ECHANGED and sets *fault to the faulting address (NULL otherwise),
 * without formatting an error. */
qv_status qv_guard_run_at(qv_guard_fn fn, void *ctx, qv_error *err, const void **fault);

/* qv_guard_run for a body that allocates nothing and takes no lock (row
 * formatting, validation): inside another guard of this thread it is
 * called directly, that guard recovering for it (saves the sigsetjmp of
 * nested per-value calls). */
qv_status qv_guard_run_leaf(qv_guard_fn fn, void *ctx, qv_error *err);

/* The error for a recovered fault at `addr` (a registered mapping): names
 * the file and its size at mapping time and now (stat of its path). */
qv_status qv_guard_fault_error(const void *addr, qv_error *err);

/* qv_guard_check_buffer for bytes [0, end) of buf: touches byte end-1
 * when buf is mapped and end > 0. */
qv_status qv_guard_check_prefix(const qv_buffer *buf, int64_t end, qv_error *err);

/* qv_guard_check_array reading every page of each mapped buffer (not
 * only the last byte): for a failure that may come from a mapped page that
 * is gone (a write(2) from it fails with EFAULT). Costs a load per page. */
qv_status qv_guard_check_array_pages(const qv_array *a, qv_error *err);

/* qv_guard_check_array over n arrays (NULL entries skipped), one guard. */
qv_status qv_guard_check_arrays(const qv_array *const *arrays, int64_t n, qv_error *err);

/* Check the n arrays (NULL entries skipped) with qv_guard_check_array,
 * then run fn under a guard: the usual shape of a guarded entry point, so
 * that a file that shrank before the call fails before fn allocates. */
qv_status qv_guard_run_checked(const qv_array *const *arrays, int64_t n, qv_guard_fn fn, void *ctx,
                               qv_error *err);

/* Temporary memory of a guarded body (index lists, scratch): owned by the
 * innermost guard active on this thread when it is allocated, so that a
 * recovery from a fault in the middle of the body frees it (the body's own
 * free never runs then). Freed normally with qv_guard_tmp_free; a block
 * still live when its guard returns passes to the enclosing guard, or to
 * no guard. Outside any guard it is plain heap memory. Costs a list insert
 * and remove per block (per call, never per element). NULL when out of
 * memory or when n * size overflows. Thread-safe (each thread's guards
 * own their blocks; a block must be freed by its thread while its guard
 * is active, or by any thread once that guard has returned). */
void *qv_guard_tmp_alloc(int64_t n, size_t size, bool zero);
void qv_guard_tmp_free(void *p);

/* Have a recovery also call fn(p, n) (n: the count p was allocated with)
 * before freeing block p: for temporaries holding references, e.g. a list
 * of qv_array slices (qv_guard_tmp_unref_arrays). */
typedef void (*qv_guard_tmp_cleanup)(void *p, int64_t n);
void qv_guard_tmp_on_recover(void *p, qv_guard_tmp_cleanup fn);
/* A qv_guard_tmp_cleanup: qv_array_unref of each of the n entries. */
void qv_guard_tmp_unref_arrays(void *p, int64_t n);

#endif /* QUIVER_CORE_GUARD_INTERNAL_H */
