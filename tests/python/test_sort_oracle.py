"""Oracle tests of quiver's sort indices and unique against pyarrow and
Hugging Face `datasets`.

Random tables (several batches, nulls everywhere, few distinct values so
that ties and stability matter; floats with NaN, -0.0 and infinities;
strings sharing long prefixes and holding zero bytes) go into quiver in
memory (C Stream import) and memory-mapped (an IPC stream written by
pyarrow; batches carry different dictionaries). Then, through ctypes:

  - qv_table_sort_indices on every column alone, both orders, both null
    placements, and on random multi-column keys with a placement per key,
    against pc.sort_indices (what `Dataset.sort` calls);
  - qv_table_unique on every column against pc.unique (what
    `Dataset.unique` calls), values compared bit for bit (so 0.0 / -0.0
    and NaN count);
  - `datasets` itself: Dataset.sort's indices mapping and Dataset.unique on
    the same table.

pyarrow sorts neither dictionaries nor views nor half floats inside a
table; for those columns the oracle sorts the decoded column (dictionary
values, the view bytes as string/binary, float16 widened to float32),
which is the order quiver documents. For views pc.unique is taken on the
string/binary cast too (pyarrow 26 turns a null into "" in unique of a
string_view).
"""
import ctypes
import decimal
import math
import os
import random
import struct
import tempfile

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402
import pytest  # noqa: E402

import qvtable  # noqa: E402
from qvpaths import LIB, require  # noqa: E402

QV_NULLS_AT_END, QV_NULLS_AT_START = 0, 1
PLACEMENT = {"at_end": QV_NULLS_AT_END, "at_start": QV_NULLS_AT_START}


class QvSortSpec(ctypes.Structure):
    _fields_ = [("column", ctypes.c_char_p), ("descending", ctypes.c_bool),
                ("null_placement", ctypes.c_int)]


@pytest.fixture(scope="module")
def lib():
    lib = qvtable.Lib(require(LIB))
    vp = ctypes.c_void_p
    lib.dll.qv_table_sort_indices.argtypes = [vp, ctypes.POINTER(QvSortSpec), ctypes.c_int32,
                                              ctypes.POINTER(ctypes.c_int64), vp]
    lib.dll.qv_table_sort_indices.restype = ctypes.c_int
    lib.dll.qv_table_unique.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(vp), vp]
    lib.dll.qv_table_unique.restype = ctypes.c_int
    lib.dll.qv_export_array.argtypes = [vp, vp, vp]
    lib.dll.qv_export_array.restype = ctypes.c_int
    return lib


@pytest.fixture(scope="module")
def tmp():
    with tempfile.TemporaryDirectory(prefix="qv-sort-oracle-") as d:
        yield d


# ---------------------------------------------------------------------------
# Random data

KINDS = ["null", "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
         "uint64", "float16", "float32", "float64", "decimal128", "decimal256", "date32",
         "date64", "time32", "time64", "timestamp", "duration", "string", "large_string",
         "binary", "large_binary", "string_view", "binary_view", "fsb", "dictionary",
         "dictionary_int"]

PREFIXES = ["", "a", "ab", "abcdefg", "abcdefgh", "abcdefghijklmn",
            "abcdefghijklmnopqrstuvwxyz0123456789", "ab\0", "abcdefgh\0\0\0\0\0\0\0\0x", "zz", "é"]
FLOATS = [-math.inf, -2.5, -0.0, 0.0, 1.0, 3.25, math.inf, math.nan, -1e300, 7.0, 1e-300]


def _nulls(rng, values, p):
    return [None if rng.random() < p else v for v in values]


def _strings(rng, n):
    out = []
    for _ in range(n):
        s = rng.choice(PREFIXES) + "".join(rng.choice("\0ab") for _ in range(rng.randint(0, 3)))
        out.append(s)
    return out


def column(rng, kind, n, p_null=0.15):
    """A column of `kind` with few distinct values (many ties)."""
    small = [rng.randint(-3, 3) for _ in range(n)]
    if kind == "null":
        return pa.nulls(n)
    if kind == "bool":
        return pa.array(_nulls(rng, [v > 0 for v in small], p_null), pa.bool_())
    if kind.startswith("int") or kind.startswith("uint"):
        t = pa.type_for_alias(kind)
        bits = t.bit_width
        lo, hi = (0, 2**bits - 1) if kind.startswith("u") else (-2**(bits - 1), 2**(bits - 1) - 1)
        pool = sorted({lo, hi, min(hi, max(lo, 0)), min(hi, max(lo, 1)), min(hi, max(lo, -1)),
                       rng.randint(lo, hi), rng.randint(lo, hi)})
        return pa.array(_nulls(rng, [rng.choice(pool) for _ in range(n)], p_null), t)
    if kind in ("float16", "float32", "float64"):
        vals = [rng.choice(FLOATS) for _ in range(n)]
        if kind == "float16":  # within half range
            vals = [v if not math.isfinite(v) or abs(v) < 60000 and (v == 0 or abs(v) > 1e-4)
                    else 2.0 for v in vals]
            return pa.array(_nulls(rng, vals, p_null), pa.float32()).cast(pa.float16())
        return pa.array(_nulls(rng, vals, p_null), pa.type_for_alias(kind))
    if kind == "decimal128":
        return pa.array(_nulls(rng, [decimal.Decimal(v).scaleb(-2) * 10**20 for v in small], p_null),
                        pa.decimal128(30, 2))
    if kind == "decimal256":
        return pa.array(_nulls(rng, [decimal.Decimal(v) * 10**50 + v for v in small], p_null),
                        pa.decimal256(70, 0))
    if kind == "date32":
        return pa.array(_nulls(rng, small, p_null), pa.int32()).cast(pa.date32())
    if kind == "date64":
        return pa.array(_nulls(rng, [v * 86400000 for v in small], p_null), pa.int64()).cast(pa.date64())
    if kind == "time32":
        return pa.array(_nulls(rng, [v + 3 for v in small], p_null), pa.int32()).cast(pa.time32("ms"))
    if kind == "time64":
        return pa.array(_nulls(rng, [v + 3 for v in small], p_null), pa.int64()).cast(pa.time64("ns"))
    if kind == "timestamp":
        return pa.array(_nulls(rng, [v * 10**15 for v in small], p_null), pa.int64()).cast(
            pa.timestamp("us", "UTC"))
    if kind == "duration":
        return pa.array(_nulls(rng, small, p_null), pa.int64()).cast(pa.duration("ms"))
    if kind in ("string", "large_string", "string_view"):
        return pa.array(_nulls(rng, _strings(rng, n), p_null), pa.type_for_alias(kind))
    if kind in ("binary", "large_binary", "binary_view"):
        vals = [s.encode() + bytes([rng.choice([0, 255])]) * rng.randint(0, 1) for s in _strings(rng, n)]
        return pa.array(_nulls(rng, vals, p_null), pa.type_for_alias(kind))
    if kind == "fsb":
        return pa.array(_nulls(rng, [bytes(rng.choice([0, 1, 255]) for _ in range(3)) for _ in range(n)],
                               p_null), pa.binary(3))
    if kind == "dictionary":
        return pa.array(_nulls(rng, [rng.choice(["red", "green", "", "ø", "blue"]) for _ in range(n)],
                               p_null), pa.string()).dictionary_encode()
    if kind == "dictionary_int":
        return pa.array(_nulls(rng, small, p_null), pa.int64()).dictionary_encode()
    raise ValueError(kind)


def random_table(rng, kinds, n_batches):
    """A table of the given column kinds in n_batches batches (different
    dictionaries per batch)."""
    batches = []
    for _ in range(n_batches):
        n = rng.randint(0, 400)
        cols = [column(rng, k, n) for k in kinds]
        batches.append(pa.record_batch(cols, names=[f"c{i}_{k}" for i, k in enumerate(kinds)]))
    return pa.Table.from_batches(batches)


def decoded(col):
    """The column pyarrow can sort in a table: dictionaries decoded, views as
    string/binary, float16 as float32 (quiver's documented order for them)."""
    t = col.type
    if pa.types.is_dictionary(t):
        return pa.chunked_array([c.dictionary_decode() for c in col.chunks], t.value_type)
    if t == pa.string_view():
        return col.cast(pa.string())
    if t == pa.binary_view():
        return col.cast(pa.binary())
    if t == pa.float16():
        return col.cast(pa.float32())
    return col


def oracle_table(table):
    return pa.table([decoded(c) for c in table.columns], names=table.column_names)


# ---------------------------------------------------------------------------
# quiver through ctypes

def as_quiver(lib, table, tmp, mapped):
    if not mapped:
        return lib.table_from_pyarrow(table)
    path = os.path.join(tmp, "t.arrow")
    with pa.OSFile(path, "wb") as f, ipc.new_stream(f, table.schema) as w:  # dictionaries may change
        for b in table.to_batches():
            w.write_batch(b)
    return lib.open(path)


def q_sort(lib, qt, keys):
    """keys: [(name, "ascending"|"descending", "at_start"|"at_end")]."""
    specs = (QvSortSpec * len(keys))(*[QvSortSpec(n.encode(), o == "descending", PLACEMENT[p])
                                       for n, o, p in keys])
    rows = qt.num_rows
    out = (ctypes.c_int64 * max(1, rows))()
    lib.call("qv_table_sort_indices", qt.ptr, specs, len(keys), out)
    return list(out)[:rows]


def q_unique(lib, qt, name, typ):
    out = ctypes.c_void_p()
    lib.call("qv_table_unique", qt.ptr, name.encode(), ctypes.byref(out))
    c_array = ctypes.create_string_buffer(qvtable.ARROW_ARRAY_SIZE)
    try:
        lib.call("qv_export_array", out, ctypes.addressof(c_array))
    finally:
        lib.dll.qv_array_unref(out)
    return pa.Array._import_from_c(ctypes.addressof(c_array), typ)


def bits(values):
    """Values with floats replaced by their bit patterns (0.0 vs -0.0, NaN)."""
    return [("f", struct.pack(">d", v)) if isinstance(v, float) else v for v in values]


def pa_sort(table, keys):
    return pc.sort_indices(oracle_table(table), sort_keys=keys).to_pylist()


# ---------------------------------------------------------------------------
# Tests

@pytest.mark.parametrize("mapped", [False, True])
def test_single_column_sorts(lib, tmp, mapped):
    rng = random.Random(6 + mapped)
    table = random_table(rng, KINDS, 4)
    qt = as_quiver(lib, table, tmp, mapped)
    assert qt.num_rows == table.num_rows
    for name in table.column_names:
        for order in ("ascending", "descending"):
            for placement in ("at_end", "at_start"):
                keys = [(name, order, placement)]
                assert q_sort(lib, qt, keys) == pa_sort(table, keys), keys


@pytest.mark.parametrize("seed", range(12))
def test_multi_column_sorts(lib, tmp, seed):
    rng = random.Random(100 + seed)
    kinds = [rng.choice(KINDS) for _ in range(rng.randint(2, 4))]
    table = random_table(rng, kinds, rng.randint(1, 5))
    qt = as_quiver(lib, table, tmp, seed % 2 == 1)
    for _ in range(6):
        names = rng.sample(table.column_names, rng.randint(1, len(kinds)))
        keys = [(n, rng.choice(["ascending", "descending"]), rng.choice(["at_start", "at_end"]))
                for n in names]
        assert q_sort(lib, qt, keys) == pa_sort(table, keys), keys


def test_large_sorts(lib, tmp):
    """Enough rows for the radix paths (MSD split, string prefix passes)."""
    rng = random.Random(7)
    n = 150_000
    ints = pa.array([rng.randint(-2**63, 2**63 - 1) if rng.random() > 0.01 else None
                     for _ in range(n)], pa.int64())
    floats = pa.array([rng.choice(FLOATS) if rng.random() < 0.1 else rng.uniform(-1e6, 1e6)
                       for _ in range(n)], pa.float64())
    words = [rng.choice(PREFIXES) + "".join(rng.choice("abcdefghij") for _ in range(rng.randint(0, 12)))
             for _ in range(n)]
    strings = pa.array([w if rng.random() > 0.01 else None for w in words], pa.string())
    small = pa.array([rng.randint(0, 50) for _ in range(n)], pa.int32())
    table = pa.table({"i": ints, "f": floats, "s": strings, "k": small})
    table = pa.Table.from_batches(table.to_batches(max_chunksize=10_000))
    qt = as_quiver(lib, table, tmp, True)
    for keys in ([("i", "ascending", "at_end")], [("i", "descending", "at_start")],
                 [("f", "ascending", "at_end")], [("f", "descending", "at_end")],
                 [("s", "ascending", "at_end")], [("s", "descending", "at_start")],
                 [("k", "ascending", "at_end"), ("s", "descending", "at_end")],
                 [("k", "descending", "at_start"), ("f", "ascending", "at_start"),
                  ("i", "ascending", "at_end")]):
        assert q_sort(lib, qt, keys) == pa_sort(table, keys), keys


@pytest.mark.parametrize("mapped", [False, True])
def test_unique(lib, tmp, mapped):
    rng = random.Random(60 + mapped)
    table = random_table(rng, KINDS, 4)
    qt = as_quiver(lib, table, tmp, mapped)
    for name, col in zip(table.column_names, table.columns):
        got = q_unique(lib, qt, name, col.type)
        assert got.type == col.type
        want = pc.unique(decoded(col) if col.type in (pa.string_view(), pa.binary_view()) else col)
        assert bits(got.to_pylist()) == bits(want.to_pylist()), name


def test_datasets_sort_and_unique(lib, tmp):
    """The same answers as `datasets` itself (Dataset.sort's indices mapping,
    Dataset.unique)."""
    import datasets
    from datasets.table import InMemoryTable

    rng = random.Random(11)
    kinds = ["int32", "string", "float64", "large_string", "bool", "timestamp"]
    table = random_table(rng, kinds, 5)
    ds = datasets.Dataset(InMemoryTable(table))
    qt = as_quiver(lib, table, tmp, True)
    names = table.column_names
    for cols, reverse, placement in (([names[0]], [False], "at_end"),
                                     ([names[1], names[0]], [True, False], "at_start"),
                                     ([names[2], names[3], names[4]], [False, True, False], "last"),
                                     ([names[5], names[2]], [True, True], "first")):
        got = ds.sort(cols, reverse=reverse, null_placement=placement)
        want = got._indices.column("indices").to_pylist()
        p = {"last": "at_end", "first": "at_start"}.get(placement, placement)
        keys = [(c, "descending" if r else "ascending", p) for c, r in zip(cols, reverse)]
        assert q_sort(lib, qt, keys) == want, (cols, reverse, placement)
    for name, col in zip(names, table.columns):
        assert bits(q_unique(lib, qt, name, col.type).to_pylist()) == bits(ds.unique(name)), name


def test_errors(lib, tmp):
    table = pa.table({"a": pa.array([[1], [2]]), "b": [1, 2]})
    qt = as_quiver(lib, table, tmp, False)
    with pytest.raises(qvtable.QuiverError) as e:
        q_sort(lib, qt, [("a", "ascending", "at_end")])
    assert e.value.message == "sort key 0: cannot sort values of type list<item: int64>"
    with pytest.raises(qvtable.QuiverError) as e:
        q_sort(lib, qt, [("zz", "ascending", "at_end")])
    assert e.value.message == "no column named 'zz' in the table"
    with pytest.raises(qvtable.QuiverError) as e:
        q_unique(lib, qt, "a", pa.list_(pa.int64()))
    assert e.value.message == "grouper: key 0: cannot group values of type list<item: int64>"
