/*
 * parallel_internal.h — a small fixed-size thread pool for data-parallel
 * loops inside quiver (the IPC writer compresses the buffers of a record
 * batch on it). Core layer; internal, not installed.
 *
 * qv_pool_run(pool, n, fn, ctx) calls fn(ctx, i, worker) once for every i
 * in [0, n), spread over the pool's threads and the calling thread, and
 * returns when every call has returned. `worker` (0 .. qv_pool_size - 1)
 * names the thread making the call, so callers can keep per-thread
 * scratch state. A pool of size 1 starts no thread and runs the loop on
 * the caller.
 */
#ifndef QUIVER_CORE_PARALLEL_INTERNAL_H
#define QUIVER_CORE_PARALLEL_INTERNAL_H

#include "quiver/core.h"

typedef struct qv_pool qv_pool;

/** Online CPUs (at least 1). */
int qv_cpu_count(void);

/** A pool of `threads` threads in all (the caller counts as one; threads
 *  < 1 is taken as 1). */
qv_status qv_pool_new(int threads, qv_pool **out, qv_error *err);

/** Stop and join the worker threads, free the pool. NULL-safe. */
void qv_pool_free(qv_pool *p);

/** Threads taking part in qv_pool_run (workers + the caller). */
int qv_pool_size(const qv_pool *p);

/** Run fn(ctx, i, worker) for i in [0, n); see the file comment. Not
 *  reentrant: one run at a time per pool. */
void qv_pool_run(qv_pool *p, int64_t n, void (*fn)(void *ctx, int64_t i, int worker),
                 void *ctx);

#endif /* QUIVER_CORE_PARALLEL_INTERNAL_H */
