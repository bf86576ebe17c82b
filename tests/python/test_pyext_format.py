"""Output formats of quiver.Dataset against `datasets` 5.2.0 itself: for
every format (python, numpy, arrow, pandas) and every access (ds[i],
ds[a:b], ds[a:b:c], ds[[...]], ds[np.array], ds["col"] and its items,
iteration by rows and by batches, __getitems__), quiver gives what
`datasets.load_from_disk(dir).with_format(...)` gives on the same
save_to_disk directory: the same Python types, numpy dtypes and shapes
and equal values (pandas frames by pandas.testing). The data has int64,
float32, string, ClassLabel, Sequence(float32, length=16), Array2D and
bool columns, nulls wherever datasets keeps them (all but id and the
Array2D), two shards of several record batches, plain and shuffled.
Also: columns / output_all_columns, with_transform / set_transform,
set_format / reset_format / formatted_as / the format property, formats
kept by transforms, numpy index arrays, and a numpy view of the int64
column that shares memory with quiver's mapping of the file.
torch and polars are not installed in the test venv: not tested here.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import math
import os

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pyarrow as pa
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

N = 300
FEATURES = datasets.Features({
    "id": datasets.Value("int64"),
    "x": datasets.Value("float32"),
    "t": datasets.Value("string"),
    "lab": datasets.ClassLabel(names=["neg", "pos", "mid"]),
    "v": datasets.Sequence(datasets.Value("float32"), length=16),
    "m": datasets.Array2D(shape=(2, 3), dtype="float32"),
    "b": datasets.Value("bool"),
})


def columns(n):
    rng = np.random.default_rng(5)
    return {
        "id": list(range(n)),
        "x": [None if i % 7 == 3 else float(np.float32(rng.normal())) for i in range(n)],
        "t": [None if i % 11 == 5 else "w" * (i % 9) + str(i) for i in range(n)],
        "lab": [None if i % 13 == 4 else i % 3 for i in range(n)],
        "v": [None if i % 17 == 8 else [float(i + j) / 4 for j in range(16)] for i in range(n)],
        "m": [np.arange(6, dtype=np.float32).reshape(2, 3) * i for i in range(n)],
        "b": [None if i % 5 == 2 else bool(i % 2) for i in range(n)],
    }


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fmt")
    d = datasets.Dataset.from_dict(columns(N), features=FEATURES)
    d.save_to_disk(str(tmp / "two"), num_shards=2)  # two files
    d.flatten_indices(writer_batch_size=64).save_to_disk(str(tmp / "batches"))  # 64-row batches
    nonull = datasets.Dataset.from_dict({"id": list(range(N)), "f": [i / 2 for i in range(N)]},
                                        features=datasets.Features({
                                            "id": datasets.Value("int64"),
                                            "f": datasets.Value("float32")}))
    nonull.save_to_disk(str(tmp / "one"))
    return tmp


def pair(dirs, name="two", shuffled=False):
    h = datasets.load_from_disk(str(dirs / name))
    q = quiver.open(str(dirs / name))
    if shuffled:
        h, q = h.shuffle(seed=3), q.shuffle(seed=3)
    return h, q


def same(a, b, where="value"):
    """a (datasets) and b (quiver) of the same type, dtype, shape and value."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), \
            f"{where}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        if a.dtype == object:
            for i, (x, y) in enumerate(zip(a.ravel(), b.ravel())):
                same(x, y, f"{where}[{i}]")
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, (float, np.floating)) and math.isnan(a):
        assert math.isnan(b), where
    elif isinstance(a, pa.Table):
        assert [f.type for f in a.schema] == [f.type for f in b.schema], where
        assert a.column_names == b.column_names and a.to_pylist() == b.to_pylist(), where
    elif isinstance(a, pa.ChunkedArray):
        assert a.type == b.type and a.to_pylist() == b.to_pylist(), where
    elif isinstance(a, pd.DataFrame):
        pdt.assert_frame_equal(a, b)
    elif isinstance(a, pd.Series):
        pdt.assert_series_equal(a, b)
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


KEYS = [0, -1, 17, slice(5, 140), slice(3, 290, 7), slice(0, 0), [5, 1, 5, 250],
        np.array([9, 2, 160])]
FORMATS = [None, "python", "numpy", "np", "arrow", "pandas"]


def drop_m(x):
    """Without the Array2D column: datasets gives it to pandas as its own
    extension dtype (PandasArrayExtensionDtype), quiver as object arrays."""
    return x.drop(columns=["m"]) if isinstance(x, pd.DataFrame) else x


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name,shuffled", [("two", False), ("two", True), ("batches", False)])
def test_rows_slices_lists_as_datasets(dirs, fmt, name, shuffled):
    h, q = pair(dirs, name, shuffled)
    hf, qf = h.with_format(fmt), q.with_format(fmt)
    for key in KEYS:
        if fmt == "pandas" and isinstance(key, slice) and key == slice(0, 0):
            continue  # datasets' pandas formatter fails on no rows with an Array2D column
        a, b = hf[key], qf[key]
        if fmt == "pandas":
            a, b = drop_m(a), drop_m(b)
        same(a, b, f"{fmt} ds[{key!r}]")
    assert qf.format == hf.format


@pytest.mark.parametrize("fmt", FORMATS)
def test_columns_as_datasets(dirs, fmt):
    h, q = pair(dirs, "two", shuffled=True)
    hf, qf = h.with_format(fmt), q.with_format(fmt)
    for c in q.column_names:
        a, b = hf[c], qf[c]
        if fmt in ("arrow", "pandas"):
            if c != "m" or fmt == "arrow":
                same(a, b, f"{fmt} ds[{c!r}]")
            continue
        # datasets 5: a lazy Column, indexable and iterable
        assert len(b) == len(a) == N
        for key in [0, -2, slice(10, 120), slice(None), [7, 3, 7]]:
            same(a[key], b[key], f"{fmt} ds[{c!r}][{key!r}]")
        same(list(a), list(b), f"{fmt} list(ds[{c!r}])")


@pytest.mark.parametrize("fmt", FORMATS)
def test_iteration_as_datasets(dirs, fmt):
    h, q = pair(dirs, "batches", shuffled=False)
    hf, qf = h.with_format(fmt), q.with_format(fmt)
    for kw in [{"batch_size": 64}, {"batch_size": 50, "drop_last_batch": True},
               {"batch_size": 1000}]:
        a, b = list(hf.iter(**kw)), list(qf.iter(**kw))
        assert len(a) == len(b)
        for i, (x, y) in enumerate(zip(a, b)):
            if fmt == "pandas":
                x, y = drop_m(x), drop_m(y)
            same(x, y, f"{fmt} iter({kw}) #{i}")
    same([drop_m(x) for x in list(hf)[:40]], [drop_m(x) for x in list(qf)[:40]],
         f"{fmt} iter(ds)")
    # shuffled: the rows through the indices mapping
    hs, qs = h.shuffle(seed=9).with_format(fmt), q.shuffle(seed=9).with_format(fmt)
    for x, y in zip(hs.iter(batch_size=128), qs.iter(batch_size=128)):
        same(drop_m(x), drop_m(y), f"{fmt} shuffled iter")


@pytest.mark.parametrize("fmt", [None, "numpy"])
def test_getitems_as_datasets(dirs, fmt):
    h, q = pair(dirs, "two", shuffled=True)
    hf, qf = h.with_format(fmt), q.with_format(fmt)
    same(hf.__getitems__([3, 1, 200]), qf.__getitems__([3, 1, 200]), f"{fmt} __getitems__")
    same(hf.__getitems__(np.array([8, 8])), qf.__getitems__(np.array([8, 8])), f"{fmt} np")


def test_columns_and_output_all_columns(dirs):
    h, q = pair(dirs, "two")
    for kw in [{"columns": ["id", "v"]}, {"columns": ["m", "x"], "output_all_columns": True},
               {"columns": "t"}]:
        for fmt in ("numpy", "arrow", None):
            if fmt == "arrow" and kw.get("output_all_columns"):
                continue  # datasets raises for a non-dict format; so does quiver (below)
            hf, qf = h.with_format(fmt, **kw), q.with_format(fmt, **kw)
            assert qf.format == hf.format
            # (a first row whose list is null makes datasets' numpy extractor fail)
            for key in [4, slice(2, 9), [9, 0]]:
                same(hf[key], qf[key], f"{fmt} {kw} ds[{key!r}]")
            for c in qf.format["columns"]:  # (datasets' Column fails on the others)
                same(hf[c][:6] if not isinstance(hf[c], pa.ChunkedArray) else hf[c],
                     qf[c][:6] if not isinstance(qf[c], pa.ChunkedArray) else qf[c],
                     f"{fmt} {kw} ds[{c!r}]")
            for x, y in zip(hf.iter(batch_size=100), qf.iter(batch_size=100)):
                same(x, y, f"{fmt} {kw} iter")
    with pytest.raises(TypeError):
        q.with_format("arrow", columns=["id"], output_all_columns=True)[0:3]
    with pytest.raises(ValueError):
        q.with_format("numpy", columns=["nope"])
    with pytest.raises(ValueError):
        q.with_format("no-such-format")


def test_transforms(dirs):
    h, q = pair(dirs, "two", shuffled=True)

    def tf(batch):
        return {"n": [len(t or "") for t in batch["t"]], "id2": [2 * i for i in batch["id"]]}

    def keep(batch):
        return {"t": [(t or "").upper() for t in batch["t"]]}

    hf, qf = h.with_transform(tf), q.with_transform(tf)
    assert qf.format == hf.format and qf.format["type"] == "custom"
    for key in [0, slice(4, 30), [9, 1]]:
        same(hf[key], qf[key], f"transform ds[{key!r}]")
    same(list(hf.iter(batch_size=70)), list(qf.iter(batch_size=70)), "transform iter")
    same(hf.__getitems__([5, 6]), qf.__getitems__([5, 6]), "transform __getitems__")
    hk, qk = h.with_transform(keep, columns=["t"], output_all_columns=True), \
        q.with_transform(keep, columns=["t"], output_all_columns=True)
    same(hk[3:8], qk[3:8], "transform with columns")
    same(hk["t"][:5], qk["t"][:5], "transform column")
    # set_transform works in place
    h2, q2 = pair(dirs, "two")
    h2.set_transform(tf)
    q2.set_transform(tf)
    same(h2[10:12], q2[10:12], "set_transform")
    q2.reset_format()
    assert q2.format["type"] is None
    h2.reset_format()
    same(h2[10:12], q2[10:12], "after reset_format")


def test_set_reset_formatted_as_and_transforms_keep_it(dirs):
    h, q = pair(dirs, "two")
    plain_row = q[3]
    f = q.with_format("numpy")
    assert q.format["type"] is None and f.format["type"] == "numpy"
    assert q[3] == plain_row  # with_format leaves the original alone
    q.set_format("numpy", columns=["id", "m"])
    h.set_format("numpy", columns=["id", "m"])
    assert q.format == h.format
    same(h[2:5], q[2:5], "set_format")
    with q.formatted_as("arrow"), h.formatted_as("arrow"):
        assert q.format == h.format
        same(h[2:5], q[2:5], "formatted_as")
    assert q.format == h.format
    same(h[2:5], q[2:5], "after formatted_as")
    # transforms keep the format, as datasets'
    for op in (lambda d: d.shuffle(seed=4), lambda d: d.select([9, 3, 7]),
               lambda d: d.sort("x"), lambda d: d.rename_column("t", "text"),
               lambda d: d.train_test_split(test_size=0.5, seed=2)["test"]):
        a, b = op(h), op(q)
        assert a.format == b.format
        same(a[0:3], b[0:3], "transformed")
    q.reset_format()
    h.reset_format()
    assert q.format == h.format
    assert q[3] == plain_row


def double_ids(batch):
    return {"id": [2 * i for i in batch["id"]]}


def test_pickle_keeps_the_format(dirs):
    import pickle
    h, q = pair(dirs, "two", shuffled=True)
    for fmt in ("numpy", "arrow"):
        qf = pickle.loads(pickle.dumps(q.with_format(fmt, columns=["id", "v"])))
        assert qf.format == h.with_format(fmt, columns=["id", "v"]).format
        same(h.with_format(fmt, columns=["id", "v"])[3:9], qf[3:9], f"unpickled {fmt}")
    qt = pickle.loads(pickle.dumps(q.with_transform(double_ids)))
    same(h.with_transform(double_ids)[0:4], qt[0:4], "unpickled transform")
    plain = pickle.loads(pickle.dumps(q))
    assert plain.format["type"] is None and plain[0:2] == h[0:2]


def test_numpy_index_arrays(dirs):
    h, q = pair(dirs, "two")
    idx = np.array([7, 0, 299, 7], dtype=np.int64)
    assert q[idx] == h[idx]
    assert q[np.int64(5)] == h[np.int64(5)]
    assert q.select(idx)[:] == h.select(idx)[:]
    assert q.select(np.arange(10, 20, dtype=np.int32))["id"] == list(range(10, 20))
    with pytest.raises(IndexError):
        q[np.array([0, N])]


def maps_of(path):
    real = os.path.realpath(path)
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == real:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi))
    return out


def test_numpy_int64_column_is_a_view_of_the_mapping(dirs):
    q = quiver.open(str(dirs / "one")).with_format("numpy")
    h = datasets.load_from_disk(str(dirs / "one")).with_format("numpy")
    a = q[0:200]["id"]
    b = q["id"][50:150]
    row = q[20:21]["f"]
    same(h[0:200]["id"], a, "numpy slice")
    same(h["id"][50:150], b, "numpy column slice")
    assert a.dtype == np.int64 and not a.flags.owndata
    assert np.shares_memory(a, b) and np.shares_memory(a[50:150], b)
    files = [f["filename"] for f in q.cache_files]
    ranges = [r for p in files for r in maps_of(p)]
    addr = a.__array_interface__["data"][0]
    assert any(lo <= addr < hi for lo, hi in ranges), "not inside quiver's mapping"
    assert row.dtype == np.float32 and row[0] == np.float32(10.0)
    # the view keeps the mapping alive after the dataset is gone
    del q
    assert a[199] == 199
