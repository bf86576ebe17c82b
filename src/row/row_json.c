/*
 * row_json.c — row layer: the JSON rendering behind `quiver debug
 * row-layout`: encode a range of key rows and describe the metadata, row
 * offsets, row bytes and null masks as one JSON object (jansson).
 */
#include <jansson.h>
#include <stdlib.h>

#include "row/row_internal.h"

static json_t *hex(const uint8_t *p, int64_t n) {
  static const char digits[] = "0123456789abcdef";
  char *s = malloc((size_t)(2 * n + 1));
  if (!s) return NULL;
  for (int64_t i = 0; i < n; i++) {
    s[2 * i] = digits[p[i] >> 4];
    s[2 * i + 1] = digits[p[i] & 15];
  }
  s[2 * n] = 0;
  json_t *j = json_stringn(s, (size_t)(2 * n));
  free(s);
  return j;
}

static json_t *int_array(const int32_t *v, int32_t n) {
  json_t *a = json_array();
  for (int32_t i = 0; a && i < n; i++) json_array_append_new(a, json_integer(v[i]));
  return a;
}

qv_status qv_row_layout_json(qv_array *const *keys, int32_t num_keys, int32_t row_alignment,
                             int32_t string_alignment, int64_t start, int64_t end, char **out,
                             qv_error *err) {
  *out = NULL;
  if (keys == NULL || num_keys < 1) return qv_error_set(err, QV_EARG, "row layout: no key columns");
  int64_t length = keys[0]->length;
  for (int32_t i = 1; i < num_keys; i++)
    if (keys[i]->length != length)
      return qv_error_set(err, QV_EARG,
                          "row layout: key column %d has %lld rows, key column 0 "
                          "has %lld",
                          (int)i, (long long)keys[i]->length, (long long)length);
  if (start < 0 || end < start || end > length)
    return qv_error_set(err, QV_ERANGE, "row layout: rows %lld:%lld are outside [0, %lld]",
                        (long long)start, (long long)end, (long long)length);
  qv_type **types = malloc(sizeof(qv_type *) * (size_t)num_keys);
  int64_t *sel = malloc(sizeof(int64_t) * (size_t)(end - start + 1));
  if (!types || !sel) {
    free(types);
    free(sel);
    return qv_error_set(err, QV_ENOMEM, "row layout: out of memory");
  }
  for (int32_t i = 0; i < num_keys; i++) types[i] = keys[i]->type;
  for (int64_t i = start; i < end; i++) sel[i - start] = i;

  qv_row_metadata md;
  qv_row_table t;
  memset(&t, 0, sizeof t);
  qv_status st =
      qv_row_metadata_from_types(&md, types, num_keys, row_alignment, string_alignment, err);
  free(types);
  if (st != QV_OK) {
    free(sel);
    return st;
  }
  if ((st = qv_row_table_init(&t, &md, err)) != QV_OK ||
      (st = qv_row_encode(&t, keys, sel, end - start, err)) != QV_OK)
    goto done;

  json_t *o = json_object();
  json_object_set_new(o, "row_alignment", json_integer(md.row_alignment));
  json_object_set_new(o, "string_alignment", json_integer(md.string_alignment));
  json_object_set_new(o, "null_masks_bytes_per_row", json_integer(md.null_masks_bytes_per_row));
  json_object_set_new(o, "is_fixed_length", json_boolean(md.is_fixed_length));
  json_object_set_new(o, "fixed_length", json_integer(md.fixed_length));
  json_object_set_new(o, "varbinary_end_array_offset", json_integer(md.varbinary_end_array_offset));
  json_object_set_new(o, "column_order", int_array(md.column_order, md.num_cols));
  json_object_set_new(o, "column_offsets", int_array(md.column_offsets, md.num_cols));
  if (md.is_fixed_length) {
    json_object_set_new(o, "row_offsets", json_null());
  } else {
    json_t *a = json_array();
    const int64_t *offs = qv_row_table_offsets(&t);
    for (int64_t i = 0; i <= t.num_rows; i++) json_array_append_new(a, json_integer(offs[i]));
    json_object_set_new(o, "row_offsets", a);
  }
  json_t *rows = json_array(), *masks = json_array();
  for (int64_t i = 0; i < t.num_rows; i++) {
    int64_t len;
    const uint8_t *row = qv_row_table_row(&t, i, &len);
    json_array_append_new(rows, hex(row, len));
    json_array_append_new(masks, hex(qv_row_table_null_mask(&t, i), md.null_masks_bytes_per_row));
  }
  json_object_set_new(o, "rows", rows);
  json_object_set_new(o, "null_masks", masks);
  *out = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
  json_decref(o);
  if (*out == NULL) st = qv_error_set(err, QV_ENOMEM, "row layout: out of memory");

done:
  qv_row_table_reset(&t);
  qv_row_metadata_reset(&md);
  free(sel);
  return st;
}
