"""bench_groupby.py — db-benchmark's group-by questions q1-q10: quiver vs
DuckDB vs Polars in one run (never in CI).

Data: G1_<N>_1e2_0_0 generated with numpy after db-benchmark's
_data/groupby-datagen.R (id1/id2 "id%03d" of K=100 levels, id3 "id%010d"
of N/K levels, id4/id5 ints 1..K, id6 ints 1..N/K, v1 1..5, v2 1..15, v3
uniform [0, 100) rounded to 6 digits), written once as an uncompressed
Arrow IPC file in 1M-row batches (cached in --dir). quiver groups the
mapped file (quiver.open(path).group_by(...).agg(...)); DuckDB runs the
db-benchmark SQL over a native table loaded from the same data (CREATE
TABLE ans AS ...); Polars runs the same questions over a DataFrame in
memory. Each question runs --runs times (db-benchmark: 2), the best time
is kept; answers are checked equal to DuckDB's as db-benchmark's `chk`
(row count and the sum of every measure column, to 1e-9 relative; q8's
lists summed). Prints per-question seconds, the sums and the ratios
quiver/DuckDB and quiver/Polars.

  python bench/bench_groupby.py [--rows 1e7] [--runs 2] [--dir /tmp/qv-bench-groupby]

Needs QV_BUILD (default build/) for the quiver package, and duckdb, polars,
pyarrow, numpy (tests/requirements.txt).
"""
import argparse
import math
import os
import resource
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("QV_BUILD", os.path.join(REPO, "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))

K = 100


def gen(n, path):
    rng = np.random.default_rng(108)
    nk = max(n // K, 1)

    def strs(fmt, levels):
        pool = pa.array([fmt % (i + 1) for i in range(levels)], pa.string())
        return pool.take(pa.array(rng.integers(0, levels, n)))

    t = pa.table({
        "id1": strs("id%03d", K), "id2": strs("id%03d", K), "id3": strs("id%010d", nk),
        "id4": pa.array(rng.integers(1, K + 1, n).astype(np.int32)),
        "id5": pa.array(rng.integers(1, K + 1, n).astype(np.int32)),
        "id6": pa.array(rng.integers(1, nk + 1, n).astype(np.int32)),
        "v1": pa.array(rng.integers(1, 6, n).astype(np.int32)),
        "v2": pa.array(rng.integers(1, 16, n).astype(np.int32)),
        "v3": pa.array(np.round(rng.uniform(0, 100, n), 6)),
    })
    tmp = path + ".tmp"
    with ipc.new_file(tmp, t.schema) as w:
        for b in t.to_batches(max_chunksize=1 << 20):
            w.write_batch(b)
    os.replace(tmp, path)


# (keys, quiver aggregates, DuckDB SQL, Polars aggregation builder)
def questions(pl):
    return [
        (["id1"], ["sum(v1) AS v1"],
         "SELECT id1, sum(v1) AS v1 FROM x GROUP BY id1",
         [pl.col("v1").sum()]),
        (["id1", "id2"], ["sum(v1) AS v1"],
         "SELECT id1, id2, sum(v1) AS v1 FROM x GROUP BY id1, id2",
         [pl.col("v1").sum()]),
        (["id3"], ["sum(v1) AS v1", "mean(v3) AS v3"],
         "SELECT id3, sum(v1) AS v1, avg(v3) AS v3 FROM x GROUP BY id3",
         [pl.col("v1").sum(), pl.col("v3").mean()]),
        (["id4"], ["mean(v1) AS v1", "mean(v2) AS v2", "mean(v3) AS v3"],
         "SELECT id4, avg(v1) AS v1, avg(v2) AS v2, avg(v3) AS v3 FROM x GROUP BY id4",
         [pl.col("v1").mean(), pl.col("v2").mean(), pl.col("v3").mean()]),
        (["id6"], ["sum(v1) AS v1", "sum(v2) AS v2", "sum(v3) AS v3"],
         "SELECT id6, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM x GROUP BY id6",
         [pl.col("v1").sum(), pl.col("v2").sum(), pl.col("v3").sum()]),
        (["id4", "id5"], ["median(v3) AS median_v3", "stddev(v3) AS sd_v3"],
         "SELECT id4, id5, median(v3) AS median_v3, stddev(v3) AS sd_v3 FROM x "
         "GROUP BY id4, id5",
         [pl.col("v3").median().alias("median_v3"), pl.col("v3").std().alias("sd_v3")]),
        (["id3"], ["max(v1) - min(v2) AS range_v1_v2"],
         "SELECT id3, max(v1) - min(v2) AS range_v1_v2 FROM x GROUP BY id3",
         [(pl.col("v1").max() - pl.col("v2").min()).alias("range_v1_v2")]),
        (["id6"], ["top_k(v3, 2) AS largest2_v3"],
         "SELECT id6, largest2_v3 FROM (SELECT id6, v3 AS largest2_v3, row_number() OVER "
         "(PARTITION BY id6 ORDER BY v3 DESC) AS order_v3 FROM x WHERE v3 IS NOT NULL) "
         "sub_query WHERE order_v3 <= 2",
         [pl.col("v3").top_k(2).alias("largest2_v3")]),
        (["id2", "id4"], ["corr(v1, v2) * corr(v1, v2) AS r2"],
         "SELECT id2, id4, pow(corr(v1, v2), 2) AS r2 FROM x GROUP BY id2, id4",
         [(pl.corr("v1", "v2") ** 2).alias("r2")]),
        (["id1", "id2", "id3", "id4", "id5", "id6"], ["sum(v3) AS v3", "count(*) AS count"],
         "SELECT id1, id2, id3, id4, id5, id6, sum(v3) AS v3, count(*) AS count FROM x "
         "GROUP BY id1, id2, id3, id4, id5, id6",
         [pl.col("v3").sum(), pl.len().alias("count")]),
    ]


def chk(table, keys, long_rows=False):
    """(rows, sums of the measure columns) as db-benchmark's chk; list
    columns are flattened (q8: quiver and Polars give 2-element lists,
    DuckDB 2 rows per group)."""
    out = []
    rows = table.num_rows
    for name in table.column_names:
        if name in keys:
            continue
        col = table.column(name)
        if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
            col = pa.chunked_array([c.flatten() for c in col.chunks], col.type.value_type)
            rows = len(col)
        vals = col.to_numpy(zero_copy_only=False).astype(np.float64)
        out.append(float(np.nansum(vals)))
    return rows, out


def same(a, b):
    if a[0] != b[0] or len(a[1]) != len(b[1]):
        return False
    return all(x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y)) for x, y in zip(a[1], b[1]))


def cpu_now():
    """CPU seconds (user + sys) of this process, every thread: quiver,
    DuckDB and Polars all run in it."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def best(fn, runs):
    """(best wall seconds, best CPU seconds, result) over `runs` runs."""
    t = c = math.inf
    r = None
    for _ in range(runs):
        c0, t0 = cpu_now(), time.perf_counter()
        r = fn()
        t = min(t, time.perf_counter() - t0)
        c = min(c, cpu_now() - c0)
    return t, c, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=float, default=1e7)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--dir", default="/tmp/qv-bench-groupby")
    ap.add_argument("--only", default="", help="comma-separated question numbers")
    args = ap.parse_args()
    import duckdb
    import polars as pl
    import quiver
    n = int(args.rows)
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, f"G1_{n}_1e2_0_0.arrow")
    if not os.path.exists(path):
        print(f"generating {path} ...", flush=True)
        gen(n, path)
    table = ipc.open_file(path).read_all()
    con = duckdb.connect()
    con.register("src", table)
    con.execute("CREATE TABLE x AS SELECT * FROM src")
    con.unregister("src")
    df = pl.from_arrow(table)
    ds = quiver.open(path)
    del table
    only = {int(q) for q in args.only.split(",") if q}
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    print(f"G1_{n:.0e}_1e2_0_0: {n} rows; threads: DuckDB {threads}, "
          f"Polars {pl.thread_pool_size()}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'q':>4} {'quiver s':>9} {'DuckDB s':>9} {'Polars s':>9}   "
          f"{'cpu: qv':>8} {'DuckDB':>7} {'Polars':>7}  answers")
    tq = td = tp = 0.0
    cq = cd = cp = 0.0
    for qi, (keys, aggs, sql, pl_aggs) in enumerate(questions(pl), 1):
        if only and qi not in only:
            continue
        t_q, u_q, r_q = best(lambda: pa.table(ds.group_by(keys).agg(*aggs)), args.runs)

        def run_duck():
            con.execute("DROP TABLE IF EXISTS ans")
            con.execute("CREATE TABLE ans AS " + sql)
            return con.sql("SELECT * FROM ans").to_arrow_table()

        t_d, u_d, r_d = best(run_duck, args.runs)
        t_p, u_p, r_p = best(lambda: df.group_by(keys).agg(pl_aggs).to_arrow(), args.runs)
        c_q, c_d, c_p = chk(r_q, keys), chk(r_d, keys), chk(r_p, keys)
        ok = "equal" if same(c_q, c_d) and same(c_p, c_d) else f"DIFFER {c_q} {c_d} {c_p}"
        print(f"q{qi:<3} {t_q:9.3f} {t_d:9.3f} {t_p:9.3f}   {u_q:8.3f} {u_d:7.3f} {u_p:7.3f}  "
              f"{ok}", flush=True)
        tq, td, tp = tq + t_q, td + t_d, tp + t_p
        cq, cd, cp = cq + u_q, cd + u_d, cp + u_p
    print(f"{'sum':>4} {tq:9.3f} {td:9.3f} {tp:9.3f}   {cq:8.3f} {cd:7.3f} {cp:7.3f}")
    print(f"ratio quiver/DuckDB {tq / td:.2f}  quiver/Polars {tq / tp:.2f}  "
          f"(DuckDB/Polars {td / tp:.2f}); CPU quiver/DuckDB {cq / cd:.2f}  "
          f"quiver/Polars {cq / cp:.2f}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
