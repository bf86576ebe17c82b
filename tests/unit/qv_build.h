/*
 * qv_build.h — the one set of helpers unit tests use to build qv_types and
 * qv_arrays by hand (heap buffers filled from literals). Abort-free: a
 * failed allocation returns NULL and the test's checks fail. Constructors
 * take over the references passed in. Two levels: convenient builders
 * (tb_prim from a validity pattern, tb_str from C strings) and raw ones
 * (tb_*_raw, tb_array_nc) that set exact buffers and null counts, for
 * tests of validation and IPC layouts. Also the one deterministic random
 * source tests draw their random data from (tb_seed, tb_rnd, tb_rint,
 * tb_runif: xorshift64, the same sequence on every machine).
 */
#ifndef QV_BUILD_H
#define QV_BUILD_H

#include <stdint.h>
#include <string.h>

#include "quiver/array.h"
#include "quiver/type.h"

/* A heap buffer holding a copy of n bytes (NULL data -> zeroed). */
static inline qv_buffer *tb_buf(const void *data, int64_t n) {
  qv_buffer *b = NULL;
  if (qv_buffer_alloc(n, &b, NULL) != QV_OK) return NULL;
  if (data && n) memcpy(b->data, data, (size_t)n);
  return b;
}

/* Validity bitmap from a pattern such as "1101" ('1' valid). */
static inline qv_buffer *tb_bits(const char *pattern) {
  int64_t n = (int64_t)strlen(pattern);
  qv_buffer *b = tb_buf(NULL, (n + 7) / 8);
  if (!b) return NULL;
  for (int64_t i = 0; i < n; i++)
    if (pattern[i] == '1') qv_bit_set(b->data, i);
  return b;
}

/* Type with no children, given parameters set by the caller afterwards. */
static inline qv_type *tb_type(qv_type_id id) { return qv_type_new(id); }

/* Add a nullable child field (type taken). Returns t. */
static inline qv_type *tb_child(qv_type *t, const char *name, qv_type *ct) {
  if (qv_type_add_child(t, name, true, ct, NULL, NULL) != QV_OK) qv_type_unref(ct);
  return t;
}

/* Array of `type` (reference taken over) with the given buffers (taken)
 * and children (taken). */
static inline qv_array *tb_array(qv_type *type, int64_t length, int32_t n_buffers,
                                 qv_buffer **buffers, int32_t n_children, qv_array **children) {
  qv_array *a = qv_array_new(type, n_buffers, n_children);
  qv_type_unref(type);
  if (!a) return NULL;
  a->length = length;
  for (int32_t i = 0; i < n_buffers; i++) a->buffers[i] = buffers[i];
  for (int32_t i = 0; i < n_children; i++) a->children[i] = children[i];
  return a;
}

/* Fixed-width array: validity pattern (NULL = none), `value_bytes` bytes. */
static inline qv_array *tb_prim(qv_type *type, int64_t length, const char *valid,
                                const void *values, int64_t value_bytes) {
  qv_buffer *b[2] = {valid ? tb_bits(valid) : NULL, tb_buf(values, value_bytes)};
  return tb_array(type, length, 2, b, 0, NULL);
}

/* STRING/BINARY (32-bit offsets) or LARGE_* (64-bit): NULL entries null. */
static inline qv_array *tb_str(qv_type_id id, int64_t n, const char *const *s,
                               const int64_t *lens /* NULL: strlen */) {
  bool large = id == QV_LARGE_STRING || id == QV_LARGE_BINARY;
  int w = large ? 8 : 4;
  int64_t total = 0;
  char valid[256];
  for (int64_t i = 0; i < n; i++) {
    valid[i] = s[i] ? '1' : '0';
    if (s[i]) total += lens ? lens[i] : (int64_t)strlen(s[i]);
  }
  valid[n] = 0;
  qv_buffer *offs = tb_buf(NULL, (n + 1) * w);
  qv_buffer *data = tb_buf(NULL, total);
  int64_t pos = 0;
  for (int64_t i = 0; i <= n; i++) {
    if (large) memcpy(offs->data + 8 * i, &pos, 8);
    else {
      int32_t p32 = (int32_t)pos;
      memcpy(offs->data + 4 * i, &p32, 4);
    }
    if (i < n && s[i]) {
      int64_t l = lens ? lens[i] : (int64_t)strlen(s[i]);
      memcpy(data->data + pos, s[i], (size_t)l);
      pos += l;
    }
  }
  qv_buffer *b[3] = {tb_bits(valid), offs, data};
  return tb_array(tb_type(id), n, 3, b, 0, NULL);
}

/* As tb_array, also setting the null count (-1 = unknown). */
static inline qv_array *tb_array_nc(qv_type *t, int64_t length, int64_t null_count, int nb,
                                    qv_buffer **bufs, int nc, qv_array **children) {
  qv_array *a = tb_array(t, length, nb, bufs, nc, children);
  if (a) a->null_count = null_count;
  return a;
}

/* Primitive array [validity?, values] from raw bytes. */
static inline qv_array *tb_prim_raw(qv_type_id id, int64_t length, int64_t null_count,
                                    const uint8_t *validity, int64_t vbytes, const void *values,
                                    int64_t nbytes) {
  qv_buffer *b[2] = {validity ? tb_buf(validity, vbytes) : NULL, tb_buf(values, nbytes)};
  return tb_array_nc(tb_type(id), length, null_count, 2, b, 0, NULL);
}

static inline qv_array *tb_int32(const int32_t *v, int64_t n) {
  return tb_prim_raw(QV_INT32, n, 0, NULL, 0, v, n * 4);
}

/* [validity?, offsets(int32), data] string/binary array from raw buffers. */
static inline qv_array *tb_str_raw(qv_type_id id, int64_t length, int64_t null_count,
                                   const uint8_t *validity, const int32_t *offsets,
                                   const char *data, int64_t data_len) {
  qv_buffer *b[3] = {validity ? tb_buf(validity, (length + 7) / 8) : NULL,
                     tb_buf(offsets, (length + 1) * 4), tb_buf(data, data_len)};
  return tb_array_nc(tb_type(id), length, null_count, 3, b, 0, NULL);
}

/* A 16-byte binary view: inline when len <= 12, else prefix/index/offset. */
static inline void tb_view(uint8_t out[16], const char *s, int32_t len, int32_t buf_index,
                           int32_t offset) {
  memset(out, 0, 16);
  memcpy(out, &len, 4);
  if (len <= 12) {
    memcpy(out + 4, s, (size_t)len);
  } else {
    memcpy(out + 4, s, 4);
    memcpy(out + 8, &buf_index, 4);
    memcpy(out + 12, &offset, 4);
  }
}

/* The test's random source: xorshift64 (Marsaglia), one state per test
 * program, seeded with tb_seed (any non-zero value). */
static inline uint64_t *tb_rng_state(void) {
  static uint64_t state = 88172645463325252ull;
  return &state;
}
static inline void tb_seed(uint64_t seed) { *tb_rng_state() = seed ? seed : 1; }
static inline uint64_t tb_rnd(void) {
  uint64_t *s = tb_rng_state();
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}
/* Uniform in [0, n), n > 0. */
static inline int tb_rint(int n) { return (int)(tb_rnd() % (uint64_t)n); }
/* Uniform in [0, 1). */
static inline double tb_runif(void) { return (double)(tb_rnd() >> 11) / 9007199254740992.0; }

#endif
