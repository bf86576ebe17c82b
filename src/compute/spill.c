/*
 * spill.c — the pieces group-by's spilling and the grace hash join share:
 * the default memory budget and the private temporary directory of a run
 * (spill_internal.h). Compute layer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compute/spill_internal.h"

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
