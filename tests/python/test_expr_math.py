"""The expression language's numeric functions (sqrt, exp, ln/log, log10,
log2, floor, ceil, round, pow) against numpy, through Dataset.map(set=...)
and Dataset.filter (the C evaluator), and inside group-by aggregate
expressions against DuckDB: random doubles with nulls, zeros, negatives,
NaN and infinities, integers with nulls; type errors name the argument.

Environment: QV_BUILD (the build directory).
"""
import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from qvpaths import import_quiver

N = 4000


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    rng = np.random.default_rng(5)
    x = rng.normal(size=N) * 50
    x[rng.random(N) < 0.03] = 0.0
    x[rng.random(N) < 0.02] = np.nan
    x[rng.random(N) < 0.01] = np.inf
    x[rng.random(N) < 0.01] = -np.inf
    x[rng.random(N) < 0.02] = 2.5  # ties: round goes away from zero
    x[rng.random(N) < 0.02] = -0.5
    t = pa.table({
        "x": pa.array(x, mask=rng.random(N) < 0.1),
        "i": pa.array(rng.integers(-50, 50, N), mask=rng.random(N) < 0.1),
        "g": pa.array(rng.integers(0, 20, N)),
        "s": pa.array(["a"] * N),
    })
    p = str(tmp_path_factory.mktemp("math") / "m.arrow")
    with ipc.new_file(p, t.schema) as w:
        for b in t.to_batches(max_chunksize=1500):
            w.write_batch(b)
    return p


def round_half_away(v):
    return np.where(np.isfinite(v), np.sign(v) * np.floor(np.abs(v) + 0.5), v)


FUNCS = [
    ("sqrt(x)", lambda x, i: np.sqrt(x)),
    ("exp(x / 100)", lambda x, i: np.exp(x / 100)),
    ("ln(x)", lambda x, i: np.log(x)),
    ("log(abs(x))", lambda x, i: np.log(np.abs(x))),
    ("log10(x)", lambda x, i: np.log10(x)),
    ("log2(x)", lambda x, i: np.log2(x)),
    ("floor(x)", lambda x, i: np.floor(x)),
    ("ceil(x)", lambda x, i: np.ceil(x)),
    ("round(x)", lambda x, i: round_half_away(x)),
    ("pow(x, 2)", lambda x, i: np.power(x, 2)),
    ("pow(i, 0.5)", lambda x, i: np.power(i, 0.5)),
    ("pow(x, i)", lambda x, i: np.power(x, i)),
    ("sqrt(i) + floor(i)", lambda x, i: np.sqrt(i) + i),
]


def same(got, want):
    for a, b in zip(got, want):
        if a is None or (isinstance(b, float) and math.isnan(b) and b is None):
            assert a is None and b is None, (a, b)
            continue
        if b is None:
            assert a is None, (a, b)
            continue
        if math.isnan(b):
            assert a is not None and math.isnan(a), (a, b)
            continue
        assert a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b)), (a, b)


@pytest.mark.parametrize("expr,fn", FUNCS, ids=[f[0] for f in FUNCS])
def test_map_against_numpy(path, expr, fn):
    qv = import_quiver()
    t = ipc.open_file(path).read_all()
    got = pa.table(qv.open(path).map(set={"r": expr})).column("r").to_pylist()
    x = t.column("x").to_numpy(zero_copy_only=False)
    i = t.column("i").to_numpy(zero_copy_only=False).astype(np.float64)
    xn = t.column("x").is_null().to_numpy(zero_copy_only=False)
    inn = t.column("i").is_null().to_numpy(zero_copy_only=False)
    with np.errstate(all="ignore"):
        want = fn(np.where(xn, 0, x), np.where(inn, 0, i))
    import re
    names = set(re.findall(r"\b([xi])\b", expr))  # the columns the expression reads
    null = (xn if "x" in names else False) | (inn if "i" in names else False)
    want = [None if null[k] else float(want[k]) for k in range(len(want))]
    same(got, want)


def test_integer_floor_round_keep_int(path):
    qv = import_quiver()
    r = pa.table(qv.open(path).map(set={"a": "floor(i)", "b": "round(i) * 2", "c": "ceil(x)"}))
    assert r.schema.field("a").type == pa.int64()
    assert r.schema.field("b").type == pa.int64()
    assert r.schema.field("c").type == pa.float64()
    t = ipc.open_file(path).read_all()
    assert r.column("a").to_pylist() == t.column("i").to_pylist()


def test_filter_with_functions(path):
    qv = import_quiver()
    t = ipc.open_file(path).read_all()
    got = pa.table(qv.open(path).filter("sqrt(abs(i)) >= 3 and pow(i, 2) < 1600"))
    i = t.column("i").to_pylist()
    want = [v for v in i if v is not None and math.sqrt(abs(v)) >= 3 and v * v < 1600]
    assert got.column("i").to_pylist() == want


def test_in_aggregate_expressions(path):
    qv = import_quiver()
    t = ipc.open_file(path).read_all()
    got = pa.table(qv.open(path).group_by("g", sort=True).agg(
        "sqrt(var_pop(i)) AS sd", "round(mean(i) * 100) AS m", "pow(max(i), 2) - ln(count(*)) AS p"))
    con = duckdb.connect()
    con.register("t", t)
    want = con.sql("SELECT g, stddev_pop(i) AS sd, round(avg(i) * 100) AS m, "
                   "pow(max(i), 2) - ln(count(*)) AS p FROM t GROUP BY g ORDER BY g").to_arrow_table()
    for c in ["sd", "m", "p"]:
        same(got.column(c).to_pylist(), [float(v) for v in want.column(c).to_pylist()])


def test_type_errors(path):
    qv = import_quiver()
    with pytest.raises(Exception, match=r"sqrt\(\) needs a number, found column 's' \(string\)"):
        qv.open(path).map(set={"r": "sqrt(s)"})
    with pytest.raises(Exception, match=r"pow\(\) takes 2 arguments, found 1"):
        qv.open(path).map(set={"r": "pow(x)"})


# ------------------------------------------------ strings and choices --

@pytest.fixture(scope="module")
def spath(tmp_path_factory):
    rng = np.random.default_rng(9)
    n = 3000
    words = ["Hello", "wORLD", "", "a", "Quiver Data", "ümlaut-ß", "日本語テキスト", "x y z"]
    t = pa.table({
        "s": pa.array([words[k] for k in rng.integers(0, len(words), n)],
                      mask=rng.random(n) < 0.1),
        "t": pa.array([words[k] for k in rng.integers(0, 5, n)], mask=rng.random(n) < 0.3),
        "st": pa.array(rng.integers(-9, 10, n), mask=rng.random(n) < 0.05),
        "ln": pa.array(rng.integers(-4, 8, n), mask=rng.random(n) < 0.05),
        "i": pa.array(rng.integers(-5, 5, n), mask=rng.random(n) < 0.2),
        "x": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.2),
    })
    p = str(tmp_path_factory.mktemp("str") / "s.arrow")
    with ipc.new_file(p, t.schema) as w:
        for b in t.to_batches(max_chunksize=1100):
            w.write_batch(b)
    return p, t


STRFUNCS = [
    ("substr(s, st, ln)", "substr(s, st, ln)"),
    ("substr(s, st)", "substr(s, st)"),
    ("substr(s, 2, 3)", "substr(s, 2, 3)"),
    ("lower(t)", "lower(t)"),
    ("upper(t)", "upper(t)"),
    ("coalesce(t, s)", "coalesce(t, s)"),
    ("coalesce(i, st)", "coalesce(i, st)"),
    ("coalesce(x, i)", "coalesce(x, i)::DOUBLE"),
    ("coalesce(i, null)", "coalesce(i, NULL)"),
    ("if(i > 0, s, t)", "CASE WHEN i > 0 THEN s ELSE t END"),
    ("if(i > 0, x, i)", "CASE WHEN i > 0 THEN x ELSE i END::DOUBLE"),
    ("if(i != 0, 100 % i, -1)", "CASE WHEN i <> 0 THEN 100 % i ELSE -1 END"),
    ("if(x is null, 'none', 'some')", "CASE WHEN x IS NULL THEN 'none' ELSE 'some' END"),
    ("if(i > 0, i > 2, null)", "CASE WHEN i > 0 THEN i > 2 ELSE NULL END"),
]


@pytest.mark.parametrize("expr,sql", STRFUNCS, ids=[f[0] for f in STRFUNCS])
def test_strings_and_choices_against_duckdb(spath, expr, sql):
    qv = import_quiver()
    path, t = spath
    got = pa.table(qv.open(path).map(set={"r": expr})).column("r").to_pylist()
    con = duckdb.connect()
    con.register("t", t)
    want = con.sql(f"SELECT {sql} AS r FROM t").to_arrow_table().column("r").to_pylist()
    if "100 % i" in expr:  # Python's modulo (docs/expressions.md), DuckDB's is C's
        want = [None if w is None else (100 % v if v else -1)
                for w, v in zip(want, t.column("i").to_pylist())]
    if got != want:
        bad = [(k, a, b) for k, (a, b) in enumerate(zip(got, want)) if a != b][:5]
        raise AssertionError(f"{expr}: first differences {bad}")


def test_string_function_errors(spath):
    qv = import_quiver()
    path, _ = spath
    for expr, msg in [("lower(i)", r"lower\(\) needs a string"),
                      ("substr(s, x)", r"substr\(\) needs an integer start"),
                      ("substr(s)", r"substr\(\) takes 2 or 3 arguments, found 1"),
                      ("if(i, 1, 2)", r"if\(\) needs a boolean condition"),
                      ("coalesce(s, i)", r"coalesce\(\) needs values of one type")]:
        with pytest.raises(Exception, match=msg):
            qv.open(path).map(set={"r": expr})


CASTS = [
    ("cast(i, 'double')", "CAST(i AS DOUBLE)"),
    ("cast(x * 10, 'int64')", "CAST(x * 10 AS BIGINT)"),
    ("cast(i, 'string')", "CAST(i AS VARCHAR)"),
    ("cast(i > 0, 'int64')", "CAST(i > 0 AS BIGINT)"),
    ("cast(cast(i, 'string'), 'int64')", "i"),
    ("cast(cast(x, 'string'), 'double')", "x"),
    ("cast(i, 'bool')", "CAST(i AS BOOLEAN)"),
    ("cast(if(i > 0, 'true', 'f'), 'bool')", "i > 0"),
]


@pytest.mark.parametrize("expr,sql", CASTS, ids=[f[0] for f in CASTS])
def test_cast_against_duckdb(spath, expr, sql):
    qv = import_quiver()
    path, t = spath
    got = pa.table(qv.open(path).map(set={"r": expr})).column("r").to_pylist()
    con = duckdb.connect()
    con.register("t", t)
    want = con.sql(f"SELECT {sql} AS r FROM t").to_arrow_table().column("r").to_pylist()
    if "if(i > 0" in expr:  # a null i takes the else branch ('f'), DuckDB's i > 0 is null
        want = [False if w is None else w for w in want]
    assert got == want


def test_cast_errors(spath):
    qv = import_quiver()
    path, _ = spath
    for expr, msg in [("cast(s, 'int64')", r"cannot cast '.*' to int64"),
                      ("cast(x, 'date')", r"cast\(\) to 'date' is not supported"),
                      ("cast(x, t)", r"cast\(\) needs the target type as a string"),
                      ("cast(s, 'bool')", r"cannot cast '.*' to bool"),
                      ("cast(x / 0, 'int64')", r"cannot cast .* to int64")]:
        with pytest.raises(Exception, match=msg):
            qv.open(path).map(set={"r": expr})
