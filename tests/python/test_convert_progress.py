"""`quiver convert`'s progress bar (tools/quiver/progress.c).

On a terminal (a pty here) a conversion that takes more than a moment
shows a bar on stderr, redrawn at most ten times a second, ending in a
final 100% line; a quick one shows nothing; a pipe shows nothing (unless
QV_PROGRESS=1 forces the bar, which the tests use to check its content).
"""
import os
import pty
import select
import subprocess
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from qvpaths import CLI, GOLDEN, require

SMALL = os.path.join(GOLDEN, "cpp-21.0.0", "generated_primitive.arrow_file")
SMALL_STREAM = os.path.join(GOLDEN, "cpp-21.0.0", "generated_primitive.stream")


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """~10 MB in 30 batches; slow enough to convert with zstd:19."""
    n = 300_000
    rng = np.random.default_rng(1)
    t = pa.table({"i": np.arange(n), "f": rng.random(n),
                  "s": pa.array([f"row {x} {x * 7919 % 1000}" for x in range(n)])})
    path = str(tmp_path_factory.mktemp("progress") / "big.arrow")
    with ipc.new_file(path, t.schema) as w:
        w.write_table(t, max_chunksize=10_000)
    return path


def _run_on_pty(args, env=None):
    """Run with stderr on a pty; returns (exit code, stderr bytes, seconds)."""
    master, slave = pty.openpty()
    t0 = time.monotonic()
    p = subprocess.Popen(args, stderr=slave, stdout=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], 0.05)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the pty
                chunk = b""
            if not chunk and p.poll() is not None:
                break
            out += chunk
        elif p.poll() is not None:
            break
    p.wait()
    os.close(master)
    return p.returncode, out, time.monotonic() - t0


def _env(**kw):
    env = {k: v for k, v in os.environ.items() if k != "QV_PROGRESS"}
    env.update(kw)
    return env


def test_pipe_shows_nothing(big, tmp_path):
    r = subprocess.run([require(CLI), "convert", big, str(tmp_path / "o.arrow"),
                        "--compression=zstd:15", "--batch-size=10000"],
                       capture_output=True, env=_env())
    assert r.returncode == 0
    assert r.stderr == b""


def test_forced_bar_content(tmp_path):
    r = subprocess.run([require(CLI), "convert", SMALL, str(tmp_path / "o.arrow")],
                       capture_output=True, env=_env(QV_PROGRESS="1"))
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert err.startswith("\rconvert "), err
    assert err.endswith("\n")
    final = err.rstrip("\n").split("\r")[-1].rstrip()
    size = os.path.getsize(SMALL)
    assert final.startswith("convert 100% [========================] 37 rows"), final
    assert "/s  in " in final
    # unknown total (a stream on stdin): rows, bytes and rate, no percentage
    with open(SMALL_STREAM, "rb") as f:
        r = subprocess.run([require(CLI), "convert", "-", str(tmp_path / "o2.arrow")],
                           stdin=f, capture_output=True, env=_env(QV_PROGRESS="1"))
    assert r.returncode == 0, r.stderr
    final = r.stderr.decode().rstrip("\n").split("\r")[-1]
    assert final.startswith("convert 37 rows  "), final
    assert "%" not in final and size > 0
    # QV_PROGRESS=0: never
    r = subprocess.run([require(CLI), "convert", SMALL, str(tmp_path / "o3.arrow")],
                       capture_output=True, env=_env(QV_PROGRESS="0"))
    assert r.stderr == b""


def test_failure_erases_the_bar(big, tmp_path):
    """A stream cut short fails after some batches: the bar drawn so far is
    erased, and the error message stands alone on its line."""
    table = ipc.open_file(big).read_all()
    cut = tmp_path / "cut.stream"
    with ipc.new_stream(str(cut), table.schema) as w:
        w.write_table(table, max_chunksize=10_000)
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) * 9 // 10])
    with open(cut, "rb") as f:  # from stdin: read (and fail) batch by batch
        r = subprocess.run([require(CLI), "convert", "-", str(tmp_path / "o.arrow")],
                           stdin=f, capture_output=True, env=_env(QV_PROGRESS="1"))
    assert r.returncode == 1
    err = r.stderr.decode()
    assert err.startswith("\rconvert "), err  # a bar was drawn
    last = err.split("\r")[-1]
    assert last.startswith("quiver: ") and last.endswith("\n"), repr(last)
    assert err.split("\r")[-2].strip() == ""  # the erasing blanks
    assert not (tmp_path / "o.arrow").exists()


def test_terminal_quick_shows_nothing(tmp_path):
    code, err, secs = _run_on_pty([require(CLI), "convert", SMALL, str(tmp_path / "o.arrow")],
                                  env=_env())
    assert code == 0
    if secs < 0.4:  # (a very loaded machine may take longer)
        assert err == b""


def test_terminal_slow_shows_bar(big, tmp_path):
    code, err, secs = _run_on_pty([require(CLI), "convert", big, str(tmp_path / "o.arrow"),
                                   "--compression=zstd:19", "--batch-size=10000"], env=_env())
    assert code == 0
    if secs < 0.8:
        pytest.skip(f"conversion took only {secs:.2f}s: too fast to need a bar")
    text = err.decode()
    draws = text.count("\r")
    assert draws >= 2, text
    assert draws <= secs * 10 + 3, f"{draws} redraws in {secs:.2f}s"
    final = text.rstrip("\r\n").split("\r")[-1]
    assert final.startswith("convert 100% ["), final
    assert "300,000 rows" in final
    assert text.endswith("\n")
