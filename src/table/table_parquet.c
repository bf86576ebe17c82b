/*
 * table_parquet.c — a Parquet file as a table with pyarrow's default
 * types: the formats layer's reader (quiver/parquet.h) plus the stored
 * "ARROW:schema" (base64 of an IPC schema message, decoded with the ipc
 * layer's message decoder) as the target types. Read whole into memory
 * (qv_table_read_parquet), or lazily as a mapped table's source: only the
 * footer is read at open, each row group is a batch whose columns are
 * decoded on first use (table.c's src_batch calls in here). Table layer.
 */
#include <stdlib.h>
#include <string.h>

#include "core/guard_internal.h"
#include "core/parallel_internal.h"
#include "ipc/ipc_internal.h"
#include "quiver/parquet.h"
#include "quiver/table.h"
#include "table/table_internal.h"

static int b64_value(uint8_t c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

/* Standard or URL-safe base64, '=' padding optional; whitespace refused. */
static bool b64_decode(const char *s, int64_t n, uint8_t **out, int64_t *out_len) {
  uint8_t *d = malloc((size_t)(n / 4 * 3 + 4));
  if (d == NULL) return false;
  int64_t k = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (int64_t i = 0; i < n; i++) {
    if (s[i] == '=') break;
    int v = b64_value((uint8_t)s[i]);
    if (v < 0) {
      free(d);
      return false;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      d[k++] = (uint8_t)(acc >> bits);
    }
  }
  *out = d;
  *out_len = k;
  return true;
}

qv_status qv_parquet_stored_schema(const qv_parquet_file *f, qv_schema **out, qv_error *err) {
  *out = NULL;
  const qv_kv *kv = qv_metadata_find(qv_parquet_key_value_metadata(f), "ARROW:schema");
  if (kv == NULL) return QV_OK;
  uint8_t *bytes = NULL;
  int64_t n = 0;
  if (!b64_decode(kv->value, kv->value_len, &bytes, &n))
    return qv_error_set(err, QV_EINVAL, "ARROW:schema: not base64");
  const uint8_t *p = bytes;
  int64_t left = n;
  if (left >= 4 && memcmp(p, "\xff\xff\xff\xff", 4) == 0) {
    p += 4;
    left -= 4;
  }
  qv_status st = QV_OK;
  if (left < 4) {
    st = qv_error_set(err, QV_EINVAL, "ARROW:schema: %lld bytes, too short", (long long)n);
  } else {
    int64_t len = (int64_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                            (uint32_t)p[3] << 24);
    if (len > left - 4) len = left - 4;
    qv_ipc_message m;
    memset(&m, 0, sizeof m);
    st = qv_ipc_decode_message(p + 4, len, &m, err);
    if (st == QV_OK && (m.type != QV_MSG_SCHEMA || m.schema == NULL))
      st = qv_error_set(err, QV_EINVAL, "ARROW:schema: not a schema message");
    if (st == QV_OK) *out = qv_schema_ref(m.schema);
    else qv_error_prefix(err, st, "ARROW:schema: ");
    qv_ipc_message_reset(&m);
  }
  free(bytes);
  return st;
}

/* A new type of id `id` with t's parameters (no children). */
static qv_type *type_like(const qv_type *t, qv_type_id id) {
  qv_type *n = qv_type_new(id);
  if (n == NULL) return NULL;
  n->precision = t->precision;
  n->scale = t->scale;
  n->unit = t->unit;
  n->byte_width = t->byte_width;
  n->list_size = t->list_size;
  n->keys_sorted = t->keys_sorted;
  return n;
}

/* The type pyarrow reads a column as when the stored Arrow type is
 * `origin` and the Parquet schema gives `inferred` (apache/arrow
 * parquet/arrow/schema.cc, ApplyOriginalMetadata): time zones, durations,
 * large and view binaries, dictionaries and large lists are restored;
 * nested field names stay the Parquet ones; anything else stays inferred.
 * Returns a new reference (NULL on allocation failure). */
static qv_type *restore_type(qv_type *inferred, const qv_type *origin) {
  qv_type_id a = inferred->id, b = origin->id;
  if (a == QV_TIMESTAMP && b == QV_TIMESTAMP) {
    if ((inferred->timezone == NULL) == (origin->timezone == NULL) &&
        (inferred->timezone == NULL || strcmp(inferred->timezone, origin->timezone) == 0))
      return qv_type_ref(inferred);
    return qv_type_timestamp(inferred->unit, origin->timezone);
  }
  if (a == QV_INT64 && b == QV_DURATION) return qv_type_ref((qv_type *)origin);
  if ((a == QV_STRING && (b == QV_LARGE_STRING || b == QV_STRING_VIEW)) ||
      (a == QV_BINARY && (b == QV_LARGE_BINARY || b == QV_BINARY_VIEW)))
    return qv_type_ref((qv_type *)origin);
  if (b == QV_DICTIONARY && origin->value_type != NULL) {
    qv_type *v = restore_type(inferred, origin->value_type);
    bool same = v != NULL && qv_type_equals(v, origin->value_type, false);
    qv_type_unref(v);
    return same ? qv_type_ref((qv_type *)origin) : qv_type_ref(inferred);
  }
  bool lists = a == QV_LIST && (b == QV_LIST || b == QV_LARGE_LIST || b == QV_FIXED_SIZE_LIST);
  bool structs = a == QV_STRUCT && b == QV_STRUCT && inferred->n_children == origin->n_children;
  bool maps = a == QV_MAP && b == QV_MAP && inferred->n_children == 1 && origin->n_children == 1;
  if (!lists && !structs && !maps) return qv_type_ref(inferred);
  if ((lists && (inferred->n_children != 1 || origin->n_children != 1)))
    return qv_type_ref(inferred);
  qv_type *n = type_like(inferred, lists ? b : a);
  if (n == NULL) return NULL;
  if (b == QV_FIXED_SIZE_LIST) n->list_size = origin->list_size;
  for (int32_t i = 0; i < inferred->n_children; i++) {
    const qv_field *fi = &inferred->children[i];
    qv_type *ct = restore_type(fi->type, origin->children[i].type);
    if (ct == NULL || qv_type_add_child(n, fi->name, fi->nullable, ct,
                                        fi->metadata.n ? &fi->metadata : NULL, NULL) != QV_OK) {
      qv_type_unref(ct);
      qv_type_unref(n);
      return NULL;
    }
  }
  return n;
}

/* The target schema: the file's fields with restored types and the
 * stored fields' metadata; NULL when the stored schema does not match
 * the file's columns. */
static qv_schema *restore_schema(const qv_schema *file, const qv_schema *stored) {
  int32_t n = qv_schema_num_fields(file);
  if (qv_schema_num_fields(stored) != n) return NULL;
  qv_type *st = qv_type_new(QV_STRUCT);
  if (st == NULL) return NULL;
  for (int32_t i = 0; i < n; i++) {
    const qv_field *f = qv_schema_field(file, i), *o = qv_schema_field(stored, i);
    if (strcmp(f->name, o->name) != 0) {
      qv_type_unref(st);
      return NULL;
    }
    qv_type *t = restore_type(f->type, o->type);
    const qv_metadata *md = o->metadata.n ? &o->metadata : f->metadata.n ? &f->metadata : NULL;
    if (t == NULL || qv_type_add_child(st, f->name, f->nullable, t, md, NULL) != QV_OK) {
      qv_type_unref(t);
      qv_type_unref(st);
      return NULL;
    }
  }
  qv_schema *s = qv_schema_new(st);
  if (s == NULL) {
    qv_type_unref(st);
    return NULL;
  }
  /* pyarrow takes the schema metadata from the stored schema */
  if (qv_metadata_copy(&s->metadata, &stored->metadata, NULL) != QV_OK) {
    qv_schema_unref(s);
    return NULL;
  }
  return s;
}

qv_status qv_parquet_arrow_schema(const qv_parquet_file *f, qv_schema **out, qv_error *err) {
  qv_schema *stored = NULL;
  qv_error ignored;
  if (qv_parquet_stored_schema(f, &stored, &ignored) != QV_OK) stored = NULL;
  qv_schema *target = stored ? restore_schema(qv_parquet_schema(f), stored) : NULL;
  qv_schema_unref(stored);
  if (target == NULL) {
    *out = qv_schema_ref((qv_schema *)qv_parquet_schema(f));
    return QV_OK;
  }
  /* the read decides per column whether the target type converts */
  qv_parquet_read_options o;
  memset(&o, 0, sizeof o);
  o.arrow_schema = target;
  qv_status st = qv_parquet_read_schema(f, &o, out, err);
  qv_schema_unref(target);
  return st;
}

qv_status qv_table_read_parquet(const char *path, const qv_parquet_read_options *options,
                                qv_table **out, qv_error *err) {
  qv_parquet_file *f = NULL;
  QV_RETURN_NOT_OK(qv_parquet_open_path(path, &f, err));
  qv_parquet_read_options o;
  memset(&o, 0, sizeof o);
  if (options) o = *options;
  qv_schema *stored = NULL;
  qv_error ignored;
  /* A stored schema that does not decode is ignored, as pyarrow does. */
  if (qv_parquet_stored_schema(f, &stored, &ignored) != QV_OK) stored = NULL;
  qv_schema *target = stored ? restore_schema(qv_parquet_schema(f), stored) : NULL;
  o.arrow_schema = target;
  qv_array **batches = NULL;
  int64_t n = 0;
  qv_schema *schema = NULL;
  qv_status st = qv_parquet_read(f, &o, &batches, &n, &schema, err);
  if (st == QV_OK) {
    st = qv_table_from_batches(schema, batches, n, out, err);
    for (int64_t i = 0; i < n; i++) qv_array_unref(batches[i]);
    free(batches);
  }
  qv_schema_unref(schema);
  qv_schema_unref(stored);
  qv_schema_unref(target);
  qv_parquet_close(f);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Lazy Parquet sources (table_internal.h)                                   */

static bool needs_whole_read(const qv_parquet_file *f, const qv_schema *schema);

qv_status qv_tsource_open_parquet(qv_tsource *s, qv_buffer *map, const char *path, qv_error *err) {
  QV_RETURN_NOT_OK(qv_parquet_open_buffer(map, path, &s->pq, err));
  s->pq_map = qv_buffer_ref(map);
  QV_RETURN_NOT_OK(qv_parquet_arrow_schema(s->pq, &s->schema, err));
  if (needs_whole_read(s->pq, s->schema))
    return qv_error_set(err, QV_ENOTSUP,
                        "'%s': dictionary columns across row groups: read the whole file "
                        "(qv_table_read_parquet)",
                        path);
  s->n_batches = qv_parquet_num_row_groups(s->pq);
  return QV_OK;
}

int64_t qv_tsource_parquet_rows(const qv_tsource *s, int64_t i) {
  return qv_parquet_row_group_rows(s->pq, (int32_t)i);
}

typedef struct pq_decode {
  qv_tsource *s;
  qv_parquet_read_options o;
  qv_array **batches;
  int64_t n;
} pq_decode;

static qv_status pq_decode_body(void *ctx, qv_error *err) {
  pq_decode *d = ctx;
  return qv_parquet_read(d->s->pq, &d->o, &d->batches, &d->n, NULL, err);
}

qv_status qv_tsource_parquet_batch(qv_tsource *s, int64_t i, const int32_t *cols, int32_t n,
                                   qv_error *err) {
  int32_t nf = qv_schema_num_fields(s->schema);
  qv_array *a = s->decoded[i];
  if (a == NULL) {
    a = qv_array_new(s->schema->type, 1, nf);
    if (a == NULL) {
      return qv_error_set(err, QV_ENOMEM, "'%s': out of memory", s->path);
    }
    a->length = qv_parquet_row_group_rows(s->pq, (int32_t)i);
    a->null_count = 0;
    s->decoded[i] = a;
  }
  /* the columns still to decode, each once */
  int32_t *want = malloc(sizeof *want * (size_t)(nf > 0 ? nf : 1));
  bool *seen = calloc((size_t)(nf > 0 ? nf : 1), 1);
  if (want == NULL || seen == NULL) {
    free(want);
    free(seen);
    return qv_error_set(err, QV_ENOMEM, "'%s': out of memory", s->path);
  }
  int32_t k = 0;
  for (int32_t j = 0; j < (cols ? n : nf); j++) {
    int32_t c = cols ? cols[j] : j;
    if (c < 0 || c >= nf || seen[c] || a->children[c] != NULL) continue;
    seen[c] = true;
    want[k++] = c;
  }
  free(seen);
  qv_status st = QV_OK;
  if (k > 0) {
    int32_t rg = (int32_t)i;
    pq_decode d;
    memset(&d, 0, sizeof d);
    d.s = s;
    d.o.columns = want;
    d.o.n_columns = k;
    d.o.row_groups = &rg;
    d.o.n_row_groups = 1;
    d.o.arrow_schema = s->schema;
    /* A file that shrank fails here, before the decode allocates
     * (quiver/guard.h); the decode itself runs under a guard too. */
    st = qv_guard_check_buffer(s->pq_map, err);
    if (st == QV_OK) st = qv_guard_run(pq_decode_body, &d, err);
    if (st == QV_OK && (d.n != 1 || d.batches[0]->n_children != k))
      st = qv_error_set(err, QV_EINVAL, "'%s': row group %d did not decode as asked", s->path, rg);
    for (int32_t j = 0; st == QV_OK && j < k; j++)
      a->children[want[j]] = qv_array_ref(d.batches[0]->children[j]);
    for (int64_t b = 0; b < d.n; b++) qv_array_unref(d.batches[b]);
    free(d.batches);
  }
  free(want);
  return st;
}

qv_status qv_table_open_parquet(const char *path, qv_table **out, qv_error *err) {
  if (path == NULL) return qv_error_set(err, QV_EARG, "table: no path");
  qv_tsource *src = NULL;
  qv_status st = qv_tsource_open(path, NULL, NULL, &src, err);
  if (st == QV_OK && src->pq == NULL) {
    qv_tsource_unref(src);
    return qv_error_set(err, QV_EINVAL, "'%s': not a Parquet file", path);
  }
  if (st == QV_ENOTSUP) {
    /* dictionary columns (or a feature the reader refuses, which the
     * whole read reports again): read the file whole */
    qv_error why;
    if (qv_table_read_parquet(path, NULL, out, &why) == QV_OK) return QV_OK;
    return st;
  }
  QV_RETURN_NOT_OK(st);
  st = qv_tbl_from_source(src, out, err);
  qv_tsource_unref(src);
  return st;
}

int64_t qv_table_parquet_decoded_chunks(const qv_table *t) {
  const qv_tsource *s = t->kind == QV_TABLE_MAPPED ? t->src : NULL;
  return s && s->pq ? qv_parquet_decoded_chunks(s->pq) : -1;
}

/* True when the types of `schema` need one dictionary across row groups
 * (dictionary columns the file's own types do not have). */
static bool needs_whole_read(const qv_parquet_file *f, const qv_schema *schema) {
  const qv_schema *file = qv_parquet_schema(f);
  for (int32_t c = 0; c < qv_schema_num_fields(schema); c++)
    if (qv_schema_field(schema, c)->type->id == QV_DICTIONARY &&
        qv_schema_field(file, c)->type->id != QV_DICTIONARY)
      return true;
  return false;
}

qv_status qv_table_scan_parquet(const char *path, int threads, qv_parquet_batch_fn fn, void *ctx,
                                qv_error *err) {
  qv_parquet_file *f = NULL;
  QV_RETURN_NOT_OK(qv_parquet_open_path(path, &f, err));
  qv_schema *schema = NULL;
  qv_status st = qv_parquet_arrow_schema(f, &schema, err);
  if (st == QV_OK && needs_whole_read(f, schema)) {
    qv_parquet_close(f);
    qv_table *t = NULL;
    st = qv_table_read_parquet(path, NULL, &t, err);
    if (st == QV_OK) st = fn(ctx, qv_table_schema(t), NULL, err);
    for (int64_t i = 0; st == QV_OK && i < qv_table_num_batches(t); i++) {
      qv_array *b = NULL;
      st = qv_table_batch(t, i, &b, err);
      if (st == QV_OK) st = fn(ctx, qv_table_schema(t), b, err);
      qv_array_unref(b);
    }
    qv_table_unref(t);
    qv_schema_unref(schema);
    return st;
  }
  if (st == QV_OK) st = fn(ctx, schema, NULL, err);
  int32_t n_rg = qv_parquet_num_row_groups(f);
  int step = threads > 0 ? threads : qv_cpu_count();
  if (step < 1) step = 1;
  int32_t *rgs = malloc(sizeof *rgs * (size_t)step);
  if (rgs == NULL && st == QV_OK) st = qv_error_set(err, QV_ENOMEM, "'%s': out of memory", path);
  for (int32_t g = 0; st == QV_OK && g < n_rg; g += step) {
    /* `step` row groups at a time, decoded in parallel */
    qv_parquet_read_options o;
    memset(&o, 0, sizeof o);
    o.row_groups = rgs;
    for (int32_t k = 0; k < step && g + k < n_rg; k++) rgs[o.n_row_groups++] = g + k;
    o.threads = step;
    o.arrow_schema = schema;
    qv_array **batches = NULL;
    int64_t n = 0;
    st = qv_parquet_read(f, &o, &batches, &n, NULL, err);
    for (int64_t i = 0; i < n; i++) {
      if (st == QV_OK && batches[i]->length > 0) st = fn(ctx, schema, batches[i], err);
      qv_array_unref(batches[i]);
    }
    free(batches);
  }
  free(rgs);
  qv_schema_unref(schema);
  qv_parquet_close(f);
  return st;
}
