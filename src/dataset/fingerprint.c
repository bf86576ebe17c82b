/*
 * fingerprint.c — dataset fingerprints (quiver/fingerprint.h): validation of
 * user- and file-given fingerprints, the canonical encoding of transform
 * arguments, update(previous, transform, args), and the fingerprint of a
 * freshly opened file (huggingface schema metadata, else path/size/mtime).
 * Dataset layer, on core only (+ libxxhash, jansson). The encoding is
 * specified in the header; this file is its only implementation, and
 * tests/python/test_fingerprint.py re-implements it independently.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <xxhash.h>

#include "quiver/fingerprint.h"

/* Hash-input prefixes (version 1); hashed without their NUL. */
#define FP_UPDATE_PREFIX "quiver-fingerprint-1"
#define FP_IDENTITY_PREFIX "quiver-file-identity-1"
/* Value tags. */
#define TAG_NONE 'N'
#define TAG_BOOL 'B'
#define TAG_INT 'I'
#define TAG_FLOAT 'F'
#define TAG_STR 'S'
#define TAG_BYTES 'Y'
#define TAG_INT_ARRAY 'A'  /* all elements representable as int64 */
#define TAG_UINT_ARRAY 'a' /* some element >= 2**63 */
#define TAG_LIST 'L'
#define TAG_DICT 'D'
/* The one NaN every NaN encodes as. */
#define FP_CANONICAL_NAN 0x7ff8000000000000ull
/* Characters `datasets` forbids in fingerprints (INVALID_WINDOWS_CHARACTERS_IN_PATH). */
#define FP_FORBIDDEN "<>:/\\|?*"
/* Leading bytes of a bad fingerprint quoted in an error message. */
#define FP_QUOTE_MAX 80

/* ------------------------------------------------------------------------ */
/* Validation                                                                */

/* Quote up to FP_QUOTE_MAX bytes of s into out, control bytes as \xNN. */
static void quote(const char *s, char *out, size_t cap) {
  size_t o = 0, i = 0;
  for (; s[i] != '\0' && i < FP_QUOTE_MAX && o + 5 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    else out[o++] = (char)c;
  }
  if (s[i] != '\0' && o + 4 < cap) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = '\0';
}

qv_status qv_fingerprint_validate(const char *fp, qv_error *err) {
  if (fp == NULL || fp[0] == '\0')
    return qv_error_set(err, QV_EARG, "invalid fingerprint '': it must be a non-empty string");
  char q[FP_QUOTE_MAX * 4 + 8];
  size_t len = strlen(fp);
  if (len > QV_FINGERPRINT_MAX_LEN) {
    quote(fp, q, sizeof q);
    return qv_error_set(err, QV_EARG, "invalid fingerprint '%s': %zu bytes, at most %d", q, len,
                        QV_FINGERPRINT_MAX_LEN);
  }
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)fp[i];
    if (c < 0x20 || c == 0x7f || strchr(FP_FORBIDDEN, c) != NULL) {
      quote(fp, q, sizeof q);
      char what[8];
      if (c < 0x20 || c == 0x7f) snprintf(what, sizeof what, "\\x%02x", c);
      else snprintf(what, sizeof what, "%c", c);
      return qv_error_set(err, QV_EARG,
                          "invalid fingerprint '%s': character '%s' at byte %zu "
                          "is not allowed (none of " FP_FORBIDDEN " or control characters)",
                          q, what, i);
    }
  }
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Growable byte buffer and the primitive encodings                          */

typedef struct fp_buf {
  uint8_t *data;
  size_t len, cap;
} fp_buf;

static bool buf_reserve(fp_buf *b, size_t extra) {
  if (extra <= b->cap - b->len) return true;
  if (extra > SIZE_MAX / 2 - b->len) return false;
  size_t cap = b->cap ? b->cap : 64;
  while (cap - b->len < extra) cap *= 2;
  uint8_t *d = realloc(b->data, cap);
  if (d == NULL) return false;
  b->data = d;
  b->cap = cap;
  return true;
}

static bool put(fp_buf *b, const void *p, size_t n) {
  if (!buf_reserve(b, n)) return false;
  if (n > 0) memcpy(b->data + b->len, p, n);
  b->len += n;
  return true;
}

static bool put_u8(fp_buf *b, uint8_t v) { return put(b, &v, 1); }

/* 8 bytes little-endian, independent of the host's byte order. */
static bool put_u64(fp_buf *b, uint64_t v) {
  uint8_t le[8];
  for (int i = 0; i < 8; i++) le[i] = (uint8_t)(v >> (8 * i));
  return put(b, le, 8);
}

static bool put_str(fp_buf *b, uint8_t tag, const void *p, size_t n) {
  return put_u8(b, tag) && put_u64(b, (uint64_t)n) && put(b, p, n);
}

static bool put_int(fp_buf *b, bool negative, uint64_t magnitude) {
  return put_u8(b, TAG_INT) && put_u8(b, negative ? 1 : 0) && put_u64(b, magnitude);
}

/* xxh64 of n 8-byte values as little-endian bytes: on the (little-endian)
 * hosts quiver supports, the values' own memory, hashed in place. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "fingerprint.c hashes integer arrays in place: little-endian hosts only"
#endif
static uint64_t hash_u64_le(const uint64_t *v, int64_t n) {
  return (uint64_t)XXH64(v, (size_t)n * 8, 0);
}

static void hex16(uint64_t h, char out[QV_FINGERPRINT_SIZE]) {
  snprintf(out, QV_FINGERPRINT_SIZE, "%016" PRIx64, h);
}

/* ------------------------------------------------------------------------ */
/* Argument sets                                                             */

typedef struct fp_entry {
  char *key; /* NUL-terminated copy; NULL for list elements */
  size_t key_len;
  uint8_t *val; /* encoded value */
  size_t val_len;
} fp_entry;

typedef struct fp_frame {
  bool is_dict;
  char *key; /* this container's key in its parent (NULL in a list) */
  fp_entry *entries;
  size_t n, cap;
} fp_frame;

struct qv_fingerprint_args {
  fp_frame frames[QV_FINGERPRINT_MAX_DEPTH + 1]; /* [0] is the top level */
  int depth;                                     /* index of the open frame */
  qv_status sticky;                              /* first failure, or QV_OK */
  qv_error sticky_err;
};

static void frame_clear(fp_frame *f) {
  for (size_t i = 0; i < f->n; i++) {
    free(f->entries[i].key);
    free(f->entries[i].val);
  }
  free(f->entries);
  free(f->key);
  memset(f, 0, sizeof *f);
}

qv_status qv_fingerprint_args_new(qv_fingerprint_args **out, qv_error *err) {
  qv_fingerprint_args *a = calloc(1, sizeof *a);
  if (a == NULL) return qv_error_set(err, QV_ENOMEM, "fingerprint arguments: out of memory");
  a->frames[0].is_dict = true;
  *out = a;
  return QV_OK;
}

void qv_fingerprint_args_free(qv_fingerprint_args *a) {
  if (a == NULL) return;
  for (int d = 0; d <= a->depth; d++) frame_clear(&a->frames[d]);
  free(a);
}

/* Record the first failure; every later call repeats it. */
static qv_status fail(qv_fingerprint_args *a, qv_error *err, qv_status st, const char *fmt, ...)
    QV_PRINTF(4, 5);
static qv_status fail(qv_fingerprint_args *a, qv_error *err, qv_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->sticky_err.message, sizeof a->sticky_err.message, fmt, ap);
  va_end(ap);
  a->sticky = st;
  if (err != NULL) *err = a->sticky_err;
  return st;
}

static qv_status sticky(const qv_fingerprint_args *a, qv_error *err) {
  if (err != NULL) *err = a->sticky_err;
  return a->sticky;
}

/* The key rules of the open container; NULL when `key` fits it. */
static const char *key_problem(const qv_fingerprint_args *a, const char *key) {
  bool dict = a->frames[a->depth].is_dict;
  if (dict && key == NULL) return "a dictionary entry needs a key";
  if (!dict && key != NULL) return "a list element takes no key (pass NULL)";
  return NULL;
}

/* Append one encoded value (ownership of val taken) under key. */
static qv_status push(qv_fingerprint_args *a, const char *key, fp_buf *val, qv_error *err) {
  fp_frame *f = &a->frames[a->depth];
  char *k = NULL;
  if (key != NULL && (k = strdup(key)) == NULL) goto oom;
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 8;
    fp_entry *e = realloc(f->entries, cap * sizeof *e);
    if (e == NULL) goto oom;
    f->entries = e;
    f->cap = cap;
  }
  f->entries[f->n++] = (fp_entry){k, k ? strlen(k) : 0, val->data, val->len};
  return QV_OK;
oom:
  free(k);
  free(val->data);
  return fail(a, err, QV_ENOMEM, "fingerprint arguments: out of memory");
}

/* Common head of every add: sticky error, key rules. */
#define ARG_PROLOGUE(a, key, err)                                                                  \
  do {                                                                                             \
    if ((a)->sticky != QV_OK) return sticky((a), (err));                                           \
    const char *problem_ = key_problem((a), (key));                                                \
    if (problem_ != NULL)                                                                          \
      return fail((a), (err), QV_EARG, "fingerprint argument '%s': %s", (key) ? (key) : "(NULL)",  \
                  problem_);                                                                       \
  } while (0)

/* Finish an add whose encoding is in v (ok = every put succeeded). */
static qv_status finish_add(qv_fingerprint_args *a, const char *key, fp_buf *v, bool ok,
                            qv_error *err) {
  if (!ok) {
    free(v->data);
    return fail(a, err, QV_ENOMEM, "fingerprint arguments: out of memory");
  }
  return push(a, key, v, err);
}

qv_status qv_fingerprint_arg_none(qv_fingerprint_args *a, const char *key, qv_error *err) {
  ARG_PROLOGUE(a, key, err);
  fp_buf v = {0};
  return finish_add(a, key, &v, put_u8(&v, TAG_NONE), err);
}

qv_status qv_fingerprint_arg_bool(qv_fingerprint_args *a, const char *key, bool value,
                                  qv_error *err) {
  ARG_PROLOGUE(a, key, err);
  fp_buf v = {0};
  return finish_add(a, key, &v, put_u8(&v, TAG_BOOL) && put_u8(&v, value ? 1 : 0), err);
}

qv_status qv_fingerprint_arg_int(qv_fingerprint_args *a, const char *key, int64_t value,
                                 qv_error *err) {
  ARG_PROLOGUE(a, key, err);
  fp_buf v = {0};
  /* Magnitude without overflow for INT64_MIN. */
  uint64_t mag = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
  return finish_add(a, key, &v, put_int(&v, value < 0, mag), err);
}

qv_status qv_fingerprint_arg_uint(qv_fingerprint_args *a, const char *key, uint64_t value,
                                  qv_error *err) {
  ARG_PROLOGUE(a, key, err);
  fp_buf v = {0};
  return finish_add(a, key, &v, put_int(&v, false, value), err);
}

qv_status qv_fingerprint_arg_float(qv_fingerprint_args *a, const char *key, double value,
                                   qv_error *err) {
  ARG_PROLOGUE(a, key, err);
  uint64_t bits;
  memcpy(&bits, &value, 8);
  if (value != value) bits = FP_CANONICAL_NAN;
  fp_buf v = {0};
  return finish_add(a, key, &v, put_u8(&v, TAG_FLOAT) && put_u64(&v, bits), err);
}

qv_status qv_fingerprint_arg_strn(qv_fingerprint_args *a, const char *key, const char *value,
                                  size_t len, qv_error *err) {
  ARG_PROLOGUE(a, key, err);
  if (value == NULL && len > 0)
    return fail(a, err, QV_EARG, "fingerprint argument '%s': string is NULL",
                key ? key : "(list element)");
  fp_buf v = {0};
  return finish_add(a, key, &v, put_str(&v, TAG_STR, value, len), err);
}

qv_status qv_fingerprint_arg_str(qv_fingerprint_args *a, const char *key, const char *value,
                                 qv_error *err) {
  if (a->sticky == QV_OK && value == NULL)
    return fail(a, err, QV_EARG, "fingerprint argument '%s': string is NULL (use _none)",
                key ? key : "(list element)");
  return qv_fingerprint_arg_strn(a, key, value, value ? strlen(value) : 0, err);
}

qv_status qv_fingerprint_arg_bytes(qv_fingerprint_args *a, const char *key, const void *value,
                                   size_t len, qv_error *err) {
  ARG_PROLOGUE(a, key, err);
  if (value == NULL && len > 0)
    return fail(a, err, QV_EARG, "fingerprint argument '%s': bytes are NULL",
                key ? key : "(list element)");
  fp_buf v = {0};
  return finish_add(a, key, &v, put_str(&v, TAG_BYTES, value, len), err);
}

static qv_status add_array(qv_fingerprint_args *a, const char *key, const uint64_t *values,
                           int64_t n, bool is_unsigned, qv_error *err) {
  ARG_PROLOGUE(a, key, err);
  if (n < 0)
    return fail(a, err, QV_EARG,
                "fingerprint argument '%s': array length %lld "
                "is negative",
                key ? key : "(list element)", (long long)n);
  if (n > 0 && values == NULL)
    return fail(a, err, QV_EARG,
                "fingerprint argument '%s': array values are "
                "NULL for length %lld",
                key ? key : "(list element)", (long long)n);
  uint8_t tag = TAG_INT_ARRAY;
  if (is_unsigned) {
    uint64_t any = 0;
    for (int64_t i = 0; i < n; i++) any |= values[i];
    if (any >> 63) tag = TAG_UINT_ARRAY;
  }
  fp_buf v = {0};
  bool ok = put_u8(&v, tag) && put_u64(&v, (uint64_t)n) && put_u64(&v, hash_u64_le(values, n));
  return finish_add(a, key, &v, ok, err);
}

qv_status qv_fingerprint_arg_int_array(qv_fingerprint_args *a, const char *key,
                                       const int64_t *values, int64_t n, qv_error *err) {
  /* int64 and uint64 share their 8 bytes; the element type only decides
   * whether values >= 2**63 exist (never for int64). */
  return add_array(a, key, (const uint64_t *)(const void *)values, n, false, err);
}

qv_status qv_fingerprint_arg_uint_array(qv_fingerprint_args *a, const char *key,
                                        const uint64_t *values, int64_t n, qv_error *err) {
  return add_array(a, key, values, n, true, err);
}

static qv_status begin(qv_fingerprint_args *a, const char *key, bool is_dict, qv_error *err) {
  ARG_PROLOGUE(a, key, err);
  if (a->depth == QV_FINGERPRINT_MAX_DEPTH)
    return fail(a, err, QV_EARG, "fingerprint argument '%s': nesting deeper than %d levels",
                key ? key : "(list element)", QV_FINGERPRINT_MAX_DEPTH);
  char *k = NULL;
  if (key != NULL && (k = strdup(key)) == NULL)
    return fail(a, err, QV_ENOMEM, "fingerprint arguments: out of memory");
  fp_frame *f = &a->frames[++a->depth];
  memset(f, 0, sizeof *f);
  f->is_dict = is_dict;
  f->key = k;
  return QV_OK;
}

qv_status qv_fingerprint_arg_begin_list(qv_fingerprint_args *a, const char *key, qv_error *err) {
  return begin(a, key, false, err);
}

qv_status qv_fingerprint_arg_begin_dict(qv_fingerprint_args *a, const char *key, qv_error *err) {
  return begin(a, key, true, err);
}

static int entry_cmp(const void *x, const void *y) {
  const fp_entry *a = *(const fp_entry *const *)x, *b = *(const fp_entry *const *)y;
  size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
  int c = memcmp(a->key, b->key, n);
  if (c != 0) return c;
  return a->key_len < b->key_len ? -1 : a->key_len > b->key_len;
}

/* Encode a container: 'L' or 'D', count, entries (dictionaries sorted by
 * key). `dup` receives a duplicated key, if any (then nothing is encoded). */
static qv_status encode_frame(const fp_frame *f, fp_buf *out, const fp_entry **dup) {
  *dup = NULL;
  const fp_entry **order = malloc((f->n ? f->n : 1) * sizeof *order);
  if (order == NULL) return QV_ENOMEM;
  for (size_t i = 0; i < f->n; i++) order[i] = &f->entries[i];
  if (f->is_dict) {
    qsort(order, f->n, sizeof *order, entry_cmp);
    for (size_t i = 1; i < f->n; i++)
      if (entry_cmp(&order[i - 1], &order[i]) == 0) {
        *dup = order[i];
        free(order);
        return QV_EARG;
      }
  }
  bool ok = put_u8(out, f->is_dict ? TAG_DICT : TAG_LIST) && put_u64(out, (uint64_t)f->n);
  for (size_t i = 0; ok && i < f->n; i++) {
    if (f->is_dict)
      ok = put_u64(out, (uint64_t)order[i]->key_len) && put(out, order[i]->key, order[i]->key_len);
    ok = ok && put(out, order[i]->val, order[i]->val_len);
  }
  free(order);
  return ok ? QV_OK : QV_ENOMEM;
}

static qv_status encode_failed(qv_fingerprint_args *a, qv_status st, const fp_entry *dup,
                               qv_error *err) {
  if (st == QV_ENOMEM) return fail(a, err, QV_ENOMEM, "fingerprint arguments: out of memory");
  return fail(a, err, QV_EARG, "fingerprint argument '%s' given twice", dup->key);
}

qv_status qv_fingerprint_arg_end(qv_fingerprint_args *a, qv_error *err) {
  if (a->sticky != QV_OK) return sticky(a, err);
  if (a->depth == 0)
    return fail(a, err, QV_EARG, "fingerprint arguments: end without an open list or dictionary");
  fp_frame *f = &a->frames[a->depth];
  fp_buf v = {0};
  const fp_entry *dup;
  qv_status st = encode_frame(f, &v, &dup);
  if (st != QV_OK) {
    free(v.data);
    return encode_failed(a, st, dup, err);
  }
  char *key = f->key;
  f->key = NULL;
  frame_clear(f);
  a->depth--;
  st = push(a, key, &v, err);
  free(key);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Fingerprints                                                              */

qv_status qv_fingerprint_update(const char *previous, const char *transform,
                                const qv_fingerprint_args *args, char out[QV_FINGERPRINT_SIZE],
                                qv_error *err) {
  qv_status st = qv_fingerprint_validate(previous, err);
  if (st != QV_OK) return qv_error_prefix(err, st, "fingerprint update: previous ");
  if (transform == NULL || transform[0] == '\0')
    return qv_error_set(err, QV_EARG, "fingerprint update: the transform name is empty");
  if (args != NULL && args->sticky != QV_OK) {
    if (err != NULL) *err = args->sticky_err;
    return args->sticky;
  }
  if (args != NULL && args->depth != 0)
    return qv_error_set(err, QV_EARG,
                        "fingerprint update: %d list(s)/dictionaries of the "
                        "arguments are still open",
                        args->depth);
  fp_buf b = {0};
  bool ok = put(&b, FP_UPDATE_PREFIX, strlen(FP_UPDATE_PREFIX)) &&
            put_str(&b, TAG_STR, previous, strlen(previous)) &&
            put_str(&b, TAG_STR, transform, strlen(transform));
  if (ok && args != NULL) {
    const fp_entry *dup;
    st = encode_frame(&args->frames[0], &b, &dup);
    if (st == QV_EARG) {
      free(b.data);
      return qv_error_set(err, QV_EARG, "fingerprint argument '%s' given twice", dup->key);
    }
    ok = st == QV_OK;
  } else if (ok) {
    ok = put_u8(&b, TAG_DICT) && put_u64(&b, 0);
  }
  if (!ok) {
    free(b.data);
    return qv_error_set(err, QV_ENOMEM, "fingerprint update: out of memory");
  }
  hex16((uint64_t)XXH64(b.data, b.len, 0), out);
  free(b.data);
  return QV_OK;
}

qv_status qv_fingerprint_from_identity(const char *path, int64_t size, int64_t mtime_ns,
                                       char out[QV_FINGERPRINT_SIZE], qv_error *err) {
  if (path == NULL || path[0] == '\0')
    return qv_error_set(err, QV_EARG, "file fingerprint: the path is empty");
  fp_buf b = {0};
  bool ok = put(&b, FP_IDENTITY_PREFIX, strlen(FP_IDENTITY_PREFIX)) &&
            put_str(&b, TAG_STR, path, strlen(path)) &&
            put_int(&b, size < 0, size < 0 ? 0 - (uint64_t)size : (uint64_t)size) &&
            put_int(&b, mtime_ns < 0, mtime_ns < 0 ? 0 - (uint64_t)mtime_ns : (uint64_t)mtime_ns);
  if (!ok) {
    free(b.data);
    return qv_error_set(err, QV_ENOMEM, "file fingerprint: out of memory");
  }
  hex16((uint64_t)XXH64(b.data, b.len, 0), out);
  free(b.data);
  return QV_OK;
}

#define HF_METADATA_KEY "huggingface"

qv_status qv_fingerprint_from_metadata(const qv_metadata *md, char out[QV_FINGERPRINT_SIZE],
                                       bool *found, qv_error *err) {
  *found = false;
  const qv_kv *kv = md != NULL ? qv_metadata_find(md, HF_METADATA_KEY) : NULL;
  if (kv == NULL) return QV_OK;
  json_error_t jerr;
  json_t *root = json_loadb(kv->value, (size_t)kv->value_len, 0, &jerr);
  if (root == NULL)
    return qv_error_set(err, QV_EINVAL,
                        "schema metadata '" HF_METADATA_KEY
                        "': invalid JSON at line %d column %d: %s",
                        jerr.line, jerr.column, jerr.text);
  qv_status st = QV_OK;
  if (!json_is_object(root)) {
    st = qv_error_set(err, QV_EINVAL,
                      "schema metadata '" HF_METADATA_KEY "': expected a JSON object");
  } else {
    json_t *fp = json_object_get(root, "fingerprint");
    if (fp == NULL || json_is_null(fp)) {
      /* absent: not found */
    } else if (!json_is_string(fp)) {
      st = qv_error_set(err, QV_EINVAL,
                        "schema metadata '" HF_METADATA_KEY "': \"fingerprint\" is not a string");
    } else {
      const char *s = json_string_value(fp);
      st = qv_fingerprint_validate(s, err);
      if (st == QV_OK) {
        memcpy(out, s, strlen(s) + 1); /* validated: <= 64 bytes */
        *found = true;
      } else {
        st = qv_error_prefix(err, QV_EINVAL, "schema metadata '" HF_METADATA_KEY "': ");
      }
    }
  }
  json_decref(root);
  return st;
}

qv_status qv_fingerprint_of_file(const char *path, const qv_metadata *schema_metadata,
                                 const qv_file_identity *id, char out[QV_FINGERPRINT_SIZE],
                                 qv_error *err) {
  bool found;
  QV_RETURN_NOT_OK(qv_fingerprint_from_metadata(schema_metadata, out, &found, err));
  if (found) return QV_OK;
  if (path == NULL || path[0] == '\0')
    return qv_error_set(err, QV_EARG, "file fingerprint: the path is empty");
  char *abs = realpath(path, NULL);
  if (abs == NULL)
    return qv_error_set(err, QV_EIO, "file fingerprint: cannot resolve '%s': %s", path,
                        strerror(errno));
  int64_t size, mtime_ns;
  if (id != NULL) {
    size = id->size;
    mtime_ns = id->mtime_ns;
  } else {
    struct stat st;
    if (stat(abs, &st) != 0) {
      int e = errno;
      free(abs);
      return qv_error_set(err, QV_EIO, "file fingerprint: cannot stat '%s': %s", path, strerror(e));
    }
    size = (int64_t)st.st_size;
    mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + (int64_t)st.st_mtim.tv_nsec;
  }
  qv_status s = qv_fingerprint_from_identity(abs, size, mtime_ns, out, err);
  free(abs);
  return s;
}

/* ------------------------------------------------------------------------ */
/* datasets' Hasher on strings (builder split fingerprints)                  */

/* Largest string hashed the way pickle frames it here: below pickle's frame
 * target (64 KiB), so the whole pickle is one frame. */
#define PY_PICKLE_STR_MAX 60000

/* xxh64 hexdigest of pickle.dumps(s, protocol=4) for a str s of n UTF-8
 * bytes, as dill writes it for datasets' Hasher.hash: PROTO 4, one FRAME,
 * SHORT_BINUNICODE (n < 256) or BINUNICODE, STOP (no MEMOIZE). */
static bool py_str_hash(const char *s, size_t n, char out[QV_FINGERPRINT_SIZE]) {
  fp_buf b = {0};
  size_t body = (n < 256 ? 2 : 5) + n + 1;
  bool ok = put_u8(&b, 0x80) && put_u8(&b, 4);
  if (ok && body >= 4) ok = put_u8(&b, 0x95) && put_u64(&b, (uint64_t)body);
  if (ok && n < 256) {
    ok = put_u8(&b, 0x8c) && put_u8(&b, (uint8_t)n);
  } else if (ok) {
    uint8_t len4[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    ok = put_u8(&b, 'X') && put(&b, len4, 4);
  }
  ok = ok && put(&b, s, n) && put_u8(&b, '.');
  if (ok) hex16((uint64_t)XXH64(b.data, b.len, 0), out);
  free(b.data);
  return ok;
}

qv_status qv_fingerprint_builder_split(const char *relative_data_dir, const char *split,
                                       char out[QV_FINGERPRINT_SIZE], qv_error *err) {
  static const char kHeader[] = "==<class 'str'>==";
  size_t nd = strlen(relative_data_dir), ns = strlen(split);
  if (nd == 0 || ns == 0)
    return qv_error_set(err, QV_EARG, "builder fingerprint: empty %s",
                        nd == 0 ? "directory" : "split name");
  if (nd > PY_PICKLE_STR_MAX || ns > PY_PICKLE_STR_MAX)
    return qv_error_set(err, QV_EARG, "builder fingerprint: names longer than %d bytes",
                        PY_PICKLE_STR_MAX);
  char hd[QV_FINGERPRINT_SIZE], hs[QV_FINGERPRINT_SIZE];
  fp_buf b = {0};
  bool ok = py_str_hash(relative_data_dir, nd, hd) && py_str_hash(split, ns, hs) &&
            put(&b, kHeader, sizeof kHeader - 1) && put(&b, hd, 16) &&
            put(&b, kHeader, sizeof kHeader - 1) && put(&b, hs, 16);
  if (!ok) {
    free(b.data);
    return qv_error_set(err, QV_ENOMEM, "builder fingerprint: out of memory");
  }
  hex16((uint64_t)XXH64(b.data, b.len, 0), out);
  free(b.data);
  return QV_OK;
}
