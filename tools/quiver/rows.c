/*
 * rows.c — `quiver head` and `quiver get`: rows of an IPC file or stream
 * as JSON lines (one JSON object per row; the value mapping is in
 * docs/json-rows.md). `head` reads batches in order and stops after N
 * rows, so it also works on a stream from stdin ("-"); `get` locates each
 * requested row's batch through the row-count index and decodes only that
 * batch. Hugging Face datasets directories, indices mapping files
 * (cache-*.arrow with one uint64 column "indices") and --data go through
 * the dataset layer (hfdir.c); --decode-labels prints ClassLabel names
 * (qv_hf_format_row_json). Top layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "quiver/hf.h"
#include "quiver/ipc.h"
#include "quiver/print.h"

static const char kHeadHelp[] =
    "usage: quiver head PATH [-n N] [--decode-labels] [--split NAME] [--data DATA]\n"
    "\n"
    "Print the first N rows (default 10) of an Arrow IPC file or stream as\n"
    "JSON lines. PATH may be '-' for a stream on standard input, or a Hugging\n"
    "Face datasets directory (save_to_disk Dataset: its shards in order;\n"
    "DatasetDict or load_dataset cache directory: the split chosen with\n"
    "--split). An indices mapping (a cache-*.arrow file of shuffle, select,\n"
    "sort, filter...) prints the rows it maps, from the one dataset of its\n"
    "directory it can index.\n"
    "  --split NAME     the split (or other dataset) of a directory\n"
    "  --data DATA      PATH is an indices mapping of DATA (a file or directory;\n"
    "                   --split then chooses DATA's split)\n"
    "  --decode-labels  print ClassLabel values as their label names\n"
    "Value mapping: strings as JSON strings, binary as base64, temporal values\n"
    "as ISO 8601, decimals as strings, lists as arrays, structs as objects\n"
    "(see docs/json-rows.md).\n";

static const char kGetHelp[] =
    "usage: quiver get PATH ROW... [--decode-labels] [--split NAME] [--data DATA]\n"
    "\n"
    "Print the given rows (0-based row numbers across the whole file, or the\n"
    "whole datasets directory, or as an indices mapping orders them) as JSON\n"
    "lines, in the order given. Only the batches holding those rows are read.\n"
    "PATH is what 'quiver head' accepts (except '-').\n"
    "  --split NAME     the split (or other dataset) of a directory\n"
    "  --data DATA      PATH is an indices mapping of DATA (see quiver head)\n"
    "  --decode-labels  print ClassLabel values as their label names\n";

static qv_status open_input(const char *path, qv_reader **r, qv_error *err) {
  qv_read_options opts = {QV_VALIDATE_DEFAULT, true, 0};
  if (strcmp(path, "-") == 0) return qv_reader_open_fd(STDIN_FILENO, &opts, r, err);
  return qv_reader_open_path(path, &opts, r, err);
}

/* With --decode-labels, the features datasets would use for the file. */
static qv_status file_features(qv_reader *r, bool decode, qv_hf_feature **out, qv_error *err) {
  *out = NULL;
  if (!decode) return QV_OK;
  return qv_hf_features_resolve(qv_reader_schema(r), out, NULL, err);
}

static qv_status print_row(const qv_array *batch, int64_t row, const qv_hf_feature *features,
                           qv_strbuf *sb, qv_error *err) {
  qv_strbuf_clear(sb);
  QV_RETURN_NOT_OK(features ? qv_hf_format_row_json(batch, row, features, sb, err)
                            : qv_format_row_json(batch, row, sb, err));
  QV_RETURN_NOT_OK(qv_strbuf_append_char(sb, '\n', err));
  if (fwrite(qv_strbuf_cstr(sb), 1, (size_t)sb->len, stdout) != (size_t)sb->len)
    return qv_error_set(err, QV_EIO, "cannot write to standard output");
  return QV_OK;
}

int cmd_head(int argc, char **argv) {
  const char *path = NULL, *split = NULL, *data = NULL;
  bool decode = false;
  int64_t n = 10;
  for (int i = 1; i < argc; i++) {
    bool matched;
    const char *v;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(kHeadHelp, stdout);
      return QV_EXIT_OK;
    }
    if ((v = cli_opt_value(argv[i], "-n", argc, argv, &i, &matched)) != NULL || matched) {
      if (v == NULL) return cli_usage("head", "option -n needs a value");
      if (!cli_parse_i64(v, &n))
        return cli_usage("head", "-n expects a non-negative integer, found '%s'", v);
    } else if (strcmp(argv[i], "--decode-labels") == 0) {
      decode = true;
    } else if ((v = cli_opt_value(argv[i], "--split", argc, argv, &i, &matched)) != NULL ||
               matched) {
      if (v == NULL) return cli_usage("head", "option --split needs a value");
      split = v;
    } else if ((v = cli_opt_value(argv[i], "--data", argc, argv, &i, &matched)) != NULL ||
               matched) {
      if (v == NULL) return cli_usage("head", "option --data needs a value");
      data = v;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return cli_usage("head", "unknown option '%s'", argv[i]);
    } else if (path == NULL) {
      path = argv[i];
    } else {
      return cli_usage("head", "unexpected argument '%s'", argv[i]);
    }
  }
  if (path == NULL) return cli_usage("head", "missing PATH");
  if (data != NULL && strcmp(path, "-") == 0)
    return cli_usage("head", "--data needs PATH to be an indices mapping file, not '-'");
  if (data != NULL || cli_is_directory(path) || cli_is_indices_file(path)) {
    if (split != NULL && data == NULL && !cli_is_directory(path))
      return cli_usage("head", "--split applies to directories (or to --data)");
    return cli_rows_dataset(path, split, data, decode, n, NULL, 0);
  }
  if (split != NULL) return cli_usage("head", "--split applies to directories (or to --data)");
  qv_error err;
  qv_reader *r = NULL;
  qv_status st = open_input(path, &r, &err);
  if (st != QV_OK) return cli_fail(st, &err);
  qv_hf_feature *features = NULL;
  st = file_features(r, decode, &features, &err);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  int64_t done = 0;
  while (st == QV_OK && done < n) {
    qv_array *b = NULL;
    st = qv_reader_next_select(r, NULL, 0, n - done, &b, &err);
    if (st != QV_OK || b == NULL) break;
    for (int64_t i = 0; st == QV_OK && i < b->length && done < n; i++, done++)
      st = print_row(b, i, features, &sb, &err);
    qv_array_unref(b);
  }
  qv_hf_feature_free(features);
  qv_strbuf_reset(&sb);
  qv_reader_close(r);
  if (st != QV_OK) return cli_fail(st, &err);
  return fflush(stdout) == 0 ? QV_EXIT_OK : QV_EXIT_DATA;
}

int cmd_get(int argc, char **argv) {
  const char *path = NULL, *split = NULL, *data = NULL;
  bool decode = false;
  int64_t *rows = calloc((size_t)argc, sizeof *rows);
  int64_t n_rows = 0;
  if (rows == NULL) return QV_EXIT_DATA;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(kGetHelp, stdout);
      free(rows);
      return QV_EXIT_OK;
    }
    bool matched;
    const char *v;
    if (strcmp(argv[i], "--decode-labels") == 0) {
      decode = true;
      continue;
    }
    if ((v = cli_opt_value(argv[i], "--split", argc, argv, &i, &matched)) != NULL || matched) {
      if (v == NULL) {
        free(rows);
        return cli_usage("get", "option --split needs a value");
      }
      split = v;
      continue;
    }
    if ((v = cli_opt_value(argv[i], "--data", argc, argv, &i, &matched)) != NULL || matched) {
      if (v == NULL) {
        free(rows);
        return cli_usage("get", "option --data needs a value");
      }
      data = v;
      continue;
    }
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      free(rows);
      return cli_usage("get", "unknown option '%s'", argv[i]);
    }
    if (path == NULL) {
      path = argv[i];
    } else if (!cli_parse_i64(argv[i], &rows[n_rows++])) {
      free(rows);
      return cli_usage("get", "ROW must be a non-negative integer, found '%s'", argv[i]);
    }
  }
  if (path == NULL || n_rows == 0) {
    free(rows);
    return cli_usage("get", path == NULL ? "missing PATH" : "missing ROW");
  }
  if (strcmp(path, "-") == 0) {
    free(rows);
    return cli_usage("get", "get needs random access: PATH must be a file, not '-'");
  }
  if (data != NULL || cli_is_directory(path) || cli_is_indices_file(path)) {
    int rc = split != NULL && data == NULL && !cli_is_directory(path)
                 ? cli_usage("get", "--split applies to directories (or to --data)")
                 : cli_rows_dataset(path, split, data, decode, 0, rows, n_rows);
    free(rows);
    return rc;
  }
  if (split != NULL) {
    free(rows);
    return cli_usage("get", "--split applies to directories (or to --data)");
  }
  qv_error err;
  qv_reader *r = NULL;
  qv_status st = open_input(path, &r, &err);
  if (st != QV_OK) {
    free(rows);
    return cli_fail(st, &err);
  }
  qv_hf_feature *features = NULL;
  st = file_features(r, decode, &features, &err);
  int64_t nb = qv_reader_num_batches(r), total = qv_reader_num_rows(r);
  int64_t *prefix = malloc(sizeof *prefix * (size_t)(nb + 1));
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  if (st == QV_OK && prefix == NULL) st = qv_error_set(&err, QV_ENOMEM, "out of memory");
  if (st == QV_OK) {
    prefix[0] = 0;
    for (int64_t i = 0; i < nb; i++) prefix[i + 1] = prefix[i] + qv_reader_batch_rows(r, i);
  }
  qv_array *cur = NULL;
  int64_t cur_batch = -1;
  for (int64_t k = 0; st == QV_OK && k < n_rows; k++) {
    int64_t row = rows[k];
    if (row >= total) {
      st = qv_error_set(&err, QV_ERANGE, "%s: row %lld is out of range (the file has %lld rows)",
                        path, (long long)row, (long long)total);
      break;
    }
    int64_t lo = 0, hi = nb; /* the batch b with prefix[b] <= row < prefix[b+1] */
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      if (prefix[mid] <= row) lo = mid;
      else hi = mid;
    }
    while (lo + 1 < nb && prefix[lo + 1] <= row) lo++; /* skip empty batches */
    if (lo != cur_batch) {
      qv_array_unref(cur);
      cur = NULL;
      st = qv_reader_batch(r, lo, &cur, &err);
      if (st != QV_OK) break;
      cur_batch = lo;
    }
    st = print_row(cur, row - prefix[lo], features, &sb, &err);
  }
  qv_hf_feature_free(features);
  qv_array_unref(cur);
  qv_strbuf_reset(&sb);
  free(prefix);
  free(rows);
  qv_reader_close(r);
  if (st != QV_OK) return cli_fail(st, &err);
  return fflush(stdout) == 0 ? QV_EXIT_OK : QV_EXIT_DATA;
}
