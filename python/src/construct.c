/*
 * construct.c — Dataset constructors and column methods of the CPython
 * extension (python/ layer, over the dataset layer): in-memory datasets
 * from Python columns (converted in C, convert.c) or from any object with
 * __arrow_c_stream__ (imported zero copy through the C Stream Interface);
 * cast, cast_column, add_column and unique as the dataset layer has them;
 * and the call into quiver._api, the Python glue of the datasets methods
 * built on these (from_dict, to_pandas, class_encode_column...).
 */
#include "qvpy.h"

/* A dataset over `n` STRUCT batches of `schema` (references borrowed). */
static PyObject *dataset_of_batches(qv_schema *schema, qv_array *const *batches, int64_t n,
                                    const char *fingerprint) {
  qv_error err;
  qv_table *t = NULL;
  qv_dataset *ds = NULL;
  qv_status st = qv_table_from_batches(schema, batches, n, &t, &err);
  if (st == QV_OK) st = qv_dataset_from_table(t, fingerprint, &ds, &err);
  qv_table_unref(t);
  return qvpy_result(st, ds, &err);
}

static bool arg_fingerprint(PyObject *o, const char **out) {
  *out = NULL;
  if (o == NULL || o == Py_None) return true;
  if (!PyUnicode_Check(o)) {
    PyErr_Format(qvpy_TypeError, "fingerprint must be a str or None, not %.100s",
                 Py_TYPE(o)->tp_name);
    return false;
  }
  *out = PyUnicode_AsUTF8(o);
  return *out != NULL;
}

/* _quiver._from_columns(mapping, fingerprint=None): a dict {column: list
 * of values or Arrow array} as an in-memory Dataset (values converted in C
 * with pyarrow's inference, convert.c). */
PyObject *qvpy_mod_from_columns(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *mapping, *fp_obj = Py_None;
  if (!PyArg_ParseTuple(args, "O!|O:_from_columns", &PyDict_Type, &mapping, &fp_obj)) return NULL;
  const char *fp;
  if (!arg_fingerprint(fp_obj, &fp)) return NULL;
  qv_array *batch = NULL;
  if (!qvpy_result_struct(mapping, "from_dict", 0, &batch)) return NULL;
  qv_schema *schema = qv_schema_new(qv_type_ref(batch->type));
  PyObject *r = schema ? dataset_of_batches(schema, &batch, 1, fp) : PyErr_NoMemory();
  qv_schema_unref(schema);
  qv_array_unref(batch);
  return r;
}

/* _quiver._from_stream(obj, fingerprint=None): the batches of
 * obj.__arrow_c_stream__() as an in-memory Dataset (zero copy: the
 * buffers stay the producer's, released with the last batch). */
PyObject *qvpy_mod_from_stream(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *obj, *fp_obj = Py_None;
  if (!PyArg_ParseTuple(args, "O|O:_from_stream", &obj, &fp_obj)) return NULL;
  const char *fp;
  if (!arg_fingerprint(fp_obj, &fp)) return NULL;
  if (!PyObject_HasAttrString(obj, "__arrow_c_stream__")) {
    PyErr_Format(qvpy_TypeError,
                 "from_arrow: expected an object with __arrow_c_stream__ (a pyarrow Table or "
                 "RecordBatchReader, a polars DataFrame...), not %.100s",
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  PyObject *cap = PyObject_CallMethod(obj, "__arrow_c_stream__", NULL);
  if (cap == NULL) return NULL;
  struct ArrowArrayStream *stream = PyCapsule_GetPointer(cap, "arrow_array_stream");
  if (stream == NULL || stream->release == NULL) {
    Py_DECREF(cap);
    if (!PyErr_Occurred())
      PyErr_SetString(qvpy_ValueError, "from_arrow: the stream capsule was already consumed");
    return NULL;
  }
  qv_error err;
  qv_schema *schema = NULL;
  qv_array **batches = NULL;
  int64_t n = 0;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_import_stream(stream, &schema, &batches, &n, &err);
  Py_END_ALLOW_THREADS Py_DECREF(cap);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *r = dataset_of_batches(schema, batches, n, fp);
  for (int64_t i = 0; i < n; i++) qv_array_unref(batches[i]);
  free(batches);
  qv_schema_unref(schema);
  return r;
}

/* Features as datasets' JSON (a str) parsed into a qv_hf_feature. */
static bool parse_feature(PyObject *json, qv_hf_feature **out) {
  Py_ssize_t len;
  const char *s = PyUnicode_AsUTF8AndSize(json, &len);
  if (s == NULL) return false;
  qv_error err;
  qv_status st = qv_hf_features_parse(s, (int64_t)len, out, &err);
  if (st != QV_OK) return qvpy_raise_qv_as(qvpy_ValueError, st, &err) != NULL;
  return true;
}

/* Dataset._cast(features_json): qv_dataset_cast. */
PyObject *qvpy_Dataset_cast(DatasetObject *self, PyObject *json) {
  qv_hf_feature *f = NULL;
  if (!parse_feature(json, &f)) return NULL;
  qv_error err;
  qv_dataset *out = NULL;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_cast(self->ds, f, &out, &err);
  Py_END_ALLOW_THREADS qv_hf_feature_free(f);
  return qvpy_result(st, out, &err);
}

/* Dataset._cast_column(column, features_json): qv_dataset_cast_column to the
 * feature of `column` in the features {column: feature}. */
PyObject *qvpy_Dataset_cast_column(DatasetObject *self, PyObject *args) {
  const char *col;
  PyObject *json;
  if (!PyArg_ParseTuple(args, "sU:_cast_column", &col, &json)) return NULL;
  qv_hf_feature *f = NULL;
  if (!parse_feature(json, &f)) return NULL;
  qv_error err;
  qv_dataset *out = NULL;
  qv_status st;
  const qv_hf_feature *one = qv_hf_feature_get(f, col);
  if (one == NULL) {
    qv_hf_feature_free(f);
    PyErr_Format(qvpy_ValueError, "_cast_column: no feature for '%s'", col);
    return NULL;
  }
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_cast_column(self->ds, col, one, &out, &err);
  Py_END_ALLOW_THREADS qv_hf_feature_free(f);
  return qvpy_result(st, out, &err);
}

/* Dataset._add_column(name, values, features_json=None): values a list or
 * an Arrow array (convert.c), qv_dataset_add_column (with the feature of
 * `name` in the features {name: feature} when given). */
PyObject *qvpy_Dataset_add_column(DatasetObject *self, PyObject *args) {
  PyObject *name, *values, *json = Py_None;
  if (!PyArg_ParseTuple(args, "UO|O:_add_column", &name, &values, &json)) return NULL;
  qv_hf_feature *f = NULL;
  if (json != Py_None && !parse_feature(json, &f)) return NULL;
  PyObject *d = PyDict_New();
  qv_array *batch = NULL;
  bool ok = d != NULL && PyDict_SetItem(d, name, values) == 0 &&
            qvpy_result_struct(d, "add_column", 0, &batch);
  Py_XDECREF(d);
  if (!ok) {
    qv_hf_feature_free(f);
    return NULL;
  }
  qv_error err;
  qv_dataset *out = NULL;
  qv_status st = QV_OK;
  qv_dataset_options o = qvpy_options(0);
  const char *cname = PyUnicode_AsUTF8(name);
  if (batch->length != qv_dataset_num_rows(self->ds)) {
    PyErr_Format(qvpy_ValueError,
                 "add_column: the column '%U' has %lld values, the dataset %lld rows", name,
                 (long long)batch->length, (long long)qv_dataset_num_rows(self->ds));
  } else if (cname != NULL) {
    qv_array *col = batch->children[0];
    const qv_hf_feature *one = f ? qv_hf_feature_get(f, cname) : NULL;
    Py_BEGIN_ALLOW_THREADS st =
        qv_dataset_add_column(self->ds, cname, &col, 1, one, &o, &out, &err);
    Py_END_ALLOW_THREADS
  }
  qv_array_unref(batch);
  qv_hf_feature_free(f);
  if (PyErr_Occurred()) return NULL;
  return qvpy_result(st, out, &err);
}

/* Dataset.unique(column): the distinct values in order of first appearance
 * as Python values (qv_dataset_unique). */
PyObject *qvpy_Dataset_unique(DatasetObject *self, PyObject *column) {
  const char *col = PyUnicode_Check(column) ? PyUnicode_AsUTF8(column) : NULL;
  if (col == NULL) {
    if (!PyErr_Occurred())
      PyErr_Format(qvpy_TypeError, "unique: column must be a str, not %.100s",
                   Py_TYPE(column)->tp_name);
    return NULL;
  }
  if (qv_dataset_column_index(self->ds, col) < 0) {
    PyErr_Format(qvpy_ValueError, "Column (%s) not in table columns (%R).", col, column);
    return NULL;
  }
  qv_error err;
  qv_array *a = NULL;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_unique(self->ds, col, &a, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *r = qvpy_mapped_bytes_there(a) ? PyList_New(a->length) : NULL;
  for (int64_t i = 0; r != NULL && i < a->length; i++) {
    PyObject *v = qvpy_value_of(a, i, 0);
    if (v == NULL) Py_CLEAR(r);
    else PyList_SET_ITEM(r, i, v);
  }
  qv_array_unref(a);
  return r;
}

PyObject *qvpy_call_api(const char *fn, PyObject *self, PyObject *args, PyObject *kwargs) {
  static PyObject *mod; /* quiver._api, imported once, kept for the process */
  if (mod == NULL && (mod = PyImport_ImportModule("quiver._api")) == NULL) return NULL;
  PyObject *f = PyObject_GetAttrString(mod, fn);
  if (f == NULL) return NULL;
  Py_ssize_t n = args ? PyTuple_GET_SIZE(args) : 0;
  Py_ssize_t k = self ? 1 : 0;
  PyObject *a = PyTuple_New(n + k);
  PyObject *r = NULL;
  if (a != NULL) {
    if (self) PyTuple_SET_ITEM(a, 0, Py_NewRef(self));
    for (Py_ssize_t i = 0; i < n; i++)
      PyTuple_SET_ITEM(a, i + k, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    r = PyObject_Call(f, a, kwargs);
    Py_DECREF(a);
  }
  Py_DECREF(f);
  return r;
}
