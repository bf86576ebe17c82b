/*
 * jsonl_read.c — the JSON Lines reader of quiver/jsonl.h (formats layer).
 */
#include <string.h>

#include "quiver/jsonl.h"

qv_status qv_jsonl_read_buffer(const void *data, int64_t size, const char *name,
                               const qv_jsonl_read_options *options, qv_read_result *out,
                               qv_error *err) {
  (void)data;
  (void)size;
  (void)options;
  memset(out, 0, sizeof *out);
  return qv_error_set(err, QV_ENOTSUP, "%s: JSON Lines is not read yet", name);
}

qv_status qv_jsonl_read_path(const char *path, const qv_jsonl_read_options *options,
                             qv_read_result *out, qv_error *err) {
  return qv_jsonl_read_buffer(NULL, 0, path, options, out, err);
}
