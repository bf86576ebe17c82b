"""train_test_split's remaining arguments, add_item with new keys and
from_generator's cache file, against `datasets` 5.2.0 itself
(python/quiver/_api.py): stratify_by_column gives datasets' rows for the
same seed or generator (fractions, counts, both sizes, several classes),
with datasets' errors; generator=; train/test_indices_cache_file_name
write the indices files of a file-backed dataset (one uint64 'indices'
column, datasets' rows); train/test_new_fingerprint; add_item with keys
that are no column (features and rows as datasets, also over a shuffled
file-backed dataset); from_generator writes a cache file in cache_dir
(memory-mapped; reused for the same generator; rows never all held as
Python objects; none left when the generator raises), rows and features
as datasets'.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import os
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()


def _pair(n=60, classes=3, seed=0):
    labels = np.random.default_rng(seed).integers(0, classes, n).tolist()
    cols = {"x": list(range(n)), "label": labels}
    names = [f"c{i}" for i in range(classes)]
    h = datasets.Dataset.from_dict(cols, features=datasets.Features(
        {"x": datasets.Value("int64"), "label": datasets.ClassLabel(names=names)}))
    q = quiver.Dataset.from_dict(cols, features=quiver.Features(
        {"x": quiver.Value("int64"), "label": quiver.ClassLabel(names=names)}))
    return q, h


def _rows(dd):
    return {k: dd[k]["x"][:] for k in ("train", "test")}


@pytest.mark.parametrize("kw", [
    {"test_size": 0.2, "seed": 3}, {"test_size": 7, "seed": 11}, {"train_size": 0.5, "seed": 1},
    {"test_size": 0.3, "train_size": 0.4, "seed": 42}, {"test_size": 0.25},
])
def test_stratified_rows_as_datasets(kw):
    for n, classes, seed in ((60, 3, 0), (101, 5, 1), (30, 2, 2)):
        q, h = _pair(n, classes, seed)
        if "seed" not in kw:  # the seed drawn from numpy's global state, as datasets
            np.random.seed(5)
            a = h.train_test_split(stratify_by_column="label", **kw)
            np.random.seed(5)
            b = q.train_test_split(stratify_by_column="label", **kw)
        else:
            a = h.train_test_split(stratify_by_column="label", **kw)
            b = q.train_test_split(stratify_by_column="label", **kw)
        assert _rows(b) == _rows(a)
        assert b["train"].features == a["train"].features
        assert isinstance(b, quiver.DatasetDict)


def test_generator_argument():
    q, h = _pair()
    for strat in (None, "label"):
        a = h.train_test_split(test_size=0.3, stratify_by_column=strat,
                               generator=np.random.default_rng(9))
        g = np.random.default_rng(9)
        b = q.train_test_split(test_size=0.3, stratify_by_column=strat, generator=g)
        assert _rows(b) == _rows(a)
        assert g.bit_generator.state != np.random.default_rng(9).bit_generator.state  # advanced


def test_errors_as_datasets():
    q, h = _pair(20, 2)
    one = {"x": [0, 1, 2, 3], "label": [0, 0, 0, 1]}
    f = {"x": "int64", "label": ["a", "b"]}
    qo = quiver.Dataset.from_dict(one, features=quiver.Features(
        {"x": quiver.Value(f["x"]), "label": quiver.ClassLabel(names=f["label"])}))
    ho = datasets.Dataset.from_dict(one, features=datasets.Features(
        {"x": datasets.Value(f["x"]), "label": datasets.ClassLabel(names=f["label"])}))
    cases = [((q, h), {"stratify_by_column": "x", "seed": 1}),
             ((q, h), {"stratify_by_column": "nope", "seed": 1}),
             ((q, h), {"stratify_by_column": "label", "shuffle": False}),
             ((q, h), {"stratify_by_column": "label", "test_size": 1, "seed": 1}),
             ((qo, ho), {"stratify_by_column": "label", "seed": 1}),
             ((q, h), {"stratify_by_column": "label", "test_size": 1.5}),
             ((q, h), {"stratify_by_column": "label", "test_size": 0.5, "train_size": 0.7})]
    for (a, b), kw in cases:
        with pytest.raises(ValueError) as he:
            b.train_test_split(**kw)
        with pytest.raises(ValueError) as qe:
            a.train_test_split(**kw)
        assert str(qe.value) == str(he.value), kw


def test_cache_file_names_and_fingerprints(tmp_path):
    q, h = _pair()
    h.save_to_disk(str(tmp_path / "d"))
    hq, hh = quiver.load_from_disk(str(tmp_path / "d")), datasets.load_from_disk(
        str(tmp_path / "d"))
    names = {"train_indices_cache_file_name": str(tmp_path / "tr.arrow"),
             "test_indices_cache_file_name": str(tmp_path / "te.arrow")}
    b = hq.train_test_split(test_size=0.2, seed=4, stratify_by_column="label", **names)
    for k in ("train", "test"):
        path = names[f"{k}_indices_cache_file_name"]
        with pa.ipc.open_stream(path) as r:
            t = r.read_all()
        assert t.column_names == ["indices"] and t.schema.field(0).type == pa.uint64()
        assert t.column(0).to_pylist() == b[k]["x"][:]
        assert path in [f["filename"] for f in b[k].cache_files]
    names_h = {k: v.replace(".arrow", "-h.arrow") for k, v in names.items()}
    a = hh.train_test_split(test_size=0.2, seed=4, stratify_by_column="label", **names_h)
    assert _rows(b) == _rows(a)
    fps = {"train_new_fingerprint": "a" * 16, "test_new_fingerprint": "b" * 16}
    b = hq.train_test_split(test_size=0.2, seed=4, **fps)
    a = hh.train_test_split(test_size=0.2, seed=4, **fps)
    assert (b["train"].fingerprint, b["test"].fingerprint) == ("a" * 16, "b" * 16) == \
        (a["train"]._fingerprint, a["test"]._fingerprint)
    assert _rows(b) == _rows(a)


def test_add_item_new_keys(tmp_path):
    q, h = _pair(5, 2)
    items = [{"x": 9, "extra": "e"}, {"extra": "only", "more": [1.5]},
             {"label": 1, "z": {"k": 1}}]
    for item in items:
        a, b = h.add_item(item), q.add_item(item)
        assert b.features == a.features, item
        assert b[:] == a[:], item
    h.save_to_disk(str(tmp_path / "d"))
    qs = quiver.load_from_disk(str(tmp_path / "d")).shuffle(seed=2)
    hs = datasets.load_from_disk(str(tmp_path / "d")).shuffle(seed=2)
    a, b = hs.add_item(items[0]), qs.add_item(items[0])
    assert b.features == a.features and b[:] == a[:]
    f = q.with_format("numpy").add_item({"new": 1.0})
    assert f.format["type"] == "numpy" and isinstance(f[0]["new"], np.floating)


def _gen(n, width=1):
    for i in range(n):
        yield {"i": i, "s": "x" * (i % 7) * width, "l": [float(i)] * (i % 3)}


def test_from_generator_writes_a_cache_file(tmp_path):
    cache = str(tmp_path / "cache")
    q = quiver.Dataset.from_generator(_gen, gen_kwargs={"n": 2500}, cache_dir=cache)
    h = datasets.Dataset.from_generator(_gen, gen_kwargs={"n": 2500},
                                        cache_dir=str(tmp_path / "hfcache"))
    assert q.features == h.features and q[:] == h[:]
    files = [f["filename"] for f in q.cache_files]
    assert len(files) == 1 and files[0].startswith(cache) and os.path.isfile(files[0])
    # the file: 1000-row batches (datasets' writer_batch_size), datasets opens it
    with pa.ipc.open_stream(files[0]) as r:
        assert [b.num_rows for b in r] == [1000, 1000, 500]
    assert datasets.Dataset.from_file(files[0])[:] == h[:]
    again = quiver.Dataset.from_generator(_gen, gen_kwargs={"n": 2500}, cache_dir=cache)
    assert [f["filename"] for f in again.cache_files] == files  # reused
    other = quiver.Dataset.from_generator(_gen, gen_kwargs={"n": 10}, cache_dir=cache)
    assert [f["filename"] for f in other.cache_files] != files and len(other) == 10
    mem = quiver.Dataset.from_generator(_gen, gen_kwargs={"n": 10}, keep_in_memory=True)
    assert mem.cache_files == [] and mem[:] == other[:]
    feats = quiver.Features({"i": quiver.Value("int32"), "s": quiver.Value("string"),
                             "l": quiver.List(quiver.Value("float32"))})
    typed = quiver.Dataset.from_generator(_gen, gen_kwargs={"n": 1500}, features=feats,
                                          cache_dir=cache)
    hf_feats = datasets.Features.from_dict(feats.to_dict())
    ht = datasets.Dataset.from_generator(_gen, gen_kwargs={"n": 1500}, features=hf_feats,
                                         cache_dir=str(tmp_path / "hfcache"))
    assert typed.features == ht.features and typed[:] == ht[:]


def test_from_generator_streams_and_cleans_up(tmp_path):
    cache = str(tmp_path / "cache")
    # 40 MB of strings: collecting the rows would hold them all as Python objects
    tracemalloc.start()
    q = quiver.Dataset.from_generator(_gen, gen_kwargs={"n": 40000, "width": 150},
                                      cache_dir=cache)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(q) == 40000 and q[39999]["s"] == "x" * (39999 % 7) * 150
    assert peak < 15_000_000, peak

    class Boom(Exception):
        pass

    def bad(n):
        for i in range(n):
            if i == 1500:
                raise Boom("stop")
            yield {"i": i}

    with pytest.raises(Boom):
        quiver.Dataset.from_generator(bad, gen_kwargs={"n": 3000}, cache_dir=cache)
    left = sorted(os.listdir(os.path.join(cache, "quiver-generator")))
    assert len(left) == 1 and left[0].endswith(".arrow")  # only the first dataset's file
