"""bench_groupby_big.py — group-by beyond memory (issue 14): `quiver groupby`
under --memory-limit on a db-benchmark G1 dataset larger than the budget,
against DuckDB (memory_limit set) reading the same files, in one run.
Never in CI.

Data: G1_<N>_1e2_0_0 after db-benchmark's _data/groupby-datagen.R (as
bench_groupby.py: id1/id2 "id%03d" of K=100 levels, id3 "id%010d" of N/K
levels, id4/id5 1..K, id6 1..N/K, v1 1..5, v2 1..15, v3 uniform [0, 100)),
N chosen so the files hold about --gb GB (62 bytes a row), generated with
numpy in chunks of --chunk rows and written as uncompressed Arrow IPC files
of --file-rows rows each (never all in memory) forming a save_to_disk
directory, cached in --dir.

Each question runs as a child process (its CPU time from wait4, its peak
RSS from /usr/bin/time): `quiver groupby DIR/files --memory-limit=BUDGET
--temp-directory=DIR/tmp -o OUT`, and DuckDB (SET memory_limit=BUDGET,
threads=2, temp_directory in DIR) over a pyarrow dataset of the same files.
Answers are checked as db-benchmark's `chk`: the number of groups and the
sum of every measure column, equal to 1e-9 relative. Prints time (wall,
user+sys), peak RSS, whether quiver spilled, and the ratios.

  python bench/bench_groupby_big.py --gb 2 --budget 1G [--questions q3,q6]
  python bench/bench_groupby_big.py --gb 8 --budget 1G --delete
  # the issue's run, on an idle machine with 60 GB of free disk:
  python bench/bench_groupby_big.py --gb 50 --budget 4G --questions q1,q3,q6 --delete

q10 (about N groups) returns a result as large as the input: its output is
an in-memory table, so only run it at small --gb.
Needs QV_BUILD (default build/) for the CLI, and duckdb, pyarrow, numpy.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("QV_BUILD", os.path.join(REPO, "build"))
CLI = os.path.join(BUILD, "quiver")
K = 100
ROW_BYTES = 62

QUESTIONS = {
    "q1": (["id1"], ["sum(v1) AS v1"], "sum(v1) AS v1"),
    "q3": (["id3"], ["sum(v1) AS v1", "mean(v3) AS v3"], "sum(v1) AS v1, avg(v3) AS v3"),
    "q5": (["id6"], ["sum(v1) AS v1", "sum(v2) AS v2", "sum(v3) AS v3"],
           "sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3"),
    "q6": (["id4", "id5"], ["median(v3) AS median_v3", "stddev(v3) AS sd_v3"],
           "median(v3) AS median_v3, stddev(v3) AS sd_v3"),
    "q10": (["id1", "id2", "id3", "id4", "id5", "id6"], ["sum(v3) AS v3", "count(*) AS count"],
            "sum(v3) AS v3, count(*) AS count"),
}


def parse_size(s):
    s = s.strip().upper().rstrip("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def generate(dirpath, n, chunk, file_rows):
    """Write G1 data of n rows as files of file_rows rows, chunk rows at a
    time; returns the file paths. A complete set is kept between runs."""
    done = os.path.join(dirpath, "DONE")
    if os.path.exists(done):
        with open(done) as f:
            if json.load(f).get("rows") == n:
                return sorted(glob.glob(os.path.join(dirpath, "data-*.arrow")))
    for p in glob.glob(os.path.join(dirpath, "data-*.arrow")):
        os.unlink(p)
    os.makedirs(dirpath, exist_ok=True)
    rng = np.random.default_rng(108)
    nk = max(n // K, 1)
    small = pa.array(["id%03d" % (i + 1) for i in range(K)], pa.string())
    big = pa.array(["id%010d" % (i + 1) for i in range(nk)], pa.string())
    schema = pa.schema([("id1", pa.string()), ("id2", pa.string()), ("id3", pa.string()),
                        ("id4", pa.int32()), ("id5", pa.int32()), ("id6", pa.int32()),
                        ("v1", pa.int32()), ("v2", pa.int32()), ("v3", pa.float64())])
    n_files = (n + file_rows - 1) // file_rows
    paths, written, w, in_file = [], 0, None, 0
    t0 = time.time()
    while written < n:
        m = min(chunk, n - written)
        b = pa.record_batch([
            small.take(pa.array(rng.integers(0, K, m))),
            small.take(pa.array(rng.integers(0, K, m))),
            big.take(pa.array(rng.integers(0, nk, m))),
            pa.array(rng.integers(1, K + 1, m).astype(np.int32)),
            pa.array(rng.integers(1, K + 1, m).astype(np.int32)),
            pa.array(rng.integers(1, nk + 1, m).astype(np.int32)),
            pa.array(rng.integers(1, 6, m).astype(np.int32)),
            pa.array(rng.integers(1, 16, m).astype(np.int32)),
            pa.array(np.round(rng.uniform(0, 100, m), 6)),
        ], schema=schema)
        if w is None:
            path = os.path.join(dirpath, "data-%05d-of-%05d.arrow" % (len(paths), n_files))
            paths.append(path)
            w = ipc.new_file(path, schema)
            in_file = 0
        w.write_batch(b)
        written += m
        in_file += m
        if in_file >= file_rows or written == n:
            w.close()
            w = None
        print(f"  generated {written:,} / {n:,} rows ({time.time() - t0:.0f} s)", end="\r",
              file=sys.stderr, flush=True)
    print(file=sys.stderr)
    # a save_to_disk directory (datasets' state.json and dataset_info.json)
    with open(os.path.join(dirpath, "state.json"), "w") as f:
        json.dump({"_data_files": [{"filename": os.path.basename(p)} for p in paths],
                   "_fingerprint": "g1-%d" % n, "_format_columns": None, "_format_kwargs": {},
                   "_format_type": None, "_output_all_columns": False, "_split": None}, f)
    with open(os.path.join(dirpath, "dataset_info.json"), "w") as f:
        json.dump({}, f)
    with open(done, "w") as f:
        json.dump({"rows": n}, f)
    return paths


def timed(argv):
    """Run argv as a child; wall, cpu (user+sys) from wait4, peak RSS from
    /usr/bin/time (its own child's: the RSS a forked child inherits from
    this process before exec would otherwise count in ru_maxrss)."""
    t0 = time.perf_counter()
    argv = ["/usr/bin/time", "-f", "QV-MAXRSS-KB %M"] + argv
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # read the pipes while waiting, then wait4 for the child's own rusage
    bufs = {}

    def drain(name, f):
        bufs[name] = f.read()

    ts = [threading.Thread(target=drain, args=("out", p.stdout)),
          threading.Thread(target=drain, args=("err", p.stderr))]
    for t in ts:
        t.start()
    _, status, ru = os.wait4(p.pid, 0)
    for t in ts:
        t.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    err = bufs.get("err", b"")
    rss, lines = 0, []
    for line in err.decode(errors="replace").splitlines():
        if line.startswith("QV-MAXRSS-KB "):
            rss = int(line.split()[1]) * 1024
        else:
            lines.append(line)
    return (p.returncode, wall, ru.ru_utime + ru.ru_stime, rss, bufs.get("out", b""),
            "\n".join(lines).encode())


DUCK = r"""
import json, sys, duckdb, pyarrow.dataset as ds
files, select, keys, limit, tmp = json.loads(sys.argv[1])
con = duckdb.connect()
con.execute(f"SET memory_limit='{limit}'")
con.execute("SET threads=2")
con.execute("SET enable_progress_bar=false")
con.execute(f"SET temp_directory='{tmp}'")
con.execute("SET preserve_insertion_order=false")
x = ds.dataset(files, format="arrow")
con.register("x", x)
t = con.sql(f"SELECT {', '.join(keys)}, {select} FROM x GROUP BY {', '.join(keys)}").to_arrow_table()
chk = [t.num_rows] + [float(sum(v for v in t.column(c).to_pylist() if v is not None))
                      for c in t.column_names[len(keys):]]
print(json.dumps(chk))
"""


def quiver_chk(out_dir, nk):
    files = sorted(glob.glob(os.path.join(out_dir, "data-*.arrow")))
    tables = [ipc.open_stream(f).read_all() for f in files]
    t = pa.concat_tables(tables)
    chk = [t.num_rows]
    for c in t.column_names[nk:]:
        s = 0.0
        for chunk in t.column(c).chunks:
            v = chunk.to_numpy(zero_copy_only=False)
            s += float(np.nansum(v.astype(np.float64)))
        chk.append(s)
    return chk


def same_chk(a, b):
    if len(a) != len(b) or a[0] != b[0]:
        return False
    return all(x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y)) for x, y in zip(a[1:], b[1:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=2.0, help="size of the data in GB (default 2)")
    ap.add_argument("--budget", default="1G", help="memory limit of both engines (default 1G)")
    ap.add_argument("--questions", default="q3,q6", help="among q1,q3,q5,q6,q10 (default q3,q6)")
    ap.add_argument("--dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                  "qv-bench-groupby-big"))
    ap.add_argument("--chunk", type=int, default=2_000_000, help="rows generated at a time")
    ap.add_argument("--file-rows", type=int, default=16_000_000, help="rows per data file")
    ap.add_argument("--no-duckdb", action="store_true", help="skip the DuckDB anchor")
    ap.add_argument("--delete", action="store_true", help="delete the data afterwards")
    a = ap.parse_args()
    n = int(a.gb * 1e9 / ROW_BYTES)
    budget = parse_size(a.budget)
    data = os.path.join(a.dir, f"g1-{n}")
    print(f"G1_{n:.2e}_1e2_0_0 (~{a.gb:g} GB) in {data}; budget {a.budget}; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    files = generate(data, n, a.chunk, a.file_rows)
    size = sum(os.path.getsize(f) for f in files)
    print(f"data: {len(files)} files, {size / 1e9:.2f} GB", flush=True)
    tmp = os.path.join(a.dir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    print(f"{'q':4} {'engine':7} {'wall s':>8} {'cpu s':>8} {'peak RSS':>10} {'groups':>10}  notes")
    ok = True
    for q in a.questions.split(","):
        keys, aggs, select = QUESTIONS[q]
        out = os.path.join(a.dir, "out-" + q)
        shutil.rmtree(out, ignore_errors=True)
        argv = [CLI, "groupby", data, "--by=" + ",".join(keys)] + ["--agg=" + x for x in aggs]
        argv += [f"--memory-limit={budget}", f"--temp-directory={tmp}", "-o", out]
        rc, wall, cpu, rss, so, se = timed(argv)
        if rc != 0:
            print(f"{q}: quiver failed ({rc}): {se.decode()[-2000:]}")
            ok = False
            continue
        spilled = [line for line in se.decode().splitlines() if "spilled" in line]
        qchk = quiver_chk(out, len(keys))
        print(f"{q:4} {'quiver':7} {wall:8.1f} {cpu:8.1f} {rss / 2**20:8.0f} MB {qchk[0]:>10,}  "
              f"{spilled[0].split(': ', 1)[1] if spilled else 'in memory'}", flush=True)
        shutil.rmtree(out, ignore_errors=True)
        if os.listdir(tmp):
            print(f"{q}: quiver left files in {tmp}: {os.listdir(tmp)}")
            ok = False
        if a.no_duckdb:
            continue
        arg = json.dumps([files, select, keys, str(budget) + "B", tmp])
        rc, wall, cpu, rss, so, se = timed([sys.executable, "-c", DUCK, arg])
        if rc != 0:
            print(f"{q}: duckdb failed ({rc}): {se.decode()[-2000:]}")
            continue
        dchk = json.loads(so.decode().strip().splitlines()[-1])
        print(f"{q:4} {'duckdb':7} {wall:8.1f} {cpu:8.1f} {rss / 2**20:8.0f} MB {dchk[0]:>10,}  "
              f"chk {'equal' if same_chk(qchk, dchk) else 'DIFFERENT'}", flush=True)
        if not same_chk(qchk, dchk):
            print(f"  quiver {qchk}\n  duckdb {dchk}")
            ok = False
    shutil.rmtree(tmp, ignore_errors=True)
    if a.delete:
        shutil.rmtree(data, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
