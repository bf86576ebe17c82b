"""The expression language (quiver/expr.h) against pyarrow.compute.

A table with nulls, NaN, non-ASCII text, a dictionary column, lists and a
struct is written by pyarrow as an IPC file in several record batches
(one dictionary shared by all of them). quiver reads it, compiles each
predicate with qv_predicate_compile and selects rows batch by batch
through ctypes; pyarrow filters the same table with an equivalent
pyarrow.compute expression. The kept row ids must be equal. Filters keep
only true rows, so SQL null and pyarrow's false agree wherever the two
differ (e.g. is_in of a null).

Environment: QV_BUILD (directory holding libquiver.so).
"""
import ctypes
import os
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pytest

from qvpaths import LIB, require

QV_ERROR_SIZE = 1024
ROWS = 3000
BATCH = 700


class QvError(ctypes.Structure):
    _fields_ = [("message", ctypes.c_char * QV_ERROR_SIZE)]


class QvArray(ctypes.Structure):
    # Only the leading fields are read (see include/quiver/array.h).
    _fields_ = [("refcount_", ctypes.c_long), ("type", ctypes.c_void_p),
                ("length", ctypes.c_int64)]


@pytest.fixture(scope="module")
def lib():
    q = ctypes.CDLL(require(LIB))
    vp, i64 = ctypes.c_void_p, ctypes.c_int64
    q.qv_reader_open_path.argtypes = [ctypes.c_char_p, vp, ctypes.POINTER(vp), ctypes.POINTER(QvError)]
    q.qv_reader_schema.argtypes = [vp]
    q.qv_reader_schema.restype = vp
    q.qv_reader_num_batches.argtypes = [vp]
    q.qv_reader_num_batches.restype = i64
    q.qv_reader_batch.argtypes = [vp, i64, ctypes.POINTER(ctypes.POINTER(QvArray)), ctypes.POINTER(QvError)]
    q.qv_reader_close.argtypes = [vp]
    q.qv_array_unref.argtypes = [ctypes.POINTER(QvArray)]
    q.qv_predicate_compile.argtypes = [ctypes.c_char_p, vp, ctypes.POINTER(vp), ctypes.POINTER(QvError)]
    q.qv_bound_expr_select.argtypes = [vp, ctypes.POINTER(QvArray), ctypes.c_char_p,
                                       ctypes.POINTER(i64), ctypes.POINTER(QvError)]
    q.qv_bound_expr_free.argtypes = [vp]
    return q


def make_table():
    rng = random.Random(20261130)

    def maybe(v, p=0.15):
        return None if rng.random() < p else v

    words = ["", "a", "ab", "abc", "b", "ba", "héllo", "naïve", "日本語", "hello world",
             "xyz", "Ab", "abcabc"]
    n = ROWS
    cols = {
        "id": pa.array(range(n), pa.int64()),
        "label": pa.array([maybe(rng.randint(0, 3)) for _ in range(n)], pa.int32()),
        "big": pa.array([maybe(rng.choice([rng.randint(-100, 100), 2**62, -2**62]))
                         for _ in range(n)], pa.int64()),
        "u": pa.array([maybe(rng.choice([rng.randint(0, 50), 2**64 - 1, 2**63]))
                       for _ in range(n)], pa.uint64()),
        "score": pa.array([maybe(rng.choice([rng.uniform(-2, 2), float("nan"), 0.0, -0.0,
                                             float("inf")])) for _ in range(n)], pa.float64()),
        "f32": pa.array([maybe(rng.uniform(-5, 5)) for _ in range(n)], pa.float32()),
        "flag": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
        "text": pa.array([maybe(rng.choice(words)) for _ in range(n)], pa.string()),
        "ltext": pa.array([maybe(rng.choice(words)) for _ in range(n)], pa.large_string()),
        "cat": pa.array([maybe(rng.choice(["red", "green", "blue", "rouge"])) for _ in range(n)],
                        pa.string()).dictionary_encode(),
        "tags": pa.array([maybe([rng.randint(0, 9) for _ in range(rng.randint(0, 5))])
                          for _ in range(n)], pa.list_(pa.int32())),
        "meta": pa.array([maybe({"x": maybe(rng.randint(-5, 5)), "lang": maybe(rng.choice(["en", "fr"]))})
                          for _ in range(n)],
                         pa.struct([("x", pa.int32()), ("lang", pa.string())])),
    }
    return pa.table(cols)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    table = make_table()
    path = str(tmp_path_factory.mktemp("expr") / "t.arrow")
    with ipc.new_file(path, table.schema) as w:
        for b in table.to_batches(max_chunksize=BATCH):
            w.write_batch(b)
    return table, path


def quiver_select(lib, path, text):
    """Row ids kept by quiver, or the error message."""
    err = QvError()
    r = ctypes.c_void_p()
    assert lib.qv_reader_open_path(path.encode(), None, ctypes.byref(r), ctypes.byref(err)) == 0, \
        err.message
    pred = ctypes.c_void_p()
    st = lib.qv_predicate_compile(text.encode(), lib.qv_reader_schema(r), ctypes.byref(pred),
                                  ctypes.byref(err))
    if st != 0:
        lib.qv_reader_close(r)
        return err.message.decode()
    kept, base = [], 0
    try:
        for i in range(lib.qv_reader_num_batches(r)):
            arr = ctypes.POINTER(QvArray)()
            assert lib.qv_reader_batch(r, i, ctypes.byref(arr), ctypes.byref(err)) == 0
            n = arr.contents.length
            bits = ctypes.create_string_buffer((n + 7) // 8)
            count = ctypes.c_int64()
            st = lib.qv_bound_expr_select(pred, arr, bits, ctypes.byref(count), ctypes.byref(err))
            lib.qv_array_unref(arr)
            if st != 0:
                return err.message.decode()
            raw = bits.raw
            rows = [base + j for j in range(n) if raw[j >> 3] >> (j & 7) & 1]
            assert len(rows) == count.value
            kept += rows
            base += n
    finally:
        lib.qv_bound_expr_free(pred)
        lib.qv_reader_close(r)
    return kept


f = pc.field
utf8 = pa.string()

# (quiver expression, equivalent pyarrow.compute expression)
CASES = [
    ("label == 1", f("label") == 1),
    ("label != 1", f("label") != 1),
    ("label >= 2 and flag", (f("label") >= 2) & f("flag")),
    ("label == 1 or flag", (f("label") == 1) | f("flag")),
    ("not flag", ~f("flag")),
    ("not (label < 2 or flag)", ~((f("label") < 2) | f("flag"))),
    ("flag is null", f("flag").is_null()),
    ("label is not null and text is null", f("label").is_valid() & f("text").is_null()),
    ("label * 3 + 1 > 4", (f("label") * 3 + 1) > 4),
    ("big - label < 0", (f("big") - f("label")) < 0),
    ("big / 4 > 10.5", pc.divide(f("big").cast(pa.float64(), safe=False), 4.0) > 10.5),
    ("-big > 5", pc.negate(f("big")) > 5),
    ("abs(big) <= 50", pc.abs(f("big")) <= 50),
    ("score > 0.5", f("score") > 0.5),
    ("score != score", f("score") != f("score")),
    ("score * 2 < label", (f("score") * 2) < f("label").cast(pa.float64())),
    ("f32 > score", f("f32").cast(pa.float64()) > f("score")),
    ("u > 100", f("u") > pa.scalar(100, pa.uint64())),
    ("u == 18446744073709551615", f("u") == pa.scalar(2**64 - 1, pa.uint64())),
    # As doubles: exact here (no two values tie near 2**53).
    ("u > big", f("u").cast(pa.float64(), safe=False) > f("big").cast(pa.float64(), safe=False)),
    ("label in (0, 2)", f("label").isin([0, 2])),
    ("label not in (0, 2)", ~f("label").isin([0, 2]) & f("label").is_valid()),
    ("text == 'héllo'", f("text") == "héllo"),
    ("text < 'b'", f("text") < "b"),
    ("text >= ltext", f("text").cast(pa.large_string()) >= f("ltext")),
    ("len(text) > 3", pc.utf8_length(f("text")) > 3),
    ("len(ltext) == 3", pc.utf8_length(f("ltext")) == 3),
    ("starts_with(text, 'ab')", pc.starts_with(f("text"), "ab")),
    ("ends_with(text, 'c')", pc.ends_with(f("text"), "c")),
    ("contains(text, 'b')", pc.match_substring(f("text"), "b")),
    ("text in ('a', 'xyz', '日本語')", f("text").isin(["a", "xyz", "日本語"])),
    ("cat == 'red'", f("cat").cast(utf8) == "red"),
    ("starts_with(cat, 'r') and len(cat) > 3", pc.starts_with(f("cat").cast(utf8), "r")
     & (pc.utf8_length(f("cat").cast(utf8)) > 3)),
    ("cat in ('blue', 'green') or cat is null", f("cat").cast(utf8).isin(["blue", "green"])
     | f("cat").is_null()),
    ("cat != text", f("cat").cast(utf8) != f("text")),
    ("len(tags) >= 3", pc.list_value_length(f("tags")) >= 3),
    ("tags is null", f("tags").is_null()),
    ("meta.x > 0", pc.struct_field(f("meta"), "x") > 0),
    ("meta.lang == 'fr' and label == 1", (pc.struct_field(f("meta"), "lang") == "fr")
     & (f("label") == 1)),
    ("meta.x is null", pc.struct_field(f("meta"), "x").is_null()),
    ("label == 1 and len(text) > 3 or score < 0 and not flag",
     ((f("label") == 1) & (pc.utf8_length(f("text")) > 3)) | ((f("score") < 0) & ~f("flag"))),
]


@pytest.mark.parametrize("text,expr", CASES, ids=[c[0] for c in CASES])
def test_filter_matches_pyarrow(lib, data, text, expr):
    table, path = data
    want = table.filter(expr).column("id").to_pylist()
    got = quiver_select(lib, path, text)
    assert isinstance(got, list), got
    assert got == want
    assert 0 < len(want) < ROWS or text in ("u == 18446744073709551615",)


def test_errors_come_back_with_a_caret(lib, data):
    _, path = data
    assert quiver_select(lib, path, "label == 1 and") == (
        "expected an expression after 'and', found end of input at column 15:\n"
        "  label == 1 and\n"
        "                ^")
    assert quiver_select(lib, path, "text == 1") == (
        "cannot compare column 'text' (string) with 1 (int64) at column 6:\n"
        "  text == 1\n"
        "       ^")
    # Overflow is an error on the rows that decide the result only.
    msg = quiver_select(lib, path, "big * 4 > 0")
    assert isinstance(msg, str) and msg.startswith("integer overflow: "), msg
    assert isinstance(quiver_select(lib, path, "abs(big) < 1000 and big * 4 > 0"), list)
