/*
 * metadata_encode.c — Arrow IPC metadata encoding (ipc layer): turns a
 * qv_schema, a record/dictionary batch description or a file footer into
 * the Message / Footer flatbuffers of Message.fbs and File.fbs, using the
 * builder of flatbuf_builder.c. The inverse of metadata.c; used by the IPC
 * writer and by tests (decode(encode(x)) == x).
 *
 * Flatbuffers are built leaves first, so every encoder below creates the
 * strings, vectors and sub-tables a table refers to before starting it.
 */
#include <stdlib.h>
#include <string.h>

#include "ipc/arrow_fbs.h"
#include "ipc/ipc_internal.h"

typedef struct enc_ctx {
  qv_fb_builder b;
  qv_error *err;
  qv_status st; /* first encoder-level error (builder errors are sticky) */
} enc_ctx;

static qv_status enc_fail(enc_ctx *c, qv_status st, const char *what, const char *name) {
  if (c->st == QV_OK) {
    c->st = qv_error_set(c->err, st, "encode: field '%s': %s", name, what);
  }
  return c->st;
}

/* [KeyValue] vector, or 0 when md is empty. */
static qv_fb_ref enc_metadata(enc_ctx *c, const qv_metadata *md) {
  if (md == NULL || md->n == 0) return 0;
  qv_fb_ref *refs = malloc(sizeof *refs * (size_t)md->n);
  if (refs == NULL) {
    enc_fail(c, QV_ENOMEM, "out of memory", "");
    return 0;
  }
  for (int64_t i = 0; i < md->n; i++) {
    const qv_kv *kv = &md->kv[i];
    qv_fb_ref k = qv_fb_create_string(&c->b, kv->key, kv->key_len);
    qv_fb_ref v = qv_fb_create_string(&c->b, kv->value, kv->value_len);
    qv_fb_start_table(&c->b);
    qv_fb_add_ref(&c->b, QV_FBS_KEY_VALUE_KEY, k);
    qv_fb_add_ref(&c->b, QV_FBS_KEY_VALUE_VALUE, v);
    refs[i] = qv_fb_end_table(&c->b);
  }
  qv_fb_ref vec = qv_fb_create_vector_refs(&c->b, refs, md->n);
  free(refs);
  return vec;
}

/* An Int table. */
static qv_fb_ref enc_int(enc_ctx *c, int32_t bit_width, bool is_signed) {
  qv_fb_start_table(&c->b);
  qv_fb_add_i32(&c->b, QV_FBS_INT_BIT_WIDTH, bit_width, 0);
  qv_fb_add_bool(&c->b, QV_FBS_INT_IS_SIGNED, is_signed, false);
  return qv_fb_end_table(&c->b);
}

static int32_t enc_int_width(qv_type_id id) {
  switch (id) {
    case QV_INT8:
    case QV_UINT8: return 8;
    case QV_INT16:
    case QV_UINT16: return 16;
    case QV_INT32:
    case QV_UINT32: return 32;
    case QV_INT64:
    case QV_UINT64: return 64;
    default: return 0;
  }
}

/* The Type union member table for t (not a dictionary); *tag gets its tag. */
static qv_fb_ref enc_type(enc_ctx *c, const qv_type *t, const char *name, uint8_t *tag) {
  qv_fb_builder *b = &c->b;
  qv_fb_ref tz = 0, ids = 0;
  if (t->id == QV_TIMESTAMP && t->timezone != NULL) {
    tz = qv_fb_create_string(b, t->timezone, (int64_t)strlen(t->timezone));
  }
  if ((t->id == QV_SPARSE_UNION || t->id == QV_DENSE_UNION) && t->type_codes != NULL) {
    uint8_t *le = malloc(4 * (size_t)(t->n_children > 0 ? t->n_children : 1));
    if (le == NULL) {
      enc_fail(c, QV_ENOMEM, "out of memory", name);
      return 0;
    }
    for (int32_t i = 0; i < t->n_children; i++) {
      uint32_t v = (uint32_t)t->type_codes[i];
      for (int k = 0; k < 4; k++) le[4 * i + k] = (uint8_t)(v >> (8 * k));
    }
    ids = qv_fb_create_vector(b, le, t->n_children, 4, 4);
    free(le);
  }
  qv_fb_start_table(b);
  switch (t->id) {
    case QV_NA: *tag = QV_FBS_TYPE_NULL; break;
    case QV_BOOL: *tag = QV_FBS_TYPE_BOOL; break;
    case QV_INT8:
    case QV_UINT8:
    case QV_INT16:
    case QV_UINT16:
    case QV_INT32:
    case QV_UINT32:
    case QV_INT64:
    case QV_UINT64:
      *tag = QV_FBS_TYPE_INT;
      qv_fb_add_i32(b, QV_FBS_INT_BIT_WIDTH, enc_int_width(t->id), 0);
      qv_fb_add_bool(b, QV_FBS_INT_IS_SIGNED, qv_type_id_is_signed_integer(t->id), false);
      break;
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE:
      *tag = QV_FBS_TYPE_FLOATING_POINT;
      qv_fb_add_i16(b, QV_FBS_FLOATING_POINT_PRECISION,
                    t->id == QV_HALF_FLOAT ? QV_FBS_PRECISION_HALF
                    : t->id == QV_FLOAT    ? QV_FBS_PRECISION_SINGLE
                                           : QV_FBS_PRECISION_DOUBLE,
                    QV_FBS_PRECISION_HALF);
      break;
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256:
      *tag = QV_FBS_TYPE_DECIMAL;
      qv_fb_add_i32(b, QV_FBS_DECIMAL_PRECISION, t->precision, 0);
      qv_fb_add_i32(b, QV_FBS_DECIMAL_SCALE, t->scale, 0);
      qv_fb_add_i32(b, QV_FBS_DECIMAL_BIT_WIDTH,
                    t->id == QV_DECIMAL32    ? 32
                    : t->id == QV_DECIMAL64  ? 64
                    : t->id == QV_DECIMAL128 ? 128
                                             : 256,
                    QV_FBS_DECIMAL_DEFAULT_BIT_WIDTH);
      break;
    case QV_DATE32:
    case QV_DATE64:
      *tag = QV_FBS_TYPE_DATE;
      qv_fb_add_i16(b, QV_FBS_DATE_UNIT,
                    t->id == QV_DATE32 ? QV_FBS_DATE_DAY : QV_FBS_DATE_MILLISECOND,
                    QV_FBS_DATE_DEFAULT_UNIT);
      break;
    case QV_TIME32:
    case QV_TIME64:
      *tag = QV_FBS_TYPE_TIME;
      qv_fb_add_i16(b, QV_FBS_TIME_UNIT, (int16_t)t->unit, QV_FBS_TIME_DEFAULT_UNIT);
      qv_fb_add_i32(b, QV_FBS_TIME_BIT_WIDTH, t->id == QV_TIME32 ? 32 : 64,
                    QV_FBS_TIME_DEFAULT_BIT_WIDTH);
      break;
    case QV_TIMESTAMP:
      *tag = QV_FBS_TYPE_TIMESTAMP;
      qv_fb_add_i16(b, QV_FBS_TIMESTAMP_UNIT, (int16_t)t->unit, QV_FBS_TIME_SECOND);
      qv_fb_add_ref(b, QV_FBS_TIMESTAMP_TIMEZONE, tz);
      break;
    case QV_DURATION:
      *tag = QV_FBS_TYPE_DURATION;
      qv_fb_add_i16(b, QV_FBS_DURATION_UNIT, (int16_t)t->unit, QV_FBS_DURATION_DEFAULT_UNIT);
      break;
    case QV_INTERVAL_MONTHS:
    case QV_INTERVAL_DAY_TIME:
    case QV_INTERVAL_MONTH_DAY_NANO:
      *tag = QV_FBS_TYPE_INTERVAL;
      qv_fb_add_i16(b, QV_FBS_INTERVAL_UNIT,
                    t->id == QV_INTERVAL_MONTHS     ? QV_FBS_INTERVAL_YEAR_MONTH
                    : t->id == QV_INTERVAL_DAY_TIME ? QV_FBS_INTERVAL_DAY_TIME
                                                    : QV_FBS_INTERVAL_MONTH_DAY_NANO,
                    QV_FBS_INTERVAL_YEAR_MONTH);
      break;
    case QV_BINARY: *tag = QV_FBS_TYPE_BINARY; break;
    case QV_STRING: *tag = QV_FBS_TYPE_UTF8; break;
    case QV_LARGE_BINARY: *tag = QV_FBS_TYPE_LARGE_BINARY; break;
    case QV_LARGE_STRING: *tag = QV_FBS_TYPE_LARGE_UTF8; break;
    case QV_BINARY_VIEW: *tag = QV_FBS_TYPE_BINARY_VIEW; break;
    case QV_STRING_VIEW: *tag = QV_FBS_TYPE_UTF8_VIEW; break;
    case QV_FIXED_SIZE_BINARY:
      *tag = QV_FBS_TYPE_FIXED_SIZE_BINARY;
      qv_fb_add_i32(b, QV_FBS_FIXED_SIZE_BINARY_BYTE_WIDTH, t->byte_width, 0);
      break;
    case QV_LIST: *tag = QV_FBS_TYPE_LIST; break;
    case QV_LARGE_LIST: *tag = QV_FBS_TYPE_LARGE_LIST; break;
    case QV_LIST_VIEW: *tag = QV_FBS_TYPE_LIST_VIEW; break;
    case QV_LARGE_LIST_VIEW: *tag = QV_FBS_TYPE_LARGE_LIST_VIEW; break;
    case QV_FIXED_SIZE_LIST:
      *tag = QV_FBS_TYPE_FIXED_SIZE_LIST;
      qv_fb_add_i32(b, QV_FBS_FIXED_SIZE_LIST_LIST_SIZE, t->list_size, 0);
      break;
    case QV_STRUCT: *tag = QV_FBS_TYPE_STRUCT; break;
    case QV_MAP:
      *tag = QV_FBS_TYPE_MAP;
      qv_fb_add_bool(b, QV_FBS_MAP_KEYS_SORTED, t->keys_sorted, false);
      break;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION:
      *tag = QV_FBS_TYPE_UNION;
      qv_fb_add_i16(b, QV_FBS_UNION_MODE,
                    t->id == QV_DENSE_UNION ? QV_FBS_UNION_DENSE : QV_FBS_UNION_SPARSE,
                    QV_FBS_UNION_SPARSE);
      qv_fb_add_ref(b, QV_FBS_UNION_TYPE_IDS, ids);
      break;
    case QV_RUN_END_ENCODED: *tag = QV_FBS_TYPE_RUN_END_ENCODED; break;
    default:
      qv_fb_end_table(b);
      enc_fail(c, QV_EARG,
               t->id == QV_DICTIONARY ? "a dictionary's value type cannot itself be a dictionary"
                                      : "type cannot be encoded",
               name);
      return 0;
  }
  return qv_fb_end_table(b);
}

static qv_fb_ref enc_field(enc_ctx *c, const qv_field *f, int depth);

/* [Field] vector of t's children (always written, possibly empty). */
static qv_fb_ref enc_children(enc_ctx *c, const qv_type *t, int depth) {
  int32_t n = t->n_children;
  qv_fb_ref *refs = malloc(sizeof *refs * (size_t)(n > 0 ? n : 1));
  if (refs == NULL) {
    enc_fail(c, QV_ENOMEM, "out of memory", "");
    return 0;
  }
  for (int32_t i = 0; i < n; i++) refs[i] = enc_field(c, &t->children[i], depth + 1);
  qv_fb_ref vec = qv_fb_create_vector_refs(&c->b, refs, n);
  free(refs);
  return vec;
}

static qv_fb_ref enc_field(enc_ctx *c, const qv_field *f, int depth) {
  if (c->st != QV_OK) return 0;
  const char *name = f->name ? f->name : "";
  if (depth > QV_FB_MAX_DEPTH / 2) {
    enc_fail(c, QV_EARG, "nesting too deep to encode", name);
    return 0;
  }
  const qv_type *t = f->type;
  qv_fb_ref dict = 0;
  if (t->id == QV_DICTIONARY) {
    if (t->index_type == NULL || t->value_type == NULL ||
        !qv_type_id_is_integer(t->index_type->id)) {
      enc_fail(c, QV_EARG,
               "dictionary type needs an integer index type and "
               "a value type",
               name);
      return 0;
    }
    qv_fb_ref index = enc_int(c, enc_int_width(t->index_type->id),
                              qv_type_id_is_signed_integer(t->index_type->id));
    qv_fb_start_table(&c->b);
    qv_fb_add_i64(&c->b, QV_FBS_DICT_ENCODING_ID, t->dict_id, 0);
    qv_fb_add_ref(&c->b, QV_FBS_DICT_ENCODING_INDEX_TYPE, index);
    qv_fb_add_bool(&c->b, QV_FBS_DICT_ENCODING_IS_ORDERED, t->ordered, false);
    dict = qv_fb_end_table(&c->b);
    t = t->value_type;
  }
  qv_fb_ref children = enc_children(c, t, depth);
  uint8_t tag = 0;
  qv_fb_ref type = enc_type(c, t, name, &tag);
  qv_fb_ref name_ref = qv_fb_create_string(&c->b, name, (int64_t)strlen(name));
  qv_fb_ref md = enc_metadata(c, &f->metadata);
  if (c->st != QV_OK) return 0;

  qv_fb_start_table(&c->b);
  qv_fb_add_ref(&c->b, QV_FBS_FIELD_NAME, name_ref);
  qv_fb_add_bool(&c->b, QV_FBS_FIELD_NULLABLE, f->nullable, false);
  qv_fb_add_u8(&c->b, QV_FBS_FIELD_TYPE_TYPE, tag, QV_FBS_TYPE_NONE);
  qv_fb_add_ref(&c->b, QV_FBS_FIELD_TYPE, type);
  qv_fb_add_ref(&c->b, QV_FBS_FIELD_DICTIONARY, dict);
  qv_fb_add_ref(&c->b, QV_FBS_FIELD_CHILDREN, children);
  qv_fb_add_ref(&c->b, QV_FBS_FIELD_CUSTOM_METADATA, md);
  return qv_fb_end_table(&c->b);
}

static qv_fb_ref enc_schema(enc_ctx *c, const qv_schema *s, bool big_endian) {
  qv_fb_ref fields = enc_children(c, s->type, 0);
  qv_fb_ref md = enc_metadata(c, &s->metadata);
  qv_fb_start_table(&c->b);
  qv_fb_add_i16(&c->b, QV_FBS_SCHEMA_ENDIANNESS,
                big_endian ? QV_FBS_ENDIAN_BIG : QV_FBS_ENDIAN_LITTLE, QV_FBS_ENDIAN_LITTLE);
  qv_fb_add_ref(&c->b, QV_FBS_SCHEMA_FIELDS, fields);
  qv_fb_add_ref(&c->b, QV_FBS_SCHEMA_CUSTOM_METADATA, md);
  return qv_fb_end_table(&c->b);
}

/* Vector of n structs of two int64 (FieldNode / Buffer). */
static qv_fb_ref enc_pairs(enc_ctx *c, const int64_t *pairs, int64_t n) {
  uint8_t *le = malloc(16 * (size_t)(n > 0 ? n : 1));
  if (le == NULL) {
    enc_fail(c, QV_ENOMEM, "out of memory", "");
    return 0;
  }
  for (int64_t i = 0; i < 2 * n; i++) {
    uint64_t v = (uint64_t)pairs[i];
    for (int k = 0; k < 8; k++) le[8 * i + k] = (uint8_t)(v >> (8 * k));
  }
  qv_fb_ref vec = qv_fb_create_vector(&c->b, le, n, 16, 8);
  free(le);
  return vec;
}

static qv_fb_ref enc_batch(enc_ctx *c, const qv_ipc_batch_desc *d) {
  /* qv_ipc_node and qv_ipc_buffer_spec are each two int64 in wire order. */
  int64_t *tmp =
      malloc(sizeof *tmp * 2 *
             (size_t)(d->n_nodes > d->n_buffers ? (d->n_nodes > 0 ? d->n_nodes : 1)
                                                : (d->n_buffers > 0 ? d->n_buffers : 1)));
  if (tmp == NULL) {
    enc_fail(c, QV_ENOMEM, "out of memory", "");
    return 0;
  }
  for (int64_t i = 0; i < d->n_nodes; i++) {
    tmp[2 * i] = d->nodes[i].length;
    tmp[2 * i + 1] = d->nodes[i].null_count;
  }
  qv_fb_ref nodes = enc_pairs(c, tmp, d->n_nodes);
  for (int64_t i = 0; i < d->n_buffers; i++) {
    tmp[2 * i] = d->buffers[i].offset;
    tmp[2 * i + 1] = d->buffers[i].length;
  }
  qv_fb_ref buffers = enc_pairs(c, tmp, d->n_buffers);
  free(tmp);
  qv_fb_ref variadic = 0;
  if (d->n_variadic > 0 && d->variadic_counts != NULL) {
    uint8_t *le = malloc(8 * (size_t)d->n_variadic);
    if (le == NULL) {
      enc_fail(c, QV_ENOMEM, "out of memory", "");
      return 0;
    }
    for (int64_t i = 0; i < d->n_variadic; i++) {
      uint64_t v = (uint64_t)d->variadic_counts[i];
      for (int k = 0; k < 8; k++) le[8 * i + k] = (uint8_t)(v >> (8 * k));
    }
    variadic = qv_fb_create_vector(&c->b, le, d->n_variadic, 8, 8);
    free(le);
  }
  qv_fb_ref comp = 0;
  if (d->compression != QV_COMPRESSION_NONE) {
    qv_fb_start_table(&c->b);
    /* Written even when equal to the default, as Arrow C++ does. */
    qv_fb_add_u8(&c->b, QV_FBS_BODY_COMPRESSION_CODEC,
                 d->compression == QV_COMPRESSION_ZSTD ? QV_FBS_COMPRESSION_ZSTD
                                                       : QV_FBS_COMPRESSION_LZ4_FRAME,
                 0xFF);
    comp = qv_fb_end_table(&c->b);
  }
  qv_fb_start_table(&c->b);
  qv_fb_add_i64(&c->b, QV_FBS_RECORD_BATCH_LENGTH, d->length, 0);
  qv_fb_add_ref(&c->b, QV_FBS_RECORD_BATCH_NODES, nodes);
  qv_fb_add_ref(&c->b, QV_FBS_RECORD_BATCH_BUFFERS, buffers);
  qv_fb_add_ref(&c->b, QV_FBS_RECORD_BATCH_COMPRESSION, comp);
  qv_fb_add_ref(&c->b, QV_FBS_RECORD_BATCH_VARIADIC_COUNTS, variadic);
  return qv_fb_end_table(&c->b);
}

/* Finish the builder and hand back a malloc'd copy. */
static qv_status enc_finish(enc_ctx *c, qv_fb_ref root, uint8_t **out, int64_t *out_size) {
  const uint8_t *data = NULL;
  int64_t size = 0;
  qv_status st = c->st;
  if (st == QV_OK) st = qv_fb_builder_finish(&c->b, root, &data, &size, c->err);
  if (st == QV_OK) {
    *out = malloc((size_t)size);
    if (*out == NULL) {
      st = qv_error_set(c->err, QV_ENOMEM, "out of memory (%lld-byte flatbuffer)", (long long)size);
    } else {
      memcpy(*out, data, (size_t)size);
      *out_size = size;
    }
  }
  qv_fb_builder_reset(&c->b);
  return st;
}

static void enc_init(enc_ctx *c, qv_error *err) {
  qv_fb_builder_init(&c->b);
  c->err = err;
  c->st = QV_OK;
}

qv_status qv_ipc_encode_message(const qv_ipc_message *m, uint8_t **out, int64_t *out_size,
                                qv_error *err) {
  enc_ctx c;
  enc_init(&c, err);
  qv_fb_ref header = 0;
  switch (m->type) {
    case QV_MSG_SCHEMA:
      if (m->schema == NULL) {
        return qv_error_set(err, QV_EARG, "encode: schema message without a schema");
      }
      header = enc_schema(&c, m->schema, m->big_endian);
      break;
    case QV_MSG_RECORD_BATCH: header = enc_batch(&c, &m->batch); break;
    case QV_MSG_DICTIONARY_BATCH: {
      qv_fb_ref data = enc_batch(&c, &m->batch);
      qv_fb_start_table(&c.b);
      qv_fb_add_i64(&c.b, QV_FBS_DICTIONARY_BATCH_ID, m->dict_id, 0);
      qv_fb_add_ref(&c.b, QV_FBS_DICTIONARY_BATCH_DATA, data);
      qv_fb_add_bool(&c.b, QV_FBS_DICTIONARY_BATCH_IS_DELTA, m->is_delta, false);
      header = qv_fb_end_table(&c.b);
      break;
    }
    default:
      return qv_error_set(err, QV_EARG, "encode: message type %d cannot be encoded", (int)m->type);
  }
  qv_fb_ref md = enc_metadata(&c, &m->custom_metadata);
  qv_fb_start_table(&c.b);
  qv_fb_add_i16(&c.b, QV_FBS_MESSAGE_VERSION, QV_METADATA_V5, QV_METADATA_V1);
  qv_fb_add_u8(&c.b, QV_FBS_MESSAGE_HEADER_TYPE, (uint8_t)m->type, QV_MSG_NONE);
  qv_fb_add_ref(&c.b, QV_FBS_MESSAGE_HEADER, header);
  qv_fb_add_i64(&c.b, QV_FBS_MESSAGE_BODY_LENGTH, m->body_length, 0);
  qv_fb_add_ref(&c.b, QV_FBS_MESSAGE_CUSTOM_METADATA, md);
  qv_fb_ref root = qv_fb_end_table(&c.b);
  return enc_finish(&c, root, out, out_size);
}

qv_status qv_ipc_encode_schema_message(const qv_schema *schema, uint8_t **out, int64_t *out_size,
                                       qv_error *err) {
  qv_ipc_message m;
  memset(&m, 0, sizeof m);
  m.type = QV_MSG_SCHEMA;
  m.schema = (qv_schema *)schema;
  return qv_ipc_encode_message(&m, out, out_size, err);
}

qv_status qv_ipc_encode_record_batch_message(const qv_ipc_batch_desc *desc, int64_t body_length,
                                             uint8_t **out, int64_t *out_size, qv_error *err) {
  qv_ipc_message m;
  memset(&m, 0, sizeof m);
  m.type = QV_MSG_RECORD_BATCH;
  m.batch = *desc;
  m.body_length = body_length;
  return qv_ipc_encode_message(&m, out, out_size, err);
}

qv_status qv_ipc_encode_dictionary_message(int64_t dict_id, bool is_delta,
                                           const qv_ipc_batch_desc *desc, int64_t body_length,
                                           uint8_t **out, int64_t *out_size, qv_error *err) {
  qv_ipc_message m;
  memset(&m, 0, sizeof m);
  m.type = QV_MSG_DICTIONARY_BATCH;
  m.batch = *desc;
  m.dict_id = dict_id;
  m.is_delta = is_delta;
  m.body_length = body_length;
  return qv_ipc_encode_message(&m, out, out_size, err);
}

/* Vector of Block structs (24 bytes: offset, metaDataLength, pad, body). */
static qv_fb_ref enc_blocks(enc_ctx *c, const qv_ipc_block *blocks, int64_t n) {
  uint8_t *le = calloc((size_t)(n > 0 ? n : 1), QV_FBS_BLOCK_SIZE);
  if (le == NULL) {
    enc_fail(c, QV_ENOMEM, "out of memory", "");
    return 0;
  }
  for (int64_t i = 0; i < n; i++) {
    uint8_t *p = le + i * QV_FBS_BLOCK_SIZE;
    uint64_t off = (uint64_t)blocks[i].offset;
    uint32_t ml = (uint32_t)blocks[i].metadata_length;
    uint64_t body = (uint64_t)blocks[i].body_length;
    for (int k = 0; k < 8; k++) p[QV_FBS_BLOCK_OFFSET + k] = (uint8_t)(off >> (8 * k));
    for (int k = 0; k < 4; k++) p[QV_FBS_BLOCK_METADATA_LENGTH + k] = (uint8_t)(ml >> (8 * k));
    for (int k = 0; k < 8; k++) p[QV_FBS_BLOCK_BODY_LENGTH + k] = (uint8_t)(body >> (8 * k));
  }
  qv_fb_ref vec = qv_fb_create_vector(&c->b, le, n, QV_FBS_BLOCK_SIZE, 8);
  free(le);
  return vec;
}

qv_status qv_ipc_encode_footer(const qv_ipc_footer *f, uint8_t **out, int64_t *out_size,
                               qv_error *err) {
  if (f->schema == NULL) {
    return qv_error_set(err, QV_EARG, "encode: footer without a schema");
  }
  enc_ctx c;
  enc_init(&c, err);
  qv_fb_ref schema = enc_schema(&c, f->schema, f->big_endian);
  qv_fb_ref dicts = enc_blocks(&c, f->dictionaries, f->n_dictionaries);
  qv_fb_ref batches = enc_blocks(&c, f->record_batches, f->n_record_batches);
  qv_fb_ref md = enc_metadata(&c, &f->custom_metadata);
  qv_fb_start_table(&c.b);
  qv_fb_add_i16(&c.b, QV_FBS_FOOTER_VERSION, QV_METADATA_V5, QV_METADATA_V1);
  qv_fb_add_ref(&c.b, QV_FBS_FOOTER_SCHEMA, schema);
  qv_fb_add_ref(&c.b, QV_FBS_FOOTER_DICTIONARIES, dicts);
  qv_fb_add_ref(&c.b, QV_FBS_FOOTER_RECORD_BATCHES, batches);
  qv_fb_add_ref(&c.b, QV_FBS_FOOTER_CUSTOM_METADATA, md);
  qv_fb_ref root = qv_fb_end_table(&c.b);
  return enc_finish(&c, root, out, out_size);
}
