/*
 * hf_internal.h — private helpers shared by the Hugging Face `datasets`
 * modules of the dataset layer (hf_json.c, hf_features.c, hf_layout.c,
 * hf_print.c): Python-compatible JSON emission and jansson-based loading.
 */
#ifndef QUIVER_HF_INTERNAL_H
#define QUIVER_HF_INTERNAL_H

#include <jansson.h>

#include "quiver/hf.h"

/**
 * Append `v` as Python's json module writes it: ensure_ascii escaping,
 * float repr, separators ", " / ": " when indent < 0 (json.dumps) or
 * "," / ": " with newlines and `indent` spaces per level (json.dump(indent=N)).
 * With sort_keys every object's keys are sorted (code point order).
 */
qv_status qv_pyjson_dump(qv_strbuf *out, const json_t *v, int indent,
                         bool sort_keys, qv_error *err);

/** Append a JSON string literal with Python's ensure_ascii escaping; bytes
 *  that are not valid UTF-8 become \ufffd. */
qv_status qv_pyjson_string(qv_strbuf *out, const char *s, size_t n,
                           qv_error *err);

/** Parse `len` bytes of JSON text (any value; NUL bytes in strings are
 *  refused). QV_EINVAL "WHAT: invalid JSON at line L, column C: TEXT". */
qv_status qv_hf_json_load(const char *what, const char *text, int64_t len,
                          json_t **out, qv_error *err);

/** Short name of a JSON value's kind for messages ("string", "object"...). */
const char *qv_hf_json_kind(const json_t *v);

/** Python's `==` on JSON values (True == 1 == 1.0; dict order ignored). */
bool qv_hf_json_py_equal(const json_t *a, const json_t *b);

/** Parse a features object (already loaded). `where` names it in errors
 *  ("features", "dataset_info.json: features"). */
qv_status qv_hf_features_from_json(const json_t *obj, const char *where,
                                   qv_hf_feature **out, qv_error *err);

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

#endif /* QUIVER_HF_INTERNAL_H */
