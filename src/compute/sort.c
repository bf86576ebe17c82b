/*
 * sort.c — compute layer: stable sort indices over normalised keys
 * (sort_keys.c), and the public entry points qv_sort_indices,
 * qv_sort_indices_array and qv_table_sort_indices (quiver/compute.h).
 *
 * The sort works on a permutation `perm` of row ids (uint32) and sorts one
 * key at a time, most significant key first:
 *  1. rows of the current range are partitioned (stably) into value, NaN
 *     and null rows, placed as the key's null placement says; NaN and null
 *     segments are ties, passed on to the next key;
 *  2. value rows are sorted by the key: uint64 keys (and each word of wide
 *     keys, least significant word first) by a stable radix sort of
 *     (key, row) pairs; byte strings by an MSD string radix sort on 7-byte
 *     big-endian prefixes with a length marker (below);
 *  3. each run of equal values is sorted by the next key.
 * Ranges of at most SMALL_SORT rows are finished by a stable insertion
 * sort comparing all remaining keys, which keeps the many tiny runs of a
 * high-cardinality first key cheap.
 *
 * Radix sort of (uint64 key, uint32 row) pairs: keys are offset by their
 * minimum so only the bits that vary are sorted. When that spread and the
 * largest row id fit in 64 bits together (floats and integers up to 32
 * bits always do, wider keys of a narrow range too), each pair becomes one
 * word (key - min) << rbits | row, sorted by its key bits with
 * least-significant-digit passes of 8 to 11 bits (wider for larger
 * arrays): less memory traffic than separate key and row arrays, and
 * fewer passes than one per byte (the packed-word LSD sort is
 * core/radix.c, shared with the table gather). Otherwise ranges of at least
 * RADIX_MSD_MIN pairs are split on their most significant varying byte
 * first (one stable counting pass) and each bucket is sorted on its own by
 * LSD passes of at most 8 bits, so they stay in cache. Either way the
 * counts of every pass are taken in one read, and a digit that is the same
 * in all keys costs no pass. LSD counting passes are stable, hence so is
 * the whole sort.
 *
 * A single uint64 key (the common `sort by one column`) skips the
 * permutation machinery when it packs: the words are built in the key
 * array itself, sorted with the output as scratch, and the last pass
 * writes the row ids into place (sort_packed).
 *
 * Strings: the key of a string s at depth d is its bytes [d, d+7) read
 * big-endian into the top 7 bytes (zero-padded) and, in the low byte, the
 * number of bytes left when fewer than 8 remain, else 8 ("continues").
 * Equal keys with a marker below 8 are equal strings (a shorter string
 * with the same padded bytes has a smaller marker, so a prefix sorts
 * before its extensions); runs of equal keys with marker 8 are sorted
 * again at depth d+7. Descending keys invert the whole key. Pending ranges
 * live on an explicit stack, so long common prefixes never recurse deeply.
 *
 * qv_sort_indices checks the keys' mapped buffers, then sorts under the
 * mapped-read guard (core guard.c), its working state kept in the call.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/compute_internal.h"
#include "compute/sort_internal.h"
#include "core/guard_internal.h"
#include "core/radix_internal.h"

/* Ranges this small are finished by insertion sort over all keys. */
#define SMALL_SORT 16
/* Pair arrays this small are insertion-sorted instead of radix-sorted. */
#define RADIX_SMALL 48
/* Pair arrays at least this large get a most-significant-digit split. */
#define RADIX_MSD_MIN (1 << 16)
/* Radix counters (core/radix_internal.h). */
#define HIST_WORDS QV_RADIX_HIST_WORDS

/* ------------------------------------------------------------------------ */
/* Radix sort of (key, row) pairs                                            */

static void insertion_pairs(uint64_t *k, uint32_t *v, int64_t m) {
  for (int64_t i = 1; i < m; i++) {
    uint64_t kk = k[i];
    uint32_t vv = v[i];
    int64_t j = i;
    while (j > 0 && k[j - 1] > kk) {
      k[j] = k[j - 1];
      v[j] = v[j - 1];
      j--;
    }
    k[j] = kk;
    v[j] = vv;
  }
}

/* Stable sort of pairs (k[i], v[i]) by k; kt/vt are m entries of scratch.
 * Returns false when the result is in k/v, true when it is in kt/vt. When
 * the spread of the keys (max - min) and the largest v fit in one 64-bit
 * word together, the pairs are packed into k as (k - min) << vbits | v and
 * sorted as words (8 bytes a pair moved per pass instead of 12). */
static bool radix_sort(uint64_t *k, uint32_t *v, int64_t m, uint64_t *kt, uint32_t *vt,
                       uint32_t *hist) {
  if (m <= RADIX_SMALL) {
    insertion_pairs(k, v, m);
    return false;
  }
  uint64_t mn = k[0], mx = k[0];
  uint32_t vor = 0;
  for (int64_t i = 0; i < m; i++) {
    mn = k[i] < mn ? k[i] : mn;
    mx = k[i] > mx ? k[i] : mx;
    vor |= v[i];
  }
  if (mn == mx) return false;
  int kbits = 64 - __builtin_clzll(mx - mn);
  int vbits = vor ? 32 - __builtin_clz(vor) : 0;
  if (kbits + vbits <= 64) {
    for (int64_t i = 0; i < m; i++) k[i] = ((k[i] - mn) << vbits) | v[i];
    const uint64_t *res = qv_radix_sort_words(k, kt, m, vbits, kbits, hist, ~(uint64_t)0) ? kt : k;
    uint64_t vmask = ((uint64_t)1 << vbits) - 1;
    for (int64_t i = 0; i < m; i++) {
      uint64_t x = res[i];
      v[i] = (uint32_t)(x & vmask);
      k[i] = (x >> vbits) + mn;
    }
    return false;
  }
  int nbytes = (64 - __builtin_clzll(mx - mn) + 7) / 8;
  if (m >= RADIX_MSD_MIN && nbytes > 2) {
    /* Split on the top varying byte into kt/vt, then sort each bucket
     * (with k/v as its scratch) and bring it back to k/v if it ended in
     * kt/vt: a bucket-sized copy while the bucket is still in cache. */
    int shift = 8 * (nbytes - 1);
    int64_t cnt[256], pos[256];
    memset(cnt, 0, sizeof cnt);
    for (int64_t i = 0; i < m; i++) cnt[(k[i] - mn) >> shift]++;
    int64_t s = 0;
    for (int d = 0; d < 256; d++) {
      pos[d] = s;
      s += cnt[d];
    }
    for (int64_t i = 0; i < m; i++) {
      int64_t p = pos[(k[i] - mn) >> shift]++;
      kt[p] = k[i];
      vt[p] = v[i];
    }
    s = 0;
    for (int d = 0; d < 256; d++) {
      int64_t c = cnt[d];
      if (c > 0 && !radix_sort(kt + s, vt + s, c, k + s, v + s, hist)) {
        memcpy(k + s, kt + s, sizeof(uint64_t) * (size_t)c);
        memcpy(v + s, vt + s, sizeof(uint32_t) * (size_t)c);
      }
      s += c;
    }
    return false;
  }
  /* Least significant digit first over the bits of k - mn, in digits of
   * at most 8 bits (12-byte pairs: wider digits measured slower, even on
   * the buckets of an MSD split that fit in cache). */
  int bits = 64 - __builtin_clzll(mx - mn);
  int passes = (bits + 7) / 8, dw = (bits + passes - 1) / passes;
  size_t nd = (size_t)1 << dw;
  uint64_t dm = nd - 1;
  qv_radix_count(k, m, mn, 0, dw, passes, hist);
  uint64_t *sk = k, *dk = kt;
  uint32_t *sv = v, *dv = vt;
  uint64_t x0 = k[0] - mn;
  for (int p = 0; p < passes; p++) {
    uint32_t *h = hist + (size_t)p * nd;
    int sh = p * dw;
    if (h[(x0 >> sh) & dm] == (uint64_t)m) continue; /* the digit never varies */
    uint32_t at = 0;
    for (size_t d = 0; d < nd; d++) {
      uint32_t c = h[d];
      h[d] = at;
      at += c;
    }
    for (int64_t i = 0; i < m; i++) {
      uint32_t q = h[((sk[i] - mn) >> sh) & dm]++;
      dk[q] = sk[i];
      dv[q] = sv[i];
    }
    uint64_t *tk = sk;
    sk = dk;
    dk = tk;
    uint32_t *tv = sv;
    sv = dv;
    dv = tv;
  }
  return sk != k;
}

/* radix_sort with the result always in k/v. */
static void radix_pairs(uint64_t *k, uint32_t *v, int64_t m, uint64_t *kt, uint32_t *vt,
                        uint32_t *hist) {
  if (radix_sort(k, v, m, kt, vt, hist)) {
    memcpy(k, kt, sizeof(uint64_t) * (size_t)m);
    memcpy(v, vt, sizeof(uint32_t) * (size_t)m);
  }
}

/* ------------------------------------------------------------------------ */
/* Comparison                                                                */

/* Position of a row class in the order: value, NaN, null at the end, the
 * reverse at the start. */
static int class_rank(const qvs_key *K, int c) { return K->nulls_first ? 2 - c : c; }

static int bytes_cmp(const uint8_t *a, uint32_t la, const uint8_t *b, uint32_t lb, int64_t from) {
  uint32_t l = la < lb ? la : lb;
  int r = l > from ? memcmp(a + from, b + from, (size_t)(l - from)) : 0;
  if (r != 0) return r < 0 ? -1 : 1;
  return la < lb ? -1 : la > lb;
}

static int cmp_one(const qvs_key *K, uint32_t a, uint32_t b) {
  int ca = K->cls ? K->cls[a] : QVS_VALUE, cb = K->cls ? K->cls[b] : QVS_VALUE;
  if (ca != cb) return class_rank(K, ca) < class_rank(K, cb) ? -1 : 1;
  if (ca != QVS_VALUE) return 0;
  switch (K->kind) {
    case QVS_U64: return K->u64[a] < K->u64[b] ? -1 : K->u64[a] > K->u64[b];
    case QVS_WIDE: {
      const uint64_t *x = K->words + (int64_t)a * K->nwords, *y = K->words + (int64_t)b * K->nwords;
      for (int32_t w = 0; w < K->nwords; w++)
        if (x[w] != y[w]) return x[w] < y[w] ? -1 : 1;
      return 0;
    }
    default: {
      /* The depth-0 keys decide unless both strings go on past 7 bytes. */
      uint64_t x = K->u64[a], y = K->u64[b];
      int r;
      if (x != y) {
        r = x < y ? -1 : 1;
      } else if ((x & 0xff) < 8) {
        r = 0;
      } else {
        const uint8_t *pa, *pb;
        uint32_t la, lb;
        qvs_bytes(K, a, &pa, &la);
        qvs_bytes(K, b, &pb, &lb);
        r = bytes_cmp(pa, la, pb, lb, 7);
      }
      return K->descending ? -r : r;
    }
  }
}

bool qvs_equal(const qvs_key *k, uint32_t a, uint32_t b) { return cmp_one(k, a, b) == 0; }

static int cmp_from(const qvs_key *keys, int32_t n_keys, int32_t k, uint32_t a, uint32_t b) {
  for (; k < n_keys; k++) {
    int r = cmp_one(&keys[k], a, b);
    if (r) return r;
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* The sorter                                                                */

typedef struct srange {
  int64_t lo, hi, depth;
} srange;

typedef struct sorter {
  const qvs_key *keys;
  int32_t n_keys;
  uint32_t *perm;
  uint64_t *kbuf; /* gathered keys, by position */
  uint64_t *kt;   /* radix scratch */
  uint32_t *vt;
  uint32_t *hist; /* HIST_WORDS radix counters */
  srange *stack;  /* pending string ranges */
  bool alias0;    /* key 0's uint64 array may be sorted in place */
  int64_t sp, scap;
  qv_error *err;
} sorter;

static qv_status sort_range(sorter *s, int64_t lo, int64_t hi, int32_t k, bool top);

static void insertion_perm(sorter *s, int64_t lo, int64_t hi, int32_t k) {
  uint32_t *p = s->perm;
  for (int64_t i = lo + 1; i < hi; i++) {
    uint32_t x = p[i];
    int64_t j = i;
    while (j > lo && cmp_from(s->keys, s->n_keys, k, p[j - 1], x) > 0) {
      p[j] = p[j - 1];
      j--;
    }
    p[j] = x;
  }
}

static qv_status sort_u64(sorter *s, int64_t lo, int64_t hi, int32_t k, bool alias) {
  const qvs_key *K = &s->keys[k];
  int64_t m = hi - lo;
  uint64_t *kb;
  if (alias) {
    /* Top level: the key array itself is sorted. When null or NaN rows were
     * partitioned out, perm[lo..hi) are increasing rows: compact their keys
     * in place first. */
    kb = K->u64;
    if (m != K->n) {
      for (int64_t j = 0; j < m; j++) kb[j] = kb[s->perm[lo + j]];
      if (lo > 0) memmove(kb + lo, kb, sizeof(uint64_t) * (size_t)m);
    }
  } else {
    kb = s->kbuf;
    for (int64_t j = lo; j < hi; j++) kb[j] = K->u64[s->perm[j]];
  }
  radix_pairs(kb + lo, s->perm + lo, m, s->kt + lo, s->vt + lo, s->hist);
  if (k + 1 < s->n_keys) {
    int64_t i_, j_;
    for (i_ = lo; i_ < hi; i_ = j_) {
      for (j_ = i_ + 1; j_ < hi && kb[j_] == kb[i_]; j_++) {}
      if (j_ - i_ > 1) QV_RETURN_NOT_OK(sort_range(s, i_, j_, k + 1, false));
    }
  }
  return QV_OK;
}

static qv_status sort_wide(sorter *s, int64_t lo, int64_t hi, int32_t k) {
  const qvs_key *K = &s->keys[k];
  int32_t nw = K->nwords;
  for (int32_t w = nw - 1; w >= 0; w--) {
    for (int64_t j = lo; j < hi; j++) s->kbuf[j] = K->words[(int64_t)s->perm[j] * nw + w];
    radix_pairs(s->kbuf + lo, s->perm + lo, hi - lo, s->kt + lo, s->vt + lo, s->hist);
  }
  if (k + 1 < s->n_keys) {
    int64_t i_, j_;
    for (i_ = lo; i_ < hi; i_ = j_) {
      for (j_ = i_ + 1; j_ < hi && qvs_equal(K, s->perm[i_], s->perm[j_]); j_++) {}
      if (j_ - i_ > 1) QV_RETURN_NOT_OK(sort_range(s, i_, j_, k + 1, false));
    }
  }
  return QV_OK;
}

static qv_status push_range(sorter *s, int64_t lo, int64_t hi, int64_t depth) {
  if (s->sp == s->scap) {
    int64_t cap = s->scap ? 2 * s->scap : 64;
    srange *ns = realloc(s->stack, sizeof(srange) * (size_t)cap);
    if (!ns) return qv_error_set(s->err, QV_ENOMEM, "sort: out of memory (string ranges)");
    s->stack = ns;
    s->scap = cap;
  }
  s->stack[s->sp++] = (srange){lo, hi, depth};
  return QV_OK;
}

static bool same_bytes(const qvs_key *K, uint32_t a, uint32_t b) {
  const uint8_t *pa, *pb;
  uint32_t la, lb;
  qvs_bytes(K, a, &pa, &la);
  qvs_bytes(K, b, &pb, &lb);
  return la == lb && memcmp(pa, pb, la) == 0;
}

static qv_status sort_bytes(sorter *s, int64_t lo, int64_t hi, int32_t k, bool alias) {
  const qvs_key *K = &s->keys[k];
  uint64_t flip = K->descending ? ~0ull : 0;
  bool more_keys = k + 1 < s->n_keys;
  int64_t base = s->sp;
  QV_RETURN_NOT_OK(push_range(s, lo, hi, 0));
  while (s->sp > base) {
    srange r = s->stack[--s->sp];
    uint32_t *p = s->perm;
    if (r.hi - r.lo <= SMALL_SORT) {
      for (int64_t i = r.lo + 1; i < r.hi; i++) {
        uint32_t x = p[i];
        int64_t j = i;
        while (j > r.lo) {
          const uint8_t *pa, *pb;
          uint32_t la, lb;
          qvs_bytes(K, p[j - 1], &pa, &la);
          qvs_bytes(K, x, &pb, &lb);
          int c = bytes_cmp(pa, la, pb, lb, r.depth);
          if ((flip ? -c : c) <= 0) break;
          p[j] = p[j - 1];
          j--;
        }
        p[j] = x;
      }
      if (more_keys) {
        int64_t i_, j_;
        for (i_ = r.lo; i_ < r.hi; i_ = j_) {
          for (j_ = i_ + 1; j_ < r.hi && same_bytes(K, p[i_], p[j_]); j_++) {}
          if (j_ - i_ > 1) QV_RETURN_NOT_OK(sort_range(s, i_, j_, k + 1, false));
        }
      }
      continue;
    }
    /* At the top level the depth-0 keys are compacted in place (rows
     * increase) and their array then serves as working memory. */
    uint64_t *kb = alias ? K->u64 : s->kbuf;
    if (r.depth > 0) {
      for (int64_t j = r.lo; j < r.hi; j++) {
        const uint8_t *b;
        uint32_t len;
        qvs_bytes(K, p[j], &b, &len);
        kb[j] = qvs_str_key(b, len, r.depth) ^ flip;
      }
    } else if (alias) {
      int64_t m = r.hi - r.lo;
      if (m != K->n) {
        for (int64_t j = 0; j < m; j++) kb[j] = kb[p[r.lo + j]] ^ flip;
        if (r.lo > 0) memmove(kb + r.lo, kb, sizeof(uint64_t) * (size_t)m);
      } else if (flip) {
        for (int64_t j = 0; j < m; j++) kb[j] ^= flip;
      }
    } else {
      for (int64_t j = r.lo; j < r.hi; j++) kb[j] = K->u64[p[j]] ^ flip;
    }
    radix_pairs(kb + r.lo, p + r.lo, r.hi - r.lo, s->kt + r.lo, s->vt + r.lo, s->hist);
    int64_t i_, j_;
    for (i_ = r.lo; i_ < r.hi; i_ = j_) {
      for (j_ = i_ + 1; j_ < r.hi && kb[j_] == kb[i_]; j_++) {}
      if (j_ - i_ < 2) continue;
      if (((kb[i_] ^ flip) & 0xff) == 8) {
        QV_RETURN_NOT_OK(push_range(s, i_, j_, r.depth + 7));
      } else if (more_keys) {
        QV_RETURN_NOT_OK(sort_range(s, i_, j_, k + 1, false));
      }
    }
  }
  return QV_OK;
}

/* Sort value rows perm[lo..hi) (no NaN, no null) by key k, then runs of
 * equal values by the next keys. */
static qv_status sort_values(sorter *s, int64_t lo, int64_t hi, int32_t k, bool top) {
  if (hi - lo < 2) return QV_OK;
  if (hi - lo <= SMALL_SORT) {
    insertion_perm(s, lo, hi, k);
    return QV_OK;
  }
  bool alias = top && s->alias0;
  switch (s->keys[k].kind) {
    case QVS_U64: return sort_u64(s, lo, hi, k, alias);
    case QVS_WIDE: return sort_wide(s, lo, hi, k);
    default: return sort_bytes(s, lo, hi, k, alias);
  }
}

/* Sort perm[lo..hi) by keys k, k+1, ...; rows equal on every key keep
 * their order. `top`: the first call, over all rows by key 0, before perm
 * is filled; it fills perm itself (identity, or partitioned by class in
 * the same pass) and may sort key 0's array in place when s->alias0. */
static qv_status sort_range(sorter *s, int64_t lo, int64_t hi, int32_t k, bool top) {
  if (k >= s->n_keys) return QV_OK; /* never for top: n_keys >= 1 */
  const qvs_key *K = &s->keys[k];
  bool partition = K->cls && (top ? K->n_nan + K->n_null > 0 : true);
  if (top && (!partition || hi - lo <= SMALL_SORT)) {
    for (int64_t i = lo; i < hi; i++) s->perm[i] = (uint32_t)i;
    partition = partition && hi - lo > SMALL_SORT;
  }
  if (hi - lo < 2) return QV_OK;
  if (hi - lo <= SMALL_SORT) {
    insertion_perm(s, lo, hi, k);
    return QV_OK;
  }
  int64_t vlo = lo, vhi = hi;
  if (partition) {
    int64_t cnt[3] = {0, 0, 0};
    if (top) {
      cnt[QVS_NAN] = K->n_nan;
      cnt[QVS_NULL] = K->n_null;
      cnt[QVS_VALUE] = (hi - lo) - K->n_nan - K->n_null;
    } else {
      for (int64_t i = lo; i < hi; i++) cnt[K->cls[s->perm[i]]]++;
    }
    if (cnt[QVS_VALUE] != hi - lo) {
      /* Stable three-way partition into the class order. */
      int64_t start[3];
      int order[3] = {QVS_VALUE, QVS_NAN, QVS_NULL};
      if (K->nulls_first) {
        order[0] = QVS_NULL;
        order[2] = QVS_VALUE;
      }
      int64_t at = lo;
      for (int q = 0; q < 3; q++) {
        start[order[q]] = at;
        at += cnt[order[q]];
      }
      int64_t seg[3] = {start[0], start[1], start[2]};
      if (top) { /* rows in order, straight into perm */
        for (int64_t i = lo; i < hi; i++) s->perm[seg[K->cls[i]]++] = (uint32_t)i;
      } else {
        for (int64_t i = lo; i < hi; i++) {
          uint32_t r = s->perm[i];
          s->vt[seg[K->cls[r]]++] = r;
        }
        memcpy(s->perm + lo, s->vt + lo, sizeof(uint32_t) * (size_t)(hi - lo));
      }
      vlo = start[QVS_VALUE];
      vhi = vlo + cnt[QVS_VALUE];
      /* Values first: with s->alias0, key 0's array is still indexed by
       * row until its values are compacted, and the NaN and null segments'
       * sorts use the same memory as their gather buffer. */
      QV_RETURN_NOT_OK(sort_values(s, vlo, vhi, k, top));
      QV_RETURN_NOT_OK(sort_range(s, start[QVS_NAN], start[QVS_NAN] + cnt[QVS_NAN], k + 1, false));
      return sort_range(s, start[QVS_NULL], start[QVS_NULL] + cnt[QVS_NULL], k + 1, false);
    }
  }
  return sort_values(s, vlo, vhi, k, top);
}

qv_status qvs_sort(const qvs_key *keys, int32_t n_keys, int64_t n, uint32_t *perm,
                   uint64_t *scratch, bool clobber, qv_error *err) {
  if (n < 2) {
    if (n == 1) perm[0] = 0;
    return QV_OK;
  }
  sorter s;
  memset(&s, 0, sizeof s);
  s.keys = keys;
  s.n_keys = n_keys;
  s.perm = perm;
  s.kt = scratch;
  s.err = err;
  /* With `clobber`, key 0's uint64 array is sorted in place and then
   * serves the later keys as their gather buffer: a run of equal key-0
   * values is sorted by the next key only after the run was scanned, and
   * only within its own positions. */
  bool alias = clobber && keys[0].kind != QVS_WIDE;
  s.alias0 = alias;
  s.vt = qvs_alloc(sizeof(uint32_t) * (size_t)n, false);
  s.hist = malloc(sizeof(uint32_t) * HIST_WORDS);
  bool own_kbuf = !alias;
  s.kbuf = alias ? keys[0].u64 : qvs_alloc(sizeof(uint64_t) * (size_t)n, false);
  qv_status st;
  if (!s.vt || !s.kbuf || !s.hist)
    st = qv_error_set(err, QV_ENOMEM, "sort: out of memory (%" PRId64 " rows)", n);
  else st = sort_range(&s, 0, n, 0, true);
  qvs_free(s.vt);
  free(s.hist);
  if (own_kbuf) qvs_free(s.kbuf);
  free(s.stack);
  return st;
}

/* ------------------------------------------------------------------------ */
/* One uint64 key                                                            */

/* Sort all n rows by one QVS_U64 key straight into `out`, when the spread
 * of its values (max - min over value rows) and the row ids fit in one
 * 64-bit word together: the words (key - min) << rbits | row of the value
 * rows are built in place in K->u64 (clobbered), sorted by their key bits
 * with `out` as scratch, and their rows written to out with the NaN and
 * null rows (in row order: ties) around them as the key places them. No
 * permutation array, no second key array. Returns false, with nothing
 * touched, when the words would not fit; QV_ENOMEM through *st. */
static bool sort_packed(const qvs_key *K, int64_t n, int64_t *out, qv_status *st, qv_error *err) {
  uint64_t *k = K->u64;
  const uint8_t *cls = K->n_nan + K->n_null > 0 ? K->cls : NULL;
  uint64_t mn = UINT64_MAX, mx = 0;
  if (cls == NULL) {
    for (int64_t i = 0; i < n; i++) {
      mn = k[i] < mn ? k[i] : mn;
      mx = k[i] > mx ? k[i] : mx;
    }
  } else {
    for (int64_t i = 0; i < n; i++)
      if (cls[i] == QVS_VALUE) {
        mn = k[i] < mn ? k[i] : mn;
        mx = k[i] > mx ? k[i] : mx;
      }
  }
  int64_t m = n - K->n_nan - K->n_null;
  int kbits = m > 0 && mx > mn ? 64 - __builtin_clzll(mx - mn) : 0;
  int rbits = 64 - __builtin_clzll((uint64_t)(n - 1)); /* n >= 2 */
  if (kbits + rbits > 64) return false;
  uint32_t *hist = NULL;
  if (kbits > 0 && m > RADIX_SMALL && !(hist = malloc(sizeof(uint32_t) * HIST_WORDS))) {
    *st = qv_error_set(err, QV_ENOMEM, "sort: out of memory");
    return true;
  }
  if (cls == NULL) {
    for (int64_t i = 0; i < n; i++) k[i] = ((k[i] - mn) << rbits) | (uint64_t)i;
  } else {
    int64_t j = 0; /* value rows packed in place: j <= i */
    for (int64_t i = 0; i < n; i++)
      if (cls[i] == QVS_VALUE) k[j++] = ((k[i] - mn) << rbits) | (uint64_t)i;
  }
  /* Segments: values, NaN, null at the end; the reverse at the start. The
   * value segment of out is the sort's scratch; when the result lands
   * there, the last pass has already cut the words to their rows. */
  int64_t vstart = K->nulls_first ? K->n_null + K->n_nan : 0;
  int64_t nan_at = K->nulls_first ? K->n_null : m;
  int64_t null_at = K->nulls_first ? 0 : m + K->n_nan;
  uint64_t rmask = ((uint64_t)1 << rbits) - 1;
  uint64_t *seg = (uint64_t *)(out + vstart);
  bool in_seg = false;
  if (kbits > 0 && m <= RADIX_SMALL) qv_radix_insertion_words(k, m, rbits);
  else if (kbits > 0) in_seg = qv_radix_sort_words(k, seg, m, rbits, kbits, hist, rmask);
  free(hist);
  if (!in_seg)
    for (int64_t i = 0; i < m; i++) seg[i] = k[i] & rmask;
  if (cls != NULL)
    for (int64_t i = 0; i < n; i++) {
      if (cls[i] == QVS_NAN) out[nan_at++] = i;
      else if (cls[i] == QVS_NULL) out[null_at++] = i;
    }
  *st = QV_OK;
  return true;
}

/* ------------------------------------------------------------------------ */
/* Public entry points                                                       */

/* The sort proper, under the mapped-read guard (core/guard_internal.h):
 * its normalised keys and permutation are in the call, freed by
 * qv_sort_indices whether the body returns or is recovered from. */
typedef struct sort_call {
  const qv_sort_key *keys;
  int32_t n_keys;
  int64_t n;
  int64_t *out;
  qvs_key *nk;
  uint32_t *perm;
} sort_call;

static qv_status sort_body(void *ctx, qv_error *err) {
  sort_call *c = ctx;
  const qv_sort_key *keys = c->keys;
  int32_t n_keys = c->n_keys;
  int64_t n = c->n, *out = c->out;
  qvs_key *nk = c->nk;
  qv_status st = QV_OK;
  for (int32_t k = 0; k < n_keys && st == QV_OK; k++) {
    const qv_chunked_column *col = &keys[k].column;
    char what[32];
    snprintf(what, sizeof what, "sort key %d", k);
    st = qvs_key_build(&nk[k], qvc_column_type(col), col->chunks, col->n_chunks, n,
                       keys[k].descending, keys[k].null_placement == QV_NULLS_AT_START, what, err);
  }
  if (st != QV_OK || n < 2) {
    if (st == QV_OK && n == 1) out[0] = 0;
    return st;
  }
  if (n_keys == 1 && nk[0].kind == QVS_U64 && sort_packed(&nk[0], n, out, &st, err)) return st;
  c->perm = qvs_alloc(sizeof(uint32_t) * (size_t)n, false);
  if (!c->perm) return qv_error_set(err, QV_ENOMEM, "sort: out of memory (%" PRId64 " rows)", n);
  st = qvs_sort(nk, n_keys, n, c->perm, (uint64_t *)out, true, err);
  if (st == QV_OK)
    for (int64_t i = 0; i < n; i++) out[i] = c->perm[i];
  return st;
}

qv_status qv_sort_indices(const qv_sort_key *keys, int32_t n_keys, int64_t *out, qv_error *err) {
  if (n_keys < 1 || keys == NULL)
    return qv_error_set(err, QV_EARG, "sort: at least one sort key is needed (got %d)", n_keys);
  int64_t n = -1;
  for (int32_t k = 0; k < n_keys; k++) {
    int64_t len;
    QV_RETURN_NOT_OK(qvc_column_check(&keys[k].column, "sort key", k, &len, err));
    if (n >= 0 && len != n)
      return qv_error_set(err, QV_EARG, "sort: key %d has %" PRId64 " rows but key 0 has %" PRId64,
                          k, len, n);
    n = len;
  }
  if (n > QV_SORT_MAX_ROWS)
    return qv_error_set(err, QV_ENOTSUP, "sort: %" PRId64 " rows; at most %lld rows can be sorted",
                        n, QV_SORT_MAX_ROWS);
  if (n > 0 && out == NULL) return qv_error_set(err, QV_EARG, "sort: out is NULL");
  sort_call c = {keys, n_keys, n, out, calloc((size_t)n_keys, sizeof(qvs_key)), NULL};
  if (!c.nk) return qv_error_set(err, QV_ENOMEM, "sort: out of memory (%" PRId64 " rows)", n);
  /* Keys of a mapped file that shrank fail here, before anything is built;
   * the working state lives in `c`, so a recovery leaves nothing behind. */
  qv_status st = QV_OK;
  for (int32_t k = 0; k < n_keys && st == QV_OK; k++)
    st = qv_guard_check_arrays((const qv_array *const *)keys[k].column.chunks,
                               keys[k].column.n_chunks, err);
  if (st == QV_OK) st = qv_guard_run(sort_body, &c, err);
  for (int32_t k = 0; k < n_keys; k++) qvs_key_reset(&c.nk[k]);
  free(c.nk);
  qvs_free(c.perm);
  return st;
}

qv_status qv_sort_indices_array(qv_array *a, bool descending, qv_null_placement null_placement,
                                int64_t *out, qv_error *err) {
  if (a == NULL) return qv_error_set(err, QV_EARG, "sort: array is NULL");
  qv_sort_key key = {{a->type, &a, 1}, descending, null_placement};
  return qv_sort_indices(&key, 1, out, err);
}

qv_status qv_table_sort_indices(qv_table *t, const qv_sort_spec *specs, int32_t n_specs,
                                int64_t *out, qv_error *err) {
  if (n_specs < 1 || specs == NULL)
    return qv_error_set(err, QV_EARG, "sort: at least one sort key is needed (got %d)", n_specs);
  qv_sort_key *keys = calloc((size_t)n_specs, sizeof *keys);
  qvc_columns cols;
  memset(&cols, 0, sizeof cols);
  qv_status st = QV_OK;
  if (!keys) return qv_error_set(err, QV_ENOMEM, "sort: out of memory");
  int32_t *idx = malloc(sizeof(int32_t) * (size_t)n_specs);
  if (!idx) {
    free(keys);
    return qv_error_set(err, QV_ENOMEM, "sort: out of memory");
  }
  for (int32_t k = 0; k < n_specs && st == QV_OK; k++)
    st = qvc_find_column(t, specs[k].column, &idx[k], err);
  if (st == QV_OK) st = qvc_columns_load(&cols, t, idx, n_specs, err);
  if (st == QV_OK) {
    for (int32_t k = 0; k < n_specs; k++) {
      keys[k].column = cols.columns[k];
      keys[k].descending = specs[k].descending;
      keys[k].null_placement = specs[k].null_placement;
    }
    st = qv_sort_indices(keys, n_specs, out, err);
  }
  qvc_columns_reset(&cols);
  free(keys);
  free(idx);
  return st;
}
