/*
 * batch.c — the Arrow PyCapsule interface (apache/arrow
 * docs/source/format/CDataInterface/PyCapsuleInterface.rst) and the
 * quiver.Batch type, for the CPython extension (python/ layer). Capsules
 * are named "arrow_schema", "arrow_array" and "arrow_array_stream"; their
 * destructor calls the struct's release callback when it is still set (a
 * consumer that moved the struct out has nulled it) and frees it.
 */
#include "qvpy.h"

/* ------------------------------------------------------------------------ */
/* PyCapsules                                                                */

static void schema_capsule_free(PyObject *cap) {
  struct ArrowSchema *s = PyCapsule_GetPointer(cap, "arrow_schema");
  if (s == NULL) {
    PyErr_WriteUnraisable(cap);
    return;
  }
  if (s->release != NULL) s->release(s);
  free(s);
}

static void array_capsule_free(PyObject *cap) {
  struct ArrowArray *a = PyCapsule_GetPointer(cap, "arrow_array");
  if (a == NULL) {
    PyErr_WriteUnraisable(cap);
    return;
  }
  if (a->release != NULL) a->release(a);
  free(a);
}

void qvpy_stream_capsule_free(PyObject *cap) {
  struct ArrowArrayStream *s = PyCapsule_GetPointer(cap, "arrow_array_stream");
  if (s == NULL) {
    PyErr_WriteUnraisable(cap);
    return;
  }
  if (s->release != NULL) s->release(s);
  free(s);
}

/* A capsule named `name` over a zeroed (released) struct of `size` bytes;
 * *out points at the struct, to be filled by an export. */
PyObject *qvpy_new_capsule(size_t size, const char *name, PyCapsule_Destructor d, void **out) {
  void *p = calloc(1, size);
  if (p == NULL) return PyErr_NoMemory();
  PyObject *cap = PyCapsule_New(p, name, d);
  if (cap == NULL) {
    free(p);
    return NULL;
  }
  *out = p;
  return cap;
}

PyObject *qvpy_schema_capsule(const qv_schema *schema) {
  struct ArrowSchema *s = NULL;
  PyObject *cap = qvpy_new_capsule(sizeof *s, "arrow_schema", schema_capsule_free, (void **)&s);
  if (cap == NULL) return NULL;
  qv_error err;
  qv_status st = qv_export_schema(schema, s, &err);
  if (st != QV_OK) {
    Py_DECREF(cap);
    return qvpy_raise_qv(st, &err);
  }
  return cap;
}

/* requested_schema of __arrow_c_array__ / __arrow_c_stream__: None or an
 * "arrow_schema" capsule. Conversion is best-effort per the interface:
 * quiver hands out its own schema; a request with another number of
 * fields is refused (ValueError), as the interface asks. */
bool qvpy_check_requested(PyObject *req, const qv_schema *schema) {
  if (req == NULL || req == Py_None) return true;
  if (!PyCapsule_IsValid(req, "arrow_schema")) {
    PyErr_SetString(qvpy_TypeError,
                    "requested_schema must be None or an 'arrow_schema' "
                    "PyCapsule");
    return false;
  }
  const struct ArrowSchema *s = PyCapsule_GetPointer(req, "arrow_schema");
  if (s == NULL) return false;
  if (s->release == NULL) {
    PyErr_SetString(qvpy_ValueError, "requested_schema: the ArrowSchema was released");
    return false;
  }
  if (s->n_children != qv_schema_num_fields(schema)) {
    PyErr_Format(qvpy_ValueError, "requested_schema has %lld fields, the data has %d",
                 (long long)s->n_children, (int)qv_schema_num_fields(schema));
    return false;
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* Batch: one record batch (STRUCT array) with the PyCapsule array interface */

PyObject *qvpy_new_batch(qv_array *array, qv_schema *schema) {
  BatchObject *b = PyObject_New(BatchObject, &qvpy_BatchType);
  if (b == NULL) {
    qv_array_unref(array);
    return NULL;
  }
  b->array = array;
  b->schema = qv_schema_ref(schema);
  return (PyObject *)b;
}

static void Batch_dealloc(BatchObject *self) {
  qv_array_unref(self->array);
  qv_schema_unref(self->schema);
  PyObject_Free(self);
}

static Py_ssize_t Batch_len(BatchObject *self) { return (Py_ssize_t)self->array->length; }

PyObject *qvpy_column_names_of(const qv_schema *s) {
  PyObject *list = PyList_New(qv_schema_num_fields(s));
  for (int32_t i = 0; list != NULL && i < qv_schema_num_fields(s); i++) {
    PyObject *name = PyUnicode_FromString(qv_schema_field(s, i)->name);
    if (name == NULL) Py_CLEAR(list);
    else PyList_SET_ITEM(list, i, name);
  }
  return list;
}

static PyObject *Batch_column_names(BatchObject *self, void *closure) {
  return qvpy_column_names_of(self->schema);
}

static PyObject *Batch_num_rows(BatchObject *self, void *closure) {
  return PyLong_FromLongLong(self->array->length);
}

static PyObject *Batch_to_pylist(BatchObject *self, PyObject *unused) {
  PyObject *list =
      qvpy_mapped_bytes_there(self->array) ? PyList_New((Py_ssize_t)self->array->length) : NULL;
  for (int64_t i = 0; list != NULL && i < self->array->length; i++) {
    PyObject *row = qvpy_row_dict(self->array, i);
    if (row == NULL) Py_CLEAR(list);
    else PyList_SET_ITEM(list, (Py_ssize_t)i, row);
  }
  return list;
}

static PyObject *Batch_to_pydict(BatchObject *self, PyObject *unused) {
  return qvpy_columns_dict(self->array);
}

static PyObject *Batch_arrow_c_schema(BatchObject *self, PyObject *unused) {
  return qvpy_schema_capsule(self->schema);
}

static PyObject *Batch_arrow_c_array(BatchObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"requested_schema", NULL};
  PyObject *req = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:__arrow_c_array__", kw, &req)) return NULL;
  if (!qvpy_check_requested(req, self->schema)) return NULL;
  PyObject *scap = qvpy_schema_capsule(self->schema);
  if (scap == NULL) return NULL;
  struct ArrowArray *a = NULL;
  PyObject *acap = qvpy_new_capsule(sizeof *a, "arrow_array", array_capsule_free, (void **)&a);
  if (acap == NULL) {
    Py_DECREF(scap);
    return NULL;
  }
  qv_error err;
  qv_status st = qv_export_array(self->array, a, &err);
  if (st != QV_OK) {
    Py_DECREF(scap);
    Py_DECREF(acap);
    return qvpy_raise_qv(st, &err);
  }
  PyObject *pair = PyTuple_Pack(2, scap, acap);
  Py_DECREF(scap);
  Py_DECREF(acap);
  return pair;
}

static PyObject *Batch_repr(BatchObject *self) {
  PyObject *names = qvpy_column_names_of(self->schema);
  if (names == NULL) return NULL;
  PyObject *r = PyUnicode_FromFormat("quiver.Batch(columns=%R, num_rows=%lld)", names,
                                     (long long)self->array->length);
  Py_DECREF(names);
  return r;
}

static PyMethodDef Batch_methods[] = {
    {"to_pylist", (PyCFunction)Batch_to_pylist, METH_NOARGS,
     "to_pylist($self, /)\n--\n\nThe rows as a list of {column: value} dicts."},
    {"to_pydict", (PyCFunction)Batch_to_pydict, METH_NOARGS,
     "to_pydict($self, /)\n--\n\nThe columns as a {column: [values]} dict."},
    {"__arrow_c_schema__", (PyCFunction)Batch_arrow_c_schema, METH_NOARGS,
     "__arrow_c_schema__($self, /)\n--\n\nThe schema as an 'arrow_schema' PyCapsule (struct "
     "ArrowSchema)."},
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))Batch_arrow_c_array,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_array__($self, /, requested_schema=None)\n--\n\nThe batch as a pair of PyCapsules "
     "('arrow_schema', 'arrow_array'): a struct array of the columns, zero copy."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Batch_getset[] = {
    {"column_names", (getter)Batch_column_names, NULL, "Column names.", NULL},
    {"num_rows", (getter)Batch_num_rows, NULL, "Number of rows.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods Batch_as_sequence = {.sq_length = (lenfunc)Batch_len};

PyTypeObject qvpy_BatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver.Batch",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = (destructor)Batch_dealloc,
    .tp_repr = (reprfunc)Batch_repr,
    .tp_as_sequence = &Batch_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "A record batch of a dataset (from Dataset.iter), exported to Arrow "
        "consumers through __arrow_c_array__ without a copy.",
    .tp_methods = Batch_methods,
    .tp_getset = Batch_getset,
};
