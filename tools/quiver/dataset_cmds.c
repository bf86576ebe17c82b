/*
 * dataset_cmds.c — the dataset commands of the CLI: `quiver select |
 * shuffle | sort | filter | shard | split | concat | flatten SRC... -o DST`.
 * `quiver map SRC --set NAME=EXPR ... -o DST` is datasets' batched map
 * with a function made of expressions (quiver/expr.h): each --set
 * evaluates one over the batch and adds or replaces column NAME
 * (qv_dataset_map_exprs).
 * Each opens SRC (an Arrow IPC file, a save_to_disk Dataset directory, or
 * a DatasetDict directory: one split with --split, else every split),
 * applies the transform through the dataset layer (quiver/dataset.h) and
 * writes DST in the save_to_disk layout (indices flattened, features and
 * the new fingerprint in state.json), so `datasets.load_from_disk(DST)`
 * opens it. Intermediate results (indices mappings, map outputs) stay in
 * memory unless --cache is given: then they are written beside SRC's data
 * files as `cache-<fingerprint>.arrow` and reused by the next run, as
 * datasets does by default. A line on stdout says what was done; on a
 * terminal, stderr shows progress (progress.h). Top layer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"
#include "quiver/dataset.h"
#include "quiver/expr.h"

/* ------------------------------------------------------------------------ */
/* Progress on a terminal (progress.h): one bar per phase of the library's
 * reports ("filter", "flatten", "map", "save"). */

typedef struct progress_state {
  cli_progress bar;
  char label[32];
  bool active;
} progress_state;

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress_cb(void *ctx, const char *what, int64_t done, int64_t total) {
  progress_state *p = ctx;
  if (!p->active || strcmp(p->label, what) != 0) {
    if (p->active) cli_progress_finish(&p->bar, true);
    snprintf(p->label, sizeof p->label, "%s", what);
    cli_progress_start_rows(&p->bar, p->label, total);
    p->active = true;
  }
  cli_progress_update(&p->bar, done, 0);
}

static void progress_end(progress_state *p, bool ok) {
  if (p->active) cli_progress_finish(&p->bar, ok);
  p->active = false;
}

/* ------------------------------------------------------------------------ */
/* Shared option parsing                                                     */

typedef enum ds_cmd {
  CMD_SELECT,
  CMD_SHUFFLE,
  CMD_SORT,
  CMD_FILTER,
  CMD_SHARD,
  CMD_SPLIT,
  CMD_CONCAT,
  CMD_FLATTEN,
  CMD_MAP
} ds_cmd;

/* One --set NAME=EXPR of map: the name (owned), the expression text (in
 * argv) and its parse (owned; parsed while reading the options so that a
 * syntax error is a usage error before SRC is opened). */
typedef struct set_arg {
  char *name;
  const char *text;
  qv_expr *expr;
} set_arg;

typedef struct ds_args {
  const char *name;
  const char **srcs;
  int n_srcs;
  const char *out;
  const char *split;
  const char *data; /* --data: SRC is an indices mapping file of this */
  qv_save_options save;
  bool cache;
  /* per command */
  const char *indices_file;
  bool has_range;
  int64_t range_start, range_stop;
  bool has_seed;
  uint64_t seed;
  const char *by;
  bool nulls_first;
  const char *where;
  int64_t num_shards, index;
  bool has_num_shards, has_index, strided;
  const char *test_size, *train_size;
  bool no_shuffle;
  int axis;
  set_arg *sets;
  int n_sets;
  char *remove_spec; /* --remove-columns, split in place at ',' */
  const char **remove;
  int32_t n_remove;
  int64_t batch_size; /* qv_map_options.batch_size */
  int num_proc;
} ds_args;

static void args_free(ds_args *a) {
  for (int i = 0; i < a->n_sets; i++) {
    free(a->sets[i].name);
    qv_expr_free(a->sets[i].expr);
  }
  free(a->sets);
  free(a->remove_spec);
  free(a->remove);
  free(a->srcs);
  a->sets = NULL;
  a->remove_spec = NULL;
  a->remove = NULL;
  a->srcs = NULL;
  a->n_sets = 0;
}

static const char kCommonHelp[] =
    "\n"
    "SRC is an Arrow IPC file, a save_to_disk Dataset directory or a DatasetDict\n"
    "directory (with --split NAME one split; without, every split, giving a\n"
    "DatasetDict). DST is written in the save_to_disk layout (datasets.load_from_disk\n"
    "opens it): the rows as selected (indices flattened), the features, and the new\n"
    "fingerprint in state.json. Intermediate results (indices mappings of select,\n"
    "shuffle, sort, filter, split; map outputs) stay in memory and nothing is\n"
    "written beside SRC, unless --cache is given: then they are written beside\n"
    "SRC's data files as cache-<fingerprint>.arrow, as datasets does by default\n"
    "(Dataset.from_file opens them), and the next run of the same operation on\n"
    "the same SRC reuses them instead of computing them again.\n"
    "\n"
    "common options:\n"
    "  -o, --output DIR         output directory (required)\n"
    "  --split NAME             the split of a DatasetDict SRC to use (with --data:\n"
    "                           the split of DATA)\n"
    "  --data DATA              SRC is an indices mapping file (cache-*.arrow) over\n"
    "                           DATA (a file or directory); without it such a file's\n"
    "                           data is found in its directory when unambiguous\n"
    "  --cache                  write and reuse cache-<fingerprint>.arrow files beside SRC\n"
    "  --max-shard-size SIZE    largest output shard (default 500MB; e.g. 100MB, 1GiB)\n"
    "  --output-shards N        exact number of output shards\n";

static const char *help_of(ds_cmd c) {
  switch (c) {
    case CMD_SELECT:
      return "usage: quiver select SRC (--indices=FILE | --range=START:STOP) -o DST\n"
             "\n"
             "Rows by position (datasets' Dataset.select): FILE holds one row number per\n"
             "line ('-' reads stdin), in any order, repeats allowed; --range takes rows\n"
             "START..STOP-1.\n";
    case CMD_SHUFFLE:
      return "usage: quiver shuffle SRC [--seed=N] -o DST\n"
             "\n"
             "Shuffle the rows exactly as datasets' Dataset.shuffle(seed=N) does\n"
             "(numpy.random.default_rng(N).permutation). Without --seed a random seed is\n"
             "drawn and printed.\n";
    case CMD_SORT:
      return "usage: quiver sort SRC --by=COL[:desc][,COL[:desc]...] [--nulls=last|first] -o DST\n"
             "\n"
             "Stable sort by one or more columns (datasets' Dataset.sort); ':desc' sorts a\n"
             "column in descending order; nulls go last by default.\n";
    case CMD_FILTER:
      return "usage: quiver filter SRC --where=EXPR -o DST\n"
             "\n"
             "Keep the rows where EXPR is true, e.g. --where='label == 1 and len(text) > 100'\n"
             "(the expression language: docs/expressions.md).\n";
    case CMD_SHARD:
      return "usage: quiver shard SRC --num-shards=N --index=I [--strided] -o DST\n"
             "\n"
             "Shard I of N (datasets' Dataset.shard): contiguous blocks, or with --strided\n"
             "rows I, I+N, I+2N, ...\n";
    case CMD_SPLIT:
      return "usage: quiver split SRC [--test-size=X] [--train-size=X] [--seed=N] [--no-shuffle] "
             "-o DST\n"
             "\n"
             "datasets' Dataset.train_test_split: DST becomes a DatasetDict with splits\n"
             "'train' and 'test'. A size with a '.' is a fraction (0.2), else a row count;\n"
             "without either, the test split is 0.25. Without --seed a random seed is\n"
             "drawn and printed.\n";
    case CMD_CONCAT:
      return "usage: quiver concat SRC SRC... [--axis=0|1] -o DST\n"
             "\n"
             "Concatenate datasets (datasets' concatenate_datasets): rows (axis 0, same\n"
             "columns) or columns (axis 1, same number of rows).\n";
    case CMD_FLATTEN:
      return "usage: quiver flatten SRC -o DST\n"
             "\n"
             "Write SRC's rows as they are seen (datasets' flatten_indices + save_to_disk).\n";
    case CMD_MAP:
      return "usage: quiver map SRC --set NAME=EXPR [--set NAME=EXPR ...] [--remove-columns A,B]\n"
             "                  [--batch-size N] [--num-proc N] -o DST\n"
             "\n"
             "datasets' batched Dataset.map with a function written as expressions\n"
             "(docs/expressions.md): each --set evaluates EXPR over a batch of the input\n"
             "columns and gives column NAME. A NAME the input has is replaced in place;\n"
             "new columns are appended in --set order. Every EXPR sees the input columns\n"
             "(not the ones other --set options compute), e.g.\n"
             "  quiver map SRC --set n_chars='len(text)' --set score='score * 2' -o DST\n"
             "\n"
             "  --set NAME=EXPR          a column to compute (at least one)\n"
             "  --remove-columns A,B     input columns to drop from the output (a column\n"
             "                           both removed and set moves to the end, as in datasets)\n"
             "  --batch-size N           rows per batch (default 1000; 0: the whole dataset\n"
             "                           in one batch); changes the fingerprint, not the rows\n"
             "  --num-proc N             N worker processes, each mapping a contiguous part\n"
             "\n"
             "Result types: comparisons, logic, 'is null', 'in' and the string predicates\n"
             "give bool; integer arithmetic, len() and integer columns int64 (a bare uint64\n"
             "column stays uint64); float arithmetic, '/' and float columns float64; string\n"
             "and binary columns or literals string / binary (large_string becomes string);\n"
             "the null literal null. Lists, structs, timestamps, decimals and other types\n"
             "cannot be computed (only tested with 'is null', lists measured with len()).\n"
             "A replaced column keeps its feature (ClassLabel, ...) when the result has its\n"
             "Arrow type, else it takes the result type's feature (Value('int64'), ...);\n"
             "datasets would first try the old type (i8 + 1 stays int8 there).\n"
             "The fingerprint depends on the expressions in canonical form (spacing and\n"
             "redundant parentheses do not matter), the batch size and the removed columns.\n"
             "A syntax error, an unknown column or a type error in EXPR is a usage error\n"
             "(exit 2); an evaluation error (integer overflow, % 0) is exit 1.\n";
  }
  return "";
}

static char *qv_ds_cli_strdup(const char *s) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

static bool parse_u64(const char *s, uint64_t *out) {
  if (s == NULL || *s < '0' || *s > '9') return false;
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

static int parse_args(ds_cmd cmd, const char *name, int argc, char **argv, ds_args *a) {
  memset(a, 0, sizeof *a);
  a->name = name;
  a->srcs = calloc((size_t)argc + 1, sizeof *a->srcs);
  a->sets = calloc((size_t)argc + 1, sizeof *a->sets);
  if (a->srcs == NULL || a->sets == NULL) return cli_usage(name, "out of memory");
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i], *v;
    bool m = false;
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
      fputs(help_of(cmd), stdout);
      fputs(kCommonHelp, stdout);
      exit(QV_EXIT_OK);
    }
    if ((v = cli_opt_value(s, "-o", argc, argv, &i, &m)) || m ||
        (v = cli_opt_value(s, "--output", argc, argv, &i, &m)) || m) {
      if (!v || !*v) return cli_usage(name, "-o needs a directory");
      a->out = v;
    } else if ((v = cli_opt_value(s, "--data", argc, argv, &i, &m)) || m) {
      if (!v || !*v) return cli_usage(name, "--data needs a file or directory");
      if (cmd == CMD_CONCAT) return cli_usage(name, "--data does not apply to concat");
      a->data = v;
    } else if ((v = cli_opt_value(s, "--split", argc, argv, &i, &m)) || m) {
      if (!v || !*v) return cli_usage(name, "--split needs a name");
      a->split = v;
    } else if ((v = cli_opt_value(s, "--max-shard-size", argc, argv, &i, &m)) || m) {
      qv_error err;
      if (!v || qv_hf_parse_size(v, &a->save.max_shard_size, &err) != QV_OK ||
          a->save.max_shard_size <= 0)
        return cli_usage(name, "--max-shard-size must be a size such as 500MB, found '%s'",
                         v ? v : "");
    } else if (strcmp(s, "--cache") == 0) {
      a->cache = true;
    } else if ((v = cli_opt_value(s, "--output-shards", argc, argv, &i, &m)) || m) {
      if (!v || !cli_parse_i64(v, &a->save.num_shards) || a->save.num_shards < 1)
        return cli_usage(name, "--output-shards must be a positive integer, found '%s'",
                         v ? v : "");
    } else if (cmd == CMD_SELECT &&
               ((v = cli_opt_value(s, "--indices", argc, argv, &i, &m)) || m)) {
      if (!v || !*v) return cli_usage(name, "--indices needs a file");
      a->indices_file = v;
    } else if (cmd == CMD_SELECT && ((v = cli_opt_value(s, "--range", argc, argv, &i, &m)) || m)) {
      const char *colon = v ? strchr(v, ':') : NULL;
      char start[32];
      if (colon == NULL || (size_t)(colon - v) >= sizeof start)
        return cli_usage(name, "--range must be START:STOP, found '%s'", v ? v : "");
      memcpy(start, v, (size_t)(colon - v));
      start[colon - v] = '\0';
      if (!cli_parse_i64(start, &a->range_start) || !cli_parse_i64(colon + 1, &a->range_stop) ||
          a->range_stop < a->range_start)
        return cli_usage(name, "--range must be START:STOP with START <= STOP, found '%s'", v);
      a->has_range = true;
    } else if ((cmd == CMD_SHUFFLE || cmd == CMD_SPLIT) &&
               ((v = cli_opt_value(s, "--seed", argc, argv, &i, &m)) || m)) {
      if (!parse_u64(v, &a->seed))
        return cli_usage(name, "--seed must be an integer in [0, 2^64), found '%s'", v ? v : "");
      a->has_seed = true;
    } else if (cmd == CMD_SORT && ((v = cli_opt_value(s, "--by", argc, argv, &i, &m)) || m)) {
      if (!v || !*v) return cli_usage(name, "--by needs column names");
      a->by = v;
    } else if (cmd == CMD_SORT && ((v = cli_opt_value(s, "--nulls", argc, argv, &i, &m)) || m)) {
      if (v && (strcmp(v, "last") == 0 || strcmp(v, "at_end") == 0)) a->nulls_first = false;
      else if (v && (strcmp(v, "first") == 0 || strcmp(v, "at_start") == 0)) a->nulls_first = true;
      else return cli_usage(name, "--nulls must be 'last' or 'first', found '%s'", v ? v : "");
    } else if (cmd == CMD_FILTER && ((v = cli_opt_value(s, "--where", argc, argv, &i, &m)) || m)) {
      if (!v) return cli_usage(name, "--where needs an expression");
      a->where = v;
      /* A bad expression is bad usage (exit 2, the caret under it), as
       * map's --set. */
      qv_expr *e = NULL;
      qv_error err;
      if (qv_expr_parse(v, -1, &e, &err) != QV_OK)
        return cli_usage(name, "--where: %s", err.message);
      qv_expr_free(e);
    } else if (cmd == CMD_SHARD &&
               ((v = cli_opt_value(s, "--num-shards", argc, argv, &i, &m)) || m)) {
      if (!v || !cli_parse_i64(v, &a->num_shards) || a->num_shards < 1)
        return cli_usage(name, "--num-shards must be a positive integer, found '%s'", v ? v : "");
      a->has_num_shards = true;
    } else if (cmd == CMD_SHARD && ((v = cli_opt_value(s, "--index", argc, argv, &i, &m)) || m)) {
      if (!v || !cli_parse_i64(v, &a->index))
        return cli_usage(name, "--index must be a non-negative integer, found '%s'", v ? v : "");
      a->has_index = true;
    } else if (cmd == CMD_SHARD && strcmp(s, "--strided") == 0) {
      a->strided = true;
    } else if (cmd == CMD_SHARD && strcmp(s, "--contiguous") == 0) {
      a->strided = false;
    } else if (cmd == CMD_SPLIT &&
               ((v = cli_opt_value(s, "--test-size", argc, argv, &i, &m)) || m)) {
      a->test_size = v ? v : "";
    } else if (cmd == CMD_SPLIT &&
               ((v = cli_opt_value(s, "--train-size", argc, argv, &i, &m)) || m)) {
      a->train_size = v ? v : "";
    } else if (cmd == CMD_SPLIT && strcmp(s, "--no-shuffle") == 0) {
      a->no_shuffle = true;
    } else if (cmd == CMD_CONCAT && ((v = cli_opt_value(s, "--axis", argc, argv, &i, &m)) || m)) {
      if (!v || (strcmp(v, "0") != 0 && strcmp(v, "1") != 0))
        return cli_usage(name, "--axis must be 0 or 1, found '%s'", v ? v : "");
      a->axis = v[0] - '0';
    } else if (cmd == CMD_MAP && ((v = cli_opt_value(s, "--set", argc, argv, &i, &m)) || m)) {
      const char *eq = v ? strchr(v, '=') : NULL;
      if (eq == NULL || eq == v)
        return cli_usage(name, "--set must be NAME=EXPR, found '%s'", v ? v : "");
      /* NAME without the spaces around it ("n = len(t)"). */
      const char *n0 = v, *n1 = eq;
      while (n0 < n1 && (*n0 == ' ' || *n0 == '\t')) n0++;
      while (n1 > n0 && (n1[-1] == ' ' || n1[-1] == '\t')) n1--;
      if (n0 == n1) return cli_usage(name, "--set must be NAME=EXPR, found '%s'", v);
      set_arg *sa = &a->sets[a->n_sets];
      sa->name = malloc((size_t)(n1 - n0) + 1);
      if (sa->name == NULL) return cli_usage(name, "out of memory");
      memcpy(sa->name, n0, (size_t)(n1 - n0));
      sa->name[n1 - n0] = '\0';
      sa->text = eq + 1;
      a->n_sets++;
      for (int k = 0; k + 1 < a->n_sets; k++)
        if (strcmp(a->sets[k].name, sa->name) == 0)
          return cli_usage(name, "--set %s is given twice", sa->name);
      qv_error err;
      if (qv_expr_parse(sa->text, -1, &sa->expr, &err) != QV_OK)
        return cli_usage(name, "--set %s: %s", sa->name, err.message);
    } else if (cmd == CMD_MAP &&
               ((v = cli_opt_value(s, "--remove-columns", argc, argv, &i, &m)) || m)) {
      if (!v || !*v) return cli_usage(name, "--remove-columns needs column names");
      if (a->remove_spec != NULL) return cli_usage(name, "--remove-columns is given twice");
      int32_t n = 1;
      for (const char *p = v; *p; p++) n += *p == ',';
      a->remove_spec = qv_ds_cli_strdup(v);
      a->remove = calloc((size_t)n, sizeof *a->remove);
      if (a->remove_spec == NULL || a->remove == NULL) return cli_usage(name, "out of memory");
      for (char *p = a->remove_spec, *tok = p;; p++) {
        if (*p != ',' && *p != '\0') continue;
        bool end = *p == '\0';
        *p = '\0';
        if (*tok == '\0') return cli_usage(name, "--remove-columns: empty column name in '%s'", v);
        a->remove[a->n_remove++] = tok;
        if (end) break;
        tok = p + 1;
      }
    } else if (cmd == CMD_MAP &&
               ((v = cli_opt_value(s, "--batch-size", argc, argv, &i, &m)) || m)) {
      int64_t bs = 0;
      if (!v || !cli_parse_i64(v, &bs))
        return cli_usage(name, "--batch-size must be a non-negative integer, found '%s'",
                         v ? v : "");
      a->batch_size = bs == 0 ? -1 : bs;
    } else if (cmd == CMD_MAP && ((v = cli_opt_value(s, "--num-proc", argc, argv, &i, &m)) || m)) {
      int64_t np = 0;
      if (!v || !cli_parse_i64(v, &np) || np < 1 || np > 1024)
        return cli_usage(name, "--num-proc must be an integer in [1, 1024], found '%s'",
                         v ? v : "");
      a->num_proc = (int)np;
    } else if (s[0] == '-' && s[1] != '\0') {
      return cli_usage(name, "unknown option '%s'", s);
    } else {
      a->srcs[a->n_srcs++] = s;
    }
  }
  if (a->n_srcs == 0) return cli_usage(name, "missing SRC");
  if (cmd != CMD_CONCAT && a->n_srcs > 1)
    return cli_usage(name, "one SRC expected, found '%s' too", a->srcs[1]);
  if (cmd == CMD_CONCAT && a->n_srcs < 2) return cli_usage(name, "concat needs at least two SRC");
  if (a->out == NULL) return cli_usage(name, "missing -o DST");
  if (cmd == CMD_SELECT && (a->indices_file != NULL) == a->has_range)
    return cli_usage(name, "give one of --indices=FILE or --range=START:STOP");
  if (cmd == CMD_SORT && a->by == NULL) return cli_usage(name, "missing --by=COLUMNS");
  if (cmd == CMD_FILTER && a->where == NULL) return cli_usage(name, "missing --where=EXPR");
  if (cmd == CMD_MAP && a->n_sets == 0) return cli_usage(name, "missing --set NAME=EXPR");
  if (cmd == CMD_SHARD && (!a->has_num_shards || !a->has_index))
    return cli_usage(name, "give --num-shards=N and --index=I");
  if (cmd == CMD_SHARD && a->index >= a->num_shards)
    return cli_usage(name, "--index must be < --num-shards (%lld), found %lld",
                     (long long)a->num_shards, (long long)a->index);
  if ((cmd == CMD_SHUFFLE || (cmd == CMD_SPLIT && !a->no_shuffle)) && !a->has_seed) {
    if (getrandom(&a->seed, sizeof a->seed, 0) != (ssize_t)sizeof a->seed)
      a->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    a->seed >>= 1; /* keep it printable as a non-negative int64 too */
  }
  return -1;
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */

/* Read "one row number per line" (blank lines and surrounding spaces
 * allowed). */
static int read_indices(const char *name, const char *path, int64_t **out, int64_t *out_n) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "quiver %s: %s: %s\n", name, path, strerror(errno));
    return QV_EXIT_DATA;
  }
  int64_t cap = 1024, n = 0, line_no = 0;
  int64_t *v = malloc(sizeof(int64_t) * (size_t)cap);
  char line[256];
  int rc = -1;
  while (v != NULL && fgets(line, sizeof line, f) != NULL) {
    line_no++;
    size_t len = strlen(line);
    if (len == sizeof line - 1 && line[len - 1] != '\n') {
      fprintf(stderr, "quiver %s: %s:%lld: line too long\n", name, path, (long long)line_no);
      rc = QV_EXIT_DATA;
      break;
    }
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    char *e = p + strlen(p);
    while (e > p && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t')) *--e = '\0';
    if (*p == '\0') continue;
    int64_t x = 0;
    if (!cli_parse_i64(p, &x)) {
      fprintf(stderr, "quiver %s: %s:%lld: not a row number: '%s'\n", name, path,
              (long long)line_no, p);
      rc = QV_EXIT_DATA;
      break;
    }
    if (n == cap) {
      cap *= 2;
      int64_t *nv = realloc(v, sizeof(int64_t) * (size_t)cap);
      if (nv == NULL) break;
      v = nv;
    }
    v[n++] = x;
  }
  if (f != stdin) fclose(f);
  if (rc != -1 || v == NULL) {
    free(v);
    if (rc == -1) fprintf(stderr, "quiver %s: out of memory\n", name);
    return rc == -1 ? QV_EXIT_DATA : rc;
  }
  *out = v;
  *out_n = n;
  return -1;
}

/* A size: "0.2" (has '.', 'e' or 'E') is a fraction, "100" a count. */
static bool parse_size(const char *s, qv_split_size *out) {
  memset(out, 0, sizeof *out);
  if (s == NULL) return true;
  if (*s == '\0') return false;
  if (strpbrk(s, ".eE") != NULL) {
    char *end = NULL;
    errno = 0;
    double d = strtod(s, &end);
    if (errno != 0 || *end != '\0') return false;
    out->kind = QV_SIZE_FRACTION;
    out->fraction = d;
    return true;
  }
  int64_t c = 0;
  if (!cli_parse_i64(s, &c)) return false;
  out->kind = QV_SIZE_COUNT;
  out->count = c;
  return true;
}

/* ------------------------------------------------------------------------ */
/* map: --set expressions, through qv_dataset_map_exprs                      */

static qv_status apply_map(const ds_args *a, qv_dataset *ds, const qv_dataset_options *o,
                           qv_dataset **out, qv_strbuf *what, qv_error *err) {
  const char **names = calloc((size_t)a->n_sets + 1, sizeof *names);
  const char **exprs = calloc((size_t)a->n_sets + 1, sizeof *exprs);
  qv_status st = names && exprs ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory");
  for (int i = 0; i < a->n_sets && st == QV_OK; i++) {
    names[i] = a->sets[i].name;
    exprs[i] = a->sets[i].text;
  }
  if (st == QV_OK) {
    qv_map_options mo;
    memset(&mo, 0, sizeof mo);
    mo.batch_size = a->batch_size;
    mo.remove_columns = a->remove;
    mo.n_remove_columns = a->n_remove;
    mo.num_proc = a->num_proc;
    st = qv_dataset_map_exprs(ds, names, exprs, a->n_sets, &mo, o, out, err);
  }
  if (st == QV_OK) {
    qv_strbuf_printf(what, NULL, "%lld rows, set", (long long)qv_dataset_num_rows(ds));
    for (int i = 0; i < a->n_sets; i++)
      qv_strbuf_printf(what, NULL, "%s %s", i ? "," : "", a->sets[i].name);
    if (a->n_remove > 0) {
      qv_strbuf_printf(what, NULL, ", removed");
      for (int32_t i = 0; i < a->n_remove; i++)
        qv_strbuf_printf(what, NULL, "%s %s", i ? "," : "", a->remove[i]);
    }
  }
  free(names);
  free(exprs);
  return st;
}

/* ------------------------------------------------------------------------ */
/* One transform                                                             */

static qv_status apply(ds_cmd cmd, const ds_args *a, qv_dataset *ds, qv_dataset_options *o,
                       const int64_t *idx, int64_t n_idx, qv_dataset **out, qv_dataset **out2,
                       qv_strbuf *what, qv_error *err) {
  int64_t rows = qv_dataset_num_rows(ds);
  switch (cmd) {
    case CMD_SELECT:
      if (a->has_range) {
        qv_strbuf_printf(what, NULL, "rows %lld:%lld of %lld", (long long)a->range_start,
                         (long long)a->range_stop, (long long)rows);
        if (a->range_stop > rows)
          return qv_error_set(err, QV_ERANGE, "--range %lld:%lld is past the %lld rows",
                              (long long)a->range_start, (long long)a->range_stop, (long long)rows);
        return qv_dataset_select_range(ds, a->range_start, a->range_stop - a->range_start, o, out,
                                       err);
      }
      qv_strbuf_printf(what, NULL, "%lld of %lld rows", (long long)n_idx, (long long)rows);
      return qv_dataset_select(ds, idx, n_idx, o, out, err);
    case CMD_SHUFFLE:
      qv_strbuf_printf(what, NULL, "%lld rows, seed %llu", (long long)rows,
                       (unsigned long long)a->seed);
      return qv_dataset_shuffle(ds, a->seed, o, out, err);
    case CMD_SORT: {
      /* --by=COL[:asc|:desc][,COL...] */
      char *spec = qv_ds_cli_strdup(a->by);
      int32_t n = 1;
      for (const char *p = a->by; *p; p++) n += *p == ',';
      const char **cols = calloc((size_t)n, sizeof *cols);
      bool *desc = calloc((size_t)n, sizeof *desc);
      qv_status st = spec && cols && desc ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory");
      int32_t k = 0;
      for (char *save = NULL, *tok = st == QV_OK ? strtok_r(spec, ",", &save) : NULL;
           tok != NULL && st == QV_OK; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(tok, ':');
        if (colon != NULL && (strcmp(colon, ":desc") == 0 || strcmp(colon, ":asc") == 0)) {
          desc[k] = colon[1] == 'd';
          *colon = '\0';
        }
        if (*tok == '\0') st = qv_error_set(err, QV_EARG, "--by: empty column name in '%s'", a->by);
        cols[k++] = tok;
      }
      if (st == QV_OK && k == 0) st = qv_error_set(err, QV_EARG, "--by: no column in '%s'", a->by);
      if (st == QV_OK)
        st = qv_dataset_sort(ds, cols, k, desc,
                             a->nulls_first ? QV_NULLS_AT_START : QV_NULLS_AT_END, o, out, err);
      if (st == QV_OK) {
        qv_strbuf_printf(what, NULL, "%lld rows by", (long long)rows);
        for (int32_t i = 0; i < k; i++)
          qv_strbuf_printf(what, NULL, "%s %s%s", i ? "," : "", cols[i], desc[i] ? " desc" : "");
        qv_strbuf_printf(what, NULL, ", nulls %s", a->nulls_first ? "first" : "last");
      }
      free(cols);
      free(desc);
      free(spec);
      return st;
    }
    case CMD_FILTER: {
      /* Unknown columns and type errors are bad usage too (as map's). */
      qv_bound_expr *b = NULL;
      qv_status cst = qv_predicate_compile(a->where, qv_dataset_schema(ds), &b, err);
      qv_bound_expr_free(b);
      if (cst == QV_EINVAL || cst == QV_ETYPE) return qv_error_prefix(err, QV_EARG, "--where: ");
      QV_RETURN_NOT_OK(cst);
      QV_RETURN_NOT_OK(qv_dataset_filter(ds, a->where, o, out, err));
      qv_strbuf_printf(what, NULL, "kept %lld of %lld rows", (long long)qv_dataset_num_rows(*out),
                       (long long)rows);
      return QV_OK;
    }
    case CMD_SHARD:
      QV_RETURN_NOT_OK(qv_dataset_shard(ds, a->num_shards, a->index, !a->strided, o, out, err));
      qv_strbuf_printf(what, NULL, "shard %lld of %lld (%s): %lld of %lld rows",
                       (long long)a->index, (long long)a->num_shards,
                       a->strided ? "strided" : "contiguous", (long long)qv_dataset_num_rows(*out),
                       (long long)rows);
      return QV_OK;
    case CMD_SPLIT: {
      qv_split_size test, train;
      if (!parse_size(a->test_size, &test))
        return qv_error_set(err, QV_EARG, "--test-size must be a fraction or a count, found '%s'",
                            a->test_size);
      if (!parse_size(a->train_size, &train))
        return qv_error_set(err, QV_EARG, "--train-size must be a fraction or a count, found '%s'",
                            a->train_size);
      QV_RETURN_NOT_OK(
          qv_dataset_train_test_split(ds, test, train, !a->no_shuffle, a->seed, o, out, out2, err));
      qv_strbuf_printf(what, NULL, "%lld rows -> train %lld, test %lld", (long long)rows,
                       (long long)qv_dataset_num_rows(*out), (long long)qv_dataset_num_rows(*out2));
      if (!a->no_shuffle) qv_strbuf_printf(what, NULL, " (seed %llu)", (unsigned long long)a->seed);
      return QV_OK;
    }
    case CMD_MAP: return apply_map(a, ds, o, out, what, err);
    case CMD_FLATTEN: {
      qv_strbuf_printf(what, NULL, "%lld rows%s", (long long)rows,
                       qv_dataset_indices(ds) ? " (indices mapping flattened)" : "");
      /* With --cache, datasets' flatten_indices writes (or reuses) its cache
       * file; otherwise saving flattens, and the result carries
       * flatten_indices' fingerprint. */
      if (!o->keep_in_memory) return qv_dataset_flatten_indices(ds, o, out, err);
      char fp[QV_FINGERPRINT_SIZE];
      QV_RETURN_NOT_OK(qv_fingerprint_update(qv_dataset_fingerprint(ds), "quiver.flatten_indices",
                                             NULL, fp, err));
      return qv_dataset_with_fingerprint(ds, fp, out, err);
    }
    case CMD_CONCAT: break;
  }
  return qv_error_set(err, QV_EARG, "unreachable");
}

static int fail(const char *name, qv_status st, const qv_error *err) {
  fprintf(stderr, "quiver %s: %s\n", name, err->message);
  return st == QV_EARG ? QV_EXIT_USAGE : QV_EXIT_DATA;
}

static int run(ds_cmd cmd, const char *name, int argc, char **argv) {
  ds_args a;
  int rc = parse_args(cmd, name, argc, argv, &a);
  if (rc >= 0) {
    args_free(&a);
    return rc;
  }
  progress_state ps;
  memset(&ps, 0, sizeof ps);
  a.save.progress = progress_cb;
  a.save.progress_ctx = &ps;
  qv_dataset_options o;
  memset(&o, 0, sizeof o);
  o.keep_in_memory = !a.cache;
  o.progress = progress_cb;
  o.progress_ctx = &ps;
  qv_error err;
  err.message[0] = '\0';
  qv_status st = QV_OK;
  int64_t *idx = NULL, n_idx = 0;
  if (cmd == CMD_SELECT && a.indices_file != NULL) {
    rc = read_indices(name, a.indices_file, &idx, &n_idx);
    if (rc >= 0) {
      args_free(&a);
      return rc;
    }
  }
  /* The splits to process: one dataset, or every split of a DatasetDict. */
  char **splits = NULL;
  int64_t n_splits = 0;
  bool as_dict = false;
  qv_path_kind src_kind = QV_PATH_ARROW_FILE;
  if (cmd != CMD_CONCAT && a.split == NULL && a.data == NULL &&
      qv_path_sniff(a.srcs[0], &src_kind, NULL) == QV_OK && src_kind == QV_PATH_DATASET_DICT) {
    if (cmd == CMD_SPLIT) {
      rc = cli_usage(name, "%s is a DatasetDict: choose the split to divide with --split",
                     a.srcs[0]);
      args_free(&a);
      free(idx);
      return rc;
    }
    st = qv_dataset_dict_splits(a.srcs[0], &splits, &n_splits, &err);
    as_dict = true;
  }
  bool out_dict = as_dict || cmd == CMD_SPLIT;
  qv_path_kind out_kind = QV_PATH_CACHE_DIR;
  if (st == QV_OK && cli_is_directory(a.out) && qv_path_sniff(a.out, &out_kind, NULL) == QV_OK) {
    if (out_dict && out_kind == QV_PATH_DATASET)
      st =
          qv_error_set(&err, QV_EARG, "%s holds a Dataset; write the DatasetDict elsewhere", a.out);
    if (!out_dict && out_kind == QV_PATH_DATASET_DICT)
      st =
          qv_error_set(&err, QV_EARG, "%s holds a DatasetDict; write the Dataset elsewhere", a.out);
  }
  int64_t n_jobs = as_dict ? n_splits : 1;
  qv_dataset **results = calloc((size_t)(n_jobs * 2 + 2), sizeof *results);
  const char **names = calloc((size_t)(n_jobs * 2 + 2), sizeof *names);
  qv_strbuf what;
  qv_strbuf_init(&what);
  int64_t n_results = 0;
  if (st == QV_OK && (results == NULL || names == NULL))
    st = qv_error_set(&err, QV_ENOMEM, "out of memory");
  double t0 = mono_now();
  if (st == QV_OK && cmd == CMD_CONCAT) {
    qv_dataset **ins = calloc((size_t)a.n_srcs, sizeof *ins);
    if (ins == NULL) st = qv_error_set(&err, QV_ENOMEM, "out of memory");
    int opened = 0;
    for (; st == QV_OK && opened < a.n_srcs; opened++)
      st = qv_dataset_open(a.srcs[opened], a.split, &ins[opened], &err);
    if (st == QV_OK) st = qv_dataset_concatenate(ins, a.n_srcs, a.axis, &o, &results[0], &err);
    if (st == QV_OK) {
      n_results = 1;
      qv_strbuf_printf(&what, NULL, "%d datasets (axis %d): %lld rows, %d columns", a.n_srcs,
                       a.axis, (long long)qv_dataset_num_rows(results[0]),
                       qv_dataset_num_columns(results[0]));
    }
    for (int i = 0; i < opened && ins; i++) qv_dataset_unref(ins[i]);
    free(ins);
  } else if (st == QV_OK) {
    for (int64_t j = 0; j < n_jobs && st == QV_OK; j++) {
      qv_dataset *ds = NULL;
      const char *sp = as_dict ? splits[j] : a.split;
      st = cli_open_dataset(a.srcs[0], sp, a.data, &ds, &err);
      if (st != QV_OK) break;
      if (as_dict) qv_strbuf_printf(&what, NULL, "%s%s: ", j ? "; " : "", sp);
      qv_dataset *r1 = NULL, *r2 = NULL;
      st = apply(cmd, &a, ds, &o, idx, n_idx, &r1, &r2, &what, &err);
      qv_dataset_unref(ds);
      if (st != QV_OK) break;
      if (cmd == CMD_SPLIT) {
        results[n_results] = r1;
        names[n_results++] = "train";
        results[n_results] = r2;
        names[n_results++] = "test";
      } else {
        results[n_results] = r1;
        names[n_results++] = as_dict ? splits[j] : NULL;
      }
    }
  }
  int64_t shards = 0;
  if (st == QV_OK) {
    if (out_dict)
      st = qv_dataset_dict_save_to_disk(results, names, n_results, a.out, &a.save, &err);
    else st = qv_dataset_save_to_disk(results[0], a.out, &a.save, &shards, &err);
  }
  progress_end(&ps, st == QV_OK);
  if (st == QV_OK) {
    printf("%s: %s -> %s", name, qv_strbuf_cstr(&what), a.out);
    if (out_dict) {
      printf(" (DatasetDict:");
      for (int64_t i = 0; i < n_results; i++)
        printf(" %s %lld rows fingerprint %s%s", names[i],
               (long long)qv_dataset_num_rows(results[i]), qv_dataset_fingerprint(results[i]),
               i + 1 < n_results ? "," : "");
      printf(")");
    } else {
      printf(" (%lld shard%s, fingerprint %s)", (long long)shards, shards == 1 ? "" : "s",
             qv_dataset_fingerprint(results[0]));
    }
    printf(" in %.2f s\n", mono_now() - t0);
    rc = QV_EXIT_OK;
  } else {
    rc = fail(name, st, &err);
  }
  for (int64_t i = 0; i < n_results; i++) qv_dataset_unref(results[i]);
  free(results);
  free(names);
  qv_table_free_paths(splits, n_splits);
  qv_strbuf_reset(&what);
  free(idx);
  args_free(&a);
  return rc;
}

int cmd_select(int argc, char **argv) { return run(CMD_SELECT, "select", argc, argv); }
int cmd_shuffle(int argc, char **argv) { return run(CMD_SHUFFLE, "shuffle", argc, argv); }
int cmd_sort(int argc, char **argv) { return run(CMD_SORT, "sort", argc, argv); }
int cmd_filter(int argc, char **argv) { return run(CMD_FILTER, "filter", argc, argv); }
int cmd_shard(int argc, char **argv) { return run(CMD_SHARD, "shard", argc, argv); }
int cmd_split(int argc, char **argv) { return run(CMD_SPLIT, "split", argc, argv); }
int cmd_concat(int argc, char **argv) { return run(CMD_CONCAT, "concat", argc, argv); }
int cmd_flatten(int argc, char **argv) { return run(CMD_FLATTEN, "flatten", argc, argv); }
int cmd_map(int argc, char **argv) { return run(CMD_MAP, "map", argc, argv); }
