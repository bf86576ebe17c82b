/*
 * dataset_text.c — CSV and JSON Lines files in the dataset layer's one
 * open path: the file is read whole by the formats layer (quiver/csv.h,
 * quiver/jsonl.h: pyarrow's inference) into an in-memory table, which
 * qv_path_classify hands on like a mapped Arrow file. Dataset layer.
 */
#include <string.h>

#include "dataset/dataset_internal.h"
#include "quiver/table.h"

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
  return kind == QV_PATH_CSV ? qv_table_read_csv(path, NULL, out, err)
                             : qv_table_read_jsonl(path, NULL, out, err);
}
