"""bench_parquet_write.py [--mb=200] [--runs=3] [--dir=DIR] — Parquet write
speed: quiver vs pyarrow (issue 15; never in CI).

Generates a table of about --mb MB in memory (int64, double, string of
8-40 chars, list<int64> of 0-8 items; a few percent nulls), written once as
an uncompressed Arrow IPC file. Then, alternately, best of --runs:
  - quiver:  `quiver convert in.arrow out.parquet --compression=snappy`
             (maps the IPC file, writes Parquet, fsyncs: the whole command
             timed), with the default threads (one per CPU) and with
             --threads=1 (pyarrow's write_table encodes on one thread);
  - pyarrow: pyarrow.ipc.open_file on a memory map + read_all +
             pyarrow.parquet.write_table(compression="snappy") (default
             options: dictionary on, 1 Mi rows per row group, page v1).
Wall time is the goal's measure; CPU time (user + system, all threads) is
printed too, as the shared benchmark VM's wall times vary with its load.
Both files are read back with pyarrow and compared (values equal). Prints
the times, the output sizes and the ratio pyarrow / quiver (goal >= 1.0x).
QV_BUILD selects the build (default <repo>/build).
"""
import argparse
import os
import resource
import shutil
import subprocess
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(os.environ.get("QV_BUILD", os.path.join(REPO, "build")), "quiver")


def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def make_table(mb):
    # about 8 + 8 + ~28 + ~40 bytes of values per row
    n = int(mb * 1e6 / 90)
    rng = np.random.default_rng(42)
    ints = pa.array(rng.integers(0, 1 << 40, n), mask=rng.random(n) < 0.02)
    dbl = pa.array(rng.normal(size=n), mask=rng.random(n) < 0.02)
    lens = rng.integers(8, 41, n)
    pool = np.frombuffer(rng.integers(97, 123, int(lens.sum()), dtype=np.uint8).tobytes(),
                         dtype=np.uint8)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    strs = pa.StringArray.from_buffers(n, pa.py_buffer(offs.tobytes()), pa.py_buffer(pool.tobytes()))
    llens = rng.integers(0, 9, n)
    loffs = np.concatenate([[0], np.cumsum(llens)]).astype(np.int32)
    items = pa.array(rng.integers(0, 1000, int(llens.sum())))
    lists = pa.ListArray.from_arrays(pa.array(loffs), items)
    return pa.table({"id": ints, "x": dbl, "text": strs, "tags": lists})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="bench-pqw-", dir=args.dir)
    try:
        t = make_table(args.mb)
        src = os.path.join(d, "in.arrow")
        with ipc.new_file(src, t.schema) as w:
            for b in t.to_batches(max_chunksize=65536):
                w.write_batch(b)
        size_mb = os.path.getsize(src) / 1e6
        print(f"table: {t.num_rows} rows, IPC file {size_mb:.0f} MB")
        del t
        q_out, p_out = os.path.join(d, "q.parquet"), os.path.join(d, "p.parquet")
        best_q = best_p = cpu_q = cpu_p = best_1 = cpu_1 = float("inf")
        for _ in range(args.runs):
            c0, t0 = cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run([CLI, "convert", src, q_out, "--compression=snappy"], check=True)
            best_q = min(best_q, time.perf_counter() - t0)
            cpu_q = min(cpu_q, cpu(resource.RUSAGE_CHILDREN) - c0)
            c0, t0 = cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run([CLI, "convert", src, q_out, "--compression=snappy", "--threads=1"],
                           check=True)
            best_1 = min(best_1, time.perf_counter() - t0)
            cpu_1 = min(cpu_1, cpu(resource.RUSAGE_CHILDREN) - c0)
            c0, t0 = cpu(resource.RUSAGE_SELF), time.perf_counter()
            with pa.memory_map(src) as f:
                tab = ipc.open_file(f).read_all()
                pq.write_table(tab, p_out, compression="snappy")
            del tab
            best_p = min(best_p, time.perf_counter() - t0)
            cpu_p = min(cpu_p, cpu(resource.RUSAGE_SELF) - c0)
        a, b = pq.read_table(q_out), pq.read_table(p_out)
        assert a.equals(b), "quiver's and pyarrow's files differ"
        print(f"quiver  convert -> parquet (snappy): {best_q:.3f} s wall, {cpu_q:.3f} s CPU "
              f"({os.path.getsize(q_out) / 1e6:.0f} MB, fsync'ed)")
        print(f"quiver  --threads=1:                 {best_1:.3f} s wall, {cpu_1:.3f} s CPU")
        print(f"pyarrow write_table (snappy):        {best_p:.3f} s wall, {cpu_p:.3f} s CPU "
              f"({os.path.getsize(p_out) / 1e6:.0f} MB)")
        print(f"ratio pyarrow/quiver: {best_p / best_q:.2f}x wall (goal >= 1.0x), "
              f"{cpu_p / cpu_q:.2f}x CPU; one thread: {best_p / best_1:.2f}x wall, "
              f"{cpu_p / cpu_1:.2f}x CPU")
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
