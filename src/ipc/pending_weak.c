/*
 * pending_weak.c — TEMPORARY weak placeholders for entry points that are
 * being written in parallel (metadata decode, loader), so the tree
 * links meanwhile. Real definitions override them. Deleted once all land.
 */
#include "ipc/ipc_internal.h"

#define QV_WEAK __attribute__((weak))

QV_WEAK qv_status qv_ipc_decode_message(const uint8_t *data, int64_t size,
                                        qv_ipc_message *out, qv_error *err) {
  (void)data; (void)size; (void)out;
  return qv_error_set(err, QV_ENOTSUP, "not yet implemented");
}
QV_WEAK void qv_ipc_message_reset(qv_ipc_message *m) { (void)m; }
QV_WEAK qv_status qv_ipc_decode_footer(const uint8_t *data, int64_t size,
                                       qv_ipc_footer *out, qv_error *err) {
  (void)data; (void)size; (void)out;
  return qv_error_set(err, QV_ENOTSUP, "not yet implemented");
}
QV_WEAK void qv_ipc_footer_reset(qv_ipc_footer *f) { (void)f; }
QV_WEAK qv_status qv_ipc_load_batch(const qv_type *schema_type, const qv_ipc_batch_desc *desc,
                                    const qv_ipc_load_ctx *ctx, qv_array **out, qv_error *err) {
  (void)schema_type; (void)desc; (void)ctx; (void)out;
  return qv_error_set(err, QV_ENOTSUP, "not yet implemented");
}
