/*
 * parallel.c — the internal thread pool (parallel_internal.h): a FIFO ring
 * of tasks under one mutex; worker threads sleep on a condition variable
 * until tasks arrive; a thread waiting for a group runs queued tasks
 * itself and sleeps only when the queue is empty and its group's last
 * tasks are running elsewhere. Tasks here are coarse (one per buffer to
 * compress), so one mutex is cheap enough. Core layer; POSIX threads.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/guard_internal.h"
#include "core/parallel_internal.h"

/* Threads beyond this are not started (the writer has no use for more). */
#define QV_POOL_MAX_THREADS 64

typedef struct task {
  void (*fn)(void *, int64_t, int);
  void *ctx;
  int64_t i;
  qv_pool_group *group;
} task;

typedef struct worker_arg {
  qv_pool *pool;
  int index;
} worker_arg;

struct qv_pool {
  int n_threads; /* workers + the waiting thread */
  pthread_t *threads;
  worker_arg *args;
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* tasks queued, or stop */
  pthread_cond_t done_cv; /* some group's last task finished */
  bool stop;
  task *ring; /* queued tasks: ring[(head + k) % cap], k < count */
  int64_t cap, head, count;
  const void *fault; /* first recovered fault of a task (under mu), see qv_pool_check */
};

int qv_cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > QV_POOL_MAX_THREADS ? QV_POOL_MAX_THREADS : (int)n;
}

/* Pop the oldest task (mutex held, queue not empty). */
static task pop(qv_pool *p) {
  task t = p->ring[p->head];
  p->head = (p->head + 1) % p->cap;
  p->count--;
  return t;
}

typedef struct guarded_task {
  task t;
  int worker;
} guarded_task;

static qv_status task_body(void *ctx, qv_error *err) {
  (void)err;
  guarded_task *g = ctx;
  g->t.fn(g->t.ctx, g->t.i, g->worker);
  return QV_OK;
}

/* Run t outside the mutex under a recovery point (guard.c): a task reading
 * a mapped file that shrank stops there, and the fault is kept for
 * qv_pool_check; then account for it (mutex held on entry and on
 * return). */
static void run_task(qv_pool *p, task t, int worker) {
  pthread_mutex_unlock(&p->mu);
  guarded_task g = {t, worker};
  const void *fault = NULL;
  qv_guard_run_at(task_body, &g, NULL, &fault);
  pthread_mutex_lock(&p->mu);
  if (fault != NULL && p->fault == NULL) p->fault = fault;
  if (--t.group->remaining == 0) pthread_cond_broadcast(&p->done_cv);
}

static void *worker_main(void *arg) {
  worker_arg *wa = arg;
  qv_pool *p = wa->pool;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->count == 0) pthread_cond_wait(&p->work_cv, &p->mu);
    if (p->count == 0) break; /* stopping, nothing left */
    run_task(p, pop(p), wa->index);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

qv_status qv_pool_new(int threads, qv_pool **out, qv_error *err) {
  *out = NULL;
  if (threads < 1) threads = 1;
  if (threads > QV_POOL_MAX_THREADS) threads = QV_POOL_MAX_THREADS;
  qv_pool *p = calloc(1, sizeof *p);
  if (p == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (thread pool)");
  p->n_threads = 1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work_cv, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  if (threads > 1) {
    p->threads = calloc((size_t)threads - 1, sizeof *p->threads);
    p->args = calloc((size_t)threads - 1, sizeof *p->args);
    if (p->threads == NULL || p->args == NULL) {
      qv_pool_free(p);
      return qv_error_set(err, QV_ENOMEM, "out of memory (thread pool)");
    }
    for (int k = 0; k < threads - 1; k++) {
      p->args[k] = (worker_arg){p, k + 1};
      if (pthread_create(&p->threads[k], NULL, worker_main, &p->args[k]) != 0)
        break; /* fewer threads than asked: still correct */
      p->n_threads++;
    }
  }
  *out = p;
  return QV_OK;
}

void qv_pool_free(qv_pool *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  for (int k = 0; k < p->n_threads - 1; k++) pthread_join(p->threads[k], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->work_cv);
  pthread_cond_destroy(&p->done_cv);
  free(p->ring);
  free(p->threads);
  free(p->args);
  free(p);
}

int qv_pool_size(const qv_pool *p) { return p ? p->n_threads : 1; }

bool qv_pool_submit(qv_pool *p, qv_pool_group *group, int64_t n,
                    void (*fn)(void *ctx, int64_t i, int worker), void *ctx) {
  if (n <= 0) return true;
  pthread_mutex_lock(&p->mu);
  if (p->count + n > p->cap) { /* grow, unrolling the ring */
    int64_t cap = p->cap ? p->cap : 64;
    while (cap < p->count + n) cap *= 2;
    task *ring = malloc(sizeof *ring * (size_t)cap);
    if (ring == NULL) {
      pthread_mutex_unlock(&p->mu);
      return false;
    }
    for (int64_t k = 0; k < p->count; k++) ring[k] = p->ring[(p->head + k) % p->cap];
    free(p->ring);
    p->ring = ring;
    p->cap = cap;
    p->head = 0;
  }
  for (int64_t i = 0; i < n; i++)
    p->ring[(p->head + p->count++) % p->cap] = (task){fn, ctx, i, group};
  group->remaining += n;
  if (p->n_threads > 1) pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  return true;
}

void qv_pool_wait(qv_pool *p, qv_pool_group *group) {
  pthread_mutex_lock(&p->mu);
  while (group->remaining > 0) {
    if (p->count > 0) run_task(p, pop(p), 0);
    else pthread_cond_wait(&p->done_cv, &p->mu);
  }
  pthread_mutex_unlock(&p->mu);
}

void qv_pool_run(qv_pool *p, int64_t n, void (*fn)(void *ctx, int64_t i, int worker), void *ctx) {
  qv_pool_group g = {0};
  if (p == NULL) { /* no pool: the caller's own loop, under the caller's guard */
    for (int64_t i = 0; i < n; i++) fn(ctx, i, 0);
    return;
  }
  if (n <= 1 || !qv_pool_submit(p, &g, n, fn, ctx)) {
    /* On the caller, but under a recovery point per task as on a worker,
     * the fault kept for qv_pool_check: a single task (a one-column
     * Parquet row group, one CSV block) is as safe as many. */
    pthread_mutex_lock(&p->mu);
    for (int64_t i = 0; i < n; i++) {
      g.remaining++;
      run_task(p, (task){fn, ctx, i, &g}, 0);
    }
    pthread_mutex_unlock(&p->mu);
    return;
  }
  qv_pool_wait(p, &g);
}

qv_status qv_pool_check(qv_pool *p, qv_error *err) {
  if (p == NULL) return QV_OK;
  pthread_mutex_lock(&p->mu);
  const void *fault = p->fault;
  p->fault = NULL;
  pthread_mutex_unlock(&p->mu);
  return fault != NULL ? qv_guard_fault_error(fault, err) : QV_OK;
}
