"""Constructors, exports and column methods of quiver.Dataset against
`datasets` 5.2.0 itself (python/quiver/_api.py, python/src/construct.c):
from_dict / from_list / from_pandas / from_polars / from_generator /
from_arrow with and without features= (datasets' type inference: pyarrow's,
numpy arrays as lists, the int optimisation of input_ids & co., ClassLabel
names encoded), to_dict / to_list / to_pandas / to_polars / to_arrow
(batched too), to_iterable_dataset shards, add_column, cast, cast_column,
class_encode_column, flatten, unique — same rows, Python types, features
and exception classes as datasets on the same data, in memory and on a
save_to_disk directory (plain and shuffled).

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import pickle

import numpy as np
import pandas as pd
import pandas.testing as pdt
import polars as pl
import pyarrow as pa
import pytest

import hfdata
import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()
Q = quiver.Dataset
H = datasets.Dataset

MAPPINGS = {
    "scalars": {"a": [1, 2, 3], "s": ["x", "y", None], "f": [1.5, 2.0, None],
                "b": [True, None, False], "by": [b"\x00", b"z", None]},
    "nested": {"l": [[1, 2], [3], []], "ll": [[[1.0]], [], None],
               "st": [{"p": 1, "q": "a"}, {"p": 2, "q": None}, None],
               "ls": [[{"k": "v"}], [], [{"k": None}]]},
    "int_optimised": {"input_ids": [[1, 2], [3], [40000]], "attention_mask": [[1, 1], [1], [0]],
                      "token_type_ids": [0, 1, 0], "special_tokens_mask": [[0], [1], []]},
    "int_overflow": {"input_ids": [[1, 2**40]], "attention_mask": [[300]]},
    "numpy": {"v": np.arange(6, dtype=np.float32).reshape(3, 2), "i": np.arange(3),
              "m": np.zeros((3, 2, 2), dtype=np.int16),
              "lv": [np.array([1, 2]), np.array([3]), np.array([], dtype=np.int64)],
              "sc": [np.float64(1.5), np.float64(2), np.float64(3)]},
    "empty_columns": {"a": [], "s": []},
    "nulls_only": {"n": [None, None]},
}


def same(q, h):
    assert q.column_names == h.column_names
    assert q.features == h.features and h.features == q.features
    assert q.features.to_dict() == h.features.to_dict()
    assert len(q) == len(h)
    assert q[:] == h[:]
    assert q.to_list() == h.to_list()
    for i in range(len(h)):
        assert q[i] == h[i]
        for c in h.column_names:
            assert type(q[i][c]) is type(h[i][c]), (c, q[i][c], h[i][c])


@pytest.mark.parametrize("name", sorted(MAPPINGS))
def test_from_dict_and_from_list_as_datasets(name):
    m = MAPPINGS[name]
    q, h = Q.from_dict(m), H.from_dict(m)
    same(q, h)
    rows = h.to_list()
    if rows:
        same(Q.from_list(rows), H.from_list(rows))
    assert q.fingerprint and isinstance(q.fingerprint, str)


def test_from_dict_with_features_every_feature_type():
    rows = hfdata.main_rows(7)
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    q = Q.from_dict(cols, features=hfdata.MAIN_FEATURES)
    h = H.from_dict(cols, features=hfdata.MAIN_FEATURES)
    same(q, h)
    same(Q.from_list(rows, features=hfdata.MAIN_FEATURES),
         H.from_list(rows, features=hfdata.MAIN_FEATURES))
    # quiver's own Features objects are accepted as well
    same(Q.from_dict(cols, features=quiver.Features.from_dict(hfdata.MAIN_FEATURES.to_dict())), h)


def test_from_dict_features_cast_and_classlabel_names():
    F = datasets.Features({"a": datasets.Value("int32"), "x": datasets.Value("float32"),
                           "lab": datasets.ClassLabel(names=["neg", "pos"]),
                           "s": datasets.Value("string")})
    m = {"a": [1, 2, None], "x": [1, 2, 3], "lab": ["pos", "neg", 1], "s": ["u", None, "w"]}
    same(Q.from_dict(m, features=F), H.from_dict(m, features=F))
    info = datasets.DatasetInfo(features=F)
    same(Q.from_dict(m, info=info), H.from_dict(m, info=info))
    with pytest.raises(ValueError):
        H.from_dict(m, features=F, info=datasets.DatasetInfo(
            features=datasets.Features({"a": datasets.Value("int8")})))
    with pytest.raises(ValueError):
        Q.from_dict(m, features=F, info=datasets.DatasetInfo(
            features=datasets.Features({"a": datasets.Value("int8")})))


def test_from_dict_errors_as_datasets():
    for bad in ({"a": [1, 2], "b": [1]}, {"a": [1, "x"]}):
        with pytest.raises((ValueError, TypeError)) as he:
            H.from_dict(bad)
        builtin = next(c for c in (ValueError, TypeError) if isinstance(he.value, c))
        with pytest.raises(builtin):
            Q.from_dict(bad)
    with pytest.raises(ValueError):
        H.from_dict({"lab": ["nope"]}, features=datasets.Features(
            {"lab": datasets.ClassLabel(names=["a"])}))
    with pytest.raises(ValueError):
        Q.from_dict({"lab": ["nope"]}, features=datasets.Features(
            {"lab": datasets.ClassLabel(names=["a"])}))


def test_from_pandas_from_polars_from_arrow():
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", None, "z"], "f": [0.5, np.nan, 1.0]})
    same(Q.from_pandas(df), H.from_pandas(df))
    same(Q.from_pandas(df, preserve_index=True), H.from_pandas(df, preserve_index=True))
    F = datasets.Features({"a": datasets.Value("int16"), "b": datasets.Value("string"),
                           "f": datasets.Value("float32")})
    same(Q.from_pandas(df, features=F), H.from_pandas(df, features=F))
    pdf = pl.DataFrame({"a": [1, 2], "b": ["x", "y"], "l": [[1], [2, 3]]})
    same(Q.from_polars(pdf), H.from_polars(pdf))
    same(Q.from_polars(pdf.lazy()), H.from_polars(pdf.lazy()))
    t = pa.table({"z": pa.array([1, 2], pa.int8()), "s": ["a", "b"]})
    q = Q.from_arrow(t)
    same(q, H(t))
    # zero copy: the imported int8 buffer is pyarrow's own
    assert pa.table(q).column("z").chunk(0).buffers()[1].address == \
        t.column("z").chunk(0).buffers()[1].address
    same(Q.from_arrow(pdf), H(pa.table(pdf)))
    same(Q.from_arrow(pa.RecordBatchReader.from_batches(t.schema, t.to_batches())), H(t))
    with pytest.raises(TypeError):
        Q.from_arrow([1, 2])


def test_from_generator():
    def gen(n, start=0):
        for i in range(start, start + n):
            yield {"i": i, "t": str(i), "l": [i] * (i % 3)}
    kw = {"gen_kwargs": {"n": 5, "start": 2}}
    same(Q.from_generator(gen, **kw), H.from_generator(gen, **kw))
    F = datasets.Features({"i": datasets.Value("int32"), "t": datasets.Value("string"),
                           "l": datasets.List(datasets.Value("int8"))})
    same(Q.from_generator(gen, features=F, **kw), H.from_generator(gen, features=F, **kw))
    assert Q.from_generator(gen, fingerprint="abc", **kw).fingerprint == "abc"


def test_in_memory_dataset_transforms_and_pickle():
    m = {"a": list(range(10)), "s": [str(i) for i in range(10)]}
    q, h = Q.from_dict(m), H.from_dict(m)
    same(q.shuffle(seed=3), h.shuffle(seed=3))
    same(q.filter(lambda r: r["a"] % 2 == 0), h.filter(lambda r: r["a"] % 2 == 0))
    same(pickle.loads(pickle.dumps(q.select([3, 1]))), h.select([3, 1]))


@pytest.fixture(scope="module")
def disk(tmp_path_factory):
    d = tmp_path_factory.mktemp("api") / "ds"
    n = 40
    H.from_dict({"id": list(range(n)), "t": [f"w{i % 7}" if i % 5 else None for i in range(n)],
                 "st": [{"x": i, "y": {"z": str(i)}} for i in range(n)],
                 "c": [["a", "b", "c"][i % 3] for i in range(n)]},
                features=datasets.Features({
                    "id": datasets.Value("int32"), "t": datasets.Value("string"),
                    "st": {"x": datasets.Value("int64"), "y": {"z": datasets.Value("string")}},
                    "c": datasets.Value("string")})).save_to_disk(str(d), num_shards=2)
    return str(d)


@pytest.fixture(params=["plain", "shuffled"])
def pair(request, disk):
    q, h = quiver.open(disk), datasets.load_from_disk(disk)
    if request.param == "shuffled":
        q, h = q.shuffle(seed=5), h.shuffle(seed=5)
    return q, h


def test_exports(pair):
    q, h = pair
    assert q.to_dict() == h.to_dict()
    assert q.to_list() == h.to_list()
    assert [b for b in q.to_dict(batched=True, batch_size=16)] == \
        list(h.to_dict(batched=True, batch_size=16))
    pdt.assert_frame_equal(q.to_pandas(), h.to_pandas())
    for a, b in zip(q.to_pandas(batched=True, batch_size=16),
                    h.to_pandas(batched=True, batch_size=16)):
        pdt.assert_frame_equal(a, b)
    assert q.to_polars().equals(h.to_polars())
    qb = list(q.to_polars(batched=True, batch_size=15))
    hb = list(h.to_polars(batched=True, batch_size=15))
    assert len(qb) == len(hb) and all(a.equals(b) for a, b in zip(qb, hb))
    t = q.to_arrow()
    assert isinstance(t, pa.Table) and t.to_pylist() == h.data.table.to_pylist() \
        if h._indices is None else t.to_pylist() == h.to_list()
    # the format does not change the exports, as datasets
    assert q.with_format("numpy").to_dict() == h.with_format("numpy").to_dict()
    assert q.with_format("numpy").to_list() == h.to_list()


def maps_of(path):
    """Address ranges of this process's mappings of `path`."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == path:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi))
    return out


def test_to_arrow_zero_copy_without_mapping(disk):
    import os
    q = quiver.open(disk)
    t = q.to_arrow()
    files = [os.path.realpath(f["filename"]) for f in q.cache_files]
    ranges = [r for p in files for r in maps_of(p)]
    assert ranges
    for chunk in t.column("id").chunks:
        addr = chunk.buffers()[1].address
        assert any(lo <= addr < hi for lo, hi in ranges)


@pytest.mark.parametrize("num_shards", [1, 3, 8])
def test_to_iterable_dataset(pair, num_shards):
    q, h = pair
    qi, hi = q.to_iterable_dataset(num_shards=num_shards), \
        h.to_iterable_dataset(num_shards=num_shards)
    assert qi.n_shards == hi.n_shards == num_shards
    assert list(qi) == list(hi)
    assert list(qi.iter(batch_size=7)) == list(hi.iter(batch_size=7))
    assert qi.features == hi.features
    if num_shards > 1:
        assert list(qi.shard(num_shards=2, index=1)) == list(hi.shard(num_shards=2, index=1))
    with pytest.raises(ValueError):
        h.to_iterable_dataset(num_shards=len(h) + 1)
    with pytest.raises(ValueError):
        q.to_iterable_dataset(num_shards=len(q) + 1)
    f = list(q.with_format("numpy").to_iterable_dataset(2))
    g = list(h.with_format("numpy").to_iterable_dataset(2))
    assert len(f) == len(g)
    for a, b in zip(f, g):
        assert a.keys() == b.keys()
        for k in a:
            assert type(a[k]) is type(b[k]) and np.all(np.asarray(a[k]) == np.asarray(b[k])) \
                if not isinstance(a[k], dict) else a[k] == b[k]


def test_unique(pair):
    q, h = pair
    for c in ("id", "t", "c"):
        assert q.unique(c) == h.unique(c)
    with pytest.raises(ValueError):
        h.unique("nope")
    with pytest.raises(ValueError):
        q.unique("nope")


def test_add_column(pair):
    q, h = pair
    vals = [i * 0.5 for i in range(len(h))]
    same(q.add_column("new", vals), h.add_column("new", vals))
    arr = np.arange(len(h), dtype=np.int16)
    same(q.add_column("new", arr), h.add_column("new", arr))
    lab = [i % 2 for i in range(len(h))]
    f = datasets.ClassLabel(names=["n", "p"])
    same(q.add_column("lab", lab, feature=f), h.add_column("lab", lab, feature=f))
    with pytest.raises(ValueError):  # label names are not encoded (pyarrow's ArrowInvalid)
        h.add_column("lab", ["p"] * len(h), feature=f)
    with pytest.raises(ValueError):
        q.add_column("lab", ["p"] * len(h), feature=f)
    with pytest.raises(ValueError):
        q.add_column("x", [1])


def test_cast_and_cast_column(pair):
    q, h = pair
    same(q.cast_column("id", datasets.Value("int64")), h.cast_column("id", datasets.Value("int64")))
    same(q.cast_column("id", quiver.Value("float32")), h.cast_column("id", datasets.Value("float32")))
    F = h.features.copy()
    F["id"] = datasets.Value("string")
    F["c"] = datasets.ClassLabel(names=["a", "b", "c"])
    same(q.cast(F), h.cast(F))
    for bad in (lambda d: d.cast_column("nope", datasets.Value("int8")),
                lambda d: d.cast(datasets.Features({"id": datasets.Value("int8")}))):
        with pytest.raises(ValueError):
            bad(h)
        with pytest.raises(ValueError):
            bad(q)


@pytest.mark.parametrize("include_nulls", [False, True])
def test_class_encode_column(pair, include_nulls):
    q, h = pair
    for c in ("c", "t", "id"):
        same(q.class_encode_column(c, include_nulls=include_nulls),
             h.class_encode_column(c, include_nulls=include_nulls))
    with pytest.raises(ValueError):
        h.class_encode_column("st")
    with pytest.raises(ValueError):
        q.class_encode_column("st")


def test_flatten(pair):
    q, h = pair
    same(q.flatten(), h.flatten())
    same(q.flatten(max_depth=2), h.flatten(max_depth=2))
    assert q.with_format("numpy").flatten().format["type"] == "numpy"


def test_rows_are_not_left_to_the_cyclic_gc(disk):
    """Row dicts and value lists hold only new values: they are untracked
    (values.c), so gc never scans them; a container added later tracks the
    dict again (CPython), and nothing else about the values changes."""
    import gc
    q, h = quiver.open(disk), datasets.load_from_disk(disk)
    m = Q.from_dict({"l": [[1, 2], [3]], "ll": [[[1.5]], []], "s": ["a", "b"]})
    for ds, ref in ((q, h), (m, None)):
        row = ds[1]
        if ref is not None:
            assert row == ref[1]
        assert not gc.is_tracked(row)
        for v in row.values():
            assert not gc.is_tracked(v)
        batch = ds[0:2]
        assert all(not gc.is_tracked(v) for v in batch.values())
        row["extra"] = [object()]
        assert gc.is_tracked(row)
    # a row holding something the collector must see stays tracked: none here, but
    # structs of lists are untracked all the way down
    assert not gc.is_tracked(q[0]["st"]) and q[0]["st"] == h[0]["st"]
