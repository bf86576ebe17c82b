/*
 * groupby.c — `quiver groupby SRC --by=COL[,COL...] --agg='EXPR [AS NAME]'
 * ... [--sort] [--memory-limit=SIZE] [--temp-directory=DIR] -o DST`: hash
 * group-by with aggregate expressions (qv_dataset_group_by; past the
 * memory limit it spills to temporary files) over any dataset the dataset commands
 * read, written as a save_to_disk directory (keys, then each aggregate
 * under its name). Bad arguments (unknown column, an aggregate undefined
 * for a type, a key type that cannot be grouped, a malformed --agg) exit 2
 * with the library's message; bad data exits 1. Top layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "progress.h"
#include "quiver/compute.h"
#include "quiver/dataset.h"

static const char kHelp[] =
    "usage: quiver groupby SRC --by=COL[,COL...] --agg='EXPR [AS NAME]' [--agg ...]\n"
    "                      [--sort] [--memory-limit=SIZE] [--temp-directory=DIR]\n"
    "                      [--split NAME] -o DST\n"
    "\n"
    "Group SRC's rows (as the dataset shows them) by the key columns and compute\n"
    "aggregates per group. DST (a save_to_disk directory datasets.load_from_disk\n"
    "opens) has the keys, then each aggregate under its name (EXPR as written\n"
    "without AS), one row per group in order of first appearance (--sort: by the\n"
    "keys, ascending, nulls last). Without --by, one row over the whole dataset.\n"
    "\n"
    "EXPR is the expression language (docs/expressions.md) over aggregate calls:\n"
    "  count(*) count(c) count_distinct(c) sum(c) mean(c) min(c) max(c) first(c)\n"
    "  last(c) var(c) var_pop(c) stddev(c) stddev_pop(c) median(c) quantile(c, q)\n"
    "  top_k(c, k) bottom_k(c, k) corr(a, b) covar(a, b) covar_pop(a, b) any(c)\n"
    "  all(c) list(c)\n"
    "e.g. --agg='sum(v1) AS v1' --agg='max(v1) - min(v2) AS range_v1_v2'.\n"
    "Result types follow DuckDB, except that integer sums are int64 and fail on\n"
    "overflow (docs/compute.md).\n"
    "\n"
    "options:\n"
    "  --by=COL[,COL...]     key columns (nulls form a group)\n"
    "  --agg=EXPR [AS NAME]  an aggregate expression (repeatable)\n"
    "  --sort                order the groups by the keys\n"
    "  --memory-limit=SIZE   budget of the group-by state (e.g. 2GB; default a\n"
    "                        quarter of physical memory); past it the rows are\n"
    "                        spilled to temporary Arrow IPC files, partitioned by\n"
    "                        key hash, and grouped partition by partition (same\n"
    "                        result); 'none': no bound\n"
    "  --temp-directory=DIR  where spilling makes its private directory (default\n"
    "                        $TMPDIR, else /tmp); removed when done\n"
    "  --split NAME          the split of a DatasetDict SRC\n"
    "  -o, --output DST      output directory\n"
    "\n"
    "exit status: 0 ok, 1 bad data or failure, 2 bad usage.\n";

typedef struct gb_progress {
  cli_progress bar;
  bool started;
} gb_progress;

static void on_progress(void *ctx, int64_t done, int64_t total) {
  gb_progress *p = ctx;
  if (!p->started) {
    cli_progress_start_rows(&p->bar, "groupby", total);
    p->started = true;
  }
  cli_progress_update(&p->bar, done, 0);
}

static void save_progress(void *ctx, const char *what, int64_t done, int64_t total) {
  (void)what;
  on_progress(ctx, done, total);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cmd_groupby(int argc, char **argv) {
  const char *src = NULL, *out = NULL, *by = NULL, *split = NULL;
  const char **aggs = calloc((size_t)argc + 1, sizeof *aggs);
  int32_t n_aggs = 0;
  qv_group_by_options opts;
  memset(&opts, 0, sizeof opts);
  if (!aggs) return cli_usage("groupby", "out of memory");
  int rc = -1;
  for (int i = 1; i < argc && rc < 0; i++) {
    const char *s = argv[i], *v;
    bool m = false;
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
      fputs(kHelp, stdout);
      rc = QV_EXIT_OK;
    } else if ((v = cli_opt_value(s, "-o", argc, argv, &i, &m)) || m ||
               (v = cli_opt_value(s, "--output", argc, argv, &i, &m)) || m) {
      if (!v || !*v) rc = cli_usage("groupby", "-o needs a directory");
      out = v;
    } else if ((v = cli_opt_value(s, "--by", argc, argv, &i, &m)) || m) {
      if (!v || !*v) rc = cli_usage("groupby", "--by needs column names (--by=id1,id2)");
      by = v;
    } else if ((v = cli_opt_value(s, "--agg", argc, argv, &i, &m)) || m) {
      if (!v || !*v) rc = cli_usage("groupby", "--agg needs an expression (--agg='sum(v1)')");
      aggs[n_aggs++] = v;
    } else if ((v = cli_opt_value(s, "--split", argc, argv, &i, &m)) || m) {
      if (!v || !*v) rc = cli_usage("groupby", "--split needs a name");
      split = v;
    } else if ((v = cli_opt_value(s, "--memory-limit", argc, argv, &i, &m)) || m) {
      qv_error e;
      if (v && strcmp(v, "none") == 0) opts.memory_limit = -1;
      else if (!v || qv_hf_parse_size(v, &opts.memory_limit, &e) != QV_OK || opts.memory_limit <= 0)
        rc = cli_usage("groupby", "--memory-limit must be a size such as 4GB, found '%s'",
                       v ? v : "");
    } else if ((v = cli_opt_value(s, "--temp-directory", argc, argv, &i, &m)) || m) {
      if (!v || !*v) rc = cli_usage("groupby", "--temp-directory needs a directory");
      opts.temp_directory = v;
    } else if (strcmp(s, "--sort") == 0) {
      opts.sort = true;
    } else if (s[0] == '-' && s[1] != '\0') {
      rc = cli_usage("groupby", "unknown option '%s'", s);
    } else if (src == NULL) {
      src = s;
    } else {
      rc = cli_usage("groupby", "unexpected argument '%s' (one SRC)", s);
    }
  }
  if (rc < 0 && src == NULL) rc = cli_usage("groupby", "missing SRC");
  if (rc < 0 && out == NULL) rc = cli_usage("groupby", "missing -o DST");
  if (rc < 0 && n_aggs == 0 && by == NULL)
    rc = cli_usage("groupby", "nothing to compute: give --by and/or --agg");
  /* keys */
  char *by_copy = by ? strdup(by) : NULL;
  const char **keys = calloc(by ? strlen(by) + 1 : 1, sizeof *keys);
  int32_t n_keys = 0;
  if (rc < 0 && (!keys || (by && !by_copy))) rc = cli_usage("groupby", "out of memory");
  if (rc < 0 && by_copy) {
    for (char *tok = by_copy, *next; tok; tok = next) {
      next = strchr(tok, ',');
      if (next) *next++ = '\0';
      if (!*tok) {
        rc = cli_usage("groupby", "--by has an empty column name in '%s'", by);
        break;
      }
      keys[n_keys++] = tok;
    }
  }
  if (rc >= 0) {
    free(aggs);
    free(keys);
    free(by_copy);
    return rc;
  }
  qv_error err;
  err.message[0] = '\0';
  gb_progress prog;
  memset(&prog, 0, sizeof prog);
  opts.progress = on_progress;
  opts.progress_ctx = &prog;
  qv_spill_stats spill;
  opts.spill_stats = &spill;
  double t0 = now_s();
  qv_dataset *ds = NULL, *res = NULL;
  qv_status st = cli_open_dataset(src, split, NULL, &ds, &err);
  bool usage = st == QV_EARG;
  if (st == QV_OK) {
    st = qv_dataset_group_by(ds, keys, n_keys, aggs, n_aggs, &opts, &res, &err);
    /* argument errors: unknown columns, types, malformed expressions */
    usage = st == QV_EARG || st == QV_ETYPE ||
            (st == QV_EINVAL && strncmp(err.message, "aggregate ", 10) == 0);
  }
  if (prog.started) {
    cli_progress_finish(&prog.bar, st == QV_OK);
    prog.started = false;
  }
  if (st == QV_OK && spill.spilled)
    fprintf(stderr,
            "groupby: spilled past the memory limit: %lld partition files (%.1f MB), fan-out %d, "
            "%d level%s\n",
            (long long)spill.files, (double)spill.bytes_written / 1e6, spill.fanout, spill.depth,
            spill.depth == 1 ? "" : "s");
  int64_t shards = 0;
  if (st == QV_OK) {
    qv_save_options so;
    memset(&so, 0, sizeof so);
    so.progress = save_progress;
    so.progress_ctx = &prog;
    st = qv_dataset_save_to_disk(res, out, &so, &shards, &err);
    if (prog.started) cli_progress_finish(&prog.bar, st == QV_OK);
  }
  if (st == QV_OK) {
    printf("groupby: %s: %lld rows -> %lld groups, %d columns -> %s (%lld shard%s) in %.2f s\n",
           src, (long long)qv_dataset_num_rows(ds), (long long)qv_dataset_num_rows(res),
           qv_dataset_num_columns(res), out, (long long)shards, shards == 1 ? "" : "s",
           now_s() - t0);
    rc = QV_EXIT_OK;
  } else {
    fprintf(stderr, "quiver groupby: %s\n", err.message);
    if (usage) fprintf(stderr, "try 'quiver groupby --help'\n");
    rc = usage ? QV_EXIT_USAGE : QV_EXIT_DATA;
  }
  if (res) qv_dataset_unref(res);
  if (ds) qv_dataset_unref(ds);
  free(aggs);
  free(keys);
  free(by_copy);
  return rc;
}
