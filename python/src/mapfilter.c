/*
 * mapfilter.c — Python callables as the dataset layer's qv_map_fn /
 * qv_filter_fn, and Dataset.map / Dataset.filter, for the CPython
 * extension (python/ layer).
 */
#include "qvpy.h"

/* ------------------------------------------------------------------------ */
/* Python functions as qv_map_fn / qv_filter_fn                              */

/* The context of a Python function run by the dataset layer. The first
 * Python exception is kept (type, value, traceback) and re-raised after
 * the C call returns, unchanged. */
typedef struct pyfn {
  PyObject *fn;
  bool batched;
  const char *what; /* "map" or "filter" */
  PyObject *et, *ev, *etb;
} pyfn;

static qv_status py_failed(pyfn *p, qv_error *err) {
  if (p->et == NULL) PyErr_Fetch(&p->et, &p->ev, &p->etb);
  else PyErr_Clear();
  return qv_error_set(err, QV_EARG, "%s: the Python function raised an exception", p->what);
}

/* After the C call: the function's exception, else the result. */
static PyObject *py_result(pyfn *p, qv_status st, qv_dataset *out, const qv_error *err) {
  if (p->et != NULL) {
    if (st == QV_OK) qv_dataset_unref(out);
    PyErr_Restore(p->et, p->ev, p->etb);
    p->et = p->ev = p->etb = NULL;
    return NULL;
  }
  return qvpy_result(st, out, err);
}

/* Unbatched map: the function once per row, its dicts gathered into
 * columns (every row must return the same columns, or every row None). */
static bool map_rows(pyfn *p, const qv_array *batch, int64_t first_row, qv_array **out) {
  PyObject *names = NULL, *lists = NULL; /* lists: {name: [values]} */
  bool ok = qvpy_mapped_bytes_there(batch), none = false;
  for (int64_t i = 0; ok && i < batch->length; i++) {
    PyObject *row = qvpy_row_dict(batch, i);
    PyObject *r = row ? PyObject_CallOneArg(p->fn, row) : NULL;
    Py_XDECREF(row);
    if (r == NULL) {
      ok = false;
      break;
    }
    if (i == 0) none = r == Py_None;
    if (none != (r == Py_None) || (r != Py_None && !PyDict_Check(r))) {
      if (r != Py_None && !PyDict_Check(r))
        PyErr_Format(qvpy_TypeError,
                     "map: row %lld: the function must return a dict of "
                     "columns (or None to leave the dataset unchanged), not %.100s",
                     (long long)(first_row + i), Py_TYPE(r)->tp_name);
      else
        PyErr_Format(qvpy_TypeError,
                     "map: row %lld: the function returned %s, while for "
                     "earlier rows it returned %s",
                     (long long)(first_row + i), none ? "a dict" : "None",
                     none ? "None" : "a dict");
      Py_DECREF(r);
      ok = false;
      break;
    }
    if (r != Py_None) {
      if (names == NULL) {
        names = PyDict_Keys(r);
        lists = PyDict_New();
        for (Py_ssize_t j = 0; names && lists && j < PyList_GET_SIZE(names); j++) {
          PyObject *l = PyList_New(0);
          if (l == NULL || PyDict_SetItem(lists, PyList_GET_ITEM(names, j), l) < 0) ok = false;
          Py_XDECREF(l);
        }
        if (names == NULL || lists == NULL) ok = false;
      }
      if (ok && PyDict_GET_SIZE(r) != PyList_GET_SIZE(names)) {
        PyObject *got = PyDict_Keys(r);
        PyErr_Format(qvpy_TypeError,
                     "map: row %lld: the function returned columns %R, while "
                     "for row %lld it returned %R",
                     (long long)(first_row + i), got, (long long)first_row, names);
        Py_XDECREF(got);
        ok = false;
      }
      PyObject *key, *val;
      Py_ssize_t pos = 0;
      while (ok && PyDict_Next(r, &pos, &key, &val)) {
        PyObject *l = PyDict_GetItemWithError(lists, key);
        if (l == NULL) {
          if (!PyErr_Occurred())
            PyErr_Format(qvpy_TypeError,
                         "map: row %lld: the function returned column %R, "
                         "which it did not return for row %lld (columns %R)",
                         (long long)(first_row + i), key, (long long)first_row, names);
          ok = false;
        } else {
          ok = PyList_Append(l, val) == 0;
        }
      }
    }
    Py_DECREF(r);
  }
  if (ok && !none) ok = qvpy_result_struct(lists, "map", first_row, out);
  Py_XDECREF(names);
  Py_XDECREF(lists);
  return ok;
}

/* qv_map_fn.call for a Python function (this process only: the GIL is
 * taken for the call and released after). */
static qv_status pymap_call(void *ctx, const qv_array *batch, int64_t first_row, int rank,
                            qv_array **out, qv_error *err) {
  (void)rank;
  pyfn *p = ctx;
  PyGILState_STATE g = PyGILState_Ensure();
  bool ok;
  *out = NULL;
  if (p->batched) {
    PyObject *cols = qvpy_columns_dict(batch);
    PyObject *r = cols ? PyObject_CallOneArg(p->fn, cols) : NULL;
    Py_XDECREF(cols);
    ok = r != NULL && (r == Py_None || qvpy_result_struct(r, "map", first_row, out));
    Py_XDECREF(r);
  } else {
    ok = map_rows(p, batch, first_row, out);
  }
  qv_status st = ok ? QV_OK : py_failed(p, err);
  PyGILState_Release(g);
  return st;
}

/* qv_filter_fn.call for a Python predicate: a truth value per row, or
 * (batched) a sequence of them per batch. */
static qv_status pyfilter_call(void *ctx, const qv_array *batch, int64_t first_row, uint8_t *keep,
                               qv_error *err) {
  pyfn *p = ctx;
  PyGILState_STATE g = PyGILState_Ensure();
  bool ok = true;
  if (p->batched) {
    PyObject *cols = qvpy_columns_dict(batch);
    PyObject *r = cols ? PyObject_CallOneArg(p->fn, cols) : NULL;
    Py_XDECREF(cols);
    PyObject *seq = r ? PySequence_Fast(r, "") : NULL;
    if (r != NULL && seq == NULL) {
      PyErr_Format(qvpy_TypeError,
                   "filter: a batched function must return a list of bools, "
                   "not %.100s",
                   Py_TYPE(r)->tp_name);
    } else if (seq != NULL && PySequence_Fast_GET_SIZE(seq) != batch->length) {
      PyErr_Format(qvpy_ValueError,
                   "filter: the function returned %zd values for a batch of "
                   "%lld rows (rows %lld..%lld)",
                   PySequence_Fast_GET_SIZE(seq), (long long)batch->length, (long long)first_row,
                   (long long)(first_row + batch->length - 1));
      Py_CLEAR(seq);
    }
    ok = seq != NULL;
    for (int64_t i = 0; ok && i < batch->length; i++) {
      int t = PyObject_IsTrue(PySequence_Fast_GET_ITEM(seq, i));
      if (t > 0) keep[i >> 3] |= (uint8_t)(1u << (i & 7));
      ok = t >= 0;
    }
    Py_XDECREF(seq);
    Py_XDECREF(r);
  } else {
    ok = qvpy_mapped_bytes_there(batch);
    for (int64_t i = 0; ok && i < batch->length; i++) {
      PyObject *row = qvpy_row_dict(batch, i);
      PyObject *r = row ? PyObject_CallOneArg(p->fn, row) : NULL;
      Py_XDECREF(row);
      int t = r ? PyObject_IsTrue(r) : -1;
      Py_XDECREF(r);
      if (t > 0) keep[i >> 3] |= (uint8_t)(1u << (i & 7));
      ok = t >= 0;
    }
  }
  qv_status st = ok ? QV_OK : py_failed(p, err);
  PyGILState_Release(g);
  return st;
}

/* The fingerprint of a transform with a Python function: `new_fingerprint`
 * when given (checked by the library); else params {function: hash of
 * the function (quiver/_fnhash.py), batched}; a function that cannot be
 * hashed gets a random fingerprint in `random_fp` (as datasets), with a
 * warning when the result is to be cached. *new_fp points at the
 * fingerprint to impose, or NULL. */
static bool function_fingerprint(PyObject *fn, bool batched, PyObject *nfp, int cache,
                                 const char *what, qv_fingerprint_args **params,
                                 char random_fp[QV_FINGERPRINT_SIZE], const char **new_fp) {
  *params = NULL;
  *new_fp = NULL;
  if (nfp != Py_None) {
    if (!PyUnicode_Check(nfp)) {
      PyErr_Format(qvpy_TypeError, "new_fingerprint must be a str or None, not %.100s",
                   Py_TYPE(nfp)->tp_name);
      return false;
    }
    *new_fp = PyUnicode_AsUTF8(nfp);
    return *new_fp != NULL;
  }
  PyObject *mod = PyImport_ImportModule("quiver._fnhash");
  PyObject *h = mod ? PyObject_CallMethod(mod, "function_hash", "O", fn) : NULL;
  Py_XDECREF(mod);
  if (h == NULL) return false;
  if (h == Py_None) {
    Py_DECREF(h);
    PyObject *os = PyImport_ImportModule("os");
    PyObject *b = os ? PyObject_CallMethod(os, "urandom", "i", 8) : NULL;
    Py_XDECREF(os);
    if (b == NULL) return false;
    const unsigned char *r = (const unsigned char *)PyBytes_AS_STRING(b);
    for (int i = 0; i < 8; i++) snprintf(random_fp + 2 * i, 3, "%02x", r[i]);
    Py_DECREF(b);
    *new_fp = random_fp;
    if (cache && PyErr_WarnFormat(PyExc_UserWarning, 1,
                                  "%s: the function %R could not be hashed deterministically (it "
                                  "refers to values that are not plain data); a random "
                                  "fingerprint %s was used, so its cache file cannot be reused "
                                  "by a later run (pass new_fingerprint= to name the result)",
                                  what, fn, random_fp) < 0)
      return false;
    return true;
  }
  const char *hs = PyUnicode_AsUTF8(h);
  qv_error err;
  qv_status st = hs ? qv_fingerprint_args_new(params, &err) : QV_OK;
  if (hs != NULL && st == QV_OK) {
    qv_fingerprint_arg_str(*params, "function", hs, &err);
    st = qv_fingerprint_arg_bool(*params, "batched", batched, &err);
  }
  Py_DECREF(h);
  if (hs == NULL || st != QV_OK) {
    qv_fingerprint_args_free(*params);
    *params = NULL;
    if (hs != NULL) qvpy_raise_qv(st, &err);
    return false;
  }
  return true;
}

/* batch_size: None or <= 0 means the whole dataset in one batch (-1). */
static bool arg_batch_size(PyObject *o, int64_t *out) {
  if (o == NULL) {
    *out = QV_DATASET_MAP_BATCH_SIZE;
    return true;
  }
  if (o == Py_None) {
    *out = -1;
    return true;
  }
  if (!qvpy_arg_int64(o, "batch_size", out)) return false;
  if (*out <= 0) *out = -1;
  return true;
}

PyObject *qvpy_Dataset_map(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {
      "function",        "set",   "batched", "batch_size", "remove_columns", "num_proc",
      "new_fingerprint", "cache", NULL};
  PyObject *fn = Py_None, *set = Py_None, *bs_obj = NULL, *rm_obj = Py_None, *np_obj = Py_None,
           *nfp = Py_None;
  int batched = 0, cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$OpOOOOp:map", kw, &fn, &set, &batched, &bs_obj,
                                   &rm_obj, &np_obj, &nfp, &cache))
    return NULL;
  if ((fn == Py_None) == (set == Py_None))
    return PyErr_Format(qvpy_TypeError, "map takes a function or set={name: expression}, %s",
                        fn == Py_None ? "got neither" : "not both");
  if (fn != Py_None && !PyCallable_Check(fn))
    return PyErr_Format(qvpy_TypeError, "map: function must be callable, not %.100s",
                        Py_TYPE(fn)->tp_name);
  qv_map_options mo;
  memset(&mo, 0, sizeof mo);
  if (!arg_batch_size(bs_obj, &mo.batch_size)) return NULL;
  if (np_obj != Py_None) {
    int64_t np = 0;
    if (!qvpy_arg_int64(np_obj, "num_proc", &np)) return NULL;
    if (np < 1 || np > 4096)
      return PyErr_Format(qvpy_ValueError,
                          "num_proc must be an int between 1 and 4096, found "
                          "%lld",
                          (long long)np);
    if (fn != Py_None && np > 1)
      return PyErr_Format(qvpy_ValueError,
                          "map: num_proc=%lld with a Python function: quiver's "
                          "workers are forked processes, which cannot safely run the Python "
                          "interpreter; run it in this process (num_proc=None) or use set= "
                          "expressions, which run in C",
                          (long long)np);
    mo.num_proc = (int)np;
  }
  PyObject *rm_keep = NULL;
  if (rm_obj != Py_None &&
      !qvpy_arg_names(rm_obj, "remove_columns", &rm_keep, (const char ***)&mo.remove_columns,
                      &mo.n_remove_columns))
    return NULL;
  qv_dataset_options o = qvpy_options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st = QV_OK;
  PyObject *ret = NULL;
  if (set != Py_None) {
    Py_ssize_t n = PyDict_Check(set) ? PyDict_GET_SIZE(set) : -1;
    const char **names = n > 0 ? PyMem_Calloc((size_t)n, sizeof *names) : NULL;
    const char **exprs = n > 0 ? PyMem_Calloc((size_t)n, sizeof *exprs) : NULL;
    if (n < 1 || n > INT32_MAX) {
      PyErr_SetString(n < 0 ? qvpy_TypeError : qvpy_ValueError,
                      "map: set must be a non-empty dict {column name: expression}");
    } else if (names == NULL || exprs == NULL) {
      PyErr_NoMemory();
    } else {
      PyObject *key, *val;
      Py_ssize_t pos = 0, i = 0;
      while (PyDict_Next(set, &pos, &key, &val)) {
        if (!PyUnicode_Check(key) || !PyUnicode_Check(val)) {
          PyErr_Format(qvpy_TypeError,
                       "map: set maps str column names to str expressions, "
                       "found %.100s: %.100s",
                       Py_TYPE(key)->tp_name, Py_TYPE(val)->tp_name);
          break;
        }
        if ((names[i] = PyUnicode_AsUTF8(key)) == NULL ||
            (exprs[i] = PyUnicode_AsUTF8(val)) == NULL)
          break;
        i++;
      }
      if (nfp != Py_None && !PyUnicode_Check(nfp))
        PyErr_Format(qvpy_TypeError, "new_fingerprint must be a str or None, not %.100s",
                     Py_TYPE(nfp)->tp_name);
      else if (nfp != Py_None) o.new_fingerprint = PyUnicode_AsUTF8(nfp);
      if (!PyErr_Occurred()) {
        Py_BEGIN_ALLOW_THREADS st =
            qv_dataset_map_exprs(self->ds, names, exprs, (int32_t)n, &mo, &o, &out, &err);
        Py_END_ALLOW_THREADS ret =
            qvpy_derive(self, qvpy_result(st, out, &err), "map", args, kwargs);
      }
    }
    PyMem_Free(names);
    PyMem_Free(exprs);
  } else {
    char random_fp[QV_FINGERPRINT_SIZE];
    qv_fingerprint_args *params = NULL;
    if (function_fingerprint(fn, batched != 0, nfp, cache, "map", &params, random_fp,
                             &o.new_fingerprint)) {
      pyfn p = {fn, batched != 0, "map", NULL, NULL, NULL};
      qv_map_fn mf = {"quiver.python", "1", pymap_call, &p, params};
      /* Unbatched functions are called row by row inside batches of the
       * default size; batched ones get batch_size rows. */
      mo.batched = true;
      if (!batched) mo.batch_size = QV_DATASET_MAP_BATCH_SIZE;
      Py_BEGIN_ALLOW_THREADS st = qv_dataset_map(self->ds, &mf, &mo, &o, &out, &err);
      Py_END_ALLOW_THREADS ret = py_result(&p, st, out, &err);
      if (cache) ret = qvpy_tables_origin(ret);
    }
    qv_fingerprint_args_free(params);
  }
  PyMem_Free((void *)mo.remove_columns);
  Py_XDECREF(rm_keep);
  return ret;
}

PyObject *qvpy_Dataset_filter(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"function", "batched", "batch_size", "new_fingerprint", "cache", NULL};
  PyObject *fn, *bs_obj = NULL, *nfp = Py_None;
  int batched = 0, cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$pOOp:filter", kw, &fn, &batched, &bs_obj, &nfp,
                                   &cache))
    return NULL;
  qv_dataset_options o = qvpy_options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  if (PyUnicode_Check(fn)) {
    const char *where = PyUnicode_AsUTF8(fn);
    if (where == NULL) return NULL;
    if (nfp != Py_None) {
      if (!PyUnicode_Check(nfp))
        return PyErr_Format(qvpy_TypeError, "new_fingerprint must be a str or None, not %.100s",
                            Py_TYPE(nfp)->tp_name);
      if ((o.new_fingerprint = PyUnicode_AsUTF8(nfp)) == NULL) return NULL;
    }
    Py_BEGIN_ALLOW_THREADS st = qv_dataset_filter(self->ds, where, &o, &out, &err);
    Py_END_ALLOW_THREADS return qvpy_derive(self, qvpy_result(st, out, &err), "filter", args,
                                            kwargs);
  }
  if (!PyCallable_Check(fn))
    return PyErr_Format(qvpy_TypeError,
                        "filter takes an expression string (see "
                        "docs/expressions.md) or a callable, not %.100s",
                        Py_TYPE(fn)->tp_name);
  int64_t bs = 0;
  if (!arg_batch_size(bs_obj, &bs)) return NULL;
  if (bs < 0) bs = qv_dataset_num_rows(self->ds) > 0 ? qv_dataset_num_rows(self->ds) : 1;
  if (!batched) bs = 0; /* rows one by one, in batches of the default size */
  char random_fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *params = NULL;
  if (!function_fingerprint(fn, batched != 0, nfp, cache, "filter", &params, random_fp,
                            &o.new_fingerprint))
    return NULL;
  pyfn p = {fn, batched != 0, "filter", NULL, NULL, NULL};
  qv_filter_fn ff = {"quiver.python", "1", pyfilter_call, &p, params};
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_filter_fn(self->ds, &ff, bs, &o, &out, &err);
  Py_END_ALLOW_THREADS qv_fingerprint_args_free(params);
  PyObject *ret = py_result(&p, st, out, &err);
  return cache ? qvpy_tables_origin(ret) : ret;
}
