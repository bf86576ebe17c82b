/*
 * convert_parquet.c — `quiver convert IN OUT.parquet` (or `--to=parquet`):
 * read an Arrow IPC file or stream and write it as Parquet with the
 * writer of quiver/parquet_writer.h (codec, row-group size, data page
 * version, dictionary on/off). The output is atomic: a failure leaves the
 * previous OUT untouched. convert.c dispatches here. Top layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "progress.h"
#include "quiver/cdata.h"
#include "quiver/dataset.h"
#include "quiver/ipc.h"
#include "quiver/parquet_writer.h"

static const char kConvertParquetHelp[] =
    "usage: quiver convert IN OUT.parquet [--to=parquet] [--split NAME]\n"
    "                     [--compression=none|snappy|gzip|brotli|lz4|zstd[:LEVEL]]\n"
    "                     [--row-group-size=N] [--page-version=1|2] [--page-size=BYTES]\n"
    "                     [--no-dictionary] [--dictionary-page-size=BYTES]\n"
    "                     [--threads=N]\n"
    "\n"
    "Write an Arrow IPC file or stream (IN '-' reads a stream from stdin), or\n"
    "the rows of a datasets directory (save_to_disk or load_dataset cache;\n"
    "--split NAME picks a split) as Parquet: chosen when OUT ends in .parquet\n"
    "or with --to=parquet.\n"
    "Defaults: snappy, 1048576 rows per row group, data page v1, pages of\n"
    "about 1 MiB of values, dictionary encoding with fallback to PLAIN once\n"
    "a column chunk's dictionary passes --dictionary-page-size (1 MiB; a\n"
    "chunk whose first 4096 values are nearly all distinct and would pass\n"
    "it is PLAIN from the start),\n"
    "the columns of a row group encoded on --threads threads (0: one per\n"
    "CPU, the default; the output does not depend on it).\n"
    "The Arrow schema is stored (ARROW:schema) so pyarrow restores the exact\n"
    "types; schema metadata is kept. OUT is replaced atomically: on any\n"
    "error the previous OUT is untouched.\n";

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Options of `convert` that take a value (as "--name VALUE" too). */
static bool takes_value(const char *a) {
  static const char *const names[] = {"--format",       "--compression", "--batch-size",
                                      "--to",           "--from",        "--row-group-size",
                                      "--page-version", "--page-size",   "--dictionary-page-size",
                                      "--split",        "--threads"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(a, names[i]) == 0) return true;
  return false;
}

bool cli_convert_to_parquet(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--to") == 0 && i + 1 < argc) return strcmp(argv[i + 1], "parquet") == 0;
    if (strncmp(a, "--to=", 5) == 0) return strcmp(a + 5, "parquet") == 0;
  }
  int positional = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] == '-' && a[1] != '\0') {
      if (takes_value(a)) i++;
      continue;
    }
    if (++positional == 2) return ends_with(a, ".parquet") || ends_with(a, ".pq");
  }
  return false;
}

static bool parse_codec(const char *s, qv_parquet_codec *c, int *level) {
  char name[32];
  const char *colon = strchr(s, ':');
  size_t n = colon ? (size_t)(colon - s) : strlen(s);
  if (n >= sizeof name) return false;
  memcpy(name, s, n);
  name[n] = '\0';
  if (!qv_parquet_codec_from_name(name, c)) return false;
  *level = 0;
  if (colon) {
    if (*c == QV_PARQUET_UNCOMPRESSED || *c == QV_PARQUET_SNAPPY || *c == QV_PARQUET_LZ4_RAW)
      return false;
    char *end = NULL;
    long v = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || v < -131072 || v > 22) return false;
    *level = (int)v;
  }
  return true;
}

int cmd_convert_parquet(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *split = NULL;
  qv_parquet_write_options o;
  memset(&o, 0, sizeof o);
  o.codec = QV_PARQUET_SNAPPY;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool m = false;
    const char *v;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(kConvertParquetHelp, stdout);
      return QV_EXIT_OK;
    }
    if ((v = cli_opt_value(a, "--to", argc, argv, &i, &m)) || m) {
      if (!v || strcmp(v, "parquet") != 0)
        return cli_usage("convert", "--to must be 'parquet' here, found '%s'", v ? v : "");
    } else if ((v = cli_opt_value(a, "--compression", argc, argv, &i, &m)) || m) {
      if (!v || !parse_codec(v, &o.codec, &o.compression_level))
        return cli_usage("convert",
                         "--compression must be none, snappy, gzip[:LEVEL], brotli[:LEVEL], lz4 "
                         "or zstd[:LEVEL] for Parquet, found '%s'",
                         v ? v : "");
    } else if ((v = cli_opt_value(a, "--row-group-size", argc, argv, &i, &m)) || m) {
      if (!cli_parse_i64_in(v, 1, INT64_MAX, &o.row_group_rows))
        return cli_usage("convert", "--row-group-size must be a positive integer, found '%s'",
                         v ? v : "");
    } else if ((v = cli_opt_value(a, "--page-size", argc, argv, &i, &m)) || m) {
      if (!cli_parse_i64_in(v, 1, INT64_MAX, &o.page_bytes))
        return cli_usage("convert", "--page-size must be a positive integer, found '%s'",
                         v ? v : "");
    } else if ((v = cli_opt_value(a, "--dictionary-page-size", argc, argv, &i, &m)) || m) {
      if (!cli_parse_i64_in(v, 1, INT64_MAX, &o.dictionary_page_bytes))
        return cli_usage("convert", "--dictionary-page-size must be a positive integer, found '%s'",
                         v ? v : "");
    } else if ((v = cli_opt_value(a, "--page-version", argc, argv, &i, &m)) || m) {
      if (v && strcmp(v, "1") == 0) o.page_version = 1;
      else if (v && strcmp(v, "2") == 0) o.page_version = 2;
      else return cli_usage("convert", "--page-version must be 1 or 2, found '%s'", v ? v : "");
    } else if ((v = cli_opt_value(a, "--threads", argc, argv, &i, &m)) || m) {
      int64_t n = 0;
      if (!cli_parse_i64_in(v, 0, 1024, &n))
        return cli_usage("convert", "--threads must be 0..1024, found '%s'", v ? v : "");
      o.threads = (int)n;
    } else if ((v = cli_opt_value(a, "--split", argc, argv, &i, &m)) || m) {
      if (!v || !*v) return cli_usage("convert", "--split needs a NAME");
      split = v;
    } else if (strcmp(a, "--no-dictionary") == 0) {
      o.no_dictionary = true;
    } else if (a[0] == '-' && a[1] != '\0') {
      return cli_usage("convert", "unknown option '%s' for Parquet output", a);
    } else if (in == NULL) {
      in = a;
    } else if (out == NULL) {
      out = a;
    } else {
      return cli_usage("convert", "unexpected argument '%s'", a);
    }
  }
  if (in == NULL || out == NULL) return cli_usage("convert", "IN and OUT are required");
  if (strcmp(out, "-") == 0) return cli_usage("convert", "Parquet output needs a path, not '-'");

  qv_error err;
  qv_path_kind in_kind = QV_PATH_ARROW_FILE;
  bool in_other = strcmp(in, "-") != 0 && !cli_is_directory(in) &&
                  qv_path_sniff(in, &in_kind, &err) == QV_OK &&
                  (in_kind == QV_PATH_PARQUET || in_kind == QV_PATH_CSV || in_kind == QV_PATH_JSON);
  if (cli_is_directory(in) || in_other) {
    /* a datasets directory (its rows as the dataset shows them), or a
     * Parquet / CSV / JSON Lines file read through the one open path */
    qv_dataset *ds = NULL;
    qv_status st = cli_open_dataset(in, split, NULL, &ds, &err);
    if (st != QV_OK) return cli_fail(st, &err);
    struct ArrowArrayStream stream;
    st = qv_dataset_export_stream(ds, 0, &stream, &err);
    qv_dataset_unref(ds);
    if (st == QV_OK) st = qv_parquet_write_arrow_stream_path(&stream, out, &o, NULL, &err);
    return st == QV_OK ? QV_EXIT_OK : cli_fail(st, &err);
  }
  if (split) return cli_usage("convert", "--split is for a datasets directory IN");
  qv_read_options ro = {QV_VALIDATE_FULL, true, 0};
  qv_reader *r = NULL;
  qv_status st = strcmp(in, "-") == 0 ? qv_reader_open_fd(0, &ro, &r, &err)
                                      : qv_reader_open_path(in, &ro, &r, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  qv_parquet_writer *w = NULL;
  st = qv_parquet_writer_open_path(out, qv_reader_schema(r), &o, &w, &err);
  cli_progress bar;
  cli_progress_start(&bar, "convert", qv_reader_size(r));
  bool random_access = qv_reader_num_batches(r) >= 0;
  int64_t rows = 0, bytes = 0;
  for (int64_t i = 0; st == QV_OK; i++) {
    qv_array *batch = NULL;
    st = qv_reader_next(r, &batch, &err);
    if (st != QV_OK || batch == NULL) break;
    st = qv_parquet_writer_write_batch(w, batch, &err);
    rows += batch->length;
    const qv_batch_location *loc = random_access ? qv_reader_batch_location(r, i) : NULL;
    if (loc) bytes = loc->body_offset + loc->body_length;
    qv_array_unref(batch);
    cli_progress_update(&bar, rows, bytes);
  }
  if (st == QV_OK) st = qv_parquet_writer_close(w, &err);
  else qv_parquet_writer_abort(w);
  if (st == QV_OK && bar.total_bytes > 0) bar.bytes = bar.total_bytes;
  cli_progress_finish(&bar, st == QV_OK);
  qv_reader_close(r);
  if (st != QV_OK) return cli_fail(st, &err);
  return QV_EXIT_OK;
}
