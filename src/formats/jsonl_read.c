/*
 * jsonl_read.c — the JSON Lines reader of quiver/jsonl.h (formats layer).
 *
 * A hand-written tokenizer (no DOM: values are parsed straight into shapes
 * and then into array builders). The text is cut into blocks of about
 * block_size bytes at newlines (a JSON value holds no raw newline, so
 * every newline ends a row, as with pyarrow's default
 * newlines_in_values=False). Pass 1, in parallel, infers each block's
 * shape tree (null / bool / int / double / string-or-timestamp / list /
 * struct with fields in order of first appearance); the block shapes are
 * unified in file order as pyarrow.json unifies them (int64 widened to
 * double, null taking any kind, structs merging their fields, anything
 * else an error naming the column path); pass 2, in parallel, parses each
 * block again into builders of the final types (one record batch per
 * block). Strings become timestamp[s] when every value of the column is an
 * ISO 8601 timestamp without a fraction (zones applied, no time zone on
 * the type), as pyarrow infers them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel_internal.h"
#include "formats/text_internal.h"
#include "quiver/builder.h"
#include "quiver/jsonl.h"

#define MAX_DEPTH 128

enum { S_NULL, S_BOOL, S_INT, S_DOUBLE, S_STR, S_LIST, S_STRUCT };

static const char *kind_name(int k) {
  static const char *const n[] = {"null",   "boolean", "number", "number",
                                  "string", "array",   "object"};
  return n[k];
}

typedef struct shape {
  int kind;
  bool not_ts;      /* a string value that is not a timestamp[s] */
  int64_t first_at; /* offset of the value that set the kind */
  struct shape *parent;
  char *name; /* field name in the parent struct (NULL: list item / root) */
  struct shape *item;
  int32_t n_fields, cap_fields;
  struct shape **fields;
  uint64_t *stamp; /* per field: the object instance that last set it */
} shape;

typedef struct jblock {
  int64_t start, end;
  shape *root;
  int64_t n_rows;
  qv_array *batch;
  qv_status st;
  qv_error err;
} jblock;

typedef struct jreader {
  const uint8_t *d;
  int64_t n;
  const char *name;
  const qv_jsonl_read_options *o;
  jblock *blocks;
  int64_t n_blocks;
  qv_type *root_type;
  int64_t line_base; /* streaming: newlines before the window */
} jreader;

typedef struct parser {
  const jreader *r;
  int64_t pos, end;
  qv_bytes scratch;
  uint64_t objects; /* object instances seen (duplicate-key stamps) */
  qv_error *err;
  /* building on the types of earlier windows without inferring first:
   * anything inference would have seen differently (a key the type lacks,
   * a key given twice, a fraction in an inferred timestamp) fails, and the
   * stream infers the block to find out whether a type widened */
  bool spec;
} parser;

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

static qv_status err_at(const jreader *r, qv_error *err, int64_t off, const char *fmt,
                        const char *a, const char *b) {
  int64_t line = 1, ls = 0;
  for (int64_t i = 0; i < off && i < r->n; i++)
    if (r->d[i] == '\n') line++, ls = i + 1;
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
  line += r->line_base;
  return qv_error_set(err, QV_EINVAL, "%s: line %lld, column %lld: %s", r->name, (long long)line,
                      (long long)(off - ls + 1), msg);
}

static void shape_path(const shape *s, char *out, size_t cap) {
  const shape *chain[MAX_DEPTH + 2];
  int k = 0;
  for (const shape *p = s; p && p->parent && k < MAX_DEPTH + 1; p = p->parent) chain[k++] = p;
  size_t len = 0;
  out[0] = '\0';
  for (int i = k - 1; i >= 0 && len + 1 < cap; i--)
    len += (size_t)snprintf(out + len, cap - len, "/%s", chain[i]->name ? chain[i]->name : "[]");
  if (k == 0) snprintf(out, cap, "/");
}

static qv_status syntax(parser *p, const char *what) {
  return err_at(p->r, p->err, p->pos, "invalid JSON: %s%s", what, NULL);
}

/* ------------------------------------------------------------------------ */
/* Lexing                                                                    */

static void skip_ws(parser *p) {
  const uint8_t *d = p->r->d;
  while (p->pos < p->end &&
         (d[p->pos] == ' ' || d[p->pos] == '\t' || d[p->pos] == '\r' || d[p->pos] == '\n'))
    p->pos++;
}

static int hex4(const uint8_t *s) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    int c = s[i], h;
    if (c >= '0' && c <= '9') h = c - '0';
    else if (c >= 'a' && c <= 'f') h = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') h = c - 'A' + 10;
    else return -1;
    v = v * 16 + h;
  }
  return v;
}

static void put_utf8(qv_bytes *b, uint32_t cp) {
  uint8_t u[4];
  int n;
  if (cp < 0x80) u[0] = (uint8_t)cp, n = 1;
  else if (cp < 0x800)
    u[0] = (uint8_t)(0xc0 | cp >> 6), u[1] = (uint8_t)(0x80 | (cp & 0x3f)), n = 2;
  else if (cp < 0x10000)
    u[0] = (uint8_t)(0xe0 | cp >> 12), u[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f)),
    u[2] = (uint8_t)(0x80 | (cp & 0x3f)), n = 3;
  else
    u[0] = (uint8_t)(0xf0 | cp >> 18), u[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f)),
    u[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f)), u[3] = (uint8_t)(0x80 | (cp & 0x3f)), n = 4;
  qv_bytes_append(b, u, n);
}

/* A string at p->pos (the opening quote): its bytes, unescaped into the
 * scratch when it has escapes. */
static qv_status lex_string(parser *p, const uint8_t **out, int64_t *len) {
  const uint8_t *d = p->r->d;
  int64_t i = p->pos + 1, start = i;
  while (i < p->end && d[i] != '"' && d[i] != '\\' && d[i] >= 0x20) i++;
  if (i < p->end && d[i] == '"') {
    *out = d + start;
    *len = i - start;
    if (!qv_text_valid_utf8(*out, *len)) return syntax(p, "a string that is not UTF-8");
    p->pos = i + 1;
    return QV_OK;
  }
  qv_bytes *b = &p->scratch;
  b->len = 0;
  if (!qv_bytes_append(b, d + start, i - start))
    return qv_error_set(p->err, QV_ENOMEM, "out of memory");
  while (i < p->end) {
    uint8_t c = d[i];
    if (c == '"') break;
    if (c < 0x20) {
      p->pos = i;
      return syntax(p, "a control character in a string");
    }
    if (c != '\\') {
      int64_t j = i;
      while (j < p->end && d[j] != '"' && d[j] != '\\' && d[j] >= 0x20) j++;
      if (!qv_bytes_append(b, d + i, j - i))
        return qv_error_set(p->err, QV_ENOMEM, "out of memory");
      i = j;
      continue;
    }
    if (i + 1 >= p->end) break;
    uint8_t e = d[i + 1];
    uint8_t lit = 0;
    switch (e) {
      case '"': lit = '"'; break;
      case '\\': lit = '\\'; break;
      case '/': lit = '/'; break;
      case 'b': lit = '\b'; break;
      case 'f': lit = '\f'; break;
      case 'n': lit = '\n'; break;
      case 'r': lit = '\r'; break;
      case 't': lit = '\t'; break;
      case 'u': {
        int cp = i + 6 <= p->end ? hex4(d + i + 2) : -1;
        if (cp < 0) {
          p->pos = i;
          return syntax(p, "a bad \\u escape");
        }
        i += 6;
        if (cp >= 0xd800 && cp <= 0xdbff && i + 6 <= p->end && d[i] == '\\' && d[i + 1] == 'u') {
          int lo = hex4(d + i + 2);
          if (lo >= 0xdc00 && lo <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            i += 6;
          }
        }
        if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
        if (!qv_bytes_reserve(b, 4)) return qv_error_set(p->err, QV_ENOMEM, "out of memory");
        put_utf8(b, (uint32_t)cp);
        continue;
      }
      default: p->pos = i; return syntax(p, "a bad escape in a string");
    }
    if (!qv_bytes_append(b, &lit, 1)) return qv_error_set(p->err, QV_ENOMEM, "out of memory");
    i += 2;
  }
  if (i >= p->end) return syntax(p, "an unterminated string");
  p->pos = i + 1;
  *out = b->data ? b->data : (const uint8_t *)"";
  *len = b->len;
  if (!qv_text_valid_utf8(*out, *len)) return syntax(p, "a string that is not UTF-8");
  return QV_OK;
}

/* A number: *is_int with *iv when it is an integer literal in int64 range,
 * else *dv. NaN, Infinity and -Infinity are accepted (as pyarrow does). */
static qv_status lex_number(parser *p, bool *is_int, int64_t *iv, double *dv) {
  const uint8_t *d = p->r->d;
  int64_t s = p->pos, i = s;
  static const char *const kSpecial[] = {"NaN", "Infinity", "-Infinity"};
  bool special = i < p->end &&
                 (d[i] == 'N' || d[i] == 'I' || (d[i] == '-' && i + 1 < p->end && d[i + 1] == 'I'));
  for (int k = 0; special && k < 3; k++) {
    size_t l = strlen(kSpecial[k]);
    if (p->end - i >= (int64_t)l && memcmp(d + i, kSpecial[k], l) == 0) {
      *is_int = false;
      *dv = k == 0 ? NAN : k == 1 ? INFINITY : -INFINITY;
      p->pos = i + (int64_t)l;
      return QV_OK;
    }
  }
  bool neg = i < p->end && d[i] == '-';
  if (neg) i++;
  if (i >= p->end || d[i] < '0' || d[i] > '9') return syntax(p, "a bad number");
  uint64_t mag = 0;
  bool fits = true;
  if (d[i] == '0') i++;
  else
    for (; i < p->end && d[i] >= '0' && d[i] <= '9'; i++) {
      unsigned dig = (unsigned)(d[i] - '0');
      if (mag > (UINT64_MAX - dig) / 10) fits = false;
      else mag = mag * 10 + dig;
    }
  bool integral = true;
  if (i < p->end && d[i] == '.') {
    integral = false;
    i++;
    if (i >= p->end || d[i] < '0' || d[i] > '9') return syntax(p, "a bad number");
    while (i < p->end && d[i] >= '0' && d[i] <= '9') i++;
  }
  if (i < p->end && (d[i] == 'e' || d[i] == 'E')) {
    integral = false;
    i++;
    if (i < p->end && (d[i] == '+' || d[i] == '-')) i++;
    if (i >= p->end || d[i] < '0' || d[i] > '9') return syntax(p, "a bad number");
    while (i < p->end && d[i] >= '0' && d[i] <= '9') i++;
  }
  p->pos = i;
  if (integral && fits && mag <= (uint64_t)INT64_MAX + (neg ? 1 : 0)) {
    *iv = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    *is_int = true;
    *dv = *iv == 0 && d[s] == '-' ? -0.0 : (double)*iv; /* "-0" read as a real keeps its sign */
    return QV_OK;
  }
  *is_int = false;
  if (!qv_text_parse_double(d + s, i - s, dv)) return syntax(p, "a bad number");
  return QV_OK;
}

static bool lit(parser *p, const char *w) {
  const uint8_t *d = p->r->d + p->pos;
  if (p->pos >= p->end || d[0] != (uint8_t)w[0]) return false;
  int64_t l = 1;
  while (w[l] != '\0') {
    if (p->pos + l >= p->end || d[l] != (uint8_t)w[l]) return false;
    l++;
  }
  p->pos += l;
  return true;
}

/* Whether NUL-terminated `name` is the klen bytes at key (keys hold no NUL). */
static inline bool name_is(const char *name, const uint8_t *key, int64_t klen) {
  return strncmp(name, (const char *)key, (size_t)klen) == 0 && name[klen] == '\0';
}

/* ------------------------------------------------------------------------ */
/* Shapes                                                                    */

static void shape_free(shape *s) {
  if (s == NULL) return;
  shape_free(s->item);
  for (int32_t i = 0; i < s->n_fields; i++) shape_free(s->fields[i]);
  free(s->fields);
  free(s->stamp);
  free(s->name);
  free(s);
}

static shape *shape_new(shape *parent, const char *name, int64_t len) {
  shape *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->parent = parent;
  s->first_at = -1;
  if (name && (s->name = strndup(name, (size_t)len)) == NULL) {
    free(s);
    return NULL;
  }
  return s;
}

/* Field `name` of struct shape s, added when new; *idx its position.
 * `hint` is where it is expected (the key's position in its object). */
static shape *shape_field(shape *s, const uint8_t *name, int64_t len, int32_t hint, int32_t *idx) {
  if (hint >= 0 && hint < s->n_fields) {
    const char *f = s->fields[hint]->name;
    if (name_is(f, name, len)) {
      *idx = hint;
      return s->fields[hint];
    }
  }
  for (int32_t i = 0; i < s->n_fields; i++) {
    const char *f = s->fields[i]->name;
    if (name_is(f, name, len)) {
      *idx = i;
      return s->fields[i];
    }
  }
  if (s->n_fields == s->cap_fields) {
    int32_t cap = s->cap_fields ? s->cap_fields * 2 : 8;
    shape **f = realloc(s->fields, (size_t)cap * sizeof *f);
    if (f == NULL) return NULL;
    s->fields = f;
    uint64_t *st = realloc(s->stamp, (size_t)cap * sizeof *st);
    if (st == NULL) return NULL;
    s->stamp = st;
    s->cap_fields = cap;
  }
  shape *c = shape_new(s, (const char *)name, len);
  if (c == NULL) return NULL;
  s->stamp[s->n_fields] = 0;
  *idx = s->n_fields;
  s->fields[s->n_fields++] = c;
  return c;
}

/* Give shape s the kind k seen at `at` (unification of one value). */
static qv_status set_kind(parser *p, shape *s, int k, int64_t at) {
  if (k == S_NULL || s->kind == k) return QV_OK;
  if (s->kind == S_NULL) {
    s->kind = k;
    s->first_at = at;
    return QV_OK;
  }
  if ((s->kind == S_INT && k == S_DOUBLE) || (s->kind == S_DOUBLE && k == S_INT)) {
    s->kind = S_DOUBLE;
    return QV_OK;
  }
  char path[256];
  shape_path(s, path, sizeof path);
  char what[320];
  snprintf(what, sizeof what, "column %s changed from %s", path, kind_name(s->kind));
  return err_at(p->r, p->err, at, "%s to %s", what, kind_name(k));
}

static qv_status infer_value(parser *p, shape *s, int depth);

static qv_status infer_object(parser *p, shape *s, int depth) {
  int64_t at = p->pos;
  QV_RETURN_NOT_OK(set_kind(p, s, S_STRUCT, at));
  uint64_t me = ++p->objects;
  p->pos++; /* { */
  skip_ws(p);
  if (p->pos < p->end && p->r->d[p->pos] == '}') {
    p->pos++;
    return QV_OK;
  }
  for (int32_t k = 0;; k++) {
    skip_ws(p);
    if (p->pos >= p->end || p->r->d[p->pos] != '"') return syntax(p, "expected a key");
    int64_t key_at = p->pos;
    const uint8_t *key;
    int64_t klen;
    QV_RETURN_NOT_OK(lex_string(p, &key, &klen));
    if (memchr(key, 0, (size_t)klen)) {
      p->pos = key_at;
      return syntax(p, "a key holding a NUL character");
    }
    int32_t idx;
    shape *c = shape_field(s, key, klen, k, &idx);
    if (c == NULL) return qv_error_set(p->err, QV_ENOMEM, "out of memory");
    if (s->stamp[idx] == me) {
      char path[256];
      shape_path(c, path, sizeof path);
      return err_at(p->r, p->err, key_at, "column %s was given twice in one object%s", path, "");
    }
    s->stamp[idx] = me;
    skip_ws(p);
    if (p->pos >= p->end || p->r->d[p->pos] != ':') return syntax(p, "expected ':'");
    p->pos++;
    QV_RETURN_NOT_OK(infer_value(p, c, depth + 1));
    skip_ws(p);
    if (p->pos < p->end && p->r->d[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->pos < p->end && p->r->d[p->pos] == '}') {
      p->pos++;
      return QV_OK;
    }
    return syntax(p, "expected ',' or '}'");
  }
}

static qv_status infer_value(parser *p, shape *s, int depth) {
  if (depth > MAX_DEPTH) return syntax(p, "nesting deeper than 128 levels");
  int64_t before = p->pos;
  skip_ws(p);
  if (p->pos >= p->end) {
    p->pos = before;
    return syntax(p, "a value is missing");
  }
  uint8_t c = p->r->d[p->pos];
  int64_t at = p->pos;
  if (c == '{') return infer_object(p, s, depth);
  if (c == '[') {
    QV_RETURN_NOT_OK(set_kind(p, s, S_LIST, at));
    if (s->item == NULL && (s->item = shape_new(s, NULL, 0)) == NULL)
      return qv_error_set(p->err, QV_ENOMEM, "out of memory");
    p->pos++;
    skip_ws(p);
    if (p->pos < p->end && p->r->d[p->pos] == ']') {
      p->pos++;
      return QV_OK;
    }
    for (;;) {
      QV_RETURN_NOT_OK(infer_value(p, s->item, depth + 1));
      skip_ws(p);
      if (p->pos < p->end && p->r->d[p->pos] == ',') {
        p->pos++;
        continue;
      }
      if (p->pos < p->end && p->r->d[p->pos] == ']') {
        p->pos++;
        return QV_OK;
      }
      return syntax(p, "expected ',' or ']'");
    }
  }
  if (c == '"') {
    const uint8_t *str;
    int64_t len;
    QV_RETURN_NOT_OK(lex_string(p, &str, &len));
    QV_RETURN_NOT_OK(set_kind(p, s, S_STR, at));
    if (!s->not_ts) {
      int64_t sec;
      int32_t ns;
      int fd;
      bool z;
      if (!qv_text_parse_timestamp(str, len, &sec, &ns, &fd, &z) || fd > 0) s->not_ts = true;
    }
    return QV_OK;
  }
  if (lit(p, "null")) return QV_OK;
  if (lit(p, "true") || lit(p, "false")) return set_kind(p, s, S_BOOL, at);
  bool is_int;
  int64_t iv;
  double dv;
  QV_RETURN_NOT_OK(lex_number(p, &is_int, &iv, &dv));
  return set_kind(p, s, is_int ? S_INT : S_DOUBLE, at);
}

/* Unify block shape b into a (file order). */
static qv_status unify(const jreader *r, shape *a, const shape *b, qv_error *err) {
  if (b->kind != S_NULL) {
    if (a->kind == S_NULL) {
      a->kind = b->kind;
      a->first_at = b->first_at;
    } else if (a->kind != b->kind) {
      bool nums =
          (a->kind == S_INT || a->kind == S_DOUBLE) && (b->kind == S_INT || b->kind == S_DOUBLE);
      if (!nums) {
        char path[256], what[320];
        shape_path(a, path, sizeof path);
        snprintf(what, sizeof what, "column %s changed from %s", path, kind_name(a->kind));
        return err_at(r, err, b->first_at, "%s to %s", what, kind_name(b->kind));
      }
      a->kind = S_DOUBLE;
    }
  }
  a->not_ts |= b->not_ts;
  if (b->item) {
    if (a->item == NULL && (a->item = shape_new(a, NULL, 0)) == NULL)
      return qv_error_set(err, QV_ENOMEM, "out of memory");
    QV_RETURN_NOT_OK(unify(r, a->item, b->item, err));
  }
  for (int32_t i = 0; i < b->n_fields; i++) {
    int32_t idx;
    const shape *bf = b->fields[i];
    shape *af = shape_field(a, (const uint8_t *)bf->name, (int64_t)strlen(bf->name), i, &idx);
    if (af == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
    QV_RETURN_NOT_OK(unify(r, af, bf, err));
  }
  return QV_OK;
}

static qv_type *shape_type(const shape *s, qv_error *err) {
  qv_type *t = NULL;
  switch (s->kind) {
    case S_NULL: t = qv_type_new(QV_NA); break;
    case S_BOOL: t = qv_type_new(QV_BOOL); break;
    case S_INT: t = qv_type_new(QV_INT64); break;
    case S_DOUBLE: t = qv_type_new(QV_DOUBLE); break;
    case S_STR: t = s->not_ts ? qv_type_new(QV_STRING) : qv_type_timestamp(QV_SECOND, NULL); break;
    case S_LIST: {
      qv_type *item = s->item ? shape_type(s->item, err) : qv_type_new(QV_NA);
      if (item == NULL) return NULL;
      t = qv_type_list_of(QV_LIST, item);
      break;
    }
    default: {
      t = qv_type_new(QV_STRUCT);
      for (int32_t i = 0; t && i < s->n_fields; i++) {
        qv_type *c = shape_type(s->fields[i], err);
        if (c == NULL || qv_type_add_child(t, s->fields[i]->name, true, c, NULL, err) != QV_OK) {
          qv_type_unref(c);
          qv_type_unref(t);
          return NULL;
        }
      }
    }
  }
  if (t == NULL) qv_error_set(err, QV_ENOMEM, "out of memory");
  return t;
}

/* ------------------------------------------------------------------------ */
/* Building                                                                  */

static qv_status skip_value(parser *p, int depth) {
  shape *tmp = shape_new(NULL, NULL, 0);
  if (tmp == NULL) return qv_error_set(p->err, QV_ENOMEM, "out of memory");
  qv_status st = infer_value(p, tmp, depth);
  shape_free(tmp);
  return st;
}

static qv_status mismatch(parser *p, int64_t at, const qv_type *t) {
  char tn[128];
  qv_type_to_string(t, tn, sizeof tn);
  return err_at(p->r, p->err, at, "a value that does not convert to %s%s", tn, "");
}

static qv_status build_value(parser *p, qv_builder *b, const qv_type *t, int depth);

static qv_status build_object(parser *p, qv_builder *b, const qv_type *t, int depth,
                              bool top_level) {
  int64_t at = p->pos;
  if (t->id != QV_STRUCT) return mismatch(p, at, t);
  QV_RETURN_NOT_OK(qv_builder_begin_struct(b, p->err));
  int32_t n = t->n_children;
  uint64_t me = ++p->objects;
  uint64_t small[64];
  uint64_t *seen = n <= 64 ? small : calloc((size_t)n, sizeof *seen);
  if (seen == NULL) return qv_error_set(p->err, QV_ENOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) seen[i] = 0;
  qv_status st = QV_OK;
  p->pos++;
  skip_ws(p);
  if (p->pos < p->end && p->r->d[p->pos] == '}') {
    p->pos++;
  } else {
    for (int32_t k = 0; st == QV_OK; k++) {
      skip_ws(p);
      if (p->pos >= p->end || p->r->d[p->pos] != '"') {
        st = syntax(p, "expected a key");
        break;
      }
      const uint8_t *key;
      int64_t klen;
      if ((st = lex_string(p, &key, &klen)) != QV_OK) break;
      int32_t idx = -1;
      if (k < n && name_is(t->children[k].name, key, klen)) idx = k;
      for (int32_t i = 0; idx < 0 && i < n; i++)
        if (name_is(t->children[i].name, key, klen)) idx = i;
      skip_ws(p);
      if (p->pos >= p->end || p->r->d[p->pos] != ':') {
        st = syntax(p, "expected ':'");
        break;
      }
      p->pos++;
      if (p->spec && ((idx < 0 && !(p->r->o->schema && p->r->o->schema_only)) ||
                      (idx >= 0 && seen[idx] == me))) {
        st = err_at(p->r, p->err, p->pos, "a key the types so far do not have%s%s", "", "");
        break;
      }
      if (idx < 0 || seen[idx] == me) {
        /* a key the schema drops (schema_only), or given twice (pass 1
         * reported that already for inferred columns) */
        if (idx >= 0 && !top_level)
          st = err_at(p->r, p->err, p->pos, "a key given twice%s%s", "", "");
        else st = skip_value(p, depth + 1);
      } else {
        seen[idx] = me;
        st = build_value(p, qv_builder_child(b, idx), t->children[idx].type, depth + 1);
      }
      if (st != QV_OK) break;
      skip_ws(p);
      if (p->pos < p->end && p->r->d[p->pos] == ',') {
        p->pos++;
        continue;
      }
      if (p->pos < p->end && p->r->d[p->pos] == '}') {
        p->pos++;
        break;
      }
      st = syntax(p, "expected ',' or '}'");
    }
  }
  for (int32_t i = 0; st == QV_OK && i < n; i++)
    if (seen[i] != me) st = qv_builder_append_null(qv_builder_child(b, i), p->err);
  if (seen != small) free(seen);
  if (st == QV_OK) st = qv_builder_end_struct(b, p->err);
  return st;
}

static qv_status build_value(parser *p, qv_builder *b, const qv_type *t, int depth) {
  if (depth > MAX_DEPTH) return syntax(p, "nesting deeper than 128 levels");
  int64_t before = p->pos;
  skip_ws(p);
  if (p->pos >= p->end) {
    p->pos = before;
    return syntax(p, "a value is missing");
  }
  uint8_t c = p->r->d[p->pos];
  int64_t at = p->pos;
  if (c == '{') return build_object(p, b, t, depth, false);
  if (lit(p, "null")) return qv_builder_append_null(b, p->err);
  if (c == '[') {
    if (t->id != QV_LIST && t->id != QV_LARGE_LIST) return mismatch(p, at, t);
    QV_RETURN_NOT_OK(qv_builder_begin_list(b, p->err));
    p->pos++;
    skip_ws(p);
    if (p->pos < p->end && p->r->d[p->pos] == ']') {
      p->pos++;
      return qv_builder_end_list(b, p->err);
    }
    for (;;) {
      QV_RETURN_NOT_OK(build_value(p, qv_builder_child(b, 0), t->children[0].type, depth + 1));
      skip_ws(p);
      if (p->pos < p->end && p->r->d[p->pos] == ',') {
        p->pos++;
        continue;
      }
      if (p->pos < p->end && p->r->d[p->pos] == ']') {
        p->pos++;
        return qv_builder_end_list(b, p->err);
      }
      return syntax(p, "expected ',' or ']'");
    }
  }
  if (c == '"') {
    const uint8_t *s;
    int64_t len;
    QV_RETURN_NOT_OK(lex_string(p, &s, &len));
    switch (t->id) {
      case QV_STRING:
      case QV_LARGE_STRING:
      case QV_BINARY:
      case QV_LARGE_BINARY:
      case QV_STRING_VIEW: return qv_builder_append_bytes(b, s, len, p->err);
      case QV_TIMESTAMP: {
        int64_t sec, v;
        int32_t ns;
        int fd;
        bool z;
        static const int64_t kMul[] = {1, 1000, 1000000, 1000000000};
        static const int32_t kDiv[] = {1000000000, 1000000, 1000, 1};
        if (!qv_text_parse_timestamp(s, len, &sec, &ns, &fd, &z) || ns % kDiv[t->unit] ||
            (p->spec && fd > 0) || __builtin_mul_overflow(sec, kMul[t->unit], &v))
          return mismatch(p, at, t);
        return qv_builder_append_int(b, v + ns / kDiv[t->unit], p->err);
      }
      case QV_DATE32: {
        int32_t v;
        if (!qv_text_parse_date(s, len, &v)) return mismatch(p, at, t);
        return qv_builder_append_int(b, v, p->err);
      }
      default: return mismatch(p, at, t);
    }
  }
  if (lit(p, "true") || lit(p, "false")) {
    if (t->id != QV_BOOL) return mismatch(p, at, t);
    return qv_builder_append_bool(b, p->r->d[at] == 't', p->err);
  }
  bool is_int;
  int64_t iv;
  double dv;
  QV_RETURN_NOT_OK(lex_number(p, &is_int, &iv, &dv));
  switch (t->id) {
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE: return qv_builder_append_double(b, dv, p->err);
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64:
    case QV_TIMESTAMP:
    case QV_DATE32:
    case QV_DURATION: {
      if (!is_int) return mismatch(p, at, t);
      qv_status st = qv_builder_append_int(b, iv, p->err);
      if (st == QV_ERANGE) return mismatch(p, at, t);
      return st;
    }
    default: return mismatch(p, at, t);
  }
}

/* ------------------------------------------------------------------------ */
/* Blocks                                                                    */

static qv_status rows_of(parser *p, bool build, shape *root, qv_builder *b, int64_t *rows) {
  const uint8_t *d = p->r->d;
  *rows = 0;
  for (;;) {
    skip_ws(p);
    if (p->pos >= p->end) return QV_OK;
    if (d[p->pos] != '{') {
      if (d[p->pos] == '[')
        return err_at(p->r, p->err, p->pos, "a row is an array, not an object%s%s", "", "");
      return syntax(p, "a row must be a JSON object");
    }
    QV_RETURN_NOT_OK(build ? build_object(p, b, p->r->root_type, 0, true)
                           : infer_object(p, root, 0));
    (*rows)++;
  }
}

typedef struct jtask {
  jreader *r;
  int phase;
} jtask;

static void run_block(void *vctx, int64_t i, int worker) {
  (void)worker;
  jtask *t = vctx;
  jreader *r = t->r;
  jblock *blk = &r->blocks[i];
  if (blk->st != QV_OK) return;
  parser p;
  memset(&p, 0, sizeof p);
  p.r = r;
  p.pos = blk->start;
  p.end = blk->end;
  p.err = &blk->err;
  if (t->phase == 0) {
    if ((blk->root = shape_new(NULL, NULL, 0)) == NULL) {
      blk->st = qv_error_set(&blk->err, QV_ENOMEM, "out of memory");
    } else {
      blk->root->kind = S_STRUCT;
      blk->st = rows_of(&p, false, blk->root, NULL, &blk->n_rows);
    }
  } else { /* 1: build; 2: build speculatively (parser.spec) */
    qv_builder *b = NULL;
    int64_t rows;
    p.spec = t->phase == 2;
    blk->st = qv_builder_new(r->root_type, &b, &blk->err);
    if (blk->st == QV_OK) blk->st = rows_of(&p, true, NULL, b, &rows);
    if (blk->st == QV_OK) blk->st = qv_builder_finish(b, &blk->batch, &blk->err);
    qv_builder_free(b);
  }
  qv_bytes_free(&p.scratch);
}

/* The row type of the unified root shape (the explicit schema's columns
 * first). */
static qv_status root_type_of(const qv_jsonl_read_options *o, const shape *root, qv_type **out,
                              qv_error *err) {
  qv_status st = QV_OK;
  qv_type *rt = NULL;
  *out = NULL;
  if (o->schema == NULL) {
    rt = shape_type(root, err);
    if (rt == NULL) st = QV_ENOMEM;
  } else {
    rt = qv_type_new(QV_STRUCT);
    const qv_type *ex = o->schema->type;
    for (int32_t i = 0; rt && st == QV_OK && i < ex->n_children; i++)
      st = qv_type_add_child(rt, ex->children[i].name, ex->children[i].nullable,
                             qv_type_ref(ex->children[i].type), &ex->children[i].metadata, err);
    for (int32_t i = 0; rt && st == QV_OK && !o->schema_only && i < root->n_fields; i++) {
      if (qv_schema_find(o->schema, root->fields[i]->name) >= 0) continue;
      qv_type *c = shape_type(root->fields[i], err);
      st = c ? qv_type_add_child(rt, root->fields[i]->name, true, c, NULL, err) : QV_ENOMEM;
    }
    if (rt == NULL && st == QV_OK) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  if (st != QV_OK) {
    qv_type_unref(rt);
    return st;
  }
  *out = rt;
  return QV_OK;
}

static qv_status read_impl(jreader *r, qv_read_result *out, qv_error *err) {
  const qv_jsonl_read_options *o = r->o;
  int64_t pos = r->n >= 3 && memcmp(r->d, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
  int64_t bs = o->block_size > 0 ? o->block_size : (1 << 20);
  int64_t span = r->n - pos, nb = span <= 0 ? 0 : (span + bs - 1) / bs;
  if (nb > 1000000) nb = 1000000;
  r->blocks = calloc((size_t)(nb ? nb : 1), sizeof *r->blocks);
  if (r->blocks == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  r->n_blocks = nb;
  int64_t at = pos;
  for (int64_t i = 0; i < nb; i++) {
    r->blocks[i].start = at;
    int64_t g = pos + (i + 1) * (span / nb);
    if (i + 1 == nb || g >= r->n) {
      at = r->n;
    } else {
      if (g < at) g = at;
      const uint8_t *nl = memchr(r->d + g, '\n', (size_t)(r->n - g));
      at = nl ? nl - r->d + 1 : r->n;
    }
    r->blocks[i].end = at;
  }
  int threads = o->threads > 0 ? o->threads : qv_cpu_count();
  if (threads > nb) threads = (int)(nb > 0 ? nb : 1);
  qv_pool *pool = NULL;
  QV_RETURN_NOT_OK(qv_pool_new(threads, &pool, err));
  jtask task = {r, 0};
  qv_pool_run(pool, nb, run_block, &task);
  qv_status st = QV_OK;
  for (int64_t i = 0; st == QV_OK && i < nb; i++)
    if (r->blocks[i].st != QV_OK) {
      st = r->blocks[i].st;
      *err = r->blocks[i].err;
    }
  /* unify in file order; the explicit schema's columns come first */
  shape *root = shape_new(NULL, NULL, 0);
  if (st == QV_OK && root == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  if (root) root->kind = S_STRUCT;
  for (int64_t i = 0; st == QV_OK && i < nb; i++) st = unify(r, root, r->blocks[i].root, err);
  qv_type *rt = NULL;
  if (st == QV_OK) st = root_type_of(o, root, &rt, err);
  shape_free(root);
  r->root_type = rt;
  if (st == QV_OK) {
    task.phase = 1;
    qv_pool_run(pool, nb, run_block, &task);
    for (int64_t i = 0; st == QV_OK && i < nb; i++)
      if (r->blocks[i].st != QV_OK) {
        st = r->blocks[i].st;
        *err = r->blocks[i].err;
      }
  }
  if (st == QV_OK) st = qv_pool_check(pool, err);
  qv_pool_free(pool);
  if (st != QV_OK) return st;
  qv_type *copy = qv_type_ref(rt);
  out->schema = qv_schema_new(copy);
  out->batches = calloc((size_t)(nb ? nb : 1), sizeof *out->batches);
  if (out->schema == NULL || out->batches == NULL) {
    if (out->schema == NULL) qv_type_unref(copy);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  for (int64_t i = 0; i < nb; i++) {
    qv_array *a = r->blocks[i].batch;
    r->blocks[i].batch = NULL;
    if (a == NULL || a->length == 0) {
      qv_array_unref(a);
      continue;
    }
    out->batches[out->n_batches++] = a;
    out->n_rows += a->length;
  }
  return QV_OK;
}

qv_status qv_jsonl_read_buffer(const void *data, int64_t size, const char *name,
                               const qv_jsonl_read_options *options, qv_read_result *out,
                               qv_error *err) {
  memset(out, 0, sizeof *out);
  qv_jsonl_read_options dflt;
  memset(&dflt, 0, sizeof dflt);
  jreader r;
  memset(&r, 0, sizeof r);
  r.d = data;
  r.n = size;
  r.name = name ? name : "<buffer>";
  r.o = options ? options : &dflt;
  qv_status st = read_impl(&r, out, err);
  for (int64_t i = 0; i < r.n_blocks; i++) {
    shape_free(r.blocks[i].root);
    qv_array_unref(r.blocks[i].batch);
  }
  free(r.blocks);
  qv_type_unref(r.root_type);
  if (st != QV_OK) qv_read_result_reset(out);
  return st;
}

qv_status qv_jsonl_read_path(const char *path, const qv_jsonl_read_options *options,
                             qv_read_result *out, qv_error *err) {
  memset(out, 0, sizeof *out);
  qv_buffer *buf = NULL;
  QV_RETURN_NOT_OK(qv_text_read_file(path, &buf, err));
  qv_status st = qv_jsonl_read_buffer(buf->data, buf->size, path, options, out, err);
  qv_buffer_unref(buf);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Streaming                                                                 */

typedef struct jstream {
  jreader *r;
  const qv_batch_sink *sink;
  qv_text_window w;
  qv_pool *pool;
  shape *root;       /* the shapes unified so far: the floor of every pass */
  qv_schema *schema; /* of the pending batches */
  qv_array **pending;
  int64_t n_pending;
  bool begun;
  qv_text_stream_stats *stats;
} jstream;

static qv_status jdeliver(jstream *s, qv_error *err) {
  return qv_text_deliver(s->sink, s->schema, s->pending, &s->n_pending, &s->begun, err);
}

static qv_status jblock_errors(jreader *r, int64_t nb, qv_error *err) {
  for (int64_t i = 0; i < nb; i++)
    if (r->blocks[i].st != QV_OK) {
      *err = r->blocks[i].err;
      return r->blocks[i].st;
    }
  return QV_OK;
}

/* The schema of the current root type. */
static qv_status jmake_schema(jstream *s, qv_error *err) {
  qv_schema_unref(s->schema);
  qv_type *t = qv_type_ref(s->r->root_type);
  if ((s->schema = qv_schema_new(t)) == NULL) {
    qv_type_unref(t);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  return QV_OK;
}

static qv_status jstream_pass(jstream *s, int64_t *window_bytes, int64_t nbw,
                              qv_text_progress_fn progress, void *pctx, int64_t file_size,
                              bool *restart, qv_error *err) {
  jreader *r = s->r;
  qv_text_window *w = &s->w;
  int64_t bs = r->o->block_size > 0 ? r->o->block_size : (1 << 20);
  *restart = false;
  s->begun = false;
  bool first = true;
  for (;;) {
    QV_RETURN_NOT_OK(qv_text_window_fill(w, *window_bytes, err));
    if (first && w->len >= 3 && memcmp(w->buf, "\xef\xbb\xbf", 3) == 0) {
      qv_text_window_consume(w, 3);
      continue;
    }
    first = false;
    if (w->len == 0) break;
    int64_t n = w->len;
    if (!w->eof) {
      const uint8_t *nl = memrchr(w->buf, '\n', (size_t)w->len);
      if (nl == NULL) {
        *window_bytes *= 2;
        continue;
      }
      n = nl - w->buf + 1;
    }
    r->d = w->buf;
    r->n = n;
    r->line_base = w->line_base;
    int64_t nb = (n + bs - 1) / bs;
    if (nb > nbw) nb = nbw;
    int64_t at = 0;
    for (int64_t i = 0; i < nb; i++) {
      jblock *b = &r->blocks[i];
      shape_free(b->root);
      qv_array_unref(b->batch);
      memset(b, 0, sizeof *b);
      b->start = at;
      int64_t g = (i + 1) * (n / nb);
      if (i + 1 == nb || g >= n) {
        at = n;
      } else {
        if (g < at) g = at;
        const uint8_t *nl = memchr(r->d + g, '\n', (size_t)(n - g));
        at = nl ? nl - r->d + 1 : n;
      }
      b->end = at;
    }
    /* with types from earlier windows, build at once (one parse); a block
     * that does not fit them is inferred to see whether a type widened */
    bool spec = r->root_type != NULL;
    jtask task = {r, spec ? 2 : 0};
    qv_pool_group g = {0};
    bool queued = qv_pool_submit(s->pool, &g, nb, run_block, &task);
    qv_status st = jdeliver(s, err); /* the previous window's, while this one parses */
    if (queued) qv_pool_wait(s->pool, &g);
    else qv_pool_run(s->pool, nb, run_block, &task);
    if (st != QV_OK) return st;
    QV_RETURN_NOT_OK(qv_pool_check(s->pool, err));
    bool infer_all = !spec, redo_all = !spec, any_failed = false;
    if (spec) {
      jtask infer = {r, 0};
      for (int64_t i = 0; i < nb; i++) {
        jblock *b = &r->blocks[i];
        if (b->st == QV_OK) continue;
        any_failed = true;
        qv_array_unref(b->batch);
        b->batch = NULL;
        b->st = QV_OK;
        run_block(&infer, i, 0);
      }
    }
    if (infer_all || any_failed) {
      QV_RETURN_NOT_OK(jblock_errors(r, nb, err));
      for (int64_t i = 0; i < nb; i++)
        if (r->blocks[i].root) QV_RETURN_NOT_OK(unify(r, s->root, r->blocks[i].root, err));
      qv_type *rt = NULL;
      QV_RETURN_NOT_OK(root_type_of(r->o, s->root, &rt, err));
      bool changed = r->root_type == NULL || !qv_type_equals(rt, r->root_type, false);
      qv_type_unref(r->root_type);
      r->root_type = rt;
      if (changed && s->begun) {
        *restart = true;
        qv_schema_unref(s->schema);
        s->schema = NULL;
        return QV_OK;
      }
      if (changed || s->schema == NULL) QV_RETURN_NOT_OK(jmake_schema(s, err));
      if (changed) redo_all = true;
      /* build again: every block under new types, else the failed ones
       * (their error, if any, is real) */
      jtask build = {r, 1};
      if (redo_all) {
        for (int64_t i = 0; i < nb; i++) {
          qv_array_unref(r->blocks[i].batch);
          r->blocks[i].batch = NULL;
        }
        qv_pool_run(s->pool, nb, run_block, &build);
        QV_RETURN_NOT_OK(qv_pool_check(s->pool, err));
      } else {
        for (int64_t i = 0; i < nb; i++)
          if (r->blocks[i].root) run_block(&build, i, 0);
      }
      QV_RETURN_NOT_OK(jblock_errors(r, nb, err));
    }
    if (s->schema == NULL) QV_RETURN_NOT_OK(jmake_schema(s, err)); /* after a restart */
    int64_t held = w->cap, rows = 0;
    for (int64_t i = 0; i < nb; i++) {
      qv_array *a = r->blocks[i].batch;
      r->blocks[i].batch = NULL;
      if (a == NULL || a->length == 0) {
        qv_array_unref(a);
        continue;
      }
      held += qv_text_array_bytes(a);
      rows += a->length;
      s->pending[s->n_pending++] = a;
    }
    if (s->stats) {
      if (held > s->stats->peak_bytes) s->stats->peak_bytes = held;
      s->stats->windows++;
      s->stats->rows += rows;
    }
    bool last = w->eof && n == w->len;
    qv_text_window_consume(w, n);
    if (progress) progress(pctx, w->base, file_size);
    if (last) break;
  }
  if (r->root_type == NULL) {
    QV_RETURN_NOT_OK(root_type_of(r->o, s->root, &r->root_type, err));
  }
  if (s->schema == NULL) QV_RETURN_NOT_OK(jmake_schema(s, err));
  QV_RETURN_NOT_OK(jdeliver(s, err));
  if (!s->begun) {
    s->begun = true;
    QV_RETURN_NOT_OK(s->sink->begin(s->sink->ctx, s->schema, err));
  }
  return QV_OK;
}

qv_status qv_jsonl_stream_path(const char *path, const qv_jsonl_read_options *options,
                               const qv_batch_sink *sink, qv_text_progress_fn progress,
                               void *progress_ctx, qv_text_stream_stats *stats, qv_error *err) {
  qv_jsonl_read_options dflt;
  memset(&dflt, 0, sizeof dflt);
  if (stats) memset(stats, 0, sizeof *stats);
  jreader r;
  memset(&r, 0, sizeof r);
  r.name = path;
  r.o = options ? options : &dflt;
  jstream s;
  memset(&s, 0, sizeof s);
  s.r = &r;
  s.sink = sink;
  s.stats = stats;
  int64_t file_size, nbw, window_bytes;
  qv_status st = qv_text_stream_open(&s.w, path, r.o->threads, r.o->block_size, &s.pool, &file_size,
                                     &nbw, &window_bytes, err);
  if (st == QV_OK) {
    r.n_blocks = nbw;
    r.blocks = calloc((size_t)nbw, sizeof *r.blocks);
    s.pending = calloc((size_t)nbw, sizeof *s.pending);
    s.root = shape_new(NULL, NULL, 0);
    if (r.blocks == NULL || s.pending == NULL || s.root == NULL)
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
    else s.root->kind = S_STRUCT;
  }
  for (bool again = true; st == QV_OK && again;) {
    st = jstream_pass(&s, &window_bytes, nbw, progress, progress_ctx, file_size, &again, err);
    for (int64_t i = 0; i < s.n_pending; i++) qv_array_unref(s.pending[i]);
    s.n_pending = 0;
    if (st == QV_OK && again) {
      if (stats) stats->restarts++, stats->rows = 0;
      st = qv_text_window_rewind(&s.w, err);
    }
  }
  qv_pool_free(s.pool);
  for (int64_t i = 0; r.blocks && i < r.n_blocks; i++) {
    shape_free(r.blocks[i].root);
    qv_array_unref(r.blocks[i].batch);
  }
  free(r.blocks);
  free(s.pending);
  shape_free(s.root);
  qv_schema_unref(s.schema);
  qv_type_unref(r.root_type);
  qv_text_window_close(&s.w);
  return st;
}
