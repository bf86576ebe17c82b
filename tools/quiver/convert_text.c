/*
 * convert_text.c — `quiver convert` between Arrow IPC (file or stream),
 * CSV and JSON Lines: the formats come from --from / --to or from the
 * extensions (.csv, .tsv, .json, .jsonl, .ndjson; anything else is Arrow).
 * convert.c hands a conversion here when either side is text. Output is
 * atomic (every writer writes a temporary and renames it). Top layer.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "progress.h"
#include "quiver/csv.h"
#include "quiver/dataset.h"
#include "quiver/ipc.h"
#include "quiver/jsonl.h"
#include "quiver/table.h"
#include "quiver/writer.h"

typedef enum { TF_NONE, TF_ARROW, TF_CSV, TF_JSONL } tfmt;

bool cli_has_suffix(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  if (a < b) return false;
  for (size_t i = 0; i < b; i++) {
    char c = s[a - b + i];
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    if (c != suf[i]) return false;
  }
  return true;
}

/* none | gzip[:LEVEL] | zstd[:LEVEL] for text output. */
static bool parse_text_compression(const char *v, int *codec, int *level) {
  const char *colon = strchr(v, ':');
  size_t n = colon ? (size_t)(colon - v) : strlen(v);
  *level = 0;
  if (n == 4 && strncmp(v, "none", 4) == 0 && !colon) *codec = QV_TEXT_COMPRESSION_NONE;
  else if (n == 4 && strncmp(v, "gzip", 4) == 0) *codec = QV_TEXT_COMPRESSION_GZIP;
  else if (n == 4 && strncmp(v, "zstd", 4) == 0) *codec = QV_TEXT_COMPRESSION_ZSTD;
  else return false;
  if (colon) {
    int64_t l = 0;
    if (!cli_parse_i64(colon + 1, &l) || l < 1 || l > (*codec == QV_TEXT_COMPRESSION_GZIP ? 9 : 22))
      return false;
    *level = (int)l;
  }
  return true;
}

static bool compressed_text(const char *p) {
  return cli_has_suffix(p, ".gz") || cli_has_suffix(p, ".zst");
}

static tfmt fmt_of_path(const char *p) {
  if (compressed_text(p)) { /* x.csv.gz, x.jsonl.zst: the format of x.csv, x.jsonl */
    char stem[4096];
    size_t n = strlen(p) - (cli_has_suffix(p, ".gz") ? 3 : 4);
    if (n >= sizeof stem) return TF_ARROW;
    memcpy(stem, p, n);
    stem[n] = '\0';
    tfmt f = fmt_of_path(stem);
    return f == TF_CSV || f == TF_JSONL ? f : TF_ARROW;
  }
  if (cli_has_suffix(p, ".csv") || cli_has_suffix(p, ".tsv")) return TF_CSV;
  if (cli_has_suffix(p, ".json") || cli_has_suffix(p, ".jsonl") || cli_has_suffix(p, ".ndjson"))
    return TF_JSONL;
  return TF_ARROW;
}

static tfmt fmt_of_name(const char *s) {
  if (strcmp(s, "csv") == 0 || strcmp(s, "tsv") == 0) return TF_CSV;
  if (strcmp(s, "json") == 0 || strcmp(s, "jsonl") == 0) return TF_JSONL;
  if (strcmp(s, "arrow") == 0 || strcmp(s, "file") == 0 || strcmp(s, "stream") == 0)
    return TF_ARROW;
  return TF_NONE;
}

bool cli_convert_is_text(int argc, char **argv) {
  int pos = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--from", 6) == 0 || strncmp(a, "--to", 4) == 0) return true;
    if (a[0] == '-' && a[1] != '\0') {
      if (strchr(a, '=') == NULL && i + 1 < argc &&
          (strcmp(a, "--format") == 0 || strcmp(a, "--compression") == 0 ||
           strcmp(a, "--batch-size") == 0 || strcmp(a, "--block-size") == 0))
        i++;
      continue;
    }
    if (pos++ < 2 && fmt_of_path(a) != TF_ARROW) return true;
  }
  return false;
}

static const char kHelp[] =
    "usage: quiver convert IN OUT [--from=arrow|csv|tsv|json] [--to=arrow|csv|tsv|json]\n"
    "                     [--delimiter=C] [--format=file|stream]\n"
    "                     [--compression=none|lz4|zstd[:LEVEL]|gzip[:LEVEL]]\n"
    "                     [--block-size=BYTES] [--stats]\n"
    "\n"
    "Convert between Arrow IPC (file or stream), CSV and JSON Lines. Formats\n"
    "come from --from/--to or the extensions (.csv, .tsv, .json, .jsonl,\n"
    ".ndjson, each also with .gz or .zst: read decompressed; anything else\n"
    "is Arrow). CSV is read with pyarrow.csv's type\n"
    "inference and written as pyarrow.csv.write_csv writes it; JSON Lines is\n"
    "read as pyarrow.json infers it and written one object per row. Arrow\n"
    "output is the file format unless --format=stream; --compression applies\n"
    "to the output: Arrow buffers (none, lz4, zstd) or the whole CSV/JSON\n"
    "text (none, gzip, zstd; by default from OUT's name as pandas infers it:\n"
    ".gz gzip, .zst zstd, else none). OUT is replaced atomically.\n"
    "\n"
    "CSV and JSON Lines input is read in windows of about 2 x cores x\n"
    "--block-size bytes (default 1 MiB blocks), parsed on all cores while the\n"
    "previous window is written, so memory stays small whatever IN's size. A\n"
    "value a type inferred so far cannot hold (\"1.5\" in an int64 column)\n"
    "restarts the conversion with the wider type: the result is always the\n"
    "whole-file inference. --stats prints rows, windows, restarts and the\n"
    "reader's peak memory on stderr.\n";

/* The batches of IN, whatever its format. */
static qv_status read_input(const char *in, tfmt f, char delim, qv_read_result *res,
                            qv_error *err) {
  memset(res, 0, sizeof *res);
  if (f == TF_CSV) {
    qv_csv_read_options o;
    memset(&o, 0, sizeof o);
    o.delimiter = delim;
    return qv_csv_read_path(in, &o, res, err);
  }
  if (f == TF_JSONL) return qv_jsonl_read_path(in, NULL, res, err);
  qv_path_kind kind = QV_PATH_ARROW_FILE;
  if (strcmp(in, "-") != 0 && qv_path_sniff(in, &kind, err) == QV_OK && kind == QV_PATH_PARQUET) {
    /* Parquet IN: its row groups as batches, pyarrow's types (table.h) */
    qv_table *t = NULL;
    QV_RETURN_NOT_OK(qv_table_read_parquet(in, NULL, &t, err));
    res->schema = qv_schema_ref((qv_schema *)qv_table_schema(t));
    int64_t n = qv_table_num_batches(t);
    qv_status st = QV_OK;
    if (n > 0 && (res->batches = calloc((size_t)n, sizeof *res->batches)) == NULL)
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
    for (int64_t i = 0; st == QV_OK && i < n; i++) {
      st = qv_table_batch(t, i, &res->batches[i], err);
      if (st == QV_OK) {
        res->n_rows += res->batches[i]->length;
        res->n_batches++;
      }
    }
    qv_table_unref(t);
    if (st != QV_OK) qv_read_result_reset(res);
    return st;
  }
  qv_read_options ro = {QV_VALIDATE_FULL, true, 0};
  qv_reader *r = NULL;
  QV_RETURN_NOT_OK(strcmp(in, "-") == 0 ? qv_reader_open_fd(0, &ro, &r, err)
                                        : qv_reader_open_path(in, &ro, &r, err));
  res->schema = qv_schema_ref((qv_schema *)qv_reader_schema(r));
  int64_t cap = 0;
  qv_status st = QV_OK;
  for (;;) {
    qv_array *b = NULL;
    st = qv_reader_next(r, &b, err);
    if (st != QV_OK || b == NULL) break;
    if (res->n_batches == cap) {
      cap = cap ? cap * 2 : 16;
      qv_array **nb = realloc(res->batches, (size_t)cap * sizeof *nb);
      if (nb == NULL) {
        qv_array_unref(b);
        st = qv_error_set(err, QV_ENOMEM, "out of memory");
        break;
      }
      res->batches = nb;
    }
    res->batches[res->n_batches++] = b;
    res->n_rows += b->length;
  }
  qv_reader_close(r);
  if (st != QV_OK) qv_read_result_reset(res);
  return st;
}

/* Where a streamed text input goes: the output writer, reopened when the
 * reader restarts with wider types (qv_batch_sink.begin). */
typedef struct text_sink {
  tfmt to;
  const char *out;
  char delim;
  int comp, level; /* text output's qv_text_compression */
  const qv_write_options *wo;
  qv_writer *aw;
  qv_csv_writer *cw;
  qv_jsonl_writer *jw;
  cli_progress *bar;
  int64_t rows;
} text_sink;

static void sink_abort(text_sink *t) {
  qv_writer_abort(t->aw);
  qv_csv_writer_abort(t->cw);
  qv_jsonl_writer_abort(t->jw);
  t->aw = NULL;
  t->cw = NULL;
  t->jw = NULL;
}

static qv_status sink_begin(void *ctx, const qv_schema *schema, qv_error *err) {
  text_sink *t = ctx;
  sink_abort(t);
  t->rows = 0;
  if (t->to == TF_CSV) {
    qv_csv_write_options o;
    memset(&o, 0, sizeof o);
    o.delimiter = t->delim;
    o.compression = (qv_text_compression)t->comp;
    o.compression_level = t->level;
    return qv_csv_writer_open(t->out, schema, &o, &t->cw, err);
  }
  if (t->to == TF_JSONL) {
    qv_jsonl_write_options o = {(qv_text_compression)t->comp, t->level};
    return qv_jsonl_writer_open_options(t->out, &o, &t->jw, err);
  }
  return qv_writer_open_path(t->out, schema, t->wo, &t->aw, err);
}

static qv_status sink_batch(void *ctx, qv_array *b, qv_error *err) {
  text_sink *t = ctx;
  t->rows += b->length;
  if (t->cw) return qv_csv_writer_write(t->cw, b, err);
  if (t->jw) return qv_jsonl_writer_write(t->jw, b, err);
  return qv_writer_write_batch(t->aw, b, err);
}

static void sink_progress(void *ctx, int64_t done, int64_t total) {
  (void)total;
  text_sink *t = ctx;
  cli_progress_update(t->bar, t->rows, done);
}

static qv_status sink_close(text_sink *t, qv_error *err) {
  qv_status st = QV_OK;
  if (t->cw) st = qv_csv_writer_close(t->cw, err);
  else if (t->jw) st = qv_jsonl_writer_close(t->jw, err);
  else if (t->aw) st = qv_writer_close(t->aw, err);
  t->aw = NULL;
  t->cw = NULL;
  t->jw = NULL;
  return st;
}

/* A CSV or JSON Lines IN read in windows straight into the writer:
 * memory stays about threads x block size whatever IN's size. */
static int convert_streamed(const char *in, tfmt from, char in_delim, int64_t block_size,
                            bool show_stats, text_sink *t) {
  qv_error err;
  qv_batch_sink sink = {sink_begin, sink_batch, t};
  qv_text_stream_stats stats;
  struct stat sb;
  cli_progress bar;
  cli_progress_start(&bar, "convert",
                     !compressed_text(in) && stat(in, &sb) == 0 ? (int64_t)sb.st_size : 0);
  t->bar = &bar;
  qv_status st;
  if (from == TF_CSV) {
    qv_csv_read_options o;
    memset(&o, 0, sizeof o);
    o.delimiter = in_delim;
    o.block_size = block_size;
    st = qv_csv_stream_path(in, &o, &sink, sink_progress, t, &stats, &err);
  } else {
    qv_jsonl_read_options o;
    memset(&o, 0, sizeof o);
    o.block_size = block_size;
    st = qv_jsonl_stream_path(in, &o, &sink, sink_progress, t, &stats, &err);
  }
  if (st == QV_OK) st = sink_close(t, &err);
  else sink_abort(t);
  cli_progress_finish(&bar, st == QV_OK);
  if (st != QV_OK) return cli_fail(st, &err);
  if (show_stats)
    fprintf(stderr,
            "convert: %lld rows, %lld windows, %lld restarts, peak %lld bytes held by the reader\n",
            (long long)stats.rows, (long long)stats.windows, (long long)stats.restarts,
            (long long)stats.peak_bytes);
  return QV_EXIT_OK;
}

int cmd_convert_text(int argc, char **argv) {
  const char *in = NULL, *out = NULL;
  tfmt from = TF_NONE, to = TF_NONE;
  char delim = 0;
  const char *comp = NULL;
  int64_t block_size = 0;
  bool show_stats = false;
  qv_write_options wo;
  memset(&wo, 0, sizeof wo);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    bool m = false;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(kHelp, stdout);
      return QV_EXIT_OK;
    }
    if ((v = cli_opt_value(a, "--from", argc, argv, &i, &m)) || m) {
      if (!v || (from = fmt_of_name(v)) == TF_NONE)
        return cli_usage("convert", "--from must be arrow, csv, tsv or json, found '%s'",
                         v ? v : "");
      if (strcmp(v, "tsv") == 0 && delim == 0) delim = '\t';
    } else if ((v = cli_opt_value(a, "--to", argc, argv, &i, &m)) || m) {
      if (!v || (to = fmt_of_name(v)) == TF_NONE)
        return cli_usage("convert", "--to must be arrow, csv, tsv or json, found '%s'", v ? v : "");
      if (strcmp(v, "tsv") == 0 && delim == 0) delim = '\t';
      if (strcmp(v, "stream") == 0) wo.format = QV_FORMAT_STREAM;
    } else if ((v = cli_opt_value(a, "--delimiter", argc, argv, &i, &m)) || m) {
      if (!v || strlen(v) != 1)
        return cli_usage("convert", "--delimiter takes one character, found '%s'", v ? v : "");
      delim = v[0];
    } else if ((v = cli_opt_value(a, "--format", argc, argv, &i, &m)) || m) {
      if (v && strcmp(v, "file") == 0) wo.format = QV_FORMAT_FILE;
      else if (v && strcmp(v, "stream") == 0) wo.format = QV_FORMAT_STREAM;
      else return cli_usage("convert", "--format must be 'file' or 'stream'");
    } else if ((v = cli_opt_value(a, "--compression", argc, argv, &i, &m)) || m) {
      if (!v) return cli_usage("convert", "--compression needs a value");
      comp = v; /* parsed once OUT's format is known */
    } else if ((v = cli_opt_value(a, "--batch-size", argc, argv, &i, &m)) || m) {
      int64_t n = 0;
      if (!v || !cli_parse_i64(v, &n) || n <= 0)
        return cli_usage("convert", "--batch-size must be a positive integer, found '%s'",
                         v ? v : "");
      wo.max_batch_rows = n;
    } else if ((v = cli_opt_value(a, "--block-size", argc, argv, &i, &m)) || m) {
      if (!v || !cli_parse_i64(v, &block_size) || block_size <= 0 || block_size > (1 << 30))
        return cli_usage("convert", "--block-size must be 1 .. 1073741824 bytes, found '%s'",
                         v ? v : "");
    } else if (strcmp(a, "--stats") == 0) {
      show_stats = true;
    } else if (a[0] == '-' && a[1] != '\0') {
      return cli_usage("convert", "unknown option '%s'", a);
    } else if (in == NULL) {
      in = a;
    } else if (out == NULL) {
      out = a;
    } else {
      return cli_usage("convert", "unexpected argument '%s'", a);
    }
  }
  if (in == NULL || out == NULL) return cli_usage("convert", "IN and OUT are required");
  if (from == TF_NONE) from = strcmp(in, "-") == 0 ? TF_ARROW : fmt_of_path(in);
  if (to == TF_NONE) to = fmt_of_path(out);
  if (strcmp(out, "-") == 0) return cli_usage("convert", "text output goes to a file, not stdout");
  int text_comp = QV_TEXT_COMPRESSION_AUTO, text_level = 0;
  if (comp && (to == TF_CSV || to == TF_JSONL)) {
    if (!parse_text_compression(comp, &text_comp, &text_level))
      return cli_usage(
          "convert", "--compression for text must be none, gzip[:1-9] or zstd[:LEVEL], found '%s'",
          comp);
  } else if (comp && !cli_parse_ipc_compression(comp, &wo.compression, &wo.compression_level)) {
    return cli_usage("convert", "--compression must be none, lz4 or zstd[:LEVEL], found '%s'",
                     comp);
  }
  char in_delim = from == TF_CSV ? delim : 0;
  char out_delim = to == TF_CSV ? (delim ? delim : (cli_has_suffix(out, ".tsv") ? '\t' : ',')) : 0;

  if (from == TF_CSV || from == TF_JSONL) {
    text_sink t = {to, out, out_delim, text_comp, text_level, &wo, NULL, NULL, NULL, NULL, 0};
    return convert_streamed(in, from, in_delim, block_size, show_stats, &t);
  }
  qv_error err;
  qv_read_result res;
  qv_status st = read_input(in, from, in_delim, &res, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  if (to == TF_CSV) {
    qv_csv_write_options o;
    memset(&o, 0, sizeof o);
    o.delimiter = out_delim;
    o.compression = (qv_text_compression)text_comp;
    o.compression_level = text_level;
    qv_csv_writer *w = NULL;
    st = qv_csv_writer_open(out, res.schema, &o, &w, &err);
    for (int64_t i = 0; st == QV_OK && i < res.n_batches; i++)
      st = qv_csv_writer_write(w, res.batches[i], &err);
    if (st == QV_OK) st = qv_csv_writer_close(w, &err);
    else qv_csv_writer_abort(w);
  } else if (to == TF_JSONL) {
    qv_jsonl_writer *w = NULL;
    qv_jsonl_write_options jo = {(qv_text_compression)text_comp, text_level};
    st = qv_jsonl_writer_open_options(out, &jo, &w, &err);
    for (int64_t i = 0; st == QV_OK && i < res.n_batches; i++)
      st = qv_jsonl_writer_write(w, res.batches[i], &err);
    if (st == QV_OK) st = qv_jsonl_writer_close(w, &err);
    else qv_jsonl_writer_abort(w);
  } else {
    qv_writer *w = NULL;
    st = qv_writer_open_path(out, res.schema, &wo, &w, &err);
    for (int64_t i = 0; st == QV_OK && i < res.n_batches; i++)
      st = qv_writer_write_batch(w, res.batches[i], &err);
    if (st == QV_OK) st = qv_writer_close(w, &err);
    else qv_writer_abort(w);
  }
  qv_read_result_reset(&res);
  if (st != QV_OK) return cli_fail(st, &err);
  return QV_EXIT_OK;
}

int cli_info_text(const char *path, qv_path_kind kind, bool as_json) {
  qv_error err;
  qv_table *t = NULL; /* the cached conversion, mapped (quiver/dataset.h) */
  qv_status st = qv_table_open_text(path, kind, NULL, &t, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  struct {
    int64_t n_rows, n_batches;
  } res = {qv_table_num_rows(t), qv_table_num_batches(t)};
  struct stat sb;
  long long size = stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
  const char *fmt = kind == QV_PATH_CSV ? "csv" : "json";
  const qv_schema *s = qv_table_schema(t);
  char tn[512];
  if (as_json) {
    json_t *o = json_object();
    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "format", json_string(fmt));
    json_object_set_new(o, "size", json_integer(size));
    json_object_set_new(o, "rows", json_integer(res.n_rows));
    json_object_set_new(o, "blocks", json_integer(res.n_batches));
    json_t *fields = json_array();
    for (int32_t i = 0; i < qv_schema_num_fields(s); i++) {
      json_t *f = json_object();
      qv_type_to_string(qv_schema_field(s, i)->type, tn, sizeof tn);
      json_object_set_new(f, "name", json_string(qv_schema_field(s, i)->name));
      json_object_set_new(f, "type", json_string(tn));
      json_array_append_new(fields, f);
    }
    json_t *schema = json_object();
    json_object_set_new(schema, "fields", fields);
    json_object_set_new(o, "schema", schema);
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
    json_decref(o);
  } else {
    printf("path:               %s\n", path);
    printf("format:             %s\n", kind == QV_PATH_CSV
                                           ? "csv (types inferred as pyarrow.csv)"
                                           : "json lines (types inferred as pyarrow.json)");
    printf("size:               %lld bytes\n", size);
    printf("rows:               %lld\n", (long long)res.n_rows);
    printf("blocks:             %lld\n", (long long)res.n_batches);
    printf("schema:\n");
    for (int32_t i = 0; i < qv_schema_num_fields(s); i++) {
      qv_type_to_string(qv_schema_field(s, i)->type, tn, sizeof tn);
      printf("  %s: %s\n", qv_schema_field(s, i)->name, tn);
    }
  }
  qv_table_unref(t);
  return QV_EXIT_OK;
}
