"""Pickling a dataset whose in-memory indices mapping is large (a shuffle of
file-backed rows, say): the first pickle.dumps writes the mapping once to
the per-user cache ($XDG_CACHE_HOME/quiver/pickle) and pickle.loads maps
it instead of recomputing it (quiver/_pickle.py, "indices_file"); a cache
file that is gone or changed falls back to replaying the transforms. The
rows are checked against datasets 5.2's own shuffle / sort / select on
the same directory (the oracle), and the fallbacks against the dataset
pickled.
"""
import os
import pickle

import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

N = 60000  # above _pickle._INDICES_FILE_MIN_ROWS


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    path = tmp_path_factory.mktemp("pickle-indices") / "ds"
    datasets.Dataset.from_dict({"id": list(range(N)), "t": [f"r{i % 997}" for i in range(N)]}) \
        .save_to_disk(str(path))
    return path


@pytest.fixture()
def xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("QV_PICKLE_CACHE", raising=False)
    return tmp_path / "xdg" / "quiver" / "pickle"


def cached(xdg):
    return sorted(xdg.iterdir()) if xdg.exists() else []


def cases(q, h):
    return {
        "shuffled": (q.shuffle(seed=5), h.shuffle(seed=5)),
        "shuffled, selected": (q.shuffle(seed=6).select(range(N - 1, 0, -1)),
                               h.shuffle(seed=6).select(range(N - 1, 0, -1))),
        "sorted": (q.sort("t", reverse=True),
                   h.sort("t", reverse=True)),
        "train split": (q.train_test_split(test_size=0.1, seed=3)["train"],
                        h.train_test_split(test_size=0.1, seed=3)["train"]),
    }


def test_mapping_cached_and_mapped_back(src, xdg):
    q, h = quiver.open(str(src)), datasets.load_from_disk(str(src))
    for name, (qd, hd) in cases(q, h).items():
        before = cached(xdg)
        blob = pickle.dumps(qd)
        assert len(blob) <= 2048, name
        assert len(cached(xdg)) == len(before) + 1, name  # one file per dataset
        state = qd.__reduce__()[1][0]
        assert state["indices_file"][0].startswith(str(xdg)), name
        pickle.dumps(qd)  # the file is reused, not written again
        assert len(cached(xdg)) == len(before) + 1, name
        back = pickle.loads(blob)
        assert back.fingerprint == qd.fingerprint, name
        assert back[:] == hd[:], name  # datasets' rows, in datasets' order
        assert back._origin == qd._origin, name
        assert pickle.loads(pickle.dumps(back))[:] == hd[:], name  # pickles again


def test_cache_file_gone_or_changed_replays(src, xdg):
    qd = quiver.open(str(src)).shuffle(seed=11)
    want = qd[:]
    blob = pickle.dumps(qd)
    (f,) = cached(xdg)
    data = f.read_bytes()
    f.write_bytes(data[:-8] + bytes(8))  # changed: its identity no longer matches
    assert pickle.loads(blob)[:] == want
    f.unlink()  # gone
    assert pickle.loads(blob)[:] == want


def test_only_mapping_transforms_of_whole_data(src, xdg):
    q = quiver.open(str(src))
    # a contiguous select is a slice of the data, a rename a new schema: no file
    for ds in (q.select(range(0, N - 1000)), q.rename_column("t", "u").shuffle(seed=1),
               q.shuffle(seed=2).select(range(10))):
        back = pickle.loads(pickle.dumps(ds))
        assert back[:] == ds[:]
    assert cached(xdg) == []


def test_turned_off(src, xdg, monkeypatch):
    monkeypatch.setenv("QV_PICKLE_CACHE", "0")
    qd = quiver.open(str(src)).shuffle(seed=12)
    assert pickle.loads(pickle.dumps(qd))[:] == qd[:]
    assert cached(xdg) == []
