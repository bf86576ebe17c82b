/*
 * join_fast.c — compute layer: the hash join's fixed-width key path
 * (join.c). When the join has one key whose unified type is 1, 2, 4 or 8
 * bytes wide (integers, canonicalised floats, dates, times, timestamps,
 * durations, small decimals), its values are loaded as 64-bit words and
 * hashed (splitmix64's finaliser) into open-addressing tables of words
 * and group ids, without the row-table encoding:
 *  - the build side is radix-partitioned on the hash's top bits (its
 *    rows scattered by partition, in order within each), one partition
 *    per thread of a pool (core/parallel_internal.h) or more, so that a
 *    partition's table holds at most 128 Ki keys (4 MB, in cache while
 *    it is built); each partition's table is built by its own task, so
 *    group ids are dense per partition, in first-appearance order; a
 *    partition's base is then added (ids dense over all partitions);
 *  - a slot keeps the key and its id together (one cache line a probe);
 *    builds and probes prefetch the slot of the row 16 ahead;
 *  - the probe side is looked up in parts of 64 Ki rows on the pool, its
 *    keys read from its chunks in place (no copy; the slot is prefetched
 *    only when the tables are past the L2 cache),
 *    through a blocked bloom filter per partition (one 64-bit word a key,
 *    three bits) when the build side is large and a sample of the probe
 *    side mostly misses it (early filtering: a miss reads a word of the
 *    filter instead of a slot of a table 16 times its size).
 * Null keys get QV_GROUP_NONE on both sides (nulls never match).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/join_internal.h"
#include "core/parallel_internal.h"

#define PART_ROWS 65536

bool qvj_fast_eligible(const qv_type *t) {
  if (t->id == QV_NA || t->id == QV_BOOL || t->id == QV_DICTIONARY) return false;
  int w = qv_type_byte_width(t);
  int bits = qv_type_bit_width(t);
  return (w == 1 || w == 2 || w == 4 || w == 8) && bits == w * 8 && t->n_children == 0;
}

/* Key words of every row of a side; ids[r] = QV_GROUP_NONE for null keys,
 * 0 otherwise. */
typedef struct load_ctx {
  const qvj_side *s;
  uint64_t *keys;
  uint32_t *ids;
  int w;
} load_ctx;

/* The key word of element i of values d, w bytes wide. */
static inline uint64_t key_at(const uint8_t *d, int w, int64_t i) {
  switch (w) {
    case 1: return d[i];
    case 2: {
      uint16_t x;
      memcpy(&x, d + i * 2, 2);
      return x;
    }
    case 4: {
      uint32_t x;
      memcpy(&x, d + i * 4, 4);
      return x;
    }
    default: {
      uint64_t x;
      memcpy(&x, d + i * 8, 8);
      return x;
    }
  }
}

/* The values and validity (NULL: no nulls) of a key chunk. */
static const uint8_t *key_values(const qv_array *a) {
  return a->n_buffers > 1 && a->buffers[1] ? a->buffers[1]->data : NULL;
}
static const uint8_t *key_validity(const qv_array *a) {
  return a->buffers[0] && qv_array_null_count((qv_array *)a) > 0 ? a->buffers[0]->data : NULL;
}

static void load_task(void *ctx, int64_t b, int worker) {
  (void)worker;
  load_ctx *c = ctx;
  const qv_array *a = c->s->hkeys[b];
  int64_t base = c->s->boff[b], n = a->length;
  uint64_t *k = c->keys + base;
  uint32_t *ids = c->ids + base;
  const uint8_t *d = key_values(a), *valid = key_validity(a);
  int64_t off = a->offset;
  for (int64_t i = 0; i < n; i++) {
    k[i] = key_at(d, c->w, off + i);
    ids[i] = valid && !qv_bit_get(valid, off + i) ? QV_GROUP_NONE : 0;
  }
}

/* A slot: the key and its group id in one 16-byte record, so a probe
 * touches one cache line (the id QV_GROUP_NONE marks an empty slot). */
typedef struct slot {
  uint64_t key;
  uint32_t id;
  uint32_t pad;
} slot;

typedef struct part_table {
  slot *slots;
  uint64_t mask;
  uint64_t *bloom; /* NULL, or words of a blocked bloom filter (bloom_mask + 1 of them) */
  uint64_t bloom_mask;
  int64_t n_groups, count;
  bool oom;
} part_table;

int qvj_bloom_mode = -1;
int64_t qvj_part_keys = (int64_t)1 << 17;

/* The bloom filter's word and its bits for hash h: the word from the
 * hash's bits 32-55 (the slot comes from the low bits, the partition from
 * the top ones), three bits from bits 0-17 — one word read per lookup. */
static inline uint64_t bloom_bits(uint64_t h) {
  return (1ull << (h & 63)) | (1ull << ((h >> 6) & 63)) | (1ull << ((h >> 12) & 63));
}
static inline uint64_t bloom_word(uint64_t h, uint64_t mask) { return (h >> 32) & mask; }

typedef struct build_ctx {
  const uint64_t *keys;
  uint32_t *ids;
  int64_t n;
  part_table *parts;
  const uint32_t *prow; /* the non-null build rows by partition, in order */
  const int64_t *poff;  /* partition p's: prow[poff[p] .. poff[p + 1]) */
  bool bloom;           /* build the partitions' bloom filters */
} build_ctx;

static inline int64_t part_of(uint64_t h, int shift) {
  return shift >= 64 ? 0 : (int64_t)(h >> shift);
}

#define PREFETCH_AHEAD 16
#define PREFETCH_MIN_BYTES ((int64_t)256 << 10)
#define MAX_PARTS 1024

static void build_task(void *ctx, int64_t p, int worker) {
  (void)worker;
  build_ctx *c = ctx;
  part_table *t = &c->parts[p];
  uint64_t cap = 16;
  while (cap < (uint64_t)t->count * 2) cap <<= 1;
  t->slots = malloc(sizeof(slot) * cap);
  if (c->bloom) {
    uint64_t words = 1;
    while (words * 8 < (uint64_t)t->count) words <<= 1; /* about 8 bits per key */
    t->bloom = calloc(words, sizeof(uint64_t));
    t->bloom_mask = words - 1;
  }
  if (!t->slots || (c->bloom && !t->bloom)) {
    t->oom = true;
    return;
  }
  for (uint64_t s = 0; s < cap; s++) t->slots[s].id = QV_GROUP_NONE;
  t->mask = cap - 1;
  uint32_t next = 0;
  const uint32_t *rows = c->prow + c->poff[p];
  int64_t nr = c->poff[p + 1] - c->poff[p];
  for (int64_t e = 0; e < nr; e++) {
    if (e + PREFETCH_AHEAD < nr) /* the table is written at random: fetch ahead */
      __builtin_prefetch(&t->slots[qv_mix64(c->keys[rows[e + PREFETCH_AHEAD]]) & t->mask], 1);
    int64_t r = rows[e];
    uint64_t k = c->keys[r], h = qv_mix64(k);
    for (uint64_t s = h & t->mask;; s = (s + 1) & t->mask) {
      uint32_t id = t->slots[s].id;
      if (id == QV_GROUP_NONE) {
        t->slots[s].key = k;
        t->slots[s].id = next;
        c->ids[r] = next++;
        if (t->bloom) t->bloom[bloom_word(h, t->bloom_mask)] |= bloom_bits(h);
        break;
      }
      if (t->slots[s].key == k) {
        c->ids[r] = id;
        break;
      }
    }
  }
  t->n_groups = next;
}

typedef struct probe_ctx {
  const uint64_t *keys; /* the build side's (rebase) */
  uint32_t *ids;
  int64_t n;
  const part_table *parts;
  const int64_t *base;
  int part_shift;
  bool rebase;        /* build side: add the partition's base to the local ids */
  bool prefetch;      /* the tables (or filters) are past the caches */
  const qvj_side *ps; /* probe: keys read from its chunks, w bytes wide */
  int w;
  const int64_t *piece; /* probe: 3 a piece (batch, first, end row in it) */
} probe_ctx;

static void probe_task(void *ctx, int64_t part, int worker) {
  (void)worker;
  probe_ctx *c = ctx;
  if (c->rebase) {
    int64_t lo = part * PART_ROWS, hi = lo + PART_ROWS < c->n ? lo + PART_ROWS : c->n;
    for (int64_t r = lo; r < hi; r++) {
      if (c->ids[r] == QV_GROUP_NONE) continue;
      c->ids[r] += (uint32_t)c->base[part_of(qv_mix64(c->keys[r]), c->part_shift)];
    }
    return;
  }
  /* the probe side's keys are read from its chunk in place (no copy) */
  const int64_t *pc = c->piece + 3 * part;
  const qv_array *a = c->ps->hkeys[pc[0]];
  const uint8_t *d = key_values(a), *valid = key_validity(a);
  int64_t off = a->offset, lo = pc[1], hi = pc[2];
  uint32_t *ids = c->ids + c->ps->boff[pc[0]];
  int w = c->w;
  for (int64_t r = lo; r < hi; r++) {
    if (c->prefetch && r + PREFETCH_AHEAD < hi) { /* the filter's word, else the slot, ahead */
      uint64_t ha = qv_mix64(key_at(d, w, off + r + PREFETCH_AHEAD));
      const part_table *ta = &c->parts[part_of(ha, c->part_shift)];
      if (ta->bloom) __builtin_prefetch(&ta->bloom[bloom_word(ha, ta->bloom_mask)]);
      else __builtin_prefetch(&ta->slots[ha & ta->mask]);
    }
    if (valid && !qv_bit_get(valid, off + r)) {
      ids[r] = QV_GROUP_NONE;
      continue;
    }
    uint64_t k = key_at(d, w, off + r), h = qv_mix64(k);
    int64_t p = part_of(h, c->part_shift);
    const part_table *t = &c->parts[p];
    uint32_t found = QV_GROUP_NONE;
    uint64_t bits = bloom_bits(h);
    if (!t->bloom || (t->bloom[bloom_word(h, t->bloom_mask)] & bits) == bits) {
      for (uint64_t s = h & t->mask;; s = (s + 1) & t->mask) {
        uint32_t id = t->slots[s].id;
        if (id == QV_GROUP_NONE) break;
        if (t->slots[s].key == k) {
          found = id + (uint32_t)c->base[p];
          break;
        }
      }
    }
    ids[r] = found;
  }
}

/* Whether to filter the probe through bloom filters (qvj_bloom_mode
 * aside): the build side has BLOOM_MIN_KEYS keys or more (its table is
 * past the caches, a miss costs a random read of it, the filter's word
 * is read from a sixteenth of the memory) and more than 3 in 4 of a
 * sample of probe keys miss. The sample: the keys whose hash falls in
 * the lowest 1/1024th, those of the build side in an exact set, up to
 * BLOOM_SAMPLE of the probe side's looked up in it. */
#define BLOOM_MIN_KEYS (1 << 20)
#define BLOOM_SAMPLE 4096

static bool want_bloom(const uint64_t *bk, const uint32_t *bids, int64_t nb, const qvj_side *ps,
                       int w) {
  if (qvj_bloom_mode >= 0) return qvj_bloom_mode == 1;
  if (nb < BLOOM_MIN_KEYS || ps->n == 0) return false;
  /* a set of the build keys' hashes would be the table itself: sample
   * instead by hash range — keys whose hash falls in the lowest 1/1024th */
  int64_t cap = 64;
  while (cap < (nb >> 10) * 4) cap <<= 1;
  uint64_t *set = malloc(sizeof(uint64_t) * (size_t)cap);
  uint8_t *used = calloc((size_t)cap, 1);
  if (!set || !used) {
    free(set);
    free(used);
    return false;
  }
  const uint64_t cut = UINT64_MAX >> 10;
  uint64_t mask = (uint64_t)cap - 1;
  int64_t in = 0;
  for (int64_t r = 0; r < nb && in * 2 < cap; r++) {
    if (bids[r] == QV_GROUP_NONE) continue;
    uint64_t h = qv_mix64(bk[r]);
    if (h > cut) continue;
    uint64_t s = (h >> 3) & mask;
    while (used[s] && set[s] != bk[r]) s = (s + 1) & mask;
    if (!used[s]) {
      used[s] = 1;
      set[s] = bk[r];
      in++;
    }
  }
  int64_t tried = 0, miss = 0;
  for (int64_t b = 0; b < ps->nb && tried < BLOOM_SAMPLE; b++) {
    const qv_array *a = ps->hkeys[b];
    const uint8_t *d = key_values(a), *valid = key_validity(a);
    for (int64_t i = 0; i < a->length && tried < BLOOM_SAMPLE; i++) {
      if (valid && !qv_bit_get(valid, a->offset + i)) continue;
      uint64_t k = key_at(d, w, a->offset + i), h = qv_mix64(k);
      if (h > cut) continue;
      tried++;
      uint64_t s = (h >> 3) & mask;
      while (used[s] && set[s] != k) s = (s + 1) & mask;
      miss += !used[s];
    }
  }
  free(set);
  free(used);
  return tried >= 64 && miss * 4 > tried * 3; /* more than 3 in 4 miss */
}

qv_status qvj_fast_ids(const qvj_side *bs, const qvj_side *ps, const qv_type *type, uint32_t *bids,
                       uint32_t *pids, int64_t *out_ng, qv_error *err) {
  int w = qv_type_byte_width(type);
  uint64_t *bk = malloc(sizeof(uint64_t) * (size_t)(bs->n ? bs->n : 1));
  int threads = qv_cpu_count();
  int nparts = 1;
  while (nparts * 2 <= threads && nparts < 8) nparts *= 2;
  /* partitions of at most qvj_part_keys build rows: tables of 4 MB */
  while (nparts < MAX_PARTS && bs->n > (int64_t)nparts * qvj_part_keys) nparts *= 2;
  if (bs->n < PART_ROWS) nparts = 1;
  part_table *parts = calloc((size_t)nparts, sizeof *parts);
  int64_t *base = calloc((size_t)nparts, sizeof(int64_t));
  int64_t *poff = calloc((size_t)nparts + 1, sizeof(int64_t));
  uint32_t *prow = malloc(sizeof(uint32_t) * (size_t)(bs->n ? bs->n : 1));
  int64_t *piece = NULL;
  qv_pool *pool = NULL;
  qv_status st = QV_OK;
  if (!bk || !parts || !base || !poff || !prow) {
    st = qv_error_set(err, QV_ENOMEM, "join: out of memory (%" PRId64 " keys)", bs->n + ps->n);
    goto done;
  }
  if (threads > 1 && bs->n + ps->n >= PART_ROWS) (void)qv_pool_new(threads, &pool, NULL);
  load_ctx lb = {bs, bk, bids, w};
  qv_pool_run(pool, bs->nb, load_task, &lb);
  int shift = 64;
  for (int p = nparts; p > 1; p >>= 1) shift--;
  /* the non-null build rows scattered by partition, in order in each */
  for (int64_t r = 0; r < bs->n; r++)
    if (bids[r] != QV_GROUP_NONE) parts[part_of(qv_mix64(bk[r]), shift)].count++;
  for (int p = 0; p < nparts; p++) poff[p + 1] = poff[p] + parts[p].count;
  {
    int64_t *pos = base; /* zeroed: the scatter's cursors, then the bases */
    for (int64_t r = 0; r < bs->n; r++)
      if (bids[r] != QV_GROUP_NONE) {
        int64_t p = part_of(qv_mix64(bk[r]), shift);
        prow[poff[p] + pos[p]++] = (uint32_t)r;
      }
  }
  build_ctx bc = {bk, bids, bs->n, parts, prow, poff, want_bloom(bk, bids, bs->n, ps, w)};
  qv_pool_run(pool, nparts, build_task, &bc);
  int64_t ng = 0;
  for (int p = 0; p < nparts; p++) {
    if (parts[p].oom) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory (hash table of %" PRId64 " keys)",
                        parts[p].count);
      goto done;
    }
    base[p] = ng;
    ng += parts[p].n_groups;
  }
  if (nparts > 1) {
    probe_ctx rc = {bk, bids, bs->n, parts, base, shift, true, false, NULL, 0, NULL};
    qv_pool_run(pool, (bs->n + PART_ROWS - 1) / PART_ROWS, probe_task, &rc);
  }
  {
    /* pieces of at most PART_ROWS rows of one probe batch each */
    int64_t np = 0;
    for (int64_t b = 0; b < ps->nb; b++)
      np += (ps->boff[b + 1] - ps->boff[b] + PART_ROWS - 1) / PART_ROWS;
    piece = malloc(sizeof(int64_t) * 3 * (size_t)(np ? np : 1));
    if (!piece) {
      st = qv_error_set(err, QV_ENOMEM, "join: out of memory");
      goto done;
    }
    np = 0;
    for (int64_t b = 0; b < ps->nb; b++)
      for (int64_t lo = 0, len = ps->boff[b + 1] - ps->boff[b]; lo < len; lo += PART_ROWS) {
        piece[3 * np] = b;
        piece[3 * np + 1] = lo;
        piece[3 * np++ + 2] = lo + PART_ROWS < len ? lo + PART_ROWS : len;
      }
    /* prefetch slots (or filter words) only where the tables are past the
     * L2 cache: a small build side's table stays in it */
    int64_t bytes = 0;
    for (int p = 0; p < nparts; p++)
      bytes += parts[p].bloom ? (int64_t)(parts[p].bloom_mask + 1) * 8
                              : (int64_t)(parts[p].mask + 1) * (int64_t)sizeof(slot);
    probe_ctx pc = {NULL, pids, ps->n, parts, base, shift, false, bytes > PREFETCH_MIN_BYTES,
                    ps,   w,    piece};
    qv_pool_run(pool, np, probe_task, &pc);
  }
  st = qv_pool_check(pool, err);
  *out_ng = ng;
done:
  qv_pool_free(pool);
  if (parts)
    for (int p = 0; p < nparts; p++) {
      free(parts[p].slots);
      free(parts[p].bloom);
    }
  free(parts);
  free(base);
  free(poff);
  free(prow);
  free(bk);
  free(piece);
  return st;
}
