/*
 * convert.c — `quiver convert IN OUT`: read an Arrow IPC file or stream and
 * write it again as the file or stream format, optionally compressed and
 * re-batched. IN '-' reads a stream from stdin; OUT '-' writes a stream to
 * stdout. Output to a path is atomic (the writer's temporary + rename), so
 * a failure leaves no partial output. A progress bar (progress.h) shows on
 * a terminal when the conversion takes more than a moment. Top layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"
#include "quiver/ipc.h"
#include "quiver/table.h"
#include "quiver/writer.h"

static const char kConvertHelp[] =
    "usage: quiver convert IN OUT [--format=file|stream]\n"
    "                     [--compression=none|lz4|zstd[:LEVEL]] [--batch-size=N]\n"
    "\n"
    "Rewrite an Arrow IPC file or stream, or read a Parquet file (IN starting\n"
    "with PAR1: the types pyarrow.parquet.read_table gives) into Arrow.\n"
    "IN '-' reads a stream from stdin;\n"
    "OUT '-' writes a stream to stdout. Defaults: the file format (a stream\n"
    "for '-'), no compression, 1000 rows per record batch (Parquet input:\n"
    "one per row group). The output file is replaced atomically: on any\n"
    "error the previous OUT is untouched.\n"
    "On a terminal, a progress bar shows on stderr for longer conversions\n"
    "(QV_PROGRESS=0 turns it off).\n"
    "OUT ending in .parquet (or --to=parquet) writes Parquet: see\n"
    "'quiver convert x.arrow y.parquet --help'.\n";

bool cli_parse_ipc_compression(const char *s, qv_compression *c, int *level) {
  const char *colon = strchr(s, ':');
  size_t n = colon ? (size_t)(colon - s) : strlen(s);
  *level = 0;
  if (n == 4 && strncmp(s, "none", 4) == 0) *c = QV_COMPRESSION_NONE;
  else if (n == 3 && strncmp(s, "lz4", 3) == 0) *c = QV_COMPRESSION_LZ4_FRAME;
  else if (n == 4 && strncmp(s, "zstd", 4) == 0) *c = QV_COMPRESSION_ZSTD;
  else return false;
  if (colon) {
    if (*c == QV_COMPRESSION_NONE) return false;
    char *end = NULL;
    long v = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || v < -131072 || v > 22) return false;
    *level = (int)v;
  }
  return true;
}

/* True when the file at `path` starts with Parquet's magic "PAR1". */
static bool is_parquet_path(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (fp == NULL) return false;
  char magic[4];
  bool yes = fread(magic, 1, 4, fp) == 4 &&
             (memcmp(magic, "PAR1", 4) == 0 || memcmp(magic, "PARE", 4) == 0);
  fclose(fp);
  return yes;
}

/* Parquet input: the file read as pyarrow reads it (one batch per row
 * group), streamed to the writer a few row groups at a time. */
typedef struct pq_sink {
  const char *out;
  bool to_stdout;
  const qv_write_options *wo;
  qv_writer *w;
} pq_sink;

static qv_status pq_sink_batch(void *ctx, const qv_schema *schema, qv_array *batch, qv_error *err) {
  pq_sink *k = ctx;
  if (batch == NULL)
    return k->to_stdout ? qv_writer_open_fd(1, schema, k->wo, &k->w, err)
                        : qv_writer_open_path(k->out, schema, k->wo, &k->w, err);
  return qv_writer_write_batch(k->w, batch, err);
}

static qv_status convert_parquet(const char *in, const char *out, bool to_stdout,
                                 const qv_write_options *wo, qv_error *err) {
  pq_sink k = {out, to_stdout, wo, NULL};
  qv_status st = qv_table_scan_parquet(in, 0, pq_sink_batch, &k, err);
  if (st == QV_OK && k.w) st = qv_writer_close(k.w, err);
  else if (k.w) qv_writer_abort(k.w);
  return st;
}

int cmd_convert(int argc, char **argv) {
  if (cli_convert_to_parquet(argc, argv))
    return cmd_convert_parquet(argc, argv);                                 /* convert_parquet.c */
  if (cli_convert_is_text(argc, argv)) return cmd_convert_text(argc, argv); /* convert_text.c */
  const char *in = NULL, *out = NULL;
  qv_write_options wo;
  memset(&wo, 0, sizeof wo);
  bool format_set = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool m = false;
    const char *v;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(kConvertHelp, stdout);
      return QV_EXIT_OK;
    }
    if ((v = cli_opt_value(a, "--format", argc, argv, &i, &m)) || m) {
      if (v && strcmp(v, "file") == 0) wo.format = QV_FORMAT_FILE;
      else if (v && strcmp(v, "stream") == 0) wo.format = QV_FORMAT_STREAM;
      else return cli_usage("convert", "--format must be 'file' or 'stream'");
      format_set = true;
    } else if ((v = cli_opt_value(a, "--compression", argc, argv, &i, &m)) || m) {
      if (!v || !cli_parse_ipc_compression(v, &wo.compression, &wo.compression_level))
        return cli_usage("convert", "--compression must be none, lz4 or zstd[:LEVEL], found '%s'",
                         v ? v : "");
    } else if ((v = cli_opt_value(a, "--batch-size", argc, argv, &i, &m)) || m) {
      int64_t n = 0;
      if (!v || !cli_parse_i64(v, &n) || n <= 0)
        return cli_usage("convert", "--batch-size must be a positive integer, found '%s'",
                         v ? v : "");
      wo.max_batch_rows = n;
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
  bool to_stdout = strcmp(out, "-") == 0;
  if (to_stdout) {
    if (format_set && wo.format == QV_FORMAT_FILE)
      return cli_usage("convert", "stdout ('-') takes the stream format only");
    wo.format = QV_FORMAT_STREAM;
  }

  qv_error err;
  if (strcmp(in, "-") != 0 && is_parquet_path(in)) {
    if (wo.max_batch_rows == 0) wo.max_batch_rows = -1; /* one batch per row group */
    qv_status pst = convert_parquet(in, out, to_stdout, &wo, &err);
    return pst == QV_OK ? QV_EXIT_OK : cli_fail(pst, &err);
  }
  qv_read_options ro = {QV_VALIDATE_FULL, true, 0};
  qv_reader *r = NULL;
  qv_status st = strcmp(in, "-") == 0 ? qv_reader_open_fd(0, &ro, &r, &err)
                                      : qv_reader_open_path(in, &ro, &r, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  qv_writer *w = NULL;
  st = to_stdout ? qv_writer_open_fd(1, qv_reader_schema(r), &wo, &w, &err)
                 : qv_writer_open_path(out, qv_reader_schema(r), &wo, &w, &err);
  cli_progress bar;
  cli_progress_start(&bar, "convert", qv_reader_size(r));
  bool random_access = qv_reader_num_batches(r) >= 0;
  int64_t rows = 0, bytes = 0;
  for (int64_t i = 0; st == QV_OK; i++) {
    qv_array *batch = NULL;
    st = qv_reader_next(r, &batch, &err);
    if (st != QV_OK || batch == NULL) break;
    st = qv_writer_write_batch(w, batch, &err);
    rows += batch->length;
    /* bytes of input done: where the batch ends in a mapped file, else the
     * size of what was read */
    const qv_batch_location *loc = random_access ? qv_reader_batch_location(r, i) : NULL;
    bytes = loc ? loc->body_offset + loc->body_length : bytes + qv_array_buffer_bytes(batch);
    qv_array_unref(batch);
    cli_progress_update(&bar, rows, bytes);
  }
  if (st == QV_OK) {
    st = qv_writer_close(w, &err);
  } else {
    qv_writer_abort(w);
  }
  if (st == QV_OK && bar.total_bytes > 0) bar.bytes = bar.total_bytes;
  cli_progress_finish(&bar, st == QV_OK);
  qv_reader_close(r);
  if (st != QV_OK) return cli_fail(st, &err);
  return QV_EXIT_OK;
}
