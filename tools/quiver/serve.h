/*
 * serve.h — shared declarations of `quiver serve` (serve.c: the HTTP
 * server and the JSON API; serve_stats.c: per-column statistics; the
 * generated serve_assets.c: the embedded page). Top layer.
 */
#ifndef QUIVER_SERVE_H
#define QUIVER_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "quiver/dataset.h"
#include "quiver/print.h"

/* One embedded file of the page (tools/quiver/web/): its URL path, content
 * type and bytes. The table ends with an entry whose path is NULL. */
typedef struct serve_asset {
  const char *path;
  const char *mime;
  const unsigned char *data;
  size_t size;
} serve_asset;

extern const serve_asset serve_assets[];

/* The kind of a column as the page shows it ("number", "bool", "string",
 * "binary", "list", "struct", "label", "image", "audio", "media",
 * "other"): from its HF feature (may be NULL) and Arrow type. Static. */
const char *serve_column_kind(const qv_hf_feature *feature, const qv_type *type);

/* Bytes of element i (logical) of a BINARY/STRING (+LARGE, +VIEW) or
 * FIXED_SIZE_BINARY array, borrowed from its buffers; false for another
 * type or a malformed offset. */
bool serve_value_bytes(const qv_array *a, int64_t i, const uint8_t **data, int64_t *len);

/* Statistics of one column of a dataset, computed incrementally so that
 * the answer streams as JSON lines: {"progress": done, "total": N} per
 * step, then {"done": true, "stats": {...}} (or {"error": "..."}). */
typedef struct serve_stats serve_stats;

/* A job over column `column` of `ds` (a reference is taken). QV_EARG for an
 * unknown column. *out: owned, freed with serve_stats_free. */
qv_status serve_stats_new(qv_dataset *ds, const char *column, serve_stats **out,
                          qv_error *err) QV_NODISCARD;
/* Do one step (one batch of rows, or the final summary) and append its
 * JSON line(s) to `out`. *finished is set after the last line (the
 * summary or an error line). */
void serve_stats_step(serve_stats *job, qv_strbuf *out, bool *finished);
void serve_stats_free(serve_stats *job);

#endif
