"""CSV / JSON Lines SRCs in the open and import paths (dataset_text.c):
converted once, streaming, into a cached Arrow file that is mapped.
`quiver import` of a ~200 MB CSV and JSON Lines file keeps its peak RSS
(wait4's ru_maxrss of the child) far below the file and writes what
pyarrow reads (the oracle); `quiver head` of a file whose tail is
malformed reads only the start (it succeeds and caches nothing, where the
full conversion refuses the bad line with file, line and column); the
cache is reused while the file is unchanged and rebuilt, its stale
conversion removed, when any part of the key changes; QV_INDEX_CACHE=0
turns it off."""
import glob
import os
import re
import subprocess
import zlib

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pytest

from qvpaths import BUILD, import_quiver, quiver

QUIVER = os.path.join(BUILD, "quiver")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("QV_INDEX_CACHE", raising=False)
    return home / "quiver"


def conversions(cache):
    return sorted(glob.glob(str(cache / "text-*.arrow")))


def run_rss(*args):
    """Run quiver under /usr/bin/time; (exit code, stderr, peak RSS in bytes).
    Not wait4's ru_maxrss of a child forked from here: Linux carries the
    forking process's high-water mark (this interpreter's) across exec."""
    if not os.access("/usr/bin/time", os.X_OK):
        pytest.skip("/usr/bin/time is needed to measure a child's peak RSS")
    r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kib=%M", QUIVER, *map(str, args)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    m = re.search(rb"maxrss_kib=(\d+)", r.stderr)
    assert m, r.stderr
    return r.returncode, r.stderr, int(m.group(1)) * 1024


def big_text(path, header, line, target):
    """A file of about `target` bytes: `header`, then one ~1 MiB chunk of
    rows (made by `line(i)`, deterministic) repeated."""
    chunk, i = [], 0
    size = 0
    while size < (1 << 20):
        s = line(i)
        chunk.append(s)
        size += len(s)
        i += 1
    block = "".join(chunk).encode()
    with open(path, "wb") as f:
        f.write(header.encode())
        for _ in range(max(1, target // len(block))):
            f.write(block)
    return i, os.path.getsize(path)


def imported(dst):
    shards = sorted(glob.glob(str(dst / "train" / "data-*.arrow")))
    assert shards
    return pa.concat_tables(pa.ipc.open_stream(s).read_all() for s in shards)


def csv_line(i):
    h = zlib.crc32(str(i).encode())
    return f'{i},{h % 100000 / 8},"name {h:x}, quoted",{h % 7}\n'


def test_import_csv_bounded_rss(tmp_path, cache):
    src = tmp_path / "big.csv"
    big_text(src, "id,x,name,k\n", csv_line, 200 << 20)
    size = os.path.getsize(src)
    rc, err, rss = run_rss("import", src, "-o", tmp_path / "dst")
    assert rc == 0, err
    print(f"import csv: {size >> 20} MiB file, peak RSS {rss >> 20} MiB")
    assert rss < size / 2, (rss, size)
    got = imported(tmp_path / "dst")
    want = pcsv.read_csv(str(src))
    assert got.num_rows == want.num_rows
    assert got.schema.names == want.schema.names
    # datasets' (pandas) types: int64, float64, large_string
    assert got.equals(want.cast(got.schema))
    # the conversion was cached and is reused: a second import converts
    # nothing (the same cache file, same inode)
    (conv,) = conversions(cache)
    ino = os.stat(conv).st_ino
    rc, err, _ = run_rss("import", src, "-o", tmp_path / "dst2")
    assert rc == 0, err
    assert conversions(cache) == [conv] and os.stat(conv).st_ino == ino


def json_line(i):
    h = zlib.crc32(str(i).encode())
    return f'{{"id": {i}, "x": {h % 1000 / 4}, "t": "text {h:x}", "l": [{h % 5}, {h % 3}]}}\n'


def test_import_jsonl_bounded_rss(tmp_path, cache):
    src = tmp_path / "big.jsonl"
    big_text(src, "", json_line, 200 << 20)
    size = os.path.getsize(src)
    rc, err, rss = run_rss("import", src, "-o", tmp_path / "dst")
    assert rc == 0, err
    print(f"import jsonl: {size >> 20} MiB file, peak RSS {rss >> 20} MiB")
    assert rss < size / 2, (rss, size)
    got = imported(tmp_path / "dst")
    want = pjson.read_json(str(src))
    assert got.num_rows == want.num_rows
    assert got.equals(want.cast(got.schema))


def test_head_reads_only_the_start(tmp_path, cache):
    src = tmp_path / "t.csv"
    n = 1200000  # ~16 MB: many 1 MiB head windows; the last line is bad
    rows = ["a,b"] + [f"{i},{i * 3}" for i in range(n)] + ["1,2,3"]
    src.write_bytes(("\n".join(rows) + "\n").encode())
    r = quiver("head", "-n", "3", src)
    assert r.stdout.decode().splitlines() == ['{"a":0,"b":0}', '{"a":1,"b":3}', '{"a":2,"b":6}']
    assert conversions(cache) == []  # nothing converted, nothing cached
    # the whole conversion does see the tail: file, line and column
    r = quiver("info", src, check=False)
    assert r.returncode == 1
    assert f"t.csv: line {n + 2}, column 1".encode() in r.stderr, r.stderr
    assert conversions(cache) == []
    # JSON Lines too
    js = tmp_path / "t.jsonl"
    js.write_bytes(("".join(f'{{"i": {i}}}\n' for i in range(n)) + '{"i": \n').encode())
    r = quiver("head", "-n", "2", js)
    assert r.stdout.decode().splitlines() == ['{"i":0}', '{"i":1}']
    r = quiver("head", "-n", "2", js, "--decode-labels")
    assert r.returncode == 0
    r = quiver("info", js, check=False)
    assert r.returncode == 1 and f"t.jsonl: line {n + 1}, column".encode() in r.stderr, r.stderr
    assert conversions(cache) == []


def test_cache_reuse_and_invalidation(tmp_path, cache):
    src = tmp_path / "t.csv"
    text = "a,b\n" + "".join(f"{i},{i / 2}\n" for i in range(2000))
    src.write_text(text)
    want = pcsv.read_csv(str(src))
    r = quiver("info", src)
    assert b"rows:               2000" in r.stdout
    (conv,) = conversions(cache)
    assert pa.ipc.open_stream(conv).read_all().equals(want)
    ino = os.stat(conv).st_ino
    # reused by every later open (head, get, dataset commands)
    quiver("head", src)
    quiver("get", src, "5")
    assert conversions(cache) == [conv] and os.stat(conv).st_ino == ino
    # a changed size: converted again, the stale conversion removed
    src.write_text(text + "2000,1.5\n")
    r = quiver("info", src)
    assert b"rows:               2001" in r.stdout
    (conv2,) = conversions(cache)
    assert conv2 != conv
    # same size and mtime, other bytes: the content check catches it
    st = os.stat(src)
    src.write_text(text.replace("1,0.5\n", "7,0.5\n") + "2000,1.5\n")
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.path.getsize(src) == st.st_size
    r = quiver("get", src, "1")
    assert r.stdout.decode().strip() == '{"a":7,"b":0.5}'
    (conv3,) = conversions(cache)
    assert conv3 not in (conv, conv2)
    # a damaged conversion is moved aside and rebuilt
    with open(conv3, "r+b") as f:
        f.truncate(os.path.getsize(conv3) // 2)
    r = quiver("get", src, "1")
    assert r.stdout.decode().strip() == '{"a":7,"b":0.5}'
    assert pa.ipc.open_stream(conversions(cache)[0]).read_all().num_rows == 2001


def test_cache_off_and_bound(tmp_path, cache, monkeypatch):
    src = tmp_path / "t.jsonl"
    src.write_text("".join(f'{{"i": {i}, "s": "v{i}"}}\n' for i in range(1000)))
    monkeypatch.setenv("QV_INDEX_CACHE", "0")
    r = quiver("info", src)
    assert b"rows:               1000" in r.stdout
    assert conversions(cache) == []
    monkeypatch.delenv("QV_INDEX_CACHE")
    # a bound of 1 byte: the conversion just written is kept, older ones go
    monkeypatch.setenv("QV_TEXT_CACHE_MAX_BYTES", "1")
    other = tmp_path / "u.jsonl"
    other.write_text('{"x": 1}\n')
    quiver("info", src)
    (first,) = conversions(cache)
    quiver("info", other)
    (second,) = conversions(cache)
    assert second != first


def test_python_load_dataset_maps_the_conversion(tmp_path, cache):
    Q = import_quiver()
    src = tmp_path / "t.csv"
    src.write_text("a,b,s\n1,2.5,x\n3,,y\n")
    ds = Q.load_dataset("csv", data_files=str(src), split="train")
    assert ds.to_dict() == {"a": [1, 3], "b": [2.5, None], "s": ["x", "y"]}
    (conv,) = conversions(cache)
    ds2 = Q.Dataset.from_csv(str(src))
    assert ds2.to_dict() == ds.to_dict()
    assert conversions(cache) == [conv]
    js = tmp_path / "t.jsonl"
    js.write_text('{"a": [1, 2]}\n{"a": null}\n')
    d3 = Q.Dataset.from_json(str(js))
    assert d3.to_dict() == {"a": [[1, 2], None]}
    assert len(conversions(cache)) == 2
    # malformed input: the reader's file, line and column
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n1,2,3\n")
    with pytest.raises(Q.QuiverError, match=r"bad.csv: line 3, column 1"):
        Q.load_dataset("csv", data_files=str(bad), split="train")


def test_pickles_name_the_text_file(tmp_path, cache):
    """A pickle of a dataset opened from CSV / JSON Lines names the text
    file (not its cached conversion): it rebuilds after the cache is gone
    and refuses the file once it changed."""
    import pickle
    import shutil
    Q = import_quiver()
    src, js = tmp_path / "p.csv", tmp_path / "p.jsonl"
    makers = [lambda: Q.open(str(src)), lambda: Q.Dataset.from_csv(str(src)),
              lambda: Q.load_dataset("csv", data_files=[str(src), str(src)],
                                     split="train").select([0, 2]),
              lambda: Q.Dataset.from_json(str(js))]
    for make in makers:
        src.write_text("a,b\n1,2\n3,4\n")
        js.write_text('{"a": 1}\n')
        ds = make()
        want = ds.to_dict()
        b = pickle.dumps(ds)
        assert pickle.loads(b).to_dict() == want
        shutil.rmtree(cache)
        assert pickle.loads(b).to_dict() == want
        src.write_text("a,b\n1,2\n3,5\n9,9\n")
        js.write_text('{"a": 22}\n')
        with pytest.raises(Q.QuiverError, match=r"p\.(csv|jsonl) changed since the dataset"):
            pickle.loads(b)
