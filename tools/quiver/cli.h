/*
 * cli.h — shared helpers of the quiver command-line tool: exit codes,
 * error reporting, option parsing. Top layer.
 */
#ifndef QUIVER_CLI_H
#define QUIVER_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "quiver/core.h"
#include "quiver/dataset.h"
#include "quiver/ipc.h"

/* Exit codes: the conventional contract of the tool. */
#define QV_EXIT_OK 0
#define QV_EXIT_DATA 1  /* bad data, I/O failure, a difference found */
#define QV_EXIT_USAGE 2 /* bad usage: unknown option, missing or bad argument */

/** Print "quiver: <message>" to stderr and return the exit code for st. */
int cli_fail(qv_status st, const qv_error *err);
/** Print a usage error ("quiver CMD: ...", then "try 'quiver CMD --help'"). */
int cli_usage(const char *cmd, const char *fmt, ...) QV_PRINTF(2, 3);

/** If arg is "--name=VALUE" return VALUE; if it is "--name", take the next
 *  argument (advancing *i) — NULL with *matched set when absent. A short
 *  option ("-n") also takes its value attached, as getopt does ("-n5"). */
const char *cli_opt_value(const char *arg, const char *name, int argc, char **argv, int *i,
                          bool *matched);
/** Parse a non-negative int64 (decimal). False on junk or overflow. */
bool cli_parse_i64(const char *s, int64_t *out);
/** Parse a non-negative int64 (decimal) in [lo, hi] (lo >= 0). False on
 *  junk, overflow or a value outside; *out untouched then. */
bool cli_parse_i64_in(const char *s, int64_t lo, int64_t hi, int64_t *out);
/** Parse an int64 (decimal, optionally negative). False on junk or overflow. */
bool cli_parse_signed_i64(const char *s, int64_t *out);

/* hfdir.c: Hugging Face `datasets` directories (save_to_disk Dataset /
 * DatasetDict, load_dataset cache directories) and indices mapping files. */
bool cli_is_directory(const char *path);
int cli_info_dir(const char *path, bool as_json, bool all_files);
/* `quiver info` on a Parquet file (info_parquet.c). */
int cli_info_parquet(const char *path, bool as_json);
/* The dataset a command reads, from a classified path (borrowed): with
 * `data`, the path is an indices mapping file applied to
 * qv_dataset_open(data, split) (QV_EARG when it is a directory); else the
 * path's dataset. The library's typed choices get the CLI's words ("choose
 * one with --split NAME", "(quiver: --data PATH [--split NAME])"). *out: a
 * new reference. */
qv_status cli_open_classified(const qv_path_info *info, const char *split, const char *data,
                              qv_dataset **out, qv_error *err);
/* cli_open_classified of qv_path_classify(path). */
qv_status cli_open_dataset(const char *path, const char *split, const char *data, qv_dataset **out,
                           qv_error *err);
/* Row `row` of `total` as a row number: negative rows count from the end
 * (-1 is the last, as Python indexing); QV_ERANGE naming `path` outside
 * ("the `what` has N rows"). */
qv_status cli_resolve_row(const char *path, const char *what, int64_t row, int64_t total,
                          int64_t *out, qv_error *err);
/* head (rows == NULL: the first head_n rows) or get (the given rows, which
 * may be negative) of a classified path through the dataset layer (see
 * cli_open_classified). */
int cli_rows_dataset(const qv_path_info *info, const char *split, const char *data,
                     bool decode_labels, int64_t head_n, const int64_t *rows, int64_t n_rows);

/* quiver debug hf-emit / hf-features (hfdir.c) */
int cli_debug_hf_emit(int argc, char **argv);
int cli_debug_hf_features(int argc, char **argv);

int cmd_info(int argc, char **argv);
int cmd_head(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_integration(int argc, char **argv);
int cmd_convert(int argc, char **argv);
/* convert.c: parse an Arrow IPC --compression value, "none", "lz4", "zstd"
 * or "zstd:LEVEL" (also "lz4:LEVEL"); false on anything else. The one
 * parser of every convert route writing Arrow. */
bool cli_parse_ipc_compression(const char *s, qv_compression *c, int *level);
/* convert_text.c: convert when either side is CSV or JSON Lines; whether
 * s ends in suf (ASCII case ignored; suf in lower case) */
bool cli_has_suffix(const char *s, const char *suf);
bool cli_convert_is_text(int argc, char **argv);
int cmd_convert_text(int argc, char **argv);
/* `quiver info` of a CSV / JSON Lines file (kind QV_PATH_CSV / QV_PATH_JSON) */
int cli_info_text(const char *path, qv_path_kind kind, bool as_json);
/* convert_parquet.c: `convert` to Parquet (OUT *.parquet or --to=parquet) */
bool cli_convert_to_parquet(int argc, char **argv);
int cmd_convert_parquet(int argc, char **argv);
int cmd_debug(int argc, char **argv);
/* dataset_cmds.c */
int cmd_select(int argc, char **argv);
int cmd_shuffle(int argc, char **argv);
int cmd_sort(int argc, char **argv);
int cmd_filter(int argc, char **argv);
int cmd_shard(int argc, char **argv);
int cmd_split(int argc, char **argv);
int cmd_concat(int argc, char **argv);
int cmd_flatten(int argc, char **argv);
int cmd_map(int argc, char **argv);
/* import.c */
int cmd_import(int argc, char **argv);
/* serve.c */
int cmd_serve(int argc, char **argv);
/* groupby.c */
int cmd_groupby(int argc, char **argv);
/* join.c */
int cmd_join(int argc, char **argv);
int cmd_distinct(int argc, char **argv);

#endif
