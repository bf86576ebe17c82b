/*
 * random.c — NumPy-exact random streams for the dataset layer: SeedSequence
 * seeding, the PCG64 bit generator, numpy's bounded draw random_interval,
 * and Generator.shuffle / permutation (Fisher–Yates). Dataset.shuffle(seed)
 * and train_test_split(seed) use qv_permutation so that the row order equals
 * `numpy.random.default_rng(seed).permutation(n)`, which is what `datasets`
 * computes. Needs only core. Written from numpy's documented algorithms
 * (bit_generator.pyx, pcg64.h, distributions.c, _generator.pyx).
 *
 * Speed: Fisher–Yates on an array larger than the caches is one cache miss
 * per element. The draws do not depend on the data, so the shuffle computes
 * them QV_SHUFFLE_AHEAD steps early and prefetches the element each will
 * swap; the misses then overlap instead of queueing one by one.
 */
#include <string.h>

#include "quiver/random.h"

/* The 128-bit integer PCG64 is defined on (GCC and Clang provide it). */
__extension__ typedef unsigned __int128 qv_u128;

/* ------------------------------------------------------------------------ */
/* SeedSequence (numpy.random.SeedSequence, pool_size 4, no spawn key)       */

#define SS_POOL_SIZE 4            /* 32-bit words of pooled entropy */
#define SS_INIT_A 0x43b0d7e5u     /* first multiplier of the entropy hash */
#define SS_MULT_A 0x931e8875u     /* its per-use multiplier */
#define SS_INIT_B 0x8b51f9ddu     /* first multiplier of the output hash */
#define SS_MULT_B 0x58f38dedu     /* its per-use multiplier */
#define SS_MIX_MULT_L 0xca01f9ddu /* mix(): weight of the destination word */
#define SS_MIX_MULT_R 0x4973f715u /* mix(): weight of the source word */
#define SS_XSHIFT 16              /* half a 32-bit word */

/* Hash one word; the multiplier evolves with every call (in/out). */
static uint32_t ss_hashmix(uint32_t value, uint32_t *mult) {
  value ^= *mult;
  *mult *= SS_MULT_A;
  value *= *mult;
  value ^= value >> SS_XSHIFT;
  return value;
}

static uint32_t ss_mix(uint32_t x, uint32_t y) {
  uint32_t r = SS_MIX_MULT_L * x - SS_MIX_MULT_R * y;
  return r ^ (r >> SS_XSHIFT);
}

/* Mix `n` entropy words into the pool, as SeedSequence.mix_entropy. */
static void ss_pool(const uint32_t *entropy, size_t n, uint32_t pool[SS_POOL_SIZE]) {
  uint32_t mult = SS_INIT_A;
  /* Hash the first words in; missing words hash as 0. */
  for (size_t i = 0; i < SS_POOL_SIZE; i++) pool[i] = ss_hashmix(i < n ? entropy[i] : 0u, &mult);
  /* Every word affects every other. */
  for (size_t src = 0; src < SS_POOL_SIZE; src++)
    for (size_t dst = 0; dst < SS_POOL_SIZE; dst++)
      if (src != dst) pool[dst] = ss_mix(pool[dst], ss_hashmix(pool[src], &mult));
  /* Words beyond the pool each mix into every pool word. */
  for (size_t src = SS_POOL_SIZE; src < n; src++)
    for (size_t dst = 0; dst < SS_POOL_SIZE; dst++)
      pool[dst] = ss_mix(pool[dst], ss_hashmix(entropy[src], &mult));
}

void qv_seed_sequence_generate(const uint32_t *entropy, size_t n_entropy, uint32_t *out,
                               size_t n_out) {
  uint32_t pool[SS_POOL_SIZE];
  ss_pool(entropy, n_entropy, pool);
  uint32_t mult = SS_INIT_B;
  for (size_t i = 0; i < n_out; i++) {
    uint32_t v = pool[i % SS_POOL_SIZE] ^ mult;
    mult *= SS_MULT_B;
    v *= mult;
    out[i] = v ^ (v >> SS_XSHIFT);
  }
}

/* ------------------------------------------------------------------------ */
/* PCG64 (XSL-RR 128/64, numpy's default bit generator)                      */

/* The 128-bit LCG multiplier of PCG's "setseq_128" generators. */
#define PCG_MULT_HI 0x2360ed051fc65da4ull
#define PCG_MULT_LO 0x4385df649fccf645ull

/* Working copy of a qv_rng with 128-bit integers, kept in registers by the
 * hot loops and written back once. */
typedef struct pcg {
  qv_u128 state, inc;
  int has32;
  uint32_t buf32;
} pcg;

static inline qv_u128 u128_make(uint64_t hi, uint64_t lo) { return ((qv_u128)hi << 64) | lo; }

static inline void pcg_load(pcg *p, const qv_rng *rng) {
  p->state = u128_make(rng->state_hi, rng->state_lo);
  p->inc = u128_make(rng->inc_hi, rng->inc_lo);
  p->has32 = rng->has_uint32;
  p->buf32 = rng->uinteger;
}

static inline void pcg_store(const pcg *p, qv_rng *rng) {
  rng->state_hi = (uint64_t)(p->state >> 64);
  rng->state_lo = (uint64_t)p->state;
  rng->inc_hi = (uint64_t)(p->inc >> 64);
  rng->inc_lo = (uint64_t)p->inc;
  rng->has_uint32 = p->has32;
  rng->uinteger = p->buf32;
}

static inline void pcg_step(pcg *p) {
  p->state = p->state * u128_make(PCG_MULT_HI, PCG_MULT_LO) + p->inc;
}

/* Advance, then output: xor the halves, rotate right by the top 6 bits. */
static inline uint64_t pcg_next64(pcg *p) {
  pcg_step(p);
  uint64_t x = (uint64_t)(p->state >> 64) ^ (uint64_t)p->state;
  unsigned rot = (unsigned)(p->state >> 122);
  return (x >> rot) | (x << ((-rot) & 63u));
}

/* One 64-bit output serves two 32-bit draws: low half now, high half next. */
static inline uint32_t pcg_next32(pcg *p) {
  if (p->has32) {
    p->has32 = 0;
    return p->buf32;
  }
  uint64_t v = pcg_next64(p);
  p->has32 = 1;
  p->buf32 = (uint32_t)(v >> 32);
  return (uint32_t)v;
}

/* numpy's random_interval: mask to the smallest 2^k-1 >= max, reject values
 * above max; 32-bit draws when max fits in 32 bits. */
static inline uint64_t pcg_interval(pcg *p, uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = ~0ull >> __builtin_clzll(max);
  uint64_t v;
  if (max <= 0xffffffffull) {
    do v = pcg_next32(p) & mask;
    while (v > max);
  } else {
    do v = pcg_next64(p) & mask;
    while (v > max);
  }
  return v;
}

/* srandom as numpy's pcg64_set_seed: increment from the sequence, two LCG
 * steps around adding the initial state. */
static void pcg_seed(pcg *p, qv_u128 initstate, qv_u128 initseq) {
  p->state = 0;
  p->inc = (initseq << 1) | 1u;
  pcg_step(p);
  p->state += initstate;
  pcg_step(p);
  p->has32 = 0;
  p->buf32 = 0;
}

void qv_rng_init_entropy(qv_rng *rng, const uint32_t *words, size_t n_words) {
  /* generate_state(4, uint64): 8 words read as little-endian pairs. */
  uint32_t w[8];
  qv_seed_sequence_generate(words, n_words, w, 8);
  uint64_t v[4];
  for (int k = 0; k < 4; k++) v[k] = (uint64_t)w[2 * k] | ((uint64_t)w[2 * k + 1] << 32);
  pcg p;
  pcg_seed(&p, u128_make(v[0], v[1]), u128_make(v[2], v[3]));
  pcg_store(&p, rng);
}

void qv_rng_init(qv_rng *rng, uint64_t seed) {
  /* A Python int's words: low first, no trailing zero word (0 -> [0]). */
  uint32_t words[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  qv_rng_init_entropy(rng, words, seed >> 32 ? 2 : 1);
}

uint64_t qv_rng_next_u64(qv_rng *rng) {
  pcg p;
  pcg_load(&p, rng);
  uint64_t v = pcg_next64(&p);
  pcg_store(&p, rng);
  return v;
}

uint32_t qv_rng_next_u32(qv_rng *rng) {
  pcg p;
  pcg_load(&p, rng);
  uint32_t v = pcg_next32(&p);
  pcg_store(&p, rng);
  return v;
}

uint64_t qv_rng_interval(qv_rng *rng, uint64_t max) {
  pcg p;
  pcg_load(&p, rng);
  uint64_t v = pcg_interval(&p, max);
  pcg_store(&p, rng);
  return v;
}

/* ------------------------------------------------------------------------ */
/* Shuffle and permutation (Generator.shuffle / Generator.permutation)       */

/* Draws computed ahead of their swap (a power of two): enough outstanding
 * prefetches to cover memory latency. */
#define QV_SHUFFLE_AHEAD 32

qv_status qv_rng_shuffle_i64(qv_rng *rng, int64_t *data, int64_t n, qv_error *err) {
  if (n < 0) return qv_error_set(err, QV_EARG, "shuffle: length %lld is negative", (long long)n);
  if (n > 0 && data == NULL)
    return qv_error_set(err, QV_EARG, "shuffle: data is NULL for length %lld", (long long)n);
  if (n < 2) return QV_OK; /* numpy draws nothing for 0 or 1 element */
  pcg p;
  pcg_load(&p, rng);
  /* numpy: for i = n-1 down to 1: j = random_interval(i); swap(i, j).
   * ring[i % AHEAD] holds the j of step i once drawn; draws run
   * QV_SHUFFLE_AHEAD steps ahead of the swaps, in numpy's order. */
  int64_t ring[QV_SHUFFLE_AHEAD];
  const int64_t mask = QV_SHUFFLE_AHEAD - 1;
  int64_t next = n - 1; /* next step to draw */
  for (; next >= 1 && next > n - 1 - QV_SHUFFLE_AHEAD; next--) {
    int64_t j = (int64_t)pcg_interval(&p, (uint64_t)next);
    ring[next & mask] = j;
    __builtin_prefetch(&data[j], 1, 3);
  }
  int64_t i = n - 1;
  /* Steady state: swap step i, draw step i - AHEAD into the slot just read. */
  for (; next >= 1; i--, next--) {
    int64_t j = ring[i & mask];
    int64_t jn = (int64_t)pcg_interval(&p, (uint64_t)next);
    ring[next & mask] = jn;
    __builtin_prefetch(&data[jn], 1, 3);
    int64_t t = data[i];
    data[i] = data[j];
    data[j] = t;
  }
  /* Drain: the last steps were drawn already. */
  for (; i >= 1; i--) {
    int64_t j = ring[i & mask];
    int64_t t = data[i];
    data[i] = data[j];
    data[j] = t;
  }
  pcg_store(&p, rng);
  return QV_OK;
}

qv_status qv_rng_permutation(qv_rng *rng, int64_t n, int64_t *out, qv_error *err) {
  if (n < 0)
    return qv_error_set(err, QV_EARG, "permutation: length %lld is negative", (long long)n);
  if (n > 0 && out == NULL)
    return qv_error_set(err, QV_EARG, "permutation: output is NULL for length %lld", (long long)n);
  for (int64_t i = 0; i < n; i++) out[i] = i;
  return qv_rng_shuffle_i64(rng, out, n, err);
}

qv_status qv_permutation(uint64_t seed, int64_t n, int64_t *out, qv_error *err) {
  qv_rng rng;
  qv_rng_init(&rng, seed);
  return qv_rng_permutation(&rng, n, out, err);
}
