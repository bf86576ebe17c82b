"""The stream batch index (pread walk, lazy `head`, the per-user index
cache under $XDG_CACHE_HOME/quiver) against pyarrow as the oracle.

Streams written by pyarrow with many small batches of varying sizes, a
dictionary column with delta dictionaries (and replacements), and ZSTD /
LZ4 bodies: `quiver head -n K` (lazy index), `quiver get` (random rows),
`quiver info --json` (rows, batches) and `quiver.open` (the dataset layer)
give pyarrow's rows and batch counts through a cold open (entry written), a
cache hit (the entry's mtime is refreshed) and after the stream changes in
place: same size and mtime with other bytes, appended batches, a touched
mtime. A corrupt or truncated cache entry is ignored; QV_INDEX_CACHE=0
writes nothing; an unwritable cache directory is no error. Every test
points XDG_CACHE_HOME at its own temporary directory.
"""
import json
import os
import random
import shutil
import tempfile

import pyarrow as pa
import pytest

from qvpaths import import_quiver, quiver as run_cli

quiver = import_quiver()


@pytest.fixture
def tmp(monkeypatch):
    d = tempfile.mkdtemp(prefix="quiver-sidx-")
    monkeypatch.setenv("XDG_CACHE_HOME", os.path.join(d, "xdg"))
    monkeypatch.delenv("QV_INDEX_CACHE", raising=False)
    monkeypatch.delenv("QV_INDEX_CACHE_MAX_BYTES", raising=False)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def cache_files(tmp):
    d = os.path.join(tmp, "xdg", "quiver")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def write_stream(path, n_batches, seed=0, compression=None, deltas=True, shift=0):
    """n_batches of 1..4 rows: id int64, s string, d dictionary<int32, string>
    whose dictionary grows (deltas) and is replaced halfway."""
    rng = random.Random(seed)
    opts = pa.ipc.IpcWriteOptions(compression=compression, emit_dictionary_deltas=deltas)
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()),
                        ("d", pa.dictionary(pa.int32(), pa.string()))])
    rows = 0
    with pa.ipc.new_stream(path, schema, options=opts) as w:
        for b in range(n_batches):
            n = rng.randint(1, 4)
            prefix = "a" if b < n_batches // 2 else "r"
            words = pa.array([f"{prefix}{i:03d}" for i in range(1 + (b % (n_batches // 2)) // 25)])
            idx = pa.array([rng.randrange(len(words)) for _ in range(n)], pa.int32())
            w.write_batch(pa.record_batch([
                pa.array(range(rows + shift, rows + shift + n), pa.int64()),
                pa.array([f"s{(rows + i + shift) % 1000:03d}" for i in range(n)]),
                pa.DictionaryArray.from_arrays(idx, words)], schema=schema))
            rows += n


def oracle(path):
    with pa.ipc.open_stream(path) as r:
        batches = list(r)
    rows = [row for b in batches for row in b.to_pylist()]
    return rows, len(batches)


def cli_rows(*args):
    return [json.loads(line) for line in run_cli(*args).stdout.decode().splitlines()]


def check_all(path, rows, nb, sample):
    assert cli_rows("head", path, "-n", 7) == rows[:7]
    assert cli_rows("head", path, "-n", len(rows) + 5) == rows
    assert cli_rows("get", path, *sample) == [rows[i] for i in sample]
    info = json.loads(run_cli("info", path, "--json").stdout)
    assert (info["rows"], info["batches"]) == (len(rows), nb)
    ds = quiver.open(path)
    assert len(ds) == len(rows)
    assert [ds[i] for i in sample] == [rows[i] for i in sample]
    assert list(ds) == rows


@pytest.mark.parametrize("compression", [None, "zstd", "lz4"])
def test_cold_open_cache_hit_and_lazy_head(tmp, compression):
    path = os.path.join(tmp, "s.arrows")
    write_stream(path, 300, seed=1, compression=compression)
    rows, nb = oracle(path)
    assert nb == 300
    sample = random.Random(2).sample(range(len(rows)), 25)
    # head alone (lazy, a handful of batches) writes no entry
    assert cli_rows("head", path, "-n", 3) == rows[:3]
    assert cache_files(tmp) == []
    check_all(path, rows, nb, sample)
    (entry,) = cache_files(tmp)
    e = os.path.join(tmp, "xdg", "quiver", entry)
    os.utime(e, ns=(10**9, 10**9))
    check_all(path, rows, nb, sample)
    assert os.stat(e).st_mtime_ns > 10**9  # refreshed by a hit
    assert cache_files(tmp) == [entry]


def copy_in_place(src, dst):
    """dst gets src's bytes without a new inode."""
    with open(src, "rb") as f, open(dst, "r+b") as g:
        data = f.read()
        g.seek(0)
        g.write(data)
        g.truncate(len(data))


def test_changed_stream_never_uses_the_stale_entry(tmp):
    path, other = os.path.join(tmp, "s.arrows"), os.path.join(tmp, "o.arrows")
    write_stream(path, 200, seed=3)
    rows, nb = oracle(path)
    sample = list(range(0, len(rows), 37))
    check_all(path, rows, nb, sample)
    st = os.stat(path)
    # same size and mtime, other values (ids and strings shifted)
    write_stream(other, 200, seed=3, shift=1)
    assert os.path.getsize(other) == st.st_size
    copy_in_place(other, path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_ino == st.st_ino and os.stat(path).st_mtime_ns == st.st_mtime_ns
    rows2, _ = oracle(path)
    assert rows2 != rows
    check_all(path, rows2, nb, sample)
    # appended batches (same inode, bigger)
    write_stream(other, 260, seed=3, shift=1)
    copy_in_place(other, path)
    rows3, nb3 = oracle(path)
    assert nb3 == 260
    check_all(path, rows3, nb3, sample)
    # touched: same bytes, newer mtime: the entry is rewritten for it
    (entry,) = cache_files(tmp)
    e = os.path.join(tmp, "xdg", "quiver", entry)
    before = open(e, "rb").read()
    os.utime(path, ns=(st.st_atime_ns, os.stat(path).st_mtime_ns + 5 * 10**9))
    check_all(path, rows3, nb3, sample)
    assert open(e, "rb").read() != before


def test_corrupt_or_truncated_entry_is_ignored(tmp):
    path = os.path.join(tmp, "s.arrows")
    write_stream(path, 120, seed=4, compression="zstd")
    rows, nb = oracle(path)
    sample = [0, 5, len(rows) - 1]
    check_all(path, rows, nb, sample)
    (entry,) = cache_files(tmp)
    e = os.path.join(tmp, "xdg", "quiver", entry)
    good = open(e, "rb").read()
    for bad in (good[: len(good) // 2], b"", b"\0" * len(good), good[:100] + b"\xff" + good[101:],
                os.urandom(len(good))):
        with open(e, "wb") as f:
            f.write(bad)
        check_all(path, rows, nb, sample)
        assert open(e, "rb").read() == good  # rebuilt by the next full walk


def test_off_switch_and_unwritable_cache_dir(tmp, monkeypatch):
    path = os.path.join(tmp, "s.arrows")
    write_stream(path, 100, seed=5)
    rows, nb = oracle(path)
    monkeypatch.setenv("QV_INDEX_CACHE", "0")
    check_all(path, rows, nb, [1, 2, 3])
    assert cache_files(tmp) == []
    monkeypatch.delenv("QV_INDEX_CACHE")
    blocker = os.path.join(tmp, "file")
    open(blocker, "w").close()
    monkeypatch.setenv("XDG_CACHE_HOME", os.path.join(blocker, "below"))
    check_all(path, rows, nb, [1, 2, 3])
    assert not os.path.exists(os.path.join(blocker, "below"))
