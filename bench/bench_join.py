"""bench_join.py [--n N] [--repeat R] [--dir DIR] [--systems quiver,duckdb,polars,pyarrow]
                [--memory-limit SIZE]
— db-benchmark's join questions j1..j5 on J1_<N>_NA_0_0-shaped data
(tests/python/joindata.py: numpy after join-datagen.R; default N = 1e7),
quiver vs DuckDB vs Polars vs pyarrow in one run. Never in CI.

Each question runs R times per system (default 2, as db-benchmark runs
each twice) and the best time is kept. quiver joins its memory-mapped
Arrow IPC files (Dataset.join, materialising the result in memory);
DuckDB joins tables loaded into it first (CREATE TABLE ans AS SELECT ...,
as db-benchmark's duckdb script does); Polars and pyarrow join in-memory
tables (DataFrame.join, Table.join). Answers are checked equal across
systems: row count and the sums of v1 and v2 (db-benchmark's check, to
1e-9 relative). Prints a table of seconds per question, the sums, and the
ratios of the sums against quiver. --memory-limit SIZE (e.g. 64MB) runs
quiver's joins under that budget (Dataset.join(memory_limit=...)): a build
side past it goes through the grace hash join (partition files in $TMPDIR
or --dir)."""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
import joindata  # noqa: E402


def write(path, table):
    with ipc.new_stream(path, table.schema) as w:
        w.write_table(table, max_chunksize=1 << 20)
    return path


def check_of(t):
    """(rows, sum v1, sum v2) of a pyarrow table."""
    s1 = pc.sum(t.column("v1")).as_py() or 0.0
    s2 = pc.sum(t.column("v2")).as_py() or 0.0
    return (t.num_rows, s1, s2)


def close(a, b):
    return a[0] == b[0] and all(abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y))
                                for x, y in zip(a[1:], b[1:]))


def timed(fn, repeat):
    best, out = None, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=float, default=1e7)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--systems", default="quiver,duckdb,polars,pyarrow")
    ap.add_argument("--memory-limit", default=None)
    a = ap.parse_args()
    n = int(a.n)
    systems = a.systems.split(",")
    t0 = time.perf_counter()
    data = joindata.generate(n)
    print(f"data: x {n:,} rows, small {data['small'].num_rows:,}, medium "
          f"{data['medium'].num_rows:,}, big {data['big'].num_rows:,} "
          f"(generated in {time.perf_counter() - t0:.1f} s)", flush=True)
    tmp = tempfile.TemporaryDirectory(dir=a.dir)
    paths = {k: write(os.path.join(tmp.name, k + ".arrow"), t) for k, t in data.items()}
    times = {s: {} for s in systems}
    checks = {s: {} for s in systems}

    if "quiver" in systems:
        sys.path.insert(0, os.path.join(os.environ.get("QV_BUILD", os.path.join(HERE, "..", "build")),
                                        "python"))
        import quiver
        qd = {k: quiver.open(p) for k, p in paths.items()}
        for q, right, key, how in joindata.QUESTIONS:
            kw = {"memory_limit": a.memory_limit} if a.memory_limit else {}
            if a.memory_limit and a.dir:
                os.environ["TMPDIR"] = a.dir
            dt, ans = timed(lambda: qd["x"].join(qd[right], on=key, how=how, **kw), a.repeat)
            times["quiver"][q] = dt
            checks["quiver"][q] = check_of(pa.table(ans))
            del ans
            print(f"quiver  {q}: {dt:.3f} s", flush=True)
        del qd
    if "duckdb" in systems:
        import duckdb
        con = duckdb.connect()
        for k, t in data.items():
            con.register("t_" + k, t)
            con.execute(f"CREATE TABLE {k} AS SELECT * FROM t_{k}")
            con.unregister("t_" + k)
        for q, right, key, how in joindata.QUESTIONS:
            sql = joindata.duckdb_sql(right, key, how, data[right].column_names)

            def run():
                con.execute("DROP TABLE IF EXISTS ans")
                con.execute("CREATE TABLE ans AS " + sql)
                return con.execute("SELECT count(*), sum(v1), sum(v2) FROM ans").fetchone()
            dt, ans = timed(run, a.repeat)
            times["duckdb"][q] = dt
            checks["duckdb"][q] = (ans[0], ans[1] or 0.0, ans[2] or 0.0)
            print(f"duckdb  {q}: {dt:.3f} s", flush=True)
        con.close()
    if "polars" in systems:
        import polars as pl
        pd_ = {k: pl.from_arrow(t) for k, t in data.items()}
        for q, right, key, how in joindata.QUESTIONS:
            dt, ans = timed(lambda: pd_["x"].join(pd_[right], on=key, how=how, suffix="_right"),
                            a.repeat)
            times["polars"][q] = dt
            checks["polars"][q] = (ans.height, ans["v1"].sum() or 0.0, ans["v2"].sum() or 0.0)
            del ans
            print(f"polars  {q}: {dt:.3f} s", flush=True)
        del pd_
    if "pyarrow" in systems:
        for q, right, key, how in joindata.QUESTIONS:
            jt = "inner" if how == "inner" else "left outer"
            dt, ans = timed(lambda: data["x"].join(data[right], keys=key, join_type=jt,
                                                   right_suffix="_right"), a.repeat)
            times["pyarrow"][q] = dt
            checks["pyarrow"][q] = check_of(ans)
            del ans
            print(f"pyarrow {q}: {dt:.3f} s", flush=True)

    ref = systems[0]
    ok = True
    for s in systems[1:]:
        for q in checks[s]:
            if not close(checks[s][q], checks[ref][q]):
                ok = False
                print(f"ANSWER MISMATCH {s} {q}: {checks[s][q]} vs {ref} {checks[ref][q]}")
    print()
    print(f"{'question':28s}" + "".join(f"{s:>10s}" for s in systems))
    for q, *_ in joindata.QUESTIONS:
        print(f"{q:28s}" + "".join(f"{times[s].get(q, float('nan')):10.3f}" for s in systems))
    sums = {s: sum(times[s].values()) for s in systems}
    print(f"{'sum':28s}" + "".join(f"{sums[s]:10.3f}" for s in systems))
    if "quiver" in systems:
        print(f"{'sum / quiver':28s}" + "".join(f"{sums[s] / sums['quiver']:10.2f}" for s in systems))
        for s in systems:
            if s == "quiver":
                continue
            worst = max(times["quiver"][q] / times[s][q] for q in times[s])
            print(f"worst question quiver / {s}: {worst:.2f}x")
    print("answers equal" if ok else "ANSWERS DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
