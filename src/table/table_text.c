/*
 * table_text.c — a CSV or JSON Lines file as an in-memory table: the
 * formats layer's reader (quiver/csv.h, quiver/jsonl.h) gives record
 * batches, gathered here into one qv_table. The one place the open path,
 * `quiver import` and the Python readers turn a text file into a table.
 * Table layer.
 */
#include <string.h>

#include "quiver/table.h"

static qv_status table_of(qv_status st, qv_read_result *res, qv_table **out, qv_error *err) {
  if (st != QV_OK) return st;
  st = qv_table_from_batches(res->schema, res->batches, res->n_batches, out, err);
  qv_read_result_reset(res);
  return st;
}

qv_status qv_table_read_csv(const char *path, const qv_csv_read_options *options, qv_table **out,
                            qv_error *err) {
  *out = NULL;
  qv_read_result res;
  memset(&res, 0, sizeof res);
  return table_of(qv_csv_read_path(path, options, &res, err), &res, out, err);
}

qv_status qv_table_read_jsonl(const char *path, const qv_jsonl_read_options *options,
                              qv_table **out, qv_error *err) {
  *out = NULL;
  qv_read_result res;
  memset(&res, 0, sizeof res);
  return table_of(qv_jsonl_read_path(path, options, &res, err), &res, out, err);
}
