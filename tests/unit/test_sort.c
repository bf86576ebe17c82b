/* test_sort.c — qv_sort_indices against a brute-force oracle: a plain
 * stable merge sort over values decoded row by row with code written
 * independently of the kernels (sign-extended integers, doubles, big-endian
 * bytes for decimals and binaries, dictionary values looked up). Random
 * chunked columns of every comparable type (nulls, NaN, -0.0, sliced
 * chunks, chunks with different dictionaries, long common string
 * prefixes), one key and several, ascending and descending, nulls at start
 * and at end; stability with many equal keys; inputs large enough for the
 * radix paths (packed words at sizes around their thresholds, float
 * specials, the 64-bit packing limit); pyarrow's documented results; table
 * columns; errors with exact messages. */
#include <math.h>

#include "array_oracle.h"
#include "quiver/compute.h"
#include "qv_build.h"
#include "qv_test.h"

/* ------------------------------------------------------------ oracle -- */

/* One decoded value: class 0 value, 1 NaN, 2 null; kind 'i' signed,
 * 'u' unsigned, 'd' double, 'b' bytes. */
typedef struct oval {
  int cls;
  char kind;
  int64_t i;
  uint64_t u;
  double d;
  uint8_t *b;
  int64_t blen;
} oval;

static double half_to_double(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0) v = ldexp(m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

static int64_t ld_signed(const uint8_t *p, int w) {
  uint64_t x = 0;
  for (int j = w - 1; j >= 0; j--) x = (x << 8) | p[j];
  if (w < 8 && (x >> (8 * w - 1)) & 1) x |= ~0ull << (8 * w);
  return (int64_t)x;
}
static uint64_t ld_unsigned(const uint8_t *p, int w) {
  uint64_t x = 0;
  for (int j = w - 1; j >= 0; j--) x = (x << 8) | p[j];
  return x;
}

static void set_bytes(oval *o, const uint8_t *p, int64_t n) {
  o->kind = 'b';
  o->b = malloc((size_t)n + 1);
  if (n) memcpy(o->b, p, (size_t)n);
  o->blen = n;
}

/* Decode element i of a (no shared code with the kernels). */
static void ov_get(const qv_array *a, int64_t i, oval *o) {
  memset(o, 0, sizeof *o);
  const qv_type *t = a->type;
  int64_t p = a->offset + i;
  if (t->id == QV_NA || (a->buffers[0] && !qv_bit_get(a->buffers[0]->data, p))) {
    o->cls = 2;
    return;
  }
  const uint8_t *v = t->id == QV_NA ? NULL : (a->buffers[1] ? a->buffers[1]->data : NULL);
  switch (t->id) {
    case QV_BOOL:
      o->kind = 'u';
      o->u = qv_bit_get(v, p);
      return;
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
    case QV_DATE32:
    case QV_DATE64:
    case QV_TIME32:
    case QV_TIME64:
    case QV_TIMESTAMP:
    case QV_DURATION:
    case QV_DECIMAL32:
    case QV_DECIMAL64: {
      int w = qv_type_bit_width(t) / 8;
      o->kind = 'i';
      o->i = ld_signed(v + p * w, w);
      return;
    }
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64: {
      int w = qv_type_bit_width(t) / 8;
      o->kind = 'u';
      o->u = ld_unsigned(v + p * w, w);
      return;
    }
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE: {
      double d;
      if (t->id == QV_HALF_FLOAT) d = half_to_double((uint16_t)ld_unsigned(v + 2 * p, 2));
      else if (t->id == QV_FLOAT) {
        float f;
        memcpy(&f, v + 4 * p, 4);
        d = f;
      } else memcpy(&d, v + 8 * p, 8);
      if (isnan(d)) o->cls = 1;
      o->kind = 'd';
      o->d = d;
      return;
    }
    case QV_DECIMAL128:
    case QV_DECIMAL256: {
      int w = t->id == QV_DECIMAL128 ? 16 : 32;
      uint8_t be[32];
      for (int j = 0; j < w; j++) be[j] = v[p * w + w - 1 - j];
      be[0] ^= 0x80; /* two's complement -> unsigned order */
      set_bytes(o, be, w);
      return;
    }
    case QV_FIXED_SIZE_BINARY: set_bytes(o, v + p * t->byte_width, t->byte_width); return;
    case QV_BINARY:
    case QV_STRING: {
      int32_t b, e;
      memcpy(&b, v + 4 * p, 4);
      memcpy(&e, v + 4 * p + 4, 4);
      set_bytes(o, a->buffers[2]->data + b, e - b);
      return;
    }
    case QV_LARGE_BINARY:
    case QV_LARGE_STRING: {
      int64_t b, e;
      memcpy(&b, v + 8 * p, 8);
      memcpy(&e, v + 8 * p + 8, 8);
      set_bytes(o, a->buffers[2]->data + b, e - b);
      return;
    }
    case QV_BINARY_VIEW:
    case QV_STRING_VIEW: {
      int32_t n, d, off;
      memcpy(&n, v + 16 * p, 4);
      if (n <= 12) {
        set_bytes(o, v + 16 * p + 4, n);
      } else {
        memcpy(&d, v + 16 * p + 8, 4);
        memcpy(&off, v + 16 * p + 12, 4);
        set_bytes(o, a->buffers[2 + d]->data + off, n);
      }
      return;
    }
    case QV_DICTIONARY: {
      int w = qv_type_bit_width(t->index_type) / 8;
      int64_t j = qv_type_id_is_signed_integer(t->index_type->id)
                      ? ld_signed(v + p * w, w)
                      : (int64_t)ld_unsigned(v + p * w, w);
      ov_get(a->dictionary, j, o);
      return;
    }
    default: abort();
  }
}

typedef struct okey {
  oval *v; /* one per row */
  bool desc, nulls_first;
} okey;

static int ov_cmp(const okey *k, int64_t a, int64_t b) {
  const oval *x = &k->v[a], *y = &k->v[b];
  if (x->cls != y->cls) {
    /* at end: value < NaN < null; at start: null < NaN < value */
    int rx = k->nulls_first ? -x->cls : x->cls, ry = k->nulls_first ? -y->cls : y->cls;
    return rx < ry ? -1 : 1;
  }
  if (x->cls != 0) return 0;
  int r;
  switch (x->kind) {
    case 'i': r = x->i < y->i ? -1 : x->i > y->i; break;
    case 'u': r = x->u < y->u ? -1 : x->u > y->u; break;
    case 'd': r = x->d < y->d ? -1 : x->d > y->d; break; /* -0.0 == 0.0 */
    default: {
      int64_t l = x->blen < y->blen ? x->blen : y->blen;
      r = l ? memcmp(x->b, y->b, (size_t)l) : 0;
      r = r < 0 ? -1 : r > 0 ? 1 : (x->blen < y->blen ? -1 : x->blen > y->blen);
    }
  }
  return k->desc ? -r : r;
}

static int ov_cmp_all(const okey *keys, int nk, int64_t a, int64_t b) {
  for (int k = 0; k < nk; k++) {
    int r = ov_cmp(&keys[k], a, b);
    if (r) return r;
  }
  return 0;
}

/* Plain top-down stable merge sort of idx[0..n). */
static void merge_sort(int64_t *idx, int64_t *tmp, int64_t n, const okey *keys, int nk) {
  if (n < 2) return;
  int64_t h = n / 2;
  merge_sort(idx, tmp, h, keys, nk);
  merge_sort(idx + h, tmp, n - h, keys, nk);
  int64_t i = 0, j = h, o = 0;
  while (i < h && j < n) tmp[o++] = ov_cmp_all(keys, nk, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
  while (i < h) tmp[o++] = idx[i++];
  while (j < n) tmp[o++] = idx[j++];
  memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
}

static void okey_fill(okey *k, const qv_sort_key *sk) {
  int64_t n = 0;
  for (int64_t c = 0; c < sk->column.n_chunks; c++) n += sk->column.chunks[c]->length;
  k->v = calloc((size_t)n + 1, sizeof(oval));
  int64_t r = 0;
  for (int64_t c = 0; c < sk->column.n_chunks; c++)
    for (int64_t i = 0; i < sk->column.chunks[c]->length; i++)
      ov_get(sk->column.chunks[c], i, &k->v[r++]);
  k->desc = sk->descending;
  k->nulls_first = sk->null_placement == QV_NULLS_AT_START;
}

static int64_t checked_rows;

/* Sort with quiver and with the oracle; report the first difference. */
static bool check_sort(const qv_sort_key *keys, int nk, const char *label) {
  int64_t n = 0;
  for (int64_t c = 0; c < keys[0].column.n_chunks; c++) n += keys[0].column.chunks[c]->length;
  int64_t *got = malloc(sizeof(int64_t) * (size_t)(n + 1));
  int64_t *want = malloc(sizeof(int64_t) * (size_t)(n + 1));
  int64_t *tmp = malloc(sizeof(int64_t) * (size_t)(n + 1));
  okey *ok = calloc((size_t)nk, sizeof *ok);
  for (int k = 0; k < nk; k++) okey_fill(&ok[k], &keys[k]);
  for (int64_t i = 0; i < n; i++) want[i] = i;
  merge_sort(want, tmp, n, ok, nk);
  qv_error err;
  qv_status st = qv_sort_indices(keys, nk, got, &err);
  bool good = st == QV_OK;
  if (!good) fprintf(stderr, "%s: sort failed: %s\n", label, err.message);
  for (int64_t i = 0; good && i < n; i++)
    if (got[i] != want[i]) {
      fprintf(stderr, "%s: n=%lld: position %lld: got row %lld, expected row %lld\n", label,
              (long long)n, (long long)i, (long long)got[i], (long long)want[i]);
      good = false;
    }
  QV_CHECK(good);
  checked_rows += n;
  for (int k = 0; k < nk; k++) {
    for (int64_t i = 0; i < n; i++) free(ok[k].v[i].b);
    free(ok[k].v);
  }
  free(ok);
  free(got);
  free(want);
  free(tmp);
  return good;
}

/* --------------------------------------------------------- generator -- */

static qv_type *dec(qv_type_id id, int32_t precision) {
  qv_type *t = qv_type_new(id);
  t->precision = precision;
  t->scale = 2;
  return t;
}

#define N_SORT_TYPES 37
/* The i-th comparable test type (a new reference). */
static qv_type *sort_type(int i) {
  switch (i) {
    case 0: return orc_t(QV_NA);
    case 1: return orc_t(QV_BOOL);
    case 2: return orc_t(QV_INT8);
    case 3: return orc_t(QV_UINT8);
    case 4: return orc_t(QV_INT16);
    case 5: return orc_t(QV_UINT16);
    case 6: return orc_t(QV_INT32);
    case 7: return orc_t(QV_UINT32);
    case 8: return orc_t(QV_INT64);
    case 9: return orc_t(QV_UINT64);
    case 10: return orc_t(QV_HALF_FLOAT);
    case 11: return orc_t(QV_FLOAT);
    case 12: return orc_t(QV_DOUBLE);
    case 13: return dec(QV_DECIMAL32, 9);
    case 14: return dec(QV_DECIMAL64, 18);
    case 15: return dec(QV_DECIMAL128, 38);
    case 16: return dec(QV_DECIMAL256, 76);
    case 17: return orc_t(QV_DATE32);
    case 18: return orc_t(QV_DATE64);
    case 19: {
      qv_type *t = orc_t(QV_TIME32);
      t->unit = QV_MILLI;
      return t;
    }
    case 20: {
      qv_type *t = orc_t(QV_TIME64);
      t->unit = QV_NANO;
      return t;
    }
    case 21: return qv_type_timestamp(QV_MICRO, "UTC");
    case 22: {
      qv_type *t = orc_t(QV_DURATION);
      t->unit = QV_SECOND;
      return t;
    }
    case 23: return orc_fsb(3);
    case 24: return orc_fsb(8);
    case 25: return orc_fsb(16);
    case 26: return orc_fsb(13);
    case 27: return orc_t(QV_BINARY);
    case 28: return orc_t(QV_STRING);
    case 29: return orc_t(QV_LARGE_BINARY);
    case 30: return orc_t(QV_LARGE_STRING);
    case 31: return orc_t(QV_BINARY_VIEW);
    case 32: return orc_t(QV_STRING_VIEW);
    case 33: return orc_dict(QV_INT8, orc_t(QV_STRING));
    case 34: return orc_dict(QV_UINT16, orc_t(QV_INT64));
    case 35: return orc_dict(QV_INT32, orc_t(QV_DOUBLE));
    default: return orc_dict(QV_UINT8, orc_t(QV_STRING_VIEW));
  }
}

/* Strings with long shared prefixes and embedded zero bytes (for
 * STRING/BINARY and the LARGE variants), sliced. */
static qv_array *long_strings(qv_type_id id, int64_t len) {
  static const char *const bases[] = {"",
                                      "a",
                                      "ab",
                                      "abcdefg",
                                      "abcdefgh",
                                      "abcdefghijklmn",
                                      "abcdefghijklmnopqrstuvwxyz0123456789",
                                      "abcdefgh\0\0\0\0\0\0\0\0x",
                                      "zz"};
  static const int64_t base_len[] = {0, 1, 2, 7, 8, 14, 36, 17, 2};
  int64_t front = orc_int(3), total = front + len;
  char **s = calloc((size_t)total + 1, sizeof(char *));
  int64_t *lens = calloc((size_t)total + 1, sizeof(int64_t));
  for (int64_t i = 0; i < total; i++) {
    if (orc_int(6) == 0) continue; /* null */
    int b = (int)orc_int(9);
    int64_t extra = orc_int(4);
    s[i] = malloc(64);
    memcpy(s[i], bases[b], (size_t)base_len[b]);
    for (int64_t j = 0; j < extra; j++) s[i][base_len[b] + j] = "\0ab\xff"[orc_int(4)];
    lens[i] = base_len[b] + extra;
  }
  qv_array *base = tb_str(id, total, (const char *const *)s, lens), *out = NULL;
  QV_CHECK(qv_array_slice(base, front, len, &out, NULL) == QV_OK);
  qv_array_unref(base);
  for (int64_t i = 0; i < total; i++) free(s[i]);
  free(s);
  free(lens);
  return out;
}

static qv_array *gen_chunk(qv_type *t, int64_t len, bool low) {
  qv_type_id id = t->id;
  if ((id == QV_STRING || id == QV_BINARY || id == QV_LARGE_STRING || id == QV_LARGE_BINARY) &&
      orc_int(3) == 0 && len <= 200)
    return long_strings(id, len);
  qv_array *a = orc_gen_sliced(t, len);
  orc_reshape(a, low);
  return a;
}

/* A random chunked column: 1-4 chunks generated independently (so
 * dictionaries and view buffers differ between chunks). */
typedef struct gcol {
  qv_array *chunks[4];
  int64_t n_chunks;
} gcol;

static void gen_column(gcol *g, qv_type *t, int64_t total, bool low) {
  g->n_chunks = 1 + orc_int(4);
  int64_t left = total;
  for (int64_t c = 0; c < g->n_chunks; c++) {
    int64_t len = c == g->n_chunks - 1 ? left : orc_int(left + 1);
    g->chunks[c] = gen_chunk(t, len, low);
    left -= len;
  }
}

static void gcol_free(gcol *g) {
  for (int64_t c = 0; c < g->n_chunks; c++) qv_array_unref(g->chunks[c]);
}

/* -------------------------------------------------------------- tests -- */

static void test_single_key_every_type(void) {
  for (int ti = 0; ti < N_SORT_TYPES; ti++) {
    qv_type *t = sort_type(ti);
    for (int trial = 0; trial < 40; trial++) {
      int64_t n = trial % 10 == 9 ? 300 + orc_int(700) : orc_int(60);
      gcol g;
      gen_column(&g, t, n, trial % 2 == 0);
      qv_sort_key key = {{t, g.chunks, g.n_chunks},
                         trial % 4 >= 2,
                         (trial / 4) % 2 ? QV_NULLS_AT_START : QV_NULLS_AT_END};
      char label[64];
      snprintf(label, sizeof label, "type %d (%s) trial %d", ti, qv_type_id_name(t->id), trial);
      check_sort(&key, 1, label);
      gcol_free(&g);
    }
    qv_type_unref(t);
  }
}

static void test_multi_key(void) {
  for (int trial = 0; trial < 400; trial++) {
    int nk = 2 + (int)orc_int(3);
    int64_t n = trial % 20 == 19 ? 2000 + orc_int(3000) : orc_int(120);
    qv_type *types[4];
    gcol cols[4];
    qv_sort_key keys[4];
    for (int k = 0; k < nk; k++) {
      types[k] = sort_type((int)orc_int(N_SORT_TYPES));
      gen_column(&cols[k], types[k], n, orc_int(4) != 0);
      keys[k].column = (qv_chunked_column){types[k], cols[k].chunks, cols[k].n_chunks};
      keys[k].descending = orc_int(2);
      keys[k].null_placement = orc_int(2) ? QV_NULLS_AT_START : QV_NULLS_AT_END;
    }
    char label[96];
    snprintf(label, sizeof label, "multi trial %d (%d keys: %s, %s...)", trial, nk,
             qv_type_id_name(types[0]->id), qv_type_id_name(types[1]->id));
    check_sort(keys, nk, label);
    for (int k = 0; k < nk; k++) {
      gcol_free(&cols[k]);
      qv_type_unref(types[k]);
    }
  }
}

/* Large inputs: MSD split, many LSD passes, string prefix recursion. */
static void test_large(void) {
  static const int types[] = {8, 9, 12, 11, 15, 28, 30, 32, 6, 33, 1, 26};
  for (size_t q = 0; q < sizeof types / sizeof types[0]; q++) {
    for (int low = 0; low < 2; low++) {
      qv_type *t = sort_type(types[q]);
      gcol g;
      gen_column(&g, t, 70000 + orc_int(70000), low);
      qv_sort_key key = {
          {t, g.chunks, g.n_chunks}, low == 1, low ? QV_NULLS_AT_START : QV_NULLS_AT_END};
      char label[64];
      snprintf(label, sizeof label, "large %s low=%d", qv_type_id_name(t->id), low);
      check_sort(&key, 1, label);
      gcol_free(&g);
      qv_type_unref(t);
    }
  }
  /* Full-range random int64 and uint64 (every byte varies). */
  for (int q = 0; q < 2; q++) {
    int64_t n = 200000;
    qv_type *t = orc_t(q ? QV_UINT64 : QV_INT64);
    qv_array *a = qv_array_new(t, 2, 0);
    a->length = n;
    a->null_count = 0;
    a->buffers[1] = orc_buf(8 * n);
    for (int64_t i = 0; i < n; i++) {
      uint64_t x = orc_next();
      memcpy(a->buffers[1]->data + 8 * i, &x, 8);
    }
    qv_sort_key key = {{t, &a, 1}, q == 1, QV_NULLS_AT_END};
    check_sort(&key, 1, q ? "uint64 full range" : "int64 full range");
    qv_array_unref(a);
    qv_type_unref(t);
  }
}

/* A float32 (w 4) or float64 (w 8) column of n rows drawn from special
 * values (NaN with several payloads and signs, -0.0, 0.0, +-inf, the
 * smallest and largest denormals, the extremes) and random ones; `few`:
 * only a handful of distinct values (long runs of ties); `nulls`: about
 * one row in 8 null. */
static qv_array *float_column(int w, int64_t n, bool few, bool nulls) {
  static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, 1.0, -1.0, 0.5, 1e-3};
  qv_type *t = orc_t(w == 4 ? QV_FLOAT : QV_DOUBLE);
  qv_array *a = qv_array_new(t, 2, 0);
  qv_type_unref(t);
  a->length = n;
  a->null_count = nulls ? -1 : 0;
  a->buffers[1] = orc_buf(w * (n > 0 ? n : 1));
  if (nulls) {
    a->buffers[0] = orc_buf((n + 8) / 8);
    memset(a->buffers[0]->data, 0, (size_t)(n + 8) / 8);
  }
  for (int64_t i = 0; i < n; i++) {
    int r = (int)orc_int(few ? 12 : 40);
    uint8_t *p = a->buffers[1]->data + w * i;
    if (w == 4) {
      static const uint32_t bits[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x00000001u,
                                      0x007fffffu, 0x80000001u, 0x7f7fffffu, 0xff7fffffu};
      uint32_t u;
      if (r < 8) {
        u = bits[r];
      } else if (r < 12) {
        float f = (float)specials[r - 8];
        memcpy(&u, &f, 4);
      } else {
        float f = (float)((double)(int64_t)orc_next() / 9.2e18 * (r % 2 ? 1e30 : 1.0));
        memcpy(&u, &f, 4);
      }
      memcpy(p, &u, 4);
    } else {
      static const uint64_t bits[] = {0x7ff8000000000000ull, 0xfff8000000000001ull,
                                      0x7ff0000000000001ull, 0x0000000000000001ull,
                                      0x000fffffffffffffull, 0x8000000000000001ull,
                                      0x7fefffffffffffffull, 0xffefffffffffffffull};
      uint64_t u;
      if (r < 8) {
        u = bits[r];
      } else if (r < 12) {
        memcpy(&u, &specials[r - 8], 8);
      } else {
        double d = (double)(int64_t)orc_next() / 9.2e18 * (r % 2 ? 1e300 : 1.0);
        memcpy(&u, &d, 8);
      }
      memcpy(p, &u, 8);
    }
    if (nulls && orc_int(8) != 0) qv_bit_set(a->buffers[0]->data, i);
  }
  return a;
}

/* The packed radix path ((key - min) << rbits | row words, LSD digits of
 * 8 to 11 bits chosen by size) against the brute-force stable sort: float
 * keys with NaN, -0.0, infinities and denormals, ascending and descending,
 * nulls at either end, ties; sizes around the insertion-sort cut-off (48)
 * and where the digit width changes (1024, 2048, 4096, 8192 words); and
 * as the first of two keys (pairs packed inside the general sorter). */
static void test_packed_floats(void) {
  static const int64_t sizes[] = {0,    1,    2,    3,    47,   48,   49,   50,    1023, 1024,
                                  1025, 2047, 2048, 4096, 4097, 8191, 8192, 20000, 70001};
  for (size_t q = 0; q < sizeof sizes / sizeof sizes[0]; q++)
    for (int w = 4; w <= 8; w += 4)
      for (int variant = 0; variant < 8; variant++) {
        bool few = variant & 1, nulls = variant & 2, desc = variant & 4;
        qv_array *a = float_column(w, sizes[q], few, nulls);
        for (int place = 0; place < 2; place++) {
          qv_sort_key key = {{a->type, &a, 1}, desc, place ? QV_NULLS_AT_START : QV_NULLS_AT_END};
          char label[96];
          snprintf(label, sizeof label, "packed float%d n=%lld few=%d nulls=%d desc=%d start=%d",
                   8 * w, (long long)sizes[q], few, nulls, desc, place);
          check_sort(&key, 1, label);
        }
        if (sizes[q] >= 1000 && variant < 4) {
          /* Float first key (few values: long runs) and an int32 second. */
          qv_array *b = float_column(4, sizes[q], true, false);
          qv_sort_key keys[2] = {{{a->type, &a, 1}, desc, QV_NULLS_AT_END},
                                 {{b->type, &b, 1}, !desc, QV_NULLS_AT_START}};
          check_sort(keys, 2, "packed float first of two keys");
          qv_array_unref(b);
        }
        qv_array_unref(a);
      }
}

/* Keys whose spread and row ids fill exactly 64 bits are packed; one more
 * bit of spread takes the unpacked (key, row) pair path. Both must give
 * the brute-force order, with and without nulls, either direction. */
static void test_packed_width_limit(void) {
  /* Row ids of 10 bits (8-bit digits: 7 passes) and 12 bits (9-bit
   * digits: 6 passes). */
  for (int rbits = 10; rbits <= 12; rbits += 2)
    for (int extra = 0; extra < 2; extra++)
      for (int variant = 0; variant < 4; variant++) {
        int64_t n = rbits == 10 ? 1000 : 3000;
        qv_type *t = orc_t(QV_UINT64);
        qv_array *a = qv_array_new(t, 2, 0);
        a->length = n;
        a->null_count = variant & 1 ? -1 : 0;
        a->buffers[1] = orc_buf(8 * n);
        if (variant & 1) {
          a->buffers[0] = orc_buf((n + 7) / 8);
          memset(a->buffers[0]->data, 0, (size_t)(n + 7) / 8);
        }
        uint64_t base = 12345, spread = (~0ull >> rbits) + (uint64_t)extra; /* max - min */
        for (int64_t i = 0; i < n; i++) {
          uint64_t x = base + (i == 0 ? 0 : i == 1 ? spread : orc_next() % spread);
          if (i % 7 == 3) x = base + 42; /* ties */
          memcpy(a->buffers[1]->data + 8 * i, &x, 8);
          if ((variant & 1) && (i < 2 || orc_int(9) != 0)) qv_bit_set(a->buffers[0]->data, i);
        }
        qv_sort_key key = {{t, &a, 1}, variant & 2, QV_NULLS_AT_END};
        char label[64];
        snprintf(label, sizeof label, "spread 2^%d%s variant %d", 64 - rbits,
                 extra ? " (+1, unpacked)" : " - 1 (packed)", variant);
        check_sort(&key, 1, label);
        qv_array_unref(a);
        qv_type_unref(t);
      }
}

/* Stability: many rows with few distinct keys keep their input order. */
static void test_stability(void) {
  int64_t n = 100000;
  qv_type *t = orc_t(QV_INT32);
  qv_array *a = qv_array_new(t, 2, 0);
  a->length = n;
  a->null_count = -1;
  a->buffers[0] = orc_buf((n + 7) / 8);
  a->buffers[1] = orc_buf(4 * n);
  for (int64_t i = 0; i < n; i++) {
    int32_t v = (int32_t)orc_int(3);
    memcpy(a->buffers[1]->data + 4 * i, &v, 4);
    if (orc_int(10)) qv_bit_set(a->buffers[0]->data, i);
  }
  for (int desc = 0; desc < 2; desc++) {
    int64_t *out = malloc(sizeof(int64_t) * (size_t)n);
    qv_error err;
    QV_CHECK(qv_sort_indices_array(a, desc, QV_NULLS_AT_END, out, &err) == QV_OK);
    /* Within each group of equal keys the rows increase. */
    int64_t bad = 0;
    for (int64_t i = 1; i < n; i++) {
      int32_t x, y;
      bool vx = qv_array_is_valid(a, out[i - 1]), vy = qv_array_is_valid(a, out[i]);
      memcpy(&x, a->buffers[1]->data + 4 * out[i - 1], 4);
      memcpy(&y, a->buffers[1]->data + 4 * out[i], 4);
      bool same = vx == vy && (!vx || x == y);
      if (same && out[i - 1] > out[i]) bad++;
      if (!same && vx && vy && (desc ? x < y : x > y)) bad++;
      if (!vx && vy) bad++; /* nulls at the end */
    }
    QV_CHECK_EQ_INT(bad, 0);
    free(out);
  }
  qv_sort_key key = {{t, &a, 1}, true, QV_NULLS_AT_START};
  check_sort(&key, 1, "stability int32");
  qv_array_unref(a);
  qv_type_unref(t);
}

/* pyarrow 26's results on [3.0, None, nan, -0.0, 0.0, 1.0, None, nan, -1.0]
 * (pc.array_sort_indices) and, with a second key b = row number
 * descending, pc.sort_indices on a table. */
static void test_pyarrow_reference(void) {
  double vals[9] = {3.0, 0, NAN, -0.0, 0.0, 1.0, 0, NAN, -1.0};
  qv_array *a = tb_prim(orc_t(QV_DOUBLE), 9, "101111011", vals, sizeof vals);
  int64_t rows[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  qv_array *b = tb_prim(orc_t(QV_INT64), 9, NULL, rows, sizeof rows);
  static const int64_t single[4][9] = {{1, 6, 2, 7, 8, 3, 4, 5, 0},  /* at_start ascending */
                                       {1, 6, 2, 7, 0, 5, 3, 4, 8},  /* at_start descending */
                                       {8, 3, 4, 5, 0, 2, 7, 1, 6},  /* at_end ascending */
                                       {0, 5, 3, 4, 8, 2, 7, 1, 6}}; /* at_end descending */
  static const int64_t two[4][9] = {{6, 1, 7, 2, 8, 4, 3, 5, 0},
                                    {6, 1, 7, 2, 0, 5, 4, 3, 8},
                                    {8, 4, 3, 5, 0, 7, 2, 6, 1},
                                    {0, 5, 4, 3, 8, 7, 2, 6, 1}};
  for (int c = 0; c < 4; c++) {
    qv_null_placement np = c < 2 ? QV_NULLS_AT_START : QV_NULLS_AT_END;
    bool desc = c % 2;
    int64_t out[9];
    qv_error err;
    QV_CHECK(qv_sort_indices_array(a, desc, np, out, &err) == QV_OK);
    for (int i = 0; i < 9; i++) QV_CHECK_EQ_INT(out[i], single[c][i]);
    qv_sort_key keys[2] = {{{NULL, &a, 1}, desc, np}, {{NULL, &b, 1}, true, np}};
    QV_CHECK(qv_sort_indices(keys, 2, out, &err) == QV_OK);
    for (int i = 0; i < 9; i++) QV_CHECK_EQ_INT(out[i], two[c][i]);
  }
  qv_array_unref(a);
  qv_array_unref(b);
}

/* Dictionary chunks with different dictionaries (with repeated and null
 * values) sort by decoded value across chunks. */
static void test_dictionary_chunks(void) {
  const char *d1[] = {"pear", "apple", NULL, "fig", "apple"};
  const char *d2[] = {"fig", "banana", "zucchini"};
  qv_type *t = orc_dict(QV_INT8, orc_t(QV_STRING));
  int8_t i1[] = {0, 1, 2, 3, 4, 0};
  int8_t i2[] = {2, 1, 0, 0, 1};
  qv_array *c1 = tb_prim(qv_type_ref(t), 6, "111110", i1, sizeof i1);
  c1->dictionary = tb_str(QV_STRING, 5, d1, NULL);
  qv_array *c2 = tb_prim(qv_type_ref(t), 5, NULL, i2, sizeof i2);
  c2->dictionary = tb_str(QV_STRING, 3, d2, NULL);
  qv_array *chunks[2] = {c1, c2};
  /* rows: 0 pear 1 apple 2 null(value) 3 fig 4 apple 5 null(index)
   *       6 zucchini 7 banana 8 fig 9 fig 10 banana */
  static const int64_t asc_end[] = {1, 4, 7, 10, 3, 8, 9, 0, 6, 2, 5};
  static const int64_t desc_start[] = {2, 5, 6, 0, 3, 8, 9, 7, 10, 1, 4};
  int64_t out[11];
  qv_error err;
  qv_sort_key key = {{t, chunks, 2}, false, QV_NULLS_AT_END};
  QV_CHECK(qv_sort_indices(&key, 1, out, &err) == QV_OK);
  for (int i = 0; i < 11; i++) QV_CHECK_EQ_INT(out[i], asc_end[i]);
  key.descending = true;
  key.null_placement = QV_NULLS_AT_START;
  QV_CHECK(qv_sort_indices(&key, 1, out, &err) == QV_OK);
  for (int i = 0; i < 11; i++) QV_CHECK_EQ_INT(out[i], desc_start[i]);
  check_sort(&key, 1, "dictionary chunks");
  /* An index outside the dictionary is an error, not a read. */
  int8_t bad = 5;
  memcpy(c2->buffers[1]->data + 3, &bad, 1);
  QV_CHECK_EQ_INT(qv_sort_indices(&key, 1, out, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(
      err.message,
      "sort key 0: chunk 1: dictionary index 5 at row 3 is outside the 3-value dictionary");
  qv_array_unref(c1);
  qv_array_unref(c2);
  qv_type_unref(t);
}

static void test_edges(void) {
  qv_error err;
  int64_t out[4] = {-1, -1, -1, -1};
  /* No rows. */
  qv_type *t = orc_t(QV_STRING);
  qv_sort_key key = {{t, NULL, 0}, false, QV_NULLS_AT_END};
  QV_CHECK(qv_sort_indices(&key, 1, out, &err) == QV_OK);
  QV_CHECK_EQ_INT(out[0], -1);
  /* Null type: identity. */
  qv_type *na = orc_t(QV_NA);
  qv_array *nulls = NULL;
  QV_CHECK(qv_array_nulls(na, 4, &nulls, &err) == QV_OK);
  QV_CHECK(qv_sort_indices_array(nulls, true, QV_NULLS_AT_START, out, &err) == QV_OK);
  for (int i = 0; i < 4; i++) QV_CHECK_EQ_INT(out[i], i);
  qv_array_unref(nulls);
  qv_type_unref(na);
  /* Errors. */
  QV_CHECK_EQ_INT(qv_sort_indices(&key, 0, out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "sort: at least one sort key is needed (got 0)");
  qv_type *iv = orc_t(QV_INTERVAL_MONTH_DAY_NANO);
  qv_array *ia = orc_gen_sliced(iv, 3);
  QV_CHECK_EQ_INT(qv_sort_indices_array(ia, false, QV_NULLS_AT_END, out, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message, "sort key 0: cannot sort values of type month_day_nano_interval");
  qv_type *lt = orc_list(QV_LIST, orc_t(QV_INT32));
  qv_array *la = orc_gen_sliced(lt, 3);
  QV_CHECK_EQ_INT(qv_sort_indices_array(la, false, QV_NULLS_AT_END, out, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message, "sort key 0: cannot sort values of type list<item: int32>");
  qv_type *i64 = orc_t(QV_INT64);
  qv_array *x = orc_gen_sliced(i64, 3), *y = orc_gen_sliced(i64, 2);
  qv_sort_key two[2] = {{{NULL, &x, 1}, false, QV_NULLS_AT_END},
                        {{NULL, &y, 1}, false, QV_NULLS_AT_END}};
  QV_CHECK_EQ_INT(qv_sort_indices(two, 2, out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "sort: key 1 has 2 rows but key 0 has 3");
  qv_array *mixed[2] = {x, ia};
  qv_sort_key mk = {{i64, mixed, 2}, false, QV_NULLS_AT_END};
  QV_CHECK_EQ_INT(qv_sort_indices(&mk, 1, out, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message,
                  "sort key 0: chunk 1 has type month_day_nano_interval, expected int64");
  /* A string offset past the data buffer. */
  const char *sv[] = {"ab", "cd", "ef"};
  qv_array *s = tb_str(QV_STRING, 3, sv, NULL);
  int32_t far = 99;
  memcpy(s->buffers[1]->data + 8, &far, 4);
  QV_CHECK_EQ_INT(qv_sort_indices_array(s, false, QV_NULLS_AT_END, out, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "sort key 0: chunk 0: value 1 spans [2, 99) outside the 6-byte data buffer");
  qv_array_unref(s);
  qv_array_unref(x);
  qv_array_unref(y);
  qv_array_unref(ia);
  qv_array_unref(la);
  qv_type_unref(i64);
  qv_type_unref(lt);
  qv_type_unref(iv);
  qv_type_unref(t);
}

/* Table columns: several batches, keys by name. */
static void test_table(void) {
  qv_type *st = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(st, "k", true, orc_t(QV_STRING), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "v", true, orc_t(QV_INT32), NULL, NULL) == QV_OK);
  qv_schema *schema = qv_schema_new(st);
  qv_array *batches[3];
  for (int b = 0; b < 3; b++) {
    int64_t n = 50 + orc_int(50);
    qv_array *kids[2] = {gen_chunk(schema->type->children[0].type, n, true),
                         gen_chunk(schema->type->children[1].type, n, true)};
    qv_buffer *none[1] = {NULL};
    batches[b] = tb_array(qv_type_ref(schema->type), n, 1, none, 2, kids);
    batches[b]->null_count = 0;
  }
  qv_table *t = NULL;
  qv_error err;
  QV_REQUIRE(qv_table_from_batches(schema, batches, 3, &t, &err) == QV_OK);
  int64_t n = qv_table_num_rows(t);
  int64_t *out = malloc(sizeof(int64_t) * (size_t)n);
  qv_sort_spec specs[2] = {{"v", true, QV_NULLS_AT_START}, {"k", false, QV_NULLS_AT_END}};
  QV_CHECK(qv_table_sort_indices(t, specs, 2, out, &err) == QV_OK);
  /* Same through explicit chunked columns. */
  qv_array *vk[3], *kk[3];
  for (int b = 0; b < 3; b++) {
    vk[b] = batches[b]->children[1];
    kk[b] = batches[b]->children[0];
  }
  qv_sort_key keys[2] = {{{NULL, vk, 3}, true, QV_NULLS_AT_START},
                         {{NULL, kk, 3}, false, QV_NULLS_AT_END}};
  check_sort(keys, 2, "table columns");
  int64_t *ref = malloc(sizeof(int64_t) * (size_t)n);
  QV_CHECK(qv_sort_indices(keys, 2, ref, &err) == QV_OK);
  QV_CHECK(memcmp(ref, out, sizeof(int64_t) * (size_t)n) == 0);
  qv_sort_spec bad = {"nope", false, QV_NULLS_AT_END};
  QV_CHECK_EQ_INT(qv_table_sort_indices(t, &bad, 1, out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "no column named 'nope' in the table");
  free(out);
  free(ref);
  qv_table_unref(t);
  for (int b = 0; b < 3; b++) qv_array_unref(batches[b]);
  qv_schema_unref(schema);
}

int main(void) {
  QV_RUN(test_pyarrow_reference);
  QV_RUN(test_single_key_every_type);
  QV_RUN(test_multi_key);
  QV_RUN(test_stability);
  QV_RUN(test_large);
  QV_RUN(test_packed_floats);
  QV_RUN(test_packed_width_limit);
  QV_RUN(test_dictionary_chunks);
  QV_RUN(test_edges);
  QV_RUN(test_table);
  printf("%lld rows checked against the oracle\n", (long long)checked_rows);
  return QV_TEST_END();
}
