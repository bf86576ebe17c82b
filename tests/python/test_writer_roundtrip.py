"""Oracle test of quiver's IPC writer against pyarrow.

For every golden integration file (<producer>/*.arrow_file), `quiver
convert` rewrites it as a stream and as a file with no compression, LZ4 and
ZSTD (and small batches, so sliced writes are exercised); pyarrow must read
each output as a table equal to its own read of the golden file: schema
with schema and field metadata, and values. `quiver integration
--mode=JSON_TO_ARROW` of every golden JSON must read in pyarrow equal to
the golden .arrow_file of the same case. Cases pyarrow itself cannot read
are skipped with pyarrow's error as the reason.

Environment: QV_BUILD (build directory holding the `quiver` CLI, default
<repo>/build), QV_SHARED (default <repo>/../shared).
"""
import glob
import os
import subprocess

import pytest

import pyarrow as pa
import pyarrow.ipc as ipc

from qvpaths import BUILD, CLI, GOLDEN, LIB, SHARED, require  # noqa: F401

GOLDEN_FILES = sorted(glob.glob(os.path.join(GOLDEN, "*", "*.arrow_file")))
GOLDEN_JSON = sorted(glob.glob(os.path.join(GOLDEN, "*", "*.json.gz")))


def _case_id(path):
    return os.path.relpath(path, GOLDEN)


def _read_any(path):
    """pyarrow's read of an IPC file or stream."""
    with open(path, "rb") as f:
        head = f.read(6)
    if head == b"ARROW1":
        return ipc.open_file(path).read_all()
    return ipc.open_stream(path).read_all()


def _golden_table(path):
    try:
        return _read_any(path)
    except Exception as e:  # noqa: BLE001 — pyarrow's own limits
        pytest.skip(f"pyarrow cannot read the golden file: {e}")


def _assert_tables_equal(expected, actual):
    assert actual.schema.equals(expected.schema, check_metadata=True), (
        f"schema differs:\nexpected {expected.schema}\nfound {actual.schema}")
    assert actual.num_rows == expected.num_rows
    if actual.equals(expected):
        return
    # Dictionary columns may be split into batches with other dictionaries
    # (deltas, re-batching); compare logical values column by column.
    for name in expected.column_names:
        e, a = expected.column(name), actual.column(name)
        if e.equals(a):
            continue
        assert e.to_pylist() == a.to_pylist(), f"column {name!r} differs"


def _cli():
    return require(CLI)


@pytest.mark.parametrize("golden", GOLDEN_FILES, ids=_case_id)
@pytest.mark.parametrize("compression", ["none", "lz4", "zstd"])
@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_convert_roundtrip(golden, compression, fmt, tmp_path):
    cli = _cli()
    expected = _golden_table(golden)
    out = tmp_path / f"out.{fmt}"
    for batch_size in ("1000", "3"):
        r = subprocess.run([cli, "convert", golden, str(out), f"--format={fmt}",
                            f"--compression={compression}",
                            f"--batch-size={batch_size}"],
                           capture_output=True, text=True)
        if r.returncode != 0 and "cannot replace" in r.stderr and fmt == "file":
            # Dictionaries that change between batches (replacement) cannot
            # be expressed in the IPC file format: a clear error is right.
            assert r.returncode == 1
            assert not out.exists()
            continue
        assert r.returncode == 0, r.stderr
        actual = _read_any(str(out))
        _assert_tables_equal(expected, actual)
        assert [p for p in os.listdir(tmp_path) if "tmp-quiver" in p] == []
        out.unlink()


@pytest.mark.parametrize("golden", GOLDEN_FILES[:3], ids=_case_id)
def test_convert_stdout(golden, tmp_path):
    cli = _cli()
    expected = _golden_table(golden)
    r = subprocess.run([cli, "convert", golden, "-", "--compression=zstd:3"],
                       capture_output=True)
    assert r.returncode == 0, r.stderr
    actual = ipc.open_stream(pa.BufferReader(r.stdout)).read_all()
    _assert_tables_equal(expected, actual)


def test_convert_bad_usage_and_bad_input(tmp_path):
    cli = _cli()
    good = GOLDEN_FILES[0]
    out = tmp_path / "out.arrow"
    out.write_bytes(b"previous")
    for args in (["--compression=brotli"], ["--format=csv"], ["--batch-size=0"],
                 ["--bogus"]):
        r = subprocess.run([cli, "convert", good, str(out), *args],
                           capture_output=True, text=True)
        assert r.returncode == 2, (args, r.stderr)
    bad = tmp_path / "bad.arrow"
    bad.write_bytes(b"ARROW1\0\0garbage garbage garbage")
    r = subprocess.run([cli, "convert", str(bad), str(out)], capture_output=True,
                       text=True)
    assert r.returncode == 1
    assert out.read_bytes() == b"previous"
    assert sorted(os.listdir(tmp_path)) == ["bad.arrow", "out.arrow"]


def _json_case_golden(json_path):
    base = json_path[: -len(".json.gz")]
    return base + ".arrow_file"


@pytest.mark.parametrize("json_path", GOLDEN_JSON, ids=_case_id)
@pytest.mark.parametrize("fmt", ["file", "stream"])
def test_json_to_arrow(json_path, fmt, tmp_path):
    cli = _cli()
    golden = _json_case_golden(json_path)
    if not os.path.exists(golden):
        pytest.skip("no golden .arrow_file for this JSON")
    expected = _golden_table(golden)
    out = tmp_path / "out.arrow"
    args = [cli, "integration", "--mode=JSON_TO_ARROW", f"--json={json_path}",
            f"--arrow={out}"]
    if fmt == "stream":
        args.append("--format=stream")
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _assert_tables_equal(expected, _read_any(str(out)))


def test_crash_leaves_old_or_new(tmp_path):
    """SIGKILL `quiver convert` at >= 50 random points: the target is always
    either the previous file or the complete new one, and a leftover
    temporary is a hidden '.<name>.tmp-quiver-XXXXXX' (never '*.arrow')."""
    import random
    import signal
    import time

    cli = _cli()
    n = 400_000
    table = pa.table({
        "i": pa.array(range(n), pa.int64()),
        "f": pa.array([x * 0.5 for x in range(n)], pa.float64()),
        "s": pa.array([f"row {x}" for x in range(n)], pa.string()),
    })
    src = tmp_path / "src.arrow"
    with ipc.new_file(str(src), table.schema) as w:
        w.write_table(table, max_chunksize=50_000)
    target = tmp_path / "target.arrow"
    ref = tmp_path / "ref.arrow"
    args = ["--format=file", "--compression=zstd", "--batch-size=1000"]
    t0 = time.monotonic()
    subprocess.run([cli, "convert", str(src), str(ref), *args], check=True)
    full = time.monotonic() - t0
    new_bytes = ref.read_bytes()
    old_bytes = b"previous content"
    rng = random.Random(1234)
    outcomes = {"old": 0, "new": 0}
    for _ in range(60):
        target.write_bytes(old_bytes)
        p = subprocess.Popen([cli, "convert", str(src), str(target), *args])
        time.sleep(rng.uniform(0, full * 1.1))
        p.send_signal(signal.SIGKILL)
        p.wait()
        got = target.read_bytes()
        assert got in (old_bytes, new_bytes)
        outcomes["old" if got == old_bytes else "new"] += 1
        for name in os.listdir(tmp_path):
            if name in ("src.arrow", "ref.arrow", "target.arrow"):
                continue
            assert name.startswith(".target.arrow.tmp-quiver-"), name
            assert not name.endswith(".arrow")
            os.unlink(tmp_path / name)
    assert outcomes["old"] > 0  # some kills landed mid-write
    assert ipc.open_file(str(ref)).read_all().equals(table)


def test_golden_files_found():
    """The parametrised cases above exist only if the golden files are found."""
    assert len(GOLDEN_FILES) >= 60, f"golden files not found under {GOLDEN}"
    assert len(GOLDEN_JSON) >= 60, f"golden JSON not found under {GOLDEN}"
