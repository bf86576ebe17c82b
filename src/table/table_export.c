/*
 * table_export.c — tables out of quiver: as an Arrow C Stream (struct
 * ArrowArrayStream: the schema, then one ArrowArray per batch, sharing
 * buffers; the exported arrays keep their mappings alive; a batch source
 * for qv_export_batch_stream) and as Arrow IPC
 * (a file, or the inline bytes of a recipe). Table layer; the Python
 * binding and the oracle tests hand tables to pyarrow through the stream.
 *
 * IPC writing renumbers dictionary ids: a table may hold dictionary
 * columns whose types carry no id (-1) or the same id (a selected column
 * repeated, columns added from elsewhere), while an IPC stream needs one
 * id per dictionary-encoded field. The schema is passed through the C
 * Data Interface (export, then import assigns ids 0, 1, 2... depth first)
 * and each batch's array tree is re-typed to it (zero copy).
 */
#include <stdlib.h>
#include <string.h>

#include "quiver/cdata.h"
#include "quiver/ipc.h"
#include "quiver/writer.h"
#include "table/table_internal.h"

/* The C stream: a batch source over the table's batches. */
typedef struct tstream {
  qv_table *table;
  int64_t next;
} tstream;

static const qv_schema *ts_schema(void *ctx) { return ((tstream *)ctx)->table->schema; }

static qv_status ts_next(void *ctx, qv_array **batch, qv_error *err) {
  tstream *p = ctx;
  *batch = NULL;
  if (p->next >= p->table->n_batches) return QV_OK; /* end of stream */
  qv_array *b = NULL;                               /* one reference, handed on */
  QV_RETURN_NOT_OK(qv_tbl_entry_array(p->table, p->next, &b, err));
  *batch = b;
  p->next++;
  return QV_OK;
}

static void ts_release(void *ctx) {
  tstream *p = ctx;
  qv_table_unref(p->table);
  free(p);
}

qv_status qv_table_export_stream(qv_table *t, struct ArrowArrayStream *out, qv_error *err) {
  if (t == NULL || out == NULL) return qv_error_set(err, QV_EARG, "export: needs a table");
  tstream *p = calloc(1, sizeof *p);
  if (p == NULL) return qv_error_set(err, QV_ENOMEM, "export: out of memory");
  p->table = qv_table_ref(t);
  qv_batch_source src = {p, ts_schema, ts_next, ts_release};
  return qv_export_batch_stream(&src, out, err);
}

/* ------------------------------------------------------------------------ */
/* IPC                                                                       */

static bool has_dictionary(const qv_type *t) {
  if (t->id == QV_DICTIONARY) return true;
  for (int32_t i = 0; i < t->n_children; i++)
    if (has_dictionary(t->children[i].type)) return true;
  return false;
}

/* The array tree of `a` with the types of `t` (equal to a's but for
 * dictionary ids). Zero copy; untouched subtrees are shared. */
static qv_status retype_tree(qv_array *a, qv_type *t, qv_array **out, qv_error *err) {
  if (a->type == t || !has_dictionary(t)) {
    *out = qv_array_ref(a);
    return QV_OK;
  }
  qv_array *r = qv_array_new(t, a->n_buffers, a->n_children);
  if (r == NULL) return qv_error_set(err, QV_ENOMEM, "write: out of memory");
  for (int32_t i = 0; i < a->n_buffers; i++) r->buffers[i] = qv_buffer_ref(a->buffers[i]);
  r->length = a->length;
  r->offset = a->offset;
  r->null_count = a->null_count;
  qv_status st = QV_OK;
  for (int32_t i = 0; i < a->n_children && st == QV_OK; i++)
    st = i < t->n_children ? retype_tree(a->children[i], t->children[i].type, &r->children[i], err)
                           : (r->children[i] = qv_array_ref(a->children[i]), QV_OK);
  if (st == QV_OK && a->dictionary != NULL)
    st = t->value_type ? retype_tree(a->dictionary, t->value_type, &r->dictionary, err)
                       : (r->dictionary = qv_array_ref(a->dictionary), QV_OK);
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  *out = r;
  return QV_OK;
}

/* The schema with dictionary ids 0, 1, 2... depth first. */
static qv_status numbered_schema(const qv_schema *s, qv_schema **out, qv_error *err) {
  if (!has_dictionary(s->type)) {
    *out = qv_schema_ref((qv_schema *)s);
    return QV_OK;
  }
  struct ArrowSchema as;
  QV_RETURN_NOT_OK(qv_export_schema(s, &as, err));
  return qv_import_schema(&as, out, err);
}

qv_status qv_tbl_write_batches(qv_writer_open_fn open, void *ctx, const qv_schema *schema,
                               qv_array *const *batches, int64_t n, const qv_write_options *wo,
                               qv_error *err) {
  qv_schema *ns = NULL;
  QV_RETURN_NOT_OK(numbered_schema(schema, &ns, err));
  qv_writer *w = NULL;
  qv_status st = open(ctx, ns, wo, &w, err);
  for (int64_t i = 0; i < n && st == QV_OK; i++) {
    qv_array *b = NULL;
    st = retype_tree(batches[i], ns->type, &b, err);
    if (st == QV_OK) st = qv_writer_write_batch(w, b, err);
    qv_array_unref(b);
  }
  if (w != NULL) {
    if (st == QV_OK) st = qv_writer_close(w, err);
    else qv_writer_abort(w);
  }
  qv_schema_unref(ns);
  return st;
}

static qv_status open_path(void *ctx, const qv_schema *s, const qv_write_options *wo, qv_writer **w,
                           qv_error *err) {
  return qv_writer_open_path((const char *)ctx, s, wo, w, err);
}

qv_status qv_table_write_path(qv_table *t, const char *path, const qv_write_options *options,
                              qv_error *err) {
  if (t == NULL || path == NULL)
    return qv_error_set(err, QV_EARG, "write: needs a table and a path");
  qv_array **b = calloc((size_t)(t->n_batches > 0 ? t->n_batches : 1), sizeof *b);
  if (b == NULL) return qv_error_set(err, QV_ENOMEM, "write: out of memory");
  qv_status st = QV_OK;
  for (int64_t i = 0; i < t->n_batches && st == QV_OK; i++)
    st = qv_tbl_entry_array(t, i, &b[i], err);
  if (st == QV_OK)
    st = qv_tbl_write_batches(open_path, (void *)path, t->schema, b, t->n_batches, options, err);
  for (int64_t i = 0; i < t->n_batches; i++) qv_array_unref(b[i]);
  free(b);
  return st;
}
