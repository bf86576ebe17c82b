/*
 * join.c — the CLI's `quiver join LEFT RIGHT --on=COL,... -o DST` (hash
 * join of two datasets, qv_dataset_join) and `quiver distinct SRC
 * [--on=COL,...] -o DST` (distinct rows, qv_dataset_distinct). LEFT,
 * RIGHT and SRC are anything the dataset commands open (an Arrow IPC
 * file, a save_to_disk directory, a DatasetDict split with --split); DST
 * is written in the save_to_disk layout (datasets.load_from_disk opens
 * it). Progress on a terminal (progress.h). Top layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "progress.h"
#include "quiver/compute.h"
#include "quiver/dataset.h"
#include "quiver/hf.h"

static const char kJoinHelp[] =
    "usage: quiver join LEFT RIGHT (--on=COL[,COL...] | --left-on=... --right-on=...)\n"
    "                  [--how=inner|left|right|full|semi|anti] [--suffixes=L,R]\n"
    "                  [--split=NAME] [--memory-limit=SIZE] -o DST\n"
    "\n"
    "Hash join of two datasets on equal keys (SQL semantics: a null key never\n"
    "matches; NaN matches NaN and -0.0 matches 0.0). Keys of compatible types are\n"
    "unified (int32 with int64, string with large_string, a dictionary with its\n"
    "values, ...). The output holds every LEFT column, then RIGHT's non-key columns;\n"
    "a RIGHT column whose name is also a LEFT column's is suffixed (default\n"
    "--suffixes=,_right: LEFT names stay, RIGHT gets _right). right and full joins\n"
    "fill the key columns from RIGHT where the LEFT row is absent. semi / anti keep\n"
    "the LEFT rows with / without a match, in LEFT order. Row order: the order of\n"
    "the larger side (LEFT on ties), each row's matches in the other side's order,\n"
    "then the unmatched rows of the smaller side when the join keeps them.\n"
    "\n"
    "options:\n"
    "  --on COLS                key columns of both sides (comma separated)\n"
    "  --left-on COLS, --right-on COLS\n"
    "                           key columns named differently on each side\n"
    "  --how TYPE               inner (default), left, right, full (or outer), semi, anti\n"
    "  --suffixes L,R           suffixes of clashing column names (default ,_right)\n"
    "  --split NAME             the split of DatasetDict inputs\n"
    "  --memory-limit SIZE      working-memory budget of the build side's hash state\n"
    "                           (e.g. 4GB; default a quarter of RAM): past it the\n"
    "                           join spills both sides' keys to partition files in\n"
    "                           $TMPDIR (grace hash join), same result\n"
    "  -o, --output DIR         output directory (required)\n";

static const char kDistinctHelp[] =
    "usage: quiver distinct SRC [--on=COL[,COL...]] [--split=NAME] [--memory-limit=SIZE] -o DST\n"
    "\n"
    "Distinct rows: the first row of each distinct key of the --on columns (every\n"
    "column without --on), all columns, in order of first appearance (as DuckDB's\n"
    "DISTINCT ON keeps the first row). Keys compare by value bytes: NULL equals\n"
    "NULL, floats bitwise (0.0 and -0.0 differ, as datasets' unique).\n"
    "\n"
    "options:\n"
    "  --on COLS                key columns (comma separated; default: all)\n"
    "  --split NAME             the split of a DatasetDict SRC\n"
    "  --memory-limit SIZE      working-memory budget; accepted, runs in memory\n"
    "  -o, --output DIR         output directory (required)\n";

/* Split "a,b,c" in place into names (malloc'ed array); false on an empty name. */
static bool split_list(char *s, const char ***out, int32_t *n) {
  int32_t cap = 1;
  for (char *p = s; *p; p++) cap += *p == ',';
  const char **v = malloc(sizeof(char *) * (size_t)cap);
  if (!v) return false;
  int32_t k = 0;
  for (char *tok = s;;) {
    char *comma = strchr(tok, ',');
    if (comma) *comma = '\0';
    if (*tok == '\0') {
      free(v);
      return false;
    }
    v[k++] = tok;
    if (!comma) break;
    tok = comma + 1;
  }
  *out = v;
  *n = k;
  return true;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct bar_state {
  cli_progress bar;
  bool active;
} bar_state;

static void save_progress(void *ctx, const char *what, int64_t done, int64_t total) {
  bar_state *b = ctx;
  if (!b->active) {
    cli_progress_start_rows(&b->bar, what, total);
    b->active = true;
  }
  cli_progress_update(&b->bar, done, 0);
}

typedef struct cmd_args {
  const char *srcs[2];
  int n_srcs;
  const char *out, *split;
  char *on, *left_on, *right_on, *suffixes; /* copies, split in place */
  const char *how;
  int64_t memory_limit;
} cmd_args;

static void args_free(cmd_args *a) {
  free(a->on);
  free(a->left_on);
  free(a->right_on);
  free(a->suffixes);
}

static char *dup_s(const char *s) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

/* Parse the options; -1 to go on, else the exit code. */
static int parse(const char *name, bool join, int argc, char **argv, cmd_args *a) {
  memset(a, 0, sizeof *a);
  int want = join ? 2 : 1;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i], *v;
    bool m;
    if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
      fputs(join ? kJoinHelp : kDistinctHelp, stdout);
      return QV_EXIT_OK;
    }
    if ((v = cli_opt_value(s, "-o", argc, argv, &i, &m)) || m ||
        (v = cli_opt_value(s, "--output", argc, argv, &i, &m)) || m) {
      if (!v || !*v) return cli_usage(name, "-o needs a directory");
      a->out = v;
    } else if ((v = cli_opt_value(s, "--split", argc, argv, &i, &m)) || m) {
      if (!v || !*v) return cli_usage(name, "--split needs a name");
      a->split = v;
    } else if ((v = cli_opt_value(s, "--on", argc, argv, &i, &m)) || m) {
      if (!v || !*v) return cli_usage(name, "--on needs column names");
      free(a->on);
      a->on = dup_s(v);
    } else if (join && ((v = cli_opt_value(s, "--left-on", argc, argv, &i, &m)) || m)) {
      if (!v || !*v) return cli_usage(name, "--left-on needs column names");
      free(a->left_on);
      a->left_on = dup_s(v);
    } else if (join && ((v = cli_opt_value(s, "--right-on", argc, argv, &i, &m)) || m)) {
      if (!v || !*v) return cli_usage(name, "--right-on needs column names");
      free(a->right_on);
      a->right_on = dup_s(v);
    } else if (join && ((v = cli_opt_value(s, "--how", argc, argv, &i, &m)) || m)) {
      qv_join_type how;
      if (!v || !qv_join_type_parse(v, &how))
        return cli_usage(name,
                         "--how must be inner, left, right, full, outer, semi or anti, found '%s'",
                         v ? v : "");
      a->how = v;
    } else if (join && ((v = cli_opt_value(s, "--suffixes", argc, argv, &i, &m)) || m)) {
      if (!v || !strchr(v, ',') || strchr(strchr(v, ',') + 1, ','))
        return cli_usage(name, "--suffixes must be LEFT,RIGHT (e.g. ',_right'), found '%s'",
                         v ? v : "");
      free(a->suffixes);
      a->suffixes = dup_s(v);
    } else if ((v = cli_opt_value(s, "--memory-limit", argc, argv, &i, &m)) || m) {
      qv_error err;
      if (!v || qv_hf_parse_size(v, &a->memory_limit, &err) != QV_OK || a->memory_limit <= 0)
        return cli_usage(name, "--memory-limit must be a size such as 4GB, found '%s'", v ? v : "");
    } else if (s[0] == '-' && s[1] != '\0') {
      return cli_usage(name, "unknown option '%s'", s);
    } else {
      if (a->n_srcs == want)
        return cli_usage(name, "unexpected argument '%s' (%s takes %s)", s, name,
                         join ? "LEFT and RIGHT" : "one SRC");
      a->srcs[a->n_srcs++] = s;
    }
  }
  if (a->n_srcs < want) return cli_usage(name, "%s", join ? "needs LEFT and RIGHT" : "needs SRC");
  if (!a->out) return cli_usage(name, "-o DST is required");
  if (join) {
    if (a->on && (a->left_on || a->right_on))
      return cli_usage(name, "--on and --left-on/--right-on exclude each other");
    if (!a->on && (!a->left_on || !a->right_on))
      return cli_usage(name, "give --on, or both --left-on and --right-on");
  }
  return -1;
}

static int run(bool join, int argc, char **argv) {
  const char *name = join ? "join" : "distinct";
  cmd_args a;
  int rc = parse(name, join, argc, argv, &a);
  if (rc >= 0) {
    args_free(&a);
    return rc;
  }
  const char **lon = NULL, **ron = NULL;
  int32_t nl = 0, nr = 0;
  char *lsuf = NULL, *rsuf = NULL;
  if (a.suffixes) {
    char *comma = strchr(a.suffixes, ',');
    *comma = '\0';
    lsuf = a.suffixes;
    rsuf = comma + 1;
  }
  char *lspec = a.on ? a.on : a.left_on, *rspec = a.on ? NULL : a.right_on;
  if (lspec && !split_list(lspec, &lon, &nl))
    rc = cli_usage(name, "%s has an empty column name", a.on ? "--on" : "--left-on");
  else if (rspec && !split_list(rspec, &ron, &nr))
    rc = cli_usage(name, "--right-on has an empty column name");
  else if (join && rspec && nl != nr)
    rc = cli_usage(name, "--left-on names %d columns but --right-on %d", nl, nr);
  if (rc >= 0) {
    free(lon);
    free(ron);
    args_free(&a);
    return rc;
  }
  qv_error err;
  err.message[0] = '\0';
  qv_dataset *in[2] = {NULL, NULL}, *res = NULL;
  qv_status st = QV_OK;
  double t0 = now_s();
  for (int k = 0; k < a.n_srcs && st == QV_OK; k++)
    st = cli_open_dataset(a.srcs[k], a.split, NULL, &in[k], &err);
  bar_state bs;
  memset(&bs, 0, sizeof bs);
  cli_progress op;
  if (st == QV_OK) {
    int64_t rows = qv_dataset_num_rows(in[0]) + (in[1] ? qv_dataset_num_rows(in[1]) : 0);
    cli_progress_start_rows(&op, name, rows);
    if (join) {
      qv_join_options o;
      memset(&o, 0, sizeof o);
      qv_join_type_parse(a.how ? a.how : "inner", &o.how);
      o.left_on = lon;
      o.right_on = ron;
      o.n_keys = nl;
      o.left_suffix = lsuf;
      o.right_suffix = rsuf;
      o.memory_limit = a.memory_limit;
      st = qv_dataset_join(in[0], in[1], &o, &res, &err);
    } else {
      st = qv_dataset_distinct(in[0], lon, nl, &res, &err);
    }
    if (st == QV_OK) cli_progress_update(&op, rows, 0);
    cli_progress_finish(&op, st == QV_OK);
  }
  int64_t shards = 0;
  if (st == QV_OK) {
    qv_save_options so;
    memset(&so, 0, sizeof so);
    so.progress = save_progress;
    so.progress_ctx = &bs;
    st = qv_dataset_save_to_disk(res, a.out, &so, &shards, &err);
    if (bs.active) cli_progress_finish(&bs.bar, st == QV_OK);
  }
  if (st == QV_OK) {
    if (join)
      printf(
          "join: %s %s (%lld rows) x %s (%lld rows): %lld rows, %d columns -> %s "
          "(%lld shard%s, fingerprint %s) in %.2f s\n",
          a.how ? a.how : "inner", a.srcs[0], (long long)qv_dataset_num_rows(in[0]), a.srcs[1],
          (long long)qv_dataset_num_rows(in[1]), (long long)qv_dataset_num_rows(res),
          qv_dataset_num_columns(res), a.out, (long long)shards, shards == 1 ? "" : "s",
          qv_dataset_fingerprint(res), now_s() - t0);
    else
      printf(
          "distinct: %s (%lld rows): %lld distinct rows -> %s (%lld shard%s, fingerprint %s) "
          "in %.2f s\n",
          a.srcs[0], (long long)qv_dataset_num_rows(in[0]), (long long)qv_dataset_num_rows(res),
          a.out, (long long)shards, shards == 1 ? "" : "s", qv_dataset_fingerprint(res),
          now_s() - t0);
    rc = QV_EXIT_OK;
  } else {
    /* A key type the join cannot pair is the caller's choice of columns. */
    rc = cli_fail(st, &err);
    if (st == QV_ETYPE) rc = QV_EXIT_USAGE;
  }
  qv_dataset_unref(res);
  qv_dataset_unref(in[0]);
  qv_dataset_unref(in[1]);
  free(lon);
  free(ron);
  args_free(&a);
  return rc;
}

int cmd_join(int argc, char **argv) { return run(true, argc, argv); }
int cmd_distinct(int argc, char **argv) { return run(false, argc, argv); }
