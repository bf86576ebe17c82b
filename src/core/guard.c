/*
 * guard.c — SIGBUS-safe reads of memory-mapped files (include/quiver/guard.h):
 * the registry of quiver's file mappings, the process-wide SIGBUS handler
 * (installed once, chaining to the handler installed before it), the
 * thread-local stack of recovery points, and the QV_ECHANGED message for a
 * recovered fault. Core layer; POSIX signals and threads.
 *
 * Registry: a singly linked list of region nodes that only grows; a node
 * is reused once its mapping is gone. Writers hold `reg_mu`; the signal
 * handler reads the list without a lock (each node's bounds are atomics,
 * `hi` cleared first on removal and set last on insertion, nodes never
 * freed), so the handler calls nothing that is not async-signal-safe.
 *
 * Temporaries (qv_guard_tmp_alloc) hang off the frame that was innermost
 * when they were allocated: a recovery frees them, a normal return hands
 * those still live to the enclosing frame.
 *
 * Recovery: qv_guard_run pushes a frame (a sigjmp_buf saved without the
 * signal mask, so no system call) on a thread-local stack. The handler is
 * installed with SA_NODEFER, so SIGBUS is not blocked while it runs and
 * jumping out of it leaves the thread's signal mask as it was.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/guard_internal.h"

struct qv_guard_region {
  uintptr_t lo, hi;      /* atomics: [lo, hi) mapped; hi == 0: free node */
  qv_guard_region *next; /* immutable once published */
  /* under reg_mu: */
  char *path;
  int64_t size;
  uint64_t dev, ino;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static qv_guard_region *reg_head; /* atomic pointer; list only grows */

typedef struct tmp_block tmp_block;

typedef struct guard_frame {
  sigjmp_buf jb;
  struct guard_frame *prev;
  const void *volatile addr; /* set by the handler before it jumps */
  tmp_block *volatile tmps;  /* qv_guard_tmp_alloc blocks this guard owns */
} guard_frame;

/* Header of a qv_guard_tmp_alloc block (48 bytes: the memory after it
 * keeps malloc's 16-byte alignment). */
struct tmp_block {
  tmp_block *prev, *next;
  guard_frame *owner;           /* NULL: owned by no guard */
  qv_guard_tmp_cleanup cleanup; /* on recovery, before the free */
  int64_t n;
  uint64_t unused;
};

/* Initial-exec: the handler must not make glibc allocate a TLS block (the
 * library may be dlopen'ed, e.g. in the Python extension). */
static __thread guard_frame *tls_top __attribute__((tls_model("initial-exec")));

static struct sigaction prev_action; /* written once, before ours is live */
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int installed; /* atomic */

/* ------------------------------------------------------------------------ */
/* Registry                                                                  */

qv_guard_region *qv_guard_region_add(const void *data, int64_t size, const char *path, uint64_t dev,
                                     uint64_t ino) {
  if (data == NULL || size <= 0) return NULL;
  char *p = strdup(path);
  if (p == NULL) return NULL;
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  uintptr_t lo = (uintptr_t)data;
  uintptr_t hi = (lo + (uintptr_t)size + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
  pthread_mutex_lock(&reg_mu);
  qv_guard_region *r = __atomic_load_n(&reg_head, __ATOMIC_ACQUIRE);
  while (r != NULL && __atomic_load_n(&r->hi, __ATOMIC_RELAXED) != 0) r = r->next;
  if (r == NULL) {
    r = calloc(1, sizeof *r);
    if (r == NULL) {
      pthread_mutex_unlock(&reg_mu);
      free(p);
      return NULL;
    }
    r->next = reg_head;
    __atomic_store_n(&reg_head, r, __ATOMIC_RELEASE);
  }
  r->path = p;
  r->size = size;
  r->dev = dev;
  r->ino = ino;
  __atomic_store_n(&r->lo, lo, __ATOMIC_RELEASE);
  __atomic_store_n(&r->hi, hi, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&reg_mu);
  return r;
}

void qv_guard_region_remove(qv_guard_region *r) {
  if (r == NULL) return;
  pthread_mutex_lock(&reg_mu);
  __atomic_store_n(&r->hi, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&r->lo, 0, __ATOMIC_RELEASE);
  free(r->path);
  r->path = NULL;
  pthread_mutex_unlock(&reg_mu);
}

/* Async-signal-safe: is addr inside a live registered mapping? */
static bool region_holds(const void *addr) {
  uintptr_t a = (uintptr_t)addr;
  for (qv_guard_region *r = __atomic_load_n(&reg_head, __ATOMIC_ACQUIRE); r != NULL; r = r->next) {
    uintptr_t hi = __atomic_load_n(&r->hi, __ATOMIC_ACQUIRE);
    uintptr_t lo = __atomic_load_n(&r->lo, __ATOMIC_ACQUIRE);
    if (hi != 0 && a >= lo && a < hi) return true;
  }
  return false;
}

/* ------------------------------------------------------------------------ */
/* The handler                                                               */

/* Hand a signal quiver does not recover from to the previous handler, as
 * that handler asked to be called; for the default action (or "ignore",
 * which the kernel does not honour for a fault either) restore it and let
 * the fault happen again, or re-raise a signal sent by a process. */
static void chain(int sig, siginfo_t *si, void *uc) {
  const struct sigaction *p = &prev_action;
  bool info = (p->sa_flags & SA_SIGINFO) != 0;
  void (*h)(int) = p->sa_handler;
  if (!info && (h == SIG_DFL || h == SIG_IGN)) {
    bool sent = si == NULL || si->si_code <= 0; /* kill(), raise(), sigqueue() */
    if (h == SIG_IGN && sent) return;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (sent) raise(sig);
    return; /* a fault: the access runs again, now under the default action */
  }
  if (info && p->sa_sigaction == NULL) return;
  sigset_t block, old;
  block = p->sa_mask;
  if (!(p->sa_flags & SA_NODEFER)) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  if (info) p->sa_sigaction(sig, si, uc);
  else h(sig);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
  guard_frame *f = tls_top;
  if (f != NULL && si != NULL && si->si_code > 0 && region_holds(si->si_addr)) {
    f->addr = si->si_addr;
    siglongjmp(f->jb, 1);
  }
  /* The previous handler may jump out (past our frames): leave no frame
   * of this thread active while it runs; restored when it returns. */
  int saved = errno;
  tls_top = NULL;
  chain(sig, si, uc);
  tls_top = f;
  errno = saved;
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  struct sigaction old;
  if (sigaction(SIGBUS, NULL, &old) != 0) return;
  prev_action = old;
  if (sigaction(SIGBUS, &sa, NULL) != 0) return;
  __atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
}

void qv_guard_install(void) {
  if (!__atomic_load_n(&installed, __ATOMIC_ACQUIRE)) pthread_once(&install_once, install);
}

/* ------------------------------------------------------------------------ */
/* Recovery points                                                           */

void *qv_guard_tmp_alloc(int64_t n, size_t size, bool zero) {
  size_t count = (size_t)(n > 0 ? n : 1), bytes;
  if (size == 0) size = 1;
  if (__builtin_mul_overflow(count, size, &bytes) || bytes > SIZE_MAX - sizeof(tmp_block))
    return NULL;
  tmp_block *b = zero ? calloc(1, sizeof *b + bytes) : malloc(sizeof *b + bytes);
  if (b == NULL) return NULL;
  guard_frame *f = tls_top;
  b->owner = f;
  b->cleanup = NULL;
  b->n = (int64_t)count;
  b->prev = NULL;
  b->next = f != NULL ? f->tmps : NULL;
  if (b->next != NULL) b->next->prev = b;
  if (f != NULL) f->tmps = b;
  return b + 1;
}

void qv_guard_tmp_free(void *p) {
  if (p == NULL) return;
  tmp_block *b = (tmp_block *)p - 1;
  if (b->owner != NULL) {
    if (b->prev != NULL) b->prev->next = b->next;
    else b->owner->tmps = b->next;
    if (b->next != NULL) b->next->prev = b->prev;
  }
  free(b);
}

void qv_guard_tmp_on_recover(void *p, qv_guard_tmp_cleanup fn) {
  if (p != NULL) ((tmp_block *)p - 1)->cleanup = fn;
}

void qv_guard_tmp_unref_arrays(void *p, int64_t n) {
  qv_array **a = p;
  for (int64_t i = 0; i < n; i++) qv_array_unref(a[i]);
}

/* A frame's live temporaries on its normal return: to the enclosing frame
 * (or to none). */
static void tmps_hand_over(guard_frame *f) {
  tmp_block *b = f->tmps;
  while (b != NULL) {
    tmp_block *next = b->next;
    b->owner = f->prev;
    b->prev = NULL;
    b->next = f->prev != NULL ? f->prev->tmps : NULL;
    if (b->next != NULL) b->next->prev = b;
    if (f->prev != NULL) f->prev->tmps = b;
    b = next;
  }
  f->tmps = NULL;
}

/* noinline keeps the sigsetjmp frame this function's own. */
__attribute__((noinline)) qv_status qv_guard_run_at(qv_guard_fn fn, void *ctx, qv_error *err,
                                                    const void **fault) {
  qv_guard_install();
  guard_frame f;
  f.prev = tls_top;
  f.addr = NULL;
  f.tmps = NULL;
  *fault = NULL;
  if (sigsetjmp(f.jb, 0) != 0) {
    tls_top = f.prev;
    *fault = f.addr;
    /* The body never reached its own frees. */
    for (tmp_block *b = f.tmps, *next; b != NULL; b = next) {
      next = b->next;
      if (b->cleanup != NULL) b->cleanup(b + 1, b->n);
      free(b);
    }
    return QV_ECHANGED;
  }
  tls_top = &f;
  qv_status st = fn(ctx, err);
  tls_top = f.prev;
  if (f.tmps != NULL) tmps_hand_over(&f);
  return st;
}

qv_status qv_guard_fault_error(const void *addr, qv_error *err) {
  char path[4096] = "";
  int64_t size = 0, at = 0;
  uint64_t dev = 0, ino = 0;
  bool found = false;
  pthread_mutex_lock(&reg_mu);
  for (qv_guard_region *r = reg_head; r != NULL; r = r->next) {
    if (r->hi != 0 && (uintptr_t)addr >= r->lo && (uintptr_t)addr < r->hi) {
      snprintf(path, sizeof path, "%s", r->path);
      size = r->size;
      at = (int64_t)((uintptr_t)addr - r->lo);
      dev = r->dev;
      ino = r->ino;
      found = true;
      break;
    }
  }
  pthread_mutex_unlock(&reg_mu);
  if (!found)
    return qv_error_set(err, QV_ECHANGED,
                        "a mapped file shrank while open (its mapping is "
                        "gone)");
  struct stat st;
  if (stat(path, &st) != 0)
    return qv_error_set(err, QV_ECHANGED,
                        "'%s' shrank from %lld bytes while open (offset %lld is gone; the path "
                        "cannot be read now: %s)",
                        path, (long long)size, (long long)at, strerror(errno));
  if ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino)
    return qv_error_set(err, QV_ECHANGED,
                        "'%s' shrank from %lld bytes while open (offset %lld is gone; the path "
                        "now names another file)",
                        path, (long long)size, (long long)at);
  if ((int64_t)st.st_size >= size)
    return qv_error_set(err, QV_EIO,
                        "'%s': reading offset %lld of its mapping failed (bus error) while the "
                        "file still has %lld bytes",
                        path, (long long)at, (long long)st.st_size);
  return qv_error_set(err, QV_ECHANGED, "'%s' shrank from %lld to %lld bytes while open", path,
                      (long long)size, (long long)st.st_size);
}

qv_status qv_guard_run(qv_guard_fn fn, void *ctx, qv_error *err) {
  const void *fault = NULL;
  qv_status st = qv_guard_run_at(fn, ctx, err, &fault);
  if (fault != NULL) return qv_guard_fault_error(fault, err);
  return st;
}

qv_status qv_guard_run_leaf(qv_guard_fn fn, void *ctx, qv_error *err) {
  if (tls_top != NULL) return fn(ctx, err);
  return qv_guard_run(fn, ctx, err);
}

/* ------------------------------------------------------------------------ */
/* Checks                                                                    */

#define CHECK_MAX_DEPTH 1024

/* The last byte an array uses of each mapping behind it. A mapped file
 * only loses bytes at its end (a mapping covers the file from one offset
 * on), so when the highest byte used of a mapping is still there, every
 * byte below it is too: one load per mapping (the one qv_buffer_map_file
 * buffer that views share as their parent) instead of one per buffer,
 * which for a random row of a wide batch saves a cache miss per column. */
#define TOUCH_ROOTS 8
typedef struct touch_set {
  const qv_buffer *root[TOUCH_ROOTS];
  const uint8_t *last[TOUCH_ROOTS];
  int n;
  bool full; /* a mapping did not fit: its byte was touched at once */
} touch_set;

static void touch_buffer(touch_set *t, const qv_buffer *b) {
  if (b == NULL || b->size <= 0 || !qv_buffer_is_mapped(b)) return;
  const qv_buffer *root = b->parent_ ? b->parent_ : b;
  const uint8_t *last = b->data + b->size - 1;
  if (last < root->data || last >= root->data + root->size) root = b; /* not inside: alone */
  for (int i = 0; i < t->n; i++) {
    if (t->root[i] == root) {
      if (last > t->last[i]) t->last[i] = last;
      return;
    }
  }
  if (t->n < TOUCH_ROOTS) {
    t->root[t->n] = root;
    t->last[t->n++] = last;
    return;
  }
  t->full = true;
  const volatile uint8_t *v = last; /* more mappings than the set holds: now */
  (void)*v;
}

static void note_array(touch_set *t, const qv_array *a, int depth) {
  if (a == NULL || depth > CHECK_MAX_DEPTH) return;
  for (int32_t i = 0; i < a->n_buffers; i++) touch_buffer(t, a->buffers[i]);
  for (int32_t i = 0; i < a->n_children; i++) note_array(t, a->children[i], depth + 1);
  note_array(t, a->dictionary, depth + 1);
}

static void touch_array(const qv_array *a, int depth) {
  touch_set t;
  t.n = 0;
  t.full = false;
  note_array(&t, a, depth);
  for (int i = 0; i < t.n; i++) {
    const volatile uint8_t *v = t.last[i];
    (void)*v;
  }
}

typedef struct check_ctx {
  const qv_array *const *arrays;
  int64_t n;
  const qv_buffer *buffer;
  int64_t end; /* bytes of buffer to check */
} check_ctx;

static qv_status check_body(void *p, qv_error *err) {
  (void)err;
  const check_ctx *c = p;
  if (c->buffer != NULL) {
    const volatile uint8_t *last = c->buffer->data + c->end - 1;
    (void)*last;
  }
  for (int64_t i = 0; i < c->n; i++) touch_array(c->arrays[i], 0);
  return QV_OK;
}

qv_status qv_guard_check_buffer(const qv_buffer *buf, qv_error *err) {
  if (buf == NULL || buf->size <= 0 || !qv_buffer_is_mapped(buf)) return QV_OK;
  check_ctx c = {NULL, 0, buf, buf->size};
  return qv_guard_run(check_body, &c, err);
}

qv_status qv_guard_check_prefix(const qv_buffer *buf, int64_t end, qv_error *err) {
  if (buf == NULL || end <= 0 || end > buf->size || !qv_buffer_is_mapped(buf)) return QV_OK;
  check_ctx c = {NULL, 0, buf, end};
  return qv_guard_run(check_body, &c, err);
}

qv_status qv_guard_check_array(const qv_array *a, qv_error *err) {
  check_ctx c = {&a, a != NULL ? 1 : 0, NULL, 0};
  return qv_guard_run(check_body, &c, err);
}

/* The points qv_guard_check_array loads, gathered without loading them
 * (touch_buffer loads only when the set is full: run under a guard). */
typedef struct points_ctx {
  const qv_array *a;
  touch_set t;
} points_ctx;

static qv_status points_body(void *p, qv_error *err) {
  (void)err;
  points_ctx *c = p;
  note_array(&c->t, c->a, 0);
  return QV_OK;
}

int qv_guard_array_points(const qv_array *a, const void **out, int max) {
  points_ctx c;
  c.a = a;
  c.t.n = 0;
  c.t.full = false;
  qv_error err;
  if (a == NULL) return 0;
  if (qv_guard_run(points_body, &c, &err) != QV_OK || c.t.full || c.t.n > max) return -1;
  for (int i = 0; i < c.t.n; i++) out[i] = c.t.last[i];
  return c.t.n;
}

typedef struct check_points_ctx {
  const void *const *points;
  int n;
} check_points_ctx;

static qv_status check_points_body(void *p, qv_error *err) {
  (void)err;
  const check_points_ctx *c = p;
  for (int i = 0; i < c->n; i++) {
    const volatile uint8_t *v = c->points[i];
    (void)*v;
  }
  return QV_OK;
}

qv_status qv_guard_check_points(const void *const *points, int n, qv_error *err) {
  if (n <= 0) return QV_OK;
  check_points_ctx c = {points, n};
  return qv_guard_run(check_points_body, &c, err);
}

static void touch_pages(const qv_array *a, int depth) {
  if (a == NULL || depth > CHECK_MAX_DEPTH) return;
  for (int32_t i = 0; i < a->n_buffers; i++) {
    const qv_buffer *b = a->buffers[i];
    if (b == NULL || b->size <= 0 || !qv_buffer_is_mapped(b)) continue;
    const volatile uint8_t *p = b->data;
    for (int64_t off = 0; off < b->size; off += 4096) (void)p[off];
    (void)p[b->size - 1];
  }
  for (int32_t i = 0; i < a->n_children; i++) touch_pages(a->children[i], depth + 1);
  touch_pages(a->dictionary, depth + 1);
}

static qv_status pages_body(void *p, qv_error *err) {
  (void)err;
  touch_pages(p, 0);
  return QV_OK;
}

qv_status qv_guard_check_array_pages(const qv_array *a, qv_error *err) {
  return qv_guard_run(pages_body, (void *)a, err);
}

qv_status qv_guard_check_arrays(const qv_array *const *arrays, int64_t n, qv_error *err) {
  check_ctx c = {arrays, n, NULL, 0};
  return qv_guard_run(check_body, &c, err);
}

qv_status qv_guard_run_checked(const qv_array *const *arrays, int64_t n, qv_guard_fn fn, void *ctx,
                               qv_error *err) {
  check_ctx c = {arrays, n, NULL, 0};
  QV_RETURN_NOT_OK(qv_guard_run(check_body, &c, err));
  return qv_guard_run(fn, ctx, err);
}
