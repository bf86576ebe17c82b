"""The C fast paths of the extension's row and numpy access against
`datasets` 5.2.0 and pyarrow on the same save_to_disk directory
(python/src/values.c fill_values / qvpy_table_columns_dict, dataset.c
row_dict_at / slice_columns, batch.c Batch._numpy_columns):

- ds[i], ds[a:b] (step 1: column lists filled from the zero-copy slice,
  across the boundaries of four shards), ds[a:b:c] and ds[[...]]
  give datasets' values and Python types for every type the one-loop
  conversion handles (int8..uint64 at their extremes, float32/float64,
  string with non-ASCII text, large_string, binary, large_binary), with
  and without nulls, and for lists/fixed-size lists/structs of them,
  plain and shuffled;
- with_format("numpy").iter(batch_size) gives datasets' dtypes, shapes
  and values for null-free numbers and fixed-size lists of them (views
  of quiver's mapping: read-only, not owning their data), Array2D, strings
  (ASCII, non-ASCII, empty, longer in later batches: '<U' arrays filled
  in C) and for the columns that fall back to Python (nulls, bool, int32
  and float64 cast by datasets' rules), plain, through an indices mapping
  (shuffle, select with repeats, filter: rows copied from the mapped
  batches straight into the arrays, Dataset._numpy_iter) and with a
  format_kwargs dtype.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import numpy as np
import pyarrow as pa
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

N = 260


def value_table(n):
    i8 = [(-128, 127, 0, -1)[i % 4] for i in range(n)]
    u64 = [(0, 2**64 - 1, 2**63, 7)[i % 4] for i in range(n)]
    i64 = [(-(2**63), 2**63 - 1, -5, i)[i % 4] for i in range(n)]
    txt = ["é" * (i % 5) + "日本" * (i % 3) + str(i) for i in range(n)]
    cols = {
        "i8": pa.array(i8, pa.int8()),
        "u16": pa.array([i * 251 % 65536 for i in range(n)], pa.uint16()),
        "i32": pa.array([-i * 1000003 for i in range(n)], pa.int32()),
        "i64": pa.array(i64, pa.int64()),
        "u64": pa.array(u64, pa.uint64()),
        "f32": pa.array([i / 3 for i in range(n)], pa.float32()),
        "f64": pa.array([float("inf") if i == 7 else i / 7 for i in range(n)], pa.float64()),
        "s": pa.array(txt, pa.string()),
        "ls": pa.array(["" if i % 6 == 0 else "x" * (i % 40) for i in range(n)], pa.large_string()),
        "bin": pa.array([bytes([i % 256]) * (i % 4) for i in range(n)], pa.binary()),
        "lbin": pa.array([b"\x00\xff" * (i % 3) for i in range(n)], pa.large_binary()),
        "ni": pa.array([None if i % 3 == 1 else i for i in range(n)], pa.int16()),
        "nf": pa.array([None if i % 4 == 2 else i * 0.5 for i in range(n)], pa.float64()),
        "ns": pa.array([None if i % 5 == 0 else txt[i] for i in range(n)], pa.string()),
        "lst": pa.array([None if i % 9 == 4 else list(range(i % 5)) for i in range(n)],
                        pa.list_(pa.int64())),
        "fsl": pa.array([[i * 1.5, -i, None if i % 8 == 0 else 0.25] for i in range(n)],
                        pa.list_(pa.float32(), 3)),
        "st": pa.array([{"a": i % 256, "b": None if i % 2 else txt[i]} for i in range(n)],
                       pa.struct([("a", pa.uint8()), ("b", pa.string())])),
    }
    return pa.table(cols)


@pytest.fixture(scope="module")
def values_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fast") / "values")
    ds = datasets.Dataset(datasets.table.InMemoryTable(value_table(N)))
    ds.save_to_disk(path, num_shards=4)  # four files: slices straddle them
    h = datasets.load_from_disk(path)
    return path, h


def _same(a, b):
    assert a == b
    assert type(a) is type(b)
    if isinstance(a, dict):
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, list):
        for x, y in zip(a, b):
            _same(x, y)


def test_rows_and_slices_match_datasets(values_dir):
    path, h = values_dir
    q = quiver.open(path)
    assert q.num_rows == h.num_rows == N
    for hh, qq in ((h, q), (h.shuffle(seed=4), q.shuffle(seed=4))):
        for i in (0, 1, 2, 3, 7, 129, 130, 131, N - 1, -1, -N):
            _same(hh[i], qq[i])
        for a, b in ((0, N), (0, 0), (5, 6), (120, 140), (125, 135), (N - 3, N + 10), (-40, -2),
                     (200, 100)):
            _same(hh[a:b], qq[a:b])
        _same(hh[3:200:7], qq[3:200:7])
        _same(hh[[5, 1, 129, 130, 5]], qq[[5, 1, 129, 130, 5]])
    # pyarrow's as_py is the oracle datasets follows
    t = value_table(N)
    assert q[0:N] == t.to_pydict()
    assert [q[i] for i in range(N)] == t.to_pylist()


def test_slice_lists_are_not_tracked_when_atomic(values_dir):
    import gc
    path, _ = values_dir
    q = quiver.open(path)
    b = q[0:50]
    assert not gc.is_tracked(b["s"]) and not gc.is_tracked(b["i64"])
    assert not gc.is_tracked(b["st"]) and not gc.is_tracked(b["st"][0])  # atomic dicts inside
    b["st"][0]["c"] = []  # CPython tracks a dict again once it holds a container
    assert gc.is_tracked(b["st"][0])
    r = q[3]
    assert not gc.is_tracked(r["fsl"])


def numpy_table(n, long_from=None):
    rng = np.random.default_rng(3)
    words = ["", "a", "héllo", "日本語テキスト", "plain ascii text", "x" * 30, "\U0001F600!"]
    t = [words[i % len(words)] for i in range(n)]
    if long_from is not None:
        t = [s + ("z" * 90 if i >= long_from else "") for i, s in enumerate(t)]
    return {
        "id": list(range(n)),
        "u8": [i % 256 for i in range(n)],
        "f32": [float(np.float32(v)) for v in rng.normal(size=n)],
        "f64": [float(v) for v in rng.normal(size=n)],
        "i32": [i * 3 for i in range(n)],
        "t": t,
        "ascii": ["row %d" % i * (1 + i % 3) for i in range(n)],
        "nt": [None if i % 6 == 1 else "v%d" % i for i in range(n)],
        "nx": [None if i % 5 == 3 else float(i) for i in range(n)],
        "b": [bool(i % 2) for i in range(n)],
        "emb": rng.random((n, 4), dtype=np.float32),
        "m": [np.arange(6, dtype=np.float32).reshape(2, 3) * i for i in range(n)],
        "lab": [i % 3 for i in range(n)],
    }


NUMPY_FEATURES = datasets.Features({
    "id": datasets.Value("int64"), "u8": datasets.Value("uint8"),
    "f32": datasets.Value("float32"), "f64": datasets.Value("float64"),
    "i32": datasets.Value("int32"), "t": datasets.Value("string"),
    "ascii": datasets.Value("large_string"), "nt": datasets.Value("string"),
    "nx": datasets.Value("float64"), "b": datasets.Value("bool"),
    "emb": datasets.List(datasets.Value("float32"), length=4),
    "m": datasets.Array2D(shape=(2, 3), dtype="float32"),
    "lab": datasets.ClassLabel(names=["x", "y", "z"]),
})


@pytest.fixture(scope="module")
def numpy_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fastnp") / "np")
    datasets.Dataset.from_dict(numpy_table(N, long_from=200),
                               features=NUMPY_FEATURES).save_to_disk(path, num_shards=2)
    return path, datasets.load_from_disk(path)


def _same_batch(x, y):
    assert list(x) == list(y)
    for k in x:
        a, b = x[k], y[k]
        assert type(a) is type(b), k
        assert a.dtype == b.dtype and a.shape == b.shape, (k, a.dtype, b.dtype, a.shape, b.shape)
        if a.dtype == object:
            assert [None if v is None else v for v in a] == list(b), k
        else:
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), k


@pytest.mark.parametrize("batch_size", [1, 64, 100, N])
def test_numpy_batches_match_datasets(numpy_dir, batch_size):
    path, h = numpy_dir
    q = quiver.open(path)
    for hh, qq in ((h, q), (h.shuffle(seed=2), q.shuffle(seed=2))):
        hb = list(hh.with_format("numpy").iter(batch_size=batch_size))
        qb = list(qq.with_format("numpy").iter(batch_size=batch_size))
        assert len(hb) == len(qb)
        for x, y in zip(hb, qb):
            _same_batch(x, y)
    hb = list(h.with_format("numpy").iter(batch_size=batch_size, drop_last_batch=True))
    qb = list(q.with_format("numpy").iter(batch_size=batch_size, drop_last_batch=True))
    assert len(hb) == len(qb)
    for x, y in zip(hb, qb):
        _same_batch(x, y)


def test_numpy_batches_through_a_mapping(numpy_dir):
    """With an indices mapping the batches are views of the gathered
    windows; shuffle, select with repeats and filter against datasets."""
    path, h = numpy_dir
    q = quiver.open(path)
    qs = q.shuffle(seed=9)
    rows = [N - 1, 0, 131, 130, 5, 5, 64]
    for hh, qq in ((h.shuffle(seed=9), qs), (h.select(rows), q.select(rows)),
                   (h.filter(lambda r: r["id"] % 3 == 0), q.filter(lambda r: r["id"] % 3 == 0))):
        for bs, drop in ((1, False), (3, True), (50, False), (50, True), (N, False)):
            hb = list(hh.with_format("numpy").iter(batch_size=bs, drop_last_batch=drop))
            qb = list(qq.with_format("numpy").iter(batch_size=bs, drop_last_batch=drop))
            assert len(hb) == len(qb), (bs, drop)
            for x, y in zip(hb, qb):
                _same_batch(x, y)


def test_numpy_format_kwargs(numpy_dir):
    path, h = numpy_dir
    q = quiver.open(path)
    hb = next(iter(h.with_format("numpy", dtype=np.float16).iter(batch_size=50)))
    qb = next(iter(q.with_format("numpy", dtype=np.float16).iter(batch_size=50)))
    _same_batch(hb, qb)


def test_numpy_views_of_the_mapping(numpy_dir):
    path, _ = numpy_dir
    q = quiver.open(path)
    fast = next(iter(q.iter_batches(64)))._numpy_columns()
    assert [k for k, v in fast.items() if v is None] == ["nt", "nx", "b", "m"]
    b = next(iter(q.with_format("numpy").iter(batch_size=64)))
    for k in ("id", "f32", "emb", "lab"):  # u8, i32, f64: cast by datasets
        a = b[k]
        assert not a.flags.owndata and not a.flags.writeable, k
    assert b["emb"].shape == (64, 4) and b["m"].shape == (64, 2, 3)
    assert b["t"].dtype.kind == "U" and b["t"].flags.owndata
    # the view keeps its bytes alive after the dataset and batch are gone
    ids = b["id"]
    del q, b
    import gc
    gc.collect()
    assert ids.tolist() == list(range(64))


def test_numpy_strings_with_a_longer_value_later(numpy_dir):
    path, h = numpy_dir
    q = quiver.open(path)
    qb = list(q.with_format("numpy").iter(batch_size=100))
    hb = list(h.with_format("numpy").iter(batch_size=100))
    assert [x["t"].dtype for x in qb] == [x["t"].dtype for x in hb]
    assert qb[2]["t"].dtype.itemsize > qb[0]["t"].dtype.itemsize


def test_numpy_rows_of_a_mapping_straight_from_c(numpy_dir):
    """Dataset._numpy_iter: None without a mapping; with one, the columns
    the C side converts (copies owning their data) equal what
    Batch._numpy_columns gives for the gathered batch, across both
    shards, with the same columns left to Python."""
    path, _ = numpy_dir
    q = quiver.open(path)
    assert q._numpy_iter(10) is None
    rows = [N - 1, 0, 131, 129, 130, 5, 5, 64, N // 2]
    steps = list(q.select(rows)._numpy_iter(4))
    assert [(p, n) for p, n, _ in steps] == [(0, 4), (4, 4), (8, 1)]
    gathered = [b._numpy_columns() for b in q.select(rows).iter_batches(4)]
    # row 259 has a null "nt"; the rows of "nx" picked are valid
    assert [k for k, v in steps[0][2].items() if v is None] == ["nt", "b", "m"]
    for (p, n, cols), want in zip(steps, gathered):
        assert [k for k, v in cols.items() if v is None] == [k for k, v in want.items() if v is None]
        for k, a in cols.items():
            if a is not None:
                assert a.flags.owndata and a.dtype == want[k].dtype, k
                assert a.shape == want[k].shape and np.array_equal(a, want[k]), k
    assert list(q.select(rows)._numpy_iter(4, True))[-1][:2] == (4, 4)
    assert list(q.select(rows)._numpy_iter(20, True)) == []
    empty = q.shuffle(seed=1).select([])._numpy_iter(4)
    assert empty is None or list(empty) == []
