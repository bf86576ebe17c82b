/*
 * rows.c — `quiver head` and `quiver get`: rows of an IPC file or stream
 * as JSON lines (one JSON object per row; the value mapping is in
 * docs/json-rows.md). PATH is classified once by the dataset layer
 * (qv_path_classify): a plain Arrow file is read from the table it mapped
 * (`head` in batch order, stopping after N rows; `get` locating each row
 * with qv_table_locate and decoding only its batch); Hugging Face datasets
 * directories, indices mapping files (cache-*.arrow with one uint64
 * column "indices") and --data go through the dataset layer (hfdir.c).
 * `head` of a plain Arrow file or stream that cannot be an indices
 * mapping opens it with a lazy index (only the batches it prints are
 * located: O(1) in the stream's length); `head -` reads a stream from stdin
 * with the reader. --decode-labels
 * prints ClassLabel names (qv_hf_format_row_json). Top layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "quiver/dataset.h"
#include "quiver/hf.h"
#include "quiver/ipc.h"
#include "quiver/print.h"

static const char kHeadHelp[] =
    "usage: quiver head PATH [-n N | --rows N] [--decode-labels] [--split NAME] [--data DATA]\n"
    "\n"
    "Print the first N rows (default 10) of an Arrow IPC file or stream as\n"
    "JSON lines. PATH may be '-' for a stream on standard input, or a Hugging\n"
    "Face datasets directory (save_to_disk Dataset: its shards in order;\n"
    "DatasetDict or load_dataset cache directory: the split chosen with\n"
    "--split). An indices mapping (a cache-*.arrow file of shuffle, select,\n"
    "sort, filter...) prints the rows it maps, from the one dataset of its\n"
    "directory it can index.\n"
    "  -n N, --rows N   rows to print (also -nN, -n=N, --rows=N)\n"
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
    "lines, in the order given. A negative ROW counts from the end (-1 is the\n"
    "last row, as Python indexing); a row outside the dataset fails (exit 1).\n"
    "Only the batches holding those rows are read.\n"
    "PATH is what 'quiver head' accepts (except '-').\n"
    "  --split NAME     the split (or other dataset) of a directory\n"
    "  --data DATA      PATH is an indices mapping of DATA (see quiver head)\n"
    "  --decode-labels  print ClassLabel values as their label names\n";

/* With --decode-labels, the features datasets would use for the schema. */
static qv_status schema_features(const qv_schema *s, bool decode, qv_hf_feature **out,
                                 qv_error *err) {
  *out = NULL;
  if (!decode) return QV_OK;
  return qv_hf_features_resolve(s, out, NULL, err);
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

/* Rows of a stream read in order by `next` (a reader, or the batches of a
 * mapped table): the first n. `want` is the rows still to print: a reader
 * decodes (and decompresses) only those of a batch. */
typedef qv_status (*next_batch_fn)(void *src, int64_t i, int64_t want, qv_array **out,
                                   qv_error *err);

static qv_status reader_next(void *src, int64_t i, int64_t want, qv_array **out, qv_error *err) {
  (void)i;
  return qv_reader_next_select(src, NULL, 0, want, out, err);
}

static qv_status table_next(void *src, int64_t i, int64_t want, qv_array **out, qv_error *err) {
  (void)want;
  *out = NULL;
  if (i >= qv_table_num_batches(src)) return QV_OK;
  return qv_table_batch(src, i, out, err);
}

static qv_status head_rows(next_batch_fn next, void *src, const qv_schema *schema, bool decode,
                           int64_t n, qv_error *err) {
  qv_hf_feature *features = NULL;
  qv_status st = schema_features(schema, decode, &features, err);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  int64_t done = 0;
  for (int64_t bi = 0; st == QV_OK && done < n; bi++) {
    qv_array *b = NULL;
    st = next(src, bi, n - done, &b, err);
    if (st != QV_OK || b == NULL) break;
    for (int64_t i = 0; st == QV_OK && i < b->length && done < n; i++, done++)
      st = print_row(b, i, features, &sb, err);
    qv_array_unref(b);
  }
  qv_hf_feature_free(features);
  qv_strbuf_reset(&sb);
  return st;
}

/* Whether `head PATH` may read PATH as a plain Arrow file or stream with a
 * lazy index: it is one by its magic bytes and cannot be an indices mapping
 * (only cache-* files can: the layout's rule, docs/hf.md), so classifying
 * it (which maps it as a table and so indexes every batch) is not needed. */
static bool lazy_plain_file(const char *path) {
  const char *slash = strrchr(path, '/');
  if (strncmp(slash ? slash + 1 : path, "cache-", 6) == 0) return false;
  qv_path_kind kind;
  if (qv_path_sniff(path, &kind, NULL) != QV_OK) return false; /* classify says why */
  return kind == QV_PATH_ARROW_FILE || kind == QV_PATH_ARROW_STREAM;
}

/* Whether PATH is CSV or JSON Lines by its first bytes and name. */
static bool text_kind(const char *path, qv_path_kind *kind) {
  return qv_path_sniff(path, kind, NULL) == QV_OK &&
         (*kind == QV_PATH_CSV || *kind == QV_PATH_JSON);
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
    if ((v = cli_opt_value(argv[i], "-n", argc, argv, &i, &matched)) != NULL || matched ||
        (v = cli_opt_value(argv[i], "--rows", argc, argv, &i, &matched)) != NULL || matched) {
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
  qv_error err;
  qv_status st;
  qv_path_kind kind;
  if (strcmp(path, "-") == 0) {
    if (data != NULL)
      return cli_usage("head", "--data needs PATH to be an indices mapping file, not '-'");
    if (split != NULL) return cli_usage("head", "--split applies to directories (or to --data)");
    qv_read_options opts = {QV_VALIDATE_DEFAULT, true, 0};
    qv_reader *r = NULL;
    st = qv_reader_open_fd(STDIN_FILENO, &opts, &r, &err);
    if (st != QV_OK) return cli_fail(st, &err);
    st = head_rows(reader_next, r, qv_reader_schema(r), decode, n, &err);
    qv_reader_close(r);
  } else if (data == NULL && split == NULL && lazy_plain_file(path)) {
    qv_read_options opts = {QV_VALIDATE_DEFAULT, true, 0};
    qv_index_options io = {true, QV_INDEX_CACHE_DEFAULT};
    qv_reader *r = NULL;
    st = qv_reader_open_file(path, &opts, &io, &r, &err);
    if (st != QV_OK) return cli_fail(st, &err);
    st = head_rows(reader_next, r, qv_reader_schema(r), decode, n, &err);
    qv_reader_close(r);
  } else if (data == NULL && split == NULL && text_kind(path, &kind)) {
    /* the cached conversion, else only the first windows (dataset.h) */
    qv_table *t = NULL;
    st = qv_table_open_text_head(path, kind, n, &t, &err);
    if (st == QV_OK) st = head_rows(table_next, t, qv_table_schema(t), decode, n, &err);
    qv_table_unref(t);
  } else {
    qv_path_info info;
    st = qv_path_classify(path, &info, &err);
    if (st != QV_OK) return cli_fail(st, &err);
    if (data != NULL || info.dir != NULL || info.kind == QV_PATH_INDICES) {
      int rc = split != NULL && data == NULL && info.dir == NULL
                   ? cli_usage("head", "--split applies to directories (or to --data)")
                   : cli_rows_dataset(&info, split, data, decode, n, NULL, 0);
      qv_path_info_reset(&info);
      return rc;
    }
    if (split != NULL) {
      qv_path_info_reset(&info);
      return cli_usage("head", "--split applies to directories (or to --data)");
    }
    st = head_rows(table_next, info.table, qv_table_schema(info.table), decode, n, &err);
    qv_path_info_reset(&info);
  }
  if (st != QV_OK) return cli_fail(st, &err);
  return fflush(stdout) == 0 ? QV_EXIT_OK : QV_EXIT_DATA;
}

/* `get` of a plain Arrow file: each row located in the mapped table, its
 * batch decoded once for a run of rows in it. */
static qv_status get_rows(const char *path, qv_table *t, bool decode, const int64_t *rows,
                          int64_t n_rows, qv_error *err) {
  qv_hf_feature *features = NULL;
  qv_status st = schema_features(qv_table_schema(t), decode, &features, err);
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_array *cur = NULL;
  int64_t cur_batch = -1, total = qv_table_num_rows(t);
  for (int64_t k = 0; st == QV_OK && k < n_rows; k++) {
    int64_t row = 0, batch = 0, in_batch = 0;
    st = cli_resolve_row(path, "file", rows[k], total, &row, err);
    if (st == QV_OK) st = qv_table_locate(t, row, &batch, &in_batch, err);
    if (st == QV_OK && batch != cur_batch) {
      qv_array_unref(cur);
      cur = NULL;
      st = qv_table_batch(t, batch, &cur, err);
      cur_batch = st == QV_OK ? batch : -1;
    }
    if (st == QV_OK) st = print_row(cur, in_batch, features, &sb, err);
  }
  qv_hf_feature_free(features);
  qv_array_unref(cur);
  qv_strbuf_reset(&sb);
  return st;
}

int cmd_get(int argc, char **argv) {
  const char *path = NULL, *split = NULL, *data = NULL;
  bool decode = false;
  int64_t *rows = calloc((size_t)argc, sizeof *rows);
  int64_t n_rows = 0;
  if (rows == NULL) return QV_EXIT_DATA;
  int rc = -1;
  for (int i = 1; i < argc && rc < 0; i++) {
    bool matched;
    const char *v;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(kGetHelp, stdout);
      rc = QV_EXIT_OK;
    } else if (strcmp(argv[i], "--decode-labels") == 0) {
      decode = true;
    } else if ((v = cli_opt_value(argv[i], "--split", argc, argv, &i, &matched)) != NULL ||
               matched) {
      if (v == NULL) rc = cli_usage("get", "option --split needs a value");
      split = v;
    } else if ((v = cli_opt_value(argv[i], "--data", argc, argv, &i, &matched)) != NULL ||
               matched) {
      if (v == NULL) rc = cli_usage("get", "option --data needs a value");
      data = v;
    } else if (path != NULL && cli_parse_signed_i64(argv[i], &rows[n_rows])) {
      n_rows++; /* a ROW, negative ones included */
    } else if (argv[i][0] == '-' && argv[i][1] != '\0' &&
               !(argv[i][1] >= '0' && argv[i][1] <= '9')) {
      rc = cli_usage("get", "unknown option '%s'", argv[i]);
    } else if (path == NULL) {
      path = argv[i];
    } else {
      rc = cli_usage("get", "ROW must be an integer (negative counts from the end), found '%s'",
                     argv[i]);
    }
  }
  if (rc < 0 && (path == NULL || n_rows == 0))
    rc = cli_usage("get", path == NULL ? "missing PATH" : "missing ROW");
  if (rc < 0 && strcmp(path, "-") == 0)
    rc = cli_usage("get", "get needs random access: PATH must be a file, not '-'");
  if (rc >= 0) {
    free(rows);
    return rc;
  }
  qv_error err;
  qv_path_info info;
  qv_status st = qv_path_classify(path, &info, &err);
  if (st != QV_OK) {
    free(rows);
    return cli_fail(st, &err);
  }
  if (data != NULL || info.dir != NULL || info.kind == QV_PATH_INDICES) {
    rc = split != NULL && data == NULL && info.dir == NULL
             ? cli_usage("get", "--split applies to directories (or to --data)")
             : cli_rows_dataset(&info, split, data, decode, 0, rows, n_rows);
  } else if (split != NULL) {
    rc = cli_usage("get", "--split applies to directories (or to --data)");
  } else {
    st = get_rows(path, info.table, decode, rows, n_rows, &err);
    rc = st != QV_OK ? cli_fail(st, &err) : fflush(stdout) == 0 ? QV_EXIT_OK : QV_EXIT_DATA;
  }
  qv_path_info_reset(&info);
  free(rows);
  return rc;
}
