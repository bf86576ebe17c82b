/*
 * compare_internal.h — the type and field comparison behind
 * qv_array_equals (core/compare.c), shared with the ipc layer's schema
 * diffs (ipc/schema_diff.c: qv_schema_diff, qv_field_diff of
 * quiver/integration.h). Core layer. Not installed.
 */
#ifndef QUIVER_CORE_COMPARE_INTERNAL_H
#define QUIVER_CORE_COMPARE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "quiver/core.h"
#include "quiver/type.h"

/** Size of the field-path buffers qv_type_diff_at works in. */
#define QV_DIFF_PATH_CAP 512

/**
 * Compare two types deeply (id, parameters, dictionary index type and
 * ordering, children's names, nullability and, with check_metadata, their
 * metadata as unordered pairs). `path` is a buffer of QV_DIFF_PATH_CAP bytes
 * holding the path of the field compared (path_len bytes, "" at the top);
 * children's names are appended while descending and removed again. On a
 * difference returns false and, when `diff` is not NULL, writes
 * "field 'PATH': WHAT: expected X, found Y" (no "field" part at the top).
 */
bool qv_type_diff_at(const qv_type *expected, const qv_type *actual, char *path, size_t path_len,
                     bool check_metadata, qv_error *diff);

/** As qv_type_diff_at for two fields: name, nullability, metadata (with
 *  check_metadata), then the type. */
bool qv_field_diff_at(const qv_field *expected, const qv_field *actual, char *path, size_t path_len,
                      bool check_metadata, qv_error *diff);

/** Metadata equality ignoring the order of the pairs, as Arrow C++'s
 *  KeyValueMetadata::Equals (writers reorder the extension keys). Unlike
 *  qv_metadata_equals, which compares in order. False also when the
 *  comparison cannot allocate. */
bool qv_metadata_equal_unordered(const qv_metadata *x, const qv_metadata *y);

/** Render metadata as "[k='v', ...]" into buf (cap bytes, NUL-terminated,
 *  truncated when too long). */
void qv_metadata_render(const qv_metadata *md, char *buf, size_t cap);

#endif /* QUIVER_CORE_COMPARE_INTERNAL_H */
