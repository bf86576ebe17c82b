/*
 * pickle.c — what a quiver.Dataset pickles as, for the CPython extension
 * (python/ layer): its recipe, never its rows when it is file-backed.
 *
 * Two kinds of recipe, chosen by quiver/_pickle.py (docs/python.md,
 * "Pickling"):
 *  - the origin: how the dataset was made, as a chain of plain Python
 *    values — ("open", realpath, split, data) at the root, then
 *    (parent origin, method name, args, kwargs) per transform whose
 *    arguments are plain data (no callables; at most QVPY_ORIGIN_BUDGET
 *    values, copied into tuples so later changes to the caller's lists do
 *    not leak in; a random seed recorded as the seed drawn). Reloading
 *    replays it through the public methods (cache=True replays reuse
 *    their cache files). A map or filter with a Python callable and
 *    cache=True starts a new root ("tables", data recipe, indices recipe,
 *    fingerprint): its cache files are small to describe;
 *  - the tables: the data table's and the indices mapping's recipes
 *    (qv_table_recipe: mapped files as path + identity + replays, in-memory
 *    parts as Arrow IPC bytes) and the fingerprint, rebuilt with
 *    qv_table_from_recipe (a changed file is QV_ECHANGED) and
 *    qv_dataset_from_table / qv_dataset_select.
 * Here: the origin kept on each Dataset, Dataset._origin, _recipes(),
 * __reduce__ (which calls quiver._pickle.reduce) and the module function
 * _from_recipes.
 */
#include "qvpy.h"

#include "quiver/writer.h"

/** Most plain values (containers and scalars, counted recursively) one
 *  transform's arguments may hold to be kept in an origin. */
#define QVPY_ORIGIN_BUDGET 256

/* A copy of `o` if it is plain data (None, bool, int, float, str, bytes,
 * range; tuples and lists as tuples; dicts with str keys), within
 * *budget values; NULL without an exception when it is not (or is too
 * big), NULL with one on failure. */
static PyObject *plain_copy(PyObject *o, int *budget, int depth) {
  if (--*budget < 0 || depth > 8) return NULL;
  if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
      PyUnicode_CheckExact(o) || PyBytes_CheckExact(o) || PyRange_Check(o))
    return Py_NewRef(o);
  if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    if (n > *budget) return NULL;
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t != NULL && i < n; i++) {
      PyObject *c = plain_copy(PySequence_Fast_GET_ITEM(o, i), budget, depth + 1);
      if (c == NULL) Py_CLEAR(t);
      else PyTuple_SET_ITEM(t, i, c);
    }
    return t;
  }
  if (PyDict_CheckExact(o)) {
    PyObject *d = PyDict_New(), *k, *v;
    Py_ssize_t pos = 0;
    while (d != NULL && PyDict_Next(o, &pos, &k, &v)) {
      PyObject *c = PyUnicode_CheckExact(k) ? plain_copy(v, budget, depth + 1) : NULL;
      if (c == NULL || PyDict_SetItem(d, k, c) < 0) Py_CLEAR(d);
      Py_XDECREF(c);
    }
    return d;
  }
  return NULL;
}

PyObject *qvpy_derive(DatasetObject *parent, PyObject *result, const char *op, PyObject *args,
                      PyObject *kwargs) {
  /* transforms keep the output format, as datasets' do */
  if (result != NULL && parent->format != NULL && PyObject_TypeCheck(result, &qvpy_DatasetType))
    Py_XSETREF(((DatasetObject *)result)->format, Py_NewRef(parent->format));
  if (result == NULL || parent->origin == NULL || !PyObject_TypeCheck(result, &qvpy_DatasetType))
    return result;
  int budget = QVPY_ORIGIN_BUDGET;
  PyObject *a = plain_copy(args ? args : Py_None, &budget, 0);
  PyObject *k = a ? plain_copy(kwargs ? kwargs : Py_None, &budget, 0) : NULL;
  if (a != NULL && k != NULL) {
    PyObject *origin =
        Py_BuildValue("(OsOO)", parent->origin, op, args ? a : Py_None, kwargs ? k : Py_None);
    if (origin != NULL) Py_XSETREF(((DatasetObject *)result)->origin, origin);
  }
  Py_XDECREF(a);
  Py_XDECREF(k);
  if (PyErr_Occurred()) Py_CLEAR(result); /* only an allocation failure gets here */
  return result;
}

PyObject *qvpy_Dataset_origin(DatasetObject *self, void *c) {
  return Py_NewRef(self->origin ? self->origin : Py_None);
}

/* The recipe of `t` as bytes. */
static PyObject *recipe_bytes(qv_table *t) {
  uint8_t *buf = NULL;
  int64_t len = 0;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_table_recipe(t, &buf, &len, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *b = PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)len);
  free(buf);
  return b;
}

PyObject *qvpy_Dataset_recipes(DatasetObject *self, PyObject *unused) {
  PyObject *data = recipe_bytes(qv_dataset_data(self->ds));
  if (data == NULL) return NULL;
  qv_table *ix = qv_dataset_indices(self->ds);
  PyObject *indices = ix ? recipe_bytes(ix) : Py_NewRef(Py_None);
  if (indices == NULL) {
    Py_DECREF(data);
    return NULL;
  }
  return Py_BuildValue("(NN)", data, indices);
}

PyObject *qvpy_tables_origin(PyObject *result) {
  if (result == NULL) return NULL;
  DatasetObject *d = (DatasetObject *)result;
  PyObject *r = qvpy_Dataset_recipes(d, NULL);
  PyObject *origin = r ? Py_BuildValue("(sOOs)", "tables", PyTuple_GET_ITEM(r, 0),
                                       PyTuple_GET_ITEM(r, 1), qv_dataset_fingerprint(d->ds))
                       : NULL;
  Py_XDECREF(r);
  if (origin == NULL) {
    Py_DECREF(result);
    return NULL;
  }
  Py_XSETREF(d->origin, origin);
  return result;
}

/* `t` written to `path` as one record batch (its batches combined, not
 * split): a reader then reads one message header, not one per batch. */
static qv_status write_one_batch(qv_table *t, const char *path, qv_error *err) {
  qv_table *one = NULL;
  qv_write_options o;
  memset(&o, 0, sizeof o);
  o.max_batch_rows = -1;
  qv_status st = qv_table_combine_batches(t, &one, err);
  if (st == QV_OK) st = qv_table_write_path(one, path, &o, err);
  qv_table_unref(one);
  return st;
}

PyObject *qvpy_Dataset_write_indices(DatasetObject *self, PyObject *arg) {
  PyObject *path = NULL;
  qv_table *ix = qv_dataset_indices(self->ds);
  if (ix == NULL || qv_table_get_kind(ix) != QV_TABLE_IN_MEMORY) Py_RETURN_FALSE;
  if (!PyUnicode_FSConverter(arg, &path)) return NULL;
  qv_error err;
  qv_status st;
  const char *p = PyBytes_AS_STRING(path);
  Py_BEGIN_ALLOW_THREADS st = write_one_batch(ix, p, &err);
  Py_END_ALLOW_THREADS Py_DECREF(path);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  Py_RETURN_TRUE;
}

PyObject *qvpy_Dataset_with_indices_file(DatasetObject *self, PyObject *args) {
  PyObject *path = NULL, *origin;
  const char *fp;
  if (!PyArg_ParseTuple(args, "O&sO:_with_indices_file", PyUnicode_FSConverter, &path, &fp,
                        &origin))
    return NULL;
  qv_dataset *mapped = NULL, *out = NULL;
  qv_error err;
  qv_status st;
  const char *p = PyBytes_AS_STRING(path);
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_with_indices_file(self->ds, p, &mapped, &err);
  if (st == QV_OK) st = qv_dataset_with_fingerprint(mapped, fp, &out, &err);
  Py_END_ALLOW_THREADS Py_DECREF(path);
  qv_dataset_unref(mapped);
  PyObject *r = qvpy_result(st, out, &err);
  if (r != NULL && origin != Py_None) Py_XSETREF(((DatasetObject *)r)->origin, Py_NewRef(origin));
  return r;
}

PyObject *qvpy_Dataset_reduce(DatasetObject *self, PyObject *unused) {
  PyObject *mod = PyImport_ImportModule("quiver._pickle");
  if (mod == NULL) return NULL;
  PyObject *r = PyObject_CallMethod(mod, "reduce", "O", (PyObject *)self);
  Py_DECREF(mod);
  return r;
}

/* The rows an indices table holds (one uint64 column, no nulls), each
 * below `n_rows`, into *out (PyMem_Free). */
static qv_status indices_rows(qv_table *t, int64_t n_rows, int64_t **out, int64_t *n,
                              qv_error *err) {
  int64_t total = qv_table_num_rows(t), pos = 0;
  int64_t *rows = PyMem_RawMalloc((size_t)(total > 0 ? total : 1) * sizeof *rows);
  if (rows == NULL) return qv_error_set(err, QV_ENOMEM, "pickle: out of memory");
  qv_status st = QV_OK;
  for (int64_t i = 0; st == QV_OK && i < qv_table_num_batches(t); i++) {
    qv_array *b = NULL;
    st = qv_table_batch(t, i, &b, err);
    if (st != QV_OK) break;
    qv_array *col = b->n_children == 1 ? b->children[0] : NULL;
    int64_t first = col ? col->offset + b->offset : 0;
    if (col == NULL || col->type->id != QV_UINT64 || qv_array_null_count(col) != 0 ||
        col->n_buffers < 2 || col->buffers[1] == NULL ||
        (first + b->length) * 8 > col->buffers[1]->size || pos + b->length > total) {
      st = qv_error_set(err, QV_EINVAL,
                        "pickle: the indices recipe is not one uint64 column "
                        "without nulls");
    } else {
      const uint8_t *p = col->buffers[1]->data + first * 8;
      for (int64_t j = 0; st == QV_OK && j < b->length; j++) {
        uint64_t v;
        memcpy(&v, p + j * 8, 8);
        if (v >= (uint64_t)n_rows)
          st = qv_error_set(err, QV_EINVAL,
                            "pickle: index %llu (row %lld) is outside the "
                            "data's %lld rows",
                            (unsigned long long)v, (long long)(pos + j), (long long)n_rows);
        rows[pos + j] = (int64_t)v;
      }
      pos += b->length;
    }
    qv_array_unref(b);
  }
  if (st != QV_OK) {
    PyMem_RawFree(rows);
    return st;
  }
  *out = rows;
  *n = pos;
  return QV_OK;
}

PyObject *qvpy_mod_from_recipes(PyObject *mod, PyObject *args) {
  Py_buffer data, indices = {0};
  PyObject *ix_obj;
  const char *fp;
  if (!PyArg_ParseTuple(args, "y*Os:_from_recipes", &data, &ix_obj, &fp)) return NULL;
  if (ix_obj != Py_None && PyObject_GetBuffer(ix_obj, &indices, PyBUF_SIMPLE) < 0) {
    PyBuffer_Release(&data);
    return NULL;
  }
  qv_table *dt = NULL, *it = NULL;
  qv_dataset *base = NULL, *sel = NULL, *out = NULL;
  int64_t *rows = NULL, n = 0;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_table_from_recipe(data.buf, (int64_t)data.len, &dt, &err);
  if (st == QV_OK) st = qv_dataset_from_table(dt, fp, &base, &err);
  if (st == QV_OK && ix_obj != Py_None) {
    st = qv_table_from_recipe(indices.buf, (int64_t)indices.len, &it, &err);
    if (st == QV_OK) st = indices_rows(it, qv_table_num_rows(dt), &rows, &n, &err);
    qv_dataset_options o;
    memset(&o, 0, sizeof o);
    o.keep_in_memory = true;
    if (st == QV_OK) st = qv_dataset_select(base, rows, n, &o, &sel, &err);
    if (st == QV_OK) st = qv_dataset_with_fingerprint(sel, fp, &out, &err);
  } else if (st == QV_OK) {
    out = qv_dataset_ref(base);
  }
  Py_END_ALLOW_THREADS PyMem_RawFree(rows);
  qv_table_unref(dt);
  qv_table_unref(it);
  qv_dataset_unref(base);
  qv_dataset_unref(sel);
  PyBuffer_Release(&data);
  if (ix_obj != Py_None) PyBuffer_Release(&indices);
  return qvpy_result(st, out, &err);
}
