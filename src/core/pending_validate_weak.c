/*
 * pending_validate_weak.c — TEMPORARY weak placeholder for
 * qv_array_validate (being written on main), so that the C data importer
 * links meanwhile. Delete this file once the real definition lands.
 */
#include "quiver/array.h"

__attribute__((weak)) qv_status qv_array_validate(const qv_array *a,
                                                  qv_validate_level level,
                                                  const char *path,
                                                  qv_error *err) {
  (void)a; (void)level; (void)path; (void)err;
  return QV_OK;
}
