/*
 * import.c — `quiver import SRC... -o DST [--split NAME]`: the save_to_disk
 * directory `datasets.load_dataset("csv"|"json"|..., data_files=[SRC...])
 * .save_to_disk(DST)` writes — a DatasetDict with one split (default
 * "train") holding the files' rows in order. CSV is read with the types
 * datasets gets through pandas.read_csv (qv_csv_read_options.pandas_types);
 * every other SRC (JSON Lines, Arrow, and any format the open path reads)
 * goes through the dataset layer's one open. As datasets does, a text SRC
 * is first converted, streaming, into a cached Arrow file that is mapped
 * (qv_dataset_open_text), and the shards are written from the mapping
 * batch by batch: memory stays O(cores x block), not the file. The
 * directory is written by the dataset layer's save (atomic). Top layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "quiver/dataset.h"

static const char kHelp[] =
    "usage: quiver import SRC... -o DST [--split NAME] [--num-shards N]\n"
    "\n"
    "Write the save_to_disk directory that\n"
    "  datasets.load_dataset(\"csv\"|\"json\", data_files=[SRC...]).save_to_disk(DST)\n"
    "writes: a DatasetDict with one split NAME (default 'train') of the rows of\n"
    "every SRC in order, with the same features (CSV typed as pandas.read_csv\n"
    "types it, JSON Lines as pyarrow.json does) and shard layout. SRC may be CSV\n"
    "(.csv, .tsv), JSON Lines (.json, .jsonl) or anything else quiver opens.\n"
    "DST is replaced atomically. A CSV or JSON Lines SRC is first converted,\n"
    "streaming, into a cached Arrow file (~/.cache/quiver/text-*.arrow, reused\n"
    "while SRC is unchanged) and the shards are written from its mapping, so\n"
    "memory stays far below the file's size.\n";

static qv_status open_src(const char *path, qv_dataset **out, qv_error *err) {
  if (!cli_has_suffix(path, ".csv") && !cli_has_suffix(path, ".tsv"))
    return cli_open_dataset(path, NULL, NULL, out, err);
  /* streamed into the cached Arrow conversion and mapped (dataset.h) */
  qv_text_open_options o;
  memset(&o, 0, sizeof o);
  o.pandas_types = true;
  return qv_dataset_open_text(path, QV_PATH_CSV, &o, out, err);
}

int cmd_import(int argc, char **argv) {
  const char *dst = NULL, *split = "train";
  int64_t num_shards = 0;
  const char **srcs = calloc((size_t)argc + 1, sizeof *srcs);
  if (srcs == NULL) return cli_usage("import", "out of memory");
  int n = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    bool m = false;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(kHelp, stdout);
      free(srcs);
      return QV_EXIT_OK;
    }
    if ((v = cli_opt_value(a, "-o", argc, argv, &i, &m)) || m ||
        (v = cli_opt_value(a, "--output", argc, argv, &i, &m)) || m) {
      if (!v) {
        free(srcs);
        return cli_usage("import", "-o needs a directory");
      }
      dst = v;
    } else if ((v = cli_opt_value(a, "--split", argc, argv, &i, &m)) || m) {
      if (!v || !*v || strchr(v, '/')) {
        free(srcs);
        return cli_usage("import", "--split needs a name without '/'");
      }
      split = v;
    } else if ((v = cli_opt_value(a, "--num-shards", argc, argv, &i, &m)) || m) {
      if (!v || !cli_parse_i64(v, &num_shards) || num_shards <= 0) {
        free(srcs);
        return cli_usage("import", "--num-shards must be a positive integer");
      }
    } else if (a[0] == '-' && a[1] != '\0') {
      free(srcs);
      return cli_usage("import", "unknown option '%s'", a);
    } else {
      srcs[n++] = a;
    }
  }
  if (n == 0 || dst == NULL) {
    free(srcs);
    return cli_usage("import", "SRC... and -o DST are required");
  }
  qv_error err;
  qv_status st = QV_OK;
  qv_dataset **parts = calloc((size_t)n, sizeof *parts);
  if (parts == NULL) st = qv_error_set(&err, QV_ENOMEM, "out of memory");
  for (int i = 0; st == QV_OK && i < n; i++) st = open_src(srcs[i], &parts[i], &err);
  qv_dataset *all = NULL;
  if (st == QV_OK && n == 1) all = qv_dataset_ref(parts[0]);
  else if (st == QV_OK) st = qv_dataset_concatenate(parts, n, 0, NULL, &all, &err);
  qv_save_options so;
  memset(&so, 0, sizeof so);
  so.num_shards = num_shards;
  if (st == QV_OK) {
    const char *names[1] = {split};
    st = qv_dataset_dict_save_to_disk(&all, names, 1, dst, &so, &err);
  }
  if (st == QV_OK)
    fprintf(stderr, "import: %lld rows from %d file%s -> %s (split '%s')\n",
            (long long)qv_dataset_num_rows(all), n, n == 1 ? "" : "s", dst, split);
  qv_dataset_unref(all);
  for (int i = 0; parts && i < n; i++) qv_dataset_unref(parts[i]);
  free(parts);
  free(srcs);
  if (st != QV_OK) return cli_fail(st, &err);
  return QV_EXIT_OK;
}
