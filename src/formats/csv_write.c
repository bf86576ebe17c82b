/*
 * csv_write.c — the CSV writer of quiver/csv.h (formats layer): each type
 * rendered as pyarrow.csv.write_csv renders it (a header of quoted names;
 * strings and binaries always quoted with doubled quotes; nulls as empty
 * fields; reals in the shortest round-trip form, decimal for exponents in
 * [-6, 10) and "1e+10" / "1.5e-7" otherwise; dates YYYY-MM-DD; timestamps
 * "YYYY-MM-DD hh:mm:ss[.fraction of the unit's digits]" with "Z" when the
 * type has a time zone; times hh:mm:ss[.fraction]; dictionaries by value).
 * Nested types are refused, as pyarrow refuses them. Output goes through
 * the atomic file helper.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_internal.h"
#include "formats/text_internal.h"
#include "quiver/csv.h"
#include "quiver/print.h"

struct qv_csv_writer {
  qv_text_out out;
  qv_schema *schema;
  qv_csv_write_options o;
  qv_strbuf buf;
};

/* ---- value rendering ---------------------------------------------------- */

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

static void put_date(qv_strbuf *sb, int64_t days) {
  int64_t y;
  int m, d;
  civil_from_days(days, &y, &m, &d);
  qv_strbuf_printf(sb, NULL, "%04" PRId64 "-%02d-%02d", y, m, d);
}

static const int64_t kPerSec[] = {1, 1000, 1000000, 1000000000};
static const int kDigits[] = {0, 3, 6, 9};

static void put_time_of_day(qv_strbuf *sb, int64_t v, qv_time_unit unit) {
  int64_t per = kPerSec[unit];
  int64_t secs = floor_div(v, per), frac = v - secs * per;
  qv_strbuf_printf(sb, NULL, "%02d:%02d:%02d", (int)(secs / 3600), (int)(secs / 60 % 60),
                   (int)(secs % 60));
  if (unit != QV_SECOND) qv_strbuf_printf(sb, NULL, ".%0*" PRId64, kDigits[unit], frac);
}

static void put_timestamp(qv_strbuf *sb, int64_t v, qv_time_unit unit, bool tz) {
  int64_t per = kPerSec[unit];
  int64_t secs = floor_div(v, per), frac = v - secs * per;
  int64_t days = floor_div(secs, 86400), sod = secs - days * 86400;
  put_date(sb, days);
  qv_strbuf_append_char(sb, ' ', NULL);
  put_time_of_day(sb, sod * per + frac, unit);
  if (tz) qv_strbuf_append_char(sb, 'Z', NULL);
}

/* Shortest round-trip digits of a finite double (float when is_float). */
static void put_real(qv_strbuf *sb, double v, bool is_float) {
  if (isnan(v)) {
    qv_strbuf_append_str(sb, "nan", NULL);
    return;
  }
  if (isinf(v)) {
    qv_strbuf_append_str(sb, v > 0 ? "inf" : "-inf", NULL);
    return;
  }
  if (v == 0) {
    qv_strbuf_append_str(sb, signbit(v) ? "-0" : "0", NULL);
    return;
  }
  char tmp[40];
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    if (is_float ? (strtof(tmp, NULL) == (float)v) : (strtod(tmp, NULL) == v)) break;
  }
  /* tmp: [-]d[.ddd]e[+-]xx */
  const char *p = tmp;
  bool neg = *p == '-';
  if (neg) p++;
  char digits[24];
  int nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p != '.') digits[nd++] = *p;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  int x = atoi(p + 1);
  if (neg) qv_strbuf_append_char(sb, '-', NULL);
  if (x >= -6 && x < 10) {
    if (x < 0) {
      qv_strbuf_append_str(sb, "0.", NULL);
      for (int i = 0; i < -x - 1; i++) qv_strbuf_append_char(sb, '0', NULL);
      qv_strbuf_append(sb, digits, nd, NULL);
    } else {
      for (int i = 0; i <= x; i++) qv_strbuf_append_char(sb, i < nd ? digits[i] : '0', NULL);
      if (nd > x + 1) {
        qv_strbuf_append_char(sb, '.', NULL);
        qv_strbuf_append(sb, digits + x + 1, nd - x - 1, NULL);
      }
    }
  } else {
    qv_strbuf_append_char(sb, digits[0], NULL);
    if (nd > 1) {
      qv_strbuf_append_char(sb, '.', NULL);
      qv_strbuf_append(sb, digits + 1, nd - 1, NULL);
    }
    qv_strbuf_printf(sb, NULL, "e%c%d", x < 0 ? '-' : '+', x < 0 ? -x : x);
  }
}

static void put_quoted(qv_strbuf *sb, const uint8_t *s, int64_t n) {
  qv_strbuf_append_char(sb, '"', NULL);
  int64_t run = 0;
  for (int64_t i = 0; i < n; i++) {
    if (s[i] == '"') {
      qv_strbuf_append(sb, s + run, i - run + 1, NULL);
      qv_strbuf_append_char(sb, '"', NULL);
      run = i + 1;
    }
  }
  qv_strbuf_append(sb, s + run, n - run, NULL);
  qv_strbuf_append_char(sb, '"', NULL);
}

static bool supported(const qv_type *t) {
  if (t->id == QV_DICTIONARY) return supported(t->value_type);
  switch (t->id) {
    case QV_NA:
    case QV_BOOL:
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64:
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE:
    case QV_STRING:
    case QV_LARGE_STRING:
    case QV_BINARY:
    case QV_LARGE_BINARY:
    case QV_STRING_VIEW:
    case QV_BINARY_VIEW:
    case QV_FIXED_SIZE_BINARY:
    case QV_DATE32:
    case QV_DATE64:
    case QV_TIME32:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DECIMAL32:
    case QV_DECIMAL64:
    case QV_DECIMAL128:
    case QV_DECIMAL256:
    case QV_DURATION: return true;
    default: return false;
  }
}

static qv_status put_value(qv_strbuf *sb, const qv_array *a, int64_t i, qv_error *err) {
  if (!qv_array_is_valid(a, i) || a->type->id == QV_NA) return QV_OK;
  const qv_type *t = a->type;
  switch (t->id) {
    case QV_DICTIONARY: return put_value(sb, a->dictionary, qv_array_int_at(a, i), err);
    case QV_BOOL:
      qv_strbuf_append_str(sb, qv_bit_get(a->buffers[1]->data, a->offset + i) ? "true" : "false",
                           NULL);
      return QV_OK;
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
    case QV_DURATION: qv_strbuf_printf(sb, NULL, "%" PRId64, qv_array_int_at(a, i)); return QV_OK;
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64:
      qv_strbuf_printf(sb, NULL, "%" PRIu64, (uint64_t)qv_array_int_at(a, i));
      return QV_OK;
    case QV_FLOAT: {
      float v;
      memcpy(&v, a->buffers[1]->data + (a->offset + i) * 4, 4);
      put_real(sb, v, true);
      return QV_OK;
    }
    case QV_DOUBLE: {
      double v;
      memcpy(&v, a->buffers[1]->data + (a->offset + i) * 8, 8);
      put_real(sb, v, false);
      return QV_OK;
    }
    case QV_DATE32: {
      int32_t v;
      memcpy(&v, a->buffers[1]->data + (a->offset + i) * 4, 4);
      put_date(sb, v);
      return QV_OK;
    }
    case QV_DATE64: {
      int64_t v;
      memcpy(&v, a->buffers[1]->data + (a->offset + i) * 8, 8);
      put_date(sb, floor_div(v, 86400000));
      return QV_OK;
    }
    case QV_TIME32: {
      int32_t v;
      memcpy(&v, a->buffers[1]->data + (a->offset + i) * 4, 4);
      put_time_of_day(sb, v, t->unit);
      return QV_OK;
    }
    case QV_TIME64: {
      int64_t v;
      memcpy(&v, a->buffers[1]->data + (a->offset + i) * 8, 8);
      put_time_of_day(sb, v, t->unit);
      return QV_OK;
    }
    case QV_TIMESTAMP: {
      int64_t v;
      memcpy(&v, a->buffers[1]->data + (a->offset + i) * 8, 8);
      put_timestamp(sb, v, t->unit, t->timezone != NULL && t->timezone[0] != '\0');
      return QV_OK;
    }
    case QV_STRING:
    case QV_LARGE_STRING:
    case QV_BINARY:
    case QV_LARGE_BINARY:
    case QV_STRING_VIEW:
    case QV_BINARY_VIEW:
    case QV_FIXED_SIZE_BINARY: {
      const uint8_t *p;
      int64_t n;
      if (t->id == QV_STRING_VIEW || t->id == QV_BINARY_VIEW) {
        int32_t len;
        if (!qv_array_view_bytes(a, i, &p, &len))
          return qv_error_set(err, QV_EINVAL, "csv: a view outside its buffers at row %lld",
                              (long long)i);
        n = len;
      } else if (t->id == QV_FIXED_SIZE_BINARY) {
        n = t->byte_width;
        p = a->buffers[1]->data + (a->offset + i) * n;
      } else {
        int64_t o = qv_array_offset_at(a, i);
        n = qv_array_offset_at(a, i + 1) - o;
        p = a->buffers[2]->data + o;
      }
      put_quoted(sb, p, n);
      return QV_OK;
    }
    default: {
      /* decimals and half floats: their JSON text, unquoted */
      qv_strbuf tmp;
      qv_strbuf_init(&tmp);
      qv_status st = qv_format_value_json(a, i, &tmp, err);
      const char *s = qv_strbuf_cstr(&tmp);
      int64_t n = tmp.len;
      if (n >= 2 && s[0] == '"') s++, n -= 2;
      if (st == QV_OK) qv_strbuf_append(sb, s, n, NULL);
      qv_strbuf_reset(&tmp);
      return st;
    }
  }
}

/* ---- the writer -------------------------------------------------------- */

static qv_status flush(qv_csv_writer *w, bool force, qv_error *err) {
  if (w->buf.len == 0 || (!force && w->buf.len < (1 << 20))) return QV_OK;
  qv_status st = qv_text_out_write(&w->out, w->buf.data, w->buf.len, err);
  qv_strbuf_clear(&w->buf);
  return st;
}

qv_status qv_csv_writer_open(const char *path, const qv_schema *schema,
                             const qv_csv_write_options *options, qv_csv_writer **out,
                             qv_error *err) {
  *out = NULL;
  for (int32_t c = 0; c < qv_schema_num_fields(schema); c++) {
    const qv_field *f = qv_schema_field(schema, c);
    if (!supported(f->type)) {
      char tn[128];
      qv_type_to_string(f->type, tn, sizeof tn);
      return qv_error_set(err, QV_ENOTSUP, "csv: column '%s' of type %s cannot be written as CSV",
                          f->name, tn);
    }
  }
  qv_csv_writer *w = calloc(1, sizeof *w);
  if (w == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  if (options) w->o = *options;
  if (w->o.delimiter == 0) w->o.delimiter = ',';
  qv_status st = qv_text_out_open(&w->out, path, w->o.compression, w->o.compression_level, err);
  if (st != QV_OK) {
    free(w);
    return st;
  }
  w->schema = qv_schema_ref((qv_schema *)schema);
  qv_strbuf_init(&w->buf);
  if (!w->o.no_header) {
    for (int32_t c = 0; c < qv_schema_num_fields(schema); c++) {
      const char *name = qv_schema_field(schema, c)->name;
      if (c) qv_strbuf_append_char(&w->buf, w->o.delimiter, NULL);
      put_quoted(&w->buf, (const uint8_t *)name, (int64_t)strlen(name));
    }
    qv_strbuf_append_str(&w->buf, w->o.crlf ? "\r\n" : "\n", NULL);
  }
  *out = w;
  return QV_OK;
}

qv_status qv_csv_writer_write(qv_csv_writer *w, const qv_array *batch, qv_error *err) {
  if (batch->type->id != QV_STRUCT || batch->n_children != qv_schema_num_fields(w->schema))
    return qv_error_set(err, QV_ETYPE, "csv: the batch does not match the writer's schema");
  const char *eol = w->o.crlf ? "\r\n" : "\n";
  for (int64_t r = 0; r < batch->length; r++) {
    for (int32_t c = 0; c < batch->n_children; c++) {
      if (c) qv_strbuf_append_char(&w->buf, w->o.delimiter, NULL);
      QV_RETURN_NOT_OK(put_value(&w->buf, batch->children[c], batch->offset + r, err));
    }
    qv_strbuf_append_str(&w->buf, eol, NULL);
    QV_RETURN_NOT_OK(flush(w, false, err));
  }
  return QV_OK;
}

qv_status qv_csv_writer_close(qv_csv_writer *w, qv_error *err) {
  qv_status st = flush(w, true, err);
  if (st == QV_OK) {
    st = qv_text_out_commit(&w->out, err);
  } else {
    qv_text_out_abort(&w->out);
  }
  qv_strbuf_reset(&w->buf);
  qv_schema_unref(w->schema);
  free(w);
  return st;
}

void qv_csv_writer_abort(qv_csv_writer *w) {
  if (w == NULL) return;
  qv_text_out_abort(&w->out);
  qv_strbuf_reset(&w->buf);
  qv_schema_unref(w->schema);
  free(w);
}
