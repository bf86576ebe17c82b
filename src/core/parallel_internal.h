/*
 * parallel_internal.h — a small fixed-size thread pool with a FIFO task
 * queue, for data-parallel work inside quiver (the IPC writer compresses
 * the buffers of record batches on it, several batches in flight). Core
 * layer; internal, not installed.
 *
 * Work is submitted in groups: qv_pool_submit(pool, group, n, fn, ctx)
 * queues fn(ctx, i, worker) for every i in [0, n); qv_pool_wait(pool,
 * group) returns when all of the group's calls have returned, running
 * queued tasks (oldest first, of any group) on the waiting thread in the
 * meantime — so a pool of size 1 (no worker thread) still makes progress,
 * and the waiter never idles while there is work. `worker` (0 ..
 * qv_pool_size - 1; 0 is the waiting thread) names the thread making a
 * call, for per-thread scratch state. Submitting and waiting is done from
 * one thread at a time.
 */
#ifndef QUIVER_CORE_PARALLEL_INTERNAL_H
#define QUIVER_CORE_PARALLEL_INTERNAL_H

#include "quiver/core.h"

typedef struct qv_pool qv_pool;

/** A set of submitted tasks to wait for; zero-initialise before use. */
typedef struct qv_pool_group {
  int64_t remaining; /* tasks not yet finished (under the pool's mutex) */
} qv_pool_group;

/** Online CPUs (at least 1, at most 64). */
int qv_cpu_count(void);

/** A pool of `threads` threads in all (the waiting thread counts as one;
 *  threads < 1 is taken as 1, i.e. no worker thread). */
qv_status qv_pool_new(int threads, qv_pool **out, qv_error *err);

/** Stop and join the worker threads, free the pool. Every group must
 *  have been waited for. NULL-safe. */
void qv_pool_free(qv_pool *p);

/** Threads taking part (workers + the waiting thread). */
int qv_pool_size(const qv_pool *p);

/** Queue fn(ctx, i, worker) for i in [0, n) as part of `group`. Returns
 *  false (nothing queued) when the queue cannot grow. */
bool qv_pool_submit(qv_pool *p, qv_pool_group *group, int64_t n,
                    void (*fn)(void *ctx, int64_t i, int worker), void *ctx);

/** Return when every task of `group` has run (see the file comment). */
void qv_pool_wait(qv_pool *p, qv_pool_group *group);

/** Tasks run under a recovery point (core/guard_internal.h): a task that
 *  reads a page of a file that shrank stops there. QV_ECHANGED (the
 *  message of qv_guard_run) when a task of this pool stopped so since the
 *  last call, and the results of that work are unusable; else QV_OK.
 *  NULL-safe. */
qv_status qv_pool_check(qv_pool *p, qv_error *err);

/** Submit and wait: fn(ctx, i, worker) for every i in [0, n). A single
 *  task, or every task when the queue cannot grow, runs on the caller,
 *  under a recovery point as on a worker (qv_pool_check reports its
 *  fault). With p NULL the loop runs on the caller unguarded. */
void qv_pool_run(qv_pool *p, int64_t n, void (*fn)(void *ctx, int64_t i, int worker), void *ctx);

#endif /* QUIVER_CORE_PARALLEL_INTERNAL_H */
