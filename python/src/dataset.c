/*
 * dataset.c — the quiver.Dataset type of the CPython extension (python/
 * layer): attributes, __getitem__, the transforms (one dataset-layer call
 * each, GIL released around the long ones), save_to_disk, the Arrow stream
 * export and the row / batch iterators. map and filter are in mapfilter.c.
 */
#include "qvpy.h"

/* ------------------------------------------------------------------------ */
/* Dataset                                                                   */

/* Wrap `ds` (its reference taken over). */
static PyObject *wrap(qv_dataset *ds) {
  DatasetObject *o = PyObject_New(DatasetObject, &qvpy_DatasetType);
  if (o == NULL) {
    qv_dataset_unref(ds);
    return NULL;
  }
  o->ds = ds;
  o->rows_data = NULL;
  o->rows_indices = NULL;
  o->origin = NULL;
  o->format = NULL;
  o->media = -1;
  o->info = NULL;
  return (PyObject *)o;
}

/* Whether a features tree holds an Image, Audio, Video, Pdf or Json feature (at
 * any depth): datasets decodes those when rows are read, so rows of such a dataset go
 * through quiver._formats (decoding in Python) even without a format. */
static int feature_has_media(const qv_hf_feature *f, int depth) {
  if (f == NULL || depth > QV_HF_MAX_DEPTH) return 0;
  if (f->kind == QV_HF_JSON) return 1; /* datasets' Json.decode_example: the value parsed */
  if (f->kind == QV_HF_MEDIA)
    return f->type_name != NULL &&
           (strcmp(f->type_name, "Image") == 0 || strcmp(f->type_name, "Audio") == 0 ||
            strcmp(f->type_name, "Video") == 0 || strcmp(f->type_name, "Pdf") == 0);
  for (int32_t i = 0; i < f->n_children; i++)
    if (feature_has_media(f->children[i], depth + 1)) return 1;
  return 0;
}

/* Rows of `self` straight from C (no format, nothing to decode)? */
static int plain_rows(DatasetObject *self) {
  if (self->format != NULL) return 0;
  if (self->media < 0) self->media = feature_has_media(qv_dataset_features(self->ds), 0);
  return self->media == 0;
}

/* The result of a transform: the new dataset or the error. */
PyObject *qvpy_result(qv_status st, qv_dataset *out, const qv_error *err) {
  if (st != QV_OK) return qvpy_raise_qv(st, err);
  return wrap(out);
}

static void tcache_free(qvpy_tcache *c) {
  if (c == NULL) return;
  for (int64_t b = 0; c->slot != NULL && b < c->nb; b++) qv_array_unref(c->slot[b].batch);
  PyMem_Free(c->slot);
  PyMem_Free(c->starts);
  PyMem_Free(c);
}

static void Dataset_dealloc(DatasetObject *self) {
  tcache_free(self->rows_data);
  tcache_free(self->rows_indices);
  qv_dataset_unref(self->ds);
  Py_XDECREF(self->origin);
  Py_XDECREF(self->format);
  Py_XDECREF(self->info);
  PyObject_Free(self);
}

static PyObject *Dataset_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyErr_SetString(qvpy_TypeError,
                  "quiver.Dataset cannot be created directly: use "
                  "quiver.open(path)");
  return NULL;
}

static Py_ssize_t Dataset_len(DatasetObject *self) {
  return (Py_ssize_t)qv_dataset_num_rows(self->ds);
}

static PyObject *Dataset_num_rows(DatasetObject *self, void *c) {
  return PyLong_FromLongLong(qv_dataset_num_rows(self->ds));
}

static PyObject *Dataset_num_columns(DatasetObject *self, void *c) {
  return PyLong_FromLong(qv_dataset_num_columns(self->ds));
}

static PyObject *Dataset_column_names(DatasetObject *self, void *c) {
  return qvpy_column_names_of(qv_dataset_schema(self->ds));
}

static PyObject *Dataset_fingerprint(DatasetObject *self, void *c) {
  return PyUnicode_FromString(qv_dataset_fingerprint(self->ds));
}

static PyObject *Dataset_split(DatasetObject *self, void *c) {
  const char *s = qv_dataset_split(self->ds);
  if (s == NULL) Py_RETURN_NONE;
  return PyUnicode_FromString(s);
}

static PyObject *Dataset_features(DatasetObject *self, void *c) {
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_error err;
  qv_status st = qv_hf_feature_emit(qv_dataset_features(self->ds), QV_HF_JSON_COMPACT, &sb, &err);
  PyObject *r = st == QV_OK ? PyObject_CallFunction(qvpy_json_loads, "s#", qv_strbuf_cstr(&sb),
                                                    (Py_ssize_t)sb.len)
                            : qvpy_raise_qv(st, &err);
  qv_strbuf_reset(&sb);
  /* a quiver.features.Features, built in Python from datasets' dict form */
  return r == NULL ? NULL : qvpy_call_python("quiver.features", "_from_extension", r);
}

static PyObject *Dataset_cache_files(DatasetObject *self, void *c) {
  char **paths = NULL;
  int64_t n = 0;
  qv_error err;
  qv_status st = qv_dataset_cache_files(self->ds, &paths, &n, &err);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *list = PyList_New((Py_ssize_t)n);
  for (int64_t i = 0; list != NULL && i < n; i++) {
    PyObject *d = Py_BuildValue("{s:O&}", "filename", PyUnicode_DecodeFSDefault, paths[i]);
    if (d == NULL) Py_CLEAR(list);
    else PyList_SET_ITEM(list, (Py_ssize_t)i, d);
  }
  qv_table_free_paths(paths, n);
  return list;
}

static PyObject *Dataset_repr(DatasetObject *self) {
  PyObject *names = qvpy_column_names_of(qv_dataset_schema(self->ds));
  if (names == NULL) return NULL;
  PyObject *r = PyUnicode_FromFormat("Dataset({\n    features: %R,\n    num_rows: %lld\n})", names,
                                     (long long)qv_dataset_num_rows(self->ds));
  Py_DECREF(names);
  return r;
}

/* Rows rows[0..n) gathered, as {column: [values]}. */
static PyObject *take_columns(qv_dataset *ds, const int64_t *rows, int64_t n) {
  qv_array *b = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_take(ds, rows, n, &b, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *r = qvpy_columns_dict(b);
  qv_array_unref(b);
  return r;
}

/* Most batches a table may have for ds[i] to keep its qvpy_tcache (a
 * slot and a start each); beyond, rows are read as qv_table_batch gives them. */
#define TCACHE_MAX_BATCHES (1 << 22)

/* *slot (where a table's qvpy_tcache lives on the Dataset) made when first
 * needed. False with the error raised; true with *slot NULL when the table
 * has too many batches to keep one. */
static bool tcache_get(qvpy_tcache **slot, qv_table *t) {
  if (*slot != NULL) return true;
  int64_t nb = qv_table_num_batches(t);
  if (nb > TCACHE_MAX_BATCHES) return true;
  qvpy_tcache *c = PyMem_Calloc(1, sizeof *c);
  if (c != NULL) {
    c->nb = nb;
    c->starts = PyMem_Malloc((size_t)(nb + 1) * sizeof *c->starts);
    c->slot = PyMem_Calloc((size_t)(nb > 0 ? nb : 1), sizeof *c->slot);
  }
  if (c == NULL || c->starts == NULL || c->slot == NULL) {
    tcache_free(c);
    PyErr_NoMemory();
    return false;
  }
  for (int64_t b = 0; b <= nb; b++) c->starts[b] = qv_table_batch_offset(t, b);
  *slot = c;
  return true;
}

/* The check of a fetched batch's mapped bytes (guard.h). */
static qv_status slot_check(const qvpy_bslot *s, qv_error *err) {
  return s->np >= 0 ? qv_guard_check_points(s->pts, s->np, err)
                    : qv_guard_check_array(s->batch, err);
}

/* The batch of `t` holding `row` (in [0, rows)) and the row in it, its
 * mapped bytes checked: through the cache `c` (NULL: qv_table_locate +
 * qv_table_batch). *batch: a reference the caller drops. With `pending`
 * not NULL, a batch fetched before is not checked here: *pending is its
 * slot, which the caller checks (slot_check) before reading mapped bytes
 * (the check's load then overlaps the row's prefetches); else NULL. False
 * with the error raised. */
static bool batch_of_row(qvpy_tcache *c, qv_table *t, int64_t row, qv_array **batch, int64_t *r,
                         const qvpy_bslot **pending) {
  qv_error err;
  qv_status st = QV_OK;
  if (pending != NULL) *pending = NULL;
  if (c == NULL) {
    int64_t b = 0;
    st = qv_table_locate(t, row, &b, r, &err);
    if (st == QV_OK) st = qv_table_batch(t, b, batch, &err);
    if (st != QV_OK) return qvpy_raise_qv(st, &err), false;
    return true;
  }
  int64_t lo = 0, hi = c->nb; /* the last batch starting at or before row */
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (c->starts[mid] <= row) lo = mid;
    else hi = mid;
  }
  if (c->nb == 0 || row < c->starts[lo] || row >= c->starts[lo + 1]) {
    PyErr_Format(qvpy_IndexError, "row %lld is outside the table's batches", (long long)row);
    return false;
  }
  qvpy_bslot *s = &c->slot[lo];
  if (s->batch == NULL) {
    st = qv_table_batch(t, lo, &s->batch, &err); /* its mapped bytes checked */
    if (st == QV_OK && s->batch->length != c->starts[lo + 1] - c->starts[lo]) {
      st =
          qv_error_set(&err, QV_EINVAL, "table: batch %lld has %lld rows, not %lld", (long long)lo,
                       (long long)s->batch->length, (long long)(c->starts[lo + 1] - c->starts[lo]));
      qv_array_unref(s->batch);
      s->batch = NULL;
    }
    if (st == QV_OK) s->np = qv_guard_array_points(s->batch, s->pts, 4);
  } else if (pending != NULL) {
    *pending = s;
  } else {
    st = slot_check(s, &err);
  }
  if (st != QV_OK) return qvpy_raise_qv(st, &err), false;
  *batch = qv_array_ref(s->batch);
  *r = row - c->starts[lo];
  return true;
}

/* The data row behind row `i` (in range) of self's indices mapping. */
static bool data_row_of(DatasetObject *self, qv_table *ix, int64_t i, int64_t *out) {
  if (!tcache_get(&self->rows_indices, ix)) return false;
  qv_array *batch = NULL;
  int64_t r = 0;
  if (!batch_of_row(self->rows_indices, ix, i, &batch, &r, NULL)) return false;
  const qv_array *col = batch->n_children == 1 ? batch->children[0] : NULL;
  int64_t k = col != NULL ? col->offset + batch->offset + r : 0;
  qv_error err;
  qv_status st = QV_OK;
  if (col == NULL || col->type->id != QV_UINT64 || col->n_buffers < 2 || col->buffers[1] == NULL ||
      k < 0 || k >= col->length + col->offset || (k + 1) * 8 > col->buffers[1]->size) {
    st = qv_error_set(&err, QV_EINVAL, "indices mapping: not one uint64 column");
  } else if (col->buffers[0] != NULL &&
             ((k >> 3) >= col->buffers[0]->size || !qv_bit_get(col->buffers[0]->data, k))) {
    st = qv_error_set(&err, QV_EINVAL, "indices mapping: row %lld is null", (long long)i);
  } else {
    uint64_t v;
    memcpy(&v, col->buffers[1]->data + k * 8, 8);
    int64_t n = qv_table_num_rows(qv_dataset_data(self->ds));
    if (v >= (uint64_t)n)
      st = qv_error_set(&err, QV_ERANGE, "indices mapping: row %lld maps to data row %llu of %lld",
                        (long long)i, (unsigned long long)v, (long long)n);
    *out = (int64_t)v;
  }
  qv_array_unref(batch);
  if (st != QV_OK) return qvpy_raise_qv(st, &err), false;
  return true;
}

/* Row `i` (in range) as {column: value}, read from the data batch that
 * holds it (no one-row slice is made): its bytes prefetched, the batch's
 * mapped bytes checked, the dict built. */
static PyObject *row_dict_at(DatasetObject *self, int64_t i) {
  qv_table *data = qv_dataset_data(self->ds), *ix = qv_dataset_indices(self->ds);
  int64_t data_row = i, r = 0;
  if (ix != NULL && !data_row_of(self, ix, i, &data_row)) return NULL;
  qv_array *batch = NULL;
  const qvpy_bslot *pending = NULL;
  if (!tcache_get(&self->rows_data, data) ||
      !batch_of_row(self->rows_data, data, data_row, &batch, &r, &pending))
    return NULL;
  qvpy_row_prefetch(batch, r, false);
  qv_error err;
  qv_status st = pending != NULL ? slot_check(pending, &err) : QV_OK;
  if (st != QV_OK) {
    qv_array_unref(batch);
    return qvpy_raise_qv(st, &err);
  }
  qvpy_row_prefetch(batch, r, true);
  PyObject *row = qvpy_row_build(batch, r);
  qv_array_unref(batch);
  return row;
}

/* Most batches a slice read straight from the data table may span. */
#define SLICE_PARTS 64

/* Rows [start, start+len) as {column: [values]}: without an indices
 * mapping, the lists filled from the data batches holding them (at most
 * SLICE_PARTS of them; more through a zero-copy table slice), the rows
 * gathered with one. */
static PyObject *slice_columns(DatasetObject *self, int64_t start, int64_t len) {
  qv_table *data = qv_dataset_data(self->ds);
  if (qv_dataset_indices(self->ds) == NULL && len > 0 && tcache_get(&self->rows_data, data) &&
      self->rows_data != NULL) {
    qv_array *parts[SLICE_PARTS];
    int64_t first[SLICE_PARTS], count[SLICE_PARTS], n = 0, done = 0;
    bool ok = true;
    while (ok && done < len && n < SLICE_PARTS) {
      int64_t r = 0;
      ok = batch_of_row(self->rows_data, data, start + done, &parts[n], &r, NULL);
      if (!ok) break;
      first[n] = r;
      count[n] = parts[n]->length - r < len - done ? parts[n]->length - r : len - done;
      done += count[n++];
    }
    PyObject *dict = ok && done == len ? qvpy_parts_columns_dict(qv_table_schema(data), parts,
                                                                 first, count, n, len)
                                       : NULL;
    for (int64_t p = 0; p < n; p++) qv_array_unref(parts[p]);
    if (dict != NULL || !ok || PyErr_Occurred()) return dict;
  }
  if (PyErr_Occurred()) return NULL;
  qv_table *t = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_slice(self->ds, start, len, &t, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *r = qvpy_table_columns_dict(t);
  qv_table_unref(t);
  return r;
}

/* One column over every row, as a list. */
static PyObject *column_list(qv_dataset *ds, const char *name) {
  qv_table *t = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_column(ds, name, &t, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *list = PyList_New((Py_ssize_t)qv_table_num_rows(t));
  Py_ssize_t pos = 0;
  for (int64_t i = 0; list != NULL && i < qv_table_num_batches(t); i++) {
    qv_array *b = NULL;
    st = qv_table_batch(t, i, &b, &err);
    if (st != QV_OK) {
      qvpy_raise_qv(st, &err);
      Py_CLEAR(list);
      break;
    }
    const qv_array *col = b->children[0];
    if (!qvpy_mapped_bytes_there(b)) Py_CLEAR(list);
    for (int64_t j = 0; list != NULL && j < b->length; j++) {
      PyObject *v = qvpy_value_of(col, b->offset + j, 0);
      if (v == NULL) {
        Py_CLEAR(list);
        break;
      }
      PyList_SET_ITEM(list, pos++, v);
    }
    qv_array_unref(b);
  }
  qv_table_unref(t);
  return list;
}

/* Whether `key` is a sequence of row numbers other than a list, tuple or
 * range: a 1-d numpy integer array, say (datasets accepts them). */
static bool is_row_array(PyObject *key) {
  return !PyLong_Check(key) && !PyUnicode_Check(key) && !PyBytes_Check(key) && !PyDict_Check(key) &&
         PySequence_Check(key) && PyObject_HasAttrString(key, "ndim");
}

/* ds[i] -> row dict; ds[a:b:c] and ds[[i, j, ...]] -> {column: [values]};
 * ds["col"] -> list of the column's values (datasets' __getitem__), all
 * as Python values converted in C. */
static PyObject *getitem_python(DatasetObject *self, PyObject *key) {
  int64_t n = qv_dataset_num_rows(self->ds);
  if (PyUnicode_Check(key)) {
    const char *name = PyUnicode_AsUTF8(key);
    if (name == NULL) return NULL;
    if (qv_dataset_column_index(self->ds, name) < 0) {
      PyObject *names = qvpy_column_names_of(qv_dataset_schema(self->ds));
      if (names != NULL)
        PyErr_Format(qvpy_KeyError,
                     "Column %R not in the dataset. Current "
                     "columns in the dataset: %R",
                     key, names);
      Py_XDECREF(names);
      return NULL;
    }
    return column_list(self->ds, name);
  }
  if (PySlice_Check(key)) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) return NULL;
    Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)n, &start, &stop, step);
    if (step == 1) return slice_columns(self, (int64_t)start, (int64_t)len);
    int64_t *rows = PyMem_Malloc((size_t)(len > 0 ? len : 1) * sizeof *rows);
    if (rows == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < len; i++) rows[i] = (int64_t)(start + i * step);
    PyObject *r = take_columns(self->ds, rows, (int64_t)len);
    PyMem_Free(rows);
    return r;
  }
  if (PyIndex_Check(key) && !PyBool_Check(key) && !is_row_array(key)) {
    int64_t i;
    if (!qvpy_arg_int64(key, "index", &i)) return NULL;
    if (i < -n || i >= n) {
      PyErr_Format(qvpy_IndexError, "index %lld is out of range for a dataset of %lld rows",
                   (long long)i, (long long)n);
      return NULL;
    }
    if (i < 0) i += n;
    return row_dict_at(self, i);
  }
  if (PyList_Check(key) || PyTuple_Check(key) || PyRange_Check(key) || is_row_array(key)) {
    int64_t *rows = NULL, m = 0;
    if (!qvpy_arg_rows(key, n, true, &rows, &m)) return NULL;
    PyObject *r = take_columns(self->ds, rows, m);
    PyMem_Free(rows);
    return r;
  }
  PyErr_Format(qvpy_TypeError,
               "dataset indices must be an int, a slice, a list of ints or a "
               "column name, not %.100s",
               Py_TYPE(key)->tp_name);
  return NULL;
}

/* ds[key]: Python values from C without a format, else the format's
 * (quiver._formats.getitem); ds["col"] is always quiver._formats' (a lazy
 * Column, as datasets 5). */
static PyObject *Dataset_getitem(DatasetObject *self, PyObject *key) {
  if (!PyUnicode_Check(key) && plain_rows(self)) return getitem_python(self, key);
  PyObject *a = PyTuple_Pack(1, key);
  PyObject *r = a ? qvpy_call_formats("getitem", (PyObject *)self, a, NULL) : NULL;
  Py_XDECREF(a);
  return r;
}

static PyObject *Dataset_getitem_python(DatasetObject *self, PyObject *key) {
  return getitem_python(self, key);
}

/* A table as an object with __arrow_c_stream__ (quiver._formats wraps the
 * capsule). */
static PyObject *table_stream(qv_table *t) {
  struct ArrowArrayStream *s = NULL;
  PyObject *cap =
      qvpy_new_capsule(sizeof *s, "arrow_array_stream", qvpy_stream_capsule_free, (void **)&s);
  qv_error err;
  qv_status st = cap ? qv_table_export_stream(t, s, &err) : QV_OK;
  qv_table_unref(t);
  if (st != QV_OK) {
    Py_DECREF(cap);
    return qvpy_raise_qv(st, &err);
  }
  return cap;
}

/* Dataset._arrow(key): the rows (or column) ds[key] selects, as Arrow data
 * for quiver._formats: an "arrow_array_stream" capsule for an int, a slice
 * of step 1 and a column name (zero copy from the mapping without an
 * indices mapping), a quiver.Batch of the rows gathered for other slices
 * and row lists. */
static PyObject *Dataset_arrow(DatasetObject *self, PyObject *key) {
  int64_t n = qv_dataset_num_rows(self->ds);
  qv_table *t = NULL;
  qv_error err;
  qv_status st;
  if (PyUnicode_Check(key)) {
    const char *name = PyUnicode_AsUTF8(key);
    if (name == NULL) return NULL;
    if (qv_dataset_column_index(self->ds, name) < 0)
      return getitem_python(self, key); /* raises the KeyError */
    Py_BEGIN_ALLOW_THREADS st = qv_dataset_column(self->ds, name, &t, &err);
    Py_END_ALLOW_THREADS return st == QV_OK ? table_stream(t) : qvpy_raise_qv(st, &err);
  }
  int64_t first = 0, len = 0;
  int64_t *rows = NULL;
  if (PySlice_Check(key)) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) return NULL;
    Py_ssize_t l = PySlice_AdjustIndices((Py_ssize_t)n, &start, &stop, step);
    if (step == 1) {
      first = start;
      len = l;
    } else {
      rows = PyMem_Malloc((size_t)(l > 0 ? l : 1) * sizeof *rows);
      if (rows == NULL) return PyErr_NoMemory();
      for (Py_ssize_t i = 0; i < l; i++) rows[i] = (int64_t)(start + i * step);
      len = l;
    }
  } else if (PyIndex_Check(key) && !PyBool_Check(key) && !is_row_array(key)) {
    if (!qvpy_arg_int64(key, "index", &first)) return NULL;
    if (first < -n || first >= n)
      return PyErr_Format(qvpy_IndexError,
                          "index %lld is out of range for a dataset of %lld "
                          "rows",
                          (long long)first, (long long)n);
    if (first < 0) first += n;
    len = 1;
  } else if (PyList_Check(key) || PyTuple_Check(key) || PyRange_Check(key) || is_row_array(key)) {
    if (!qvpy_arg_rows(key, n, true, &rows, &len)) return NULL;
  } else {
    return getitem_python(self, key); /* raises the TypeError */
  }
  if (rows == NULL) {
    Py_BEGIN_ALLOW_THREADS st = qv_dataset_slice(self->ds, first, len, &t, &err);
    Py_END_ALLOW_THREADS return st == QV_OK ? table_stream(t) : qvpy_raise_qv(st, &err);
  }
  qv_array *b = NULL;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_take(self->ds, rows, len, &b, &err);
  Py_END_ALLOW_THREADS PyMem_Free(rows);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  return qvpy_new_batch(b, (qv_schema *)qv_dataset_schema(self->ds));
}

/* Dataset._with_format(state): a new Dataset object over the same dataset
 * (same origin) with this format state (None: none). */
static PyObject *Dataset_with_format_state(DatasetObject *self, PyObject *state) {
  PyObject *r = wrap(qv_dataset_ref(self->ds));
  if (r == NULL) return NULL;
  ((DatasetObject *)r)->origin = Py_XNewRef(self->origin);
  ((DatasetObject *)r)->format = state == Py_None ? NULL : Py_NewRef(state);
  return r;
}

static PyObject *Dataset_format_state(DatasetObject *self, void *c) {
  return Py_NewRef(self->format ? self->format : Py_None);
}

static int Dataset_set_format_state(DatasetObject *self, PyObject *v, void *c) {
  if (v == NULL) v = Py_None;
  Py_XSETREF(self->format, v == Py_None ? NULL : Py_NewRef(v));
  return 0;
}

/* Methods implemented in quiver/_formats.py (format glue, no per-value
 * work): each forwards self and its arguments. */
#define FORMATS_METHOD(name)                                                                       \
  static PyObject *Dataset_##name(DatasetObject *self, PyObject *args, PyObject *kwargs) {         \
    return qvpy_call_formats(#name, (PyObject *)self, args, kwargs);                               \
  }
FORMATS_METHOD(with_format)
FORMATS_METHOD(set_format)
FORMATS_METHOD(reset_format)
FORMATS_METHOD(formatted_as)
FORMATS_METHOD(with_transform)
FORMATS_METHOD(set_transform)
FORMATS_METHOD(getitems)
#undef FORMATS_METHOD

/* ds.info: a quiver.DatasetInfo (quiver._api._info), made once per object. */
static PyObject *Dataset_info(DatasetObject *self, void *c) {
  if (self->info == NULL) self->info = qvpy_call_api("_info", (PyObject *)self, NULL, NULL);
  return Py_XNewRef(self->info);
}

static PyObject *Dataset_format(DatasetObject *self, void *c) {
  return qvpy_call_formats("format", (PyObject *)self, NULL, NULL);
}

/* datasets' cache arguments of the index transforms (keep_in_memory,
 * load_from_cache_file, *_cache_file_name, writer_batch_size,
 * new_fingerprint; NULL when absent) into options; strings point into
 * `hold` (a list the caller drops after the call). quiver keeps results in
 * memory unless cache=True or a cache file name is given. */
typedef struct cache_args {
  PyObject *keep_in_memory, *load_from_cache_file, *cache_file_name, *writer_batch_size,
      *new_fingerprint;
} cache_args;

static bool apply_cache_args(const cache_args *a, int cache, PyObject *hold,
                             qv_dataset_options *o) {
  bool in_memory = a->keep_in_memory != NULL && PyObject_IsTrue(a->keep_in_memory) > 0;
  bool named = a->cache_file_name != NULL && a->cache_file_name != Py_None;
  if (in_memory && named) {
    PyErr_SetString(
        qvpy_ValueError,
        "Please use either `keep_in_memory` or `indices_cache_file_name` but not both.");
    return false;
  }
  *o = qvpy_options((cache || named) && !in_memory);
  if (named) {
    PyObject *fs = PyOS_FSPath(a->cache_file_name);
    PyObject *b = fs && PyUnicode_Check(fs) ? PyUnicode_EncodeFSDefault(fs) : Py_XNewRef(fs);
    Py_XDECREF(fs);
    if (b == NULL || !PyBytes_Check(b) || PyList_Append(hold, b) < 0) {
      Py_XDECREF(b);
      if (!PyErr_Occurred()) PyErr_SetString(qvpy_TypeError, "a cache file name must be a path");
      return false;
    }
    Py_DECREF(b);
    o->cache_file_name = PyBytes_AS_STRING(b);
  }
  o->ignore_cache = a->load_from_cache_file == Py_False;
  if (a->writer_batch_size != NULL && a->writer_batch_size != Py_None) {
    if (!qvpy_arg_int64(a->writer_batch_size, "writer_batch_size", &o->writer_batch_size))
      return false;
    if (o->writer_batch_size < 0) o->writer_batch_size = 0;
  }
  if (a->new_fingerprint != NULL && a->new_fingerprint != Py_None) {
    if (!PyUnicode_Check(a->new_fingerprint)) {
      PyErr_Format(qvpy_TypeError, "new_fingerprint must be a str or None, not %.100s",
                   Py_TYPE(a->new_fingerprint)->tp_name);
      return false;
    }
    if ((o->new_fingerprint = PyUnicode_AsUTF8(a->new_fingerprint)) == NULL) return false;
  }
  return true;
}

/* new_fingerprint= of the column methods: the result renamed. */
static qv_status with_new_fp(qv_status st, qv_dataset **out, PyObject *nfp, qv_error *err) {
  if (st != QV_OK || nfp == NULL || nfp == Py_None) return st;
  const char *fp = PyUnicode_Check(nfp) ? PyUnicode_AsUTF8(nfp) : NULL;
  qv_dataset *r = NULL;
  if (fp == NULL) {
    PyErr_Clear();
    st = qv_error_set(err, QV_ETYPE, "new_fingerprint must be a str or None");
  } else {
    st = qv_dataset_with_fingerprint(*out, fp, &r, err);
  }
  qv_dataset_unref(*out);
  *out = r;
  return st;
}

static PyObject *Dataset_select(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"indices",
                       "keep_in_memory",
                       "indices_cache_file_name",
                       "writer_batch_size",
                       "new_fingerprint",
                       "cache",
                       NULL};
  PyObject *idx;
  cache_args ca = {NULL, NULL, NULL, NULL, NULL};
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOO$p:select", kw, &idx, &ca.keep_in_memory,
                                   &ca.cache_file_name, &ca.writer_batch_size, &ca.new_fingerprint,
                                   &cache))
    return NULL;
  PyObject *hold = PyList_New(0);
  qv_dataset_options o;
  if (hold == NULL || !apply_cache_args(&ca, cache, hold, &o)) {
    Py_XDECREF(hold);
    return NULL;
  }
  int64_t *rows = NULL, n = 0;
  if (!qvpy_arg_rows(idx, qv_dataset_num_rows(self->ds), false, &rows, &n)) {
    Py_DECREF(hold);
    return NULL;
  }
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_select(self->ds, rows, n, &o, &out, &err);
  Py_END_ALLOW_THREADS PyMem_Free(rows);
  Py_DECREF(hold);
  return qvpy_derive(self, qvpy_result(st, out, &err), "select", args, kwargs);
}

static PyObject *Dataset_shuffle(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"seed",
                       "generator",
                       "keep_in_memory",
                       "load_from_cache_file",
                       "indices_cache_file_name",
                       "writer_batch_size",
                       "new_fingerprint",
                       "cache",
                       NULL};
  PyObject *seed_obj = Py_None, *gen = Py_None;
  cache_args ca = {NULL, NULL, NULL, NULL, NULL};
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOOOOO$p:shuffle", kw, &seed_obj, &gen,
                                   &ca.keep_in_memory, &ca.load_from_cache_file,
                                   &ca.cache_file_name, &ca.writer_batch_size, &ca.new_fingerprint,
                                   &cache))
    return NULL;
  if (gen != Py_None) { /* datasets: generator.permutation(len(self)) */
    if (seed_obj != Py_None)
      return PyErr_Format(qvpy_ValueError,
                          "Both `seed` and `generator` were provided. Please "
                          "specify just one of them.");
    return qvpy_call_api("_shuffle_generator", (PyObject *)self, args, kwargs);
  }
  uint64_t seed;
  if (!qvpy_arg_seed(seed_obj, &seed)) return NULL;
  PyObject *hold = PyList_New(0);
  qv_dataset_options o;
  if (hold == NULL || !apply_cache_args(&ca, cache, hold, &o)) {
    Py_XDECREF(hold);
    return NULL;
  }
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_shuffle(self->ds, seed, &o, &out, &err);
  Py_END_ALLOW_THREADS Py_DECREF(hold);
  /* the origin holds the seed used (drawn when seed=None) */
  PyObject *r = qvpy_result(st, out, &err);
  PyObject *a = r ? Py_BuildValue("(K)", (unsigned long long)seed) : NULL;
  PyObject *k = a ? (kwargs ? PyDict_Copy(kwargs) : PyDict_New()) : NULL;
  if (k != NULL) {
    if (PyDict_DelItemString(k, "seed") < 0) PyErr_Clear();
    if (PyDict_SetItemString(k, "cache", cache ? Py_True : Py_False) < 0) Py_CLEAR(k);
  }
  if (r != NULL && k == NULL) Py_CLEAR(r);
  else r = qvpy_derive(self, r, "shuffle", a, k);
  Py_XDECREF(a);
  Py_XDECREF(k);
  return r;
}

static PyObject *Dataset_sort(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"column_names",
                       "reverse",
                       "null_placement",
                       "keep_in_memory",
                       "load_from_cache_file",
                       "indices_cache_file_name",
                       "writer_batch_size",
                       "new_fingerprint",
                       "cache",
                       NULL};
  PyObject *cols_obj, *rev_obj = Py_False;
  const char *placement = "at_end";
  cache_args ca = {NULL, NULL, NULL, NULL, NULL};
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OsOOOOO$p:sort", kw, &cols_obj, &rev_obj,
                                   &placement, &ca.keep_in_memory, &ca.load_from_cache_file,
                                   &ca.cache_file_name, &ca.writer_batch_size, &ca.new_fingerprint,
                                   &cache))
    return NULL;
  if (PyTuple_Check(rev_obj)) rev_obj = PySequence_List(rev_obj);
  else Py_INCREF(rev_obj);
  if (rev_obj == NULL) return NULL;
  PyObject *hold = PyList_New(0);
  int hold_ok = hold != NULL && PyList_Append(hold, rev_obj) == 0;
  Py_DECREF(rev_obj);
  qv_dataset_options o;
  if (!hold_ok || !apply_cache_args(&ca, cache, hold, &o)) {
    Py_XDECREF(hold);
    return NULL;
  }
  qv_null_placement nulls;
  if (strcmp(placement, "at_end") == 0 || strcmp(placement, "last") == 0) nulls = QV_NULLS_AT_END;
  else if (strcmp(placement, "at_start") == 0 || strcmp(placement, "first") == 0)
    nulls = QV_NULLS_AT_START;
  else {
    Py_DECREF(hold);
    return PyErr_Format(qvpy_ValueError,
                        "null_placement must be 'at_end' or 'at_start', "
                        "found '%s'",
                        placement);
  }
  PyObject *keep = NULL;
  const char **cols = NULL;
  int32_t n = 0;
  if (!qvpy_arg_names(cols_obj, "column_names", &keep, &cols, &n)) {
    Py_DECREF(hold);
    return NULL;
  }
  bool *desc = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *desc);
  if (desc == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  rev_obj = PyList_GET_ITEM(hold, 0);
  if (PyBool_Check(rev_obj)) {
    for (int32_t i = 0; i < n; i++) desc[i] = rev_obj == Py_True;
  } else if (PyList_Check(rev_obj) || PyTuple_Check(rev_obj)) {
    if (PySequence_Size(rev_obj) != n) {
      PyErr_Format(qvpy_ValueError, "reverse has %zd values for %d columns",
                   PySequence_Size(rev_obj), (int)n);
      goto done;
    }
    for (int32_t i = 0; i < n; i++) {
      PyObject *b = PySequence_Fast_GET_ITEM(rev_obj, i);
      if (!PyBool_Check(b)) {
        PyErr_Format(qvpy_TypeError, "reverse must hold bools, found %.100s", Py_TYPE(b)->tp_name);
        goto done;
      }
      desc[i] = b == Py_True;
    }
  } else {
    PyErr_Format(qvpy_TypeError, "reverse must be a bool or a list of bools, not %.100s",
                 Py_TYPE(rev_obj)->tp_name);
    goto done;
  }
  if (n == 0) {
    PyErr_SetString(qvpy_ValueError, "sort needs at least one column");
    goto done;
  }
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_sort(self->ds, cols, n, desc, nulls, &o, &out, &err);
  Py_END_ALLOW_THREADS PyMem_Free(desc);
  PyMem_Free(cols);
  Py_DECREF(keep);
  Py_DECREF(hold);
  return qvpy_derive(self, qvpy_result(st, out, &err), "sort", args, kwargs);
done:
  PyMem_Free(desc);
  PyMem_Free(cols);
  Py_DECREF(keep);
  Py_DECREF(hold);
  return NULL;
}

static PyObject *Dataset_shard(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {
      "num_shards",        "index", "contiguous", "keep_in_memory", "indices_cache_file_name",
      "writer_batch_size", NULL};
  PyObject *ns_obj, *ix_obj, *ignored[3] = {NULL, NULL, NULL}; /* shards are in memory */
  int contiguous = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|pOOO:shard", kw, &ns_obj, &ix_obj, &contiguous,
                                   &ignored[0], &ignored[1], &ignored[2]))
    return NULL;
  int64_t ns, ix;
  if (!qvpy_arg_int64(ns_obj, "num_shards", &ns) || !qvpy_arg_int64(ix_obj, "index", &ix))
    return NULL;
  if (ns < 1)
    return PyErr_Format(qvpy_ValueError, "num_shards must be >= 1, found %lld", (long long)ns);
  if (ix < 0 || ix >= ns)
    return PyErr_Format(qvpy_ValueError, "index %lld is out of range for %lld shards",
                        (long long)ix, (long long)ns);
  qv_dataset_options o = qvpy_options(0);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_shard(self->ds, ns, ix, contiguous != 0, &o, &out, &err);
  Py_END_ALLOW_THREADS return qvpy_derive(self, qvpy_result(st, out, &err), "shard", args, kwargs);
}

/* test_size / train_size: None, a float fraction or an int count. */
static bool arg_split_size(PyObject *o, const char *what, qv_split_size *out) {
  memset(out, 0, sizeof *out);
  if (o == Py_None) return true;
  if (PyFloat_Check(o)) {
    out->kind = QV_SIZE_FRACTION;
    out->fraction = PyFloat_AS_DOUBLE(o);
    return true;
  }
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    out->kind = QV_SIZE_COUNT;
    return qvpy_arg_int64(o, what, &out->count);
  }
  PyErr_Format(qvpy_TypeError, "%s must be a float, an int or None, not %.100s", what,
               Py_TYPE(o)->tp_name);
  return false;
}

static PyObject *Dataset_train_test_split(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"test_size",
                       "train_size",
                       "shuffle",
                       "stratify_by_column",
                       "seed",
                       "generator",
                       "keep_in_memory",
                       "load_from_cache_file",
                       "train_indices_cache_file_name",
                       "test_indices_cache_file_name",
                       "writer_batch_size",
                       "train_new_fingerprint",
                       "test_new_fingerprint",
                       "cache",
                       NULL};
  PyObject *test_obj = Py_None, *train_obj = Py_None, *seed_obj = Py_None, *strat = Py_None,
           *gen = Py_None, *x[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  int shuffle = 1, cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOpOOOOOOOOOO$p:train_test_split", kw, &test_obj,
                                   &train_obj, &shuffle, &strat, &seed_obj, &gen, &x[0], &x[1],
                                   &x[2], &x[3], &x[4], &x[5], &x[6], &cache))
    return NULL;
  /* stratify_by_column, generator, cache file names, new fingerprints:
   * the rows are chosen in Python (quiver._api._train_test_split) */
  bool py = strat != Py_None || gen != Py_None;
  for (int i = 2; i < 7; i++)
    if (x[i] != NULL && x[i] != Py_None && i != 4) py = true;
  if (py) return qvpy_call_api("_train_test_split", (PyObject *)self, args, kwargs);
  if (x[0] != NULL && PyObject_IsTrue(x[0]) > 0) cache = 0;
  qv_split_size test, train;
  uint64_t seed = 0;
  if (!arg_split_size(test_obj, "test_size", &test) ||
      !arg_split_size(train_obj, "train_size", &train))
    return NULL;
  if (shuffle && !qvpy_arg_seed(seed_obj, &seed)) return NULL;
  qv_dataset_options o = qvpy_options(cache);
  o.ignore_cache = x[1] == Py_False;
  qv_dataset *tr = NULL, *te = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st =
      qv_dataset_train_test_split(self->ds, test, train, shuffle != 0, seed, &o, &tr, &te, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *a = wrap(tr);
  PyObject *b = wrap(te);
  /* the origins hold the seed used (drawn when seed=None) */
  PyObject *kw2 = Py_BuildValue("{s:O,s:O,s:O,s:K,s:O}", "test_size", test_obj, "train_size",
                                train_obj, "shuffle", shuffle ? Py_True : Py_False, "seed",
                                (unsigned long long)seed, "cache", cache ? Py_True : Py_False);
  if (kw2 == NULL) Py_CLEAR(a);
  a = qvpy_derive(self, a, "train_test_split:train", NULL, kw2);
  b = qvpy_derive(self, b, "train_test_split:test", NULL, kw2);
  Py_XDECREF(kw2);
  PyObject *d = a && b ? Py_BuildValue("{s:O,s:O}", "train", a, "test", b) : NULL;
  Py_XDECREF(a);
  Py_XDECREF(b);
  return d == NULL ? NULL : qvpy_call_python("quiver.dataset_dict", "DatasetDict", d);
}

static PyObject *Dataset_flatten_indices(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"keep_in_memory",
                       "cache_file_name",
                       "writer_batch_size",
                       "features",
                       "disable_nullable",
                       "num_proc",
                       "new_fingerprint",
                       "cache",
                       NULL};
  cache_args ca = {NULL, NULL, NULL, NULL, NULL};
  PyObject *features = Py_None, *ignored[2] = {NULL, NULL};
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "|OOOOOOO$p:flatten_indices", kw, &ca.keep_in_memory, &ca.cache_file_name,
          &ca.writer_batch_size, &features, &ignored[0], &ignored[1], &ca.new_fingerprint, &cache))
    return NULL;
  PyObject *hold = PyList_New(0);
  qv_dataset_options o;
  if (hold == NULL || !apply_cache_args(&ca, cache, hold, &o)) {
    Py_XDECREF(hold);
    return NULL;
  }
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_flatten_indices(self->ds, &o, &out, &err);
  Py_END_ALLOW_THREADS Py_DECREF(hold);
  PyObject *r = qvpy_derive(self, qvpy_result(st, out, &err), "flatten_indices", args, kwargs);
  if (r == NULL || features == Py_None) return r;
  PyObject *t = Py_BuildValue("(OO)", r, features);
  Py_DECREF(r);
  r = t ? qvpy_call_api("_cast_result", NULL, t, NULL) : NULL;
  Py_XDECREF(t);
  return r;
}

typedef qv_status (*names_fn)(qv_dataset *, const char *const *, int32_t, qv_dataset **,
                              qv_error *);

static PyObject *names_transform(DatasetObject *self, PyObject *args, PyObject *kwargs,
                                 const char *what, const char *op, names_fn fn) {
  static char *kw[] = {"column_names", "new_fingerprint", NULL};
  PyObject *arg, *nfp = Py_None;
  char fmt[64];
  snprintf(fmt, sizeof fmt, "O|O:%s", op);
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kw, &arg, &nfp)) return NULL;
  PyObject *keep = NULL;
  const char **names = NULL;
  int32_t n = 0;
  if (!qvpy_arg_names(arg, what, &keep, &names, &n)) return NULL;
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st = with_new_fp(fn(self->ds, names, n, &out, &err), &out, nfp, &err);
  PyMem_Free(names);
  Py_DECREF(keep);
  PyObject *a = PyTuple_Pack(1, arg);
  PyObject *k = nfp != Py_None ? Py_BuildValue("{s:O}", "new_fingerprint", nfp) : NULL;
  PyObject *r = qvpy_derive(self, qvpy_result(st, out, &err), op, a, k);
  if (a == NULL) Py_CLEAR(r);
  Py_XDECREF(a);
  Py_XDECREF(k);
  return r;
}

static PyObject *Dataset_select_columns(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  return names_transform(self, args, kwargs, "column_names", "select_columns",
                         qv_dataset_select_columns);
}

static PyObject *Dataset_remove_columns(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  return names_transform(self, args, kwargs, "column_names", "remove_columns",
                         qv_dataset_remove_columns);
}

/* Rename; `op` and `args` (the method's) for the result's origin. */
static PyObject *do_rename(DatasetObject *self, const char *const *from, const char *const *to,
                           int32_t n, const char *op, PyObject *args, PyObject *nfp) {
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st =
      with_new_fp(qv_dataset_rename_columns(self->ds, from, to, n, &out, &err), &out, nfp, &err);
  PyObject *k = nfp != Py_None ? Py_BuildValue("{s:O}", "new_fingerprint", nfp) : NULL;
  PyObject *r = qvpy_derive(self, qvpy_result(st, out, &err), op, args, k);
  Py_XDECREF(k);
  return r;
}

static PyObject *Dataset_rename_column(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"original_column_name", "new_column_name", "new_fingerprint", NULL};
  const char *from, *to;
  PyObject *nfp = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ss|O:rename_column", kw, &from, &to, &nfp))
    return NULL;
  PyObject *a = Py_BuildValue("(ss)", from, to);
  PyObject *r = a ? do_rename(self, &from, &to, 1, "rename_column", a, nfp) : NULL;
  Py_XDECREF(a);
  return r;
}

static PyObject *Dataset_rename_columns(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"column_mapping", "new_fingerprint", NULL};
  PyObject *mapping, *nfp = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:rename_columns", kw, &mapping, &nfp))
    return NULL;
  if (!PyDict_Check(mapping))
    return PyErr_Format(qvpy_TypeError, "rename_columns takes a dict {old: new}, not %.100s",
                        Py_TYPE(mapping)->tp_name);
  Py_ssize_t n = PyDict_Size(mapping), pos = 0, i = 0;
  const char **from = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *from);
  const char **to = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *to);
  PyObject *k, *v, *r = NULL;
  if (from == NULL || to == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  while (PyDict_Next(mapping, &pos, &k, &v)) {
    if (!PyUnicode_Check(k) || !PyUnicode_Check(v)) {
      PyErr_SetString(qvpy_TypeError, "rename_columns: names must be str");
      goto done;
    }
    if ((from[i] = PyUnicode_AsUTF8(k)) == NULL || (to[i] = PyUnicode_AsUTF8(v)) == NULL) goto done;
    i++;
  }
  PyObject *a = PyTuple_Pack(1, mapping);
  r = a ? do_rename(self, from, to, (int32_t)n, "rename_columns", a, nfp) : NULL;
  Py_XDECREF(a);
done:
  PyMem_Free(from);
  PyMem_Free(to);
  return r;
}

bool qvpy_save_options(PyObject *size_obj, PyObject *shards_obj, qv_save_options *so) {
  memset(so, 0, sizeof *so);
  if (size_obj != Py_None) {
    if (PyUnicode_Check(size_obj)) {
      const char *text = PyUnicode_AsUTF8(size_obj);
      if (text == NULL) return false;
      qv_error err;
      qv_status st = qv_hf_parse_size(text, &so->max_shard_size, &err);
      if (st != QV_OK) {
        PyErr_Format(qvpy_ValueError, "max_shard_size: %s", err.message);
        return false;
      }
    } else if (!qvpy_arg_int64(size_obj, "max_shard_size", &so->max_shard_size)) {
      return false;
    }
    if (so->max_shard_size <= 0) {
      PyErr_SetString(qvpy_ValueError, "max_shard_size must be positive");
      return false;
    }
  }
  if (shards_obj != Py_None) {
    if (!qvpy_arg_int64(shards_obj, "num_shards", &so->num_shards)) return false;
    if (so->num_shards <= 0) {
      PyErr_SetString(qvpy_ValueError, "num_shards must be positive");
      return false;
    }
  }
  return true;
}

static PyObject *Dataset_save_to_disk(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"dataset_path", "max_shard_size", "num_shards", NULL};
  PyObject *path = NULL, *size_obj = Py_None, *shards_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|OO:save_to_disk", kw, PyUnicode_FSConverter,
                                   &path, &size_obj, &shards_obj))
    return NULL;
  qv_save_options so;
  qv_error err;
  PyObject *r = NULL;
  /* a changed ds.info is saved and local Image/Audio files embedded
   * (quiver._api._for_save: self or a copy) */
  PyObject *src = qvpy_call_api("_for_save", (PyObject *)self, NULL, NULL);
  if (src != NULL && !PyObject_TypeCheck(src, &qvpy_DatasetType)) {
    PyErr_SetString(qvpy_TypeError, "_for_save must return a quiver.Dataset");
    Py_CLEAR(src);
  }
  if (src != NULL && qvpy_save_options(size_obj, shards_obj, &so)) {
    qv_dataset *ds = ((DatasetObject *)src)->ds;
    qv_status st;
    Py_BEGIN_ALLOW_THREADS st =
        qv_dataset_save_to_disk(ds, PyBytes_AS_STRING(path), &so, NULL, &err);
    Py_END_ALLOW_THREADS if (st != QV_OK) qvpy_raise_qv(st, &err);
    else r = Py_NewRef(Py_None); }
  Py_XDECREF(src);
  Py_DECREF(path);
  return r;
}

static PyObject *Dataset_arrow_c_schema(DatasetObject *self, PyObject *unused) {
  return qvpy_schema_capsule(qv_dataset_schema(self->ds));
}

static PyObject *Dataset_arrow_c_stream(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"requested_schema", NULL};
  PyObject *req = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:__arrow_c_stream__", kw, &req)) return NULL;
  if (!qvpy_check_requested(req, qv_dataset_schema(self->ds))) return NULL;
  struct ArrowArrayStream *s = NULL;
  PyObject *cap =
      qvpy_new_capsule(sizeof *s, "arrow_array_stream", qvpy_stream_capsule_free, (void **)&s);
  if (cap == NULL) return NULL;
  qv_error err;
  qv_status st = qv_dataset_export_stream(self->ds, 0, s, &err);
  if (st != QV_OK) {
    Py_DECREF(cap);
    return qvpy_raise_qv(st, &err);
  }
  return cap;
}

/* ---- iteration ---------------------------------------------------------- */

typedef struct {
  PyObject_HEAD qv_dataset_iter *it;
  qv_schema *schema; /* reference (BatchIter) */
  qv_array *batch;   /* current batch (RowIter) */
  int64_t pos;       /* next row in batch (RowIter) */
} IterObject;

static PyObject *new_iter(PyTypeObject *type, qv_dataset *ds, int64_t batch_size, bool drop_last) {
  IterObject *o = PyObject_New(IterObject, type);
  if (o == NULL) return NULL;
  o->it = NULL;
  o->batch = NULL;
  o->pos = 0;
  o->schema = qv_schema_ref((qv_schema *)qv_dataset_schema(ds));
  qv_error err;
  qv_status st = qv_dataset_iter_new(ds, batch_size, drop_last, &o->it, &err);
  if (st != QV_OK) {
    Py_DECREF(o);
    return qvpy_raise_qv(st, &err);
  }
  return (PyObject *)o;
}

static void Iter_dealloc(IterObject *self) {
  qv_dataset_iter_free(self->it);
  qv_array_unref(self->batch);
  qv_schema_unref(self->schema);
  PyObject_Free(self);
}

static PyObject *RowIter_next(IterObject *self) {
  while (self->batch == NULL || self->pos >= self->batch->length) {
    qv_array_unref(self->batch);
    self->batch = NULL;
    self->pos = 0;
    if (self->it == NULL) return NULL;
    qv_error err;
    qv_status st = qv_dataset_iter_next(self->it, &self->batch, NULL, &err);
    if (st != QV_OK) return qvpy_raise_qv(st, &err);
    if (self->batch == NULL) {
      qv_dataset_iter_free(self->it);
      self->it = NULL;
      return NULL; /* StopIteration */
    }
    if (!qvpy_mapped_bytes_there(self->batch)) {
      qv_array_unref(self->batch);
      self->batch = NULL;
      return NULL;
    }
  }
  return qvpy_row_dict(self->batch, self->pos++);
}

static PyObject *BatchIter_next(IterObject *self) {
  if (self->it == NULL) return NULL;
  qv_array *b = NULL;
  qv_error err;
  qv_status st = qv_dataset_iter_next(self->it, &b, NULL, &err);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  if (b == NULL) {
    qv_dataset_iter_free(self->it);
    self->it = NULL;
    return NULL;
  }
  return qvpy_new_batch(b, self->schema);
}

PyTypeObject qvpy_RowIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._RowIterator",
    .tp_basicsize = sizeof(IterObject),
    .tp_dealloc = (destructor)Iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)RowIter_next,
};

PyTypeObject qvpy_BatchIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._BatchIterator",
    .tp_basicsize = sizeof(IterObject),
    .tp_dealloc = (destructor)Iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)BatchIter_next,
};

static PyObject *Dataset_iter_rows(DatasetObject *self) {
  return new_iter(&qvpy_RowIterType, self->ds, QVPY_ROW_BATCH, false);
}

/* Dataset.iter_batches(batch_size, drop_last_batch): quiver.Batch objects. */
static PyObject *Dataset_batches(DatasetObject *self, PyObject *args) {
  PyObject *bs_obj;
  int drop_last = 0;
  if (!PyArg_ParseTuple(args, "O|p:iter_batches", &bs_obj, &drop_last)) return NULL;
  int64_t bs;
  if (!qvpy_arg_int64(bs_obj, "batch_size", &bs)) return NULL;
  if (bs < 1)
    return PyErr_Format(qvpy_ValueError, "batch_size must be >= 1, found %lld", (long long)bs);
  return new_iter(&qvpy_BatchIterType, self->ds, bs, drop_last != 0);
}

/* iter(ds): rows, in the format when there is one. */
static PyObject *Dataset_tp_iter(DatasetObject *self) {
  if (!plain_rows(self)) return qvpy_call_formats("iterate", (PyObject *)self, NULL, NULL);
  return Dataset_iter_rows(self);
}

/* iter(batch_size=None, drop_last_batch=False): rows (batch_size=None) or
 * batches in the dataset's format, {column: [values]} without one; rows
 * without a format straight from C, the rest by quiver._formats.iter. */
static PyObject *Dataset_iter(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"batch_size", "drop_last_batch", NULL};
  PyObject *bs_obj = Py_None;
  int drop_last = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Op:iter", kw, &bs_obj, &drop_last)) return NULL;
  if (!plain_rows(self)) return qvpy_call_formats("iterate", (PyObject *)self, args, kwargs);
  if (bs_obj == Py_None) return Dataset_iter_rows(self);
  return qvpy_call_formats("iterate", (PyObject *)self, args, kwargs);
}

/* Methods implemented in quiver/_api.py (constructors, exports, column
 * methods over construct.c's primitives). */
#define API_METHOD(name)                                                                           \
  static PyObject *Dataset_api_##name(PyObject *self, PyObject *args, PyObject *kwargs) {          \
    return qvpy_call_api(#name, PyType_Check(self) ? NULL : self, args, kwargs);                   \
  }
API_METHOD(from_dict)
API_METHOD(from_list)
API_METHOD(from_pandas)
API_METHOD(from_polars)
API_METHOD(from_generator)
API_METHOD(from_arrow)
API_METHOD(to_dict)
API_METHOD(to_list)
API_METHOD(to_pandas)
API_METHOD(to_polars)
API_METHOD(to_arrow)
API_METHOD(to_iterable_dataset)
API_METHOD(cast)
API_METHOD(cast_column)
API_METHOD(add_column)
API_METHOD(class_encode_column)
API_METHOD(flatten)
API_METHOD(skip)
API_METHOD(take)
API_METHOD(repeat)
API_METHOD(add_item)
#undef API_METHOD

static PyObject *Dataset_shape(DatasetObject *self, void *c) {
  (void)c;
  return Py_BuildValue("(Li)", (long long)qv_dataset_num_rows(self->ds),
                       (int)qv_dataset_num_columns(self->ds));
}

static PyMethodDef Dataset_methods[] = {
    {"join", (PyCFunction)(void (*)(void))qvpy_Dataset_join, METH_VARARGS | METH_KEYWORDS,
     "join($self, /, other, on=None, how='inner', *, left_on=None, right_on=None, "
     "suffixes=None, memory_limit=None)\n--\n\nHash join with another Dataset "
     "(docs/compute.md): inner, left, right, full (outer), semi, anti; suffixes: a (left, "
     "right) pair, default ('', '_right'); memory_limit: bytes or a size such as '4GB' for "
     "the build side's hash state (default a quarter of RAM), past which the join spills "
     "partitions to $TMPDIR (grace hash join, same result)."},
    {"distinct", (PyCFunction)(void (*)(void))qvpy_Dataset_distinct, METH_VARARGS | METH_KEYWORDS,
     "distinct($self, /, column_names=None)\n--\n\nThe first row of each distinct key of the "
     "columns (all columns when None), in order of first appearance."},
    {"value_counts", (PyCFunction)qvpy_Dataset_value_counts, METH_O,
     "value_counts($self, column, /)\n--\n\nA Dataset of each distinct value ('values') and "
     "its count ('counts'), in order of first appearance (pyarrow's value_counts)."},
    {"select", (PyCFunction)(void (*)(void))Dataset_select, METH_VARARGS | METH_KEYWORDS,
     "select($self, /, indices, keep_in_memory=False, indices_cache_file_name=None, "
     "writer_batch_size=1000, new_fingerprint=None, *, cache=False)\n--\n\nThe rows at these "
     "positions (an iterable of ints or a numpy integer array)."},
    {"shuffle", (PyCFunction)(void (*)(void))Dataset_shuffle, METH_VARARGS | METH_KEYWORDS,
     "shuffle($self, /, seed=None, generator=None, keep_in_memory=False, "
     "load_from_cache_file=None, indices_cache_file_name=None, writer_batch_size=1000, "
     "new_fingerprint=None, *, cache=False)\n--\n\nRows in numpy default_rng(seed).permutation "
     "order (or generator.permutation), as datasets' shuffle."},
    {"sort", (PyCFunction)(void (*)(void))Dataset_sort, METH_VARARGS | METH_KEYWORDS,
     "sort($self, /, column_names, reverse=False, null_placement='at_end', keep_in_memory=False, "
     "load_from_cache_file=None, indices_cache_file_name=None, writer_batch_size=1000, "
     "new_fingerprint=None, *, cache=False)\n--\n\nStable sort by one column or a list of "
     "columns."},
    {"filter", (PyCFunction)(void (*)(void))qvpy_Dataset_filter, METH_VARARGS | METH_KEYWORDS,
     "filter($self, /, function=None, *, with_indices=False, with_rank=False, "
     "input_columns=None, batched=False, batch_size=1000, keep_in_memory=False, "
     "load_from_cache_file=None, cache_file_name=None, writer_batch_size=1000, fn_kwargs=None, "
     "num_proc=None, suffix_template=None, new_fingerprint=None, desc=None, cache=False)\n--\n\n"
     "The rows where the expression string (docs/expressions.md) is true, or for which the "
     "callable returns a true value (batched: a list of them per batch of columns); datasets' "
     "arguments."},
    {"map", (PyCFunction)(void (*)(void))qvpy_Dataset_map, METH_VARARGS | METH_KEYWORDS,
     "map($self, /, function=None, *, set=None, with_indices=False, with_rank=False, "
     "input_columns=None, batched=False, batch_size=1000, drop_last_batch=False, "
     "remove_columns=None, keep_in_memory=False, load_from_cache_file=None, "
     "cache_file_name=None, writer_batch_size=1000, features=None, disable_nullable=False, "
     "fn_kwargs=None, num_proc=None, suffix_template=None, new_fingerprint=None, desc=None, "
     "try_original_type=True, on_mixed_types='use_json', cache=False)\n--\n\ndatasets' map with a "
     "Python callable (row dict -> dict of columns, or batched: dict of column lists -> dict of "
     "column lists, numpy arrays or Arrow arrays, or a table), or with set={name: expression} "
     "evaluated in C (docs/python.md)."},
    {"group_by", (PyCFunction)(void (*)(void))qvpy_Dataset_group_by, METH_VARARGS | METH_KEYWORDS,
     "group_by($self, /, keys=None, *, sort=False, memory_limit=None)\n--\n\nA pending hash "
     "group-by by these key columns; .agg('sum(v1)', 'max(v1) - min(v2) AS r', n='count(*)') "
     "runs it and returns a new Dataset (docs/compute.md)."},
    {"shard", (PyCFunction)(void (*)(void))Dataset_shard, METH_VARARGS | METH_KEYWORDS,
     "shard($self, /, num_shards, index, contiguous=True, keep_in_memory=False, "
     "indices_cache_file_name=None, writer_batch_size=1000)\n--\n\nOne shard, as datasets' "
     "shard."},
    {"train_test_split", (PyCFunction)(void (*)(void))Dataset_train_test_split,
     METH_VARARGS | METH_KEYWORDS,
     "train_test_split($self, /, test_size=None, train_size=None, shuffle=True, "
     "stratify_by_column=None, seed=None, generator=None, keep_in_memory=False, "
     "load_from_cache_file=None, train_indices_cache_file_name=None, "
     "test_indices_cache_file_name=None, writer_batch_size=1000, train_new_fingerprint=None, "
     "test_new_fingerprint=None, *, cache=False)\n--\n\n{'train': Dataset, 'test': Dataset}."},
    {"flatten_indices", (PyCFunction)(void (*)(void))Dataset_flatten_indices,
     METH_VARARGS | METH_KEYWORDS,
     "flatten_indices($self, /, keep_in_memory=False, cache_file_name=None, "
     "writer_batch_size=1000, features=None, disable_nullable=False, num_proc=None, "
     "new_fingerprint=None, *, cache=False)\n--\n\nThe rows as mapped, materialised without a "
     "mapping."},
    {"select_columns", (PyCFunction)(void (*)(void))Dataset_select_columns,
     METH_VARARGS | METH_KEYWORDS,
     "select_columns($self, /, column_names, new_fingerprint=None)\n--\n\nOnly these columns, "
     "in this order."},
    {"remove_columns", (PyCFunction)(void (*)(void))Dataset_remove_columns,
     METH_VARARGS | METH_KEYWORDS,
     "remove_columns($self, /, column_names, new_fingerprint=None)\n--\n\nWithout these "
     "columns."},
    {"rename_column", (PyCFunction)(void (*)(void))Dataset_rename_column,
     METH_VARARGS | METH_KEYWORDS,
     "rename_column($self, /, original_column_name, new_column_name, new_fingerprint=None)"
     "\n--\n\nOne column renamed."},
    {"rename_columns", (PyCFunction)(void (*)(void))Dataset_rename_columns,
     METH_VARARGS | METH_KEYWORDS,
     "rename_columns($self, /, column_mapping, new_fingerprint=None)\n--\n\nColumns renamed by "
     "a dict {old: new, ...}."},
    {"save_to_disk", (PyCFunction)(void (*)(void))Dataset_save_to_disk,
     METH_VARARGS | METH_KEYWORDS,
     "save_to_disk($self, /, dataset_path, max_shard_size=None, num_shards=None)\n--\n\nWrite the "
     "save_to_disk layout datasets.load_from_disk reads."},
    {"iter", (PyCFunction)(void (*)(void))Dataset_iter, METH_VARARGS | METH_KEYWORDS,
     "iter($self, /, batch_size=None, drop_last_batch=False)\n--\n\nBatches of batch_size rows in "
     "the "
     "dataset's format ({column: [values]} without one); rows for batch_size=None."},
    {"iter_batches", (PyCFunction)Dataset_batches, METH_VARARGS,
     "iter_batches($self, batch_size, drop_last_batch=False, /)\n--\n\nquiver.Batch objects of "
     "batch_size rows (zero copy without an indices mapping), "
     "whatever the format."},
    {"_arrow", (PyCFunction)Dataset_arrow, METH_O,
     "_arrow($self, key, /)\n--\n\nThe rows or column ds[key] selects as Arrow data (an "
     "'arrow_array_stream' "
     "capsule or a quiver.Batch), for quiver._formats."},
    {"_numpy_iter", (PyCFunction)qvpy_Dataset_numpy_iter, METH_VARARGS,
     "_numpy_iter($self, batch_size, drop_last_batch=False, /)\n--\n\nWith an indices "
     "mapping: (first row, rows, {column: numpy array or None}) per batch, copied straight "
     "from the mapped data; None without one. For quiver._formats."},
    {"_getitem_python", (PyCFunction)Dataset_getitem_python, METH_O,
     "_getitem_python($self, key, /)\n--\n\nds[key] as Python values, whatever the format."},
    {"_info_json", (PyCFunction)qvpy_dataset_info_json, METH_NOARGS,
     "_info_json($self, /)\n--\n\ndataset_info.json of the dataset (qv_dataset_info_json)."},
    {"_with_info", (PyCFunction)qvpy_dataset_with_info, METH_O,
     "_with_info($self, json, /)\n--\n\nA new Dataset object carrying this dataset_info.json."},
    {"_with_format", (PyCFunction)Dataset_with_format_state, METH_O,
     "_with_format($self, state, /)\n--\n\nA new Dataset object over the same data with this "
     "format state."},
#define FM(name, sig, doc)                                                                         \
  {                                                                                                \
#name, (PyCFunction)(void (*)(void))Dataset_##name, METH_VARARGS | METH_KEYWORDS,              \
        #name "($self, /, " sig ")\n--\n\n" doc                                                    \
  }
    FM(with_format, "type=None, columns=None, output_all_columns=False, **format_kwargs",
       "A new Dataset object returning rows in this format (datasets' with_format)."),
    FM(set_format, "type=None, columns=None, output_all_columns=False, **format_kwargs",
       "Set the output format in place (datasets' set_format)."),
    FM(reset_format, "", "Back to Python values in place (datasets' reset_format)."),
    FM(formatted_as, "type=None, columns=None, output_all_columns=False, **format_kwargs",
       "A context manager setting the format for its block (datasets' formatted_as)."),
    FM(with_transform, "transform, columns=None, output_all_columns=False",
       "A new Dataset object applying transform to formatted batches (datasets' with_transform)."),
    FM(set_transform, "transform, columns=None, output_all_columns=False",
       "Set a transform in place (datasets' set_transform)."),
#undef FM
    {"__getitems__", (PyCFunction)(void (*)(void))Dataset_getitems, METH_VARARGS | METH_KEYWORDS,
     "__getitems__($self, keys, /)\n--\n\nds[keys] as a list of row dicts (what torch's DataLoader "
     "calls)."},
    {"_recipes", (PyCFunction)qvpy_Dataset_recipes, METH_NOARGS,
     "_recipes($self, /)\n--\n\n(data table recipe, indices mapping recipe or None) as bytes "
     "(qv_table_recipe; used by pickling)."},
    {"_write_indices", (PyCFunction)qvpy_Dataset_write_indices, METH_O,
     "_write_indices($self, path, /)\n--\n\nThe in-memory indices mapping written to path (an "
     "Arrow file, atomically): True, or False without one (used by pickling)."},
    {"_with_indices_file", (PyCFunction)qvpy_Dataset_with_indices_file, METH_VARARGS,
     "_with_indices_file($self, path, fingerprint, origin, /)\n--\n\nThis dataset (without a "
     "mapping) through the indices mapping file path, with that fingerprint and origin (used by "
     "pickling)."},
    {"__reduce__", (PyCFunction)qvpy_Dataset_reduce, METH_NOARGS,
     "__reduce__($self, /)\n--\n\nPickle as the dataset's recipe (docs/python.md, "
     "\"Pickling\")."},
    {"__arrow_c_schema__", (PyCFunction)Dataset_arrow_c_schema, METH_NOARGS,
     "__arrow_c_schema__($self, /)\n--\n\nThe schema as an 'arrow_schema' PyCapsule."},
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))Dataset_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_stream__($self, /, requested_schema=None)\n--\n\nThe rows as an "
     "'arrow_array_stream' "
     "PyCapsule (zero copy without an indices mapping)."},
    {"to_csv", (PyCFunction)(void (*)(void))qvpy_Dataset_to_csv, METH_VARARGS | METH_KEYWORDS,
     "to_csv($self, /, path_or_buf, batch_size=None, num_proc=None, **to_csv_kwargs)\n--\n\n"
     "The rows as a CSV file (C writer; docs/python.md). Returns the bytes written."},
    {"to_json", (PyCFunction)(void (*)(void))qvpy_Dataset_to_json, METH_VARARGS | METH_KEYWORDS,
     "to_json($self, /, path_or_buf, batch_size=None, num_proc=None, **to_json_kwargs)\n--\n\n"
     "The rows as JSON Lines, datasets' records/lines form. Returns the bytes written."},
    {"to_parquet", (PyCFunction)(void (*)(void))qvpy_Dataset_to_parquet,
     METH_VARARGS | METH_KEYWORDS,
     "to_parquet($self, /, path_or_buf, batch_size=None, **parquet_writer_kwargs)\n--\n\n"
     "The rows as a Parquet file (C writer, snappy). Returns the bytes written."},
    {"from_parquet", (PyCFunction)(void (*)(void))qvpy_Dataset_from_parquet,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_parquet(path_or_paths, split=None, features=None, **kwargs)\n--\n\n"
     "A Dataset of Parquet files, as datasets' Dataset.from_parquet."},
    {"from_csv", (PyCFunction)(void (*)(void))qvpy_Dataset_from_csv,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_csv(path_or_paths, split=None, features=None, **kwargs)\n--\n\n"
     "A Dataset of CSV files typed as datasets' Dataset.from_csv types them."},
    {"from_json", (PyCFunction)(void (*)(void))qvpy_Dataset_from_json,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_json(path_or_paths, split=None, features=None, **kwargs)\n--\n\n"
     "A Dataset of JSON Lines files, as datasets' Dataset.from_json."},
    /* construct.c and quiver/_api.py: constructors, exports, column methods */
    {"_cast", (PyCFunction)qvpy_Dataset_cast, METH_O,
     "_cast($self, features_json, /)\n--\n\nqv_dataset_cast (datasets' JSON features)."},
    {"_cast_column", (PyCFunction)qvpy_Dataset_cast_column, METH_VARARGS,
     "_cast_column($self, column, feature_json, /)\n--\n\nqv_dataset_cast_column."},
    {"_add_column", (PyCFunction)qvpy_Dataset_add_column, METH_VARARGS,
     "_add_column($self, name, values, feature_json=None, /)\n--\n\nqv_dataset_add_column."},
    {"unique", (PyCFunction)qvpy_Dataset_unique, METH_O,
     "unique($self, column, /)\n--\n\nThe distinct values of a column in order of first "
     "appearance (datasets' unique)."},
#define API(name, flags, sig, doc)                                                                 \
  {                                                                                                \
#name, (PyCFunction)(void (*)(void))Dataset_api_##name, METH_VARARGS | METH_KEYWORDS | flags,  \
        #name sig "\n--\n\n" doc                                                                   \
  }
    API(from_dict, METH_CLASS,
        "($type, /, mapping, features=None, info=None, split=None, on_mixed_types=None)",
        "An in-memory Dataset of {column: values} (datasets' from_dict)."),
    API(from_list, METH_CLASS,
        "($type, /, mapping, features=None, info=None, split=None, on_mixed_types=None)",
        "An in-memory Dataset of a list of row dicts (datasets' from_list)."),
    API(from_pandas, METH_CLASS,
        "($type, /, df, features=None, info=None, split=None, preserve_index=None)",
        "An in-memory Dataset of a pandas DataFrame (datasets' from_pandas)."),
    API(from_polars, METH_CLASS, "($type, /, df, features=None, info=None, split=None)",
        "An in-memory Dataset of a polars DataFrame (datasets' from_polars)."),
    API(from_generator, METH_CLASS,
        "($type, /, generator, features=None, cache_dir=None, keep_in_memory=False, "
        "gen_kwargs=None, num_proc=None, split=None, fingerprint=None, **kwargs)",
        "The rows a generator yields, written to an Arrow cache file and memory-mapped "
        "(datasets' from_generator)."),
    API(from_arrow, METH_CLASS, "($type, /, data, features=None, split=None, fingerprint=None)",
        "An in-memory Dataset of any object with __arrow_c_stream__ (zero copy)."),
    API(to_dict, 0, "($self, /, batch_size=None, batched=False)",
        "{column: [values]} (datasets' to_dict), or an iterator of them when batched."),
    API(to_list, 0, "($self, /)", "The rows as a list of dicts (datasets' to_list)."),
    API(to_pandas, 0, "($self, /, batch_size=None, batched=False)",
        "A pandas DataFrame (datasets' to_pandas), or an iterator of them when batched."),
    API(to_polars, 0, "($self, /, batch_size=None, batched=False)",
        "A polars DataFrame (datasets' to_polars), or an iterator of them when batched."),
    API(to_arrow, 0, "($self, /)", "A pyarrow.Table of the rows (zero copy without a mapping)."),
    API(to_iterable_dataset, 0, "($self, /, num_shards=1)",
        "A quiver.IterableDataset over num_shards contiguous shards (datasets' semantics)."),
    API(cast, 0, "($self, /, features)", "Cast to these features (datasets' cast)."),
    API(cast_column, 0, "($self, /, column, feature, new_fingerprint=None)",
        "Cast one column to a feature (datasets' cast_column)."),
    API(add_column, 0, "($self, /, name, column, new_fingerprint=None, feature=None)",
        "A column appended (a list, numpy array or Arrow array; datasets' add_column)."),
    API(class_encode_column, 0, "($self, /, column, include_nulls=False)",
        "A column encoded as a ClassLabel of its sorted distinct values (datasets')."),
    API(flatten, 0, "($self, /, new_fingerprint=None, max_depth=16)",
        "Struct columns flattened into 'a.b' columns (datasets' flatten)."),
    API(skip, 0, "($self, /, n)", "Without the first n rows (datasets' skip)."),
    API(take, 0, "($self, /, n)", "The first n rows (datasets' take)."),
    API(repeat, 0, "($self, /, num_times)", "The rows num_times over (datasets' repeat)."),
    API(add_item, 0, "($self, /, item, new_fingerprint=None)",
        "One row appended, cast to the features (datasets' add_item)."),
#undef API
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Dataset_getset[] = {
    {"num_rows", (getter)Dataset_num_rows, NULL, "Number of rows (through the mapping).", NULL},
    {"num_columns", (getter)Dataset_num_columns, NULL, "Number of columns.", NULL},
    {"shape", (getter)Dataset_shape, NULL, "(num_rows, num_columns), as datasets' shape.", NULL},
    {"column_names", (getter)Dataset_column_names, NULL, "Column names.", NULL},
    {"fingerprint", (getter)Dataset_fingerprint, NULL, "The datasets fingerprint.", NULL},
    {"features", (getter)Dataset_features, NULL,
     "The features: a quiver.Features (datasets' Features.to_dict() form with .to_dict()).", NULL},
    {"split", (getter)Dataset_split, NULL, "The split name, or None.", NULL},
    {"_origin", (getter)qvpy_Dataset_origin, NULL,
     "How the dataset was made (plain data replayed when unpickling), or None.", NULL},
    {"info", (getter)Dataset_info, NULL,
     "The dataset's info: a quiver.DatasetInfo (datasets' DatasetInfo: description, citation, "
     "features, ...).",
     NULL},
    {"format", (getter)Dataset_format, NULL,
     "The output format, as datasets' format: {'type', 'format_kwargs', 'columns', "
     "'output_all_columns'}.",
     NULL},
    {"_format", (getter)Dataset_format_state, (setter)Dataset_set_format_state,
     "The format state (quiver._formats), or None.", NULL},
    {"cache_files", (getter)Dataset_cache_files, NULL,
     "The files mapped behind the dataset, as [{'filename': path}, ...].", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMappingMethods Dataset_as_mapping = {
    .mp_length = (lenfunc)Dataset_len,
    .mp_subscript = (binaryfunc)Dataset_getitem,
};

static PySequenceMethods Dataset_as_sequence = {.sq_length = (lenfunc)Dataset_len};

PyTypeObject qvpy_DatasetType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver.Dataset",
    .tp_basicsize = sizeof(DatasetObject),
    .tp_dealloc = (destructor)Dataset_dealloc,
    .tp_repr = (reprfunc)Dataset_repr,
    .tp_as_sequence = &Dataset_as_sequence,
    .tp_as_mapping = &Dataset_as_mapping,
    .tp_iter = (getiterfunc)Dataset_tp_iter,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "A dataset (Hugging Face datasets' Dataset) over memory-mapped Arrow files. "
        "Immutable: transforms return new datasets. Open one with quiver.open(path).",
    .tp_methods = Dataset_methods,
    .tp_getset = Dataset_getset,
    .tp_new = Dataset_new,
};
