"""datasets 5.2.0's arguments of the index and column transforms, checked
against datasets itself on the same data (in memory and a save_to_disk
directory, plain and shuffled): select / shuffle (generator=) / sort /
shard / train_test_split / flatten_indices with keep_in_memory,
load_from_cache_file, *_cache_file_name, writer_batch_size,
new_fingerprint; numpy integer arrays and numpy ints wherever rows are
given; rename_column(s) / remove_columns / select_columns with keywords and
new_fingerprint; skip, take, repeat, add_item, shape.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import functools
import os
import pickle

import numpy as np
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

N = 30
D = {"a": list(range(N)), "b": [str(i % 7) for i in range(N)], "c": [i * 0.5 for i in range(N)]}

CASES = {
    "select np int64": lambda d: d.select(np.array([3, 1, 2, 3])),
    "select np int32": lambda d: d.select(np.array([5, 0], dtype=np.int32)),
    "select np scalars": lambda d: d.select([np.int64(3), np.int16(1)]),
    "select range": lambda d: d.select(range(2, 9, 3)),
    "select kwargs": lambda d: d.select([1, 4], keep_in_memory=True, writer_batch_size=10),
    "getitem np array": lambda d: d[np.array([3, 1])],
    "getitem np int": lambda d: d[np.int64(3)],
    "getitems np": lambda d: d.__getitems__(np.array([4, 2])),
    "shuffle generator": lambda d: d.shuffle(generator=np.random.default_rng(4)),
    "shuffle kwargs": lambda d: d.shuffle(seed=1, keep_in_memory=True, load_from_cache_file=False,
                                          writer_batch_size=10),
    "sort kwargs": lambda d: d.sort("b", reverse=True, load_from_cache_file=False,
                                    writer_batch_size=7),
    "sort multi tuple": lambda d: d.sort(["b", "a"], reverse=(True, False)),
    "shard kwargs": lambda d: d.shard(num_shards=4, index=1, contiguous=False,
                                      keep_in_memory=True),
    "train_test_split kwargs": lambda d: d.train_test_split(test_size=0.3, seed=1,
                                                            load_from_cache_file=False,
                                                            writer_batch_size=9),
    "flatten_indices kwargs": lambda d: d.shuffle(seed=1).flatten_indices(keep_in_memory=True),
    "rename_column kw": lambda d: d.rename_column(original_column_name="a", new_column_name="z"),
    "rename_columns kw": lambda d: d.rename_columns(column_mapping={"a": "z", "b": "y"}),
    "remove_columns kw": lambda d: d.remove_columns(column_names=["a"]),
    "select_columns kw": lambda d: d.select_columns(column_names="c"),
    "skip": lambda d: d.skip(7),
    "skip past the end": lambda d: d.skip(100),
    "take": lambda d: d.take(4),
    "take past the end": lambda d: d.take(100),
    "repeat": lambda d: d.repeat(3),
    "repeat 0": lambda d: d.repeat(0),
    "add_item": lambda d: d.add_item({"a": 99, "b": "z", "c": 1.25}),
    "add_item missing key": lambda d: d.add_item({"c": 2.5, "a": 7}),
    "flatten_indices features": lambda d: d.flatten_indices(features=datasets.Features({
        "a": datasets.Value("int32"), "b": datasets.Value("string"),
        "c": datasets.Value("float32")})),
}


def rows(x):
    if isinstance(x, dict) and all(hasattr(v, "column_names") for v in x.values()):
        return {k: rows(v) for k, v in x.items()}
    if hasattr(x, "column_names"):
        return (x.column_names, dict(x.features), x[:])
    return x


@pytest.fixture(scope="module", params=["memory", "disk"])
def base(request, tmp_path_factory):
    h = datasets.Dataset.from_dict(D)
    if request.param == "memory":
        return quiver.Dataset.from_dict(D), h
    path = str(tmp_path_factory.mktemp("args") / "ds")
    h.save_to_disk(path, num_shards=2)
    return quiver.open(path), datasets.load_from_disk(path)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("shuffled", [False, True])
def test_as_datasets(base, case, shuffled):
    q, h = base
    if shuffled:
        q, h = q.shuffle(seed=3), h.shuffle(seed=3)
    assert rows(CASES[case](q)) == rows(CASES[case](h))


def test_new_fingerprint_everywhere(base):
    q, h = base
    # one fingerprint per result: datasets reuses cache files by fingerprint
    for k, f in enumerate((lambda d, fp: d.select([1], new_fingerprint=fp),
                           lambda d, fp: d.shuffle(seed=2, new_fingerprint=fp),
                           lambda d, fp: d.sort("b", new_fingerprint=fp),
                           lambda d, fp: d.rename_column("a", "z", new_fingerprint=fp),
                           lambda d, fp: d.rename_columns({"a": "z"}, new_fingerprint=fp),
                           lambda d, fp: d.remove_columns("a", new_fingerprint=fp),
                           lambda d, fp: d.select_columns("a", new_fingerprint=fp),
                           lambda d, fp: d.shuffle(seed=2).flatten_indices(new_fingerprint=fp))):
        FP = f"{k:x}" * 16
        f = functools.partial(f, fp=FP)
        assert f(q).fingerprint == f(h)._fingerprint == FP
        again = pickle.loads(pickle.dumps(f(q)))  # the recipe replays to the same fingerprint
        assert again.fingerprint == FP and again[:] == f(h)[:]


def test_errors_as_datasets(base):
    q, h = base
    for bad in (lambda d: d.shuffle(seed=1, generator=np.random.default_rng(1)),
                lambda d: d.repeat(None),
                lambda d: d.select([1], keep_in_memory=True, indices_cache_file_name="x.arrow")):
        with pytest.raises(ValueError):
            bad(h)
        with pytest.raises(ValueError):
            bad(q)
    assert q.shape == h.shape == (N, 3)


def test_indices_cache_file_name(tmp_path):
    h = datasets.Dataset.from_dict(D)
    src = str(tmp_path / "ds")
    h.save_to_disk(src)
    q = quiver.open(src)
    target = str(tmp_path / "perm.arrow")
    s = q.shuffle(seed=5, indices_cache_file_name=target)
    assert os.path.exists(target)
    assert s[:] == h.shuffle(seed=5)[:]
    # datasets reads the indices mapping file quiver wrote
    assert datasets.Dataset.from_file(target).column_names == ["indices"]
    t = str(tmp_path / "sorted.arrow")
    assert q.sort("b", indices_cache_file_name=t)[:] == h.sort("b")[:] and os.path.exists(t)
