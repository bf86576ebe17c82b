"""Oracle tests of quiver's table layer against pyarrow.

Random tables of every Arrow type pyarrow can build (nulls everywhere,
many small batches sliced out of larger ones, so batches have offsets)
go into quiver in memory (C Stream import) and memory-mapped (an IPC
stream file written by pyarrow). Every transform is compared with
pyarrow's own: Table.slice, take, filter, select / drop / rename,
add_column / append_column / set_column, cast, combine_chunks and
concat_tables (both axes, against quiver's concatenation tables). Cast
refusals must match pyarrow's (safe casts fail on the same inputs).
Recipes of mapped and concatenated tables are rebuilt in a child process
(a fresh interpreter, qvtable.py) and compared.

Values are compared column by column after combining chunks and decoding
dictionaries (pyarrow unifies dictionaries differently from quiver; the
logical values must agree).
"""
import datetime
import decimal
import os
import random
import subprocess
import sys
import tempfile
import zlib

import pytest

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from qvpaths import LIB, require
import qvtable

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def lib():
    return qvtable.Lib(require(LIB))


@pytest.fixture(scope="module")
def tmp():
    with tempfile.TemporaryDirectory(prefix="qv-table-oracle-") as d:
        yield d


# ---------------------------------------------------------------------------
# Random data

def _nulls(rng, values, p=0.2):
    return [None if rng.random() < p else v for v in values]


def _strs(rng, n, alphabet="abcλ€😀 x"):
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(n)]


def _column(rng, kind, n):
    ints = [rng.randint(-2**31, 2**31 - 1) for _ in range(n)]
    if kind == "null":
        return pa.nulls(n)
    if kind == "bool":
        return pa.array(_nulls(rng, [rng.random() < 0.5 for _ in range(n)]), pa.bool_())
    if kind in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        t = pa.type_for_alias(kind)
        bits = t.bit_width
        lo, hi = (0, 2**bits - 1) if kind.startswith("u") else (-2**(bits - 1), 2**(bits - 1) - 1)
        small = rng.random() < 0.5  # small values cast to narrower types
        vals = [rng.randint(max(lo, -100), min(hi, 100)) if small else rng.randint(lo, hi)
                for _ in range(n)]
        return pa.array(_nulls(rng, vals), t)
    if kind == "float16":
        return pa.array(_nulls(rng, [float(v % 2000) / 4 for v in ints]), pa.float16())
    if kind in ("float32", "float64"):
        div = 8 if rng.random() < 0.5 else 1  # integral values cast to integers
        return pa.array(_nulls(rng, [float(v % 100000) / div for v in ints]), pa.type_for_alias(kind))
    if kind in ("string", "large_string", "string_view"):
        return pa.array(_nulls(rng, _strs(rng, n)), pa.type_for_alias(kind))
    if kind in ("binary", "large_binary", "binary_view"):
        return pa.array(_nulls(rng, [s.encode() for s in _strs(rng, n)]), pa.type_for_alias(kind))
    if kind == "fsb":
        return pa.array(_nulls(rng, [bytes(rng.randrange(256) for _ in range(3)) for _ in range(n)]),
                        pa.binary(3))
    if kind == "decimal128":
        return pa.array(_nulls(rng, [decimal.Decimal(v).scaleb(-2) for v in ints]), pa.decimal128(12, 2))
    if kind == "decimal256":
        return pa.array(_nulls(rng, [decimal.Decimal(v) * 10**30 for v in ints]), pa.decimal256(50, 0))
    if kind == "date32":
        return pa.array(_nulls(rng, [v % 100000 for v in ints]), pa.int32()).cast(pa.date32())
    if kind == "date64":
        return pa.array(_nulls(rng, [(v % 100000) * 86400000 for v in ints]), pa.int64()).cast(pa.date64())
    if kind == "time32":
        return pa.array(_nulls(rng, [v % 86400 for v in ints]), pa.int32()).cast(pa.time32("s"))
    if kind == "time64":
        return pa.array(_nulls(rng, [(v % 86400) * 10**6 for v in ints]), pa.int64()).cast(pa.time64("us"))
    if kind == "timestamp":
        return pa.array(_nulls(rng, [v * 1000 for v in ints]), pa.int64()).cast(pa.timestamp("ms", "UTC"))
    if kind == "duration":
        scale = 10**6 if rng.random() < 0.5 else 1  # whole seconds cast to duration[s]
        return pa.array(_nulls(rng, [v * scale for v in ints]), pa.int64()).cast(pa.duration("us"))
    if kind == "interval":
        return pa.array(_nulls(rng, [pa.MonthDayNano([v % 12, v % 28, v]) for v in ints]),
                        pa.month_day_nano_interval())
    if kind == "list":
        return pa.array(_nulls(rng, [[rng.randint(-5, 5) for _ in range(rng.randint(0, 4))]
                                     for _ in range(n)]), pa.list_(pa.int32()))
    if kind == "large_list":
        return pa.array(_nulls(rng, [_strs(rng, rng.randint(0, 3)) for _ in range(n)]),
                        pa.large_list(pa.string()))
    if kind == "list_view":
        return pa.array(_nulls(rng, [[rng.randint(-5, 5) for _ in range(rng.randint(0, 4))]
                                     for _ in range(n)]), pa.list_view(pa.int16()))
    if kind == "fsl":
        return pa.array(_nulls(rng, [[rng.randint(0, 9), rng.randint(0, 9)] for _ in range(n)]),
                        pa.list_(pa.int16(), 2))
    if kind == "map":
        return pa.array(_nulls(rng, [[(k, rng.randint(0, 9)) for k in _strs(rng, rng.randint(0, 3))]
                                     for _ in range(n)]), pa.map_(pa.string(), pa.int64()))
    if kind == "struct":
        return pa.StructArray.from_arrays(
            [_column(rng, "int32", n), _column(rng, "string", n)], names=["a", "b"],
            mask=pa.array([rng.random() < 0.15 for _ in range(n)]))
    if kind == "dictionary":
        return pa.array(_nulls(rng, [rng.choice(["red", "green", "blue", "ø"]) for _ in range(n)]),
                        pa.string()).dictionary_encode()
    if kind in ("sparse_union", "dense_union"):
        types = pa.array([rng.randint(0, 1) for _ in range(n)], pa.int8())
        if kind == "sparse_union":
            return pa.UnionArray.from_sparse(types, [_column(rng, "int64", n), _column(rng, "string", n)])
        offsets = pa.array(list(range(n)), pa.int32())
        return pa.UnionArray.from_dense(types, offsets, [_column(rng, "int64", n), _column(rng, "string", n)])
    if kind == "ree":
        ends, pos = [], 0
        while pos < n:
            pos = min(n, pos + rng.randint(1, 4))
            ends.append(pos)
        return pa.RunEndEncodedArray.from_arrays(pa.array(ends, pa.int32()),
                                                 _column(rng, "string", len(ends)))
    raise ValueError(kind)


KINDS = ["null", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "float32", "float64", "string", "large_string", "string_view", "binary",
         "large_binary", "binary_view", "fsb", "decimal128", "decimal256", "date32", "date64",
         "time32", "time64", "timestamp", "duration", "interval", "list", "large_list",
         "list_view", "fsl", "map", "struct", "dictionary", "sparse_union", "dense_union", "ree"]


def random_table(rng, kinds, n, max_batch=12):
    """A pyarrow table of the given column kinds, n rows, in many small
    batches sliced out of one big batch (so batches have offsets)."""
    cols = [_column(rng, k, n) for k in kinds]
    names = [f"{k}_{i}" for i, k in enumerate(kinds)]
    big = pa.RecordBatch.from_arrays(cols, names=names)
    batches, pos = [], 0
    while pos < n:
        length = min(n - pos, rng.randint(1, max_batch))
        batches.append(big.slice(pos, length))
        pos += length
    schema = big.schema.with_metadata({"huggingface": '{"info": {}}'})
    return pa.Table.from_batches([b.replace_schema_metadata(schema.metadata) for b in batches],
                                 schema)


def write_stream(table, path):
    with pa.OSFile(path, "wb") as f, ipc.new_stream(f, table.schema) as w:
        for b in table.to_batches():
            w.write_batch(b)
    return path


# ---------------------------------------------------------------------------
# Comparison

def _logical(col):
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    values = []
    for c in chunks:
        if pa.types.is_dictionary(c.type):
            c = c.dictionary_decode()
        t = c.type
        if (pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t) or
                pa.types.is_duration(t)):  # raw ticks: any value converts
            c = c.view(pa.int32() if t.bit_width == 32 else pa.int64())
        values += c.to_pylist()
    return values


_PLAIN = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def _logical_type(t):
    """The type whose values a column shows: dictionaries and run-end
    encoding decoded, views as their offset-based equivalent."""
    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        t = t.value_type
    return _PLAIN.get(t, t)


def plain(table):
    """The table with the columns pyarrow has no take/filter kernels for
    (views, run-end encoded) converted to their plain equivalents, so that
    pyarrow can compute the expected result (compared logically)."""
    cols = []
    for col in table.columns:
        t = col.type
        if t in _PLAIN:
            col = col.cast(_PLAIN[t])
        elif pa.types.is_run_end_encoded(t):
            col = pa.chunked_array([pc.run_end_decode(c) for c in col.chunks], type=t.value_type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=pa.schema(
        [pa.field(f.name, c.type, f.nullable, f.metadata) for f, c in zip(table.schema, cols)],
        metadata=table.schema.metadata))


def assert_table(expected, actual, what):
    assert actual.num_rows == expected.num_rows, f"{what}: {actual.num_rows} rows, expected {expected.num_rows}"
    assert actual.schema.names == expected.schema.names, f"{what}: names {actual.schema.names}"
    for i, name in enumerate(expected.schema.names):
        et, at = expected.schema.field(i).type, actual.schema.field(i).type
        assert _logical_type(at) == _logical_type(et), f"{what}: column {name}: type {at}, expected {et}"
        e, a = _logical(expected.column(i)), _logical(actual.column(i))
        if e != a:
            for r, (x, y) in enumerate(zip(e, a)):
                if x != y:
                    raise AssertionError(f"{what}: column {name} row {r}: expected {x!r}, found {y!r}")
            raise AssertionError(f"{what}: column {name} differs")
    actual.validate(full=True)


def tables_for(lib, tmp, rng, kinds, n, tag):
    """(pyarrow table, quiver in-memory, quiver mapped)."""
    pt = random_table(rng, kinds, n)
    path = write_stream(pt, os.path.join(tmp, f"{tag}.arrow"))
    return pt, lib.table_from_pyarrow(pt), lib.open(path)


# ---------------------------------------------------------------------------
# Tests

@pytest.mark.parametrize("kind", KINDS)
def test_round_trip_and_gather(lib, tmp, kind):
    rng = random.Random(zlib.crc32(kind.encode()))
    n = 150
    pt, mem, mapped = tables_for(lib, tmp, rng, [kind, "int64"], n, f"rt-{kind}")
    assert mapped.kind == "mapped" and mem.kind == "in-memory"
    pp = plain(pt)
    for qt in (mem, mapped):
        assert_table(pt, qt.to_pyarrow(), f"{kind}/{qt.kind}: export")
        idx = [rng.randrange(n) for _ in range(300)] + [0, n - 1, 0]
        assert_table(pp.take(idx), qt.take(idx).to_pyarrow(), f"{kind}/{qt.kind}: take")
        for _ in range(3):
            off = rng.randrange(n + 1)
            ln = rng.randrange(n - off + 1)
            assert_table(pt.slice(off, ln), qt.slice(off, ln).to_pyarrow(),
                         f"{kind}/{qt.kind}: slice({off}, {ln})")
        mask = pa.array(_nulls(rng, [rng.random() < 0.5 for _ in range(n)]), pa.bool_())
        assert_table(pp.filter(mask), qt.filter(mask).to_pyarrow(), f"{kind}/{qt.kind}: filter")
        assert_table(pt.combine_chunks(), qt.combine_batches().to_pyarrow(),
                     f"{kind}/{qt.kind}: combine")
        assert qt.combine_batches().num_batches == 1


def test_transforms_random(lib, tmp):
    rng = random.Random(7)
    for trial in range(30):
        kinds = [rng.choice(KINDS) for _ in range(rng.randint(1, 4))]
        n = rng.randint(0, 120)
        pt, mem, mapped = tables_for(lib, tmp, rng, kinds, n, f"tr-{trial}")
        for qt in (mem, mapped):
            what = f"trial {trial} {kinds} {qt.kind}"
            nc = len(kinds)
            # select with reorder and repeats, drop, rename
            sel = [rng.randrange(nc) for _ in range(rng.randint(0, 5))]
            assert_table(pt.select(sel), qt.select(sel).to_pyarrow(), f"{what}: select {sel}")
            d = rng.randrange(nc)
            assert_table(pt.drop_columns([pt.schema.names[d]]) if len(set(pt.schema.names)) == nc
                         else pt.remove_column(d), qt.drop([d]).to_pyarrow(), f"{what}: drop")
            names = [f"n{i}" for i in range(nc)]
            assert_table(pt.rename_columns(names), qt.rename(names).to_pyarrow(), f"{what}: rename")
            # add / append / set a column with unrelated chunk boundaries
            ck = rng.choice(KINDS)
            col = _column(rng, ck, n)
            cuts = sorted(rng.randrange(n + 1) for _ in range(rng.randint(0, 3)))
            pieces = [col.slice(a, b - a) for a, b in zip([0] + cuts, cuts + [n])]
            chunked = pa.chunked_array(pieces, type=col.type)
            field = pa.field("added", col.type)
            pos = rng.randrange(nc + 1)
            assert_table(pt.add_column(pos, field, chunked),
                         qt.add_column(pos, field, chunked).to_pyarrow(), f"{what}: add_column {ck}")
            assert_table(pt.append_column(field, chunked),
                         qt.append_column(field, chunked).to_pyarrow(), f"{what}: append_column")
            spos = rng.randrange(nc)
            assert_table(pt.set_column(spos, field, chunked),
                         qt.set_column(spos, field, chunked).to_pyarrow(), f"{what}: set_column")
            # a chain: slice, take, filter
            if n > 2:
                a = plain(pt).slice(1, n - 2)
                idx = [rng.randrange(n - 2) for _ in range(n)]
                b = a.take(idx)
                mask = pa.array([rng.random() < 0.6 for _ in range(len(idx))])
                q = qt.slice(1, n - 2).take(idx).filter(mask)
                assert_table(b.filter(mask), q.to_pyarrow(), f"{what}: chain")
                if qt.kind == "mapped":
                    assert q.num_replays == 3


CASTS = [  # (source kind, target type)
    ("int8", pa.int64()), ("int64", pa.int8()), ("int32", pa.int16()), ("uint32", pa.int32()),
    ("int64", pa.uint8()), ("int16", pa.float64()), ("int64", pa.float32()),
    ("float64", pa.int32()), ("float32", pa.float64()), ("float64", pa.float32()),
    ("bool", pa.int32()), ("int32", pa.bool_()),
    ("string", pa.large_string()), ("large_string", pa.string()), ("binary", pa.string()),
    ("string", pa.binary()), ("large_binary", pa.large_string()),
    ("dictionary", pa.string()), ("dictionary", pa.large_string()),
    ("timestamp", pa.timestamp("us", "UTC")), ("timestamp", pa.timestamp("s")),
    ("timestamp", pa.timestamp("ns", "Asia/Tokyo")), ("duration", pa.duration("s")),
    ("duration", pa.duration("ns")), ("date32", pa.date64()), ("date64", pa.date32()),
    ("time32", pa.time64("us")), ("time64", pa.time32("s")),
    ("list", pa.large_list(pa.int64())), ("list", pa.list_(pa.int8())),
    ("large_list", pa.list_(pa.large_string())), ("fsl", pa.list_(pa.int64(), 2)),
    ("struct", pa.struct([("a", pa.int64()), ("b", pa.large_string())])),
    ("null", pa.string()), ("null", pa.int32()),
    ("timestamp", pa.int64()), ("int32", pa.date32()),
]


@pytest.mark.parametrize("src,target", CASTS, ids=[f"{s}->{t}" for s, t in CASTS])
def test_cast(lib, tmp, src, target):
    rng = random.Random(zlib.crc32(f"{src}->{target}".encode()))
    for trial in range(4):
        n = rng.randint(1, 80)
        pt, mem, mapped = tables_for(lib, tmp, rng, [src, "int32"], n, f"cast-{trial}")
        schema = pa.schema([pa.field(pt.schema.names[0], target), pt.schema.field(1)],
                           metadata={"huggingface": '{"cast": 1}'})
        try:
            expected = pt.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            expected = e
        for qt in (mem, mapped):
            try:
                got = qt.cast(schema)
            except qvtable.QuiverError as e:
                if isinstance(expected, Exception):
                    continue  # both refuse
                raise AssertionError(f"{src}->{target} trial {trial}: quiver refused ({e}) "
                                     f"where pyarrow succeeded")
            if isinstance(expected, Exception):
                raise AssertionError(f"{src}->{target} trial {trial}: pyarrow refused ({expected}) "
                                     f"where quiver succeeded")
            out = got.to_pyarrow()
            assert out.schema.metadata == {b"huggingface": b'{"cast": 1}'}
            assert_table(expected, out, f"cast {src}->{target} {qt.kind}")
            if qt.kind == "mapped":
                assert got.num_replays == 1


def test_concat_tables(lib, tmp):
    rng = random.Random(11)
    for trial in range(12):
        kinds = [rng.choice(KINDS) for _ in range(rng.randint(1, 3))]
        pts, qts = [], []
        for part in range(rng.randint(2, 4)):
            pt, mem, mapped = tables_for(lib, tmp, rng, kinds, rng.randint(0, 50), f"cc-{trial}-{part}")
            # Same kinds give the same schema (names are per kind). (No
            # pt.cast(...) here: pyarrow 26 casting a sliced run-end-encoded
            # array to its own type drops the slice offset.)
            pts.append(pt)
            qts.append(rng.choice([mem, mapped]))
        expected = pa.concat_tables(pts)
        got = qvtable.concat(lib, qts, 0)
        assert got.kind == "concat"
        assert_table(expected, got.to_pyarrow(), f"concat trial {trial}")
        mapped_blocks = sum(q.kind == "mapped" for q in qts)
        assert len(got.cache_files()) == mapped_blocks
        n = expected.num_rows
        # transforms on the concatenation
        off = rng.randrange(n + 1)
        ln = rng.randrange(n - off + 1)
        assert_table(expected.slice(off, ln), got.slice(off, ln).to_pyarrow(), "concat slice")
        mask = pa.array(_nulls(rng, [rng.random() < 0.5 for _ in range(n)]), pa.bool_())
        pe = plain(expected)
        assert_table(pe.filter(mask), got.filter(mask).to_pyarrow(), "concat filter")
        idx = sorted(rng.randrange(n) for _ in range(n)) if n else []
        taken = got.take(idx)
        assert taken.kind == "concat"
        assert_table(pe.take(idx), taken.to_pyarrow(), "concat take (sorted)")
        rng.shuffle(idx)
        assert_table(pe.take(idx), got.take(idx).to_pyarrow(), "concat take (any order)")
        # axis 1: columns of another table with different row blocks
        other_pt, other_mem, other_mapped = tables_for(lib, tmp, rng, ["string", "int64"], n, f"ax1-{trial}")
        h = qvtable.concat(lib, [got, other_mapped], 1)
        exp_h = pa.Table.from_arrays(expected.columns + other_pt.columns,
                                     names=expected.schema.names + other_pt.schema.names)
        assert_table(exp_h, h.to_pyarrow(), "concat axis 1")


def _child(lib_path, recipe, tmp, tag):
    rpath = os.path.join(tmp, f"{tag}.recipe")
    opath = os.path.join(tmp, f"{tag}.out.arrow")
    with open(rpath, "wb") as f:
        f.write(recipe)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "qvtable.py"), lib_path, rpath, opath],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with ipc.open_stream(opath) as r:
        return r.read_all(), proc.stdout.split()


def test_recipes_in_child_process(lib, tmp):
    rng = random.Random(5)
    for trial in range(8):
        kinds = [rng.choice(KINDS) for _ in range(rng.randint(1, 3))] + ["string"]
        n = rng.randint(1, 100)
        pt, mem, mapped = tables_for(lib, tmp, rng, kinds, n, f"rc-{trial}")
        # a mapped table with a chain of replays
        idx = [rng.randrange(n - 1) for _ in range(n)] if n > 1 else []
        nc = len(kinds)
        names = [f"c{i}" for i in range(nc)]
        q = mapped.slice(1, n - 1).take(idx).rename(names).select(list(range(nc))[::-1])
        exp = plain(pt).slice(1, n - 1).take(idx).rename_columns(names)
        exp = pa.Table.from_arrays(exp.columns[::-1], names=names[::-1])
        recipe = q.recipe()
        assert len(recipe) < 1024 + 10 * n, len(recipe)
        out, info = _child(LIB, recipe, tmp, f"child-{trial}")
        assert_table(exp, out, f"recipe trial {trial}")
        assert info == ["mapped", "4", "1"]
        # a concatenation of the mapped chain and an in-memory table
        c = qvtable.concat(lib, [q, lib.table_from_pyarrow(q.to_pyarrow())], 0)
        out, info = _child(LIB, c.recipe(), tmp, f"child-c-{trial}")
        assert_table(pa.concat_tables([exp, exp]), out, f"concat recipe trial {trial}")
        assert info[0] == "concat" and info[2] == "1"


def test_recipe_changed_file(lib, tmp):
    rng = random.Random(3)
    pt, mem, mapped = tables_for(lib, tmp, rng, ["int64", "string"], 30, "changed")
    path = os.path.join(tmp, "changed.arrow")
    recipe = mapped.slice(2, 10).recipe()
    assert lib.from_recipe(recipe).num_rows == 10
    os.utime(path, ns=(0, 123456789))
    with pytest.raises(qvtable.QuiverError) as e:
        lib.from_recipe(recipe)
    assert e.value.status == 8  # QV_ECHANGED
    assert "changed since the recipe was written (mtime_ns " in e.value.message
    os.unlink(path)
    with pytest.raises(qvtable.QuiverError) as e:
        lib.from_recipe(recipe)
    assert e.value.message == f"recipe: file '{path}' is missing (No such file or directory)"
    # the open table keeps its mapping
    assert_table(pt, mapped.to_pyarrow(), "mapped table after unlink")
