"""test_join.py — quiver's hash join, distinct and value_counts against
independent oracles: DuckDB for db-benchmark's join questions j1..j5 on
small generated data (joindata.py; equal answers as multisets) and for
every join type on random keys with nulls, NaN and -0.0; a brute-force
nested loop in Python for the documented row order; pandas'
drop_duplicates for distinct; pyarrow's value_counts and datasets'
unique; the CLI's `quiver join` / `quiver distinct` outputs opened with
datasets.load_from_disk, and its usage errors."""
import math
import os
import sys
import zlib

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import joindata  # noqa: E402
from qvpaths import import_quiver, quiver  # noqa: E402

qv = import_quiver()


def write(path, table):
    with ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=max(1, table.num_rows // 3))
    return str(path)


def rows_sorted(t):
    """Rows as a sorted list of tuples (None and NaN made comparable)."""
    def key(v):
        if v is None:
            return (0, "")
        if isinstance(v, float) and math.isnan(v):
            return (1, "")
        return (2, repr(v))
    cols = [t.column(i).to_pylist() for i in range(t.num_columns)]
    return sorted(zip(*cols), key=lambda r: tuple(key(v) for v in r))


def same_multiset(a, b):
    assert a.column_names == b.column_names
    assert a.num_rows == b.num_rows
    ra, rb = rows_sorted(a), rows_sorted(b)
    for x, y in zip(ra, rb):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            if isinstance(u, float) and isinstance(v, float) and math.isnan(u):
                assert math.isnan(v)
            else:
                assert u == v, (x, y)


@pytest.fixture(scope="module")
def bench_data():
    return joindata.generate(20_000, seed=7)


@pytest.mark.parametrize("q", joindata.QUESTIONS, ids=[q[0].split()[0] for q in joindata.QUESTIONS])
def test_db_benchmark_questions(tmp_path, bench_data, q):
    _, right, key, how = q
    x, r = bench_data["x"], bench_data[right]
    ds_x = qv.open(write(tmp_path / "x.arrow", x))
    ds_r = qv.open(write(tmp_path / "r.arrow", r))
    got = pa.table(ds_x.join(ds_r, on=key, how=how))
    con = duckdb.connect()
    con.register("x", x)
    con.register(right, r)
    want = con.sql(joindata.duckdb_sql(right, key, how, r.column_names)).to_arrow_table()
    want = want.cast(got.schema)
    assert got.num_rows > 0
    same_multiset(got, want)


def random_sides(rng, nl, nr, kind):
    def keys(n):
        if kind == "int":
            v = rng.integers(0, 12, n).astype(object)
        elif kind == "float":
            pool = [0.0, -0.0, float("nan"), 1.5, 2.5, 3.0, 7.25]
            v = np.array([pool[i] for i in rng.integers(0, len(pool), n)], dtype=object)
        else:
            v = np.array([f"k{i}" for i in rng.integers(0, 9, n)], dtype=object)
        v[rng.random(n) < 0.1] = None
        return list(v)
    typ = {"int": pa.int64(), "float": pa.float64(), "str": pa.string()}[kind]
    left = pa.table({"k": pa.array(keys(nl), typ), "lrow": pa.array(range(nl), pa.int64()),
                     "v": pa.array(rng.integers(0, 100, nl))})
    right = pa.table({"k": pa.array(keys(nr), typ if kind != "str" else pa.large_string()),
                      "rrow": pa.array(range(nr), pa.int64()),
                      "v": pa.array(rng.integers(0, 100, nr))})
    return left, right


def key_eq(a, b):
    if a is None or b is None:
        return False
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def brute_pairs(lk, rk, how):
    """The documented order: probe = the larger side (left on ties), each
    probe row's matches in build order, then the unmatched build rows."""
    if how in ("semi", "anti"):
        return [(i, None) for i, a in enumerate(lk)
                if any(key_eq(a, b) for b in rk) == (how == "semi")]
    build_left = len(lk) < len(rk)
    probe, build = (rk, lk) if build_left else (lk, rk)
    keep_probe = how == "full" or (how == "left" and not build_left) or (how == "right" and build_left)
    keep_build = how == "full" or (how == "left" and build_left) or (how == "right" and not build_left)
    out, hit = [], [False] * len(build)
    for i, a in enumerate(probe):
        m = [j for j, b in enumerate(build) if key_eq(a, b)]
        for j in m:
            hit[j] = True
            out.append((j, i) if build_left else (i, j))
        if not m and keep_probe:
            out.append((None, i) if build_left else (i, None))
    if keep_build:
        out += [((j, None) if build_left else (None, j)) for j in range(len(build)) if not hit[j]]
    return out


DUCK_HOW = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN",
            "semi": "SEMI JOIN", "anti": "ANTI JOIN"}


@pytest.mark.parametrize("kind", ["int", "float", "str"])
@pytest.mark.parametrize("sizes", [(120, 80), (60, 90), (0, 30), (40, 0)])
def test_join_types_vs_duckdb_and_order(tmp_path, kind, sizes):
    # crc32, not hash(): hash() of a str changes with PYTHONHASHSEED
    rng = np.random.default_rng(zlib.crc32(f"{kind}-{sizes}".encode()))
    left, right = random_sides(rng, *sizes, kind)
    ds_l = qv.open(write(tmp_path / "l.arrow", left)) if left.num_rows else None
    ds_r = qv.open(write(tmp_path / "r.arrow", right)) if right.num_rows else None
    if ds_l is None or ds_r is None:  # empty sides: a 0-row file is still a dataset
        ds_l = qv.open(write(tmp_path / "l.arrow", left))
        ds_r = qv.open(write(tmp_path / "r.arrow", right))
    con = duckdb.connect()
    con.register("l", left)
    con.register("r", right)
    for how in ["inner", "left", "right", "full", "semi", "anti"]:
        got = pa.table(ds_l.join(ds_r, on="k", how=how))
        if how in ("semi", "anti"):
            sql = f"SELECT l.* FROM l {DUCK_HOW[how]} r ON l.k = r.k"
        else:
            sql = (f"SELECT COALESCE(l.k, r.k) AS k, l.lrow, l.v, r.rrow, r.v AS v_right "
                   f"FROM l {DUCK_HOW[how]} r ON l.k = r.k")
        want = con.sql(sql).to_arrow_table()
        want = want.cast(got.schema)
        same_multiset(got, want)
        # the documented order, checked row by row against the nested loop
        pairs = brute_pairs(left.column("k").to_pylist(), right.column("k").to_pylist(), how)
        assert got.column("lrow").to_pylist() == [p[0] for p in pairs], how
        if how not in ("semi", "anti"):
            assert got.column("rrow").to_pylist() == [p[1] for p in pairs], how


def test_join_mixed_key_types_and_multi_keys(tmp_path):
    rng = np.random.default_rng(3)
    n = 300
    a = rng.integers(0, 5, n)
    b = rng.integers(0, 4, n)
    names = np.array(["p", "q", "r", "s"])
    left = pa.table({"a": pa.array(a, pa.int32()),
                     "b": pa.array(names[b]).dictionary_encode(),
                     "x": pa.array(range(n))})
    a2, b2 = rng.integers(0, 6, 200), rng.integers(0, 5, 200)
    right = pa.table({"a": pa.array(a2, pa.int64()),
                      "b": pa.array(np.array(["p", "q", "r", "s", "t"])[b2], pa.large_string()),
                      "y": pa.array(range(200))})
    got = pa.table(qv.open(write(tmp_path / "l.arrow", left)).join(
        qv.open(write(tmp_path / "r.arrow", right)), on=["a", "b"], how="left"))
    con = duckdb.connect()
    con.register("l", left.set_column(1, "b", left.column("b").cast(pa.string())))
    con.register("r", right)
    want = con.sql("SELECT l.a, l.b, l.x, r.y FROM l LEFT JOIN r ON l.a = r.a AND l.b = r.b"
                       ).to_arrow_table()
    got = got.set_column(1, "b", got.column("b").cast(pa.string()))
    same_multiset(got, want.cast(got.schema))


def test_join_honours_indices_mapping(tmp_path, bench_data):
    x = bench_data["x"].slice(0, 3000)
    ds = qv.open(write(tmp_path / "x.arrow", x)).shuffle(seed=5).select(range(0, 3000, 2))
    med = bench_data["medium"]
    got = pa.table(ds.join(qv.open(write(tmp_path / "m.arrow", med)), on="id2"))
    rows = pa.table(ds)
    con = duckdb.connect()
    con.register("x", rows)
    con.register("medium", med)
    want = con.sql(joindata.duckdb_sql("medium", "id2", "inner", med.column_names)).to_arrow_table()
    same_multiset(got, want.cast(got.schema))
    # probe side (the larger, mapped x) keeps its order
    assert got.column("v1").to_pylist() == [
        v for v, k in zip(rows.column("v1").to_pylist(), rows.column("id2").to_pylist())
        for m in med.column("id2").to_pylist() if m == k]


def test_distinct_and_value_counts(tmp_path):
    rng = np.random.default_rng(11)
    n = 2000
    k1 = pa.array([None if r < 0.05 else int(v) for r, v in zip(rng.random(n), rng.integers(0, 7, n))])
    k2 = pa.array(np.array(["a", "b", "c"])[rng.integers(0, 3, n)])
    t = pa.table({"k1": k1, "k2": k2, "row": pa.array(range(n))})
    ds = qv.open(write(tmp_path / "t.arrow", t))
    got = pa.table(ds.distinct(["k1", "k2"]))
    want = t.to_pandas().drop_duplicates(subset=["k1", "k2"], keep="first")
    assert got.column("row").to_pylist() == want["row"].tolist()
    assert pa.table(ds.distinct()).num_rows == n
    vc = pa.table(ds.value_counts("k2"))
    want_vc = pc.value_counts(t.column("k2"))
    assert vc.column("values").to_pylist() == want_vc.field("values").to_pylist()
    assert vc.column("counts").to_pylist() == want_vc.field("counts").to_pylist()
    vc1 = pa.table(ds.value_counts("k1"))
    want1 = pc.value_counts(t.column("k1"))
    assert vc1.column("values").to_pylist() == want1.field("values").to_pylist()
    assert vc1.column("counts").to_pylist() == want1.field("counts").to_pylist()
    import datasets
    assert ds.unique("k1") == datasets.Dataset(t).unique("k1")
    with pytest.raises(qv.QuiverValueError, match="did you mean 'k1'"):
        ds.distinct(["k11"])


def test_join_python_errors(tmp_path):
    t = pa.table({"id": [1, 2], "s": ["a", "b"]})
    ds = qv.open(write(tmp_path / "t.arrow", t))
    with pytest.raises(qv.QuiverValueError, match="did you mean 'id'"):
        ds.join(ds, on="idd")
    with pytest.raises(qv.QuiverTypeError, match="incompatible"):
        ds.join(ds, left_on="id", right_on="s")
    with pytest.raises(ValueError, match="how must be"):
        ds.join(ds, on="id", how="cross")
    got = pa.table(ds.join(ds, on="id", suffixes=("_a", "_b")))
    assert got.column_names == ["id", "s_a", "s_b"]


def test_cli_join_and_distinct(tmp_path, bench_data):
    import datasets
    x, med = bench_data["x"].slice(0, 5000), bench_data["medium"]
    xp, mp = write(tmp_path / "x.arrow", x), write(tmp_path / "m.arrow", med)
    out = tmp_path / "j"
    quiver("join", xp, mp, "--on=id5", "--how=left", "--memory-limit=1GB", "-o", out)
    got = datasets.load_from_disk(str(out)).data.table
    con = duckdb.connect()
    con.register("x", x)
    con.register("medium", med)
    want = con.sql(joindata.duckdb_sql("medium", "id5", "left", med.column_names)).to_arrow_table()
    same_multiset(pa.table(got), want.cast(got.schema))
    out2 = tmp_path / "d"
    quiver("distinct", xp, "--on=id1", "-o", out2)
    d = datasets.load_from_disk(str(out2)).data.table
    assert d.column("id1").to_pylist() == list(dict.fromkeys(x.column("id1").to_pylist()))
    # usage errors: exit 2 naming the argument
    r = quiver("join", xp, mp, "--on=id55", "-o", tmp_path / "e", check=False)
    assert r.returncode == 2 and b"did you mean 'id5'" in r.stderr
    r = quiver("join", xp, mp, "--left-on=id4", "--right-on=id2", "-o", tmp_path / "e", check=False)
    assert r.returncode == 2 and b"incompatible types" in r.stderr
    r = quiver("join", xp, mp, "--on=id2", "--how=sideways", "-o", tmp_path / "e", check=False)
    assert r.returncode == 2 and b"--how" in r.stderr
    assert quiver("join", "--help").stdout.startswith(b"usage: quiver join")
    assert quiver("distinct", "--help").stdout.startswith(b"usage: quiver distinct")


@pytest.mark.parametrize("q", joindata.QUESTIONS, ids=[q[0].split()[0] for q in joindata.QUESTIONS])
def test_grace_join_tiny_memory_limit(tmp_path, bench_data, q, monkeypatch):
    """memory_limit far below the build side: the grace hash join (partition
    files in a private directory under $TMPDIR) gives DuckDB's answer and
    the in-memory run's rows in the in-memory run's order."""
    _, right, key, how = q
    x, r = bench_data["x"], bench_data[right]
    ds_x = qv.open(write(tmp_path / "x.arrow", x))
    ds_r = qv.open(write(tmp_path / "r.arrow", r))
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill))
    got = pa.table(ds_x.join(ds_r, on=key, how=how, memory_limit="1KB" if right != "small" else 1))
    assert os.listdir(spill) == []  # the partition directory is removed
    mem = pa.table(ds_x.join(ds_r, on=key, how=how))
    assert got.equals(mem)
    con = duckdb.connect()
    con.register("x", x)
    con.register(right, r)
    want = con.sql(joindata.duckdb_sql(right, key, how, r.column_names)).to_arrow_table()
    same_multiset(got, want.cast(got.schema))
    # it did spill: with no usable temp directory the same join fails
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    with pytest.raises(Exception, match="temp directory"):
        ds_x.join(ds_r, on=key, how=how, memory_limit=1)
    with pytest.raises(ValueError, match="memory_limit"):
        ds_x.join(ds_r, on=key, memory_limit=0)


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
def test_grace_join_types_vs_duckdb(tmp_path, how, monkeypatch):
    rng = np.random.default_rng(21)
    left, right = random_sides(rng, 300, 200, "str")
    ds_l = qv.open(write(tmp_path / "l.arrow", left))
    ds_r = qv.open(write(tmp_path / "r.arrow", right))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    got = pa.table(ds_l.join(ds_r, on="k", how=how, memory_limit=64))
    assert got.equals(pa.table(ds_l.join(ds_r, on="k", how=how)))
    con = duckdb.connect()
    con.register("l", left)
    con.register("r", right)
    if how in ("semi", "anti"):
        sql = f"SELECT l.* FROM l {DUCK_HOW[how]} r ON l.k = r.k"
    else:
        sql = (f"SELECT COALESCE(l.k, r.k) AS k, l.lrow, l.v, r.rrow, r.v AS v_right "
               f"FROM l {DUCK_HOW[how]} r ON l.k = r.k")
    same_multiset(got, con.sql(sql).to_arrow_table().cast(got.schema))


def test_cli_join_spills(tmp_path, bench_data, monkeypatch):
    import datasets
    x, med = bench_data["x"].slice(0, 5000), bench_data["medium"]
    xp, mp = write(tmp_path / "x.arrow", x), write(tmp_path / "m.arrow", med)
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill))
    out = tmp_path / "j"
    quiver("join", xp, mp, "--on=id2", "--how=full", "--memory-limit=1KB", "-o", out)
    assert os.listdir(spill) == []
    got = datasets.load_from_disk(str(out)).data.table
    con = duckdb.connect()
    con.register("x", x)
    con.register("medium", med)
    sql = ('SELECT COALESCE(x.id2, r.id2) AS id2, x.id1, x.id3, x.id4, x.id5, x.id6, x.v1, '
           'r.id1 AS id1_right, r.id4 AS id4_right, r.id5 AS id5_right, r.v2 '
           'FROM x FULL JOIN medium r ON x.id2 = r.id2')
    want = con.sql(sql).to_arrow_table()
    got = pa.table(got).select(want.column_names)
    same_multiset(got, want.cast(got.schema))
    # it did spill: with no usable temp directory the same command fails (exit 1)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    r = quiver("join", xp, mp, "--on=id2", "--memory-limit=1KB", "-o", tmp_path / "j2", check=False)
    assert r.returncode == 1 and b"temp directory" in r.stderr
