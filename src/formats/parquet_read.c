/*
 * parquet_read.c — the Parquet reader of quiver/parquet.h: opening a file
 * (magic, footer length, FileMetaData, schema tree, consistency of the
 * row groups with the schema, encryption refused), decoding a column
 * chunk page by page (levels, PLAIN / dictionary / RLE / DELTA_* /
 * BYTE_STREAM_SPLIT values, CRC checks) into levels plus dense values,
 * assembling Arrow arrays from the levels (structs, lists, maps, nulls at
 * every level) and reading row groups in parallel into record batches.
 * Formats layer: uses core (arrays, types, buffers, the thread pool).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/parallel_internal.h"
#include "core/validate_internal.h"
#include "formats/parquet_page_internal.h"
#include "formats/parquet_read_internal.h"
#include "quiver/builder.h"
#include "quiver/parquet.h"

#define PQ_DEFAULT_MAX_ALLOC ((int64_t)1 << 30)
#define PQ_SPARE 16 /* decode buffer sets kept: about one a thread */

struct qv_parquet_file {
  qv_buffer *buf;
  char *name;
  qv_pq_file_meta meta;
  qv_pq_node *root;
  qv_pq_node **leaves;
  int32_t n_leaves;
  qv_schema *schema;
  int64_t decoded_chunks; /* atomic: column chunks read_chunk decoded */
  /* atomic slots: the decode buffers of finished row groups (one pq_col a
   * leaf, grow-only), taken by the next row group a thread decodes so that
   * megabytes of levels, indices, dictionaries and decompressed pages are
   * not malloced and freed (glibc maps and unmaps them) every row group;
   * freed by qv_parquet_close */
  struct pq_col *spare[PQ_SPARE];
};

static qv_status oom(qv_error *err) {
  return qv_error_set(err, QV_ENOMEM, "Parquet: out of memory");
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                   */

static void cols_free(qv_parquet_file *f, struct pq_col *cols);

void qv_parquet_close(qv_parquet_file *f) {
  if (f == NULL) return;
  for (int i = 0; i < PQ_SPARE; i++) cols_free(f, f->spare[i]);
  qv_schema_unref(f->schema);
  qv_pq_node_free(f->root);
  free(f->leaves);
  qv_pq_file_meta_reset(&f->meta);
  free(f->name);
  qv_buffer_unref(f->buf);
  free(f);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static qv_status check_chunks(qv_parquet_file *f, int64_t data_end, qv_error *err) {
  const qv_pq_file_meta *m = &f->meta;
  int64_t rows = 0;
  for (int32_t g = 0; g < m->n_row_groups; g++) {
    const qv_pq_row_group *rg = &m->row_groups[g];
    if (rg->num_rows < 0 || qv_add_overflow(rows, rg->num_rows, &rows))
      return qv_error_set(err, QV_EINVAL, "%s: row group %d: bad row count %lld", f->name, g,
                          (long long)rg->num_rows);
    if (rg->n_columns != f->n_leaves)
      return qv_error_set(err, QV_EINVAL,
                          "%s: row group %d has %d column chunks, the schema %d leaf columns",
                          f->name, g, rg->n_columns, f->n_leaves);
    for (int32_t c = 0; c < rg->n_columns; c++) {
      const qv_pq_column_chunk *cc = &rg->columns[c];
      if (cc->encrypted)
        return qv_error_set(err, QV_ENOTSUP, "%s: encrypted Parquet is not supported (column %d)",
                            f->name, c);
      if (cc->has_file_path)
        return qv_error_set(err, QV_ENOTSUP,
                            "%s: row group %d column %d: data in another file (file_path) is "
                            "not supported",
                            f->name, g, c);
      if (!cc->has_meta)
        return qv_error_set(err, QV_EINVAL, "%s: row group %d column %d: no ColumnMetaData",
                            f->name, g, c);
      const qv_pq_column_meta *cm = &cc->meta;
      if (cm->type != f->leaves[c]->physical)
        return qv_error_set(err, QV_EINVAL,
                            "%s: row group %d column %d: type %s, the schema says %s", f->name, g,
                            c, qv_pq_type_name(cm->type), qv_pq_type_name(f->leaves[c]->physical));
      if (cm->num_values < 0 || cm->total_compressed_size < 0 || cm->data_page_offset < 0 ||
          cm->data_page_offset > data_end || cm->total_compressed_size > data_end)
        return qv_error_set(err, QV_EINVAL,
                            "%s: row group %d column %d: offsets or sizes outside the file "
                            "(data page at %lld, %lld bytes; data ends at %lld)",
                            f->name, g, c, (long long)cm->data_page_offset,
                            (long long)cm->total_compressed_size, (long long)data_end);
    }
  }
  return QV_OK;
}

static qv_status make_schema(qv_parquet_file *f, qv_error *err) {
  qv_type *st = qv_type_new(QV_STRUCT);
  if (st == NULL) return oom(err);
  for (int32_t i = 0; i < f->root->n_children; i++) {
    qv_pq_node *ch = f->root->children[i];
    qv_status s = qv_type_add_child(st, ch->name, ch->nullable, qv_type_ref(ch->type),
                                    ch->metadata.n ? &ch->metadata : NULL, err);
    if (s != QV_OK) {
      qv_type_unref(ch->type);
      qv_type_unref(st);
      return s;
    }
  }
  qv_schema *schema = qv_schema_new(st);
  if (schema == NULL) {
    qv_type_unref(st);
    return oom(err);
  }
  for (int64_t i = 0; i < f->meta.kv.n; i++) {
    const qv_kv *kv = &f->meta.kv.kv[i];
    if (strcmp(kv->key, "ARROW:schema") == 0) continue;
    if (qv_metadata_append(&schema->metadata, kv->key, kv->key_len, kv->value, kv->value_len,
                           err) != QV_OK) {
      qv_schema_unref(schema);
      return oom(err);
    }
  }
  f->schema = schema;
  return QV_OK;
}

qv_status qv_parquet_open_buffer(qv_buffer *buf, const char *name, qv_parquet_file **out,
                                 qv_error *err) {
  if (name == NULL) name = "Parquet data";
  const uint8_t *d = buf->data;
  int64_t n = buf->size;
  if (n < 4 || (memcmp(d, "PAR1", 4) != 0 && memcmp(d, "PARE", 4) != 0))
    return qv_error_set(err, QV_EINVAL, "%s: not a Parquet file (no PAR1 magic at the start)",
                        name);
  if (n >= 8 && memcmp(d + n - 4, "PARE", 4) == 0)
    return qv_error_set(err, QV_ENOTSUP,
                        "%s: encrypted Parquet is not supported (encrypted footer, PARE magic)",
                        name);
  if (n < 12)
    return qv_error_set(err, QV_EINVAL,
                        "%s: truncated Parquet file: %lld bytes, at least 12 needed", name,
                        (long long)n);
  if (memcmp(d + n - 4, "PAR1", 4) != 0)
    return qv_error_set(err, QV_EINVAL,
                        "%s: truncated or corrupt Parquet file: no PAR1 magic at the end", name);
  int64_t flen = le32(d + n - 8);
  if (flen > n - 12)
    return qv_error_set(err, QV_EINVAL,
                        "%s: footer length %lld runs past the start of the file (%lld bytes)", name,
                        (long long)flen, (long long)n);
  qv_parquet_file *f = calloc(1, sizeof *f);
  if (f == NULL || (f->name = strdup(name)) == NULL) {
    free(f);
    return oom(err);
  }
  f->buf = qv_buffer_ref(buf);
  int64_t fstart = n - 8 - flen;
  qv_status st = qv_pq_decode_file_meta(d + fstart, flen, &f->meta, err);
  if (st != QV_OK) qv_error_prefix(err, st, "%s: ", name);
  if (st == QV_OK && f->meta.encrypted)
    st = qv_error_set(
        err, QV_ENOTSUP,
        "%s: encrypted Parquet is not supported (plaintext footer, encrypted columns)", name);
  if (st == QV_OK) st = qv_pq_schema_build(&f->meta, name, &f->root, &f->leaves, &f->n_leaves, err);
  if (st == QV_OK) st = check_chunks(f, fstart, err);
  if (st == QV_OK) st = make_schema(f, err);
  if (st != QV_OK) {
    qv_parquet_close(f);
    return st;
  }
  *out = f;
  return QV_OK;
}

qv_status qv_parquet_open_path(const char *path, qv_parquet_file **out, qv_error *err) {
  qv_buffer *buf = NULL;
  QV_RETURN_NOT_OK(qv_buffer_map_file(path, &buf, NULL, err));
  qv_status st = qv_parquet_open_buffer(buf, path, out, err);
  qv_buffer_unref(buf);
  return st;
}

const qv_schema *qv_parquet_schema(const qv_parquet_file *f) { return f->schema; }
const qv_metadata *qv_parquet_key_value_metadata(const qv_parquet_file *f) { return &f->meta.kv; }
int64_t qv_parquet_num_rows(const qv_parquet_file *f) {
  int64_t n = 0;
  for (int32_t g = 0; g < f->meta.n_row_groups; g++) n += f->meta.row_groups[g].num_rows;
  return n;
}
int32_t qv_parquet_num_row_groups(const qv_parquet_file *f) { return f->meta.n_row_groups; }
int64_t qv_parquet_row_group_rows(const qv_parquet_file *f, int32_t i) {
  return i >= 0 && i < f->meta.n_row_groups ? f->meta.row_groups[i].num_rows : 0;
}
int32_t qv_parquet_num_leaf_columns(const qv_parquet_file *f) { return f->n_leaves; }
const char *qv_parquet_created_by(const qv_parquet_file *f) {
  return f->meta.created_by ? f->meta.created_by : "";
}
int32_t qv_parquet_format_version(const qv_parquet_file *f) { return f->meta.version; }
int64_t qv_parquet_decoded_chunks(const qv_parquet_file *f) {
  return __atomic_load_n(&f->decoded_chunks, __ATOMIC_RELAXED);
}

/* A statistics value rendered by physical type. */
static void render_stat(const qv_pq_node *leaf, qv_pq_bytes b, char *out, size_t cap) {
  out[0] = '\0';
  if (b.data == NULL) return;
  switch (leaf->physical) {
    case QV_PQ_BOOLEAN:
      snprintf(out, cap, "%s", b.len >= 1 && b.data[0] ? "true" : "false");
      return;
    case QV_PQ_INT32:
      if (b.len == 4) {
        int32_t v;
        memcpy(&v, b.data, 4);
        snprintf(out, cap, "%d", v);
        return;
      }
      break;
    case QV_PQ_INT64:
      if (b.len == 8) {
        int64_t v;
        memcpy(&v, b.data, 8);
        snprintf(out, cap, "%lld", (long long)v);
        return;
      }
      break;
    case QV_PQ_FLOAT:
      if (b.len == 4) {
        float v;
        memcpy(&v, b.data, 4);
        snprintf(out, cap, "%g", (double)v);
        return;
      }
      break;
    case QV_PQ_DOUBLE:
      if (b.len == 8) {
        double v;
        memcpy(&v, b.data, 8);
        snprintf(out, cap, "%g", v);
        return;
      }
      break;
    case QV_PQ_BYTE_ARRAY: {
      bool text = leaf->type->id == QV_STRING;
      for (int32_t i = 0; i < b.len && text; i++) text = b.data[i] >= 0x20 && b.data[i] < 0x7f;
      if (text) {
        size_t k = 0;
        for (int32_t i = 0; i < b.len && k + 4 < cap; i++) out[k++] = (char)b.data[i];
        if ((size_t)b.len > k) {
          out[k++] = '.';
          out[k++] = '.';
        }
        out[k] = '\0';
        return;
      }
      break;
    }
    default: break;
  }
  size_t k = 0;
  k += (size_t)snprintf(out, cap, "0x");
  for (int32_t i = 0; i < b.len && k + 3 < cap; i++)
    k += (size_t)snprintf(out + k, cap - k, "%02x", b.data[i]);
}

qv_status qv_parquet_column_info_get(const qv_parquet_file *f, int32_t row_group, int32_t column,
                                     qv_parquet_column_info *out, qv_error *err) {
  if (row_group < 0 || row_group >= f->meta.n_row_groups || column < 0 || column >= f->n_leaves)
    return qv_error_set(err, QV_ERANGE, "%s: no row group %d column %d (%d row groups, %d columns)",
                        f->name, row_group, column, f->meta.n_row_groups, f->n_leaves);
  const qv_pq_column_meta *m = &f->meta.row_groups[row_group].columns[column].meta;
  const qv_pq_node *leaf = f->leaves[column];
  memset(out, 0, sizeof *out);
  out->path = m->path ? m->path : leaf->name;
  out->physical_type = qv_pq_type_name(m->type);
  out->codec = qv_pq_codec_name(m->codec);
  for (int32_t i = 0; i < m->n_encodings && out->n_encodings < QV_PARQUET_MAX_ENCODINGS; i++)
    out->encodings[out->n_encodings++] = qv_pq_encoding_name(m->encodings[i]);
  out->num_values = m->num_values;
  out->compressed_size = m->total_compressed_size;
  out->uncompressed_size = m->total_uncompressed_size;
  out->max_definition_level = leaf->max_def;
  out->max_repetition_level = leaf->max_rep;
  out->has_statistics = m->stats.present;
  out->null_count = m->stats.present ? m->stats.null_count : -1;
  out->distinct_count = m->stats.present ? m->stats.distinct_count : -1;
  out->has_min_max = m->stats.min.data != NULL && m->stats.max.data != NULL;
  if (out->has_min_max) {
    render_stat(leaf, m->stats.min, out->min, sizeof out->min);
    render_stat(leaf, m->stats.max, out->max, sizeof out->max);
  }
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Decoded column chunks: levels plus dense non-null values                  */

typedef struct pq_vals {
  int width; /* bytes per value; 0: variable length (BYTE_ARRAY) */
  uint8_t *data;
  int64_t len, cap; /* bytes */
  int64_t *offs;    /* variable: count + 1 offsets */
  int64_t offs_cap;
  int64_t count;
} pq_vals;

typedef struct pq_col {
  const qv_pq_node *leaf;
  int16_t *def, *rep;
  int64_t n_levels, lv_cap;
  pq_vals vals;
  pq_vals dict;
  bool has_dict;
  uint32_t *idx; /* scratch for dictionary indices, reused across pages */
  int64_t idx_cap;
  uint8_t *zbuf; /* decompressed page, reused across pages */
  int64_t zbuf_cap;
  int64_t max_alloc;
  /* where we are, for messages */
  const char *file;
  int32_t rg, page;
  int64_t offset;
} pq_col;

static void vals_free(pq_vals *v) {
  free(v->data);
  free(v->offs);
  memset(v, 0, sizeof *v);
}

static void col_free(pq_col *c) {
  free(c->zbuf);
  free(c->idx);
  free(c->def);
  free(c->rep);
  vals_free(&c->vals);
  vals_free(&c->dict);
}

/* The leaves' decode buffers of a row group, kept for the next one. */
static void cols_free(qv_parquet_file *f, pq_col *cols) {
  for (int32_t l = 0; cols && l < f->n_leaves; l++) col_free(&cols[l]);
  free(cols);
}

/* A set of decode buffers: a spare one (its buffers kept, its state
 * cleared) or a new one; NULL when out of memory. */
static pq_col *cols_take(qv_parquet_file *f) {
  for (int i = 0; i < PQ_SPARE; i++) {
    pq_col *cols = __atomic_exchange_n(&f->spare[i], NULL, __ATOMIC_ACQUIRE);
    if (cols == NULL) continue;
    for (int32_t l = 0; l < f->n_leaves; l++) {
      pq_col *c = &cols[l], k = *c;
      memset(c, 0, sizeof *c);
      c->def = k.def, c->rep = k.rep, c->lv_cap = k.lv_cap;
      c->idx = k.idx, c->idx_cap = k.idx_cap;
      c->zbuf = k.zbuf, c->zbuf_cap = k.zbuf_cap;
      c->vals.data = k.vals.data, c->vals.cap = k.vals.cap;
      c->vals.offs = k.vals.offs, c->vals.offs_cap = k.vals.offs_cap;
      c->dict.data = k.dict.data, c->dict.cap = k.dict.cap;
      c->dict.offs = k.dict.offs, c->dict.offs_cap = k.dict.offs_cap;
    }
    return cols;
  }
  return calloc((size_t)(f->n_leaves > 0 ? f->n_leaves : 1), sizeof(pq_col));
}

/* Back into a free slot (freed when every slot is taken). */
static void cols_give(qv_parquet_file *f, pq_col *cols) {
  for (int i = 0; cols != NULL && i < PQ_SPARE; i++) {
    pq_col *expect = NULL;
    if (__atomic_compare_exchange_n(&f->spare[i], &expect, cols, false, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED))
      return;
  }
  cols_free(f, cols);
}

static qv_status col_fail(pq_col *c, qv_status st, qv_error *err, const char *fmt, ...)
    QV_PRINTF(4, 5);
static qv_status col_fail(pq_col *c, qv_status st, qv_error *err, const char *fmt, ...) {
  char msg[QV_ERROR_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return qv_error_set(err, st, "%s: row group %d, column '%s', page %d at offset %lld: %s", c->file,
                      c->rg, c->leaf->name, c->page, (long long)c->offset, msg);
}

static bool grow(void **p, int64_t *cap, int64_t need, int64_t elem, int64_t max_alloc) {
  if (need <= *cap) return true;
  int64_t nc = *cap ? *cap : 64;
  while (nc < need) nc *= 2;
  if (nc * elem > max_alloc) {
    if (need * elem > max_alloc) return false;
    nc = need;
  }
  void *np = realloc(*p, (size_t)(nc * elem) + 16);
  if (np == NULL) return false;
  *p = np;
  *cap = nc;
  return true;
}

static qv_status vals_reserve(pq_col *c, pq_vals *v, int64_t n_values, int64_t bytes,
                              qv_error *err) {
  int64_t need_bytes, need_offs;
  /* at least one byte: data is never NULL behind a zero-length write */
  if (qv_add_overflow(v->len, bytes, &need_bytes) ||
      !grow((void **)&v->data, &v->cap, need_bytes > 0 ? need_bytes : 1, 1, c->max_alloc))
    return col_fail(c, QV_ENOMEM, err, "values need %lld bytes, over the bound of %lld",
                    (long long)(v->len + bytes), (long long)c->max_alloc);
  if (v->width == 0) {
    if (qv_add_overflow(v->count, n_values + 1, &need_offs) ||
        !grow((void **)&v->offs, &v->offs_cap, need_offs, 8, c->max_alloc))
      return col_fail(c, QV_ENOMEM, err, "%lld values over the allocation bound",
                      (long long)need_offs);
    if (v->count == 0) v->offs[0] = 0;
  }
  return QV_OK;
}

static inline void vals_push_var(pq_vals *v, const uint8_t *s, int64_t n) {
  if (n) memcpy(v->data + v->len, s, (size_t)n);
  v->len += n;
  v->offs[++v->count] = v->len;
}

static int phys_width(const qv_pq_node *leaf) {
  switch (leaf->physical) {
    case QV_PQ_BOOLEAN: return 1;
    case QV_PQ_INT32:
    case QV_PQ_FLOAT: return 4;
    case QV_PQ_INT64:
    case QV_PQ_DOUBLE: return 8;
    case QV_PQ_INT96: return 12;
    case QV_PQ_FIXED_LEN_BYTE_ARRAY: return leaf->type_length;
    default: return 0;
  }
}

/* PLAIN values: n of them from [p, p+len) appended to v. */
static qv_status decode_plain(pq_col *c, pq_vals *v, const uint8_t *p, int64_t len, int64_t n,
                              qv_error *err) {
  const qv_pq_node *leaf = c->leaf;
  if (leaf->physical == QV_PQ_BOOLEAN) {
    if ((n + 7) / 8 > len)
      return col_fail(c, QV_EINVAL, err, "PLAIN booleans: %lld values need %lld bytes, found %lld",
                      (long long)n, (long long)((n + 7) / 8), (long long)len);
    QV_RETURN_NOT_OK(vals_reserve(c, v, n, n, err));
    for (int64_t i = 0; i < n; i++) v->data[v->len + i] = (p[i >> 3] >> (i & 7)) & 1;
    v->len += n;
    v->count += n;
    return QV_OK;
  }
  if (v->width > 0) {
    int64_t bytes;
    if (qv_mul_overflow(n, v->width, &bytes) || bytes > len)
      return col_fail(c, QV_EINVAL, err,
                      "PLAIN: %lld values of %d bytes, the page holds %lld bytes", (long long)n,
                      v->width, (long long)len);
    QV_RETURN_NOT_OK(vals_reserve(c, v, n, bytes, err));
    if (bytes > 0) memcpy(v->data + v->len, p, (size_t)bytes);
    v->len += bytes;
    v->count += n;
    return QV_OK;
  }
  /* BYTE_ARRAY: 4-byte length, bytes */
  if (n > len / 4)
    return col_fail(c, QV_EINVAL, err, "PLAIN: %lld byte arrays cannot fit in %lld bytes",
                    (long long)n, (long long)len);
  QV_RETURN_NOT_OK(vals_reserve(c, v, n, len - 4 * n, err));
  int64_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    if (len - pos < 4)
      return col_fail(c, QV_EINVAL, err, "PLAIN: byte array %lld truncated", (long long)i);
    int64_t l = le32(p + pos);
    pos += 4;
    /* the values after this one need their 4-byte lengths: the bytes
     * reserved above (len - 4n) bound the total only with room for them */
    if (l > len - pos - 4 * (n - i - 1))
      return col_fail(c, QV_EINVAL, err, "PLAIN: byte array %lld of %lld bytes runs past the page",
                      (long long)i, (long long)l);
    vals_push_var(v, p + pos, l);
    pos += l;
  }
  return QV_OK;
}

static qv_status decode_dict_indices(pq_col *c, const uint8_t *p, int64_t len, int64_t n,
                                     qv_error *err) {
  if (!c->has_dict)
    return col_fail(c, QV_EINVAL, err, "dictionary-encoded page without a dictionary page");
  if (n == 0) return QV_OK;
  if (len < 1) return col_fail(c, QV_EINVAL, err, "dictionary indices: empty page");
  int bw = p[0];
  if (bw > 32) return col_fail(c, QV_EINVAL, err, "dictionary index bit width %d > 32", bw);
  if (n * 4 > c->max_alloc)
    return col_fail(c, QV_ENOMEM, err, "%lld indices over the bound", (long long)n);
  if (!grow((void **)&c->idx, &c->idx_cap, n, 4, c->max_alloc)) return oom(err);
  uint32_t *idx = c->idx;
  qv_pq_rle r;
  qv_pq_rle_init(&r, p + 1, len - 1, bw);
  qv_status st = qv_pq_rle_get(&r, idx, n, err);
  if (st != QV_OK) col_fail(c, st, err, "dictionary indices: %s", err ? err->message : "");
  pq_vals *d = &c->dict, *v = &c->vals;
  uint32_t hi = 0;
  for (int64_t i = 0; i < n; i++) hi = idx[i] > hi ? idx[i] : hi;
  for (int64_t i = 0; i < n && st == QV_OK && hi >= (uint64_t)d->count; i++)
    if (idx[i] >= (uint64_t)d->count)
      st = col_fail(c, QV_EINVAL, err, "dictionary index %u out of range (%lld values)", idx[i],
                    (long long)d->count);
  if (st == QV_OK && v->width > 0) {
    st = vals_reserve(c, v, n, n * v->width, err);
    int w = v->width;
    uint8_t *o = v->data + v->len;
    if (st == QV_OK && w == 8) { /* gathered straight into the values */
      const uint64_t *src = (const uint64_t *)(const void *)d->data;
      for (int64_t i = 0; i < n; i++) memcpy(o + i * 8, &src[idx[i]], 8);
    } else if (st == QV_OK && w == 4) {
      const uint32_t *src = (const uint32_t *)(const void *)d->data;
      for (int64_t i = 0; i < n; i++) memcpy(o + i * 4, &src[idx[i]], 4);
    } else {
      for (int64_t i = 0; i < n && st == QV_OK; i++)
        memcpy(o + i * w, d->data + (int64_t)idx[i] * w, (size_t)w);
    }
    if (st == QV_OK) {
      v->len += n * w;
      v->count += n;
    }
  } else if (st == QV_OK) {
    int64_t bytes = 0;
    for (int64_t i = 0; i < n; i++) bytes += d->offs[idx[i] + 1] - d->offs[idx[i]];
    st = vals_reserve(c, v, n, bytes, err);
    if (st == QV_OK) {
      /* Both buffers keep 16 bytes of slack past their capacity (grow),
       * so values up to 16 bytes are copied with one fixed-size move. */
      const int64_t *doffs = d->offs;
      int64_t *offs = v->offs + v->count, at = v->len;
      uint8_t *out = v->data;
      for (int64_t i = 0; i < n; i++) {
        int64_t s0 = doffs[idx[i]], l = doffs[idx[i] + 1] - s0;
        if (l <= 16) memcpy(out + at, d->data + s0, 16);
        else memcpy(out + at, d->data + s0, (size_t)l);
        at += l;
        offs[i + 1] = at;
      }
      v->len = at;
      v->count += n;
    }
  }
  return st;
}

static qv_status decode_delta_ints(pq_col *c, const uint8_t *p, int64_t len, int64_t n,
                                   qv_error *err) {
  pq_vals *v = &c->vals;
  if (v->width != 4 && v->width != 8)
    return col_fail(c, QV_EINVAL, err, "DELTA_BINARY_PACKED on a %s column",
                    qv_pq_type_name(c->leaf->physical));
  QV_RETURN_NOT_OK(vals_reserve(c, v, n, n * v->width, err));
  int64_t got = 0, used = 0;
  qv_status st = qv_pq_delta_decode(p, len, v->width, n, v->data + v->len, &got, &used, err);
  if (st != QV_OK) return col_fail(c, st, err, "%s", err ? err->message : "");
  if (got != n)
    return col_fail(c, QV_EINVAL, err, "DELTA_BINARY_PACKED holds %lld values, the page %lld",
                    (long long)got, (long long)n);
  v->len += n * v->width;
  v->count += n;
  return QV_OK;
}

/* n lengths (DELTA_BINARY_PACKED int32) into a new array; *used bytes. */
static qv_status delta_lengths(pq_col *c, const uint8_t *p, int64_t len, int64_t n, int32_t **out,
                               int64_t *used, qv_error *err) {
  if (n * 4 > c->max_alloc)
    return col_fail(c, QV_ENOMEM, err, "%lld lengths over the bound", (long long)n);
  int32_t *l = malloc((size_t)(n > 0 ? n : 1) * 4);
  if (l == NULL) return oom(err);
  int64_t got = 0;
  qv_status st = qv_pq_delta_decode(p, len, 4, n, l, &got, used, err);
  if (st != QV_OK) st = col_fail(c, st, err, "%s", err ? err->message : "");
  else if (got != n)
    st = col_fail(c, QV_EINVAL, err, "%lld lengths, expected %lld", (long long)got, (long long)n);
  for (int64_t i = 0; i < n && st == QV_OK; i++)
    if (l[i] < 0) st = col_fail(c, QV_EINVAL, err, "negative length %d", l[i]);
  if (st != QV_OK) {
    free(l);
    return st;
  }
  *out = l;
  return QV_OK;
}

static qv_status decode_dlba(pq_col *c, const uint8_t *p, int64_t len, int64_t n, qv_error *err) {
  pq_vals *v = &c->vals;
  if (v->width != 0)
    return col_fail(c, QV_EINVAL, err, "DELTA_LENGTH_BYTE_ARRAY on a fixed-width column");
  int32_t *l = NULL;
  int64_t used = 0;
  QV_RETURN_NOT_OK(delta_lengths(c, p, len, n, &l, &used, err));
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) total += l[i];
  qv_status st = QV_OK;
  if (total > len - used)
    st = col_fail(c, QV_EINVAL, err, "DELTA_LENGTH_BYTE_ARRAY: %lld bytes of data, %lld left",
                  (long long)total, (long long)(len - used));
  if (st == QV_OK) st = vals_reserve(c, v, n, total, err);
  int64_t pos = used;
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    vals_push_var(v, p + pos, l[i]);
    pos += l[i];
  }
  free(l);
  return st;
}

static qv_status decode_dba(pq_col *c, const uint8_t *p, int64_t len, int64_t n, qv_error *err) {
  pq_vals *v = &c->vals;
  int32_t *pre = NULL, *suf = NULL;
  int64_t u1 = 0, u2 = 0;
  QV_RETURN_NOT_OK(delta_lengths(c, p, len, n, &pre, &u1, err));
  qv_status st = delta_lengths(c, p + u1, len - u1, n, &suf, &u2, err);
  if (st != QV_OK) {
    free(pre);
    return st;
  }
  const uint8_t *data = p + u1 + u2;
  int64_t left = len - u1 - u2, pos = 0;
  /* the previous value: kept in a scratch buffer */
  uint8_t *prev = NULL;
  int64_t prev_len = 0, prev_cap = 0;
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    if (pre[i] > prev_len) {
      st = col_fail(c, QV_EINVAL, err,
                    "DELTA_BYTE_ARRAY: prefix %d longer than the previous value (%lld)", pre[i],
                    (long long)prev_len);
      break;
    }
    if (suf[i] > left - pos) {
      st = col_fail(c, QV_EINVAL, err, "DELTA_BYTE_ARRAY: suffix runs past the page");
      break;
    }
    int64_t vl = (int64_t)pre[i] + suf[i];
    if (v->width > 0 && vl != v->width) {
      st = col_fail(c, QV_EINVAL, err, "DELTA_BYTE_ARRAY: value of %lld bytes in a %d-byte column",
                    (long long)vl, v->width);
      break;
    }
    if (!grow((void **)&prev, &prev_cap, vl + 1, 1, c->max_alloc)) {
      st = oom(err);
      break;
    }
    memcpy(prev + pre[i], data + pos, (size_t)suf[i]);
    pos += suf[i];
    prev_len = vl;
    st = vals_reserve(c, v, 1, vl, err);
    if (st != QV_OK) break;
    if (v->width > 0) {
      memcpy(v->data + v->len, prev, (size_t)vl);
      v->len += vl;
      v->count++;
    } else {
      vals_push_var(v, prev, vl);
    }
  }
  free(prev);
  free(pre);
  free(suf);
  return st;
}

static qv_status decode_bss(pq_col *c, const uint8_t *p, int64_t len, int64_t n, qv_error *err) {
  pq_vals *v = &c->vals;
  int w = v->width;
  if (w == 0 || c->leaf->physical == QV_PQ_BOOLEAN || c->leaf->physical == QV_PQ_INT96)
    return col_fail(c, QV_EINVAL, err, "BYTE_STREAM_SPLIT on a %s column",
                    qv_pq_type_name(c->leaf->physical));
  if (n * w > len)
    return col_fail(c, QV_EINVAL, err, "BYTE_STREAM_SPLIT: %lld values need %lld bytes, found %lld",
                    (long long)n, (long long)(n * w), (long long)len);
  QV_RETURN_NOT_OK(vals_reserve(c, v, n, n * w, err));
  uint8_t *o = v->data + v->len;
  for (int b = 0; b < w; b++) {
    const uint8_t *s = p + (int64_t)b * n;
    for (int64_t k = 0; k < n; k++) o[k * w + b] = s[k];
  }
  v->len += n * w;
  v->count += n;
  return QV_OK;
}

static qv_status decode_values(pq_col *c, int32_t enc, const uint8_t *p, int64_t len, int64_t n,
                               qv_error *err) {
  switch (enc) {
    case QV_PQ_PLAIN: return decode_plain(c, &c->vals, p, len, n, err);
    case QV_PQ_PLAIN_DICTIONARY:
    case QV_PQ_RLE_DICTIONARY: return decode_dict_indices(c, p, len, n, err);
    case QV_PQ_RLE: {
      if (c->leaf->physical != QV_PQ_BOOLEAN)
        return col_fail(c, QV_EINVAL, err, "RLE values on a %s column",
                        qv_pq_type_name(c->leaf->physical));
      if (len < 4) return col_fail(c, QV_EINVAL, err, "RLE booleans: no length prefix");
      int64_t l = le32(p);
      if (l > len - 4)
        return col_fail(c, QV_EINVAL, err, "RLE booleans: length runs past the page");
      if (n * 4 > c->max_alloc) return col_fail(c, QV_ENOMEM, err, "too many values");
      uint32_t *tmp = malloc((size_t)(n > 0 ? n : 1) * 4);
      if (tmp == NULL) return oom(err);
      qv_pq_rle r;
      qv_pq_rle_init(&r, p + 4, l, 1);
      qv_status st = qv_pq_rle_get(&r, tmp, n, err);
      if (st != QV_OK) st = col_fail(c, st, err, "RLE booleans: %s", err ? err->message : "");
      if (st == QV_OK) st = vals_reserve(c, &c->vals, n, n, err);
      if (st == QV_OK) {
        for (int64_t i = 0; i < n; i++) c->vals.data[c->vals.len + i] = (uint8_t)tmp[i];
        c->vals.len += n;
        c->vals.count += n;
      }
      free(tmp);
      return st;
    }
    case QV_PQ_DELTA_BINARY_PACKED: return decode_delta_ints(c, p, len, n, err);
    case QV_PQ_DELTA_LENGTH_BYTE_ARRAY: return decode_dlba(c, p, len, n, err);
    case QV_PQ_DELTA_BYTE_ARRAY: return decode_dba(c, p, len, n, err);
    case QV_PQ_BYTE_STREAM_SPLIT: return decode_bss(c, p, len, n, err);
  }
  return col_fail(c, QV_ENOTSUP, err, "encoding %s (%d) is not supported", qv_pq_encoding_name(enc),
                  enc);
}

/* n levels (RLE hybrid, bit width for max) appended at dst. */
static qv_status decode_levels(pq_col *c, const uint8_t *p, int64_t len, int64_t n, int16_t max,
                               int16_t *dst, const char *what, qv_error *err) {
  qv_pq_rle r;
  qv_pq_rle_init(&r, p, len, qv_pq_bit_width((uint64_t)max));
  qv_status st = qv_pq_rle_get_levels(&r, dst, n, max, err);
  if (st != QV_OK) st = col_fail(c, st, err, "%s levels: %s", what, err ? err->message : "");
  return st;
}

/* v1 levels: [4-byte length][RLE data], or the deprecated BIT_PACKED
 * (no length); *used gets the bytes taken. */
static qv_status decode_levels_v1(pq_col *c, int32_t enc, const uint8_t *p, int64_t len, int64_t n,
                                  int16_t max, int16_t *dst, const char *what, int64_t *used,
                                  qv_error *err) {
  if (enc == QV_PQ_BIT_PACKED) {
    qv_status st = qv_pq_bit_packed_levels(p, len, n, max, dst, used, err);
    if (st != QV_OK) st = col_fail(c, st, err, "%s levels: %s", what, err ? err->message : "");
    return st;
  }
  if (enc != QV_PQ_RLE)
    return col_fail(c, QV_ENOTSUP, err, "%s levels in encoding %s are not supported", what,
                    qv_pq_encoding_name(enc));
  if (len < 4) return col_fail(c, QV_EINVAL, err, "%s levels: no length prefix", what);
  int64_t l = le32(p);
  if (l > len - 4)
    return col_fail(c, QV_EINVAL, err, "%s levels of %lld bytes run past the page", what,
                    (long long)l);
  *used = 4 + l;
  return decode_levels(c, p + 4, l, n, max, dst, what, err);
}

static qv_status decode_data_page(pq_col *c, const qv_pq_page_header *h, const uint8_t *p,
                                  int64_t len, const uint8_t *levels, int64_t levels_len,
                                  qv_error *err) {
  const qv_pq_node *leaf = c->leaf;
  int64_t n = h->num_values;
  if (leaf->max_rep == 0 && leaf->max_def == 0 && n > len * 8 + 64 &&
      leaf->conv != QV_PQ_CONV_NULL && h->encoding != QV_PQ_RLE_DICTIONARY &&
      h->encoding != QV_PQ_PLAIN_DICTIONARY && h->encoding != QV_PQ_RLE)
    return col_fail(c, QV_EINVAL, err, "%lld values cannot fit in a page of %lld bytes",
                    (long long)n, (long long)len);
  if (n * 2 > c->max_alloc)
    return col_fail(c, QV_ENOMEM, err, "%lld values over the bound", (long long)n);
  int64_t base = c->n_levels, need = base + n, room = need > 0 ? need : 1; /* never NULL */
  if (leaf->max_def > 0 && !grow((void **)&c->def, &c->lv_cap, room, 2, c->max_alloc))
    return oom(err);
  if (leaf->max_rep > 0) {
    int64_t cap = c->lv_cap;
    if (leaf->max_def == 0) {
      if (!grow((void **)&c->rep, &c->lv_cap, room, 2, c->max_alloc)) return oom(err);
    } else {
      void *np = realloc(c->rep, (size_t)cap * 2 + 16);
      if (np == NULL) return oom(err);
      c->rep = np;
    }
  }
  int64_t pos = 0;
  if (h->has_v2) {
    if (leaf->max_rep > 0) {
      QV_RETURN_NOT_OK(
          decode_levels(c, levels, h->rep_len, n, leaf->max_rep, c->rep + base, "repetition", err));
    }
    if (leaf->max_def > 0) {
      QV_RETURN_NOT_OK(decode_levels(c, levels + h->rep_len, h->def_len, n, leaf->max_def,
                                     c->def + base, "definition", err));
    }
    (void)levels_len;
  } else {
    if (leaf->max_rep > 0) {
      int64_t u = 0;
      QV_RETURN_NOT_OK(decode_levels_v1(c, h->rep_encoding, p, len, n, leaf->max_rep, c->rep + base,
                                        "repetition", &u, err));
      pos += u;
    }
    if (leaf->max_def > 0) {
      int64_t u = 0;
      QV_RETURN_NOT_OK(decode_levels_v1(c, h->def_encoding, p + pos, len - pos, n, leaf->max_def,
                                        c->def + base, "definition", &u, err));
      pos += u;
    }
  }
  if (leaf->max_rep > 0 && base == 0 && n > 0 && c->rep[0] != 0)
    return col_fail(c, QV_EINVAL, err, "the first repetition level of the chunk is %d, not 0",
                    c->rep[0]);
  int64_t nn = n;
  if (leaf->max_def > 0) {
    nn = 0;
    for (int64_t i = 0; i < n; i++) nn += c->def[base + i] == leaf->max_def;
  }
  c->n_levels = need;
  if (leaf->conv == QV_PQ_CONV_NULL) return QV_OK;
  return decode_values(c, h->encoding, p + pos, len - pos, nn, err);
}

/* Decode column chunk `col` of row group `g` into c. */
static qv_status read_chunk(const qv_parquet_file *f, int32_t g, int32_t col, pq_col *c,
                            qv_error *err) {
  const qv_pq_column_meta *m = &f->meta.row_groups[g].columns[col].meta;
  const uint8_t *file = f->buf->data;
  int64_t fsize = f->buf->size;
  c->vals.width = phys_width(c->leaf);
  c->dict.width = c->vals.width;
  int64_t start = m->data_page_offset;
  if (m->dictionary_page_offset > 0 && m->dictionary_page_offset < start)
    start = m->dictionary_page_offset;
  int64_t end;
  if (qv_add_overflow(start, m->total_compressed_size, &end) || end > fsize - 8) {
    c->offset = start;
    return col_fail(c, QV_EINVAL, err, "column chunk of %lld bytes runs past the data (%lld bytes)",
                    (long long)m->total_compressed_size, (long long)(fsize - 8));
  }
  /* Old parquet-mr writers left the dictionary page out of
   * total_compressed_size (PARQUET-816): pages may run up to 100 bytes
   * past the declared end, never past the data. */
  int64_t page_end = end + 100 < fsize - 8 ? end + 100 : fsize - 8;
  /* Room for the whole chunk up front when its size is plausible (a hint
   * from the metadata, capped: growth still works past it), so values
   * and levels are not copied by repeated growth. */
  int64_t hint = m->num_values < ((int64_t)1 << 26) ? m->num_values : ((int64_t)1 << 26);
  if (c->leaf->max_rep == 0 && hint > f->meta.row_groups[g].num_rows)
    hint = f->meta.row_groups[g].num_rows;
  if (hint > 0 && hint * 2 <= c->max_alloc) {
    if (c->leaf->max_def > 0) (void)grow((void **)&c->def, &c->lv_cap, hint, 2, c->max_alloc);
    if (c->leaf->max_rep > 0) {
      int64_t cap = 0;
      (void)grow((void **)&c->rep, &cap, c->lv_cap > hint ? c->lv_cap : hint, 2, c->max_alloc);
      if (c->leaf->max_def == 0) c->lv_cap = cap;
    }
    if (c->vals.width > 0 && hint * c->vals.width <= c->max_alloc)
      (void)grow((void **)&c->vals.data, &c->vals.cap, hint * c->vals.width, 1, c->max_alloc);
    else if (c->vals.width == 0)
      (void)grow((void **)&c->vals.offs, &c->vals.offs_cap, hint + 1, 8, c->max_alloc);
  }
  int64_t pos = start, values = 0;
  qv_status st = QV_OK;
  int64_t rows_left = f->meta.row_groups[g].num_rows;
  while (st == QV_OK && pos < end && values < m->num_values) {
    c->offset = pos;
    qv_pq_page_header h;
    int64_t hlen = 0;
    st = qv_pq_decode_page_header(file + pos, page_end - pos, &h, &hlen, err);
    if (st != QV_OK) {
      st = col_fail(c, st, err, "%s", err ? err->message : "bad page header");
      break;
    }
    const uint8_t *body = file + pos + hlen;
    if (h.compressed_size > page_end - pos - hlen) {
      st = col_fail(c, QV_EINVAL, err, "page of %d bytes runs past the column chunk",
                    h.compressed_size);
      break;
    }
    pos += hlen + h.compressed_size;
    if (h.has_crc && (uint32_t)crc32(0, body, (uInt)h.compressed_size) != h.crc) {
      st = col_fail(c, QV_EINVAL, err, "page CRC mismatch: header says %08x, the data has %08x",
                    h.crc, (uint32_t)crc32(0, body, (uInt)h.compressed_size));
      break;
    }
    if (h.type == QV_PQ_INDEX_PAGE) {
      c->page++;
      continue;
    }
    if (h.type != QV_PQ_DICTIONARY_PAGE && h.type != QV_PQ_DATA_PAGE &&
        h.type != QV_PQ_DATA_PAGE_V2) {
      c->page++;
      continue; /* unknown page types are skipped, as other readers do */
    }
    if (h.uncompressed_size > c->max_alloc) {
      st = col_fail(c, QV_ENOMEM, err, "page declares %d uncompressed bytes, over the bound %lld",
                    h.uncompressed_size, (long long)c->max_alloc);
      break;
    }
    /* v2: levels stay uncompressed in front */
    int64_t lv = 0;
    if (h.type == QV_PQ_DATA_PAGE_V2) {
      if (!h.has_v2) {
        st = col_fail(c, QV_EINVAL, err, "DATA_PAGE_V2 without its header");
        break;
      }
      lv = (int64_t)h.rep_len + h.def_len;
      if (lv > h.compressed_size || lv > h.uncompressed_size) {
        st =
            col_fail(c, QV_EINVAL, err, "levels of %lld bytes larger than the page", (long long)lv);
        break;
      }
    } else if (h.type == QV_PQ_DATA_PAGE && !h.has_v1) {
      st = col_fail(c, QV_EINVAL, err, "DATA_PAGE without its header");
      break;
    } else if (h.type == QV_PQ_DICTIONARY_PAGE && !h.has_dict) {
      st = col_fail(c, QV_EINVAL, err, "DICTIONARY_PAGE without its header");
      break;
    }
    const uint8_t *data = body + lv;
    int64_t dlen = h.uncompressed_size - lv;
    bool compressed =
        m->codec != QV_PQ_UNCOMPRESSED && !(h.type == QV_PQ_DATA_PAGE_V2 && !h.is_compressed);
    if (compressed && dlen == 0 && h.compressed_size - lv == 0) {
      data = body + lv; /* an empty page: nothing to decompress */
    } else if (compressed) {
      if (!grow((void **)&c->zbuf, &c->zbuf_cap, dlen + 1, 1, c->max_alloc)) {
        st = oom(err);
        break;
      }
      st = qv_pq_decompress(m->codec, body + lv, h.compressed_size - lv, c->zbuf, dlen, err);
      if (st != QV_OK) {
        st = col_fail(c, st, err, "%s", err ? err->message : "");
        break;
      }
      data = c->zbuf;
    } else if (h.compressed_size != h.uncompressed_size) {
      st = col_fail(c, QV_EINVAL, err, "uncompressed page of %d bytes declares %d",
                    h.compressed_size, h.uncompressed_size);
      break;
    }
    if (h.type == QV_PQ_DICTIONARY_PAGE) {
      if (c->has_dict) {
        st = col_fail(c, QV_EINVAL, err, "a second dictionary page");
        break;
      }
      if (h.encoding != QV_PQ_PLAIN && h.encoding != QV_PQ_PLAIN_DICTIONARY) {
        st = col_fail(c, QV_ENOTSUP, err, "dictionary page in encoding %s",
                      qv_pq_encoding_name(h.encoding));
        break;
      }
      if (c->leaf->physical == QV_PQ_BOOLEAN) {
        st = col_fail(c, QV_EINVAL, err, "a dictionary page on a BOOLEAN column");
        break;
      }
      st = decode_plain(c, &c->dict, data, dlen, h.num_values, err);
      c->has_dict = true;
    } else {
      if (c->leaf->max_rep == 0 && h.num_values > rows_left) {
        st = col_fail(c, QV_EINVAL, err, "page of %d values, only %lld rows left in the row group",
                      h.num_values, (long long)rows_left);
        break;
      }
      st = decode_data_page(c, &h, data, dlen, body, lv, err);
      values += h.num_values;
      if (c->leaf->max_rep == 0) rows_left -= h.num_values;
    }
    c->page++;
  }
  if (st == QV_OK && values != m->num_values) {
    c->offset = pos;
    st = col_fail(c, QV_EINVAL, err, "the column chunk holds %lld values, its metadata says %lld",
                  (long long)values, (long long)m->num_values);
  }
  if (st == QV_OK && c->leaf->max_def == 0 && c->leaf->max_rep == 0) c->n_levels = values;
  return st;
}

/* ------------------------------------------------------------------------ */
/* Assembly                                                                  */

typedef struct asm_ctx {
  pq_col *cols;
  qv_error *err;
  int32_t rg;
  const char *file;
} asm_ctx;

static inline int16_t def_at(const pq_col *c, int64_t i) {
  return c->def ? c->def[i] : c->leaf->max_def;
}
static inline int16_t rep_at(const pq_col *c, int64_t i) { return c->rep ? c->rep[i] : 0; }

static inline bool is_slot(const qv_pq_node *n, const pq_col *c, int64_t i) {
  return rep_at(c, i) <= n->rep_ctx && def_at(c, i) >= n->def_ctx;
}

static qv_status alloc_buf(int64_t size, qv_buffer **out, qv_error *err) {
  return qv_buffer_alloc(size, out, err);
}

/* Validity of n's slots (NULL when none is null); *out_len slots. */
static qv_status slots_validity(const qv_pq_node *n, const pq_col *c, int64_t *out_len,
                                qv_buffer **out_valid, int64_t *out_nulls, qv_error *err) {
  int64_t len = 0, nulls = 0;
  bool simple = c->rep == NULL && n->def_ctx == 0;
  const int16_t *def = c->def, *rep = c->rep;
  int64_t nl = c->n_levels;
  int16_t rc = n->rep_ctx, dc = n->def_ctx, dn = n->def;
  *out_valid = NULL;
  *out_nulls = 0;
  if (!simple && n->nullable && rep != NULL && def != NULL) {
    /* one branchless pass: the validity bits of the slots packed 64 at a
     * time into a bitmap sized for every level (slots <= levels) */
    qv_buffer *v = NULL;
    QV_RETURN_NOT_OK(alloc_buf((nl + 63) / 64 * 8, &v, err));
    uint64_t *words = (uint64_t *)v->data, acc = 0;
    int nb = 0;
    int64_t w = 0, valid = 0;
    for (int64_t i = 0; i < nl; i++) {
      uint64_t slot = (uint64_t)((rep[i] <= rc) & (def[i] >= dc));
      acc |= (slot & (uint64_t)(def[i] >= dn)) << nb;
      nb += (int)slot;
      if (nb == 64) {
        valid += __builtin_popcountll(acc);
        words[w++] = acc;
        acc = 0;
        nb = 0;
      }
    }
    if (nb > 0) {
      valid += __builtin_popcountll(acc);
      words[w] = acc;
    }
    len = w * 64 + nb;
    v->size = (len + 7) / 8;
    *out_len = len;
    if (valid == len) {
      qv_buffer_unref(v);
      return QV_OK;
    }
    *out_valid = v;
    *out_nulls = len - valid;
    return QV_OK;
  }
  if (simple) {
    len = nl;
  } else if (rep != NULL && def != NULL) {
    for (int64_t i = 0; i < nl; i++) len += rep[i] <= rc && def[i] >= dc;
  } else {
    for (int64_t i = 0; i < nl; i++) len += is_slot(n, c, i);
  }
  *out_len = len;
  if (!n->nullable || def == NULL) return QV_OK;
  qv_buffer *v = NULL;
  QV_RETURN_NOT_OK(alloc_buf((len + 7) / 8, &v, err));
  uint8_t *bits = v->data;
  int64_t valid = 0;
  if (simple) {
    int64_t i = 0;
    for (; i + 8 <= nl; i += 8) {
      uint8_t b = 0;
      for (int k = 0; k < 8; k++) b |= (uint8_t)((def[i + k] >= dn) << k);
      bits[i >> 3] = b;
      valid += __builtin_popcount(b);
    }
    for (; i < nl; i++)
      if (def[i] >= dn) {
        qv_bit_set(bits, i);
        valid++;
      }
    nulls = nl - valid;
  } else {
    int64_t s = 0;
    for (int64_t i = 0; i < nl; i++) {
      if (!is_slot(n, c, i)) continue;
      if (def[i] >= dn) qv_bit_set(bits, s);
      else nulls++;
      s++;
    }
  }
  if (nulls == 0) {
    qv_buffer_unref(v);
    v = NULL;
  }
  *out_valid = v;
  *out_nulls = nulls;
  return QV_OK;
}

static qv_status assemble(asm_ctx *a, const qv_pq_node *n, qv_array **out);

static void release_free(void *ctx, void *data, int64_t size) {
  (void)ctx;
  (void)size;
  free(data);
}

static void store_be_decimal(const uint8_t *src, int64_t len, uint8_t *dst, int ow) {
  /* big-endian two's complement of len bytes -> little-endian ow bytes */
  uint8_t fill = len > 0 && (src[0] & 0x80) ? 0xff : 0x00;
  memset(dst, fill, (size_t)ow);
  for (int64_t i = 0; i < len && i < ow; i++) dst[i] = src[len - 1 - i];
}

static qv_status assemble_leaf(asm_ctx *a, const qv_pq_node *n, qv_array **out) {
  pq_col *c = &a->cols[n->leaf];
  qv_error *err = a->err;
  int64_t len = 0, nulls = 0;
  qv_buffer *valid = NULL;
  QV_RETURN_NOT_OK(slots_validity(n, c, &len, &valid, &nulls, err));
  if (n->conv == QV_PQ_CONV_NULL) {
    qv_buffer_unref(valid);
    return qv_array_nulls(n->type, len, out, err);
  }
  /* value index per slot: slot s holds value vi[s] (or none when null).
   * Every level holding a value (def == max_def) is a slot of the leaf,
   * so when there are as many slots as values, slot s holds value s. */
  bool dense = c->vals.count == len;
  bool has_def = c->def != NULL;
  int64_t *vi = NULL;
  if (!dense) {
    vi = malloc((size_t)(len > 0 ? len : 1) * sizeof *vi);
    if (vi == NULL) {
      qv_buffer_unref(valid);
      return oom(err);
    }
    int64_t s = 0, v = 0;
    if (has_def && c->rep != NULL) {
      const int16_t *def = c->def, *rp = c->rep;
      int16_t rc = n->rep_ctx, dc = n->def_ctx, md = n->max_def;
      for (int64_t i = 0; i < c->n_levels; i++) {
        int64_t has_value = def[i] == md;
        int64_t slot = (rp[i] <= rc) & (def[i] >= dc);
        if (s < len) vi[s] = has_value ? v : -1;
        s += slot;
        v += has_value;
      }
    } else {
      for (int64_t i = 0; i < c->n_levels; i++) {
        bool has_value = !has_def || c->def[i] == n->max_def;
        if (is_slot(n, c, i)) vi[s++] = has_value ? v : -1;
        if (has_value) v++;
      }
    }
  }
  int64_t nvals = c->vals.count;
  if (dense && nvals != len) {
    qv_buffer_unref(valid);
    return qv_error_set(err, QV_EINVAL, "%s: row group %d, column '%s': %lld values for %lld slots",
                        a->file, a->rg, n->name, (long long)nvals, (long long)len);
  }
  qv_type *t = n->type;
  qv_array *arr = NULL;
  qv_status st = QV_OK;
  if (t->id == QV_BINARY || t->id == QV_STRING) {
    pq_vals *v = &c->vals;
    int64_t total = 0;
    for (int64_t s = 0; s < len; s++) {
      int64_t k = dense ? s : vi[s];
      if (k >= 0) total += v->offs[k + 1] - v->offs[k];
    }
    if (total > INT32_MAX) {
      st = qv_error_set(err, QV_ENOTSUP,
                        "%s: row group %d, column '%s': %lld bytes of strings, over the 2 GiB of "
                        "one array",
                        a->file, a->rg, n->name, (long long)total);
    }
    qv_buffer *offs = NULL, *data = NULL;
    bool handover = dense && v->count > 0 && v->data != NULL;
    if (st == QV_OK) st = alloc_buf((len + 1) * 4, &offs, err);
    if (st == QV_OK && handover) {
      st = qv_buffer_wrap(v->data, total, release_free, NULL, &data, err);
      if (st == QV_OK) {
        v->data = NULL;
        v->cap = 0;
      }
    } else if (st == QV_OK) {
      st = alloc_buf(total, &data, err);
    }
    if (st == QV_OK) {
      int32_t *o = (int32_t *)offs->data;
      int64_t pos = 0;
      o[0] = 0;
      if (handover) {
        for (int64_t s = 0; s < len; s++) o[s + 1] = (int32_t)v->offs[s + 1];
      } else {
        for (int64_t s = 0; s < len; s++) {
          int64_t k = vi ? vi[s] : s;
          if (k >= 0) {
            int64_t l = v->offs[k + 1] - v->offs[k];
            if (l > 0) memcpy(data->data + pos, v->data + v->offs[k], (size_t)l);
            pos += l;
          }
          o[s + 1] = (int32_t)pos;
        }
      }
      arr = qv_array_new(t, 3, 0);
      if (arr == NULL) st = oom(err);
    }
    if (st == QV_OK && t->id == QV_STRING) {
      /* UTF-8, per value: the whole data valid and no value starting
       * inside a character */
      const int32_t *o = (const int32_t *)offs->data;
      bool ok = qv_utf8_valid_prefix(data->data, total) == total;
      for (int64_t s = 0; s < len && ok; s++)
        ok = o[s + 1] == o[s] || (data->data[o[s]] & 0xc0) != 0x80;
      if (!ok)
        st =
            qv_error_set(err, QV_EINVAL, "%s: row group %d, column '%s': invalid UTF-8 in a string",
                         a->file, a->rg, n->name);
    }
    if (st == QV_OK) {
      arr->buffers[0] = valid;
      arr->buffers[1] = offs;
      arr->buffers[2] = data;
      valid = NULL;
    } else {
      qv_array_unref(arr);
      arr = NULL;
      qv_buffer_unref(offs);
      qv_buffer_unref(data);
    }
  } else if (t->id == QV_BOOL) {
    qv_buffer *bits = NULL;
    st = alloc_buf((len + 7) / 8, &bits, err);
    if (st == QV_OK) {
      for (int64_t s = 0; s < len; s++) {
        int64_t k = dense ? s : vi[s];
        if (k >= 0 && c->vals.data[k]) qv_bit_set(bits->data, s);
      }
      arr = qv_array_new(t, 2, 0);
      if (arr == NULL) {
        qv_buffer_unref(bits);
        st = oom(err);
      } else {
        arr->buffers[0] = valid;
        arr->buffers[1] = bits;
        valid = NULL;
      }
    }
  } else {
    int ow = qv_type_byte_width(t);
    pq_vals *v = &c->vals;
    int w = v->width;
    qv_buffer *vb = NULL;
    if (dense && n->conv == QV_PQ_CONV_COPY && w == ow && v->data != NULL && c->leaf == n) {
      /* hand the decoded values over: no copy */
      st = qv_buffer_wrap(v->data, len * ow, release_free, NULL, &vb, err);
      if (st == QV_OK) {
        v->data = NULL;
        v->cap = 0;
        v->len = 0;
      }
      if (st == QV_OK) {
        arr = qv_array_new(t, 2, 0);
        if (arr == NULL) st = oom(err);
      }
      if (st == QV_OK) {
        arr->buffers[0] = valid;
        arr->buffers[1] = vb;
        valid = NULL;
        vb = NULL;
      }
      qv_buffer_unref(vb);
      goto done;
    }
    st = alloc_buf(len * ow, &vb, err);
    if (st == QV_OK && n->conv == QV_PQ_CONV_COPY && w != ow && w != 0)
      st = qv_error_set(err, QV_EINVAL, "%s: column '%s': %d-byte values for a %d-byte type",
                        a->file, n->name, w, ow);
    if (st == QV_OK) {
      uint8_t *o = vb->data;
      if (dense && n->conv == QV_PQ_CONV_COPY) {
        if (len > 0) memcpy(o, v->data, (size_t)(len * ow));
      } else {
        for (int64_t s = 0; s < len && st == QV_OK; s++) {
          int64_t k = dense ? s : vi[s];
          if (k < 0) continue;
          uint8_t *dst = o + s * ow;
          switch (n->conv) {
            case QV_PQ_CONV_COPY: memcpy(dst, v->data + k * w, (size_t)ow); break;
            case QV_PQ_CONV_NARROW: memcpy(dst, v->data + k * 4, (size_t)ow); break;
            case QV_PQ_CONV_DECIMAL_INT: {
              int64_t x;
              if (w == 4) {
                int32_t y;
                memcpy(&y, v->data + k * 4, 4);
                x = y;
              } else {
                memcpy(&x, v->data + k * 8, 8);
              }
              memset(dst, x < 0 ? 0xff : 0, (size_t)ow);
              memcpy(dst, &x, 8);
              break;
            }
            case QV_PQ_CONV_DECIMAL_BYTES: {
              const uint8_t *src;
              int64_t sl;
              if (w > 0) {
                src = v->data + k * w;
                sl = w;
              } else {
                src = v->data + v->offs[k];
                sl = v->offs[k + 1] - v->offs[k];
              }
              if (sl > ow) {
                st = qv_error_set(err, QV_EINVAL,
                                  "%s: column '%s': a decimal of %lld bytes, wider than %d",
                                  a->file, n->name, (long long)sl, ow);
                break;
              }
              store_be_decimal(src, sl, dst, ow);
              break;
            }
            case QV_PQ_CONV_INT96: {
              const uint8_t *src = v->data + k * 12;
              int64_t nanos;
              int32_t jd;
              memcpy(&nanos, src, 8);
              memcpy(&jd, src + 8, 4);
              int64_t ns = (int64_t)((uint64_t)((int64_t)jd - 2440588) * UINT64_C(86400000000000) +
                                     (uint64_t)nanos);
              memcpy(dst, &ns, 8);
              break;
            }
          }
        }
      }
      if (st == QV_OK) {
        arr = qv_array_new(t, 2, 0);
        if (arr == NULL) st = oom(err);
      }
    }
    if (st == QV_OK) {
      arr->buffers[0] = valid;
      arr->buffers[1] = vb;
      valid = NULL;
    } else {
      qv_buffer_unref(vb);
    }
  }
done:
  free(vi);
  qv_buffer_unref(valid);
  if (st != QV_OK) {
    qv_array_unref(arr);
    return st;
  }
  arr->length = len;
  arr->null_count = arr->buffers[0] ? nulls : 0;
  *out = arr;
  return QV_OK;
}

static qv_status assemble(asm_ctx *a, const qv_pq_node *n, qv_array **out) {
  if (n->kind == QV_PQ_NODE_LEAF) return assemble_leaf(a, n, out);
  qv_error *err = a->err;
  const pq_col *c = &a->cols[n->first_leaf];
  int64_t len = 0, nulls = 0;
  qv_buffer *valid = NULL;
  QV_RETURN_NOT_OK(slots_validity(n, c, &len, &valid, &nulls, err));
  qv_status st = QV_OK;
  qv_array *arr = NULL;
  if (n->kind == QV_PQ_NODE_STRUCT) {
    arr = qv_array_new(n->type, 1, n->n_children);
    if (arr == NULL) st = oom(err);
    for (int32_t i = 0; i < n->n_children && st == QV_OK; i++) {
      st = assemble(a, n->children[i], &arr->children[i]);
      if (st == QV_OK && arr->children[i]->length != len)
        st = qv_error_set(err, QV_EINVAL,
                          "%s: row group %d: struct '%s' has %lld slots, its child '%s' %lld "
                          "(the levels of its columns disagree)",
                          a->file, a->rg, n->name, (long long)len, n->children[i]->name,
                          (long long)arr->children[i]->length);
    }
  } else {
    const qv_pq_node *e = n->children[0];
    qv_buffer *offs = NULL;
    st = alloc_buf((len + 1) * 4, &offs, err);
    int64_t elems = 0;
    if (st == QV_OK) {
      int32_t *o = (int32_t *)offs->data;
      int64_t s = 0;
      if (c->rep != NULL && c->def != NULL) {
        const int16_t *rep = c->rep, *def = c->def;
        int16_t nr = n->rep_ctx, nd = n->def_ctx, er = e->rep_ctx, ed = e->def_ctx;
        /* branchless: o[s] is written at every level and kept when the
         * level is a slot (s stays <= len; o[len] is set below) */
        for (int64_t i = 0; i < c->n_levels; i++) {
          o[s] = (int32_t)elems;
          s += (rep[i] <= nr) & (def[i] >= nd);
          elems += (rep[i] <= er) & (def[i] >= ed);
        }
      } else {
        for (int64_t i = 0; i < c->n_levels; i++) {
          if (is_slot(n, c, i)) o[s++] = (int32_t)elems;
          if (is_slot(e, c, i)) elems++;
        }
      }
      if (elems > INT32_MAX)
        st = qv_error_set(err, QV_ENOTSUP, "%s: list '%s' of more than 2^31 elements", a->file,
                          n->name);
      o[len] = (int32_t)elems;
    }
    if (st == QV_OK) {
      arr = qv_array_new(n->type, 2, 1);
      if (arr == NULL) st = oom(err);
    }
    if (st == QV_OK) {
      arr->buffers[1] = offs;
      offs = NULL;
      st = assemble(a, e, &arr->children[0]);
      if (st == QV_OK && arr->children[0]->length != elems)
        st = qv_error_set(err, QV_EINVAL,
                          "%s: row group %d: list '%s' has %lld elements, its values %lld", a->file,
                          a->rg, n->name, (long long)elems, (long long)arr->children[0]->length);
    }
    qv_buffer_unref(offs);
  }
  if (st != QV_OK) {
    qv_array_unref(arr);
    qv_buffer_unref(valid);
    return st;
  }
  arr->buffers[0] = valid;
  arr->length = len;
  arr->null_count = valid ? nulls : 0;
  *out = arr;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading row groups                                                        */

static void mark_leaves(const qv_pq_node *n, bool *want) {
  if (n->kind == QV_PQ_NODE_LEAF) want[n->leaf] = true;
  for (int32_t i = 0; i < n->n_children; i++) mark_leaves(n->children[i], want);
}

/* The values of `a` as a dictionary array of type `dt` (values in order
 * of first appearance, as Arrow's dictionary builders): for binary-like
 * and integer value types. */
static bool dict_encodable(const qv_type *from, const qv_type *dt) {
  if (dt->id != QV_DICTIONARY || dt->value_type == NULL ||
      !qv_type_equals(from, dt->value_type, false))
    return false;
  qv_type_id id = from->id;
  return id == QV_STRING || id == QV_BINARY || id == QV_LARGE_STRING || id == QV_LARGE_BINARY ||
         qv_type_id_is_integer(id);
}

/* Append the values of `a` to dictionary builder b and finish the
 * array (the builder keeps its dictionary, so every finished array's
 * dictionary is a prefix of the next one's). */
static qv_status dict_encode(qv_builder *b, qv_array *a, qv_array **out, qv_error *err) {
  qv_status st = qv_builder_reserve(b, a->length, err);
  qv_type_id id = a->type->id;
  const uint8_t *data = a->n_buffers > 2 && a->buffers[2] ? a->buffers[2]->data : NULL;
  for (int64_t i = 0; i < a->length && st == QV_OK; i++) {
    if (!qv_array_is_valid(a, i)) st = qv_builder_append_null(b, err);
    else if (qv_type_id_is_integer(id)) {
      if (id == QV_UINT64) st = qv_builder_append_uint(b, qv_array_uint_at(a, i), err);
      else st = qv_builder_append_int(b, qv_array_int_at(a, i), err);
    } else {
      int64_t s = qv_array_offset_at(a, i), e = qv_array_offset_at(a, i + 1);
      st = qv_builder_append_bytes(b, data ? data + s : NULL, e - s, err);
    }
  }
  if (st == QV_OK) st = qv_builder_finish(b, out, err);
  return st;
}

/* Column i of every batch dictionary-encoded to type dt, all batches
 * sharing the final dictionary (one dictionary for the whole file, as the
 * IPC file format needs). */
static qv_status dict_encode_column(qv_array **batches, int64_t n, int32_t i, qv_type *dt,
                                    qv_error *err) {
  qv_builder *b = NULL;
  QV_RETURN_NOT_OK(qv_builder_new(dt, &b, err));
  qv_status st = QV_OK;
  for (int64_t k = 0; k < n && st == QV_OK; k++) {
    qv_array *enc = NULL;
    st = dict_encode(b, batches[k]->children[i], &enc, err);
    if (st == QV_OK) {
      qv_array_unref(batches[k]->children[i]);
      batches[k]->children[i] = enc;
    }
  }
  qv_builder_free(b);
  if (st != QV_OK || n == 0) return st;
  qv_array *last = batches[n - 1]->children[i]->dictionary;
  for (int64_t k = 0; k + 1 < n; k++) {
    qv_array *c = batches[k]->children[i];
    qv_array_unref(c->dictionary);
    c->dictionary = qv_array_ref(last);
  }
  return QV_OK;
}

/* string/binary -> string_view/binary_view, and list -> fixed_size_list:
 * conversions qv_array_cast does not make, done here for the stored
 * ARROW:schema's types. */
static bool view_convertible(const qv_type *from, const qv_type *to) {
  return (from->id == QV_STRING && to->id == QV_STRING_VIEW) ||
         (from->id == QV_BINARY && to->id == QV_BINARY_VIEW);
}

static bool fsl_convertible(const qv_type *from, const qv_type *to) {
  return from->id == QV_LIST && to->id == QV_FIXED_SIZE_LIST && to->list_size > 0 &&
         from->n_children == 1 && to->n_children == 1 &&
         qv_type_equals(from->children[0].type, to->children[0].type, false);
}

static qv_status to_view(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  qv_buffer *views = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(a->length * QV_VIEW_SIZE, &views, err));
  const uint8_t *data = a->buffers[2] ? a->buffers[2]->data : NULL;
  for (int64_t i = 0; i < a->length; i++) {
    int64_t s = qv_array_offset_at(a, i), e = qv_array_offset_at(a, i + 1);
    int32_t len = (int32_t)(e - s), off = (int32_t)s, bi = 0;
    uint8_t *v = views->data + i * QV_VIEW_SIZE;
    memcpy(v, &len, 4);
    if (len <= QV_VIEW_INLINE_MAX) {
      if (len > 0) memcpy(v + 4, data + s, (size_t)len);
    } else {
      memcpy(v + 4, data + s, QV_VIEW_PREFIX_SIZE);
      memcpy(v + QV_VIEW_BUFFER_INDEX_AT, &bi, 4);
      memcpy(v + QV_VIEW_OFFSET_AT, &off, 4);
    }
  }
  qv_array *r = qv_array_new(to, 3, 0);
  if (r == NULL) {
    qv_buffer_unref(views);
    return oom(err);
  }
  r->buffers[0] = qv_buffer_ref(a->buffers[0]);
  r->buffers[1] = views;
  r->buffers[2] = a->buffers[2] ? qv_buffer_ref(a->buffers[2]) : NULL;
  if (r->buffers[2] == NULL) r->n_buffers = 2;
  r->length = a->length;
  r->null_count = a->null_count;
  *out = r;
  return QV_OK;
}

static qv_status to_fsl(qv_array *a, qv_type *to, qv_array **out, qv_error *err) {
  int64_t k = to->list_size, n = a->length;
  qv_array *child = a->children[0];
  int64_t *idx = malloc((size_t)(n * k > 0 ? n * k : 1) * sizeof *idx);
  if (idx == NULL) return oom(err);
  qv_status st = QV_OK;
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    int64_t s = qv_array_offset_at(a, i), e = qv_array_offset_at(a, i + 1);
    bool valid = qv_array_is_valid(a, i);
    if (valid && e - s != k) {
      st = qv_error_set(err, QV_EINVAL,
                        "list of %lld values where the stored schema says fixed_size_list[%lld]",
                        (long long)(e - s), (long long)k);
      break;
    }
    for (int64_t j = 0; j < k; j++) idx[i * k + j] = valid ? s + j : 0;
  }
  qv_array *c2 = NULL;
  if (st == QV_OK) {
    if (child->length > 0) st = qv_array_take(child, idx, n * k, &c2, err);
    else st = qv_array_nulls(child->type, n * k, &c2, err);
  }
  free(idx);
  if (st != QV_OK) return st;
  qv_array *r = qv_array_new(to, 1, 1);
  if (r == NULL) {
    qv_array_unref(c2);
    return oom(err);
  }
  r->buffers[0] = qv_buffer_ref(a->buffers[0]);
  r->children[0] = c2;
  r->length = n;
  r->null_count = a->null_count;
  *out = r;
  return QV_OK;
}

typedef struct read_job {
  qv_parquet_file *f;
  const int32_t *columns;
  int32_t n_columns;
  const int32_t *row_groups;
  qv_type *batch_type; /* STRUCT of the output columns */
  qv_type **cast_to;   /* per output column: target type or NULL */
  int64_t max_alloc;
  qv_array **batches;
  qv_status *status;
  qv_error *errors;
  qv_pool *leaf_pool; /* set: the leaves of a row group decoded on it */
} read_job;

/* One column chunk of a row group, as a pool task (leaf-parallel reads). */
typedef struct chunk_job {
  qv_parquet_file *f;
  int32_t g;
  pq_col *cols;
  const int32_t *leaves; /* the leaves to decode */
  qv_status *status;
  qv_error *errors;
} chunk_job;

static void chunk_task(void *ctx, int64_t i, int worker) {
  (void)worker;
  chunk_job *j = ctx;
  int32_t l = j->leaves[i];
  j->status[i] = read_chunk(j->f, j->g, l, &j->cols[l], &j->errors[i]);
  __atomic_add_fetch(&j->f->decoded_chunks, 1, __ATOMIC_RELAXED);
}

/* The wanted leaves of row group g decoded on `pool`, in parallel. */
static qv_status read_chunks_parallel(qv_parquet_file *f, int32_t g, pq_col *cols, const bool *want,
                                      qv_pool *pool, qv_error *err) {
  int32_t n = 0;
  int32_t *leaves = malloc(sizeof *leaves * (size_t)(f->n_leaves > 0 ? f->n_leaves : 1));
  qv_status *status = calloc((size_t)(f->n_leaves > 0 ? f->n_leaves : 1), sizeof *status);
  qv_error *errors = calloc((size_t)(f->n_leaves > 0 ? f->n_leaves : 1), sizeof *errors);
  qv_status st = leaves && status && errors ? QV_OK : oom(err);
  for (int32_t l = 0; st == QV_OK && l < f->n_leaves; l++)
    if (want[l]) leaves[n++] = l;
  if (st == QV_OK) {
    chunk_job cj = {f, g, cols, leaves, status, errors};
    qv_pool_run(pool, n, chunk_task, &cj);
    st = qv_pool_check(pool, err);
    for (int32_t i = 0; i < n && st == QV_OK; i++)
      if (status[i] != QV_OK) {
        st = status[i];
        if (err) *err = errors[i];
      }
  }
  free(leaves);
  free(status);
  free(errors);
  return st;
}

static qv_status read_row_group(read_job *j, int32_t g, qv_array **out, qv_error *err) {
  qv_parquet_file *f = j->f;
  pq_col *cols = cols_take(f);
  bool *want = calloc((size_t)(f->n_leaves > 0 ? f->n_leaves : 1), 1);
  if (cols == NULL || want == NULL) {
    cols_give(f, cols);
    free(want);
    return oom(err);
  }
  for (int32_t i = 0; i < j->n_columns; i++) mark_leaves(f->root->children[j->columns[i]], want);
  qv_status st = QV_OK;
  for (int32_t l = 0; l < f->n_leaves; l++) {
    cols[l].leaf = f->leaves[l];
    cols[l].max_alloc = j->max_alloc;
    cols[l].file = f->name;
    cols[l].rg = g;
  }
  if (j->leaf_pool != NULL) st = read_chunks_parallel(f, g, cols, want, j->leaf_pool, err);
  for (int32_t l = 0; j->leaf_pool == NULL && l < f->n_leaves && st == QV_OK; l++) {
    if (want[l]) {
      st = read_chunk(f, g, l, &cols[l], err);
      __atomic_add_fetch(&f->decoded_chunks, 1, __ATOMIC_RELAXED);
    }
  }
  int64_t rows = f->meta.row_groups[g].num_rows;
  qv_array *batch = NULL;
  if (st == QV_OK) {
    batch = qv_array_new(j->batch_type, 1, j->n_columns);
    if (batch == NULL) st = oom(err);
  }
  asm_ctx a = {cols, err, g, f->name};
  for (int32_t i = 0; i < j->n_columns && st == QV_OK; i++) {
    const qv_pq_node *n = f->root->children[j->columns[i]];
    qv_array *col = NULL;
    st = assemble(&a, n, &col);
    if (st == QV_OK && col->length != rows)
      st =
          qv_error_set(err, QV_EINVAL, "%s: row group %d: column '%s' has %lld rows, expected %lld",
                       f->name, g, n->name, (long long)col->length, (long long)rows);
    if (st == QV_OK && j->cast_to[i] != NULL) {
      qv_array *cast = NULL;
      if (dict_encodable(col->type, j->cast_to[i])) {
        cast = col; /* dictionary-encoded after all row groups (one dictionary) */
      } else if (view_convertible(col->type, j->cast_to[i])) {
        st = to_view(col, j->cast_to[i], &cast, err);
        qv_array_unref(col);
      } else if (fsl_convertible(col->type, j->cast_to[i])) {
        st = to_fsl(col, j->cast_to[i], &cast, err);
        qv_array_unref(col);
      } else {
        st = qv_array_cast(col, j->cast_to[i], &cast, err);
        qv_array_unref(col);
      }
      col = cast;
    }
    if (st == QV_OK) batch->children[i] = col;
    else qv_array_unref(col);
  }
  cols_give(f, cols);
  free(want);
  if (st != QV_OK) {
    qv_array_unref(batch);
    return st;
  }
  batch->length = rows;
  batch->null_count = 0;
  *out = batch;
  return QV_OK;
}

static void read_task(void *ctx, int64_t i, int worker) {
  (void)worker;
  read_job *j = ctx;
  j->status[i] = read_row_group(j, j->row_groups[i], &j->batches[i], &j->errors[i]);
}

/* The output struct type of a read (selected columns, target types where
 * they convert: cast_to[i] set) and its schema metadata source. */
static qv_status output_type(const qv_parquet_file *f, const qv_parquet_read_options *o,
                             const int32_t *cols, int32_t n_cols, qv_type **cast_to, qv_type **out,
                             const qv_metadata **out_md, qv_error *err) {
  int32_t nf = f->root->n_children;
  const qv_schema *target = o->arrow_schema;
  if (target != NULL && qv_schema_num_fields(target) != nf) target = NULL;
  qv_type *bt = qv_type_new(QV_STRUCT);
  if (bt == NULL) return oom(err);
  qv_status st = QV_OK;
  for (int32_t i = 0; i < n_cols && st == QV_OK; i++) {
    const qv_field *fld = qv_schema_field(f->schema, cols[i]);
    const qv_field *use = fld;
    qv_type *type = fld->type;
    if (target != NULL) {
      const qv_field *tf = qv_schema_field(target, cols[i]);
      use = tf;
      if (!qv_type_equals(fld->type, tf->type, false)) {
        qv_array *empty = NULL, *cast = NULL;
        qv_error ignored;
        if (dict_encodable(fld->type, tf->type) || view_convertible(fld->type, tf->type) ||
            fsl_convertible(fld->type, tf->type) ||
            (qv_array_nulls(fld->type, 1, &empty, &ignored) == QV_OK &&
             qv_array_cast(empty, tf->type, &cast, &ignored) == QV_OK)) {
          cast_to[i] = tf->type;
          type = tf->type;
        }
        qv_array_unref(empty);
        qv_array_unref(cast);
      }
    }
    st = qv_type_add_child(bt, fld->name, fld->nullable, qv_type_ref(type),
                           use->metadata.n ? &use->metadata : NULL, err);
    if (st != QV_OK) qv_type_unref(type);
  }
  if (st != QV_OK) {
    qv_type_unref(bt);
    return st;
  }
  *out = bt;
  *out_md = target ? &target->metadata : &f->schema->metadata;
  return QV_OK;
}

static qv_status check_selection(const qv_parquet_file *f, const qv_parquet_read_options *o,
                                 int32_t *cols, int32_t n_cols, int32_t *rgs, int32_t n_rgs,
                                 qv_error *err) {
  int32_t nf = f->root->n_children;
  for (int32_t i = 0; i < n_cols; i++) {
    cols[i] = o->n_columns > 0 ? o->columns[i] : i;
    if (cols[i] < 0 || cols[i] >= nf)
      return qv_error_set(err, QV_ERANGE, "%s: no column %d (%d columns)", f->name, cols[i], nf);
  }
  for (int32_t i = 0; rgs && i < n_rgs; i++) {
    rgs[i] = o->n_row_groups > 0 ? o->row_groups[i] : i;
    if (rgs[i] < 0 || rgs[i] >= f->meta.n_row_groups)
      return qv_error_set(err, QV_ERANGE, "%s: no row group %d (%d row groups)", f->name, rgs[i],
                          f->meta.n_row_groups);
  }
  return QV_OK;
}

qv_status qv_parquet_read_schema(const qv_parquet_file *f, const qv_parquet_read_options *options,
                                 qv_schema **out, qv_error *err) {
  qv_parquet_read_options o;
  memset(&o, 0, sizeof o);
  if (options) o = *options;
  int32_t n_cols = o.n_columns > 0 ? o.n_columns : f->root->n_children;
  int32_t *cols = malloc((size_t)(n_cols > 0 ? n_cols : 1) * sizeof *cols);
  qv_type **cast_to = calloc((size_t)(n_cols > 0 ? n_cols : 1), sizeof *cast_to);
  qv_status st = cols && cast_to ? QV_OK : oom(err);
  if (st == QV_OK) st = check_selection(f, &o, cols, n_cols, NULL, 0, err);
  qv_type *bt = NULL;
  const qv_metadata *md = NULL;
  if (st == QV_OK) st = output_type(f, &o, cols, n_cols, cast_to, &bt, &md, err);
  free(cols);
  free(cast_to);
  if (st != QV_OK) return st;
  qv_schema *s = qv_schema_new(bt);
  if (s == NULL) {
    qv_type_unref(bt);
    return oom(err);
  }
  if (qv_metadata_copy(&s->metadata, md, err) != QV_OK) {
    qv_schema_unref(s);
    return oom(err);
  }
  *out = s;
  return QV_OK;
}

qv_status qv_parquet_read(qv_parquet_file *f, const qv_parquet_read_options *options,
                          qv_array ***out_batches, int64_t *out_n, qv_schema **out_schema,
                          qv_error *err) {
  qv_parquet_read_options o;
  memset(&o, 0, sizeof o);
  if (options) o = *options;
  int32_t n_cols = o.n_columns > 0 ? o.n_columns : f->root->n_children;
  int32_t n_rgs = o.n_row_groups > 0 ? o.n_row_groups : f->meta.n_row_groups;
  int32_t *cols = malloc((size_t)(n_cols > 0 ? n_cols : 1) * sizeof *cols);
  int32_t *rgs = malloc((size_t)(n_rgs > 0 ? n_rgs : 1) * sizeof *rgs);
  qv_type **cast_to = calloc((size_t)(n_cols > 0 ? n_cols : 1), sizeof *cast_to);
  qv_array **batches = calloc((size_t)(n_rgs > 0 ? n_rgs : 1), sizeof *batches);
  qv_status *status = calloc((size_t)(n_rgs > 0 ? n_rgs : 1), sizeof *status);
  qv_error *errors = calloc((size_t)(n_rgs > 0 ? n_rgs : 1), sizeof *errors);
  qv_type *bt = NULL;
  const qv_metadata *md = NULL;
  qv_status st = QV_OK;
  if (!cols || !rgs || !cast_to || !batches || !status || !errors) st = oom(err);
  if (st == QV_OK) st = check_selection(f, &o, cols, n_cols, rgs, n_rgs, err);
  if (st == QV_OK) st = output_type(f, &o, cols, n_cols, cast_to, &bt, &md, err);
  if (st == QV_OK) {
    read_job j = {f,
                  cols,
                  n_cols,
                  rgs,
                  bt,
                  cast_to,
                  o.max_alloc > 0 ? o.max_alloc : PQ_DEFAULT_MAX_ALLOC,
                  batches,
                  status,
                  errors,
                  NULL};
    int threads = o.threads > 0 ? o.threads : qv_cpu_count();
    qv_pool *leaf_pool = NULL;
    int64_t sel_rows = 0;
    for (int32_t i = 0; i < n_rgs; i++) sel_rows += f->meta.row_groups[rgs[i]].num_rows;
    /* (big enough to pay for the threads: 64 Ki rows) */
    if (threads > n_rgs && n_cols > 0 && f->n_leaves > 1 && sel_rows >= 65536) {
      /* fewer row groups than threads (a lazy table's one row group, the
       * end of a scan): one row group at a time, its columns in parallel */
      int lt = threads < f->n_leaves ? threads : f->n_leaves;
      qv_error ignored;
      if (qv_pool_new(lt, &leaf_pool, &ignored) == QV_OK) j.leaf_pool = leaf_pool;
    }
    if (threads > n_rgs) threads = n_rgs;
    if (leaf_pool != NULL) {
      for (int32_t i = 0; i < n_rgs; i++) read_task(&j, i, 0);
      qv_pool_free(leaf_pool);
    } else if (threads <= 1) {
      for (int32_t i = 0; i < n_rgs; i++) read_task(&j, i, 0);
    } else {
      qv_pool *pool = NULL;
      if (qv_pool_new(threads, &pool, err) != QV_OK) {
        for (int32_t i = 0; i < n_rgs; i++) read_task(&j, i, 0);
      } else {
        qv_pool_run(pool, n_rgs, read_task, &j);
        st = qv_pool_check(pool, err);
        qv_pool_free(pool);
      }
    }
    for (int32_t i = 0; i < n_rgs && st == QV_OK; i++)
      if (status[i] != QV_OK) {
        st = status[i];
        if (err) *err = errors[i];
      }
    for (int32_t i = 0; i < n_cols && st == QV_OK; i++)
      if (cast_to[i] != NULL &&
          dict_encodable(qv_schema_field(f->schema, cols[i])->type, cast_to[i]))
        st = dict_encode_column(batches, n_rgs, i, cast_to[i], err);
  }
  qv_schema *schema = NULL;
  if (st == QV_OK) {
    schema = qv_schema_new(qv_type_ref(bt));
    if (schema == NULL) st = oom(err);
    else if (qv_metadata_copy(&schema->metadata, md, err) != QV_OK) st = oom(err);
  }
  if (st != QV_OK) {
    for (int32_t i = 0; i < n_rgs; i++) qv_array_unref(batches ? batches[i] : NULL);
    free(batches);
    qv_schema_unref(schema);
  } else {
    *out_batches = batches;
    *out_n = n_rgs;
    if (out_schema) *out_schema = schema;
    else qv_schema_unref(schema);
  }
  qv_type_unref(bt);
  free(cols);
  free(rgs);
  free(cast_to);
  free(status);
  free(errors);
  return st;
}

/* ------------------------------------------------------------------------ */
/* One data page decoded on its own (parquet_page_internal.h, for           */
/* fuzz/fuzz_parquet_page.c): the same decoders read_chunk calls.           */

qv_status qv_pq_page_probe_decode(const qv_pq_page_probe *pr, int64_t *out_values,
                                  int64_t *out_levels, qv_error *err) {
  qv_pq_node leaf;
  memset(&leaf, 0, sizeof leaf);
  leaf.kind = QV_PQ_NODE_LEAF;
  leaf.name = "probe";
  leaf.physical = pr->physical;
  leaf.type_length = pr->type_length;
  leaf.max_def = pr->max_def;
  leaf.max_rep = pr->max_rep;
  leaf.def = pr->max_def;
  leaf.conv = QV_PQ_CONV_COPY;
  if (pr->physical < QV_PQ_BOOLEAN || pr->physical > QV_PQ_FIXED_LEN_BYTE_ARRAY ||
      (pr->physical == QV_PQ_FIXED_LEN_BYTE_ARRAY && pr->type_length < 1) || pr->max_def < 0 ||
      pr->max_rep < 0 || pr->num_values < 0)
    return qv_error_set(err, QV_EINVAL, "page probe: bad column description");
  pq_col c;
  memset(&c, 0, sizeof c);
  c.leaf = &leaf;
  c.file = "page probe";
  c.max_alloc = pr->max_alloc > 0 ? pr->max_alloc : PQ_DEFAULT_MAX_ALLOC;
  c.vals.width = phys_width(&leaf);
  c.dict.width = c.vals.width;
  qv_status st = QV_OK;
  if (pr->dict != NULL) {
    if (pr->physical == QV_PQ_BOOLEAN)
      st = col_fail(&c, QV_EINVAL, err, "a dictionary page on a BOOLEAN column");
    else st = decode_plain(&c, &c.dict, pr->dict, pr->dict_len, pr->dict_count, err);
    c.has_dict = true;
    c.page++;
  }
  if (st == QV_OK) {
    qv_pq_page_header h;
    memset(&h, 0, sizeof h);
    h.type = pr->v2 ? QV_PQ_DATA_PAGE_V2 : QV_PQ_DATA_PAGE;
    h.num_values = pr->num_values;
    h.encoding = pr->encoding;
    h.def_encoding = pr->def_encoding;
    h.rep_encoding = pr->rep_encoding;
    h.has_v1 = !pr->v2;
    h.has_v2 = pr->v2;
    h.rep_len = pr->rep_len;
    h.def_len = pr->def_len;
    int64_t lv = pr->v2 ? (int64_t)pr->rep_len + pr->def_len : 0;
    if (pr->rep_len < 0 || pr->def_len < 0 || lv > pr->page_len)
      st = col_fail(&c, QV_EINVAL, err, "levels of %lld bytes larger than the page", (long long)lv);
    else st = decode_data_page(&c, &h, pr->page + lv, pr->page_len - lv, pr->page, lv, err);
  }
  if (st == QV_OK) {
    if (out_values) *out_values = c.vals.count;
    if (out_levels) *out_levels = c.n_levels;
  }
  col_free(&c);
  return st;
}
