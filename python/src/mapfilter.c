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
  /* datasets' calling convention: fn(*inputs, *[indices], *[rank], **fn_kwargs) */
  PyObject *input_columns; /* list of str (inputs passed one by one), or NULL (one dict) */
  bool with_indices, with_rank;
  PyObject *fn_kwargs;   /* dict or NULL */
  PyObject *rank;        /* the worker's rank (an int) or None */
  int64_t offset;        /* added to row numbers (a worker's first row) */
  const qv_schema *orig; /* try_original_type: the input's schema, or NULL */
  PyObject *images;      /* set of the columns returned as PIL images (encoded as datasets'
                            Image), or NULL */
  bool use_json;         /* on_mixed_types="use_json": mixed values stored as Json */
  PyObject *json_cols;   /* set of the columns that became Json at their top, or NULL */
} pyfn;

/* PIL.Image.Image when PIL.Image is imported (a function returning PIL
 * images has imported it), else NULL without an exception. Borrowed. */
static PyObject *pil_image_class(void) {
  static PyObject *cls;
  if (cls != NULL) return cls;
  PyObject *name = PyUnicode_FromString("PIL.Image");
  PyObject *mod = name ? PyImport_GetModule(name) : NULL;
  Py_XDECREF(name);
  if (mod != NULL) {
    cls = PyObject_GetAttrString(mod, "Image");
    Py_DECREF(mod);
  }
  PyErr_Clear();
  return cls;
}

/* A map result `r` (borrowed) with the list columns whose first non-None
 * value is a PIL image encoded as datasets' Image feature stores them
 * (quiver._api._encode_images: {"bytes", "path"}), their names added to
 * p->images; else r itself. A new reference, or NULL with the error. */
static PyObject *encode_images(pyfn *p, PyObject *r) {
  PyObject *cls = PyDict_Check(r) ? pil_image_class() : NULL;
  if (cls == NULL) return Py_NewRef(r);
  PyObject *cols = NULL, *key, *val;
  Py_ssize_t pos = 0;
  while (PyDict_Next(r, &pos, &key, &val)) {
    if (!PyList_Check(val)) continue;
    PyObject *first = NULL;
    for (Py_ssize_t i = 0; first == NULL && i < PyList_GET_SIZE(val); i++)
      if (PyList_GET_ITEM(val, i) != Py_None) first = PyList_GET_ITEM(val, i);
    int is = first != NULL ? PyObject_IsInstance(first, cls) : 0;
    if (is < 0 || (is && cols == NULL && (cols = PyList_New(0)) == NULL) ||
        (is && PyList_Append(cols, key) < 0)) {
      Py_XDECREF(cols);
      return NULL;
    }
  }
  if (cols == NULL) return Py_NewRef(r);
  if (p->images == NULL && (p->images = PySet_New(NULL)) == NULL) {
    Py_DECREF(cols);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(cols); i++)
    if (PySet_Add(p->images, PyList_GET_ITEM(cols, i)) < 0) {
      Py_DECREF(cols);
      return NULL;
    }
  PyObject *a = Py_BuildValue("(ON)", r, cols);
  PyObject *out = a ? qvpy_call_api("_encode_images", NULL, a, NULL) : NULL;
  Py_XDECREF(a);
  return out;
}

/* A map result `r` (borrowed) as a STRUCT array in *out: PIL images
 * encoded (encode_images); with p->use_json, a result whose columns do
 * not convert (values of mixed types) is converted again with Json at the
 * mixed paths as datasets' on_mixed_types="use_json"
 * (quiver._api._use_json_result), the columns Json at their top noted in
 * p->json_cols; if that fails too, the first error is raised. */
static bool map_result_struct(pyfn *p, PyObject *r, int64_t first_row, qv_array **out) {
  PyObject *enc = encode_images(p, r);
  bool ok = enc != NULL && qvpy_result_struct(enc, "map", first_row, out);
  if (!ok && enc != NULL && p->use_json && PyDict_Check(enc) &&
      PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    PyObject *a = PyTuple_Pack(1, enc);
    PyObject *t = a ? qvpy_call_api("_use_json_result", NULL, a, NULL) : NULL;
    Py_XDECREF(a);
    ok = t != NULL && PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 2 &&
         PyList_Check(PyTuple_GET_ITEM(t, 1)) &&
         qvpy_result_struct(PyTuple_GET_ITEM(t, 0), "map", first_row, out);
    PyObject *cols = ok ? PyTuple_GET_ITEM(t, 1) : NULL;
    if (ok && p->json_cols == NULL && (p->json_cols = PySet_New(NULL)) == NULL) ok = false;
    for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(cols); i++)
      ok = PySet_Add(p->json_cols, PyList_GET_ITEM(cols, i)) == 0;
    Py_XDECREF(t);
    if (ok) {
      Py_XDECREF(et);
      Py_XDECREF(ev);
      Py_XDECREF(etb);
    } else {
      PyErr_Clear();
      PyErr_Restore(et, ev, etb);
    }
  }
  Py_XDECREF(enc);
  return ok;
}

/* Call p->fn on `inputs` (a row or a batch dict) as datasets does: with
 * input_columns, their values one by one; then the row index (or the
 * batch's list of indices) and the rank when asked, and fn_kwargs. */
static PyObject *call_fn(pyfn *p, PyObject *inputs, int64_t row, int64_t n) {
  if (p->input_columns == NULL && !p->with_indices && !p->with_rank && p->fn_kwargs == NULL)
    return PyObject_CallOneArg(p->fn, inputs);
  Py_ssize_t ni = p->input_columns ? PyList_GET_SIZE(p->input_columns) : 1;
  PyObject *a = PyTuple_New(ni + p->with_indices + p->with_rank);
  if (a == NULL) return NULL;
  Py_ssize_t k = 0;
  for (; k < ni; k++) {
    PyObject *v = inputs;
    if (p->input_columns) {
      v = PyDict_GetItemWithError(inputs, PyList_GET_ITEM(p->input_columns, k));
      if (v == NULL) {
        if (!PyErr_Occurred())
          PyErr_Format(qvpy_ValueError, "%s: input column %R is not in the dataset", p->what,
                       PyList_GET_ITEM(p->input_columns, k));
        Py_DECREF(a);
        return NULL;
      }
    }
    PyTuple_SET_ITEM(a, k, Py_NewRef(v));
  }
  if (p->with_indices) {
    PyObject *ix;
    if (p->batched) {
      ix = PyList_New(n);
      for (int64_t i = 0; ix != NULL && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(p->offset + row + i);
        if (x == NULL) Py_CLEAR(ix);
        else PyList_SET_ITEM(ix, i, x);
      }
    } else {
      ix = PyLong_FromLongLong(p->offset + row);
    }
    if (ix == NULL) {
      Py_DECREF(a);
      return NULL;
    }
    PyTuple_SET_ITEM(a, k++, ix);
  }
  if (p->with_rank) PyTuple_SET_ITEM(a, k++, Py_NewRef(p->rank ? p->rank : Py_None));
  PyObject *r = PyObject_Call(p->fn, a, p->fn_kwargs);
  Py_DECREF(a);
  return r;
}

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
    PyObject *r = row ? call_fn(p, row, first_row + i, 1) : NULL;
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
  if (ok && !none) ok = map_result_struct(p, lists, first_row, out);
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
    PyObject *r = cols ? call_fn(p, cols, first_row, batch->length) : NULL;
    Py_XDECREF(cols);
    ok = r != NULL && (r == Py_None || map_result_struct(p, r, first_row, out));
    Py_XDECREF(r);
  } else {
    ok = map_rows(p, batch, first_row, out);
  }
  if (ok && *out != NULL && p->orig != NULL) ok = qvpy_struct_keep_types(out, p->orig);
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
    PyObject *r = cols ? call_fn(p, cols, first_row, batch->length) : NULL;
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
      PyObject *r = row ? call_fn(p, row, first_row + i, 1) : NULL;
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
static bool function_fingerprint(PyObject *fn, const pyfn *p, PyObject *nfp, int cache,
                                 const char *what, qv_fingerprint_args **params,
                                 char random_fp[QV_FINGERPRINT_SIZE], const char **new_fp) {
  bool batched = p->batched;
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
  /* fn_kwargs and filter's input_columns are part of what the function computes */
  PyObject *extra = NULL;
  if (h != NULL && h != Py_None && (p->fn_kwargs != NULL || p->input_columns != NULL)) {
    PyObject *v = Py_BuildValue("(OO)", p->fn_kwargs ? p->fn_kwargs : Py_None,
                                p->input_columns ? p->input_columns : Py_None);
    extra = v ? PyObject_CallMethod(mod, "value_hash", "(O)", v) : NULL;
    Py_XDECREF(v);
    if (extra == NULL) Py_CLEAR(h);
    else if (extra == Py_None) {
      Py_CLEAR(extra);
      Py_DECREF(h);
      h = Py_NewRef(Py_None);
    }
  }
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
    const char *xs = extra && extra != Py_None ? PyUnicode_AsUTF8(extra) : NULL;
    if (st == QV_OK && xs != NULL) st = qv_fingerprint_arg_str(*params, "fn_args", xs, &err);
    if (st == QV_OK && p->with_indices)
      st = qv_fingerprint_arg_bool(*params, "with_indices", true, &err);
    if (st == QV_OK && p->with_rank) st = qv_fingerprint_arg_bool(*params, "with_rank", true, &err);
  }
  Py_XDECREF(extra);
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

/* datasets' map / filter arguments beyond quiver's own (None when absent). */
typedef struct fn_args {
  PyObject *with_indices, *with_rank, *input_columns, *drop_last_batch, *keep_in_memory,
      *load_from_cache_file, *cache_file_name, *writer_batch_size, *features, *disable_nullable,
      *fn_kwargs, *suffix_template, *desc, *try_original_type, *on_mixed_types, *rank, *offset;
} fn_args;

static bool truth(PyObject *o, bool dflt) {
  if (o == NULL || o == Py_None) return dflt;
  return PyObject_IsTrue(o) > 0;
}

/* The pyfn fields and dataset options the datasets arguments give; the
 * references in *keep (input column names) are dropped by the caller. */
static bool apply_fn_args(const fn_args *a, pyfn *p, qv_dataset_options *o, int *cache,
                          PyObject **keep, const char ***in_cols, int32_t *n_in, PyObject *hold) {
  p->with_indices = truth(a->with_indices, false);
  p->with_rank = truth(a->with_rank, false);
  p->rank = a->rank && a->rank != Py_None ? a->rank : NULL;
  p->offset = 0;
  if (a->offset && a->offset != Py_None && !qvpy_arg_int64(a->offset, "_offset", &p->offset))
    return false;
  if (a->fn_kwargs && a->fn_kwargs != Py_None) {
    if (!PyDict_Check(a->fn_kwargs)) {
      PyErr_Format(qvpy_TypeError, "fn_kwargs must be a dict or None, not %.100s",
                   Py_TYPE(a->fn_kwargs)->tp_name);
      return false;
    }
    p->fn_kwargs = a->fn_kwargs;
  }
  if (a->input_columns && a->input_columns != Py_None) {
    if (!qvpy_arg_names(a->input_columns, "input_columns", keep, in_cols, n_in)) return false;
    PyObject *l = PySequence_List(*keep);
    if (l == NULL || PyList_Append(hold, l) < 0) {
      Py_XDECREF(l);
      return false;
    }
    Py_DECREF(l);
    p->input_columns = l; /* held by `hold` */
  }
  if (truth(a->keep_in_memory, false)) *cache = 0;
  if (a->cache_file_name && a->cache_file_name != Py_None) {
    if (truth(a->keep_in_memory, false)) {
      PyErr_SetString(qvpy_ValueError,
                      "Please use either `keep_in_memory` or `cache_file_name` "
                      "but not both.");
      return false;
    }
    PyObject *fs = PyOS_FSPath(a->cache_file_name);
    PyObject *b = fs && PyUnicode_Check(fs) ? PyUnicode_EncodeFSDefault(fs) : Py_XNewRef(fs);
    Py_XDECREF(fs);
    if (b == NULL || !PyBytes_Check(b)) {
      Py_XDECREF(b);
      if (!PyErr_Occurred()) PyErr_SetString(qvpy_TypeError, "cache_file_name must be a path");
      return false;
    }
    int r = PyList_Append(hold, b); /* kept alive by `hold` */
    Py_DECREF(b);
    if (r < 0) return false;
    *cache = 1;
  }
  *o = qvpy_options(*cache);
  if (a->cache_file_name && a->cache_file_name != Py_None)
    o->cache_file_name = PyBytes_AS_STRING(PyList_GET_ITEM(hold, PyList_GET_SIZE(hold) - 1));
  o->ignore_cache = a->load_from_cache_file == Py_False;
  if (a->writer_batch_size && a->writer_batch_size != Py_None) {
    if (!qvpy_arg_int64(a->writer_batch_size, "writer_batch_size", &o->writer_batch_size))
      return false;
    if (o->writer_batch_size < 0) o->writer_batch_size = 0;
  }
  return true;
}

/* A progress bar (quiver._api._progress) while a map / filter runs: called
 * on the calling thread with the GIL released. */
static void progress_cb(void *ctx, const char *what, int64_t done, int64_t total) {
  (void)what;
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *r = PyObject_CallFunction((PyObject *)ctx, "LL", (long long)done, (long long)total);
  if (r == NULL) PyErr_Clear();
  Py_XDECREF(r);
  PyGILState_Release(g);
}

static PyObject *progress_of(PyObject *desc, int64_t total) {
  if (desc == NULL || desc == Py_None) return Py_NewRef(Py_None);
  PyObject *a = Py_BuildValue("(OL)", desc, (long long)total);
  PyObject *r = a ? qvpy_call_api("_progress", NULL, a, NULL) : NULL;
  Py_XDECREF(a);
  return r;
}

static void progress_done(PyObject *bar) {
  if (bar == NULL || bar == Py_None) return;
  PyObject *r = PyObject_CallMethod(bar, "close", NULL);
  if (r == NULL) PyErr_Clear();
  Py_XDECREF(r);
}

/* What map / filter return once the C call is done: features= cast. */
static PyObject *finish(PyObject *ret, const fn_args *a) {
  if (ret == NULL || a->features == NULL || a->features == Py_None) return ret;
  PyObject *t = Py_BuildValue("(OO)", ret, a->features);
  Py_DECREF(ret);
  PyObject *r = t ? qvpy_call_api("_cast_result", NULL, t, NULL) : NULL;
  Py_XDECREF(t);
  return r;
}

PyObject *qvpy_Dataset_map(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"function",
                       "set",
                       "with_indices",
                       "with_rank",
                       "input_columns",
                       "batched",
                       "batch_size",
                       "drop_last_batch",
                       "remove_columns",
                       "keep_in_memory",
                       "load_from_cache_file",
                       "cache_file_name",
                       "writer_batch_size",
                       "features",
                       "disable_nullable",
                       "fn_kwargs",
                       "num_proc",
                       "suffix_template",
                       "new_fingerprint",
                       "desc",
                       "try_original_type",
                       "on_mixed_types",
                       "cache",
                       "_rank",
                       "_offset",
                       NULL};
  PyObject *fn = Py_None, *set = Py_None, *bs_obj = NULL, *rm_obj = Py_None, *np_obj = Py_None,
           *nfp = Py_None, *batched_obj = NULL, *cache_obj = NULL;
  fn_args a;
  memset(&a, 0, sizeof a);
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "|O$OOOOOOOOOOOOOOOOOOOOOOOO:map", kw, &fn, &set, &a.with_indices,
          &a.with_rank, &a.input_columns, &batched_obj, &bs_obj, &a.drop_last_batch, &rm_obj,
          &a.keep_in_memory, &a.load_from_cache_file, &a.cache_file_name, &a.writer_batch_size,
          &a.features, &a.disable_nullable, &a.fn_kwargs, &np_obj, &a.suffix_template, &nfp,
          &a.desc, &a.try_original_type, &a.on_mixed_types, &cache_obj, &a.rank, &a.offset))
    return NULL;
  int batched = truth(batched_obj, false), cache = truth(cache_obj, false);
  if (fn != Py_None && set != Py_None)
    return PyErr_Format(qvpy_TypeError, "map takes a function or set={name: expression}, not both");
  if (fn == Py_None && set == Py_None) /* datasets: the identity (columns removed) */
    return qvpy_call_api("_map_identity", (PyObject *)self, args, kwargs);
  if (fn != Py_None && !PyCallable_Check(fn))
    return PyErr_Format(qvpy_TypeError, "map: function must be callable, not %.100s",
                        Py_TYPE(fn)->tp_name);
  qv_map_options mo;
  memset(&mo, 0, sizeof mo);
  if (!arg_batch_size(bs_obj, &mo.batch_size)) return NULL;
  mo.drop_last_batch = truth(a.drop_last_batch, false);
  if (np_obj != Py_None) {
    int64_t np = 0;
    if (!qvpy_arg_int64(np_obj, "num_proc", &np)) return NULL;
    if (np < 1 || np > 4096)
      return PyErr_Format(qvpy_ValueError,
                          "num_proc must be an int between 1 and 4096, found "
                          "%lld",
                          (long long)np);
    /* Python functions run in forked worker processes of quiver._api */
    if (fn != Py_None && np > 1 && qv_dataset_num_rows(self->ds) > 1)
      return qvpy_call_api("_map_procs", (PyObject *)self, args, kwargs);
    mo.num_proc = fn != Py_None ? 0 : (int)np;
  }
  pyfn p = {.fn = fn, .batched = batched != 0, .what = "map", .use_json = true};
  /* on_mixed_types: datasets 5.2's map defaults to "use_json"; None raises on mixed values */
  if (a.on_mixed_types == Py_None) {
    p.use_json = false;
  } else if (a.on_mixed_types != NULL &&
             !(PyUnicode_Check(a.on_mixed_types) &&
               PyUnicode_CompareWithASCIIString(a.on_mixed_types, "use_json") == 0)) {
    return PyErr_Format(qvpy_ValueError, "on_mixed_types must be 'use_json' or None, not %R",
                        a.on_mixed_types);
  }
  if (truth(a.try_original_type, true)) p.orig = qv_dataset_schema(self->ds);
  PyObject *rm_keep = NULL, *in_keep = NULL, *hold = PyList_New(0);
  qv_dataset_options o;
  if (hold == NULL ||
      !apply_fn_args(&a, &p, &o, &cache, &in_keep, (const char ***)&mo.input_columns,
                     &mo.n_input_columns, hold)) {
    PyMem_Free((void *)mo.input_columns);
    Py_XDECREF(in_keep);
    Py_XDECREF(hold);
    return NULL;
  }
  if (rm_obj != Py_None &&
      !qvpy_arg_names(rm_obj, "remove_columns", &rm_keep, (const char ***)&mo.remove_columns,
                      &mo.n_remove_columns)) {
    PyMem_Free((void *)mo.input_columns);
    Py_XDECREF(in_keep);
    Py_DECREF(hold);
    return NULL;
  }
  PyObject *bar = progress_of(a.desc, qv_dataset_num_rows(self->ds));
  if (bar == NULL) {
    PyMem_Free((void *)mo.input_columns);
    PyMem_Free((void *)mo.remove_columns);
    Py_XDECREF(in_keep);
    Py_XDECREF(rm_keep);
    Py_DECREF(hold);
    return NULL;
  }
  if (bar != Py_None) {
    o.progress = progress_cb;
    o.progress_ctx = bar;
  }
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
    if (function_fingerprint(fn, &p, nfp, cache, "map", &params, random_fp, &o.new_fingerprint)) {
      qv_map_fn mf = {"quiver.python", "1", pymap_call, &p, params};
      /* Unbatched functions are called row by row inside batches of the
       * default size; batched ones get batch_size rows. */
      mo.batched = true;
      if (!batched) {
        mo.batch_size = QV_DATASET_MAP_BATCH_SIZE;
        mo.drop_last_batch = false;
      }
      Py_BEGIN_ALLOW_THREADS st = qv_dataset_map(self->ds, &mf, &mo, &o, &out, &err);
      Py_END_ALLOW_THREADS ret = py_result(&p, st, out, &err);
      if (cache) ret = qvpy_tables_origin(ret);
      if (ret != NULL && p.images != NULL && (a.features == NULL || a.features == Py_None)) {
        /* the columns encoded from PIL images get datasets' Image feature */
        PyObject *t = Py_BuildValue("(NO)", ret, p.images);
        ret = t ? qvpy_call_api("_with_image_features", NULL, t, NULL) : NULL;
        Py_XDECREF(t);
      }
      if (ret != NULL && p.json_cols != NULL && (a.features == NULL || a.features == Py_None)) {
        PyObject *t = Py_BuildValue("(NO)", ret, p.json_cols); /* Json at the top */
        ret = t ? qvpy_call_api("_with_json_features", NULL, t, NULL) : NULL;
        Py_XDECREF(t);
      }
      Py_CLEAR(p.images);
      Py_CLEAR(p.json_cols);
    }
    qv_fingerprint_args_free(params);
  }
  progress_done(bar);
  Py_DECREF(bar);
  PyMem_Free((void *)mo.remove_columns);
  PyMem_Free((void *)mo.input_columns);
  Py_XDECREF(rm_keep);
  Py_XDECREF(in_keep);
  Py_DECREF(hold);
  return finish(ret, &a);
}

PyObject *qvpy_Dataset_filter(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"function",
                       "with_indices",
                       "with_rank",
                       "input_columns",
                       "batched",
                       "batch_size",
                       "keep_in_memory",
                       "load_from_cache_file",
                       "cache_file_name",
                       "writer_batch_size",
                       "fn_kwargs",
                       "num_proc",
                       "suffix_template",
                       "new_fingerprint",
                       "desc",
                       "cache",
                       "_rank",
                       "_offset",
                       NULL};
  PyObject *fn = Py_None, *bs_obj = NULL, *nfp = Py_None, *batched_obj = NULL, *cache_obj = NULL,
           *np_obj = Py_None;
  fn_args a;
  memset(&a, 0, sizeof a);
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "|O$OOOOOOOOOOOOOOOOO:filter", kw, &fn, &a.with_indices, &a.with_rank,
          &a.input_columns, &batched_obj, &bs_obj, &a.keep_in_memory, &a.load_from_cache_file,
          &a.cache_file_name, &a.writer_batch_size, &a.fn_kwargs, &np_obj, &a.suffix_template, &nfp,
          &a.desc, &cache_obj, &a.rank, &a.offset))
    return NULL;
  int batched = truth(batched_obj, false), cache = truth(cache_obj, false);
  if (fn == Py_None) /* datasets: every row kept */
    return qvpy_call_api("_map_identity", (PyObject *)self, NULL, NULL);
  if (np_obj != Py_None && !PyUnicode_Check(fn)) {
    int64_t np = 0;
    if (!qvpy_arg_int64(np_obj, "num_proc", &np)) return NULL;
    if (np < 1 || np > 4096)
      return PyErr_Format(qvpy_ValueError, "num_proc must be an int between 1 and 4096, found %lld",
                          (long long)np);
    if (np > 1 && qv_dataset_num_rows(self->ds) > 1)
      return qvpy_call_api("_filter_procs", (PyObject *)self, args, kwargs);
  }
  pyfn p = {.fn = fn, .batched = batched != 0, .what = "filter"};
  PyObject *keep = PyList_New(0), *names_keep = NULL; /* keep holds what p and o point into */
  const char **in_cols = NULL;
  int32_t n_in = 0;
  qv_dataset_options o;
  bool ok = keep != NULL && apply_fn_args(&a, &p, &o, &cache, &names_keep, &in_cols, &n_in, keep);
  PyMem_Free(in_cols);
  Py_XDECREF(names_keep);
  if (!ok) {
    Py_XDECREF(keep);
    return NULL;
  }
  for (int32_t i = 0; p.input_columns && i < n_in; i++) {
    const char *c = PyUnicode_AsUTF8(PyList_GET_ITEM(p.input_columns, i));
    if (c != NULL && qv_dataset_column_index(self->ds, c) < 0) {
      PyObject *names = qvpy_column_names_of(qv_dataset_schema(self->ds));
      if (names != NULL)
        PyErr_Format(qvpy_ValueError,
                     "Input column %s not in the dataset. Current columns in the dataset: %R", c,
                     names);
      Py_XDECREF(names);
      Py_XDECREF(keep);
      return NULL;
    }
  }
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  if (PyUnicode_Check(fn)) {
    Py_XDECREF(keep);
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
  if (!PyCallable_Check(fn)) {
    Py_XDECREF(keep);
    return PyErr_Format(qvpy_TypeError,
                        "filter takes an expression string (see "
                        "docs/expressions.md) or a callable, not %.100s",
                        Py_TYPE(fn)->tp_name);
  }
  int64_t bs = 0;
  if (!arg_batch_size(bs_obj, &bs)) {
    Py_XDECREF(keep);
    return NULL;
  }
  if (bs < 0) bs = qv_dataset_num_rows(self->ds) > 0 ? qv_dataset_num_rows(self->ds) : 1;
  if (!batched) bs = 0; /* rows one by one, in batches of the default size */
  char random_fp[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *params = NULL;
  if (!function_fingerprint(fn, &p, nfp, cache, "filter", &params, random_fp, &o.new_fingerprint)) {
    Py_XDECREF(keep);
    return NULL;
  }
  PyObject *bar = progress_of(a.desc, qv_dataset_num_rows(self->ds));
  if (bar == NULL) {
    qv_fingerprint_args_free(params);
    Py_XDECREF(keep);
    return NULL;
  }
  if (bar != Py_None) {
    o.progress = progress_cb;
    o.progress_ctx = bar;
  }
  qv_filter_fn ff = {"quiver.python", "1", pyfilter_call, &p, params};
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_filter_fn(self->ds, &ff, bs, &o, &out, &err);
  Py_END_ALLOW_THREADS qv_fingerprint_args_free(params);
  progress_done(bar);
  Py_DECREF(bar);
  PyObject *ret = py_result(&p, st, out, &err);
  Py_XDECREF(keep);
  return cache ? qvpy_tables_origin(ret) : ret;
}
