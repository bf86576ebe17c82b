"""bench_stream.py — the pyarrow anchors and the front ends of the stream
open benchmark (bench/run.sh section `stream`).

  gen PATH BATCHES BATCH_KB   write a stream of BATCHES record batches of
                              about BATCH_KB KiB each (int64, float64,
                              string columns; the same values shifted, so
                              it writes at disk speed)
  run PATH REPS CLI PYDIR     best of REPS, warm page cache: pyarrow
                              open_stream + first batch, pyarrow read_all
                              (memory-mapped, as datasets reads its files)
                              and its RSS growth; `quiver head -n 1` as a
                              process (wall time, exec included);
                              quiver.open (the extension, dataset layer)
                              first open into an empty index cache and
                              reopen from it. Prints one JSON object.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def gen(path, batches, batch_kb):
    rows = max(1, batch_kb * 1024 // 60)  # 8 + 8 + 4 + ~40 bytes a row
    rng = np.random.default_rng(7)
    words = np.array([("w%06d" % i) * 6 for i in range(4096)])
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
    xs = pa.array(rng.random(rows))
    ss = pa.array(words[rng.integers(0, len(words), rows)], pa.string())
    tmp = path + ".tmp"
    with pa.OSFile(tmp, "wb") as f, pa.ipc.new_stream(f, schema) as w:
        for b in range(batches):
            ids = pa.array(np.arange(b * rows, (b + 1) * rows, dtype=np.int64))
            w.write_batch(pa.record_batch([ids, xs, ss], schema=schema))
    os.replace(tmp, path)


def best(fn, reps):
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        v = fn()
        t = time.perf_counter() - t0
        if out is None or t < out[0]:
            out = (t, v)
    return out


def run(path, reps, cli, pydir):
    res = {}

    def first_batch():
        with pa.ipc.open_stream(pa.memory_map(path)) as r:
            return r.read_next_batch().num_rows

    res["pa_first_batch_s"], _ = best(first_batch, reps)

    def read_all():
        before = rss_kb()
        with pa.ipc.open_stream(pa.memory_map(path)) as r:
            t = r.read_all()
        grown = rss_kb() - before
        n = t.num_rows
        del t
        return (n, grown)

    res["pa_read_all_s"], (res["rows"], res["pa_read_all_rss_kb"]) = best(read_all, reps)

    xdg = tempfile.mkdtemp(prefix="qv-bench-stream-")
    env = dict(os.environ, XDG_CACHE_HOME=xdg)
    env.pop("QV_INDEX_CACHE", None)

    def head():
        return subprocess.run([cli, "head", path, "-n", "1"], env=env, check=True,
                              capture_output=True).stdout

    res["cli_head_s"], out = best(head, max(reps, 20))  # a process: noisy
    res["cli_head_row"] = json.loads(out)
    os.environ["XDG_CACHE_HOME"] = xdg
    os.environ.pop("QV_INDEX_CACHE", None)
    sys.path.insert(0, pydir)
    import quiver

    def reopen():
        before = rss_kb()
        ds = quiver.open(path)
        n = len(ds)
        grown = rss_kb() - before
        del ds
        return (n, grown)

    def qopen():  # into an empty index cache
        shutil.rmtree(os.path.join(xdg, "quiver"), ignore_errors=True)
        return reopen()

    res["py_first_open_s"], (n1, res["py_first_open_rss_kb"]) = best(qopen, reps)
    res["py_reopen_s"], (n2, res["py_reopen_rss_kb"]) = best(reopen, max(reps, 10))
    cpu = []
    for _ in range(max(reps, 10)):
        c0 = time.thread_time()
        reopen()
        cpu.append(time.thread_time() - c0)
    res["py_reopen_cpu_s"] = min(cpu)
    assert n1 == n2 == res["rows"], (n1, n2, res["rows"])
    shutil.rmtree(xdg, ignore_errors=True)
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        run(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
