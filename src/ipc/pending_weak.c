/*
 * pending_weak.c — TEMPORARY weak placeholders for entry points that are
 * being written in parallel (metadata decode, loader, concat), so the tree
 * links meanwhile. Real definitions override them. Deleted once all land.
 */
#include "ipc/ipc_internal.h"

#define QV_WEAK __attribute__((weak))

QV_WEAK qv_status qv_array_concat(qv_array *const *arrays, int64_t n, qv_array **out,
                                  qv_error *err) {
  (void)arrays; (void)n; (void)out;
  return qv_error_set(err, QV_ENOTSUP, "not yet implemented");
}
