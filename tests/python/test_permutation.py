"""Oracle test of quiver/random.h against NumPy itself.

qv_permutation(seed, n) must equal numpy.random.default_rng(seed)
.permutation(n) element for element, and leave the generator in the state
numpy's leaves (same 128-bit LCG state, same buffered 32-bit half), for
many seeds and for sizes 0, 1, 2, every power of two up to 2**20 and its
neighbours, plus one 10**8 case. Seeds beyond 64 bits and sequence seeds go
through qv_rng_init_entropy with numpy's own word split. The raw streams
(64-bit, buffered 32-bit, bounded draws on the 64-bit path, which no
feasible shuffle reaches) are compared against numpy's bit generator called
through its ctypes interface.

Arrays are compared with numpy (array_equal on buffers quiver wrote into),
never as Python lists. Environment: QV_BUILD (directory of libquiver.so).
"""
import ctypes
import time

import numpy as np
import pytest

from numpy.random.bit_generator import _coerce_to_uint32_array

from qvpaths import LIB, require

MASK64 = (1 << 64) - 1


class QvRng(ctypes.Structure):
    _fields_ = [
        ("state_hi", ctypes.c_uint64),
        ("state_lo", ctypes.c_uint64),
        ("inc_hi", ctypes.c_uint64),
        ("inc_lo", ctypes.c_uint64),
        ("has_uint32", ctypes.c_int),
        ("uinteger", ctypes.c_uint32),
    ]


@pytest.fixture(scope="module")
def lib():
    lib = ctypes.CDLL(require(LIB))
    P = ctypes.POINTER
    lib.qv_permutation.argtypes = [ctypes.c_uint64, ctypes.c_int64,
                                   ctypes.c_void_p, ctypes.c_void_p]
    lib.qv_rng_init.argtypes = [P(QvRng), ctypes.c_uint64]
    lib.qv_rng_init.restype = None
    lib.qv_rng_init_entropy.argtypes = [P(QvRng), ctypes.c_void_p,
                                        ctypes.c_size_t]
    lib.qv_rng_init_entropy.restype = None
    lib.qv_rng_permutation.argtypes = [P(QvRng), ctypes.c_int64,
                                       ctypes.c_void_p, ctypes.c_void_p]
    lib.qv_rng_shuffle_i64.argtypes = [P(QvRng), ctypes.c_void_p,
                                       ctypes.c_int64, ctypes.c_void_p]
    lib.qv_rng_next_u64.argtypes = [P(QvRng)]
    lib.qv_rng_next_u64.restype = ctypes.c_uint64
    lib.qv_rng_next_u32.argtypes = [P(QvRng)]
    lib.qv_rng_next_u32.restype = ctypes.c_uint32
    lib.qv_rng_interval.argtypes = [P(QvRng), ctypes.c_uint64]
    lib.qv_rng_interval.restype = ctypes.c_uint64
    lib.qv_seed_sequence_generate.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                              ctypes.c_void_p, ctypes.c_size_t]
    lib.qv_seed_sequence_generate.restype = None
    return lib


SEEDS = [0, 1, 2, 42, 1234, 2**31 - 1, 2**32 - 1, 2**32, 2**32 + 1,
         2**53 + 7, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1]
SIZES = sorted({0, 1, 2, 3} | {v for k in range(2, 21)
                              for v in (2**k - 1, 2**k, 2**k + 1)})


def rng_for(lib, seed):
    """qv_rng for a numpy seed: an int or a sequence of ints."""
    r = QvRng()
    if isinstance(seed, int) and 0 <= seed <= MASK64:
        lib.qv_rng_init(ctypes.byref(r), seed)
    else:
        words = _coerce_to_uint32_array(seed)
        lib.qv_rng_init_entropy(ctypes.byref(r), words.ctypes.data, len(words))
    return r


def assert_same_state(r, gen):
    st = gen.bit_generator.state
    assert (r.state_hi << 64 | r.state_lo) == st["state"]["state"]
    assert (r.inc_hi << 64 | r.inc_lo) == st["state"]["inc"]
    assert r.has_uint32 == st["has_uint32"]
    assert r.uinteger == st["uinteger"]


def qv_perm(lib, r, n):
    out = np.empty(n, dtype=np.int64)
    assert lib.qv_rng_permutation(ctypes.byref(r), n, out.ctypes.data, None) == 0
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_permutation_equals_numpy(lib, seed):
    for n in SIZES:
        gen = np.random.default_rng(seed)
        expected = gen.permutation(n)
        r = rng_for(lib, seed)
        got = qv_perm(lib, r, n)
        assert np.array_equal(got, expected), (seed, n)
        assert_same_state(r, gen)
    # The one-call form agrees with the generator form.
    out = np.empty(1000, dtype=np.int64)
    assert lib.qv_permutation(seed, 1000, out.ctypes.data, None) == 0
    assert np.array_equal(out, np.random.default_rng(seed).permutation(1000))


@pytest.mark.parametrize("seed", [2**64, 2**64 + 1, 2**100 + 12345, 2**128 - 1,
                                  3**200, [1, 2, 3], [1, 2, 3, 4, 5, 6],
                                  [2**40, 0, 7], [], [0], [0, 0]])
def test_entropy_seeds(lib, seed):
    for n in (0, 1, 2, 10, 1000, 65537):
        gen = np.random.default_rng(seed)
        expected = gen.permutation(n)
        r = rng_for(lib, seed)
        assert np.array_equal(qv_perm(lib, r, n), expected), (seed, n)
        assert_same_state(r, gen)


def test_seed_sequence_words(lib):
    for seed in [0, 5, 2**32, 2**64 - 1, 2**300 + 1, [], [9] * 9]:
        words = _coerce_to_uint32_array(seed)
        out = np.empty(19, dtype=np.uint32)
        lib.qv_seed_sequence_generate(words.ctypes.data if len(words) else None,
                                      len(words), out.ctypes.data, 19)
        expected = np.random.SeedSequence(seed).generate_state(19)
        assert np.array_equal(out, expected), seed


def test_stream_continues_across_calls(lib):
    """Shuffles and permutations draw from one stream, as on a Generator."""
    gen = np.random.default_rng(2024)
    r = rng_for(lib, 2024)
    for n in (7, 1, 0, 33, 100, 3):
        assert np.array_equal(qv_perm(lib, r, n), gen.permutation(n))
        data = np.arange(n, dtype=np.int64) * 10 + 5
        expected = data.copy()
        gen.shuffle(expected)
        assert lib.qv_rng_shuffle_i64(ctypes.byref(r), data.ctypes.data, n,
                                      None) == 0
        assert np.array_equal(data, expected)
        assert_same_state(r, gen)


def test_raw_streams_match_numpy_bit_generator(lib):
    """64- and 32-bit draws, interleaved, against numpy's own PCG64 code
    (its ctypes interface calls pcg64_next64 / pcg64_next32)."""
    pattern = [32, 64, 32, 32, 32, 64, 64, 32, 64, 32, 32, 32] * 50
    for seed in (0, 42, 2**64 - 1):
        bg = np.random.PCG64(seed)
        c = bg.ctypes
        r = rng_for(lib, seed)
        for width in pattern:
            if width == 64:
                assert lib.qv_rng_next_u64(ctypes.byref(r)) == c.next_uint64(c.state)
            else:
                assert lib.qv_rng_next_u32(ctypes.byref(r)) == c.next_uint32(c.state)
        assert_same_state(r, np.random.Generator(bg))


def numpy_interval(c, mx):
    """numpy's random_interval (distributions.c) driven by numpy's own
    next_uint32 / next_uint64: masked rejection, 32-bit draws when
    max <= 0xffffffff."""
    if mx == 0:
        return 0
    mask = (1 << mx.bit_length()) - 1
    while True:
        if mx <= 0xFFFFFFFF:
            v = c.next_uint32(c.state) & mask
        else:
            v = c.next_uint64(c.state) & mask
        if v <= mx:
            return v


def test_interval_both_paths(lib):
    """Bounded draws including maxima above 2**32 (the 64-bit path that a
    shuffle of more than 2**32 elements takes first), interleaved with
    32-bit ones so the buffered half must survive 64-bit draws."""
    maxes = [0, 1, 2, 3, 6, 7, 8, 1000, 2**31, 2**32 - 1, 2**32, 2**32 + 1,
             3 * 2**33, 2**40 + 5, 2**62, 2**63 - 1, 2**63, 2**64 - 1]
    for seed in (1, 99):
        bg = np.random.PCG64(seed)
        c = bg.ctypes
        r = rng_for(lib, seed)
        for rep in range(40):
            for mx in maxes:
                assert lib.qv_rng_interval(ctypes.byref(r), mx) == \
                    numpy_interval(c, mx), (seed, rep, mx)
        assert_same_state(r, np.random.Generator(bg))


def test_1e8(lib):
    """The size the issue names: 10**8 elements, once."""
    n = 10**8
    out = np.empty(n, dtype=np.int64)
    t0 = time.perf_counter()
    assert lib.qv_permutation(42, n, out.ctypes.data, None) == 0
    t_qv = time.perf_counter() - t0
    t0 = time.perf_counter()
    expected = np.random.default_rng(42).permutation(n)
    t_np = time.perf_counter() - t0
    print(f"\npermutation(10**8): quiver {t_qv:.2f} s, numpy {t_np:.2f} s")
    assert np.array_equal(out, expected)
