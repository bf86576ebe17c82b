/*
 * hf_json.c — JSON text exactly as Python's json module writes it, so that
 * the files quiver writes for Hugging Face `datasets` (schema metadata,
 * state.json, dataset_info.json, dataset_dict.json) are byte-identical to
 * the ones `datasets` writes. Also the jansson loading wrapper and Python
 * value equality used by the features parser. Dataset layer; needs core.
 *
 * Python's rules reproduced here (json/encoder.py):
 *  - ensure_ascii: '"' '\\' and \b \f \n \r \t get short escapes; every
 *    other character outside ' '..'~' becomes \uXXXX (lower-case hex), and
 *    characters above U+FFFF a surrogate pair;
 *  - floats print as repr() ("1.0", "1e+16"), NaN/inf as NaN/Infinity;
 *  - json.dumps separators ", " and ": "; with indent=N, "," at line end,
 *    N spaces per level, and "[]" / "{}" for empty containers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/hf_internal.h"

/* Decode one UTF-8 sequence at s[0..n): its code point and length, or
 * length 0 when the bytes are not valid UTF-8 (overlong forms, surrogates
 * and values above U+10FFFF included). */
static int utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
  uint8_t c = s[0];
  int len;
  uint32_t v, min;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2, v = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, v = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if ((size_t)len > n) return 0;
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    v = (v << 6) | (s[i] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return len;
}

static qv_status put_u16(qv_strbuf *out, uint32_t u, qv_error *err) {
  return qv_strbuf_printf(out, err, "\\u%04x", (unsigned)u);
}

qv_status qv_pyjson_string(qv_strbuf *out, const char *str, size_t n, qv_error *err) {
  const uint8_t *s = (const uint8_t *)str;
  QV_RETURN_NOT_OK(qv_strbuf_append_char(out, '"', err));
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && s[j] >= 0x20 && s[j] <= 0x7E && s[j] != '"' && s[j] != '\\') j++;
    if (j > i) {
      QV_RETURN_NOT_OK(qv_strbuf_append(out, s + i, (int64_t)(j - i), err));
      i = j;
      continue;
    }
    uint8_t c = s[i];
    const char *esc = NULL;
    switch (c) {
      case '"': esc = "\\\""; break;
      case '\\': esc = "\\\\"; break;
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      default: break;
    }
    if (esc != NULL) {
      QV_RETURN_NOT_OK(qv_strbuf_append_str(out, esc, err));
      i++;
      continue;
    }
    uint32_t cp;
    int len = utf8_decode(s + i, n - i, &cp);
    if (len == 0) {
      cp = 0xFFFD;
      len = 1;
    }
    if (cp >= 0x10000) {
      uint32_t v = cp - 0x10000;
      QV_RETURN_NOT_OK(put_u16(out, 0xD800 | (v >> 10), err));
      QV_RETURN_NOT_OK(put_u16(out, 0xDC00 | (v & 0x3FF), err));
    } else {
      QV_RETURN_NOT_OK(put_u16(out, cp, err));
    }
    i += (size_t)len;
  }
  return qv_strbuf_append_char(out, '"', err);
}

static int key_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static qv_status newline(qv_strbuf *out, int indent, int level, qv_error *err) {
  QV_RETURN_NOT_OK(qv_strbuf_append_char(out, '\n', err));
  for (int i = 0; i < indent * level; i++) QV_RETURN_NOT_OK(qv_strbuf_append_char(out, ' ', err));
  return QV_OK;
}

static qv_status dump(qv_strbuf *out, const json_t *v, int indent, bool sort_keys, int level,
                      qv_error *err) {
  if (level > 4 * QV_HF_MAX_DEPTH)
    return qv_error_set(err, QV_EINVAL, "JSON nested deeper than %d levels", 4 * QV_HF_MAX_DEPTH);
  const char *item_sep = indent < 0 ? ", " : ",";
  switch (json_typeof(v)) {
    case JSON_NULL: return qv_strbuf_append_str(out, "null", err);
    case JSON_TRUE: return qv_strbuf_append_str(out, "true", err);
    case JSON_FALSE: return qv_strbuf_append_str(out, "false", err);
    case JSON_INTEGER: return qv_strbuf_printf(out, err, "%lld", (long long)json_integer_value(v));
    case JSON_REAL: return qv_format_double(out, json_real_value(v), err);
    case JSON_STRING:
      return qv_pyjson_string(out, json_string_value(v), json_string_length(v), err);
    case JSON_ARRAY: {
      size_t n = json_array_size(v);
      if (n == 0) return qv_strbuf_append_str(out, "[]", err);
      QV_RETURN_NOT_OK(qv_strbuf_append_char(out, '[', err));
      for (size_t i = 0; i < n; i++) {
        if (i > 0) QV_RETURN_NOT_OK(qv_strbuf_append_str(out, item_sep, err));
        if (indent >= 0) QV_RETURN_NOT_OK(newline(out, indent, level + 1, err));
        QV_RETURN_NOT_OK(dump(out, json_array_get(v, i), indent, sort_keys, level + 1, err));
      }
      if (indent >= 0) QV_RETURN_NOT_OK(newline(out, indent, level, err));
      return qv_strbuf_append_char(out, ']', err);
    }
    case JSON_OBJECT: {
      size_t n = json_object_size(v);
      if (n == 0) return qv_strbuf_append_str(out, "{}", err);
      const char **keys = malloc(sizeof *keys * n);
      if (keys == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (JSON keys)");
      size_t k = 0;
      const char *key;
      json_t *val;
      json_object_foreach((json_t *)v, key, val) {
        if (k < n) keys[k++] = key;
      }
      if (sort_keys) qsort(keys, k, sizeof *keys, key_cmp);
      qv_status st = qv_strbuf_append_char(out, '{', err);
      for (size_t i = 0; st == QV_OK && i < k; i++) {
        if (i > 0) st = qv_strbuf_append_str(out, item_sep, err);
        if (st == QV_OK && indent >= 0) st = newline(out, indent, level + 1, err);
        if (st == QV_OK) st = qv_pyjson_string(out, keys[i], strlen(keys[i]), err);
        if (st == QV_OK) st = qv_strbuf_append_str(out, ": ", err);
        if (st == QV_OK)
          st = dump(out, json_object_get(v, keys[i]), indent, sort_keys, level + 1, err);
      }
      free(keys);
      QV_RETURN_NOT_OK(st);
      if (indent >= 0) QV_RETURN_NOT_OK(newline(out, indent, level, err));
      return qv_strbuf_append_char(out, '}', err);
    }
  }
  return qv_error_set(err, QV_EINVAL, "unknown JSON value kind");
}

qv_status qv_pyjson_dump(qv_strbuf *out, const json_t *v, int indent, bool sort_keys,
                         qv_error *err) {
  if (v == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (JSON value)");
  return dump(out, v, indent, sort_keys, 0, err);
}

qv_status qv_hf_json_load(const char *what, const char *text, int64_t len, json_t **out,
                          qv_error *err) {
  if (len < 0) return qv_error_set(err, QV_EARG, "%s: negative length", what);
  json_error_t jerr;
  json_t *v = json_loadb(text, (size_t)len, JSON_DECODE_ANY, &jerr);
  if (v == NULL)
    return qv_error_set(err, QV_EINVAL, "%s: invalid JSON at line %d, column %d: %s", what,
                        jerr.line, jerr.column, jerr.text);
  *out = v;
  return QV_OK;
}

const char *qv_hf_json_kind(const json_t *v) {
  if (v == NULL) return "nothing";
  switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "list";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "float";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
  }
  return "unknown";
}

/* Numeric view of bool/int/real for Python equality; false for others. */
static bool py_number(const json_t *v, double *d, long long *i, bool *is_int) {
  switch (json_typeof(v)) {
    case JSON_TRUE: *i = 1, *is_int = true; return true;
    case JSON_FALSE: *i = 0, *is_int = true; return true;
    case JSON_INTEGER: *i = json_integer_value(v), *is_int = true; return true;
    case JSON_REAL: *d = json_real_value(v), *is_int = false; return true;
    default: return false;
  }
}

bool qv_hf_json_py_equal(const json_t *a, const json_t *b) {
  if (a == NULL || b == NULL) return a == b;
  double da = 0, db = 0;
  long long ia = 0, ib = 0;
  bool inta, intb;
  if (py_number(a, &da, &ia, &inta) && py_number(b, &db, &ib, &intb)) {
    if (inta && intb) return ia == ib;
    if (inta) da = (double)ia;
    if (intb) db = (double)ib;
    return da == db;
  }
  if (json_typeof(a) != json_typeof(b)) return false;
  switch (json_typeof(a)) {
    case JSON_ARRAY: {
      if (json_array_size(a) != json_array_size(b)) return false;
      for (size_t i = 0; i < json_array_size(a); i++)
        if (!qv_hf_json_py_equal(json_array_get(a, i), json_array_get(b, i))) return false;
      return true;
    }
    case JSON_OBJECT: {
      if (json_object_size(a) != json_object_size(b)) return false;
      const char *key;
      json_t *val;
      json_object_foreach((json_t *)a, key, val) {
        if (!qv_hf_json_py_equal(val, json_object_get(b, key))) return false;
      }
      return true;
    }
    default: return json_equal((json_t *)a, (json_t *)b) != 0;
  }
}
