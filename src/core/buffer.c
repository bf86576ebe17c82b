/*
 * buffer.c — reference-counted byte buffers: heap allocations with
 * padding, zero-copy views, wrapped foreign memory and read-only file
 * mappings. Core layer; every array buffer in quiver is a qv_buffer, and a
 * view of a mapping keeps the mapping alive until its last reference goes.
 * Every file mapping is registered with the mapped-read guard (guard.c) so
 * that a read past the end of a file that shrank becomes QV_ECHANGED.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/guard_internal.h"
#include "core/kernels_internal.h"
#include "quiver/core.h"

/* File mappings carry their guard region (guard.c) as ctx: it goes before
 * the mapping does. */
static void munmap_release(void *ctx, void *data, int64_t size) {
  qv_guard_region_remove(ctx);
  if (data != NULL && size > 0) munmap(data, (size_t)size);
}

/*
 * Heap buffers: capacity + padding, rounded to the alignment, zeroed.
 * Those of at least HEAP_MAP_MIN bytes are private anonymous mappings
 * advised for transparent huge pages. glibc maps allocations that large
 * afresh every time anyway (32 MiB is its largest mmap threshold), so
 * their pages always fault in; in 2 MiB pages that is several times
 * faster than 4 KiB pages that are then cleared (42 MB: 5 ms against
 * 37 ms on the benchmark VM), and random writes into them (gathers that
 * scatter to output rows) miss the TLB far less. Smaller buffers come
 * from aligned_alloc, which reuses freed memory without faults. Under
 * AddressSanitizer every buffer comes from aligned_alloc, so overflows
 * stay detected. Which kind a buffer is follows from its capacity.
 */
#if defined(__SANITIZE_ADDRESS__)
#define HEAP_MAPS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_MAPS 0
#endif
#endif
#ifndef HEAP_MAPS
#define HEAP_MAPS 1
#endif
#define HEAP_MAP_MIN ((size_t)32 << 20)

static size_t heap_bytes(int64_t capacity) {
  size_t bytes = (size_t)capacity + QV_BUFFER_PADDING;
  return (bytes + QV_BUFFER_ALIGNMENT - 1) & ~(size_t)(QV_BUFFER_ALIGNMENT - 1);
}

static void *heap_zalloc(int64_t capacity) {
  size_t bytes = heap_bytes(capacity);
  if (HEAP_MAPS && bytes >= HEAP_MAP_MIN) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE); /* advice only: failure changes nothing */
#endif
    return p;
  }
  void *p = aligned_alloc(QV_BUFFER_ALIGNMENT, bytes);
  if (p != NULL) memset(p, 0, bytes);
  return p;
}

/* heap_zalloc without zeroing the `size` bytes callers write whole (the
 * padding after them is zeroed): a gather's output is written once, not
 * twice. */
static void *heap_alloc_uninit(int64_t capacity) {
  size_t bytes = heap_bytes(capacity);
  if (HEAP_MAPS && bytes >= HEAP_MAP_MIN) return heap_zalloc(capacity);
  uint8_t *p = aligned_alloc(QV_BUFFER_ALIGNMENT, bytes);
  if (p != NULL) memset(p + capacity, 0, bytes - (size_t)capacity);
  return p;
}

static void heap_free(void *data, int64_t capacity) {
  if (data == NULL) return;
  size_t bytes = heap_bytes(capacity);
  if (HEAP_MAPS && bytes >= HEAP_MAP_MIN) munmap(data, bytes);
  else free(data);
}

static void heap_release(void *ctx, void *data, int64_t capacity) {
  (void)ctx;
  heap_free(data, capacity);
}

static qv_status buffer_alloc(int64_t size, bool zero, qv_buffer **out, qv_error *err) {
  if (size < 0 || size > (INT64_MAX >> 2))
    return qv_error_set(err, QV_ENOMEM, "cannot allocate a buffer of %lld bytes", (long long)size);
  qv_buffer *b = calloc(1, sizeof *b);
  void *data = b ? (zero ? heap_zalloc(size) : heap_alloc_uninit(size)) : NULL;
  if (data == NULL) {
    free(b);
    return qv_error_set(err, QV_ENOMEM, "out of memory allocating %lld bytes", (long long)size);
  }
  b->data = data;
  b->size = size;
  b->capacity_ = size;
  b->refcount_ = 1;
  b->release_ = heap_release;
  *out = b;
  return QV_OK;
}

qv_status qv_buffer_alloc(int64_t size, qv_buffer **out, qv_error *err) {
  return buffer_alloc(size, true, out, err);
}

qv_status qvk_buffer_alloc_uninit(int64_t size, qv_buffer **out, qv_error *err) {
  return buffer_alloc(size, false, out, err);
}

qv_status qv_buffer_resize(qv_buffer *buf, int64_t new_size, qv_error *err) {
  if (buf->release_ != heap_release || buf->parent_ != NULL ||
      __atomic_load_n(&buf->refcount_, __ATOMIC_ACQUIRE) != 1)
    return qv_error_set(err, QV_EARG, "qv_buffer_resize: buffer is not an unshared heap buffer");
  if (new_size < 0 || new_size > (INT64_MAX >> 2))
    return qv_error_set(err, QV_ENOMEM, "cannot resize a buffer to %lld bytes",
                        (long long)new_size);
  if (new_size > buf->capacity_) {
    int64_t cap = buf->capacity_ < 64 ? 64 : buf->capacity_;
    while (cap < new_size) cap *= 2;
    void *data = heap_zalloc(cap);
    if (data == NULL)
      return qv_error_set(err, QV_ENOMEM, "out of memory growing a buffer to %lld bytes",
                          (long long)cap);
    if (buf->size > 0) memcpy(data, buf->data, (size_t)buf->size);
    heap_free(buf->data, buf->capacity_);
    buf->data = data;
    buf->capacity_ = cap;
  } else if (new_size < buf->size) {
    /* Keep the bytes past size zeroed: padding stays deterministic. */
    memset(buf->data + new_size, 0, (size_t)(buf->size - new_size));
  }
  buf->size = new_size;
  return QV_OK;
}

qv_status qv_buffer_append(qv_buffer *buf, const void *src, int64_t n, qv_error *err) {
  if (n <= 0) return QV_OK;
  int64_t old = buf->size;
  QV_RETURN_NOT_OK(qv_buffer_resize(buf, old + n, err));
  memcpy(buf->data + old, src, (size_t)n);
  return QV_OK;
}

qv_status qv_buffer_view(qv_buffer *parent, int64_t offset, int64_t size, qv_buffer **out,
                         qv_error *err) {
  int64_t end;
  if (offset < 0 || size < 0 || qv_add_overflow(offset, size, &end) || end > parent->size)
    return qv_error_set(err, QV_EINVAL, "range [%lld, %lld+%lld) is outside a buffer of %lld bytes",
                        (long long)offset, (long long)offset, (long long)size,
                        (long long)parent->size);
  qv_buffer *root = parent->parent_ ? parent->parent_ : parent;
  qv_buffer *b = calloc(1, sizeof *b);
  if (b == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (buffer view)");
  b->data = parent->data + offset;
  b->size = size;
  b->refcount_ = 1;
  b->parent_ = qv_buffer_ref(root);
  *out = b;
  return QV_OK;
}

qv_status qv_buffer_wrap(void *data, int64_t size,
                         void (*release)(void *ctx, void *data, int64_t size), void *ctx,
                         qv_buffer **out, qv_error *err) {
  if (size < 0) return qv_error_set(err, QV_EARG, "negative buffer size %lld", (long long)size);
  qv_buffer *b = calloc(1, sizeof *b);
  if (b == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (buffer)");
  b->data = data;
  b->size = size;
  b->refcount_ = 1;
  b->release_ = release;
  b->ctx_ = ctx;
  *out = b;
  return QV_OK;
}

qv_status qv_buffer_map_file(const char *path, qv_buffer **out, qv_file_identity *out_identity,
                             qv_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return qv_error_set(err, QV_EIO, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return qv_error_set(err, QV_EIO, "cannot stat '%s': %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return qv_error_set(err, QV_EARG, "'%s' is not a regular file", path);
  }
  if (out_identity != NULL) {
    out_identity->size = (int64_t)st.st_size;
    out_identity->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + (int64_t)st.st_mtim.tv_nsec;
    out_identity->dev = (uint64_t)st.st_dev;
    out_identity->ino = (uint64_t)st.st_ino;
  }
  void *data = NULL;
  qv_guard_region *region = NULL;
  if (st.st_size > 0) {
    data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (data == MAP_FAILED) {
      int e = errno;
      close(fd);
      return qv_error_set(err, QV_EIO, "cannot map '%s': %s", path, strerror(e));
    }
    qv_guard_install();
    region = qv_guard_region_add(data, (int64_t)st.st_size, path, (uint64_t)st.st_dev,
                                 (uint64_t)st.st_ino);
    if (region == NULL) {
      close(fd);
      munmap(data, (size_t)st.st_size);
      return qv_error_set(err, QV_ENOMEM, "out of memory mapping '%s'", path);
    }
  }
  close(fd);
  qv_status st2 = qv_buffer_wrap(data, (int64_t)st.st_size, munmap_release, region, out, err);
  if (st2 != QV_OK) munmap_release(region, data, (int64_t)st.st_size);
  return st2;
}

qv_status qv_buffer_read_fd(int fd, int64_t max_bytes, qv_buffer **out, qv_error *err) {
  qv_buffer *b;
  QV_RETURN_NOT_OK(qv_buffer_alloc(0, &b, err));
  uint8_t chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      qv_buffer_unref(b);
      return qv_error_set(err, QV_EIO, "read failed: %s", strerror(e));
    }
    if (max_bytes > 0 && b->size + n > max_bytes) {
      qv_buffer_unref(b);
      return qv_error_set(err, QV_ENOMEM, "input exceeds the limit of %lld bytes",
                          (long long)max_bytes);
    }
    qv_status st = qv_buffer_append(b, chunk, n, err);
    if (st != QV_OK) {
      qv_buffer_unref(b);
      return st;
    }
  }
  *out = b;
  return QV_OK;
}

qv_buffer *qv_buffer_ref(qv_buffer *buf) {
  if (buf != NULL) __atomic_add_fetch(&buf->refcount_, 1, __ATOMIC_RELAXED);
  return buf;
}

void qv_buffer_unref(qv_buffer *buf) {
  if (buf == NULL) return;
  if (__atomic_sub_fetch(&buf->refcount_, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (buf->parent_ != NULL) {
    qv_buffer_unref(buf->parent_);
  } else if (buf->release_ != NULL) {
    int64_t sz = buf->release_ == heap_release ? buf->capacity_ : buf->size;
    buf->release_(buf->ctx_, buf->data, sz);
  }
  free(buf);
}

bool qv_buffer_is_mapped(const qv_buffer *buf) {
  const qv_buffer *root = buf->parent_ ? buf->parent_ : buf;
  return root->release_ == munmap_release;
}
