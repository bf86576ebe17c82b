/*
 * csv_read.c — the CSV reader of quiver/csv.h (formats layer).
 *
 * The text is split into blocks of about block_size bytes, each starting
 * after a newline. Blocks are tokenised in parallel into field spans; each
 * block's tokeniser runs on past its nominal end until its last row ends,
 * and a block whose guessed start proves wrong (the previous block ended
 * elsewhere: a quoted newline straddled the guess) is tokenised again from
 * the right place, so the speculation never changes a result. Types are
 * inferred as pyarrow's InferStatus does (null, int64, bool, date32,
 * time32[s], timestamp[s], timestamp[ns], double, string, binary: the
 * first kind in that order every value of the column converts to, over
 * the whole file — which is what pyarrow's result is after a later block
 * loosens a column), then each block's columns are converted in parallel
 * into one record batch per block.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel_internal.h"
#include "formats/text_internal.h"
#include "quiver/csv.h"

enum {
  K_NULL,
  K_INT,
  K_BOOL,
  K_DATE,
  K_TIME,
  K_TS,
  K_TSNS,
  K_REAL,
  K_TEXT,
  K_BINARY,
  K_COUNT,
  K_EXPLICIT = 100
};

#define F_QUOTED 0x80000000u
#define F_COMPLEX 0x40000000u
#define F_LENMASK 0x3fffffffu

typedef struct span {
  int64_t start; /* absolute offset of the raw field */
  uint32_t len;  /* raw length | flags */
} span;

typedef struct opts {
  uint8_t delim, quote, escape;
  bool quoting, has_escape;
  bool pandas; /* pandas.read_csv's types and nulls (datasets' CSV builder) */
  const char *const *nulls;
  int32_t n_nulls;
} opts;

typedef struct block {
  int64_t start, guess_end, end; /* end: where its last row actually ended */
  span *f;
  int64_t n_fields, cap_fields;
  int64_t n_rows;
  bool incomplete; /* streaming: its last row runs past the window */
  qv_status st;
  qv_error err;
} block;

typedef struct reader {
  const uint8_t *d;
  int64_t n;
  bool stop[256];  /* bytes that end an unquoted run: delimiter, CR, LF, escape */
  uint64_t delim8; /* the delimiter in every byte */
  const char *name;
  opts o;
  int32_t ncols;
  block *blocks;
  int64_t n_blocks;
  int *kinds;      /* [block][col] first kind accepting the block's values */
  uint8_t *tzs;    /* [block][col] 1 naive timestamps seen, 2 zoned seen */
  uint8_t *nulls;  /* [block][col] a null value seen */
  int *col_kind;   /* final kind per column (streaming: the floor so far) */
  uint8_t *col_tz; /* the zones seen under col_kind (streaming) */
  qv_type **col_type;
  qv_array **out;    /* [block][col] */
  bool partial;      /* streaming: more data follows this window */
  bool streaming;    /* keep the spans between windows */
  int64_t line_base; /* streaming: newlines before the window */
} reader;

/* ------------------------------------------------------------------------ */
/* Positions                                                                 */

static void line_col(const uint8_t *d, int64_t off, int64_t *line, int64_t *col) {
  int64_t l = 1, ls = 0;
  for (int64_t i = 0; i < off; i++)
    if (d[i] == '\n') l++, ls = i + 1;
  *line = l;
  *col = off - ls + 1;
}

static qv_status err_at(const reader *r, qv_error *err, qv_status st, int64_t off, const char *what,
                        const char *detail) {
  int64_t line, col;
  line_col(r->d, off, &line, &col);
  line += r->line_base;
  return qv_error_set(err, st, "%s: line %lld, column %lld: %s%s", r->name, (long long)line,
                      (long long)col, what, detail ? detail : "");
}

/* ------------------------------------------------------------------------ */
/* Tokenising                                                                */

static bool push_field(block *b, int64_t start, int64_t len, uint32_t flags) {
  if (b->n_fields == b->cap_fields) {
    int64_t cap = b->cap_fields ? b->cap_fields * 2 : 4096;
    span *f = realloc(b->f, (size_t)cap * sizeof *f);
    if (f == NULL) return false;
    b->f = f;
    b->cap_fields = cap;
  }
  b->f[b->n_fields].start = start;
  b->f[b->n_fields].len = (uint32_t)len | flags;
  b->n_fields++;
  return true;
}

/* The high bit of every zero byte of x, exactly (no carry crosses a byte:
 * (b & 0x7f) + 0x7f <= 0xfe). */
static inline uint64_t zero_bytes(uint64_t x) {
  const uint64_t lo7 = 0x7f7f7f7f7f7f7f7full;
  return ~(((x & lo7) + lo7) | x) & ~lo7;
}

/* Scan one field starting at p; returns the position of the byte that
 * ended it (delimiter, CR, LF or n). *flags gets F_QUOTED / F_COMPLEX.
 * -1: a quote not closed before the end of the data. */
static int64_t scan_field(const reader *r, int64_t p, uint32_t *flags) {
  const uint8_t *d = r->d;
  int64_t n = r->n;
  const opts *o = &r->o;
  *flags = 0;
  if (o->quoting && p < n && d[p] == o->quote) {
    *flags = F_QUOTED;
    p++;
    for (;;) {
      if (p >= n) return -1;
      uint8_t c = d[p];
      if (o->has_escape && c == o->escape) {
        *flags |= F_COMPLEX;
        p += 2;
        continue;
      }
      if (c == o->quote) {
        if (p + 1 < n && d[p + 1] == o->quote) {
          *flags |= F_COMPLEX;
          p += 2;
          continue;
        }
        p++;
        break;
      }
      /* plain run up to the next quote or escape */
      const uint8_t *q = memchr(d + p, o->quote, (size_t)(n - p));
      int64_t stop = q ? q - d : n;
      if (o->has_escape) {
        const uint8_t *e = memchr(d + p, o->escape, (size_t)(stop - p));
        if (e) stop = e - d;
      }
      p = stop > p ? stop : p + 1;
    }
    /* bytes after the closing quote belong to the field too */
    while (p < n && d[p] != o->delim && d[p] != '\n' && d[p] != '\r') {
      *flags |= F_COMPLEX;
      if (o->has_escape && d[p] == o->escape) p++;
      p++;
    }
    return p < n ? p : n;
  }
  for (;;) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (!o->has_escape) /* eight bytes at a time to the next delimiter, CR or LF */
      for (; p + 8 <= n; p += 8) {
        uint64_t x;
        memcpy(&x, d + p, 8);
        uint64_t m = zero_bytes(x ^ r->delim8) | zero_bytes(x ^ 0x0a0a0a0a0a0a0a0aull) |
                     zero_bytes(x ^ 0x0d0d0d0d0d0d0d0dull);
        if (m) {
          p += __builtin_ctzll(m) >> 3;
          break;
        }
      }
#endif
    while (p < n && !r->stop[d[p]]) p++;
    if (p >= n) break;
    uint8_t c = d[p];
    if (o->has_escape && c == o->escape && c != o->delim) {
      *flags |= F_COMPLEX;
      p += 2;
      continue;
    }
    break;
  }
  return p < n ? p : n;
}

/* Tokenise rows from b->start while a row starts before b->guess_end. Each
 * row must have ncols fields (ncols < 0: the header row, any count).
 * Empty lines are skipped. */
static qv_status tokenise(reader *r, block *b, int32_t ncols, int64_t max_rows, qv_error *err) {
  const uint8_t *d = r->d;
  int64_t n = r->n, p = b->start;
  b->n_fields = b->n_rows = 0;
  b->incomplete = false;
  while (p < b->guess_end && b->n_rows < max_rows) {
    if (d[p] == '\n' || d[p] == '\r') { /* empty line */
      p++;
      continue;
    }
    int64_t row_start = p, nf = 0;
    for (;;) {
      uint32_t fl;
      int64_t e = scan_field(r, p, &fl);
      /* A window ends just after a newline, so a field that reaches its
       * end has no terminator here: a quoted field still open, or an
       * escaped newline (escape + LF) last. The row goes on in the next
       * window. */
      if ((e < 0 || e >= n) && r->partial) {
        b->n_fields -= nf;
        b->incomplete = true;
        b->end = row_start;
        return QV_OK;
      }
      if (e < 0) return err_at(r, err, QV_EINVAL, p, "unterminated quoted field", NULL);
      if (e - p > (int64_t)F_LENMASK)
        return err_at(r, err, QV_ERANGE, p, "a field larger than 1 GiB", NULL);
      if (!push_field(b, p, e - p, fl)) return qv_error_set(err, QV_ENOMEM, "out of memory");
      nf++;
      p = e;
      if (p < n && d[p] == r->o.delim) {
        p++;
        if (p >= n || d[p] == '\n' || d[p] == '\r') {
          if (!push_field(b, p, 0, 0)) return qv_error_set(err, QV_ENOMEM, "out of memory");
          nf++;
        } else {
          continue;
        }
      }
      if (p < n && d[p] == '\r') p++;
      if (p < n && d[p] == '\n') p++;
      break;
    }
    if (ncols >= 0 && nf != ncols) {
      char detail[96];
      snprintf(detail, sizeof detail, "expected %d fields, found %lld", ncols, (long long)nf);
      return err_at(r, err, QV_EINVAL, row_start, "wrong number of fields: ", detail);
    }
    b->n_rows++;
  }
  b->end = p;
  return QV_OK;
}

/* The content of field f: a pointer into the data, or for complex fields
 * the unescaped bytes in `scratch`. */
static const uint8_t *field_bytes(const reader *r, const span *f, qv_bytes *scratch, int64_t *len) {
  const uint8_t *s = r->d + f->start;
  int64_t n = f->len & F_LENMASK;
  if (!(f->len & (F_QUOTED | F_COMPLEX))) {
    *len = n;
    return s;
  }
  if (!(f->len & F_COMPLEX)) {
    *len = n - 2;
    return s + 1;
  }
  scratch->len = 0;
  if (!qv_bytes_reserve(scratch, n + 1)) {
    *len = -1;
    return NULL;
  }
  uint8_t *o = scratch->data;
  int64_t k = 0, i = 0;
  bool inq = false;
  const opts *op = &r->o;
  if (op->quoting && n > 0 && s[0] == op->quote) inq = true, i = 1;
  for (; i < n; i++) {
    uint8_t c = s[i];
    if (op->has_escape && c == op->escape && i + 1 < n) {
      o[k++] = s[++i];
    } else if (inq && c == op->quote) {
      if (i + 1 < n && s[i + 1] == op->quote) o[k++] = op->quote, i++;
      else inq = false;
    } else {
      o[k++] = c;
    }
  }
  scratch->len = k;
  *len = k;
  return o;
}

/* ------------------------------------------------------------------------ */
/* Inference                                                                 */

static bool is_null(const reader *r, const uint8_t *s, int64_t n) {
  if (r->o.nulls == NULL && r->o.pandas)
    return qv_text_is_default_null(s, n) || (n == 4 && memcmp(s, "<NA>", 4) == 0) ||
           (n == 4 && memcmp(s, "None", 4) == 0);
  if (r->o.nulls == NULL) return qv_text_is_default_null(s, n);
  for (int32_t i = 0; i < r->o.n_nulls; i++) {
    size_t l = strlen(r->o.nulls[i]);
    if ((int64_t)l == n && memcmp(s, r->o.nulls[i], l) == 0) return true;
  }
  return false;
}

/* pandas: an optional '+' before an integer, no hex; booleans only as
 * words. */
static bool pandas_int(const uint8_t *s, int64_t n, int64_t *v) {
  while (n > 0 && (*s == ' ' || *s == '\t')) s++, n--;
  if (n > 0 && *s == '+') s++, n--;
  for (int64_t i = 0; i + 1 < n; i++)
    if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) return false;
  return n > 0 && qv_text_parse_int64(s, n, v);
}

static bool pandas_bool(const uint8_t *s, int64_t n, bool *v) {
  if (n == 1) return false; /* "1" / "0" are integers */
  return qv_text_parse_bool(s, n, v);
}

static int next_kind(const reader *r, int k) {
  if (r->o.pandas && k == K_BOOL) return K_REAL; /* pandas parses no dates or times */
  return k + 1;
}

/* Whether a non-null value converts under kind k; for timestamps *tz gets
 * 1 (naive) or 2 (zoned). */
static bool accepts(const reader *r, int k, const uint8_t *s, int64_t n, uint8_t *tz) {
  if (r->o.pandas && k == K_INT) {
    int64_t v;
    return pandas_int(s, n, &v);
  }
  if (r->o.pandas && k == K_BOOL) {
    bool v;
    return pandas_bool(s, n, &v);
  }
  switch (k) {
    case K_NULL: return false;
    case K_INT: {
      int64_t v;
      return qv_text_parse_int64(s, n, &v);
    }
    case K_BOOL: {
      bool v;
      return qv_text_parse_bool(s, n, &v);
    }
    case K_DATE: {
      int32_t v;
      return qv_text_parse_date(s, n, &v);
    }
    case K_TIME: {
      int32_t v;
      return qv_text_parse_time(s, n, &v);
    }
    case K_TS:
    case K_TSNS: {
      int64_t sec;
      int32_t ns;
      int fd;
      bool z;
      if (!qv_text_parse_timestamp(s, n, &sec, &ns, &fd, &z)) return false;
      if (k == K_TS && fd > 0) return false;
      if (k == K_TSNS && (sec > INT64_MAX / 1000000000 - 1 || sec < INT64_MIN / 1000000000 + 1))
        return false; /* out of timestamp[ns]'s range: pyarrow takes it for text */
      *tz |= z ? 2 : 1;
      return *tz != 3;
    }
    case K_REAL: {
      double v;
      return qv_text_parse_double(s, n, &v);
    }
    case K_TEXT: return qv_text_valid_utf8(s, n);
    default: return true;
  }
}

/* The first kind >= `from` that every value of column c of block b
 * converts to; *tz the zones seen under that kind. */
static int infer_block_col(const reader *r, const block *b, int32_t c, int from, uint8_t *tz,
                           uint8_t *has_null, qv_bytes *scratch) {
  int k = from;
  uint8_t t = 0;
  for (int64_t row = 0; row < b->n_rows; row++) {
    int64_t len;
    const uint8_t *s = field_bytes(r, &b->f[row * r->ncols + c], scratch, &len);
    if (s == NULL) return K_BINARY;
    if (k >= K_TEXT) {
      if (k == K_TEXT && !qv_text_valid_utf8(s, len)) k = K_BINARY;
      continue;
    }
    if (is_null(r, s, len)) {
      *has_null = 1;
      continue;
    }
    while (k < K_BINARY && !accepts(r, k, s, len, &t)) {
      /* loosen and recheck the rows so far under the new kind */
      k = next_kind(r, k);
      t = 0;
      for (int64_t q = 0; q < row && k < K_BINARY; q++) {
        int64_t l2;
        const uint8_t *s2 = field_bytes(r, &b->f[q * r->ncols + c], scratch, &l2);
        if (k < K_TEXT && is_null(r, s2, l2)) continue;
        if (!accepts(r, k, s2, l2, &t)) {
          k = next_kind(r, k);
          t = 0;
          q = -1;
        }
      }
      s = field_bytes(r, &b->f[row * r->ncols + c], scratch, &len);
    }
  }
  *tz = t;
  return k;
}

/* ------------------------------------------------------------------------ */
/* Conversion                                                                */

static qv_status bad_value(const reader *r, const span *f, const qv_type *t, qv_error *err) {
  char tn[64];
  qv_type_to_string(t, tn, sizeof tn);
  char detail[160];
  int64_t n = f->len & F_LENMASK;
  snprintf(detail, sizeof detail, "'%.*s' is not a valid %s", (int)(n > 40 ? 40 : n),
           (const char *)r->d + f->start, tn);
  return err_at(r, err, QV_EINVAL, f->start, "", detail);
}

/* Column c of block b as an array of `type`. `kind` is the inferred kind
 * (K_EXPLICIT for a type given by the caller); under an inferred kind the
 * values must also be what inference accepts (zones as the type says,
 * no fraction under timestamp[s]; with `trial`, UTF-8 for text): a value
 * that is not is QV_EINVAL, the cue for a trial conversion to infer. */
static qv_status convert_col(const reader *r, const block *b, int32_t c, int kind,
                             const qv_type *type, bool trial, qv_bytes *scratch, qv_array **out,
                             qv_error *err) {
  int64_t n = b->n_rows;
  qv_type *t = (qv_type *)type;
  if (kind == K_NULL) return qv_text_make_array(t, n, n, NULL, NULL, NULL, out, err);
  qv_buffer *valid = NULL, *vals = NULL, *offs = NULL;
  qv_buffer *dbuf = NULL; /* string bytes: sized once from the raw fields */
  int64_t dlen = 0, nulls = 0;
  qv_status st = qv_buffer_alloc((n + 7) / 8, &valid, err);
  qv_type_id id = type->id;
  bool is_str =
      id == QV_STRING || id == QV_BINARY || id == QV_LARGE_STRING || id == QV_LARGE_BINARY;
  bool large = id == QV_LARGE_STRING || id == QV_LARGE_BINARY;
  int32_t width = id == QV_BOOL ? 0 : qv_type_byte_width(type);
  if (st == QV_OK) {
    if (is_str) {
      int64_t total = 0;
      for (int64_t row = 0; row < n; row++) total += b->f[row * r->ncols + c].len & F_LENMASK;
      st = qv_buffer_alloc((n + 1) * (large ? 8 : 4), &offs, err);
      if (st == QV_OK) st = qv_buffer_alloc(total, &dbuf, err);
    } else if (id == QV_BOOL) st = qv_buffer_alloc((n + 7) / 8, &vals, err);
    else st = qv_buffer_alloc(n * width, &vals, err);
  }
  bool strings_null = r->o.pandas || !(id == QV_STRING || id == QV_LARGE_STRING ||
                                       id == QV_BINARY || id == QV_LARGE_BINARY);
  /* inferred text was validated by the inference already */
  bool check_utf8 = (id == QV_STRING || id == QV_LARGE_STRING) && (kind == K_EXPLICIT || trial);
  for (int64_t row = 0; st == QV_OK && row < n; row++) {
    const span *f = &b->f[row * r->ncols + c];
    int64_t len;
    const uint8_t *s = field_bytes(r, f, scratch, &len);
    if (s == NULL) {
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
      break;
    }
    if (strings_null && is_null(r, s, len)) {
      nulls++;
      if (is_str) {
        int64_t o = dlen;
        if (large) memcpy(offs->data + (row + 1) * 8, &o, 8);
        else memcpy(offs->data + (row + 1) * 4, &(int32_t){(int32_t)o}, 4);
      }
      continue;
    }
    qv_bit_set(valid->data, row);
    bool ok = true;
    uint8_t *dst = vals ? vals->data + row * width : NULL;
    switch (id) {
      case QV_BOOL: {
        bool v;
        ok = r->o.pandas ? pandas_bool(s, len, &v) : qv_text_parse_bool(s, len, &v);
        if (ok && v) qv_bit_set(vals->data, row);
        break;
      }
      case QV_INT8:
      case QV_INT16:
      case QV_INT32:
      case QV_INT64: {
        int64_t v;
        ok = r->o.pandas ? pandas_int(s, len, &v) : qv_text_parse_int64(s, len, &v);
        if (ok && width < 8) {
          int64_t lim = (int64_t)1 << (width * 8 - 1);
          ok = v >= -lim && v < lim;
        }
        if (ok) memcpy(dst, &v, (size_t)width);
        break;
      }
      case QV_UINT8:
      case QV_UINT16:
      case QV_UINT32:
      case QV_UINT64: {
        uint64_t v;
        ok = qv_text_parse_uint64(s, len, &v);
        if (ok && width < 8) ok = v < ((uint64_t)1 << (width * 8));
        if (ok) memcpy(dst, &v, (size_t)width);
        break;
      }
      case QV_FLOAT:
      case QV_DOUBLE: {
        double v;
        ok = qv_text_parse_double(s, len, &v);
        if (ok && id == QV_FLOAT) memcpy(dst, &(float){(float)v}, 4);
        else if (ok) memcpy(dst, &v, 8);
        break;
      }
      case QV_DATE32: {
        int32_t v;
        ok = qv_text_parse_date(s, len, &v);
        if (ok) memcpy(dst, &v, 4);
        break;
      }
      case QV_TIME32: {
        int32_t v;
        ok = qv_text_parse_time(s, len, &v) && type->unit == QV_SECOND;
        if (ok) memcpy(dst, &v, 4);
        break;
      }
      case QV_TIMESTAMP: {
        int64_t sec, v;
        int32_t ns;
        int fd;
        bool z;
        ok = qv_text_parse_timestamp(s, len, &sec, &ns, &fd, &z);
        static const int64_t kMul[] = {1, 1000, 1000000, 1000000000};
        static const int32_t kDiv[] = {1000000000, 1000000, 1000, 1};
        if (ok && ns % kDiv[type->unit] != 0) ok = false;
        if (ok && kind != K_EXPLICIT && (z != (type->timezone != NULL) || (kind == K_TS && fd > 0)))
          ok = false;
        if (ok && (__builtin_mul_overflow(sec, kMul[type->unit], &v) ||
                   __builtin_add_overflow(v, (int64_t)(ns / kDiv[type->unit]), &v)))
          ok = false;
        if (ok) memcpy(dst, &v, 8);
        break;
      }
      default: {
        if (check_utf8 && !qv_text_valid_utf8(s, len)) ok = false;
        if (ok && len > 0) { /* len <= the raw field's length */
          memcpy(dbuf->data + dlen, s, (size_t)len);
          dlen += len;
        }
        int64_t o = dlen;
        if (large) memcpy(offs->data + (row + 1) * 8, &o, 8);
        else if (o > INT32_MAX)
          st = qv_error_set(err, QV_ERANGE, "%s: more than 2 GiB of text in one block", r->name);
        else memcpy(offs->data + (row + 1) * 4, &(int32_t){(int32_t)o}, 4);
        break;
      }
    }
    if (st == QV_OK && !ok) st = bad_value(r, f, type, err);
  }
  if (st == QV_OK && is_str) st = qv_buffer_resize(dbuf, dlen, err);
  if (st == QV_OK && nulls == 0) {
    qv_buffer_unref(valid);
    valid = NULL;
  }
  if (st != QV_OK) {
    qv_buffer_unref(valid);
    qv_buffer_unref(vals);
    qv_buffer_unref(offs);
    qv_buffer_unref(dbuf);
    return st;
  }
  if (is_str) return qv_text_make_array(t, n, nulls, valid, offs, dbuf, out, err);
  return qv_text_make_array(t, n, nulls, valid, vals, NULL, out, err);
}

/* ------------------------------------------------------------------------ */
/* Tasks                                                                     */

static qv_type *kind_type(int k, uint8_t tz) {
  switch (k) {
    case K_NULL: return qv_type_new(QV_NA);
    case K_INT: return qv_type_new(QV_INT64);
    case K_BOOL: return qv_type_new(QV_BOOL);
    case K_DATE: return qv_type_new(QV_DATE32);
    case K_TIME: {
      qv_type *t = qv_type_new(QV_TIME32);
      if (t) t->unit = QV_SECOND;
      return t;
    }
    case K_TS: return qv_type_timestamp(QV_SECOND, tz == 2 ? "UTC" : NULL);
    case K_TSNS: return qv_type_timestamp(QV_NANO, tz == 2 ? "UTC" : NULL);
    case K_REAL: return qv_type_new(QV_DOUBLE);
    case K_TEXT: return qv_type_new(QV_STRING);
    default: return qv_type_new(QV_BINARY);
  }
}

/* The inferred type of kind k (pandas: text as large_string). */
static qv_type *col_type_for(const reader *r, int k, uint8_t tz) {
  if (r->o.pandas && k >= K_TEXT)
    return qv_type_new(k == K_TEXT ? QV_LARGE_STRING : QV_LARGE_BINARY);
  return kind_type(k, tz);
}

typedef struct task_ctx {
  reader *r;
  qv_bytes *scratch; /* per worker */
  int phase;         /* 0 tokenise, 1 infer, 2 convert */
} task_ctx;

/* Phase 1 for block i: infer by converting. The kind of the first value
 * (at least the column's floor kind, K_NULL but in a stream) is tried on
 * the whole column (one parse in the common case); when some value does
 * not fit, the column is inferred value by value and converted again. */
static void infer_block(reader *r, block *b, int64_t i, qv_bytes *scratch) {
  {
    for (int32_t c = 0; c < r->ncols && b->st == QV_OK; c++) {
      if (r->col_kind[c] == K_EXPLICIT) continue;
      int64_t at = i * r->ncols + c;
      uint8_t tz = 0;
      int k = K_NULL;
      for (int64_t row = 0; row < b->n_rows && k == K_NULL; row++) {
        int64_t len;
        const uint8_t *v = field_bytes(r, &b->f[row * r->ncols + c], scratch, &len);
        if (v == NULL || !is_null(r, v, len)) {
          k = r->col_kind[c] > K_INT ? r->col_kind[c] : K_INT;
          while (v != NULL && k < K_BINARY && !accepts(r, k, v, len, &tz)) k = next_kind(r, k);
          if (v == NULL) k = K_BINARY;
        }
      }
      qv_array *a = NULL;
      qv_type *t = col_type_for(r, k, tz);
      qv_status st = t ? convert_col(r, b, c, k, t, true, scratch, &a, &b->err)
                       : qv_error_set(&b->err, QV_ENOMEM, "out of memory");
      qv_type_unref(t);
      if (st == QV_EINVAL) {
        uint8_t has_null = 0;
        tz = 0;
        k = infer_block_col(r, b, c, K_NULL, &tz, &has_null, scratch);
        t = col_type_for(r, k, tz);
        st = t ? convert_col(r, b, c, k, t, false, scratch, &a, &b->err)
               : qv_error_set(&b->err, QV_ENOMEM, "out of memory");
        qv_type_unref(t);
      }
      if (st != QV_OK) {
        b->st = st;
        break;
      }
      r->kinds[at] = k;
      r->tzs[at] = tz;
      r->nulls[at] = a->null_count > 0;
      qv_array_unref(r->out[at]);
      r->out[at] = a;
    }
  }
}

static void run_task(void *vctx, int64_t i, int worker) {
  task_ctx *ctx = vctx;
  reader *r = ctx->r;
  block *b = &r->blocks[i];
  if (b->st != QV_OK) return;
  if (ctx->phase == 0) {
    b->st = tokenise(r, b, r->ncols, INT64_MAX, &b->err);
  } else if (ctx->phase == 1) {
    infer_block(r, b, i, &ctx->scratch[worker]);
  } else if (ctx->phase == 3) { /* streaming: both at once, on a guessed start */
    b->st = tokenise(r, b, r->ncols, INT64_MAX, &b->err);
    if (b->st == QV_OK) infer_block(r, b, i, &ctx->scratch[worker]);
  } else {
    for (int32_t c = 0; c < r->ncols && b->st == QV_OK; c++) {
      qv_array **a = &r->out[i * r->ncols + c];
      if (*a != NULL && qv_type_equals((*a)->type, r->col_type[c], false)) continue;
      qv_array_unref(*a);
      *a = NULL;
      b->st = convert_col(r, b, c, r->col_kind[c], r->col_type[c], false, &ctx->scratch[worker], a,
                          &b->err);
    }
    if (!r->streaming) {
      free(b->f);
      b->f = NULL;
      b->cap_fields = 0;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */

void qv_read_result_reset(qv_read_result *res) {
  if (res == NULL) return;
  for (int64_t i = 0; i < res->n_batches; i++) qv_array_unref(res->batches[i]);
  free(res->batches);
  qv_schema_unref(res->schema);
  memset(res, 0, sizeof *res);
}

static bool ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The column kinds over blocks [0, nb): for each column the first kind
 * >= its floor (r->col_kind: K_NULL, or in a stream what the windows so
 * far needed) and every block's that all of them accept. Sets col_kind,
 * col_tz and col_type; *changed (may be NULL) whether a type moved. */
static bool ts_kind(int k) { return k == K_TS || k == K_TSNS; }

static qv_status unify_cols(reader *r, int64_t nb, qv_bytes *scratch, bool *changed,
                            qv_error *err) {
  int32_t ncols = r->ncols;
  if (changed) *changed = false;
  for (int32_t c = 0; c < ncols; c++) {
    if (r->col_kind[c] == K_EXPLICIT) continue;
    int floor = r->col_kind[c], k = floor;
    uint8_t floor_tz = r->col_tz ? r->col_tz[c] : 0, tz = 0;
    for (int64_t i = 0; i < nb; i++)
      if (r->kinds[i * ncols + c] > k) k = r->kinds[i * ncols + c];
    for (bool again = true; again;) {
      again = false;
      tz = ts_kind(k) && ts_kind(floor) ? floor_tz : 0;
      for (int64_t i = 0; i < nb; i++) {
        int bk = r->kinds[i * ncols + c];
        uint8_t btz = r->tzs[i * ncols + c];
        if (bk == K_NULL) continue;
        if (bk != k) {
          bk = infer_block_col(r, &r->blocks[i], c, k, &btz, &r->nulls[i * ncols + c], scratch);
          r->kinds[i * ncols + c] = bk;
          r->tzs[i * ncols + c] = btz;
        }
        if (bk > k) {
          k = bk;
          again = true;
          break;
        }
        tz |= btz;
        if (ts_kind(k) && tz == 3) {
          k = next_kind(r, k);
          again = true;
          break;
        }
      }
    }
    if (r->o.pandas) { /* pandas: integers with missing values and empty columns are float64 */
      bool any_null = false;
      for (int64_t i = 0; i < nb; i++) any_null |= r->nulls[i * ncols + c] != 0;
      if (k == K_NULL || (k == K_INT && any_null)) k = K_REAL;
    }
    qv_type *t = col_type_for(r, k, tz);
    if (t == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
    if (changed && (r->col_type[c] == NULL || !qv_type_equals(t, r->col_type[c], false)))
      *changed = true;
    qv_type_unref(r->col_type[c]);
    r->col_type[c] = t;
    r->col_kind[c] = k;
    if (r->col_tz) r->col_tz[c] = tz;
  }
  return QV_OK;
}

/* The header at the start of the data (after a BOM): r->ncols, the column
 * names (*names_out, ncols + 1 entries, owned by the caller; free with
 * free_names) and where the data rows start. With r->partial, a header
 * that runs past the window sets *need_more instead. */
static void free_names(char **names, int32_t n) {
  for (int32_t c = 0; names && c < n; c++) free(names[c]);
  free(names);
}

static qv_status parse_header(reader *r, const qv_csv_read_options *o, char ***names_out,
                              int64_t *data_start, bool *need_more, qv_error *err) {
  const uint8_t *d = r->d;
  int64_t n = r->n, pos = 0;
  *names_out = NULL;
  *need_more = false;
  if (n >= 3 && memcmp(d, "\xef\xbb\xbf", 3) == 0) pos = 3;
  block hb;
  memset(&hb, 0, sizeof hb);
  hb.start = pos;
  hb.guess_end = n;
  qv_status st = tokenise(r, &hb, -1, 1, err);
  if (st == QV_OK && hb.n_rows == 0 && r->partial) {
    *need_more = true;
    free(hb.f);
    return QV_OK;
  }
  if (st == QV_OK && hb.n_rows == 0)
    st = qv_error_set(err, QV_EINVAL, "%s: empty CSV file", r->name);
  if (st != QV_OK) {
    free(hb.f);
    return st;
  }
  int32_t ncols = (int32_t)hb.n_fields;
  if (o->column_names) ncols = o->n_column_names;
  r->ncols = ncols;
  *data_start = (o->no_header || o->column_names) ? pos : hb.end;
  char **names = calloc((size_t)ncols + 1, sizeof *names);
  if (names == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  qv_bytes scratch0 = {0};
  for (int32_t c = 0; c < ncols && st == QV_OK; c++) {
    if (o->column_names) {
      names[c] = strdup(o->column_names[c]);
    } else if (o->no_header) {
      char buf[32];
      snprintf(buf, sizeof buf, "f%d", c);
      names[c] = strdup(buf);
    } else {
      int64_t len;
      const uint8_t *s = field_bytes(r, &hb.f[c], &scratch0, &len);
      names[c] = s ? strndup((const char *)s, (size_t)len) : NULL;
    }
    if (names[c] == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  free(hb.f);
  qv_bytes_free(&scratch0);
  if (st != QV_OK) {
    free_names(names, ncols);
    return st;
  }
  *names_out = names;
  return QV_OK;
}

static qv_status read_impl(reader *r, const qv_csv_read_options *o, qv_read_result *out,
                           qv_error *err) {
  const uint8_t *d = r->d;
  int64_t n = r->n, data_start = 0;
  char **names = NULL;
  bool more;
  qv_status st = parse_header(r, o, &names, &data_start, &more, err);
  if (st != QV_OK) return st;
  int32_t ncols = r->ncols;
  qv_type *st_type = qv_type_new(QV_STRUCT);
  if (st_type == NULL) {
    free_names(names, ncols);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }

  /* blocks */
  int64_t bs = o->block_size > 0 ? o->block_size : (1 << 20);
  int64_t span_bytes = n - data_start;
  int64_t nb = span_bytes <= 0 ? 0 : (span_bytes + bs - 1) / bs;
  if (nb > 1000000) nb = 1000000;
  r->n_blocks = nb;
  r->blocks = calloc((size_t)(nb ? nb : 1), sizeof *r->blocks);
  r->col_kind = calloc((size_t)ncols + 1, sizeof *r->col_kind);
  r->col_type = calloc((size_t)ncols + 1, sizeof *r->col_type);
  if (st == QV_OK && (r->blocks == NULL || r->col_kind == NULL || r->col_type == NULL))
    st = qv_error_set(err, QV_ENOMEM, "out of memory");
  for (int64_t i = 0; st == QV_OK && i < nb; i++) {
    int64_t g = data_start + i * (span_bytes / nb);
    if (i > 0) {
      const uint8_t *nl = memchr(d + g, '\n', (size_t)(n - g));
      g = nl ? nl - d + 1 : n;
    }
    r->blocks[i].start = g;
  }
  for (int64_t i = 0; i < nb; i++) r->blocks[i].guess_end = i + 1 < nb ? r->blocks[i + 1].start : n;
  /* explicit types */
  for (int32_t c = 0; st == QV_OK && c < ncols; c++)
    for (int32_t k = 0; k < o->n_types; k++)
      if (o->type_names[k] && strcmp(o->type_names[k], names[c]) == 0) {
        r->col_kind[c] = K_EXPLICIT;
        r->col_type[c] = qv_type_ref(o->types[k]);
      }

  int threads = o->threads > 0 ? o->threads : qv_cpu_count();
  if (threads > nb) threads = (int)(nb > 0 ? nb : 1);
  qv_pool *pool = NULL;
  if (st == QV_OK) st = qv_pool_new(threads, &pool, err);
  qv_bytes *scratch = calloc((size_t)threads, sizeof *scratch);
  if (st == QV_OK && scratch == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  task_ctx ctx = {r, scratch, 0};
  if (st == QV_OK) qv_pool_run(pool, nb, run_task, &ctx);
  /* verify the guessed starts; redo from the first wrong one, in order */
  for (int64_t i = 0; st == QV_OK && i < nb; i++) {
    block *b = &r->blocks[i];
    if (i > 0 && b->start != r->blocks[i - 1].end) {
      b->start = r->blocks[i - 1].end;
      if (b->start > b->guess_end) b->guess_end = b->start;
      b->st = tokenise(r, b, ncols, INT64_MAX, &b->err);
    }
    if (b->st != QV_OK) {
      st = b->st;
      *err = b->err;
    }
  }
  /* the last block must have reached the end (it always does) */
  if (st == QV_OK) {
    r->kinds = calloc((size_t)(nb * ncols + 1), sizeof *r->kinds);
    r->tzs = calloc((size_t)(nb * ncols + 1), 1);
    r->nulls = calloc((size_t)(nb * ncols + 1), 1);
    r->out = calloc((size_t)(nb * ncols + 1), sizeof *r->out);
    if (r->kinds == NULL || r->tzs == NULL || r->nulls == NULL || r->out == NULL)
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  if (st == QV_OK) {
    ctx.phase = 1;
    qv_pool_run(pool, nb, run_task, &ctx);
    for (int64_t i = 0; st == QV_OK && i < nb; i++)
      if (r->blocks[i].st != QV_OK) {
        st = r->blocks[i].st;
        *err = r->blocks[i].err;
      }
  }
  if (st == QV_OK) st = unify_cols(r, nb, &scratch[0], NULL, err);
  if (st == QV_OK) {
    ctx.phase = 2;
    qv_pool_run(pool, nb, run_task, &ctx);
    for (int64_t i = 0; st == QV_OK && i < nb; i++)
      if (r->blocks[i].st != QV_OK) {
        st = r->blocks[i].st;
        *err = r->blocks[i].err;
      }
  }
  if (st == QV_OK) st = qv_pool_check(pool, err);
  qv_pool_free(pool);
  for (int i = 0; scratch && i < threads; i++) qv_bytes_free(&scratch[i]);
  free(scratch);
  /* schema and batches */
  for (int32_t c = 0; st == QV_OK && c < ncols; c++)
    st = qv_type_add_child(st_type, names[c], true, qv_type_ref(r->col_type[c]), NULL, err);
  qv_schema *schema = NULL;
  if (st == QV_OK) {
    schema = qv_schema_new(st_type);
    st_type = NULL;
    if (schema == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  qv_array **batches = NULL;
  int64_t nbat = 0, rows = 0;
  if (st == QV_OK) {
    batches = calloc((size_t)(nb ? nb : 1), sizeof *batches);
    if (batches == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  for (int64_t i = 0; st == QV_OK && i < nb; i++) {
    if (r->blocks[i].n_rows == 0) continue;
    qv_array *a = qv_array_new(schema->type, 1, ncols);
    if (a == NULL) {
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
      break;
    }
    a->length = r->blocks[i].n_rows;
    a->null_count = 0;
    for (int32_t c = 0; c < ncols; c++) {
      a->children[c] = r->out[i * ncols + c];
      r->out[i * ncols + c] = NULL;
    }
    batches[nbat++] = a;
    rows += a->length;
  }
  free_names(names, ncols);
  qv_type_unref(st_type);
  if (st != QV_OK) {
    for (int64_t i = 0; i < nbat; i++) qv_array_unref(batches[i]);
    free(batches);
    qv_schema_unref(schema);
    return st;
  }
  out->schema = schema;
  out->batches = batches;
  out->n_batches = nbat;
  out->n_rows = rows;
  return QV_OK;
}

static void reader_free(reader *r) {
  for (int64_t i = 0; i < r->n_blocks; i++) free(r->blocks[i].f);
  free(r->blocks);
  if (r->out)
    for (int64_t i = 0; i < r->n_blocks * r->ncols; i++) qv_array_unref(r->out[i]);
  free(r->out);
  for (int32_t c = 0; r->col_type && c < r->ncols; c++) qv_type_unref(r->col_type[c]);
  free(r->col_type);
  free(r->col_kind);
  free(r->kinds);
  free(r->tzs);
  free(r->nulls);
}

/* The reader's options from the caller's (checked). */
static qv_status reader_init(reader *r, const qv_csv_read_options *o, const char *name,
                             qv_error *err) {
  r->name = name ? name : "<buffer>";
  r->o.delim =
      (uint8_t)(o->delimiter ? o->delimiter
                             : (name && (ends_with(name, ".tsv") || ends_with(name, ".tsv.gz") ||
                                         ends_with(name, ".tsv.zst"))
                                    ? '\t'
                                    : ','));
  r->o.quote = (uint8_t)(o->quote ? o->quote : '"');
  r->o.quoting = !o->no_quoting;
  r->o.escape = (uint8_t)o->escape;
  r->o.has_escape = o->escape != 0;
  r->o.nulls = o->null_values;
  r->o.pandas = o->pandas_types;
  r->stop[r->o.delim] = r->stop['\n'] = r->stop['\r'] = true;
  r->delim8 = r->o.delim * 0x0101010101010101ull;
  if (r->o.has_escape) r->stop[r->o.escape] = true;
  r->o.n_nulls = o->n_null_values;
  if (r->o.delim == '\n' || r->o.delim == '\r' || (r->o.quoting && r->o.delim == r->o.quote))
    return qv_error_set(err, QV_EARG, "csv: the delimiter cannot be a newline or the quote");
  if (o->n_column_names < 0 || o->n_types < 0 || o->n_null_values < 0)
    return qv_error_set(err, QV_EARG, "csv: negative option count");
  if (o->column_names && o->n_column_names == 0)
    return qv_error_set(err, QV_EARG, "csv: an empty list of column names");
  return QV_OK;
}

qv_status qv_csv_read_buffer(const void *data, int64_t size, const char *name,
                             const qv_csv_read_options *options, qv_read_result *out,
                             qv_error *err) {
  memset(out, 0, sizeof *out);
  qv_csv_read_options dflt;
  memset(&dflt, 0, sizeof dflt);
  const qv_csv_read_options *o = options ? options : &dflt;
  reader r;
  memset(&r, 0, sizeof r);
  r.d = data;
  r.n = size;
  QV_RETURN_NOT_OK(reader_init(&r, o, name, err));
  qv_status st = read_impl(&r, o, out, err);
  reader_free(&r);
  return st;
}

qv_status qv_csv_read_path(const char *path, const qv_csv_read_options *options,
                           qv_read_result *out, qv_error *err) {
  memset(out, 0, sizeof *out);
  qv_buffer *buf = NULL;
  QV_RETURN_NOT_OK(qv_text_read_file(path, &buf, err));
  qv_status st = qv_csv_read_buffer(buf->data, buf->size, path, options, out, err);
  qv_buffer_unref(buf);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Streaming                                                                 */

typedef struct stream {
  reader *r;
  const qv_batch_sink *sink;
  qv_text_window w;
  qv_pool *pool;
  qv_bytes *scratch;
  int n_scratch;
  char **names;
  qv_schema *schema; /* of the pending batches */
  qv_array **pending;
  int64_t n_pending;
  bool begun; /* sink->begin called in this pass */
  qv_text_stream_stats *stats;
} stream;

static qv_status make_schema(stream *s, qv_error *err) {
  reader *r = s->r;
  qv_schema_unref(s->schema);
  s->schema = NULL;
  qv_type *t = qv_type_new(QV_STRUCT);
  if (t == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  for (int32_t c = 0; c < r->ncols; c++) {
    qv_status st = qv_type_add_child(t, s->names[c], true, qv_type_ref(r->col_type[c]), NULL, err);
    if (st != QV_OK) {
      qv_type_unref(t);
      return st;
    }
  }
  if ((s->schema = qv_schema_new(t)) == NULL) {
    qv_type_unref(t);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  return QV_OK;
}

/* Hand the pending batches to the sink (begin first in a pass). */
static qv_status deliver(stream *s, qv_error *err) {
  return qv_text_deliver(s->sink, s->schema, s->pending, &s->n_pending, &s->begun, err);
}

static void first_error(reader *r, int64_t nb, qv_status *st, qv_error *err) {
  for (int64_t i = 0; *st == QV_OK && i < nb; i++)
    if (r->blocks[i].st != QV_OK) {
      *st = r->blocks[i].st;
      *err = r->blocks[i].err;
    }
}

/* Point the reader at the window's complete rows: all of it at the end of
 * the file, else up to its last newline (false: none, read more). */
static bool frame(stream *s) {
  reader *r = s->r;
  qv_text_window *w = &s->w;
  r->d = w->buf;
  r->line_base = w->line_base;
  r->partial = !w->eof;
  if (w->eof) {
    r->n = w->len;
    return true;
  }
  const uint8_t *nl = w->len > 0 ? memrchr(w->buf, '\n', (size_t)w->len) : NULL;
  if (nl == NULL) return false;
  r->n = nl - w->buf + 1;
  return true;
}

/* One pass over the file; *restart when a type widened after batches
 * were delivered (the floor kinds are kept for the next pass). */
static qv_status stream_pass(stream *s, const qv_csv_read_options *o, int64_t *window_bytes,
                             int64_t nbw, qv_text_progress_fn progress, void *pctx,
                             int64_t file_size, bool *restart, qv_error *err) {
  reader *r = s->r;
  qv_text_window *w = &s->w;
  *restart = false;
  s->begun = false;
  int64_t bs = o->block_size > 0 ? o->block_size : (1 << 20);
  qv_status st = QV_OK;
  int64_t data_start = 0;
  /* the header */
  for (;;) {
    QV_RETURN_NOT_OK(qv_text_window_fill(w, *window_bytes, err));
    if (!frame(s)) {
      *window_bytes *= 2;
      continue;
    }
    char **names = NULL;
    bool more = false;
    QV_RETURN_NOT_OK(parse_header(r, o, &names, &data_start, &more, err));
    if (more) {
      *window_bytes *= 2;
      continue;
    }
    if (s->names == NULL) {
      s->names = names;
    } else {
      free_names(names, r->ncols);
    }
    break;
  }
  if (r->blocks == NULL) { /* first pass: per-window state */
    int32_t ncols = r->ncols;
    r->streaming = true;
    r->n_blocks = nbw;
    r->blocks = calloc((size_t)nbw, sizeof *r->blocks);
    r->col_kind = calloc((size_t)ncols + 1, sizeof *r->col_kind);
    r->col_tz = calloc((size_t)ncols + 1, 1);
    r->col_type = calloc((size_t)ncols + 1, sizeof *r->col_type);
    r->kinds = calloc((size_t)(nbw * ncols + 1), sizeof *r->kinds);
    r->tzs = calloc((size_t)(nbw * ncols + 1), 1);
    r->nulls = calloc((size_t)(nbw * ncols + 1), 1);
    r->out = calloc((size_t)(nbw * ncols + 1), sizeof *r->out);
    s->pending = calloc((size_t)nbw, sizeof *s->pending);
    if (r->blocks == NULL || r->col_kind == NULL || r->col_tz == NULL || r->col_type == NULL ||
        r->kinds == NULL || r->tzs == NULL || r->nulls == NULL || r->out == NULL ||
        s->pending == NULL)
      return qv_error_set(err, QV_ENOMEM, "out of memory");
    for (int32_t c = 0; c < ncols; c++)
      for (int32_t k = 0; k < o->n_types; k++)
        if (o->type_names[k] && strcmp(o->type_names[k], s->names[c]) == 0) {
          r->col_kind[c] = K_EXPLICIT;
          qv_type_unref(r->col_type[c]);
          r->col_type[c] = qv_type_ref(o->types[k]);
        }
  }
  qv_text_window_consume(w, data_start);
  task_ctx ctx = {r, s->scratch, 3};
  int32_t ncols = r->ncols;
  for (;;) {
    QV_RETURN_NOT_OK(qv_text_window_fill(w, *window_bytes, err));
    if (w->len == 0) break;
    if (!frame(s)) {
      *window_bytes *= 2;
      continue;
    }
    int64_t n = r->n;
    int64_t nb = (n + bs - 1) / bs;
    if (nb > nbw) nb = nbw;
    for (int64_t i = 0; i < nb; i++) {
      int64_t g = i * (n / nb);
      if (i > 0) {
        const uint8_t *nl = memchr(r->d + g, '\n', (size_t)(n - g));
        g = nl ? nl - r->d + 1 : n;
      }
      r->blocks[i].start = g;
      r->blocks[i].st = QV_OK;
    }
    for (int64_t i = 0; i < nb; i++)
      r->blocks[i].guess_end = i + 1 < nb ? r->blocks[i + 1].start : n;
    qv_pool_group g = {0};
    bool queued = qv_pool_submit(s->pool, &g, nb, run_task, &ctx);
    st = deliver(s, err); /* the previous window's batches, while this one parses */
    if (queued) qv_pool_wait(s->pool, &g);
    else qv_pool_run(s->pool, nb, run_task, &ctx);
    if (st != QV_OK) return st;
    QV_RETURN_NOT_OK(qv_pool_check(s->pool, err));
    /* verify the guessed starts; redo from the first wrong one, in order */
    for (int64_t i = 1; i < nb; i++) {
      block *b = &r->blocks[i];
      if (b->start == r->blocks[i - 1].end) continue;
      b->start = r->blocks[i - 1].end;
      if (b->start > b->guess_end) b->guess_end = b->start;
      b->st = tokenise(r, b, ncols, INT64_MAX, &b->err);
      if (b->st == QV_OK) infer_block(r, b, i, &s->scratch[0]);
    }
    first_error(r, nb, &st, err);
    if (st != QV_OK) return st;
    int64_t carry = r->blocks[nb - 1].end;
    if (r->partial && carry == 0) { /* not one whole row: a bigger window */
      *window_bytes *= 2;
      continue;
    }
    bool changed = false;
    QV_RETURN_NOT_OK(unify_cols(r, nb, &s->scratch[0], &changed, err));
    if (changed && s->begun) {
      *restart = true;
      qv_schema_unref(s->schema); /* rebuilt from the wider types */
      s->schema = NULL;
      return QV_OK;
    }
    ctx.phase = 2;
    qv_pool_run(s->pool, nb, run_task, &ctx);
    ctx.phase = 3;
    first_error(r, nb, &st, err);
    if (st != QV_OK) return st;
    if (changed || s->schema == NULL) QV_RETURN_NOT_OK(make_schema(s, err));
    int64_t held = w->cap, rows = 0;
    for (int64_t i = 0; i < nb; i++) held += r->blocks[i].cap_fields * (int64_t)sizeof(span);
    for (int64_t i = 0; i < nb; i++) {
      if (r->blocks[i].n_rows == 0) continue;
      qv_array *a = qv_array_new(s->schema->type, 1, ncols);
      if (a == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
      a->length = r->blocks[i].n_rows;
      a->null_count = 0;
      for (int32_t c = 0; c < ncols; c++) {
        a->children[c] = r->out[i * ncols + c];
        r->out[i * ncols + c] = NULL;
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
    bool last = !r->partial;
    qv_text_window_consume(w, carry);
    if (progress) progress(pctx, w->base, file_size);
    if (last) break;
  }
  if (s->schema == NULL) { /* no data rows */
    QV_RETURN_NOT_OK(unify_cols(r, 0, &s->scratch[0], NULL, err));
    QV_RETURN_NOT_OK(make_schema(s, err));
  }
  QV_RETURN_NOT_OK(deliver(s, err));
  if (!s->begun) {
    s->begun = true;
    QV_RETURN_NOT_OK(s->sink->begin(s->sink->ctx, s->schema, err));
  }
  return QV_OK;
}

qv_status qv_csv_stream_path(const char *path, const qv_csv_read_options *options,
                             const qv_batch_sink *sink, qv_text_progress_fn progress,
                             void *progress_ctx, qv_text_stream_stats *stats, qv_error *err) {
  qv_csv_read_options dflt;
  memset(&dflt, 0, sizeof dflt);
  const qv_csv_read_options *o = options ? options : &dflt;
  if (stats) memset(stats, 0, sizeof *stats);
  reader r;
  memset(&r, 0, sizeof r);
  QV_RETURN_NOT_OK(reader_init(&r, o, path, err));
  stream s;
  memset(&s, 0, sizeof s);
  s.r = &r;
  s.sink = sink;
  s.stats = stats;
  int64_t file_size, nbw, window_bytes;
  qv_status st = qv_text_stream_open(&s.w, path, o->threads, o->block_size, &s.pool, &file_size,
                                     &nbw, &window_bytes, err);
  if (st == QV_OK) {
    s.n_scratch = qv_pool_size(s.pool);
    s.scratch = calloc((size_t)s.n_scratch, sizeof *s.scratch);
    if (s.scratch == NULL) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  for (bool again = true; st == QV_OK && again;) {
    st = stream_pass(&s, o, &window_bytes, nbw, progress, progress_ctx, file_size, &again, err);
    for (int64_t i = 0; i < s.n_pending; i++) qv_array_unref(s.pending[i]);
    s.n_pending = 0;
    if (st == QV_OK && again) {
      if (stats) stats->restarts++, stats->rows = 0;
      st = qv_text_window_rewind(&s.w, err);
    }
  }
  qv_pool_free(s.pool);
  for (int i = 0; s.scratch && i < s.n_scratch; i++) qv_bytes_free(&s.scratch[i]);
  free(s.scratch);
  free(s.pending);
  free_names(s.names, r.ncols);
  qv_schema_unref(s.schema);
  qv_text_window_close(&s.w);
  free(r.col_tz);
  reader_free(&r);
  return st;
}
