/*
 * grouper.c — compute layer: the grouper (quiver/compute.h), mapping keys
 * to dense group ids 0, 1, 2... in order of first appearance. Group-by and
 * distinct (unique.c) sit on it; it sits on the row table (row.h).
 *
 * Each batch of keys is processed in minibatches of GROUPER_MINIBATCH
 * rows: the keys are encoded into a scratch row table (`batch`), hashed
 * with qv_row_hash_rows64, and probed one by one in a swiss-table style
 * hash table:
 *  - the table is an array of blocks of 8 slots; a slot holds a control
 *    byte (0x80 empty, else a 7-bit tag from the low bits of the hash) and
 *    a 32-bit group id; the block to start from comes from the hash's high
 *    bits, and probing moves to the next block (linear, wrapping);
 *  - the 8 control bytes of a block are matched against the tag in one
 *    64-bit word (SWAR), then each candidate is confirmed by its full
 *    64-bit hash and by comparing encoded rows (null masks and bytes: the
 *    row encoding is canonical, so equal bytes mean equal keys, NULL equal
 *    to NULL);
 *  - a block with an empty slot ends the probe (slots are never freed), and
 *    a new group takes that slot.
 * Groups created in the current minibatch still live in `batch`; they are
 * appended to the group table (`groups`, one encoded row per group) in one
 * call at the end of the minibatch. The table doubles when it would be
 * more than 3/4 full, re-placing groups by their stored hashes.
 *
 * Keys the row table cannot store are normalised first: binary/string
 * views are copied into large_binary arrays; dictionary columns become a
 * uint32 column of "value ids" from an inner grouper over the dictionary
 * values (kept per key, with the last dictionary's index -> value id map
 * cached while batches share the dictionary array), so keys are grouped by
 * decoded value even when chunks carry different dictionaries.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/compute_internal.h"
#include "core/guard_internal.h"
#include "quiver/row.h"

#define GROUPER_MINIBATCH 4096
#define CTRL_EMPTY 0x80
#define INITIAL_BLOCKS 8
#define LSB_BYTES 0x0101010101010101ull
#define MSB_BYTES 0x8080808080808080ull

typedef struct dict_state {
  qv_grouper *values; /* grouper over the dictionary's value type */
  qv_array *cached;   /* the dictionary `map` was built for (a reference) */
  uint32_t *map;      /* dictionary index -> value id (QV_GROUP_NONE: null) */
  int64_t map_len;
} dict_state;

struct qv_grouper {
  int32_t n_keys;
  qv_type **types;     /* declared key types (references) */
  qv_type **enc_types; /* types as encoded in rows (references) */
  dict_state *dicts;   /* per key; .values NULL for non-dictionary keys */
  qv_row_metadata md;
  qv_row_table groups; /* one encoded row per group */
  qv_row_table batch;  /* the current minibatch */
  uint64_t *group_hash;
  int64_t n_groups, hash_cap;
  uint8_t *ctrl;   /* n_blocks * 8 control bytes */
  uint32_t *slots; /* n_blocks * 8 group ids */
  int64_t n_blocks;
  int shift;    /* 64 - log2(n_blocks) */
  int64_t *sel; /* minibatch scratch */
  uint64_t *hashes;
  int64_t *pending; /* batch rows of the groups created in this minibatch */
};

/* ------------------------------------------------------------------------ */
/* Hash table                                                                */

/* High bit of each byte of `word` that equals `tag` (exact, no carries). */
static inline uint64_t match_tag(uint64_t word, uint8_t tag) {
  uint64_t x = word ^ (LSB_BYTES * tag);
  return ~(((x & ~MSB_BYTES) + ~MSB_BYTES) | x | ~MSB_BYTES);
}

static qv_status table_alloc(qv_grouper *g, int64_t n_blocks, qv_error *err) {
  uint8_t *ctrl = malloc((size_t)n_blocks * 8);
  uint32_t *slots = malloc((size_t)n_blocks * 8 * sizeof(uint32_t));
  if (!ctrl || !slots) {
    free(ctrl);
    free(slots);
    return qv_error_set(err, QV_ENOMEM, "grouper: out of memory (hash table of %" PRId64 " slots)",
                        n_blocks * 8);
  }
  memset(ctrl, CTRL_EMPTY, (size_t)n_blocks * 8);
  free(g->ctrl);
  free(g->slots);
  g->ctrl = ctrl;
  g->slots = slots;
  g->n_blocks = n_blocks;
  g->shift = 64 - __builtin_ctzll((uint64_t)n_blocks);
  return QV_OK;
}

/* Place group `id` with hash h in its first empty slot. */
static void table_place(qv_grouper *g, uint64_t h, uint32_t id) {
  uint64_t mask = (uint64_t)g->n_blocks - 1;
  for (uint64_t b = h >> g->shift;; b = (b + 1) & mask) {
    uint64_t word;
    memcpy(&word, g->ctrl + b * 8, 8);
    uint64_t empty = word & MSB_BYTES;
    if (empty) {
      int s = __builtin_ctzll(empty) >> 3;
      g->ctrl[b * 8 + s] = (uint8_t)(h & 0x7f);
      g->slots[b * 8 + s] = id;
      return;
    }
  }
}

static qv_status table_grow(qv_grouper *g, qv_error *err) {
  QV_RETURN_NOT_OK(table_alloc(g, g->n_blocks * 2, err));
  for (int64_t i = 0; i < g->n_groups; i++) table_place(g, g->group_hash[i], (uint32_t)i);
  return QV_OK;
}

/* Row of group `id`: committed groups live in `groups`, groups created in
 * this minibatch (id >= committed) in `batch`. */
static inline const uint8_t *group_row(const qv_grouper *g, uint32_t id, int64_t committed,
                                       int64_t *len, const uint8_t **mask) {
  int64_t npr = g->md.null_masks_bytes_per_row;
  if ((int64_t)id < committed) {
    *mask = g->groups.null_masks + (int64_t)id * npr;
    return qv_row_table_row(&g->groups, id, len);
  }
  int64_t r = g->pending[id - committed];
  *mask = g->batch.null_masks + r * npr;
  return qv_row_table_row(&g->batch, r, len);
}

static inline uint64_t load64(const uint8_t *p) {
  uint64_t x;
  memcpy(&x, p, 8);
  return x;
}

/* Null masks of npr bytes (a power of two) are equal. */
static inline bool same_mask(const uint8_t *a, const uint8_t *b, int64_t npr) {
  switch (npr) {
    case 1: return a[0] == b[0];
    case 2: return a[0] == b[0] && a[1] == b[1];
    case 4: return memcmp(a, b, 4) == 0;
    case 8: return load64(a) == load64(b);
    default: return memcmp(a, b, (size_t)npr) == 0;
  }
}

static inline bool same_key(const qv_grouper *g, uint32_t id, int64_t committed, int64_t i) {
  int64_t la, lb, npr = g->md.null_masks_bytes_per_row;
  const uint8_t *ma, *mb = g->batch.null_masks + i * npr;
  const uint8_t *a = group_row(g, id, committed, &la, &ma);
  const uint8_t *b = qv_row_table_row(&g->batch, i, &lb);
  if (!same_mask(ma, mb, npr)) return false;
  if (g->md.is_fixed_length) { /* rows are a multiple of 8 bytes (row_alignment) */
    for (int64_t w = 0; w < la; w += 8)
      if (load64(a + w) != load64(b + w)) return false;
    return true;
  }
  return la == lb && memcmp(a, b, (size_t)la) == 0;
}

/* Find batch row i's group; QV_GROUP_NONE with out_block and out_slot set
 * to the empty slot where it would go. */
static inline uint32_t probe(const qv_grouper *g, uint64_t h, int64_t i, int64_t committed,
                             uint64_t *out_block, int *out_slot) {
  uint64_t mask = (uint64_t)g->n_blocks - 1;
  uint8_t tag = (uint8_t)(h & 0x7f);
  for (uint64_t b = h >> g->shift;; b = (b + 1) & mask) {
    uint64_t word;
    memcpy(&word, g->ctrl + b * 8, 8);
    for (uint64_t m = match_tag(word, tag); m; m &= m - 1) {
      int s = __builtin_ctzll(m) >> 3;
      uint32_t id = g->slots[b * 8 + s];
      if (g->group_hash[id] == h && same_key(g, id, committed, i)) return id;
    }
    uint64_t empty = word & MSB_BYTES;
    if (empty) {
      *out_block = b;
      *out_slot = __builtin_ctzll(empty) >> 3;
      return QV_GROUP_NONE;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Key normalisation                                                         */

/* Bytes of view element p (offset applied) with bounds checks. */
/* Bytes of logical element i of a view array (quiver/array.h's
 * bounds-checked qv_array_view_bytes), or an error naming it. */
static qv_status view_bytes(const qv_array *a, int64_t i, const uint8_t **out, int64_t *len,
                            qv_error *err) {
  int32_t n = 0;
  if (!qv_array_view_bytes(a, i, out, &n))
    return qv_error_set(err, QV_EINVAL,
                        "grouper: view %" PRId64
                        " has a negative length or points outside "
                        "its data buffers",
                        a->offset + i);
  *len = n;
  return QV_OK;
}

static qv_status new_buf(int64_t size, qv_buffer **out, qv_error *err) {
  return qv_buffer_alloc(size, out, err);
}

/* A large_binary copy of a view array (offset 0). */
static qv_status views_to_large(const qv_array *a, qv_type *large_type, qv_array **out,
                                qv_error *err) {
  int64_t n = a->length, total = 0;
  if (n > 0 &&
      (a->n_buffers < 2 || !a->buffers[1] || a->buffers[1]->size < (a->offset + n) * QV_VIEW_SIZE))
    return qv_error_set(err, QV_EINVAL, "grouper: views buffer too small");
  bool has_valid = a->buffers[0] != NULL;
  for (int64_t i = 0; i < n; i++) {
    if (has_valid && !qv_bit_get(a->buffers[0]->data, a->offset + i)) continue;
    const uint8_t *p;
    int64_t len;
    QV_RETURN_NOT_OK(view_bytes(a, i, &p, &len, err));
    total += len;
  }
  qv_array *r = qv_array_new(large_type, 3, 0);
  if (!r) return qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
  r->length = n;
  r->null_count = -1;
  qv_status st = QV_OK;
  if (has_valid && (st = new_buf((n + 7) / 8, &r->buffers[0], err)) == QV_OK)
    qv_bitmap_copy(r->buffers[0]->data, 0, a->buffers[0]->data, a->offset, n);
  if (st == QV_OK) st = new_buf((n + 1) * 8, &r->buffers[1], err);
  if (st == QV_OK) st = new_buf(total, &r->buffers[2], err);
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  int64_t *offs = (int64_t *)(void *)r->buffers[1]->data, pos = 0;
  for (int64_t i = 0; i < n; i++) {
    offs[i] = pos;
    if (has_valid && !qv_bit_get(a->buffers[0]->data, a->offset + i)) continue;
    const uint8_t *p;
    int64_t len;
    (void)view_bytes(a, i, &p, &len, NULL); /* checked by the sizing pass */
    memcpy(r->buffers[2]->data + pos, p, (size_t)len);
    pos += len;
  }
  offs[n] = pos;
  *out = r;
  return QV_OK;
}

/* A uint32 column of value ids for a dictionary key column. */
static qv_status dict_to_ids(dict_state *ds, const qv_array *a, qv_type *u32, qv_array **out,
                             qv_error *err) {
  qv_array *d = a->dictionary;
  if (d == NULL) return qv_error_set(err, QV_EINVAL, "grouper: dictionary array has no dictionary");
  if (d != ds->cached) {
    uint32_t *map = malloc(sizeof(uint32_t) * (size_t)(d->length ? d->length : 1));
    if (!map) return qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
    qv_status st = qv_grouper_consume(ds->values, &d, map, err);
    if (st != QV_OK) {
      free(map);
      return st;
    }
    if (d->type->id == QV_NA) {
      for (int64_t j = 0; j < d->length; j++) map[j] = QV_GROUP_NONE;
    } else if (d->n_buffers > 0 && d->buffers[0]) {
      for (int64_t j = 0; j < d->length; j++)
        if (!qv_bit_get(d->buffers[0]->data, d->offset + j)) map[j] = QV_GROUP_NONE;
    }
    free(ds->map);
    qv_array_unref(ds->cached);
    ds->map = map;
    ds->map_len = d->length;
    ds->cached = qv_array_ref(d);
  }
  int64_t n = a->length;
  int iw = qv_type_byte_width(a->type->index_type);
  if (n > 0 && (a->n_buffers < 2 || !a->buffers[1] || a->buffers[1]->size < (a->offset + n) * iw))
    return qv_error_set(err, QV_EINVAL, "grouper: dictionary indices buffer too small");
  qv_array *r = qv_array_new(u32, 2, 0);
  if (!r) return qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
  r->length = n;
  r->null_count = -1;
  qv_status st = new_buf((n + 7) / 8, &r->buffers[0], err);
  if (st == QV_OK) st = new_buf(4 * n, &r->buffers[1], err);
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  uint32_t *ids = (uint32_t *)(void *)r->buffers[1]->data;
  const uint8_t *valid = a->buffers[0] ? a->buffers[0]->data : NULL;
  for (int64_t i = 0; i < n; i++) {
    ids[i] = 0;
    if (valid && !qv_bit_get(valid, a->offset + i)) continue;
    int64_t x = qv_array_int_at(a, i); /* the index, any width (quiver/array.h) */
    if (x < 0 || x >= ds->map_len) {
      qv_array_unref(r);
      return qv_error_set(err, QV_EINVAL,
                          "grouper: dictionary index %" PRId64 " at row %" PRId64
                          " is outside the %" PRId64 "-value dictionary",
                          x, i, ds->map_len);
    }
    if (ds->map[x] == QV_GROUP_NONE) continue;
    ids[i] = ds->map[x];
    qv_bit_set(r->buffers[0]->data, i);
  }
  *out = r;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Lifetime                                                                  */

void qv_grouper_free(qv_grouper *g) {
  if (!g) return;
  for (int32_t j = 0; j < g->n_keys; j++) {
    if (g->types) qv_type_unref(g->types[j]);
    if (g->enc_types) qv_type_unref(g->enc_types[j]);
    if (g->dicts) {
      qv_grouper_free(g->dicts[j].values);
      qv_array_unref(g->dicts[j].cached);
      free(g->dicts[j].map);
    }
  }
  free(g->types);
  free(g->enc_types);
  free(g->dicts);
  qv_row_metadata_reset(&g->md);
  qv_row_table_reset(&g->groups);
  qv_row_table_reset(&g->batch);
  free(g->group_hash);
  free(g->ctrl);
  free(g->slots);
  free(g->sel);
  free(g->hashes);
  free(g->pending);
  free(g);
}

qv_status qv_grouper_new(qv_type *const *key_types, int32_t n_keys, qv_grouper **out,
                         qv_error *err) {
  if (n_keys < 1 || !key_types)
    return qv_error_set(err, QV_EARG, "grouper: at least one key is needed (got %d)", n_keys);
  qv_grouper *g = calloc(1, sizeof *g);
  if (!g) return qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
  g->n_keys = n_keys;
  g->types = calloc((size_t)n_keys, sizeof *g->types);
  g->enc_types = calloc((size_t)n_keys, sizeof *g->enc_types);
  g->dicts = calloc((size_t)n_keys, sizeof *g->dicts);
  g->sel = malloc(sizeof(int64_t) * GROUPER_MINIBATCH);
  g->hashes = malloc(sizeof(uint64_t) * GROUPER_MINIBATCH);
  g->pending = malloc(sizeof(int64_t) * GROUPER_MINIBATCH);
  qv_status st = QV_OK;
  if (!g->types || !g->enc_types || !g->dicts || !g->sel || !g->hashes || !g->pending) {
    st = qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
    goto fail;
  }
  for (int32_t j = 0; j < n_keys; j++) {
    qv_type *t = key_types[j];
    g->types[j] = qv_type_ref(t);
    if (t->id == QV_BINARY_VIEW || t->id == QV_STRING_VIEW) {
      g->enc_types[j] = qv_type_new(QV_LARGE_BINARY);
    } else if (t->id == QV_DICTIONARY) {
      g->enc_types[j] = qv_type_new(QV_UINT32);
      qv_type *vt = t->value_type;
      if ((st = qv_grouper_new(&vt, 1, &g->dicts[j].values, err)) != QV_OK) {
        qv_error_prefix(err, st, "dictionary values of key %d: ", j);
        goto fail;
      }
    } else {
      qv_row_column_meta m;
      if ((st = qv_row_column_meta_from_type(t, &m, err)) != QV_OK) {
        char name[128];
        qv_type_to_string(t, name, sizeof name);
        st =
            qv_error_set(err, QV_ETYPE, "grouper: key %d: cannot group values of type %s", j, name);
        goto fail;
      }
      g->enc_types[j] = qv_type_ref(t);
    }
    if (!g->enc_types[j]) {
      st = qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
      goto fail;
    }
  }
  if ((st = qv_row_metadata_from_types(&g->md, g->enc_types, n_keys, 8, 8, err)) != QV_OK ||
      (st = qv_row_table_init(&g->groups, &g->md, err)) != QV_OK ||
      (st = qv_row_table_init(&g->batch, &g->md, err)) != QV_OK ||
      (st = table_alloc(g, INITIAL_BLOCKS, err)) != QV_OK)
    goto fail;
  *out = g;
  return QV_OK;
fail:
  qv_grouper_free(g);
  return st;
}

int64_t qv_grouper_num_groups(const qv_grouper *g) { return g->n_groups; }

/* ------------------------------------------------------------------------ */
/* Consume / lookup                                                          */

static qv_status reserve_hashes(qv_grouper *g, int64_t need, qv_error *err) {
  if (need <= g->hash_cap) return QV_OK;
  int64_t cap = g->hash_cap ? g->hash_cap : 1024;
  while (cap < need) cap *= 2;
  uint64_t *h = realloc(g->group_hash, sizeof(uint64_t) * (size_t)cap);
  if (!h) return qv_error_set(err, QV_ENOMEM, "grouper: out of memory (%" PRId64 " groups)", need);
  g->group_hash = h;
  g->hash_cap = cap;
  return QV_OK;
}

static qv_status run(qv_grouper *g, qv_array *const *keys, uint32_t *out_ids, bool insert,
                     qv_error *err) {
  if (!keys) return qv_error_set(err, QV_EARG, "grouper: keys are NULL");
  int32_t nk = g->n_keys;
  int64_t n = -1;
  for (int32_t j = 0; j < nk; j++) {
    if (!keys[j]) return qv_error_set(err, QV_EARG, "grouper: key %d is NULL", j);
    if (!qv_type_equals(keys[j]->type, g->types[j], false)) {
      char got[128], want[128];
      qv_type_to_string(keys[j]->type, got, sizeof got);
      qv_type_to_string(g->types[j], want, sizeof want);
      return qv_error_set(err, QV_ETYPE, "grouper: key %d has type %s, expected %s", j, got, want);
    }
    if (n >= 0 && keys[j]->length != n)
      return qv_error_set(err, QV_EARG,
                          "grouper: key %d has %" PRId64 " rows but key 0 has %" PRId64, j,
                          keys[j]->length, n);
    n = keys[j]->length;
  }
  if (n > 0 && !out_ids) return qv_error_set(err, QV_EARG, "grouper: out_ids is NULL");
  qv_array **cols = calloc((size_t)(nk > 0 ? nk : 1), sizeof *cols);
  if (!cols) return qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
  qv_status st = QV_OK;
  for (int32_t j = 0; j < nk && st == QV_OK; j++) {
    qv_type_id id = g->types[j]->id;
    if (id == QV_BINARY_VIEW || id == QV_STRING_VIEW)
      st = views_to_large(keys[j], g->enc_types[j], &cols[j], err);
    else if (id == QV_DICTIONARY)
      st = dict_to_ids(&g->dicts[j], keys[j], g->enc_types[j], &cols[j], err);
    else cols[j] = qv_array_ref(keys[j]);
  }
  for (int64_t base = 0; base < n && st == QV_OK; base += GROUPER_MINIBATCH) {
    int64_t m = n - base < GROUPER_MINIBATCH ? n - base : GROUPER_MINIBATCH;
    for (int64_t i = 0; i < m; i++) g->sel[i] = base + i;
    if ((st = qv_row_encode(&g->batch, cols, g->sel, m, err)) != QV_OK) break;
    if ((st = qv_row_hash_rows64(&g->batch, NULL, m, g->hashes, err)) != QV_OK) break;
    int64_t committed = g->n_groups, npend = 0;
    for (int64_t i = 0; i < m; i++) {
      uint64_t h = g->hashes[i], blk = 0;
      int slot = 0;
      uint32_t id = probe(g, h, i, committed, &blk, &slot);
      if (id == QV_GROUP_NONE && insert) {
        if (g->n_groups >= (int64_t)QV_GROUP_NONE) {
          st = qv_error_set(err, QV_ERANGE, "grouper: more than %" PRIu32 " groups",
                            (uint32_t)(QV_GROUP_NONE - 1));
          break;
        }
        if ((st = reserve_hashes(g, g->n_groups + 1, err)) != QV_OK) break;
        id = (uint32_t)g->n_groups++;
        g->group_hash[id] = h;
        g->pending[npend++] = i;
        if (g->n_groups * 4 > g->n_blocks * 8 * 3) {
          if ((st = table_grow(g, err)) != QV_OK) break;
        } else {
          g->ctrl[blk * 8 + slot] = (uint8_t)(h & 0x7f);
          g->slots[blk * 8 + slot] = id;
        }
      }
      out_ids[base + i] = id;
    }
    if (npend > 0) {
      qv_status ast =
          qv_row_table_append_selection_from(&g->groups, &g->batch, g->pending, npend, err);
      if (st == QV_OK) st = ast;
      if (ast != QV_OK) g->n_groups = committed; /* keep table and rows consistent */
    }
  }
  for (int32_t j = 0; j < nk; j++) qv_array_unref(cols[j]);
  free(cols);
  return st;
}

/* run() under the mapped-read guard (core guard.c), after the keys'
 * mapped buffers are checked; the grouper's state is the caller's. */
typedef struct run_call {
  qv_grouper *g;
  qv_array *const *keys;
  uint32_t *out_ids;
  bool insert;
} run_call;

static qv_status run_body(void *ctx, qv_error *err) {
  run_call *c = ctx;
  return run(c->g, c->keys, c->out_ids, c->insert, err);
}

static qv_status guarded_run(qv_grouper *g, qv_array *const *keys, uint32_t *out_ids, bool insert,
                             qv_error *err) {
  run_call c = {g, keys, out_ids, insert};
  return qv_guard_run_checked((const qv_array *const *)keys, keys ? g->n_keys : 0, run_body, &c,
                              err);
}

qv_status qv_grouper_consume(qv_grouper *g, qv_array *const *keys, uint32_t *out_ids,
                             qv_error *err) {
  return guarded_run(g, keys, out_ids, true, err);
}

qv_status qv_grouper_lookup(qv_grouper *g, qv_array *const *keys, uint32_t *out_ids,
                            qv_error *err) {
  return guarded_run(g, keys, out_ids, false, err);
}

/* ------------------------------------------------------------------------ */
/* Uniques                                                                   */

/* A view array of type `t` holding the values of large_binary `src`. */
static qv_status large_to_views(const qv_array *src, qv_type *t, qv_array **out, qv_error *err) {
  int64_t n = src->length;
  const int64_t *offs = (const int64_t *)(const void *)src->buffers[1]->data;
  int64_t total = offs[n] - offs[0];
  if (total > INT32_MAX)
    return qv_error_set(err, QV_ERANGE, "grouper: %" PRId64 " bytes of view data exceed one buffer",
                        total);
  qv_array *r = qv_array_new(t, 3, 0);
  if (!r) return qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
  r->length = n;
  r->null_count = -1;
  qv_status st = QV_OK;
  if (src->buffers[0]) {
    r->buffers[0] = qv_buffer_ref(src->buffers[0]);
    r->offset = 0;
  }
  if (st == QV_OK) st = new_buf(n * QV_VIEW_SIZE, &r->buffers[1], err);
  if (st == QV_OK) r->buffers[2] = qv_buffer_ref(src->buffers[2]);
  if (st != QV_OK) {
    qv_array_unref(r);
    return st;
  }
  for (int64_t i = 0; i < n; i++) {
    uint8_t *v = r->buffers[1]->data + i * QV_VIEW_SIZE;
    int32_t len = (int32_t)(offs[i + 1] - offs[i]), off = (int32_t)offs[i], zero = 0;
    memcpy(v, &len, 4);
    if (len <= QV_VIEW_INLINE_MAX) {
      memcpy(v + 4, src->buffers[2]->data + off, (size_t)len);
    } else {
      memcpy(v + 4, src->buffers[2]->data + off, 4);
      memcpy(v + 8, &zero, 4);
      memcpy(v + 12, &off, 4);
    }
  }
  *out = r;
  return QV_OK;
}

/* dictionary<values=V, indices=int32> over the inner grouper's values. */
static qv_status ids_to_dict(qv_grouper *g, int32_t j, const qv_array *ids, qv_array **out,
                             qv_error *err) {
  const qv_type *dt = g->types[j];
  qv_array *values[1] = {NULL};
  QV_RETURN_NOT_OK(qv_grouper_uniques(g->dicts[j].values, values, err));
  qv_type *t = qv_type_new(QV_DICTIONARY);
  if (!t) {
    qv_array_unref(values[0]);
    return qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
  }
  t->index_type = qv_type_new(QV_INT32);
  t->value_type = qv_type_ref(dt->value_type);
  t->dict_id = dt->dict_id;
  t->ordered = dt->ordered;
  qv_array *r = t->index_type ? qv_array_new(t, 2, 0) : NULL;
  qv_type_unref(t);
  if (!r) {
    qv_array_unref(values[0]);
    return qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
  }
  r->length = ids->length;
  r->null_count = -1;
  r->buffers[0] = ids->buffers[0] ? qv_buffer_ref(ids->buffers[0]) : NULL;
  r->buffers[1] = qv_buffer_ref(ids->buffers[1]); /* uint32 ids < 2^31 read as int32 */
  r->dictionary = values[0];
  if (values[0]->length > INT32_MAX) {
    qv_array_unref(r);
    return qv_error_set(err, QV_ERANGE, "grouper: too many dictionary values");
  }
  *out = r;
  return QV_OK;
}

qv_status qv_grouper_uniques(qv_grouper *g, qv_array **out, qv_error *err) {
  int32_t nk = g->n_keys;
  qv_array **dec = calloc((size_t)nk, sizeof *dec);
  if (!dec) return qv_error_set(err, QV_ENOMEM, "grouper: out of memory");
  for (int32_t j = 0; j < nk; j++) out[j] = NULL;
  qv_status st = qv_row_decode(&g->groups, 0, g->n_groups, g->enc_types, NULL, dec, err);
  for (int32_t j = 0; j < nk && st == QV_OK; j++) {
    qv_type_id id = g->types[j]->id;
    if (id == QV_BINARY_VIEW || id == QV_STRING_VIEW)
      st = large_to_views(dec[j], g->types[j], &out[j], err);
    else if (id == QV_DICTIONARY) st = ids_to_dict(g, j, dec[j], &out[j], err);
    else out[j] = qv_array_ref(dec[j]);
  }
  for (int32_t j = 0; j < nk; j++) qv_array_unref(dec[j]);
  free(dec);
  if (st != QV_OK)
    for (int32_t j = 0; j < nk; j++) {
      qv_array_unref(out[j]);
      out[j] = NULL;
    }
  return st;
}
