/*
 * name_index.c — open-addressing hash index from names to positions in a
 * caller's list (name_index_internal.h): XXH3 hashes, linear probing, the
 * table kept at most half full. Used wherever a per-column lookup by name
 * would otherwise scan every column (features resolution, schema field
 * lookups, column selections), so work on a schema of n columns stays
 * O(n). Core layer.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/name_index_internal.h"

static uint64_t name_hash(const char *s) { return (uint64_t)XXH3_64bits(s, strlen(s)); }

static qv_status grow(qv_name_index *ix, int64_t want, qv_error *err) {
  int64_t cap = ix->cap ? ix->cap : 16;
  while (cap < 2 * want) {
    if (cap > ((int64_t)1 << 40)) return qv_error_set(err, QV_ENOMEM, "name index too large");
    cap *= 2;
  }
  if (cap == ix->cap) return QV_OK;
  int32_t *slots = calloc((size_t)cap, sizeof *slots);
  uint64_t *hashes = malloc((size_t)cap * sizeof *hashes);
  if (slots == NULL || hashes == NULL) {
    free(slots);
    free(hashes);
    return qv_error_set(err, QV_ENOMEM, "out of memory (name index of %lld names)",
                        (long long)want);
  }
  for (int64_t s = 0; s < ix->cap; s++) {
    if (ix->slots[s] == 0) continue;
    int64_t j = (int64_t)(ix->hashes[s] & (uint64_t)(cap - 1));
    while (slots[j] != 0) j = (j + 1) & (cap - 1);
    slots[j] = ix->slots[s];
    hashes[j] = ix->hashes[s];
  }
  free(ix->slots);
  free(ix->hashes);
  ix->slots = slots;
  ix->hashes = hashes;
  ix->cap = cap;
  return QV_OK;
}

qv_status qv_name_index_init(qv_name_index *ix, qv_name_at_fn name_at, const void *ctx,
                             int64_t expect, qv_error *err) {
  memset(ix, 0, sizeof *ix);
  ix->name_at = name_at;
  ix->ctx = ctx;
  return expect > 0 ? grow(ix, expect, err) : QV_OK;
}

/* Slot holding `name` (hash h), or the empty slot where it would go. */
static int64_t probe(const qv_name_index *ix, const char *name, uint64_t h) {
  int64_t j = (int64_t)(h & (uint64_t)(ix->cap - 1));
  while (ix->slots[j] != 0) {
    if (ix->hashes[j] == h && strcmp(ix->name_at(ix->ctx, ix->slots[j] - 1), name) == 0) return j;
    j = (j + 1) & (ix->cap - 1);
  }
  return j;
}

qv_status qv_name_index_add(qv_name_index *ix, int32_t i, int32_t *first, qv_error *err) {
  *first = -1;
  if (i < 0 || i == INT32_MAX)
    return qv_error_set(err, QV_EARG, "qv_name_index_add: bad position %d", (int)i);
  if (2 * (ix->n + 1) > ix->cap) QV_RETURN_NOT_OK(grow(ix, ix->n + 1, err));
  const char *name = ix->name_at(ix->ctx, i);
  uint64_t h = name_hash(name);
  int64_t j = probe(ix, name, h);
  if (ix->slots[j] != 0) {
    *first = ix->slots[j] - 1;
    return QV_OK;
  }
  ix->slots[j] = i + 1;
  ix->hashes[j] = h;
  ix->n++;
  return QV_OK;
}

qv_status qv_name_index_build(qv_name_index *ix, qv_name_at_fn name_at, const void *ctx, int32_t n,
                              qv_error *err) {
  qv_status st = qv_name_index_init(ix, name_at, ctx, n, err);
  for (int32_t i = 0; i < n && st == QV_OK; i++) {
    int32_t first;
    st = qv_name_index_add(ix, i, &first, err);
  }
  if (st != QV_OK) qv_name_index_free(ix);
  return st;
}

int32_t qv_name_index_find(const qv_name_index *ix, const char *name) {
  if (ix->cap == 0 || name == NULL) return -1;
  int64_t j = probe(ix, name, name_hash(name));
  return ix->slots[j] != 0 ? ix->slots[j] - 1 : -1;
}

void qv_name_index_free(qv_name_index *ix) {
  if (ix == NULL) return;
  free(ix->slots);
  free(ix->hashes);
  ix->slots = NULL;
  ix->hashes = NULL;
  ix->cap = ix->n = 0;
}
