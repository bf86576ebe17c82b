/*
 * batch.c — the Arrow PyCapsule interface (apache/arrow
 * docs/source/format/CDataInterface/PyCapsuleInterface.rst) and the
 * quiver.Batch type, for the CPython extension (python/ layer). Capsules
 * are named "arrow_schema", "arrow_array" and "arrow_array_stream"; their
 * destructor calls the struct's release callback when it is still set (a
 * consumer that moved the struct out has nulled it) and frees it.
 */
#include "qvpy.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/* ASCII bytes p[0..n) widened to UCS4 code points (16 at a time with
 * SSE2: the loop below is most of a '<U' column's time). */
static void widen_ascii(uint32_t *out, const uint8_t *p, int64_t n) {
  int64_t i = 0;
#ifdef __SSE2__
  const __m128i z = _mm_setzero_si128();
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
    __m128i lo = _mm_unpacklo_epi8(v, z), hi = _mm_unpackhi_epi8(v, z);
    _mm_storeu_si128((__m128i *)(void *)(out + i), _mm_unpacklo_epi16(lo, z));
    _mm_storeu_si128((__m128i *)(void *)(out + i + 4), _mm_unpackhi_epi16(lo, z));
    _mm_storeu_si128((__m128i *)(void *)(out + i + 8), _mm_unpacklo_epi16(hi, z));
    _mm_storeu_si128((__m128i *)(void *)(out + i + 12), _mm_unpackhi_epi16(hi, z));
  }
#endif
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

/* ------------------------------------------------------------------------ */
/* numpy batches of a dataset with an indices mapping                        */

/*
 * Dataset._numpy_iter(batch_size, drop_last_batch): the rows of each batch
 * copied from the mapped data batch that holds them straight into numpy
 * arrays, without an Arrow batch gathered first (the numpy format's path
 * for shuffled / selected datasets). The data batches touched are fetched
 * once per iteration (qv_table_batch checks their mapped bytes then) and
 * kept; every read of mapped bytes afterwards runs under qv_guard_run, so
 * a file that shrank meanwhile raises QuiverError (QV_ECHANGED) rather
 * than SIGBUS. Each step gives (first row, rows, {column: array or None})
 * with None where the numpy format needs the general path (other layouts,
 * nulls, invalid UTF-8).
 */

/* Rows ahead whose source bytes the copy loops prefetch: the rows of a
 * shuffled batch lie far apart in the mapping, a cache (and TLB) miss
 * each; asking for them early overlaps the misses. */
#define NP_AHEAD 16

enum { NP_NONE, NP_FIXED, NP_STRING };

/* How a column converts: numbers or fixed-size lists of them (nested) into
 * dtype `dt` of shape (n, dims...), row_bytes each; strings with offsets
 * of `w` bytes into '<U'. */
typedef struct {
  int kind;
  const char *dt;
  int nd; /* dims after the row dimension */
  Py_ssize_t dims[32];
  int64_t row_bytes;
  qv_type_id leaf;
  int w;
} np_col;

/* One column in one data batch: fixed: the bytes of the batch's row 0;
 * strings: its offsets (row r's at off + r * w) and data; valid: the
 * column's validity bitmap when it has nulls (row r's bit vbit0 + r), the
 * rows copied being checked to be valid. ok false: the column cannot be
 * converted from this batch. */
typedef struct {
  const uint8_t *base, *data, *valid;
  int64_t size, vbit0;
  bool ok;
} np_src;

typedef struct {
  PyObject_HEAD qv_dataset *ds; /* reference */
  int64_t pos, end, bs, nb;
  bool drop_last;
  int32_t nc;
  np_col *cols;   /* nc */
  qv_array **bat; /* nb, fetched when first touched (references) */
  np_src *src;    /* nb * nc, filled with bat */
  int64_t *rows;  /* min(bs, rows): data rows of the current batch */
  int64_t *bidx;  /* their data batch */
  int64_t *ridx;  /* their row in it */
} NumpyIterObject;

static void np_col_plan(const qv_type *t, np_col *c) {
  memset(c, 0, sizeof *c);
  if (t->id == QV_STRING || t->id == QV_LARGE_STRING) {
    c->kind = NP_STRING;
    c->w = t->id == QV_STRING ? 4 : 8;
    return;
  }
  int64_t per_row = 1;
  while (t->id == QV_FIXED_SIZE_LIST && t->n_children == 1) {
    int64_t d = t->list_size;
    if (c->nd >= 31 || d < 0 || (d > 0 && per_row > INT64_MAX / 64 / d)) return;
    c->dims[c->nd++] = (Py_ssize_t)d;
    per_row *= d;
    t = t->children[0].type;
  }
  c->dt = numpy_dtype(t->id);
  int64_t w = c->dt != NULL ? qv_type_byte_width(t) : 0;
  if (w <= 0) return;
  c->kind = NP_FIXED;
  c->leaf = t->id;
  c->row_bytes = per_row * w;
}

/* np_src of column c (planned as `pc`) in the STRUCT batch `batch`: reads
 * the arrays' headers, not the mapped bytes. */
static np_src np_source(const qv_array *batch, int32_t c, const np_col *pc) {
  np_src r = {NULL, NULL, NULL, 0, 0, false};
  const qv_array *a = c < batch->n_children ? batch->children[c] : NULL;
  if (a == NULL || batch->offset < 0 || batch->offset + batch->length > a->length) return r;
  int64_t k = a->offset + batch->offset, count = batch->length;
  if (!no_nulls(a)) { /* the rows' bits are checked as they are copied */
    if (a->n_buffers < 1 || k < 0 || (k + count + 7) / 8 > a->buffers[0]->size) return r;
    r.valid = a->buffers[0]->data;
    r.vbit0 = k;
  }
  if (pc->kind == NP_STRING) {
    if (a->type->id != (pc->w == 4 ? QV_STRING : QV_LARGE_STRING) || a->n_buffers < 3 ||
        a->buffers[1] == NULL || k < 0 || (k + count + 1) * pc->w > a->buffers[1]->size)
      return r;
    r.base = a->buffers[1]->data + k * pc->w;
    r.data = a->buffers[2] != NULL ? a->buffers[2]->data : NULL;
    r.size = a->buffers[2] != NULL ? a->buffers[2]->size : 0;
    r.ok = true;
    return r;
  }
  if (pc->kind != NP_FIXED) return r;
  const qv_array *top = a;
  while (a->type->id == QV_FIXED_SIZE_LIST) {
    int64_t d = a->type->list_size;
    const qv_array *ch = a->n_children >= 1 ? a->children[0] : NULL;
    if ((a != top && !no_nulls(a)) || ch == NULL || d < 0 ||
        (d > 0 && (k > INT64_MAX / d - 1 || count > INT64_MAX / d)))
      return r;
    k = ch->offset + k * d;
    count *= d;
    if (k + count > ch->offset + ch->length) return r;
    a = ch;
  }
  int64_t w = qv_type_byte_width(a->type);
  if (a->type->id != pc->leaf || w <= 0 || (a != top && !no_nulls(a)) || a->n_buffers < 2 ||
      a->buffers[1] == NULL || k < 0 || k > INT64_MAX / w - count ||
      (k + count) * w > a->buffers[1]->size)
    return r;
  r.base = a->buffers[1]->data + k * w;
  r.ok = true;
  return r;
}

/* What the guarded passes share: the rows of one step and, per column,
 * the output (NULL: not converted) and the strings' scratch. */
typedef struct {
  NumpyIterObject *it;
  int64_t n;
  int32_t c;          /* the column of this pass */
  uint8_t *out;       /* fixed / '<U' output bytes */
  const uint8_t **sp; /* strings: each row's bytes */
  int64_t *len, *cps; /* strings: bytes and code points (ASCII when equal) */
  int64_t maxlen;     /* strings: the longest, in code points (>= 1) */
  bool bad;           /* strings: invalid offsets or UTF-8 */
} np_pass;

static inline const np_src *np_at(const NumpyIterObject *it, int64_t i, int32_t c) {
  return &it->src[it->bidx[i] * it->nc + c];
}

/* Whether every row of the pass is valid (no null: numpy's numbers and
 * '<U' hold none). */
static bool np_all_valid(const np_pass *p) {
  const NumpyIterObject *it = p->it;
  for (int64_t i = 0; i < p->n; i++) {
    const np_src *s = np_at(it, i, p->c);
    if (s->valid != NULL && !qv_bit_get(s->valid, s->vbit0 + it->ridx[i])) return false;
  }
  return true;
}

static qv_status np_copy_fixed(void *ctx, qv_error *err) {
  (void)err;
  np_pass *p = ctx;
  const NumpyIterObject *it = p->it;
  int64_t rb = it->cols[p->c].row_bytes, n = p->n;
  if (!np_all_valid(p)) {
    p->bad = true;
    return QV_OK;
  }
  for (int64_t i = 0; i < n; i++) {
    if (i + NP_AHEAD < n) {
      const uint8_t *q = np_at(it, i + NP_AHEAD, p->c)->base + it->ridx[i + NP_AHEAD] * rb;
      __builtin_prefetch(q);
      if (rb > 64) __builtin_prefetch(q + rb - 1);
    }
    memcpy(p->out + i * rb, np_at(it, i, p->c)->base + it->ridx[i] * rb, (size_t)rb);
  }
  return QV_OK;
}

/* Strings, pass 1: each row's bytes and length; p->bad on bad data. */
static qv_status np_measure_strings(void *ctx, qv_error *err) {
  (void)err;
  np_pass *p = ctx;
  const NumpyIterObject *it = p->it;
  int w = it->cols[p->c].w;
  int64_t n = p->n, maxlen = 1;
  if (!np_all_valid(p)) {
    p->bad = true;
    return QV_OK;
  }
  for (int64_t i = 0; i < n; i++) {
    if (i + NP_AHEAD < n)
      __builtin_prefetch(np_at(it, i + NP_AHEAD, p->c)->base + it->ridx[i + NP_AHEAD] * w);
    if (i + NP_AHEAD / 2 < n) { /* its offsets asked for NP_AHEAD / 2 rows ago */
      const np_src *s = np_at(it, i + NP_AHEAD / 2, p->c);
      int64_t r = it->ridx[i + NP_AHEAD / 2];
      int64_t o = qv_load_int(s->base, w, false, r), e = qv_load_int(s->base, w, false, r + 1);
      if (o >= 0 && e > o && e <= s->size) /* every line of it: a string spans several */
        for (int64_t x = o; x < e; x += 64) __builtin_prefetch(s->data + x);
      if (o >= 0 && e > o && e <= s->size && ((e - 1) >> 6) != ((o + ((e - o - 1) & ~63)) >> 6))
        __builtin_prefetch(s->data + e - 1);
    }
    const np_src *s = np_at(it, i, p->c);
    int64_t r = it->ridx[i];
    int64_t a = qv_load_int(s->base, w, false, r), e = qv_load_int(s->base, w, false, r + 1);
    if (a < 0 || e < a || (e > a && (s->data == NULL || e > s->size))) {
      p->bad = true;
      return QV_OK;
    }
    const uint8_t *q = e > a ? s->data + a : (const uint8_t *)"";
    int64_t cp = all_ascii(q, e - a) ? e - a : utf8_decode(q, e - a, NULL);
    if (cp < 0) {
      p->bad = true;
      return QV_OK;
    }
    p->sp[i] = q;
    p->len[i] = e - a;
    p->cps[i] = cp;
    if (cp > maxlen) maxlen = cp;
  }
  p->maxlen = maxlen;
  return QV_OK;
}

/* Strings, pass 2: the code points into the '<U' array. */
static qv_status np_fill_strings(void *ctx, qv_error *err) {
  (void)err;
  np_pass *p = ctx;
  uint32_t *out = (uint32_t *)p->out;
  int64_t maxlen = p->maxlen;
  for (int64_t i = 0; i < p->n; i++, out += maxlen) {
    if (p->cps[i] == p->len[i]) widen_ascii(out, p->sp[i], p->len[i]);
    else utf8_decode(p->sp[i], p->len[i], out);
    if (p->cps[i] < maxlen) memset(out + p->cps[i], 0, (size_t)(maxlen - p->cps[i]) * 4);
  }
  return QV_OK;
}

/* np.empty(shape, dt) and its writable buffer. */
static PyObject *np_new(Py_ssize_t n, const np_col *pc, const char *dt, Py_buffer *view) {
  PyObject *dims = PyTuple_New(1 + pc->nd);
  for (int i = 0; dims != NULL && i <= pc->nd; i++) {
    PyObject *v = PyLong_FromSsize_t(i == 0 ? n : pc->dims[i - 1]);
    if (v == NULL) Py_CLEAR(dims);
    else PyTuple_SET_ITEM(dims, i, v);
  }
  PyObject *arr = dims ? PyObject_CallFunction(np_empty, "Os", dims, dt) : NULL;
  Py_XDECREF(dims);
  if (arr != NULL && PyObject_GetBuffer(arr, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
    Py_CLEAR(arr);
  return arr;
}

/* Column c of the current n rows: an array, Py_None, or NULL (raised). */
static PyObject *np_column(NumpyIterObject *it, int32_t c, int64_t n) {
  const np_col *pc = &it->cols[c];
  if (pc->kind == NP_NONE || (pc->kind == NP_STRING && n == 0)) Py_RETURN_NONE;
  for (int64_t i = 0; i < n; i++)
    if (!np_at(it, i, c)->ok) Py_RETURN_NONE;
  np_pass p = {it, n, c, NULL, NULL, NULL, NULL, 1, false};
  qv_error err;
  qv_status st = QV_OK;
  Py_buffer view;
  PyObject *arr = NULL;
  if (pc->kind == NP_FIXED) {
    arr = np_new((Py_ssize_t)n, pc, pc->dt, &view);
    if (arr == NULL) return NULL;
    p.out = view.buf;
    st = qv_guard_run(np_copy_fixed, &p, &err);
    PyBuffer_Release(&view);
    if (st == QV_OK && p.bad) Py_SETREF(arr, Py_NewRef(Py_None));
  } else {
    p.sp = PyMem_Malloc((size_t)n * sizeof *p.sp);
    p.len = PyMem_Malloc((size_t)n * 2 * sizeof *p.len);
    if (p.sp == NULL || p.len == NULL) {
      PyMem_Free(p.sp);
      PyMem_Free(p.len);
      return PyErr_NoMemory();
    }
    p.cps = p.len + n;
    st = qv_guard_run(np_measure_strings, &p, &err);
    if (st == QV_OK && !p.bad && p.maxlen <= (INT64_MAX / 4) / n) {
      char dt[32];
      snprintf(dt, sizeof dt, "<U%lld", (long long)p.maxlen);
      arr = np_new((Py_ssize_t)n, pc, dt, &view);
      if (arr != NULL) {
        p.out = view.buf;
        st = qv_guard_run(np_fill_strings, &p, &err);
        PyBuffer_Release(&view);
      }
    } else if (st == QV_OK) {
      arr = Py_NewRef(Py_None);
    }
    PyMem_Free(p.sp);
    PyMem_Free(p.len);
    if (arr == NULL && st == QV_OK) return NULL;
  }
  if (st != QV_OK) {
    Py_XDECREF(arr);
    return qvpy_raise_qv(st, &err);
  }
  return arr;
}

static PyObject *NumpyIter_next(NumpyIterObject *it) {
  int64_t n = it->end - it->pos < it->bs ? it->end - it->pos : it->bs;
  if (n <= 0 || (n < it->bs && it->drop_last)) return NULL;
  qv_table *data = qv_dataset_data(it->ds);
  int64_t data_rows = qv_table_num_rows(data);
  qv_error err;
  qv_status st = qv_dataset_data_rows(it->ds, it->pos, n, it->rows, &err);
  for (int64_t i = 0; st == QV_OK && i < n; i++) {
    int64_t b = 0, r = 0;
    if (it->rows[i] >= data_rows)
      st = qv_error_set(&err, QV_ERANGE, "indices mapping: row %lld maps to data row %lld of %lld",
                        (long long)(it->pos + i), (long long)it->rows[i], (long long)data_rows);
    if (st == QV_OK) st = qv_table_locate(data, it->rows[i], &b, &r, &err);
    if (st == QV_OK && it->bat[b] == NULL) {
      st = qv_table_batch(data, b, &it->bat[b], &err); /* its mapped bytes checked */
      for (int32_t c = 0; st == QV_OK && c < it->nc; c++)
        it->src[b * it->nc + c] = np_source(it->bat[b], c, &it->cols[c]);
    }
    it->bidx[i] = b;
    it->ridx[i] = r;
  }
  if (st != QV_OK) return qvpy_raise_qv(st, &err);
  const qv_schema *schema = qv_table_schema(data);
  PyObject *dict = PyDict_New();
  for (int32_t c = 0; dict != NULL && c < it->nc; c++) {
    PyObject *v = np_column(it, c, n);
    if (v == NULL || PyDict_SetItemString(dict, qv_schema_field(schema, c)->name, v) < 0)
      Py_CLEAR(dict);
    Py_XDECREF(v);
  }
  if (dict == NULL) return NULL;
  PyObject *r = Py_BuildValue("LLN", (long long)it->pos, (long long)n, dict);
  it->pos += n;
  return r;
}

static void NumpyIter_dealloc(NumpyIterObject *it) {
  for (int64_t b = 0; it->bat != NULL && b < it->nb; b++) qv_array_unref(it->bat[b]);
  PyMem_Free(it->bat);
  PyMem_Free(it->src);
  PyMem_Free(it->cols);
  PyMem_Free(it->rows);
  PyMem_Free(it->bidx);
  PyMem_Free(it->ridx);
  qv_dataset_unref(it->ds);
  PyObject_Free(it);
}

static PyTypeObject NumpyIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._NumpyRowsIterator",
    .tp_basicsize = sizeof(NumpyIterObject),
    .tp_dealloc = (destructor)NumpyIter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)NumpyIter_next,
};

PyObject *qvpy_Dataset_numpy_iter(DatasetObject *self, PyObject *args) {
  long long bs;
  int drop_last = 0;
  if (!PyArg_ParseTuple(args, "L|p:_numpy_iter", &bs, &drop_last)) return NULL;
  if (qv_dataset_indices(self->ds) == NULL) Py_RETURN_NONE;
  if (bs < 1) return PyErr_Format(qvpy_ValueError, "batch_size must be >= 1, found %lld", bs);
  if (!numpy_ready()) return NULL;
  if (!(NumpyIterType.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&NumpyIterType) < 0) return NULL;
  qv_table *data = qv_dataset_data(self->ds);
  const qv_schema *schema = qv_table_schema(data);
  int64_t total = qv_dataset_num_rows(self->ds);
  size_t scratch = (size_t)(bs < total ? bs : total > 0 ? total : 1); /* rows of a step */
  NumpyIterObject *it = PyObject_New(NumpyIterObject, &NumpyIterType);
  if (it == NULL) return NULL;
  it->ds = qv_dataset_ref(self->ds);
  it->pos = 0;
  it->end = total;
  it->bs = bs;
  it->drop_last = drop_last != 0;
  it->nb = qv_table_num_batches(data);
  it->nc = qv_schema_num_fields(schema);
  size_t nb = (size_t)(it->nb > 0 ? it->nb : 1), nc = (size_t)(it->nc > 0 ? it->nc : 1);
  it->cols = PyMem_Calloc(nc, sizeof *it->cols);
  it->bat = PyMem_Calloc(nb, sizeof *it->bat);
  it->src = nb <= SIZE_MAX / nc ? PyMem_Calloc(nb * nc, sizeof *it->src) : NULL;
  it->rows = PyMem_Malloc(scratch * sizeof *it->rows);
  it->bidx = PyMem_Malloc(scratch * sizeof *it->bidx);
  it->ridx = PyMem_Malloc(scratch * sizeof *it->ridx);
  if (it->cols == NULL || it->bat == NULL || it->src == NULL || it->rows == NULL ||
      it->bidx == NULL || it->ridx == NULL) {
    Py_DECREF(it);
    return PyErr_NoMemory();
  }
  for (int32_t c = 0; c < it->nc; c++) np_col_plan(qv_schema_field(schema, c)->type, &it->cols[c]);
  return (PyObject *)it;
}
