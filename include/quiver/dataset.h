/*
 * quiver/dataset.h — the Dataset: the object users of Hugging Face
 * `datasets` work with (arrow_dataset.py), re-created over quiver's tables.
 *
 * A qv_dataset is
 *   - a data table (any kind: in memory, memory-mapped, concatenation),
 *   - an optional indices mapping: a table with one uint64 column named
 *     "indices" whose row i is the data row that dataset row i shows
 *     (memory-mapped from a `cache-<fingerprint>.arrow` file, or in memory),
 *   - a fingerprint (16 hex digits; see fingerprint.h),
 *   - the `datasets` features (logical column types), the dataset info
 *     (dataset_info.json), the split name and the output format
 *     (state.json's _format_* fields), carried through every transform.
 * Row access, slices, index lists, column access and iteration all go
 * through the mapping. Iterating a dataset with a mapping gathers a window
 * of rows at a time with qv_table_gather (which groups rows by source
 * batch), never row by row.
 *
 * Transforms follow `datasets`' semantics and return a new dataset; the
 * input is unchanged (datasets are immutable and reference-counted):
 *   select (a contiguous range is a zero-copy slice of the data, or of the
 *   mapping; anything else composes a new mapping with the existing one),
 *   shuffle (numpy's default_rng(seed).permutation), sort, filter, shard,
 *   split_by_node, train_test_split, flatten_indices, concatenate, column
 *   renames / removals / selections / casts, add_column, map.
 * Each result's fingerprint is qv_fingerprint_update(previous, transform,
 * arguments) with the transform names and arguments listed per function;
 * only arguments that decide the result are hashed (not keep_in_memory,
 * cache file names or writer batch sizes), and arguments left at their
 * default are omitted.
 *
 * Cache files, as `datasets` writes them. A dataset is "file-backed" when
 * qv_dataset_cache_files lists at least one file; the cache directory is
 * the directory of the first. shuffle, sort, train_test_split and filter
 * of a file-backed dataset write their indices mapping to
 * `<cache dir>/cache-<new fingerprint>.arrow` (an Arrow IPC stream with one
 * uint64 column "indices" and the `huggingface` metadata {"info":
 * {"features": ...}, "fingerprint": ...}) and map the result; map and
 * flatten_indices write their output there too. select keeps its mapping
 * in memory unless a cache file name is given (as datasets). When the file
 * exists already, it is reused instead of recomputed (unless
 * `ignore_cache`); a damaged one (truncated, or refused by the reader) is
 * moved aside to `<file>.corrupt-<unix time>` with a warning (see
 * qv_dataset_set_warning_handler) and rebuilt. keep_in_memory keeps
 * everything in memory. Every file is written atomically (temporary +
 * fsync + rename, writer.h), so a crash never leaves a torn file under a
 * name a later run would reuse; the temporaries a killed writer leaves are
 * removed by the next write in that directory (docs/writing.md).
 *
 * Thread safety: a dataset is immutable; several threads may read it and
 * transform it concurrently (each transform builds a new dataset). An
 * iterator belongs to one thread.
 *
 * The dataset layer; sits on table, compute (expressions), ipc and core.
 */
#ifndef QUIVER_DATASET_H
#define QUIVER_DATASET_H

#include "quiver/array.h"
#include "quiver/compute.h"
#include "quiver/core.h"
#include "quiver/fingerprint.h"
#include "quiver/hf.h"
#include "quiver/table.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qv_dataset qv_dataset;

/** Rows per record batch of the files quiver writes for datasets (as
 *  `datasets`' writer_batch_size default). */
#define QV_DATASET_WRITER_BATCH_SIZE 1000
/** Rows per record batch of the indices mappings quiver writes when no
 *  writer_batch_size is given (8-byte rows: 512 KiB per batch; datasets
 *  writes 1,000, and reads any). */
#define QV_DATASET_INDICES_BATCH_SIZE 65536
/** Default rows per batch handed to map callbacks (datasets' batch_size). */
#define QV_DATASET_MAP_BATCH_SIZE 1000
/** Rows an iterator over a dataset with an indices mapping gathers at once
 *  (at least the batch size): batches are then zero-copy slices of that
 *  window, so small batches do not pay one gather each. */
#define QV_DATASET_READAHEAD_ROWS 4096
/** Name of the indices mapping's column. */
#define QV_DATASET_INDICES_COLUMN "indices"

/**
 * Progress report of a long operation (map, filter, flatten, save):
 * `done` of `total` rows processed. `what` names the phase ("map",
 * "save"...). Called from the calling thread only, at most every few
 * thousand rows.
 */
typedef void (*qv_progress_fn)(void *ctx, const char *what, int64_t done, int64_t total);

/**
 * Options shared by the transforms that may write a cache file. A
 * zero-initialised struct (or NULL) gives `datasets`' defaults.
 */
typedef struct qv_dataset_options {
  /** Keep indices mappings / map outputs in memory, never in a file. */
  bool keep_in_memory;
  /** Do not reuse an existing cache file: recompute and replace it
   *  (datasets' load_from_cache_file=False). */
  bool ignore_cache;
  /** Explicit path of the cache file to write (datasets'
   *  indices_cache_file_name / cache_file_name), NULL for the default
   *  `<cache dir>/cache-<fingerprint>.arrow`. With keep_in_memory: QV_EARG. */
  const char *cache_file_name;
  /** Rows per record batch of written files; 0 = QV_DATASET_WRITER_BATCH_SIZE
   *  (QV_DATASET_INDICES_BATCH_SIZE for indices mappings). */
  int64_t writer_batch_size;
  /** Fingerprint to give the result instead of the computed one (must pass
   *  qv_fingerprint_validate). */
  const char *new_fingerprint;
  /** Progress callback (may be NULL) and its context. */
  qv_progress_fn progress;
  void *progress_ctx;
} qv_dataset_options;

/* ------------------------------------------------------------------------ */
/* Construction and lifetime                                                 */

/**
 * A dataset over `data` (a reference is taken), without indices mapping.
 * The features are resolved from the table's schema
 * (qv_hf_features_resolve). The fingerprint is `fingerprint` when not NULL
 * (validated), else the one in the schema's `huggingface` metadata, else:
 * for a mapped table of one whole file without replays, that file's
 * identity fingerprint (qv_fingerprint_of_file); for any other table
 * update("quiver-table", "quiver.from_table", {recipe: bytes of
 * qv_table_recipe}) — deterministic, O(size) for in-memory data.
 */
QV_API qv_status qv_dataset_from_table(qv_table *data, const char *fingerprint, qv_dataset **out,
                                       qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Opening a path: one classification, one open (dataset_open.c)            */

/** What a path holds. */
typedef enum qv_path_kind {
  QV_PATH_ARROW_FILE = 0, /**< an Arrow IPC file ("ARROW1" magic; Feather v2) */
  QV_PATH_ARROW_STREAM,   /**< an Arrow IPC stream (0xFFFFFFFF continuation
                               marker, or a pre-0.15 length prefix) */
  QV_PATH_INDICES,        /**< an Arrow file or stream named cache-*.arrow
                               whose schema is one uint64 column "indices"
                               (qv_path_classify only; sniffing says
                               ARROW_FILE / ARROW_STREAM) */
  QV_PATH_DATASET,        /**< a save_to_disk Dataset directory (state.json) */
  QV_PATH_DATASET_DICT,   /**< a save_to_disk DatasetDict directory
                               (dataset_dict.json) */
  QV_PATH_CACHE_DIR,      /**< any other directory: a load_dataset cache
                               directory of *.arrow files */
  QV_PATH_PARQUET,        /**< Parquet ("PAR1"; "PARE", encrypted, is refused
                               when read): read by quiver/parquet.h */
  QV_PATH_CSV,            /**< CSV text (.csv / .tsv, or text with separators
                               on its first line): read whole by quiver/csv.h */
  QV_PATH_JSON            /**< JSON Lines (.json / .jsonl / .ndjson, or text
                               starting with '{' or '['): quiver/jsonl.h */
} qv_path_kind;

/** Short name of a kind ("arrow file", "arrow stream", "indices mapping",
 *  "dataset", "dataset dict", "cache directory", "parquet", "csv",
 *  "json"). Static. */
QV_API const char *qv_path_kind_name(qv_path_kind kind);

/**
 * Sniff `path` without parsing it: a directory by its marker files
 * (dataset_dict.json, state.json, else a cache directory), a regular file
 * by its first bytes (text by its extension first: .csv/.tsv CSV,
 * .json/.jsonl/.ndjson JSON). Only reads those bytes (one pread). Errors,
 * which name the path: QV_EIO when it cannot be stat()ed or read;
 * QV_EINVAL for anything else ("PATH: not an Arrow, Parquet, CSV or JSON file: found
 * 6e 6f 74 20 ... ("not ...")", or "...: the file is empty"). Parquet, CSV
 * and JSON files are QV_OK: qv_path_classify opens Parquet lazily
 * (qv_table_open_parquet: footer only, row groups decoded on use) and
 * converts CSV and JSON once, streaming, into a cached Arrow file that it
 * maps (qv_table_open_text; pyarrow.parquet / pyarrow.csv / pyarrow.json's
 * types), which opens as a dataset.
 */
QV_API qv_status qv_path_sniff(const char *path, qv_path_kind *out, qv_error *err) QV_NODISCARD;

/**
 * A path classified once (qv_path_classify), handed to
 * qv_dataset_open_classified so that nothing is opened twice. Owns what it
 * holds; release with qv_path_info_reset.
 */
typedef struct qv_path_info {
  qv_path_kind kind;
  char *path; /**< the path as given (owned) */
  /** ARROW_FILE / ARROW_STREAM / INDICES: the file memory-mapped
   *  (qv_table_open_path; owned reference); PARQUET: the file opened
   *  lazily (qv_table_open_parquet; owned reference); CSV / JSON: the
   *  file's Arrow conversion mapped (qv_table_open_text; owned
   *  reference); else NULL. */
  qv_table *table;
  /** INDICES: the largest value of the mapping (-1 when empty, INT64_MAX
   *  when >= 2^63), from the one pass that also refused nulls. */
  int64_t indices_max;
  /** DATASET / DATASET_DICT / CACHE_DIR: the directory as qv_hf_dir_open
   *  lists it (owned), else NULL. */
  qv_hf_dir *dir;
} qv_path_info;

/* ------------------------------------------------------------------------ */
/* CSV and JSON Lines sources                                                */

/** How a CSV / JSON Lines file is converted (zero-initialised: the open
 *  path's pyarrow types, the cache on). */
typedef struct qv_text_open_options {
  /** CSV: the types datasets.load_dataset("csv") gets (pandas.read_csv;
   *  qv_csv_read_options.pandas_types) instead of pyarrow.csv's. */
  bool pandas_types;
  /** CSV: the delimiter (0: ',', or '\t' for a .tsv path). */
  char delimiter;
  /** Do not look up or write the per-user cache: convert into a private
   *  temporary (unlinked once mapped). The cache is also off when
   *  QV_INDEX_CACHE=0 (off/no/false), the stream index's switch. */
  bool no_cache;
} qv_text_open_options;

/**
 * A CSV (`kind` QV_PATH_CSV) or JSON Lines (QV_PATH_JSON) file as a mapped
 * Arrow table, as datasets.load_dataset does it: the file is converted
 * once, streaming (qv_csv_stream_path / qv_jsonl_stream_path: memory
 * O(cores x block), never the decoded file), into an Arrow IPC stream in
 * the per-user cache directory ($XDG_CACHE_HOME/quiver, else
 * ~/.cache/quiver), named text-<dev>-<inode>-<variant>-<key>.arrow
 * where <key> hashes the file's size, mtime, xxh64 of its first and last 4 KiB and
 * the options; that file is mapped, and a later open of the unchanged file
 * maps it again without reading the text. A changed file (any part of the
 * key) is converted again and its stale conversions removed. The text
 * conversions are bounded together to QV_TEXT_CACHE_MAX_BYTES (default
 * 8 GiB), least recently used removed first (the one just written is
 * kept). Writes are atomic. When the cache is off or cannot be written the
 * conversion goes to a temporary in $TMPDIR (else /tmp), unlinked once
 * mapped. `options` may be NULL. Errors are the readers' (file, line,
 * column); QV_ECHANGED when the file changed while it was converted.
 * *out: a new reference.
 */
QV_API qv_status qv_table_open_text(const char *path, qv_path_kind kind,
                                    const qv_text_open_options *options, qv_table **out,
                                    qv_error *err) QV_NODISCARD;

/**
 * qv_table_open_text as a dataset (Dataset.from_csv / from_json,
 * load_dataset("csv"|"json")), whatever the path's extension. The
 * fingerprint is that of the text file (qv_fingerprint_of_file).
 */
QV_API qv_status qv_dataset_open_text(const char *path, qv_path_kind kind,
                                      const qv_text_open_options *options, qv_dataset **out,
                                      qv_error *err) QV_NODISCARD;

/**
 * At least the first `rows` rows of a CSV / JSON Lines file (all of them
 * when it has fewer), for `quiver head`: the cached conversion when there
 * is a valid one, else only the first window(s) of the text are read and
 * parsed (the types are then those the first windows infer, as
 * pyarrow.csv.open_csv's streaming reader does), into an in-memory table;
 * nothing is cached and the rest of the file is never read (a malformed
 * line after them is not seen). *out: a new reference.
 */
QV_API qv_status qv_table_open_text_head(const char *path, qv_path_kind kind, int64_t rows,
                                         qv_table **out, qv_error *err) QV_NODISCARD;

/**
 * Classify `path` and open what it is, once: a file is sniffed
 * (qv_path_sniff), mapped as a table and, when named cache-*.arrow with
 * one uint64 column "indices", scanned once (nulls refused, maximum
 * kept); a directory is listed with qv_hf_dir_open. `*out` is filled on
 * success (reset it with qv_path_info_reset) and zeroed on failure. Errors
 * name the path; those of qv_path_sniff for what is not Arrow.
 */
QV_API qv_status qv_path_classify(const char *path, qv_path_info *out, qv_error *err) QV_NODISCARD;
/** Release what `info` holds and zero it. NULL-safe. */
QV_API void qv_path_info_reset(qv_path_info *info);

/** Why an open needs the caller to choose (qv_dataset_choice.kind). */
typedef enum qv_dataset_choice_kind {
  QV_CHOICE_NONE = 0, /**< no choice needed (or another error) */
  QV_CHOICE_SPLIT,    /**< a DatasetDict or cache directory: no split
                           given and not exactly one, or the one given is
                           not there; `names` are the splits */
  QV_CHOICE_DATA      /**< an indices mapping whose data cannot be found
                           among the datasets of its directory (none or
                           several fit); `names` / `rows` are the
                           candidates (qv_hf_source names) */
} qv_dataset_choice_kind;

/**
 * A typed "choose a split" / "which data" failure, for front ends to put
 * in their own words (the library's error message names no option).
 * Filled by qv_dataset_open_ex / qv_dataset_open_classified when
 * requested; owns its strings; release with qv_dataset_choice_reset.
 */
typedef struct qv_dataset_choice {
  qv_dataset_choice_kind kind;
  qv_path_kind container; /**< SPLIT: DATASET_DICT, CACHE_DIR or DATASET;
                               DATA: INDICES */
  char *path;             /**< the directory (SPLIT) or indices file (DATA) */
  char *dir;              /**< DATA: the directory searched, else NULL */
  const char *wanted;     /**< SPLIT: the split asked for (borrowed from the
                               options), NULL when none was given */
  int64_t max_index;      /**< DATA: the mapping's largest value */
  int64_t n;              /**< number of names */
  char **names;           /**< SPLIT: split names in order; DATA: the
                               candidates that fit (several: ambiguous),
                               or, when none fits, every dataset there */
  int64_t *rows;          /**< DATA: rows of each name; SPLIT: NULL */
  bool ambiguous;         /**< DATA: several fit (else none does) */
} qv_dataset_choice;

/** Release what a choice holds and zero it. NULL-safe. */
QV_API void qv_dataset_choice_reset(qv_dataset_choice *choice);

/** Options of qv_dataset_open_ex. Zero-initialised (or NULL): defaults. */
typedef struct qv_dataset_open_options {
  /** The split of a DatasetDict or cache directory, or another dataset of
   *  a Dataset / cache directory (see qv_dataset_open). NULL: the only one. */
  const char *split;
  /** The data an indices mapping file indexes, opened itself with `split`
   *  (then `split` applies to it, not to the path). The path must be a
   *  file holding an indices mapping (QV_EARG for a directory). NULL: the
   *  data is found in the file's directory. */
  const char *data;
  /** Out, may be NULL: filled (after a reset) when the open fails because
   *  a choice is needed (QV_EARG for splits, QV_EINVAL for data), else
   *  left with kind QV_CHOICE_NONE. The caller resets it. */
  qv_dataset_choice *choice;
} qv_dataset_open_options;

/**
 * Open a dataset from `path`, as `datasets` would (qv_dataset_open_ex with
 * only a split):
 *  - an Arrow IPC file (stream or file format): Dataset.from_file — the
 *    file memory-mapped, fingerprint from its `huggingface` metadata or its
 *    identity (qv_fingerprint_of_file), features from its schema;
 *  - an indices mapping `cache-<fp>.arrow` (one uint64 column "indices",
 *    as shuffle / select / sort / filter / train_test_split write): the
 *    rows it maps, composed with the one dataset of its directory it can
 *    index (qv_dataset_open_indices_file). Dataset.from_file would show
 *    the raw `indices` column instead; open the table with
 *    qv_table_open_path + qv_dataset_from_table for that;
 *  - a save_to_disk Dataset directory: load_from_disk — the shards mapped
 *    and concatenated, fingerprint, split and format from state.json, info
 *    and features from dataset_info.json (the table is cast to the
 *    features' Arrow types when they differ, as datasets does);
 *  - a DatasetDict directory: the split named `split` (NULL: QV_EARG
 *    listing the splits). A split whose directory or files are missing
 *    fails only when it is opened, naming them; the others open;
 *  - a load_dataset cache directory (qv_hf_dir_open): the builder split
 *    named `split`, as DatasetBuilder.as_dataset gives it — its data files
 *    concatenated in shard order, features and info from
 *    dataset_info.json (cast as above), split name set, fingerprint as
 *    datasets computes it (see qv_hf_dir_open). NULL `split` opens the only
 *    split; with several (or none) QV_EARG lists the choices. In a cache or
 *    Dataset directory `split` may also name any other dataset of the
 *    directory (a qv_hf_source name: a data file's name, or a map worker
 *    group "cache-<fp>_*_of_<N>.arrow").
 * `split` must be NULL for a file. Errors name the path; a file that is
 * not Arrow gets qv_path_sniff's error. *out: a new reference.
 */
QV_API qv_status qv_dataset_open(const char *path, const char *split, qv_dataset **out,
                                 qv_error *err) QV_NODISCARD;

/**
 * qv_dataset_open with options: `options->data` names the data an indices
 * mapping file indexes, and `options->choice` receives a typed "choose a
 * split" / "which data" failure. Classifies the path once
 * (qv_path_classify) and opens from that (qv_dataset_open_classified).
 */
QV_API qv_status qv_dataset_open_ex(const char *path, const qv_dataset_open_options *options,
                                    qv_dataset **out, qv_error *err) QV_NODISCARD;

/**
 * Open the dataset a classified path holds (see qv_dataset_open_ex), using
 * what `info` already opened (borrowed; nothing is opened twice: the
 * table of a file is shared by the dataset, an indices mapping's parent
 * directory is listed without reopening it). `info` stays owned by the
 * caller and valid. *out: a new reference.
 */
QV_API qv_status qv_dataset_open_classified(const qv_path_info *info,
                                            const qv_dataset_open_options *options,
                                            qv_dataset **out, qv_error *err) QV_NODISCARD;

/**
 * Open dataset `source` (an index into dir->sources) of a directory
 * classified by qv_hf_dir_open: a builder split or the Dataset as
 * qv_dataset_open does; a map worker group as its files concatenated in
 * rank order with the group's fingerprint (datasets' map result); a file
 * as Dataset.from_file (never composed with anything).
 */
QV_API qv_status qv_dataset_open_source(const qv_hf_dir *dir, int64_t source, qv_dataset **out,
                                        qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Indices mapping files                                                     */

/**
 * `data` seen through the indices mapping in file `path` (datasets'
 * Dataset(arrow_table, indices_table=...)): the file must hold one uint64
 * column "indices" and every value must be a row of `data`, which must
 * not have a mapping itself (indices files always index a data table:
 * QV_EARG otherwise). Every value is checked (one pass over the mapped
 * file): QV_EINVAL "PATH: row R holds index V, outside the data's N rows"
 * for the first bad one, or naming a null row. The result keeps data's
 * features, info, split and format; its fingerprint is the one in the
 * file's `huggingface` metadata (what datasets gave the dataset that wrote
 * it), else update(data's, "quiver.indices_file", {file: the file's
 * identity fingerprint}).
 */
QV_API qv_status qv_dataset_with_indices_file(qv_dataset *data, const char *path, qv_dataset **out,
                                              qv_error *err) QV_NODISCARD;

/**
 * The datasets of `dir` (dir->sources) that an indices mapping file could
 * index: those with more rows than its largest value (all of them for an
 * empty mapping). `*out_sources` (free with free()) gets their indices,
 * `*out_n` their number and `*out_max` the largest value (-1 when empty;
 * INT64_MAX when >= 2^63). QV_EINVAL when `indices_path` is not an indices
 * mapping or holds a null.
 */
QV_API qv_status qv_dataset_indices_candidates(const qv_hf_dir *dir, const char *indices_path,
                                               int64_t **out_sources, int64_t *out_n,
                                               int64_t *out_max, qv_error *err) QV_NODISCARD;

/**
 * Open an indices mapping file with its data resolved automatically: the
 * candidates (qv_dataset_indices_candidates) among the datasets of the
 * file's directory; exactly one is opened and composed
 * (qv_dataset_with_indices_file). None or several: QV_EINVAL listing the
 * candidates with their row counts ("...: ambiguous: split 'train' (300
 * rows), cache-ab12.arrow (300 rows); name the data it indexes");
 * qv_dataset_open_ex gives the same failure as a qv_dataset_choice.
 */
QV_API qv_status qv_dataset_open_indices_file(const char *path, qv_dataset **out,
                                              qv_error *err) QV_NODISCARD;

/** Add a reference. Returns ds. NULL-safe. */
QV_API qv_dataset *qv_dataset_ref(qv_dataset *ds);
/** Drop a reference; frees on the last. NULL-safe. */
QV_API void qv_dataset_unref(qv_dataset *ds);

/* ------------------------------------------------------------------------ */
/* Inspection (all borrowed results live as long as the dataset)            */

/** Rows as seen through the mapping (the mapping's rows when there is one). */
QV_API int64_t qv_dataset_num_rows(const qv_dataset *ds);
QV_API int32_t qv_dataset_num_columns(const qv_dataset *ds);
/** Schema of the data table (columns of the dataset). */
QV_API const qv_schema *qv_dataset_schema(const qv_dataset *ds);
/** Index of a column by name, or -1. */
QV_API int32_t qv_dataset_column_index(const qv_dataset *ds, const char *name);
/** The fingerprint (NUL-terminated). */
QV_API const char *qv_dataset_fingerprint(const qv_dataset *ds);
/** The data table. */
QV_API qv_table *qv_dataset_data(const qv_dataset *ds);
/** The indices mapping (one uint64 column "indices"), or NULL. */
QV_API qv_table *qv_dataset_indices(const qv_dataset *ds);
/** Features: a QV_HF_DICT with one key per column, in column order. */
QV_API const qv_hf_feature *qv_dataset_features(const qv_dataset *ds);
/** Split name (state.json's _split), or NULL. */
QV_API const char *qv_dataset_split(const qv_dataset *ds);

/** Output format as kept in state.json (datasets' set_format). */
typedef struct qv_dataset_format {
  const char *type;        /**< _format_type, NULL for None (python) */
  const char *kwargs_json; /**< _format_kwargs as compact JSON object text */
  bool has_columns;        /**< false: _format_columns is null */
  int32_t n_columns;
  const char *const *columns; /**< _format_columns */
  bool output_all_columns;    /**< _output_all_columns */
} qv_dataset_format;

/** A copy of ds (same tables, shared) with fingerprint `fingerprint`
 *  (validated), as `datasets`' new_fingerprint arguments give. */
QV_API qv_status qv_dataset_with_fingerprint(qv_dataset *ds, const char *fingerprint,
                                             qv_dataset **out, qv_error *err) QV_NODISCARD;

/** The dataset's format (borrowed strings). */
QV_API qv_dataset_format qv_dataset_get_format(const qv_dataset *ds);

/**
 * A copy of ds with another output format (datasets' with_format /
 * set_format): `type` NULL for the default, `kwargs_json` NULL for "{}"
 * (must be a JSON object), `columns` NULL for all (each must be a column,
 * QV_EARG otherwise). Fingerprint: update(prev, "quiver.set_format",
 * {type, columns, output_all_columns, format_kwargs}).
 */
QV_API qv_status qv_dataset_with_format(qv_dataset *ds, const char *type, const char *kwargs_json,
                                        const char *const *columns, int32_t n_columns,
                                        bool output_all_columns, qv_dataset **out,
                                        qv_error *err) QV_NODISCARD;

/**
 * Every file mapped behind the dataset (data table, then indices mapping)
 * as qv_table_cache_files, de-duplicated, in order (datasets'
 * cache_files). Free with qv_table_free_paths.
 */
QV_API qv_status qv_dataset_cache_files(const qv_dataset *ds, char ***out_paths, int64_t *out_n,
                                        qv_error *err) QV_NODISCARD;

/**
 * Remove every `cache-*.arrow` file in the cache directory that is not one
 * of this dataset's cache files (datasets' cleanup_cache_files), the
 * quarantined `cache-*.arrow.corrupt-*` files, and the temporaries that
 * writers which are gone left there (`.<name>.tmp-quiver-<pid>-...`, see
 * docs/writing.md). Returns the number removed in *out_removed (0 for
 * datasets that are not file-backed). Other datasets that use files of
 * that directory are not known: as in datasets, callers must not clean up
 * under them. Files being written by live processes are never removed.
 */
QV_API qv_status qv_dataset_cleanup_cache_files(const qv_dataset *ds, int64_t *out_removed,
                                                qv_error *err) QV_NODISCARD;

/**
 * Where the dataset layer's warnings go: a damaged cache file met when a
 * transform would reuse it (truncated, or refused by the reader) is moved
 * aside to `<file>.corrupt-<unix time>` and rebuilt, with a warning naming
 * the file and what is wrong. `fn(ctx, message)` receives the message (no
 * trailing newline; valid during the call only), from the thread that met
 * the file. NULL restores the default, which writes "quiver: warning:
 * <message>" to stderr. Process-wide; set it before using datasets from
 * several threads.
 */
typedef void (*qv_warning_fn)(void *ctx, const char *message);
QV_API void qv_dataset_set_warning_handler(qv_warning_fn fn, void *ctx);

/* ------------------------------------------------------------------------ */
/* Row access (through the mapping)                                          */

/**
 * Rows `rows[0..n)` (dataset row numbers, any order, repeats allowed) as one
 * STRUCT array (offset 0) of the schema's type, gathered from the data
 * table. QV_ERANGE for a row outside [0, num_rows).
 */
QV_API qv_status qv_dataset_take(qv_dataset *ds, const int64_t *rows, int64_t n, qv_array **out,
                                 qv_error *err) QV_NODISCARD;

/** Row `row` as a one-row STRUCT array (zero copy without a mapping). */
QV_API qv_status qv_dataset_row(qv_dataset *ds, int64_t row, qv_array **out,
                                qv_error *err) QV_NODISCARD;

/**
 * Rows [offset, offset+length) as a table: a zero-copy slice of the data
 * without a mapping, else the rows gathered into an in-memory table.
 * QV_ERANGE outside the dataset.
 */
QV_API qv_status qv_dataset_slice(qv_dataset *ds, int64_t offset, int64_t length, qv_table **out,
                                  qv_error *err) QV_NODISCARD;

/**
 * Column `name` over every row of the dataset, as a one-column table
 * (zero copy without a mapping; gathered into memory otherwise). QV_EARG
 * for an unknown column.
 */
QV_API qv_status qv_dataset_column(qv_dataset *ds, const char *name, qv_table **out,
                                   qv_error *err) QV_NODISCARD;

/**
 * Data row behind rows [offset, offset+n) of the dataset, written to
 * out[0..n) (offset + i without a mapping). QV_EINVAL for a mapping value
 * that is null or >= 2^63.
 */
QV_API qv_status qv_dataset_data_rows(const qv_dataset *ds, int64_t offset, int64_t n, int64_t *out,
                                      qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Iteration                                                                  */

typedef struct qv_dataset_iter qv_dataset_iter;

/**
 * Iterate the dataset in batches of `batch_size` rows (>= 1; the last one
 * shorter unless drop_last_batch), as datasets' iter(batch_size). The
 * iterator holds a dataset reference. Batches are STRUCT arrays (offset 0,
 * no validity) of the schema's type: without a mapping, zero-copy slices
 * of the data batches (columns concatenated only when a batch straddles
 * two data batches); with a mapping, zero-copy slices of a window of
 * max(batch_size, QV_DATASET_READAHEAD_ROWS) rows gathered at once.
 */
QV_API qv_status qv_dataset_iter_new(qv_dataset *ds, int64_t batch_size, bool drop_last_batch,
                                     qv_dataset_iter **out, qv_error *err) QV_NODISCARD;

/** The next batch (a new reference the caller drops), or *out = NULL at
 *  the end. `*out_first_row` (may be NULL) gets its first dataset row. */
QV_API qv_status qv_dataset_iter_next(qv_dataset_iter *it, qv_array **out, int64_t *out_first_row,
                                      qv_error *err) QV_NODISCARD;

/** Free an iterator. NULL-safe. */
QV_API void qv_dataset_iter_free(qv_dataset_iter *it);

/**
 * Export the rows as the dataset shows them as an Arrow C Stream (struct
 * ArrowArrayStream, cdata.h; the schema is qv_dataset_schema). Without an
 * indices mapping: the data table's record batches, zero copy
 * (qv_table_export_stream). With one: batches of `batch_size` rows (0:
 * QV_DATASET_READAHEAD_ROWS) gathered through a dataset iterator. The
 * stream holds a dataset reference until its release; every exported
 * array holds references on the buffers (and so the mappings) it uses and
 * stays valid after the stream and the dataset are gone. `*out` is filled
 * only on success; the consumer calls its release.
 */
struct ArrowArrayStream;
QV_API qv_status qv_dataset_export_stream(qv_dataset *ds, int64_t batch_size,
                                          struct ArrowArrayStream *out, qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Indices-mapping transforms                                                */

/**
 * Rows by position (datasets' select): `indices[0..n)` are dataset rows
 * (0 <= i < num_rows, else QV_ERANGE; any order, repeats allowed).
 * n == 0 gives an empty dataset; a contiguous increasing run
 * (start, start+1, ...) is a zero-copy slice of the data (or of the
 * mapping, when there is one); anything else composes a new mapping with
 * the existing one, kept in memory unless opts->cache_file_name is given.
 * An empty input dataset is returned as is. Fingerprint: "quiver.select",
 * {indices: int array}.
 */
QV_API qv_status qv_dataset_select(qv_dataset *ds, const int64_t *indices, int64_t n,
                                   const qv_dataset_options *opts, qv_dataset **out,
                                   qv_error *err) QV_NODISCARD;

/** qv_dataset_select of rows [start, start+length) (a slice). */
QV_API qv_status qv_dataset_select_range(qv_dataset *ds, int64_t start, int64_t length,
                                         const qv_dataset_options *opts, qv_dataset **out,
                                         qv_error *err) QV_NODISCARD;

/**
 * Shuffle with `np.random.default_rng(seed).permutation(num_rows)`
 * (random.h), exactly as datasets' shuffle(seed=seed): the permutation is
 * composed with the existing mapping; a file-backed dataset writes it to
 * (or reuses) its cache file. Fingerprint: "quiver.shuffle", {seed}.
 */
QV_API qv_status qv_dataset_shuffle(qv_dataset *ds, uint64_t seed, const qv_dataset_options *opts,
                                    qv_dataset **out, qv_error *err) QV_NODISCARD;

/**
 * Stable sort by `columns[0..n)` (n >= 1; repeats allowed), each
 * descending when `descending[i]` (NULL: all ascending), nulls placed by
 * `nulls` for every key, as datasets' sort (pyarrow.compute.sort_indices
 * over the rows as mapped; compute.h's order: NaN between numbers and
 * nulls). Only the key columns are gathered. The order is composed with
 * the existing mapping; cache files as shuffle. Fingerprint: "quiver.sort",
 * {column_names: list, reverse: list of bool, null_placement: "at_end" |
 * "at_start"}. QV_EARG for an unknown column (datasets' message),
 * QV_ETYPE for a key type that cannot be ordered.
 */
QV_API qv_status qv_dataset_sort(qv_dataset *ds, const char *const *columns, int32_t n,
                                 const bool *descending, qv_null_placement nulls,
                                 const qv_dataset_options *opts, qv_dataset **out,
                                 qv_error *err) QV_NODISCARD;

/**
 * Distinct values of a column, in order of first appearance (datasets'
 * unique: pyarrow's unique over the data's column when the mapping covers
 * every data row, else over the rows as mapped). *out is a new array of
 * the column's type. QV_EARG for an unknown column.
 */
QV_API qv_status qv_dataset_unique(qv_dataset *ds, const char *column, qv_array **out,
                                   qv_error *err) QV_NODISCARD;

/**
 * Group the rows as the dataset shows them (through its indices mapping)
 * by `keys` and compute the aggregate expressions `aggs` ("EXPR [AS
 * NAME]", see qv_table_group_by_exprs in compute.h for the language,
 * result types, order and errors). *out: a new in-memory dataset (one
 * reference) of the keys then the aggregates; `ds` is only read.
 */
QV_API qv_status qv_dataset_group_by(qv_dataset *ds, const char *const *keys, int32_t n_keys,
                                     const char *const *aggs, int32_t n_aggs,
                                     const qv_group_by_options *opts, qv_dataset **out,
                                     qv_error *err) QV_NODISCARD;

/**
 * Keep the rows where the expression `where` (expr.h, docs/expressions.md)
 * is true; false and null drop the row. Evaluated per batch (data batches
 * directly without a mapping, gathered windows with one). The kept rows
 * become a new mapping (composed with the existing one), written to the
 * cache file when file-backed (as datasets' filter, which goes through
 * map). An empty dataset is returned as is. Fingerprint: "quiver.filter",
 * {where: canonical rendering of the expression (qv_expr_to_string)}, so
 * spacing and redundant parentheses do not matter.
 */
QV_API qv_status qv_dataset_filter(qv_dataset *ds, const char *where,
                                   const qv_dataset_options *opts, qv_dataset **out,
                                   qv_error *err) QV_NODISCARD;

/**
 * A filter predicate implemented in C: sets bit i of `keep` (LSB first,
 * (batch->length + 7) / 8 bytes, zeroed by the caller) for each row of
 * `batch` (STRUCT array of the dataset's columns; dataset rows first_row,
 * first_row+1, ...) to keep. `name` and `version` identify it in
 * fingerprints (code cannot be hashed); `params` (may be NULL) holds the
 * arguments its behaviour depends on.
 */
typedef struct qv_filter_fn {
  const char *name;
  const char *version;
  qv_status (*call)(void *ctx, const qv_array *batch, int64_t first_row, uint8_t *keep,
                    qv_error *err);
  void *ctx;
  const qv_fingerprint_args *params;
} qv_filter_fn;

/** Filter with a C predicate, over batches of `batch_size` rows (0:
 *  QV_DATASET_MAP_BATCH_SIZE). Fingerprint: "quiver.filter", {function:
 *  "name@version", params: digest of params (when given), batch_size (when
 *  not the default)}. */
QV_API qv_status qv_dataset_filter_fn(qv_dataset *ds, const qv_filter_fn *fn, int64_t batch_size,
                                      const qv_dataset_options *opts, qv_dataset **out,
                                      qv_error *err) QV_NODISCARD;

/**
 * Shard `index` of `num_shards` (datasets' shard): contiguous blocks (the
 * first num_rows % num_shards shards one row longer) or, when !contiguous,
 * rows index, index + num_shards, ... (an in-memory mapping). QV_EARG
 * unless 0 <= index < num_shards. Fingerprint: "quiver.shard",
 * {num_shards, index, contiguous (when false)}.
 */
QV_API qv_status qv_dataset_shard(qv_dataset *ds, int64_t num_shards, int64_t index,
                                  bool contiguous, const qv_dataset_options *opts, qv_dataset **out,
                                  qv_error *err) QV_NODISCARD;

/** The part of rank `rank` of `world_size` nodes (datasets'
 *  split_dataset_by_node for map-style datasets: a contiguous shard). */
QV_API qv_status qv_dataset_split_by_node(qv_dataset *ds, int64_t rank, int64_t world_size,
                                          qv_dataset **out, qv_error *err) QV_NODISCARD;

/** A train/test size: none, a fraction in (0, 1) or an absolute count. */
typedef struct qv_split_size {
  enum { QV_SIZE_NONE = 0, QV_SIZE_FRACTION = 1, QV_SIZE_COUNT = 2 } kind;
  double fraction;
  int64_t count;
} qv_split_size;

/**
 * datasets' train_test_split: test size ceil(f * n) for a fraction, train
 * size floor(f * n); a missing size is the complement (both missing: test
 * 0.25). With shuffle, p = default_rng(seed).permutation(n), test =
 * p[:n_test], train = p[n_test:n_test+n_train]; without, train = rows
 * [0, n_train) and test = [n_train, n_train+n_test) (slices). Validation
 * and messages as datasets (QV_EARG). An empty dataset gives itself twice.
 * Cache files as shuffle (one per split, reused only when both exist).
 * Fingerprints: "quiver.train_test_split", {test_size, train_size (each an
 * int or a float, omitted when none), shuffle (when false), seed (when
 * shuffling), fingerprint_name: "train_new_fingerprint" /
 * "test_new_fingerprint"}.
 */
QV_API qv_status qv_dataset_train_test_split(qv_dataset *ds, qv_split_size test_size,
                                             qv_split_size train_size, bool shuffle, uint64_t seed,
                                             const qv_dataset_options *opts, qv_dataset **out_train,
                                             qv_dataset **out_test, qv_error *err) QV_NODISCARD;

/**
 * Materialise the rows as mapped into a new data table without mapping
 * (datasets' flatten_indices, a batched identity map): gathered a window at
 * a time, written to the cache file when file-backed (or reused), else
 * kept in memory. A dataset without mapping is flattened too (a copy).
 * Fingerprint: "quiver.flatten_indices".
 */
QV_API qv_status qv_dataset_flatten_indices(qv_dataset *ds, const qv_dataset_options *opts,
                                            qv_dataset **out, qv_error *err) QV_NODISCARD;

/**
 * Concatenate `n` >= 1 datasets (datasets' concatenate_datasets). Datasets
 * without rows are skipped (all empty: the first is returned). axis 0:
 * the same columns (matched by name, in any order; the first dataset's
 * order is kept) with equal features; mappings are concatenated with offsets
 * (datasets without one get an identity mapping), in memory. axis 1: same
 * number of rows, distinct column names; when more than one dataset is
 * given and any has a mapping, the mapped ones are flattened first (opts
 * apply). Info, split and format come from the first (format reset when
 * they differ). Fingerprint: update(first, "quiver.concatenate",
 * {fingerprints: list of every input's, axis}).
 */
QV_API qv_status qv_dataset_concatenate(qv_dataset *const *datasets, int64_t n, int axis,
                                        const qv_dataset_options *opts, qv_dataset **out,
                                        qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Column transforms (zero copy; the mapping is kept)                        */

/** Rename columns: `from[i]` becomes `to[i]` (datasets' rename_columns;
 *  QV_EARG for an unknown or duplicate name). Fingerprint:
 *  "quiver.rename_columns", {column_mapping: {from: to, ...}}. */
QV_API qv_status qv_dataset_rename_columns(qv_dataset *ds, const char *const *from,
                                           const char *const *to, int32_t n, qv_dataset **out,
                                           qv_error *err) QV_NODISCARD;

/** Drop columns (datasets' remove_columns). Fingerprint:
 *  "quiver.remove_columns", {column_names: list}. */
QV_API qv_status qv_dataset_remove_columns(qv_dataset *ds, const char *const *names, int32_t n,
                                           qv_dataset **out, qv_error *err) QV_NODISCARD;

/** Keep only these columns, in this order (datasets' select_columns).
 *  Fingerprint: "quiver.select_columns", {column_names: list}. */
QV_API qv_status qv_dataset_select_columns(qv_dataset *ds, const char *const *names, int32_t n,
                                           qv_dataset **out, qv_error *err) QV_NODISCARD;

/**
 * Cast to `features` (a QV_HF_DICT with the dataset's column names, in any
 * order; datasets' cast): the table is cast to the features' Arrow types
 * (qv_table_cast, safe). Fingerprint: "quiver.cast", {features: JSON}.
 */
QV_API qv_status qv_dataset_cast(qv_dataset *ds, const qv_hf_feature *features, qv_dataset **out,
                                 qv_error *err) QV_NODISCARD;

/** Cast one column to `feature` (datasets' cast_column). Fingerprint:
 *  "quiver.cast_column", {column, feature: JSON}. */
QV_API qv_status qv_dataset_cast_column(qv_dataset *ds, const char *column,
                                        const qv_hf_feature *feature, qv_dataset **out,
                                        qv_error *err) QV_NODISCARD;

/**
 * Append a column (datasets' add_column): `chunks[0..n_chunks)` of the
 * same type hold num_rows values in dataset order. A dataset with a
 * mapping is flattened first (in memory unless file-backed, as datasets).
 * `feature` may be NULL (derived from the type). Fingerprint:
 * "quiver.add_column", {name, column: digest of the values, feature: JSON
 * when given}.
 */
QV_API qv_status qv_dataset_add_column(qv_dataset *ds, const char *name, qv_array *const *chunks,
                                       int64_t n_chunks, const qv_hf_feature *feature,
                                       const qv_dataset_options *opts, qv_dataset **out,
                                       qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* map                                                                        */

/**
 * A map function implemented in C. `call` receives a batch (a STRUCT array
 * of the input columns; dataset rows first_row, first_row+1, ...; `rank`
 * is the worker's rank, 0 without num_proc) and returns in *out a STRUCT
 * array of the columns it adds or replaces (a new reference, taken over by
 * map), or NULL to leave the dataset unchanged (then every call must
 * return NULL). Output columns replace input columns of the same name in
 * place; new ones are appended in the order returned. With `batched`, the
 * output may have a different number of rows only when no input column is
 * kept (list them in remove_columns). Types must be the same for every
 * batch. Errors returned abort the map (no cache file is left).
 * `name` and `version` identify the function in fingerprints; `params`
 * (may be NULL) holds the arguments its behaviour depends on (datasets'
 * fn_kwargs). The callback may run in worker processes (num_proc), where
 * `ctx` is the forked copy.
 */
typedef struct qv_map_fn {
  const char *name;
  const char *version;
  qv_status (*call)(void *ctx, const qv_array *batch, int64_t first_row, int rank, qv_array **out,
                    qv_error *err);
  void *ctx;
  const qv_fingerprint_args *params;
} qv_map_fn;

typedef struct qv_map_options {
  /** Batches of batch_size rows (else one row per call). */
  bool batched;
  /** Rows per call when batched: 0 = QV_DATASET_MAP_BATCH_SIZE, < 0 = the
   *  whole dataset (per worker) in one call. */
  int64_t batch_size;
  /** Skip a last batch shorter than batch_size. */
  bool drop_last_batch;
  /** Columns given to the callback (NULL: all). */
  const char *const *input_columns;
  int32_t n_input_columns;
  /** Input columns not carried into the output. */
  const char *const *remove_columns;
  int32_t n_remove_columns;
  /** Worker processes (0 or 1: run in this process). Each worker gets the
   *  recipe of its contiguous shard (qv_table_recipe; files are reopened,
   *  not copied), writes `cache-<fp>_{rank:05d}_of_{num_proc:05d}.arrow`
   *  (file-backed) and the results are joined as a concatenation table.
   *  Capped at num_rows. */
  int num_proc;
} qv_map_options;

/**
 * datasets' map with a C function (see qv_map_fn). The output is written
 * to the cache file (file-backed, not keep_in_memory) or kept in memory;
 * an existing cache file (or a complete set of per-worker files, for any
 * worker count, preferring the most complete and the closest count as
 * datasets) is reused. The output schema carries the features: those of
 * input columns passed through (or replaced by the same Arrow type) are
 * kept, others derived from the Arrow types. An empty dataset is returned
 * (with columns removed) without calling the function.
 * Fingerprint: "name@version", {batched (when true), batch_size (when
 * batched and not the default), drop_last_batch (when true),
 * input_columns, remove_columns (lists, when given), params (digest, when
 * given)}; worker files carry fingerprint + "_{rank:05d}_of_{n:05d}".
 */
QV_API qv_status qv_dataset_map(qv_dataset *ds, const qv_map_fn *fn, const qv_map_options *map_opts,
                                const qv_dataset_options *opts, qv_dataset **out,
                                qv_error *err) QV_NODISCARD;

/**
 * datasets' batched map with a function written as expressions (expr.h,
 * docs/expressions.md): column `names[i]` gets the value of `exprs[i]`
 * evaluated over each batch (qv_bound_expr_eval). n >= 1; names must be
 * non-empty and distinct (QV_EARG "map: column 'x' is set twice"). Every
 * expression sees the input columns (not the ones other expressions
 * compute). A name of an input column replaces it in place (keeping its
 * feature when the result has the same Arrow type, as qv_dataset_map);
 * other names are appended in the order given. The strings are read
 * during the call only (borrowed). `map_opts` (may be NULL) gives
 * batch_size, drop_last_batch, input_columns, remove_columns and num_proc
 * (its `batched` is ignored: always batched); `opts` as every transform.
 * Errors: syntax, unknown columns and type errors in an expression are
 * QV_EARG prefixed "set NAME: " (with the expression's caret message);
 * evaluation errors keep their status (integer overflow: QV_ERANGE),
 * leaving no cache file. An empty dataset is checked (expressions bound)
 * and then returned as qv_dataset_map returns it (datasets: unchanged,
 * remove_columns removed, no new columns). The result is a new reference
 * in *out. Fingerprint: that of qv_dataset_map with the function
 * "quiver.map_set@1" and params {set: [[NAME, canonical EXPR
 * (qv_expr_to_string)], ...]} in order, so spacing and redundant
 * parentheses do not change it (the CLI's `quiver map --set` and Python's
 * Dataset.map(set=...) are this call).
 */
QV_API qv_status qv_dataset_map_exprs(qv_dataset *ds, const char *const *names,
                                      const char *const *exprs, int32_t n,
                                      const qv_map_options *map_opts,
                                      const qv_dataset_options *opts, qv_dataset **out,
                                      qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Saving                                                                     */

typedef struct qv_save_options {
  /** Largest shard in bytes (estimated as datasets does); 0 = 500MB. */
  int64_t max_shard_size;
  /** Exact number of shards (0 = from max_shard_size). */
  int64_t num_shards;
  qv_progress_fn progress;
  void *progress_ctx;
} qv_save_options;

/**
 * Write the dataset to directory `dir` in the save_to_disk layout
 * (datasets' Dataset.save_to_disk): `data-0000i-of-0000N.arrow` shards
 * (IPC streams, the rows as mapped — indices are flattened — in contiguous
 * shards; schema metadata {"info": {"features": ...}}), `state.json`
 * (fingerprint, format, split, data files) and `dataset_info.json`.
 *
 * Atomic as a whole: the directory is built in a hidden sibling temporary
 * `.<name>.tmp-quiver-<pid>-<start>-<rand>` (every file and directory
 * fsync'ed) and put in place with one rename — renameat2(RENAME_EXCHANGE)
 * over an existing `dir`, whose old tree is then removed — so readers and
 * crashes see the old complete dataset or the new one (docs/writing.md).
 * The parent directories are created. Refused with QV_EARG: `dir` is an
 * existing file or symbolic link; an existing non-empty directory that is
 * not a Dataset / DatasetDict directory (no state.json or
 * dataset_dict.json: it would be deleted); `dir` holds one of the
 * dataset's own files (a dataset cannot overwrite itself) or lies inside
 * the save_to_disk directory the dataset reads. On failure `dir` is
 * untouched and the temporary removed. `opts` may be NULL.
 * `out_num_shards` (may be NULL) receives the shard count.
 */
QV_API qv_status qv_dataset_save_to_disk(qv_dataset *ds, const char *dir,
                                         const qv_save_options *opts, int64_t *out_num_shards,
                                         qv_error *err) QV_NODISCARD;

/**
 * Write a DatasetDict (datasets' DatasetDict.save_to_disk): each dataset
 * in `dir/<name>` (the layout of qv_dataset_save_to_disk), then
 * `dir/dataset_dict.json` listing the names in order, the whole directory
 * atomically and with the refusals of qv_dataset_save_to_disk (checked
 * against every dataset). Names must be single path components.
 */
QV_API qv_status qv_dataset_dict_save_to_disk(qv_dataset *const *datasets, const char *const *names,
                                              int64_t n, const char *dir,
                                              const qv_save_options *opts,
                                              qv_error *err) QV_NODISCARD;

/**
 * Append the dataset's info as dataset_info.json holds it (what
 * save_to_disk writes: the info the dataset was opened or built with —
 * description, citation, homepage, license, builder_name, splits, ... — with
 * its current features; top-level keys sorted, indent 2) to `out`.
 */
QV_API qv_status qv_dataset_info_json(const qv_dataset *ds, qv_strbuf *out,
                                      qv_error *err) QV_NODISCARD;

/**
 * A copy of ds (same tables, fingerprint, split and format) carrying the
 * info `json[0..len)` (a dataset_info.json object, validated; its
 * "features" are replaced by the dataset's own when emitted). *out: a new
 * reference the caller owns; the input is unchanged.
 */
QV_API qv_status qv_dataset_with_info(qv_dataset *ds, const char *json, int64_t len,
                                      qv_dataset **out, qv_error *err) QV_NODISCARD;

/** Options of qv_dataset_assemble_save (zeroed: the defaults). */
typedef struct qv_assemble_options {
  const char *features_json; /**< Features JSON of the columns (names and implied types
                                  checked as the shards'), NULL: the first shard's features
                                  (its huggingface metadata, else derived from its
                                  Arrow types) */
  const char *fingerprint;   /**< state.json's fingerprint (validated), NULL: derived
                                  from the shards' fingerprints in order */
  const char *split;         /**< state.json's split, NULL for None */
} qv_assemble_options;

/**
 * Assemble a save_to_disk Dataset directory `dir` from `n` >= 1 Arrow IPC
 * shards written elsewhere (the block outputs of quiver.ray / quiver.spark
 * workers), in this order: each shard is opened (qv_dataset_open) and must
 * have the first's column names and types (a column's own nullability is
 * not compared; QV_EINVAL naming the first difference otherwise), then
 * moved with rename(2) — so the shards must be on the file system of
 * `dir`, and belong to the caller — into a hidden temporary beside `dir`
 * as `data-0000i-of-0000N.arrow`, dataset_info.json (a fresh info with the
 * features) and state.json (fingerprint, split) are written, and the
 * directory is put in place atomically exactly as qv_dataset_save_to_disk
 * (one rename, RENAME_EXCHANGE over an existing dataset directory; the
 * same refusals of destinations that would lose data). On failure before
 * the rename the moved shards are moved back to their paths and `dir` is
 * untouched. `opts` may be NULL. The shards' files are not rewritten: their
 * schema metadata stays as written (datasets takes the features from
 * dataset_info.json).
 */
QV_API qv_status qv_dataset_assemble_save(const char *dir, const char *const *shards, int64_t n,
                                          const qv_assemble_options *opts,
                                          qv_error *err) QV_NODISCARD;

/** Split names of a DatasetDict directory (dataset_dict.json order) or the
 *  builder splits of a load_dataset cache directory (dataset_info.json
 *  order; possibly none), or QV_EINVAL when `path` is neither. Free with
 *  qv_table_free_paths. */
QV_API qv_status qv_dataset_dict_splits(const char *path, char ***out_names, int64_t *out_n,
                                        qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Join, distinct rows, value counts (dataset_join.c)                        */

/**
 * Hash join of two datasets (qv_table_join's columns, rules and row
 * order, compute.h) over their rows as mapped (indices mappings
 * honoured). *out: a new in-memory dataset the caller owns, fingerprint
 * update(left, "quiver.join", {other: right's fingerprint, how, left_on,
 * right_on, suffixes, build}). The inputs are unchanged.
 */
QV_API qv_status qv_dataset_join(qv_dataset *left, qv_dataset *right, const qv_join_options *opts,
                                 qv_dataset **out, qv_error *err) QV_NODISCARD;

/**
 * Distinct rows by `on` (n_on == 0: every column), the first row of each
 * key in order of first appearance, all columns (qv_table_distinct), over
 * the rows as mapped. *out: a new in-memory dataset the caller owns.
 */
QV_API qv_status qv_dataset_distinct(qv_dataset *ds, const char *const *on, int32_t n_on,
                                     qv_dataset **out, qv_error *err) QV_NODISCARD;

/**
 * Value counts of a column over the rows as mapped, as a dataset of two
 * columns "values" and "counts" (qv_table_value_counts). *out: a new
 * in-memory dataset the caller owns. QV_EARG for an unknown column.
 */
QV_API qv_status qv_dataset_value_counts(qv_dataset *ds, const char *column, qv_dataset **out,
                                         qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_DATASET_H */
