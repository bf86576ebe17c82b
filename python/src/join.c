/*
 * join.c — quiver.Dataset.join / distinct / value_counts of the CPython
 * extension (python/ layer, over the dataset layer's qv_dataset_join,
 * qv_dataset_distinct and qv_dataset_value_counts). The results are quiver
 * Datasets (in memory), exportable through the Arrow PyCapsule interface
 * like any other. (Dataset.unique, a list as in datasets, is construct.c's.)
 */
#include "qvpy.h"

#include "quiver/compute.h"

/* Column names argument or None (-> n = 0). */
static bool names_or_none(PyObject *o, const char *what, PyObject **keep, const char ***out,
                          int32_t *n) {
  *keep = NULL;
  *out = NULL;
  *n = 0;
  if (o == NULL || o == Py_None) return true;
  return qvpy_arg_names(o, what, keep, out, n);
}

PyObject *qvpy_Dataset_join(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"other",    "on",       "how",          "left_on",
                       "right_on", "suffixes", "memory_limit", NULL};
  PyObject *other, *on = Py_None, *lon = Py_None, *ron = Py_None, *suffixes = Py_None;
  PyObject *limit_obj = Py_None;
  const char *how = "inner";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|Os$OOOO:join", kw, &qvpy_DatasetType, &other,
                                   &on, &how, &lon, &ron, &suffixes, &limit_obj))
    return NULL;
  qv_join_options o;
  memset(&o, 0, sizeof o);
  if (limit_obj != Py_None) { /* bytes, or a size such as "4GB" */
    if (PyUnicode_Check(limit_obj)) {
      qv_error perr;
      const char *s = PyUnicode_AsUTF8(limit_obj);
      if (!s) return NULL;
      if (qv_hf_parse_size(s, &o.memory_limit, &perr) != QV_OK)
        return PyErr_Format(qvpy_ValueError, "join: memory_limit: %s", perr.message);
    } else if (!qvpy_arg_int64(limit_obj, "memory_limit", &o.memory_limit)) {
      return NULL;
    }
    if (o.memory_limit <= 0)
      return PyErr_Format(qvpy_ValueError, "join: memory_limit must be positive");
  }
  if (!qv_join_type_parse(how, &o.how))
    return PyErr_Format(qvpy_ValueError,
                        "how must be 'inner', 'left', 'right', 'full', 'outer', 'semi' or "
                        "'anti', found '%s'",
                        how);
  if ((on == Py_None) == (lon == Py_None && ron == Py_None) ||
      (on == Py_None && (lon == Py_None || ron == Py_None)))
    return PyErr_Format(qvpy_ValueError, "give on=, or both left_on= and right_on=");
  if (suffixes != Py_None) {
    if (!PyTuple_Check(suffixes) && !PyList_Check(suffixes))
      return PyErr_Format(qvpy_TypeError, "suffixes must be a pair of str");
    PyObject *seq = PySequence_Fast(suffixes, "suffixes");
    if (!seq) return NULL;
    bool ok = PySequence_Fast_GET_SIZE(seq) == 2 &&
              PyUnicode_Check(PySequence_Fast_GET_ITEM(seq, 0)) &&
              PyUnicode_Check(PySequence_Fast_GET_ITEM(seq, 1));
    if (ok) {
      o.left_suffix = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, 0));
      o.right_suffix = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, 1));
    }
    Py_DECREF(seq); /* the str items stay alive in `suffixes` */
    if (!ok) return PyErr_Format(qvpy_TypeError, "suffixes must be a pair of str");
    if (!o.left_suffix || !o.right_suffix) return NULL;
  }
  PyObject *k1 = NULL, *k2 = NULL, *r = NULL;
  const char **l = NULL, **rr = NULL;
  int32_t nl = 0, nr = 0;
  if (on != Py_None) {
    if (!names_or_none(on, "on", &k1, &l, &nl)) return NULL;
  } else if (!names_or_none(lon, "left_on", &k1, &l, &nl) ||
             !names_or_none(ron, "right_on", &k2, &rr, &nr)) {
    goto done;
  }
  if (rr && nl != nr) {
    PyErr_Format(qvpy_ValueError, "left_on names %d columns but right_on %d", nl, nr);
    goto done;
  }
  if (nl == 0) {
    PyErr_Format(qvpy_ValueError, "at least one key column is needed");
    goto done;
  }
  o.left_on = l;
  o.right_on = rr;
  o.n_keys = nl;
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  qv_dataset *right = ((DatasetObject *)other)->ds;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_join(self->ds, right, &o, &out, &err);
  Py_END_ALLOW_THREADS r = qvpy_result(st, out, &err);
done:
  PyMem_Free(l);
  PyMem_Free(rr);
  Py_XDECREF(k1);
  Py_XDECREF(k2);
  return r;
}

PyObject *qvpy_Dataset_distinct(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"column_names", NULL};
  PyObject *cols = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:distinct", kw, &cols)) return NULL;
  PyObject *keep = NULL;
  const char **names = NULL;
  int32_t n = 0;
  if (!names_or_none(cols, "column_names", &keep, &names, &n)) return NULL;
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_distinct(self->ds, names, n, &out, &err);
  Py_END_ALLOW_THREADS PyObject *r = qvpy_result(st, out, &err);
  PyMem_Free(names);
  Py_XDECREF(keep);
  return r;
}

PyObject *qvpy_Dataset_value_counts(DatasetObject *self, PyObject *arg) {
  if (!PyUnicode_Check(arg)) return PyErr_Format(qvpy_TypeError, "column must be a str");
  const char *col = PyUnicode_AsUTF8(arg);
  if (!col) return NULL;
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_value_counts(self->ds, col, &out, &err);
  Py_END_ALLOW_THREADS return qvpy_result(st, out, &err);
}
