"""Tests of quiver/fingerprint.h through ctypes on libquiver.so.

An independent re-implementation of the documented encoding (version 1,
quiver/fingerprint.h) in Python, hashed with libxxhash's XXH64 through
ctypes, is the oracle for qv_fingerprint_update / _from_identity on many
argument sets (random nested ones included). Also: determinism across
processes (two fresh interpreters), sensitivity to every input, argument
order independence, validation against `datasets`' rules, huggingface
metadata and file identity.

Environment: QV_BUILD (directory holding libquiver.so).
"""
import ctypes
import ctypes.util
import json
import os
import random
import struct
import subprocess
import sys

import numpy as np
import pytest

from qvpaths import LIB, require

QV_ERROR_SIZE = 1024
FP_SIZE = 65
HERE = os.path.dirname(os.path.abspath(__file__))


# --------------------------------------------------------------------------
# Reference encoding (written from the header's specification)

def _xxh64_lib():
    path = ctypes.util.find_library("xxhash") or "libxxhash.so.0"
    x = ctypes.CDLL(path)
    x.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_ulonglong]
    x.XXH64.restype = ctypes.c_ulonglong
    return x


_XXH = _xxh64_lib()


def xxh64(data: bytes) -> int:
    return _XXH.XXH64(data, len(data), 0)


def u64(v):
    return struct.pack("<Q", v)


class UInt(int):
    """An integer passed through qv_fingerprint_arg_uint."""


def ref_value(v) -> bytes:
    if v is None:
        return b"N"
    if isinstance(v, bool):
        return b"B" + bytes([int(v)])
    if isinstance(v, int):
        return b"I" + bytes([1 if v < 0 else 0]) + u64(abs(v))
    if isinstance(v, float):
        bits = 0x7FF8000000000000 if v != v else struct.unpack("<Q", struct.pack("<d", v))[0]
        return b"F" + u64(bits)
    if isinstance(v, str):
        b = v.encode("utf-8")
        return b"S" + u64(len(b)) + b
    if isinstance(v, bytes):
        return b"Y" + u64(len(v)) + v
    if isinstance(v, np.ndarray):
        raw = v.astype("<u8" if v.dtype == np.uint64 else "<i8").tobytes()
        tag = b"a" if v.dtype == np.uint64 and v.size and int(v.max()) >= 2**63 else b"A"
        return tag + u64(v.size) + u64(xxh64(raw))
    if isinstance(v, list):
        return b"L" + u64(len(v)) + b"".join(ref_value(e) for e in v)
    if isinstance(v, dict):
        items = sorted((k.encode("utf-8"), e) for k, e in v.items())
        return b"D" + u64(len(items)) + b"".join(
            u64(len(k)) + k + ref_value(e) for k, e in items)
    raise TypeError(type(v))


def ref_update(prev, transform, args):
    data = (b"quiver-fingerprint-1" + ref_value(prev) + ref_value(transform)
            + ref_value(args or {}))
    return f"{xxh64(data):016x}"


def ref_identity(path, size, mtime_ns):
    data = (b"quiver-file-identity-1" + ref_value(path) + ref_value(size)
            + ref_value(mtime_ns))
    return f"{xxh64(data):016x}"


# --------------------------------------------------------------------------
# quiver through ctypes

class Err(ctypes.Structure):
    _fields_ = [("message", ctypes.c_char * QV_ERROR_SIZE)]


class QvKv(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p),
                ("key_len", ctypes.c_int64), ("value_len", ctypes.c_int64)]


class QvMetadata(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("kv", ctypes.POINTER(QvKv))]


class QvFileIdentity(ctypes.Structure):
    _fields_ = [("size", ctypes.c_int64), ("mtime_ns", ctypes.c_int64),
                ("dev", ctypes.c_uint64), ("ino", ctypes.c_uint64)]


def load(path):
    lib = ctypes.CDLL(path)
    vp, cp, i64, sz, err = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64,
                            ctypes.c_size_t, ctypes.POINTER(Err))
    sigs = {
        "qv_fingerprint_validate": [cp, err],
        "qv_fingerprint_args_new": [ctypes.POINTER(vp), err],
        "qv_fingerprint_arg_none": [vp, cp, err],
        "qv_fingerprint_arg_bool": [vp, cp, ctypes.c_bool, err],
        "qv_fingerprint_arg_int": [vp, cp, i64, err],
        "qv_fingerprint_arg_uint": [vp, cp, ctypes.c_uint64, err],
        "qv_fingerprint_arg_float": [vp, cp, ctypes.c_double, err],
        "qv_fingerprint_arg_str": [vp, cp, cp, err],
        "qv_fingerprint_arg_strn": [vp, cp, cp, sz, err],
        "qv_fingerprint_arg_bytes": [vp, cp, cp, sz, err],
        "qv_fingerprint_arg_int_array": [vp, cp, vp, i64, err],
        "qv_fingerprint_arg_uint_array": [vp, cp, vp, i64, err],
        "qv_fingerprint_arg_begin_list": [vp, cp, err],
        "qv_fingerprint_arg_begin_dict": [vp, cp, err],
        "qv_fingerprint_arg_end": [vp, err],
        "qv_fingerprint_update": [cp, cp, vp, ctypes.c_char_p, err],
        "qv_fingerprint_from_identity": [cp, i64, i64, ctypes.c_char_p, err],
        "qv_fingerprint_from_metadata": [ctypes.POINTER(QvMetadata), ctypes.c_char_p,
                                         ctypes.POINTER(ctypes.c_bool), err],
        "qv_fingerprint_of_file": [cp, ctypes.POINTER(QvMetadata),
                                   ctypes.POINTER(QvFileIdentity), ctypes.c_char_p, err],
    }
    for name, argtypes in sigs.items():
        f = getattr(lib, name)
        f.argtypes = argtypes
        f.restype = ctypes.c_int
    lib.qv_fingerprint_args_free.argtypes = [vp]
    lib.qv_fingerprint_args_free.restype = None
    return lib


@pytest.fixture(scope="module")
def lib():
    return load(require(LIB))


class QvError(Exception):
    def __init__(self, status, message):
        super().__init__(f"status {status}: {message}")
        self.status, self.message = status, message


def check(st, e):
    if st != 0:
        raise QvError(st, e.message.decode())


def add_value(lib, a, key, v, e):
    k = None if key is None else key.encode("utf-8")
    if v is None:
        return lib.qv_fingerprint_arg_none(a, k, e)
    if isinstance(v, bool):
        return lib.qv_fingerprint_arg_bool(a, k, v, e)
    if isinstance(v, UInt):
        return lib.qv_fingerprint_arg_uint(a, k, int(v), e)
    if isinstance(v, int):
        if v >= 2**63:
            return lib.qv_fingerprint_arg_uint(a, k, v, e)
        return lib.qv_fingerprint_arg_int(a, k, v, e)
    if isinstance(v, float):
        return lib.qv_fingerprint_arg_float(a, k, v, e)
    if isinstance(v, str):
        b = v.encode("utf-8")
        return lib.qv_fingerprint_arg_strn(a, k, b, len(b), e)
    if isinstance(v, bytes):
        return lib.qv_fingerprint_arg_bytes(a, k, v, len(v), e)
    if isinstance(v, np.ndarray):
        arr = np.ascontiguousarray(v)
        f = lib.qv_fingerprint_arg_uint_array if arr.dtype == np.uint64 else \
            lib.qv_fingerprint_arg_int_array
        return f(a, k, arr.ctypes.data if arr.size else None, arr.size, e)
    if isinstance(v, list):
        st = lib.qv_fingerprint_arg_begin_list(a, k, e)
        for x in v:
            st = st or add_value(lib, a, None, x, e)
        return st or lib.qv_fingerprint_arg_end(a, e)
    if isinstance(v, dict):
        st = lib.qv_fingerprint_arg_begin_dict(a, k, e)
        for kk, x in v.items():
            st = st or add_value(lib, a, kk, x, e)
        return st or lib.qv_fingerprint_arg_end(a, e)
    raise TypeError(type(v))


def qv_update(lib, prev, transform, args):
    """args: dict (added in its iteration order) or None (NULL args)."""
    e = Err()
    a = ctypes.c_void_p()
    if args is not None:
        check(lib.qv_fingerprint_args_new(ctypes.byref(a), ctypes.byref(e)), e)
    try:
        if args is not None:
            for k, v in args.items():
                check(add_value(lib, a, k, v, ctypes.byref(e)), e)
        out = ctypes.create_string_buffer(FP_SIZE)
        check(lib.qv_fingerprint_update(prev.encode(), transform.encode(),
                                        a if args is not None else None, out,
                                        ctypes.byref(e)), e)
        return out.value.decode()
    finally:
        lib.qv_fingerprint_args_free(a)


# --------------------------------------------------------------------------
# The documented examples (also pinned in tests/unit/test_fingerprint.c and
# docs/fingerprints.md).

DOC_EXAMPLES = [
    ("0123456789abcdef", "quiver.shuffle", {"seed": 42}),
    ("0123456789abcdef", "quiver.select",
     {"indices": np.array([0, 1, 2], dtype=np.int64)}),
    ("0123456789abcdef", "quiver.flatten_indices", None),
    ("0123456789abcdef", "quiver.sort",
     {"column_names": ["label", "text"], "reverse": [True, False],
      "null_placement": "at_end"}),
    ("0123456789abcdef", "tokenize@2",
     {"batched": True, "batch_size": 1000, "fn_kwargs": {"max_len": 128, "p": 0.5}}),
]


def test_documented_examples_match_reference(lib):
    got = [qv_update(lib, *ex) for ex in DOC_EXAMPLES]
    assert got == [ref_update(*ex) for ex in DOC_EXAMPLES]
    assert got == EXPECTED_DOC


# Values printed by this reference encoder; the C unit test pins the same.
EXPECTED_DOC = [
    "3501711daa332773",
    "1a7a4a94262f541b",
    "243848191c4bb5f2",
    "83f6e7c2e17cacad",
    "8f1e55523d6a78e0",
]


def random_value(rng, depth=0):
    kind = rng.randrange(10 if depth < 3 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, 1, -1, 2**63 - 1, -2**63, 2**64 - 1, rng.randrange(-10**6, 10**6)])
    if kind == 3:
        return rng.choice([0.0, -0.0, 1.5, float("inf"), float("nan"), rng.random()])
    if kind == 4:
        return "".join(rng.choice("ab\u00e9\u4e2d\0") for _ in range(rng.randrange(6)))
    if kind == 5:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
    if kind == 6:
        return np.array([rng.randrange(-2**63, 2**63) for _ in range(rng.randrange(5))],
                        dtype=np.int64)
    if kind == 7:
        return np.array([rng.randrange(0, 2**64) for _ in range(rng.randrange(5))],
                        dtype=np.uint64)
    if kind == 8:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{rng.randrange(100)}": random_value(rng, depth + 1)
            for _ in range(rng.randrange(4))}


def test_random_arguments_match_reference(lib):
    rng = random.Random(6)
    for _ in range(300):
        args = {f"arg{i}": random_value(rng) for i in range(rng.randrange(5))}
        assert qv_update(lib, "fp", "t", args) == ref_update("fp", "t", args), args


def test_large_index_array(lib):
    idx = np.random.default_rng(1).permutation(10**6)
    assert qv_update(lib, "a" * 16, "select", {"indices": idx}) == \
        ref_update("a" * 16, "select", {"indices": idx})


def test_deterministic_across_processes(lib):
    """Two fresh interpreters (new address space, new hash seeds) print the
    same fingerprints as this one."""
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "import test_fingerprint as t\n"
        "lib = t.load(%r)\n"
        "print('|'.join(t.qv_update(lib, *ex) for ex in t.DOC_EXAMPLES))\n"
    ) % (HERE, require(LIB))
    outs = []
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, env=env, check=True)
        outs.append(r.stdout.strip())
    here = "|".join(qv_update(lib, *ex) for ex in DOC_EXAMPLES)
    assert outs[0] == outs[1] == here


def test_sensitive_to_every_input(lib):
    base_args = {"seed": 42, "keep_in_memory": False, "name": "x",
                 "ratio": 0.25, "indices": np.arange(5, dtype=np.int64),
                 "columns": ["a", "b"], "opts": {"k": 1}}
    base = qv_update(lib, "0123456789abcdef", "quiver.shuffle", base_args)
    variants = [
        ("0123456789abcdee", "quiver.shuffle", base_args),
        ("0123456789abcdef", "quiver.shufflE", base_args),
        ("0123456789abcdef", "quiver.shuffle@2", base_args),
    ]
    changes = {
        "seed": [43, -42, UInt(2**63), 42.0, "42", True, None, [42]],
        "keep_in_memory": [True, 0, None],
        "name": ["y", "x\0", b"x", ""],
        "ratio": [0.5, -0.25, float("nan"), 1],
        "indices": [np.arange(6, dtype=np.int64), np.arange(5, dtype=np.int64)[::-1].copy(),
                    list(range(5)), np.array([0, 1, 2, 3, 2**40], dtype=np.int64)],
        "columns": [["b", "a"], ["a"], ["a", "b", None], {"a": "b"}, "ab"],
        "opts": [{"k": 2}, {"K": 1}, {"k": 1, "j": None}, [["k", 1]]],
    }
    for key, values in changes.items():
        for v in values:
            variants.append(("0123456789abcdef", "quiver.shuffle", {**base_args, key: v}))
        renamed = {(key + "_" if k == key else k): v for k, v in base_args.items()}
        variants.append(("0123456789abcdef", "quiver.shuffle", renamed))
        dropped = {k: v for k, v in base_args.items() if k != key}
        variants.append(("0123456789abcdef", "quiver.shuffle", dropped))
    seen = {base}
    for ex in variants:
        fp = qv_update(lib, *ex)
        assert fp not in seen, ex
        seen.add(fp)


def test_canonical_equalities(lib):
    """What the encoding deliberately treats as equal."""
    def fp(args):
        return qv_update(lib, "p", "t", args)
    # Order of additions.
    assert fp({"a": 1, "b": 2}) == fp({"b": 2, "a": 1})
    assert fp({"d": {"x": 1, "y": 2}}) == fp({"d": {"y": 2, "x": 1}})
    # int64 and uint64 of one value; int64 and uint64 arrays of one content.
    assert fp({"a": 5}) == fp({"a": UInt(5)})
    assert fp({"a": np.array([1, 2], dtype=np.int64)}) == \
        fp({"a": np.array([1, 2], dtype=np.uint64)})
    assert fp({"a": np.array([-1], dtype=np.int64)}) != \
        fp({"a": np.array([2**64 - 1], dtype=np.uint64)})
    assert fp({"a": -1}) != fp({"a": UInt(2**64 - 1)})
    # All NaNs alike; signed zeros differ.
    nan2 = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000001))[0]
    assert fp({"a": float("nan")}) == fp({"a": nan2})
    assert fp({"a": 0.0}) != fp({"a": -0.0})
    # No arguments: NULL args and an empty set agree.
    assert qv_update(lib, "p", "t", None) == fp({})


def error_of(fn):
    with pytest.raises(QvError) as exc:
        fn()
    return exc.value


def test_argument_errors(lib):
    e = Err()
    a = ctypes.c_void_p()
    assert lib.qv_fingerprint_args_new(ctypes.byref(a), ctypes.byref(e)) == 0
    out = ctypes.create_string_buffer(FP_SIZE)
    try:
        for k, v in ((b"x", 1), (b"x ", 2), (b"x", 3)):
            assert lib.qv_fingerprint_arg_int(a, k, v, ctypes.byref(e)) == 0
        assert lib.qv_fingerprint_update(b"p", b"t", a, out, ctypes.byref(e)) == 5
        assert e.message == b"fingerprint argument 'x' given twice"
    finally:
        lib.qv_fingerprint_args_free(a)
    assert lib.qv_fingerprint_args_new(ctypes.byref(a), ctypes.byref(e)) == 0
    try:
        assert lib.qv_fingerprint_arg_begin_dict(a, b"d", ctypes.byref(e)) == 0
        for k in (b"y", b"y"):
            assert lib.qv_fingerprint_arg_none(a, k, ctypes.byref(e)) == 0
        assert lib.qv_fingerprint_arg_end(a, ctypes.byref(e)) == 5
        assert e.message == b"fingerprint argument 'y' given twice"
        assert lib.qv_fingerprint_arg_end(a, ctypes.byref(e)) == 5
        assert lib.qv_fingerprint_arg_end(a, None) == 5
    finally:
        lib.qv_fingerprint_args_free(a)
    e = error_of(lambda: qv_update(lib, "", "t", {}))
    assert e.message == ("fingerprint update: previous invalid fingerprint '': "
                         "it must be a non-empty string")
    e = error_of(lambda: qv_update(lib, "p", "", {}))
    assert e.message == "fingerprint update: the transform name is empty"
    e = error_of(lambda: qv_update(lib, "p", "t", {"d": {}, "e": None}) and
                 qv_update(lib, "p", "t", None) and add_end_without_open(lib))
    assert e.message == ("fingerprint arguments: end without an open list or "
                         "dictionary")
    nested = {"d": {}}
    for _ in range(64):  # 64 open dictionaries are allowed, the 65th is not
        nested = {"d": nested}
    e = error_of(lambda: qv_update(lib, "p", "t", nested))
    assert e.message == "fingerprint argument 'd': nesting deeper than 64 levels"


def add_end_without_open(lib):
    e = Err()
    a = ctypes.c_void_p()
    check(lib.qv_fingerprint_args_new(ctypes.byref(a), ctypes.byref(e)), e)
    try:
        check(lib.qv_fingerprint_arg_end(a, ctypes.byref(e)), e)
    finally:
        lib.qv_fingerprint_args_free(a)


def test_sticky_errors_and_open_containers(lib):
    e = Err()
    a = ctypes.c_void_p()
    assert lib.qv_fingerprint_args_new(ctypes.byref(a), ctypes.byref(e)) == 0
    out = ctypes.create_string_buffer(FP_SIZE)
    try:
        assert lib.qv_fingerprint_arg_begin_list(a, b"l", ctypes.byref(e)) == 0
        assert lib.qv_fingerprint_update(b"p", b"t", a, out, ctypes.byref(e)) == 5
        assert e.message == (b"fingerprint update: 1 list(s)/dictionaries of the "
                             b"arguments are still open")
        # A keyed value inside a list is a usage error; it sticks.
        assert lib.qv_fingerprint_arg_int(a, b"k", 1, ctypes.byref(e)) == 5
        assert e.message == (b"fingerprint argument 'k': a list element takes "
                             b"no key (pass NULL)")
        assert lib.qv_fingerprint_arg_int(a, None, 1, ctypes.byref(e)) == 5
        assert lib.qv_fingerprint_arg_end(a, ctypes.byref(e)) == 5
        assert lib.qv_fingerprint_update(b"p", b"t", a, out, ctypes.byref(e)) == 5
        assert e.message == (b"fingerprint argument 'k': a list element takes "
                             b"no key (pass NULL)")
    finally:
        lib.qv_fingerprint_args_free(a)


@pytest.mark.parametrize("fp,message", [
    ("", "invalid fingerprint '': it must be a non-empty string"),
    ("a/b", "invalid fingerprint 'a/b': character '/' at byte 1 is not allowed "
            "(none of <>:/\\|?* or control characters)"),
    ("x" * 65, "invalid fingerprint '" + "x" * 65 + "': 65 bytes, at most 64"),
    ("ab\tc", "invalid fingerprint 'ab\\x09c': character '\\x09' at byte 2 is "
              "not allowed (none of <>:/\\|?* or control characters)"),
    ("C:x", "invalid fingerprint 'C:x': character ':' at byte 1 is not allowed "
            "(none of <>:/\\|?* or control characters)"),
])
def test_validate_rejects(lib, fp, message):
    e = Err()
    assert lib.qv_fingerprint_validate(fp.encode(), ctypes.byref(e)) == 5
    assert e.message.decode() == message


@pytest.mark.parametrize("fp", ["0123456789abcdef", "my-fingerprint_v2.1", "x" * 64,
                                "caf\u00e9", "a b"])
def test_validate_accepts(lib, fp):
    assert lib.qv_fingerprint_validate(fp.encode(), None) == 0


def metadata(pairs):
    kvs = (QvKv * max(len(pairs), 1))()
    for i, (k, v) in enumerate(pairs):
        kvs[i] = QvKv(k, v, len(k), len(v))
    return QvMetadata(len(pairs), kvs)


def from_metadata(lib, pairs):
    md = metadata(pairs)
    out = ctypes.create_string_buffer(FP_SIZE)
    found = ctypes.c_bool()
    e = Err()
    st = lib.qv_fingerprint_from_metadata(ctypes.byref(md), out, ctypes.byref(found),
                                          ctypes.byref(e))
    return st, found.value, out.value.decode(), e.message.decode()


def test_from_metadata(lib):
    hf = json.dumps({"info": {"features": {}}, "fingerprint": "5f3a0c2b9d1e4f67"}).encode()
    assert from_metadata(lib, [(b"other", b"x"), (b"huggingface", hf)])[:3] == \
        (0, True, "5f3a0c2b9d1e4f67")
    assert from_metadata(lib, [(b"other", b"x")])[:2] == (0, False)
    assert from_metadata(lib, [(b"huggingface", b'{"info": {}}')])[:2] == (0, False)
    assert from_metadata(lib, [(b"huggingface", b'{"fingerprint": null}')])[:2] == (0, False)
    st, _, _, msg = from_metadata(lib, [(b"huggingface", b'{"fingerprint": 5}')])
    assert (st, msg) == (1, "schema metadata 'huggingface': \"fingerprint\" is not a string")
    st, _, _, msg = from_metadata(lib, [(b"huggingface", b'{"fingerprint": "../../x"}')])
    assert (st, msg) == (1, "schema metadata 'huggingface': invalid fingerprint "
                            "'../../x': character '/' at byte 2 is not allowed "
                            "(none of <>:/\\|?* or control characters)")
    st, _, _, msg = from_metadata(lib, [(b"huggingface", b"[1, 2]")])
    assert (st, msg) == (1, "schema metadata 'huggingface': expected a JSON object")
    st, _, _, msg = from_metadata(lib, [(b"huggingface", b'{"fingerprint": ')])
    assert st == 1 and msg.startswith("schema metadata 'huggingface': invalid JSON at line 1")


def of_file(lib, path, pairs=None, ident=None):
    md = metadata(pairs) if pairs is not None else None
    out = ctypes.create_string_buffer(FP_SIZE)
    e = Err()
    st = lib.qv_fingerprint_of_file(path.encode(), ctypes.byref(md) if md else None,
                                    ctypes.byref(ident) if ident else None, out,
                                    ctypes.byref(e))
    return st, out.value.decode(), e.message.decode()


def test_of_file(lib, tmp_path):
    p = tmp_path / "data.arrow"
    p.write_bytes(b"12345")
    os.utime(p, ns=(1_700_000_000_000_000_000, 1_700_000_000_123_456_789))
    st, fp, _ = of_file(lib, str(p))
    assert st == 0
    assert fp == ref_identity(os.path.realpath(p), 5, 1_700_000_000_123_456_789)
    # Through a relative path and a symbolic link: the same file, same print.
    link = tmp_path / "link.arrow"
    link.symlink_to(p)
    assert of_file(lib, str(link))[1] == fp
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert of_file(lib, "data.arrow")[1] == fp
    finally:
        os.chdir(cwd)
    # Metadata wins; an identity recorded at mapping time is used as given.
    hf = json.dumps({"fingerprint": "cafe0123cafe0123"}).encode()
    assert of_file(lib, str(p), [(b"huggingface", hf)])[1] == "cafe0123cafe0123"
    ident = QvFileIdentity(7, 99, 0, 0)
    assert of_file(lib, str(p), [], ident)[1] == ref_identity(os.path.realpath(p), 7, 99)
    # Changing the file changes the fingerprint.
    p.write_bytes(b"123456")
    assert of_file(lib, str(p))[1] != fp
    st, _, msg = of_file(lib, str(tmp_path / "missing.arrow"))
    assert st == 4 and msg.startswith("file fingerprint: cannot resolve '")
    assert msg.endswith("missing.arrow': No such file or directory")


def test_identity_reference(lib):
    out = ctypes.create_string_buffer(FP_SIZE)
    for path, size, mtime in [("/data/train.arrow", 1024, 1_700_000_000_123_456_789),
                              ("/x", 0, 0), ("/\u00e9", 2**62, -5)]:
        assert lib.qv_fingerprint_from_identity(path.encode(), size, mtime, out, None) == 0
        assert out.value.decode() == ref_identity(path, size, mtime)
