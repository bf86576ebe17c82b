"""The streaming CSV / JSON Lines path of `quiver convert` against pyarrow
(the oracle): with tiny --block-size every row, quote, CRLF and multibyte
character straddles a window edge and the table must still equal
pyarrow.csv.read_csv / pyarrow.json.read_json's; a type that widens late
restarts the read (--stats says so) and gives pyarrow's whole-file type;
the reader's own peak memory (--stats) stays a few windows on a file tens
of windows long."""
import io
import re

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pytest

from qvpaths import quiver
from test_csv_oracle import TRICKY
from test_jsonl_oracle import CASES as JSONL_CASES


def convert(tmp_path, data, name, *extra):
    src = tmp_path / name
    src.write_bytes(data)
    out = tmp_path / "out.arrow"
    r = quiver("convert", src, out, "--stats", *extra)
    m = re.search(rb"convert: (\d+) rows, (\d+) windows, (\d+) restarts, peak (\d+) bytes", r.stderr)
    assert m, r.stderr
    stats = dict(zip(("rows", "windows", "restarts", "peak"), map(int, m.groups())))
    return pa.ipc.open_file(str(out)).read_all(), stats


@pytest.mark.parametrize("bs", [1, 3, 16])
@pytest.mark.parametrize("data", TRICKY)
def test_csv_tiny_blocks(tmp_path, data, bs):
    try:
        expected = pcsv.read_csv(io.BytesIO(data),
                                 parse_options=pcsv.ParseOptions(newlines_in_values=True))
    except pa.ArrowInvalid:  # refused by pyarrow: refused here too
        (tmp_path / "x.csv").write_bytes(data)
        r = quiver("convert", tmp_path / "x.csv", tmp_path / "o.arrow", f"--block-size={bs}",
                   check=False)
        assert r.returncode == 1
        return
    got, stats = convert(tmp_path, data, "t.csv", f"--block-size={bs}")
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()
    assert stats["rows"] == expected.num_rows


def edge_csv(rows):
    out = ["n,text,x,when"]
    for i in range(rows):
        s = ["plain", '"a,b"', '"q""uote"', '"two\nlines"', '"cr\r\nlf"', "\u00e9t\u00e9",
             "\u20ac\U0001F600"][i % 7]
        out.append(f"{i},{s},{i * 0.5},2020-01-{i % 28 + 1:02d}")
    return ("\r\n".join(out) + "\r\n").encode()


@pytest.mark.parametrize("bs", [7, 64, 1000])
def test_csv_edges_straddle_windows(tmp_path, bs):
    data = edge_csv(700)
    expected = pcsv.read_csv(io.BytesIO(data),
                             parse_options=pcsv.ParseOptions(newlines_in_values=True))
    got, stats = convert(tmp_path, data, "t.csv", f"--block-size={bs}")
    assert stats["windows"] > 5
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()


def test_csv_type_widens_late(tmp_path):
    rows = ["a,b,c,d"] + [f"{i},{i},,2020-01-01 00:00:{i % 60:02d}" for i in range(5000)]
    rows += ["x,2.5,3,2020-01-01 00:00:00Z"]
    data = ("\n".join(rows) + "\n").encode()
    expected = pcsv.read_csv(io.BytesIO(data))
    got, stats = convert(tmp_path, data, "t.csv", "--block-size=4096")
    assert stats["restarts"] >= 1
    assert got.schema == expected.schema
    assert [str(f.type) for f in got.schema] == ["string", "double", "int64", "string"]
    assert got.to_pylist() == expected.to_pylist()


def test_csv_bounded_memory(tmp_path):
    rows = ["id,x,name"] + [f'{i},{i}.5,"name {i}, quoted"' for i in range(120000)]
    data = ("\n".join(rows) + "\n").encode()  # ~3.5 MB, > 50 windows of 64 KiB
    got, stats = convert(tmp_path, data, "t.csv", "--block-size=16384")
    assert got.num_rows == 120000
    assert stats["windows"] >= 10
    # the reader's own accounting (window + spans + converted block), far
    # below the file it streamed
    assert 0 < stats["peak"] < len(data) / 4, stats


@pytest.mark.parametrize("bs", [1, 5, 64])
@pytest.mark.parametrize("text", JSONL_CASES)
def test_jsonl_tiny_blocks(tmp_path, text, bs):
    data = text.encode()
    expected = pjson.read_json(io.BytesIO(data),
                               read_options=pjson.ReadOptions(use_threads=False))
    got, _ = convert(tmp_path, data, "t.jsonl", f"--block-size={bs}")
    assert got.schema == expected.schema
    assert repr(got.to_pylist()) == repr(expected.to_pylist())


def test_jsonl_widens_late_and_bounded(tmp_path):
    lines = [f'{{"i": {i}, "s": "\u00e9{i}", "l": [{i}]}}' for i in range(60000)]
    lines += ['{"i": 0.5, "new": {"k": true}}']
    data = ("\r\n".join(lines) + "\n").encode()
    expected = pjson.read_json(io.BytesIO(data),
                               read_options=pjson.ReadOptions(use_threads=False))
    got, stats = convert(tmp_path, data, "t.jsonl", "--block-size=16384")
    assert stats["restarts"] >= 1
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()
    assert 0 < stats["peak"] < len(data) / 4, stats


def test_error_line_in_late_window(tmp_path):
    rows = ["a,b"] + [f"{i},{i}" for i in range(5000)] + ["1,2,3"]
    src = tmp_path / "bad.csv"
    src.write_bytes(("\n".join(rows) + "\n").encode())
    r = quiver("convert", src, tmp_path / "o.arrow", "--block-size=256", check=False)
    assert r.returncode == 1
    assert b"bad.csv: line 5002, column 1" in r.stderr, r.stderr
    assert not (tmp_path / "o.arrow").exists()


@pytest.mark.parametrize("text,line", [
    ('{"a":1}\n{"a":"x"}\n', 2),
    ('{"a":1}\n{"a":[1]}\n', 2),
    ('{"a":1,"a":2}\n', 1),
    ('{"a":1}\n{"a":{"b":1,"b":2}}\n', 2),
    ('{"a":1}\n{"a":\n', 2),
    ('{"a":"x\x01"}\n', 1),
])
def test_jsonl_refused_in_late_window(tmp_path, text, line):
    # 3000 good rows first: the bad one is met while building on the types
    # of earlier windows, and must still be refused with its line
    good = "".join(f'{{"a": {i}, "z": "{i}"}}\n' for i in range(3000))
    data = (good + text).encode()
    with pytest.raises(pa.ArrowInvalid):
        pjson.read_json(io.BytesIO(data))
    src = tmp_path / "bad.jsonl"
    src.write_bytes(data)
    r = quiver("convert", src, tmp_path / "o.arrow", "--block-size=512", check=False)
    assert r.returncode == 1, r.stderr
    assert f"bad.jsonl: line {3000 + line}, column " in r.stderr.decode(), r.stderr
    assert not (tmp_path / "o.arrow").exists()


def test_jsonl_new_nested_key_late(tmp_path):
    lines = [f'{{"o": {{"x": {i}}}}}' for i in range(3000)] + ['{"o": {"x": 1, "y": "new"}}']
    data = ("\n".join(lines) + "\n").encode()
    expected = pjson.read_json(io.BytesIO(data), read_options=pjson.ReadOptions(use_threads=False))
    got, stats = convert(tmp_path, data, "t.jsonl", "--block-size=512")
    assert stats["restarts"] >= 1
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()


def test_compressed_inputs(tmp_path):
    import gzip
    rows = ["a,b,s"] + [f'{i},{i * 0.25},"x{i}"' for i in range(20000)] + ["z,1.5,late"]
    data = ("\n".join(rows) + "\n").encode()
    expected = pcsv.read_csv(io.BytesIO(data))
    half = len(data) // 2
    # two gzip members, as `cat a.gz b.gz` makes; a late widening restarts
    # through gzrewind
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]))
    r = quiver("convert", gz, tmp_path / "g.arrow", "--block-size=4096", "--stats")
    assert re.search(rb", [1-9]\d* restarts", r.stderr), r.stderr
    assert pa.ipc.open_file(str(tmp_path / "g.arrow")).read_all().equals(expected)
    zs = tmp_path / "t.jsonl.zst"
    jl = "".join(f'{{"i": {i}, "t": [{i}]}}\n' for i in range(20000)).encode()
    with pa.CompressedOutputStream(str(zs), "zstd") as f:
        f.write(jl)
    quiver("convert", zs, tmp_path / "z.arrow", "--block-size=4096")
    assert pa.ipc.open_file(str(tmp_path / "z.arrow")).read_all().equals(
        pjson.read_json(io.BytesIO(jl), read_options=pjson.ReadOptions(use_threads=False)))
    # damaged data is bad data (exit 1)
    z = gzip.compress(data)
    for damaged in (z[:-40], z[:len(z) // 2], z[:-4] + b"\0\0\0\0"):
        bad = tmp_path / "bad.csv.gz"
        bad.write_bytes(damaged)
        r = quiver("convert", bad, tmp_path / "b.arrow", check=False)
        assert r.returncode == 1 and b"bad gzip data" in r.stderr, r.stderr
        assert not (tmp_path / "b.arrow").exists()
    zd = zs.read_bytes()
    for damaged in (zd[:-7], zd[:len(zd) // 2]):
        bad = tmp_path / "bad.jsonl.zst"
        bad.write_bytes(damaged)
        r = quiver("convert", bad, tmp_path / "b.arrow", check=False)
        assert r.returncode == 1 and b"bad zstd data" in r.stderr, r.stderr


def test_compressed_outputs(tmp_path):
    import gzip
    t = pa.table({"i": list(range(5000)), "s": [f"v{i}" for i in range(5000)],
                  "x": [i / 7 for i in range(5000)]})
    src = tmp_path / "t.arrow"
    with pa.ipc.new_file(str(src), t.schema) as w:
        w.write_table(t)
    for kind in ("csv", "jsonl"):
        plain = tmp_path / f"p.{kind}"
        quiver("convert", src, plain)
        # by the name, as pandas infers it
        gz = tmp_path / f"o.{kind}.gz"
        quiver("convert", src, gz)
        assert gzip.decompress(gz.read_bytes()) == plain.read_bytes()
        # explicit, whatever the name; read back by its magic bytes
        zs = tmp_path / f"z.{kind}"
        quiver("convert", src, zs, "--compression=zstd:7")
        with pa.CompressedInputStream(pa.OSFile(str(zs)), "zstd") as f:
            assert f.read() == plain.read_bytes()
        quiver("convert", zs, tmp_path / "back.arrow")
        back = pa.ipc.open_file(str(tmp_path / "back.arrow")).read_all()
        assert back.column("i").to_pylist() == t.column("i").to_pylist()
        nc = tmp_path / f"n.{kind}.gz"
        quiver("convert", src, nc, "--compression=none")
        assert nc.read_bytes() == plain.read_bytes()
    for bad in ("gzip:10", "lz4", "zstd:0", "brotli"):
        r = quiver("convert", src, tmp_path / "b.csv", f"--compression={bad}", check=False)
        assert r.returncode == 2, (bad, r.stderr)
