"""Pickling a quiver.Dataset is its recipe (quiver/_pickle.py,
python/src/pickle.c): for a file-backed dataset — as opened, shuffled,
filtered (expression, or callable with its cache file), selected (list,
range), sorted, sharded, split, concatenated, renamed, mapped to a cache
file — pickle.dumps holds the files' paths and identities and how to get
from them to the dataset, is at most 2 KB, holds no row values, and
pickle.loads gives the same rows and fingerprint, in this process and in
a spawned one (multiprocessing's spawn context, which imports nothing but
quiver). A file changed after pickling (other size; same size and mtime
but other bytes) is refused with a message naming it. An in-memory
dataset pickles its data and loads with its files gone. Oracle: the
original dataset's rows (ds[:]) and fingerprint, and datasets 5.2.0's
save_to_disk for the data.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import multiprocessing
import os
import pickle
import shutil

import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

import qvpickle_child  # noqa: E402
from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

N = 3000
LIMIT = 2048


def make(path):
    d = datasets.Dataset.from_dict({
        "id": list(range(N)),
        "text": [f"row-{i:05d}-" + "x" * (i % 50) for i in range(N)],
        "label": [i % 3 for i in range(N)],
        "vec": [[float(i), float(-i)] for i in range(N)],
    }, features=datasets.Features({"id": datasets.Value("int64"), "text": datasets.Value("string"),
                                   "label": datasets.ClassLabel(names=["a", "b", "c"]),
                                   "vec": datasets.List(datasets.Value("float32"))}))
    d.save_to_disk(str(path), num_shards=2)


def variants(src):
    ds = quiver.open(str(src))
    return {
        "opened": ds,
        "shuffled": ds.shuffle(seed=42),
        "shuffled, random seed": ds.shuffle(),
        "shuffled to a cache file": ds.shuffle(seed=7, cache=True),
        "filtered (expression)": ds.filter("label == 1 and id > 100"),
        "filtered (callable, cache file)": ds.filter(lambda r: r["id"] % 7 == 0, cache=True),
        "selected (list)": ds.select([5, 2999, 5, 0]),
        "selected (range)": ds.select(range(100, 2000, 3)),
        "sorted, columns selected": ds.sort("text", reverse=True).select_columns(["id", "text"]),
        "shard": ds.shard(num_shards=4, index=1, contiguous=False),
        "train_test_split test": ds.train_test_split(test_size=0.1, seed=3)["test"],
        "concatenated": quiver.concatenate_datasets([ds.select(range(10)), ds.shuffle(seed=1)]),
        "renamed, removed": ds.rename_columns({"id": "key"}).remove_columns("vec"),
        "mapped to a cache file": ds.map(lambda b: {"n": [len(t) for t in b["text"]]},
                                         batched=True, cache=True),
        "mapped to a cache file, then shuffled":
            ds.map(lambda r: {"m": r["id"] * 2}, cache=True).shuffle(seed=9),
    }


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    path = tmp_path_factory.mktemp("pickle") / "ds"
    make(path)
    return path


def test_round_trip_small_same_process(src):
    for name, ds in variants(src).items():
        blob = pickle.dumps(ds)
        assert len(blob) <= LIMIT, f"{name}: {len(blob)} bytes"
        assert str(src).encode() in blob, name           # the paths,
        assert b"row-02999-" not in blob, name            # not the rows
        back = pickle.loads(blob)
        assert back.fingerprint == ds.fingerprint, name
        assert len(back) == len(ds) and back.column_names == ds.column_names, name
        assert back[:] == ds[:], name
        assert back.features == ds.features, name


def test_round_trip_spawned_process(src):
    cases = variants(src)
    blobs = [pickle.dumps(ds) for ds in cases.values()]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        got = pool.map(qvpickle_child.load, blobs)
    for (name, ds), g in zip(cases.items(), got):
        assert g["fingerprint"] == ds.fingerprint, name
        assert g["len"] == len(ds), name
        assert g["rows"] == ds[:], name
    slowest = max(g["seconds"] for g in got)
    print(f"pickle.loads in a spawned process: slowest {slowest * 1e3:.2f} ms, "
          f"largest pickle {max(map(len, blobs))} bytes")


def data_files(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("data-"))


def test_changed_file_refused(src, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(src, copy)
    ds = quiver.open(str(copy))
    blobs = [pickle.dumps(x) for x in (ds.shuffle(seed=1),
                                       ds.filter(lambda r: r["id"] < 10, cache=True))]
    target = data_files(copy)[1]
    st = os.stat(target)
    with open(target, "r+b") as f:                       # same size and mtime, other bytes
        f.seek(st.st_size - 100)
        b = f.read(1)
        f.seek(st.st_size - 100)
        f.write(bytes([b[0] ^ 0xFF]))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    for blob in blobs:
        with pytest.raises(quiver.QuiverError, match=f"{target} changed since the dataset was "
                                                     "pickled: its content changed"):
            pickle.loads(blob)
    with open(target, "ab") as f:                        # another size
        f.write(b"\0" * 8)
    with pytest.raises(quiver.QuiverError, match="its size changed from"):
        pickle.loads(blobs[0])
    os.unlink(target)
    with pytest.raises(quiver.QuiverError, match="cannot be read any more"):
        pickle.loads(blobs[1])


def test_in_memory_dataset_pickles_its_data(src, tmp_path):
    copy = tmp_path / "mem"
    shutil.copytree(src, copy)
    ds = quiver.open(str(copy))
    mem = ds.map(lambda r: {"x": r["id"] * 3, "s": r["text"].upper()},
                 remove_columns=ds.column_names)
    expect = mem[:]
    assert mem.cache_files == []
    blob = pickle.dumps(mem)
    assert b"ROW-02999-" in blob                         # the data itself
    shutil.rmtree(copy)
    back = pickle.loads(blob)
    assert back[:] == expect and back.fingerprint == mem.fingerprint


def test_bad_state_refused():
    with pytest.raises(quiver.QuiverValueError, match="unknown state"):
        quiver._pickle.rebuild({"v": 99})
