/*
 * debug.c — `quiver debug row-layout` (and the Hugging Face emitters
 * `debug hf-emit` / `debug hf-features`, implemented in hfdir.c): encode key columns of a file into
 * the row table (src/row) and print its layout and bytes as one JSON
 * object, so that the row format can be checked against seed 002 by hand.
 * Top layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "quiver/ipc.h"
#include "quiver/row.h"

static const char kDebugHelp[] =
    "usage: quiver debug row-layout PATH --keys=COL[,COL...] [--row-alignment=N]\n"
    "                               [--string-alignment=N] [--rows=START:END]\n"
    "\n"
    "Encode the key columns of an Arrow file as row-table rows (the row-major\n"
    "key format behind hash group-by and joins) and print one JSON object:\n"
    "row_alignment, string_alignment, null_masks_bytes_per_row, is_fixed_length,\n"
    "fixed_length, varbinary_end_array_offset, column_order, column_offsets,\n"
    "row_offsets (var-length tables), rows (hex bytes of each row) and\n"
    "null_masks (hex). Alignments default to 8; rows default to all.\n"
    "\n"
    "usage: quiver debug hf-emit PATH [--what=metadata|state|info|dict]\n"
    "\n"
    "Print byte for byte what quiver writes for Hugging Face datasets: the\n"
    "'huggingface' schema metadata of a file (default for files), or the\n"
    "state.json (default for directories) / dataset_info.json of a Dataset\n"
    "directory, or the dataset_dict.json of a DatasetDict.\n"
    "\n"
    "usage: quiver debug hf-features FILE|-\n"
    "\n"
    "Parse a datasets Features JSON object and print it as datasets writes it.\n";

static bool parse_pow2(const char *s, int32_t *out) {
  int64_t v;
  if (!cli_parse_i64(s, &v) || v < 1 || v > 64 || (v & (v - 1)) != 0) return false;
  *out = (int32_t)v;
  return true;
}

static int row_layout(int argc, char **argv) {
  const char *path = NULL, *keys = NULL, *rows = NULL;
  int32_t row_align = 8, str_align = 8;
  for (int i = 1; i < argc; i++) {
    bool m;
    const char *v;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(kDebugHelp, stdout);
      return QV_EXIT_OK;
    }
    if ((v = cli_opt_value(argv[i], "--keys", argc, argv, &i, &m)) != NULL || m) {
      keys = v;
    } else if ((v = cli_opt_value(argv[i], "--rows", argc, argv, &i, &m)) != NULL || m) {
      rows = v;
    } else if ((v = cli_opt_value(argv[i], "--row-alignment", argc, argv, &i, &m)) != NULL || m) {
      if (v == NULL || !parse_pow2(v, &row_align))
        return cli_usage("debug row-layout", "--row-alignment expects a power of two 1..64");
      continue;
    } else if ((v = cli_opt_value(argv[i], "--string-alignment", argc, argv, &i, &m)) != NULL ||
               m) {
      if (v == NULL || !parse_pow2(v, &str_align))
        return cli_usage("debug row-layout", "--string-alignment expects a power of two 1..64");
      continue;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return cli_usage("debug row-layout", "unknown option '%s'", argv[i]);
    } else if (path == NULL) {
      path = argv[i];
      continue;
    } else {
      return cli_usage("debug row-layout", "unexpected argument '%s'", argv[i]);
    }
    if (v == NULL) return cli_usage("debug row-layout", "option '%s' needs a value", argv[i]);
  }
  if (path == NULL) return cli_usage("debug row-layout", "missing PATH");
  if (keys == NULL || *keys == '\0') return cli_usage("debug row-layout", "missing --keys");
  if (str_align > row_align)
    return cli_usage("debug row-layout",
                     "--string-alignment (%d) must not exceed "
                     "--row-alignment (%d)",
                     str_align, row_align);
  int64_t start = 0, end = -1;
  if (rows != NULL) {
    const char *colon = strchr(rows, ':');
    char a[32] = {0};
    if (colon == NULL || (size_t)(colon - rows) >= sizeof a)
      return cli_usage("debug row-layout", "--rows expects START:END, found '%s'", rows);
    memcpy(a, rows, (size_t)(colon - rows));
    if (!cli_parse_i64(a, &start) || !cli_parse_i64(colon + 1, &end) || end < start)
      return cli_usage("debug row-layout", "--rows expects START:END with START <= END, found '%s'",
                       rows);
  }
  qv_error err;
  qv_reader *r = NULL;
  qv_status st = qv_reader_open_path(path, NULL, &r, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  const qv_schema *s = qv_reader_schema(r);
  /* Resolve key names to column indexes. */
  int32_t nk = 1;
  for (const char *p = keys; *p; p++) nk += *p == ',';
  int32_t *cols = calloc((size_t)nk, sizeof *cols);
  int64_t nb = qv_reader_num_batches(r);
  qv_array **batches = calloc((size_t)(nb > 0 ? nb : 1), sizeof *batches);
  qv_array **parts = calloc((size_t)(nb > 0 ? nb : 1), sizeof *parts);
  qv_array **key_arrays = calloc((size_t)nk, sizeof *key_arrays);
  char *out = NULL;
  int code = QV_EXIT_OK;
  if (!cols || !batches || !parts || !key_arrays) {
    st = qv_error_set(&err, QV_ENOMEM, "out of memory");
    goto done;
  }
  const char *p = keys;
  for (int32_t k = 0; k < nk; k++) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char name[512];
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, p, len);
    name[len] = '\0';
    cols[k] = qv_schema_find(s, name);
    if (cols[k] < 0) {
      fprintf(stderr, "quiver: %s: no column named '%s'\n", path, name);
      code = QV_EXIT_USAGE;
      goto done;
    }
    p = comma ? comma + 1 : p + len;
  }
  for (int64_t i = 0; st == QV_OK && i < nb; i++) st = qv_reader_batch(r, i, &batches[i], &err);
  int64_t total = qv_reader_num_rows(r);
  if (end < 0) end = total;
  if (st == QV_OK && end > total)
    st = qv_error_set(&err, QV_ERANGE, "%s: --rows end %lld is past the last row (%lld rows)", path,
                      (long long)end, (long long)total);
  for (int32_t k = 0; st == QV_OK && k < nk; k++) {
    if (nb == 0) {
      key_arrays[k] = NULL;
      st = qv_error_set(&err, QV_EINVAL, "%s: the file has no record batches", path);
      break;
    }
    for (int64_t i = 0; i < nb; i++) parts[i] = batches[i]->children[cols[k]];
    if (nb == 1) key_arrays[k] = qv_array_ref(parts[0]);
    else st = qv_array_concat(parts, nb, &key_arrays[k], &err);
  }
  if (st == QV_OK)
    st = qv_row_layout_json(key_arrays, nk, row_align, str_align, start, end, &out, &err);
  if (st == QV_OK) printf("%s\n", out);
  else code = cli_fail(st, &err);
done:
  free(out);
  for (int32_t k = 0; key_arrays && k < nk; k++) qv_array_unref(key_arrays[k]);
  for (int64_t i = 0; batches && i < nb; i++) qv_array_unref(batches[i]);
  free(key_arrays);
  free(parts);
  free(batches);
  free(cols);
  qv_reader_close(r);
  if (st != QV_OK && code == QV_EXIT_OK) code = cli_fail(st, &err);
  return code;
}

int cmd_debug(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(kDebugHelp, argc < 2 ? stderr : stdout);
    return argc < 2 ? QV_EXIT_USAGE : QV_EXIT_OK;
  }
  if (strcmp(argv[1], "row-layout") == 0) return row_layout(argc - 1, argv + 1);
  if (strcmp(argv[1], "hf-emit") == 0) return cli_debug_hf_emit(argc - 1, argv + 1);
  if (strcmp(argv[1], "hf-features") == 0) return cli_debug_hf_features(argc - 1, argv + 1);
  return cli_usage(
      "debug", "unknown debug command '%s' (expected row-layout, hf-emit or hf-features)", argv[1]);
}
