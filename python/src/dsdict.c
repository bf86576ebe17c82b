/*
 * dsdict.c — DatasetDict support for the CPython extension `quiver._quiver`
 * (python/ layer): the module functions _dataset_dict_save_to_disk
 * (qv_dataset_dict_save_to_disk) and _dataset_dict_splits
 * (qv_dataset_dict_splits) behind python/quiver/dataset_dict.py, and
 * qvpy_call_python, which hands C results to the package's Python classes
 * (quiver.features.Features, quiver.dataset_dict.DatasetDict).
 */
#include "qvpy.h"

PyObject *qvpy_call_python(const char *module, const char *attr, PyObject *arg) {
  PyObject *r = NULL;
  PyObject *mod = PyImport_ImportModule(module);
  if (mod != NULL) {
    r = PyObject_CallMethod(mod, attr, "O", arg);
    Py_DECREF(mod);
  }
  Py_DECREF(arg);
  return r;
}

PyObject *qvpy_mod_dataset_dict_save(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"datasets",       "names",      "dataset_dict_path",
                       "max_shard_size", "num_shards", NULL};
  PyObject *dsl, *namel, *path = NULL, *size_obj = Py_None, *shards_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO&|OO:_dataset_dict_save_to_disk", kw, &dsl,
                                   &namel, PyUnicode_FSConverter, &path, &size_obj, &shards_obj))
    return NULL;
  PyObject *r = NULL, *dseq = NULL, *nseq = NULL;
  qv_dataset **ds = NULL;
  const char **names = NULL;
  qv_save_options so;
  if (!qvpy_save_options(size_obj, shards_obj, &so)) goto done;
  dseq = PySequence_Fast(dsl, "datasets must be a list of quiver.Dataset");
  nseq = dseq ? PySequence_Fast(namel, "names must be a list of str") : NULL;
  if (nseq == NULL) goto done;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(dseq);
  if (PySequence_Fast_GET_SIZE(nseq) != n) {
    PyErr_Format(qvpy_ValueError, "%zd datasets but %zd names", n, PySequence_Fast_GET_SIZE(nseq));
    goto done;
  }
  ds = PyMem_Calloc((size_t)n + 1, sizeof *ds);
  names = PyMem_Calloc((size_t)n + 1, sizeof *names);
  if (ds == NULL || names == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *d = PySequence_Fast_GET_ITEM(dseq, i), *s = PySequence_Fast_GET_ITEM(nseq, i);
    if (!PyObject_TypeCheck(d, &qvpy_DatasetType)) {
      PyErr_Format(qvpy_TypeError, "split %zd is a %.100s, not a quiver.Dataset", i,
                   Py_TYPE(d)->tp_name);
      goto done;
    }
    if (!PyUnicode_Check(s) || (names[i] = PyUnicode_AsUTF8(s)) == NULL) {
      if (!PyErr_Occurred())
        PyErr_Format(qvpy_TypeError, "split name %zd is a %.100s, not a str", i,
                     Py_TYPE(s)->tp_name);
      goto done;
    }
    ds[i] = ((DatasetObject *)d)->ds;
  }
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st =
      qv_dataset_dict_save_to_disk(ds, names, (int64_t)n, PyBytes_AS_STRING(path), &so, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) qvpy_raise_qv(st, &err);
  else r = Py_NewRef(Py_None);
done:
  PyMem_Free(ds);
  PyMem_Free(names);
  Py_XDECREF(dseq);
  Py_XDECREF(nseq);
  Py_DECREF(path);
  return r;
}

PyObject *qvpy_mod_dataset_dict_splits(PyObject *mod, PyObject *arg) {
  PyObject *path = NULL;
  if (!PyUnicode_FSConverter(arg, &path)) return NULL;
  char **names = NULL;
  int64_t n = 0;
  qv_error err;
  qv_status st = qv_dataset_dict_splits(PyBytes_AS_STRING(path), &names, &n, &err);
  Py_DECREF(path);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *list = PyList_New((Py_ssize_t)n);
  for (int64_t i = 0; list != NULL && i < n; i++) {
    PyObject *s = PyUnicode_FromString(names[i]);
    if (s == NULL) Py_CLEAR(list);
    else PyList_SET_ITEM(list, (Py_ssize_t)i, s);
  }
  qv_table_free_paths(names, n);
  return list;
}
