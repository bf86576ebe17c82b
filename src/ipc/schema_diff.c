/*
 * schema_diff.c — qv_schema_diff and qv_field_diff (quiver/integration.h):
 * the first difference between two schemas or fields, as `quiver
 * integration --mode=VALIDATE` reports it for a JSON file against an IPC
 * file. Ipc layer, over the core's type and field comparison
 * (core/compare_internal.h, which qv_array_equals uses too).
 */
#include <stdio.h>
#include <string.h>

#include "core/compare_internal.h"
#include "quiver/integration.h"

bool qv_field_diff(const qv_field *expected, const qv_field *actual, const char *path,
                   bool check_metadata, qv_error *diff) {
  char buf[QV_DIFF_PATH_CAP];
  snprintf(buf, sizeof buf, "%s", path ? path : "");
  return qv_field_diff_at(expected, actual, buf, strlen(buf), check_metadata, diff);
}

bool qv_schema_diff(const qv_schema *expected, const qv_schema *actual, qv_error *diff) {
  if (expected == actual) return true;
  int32_t ne = qv_schema_num_fields(expected), na = qv_schema_num_fields(actual);
  if (ne != na) {
    if (diff)
      snprintf(diff->message, sizeof diff->message, "schema: expected %d fields, found %d", (int)ne,
               (int)na);
    return false;
  }
  char path[QV_DIFF_PATH_CAP];
  path[0] = '\0';
  if (!qv_type_diff_at(expected->type, actual->type, path, 0, true, diff)) return false;
  if (!qv_metadata_equal_unordered(&expected->metadata, &actual->metadata)) {
    if (diff == NULL) return false;
    char me[480], ma[480];
    qv_metadata_render(&expected->metadata, me, sizeof me);
    qv_metadata_render(&actual->metadata, ma, sizeof ma);
    snprintf(diff->message, sizeof diff->message, "schema metadata: expected %s, found %s", me, ma);
    return false;
  }
  return true;
}
