/*
 * flatbuf_builder.c — flatbuffers builder (ipc layer, used by the Arrow
 * metadata encoders in metadata_encode.c and by tests to craft inputs).
 *
 * Objects are written back to front: the buffer fills from its end towards
 * its start, children before parents, so every uoffset points forward as
 * the format requires. A position is remembered as its distance from the
 * end (`used` when the object was finished), which stays valid when the
 * buffer grows. Alignment is computed against that distance; finish pads
 * the front so the total size is a multiple of the largest alignment, which
 * makes every object aligned relative to the buffer start too.
 */
#include "ipc/flatbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FB_INITIAL_CAPACITY 1024
#define FB_MAX_BUFFER ((int64_t)INT32_MAX - 8) /* offsets are 31-bit */

static void fb_fail(qv_fb_builder *b, qv_status st, const char *msg) {
  if (b->status != QV_OK) return;
  b->status = st;
  snprintf(b->error, sizeof b->error, "flatbuffer builder: %s", msg);
}

void qv_fb_builder_init(qv_fb_builder *b) {
  memset(b, 0, sizeof *b);
  b->minalign = 1;
}

void qv_fb_builder_reset(qv_fb_builder *b) {
  free(b->buf);
  qv_fb_builder_init(b);
}

/* Make room for n more bytes at the front. */
static bool fb_reserve(qv_fb_builder *b, int64_t n) {
  if (b->status != QV_OK) return false;
  if (n < 0 || n > FB_MAX_BUFFER - b->used) {
    fb_fail(b, QV_ENOMEM, "buffer would exceed 2 GiB");
    return false;
  }
  if (b->used + n <= b->cap) return true;
  int64_t cap = b->cap ? b->cap : FB_INITIAL_CAPACITY;
  while (cap < b->used + n) cap = cap > FB_MAX_BUFFER / 2 ? FB_MAX_BUFFER : cap * 2;
  uint8_t *nb = malloc((size_t)cap);
  if (!nb) {
    fb_fail(b, QV_ENOMEM, "out of memory");
    return false;
  }
  /* Keep the data at the end of the new allocation. */
  if (b->used) memcpy(nb + cap - b->used, b->buf + b->cap - b->used, (size_t)b->used);
  free(b->buf);
  b->buf = nb;
  b->cap = cap;
  return true;
}

/* Pointer to the byte at distance `ref` from the end. */
static uint8_t *fb_at(qv_fb_builder *b, int64_t ref) { return b->buf + b->cap - ref; }

/* Push n bytes (src may be NULL for zeros) to the front. */
static bool fb_push(qv_fb_builder *b, const void *src, int64_t n) {
  if (n == 0) return b->status == QV_OK;
  if (!fb_reserve(b, n)) return false;
  b->used += n;
  if (src) memcpy(fb_at(b, b->used), src, (size_t)n);
  else memset(fb_at(b, b->used), 0, (size_t)n);
  return true;
}

/* Pad so that after `additional` more bytes, the front is aligned. */
static bool fb_prep(qv_fb_builder *b, int64_t align, int64_t additional) {
  if (align > b->minalign) b->minalign = align;
  int64_t pad = (align - ((b->used + additional) % align)) % align;
  return fb_push(b, NULL, pad);
}

static void fb_put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void fb_put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void fb_put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Push a uoffset at the (4-aligned) front that points to `ref`. */
static bool fb_push_uoffset(qv_fb_builder *b, qv_fb_ref ref) {
  if (!fb_prep(b, 4, 4) || !fb_push(b, NULL, 4)) return false;
  if (ref == 0 || (int64_t)ref >= b->used) {
    fb_fail(b, QV_EARG, "offset to an object that is not finished");
    return false;
  }
  fb_put_u32(fb_at(b, b->used), (uint32_t)(b->used - ref));
  return true;
}

qv_fb_ref qv_fb_create_string(qv_fb_builder *b, const char *s, int64_t len) {
  if (b->in_table) fb_fail(b, QV_EARG, "string created inside a table");
  if (len < 0 || len > UINT32_MAX) fb_fail(b, QV_EARG, "invalid string length");
  if (!fb_prep(b, 4, len + 1)) return 0;
  if (!fb_push(b, NULL, 1)) return 0; /* the NUL terminator */
  if (!fb_push(b, s, len)) return 0;
  if (!fb_push(b, NULL, 4)) return 0;
  fb_put_u32(fb_at(b, b->used), (uint32_t)len);
  return (qv_fb_ref)b->used;
}

qv_fb_ref qv_fb_create_vector(qv_fb_builder *b, const void *elems, int64_t count, int64_t elem_size,
                              int64_t align) {
  int64_t bytes;
  if (b->in_table) fb_fail(b, QV_EARG, "vector created inside a table");
  if (count < 0 || count > UINT32_MAX || elem_size <= 0 || align <= 0 ||
      qv_mul_overflow(count, elem_size, &bytes)) {
    fb_fail(b, QV_EARG, "invalid vector shape");
    return 0;
  }
  /* Length prefix 4-aligned, elements aligned to their own alignment. */
  if (!fb_prep(b, 4, bytes) || !fb_prep(b, align, bytes)) return 0;
  if (!fb_push(b, elems, bytes)) return 0;
  if (!fb_push(b, NULL, 4)) return 0;
  fb_put_u32(fb_at(b, b->used), (uint32_t)count);
  return (qv_fb_ref)b->used;
}

qv_fb_ref qv_fb_create_vector_refs(qv_fb_builder *b, const qv_fb_ref *refs, int64_t count) {
  if (b->in_table) fb_fail(b, QV_EARG, "vector created inside a table");
  if (count < 0 || count > UINT32_MAX / 4) {
    fb_fail(b, QV_EARG, "invalid vector length");
    return 0;
  }
  if (!fb_prep(b, 4, 4 * count)) return 0;
  /* Elements are pushed last to first so element 0 ends up at the front. */
  for (int64_t i = count - 1; i >= 0; i--) {
    if (!fb_push_uoffset(b, refs[i])) return 0;
  }
  if (!fb_push(b, NULL, 4)) return 0;
  fb_put_u32(fb_at(b, b->used), (uint32_t)count);
  return (qv_fb_ref)b->used;
}

void qv_fb_start_table(qv_fb_builder *b) {
  if (b->in_table) {
    fb_fail(b, QV_EARG, "nested table construction");
    return;
  }
  b->in_table = true;
  b->table_start = b->used;
  b->n_slots = 0;
  memset(b->slot_ref, 0, sizeof b->slot_ref);
}

/* Record that the field at the current front is `slot`. */
static void fb_track(qv_fb_builder *b, int slot) {
  if (b->status != QV_OK) return;
  b->slot_ref[slot] = (uint32_t)b->used;
  if (slot + 1 > b->n_slots) b->n_slots = slot + 1;
}

static bool fb_check_slot(qv_fb_builder *b, int slot) {
  if (!b->in_table) {
    fb_fail(b, QV_EARG, "field added outside a table");
    return false;
  }
  if (slot < 0 || slot >= QV_FB_BUILDER_MAX_SLOTS) {
    fb_fail(b, QV_EARG, "field slot out of range");
    return false;
  }
  return b->status == QV_OK;
}

/* Push an inline scalar of n bytes (little-endian in `le`). */
static void fb_add_scalar(qv_fb_builder *b, int slot, const uint8_t *le, int64_t n) {
  if (!fb_check_slot(b, slot)) return;
  if (!fb_prep(b, n, n) || !fb_push(b, le, n)) return;
  fb_track(b, slot);
}

void qv_fb_add_u8(qv_fb_builder *b, int slot, uint8_t v, uint8_t def) {
  if (v != def) fb_add_scalar(b, slot, &v, 1);
}
void qv_fb_add_bool(qv_fb_builder *b, int slot, bool v, bool def) {
  qv_fb_add_u8(b, slot, v ? 1 : 0, def ? 1 : 0);
}
void qv_fb_add_i16(qv_fb_builder *b, int slot, int16_t v, int16_t def) {
  uint8_t le[2];
  if (v == def) return;
  fb_put_u16(le, (uint16_t)v);
  fb_add_scalar(b, slot, le, 2);
}
void qv_fb_add_i32(qv_fb_builder *b, int slot, int32_t v, int32_t def) {
  uint8_t le[4];
  if (v == def) return;
  fb_put_u32(le, (uint32_t)v);
  fb_add_scalar(b, slot, le, 4);
}
void qv_fb_add_i64(qv_fb_builder *b, int slot, int64_t v, int64_t def) {
  uint8_t le[8];
  if (v == def) return;
  fb_put_u64(le, (uint64_t)v);
  fb_add_scalar(b, slot, le, 8);
}

void qv_fb_add_ref(qv_fb_builder *b, int slot, qv_fb_ref ref) {
  if (ref == 0 || !fb_check_slot(b, slot)) return;
  if (fb_push_uoffset(b, ref)) fb_track(b, slot);
}

qv_fb_ref qv_fb_end_table(qv_fb_builder *b) {
  if (!b->in_table) fb_fail(b, QV_EARG, "end_table without start_table");
  b->in_table = false;
  /* The soffset to the vtable, patched once the vtable is placed. */
  if (!fb_prep(b, 4, 4) || !fb_push(b, NULL, 4)) return 0;
  int64_t table_ref = b->used;
  int64_t object_size = table_ref - b->table_start;
  if (object_size > UINT16_MAX) {
    fb_fail(b, QV_EARG, "table object exceeds 65535 bytes");
    return 0;
  }
  uint8_t vtable[4 + 2 * QV_FB_BUILDER_MAX_SLOTS];
  int64_t vsize = 4 + 2 * (int64_t)b->n_slots;
  fb_put_u16(vtable, (uint16_t)vsize);
  fb_put_u16(vtable + 2, (uint16_t)object_size);
  for (int i = 0; i < b->n_slots; i++) {
    uint16_t off = b->slot_ref[i] ? (uint16_t)(table_ref - b->slot_ref[i]) : 0;
    fb_put_u16(vtable + 4 + 2 * i, off);
  }
  /* The vtable goes right before the table (front is 4-aligned here). */
  if (!fb_push(b, vtable, vsize)) return 0;
  int64_t vtable_ref = b->used;
  /* vtable = table - soffset, with positions counted from the start. */
  fb_put_u32(fb_at(b, table_ref), (uint32_t)(int32_t)(vtable_ref - table_ref));
  return (qv_fb_ref)table_ref;
}

qv_status qv_fb_builder_finish(qv_fb_builder *b, qv_fb_ref root, const uint8_t **out,
                               int64_t *out_size, qv_error *err) {
  if (b->in_table) fb_fail(b, QV_EARG, "finish inside a table");
  if (b->minalign < 8) b->minalign = 8;
  if (fb_prep(b, b->minalign, 4)) fb_push_uoffset(b, root);
  if (b->status != QV_OK) return qv_error_set(err, b->status, "%s", b->error);
  *out = fb_at(b, b->used);
  *out_size = b->used;
  return QV_OK;
}
