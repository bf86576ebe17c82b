"""bench_parquet.py [--mb N] [--dir DIR] [--reps R] — Parquet to Arrow:
quiver (`quiver convert IN.parquet OUT.arrow`: read on all cores + IPC
file write) vs pyarrow (pq.read_table + pa.ipc file write, the same work)
vs `datasets.load_dataset("parquet")` (what Hugging Face users run: read,
convert, write the Arrow cache). One snappy Parquet file of int64, double,
string and list<int64> columns, about N MB (default 200) in row groups of
1M rows, generated once under DIR (default build/bench-data). Every tool
runs R times (default 3), the tools alternating run by run, best wall and
CPU time kept (CPU: user + system of every thread, the steadier figure on
a shared machine); ratios printed against pyarrow and datasets measured in
the same run. `--baseline CLI` adds another quiver binary (say, the main
branch's build) to the same alternation, for before/after figures. Prints
the load average. Never in CI.
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)


def make(path, mb):
    rows = max(1000, int(mb * 1e6 / 48))  # ~48 bytes per row once compressed
    rng = np.random.default_rng(7)
    w = None
    chunk = 1_000_000
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        ints = rng.integers(-2**40, 2**40, n)
        dbl = rng.standard_normal(n)
        words = np.array([f"w{i:05d}" for i in range(5000)])
        strs = pa.array(words[rng.integers(0, 5000, n)])
        lens = rng.integers(0, 4, n)
        offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        lst = pa.ListArray.from_arrays(pa.array(offs), pa.array(rng.integers(0, 1000, offs[-1])))
        t = pa.table({"i": ints, "d": dbl, "s": strs, "l": lst})
        if w is None:
            w = pq.ParquetWriter(path, t.schema, compression="snappy")
        w.write_table(t, row_group_size=chunk)
    w.close()


def cpu():
    """CPU seconds (user + system) of this process and its waited children."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def best(fns, reps):
    """Best wall time and best CPU time (user + system, all threads) of
    `reps` runs of each function, the functions alternating run by run (so
    a change of load hits them alike): on a loaded machine the CPU time is
    the steadier figure."""
    walls = [[] for _ in fns]
    cpus = [[] for _ in fns]
    for _ in range(reps):
        for k, fn in enumerate(fns):
            c0, t0 = cpu(), time.perf_counter()
            fn()
            walls[k].append(time.perf_counter() - t0)
            cpus[k].append(cpu() - c0)
    return [(min(w), min(c)) for w, c in zip(walls, cpus)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--dir", default=os.path.join(TOP, "build", "bench-data"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cli", default=os.path.join(TOP, "build", "quiver"))
    ap.add_argument("--no-datasets", action="store_true")
    ap.add_argument("--baseline", default=None, help="another quiver binary, measured alike")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    src = os.path.join(a.dir, f"bench-{int(a.mb)}mb.parquet")
    if not os.path.exists(src):
        make(src, a.mb)
    size = os.path.getsize(src)
    rows = pq.ParquetFile(src).metadata.num_rows
    print(f"== Parquet -> Arrow: {src} ({size / 1e6:.0f} MB, {rows} rows, snappy; "
          f"int64, double, string, list<int64>), best of {a.reps}")
    tmp = tempfile.mkdtemp(prefix="qv-bench-pq-", dir=a.dir)
    try:
        out_q = os.path.join(tmp, "q.arrow")
        out_p = os.path.join(tmp, "p.arrow")

        def run_quiver():
            subprocess.run([a.cli, "convert", src, out_q], check=True)

        def run_baseline():
            subprocess.run([a.baseline, "convert", src, out_q + ".base"], check=True)

        def run_pyarrow():
            t = pq.read_table(src)
            with pa.ipc.new_file(out_p, t.schema) as w:
                w.write_table(t)

        fns = [run_quiver, run_pyarrow]
        if not a.no_datasets:
            import datasets

            def run_datasets():
                cache = tempfile.mkdtemp(prefix="hf-", dir=tmp)
                datasets.load_dataset("parquet", data_files=src, split="train", cache_dir=cache)
                shutil.rmtree(cache, ignore_errors=True)

            fns.append(run_datasets)
        if a.baseline:
            fns.append(run_baseline)
        res = best(fns, a.reps)
        (tq, cq), (tp, cp) = res[0], res[1]
        # the outputs agree
        assert pa.ipc.open_file(out_q).read_all().equals(pa.ipc.open_file(out_p).read_all())
        print(f"quiver convert:                 {tq:8.3f} s wall {cq:8.3f} s cpu "
              f"({size / tq / 1e6:7.1f} MB/s)")
        print(f"pyarrow read_table + IPC write: {tp:8.3f} s wall {cp:8.3f} s cpu "
              f"({size / tp / 1e6:7.1f} MB/s)")
        print(f"ratio quiver vs pyarrow:        {tp / tq:8.2f}x wall, {cp / cq:.2f}x cpu "
              f"(goal >= 1.0)")
        if not a.no_datasets:
            td, cd = res[2]
            print(f"datasets.load_dataset(parquet): {td:8.3f} s wall {cd:8.3f} s cpu "
                  f"({size / td / 1e6:7.1f} MB/s)")
            print(f"ratio quiver vs datasets:       {td / tq:8.2f}x wall, {cd / cq:.2f}x cpu "
                  f"(goal >= 5.0)")
        if a.baseline:
            tb, cb = res[-1]
            print(f"baseline {a.baseline}: {tb:8.3f} s wall {cb:8.3f} s cpu")
            print(f"ratio quiver vs baseline:       {tb / tq:8.2f}x wall, {cb / cq:.2f}x cpu")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
