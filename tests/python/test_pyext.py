"""The CPython extension (python/, `import quiver`) against independent
oracles, offline with a private HF_HOME:

  - pyarrow: a table of many Arrow types with nulls (nested, timestamps
    with and without time zones, decimals, binary, large and view types,
    dictionaries, maps, unions, run-end encoded) written by pyarrow; every
    ds[i], list(ds), ds[a:b:c], ds["col"] and Batch.to_pylist() equals
    pyarrow's to_pylist(); pa.table(ds) (the __arrow_c_stream__ capsule)
    equals pyarrow's own read of the file, and its buffers point into
    quiver's mapping of the file (zero copy); batches of ds.iter_batches() go
    through __arrow_c_array__;
  - datasets 5.2.0: quiver.open of a save_to_disk directory has datasets'
    length, features, fingerprint and rows; shuffle / sort / filter /
    select / shard / train_test_split / concatenate give datasets' rows;
    quiver's save_to_disk output loads in datasets.load_from_disk with
    the same rows and features; an indices mapping datasets wrote opens
    with data=;
  - errors (bad path, bad key types, out-of-range rows, bad expressions,
    bad arguments) raise QuiverError / TypeError / ValueError / IndexError
    / KeyError with the message; capsule names and consume-once semantics;
    exported data outlives the Dataset; opening and dropping datasets in a
    loop does not grow the resident set without bound.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import ctypes
import datetime
import decimal
import gc
import glob
import json
import math
import os
import shutil
import tempfile

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.feather  # noqa: E402,F401
import pytest  # noqa: E402

from hfdata import SMALL_FEATURES, small_rows  # noqa: E402
from qvpaths import import_quiver, quiver as run_cli  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Specifying null_placement:FutureWarning")

quiver = import_quiver()
D = datasets


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="quiver-pyext-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- pyarrow --

def many_types_table(n=37):
    """Columns of every Arrow type users meet, every fifth value null."""
    def nul(vals):
        return [None if i % 5 == 3 else v for i, v in enumerate(vals)]

    r = range(n)
    utc = datetime.timezone.utc
    cols = {
        "i8": pa.array(nul([(-1) ** i * i for i in r]), pa.int8()),
        "u16": pa.array(nul([i * 1000 for i in r]), pa.uint16()),
        "i64": pa.array(nul([-(2 ** 62) + i for i in r]), pa.int64()),
        "u64": pa.array(nul([2 ** 64 - 1 - i for i in r]), pa.uint64()),
        "f16": pa.array(nul([i / 7 for i in r]), pa.float32()).cast(pa.float16()),
        "f32": pa.array(nul([i / 3 for i in r]), pa.float32()),
        "f64": pa.array(nul([i * 1.5e300 if i % 2 else -i / 9 for i in r]), pa.float64()),
        "b": pa.array(nul([i % 3 == 0 for i in r]), pa.bool_()),
        "s": pa.array(nul([f"row {i} déjà 日本 🙂" * (i % 3) for i in r]), pa.string()),
        "ls": pa.array(nul([f"large {i}" for i in r]), pa.large_string()),
        "bin": pa.array(nul([bytes([i, 0, 255]) * (i % 4) for i in r]), pa.binary()),
        "lbin": pa.array(nul([b"\x00" * i for i in r]), pa.large_binary()),
        "fsb": pa.array(nul([bytes([i] * 4) for i in r]), pa.binary(4)),
        "sv": pa.array(nul([f"view string number {i} long enough" if i % 2 else "s"
                            for i in r]), pa.string_view()),
        "list": pa.array(nul([list(range(i % 4)) for i in r]), pa.list_(pa.int32())),
        "llist": pa.array(nul([[f"x{j}" for j in range(i % 3)] for i in r]),
                          pa.large_list(pa.string())),
        "fsl": pa.array(nul([[i, None, -i] for i in r]), pa.list_(pa.int16(), 3)),
        "struct": pa.array(nul([{"a": i, "b": {"c": [str(i)] if i % 2 else None}}
                                for i in r]),
                           pa.struct([("a", pa.int32()),
                                      ("b", pa.struct([("c", pa.list_(pa.string()))]))])),
        "dict": pa.array(nul([["red", "green", "blue"][i % 3] for i in r])).dictionary_encode(),
        "ts_s": pa.array(nul([i * 86400 * 400 - 10 ** 9 for i in r]), pa.timestamp("s")),
        "ts_ms_utc": pa.array(nul([i * 123456789 for i in r]), pa.timestamp("ms", tz="UTC")),
        "ts_us_tz": pa.array(nul([-i * 10 ** 12 + 7 for i in r]),
                             pa.timestamp("us", tz="America/New_York")),
        "ts_us_off": pa.array(nul([i * 10 ** 11 for i in r]), pa.timestamp("us", tz="+05:30")),
        "ts_ns": pa.array(nul([i * 10 ** 15 + 123 for i in r]), pa.timestamp("ns")),
        "date32": pa.array(nul([i * 400 - 8000 for i in r]), pa.date32()),
        "date64": pa.array(nul([(i * 400 - 8000) * 86400000 for i in r]), pa.date64()),
        "t32": pa.array(nul([i * 1000 for i in r]), pa.time32("s")),
        "t64": pa.array(nul([i * 10 ** 9 + 5 for i in r]), pa.time64("us")),
        "t64ns": pa.array(nul([i * 10 ** 12 + 1999 for i in r]), pa.time64("ns")),
        "dur_us": pa.array(nul([-i * 1999 for i in r]), pa.duration("us")),
        "dur": pa.array(nul([(-1) ** i * i * 10 ** 9 for i in r]), pa.duration("ms")),
        "dec": pa.array(nul([decimal.Decimal(f"{(-1) ** i * i}.{i:02d}") for i in r]),
                        pa.decimal128(12, 2)),
        "dec256": pa.array(nul([decimal.Decimal(10) ** 40 * i + i for i in r]),
                           pa.decimal256(60, 0)),
        "null": pa.nulls(n),
    }
    del utc
    return pa.table(cols)


def test_version_is_the_c_library_s():
    assert quiver.__version__ == run_cli("--version").stdout.decode().split()[-1]


def test_rows_equal_pyarrow_as_py_for_many_types(tmp):
    t = many_types_table()
    path = os.path.join(tmp, "many.arrow")
    pa.feather.write_feather(t, path, compression="uncompressed")
    expected_table = pa.ipc.open_file(path).read_all()
    expected = expected_table.to_pylist()
    ds = quiver.open(path)
    assert len(ds) == ds.num_rows == t.num_rows
    assert ds.num_columns == t.num_columns and ds.column_names == t.column_names
    for i in range(len(ds)):
        assert ds[i] == expected[i], i
    assert ds[-1] == expected[-1] and ds[-len(ds)] == expected[0]
    assert list(ds) == expected
    cols = expected_table.to_pydict()

    def take(rows):
        return {c: [expected[r][c] for r in rows] for c in t.column_names}

    assert ds[3:30:4] == take(range(3, 30, 4))
    assert ds[::-7] == take(range(len(ds) - 1, -1, -7))
    assert ds[[5, 1, 5, -1]] == take([5, 1, 5, len(ds) - 1])
    assert ds[10:10] == {c: [] for c in t.column_names}
    for c in t.column_names:
        assert ds[c] == cols[c], c
    # types of the values, not only equality
    row = ds[1]
    assert type(row["ts_s"]) is datetime.datetime and row["ts_s"].tzinfo is None
    assert row["ts_ms_utc"].utcoffset() == datetime.timedelta(0)
    assert row["ts_us_tz"].tzinfo is not None and row["ts_us_tz"] == expected[1]["ts_us_tz"]
    assert str(row["ts_us_tz"].tzinfo) == "America/New_York"
    assert row["ts_us_off"].utcoffset() == datetime.timedelta(hours=5, minutes=30)
    assert type(row["date32"]) is datetime.date and type(row["t64"]) is datetime.time
    assert type(row["dec"]) is decimal.Decimal and str(row["dec"]) == str(expected[1]["dec"])
    assert type(row["bin"]) is bytes and type(row["ls"]) is str
    # pa.table(ds) goes through __arrow_c_stream__: pyarrow's own read
    got = pa.table(ds)
    assert got.equals(expected_table, check_metadata=True)
    assert pa.RecordBatchReader.from_stream(ds).read_all().equals(expected_table)
    # Batches through __arrow_c_array__
    batches = list(ds.iter_batches(8))
    assert [len(b) for b in batches] == [8, 8, 8, 8, 5]
    assert [b.num_rows for b in ds.iter_batches(8, True)] == [8, 8, 8, 8]
    assert sum((b.to_pylist() for b in batches), []) == expected
    assert batches[1].to_pydict() == take(range(8, 16))
    rb = pa.record_batch(batches[2])
    assert rb.schema.equals(expected_table.schema) and rb.to_pylist() == expected[16:24]
    arr = pa.array(batches[3])
    assert arr.type == pa.struct(list(expected_table.schema)) and arr.to_pylist() == expected[24:32]
    assert batches[0].column_names == t.column_names


def test_nan_infinity_and_ns_timestamps(tmp):
    t = pa.table({"f": pa.array([math.nan, math.inf, -0.0, None]),
                  "ns": pa.array([1, 10 ** 18 + 999, None, 0], pa.timestamp("ns", tz="UTC")),
                  "dns": pa.array([1, -5, None, 10 ** 15], pa.duration("ns"))})
    path = os.path.join(tmp, "f.arrow")
    pa.feather.write_feather(t, path, compression="uncompressed")
    ds = quiver.open(path)
    exp = t.to_pylist()
    rows = list(ds)
    assert math.isnan(rows[0]["f"]) and rows[1]["f"] == math.inf
    assert math.copysign(1, rows[2]["f"]) == -1 and rows[3]["f"] is None
    for got, want in zip(rows, exp):
        assert got["ns"] == want["ns"] and type(got["ns"]) is type(want["ns"])
        assert got["dns"] == want["dns"] and type(got["dns"]) is type(want["dns"])


def test_types_datasets_cannot_load_are_refused(tmp):
    # As datasets (no feature for them): maps, unions, run-end encoded.
    cols = {
        "map": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())),
        "dense": pa.UnionArray.from_dense(pa.array([0], pa.int8()), pa.array([0], pa.int32()),
                                          [pa.array([1])], ["int"]),
        "ree": pa.RunEndEncodedArray.from_arrays(pa.array([1], pa.int32()), pa.array(["a"])),
        "iv": pa.array([pa.MonthDayNano([1, 2, 3])], pa.month_day_nano_interval()),
    }
    for name, arr in cols.items():
        path = os.path.join(tmp, name + ".arrow")
        pa.feather.write_feather(pa.table({name: arr}), path, compression="uncompressed")
        with pytest.raises(quiver.QuiverError, match=f"column\\['{name}'\\].*no datasets feature"):
            quiver.open(path)


def proc_maps_ranges(path):
    real = os.path.realpath(path)
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == real:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi))
    return out


def test_stream_export_is_zero_copy_from_the_mapping(tmp):
    t = pa.table({"x": pa.array(range(100000), pa.int64())})
    path = os.path.join(tmp, "z.arrow")
    pa.feather.write_feather(t, path, compression="uncompressed")
    ds = quiver.open(path)
    got = pa.table(ds)
    ranges = proc_maps_ranges(path)
    assert ranges, "quiver does not map the file"
    addr = got.column("x").chunks[0].buffers()[1].address
    assert any(lo <= addr < hi for lo, hi in ranges)
    # Exported data outlives the Dataset (the arrays hold the mapping).
    del ds
    gc.collect()
    assert got.column("x").to_pylist() == list(range(100000))
    batches = list(quiver.open(path).iter_batches(1000))
    gc.collect()
    assert pa.record_batch(batches[7]).column(0).to_pylist() == list(range(7000, 8000))


def capsule_name(cap):
    f = ctypes.pythonapi.PyCapsule_GetName
    f.restype, f.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return f(cap).decode()


def test_capsule_names_and_consume_once(tmp):
    path = os.path.join(tmp, "c.arrow")
    pa.feather.write_feather(pa.table({"a": [1, 2, 3]}), path, compression="uncompressed")
    ds = quiver.open(path)
    assert capsule_name(ds.__arrow_c_schema__()) == "arrow_schema"
    assert capsule_name(ds.__arrow_c_stream__()) == "arrow_array_stream"
    s, a = next(ds.iter_batches(2)).__arrow_c_array__()
    assert (capsule_name(s), capsule_name(a)) == ("arrow_schema", "arrow_array")
    assert pa.schema(ds) == pa.schema([("a", pa.int64())])
    # Unconsumed capsules are released by their destructor (no leak, no crash).
    for _ in range(100):
        ds.__arrow_c_stream__()
        next(ds.iter_batches(3)).__arrow_c_array__()
    cap = ds.__arrow_c_stream__()
    assert pa.RecordBatchReader._import_from_c_capsule(cap).read_all().num_rows == 3
    with pytest.raises(Exception):
        pa.RecordBatchReader._import_from_c_capsule(cap)  # moved out already
    # requested_schema: best effort, a different field count is refused
    cap = ds.__arrow_c_stream__(pa.schema([("a", pa.int64())]).__arrow_c_schema__())
    assert pa.RecordBatchReader._import_from_c_capsule(cap).read_all().num_rows == 3
    with pytest.raises(ValueError, match="requested_schema has 2 fields, the data has 1"):
        ds.__arrow_c_stream__(pa.schema([("a", pa.int64()), ("b", pa.int8())]).__arrow_c_schema__())
    with pytest.raises(TypeError, match="requested_schema"):
        ds.__arrow_c_stream__(42)


# --------------------------------------------------------------- datasets --

N = 500
FEATURES = SMALL_FEATURES


def hf_rows(n=N):
    return small_rows(n, seed=11, nan=False)


@pytest.fixture(scope="module")
def hf_dir():
    d = tempfile.mkdtemp(prefix="quiver-pyext-hf-")
    D.Dataset.from_dict(hf_rows(), features=FEATURES).save_to_disk(
        os.path.join(d, "ds"), num_shards=3)
    yield os.path.join(d, "ds")
    shutil.rmtree(d, ignore_errors=True)


def test_open_matches_datasets(hf_dir):
    hf = D.load_from_disk(hf_dir)
    ds = quiver.open(hf_dir)
    assert len(ds) == len(hf) and ds.column_names == hf.column_names
    assert ds.features.to_dict() == hf.features.to_dict()
    assert ds.fingerprint == state_fingerprint(hf_dir)
    assert ds.split == (str(hf.split) if hf.split is not None else None)
    assert list(ds) == list(hf)
    assert ds[7] == hf[7] and ds[-2] == hf[-2]
    assert ds[10:20] == hf[10:20]
    assert ds["text"] == list(hf["text"])
    assert pa.table(ds).equals(hf.data.table.combine_chunks()) or \
        pa.table(ds).to_pylist() == hf.data.table.to_pylist()
    assert repr(ds) == repr(hf)
    assert sorted(c["filename"] for c in ds.cache_files) == \
        sorted(c["filename"] for c in hf.cache_files)


def state_fingerprint(path):
    with open(os.path.join(path, "state.json")) as f:
        return json.load(f)["_fingerprint"]


@pytest.mark.parametrize("make", ["dtypes_dataset", "main_dataset"])
def test_every_feature_type_reads_as_datasets(make, tmp):
    # hfdata: one Value column per dtype datasets names (with nulls), and
    # ClassLabel, Sequence, List, LargeList, Array2D/3D, nested dicts.
    import hfdata
    path = os.path.join(tmp, make)
    getattr(hfdata, make)().save_to_disk(path)
    hf = D.load_from_disk(path)
    ds = quiver.open(path)
    assert list(ds) == list(hf)
    assert ds[: len(ds)] == hf[: len(hf)]
    # JSON has no tuples: Array shapes come back as lists, as from dataset_info.json
    assert ds.features.to_dict() == hf.features.to_dict()


def test_transforms_match_datasets(hf_dir):
    hf = D.load_from_disk(hf_dir)
    ds = quiver.open(hf_dir)
    assert list(ds.shuffle(seed=42)) == list(hf.shuffle(seed=42))
    assert list(ds.shuffle(seed=2 ** 64 - 1)) == list(hf.shuffle(seed=2 ** 64 - 1))
    assert list(ds.sort("score")) == list(hf.sort("score"))
    assert list(ds.sort(["label", "id"], reverse=[True, False])) == \
        list(hf.sort(["label", "id"], reverse=[True, False]))
    assert list(ds.filter("score > 0.5")) == \
        list(hf.filter(lambda r: r["score"] is not None and r["score"] > 0.5))
    assert list(ds.select([5, 1, 5, 499])) == list(hf.select([5, 1, 5, 499]))
    assert list(ds.select(range(100, 140))) == list(hf.select(range(100, 140)))
    assert list(ds.shard(3, 1)) == list(hf.shard(3, 1))
    assert list(ds.shard(3, 2, contiguous=False)) == list(hf.shard(3, 2, contiguous=False))
    q, h = ds.train_test_split(test_size=0.2, seed=3), hf.train_test_split(test_size=0.2, seed=3)
    assert sorted(q) == ["test", "train"]
    assert list(q["train"]) == list(h["train"]) and list(q["test"]) == list(h["test"])
    q = ds.train_test_split(test_size=50, shuffle=False)
    h = hf.train_test_split(test_size=50, shuffle=False)
    assert list(q["train"]) == list(h["train"]) and list(q["test"]) == list(h["test"])
    chain = ds.shuffle(seed=9).filter("label == 1").sort("id", reverse=True).select(range(10))
    hchain = hf.shuffle(seed=9).filter(lambda r: r["label"] == 1).sort("id", reverse=True) \
        .select(range(10))
    assert list(chain) == list(hchain)
    flat = chain.flatten_indices()
    assert list(flat) == list(hchain) and pa.table(flat).to_pylist() == list(hchain)
    # Mapped datasets export gathered batches.
    assert pa.table(ds.shuffle(seed=42)).to_pylist() == list(hf.shuffle(seed=42))
    assert list(ds.select_columns(["text", "id"])) == list(hf.select_columns(["text", "id"]))
    assert list(ds.remove_columns("tags")) == list(hf.remove_columns("tags"))
    r = ds.rename_column("text", "body")
    assert r.column_names == hf.rename_column("text", "body").column_names
    assert r["body"] == list(hf["text"])
    assert ds.rename_columns({"id": "i", "score": "s"}).column_names == \
        hf.rename_columns({"id": "i", "score": "s"}).column_names
    both = quiver.concatenate_datasets([ds.select(range(5)), ds.shuffle(seed=1).select(range(4))])
    hboth = D.concatenate_datasets([hf.select(range(5)), hf.shuffle(seed=1).select(range(4))])
    assert list(both) == list(hboth)


def test_cache_true_writes_beside_the_data(tmp):
    path = os.path.join(tmp, "ds")
    D.Dataset.from_dict(hf_rows(50), features=FEATURES).save_to_disk(path)
    ds = quiver.open(path)
    # keep_in_memory by default: no cache file beside the source
    before = sorted(os.listdir(path))
    ds.shuffle(seed=4).sort("score").filter("id > 3").train_test_split(test_size=0.5, seed=1)
    ds.shuffle(seed=4).flatten_indices()
    assert sorted(os.listdir(path)) == before
    s = ds.shuffle(seed=4, cache=True)
    caches = glob.glob(os.path.join(path, "cache-*.arrow"))
    assert [os.path.basename(c) for c in caches] == [f"cache-{s.fingerprint}.arrow"]
    assert list(s) == list(D.load_from_disk(path).shuffle(seed=4))
    assert any(c["filename"] == caches[0] for c in s.cache_files)


def test_save_to_disk_loads_in_datasets(hf_dir, tmp):
    hf = D.load_from_disk(hf_dir)
    ds = quiver.open(hf_dir).shuffle(seed=8).filter("id % 3 != 0")
    out = os.path.join(tmp, "saved")
    ds.save_to_disk(out, num_shards=2)
    back = D.load_from_disk(out)
    want = hf.shuffle(seed=8).filter(lambda r: r["id"] % 3 != 0)
    assert list(back) == list(want) and back.features == hf.features
    assert len(glob.glob(os.path.join(out, "data-*.arrow"))) == 2
    assert state_fingerprint(out) == ds.fingerprint == quiver.open(out).fingerprint
    out2 = os.path.join(tmp, "saved2")
    quiver.open(out).save_to_disk(out2, max_shard_size="1KB")
    assert len(glob.glob(os.path.join(out2, "data-*.arrow"))) > 1
    assert list(D.load_from_disk(out2)) == list(want)


def test_open_indices_mapping_with_data(tmp):
    path = os.path.join(tmp, "ds")
    D.Dataset.from_dict(hf_rows(60), features=FEATURES).save_to_disk(path)
    hf = D.load_from_disk(path)
    hs = hf.shuffle(seed=21)  # writes cache-<fp>.arrow beside the data
    idx = glob.glob(os.path.join(path, "cache-*.arrow"))
    assert len(idx) == 1
    q = quiver.open(idx[0], data=path)
    assert list(q) == list(hs) and q.fingerprint == hs._fingerprint
    assert list(quiver.open(idx[0])) == list(hs)  # resolved from the directory


def test_dataset_dict_split(tmp):
    path = os.path.join(tmp, "dd")
    dd = D.DatasetDict({"train": D.Dataset.from_dict(hf_rows(20), features=FEATURES),
                        "test": D.Dataset.from_dict(hf_rows(7), features=FEATURES)})
    dd.save_to_disk(path)
    q = quiver.open(path, split="test")
    want = D.load_from_disk(path)["test"]
    assert q.split == want.split and list(q) == list(want)
    with pytest.raises(quiver.QuiverError, match="train"):
        quiver.open(path)


# ------------------------------------------------------------------ errors --

def test_errors(hf_dir, tmp):
    with pytest.raises(quiver.QuiverError) as e:
        quiver.open(os.path.join(tmp, "missing.arrow"))
    assert "missing.arrow" in str(e.value) and e.value.status and isinstance(e.value.code, int)
    bad = os.path.join(tmp, "bad.arrow")
    with open(bad, "wb") as f:
        f.write(b"ARROW1\x00\x00garbage")
    with pytest.raises(quiver.QuiverError, match="bad.arrow"):
        quiver.open(bad)
    with pytest.raises(TypeError):
        quiver.open(12)
    ds = quiver.open(hf_dir)
    with pytest.raises(IndexError, match=f"index {N} is out of range for a dataset of {N} rows"):
        ds[N]
    with pytest.raises(IndexError):
        ds[-N - 1]
    with pytest.raises(TypeError, match="dataset indices must be"):
        ds[1.5]
    with pytest.raises(TypeError):
        ds[True]
    with pytest.raises(KeyError, match="nope"):
        ds["nope"]
    with pytest.raises(IndexError, match="out of range"):
        ds.select([0, N])
    with pytest.raises(IndexError, match=f"index {-N - 1} \\(position 1\\) is out of range"):
        ds[[0, -N - 1]]
    with pytest.raises(IndexError, match="index -1 \\(position 0\\)"):
        ds.select([-1])  # no negative positions (datasets refuses them too)
    with pytest.raises(TypeError, match="an index must be an int"):
        ds.select(["a"])
    with pytest.raises(quiver.QuiverError, match="score"):
        ds.filter("score >")
    with pytest.raises(quiver.QuiverError, match="nope"):
        ds.filter("nope > 1")
    with pytest.raises(TypeError, match="expression string .* or a callable"):
        ds.filter(42)
    with pytest.raises(quiver.QuiverError, match="nope"):
        ds.sort("nope")
    with pytest.raises(TypeError, match="reverse"):
        ds.sort("id", reverse="yes")
    with pytest.raises(ValueError, match="reverse has 1 values for 2 columns"):
        ds.sort(["id", "label"], reverse=[True])
    with pytest.raises(ValueError, match="null_placement"):
        ds.sort("id", null_placement="middle")
    with pytest.raises(ValueError, match="seed"):
        ds.shuffle(seed=-1)
    with pytest.raises(TypeError, match="seed"):
        ds.shuffle(seed="x")
    with pytest.raises(ValueError, match="num_shards"):
        ds.shard(0, 0)
    with pytest.raises(ValueError, match="index 3 is out of range for 3 shards"):  # as datasets
        ds.shard(3, 3)
    with pytest.raises(TypeError, match="test_size"):
        ds.train_test_split(test_size="x")
    with pytest.raises(quiver.QuiverError):
        ds.train_test_split(test_size=1.5)
    with pytest.raises(quiver.QuiverError, match="nope"):
        ds.select_columns(["nope"])
    with pytest.raises(TypeError, match="column_names"):
        ds.remove_columns(3)
    with pytest.raises(ValueError, match="batch_size"):
        ds.iter(0)
    with pytest.raises(TypeError, match="not a quiver.Dataset"):
        quiver.concatenate_datasets([ds, 1])
    with pytest.raises(ValueError, match="empty list"):
        quiver.concatenate_datasets([])
    with pytest.raises(TypeError, match="quiver.open"):
        quiver.Dataset()
    with pytest.raises(ValueError, match="max_shard_size"):
        ds.save_to_disk(os.path.join(tmp, "x"), max_shard_size="lots")
    with pytest.raises(quiver.QuiverError):
        ds.save_to_disk(hf_dir)  # cannot overwrite its own files


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_open_and_drop_does_not_grow_memory(hf_dir):
    def once():
        ds = quiver.open(hf_dir)
        s = ds.shuffle(seed=1)
        s[3], ds[1:50]
        pa.table(s)
        list(s.iter(64))
        try:
            ds.filter("bad >")
        except quiver.QuiverError:
            pass

    for _ in range(30):
        once()
    gc.collect()
    start = rss_kib()
    for _ in range(300):
        once()
    gc.collect()
    grown = rss_kib() - start
    assert grown < 16 * 1024, f"resident set grew by {grown} KiB over 300 open/drop rounds"
