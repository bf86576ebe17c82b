/*
 * integration.c — `quiver integration`: Apache Arrow's cross-implementation
 * integration contract (docs/source/format/Integration.rst), the same as
 * Arrow's own integration tools:
 *   --mode=VALIDATE       exit 0 iff the Arrow file's schema and every batch
 *                         equal the JSON's; otherwise print the first
 *                         difference and exit 1
 *   --mode=ARROW_TO_JSON  write the Arrow file's content as integration JSON
 * The JSON may be gzipped (detected by content); ARROW_TO_JSON gzips when
 * the --json path ends in ".gz". Top layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "quiver/integration.h"
#include "quiver/ipc.h"
#include "quiver/writer.h"

static const char kIntegrationHelp[] =
    "usage: quiver integration --mode=MODE --arrow=PATH --json=PATH\n"
    "\n"
    "The Arrow integration-test contract:\n"
    "  VALIDATE        the Arrow file (IPC file or stream) must equal the JSON:\n"
    "                  exit 0 if equal, else print the first difference, exit 1\n"
    "  ARROW_TO_JSON   write the Arrow file's schema and batches as JSON\n"
    "                  (gzipped when the --json path ends in .gz)\n"
    "  JSON_TO_ARROW   write the JSON's schema and batches as an Arrow IPC file\n"
    "                  (--format=stream for a stream), batches kept as they are;\n"
    "                  the Arrow path is replaced atomically\n"
    "The JSON is Arrow's integration format, optionally gzipped.\n";

/* Read every batch of an Arrow file (FULL validation: untrusted input). */
static qv_status read_arrow(const char *path, qv_reader **r, qv_array ***batches, int64_t *n,
                            qv_error *err) {
  qv_read_options opts = {QV_VALIDATE_FULL, true, 0};
  QV_RETURN_NOT_OK(qv_reader_open_path(path, &opts, r, err));
  int64_t nb = qv_reader_num_batches(*r);
  *batches = calloc((size_t)(nb > 0 ? nb : 1), sizeof **batches);
  if (*batches == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  *n = 0;
  for (int64_t i = 0; i < nb; i++) {
    QV_RETURN_NOT_OK(qv_reader_batch(*r, i, &(*batches)[i], err));
    *n = i + 1;
  }
  return QV_OK;
}

static void free_batches(qv_array **b, int64_t n) {
  for (int64_t i = 0; i < n; i++) qv_array_unref(b[i]);
  free(b);
}

static int validate(const char *arrow, const char *json) {
  qv_error err;
  qv_json_data jd;
  memset(&jd, 0, sizeof jd);
  qv_status st = qv_json_read(json, NULL, &jd, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  qv_reader *r = NULL;
  qv_array **batches = NULL;
  int64_t n = 0;
  int code = QV_EXIT_OK;
  st = read_arrow(arrow, &r, &batches, &n, &err);
  if (st != QV_OK) {
    code = cli_fail(st, &err);
  } else if (!qv_schema_diff(jd.schema, qv_reader_schema(r), &err)) {
    fprintf(stderr, "quiver: %s: schema differs from %s: %s\n", arrow, json, err.message);
    code = QV_EXIT_DATA;
  } else if (n != jd.n_batches) {
    fprintf(stderr, "quiver: %s: %lld record batches, but %s has %lld\n", arrow, (long long)n, json,
            (long long)jd.n_batches);
    code = QV_EXIT_DATA;
  } else {
    for (int64_t i = 0; i < n; i++) {
      if (!qv_array_equals(jd.batches[i], batches[i], &err)) {
        fprintf(stderr, "quiver: %s: record batch %lld differs from %s: %s\n", arrow, (long long)i,
                json, err.message);
        code = QV_EXIT_DATA;
        break;
      }
    }
  }
  free_batches(batches, n);
  qv_reader_close(r);
  qv_json_data_reset(&jd);
  return code;
}

static int arrow_to_json(const char *arrow, const char *json) {
  qv_error err;
  qv_reader *r = NULL;
  qv_array **batches = NULL;
  int64_t n = 0;
  qv_status st = read_arrow(arrow, &r, &batches, &n, &err);
  if (st == QV_OK) {
    size_t len = strlen(json);
    qv_json_write_options o = {len > 3 && strcmp(json + len - 3, ".gz") == 0};
    st = qv_json_write(json, qv_reader_schema(r), batches, n, &o, &err);
  }
  free_batches(batches, n);
  qv_reader_close(r);
  return st == QV_OK ? QV_EXIT_OK : cli_fail(st, &err);
}

static int json_to_arrow(const char *json, const char *arrow, qv_ipc_format format) {
  qv_error err;
  qv_json_data jd;
  memset(&jd, 0, sizeof jd);
  qv_status st = qv_json_read(json, NULL, &jd, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  qv_write_options wo;
  memset(&wo, 0, sizeof wo);
  wo.format = format;
  wo.max_batch_rows = -1; /* keep the JSON's batches */
  qv_writer *w = NULL;
  st = qv_writer_open_path(arrow, jd.schema, &wo, &w, &err);
  for (int64_t i = 0; st == QV_OK && i < jd.n_batches; i++)
    st = qv_writer_write_batch(w, jd.batches[i], &err);
  if (st == QV_OK) st = qv_writer_close(w, &err);
  else qv_writer_abort(w);
  qv_json_data_reset(&jd);
  return st == QV_OK ? QV_EXIT_OK : cli_fail(st, &err);
}

int cmd_integration(int argc, char **argv) {
  const char *mode = NULL, *arrow = NULL, *json = NULL, *format = NULL;
  for (int i = 1; i < argc; i++) {
    bool m;
    const char *v;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(kIntegrationHelp, stdout);
      return QV_EXIT_OK;
    }
    if ((v = cli_opt_value(argv[i], "--mode", argc, argv, &i, &m)) != NULL || m) mode = v;
    else if ((v = cli_opt_value(argv[i], "--arrow", argc, argv, &i, &m)) != NULL || m) arrow = v;
    else if ((v = cli_opt_value(argv[i], "--json", argc, argv, &i, &m)) != NULL || m) json = v;
    else if ((v = cli_opt_value(argv[i], "--format", argc, argv, &i, &m)) != NULL || m) format = v;
    else return cli_usage("integration", "unknown argument '%s'", argv[i]);
    if (v == NULL) return cli_usage("integration", "option '%s' needs a value", argv[i]);
  }
  if (mode == NULL) return cli_usage("integration", "missing --mode");
  if (arrow == NULL) return cli_usage("integration", "missing --arrow");
  if (json == NULL) return cli_usage("integration", "missing --json");
  if (strcmp(mode, "VALIDATE") == 0) return validate(arrow, json);
  if (strcmp(mode, "ARROW_TO_JSON") == 0) return arrow_to_json(arrow, json);
  if (strcmp(mode, "JSON_TO_ARROW") == 0) {
    qv_ipc_format f = QV_FORMAT_FILE;
    if (format != NULL && strcmp(format, "stream") == 0) f = QV_FORMAT_STREAM;
    else if (format != NULL && strcmp(format, "file") != 0)
      return cli_usage("integration", "--format must be 'file' or 'stream', found '%s'", format);
    return json_to_arrow(json, arrow, f);
  }
  return cli_usage("integration",
                   "unknown mode '%s' (expected VALIDATE, ARROW_TO_JSON or JSON_TO_ARROW)", mode);
}
