/*
 * main.c — the quiver command-line tool: dispatch to subcommands, global
 * --help / --version, and the helpers every subcommand shares (cli.h).
 * Top layer; uses the public library API only.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char kUsage[] =
    "usage: quiver COMMAND [ARGS...]\n"
    "\n"
    "Open Apache Arrow IPC files (file format / Feather v2, and streams) zero-copy.\n"
    "\n"
    "commands:\n"
    "  info PATH [--json]            format, size, rows, batches, schema and metadata\n"
    "                                (PATH may be a Hugging Face datasets directory)\n"
    "  head PATH [-n N]              first N rows (default 10) as JSON lines\n"
    "  get PATH ROW...               the given rows (0-based) as JSON lines\n"
    "                                head/get: [--decode-labels] [--split NAME]\n"
    "  integration --mode=MODE --arrow=PATH --json=PATH\n"
    "                                Arrow integration-test contract: VALIDATE,\n"
    "                                ARROW_TO_JSON, JSON_TO_ARROW\n"
    "  convert IN OUT [--format=file|stream] [--compression=none|lz4|zstd[:LEVEL]]\n"
    "                 [--batch-size=N]  rewrite an Arrow file or stream ('-' = stdio)\n"
    "  convert IN OUT [--from=F] [--to=F]  between Arrow, CSV (.csv/.tsv) and JSON\n"
    "                                Lines (.json/.jsonl)\n"
    "  debug row-layout PATH --keys=COL[,COL...]\n"
    "                                row-table encoding of key columns as JSON\n"
    "\n"
    "dataset commands (SRC: file, Dataset or DatasetDict directory; DST: a\n"
    "save_to_disk directory that datasets.load_from_disk opens):\n"
    "  select SRC (--indices=FILE | --range=A:B) -o DST   rows by position\n"
    "  shuffle SRC [--seed=N] -o DST  shuffle as datasets' shuffle(seed=N)\n"
    "  sort SRC --by=COL[:desc],... -o DST   stable sort\n"
    "  filter SRC --where=EXPR -o DST  rows where EXPR is true\n"
    "  shard SRC --num-shards=N --index=I [--strided] -o DST\n"
    "  split SRC [--test-size=X] [--train-size=X] [--seed=N] -o DST\n"
    "                                train/test DatasetDict\n"
    "  concat SRC SRC... [--axis=0|1] -o DST\n"
    "  flatten SRC -o DST            rows as seen, indices flattened\n"
    "  map SRC --set NAME=EXPR... [--remove-columns A,B] -o DST\n"
    "                                batched map computing columns from expressions\n"
    "  import SRC... -o DST [--split NAME]  CSV / JSON Lines files as the directory\n"
    "                                load_dataset(...).save_to_disk writes\n"
    "  groupby SRC --by=COL[,COL...] --agg='EXPR [AS NAME]'... [--sort] -o DST\n"
    "                                hash group-by with aggregates (sum, mean, median...)\n"
    "  join LEFT RIGHT --on=COL,... [--how=inner|left|right|full|semi|anti] -o DST\n"
    "                                hash join (left columns, then right's non-key ones)\n"
    "  distinct SRC [--on=COL,...] -o DST   first row of each distinct key\n"
    "  (every dataset command: --cache writes and reuses cache-<fingerprint>.arrow\n"
    "   files beside SRC, as datasets does)\n"
    "\n"
    "  serve PATH [--host=H] [--port=N] [--open]\n"
    "                                a read-only viewer in the browser (docs/serve.md)\n"
    "\n"
    "options:\n"
    "  -h, --help                    show help (also 'quiver COMMAND --help')\n"
    "  --version                     print the version\n"
    "\n"
    "exit status: 0 ok, 1 bad data or failure, 2 bad usage.\n";

int cli_fail(qv_status st, const qv_error *err) {
  fprintf(stderr, "quiver: %s\n", err ? err->message : qv_status_name(st));
  return st == QV_EARG ? QV_EXIT_USAGE : QV_EXIT_DATA;
}

int cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "quiver %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\ntry 'quiver %s --help'\n", cmd);
  va_end(ap);
  return QV_EXIT_USAGE;
}

const char *cli_opt_value(const char *arg, const char *name, int argc, char **argv, int *i,
                          bool *matched) {
  size_t n = strlen(name);
  *matched = false;
  if (strncmp(arg, name, n) != 0) return NULL;
  if (arg[n] == '=') {
    *matched = true;
    return arg + n + 1;
  }
  if (arg[n] != '\0') {
    if (n != 2 || name[0] != '-' || name[1] == '-') return NULL;
    *matched = true; /* "-n5": a short option's value attached */
    return arg + n;
  }
  *matched = true;
  if (*i + 1 >= argc) return NULL;
  (*i)++;
  return argv[*i];
}

bool cli_parse_i64(const char *s, int64_t *out) {
  if (s == NULL || *s == '\0' || *s == '-' || *s == '+') return false;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0) return false;
  *out = v;
  return true;
}

bool cli_parse_i64_in(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  int64_t v = 0;
  if (!cli_parse_i64(s, &v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool cli_parse_signed_i64(const char *s, int64_t *out) {
  if (s == NULL || *s == '\0' || *s == '+') return false;
  int64_t v = 0;
  if (!cli_parse_i64(s[0] == '-' ? s + 1 : s, &v)) return false;
  *out = s[0] == '-' ? -v : v;
  return true;
}

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
} command;

static const command kCommands[] = {
    {"info", cmd_info},       {"head", cmd_head},
    {"get", cmd_get},         {"integration", cmd_integration},
    {"convert", cmd_convert}, {"debug", cmd_debug},
    {"select", cmd_select},   {"shuffle", cmd_shuffle},
    {"sort", cmd_sort},       {"filter", cmd_filter},
    {"shard", cmd_shard},     {"split", cmd_split},
    {"concat", cmd_concat},   {"flatten", cmd_flatten},
    {"map", cmd_map},         {"import", cmd_import},
    {"serve", cmd_serve},     {"groupby", cmd_groupby},
    {"join", cmd_join},       {"distinct", cmd_distinct},
};

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(kUsage, stderr);
    return QV_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("quiver %s\n", qv_version());
    return QV_EXIT_OK;
  }
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    fputs(kUsage, stdout);
    return QV_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof kCommands / sizeof kCommands[0]; i++)
    if (strcmp(cmd, kCommands[i].name) == 0) return kCommands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "quiver: unknown command '%s'\n", cmd);
  fputs(kUsage, stderr);
  return QV_EXIT_USAGE;
}
