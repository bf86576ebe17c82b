/*
 * builder.c — the in-memory array builder (quiver/builder.h): append
 * values and nulls for every Arrow type, nested included, into growing
 * heap buffers, then finish into a qv_array. Core layer: sits on buffers,
 * types and arrays (and qv_array_concat for dictionaries kept across
 * finishes); the IPC writer and the CLI sit above it.
 *
 * Every builder keeps the buffers of its type's layout (array.h) with
 * their `size` always exact for the elements appended so far:
 *   b1: values (fixed width, bool bits), offsets (var binary, lists, list
 *       views), views (binary/string view), type ids (unions), indices
 *       (dictionary), run ends (run-end encoded);
 *   b2: data (var binary), sizes (list views), offsets (dense union);
 *   vdata[]: the variadic data buffers of views;
 *   validity: allocated at the first null, all-valid before that.
 * Growth goes through qv_buffer_resize, which doubles capacity.
 *
 * Nested builders record, per child, how many child values belong to
 * finished elements (`committed`); every nested operation first checks
 * that each child holds exactly that many and has no element open, which
 * is how values appended outside begin_.../end_... are caught.
 *
 * A scalar append is encoded first (kind and range checked against the
 * value type) into the bytes the layout stores, then stored: directly, or
 * through the dictionary's hash table (memo), or compared with the last
 * run of a run-end-encoded builder.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/numeric_internal.h"
#include "core/validate_internal.h"
#include "quiver/builder.h"

/* Deepest type nesting a builder accepts (as the C data importer). */
#define QV_BUILDER_MAX_DEPTH 64

/* ------------------------------------------------------------------------ */
/* Dictionary memo: value bytes -> index, open addressing                    */

typedef struct memo {
  int64_t n;        /* values in the dictionary */
  int64_t cap;      /* slots (power of two, 0 before first use) */
  uint64_t *hashes; /* per slot */
  int64_t *slots;   /* per slot: index + 1, 0 = empty */
  uint8_t *keys;    /* value bytes, back to back */
  int64_t keys_len, keys_cap;
  int64_t *key_off; /* n + 1 offsets into keys */
  int64_t key_off_cap;
} memo;

static void memo_free(memo *m) {
  free(m->hashes);
  free(m->slots);
  free(m->keys);
  free(m->key_off);
  memset(m, 0, sizeof *m);
}

static bool memo_grow_table(memo *m) {
  int64_t cap = m->cap ? m->cap * 2 : 64;
  uint64_t *h = calloc((size_t)cap, sizeof *h);
  int64_t *s = calloc((size_t)cap, sizeof *s);
  if (!h || !s) {
    free(h);
    free(s);
    return false;
  }
  for (int64_t i = 0; i < m->cap; i++) {
    if (!m->slots[i]) continue;
    int64_t j = (int64_t)(m->hashes[i] & (uint64_t)(cap - 1));
    while (s[j]) j = (j + 1) & (cap - 1);
    s[j] = m->slots[i];
    h[j] = m->hashes[i];
  }
  free(m->hashes);
  free(m->slots);
  m->hashes = h;
  m->slots = s;
  m->cap = cap;
  return true;
}

/* Index of the value p[0..len) or -1; *slot_out receives the slot where it
 * would be inserted. */
static int64_t memo_find(const memo *m, const uint8_t *p, int64_t len, uint64_t h,
                         int64_t *slot_out) {
  if (m->cap == 0) {
    *slot_out = -1;
    return -1;
  }
  int64_t j = (int64_t)(h & (uint64_t)(m->cap - 1));
  while (m->slots[j]) {
    int64_t idx = m->slots[j] - 1;
    if (m->hashes[j] == h && m->key_off[idx + 1] - m->key_off[idx] == len &&
        (len == 0 || memcmp(m->keys + m->key_off[idx], p, (size_t)len) == 0))
      return idx;
    j = (j + 1) & (m->cap - 1);
  }
  *slot_out = j;
  return -1;
}

/* Add the value as index m->n. */
static bool memo_insert(memo *m, const uint8_t *p, int64_t len, uint64_t h) {
  if ((m->n + 1) * 2 > m->cap && !memo_grow_table(m)) return false;
  int64_t slot;
  memo_find(m, p, len, h, &slot);
  if (m->keys_len + len > m->keys_cap) {
    int64_t cap = m->keys_cap ? m->keys_cap : 256;
    while (cap < m->keys_len + len) cap *= 2;
    uint8_t *k = realloc(m->keys, (size_t)cap);
    if (!k) return false;
    m->keys = k;
    m->keys_cap = cap;
  }
  if (m->n + 2 > m->key_off_cap) {
    int64_t cap = m->key_off_cap ? m->key_off_cap * 2 : 64;
    int64_t *o = realloc(m->key_off, (size_t)cap * sizeof *o);
    if (!o) return false;
    m->key_off = o;
    m->key_off_cap = cap;
    if (m->n == 0) m->key_off[0] = 0;
  }
  if (len) memcpy(m->keys + m->keys_len, p, (size_t)len);
  m->keys_len += len;
  m->key_off[m->n + 1] = m->keys_len;
  m->slots[slot] = m->n + 1;
  m->hashes[slot] = h;
  m->n++;
  return true;
}

/* ------------------------------------------------------------------------ */
/* The builder                                                               */

struct qv_builder {
  qv_type *type;
  qv_builder *parent;
  char *path; /* dotted field path for messages ("" at the root) */
  bool nullable;
  int64_t length;
  int64_t null_count;
  int32_t width; /* fixed: value bytes; var/list: offset bytes;
                        dictionary: index bytes; REE: run-end bytes */
  qv_buffer *validity;
  qv_buffer *b1, *b2;
  qv_buffer **vdata;
  int32_t n_vdata, cap_vdata;
  int32_t n_children;
  qv_builder **children;
  int64_t *committed; /* per child */
  qv_builder *values; /* dictionary values / run-end-encoded values */
  /* an open element */
  bool open;
  int64_t open_start; /* list: child length at begin */
  int64_t open_arg;   /* union: child index; REE: run length */
  /* dictionary */
  memo memo;
  qv_array *dict_prev;    /* the dictionary as of the last finish */
  qv_array *dict_pending; /* the one being finished */
  int64_t max_index;      /* largest index appended by index (-1: none) */
  /* run-end encoded */
  int64_t n_runs;
  bool key_set, key_null; /* the last run's value, for by-value appends */
  uint8_t *key;
  int64_t key_len, key_cap;
};

/* ---- errors ----------------------------------------------------------- */

static qv_status berr(const qv_builder *b, qv_error *err, qv_status st, const char *op,
                      const char *fmt, ...) QV_PRINTF(5, 6);
static qv_status berr(const qv_builder *b, qv_error *err, qv_status st, const char *op,
                      const char *fmt, ...) {
  if (err == NULL) return st;
  char msg[640], type[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  qv_type_to_string(b->type, type, sizeof type);
  if (b->path[0]) return qv_error_set(err, st, "builder '%s' (%s): %s: %s", b->path, type, op, msg);
  return qv_error_set(err, st, "builder (%s): %s: %s", type, op, msg);
}

static bool is_list_like(qv_type_id id) {
  return id == QV_LIST || id == QV_LARGE_LIST || id == QV_LIST_VIEW || id == QV_LARGE_LIST_VIEW ||
         id == QV_MAP || id == QV_FIXED_SIZE_LIST;
}
static bool is_union(qv_type_id id) { return id == QV_SPARSE_UNION || id == QV_DENSE_UNION; }
static bool is_var_binary(qv_type_id id) {
  return id == QV_BINARY || id == QV_STRING || id == QV_LARGE_BINARY || id == QV_LARGE_STRING;
}
static bool is_view(qv_type_id id) { return id == QV_BINARY_VIEW || id == QV_STRING_VIEW; }
static bool is_utf8(qv_type_id id) {
  return id == QV_STRING || id == QV_LARGE_STRING || id == QV_STRING_VIEW;
}
/* Fixed-width types stored as byte_width bytes per value (not bool). */
static bool is_fixed(const qv_type *t) {
  return t->id != QV_BOOL && t->id != QV_DICTIONARY && qv_type_byte_width(t) > 0;
}

/* The appends a type takes, for error messages. */
static const char *takes(const qv_type *t) {
  switch (t->id) {
    case QV_NA: return "append_null";
    case QV_BOOL: return "append_bool, append_null";
    case QV_INT8:
    case QV_UINT8:
    case QV_INT16:
    case QV_UINT16:
    case QV_INT32:
    case QV_UINT32:
    case QV_INT64:
    case QV_UINT64:
      return "append_int, append_uint, append_values, append_bytes (raw), append_null";
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE: return "append_double, append_values, append_bytes (raw), append_null";
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256:
      return "append_int, append_uint, append_decimal, append_values, append_bytes "
             "(raw), append_null";
    case QV_INTERVAL_DAY_TIME:
      return "append_day_time, append_values, append_bytes (raw), append_null";
    case QV_INTERVAL_MONTH_DAY_NANO:
      return "append_month_day_nano, append_values, append_bytes (raw), append_null";
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: return "append_bytes, append_string, append_null";
    case QV_FIXED_SIZE_BINARY: return "append_bytes (byte_width bytes), append_values, append_null";
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_MAP:
    case QV_FIXED_SIZE_LIST: return "begin_list/end_list, append_null";
    case QV_STRUCT: return "begin_struct/end_struct, append_structs, append_null";
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: return "begin_union/end_union, append_null";
    case QV_DICTIONARY:
      return "the appends of its value type (by value), append_index, append_null";
    case QV_RUN_END_ENCODED:
      return "the appends of its value type (by value), begin_run/end_run, append_null";
    default: return "append_int, append_values, append_bytes (raw), append_null";
  }
}

static const char *pair_name(qv_type_id id) {
  if (is_list_like(id)) return "begin_list/end_list";
  if (id == QV_STRUCT) return "begin_struct/end_struct (or before append_structs)";
  if (is_union(id)) return "begin_union/end_union";
  if (id == QV_RUN_END_ENCODED) return "begin_run/end_run";
  return "an element";
}

static const char *child_name(const qv_builder *b, int32_t i) {
  if (b->type->id == QV_RUN_END_ENCODED) return b->type->children[1].name;
  return b->type->children[i].name;
}

/* ---- buffers ---------------------------------------------------------- */

/* Make *pb exactly `size` bytes (allocating it on first use). */
static qv_status bsize(qv_buffer **pb, int64_t size, qv_error *err) {
  if (*pb == NULL) return qv_buffer_alloc(size, pb, err);
  if ((*pb)->size == size) return QV_OK;
  return qv_buffer_resize(*pb, size, err);
}

static int64_t bitmap_bytes(int64_t bits) { return bits / 8 + (bits % 8 != 0); }

static void set_bits(uint8_t *p, int64_t off, int64_t n, bool v) {
  int64_t i = off, end = off + n;
  while (i < end && (i & 7)) qv_bit_put(p, i++, v);
  if (end - i >= 8) {
    memset(p + i / 8, v ? 0xff : 0, (size_t)((end - i) / 8));
    i += (end - i) / 8 * 8;
  }
  while (i < end) qv_bit_put(p, i++, v);
}

/* Record `n` validity bits from b->length on (without changing length). */
static qv_status put_validity(qv_builder *b, int64_t n, bool valid, qv_error *err) {
  if (n == 0) return QV_OK;
  if (b->validity == NULL) {
    if (valid) return QV_OK;
    QV_RETURN_NOT_OK(qv_buffer_alloc(bitmap_bytes(b->length + n), &b->validity, err));
    set_bits(b->validity->data, 0, b->length, true);
  } else {
    QV_RETURN_NOT_OK(bsize(&b->validity, bitmap_bytes(b->length + n), err));
  }
  set_bits(b->validity->data, b->length, n, valid);
  return QV_OK;
}

static int64_t load_int(const uint8_t *p, int64_t i, int w) { return qv_load_int(p, w, false, i); }

static void store_int(uint8_t *p, int64_t i, int w, int64_t v) {
  switch (w) {
    case 1: p[i] = (uint8_t)v; break;
    case 2: {
      int16_t x = (int16_t)v;
      memcpy(p + 2 * i, &x, 2);
      break;
    }
    case 4: {
      int32_t x = (int32_t)v;
      memcpy(p + 4 * i, &x, 4);
      break;
    }
    default: memcpy(p + 8 * i, &v, 8); break;
  }
}

/* Largest value of a signed integer of w bytes. */
static int64_t signed_max(int w) {
  return w >= 8 ? INT64_MAX : (int64_t)((1ull << (8 * w - 1)) - 1);
}

/* Largest index a dictionary's index type can hold. */
static int64_t index_max(const qv_type *index_type) {
  int w = qv_type_byte_width(index_type);
  if (qv_type_id_is_signed_integer(index_type->id)) return signed_max(w);
  return w >= 8 ? INT64_MAX : (int64_t)((1ull << (8 * w)) - 1);
}

/* Append one offset (value v) at position i of an offsets buffer. */
static qv_status put_offset(qv_buffer **pb, int w, int64_t i, int64_t v, qv_error *err) {
  QV_RETURN_NOT_OK(bsize(pb, (i + 1) * w, err));
  store_int((*pb)->data, i, w, v);
  return QV_OK;
}

/* The last offset of a var-binary / list builder (offsets[length]); the
 * offsets buffer is allocated at the first append, so none means 0. */
static int64_t last_offset(const qv_builder *b) {
  return b->b1 ? load_int(b->b1->data, b->length, b->width) : 0;
}

/* ---- construction ----------------------------------------------------- */

static void builder_free(qv_builder *b);

static char *join_path(const char *parent, const char *name) {
  size_t n = strlen(parent) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s%s%s", parent, parent[0] ? "." : "", name);
  return p;
}

static qv_status builder_make(const qv_type *t, qv_builder *parent, const char *name, bool nullable,
                              int depth, qv_builder **out, qv_error *err) {
  *out = NULL;
  if (t == NULL) return qv_error_set(err, QV_EARG, "qv_builder_new: NULL type");
  if (depth > QV_BUILDER_MAX_DEPTH)
    return qv_error_set(err, QV_ENOTSUP, "qv_builder_new: nesting deeper than %d",
                        QV_BUILDER_MAX_DEPTH);
  qv_builder *b = calloc(1, sizeof *b);
  if (b == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (builder)");
  b->type = qv_type_ref((qv_type *)(uintptr_t)t);
  b->parent = parent;
  b->nullable = nullable;
  b->max_index = -1;
  b->path = parent ? join_path(parent->path, name) : strdup("");
  qv_status st = QV_OK;
  if (b->path == NULL) {
    st = qv_error_set(err, QV_ENOMEM, "out of memory (builder)");
    goto fail;
  }
  qv_type_id id = t->id;
  switch (id) {
    case QV_BINARY:
    case QV_STRING:
    case QV_LIST:
    case QV_MAP: b->width = 4; break;
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_LARGE_LIST: b->width = 8; break;
    case QV_LIST_VIEW: b->width = 4; break;
    case QV_LARGE_LIST_VIEW: b->width = 8; break;
    case QV_DICTIONARY:
      if (t->index_type == NULL || !qv_type_id_is_integer(t->index_type->id) ||
          t->value_type == NULL) {
        st = berr(b, err, QV_EARG, "qv_builder_new",
                  "a dictionary type needs an integer index type and a value type");
        goto fail;
      }
      b->width = qv_type_byte_width(t->index_type);
      break;
    case QV_RUN_END_ENCODED: {
      const qv_type *re = t->n_children == 2 ? t->children[0].type : NULL;
      if (re == NULL || (re->id != QV_INT16 && re->id != QV_INT32 && re->id != QV_INT64)) {
        st = berr(b, err, QV_EARG, "qv_builder_new",
                  "a run-end-encoded type needs children (run_ends: int16/32/64, values)");
        goto fail;
      }
      b->width = qv_type_byte_width(re);
      break;
    }
    default: b->width = qv_type_byte_width(t); break;
  }
  if (is_list_like(id) && t->n_children != 1) {
    st = berr(b, err, QV_EARG, "qv_builder_new", "the type needs exactly one child, has %d",
              (int)t->n_children);
    goto fail;
  }
  if (id == QV_FIXED_SIZE_LIST && t->list_size < 0) {
    st = berr(b, err, QV_EARG, "qv_builder_new", "negative list size %d", (int)t->list_size);
    goto fail;
  }
  if (is_union(id) && t->n_children > 0 && t->type_codes == NULL) {
    st = berr(b, err, QV_EARG, "qv_builder_new", "the union type has no type codes");
    goto fail;
  }
  if (is_list_like(id) || id == QV_STRUCT || is_union(id)) {
    b->n_children = t->n_children;
    b->children = calloc((size_t)(t->n_children ? t->n_children : 1), sizeof *b->children);
    b->committed = calloc((size_t)(t->n_children ? t->n_children : 1), sizeof(int64_t));
    if (!b->children || !b->committed) {
      st = qv_error_set(err, QV_ENOMEM, "out of memory (builder)");
      goto fail;
    }
    for (int32_t i = 0; i < t->n_children; i++) {
      const qv_field *f = &t->children[i];
      st = builder_make(f->type, b, f->name, f->nullable, depth + 1, &b->children[i], err);
      if (st != QV_OK) goto fail;
    }
  } else if (id == QV_DICTIONARY) {
    b->committed = calloc(1, sizeof(int64_t));
    if (!b->committed) {
      st = qv_error_set(err, QV_ENOMEM, "out of memory (builder)");
      goto fail;
    }
    st = builder_make(t->value_type, b, "<dictionary>", true, depth + 1, &b->values, err);
    if (st != QV_OK) goto fail;
  } else if (id == QV_RUN_END_ENCODED) {
    b->committed = calloc(1, sizeof(int64_t));
    if (!b->committed) {
      st = qv_error_set(err, QV_ENOMEM, "out of memory (builder)");
      goto fail;
    }
    const qv_field *f = &t->children[1];
    st = builder_make(f->type, b, f->name, f->nullable, depth + 1, &b->values, err);
    if (st != QV_OK) goto fail;
  }
  *out = b;
  return QV_OK;
fail:
  builder_free(b);
  return st;
}

static void drop_buffers(qv_builder *b) {
  qv_buffer_unref(b->validity);
  qv_buffer_unref(b->b1);
  qv_buffer_unref(b->b2);
  for (int32_t i = 0; i < b->n_vdata; i++) qv_buffer_unref(b->vdata[i]);
  b->validity = b->b1 = b->b2 = NULL;
  b->n_vdata = 0;
}

static void builder_free(qv_builder *b) {
  if (b == NULL) return;
  drop_buffers(b);
  free(b->vdata);
  for (int32_t i = 0; i < b->n_children; i++) builder_free(b->children[i]);
  free(b->children);
  free(b->committed);
  builder_free(b->values);
  memo_free(&b->memo);
  qv_array_unref(b->dict_prev);
  qv_array_unref(b->dict_pending);
  free(b->key);
  free(b->path);
  qv_type_unref(b->type);
  free(b);
}

qv_status qv_builder_new(const qv_type *type, qv_builder **out, qv_error *err) {
  if (out == NULL) return qv_error_set(err, QV_EARG, "qv_builder_new: NULL out");
  return builder_make(type, NULL, "", true, 0, out, err);
}

void qv_builder_free(qv_builder *b) {
  if (b == NULL || b->parent != NULL) return;
  builder_free(b);
}

const qv_type *qv_builder_type(const qv_builder *b) { return b ? b->type : NULL; }
int64_t qv_builder_length(const qv_builder *b) { return b ? b->length : 0; }
int64_t qv_builder_null_count(const qv_builder *b) { return b ? b->null_count : 0; }

qv_builder *qv_builder_child(qv_builder *b, int32_t i) {
  if (b == NULL || i < 0 || i >= b->n_children) return NULL;
  return b->children[i];
}

qv_builder *qv_builder_values(qv_builder *b) { return b ? b->values : NULL; }

qv_status qv_builder_reserve(qv_builder *b, int64_t n, qv_error *err) {
  if (b == NULL || n < 0) return qv_error_set(err, QV_EARG, "qv_builder_reserve: bad argument");
  int64_t per = 0;
  qv_type_id id = b->type->id;
  if (is_fixed(b->type)) per = b->width;
  else if (is_var_binary(id) || id == QV_LIST || id == QV_LARGE_LIST || id == QV_MAP ||
           id == QV_DICTIONARY)
    per = b->width;
  else if (is_view(id)) per = QV_VIEW_SIZE;
  if (per == 0) return QV_OK;
  if (b->b1 == NULL) QV_RETURN_NOT_OK(qv_buffer_alloc(0, &b->b1, err));
  int64_t need, keep = b->b1->size;
  if (qv_mul_overflow(n, per, &need) || qv_add_overflow(need, keep, &need))
    return berr(b, err, QV_ENOMEM, "reserve", "%lld more elements overflow", (long long)n);
  QV_RETURN_NOT_OK(qv_buffer_resize(b->b1, need, err));
  return qv_buffer_resize(b->b1, keep, err);
}

/* ---- nesting checks --------------------------------------------------- */

static const char *closer(qv_type_id id) {
  if (is_list_like(id)) return "end_list";
  if (id == QV_STRUCT) return "end_struct";
  if (is_union(id)) return "end_union";
  return "end_run";
}

/* Children checked for balance: dictionaries have none (values appended
 * by index are free-form), run-end encoded its values builder. */
static int32_t n_kids(const qv_builder *b) {
  if (b->type->id == QV_DICTIONARY) return 0;
  if (b->type->id == QV_RUN_END_ENCODED) return 1;
  return b->n_children;
}
static qv_builder *kid(const qv_builder *b, int32_t i) {
  return b->type->id == QV_RUN_END_ENCODED ? b->values : b->children[i];
}

static qv_status check_closed(qv_builder *b, const char *op, qv_error *err) {
  if (b->open)
    return berr(b, err, QV_EARG, op, "an element is open (call %s first)", closer(b->type->id));
  return QV_OK;
}

/* Every child holds exactly the values of finished elements and has no
 * element open. */
static qv_status check_kids(qv_builder *b, const char *op, qv_error *err) {
  for (int32_t i = 0; i < n_kids(b); i++) {
    qv_builder *c = kid(b, i);
    if (c->open)
      return berr(b, err, QV_EARG, op, "child '%s' has an element still open (call %s on it)",
                  child_name(b, i), closer(c->type->id));
    if (c->length != b->committed[i])
      return berr(b, err, QV_EARG, op,
                  "child '%s' holds %lld values, expected %lld: values were appended to "
                  "it outside %s",
                  child_name(b, i), (long long)c->length, (long long)b->committed[i],
                  pair_name(b->type->id));
  }
  return QV_OK;
}

static qv_status run_end_fits(qv_builder *b, int64_t n, const char *op, qv_error *err) {
  int64_t end;
  if (qv_add_overflow(b->length, n, &end) || end > signed_max(b->width))
    return berr(b, err, QV_ERANGE, op,
                "%lld more elements would pass %lld, the largest "
                "run end of %s",
                (long long)n, (long long)signed_max(b->width),
                qv_type_id_name(b->type->children[0].type->id));
  return QV_OK;
}

static qv_status put_run_end(qv_builder *b, int64_t run, int64_t end, qv_error *err) {
  QV_RETURN_NOT_OK(bsize(&b->b1, (run + 1) * b->width, err));
  store_int(b->b1->data, run, b->width, end);
  return QV_OK;
}

/* ---- nulls ------------------------------------------------------------ */

/* Append n nulls without the nullability check (also used for the nulls a
 * parent puts into its children). */
static qv_status nulls_raw(qv_builder *b, int64_t n, const char *op, qv_error *err) {
  if (n < 0) return berr(b, err, QV_EARG, op, "negative count %lld", (long long)n);
  if (n == 0) return QV_OK;
  QV_RETURN_NOT_OK(check_closed(b, op, err));
  QV_RETURN_NOT_OK(check_kids(b, op, err));
  qv_type_id id = b->type->id;
  int64_t len = b->length, total;
  if (qv_add_overflow(len, n, &total)) return berr(b, err, QV_ERANGE, op, "length overflows");
  if (is_union(id)) {
    if (b->n_children == 0)
      return berr(b, err, QV_ETYPE, op, "a union without children cannot hold a null");
    QV_RETURN_NOT_OK(bsize(&b->b1, total, err));
    memset(b->b1->data + len, (int8_t)b->type->type_codes[0], (size_t)n);
    if (id == QV_DENSE_UNION) {
      if (b->committed[0] + n > INT32_MAX)
        return berr(b, err, QV_ERANGE, op, "dense union offsets pass the int32 range");
      QV_RETURN_NOT_OK(bsize(&b->b2, total * 4, err));
      for (int64_t k = 0; k < n; k++) store_int(b->b2->data, len + k, 4, b->committed[0] + k);
    }
    int32_t nc = id == QV_DENSE_UNION ? 1 : b->n_children;
    for (int32_t c = 0; c < nc; c++) {
      QV_RETURN_NOT_OK(nulls_raw(b->children[c], n, op, err));
      b->committed[c] += n;
    }
    b->length = total;
    return QV_OK;
  }
  if (id == QV_RUN_END_ENCODED) {
    QV_RETURN_NOT_OK(run_end_fits(b, n, op, err));
    if (b->key_set && b->key_null) {
      store_int(b->b1->data, b->n_runs - 1, b->width, total);
    } else {
      QV_RETURN_NOT_OK(nulls_raw(b->values, 1, op, err));
      QV_RETURN_NOT_OK(put_run_end(b, b->n_runs, total, err));
      b->committed[0] = ++b->n_runs;
      b->key_set = b->key_null = true;
    }
    b->length = total;
    return QV_OK;
  }
  if (id != QV_NA) QV_RETURN_NOT_OK(put_validity(b, n, false, err));
  switch (id) {
    case QV_NA: break;
    case QV_BOOL:
      QV_RETURN_NOT_OK(bsize(&b->b1, bitmap_bytes(total), err));
      set_bits(b->b1->data, len, n, false);
      break;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: {
      int64_t last = last_offset(b);
      QV_RETURN_NOT_OK(bsize(&b->b1, (total + 1) * b->width, err));
      for (int64_t k = 1; k <= n; k++) store_int(b->b1->data, len + k, b->width, last);
      break;
    }
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
      QV_RETURN_NOT_OK(bsize(&b->b1, total * b->width, err));
      QV_RETURN_NOT_OK(bsize(&b->b2, total * b->width, err));
      for (int64_t k = 0; k < n; k++) {
        store_int(b->b1->data, len + k, b->width, b->committed[0]);
        store_int(b->b2->data, len + k, b->width, 0);
      }
      break;
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
      QV_RETURN_NOT_OK(bsize(&b->b1, total * QV_VIEW_SIZE, err));
      memset(b->b1->data + len * QV_VIEW_SIZE, 0, (size_t)(n * QV_VIEW_SIZE));
      break;
    case QV_FIXED_SIZE_LIST: {
      int64_t m;
      if (qv_mul_overflow(n, (int64_t)b->type->list_size, &m))
        return berr(b, err, QV_ERANGE, op, "child length overflows");
      QV_RETURN_NOT_OK(nulls_raw(b->children[0], m, op, err));
      b->committed[0] += m;
      break;
    }
    case QV_STRUCT:
      for (int32_t c = 0; c < b->n_children; c++) {
        QV_RETURN_NOT_OK(nulls_raw(b->children[c], n, op, err));
        b->committed[c] += n;
      }
      break;
    default: /* fixed width and dictionary indices: zeros */
      QV_RETURN_NOT_OK(bsize(&b->b1, total * b->width, err));
      memset(b->b1->data + len * b->width, 0, (size_t)(n * b->width));
      break;
  }
  b->length = total;
  b->null_count += n;
  return QV_OK;
}

static qv_status append_nulls(qv_builder *b, int64_t n, const char *op, qv_error *err) {
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_%s: NULL builder", op);
  if (!b->nullable && n > 0) return berr(b, err, QV_EARG, op, "the field is not nullable");
  return nulls_raw(b, n, op, err);
}

qv_status qv_builder_append_null(qv_builder *b, qv_error *err) {
  return append_nulls(b, 1, "append_null", err);
}

qv_status qv_builder_append_nulls(qv_builder *b, int64_t n, qv_error *err) {
  return append_nulls(b, n, "append_nulls", err);
}

/* ---- scalars: encode -------------------------------------------------- */

typedef enum kind { K_BOOL, K_INT, K_UINT, K_DOUBLE, K_BYTES, K_DECIMAL, K_DAY_TIME, K_MDN } kind;

/* A value on its way in: the caller's input (by kind), then the bytes the
 * layout stores (p, len; fixed-width values live in `fixed`). */
typedef struct scalar {
  kind k;
  int64_t i;
  uint64_t u;
  double d;
  const char *text;
  int32_t months, days;
  int64_t sub; /* day_time: milliseconds; month_day_nano: nanoseconds */
  const uint8_t *p;
  int64_t len;
  uint8_t fixed[32];
} scalar;

static qv_status wrong_kind(qv_builder *b, const char *op, qv_error *err) {
  char t[160];
  qv_type_to_string(b->type, t, sizeof t);
  return berr(b, err, QV_ETYPE, op, "wrong kind of value for %s (it takes %s)", t, takes(b->type));
}

static qv_status out_of_range(qv_builder *b, const qv_type *t, const char *op, const scalar *s,
                              qv_error *err) {
  char v[40];
  if (s->k == K_UINT) snprintf(v, sizeof v, "%llu", (unsigned long long)s->u);
  else snprintf(v, sizeof v, "%lld", (long long)s->i);
  return berr(b, err, QV_ERANGE, op, "value %s is out of range for %s", v, qv_type_id_name(t->id));
}

/* Two's complement negation of a w-byte little-endian integer. */
static void negate_le(uint8_t *p, int w) {
  unsigned carry = 1;
  for (int k = 0; k < w; k++) {
    unsigned v = (uint8_t)~p[k] + carry;
    p[k] = (uint8_t)v;
    carry = v >> 8;
  }
}

static int digits_u64(uint64_t v) {
  int n = 1;
  while (v >= 10) {
    v /= 10;
    n++;
  }
  return n;
}

/* A decimal from sign and magnitude (the unscaled integer). */
static qv_status decimal_from_int(qv_builder *b, const qv_type *t, bool neg, uint64_t mag,
                                  const char *op, scalar *s, qv_error *err) {
  int w = qv_type_byte_width(t);
  int d = digits_u64(mag);
  if (mag != 0 && d > t->precision)
    return berr(b, err, QV_ERANGE, op, "value %s%llu has %d digits, more than the precision %d",
                neg ? "-" : "", (unsigned long long)mag, d, (int)t->precision);
  if (w < 8 && mag > (uint64_t)signed_max(w) + (neg ? 1u : 0u))
    return berr(b, err, QV_ERANGE, op, "value %s%llu does not fit %d bytes", neg ? "-" : "",
                (unsigned long long)mag, w);
  if (w == 8 && mag > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
    return berr(b, err, QV_ERANGE, op, "value %s%llu does not fit 8 bytes", neg ? "-" : "",
                (unsigned long long)mag);
  memset(s->fixed, 0, sizeof s->fixed);
  for (int k = 0; k < 8 && k < w; k++) s->fixed[k] = (uint8_t)(mag >> (8 * k));
  if (neg) negate_le(s->fixed, w);
  s->p = s->fixed;
  s->len = w;
  return QV_OK;
}

/* "-12.50" scaled to the type's scale, as an integer string for
 * qv_num_decimal_parse. */
static qv_status decimal_from_text(qv_builder *b, const qv_type *t, const char *text,
                                   const char *op, scalar *s, qv_error *err) {
  const char *p = text;
  bool neg = false;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  const char *ip = p;
  while (*p >= '0' && *p <= '9') p++;
  int64_t ni = p - ip;
  const char *fp = NULL;
  int64_t nf = 0;
  if (*p == '.') {
    fp = ++p;
    while (*p >= '0' && *p <= '9') p++;
    nf = p - fp;
  }
  if (*p != '\0' || ni + nf == 0)
    return berr(b, err, QV_EARG, op, "'%.64s' is not a decimal number", text);
  while (ni > 0 && *ip == '0') { /* leading zeros */
    ip++;
    ni--;
  }
  /* unscaled = digits(ip, fp) * 10^(scale - nf) */
  int64_t shift = (int64_t)t->scale - nf;
  char digits[128];
  int64_t n = 0;
  digits[n++] = neg ? '-' : '+';
  int64_t keep_f = nf, total = ni + nf + (shift > 0 ? shift : 0);
  if (shift < 0) {
    /* drop -shift trailing digits, which must be zeros */
    int64_t drop = -shift;
    for (int64_t k = 0; k < drop; k++) {
      int64_t pos = ni + nf - 1 - k; /* index into the digits int|frac */
      char c = pos < 0 ? '0' : pos < ni ? ip[pos] : fp[pos - ni];
      if (c != '0')
        return berr(b, err, QV_ERANGE, op,
                    "'%.64s' has more fractional digits than the "
                    "scale %d",
                    text, (int)t->scale);
    }
    total = ni + nf - drop;
    if (total < 0) total = 0;
    keep_f = nf - drop; /* may go negative: integer digits dropped too */
  }
  if (total > 100)
    return berr(b, err, QV_ERANGE, op, "'%.64s' has more digits than the precision %d", text,
                (int)t->precision);
  int64_t ki = keep_f < 0 ? ni + keep_f : ni;
  for (int64_t k = 0; k < ki; k++) digits[n++] = ip[k];
  for (int64_t k = 0; k < keep_f; k++) digits[n++] = fp[k];
  for (int64_t k = 0; k < shift; k++) digits[n++] = '0';
  if (n == 1) digits[n++] = '0';
  digits[n] = '\0';
  int64_t sig = n - 1, z = 1;
  while (z < n - 1 && digits[z] == '0') z++;
  sig = n - z;
  if (!(sig == 1 && digits[z] == '0') && sig > t->precision)
    return berr(b, err, QV_ERANGE, op,
                "'%.64s' has %lld significant digits at scale %d, "
                "more than the precision %d",
                text, (long long)sig, (int)t->scale, (int)t->precision);
  int w = qv_type_byte_width(t);
  memset(s->fixed, 0, sizeof s->fixed);
  if (!qv_num_decimal_parse(digits, n, w, s->fixed))
    return berr(b, err, QV_ERANGE, op, "'%.64s' does not fit %d bytes", text, w);
  s->p = s->fixed;
  s->len = w;
  return QV_OK;
}

/* Encode the input in s as the bytes type t stores (checking kind and
 * range); errors are reported for builder b. */
static qv_status encode(qv_builder *b, const qv_type *t, scalar *s, const char *op, qv_error *err) {
  qv_type_id id = t->id;
  int w = qv_type_byte_width(t);
  memset(s->fixed, 0, sizeof s->fixed);
  s->p = s->fixed;
  s->len = w;
  switch (s->k) {
    case K_BOOL:
      if (id != QV_BOOL) return wrong_kind(b, op, err);
      s->fixed[0] = s->i != 0;
      s->len = 1;
      return QV_OK;
    case K_INT:
    case K_UINT: {
      bool neg = s->k == K_INT && s->i < 0;
      uint64_t mag = s->k == K_UINT ? s->u : neg ? 0 - (uint64_t)s->i : (uint64_t)s->i;
      if (id >= QV_DECIMAL32 && id <= QV_DECIMAL256)
        return decimal_from_int(b, t, neg, mag, op, s, err);
      bool is_int = qv_type_id_is_integer(id);
      bool is_signed = qv_type_id_is_signed_integer(id) || id == QV_DATE32 || id == QV_DATE64 ||
                       id == QV_TIME32 || id == QV_TIME64 || id == QV_TIMESTAMP ||
                       id == QV_DURATION || id == QV_INTERVAL_MONTHS;
      if (!is_int && !(is_signed && s->k == K_INT)) return wrong_kind(b, op, err);
      if (is_signed) {
        uint64_t lim = (uint64_t)signed_max(w) + (neg ? 1u : 0u);
        if (mag > lim) return out_of_range(b, t, op, s, err);
      } else {
        if (neg || (w < 8 && mag >> (8 * w))) return out_of_range(b, t, op, s, err);
      }
      uint64_t v = neg ? 0 - mag : mag;
      for (int k = 0; k < w; k++) s->fixed[k] = (uint8_t)(v >> (8 * k));
      return QV_OK;
    }
    case K_DOUBLE:
      if (id == QV_HALF_FLOAT) {
        uint16_t h = qv_double_to_half(s->d);
        memcpy(s->fixed, &h, 2);
      } else if (id == QV_FLOAT) {
        float f = (float)s->d;
        memcpy(s->fixed, &f, 4);
      } else if (id == QV_DOUBLE) {
        memcpy(s->fixed, &s->d, 8);
      } else {
        return wrong_kind(b, op, err);
      }
      return QV_OK;
    case K_BYTES:
      s->p = (const uint8_t *)s->text; /* the caller's bytes, stashed there */
      s->len = s->i;
      if (s->len < 0) return berr(b, err, QV_EARG, op, "negative length %lld", (long long)s->len);
      if (s->len > 0 && s->p == NULL) return berr(b, err, QV_EARG, op, "NULL data");
      if (is_var_binary(id) || is_view(id)) {
        if (is_utf8(id)) {
          int64_t ok = qv_utf8_valid_prefix(s->p, s->len);
          if (ok != s->len)
            return berr(b, err, QV_EINVAL, op, "value is not valid UTF-8 (byte %lld of %lld)",
                        (long long)ok, (long long)s->len);
        }
        return QV_OK;
      }
      if (is_fixed(t)) {
        if (s->len != w)
          return berr(b, err, QV_EARG, op, "%s takes values of %d bytes, found %lld",
                      qv_type_id_name(id), w, (long long)s->len);
        return QV_OK;
      }
      return wrong_kind(b, op, err);
    case K_DECIMAL:
      if (id < QV_DECIMAL32 || id > QV_DECIMAL256) return wrong_kind(b, op, err);
      return decimal_from_text(b, t, s->text, op, s, err);
    case K_DAY_TIME:
      if (id != QV_INTERVAL_DAY_TIME) return wrong_kind(b, op, err);
      memcpy(s->fixed, &s->days, 4);
      {
        int32_t ms = (int32_t)s->sub;
        memcpy(s->fixed + 4, &ms, 4);
      }
      return QV_OK;
    case K_MDN:
      if (id != QV_INTERVAL_MONTH_DAY_NANO) return wrong_kind(b, op, err);
      memcpy(s->fixed, &s->months, 4);
      memcpy(s->fixed + 4, &s->days, 4);
      memcpy(s->fixed + 8, &s->sub, 8);
      return QV_OK;
  }
  return wrong_kind(b, op, err);
}

/* ---- scalars: store --------------------------------------------------- */

static qv_status store_view(qv_builder *b, const scalar *s, const char *op, qv_error *err) {
  uint8_t v[QV_VIEW_SIZE] = {0};
  if (s->len > INT32_MAX)
    return berr(b, err, QV_ERANGE, op, "a view holds at most %d bytes, found %lld", INT32_MAX,
                (long long)s->len);
  int32_t len32 = (int32_t)s->len;
  memcpy(v, &len32, 4);
  if (s->len <= QV_VIEW_INLINE_MAX) {
    if (s->len) memcpy(v + 4, s->p, (size_t)s->len);
  } else {
    qv_buffer *cur = b->n_vdata ? b->vdata[b->n_vdata - 1] : NULL;
    if (cur == NULL || cur->size + s->len > INT32_MAX) {
      if (b->n_vdata == INT32_MAX - 2)
        return berr(b, err, QV_ERANGE, op, "too many view data buffers");
      if (b->n_vdata == b->cap_vdata) {
        int32_t cap = b->cap_vdata ? b->cap_vdata * 2 : 4;
        qv_buffer **nv = realloc(b->vdata, sizeof *nv * (size_t)cap);
        if (nv == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (views)");
        b->vdata = nv;
        b->cap_vdata = cap;
      }
      QV_RETURN_NOT_OK(qv_buffer_alloc(0, &cur, err));
      b->vdata[b->n_vdata++] = cur;
    }
    int32_t off = (int32_t)cur->size, idx = b->n_vdata - 1;
    QV_RETURN_NOT_OK(qv_buffer_append(cur, s->p, s->len, err));
    memcpy(v + 4, s->p, 4);
    memcpy(v + 8, &idx, 4);
    memcpy(v + 12, &off, 4);
  }
  QV_RETURN_NOT_OK(bsize(&b->b1, (b->length + 1) * QV_VIEW_SIZE, err));
  memcpy(b->b1->data + b->length * QV_VIEW_SIZE, v, QV_VIEW_SIZE);
  return QV_OK;
}

/* Store an encoded scalar into a builder of a primitive layout. */
static qv_status store(qv_builder *b, const scalar *s, const char *op, qv_error *err) {
  qv_type_id id = b->type->id;
  int64_t n = b->length;
  if (id == QV_BOOL) {
    QV_RETURN_NOT_OK(bsize(&b->b1, bitmap_bytes(n + 1), err));
    qv_bit_put(b->b1->data, n, s->fixed[0] != 0);
  } else if (is_var_binary(id)) {
    int64_t last = last_offset(b), end;
    if (qv_add_overflow(last, s->len, &end) || (b->width == 4 && end > INT32_MAX))
      return berr(b, err, QV_ERANGE, op,
                  "the data would pass %lld bytes, the limit of "
                  "32-bit offsets (use large_%s)",
                  (long long)INT32_MAX, id == QV_STRING ? "string" : "binary");
    QV_RETURN_NOT_OK(bsize(&b->b2, end, err));
    if (s->len) memcpy(b->b2->data + last, s->p, (size_t)s->len);
    QV_RETURN_NOT_OK(put_offset(&b->b1, b->width, n + 1, end, err));
  } else if (is_view(id)) {
    QV_RETURN_NOT_OK(store_view(b, s, op, err));
  } else if (is_fixed(b->type)) {
    QV_RETURN_NOT_OK(bsize(&b->b1, (n + 1) * b->width, err));
    memcpy(b->b1->data + n * b->width, s->p, (size_t)b->width);
  } else {
    return berr(b, err, QV_ETYPE, op, "cannot store a scalar here");
  }
  QV_RETURN_NOT_OK(put_validity(b, 1, true, err));
  b->length = n + 1;
  return QV_OK;
}

static qv_status put_index(qv_builder *b, int64_t idx, qv_error *err) {
  QV_RETURN_NOT_OK(bsize(&b->b1, (b->length + 1) * b->width, err));
  store_int(b->b1->data, b->length, b->width, idx);
  QV_RETURN_NOT_OK(put_validity(b, 1, true, err));
  b->length++;
  return QV_OK;
}

static int64_t dict_base(const qv_builder *b) { return b->dict_prev ? b->dict_prev->length : 0; }

static qv_status dict_put(qv_builder *b, const scalar *s, const char *op, qv_error *err) {
  qv_builder *v = b->values;
  if (v->open || v->length + dict_base(b) != b->memo.n)
    return berr(b, err, QV_EARG, op,
                "the dictionary holds values appended through "
                "qv_builder_values (by index); appends by value cannot be mixed with them");
  uint64_t h = XXH3_64bits(s->p, (size_t)s->len);
  int64_t slot;
  int64_t idx = memo_find(&b->memo, s->p, s->len, h, &slot);
  if (idx < 0) {
    idx = b->memo.n;
    if (idx > index_max(b->type->index_type))
      return berr(b, err, QV_ERANGE, op,
                  "the dictionary is full: %s indices address %lld "
                  "values",
                  qv_type_id_name(b->type->index_type->id), (long long)idx);
    QV_RETURN_NOT_OK(store(v, s, op, err));
    if (!memo_insert(&b->memo, s->p, s->len, h))
      return qv_error_set(err, QV_ENOMEM, "out of memory (dictionary hash table)");
  }
  return put_index(b, idx, err);
}

static qv_status ree_put(qv_builder *b, const scalar *s, const char *op, qv_error *err) {
  QV_RETURN_NOT_OK(check_closed(b, op, err));
  QV_RETURN_NOT_OK(check_kids(b, op, err));
  QV_RETURN_NOT_OK(run_end_fits(b, 1, op, err));
  if (b->key_set && !b->key_null && b->key_len == s->len &&
      (s->len == 0 || memcmp(b->key, s->p, (size_t)s->len) == 0)) {
    store_int(b->b1->data, b->n_runs - 1, b->width, b->length + 1);
    b->length++;
    return QV_OK;
  }
  QV_RETURN_NOT_OK(store(b->values, s, op, err));
  QV_RETURN_NOT_OK(put_run_end(b, b->n_runs, b->length + 1, err));
  b->committed[0] = ++b->n_runs;
  b->length++;
  b->key_set = false;
  if (s->len > b->key_cap) {
    uint8_t *k = realloc(b->key, (size_t)s->len);
    if (k == NULL) return QV_OK; /* no coalescing with this run; still correct */
    b->key = k;
    b->key_cap = s->len;
  }
  if (s->len) memcpy(b->key, s->p, (size_t)s->len);
  b->key_len = s->len;
  b->key_set = true;
  b->key_null = false;
  return QV_OK;
}

static qv_status append_scalar(qv_builder *b, scalar *s, const char *op, qv_error *err) {
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_%s: NULL builder", op);
  qv_type_id id = b->type->id;
  const qv_type *vt = id == QV_DICTIONARY        ? b->type->value_type
                      : id == QV_RUN_END_ENCODED ? b->type->children[1].type
                                                 : b->type;
  if ((id == QV_DICTIONARY || id == QV_RUN_END_ENCODED) &&
      (vt->id == QV_NA || vt->id == QV_DICTIONARY || vt->id == QV_RUN_END_ENCODED ||
       vt->n_children > 0))
    return wrong_kind(b, op, err);
  QV_RETURN_NOT_OK(encode(b, vt, s, op, err));
  if (id == QV_DICTIONARY) return dict_put(b, s, op, err);
  if (id == QV_RUN_END_ENCODED) return ree_put(b, s, op, err);
  return store(b, s, op, err);
}

qv_status qv_builder_append_bool(qv_builder *b, bool v, qv_error *err) {
  scalar s = {.k = K_BOOL, .i = v};
  return append_scalar(b, &s, "append_bool", err);
}

qv_status qv_builder_append_int(qv_builder *b, int64_t v, qv_error *err) {
  scalar s = {.k = K_INT, .i = v};
  return append_scalar(b, &s, "append_int", err);
}

qv_status qv_builder_append_uint(qv_builder *b, uint64_t v, qv_error *err) {
  scalar s = {.k = K_UINT, .u = v};
  return append_scalar(b, &s, "append_uint", err);
}

qv_status qv_builder_append_double(qv_builder *b, double v, qv_error *err) {
  scalar s = {.k = K_DOUBLE, .d = v};
  return append_scalar(b, &s, "append_double", err);
}

static qv_status append_bytes(qv_builder *b, const void *data, int64_t len, const char *op,
                              qv_error *err) {
  scalar s = {.k = K_BYTES};
  s.text = (const char *)data; /* encode() takes the bytes from text/i */
  s.i = len;
  return append_scalar(b, &s, op, err);
}

qv_status qv_builder_append_bytes(qv_builder *b, const void *data, int64_t len, qv_error *err) {
  return append_bytes(b, data, len, "append_bytes", err);
}

qv_status qv_builder_append_string(qv_builder *b, const char *str, qv_error *err) {
  if (str == NULL) return qv_error_set(err, QV_EARG, "qv_builder_append_string: NULL string");
  return append_bytes(b, str, (int64_t)strlen(str), "append_string", err);
}

qv_status qv_builder_append_decimal(qv_builder *b, const char *text, qv_error *err) {
  if (text == NULL) return qv_error_set(err, QV_EARG, "qv_builder_append_decimal: NULL text");
  scalar s = {.k = K_DECIMAL, .text = text};
  return append_scalar(b, &s, "append_decimal", err);
}

qv_status qv_builder_append_day_time(qv_builder *b, int32_t days, int32_t millis, qv_error *err) {
  scalar s = {.k = K_DAY_TIME, .days = days, .sub = millis};
  return append_scalar(b, &s, "append_day_time", err);
}

qv_status qv_builder_append_month_day_nano(qv_builder *b, int32_t months, int32_t days,
                                           int64_t nanos, qv_error *err) {
  scalar s = {.k = K_MDN, .months = months, .days = days, .sub = nanos};
  return append_scalar(b, &s, "append_month_day_nano", err);
}

qv_status qv_builder_append_values(qv_builder *b, const void *values, int64_t n, qv_error *err) {
  const char *op = "append_values";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_append_values: NULL builder");
  if (!is_fixed(b->type)) return wrong_kind(b, op, err);
  int64_t bytes, end;
  if (n < 0 || (n > 0 && values == NULL) || qv_mul_overflow(n, b->width, &bytes) ||
      qv_add_overflow(b->length, n, &end))
    return berr(b, err, QV_EARG, op, "bad count %lld or NULL values", (long long)n);
  if (n == 0) return QV_OK;
  QV_RETURN_NOT_OK(bsize(&b->b1, end * b->width, err));
  memcpy(b->b1->data + b->length * b->width, values, (size_t)bytes);
  QV_RETURN_NOT_OK(put_validity(b, n, true, err));
  b->length = end;
  return QV_OK;
}

/* ---- nested ----------------------------------------------------------- */

qv_status qv_builder_begin_list(qv_builder *b, qv_error *err) {
  const char *op = "begin_list";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_begin_list: NULL builder");
  if (!is_list_like(b->type->id)) return wrong_kind(b, op, err);
  if (b->open) return berr(b, err, QV_EARG, op, "an element is already open (call end_list first)");
  QV_RETURN_NOT_OK(check_kids(b, op, err));
  b->open = true;
  b->open_start = b->children[0]->length;
  return QV_OK;
}

qv_status qv_builder_end_list(qv_builder *b, qv_error *err) {
  const char *op = "end_list";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_end_list: NULL builder");
  qv_type_id id = b->type->id;
  if (!is_list_like(id)) return wrong_kind(b, op, err);
  if (!b->open) return berr(b, err, QV_EARG, op, "no element is open (call begin_list first)");
  qv_builder *c = b->children[0];
  if (c->open)
    return berr(b, err, QV_EARG, op, "child '%s' has an element still open (call %s on it)",
                child_name(b, 0), closer(c->type->id));
  int64_t n = c->length - b->open_start, len = b->length;
  if (id == QV_FIXED_SIZE_LIST && n != b->type->list_size)
    return berr(b, err, QV_EARG, op, "a fixed_size_list element takes %d values, found %lld",
                (int)b->type->list_size, (long long)n);
  if (b->width == 4 && c->length > INT32_MAX)
    return berr(b, err, QV_ERANGE, op,
                "child '%s' holds %lld values, past the limit of "
                "32-bit offsets (use the large_ type)",
                child_name(b, 0), (long long)c->length);
  if (id == QV_LIST || id == QV_LARGE_LIST || id == QV_MAP) {
    QV_RETURN_NOT_OK(put_offset(&b->b1, b->width, len + 1, c->length, err));
  } else if (id == QV_LIST_VIEW || id == QV_LARGE_LIST_VIEW) {
    QV_RETURN_NOT_OK(bsize(&b->b1, (len + 1) * b->width, err));
    QV_RETURN_NOT_OK(bsize(&b->b2, (len + 1) * b->width, err));
    store_int(b->b1->data, len, b->width, b->open_start);
    store_int(b->b2->data, len, b->width, n);
  }
  QV_RETURN_NOT_OK(put_validity(b, 1, true, err));
  b->length = len + 1;
  b->committed[0] = c->length;
  b->open = false;
  return QV_OK;
}

qv_status qv_builder_begin_struct(qv_builder *b, qv_error *err) {
  const char *op = "begin_struct";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_begin_struct: NULL builder");
  if (b->type->id != QV_STRUCT) return wrong_kind(b, op, err);
  if (b->open)
    return berr(b, err, QV_EARG, op, "an element is already open (call end_struct first)");
  QV_RETURN_NOT_OK(check_kids(b, op, err));
  b->open = true;
  return QV_OK;
}

/* Every child of a struct holds committed + n values, none open. */
static qv_status struct_kids_hold(qv_builder *b, int64_t n, const char *op, qv_error *err) {
  for (int32_t i = 0; i < b->n_children; i++) {
    qv_builder *c = b->children[i];
    if (c->open)
      return berr(b, err, QV_EARG, op, "child '%s' has an element still open (call %s on it)",
                  child_name(b, i), closer(c->type->id));
    if (c->length != b->committed[i] + n)
      return berr(b, err, QV_EARG, op, "child '%s' holds %lld new values, expected %lld",
                  child_name(b, i), (long long)(c->length - b->committed[i]), (long long)n);
  }
  return QV_OK;
}

qv_status qv_builder_end_struct(qv_builder *b, qv_error *err) {
  const char *op = "end_struct";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_end_struct: NULL builder");
  if (b->type->id != QV_STRUCT) return wrong_kind(b, op, err);
  if (!b->open) return berr(b, err, QV_EARG, op, "no element is open (call begin_struct first)");
  QV_RETURN_NOT_OK(struct_kids_hold(b, 1, op, err));
  QV_RETURN_NOT_OK(put_validity(b, 1, true, err));
  for (int32_t i = 0; i < b->n_children; i++) b->committed[i]++;
  b->length++;
  b->open = false;
  return QV_OK;
}

qv_status qv_builder_append_structs(qv_builder *b, int64_t n, qv_error *err) {
  const char *op = "append_structs";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_append_structs: NULL builder");
  if (b->type->id != QV_STRUCT) return wrong_kind(b, op, err);
  if (n < 0) return berr(b, err, QV_EARG, op, "negative count %lld", (long long)n);
  QV_RETURN_NOT_OK(check_closed(b, op, err));
  QV_RETURN_NOT_OK(struct_kids_hold(b, n, op, err));
  QV_RETURN_NOT_OK(put_validity(b, n, true, err));
  for (int32_t i = 0; i < b->n_children; i++) b->committed[i] += n;
  b->length += n;
  return QV_OK;
}

qv_status qv_builder_begin_union(qv_builder *b, int8_t type_code, qv_error *err) {
  const char *op = "begin_union";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_begin_union: NULL builder");
  if (!is_union(b->type->id)) return wrong_kind(b, op, err);
  if (b->open)
    return berr(b, err, QV_EARG, op, "an element is already open (call end_union first)");
  QV_RETURN_NOT_OK(check_kids(b, op, err));
  int32_t i = 0;
  while (i < b->n_children && b->type->type_codes[i] != type_code) i++;
  if (i == b->n_children)
    return berr(b, err, QV_EARG, op, "type code %d is not one of the union's codes",
                (int)type_code);
  b->open = true;
  b->open_arg = i;
  return QV_OK;
}

qv_status qv_builder_end_union(qv_builder *b, qv_error *err) {
  const char *op = "end_union";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_end_union: NULL builder");
  qv_type_id id = b->type->id;
  if (!is_union(id)) return wrong_kind(b, op, err);
  if (!b->open) return berr(b, err, QV_EARG, op, "no element is open (call begin_union first)");
  int32_t sel = (int32_t)b->open_arg;
  for (int32_t i = 0; i < b->n_children; i++) {
    qv_builder *c = b->children[i];
    if (c->open)
      return berr(b, err, QV_EARG, op, "child '%s' has an element still open (call %s on it)",
                  child_name(b, i), closer(c->type->id));
    int64_t got = c->length - b->committed[i];
    if (i == sel && got != 1)
      return berr(b, err, QV_EARG, op,
                  "child '%s' holds %lld values for this element, "
                  "expected 1",
                  child_name(b, i), (long long)got);
    if (i != sel && got != 0)
      return berr(b, err, QV_EARG, op,
                  "child '%s' got %lld values, but the element holds "
                  "child '%s'",
                  child_name(b, i), (long long)got, child_name(b, sel));
  }
  int64_t len = b->length;
  if (id == QV_DENSE_UNION && b->committed[sel] > INT32_MAX)
    return berr(b, err, QV_ERANGE, op, "dense union offsets pass the int32 range");
  QV_RETURN_NOT_OK(bsize(&b->b1, len + 1, err));
  b->b1->data[len] = (uint8_t)(int8_t)b->type->type_codes[sel];
  if (id == QV_DENSE_UNION) {
    QV_RETURN_NOT_OK(bsize(&b->b2, (len + 1) * 4, err));
    store_int(b->b2->data, len, 4, b->committed[sel]);
    b->committed[sel]++;
  } else {
    for (int32_t i = 0; i < b->n_children; i++) {
      if (i != sel) QV_RETURN_NOT_OK(nulls_raw(b->children[i], 1, op, err));
      b->committed[i]++;
    }
  }
  b->length = len + 1;
  b->open = false;
  return QV_OK;
}

qv_status qv_builder_append_index(qv_builder *b, int64_t index, qv_error *err) {
  const char *op = "append_index";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_append_index: NULL builder");
  if (b->type->id != QV_DICTIONARY) return wrong_kind(b, op, err);
  if (index < 0 || index > index_max(b->type->index_type))
    return berr(b, err, QV_ERANGE, op, "index %lld is out of range for %s indices",
                (long long)index, qv_type_id_name(b->type->index_type->id));
  QV_RETURN_NOT_OK(put_index(b, index, err));
  if (index > b->max_index) b->max_index = index;
  return QV_OK;
}

qv_status qv_builder_begin_run(qv_builder *b, int64_t n, qv_error *err) {
  const char *op = "begin_run";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_begin_run: NULL builder");
  if (b->type->id != QV_RUN_END_ENCODED) return wrong_kind(b, op, err);
  if (n < 1)
    return berr(b, err, QV_EARG, op, "a run has at least 1 element, found %lld", (long long)n);
  if (b->open) return berr(b, err, QV_EARG, op, "a run is already open (call end_run first)");
  QV_RETURN_NOT_OK(check_kids(b, op, err));
  QV_RETURN_NOT_OK(run_end_fits(b, n, op, err));
  b->open = true;
  b->open_arg = n;
  return QV_OK;
}

qv_status qv_builder_end_run(qv_builder *b, qv_error *err) {
  const char *op = "end_run";
  if (b == NULL) return qv_error_set(err, QV_EARG, "qv_builder_end_run: NULL builder");
  if (b->type->id != QV_RUN_END_ENCODED) return wrong_kind(b, op, err);
  if (!b->open) return berr(b, err, QV_EARG, op, "no run is open (call begin_run first)");
  qv_builder *v = b->values;
  if (v->open)
    return berr(b, err, QV_EARG, op, "child '%s' has an element still open (call %s on it)",
                child_name(b, 0), closer(v->type->id));
  if (v->length != b->n_runs + 1)
    return berr(b, err, QV_EARG, op, "a run takes exactly one value in child '%s', found %lld",
                child_name(b, 0), (long long)(v->length - b->n_runs));
  QV_RETURN_NOT_OK(put_run_end(b, b->n_runs, b->length + b->open_arg, err));
  b->committed[0] = ++b->n_runs;
  b->length += b->open_arg;
  b->key_set = false;
  b->open = false;
  return QV_OK;
}

/* ---- finish ----------------------------------------------------------- */

/* Everything below b is closed and balanced. */
static qv_status check_tree(qv_builder *b, qv_error *err) {
  const char *op = "finish";
  QV_RETURN_NOT_OK(check_closed(b, op, err));
  QV_RETURN_NOT_OK(check_kids(b, op, err));
  for (int32_t i = 0; i < b->n_children; i++) QV_RETURN_NOT_OK(check_tree(b->children[i], err));
  if (b->values) QV_RETURN_NOT_OK(check_tree(b->values, err));
  if (b->type->id == QV_DICTIONARY) {
    int64_t n = dict_base(b) + b->values->length;
    if (b->max_index >= n)
      return berr(b, err, QV_ERANGE, op,
                  "index %lld is out of range for a dictionary of "
                  "%lld values",
                  (long long)b->max_index, (long long)n);
  }
  return QV_OK;
}

/* Slack (capacity beyond size) a finished buffer may keep: growth by
 * doubling leaves up to half of a buffer unused; past this much (and past
 * an eighth of the size) the bytes are copied into an exact-size buffer. */
#define QV_BUILDER_MAX_SLACK ((int64_t)1 << 20)

/* Make *pb exactly `size` bytes and return a new reference to it. */
static qv_status fit(qv_buffer **pb, int64_t size, qv_buffer **out, qv_error *err) {
  QV_RETURN_NOT_OK(bsize(pb, size, err));
  qv_buffer *b = *pb;
  int64_t slack = b->capacity_ - b->size;
  if (slack > QV_BUILDER_MAX_SLACK && slack > b->size / 8) {
    qv_buffer *exact = NULL;
    if (qv_buffer_alloc(b->size, &exact, NULL) == QV_OK) { /* else keep the slack */
      memcpy(exact->data, b->data, (size_t)b->size);
      qv_buffer_unref(b);
      *pb = exact;
    }
  }
  *out = qv_buffer_ref(*pb);
  return QV_OK;
}

static qv_status build(qv_builder *b, qv_array **out, qv_error *err) {
  qv_type_id id = b->type->id;
  int64_t len = b->length;
  int32_t nbuf = qv_type_num_buffers(id) + (is_view(id) ? b->n_vdata : 0);
  int32_t nch = id == QV_RUN_END_ENCODED ? 2 : b->n_children;
  qv_array *a = qv_array_new(b->type, nbuf, nch);
  if (a == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (array)");
  a->length = len;
  a->null_count = id == QV_NA ? len : b->null_count;
  qv_status st = QV_OK;
  bool has_validity = !(id == QV_NA || is_union(id) || id == QV_RUN_END_ENCODED);
  if (has_validity && b->null_count > 0)
    st = fit(&b->validity, bitmap_bytes(len), &a->buffers[0], err);
  if (st != QV_OK) goto done;
  switch (id) {
    case QV_NA: break;
    case QV_BOOL: st = fit(&b->b1, bitmap_bytes(len), &a->buffers[1], err); break;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int64_t last = last_offset(b);
      st = fit(&b->b1, (len + 1) * b->width, &a->buffers[1], err);
      if (st == QV_OK) st = fit(&b->b2, last, &a->buffers[2], err);
      break;
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
      st = fit(&b->b1, len * QV_VIEW_SIZE, &a->buffers[1], err);
      for (int32_t k = 0; k < b->n_vdata && st == QV_OK; k++)
        st = fit(&b->vdata[k], b->vdata[k]->size, &a->buffers[2 + k], err);
      break;
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: st = fit(&b->b1, (len + 1) * b->width, &a->buffers[1], err); break;
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
      st = fit(&b->b1, len * b->width, &a->buffers[1], err);
      if (st == QV_OK) st = fit(&b->b2, len * b->width, &a->buffers[2], err);
      break;
    case QV_FIXED_SIZE_LIST:
    case QV_STRUCT: break;
    case QV_SPARSE_UNION: st = fit(&b->b1, len, &a->buffers[0], err); break;
    case QV_DENSE_UNION:
      st = fit(&b->b1, len, &a->buffers[0], err);
      if (st == QV_OK) st = fit(&b->b2, len * 4, &a->buffers[1], err);
      break;
    case QV_RUN_END_ENCODED: {
      qv_array *re = qv_array_new(b->type->children[0].type, 2, 0);
      if (re == NULL) {
        st = qv_error_set(err, QV_ENOMEM, "out of memory (array)");
        break;
      }
      re->length = b->n_runs;
      re->null_count = 0;
      a->children[0] = re;
      st = fit(&b->b1, b->n_runs * b->width, &re->buffers[1], err);
      if (st == QV_OK) st = build(b->values, &a->children[1], err);
      break;
    }
    case QV_DICTIONARY: {
      st = fit(&b->b1, len * b->width, &a->buffers[1], err);
      qv_array *part = NULL;
      if (st == QV_OK) st = build(b->values, &part, err);
      if (st != QV_OK) break;
      if (b->dict_prev == NULL) {
        a->dictionary = part;
      } else {
        qv_array *two[2] = {b->dict_prev, part};
        st = qv_array_concat(two, 2, &a->dictionary, err);
        qv_array_unref(part);
      }
      if (st == QV_OK) {
        qv_array_unref(b->dict_pending);
        b->dict_pending = qv_array_ref(a->dictionary);
      }
      break;
    }
    default: /* fixed width */ st = fit(&b->b1, len * b->width, &a->buffers[1], err); break;
  }
  if (st == QV_OK && id != QV_RUN_END_ENCODED)
    for (int32_t i = 0; i < b->n_children && st == QV_OK; i++)
      st = build(b->children[i], &a->children[i], err);
done:
  if (st != QV_OK) {
    qv_array_unref(a);
    return st;
  }
  *out = a;
  return QV_OK;
}

/* Back to empty after a finish (dictionaries keep their values). */
static void reset(qv_builder *b, bool ok) {
  for (int32_t i = 0; i < b->n_children; i++) reset(b->children[i], ok);
  if (b->values) reset(b->values, ok);
  if (b->type->id == QV_DICTIONARY) {
    if (ok && b->dict_pending) {
      qv_array_unref(b->dict_prev);
      b->dict_prev = b->dict_pending;
    } else {
      qv_array_unref(b->dict_pending);
    }
    b->dict_pending = NULL;
  }
  if (!ok) return;
  drop_buffers(b);
  b->length = b->null_count = 0;
  for (int32_t i = 0; i < n_kids(b); i++) b->committed[i] = 0;
  b->n_runs = 0;
  b->key_set = false;
  b->max_index = -1;
}

qv_status qv_builder_finish(qv_builder *b, qv_array **out, qv_error *err) {
  if (b == NULL || out == NULL)
    return qv_error_set(err, QV_EARG, "qv_builder_finish: NULL argument");
  *out = NULL;
  if (b->parent != NULL)
    return berr(b, err, QV_EARG, "finish", "a child builder is finished with its parent");
  QV_RETURN_NOT_OK(check_tree(b, err));
  qv_array *a = NULL;
  qv_status st = build(b, &a, err);
  reset(b, st == QV_OK);
  if (st != QV_OK) return st;
  *out = a;
  return QV_OK;
}
