/*
 * test_permutation.c — quiver/random.h against vectors printed by NumPy
 * 2.4.6 (the tests' venv), e.g.
 *   np.random.SeedSequence(42).generate_state(8)
 *   np.random.PCG64(42).state, .random_raw(3), .ctypes.next_uint32(...)
 *   np.random.default_rng(42).permutation(10)
 *   g = np.random.default_rng(123); g.permutation(100000); g.bit_generator.state
 * pasted as constants, so this test needs no Python. The Python suite
 * (tests/python/test_permutation.py) compares many more seeds and sizes
 * against numpy live.
 */
#include <stdlib.h>

#include "quiver/random.h"
#include "qv_test.h"

static void check_words(const uint32_t *entropy, size_t n, const uint32_t expected[8]) {
  uint32_t got[8];
  qv_seed_sequence_generate(entropy, n, got, 8);
  for (int i = 0; i < 8; i++) QV_CHECK_EQ_INT(got[i], expected[i]);
}

/* SeedSequence(x).generate_state(8) for int, >2**32 int, long and empty
 * entropy (the long one exercises mixing words beyond the pool). */
static void test_seed_sequence(void) {
  const uint32_t e42[] = {42};
  const uint32_t x42[8] = {0xcd540ab7, 0x9f1e2e6d, 0x79fb94b6, 0xd57873dc,
                           0x64d420b7, 0x7d282a1b, 0x4692d5ff, 0x33657971};
  check_words(e42, 1, x42);
  const uint32_t emax[] = {0xffffffff, 0xffffffff}; /* 2**64 - 1 */
  const uint32_t xmax[8] = {0x928cad0d, 0xaebca151, 0x8638dc7a, 0x119c3044,
                            0x59e642a7, 0x1bbb1556, 0xe8c4a8f6, 0xa76b11e3};
  check_words(emax, 2, xmax);
  const uint32_t e6[] = {1, 2, 3, 4, 5, 6};
  const uint32_t x6[8] = {0x1d1bca21, 0xebcd001d, 0xb202608b, 0xcfea83a4,
                          0xe4fcf5b6, 0x9b21dd81, 0x08e2670b, 0x1b5dd0a3};
  check_words(e6, 6, x6);
  const uint32_t xempty[8] = {0xb0f478be, 0xdb2cd7e7, 0x2c71ba49, 0xabf4641a,
                              0x9d7b8d41, 0x20c6ed6d, 0x223c39d4, 0x2c4099de};
  check_words(NULL, 0, xempty);
}

/* PCG64(seed).state and its first raw outputs. */
static void test_pcg64_seeding(void) {
  struct {
    uint64_t seed, s_hi, s_lo, i_hi, i_lo, raw[3];
  } cases[] = {
      {0,
       0x1aa1b5345996452dull,
       0x09585eb7a69561e3ull,
       0x418ddadb3af71a82ull,
       0x588133bc447873a9ull,
       {0xa30febcfd9c2825full, 0x4510bdf882d9d721ull, 0x0a7d3da94ecde8b8ull}},
      {42,
       0xcea44f6798798f2aull,
       0xacbc7c9d68860ac8ull,
       0xfa505436c9a8416eull,
       0x66caf2e28d25abffull,
       {0xc621fbcd16d92688ull, 0x705a5661a791ffc1ull, 0xdbcd12c26eda1624ull}},
      {UINT64_MAX,
       0xddc419442aebde79ull,
       0x4d8b0a3b048acdb0ull,
       0x37762aacb3cc854full,
       0x4ed623c7d18951edull,
       {0xae163a7a8c47568full, 0xd86659f5f3382359ull, 0x01e52b195bc2d24aull}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    qv_rng r;
    qv_rng_init(&r, cases[c].seed);
    QV_CHECK(r.state_hi == cases[c].s_hi && r.state_lo == cases[c].s_lo);
    QV_CHECK(r.inc_hi == cases[c].i_hi && r.inc_lo == cases[c].i_lo);
    QV_CHECK_EQ_INT(r.has_uint32, 0);
    for (int k = 0; k < 3; k++) QV_CHECK(qv_rng_next_u64(&r) == cases[c].raw[k]);
  }
}

/* numpy's next_uint32 buffers the high half across 64-bit draws:
 * PCG64(42) through ctypes: next32, next64, next32, next32. */
static void test_u32_buffer(void) {
  qv_rng r;
  qv_rng_init(&r, 42);
  QV_CHECK_EQ_INT(qv_rng_next_u32(&r), 0x16d92688u);      /* low of raw 0 */
  QV_CHECK(qv_rng_next_u64(&r) == 0x705a5661a791ffc1ull); /* raw 1 */
  QV_CHECK_EQ_INT(qv_rng_next_u32(&r), 0xc621fbcdu);      /* high of raw 0 */
  QV_CHECK_EQ_INT(qv_rng_next_u32(&r), 0x6eda1624u);      /* low of raw 2 */
}

static void check_perm(uint64_t seed, int64_t n, const int64_t *expected) {
  int64_t *got = malloc((size_t)n * sizeof *got);
  QV_REQUIRE(got != NULL);
  QV_CHECK_EQ_INT(qv_permutation(seed, n, got, NULL), QV_OK);
  for (int64_t i = 0; i < n; i++) QV_CHECK_EQ_INT(got[i], expected[i]);
  free(got);
}

/* default_rng(seed).permutation(n). */
static void test_permutation_small(void) {
  const int64_t p0[] = {4, 6, 2, 7, 3, 5, 9, 0, 8, 1};
  const int64_t p42[] = {5, 6, 0, 7, 3, 2, 4, 9, 1, 8};
  const int64_t pmax[] = {8, 7, 3, 0, 4, 6, 1, 2, 5, 9};
  check_perm(0, 10, p0);
  check_perm(42, 10, p42);
  check_perm(UINT64_MAX, 10, pmax);
  int64_t one = -7;
  QV_CHECK_EQ_INT(qv_permutation(5, 1, &one, NULL), QV_OK);
  QV_CHECK_EQ_INT(one, 0);
  QV_CHECK_EQ_INT(qv_permutation(5, 0, NULL, NULL), QV_OK);
}

/* Seeds beyond 64 bits and sequences go through their entropy words:
 * default_rng(2**100 + 12345) = words [12345, 0, 0, 16];
 * default_rng([1, 2, 3, 4, 5, 6]); default_rng([]) equals default_rng(0). */
static void test_entropy_seeds(void) {
  struct {
    uint32_t words[6];
    size_t n;
    int64_t perm[8];
  } cases[] = {
      {{12345, 0, 0, 16}, 4, {1, 5, 7, 2, 4, 6, 3, 0}},
      {{1, 2, 3, 4, 5, 6}, 6, {0, 7, 6, 5, 4, 1, 3, 2}},
      {{0}, 0, {2, 4, 3, 6, 5, 0, 1, 7}},
      {{0}, 1, {2, 4, 3, 6, 5, 0, 1, 7}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    qv_rng r;
    qv_rng_init_entropy(&r, cases[c].words, cases[c].n);
    int64_t got[8];
    QV_CHECK_EQ_INT(qv_rng_permutation(&r, 8, got, NULL), QV_OK);
    for (int i = 0; i < 8; i++) QV_CHECK_EQ_INT(got[i], cases[c].perm[i]);
  }
}

/* Successive permutations continue one stream: g = default_rng(99);
 * g.permutation(5); g.permutation(7). */
static void test_stream_continues(void) {
  qv_rng r;
  qv_rng_init(&r, 99);
  int64_t a[5], b[7];
  const int64_t ea[5] = {2, 0, 3, 4, 1}, eb[7] = {5, 4, 2, 0, 3, 6, 1};
  QV_CHECK_EQ_INT(qv_rng_permutation(&r, 5, a, NULL), QV_OK);
  QV_CHECK_EQ_INT(qv_rng_permutation(&r, 7, b, NULL), QV_OK);
  for (int i = 0; i < 5; i++) QV_CHECK_EQ_INT(a[i], ea[i]);
  for (int i = 0; i < 7; i++) QV_CHECK_EQ_INT(b[i], eb[i]);
}

/* Larger sizes: a few elements, a weighted checksum
 * sum((i+1) * p[i]) mod 2**64, and the generator state afterwards (which
 * proves the same number of 32-bit draws was consumed). */
static void test_permutation_state_after(void) {
  struct {
    uint64_t seed;
    int64_t n;
    int64_t head[4], tail[4];
    uint64_t checksum; /* 0 = not recorded */
    int has_uint32;
    uint32_t uinteger;
    uint64_t s_hi, s_lo;
  } cases[] = {
      {42,
       1000,
       {978, 933, 859, 916},
       {609, 961, 973, 648},
       0,
       1,
       0xa2713b15u,
       0x4e33abd9c668f0aaull,
       0x969c1f5d30b5e323ull},
      {7,
       1001,
       {816, 924, 151, 901},
       {444, 661, 425, 651},
       0,
       0,
       0xbbd2eb80u,
       0x86887ea31765cc07ull,
       0x29245f1e60c01b06ull},
      {123,
       100000,
       {52903, 74868, 16800, 16242},
       {98606, 79579, 93475, 40089},
       0xe33e6c42b1cbull,
       0,
       0xd0ecf6e5u,
       0xe5daa9c5296a3681ull,
       0xa67b7028e342cc94ull},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t n = cases[c].n;
    int64_t *p = malloc((size_t)n * sizeof *p);
    QV_REQUIRE(p != NULL);
    qv_rng r;
    qv_rng_init(&r, cases[c].seed);
    QV_CHECK_EQ_INT(qv_rng_permutation(&r, n, p, NULL), QV_OK);
    for (int k = 0; k < 4; k++) {
      QV_CHECK_EQ_INT(p[k], cases[c].head[k]);
      QV_CHECK_EQ_INT(p[n - 4 + k], cases[c].tail[k]);
    }
    if (cases[c].checksum != 0) {
      uint64_t sum = 0;
      for (int64_t i = 0; i < n; i++) sum += (uint64_t)(i + 1) * (uint64_t)p[i];
      QV_CHECK(sum == cases[c].checksum);
    }
    QV_CHECK_EQ_INT(r.has_uint32, cases[c].has_uint32);
    QV_CHECK_EQ_INT(r.uinteger, cases[c].uinteger);
    QV_CHECK(r.state_hi == cases[c].s_hi && r.state_lo == cases[c].s_lo);
    free(p);
  }
}

/* Every size near the prefetch distance gives a permutation (each value
 * once) and shuffle == permutation of the identity. */
static void test_shuffle_sizes(void) {
  for (int64_t n = 0; n <= 200; n++) {
    int64_t *p = malloc((size_t)(n + 1) * sizeof *p);
    int64_t *q = malloc((size_t)(n + 1) * sizeof *q);
    char *seen = calloc((size_t)n + 1, 1);
    QV_REQUIRE(p && q && seen);
    qv_rng a, b;
    qv_rng_init(&a, (uint64_t)n);
    b = a;
    QV_CHECK_EQ_INT(qv_rng_permutation(&a, n, p, NULL), QV_OK);
    for (int64_t i = 0; i < n; i++) q[i] = i;
    QV_CHECK_EQ_INT(qv_rng_shuffle_i64(&b, q, n, NULL), QV_OK);
    for (int64_t i = 0; i < n; i++) {
      QV_CHECK(p[i] >= 0 && p[i] < n && !seen[p[i]]);
      if (p[i] >= 0 && p[i] < n) seen[p[i]] = 1;
      QV_CHECK_EQ_INT(p[i], q[i]);
    }
    QV_CHECK(a.state_hi == b.state_hi && a.state_lo == b.state_lo);
    free(p);
    free(q);
    free(seen);
  }
}

/* A bounded draw stays within [0, max] on both the 32- and 64-bit paths. */
static void test_interval_bounds(void) {
  qv_rng r;
  qv_rng_init(&r, 3);
  const uint64_t maxes[] = {
      0, 1, 2, 3, 5, 0xffffffffull, 0x100000000ull, (1ull << 40) + 1, UINT64_MAX - 1, UINT64_MAX};
  for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++)
    for (int k = 0; k < 1000; k++) QV_CHECK(qv_rng_interval(&r, maxes[m]) <= maxes[m]);
}

static void test_errors(void) {
  qv_error err;
  int64_t x[2];
  QV_CHECK_EQ_INT(qv_permutation(1, -1, x, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "permutation: length -1 is negative");
  QV_CHECK_EQ_INT(qv_permutation(1, 2, NULL, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "permutation: output is NULL for length 2");
  qv_rng r;
  qv_rng_init(&r, 1);
  QV_CHECK_EQ_INT(qv_rng_shuffle_i64(&r, x, -3, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "shuffle: length -3 is negative");
  QV_CHECK_EQ_INT(qv_rng_shuffle_i64(&r, NULL, 4, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "shuffle: data is NULL for length 4");
}

int main(void) {
  QV_RUN(test_seed_sequence);
  QV_RUN(test_pcg64_seeding);
  QV_RUN(test_u32_buffer);
  QV_RUN(test_permutation_small);
  QV_RUN(test_entropy_seeds);
  QV_RUN(test_stream_continues);
  QV_RUN(test_permutation_state_after);
  QV_RUN(test_shuffle_sizes);
  QV_RUN(test_interval_bounds);
  QV_RUN(test_errors);
  return QV_TEST_END();
}
