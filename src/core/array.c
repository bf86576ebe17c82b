/*
 * array.c — construction, reference counting, null counts and zero-copy
 * slicing of qv_array. Core layer. Validation lives in validate.c and
 * logical comparison in compare.c.
 */
#include <stdlib.h>
#include <string.h>

#include "quiver/array.h"

qv_array *qv_array_new(qv_type *type, int32_t n_buffers, int32_t n_children) {
  if (n_buffers < 0 || n_children < 0) return NULL;
  qv_array *a = calloc(1, sizeof *a);
  if (a == NULL) return NULL;
  a->refcount_ = 1;
  a->null_count = -1;
  if (n_buffers > 0) {
    a->buffers = calloc((size_t)n_buffers, sizeof *a->buffers);
    if (a->buffers == NULL) goto fail;
  }
  if (n_children > 0) {
    a->children = calloc((size_t)n_children, sizeof *a->children);
    if (a->children == NULL) goto fail;
  }
  a->n_buffers = n_buffers;
  a->n_children = n_children;
  a->type = qv_type_ref(type);
  return a;
fail:
  free(a->buffers);
  free(a->children);
  free(a);
  return NULL;
}

qv_array *qv_array_ref(qv_array *a) {
  if (a != NULL) __atomic_add_fetch(&a->refcount_, 1, __ATOMIC_RELAXED);
  return a;
}

void qv_array_unref(qv_array *a) {
  if (a == NULL) return;
  if (__atomic_sub_fetch(&a->refcount_, 1, __ATOMIC_ACQ_REL) != 0) return;
  for (int32_t i = 0; i < a->n_buffers; i++) qv_buffer_unref(a->buffers[i]);
  for (int32_t i = 0; i < a->n_children; i++) qv_array_unref(a->children[i]);
  qv_array_unref(a->dictionary);
  qv_type_unref(a->type);
  free(a->buffers);
  free(a->children);
  free(a);
}

int64_t qv_array_buffer_bytes(const qv_array *a) {
  int64_t n = 0;
  for (int32_t i = 0; i < a->n_buffers; i++)
    if (a->buffers[i]) n += a->buffers[i]->size;
  for (int32_t i = 0; i < a->n_children; i++) n += qv_array_buffer_bytes(a->children[i]);
  if (a->dictionary) n += qv_array_buffer_bytes(a->dictionary);
  return n;
}

int64_t qv_array_null_count(qv_array *a) {
  int64_t nc = __atomic_load_n(&a->null_count, __ATOMIC_RELAXED);
  if (nc >= 0) return nc;
  switch (a->type->id) {
    case QV_NA: nc = a->length; break;
    case QV_SPARSE_UNION:
    case QV_DENSE_UNION:
    case QV_RUN_END_ENCODED: nc = 0; break;
    default:
      if (a->n_buffers == 0 || a->buffers[0] == NULL || a->length == 0) nc = 0;
      else nc = a->length - qv_bitmap_count(a->buffers[0]->data, a->offset, a->length);
  }
  __atomic_store_n(&a->null_count, nc, __ATOMIC_RELAXED);
  return nc;
}

qv_status qv_array_slice(qv_array *a, int64_t offset, int64_t length, qv_array **out,
                         qv_error *err) {
  int64_t end;
  if (offset < 0 || length < 0 || qv_add_overflow(offset, length, &end) || end > a->length)
    return qv_error_set(err, QV_ERANGE, "slice [%lld, %lld) is outside an array of length %lld",
                        (long long)offset, (long long)(offset + length), (long long)a->length);
  qv_array *s = qv_array_new(a->type, a->n_buffers, a->n_children);
  if (s == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory (slice)");
  for (int32_t i = 0; i < a->n_buffers; i++) s->buffers[i] = qv_buffer_ref(a->buffers[i]);
  for (int32_t i = 0; i < a->n_children; i++) s->children[i] = qv_array_ref(a->children[i]);
  s->dictionary = qv_array_ref(a->dictionary);
  s->offset = a->offset + offset;
  s->length = length;
  s->null_count = (a->null_count == 0 || length == 0) ? 0 : -1;
  if (a->type->id == QV_NA) s->null_count = length;
  *out = s;
  return QV_OK;
}
