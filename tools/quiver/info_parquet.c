/*
 * info_parquet.c — `quiver info FILE.parquet [--json]`: what the footer of
 * a Parquet file says (size, writer, format version, rows, row groups,
 * leaf columns), the Arrow schema it reads as (pyarrow's types, the stored
 * ARROW:schema applied), its key/value metadata, the Hugging Face features,
 * and per row group and column chunk: physical type, codec, encodings,
 * value count, compressed and uncompressed sizes, statistics (nulls,
 * distinct values, min, max). Reads the footer only. Top layer.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "quiver/hf.h"
#include "quiver/parquet.h"
#include "quiver/table.h"

static void print_field(const qv_field *f, int indent) {
  char buf[512];
  qv_type_to_string(f->type, buf, sizeof buf);
  printf("%*s%s: %s%s\n", indent, "", f->name, buf, f->nullable ? "" : " not null");
}

static json_t *column_json(const qv_parquet_column_info *c) {
  json_t *o = json_object();
  json_object_set_new(o, "path", json_string(c->path));
  json_object_set_new(o, "physical_type", json_string(c->physical_type));
  json_object_set_new(o, "codec", json_string(c->codec));
  json_t *enc = json_array();
  for (int32_t e = 0; e < c->n_encodings; e++)
    json_array_append_new(enc, json_string(c->encodings[e]));
  json_object_set_new(o, "encodings", enc);
  json_object_set_new(o, "num_values", json_integer(c->num_values));
  json_object_set_new(o, "compressed_size", json_integer(c->compressed_size));
  json_object_set_new(o, "uncompressed_size", json_integer(c->uncompressed_size));
  json_object_set_new(o, "max_definition_level", json_integer(c->max_definition_level));
  json_object_set_new(o, "max_repetition_level", json_integer(c->max_repetition_level));
  if (c->has_statistics) {
    json_t *s = json_object();
    json_object_set_new(s, "null_count",
                        c->null_count >= 0 ? json_integer(c->null_count) : json_null());
    json_object_set_new(s, "distinct_count",
                        c->distinct_count >= 0 ? json_integer(c->distinct_count) : json_null());
    json_object_set_new(s, "min", c->has_min_max ? json_string(c->min) : json_null());
    json_object_set_new(s, "max", c->has_min_max ? json_string(c->max) : json_null());
    json_object_set_new(o, "statistics", s);
  } else {
    json_object_set_new(o, "statistics", json_null());
  }
  return o;
}

int cli_info_parquet(const char *path, bool as_json) {
  qv_error err;
  qv_parquet_file *f = NULL;
  qv_status st = qv_parquet_open_path(path, &f, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  qv_schema *s = NULL;
  st = qv_parquet_arrow_schema(f, &s, &err);
  if (st != QV_OK) {
    qv_parquet_close(f);
    return cli_fail(st, &err);
  }
  int64_t size = 0;
  FILE *fp = fopen(path, "rb");
  if (fp != NULL) {
    if (fseek(fp, 0, SEEK_END) == 0) size = ftell(fp);
    fclose(fp);
  }
  qv_hf_feature *features = NULL;
  qv_error ferr;
  qv_status fst = qv_hf_features_resolve(s, &features, NULL, &ferr);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  int32_t n_rg = qv_parquet_num_row_groups(f), n_leaf = qv_parquet_num_leaf_columns(f);
  qv_parquet_column_info ci;
  if (as_json) {
    json_t *o = json_object();
    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "format", json_string("parquet"));
    json_object_set_new(o, "size", json_integer(size));
    json_object_set_new(o, "created_by", json_string(qv_parquet_created_by(f)));
    json_object_set_new(o, "format_version", json_integer(qv_parquet_format_version(f)));
    json_object_set_new(o, "rows", json_integer(qv_parquet_num_rows(f)));
    json_object_set_new(o, "row_group_count", json_integer(n_rg));
    json_object_set_new(o, "leaf_columns", json_integer(n_leaf));
    json_t *fields = json_array();
    for (int32_t i = 0; i < qv_schema_num_fields(s); i++) {
      char buf[512];
      const qv_field *fl = qv_schema_field(s, i);
      qv_type_to_string(fl->type, buf, sizeof buf);
      json_t *fo = json_object();
      json_object_set_new(fo, "name", json_string(fl->name));
      json_object_set_new(fo, "type", json_string(buf));
      json_object_set_new(fo, "nullable", json_boolean(fl->nullable));
      json_array_append_new(fields, fo);
    }
    json_object_set_new(o, "schema", fields);
    json_t *md = json_object();
    const qv_metadata *kv = qv_parquet_key_value_metadata(f);
    for (int64_t i = 0; i < kv->n; i++)
      json_object_set_new(md, kv->kv[i].key,
                          json_stringn_nocheck(kv->kv[i].value, (size_t)kv->kv[i].value_len));
    json_object_set_new(o, "key_value_metadata", md);
    json_t *fj = NULL;
    if (fst == QV_OK && qv_hf_feature_emit(features, QV_HF_JSON_COMPACT, &sb, NULL) == QV_OK)
      fj = json_loadb(qv_strbuf_cstr(&sb), (size_t)sb.len, 0, NULL);
    json_object_set_new(o, "features", fj ? fj : json_null());
    json_t *rgs = json_array();
    for (int32_t g = 0; g < n_rg && st == QV_OK; g++) {
      json_t *ro = json_object();
      json_object_set_new(ro, "rows", json_integer(qv_parquet_row_group_rows(f, g)));
      json_t *cols = json_array();
      int64_t comp = 0, uncomp = 0;
      for (int32_t c = 0; c < n_leaf && st == QV_OK; c++) {
        st = qv_parquet_column_info_get(f, g, c, &ci, &err);
        if (st != QV_OK) break;
        comp += ci.compressed_size;
        uncomp += ci.uncompressed_size;
        json_array_append_new(cols, column_json(&ci));
      }
      json_object_set_new(ro, "compressed_size", json_integer(comp));
      json_object_set_new(ro, "uncompressed_size", json_integer(uncomp));
      json_object_set_new(ro, "columns", cols);
      json_array_append_new(rgs, ro);
    }
    json_object_set_new(o, "row_groups", rgs);
    if (st == QV_OK) {
      json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
      fputc('\n', stdout);
    }
    json_decref(o);
  } else {
    printf("path:               %s\n", path);
    printf("format:             parquet (format version %d)\n", qv_parquet_format_version(f));
    printf("size:               %lld bytes\n", (long long)size);
    printf("created by:         %s\n", qv_parquet_created_by(f));
    printf("rows:               %lld\n", (long long)qv_parquet_num_rows(f));
    printf("row groups:         %d\n", n_rg);
    printf("leaf columns:       %d\n", n_leaf);
    printf("schema:\n");
    for (int32_t i = 0; i < qv_schema_num_fields(s); i++) print_field(qv_schema_field(s, i), 2);
    const qv_metadata *kv = qv_parquet_key_value_metadata(f);
    if (kv->n > 0) {
      printf("key/value metadata:\n");
      for (int64_t i = 0; i < kv->n; i++) {
        int64_t n = kv->kv[i].value_len;
        printf("  %s = %.*s%s\n", kv->kv[i].key, (int)(n > 120 ? 120 : n), kv->kv[i].value,
               n > 120 ? "..." : "");
      }
    }
    if (fst == QV_OK && features != NULL) {
      printf("huggingface features:\n");
      for (int32_t i = 0; i < features->n_children; i++) {
        qv_strbuf_clear(&sb);
        if (qv_hf_feature_repr(features->children[i], &sb, NULL) != QV_OK) continue;
        printf("  %s: %s\n", features->keys[i], qv_strbuf_cstr(&sb));
      }
    }
    for (int32_t g = 0; g < n_rg && st == QV_OK; g++) {
      printf("row group %d: %lld rows\n", g, (long long)qv_parquet_row_group_rows(f, g));
      for (int32_t c = 0; c < n_leaf && st == QV_OK; c++) {
        st = qv_parquet_column_info_get(f, g, c, &ci, &err);
        if (st != QV_OK) break;
        printf("  %s: %s %s", ci.path, ci.physical_type, ci.codec);
        for (int32_t e = 0; e < ci.n_encodings; e++) printf("%s%s", e ? "," : " ", ci.encodings[e]);
        printf(" values=%lld compressed=%lld uncompressed=%lld", (long long)ci.num_values,
               (long long)ci.compressed_size, (long long)ci.uncompressed_size);
        if (ci.has_statistics) {
          if (ci.null_count >= 0) printf(" nulls=%lld", (long long)ci.null_count);
          if (ci.distinct_count >= 0) printf(" distinct=%lld", (long long)ci.distinct_count);
          if (ci.has_min_max) printf(" min=%s max=%s", ci.min, ci.max);
        }
        printf("\n");
      }
    }
  }
  qv_strbuf_reset(&sb);
  qv_hf_feature_free(features);
  qv_schema_unref(s);
  qv_parquet_close(f);
  if (st != QV_OK) return cli_fail(st, &err);
  return QV_EXIT_OK;
}
