/*
 * dataset.c — the quiver.Dataset type of the CPython extension (python/
 * layer): attributes, __getitem__, the transforms (one dataset-layer call
 * each, GIL released around the long ones), save_to_disk, the Arrow stream
 * export and the row / batch iterators. map and filter are in mapfilter.c.
 */
#include "qvpy.h"

/* ------------------------------------------------------------------------ */
/* Dataset                                                                   */

/* Wrap `ds` (its reference taken over). */
static PyObject *wrap(qv_dataset *ds) {
  DatasetObject *o = PyObject_New(DatasetObject, &qvpy_DatasetType);
  if (o == NULL) {
    qv_dataset_unref(ds);
    return NULL;
  }
  o->ds = ds;
  o->origin = NULL;
  o->format = NULL;
  return (PyObject *)o;
}

/* The result of a transform: the new dataset or the error. */
PyObject *qvpy_result(qv_status st, qv_dataset *out, const qv_error *err) {
  if (st != QV_OK) return qvpy_raise_qv(st, err);
  return wrap(out);
}

static void Dataset_dealloc(DatasetObject *self) {
  qv_dataset_unref(self->ds);
  Py_XDECREF(self->origin);
  Py_XDECREF(self->format);
  PyObject_Free(self);
}

static PyObject *Dataset_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyErr_SetString(qvpy_TypeError,
                  "quiver.Dataset cannot be created directly: use "
                  "quiver.open(path)");
  return NULL;
}

static Py_ssize_t Dataset_len(DatasetObject *self) {
  return (Py_ssize_t)qv_dataset_num_rows(self->ds);
}

static PyObject *Dataset_num_rows(DatasetObject *self, void *c) {
  return PyLong_FromLongLong(qv_dataset_num_rows(self->ds));
}

static PyObject *Dataset_num_columns(DatasetObject *self, void *c) {
  return PyLong_FromLong(qv_dataset_num_columns(self->ds));
}

static PyObject *Dataset_column_names(DatasetObject *self, void *c) {
  return qvpy_column_names_of(qv_dataset_schema(self->ds));
}

static PyObject *Dataset_fingerprint(DatasetObject *self, void *c) {
  return PyUnicode_FromString(qv_dataset_fingerprint(self->ds));
}

static PyObject *Dataset_split(DatasetObject *self, void *c) {
  const char *s = qv_dataset_split(self->ds);
  if (s == NULL) Py_RETURN_NONE;
  return PyUnicode_FromString(s);
}

static PyObject *Dataset_features(DatasetObject *self, void *c) {
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_error err;
  qv_status st = qv_hf_feature_emit(qv_dataset_features(self->ds), QV_HF_JSON_COMPACT, &sb, &err);
  PyObject *r = st == QV_OK ? PyObject_CallFunction(qvpy_json_loads, "s#", qv_strbuf_cstr(&sb),
                                                    (Py_ssize_t)sb.len)
                            : qvpy_raise_qv(st, &err);
  qv_strbuf_reset(&sb);
  /* a quiver.features.Features, built in Python from datasets' dict form */
  return r == NULL ? NULL : qvpy_call_python("quiver.features", "_from_extension", r);
}

static PyObject *Dataset_cache_files(DatasetObject *self, void *c) {
  char **paths = NULL;
  int64_t n = 0;
  qv_error err;
  qv_status st = qv_dataset_cache_files(self->ds, &paths, &n, &err);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *list = PyList_New((Py_ssize_t)n);
  for (int64_t i = 0; list != NULL && i < n; i++) {
    PyObject *d = Py_BuildValue("{s:O&}", "filename", PyUnicode_DecodeFSDefault, paths[i]);
    if (d == NULL) Py_CLEAR(list);
    else PyList_SET_ITEM(list, (Py_ssize_t)i, d);
  }
  qv_table_free_paths(paths, n);
  return list;
}

static PyObject *Dataset_repr(DatasetObject *self) {
  PyObject *names = qvpy_column_names_of(qv_dataset_schema(self->ds));
  if (names == NULL) return NULL;
  PyObject *r = PyUnicode_FromFormat("Dataset({\n    features: %R,\n    num_rows: %lld\n})", names,
                                     (long long)qv_dataset_num_rows(self->ds));
  Py_DECREF(names);
  return r;
}

/* Rows rows[0..n) gathered, as {column: [values]}. */
static PyObject *take_columns(qv_dataset *ds, const int64_t *rows, int64_t n) {
  qv_array *b = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_take(ds, rows, n, &b, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *r = qvpy_columns_dict(b);
  qv_array_unref(b);
  return r;
}

/* One column over every row, as a list. */
static PyObject *column_list(qv_dataset *ds, const char *name) {
  qv_table *t = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_column(ds, name, &t, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *list = PyList_New((Py_ssize_t)qv_table_num_rows(t));
  Py_ssize_t pos = 0;
  for (int64_t i = 0; list != NULL && i < qv_table_num_batches(t); i++) {
    qv_array *b = NULL;
    st = qv_table_batch(t, i, &b, &err);
    if (st != QV_OK) {
      qvpy_raise_qv(st, &err);
      Py_CLEAR(list);
      break;
    }
    const qv_array *col = b->children[0];
    if (!qvpy_mapped_bytes_there(b)) Py_CLEAR(list);
    for (int64_t j = 0; list != NULL && j < b->length; j++) {
      PyObject *v = qvpy_value_of(col, b->offset + j, 0);
      if (v == NULL) {
        Py_CLEAR(list);
        break;
      }
      PyList_SET_ITEM(list, pos++, v);
    }
    qv_array_unref(b);
  }
  qv_table_unref(t);
  return list;
}

/* Whether `key` is a sequence of row numbers other than a list, tuple or
 * range: a 1-d numpy integer array, say (datasets accepts them). */
static bool is_row_array(PyObject *key) {
  return !PyLong_Check(key) && !PyUnicode_Check(key) && !PyBytes_Check(key) && !PyDict_Check(key) &&
         PySequence_Check(key) && PyObject_HasAttrString(key, "ndim");
}

/* ds[i] -> row dict; ds[a:b:c] and ds[[i, j, ...]] -> {column: [values]};
 * ds["col"] -> list of the column's values (datasets' __getitem__), all
 * as Python values converted in C. */
static PyObject *getitem_python(DatasetObject *self, PyObject *key) {
  int64_t n = qv_dataset_num_rows(self->ds);
  if (PyUnicode_Check(key)) {
    const char *name = PyUnicode_AsUTF8(key);
    if (name == NULL) return NULL;
    if (qv_dataset_column_index(self->ds, name) < 0) {
      PyObject *names = qvpy_column_names_of(qv_dataset_schema(self->ds));
      if (names != NULL)
        PyErr_Format(qvpy_KeyError,
                     "Column %R not in the dataset. Current "
                     "columns in the dataset: %R",
                     key, names);
      Py_XDECREF(names);
      return NULL;
    }
    return column_list(self->ds, name);
  }
  if (PySlice_Check(key)) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) return NULL;
    Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)n, &start, &stop, step);
    int64_t *rows = PyMem_Malloc((size_t)(len > 0 ? len : 1) * sizeof *rows);
    if (rows == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < len; i++) rows[i] = (int64_t)(start + i * step);
    PyObject *r = take_columns(self->ds, rows, (int64_t)len);
    PyMem_Free(rows);
    return r;
  }
  if (PyIndex_Check(key) && !PyBool_Check(key) && !is_row_array(key)) {
    int64_t i;
    if (!qvpy_arg_int64(key, "index", &i)) return NULL;
    if (i < -n || i >= n) {
      PyErr_Format(qvpy_IndexError, "index %lld is out of range for a dataset of %lld rows",
                   (long long)i, (long long)n);
      return NULL;
    }
    if (i < 0) i += n;
    qv_array *b = NULL;
    qv_error err;
    qv_status st = qv_dataset_row(self->ds, i, &b, &err);
    if (st != QV_OK) return qvpy_raise_qv(st, &err);
    PyObject *r = qvpy_mapped_bytes_there(b) ? qvpy_row_dict(b, 0) : NULL;
    qv_array_unref(b);
    return r;
  }
  if (PyList_Check(key) || PyTuple_Check(key) || PyRange_Check(key) || is_row_array(key)) {
    int64_t *rows = NULL, m = 0;
    if (!qvpy_arg_rows(key, n, true, &rows, &m)) return NULL;
    PyObject *r = take_columns(self->ds, rows, m);
    PyMem_Free(rows);
    return r;
  }
  PyErr_Format(qvpy_TypeError,
               "dataset indices must be an int, a slice, a list of ints or a "
               "column name, not %.100s",
               Py_TYPE(key)->tp_name);
  return NULL;
}

/* ds[key]: Python values from C without a format, else the format's
 * (quiver._formats.getitem); ds["col"] is always quiver._formats' (a lazy
 * Column, as datasets 5). */
static PyObject *Dataset_getitem(DatasetObject *self, PyObject *key) {
  if (self->format == NULL && !PyUnicode_Check(key)) return getitem_python(self, key);
  PyObject *a = PyTuple_Pack(1, key);
  PyObject *r = a ? qvpy_call_formats("getitem", (PyObject *)self, a, NULL) : NULL;
  Py_XDECREF(a);
  return r;
}

static PyObject *Dataset_getitem_python(DatasetObject *self, PyObject *key) {
  return getitem_python(self, key);
}

/* A table as an object with __arrow_c_stream__ (quiver._formats wraps the
 * capsule). */
static PyObject *table_stream(qv_table *t) {
  struct ArrowArrayStream *s = NULL;
  PyObject *cap =
      qvpy_new_capsule(sizeof *s, "arrow_array_stream", qvpy_stream_capsule_free, (void **)&s);
  qv_error err;
  qv_status st = cap ? qv_table_export_stream(t, s, &err) : QV_OK;
  qv_table_unref(t);
  if (st != QV_OK) {
    Py_DECREF(cap);
    return qvpy_raise_qv(st, &err);
  }
  return cap;
}

/* Dataset._arrow(key): the rows (or column) ds[key] selects, as Arrow data
 * for quiver._formats: an "arrow_array_stream" capsule for an int, a slice
 * of step 1 and a column name (zero copy from the mapping without an
 * indices mapping), a quiver.Batch of the rows gathered for other slices
 * and row lists. */
static PyObject *Dataset_arrow(DatasetObject *self, PyObject *key) {
  int64_t n = qv_dataset_num_rows(self->ds);
  qv_table *t = NULL;
  qv_error err;
  qv_status st;
  if (PyUnicode_Check(key)) {
    const char *name = PyUnicode_AsUTF8(key);
    if (name == NULL) return NULL;
    if (qv_dataset_column_index(self->ds, name) < 0)
      return getitem_python(self, key); /* raises the KeyError */
    Py_BEGIN_ALLOW_THREADS st = qv_dataset_column(self->ds, name, &t, &err);
    Py_END_ALLOW_THREADS return st == QV_OK ? table_stream(t) : qvpy_raise_qv(st, &err);
  }
  int64_t first = 0, len = 0;
  int64_t *rows = NULL;
  if (PySlice_Check(key)) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) return NULL;
    Py_ssize_t l = PySlice_AdjustIndices((Py_ssize_t)n, &start, &stop, step);
    if (step == 1) {
      first = start;
      len = l;
    } else {
      rows = PyMem_Malloc((size_t)(l > 0 ? l : 1) * sizeof *rows);
      if (rows == NULL) return PyErr_NoMemory();
      for (Py_ssize_t i = 0; i < l; i++) rows[i] = (int64_t)(start + i * step);
      len = l;
    }
  } else if (PyIndex_Check(key) && !PyBool_Check(key) && !is_row_array(key)) {
    if (!qvpy_arg_int64(key, "index", &first)) return NULL;
    if (first < -n || first >= n)
      return PyErr_Format(qvpy_IndexError,
                          "index %lld is out of range for a dataset of %lld "
                          "rows",
                          (long long)first, (long long)n);
    if (first < 0) first += n;
    len = 1;
  } else if (PyList_Check(key) || PyTuple_Check(key) || PyRange_Check(key) || is_row_array(key)) {
    if (!qvpy_arg_rows(key, n, true, &rows, &len)) return NULL;
  } else {
    return getitem_python(self, key); /* raises the TypeError */
  }
  if (rows == NULL) {
    Py_BEGIN_ALLOW_THREADS st = qv_dataset_slice(self->ds, first, len, &t, &err);
    Py_END_ALLOW_THREADS return st == QV_OK ? table_stream(t) : qvpy_raise_qv(st, &err);
  }
  qv_array *b = NULL;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_take(self->ds, rows, len, &b, &err);
  Py_END_ALLOW_THREADS PyMem_Free(rows);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  return qvpy_new_batch(b, (qv_schema *)qv_dataset_schema(self->ds));
}

/* Dataset._with_format(state): a new Dataset object over the same dataset
 * (same origin) with this format state (None: none). */
static PyObject *Dataset_with_format_state(DatasetObject *self, PyObject *state) {
  PyObject *r = wrap(qv_dataset_ref(self->ds));
  if (r == NULL) return NULL;
  ((DatasetObject *)r)->origin = Py_XNewRef(self->origin);
  ((DatasetObject *)r)->format = state == Py_None ? NULL : Py_NewRef(state);
  return r;
}

static PyObject *Dataset_format_state(DatasetObject *self, void *c) {
  return Py_NewRef(self->format ? self->format : Py_None);
}

static int Dataset_set_format_state(DatasetObject *self, PyObject *v, void *c) {
  if (v == NULL) v = Py_None;
  Py_XSETREF(self->format, v == Py_None ? NULL : Py_NewRef(v));
  return 0;
}

/* Methods implemented in quiver/_formats.py (format glue, no per-value
 * work): each forwards self and its arguments. */
#define FORMATS_METHOD(name)                                                                       \
  static PyObject *Dataset_##name(DatasetObject *self, PyObject *args, PyObject *kwargs) {         \
    return qvpy_call_formats(#name, (PyObject *)self, args, kwargs);                               \
  }
FORMATS_METHOD(with_format)
FORMATS_METHOD(set_format)
FORMATS_METHOD(reset_format)
FORMATS_METHOD(formatted_as)
FORMATS_METHOD(with_transform)
FORMATS_METHOD(set_transform)
FORMATS_METHOD(getitems)
#undef FORMATS_METHOD

static PyObject *Dataset_format(DatasetObject *self, void *c) {
  return qvpy_call_formats("format", (PyObject *)self, NULL, NULL);
}

static PyObject *Dataset_select(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"indices", "cache", NULL};
  PyObject *idx;
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$p:select", kw, &idx, &cache)) return NULL;
  int64_t *rows = NULL, n = 0;
  if (!qvpy_arg_rows(idx, qv_dataset_num_rows(self->ds), false, &rows, &n)) return NULL;
  qv_dataset_options o = qvpy_options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_select(self->ds, rows, n, &o, &out, &err);
  Py_END_ALLOW_THREADS PyMem_Free(rows);
  return qvpy_derive(self, qvpy_result(st, out, &err), "select", args, kwargs);
}

static PyObject *Dataset_shuffle(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"seed", "cache", NULL};
  PyObject *seed_obj = Py_None;
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$p:shuffle", kw, &seed_obj, &cache))
    return NULL;
  uint64_t seed;
  if (!qvpy_arg_seed(seed_obj, &seed)) return NULL;
  qv_dataset_options o = qvpy_options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_shuffle(self->ds, seed, &o, &out, &err);
  Py_END_ALLOW_THREADS
      /* the origin holds the seed used (drawn when seed=None) */
      PyObject *r = qvpy_result(st, out, &err);
  PyObject *a = r ? Py_BuildValue("(K)", (unsigned long long)seed) : NULL;
  PyObject *k = a ? Py_BuildValue("{s:O}", "cache", cache ? Py_True : Py_False) : NULL;
  if (r != NULL && k == NULL) Py_CLEAR(r);
  else r = qvpy_derive(self, r, "shuffle", a, k);
  Py_XDECREF(a);
  Py_XDECREF(k);
  return r;
}

static PyObject *Dataset_sort(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"column_names", "reverse", "null_placement", "cache", NULL};
  PyObject *cols_obj, *rev_obj = Py_False;
  const char *placement = "at_end";
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Os$p:sort", kw, &cols_obj, &rev_obj, &placement,
                                   &cache))
    return NULL;
  qv_null_placement nulls;
  if (strcmp(placement, "at_end") == 0 || strcmp(placement, "last") == 0) nulls = QV_NULLS_AT_END;
  else if (strcmp(placement, "at_start") == 0 || strcmp(placement, "first") == 0)
    nulls = QV_NULLS_AT_START;
  else
    return PyErr_Format(qvpy_ValueError,
                        "null_placement must be 'at_end' or 'at_start', "
                        "found '%s'",
                        placement);
  PyObject *keep = NULL;
  const char **cols = NULL;
  int32_t n = 0;
  if (!qvpy_arg_names(cols_obj, "column_names", &keep, &cols, &n)) return NULL;
  bool *desc = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *desc);
  if (desc == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  if (PyBool_Check(rev_obj)) {
    for (int32_t i = 0; i < n; i++) desc[i] = rev_obj == Py_True;
  } else if (PyList_Check(rev_obj) || PyTuple_Check(rev_obj)) {
    if (PySequence_Size(rev_obj) != n) {
      PyErr_Format(qvpy_ValueError, "reverse has %zd values for %d columns",
                   PySequence_Size(rev_obj), (int)n);
      goto done;
    }
    for (int32_t i = 0; i < n; i++) {
      PyObject *b = PySequence_Fast_GET_ITEM(rev_obj, i);
      if (!PyBool_Check(b)) {
        PyErr_Format(qvpy_TypeError, "reverse must hold bools, found %.100s", Py_TYPE(b)->tp_name);
        goto done;
      }
      desc[i] = b == Py_True;
    }
  } else {
    PyErr_Format(qvpy_TypeError, "reverse must be a bool or a list of bools, not %.100s",
                 Py_TYPE(rev_obj)->tp_name);
    goto done;
  }
  if (n == 0) {
    PyErr_SetString(qvpy_ValueError, "sort needs at least one column");
    goto done;
  }
  qv_dataset_options o = qvpy_options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_sort(self->ds, cols, n, desc, nulls, &o, &out, &err);
  Py_END_ALLOW_THREADS PyMem_Free(desc);
  PyMem_Free(cols);
  Py_DECREF(keep);
  return qvpy_derive(self, qvpy_result(st, out, &err), "sort", args, kwargs);
done:
  PyMem_Free(desc);
  PyMem_Free(cols);
  Py_DECREF(keep);
  return NULL;
}

static PyObject *Dataset_shard(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"num_shards", "index", "contiguous", NULL};
  PyObject *ns_obj, *ix_obj;
  int contiguous = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p:shard", kw, &ns_obj, &ix_obj, &contiguous))
    return NULL;
  int64_t ns, ix;
  if (!qvpy_arg_int64(ns_obj, "num_shards", &ns) || !qvpy_arg_int64(ix_obj, "index", &ix))
    return NULL;
  if (ns < 1)
    return PyErr_Format(qvpy_ValueError, "num_shards must be >= 1, found %lld", (long long)ns);
  if (ix < 0 || ix >= ns)
    return PyErr_Format(qvpy_ValueError, "index %lld is out of range for %lld shards",
                        (long long)ix, (long long)ns);
  qv_dataset_options o = qvpy_options(0);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_shard(self->ds, ns, ix, contiguous != 0, &o, &out, &err);
  Py_END_ALLOW_THREADS return qvpy_derive(self, qvpy_result(st, out, &err), "shard", args, kwargs);
}

/* test_size / train_size: None, a float fraction or an int count. */
static bool arg_split_size(PyObject *o, const char *what, qv_split_size *out) {
  memset(out, 0, sizeof *out);
  if (o == Py_None) return true;
  if (PyFloat_Check(o)) {
    out->kind = QV_SIZE_FRACTION;
    out->fraction = PyFloat_AS_DOUBLE(o);
    return true;
  }
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    out->kind = QV_SIZE_COUNT;
    return qvpy_arg_int64(o, what, &out->count);
  }
  PyErr_Format(qvpy_TypeError, "%s must be a float, an int or None, not %.100s", what,
               Py_TYPE(o)->tp_name);
  return false;
}

static PyObject *Dataset_train_test_split(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"test_size", "train_size", "shuffle", "seed", "cache", NULL};
  PyObject *test_obj = Py_None, *train_obj = Py_None, *seed_obj = Py_None;
  int shuffle = 1, cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOpO$p:train_test_split", kw, &test_obj,
                                   &train_obj, &shuffle, &seed_obj, &cache))
    return NULL;
  qv_split_size test, train;
  uint64_t seed = 0;
  if (!arg_split_size(test_obj, "test_size", &test) ||
      !arg_split_size(train_obj, "train_size", &train))
    return NULL;
  if (shuffle && !qvpy_arg_seed(seed_obj, &seed)) return NULL;
  qv_dataset_options o = qvpy_options(cache);
  qv_dataset *tr = NULL, *te = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st =
      qv_dataset_train_test_split(self->ds, test, train, shuffle != 0, seed, &o, &tr, &te, &err);
  Py_END_ALLOW_THREADS if (st != QV_OK) return qvpy_raise_qv(st, &err);
  PyObject *a = wrap(tr);
  PyObject *b = wrap(te);
  /* the origins hold the seed used (drawn when seed=None) */
  PyObject *kw2 = Py_BuildValue("{s:O,s:O,s:O,s:K,s:O}", "test_size", test_obj, "train_size",
                                train_obj, "shuffle", shuffle ? Py_True : Py_False, "seed",
                                (unsigned long long)seed, "cache", cache ? Py_True : Py_False);
  if (kw2 == NULL) Py_CLEAR(a);
  a = qvpy_derive(self, a, "train_test_split:train", NULL, kw2);
  b = qvpy_derive(self, b, "train_test_split:test", NULL, kw2);
  Py_XDECREF(kw2);
  PyObject *d = a && b ? Py_BuildValue("{s:O,s:O}", "train", a, "test", b) : NULL;
  Py_XDECREF(a);
  Py_XDECREF(b);
  return d == NULL ? NULL : qvpy_call_python("quiver.dataset_dict", "DatasetDict", d);
}

static PyObject *Dataset_flatten_indices(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"cache", NULL};
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:flatten_indices", kw, &cache)) return NULL;
  qv_dataset_options o = qvpy_options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS st = qv_dataset_flatten_indices(self->ds, &o, &out, &err);
  Py_END_ALLOW_THREADS return qvpy_derive(self, qvpy_result(st, out, &err), "flatten_indices", args,
                                          kwargs);
}

typedef qv_status (*names_fn)(qv_dataset *, const char *const *, int32_t, qv_dataset **,
                              qv_error *);

static PyObject *names_transform(DatasetObject *self, PyObject *arg, const char *what,
                                 const char *op, names_fn fn) {
  PyObject *keep = NULL;
  const char **names = NULL;
  int32_t n = 0;
  if (!qvpy_arg_names(arg, what, &keep, &names, &n)) return NULL;
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st = fn(self->ds, names, n, &out, &err);
  PyMem_Free(names);
  Py_DECREF(keep);
  PyObject *a = PyTuple_Pack(1, arg);
  PyObject *r = qvpy_derive(self, qvpy_result(st, out, &err), op, a, NULL);
  if (a == NULL) Py_CLEAR(r);
  Py_XDECREF(a);
  return r;
}

static PyObject *Dataset_select_columns(DatasetObject *self, PyObject *arg) {
  return names_transform(self, arg, "column_names", "select_columns", qv_dataset_select_columns);
}

static PyObject *Dataset_remove_columns(DatasetObject *self, PyObject *arg) {
  return names_transform(self, arg, "column_names", "remove_columns", qv_dataset_remove_columns);
}

/* Rename; `op` and `args` (the method's) for the result's origin. */
static PyObject *do_rename(DatasetObject *self, const char *const *from, const char *const *to,
                           int32_t n, const char *op, PyObject *args) {
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st = qv_dataset_rename_columns(self->ds, from, to, n, &out, &err);
  return qvpy_derive(self, qvpy_result(st, out, &err), op, args, NULL);
}

static PyObject *Dataset_rename_column(DatasetObject *self, PyObject *args) {
  const char *from, *to;
  if (!PyArg_ParseTuple(args, "ss:rename_column", &from, &to)) return NULL;
  return do_rename(self, &from, &to, 1, "rename_column", args);
}

static PyObject *Dataset_rename_columns(DatasetObject *self, PyObject *mapping) {
  if (!PyDict_Check(mapping))
    return PyErr_Format(qvpy_TypeError, "rename_columns takes a dict {old: new}, not %.100s",
                        Py_TYPE(mapping)->tp_name);
  Py_ssize_t n = PyDict_Size(mapping), pos = 0, i = 0;
  const char **from = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *from);
  const char **to = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *to);
  PyObject *k, *v, *r = NULL;
  if (from == NULL || to == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  while (PyDict_Next(mapping, &pos, &k, &v)) {
    if (!PyUnicode_Check(k) || !PyUnicode_Check(v)) {
      PyErr_SetString(qvpy_TypeError, "rename_columns: names must be str");
      goto done;
    }
    if ((from[i] = PyUnicode_AsUTF8(k)) == NULL || (to[i] = PyUnicode_AsUTF8(v)) == NULL) goto done;
    i++;
  }
  PyObject *a = PyTuple_Pack(1, mapping);
  r = a ? do_rename(self, from, to, (int32_t)n, "rename_columns", a) : NULL;
  Py_XDECREF(a);
done:
  PyMem_Free(from);
  PyMem_Free(to);
  return r;
}

bool qvpy_save_options(PyObject *size_obj, PyObject *shards_obj, qv_save_options *so) {
  memset(so, 0, sizeof *so);
  if (size_obj != Py_None) {
    if (PyUnicode_Check(size_obj)) {
      const char *text = PyUnicode_AsUTF8(size_obj);
      if (text == NULL) return false;
      qv_error err;
      qv_status st = qv_hf_parse_size(text, &so->max_shard_size, &err);
      if (st != QV_OK) {
        PyErr_Format(qvpy_ValueError, "max_shard_size: %s", err.message);
        return false;
      }
    } else if (!qvpy_arg_int64(size_obj, "max_shard_size", &so->max_shard_size)) {
      return false;
    }
    if (so->max_shard_size <= 0) {
      PyErr_SetString(qvpy_ValueError, "max_shard_size must be positive");
      return false;
    }
  }
  if (shards_obj != Py_None) {
    if (!qvpy_arg_int64(shards_obj, "num_shards", &so->num_shards)) return false;
    if (so->num_shards <= 0) {
      PyErr_SetString(qvpy_ValueError, "num_shards must be positive");
      return false;
    }
  }
  return true;
}

static PyObject *Dataset_save_to_disk(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"dataset_path", "max_shard_size", "num_shards", NULL};
  PyObject *path = NULL, *size_obj = Py_None, *shards_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|OO:save_to_disk", kw, PyUnicode_FSConverter,
                                   &path, &size_obj, &shards_obj))
    return NULL;
  qv_save_options so;
  qv_error err;
  PyObject *r = NULL;
  if (qvpy_save_options(size_obj, shards_obj, &so)) {
    qv_status st;
    Py_BEGIN_ALLOW_THREADS st =
        qv_dataset_save_to_disk(self->ds, PyBytes_AS_STRING(path), &so, NULL, &err);
    Py_END_ALLOW_THREADS if (st != QV_OK) qvpy_raise_qv(st, &err);
    else r = Py_NewRef(Py_None); }
  Py_DECREF(path);
  return r;
}

static PyObject *Dataset_arrow_c_schema(DatasetObject *self, PyObject *unused) {
  return qvpy_schema_capsule(qv_dataset_schema(self->ds));
}

static PyObject *Dataset_arrow_c_stream(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"requested_schema", NULL};
  PyObject *req = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:__arrow_c_stream__", kw, &req)) return NULL;
  if (!qvpy_check_requested(req, qv_dataset_schema(self->ds))) return NULL;
  struct ArrowArrayStream *s = NULL;
  PyObject *cap =
      qvpy_new_capsule(sizeof *s, "arrow_array_stream", qvpy_stream_capsule_free, (void **)&s);
  if (cap == NULL) return NULL;
  qv_error err;
  qv_status st = qv_dataset_export_stream(self->ds, 0, s, &err);
  if (st != QV_OK) {
    Py_DECREF(cap);
    return qvpy_raise_qv(st, &err);
  }
  return cap;
}

/* ---- iteration ---------------------------------------------------------- */

typedef struct {
  PyObject_HEAD qv_dataset_iter *it;
  qv_schema *schema; /* reference (BatchIter) */
  qv_array *batch;   /* current batch (RowIter) */
  int64_t pos;       /* next row in batch (RowIter) */
} IterObject;

static PyObject *new_iter(PyTypeObject *type, qv_dataset *ds, int64_t batch_size, bool drop_last) {
  IterObject *o = PyObject_New(IterObject, type);
  if (o == NULL) return NULL;
  o->it = NULL;
  o->batch = NULL;
  o->pos = 0;
  o->schema = qv_schema_ref((qv_schema *)qv_dataset_schema(ds));
  qv_error err;
  qv_status st = qv_dataset_iter_new(ds, batch_size, drop_last, &o->it, &err);
  if (st != QV_OK) {
    Py_DECREF(o);
    return qvpy_raise_qv(st, &err);
  }
  return (PyObject *)o;
}

static void Iter_dealloc(IterObject *self) {
  qv_dataset_iter_free(self->it);
  qv_array_unref(self->batch);
  qv_schema_unref(self->schema);
  PyObject_Free(self);
}

static PyObject *RowIter_next(IterObject *self) {
  while (self->batch == NULL || self->pos >= self->batch->length) {
    qv_array_unref(self->batch);
    self->batch = NULL;
    self->pos = 0;
    if (self->it == NULL) return NULL;
    qv_error err;
    qv_status st = qv_dataset_iter_next(self->it, &self->batch, NULL, &err);
    if (st != QV_OK) return qvpy_raise_qv(st, &err);
    if (self->batch == NULL) {
      qv_dataset_iter_free(self->it);
      self->it = NULL;
      return NULL; /* StopIteration */
    }
    if (!qvpy_mapped_bytes_there(self->batch)) {
      qv_array_unref(self->batch);
      self->batch = NULL;
      return NULL;
    }
  }
  return qvpy_row_dict(self->batch, self->pos++);
}

static PyObject *BatchIter_next(IterObject *self) {
  if (self->it == NULL) return NULL;
  qv_array *b = NULL;
  qv_error err;
  qv_status st = qv_dataset_iter_next(self->it, &b, NULL, &err);
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  if (b == NULL) {
    qv_dataset_iter_free(self->it);
    self->it = NULL;
    return NULL;
  }
  return qvpy_new_batch(b, self->schema);
}

PyTypeObject qvpy_RowIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._RowIterator",
    .tp_basicsize = sizeof(IterObject),
    .tp_dealloc = (destructor)Iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)RowIter_next,
};

PyTypeObject qvpy_BatchIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._BatchIterator",
    .tp_basicsize = sizeof(IterObject),
    .tp_dealloc = (destructor)Iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)BatchIter_next,
};

static PyObject *Dataset_iter_rows(DatasetObject *self) {
  return new_iter(&qvpy_RowIterType, self->ds, QVPY_ROW_BATCH, false);
}

/* Dataset.iter_batches(batch_size, drop_last_batch): quiver.Batch objects. */
static PyObject *Dataset_batches(DatasetObject *self, PyObject *args) {
  PyObject *bs_obj;
  int drop_last = 0;
  if (!PyArg_ParseTuple(args, "O|p:iter_batches", &bs_obj, &drop_last)) return NULL;
  int64_t bs;
  if (!qvpy_arg_int64(bs_obj, "batch_size", &bs)) return NULL;
  if (bs < 1)
    return PyErr_Format(qvpy_ValueError, "batch_size must be >= 1, found %lld", (long long)bs);
  return new_iter(&qvpy_BatchIterType, self->ds, bs, drop_last != 0);
}

/* iter(ds): rows, in the format when there is one. */
static PyObject *Dataset_tp_iter(DatasetObject *self) {
  if (self->format != NULL) return qvpy_call_formats("iterate", (PyObject *)self, NULL, NULL);
  return Dataset_iter_rows(self);
}

/* iter(batch_size=None, drop_last_batch=False): rows (batch_size=None) or
 * batches in the dataset's format, {column: [values]} without one; rows
 * without a format straight from C, the rest by quiver._formats.iter. */
static PyObject *Dataset_iter(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"batch_size", "drop_last_batch", NULL};
  PyObject *bs_obj = Py_None;
  int drop_last = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Op:iter", kw, &bs_obj, &drop_last)) return NULL;
  if (self->format != NULL) return qvpy_call_formats("iterate", (PyObject *)self, args, kwargs);
  if (bs_obj == Py_None) return Dataset_iter_rows(self);
  return qvpy_call_formats("iterate", (PyObject *)self, args, kwargs);
}

static PyMethodDef Dataset_methods[] = {
    {"join", (PyCFunction)(void (*)(void))qvpy_Dataset_join, METH_VARARGS | METH_KEYWORDS,
     "join($self, /, other, on=None, how='inner', *, left_on=None, right_on=None, "
     "suffixes=None)\n--\n\nHash join with another Dataset (docs/compute.md): "
     "inner, left, right, full (outer), semi, anti; suffixes: a (left, right) pair, "
     "default ('', '_right')."},
    {"distinct", (PyCFunction)(void (*)(void))qvpy_Dataset_distinct, METH_VARARGS | METH_KEYWORDS,
     "distinct($self, /, column_names=None)\n--\n\nThe first row of each distinct key of the "
     "columns (all columns when None), in order of first appearance."},
    {"value_counts", (PyCFunction)qvpy_Dataset_value_counts, METH_O,
     "value_counts($self, column, /)\n--\n\nA Dataset of each distinct value ('values') and "
     "its count ('counts'), in order of first appearance (pyarrow's value_counts)."},
    {"unique", (PyCFunction)qvpy_Dataset_unique, METH_O,
     "unique($self, column, /)\n--\n\nThe distinct values of a column as a list, in order of "
     "first appearance (datasets' unique)."},
    {"select", (PyCFunction)(void (*)(void))Dataset_select, METH_VARARGS | METH_KEYWORDS,
     "select($self, /, indices, *, cache=False)\n--\n\nThe rows at these positions (an iterable of "
     "ints)."},
    {"shuffle", (PyCFunction)(void (*)(void))Dataset_shuffle, METH_VARARGS | METH_KEYWORDS,
     "shuffle($self, /, seed=None, *, cache=False)\n--\n\nRows in numpy "
     "default_rng(seed).permutation order, "
     "as datasets' shuffle."},
    {"sort", (PyCFunction)(void (*)(void))Dataset_sort, METH_VARARGS | METH_KEYWORDS,
     "sort($self, /, column_names, reverse=False, null_placement='at_end', *, cache=False)"
     "\n--\n\nStable sort by one column or a list of columns."},
    {"filter", (PyCFunction)(void (*)(void))qvpy_Dataset_filter, METH_VARARGS | METH_KEYWORDS,
     "filter($self, /, function, *, batched=False, batch_size=1000, new_fingerprint=None, "
     "cache=False)\n--\n\nThe rows where the expression string (docs/expressions.md) is true, or "
     "for which the "
     "callable returns a true value (batched: a list of them per batch of columns)."},
    {"map", (PyCFunction)(void (*)(void))qvpy_Dataset_map, METH_VARARGS | METH_KEYWORDS,
     "map($self, /, function=None, *, set=None, batched=False, batch_size=1000, "
     "remove_columns=None, num_proc=None, new_fingerprint=None, cache=False)\n--\n\ndatasets' map "
     "with a Python callable "
     "(row dict -> dict of columns, or batched: dict of column lists -> dict of column lists "
     "or Arrow arrays), or with set={name: expression} evaluated in C (docs/python.md)."},
    {"shard", (PyCFunction)(void (*)(void))Dataset_shard, METH_VARARGS | METH_KEYWORDS,
     "shard($self, /, num_shards, index, contiguous=True)\n--\n\nOne shard, as datasets' shard."},
    {"train_test_split", (PyCFunction)(void (*)(void))Dataset_train_test_split,
     METH_VARARGS | METH_KEYWORDS,
     "train_test_split($self, /, test_size=None, train_size=None, shuffle=True, seed=None, *, "
     "cache=False)\n--\n\n{'train': Dataset, 'test': Dataset}."},
    {"flatten_indices", (PyCFunction)(void (*)(void))Dataset_flatten_indices,
     METH_VARARGS | METH_KEYWORDS,
     "flatten_indices($self, /, *, cache=False)\n--\n\nThe rows as mapped, materialised without a "
     "mapping."},
    {"select_columns", (PyCFunction)Dataset_select_columns, METH_O,
     "select_columns($self, column_names, /)\n--\n\nOnly these columns, in this order."},
    {"remove_columns", (PyCFunction)Dataset_remove_columns, METH_O,
     "remove_columns($self, column_names, /)\n--\n\nWithout these columns."},
    {"rename_column", (PyCFunction)Dataset_rename_column, METH_VARARGS,
     "rename_column($self, original_column_name, new_column_name, /)\n--\n\nOne column renamed."},
    {"rename_columns", (PyCFunction)Dataset_rename_columns, METH_O,
     "rename_columns($self, column_mapping, /)\n--\n\nColumns renamed by a dict {old: new, ...}."},
    {"save_to_disk", (PyCFunction)(void (*)(void))Dataset_save_to_disk,
     METH_VARARGS | METH_KEYWORDS,
     "save_to_disk($self, /, dataset_path, max_shard_size=None, num_shards=None)\n--\n\nWrite the "
     "save_to_disk layout datasets.load_from_disk reads."},
    {"iter", (PyCFunction)(void (*)(void))Dataset_iter, METH_VARARGS | METH_KEYWORDS,
     "iter($self, /, batch_size=None, drop_last_batch=False)\n--\n\nBatches of batch_size rows in "
     "the "
     "dataset's format ({column: [values]} without one); rows for batch_size=None."},
    {"iter_batches", (PyCFunction)Dataset_batches, METH_VARARGS,
     "iter_batches($self, batch_size, drop_last_batch=False, /)\n--\n\nquiver.Batch objects of "
     "batch_size rows (zero copy without an indices mapping), "
     "whatever the format."},
    {"_arrow", (PyCFunction)Dataset_arrow, METH_O,
     "_arrow($self, key, /)\n--\n\nThe rows or column ds[key] selects as Arrow data (an "
     "'arrow_array_stream' "
     "capsule or a quiver.Batch), for quiver._formats."},
    {"_getitem_python", (PyCFunction)Dataset_getitem_python, METH_O,
     "_getitem_python($self, key, /)\n--\n\nds[key] as Python values, whatever the format."},
    {"_with_format", (PyCFunction)Dataset_with_format_state, METH_O,
     "_with_format($self, state, /)\n--\n\nA new Dataset object over the same data with this "
     "format state."},
#define FM(name, sig, doc)                                                                         \
  {                                                                                                \
#name, (PyCFunction)(void (*)(void))Dataset_##name, METH_VARARGS | METH_KEYWORDS,              \
        #name "($self, /, " sig ")\n--\n\n" doc                                                    \
  }
    FM(with_format, "type=None, columns=None, output_all_columns=False, **format_kwargs",
       "A new Dataset object returning rows in this format (datasets' with_format)."),
    FM(set_format, "type=None, columns=None, output_all_columns=False, **format_kwargs",
       "Set the output format in place (datasets' set_format)."),
    FM(reset_format, "", "Back to Python values in place (datasets' reset_format)."),
    FM(formatted_as, "type=None, columns=None, output_all_columns=False, **format_kwargs",
       "A context manager setting the format for its block (datasets' formatted_as)."),
    FM(with_transform, "transform, columns=None, output_all_columns=False",
       "A new Dataset object applying transform to formatted batches (datasets' with_transform)."),
    FM(set_transform, "transform, columns=None, output_all_columns=False",
       "Set a transform in place (datasets' set_transform)."),
#undef FM
    {"__getitems__", (PyCFunction)(void (*)(void))Dataset_getitems, METH_VARARGS | METH_KEYWORDS,
     "__getitems__($self, keys, /)\n--\n\nds[keys] as a list of row dicts (what torch's DataLoader "
     "calls)."},
    {"_recipes", (PyCFunction)qvpy_Dataset_recipes, METH_NOARGS,
     "_recipes($self, /)\n--\n\n(data table recipe, indices mapping recipe or None) as bytes "
     "(qv_table_recipe; used by pickling)."},
    {"__reduce__", (PyCFunction)qvpy_Dataset_reduce, METH_NOARGS,
     "__reduce__($self, /)\n--\n\nPickle as the dataset's recipe (docs/python.md, "
     "\"Pickling\")."},
    {"__arrow_c_schema__", (PyCFunction)Dataset_arrow_c_schema, METH_NOARGS,
     "__arrow_c_schema__($self, /)\n--\n\nThe schema as an 'arrow_schema' PyCapsule."},
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))Dataset_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_stream__($self, /, requested_schema=None)\n--\n\nThe rows as an "
     "'arrow_array_stream' "
     "PyCapsule (zero copy without an indices mapping)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Dataset_getset[] = {
    {"num_rows", (getter)Dataset_num_rows, NULL, "Number of rows (through the mapping).", NULL},
    {"num_columns", (getter)Dataset_num_columns, NULL, "Number of columns.", NULL},
    {"column_names", (getter)Dataset_column_names, NULL, "Column names.", NULL},
    {"fingerprint", (getter)Dataset_fingerprint, NULL, "The datasets fingerprint.", NULL},
    {"features", (getter)Dataset_features, NULL,
     "The features: a quiver.Features (datasets' Features.to_dict() form with .to_dict()).", NULL},
    {"split", (getter)Dataset_split, NULL, "The split name, or None.", NULL},
    {"_origin", (getter)qvpy_Dataset_origin, NULL,
     "How the dataset was made (plain data replayed when unpickling), or None.", NULL},
    {"format", (getter)Dataset_format, NULL,
     "The output format, as datasets' format: {'type', 'format_kwargs', 'columns', "
     "'output_all_columns'}.",
     NULL},
    {"_format", (getter)Dataset_format_state, (setter)Dataset_set_format_state,
     "The format state (quiver._formats), or None.", NULL},
    {"cache_files", (getter)Dataset_cache_files, NULL,
     "The files mapped behind the dataset, as [{'filename': path}, ...].", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMappingMethods Dataset_as_mapping = {
    .mp_length = (lenfunc)Dataset_len,
    .mp_subscript = (binaryfunc)Dataset_getitem,
};

static PySequenceMethods Dataset_as_sequence = {.sq_length = (lenfunc)Dataset_len};

PyTypeObject qvpy_DatasetType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver.Dataset",
    .tp_basicsize = sizeof(DatasetObject),
    .tp_dealloc = (destructor)Dataset_dealloc,
    .tp_repr = (reprfunc)Dataset_repr,
    .tp_as_sequence = &Dataset_as_sequence,
    .tp_as_mapping = &Dataset_as_mapping,
    .tp_iter = (getiterfunc)Dataset_tp_iter,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "A dataset (Hugging Face datasets' Dataset) over memory-mapped Arrow files. "
        "Immutable: transforms return new datasets. Open one with quiver.open(path).",
    .tp_methods = Dataset_methods,
    .tp_getset = Dataset_getset,
    .tp_new = Dataset_new,
};
