/*
 * info.c — `quiver info PATH [--json]`: what a file is (format, size,
 * rows, batches, compression), its schema tree with field and schema
 * metadata, and the Hugging Face `datasets` features kept under the
 * `huggingface` schema metadata key, resolved as datasets resolves them
 * (hf.h). Directories of `datasets` are handed to hfdir.c; a file is
 * sniffed first (qv_path_sniff) so that what is not Arrow is named. Top
 * layer.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "quiver/hf.h"
#include "quiver/ipc.h"

static const char kInfoHelp[] =
    "usage: quiver info PATH [--json] [--files]\n"
    "\n"
    "Show an Arrow IPC file's format, size, row and batch counts, body\n"
    "compression, schema (with field and schema metadata) and the Hugging Face\n"
    "datasets features (from the 'huggingface' metadata, else derived from the\n"
    "Arrow types as datasets does). PATH may also be a datasets directory: a\n"
    "save_to_disk Dataset (its shards as one dataset), a DatasetDict (every\n"
    "split) or a load_dataset cache directory (its builder splits and every\n"
    ".arrow file: data, or an indices mapping with the dataset it maps; past\n"
    "20 files, one line per role with counts). Opening reads metadata only;\n"
    "column data is not touched. A file that is not Arrow is named as what it\n"
    "looks like. A CSV or JSON Lines file is converted once, streaming, into\n"
    "a cached Arrow file (~/.cache/quiver/text-*.arrow) that later commands\n"
    "map; info shows its rows, blocks and inferred schema. A Parquet file\n"
    "shows its footer: writer, rows, the Arrow schema it reads as, and per\n"
    "row group and column chunk the type, codec, encodings, sizes and\n"
    "statistics.\n"
    "\n"
    "  --json    print one JSON object instead of text (every file in full)\n"
    "  --files   list every .arrow file of a directory, however many\n";

static const char *compression_name(qv_compression c) {
  switch (c) {
    case QV_COMPRESSION_LZ4_FRAME: return "lz4_frame";
    case QV_COMPRESSION_ZSTD: return "zstd";
    default: return "none";
  }
}

static void print_value_escaped(FILE *out, const char *s, int64_t n, int64_t max) {
  for (int64_t i = 0; i < n && i < max; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\n') fputs("\\n", out);
    else if (c < 0x20 || c == 0x7f) fprintf(out, "\\x%02x", c);
    else fputc(c, out);
  }
  if (n > max) fprintf(out, "... (%lld bytes)", (long long)n);
}

static void print_metadata_text(FILE *out, const qv_metadata *md, int indent) {
  for (int64_t i = 0; i < md->n; i++) {
    fprintf(out, "%*s%s = ", indent, "", md->kv[i].key);
    print_value_escaped(out, md->kv[i].value, md->kv[i].value_len, 200);
    fputc('\n', out);
  }
}

static void print_field_text(FILE *out, const qv_field *f, int indent) {
  char buf[512];
  const qv_type *t = f->type;
  bool nested = t->n_children > 0 && t->id != QV_MAP;
  if (nested) {
    fprintf(out, "%*s%s: %s%s%s\n", indent, "", f->name, qv_type_id_name(t->id),
            t->id == QV_FIXED_SIZE_LIST ? "" : "", f->nullable ? "" : " not null");
  } else {
    qv_type_to_string(t, buf, sizeof buf);
    fprintf(out, "%*s%s: %s%s\n", indent, "", f->name, buf, f->nullable ? "" : " not null");
  }
  const char *ext = qv_field_extension_name(f);
  if (ext) fprintf(out, "%*s(extension %s)\n", indent + 2, "", ext);
  if (f->metadata.n > 0) {
    fprintf(out, "%*smetadata:\n", indent + 2, "");
    print_metadata_text(out, &f->metadata, indent + 4);
  }
  if (nested)
    for (int32_t i = 0; i < t->n_children; i++) print_field_text(out, &t->children[i], indent + 2);
}

static json_t *metadata_json(const qv_metadata *md) {
  json_t *o = json_object();
  for (int64_t i = 0; i < md->n; i++)
    json_object_set_new(o, md->kv[i].key,
                        json_stringn_nocheck(md->kv[i].value, (size_t)md->kv[i].value_len));
  return o;
}

static json_t *field_json(const qv_field *f) {
  char buf[1024];
  qv_type_to_string(f->type, buf, sizeof buf);
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(f->name));
  json_object_set_new(o, "type", json_string(buf));
  json_object_set_new(o, "type_id", json_string(qv_type_id_name(f->type->id)));
  json_object_set_new(o, "nullable", json_boolean(f->nullable));
  if (f->metadata.n > 0) json_object_set_new(o, "metadata", metadata_json(&f->metadata));
  if (f->type->n_children > 0) {
    json_t *kids = json_array();
    for (int32_t i = 0; i < f->type->n_children; i++)
      json_array_append_new(kids, field_json(&f->type->children[i]));
    json_object_set_new(o, "children", kids);
  }
  return o;
}

int cmd_info(int argc, char **argv) {
  const char *path = NULL;
  bool as_json = false, all_files = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(kInfoHelp, stdout);
      return QV_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      as_json = true;
    } else if (strcmp(argv[i], "--files") == 0 || strcmp(argv[i], "--verbose") == 0) {
      all_files = true;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return cli_usage("info", "unknown option '%s'", argv[i]);
    } else if (path == NULL) {
      path = argv[i];
    } else {
      return cli_usage("info", "unexpected argument '%s'", argv[i]);
    }
  }
  if (path == NULL) return cli_usage("info", "missing PATH");
  if (cli_is_directory(path)) return cli_info_dir(path, as_json, all_files);
  qv_error err;
  qv_path_kind kind; /* not Arrow: say what it looks like instead of a parse error */
  qv_status st = qv_path_sniff(path, &kind, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  if (kind == QV_PATH_CSV || kind == QV_PATH_JSON) return cli_info_text(path, kind, as_json);
  if (kind == QV_PATH_PARQUET) return cli_info_parquet(path, as_json);
  qv_reader *r = NULL;
  st = qv_reader_open_path(path, NULL, &r, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  const qv_schema *s = qv_reader_schema(r);
  /* The features datasets would see (Features.from_arrow_schema) and the
   * fingerprint from the "huggingface" metadata. */
  qv_hf_feature *features = NULL;
  bool *from_md = NULL;
  qv_error ferr;
  /* One parse of the metadata for both (unreadable metadata: no
   * fingerprint, the features' error shown). */
  char *fingerprint = NULL;
  qv_status fst = qv_hf_features_resolve_fingerprint(s, &features, &from_md, &fingerprint, &ferr);
  const qv_kv *hf = qv_metadata_find(&s->metadata, QV_HF_METADATA_KEY);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  const char *fmt = qv_reader_format(r) == QV_FORMAT_FILE ? "file" : "stream";
  if (as_json) {
    json_t *o = json_object();
    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "format", json_string(fmt));
    json_object_set_new(o, "size", json_integer(qv_reader_size(r)));
    json_object_set_new(o, "metadata_version", json_integer(qv_reader_metadata_version(r)));
    json_object_set_new(o, "endianness", json_string(qv_reader_big_endian(r) ? "big" : "little"));
    json_object_set_new(o, "rows", json_integer(qv_reader_num_rows(r)));
    json_object_set_new(o, "batches", json_integer(qv_reader_num_batches(r)));
    json_object_set_new(o, "dictionary_batches", json_integer(qv_reader_num_dictionary_batches(r)));
    json_object_set_new(o, "compression", json_string(compression_name(qv_reader_compression(r))));
    json_t *fields = json_array();
    for (int32_t i = 0; i < qv_schema_num_fields(s); i++)
      json_array_append_new(fields, field_json(qv_schema_field(s, i)));
    json_t *schema = json_object();
    json_object_set_new(schema, "fields", fields);
    json_object_set_new(schema, "metadata", metadata_json(&s->metadata));
    json_object_set_new(o, "schema", schema);
    json_t *fj = NULL;
    if (fst == QV_OK && qv_hf_feature_emit(features, QV_HF_JSON_COMPACT, &sb, NULL) == QV_OK)
      fj = json_loadb(qv_strbuf_cstr(&sb), (size_t)sb.len, 0, NULL);
    json_object_set_new(o, "features", fj ? fj : json_null());
    if (fst != QV_OK) json_object_set_new(o, "features_error", json_string(ferr.message));
    json_object_set_new(o, "fingerprint", fingerprint ? json_string(fingerprint) : json_null());
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
    json_decref(o);
  } else {
    printf("path:               %s\n", path);
    printf("format:             %s\n", qv_reader_format(r) == QV_FORMAT_FILE
                                           ? "file (Arrow IPC file format / Feather v2)"
                                           : "stream (Arrow IPC stream format)");
    printf("size:               %lld bytes\n", (long long)qv_reader_size(r));
    printf("metadata version:   V%d\n", qv_reader_metadata_version(r));
    printf("endianness:         %s\n", qv_reader_big_endian(r) ? "big" : "little");
    printf("rows:               %lld\n", (long long)qv_reader_num_rows(r));
    printf("batches:            %lld\n", (long long)qv_reader_num_batches(r));
    printf("dictionary batches: %lld\n", (long long)qv_reader_num_dictionary_batches(r));
    printf("compression:        %s\n", compression_name(qv_reader_compression(r)));
    printf("schema:\n");
    for (int32_t i = 0; i < qv_schema_num_fields(s); i++)
      print_field_text(stdout, qv_schema_field(s, i), 2);
    if (s->metadata.n > 0) {
      printf("schema metadata:\n");
      print_metadata_text(stdout, &s->metadata, 2);
    }
    if (fst != QV_OK) {
      printf("huggingface features: %s\n", ferr.message);
    } else if (hf != NULL) {
      printf("huggingface features:\n");
      for (int32_t i = 0; i < features->n_children; i++) {
        qv_strbuf_clear(&sb);
        if (qv_hf_feature_repr(features->children[i], &sb, NULL) != QV_OK) continue;
        printf("  %s: %s%s\n", features->keys[i], qv_strbuf_cstr(&sb),
               from_md[i] ? "" : "  (from the Arrow type: the metadata does not match)");
      }
    }
    if (fingerprint) printf("fingerprint:        %s\n", fingerprint);
  }
  qv_strbuf_reset(&sb);
  free(fingerprint);
  qv_hf_feature_free(features);
  free(from_md);
  qv_reader_close(r);
  return QV_EXIT_OK;
}
