/*
 * parquet_read_schema.c — the Parquet schema (the flattened SchemaElement
 * list of the footer) as a tree of Arrow fields, mapped the way
 * pyarrow.parquet.read_table does by default (apache/arrow
 * cpp/src/parquet/arrow/schema.cc): logical and converted annotations to
 * Arrow types, LIST groups in their 3-level form and the legacy 2-level
 * forms, MAP / MAP_KEY_VALUE groups, repeated fields without annotation
 * as non-null lists, and for every node the repetition/definition levels
 * the assembly of parquet_read.c needs. Formats layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/parquet_read_internal.h"

void qv_pq_node_free(qv_pq_node *n) {
  if (n == NULL) return;
  for (int32_t i = 0; i < n->n_children; i++) qv_pq_node_free(n->children[i]);
  free(n->children);
  qv_type_unref(n->type);
  qv_metadata_reset(&n->metadata);
  free(n);
}

typedef struct schema_ctx {
  const qv_pq_file_meta *m;
  int32_t next; /* next schema element to consume */
  int32_t n_leaves;
  qv_pq_node **leaves;
  int32_t leaves_cap;
  qv_error *err;
  const char *file;
} schema_ctx;

static qv_status bad(schema_ctx *c, qv_status st, const char *what, const char *name) {
  return qv_error_set(c->err, st, "%s: schema element '%s': %s", c->file, name ? name : "", what);
}

static qv_pq_node *node_new(int kind) {
  qv_pq_node *n = calloc(1, sizeof *n);
  if (n) {
    n->kind = kind;
    n->leaf = -1;
    n->first_leaf = -1;
  }
  return n;
}

static qv_status add_child(schema_ctx *c, qv_pq_node *parent, qv_pq_node *child) {
  qv_pq_node **nc = realloc(parent->children, (size_t)(parent->n_children + 1) * sizeof *nc);
  if (nc == NULL) {
    qv_pq_node_free(child);
    return qv_error_set(c->err, QV_ENOMEM, "out of memory");
  }
  parent->children = nc;
  parent->children[parent->n_children++] = child;
  if (parent->first_leaf < 0) parent->first_leaf = child->first_leaf;
  return QV_OK;
}

static qv_type *decimal_type(int32_t precision, int32_t scale) {
  qv_type *t = qv_type_new(precision > 38 ? QV_DECIMAL256 : QV_DECIMAL128);
  if (t) {
    t->precision = precision;
    t->scale = scale;
  }
  return t;
}

static qv_time_unit unit_of(int32_t u) {
  return u == QV_PQ_MILLIS ? QV_MILLI : u == QV_PQ_MICROS ? QV_MICRO : QV_NANO;
}

/* The Arrow type of a primitive element and how its values convert. */
static qv_status leaf_type(schema_ctx *c, const qv_pq_schema_element *e, qv_pq_node *n) {
  int32_t lt = e->logical, ct = e->converted;
  qv_type *t = NULL;
  n->conv = QV_PQ_CONV_COPY;
  bool is_dec = lt == QV_PQ_LT_DECIMAL || (lt == QV_PQ_LT_NONE && ct == QV_PQ_CT_DECIMAL);
  int32_t prec = lt == QV_PQ_LT_DECIMAL ? e->lt_precision : e->precision;
  int32_t scale = lt == QV_PQ_LT_DECIMAL ? e->lt_scale : e->scale;
  if (lt == QV_PQ_LT_UNKNOWN) {
    n->conv = QV_PQ_CONV_NULL;
    n->type = qv_type_new(QV_NA);
    return n->type ? QV_OK : qv_error_set(c->err, QV_ENOMEM, "out of memory");
  }
  if (is_dec && (prec < 1 || prec > 76 || scale < 0 || scale > prec))
    return bad(c, QV_EINVAL, "decimal with a bad precision or scale", e->name);
  switch (e->type) {
    case QV_PQ_BOOLEAN: t = qv_type_new(QV_BOOL); break;
    case QV_PQ_INT32: {
      qv_type_id id = QV_INT32;
      if (is_dec) {
        t = decimal_type(prec, scale);
        n->conv = QV_PQ_CONV_DECIMAL_INT;
        break;
      }
      if (lt == QV_PQ_LT_INTEGER) {
        int bw = e->lt_bit_width;
        id = bw == 8    ? (e->lt_signed ? QV_INT8 : QV_UINT8)
             : bw == 16 ? (e->lt_signed ? QV_INT16 : QV_UINT16)
                        : (e->lt_signed ? QV_INT32 : QV_UINT32);
      } else if (lt == QV_PQ_LT_DATE || (lt == QV_PQ_LT_NONE && ct == QV_PQ_CT_DATE)) {
        id = QV_DATE32;
      } else if (lt == QV_PQ_LT_TIME || (lt == QV_PQ_LT_NONE && ct == QV_PQ_CT_TIME_MILLIS)) {
        t = qv_type_new(QV_TIME32);
        if (t) t->unit = QV_MILLI;
        break;
      } else if (lt == QV_PQ_LT_NONE) {
        switch (ct) {
          case QV_PQ_CT_INT_8: id = QV_INT8; break;
          case QV_PQ_CT_INT_16: id = QV_INT16; break;
          case QV_PQ_CT_UINT_8: id = QV_UINT8; break;
          case QV_PQ_CT_UINT_16: id = QV_UINT16; break;
          case QV_PQ_CT_UINT_32: id = QV_UINT32; break;
          default: break;
        }
      }
      t = qv_type_new(id);
      if (id == QV_INT8 || id == QV_UINT8 || id == QV_INT16 || id == QV_UINT16)
        n->conv = QV_PQ_CONV_NARROW;
      break;
    }
    case QV_PQ_INT64: {
      if (is_dec) {
        t = decimal_type(prec, scale);
        n->conv = QV_PQ_CONV_DECIMAL_INT;
      } else if (lt == QV_PQ_LT_INTEGER) {
        t = qv_type_new(e->lt_signed ? QV_INT64 : QV_UINT64);
      } else if (lt == QV_PQ_LT_TIMESTAMP) {
        t = qv_type_timestamp(unit_of(e->lt_unit), e->lt_utc ? "UTC" : NULL);
      } else if (lt == QV_PQ_LT_TIME) {
        t = qv_type_new(QV_TIME64);
        if (t) t->unit = unit_of(e->lt_unit);
        if (t && e->lt_unit == QV_PQ_MILLIS) t->id = QV_TIME32;
      } else if (lt == QV_PQ_LT_NONE && ct == QV_PQ_CT_TIMESTAMP_MILLIS) {
        t = qv_type_timestamp(QV_MILLI, "UTC");
      } else if (lt == QV_PQ_LT_NONE && ct == QV_PQ_CT_TIMESTAMP_MICROS) {
        t = qv_type_timestamp(QV_MICRO, "UTC");
      } else if (lt == QV_PQ_LT_NONE && ct == QV_PQ_CT_TIME_MICROS) {
        t = qv_type_new(QV_TIME64);
        if (t) t->unit = QV_MICRO;
      } else if (lt == QV_PQ_LT_NONE && ct == QV_PQ_CT_UINT_64) {
        t = qv_type_new(QV_UINT64);
      } else {
        t = qv_type_new(QV_INT64);
      }
      break;
    }
    case QV_PQ_INT96:
      t = qv_type_timestamp(QV_NANO, NULL);
      n->conv = QV_PQ_CONV_INT96;
      break;
    case QV_PQ_FLOAT: t = qv_type_new(QV_FLOAT); break;
    case QV_PQ_DOUBLE: t = qv_type_new(QV_DOUBLE); break;
    case QV_PQ_BYTE_ARRAY:
      if (is_dec) {
        t = decimal_type(prec, scale);
        n->conv = QV_PQ_CONV_DECIMAL_BYTES;
      } else if (lt == QV_PQ_LT_STRING || lt == QV_PQ_LT_JSON ||
                 (lt == QV_PQ_LT_NONE && (ct == QV_PQ_CT_UTF8 || ct == QV_PQ_CT_JSON))) {
        t = qv_type_new(QV_STRING);
      } else {
        t = qv_type_new(QV_BINARY);
      }
      break;
    case QV_PQ_FIXED_LEN_BYTE_ARRAY:
      if (e->type_length < 0 || e->type_length > (1 << 20))
        return bad(c, QV_EINVAL, "FIXED_LEN_BYTE_ARRAY without a valid type_length", e->name);
      if (is_dec) {
        if (e->type_length < 1 || e->type_length > 32)
          return bad(c, QV_EINVAL, "decimal FIXED_LEN_BYTE_ARRAY wider than 32 bytes", e->name);
        t = decimal_type(prec, scale);
        n->conv = QV_PQ_CONV_DECIMAL_BYTES;
      } else if (lt == QV_PQ_LT_FLOAT16 && e->type_length == 2) {
        t = qv_type_new(QV_HALF_FLOAT);
      } else {
        t = qv_type_new(QV_FIXED_SIZE_BINARY);
        if (t) t->byte_width = e->type_length;
      }
      break;
    default: return bad(c, QV_EINVAL, "unknown physical type", e->name);
  }
  if (t == NULL) return qv_error_set(c->err, QV_ENOMEM, "out of memory");
  n->type = t;
  return QV_OK;
}

static qv_status build(schema_ctx *c, int16_t pdef, int16_t prep, int16_t rep_ctx, int16_t def_ctx,
                       int depth, qv_pq_node **out);

/* A primitive leaf for element e (already consumed), at levels def/rep. */
static qv_status make_leaf(schema_ctx *c, const qv_pq_schema_element *e, int16_t def, int16_t rep,
                           bool nullable, int16_t rep_ctx, int16_t def_ctx, qv_pq_node **out) {
  qv_pq_node *n = node_new(QV_PQ_NODE_LEAF);
  if (n == NULL) return qv_error_set(c->err, QV_ENOMEM, "out of memory");
  n->name = e->name;
  n->def = def;
  n->max_def = def;
  n->max_rep = rep;
  n->nullable = nullable;
  n->rep_ctx = rep_ctx;
  n->def_ctx = def_ctx;
  n->physical = e->type;
  n->type_length = e->type_length;
  qv_status st = leaf_type(c, e, n);
  if (st == QV_OK && c->n_leaves == c->leaves_cap) {
    int32_t cap = c->leaves_cap ? c->leaves_cap * 2 : 16;
    qv_pq_node **nl = realloc(c->leaves, (size_t)cap * sizeof *nl);
    if (nl == NULL) st = qv_error_set(c->err, QV_ENOMEM, "out of memory");
    else {
      c->leaves = nl;
      c->leaves_cap = cap;
    }
  }
  if (st != QV_OK) {
    qv_pq_node_free(n);
    return st;
  }
  n->leaf = c->n_leaves;
  n->first_leaf = n->leaf;
  c->leaves[c->n_leaves++] = n;
  *out = n;
  return QV_OK;
}

/* The children of group element e (already consumed) as a struct node. */
static qv_status make_struct(schema_ctx *c, const qv_pq_schema_element *e, int16_t def, int16_t rep,
                             bool nullable, int16_t rep_ctx, int16_t def_ctx, int depth,
                             qv_pq_node **out) {
  if (e->num_children <= 0)
    return bad(c, QV_ENOTSUP, "a group without children (an empty struct)", e->name);
  qv_pq_node *n = node_new(QV_PQ_NODE_STRUCT);
  if (n == NULL) return qv_error_set(c->err, QV_ENOMEM, "out of memory");
  n->name = e->name;
  n->def = def;
  n->nullable = nullable;
  n->rep_ctx = rep_ctx;
  n->def_ctx = def_ctx;
  qv_status st = QV_OK;
  for (int32_t i = 0; i < e->num_children && st == QV_OK; i++) {
    qv_pq_node *ch = NULL;
    st = build(c, def, rep, rep_ctx, def_ctx, depth + 1, &ch);
    if (st == QV_OK) st = add_child(c, n, ch);
  }
  if (st != QV_OK) {
    qv_pq_node_free(n);
    return st;
  }
  *out = n;
  return QV_OK;
}

static qv_status make_list(schema_ctx *c, const qv_pq_schema_element *e, int16_t def, int16_t rep,
                           bool nullable, int16_t rep_ctx, int16_t def_ctx, int depth,
                           qv_pq_node **out);

static bool is_list_group(const qv_pq_schema_element *e) {
  return e->type < 0 && (e->logical == QV_PQ_LT_LIST || e->converted == QV_PQ_CT_LIST);
}
static bool is_map_group(const qv_pq_schema_element *e) {
  return e->type < 0 && (e->logical == QV_PQ_LT_MAP || e->converted == QV_PQ_CT_MAP ||
                         e->converted == QV_PQ_CT_MAP_KEY_VALUE);
}

/* The element (own levels at def/rep) of a repeated element e: the node
 * that repeats, as a leaf, struct or (a LIST/MAP-annotated repeated
 * group) list, non-null. */
static qv_status make_repeated_self(schema_ctx *c, const qv_pq_schema_element *e, int16_t def,
                                    int16_t rep, int depth, qv_pq_node **out) {
  if (e->type >= 0) return make_leaf(c, e, def, rep, false, rep, def, out);
  if (is_list_group(e) || is_map_group(e))
    return make_list(c, e, def, rep, false, rep, def, depth, out);
  return make_struct(c, e, def, rep, false, rep, def, depth, out);
}

static qv_status finish_list(schema_ctx *c, qv_pq_node *list, qv_pq_node *elem, qv_pq_node **out) {
  qv_status st = add_child(c, list, elem);
  if (st != QV_OK) {
    qv_pq_node_free(list);
    return st;
  }
  *out = list;
  return QV_OK;
}

static qv_status build_node(schema_ctx *c, int16_t pdef, int16_t prep, int16_t rep_ctx,
                            int16_t def_ctx, int depth, qv_pq_node **out);

/* Field metadata as pyarrow sets it: PARQUET:field_id when the element
 * has one, the arrow.uuid extension on UUID columns. */
static qv_status field_metadata(schema_ctx *c, const qv_pq_schema_element *e, qv_pq_node *n) {
  char id[32];
  if (e->field_id >= 0) {
    int len = snprintf(id, sizeof id, "%d", e->field_id);
    if (qv_metadata_append(&n->metadata, "PARQUET:field_id", 16, id, len, c->err) != QV_OK)
      return qv_error_set(c->err, QV_ENOMEM, "out of memory");
  }
  if (n->kind == QV_PQ_NODE_LEAF && e->logical == QV_PQ_LT_UUID &&
      n->type->id == QV_FIXED_SIZE_BINARY && n->type->byte_width == 16) {
    if (qv_metadata_append(&n->metadata, "ARROW:extension:name", 20, "arrow.uuid", 10, c->err) !=
            QV_OK ||
        qv_metadata_append(&n->metadata, "ARROW:extension:metadata", 24, "", 0, c->err) != QV_OK)
      return qv_error_set(c->err, QV_ENOMEM, "out of memory");
  }
  return QV_OK;
}

static qv_status build(schema_ctx *c, int16_t pdef, int16_t prep, int16_t rep_ctx, int16_t def_ctx,
                       int depth, qv_pq_node **out) {
  int32_t at = c->next;
  QV_RETURN_NOT_OK(build_node(c, pdef, prep, rep_ctx, def_ctx, depth, out));
  qv_status st = field_metadata(c, &c->m->schema[at], *out);
  if (st != QV_OK) {
    qv_pq_node_free(*out);
    *out = NULL;
  }
  return st;
}

static qv_status build_node(schema_ctx *c, int16_t pdef, int16_t prep, int16_t rep_ctx,
                            int16_t def_ctx, int depth, qv_pq_node **out) {
  if (depth > 64)
    return qv_error_set(c->err, QV_ENOTSUP, "%s: schema nests deeper than 64", c->file);
  if (c->next >= c->m->n_schema)
    return qv_error_set(c->err, QV_EINVAL, "%s: the schema's num_children run past its %d elements",
                        c->file, c->m->n_schema);
  const qv_pq_schema_element *e = &c->m->schema[c->next++];
  int rep_type = e->repetition < 0 ? QV_PQ_REQUIRED : e->repetition;
  if (rep_type > QV_PQ_REPEATED) return bad(c, QV_EINVAL, "unknown repetition type", e->name);
  bool optional = rep_type == QV_PQ_OPTIONAL;
  if (e->type < 0 && e->num_children < 0)
    return bad(c, QV_EINVAL, "negative num_children", e->name);
  if (e->type >= 0 && e->num_children > 0)
    return bad(c, QV_EINVAL, "a primitive element with children", e->name);

  if (rep_type == QV_PQ_REPEATED) {
    /* A repeated field outside a LIST/MAP annotation: a non-null list of
     * the repeated node. */
    qv_pq_node *list = node_new(QV_PQ_NODE_LIST);
    if (list == NULL) return qv_error_set(c->err, QV_ENOMEM, "out of memory");
    list->name = e->name;
    list->def = pdef;
    list->nullable = false;
    list->rep_ctx = rep_ctx;
    list->def_ctx = def_ctx;
    qv_pq_node *elem = NULL;
    qv_status st = make_repeated_self(c, e, (int16_t)(pdef + 1), (int16_t)(prep + 1), depth, &elem);
    if (st != QV_OK) {
      qv_pq_node_free(list);
      return st;
    }
    return finish_list(c, list, elem, out);
  }
  int16_t def = (int16_t)(pdef + (optional ? 1 : 0));
  if (e->type >= 0) return make_leaf(c, e, def, prep, optional, rep_ctx, def_ctx, out);

  if (!is_list_group(e) && !is_map_group(e))
    return make_struct(c, e, def, prep, optional, rep_ctx, def_ctx, depth, out);
  return make_list(c, e, def, prep, optional, rep_ctx, def_ctx, depth, out);
}

/* A LIST or MAP group e (consumed) whose own definition level is `def`,
 * under repetition level `rep`, slots selected by rep_ctx/def_ctx. */
static qv_status make_list(schema_ctx *c, const qv_pq_schema_element *e, int16_t def, int16_t rep,
                           bool nullable, int16_t rep_ctx, int16_t def_ctx, int depth,
                           qv_pq_node **out) {
  bool is_map = is_map_group(e);
  if (depth > 64)
    return qv_error_set(c->err, QV_ENOTSUP, "%s: schema nests deeper than 64", c->file);
  if (e->num_children != 1 || c->next >= c->m->n_schema ||
      c->m->schema[c->next].repetition != QV_PQ_REPEATED) {
    if (is_map) return bad(c, QV_EINVAL, "a MAP group must hold one repeated group", e->name);
    return bad(c, QV_EINVAL, "a LIST group must hold one repeated field", e->name);
  }
  const qv_pq_schema_element *r = &c->m->schema[c->next++];
  int16_t rdef = (int16_t)(def + 1), rrep = (int16_t)(rep + 1);
  bool map_one = is_map && r->type < 0 && r->num_children == 1; /* a map without values */
  qv_pq_node *list = node_new(is_map && !map_one ? QV_PQ_NODE_MAP : QV_PQ_NODE_LIST);
  if (list == NULL) return qv_error_set(c->err, QV_ENOMEM, "out of memory");
  list->name = e->name;
  list->def = def;
  list->nullable = nullable;
  list->rep_ctx = rep_ctx;
  list->def_ctx = def_ctx;
  qv_pq_node *elem = NULL;
  qv_status st = QV_OK;
  if (map_one) {
    st = build(c, rdef, rrep, rrep, rdef, depth + 2, &elem);
  } else if (is_map) {
    if (r->type >= 0 || r->num_children != 2) {
      qv_pq_node_free(list);
      return bad(c, QV_ENOTSUP, "a MAP's key_value group must hold a key and a value", e->name);
    }
    st = make_struct(c, r, rdef, rrep, false, rrep, rdef, depth + 1, &elem);
    if (st == QV_OK && elem->children[0]->nullable) {
      /* pyarrow refuses maps with optional keys */
      qv_pq_node_free(elem);
      qv_pq_node_free(list);
      return bad(c, QV_EINVAL, "a MAP key must be required", e->name);
    }
    if (st == QV_OK) elem->name = e->name; /* pyarrow names the entries after the map */
  } else {
    bool two_level = r->type >= 0 || r->num_children > 1;
    if (!two_level && r->num_children == 1) {
      char tuple[512];
      snprintf(tuple, sizeof tuple, "%s_tuple", e->name);
      two_level = strcmp(r->name, "array") == 0 || strcmp(r->name, tuple) == 0 ||
                  is_list_group(r) || is_map_group(r);
    }
    if (two_level) {
      st = make_repeated_self(c, r, rdef, rrep, depth + 1, &elem);
    } else {
      if (r->num_children != 1) {
        qv_pq_node_free(list);
        return bad(c, QV_EINVAL, "a LIST's repeated group without children", e->name);
      }
      st = build(c, rdef, rrep, rrep, rdef, depth + 2, &elem);
    }
  }
  if (st != QV_OK) {
    qv_pq_node_free(list);
    return st;
  }
  return finish_list(c, list, elem, out);
}

/* Arrow types bottom-up from the nodes' kinds. */
static qv_status node_types(qv_pq_node *n, qv_error *err) {
  if (n->kind == QV_PQ_NODE_LEAF) return QV_OK;
  for (int32_t i = 0; i < n->n_children; i++) QV_RETURN_NOT_OK(node_types(n->children[i], err));
  qv_type *t = NULL;
  if (n->kind == QV_PQ_NODE_STRUCT) {
    t = qv_type_new(QV_STRUCT);
  } else if (n->kind == QV_PQ_NODE_LIST) {
    t = qv_type_new(QV_LIST);
  } else {
    t = qv_type_new(QV_MAP);
  }
  if (t == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  for (int32_t i = 0; i < n->n_children; i++) {
    qv_pq_node *ch = n->children[i];
    qv_status st = qv_type_add_child(t, ch->name, ch->nullable, qv_type_ref(ch->type),
                                     ch->metadata.n ? &ch->metadata : NULL, err);
    if (st != QV_OK) {
      qv_type_unref(ch->type);
      qv_type_unref(t);
      return st;
    }
  }
  qv_type_unref(n->type);
  n->type = t;
  return QV_OK;
}

qv_status qv_pq_schema_build(const qv_pq_file_meta *m, const char *file, qv_pq_node **out_root,
                             qv_pq_node ***out_leaves, int32_t *out_n_leaves, qv_error *err) {
  schema_ctx c;
  memset(&c, 0, sizeof c);
  c.m = m;
  c.err = err;
  c.file = file;
  const qv_pq_schema_element *root = &m->schema[0];
  if (root->type >= 0 || root->num_children < 0)
    return qv_error_set(err, QV_EINVAL, "%s: the schema root is not a group", file);
  c.next = 1;
  qv_pq_node *r = node_new(QV_PQ_NODE_STRUCT);
  if (r == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  r->name = root->name;
  qv_status st = QV_OK;
  for (int32_t i = 0; i < root->num_children && st == QV_OK; i++) {
    qv_pq_node *ch = NULL;
    st = build(&c, 0, 0, 0, 0, 1, &ch);
    if (st == QV_OK) st = add_child(&c, r, ch);
  }
  if (st == QV_OK && c.next != m->n_schema)
    st = qv_error_set(err, QV_EINVAL, "%s: the schema has %d elements, its tree uses %d", file,
                      m->n_schema, c.next);
  if (st == QV_OK) st = node_types(r, err);
  if (st != QV_OK) {
    qv_pq_node_free(r);
    free(c.leaves);
    return st;
  }
  *out_root = r;
  *out_leaves = c.leaves;
  *out_n_leaves = c.n_leaves;
  return QV_OK;
}
