"""Oracle test: random tables of every Arrow type, written by quiver, read
back by pyarrow bit-exactly.

Tables come from qvrandom.py (every type family incl. views, list views,
sparse/dense unions, run-end encoded, dictionaries, decimal32..256,
float16 bit patterns, intervals, nested combinations; nulls; schema and
field metadata), cut into many small, empty and sliced batches. They reach
quiver two ways:
  * as an Arrow C stream: pyarrow exports a RecordBatchReader
    (_export_to_c) into a ctypes ArrowArrayStream and
    qv_write_arrow_stream_path writes it;
  * as a file pyarrow wrote, rewritten by `quiver convert`;
in both IPC formats, with no compression, LZ4 and ZSTD. pyarrow then reads
quiver's output, which must equal the input: schema with schema and field
metadata, batch boundaries (when not re-batched), and per column: type,
length, null count, the validity bitmap bit by bit (offsets normalised),
values (floats compared as their bit patterns), recursively through
struct fields, list values, dictionary indices and dictionaries, union
children. Dictionaries that change between batches become deltas or
replacements in streams and a clear error in files.

Environment: QV_BUILD (default <repo>/build), QV_SHARED.
"""
import ctypes
import os
import random
import subprocess
import zlib

import numpy as np
import pytest

import pyarrow as pa
import pyarrow.ipc as ipc

import qvrandom
from qvpaths import CLI, LIB, require

QV_ERROR_SIZE = 1024
FORMATS = {"file": 0, "stream": 1}
CODECS = {None: 0, "lz4": 1, "zstd": 2}


class ArrowArrayStream(ctypes.Structure):
    _fields_ = [(n, ctypes.c_void_p) for n in
                ("get_schema", "get_next", "get_last_error", "release", "private_data")]


class WriteOptions(ctypes.Structure):  # qv_write_options
    _fields_ = [("format", ctypes.c_int), ("compression", ctypes.c_int),
                ("compression_level", ctypes.c_int), ("alignment", ctypes.c_int),
                ("max_batch_rows", ctypes.c_int64), ("threads", ctypes.c_int)]


_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArrayStream))


@pytest.fixture(scope="module")
def lib():
    lib = ctypes.CDLL(require(LIB))
    lib.qv_write_arrow_stream_path.argtypes = [
        ctypes.POINTER(ArrowArrayStream), ctypes.c_char_p, ctypes.POINTER(WriteOptions),
        ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p]
    lib.qv_write_arrow_stream_path.restype = ctypes.c_int
    return lib


class QuiverError(Exception):
    def __init__(self, status, message):
        super().__init__(f"quiver status {status}: {message}")
        self.status, self.message = status, message


def quiver_write(lib, schema, batches, path, fmt, codec, max_rows=-1, alignment=0, threads=0):
    """Hand `batches` to quiver as a C stream; returns rows written."""
    reader = pa.RecordBatchReader.from_batches(schema, batches)
    stream = ArrowArrayStream()
    reader._export_to_c(ctypes.addressof(stream))
    opts = WriteOptions(FORMATS[fmt], CODECS[codec], 0, alignment, max_rows, threads)
    rows = ctypes.c_int64(-1)
    err = ctypes.create_string_buffer(QV_ERROR_SIZE)
    st = lib.qv_write_arrow_stream_path(ctypes.byref(stream), os.fsencode(path),
                                        ctypes.byref(opts), ctypes.byref(rows), err)
    released = not stream.release
    if not released:  # never expected: quiver consumes the stream
        _RELEASE(stream.release)(ctypes.byref(stream))
    assert released, "quiver did not consume the C stream"
    if st != 0:
        raise QuiverError(st, err.value.decode(errors="replace"))
    return rows.value


def read_back(path):
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic == b"ARROW1":
        r = ipc.open_file(path)
        return r.schema, [r.get_batch(i) for i in range(r.num_record_batches)]
    r = ipc.open_stream(path)
    return r.schema, list(r)


# ---------------------------------------------------------------------------
# Comparison

def _validity_bits(arr):
    """The validity of arr's logical slots as a numpy bool array."""
    buf = arr.buffers()[0]
    if buf is None:
        return np.ones(len(arr), dtype=bool)
    bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little")
    return bits[arr.offset:arr.offset + len(arr)].astype(bool)


def _has_validity(t):
    return not (pa.types.is_union(t) or isinstance(t, pa.RunEndEncodedType) or
                t == pa.null())


_FLOAT_BITS = {16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}


def _first_diff(e, a):
    try:
        el, al = e.to_pylist(), a.to_pylist()
    except Exception as ex:  # noqa: BLE001 — types without Python values
        return f"(values not comparable in Python: {ex})"
    for i, (x, y) in enumerate(zip(el, al)):
        if x != y and not (x != x and y != y):
            return f"row {i}: expected {x!r}, found {y!r}"
    return "arrays differ"


def check_array(e, a, path):
    t = e.type
    assert a.type == t, f"{path}: type {a.type}, expected {t}"
    assert len(a) == len(e), f"{path}: length {len(a)}, expected {len(e)}"
    assert a.null_count == e.null_count, f"{path}: null_count {a.null_count} vs {e.null_count}"
    if _has_validity(t):
        ev, av = _validity_bits(e), _validity_bits(a)
        if not np.array_equal(ev, av):
            bad = int(np.nonzero(ev != av)[0][0])
            raise AssertionError(f"{path}: validity bit {bad} is {av[bad]}, expected {ev[bad]}")
    if pa.types.is_floating(t):
        bt = _FLOAT_BITS[t.bit_width]
        assert a.view(bt).equals(e.view(bt)), f"{path}: float bits differ"
    else:
        assert a.equals(e), f"{path}: {_first_diff(e, a)}"
    if pa.types.is_struct(t):
        for i, f in enumerate(t):
            check_array(e.field(i), a.field(i), f"{path}.{f.name}")
    elif pa.types.is_map(t):  # .keys/.items are the whole children: cut them
        def cut(m, child):
            lo, hi = m.offsets[0].as_py(), m.offsets[-1].as_py()
            return child.slice(lo, hi - lo)
        check_array(cut(e, e.keys), cut(a, a.keys), f"{path}.key")
        check_array(cut(e, e.items), cut(a, a.items), f"{path}.value")
    elif (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or
          pa.types.is_large_list_view(t) or pa.types.is_fixed_size_list(t)):
        try:
            ef, af = e.flatten(), a.flatten()
        except pa.ArrowNotImplementedError:  # no flatten kernel for the value type:
            return  # equals() above compared the values
        check_array(ef, af, f"{path}[]")
    elif pa.types.is_dictionary(t):
        check_array(e.indices, a.indices, f"{path}.indices")
        check_array(e.dictionary, a.dictionary, f"{path}.dictionary")
    elif pa.types.is_union(t) and t.mode == "sparse":
        # Dense union children are compared logically by equals(): quiver
        # writes only the part of each child a batch refers to.
        for i, f in enumerate(t):
            check_array(e.field(i), a.field(i), f"{path}.{f.name}")


def _no_python_class(t):
    """month_interval / day_time_interval have no pyarrow Array class."""
    return str(t) in ("month_interval", "day_time_interval")


def _fields_metadata(fields, path=""):
    out = []
    for f in fields:
        out.append((path + f.name, f.metadata or {}))
        t = f.type
        kids = []
        if pa.types.is_struct(t) or pa.types.is_union(t):
            kids = list(t)
        elif (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or
              pa.types.is_large_list_view(t) or pa.types.is_fixed_size_list(t)):
            kids = [t.value_field]
        elif pa.types.is_map(t):
            kids = [t.key_field, t.item_field]
        out += _fields_metadata(kids, path + f.name + ".")
    return out


def _aligned_pieces(ec, ac):
    """Pairs of equal-length slices of two chunked arrays of equal length,
    cut at the union of both chunkings (no concatenation: pyarrow cannot
    concatenate some dictionary arrays)."""
    ei = ai = 0  # chunk index
    eo = ao = 0  # offset inside the current chunk
    echunks = [c for c in ec.chunks if len(c)]
    achunks = [c for c in ac.chunks if len(c)]
    while ei < len(echunks) and ai < len(achunks):
        n = min(len(echunks[ei]) - eo, len(achunks[ai]) - ao)
        yield echunks[ei].slice(eo, n), achunks[ai].slice(ao, n)
        eo += n
        ao += n
        if eo == len(echunks[ei]):
            ei, eo = ei + 1, 0
        if ao == len(achunks[ai]):
            ai, ao = ai + 1, 0
    assert ei == len(echunks) and ai == len(achunks)


def assert_tables_same(expected, actual):
    assert actual.schema.equals(expected.schema, check_metadata=True), (
        f"schema differs:\nexpected {expected.schema}\nfound {actual.schema}")
    assert actual.schema.metadata == expected.schema.metadata
    assert _fields_metadata(actual.schema) == _fields_metadata(expected.schema)
    assert actual.num_rows == expected.num_rows
    for i, f in enumerate(expected.schema):
        ec, ac = expected.column(i), actual.column(i)
        if _no_python_class(f.type):
            assert expected.select([i]).equals(actual.select([i])), f"column {f.name} differs"
            continue
        for k, (e, a) in enumerate(_aligned_pieces(ec, ac)):
            check_array(e, a, f"{f.name} (piece {k})")


def assert_batches_same(expected_batches, schema, batches):
    assert [b.num_rows for b in batches] == [b.num_rows for b in expected_batches]
    for b in batches:
        b.validate(full=True)
    assert_tables_same(pa.Table.from_batches(expected_batches, schema),
                       pa.Table.from_batches(batches, schema))


def _leftovers(tmp_path):
    return [p for p in os.listdir(tmp_path) if "tmp-quiver" in p]


# ---------------------------------------------------------------------------
# Tests

def _seed(*parts):
    return zlib.crc32("/".join(map(str, parts)).encode())


@pytest.mark.parametrize("codec", [None, "lz4", "zstd"])
@pytest.mark.parametrize("fmt", ["stream", "file"])
@pytest.mark.parametrize("round_", [0, 1])
def test_c_stream_random_tables(lib, tmp_path, fmt, codec, round_):
    seed = _seed("cstream", fmt, codec, round_)
    table = qvrandom.random_table(seed, n=160)
    batches = qvrandom.random_batches(table, random.Random(seed))
    path = str(tmp_path / f"out.{fmt}")
    rows = quiver_write(lib, table.schema, batches, path, fmt, codec)
    assert rows == table.num_rows
    schema, got = read_back(path)
    assert schema.equals(table.schema, check_metadata=True)
    assert_batches_same(batches, table.schema, got)
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("max_rows,alignment,threads", [(0, 8, 1), (7, 64, 0), (1, 0, 3)])
def test_c_stream_rebatched(lib, tmp_path, max_rows, alignment, threads):
    seed = _seed("rebatch", max_rows, alignment)  # threads: same bytes, any count
    table = qvrandom.random_table(seed, n=120)
    batches = qvrandom.random_batches(table, random.Random(seed))
    for fmt in ("stream", "file"):
        path = str(tmp_path / f"out.{fmt}")
        quiver_write(lib, table.schema, batches, path, fmt, "zstd", max_rows, alignment,
                     threads)
        schema, got = read_back(path)
        limit = 1000 if max_rows == 0 else max_rows
        assert all(b.num_rows <= limit for b in got)
        assert_tables_same(table, pa.Table.from_batches(got, schema))


def _pyarrow_write(table, batches, path, fmt, codec):
    options = ipc.IpcWriteOptions(compression=codec)
    open_writer = ipc.new_stream if fmt == "stream" else ipc.new_file
    with open_writer(path, table.schema, options=options) as w:
        for b in batches:
            w.write_batch(b)


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_convert_random_tables(tmp_path, fmt, codec):
    cli = require(CLI)
    seed = _seed("convert", fmt, codec)
    rng = random.Random(seed)
    table = qvrandom.random_table(seed, n=160)
    batches = qvrandom.random_batches(table, rng)
    src = str(tmp_path / "src.arrow")
    _pyarrow_write(table, batches, src, rng.choice(["stream", "file"]),
                   rng.choice([None, "lz4", "zstd"]))
    out = str(tmp_path / f"out.{fmt}")
    for batch_size in ("1000", "5"):
        r = subprocess.run([cli, "convert", src, out, f"--format={fmt}",
                            f"--compression={codec}", f"--batch-size={batch_size}"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        schema, got = read_back(out)
        assert all(b.num_rows <= int(batch_size) for b in got)
        if batch_size == "1000":  # batches under the limit are kept as they are
            assert [b.num_rows for b in got] == [b.num_rows for b in batches]
        assert_tables_same(table, pa.Table.from_batches(got, schema))
        os.unlink(out)
    assert _leftovers(tmp_path) == []


def test_empty_tables(lib, tmp_path):
    """No batches at all, and one empty batch."""
    table = qvrandom.random_table(_seed("empty"), n=5)
    empty = table.combine_chunks().to_batches()[0].slice(5, 0)
    for fmt in ("stream", "file"):
        for batches in ([], [empty]):
            path = str(tmp_path / f"empty.{fmt}")
            assert quiver_write(lib, table.schema, batches, path, fmt, "lz4") == 0
            schema, got = read_back(path)
            assert schema.equals(table.schema, check_metadata=True)
            assert [b.num_rows for b in got] == [0] * len(batches)


def _dict_batch(schema, words, indices):
    d = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int8()), pa.array(words))
    return pa.record_batch([d, pa.array(range(len(indices)), pa.int64())], schema=schema)


def test_dictionaries_that_change(lib, tmp_path):
    """Across batches: the same dictionary (sent once), an extended one (a
    delta in streams), an unrelated one (a replacement in streams). The IPC
    file format cannot express the last two: a clear error, no output."""
    schema = pa.schema([pa.field("d", pa.dictionary(pa.int8(), pa.string())),
                        pa.field("i", pa.int64())])
    batches = [
        _dict_batch(schema, ["a", "b"], [0, 1, None, 1]),
        _dict_batch(schema, ["a", "b"], [1, 1]),
        _dict_batch(schema, ["a", "b", "c"], [2, 0, None]),      # delta
        _dict_batch(schema, ["x", "y"], [1, 0]),                 # replacement
        _dict_batch(schema, ["x", "y", "z", "w"], [3, 2, 1, 0]),  # delta
    ]
    path = str(tmp_path / "d.stream")
    quiver_write(lib, schema, batches, path, "stream", "lz4")
    # pyarrow's own view of the message sequence: 1 + 1 delta + 1 + 1 delta
    r = ipc.open_stream(path)
    got = list(r)
    assert r.stats.num_dictionary_batches == 4
    assert r.stats.num_dictionary_deltas == 2
    assert r.stats.num_replaced_dictionaries == 1
    assert [b.column(0).to_pylist() for b in got] == [b.column(0).to_pylist() for b in batches]
    for e, a in zip(batches, got):
        check_array(e.column(1), a.column(1), "i")
        assert _validity_bits(a.column(0)).tolist() == _validity_bits(e.column(0)).tolist()
    with pytest.raises(QuiverError) as ex:
        quiver_write(lib, schema, batches, str(tmp_path / "d.arrow"), "file", None)
    assert ex.value.status == 2  # QV_ENOTSUP
    assert ex.value.message == (
        "C stream batch 2: writer: dictionary id 0 changes between record batches; the IPC "
        "file format cannot replace or extend a dictionary (write a stream, or unify the "
        "dictionaries first)")
    assert sorted(os.listdir(tmp_path)) == ["d.stream"]


def test_producer_error_is_reported(lib, tmp_path):
    """A Python generator that raises mid-stream: pyarrow's C stream
    reports the error; quiver returns it and leaves no file behind."""
    schema = pa.schema([("x", pa.int32())])

    def gen():
        yield pa.record_batch([pa.array([1, 2], pa.int32())], schema=schema)
        raise ValueError("generator failed on purpose")

    reader = pa.RecordBatchReader.from_batches(schema, gen())
    stream = ArrowArrayStream()
    reader._export_to_c(ctypes.addressof(stream))
    err = ctypes.create_string_buffer(QV_ERROR_SIZE)
    target = tmp_path / "x.arrow"
    st = lib.qv_write_arrow_stream_path(ctypes.byref(stream), os.fsencode(str(target)),
                                        None, None, err)
    assert st != 0
    msg = err.value.decode()
    assert msg.startswith("C stream batch 1: C stream get_next failed"), msg
    assert "generator failed on purpose" in msg
    assert not stream.release
    assert os.listdir(tmp_path) == []
