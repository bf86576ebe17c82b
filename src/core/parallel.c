/*
 * parallel.c — the internal thread pool (parallel_internal.h): worker
 * threads wait on a condition variable for a new generation of work, then
 * take indices from a shared atomic counter until it passes n; the caller
 * takes part too and waits until every worker has left the generation.
 * Core layer; POSIX threads.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/parallel_internal.h"

/* Threads beyond this are not started (the writer has no use for more). */
#define QV_POOL_MAX_THREADS 64

typedef struct worker_arg {
  qv_pool *pool;
  int index;
} worker_arg;

struct qv_pool {
  int n_threads; /* workers + the caller */
  pthread_t *threads;
  worker_arg *args;
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  uint64_t generation;
  bool stop;
  int active; /* workers still inside the current generation */
  void (*fn)(void *, int64_t, int);
  void *ctx;
  int64_t n;
  int64_t next; /* atomic: next index to take */
};

int qv_cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > QV_POOL_MAX_THREADS ? QV_POOL_MAX_THREADS : (int)n;
}

static void drain(qv_pool *p, int worker) {
  for (;;) {
    int64_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
    if (i >= p->n) return;
    p->fn(p->ctx, i, worker);
  }
}

static void *worker_main(void *arg) {
  worker_arg *wa = arg;
  qv_pool *p = wa->pool;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->generation == seen) pthread_cond_wait(&p->work_cv, &p->mu);
    if (p->stop) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    drain(p, wa->index);
    pthread_mutex_lock(&p->mu);
    if (--p->active == 0) pthread_cond_signal(&p->done_cv);
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
  free(p->threads);
  free(p->args);
  free(p);
}

int qv_pool_size(const qv_pool *p) { return p ? p->n_threads : 1; }

void qv_pool_run(qv_pool *p, int64_t n, void (*fn)(void *ctx, int64_t i, int worker),
                 void *ctx) {
  if (n <= 0) return;
  if (p == NULL || p->n_threads == 1 || n == 1) {
    for (int64_t i = 0; i < n; i++) fn(ctx, i, 0);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  __atomic_store_n(&p->next, 0, __ATOMIC_RELAXED);
  p->active = p->n_threads - 1;
  p->generation++;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  drain(p, 0);
  pthread_mutex_lock(&p->mu);
  while (p->active > 0) pthread_cond_wait(&p->done_cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
}
