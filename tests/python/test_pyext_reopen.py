"""Reopening a many-batch stream dataset from Python reads its stream
index once (issue #11's reopen cost; docs/design.md, "Stream index"):
quiver.open / quiver.load_from_disk of a save_to_disk directory whose
shard is a stream of 3,000 record batches, and pickle.loads of a shuffled
dataset over it, read the persisted index (one entry of 48 bytes per
message) exactly once and walk no batch header: the bytes the process
reads during the call (/proc/self/io rchar, which counts read and pread
but not page faults of the mapping) are at least the index's size and
less than 1.5 times it plus 64 KiB (a second index load, or a header walk
of 3,000 preads, would exceed that). The rows are checked against
`datasets.load_from_disk` of the same directory.

Linux only (/proc/self/io). Environment: QV_BUILD.
"""
import json
import os
import pickle

import pyarrow as pa
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

BATCHES = 3000

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs /proc/self/io")


def rchar():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.fixture()
def stream_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("QV_INDEX_CACHE", raising=False)
    d = tmp_path / "ds"
    d.mkdir()
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    with pa.OSFile(str(d / "data-00000-of-00001.arrow"), "wb") as f, \
            pa.ipc.new_stream(f, schema) as w:
        for b in range(BATCHES):
            w.write_batch(pa.record_batch([pa.array([2 * b, 2 * b + 1]),
                                           pa.array([f"r{b}", None])], schema=schema))
    (d / "state.json").write_text(json.dumps({
        "_data_files": [{"filename": "data-00000-of-00001.arrow"}],
        "_fingerprint": "0123456789abcdef", "_format_columns": None, "_format_kwargs": {},
        "_format_type": None, "_output_all_columns": False, "_split": None}))
    (d / "dataset_info.json").write_text(json.dumps({"features": {
        "id": {"dtype": "int64", "_type": "Value"},
        "s": {"dtype": "string", "_type": "Value"}}}))
    return str(d), tmp_path / "xdg" / "quiver"


def index_bytes(cache):
    files = [p for p in os.listdir(cache) if p.endswith(".qvi")]
    assert len(files) == 1, files
    return os.path.getsize(os.path.join(cache, files[0]))


def read_during(fn):
    before = rchar()
    out = fn()
    return out, rchar() - before


def test_reopen_reads_the_index_once(stream_dir):
    path, cache = stream_dir
    first = quiver.open(path)  # walks the headers, stores the index
    h = datasets.load_from_disk(path)
    assert first.num_rows == h.num_rows == 2 * BATCHES
    assert first[0:6] == h[0:6] and first[-1] == h[-1]
    idx = index_bytes(cache)
    assert idx >= 48 * BATCHES
    for fn in (lambda: quiver.open(path), lambda: quiver.load_from_disk(path)):
        ds, n = read_during(fn)
        assert ds.num_rows == 2 * BATCHES
        assert idx <= n < 1.5 * idx + 65536, (n, idx)
        assert ds[2 * BATCHES - 3] == h[2 * BATCHES - 3]


def test_pickle_loads_reads_the_index_once(stream_dir):
    path, cache = stream_dir
    qs = quiver.open(path).shuffle(seed=3)
    hs = datasets.load_from_disk(path).shuffle(seed=3)
    blob = pickle.dumps(qs)
    idx = index_bytes(cache)
    ds, n = read_during(lambda: pickle.loads(blob))
    assert idx <= n < 1.5 * idx + 65536, (n, idx)
    assert [ds[i] for i in range(0, 2 * BATCHES, 499)] == [hs[i] for i in range(0, 2 * BATCHES, 499)]
