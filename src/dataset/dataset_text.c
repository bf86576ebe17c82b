/*
 * dataset_text.c — CSV and JSON Lines files in the dataset layer's one
 * open path: the file is read whole by the formats layer (quiver/csv.h,
 * quiver/jsonl.h: pyarrow's inference) into an in-memory table, which
 * qv_path_classify hands on like a mapped Arrow file. Dataset layer.
 */
#include <string.h>

#include "dataset/dataset_internal.h"
#include "quiver/csv.h"
#include "quiver/jsonl.h"

bool qv_ds_has_suffix(const char *path, const char *suffix) {
  size_t a = strlen(path), b = strlen(suffix);
  if (a < b) return false;
  for (size_t i = 0; i < b; i++) {
    char c = path[a - b + i];
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    if (c != suffix[i]) return false;
  }
  return true;
}

qv_status qv_ds_read_text(const char *path, qv_path_kind kind, qv_table **out, qv_error *err) {
  qv_read_result res;
  qv_status st = kind == QV_PATH_CSV ? qv_csv_read_path(path, NULL, &res, err)
                                     : qv_jsonl_read_path(path, NULL, &res, err);
  if (st != QV_OK) return st;
  st = qv_table_from_batches(res.schema, res.batches, res.n_batches, out, err);
  qv_read_result_reset(&res);
  return st;
}
