/*
 * io.c — Parquet / CSV / JSON Lines entry points of the CPython extension
 * `quiver._quiver` (python/ layer, top): the module functions
 * _read_csv (a CSV file typed as datasets' load_dataset("csv") types it,
 * through the C reader's pandas_types mode) and _write_text (a dataset's
 * rows through the C CSV / JSON Lines / Parquet writers), and the Dataset methods
 * from_parquet/from_csv/from_json/to_csv/to_json/to_parquet, which forward to
 * quiver/_io.py (the datasets argument semantics live there). Parquet and
 * JSON Lines are read by the dataset layer's one open path (quiver.open).
 */
#include <sys/stat.h>

#include "quiver/csv.h"
#include "quiver/jsonl.h"
#include "quiver/parquet_writer.h"
#include "quiver/table.h"
#include "qvpy.h"

/* A missing path raises QuiverFileNotFoundError; other failures the C
 * reader's or writer's message (file, line, column). */
static PyObject *raise_io(qv_status st, const qv_error *err, const char *path) {
  struct stat sb;
  if (path != NULL && stat(path, &sb) != 0)
    return qvpy_raise_qv_as(qvpy_FileNotFoundError, st, err);
  return qvpy_raise_qv(st, err);
}

static bool delimiter_arg(PyObject *o, char *out) {
  *out = 0;
  if (o == NULL || o == Py_None) return true;
  const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
  if (s == NULL || strlen(s) != 1) {
    if (!PyErr_Occurred() || PyUnicode_Check(o)) {
      PyErr_Clear();
      PyErr_SetString(qvpy_ValueError, "the delimiter must be a 1-character string");
    }
    return false;
  }
  *out = s[0];
  return true;
}

PyObject *qvpy_mod_read_csv(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"path", "delimiter", NULL};
  PyObject *path = NULL, *delim_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|O:_read_csv", kw, PyUnicode_FSConverter, &path,
                                   &delim_obj))
    return NULL;
  qv_csv_read_options o;
  memset(&o, 0, sizeof o);
  o.pandas_types = true; /* datasets reads CSV with pandas.read_csv */
  if (!delimiter_arg(delim_obj, &o.delimiter)) {
    Py_DECREF(path);
    return NULL;
  }
  const char *p = PyBytes_AS_STRING(path);
  qv_error err;
  qv_dataset *ds = NULL;
  qv_status st;
  /* streamed into the cached Arrow conversion and mapped (dataset.h) */
  qv_text_open_options to;
  memset(&to, 0, sizeof to);
  to.pandas_types = o.pandas_types;
  to.delimiter = o.delimiter;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_open_text(p, QV_PATH_CSV, &to, &ds, &err);
  Py_END_ALLOW_THREADS PyObject *r =
      st == QV_OK ? qvpy_result(st, ds, &err) : raise_io(st, &err, p);
  if (r != NULL) {
    /* The origin (pickle.c): ("read_csv", realpath, delimiter), so that a
     * pickle names the CSV file, not its cached conversion. */
    char *rp = realpath(p, NULL);
    char d[2] = {o.delimiter, '\0'};
    PyObject *origin = Py_BuildValue("(sO&z)", "read_csv", PyUnicode_DecodeFSDefault, rp ? rp : p,
                                     o.delimiter ? d : NULL);
    free(rp);
    if (origin == NULL) Py_CLEAR(r);
    else ((DatasetObject *)r)->origin = origin;
  }
  Py_DECREF(path);
  return r;
}

PyObject *qvpy_mod_write_text(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"dataset", "path", "kind", "delimiter", "batch_size", NULL};
  PyObject *dso = NULL, *path = NULL, *delim_obj = Py_None;
  const char *kind = NULL;
  Py_ssize_t batch_size = 10000;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O&s|On:_write_text", kw, &qvpy_DatasetType,
                                   &dso, PyUnicode_FSConverter, &path, &kind, &delim_obj,
                                   &batch_size))
    return NULL;
  bool csv = strcmp(kind, "csv") == 0, parquet = strcmp(kind, "parquet") == 0;
  qv_csv_write_options o;
  memset(&o, 0, sizeof o);
  if ((!csv && !parquet && strcmp(kind, "json") != 0) || batch_size < 1) {
    Py_DECREF(path);
    PyErr_SetString(qvpy_ValueError, "kind must be 'csv', 'json' or 'parquet' and batch_size >= 1");
    return NULL;
  }
  if (!delimiter_arg(delim_obj, &o.delimiter)) {
    Py_DECREF(path);
    return NULL;
  }
  qv_dataset *ds = ((DatasetObject *)dso)->ds;
  const char *p = PyBytes_AS_STRING(path);
  qv_error err;
  qv_status st;
  qv_csv_writer *cw = NULL;
  qv_jsonl_writer *jw = NULL;
  qv_parquet_writer *pw = NULL;
  qv_parquet_write_options po;
  memset(&po, 0, sizeof po);
  po.codec = QV_PARQUET_SNAPPY; /* pyarrow's default, which datasets' to_parquet uses */
  qv_dataset_iter *it = NULL;
  const qv_schema *schema = qv_dataset_schema(ds);
  Py_BEGIN_ALLOW_THREADS st = csv       ? qv_csv_writer_open(p, schema, &o, &cw, &err)
                              : parquet ? qv_parquet_writer_open_path(p, schema, &po, &pw, &err)
                                        : qv_jsonl_writer_open(p, &jw, &err);
  if (st == QV_OK) st = qv_dataset_iter_new(ds, batch_size, false, &it, &err);
  while (st == QV_OK) {
    qv_array *b = NULL;
    st = qv_dataset_iter_next(it, &b, NULL, &err);
    if (st != QV_OK || b == NULL) break;
    st = csv       ? qv_csv_writer_write(cw, b, &err)
         : parquet ? qv_parquet_writer_write_batch(pw, b, &err)
                   : qv_jsonl_writer_write(jw, b, &err);
    qv_array_unref(b);
  }
  qv_dataset_iter_free(it);
  if (st == QV_OK) {
    st = csv       ? qv_csv_writer_close(cw, &err)
         : parquet ? qv_parquet_writer_close(pw, &err)
                   : qv_jsonl_writer_close(jw, &err);
  } else {
    qv_csv_writer_abort(cw);
    qv_jsonl_writer_abort(jw);
    qv_parquet_writer_abort(pw);
  }
  Py_END_ALLOW_THREADS Py_DECREF(path);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  Py_RETURN_NONE;
}

/* quiver._io.<fn>(*prefix, *args, **kwargs): prefix is self, or nothing
 * for the class methods. */
static PyObject *call_io(const char *fn, PyObject *self, PyObject *args, PyObject *kwargs) {
  static PyObject *mod; /* quiver._io, imported once, kept for the process */
  if (mod == NULL && (mod = PyImport_ImportModule("quiver._io")) == NULL) return NULL;
  PyObject *f = PyObject_GetAttrString(mod, fn);
  if (f == NULL) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(args), k = self != NULL;
  PyObject *a = PyTuple_New(n + k);
  PyObject *r = NULL;
  if (a != NULL) {
    if (self != NULL) PyTuple_SET_ITEM(a, 0, Py_NewRef(self));
    for (Py_ssize_t i = 0; i < n; i++)
      PyTuple_SET_ITEM(a, i + k, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    r = PyObject_Call(f, a, kwargs);
    Py_DECREF(a);
  }
  Py_DECREF(f);
  return r;
}

PyObject *qvpy_Dataset_to_csv(PyObject *self, PyObject *args, PyObject *kwargs) {
  return call_io("to_csv", self, args, kwargs);
}
PyObject *qvpy_Dataset_to_json(PyObject *self, PyObject *args, PyObject *kwargs) {
  return call_io("to_json", self, args, kwargs);
}
PyObject *qvpy_Dataset_from_parquet(PyObject *cls, PyObject *args, PyObject *kwargs) {
  return call_io("from_parquet", NULL, args, kwargs);
}
PyObject *qvpy_Dataset_from_csv(PyObject *cls, PyObject *args, PyObject *kwargs) {
  return call_io("from_csv", NULL, args, kwargs);
}
PyObject *qvpy_Dataset_from_json(PyObject *cls, PyObject *args, PyObject *kwargs) {
  return call_io("from_json", NULL, args, kwargs);
}

PyObject *qvpy_mod_sniff(PyObject *mod, PyObject *arg) {
  PyObject *path = NULL;
  if (!PyUnicode_FSConverter(arg, &path)) return NULL;
  const char *p = PyBytes_AS_STRING(path);
  qv_path_kind kind;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_path_sniff(p, &kind, &err);
  Py_END_ALLOW_THREADS PyObject *r =
      st == QV_OK ? PyUnicode_FromString(qv_path_kind_name(kind)) : raise_io(st, &err, p);
  Py_DECREF(path);
  return r;
}
PyObject *qvpy_Dataset_to_parquet(PyObject *self, PyObject *args, PyObject *kwargs) {
  return call_io("to_parquet", self, args, kwargs);
}
