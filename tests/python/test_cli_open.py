"""One open for every front end (src/dataset/dataset_open.c) and the CLI
fixes found by a new user (issue 11, Why 5 and Why 7), checked against
`datasets` and pyarrow:
  - a DatasetDict with one split's directory or file missing: the other
    splits read as datasets loads them, the missing one fails naming it;
  - `quiver info DIR` of a directory holding dozens of cache files prints
    one line per role with counts that match what datasets wrote (--files
    and --json list every file);
  - `head -n1`, `-n 1`, `--rows=1`, `--rows 1`; `get` with negative rows as
    Python indexes; out of range exits 1;
  - filter --where and map --set: a bad expression exits 2 with a caret;
  - save_to_disk(num_shards > rows) fails as datasets' does, writing nothing;
  - Parquet files are read; CSV / JSON files are named as such instead of a
    parse error;
    Arrow written by pyarrow (file, stream, pre-0.15 stream) reads as
    pyarrow reads it.
"""
import json
import os
import shutil

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets as D  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.csv as pcsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

from qvpaths import import_quiver, quiver, quiver_rows  # noqa: E402


def _rows(n, base=0):
    return {"id": list(range(base, base + n)), "text": [f"r{i}" for i in range(base, base + n)]}


def test_dataset_dict_missing_split(tmp_path):
    dd = D.DatasetDict({"train": D.Dataset.from_dict(_rows(40)),
                        "test": D.Dataset.from_dict(_rows(7, 1000))})
    path = tmp_path / "dd"
    dd.save_to_disk(str(path))
    want = D.load_from_disk(str(path))["train"].to_list()
    shutil.rmtree(path / "test")
    assert quiver_rows("head", path, "--split", "train", "-n", 1000) == want
    assert quiver_rows("get", path, "--split", "train", 3, -1) == [want[3], want[-1]]
    r = quiver("head", path, "--split", "test", check=False)
    assert r.returncode == 1
    assert r.stderr.decode() == (f"quiver: {path}/test: split 'test' of {path}/dataset_dict.json "
                                 "is missing (no such directory)\n")
    # a dataset command on the split that is there works, as datasets' split
    quiver("shuffle", path, "--split", "train", "--seed=3", "-o", tmp_path / "sh")
    assert D.load_from_disk(str(tmp_path / "sh")).to_list() == \
        D.Dataset.from_dict(_rows(40)).shuffle(seed=3).to_list()
    # ... and one on every split fails naming the missing one, writing nothing
    r = quiver("shuffle", path, "--seed=3", "-o", tmp_path / "all", check=False)
    assert r.returncode == 1 and f"{path}/test" in r.stderr.decode()
    assert not (tmp_path / "all").exists()
    # a split whose data file is missing: the file is named
    dd.save_to_disk(str(tmp_path / "dd2"))
    os.unlink(tmp_path / "dd2" / "test" / "data-00000-of-00001.arrow")
    assert quiver_rows("head", tmp_path / "dd2", "--split", "train", "-n", 1000) == want
    r = quiver("head", tmp_path / "dd2", "--split", "test", check=False)
    assert r.returncode == 1
    assert "test/state.json: _data_files[0].filename 'data-00000-of-00001.arrow': no such file" \
        in r.stderr.decode()


def test_info_many_cache_files(tmp_path):
    """A day of datasets use: 30 shuffles, 4 filters and one map leave 35
    cache files beside the dataset; `quiver info` summarises them."""
    path = tmp_path / "ds"
    D.Dataset.from_dict(_rows(200)).save_to_disk(str(path))
    ds = D.load_from_disk(str(path))
    objs = [ds.shuffle(seed=s) for s in range(30)]
    objs += [ds.filter(lambda r, k=k: r["id"] % (k + 2) == 0) for k in range(4)]
    mapped = ds.map(lambda r: {"n": len(r["text"])})
    arrow = sorted(f for f in os.listdir(path) if f.endswith(".arrow"))
    shards = [f for f in arrow if f.startswith("data-")]
    cache = [f for f in arrow if f not in shards]
    assert len(cache) == 35
    # the oracle: an indices mapping maps one dataset when exactly one of the
    # directory's datasets (the Dataset, the map output) has more rows than
    # its largest index
    sizes = [len(ds), len(mapped)]
    statuses = []
    for o in objs:
        m = max(o._indices.column(0).to_pylist(), default=-1)
        fits = sum(1 for n in sizes if n > m)
        statuses.append("resolved" if fits == 1 else "ambiguous" if fits else "none")
    text = quiver("info", path).stdout.decode()
    assert len(text.splitlines()) < 30, text
    assert "files:        35 .arrow files (list them with --files, or --json)\n" in text
    assert f"  data:       1 ({len(mapped)} rows)\n" in text
    assert (f"  indices:    34 ({statuses.count('resolved')} map one dataset, "
            f"{statuses.count('ambiguous')} ambiguous, {statuses.count('none')} map none)\n") in text
    assert statuses.count("ambiguous") == 34  # the map output has as many rows
    full = quiver("info", path, "--files").stdout.decode()
    for f in cache:
        assert f"  {f}  (" in full
    assert full.count("ambiguous: ") == 34
    info = json.loads(quiver("info", path, "--json").stdout)
    assert sorted(f["name"] for f in info["files"]) == cache
    got = sorted(f["status"] for f in info["files"] if f["role"] == "indices")
    assert got == sorted(statuses)
    # a few files are still listed one by one
    small = tmp_path / "small"
    D.Dataset.from_dict(_rows(20)).save_to_disk(str(small))
    sds = D.load_from_disk(str(small))
    sds.shuffle(seed=1)
    text = quiver("info", small).stdout.decode()
    assert "files:\n" in text and "maps: dataset '.' (20 rows)" in text


def test_head_get_forms(tmp_path):
    path = tmp_path / "ds"
    D.Dataset.from_dict(_rows(25)).save_to_disk(str(path))
    want = D.load_from_disk(str(path)).to_list()
    f = str(path / "data-00000-of-00001.arrow")
    for src in (path, f):
        for args in (["-n1"], ["-n", "1"], ["--rows=1"], ["--rows", "1"]):
            assert quiver_rows("head", src, *args) == want[:1], args
        assert quiver_rows("head", src, "-n3") == want[:3]
        order = [-1, 0, -25, 24, -2]
        assert quiver_rows("get", src, *order) == [want[i] for i in order]
        for bad in (25, -26):
            r = quiver("get", src, bad, check=False)
            assert r.returncode == 1
            assert f"row {bad} is out of range" in r.stderr.decode()
        r = quiver("head", src, "-nx", check=False)
        assert r.returncode == 2 and "-n expects a non-negative integer, found 'x'" in \
            r.stderr.decode()
        r = quiver("get", src, "1x", check=False)
        assert r.returncode == 2


def test_bad_expressions_are_usage(tmp_path):
    path = tmp_path / "ds"
    D.Dataset.from_dict(_rows(10)).save_to_disk(str(path))
    for cmd in (["filter", path, "--where=id >"], ["map", path, "--set", "x=id >"]):
        r = quiver(*cmd, "-o", tmp_path / "o", check=False)
        err = r.stderr.decode()
        assert r.returncode == 2, err
        assert "expected an expression after '>'" in err and "^" in err
    for cmd in (["filter", path, "--where=nope > 1"], ["map", path, "--set", "x=nope > 1"]):
        r = quiver(*cmd, "-o", tmp_path / "o", check=False)
        err = r.stderr.decode()
        assert r.returncode == 2, err
        assert "unknown column 'nope'" in err and "^" in err
    assert not (tmp_path / "o").exists()
    # a good one still runs, as datasets' filter
    quiver("filter", path, "--where=id % 3 == 0", "-o", tmp_path / "ok")
    assert D.load_from_disk(str(tmp_path / "ok")).to_list() == \
        D.Dataset.from_dict(_rows(10)).filter(lambda r: r["id"] % 3 == 0).to_list()


def test_save_more_shards_than_rows(tmp_path):
    quiver_mod = import_quiver()
    path = tmp_path / "ds"
    D.Dataset.from_dict(_rows(3)).save_to_disk(str(path))
    with pytest.raises(IndexError, match="out of range for dataset of size 3"):
        D.load_from_disk(str(path)).save_to_disk(str(tmp_path / "hf10"), num_shards=10)
    ds = quiver_mod.open(str(path))
    # the same exception class as datasets' (QuiverIndexError is an IndexError)
    with pytest.raises(IndexError, match="out of range for dataset of size 3") as e:
        ds.save_to_disk(str(tmp_path / "q10"), num_shards=10)
    assert isinstance(e.value, quiver_mod.QuiverError)
    assert not (tmp_path / "q10").exists()
    ds.save_to_disk(str(tmp_path / "q3"), num_shards=3)
    D.load_from_disk(str(path)).save_to_disk(str(tmp_path / "hf3"), num_shards=3)
    got = D.load_from_disk(str(tmp_path / "q3"))
    assert got.to_list() == D.load_from_disk(str(tmp_path / "hf3")).to_list()
    assert len(got.cache_files) == 3


def test_formats_sniffed(tmp_path):
    quiver_mod = import_quiver()
    t = pa.table({"a": [1, 2, 3], "s": ["x", "y", "z"]})
    pq.write_table(t, tmp_path / "t.parquet")
    pcsv.write_csv(t, tmp_path / "t.csv")
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in t.to_pylist()))
    (tmp_path / "t.txt").write_text("hello world\n")
    # Parquet is read (tests/python/test_parquet_read.py): the same rows
    pp = tmp_path / "t.parquet"
    assert quiver_rows("head", pp, "-n", 3) == t.to_pylist()
    assert quiver_mod.open(str(pp))[:] == t.to_pydict()
    cases = {"t.txt": "not an Arrow, Parquet, CSV or JSON file: found 68 65 6c 6c 6f 20 77 6f "
                      "(\"hello wo\")"}
    for name, msg in cases.items():
        p = tmp_path / name
        for cmd in (["info", p], ["head", p], ["get", p, 0]):
            r = quiver(*cmd, check=False)
            assert r.returncode == 1, (cmd, r.stderr)
            assert r.stderr.decode() .startswith(f"quiver: {p}: ") and msg in r.stderr.decode(), \
                r.stderr
        with pytest.raises(quiver_mod.QuiverError, match="not supported yet|not an Arrow"):
            quiver_mod.open(str(p))
    # CSV and JSON Lines open as datasets (src/formats), rows as pyarrow reads them
    for name in ("t.csv", "t.jsonl"):
        p = tmp_path / name
        assert quiver_rows("head", p) == t.to_pylist()
        assert quiver_rows("get", p, 1) == [t.to_pylist()[1]]
        assert "rows:               3" in quiver("info", p).stdout.decode()
        assert pa.table(quiver_mod.open(str(p))).to_pylist() == t.to_pylist()
    # Arrow as pyarrow writes it: file, stream, and the pre-0.15 stream
    with pa.ipc.new_file(tmp_path / "f.arrow", t.schema) as w:
        w.write_table(t)
    with pa.ipc.new_stream(tmp_path / "s.arrow", t.schema) as w:
        w.write_table(t)
    legacy = pa.ipc.IpcWriteOptions(use_legacy_format=True)
    with pa.ipc.new_stream(tmp_path / "old.arrow", t.schema, options=legacy) as w:
        w.write_table(t)
    assert open(tmp_path / "old.arrow", "rb").read(4) != b"\xff\xff\xff\xff"
    for name in ("f.arrow", "s.arrow", "old.arrow"):
        assert quiver_rows("head", tmp_path / name) == t.to_pylist(), name
        assert quiver_rows("get", tmp_path / name, -1) == t.to_pylist()[-1:], name


def test_python_open_choices(tmp_path):
    """quiver.open words the library's typed choices in its own API."""
    quiver_mod = import_quiver()
    dd = D.DatasetDict({"train": D.Dataset.from_dict(_rows(5)), "test": D.Dataset.from_dict(_rows(5))})
    dd.save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(quiver_mod.QuiverError, match=r"choose a split .*\(quiver.open\(path, split=...\)\)"):
        quiver_mod.open(str(tmp_path / "dd"))
    assert len(quiver_mod.open(str(tmp_path / "dd"), split="test")) == 5
    # two datasets of 30 rows beside a shuffle mapping: which one?
    path = tmp_path / "ds"
    D.Dataset.from_dict(_rows(30)).save_to_disk(str(path))
    ds = D.load_from_disk(str(path))
    sh = ds.shuffle(seed=1)
    shutil.copy(path / "data-00000-of-00001.arrow", path / "copy.arrow")
    idx = sh.cache_files[-1]["filename"]
    with pytest.raises(quiver_mod.QuiverError, match=r"ambiguous: .*name the data it indexes "
                       r"\(quiver.open\(path, data=..., split=...\)\)"):
        quiver_mod.open(idx)
    got = quiver_mod.open(idx, data=str(path / "copy.arrow"))
    assert [got[i] for i in range(len(got))] == sh.to_list()
    r = quiver("head", idx, check=False)
    assert r.returncode == 1 and r.stderr.decode().endswith(
        "name the data it indexes (quiver: --data PATH [--split NAME])\n")
