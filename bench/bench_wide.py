"""bench_wide.py CLI DATA_DIR — open cost in the number of columns, and
decompression that follows what is read (issue 11 items 3 and 4).

wide: files of N int8 columns (2 rows) with `huggingface` features
metadata for every column, N = 100k and 1M. Times `quiver info` (opens,
resolves the features, prints every column) and `quiver head -n 1
--decode-labels`, against pyarrow opening the same stream and reading its
batch (the anchor, same run). Linear open shows as a 1M/100k ratio near 10.

bomb: 8 ZSTD columns of 256 MiB each (~70 KB on disk). `quiver head -n 1`
wall time and peak RSS (getrusage of the child) against pyarrow reading
the batch's first row (it decompresses every column). Peak RSS of each
child is measured by GNU time (/usr/bin/time).
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa

cli, data = sys.argv[1], sys.argv[2]
os.makedirs(data, exist_ok=True)


def wide_file(n):
    path = os.path.join(data, f"wide-{n}.arrow")
    if os.path.exists(path):
        return path
    names = [f"c{i}" for i in range(n)]
    feats = {nm: {"dtype": "int8", "_type": "Value"} for nm in names}
    md = {b"huggingface": json.dumps({"info": {"features": feats}}).encode()}
    schema = pa.schema([pa.field(nm, pa.int8()) for nm in names], metadata=md)
    arr = pa.array([1, 2], pa.int8())
    with pa.OSFile(path + ".tmp", "wb") as f, pa.ipc.new_stream(f, schema) as w:
        w.write_batch(pa.RecordBatch.from_arrays([arr] * n, schema=schema))
    os.rename(path + ".tmp", path)
    return path


def bomb_file():
    path = os.path.join(data, "bomb-8x256m.arrow")
    if os.path.exists(path):
        return path
    arr = pa.array(np.zeros((256 << 20) // 8, dtype=np.int64))
    rb = pa.RecordBatch.from_arrays([arr] * 8, names=[f"c{i}" for i in range(8)])
    opts = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.OSFile(path + ".tmp", "wb") as f, pa.ipc.new_file(f, rb.schema, options=opts) as w:
        w.write_batch(rb)
    os.rename(path + ".tmp", path)
    return path


def run(*args):
    """Wall seconds and peak RSS (MB) of one child process. The RSS comes
    from GNU time run as the child (a child forked from this large Python
    process would inherit its high-water mark); None without it."""
    timer = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
    out = os.path.join(data, "time.out")
    cmd = ([timer, "-f", "%M", "-o", out] if timer else []) + list(args)
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    assert r.returncode == 0, r.stderr.decode()
    rss = None
    if timer:
        with open(out) as f:
            rss = int(f.read().split()[-1]) / 1024
    return dt, rss


def best(fn, reps=3):
    return min(fn() for _ in range(reps))


def py_open(path):
    t = time.perf_counter()
    with pa.OSFile(path) as f:
        rd = pa.ipc.open_stream(f)
        rd.read_next_batch()
    return time.perf_counter() - t


res = {}
for n in (100_000, 1_000_000):
    p = wide_file(n)
    qi = best(lambda: run(cli, "info", p)[0])
    qh = best(lambda: run(cli, "head", "-n", "1", "--decode-labels", p)[0])
    pa_t = best(lambda: py_open(p))
    res[n] = (qi, qh, pa_t)
    print(f"wide {n:>9,} columns: quiver info {qi:.2f} s, head --decode-labels {qh:.2f} s; "
          f"pyarrow open + batch {pa_t:.2f} s -> info/pyarrow {qi / pa_t:.1f}x")
print(f"wide scaling 1M/100k: info {res[1_000_000][0] / res[100_000][0]:.1f}x, "
      f"head {res[1_000_000][1] / res[100_000][1]:.1f}x, pyarrow "
      f"{res[1_000_000][2] / res[100_000][2]:.1f}x (linear = 10)")

b = bomb_file()
qt, qrss = run(cli, "head", "-n", "1", b)
code = ("import pyarrow as pa,sys; r=pa.ipc.open_file(sys.argv[1]); "
        "print(r.get_batch(0).slice(0,1).to_pylist())")
pt, prss = run(sys.executable, "-c", code, b)
mb = lambda v: "n/a" if v is None else f"{v:.0f} MB"  # noqa: E731
print(f"bomb 8 x 256 MiB zstd: quiver head -n 1 {qt * 1e3:.0f} ms, peak RSS {mb(qrss)}; "
      f"pyarrow first row {pt * 1e3:.0f} ms, peak RSS {mb(prss)} "
      f"-> time ratio {qt / pt:.3f}")
