/*
 * quiver/random.h — random streams that reproduce NumPy's default
 * generator bit for bit: `numpy.random.default_rng(seed)` (SeedSequence ->
 * PCG64 -> Generator) and its `permutation` / `shuffle`. Dataset layer:
 * `datasets`' Dataset.shuffle(seed) and train_test_split(seed) are
 * `np.random.default_rng(seed).permutation(len(dataset))`, so a quiver
 * shuffle with the same seed gives a `datasets` user the same order.
 *
 * What is reproduced (checked against NumPy 2.4.6; NumPy does not promise
 * that Generator streams stay the same across versions):
 *  - SeedSequence(entropy) with the default pool of four 32-bit words and
 *    no spawn key; generate_state(4, uint64) seeds PCG64 (state, increment)
 *    exactly as numpy's PCG64 constructor does.
 *  - PCG64 (XSL-RR 128/64), including the 32-bit draws that split one
 *    64-bit output, low half first, keeping the high half buffered.
 *  - Generator.shuffle of a 1-D array and Generator.permutation(n): Fisher–
 *    Yates from the last element down, each j from numpy's
 *    random_interval(i) (masked rejection; 32-bit draws while i fits in 32
 *    bits, 64-bit draws above).
 *
 * Seeds. `default_rng(seed)` with a Python int seed >= 0 is
 * qv_rng_init(seed) for seed < 2**64 and, for any larger int,
 * qv_rng_init_entropy with the int's 32-bit words, least significant first
 * and without trailing zero words (numpy's _int_to_uint32_array; the int 0
 * is the single word 0). A sequence seed `default_rng([a, b, ...])` is the
 * concatenation of each element's words. Generators built from spawned
 * SeedSequences, seedless ones (seed=None) and other bit generators are
 * not reproduced.
 *
 * Thread safety: a qv_rng is plain data; use one per thread.
 */
#ifndef QUIVER_RANDOM_H
#define QUIVER_RANDOM_H

#include "quiver/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * PCG64 state as numpy reports it in `bit_generator.state`: the 128-bit LCG
 * state and increment as high/low 64-bit halves, and the buffered upper
 * half of the last 64-bit output consumed by a 32-bit draw. Plain data: may
 * be copied to fork a stream.
 */
typedef struct qv_rng {
  uint64_t state_hi, state_lo; /**< LCG state (state = hi * 2**64 + lo) */
  uint64_t inc_hi, inc_lo;     /**< LCG increment (always odd) */
  int has_uint32;              /**< 1 when `uinteger` is the next 32-bit draw */
  uint32_t uinteger;           /**< buffered upper half (valid if has_uint32) */
} qv_rng;

/**
 * numpy `SeedSequence(entropy).generate_state(n_words, np.uint32)` for a
 * SeedSequence with the default pool size (4) and no spawn key. `entropy`
 * holds `n_entropy` 32-bit words (may be NULL when n_entropy is 0; an empty
 * entropy is what `SeedSequence([])` uses). Writes `n_out` words to out.
 */
QV_API void qv_seed_sequence_generate(const uint32_t *entropy, size_t n_entropy, uint32_t *out,
                                      size_t n_out);

/** `np.random.default_rng(seed)` for an integer seed 0 <= seed < 2**64. */
QV_API void qv_rng_init(qv_rng *rng, uint64_t seed);

/**
 * `np.random.default_rng(entropy)` where the seed's SeedSequence entropy
 * is given as 32-bit words (see "Seeds" above). n_words may be 0.
 */
QV_API void qv_rng_init_entropy(qv_rng *rng, const uint32_t *words, size_t n_words);

/** Next raw 64-bit output (`bit_generator.random_raw()`). */
QV_API uint64_t qv_rng_next_u64(qv_rng *rng);

/** Next 32-bit output: the buffered upper half if there is one, otherwise
 *  the low half of a fresh 64-bit output (whose upper half is buffered). */
QV_API uint32_t qv_rng_next_u32(qv_rng *rng);

/** numpy's random_interval(max): uniform integer in [0, max]. */
QV_API uint64_t qv_rng_interval(qv_rng *rng, uint64_t max);

/**
 * `Generator.shuffle(x)` for a 1-D array of `n` 8-byte elements (int64;
 * uint64 data may be passed cast, the shuffle only moves elements),
 * advancing rng exactly as numpy does. Fails with QV_EARG when n < 0 or
 * data is NULL while n > 0. Draws ahead and prefetches the elements it
 * will swap: on arrays much larger than the CPU caches it takes about a
 * quarter of numpy's time (10^8 elements: ~1.3 s vs ~6 s).
 */
QV_API qv_status qv_rng_shuffle_i64(qv_rng *rng, int64_t *data, int64_t n,
                                    qv_error *err) QV_NODISCARD;

/**
 * `Generator.permutation(n)`: writes a permutation of 0..n-1 to out[0..n),
 * advancing rng. QV_EARG when n < 0 (numpy would return an empty array) or
 * when out is NULL while n > 0.
 */
QV_API qv_status qv_rng_permutation(qv_rng *rng, int64_t n, int64_t *out,
                                    qv_error *err) QV_NODISCARD;

/**
 * `np.random.default_rng(seed).permutation(n)`, written to out[0..n).
 * The caller owns `out` (n elements). Errors as qv_rng_permutation.
 */
QV_API qv_status qv_permutation(uint64_t seed, int64_t n, int64_t *out, qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_RANDOM_H */
