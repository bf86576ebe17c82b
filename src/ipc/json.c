/*
 * json.c — Apache Arrow's integration-test JSON format (Integration.rst):
 * reading a JSON file (plain or gzip) into a schema, record batches and
 * dictionaries. The ipc layer, on core and on
 * jansson + zlib. `quiver integration` compares what this reads with what
 * the IPC reader reads (compare.c).
 *
 * Reading works on the parsed jansson tree: the schema first (fields,
 * types, field/schema metadata, dictionary encodings), then each record
 * batch column by column. Dictionaries are built on first use, so nested
 * dictionaries (a dictionary whose values hold dictionary-encoded fields)
 * resolve in any file order; a cycle is an error. Everything read is
 * untrusted: every JSON array length is checked against the declared
 * "count" before anything is allocated, every offset against the data it
 * points into, and every message says where ("batch 2: column 'a.b':
 * DATA has 3 values, expected count 4").
 *
 * The writer lives in json_write.c.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/numeric_internal.h"
#include "ipc/json_internal.h"
#include "quiver/integration.h"

/* Default bound on JSON text (after decompression). */
#define JSON_DEFAULT_MAX_BYTES (INT64_C(4) << 30)
#define PATH_CAP 512

/* ======================================================================== */
/* Reading                                                                   */
/* ======================================================================== */

typedef struct dict_slot {
  int64_t id;
  qv_type *value_type; /* owned reference (from the first field using the id) */
  json_t *entry;       /* borrowed: the "dictionaries" entry, or NULL */
  int64_t entry_index;
  qv_array *values; /* owned once built */
  int state;        /* 0 = not built, 1 = building, 2 = built */
} dict_slot;

typedef struct reader {
  qv_error *err;
  dict_slot *dicts;
  int64_t n_dicts, cap_dicts;
  const char *noun; /* "field" (schema) or "column" (data) */
  char where[64];   /* "schema", "batch 2", "dictionary id 3" */
  char path[PATH_CAP];
  size_t path_len;
} reader;

static qv_status fail(reader *r, qv_status st, const char *fmt, ...) QV_PRINTF(3, 4);
static qv_status fail(reader *r, qv_status st, const char *fmt, ...) {
  if (r->err == NULL) return st;
  char msg[QV_ERROR_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r->path_len > 0)
    return qv_error_set(r->err, st, "%s: %s '%s': %s", r->where, r->noun, r->path, msg);
  return qv_error_set(r->err, st, "%s: %s", r->where, msg);
}

static qv_status oom(reader *r) { return fail(r, QV_ENOMEM, "out of memory"); }

/* Append ".name" (or "name" at the root) to the path; returns the old
 * length to restore with path_pop. */
static size_t path_push(reader *r, const char *name) {
  size_t old = r->path_len;
  size_t room = PATH_CAP - old;
  int n = snprintf(r->path + old, room, "%s%s", old ? "." : "", name);
  if (n > 0) r->path_len = old + ((size_t)n < room ? (size_t)n : room - 1);
  return old;
}

static void path_pop(reader *r, size_t old) {
  r->path_len = old;
  r->path[old] = '\0';
}

static const char *jtype(const json_t *v) {
  switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    default: return "null";
  }
}

static qv_status get_string(reader *r, const json_t *obj, const char *key, const char **out) {
  json_t *v = json_object_get(obj, key);
  if (v == NULL) return fail(r, QV_EINVAL, "missing '%s'", key);
  if (!json_is_string(v))
    return fail(r, QV_EINVAL, "'%s' must be a string, found %s", key, jtype(v));
  *out = json_string_value(v);
  return QV_OK;
}

static qv_status get_bool(reader *r, const json_t *obj, const char *key, bool *out) {
  json_t *v = json_object_get(obj, key);
  if (v == NULL) return fail(r, QV_EINVAL, "missing '%s'", key);
  if (!json_is_boolean(v))
    return fail(r, QV_EINVAL, "'%s' must be true or false, found %s", key, jtype(v));
  *out = json_is_true(v);
  return QV_OK;
}

static qv_status get_int(reader *r, const json_t *obj, const char *key, int64_t lo, int64_t hi,
                         int64_t *out) {
  json_t *v = json_object_get(obj, key);
  if (v == NULL) return fail(r, QV_EINVAL, "missing '%s'", key);
  if (!json_is_integer(v))
    return fail(r, QV_EINVAL, "'%s' must be an integer, found %s", key, jtype(v));
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return fail(r, QV_EINVAL, "'%s' is %lld, expected a value in [%lld, %lld]", key, (long long)x,
                (long long)lo, (long long)hi);
  *out = x;
  return QV_OK;
}

/* "children" of a field or column: missing counts as empty. */
static qv_status get_children(reader *r, const json_t *obj, json_t **out, size_t *n) {
  json_t *v = json_object_get(obj, "children");
  if (v == NULL || json_is_null(v)) {
    *out = NULL;
    *n = 0;
    return QV_OK;
  }
  if (!json_is_array(v))
    return fail(r, QV_EINVAL, "'children' must be an array, found %s", jtype(v));
  *out = v;
  *n = json_array_size(v);
  return QV_OK;
}

/* A JSON array member that must hold exactly `count` items. */
static qv_status get_array(reader *r, const json_t *obj, const char *key, int64_t count,
                           json_t **out) {
  json_t *v = json_object_get(obj, key);
  if (v == NULL) return fail(r, QV_EINVAL, "missing %s", key);
  if (!json_is_array(v)) return fail(r, QV_EINVAL, "%s must be an array, found %s", key, jtype(v));
  if ((int64_t)json_array_size(v) != count)
    return fail(r, QV_EINVAL, "%s has %zu values, expected %s%" PRId64, key, json_array_size(v),
                strcmp(key, "OFFSET") == 0 && count > 0 ? "count + 1 = " : "count ", count);
  *out = v;
  return QV_OK;
}

/* Integer from a JSON integer or a decimal string (64-bit values). */
static bool json_to_i64(const json_t *v, int64_t *out) {
  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return true;
  }
  if (json_is_string(v))
    return qv_num_parse_int64(json_string_value(v), (int64_t)json_string_length(v), out);
  return false;
}

static bool json_to_u64(const json_t *v, uint64_t *out) {
  if (json_is_integer(v)) {
    if (json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
  }
  if (json_is_string(v))
    return qv_num_parse_uint64(json_string_value(v), (int64_t)json_string_length(v), out);
  return false;
}

static bool json_to_double(const json_t *v, double *out) {
  if (json_is_number(v)) {
    *out = json_number_value(v);
    return true;
  }
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (strcmp(s, "NaN") == 0) *out = (double)NAN;
    else if (strcmp(s, "Infinity") == 0 || strcmp(s, "+Infinity") == 0) *out = (double)INFINITY;
    else if (strcmp(s, "-Infinity") == 0) *out = -(double)INFINITY;
    else return false;
    return true;
  }
  return false;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* Decode n bytes of hex text into out; false on a non-hex character. */
static bool hex_decode(const char *s, int64_t nbytes, uint8_t *out) {
  for (int64_t k = 0; k < nbytes; k++) {
    int hi = hexval(s[2 * k]), lo = hexval(s[2 * k + 1]);
    if (hi < 0 || lo < 0) return false;
    out[k] = (uint8_t)(hi << 4 | lo);
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* Schema                                                                    */

static qv_status parse_metadata(reader *r, const json_t *obj, qv_metadata *md) {
  json_t *v = json_object_get(obj, "metadata");
  if (v == NULL || json_is_null(v)) return QV_OK;
  if (!json_is_array(v))
    return fail(r, QV_EINVAL, "'metadata' must be an array, found %s", jtype(v));
  size_t k;
  json_t *kv;
  json_array_foreach(v, k, kv) {
    if (!json_is_object(kv))
      return fail(r, QV_EINVAL, "metadata[%zu] must be an object, found %s", k, jtype(kv));
    json_t *key = json_object_get(kv, "key"), *val = json_object_get(kv, "value");
    if (key == NULL || !json_is_string(key) || val == NULL || !json_is_string(val))
      return fail(r, QV_EINVAL, "metadata[%zu] must have string 'key' and 'value'", k);
    QV_RETURN_NOT_OK(qv_metadata_append(md, json_string_value(key),
                                        (int64_t)json_string_length(key), json_string_value(val),
                                        (int64_t)json_string_length(val), r->err));
  }
  return QV_OK;
}

static qv_status parse_time_unit(reader *r, const json_t *jt, qv_time_unit *out) {
  const char *u;
  QV_RETURN_NOT_OK(get_string(r, jt, "unit", &u));
  if (strcmp(u, "SECOND") == 0) *out = QV_SECOND;
  else if (strcmp(u, "MILLISECOND") == 0) *out = QV_MILLI;
  else if (strcmp(u, "MICROSECOND") == 0) *out = QV_MICRO;
  else if (strcmp(u, "NANOSECOND") == 0) *out = QV_NANO;
  else return fail(r, QV_EINVAL, "unknown time unit '%s'", u);
  return QV_OK;
}

/* {"name": "int", "bitWidth": 8|16|32|64, "isSigned": bool} -> id */
static qv_status parse_int_type(reader *r, const json_t *jt, qv_type_id *out) {
  int64_t bw;
  bool sign;
  QV_RETURN_NOT_OK(get_int(r, jt, "bitWidth", 0, 1024, &bw));
  QV_RETURN_NOT_OK(get_bool(r, jt, "isSigned", &sign));
  switch (bw) {
    case 8: *out = sign ? QV_INT8 : QV_UINT8; break;
    case 16: *out = sign ? QV_INT16 : QV_UINT16; break;
    case 32: *out = sign ? QV_INT32 : QV_UINT32; break;
    case 64: *out = sign ? QV_INT64 : QV_UINT64; break;
    default: return fail(r, QV_EINVAL, "int bitWidth %lld is not 8, 16, 32 or 64", (long long)bw);
  }
  return QV_OK;
}

/* Map the JSON type object to a new qv_type with its parameters set (no
 * children yet). */
static qv_status new_type(reader *r, const json_t *jt, qv_type **out) {
  const char *name;
  QV_RETURN_NOT_OK(get_string(r, jt, "name", &name));
  qv_type_id id;
  qv_time_unit unit = QV_SECOND;
  int64_t p1 = 0, p2 = 0;
  bool flag = false;
  const char *tz = NULL;
  if (strcmp(name, "null") == 0) id = QV_NA;
  else if (strcmp(name, "bool") == 0) id = QV_BOOL;
  else if (strcmp(name, "int") == 0) QV_RETURN_NOT_OK(parse_int_type(r, jt, &id));
  else if (strcmp(name, "floatingpoint") == 0) {
    const char *prec;
    QV_RETURN_NOT_OK(get_string(r, jt, "precision", &prec));
    if (strcmp(prec, "HALF") == 0) id = QV_HALF_FLOAT;
    else if (strcmp(prec, "SINGLE") == 0) id = QV_FLOAT;
    else if (strcmp(prec, "DOUBLE") == 0) id = QV_DOUBLE;
    else return fail(r, QV_EINVAL, "unknown floatingpoint precision '%s'", prec);
  } else if (strcmp(name, "decimal") == 0) {
    int64_t bw = 128;
    QV_RETURN_NOT_OK(get_int(r, jt, "precision", 1, 76, &p1));
    QV_RETURN_NOT_OK(get_int(r, jt, "scale", INT32_MIN, INT32_MAX, &p2));
    if (json_object_get(jt, "bitWidth") != NULL)
      QV_RETURN_NOT_OK(get_int(r, jt, "bitWidth", 0, 1024, &bw));
    if (bw == 32) id = QV_DECIMAL32;
    else if (bw == 64) id = QV_DECIMAL64;
    else if (bw == 128) id = QV_DECIMAL128;
    else if (bw == 256) id = QV_DECIMAL256;
    else
      return fail(r, QV_EINVAL, "decimal bitWidth %lld is not 32, 64, 128 or 256", (long long)bw);
  } else if (strcmp(name, "date") == 0) {
    const char *u;
    QV_RETURN_NOT_OK(get_string(r, jt, "unit", &u));
    if (strcmp(u, "DAY") == 0) id = QV_DATE32;
    else if (strcmp(u, "MILLISECOND") == 0) id = QV_DATE64;
    else return fail(r, QV_EINVAL, "unknown date unit '%s'", u);
  } else if (strcmp(name, "time") == 0) {
    int64_t bw;
    QV_RETURN_NOT_OK(parse_time_unit(r, jt, &unit));
    QV_RETURN_NOT_OK(get_int(r, jt, "bitWidth", 0, 1024, &bw));
    id = (unit == QV_SECOND || unit == QV_MILLI) ? QV_TIME32 : QV_TIME64;
    if (bw != (id == QV_TIME32 ? 32 : 64))
      return fail(r, QV_EINVAL, "time bitWidth %lld does not match its unit (expected %d)",
                  (long long)bw, id == QV_TIME32 ? 32 : 64);
  } else if (strcmp(name, "timestamp") == 0) {
    id = QV_TIMESTAMP;
    QV_RETURN_NOT_OK(parse_time_unit(r, jt, &unit));
    json_t *z = json_object_get(jt, "timezone");
    if (z != NULL && !json_is_null(z)) {
      if (!json_is_string(z))
        return fail(r, QV_EINVAL, "'timezone' must be a string, found %s", jtype(z));
      tz = json_string_value(z);
    }
  } else if (strcmp(name, "duration") == 0) {
    id = QV_DURATION;
    QV_RETURN_NOT_OK(parse_time_unit(r, jt, &unit));
  } else if (strcmp(name, "interval") == 0) {
    const char *u;
    QV_RETURN_NOT_OK(get_string(r, jt, "unit", &u));
    if (strcmp(u, "YEAR_MONTH") == 0) id = QV_INTERVAL_MONTHS;
    else if (strcmp(u, "DAY_TIME") == 0) id = QV_INTERVAL_DAY_TIME;
    else if (strcmp(u, "MONTH_DAY_NANO") == 0) id = QV_INTERVAL_MONTH_DAY_NANO;
    else return fail(r, QV_EINVAL, "unknown interval unit '%s'", u);
  } else if (strcmp(name, "binary") == 0) id = QV_BINARY;
  else if (strcmp(name, "utf8") == 0) id = QV_STRING;
  else if (strcmp(name, "largebinary") == 0) id = QV_LARGE_BINARY;
  else if (strcmp(name, "largeutf8") == 0) id = QV_LARGE_STRING;
  else if (strcmp(name, "binaryview") == 0) id = QV_BINARY_VIEW;
  else if (strcmp(name, "utf8view") == 0) id = QV_STRING_VIEW;
  else if (strcmp(name, "fixedsizebinary") == 0) {
    id = QV_FIXED_SIZE_BINARY;
    QV_RETURN_NOT_OK(get_int(r, jt, "byteWidth", 0, INT32_MAX, &p1));
  } else if (strcmp(name, "list") == 0) id = QV_LIST;
  else if (strcmp(name, "largelist") == 0) id = QV_LARGE_LIST;
  else if (strcmp(name, "listview") == 0) id = QV_LIST_VIEW;
  else if (strcmp(name, "largelistview") == 0) id = QV_LARGE_LIST_VIEW;
  else if (strcmp(name, "fixedsizelist") == 0) {
    id = QV_FIXED_SIZE_LIST;
    QV_RETURN_NOT_OK(get_int(r, jt, "listSize", 0, INT32_MAX, &p1));
  } else if (strcmp(name, "struct") == 0) id = QV_STRUCT;
  else if (strcmp(name, "map") == 0) {
    id = QV_MAP;
    QV_RETURN_NOT_OK(get_bool(r, jt, "keysSorted", &flag));
  } else if (strcmp(name, "union") == 0) {
    const char *mode;
    QV_RETURN_NOT_OK(get_string(r, jt, "mode", &mode));
    if (strcmp(mode, "SPARSE") == 0) id = QV_SPARSE_UNION;
    else if (strcmp(mode, "DENSE") == 0) id = QV_DENSE_UNION;
    else return fail(r, QV_EINVAL, "unknown union mode '%s'", mode);
  } else if (strcmp(name, "runendencoded") == 0) id = QV_RUN_END_ENCODED;
  else return fail(r, QV_EINVAL, "unknown type name '%s'", name);

  qv_type *t = qv_type_new(id);
  if (t == NULL) return oom(r);
  t->unit = unit;
  switch (id) {
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256:
      t->precision = (int32_t)p1;
      t->scale = (int32_t)p2;
      break;
    case QV_FIXED_SIZE_BINARY: t->byte_width = (int32_t)p1; break;
    case QV_FIXED_SIZE_LIST: t->list_size = (int32_t)p1; break;
    case QV_MAP: t->keys_sorted = flag; break;
    case QV_TIMESTAMP:
      if (tz != NULL) {
        t->timezone = strdup(tz);
        if (t->timezone == NULL) {
          qv_type_unref(t);
          return oom(r);
        }
      }
      break;
    default: break;
  }
  *out = t;
  return QV_OK;
}

/* Check the children a type received against what it requires, and read
 * union type ids. */
static qv_status finish_type(reader *r, const json_t *jt, qv_type *t) {
  int32_t n = t->n_children;
  switch (t->id) {
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_FIXED_SIZE_LIST:
      if (n != 1)
        return fail(r, QV_EINVAL, "%s must have exactly 1 child, found %d", qv_type_id_name(t->id),
                    (int)n);
      return QV_OK;
    case QV_MAP:
      if (n != 1 || t->children[0].type->id != QV_STRUCT || t->children[0].type->n_children != 2)
        return fail(r, QV_EINVAL, "map must have 1 child, a struct of 2 fields (key, value)");
      return QV_OK;
    case QV_RUN_END_ENCODED: {
      if (n != 2)
        return fail(r, QV_EINVAL, "run-end encoded must have 2 children, found %d", (int)n);
      qv_type_id re = t->children[0].type->id;
      if (strcmp(t->children[0].name, "run_ends") != 0 ||
          strcmp(t->children[1].name, "values") != 0)
        return fail(r, QV_EINVAL,
                    "run-end encoded children must be named 'run_ends' and 'values', "
                    "found '%s' and '%s'",
                    t->children[0].name, t->children[1].name);
      if (re != QV_INT16 && re != QV_INT32 && re != QV_INT64)
        return fail(r, QV_EINVAL, "run_ends must be int16, int32 or int64, found %s",
                    qv_type_id_name(re));
      if (t->children[0].nullable) return fail(r, QV_EINVAL, "run_ends must not be nullable");
      return QV_OK;
    }
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: {
      json_t *ids = json_object_get(jt, "typeIds");
      if (ids == NULL || !json_is_array(ids))
        return fail(r, QV_EINVAL, "union 'typeIds' must be an array");
      if ((int64_t)json_array_size(ids) != n)
        return fail(r, QV_EINVAL, "union has %zu typeIds for %d children", json_array_size(ids),
                    (int)n);
      if (n > 0) {
        t->type_codes = malloc(sizeof(int32_t) * (size_t)n);
        if (t->type_codes == NULL) return oom(r);
      }
      for (int32_t k = 0; k < n; k++) {
        json_t *v = json_array_get(ids, (size_t)k);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 127)
          return fail(r, QV_EINVAL, "union typeIds[%d] must be an integer in [0, 127]", (int)k);
        t->type_codes[k] = (int32_t)json_integer_value(v);
        for (int32_t j = 0; j < k; j++)
          if (t->type_codes[j] == t->type_codes[k])
            return fail(r, QV_EINVAL, "union typeIds repeat %d", (int)t->type_codes[k]);
      }
      return QV_OK;
    }
    case QV_STRUCT: return QV_OK;
    default:
      if (n != 0)
        return fail(r, QV_EINVAL, "%s must have no children, found %d", qv_type_id_name(t->id),
                    (int)n);
      return QV_OK;
  }
}

static dict_slot *find_dict(reader *r, int64_t id) {
  for (int64_t k = 0; k < r->n_dicts; k++)
    if (r->dicts[k].id == id) return &r->dicts[k];
  return NULL;
}

static qv_status register_dict(reader *r, int64_t id, qv_type *value_type) {
  dict_slot *s = find_dict(r, id);
  if (s != NULL) {
    if (!qv_type_equals(s->value_type, value_type, false)) {
      char a[128], b[128];
      qv_type_to_string(s->value_type, a, sizeof a);
      qv_type_to_string(value_type, b, sizeof b);
      return fail(r, QV_EINVAL,
                  "dictionary id %" PRId64
                  " is shared by fields of different "
                  "value types (%s and %s)",
                  id, a, b);
    }
    return QV_OK;
  }
  if (r->n_dicts == r->cap_dicts) {
    int64_t cap = r->cap_dicts ? r->cap_dicts * 2 : 8;
    dict_slot *g = realloc(r->dicts, sizeof *g * (size_t)cap);
    if (g == NULL) return oom(r);
    r->dicts = g;
    r->cap_dicts = cap;
  }
  s = &r->dicts[r->n_dicts++];
  memset(s, 0, sizeof *s);
  s->id = id;
  s->value_type = qv_type_ref(value_type);
  s->entry_index = -1;
  return QV_OK;
}

typedef struct parsed_field {
  const char *name; /* borrowed from the JSON tree */
  bool nullable;
  qv_type *type;  /* owned */
  qv_metadata md; /* owned */
} parsed_field;

static qv_status parse_field(reader *r, const json_t *jf, int depth, parsed_field *pf);

static qv_status parse_field_body(reader *r, const json_t *jf, int depth, parsed_field *pf) {
  json_t *jt = json_object_get(jf, "type");
  if (jt == NULL) return fail(r, QV_EINVAL, "missing 'type'");
  if (!json_is_object(jt))
    return fail(r, QV_EINVAL, "'type' must be an object, found %s", jtype(jt));
  QV_RETURN_NOT_OK(get_bool(r, jf, "nullable", &pf->nullable));
  QV_RETURN_NOT_OK(new_type(r, jt, &pf->type));
  json_t *kids;
  size_t nk;
  QV_RETURN_NOT_OK(get_children(r, jf, &kids, &nk));
  for (size_t k = 0; k < nk; k++) {
    parsed_field child = {0};
    qv_status st = parse_field(r, json_array_get(kids, k), depth + 1, &child);
    if (st == QV_OK) {
      st = qv_type_add_child(pf->type, child.name, child.nullable, child.type, &child.md, r->err);
      if (st == QV_OK) child.type = NULL; /* taken over */
    }
    qv_type_unref(child.type);
    qv_metadata_reset(&child.md);
    if (st != QV_OK) return st;
  }
  QV_RETURN_NOT_OK(finish_type(r, jt, pf->type));
  QV_RETURN_NOT_OK(parse_metadata(r, jf, &pf->md));

  json_t *jd = json_object_get(jf, "dictionary");
  if (jd != NULL && !json_is_null(jd)) {
    if (!json_is_object(jd))
      return fail(r, QV_EINVAL, "'dictionary' must be an object, found %s", jtype(jd));
    int64_t id;
    bool ordered;
    QV_RETURN_NOT_OK(get_int(r, jd, "id", INT64_MIN, INT64_MAX, &id));
    QV_RETURN_NOT_OK(get_bool(r, jd, "isOrdered", &ordered));
    json_t *ji = json_object_get(jd, "indexType");
    if (ji == NULL || !json_is_object(ji))
      return fail(r, QV_EINVAL, "dictionary 'indexType' must be an object");
    const char *iname;
    QV_RETURN_NOT_OK(get_string(r, ji, "name", &iname));
    if (strcmp(iname, "int") != 0)
      return fail(r, QV_EINVAL, "dictionary indexType must be an int, found '%s'", iname);
    qv_type_id iid;
    QV_RETURN_NOT_OK(parse_int_type(r, ji, &iid));
    QV_RETURN_NOT_OK(register_dict(r, id, pf->type));
    qv_type *d = qv_type_new(QV_DICTIONARY);
    qv_type *it = qv_type_new(iid);
    if (d == NULL || it == NULL) {
      qv_type_unref(d);
      qv_type_unref(it);
      return oom(r);
    }
    d->index_type = it;
    d->value_type = pf->type;
    d->dict_id = id;
    d->ordered = ordered;
    pf->type = d;
  }
  return QV_OK;
}

/* Nesting deeper than this is refused (stack safety on hostile input). */
#define MAX_DEPTH 64

static qv_status parse_field(reader *r, const json_t *jf, int depth, parsed_field *pf) {
  if (!json_is_object(jf))
    return fail(r, QV_EINVAL, "field must be an object, found %s", jtype(jf));
  if (depth > MAX_DEPTH) return fail(r, QV_EINVAL, "fields nest deeper than %d levels", MAX_DEPTH);
  QV_RETURN_NOT_OK(get_string(r, jf, "name", &pf->name));
  size_t old = path_push(r, pf->name);
  qv_status st = parse_field_body(r, jf, depth, pf);
  path_pop(r, old);
  if (st != QV_OK) {
    qv_type_unref(pf->type);
    pf->type = NULL;
    qv_metadata_reset(&pf->md);
  }
  return st;
}

static qv_status parse_schema(reader *r, const json_t *root, qv_schema **out) {
  snprintf(r->where, sizeof r->where, "schema");
  r->noun = "field";
  json_t *js = json_object_get(root, "schema");
  if (js == NULL) return fail(r, QV_EINVAL, "missing 'schema'");
  if (!json_is_object(js))
    return fail(r, QV_EINVAL, "'schema' must be an object, found %s", jtype(js));
  json_t *jf = json_object_get(js, "fields");
  if (jf == NULL || !json_is_array(jf)) return fail(r, QV_EINVAL, "'fields' must be an array");
  qv_type *st_type = qv_type_new(QV_STRUCT);
  if (st_type == NULL) return oom(r);
  qv_schema *schema = qv_schema_new(st_type);
  if (schema == NULL) {
    qv_type_unref(st_type);
    return oom(r);
  }
  qv_status st = QV_OK;
  for (size_t k = 0; k < json_array_size(jf) && st == QV_OK; k++) {
    parsed_field f = {0};
    st = parse_field(r, json_array_get(jf, k), 0, &f);
    if (st == QV_OK) {
      st = qv_type_add_child(schema->type, f.name, f.nullable, f.type, &f.md, r->err);
      if (st == QV_OK) f.type = NULL;
    }
    qv_type_unref(f.type);
    qv_metadata_reset(&f.md);
  }
  if (st == QV_OK) st = parse_metadata(r, js, &schema->metadata);
  if (st != QV_OK) {
    qv_schema_unref(schema);
    return st;
  }
  *out = schema;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Column data                                                               */

static qv_status alloc_buf(reader *r, int64_t size, qv_buffer **out) {
  if (qv_buffer_alloc(size, out, r->err) != QV_OK)
    return fail(r, QV_ENOMEM, "cannot allocate %" PRId64 " bytes", size);
  return QV_OK;
}

/* VALIDITY -> bitmap (NULL when all valid) and null count. */
static qv_status parse_validity(reader *r, const json_t *jc, int64_t count, qv_buffer **out,
                                int64_t *null_count) {
  json_t *jv;
  QV_RETURN_NOT_OK(get_array(r, jc, "VALIDITY", count, &jv));
  qv_buffer *b;
  QV_RETURN_NOT_OK(alloc_buf(r, (count + 7) / 8, &b));
  int64_t nulls = 0;
  for (int64_t k = 0; k < count; k++) {
    json_t *v = json_array_get(jv, (size_t)k);
    int bit;
    if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))
      bit = (int)json_integer_value(v);
    else if (json_is_boolean(v)) bit = json_is_true(v);
    else {
      qv_buffer_unref(b);
      return fail(r, QV_EINVAL, "VALIDITY[%" PRId64 "] must be 0 or 1, found %s", k, jtype(v));
    }
    if (bit) qv_bit_set(b->data, k);
    else nulls++;
  }
  if (nulls == 0) {
    qv_buffer_unref(b);
    b = NULL;
  }
  *out = b;
  *null_count = nulls;
  return QV_OK;
}

static bool slot_valid(const qv_buffer *validity, int64_t k) {
  return validity == NULL || qv_bit_get(validity->data, k);
}

static qv_status bad_value(reader *r, const char *key, int64_t k, const json_t *v,
                           const qv_type *t) {
  char tn[128];
  qv_type_to_string(t, tn, sizeof tn);
  if (json_is_string(v))
    return fail(r, QV_EINVAL, "%s[%" PRId64 "]: '%.64s' is not a valid %s value", key, k,
                json_string_value(v), tn);
  if (json_is_integer(v))
    return fail(r, QV_EINVAL, "%s[%" PRId64 "]: %lld is out of range for %s", key, k,
                (long long)json_integer_value(v), tn);
  return fail(r, QV_EINVAL, "%s[%" PRId64 "]: expected a %s value, found %s", key, k, tn, jtype(v));
}

/* Parse one valid fixed-width value into dst. */
static qv_status parse_fixed_value(reader *r, const qv_type *t, int64_t k, const json_t *v,
                                   uint8_t *dst) {
  int64_t i64;
  uint64_t u64;
  double d;
  switch (t->id) {
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_DATE32:
    case QV_TIME32:
    case QV_INTERVAL_MONTHS: {
      int64_t w = value_width(t);
      int64_t lo = w == 1 ? INT8_MIN : w == 2 ? INT16_MIN : INT32_MIN;
      int64_t hi = w == 1 ? INT8_MAX : w == 2 ? INT16_MAX : INT32_MAX;
      if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return bad_value(r, "DATA", k, v, t);
      i64 = json_integer_value(v);
      if (w == 1) {
        int8_t x = (int8_t)i64;
        memcpy(dst, &x, 1);
      } else if (w == 2) {
        int16_t x = (int16_t)i64;
        memcpy(dst, &x, 2);
      } else {
        int32_t x = (int32_t)i64;
        memcpy(dst, &x, 4);
      }
      return QV_OK;
    }
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32: {
      int64_t w = value_width(t);
      int64_t hi = w == 1 ? UINT8_MAX : w == 2 ? UINT16_MAX : (int64_t)UINT32_MAX;
      if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > hi)
        return bad_value(r, "DATA", k, v, t);
      u64 = (uint64_t)json_integer_value(v);
      if (w == 1) {
        uint8_t x = (uint8_t)u64;
        memcpy(dst, &x, 1);
      } else if (w == 2) {
        uint16_t x = (uint16_t)u64;
        memcpy(dst, &x, 2);
      } else {
        uint32_t x = (uint32_t)u64;
        memcpy(dst, &x, 4);
      }
      return QV_OK;
    }
    case QV_INT64:
    case QV_DATE64:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DURATION:
      if (!json_to_i64(v, &i64)) return bad_value(r, "DATA", k, v, t);
      memcpy(dst, &i64, 8);
      return QV_OK;
    case QV_UINT64:
      if (!json_to_u64(v, &u64)) return bad_value(r, "DATA", k, v, t);
      memcpy(dst, &u64, 8);
      return QV_OK;
    case QV_HALF_FLOAT: {
      if (!json_to_double(v, &d)) return bad_value(r, "DATA", k, v, t);
      uint16_t h = qv_double_to_half(d);
      memcpy(dst, &h, 2);
      return QV_OK;
    }
    case QV_FLOAT: {
      if (!json_to_double(v, &d)) return bad_value(r, "DATA", k, v, t);
      float f = (float)d;
      memcpy(dst, &f, 4);
      return QV_OK;
    }
    case QV_DOUBLE:
      if (!json_to_double(v, &d)) return bad_value(r, "DATA", k, v, t);
      memcpy(dst, &d, 8);
      return QV_OK;
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256:
      if (!json_is_string(v) ||
          !qv_num_decimal_parse(json_string_value(v), (int64_t)json_string_length(v),
                                (int)value_width(t), dst))
        return bad_value(r, "DATA", k, v, t);
      return QV_OK;
    case QV_INTERVAL_DAY_TIME: {
      json_t *jd = json_object_get(v, "days"), *jm = json_object_get(v, "milliseconds");
      if (!json_is_object(v) || jd == NULL || jm == NULL || !json_to_i64(jd, &i64) ||
          i64 < INT32_MIN || i64 > INT32_MAX)
        return fail(r, QV_EINVAL,
                    "DATA[%" PRId64
                    "]: expected {\"days\": int32, "
                    "\"milliseconds\": int32}",
                    k);
      int32_t pair[2] = {(int32_t)i64, 0};
      if (!json_to_i64(jm, &i64) || i64 < INT32_MIN || i64 > INT32_MAX)
        return fail(r, QV_EINVAL,
                    "DATA[%" PRId64
                    "]: expected {\"days\": int32, "
                    "\"milliseconds\": int32}",
                    k);
      pair[1] = (int32_t)i64;
      memcpy(dst, pair, 8);
      return QV_OK;
    }
    case QV_INTERVAL_MONTH_DAY_NANO: {
      json_t *jm = json_object_get(v, "months"), *jd = json_object_get(v, "days"),
             *jn = json_object_get(v, "nanoseconds");
      int64_t m, dd, ns;
      if (!json_is_object(v) || jm == NULL || jd == NULL || jn == NULL || !json_to_i64(jm, &m) ||
          !json_to_i64(jd, &dd) || !json_to_i64(jn, &ns) || m < INT32_MIN || m > INT32_MAX ||
          dd < INT32_MIN || dd > INT32_MAX)
        return fail(r, QV_EINVAL,
                    "DATA[%" PRId64
                    "]: expected {\"months\": int32, \"days\": "
                    "int32, \"nanoseconds\": int64}",
                    k);
      int32_t md[2] = {(int32_t)m, (int32_t)dd};
      memcpy(dst, md, 8);
      memcpy(dst + 8, &ns, 8);
      return QV_OK;
    }
    case QV_FIXED_SIZE_BINARY: {
      int64_t w = t->byte_width;
      if (!json_is_string(v))
        return fail(r, QV_EINVAL, "DATA[%" PRId64 "]: expected a hex string, found %s", k,
                    jtype(v));
      if ((int64_t)json_string_length(v) != 2 * w)
        return fail(r, QV_EINVAL,
                    "DATA[%" PRId64 "]: hex string of %zu characters, expected %" PRId64
                    " (byteWidth %" PRId64 ")",
                    k, json_string_length(v), 2 * w, w);
      if (!hex_decode(json_string_value(v), w, dst))
        return fail(r, QV_EINVAL, "DATA[%" PRId64 "]: '%.64s' is not hex", k, json_string_value(v));
      return QV_OK;
    }
    default:
      return fail(r, QV_ENOTSUP, "type %s has no fixed-width values", qv_type_id_name(t->id));
  }
}

/* New array shell; takes over `validity`. */
static qv_status new_array(reader *r, const qv_type *type, int64_t count, int32_t n_buffers,
                           int32_t n_children, qv_array **out) {
  qv_array *a = qv_array_new((qv_type *)type, n_buffers, n_children);
  if (a == NULL) return oom(r);
  a->length = count;
  *out = a;
  return QV_OK;
}

static qv_status parse_data(reader *r, const json_t *jc, const qv_type *t, int depth,
                            qv_array **out);

/* A child column: check it is an object, push its name, parse. */
static qv_status parse_child(reader *r, const json_t *kids, size_t k, const qv_field *f, int depth,
                             qv_array **out) {
  json_t *jc = json_array_get(kids, k);
  size_t old = path_push(r, f->name);
  qv_status st;
  if (!json_is_object(jc)) {
    st = fail(r, QV_EINVAL, "column must be an object, found %s", jtype(jc));
  } else {
    json_t *jn = json_object_get(jc, "name");
    if (jn != NULL && json_is_string(jn) && strcmp(json_string_value(jn), f->name) != 0)
      st = fail(r, QV_EINVAL, "column name '%s' does not match the schema field '%s'",
                json_string_value(jn), f->name);
    else st = parse_data(r, jc, f->type, depth + 1, out);
  }
  path_pop(r, old);
  return st;
}

static qv_status expect_children(reader *r, const json_t *jc, int32_t want, json_t **kids) {
  size_t n;
  QV_RETURN_NOT_OK(get_children(r, jc, kids, &n));
  if ((int64_t)n != want)
    return fail(r, QV_EINVAL, "'children' has %zu columns, expected %d", n, (int)want);
  return QV_OK;
}

/* Parse all children of `t` into a->children. */
static qv_status parse_children(reader *r, const json_t *jc, const qv_type *t, int depth,
                                qv_array *a) {
  json_t *kids;
  QV_RETURN_NOT_OK(expect_children(r, jc, t->n_children, &kids));
  for (int32_t k = 0; k < t->n_children; k++)
    QV_RETURN_NOT_OK(parse_child(r, kids, (size_t)k, &t->children[k], depth, &a->children[k]));
  return QV_OK;
}

/* Children whose length must equal the parent's count (struct, sparse
 * union). */
static qv_status check_child_counts(reader *r, const qv_array *a) {
  for (int32_t k = 0; k < a->n_children; k++)
    if (a->children[k]->length != a->length)
      return fail(r, QV_EINVAL, "child '%s' has count %" PRId64 ", expected %" PRId64,
                  a->type->children[k].name, a->children[k]->length, a->length);
  return QV_OK;
}

/* Read an offsets-like integer array (OFFSET/SIZE/TYPE_ID...) into a new
 * buffer of `width` bytes per value. Values outside [lo, hi] fail. */
static qv_status parse_int_buffer(reader *r, const json_t *jc, const char *key, int64_t n,
                                  int width, int64_t lo, int64_t hi, const qv_buffer *skip_nulls,
                                  qv_buffer **out) {
  json_t *ja;
  QV_RETURN_NOT_OK(get_array(r, jc, key, n, &ja));
  qv_buffer *b;
  QV_RETURN_NOT_OK(alloc_buf(r, n * width, &b));
  for (int64_t k = 0; k < n; k++) {
    if (skip_nulls != NULL && !slot_valid(skip_nulls, k)) continue; /* stays 0 */
    json_t *v = json_array_get(ja, (size_t)k);
    int64_t x;
    if (!json_to_i64(v, &x) || x < lo || x > hi) {
      qv_buffer_unref(b);
      if (json_is_integer(v) || json_is_string(v))
        return fail(r, QV_EINVAL,
                    "%s[%" PRId64 "]: %s%.40s%s is out of range [%" PRId64 ", %" PRId64 "]", key, k,
                    json_is_string(v) ? "'" : "", json_is_string(v) ? json_string_value(v) : "",
                    json_is_string(v) ? "'" : "", lo, hi);
      return fail(r, QV_EINVAL, "%s[%" PRId64 "]: expected an integer, found %s", key, k, jtype(v));
    }
    if (width == 1) b->data[k] = (uint8_t)(int8_t)x;
    else if (width == 4) {
      int32_t y = (int32_t)x;
      memcpy(b->data + 4 * k, &y, 4);
    } else memcpy(b->data + 8 * k, &x, 8);
  }
  *out = b;
  return QV_OK;
}

/* Offsets [count+1] must start at >= 0, never decrease, end <= limit. */
static qv_status check_offsets(reader *r, const qv_buffer *off, int width, int64_t count,
                               int64_t limit, const char *what) {
  int64_t prev = load_off(off, width, 0);
  if (prev < 0) return fail(r, QV_EINVAL, "OFFSET[0] is %" PRId64 ", must be >= 0", prev);
  for (int64_t k = 1; k <= count; k++) {
    int64_t cur = load_off(off, width, k);
    if (cur < prev)
      return fail(r, QV_EINVAL,
                  "OFFSET[%" PRId64 "] = %" PRId64 " is less than OFFSET[%" PRId64 "] = %" PRId64,
                  k, cur, k - 1, prev);
    prev = cur;
  }
  if (prev > limit)
    return fail(r, QV_EINVAL, "OFFSET[%" PRId64 "] = %" PRId64 " exceeds the %s (%" PRId64 ")",
                count, prev, what, limit);
  return QV_OK;
}

static qv_status parse_binary(reader *r, const json_t *jc, const qv_type *t, int64_t count,
                              qv_array *a) {
  bool large = t->id == QV_LARGE_BINARY || t->id == QV_LARGE_STRING;
  bool text = t->id == QV_STRING || t->id == QV_LARGE_STRING;
  int width = large ? 8 : 4;
  json_t *jd;
  QV_RETURN_NOT_OK(get_array(r, jc, "DATA", count, &jd));
  QV_RETURN_NOT_OK(parse_int_buffer(r, jc, "OFFSET", count + 1, width, 0,
                                    large ? INT64_MAX : INT32_MAX, NULL, &a->buffers[1]));
  qv_buffer *off = a->buffers[1];
  QV_RETURN_NOT_OK(check_offsets(r, off, width, count, large ? INT64_MAX : INT32_MAX, "limit"));
  /* Rebase to 0 and check that every value has the length its offsets
   * give, so the data buffer is exactly the bytes present in DATA. */
  int64_t base = load_off(off, width, 0);
  for (int64_t k = 0; k < count; k++) {
    json_t *v = json_array_get(jd, (size_t)k);
    int64_t want = load_off(off, width, k + 1) - load_off(off, width, k);
    if (!json_is_string(v))
      return fail(r, QV_EINVAL, "DATA[%" PRId64 "]: expected a string, found %s", k, jtype(v));
    int64_t len = (int64_t)json_string_length(v);
    if (!text) {
      if (len % 2 != 0)
        return fail(r, QV_EINVAL, "DATA[%" PRId64 "]: hex string has odd length %" PRId64, k, len);
      len /= 2;
    }
    if (len != want)
      return fail(r, QV_EINVAL,
                  "DATA[%" PRId64 "] has %" PRId64 " bytes, but OFFSET gives %" PRId64, k, len,
                  want);
  }
  int64_t total = load_off(off, width, count) - base;
  QV_RETURN_NOT_OK(alloc_buf(r, total, &a->buffers[2]));
  for (int64_t k = 0; k <= count; k++) {
    int64_t o = load_off(off, width, k) - base;
    if (width == 4) {
      int32_t y = (int32_t)o;
      memcpy(off->data + 4 * k, &y, 4);
    } else memcpy(off->data + 8 * k, &o, 8);
  }
  for (int64_t k = 0; k < count; k++) {
    json_t *v = json_array_get(jd, (size_t)k);
    uint8_t *dst = a->buffers[2]->data + load_off(off, width, k);
    int64_t n = load_off(off, width, k + 1) - load_off(off, width, k);
    if (text) memcpy(dst, json_string_value(v), (size_t)n);
    else if (!hex_decode(json_string_value(v), n, dst))
      return fail(r, QV_EINVAL, "DATA[%" PRId64 "]: '%.64s' is not hex", k, json_string_value(v));
  }
  return QV_OK;
}

static qv_status parse_views(reader *r, const json_t *jc, const qv_type *t, int64_t count,
                             qv_buffer *validity, qv_array **out) {
  bool text = t->id == QV_STRING_VIEW;
  json_t *jv, *jb = json_object_get(jc, "VARIADIC_DATA_BUFFERS");
  QV_RETURN_NOT_OK(get_array(r, jc, "VIEWS", count, &jv));
  if (jb == NULL) return fail(r, QV_EINVAL, "missing VARIADIC_DATA_BUFFERS");
  if (!json_is_array(jb))
    return fail(r, QV_EINVAL, "VARIADIC_DATA_BUFFERS must be an array, found %s", jtype(jb));
  size_t nb = json_array_size(jb);
  if (nb > (size_t)INT32_MAX - 2) return fail(r, QV_EINVAL, "too many variadic buffers");
  qv_array *a = NULL;
  QV_RETURN_NOT_OK(new_array(r, t, count, (int32_t)(2 + nb), 0, &a));
  qv_status st = QV_OK;
  for (size_t b = 0; b < nb && st == QV_OK; b++) {
    json_t *h = json_array_get(jb, b);
    if (!json_is_string(h) || json_string_length(h) % 2 != 0) {
      st = fail(r, QV_EINVAL, "VARIADIC_DATA_BUFFERS[%zu] must be a hex string of even length", b);
      break;
    }
    int64_t n = (int64_t)json_string_length(h) / 2;
    st = alloc_buf(r, n, &a->buffers[2 + b]);
    if (st == QV_OK && !hex_decode(json_string_value(h), n, a->buffers[2 + b]->data))
      st = fail(r, QV_EINVAL, "VARIADIC_DATA_BUFFERS[%zu] is not hex", b);
  }
  if (st == QV_OK) st = alloc_buf(r, count * QV_VIEW_SIZE, &a->buffers[1]);
  for (int64_t k = 0; k < count && st == QV_OK; k++) {
    if (!slot_valid(validity, k)) continue; /* null: all-zero view */
    json_t *v = json_array_get(jv, (size_t)k);
    uint8_t *view = a->buffers[1]->data + k * QV_VIEW_SIZE;
    int64_t size, bi, off;
    if (!json_is_object(v)) {
      st = fail(r, QV_EINVAL, "VIEWS[%" PRId64 "] must be an object, found %s", k, jtype(v));
      break;
    }
    json_t *js = json_object_get(v, "SIZE");
    if (js == NULL || !json_is_integer(js) || (size = json_integer_value(js)) < 0 ||
        size > INT32_MAX) {
      st = fail(r, QV_EINVAL, "VIEWS[%" PRId64 "]: SIZE must be an integer in [0, 2^31)", k);
      break;
    }
    int32_t size32 = (int32_t)size;
    memcpy(view, &size32, 4);
    if (size <= QV_VIEW_INLINE_MAX) {
      json_t *ji = json_object_get(v, "INLINED");
      if (ji == NULL || !json_is_string(ji)) {
        st = fail(r, QV_EINVAL, "VIEWS[%" PRId64 "]: SIZE %" PRId64 " needs an INLINED string", k,
                  size);
        break;
      }
      int64_t len = (int64_t)json_string_length(ji);
      if (len != (text ? size : 2 * size)) {
        st = fail(r, QV_EINVAL, "VIEWS[%" PRId64 "]: INLINED has %" PRId64 " %s, SIZE is %" PRId64,
                  k, text ? len : len / 2, text ? "bytes" : "bytes of hex", size);
        break;
      }
      if (text) memcpy(view + 4, json_string_value(ji), (size_t)size);
      else if (!hex_decode(json_string_value(ji), size, view + 4))
        st = fail(r, QV_EINVAL, "VIEWS[%" PRId64 "]: INLINED is not hex", k);
      continue;
    }
    json_t *jp = json_object_get(v, "PREFIX_HEX"), *jbi = json_object_get(v, "BUFFER_INDEX"),
           *jo = json_object_get(v, "OFFSET");
    if (jp == NULL || !json_is_string(jp) || json_string_length(jp) != 2 * QV_VIEW_PREFIX_SIZE ||
        jbi == NULL || !json_is_integer(jbi) || jo == NULL || !json_is_integer(jo)) {
      st = fail(r, QV_EINVAL,
                "VIEWS[%" PRId64 "]: SIZE %" PRId64
                " needs PREFIX_HEX (8 hex "
                "digits), BUFFER_INDEX and OFFSET",
                k, size);
      break;
    }
    bi = json_integer_value(jbi);
    off = json_integer_value(jo);
    if (bi < 0 || bi >= (int64_t)nb) {
      st = fail(r, QV_EINVAL,
                "VIEWS[%" PRId64 "]: BUFFER_INDEX %" PRId64
                " is not one of the %zu "
                "variadic buffers",
                k, bi, nb);
      break;
    }
    const qv_buffer *data = a->buffers[2 + bi];
    if (off < 0 || off > INT32_MAX || off + size > data->size) {
      st = fail(r, QV_EINVAL,
                "VIEWS[%" PRId64 "]: bytes [%" PRId64 ", %" PRId64
                ") are outside "
                "variadic buffer %" PRId64 " of %" PRId64 " bytes",
                k, off, off + size, bi, data->size);
      break;
    }
    uint8_t prefix[QV_VIEW_PREFIX_SIZE];
    if (!hex_decode(json_string_value(jp), QV_VIEW_PREFIX_SIZE, prefix)) {
      st = fail(r, QV_EINVAL, "VIEWS[%" PRId64 "]: PREFIX_HEX is not hex", k);
      break;
    }
    if (memcmp(prefix, data->data + off, QV_VIEW_PREFIX_SIZE) != 0) {
      st = fail(r, QV_EINVAL,
                "VIEWS[%" PRId64
                "]: PREFIX_HEX %s does not match the first 4 "
                "bytes of its data %02X%02X%02X%02X",
                k, json_string_value(jp), data->data[off], data->data[off + 1], data->data[off + 2],
                data->data[off + 3]);
      break;
    }
    int32_t bi32 = (int32_t)bi, off32 = (int32_t)off;
    memcpy(view + 4, prefix, QV_VIEW_PREFIX_SIZE);
    memcpy(view + 8, &bi32, 4);
    memcpy(view + 12, &off32, 4);
  }
  if (st != QV_OK) {
    qv_array_unref(a);
    return st;
  }
  a->buffers[0] = validity; /* taken over only on success */
  *out = a;
  return QV_OK;
}

static qv_status get_dictionary(reader *r, int64_t id, qv_array **out);

/* BOOL: DATA as true/false or 1/0, null slots left 0. */
static qv_status parse_bool(reader *r, const json_t *jc, const qv_type *t, int64_t count,
                            const qv_buffer *validity, qv_array **out) {
  qv_array *a = NULL;
  json_t *jd;
  qv_status st = get_array(r, jc, "DATA", count, &jd);
  if (st == QV_OK) st = new_array(r, t, count, 2, 0, &a);
  if (st == QV_OK) st = alloc_buf(r, (count + 7) / 8, &a->buffers[1]);
  for (int64_t k = 0; k < count && st == QV_OK; k++) {
    if (!slot_valid(validity, k)) continue;
    json_t *v = json_array_get(jd, (size_t)k);
    if (json_is_boolean(v)) qv_bit_put(a->buffers[1]->data, k, json_is_true(v));
    else if (json_is_integer(v) && (json_integer_value(v) & ~1) == 0)
      qv_bit_put(a->buffers[1]->data, k, json_integer_value(v) == 1);
    else
      st = fail(r, QV_EINVAL, "DATA[%" PRId64 "]: expected true/false or 1/0, found %s", k,
                jtype(v));
  }
  *out = a;
  return st;
}

/* LIST, LARGE_LIST and MAP: OFFSET and the child. */
static qv_status parse_list(reader *r, const json_t *jc, const qv_type *t, int64_t count, int depth,
                            qv_array **out) {
  qv_array *a = NULL;
  int width = t->id == QV_LARGE_LIST ? 8 : 4;
  qv_status st = new_array(r, t, count, 2, 1, &a);
  if (st == QV_OK)
    st = parse_int_buffer(r, jc, "OFFSET", count + 1, width, 0, width == 8 ? INT64_MAX : INT32_MAX,
                          NULL, &a->buffers[1]);
  if (st == QV_OK) st = parse_children(r, jc, t, depth, a);
  if (st == QV_OK)
    st = check_offsets(r, a->buffers[1], width, count, a->children[0]->length, "child's count");
  *out = a;
  return st;
}

/* LIST_VIEW and LARGE_LIST_VIEW: OFFSET, SIZE and the child. */
static qv_status parse_list_view(reader *r, const json_t *jc, const qv_type *t, int64_t count,
                                 const qv_buffer *validity, int depth, qv_array **out) {
  qv_array *a = NULL;
  int width = t->id == QV_LARGE_LIST_VIEW ? 8 : 4;
  int64_t hi = width == 8 ? INT64_MAX : INT32_MAX;
  qv_status st = new_array(r, t, count, 3, 1, &a);
  if (st == QV_OK)
    st = parse_int_buffer(r, jc, "OFFSET", count, width, 0, hi, validity, &a->buffers[1]);
  if (st == QV_OK)
    st = parse_int_buffer(r, jc, "SIZE", count, width, 0, hi, validity, &a->buffers[2]);
  if (st == QV_OK) st = parse_children(r, jc, t, depth, a);
  for (int64_t k = 0; k < count && st == QV_OK; k++) {
    int64_t o = load_off(a->buffers[1], width, k), s = load_off(a->buffers[2], width, k);
    if (o + s > a->children[0]->length)
      st = fail(r, QV_EINVAL,
                "OFFSET[%" PRId64 "] + SIZE[%" PRId64 "] = %" PRId64
                " exceeds the child's count (%" PRId64 ")",
                k, k, o + s, a->children[0]->length);
  }
  *out = a;
  return st;
}

/* SPARSE_UNION and DENSE_UNION: TYPE_ID, OFFSET (dense) and the children. */
static qv_status parse_union(reader *r, const json_t *jc, const qv_type *t, int64_t count,
                             int depth, qv_array **out) {
  qv_array *a = NULL;
  bool dense = t->id == QV_DENSE_UNION;
  qv_status st = new_array(r, t, count, dense ? 2 : 1, t->n_children, &a);
  if (st == QV_OK) st = parse_int_buffer(r, jc, "TYPE_ID", count, 1, 0, 127, NULL, &a->buffers[0]);
  if (st == QV_OK && dense)
    st = parse_int_buffer(r, jc, "OFFSET", count, 4, 0, INT32_MAX, NULL, &a->buffers[1]);
  if (st == QV_OK) st = parse_children(r, jc, t, depth, a);
  if (st == QV_OK && !dense) st = check_child_counts(r, a);
  for (int64_t k = 0; k < count && st == QV_OK; k++) {
    int8_t code = (int8_t)a->buffers[0]->data[k];
    int32_t c = -1;
    for (int32_t j = 0; j < t->n_children; j++)
      if (t->type_codes[j] == code) c = j;
    if (c < 0) {
      st = fail(r, QV_EINVAL, "TYPE_ID[%" PRId64 "]: %d is not one of the union's typeIds", k,
                (int)code);
    } else if (dense) {
      int32_t o;
      memcpy(&o, a->buffers[1]->data + 4 * k, 4);
      if (o >= a->children[c]->length)
        st = fail(r, QV_EINVAL, "OFFSET[%" PRId64 "]: %d is outside child '%s' of count %" PRId64,
                  k, (int)o, t->children[c].name, a->children[c]->length);
    }
  }
  if (st == QV_OK) a->null_count = 0;
  *out = a;
  return st;
}

/* The run ends of a parsed RUN_END_ENCODED array `a` of `count` rows:
 * as many as values, no nulls, strictly increasing, the last >= count. */
static qv_status check_run_ends(reader *r, const qv_array *a, int64_t count) {
  const qv_array *re = a->children[0];
  int w = (int)value_width(re->type);
  if (re->length != a->children[1]->length)
    return fail(r, QV_EINVAL, "run_ends has count %" PRId64 " but values has %" PRId64, re->length,
                a->children[1]->length);
  if (re->buffers[0] != NULL) return fail(r, QV_EINVAL, "run_ends must not contain nulls");
  int64_t prev = 0;
  for (int64_t k = 0; k < re->length; k++) {
    int64_t e = w == 2   ? (int64_t)((int16_t *)re->buffers[1]->data)[k]
                : w == 4 ? (int64_t)((int32_t *)re->buffers[1]->data)[k]
                         : ((int64_t *)re->buffers[1]->data)[k];
    if (e <= prev)
      return fail(r, QV_EINVAL, "run_ends[%" PRId64 "] = %" PRId64 " must be greater than %" PRId64,
                  k, e, prev);
    prev = e;
  }
  if (count > 0 && prev < count)
    return fail(r, QV_EINVAL, "run_ends end at %" PRId64 ", before the count %" PRId64, prev,
                count);
  return QV_OK;
}

/* RUN_END_ENCODED: run_ends and values. */
static qv_status parse_run_end(reader *r, const json_t *jc, const qv_type *t, int64_t count,
                               int depth, qv_array **out) {
  qv_array *a = NULL;
  qv_status st = new_array(r, t, count, 0, 2, &a);
  if (st == QV_OK) st = parse_children(r, jc, t, depth, a);
  if (st == QV_OK) st = check_run_ends(r, a, count);
  if (st == QV_OK) a->null_count = 0;
  *out = a;
  return st;
}

/* DICTIONARY: the indices in DATA, each inside its dictionary. */
static qv_status parse_dict_indices(reader *r, const json_t *jc, const qv_type *t, int64_t count,
                                    const qv_buffer *validity, qv_array **out) {
  qv_array *a = NULL;
  const qv_type *it = t->index_type;
  int64_t w = value_width(it);
  json_t *jd;
  qv_array *dict = NULL;
  qv_status st = get_array(r, jc, "DATA", count, &jd);
  if (st == QV_OK) st = get_dictionary(r, t->dict_id, &dict);
  if (st == QV_OK) st = new_array(r, t, count, 2, 0, &a);
  if (st == QV_OK) {
    a->dictionary = dict;
    dict = NULL;
    st = alloc_buf(r, count * w, &a->buffers[1]);
  }
  qv_array_unref(dict);
  for (int64_t k = 0; k < count && st == QV_OK; k++) {
    if (!slot_valid(validity, k)) continue;
    uint8_t *dst = a->buffers[1]->data + k * w;
    st = parse_fixed_value(r, it, k, json_array_get(jd, (size_t)k), dst);
    if (st != QV_OK) break;
    int64_t idx;
    if (w == 1) idx = qv_type_id_is_signed_integer(it->id) ? (int8_t)dst[0] : dst[0];
    else if (w == 2) {
      uint16_t u;
      memcpy(&u, dst, 2);
      idx = qv_type_id_is_signed_integer(it->id) ? (int16_t)u : u;
    } else if (w == 4) {
      uint32_t u;
      memcpy(&u, dst, 4);
      idx = qv_type_id_is_signed_integer(it->id) ? (int32_t)u : (int64_t)u;
    } else {
      memcpy(&idx, dst, 8);
    }
    if (idx < 0 || idx >= a->dictionary->length)
      st = fail(r, QV_EINVAL,
                "DATA[%" PRId64 "]: index %" PRId64 " is outside dictionary id %" PRId64
                " of %" PRId64 " values",
                k, idx, t->dict_id, a->dictionary->length);
  }
  *out = a;
  return st;
}

/* Fixed-width values (numbers, temporals, decimals, fixed-size binary). */
static qv_status parse_fixed(reader *r, const json_t *jc, const qv_type *t, int64_t count,
                             const qv_buffer *validity, qv_array **out) {
  qv_array *a = NULL;
  qv_status st = QV_OK;
  int64_t w = value_width(t);
  json_t *jd;
  if (w == 0 && t->id != QV_FIXED_SIZE_BINARY)
    return fail(r, QV_ENOTSUP, "type %s is not supported", qv_type_id_name(t->id));
  st = get_array(r, jc, "DATA", count, &jd);
  if (st == QV_OK) st = new_array(r, t, count, 2, 0, &a);
  if (st == QV_OK) st = alloc_buf(r, count * w, &a->buffers[1]);
  for (int64_t k = 0; k < count && st == QV_OK; k++) {
    if (!slot_valid(validity, k)) continue; /* null slot: value ignored, stays 0 */
    st = parse_fixed_value(r, t, k, json_array_get(jd, (size_t)k), a->buffers[1]->data + k * w);
  }
  *out = a;
  return st;
}

static qv_status parse_data_body(reader *r, const json_t *jc, const qv_type *t, int64_t count,
                                 int depth, qv_array **out) {
  qv_buffer *validity = NULL;
  int64_t nulls = 0;
  qv_array *a = NULL;
  qv_status st = QV_OK;
  if (has_validity(t->id)) QV_RETURN_NOT_OK(parse_validity(r, jc, count, &validity, &nulls));

  switch (t->id) {
    case QV_NA:
      st = new_array(r, t, count, 0, 0, &a);
      if (st == QV_OK) a->null_count = count;
      break;
    case QV_BOOL: st = parse_bool(r, jc, t, count, validity, &a); break;
    case QV_BINARY:
    case QV_STRING:
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING:
      st = new_array(r, t, count, 3, 0, &a);
      if (st == QV_OK) st = parse_binary(r, jc, t, count, a);
      break;
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW:
      st = parse_views(r, jc, t, count, validity, &a);
      if (st == QV_OK) {
        a->null_count = nulls;
        *out = a;
        return QV_OK;
      }
      qv_buffer_unref(validity);
      return st;
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_MAP: st = parse_list(r, jc, t, count, depth, &a); break;
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW: st = parse_list_view(r, jc, t, count, validity, depth, &a); break;
    case QV_FIXED_SIZE_LIST: {
      int64_t want;
      st = new_array(r, t, count, 1, 1, &a);
      if (st == QV_OK) st = parse_children(r, jc, t, depth, a);
      if (st == QV_OK &&
          (qv_mul_overflow(count, t->list_size, &want) || a->children[0]->length != want))
        st = fail(r, QV_EINVAL,
                  "child '%s' has count %" PRId64 ", expected count * listSize = %" PRId64 " * %d",
                  t->children[0].name, a->children[0]->length, count, (int)t->list_size);
      break;
    }
    case QV_STRUCT:
      st = new_array(r, t, count, 1, t->n_children, &a);
      if (st == QV_OK) st = parse_children(r, jc, t, depth, a);
      if (st == QV_OK) st = check_child_counts(r, a);
      break;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION: st = parse_union(r, jc, t, count, depth, &a); break;
    case QV_RUN_END_ENCODED: st = parse_run_end(r, jc, t, count, depth, &a); break;
    case QV_DICTIONARY: st = parse_dict_indices(r, jc, t, count, validity, &a); break;
    default: st = parse_fixed(r, jc, t, count, validity, &a); break;
  }
  if (st != QV_OK) {
    qv_buffer_unref(validity);
    qv_array_unref(a);
    return st;
  }
  if (has_validity(t->id)) {
    a->buffers[0] = validity;
    a->null_count = nulls;
  }
  *out = a;
  return QV_OK;
}

static qv_status parse_data(reader *r, const json_t *jc, const qv_type *t, int depth,
                            qv_array **out) {
  if (depth > MAX_DEPTH) return fail(r, QV_EINVAL, "columns nest deeper than %d levels", MAX_DEPTH);
  int64_t count;
  QV_RETURN_NOT_OK(get_int(r, jc, "count", 0, INT64_MAX, &count));
  return parse_data_body(r, jc, t, count, depth, out);
}

/* Build dictionary `id` from its "dictionaries" entry (once). */
static qv_status get_dictionary(reader *r, int64_t id, qv_array **out) {
  dict_slot *s = find_dict(r, id);
  if (s == NULL || s->entry == NULL)
    return fail(r, QV_EINVAL, "dictionary id %" PRId64 " has no entry in 'dictionaries'", id);
  if (s->state == 2) {
    *out = qv_array_ref(s->values);
    return QV_OK;
  }
  if (s->state == 1) return fail(r, QV_EINVAL, "dictionary id %" PRId64 " refers to itself", id);
  s->state = 1;
  /* Switch the error context to the dictionary and back. */
  reader saved = *r;
  snprintf(r->where, sizeof r->where, "dictionary id %" PRId64, id);
  r->path_len = 0;
  r->path[0] = '\0';
  qv_status st;
  json_t *jd = json_object_get(s->entry, "data");
  json_t *cols = jd ? json_object_get(jd, "columns") : NULL;
  int64_t count = 0;
  qv_array *values = NULL;
  qv_type *vt = s->value_type;
  if (jd == NULL || !json_is_object(jd)) st = fail(r, QV_EINVAL, "'data' must be an object");
  else if (cols == NULL || !json_is_array(cols) || json_array_size(cols) != 1)
    st = fail(r, QV_EINVAL, "'data' must have 'columns' with exactly one column");
  else st = get_int(r, jd, "count", 0, INT64_MAX, &count);
  if (st == QV_OK) {
    json_t *jc = json_array_get(cols, 0);
    path_push(r, "values");
    if (!json_is_object(jc))
      st = fail(r, QV_EINVAL, "column must be an object, found %s", jtype(jc));
    else st = parse_data(r, jc, vt, 1, &values);
    if (st == QV_OK && values->length != count)
      st = fail(r, QV_EINVAL, "count is %" PRId64 ", but the dictionary batch count is %" PRId64,
                values->length, count);
  }
  /* r->dicts may have moved? No: slots are only added while reading the
   * schema. Restore the context. */
  memcpy(r->where, saved.where, sizeof r->where);
  memcpy(r->path, saved.path, sizeof r->path);
  r->path_len = saved.path_len;
  s = find_dict(r, id);
  if (st != QV_OK) {
    qv_array_unref(values);
    s->state = 0;
    return st;
  }
  s->values = values;
  s->state = 2;
  *out = qv_array_ref(values);
  return QV_OK;
}

static qv_status parse_dictionary_entries(reader *r, const json_t *root) {
  json_t *jd = json_object_get(root, "dictionaries");
  if (jd == NULL || json_is_null(jd)) return QV_OK;
  snprintf(r->where, sizeof r->where, "dictionaries");
  r->path_len = 0;
  r->path[0] = '\0';
  if (!json_is_array(jd))
    return fail(r, QV_EINVAL, "'dictionaries' must be an array, found %s", jtype(jd));
  size_t k;
  json_t *e;
  json_array_foreach(jd, k, e) {
    snprintf(r->where, sizeof r->where, "dictionaries[%zu]", k);
    if (!json_is_object(e))
      return fail(r, QV_EINVAL, "entry must be an object, found %s", jtype(e));
    int64_t id;
    QV_RETURN_NOT_OK(get_int(r, e, "id", INT64_MIN, INT64_MAX, &id));
    dict_slot *s = find_dict(r, id);
    if (s == NULL)
      return fail(r, QV_EINVAL, "dictionary id %" PRId64 " is not used by any schema field", id);
    if (s->entry != NULL)
      return fail(r, QV_EINVAL,
                  "dictionary id %" PRId64 " appears twice (also dictionaries[%" PRId64 "])", id,
                  s->entry_index);
    s->entry = e;
    s->entry_index = (int64_t)k;
  }
  return QV_OK;
}

static qv_status parse_batches(reader *r, const json_t *root, const qv_schema *schema,
                               qv_json_data *out) {
  json_t *jb = json_object_get(root, "batches");
  snprintf(r->where, sizeof r->where, "batches");
  if (jb == NULL) return fail(r, QV_EINVAL, "missing 'batches'");
  if (!json_is_array(jb))
    return fail(r, QV_EINVAL, "'batches' must be an array, found %s", jtype(jb));
  size_t nb = json_array_size(jb);
  out->batches = calloc(nb ? nb : 1, sizeof *out->batches);
  if (out->batches == NULL) return oom(r);
  const qv_type *st_type = schema->type;
  for (size_t b = 0; b < nb; b++) {
    snprintf(r->where, sizeof r->where, "batch %zu", b);
    r->noun = "column";
    r->path_len = 0;
    r->path[0] = '\0';
    json_t *jbatch = json_array_get(jb, b);
    if (!json_is_object(jbatch))
      return fail(r, QV_EINVAL, "batch must be an object, found %s", jtype(jbatch));
    int64_t count;
    QV_RETURN_NOT_OK(get_int(r, jbatch, "count", 0, INT64_MAX, &count));
    json_t *cols = json_object_get(jbatch, "columns");
    if (cols == NULL || !json_is_array(cols))
      return fail(r, QV_EINVAL, "'columns' must be an array");
    if ((int64_t)json_array_size(cols) != st_type->n_children)
      return fail(r, QV_EINVAL, "%zu columns, but the schema has %d fields", json_array_size(cols),
                  (int)st_type->n_children);
    qv_array *batch = NULL;
    QV_RETURN_NOT_OK(new_array(r, st_type, count, 1, st_type->n_children, &batch));
    batch->null_count = 0;
    out->batches[out->n_batches++] = batch;
    for (int32_t k = 0; k < st_type->n_children; k++) {
      QV_RETURN_NOT_OK(
          parse_child(r, cols, (size_t)k, &st_type->children[k], 0, &batch->children[k]));
      if (batch->children[k]->length != count) {
        size_t old = path_push(r, st_type->children[k].name);
        qv_status st = fail(r, QV_EINVAL, "count is %" PRId64 ", but the batch count is %" PRId64,
                            batch->children[k]->length, count);
        path_pop(r, old);
        return st;
      }
    }
  }
  return QV_OK;
}

static void reader_free(reader *r) {
  for (int64_t k = 0; k < r->n_dicts; k++) {
    qv_type_unref(r->dicts[k].value_type);
    qv_array_unref(r->dicts[k].values);
  }
  free(r->dicts);
}

static qv_status read_tree(json_t *root, qv_json_data *out, qv_error *err) {
  reader r;
  memset(&r, 0, sizeof r);
  r.err = err;
  r.noun = "field";
  qv_status st;
  if (!json_is_object(root)) {
    snprintf(r.where, sizeof r.where, "JSON");
    return fail(&r, QV_EINVAL, "top level must be an object, found %s", jtype(root));
  }
  qv_json_data d;
  memset(&d, 0, sizeof d);
  st = parse_schema(&r, root, &d.schema);
  if (st == QV_OK) st = parse_dictionary_entries(&r, root);
  if (st == QV_OK) st = parse_batches(&r, root, d.schema, &d);
  /* Dictionaries not referenced by any batch are still read and checked. */
  if (st == QV_OK && r.n_dicts > 0) {
    d.dictionaries = calloc((size_t)r.n_dicts, sizeof *d.dictionaries);
    if (d.dictionaries == NULL) st = oom(&r);
    /* file order */
    json_t *jd = json_object_get(root, "dictionaries");
    for (size_t k = 0; st == QV_OK && jd != NULL && k < json_array_size(jd); k++) {
      int64_t id = json_integer_value(json_object_get(json_array_get(jd, k), "id"));
      qv_array *values = NULL;
      st = get_dictionary(&r, id, &values);
      if (st == QV_OK) {
        d.dictionaries[d.n_dictionaries].id = id;
        d.dictionaries[d.n_dictionaries].values = values;
        d.n_dictionaries++;
      }
    }
  }
  reader_free(&r);
  if (st != QV_OK) {
    qv_json_data_reset(&d);
    return st;
  }
  *out = d;
  return QV_OK;
}

void qv_json_data_reset(qv_json_data *d) {
  if (d == NULL) return;
  for (int64_t k = 0; k < d->n_batches; k++) qv_array_unref(d->batches[k]);
  free(d->batches);
  for (int64_t k = 0; k < d->n_dictionaries; k++) qv_array_unref(d->dictionaries[k].values);
  free(d->dictionaries);
  qv_schema_unref(d->schema);
  memset(d, 0, sizeof *d);
}

/* gunzip `in` (one or more members) into a malloc'd buffer, refusing more
 * than max bytes of output. */
static qv_status gunzip(const uint8_t *in, int64_t n, int64_t max, char **out, int64_t *out_len,
                        qv_error *err) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    return qv_error_set(err, QV_ENOMEM, "gzip: cannot initialise zlib");
  int64_t cap = n * 4 + 1024, len = 0;
  if (cap > max + 1) cap = max + 1;
  char *buf = malloc((size_t)cap);
  if (buf == NULL) {
    inflateEnd(&zs);
    return qv_error_set(err, QV_ENOMEM, "gzip: out of memory");
  }
  int64_t consumed = 0;
  qv_status st = QV_OK;
  for (;;) {
    if (len == cap) {
      if (cap > max) {
        st = qv_error_set(err, QV_ENOMEM,
                          "gzip: decompressed JSON exceeds the limit of %" PRId64 " bytes", max);
        break;
      }
      int64_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
      char *g = realloc(buf, (size_t)ncap);
      if (g == NULL) {
        st = qv_error_set(err, QV_ENOMEM, "gzip: out of memory");
        break;
      }
      buf = g;
      cap = ncap;
    }
    uInt chunk_in = (uInt)((n - consumed) > (int64_t)UINT32_MAX ? UINT32_MAX : n - consumed);
    uInt chunk_out = (uInt)((cap - len) > (int64_t)UINT32_MAX ? UINT32_MAX : cap - len);
    zs.next_in = (Bytef *)(in + consumed);
    zs.avail_in = chunk_in;
    zs.next_out = (Bytef *)(buf + len);
    zs.avail_out = chunk_out;
    int zr = inflate(&zs, Z_NO_FLUSH);
    consumed += chunk_in - zs.avail_in;
    len += chunk_out - zs.avail_out;
    if (zr == Z_STREAM_END) {
      /* another member may follow (concatenated gzip) */
      if (consumed < n && n - consumed >= 2 && in[consumed] == GZIP_MAGIC0 &&
          in[consumed + 1] == GZIP_MAGIC1) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (zr == Z_BUF_ERROR && zs.avail_out != 0) {
      st = qv_error_set(err, QV_EINVAL, "gzip: truncated input after %" PRId64 " bytes", consumed);
      break;
    }
    if (zr != Z_OK && zr != Z_BUF_ERROR) {
      st = qv_error_set(err, QV_EINVAL, "gzip: corrupt data at input byte %" PRId64 ": %s",
                        consumed, zs.msg ? zs.msg : "inflate failed");
      break;
    }
  }
  inflateEnd(&zs);
  if (st != QV_OK) {
    free(buf);
    return st;
  }
  *out = buf;
  *out_len = len;
  return QV_OK;
}

qv_status qv_json_read_bytes(const void *data, int64_t size, const qv_json_read_options *options,
                             qv_json_data *out, qv_error *err) {
  int64_t max = options && options->max_bytes > 0 ? options->max_bytes : JSON_DEFAULT_MAX_BYTES;
  const uint8_t *p = data;
  char *text = NULL;
  int64_t len = size;
  if (size < 0) return qv_error_set(err, QV_EARG, "negative size");
  if (size >= 2 && p[0] == GZIP_MAGIC0 && p[1] == GZIP_MAGIC1) {
    QV_RETURN_NOT_OK(gunzip(p, size, max, &text, &len, err));
  } else if (size > max) {
    return qv_error_set(err, QV_ENOMEM, "JSON of %" PRId64 " bytes exceeds the limit of %" PRId64,
                        size, max);
  }
  json_error_t je;
  json_t *root = json_loadb(text ? text : (const char *)data, (size_t)len, JSON_ALLOW_NUL, &je);
  free(text);
  if (root == NULL)
    return qv_error_set(err, QV_EINVAL, "JSON syntax error at line %d, column %d: %s", je.line,
                        je.column, je.text);
  qv_status st = read_tree(root, out, err);
  json_decref(root);
  return st;
}

qv_status qv_json_read(const char *path, const qv_json_read_options *options, qv_json_data *out,
                       qv_error *err) {
  qv_buffer *buf = NULL;
  qv_status st = qv_buffer_map_file(path, &buf, NULL, err);
  if (st != QV_OK) return st;
  st = qv_json_read_bytes(buf->data, buf->size, options, out, err);
  qv_buffer_unref(buf);
  if (st != QV_OK) qv_error_prefix(err, st, "%s: ", path);
  return st;
}
