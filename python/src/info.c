/*
 * info.c — the dataset's info (dataset_info.json) for quiver.Dataset.info
 * (python/quiver/info.py builds datasets' DatasetInfo from it) and the
 * module function behind quiver.distributed's writer: a save_to_disk
 * directory assembled from Arrow shards written by worker processes
 * (qv_dataset_assemble_save). CPython extension (python/ layer).
 */
#include "quiver/writer.h"
#include "qvpy.h"

/* Dataset._info_json(): qv_dataset_info_json as a str. */
PyObject *qvpy_dataset_info_json(PyObject *self, PyObject *unused) {
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_error err;
  qv_status st = qv_dataset_info_json(((DatasetObject *)self)->ds, &sb, &err);
  PyObject *r = st == QV_OK ? PyUnicode_FromStringAndSize(qv_strbuf_cstr(&sb), (Py_ssize_t)sb.len)
                            : qvpy_raise_qv(st, &err);
  qv_strbuf_reset(&sb);
  return r;
}

/* Dataset._with_info(json): qv_dataset_with_info; the new object keeps
 * the format state and origin of self. */
PyObject *qvpy_dataset_with_info(PyObject *self, PyObject *arg) {
  Py_ssize_t len = 0;
  const char *text = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &len) : NULL;
  if (text == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(qvpy_TypeError, "_with_info takes a JSON str");
    return NULL;
  }
  DatasetObject *o = (DatasetObject *)self;
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st = qv_dataset_with_info(o->ds, text, (int64_t)len, &out, &err);
  PyObject *r = qvpy_result(st, out, &err);
  if (r != NULL) {
    ((DatasetObject *)r)->origin = Py_XNewRef(o->origin);
    ((DatasetObject *)r)->format = Py_XNewRef(o->format);
  }
  return r;
}

/* _assemble_save(dataset_path, shards, features_json=None, fingerprint=None,
 * split=None): qv_dataset_assemble_save (GIL released). */
PyObject *qvpy_mod_assemble_save(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"dataset_path", "shards", "features_json", "fingerprint", "split", NULL};
  PyObject *path = NULL, *list;
  const char *features = NULL, *fp = NULL, *split = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O|zzz:_assemble_save", kw,
                                   PyUnicode_FSConverter, &path, &list, &features, &fp, &split))
    return NULL;
  PyObject *seq = PySequence_Fast(list, "shards must be a list of paths");
  PyObject *r = NULL, *held = NULL;
  const char **shards = NULL;
  if (seq == NULL) goto done;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  held = PyList_New(n);
  shards = PyMem_Calloc((size_t)n + 1, sizeof *shards);
  if (held == NULL || shards == NULL) {
    if (!PyErr_Occurred()) PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &b)) goto done;
    PyList_SET_ITEM(held, i, b);
    shards[i] = PyBytes_AS_STRING(b);
  }
  qv_assemble_options o = {.features_json = features, .fingerprint = fp, .split = split};
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st =
      qv_dataset_assemble_save(PyBytes_AS_STRING(path), shards, (int64_t)n, &o, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) qvpy_raise_qv(st, &err);
  else r = Py_NewRef(Py_None);
done:
  PyMem_Free(shards);
  Py_XDECREF(held);
  Py_XDECREF(seq);
  Py_DECREF(path);
  return r;
}

/* _write_arrow_stream(data, path): every record batch of an object with
 * __arrow_c_stream__ written to `path` as an Arrow IPC stream, atomically
 * (qv_write_arrow_stream_path; GIL released, taken again by a Python
 * producer). Returns the rows written. */
PyObject *qvpy_mod_write_arrow_stream(PyObject *mod, PyObject *args) {
  PyObject *obj, *path = NULL;
  if (!PyArg_ParseTuple(args, "OO&:_write_arrow_stream", &obj, PyUnicode_FSConverter, &path))
    return NULL;
  PyObject *cap = PyObject_HasAttrString(obj, "__arrow_c_stream__")
                      ? PyObject_CallMethod(obj, "__arrow_c_stream__", NULL)
                      : NULL;
  struct ArrowArrayStream *stream = cap ? PyCapsule_GetPointer(cap, "arrow_array_stream") : NULL;
  if (stream == NULL || stream->release == NULL) {
    if (!PyErr_Occurred())
      PyErr_Format(qvpy_TypeError,
                   "_write_arrow_stream: expected an unconsumed __arrow_c_stream__, not %.100s",
                   Py_TYPE(obj)->tp_name);
    Py_XDECREF(cap);
    Py_DECREF(path);
    return NULL;
  }
  qv_write_options o;
  memset(&o, 0, sizeof o);
  o.format = QV_FORMAT_STREAM;
  qv_error err;
  int64_t rows = 0;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st =
      qv_write_arrow_stream_path(stream, PyBytes_AS_STRING(path), &o, &rows, &err);
  Py_END_ALLOW_THREADS Py_DECREF(cap);
  Py_DECREF(path);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  return PyLong_FromLongLong(rows);
}
