/*
 * qv_arrays.h — small builders for hand-made types, buffers and arrays in
 * unit tests (validate, loader). Everything is static; ownership follows
 * the library's rules (constructors take over the references passed in).
 */
#ifndef QV_ARRAYS_H
#define QV_ARRAYS_H

#include <stdarg.h>
#include <string.h>

#include "quiver/array.h"

/* Heap copy of n bytes. */
static inline qv_buffer *tb_buf(const void *data, int64_t n) {
  qv_buffer *b = NULL;
  if (qv_buffer_alloc(n, &b, NULL) != QV_OK) return NULL;
  if (n > 0) memcpy(b->data, data, (size_t)n);
  return b;
}

/* A new type with no parameters. */
static inline qv_type *tb_type(qv_type_id id) { return qv_type_new(id); }

/* Add a child (type reference taken). Returns t. */
static inline qv_type *tb_child(qv_type *t, const char *name, qv_type *child) {
  qv_type_add_child(t, name, true, child, NULL, NULL);
  return t;
}

/* An array of type t (reference taken) with nb buffers and nc children,
 * all references taken. Buffers may be NULL. */
static inline qv_array *tb_array(qv_type *t, int64_t length, int64_t null_count, int nb,
                          qv_buffer **bufs, int nc, qv_array **children) {
  qv_array *a = qv_array_new(t, nb, nc);
  qv_type_unref(t);
  a->length = length;
  a->null_count = null_count;
  for (int i = 0; i < nb; i++) a->buffers[i] = bufs[i];
  for (int i = 0; i < nc; i++) a->children[i] = children[i];
  return a;
}

/* Primitive array [validity?, values]. */
static inline qv_array *tb_prim(qv_type_id id, int64_t length, int64_t null_count,
                         const uint8_t *validity, int64_t vbytes,
                         const void *values, int64_t nbytes) {
  qv_buffer *b[2] = {validity ? tb_buf(validity, vbytes) : NULL,
                     tb_buf(values, nbytes)};
  return tb_array(tb_type(id), length, null_count, 2, b, 0, NULL);
}

static inline qv_array *tb_int32(const int32_t *v, int64_t n) {
  return tb_prim(QV_INT32, n, 0, NULL, 0, v, n * 4);
}

/* [validity?, offsets(int32), data] string/binary array. */
static inline qv_array *tb_str(qv_type_id id, int64_t length, int64_t null_count,
                        const uint8_t *validity, const int32_t *offsets,
                        const char *data, int64_t data_len) {
  qv_buffer *b[3] = {validity ? tb_buf(validity, (length + 7) / 8) : NULL,
                     tb_buf(offsets, (length + 1) * 4), tb_buf(data, data_len)};
  return tb_array(tb_type(id), length, null_count, 3, b, 0, NULL);
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

#endif /* QV_ARRAYS_H */
