"""bench/bench_text.py [--mb N] [--dir D] [--quiver PATH] [--skip-datasets]

CSV and JSON Lines to an Arrow IPC file: `quiver convert` vs pyarrow
(pyarrow.csv.read_csv / pyarrow.json.read_json + IPC file write) vs
datasets.load_dataset (to its cache Arrow file), in one run, on generated
files of about N MB each (default 200; int64, double, string, bool, date
and a list column for JSON). Prints wall seconds (best of 2) and CPU
seconds (all threads, mean of 2), and the ratios anchor/quiver (>1 means
quiver is faster). On a shared machine the CPU ratio is the steadier one.
Never in CI.
"""
import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pjson


def gen_csv(path, mb):
    rng = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta", 'quote"d', "comma,here", "ünïcode"]
    with open(path, "w") as f:
        f.write("id,x,name,flag,day\n")
        i = 0
        while f.tell() < mb << 20:
            lines = []
            for _ in range(10000):
                w = rng.choice(words)
                w = '"' + w.replace('"', '""') + '"' if ('"' in w or "," in w) else w
                lines.append(f"{i},{rng.uniform(-1e6, 1e6):.6f},{w}{i % 97},"
                             f"{'true' if i % 3 else 'false'},2020-01-{i % 28 + 1:02d}\n")
                i += 1
            f.write("".join(lines))


def gen_jsonl(path, mb):
    rng = random.Random(2)
    with open(path, "w") as f:
        i = 0
        while f.tell() < mb << 20:
            lines = []
            for _ in range(10000):
                lines.append(json.dumps({"id": i, "x": rng.uniform(-1e6, 1e6),
                                         "name": f"w{rng.randint(0, 10**6)}",
                                         "flag": i % 3 == 0,
                                         "tags": [rng.randint(0, 9) for _ in range(i % 4)]}) + "\n")
                i += 1
            f.write("".join(lines))


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def pyarrow_to_ipc(read, src, dst):
    t = read(src)
    with pa.ipc.new_file(dst, t.schema) as w:
        w.write_table(t)
    return t.num_rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--quiver", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                     "quiver"))
    ap.add_argument("--skip-datasets", action="store_true")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="quiver-bench-text-")
    os.makedirs(d, exist_ok=True)
    try:
        for kind, gen, read, builder in (("csv", gen_csv, pcsv.read_csv, "csv"),
                                         ("jsonl", gen_jsonl, pjson.read_json, "json")):
            src = os.path.join(d, f"data.{kind}")
            if not os.path.exists(src) or os.path.getsize(src) < (a.mb << 20):
                gen(src, a.mb)
            size = os.path.getsize(src) / 1e6
            out_q = os.path.join(d, f"q-{kind}.arrow")
            out_p = os.path.join(d, f"p-{kind}.arrow")
            subprocess.run([a.quiver, "convert", src, out_q], check=True)  # warm the page cache
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            tq = min(timed(lambda: subprocess.run([a.quiver, "convert", src, out_q], check=True))
                     for _ in range(2))
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu_q = (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) / 2
            c0 = time.process_time()
            tp = min(timed(lambda: pyarrow_to_ipc(read, src, out_p)) for _ in range(2))
            cpu_p = (time.process_time() - c0) / 2
            q = pa.ipc.open_file(out_q).read_all()
            p = pa.ipc.open_file(out_p).read_all()
            assert q.num_rows == p.num_rows and q.schema == p.schema, (q.schema, p.schema)
            line = (f"{kind}: {size:.0f} MB, {q.num_rows} rows: quiver {tq:.2f} s "
                    f"(CPU {cpu_q:.2f} s; the output is fsync'ed, pyarrow's is not), "
                    f"pyarrow {tp:.2f} s (CPU {cpu_p:.2f} s): quiver {tp / tq:.2f}x pyarrow "
                    f"(CPU {cpu_p / cpu_q:.2f}x)")
            if not a.skip_datasets:
                os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
                os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
                import datasets
                cache = os.path.join(d, f"hf-cache-{kind}")
                shutil.rmtree(cache, ignore_errors=True)
                td = timed(lambda: datasets.load_dataset(builder, data_files=src,
                                                         cache_dir=cache))
                line += f", datasets {td:.2f} s (quiver {td / tq:.2f}x datasets)"
            print(line, flush=True)
    finally:
        if a.dir is None:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
