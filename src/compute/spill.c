/*
 * spill.c — the pieces group-by's spilling and the grace hash join share:
 * the default memory budget, the private temporary directory of a run, the
 * counting sort of rows by partition and the partition files
 * (spill_internal.h). Compute layer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compute/spill_internal.h"
#include "quiver/array.h"

int64_t qv_spill_default_memory_limit(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return (int64_t)1 << 30;
  return (int64_t)pages * (int64_t)page / 4;
}

qv_status qv_spill_dir_open(const char *base, const char *label, const char *what,
                            qv_atomic_dir **out, qv_error *err) {
  if (!base || !*base) base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/%s-%ld", base, label, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof path)
    return qv_error_set(err, QV_EARG, "%s: temp directory path too long: %s", what, base);
  qv_status st = qv_atomic_dir_open(path, out, err);
  if (st != QV_OK) return qv_error_prefix(err, st, "%s: in the temp directory %s: ", what, base);
  if (chmod(qv_atomic_dir_tmp(*out), 0700) != 0) {
    st = qv_error_set(err, QV_EIO, "%s: chmod %s: %s", what, qv_atomic_dir_tmp(*out),
                      strerror(errno));
    qv_atomic_dir_abort(*out);
    *out = NULL;
  }
  return st;
}

void qv_spill_bucket_starts(const uint8_t *part, int64_t n, int parts, int64_t *start) {
  memset(start, 0, sizeof(int64_t) * ((size_t)parts + 1));
  for (int64_t i = 0; i < n; i++) start[part[i] + 1]++;
  for (int p = 0; p < parts; p++) start[p + 1] += start[p];
}

void qv_spill_part_init(qv_spill_part *p) {
  memset(p, 0, sizeof *p);
  p->fd = -1;
}

qv_status qv_spill_part_open(qv_spill_part *p, const char *path, qv_type *row_type,
                             const char *what, qv_error *err) {
  p->path = strdup(path);
  if (!p->path) return qv_error_set(err, QV_ENOMEM, "%s: out of memory", what);
  p->fd = open(p->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (p->fd < 0)
    return qv_error_set(err, QV_EIO, "%s: cannot create the partition file %s: %s", what, p->path,
                        strerror(errno));
  qv_schema *schema = qv_schema_new(qv_type_ref(row_type));
  if (!schema) return qv_error_set(err, QV_ENOMEM, "%s: out of memory", what);
  qv_write_options wo;
  memset(&wo, 0, sizeof wo);
  wo.format = QV_FORMAT_STREAM;
  wo.max_batch_rows = -1;
  wo.threads = 1;
  qv_status st = qv_writer_open_fd(p->fd, schema, &wo, &p->w, err);
  qv_schema_unref(schema);
  return st == QV_OK ? QV_OK : qv_error_prefix(err, st, "%s: %s: ", what, p->path);
}

qv_status qv_spill_part_write(qv_spill_part *p, qv_array *batch, const char *what, qv_error *err) {
  qv_status st = qv_writer_write_batch(p->w, batch, err);
  if (st != QV_OK)
    return qv_error_prefix(err, st, "%s: writing the partition file %s: ", what, p->path);
  p->rows += batch->length;
  p->bytes += qv_array_buffer_bytes(batch);
  return QV_OK;
}

qv_status qv_spill_part_close(qv_spill_part *p, qv_status st, const char *what, qv_error *err) {
  if (p->w) {
    if (st == QV_OK) {
      st = qv_writer_close(p->w, err);
      if (st != QV_OK) qv_error_prefix(err, st, "%s: %s: ", what, p->path);
    } else qv_writer_abort(p->w);
    p->w = NULL;
  }
  if (p->fd >= 0) {
    if (close(p->fd) != 0 && st == QV_OK)
      st = qv_error_set(err, QV_EIO, "%s: closing %s: %s", what, p->path, strerror(errno));
    p->fd = -1;
  }
  return st;
}

void qv_spill_part_discard(qv_spill_part *p) {
  if (p->w) qv_writer_abort(p->w);
  if (p->fd >= 0) (void)close(p->fd);
  if (p->path) (void)unlink(p->path);
  free(p->path);
  qv_spill_part_init(p);
}
