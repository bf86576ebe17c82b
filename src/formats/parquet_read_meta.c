/*
 * parquet_read_meta.c — decoding Parquet's Thrift metadata: the footer's
 * FileMetaData (schema elements with their LogicalType, row groups, column
 * chunks, column metadata with statistics, key/value metadata) and page
 * headers (data page v1/v2, dictionary page), on the bounded compact
 * reader of thrift_read.c. Unknown fields are skipped; encryption metadata
 * is noted so the reader can refuse encrypted files. Formats layer.
 */
#include <stdlib.h>
#include <string.h>

#include "formats/parquet_internal.h"

const char *qv_pq_type_name(int32_t t) {
  switch (t) {
    case QV_PQ_BOOLEAN: return "BOOLEAN";
    case QV_PQ_INT32: return "INT32";
    case QV_PQ_INT64: return "INT64";
    case QV_PQ_INT96: return "INT96";
    case QV_PQ_FLOAT: return "FLOAT";
    case QV_PQ_DOUBLE: return "DOUBLE";
    case QV_PQ_BYTE_ARRAY: return "BYTE_ARRAY";
    case QV_PQ_FIXED_LEN_BYTE_ARRAY: return "FIXED_LEN_BYTE_ARRAY";
  }
  return "unknown";
}

const char *qv_pq_encoding_name(int32_t e) {
  switch (e) {
    case QV_PQ_PLAIN: return "PLAIN";
    case QV_PQ_PLAIN_DICTIONARY: return "PLAIN_DICTIONARY";
    case QV_PQ_RLE: return "RLE";
    case QV_PQ_BIT_PACKED: return "BIT_PACKED";
    case QV_PQ_DELTA_BINARY_PACKED: return "DELTA_BINARY_PACKED";
    case QV_PQ_DELTA_LENGTH_BYTE_ARRAY: return "DELTA_LENGTH_BYTE_ARRAY";
    case QV_PQ_DELTA_BYTE_ARRAY: return "DELTA_BYTE_ARRAY";
    case QV_PQ_RLE_DICTIONARY: return "RLE_DICTIONARY";
    case QV_PQ_BYTE_STREAM_SPLIT: return "BYTE_STREAM_SPLIT";
  }
  return "unknown";
}

const char *qv_pq_codec_name(int32_t c) {
  switch (c) {
    case QV_PQ_UNCOMPRESSED: return "UNCOMPRESSED";
    case QV_PQ_SNAPPY: return "SNAPPY";
    case QV_PQ_GZIP: return "GZIP";
    case QV_PQ_LZO: return "LZO";
    case QV_PQ_BROTLI: return "BROTLI";
    case QV_PQ_LZ4: return "LZ4";
    case QV_PQ_ZSTD: return "ZSTD";
    case QV_PQ_LZ4_RAW: return "LZ4_RAW";
  }
  return "unknown";
}

static char *dup_bytes(qv_thrift *t, const uint8_t *s, int32_t n) {
  char *d = malloc((size_t)n + 1);
  if (d == NULL) {
    qv_thrift_fail(t, QV_ENOMEM, "out of memory");
    return NULL;
  }
  if (n > 0) memcpy(d, s, (size_t)n);
  d[n] = '\0';
  return d;
}

/* A union whose members are all empty structs (TimeUnit): the member id. */
static int32_t read_empty_union(qv_thrift *t) {
  int32_t which = 0;
  if (!qv_thrift_enter(t)) return 0;
  int16_t last = 0, id;
  int ft;
  while (qv_thrift_field(t, &last, &id, &ft)) {
    if (ft == QV_TC_STRUCT && which == 0) which = id;
    qv_thrift_skip(t, ft);
  }
  qv_thrift_leave(t);
  return which;
}

static void read_logical(qv_thrift *t, qv_pq_schema_element *e) {
  if (!qv_thrift_enter(t)) return;
  int16_t last = 0, id;
  int ft;
  while (qv_thrift_field(t, &last, &id, &ft)) {
    if (ft != QV_TC_STRUCT || e->logical != QV_PQ_LT_NONE) {
      qv_thrift_skip(t, ft);
      continue;
    }
    e->logical = id;
    if (!qv_thrift_enter(t)) break;
    int16_t l2 = 0, id2;
    int ft2;
    while (qv_thrift_field(t, &l2, &id2, &ft2)) {
      if (id == QV_PQ_LT_DECIMAL && id2 == 1) e->lt_scale = qv_thrift_get_i32(t, ft2, "scale");
      else if (id == QV_PQ_LT_DECIMAL && id2 == 2)
        e->lt_precision = qv_thrift_get_i32(t, ft2, "precision");
      else if ((id == QV_PQ_LT_TIME || id == QV_PQ_LT_TIMESTAMP) && id2 == 1)
        e->lt_utc = qv_thrift_get_bool(t, ft2, "isAdjustedToUTC");
      else if ((id == QV_PQ_LT_TIME || id == QV_PQ_LT_TIMESTAMP) && id2 == 2 && ft2 == QV_TC_STRUCT)
        e->lt_unit = read_empty_union(t);
      else if (id == QV_PQ_LT_INTEGER && id2 == 1)
        e->lt_bit_width = qv_thrift_get_i32(t, ft2, "bitWidth");
      else if (id == QV_PQ_LT_INTEGER && id2 == 2)
        e->lt_signed = qv_thrift_get_bool(t, ft2, "isSigned");
      else qv_thrift_skip(t, ft2);
    }
    qv_thrift_leave(t);
  }
  qv_thrift_leave(t);
}

static void read_schema_element(qv_thrift *t, qv_pq_schema_element *e) {
  memset(e, 0, sizeof *e);
  e->type = -1;
  e->type_length = -1;
  e->repetition = -1;
  e->converted = -1;
  e->field_id = -1;
  if (!qv_thrift_enter(t)) return;
  int16_t last = 0, id;
  int ft;
  while (qv_thrift_field(t, &last, &id, &ft)) {
    switch (id) {
      case 1: e->type = qv_thrift_get_i32(t, ft, "SchemaElement.type"); break;
      case 2: e->type_length = qv_thrift_get_i32(t, ft, "SchemaElement.type_length"); break;
      case 3: e->repetition = qv_thrift_get_i32(t, ft, "SchemaElement.repetition_type"); break;
      case 4: {
        int32_t n;
        const uint8_t *s = qv_thrift_get_binary(t, ft, "SchemaElement.name", &n);
        if (t->st == QV_OK && e->name == NULL) e->name = dup_bytes(t, s, n);
        break;
      }
      case 5: e->num_children = qv_thrift_get_i32(t, ft, "SchemaElement.num_children"); break;
      case 6: e->converted = qv_thrift_get_i32(t, ft, "SchemaElement.converted_type"); break;
      case 7: e->scale = qv_thrift_get_i32(t, ft, "SchemaElement.scale"); break;
      case 8: e->precision = qv_thrift_get_i32(t, ft, "SchemaElement.precision"); break;
      case 9: e->field_id = qv_thrift_get_i32(t, ft, "SchemaElement.field_id"); break;
      case 10:
        if (qv_thrift_expect(t, ft, QV_TC_STRUCT, "SchemaElement.logicalType")) read_logical(t, e);
        break;
      default: qv_thrift_skip(t, ft);
    }
  }
  qv_thrift_leave(t);
  if (t->st == QV_OK && e->name == NULL) e->name = dup_bytes(t, (const uint8_t *)"", 0);
}

static void read_stats(qv_thrift *t, qv_pq_stats *s) {
  memset(s, 0, sizeof *s);
  s->null_count = -1;
  s->distinct_count = -1;
  s->present = true;
  qv_pq_bytes legacy_min = {NULL, 0}, legacy_max = {NULL, 0};
  if (!qv_thrift_enter(t)) return;
  int16_t last = 0, id;
  int ft;
  while (qv_thrift_field(t, &last, &id, &ft)) {
    switch (id) {
      case 1:
        legacy_max.data = qv_thrift_get_binary(t, ft, "Statistics.max", &legacy_max.len);
        break;
      case 2:
        legacy_min.data = qv_thrift_get_binary(t, ft, "Statistics.min", &legacy_min.len);
        break;
      case 3: s->null_count = qv_thrift_get_i64(t, ft, "Statistics.null_count"); break;
      case 4: s->distinct_count = qv_thrift_get_i64(t, ft, "Statistics.distinct_count"); break;
      case 5: s->max.data = qv_thrift_get_binary(t, ft, "Statistics.max_value", &s->max.len); break;
      case 6: s->min.data = qv_thrift_get_binary(t, ft, "Statistics.min_value", &s->min.len); break;
      default: qv_thrift_skip(t, ft);
    }
  }
  qv_thrift_leave(t);
  if (s->min.data == NULL && s->max.data == NULL) {
    s->min = legacy_min;
    s->max = legacy_max;
  }
}

static void read_column_meta(qv_thrift *t, qv_pq_column_meta *m) {
  m->index_page_offset = -1;
  m->dictionary_page_offset = -1;
  m->type = -1;
  if (!qv_thrift_enter(t)) return;
  int16_t last = 0, id;
  int ft;
  while (qv_thrift_field(t, &last, &id, &ft)) {
    switch (id) {
      case 1: m->type = qv_thrift_get_i32(t, ft, "ColumnMetaData.type"); break;
      case 2: {
        if (!qv_thrift_expect(t, ft, QV_TC_LIST, "ColumnMetaData.encodings")) break;
        int et;
        int64_t n = qv_thrift_list(t, &et);
        if (t->st != QV_OK || m->encodings != NULL) {
          for (int64_t i = 0; i < n; i++) qv_thrift_skip(t, et);
          break;
        }
        m->encodings = calloc((size_t)(n > 0 ? n : 1), sizeof *m->encodings);
        if (m->encodings == NULL) {
          qv_thrift_fail(t, QV_ENOMEM, "out of memory");
          break;
        }
        for (int64_t i = 0; i < n && t->st == QV_OK; i++)
          m->encodings[m->n_encodings++] = qv_thrift_get_i32(t, et, "ColumnMetaData.encodings");
        break;
      }
      case 3: {
        if (!qv_thrift_expect(t, ft, QV_TC_LIST, "ColumnMetaData.path_in_schema")) break;
        int et;
        int64_t n = qv_thrift_list(t, &et);
        size_t cap = 1, len = 0;
        char *path = malloc(1);
        if (path == NULL) {
          qv_thrift_fail(t, QV_ENOMEM, "out of memory");
          break;
        }
        path[0] = '\0';
        for (int64_t i = 0; i < n && t->st == QV_OK; i++) {
          int32_t sl;
          const uint8_t *s = qv_thrift_get_binary(t, et, "ColumnMetaData.path_in_schema", &sl);
          if (t->st != QV_OK) break;
          size_t need = len + (size_t)sl + 2;
          if (need > cap) {
            char *np = realloc(path, need * 2);
            if (np == NULL) {
              qv_thrift_fail(t, QV_ENOMEM, "out of memory");
              break;
            }
            path = np;
            cap = need * 2;
          }
          if (i > 0) path[len++] = '.';
          memcpy(path + len, s, (size_t)sl);
          len += (size_t)sl;
          path[len] = '\0';
        }
        free(m->path);
        m->path = path;
        break;
      }
      case 4: m->codec = qv_thrift_get_i32(t, ft, "ColumnMetaData.codec"); break;
      case 5: m->num_values = qv_thrift_get_i64(t, ft, "ColumnMetaData.num_values"); break;
      case 6:
        m->total_uncompressed_size =
            qv_thrift_get_i64(t, ft, "ColumnMetaData.total_uncompressed_size");
        break;
      case 7:
        m->total_compressed_size = qv_thrift_get_i64(t, ft, "ColumnMetaData.total_compressed_size");
        break;
      case 9:
        m->data_page_offset = qv_thrift_get_i64(t, ft, "ColumnMetaData.data_page_offset");
        break;
      case 10:
        m->index_page_offset = qv_thrift_get_i64(t, ft, "ColumnMetaData.index_page_offset");
        break;
      case 11:
        m->dictionary_page_offset =
            qv_thrift_get_i64(t, ft, "ColumnMetaData.dictionary_page_offset");
        break;
      case 12:
        if (qv_thrift_expect(t, ft, QV_TC_STRUCT, "ColumnMetaData.statistics"))
          read_stats(t, &m->stats);
        break;
      default: qv_thrift_skip(t, ft);
    }
  }
  qv_thrift_leave(t);
}

static void read_column_chunk(qv_thrift *t, qv_pq_column_chunk *c) {
  memset(c, 0, sizeof *c);
  if (!qv_thrift_enter(t)) return;
  int16_t last = 0, id;
  int ft;
  while (qv_thrift_field(t, &last, &id, &ft)) {
    switch (id) {
      case 1:
        c->has_file_path = true;
        qv_thrift_skip(t, ft);
        break;
      case 2: c->file_offset = qv_thrift_get_i64(t, ft, "ColumnChunk.file_offset"); break;
      case 3:
        if (qv_thrift_expect(t, ft, QV_TC_STRUCT, "ColumnChunk.meta_data") && !c->has_meta) {
          c->has_meta = true;
          read_column_meta(t, &c->meta);
        } else {
          qv_thrift_skip(t, ft);
        }
        break;
      case 8:
      case 9:
        c->encrypted = true;
        qv_thrift_skip(t, ft);
        break;
      default: qv_thrift_skip(t, ft);
    }
  }
  qv_thrift_leave(t);
}

static void column_meta_reset(qv_pq_column_meta *m) {
  free(m->encodings);
  free(m->path);
}

static void read_row_group(qv_thrift *t, qv_pq_row_group *g) {
  memset(g, 0, sizeof *g);
  g->file_offset = -1;
  g->total_compressed_size = -1;
  if (!qv_thrift_enter(t)) return;
  int16_t last = 0, id;
  int ft;
  while (qv_thrift_field(t, &last, &id, &ft)) {
    switch (id) {
      case 1: {
        if (!qv_thrift_expect(t, ft, QV_TC_LIST, "RowGroup.columns")) break;
        int et;
        int64_t n = qv_thrift_list(t, &et);
        if (t->st != QV_OK) break;
        if (g->columns != NULL || et != QV_TC_STRUCT) {
          if (et != QV_TC_STRUCT) qv_thrift_fail(t, QV_EINVAL, "RowGroup.columns: not structs");
          break;
        }
        g->columns = calloc((size_t)(n > 0 ? n : 1), sizeof *g->columns);
        if (g->columns == NULL) {
          qv_thrift_fail(t, QV_ENOMEM, "out of memory");
          break;
        }
        for (int64_t i = 0; i < n && t->st == QV_OK; i++) {
          read_column_chunk(t, &g->columns[i]);
          g->n_columns = (int32_t)i + 1;
        }
        break;
      }
      case 2: g->total_byte_size = qv_thrift_get_i64(t, ft, "RowGroup.total_byte_size"); break;
      case 3: g->num_rows = qv_thrift_get_i64(t, ft, "RowGroup.num_rows"); break;
      case 5: g->file_offset = qv_thrift_get_i64(t, ft, "RowGroup.file_offset"); break;
      case 6:
        g->total_compressed_size = qv_thrift_get_i64(t, ft, "RowGroup.total_compressed_size");
        break;
      default: qv_thrift_skip(t, ft);
    }
  }
  qv_thrift_leave(t);
}

void qv_pq_file_meta_reset(qv_pq_file_meta *m) {
  if (m == NULL) return;
  for (int32_t i = 0; i < m->n_schema; i++) free(m->schema[i].name);
  free(m->schema);
  for (int32_t g = 0; g < m->n_row_groups; g++) {
    for (int32_t c = 0; c < m->row_groups[g].n_columns; c++)
      column_meta_reset(&m->row_groups[g].columns[c].meta);
    free(m->row_groups[g].columns);
  }
  free(m->row_groups);
  qv_metadata_reset(&m->kv);
  free(m->created_by);
  memset(m, 0, sizeof *m);
}

qv_status qv_pq_decode_file_meta(const uint8_t *data, int64_t len, qv_pq_file_meta *out,
                                 qv_error *err) {
  memset(out, 0, sizeof *out);
  qv_thrift th, *t = &th;
  qv_thrift_init(t, data, len, "Parquet footer (FileMetaData)", err);
  qv_thrift_enter(t);
  int16_t last = 0, id;
  int ft;
  while (qv_thrift_field(t, &last, &id, &ft)) {
    switch (id) {
      case 1: out->version = qv_thrift_get_i32(t, ft, "FileMetaData.version"); break;
      case 2: {
        if (!qv_thrift_expect(t, ft, QV_TC_LIST, "FileMetaData.schema")) break;
        int et;
        int64_t n = qv_thrift_list(t, &et);
        if (t->st != QV_OK) break;
        if (out->schema != NULL || et != QV_TC_STRUCT || n > INT32_MAX) {
          qv_thrift_fail(t, QV_EINVAL, "FileMetaData.schema: a second list, or not structs");
          break;
        }
        out->schema = calloc((size_t)(n > 0 ? n : 1), sizeof *out->schema);
        if (out->schema == NULL) {
          qv_thrift_fail(t, QV_ENOMEM, "out of memory");
          break;
        }
        for (int64_t i = 0; i < n && t->st == QV_OK; i++) {
          read_schema_element(t, &out->schema[i]);
          out->n_schema = (int32_t)i + 1;
        }
        break;
      }
      case 3: out->num_rows = qv_thrift_get_i64(t, ft, "FileMetaData.num_rows"); break;
      case 4: {
        if (!qv_thrift_expect(t, ft, QV_TC_LIST, "FileMetaData.row_groups")) break;
        int et;
        int64_t n = qv_thrift_list(t, &et);
        if (t->st != QV_OK) break;
        if (out->row_groups != NULL || et != QV_TC_STRUCT || n > INT32_MAX) {
          qv_thrift_fail(t, QV_EINVAL, "FileMetaData.row_groups: a second list, or not structs");
          break;
        }
        out->row_groups = calloc((size_t)(n > 0 ? n : 1), sizeof *out->row_groups);
        if (out->row_groups == NULL) {
          qv_thrift_fail(t, QV_ENOMEM, "out of memory");
          break;
        }
        for (int64_t i = 0; i < n && t->st == QV_OK; i++) {
          out->n_row_groups = (int32_t)i + 1;
          read_row_group(t, &out->row_groups[i]);
        }
        break;
      }
      case 5: {
        if (!qv_thrift_expect(t, ft, QV_TC_LIST, "FileMetaData.key_value_metadata")) break;
        int et;
        int64_t n = qv_thrift_list(t, &et);
        for (int64_t i = 0; i < n && t->st == QV_OK; i++) {
          if (et != QV_TC_STRUCT) {
            qv_thrift_fail(t, QV_EINVAL, "key_value_metadata: not structs");
            break;
          }
          if (!qv_thrift_enter(t)) break;
          const uint8_t *k = NULL, *v = NULL;
          int32_t kl = 0, vl = 0;
          int16_t l2 = 0, id2;
          int ft2;
          while (qv_thrift_field(t, &l2, &id2, &ft2)) {
            if (id2 == 1) k = qv_thrift_get_binary(t, ft2, "KeyValue.key", &kl);
            else if (id2 == 2) v = qv_thrift_get_binary(t, ft2, "KeyValue.value", &vl);
            else qv_thrift_skip(t, ft2);
          }
          qv_thrift_leave(t);
          if (t->st == QV_OK && k != NULL &&
              qv_metadata_append(&out->kv, (const char *)k, kl, v ? (const char *)v : "", vl,
                                 err) != QV_OK)
            qv_thrift_fail(t, QV_ENOMEM, "out of memory");
        }
        break;
      }
      case 6: {
        int32_t n;
        const uint8_t *s = qv_thrift_get_binary(t, ft, "FileMetaData.created_by", &n);
        if (t->st == QV_OK && out->created_by == NULL) out->created_by = dup_bytes(t, s, n);
        break;
      }
      case 8:
        out->encrypted = true;
        qv_thrift_skip(t, ft);
        break;
      default: qv_thrift_skip(t, ft);
    }
  }
  if (t->st == QV_OK && out->n_schema == 0)
    qv_thrift_fail(t, QV_EINVAL, "FileMetaData has no schema");
  if (t->st != QV_OK) {
    qv_status st = t->st;
    qv_pq_file_meta_reset(out);
    return st;
  }
  return QV_OK;
}

qv_status qv_pq_decode_page_header(const uint8_t *data, int64_t len, qv_pq_page_header *h,
                                   int64_t *header_len, qv_error *err) {
  memset(h, 0, sizeof *h);
  h->type = -1;
  h->is_compressed = true;
  h->encoding = -1;
  qv_thrift th, *t = &th;
  qv_thrift_init(t, data, len, "page header", err);
  qv_thrift_enter(t);
  int16_t last = 0, id;
  int ft;
  while (qv_thrift_field(t, &last, &id, &ft)) {
    switch (id) {
      case 1: h->type = qv_thrift_get_i32(t, ft, "PageHeader.type"); break;
      case 2: h->uncompressed_size = qv_thrift_get_i32(t, ft, "uncompressed_page_size"); break;
      case 3: h->compressed_size = qv_thrift_get_i32(t, ft, "compressed_page_size"); break;
      case 4:
        h->has_crc = true;
        h->crc = (uint32_t)qv_thrift_get_i32(t, ft, "crc");
        break;
      case 5:
      case 7:
      case 8: {
        if (!qv_thrift_expect(t, ft, QV_TC_STRUCT, "PageHeader sub-header")) break;
        if (!qv_thrift_enter(t)) break;
        if (id == 5) h->has_v1 = true;
        if (id == 7) h->has_dict = true;
        if (id == 8) h->has_v2 = true;
        int16_t l2 = 0, id2;
        int ft2;
        while (qv_thrift_field(t, &l2, &id2, &ft2)) {
          if (id2 == 1) h->num_values = qv_thrift_get_i32(t, ft2, "num_values");
          else if (id == 5 && id2 == 2) h->encoding = qv_thrift_get_i32(t, ft2, "encoding");
          else if (id == 5 && id2 == 3) h->def_encoding = qv_thrift_get_i32(t, ft2, "def enc");
          else if (id == 5 && id2 == 4) h->rep_encoding = qv_thrift_get_i32(t, ft2, "rep enc");
          else if (id == 7 && id2 == 2) h->encoding = qv_thrift_get_i32(t, ft2, "encoding");
          else if (id == 7 && id2 == 3) h->is_sorted = qv_thrift_get_bool(t, ft2, "is_sorted");
          else if (id == 8 && id2 == 2) h->num_nulls = qv_thrift_get_i32(t, ft2, "num_nulls");
          else if (id == 8 && id2 == 3) h->num_rows = qv_thrift_get_i32(t, ft2, "num_rows");
          else if (id == 8 && id2 == 4) h->encoding = qv_thrift_get_i32(t, ft2, "encoding");
          else if (id == 8 && id2 == 5) h->def_len = qv_thrift_get_i32(t, ft2, "def levels length");
          else if (id == 8 && id2 == 6) h->rep_len = qv_thrift_get_i32(t, ft2, "rep levels length");
          else if (id == 8 && id2 == 7)
            h->is_compressed = qv_thrift_get_bool(t, ft2, "is_compressed");
          else qv_thrift_skip(t, ft2);
        }
        qv_thrift_leave(t);
        break;
      }
      default: qv_thrift_skip(t, ft);
    }
  }
  if (t->st != QV_OK) return t->st;
  if (h->type < 0 || h->uncompressed_size < 0 || h->compressed_size < 0 || h->num_values < 0 ||
      h->num_nulls < 0 || h->def_len < 0 || h->rep_len < 0)
    return qv_thrift_fail(t, QV_EINVAL,
                          "page header: missing type or a negative size/count (sizes %d/%d, %d "
                          "values)",
                          h->uncompressed_size, h->compressed_size, h->num_values);
  *header_len = t->p - t->base;
  return QV_OK;
}
