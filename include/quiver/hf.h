/*
 * quiver/hf.h — Hugging Face `datasets` interoperability: the Features
 * description kept in Arrow schema metadata, and the directory layouts
 * `datasets` writes (save_to_disk Dataset / DatasetDict directories and
 * cache directories). Part of the dataset layer; needs core + ipc only.
 *
 * Features. `datasets` stores the logical types of a table's columns as
 * JSON under the schema metadata key "huggingface":
 *     {"info": {"features": {COLUMN: FEATURE, ...}}, "fingerprint": "..."}
 * A FEATURE is an object with a "_type" (Value, ClassLabel, List, LargeList,
 * Sequence (legacy), Array2D..Array5D, Translation,
 * TranslationVariableLanguages, Json, Image, Audio, Video, Pdf, Nifti, Mesh,
 * BioSequence, BioStructure), a nested dict of features (an object without
 * "_type"), or the legacy one-element list [FEATURE]. quiver parses it into a
 * tree of qv_hf_feature exactly as `datasets.Features.from_dict` does
 * (legacy forms normalised, unknown keys ignored, List ids dropped), computes
 * the Arrow type each feature implies (`Features.type`), resolves a file's
 * schema against its features (`Features.from_arrow_schema`), derives
 * features from Arrow types (`generate_from_arrow_type`), and emits the JSON
 * `datasets` itself would write (same key order and number formatting, so
 * the bytes match `json.dumps(features.to_dict())`).
 *
 * Strings inside these structures are NUL-terminated UTF-8 copies owned by
 * the tree. Trees are immutable once returned and may be read from several
 * threads.
 */
#ifndef QUIVER_HF_H
#define QUIVER_HF_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/print.h"
#include "quiver/table.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Schema metadata key holding the `datasets` info + fingerprint JSON. */
#define QV_HF_METADATA_KEY "huggingface"
/** Deepest nesting of features quiver accepts (lists, dicts, ...). */
#define QV_HF_MAX_DEPTH 128
/** Extension name prefix/suffix of datasets' ArrayND extension types:
 *  "datasets.features.features.Array2DExtensionType" ... Array5D. */
#define QV_HF_ARRAY_EXT_PREFIX "datasets.features.features.Array"
#define QV_HF_ARRAY_EXT_SUFFIX "DExtensionType"

/* ------------------------------------------------------------------------ */
/* Features                                                                  */

typedef enum qv_hf_kind {
  QV_HF_DICT = 0,       /**< nested dict (also the top-level Features) */
  QV_HF_VALUE,          /**< Value(dtype) */
  QV_HF_CLASS_LABEL,    /**< ClassLabel(names): int64 label ids */
  QV_HF_LIST,           /**< List(feature, length=-1); legacy Sequence / [f] */
  QV_HF_LARGE_LIST,     /**< LargeList(feature) */
  QV_HF_ARRAY,          /**< Array2D..Array5D(shape, dtype) */
  QV_HF_TRANSLATION,    /**< Translation(languages) */
  QV_HF_TRANSLATION_VL, /**< TranslationVariableLanguages(languages) */
  QV_HF_JSON,           /**< Json(): arrow.json extension over string */
  QV_HF_MEDIA           /**< Image/Audio/Video/Pdf/Nifti/Mesh/BioSequence/
                              BioStructure: struct<bytes: binary, path: string> */
} qv_hf_kind;

typedef struct qv_hf_feature qv_hf_feature;

/**
 * One node of a features tree. Read-only for callers; fields ending in `_`
 * are private.
 *  - type_name: the "_type" datasets writes ("Value", "Image", ...), NULL for
 *    QV_HF_DICT. Static storage.
 *  - dtype: QV_HF_VALUE and QV_HF_ARRAY: the dtype string as datasets keeps
 *    it ("int32", "timestamp[ms, tz=UTC]", "utf8"; "float"/"double" are
 *    normalised to "float32"/"float64" as Value does).
 *  - length: QV_HF_LIST: fixed length, or -1 for variable-length lists.
 *  - ndims, shape: QV_HF_ARRAY: 2..5 dimensions; shape[0] may be -1 (None:
 *    a dynamic first dimension).
 *  - n_names, names: QV_HF_CLASS_LABEL: label names (index = label id);
 *    QV_HF_TRANSLATION: languages as given; QV_HF_TRANSLATION_VL: sorted,
 *    de-duplicated languages (n_names == -1 and names NULL for None).
 *  - n_children, keys, children: QV_HF_DICT: the keys in order and their
 *    features; QV_HF_LIST / QV_HF_LARGE_LIST: one child (keys NULL).
 */
struct qv_hf_feature {
  qv_hf_kind kind;
  const char *type_name;
  char *dtype;
  int64_t length;
  int32_t ndims;
  int64_t shape[5];
  int64_t n_names;
  char **names;
  int32_t n_children;
  char **keys;
  qv_hf_feature **children;
  void *params_; /* private: media/Json parameters and id (JSON) */
};

/** Free a features tree (NULL-safe). */
QV_API void qv_hf_feature_free(qv_hf_feature *f);

/** Deep copy. NULL on allocation failure. */
QV_API qv_hf_feature *qv_hf_feature_copy(const qv_hf_feature *f);

/**
 * Parse a Features JSON object ({"column": FEATURE, ...}) from `len` bytes
 * of text, as `datasets.Features.from_dict` does. The result is a
 * QV_HF_DICT; caller frees it with qv_hf_feature_free. Errors (QV_EINVAL)
 * name the path: "features['a'].feature: Value: 'dtype' must be a string,
 * found integer". Unknown "_type" names fail with QV_ENOTSUP.
 */
QV_API qv_status qv_hf_features_parse(const char *json, int64_t len, qv_hf_feature **out,
                                      qv_error *err) QV_NODISCARD;

/** How emitted JSON is laid out: json.dumps() (", " and ": "
 *  separators, one line) or json.dump(indent=2). Both escape every
 *  non-ASCII character as \uXXXX, as Python's json module does. */
typedef enum qv_hf_json_style { QV_HF_JSON_COMPACT = 0, QV_HF_JSON_INDENT2 = 1 } qv_hf_json_style;

/**
 * Append the JSON `datasets` writes for `f` (Features.to_dict(): dataclass
 * field order, defaults omitted) to `out`. For a QV_HF_DICT this is the
 * features object; for any other node the single feature.
 */
QV_API qv_status qv_hf_feature_emit(const qv_hf_feature *f, qv_hf_json_style style, qv_strbuf *out,
                                    qv_error *err) QV_NODISCARD;

/**
 * Append a Python-style rendering as `repr(features)` shows it, e.g.
 * {'label': ClassLabel(names=['neg', 'pos']), 'ids': List(Value('int32'))}.
 */
QV_API qv_status qv_hf_feature_repr(const qv_hf_feature *f, qv_strbuf *out,
                                    qv_error *err) QV_NODISCARD;

/** Structural equality as `==` on datasets features (ids compared too). */
QV_API bool qv_hf_feature_equals(const qv_hf_feature *a, const qv_hf_feature *b);

/** The feature of column/key `name` of a QV_HF_DICT, or NULL. */
QV_API const qv_hf_feature *qv_hf_feature_get(const qv_hf_feature *dict, const char *name);

/**
 * The Arrow storage type a feature implies (`get_nested_type`): Value ->
 * its dtype, ClassLabel -> int64, List -> list / fixed_size_list, LargeList
 * -> large_list, ArrayND -> ndims nested lists of the dtype, Translation ->
 * struct of the sorted languages (string), TranslationVariableLanguages ->
 * struct<language: list<string>, translation: list<string>>, Json -> string,
 * media -> struct<bytes: binary, path: string>, dict -> struct. Every field
 * is nullable; list items are named "item". Extension types (ArrayND, Json)
 * live in field metadata, so they are returned in `out_metadata` for the
 * top node (children carry theirs in their field metadata).
 * `*out` gets one reference; `out_metadata` (may be NULL) is filled with
 * owned pairs the caller frees with qv_metadata_reset.
 */
QV_API qv_status qv_hf_feature_arrow_type(const qv_hf_feature *f, qv_type **out,
                                          qv_metadata *out_metadata, qv_error *err) QV_NODISCARD;

/**
 * The Arrow schema a QV_HF_DICT implies (`Features.arrow_schema`): one
 * nullable column per key, schema metadata "huggingface" =
 * {"info": {"features": ...}} as datasets writes it. One reference to the
 * caller.
 */
QV_API qv_status qv_hf_features_arrow_schema(const qv_hf_feature *features, qv_schema **out,
                                             qv_error *err) QV_NODISCARD;

/**
 * The feature `datasets` derives from an Arrow field when there is no
 * metadata for it (`generate_from_arrow_type`): struct -> dict,
 * fixed_size_list -> List(length), list -> List, large_list -> LargeList,
 * the ArrayND extension -> ArrayND, arrow.json -> Json, dictionary -> Value
 * of its value type, other types -> Value(dtype). Types datasets has no
 * feature for (map, unions, list views, decimal32/64, intervals, run-end
 * encoded, canonical extensions such as arrow.uuid) fail with QV_ENOTSUP
 * naming the field, as datasets fails to load them.
 */
QV_API qv_status qv_hf_feature_from_arrow(const qv_field *field, qv_hf_feature **out,
                                          qv_error *err) QV_NODISCARD;

/**
 * Resolve the features of a schema exactly as
 * `datasets.Features.from_arrow_schema` does: parse the "huggingface"
 * metadata when present; a column takes its feature from there when the
 * feature's implied field equals the file's field (name, type, nullability,
 * extension; list item names and other metadata ignored, as pyarrow
 * compares), otherwise the feature derived from its Arrow type. The result
 * (a QV_HF_DICT with one key per column, in schema order) goes to *out.
 * `out_from_metadata` (may be NULL) receives, per column, whether its
 * feature came from the metadata; the caller frees it with free().
 * Malformed metadata fails (QV_EINVAL) rather than being ignored.
 */
QV_API qv_status qv_hf_features_resolve(const qv_schema *schema, qv_hf_feature **out,
                                        bool **out_from_metadata, qv_error *err) QV_NODISCARD;

/**
 * qv_hf_features_resolve, also giving the "fingerprint" of the same
 * "huggingface" metadata (parsed once: a file of 1M columns parses its
 * features JSON once, not a second time for the fingerprint). On success
 * *out_fingerprint (may be NULL) receives a malloc'd copy the caller frees
 * with free(), or NULL when the metadata or its fingerprint is absent. On
 * failure nothing is returned (no fingerprint either).
 */
QV_API qv_status qv_hf_features_resolve_fingerprint(const qv_schema *schema, qv_hf_feature **out,
                                                    bool **out_from_metadata,
                                                    char **out_fingerprint,
                                                    qv_error *err) QV_NODISCARD;

/**
 * Strict check: `features` (a QV_HF_DICT) describes exactly the columns of
 * `schema` (same names in the same order) and each column's implied field
 * equals the file's (see qv_hf_features_resolve). QV_EINVAL naming the
 * first difference, e.g. "column 'x': features imply int32 but the file has
 * int64".
 */
QV_API qv_status qv_hf_features_check(const qv_hf_feature *features, const qv_schema *schema,
                                      qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* The "huggingface" schema metadata                                         */

/** Parsed {"info": {"features": ...}, "fingerprint": ...}. */
typedef struct qv_hf_metadata {
  qv_hf_feature *features; /**< NULL when absent or null */
  char *fingerprint;       /**< NULL when absent or null */
} qv_hf_metadata;

/**
 * Parse the value of the "huggingface" schema metadata key. Missing "info",
 * "features" or "fingerprint" leave the members NULL (as datasets accepts);
 * malformed JSON or features fail with QV_EINVAL naming the problem.
 * Caller frees with qv_hf_metadata_reset.
 */
QV_API qv_status qv_hf_metadata_parse(const char *json, int64_t len, qv_hf_metadata *out,
                                      qv_error *err) QV_NODISCARD;
QV_API void qv_hf_metadata_reset(qv_hf_metadata *md);

/**
 * Append the metadata value ArrowWriter writes:
 * {"info": {"features": FEATURES}, "fingerprint": "FP"} (the fingerprint
 * member only when not NULL; "features": null when features is NULL).
 */
QV_API qv_status qv_hf_metadata_emit(const qv_hf_feature *features, const char *fingerprint,
                                     qv_strbuf *out, qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Rendering rows with ClassLabel names                                      */

/**
 * Append row `row` of a record batch as one JSON object (as
 * qv_format_row_json) where every value whose feature is a ClassLabel —
 * at any depth inside dicts and lists — prints as its label name (a JSON
 * string) instead of the integer. -1 (no label) and ids outside the names
 * print as the integer; nulls print as null. Columns without a feature
 * (features NULL or key missing) print as usual.
 */
QV_API qv_status qv_hf_format_row_json(const qv_array *batch, int64_t row,
                                       const qv_hf_feature *features, qv_strbuf *out,
                                       qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Directory layouts                                                         */

/** File names `datasets` uses (config.py). */
#define QV_HF_STATE_JSON "state.json"
#define QV_HF_INFO_JSON "dataset_info.json"
#define QV_HF_DICT_JSON "dataset_dict.json"
/** Default `max_shard_size` of save_to_disk: "500MB" = 500 * 10^6 bytes. */
#define QV_HF_DEFAULT_MAX_SHARD_SIZE INT64_C(500000000)

/**
 * state.json of a save_to_disk Dataset directory. Every string is owned.
 *  - data_files: the "_data_files" [{"filename": ...}] names, relative to
 *    the directory (validated by qv_hf_state_parse: see there).
 *  - fingerprint: "_fingerprint" (never NULL after parsing).
 *  - format_columns: "_format_columns" (NULL with has_format_columns false
 *    for null).
 *  - format_kwargs: "_format_kwargs" as compact JSON text of an object
 *    (keys sorted, as state.json keeps them), "{}" when empty.
 *  - format_type: "_format_type" (NULL for null).
 *  - output_all_columns: "_output_all_columns".
 *  - split: "_split" (NULL for null).
 */
typedef struct qv_hf_state {
  int64_t n_data_files;
  char **data_files;
  char *fingerprint;
  bool has_format_columns;
  int64_t n_format_columns;
  char **format_columns;
  char *format_kwargs;
  char *format_type;
  bool output_all_columns;
  char *split;
} qv_hf_state;

/**
 * Parse state.json text. Every key datasets reads is required and type
 * checked; a data file name must be a non-empty relative path with no ".."
 * component (qv_hf_check_relative_name), e.g. the error for "../x.arrow"
 * reads: "state.json: _data_files[0].filename '../x.arrow' escapes the
 * dataset directory (contains '..')". Symlinks are checked when the
 * directory is opened (qv_hf_dir_open). Caller frees with
 * qv_hf_state_reset.
 */
QV_API qv_status qv_hf_state_parse(const char *json, int64_t len, qv_hf_state *out,
                                   qv_error *err) QV_NODISCARD;
QV_API void qv_hf_state_reset(qv_hf_state *st);

/**
 * Append state.json as save_to_disk writes it (json.dump(indent=2,
 * sort_keys=True), no trailing newline). `state->format_kwargs` NULL means
 * "{}".
 */
QV_API qv_status qv_hf_state_emit(const qv_hf_state *state, qv_strbuf *out,
                                  qv_error *err) QV_NODISCARD;

/** Validate a name that must stay inside its directory: not empty, not
 *  absolute, no ".." component ("." components and subdirectories are
 *  fine). `what` prefixes the message: "WHAT 'NAME' escapes the dataset
 *  directory (absolute path)" / "(contains '..')" / "WHAT is empty". */
QV_API qv_status qv_hf_check_relative_name(const char *what, const char *name,
                                           qv_error *err) QV_NODISCARD;

/**
 * dataset_info.json. quiver keeps the whole object and interprets the parts
 * it needs; on emission the top-level keys are sorted and the features are
 * rewritten in canonical form (as DatasetInfo.from_dict + save_to_disk do).
 */
typedef struct qv_hf_info qv_hf_info;

/** Parse dataset_info.json (an object; "features" may be absent/null). */
QV_API qv_status qv_hf_info_parse(const char *json, int64_t len, qv_hf_info **out,
                                  qv_error *err) QV_NODISCARD;
/** The info a fresh Dataset carries: citation, description, homepage,
 *  license "" and the given features (copied; may be NULL). */
QV_API qv_status qv_hf_info_new(const qv_hf_feature *features, qv_hf_info **out,
                                qv_error *err) QV_NODISCARD;
QV_API void qv_hf_info_free(qv_hf_info *info);
/** Features (borrowed) or NULL. */
QV_API const qv_hf_feature *qv_hf_info_features(const qv_hf_info *info);
/** A top-level string member ("description", "builder_name", ...) or NULL
 *  when absent or not a string. Borrowed. */
QV_API const char *qv_hf_info_string(const qv_hf_info *info, const char *key);
/** Replace the features (copied; NULL removes them). */
QV_API qv_status qv_hf_info_set_features(qv_hf_info *info, const qv_hf_feature *features,
                                         qv_error *err) QV_NODISCARD;
/** Append dataset_info.json as save_to_disk writes it (top-level keys
 *  sorted, indent 2, no trailing newline). */
QV_API qv_status qv_hf_info_emit(const qv_hf_info *info, qv_strbuf *out,
                                 qv_error *err) QV_NODISCARD;

/** Parse dataset_dict.json ({"splits": [NAME, ...]}). Split names become
 *  directory names, so each must pass qv_hf_check_relative_name and be a
 *  single component. Caller frees names[i] and names with free(). */
QV_API qv_status qv_hf_dict_parse(const char *json, int64_t len, char ***out_names, int64_t *out_n,
                                  qv_error *err) QV_NODISCARD;
/** Append dataset_dict.json as DatasetDict.save_to_disk writes it:
 *  {"splits": ["train", "test"]}. */
QV_API qv_status qv_hf_dict_emit(char *const *names, int64_t n, qv_strbuf *out,
                                 qv_error *err) QV_NODISCARD;

/** Name of shard `index` of `count`: "data-00000-of-00004.arrow" (at least
 *  five digits each). Writes at most `cap` bytes; returns the length. */
QV_API int qv_hf_shard_name(int64_t index, int64_t count, char *out, size_t cap);

/**
 * Number of shards save_to_disk writes (Dataset.save_to_disk):
 * int(nbytes / max_shard_size) + 1, at least num_proc (0 = 1), at most
 * table_rows (the rows of the underlying table, before any indices
 * mapping, as datasets uses len(self.data)). max_shard_size <= 0 means the
 * default 500MB. Returns 0 for an empty table (datasets writes no shard).
 */
QV_API int64_t qv_hf_plan_num_shards(int64_t nbytes, int64_t max_shard_size, int64_t num_proc,
                                     int64_t table_rows);

/** Rows [*start, *end) of contiguous shard `index` of `num_shards` over
 *  `num_rows` rows (Dataset.shard(contiguous=True)). */
QV_API void qv_hf_shard_range(int64_t num_rows, int64_t num_shards, int64_t index, int64_t *start,
                              int64_t *end);

/**
 * Parse a size as datasets' convert_file_size_to_int: digits followed by a
 * unit KB/MB/GB/TB/PB (powers of 1000; a lowercase final 'b' means bits,
 * /8) or KiB..PiB (powers of 1024), or plain digits (bytes). Units are
 * case-insensitive. QV_EARG on anything else or on overflow.
 */
QV_API qv_status qv_hf_parse_size(const char *text, int64_t *out, qv_error *err) QV_NODISCARD;

/** What a path holds, as far as `datasets` layouts go. */
typedef enum qv_hf_layout {
  QV_HF_LAYOUT_ARROW_FILE = 0, /**< one Arrow IPC file (stream or file) */
  QV_HF_LAYOUT_DATASET,        /**< save_to_disk Dataset directory */
  QV_HF_LAYOUT_DATASET_DICT,   /**< save_to_disk DatasetDict directory */
  QV_HF_LAYOUT_CACHE           /**< cache directory of *.arrow files */
} qv_hf_layout;

/** Role of one .arrow file in a directory. */
typedef enum qv_hf_file_role {
  QV_HF_FILE_DATA = 0,  /**< a data table (shard, builder output, map output) */
  QV_HF_FILE_INDICES,   /**< an indices mapping: a `cache-*.arrow` file whose
                            schema is one uint64 column "indices" */
  QV_HF_FILE_UNREADABLE /**< a .arrow file beside the dataset that does not
                             open (torn, corrupt, not Arrow); `error` says
                             why. Listed, never used: a dataset whose own
                             data file is unreadable fails to open. */
} qv_hf_file_role;

typedef struct qv_hf_file {
  char *name; /**< path relative to the split/dataset directory */
  char *path; /**< full path (directory joined with name) */
  qv_hf_file_role role;
  int64_t rows;    /**< rows the file holds (from its metadata); 0 when
                            unreadable */
  char *error;     /**< QV_HF_FILE_UNREADABLE: the reader's message,
                            else NULL */
  int64_t source;  /**< qv_hf_dir.files only: index into
                            qv_hf_dir.sources of the dataset the file
                            belongs to, -1 for indices mappings */
  qv_table *table; /**< the file memory-mapped when it was listed (a
                            reference owned by the directory, released by
                            qv_hf_dir_free; opening a dataset of the
                            directory takes its own reference instead of
                            reopening the file); NULL when unreadable, and
                            for the cache-*.arrow files of a directory
                            listing (only their headers are read; they
                            are reopened when used) */
} qv_hf_file;

/** One Dataset: a split of a DatasetDict, the Dataset directory itself, a
 *  builder split of a cache directory, or (for a single file) the file. */
typedef struct qv_hf_split {
  char *name;         /**< split name (DatasetDict key / builder split),
                            else NULL */
  char *dir;          /**< directory of the files */
  qv_hf_state *state; /**< state.json (Dataset layouts), else NULL */
  qv_hf_info *info;   /**< dataset_info.json when present, else NULL */
  char *fingerprint;  /**< builder splits: the fingerprint datasets gives
                            the loaded split (see qv_hf_dir_open), else
                            NULL (Dataset layouts: state->fingerprint) */
  int64_t n_files;
  qv_hf_file *files; /**< data files in order (state.json order; builder
                            splits: shard order) */
  char *error;       /**< builder splits that cannot be opened (a data
                            file missing, unreadable or disagreeing with
                            dataset_info.json): why, with no files; else
                            NULL. Opening such a split fails with it. */
} qv_hf_split;

/** Kind of a dataset found in a directory (qv_hf_source). */
typedef enum qv_hf_source_kind {
  QV_HF_SOURCE_SPLIT = 0, /**< a builder split of a cache directory */
  QV_HF_SOURCE_DATASET,   /**< the save_to_disk Dataset the directory is */
  QV_HF_SOURCE_GROUP,     /**< the per-worker outputs of one map(num_proc=N):
                               cache-<fp>_%05d_of_%05d.arrow, ranks 0..N-1 */
  QV_HF_SOURCE_FILE       /**< any other data file (one map output
                               `cache-<fp>.arrow`, a user's file...) */
} qv_hf_source_kind;

/** A dataset of a directory: what an indices mapping found there may
 *  index (see qv_dataset_indices_candidates). */
typedef struct qv_hf_source {
  qv_hf_source_kind kind;
  /** SPLIT: the split name; DATASET: "." ; GROUP: the pattern
   *  "cache-<fp>_*_of_<N>.arrow"; FILE: the file name. Unique in a
   *  directory; qv_dataset_open(dir, name) opens it. */
  char *name;
  int64_t split; /**< SPLIT / DATASET: index into qv_hf_dir.splits, else -1 */
  int64_t n_files;
  int64_t *files;    /**< GROUP / FILE: indices into qv_hf_dir.files, in order */
  int64_t rows;      /**< rows of the whole dataset */
  char *fingerprint; /**< GROUP: the <fp> of the names; else NULL */
} qv_hf_source;

typedef struct qv_hf_dir {
  qv_hf_layout layout;
  char *path;
  int64_t n_splits;
  qv_hf_split *splits; /**< DatasetDict: one per split in dataset_dict.json
                            order; Dataset and single file: exactly one;
                            cache directory: its builder splits in
                            dataset_info.json order (possibly none) */
  int64_t n_files;
  qv_hf_file *files; /**< Dataset and cache directories: every *.arrow
                            file directly in the directory, sorted by name */
  int64_t n_sources;
  qv_hf_source *sources; /**< Dataset and cache directories: the datasets
                            the files make up: the Dataset / builder splits
                            first, then groups and files in name order */
} qv_hf_dir;

/**
 * Classify `path` and list its files: a regular file is
 * QV_HF_LAYOUT_ARROW_FILE; a directory with dataset_dict.json is a
 * DatasetDict (each split directory opened as a Dataset); one with
 * state.json a Dataset (state.json and dataset_info.json parsed, every data
 * file must exist as a regular file inside the directory after resolving
 * symlinks); otherwise a directory holding *.arrow files is a cache
 * directory. Anything else fails with QV_EINVAL ("PATH: not a datasets
 * directory: no state.json, dataset_dict.json or *.arrow file").
 *
 * Cache directories. When dataset_info.json has "splits" (a load_dataset
 * builder directory, `<cache_dir>/<name>/<config>/<version>/<hash>`), each
 * split's data files are those ArrowReader reads: `<prefix>-<split>.arrow`,
 * or `<prefix>-<split>-%05d-of-%05d.arrow` when its "shard_lengths" has
 * several entries, where <prefix> is the split's "dataset_name" (else the
 * info's "dataset_name", else "builder_name") in snake case
 * (camelcase_to_snakecase). A missing file, or a file whose rows differ
 * from shard_lengths / num_examples, fails (QV_EINVAL naming both). The
 * split's fingerprint is datasets' (qv_fingerprint_builder_split of the
 * last four components of the resolved directory, or three when the
 * directory itself is named after the version) when the directory's parent
 * (or the directory) is named after info's version, else
 * update("quiver-builder", "quiver.builder_split", {dir: resolved path,
 * split}).
 *
 * Every *.arrow file is listed in `files` with its rows; files named
 * cache-*.arrow whose schema is one uint64 column "indices" are
 * QV_HF_FILE_INDICES, and the data files are grouped into `sources`.
 * Caller frees with qv_hf_dir_free.
 */
QV_API qv_status qv_hf_dir_open(const char *path, qv_hf_dir **out, qv_error *err) QV_NODISCARD;
QV_API void qv_hf_dir_free(qv_hf_dir *dir);
/** The source named `name` (qv_hf_source.name), or -1. */
QV_API int64_t qv_hf_dir_find_source(const qv_hf_dir *dir, const char *name);
/** Short name of a source kind ("split", "dataset", "map output group",
 *  "file"). Static. */
QV_API const char *qv_hf_source_kind_name(qv_hf_source_kind kind);
/** Short name of a layout ("arrow file", "dataset", "dataset dict",
 *  "cache"). Static. */
QV_API const char *qv_hf_layout_name(qv_hf_layout layout);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_HF_H */
