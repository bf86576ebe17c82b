/*
 * table_transform.c — the table transforms. Table layer.
 *
 * Each public transform checks its arguments, packs them into an op (the
 * same object a replay step records), and hands it to qv_tbl_apply, which
 * dispatches on the table's kind:
 *  - in-memory and mapped tables: qv_tbl_apply_data computes the new
 *    schema and batch entries; a mapped result keeps the source and
 *    appends the op to the replay chain (consecutive slices, selects and
 *    renames are merged into one step: the result is identical);
 *  - concatenation tables: table_concat.c applies the op block by block.
 * Recipe decoding replays ops through the same qv_tbl_apply, so a table
 * rebuilt from a recipe went through exactly the code that built it.
 *
 * Zero copy where the layout allows: slice, select, drop, rename and
 * filter of all-true batches share buffers (and keep lazy mapped entries
 * lazy); add/set column re-slice the new column's chunks to the batch
 * boundaries; cast shares every column whose type does not change.
 */
#include <stdlib.h>
#include <string.h>

#include "table/table_internal.h"

static qv_status oom(qv_error *err, const char *what) {
  return qv_error_set(err, QV_ENOMEM, "table: out of memory (%s)", what);
}

/* ------------------------------------------------------------------------ */
/* Ops and replay chains                                                     */

qv_top *qv_top_new(qv_op_kind kind) {
  qv_top *op = calloc(1, sizeof *op);
  if (op == NULL) return NULL;
  op->refcount = 1;
  op->kind = kind;
  return op;
}

qv_top *qv_top_ref(qv_top *op) {
  if (op != NULL) __atomic_add_fetch(&op->refcount, 1, __ATOMIC_RELAXED);
  return op;
}

void qv_top_unref(qv_top *op) {
  if (op == NULL || __atomic_sub_fetch(&op->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  free(op->indices);
  qv_array_unref(op->mask);
  free(op->cols);
  for (int32_t i = 0; i < op->n_names; i++) free(op->names[i]);
  free(op->names);
  qv_schema_unref(op->schema);
  free(op->field.name);
  qv_type_unref(op->field.type);
  qv_metadata_reset(&op->field.metadata);
  for (int64_t i = 0; i < op->n_chunks; i++) qv_array_unref(op->chunks[i]);
  free(op->chunks);
  free(op);
}

const char *qv_op_name(qv_op_kind kind) {
  static const char *const names[] = {"?",          "slice",          "take", "filter",
                                      "select",     "rename",         "cast", "add_column",
                                      "set_column", "combine_batches"};
  return kind >= QV_OP_SLICE && kind <= QV_OP_LAST ? names[kind] : "?";
}

void qv_treplay_unref(qv_treplay *r) {
  /* Iterative: chains can be long. */
  while (r != NULL && __atomic_sub_fetch(&r->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
    qv_treplay *prev = r->prev;
    qv_top_unref(r->op);
    free(r);
    r = prev;
  }
}

static qv_treplay *replay_node(qv_treplay *prev, qv_top *op) {
  qv_treplay *r = calloc(1, sizeof *r);
  if (r == NULL) return NULL;
  r->refcount = 1;
  if (prev != NULL) __atomic_add_fetch(&prev->refcount, 1, __ATOMIC_RELAXED);
  r->prev = prev;
  r->op = qv_top_ref(op);
  return r;
}

/* Record `op` after the replays of `t` on the new mapped table `res`. */
static qv_status record(qv_table *res, const qv_table *t, qv_top *op, qv_error *err) {
  qv_treplay *last = t->replays;
  qv_top *merged = NULL;
  if (last != NULL && last->op->kind == op->kind) {
    if (op->kind == QV_OP_SLICE) {
      merged = qv_top_new(QV_OP_SLICE);
      if (merged == NULL) return oom(err, "replay");
      merged->offset = last->op->offset + op->offset;
      merged->length = op->length;
    } else if (op->kind == QV_OP_SELECT) {
      merged = qv_top_new(QV_OP_SELECT);
      if (merged == NULL) return oom(err, "replay");
      merged->cols = malloc(sizeof(int32_t) * (size_t)(op->n_cols > 0 ? op->n_cols : 1));
      if (merged->cols == NULL) {
        qv_top_unref(merged);
        return oom(err, "replay");
      }
      merged->n_cols = op->n_cols;
      for (int32_t c = 0; c < op->n_cols; c++) merged->cols[c] = last->op->cols[op->cols[c]];
    } else if (op->kind == QV_OP_RENAME) {
      merged = qv_top_ref(op);
    }
  }
  if (merged != NULL) {
    res->replays = replay_node(last->prev, merged);
    res->n_replays = t->n_replays;
    qv_top_unref(merged);
  } else {
    res->replays = replay_node(last, op);
    res->n_replays = t->n_replays + 1;
  }
  return res->replays ? QV_OK : oom(err, "replay");
}

/* ------------------------------------------------------------------------ */
/* The transforms on batch entries                                           */

/* Rows [off, off+len): whole middle batches shared, first and last sliced. */
static qv_status data_slice(qv_table *t, qv_table *r, int64_t off, int64_t len, qv_error *err) {
  if (len == 0) return QV_OK;
  int64_t first = qv_tbl_find_batch(t, off), last = qv_tbl_find_batch(t, off + len - 1);
  for (int64_t b = first; b <= last; b++) {
    const qv_tbatch *e = &t->batches[b];
    int64_t lo = b == first ? off - t->offsets[b] : 0;
    int64_t hi = b == last ? off + len - t->offsets[b] : e->length;
    qv_tbatch c;
    if (lo == 0 && hi == e->length) c = qv_tbatch_copy(e);
    else QV_RETURN_NOT_OK(qv_tbatch_slice(e, lo, hi - lo, &c, err));
    QV_RETURN_NOT_OK(qv_tbl_push(r, &c, err));
  }
  return QV_OK;
}

static qv_status data_take(qv_table *t, qv_table *r, const qv_top *op, qv_error *err) {
  qv_array *b = NULL;
  QV_RETURN_NOT_OK(qv_table_gather(t, op->indices, op->n_indices, &b, err));
  if (b->length == 0) {
    qv_array_unref(b);
    return QV_OK;
  }
  return qv_tbl_push_array(r, b, err);
}

static qv_status data_filter(qv_table *t, qv_table *r, qv_array *mask, qv_error *err) {
  /* keep = value AND valid, as one bitmap from bit 0. */
  int64_t n = mask->length;
  qv_buffer *keep = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc((n + 7) / 8, &keep, err));
  qv_bitmap_copy(keep->data, 0, mask->buffers[1]->data, mask->offset, n);
  if (mask->buffers[0] != NULL && qv_array_null_count(mask) > 0)
    for (int64_t i = 0; i < n; i++)
      if (!qv_bit_get(mask->buffers[0]->data, mask->offset + i)) qv_bit_clear(keep->data, i);
  int64_t *idx = NULL;
  qv_status st = QV_OK;
  for (int64_t b = 0; b < t->n_batches && st == QV_OK; b++) {
    const qv_tbatch *e = &t->batches[b];
    int64_t o = t->offsets[b], len = e->length;
    int64_t cnt = qv_bitmap_count(keep->data, o, len);
    if (cnt == 0) continue;
    qv_tbatch c;
    if (cnt == len) {
      c = qv_tbatch_copy(e);
      st = qv_tbl_push(r, &c, err);
      continue;
    }
    int64_t *p = realloc(idx, sizeof *idx * (size_t)cnt);
    if (p == NULL) {
      st = oom(err, "filter");
      break;
    }
    idx = p;
    int64_t k = 0;
    for (int64_t i = 0; i < len; i++)
      if (qv_bit_get(keep->data, o + i)) idx[k++] = i;
    qv_array *a = NULL, *sub = NULL;
    st = qv_tbl_entry_array(t, b, &a, err);
    if (st == QV_OK) st = qv_array_take(a, idx, cnt, &sub, err);
    qv_array_unref(a);
    if (st == QV_OK) st = qv_tbl_push_array(r, sub, err);
  }
  free(idx);
  qv_buffer_unref(keep);
  return st;
}

/* Every entry re-expressed with columns `cols` (n < 0: all) under r's
 * schema type. */
static qv_status data_project(qv_table *t, qv_table *r, const int32_t *cols, int32_t n,
                              qv_error *err) {
  for (int64_t b = 0; b < t->n_batches; b++) {
    qv_tbatch c;
    QV_RETURN_NOT_OK(qv_tbatch_project(&t->batches[b], r->schema->type, cols, n, &c, err));
    QV_RETURN_NOT_OK(qv_tbl_push(r, &c, err));
  }
  return QV_OK;
}

static qv_status data_cast(qv_table *t, qv_table *r, qv_error *err) {
  qv_type *type = r->schema->type;
  int32_t nc = type->n_children;
  qv_array **ch = calloc((size_t)(nc > 0 ? nc : 1), sizeof *ch);
  if (ch == NULL) return oom(err, "cast");
  qv_status st = QV_OK;
  for (int64_t b = 0; b < t->n_batches && st == QV_OK; b++) {
    qv_array *a = NULL, *nb = NULL;
    st = qv_tbl_entry_array(t, b, &a, err);
    memset(ch, 0, sizeof *ch * (size_t)nc); /* a failed cast leaves its slot NULL */
    int32_t c = 0;
    for (; c < nc && st == QV_OK; c++) {
      st = qv_array_cast(a->children[c], type->children[c].type, &ch[c], err);
      if (st != QV_OK) qv_error_prefix(err, st, "column '%s': ", type->children[c].name);
    }
    if (st != QV_OK) {
      for (int32_t k = 0; k < nc; k++) qv_array_unref(ch[k]);
      qv_array_unref(a);
      break;
    }
    st = qv_make_batch(type, a->length, ch, nc, &nb, err);
    qv_array_unref(a);
    if (st == QV_OK) st = qv_tbl_push_array(r, nb, err);
  }
  free(ch);
  return st;
}

/* Walks the chunks of a new column in step with the table's batches. */
typedef struct chunk_cursor {
  qv_array *const *chunks;
  int64_t n;
  int64_t i;   /* current chunk */
  int64_t pos; /* rows of chunk i already used */
} chunk_cursor;

/* The next `len` rows: a slice of one chunk when they fit in it, else the
 * pieces concatenated. */
static qv_status cursor_next(chunk_cursor *cur, int64_t len, qv_array **out, qv_error *err) {
  while (cur->i < cur->n && cur->pos == cur->chunks[cur->i]->length) cur->i++, cur->pos = 0;
  if (cur->i < cur->n && cur->chunks[cur->i]->length - cur->pos >= len) {
    qv_array *ch = cur->chunks[cur->i];
    qv_status st = cur->pos == 0 && len == ch->length ? (*out = qv_array_ref(ch), QV_OK)
                                                      : qv_array_slice(ch, cur->pos, len, out, err);
    cur->pos += len;
    return st;
  }
  qv_array **parts = NULL;
  int64_t np = 0, got = 0;
  qv_status st = QV_OK;
  while (got < len && cur->i < cur->n && st == QV_OK) {
    qv_array *ch = cur->chunks[cur->i];
    int64_t take = ch->length - cur->pos;
    if (take > len - got) take = len - got;
    if (take > 0) {
      qv_array **p = realloc(parts, sizeof *p * (size_t)(np + 1));
      if (p == NULL) {
        st = oom(err, "column pieces");
        break;
      }
      parts = p;
      st = qv_array_slice(ch, cur->pos, take, &parts[np], err);
      if (st == QV_OK) np++;
    }
    got += take;
    cur->pos += take;
    if (cur->pos == ch->length) cur->i++, cur->pos = 0;
  }
  if (st == QV_OK) st = qv_array_concat(parts, np, out, err);
  for (int64_t k = 0; k < np; k++) qv_array_unref(parts[k]);
  free(parts);
  return st;
}

static qv_status data_add(qv_table *t, qv_table *r, const qv_top *op, bool replace, qv_error *err) {
  qv_type *type = r->schema->type;
  int32_t nc = type->n_children, pos = op->pos;
  qv_array **ch = calloc((size_t)(nc > 0 ? nc : 1), sizeof *ch);
  if (ch == NULL) return oom(err, "columns");
  chunk_cursor cur = {op->chunks, op->n_chunks, 0, 0};
  qv_status st = QV_OK;
  for (int64_t b = 0; b < t->n_batches && st == QV_OK; b++) {
    qv_array *a = NULL, *nb = NULL;
    st = qv_tbl_entry_array(t, b, &a, err);
    if (st == QV_OK) st = cursor_next(&cur, a->length, &ch[pos], err);
    if (st != QV_OK) {
      qv_array_unref(a);
      break;
    }
    for (int32_t c = 0, k = 0; c < nc; c++) {
      if (c == pos) {
        if (replace) k++;
        continue;
      }
      ch[c] = qv_array_ref(a->children[k++]);
    }
    st = qv_make_batch(type, a->length, ch, nc, &nb, err);
    qv_array_unref(a);
    if (st == QV_OK) st = qv_tbl_push_array(r, nb, err);
  }
  free(ch);
  return st;
}

static qv_status data_combine(qv_table *t, qv_table *r, qv_error *err) {
  if (t->n_batches <= 1) return data_project(t, r, NULL, -1, err);
  qv_type *type = r->schema->type;
  int32_t nc = type->n_children;
  int64_t nb = t->n_batches;
  qv_array **batches = calloc((size_t)nb, sizeof *batches);
  qv_array **parts = calloc((size_t)nb, sizeof *parts);
  qv_array **ch = calloc((size_t)(nc > 0 ? nc : 1), sizeof *ch);
  qv_status st = batches && parts && ch ? QV_OK : oom(err, "combine");
  for (int64_t b = 0; b < nb && st == QV_OK; b++) st = qv_tbl_entry_array(t, b, &batches[b], err);
  int32_t c = 0;
  for (; c < nc && st == QV_OK; c++) {
    for (int64_t b = 0; b < nb; b++) parts[b] = batches[b]->children[c];
    st = qv_array_concat(parts, nb, &ch[c], err);
    if (st != QV_OK) qv_error_prefix(err, st, "column '%s': ", type->children[c].name);
  }
  if (st == QV_OK) {
    qv_array *one = NULL;
    st = qv_make_batch(type, t->num_rows, ch, nc, &one, err);
    if (st == QV_OK) st = qv_tbl_push_array(r, one, err);
  } else {
    for (int32_t k = 0; k < c; k++) qv_array_unref(ch[k]);
  }
  for (int64_t b = 0; batches != NULL && b < nb; b++) qv_array_unref(batches[b]);
  free(batches);
  free(parts);
  free(ch);
  return st;
}

/* The schema after a select / rename / add / set (NULL for the others:
 * unchanged, or the cast target). */
static qv_status op_schema(const qv_table *t, const qv_top *op, qv_schema **out, qv_error *err) {
  const qv_schema *s = t->schema;
  int32_t nc = qv_schema_num_fields(s);
  *out = NULL;
  switch (op->kind) {
    case QV_OP_CAST: *out = qv_schema_ref(op->schema); return QV_OK;
    case QV_OP_SELECT:
    case QV_OP_RENAME:
    case QV_OP_ADD_COLUMN:
    case QV_OP_SET_COLUMN: {
      int32_t n = op->kind == QV_OP_SELECT       ? op->n_cols
                  : op->kind == QV_OP_ADD_COLUMN ? nc + 1
                                                 : nc;
      qv_field *f = calloc((size_t)(n > 0 ? n : 1), sizeof *f);
      if (f == NULL) return oom(err, "schema");
      for (int32_t c = 0, k = 0; c < n; c++) {
        if (op->kind == QV_OP_SELECT) {
          f[c] = *qv_schema_field(s, op->cols[c]);
        } else if (op->kind == QV_OP_RENAME) {
          f[c] = *qv_schema_field(s, c);
          f[c].name = op->names[c];
        } else if (c == op->pos) {
          f[c] = op->field;
          if (op->kind == QV_OP_SET_COLUMN) k++;
        } else {
          f[c] = *qv_schema_field(s, k++);
        }
      }
      qv_status st = qv_schema_from_fields(f, n, &s->metadata, out, err);
      free(f);
      return st;
    }
    default: return QV_OK;
  }
}

qv_status qv_tbl_apply_data(qv_table *t, qv_top *op, qv_table_kind kind, qv_table **out,
                            qv_error *err) {
  qv_schema *schema = NULL;
  QV_RETURN_NOT_OK(op_schema(t, op, &schema, err));
  qv_table *r = qv_tbl_new(kind, schema ? schema : t->schema);
  qv_schema_unref(schema);
  if (r == NULL) return oom(err, "table");
  qv_status st;
  switch (op->kind) {
    case QV_OP_SLICE: st = data_slice(t, r, op->offset, op->length, err); break;
    case QV_OP_TAKE: st = data_take(t, r, op, err); break;
    case QV_OP_FILTER: st = data_filter(t, r, op->mask, err); break;
    case QV_OP_SELECT: st = data_project(t, r, op->cols, op->n_cols, err); break;
    case QV_OP_RENAME: st = data_project(t, r, NULL, -1, err); break;
    case QV_OP_CAST: st = data_cast(t, r, err); break;
    case QV_OP_ADD_COLUMN: st = data_add(t, r, op, false, err); break;
    case QV_OP_SET_COLUMN: st = data_add(t, r, op, true, err); break;
    case QV_OP_COMBINE: st = data_combine(t, r, err); break;
    default: st = qv_error_set(err, QV_EARG, "table: unknown op %d", (int)op->kind);
  }
  if (st != QV_OK) {
    qv_error_prefix(err, st, "%s: ", qv_op_name(op->kind));
    qv_table_unref(r);
    return st;
  }
  *out = r;
  return QV_OK;
}

qv_status qv_tbl_apply(qv_table *t, qv_top *op, qv_table **out, qv_error *err) {
  if (t->kind == QV_TABLE_CONCAT) return qv_concat_apply(t, op, out, err);
  qv_table *r = NULL;
  QV_RETURN_NOT_OK(qv_tbl_apply_data(t, op, t->kind, &r, err));
  if (t->kind == QV_TABLE_MAPPED) {
    r->src = qv_tsource_ref(t->src);
    qv_status st = record(r, t, op, err);
    if (st != QV_OK) {
      qv_table_unref(r);
      return st;
    }
  }
  *out = r;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Public transforms: argument checks, then one op                           */

static qv_status run(qv_table *t, qv_top *op, qv_table **out, qv_error *err) {
  qv_status st = qv_tbl_apply(t, op, out, err);
  qv_top_unref(op);
  return st;
}

qv_status qv_table_slice(qv_table *t, int64_t offset, int64_t length, qv_table **out,
                         qv_error *err) {
  int64_t end;
  if (offset < 0 || length < 0 || qv_add_overflow(offset, length, &end) || end > t->num_rows)
    return qv_error_set(
        err, QV_ERANGE, "slice: rows [%lld, %lld + %lld) are outside a table of %lld rows",
        (long long)offset, (long long)offset, (long long)length, (long long)t->num_rows);
  qv_top *op = qv_top_new(QV_OP_SLICE);
  if (op == NULL) return oom(err, "op");
  op->offset = offset;
  op->length = length;
  return run(t, op, out, err);
}

qv_status qv_table_take(qv_table *t, const int64_t *indices, int64_t n, qv_table **out,
                        qv_error *err) {
  if (n < 0 || (n > 0 && indices == NULL))
    return qv_error_set(err, QV_EARG, "take: needs %lld indices", (long long)n);
  for (int64_t i = 0; i < n; i++)
    if (indices[i] < 0 || indices[i] >= t->num_rows)
      return qv_error_set(err, QV_ERANGE,
                          "take: index %lld (position %lld) is out of range for a table of "
                          "%lld rows",
                          (long long)indices[i], (long long)i, (long long)t->num_rows);
  qv_top *op = qv_top_new(QV_OP_TAKE);
  if (op == NULL) return oom(err, "op");
  op->indices = malloc(sizeof *op->indices * (size_t)(n > 0 ? n : 1));
  if (op->indices == NULL) {
    qv_top_unref(op);
    return oom(err, "take indices");
  }
  if (n > 0) memcpy(op->indices, indices, sizeof *indices * (size_t)n);
  op->n_indices = n;
  return run(t, op, out, err);
}

qv_status qv_table_filter(qv_table *t, qv_array *mask, qv_table **out, qv_error *err) {
  if (mask == NULL || mask->type->id != QV_BOOL)
    return qv_error_set(err, QV_ETYPE, "filter: the mask must be a bool array (got %s)",
                        mask ? qv_type_id_name(mask->type->id) : "NULL");
  if (mask->length != t->num_rows)
    return qv_error_set(err, QV_EARG, "filter: mask has %lld values for a table of %lld rows",
                        (long long)mask->length, (long long)t->num_rows);
  qv_top *op = qv_top_new(QV_OP_FILTER);
  if (op == NULL) return oom(err, "op");
  op->mask = qv_array_ref(mask);
  return run(t, op, out, err);
}

qv_status qv_table_select(qv_table *t, const int32_t *columns, int32_t n, qv_table **out,
                          qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  if (n < 0 || (n > 0 && columns == NULL))
    return qv_error_set(err, QV_EARG, "select: needs %d column indices", n);
  for (int32_t i = 0; i < n; i++)
    if (columns[i] < 0 || columns[i] >= nc)
      return qv_error_set(err, QV_ERANGE,
                          "select: column %d (position %d) is out of range for %d columns",
                          columns[i], i, nc);
  qv_top *op = qv_top_new(QV_OP_SELECT);
  if (op == NULL) return oom(err, "op");
  op->cols = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
  if (op->cols == NULL) {
    qv_top_unref(op);
    return oom(err, "select");
  }
  if (n > 0) memcpy(op->cols, columns, sizeof(int32_t) * (size_t)n);
  op->n_cols = n;
  return run(t, op, out, err);
}

qv_status qv_table_drop(qv_table *t, const int32_t *columns, int32_t n, qv_table **out,
                        qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  if (n < 0 || (n > 0 && columns == NULL))
    return qv_error_set(err, QV_EARG, "drop: needs %d column indices", n);
  bool *gone = calloc((size_t)(nc > 0 ? nc : 1), sizeof *gone);
  int32_t *keep = malloc(sizeof *keep * (size_t)(nc > 0 ? nc : 1));
  if (gone == NULL || keep == NULL) {
    free(gone);
    free(keep);
    return oom(err, "drop");
  }
  qv_status st = QV_OK;
  for (int32_t i = 0; i < n && st == QV_OK; i++) {
    if (columns[i] < 0 || columns[i] >= nc)
      st = qv_error_set(err, QV_ERANGE,
                        "drop: column %d (position %d) is out of range for %d columns", columns[i],
                        i, nc);
    else gone[columns[i]] = true;
  }
  int32_t k = 0;
  for (int32_t c = 0; c < nc; c++)
    if (!gone[c]) keep[k++] = c;
  if (st == QV_OK) st = qv_table_select(t, keep, k, out, err);
  free(gone);
  free(keep);
  return st;
}

qv_status qv_table_rename(qv_table *t, const char *const *names, int32_t n, qv_table **out,
                          qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  if (n != nc || (n > 0 && names == NULL))
    return qv_error_set(err, QV_EARG, "rename: %d names for %d columns", n, nc);
  qv_top *op = qv_top_new(QV_OP_RENAME);
  if (op == NULL) return oom(err, "op");
  op->names = calloc((size_t)(n > 0 ? n : 1), sizeof *op->names);
  qv_status st = op->names ? QV_OK : oom(err, "rename");
  for (int32_t i = 0; i < n && st == QV_OK; i++) {
    if (names[i] == NULL) {
      st = qv_error_set(err, QV_EARG, "rename: name %d is NULL", i);
      break;
    }
    op->names[i] = strdup(names[i]);
    if (op->names[i] == NULL) st = oom(err, "rename");
    else op->n_names = i + 1;
  }
  if (st != QV_OK) {
    qv_top_unref(op);
    return st;
  }
  return run(t, op, out, err);
}

static qv_status column_op(qv_table *t, qv_op_kind kind, int32_t pos, const qv_field *field,
                           qv_array *const *chunks, int64_t n_chunks, qv_table **out,
                           qv_error *err) {
  const char *what = qv_op_name(kind);
  int32_t nc = qv_table_num_columns(t);
  int32_t max = kind == QV_OP_ADD_COLUMN ? nc : nc - 1;
  if (field == NULL || field->type == NULL || field->name == NULL)
    return qv_error_set(err, QV_EARG, "%s: needs a field with a name and a type", what);
  if (pos < 0 || pos > max)
    return qv_error_set(err, QV_ERANGE, "%s: position %d is out of range [0, %d]", what, pos, max);
  if (n_chunks < 0 || (n_chunks > 0 && chunks == NULL))
    return qv_error_set(err, QV_EARG, "%s: needs %lld chunks", what, (long long)n_chunks);
  for (int64_t i = 0; i < n_chunks; i++) {
    if (chunks[i] == NULL || !qv_type_equals(chunks[i]->type, field->type, false)) {
      char want[256], got[256] = "NULL";
      qv_type_to_string(field->type, want, sizeof want);
      if (chunks[i]) qv_type_to_string(chunks[i]->type, got, sizeof got);
      return qv_error_set(err, QV_ETYPE, "%s: chunk %lld has type %s, expected %s", what,
                          (long long)i, got, want);
    }
  }
  int64_t total = qv_chunks_length(chunks, n_chunks);
  if (total != t->num_rows)
    return qv_error_set(err, QV_EARG, "%s: column '%s' has %lld values for a table of %lld rows",
                        what, field->name, (long long)total, (long long)t->num_rows);
  qv_top *op = qv_top_new(kind);
  if (op == NULL) return oom(err, "op");
  op->pos = pos;
  op->field.name = strdup(field->name);
  op->field.nullable = field->nullable;
  op->field.type = qv_type_ref(field->type);
  op->chunks = calloc((size_t)(n_chunks > 0 ? n_chunks : 1), sizeof *op->chunks);
  qv_status st = op->field.name && op->chunks ? QV_OK : oom(err, what);
  if (st == QV_OK) st = qv_metadata_copy(&op->field.metadata, &field->metadata, err);
  if (st != QV_OK) {
    qv_top_unref(op);
    return st;
  }
  for (int64_t i = 0; i < n_chunks; i++) op->chunks[i] = qv_array_ref(chunks[i]);
  op->n_chunks = n_chunks;
  return run(t, op, out, err);
}

qv_status qv_table_add_column(qv_table *t, int32_t pos, const qv_field *field,
                              qv_array *const *chunks, int64_t n_chunks, qv_table **out,
                              qv_error *err) {
  return column_op(t, QV_OP_ADD_COLUMN, pos, field, chunks, n_chunks, out, err);
}

qv_status qv_table_append_column(qv_table *t, const qv_field *field, qv_array *const *chunks,
                                 int64_t n_chunks, qv_table **out, qv_error *err) {
  return column_op(t, QV_OP_ADD_COLUMN, qv_table_num_columns(t), field, chunks, n_chunks, out, err);
}

qv_status qv_table_set_column(qv_table *t, int32_t pos, const qv_field *field,
                              qv_array *const *chunks, int64_t n_chunks, qv_table **out,
                              qv_error *err) {
  return column_op(t, QV_OP_SET_COLUMN, pos, field, chunks, n_chunks, out, err);
}

qv_status qv_table_cast(qv_table *t, const qv_schema *target, qv_table **out, qv_error *err) {
  int32_t nc = qv_table_num_columns(t);
  if (target == NULL) return qv_error_set(err, QV_EARG, "cast: no target schema");
  if (qv_schema_num_fields(target) != nc)
    return qv_error_set(err, QV_EARG, "cast: target schema has %d fields, the table %d columns",
                        qv_schema_num_fields(target), nc);
  for (int32_t c = 0; c < nc; c++)
    if (strcmp(qv_schema_field(target, c)->name, qv_schema_field(t->schema, c)->name) != 0)
      return qv_error_set(err, QV_EARG,
                          "cast: target field %d is named '%s', the column '%s' (names must "
                          "match; rename first)",
                          c, qv_schema_field(target, c)->name, qv_schema_field(t->schema, c)->name);
  qv_top *op = qv_top_new(QV_OP_CAST);
  if (op == NULL) return oom(err, "op");
  op->schema = qv_schema_ref((qv_schema *)target);
  return run(t, op, out, err);
}

qv_status qv_table_combine_batches(qv_table *t, qv_table **out, qv_error *err) {
  qv_top *op = qv_top_new(QV_OP_COMBINE);
  if (op == NULL) return oom(err, "op");
  return run(t, op, out, err);
}
