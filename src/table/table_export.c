/*
 * table_export.c — a table as an Arrow C Stream (struct ArrowArrayStream):
 * the schema, then one ArrowArray per batch, sharing buffers (the
 * exported arrays keep their mappings alive). Table layer; the Python
 * binding and the oracle tests hand tables to pyarrow through it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/cdata.h"
#include "table/table_internal.h"

typedef struct tstream {
  qv_table *table;
  int64_t next;
  qv_error error;
} tstream;

static int errno_of(qv_status st) {
  switch (st) {
    case QV_ENOMEM: return ENOMEM;
    case QV_ENOTSUP: return ENOTSUP;
    case QV_EIO: case QV_ECHANGED: return EIO;
    default: return EINVAL;
  }
}

static int ts_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  tstream *p = s->private_data;
  qv_status st = qv_export_schema(p->table->schema, out, &p->error);
  return st == QV_OK ? 0 : errno_of(st);
}

static int ts_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  tstream *p = s->private_data;
  if (p->next >= p->table->n_batches) {
    memset(out, 0, sizeof *out); /* released: end of stream */
    return 0;
  }
  qv_array *b = NULL;
  qv_status st = qv_tbl_entry_array(p->table, p->next, &b, &p->error);
  if (st == QV_OK) st = qv_export_array(b, out, &p->error);
  if (st != QV_OK) return errno_of(st);
  p->next++;
  return 0;
}

static const char *ts_last_error(struct ArrowArrayStream *s) {
  tstream *p = s->private_data;
  return p->error.message;
}

static void ts_release(struct ArrowArrayStream *s) {
  tstream *p = s->private_data;
  qv_table_unref(p->table);
  free(p);
  s->release = NULL;
}

qv_status qv_table_export_stream(qv_table *t, struct ArrowArrayStream *out, qv_error *err) {
  if (t == NULL || out == NULL) return qv_error_set(err, QV_EARG, "export: needs a table");
  tstream *p = calloc(1, sizeof *p);
  if (p == NULL) return qv_error_set(err, QV_ENOMEM, "export: out of memory");
  p->table = qv_table_ref(t);
  out->get_schema = ts_get_schema;
  out->get_next = ts_get_next;
  out->get_last_error = ts_last_error;
  out->release = ts_release;
  out->private_data = p;
  return QV_OK;
}
