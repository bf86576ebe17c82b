/*
 * quivermodule.c — the CPython extension `quiver._quiver` (python/ layer, at
 * the top beside the CLI): the module itself — its functions (open,
 * concatenate_datasets, version), module init, quiver.QuiverError and the
 * C-status-to-exception mapping, and the argument helpers the Dataset
 * methods share. The rest of the extension, by seam (python/src/qvpy.h):
 *   values.c     Arrow values -> Python objects (rows as pyarrow's as_py())
 *   batch.c      Arrow PyCapsules and quiver.Batch
 *   dataset.c    the quiver.Dataset type and its iterators
 *   convert.c    Python values -> Arrow arrays (what map functions return)
 *   mapfilter.c  Python callables as the dataset layer's map / filter functions
 * No dataset logic lives here: it parses and checks Python arguments, calls
 * the dataset layer (with the GIL released around the long calls) and turns
 * its results into Python objects.
 *
 * Ownership: a Dataset object holds one qv_dataset reference, which keeps
 * its tables and so its file mappings alive. Exported C structs and Batch
 * objects hold references on the arrays and buffers they use (and thus on
 * the mappings), never on Python objects, so they stay valid after the
 * Dataset is gone and may be released from any thread.
 */
#include "qvpy.h"

#include <sys/stat.h>

PyObject *qvpy_QuiverError; /* quiver.QuiverError */
PyObject *qvpy_ValueError;  /* quiver.QuiverValueError(QuiverError, ValueError) */
PyObject *qvpy_IndexError;  /* quiver.QuiverIndexError(QuiverError, IndexError) */
PyObject *qvpy_KeyError;    /* quiver.QuiverKeyError(QuiverError, KeyError, ValueError) */
PyObject *qvpy_TypeError;   /* quiver.QuiverTypeError(QuiverError, TypeError) */
PyObject
    *qvpy_FileNotFoundError; /* quiver.QuiverFileNotFoundError(QuiverError, FileNotFoundError) */
PyObject *qvpy_json_loads;   /* json.loads */
PyObject *qvpy_decimal_cls;  /* decimal.Decimal */

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

PyObject *qvpy_raise_qv(qv_status st, const qv_error *err) {
  /* The Python class datasets raises for the same kind of misuse: bad
   * arguments (unknown columns, bad sizes, ...) are ValueErrors there. */
  PyObject *cls = st == QV_EARG     ? qvpy_ValueError
                  : st == QV_ERANGE ? qvpy_IndexError
                  : st == QV_ETYPE  ? qvpy_TypeError
                                    : qvpy_QuiverError;
  return qvpy_raise_qv_as(cls, st, err);
}

PyObject *qvpy_raise_qv_as(PyObject *cls, qv_status st, const qv_error *err) {
  const char *msg = err->message[0] ? err->message : qv_status_name(st);
  PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
  if (text == NULL) return NULL;
  PyObject *exc = PyObject_CallOneArg(cls, text);
  Py_DECREF(text);
  if (exc == NULL) return NULL;
  PyObject *name = PyUnicode_FromString(qv_status_name(st));
  PyObject *code = PyLong_FromLong((long)st);
  if (name != NULL && code != NULL && PyObject_SetAttrString(exc, "status", name) == 0 &&
      PyObject_SetAttrString(exc, "code", code) == 0)
    PyErr_SetObject(cls, exc);
  Py_XDECREF(name);
  Py_XDECREF(code);
  Py_DECREF(exc);
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Argument helpers                                                          */

/* A Python int (not bool) as int64 into *out; `what` names it in errors. */
bool qvpy_arg_int64(PyObject *o, const char *what, int64_t *out) {
  if (PyBool_Check(o) || !PyIndex_Check(o)) {
    PyErr_Format(qvpy_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(o)->tp_name);
    return false;
  }
  PyObject *i = PyNumber_Index(o);
  if (i == NULL) return false;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
  Py_DECREF(i);
  if (v == -1 && PyErr_Occurred()) return false;
  if (overflow) {
    PyErr_Format(PyExc_OverflowError, "%s does not fit in 64 bits", what);
    return false;
  }
  *out = v;
  return true;
}

/* A seed: None (random, from os.urandom) or an int in [0, 2**64). */
bool qvpy_arg_seed(PyObject *o, uint64_t *out) {
  if (o == NULL || o == Py_None) {
    PyObject *os = PyImport_ImportModule("os");
    PyObject *b = os ? PyObject_CallMethod(os, "urandom", "i", 8) : NULL;
    Py_XDECREF(os);
    if (b == NULL) return false;
    memcpy(out, PyBytes_AS_STRING(b), 8);
    Py_DECREF(b);
    return true;
  }
  if (PyBool_Check(o) || !PyIndex_Check(o)) {
    PyErr_Format(qvpy_TypeError, "seed must be an int or None, not %.100s", Py_TYPE(o)->tp_name);
    return false;
  }
  PyObject *i = PyNumber_Index(o);
  if (i == NULL) return false;
  unsigned long long v = PyLong_AsUnsignedLongLong(i);
  Py_DECREF(i);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_SetString(qvpy_ValueError, "seed must be between 0 and 2**64 - 1");
    return false;
  }
  *out = v;
  return true;
}

/* Column names: a str or a sequence of str, as UTF-8 pointers into the
 * returned list's items (*out freed with PyMem_Free; the list kept alive
 * in *keep). */
bool qvpy_arg_names(PyObject *o, const char *what, PyObject **keep, const char ***out, int32_t *n) {
  PyObject *seq = PyUnicode_Check(o) ? PyTuple_Pack(1, o) : PySequence_Fast(o, "");
  if (seq == NULL) {
    PyErr_Format(qvpy_TypeError, "%s must be a str or a list of str, not %.100s", what,
                 Py_TYPE(o)->tp_name);
    return false;
  }
  Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
  if (len > INT32_MAX) {
    Py_DECREF(seq);
    PyErr_Format(qvpy_ValueError, "%s: too many names", what);
    return false;
  }
  const char **names = PyMem_Calloc((size_t)(len > 0 ? len : 1), sizeof *names);
  if (names == NULL) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return false;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
    if (!PyUnicode_Check(it)) {
      PyErr_Format(qvpy_TypeError, "%s must hold str, found %.100s at position %zd", what,
                   Py_TYPE(it)->tp_name, i);
      break;
    }
    names[i] = PyUnicode_AsUTF8(it);
    if (names[i] == NULL) break;
  }
  if (PyErr_Occurred()) {
    PyMem_Free(names);
    Py_DECREF(seq);
    return false;
  }
  *keep = seq;
  *out = names;
  *n = (int32_t)len;
  return true;
}

/* Row numbers from an iterable of ints, each checked against [0, n_rows)
 * (negative ones counted from the end when `negative_ok`). PyMem_Free. */
bool qvpy_arg_rows(PyObject *o, int64_t n_rows, bool negative_ok, int64_t **out, int64_t *n) {
  PyObject *seq = PySequence_Fast(o, "indices must be an iterable of ints");
  if (seq == NULL) return false;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
  int64_t *rows = PyMem_Malloc((size_t)(len > 0 ? len : 1) * sizeof *rows);
  if (rows == NULL) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return false;
  }
  bool ok = true;
  for (Py_ssize_t i = 0; ok && i < len; i++) {
    int64_t given = 0;
    ok = qvpy_arg_int64(PySequence_Fast_GET_ITEM(seq, i), "an index", &given);
    rows[i] = negative_ok && given < 0 ? given + n_rows : given;
    if (ok && (rows[i] < 0 || rows[i] >= n_rows)) {
      PyErr_Format(qvpy_IndexError,
                   "index %lld (position %zd) is out of range for a dataset "
                   "of %lld rows",
                   (long long)given, i, (long long)n_rows);
      ok = false;
    }
  }
  Py_DECREF(seq);
  if (!ok) {
    PyMem_Free(rows);
    return false;
  }
  *out = rows;
  *n = (int64_t)len;
  return true;
}

PyObject *qvpy_call_formats(const char *fn, PyObject *self, PyObject *args, PyObject *kwargs) {
  static PyObject *mod; /* quiver._formats, imported once, kept for the process */
  if (mod == NULL && (mod = PyImport_ImportModule("quiver._formats")) == NULL) return NULL;
  PyObject *f = PyObject_GetAttrString(mod, fn);
  if (f == NULL) return NULL;
  Py_ssize_t n = args ? PyTuple_GET_SIZE(args) : 0;
  PyObject *a = PyTuple_New(n + 1);
  PyObject *r = NULL;
  if (a != NULL) {
    PyTuple_SET_ITEM(a, 0, Py_NewRef(self));
    for (Py_ssize_t i = 0; i < n; i++)
      PyTuple_SET_ITEM(a, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    r = PyObject_Call(f, a, kwargs);
    Py_DECREF(a);
  }
  Py_DECREF(f);
  return r;
}

qv_dataset_options qvpy_options(int cache) {
  qv_dataset_options o;
  memset(&o, 0, sizeof o);
  o.keep_in_memory = !cache;
  return o;
}

/* ------------------------------------------------------------------------ */
/* Module functions                                                          */

static PyObject *mod_open(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"path", "split", "data", NULL};
  PyObject *path = NULL, *data = NULL, *data_obj = Py_None;
  const char *split = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|zO:open", kw, PyUnicode_FSConverter, &path,
                                   &split, &data_obj))
    return NULL;
  if (data_obj != Py_None && !PyUnicode_FSConverter(data_obj, &data)) {
    Py_DECREF(path);
    return NULL;
  }
  const char *p = PyBytes_AS_STRING(path), *d = data ? PyBytes_AS_STRING(data) : NULL;
  qv_dataset *ds = NULL;
  qv_error err;
  qv_status st;
  /* with `data`, `path` is an indices mapping file over the dataset there */
  qv_dataset_choice choice = {0};
  qv_dataset_open_options oo = {split, d, &choice};
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_open_ex(p, &oo, &ds, &err);
  Py_END_ALLOW_THREADS
      /* the library's typed choice in this API's words */
      const char *words =
          st == QV_OK                     ? NULL
          : choice.kind == QV_CHOICE_DATA ? " (quiver.open(path, data=..., split=...))"
          : choice.kind == QV_CHOICE_SPLIT && choice.wanted == NULL
              ? " (quiver.open(path, split=...))"
              : NULL;
  if (words != NULL) {
    size_t n = strlen(err.message);
    snprintf(err.message + n, sizeof err.message - n, "%s", words);
  }
  qv_dataset_choice_reset(&choice);
  PyObject *cls = NULL;
  if (st == QV_EIO || st == QV_EINVAL) {
    /* A path that does not exist: FileNotFoundError, as datasets'
     * load_from_disk and Dataset.from_file raise. */
    struct stat sb;
    if (stat(p, &sb) != 0 || (d != NULL && stat(d, &sb) != 0)) cls = qvpy_FileNotFoundError;
  } else if (st == QV_EARG && split != NULL) {
    /* An unknown split: a KeyError as DatasetDict[split], a ValueError as
     * load_dataset(split=) (QuiverKeyError is both). */
    cls = qvpy_KeyError;
  }
  PyObject *r = cls != NULL ? qvpy_raise_qv_as(cls, st, &err) : qvpy_result(st, ds, &err);
  if (r != NULL) {
    /* The origin (pickle.c): the absolute paths, as a later process may
     * run elsewhere. */
    char *rp = realpath(p, NULL), *rd = d ? realpath(d, NULL) : NULL;
    PyObject *origin = Py_BuildValue("(sO&zO&)", "open", PyUnicode_DecodeFSDefault, rp ? rp : p,
                                     split, PyUnicode_DecodeFSDefault, rd ? rd : (d ? d : ""));
    free(rp);
    free(rd);
    if (origin != NULL && d == NULL) {
      Py_INCREF(Py_None);
      if (PyTuple_SetItem(origin, 3, Py_None) < 0) Py_CLEAR(origin);
    }
    if (origin == NULL) Py_CLEAR(r);
    else ((DatasetObject *)r)->origin = origin;
  }
  Py_DECREF(path);
  Py_XDECREF(data);
  return r;
}

static PyObject *mod_concatenate(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"dsets", "axis", NULL};
  PyObject *list;
  int axis = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|i:concatenate_datasets", kw, &list, &axis))
    return NULL;
  if (axis != 0 && axis != 1)
    return PyErr_Format(qvpy_ValueError, "axis must be 0 or 1, found %d", axis);
  PyObject *seq = PySequence_Fast(list, "concatenate_datasets takes a list of quiver.Dataset");
  if (seq == NULL) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n == 0) {
    Py_DECREF(seq);
    PyErr_SetString(qvpy_ValueError, "Unable to concatenate an empty list of datasets.");
    return NULL;
  }
  qv_dataset **ds = PyMem_Calloc((size_t)n, sizeof *ds);
  if (ds == NULL) {
    Py_DECREF(seq);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
    if (!PyObject_TypeCheck(o, &qvpy_DatasetType)) {
      PyErr_Format(qvpy_TypeError,
                   "concatenate_datasets: item %zd is a %.100s, not a "
                   "quiver.Dataset",
                   i, Py_TYPE(o)->tp_name);
      PyMem_Free(ds);
      Py_DECREF(seq);
      return NULL;
    }
    ds[i] = ((DatasetObject *)o)->ds;
  }
  qv_dataset_options o = qvpy_options(0);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_concatenate(ds, (int64_t)n, axis, &o, &out, &err);
  Py_END_ALLOW_THREADS PyMem_Free(ds);
  PyObject *r = qvpy_result(st, out, &err);
  /* The origin (pickle.c) when every part has one. */
  PyObject *origins = r ? PyTuple_New(n) : NULL;
  for (Py_ssize_t i = 0; origins != NULL && i < n; i++) {
    PyObject *oi = ((DatasetObject *)PySequence_Fast_GET_ITEM(seq, i))->origin;
    if (oi == NULL) Py_CLEAR(origins);
    else PyTuple_SET_ITEM(origins, i, Py_NewRef(oi));
  }
  if (origins != NULL) {
    ((DatasetObject *)r)->origin = Py_BuildValue("(sNi)", "concatenate", origins, axis);
    if (((DatasetObject *)r)->origin == NULL) Py_CLEAR(r);
  }
  if (r != NULL && PyErr_Occurred()) Py_CLEAR(r);
  Py_DECREF(seq); /* the datasets stayed referenced by the list until here */
  return r;
}

static PyObject *mod_version(PyObject *mod, PyObject *unused) {
  return PyUnicode_FromString(qv_version());
}

static PyMethodDef module_methods[] = {
    {"open", (PyCFunction)(void (*)(void))mod_open, METH_VARARGS | METH_KEYWORDS,
     "open($module, /, path, split=None, data=None)\n--\n\nA Dataset over an Arrow file, a "
     "save_to_disk "
     "directory (Dataset or DatasetDict split), a load_dataset cache directory, or an "
     "indices mapping file (cache-*.arrow; with data=, the dataset it indexes)."},
    {"concatenate_datasets", (PyCFunction)(void (*)(void))mod_concatenate,
     METH_VARARGS | METH_KEYWORDS,
     "concatenate_datasets($module, /, dsets, axis=0)\n--\n\nOne Dataset of the datasets, as "
     "datasets' concatenate_datasets."},
    {"_from_recipes", (PyCFunction)qvpy_mod_from_recipes, METH_VARARGS,
     "_from_recipes($module, data, indices, fingerprint, /)\n--\n\nA Dataset rebuilt from "
     "table recipes (Dataset._recipes(); used by unpickling)."},
    {"_dataset_dict_save_to_disk", (PyCFunction)(void (*)(void))qvpy_mod_dataset_dict_save,
     METH_VARARGS | METH_KEYWORDS,
     "_dataset_dict_save_to_disk($module, /, datasets, names, dataset_dict_path, "
     "max_shard_size=None, num_shards=None)\n--\n\nqv_dataset_dict_save_to_disk: use "
     "DatasetDict.save_to_disk."},
    {"_write_arrow_stream", (PyCFunction)qvpy_mod_write_arrow_stream, METH_VARARGS,
     "_write_arrow_stream(data, path, /)\n--\n\nAn __arrow_c_stream__ written to path as an "
     "Arrow IPC stream, atomically; returns the rows."},
    {"_assemble_save", (PyCFunction)(void (*)(void))qvpy_mod_assemble_save,
     METH_VARARGS | METH_KEYWORDS,
     "_assemble_save(dataset_path, shards, features_json=None, fingerprint=None, split=None)\n--"
     "\n\nqv_dataset_assemble_save: a save_to_disk directory from Arrow shards (moved)."},
    {"_dataset_dict_splits", (PyCFunction)qvpy_mod_dataset_dict_splits, METH_O,
     "_dataset_dict_splits($module, path, /)\n--\n\nSplit names of a DatasetDict directory."},
    {"_read_csv", (PyCFunction)(void (*)(void))qvpy_mod_read_csv, METH_VARARGS | METH_KEYWORDS,
     "_read_csv($module, /, path, delimiter=None)\n--\n\nA CSV file as load_dataset('csv') "
     "types it (use quiver.load_dataset or Dataset.from_csv)."},
    {"_write_text", (PyCFunction)(void (*)(void))qvpy_mod_write_text, METH_VARARGS | METH_KEYWORDS,
     "_write_text($module, /, dataset, path, kind, delimiter=None, batch_size=10000)\n--\n\n"
     "The rows as CSV or JSON Lines (use Dataset.to_csv / to_json)."},
    {"_sniff", (PyCFunction)qvpy_mod_sniff, METH_O,
     "_sniff($module, path, /)\n--\n\nWhat the path holds, as qv_path_sniff names it."},
    {"_from_columns", (PyCFunction)qvpy_mod_from_columns, METH_VARARGS,
     "_from_columns(mapping, fingerprint=None, /)\n--\n\nAn in-memory Dataset of a dict of "
     "columns (lists converted in C, or Arrow arrays)."},
    {"_from_stream", (PyCFunction)qvpy_mod_from_stream, METH_VARARGS,
     "_from_stream(obj, fingerprint=None, /)\n--\n\nAn in-memory Dataset of the batches of "
     "obj.__arrow_c_stream__() (zero copy)."},
    {"version", (PyCFunction)mod_version, METH_NOARGS,
     "version($module, /)\n--\n\nThe C library's version (qv_version())."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef quiver_module = {
    PyModuleDef_HEAD_INIT, .m_name = "quiver._quiver",
    .m_doc = "quiver's C extension: datasets over memory-mapped Arrow files (see docs/python.md).",
    .m_size = -1, .m_methods = module_methods};

/* The exception classes: QuiverError and one subclass per Python
 * exception datasets raises, each also a subclass of that exception. */
static bool add_errors(PyObject *m) {
  PyObject *dict = Py_BuildValue("{s:O,s:O}", "status", Py_None, "code", Py_None);
  if (dict == NULL) return false;
  qvpy_QuiverError = PyErr_NewExceptionWithDoc(
      "quiver.QuiverError",
      "Base of every error quiver raises. From the C library: str() is its message, "
      "`status` its kind ('invalid data', 'invalid argument', ...) and `code` the qv_status "
      "number; both are None for errors found in the arguments before any C call.",
      NULL, dict);
  Py_DECREF(dict);
  if (qvpy_QuiverError == NULL || PyModule_AddObjectRef(m, "QuiverError", qvpy_QuiverError) < 0)
    return false;
  static const struct {
    const char *name, *doc;
    PyObject **slot;
  } errs[] = {
      {"quiver.QuiverValueError", "A bad argument value (datasets raises ValueError).",
       &qvpy_ValueError},
      {"quiver.QuiverIndexError", "A row out of range (datasets raises IndexError).",
       &qvpy_IndexError},
      {"quiver.QuiverKeyError",
       "An unknown column (ds['x']) or split: a KeyError, and a ValueError as datasets 5 "
       "raises for an unknown column and load_dataset for an unknown split. str() is the "
       "message itself (not its repr, as KeyError's would be).",
       &qvpy_KeyError},
      {"quiver.QuiverTypeError", "An argument of the wrong type (datasets raises TypeError).",
       &qvpy_TypeError},
      {"quiver.QuiverFileNotFoundError",
       "A path that does not exist (datasets raises FileNotFoundError).", &qvpy_FileNotFoundError},
  };
  PyObject *bases[] = {PyExc_ValueError, PyExc_IndexError, PyExc_KeyError, PyExc_TypeError,
                       PyExc_FileNotFoundError};
  for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
    PyObject *b = i == 2 ? PyTuple_Pack(3, qvpy_QuiverError, bases[i], PyExc_ValueError)
                         : PyTuple_Pack(2, qvpy_QuiverError, bases[i]);
    PyObject *cd = NULL;
    if (b != NULL && i == 2) {
      PyObject *s = PyObject_GetAttrString(PyExc_Exception, "__str__");
      cd = s ? Py_BuildValue("{s:N}", "__str__", s) : NULL;
      if (cd == NULL) Py_CLEAR(b);
    }
    *errs[i].slot = b ? PyErr_NewExceptionWithDoc(errs[i].name, errs[i].doc, b, cd) : NULL;
    Py_XDECREF(b);
    Py_XDECREF(cd);
    const char *short_name = strchr(errs[i].name, '.') + 1;
    if (*errs[i].slot == NULL || PyModule_AddObjectRef(m, short_name, *errs[i].slot) < 0)
      return false;
  }
  return true;
}

PyMODINIT_FUNC PyInit__quiver(void);

PyMODINIT_FUNC PyInit__quiver(void) {
  if (!qvpy_values_init()) return NULL;
  PyTypeObject *types[] = {&qvpy_DatasetType, &qvpy_BatchType, &qvpy_RowIterType,
                           &qvpy_BatchIterType};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (PyType_Ready(types[i]) < 0) return NULL;
  PyObject *json = PyImport_ImportModule("json");
  if (json == NULL) return NULL;
  qvpy_json_loads = PyObject_GetAttrString(json, "loads");
  Py_DECREF(json);
  PyObject *dec = PyImport_ImportModule("decimal");
  if (dec == NULL) return NULL;
  qvpy_decimal_cls = PyObject_GetAttrString(dec, "Decimal");
  Py_DECREF(dec);
  if (qvpy_json_loads == NULL || qvpy_decimal_cls == NULL) return NULL;
  PyObject *m = PyModule_Create(&quiver_module);
  if (m == NULL) return NULL;
  if (!add_errors(m) || PyModule_AddObjectRef(m, "Dataset", (PyObject *)&qvpy_DatasetType) < 0 ||
      PyModule_AddObjectRef(m, "Batch", (PyObject *)&qvpy_BatchType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
