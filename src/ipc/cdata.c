/*
 * cdata.c — the Arrow C Data Interface and C Stream Interface, both ways.
 * Part of the ipc layer (it exports readers as streams); everything else
 * here needs only core (types, arrays, buffers).
 *
 * Export (declared in quiver/ipc.h):
 *   - a type/field/schema becomes a tree of struct ArrowSchema whose format
 *     strings follow CDataInterface.rst; every node owns its strings through
 *     its own private_data, so children may be moved out and released
 *     independently of the parent (the spec's "moving child arrays");
 *   - an array becomes a tree of struct ArrowArray whose buffer pointers are
 *     the qv_buffers' own bytes (no copy). Each node's private_data holds a
 *     reference on its qv_array, which holds the qv_buffers, which hold the
 *     file mapping; release() drops it. View arrays get the extra trailing
 *     int64 buffer of variadic data sizes;
 *   - any qv_batch_source becomes a struct ArrowArrayStream of STRUCT
 *     arrays (qv_export_batch_stream: the one stream adapter; readers here,
 *     tables in table/table_export.c and datasets in
 *     dataset/dataset_export.c are sources).
 * Import (declared in quiver/cdata.h): the inverse, taking ownership of the
 * producer's structs; buffers wrap the producer's memory and the producer's
 * release runs when the last of them goes.
 */
#include "quiver/cdata.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/ipc.h"

/* ======================================================================== */
/* Format strings                                                            */

static const char *unit_char(qv_time_unit u) {
  switch (u) {
    case QV_SECOND: return "s";
    case QV_MILLI: return "m";
    case QV_MICRO: return "u";
    case QV_NANO: return "n";
  }
  return "?";
}

/* Format of a non-dictionary type, or -1 when it has none. */
static int64_t format_of(const qv_type *t, char *out, int64_t cap) {
  const char *fixed = NULL;
  switch (t->id) {
    case QV_NA: fixed = "n"; break;
    case QV_BOOL: fixed = "b"; break;
    case QV_INT8: fixed = "c"; break;
    case QV_UINT8: fixed = "C"; break;
    case QV_INT16: fixed = "s"; break;
    case QV_UINT16: fixed = "S"; break;
    case QV_INT32: fixed = "i"; break;
    case QV_UINT32: fixed = "I"; break;
    case QV_INT64: fixed = "l"; break;
    case QV_UINT64: fixed = "L"; break;
    case QV_HALF_FLOAT: fixed = "e"; break;
    case QV_FLOAT: fixed = "f"; break;
    case QV_DOUBLE: fixed = "g"; break;
    case QV_DATE32: fixed = "tdD"; break;
    case QV_DATE64: fixed = "tdm"; break;
    case QV_INTERVAL_MONTHS: fixed = "tiM"; break;
    case QV_INTERVAL_DAY_TIME: fixed = "tiD"; break;
    case QV_INTERVAL_MONTH_DAY_NANO: fixed = "tin"; break;
    case QV_BINARY: fixed = "z"; break;
    case QV_STRING: fixed = "u"; break;
    case QV_LARGE_BINARY: fixed = "Z"; break;
    case QV_LARGE_STRING: fixed = "U"; break;
    case QV_BINARY_VIEW: fixed = "vz"; break;
    case QV_STRING_VIEW: fixed = "vu"; break;
    case QV_LIST: fixed = "+l"; break;
    case QV_LARGE_LIST: fixed = "+L"; break;
    case QV_LIST_VIEW: fixed = "+vl"; break;
    case QV_LARGE_LIST_VIEW: fixed = "+vL"; break;
    case QV_STRUCT: fixed = "+s"; break;
    case QV_MAP: fixed = "+m"; break;
    case QV_RUN_END_ENCODED: fixed = "+r"; break;
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL256:
      return snprintf(out, (size_t)cap, "d:%d,%d,%d", (int)t->precision, (int)t->scale,
                      (int)qv_type_bit_width(t));
    case QV_DECIMAL128:
      return snprintf(out, (size_t)cap, "d:%d,%d", (int)t->precision, (int)t->scale);
    case QV_TIME32:
    case QV_TIME64: return snprintf(out, (size_t)cap, "tt%s", unit_char(t->unit));
    case QV_TIMESTAMP:
      return snprintf(out, (size_t)cap, "ts%s:%s", unit_char(t->unit),
                      t->timezone ? t->timezone : "");
    case QV_DURATION: return snprintf(out, (size_t)cap, "tD%s", unit_char(t->unit));
    case QV_FIXED_SIZE_BINARY: return snprintf(out, (size_t)cap, "w:%d", (int)t->byte_width);
    case QV_FIXED_SIZE_LIST: return snprintf(out, (size_t)cap, "+w:%d", (int)t->list_size);
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      int64_t n = snprintf(out, (size_t)cap, "+u%c:", t->id == QV_DENSE_UNION ? 'd' : 's');
      for (int32_t i = 0; i < t->n_children; i++) {
        char tmp[16];
        int k = snprintf(tmp, sizeof tmp, "%s%d", i ? "," : "",
                         (int)(t->type_codes ? t->type_codes[i] : i));
        if (n + k < cap) memcpy(out + n, tmp, (size_t)k + 1);
        n += k;
      }
      return n;
    }
    case QV_DICTIONARY:
    case QV_TYPE_ID_COUNT: return -1;
  }
  if (!fixed) return -1;
  return snprintf(out, (size_t)cap, "%s", fixed);
}

int64_t qv_cdata_format(const qv_type *t, char *out, int64_t cap) {
  if (t->id == QV_DICTIONARY) {
    if (!t->index_type || t->index_type->id == QV_DICTIONARY) return -1;
    return format_of(t->index_type, out, cap);
  }
  return format_of(t, out, cap);
}

/* ======================================================================== */
/* Metadata encoding: int32 count, then (int32 len, bytes) for key and value */

static bool put_i32(char **p, int64_t v) {
  if (v < 0 || v > INT32_MAX) return false;
  int32_t x = (int32_t)v;
  memcpy(*p, &x, 4);
  *p += 4;
  return true;
}

/* Encoded metadata (malloc'ed) or NULL for empty metadata. */
static qv_status encode_metadata(const qv_metadata *md, char **out, qv_error *err) {
  *out = NULL;
  if (!md || md->n == 0) return QV_OK;
  int64_t size = 4;
  for (int64_t i = 0; i < md->n; i++) {
    if (md->kv[i].key_len > INT32_MAX || md->kv[i].value_len > INT32_MAX ||
        qv_add_overflow(size, 8 + md->kv[i].key_len + md->kv[i].value_len, &size))
      return qv_error_set(err, QV_ENOMEM, "metadata pair %lld is too large to export",
                          (long long)i);
  }
  if (md->n > INT32_MAX)
    return qv_error_set(err, QV_ENOMEM, "too many metadata pairs (%lld)", (long long)md->n);
  char *buf = malloc((size_t)size);
  if (!buf) return qv_error_set(err, QV_ENOMEM, "out of memory (metadata)");
  char *p = buf;
  put_i32(&p, md->n);
  for (int64_t i = 0; i < md->n; i++) {
    put_i32(&p, md->kv[i].key_len);
    memcpy(p, md->kv[i].key, (size_t)md->kv[i].key_len);
    p += md->kv[i].key_len;
    put_i32(&p, md->kv[i].value_len);
    memcpy(p, md->kv[i].value, (size_t)md->kv[i].value_len);
    p += md->kv[i].value_len;
  }
  *out = buf;
  return QV_OK;
}

static qv_status decode_metadata(const char *enc, qv_metadata *md, qv_error *err) {
  md->n = 0;
  md->kv = NULL;
  if (!enc) return QV_OK;
  int32_t n;
  memcpy(&n, enc, 4);
  if (n < 0) return qv_error_set(err, QV_EINVAL, "metadata: negative pair count %d", (int)n);
  const char *p = enc + 4;
  for (int32_t i = 0; i < n; i++) {
    int32_t kl, vl;
    memcpy(&kl, p, 4);
    p += 4;
    if (kl < 0) {
      qv_metadata_reset(md);
      return qv_error_set(err, QV_EINVAL, "metadata: pair %d has negative key length %d", (int)i,
                          (int)kl);
    }
    const char *k = p;
    p += kl;
    memcpy(&vl, p, 4);
    p += 4;
    if (vl < 0) {
      qv_metadata_reset(md);
      return qv_error_set(err, QV_EINVAL, "metadata: pair %d has negative value length %d", (int)i,
                          (int)vl);
    }
    qv_status st = qv_metadata_append(md, k, kl, p, vl, err);
    if (st != QV_OK) {
      qv_metadata_reset(md);
      return st;
    }
    p += vl;
  }
  return QV_OK;
}

/* ======================================================================== */
/* Schema export                                                             */

typedef struct schema_private {
  char *format;
  char *name;
  char *metadata;
  struct ArrowSchema **child_ptrs;
  struct ArrowSchema *child_structs;
  struct ArrowSchema *dict;
} schema_private;

static void release_schema(struct ArrowSchema *s) {
  if (!s || !s->release) return;
  schema_private *p = s->private_data;
  if (p) {
    for (int64_t i = 0; i < s->n_children; i++) {
      struct ArrowSchema *c = p->child_ptrs ? p->child_ptrs[i] : NULL;
      if (c && c->release) c->release(c);
    }
    if (p->dict && p->dict->release) p->dict->release(p->dict);
    free(p->format);
    free(p->name);
    free(p->metadata);
    free(p->child_ptrs);
    free(p->child_structs);
    free(p->dict);
    free(p);
  }
  s->release = NULL;
  s->private_data = NULL;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

/*
 * Fill `out` (assumed uninitialised) describing `type` with the given name
 * (may be NULL), flags and metadata. On failure `out` is released.
 */
static qv_status export_type(const qv_type *type, const char *name, int64_t flags,
                             const qv_metadata *md, struct ArrowSchema *out, int depth,
                             qv_error *err) {
  memset(out, 0, sizeof *out);
  if (depth > 64) return qv_error_set(err, QV_ENOTSUP, "export: type nesting deeper than 64");
  schema_private *p = calloc(1, sizeof *p);
  if (!p) return qv_error_set(err, QV_ENOMEM, "out of memory (schema export)");
  out->private_data = p;
  out->release = release_schema;
  qv_status st = QV_OK;

  char fmt_small[64];
  int64_t need = qv_cdata_format(type, fmt_small, sizeof fmt_small);
  if (need < 0) {
    st = qv_error_set(err, QV_ENOTSUP, "export: type %s has no C data format string",
                      qv_type_id_name(type->id));
    goto fail;
  }
  p->format = malloc((size_t)need + 1);
  if (!p->format) goto oom;
  qv_cdata_format(type, p->format, need + 1);
  out->format = p->format;
  if (name) {
    p->name = dup_str(name);
    if (!p->name) goto oom;
    out->name = p->name;
  }
  st = encode_metadata(md, &p->metadata, err);
  if (st != QV_OK) goto fail;
  out->metadata = p->metadata;

  const qv_type *layout = type;
  if (type->id == QV_DICTIONARY) {
    if (type->ordered) flags |= ARROW_FLAG_DICTIONARY_ORDERED;
    p->dict = malloc(sizeof *p->dict);
    if (!p->dict) goto oom;
    p->dict->release = NULL;
    out->dictionary = p->dict;
    st = export_type(type->value_type, NULL, ARROW_FLAG_NULLABLE, NULL, p->dict, depth + 1, err);
    if (st != QV_OK) goto fail;
    layout = type->index_type;
  }
  if (layout->id == QV_MAP && layout->keys_sorted) flags |= ARROW_FLAG_MAP_KEYS_SORTED;
  out->flags = flags;

  if (layout->n_children > 0) {
    int32_t n = layout->n_children;
    p->child_ptrs = calloc((size_t)n, sizeof *p->child_ptrs);
    p->child_structs = calloc((size_t)n, sizeof *p->child_structs);
    if (!p->child_ptrs || !p->child_structs) goto oom;
    for (int32_t i = 0; i < n; i++) p->child_ptrs[i] = &p->child_structs[i];
    out->children = p->child_ptrs;
    out->n_children = n;
    for (int32_t i = 0; i < n; i++) {
      const qv_field *f = &layout->children[i];
      st = export_type(f->type, f->name, f->nullable ? ARROW_FLAG_NULLABLE : 0, &f->metadata,
                       &p->child_structs[i], depth + 1, err);
      if (st != QV_OK) {
        if (err) qv_error_prefix(err, st, "field '%s': ", f->name);
        goto fail;
      }
    }
  }
  return QV_OK;

oom:
  st = qv_error_set(err, QV_ENOMEM, "out of memory (schema export)");
fail:
  release_schema(out);
  return st;
}

qv_status qv_export_field(const qv_field *field, struct ArrowSchema *out, qv_error *err) {
  if (!field || !out || !field->type)
    return qv_error_set(err, QV_EARG, "qv_export_field: NULL argument");
  return export_type(field->type, field->name, field->nullable ? ARROW_FLAG_NULLABLE : 0,
                     &field->metadata, out, 0, err);
}

qv_status qv_export_schema(const qv_schema *schema, struct ArrowSchema *out, qv_error *err) {
  if (!schema || !out || !schema->type || schema->type->id != QV_STRUCT)
    return qv_error_set(err, QV_EARG, "qv_export_schema: NULL or non-struct schema");
  return export_type(schema->type, "", 0, &schema->metadata, out, 0, err);
}

/* ======================================================================== */
/* Array export                                                              */

typedef struct array_private {
  qv_array *array; /* the reference that keeps every buffer alive */
  const void **buffers;
  int64_t *variadic_sizes; /* view arrays: sizes of the data buffers */
  struct ArrowArray **child_ptrs;
  struct ArrowArray *child_structs;
  struct ArrowArray *dict;
} array_private;

static void release_array(struct ArrowArray *a) {
  if (!a || !a->release) return;
  array_private *p = a->private_data;
  if (p) {
    for (int64_t i = 0; i < a->n_children; i++) {
      struct ArrowArray *c = p->child_ptrs ? p->child_ptrs[i] : NULL;
      if (c && c->release) c->release(c);
    }
    if (p->dict && p->dict->release) p->dict->release(p->dict);
    qv_array_unref(p->array);
    free(p->buffers);
    free(p->variadic_sizes);
    free(p->child_ptrs);
    free(p->child_structs);
    free(p->dict);
    free(p);
  }
  a->release = NULL;
  a->private_data = NULL;
}

static bool is_view_id(qv_type_id id) { return id == QV_BINARY_VIEW || id == QV_STRING_VIEW; }

static qv_status export_array(qv_array *a, struct ArrowArray *out, int depth, qv_error *err) {
  memset(out, 0, sizeof *out);
  if (depth > 64) return qv_error_set(err, QV_ENOTSUP, "export: array nesting deeper than 64");
  array_private *p = calloc(1, sizeof *p);
  if (!p) return qv_error_set(err, QV_ENOMEM, "out of memory (array export)");
  out->private_data = p;
  out->release = release_array;
  p->array = qv_array_ref(a);
  qv_status st = QV_OK;
  qv_type_id id = a->type->id;

  out->length = a->length;
  out->offset = a->offset;
  out->null_count = a->null_count;
  if (id == QV_NA) out->null_count = a->length;
  else if (id == QV_SPARSE_UNION || id == QV_DENSE_UNION || id == QV_RUN_END_ENCODED)
    out->null_count = 0;
  else if (a->n_buffers > 0 && a->buffers[0] == NULL) out->null_count = 0;

  /* Buffers: quiver's layout is the C layout, plus the sizes buffer that
   * view arrays carry in C. */
  int64_t nb = a->n_buffers;
  bool view = is_view_id(id);
  if (view) nb += 1;
  if (nb > 0) {
    p->buffers = calloc((size_t)nb, sizeof *p->buffers);
    if (!p->buffers) goto oom;
    for (int32_t i = 0; i < a->n_buffers; i++)
      p->buffers[i] = a->buffers[i] ? a->buffers[i]->data : NULL;
    if (view) {
      int64_t nvar = a->n_buffers > 2 ? a->n_buffers - 2 : 0;
      p->variadic_sizes = calloc((size_t)(nvar ? nvar : 1), sizeof(int64_t));
      if (!p->variadic_sizes) goto oom;
      for (int64_t i = 0; i < nvar; i++)
        p->variadic_sizes[i] = a->buffers[2 + i] ? a->buffers[2 + i]->size : 0;
      p->buffers[nb - 1] = p->variadic_sizes;
    }
  }
  out->n_buffers = nb;
  out->buffers = p->buffers;

  if (a->n_children > 0) {
    int32_t n = a->n_children;
    p->child_ptrs = calloc((size_t)n, sizeof *p->child_ptrs);
    p->child_structs = calloc((size_t)n, sizeof *p->child_structs);
    if (!p->child_ptrs || !p->child_structs) goto oom;
    for (int32_t i = 0; i < n; i++) p->child_ptrs[i] = &p->child_structs[i];
    out->children = p->child_ptrs;
    out->n_children = n;
    for (int32_t i = 0; i < n; i++) {
      if (!a->children[i]) {
        st = qv_error_set(err, QV_EARG, "export: child %d is NULL", (int)i);
        goto fail;
      }
      st = export_array(a->children[i], &p->child_structs[i], depth + 1, err);
      if (st != QV_OK) goto fail;
    }
  }
  if (id == QV_DICTIONARY) {
    if (!a->dictionary) {
      st = qv_error_set(err, QV_EARG, "export: dictionary array without dictionary values");
      goto fail;
    }
    p->dict = calloc(1, sizeof *p->dict);
    if (!p->dict) goto oom;
    out->dictionary = p->dict;
    st = export_array(a->dictionary, p->dict, depth + 1, err);
    if (st != QV_OK) goto fail;
  }
  return QV_OK;

oom:
  st = qv_error_set(err, QV_ENOMEM, "out of memory (array export)");
fail:
  release_array(out);
  return st;
}

qv_status qv_export_array(qv_array *array, struct ArrowArray *out, qv_error *err) {
  if (!array || !out) return qv_error_set(err, QV_EARG, "qv_export_array: NULL argument");
  return export_array(array, out, 0, err);
}

/* ======================================================================== */
/* Stream export                                                             */

int qv_cdata_errno(qv_status st) {
  switch (st) {
    case QV_OK: return 0;
    case QV_ENOTSUP: return ENOTSUP;
    case QV_ENOMEM: return ENOMEM;
    case QV_EIO: return EIO;
    case QV_ERANGE: return ERANGE;
    case QV_ECHANGED: return EIO;
    case QV_EINVAL:
    case QV_EARG:
    case QV_ETYPE: return EINVAL;
  }
  return EINVAL;
}

/* One adapter for every stream quiver exports: a qv_batch_source. */
typedef struct stream_private {
  qv_batch_source src;
  qv_error error;
} stream_private;

static int stream_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  stream_private *p = s->private_data;
  p->error.message[0] = '\0';
  qv_status st = qv_export_schema(p->src.schema(p->src.ctx), out, &p->error);
  return qv_cdata_errno(st);
}

static int stream_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  stream_private *p = s->private_data;
  p->error.message[0] = '\0';
  qv_array *batch = NULL;
  qv_status st = p->src.next(p->src.ctx, &batch, &p->error);
  if (st != QV_OK) return qv_cdata_errno(st);
  if (!batch) {
    memset(out, 0, sizeof *out);
    out->release = NULL; /* end of stream */
    return 0;
  }
  st = qv_export_array(batch, out, &p->error);
  qv_array_unref(batch);
  return qv_cdata_errno(st);
}

static const char *stream_get_last_error(struct ArrowArrayStream *s) {
  stream_private *p = s->private_data;
  return p->error.message[0] ? p->error.message : NULL;
}

static void stream_release(struct ArrowArrayStream *s) {
  if (!s || !s->release) return;
  stream_private *p = s->private_data;
  if (p) {
    if (p->src.release) p->src.release(p->src.ctx);
    free(p);
  }
  s->private_data = NULL;
  s->release = NULL;
}

qv_status qv_export_batch_stream(const qv_batch_source *src, struct ArrowArrayStream *out,
                                 qv_error *err) {
  if (!src || !src->schema || !src->next || !out) {
    if (src && src->release) src->release(src->ctx);
    return qv_error_set(err, QV_EARG, "qv_export_batch_stream: NULL argument");
  }
  stream_private *p = calloc(1, sizeof *p);
  if (!p) {
    if (src->release) src->release(src->ctx);
    return qv_error_set(err, QV_ENOMEM, "out of memory (stream export)");
  }
  p->src = *src;
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_get_last_error;
  out->release = stream_release;
  out->private_data = p;
  return QV_OK;
}

static const qv_schema *reader_schema(void *ctx) { return qv_reader_schema(ctx); }
static qv_status reader_next(void *ctx, qv_array **batch, qv_error *err) {
  return qv_reader_next(ctx, batch, err);
}
static void reader_release(void *ctx) { qv_reader_close(ctx); }

qv_status qv_export_reader_stream(qv_reader *r, struct ArrowArrayStream *out, qv_error *err) {
  if (!r || !out) {
    qv_reader_close(r);
    return qv_error_set(err, QV_EARG, "qv_export_reader_stream: NULL argument");
  }
  qv_batch_source src = {r, reader_schema, reader_next, reader_release};
  return qv_export_batch_stream(&src, out, err);
}

/* ======================================================================== */
/* Schema import                                                             */

typedef struct import_ctx {
  int64_t next_dict_id;
} import_ctx;

/* Parse a non-negative decimal int32 at *pp, advancing it. */
static bool parse_i32(const char **pp, int32_t *out) {
  const char *p = *pp;
  bool neg = false;
  if (*p == '-') {
    neg = true;
    p++;
  }
  if (*p < '0' || *p > '9') return false;
  int64_t v = 0;
  while (*p >= '0' && *p <= '9') {
    v = v * 10 + (*p - '0');
    if (v > (int64_t)INT32_MAX + 1) return false;
    p++;
  }
  if (neg) v = -v;
  if (v > INT32_MAX || v < INT32_MIN) return false;
  *out = (int32_t)v;
  *pp = p;
  return true;
}

static bool parse_unit(char c, qv_time_unit *u) {
  switch (c) {
    case 's': *u = QV_SECOND; return true;
    case 'm': *u = QV_MILLI; return true;
    case 'u': *u = QV_MICRO; return true;
    case 'n': *u = QV_NANO; return true;
    default: return false;
  }
}

static qv_status import_type(const struct ArrowSchema *in, import_ctx *ctx, int depth,
                             qv_type **out, qv_error *err);

static qv_status bad_format(qv_error *err, const char *fmt) {
  return qv_error_set(err, QV_EINVAL, "unknown or malformed format string '%s'", fmt);
}

/* Simple one-token formats. */
static qv_type_id simple_id(const char *f) {
  static const struct {
    const char *fmt;
    qv_type_id id;
  } table[] = {
      {"n", QV_NA},
      {"b", QV_BOOL},
      {"c", QV_INT8},
      {"C", QV_UINT8},
      {"s", QV_INT16},
      {"S", QV_UINT16},
      {"i", QV_INT32},
      {"I", QV_UINT32},
      {"l", QV_INT64},
      {"L", QV_UINT64},
      {"e", QV_HALF_FLOAT},
      {"f", QV_FLOAT},
      {"g", QV_DOUBLE},
      {"z", QV_BINARY},
      {"Z", QV_LARGE_BINARY},
      {"u", QV_STRING},
      {"U", QV_LARGE_STRING},
      {"vz", QV_BINARY_VIEW},
      {"vu", QV_STRING_VIEW},
      {"tdD", QV_DATE32},
      {"tdm", QV_DATE64},
      {"tiM", QV_INTERVAL_MONTHS},
      {"tiD", QV_INTERVAL_DAY_TIME},
      {"tin", QV_INTERVAL_MONTH_DAY_NANO},
      {"+l", QV_LIST},
      {"+L", QV_LARGE_LIST},
      {"+vl", QV_LIST_VIEW},
      {"+vL", QV_LARGE_LIST_VIEW},
      {"+s", QV_STRUCT},
      {"+m", QV_MAP},
      {"+r", QV_RUN_END_ENCODED},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(f, table[i].fmt) == 0) return table[i].id;
  return QV_TYPE_ID_COUNT;
}

/* The type named by `in->format` alone (children added by the caller). */
static qv_status type_from_format(const char *f, qv_type **out, qv_error *err) {
  qv_type *t = NULL;
  qv_type_id id = simple_id(f);
  const char *p;
  if (id != QV_TYPE_ID_COUNT) {
    t = qv_type_new(id);
  } else if (f[0] == 'd' && f[1] == ':') {
    int32_t prec, scale, bw = 128;
    p = f + 2;
    if (!parse_i32(&p, &prec) || *p++ != ',' || !parse_i32(&p, &scale)) return bad_format(err, f);
    if (*p == ',') {
      p++;
      if (!parse_i32(&p, &bw)) return bad_format(err, f);
    }
    if (*p != '\0') return bad_format(err, f);
    switch (bw) {
      case 32: id = QV_DECIMAL32; break;
      case 64: id = QV_DECIMAL64; break;
      case 128: id = QV_DECIMAL128; break;
      case 256: id = QV_DECIMAL256; break;
      default:
        return qv_error_set(err, QV_ENOTSUP, "format '%s': decimal bit width %d", f, (int)bw);
    }
    t = qv_type_new(id);
    if (t) {
      t->precision = prec;
      t->scale = scale;
    }
  } else if (f[0] == 'w' && f[1] == ':') {
    int32_t w;
    p = f + 2;
    if (!parse_i32(&p, &w) || *p != '\0' || w < 0) return bad_format(err, f);
    t = qv_type_new(QV_FIXED_SIZE_BINARY);
    if (t) t->byte_width = w;
  } else if (f[0] == '+' && f[1] == 'w' && f[2] == ':') {
    int32_t n;
    p = f + 3;
    if (!parse_i32(&p, &n) || *p != '\0' || n < 0) return bad_format(err, f);
    t = qv_type_new(QV_FIXED_SIZE_LIST);
    if (t) t->list_size = n;
  } else if (f[0] == 't' && (f[1] == 't' || f[1] == 'D') && f[2] && f[3] == '\0') {
    qv_time_unit u;
    if (!parse_unit(f[2], &u)) return bad_format(err, f);
    if (f[1] == 'D') id = QV_DURATION;
    else id = (u == QV_SECOND || u == QV_MILLI) ? QV_TIME32 : QV_TIME64;
    t = qv_type_new(id);
    if (t) t->unit = u;
  } else if (f[0] == 't' && f[1] == 's' && f[2] && f[3] == ':') {
    qv_time_unit u;
    if (!parse_unit(f[2], &u)) return bad_format(err, f);
    t = qv_type_timestamp(u, f[4] ? f + 4 : NULL);
  } else if (f[0] == '+' && f[1] == 'u' && (f[2] == 'd' || f[2] == 's') && f[3] == ':') {
    t = qv_type_new(f[2] == 'd' ? QV_DENSE_UNION : QV_SPARSE_UNION);
    /* type codes are attached by the caller once children are known */
  } else {
    return bad_format(err, f);
  }
  if (!t) return qv_error_set(err, QV_ENOMEM, "out of memory (type import)");
  *out = t;
  return QV_OK;
}

/* Parse "+ud:1,2,3" type codes into t->type_codes (t->n_children known). */
static qv_status parse_union_codes(const char *f, qv_type *t, qv_error *err) {
  const char *p = f + 4;
  int32_t n = t->n_children;
  int32_t *codes = calloc((size_t)(n ? n : 1), sizeof *codes);
  if (!codes) return qv_error_set(err, QV_ENOMEM, "out of memory (union)");
  int32_t k = 0;
  if (*p != '\0') {
    for (;;) {
      int32_t c;
      if (!parse_i32(&p, &c) || c < 0 || c > 127) goto bad;
      if (k >= n) {
        free(codes);
        return qv_error_set(err, QV_EINVAL, "format '%s': more type codes than the %d children", f,
                            (int)n);
      }
      codes[k++] = c;
      if (*p == '\0') break;
      if (*p++ != ',') goto bad;
    }
  }
  if (k != n) {
    free(codes);
    return qv_error_set(err, QV_EINVAL, "format '%s': %d type codes for %d children", f, (int)k,
                        (int)n);
  }
  free(t->type_codes);
  t->type_codes = codes;
  return QV_OK;
bad:
  free(codes);
  return bad_format(err, f);
}

static int32_t expected_children(qv_type_id id) {
  switch (id) {
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_FIXED_SIZE_LIST:
    case QV_MAP: return 1;
    case QV_RUN_END_ENCODED: return 2;
    case QV_STRUCT:
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: return -1; /* any */
    default: return 0;
  }
}

static qv_status import_type(const struct ArrowSchema *in, import_ctx *ctx, int depth,
                             qv_type **out, qv_error *err) {
  if (depth > 64) return qv_error_set(err, QV_ENOTSUP, "import: type nesting deeper than 64");
  if (!in->format) return qv_error_set(err, QV_EINVAL, "import: NULL format string");
  if (in->n_children < 0 || (in->n_children > 0 && !in->children))
    return qv_error_set(err, QV_EINVAL, "import: format '%s': bad children", in->format);
  qv_type *t = NULL;
  QV_RETURN_NOT_OK(type_from_format(in->format, &t, err));
  int32_t want = expected_children(t->id);
  if ((want >= 0 && in->n_children != want) || in->n_children > INT32_MAX) {
    qv_type_unref(t);
    return qv_error_set(err, QV_EINVAL, "import: format '%s' expects %d children, found %lld",
                        in->format, (int)want, (long long)in->n_children);
  }
  if (t->id == QV_MAP) t->keys_sorted = (in->flags & ARROW_FLAG_MAP_KEYS_SORTED) != 0;

  qv_status st;
  for (int64_t i = 0; i < in->n_children; i++) {
    const struct ArrowSchema *c = in->children[i];
    if (!c || !c->release) {
      st = qv_error_set(err, QV_EINVAL, "import: child %lld is released", (long long)i);
      goto fail;
    }
    /* Dictionary id numbering is depth-first, parents before children. */
    qv_type *ct = NULL;
    st = import_type(c, ctx, depth + 1, &ct, err);
    if (st != QV_OK) {
      if (err) qv_error_prefix(err, st, "child '%s': ", c->name ? c->name : "");
      goto fail;
    }
    qv_metadata md;
    st = decode_metadata(c->metadata, &md, err);
    if (st != QV_OK) {
      qv_type_unref(ct);
      goto fail;
    }
    st = qv_type_add_child(t, c->name ? c->name : "", (c->flags & ARROW_FLAG_NULLABLE) != 0, ct,
                           &md, err);
    qv_metadata_reset(&md);
    if (st != QV_OK) {
      qv_type_unref(ct);
      goto fail;
    }
  }
  if (t->id == QV_SPARSE_UNION || t->id == QV_DENSE_UNION) {
    st = parse_union_codes(in->format, t, err);
    if (st != QV_OK) goto fail;
  }

  if (in->dictionary) {
    if (!in->dictionary->release) {
      st = qv_error_set(err, QV_EINVAL, "import: dictionary is released");
      goto fail;
    }
    if (!qv_type_id_is_integer(t->id)) {
      st = qv_error_set(err, QV_EINVAL,
                        "import: dictionary index format '%s' is not an "
                        "integer type",
                        in->format);
      goto fail;
    }
    qv_type *d = qv_type_new(QV_DICTIONARY);
    if (!d) {
      st = qv_error_set(err, QV_ENOMEM, "out of memory (type import)");
      goto fail;
    }
    d->index_type = t;
    d->ordered = (in->flags & ARROW_FLAG_DICTIONARY_ORDERED) != 0;
    d->dict_id = ctx->next_dict_id++;
    t = d;
    st = import_type(in->dictionary, ctx, depth + 1, &d->value_type, err);
    if (st != QV_OK) {
      if (err) qv_error_prefix(err, st, "dictionary: ");
      goto fail;
    }
  }
  *out = t;
  return QV_OK;
fail:
  qv_type_unref(t);
  return st;
}

static void consume_schema(struct ArrowSchema *in) {
  if (in && in->release) in->release(in);
}

void qv_import_field_reset(qv_field *f) {
  if (!f) return;
  free(f->name);
  qv_type_unref(f->type);
  qv_metadata_reset(&f->metadata);
  memset(f, 0, sizeof *f);
}

qv_status qv_import_field(struct ArrowSchema *in, qv_field *out, qv_error *err) {
  if (!in || !out || !in->release) {
    consume_schema(in);
    return qv_error_set(err, QV_EARG, "qv_import_field: NULL or released ArrowSchema");
  }
  import_ctx ctx = {0};
  qv_field f;
  memset(&f, 0, sizeof f);
  qv_status st = import_type(in, &ctx, 0, &f.type, err);
  if (st == QV_OK) st = decode_metadata(in->metadata, &f.metadata, err);
  if (st == QV_OK) {
    f.name = dup_str(in->name ? in->name : "");
    if (!f.name) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  f.nullable = (in->flags & ARROW_FLAG_NULLABLE) != 0;
  consume_schema(in);
  if (st != QV_OK) {
    qv_import_field_reset(&f);
    return st;
  }
  *out = f;
  return QV_OK;
}

qv_status qv_import_schema(struct ArrowSchema *in, qv_schema **out, qv_error *err) {
  if (!in || !out || !in->release) {
    consume_schema(in);
    return qv_error_set(err, QV_EARG, "qv_import_schema: NULL or released ArrowSchema");
  }
  if (!in->format || strcmp(in->format, "+s") != 0 || in->dictionary) {
    qv_status st =
        qv_error_set(err, QV_EINVAL, "import schema: expected a struct ('+s'), found '%s'",
                     in->format ? in->format : "(null)");
    consume_schema(in);
    return st;
  }
  import_ctx ctx = {0};
  qv_type *t = NULL;
  qv_metadata md = {0, NULL};
  qv_status st = import_type(in, &ctx, 0, &t, err);
  if (st == QV_OK) st = decode_metadata(in->metadata, &md, err);
  consume_schema(in);
  if (st != QV_OK) {
    qv_type_unref(t);
    return st;
  }
  qv_schema *s = qv_schema_new(t); /* takes t, even on failure */
  if (!s) {
    qv_metadata_reset(&md);
    return qv_error_set(err, QV_ENOMEM, "out of memory (schema import)");
  }
  s->metadata = md;
  *out = s;
  return QV_OK;
}

/* ======================================================================== */
/* Array import                                                              */

/* The producer's moved-in ArrowArray, released when the last qv_buffer
 * wrapping its memory is dropped. */
typedef struct import_holder {
  struct ArrowArray array;
  long refs;
} import_holder;

static void holder_unref(import_holder *h) {
  if (__atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    if (h->array.release) h->array.release(&h->array);
    free(h);
  }
}

static void holder_buffer_release(void *ctx, void *data, int64_t size) {
  (void)data;
  (void)size;
  holder_unref(ctx);
}

/* Wrap foreign `ptr` of `size` bytes as a buffer holding `h`. A NULL
 * pointer gives a zeroed heap buffer of `size` bytes (so an empty
 * array's offsets buffer reads as {0}). */
static qv_status wrap_buffer(import_holder *h, const void *ptr, int64_t size, qv_buffer **out,
                             qv_error *err) {
  if (!ptr) return qv_buffer_alloc(size, out, err);
  __atomic_add_fetch(&h->refs, 1, __ATOMIC_ACQ_REL);
  qv_status st = qv_buffer_wrap((void *)(uintptr_t)ptr, size, holder_buffer_release, h, out, err);
  if (st != QV_OK) __atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL);
  return st;
}

static qv_status mul_size(int64_t a, int64_t b, int64_t *out, qv_error *err, const char *path) {
  if (qv_mul_overflow(a, b, out))
    return qv_error_set(err, QV_EINVAL, "%s: buffer size overflows", path);
  return QV_OK;
}

static qv_status import_node(import_holder *h, const struct ArrowArray *in, const qv_type *type,
                             const char *path, int depth, qv_array **out, qv_error *err);

/* Check the node's length, offset, buffer and child counts and dictionary
 * against `type`. *out_nbuf: the qv_array's buffer count (a view array's
 * variadic buffers, without the sizes buffer). */
static qv_status check_node(const struct ArrowArray *in, const qv_type *type, const char *path,
                            int64_t *out_nbuf, qv_error *err) {
  qv_type_id id = type->id;
  if (in->length < 0 || in->offset < 0)
    return qv_error_set(err, QV_EINVAL, "%s: negative length %lld or offset %lld", path,
                        (long long)in->length, (long long)in->offset);
  int64_t L;
  if (qv_add_overflow(in->length, in->offset, &L))
    return qv_error_set(err, QV_EINVAL, "%s: offset + length overflows", path);
  if (in->n_buffers < 0 || (in->n_buffers > 0 && !in->buffers) || in->n_children < 0 ||
      (in->n_children > 0 && !in->children))
    return qv_error_set(err, QV_EINVAL, "%s: malformed ArrowArray", path);

  int64_t want_buffers = qv_type_num_buffers(id);
  int64_t qv_nbuf = want_buffers;
  if (is_view_id(id)) {
    if (in->n_buffers < 3)
      return qv_error_set(err, QV_EINVAL, "%s: view array needs at least 3 buffers, found %lld",
                          path, (long long)in->n_buffers);
    qv_nbuf = in->n_buffers - 1;
    if (qv_nbuf > INT32_MAX) return qv_error_set(err, QV_EINVAL, "%s: too many buffers", path);
  } else if (in->n_buffers != want_buffers) {
    return qv_error_set(err, QV_EINVAL, "%s: type %s expects %lld buffers, found %lld", path,
                        qv_type_id_name(id), (long long)want_buffers, (long long)in->n_buffers);
  }
  int32_t want_children = id == QV_DICTIONARY ? 0 : type->n_children;
  if (in->n_children != want_children)
    return qv_error_set(err, QV_EINVAL, "%s: type %s expects %d children, found %lld", path,
                        qv_type_id_name(id), (int)want_children, (long long)in->n_children);
  if ((id == QV_DICTIONARY) != (in->dictionary != NULL))
    return qv_error_set(err, QV_EINVAL, "%s: dictionary %s", path,
                        id == QV_DICTIONARY ? "missing" : "unexpected");

  *out_nbuf = qv_nbuf;
  return QV_OK;
}

/* Byte sizes of the fixed buffers of a node of `layout` with L = offset +
 * length slots, from the layout (a string's data size from its last
 * offset). */
static qv_status layout_sizes(const qv_type *layout, const void *const *bp, int64_t L,
                              const char *path, int64_t sizes[3], qv_error *err) {
  qv_status st = QV_OK;
  int64_t bitmap_bytes = L / 8 + (L % 8 != 0);
  switch (layout->id) {
    case QV_NA:
    case QV_RUN_END_ENCODED: break;
    case QV_BOOL: sizes[0] = sizes[1] = bitmap_bytes; break;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int64_t w = (layout->id == QV_BINARY || layout->id == QV_STRING) ? 4 : 8;
      sizes[0] = bitmap_bytes;
      st = mul_size(L + 1, w, &sizes[1], err, path);
      if (st != QV_OK) return st;
      int64_t last = 0;
      if (bp[1]) {
        if (w == 4) {
          int32_t v;
          memcpy(&v, (const uint8_t *)bp[1] + 4 * L, 4);
          last = v;
        } else {
          memcpy(&last, (const uint8_t *)bp[1] + 8 * L, 8);
        }
      } else if (L > 0) {
        return qv_error_set(err, QV_EINVAL, "%s: buffer 1 (offsets) is NULL", path);
      }
      if (last < 0) {
        return qv_error_set(err, QV_EINVAL, "%s: last offset %lld is negative", path,
                            (long long)last);
      }
      sizes[2] = last;
      break;
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
      sizes[0] = bitmap_bytes;
      st = mul_size(L, 16, &sizes[1], err, path);
      if (st != QV_OK) return st;
      break;
    case QV_LIST:
    case QV_MAP:
      sizes[0] = bitmap_bytes;
      st = mul_size(L + 1, 4, &sizes[1], err, path);
      break;
    case QV_LARGE_LIST:
      sizes[0] = bitmap_bytes;
      st = mul_size(L + 1, 8, &sizes[1], err, path);
      break;
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: {
      int64_t w = layout->id == QV_LIST_VIEW ? 4 : 8;
      sizes[0] = bitmap_bytes;
      st = mul_size(L, w, &sizes[1], err, path);
      sizes[2] = sizes[1];
      break;
    }
    case QV_FIXED_SIZE_LIST:
    case QV_STRUCT: sizes[0] = bitmap_bytes; break;
    case QV_SPARSE_UNION: sizes[0] = L; break;
    case QV_FIXED_SIZE_BINARY:
      sizes[0] = bitmap_bytes;
      st = mul_size(L, layout->byte_width, &sizes[1], err, path);
      break;
    case QV_DENSE_UNION:
      sizes[0] = L;
      st = mul_size(L, 4, &sizes[1], err, path);
      break;
    default: {
      int32_t bits = qv_type_bit_width(layout);
      if (bits <= 0 || bits % 8 != 0) {
        return qv_error_set(err, QV_ENOTSUP, "%s: cannot import type %s", path,
                            qv_type_id_name(layout->id));
      }
      sizes[0] = bitmap_bytes;
      st = mul_size(L, bits / 8, &sizes[1], err, path);
      break;
    }
  }
  return st;
}

/* Wrap the node's validity, offset/value (and list-view size) buffers:
 * a NULL validity buffer means all valid; other NULL buffers only where
 * they need no bytes. */
static qv_status wrap_fixed_buffers(import_holder *h, const struct ArrowArray *in, qv_array *a,
                                    const qv_type *layout, const int64_t sizes[3], int64_t L,
                                    int64_t fixed_bufs, const char *path, qv_error *err) {
  const void *const *bp = in->buffers;
  qv_type_id id = a->type->id;
  qv_status st;
  bool has_validity =
      !(id == QV_SPARSE_UNION || id == QV_DENSE_UNION || id == QV_NA || id == QV_RUN_END_ENCODED);
  for (int64_t i = 0; i < fixed_bufs; i++) {
    if (i == 0 && has_validity && !bp[0]) {
      if (in->null_count > 0) {
        return qv_error_set(err, QV_EINVAL,
                            "%s: null_count is %lld but the validity buffer is "
                            "NULL",
                            path, (long long)in->null_count);
      }
      a->null_count = 0;
      continue; /* no validity buffer: all valid */
    }
    if (!bp[i] && sizes[i] > 0 &&
        !(i == 1 && L == 0 &&
          (layout->id == QV_BINARY || layout->id == QV_STRING || layout->id == QV_LARGE_BINARY ||
           layout->id == QV_LARGE_STRING || layout->id == QV_LIST || layout->id == QV_LARGE_LIST ||
           layout->id == QV_MAP))) {
      return qv_error_set(err, QV_EINVAL, "%s: buffer %lld is NULL but needs %lld bytes", path,
                          (long long)i, (long long)sizes[i]);
    }
    st = wrap_buffer(h, bp[i], sizes[i], &a->buffers[i], err);
    if (st != QV_OK) return st;
  }
  return QV_OK;
}

/* Wrap a view array's variadic data buffers, sized by its last buffer. */
static qv_status wrap_view_buffers(import_holder *h, const struct ArrowArray *in, qv_array *a,
                                   const char *path, qv_error *err) {
  const void *const *bp = in->buffers;
  qv_status st;
  int64_t nvar = in->n_buffers - 3;
  const int64_t *vs = bp[in->n_buffers - 1];
  if (nvar > 0 && !vs) {
    return qv_error_set(err, QV_EINVAL, "%s: variadic buffer sizes buffer is NULL", path);
  }
  for (int64_t i = 0; i < nvar; i++) {
    int64_t sz;
    memcpy(&sz, vs + i, 8);
    if (sz < 0 || (sz > 0 && !bp[2 + i])) {
      return qv_error_set(err, QV_EINVAL,
                          "%s: variadic buffer %lld: bad size %lld or NULL "
                          "pointer",
                          path, (long long)i, (long long)sz);
    }
    st = wrap_buffer(h, bp[2 + i], sz, &a->buffers[2 + i], err);
    if (st != QV_OK) return st;
  }
  return QV_OK;
}

/* Import the node's children and dictionary. */
static qv_status import_children(import_holder *h, const struct ArrowArray *in, const qv_type *type,
                                 qv_array *a, const char *path, int depth, qv_error *err) {
  qv_status st;
  for (int64_t i = 0; i < in->n_children; i++) {
    const struct ArrowArray *c = in->children[i];
    const qv_field *f = &type->children[i];
    char cpath[256];
    snprintf(cpath, sizeof cpath, "%s.%s", path, f->name);
    if (!c || !c->release) {
      return qv_error_set(err, QV_EINVAL, "%s: child is NULL or released", cpath);
    }
    st = import_node(h, c, f->type, cpath, depth + 1, &a->children[i], err);
    if (st != QV_OK) return st;
  }
  if (type->id == QV_DICTIONARY) {
    char dpath[256];
    snprintf(dpath, sizeof dpath, "%s.<dictionary>", path);
    if (!in->dictionary->release) {
      return qv_error_set(err, QV_EINVAL, "%s: released", dpath);
    }
    st = import_node(h, in->dictionary, type->value_type, dpath, depth + 1, &a->dictionary, err);
    if (st != QV_OK) return st;
  }
  return QV_OK;
}

/* Build the qv_array for one node. */
static qv_status import_node(import_holder *h, const struct ArrowArray *in, const qv_type *type,
                             const char *path, int depth, qv_array **out, qv_error *err) {
  if (depth > 64) return qv_error_set(err, QV_ENOTSUP, "%s: nesting deeper than 64", path);
  qv_type_id id = type->id;
  int64_t qv_nbuf;
  QV_RETURN_NOT_OK(check_node(in, type, path, &qv_nbuf, err));
  int64_t L = in->length + in->offset; /* check_node: no overflow */
  const qv_type *layout = id == QV_DICTIONARY ? type->index_type : type;
  bool view = is_view_id(id);

  qv_array *a = qv_array_new((qv_type *)(uintptr_t)type, (int32_t)qv_nbuf, (int32_t)in->n_children);
  if (!a) return qv_error_set(err, QV_ENOMEM, "out of memory (array import)");
  a->length = in->length;
  a->offset = in->offset;
  a->null_count = in->null_count < 0 ? -1 : in->null_count;

  int64_t sizes[3] = {0, 0, 0};
  qv_status st = layout_sizes(layout, in->buffers, L, path, sizes, err);
  if (st == QV_OK)
    st = wrap_fixed_buffers(h, in, a, layout, sizes, L, view ? 2 : qv_nbuf, path, err);
  if (st == QV_OK && view) st = wrap_view_buffers(h, in, a, path, err);
  if (st == QV_OK) st = import_children(h, in, type, a, path, depth, err);
  if (st != QV_OK) {
    qv_array_unref(a);
    return st;
  }
  *out = a;
  return QV_OK;
}

qv_status qv_import_array(struct ArrowArray *in, const qv_type *type, qv_array **out,
                          qv_error *err) {
  if (!in || !in->release || !type || !out) {
    if (in && in->release) in->release(in);
    return qv_error_set(err, QV_EARG, "qv_import_array: NULL argument or released array");
  }
  import_holder *h = malloc(sizeof *h);
  if (!h) {
    in->release(in);
    return qv_error_set(err, QV_ENOMEM, "out of memory (array import)");
  }
  h->array = *in; /* move: the holder owns it now */
  in->release = NULL;
  h->refs = 1; /* construction reference */
  qv_array *a = NULL;
  qv_status st = import_node(h, &h->array, type, "imported array", 0, &a, err);
  if (st == QV_OK) st = qv_array_validate(a, QV_VALIDATE_MINIMAL, "imported array", err);
  holder_unref(h); /* buffers keep it alive from here */
  if (st != QV_OK) {
    qv_array_unref(a);
    return st;
  }
  *out = a;
  return QV_OK;
}

/* ======================================================================== */
/* Stream import                                                             */

struct qv_stream_import {
  struct ArrowArrayStream stream;
  qv_schema *schema;
};

static qv_status errno_to_status(int code) {
  switch (code) {
    case EINVAL: return QV_EINVAL;
    case ENOMEM: return QV_ENOMEM;
    case ENOTSUP: return QV_ENOTSUP;
    default: return QV_EIO;
  }
}

static qv_status stream_error(struct ArrowArrayStream *s, int code, const char *what,
                              qv_error *err) {
  const char *msg = s->get_last_error ? s->get_last_error(s) : NULL;
  return qv_error_set(err, errno_to_status(code), "C stream %s failed (%s): %s", what,
                      strerror(code), msg ? msg : "no details");
}

void qv_stream_import_close(qv_stream_import *s) {
  if (!s) return;
  if (s->stream.release) s->stream.release(&s->stream);
  qv_schema_unref(s->schema);
  free(s);
}

qv_status qv_stream_import_open(struct ArrowArrayStream *stream, qv_stream_import **out,
                                qv_error *err) {
  if (!stream || !stream->release || !out) {
    if (stream && stream->release) stream->release(stream);
    return qv_error_set(err, QV_EARG, "qv_stream_import_open: NULL or released stream");
  }
  qv_stream_import *s = calloc(1, sizeof *s);
  if (!s) {
    stream->release(stream);
    return qv_error_set(err, QV_ENOMEM, "out of memory (stream import)");
  }
  s->stream = *stream;
  stream->release = NULL;
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  int code = s->stream.get_schema(&s->stream, &schema);
  qv_status st;
  if (code != 0) {
    st = stream_error(&s->stream, code, "get_schema", err);
  } else {
    st = qv_import_schema(&schema, &s->schema, err);
  }
  if (st != QV_OK) {
    qv_stream_import_close(s);
    return st;
  }
  *out = s;
  return QV_OK;
}

const qv_schema *qv_stream_import_schema(const qv_stream_import *s) { return s->schema; }

qv_status qv_stream_import_next(qv_stream_import *s, qv_array **out, qv_error *err) {
  *out = NULL;
  if (!s->stream.release) return qv_error_set(err, QV_EARG, "C stream already released");
  struct ArrowArray arr;
  memset(&arr, 0, sizeof arr);
  int code = s->stream.get_next(&s->stream, &arr);
  if (code != 0) return stream_error(&s->stream, code, "get_next", err);
  if (!arr.release) return QV_OK; /* end of stream */
  return qv_import_array(&arr, s->schema->type, out, err);
}

qv_status qv_import_stream(struct ArrowArrayStream *stream, qv_schema **out_schema,
                           qv_array ***out_batches, int64_t *out_n, qv_error *err) {
  qv_stream_import *s = NULL;
  QV_RETURN_NOT_OK(qv_stream_import_open(stream, &s, err));
  qv_array **batches = NULL;
  int64_t n = 0, cap = 0;
  qv_status st = QV_OK;
  for (;;) {
    qv_array *b = NULL;
    st = qv_stream_import_next(s, &b, err);
    if (st != QV_OK || !b) break;
    if (n == cap) {
      int64_t ncap = cap ? cap * 2 : 8;
      qv_array **nb = realloc(batches, (size_t)ncap * sizeof *nb);
      if (!nb) {
        qv_array_unref(b);
        st = qv_error_set(err, QV_ENOMEM, "out of memory (stream import)");
        break;
      }
      batches = nb;
      cap = ncap;
    }
    batches[n++] = b;
  }
  if (st != QV_OK) {
    for (int64_t i = 0; i < n; i++) qv_array_unref(batches[i]);
    free(batches);
    qv_stream_import_close(s);
    return st;
  }
  *out_schema = qv_schema_ref(s->schema);
  *out_batches = batches;
  *out_n = n;
  qv_stream_import_close(s);
  return QV_OK;
}
