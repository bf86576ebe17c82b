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

/* ------------------------------------------------------------------------ */
/* numpy columns of a batch (the numpy format's fast path)                   */

/* Read-only bytes of a column exported through the buffer protocol, the
 * column's array kept alive while a numpy array (through a memoryview)
 * looks at them. */
typedef struct {
  PyObject_HEAD qv_array *array; /* reference: owns the bytes */
  const uint8_t *data;
  Py_ssize_t len;
} BytesObject;

static void Bytes_dealloc(BytesObject *self) {
  qv_array_unref(self->array);
  PyObject_Free(self);
}

static int Bytes_getbuffer(BytesObject *self, Py_buffer *view, int flags) {
  return PyBuffer_FillInfo(view, (PyObject *)self, (void *)self->data, self->len, 1, flags);
}

static PyBufferProcs Bytes_as_buffer = {.bf_getbuffer = (getbufferproc)Bytes_getbuffer};

static PyTypeObject BytesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._MappedBytes",
    .tp_basicsize = sizeof(BytesObject),
    .tp_dealloc = (destructor)Bytes_dealloc,
    .tp_as_buffer = &Bytes_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only bytes of a quiver column (numpy views of the mapping hold one).",
};

static PyObject *np_frombuffer, *np_empty; /* numpy's, imported on first use */

static bool numpy_ready(void) {
  if (np_empty != NULL) return true;
  if (!(BytesType.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&BytesType) < 0) return false;
  PyObject *np = PyImport_ImportModule("numpy");
  if (np == NULL) return false;
  np_frombuffer = PyObject_GetAttrString(np, "frombuffer");
  np_empty = np_frombuffer ? PyObject_GetAttrString(np, "empty") : NULL;
  Py_DECREF(np);
  if (np_empty == NULL) Py_CLEAR(np_frombuffer);
  return np_empty != NULL;
}

static const char *numpy_dtype(qv_type_id id) {
  switch (id) {
    case QV_INT8: return "i1";
    case QV_INT16: return "<i2";
    case QV_INT32: return "<i4";
    case QV_INT64: return "<i8";
    case QV_UINT8: return "u1";
    case QV_UINT16: return "<u2";
    case QV_UINT32: return "<u4";
    case QV_UINT64: return "<u8";
    case QV_HALF_FLOAT: return "<f2";
    case QV_FLOAT: return "<f4";
    case QV_DOUBLE: return "<f8";
    default: return NULL;
  }
}

static bool no_nulls(const qv_array *a) {
  return a->n_buffers == 0 || a->buffers[0] == NULL || qv_array_null_count((qv_array *)a) == 0;
}

/* Rows [row0, row0+n) of `col` (physical row0) as a numpy view when `col`
 * is numbers, or fixed-size lists (nested) of them, without nulls (shape
 * (n, d1, ...)); Py_None when the layout is another. */
static PyObject *numeric_view(const qv_array *col, int64_t row0, int64_t n) {
  Py_ssize_t shape[33]; /* numpy has at most 32 dimensions (64 from numpy 2) */
  int nd = 0;
  shape[nd++] = (Py_ssize_t)n;
  const qv_array *a = col;
  int64_t k = row0, count = n;
  while (a->type->id == QV_FIXED_SIZE_LIST) {
    int64_t d = a->type->list_size;
    if (!no_nulls(a) || a->n_children < 1 || a->children[0] == NULL || nd >= 32 || d < 0 ||
        (d > 0 && (k > INT64_MAX / d - 1 || count > INT64_MAX / d)))
      Py_RETURN_NONE;
    shape[nd++] = (Py_ssize_t)d;
    const qv_array *c = a->children[0];
    k = c->offset + k * d;
    count *= d;
    if (k + count > c->offset + c->length) Py_RETURN_NONE;
    a = c;
  }
  const char *dt = numpy_dtype(a->type->id);
  if (dt == NULL || !no_nulls(a) || a->n_buffers < 2 || a->buffers[1] == NULL) Py_RETURN_NONE;
  int64_t w = qv_type_byte_width(a->type);
  if (w <= 0 || k < 0 || k > INT64_MAX / w - count || (k + count) * w > a->buffers[1]->size)
    Py_RETURN_NONE;
  BytesObject *b = PyObject_New(BytesObject, &BytesType);
  if (b == NULL) return NULL;
  b->array = qv_array_ref((qv_array *)a);
  b->data = a->buffers[1]->data + k * w;
  b->len = (Py_ssize_t)(count * w);
  PyObject *flat = PyObject_CallFunction(np_frombuffer, "Os", (PyObject *)b, dt);
  Py_DECREF(b);
  if (flat == NULL || nd == 1) return flat;
  PyObject *dims = PyTuple_New(nd);
  for (int i = 0; dims != NULL && i < nd; i++) {
    PyObject *v = PyLong_FromSsize_t(shape[i]);
    if (v == NULL) Py_CLEAR(dims);
    else PyTuple_SET_ITEM(dims, i, v);
  }
  PyObject *r = dims ? PyObject_CallMethod(flat, "reshape", "O", dims) : NULL;
  Py_XDECREF(dims);
  Py_DECREF(flat);
  return r;
}

/* Code points of the valid UTF-8 p[0..n), or -1 when it is not valid
 * UTF-8 (strict: no overlong forms, surrogates or values past U+10FFFF);
 * the code points are written to out when it is not NULL. */
static int64_t utf8_decode(const uint8_t *p, int64_t n, uint32_t *out) {
  int64_t i = 0, m = 0;
  while (i < n) {
    uint32_t c = p[i];
    int len;
    uint32_t min;
    if (c < 0x80) {
      if (out) out[m] = c;
      m++;
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, min = 0x80, c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min = 0x800, c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min = 0x10000, c &= 0x07;
    } else {
      return -1;
    }
    if (n - i < len) return -1;
    for (int j = 1; j < len; j++) {
      if ((p[i + j] & 0xC0) != 0x80) return -1;
      c = (c << 6) | (p[i + j] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return -1;
    if (out) out[m] = c;
    m++;
    i += len;
  }
  return m;
}

/* Whether p[0..n) is all ASCII (a word at a time). */
static bool all_ascii(const uint8_t *p, int64_t n) {
  uint64_t acc = 0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    memcpy(w, p + i, 32);
    acc |= w[0] | w[1] | w[2] | w[3];
  }
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    acc |= w;
  }
  for (; i < n; i++) acc |= p[i];
  return (acc & 0x8080808080808080ULL) == 0;
}

/* ASCII bytes p[0..n) widened to UCS4 code points. */
static void widen_ascii(uint32_t *out, const uint8_t *p, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    for (int j = 0; j < 8; j++) out[i + j] = (uint32_t)(w >> (8 * j)) & 0xFF;
  }
  for (; i < n; i++) out[i] = p[i];
}

/* Rows [row0, row0+n) (physical row0) of a string column without nulls as
 * the numpy array np.asarray(list of str) gives ('<U' of the longest
 * value, in code points; at least 1), filled in C; Py_None for other
 * columns, nulls, invalid UTF-8 or no rows. */
static PyObject *string_array(const qv_array *a, int64_t row0, int64_t n) {
  qv_type_id id = a->type->id;
  if ((id != QV_STRING && id != QV_LARGE_STRING) || n <= 0 || !no_nulls(a) || a->n_buffers < 3 ||
      a->buffers[1] == NULL)
    Py_RETURN_NONE;
  int w = id == QV_STRING ? 4 : 8;
  const uint8_t *off = a->buffers[1]->data;
  if (row0 < 0 || (row0 + n + 1) * w > a->buffers[1]->size) Py_RETURN_NONE;
  const uint8_t *data = a->buffers[2] != NULL ? a->buffers[2]->data : NULL;
  int64_t size = data != NULL ? a->buffers[2]->size : 0;
  int64_t s0 = qv_load_int(off, w, false, row0), e0 = qv_load_int(off, w, false, row0 + n);
  if (s0 < 0 || e0 < s0 || (e0 > s0 && (data == NULL || e0 > size))) Py_RETURN_NONE;
  bool ascii = e0 == s0 || all_ascii(data + s0, e0 - s0);
  int64_t maxlen = 1, s = s0;
  for (int64_t j = 0; j < n; j++) {
    int64_t e = qv_load_int(off, w, false, row0 + j + 1);
    if (e < s || e > e0) Py_RETURN_NONE;
    int64_t len = ascii ? e - s : utf8_decode(data + s, e - s, NULL);
    if (len < 0) Py_RETURN_NONE;
    if (len > maxlen) maxlen = len;
    s = e;
  }
  if (maxlen > (INT64_MAX / 4) / n) Py_RETURN_NONE;
  char dt[32];
  snprintf(dt, sizeof dt, "<U%lld", (long long)maxlen);
  PyObject *arr = PyObject_CallFunction(np_empty, "ns", (Py_ssize_t)n, dt);
  if (arr == NULL) return NULL;
  Py_buffer view;
  if (PyObject_GetBuffer(arr, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
    Py_DECREF(arr);
    return NULL;
  }
  uint32_t *out = view.buf;
  s = s0;
  for (int64_t j = 0; j < n; j++, out += maxlen) {
    int64_t e = qv_load_int(off, w, false, row0 + j + 1), len = e - s;
    if (ascii) widen_ascii(out, data + s, len);
    else len = utf8_decode(data + s, e - s, out);
    if (len < maxlen) memset(out + len, 0, (size_t)(maxlen - len) * 4);
    s = e;
  }
  PyBuffer_Release(&view);
  return arr;
}

/* Batch._numpy_columns(): {column: numpy array, or None where the numpy
 * format needs the general (Python) path}. */
static PyObject *Batch_numpy_columns(BatchObject *self, PyObject *unused) {
  const qv_array *b = self->array;
  if (!numpy_ready() || !qvpy_mapped_bytes_there(b)) return NULL;
  PyObject *dict = PyDict_New();
  for (int32_t c = 0; dict != NULL && c < b->type->n_children; c++) {
    const qv_array *col = c < b->n_children ? b->children[c] : NULL;
    PyObject *v;
    if (col == NULL || b->offset + b->length > col->length) {
      v = Py_NewRef(Py_None);
    } else {
      int64_t row0 = col->offset + b->offset;
      v = numeric_view(col, row0, b->length);
      if (v == Py_None) {
        Py_DECREF(v);
        v = string_array(col, row0, b->length);
      }
    }
    if (v == NULL || PyDict_SetItemString(dict, b->type->children[c].name, v) < 0) Py_CLEAR(dict);
    Py_XDECREF(v);
  }
  return dict;
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
    {"_numpy_columns", (PyCFunction)Batch_numpy_columns, METH_NOARGS,
     "_numpy_columns($self, /)\n--\n\n{column: numpy array or None}: views of fixed-width "
     "numbers without nulls, '<U' arrays of strings without nulls, None for the columns the "
     "numpy format converts in Python (quiver._formats)."},
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
