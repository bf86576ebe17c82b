/*
 * hf_internal.h — private helpers shared by the Hugging Face `datasets`
 * modules of the dataset layer (hf_json.c, hf_features_json.c,
 * hf_features_arrow.c, hf_layout.c, hf_print.c): Python-compatible JSON emission and jansson-based loading.
 */
#ifndef QUIVER_HF_INTERNAL_H
#define QUIVER_HF_INTERNAL_H

#include <jansson.h>
#include <stdio.h>

#include "quiver/hf.h"

/**
 * Append `v` as Python's json module writes it: ensure_ascii escaping,
 * float repr, separators ", " / ": " when indent < 0 (json.dumps) or
 * "," / ": " with newlines and `indent` spaces per level (json.dump(indent=N)).
 * With sort_keys every object's keys are sorted (code point order).
 */
qv_status qv_pyjson_dump(qv_strbuf *out, const json_t *v, int indent, bool sort_keys,
                         qv_error *err);

/** Append a JSON string literal with Python's ensure_ascii escaping; bytes
 *  that are not valid UTF-8 become \ufffd. */
qv_status qv_pyjson_string(qv_strbuf *out, const char *s, size_t n, qv_error *err);

/** Parse `len` bytes of JSON text (any value; NUL bytes in strings are
 *  refused). QV_EINVAL "WHAT: invalid JSON at line L, column C: TEXT". */
qv_status qv_hf_json_load(const char *what, const char *text, int64_t len, json_t **out,
                          qv_error *err);

/** Short name of a JSON value's kind for messages ("string", "object"...). */
const char *qv_hf_json_kind(const json_t *v);

/** Python's `==` on JSON values (True == 1 == 1.0; dict order ignored). */
bool qv_hf_json_py_equal(const json_t *a, const json_t *b);

/** Parse a features object (already loaded). `where` names it in errors
 *  ("features", "dataset_info.json: features"). */
qv_status qv_hf_features_from_json(const json_t *obj, const char *where, qv_hf_feature **out,
                                   qv_error *err);

/** The to_dict() JSON of a feature tree (new reference), NULL on OOM. */
json_t *qv_hf_feature_to_json(const qv_hf_feature *f);

/** A schema over `struct_type` (reference taken over, also on failure)
 *  whose metadata holds the `huggingface` key for `features` and
 *  fingerprint `fp` (NULL: none). */
qv_status qv_hf_schema_with_features(qv_type *struct_type, const qv_hf_feature *features,
                                     const char *fp, qv_schema **out, qv_error *err);

/** The schema of an indices mapping: one uint64 column "indices". */
bool qv_hf_is_indices_schema(const qv_schema *s);
/** Role of a file with schema `s`: QV_HF_FILE_INDICES for a cache-*.arrow
 *  file (by its base name) with an indices schema, else QV_HF_FILE_DATA. */
qv_hf_file_role qv_hf_file_role_of(const char *path, const qv_schema *s);

/** A file of a directory that the caller has opened already: listing the
 *  directory takes its role and rows from here instead of reopening it. */
typedef struct qv_hf_known_file {
  const char *name; /**< name inside the directory */
  qv_hf_file_role role;
  int64_t rows;
  qv_table *table; /**< the file mapped (borrowed; the listing takes a reference) */
} qv_hf_known_file;

/** qv_hf_dir_open, with `known` (may be NULL) not reopened. */
qv_status qv_hf_dir_open_known(const char *path, const qv_hf_known_file *known, qv_hf_dir **out,
                               qv_error *err);

/** The child of a dict feature named `name`: its child at position `hint`
 *  when that one has the name (features aligned with a schema: O(1)),
 *  else qv_hf_feature_get's scan. NULL when absent. Borrowed. */
const qv_hf_feature *qv_hf_dict_child(const qv_hf_feature *dict, int32_t hint, const char *name);

/* ---- Shared by hf_features_json.c (JSON <-> feature tree) and
 *      hf_features_arrow.c (feature tree <-> Arrow types) ---------------- */

/** Path of the node being parsed or derived, for messages:
 *  features['a'].feature (cut with "..." past 511 bytes). */
typedef struct qv_hf_path {
  char s[512];
} qv_hf_path;

/** dst = base['key']. */
static inline void qv_hf_path_key(qv_hf_path *dst, const char *base, const char *key) {
  int n = snprintf(dst->s, sizeof dst->s, "%s['%s']", base, key);
  if (n < 0 || (size_t)n >= sizeof dst->s) snprintf(dst->s + sizeof dst->s - 5, 5, "...");
}

/** dst = base followed by attr (".feature"). */
static inline void qv_hf_path_attr(qv_hf_path *dst, const char *base, const char *attr) {
  int n = snprintf(dst->s, sizeof dst->s, "%s%s", base, attr);
  if (n < 0 || (size_t)n >= sizeof dst->s) snprintf(dst->s + sizeof dst->s - 5, 5, "...");
}

/** Feature type names of the ArrayND features by ndims (2..5; others NULL). */
extern const char *const qv_hf_array_names[6];

/** A new empty node (length -1) of `kind`; `type_name` is a static string,
 *  not copied. NULL on OOM. Caller frees with qv_hf_feature_free. */
qv_hf_feature *qv_hf_node_new(qv_hf_kind kind, const char *type_name);

/** Append `child` (and a copy of `key`, for dicts; NULL for lists) to `f`.
 *  Takes `child` over on success only. */
qv_status qv_hf_add_child(qv_hf_feature *f, const char *key, qv_hf_feature *child, qv_error *err);

/** qv_name_index callback: key `i` of the dict feature `ctx`. */
const char *qv_hf_feature_key_at(const void *ctx, int32_t i);

/** A List (length >= 0: fixed size) or LargeList node over `item`; takes
 *  `item` over, also on failure. *out is the caller's. */
qv_status qv_hf_make_list(qv_hf_kind kind, qv_hf_feature *item, int64_t length, qv_hf_feature **out,
                          qv_error *err);

/** Sorted copy of the pointers in names[0..n) (the strings stay borrowed);
 *  caller frees the array. NULL on OOM. */
char **qv_hf_sorted_view(char *const *names, int64_t n);

/** Fill f->shape from obj's "shape" (f->ndims entries; the first may be
 *  null). `path` names the node in errors. */
qv_status qv_hf_parse_array_shape(const json_t *obj, const char *path, qv_hf_feature *f,
                                  qv_error *err);

/** Set f->dtype (owned by f) from obj's "dtype", checked to name an Arrow
 *  type. */
qv_status qv_hf_require_dtype(const json_t *obj, const char *path, qv_hf_feature *f, qv_error *err);

/** Parse the object `obj` whose "_type" is `type_name` into a new node
 *  (*out, the caller's). `depth` bounds nesting. */
qv_status qv_hf_parse_typed(const json_t *obj, const char *type_name, const char *path, int depth,
                            qv_hf_feature **out, qv_error *err);

/** Value dtype string -> new qv_type (one reference, the caller's), as
 *  datasets' string_to_arrow. `where` names the feature in errors. */
qv_status qv_hf_dtype_to_type(const char *dtype, const char *where, qv_type **out, qv_error *err);

#endif /* QUIVER_HF_INTERNAL_H */
