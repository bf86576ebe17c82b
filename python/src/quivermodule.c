/*
 * quivermodule.c — the CPython extension `quiver._quiver`: quiver.Dataset
 * and friends over the C library's dataset layer (include/quiver/dataset.h).
 * It sits at the top of the layers, beside the CLI (tools/quiver): it parses
 * and checks Python arguments, calls the dataset layer (with the GIL
 * released around the long calls) and turns its results into Python
 * objects. No dataset logic lives here.
 *
 * What it adds over the C API:
 *  - rows as Python values (dict per row, list per list, ...), converted in
 *    C from the Arrow arrays with the values pyarrow's Scalar.as_py() gives
 *    (see value_of below and docs/python.md);
 *  - the Arrow PyCapsule interface (apache/arrow
 *    docs/source/format/CDataInterface/PyCapsuleInterface.rst):
 *    Dataset.__arrow_c_stream__ / __arrow_c_schema__ and
 *    Batch.__arrow_c_array__ / __arrow_c_schema__. Capsules are named
 *    "arrow_schema", "arrow_array" and "arrow_array_stream"; their
 *    destructor calls the struct's release callback when it is still set
 *    (a consumer that moved the struct out has nulled it) and frees it.
 *
 * Ownership: a Dataset object holds one qv_dataset reference, which keeps
 * its tables and so its file mappings alive. Exported C structs and Batch
 * objects hold references on the arrays and buffers they use (and thus on
 * the mappings), never on Python objects, so they stay valid after the
 * Dataset is gone and may be released from any thread.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>

#include <stdlib.h>
#include <string.h>

#include "quiver/array.h"
#include "quiver/builder.h"
#include "quiver/cdata.h"
#include "quiver/dataset.h"
#include "quiver/hf.h"
#include "quiver/ipc.h"
#include "quiver/print.h"

/** Deepest nesting converted to Python values (as qv_format_value_json). */
#define QVPY_MAX_DEPTH 256
/** Rows per batch when iterating rows (iter(ds)) and reading columns. */
#define QVPY_ROW_BATCH 1000

static PyObject *QuiverError;   /* quiver.QuiverError */
static PyObject *json_loads;    /* json.loads */
static PyObject *decimal_cls;   /* decimal.Decimal */
static PyObject *zoneinfo_cls;  /* zoneinfo.ZoneInfo, imported on first use */
static PyObject *pd_timestamp;  /* pandas.Timestamp, or Py_None without pandas */
static PyObject *pd_timedelta;  /* pandas.Timedelta */

static PyTypeObject DatasetType, BatchType, RowIterType, BatchIterType;

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

/* Raise quiver.QuiverError carrying the C message; `status` and `code`
 * attributes name the qv_status. Returns NULL. */
static PyObject *raise_qv(qv_status st, const qv_error *err) {
  const char *msg = err->message[0] ? err->message : qv_status_name(st);
  PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
  if (text == NULL) return NULL;
  PyObject *exc = PyObject_CallOneArg(QuiverError, text);
  Py_DECREF(text);
  if (exc == NULL) return NULL;
  PyObject *name = PyUnicode_FromString(qv_status_name(st));
  PyObject *code = PyLong_FromLong((long)st);
  if (name != NULL && code != NULL && PyObject_SetAttrString(exc, "status", name) == 0 &&
      PyObject_SetAttrString(exc, "code", code) == 0)
    PyErr_SetObject(QuiverError, exc);
  Py_XDECREF(name);
  Py_XDECREF(code);
  Py_DECREF(exc);
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Arrow values -> Python objects                                            */

static PyObject *value_of(const qv_array *a, int64_t row, int depth);

static PyObject *bad_array(const qv_array *a, const char *what, int64_t row) {
  PyErr_Format(QuiverError, "%s array: %s of element %lld is out of bounds",
               qv_type_id_name(a->type->id), what, (long long)row);
  return NULL;
}

/* Element `k` (physical) of buffer `b` read as a `width`-byte integer, or
 * false when it lies outside the buffer. */
static bool read_int(const qv_array *a, int b, int64_t k, int width, bool is_signed,
                     int64_t *out) {
  if (b >= a->n_buffers || a->buffers[b] == NULL || k < 0 ||
      (k + 1) * width > a->buffers[b]->size)
    return false;
  const uint8_t *p = a->buffers[b]->data + k * width;
  switch (width) {
    case 1: *out = is_signed ? (int64_t)(int8_t)p[0] : (int64_t)p[0]; return true;
    case 2: { int16_t v; memcpy(&v, p, 2); *out = is_signed ? v : (int64_t)(uint16_t)v; return true; }
    case 4: { int32_t v; memcpy(&v, p, 4); *out = is_signed ? v : (int64_t)(uint32_t)v; return true; }
    default: memcpy(out, p, 8); return true;
  }
}

/* Pointer to `width` bytes of element k of buffer b, or NULL. */
static const uint8_t *elem(const qv_array *a, int b, int64_t k, int64_t width) {
  if (b >= a->n_buffers || a->buffers[b] == NULL || k < 0 ||
      (k + 1) * width > a->buffers[b]->size)
    return NULL;
  return a->buffers[b]->data + k * width;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Days since 1970-01-01 -> proleptic Gregorian y/m/d (H. Hinnant's
 * civil_from_days). Python's date range is years 1..9999. */
static PyObject *date_of_days(int64_t days, int *y, int *m, int *d) {
  if (days < -719162 || days > 2932896) {
    PyErr_Format(PyExc_OverflowError, "date %lld days from 1970-01-01 is outside Python's "
                 "date range (years 1 to 9999)", (long long)days);
    return NULL;
  }
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = (int)(yoe + era * 400 + (*m <= 2));
  return Py_None; /* borrowed marker: success */
}

/* pandas.Timestamp / Timedelta when pandas imports (as pyarrow's as_py
 * for nanosecond values), else Py_None. Borrowed. */
static PyObject *pandas_class(bool timestamp) {
  if (pd_timestamp == NULL) {
    PyObject *pd = PyImport_ImportModule("pandas");
    if (pd == NULL) {
      PyErr_Clear();
      pd_timestamp = Py_NewRef(Py_None);
      pd_timedelta = Py_NewRef(Py_None);
    } else {
      pd_timestamp = PyObject_GetAttrString(pd, "Timestamp");
      pd_timedelta = PyObject_GetAttrString(pd, "Timedelta");
      Py_DECREF(pd);
      if (pd_timestamp == NULL || pd_timedelta == NULL) {
        Py_CLEAR(pd_timestamp);
        Py_CLEAR(pd_timedelta);
        return NULL;
      }
    }
  }
  return timestamp ? pd_timestamp : pd_timedelta;
}

/* tzinfo for an Arrow timezone string: "+HH:MM" / "-HH:MM" fixed offsets
 * as datetime.timezone, anything else through zoneinfo.ZoneInfo. */
static PyObject *tzinfo_of(const char *tz) {
  if ((tz[0] == '+' || tz[0] == '-') && strlen(tz) == 6 && tz[3] == ':') {
    int h = (tz[1] - '0') * 10 + (tz[2] - '0'), mi = (tz[4] - '0') * 10 + (tz[5] - '0');
    int sign = tz[0] == '-' ? -1 : 1;
    PyObject *delta = PyDelta_FromDSU(0, sign * (h * 3600 + mi * 60), 0);
    if (delta == NULL) return NULL;
    PyObject *r = PyTimeZone_FromOffset(delta);
    Py_DECREF(delta);
    return r;
  }
  if (zoneinfo_cls == NULL) {
    PyObject *zi = PyImport_ImportModule("zoneinfo");
    if (zi == NULL) return NULL;
    zoneinfo_cls = PyObject_GetAttrString(zi, "ZoneInfo");
    Py_DECREF(zi);
    if (zoneinfo_cls == NULL) return NULL;
  }
  return PyObject_CallFunction(zoneinfo_cls, "s", tz);
}

static const int64_t per_second[] = {1, 1000, 1000000, 1000000000};

/* A timestamp as pyarrow's as_py: datetime.datetime (microseconds; the
 * wall time in the type's timezone, tz-aware, when it has one); nanosecond
 * values as pandas.Timestamp when pandas is installed, else datetime when
 * exact (ValueError otherwise). */
static PyObject *timestamp_of(int64_t v, const qv_type *t) {
  if (t->unit == QV_NANO) {
    PyObject *cls = pandas_class(true);
    if (cls == NULL) return NULL;
    if (cls != Py_None) {
      PyObject *args = Py_BuildValue("(L)", (long long)v);
      PyObject *kw = t->timezone ? Py_BuildValue("{s:s,s:s}", "unit", "ns", "tz", t->timezone)
                                 : Py_BuildValue("{s:s}", "unit", "ns");
      PyObject *r = args && kw ? PyObject_Call(cls, args, kw) : NULL;
      Py_XDECREF(args);
      Py_XDECREF(kw);
      return r;
    }
    if (v % 1000 != 0) {
      PyErr_Format(PyExc_ValueError, "timestamp %lld ns has nanoseconds, which "
                   "datetime.datetime cannot hold (install pandas for pandas.Timestamp)",
                   (long long)v);
      return NULL;
    }
  }
  int64_t ps = per_second[t->unit];
  int64_t secs = floor_div(v, ps), frac = v - secs * ps;
  int64_t us = t->unit == QV_NANO ? frac / 1000 : frac * (1000000 / ps);
  int64_t days = floor_div(secs, 86400), sod = secs - days * 86400;
  int y, m, d;
  if (date_of_days(days, &y, &m, &d) == NULL) return NULL;
  int hh = (int)(sod / 3600), mi = (int)(sod / 60 % 60), ss = (int)(sod % 60);
  if (t->timezone == NULL)
    return PyDateTime_FromDateAndTime(y, m, d, hh, mi, ss, (int)us);
  PyObject *tz = tzinfo_of(t->timezone);
  if (tz == NULL) return NULL;
  PyObject *utc = PyDateTimeAPI->DateTime_FromDateAndTime(y, m, d, hh, mi, ss, (int)us, tz,
                                                          PyDateTimeAPI->DateTimeType);
  PyObject *r = utc ? PyObject_CallMethod(tz, "fromutc", "O", utc) : NULL;
  Py_XDECREF(utc);
  Py_DECREF(tz);
  return r;
}

/* A duration as pyarrow's as_py: datetime.timedelta; nanoseconds as
 * pandas.Timedelta when pandas is installed. */
static PyObject *duration_of(int64_t v, qv_time_unit unit) {
  if (unit == QV_NANO) {
    PyObject *cls = pandas_class(false);
    if (cls == NULL) return NULL;
    if (cls != Py_None) return PyObject_CallFunction(cls, "Ls", (long long)v, "ns");
    if (v % 1000 != 0) {
      PyErr_Format(PyExc_ValueError, "duration %lld ns has nanoseconds, which "
                   "datetime.timedelta cannot hold (install pandas for pandas.Timedelta)",
                   (long long)v);
      return NULL;
    }
  }
  int64_t ps = per_second[unit];
  int64_t secs = floor_div(v, ps), frac = v - secs * ps;
  int64_t us = unit == QV_NANO ? frac / 1000 : frac * (1000000 / ps);
  int64_t days = floor_div(secs, 86400), sod = secs - days * 86400;
  if (days > 999999999 || days < -999999999) {
    PyErr_Format(PyExc_OverflowError, "duration %lld is outside datetime.timedelta's range",
                 (long long)v);
    return NULL;
  }
  return PyDelta_FromDSU((int)days, (int)sod, (int)us);
}

/* time of day as datetime.time (nanoseconds truncated to microseconds,
 * as pyarrow does). */
static PyObject *time_of(int64_t v, qv_time_unit unit) {
  int64_t ps = per_second[unit];
  if (v < 0 || v >= 86400 * ps) {
    PyErr_Format(PyExc_ValueError, "time of day %lld (%s) is outside one day", (long long)v,
                 unit == QV_SECOND ? "s" : unit == QV_MILLI ? "ms" : unit == QV_MICRO ? "us" : "ns");
    return NULL;
  }
  int64_t secs = v / ps, frac = v % ps;
  int64_t us = unit == QV_NANO ? frac / 1000 : frac * (1000000 / ps);
  return PyTime_FromTime((int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60), (int)us);
}

static PyObject *decimal_of(const qv_array *a, int64_t k, int64_t row) {
  int width = qv_type_byte_width(a->type);
  const uint8_t *p = elem(a, 1, k, width);
  if (p == NULL) return bad_array(a, "value", row);
  char text[QV_DECIMAL_STRING_MAX];
  qv_decimal_to_string(p, width, a->type->scale, text);
  return PyObject_CallFunction(decimal_cls, "s", text);
}

/* Elements [start, end) of `child` as a list. */
static PyObject *list_of(const qv_array *a, const qv_array *child, int64_t start, int64_t end,
                         int64_t row, int depth) {
  if (child == NULL || start < 0 || end < start || end > child->length)
    return bad_array(a, "child range", row);
  PyObject *list = PyList_New((Py_ssize_t)(end - start));
  if (list == NULL) return NULL;
  for (int64_t j = start; j < end; j++) {
    PyObject *v = value_of(child, j, depth + 1);
    if (v == NULL) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)(j - start), v);
  }
  return list;
}

/* Struct element at physical index k as {field: value}. */
static PyObject *struct_of(const qv_array *a, int64_t k, int depth) {
  PyObject *dict = PyDict_New();
  if (dict == NULL) return NULL;
  for (int32_t i = 0; i < a->type->n_children; i++) {
    const qv_array *c = i < a->n_children ? a->children[i] : NULL;
    if (c == NULL || k >= c->length) {
      Py_DECREF(dict);
      return bad_array(a, "struct child", k);
    }
    PyObject *v = value_of(c, k, depth + 1);
    if (v == NULL || PyDict_SetItemString(dict, a->type->children[i].name, v) < 0) {
      Py_XDECREF(v);
      Py_DECREF(dict);
      return NULL;
    }
    Py_DECREF(v);
  }
  return dict;
}

static PyObject *bytes_value(qv_type_id id, const uint8_t *p, int64_t n) {
  if (id == QV_STRING || id == QV_LARGE_STRING || id == QV_STRING_VIEW)
    return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "strict");
  return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
}

/* Element `row` (logical) of `a` as the Python value pyarrow's
 * Scalar.as_py() gives; NULL with an exception set on failure. Arrays
 * come validated (QV_VALIDATE_DEFAULT) from the readers; offsets and
 * indices are still checked against their buffers. */
static PyObject *value_of(const qv_array *a, int64_t row, int depth) {
  if (depth > QVPY_MAX_DEPTH) {
    PyErr_SetString(PyExc_RecursionError, "value nested deeper than 256 levels");
    return NULL;
  }
  const qv_type *t = a->type;
  qv_type_id id = t->id;
  int64_t k = a->offset + row;
  if (id == QV_NA) Py_RETURN_NONE;
  if (id != QV_SPARSE_UNION && id != QV_DENSE_UNION && id != QV_RUN_END_ENCODED &&
      a->n_buffers > 0 && a->buffers[0] != NULL) {
    if ((k >> 3) >= a->buffers[0]->size) return bad_array(a, "validity bit", row);
    if (!qv_bit_get(a->buffers[0]->data, k)) Py_RETURN_NONE;
  }
  int64_t v;
  switch (id) {
    case QV_BOOL:
      if (elem(a, 1, k >> 3, 1) == NULL) return bad_array(a, "value", row);
      return PyBool_FromLong(qv_bit_get(a->buffers[1]->data, k));
    case QV_INT8: case QV_INT16: case QV_INT32: case QV_INT64:
      if (!read_int(a, 1, k, qv_type_byte_width(t), true, &v)) return bad_array(a, "value", row);
      return PyLong_FromLongLong(v);
    case QV_UINT8: case QV_UINT16: case QV_UINT32: case QV_UINT64:
      if (!read_int(a, 1, k, qv_type_byte_width(t), false, &v)) return bad_array(a, "value", row);
      return PyLong_FromUnsignedLongLong((unsigned long long)(uint64_t)v);
    case QV_HALF_FLOAT: {
      const uint8_t *p = elem(a, 1, k, 2);
      if (p == NULL) return bad_array(a, "value", row);
      uint16_t h;
      memcpy(&h, p, 2);
      return PyFloat_FromDouble(qv_half_to_double(h));
    }
    case QV_FLOAT: {
      const uint8_t *p = elem(a, 1, k, 4);
      if (p == NULL) return bad_array(a, "value", row);
      float f;
      memcpy(&f, p, 4);
      return PyFloat_FromDouble(f);
    }
    case QV_DOUBLE: {
      const uint8_t *p = elem(a, 1, k, 8);
      if (p == NULL) return bad_array(a, "value", row);
      double d;
      memcpy(&d, p, 8);
      return PyFloat_FromDouble(d);
    }
    case QV_DECIMAL32: case QV_DECIMAL64: case QV_DECIMAL128: case QV_DECIMAL256:
      return decimal_of(a, k, row);
    case QV_DATE32: case QV_DATE64: {
      if (!read_int(a, 1, k, id == QV_DATE32 ? 4 : 8, true, &v)) return bad_array(a, "value", row);
      int y, m, d;
      if (date_of_days(id == QV_DATE64 ? floor_div(v, 86400000) : v, &y, &m, &d) == NULL)
        return NULL;
      return PyDate_FromDate(y, m, d);
    }
    case QV_TIME32: case QV_TIME64:
      if (!read_int(a, 1, k, id == QV_TIME32 ? 4 : 8, true, &v)) return bad_array(a, "value", row);
      return time_of(v, t->unit);
    case QV_TIMESTAMP:
      if (!read_int(a, 1, k, 8, true, &v)) return bad_array(a, "value", row);
      return timestamp_of(v, t);
    case QV_DURATION:
      if (!read_int(a, 1, k, 8, true, &v)) return bad_array(a, "value", row);
      return duration_of(v, t->unit);
    case QV_INTERVAL_MONTHS:
      if (!read_int(a, 1, k, 4, true, &v)) return bad_array(a, "value", row);
      return PyLong_FromLongLong(v);
    case QV_BINARY: case QV_STRING: case QV_LARGE_BINARY: case QV_LARGE_STRING: {
      int w = (id == QV_BINARY || id == QV_STRING) ? 4 : 8;
      int64_t s, e;
      if (!read_int(a, 1, k, w, true, &s) || !read_int(a, 1, k + 1, w, true, &e))
        return bad_array(a, "offset", row);
      if (s < 0 || e < s || a->n_buffers < 3 || a->buffers[2] == NULL ||
          e > a->buffers[2]->size) {
        if (s == e) return bytes_value(id, (const uint8_t *)"", 0);
        return bad_array(a, "value bytes", row);
      }
      return bytes_value(id, a->buffers[2]->data + s, e - s);
    }
    case QV_BINARY_VIEW: case QV_STRING_VIEW: {
      const uint8_t *p = elem(a, 1, k, 16);
      if (p == NULL) return bad_array(a, "view", row);
      int32_t len, buf, off;
      memcpy(&len, p, 4);
      if (len < 0) return bad_array(a, "view length", row);
      if (len <= 12) return bytes_value(id, p + 4, len);
      memcpy(&buf, p + 8, 4);
      memcpy(&off, p + 12, 4);
      if (buf < 0 || buf >= a->n_buffers - 2 || off < 0 || a->buffers[2 + buf] == NULL ||
          (int64_t)off + len > a->buffers[2 + buf]->size)
        return bad_array(a, "view data", row);
      return bytes_value(id, a->buffers[2 + buf]->data + off, len);
    }
    case QV_FIXED_SIZE_BINARY: {
      if (t->byte_width == 0) return PyBytes_FromStringAndSize("", 0);
      const uint8_t *p = elem(a, 1, k, t->byte_width);
      if (p == NULL) return bad_array(a, "value", row);
      return PyBytes_FromStringAndSize((const char *)p, t->byte_width);
    }
    case QV_LIST: case QV_LARGE_LIST: case QV_MAP: {
      int w = id == QV_LARGE_LIST ? 8 : 4;
      int64_t s, e;
      if (!read_int(a, 1, k, w, true, &s) || !read_int(a, 1, k + 1, w, true, &e))
        return bad_array(a, "offset", row);
      const qv_array *child = a->n_children > 0 ? a->children[0] : NULL;
      if (id != QV_MAP) return list_of(a, child, s, e, row, depth);
      /* pyarrow: a list of (key, value) tuples */
      if (child == NULL || child->n_children < 2 || s < 0 || e < s || e > child->length)
        return bad_array(a, "map entries", row);
      PyObject *list = PyList_New((Py_ssize_t)(e - s));
      for (int64_t j = s; list != NULL && j < e; j++) {
        int64_t ck = child->offset + j;
        PyObject *key = NULL, *val = NULL, *pair = NULL;
        if (ck < child->children[0]->length && ck < child->children[1]->length) {
          key = value_of(child->children[0], ck, depth + 1);
          val = key ? value_of(child->children[1], ck, depth + 1) : NULL;
          pair = val ? PyTuple_Pack(2, key, val) : NULL;
        } else {
          bad_array(a, "map entry", row);
        }
        Py_XDECREF(key);
        Py_XDECREF(val);
        if (pair == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)(j - s), pair);
      }
      return list;
    }
    case QV_LIST_VIEW: case QV_LARGE_LIST_VIEW: {
      int w = id == QV_LIST_VIEW ? 4 : 8;
      int64_t s, n;
      if (!read_int(a, 1, k, w, true, &s) || !read_int(a, 2, k, w, true, &n) || n < 0 ||
          s > INT64_MAX - n)
        return bad_array(a, "offset/size", row);
      return list_of(a, a->n_children > 0 ? a->children[0] : NULL, s, s + n, row, depth);
    }
    case QV_FIXED_SIZE_LIST: {
      int64_t n = t->list_size;
      if (n > 0 && k > INT64_MAX / n - 1) return bad_array(a, "list", row);
      return list_of(a, a->n_children > 0 ? a->children[0] : NULL, k * n, k * n + n, row, depth);
    }
    case QV_STRUCT:
      return struct_of(a, k, depth);
    case QV_SPARSE_UNION: case QV_DENSE_UNION: {
      int64_t code;
      if (!read_int(a, 0, k, 1, true, &code)) return bad_array(a, "type id", row);
      int32_t ci = -1;
      for (int32_t i = 0; i < t->n_children; i++)
        if ((t->type_codes ? t->type_codes[i] : i) == code) ci = i;
      if (ci < 0 || ci >= a->n_children || a->children[ci] == NULL)
        return bad_array(a, "type id", row);
      int64_t ck = k;
      if (id == QV_DENSE_UNION && !read_int(a, 1, k, 4, true, &ck))
        return bad_array(a, "offset", row);
      if (ck < 0 || ck >= a->children[ci]->length) return bad_array(a, "child index", row);
      return value_of(a->children[ci], ck, depth + 1);
    }
    case QV_DICTIONARY: {
      qv_type_id iid = t->index_type->id;
      if (!read_int(a, 1, k, qv_type_byte_width(t->index_type), qv_type_id_is_signed_integer(iid),
                    &v))
        return bad_array(a, "index", row);
      if (a->dictionary == NULL || v < 0 || v >= a->dictionary->length)
        return bad_array(a, "dictionary index", row);
      return value_of(a->dictionary, v, depth + 1);
    }
    case QV_RUN_END_ENCODED: {
      if (a->n_children < 2 || a->children[0] == NULL || a->children[1] == NULL)
        return bad_array(a, "children", row);
      const qv_array *ends = a->children[0];
      int w = qv_type_byte_width(ends->type);
      int64_t lo = 0, hi = ends->length; /* first run whose end is > k */
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (!read_int(ends, 1, ends->offset + mid, w, true, &v)) return bad_array(a, "run end", row);
        if (v > k) hi = mid;
        else lo = mid + 1;
      }
      if (lo >= ends->length || lo >= a->children[1]->length) return bad_array(a, "run", row);
      return value_of(a->children[1], lo, depth + 1);
    }
    case QV_INTERVAL_DAY_TIME: case QV_INTERVAL_MONTH_DAY_NANO: case QV_NA:
    case QV_TYPE_ID_COUNT:
      break;
  }
  char name[256];
  qv_type_to_string(t, name, sizeof name);
  PyErr_Format(PyExc_NotImplementedError, "quiver cannot convert values of type %s to Python "
               "objects (read them through pyarrow: pyarrow.table(ds))", name);
  return NULL;
}

/* Row `row` of a record batch (STRUCT array) as {column: value}. */
static PyObject *row_dict(const qv_array *batch, int64_t row) {
  return struct_of(batch, batch->offset + row, 0);
}

/* Rows of a record batch as {column: [values]} (datasets' batch format). */
static PyObject *columns_dict(const qv_array *batch) {
  PyObject *dict = PyDict_New();
  for (int32_t c = 0; dict != NULL && c < batch->type->n_children; c++) {
    const qv_array *col = batch->children[c];
    PyObject *list = list_of(batch, col, batch->offset, batch->offset + batch->length, 0, 0);
    if (list == NULL || PyDict_SetItemString(dict, batch->type->children[c].name, list) < 0)
      Py_CLEAR(dict);
    Py_XDECREF(list);
  }
  return dict;
}

/* ------------------------------------------------------------------------ */
/* Argument helpers                                                          */

/* A Python int (not bool) as int64 into *out; `what` names it in errors. */
static bool arg_int64(PyObject *o, const char *what, int64_t *out) {
  if (PyBool_Check(o) || !PyIndex_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(o)->tp_name);
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
static bool arg_seed(PyObject *o, uint64_t *out) {
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
    PyErr_Format(PyExc_TypeError, "seed must be an int or None, not %.100s", Py_TYPE(o)->tp_name);
    return false;
  }
  PyObject *i = PyNumber_Index(o);
  if (i == NULL) return false;
  unsigned long long v = PyLong_AsUnsignedLongLong(i);
  Py_DECREF(i);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_SetString(PyExc_ValueError, "seed must be between 0 and 2**64 - 1");
    return false;
  }
  *out = v;
  return true;
}

/* Column names: a str or a sequence of str, as UTF-8 pointers into the
 * returned list's items (*out freed with PyMem_Free; the list kept alive
 * in *keep). */
static bool arg_names(PyObject *o, const char *what, PyObject **keep, const char ***out,
                      int32_t *n) {
  PyObject *seq = PyUnicode_Check(o) ? PyTuple_Pack(1, o)
                                     : PySequence_Fast(o, "");
  if (seq == NULL) {
    PyErr_Format(PyExc_TypeError, "%s must be a str or a list of str, not %.100s", what,
                 Py_TYPE(o)->tp_name);
    return false;
  }
  Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
  if (len > INT32_MAX) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError, "%s: too many names", what);
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
      PyErr_Format(PyExc_TypeError, "%s must hold str, found %.100s at position %zd", what,
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
static bool arg_rows(PyObject *o, int64_t n_rows, bool negative_ok, int64_t **out, int64_t *n) {
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
    ok = arg_int64(PySequence_Fast_GET_ITEM(seq, i), "an index", &given);
    rows[i] = negative_ok && given < 0 ? given + n_rows : given;
    if (ok && (rows[i] < 0 || rows[i] >= n_rows)) {
      PyErr_Format(PyExc_IndexError, "index %lld (position %zd) is out of range for a dataset "
                   "of %lld rows", (long long)given, i, (long long)n_rows);
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

static qv_dataset_options options(int cache) {
  qv_dataset_options o;
  memset(&o, 0, sizeof o);
  o.keep_in_memory = !cache;
  return o;
}

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

static void stream_capsule_free(PyObject *cap) {
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
static PyObject *new_capsule(size_t size, const char *name, PyCapsule_Destructor d, void **out) {
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

static PyObject *schema_capsule(const qv_schema *schema) {
  struct ArrowSchema *s = NULL;
  PyObject *cap = new_capsule(sizeof *s, "arrow_schema", schema_capsule_free, (void **)&s);
  if (cap == NULL) return NULL;
  qv_error err;
  qv_status st = qv_export_schema(schema, s, &err);
  if (st != QV_OK) {
    Py_DECREF(cap);
    return raise_qv(st, &err);
  }
  return cap;
}

/* requested_schema of __arrow_c_array__ / __arrow_c_stream__: None or an
 * "arrow_schema" capsule. Conversion is best-effort per the interface:
 * quiver hands out its own schema; a request with another number of
 * fields is refused (ValueError), as the interface asks. */
static bool check_requested(PyObject *req, const qv_schema *schema) {
  if (req == NULL || req == Py_None) return true;
  if (!PyCapsule_IsValid(req, "arrow_schema")) {
    PyErr_SetString(PyExc_TypeError, "requested_schema must be None or an 'arrow_schema' "
                    "PyCapsule");
    return false;
  }
  const struct ArrowSchema *s = PyCapsule_GetPointer(req, "arrow_schema");
  if (s == NULL) return false;
  if (s->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "requested_schema: the ArrowSchema was released");
    return false;
  }
  if (s->n_children != qv_schema_num_fields(schema)) {
    PyErr_Format(PyExc_ValueError, "requested_schema has %lld fields, the data has %d",
                 (long long)s->n_children, (int)qv_schema_num_fields(schema));
    return false;
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* Batch: one record batch (STRUCT array) with the PyCapsule array interface */

typedef struct {
  PyObject_HEAD
  qv_array *array;   /* STRUCT array, reference */
  qv_schema *schema; /* reference */
} BatchObject;

static PyObject *new_batch(qv_array *array, qv_schema *schema) {
  BatchObject *b = PyObject_New(BatchObject, &BatchType);
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

static PyObject *column_names_of(const qv_schema *s) {
  PyObject *list = PyList_New(qv_schema_num_fields(s));
  for (int32_t i = 0; list != NULL && i < qv_schema_num_fields(s); i++) {
    PyObject *name = PyUnicode_FromString(qv_schema_field(s, i)->name);
    if (name == NULL) Py_CLEAR(list);
    else PyList_SET_ITEM(list, i, name);
  }
  return list;
}

static PyObject *Batch_column_names(BatchObject *self, void *closure) {
  return column_names_of(self->schema);
}

static PyObject *Batch_num_rows(BatchObject *self, void *closure) {
  return PyLong_FromLongLong(self->array->length);
}

static PyObject *Batch_to_pylist(BatchObject *self, PyObject *unused) {
  PyObject *list = PyList_New((Py_ssize_t)self->array->length);
  for (int64_t i = 0; list != NULL && i < self->array->length; i++) {
    PyObject *row = row_dict(self->array, i);
    if (row == NULL) Py_CLEAR(list);
    else PyList_SET_ITEM(list, (Py_ssize_t)i, row);
  }
  return list;
}

static PyObject *Batch_to_pydict(BatchObject *self, PyObject *unused) {
  return columns_dict(self->array);
}

static PyObject *Batch_arrow_c_schema(BatchObject *self, PyObject *unused) {
  return schema_capsule(self->schema);
}

static PyObject *Batch_arrow_c_array(BatchObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"requested_schema", NULL};
  PyObject *req = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:__arrow_c_array__", kw, &req)) return NULL;
  if (!check_requested(req, self->schema)) return NULL;
  PyObject *scap = schema_capsule(self->schema);
  if (scap == NULL) return NULL;
  struct ArrowArray *a = NULL;
  PyObject *acap = new_capsule(sizeof *a, "arrow_array", array_capsule_free, (void **)&a);
  if (acap == NULL) {
    Py_DECREF(scap);
    return NULL;
  }
  qv_error err;
  qv_status st = qv_export_array(self->array, a, &err);
  if (st != QV_OK) {
    Py_DECREF(scap);
    Py_DECREF(acap);
    return raise_qv(st, &err);
  }
  PyObject *pair = PyTuple_Pack(2, scap, acap);
  Py_DECREF(scap);
  Py_DECREF(acap);
  return pair;
}

static PyObject *Batch_repr(BatchObject *self) {
  PyObject *names = column_names_of(self->schema);
  if (names == NULL) return NULL;
  PyObject *r = PyUnicode_FromFormat("quiver.Batch(columns=%R, num_rows=%lld)", names,
                                     (long long)self->array->length);
  Py_DECREF(names);
  return r;
}

static PyMethodDef Batch_methods[] = {
    {"to_pylist", (PyCFunction)Batch_to_pylist, METH_NOARGS,
     "The rows as a list of {column: value} dicts."},
    {"to_pydict", (PyCFunction)Batch_to_pydict, METH_NOARGS,
     "The columns as a {column: [values]} dict."},
    {"__arrow_c_schema__", (PyCFunction)Batch_arrow_c_schema, METH_NOARGS,
     "The schema as an 'arrow_schema' PyCapsule (struct ArrowSchema)."},
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))Batch_arrow_c_array,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_array__(requested_schema=None): the batch as a pair of PyCapsules "
     "('arrow_schema', 'arrow_array'): a struct array of the columns, zero copy."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Batch_getset[] = {
    {"column_names", (getter)Batch_column_names, NULL, "Column names.", NULL},
    {"num_rows", (getter)Batch_num_rows, NULL, "Number of rows.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods Batch_as_sequence = {.sq_length = (lenfunc)Batch_len};

static PyTypeObject BatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver.Batch",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = (destructor)Batch_dealloc,
    .tp_repr = (reprfunc)Batch_repr,
    .tp_as_sequence = &Batch_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A record batch of a dataset (from Dataset.iter), exported to Arrow "
              "consumers through __arrow_c_array__ without a copy.",
    .tp_methods = Batch_methods,
    .tp_getset = Batch_getset,
};

/* ------------------------------------------------------------------------ */
/* Dataset                                                                   */

typedef struct {
  PyObject_HEAD
  qv_dataset *ds; /* reference */
} DatasetObject;

/* Wrap `ds` (its reference taken over). */
static PyObject *wrap(qv_dataset *ds) {
  DatasetObject *o = PyObject_New(DatasetObject, &DatasetType);
  if (o == NULL) {
    qv_dataset_unref(ds);
    return NULL;
  }
  o->ds = ds;
  return (PyObject *)o;
}

/* The result of a transform: the new dataset or the error. */
static PyObject *result(qv_status st, qv_dataset *out, const qv_error *err) {
  if (st != QV_OK) return raise_qv(st, err);
  return wrap(out);
}

static void Dataset_dealloc(DatasetObject *self) {
  qv_dataset_unref(self->ds);
  PyObject_Free(self);
}

static PyObject *Dataset_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyErr_SetString(PyExc_TypeError, "quiver.Dataset cannot be created directly: use "
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
  return column_names_of(qv_dataset_schema(self->ds));
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
  PyObject *r = st == QV_OK ? PyObject_CallFunction(json_loads, "s#", qv_strbuf_cstr(&sb),
                                                    (Py_ssize_t)sb.len)
                            : raise_qv(st, &err);
  qv_strbuf_reset(&sb);
  return r;
}

static PyObject *Dataset_cache_files(DatasetObject *self, void *c) {
  char **paths = NULL;
  int64_t n = 0;
  qv_error err;
  qv_status st = qv_dataset_cache_files(self->ds, &paths, &n, &err);
  if (st != QV_OK) return raise_qv(st, &err);
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
  PyObject *names = column_names_of(qv_dataset_schema(self->ds));
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
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_take(ds, rows, n, &b, &err);
  Py_END_ALLOW_THREADS
  if (st != QV_OK) return raise_qv(st, &err);
  PyObject *r = columns_dict(b);
  qv_array_unref(b);
  return r;
}

/* One column over every row, as a list. */
static PyObject *column_list(qv_dataset *ds, const char *name) {
  qv_table *t = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_column(ds, name, &t, &err);
  Py_END_ALLOW_THREADS
  if (st != QV_OK) return raise_qv(st, &err);
  PyObject *list = PyList_New((Py_ssize_t)qv_table_num_rows(t));
  Py_ssize_t pos = 0;
  for (int64_t i = 0; list != NULL && i < qv_table_num_batches(t); i++) {
    qv_array *b = NULL;
    st = qv_table_batch(t, i, &b, &err);
    if (st != QV_OK) {
      raise_qv(st, &err);
      Py_CLEAR(list);
      break;
    }
    const qv_array *col = b->children[0];
    for (int64_t j = 0; j < b->length; j++) {
      PyObject *v = value_of(col, b->offset + j, 0);
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

/* ds[i] -> row dict; ds[a:b:c] and ds[[i, j, ...]] -> {column: [values]};
 * ds["col"] -> list of the column's values (datasets' __getitem__). */
static PyObject *Dataset_getitem(DatasetObject *self, PyObject *key) {
  int64_t n = qv_dataset_num_rows(self->ds);
  if (PyUnicode_Check(key)) {
    const char *name = PyUnicode_AsUTF8(key);
    if (name == NULL) return NULL;
    if (qv_dataset_column_index(self->ds, name) < 0) {
      PyObject *names = column_names_of(qv_dataset_schema(self->ds));
      if (names != NULL) PyErr_Format(PyExc_KeyError, "Column %R not in the dataset. Current "
                                      "columns in the dataset: %R", key, names);
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
  if (PyIndex_Check(key) && !PyBool_Check(key)) {
    int64_t i;
    if (!arg_int64(key, "index", &i)) return NULL;
    if (i < -n || i >= n) {
      PyErr_Format(PyExc_IndexError, "index %lld is out of range for a dataset of %lld rows",
                   (long long)i, (long long)n);
      return NULL;
    }
    if (i < 0) i += n;
    qv_array *b = NULL;
    qv_error err;
    qv_status st = qv_dataset_row(self->ds, i, &b, &err);
    if (st != QV_OK) return raise_qv(st, &err);
    PyObject *r = row_dict(b, 0);
    qv_array_unref(b);
    return r;
  }
  if (PyList_Check(key) || PyTuple_Check(key) || PyRange_Check(key)) {
    int64_t *rows = NULL, m = 0;
    if (!arg_rows(key, n, true, &rows, &m)) return NULL;
    PyObject *r = take_columns(self->ds, rows, m);
    PyMem_Free(rows);
    return r;
  }
  PyErr_Format(PyExc_TypeError, "dataset indices must be an int, a slice, a list of ints or a "
               "column name, not %.100s", Py_TYPE(key)->tp_name);
  return NULL;
}

static PyObject *Dataset_select(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"indices", "cache", NULL};
  PyObject *idx;
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$p:select", kw, &idx, &cache)) return NULL;
  int64_t *rows = NULL, n = 0;
  if (!arg_rows(idx, qv_dataset_num_rows(self->ds), false, &rows, &n)) return NULL;
  qv_dataset_options o = options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_select(self->ds, rows, n, &o, &out, &err);
  Py_END_ALLOW_THREADS
  PyMem_Free(rows);
  return result(st, out, &err);
}

static PyObject *Dataset_shuffle(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"seed", "cache", NULL};
  PyObject *seed_obj = Py_None;
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$p:shuffle", kw, &seed_obj, &cache))
    return NULL;
  uint64_t seed;
  if (!arg_seed(seed_obj, &seed)) return NULL;
  qv_dataset_options o = options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_shuffle(self->ds, seed, &o, &out, &err);
  Py_END_ALLOW_THREADS
  return result(st, out, &err);
}

static PyObject *Dataset_sort(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"column_names", "reverse", "null_placement", "cache", NULL};
  PyObject *cols_obj, *rev_obj = Py_False;
  const char *placement = "at_end";
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Os$p:sort", kw, &cols_obj, &rev_obj,
                                   &placement, &cache))
    return NULL;
  qv_null_placement nulls;
  if (strcmp(placement, "at_end") == 0 || strcmp(placement, "last") == 0) nulls = QV_NULLS_AT_END;
  else if (strcmp(placement, "at_start") == 0 || strcmp(placement, "first") == 0)
    nulls = QV_NULLS_AT_START;
  else
    return PyErr_Format(PyExc_ValueError, "null_placement must be 'at_end' or 'at_start', "
                        "found '%s'", placement);
  PyObject *keep = NULL;
  const char **cols = NULL;
  int32_t n = 0;
  if (!arg_names(cols_obj, "column_names", &keep, &cols, &n)) return NULL;
  bool *desc = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *desc);
  if (desc == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  if (PyBool_Check(rev_obj)) {
    for (int32_t i = 0; i < n; i++) desc[i] = rev_obj == Py_True;
  } else if (PyList_Check(rev_obj) || PyTuple_Check(rev_obj)) {
    if (PySequence_Size(rev_obj) != n) {
      PyErr_Format(PyExc_ValueError, "reverse has %zd values for %d columns",
                   PySequence_Size(rev_obj), (int)n);
      goto done;
    }
    for (int32_t i = 0; i < n; i++) {
      PyObject *b = PySequence_Fast_GET_ITEM(rev_obj, i);
      if (!PyBool_Check(b)) {
        PyErr_Format(PyExc_TypeError, "reverse must hold bools, found %.100s",
                     Py_TYPE(b)->tp_name);
        goto done;
      }
      desc[i] = b == Py_True;
    }
  } else {
    PyErr_Format(PyExc_TypeError, "reverse must be a bool or a list of bools, not %.100s",
                 Py_TYPE(rev_obj)->tp_name);
    goto done;
  }
  if (n == 0) {
    PyErr_SetString(PyExc_ValueError, "sort needs at least one column");
    goto done;
  }
  qv_dataset_options o = options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_sort(self->ds, cols, n, desc, nulls, &o, &out, &err);
  Py_END_ALLOW_THREADS
  PyMem_Free(desc);
  PyMem_Free(cols);
  Py_DECREF(keep);
  return result(st, out, &err);
done:
  PyMem_Free(desc);
  PyMem_Free(cols);
  Py_DECREF(keep);
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Python values -> Arrow arrays (what map functions return)                 */

/* Kinds of Python values a column may hold, inferred as pyarrow does. */
enum { K_NONE, K_BOOL, K_INT, K_FLOAT, K_STR, K_BYTES, K_LIST, K_STRUCT };
static const char *const kind_names[] = {"None", "bool", "int", "float", "str", "bytes", "list",
                                         "dict"};

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
    PyErr_Format(PyExc_TypeError, "%s: column '%s', row %lld: values nested deeper than %d",
                 w->what, w->col, (long long)w->row, QVPY_MAX_DEPTH);
    return false;
  }
  int k = kind_of(v);
  if (k < 0) {
    PyErr_Format(PyExc_TypeError, "%s: column '%s', row %lld: cannot convert a value of type "
                 "%.100s to Arrow (expected None, bool, int, float, str, bytes, list, dict, or "
                 "an array with __arrow_c_array__ for the whole column)", w->what, w->col,
                 (long long)w->row, Py_TYPE(v)->tp_name);
    return false;
  }
  if (k == K_NONE) return true;
  if (t->kind == K_NONE) {
    t->kind = k;
  } else if (t->kind != k) {
    if (t->kind == K_INT && k == K_FLOAT) {
      t->kind = K_FLOAT;
    } else if (!(t->kind == K_FLOAT && k == K_INT)) {
      PyErr_Format(PyExc_TypeError, "%s: column '%s', row %lld: a %s value among %s values (a "
                   "column holds one type; only int and float mix, as float)", w->what, w->col,
                   (long long)w->row, kind_names[k], kind_names[t->kind]);
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
        PyErr_Format(PyExc_TypeError, "%s: column '%s', row %lld: dict keys must be str, found "
                     "%.100s", w->what, w->col, (long long)w->row, Py_TYPE(key)->tp_name);
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
  static const qv_type_id ids[] = {QV_NA, QV_BOOL, QV_INT64, QV_DOUBLE, QV_STRING, QV_BINARY,
                                   QV_LIST, QV_STRUCT};
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
      raise_qv(st, &err);
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
      case K_BOOL:
        st = qv_builder_append_bool(b, v == Py_True, &err);
        break;
      case K_INT: {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred()) return false;
        if (overflow) {
          PyErr_Format(PyExc_OverflowError, "%s: column '%s', row %lld: int %R does not fit in "
                       "int64", w->what, w->col, (long long)w->row, v);
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
      default:
        break;
    }
  }
  if (st != QV_OK) {
    raise_qv(st, &err);
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
      PyErr_Format(PyExc_TypeError, "%s: __arrow_c_array__ of %.100s did not return a pair of "
                   "capsules", what, Py_TYPE(obj)->tp_name);
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
    raise_qv(st, &err);
    return false;
  }
  return true;
}

/* One column returned by a function: an Arrow array or a list of values. */
static bool column_of(PyObject *obj, const char *what, const char *col, int64_t first_row,
                      qv_array **out) {
  if (PyObject_HasAttrString(obj, "__arrow_c_array__")) return import_arrow(obj, what, out);
  if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "%s: column '%s': expected a list of values or an Arrow array "
                 "(__arrow_c_array__), not %.100s", what, col, Py_TYPE(obj)->tp_name);
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
  qv_type *ty = ok ? type_of(t) : NULL;
  qv_builder *b = NULL;
  qv_error err;
  qv_status st = QV_OK;
  if (ty != NULL && (st = qv_builder_new(ty, &b, &err)) != QV_OK) raise_qv(st, &err);
  ok = b != NULL;
  for (Py_ssize_t i = 0; ok && i < n; i++) {
    val_where w = {what, col, first_row + (int64_t)i};
    ok = append_value(b, t, PySequence_Fast_GET_ITEM(seq, i), &w);
  }
  if (ok && (st = qv_builder_finish(b, out, &err)) != QV_OK) ok = raise_qv(st, &err) != NULL;
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
    raise_qv(st, &err);
  }
  for (int32_t i = 0; i < n; i++) qv_array_unref(cols[i]);
  qv_type_unref(ty);
  return res != NULL;
}

/* A function's result: a dict {column: list or Arrow array} or an Arrow
 * struct array / record batch, as a STRUCT array (new reference). */
static bool result_struct(PyObject *r, const char *what, int64_t first_row, qv_array **out) {
  if (!PyDict_Check(r) && PyObject_HasAttrString(r, "__arrow_c_array__")) {
    if (!import_arrow(r, what, out)) return false;
    if ((*out)->type->id == QV_STRUCT && (*out)->null_count == 0) return true;
    qv_array_unref(*out);
    *out = NULL;
    PyErr_Format(PyExc_TypeError, "%s: the function returned a %.100s that is not a record "
                 "batch (a struct array without nulls); return a dict of columns", what,
                 Py_TYPE(r)->tp_name);
    return false;
  }
  if (!PyDict_Check(r)) {
    PyErr_Format(PyExc_TypeError, "%s: the function must return a dict of columns (or None to "
                 "leave the dataset unchanged), not %.100s", what, Py_TYPE(r)->tp_name);
    return false;
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
      PyErr_Format(PyExc_TypeError, "%s: column names must be str, found %.100s", what,
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
      PyErr_Format(PyExc_ValueError, "%s: the function returned columns of different lengths: "
                   "'%U' has %lld values, '%U' %lld", what, PyList_GET_ITEM(names, 0),
                   (long long)cols[0]->length, PyList_GET_ITEM(names, i),
                   (long long)cols[i]->length);
      ok = false;
    }
  if (ok) {
    ok = struct_of_columns(names, cols, k, k > 0 ? cols[0]->length : 0, out);
    k = 0;
  }
  for (int32_t i = 0; cols && i < k; i++) qv_array_unref(cols[i]);
  PyMem_Free(cols);
  Py_XDECREF(names);
  return ok;
}

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
  return result(st, out, err);
}

/* Unbatched map: the function once per row, its dicts gathered into
 * columns (every row must return the same columns, or every row None). */
static bool map_rows(pyfn *p, const qv_array *batch, int64_t first_row, qv_array **out) {
  PyObject *names = NULL, *lists = NULL; /* lists: {name: [values]} */
  bool ok = true, none = false;
  for (int64_t i = 0; ok && i < batch->length; i++) {
    PyObject *row = row_dict(batch, i);
    PyObject *r = row ? PyObject_CallOneArg(p->fn, row) : NULL;
    Py_XDECREF(row);
    if (r == NULL) {
      ok = false;
      break;
    }
    if (i == 0) none = r == Py_None;
    if (none != (r == Py_None) || (r != Py_None && !PyDict_Check(r))) {
      if (r != Py_None && !PyDict_Check(r))
        PyErr_Format(PyExc_TypeError, "map: row %lld: the function must return a dict of "
                     "columns (or None to leave the dataset unchanged), not %.100s",
                     (long long)(first_row + i), Py_TYPE(r)->tp_name);
      else
        PyErr_Format(PyExc_TypeError, "map: row %lld: the function returned %s, while for "
                     "earlier rows it returned %s", (long long)(first_row + i),
                     none ? "a dict" : "None", none ? "None" : "a dict");
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
        PyErr_Format(PyExc_TypeError, "map: row %lld: the function returned columns %R, while "
                     "for row %lld it returned %R", (long long)(first_row + i), got,
                     (long long)first_row, names);
        Py_XDECREF(got);
        ok = false;
      }
      PyObject *key, *val;
      Py_ssize_t pos = 0;
      while (ok && PyDict_Next(r, &pos, &key, &val)) {
        PyObject *l = PyDict_GetItemWithError(lists, key);
        if (l == NULL) {
          if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "map: row %lld: the function returned column %R, "
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
  if (ok && !none) ok = result_struct(lists, "map", first_row, out);
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
    PyObject *cols = columns_dict(batch);
    PyObject *r = cols ? PyObject_CallOneArg(p->fn, cols) : NULL;
    Py_XDECREF(cols);
    ok = r != NULL && (r == Py_None || result_struct(r, "map", first_row, out));
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
static qv_status pyfilter_call(void *ctx, const qv_array *batch, int64_t first_row,
                               uint8_t *keep, qv_error *err) {
  pyfn *p = ctx;
  PyGILState_STATE g = PyGILState_Ensure();
  bool ok = true;
  if (p->batched) {
    PyObject *cols = columns_dict(batch);
    PyObject *r = cols ? PyObject_CallOneArg(p->fn, cols) : NULL;
    Py_XDECREF(cols);
    PyObject *seq = r ? PySequence_Fast(r, "") : NULL;
    if (r != NULL && seq == NULL) {
      PyErr_Format(PyExc_TypeError, "filter: a batched function must return a list of bools, "
                   "not %.100s", Py_TYPE(r)->tp_name);
    } else if (seq != NULL && PySequence_Fast_GET_SIZE(seq) != batch->length) {
      PyErr_Format(PyExc_ValueError, "filter: the function returned %zd values for a batch of "
                   "%lld rows (rows %lld..%lld)", PySequence_Fast_GET_SIZE(seq),
                   (long long)batch->length, (long long)first_row,
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
    for (int64_t i = 0; ok && i < batch->length; i++) {
      PyObject *row = row_dict(batch, i);
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
      PyErr_Format(PyExc_TypeError, "new_fingerprint must be a str or None, not %.100s",
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
    if (hs != NULL) raise_qv(st, &err);
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
  if (!arg_int64(o, "batch_size", out)) return false;
  if (*out <= 0) *out = -1;
  return true;
}

static PyObject *Dataset_map(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"function", "set", "batched", "batch_size", "remove_columns",
                       "num_proc", "new_fingerprint", "cache", NULL};
  PyObject *fn = Py_None, *set = Py_None, *bs_obj = NULL, *rm_obj = Py_None, *np_obj = Py_None,
           *nfp = Py_None;
  int batched = 0, cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$OpOOOOp:map", kw, &fn, &set, &batched,
                                   &bs_obj, &rm_obj, &np_obj, &nfp, &cache))
    return NULL;
  if ((fn == Py_None) == (set == Py_None))
    return PyErr_Format(PyExc_TypeError, "map takes a function or set={name: expression}, %s",
                        fn == Py_None ? "got neither" : "not both");
  if (fn != Py_None && !PyCallable_Check(fn))
    return PyErr_Format(PyExc_TypeError, "map: function must be callable, not %.100s",
                        Py_TYPE(fn)->tp_name);
  qv_map_options mo;
  memset(&mo, 0, sizeof mo);
  if (!arg_batch_size(bs_obj, &mo.batch_size)) return NULL;
  if (np_obj != Py_None) {
    int64_t np = 0;
    if (!arg_int64(np_obj, "num_proc", &np)) return NULL;
    if (np < 1 || np > 4096)
      return PyErr_Format(PyExc_ValueError, "num_proc must be an int between 1 and 4096, found "
                          "%lld", (long long)np);
    if (fn != Py_None && np > 1)
      return PyErr_Format(PyExc_ValueError, "map: num_proc=%lld with a Python function: quiver's "
                          "workers are forked processes, which cannot safely run the Python "
                          "interpreter; run it in this process (num_proc=None) or use set= "
                          "expressions, which run in C", (long long)np);
    mo.num_proc = (int)np;
  }
  PyObject *rm_keep = NULL;
  if (rm_obj != Py_None &&
      !arg_names(rm_obj, "remove_columns", &rm_keep, (const char ***)&mo.remove_columns,
                 &mo.n_remove_columns))
    return NULL;
  qv_dataset_options o = options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st = QV_OK;
  PyObject *ret = NULL;
  if (set != Py_None) {
    Py_ssize_t n = PyDict_Check(set) ? PyDict_GET_SIZE(set) : -1;
    const char **names = n > 0 ? PyMem_Calloc((size_t)n, sizeof *names) : NULL;
    const char **exprs = n > 0 ? PyMem_Calloc((size_t)n, sizeof *exprs) : NULL;
    if (n < 1 || n > INT32_MAX) {
      PyErr_SetString(n < 0 ? PyExc_TypeError : PyExc_ValueError,
                      "map: set must be a non-empty dict {column name: expression}");
    } else if (names == NULL || exprs == NULL) {
      PyErr_NoMemory();
    } else {
      PyObject *key, *val;
      Py_ssize_t pos = 0, i = 0;
      while (PyDict_Next(set, &pos, &key, &val)) {
        if (!PyUnicode_Check(key) || !PyUnicode_Check(val)) {
          PyErr_Format(PyExc_TypeError, "map: set maps str column names to str expressions, "
                       "found %.100s: %.100s", Py_TYPE(key)->tp_name, Py_TYPE(val)->tp_name);
          break;
        }
        if ((names[i] = PyUnicode_AsUTF8(key)) == NULL || (exprs[i] = PyUnicode_AsUTF8(val)) == NULL)
          break;
        i++;
      }
      if (nfp != Py_None && !PyUnicode_Check(nfp))
        PyErr_Format(PyExc_TypeError, "new_fingerprint must be a str or None, not %.100s",
                     Py_TYPE(nfp)->tp_name);
      else if (nfp != Py_None)
        o.new_fingerprint = PyUnicode_AsUTF8(nfp);
      if (!PyErr_Occurred()) {
        Py_BEGIN_ALLOW_THREADS
        st = qv_dataset_map_exprs(self->ds, names, exprs, (int32_t)n, &mo, &o, &out, &err);
        Py_END_ALLOW_THREADS
        ret = result(st, out, &err);
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
      Py_BEGIN_ALLOW_THREADS
      st = qv_dataset_map(self->ds, &mf, &mo, &o, &out, &err);
      Py_END_ALLOW_THREADS
      ret = py_result(&p, st, out, &err);
    }
    qv_fingerprint_args_free(params);
  }
  PyMem_Free((void *)mo.remove_columns);
  Py_XDECREF(rm_keep);
  return ret;
}

static PyObject *Dataset_filter(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"function", "batched", "batch_size", "new_fingerprint", "cache", NULL};
  PyObject *fn, *bs_obj = NULL, *nfp = Py_None;
  int batched = 0, cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$pOOp:filter", kw, &fn, &batched, &bs_obj,
                                   &nfp, &cache))
    return NULL;
  qv_dataset_options o = options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  if (PyUnicode_Check(fn)) {
    const char *where = PyUnicode_AsUTF8(fn);
    if (where == NULL) return NULL;
    if (nfp != Py_None) {
      if (!PyUnicode_Check(nfp))
        return PyErr_Format(PyExc_TypeError, "new_fingerprint must be a str or None, not %.100s",
                            Py_TYPE(nfp)->tp_name);
      if ((o.new_fingerprint = PyUnicode_AsUTF8(nfp)) == NULL) return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    st = qv_dataset_filter(self->ds, where, &o, &out, &err);
    Py_END_ALLOW_THREADS
    return result(st, out, &err);
  }
  if (!PyCallable_Check(fn))
    return PyErr_Format(PyExc_TypeError, "filter takes an expression string (see "
                        "docs/expressions.md) or a callable, not %.100s", Py_TYPE(fn)->tp_name);
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
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_filter_fn(self->ds, &ff, bs, &o, &out, &err);
  Py_END_ALLOW_THREADS
  qv_fingerprint_args_free(params);
  return py_result(&p, st, out, &err);
}

static PyObject *Dataset_shard(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"num_shards", "index", "contiguous", NULL};
  PyObject *ns_obj, *ix_obj;
  int contiguous = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p:shard", kw, &ns_obj, &ix_obj,
                                   &contiguous))
    return NULL;
  int64_t ns, ix;
  if (!arg_int64(ns_obj, "num_shards", &ns) || !arg_int64(ix_obj, "index", &ix)) return NULL;
  if (ns < 1) return PyErr_Format(PyExc_ValueError, "num_shards must be >= 1, found %lld",
                                  (long long)ns);
  if (ix < 0 || ix >= ns)
    return PyErr_Format(PyExc_IndexError, "index %lld is out of range for %lld shards",
                        (long long)ix, (long long)ns);
  qv_dataset_options o = options(0);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_shard(self->ds, ns, ix, contiguous != 0, &o, &out, &err);
  Py_END_ALLOW_THREADS
  return result(st, out, &err);
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
    return arg_int64(o, what, &out->count);
  }
  PyErr_Format(PyExc_TypeError, "%s must be a float, an int or None, not %.100s", what,
               Py_TYPE(o)->tp_name);
  return false;
}

static PyObject *Dataset_train_test_split(DatasetObject *self, PyObject *args,
                                          PyObject *kwargs) {
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
  if (shuffle && !arg_seed(seed_obj, &seed)) return NULL;
  qv_dataset_options o = options(cache);
  qv_dataset *tr = NULL, *te = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_train_test_split(self->ds, test, train, shuffle != 0, seed, &o, &tr, &te, &err);
  Py_END_ALLOW_THREADS
  if (st != QV_OK) return raise_qv(st, &err);
  PyObject *a = wrap(tr);
  PyObject *b = wrap(te);
  PyObject *d = a && b ? Py_BuildValue("{s:O,s:O}", "train", a, "test", b) : NULL;
  Py_XDECREF(a);
  Py_XDECREF(b);
  return d;
}

static PyObject *Dataset_flatten_indices(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"cache", NULL};
  int cache = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:flatten_indices", kw, &cache)) return NULL;
  qv_dataset_options o = options(cache);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_flatten_indices(self->ds, &o, &out, &err);
  Py_END_ALLOW_THREADS
  return result(st, out, &err);
}

typedef qv_status (*names_fn)(qv_dataset *, const char *const *, int32_t, qv_dataset **,
                              qv_error *);

static PyObject *names_transform(DatasetObject *self, PyObject *arg, const char *what,
                                 names_fn fn) {
  PyObject *keep = NULL;
  const char **names = NULL;
  int32_t n = 0;
  if (!arg_names(arg, what, &keep, &names, &n)) return NULL;
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st = fn(self->ds, names, n, &out, &err);
  PyMem_Free(names);
  Py_DECREF(keep);
  return result(st, out, &err);
}

static PyObject *Dataset_select_columns(DatasetObject *self, PyObject *arg) {
  return names_transform(self, arg, "column_names", qv_dataset_select_columns);
}

static PyObject *Dataset_remove_columns(DatasetObject *self, PyObject *arg) {
  return names_transform(self, arg, "column_names", qv_dataset_remove_columns);
}

static PyObject *do_rename(DatasetObject *self, const char *const *from, const char *const *to,
                        int32_t n) {
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st = qv_dataset_rename_columns(self->ds, from, to, n, &out, &err);
  return result(st, out, &err);
}

static PyObject *Dataset_rename_column(DatasetObject *self, PyObject *args) {
  const char *from, *to;
  if (!PyArg_ParseTuple(args, "ss:rename_column", &from, &to)) return NULL;
  return do_rename(self, &from, &to, 1);
}

static PyObject *Dataset_rename_columns(DatasetObject *self, PyObject *mapping) {
  if (!PyDict_Check(mapping))
    return PyErr_Format(PyExc_TypeError, "rename_columns takes a dict {old: new}, not %.100s",
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
      PyErr_SetString(PyExc_TypeError, "rename_columns: names must be str");
      goto done;
    }
    if ((from[i] = PyUnicode_AsUTF8(k)) == NULL || (to[i] = PyUnicode_AsUTF8(v)) == NULL)
      goto done;
    i++;
  }
  r = do_rename(self, from, to, (int32_t)n);
done:
  PyMem_Free(from);
  PyMem_Free(to);
  return r;
}

static PyObject *Dataset_save_to_disk(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"dataset_path", "max_shard_size", "num_shards", NULL};
  PyObject *path = NULL, *size_obj = Py_None, *shards_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|OO:save_to_disk", kw, PyUnicode_FSConverter,
                                   &path, &size_obj, &shards_obj))
    return NULL;
  qv_save_options so;
  memset(&so, 0, sizeof so);
  qv_error err;
  PyObject *r = NULL;
  if (size_obj != Py_None) {
    if (PyUnicode_Check(size_obj)) {
      const char *text = PyUnicode_AsUTF8(size_obj);
      if (text == NULL) goto done;
      qv_status st = qv_hf_parse_size(text, &so.max_shard_size, &err);
      if (st != QV_OK) {
        PyErr_Format(PyExc_ValueError, "max_shard_size: %s", err.message);
        goto done;
      }
    } else if (!arg_int64(size_obj, "max_shard_size", &so.max_shard_size)) {
      goto done;
    }
    if (so.max_shard_size <= 0) {
      PyErr_SetString(PyExc_ValueError, "max_shard_size must be positive");
      goto done;
    }
  }
  if (shards_obj != Py_None) {
    if (!arg_int64(shards_obj, "num_shards", &so.num_shards)) goto done;
    if (so.num_shards <= 0) {
      PyErr_SetString(PyExc_ValueError, "num_shards must be positive");
      goto done;
    }
  }
  qv_status st;
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_save_to_disk(self->ds, PyBytes_AS_STRING(path), &so, NULL, &err);
  Py_END_ALLOW_THREADS
  if (st != QV_OK) raise_qv(st, &err);
  else r = Py_NewRef(Py_None);
done:
  Py_DECREF(path);
  return r;
}

static PyObject *Dataset_arrow_c_schema(DatasetObject *self, PyObject *unused) {
  return schema_capsule(qv_dataset_schema(self->ds));
}

static PyObject *Dataset_arrow_c_stream(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"requested_schema", NULL};
  PyObject *req = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:__arrow_c_stream__", kw, &req)) return NULL;
  if (!check_requested(req, qv_dataset_schema(self->ds))) return NULL;
  struct ArrowArrayStream *s = NULL;
  PyObject *cap = new_capsule(sizeof *s, "arrow_array_stream", stream_capsule_free, (void **)&s);
  if (cap == NULL) return NULL;
  qv_error err;
  qv_status st = qv_dataset_export_stream(self->ds, 0, s, &err);
  if (st != QV_OK) {
    Py_DECREF(cap);
    return raise_qv(st, &err);
  }
  return cap;
}

/* ---- iteration ---------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  qv_dataset_iter *it;
  qv_schema *schema;  /* reference (BatchIter) */
  qv_array *batch;    /* current batch (RowIter) */
  int64_t pos;        /* next row in batch (RowIter) */
} IterObject;

static PyObject *new_iter(PyTypeObject *type, qv_dataset *ds, int64_t batch_size,
                          bool drop_last) {
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
    return raise_qv(st, &err);
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
    if (st != QV_OK) return raise_qv(st, &err);
    if (self->batch == NULL) {
      qv_dataset_iter_free(self->it);
      self->it = NULL;
      return NULL; /* StopIteration */
    }
  }
  return row_dict(self->batch, self->pos++);
}

static PyObject *BatchIter_next(IterObject *self) {
  if (self->it == NULL) return NULL;
  qv_array *b = NULL;
  qv_error err;
  qv_status st = qv_dataset_iter_next(self->it, &b, NULL, &err);
  if (st != QV_OK) return raise_qv(st, &err);
  if (b == NULL) {
    qv_dataset_iter_free(self->it);
    self->it = NULL;
    return NULL;
  }
  return new_batch(b, self->schema);
}

static PyTypeObject RowIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._RowIterator",
    .tp_basicsize = sizeof(IterObject),
    .tp_dealloc = (destructor)Iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)RowIter_next,
};

static PyTypeObject BatchIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._BatchIterator",
    .tp_basicsize = sizeof(IterObject),
    .tp_dealloc = (destructor)Iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)BatchIter_next,
};

static PyObject *Dataset_iter_rows(DatasetObject *self) {
  return new_iter(&RowIterType, self->ds, QVPY_ROW_BATCH, false);
}

static PyObject *Dataset_iter(DatasetObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"batch_size", "drop_last_batch", NULL};
  PyObject *bs_obj;
  int drop_last = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:iter", kw, &bs_obj, &drop_last))
    return NULL;
  int64_t bs;
  if (!arg_int64(bs_obj, "batch_size", &bs)) return NULL;
  if (bs < 1)
    return PyErr_Format(PyExc_ValueError, "batch_size must be >= 1, found %lld", (long long)bs);
  return new_iter(&BatchIterType, self->ds, bs, drop_last != 0);
}

static PyMethodDef Dataset_methods[] = {
    {"select", (PyCFunction)(void (*)(void))Dataset_select, METH_VARARGS | METH_KEYWORDS,
     "select(indices, *, cache=False): the rows at these positions (an iterable of ints)."},
    {"shuffle", (PyCFunction)(void (*)(void))Dataset_shuffle, METH_VARARGS | METH_KEYWORDS,
     "shuffle(seed=None, *, cache=False): rows in numpy default_rng(seed).permutation order, "
     "as datasets' shuffle."},
    {"sort", (PyCFunction)(void (*)(void))Dataset_sort, METH_VARARGS | METH_KEYWORDS,
     "sort(column_names, reverse=False, null_placement='at_end', *, cache=False): stable "
     "sort by one column or a list of columns."},
    {"filter", (PyCFunction)(void (*)(void))Dataset_filter, METH_VARARGS | METH_KEYWORDS,
     "filter(function, *, batched=False, batch_size=1000, new_fingerprint=None, cache=False): "
     "the rows where the expression string (docs/expressions.md) is true, or for which the "
     "callable returns a true value (batched: a list of them per batch of columns)."},
    {"map", (PyCFunction)(void (*)(void))Dataset_map, METH_VARARGS | METH_KEYWORDS,
     "map(function=None, *, set=None, batched=False, batch_size=1000, remove_columns=None, "
     "num_proc=None, new_fingerprint=None, cache=False): datasets' map with a Python callable "
     "(row dict -> dict of columns, or batched: dict of column lists -> dict of column lists "
     "or Arrow arrays), or with set={name: expression} evaluated in C (docs/python.md)."},
    {"shard", (PyCFunction)(void (*)(void))Dataset_shard, METH_VARARGS | METH_KEYWORDS,
     "shard(num_shards, index, contiguous=True): one shard, as datasets' shard."},
    {"train_test_split", (PyCFunction)(void (*)(void))Dataset_train_test_split,
     METH_VARARGS | METH_KEYWORDS,
     "train_test_split(test_size=None, train_size=None, shuffle=True, seed=None, *, "
     "cache=False): {'train': Dataset, 'test': Dataset}."},
    {"flatten_indices", (PyCFunction)(void (*)(void))Dataset_flatten_indices,
     METH_VARARGS | METH_KEYWORDS,
     "flatten_indices(*, cache=False): the rows as mapped, materialised without a mapping."},
    {"select_columns", (PyCFunction)Dataset_select_columns, METH_O,
     "select_columns(column_names): only these columns, in this order."},
    {"remove_columns", (PyCFunction)Dataset_remove_columns, METH_O,
     "remove_columns(column_names): without these columns."},
    {"rename_column", (PyCFunction)Dataset_rename_column, METH_VARARGS,
     "rename_column(original_column_name, new_column_name)."},
    {"rename_columns", (PyCFunction)Dataset_rename_columns, METH_O,
     "rename_columns({old: new, ...})."},
    {"save_to_disk", (PyCFunction)(void (*)(void))Dataset_save_to_disk,
     METH_VARARGS | METH_KEYWORDS,
     "save_to_disk(dataset_path, max_shard_size=None, num_shards=None): write the "
     "save_to_disk layout datasets.load_from_disk reads."},
    {"iter", (PyCFunction)(void (*)(void))Dataset_iter, METH_VARARGS | METH_KEYWORDS,
     "iter(batch_size, drop_last_batch=False): quiver.Batch objects of batch_size rows."},
    {"__arrow_c_schema__", (PyCFunction)Dataset_arrow_c_schema, METH_NOARGS,
     "The schema as an 'arrow_schema' PyCapsule."},
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))Dataset_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_stream__(requested_schema=None): the rows as an 'arrow_array_stream' "
     "PyCapsule (zero copy without an indices mapping)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Dataset_getset[] = {
    {"num_rows", (getter)Dataset_num_rows, NULL, "Number of rows (through the mapping).", NULL},
    {"num_columns", (getter)Dataset_num_columns, NULL, "Number of columns.", NULL},
    {"column_names", (getter)Dataset_column_names, NULL, "Column names.", NULL},
    {"fingerprint", (getter)Dataset_fingerprint, NULL, "The datasets fingerprint.", NULL},
    {"features", (getter)Dataset_features, NULL,
     "The features as datasets' Features.to_dict() gives them.", NULL},
    {"split", (getter)Dataset_split, NULL, "The split name, or None.", NULL},
    {"cache_files", (getter)Dataset_cache_files, NULL,
     "The files mapped behind the dataset, as [{'filename': path}, ...].", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMappingMethods Dataset_as_mapping = {
    .mp_length = (lenfunc)Dataset_len,
    .mp_subscript = (binaryfunc)Dataset_getitem,
};

static PySequenceMethods Dataset_as_sequence = {.sq_length = (lenfunc)Dataset_len};

static PyTypeObject DatasetType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver.Dataset",
    .tp_basicsize = sizeof(DatasetObject),
    .tp_dealloc = (destructor)Dataset_dealloc,
    .tp_repr = (reprfunc)Dataset_repr,
    .tp_as_sequence = &Dataset_as_sequence,
    .tp_as_mapping = &Dataset_as_mapping,
    .tp_iter = (getiterfunc)Dataset_iter_rows,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A dataset (Hugging Face datasets' Dataset) over memory-mapped Arrow files. "
              "Immutable: transforms return new datasets. Open one with quiver.open(path).",
    .tp_methods = Dataset_methods,
    .tp_getset = Dataset_getset,
    .tp_new = Dataset_new,
};

/* ------------------------------------------------------------------------ */
/* Module functions                                                          */

static PyObject *mod_open(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"path", "split", "data", NULL};
  PyObject *path = NULL, *data = NULL;
  const char *split = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|zO&:open", kw, PyUnicode_FSConverter, &path,
                                   &split, PyUnicode_FSConverter, &data))
    return NULL;
  const char *p = PyBytes_AS_STRING(path), *d = data ? PyBytes_AS_STRING(data) : NULL;
  qv_dataset *ds = NULL, *base = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS
  if (d != NULL) {
    /* `path` is an indices mapping file over the dataset at `data` (the
     * CLI's --data). */
    st = qv_dataset_open(d, split, &base, &err);
    if (st == QV_OK) st = qv_dataset_with_indices_file(base, p, &ds, &err);
    qv_dataset_unref(base);
  } else {
    st = qv_dataset_open(p, split, &ds, &err);
  }
  Py_END_ALLOW_THREADS
  Py_DECREF(path);
  Py_XDECREF(data);
  return result(st, ds, &err);
}

static PyObject *mod_concatenate(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"dsets", "axis", NULL};
  PyObject *list;
  int axis = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|i:concatenate_datasets", kw, &list, &axis))
    return NULL;
  if (axis != 0 && axis != 1)
    return PyErr_Format(PyExc_ValueError, "axis must be 0 or 1, found %d", axis);
  PyObject *seq = PySequence_Fast(list, "concatenate_datasets takes a list of quiver.Dataset");
  if (seq == NULL) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n == 0) {
    Py_DECREF(seq);
    PyErr_SetString(PyExc_ValueError, "Unable to concatenate an empty list of datasets.");
    return NULL;
  }
  qv_dataset **ds = PyMem_Calloc((size_t)n, sizeof *ds);
  if (ds == NULL) {
    Py_DECREF(seq);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
    if (!PyObject_TypeCheck(o, &DatasetType)) {
      PyErr_Format(PyExc_TypeError, "concatenate_datasets: item %zd is a %.100s, not a "
                   "quiver.Dataset", i, Py_TYPE(o)->tp_name);
      PyMem_Free(ds);
      Py_DECREF(seq);
      return NULL;
    }
    ds[i] = ((DatasetObject *)o)->ds;
  }
  qv_dataset_options o = options(0);
  qv_dataset *out = NULL;
  qv_error err;
  qv_status st;
  Py_BEGIN_ALLOW_THREADS
  st = qv_dataset_concatenate(ds, (int64_t)n, axis, &o, &out, &err);
  Py_END_ALLOW_THREADS
  PyMem_Free(ds);
  Py_DECREF(seq); /* the datasets stayed referenced by the list until here */
  return result(st, out, &err);
}

static PyObject *mod_version(PyObject *mod, PyObject *unused) {
  return PyUnicode_FromString(qv_version());
}

static PyMethodDef module_methods[] = {
    {"open", (PyCFunction)(void (*)(void))mod_open, METH_VARARGS | METH_KEYWORDS,
     "open(path, split=None, data=None) -> Dataset: an Arrow file, a save_to_disk "
     "directory (Dataset or DatasetDict split), a load_dataset cache directory, or an "
     "indices mapping file (cache-*.arrow; with data=, the dataset it indexes)."},
    {"concatenate_datasets", (PyCFunction)(void (*)(void))mod_concatenate,
     METH_VARARGS | METH_KEYWORDS,
     "concatenate_datasets(dsets, axis=0) -> Dataset, as datasets' concatenate_datasets."},
    {"version", (PyCFunction)mod_version, METH_NOARGS,
     "The C library's version (qv_version())."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef quiver_module = {
    PyModuleDef_HEAD_INIT, .m_name = "quiver._quiver",
    .m_doc = "quiver's C extension: datasets over memory-mapped Arrow files (see docs/python.md).",
    .m_size = -1, .m_methods = module_methods};

PyMODINIT_FUNC PyInit__quiver(void);

PyMODINIT_FUNC PyInit__quiver(void) {
  PyDateTime_IMPORT;
  if (PyDateTimeAPI == NULL) return NULL;
  PyTypeObject *types[] = {&DatasetType, &BatchType, &RowIterType, &BatchIterType};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (PyType_Ready(types[i]) < 0) return NULL;
  PyObject *json = PyImport_ImportModule("json");
  if (json == NULL) return NULL;
  json_loads = PyObject_GetAttrString(json, "loads");
  Py_DECREF(json);
  PyObject *dec = PyImport_ImportModule("decimal");
  if (dec == NULL) return NULL;
  decimal_cls = PyObject_GetAttrString(dec, "Decimal");
  Py_DECREF(dec);
  if (json_loads == NULL || decimal_cls == NULL) return NULL;
  PyObject *m = PyModule_Create(&quiver_module);
  if (m == NULL) return NULL;
  QuiverError = PyErr_NewExceptionWithDoc(
      "quiver.QuiverError",
      "An error reported by the quiver C library; str() is its message, `status` its "
      "kind ('invalid data', 'bad argument', ...) and `code` the qv_status number.",
      NULL, NULL);
  if (QuiverError == NULL || PyModule_AddObjectRef(m, "QuiverError", QuiverError) < 0 ||
      PyModule_AddObjectRef(m, "Dataset", (PyObject *)&DatasetType) < 0 ||
      PyModule_AddObjectRef(m, "Batch", (PyObject *)&BatchType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
