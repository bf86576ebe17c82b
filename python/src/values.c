/*
 * values.c — Arrow values -> Python objects for the CPython extension
 * (python/ layer): rows as dicts, lists, ... converted in C from the Arrow
 * arrays with the values pyarrow's Scalar.as_py() gives (docs/python.md,
 * "Rows as Python values").
 */
#include "qvpy.h"

#include <datetime.h>

static PyObject *zoneinfo_cls; /* zoneinfo.ZoneInfo, imported on first use */
static PyObject *pd_timestamp; /* pandas.Timestamp, or Py_None without pandas */
static PyObject *pd_timedelta; /* pandas.Timedelta */

/* datetime.h's C API pointer is per translation unit: this file's copy. */
bool qvpy_values_init(void) {
  PyDateTime_IMPORT;
  return PyDateTimeAPI != NULL;
}

/* ------------------------------------------------------------------------ */
/* Arrow values -> Python objects                                            */

static PyObject *bad_array(const qv_array *a, const char *what, int64_t row) {
  PyErr_Format(qvpy_QuiverError, "%s array: %s of element %lld is out of bounds",
               qv_type_id_name(a->type->id), what, (long long)row);
  return NULL;
}

static const uint8_t *elem(const qv_array *a, int b, int64_t k, int64_t width);

/* Element `k` (physical) of buffer `b` read as a `width`-byte integer
 * (quiver/array.h's qv_load_int), or false when it lies outside the
 * buffer. */
static bool read_int(const qv_array *a, int b, int64_t k, int width, bool is_signed, int64_t *out) {
  const uint8_t *p = elem(a, b, k, width);
  if (p == NULL) return false;
  *out = qv_load_int(p, width, !is_signed, 0);
  return true;
}

/* Pointer to `width` bytes of element k of buffer b, or NULL. */
static const uint8_t *elem(const qv_array *a, int b, int64_t k, int64_t width) {
  if (b >= a->n_buffers || a->buffers[b] == NULL || k < 0 || (k + 1) * width > a->buffers[b]->size)
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
    PyErr_Format(PyExc_OverflowError,
                 "date %lld days from 1970-01-01 is outside Python's "
                 "date range (years 1 to 9999)",
                 (long long)days);
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
      PyErr_Format(qvpy_ValueError,
                   "timestamp %lld ns has nanoseconds, which "
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
  if (t->timezone == NULL) return PyDateTime_FromDateAndTime(y, m, d, hh, mi, ss, (int)us);
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
      PyErr_Format(qvpy_ValueError,
                   "duration %lld ns has nanoseconds, which "
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
    PyErr_Format(qvpy_ValueError, "time of day %lld (%s) is outside one day", (long long)v,
                 unit == QV_SECOND  ? "s"
                 : unit == QV_MILLI ? "ms"
                 : unit == QV_MICRO ? "us"
                                    : "ns");
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
  return PyObject_CallFunction(qvpy_decimal_cls, "s", text);
}

/* Whether `v` is nothing the cyclic garbage collector needs to see: an
 * object of a type without GC support (int, float, str, bytes, None...) or
 * a container already untracked. */
static inline bool gc_atomic(PyObject *v) {
  return !PyObject_IS_GC(v) || !PyObject_GC_IsTracked(v);
}

/* The lists and dicts made here hold only new values: they cannot be part
 * of a reference cycle, so those that hold only GC-atomic values are
 * untracked (as CPython does for such dicts and tuples), and the
 * collector never scans them again: with rows kept in a list, collections
 * otherwise traverse every row built so far (about a third of the time of
 * ds[i], measured with gc.disable()). A dict a caller later adds a
 * container to is tracked again by CPython; a list is not (a cycle made
 * through such a list by appending to it is not collected). */

static PyObject *bytes_value(qv_type_id id, const uint8_t *p, int64_t n);

/* Elements k0 .. k0+n-1 (physical indices) of `c` as n new references in
 * out[0..n) (NULL-initialised, as PyList_New leaves them: on failure the
 * ones made stay for the caller's list to drop). The bounds of the whole
 * run are checked once and the common types (integers, floats, strings
 * and binaries, with or without nulls) converted in one loop, without a
 * call per value; the others through qvpy_value_of. *atomic (may be NULL)
 * is cleared when a value is a tracked container (gc_atomic). */
static bool fill_values(const qv_array *c, int64_t k0, int64_t n, PyObject **out, int depth,
                        bool *atomic) {
  const qv_type *t = c->type;
  qv_type_id id = t->id;
  const uint8_t *valid = NULL;
  if (n <= 0) return true;
  if (id != QV_SPARSE_UNION && id != QV_DENSE_UNION && id != QV_RUN_END_ENCODED && id != QV_NA &&
      c->n_buffers > 0 && c->buffers[0] != NULL) {
    if (((k0 + n - 1) >> 3) >= c->buffers[0]->size) {
      bad_array(c, "validity bit", k0 + n - 1 - c->offset);
      return false;
    }
    valid = c->buffers[0]->data;
  }
  int w = 0;
  bool sgn = false;
  switch (id) {
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64: sgn = true; /* fall through */
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64:
    case QV_FLOAT:
    case QV_DOUBLE: w = qv_type_byte_width(t); break;
    case QV_STRING:
    case QV_BINARY: w = 4; break;
    case QV_LARGE_STRING:
    case QV_LARGE_BINARY: w = 8; break;
    default: break;
  }
  if (w == 0) { /* every other type: one value at a time */
    for (int64_t j = 0; j < n; j++) {
      PyObject *v = qvpy_value_of(c, k0 + j - c->offset, depth);
      if (v == NULL) return false;
      out[j] = v;
      if (atomic != NULL && *atomic && !gc_atomic(v)) *atomic = false;
    }
    return true;
  }
  bool is_bin =
      id == QV_STRING || id == QV_LARGE_STRING || id == QV_BINARY || id == QV_LARGE_BINARY;
  /* values (or offsets: n + 1 of them) of the whole run inside buffer 1 */
  int64_t last = is_bin ? k0 + n : k0 + n - 1;
  if (c->n_buffers < 2 || c->buffers[1] == NULL || k0 < 0 || (last + 1) * w > c->buffers[1]->size) {
    bad_array(c, is_bin ? "offset" : "value", k0 + n - 1 - c->offset);
    return false;
  }
  const uint8_t *p = c->buffers[1]->data;
  if (is_bin) {
    const uint8_t *data = c->n_buffers > 2 && c->buffers[2] != NULL ? c->buffers[2]->data : NULL;
    int64_t size = data != NULL ? c->buffers[2]->size : 0;
    int64_t s = qv_load_int(p, w, false, k0);
    for (int64_t j = 0; j < n; j++) {
      int64_t e = qv_load_int(p, w, false, k0 + j + 1);
      if (valid != NULL && !qv_bit_get(valid, k0 + j)) {
        out[j] = Py_NewRef(Py_None);
      } else {
        if (s < 0 || e < s || (e > s && (data == NULL || e > size))) {
          bad_array(c, "value bytes", k0 + j - c->offset);
          return false;
        }
        PyObject *v =
            e == s ? bytes_value(id, (const uint8_t *)"", 0) : bytes_value(id, data + s, e - s);
        if (v == NULL) return false;
        out[j] = v;
      }
      s = e;
    }
    return true;
  }
  for (int64_t j = 0; j < n; j++) {
    int64_t k = k0 + j;
    PyObject *v;
    if (valid != NULL && !qv_bit_get(valid, k)) {
      v = Py_NewRef(Py_None);
    } else if (id == QV_DOUBLE) {
      double d;
      memcpy(&d, p + k * 8, 8);
      v = PyFloat_FromDouble(d);
    } else if (id == QV_FLOAT) {
      float f;
      memcpy(&f, p + k * 4, 4);
      v = PyFloat_FromDouble(f);
    } else if (sgn) {
      v = PyLong_FromLongLong(qv_load_int(p, w, false, k));
    } else {
      v = PyLong_FromUnsignedLongLong((unsigned long long)(uint64_t)qv_load_int(p, w, true, k));
    }
    if (v == NULL) return false;
    out[j] = v;
  }
  return true;
}

/* Elements [start, end) of `child` as a list. */
static PyObject *list_of(const qv_array *a, const qv_array *child, int64_t start, int64_t end,
                         int64_t row, int depth) {
  if (child == NULL || start < 0 || end < start || end > child->length)
    return bad_array(a, "child range", row);
  PyObject *list = PyList_New((Py_ssize_t)(end - start));
  if (list == NULL) return NULL;
  bool atomic = true;
  if (!fill_values(child, child->offset + start, end - start, ((PyListObject *)list)->ob_item,
                   depth + 1, &atomic)) {
    Py_DECREF(list);
    return NULL;
  }
  if (atomic && PyObject_GC_IsTracked(list)) PyObject_GC_UnTrack(list);
  return list;
}

/* Column names as Python str, interned once: a small cache keyed by the
 * name's address and checked against its text (a type freed and another
 * allocated at the same address with another name misses). Borrowed
 * reference, or NULL with an exception set. */
#define KEY_CACHE 256
static struct {
  const char *name;
  PyObject *str;
} key_cache[KEY_CACHE];

static PyObject *key_of(const char *name) {
  size_t h = ((uintptr_t)name >> 3) % KEY_CACHE;
  PyObject *s = key_cache[h].str;
  if (s != NULL && key_cache[h].name == name) {
    const char *t = PyUnicode_AsUTF8(s);
    if (t != NULL && strcmp(t, name) == 0) return s;
  }
  PyObject *n = PyUnicode_InternFromString(name);
  if (n == NULL) return NULL;
  Py_XSETREF(key_cache[h].str, n);
  key_cache[h].name = name;
  return n;
}

/* An empty dict with room for n keys (no resize while it is filled). */
static PyObject *dict_for(Py_ssize_t n) {
#if PY_VERSION_HEX < 0x030D0000
  return _PyDict_NewPresized(n);
#else
  (void)n;
  return PyDict_New();
#endif
}

/* Struct element at physical index k as {field: value}. */
static PyObject *struct_of(const qv_array *a, int64_t k, int depth) {
  PyObject *dict = dict_for(a->type->n_children);
  if (dict == NULL) return NULL;
  bool atomic = true;
  for (int32_t i = 0; i < a->type->n_children; i++) {
    const qv_array *c = i < a->n_children ? a->children[i] : NULL;
    if (c == NULL || k >= c->length) {
      Py_DECREF(dict);
      return bad_array(a, "struct child", k);
    }
    PyObject *v = qvpy_value_of(c, k, depth + 1);
    PyObject *key = v ? key_of(a->type->children[i].name) : NULL;
    if (key == NULL || PyDict_SetItem(dict, key, v) < 0) {
      Py_XDECREF(v);
      Py_DECREF(dict);
      return NULL;
    }
    atomic = atomic && gc_atomic(v);
    Py_DECREF(v);
  }
  if (atomic && PyObject_GC_IsTracked(dict)) PyObject_GC_UnTrack(dict);
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
PyObject *qvpy_value_of(const qv_array *a, int64_t row, int depth) {
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
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
      if (!read_int(a, 1, k, qv_type_byte_width(t), true, &v)) return bad_array(a, "value", row);
      return PyLong_FromLongLong(v);
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64:
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
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256: return decimal_of(a, k, row);
    case QV_DATE32:
    case QV_DATE64: {
      if (!read_int(a, 1, k, id == QV_DATE32 ? 4 : 8, true, &v)) return bad_array(a, "value", row);
      int y, m, d;
      if (date_of_days(id == QV_DATE64 ? floor_div(v, 86400000) : v, &y, &m, &d) == NULL)
        return NULL;
      return PyDate_FromDate(y, m, d);
    }
    case QV_TIME32:
    case QV_TIME64:
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
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int w = (id == QV_BINARY || id == QV_STRING) ? 4 : 8;
      int64_t s, e;
      if (!read_int(a, 1, k, w, true, &s) || !read_int(a, 1, k + 1, w, true, &e))
        return bad_array(a, "offset", row);
      if (s < 0 || e < s || a->n_buffers < 3 || a->buffers[2] == NULL || e > a->buffers[2]->size) {
        if (s == e) return bytes_value(id, (const uint8_t *)"", 0);
        return bad_array(a, "value bytes", row);
      }
      return bytes_value(id, a->buffers[2]->data + s, e - s);
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: {
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
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: {
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
          key = qvpy_value_of(child->children[0], ck, depth + 1);
          val = key ? qvpy_value_of(child->children[1], ck, depth + 1) : NULL;
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
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: {
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
    case QV_STRUCT: return struct_of(a, k, depth);
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
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
      return qvpy_value_of(a->children[ci], ck, depth + 1);
    }
    case QV_DICTIONARY: {
      qv_type_id iid = t->index_type->id;
      if (!read_int(a, 1, k, qv_type_byte_width(t->index_type), qv_type_id_is_signed_integer(iid),
                    &v))
        return bad_array(a, "index", row);
      if (a->dictionary == NULL || v < 0 || v >= a->dictionary->length)
        return bad_array(a, "dictionary index", row);
      return qvpy_value_of(a->dictionary, v, depth + 1);
    }
    case QV_RUN_END_ENCODED: {
      if (a->n_children < 2 || a->children[0] == NULL || a->children[1] == NULL)
        return bad_array(a, "children", row);
      const qv_array *ends = a->children[0];
      int w = qv_type_byte_width(ends->type);
      int64_t lo = 0, hi = ends->length; /* first run whose end is > k */
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (!read_int(ends, 1, ends->offset + mid, w, true, &v))
          return bad_array(a, "run end", row);
        if (v > k) hi = mid;
        else lo = mid + 1;
      }
      if (lo >= ends->length || lo >= a->children[1]->length) return bad_array(a, "run", row);
      return qvpy_value_of(a->children[1], lo, depth + 1);
    }
    case QV_INTERVAL_DAY_TIME:
    case QV_INTERVAL_MONTH_DAY_NANO:
    case QV_NA:
    case QV_TYPE_ID_COUNT: break;
  }
  char name[256];
  qv_type_to_string(t, name, sizeof name);
  PyErr_Format(PyExc_NotImplementedError,
               "quiver cannot convert values of type %s to Python "
               "objects (read them through pyarrow: pyarrow.table(ds))",
               name);
  return NULL;
}

bool qvpy_mapped_bytes_there(const qv_array *a) {
  qv_error err;
  qv_status st = qv_guard_check_array(a, &err);
  if (st != QV_OK) qvpy_raise_qv(st, &err);
  return st == QV_OK;
}

/* The bytes of physical row k of column `a` prefetched (fixed widths,
 * fixed-size lists of them, string offsets then their bytes): a random
 * row's columns are a cache miss each, asked for at once they overlap
 * instead of following one another. Bounds are checked: nothing past a
 * buffer is touched. `strings`: the second round, the offsets being read
 * (asked for in the first) and the value's bytes prefetched. */
static void prefetch_value(const qv_array *a, int64_t k, bool strings) {
  if (a == NULL || a->n_buffers < 2 || a->buffers[1] == NULL || k < 0) return;
  qv_type_id id = a->type->id;
  const qv_buffer *b1 = a->buffers[1];
  int64_t w = 0;
  switch (id) {
    case QV_STRING:
    case QV_BINARY: w = 4; break;
    case QV_LARGE_STRING:
    case QV_LARGE_BINARY: w = 8; break;
    case QV_FIXED_SIZE_LIST: {
      const qv_array *c = a->n_children > 0 ? a->children[0] : NULL;
      int64_t d = a->type->list_size;
      if (strings || c == NULL || d <= 0 || k > INT64_MAX / d / 64 || c->n_buffers < 2 ||
          c->buffers[1] == NULL)
        return;
      int64_t cw = qv_type_byte_width(c->type), ck = c->offset + k * d;
      if (cw <= 0 || (ck + d) * cw > c->buffers[1]->size) return;
      for (int64_t x = 0; x < d * cw; x += 64)
        __builtin_prefetch(c->buffers[1]->data + ck * cw + x);
      __builtin_prefetch(c->buffers[1]->data + (ck + d) * cw - 1);
      return;
    }
    default:
      if (strings) return;
      w = id != QV_BOOL && id != QV_DICTIONARY ? qv_type_byte_width(a->type) : 0;
      if (w > 0 && k < b1->size / w) __builtin_prefetch(b1->data + k * w);
      return;
  }
  if ((k + 2) * w > b1->size) return;
  if (!strings) {
    __builtin_prefetch(b1->data + k * w);
    return;
  }
  int64_t s = qv_load_int(b1->data, (int32_t)w, false, k),
          e = qv_load_int(b1->data, (int32_t)w, false, k + 1);
  if (a->n_buffers < 3 || a->buffers[2] == NULL || s < 0 || e <= s || e > a->buffers[2]->size)
    return;
  for (int64_t x = s; x < e; x += 64) __builtin_prefetch(a->buffers[2]->data + x);
  __builtin_prefetch(a->buffers[2]->data + e - 1);
}

void qvpy_row_prefetch(const qv_array *batch, int64_t row, bool strings) {
  int64_t k = batch->offset + row;
  for (int32_t i = 0; i < batch->n_children; i++) {
    const qv_array *c = batch->children[i];
    if (c != NULL && k < c->length) prefetch_value(c, c->offset + k, strings);
  }
}

PyObject *qvpy_row_build(const qv_array *batch, int64_t row) {
  return struct_of(batch, batch->offset + row, 0);
}

/* Row `row` of a record batch (STRUCT array) as {column: value}. */
PyObject *qvpy_row_dict(const qv_array *batch, int64_t row) {
  qvpy_row_prefetch(batch, row, false);
  qvpy_row_prefetch(batch, row, true);
  return qvpy_row_build(batch, row);
}

/* Rows of a record batch as {column: [values]} (datasets' batch format). */
PyObject *qvpy_columns_dict(const qv_array *batch) {
  if (!qvpy_mapped_bytes_there(batch)) return NULL;
  PyObject *dict = dict_for(batch->type->n_children);
  for (int32_t c = 0; dict != NULL && c < batch->type->n_children; c++) {
    const qv_array *col = batch->children[c];
    PyObject *list = list_of(batch, col, batch->offset, batch->offset + batch->length, 0, 0);
    PyObject *key = list ? key_of(batch->type->children[c].name) : NULL;
    if (key == NULL || PyDict_SetItem(dict, key, list) < 0) Py_CLEAR(dict);
    Py_XDECREF(list);
  }
  return dict;
}

/* Parts of batches as {column: [values]}: each column's list filled part
 * by part, straight from the (mapped) batches. The dict is untracked when
 * no list is (nothing in it is a container the collector must see). */
PyObject *qvpy_parts_columns_dict(const qv_schema *schema, qv_array *const *batches,
                                  const int64_t *first, const int64_t *count, int64_t nparts,
                                  int64_t rows) {
  int32_t nc = qv_schema_num_fields(schema);
  PyObject *lists[64], **cols = nc <= 64 ? lists : PyMem_Calloc((size_t)nc, sizeof *cols);
  bool atomic_s[64], *atomic = nc <= 64 ? atomic_s : PyMem_Malloc((size_t)nc * sizeof *atomic);
  bool ok = true;
  if (cols == NULL || atomic == NULL) ok = (PyErr_NoMemory(), false);
  for (int32_t c = 0; ok && c < nc; c++) cols[c] = NULL;
  for (int32_t c = 0; ok && c < nc; c++) {
    cols[c] = PyList_New((Py_ssize_t)rows);
    if (cols[c] == NULL) ok = false;
    atomic[c] = true;
  }
  int64_t pos = 0;
  for (int64_t p = 0; ok && p < nparts; p++) {
    const qv_array *batch = batches[p];
    int64_t n = count[p];
    if (n > rows - pos || batch->n_children < nc || first[p] < 0 || first[p] > batch->length - n) {
      bad_array(batch, "batch length", pos);
      ok = false;
    }
    for (int32_t c = 0; ok && c < nc; c++) {
      const qv_array *col = batch->children[c];
      if (col == NULL || batch->offset + batch->length > col->length) {
        bad_array(batch, "struct child", pos);
        ok = false;
      } else {
        ok = fill_values(col, col->offset + batch->offset + first[p], n,
                         ((PyListObject *)cols[c])->ob_item + pos, 1, &atomic[c]);
      }
    }
    pos += n;
  }
  if (ok && pos != rows) {
    PyErr_Format(qvpy_QuiverError, "table of %lld rows has batches of %lld rows", (long long)rows,
                 (long long)pos);
    ok = false;
  }
  PyObject *dict = ok ? dict_for(nc) : NULL;
  bool all_atomic = true;
  for (int32_t c = 0; dict != NULL && c < nc; c++) {
    if (atomic[c] && PyObject_GC_IsTracked(cols[c])) PyObject_GC_UnTrack(cols[c]);
    all_atomic = all_atomic && atomic[c];
    PyObject *key = key_of(qv_schema_field(schema, c)->name);
    if (key == NULL || PyDict_SetItem(dict, key, cols[c]) < 0) Py_CLEAR(dict);
  }
  if (dict != NULL && all_atomic && PyObject_GC_IsTracked(dict)) PyObject_GC_UnTrack(dict);
  for (int32_t c = 0; cols != NULL && c < nc; c++) Py_XDECREF(cols[c]);
  if (cols != lists) PyMem_Free(cols);
  if (atomic != atomic_s) PyMem_Free(atomic);
  return dict;
}

/* The rows of a table as {column: [values]}: its batches fetched
 * (qv_table_batch guard-checks each one), then qvpy_parts_columns_dict. */
PyObject *qvpy_table_columns_dict(qv_table *t) {
  int64_t nb = qv_table_num_batches(t);
  size_t m = (size_t)(nb > 0 ? nb : 1);
  qv_array **bs = PyMem_Calloc(m, sizeof *bs);
  int64_t *first = PyMem_Calloc(m, sizeof *first), *count = PyMem_Calloc(m, sizeof *count);
  PyObject *dict = NULL;
  bool ok = bs != NULL && first != NULL && count != NULL;
  if (!ok) PyErr_NoMemory();
  for (int64_t b = 0; ok && b < nb; b++) {
    qv_error err;
    qv_status st = qv_table_batch(t, b, &bs[b], &err);
    if (st != QV_OK) {
      qvpy_raise_qv(st, &err);
      ok = false;
    } else {
      count[b] = bs[b]->length;
    }
  }
  if (ok)
    dict = qvpy_parts_columns_dict(qv_table_schema(t), bs, first, count, nb, qv_table_num_rows(t));
  for (int64_t b = 0; bs != NULL && b < nb; b++) qv_array_unref(bs[b]);
  PyMem_Free(bs);
  PyMem_Free(first);
  PyMem_Free(count);
  return dict;
}
