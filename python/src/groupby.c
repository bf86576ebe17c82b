/*
 * groupby.c — `Dataset.group_by(keys, sort=False, memory_limit=None)` and
 * the `quiver.GroupBy` it returns, whose `agg(*exprs, **named)` runs the
 * hash group-by of the library (qv_dataset_group_by) and returns a new
 * quiver.Dataset: the keys, then each aggregate. Positional aggregates are
 * "EXPR [AS NAME]" strings (docs/compute.md), named ones name=EXPR. Python
 * layer (the extension), on the public dataset API.
 */
#include "qvpy.h"

typedef struct {
  PyObject_HEAD PyObject *ds; /* the quiver.Dataset (reference) */
  PyObject *keys;             /* list of str */
  int sort;
  int64_t memory_limit;
} GroupByObject;

static void GroupBy_dealloc(GroupByObject *self) {
  Py_XDECREF(self->ds);
  Py_XDECREF(self->keys);
  PyObject_Free(self);
}

/* The aggregate texts of agg(*args, **kwargs) as a new list of str. */
static PyObject *agg_texts(PyObject *args, PyObject *kwargs) {
  PyObject *list = PyList_New(0);
  if (!list) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *a = PyTuple_GET_ITEM(args, i);
    if (PyUnicode_Check(a)) {
      if (PyList_Append(list, a) < 0) goto fail;
    } else if (PyList_Check(a) || PyTuple_Check(a)) {
      for (Py_ssize_t j = 0; j < PySequence_Size(a); j++) {
        PyObject *s = PySequence_GetItem(a, j);
        if (!s) goto fail;
        int bad = !PyUnicode_Check(s);
        if (!bad && PyList_Append(list, s) < 0) bad = 2;
        if (bad == 1)
          PyErr_Format(qvpy_TypeError, "agg: aggregates are strings, found %.100s",
                       Py_TYPE(s)->tp_name);
        Py_DECREF(s);
        if (bad) goto fail;
      }
    } else {
      PyErr_Format(qvpy_TypeError,
                   "agg: an aggregate is a string such as 'sum(v1)' or 'max(v1) - min(v2) AS r', "
                   "found %.100s",
                   Py_TYPE(a)->tp_name);
      goto fail;
    }
  }
  if (kwargs) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &k, &v)) {
      if (!PyUnicode_Check(v)) {
        PyErr_Format(qvpy_TypeError, "agg: %U= must be an expression string, found %.100s", k,
                     Py_TYPE(v)->tp_name);
        goto fail;
      }
      /* name it with a backquoted name (backquotes doubled) */
      PyObject *one = PyUnicode_FromString("`"), *two = PyUnicode_FromString("``");
      PyObject *q = one && two ? PyUnicode_Replace(k, one, two, -1) : NULL;
      Py_XDECREF(one);
      Py_XDECREF(two);
      if (!q) goto fail;
      PyObject *s = PyUnicode_FromFormat("%U AS `%U`", v, q);
      Py_DECREF(q);
      if (!s) goto fail;
      int r = PyList_Append(list, s);
      Py_DECREF(s);
      if (r < 0) goto fail;
    }
  }
  return list;
fail:
  Py_DECREF(list);
  return NULL;
}

static PyObject *GroupBy_agg(GroupByObject *self, PyObject *args, PyObject *kwargs) {
  PyObject *texts = agg_texts(args, kwargs);
  if (!texts) return NULL;
  Py_ssize_t na = PyList_GET_SIZE(texts), nk = PyList_GET_SIZE(self->keys);
  const char **aggs = PyMem_Calloc((size_t)(na + 1), sizeof *aggs);
  const char **keys = PyMem_Calloc((size_t)(nk + 1), sizeof *keys);
  PyObject *result = NULL;
  if (!aggs || !keys) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < na; i++)
    if (!(aggs[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(texts, i)))) goto done;
  for (Py_ssize_t i = 0; i < nk; i++)
    if (!(keys[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(self->keys, i)))) goto done;
  qv_group_by_options o;
  memset(&o, 0, sizeof o);
  o.sort = self->sort;
  o.memory_limit = self->memory_limit;
  qv_error err;
  err.message[0] = '\0';
  qv_dataset *out = NULL;
  qv_status st;
  qv_dataset *ds = ((DatasetObject *)self->ds)->ds;
  Py_BEGIN_ALLOW_THREADS st =
      qv_dataset_group_by(ds, keys, (int32_t)nk, aggs, (int32_t)na, &o, &out, &err);
  Py_END_ALLOW_THREADS result = qvpy_result(st, out, &err);
done:
  PyMem_Free(aggs);
  PyMem_Free(keys);
  Py_DECREF(texts);
  return result;
}

static PyObject *GroupBy_repr(GroupByObject *self) {
  return PyUnicode_FromFormat("GroupBy(keys=%R, sort=%s)", self->keys,
                              self->sort ? "True" : "False");
}

static PyMethodDef GroupBy_methods[] = {
    {"agg", (PyCFunction)(void (*)(void))GroupBy_agg, METH_VARARGS | METH_KEYWORDS,
     "agg($self, /, *exprs, **named)\n--\n\nThe group-by's result as a new Dataset: the keys, "
     "then each aggregate expression ('sum(v1)', 'max(v1) - min(v2) AS r', or name='expr')."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject GroupByType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver.GroupBy",
    .tp_basicsize = sizeof(GroupByObject),
    .tp_dealloc = (destructor)GroupBy_dealloc,
    .tp_repr = (reprfunc)GroupBy_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Dataset.group_by(...)'s pending group-by; call .agg(...) to run it.",
    .tp_methods = GroupBy_methods,
};

PyObject *qvpy_Dataset_group_by(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"keys", "sort", "memory_limit", NULL};
  PyObject *keys_obj = NULL, *limit_obj = Py_None;
  int sort = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$pO:group_by", kw, &keys_obj, &sort,
                                   &limit_obj))
    return NULL;
  if (!(GroupByType.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&GroupByType) < 0) return NULL;
  PyObject *keys = PyList_New(0);
  if (!keys) return NULL;
  if (keys_obj && keys_obj != Py_None) {
    if (PyUnicode_Check(keys_obj)) {
      if (PyList_Append(keys, keys_obj) < 0) goto fail;
    } else {
      PyObject *it = PyObject_GetIter(keys_obj);
      if (!it) goto fail;
      PyObject *k;
      while ((k = PyIter_Next(it))) {
        int bad = !PyUnicode_Check(k);
        if (bad)
          PyErr_Format(qvpy_TypeError, "group_by: keys are column names, found %.100s",
                       Py_TYPE(k)->tp_name);
        else if (PyList_Append(keys, k) < 0) bad = 1;
        Py_DECREF(k);
        if (bad) {
          Py_DECREF(it);
          goto fail;
        }
      }
      Py_DECREF(it);
      if (PyErr_Occurred()) goto fail;
    }
  }
  int64_t limit = 0;
  if (limit_obj != Py_None) {
    if (PyUnicode_Check(limit_obj)) {
      qv_error err;
      const char *s = PyUnicode_AsUTF8(limit_obj);
      if (!s) goto fail;
      if (qv_hf_parse_size(s, &limit, &err) != QV_OK) {
        PyErr_Format(qvpy_ValueError, "group_by: memory_limit: %s", err.message);
        goto fail;
      }
    } else if (!qvpy_arg_int64(limit_obj, "memory_limit", &limit)) {
      goto fail;
    }
  }
  GroupByObject *g = PyObject_New(GroupByObject, &GroupByType);
  if (!g) goto fail;
  Py_INCREF(self);
  g->ds = (PyObject *)self;
  g->keys = keys;
  g->sort = sort;
  g->memory_limit = limit;
  return (PyObject *)g;
fail:
  Py_DECREF(keys);
  return NULL;
}
