"""Oracle test of quiver's Arrow C Stream export against pyarrow.

For every golden integration file (stream and file format) and for random
pyarrow-written tables (many types, many small batches, nulls, sliced
batches, LZ4/ZSTD compression), quiver opens the file
(qv_reader_open_path), exports it as an ArrowArrayStream
(qv_export_reader_stream, into a ctypes-allocated struct), pyarrow imports
that stream (RecordBatchReader._import_from_c) and the batches must equal
pyarrow's own read of the same file: schema with all metadata, batch
boundaries and values.

Environment: QV_BUILD (directory holding libquiver.so, default
<repo>/build), QV_SHARED (default <repo>/../shared).
"""
import ctypes
import decimal
import glob
import os
import random
import zlib

import pytest

import pyarrow as pa
import pyarrow.ipc as ipc

from qvpaths import BUILD, CLI, GOLDEN, LIB, SHARED, require  # noqa: F401
QV_ERROR_SIZE = 1024


class ArrowArrayStream(ctypes.Structure):
    _fields_ = [
        ("get_schema", ctypes.c_void_p),
        ("get_next", ctypes.c_void_p),
        ("get_last_error", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArrayStream))


def _load_lib():
    lib = ctypes.CDLL(require(LIB))
    lib.qv_reader_open_path.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.c_char_p]
    lib.qv_reader_open_path.restype = ctypes.c_int
    lib.qv_export_reader_stream.argtypes = [ctypes.c_void_p,
                                            ctypes.POINTER(ArrowArrayStream),
                                            ctypes.c_char_p]
    lib.qv_export_reader_stream.restype = ctypes.c_int
    return lib


@pytest.fixture(scope="module")
def lib():
    return _load_lib()


class QuiverError(Exception):
    pass


def quiver_read(lib, path):
    """Open `path` with quiver, export it as a C stream, import it into
    pyarrow. Returns (schema, [batches])."""
    err = ctypes.create_string_buffer(QV_ERROR_SIZE)
    reader = ctypes.c_void_p()
    st = lib.qv_reader_open_path(os.fsencode(path), None, ctypes.byref(reader), err)
    if st != 0:
        raise QuiverError(f"open failed ({st}): {err.value.decode(errors='replace')}")
    stream = ArrowArrayStream()
    st = lib.qv_export_reader_stream(reader, ctypes.byref(stream), err)
    if st != 0:  # the reader is closed by the call either way
        raise QuiverError(f"export failed ({st}): {err.value.decode(errors='replace')}")
    try:
        rbr = pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))
    finally:
        if stream.release:  # not taken over by pyarrow: release it ourselves
            _RELEASE(stream.release)(ctypes.byref(stream))
    schema = rbr.schema
    batches = list(rbr)
    rbr.close()
    return schema, batches


def pyarrow_read(path):
    if path.endswith(".stream"):
        r = ipc.open_stream(path)
        return r.schema, list(r)
    r = ipc.open_file(path)
    return r.schema, [r.get_batch(i) for i in range(r.num_record_batches)]


_FLOAT_AS_INT = {16: "int16", 32: "int32", 64: "int64"}


def _column_equal(e, a):
    """Array equality where NaN equals NaN (floats compared bitwise)."""
    if e.equals(a):
        return True
    if pa.types.is_floating(e.type) and e.type == a.type:
        as_int = pa.type_for_alias(_FLOAT_AS_INT[e.type.bit_width])
        return e.view(as_int).equals(a.view(as_int))
    return False


def _batch_equal(e, a):
    # Batch-level Equals first: pyarrow has no Python class for some column
    # types (interval[months]), so .columns only works on the slow path.
    if e.equals(a):
        return True
    return e.schema == a.schema and all(
        _column_equal(x, y) for x, y in zip(e.columns, a.columns))


def _first_difference(expected, actual):
    for i, (e, a) in enumerate(zip(expected.columns, actual.columns)):
        if not _column_equal(e, a):
            el, al = e.to_pylist(), a.to_pylist()
            for r, (x, y) in enumerate(zip(el, al)):
                if x != y and not (x != x and y != y):
                    return f"column {expected.schema.names[i]!r} row {r}: expected {x!r}, found {y!r}"
            return f"column {expected.schema.names[i]!r}: arrays differ ({e.type} vs {a.type})"
    return "batches differ"


def assert_same(expected_schema, expected_batches, schema, batches):
    assert schema.equals(expected_schema, check_metadata=True), (
        f"schema differs:\nexpected {expected_schema}\n{expected_schema.metadata}\n"
        f"found {schema}\n{schema.metadata}")
    for f_exp, f_act in zip(expected_schema, schema):
        # The C interface has no "empty metadata" (NULL means none): {} == None.
        assert (f_act.metadata or {}) == (f_exp.metadata or {}), f"field {f_exp.name} metadata"
    assert [b.num_rows for b in batches] == [b.num_rows for b in expected_batches]
    for i, (e, a) in enumerate(zip(expected_batches, batches)):
        a.validate()
        try:  # some golden data breaks full-validation rules (date64 that is
            e.validate(full=True)  # not whole days, decimals over precision)
        except pa.ArrowInvalid:
            pass
        else:
            a.validate(full=True)
        if not _batch_equal(e, a):
            raise AssertionError(f"batch {i}: {_first_difference(e, a)}")


# ---------------------------------------------------------------------------
# Golden integration files

def _golden_files():
    files = sorted(glob.glob(os.path.join(GOLDEN, "*", "*.stream")) +
                   glob.glob(os.path.join(GOLDEN, "*", "*.arrow_file")))
    return [pytest.param(p, id=os.path.relpath(p, GOLDEN)) for p in files]


@pytest.mark.parametrize("path", _golden_files())
def test_golden_export(lib, path):
    try:
        expected_schema, expected_batches = pyarrow_read(path)
    except Exception as e:  # the oracle cannot read it: nothing to compare
        pytest.xfail(f"pyarrow cannot read this file: {e}")
    schema, batches = quiver_read(lib, path)
    assert_same(expected_schema, expected_batches, schema, batches)


def test_golden_files_present():
    assert len(_golden_files()) > 100, f"golden files not found under {GOLDEN}"


# ---------------------------------------------------------------------------
# Random tables written by pyarrow

def _nullable(rng, values, p=0.2):
    return [None if rng.random() < p else v for v in values]


def _random_columns(rng, n):
    ints = [rng.randint(-2**31, 2**31 - 1) for _ in range(n)]
    strs = ["".join(rng.choice("abcλ€😀 \"\\\n") for _ in range(rng.randint(0, 20)))
            for _ in range(n)]
    cols = {
        "b": pa.array(_nullable(rng, [rng.random() < 0.5 for _ in range(n)]), pa.bool_()),
        "i8": pa.array(_nullable(rng, [v % 128 for v in ints]), pa.int8()),
        "u16": pa.array(_nullable(rng, [v % 65536 for v in ints]), pa.uint16()),
        "i32": pa.array(_nullable(rng, ints), pa.int32()),
        "u64": pa.array(_nullable(rng, [rng.randint(0, 2**64 - 1) for _ in range(n)]), pa.uint64()),
        "i64": pa.array(_nullable(rng, [rng.randint(-2**63, 2**63 - 1) for _ in range(n)]), pa.int64()),
        "f16": pa.array(_nullable(rng, [float(v % 1000) / 8 for v in ints]), pa.float16())
        if hasattr(pa, "float16") else None,
        "f32": pa.array(_nullable(rng, [rng.uniform(-1e6, 1e6) for _ in range(n)]), pa.float32()),
        "f64": pa.array(_nullable(rng, [rng.choice([rng.gauss(0, 1e10), float("nan"), float("inf"), -0.0]) for _ in range(n)]), pa.float64()),
        "dec": pa.array(_nullable(rng, [decimal.Decimal(v).scaleb(-3) for v in ints]), pa.decimal128(20, 3)),
        "dec256": pa.array(_nullable(rng, [decimal.Decimal(v) * 10**40 for v in ints]), pa.decimal256(60, 2)),
        "d32": pa.array(_nullable(rng, [v % 100000 for v in ints]), pa.int32()).cast(pa.date32()),
        "d64": pa.array(_nullable(rng, [(v % 100000) * 86400000 for v in ints]), pa.int64()).cast(pa.date64()),
        "t32": pa.array(_nullable(rng, [v % 86400000 for v in ints]), pa.int32()).cast(pa.time32("ms")),
        "t64": pa.array(_nullable(rng, [(v % 86400) * 10**9 for v in ints]), pa.int64()).cast(pa.time64("ns")),
        "ts": pa.array(_nullable(rng, [v * 1000 for v in ints]), pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "ts_naive": pa.array(_nullable(rng, ints), pa.int64()).cast(pa.timestamp("s")),
        "ts_ny": pa.array(_nullable(rng, ints), pa.int64()).cast(pa.timestamp("ms", tz="America/New_York")),
        "dur": pa.array(_nullable(rng, ints), pa.int64()).cast(pa.duration("ms")),
        "mdn": pa.array(_nullable(rng, [pa.MonthDayNano([1, v % 30, v]) for v in ints]),
                        pa.month_day_nano_interval()),
        "s": pa.array(_nullable(rng, strs), pa.string()),
        "ls": pa.array(_nullable(rng, strs), pa.large_string()),
        "bin": pa.array(_nullable(rng, [s.encode() for s in strs]), pa.binary()),
        "lbin": pa.array(_nullable(rng, [s.encode() for s in strs]), pa.large_binary()),
        "fsb": pa.array(_nullable(rng, [v.to_bytes(4, "little", signed=True) for v in ints]), pa.binary(4)),
        "sv": pa.array(_nullable(rng, strs), pa.string_view()),
        "bv": pa.array(_nullable(rng, [s.encode() * 2 for s in strs]), pa.binary_view()),
        "list": pa.array(_nullable(rng, [_nullable(rng, ints[:rng.randint(0, 4)]) for _ in range(n)]), pa.list_(pa.int32())),
        "llist": pa.array(_nullable(rng, [strs[:rng.randint(0, 3)] for _ in range(n)]), pa.large_list(pa.string())),
        "fsl": pa.array(_nullable(rng, [[v, -v] for v in ints]), pa.list_(pa.int64(), 2)),
        "struct": pa.array(_nullable(rng, [{"x": v, "y": s} for v, s in zip(ints, strs)]),
                           pa.struct([("x", pa.int32()), ("y", pa.string())])),
        "map": pa.array(_nullable(rng, [[(s, v) for s in strs[:rng.randint(0, 3)]] for v in ints]),
                        pa.map_(pa.string(), pa.int32())),
        "dict": pa.array(_nullable(rng, [rng.choice(["red", "green", "blue"]) for _ in range(n)])).dictionary_encode(),
    }
    cols = {k: v for k, v in cols.items() if v is not None}
    # Types whose construction needs more than pa.array.
    lv = pa.array(_nullable(rng, [ints[:rng.randint(0, 3)] for _ in range(n)]), pa.list_view(pa.int32()))
    cols["listview"] = lv
    cols["ree"] = pa.RunEndEncodedArray.from_arrays(
        pa.array(list(range(1, n + 1)), pa.int32()),
        pa.array(_nullable(rng, strs), pa.string()))
    type_ids = pa.array([rng.randint(0, 1) for _ in range(n)], pa.int8())
    cols["sparse_union"] = pa.UnionArray.from_sparse(
        type_ids, [pa.array(ints, pa.int32()), pa.array(_nullable(rng, strs), pa.string())],
        field_names=["i", "s"], type_codes=[0, 1])
    dense_ids = [rng.randint(0, 1) for _ in range(n)]
    counts = [0, 0]
    offsets = []
    for t in dense_ids:
        offsets.append(counts[t])
        counts[t] += 1
    cols["dense_union"] = pa.UnionArray.from_dense(
        pa.array(dense_ids, pa.int8()), pa.array(offsets, pa.int32()),
        [pa.array(ints[:counts[0]], pa.int64()), pa.array(strs[:counts[1]], pa.string())],
        field_names=["i", "s"])
    return cols


def _random_table(seed, n=200):
    rng = random.Random(seed)
    cols = _random_columns(rng, n)
    fields = [pa.field(k, v.type, metadata={"col": k}) for k, v in cols.items()]
    schema = pa.schema(fields, metadata={"origin": "test_cdata_export", "seed": str(seed)})
    return pa.Table.from_arrays(list(cols.values()), schema=schema)


def _write(table, path, fmt, compression, batch_sizes):
    options = ipc.IpcWriteOptions(compression=compression)
    open_writer = ipc.new_stream if fmt == "stream" else ipc.new_file
    with open_writer(path, table.schema, options=options) as w:
        pos = 0
        for size in batch_sizes:
            # Zero-copy slices of the table: batches with non-zero offsets.
            if size == 0:  # an empty batch
                w.write_batch(table.to_batches()[0].slice(0, 0))
            for b in (table.slice(pos, size).to_batches() if size else []):
                w.write_batch(b)
            pos += size


@pytest.mark.parametrize("fmt", ["stream", "file"])
@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
def test_random_tables(lib, tmp_path, fmt, compression):
    seed = zlib.crc32(f"{fmt}/{compression}".encode())
    table = _random_table(seed)
    rng = random.Random(seed)
    sizes = []
    left = table.num_rows
    while left > 0:
        s = min(left, rng.choice([0, 1, 2, 3, 7, 16, 50]))
        sizes.append(s)
        left -= s
    path = str(tmp_path / f"random.{fmt}")
    _write(table, path, fmt, compression, sizes)
    expected_schema, expected_batches = pyarrow_read(path)
    schema, batches = quiver_read(lib, path)
    assert_same(expected_schema, expected_batches, schema, batches)
    assert _batch_equal(pa.Table.from_batches(batches, schema).combine_chunks().to_batches()[0],
                        table.combine_chunks().to_batches()[0])


def test_open_error_is_reported(lib, tmp_path):
    p = tmp_path / "junk.arrow"
    p.write_bytes(b"not an arrow file at all")
    with pytest.raises(QuiverError):
        quiver_read(lib, str(p))


# ---------------------------------------------------------------------------
# pyarrow -> qv_import_* -> qv_export_* -> pyarrow, independent of the reader

class ArrowSchema(ctypes.Structure):
    pass


ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p), ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p), ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p)]


class ArrowArray(ctypes.Structure):
    _fields_ = [
        ("length", ctypes.c_int64), ("null_count", ctypes.c_int64),
        ("offset", ctypes.c_int64), ("n_buffers", ctypes.c_int64),
        ("n_children", ctypes.c_int64), ("buffers", ctypes.c_void_p),
        ("children", ctypes.c_void_p), ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


def _bind(lib):
    P = ctypes.c_void_p
    for name, args in [
            ("qv_import_schema", [P, ctypes.POINTER(P), ctypes.c_char_p]),
            ("qv_import_array", [P, P, ctypes.POINTER(P), ctypes.c_char_p]),
            ("qv_import_stream", [P, ctypes.POINTER(P), ctypes.POINTER(P),
                                  ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p]),
            ("qv_export_schema", [P, P, ctypes.c_char_p]),
            ("qv_export_array", [P, P, ctypes.c_char_p])]:
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int
    lib.qv_array_unref.argtypes = [P]
    lib.qv_array_unref.restype = None
    lib.qv_schema_unref.argtypes = [P]
    lib.qv_schema_unref.restype = None
    return lib


def _schema_type(schema_ptr):
    # qv_schema is { long refcount_; qv_type *type; qv_metadata metadata; }
    return ctypes.c_void_p.from_address(schema_ptr + ctypes.sizeof(ctypes.c_long)).value


def _check(st, err, what):
    if st != 0:
        raise QuiverError(f"{what} failed ({st}): {err.value.decode(errors='replace')}")


def _reexport(lib, schema_ptr, array_ptr):
    """qv_export_schema/array of a quiver batch, imported into pyarrow."""
    err = ctypes.create_string_buffer(QV_ERROR_SIZE)
    out_s, out_a = ArrowSchema(), ArrowArray()
    _check(lib.qv_export_schema(schema_ptr, ctypes.addressof(out_s), err), err, "export schema")
    _check(lib.qv_export_array(array_ptr, ctypes.addressof(out_a), err), err, "export array")
    return pa.RecordBatch._import_from_c(ctypes.addressof(out_a), ctypes.addressof(out_s))


def _buffer_addresses(arr):
    return [b.address if b is not None else None for b in arr.buffers()]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pyarrow_import_export_round_trip(lib, seed):
    _bind(lib)
    table = _random_table(seed, n=120)
    err = ctypes.create_string_buffer(QV_ERROR_SIZE)
    batches = table.to_batches(max_chunksize=37)
    batches.append(table.slice(5, 40).to_batches()[0])  # non-zero offsets
    for batch in batches:
        c_s, c_a = ArrowSchema(), ArrowArray()
        batch._export_to_c(ctypes.addressof(c_a), ctypes.addressof(c_s))
        schema_ptr, array_ptr = ctypes.c_void_p(), ctypes.c_void_p()
        _check(lib.qv_import_schema(ctypes.addressof(c_s), ctypes.byref(schema_ptr), err),
               err, "import schema")
        assert not c_s.release  # consumed
        st = lib.qv_import_array(ctypes.addressof(c_a), _schema_type(schema_ptr.value),
                                 ctypes.byref(array_ptr), err)
        try:
            _check(st, err, "import array")
            assert not c_a.release  # moved into quiver
            back = _reexport(lib, schema_ptr.value, array_ptr.value)
        finally:
            lib.qv_array_unref(array_ptr.value)
            lib.qv_schema_unref(schema_ptr.value)
        # `back` keeps pyarrow's original buffers alive through quiver.
        assert back.schema.equals(batch.schema, check_metadata=True)
        back.validate(full=True)
        assert _batch_equal(batch, back), _first_difference(batch, back)
        for name in ("i64", "s", "sv", "list", "dec256"):
            assert (_buffer_addresses(back.column(name)) ==
                    _buffer_addresses(batch.column(name))), f"{name} was copied"
        del back


def test_stream_import_round_trip(lib):
    _bind(lib)
    table = _random_table(7, n=90)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=16))
    stream = ArrowArrayStream()
    reader._export_to_c(ctypes.addressof(stream))
    err = ctypes.create_string_buffer(QV_ERROR_SIZE)
    schema_ptr, arrays, n = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int64()
    _check(lib.qv_import_stream(ctypes.addressof(stream), ctypes.byref(schema_ptr),
                                ctypes.byref(arrays), ctypes.byref(n), err), err, "import stream")
    assert not stream.release
    ptrs = ctypes.cast(arrays, ctypes.POINTER(ctypes.c_void_p))
    got = [_reexport(lib, schema_ptr.value, ptrs[i]) for i in range(n.value)]
    for i in range(n.value):
        lib.qv_array_unref(ptrs[i])
    ctypes.CDLL(None).free(arrays)
    lib.qv_schema_unref(schema_ptr.value)
    assert [b.num_rows for b in got] == [16] * 5 + [10]
    assert _batch_equal(pa.Table.from_batches(got).combine_chunks().to_batches()[0],
                        table.combine_chunks().to_batches()[0])
