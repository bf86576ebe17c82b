/*
 * parquet_write_schema.c — the Parquet writer's schema side: Arrow fields
 * to Parquet SchemaElements (the mapping pyarrow's writer uses, see
 * apache/arrow cpp/src/parquet/arrow/schema.cc), the leaf columns with
 * their Arrow paths and levels, the thrift encoding of the schema list,
 * and two small encoders the writer shares (RLE/bit-packing hybrid,
 * base64). Formats layer.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/parquet_format.h"
#include "formats/parquet_write_internal.h"

void qv_pw_schema_reset(qv_pw_schema *s) {
  for (int32_t i = 0; i < s->n_elems; i++) free(s->elems[i].name);
  for (int32_t i = 0; i < s->n_leaves; i++) {
    for (int32_t j = 0; j < s->leaves[i].n_path; j++) free(s->leaves[i].path[j]);
    free(s->leaves[i].path);
  }
  free(s->elems);
  free(s->leaves);
  memset(s, 0, sizeof *s);
}

typedef struct build_ctx {
  qv_pw_schema *s;
  qv_error *err;
  int32_t column;
  const char *column_name;
  /* the path being built */
  int32_t n_steps;
  qv_pw_step steps[QV_PW_MAX_DEPTH];
  int16_t def, rep;
  int32_t n_names;
  const char *names[QV_PW_MAX_DEPTH * 2 + 2];
} build_ctx;

static qv_pw_elem *new_elem(build_ctx *c, const char *name, bool nullable) {
  qv_pw_schema *s = c->s;
  if (s->n_elems == s->cap_elems) {
    int32_t cap = s->cap_elems ? s->cap_elems * 2 : 16;
    qv_pw_elem *p = realloc(s->elems, sizeof *p * (size_t)cap);
    if (p == NULL) return NULL;
    s->elems = p;
    s->cap_elems = cap;
  }
  qv_pw_elem *e = &s->elems[s->n_elems];
  memset(e, 0, sizeof *e);
  e->name = strdup(name);
  if (e->name == NULL) return NULL;
  s->n_elems++;
  e->repetition = nullable ? QV_PQ_OPTIONAL : QV_PQ_REQUIRED;
  e->ptype = -1;
  e->converted = -1;
  return e;
}

static qv_status oom(build_ctx *c) {
  return qv_error_set(c->err, QV_ENOMEM, "parquet writer: out of memory building the schema");
}

static qv_status unsupported(build_ctx *c, const qv_type *t) {
  char buf[128];
  qv_type_to_string(t, buf, sizeof buf);
  return qv_error_set(c->err, QV_ENOTSUP,
                      "parquet writer: column '%s': type %s cannot be written "
                      "to Parquet",
                      c->column_name, buf);
}

static int32_t decimal_bytes(int32_t precision) {
  /* smallest n with 10^precision - 1 < 2^(8n - 1) */
  return (int32_t)ceil((precision * 3.321928094887362 + 1.0) / 8.0);
}

static qv_status add_leaf(build_ctx *c, const qv_type *t, const char *name, bool nullable,
                          bool dictionary) {
  qv_pw_elem *e = new_elem(c, name, nullable);
  if (e == NULL) return oom(c);
  qv_pw_leaf lf;
  memset(&lf, 0, sizeof lf);
  lf.dictionary = dictionary;
  lf.src_width = qv_int_type_bytes(t->id);
  lf.src_unsigned =
      t->id == QV_UINT8 || t->id == QV_UINT16 || t->id == QV_UINT32 || t->id == QV_UINT64;
  int unit_pq = t->unit == QV_MILLI   ? QV_PQ_MILLIS
                : t->unit == QV_MICRO ? QV_PQ_MICROS
                                      : QV_PQ_NANOS;
  switch (t->id) {
    case QV_NA:
      e->ptype = QV_PQ_INT32;
      e->logical = QV_PQ_LT_UNKNOWN;
      e->repetition = QV_PQ_OPTIONAL;
      nullable = true;
      lf.conv = QV_PW_CV_NULL;
      lf.order = QV_PW_ORD_NONE;
      break;
    case QV_BOOL:
      e->ptype = QV_PQ_BOOLEAN;
      lf.conv = QV_PW_CV_BOOL;
      lf.order = QV_PW_ORD_BOOL;
      break;
    case QV_INT8:
    case QV_INT16:
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32: {
      static const int conv_signed[] = {QV_PQ_CT_INT_8, QV_PQ_CT_INT_16};
      static const int conv_unsigned[] = {QV_PQ_CT_UINT_8, QV_PQ_CT_UINT_16, QV_PQ_CT_UINT_32};
      int k = lf.src_width == 1 ? 0 : lf.src_width == 2 ? 1 : 2;
      e->ptype = QV_PQ_INT32;
      e->logical = QV_PQ_LT_INTEGER;
      e->bit_width = lf.src_width * 8;
      e->is_signed = !lf.src_unsigned;
      e->converted = lf.src_unsigned ? conv_unsigned[k] : conv_signed[k];
      lf.conv = QV_PW_CV_INT32;
      lf.order = lf.src_unsigned ? QV_PW_ORD_U32 : QV_PW_ORD_I32;
      break;
    }
    case QV_INT32:
      e->ptype = QV_PQ_INT32;
      lf.conv = QV_PW_CV_INT32;
      lf.order = QV_PW_ORD_I32;
      break;
    case QV_INT64:
      e->ptype = QV_PQ_INT64;
      lf.conv = QV_PW_CV_INT64;
      lf.order = QV_PW_ORD_I64;
      break;
    case QV_UINT64:
      e->ptype = QV_PQ_INT64;
      e->logical = QV_PQ_LT_INTEGER;
      e->bit_width = 64;
      e->is_signed = false;
      e->converted = QV_PQ_CT_UINT_64;
      lf.conv = QV_PW_CV_INT64;
      lf.order = QV_PW_ORD_U64;
      break;
    case QV_HALF_FLOAT:
      e->ptype = QV_PQ_FIXED_LEN_BYTE_ARRAY;
      e->type_length = 2;
      e->logical = QV_PQ_LT_FLOAT16;
      lf.conv = QV_PW_CV_HALF;
      lf.order = QV_PW_ORD_HALF;
      break;
    case QV_FLOAT:
      e->ptype = QV_PQ_FLOAT;
      lf.conv = QV_PW_CV_FLOAT;
      lf.order = QV_PW_ORD_FLOAT;
      break;
    case QV_DOUBLE:
      e->ptype = QV_PQ_DOUBLE;
      lf.conv = QV_PW_CV_DOUBLE;
      lf.order = QV_PW_ORD_DOUBLE;
      break;
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256:
      e->logical = QV_PQ_LT_DECIMAL;
      e->converted = QV_PQ_CT_DECIMAL;
      e->scale = t->scale;
      e->precision = t->precision;
      if (t->precision < 1) return unsupported(c, t);
      e->ptype = QV_PQ_FIXED_LEN_BYTE_ARRAY;
      e->type_length = decimal_bytes(t->precision);
      lf.src_width = qv_type_byte_width(t);
      if (e->type_length > lf.src_width) e->type_length = lf.src_width;
      lf.conv = QV_PW_CV_DECIMAL;
      lf.order = QV_PW_ORD_DECIMAL;
      break;
    case QV_DATE32:
    case QV_DATE64:
      e->ptype = QV_PQ_INT32;
      e->logical = QV_PQ_LT_DATE;
      e->converted = QV_PQ_CT_DATE;
      lf.src_width = t->id == QV_DATE32 ? 4 : 8;
      lf.conv = t->id == QV_DATE32 ? QV_PW_CV_INT32 : QV_PW_CV_DATE64;
      lf.order = QV_PW_ORD_I32;
      break;
    case QV_TIME32:
      e->ptype = QV_PQ_INT32;
      e->logical = QV_PQ_LT_TIME;
      e->utc = false; /* as pyarrow: local time, so no legacy TIME_MILLIS */
      e->unit = QV_PQ_MILLIS;
      lf.src_width = 4;
      lf.conv = t->unit == QV_SECOND ? QV_PW_CV_TIME32_S : QV_PW_CV_INT32;
      lf.order = QV_PW_ORD_I32;
      break;
    case QV_TIME64:
      e->ptype = QV_PQ_INT64;
      e->logical = QV_PQ_LT_TIME;
      e->utc = false;
      e->unit = unit_pq;
      lf.src_width = 8;
      lf.conv = QV_PW_CV_INT64;
      lf.order = QV_PW_ORD_I64;
      break;
    case QV_TIMESTAMP:
      e->ptype = QV_PQ_INT64;
      e->logical = QV_PQ_LT_TIMESTAMP;
      e->utc = t->timezone != NULL && t->timezone[0] != '\0';
      e->unit = t->unit == QV_SECOND ? QV_PQ_MILLIS : unit_pq;
      if (e->utc && e->unit == QV_PQ_MILLIS) e->converted = QV_PQ_CT_TIMESTAMP_MILLIS;
      if (e->utc && e->unit == QV_PQ_MICROS) e->converted = QV_PQ_CT_TIMESTAMP_MICROS;
      lf.src_width = 8;
      lf.conv = t->unit == QV_SECOND ? QV_PW_CV_TS_S : QV_PW_CV_INT64;
      lf.order = QV_PW_ORD_I64;
      break;
    case QV_DURATION:
      e->ptype = QV_PQ_INT64;
      lf.src_width = 8;
      lf.conv = QV_PW_CV_INT64;
      lf.order = QV_PW_ORD_I64;
      break;
    case QV_STRING:
    case QV_LARGE_STRING:
    case QV_STRING_VIEW:
    case QV_BINARY:
    case QV_LARGE_BINARY:
    case QV_BINARY_VIEW:
      e->ptype = QV_PQ_BYTE_ARRAY;
      if (t->id == QV_STRING || t->id == QV_LARGE_STRING || t->id == QV_STRING_VIEW) {
        e->logical = QV_PQ_LT_STRING;
        e->converted = QV_PQ_CT_UTF8;
      }
      lf.conv = (t->id == QV_STRING || t->id == QV_BINARY)               ? QV_PW_CV_BINARY
                : (t->id == QV_LARGE_STRING || t->id == QV_LARGE_BINARY) ? QV_PW_CV_LARGE_BINARY
                                                                         : QV_PW_CV_VIEW;
      lf.order = QV_PW_ORD_BYTES;
      break;
    case QV_FIXED_SIZE_BINARY:
      if (t->byte_width <= 0) return unsupported(c, t);
      e->ptype = QV_PQ_FIXED_LEN_BYTE_ARRAY;
      e->type_length = t->byte_width;
      lf.conv = QV_PW_CV_FSB;
      lf.order = QV_PW_ORD_BYTES;
      break;
    default: return unsupported(c, t);
  }
  if (c->n_steps >= QV_PW_MAX_DEPTH) return unsupported(c, t);
  lf.column = c->column;
  memcpy(lf.steps, c->steps, sizeof(qv_pw_step) * (size_t)c->n_steps);
  lf.n_steps = c->n_steps + 1;
  lf.steps[c->n_steps].kind = QV_PW_STEP_LEAF;
  lf.steps[c->n_steps].nullable = nullable;
  lf.max_def = (int16_t)(c->def + (nullable ? 1 : 0));
  lf.max_rep = c->rep;
  lf.ptype = e->ptype;
  lf.type_length = e->type_length;
  lf.n_path = c->n_names + 1;
  lf.path = calloc((size_t)lf.n_path, sizeof(char *));
  if (lf.path == NULL) return oom(c);
  for (int32_t i = 0; i < lf.n_path; i++) {
    lf.path[i] = strdup(i < c->n_names ? c->names[i] : name);
    if (lf.path[i] == NULL) {
      for (int32_t j = 0; j < i; j++) free(lf.path[j]);
      free(lf.path);
      return oom(c);
    }
  }
  qv_pw_schema *s = c->s;
  if (s->n_leaves == s->cap_leaves) {
    int32_t cap = s->cap_leaves ? s->cap_leaves * 2 : 16;
    qv_pw_leaf *p = realloc(s->leaves, sizeof *p * (size_t)cap);
    if (p == NULL) {
      for (int32_t j = 0; j < lf.n_path; j++) free(lf.path[j]);
      free(lf.path);
      return oom(c);
    }
    s->leaves = p;
    s->cap_leaves = cap;
  }
  s->leaves[s->n_leaves++] = lf;
  return QV_OK;
}

static qv_status add_node(build_ctx *c, const qv_type *t, const char *name, bool nullable);

/* A step onto the path (undone by pop). */
static bool push(build_ctx *c, qv_pw_step_kind kind, bool nullable, int32_t child) {
  if (c->n_steps >= QV_PW_MAX_DEPTH - 1) return false;
  qv_pw_step *st = &c->steps[c->n_steps++];
  st->kind = kind;
  st->nullable = nullable;
  st->child = child;
  st->rep = 0;
  if (nullable) c->def++;
  if (kind == QV_PW_STEP_LIST) {
    c->def++;
    c->rep++;
    st->rep = c->rep;
  }
  return true;
}

static void pop(build_ctx *c) {
  qv_pw_step *st = &c->steps[--c->n_steps];
  if (st->nullable) c->def--;
  if (st->kind == QV_PW_STEP_LIST) {
    c->def--;
    c->rep--;
  }
}

static qv_status add_node(build_ctx *c, const qv_type *t, const char *name, bool nullable) {
  if (c->n_names >= QV_PW_MAX_DEPTH * 2) return unsupported(c, t);
  switch (t->id) {
    case QV_DICTIONARY: {
      const qv_type *v = t->value_type;
      if (v->id == QV_DICTIONARY || v->n_children > 0) return unsupported(c, t);
      return add_leaf(c, v, name, nullable, true);
    }
    case QV_STRUCT: {
      if (t->n_children == 0) return unsupported(c, t);
      qv_pw_elem *e = new_elem(c, name, nullable);
      if (e == NULL) return oom(c);
      e->n_children = t->n_children;
      if (!push(c, QV_PW_STEP_STRUCT, nullable, 0)) return unsupported(c, t);
      c->names[c->n_names++] = name;
      for (int32_t i = 0; i < t->n_children; i++) {
        c->steps[c->n_steps - 1].child = i;
        qv_status st =
            add_node(c, t->children[i].type, t->children[i].name, t->children[i].nullable);
        if (st != QV_OK) return st;
      }
      c->n_names--;
      pop(c);
      return QV_OK;
    }
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_FIXED_SIZE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: {
      qv_pw_elem *e = new_elem(c, name, nullable);
      if (e == NULL) return oom(c);
      e->n_children = 1;
      e->converted = QV_PQ_CT_LIST;
      e->logical = QV_PQ_LT_LIST;
      qv_pw_elem *r = new_elem(c, "list", false);
      if (r == NULL) return oom(c);
      r->repetition = QV_PQ_REPEATED;
      r->n_children = 1;
      if (!push(c, QV_PW_STEP_LIST, nullable, 0)) return unsupported(c, t);
      c->names[c->n_names++] = name;
      c->names[c->n_names++] = "list";
      qv_status st = add_node(c, t->children[0].type, "element", t->children[0].nullable);
      if (st != QV_OK) return st;
      c->n_names -= 2;
      pop(c);
      return QV_OK;
    }
    case QV_MAP: {
      const qv_type *entries = t->children[0].type;
      if (entries->n_children != 2) return unsupported(c, t);
      qv_pw_elem *e = new_elem(c, name, nullable);
      if (e == NULL) return oom(c);
      e->n_children = 1;
      e->converted = QV_PQ_CT_MAP;
      e->logical = QV_PQ_LT_MAP;
      qv_pw_elem *r = new_elem(c, "key_value", false);
      if (r == NULL) return oom(c);
      r->repetition = QV_PQ_REPEATED;
      r->n_children = 2;
      if (!push(c, QV_PW_STEP_LIST, nullable, 0)) return unsupported(c, t);
      if (!push(c, QV_PW_STEP_STRUCT, false, 0)) return unsupported(c, t);
      c->names[c->n_names++] = name;
      c->names[c->n_names++] = "key_value";
      static const char *const kv_names[2] = {"key", "value"};
      for (int32_t i = 0; i < 2; i++) {
        c->steps[c->n_steps - 1].child = i;
        qv_status st = add_node(c, entries->children[i].type, kv_names[i],
                                i == 0 ? false : entries->children[i].nullable);
        if (st != QV_OK) return st;
      }
      c->n_names -= 2;
      pop(c);
      pop(c);
      return QV_OK;
    }
    default: return add_leaf(c, t, name, nullable, false);
  }
}

qv_status qv_pw_schema_build(const qv_schema *schema, qv_pw_schema *out, qv_error *err) {
  memset(out, 0, sizeof *out);
  build_ctx c;
  memset(&c, 0, sizeof c);
  c.s = out;
  c.err = err;
  qv_pw_elem *root = new_elem(&c, "schema", false);
  if (root == NULL) return oom(&c);
  root->n_children = qv_schema_num_fields(schema);
  for (int32_t i = 0; i < qv_schema_num_fields(schema); i++) {
    const qv_field *f = qv_schema_field(schema, i);
    c.column = i;
    c.column_name = f->name;
    c.n_steps = 0;
    c.def = c.rep = 0;
    c.n_names = 0;
    qv_status st = add_node(&c, f->type, f->name, f->nullable);
    if (st != QV_OK) {
      qv_pw_schema_reset(out);
      return st;
    }
  }
  return QV_OK;
}

static void encode_unit(qv_tw *w, int16_t id, int unit) {
  qv_tw_field_struct(w, id);
  qv_tw_field_struct(w, (int16_t)unit);
  qv_tw_struct_end(w);
  qv_tw_struct_end(w);
}

static void encode_logical(qv_tw *w, const qv_pw_elem *e) {
  qv_tw_field_struct(w, 10); /* SchemaElement.logicalType: LogicalType union */
  qv_tw_field_struct(w, (int16_t)e->logical);
  switch (e->logical) {
    case QV_PQ_LT_DECIMAL:
      qv_tw_field_i32(w, 1, e->scale);
      qv_tw_field_i32(w, 2, e->precision);
      break;
    case QV_PQ_LT_TIME:
    case QV_PQ_LT_TIMESTAMP:
      qv_tw_field_bool(w, 1, e->utc);
      encode_unit(w, 2, e->unit);
      break;
    case QV_PQ_LT_INTEGER:
      qv_tw_field_i8(w, 1, (int8_t)e->bit_width);
      qv_tw_field_bool(w, 2, e->is_signed);
      break;
    default: break;
  }
  qv_tw_struct_end(w);
  qv_tw_struct_end(w);
}

void qv_pw_schema_encode(const qv_pw_schema *s, qv_tw *w) {
  qv_tw_field_list(w, 2, QV_TC_STRUCT, s->n_elems);
  for (int32_t i = 0; i < s->n_elems; i++) {
    const qv_pw_elem *e = &s->elems[i];
    qv_tw_struct_begin(w);
    if (e->ptype >= 0) qv_tw_field_i32(w, 1, e->ptype);
    if (e->ptype == QV_PQ_FIXED_LEN_BYTE_ARRAY) qv_tw_field_i32(w, 2, e->type_length);
    if (i > 0) qv_tw_field_i32(w, 3, e->repetition);
    qv_tw_field_string(w, 4, e->name);
    if (e->ptype < 0) qv_tw_field_i32(w, 5, e->n_children);
    if (e->converted >= 0) qv_tw_field_i32(w, 6, e->converted);
    if (e->logical == QV_PQ_LT_DECIMAL) {
      qv_tw_field_i32(w, 7, e->scale);
      qv_tw_field_i32(w, 8, e->precision);
    }
    if (e->logical != QV_PQ_LT_NONE) encode_logical(w, e);
    qv_tw_struct_end(w);
  }
}

/* ------------------------------------------------------ RLE / bit-packing */

static void rle_run(qv_tw *w, uint32_t value, int64_t count, int bit_width) {
  qv_tw_uvarint(w, (uint64_t)count << 1);
  uint8_t b[4];
  int nb = (bit_width + 7) / 8;
  for (int i = 0; i < nb; i++) b[i] = (uint8_t)(value >> (8 * i));
  qv_tw_bytes(w, b, nb);
}

/* Bit-pack values [0, n) (n <= groups * 8; the rest zero) as `groups`
 * groups of 8. */
static void packed_run(qv_tw *w, const uint32_t *v, int64_t n, int64_t groups, int bit_width) {
  qv_tw_uvarint(w, (uint64_t)groups << 1 | 1);
  uint8_t out[32 * 8 / 8 * 63 + 8];
  int64_t total = groups * 8;
  /* bits gathered in a word, stored 32 at a time (little-endian: the
   * first value in the lowest bits) */
  uint64_t acc = 0;
  int bits = 0;
  int64_t o = 0;
  for (int64_t i = 0; i < total; i++) {
    uint64_t x = i < n ? v[i] : 0;
    acc |= x << bits;
    bits += bit_width;
    if (bits >= 32) {
      uint32_t lo = (uint32_t)acc;
      memcpy(out + o, &lo, 4);
      o += 4;
      acc >>= 32;
      bits -= 32;
    }
  }
  for (; bits > 0; bits -= 8) {
    out[o++] = (uint8_t)acc;
    acc >>= 8;
  }
  qv_tw_bytes(w, out, o);
}

static int64_t run_at(const uint32_t *v, int64_t i, int64_t n, int64_t cap) {
  int64_t j = i + 1;
  while (j < n && j - i < cap && v[j] == v[i]) j++;
  return j - i;
}

void qv_pw_rle_encode_u32(const uint32_t *v, int64_t n, int bit_width, qv_tw *w) {
  int64_t i = 0;
  while (i < n) {
    int64_t r = run_at(v, i, n, INT64_MAX);
    if (r >= 8) {
      rle_run(w, v[i], r, bit_width);
      i += r;
      continue;
    }
    int64_t start = i, groups = 0;
    do {
      i += 8;
      groups++;
    } while (i < n && groups < 63 && run_at(v, i, n, 8) < 8);
    if (i > n) i = n;
    packed_run(w, v + start, i - start, groups, bit_width);
  }
}

/* ---------------------------------------------------------------- base64 */

void qv_pw_base64(const uint8_t *p, int64_t n, qv_tw *w) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int64_t i = 0; i < n; i += 3) {
    uint32_t x = (uint32_t)p[i] << 16;
    if (i + 1 < n) x |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n) x |= p[i + 2];
    char o[4] = {tab[x >> 18 & 63], tab[x >> 12 & 63], i + 1 < n ? tab[x >> 6 & 63] : '=',
                 i + 2 < n ? tab[x & 63] : '='};
    qv_tw_bytes(w, o, 4);
  }
}
