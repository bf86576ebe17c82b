/*
 * quiver/fingerprint.h — dataset fingerprints as Hugging Face `datasets`
 * makes them: 16 lowercase hex characters of an xxh64 digest; a transform's
 * output fingerprint is hash(previous fingerprint, transform name, its
 * arguments); a freshly opened file takes the fingerprint stored in its
 * `huggingface` schema metadata, or else one derived from its identity.
 * Fingerprints name cache files (`cache-<fingerprint>.arrow`), so the same
 * transform of the same data finds its earlier result. Dataset layer.
 *
 * `datasets` hashes pickled Python objects; quiver cannot, and does not try
 * to produce the same digests. Instead the arguments are encoded in a
 * canonical, versioned, type-tagged and length-prefixed form (below), so a
 * fingerprint depends only on the values given — not on the process, run,
 * machine, pointer values or the order arguments were added in.
 *
 * Encoding, version 1 (QV_FINGERPRINT_ENCODING 1). All u64 are 8 bytes
 * little-endian. A value is one of:
 *   'N'                              none
 *   'B' u8 (0 or 1)                  bool
 *   'I' u8 sign u64 magnitude        integer: sign 0 for >= 0, 1 for < 0;
 *                                    int64 and uint64 of equal value encode
 *                                    alike (5 == 5u), -1 and 2**64-1 differ
 *   'F' u64 IEEE-754 bits            float64; every NaN encodes as
 *                                    0x7ff8000000000000; -0.0 != 0.0
 *   'S' u64 length, bytes            string (bytes as given, no Unicode
 *                                    normalisation)
 *   'Y' u64 length, bytes            byte string (never equal to a string)
 *   'A' u64 count, u64 digest        integer array; digest = xxh64 (seed 0)
 *                                    of the elements as 8-byte little-endian
 *                                    two's complement. An int64 and a uint64
 *                                    array of equal values encode alike
 *   'a' u64 count, u64 digest        integer array holding an element
 *                                    >= 2**63 (only uint64 arrays can);
 *                                    digest of the 8-byte LE uint64 values
 *   'L' u64 count, value...          list (not equal to an array)
 *   'D' u64 count, (u64 key length, key bytes, value)...
 *                                    dictionary; entries sorted by key
 *                                    (bytewise), keys unique
 * and
 *   update(prev, transform, args) = hex16(xxh64(seed 0,
 *       "quiver-fingerprint-1" || S(prev) || S(transform) || D(args)))
 *   identity(path, size, mtime_ns) = hex16(xxh64(seed 0,
 *       "quiver-file-identity-1" || S(path) || I(size) || I(mtime_ns)))
 * where hex16 writes the 64-bit digest as 16 lowercase hex digits, most
 * significant first (xxhash's canonical hexdigest). The prefix strings are
 * hashed without a terminating NUL. A change to any of this is a new
 * version with a new prefix.
 *
 * Conventions mirrored from `datasets` (fingerprint_transform): the
 * transform name is "module.name" or "name@version" (a C callback is
 * identified by a caller-given name and version, since code cannot be
 * hashed); arguments left at their default value are omitted, so adding a
 * new defaulted argument does not change earlier fingerprints; transforms
 * with several outputs (train_test_split) add a "fingerprint_name" string
 * argument naming each output.
 */
#ifndef QUIVER_FINGERPRINT_H
#define QUIVER_FINGERPRINT_H

#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the argument encoding and hash inputs described above. */
#define QV_FINGERPRINT_ENCODING 1
/** Length of the fingerprints quiver generates (hex digits). */
#define QV_FINGERPRINT_HEX_LEN 16
/** Longest fingerprint accepted from users or files (as `datasets`). */
#define QV_FINGERPRINT_MAX_LEN 64
/** Size of an output buffer that holds any valid fingerprint and its NUL. */
#define QV_FINGERPRINT_SIZE (QV_FINGERPRINT_MAX_LEN + 1)
/** Deepest nesting of lists and dictionaries in transform arguments. */
#define QV_FINGERPRINT_MAX_DEPTH 64

/**
 * Check a fingerprint given by a user or read from a file, as `datasets`'
 * validate_fingerprint: a non-empty string of at most 64 bytes without any
 * of the characters < > : / \ | ? * (they would break cache file names).
 * quiver also refuses control characters (bytes below 0x20 and 0x7f).
 * Fingerprints need not be hex. QV_EARG with the reason when invalid.
 */
QV_API qv_status qv_fingerprint_validate(const char *fingerprint, qv_error *err) QV_NODISCARD;

/**
 * The arguments of one transform, built by a sequence of calls. The top
 * level is a dictionary: every value added there needs a key. Inside a list
 * (qv_fingerprint_arg_begin_list) values take key NULL; inside a nested
 * dictionary they take a key again. Keys are NUL-terminated and copied;
 * the order of additions does not matter, duplicates are an error.
 *
 * Errors are sticky: after the first failed call every later call returns
 * the same status and message and qv_fingerprint_update refuses the args,
 * so callers may add a series of arguments and check once (which is why the
 * qv_fingerprint_arg_* functions, unlike the rest of the API, are not
 * QV_NODISCARD).
 */
typedef struct qv_fingerprint_args qv_fingerprint_args;

/** New empty argument set; free with qv_fingerprint_args_free. */
QV_API qv_status qv_fingerprint_args_new(qv_fingerprint_args **out, qv_error *err) QV_NODISCARD;
/** Free an argument set. NULL-safe. */
QV_API void qv_fingerprint_args_free(qv_fingerprint_args *args);

/** Add a value under `key` (NULL inside a list): None, a bool, a signed or
 *  unsigned integer, a float64 (every NaN encodes alike). The key is copied. */
QV_API qv_status qv_fingerprint_arg_none(qv_fingerprint_args *args, const char *key, qv_error *err);
QV_API qv_status qv_fingerprint_arg_bool(qv_fingerprint_args *args, const char *key, bool value,
                                         qv_error *err);
QV_API qv_status qv_fingerprint_arg_int(qv_fingerprint_args *args, const char *key, int64_t value,
                                        qv_error *err);
QV_API qv_status qv_fingerprint_arg_uint(qv_fingerprint_args *args, const char *key, uint64_t value,
                                         qv_error *err);
QV_API qv_status qv_fingerprint_arg_float(qv_fingerprint_args *args, const char *key, double value,
                                          qv_error *err);
/** A NUL-terminated string (value must not be NULL; use _none). */
QV_API qv_status qv_fingerprint_arg_str(qv_fingerprint_args *args, const char *key,
                                        const char *value, qv_error *err);
/** A string of `len` bytes (may contain NUL bytes). */
QV_API qv_status qv_fingerprint_arg_strn(qv_fingerprint_args *args, const char *key,
                                         const char *value, size_t len, qv_error *err);
QV_API qv_status qv_fingerprint_arg_bytes(qv_fingerprint_args *args, const char *key,
                                          const void *value, size_t len, qv_error *err);
/** Integer arrays are hashed when added (not copied), so a selection of
 *  10^8 row numbers costs one pass over them and no memory. */
QV_API qv_status qv_fingerprint_arg_int_array(qv_fingerprint_args *args, const char *key,
                                              const int64_t *values, int64_t n, qv_error *err);
QV_API qv_status qv_fingerprint_arg_uint_array(qv_fingerprint_args *args, const char *key,
                                               const uint64_t *values, int64_t n, qv_error *err);
/** Open a list / a dictionary as the value of `key`; close it with
 *  qv_fingerprint_arg_end. Nesting is limited to QV_FINGERPRINT_MAX_DEPTH. */
QV_API qv_status qv_fingerprint_arg_begin_list(qv_fingerprint_args *args, const char *key,
                                               qv_error *err);
QV_API qv_status qv_fingerprint_arg_begin_dict(qv_fingerprint_args *args, const char *key,
                                               qv_error *err);
QV_API qv_status qv_fingerprint_arg_end(qv_fingerprint_args *args, qv_error *err);

/**
 * The fingerprint of `transform` applied with `args` (NULL: no arguments)
 * to a dataset whose fingerprint is `previous`, as `datasets`'
 * update_fingerprint. `previous` must pass qv_fingerprint_validate and
 * `transform` must be non-empty; every list and dictionary of args must be
 * closed. Writes 16 hex digits and a NUL to out. args is not modified and
 * may be reused.
 */
QV_API qv_status qv_fingerprint_update(const char *previous, const char *transform,
                                       const qv_fingerprint_args *args,
                                       char out[QV_FINGERPRINT_SIZE], qv_error *err) QV_NODISCARD;

/**
 * The fingerprint stored in schema metadata by `datasets` (and by quiver's
 * writer): key "huggingface", a JSON object with a string "fingerprint".
 * Sets *found to false (and returns QV_OK) when the key, or the
 * "fingerprint" member, is absent or null. QV_EINVAL when the value is not
 * a JSON object, the member is not a string, or it fails
 * qv_fingerprint_validate (a fingerprint becomes part of a file name, so a
 * file cannot inject one with '/' in it). `md` may be NULL.
 */
QV_API qv_status qv_fingerprint_from_metadata(const qv_metadata *md, char out[QV_FINGERPRINT_SIZE],
                                              bool *found, qv_error *err) QV_NODISCARD;

/** identity(path, size, mtime_ns) as defined above; `path` is used as given
 *  (qv_fingerprint_of_file passes the resolved absolute path). */
QV_API qv_status qv_fingerprint_from_identity(const char *path, int64_t size, int64_t mtime_ns,
                                              char out[QV_FINGERPRINT_SIZE],
                                              qv_error *err) QV_NODISCARD;

/**
 * The fingerprint of a freshly opened file: from `schema_metadata` (may be
 * NULL) if it carries one, else from the file's identity: its absolute path
 * with symbolic links resolved (realpath), its size and its modification
 * time in nanoseconds, taken from `id` when not NULL (the identity recorded
 * when the file was mapped) and from stat() otherwise. QV_EIO when the path
 * cannot be resolved or stat()ed; errors of qv_fingerprint_from_metadata.
 */
QV_API qv_status qv_fingerprint_of_file(const char *path, const qv_metadata *schema_metadata,
                                        const qv_file_identity *id, char out[QV_FINGERPRINT_SIZE],
                                        qv_error *err) QV_NODISCARD;

/**
 * The fingerprint `datasets` gives split `split` of a dataset loaded from a
 * builder cache directory (load_dataset / DatasetBuilder.as_dataset:
 * `_get_dataset_fingerprint`): a Hasher fed the builder's relative data
 * directory ("json/default-6bfcf3862e515771/0.0.0/<hash>", posix) and then
 * the split name, i.e.
 *   hex16(xxh64(H || hex16(xxh64(pickle(dir))) || H || hex16(xxh64(pickle(split)))))
 * with H = "==<class 'str'>==" and pickle = pickle.dumps(str, protocol 4)
 * as dill writes it (one frame, no memo). This is the one digest quiver
 * computes the way datasets does. QV_EARG for empty names or names longer
 * than 60,000 bytes.
 */
QV_API qv_status qv_fingerprint_builder_split(const char *relative_data_dir, const char *split,
                                              char out[QV_FINGERPRINT_SIZE],
                                              qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_FINGERPRINT_H */
