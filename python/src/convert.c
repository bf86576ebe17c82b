/*
 * convert.c — Python values -> Arrow arrays for the CPython extension
 * (python/ layer): the columns map functions return (lists, inferred as
 * pyarrow infers, or objects with __arrow_c_array__, imported zero-copy).
 */
#include "qvpy.h"

/* ------------------------------------------------------------------------ */
/* Python values -> Arrow arrays (what map functions return)                 */

/* Kinds of Python values a column may hold, inferred as pyarrow does. */
enum { K_NONE, K_BOOL, K_INT, K_FLOAT, K_STR, K_BYTES, K_LIST, K_STRUCT };
static const char *const kind_names[] = {"None", "bool",  "int",  "float",
                                         "str",  "bytes", "list", "dict"};

/* The inferred type of a column (or of list items, struct fields). */
typedef struct inferred {
  int kind;
  struct inferred *item;    /* K_LIST */
  PyObject *names;          /* K_STRUCT: list of the keys, in order of first appearance */
  struct inferred **fields; /* K_STRUCT: one per name */
} inferred;

static void inf_free(inferred *t) {
  if (t == NULL) return;
  inf_free(t->item);
  Py_ssize_t n = t->names ? PyList_GET_SIZE(t->names) : 0;
  for (Py_ssize_t i = 0; i < n; i++) inf_free(t->fields[i]);
  PyMem_Free(t->fields);
  Py_XDECREF(t->names);
  PyMem_Free(t);
}

static inferred *inf_new(void) {
  inferred *t = PyMem_Calloc(1, sizeof *t);
  if (t == NULL) PyErr_NoMemory();
  return t;
}

static int kind_of(PyObject *v) {
  if (v == Py_None) return K_NONE;
  if (PyBool_Check(v)) return K_BOOL;
  if (PyLong_Check(v)) return K_INT;
  if (PyFloat_Check(v)) return K_FLOAT;
  if (PyUnicode_Check(v)) return K_STR;
  if (PyBytes_Check(v)) return K_BYTES;
  if (PyList_Check(v) || PyTuple_Check(v)) return K_LIST;
  if (PyDict_Check(v)) return K_STRUCT;
  return -1;
}

/* Where a value sits, for messages: function `what`, column, dataset row. */
typedef struct val_where {
  const char *what;
  const char *col;
  int64_t row;
} val_where;

static bool infer(inferred *t, PyObject *v, const val_where *w, int depth) {
  if (depth > QVPY_MAX_DEPTH) {
    PyErr_Format(qvpy_TypeError, "%s: column '%s', row %lld: values nested deeper than %d", w->what,
                 w->col, (long long)w->row, QVPY_MAX_DEPTH);
    return false;
  }
  int k = kind_of(v);
  if (k < 0) {
    PyErr_Format(qvpy_TypeError,
                 "%s: column '%s', row %lld: cannot convert a value of type "
                 "%.100s to Arrow (expected None, bool, int, float, str, bytes, list, dict, or "
                 "an array with __arrow_c_array__ for the whole column)",
                 w->what, w->col, (long long)w->row, Py_TYPE(v)->tp_name);
    return false;
  }
  if (k == K_NONE) return true;
  if (t->kind == K_NONE) {
    t->kind = k;
  } else if (t->kind != k) {
    if (t->kind == K_INT && k == K_FLOAT) {
      t->kind = K_FLOAT;
    } else if (!(t->kind == K_FLOAT && k == K_INT)) {
      PyErr_Format(qvpy_TypeError,
                   "%s: column '%s', row %lld: a %s value among %s values (a "
                   "column holds one type; only int and float mix, as float)",
                   w->what, w->col, (long long)w->row, kind_names[k], kind_names[t->kind]);
      return false;
    }
  }
  if (k == K_LIST) {
    if (t->item == NULL && (t->item = inf_new()) == NULL) return false;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    for (Py_ssize_t i = 0; i < n; i++)
      if (!infer(t->item, PySequence_Fast_GET_ITEM(v, i), w, depth + 1)) return false;
  } else if (k == K_STRUCT) {
    if (t->names == NULL && (t->names = PyList_New(0)) == NULL) return false;
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(v, &pos, &key, &val)) {
      if (!PyUnicode_Check(key)) {
        PyErr_Format(qvpy_TypeError,
                     "%s: column '%s', row %lld: dict keys must be str, found "
                     "%.100s",
                     w->what, w->col, (long long)w->row, Py_TYPE(key)->tp_name);
        return false;
      }
      Py_ssize_t n = PyList_GET_SIZE(t->names), j = 0;
      for (; j < n; j++) {
        int c = PyUnicode_Compare(PyList_GET_ITEM(t->names, j), key);
        if (c == -1 && PyErr_Occurred()) return false;
        if (c == 0) break;
      }
      if (j == n) {
        inferred **f = PyMem_Realloc(t->fields, sizeof *f * (size_t)(n + 1));
        if (f == NULL) {
          PyErr_NoMemory();
          return false;
        }
        t->fields = f;
        if ((f[n] = inf_new()) == NULL) return false;
        if (PyList_Append(t->names, key) < 0) {
          inf_free(f[n]);
          return false;
        }
      }
      if (!infer(t->fields[j], val, w, depth + 1)) return false;
    }
  }
  return true;
}

/* The Arrow type of an inferred kind (new reference), or NULL with an error. */
static qv_type *type_of(const inferred *t) {
  static const qv_type_id ids[] = {QV_NA,     QV_BOOL,   QV_INT64, QV_DOUBLE,
                                   QV_STRING, QV_BINARY, QV_LIST,  QV_STRUCT};
  qv_type *ty = qv_type_new(ids[t->kind]);
  if (ty == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  Py_ssize_t n = t->kind == K_LIST ? 1 : t->kind == K_STRUCT ? PyList_GET_SIZE(t->names) : 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    static const inferred none = {K_NONE, NULL, NULL, NULL};
    const inferred *c = t->kind == K_LIST ? (t->item ? t->item : &none) : t->fields[i];
    const char *name = t->kind == K_LIST ? "item" : PyUnicode_AsUTF8(PyList_GET_ITEM(t->names, i));
    qv_type *ct = name ? type_of(c) : NULL;
    qv_error err;
    qv_status st = ct ? qv_type_add_child(ty, name, true, ct, NULL, &err) : QV_OK;
    if (ct != NULL && st != QV_OK) {
      qv_type_unref(ct);
      qvpy_raise_qv(st, &err);
    }
    if (ct == NULL || st != QV_OK) {
      qv_type_unref(ty);
      return NULL;
    }
  }
  return ty;
}

static bool append_value(qv_builder *b, const inferred *t, PyObject *v, const val_where *w) {
  qv_error err;
  qv_status st = QV_OK;
  if (v == Py_None) {
    st = qv_builder_append_null(b, &err);
  } else {
    switch (t->kind) {
      case K_BOOL: st = qv_builder_append_bool(b, v == Py_True, &err); break;
      case K_INT: {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred()) return false;
        if (overflow) {
          PyErr_Format(PyExc_OverflowError,
                       "%s: column '%s', row %lld: int %R does not fit in "
                       "int64",
                       w->what, w->col, (long long)w->row, v);
          return false;
        }
        st = qv_builder_append_int(b, x, &err);
        break;
      }
      case K_FLOAT: {
        double d = PyFloat_Check(v) ? PyFloat_AS_DOUBLE(v) : PyLong_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) return false;
        st = qv_builder_append_double(b, d, &err);
        break;
      }
      case K_STR: {
        Py_ssize_t n = 0;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        if (s == NULL) return false;
        st = qv_builder_append_bytes(b, s, (int64_t)n, &err);
        break;
      }
      case K_BYTES:
        st = qv_builder_append_bytes(b, PyBytes_AS_STRING(v), (int64_t)PyBytes_GET_SIZE(v), &err);
        break;
      case K_LIST: {
        st = qv_builder_begin_list(b, &err);
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        for (Py_ssize_t i = 0; st == QV_OK && i < n; i++)
          if (!append_value(qv_builder_child(b, 0), t->item, PySequence_Fast_GET_ITEM(v, i), w))
            return false;
        if (st == QV_OK) st = qv_builder_end_list(b, &err);
        break;
      }
      case K_STRUCT: {
        st = qv_builder_begin_struct(b, &err);
        Py_ssize_t n = PyList_GET_SIZE(t->names);
        for (Py_ssize_t i = 0; st == QV_OK && i < n; i++) {
          PyObject *x = PyDict_GetItemWithError(v, PyList_GET_ITEM(t->names, i));
          if (x == NULL && PyErr_Occurred()) return false;
          if (!append_value(qv_builder_child(b, (int32_t)i), t->fields[i], x ? x : Py_None, w))
            return false;
        }
        if (st == QV_OK) st = qv_builder_end_struct(b, &err);
        break;
      }
      default: break;
    }
  }
  if (st != QV_OK) {
    qvpy_raise_qv(st, &err);
    return false;
  }
  return true;
}

/* An object with __arrow_c_array__ (pyarrow arrays, record batches...)
 * imported through the C Data Interface (zero copy). */
static bool import_arrow(PyObject *obj, const char *what, qv_array **out) {
  PyObject *pair = PyObject_CallMethod(obj, "__arrow_c_array__", NULL);
  if (pair == NULL) return false;
  struct ArrowSchema *s = NULL;
  struct ArrowArray *a = NULL;
  if (PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2) {
    s = PyCapsule_GetPointer(PyTuple_GET_ITEM(pair, 0), "arrow_schema");
    a = s ? PyCapsule_GetPointer(PyTuple_GET_ITEM(pair, 1), "arrow_array") : NULL;
  }
  if (s == NULL || a == NULL) {
    Py_DECREF(pair);
    if (!PyErr_Occurred())
      PyErr_Format(qvpy_TypeError,
                   "%s: __arrow_c_array__ of %.100s did not return a pair of "
                   "capsules",
                   what, Py_TYPE(obj)->tp_name);
    return false;
  }
  qv_field f;
  memset(&f, 0, sizeof f);
  qv_error err;
  qv_status st = qv_import_field(s, &f, &err);
  if (st == QV_OK) st = qv_import_array(a, f.type, out, &err);
  else if (a->release != NULL) a->release(a);
  qv_import_field_reset(&f);
  Py_DECREF(pair);
  if (st != QV_OK) {
    qvpy_raise_qv(st, &err);
    return false;
  }
  return true;
}

/* quiver._api._to_arrow_column(obj): numpy arrays, pandas Series and lists
 * holding numpy values as an Arrow array (pyarrow, as datasets converts
 * them), or None when it does not apply. A new reference or NULL. */
static PyObject *api_column(PyObject *obj) {
  PyObject *a = PyTuple_Pack(1, obj);
  PyObject *r = a ? qvpy_call_api("_to_arrow_column", NULL, a, NULL) : NULL;
  Py_XDECREF(a);
  return r;
}

/* One column returned by a function: an Arrow array or a list of values
 * (numpy arrays, pandas Series and numpy values through pyarrow). */
static bool column_of(PyObject *obj, const char *what, const char *col, int64_t first_row,
                      qv_array **out) {
  if (PyObject_HasAttrString(obj, "__arrow_c_array__")) return import_arrow(obj, what, out);
  if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
    PyObject *arr = api_column(obj);
    if (arr != NULL && arr != Py_None) {
      bool ok = import_arrow(arr, what, out);
      Py_DECREF(arr);
      return ok;
    }
    Py_XDECREF(arr);
    if (arr == NULL) return false;
    PyErr_Format(qvpy_TypeError,
                 "%s: column '%s': expected a list of values or an Arrow array "
                 "(__arrow_c_array__), not %.100s",
                 what, col, Py_TYPE(obj)->tp_name);
    return false;
  }
  PyObject *seq = PySequence_Fast(obj, "");
  if (seq == NULL) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  inferred *t = inf_new();
  bool ok = t != NULL;
  for (Py_ssize_t i = 0; ok && i < n; i++) {
    val_where w = {what, col, first_row + (int64_t)i};
    ok = infer(t, PySequence_Fast_GET_ITEM(seq, i), &w, 0);
  }
  if (!ok && t != NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
    /* values C does not convert (numpy scalars or arrays): pyarrow's, else
     * the first error */
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    PyObject *arr = api_column(obj);
    if (arr != NULL && arr != Py_None) {
      Py_XDECREF(et);
      Py_XDECREF(ev);
      Py_XDECREF(etb);
      inf_free(t);
      Py_DECREF(seq);
      ok = import_arrow(arr, what, out);
      Py_DECREF(arr);
      return ok;
    }
    Py_XDECREF(arr);
    PyErr_Clear();
    PyErr_Restore(et, ev, etb);
  }
  qv_type *ty = ok ? type_of(t) : NULL;
  qv_builder *b = NULL;
  qv_error err;
  qv_status st = QV_OK;
  if (ty != NULL && (st = qv_builder_new(ty, &b, &err)) != QV_OK) qvpy_raise_qv(st, &err);
  ok = b != NULL;
  for (Py_ssize_t i = 0; ok && i < n; i++) {
    val_where w = {what, col, first_row + (int64_t)i};
    ok = append_value(b, t, PySequence_Fast_GET_ITEM(seq, i), &w);
  }
  if (ok && (st = qv_builder_finish(b, out, &err)) != QV_OK) ok = qvpy_raise_qv(st, &err) != NULL;
  qv_builder_free(b);
  qv_type_unref(ty);
  inf_free(t);
  Py_DECREF(seq);
  return ok;
}

/* A STRUCT array (offset 0, no nulls) over `cols` (taken over, each `len`
 * rows) named by the str objects of `names`. */
static bool struct_of_columns(PyObject *names, qv_array **cols, int32_t n, int64_t len,
                              qv_array **out) {
  qv_type *ty = qv_type_new(QV_STRUCT);
  qv_error err;
  qv_status st = ty ? QV_OK : qv_error_set(&err, QV_ENOMEM, "out of memory");
  for (int32_t i = 0; st == QV_OK && i < n; i++) {
    const char *name = PyUnicode_AsUTF8(PyList_GET_ITEM(names, i));
    if (name == NULL) break;
    st = qv_type_add_child(ty, name, true, qv_type_ref(cols[i]->type), NULL, &err);
    if (st != QV_OK) qv_type_unref(cols[i]->type);
  }
  qv_array *res = st == QV_OK && !PyErr_Occurred() ? qv_array_new(ty, 1, n) : NULL;
  if (res != NULL) {
    res->length = len;
    res->null_count = 0;
    for (int32_t i = 0; i < n; i++) {
      res->children[i] = cols[i];
      cols[i] = NULL;
    }
    *out = res;
  } else if (!PyErr_Occurred()) {
    if (st == QV_OK) st = qv_error_set(&err, QV_ENOMEM, "out of memory");
    qvpy_raise_qv(st, &err);
  }
  for (int32_t i = 0; i < n; i++) qv_array_unref(cols[i]);
  qv_type_unref(ty);
  return res != NULL;
}

/* A function's result: a dict {column: list or Arrow array} or an Arrow
 * struct array / record batch, as a STRUCT array (new reference). */
bool qvpy_result_struct(PyObject *r, const char *what, int64_t first_row, qv_array **out) {
  if (!PyDict_Check(r) && PyObject_HasAttrString(r, "__arrow_c_array__")) {
    if (!import_arrow(r, what, out)) return false;
    if ((*out)->type->id == QV_STRUCT && (*out)->null_count == 0) return true;
    qv_array_unref(*out);
    *out = NULL;
    PyErr_Format(qvpy_TypeError,
                 "%s: the function returned a %.100s that is not a record "
                 "batch (a struct array without nulls); return a dict of columns",
                 what, Py_TYPE(r)->tp_name);
    return false;
  }
  PyObject *conv = NULL; /* a pandas DataFrame or Arrow table as a dict of columns */
  if (!PyDict_Check(r)) {
    PyObject *a = PyTuple_Pack(1, r);
    conv = a ? qvpy_call_api("_result_as_dict", NULL, a, NULL) : NULL;
    Py_XDECREF(a);
    if (conv == NULL) return false;
    if (!PyDict_Check(conv)) {
      Py_DECREF(conv);
      PyErr_Format(qvpy_TypeError,
                   "%s: the function must return a dict of columns (or None to "
                   "leave the dataset unchanged), not %.100s",
                   what, Py_TYPE(r)->tp_name);
      return false;
    }
    r = conv;
  }
  Py_ssize_t n = PyDict_GET_SIZE(r);
  PyObject *names = PyList_New(0);
  qv_array **cols = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *cols);
  bool ok = names != NULL && cols != NULL;
  if (cols == NULL) PyErr_NoMemory();
  PyObject *key, *val;
  Py_ssize_t pos = 0;
  int32_t k = 0;
  while (ok && PyDict_Next(r, &pos, &key, &val)) {
    if (!PyUnicode_Check(key)) {
      PyErr_Format(qvpy_TypeError, "%s: column names must be str, found %.100s", what,
                   Py_TYPE(key)->tp_name);
      ok = false;
      break;
    }
    const char *col = PyUnicode_AsUTF8(key);
    ok = col != NULL && PyList_Append(names, key) == 0 &&
         column_of(val, what, col, first_row, &cols[k]);
    if (ok) k++;
  }
  for (int32_t i = 1; ok && i < k; i++)
    if (cols[i]->length != cols[0]->length) {
      PyErr_Format(qvpy_ValueError,
                   "%s: the function returned columns of different lengths: "
                   "'%U' has %lld values, '%U' %lld",
                   what, PyList_GET_ITEM(names, 0), (long long)cols[0]->length,
                   PyList_GET_ITEM(names, i), (long long)cols[i]->length);
      ok = false;
    }
  if (ok) {
    ok = struct_of_columns(names, cols, k, k > 0 ? cols[0]->length : 0, out);
    k = 0;
  }
  for (int32_t i = 0; cols && i < k; i++) qv_array_unref(cols[i]);
  PyMem_Free(cols);
  Py_XDECREF(names);
  Py_XDECREF(conv);
  return ok;
}

bool qvpy_struct_keep_types(qv_array **s, const qv_schema *orig) {
  qv_array *a = *s;
  int32_t n = a->type->n_children, changed = 0;
  qv_array **cols = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *cols);
  PyObject *names = PyList_New(n);
  if (cols == NULL || names == NULL) {
    PyMem_Free(cols);
    Py_XDECREF(names);
    PyErr_NoMemory();
    return false;
  }
  for (int32_t i = 0; i < n; i++) {
    const qv_field *f = &a->type->children[i];
    PyObject *nm = PyUnicode_FromString(f->name);
    if (nm == NULL) {
      for (int32_t j = 0; j < i; j++) qv_array_unref(cols[j]);
      PyMem_Free(cols);
      Py_DECREF(names);
      return false;
    }
    PyList_SET_ITEM(names, i, nm);
    int32_t j = qv_schema_find(orig, f->name);
    qv_array *child = a->children[i];
    cols[i] = NULL;
    if (j >= 0 && !qv_type_equals(qv_schema_field(orig, j)->type, f->type, true)) {
      qv_error err;
      qv_type *to = qv_type_ref(qv_schema_field(orig, j)->type);
      if (qv_array_cast(child, to, &cols[i], &err) == QV_OK) changed++;
      else cols[i] = NULL;
      qv_type_unref(to);
    }
    if (cols[i] == NULL) cols[i] = qv_array_ref(child);
  }
  bool ok = true;
  if (changed > 0) {
    qv_array *res = NULL;
    ok = struct_of_columns(names, cols, n, a->length, &res);
    if (ok) {
      qv_array_unref(a);
      *s = res;
    }
  } else {
    for (int32_t i = 0; i < n; i++) qv_array_unref(cols[i]);
  }
  PyMem_Free(cols);
  Py_DECREF(names);
  return ok;
}
