"""joindata.py — db-benchmark's join data (J1_<N>_NA_0_0 and its small /
medium / big right-hand sides), generated with numpy after the procedure
of db-benchmark's _data/join-datagen.R: keys split into common (90%),
left-only and right-only parts, every key present at least once, id4..id6
the "id<k>" strings of id1..id3, v1 / v2 uniform in [0, 100). Used by
tests/python/test_join.py (small N) and bench/bench_join.py (N = 1e7).
The five questions j1..j5 are listed in QUESTIONS."""
import numpy as np
import pyarrow as pa

# (name, right table, key column, how) — db-benchmark's join questions.
QUESTIONS = [
    ("j1 small inner on int", "small", "id1", "inner"),
    ("j2 medium inner on int", "medium", "id2", "inner"),
    ("j3 medium outer on int", "medium", "id2", "left"),
    ("j4 medium inner on factor", "medium", "id5", "inner"),
    ("j5 big inner on int", "big", "id3", "inner"),
]


def _split_xlr(rng, n):
    key = rng.permutation(int(n * 1.1)) + 1
    return {"x": key[:int(n * 0.9)], "l": key[int(n * 0.9):n], "r": key[n:int(n * 1.1)]}


def _sample_all(rng, x, size):
    y = np.concatenate([x, rng.choice(x, size=max(size - len(x), 0), replace=True)])
    rng.shuffle(y)
    return y


def _ids(k):
    return pa.array(np.char.add("id", k.astype(str)).astype(object), pa.string())


def generate(n, seed=108, small=None, medium=None):
    """dict of pyarrow tables x, small, medium, big for an x of n rows
    (small n/1e6 and medium n/1e3 rows, at least 10 and 100)."""
    rng = np.random.default_rng(seed)
    n1 = small or max(n // 10**6, 10)
    n2 = medium or max(n // 10**3, 100)
    k1, k2, k3 = _split_xlr(rng, n1), _split_xlr(rng, n2), _split_xlr(rng, n)
    lhs = lambda k: np.concatenate([k["x"], k["l"]])  # noqa: E731
    rhs = lambda k: np.concatenate([k["x"], k["r"]])  # noqa: E731
    x_id = [_sample_all(rng, lhs(k), n) for k in (k1, k2, k3)]
    x = pa.table({"id1": x_id[0], "id2": x_id[1], "id3": x_id[2], "id4": _ids(x_id[0]),
                  "id5": _ids(x_id[1]), "id6": _ids(x_id[2]),
                  "v1": np.round(rng.uniform(0, 100, n), 6)})
    s1 = _sample_all(rng, rhs(k1), n1)
    small_t = pa.table({"id1": s1, "id4": _ids(s1), "v2": np.round(rng.uniform(0, 100, n1), 6)})
    m1, m2 = _sample_all(rng, rhs(k1), n2), _sample_all(rng, rhs(k2), n2)
    medium_t = pa.table({"id1": m1, "id2": m2, "id4": _ids(m1), "id5": _ids(m2),
                         "v2": np.round(rng.uniform(0, 100, n2), 6)})
    b = [_sample_all(rng, rhs(k), n) for k in (k1, k2, k3)]
    big_t = pa.table({"id1": b[0], "id2": b[1], "id3": b[2], "id4": _ids(b[0]), "id5": _ids(b[1]),
                      "id6": _ids(b[2]), "v2": np.round(rng.uniform(0, 100, n), 6)})
    return {"x": x, "small": small_t, "medium": medium_t, "big": big_t}


def duckdb_sql(right, key, how, right_cols):
    """DuckDB's query for a question: x's columns, then the right's
    non-key columns named as quiver names them (clashes get _right)."""
    sel = ", ".join(f'r."{c}" AS "{c}_right"' if c in X_COLS else f'r."{c}"'
                    for c in right_cols if c != key)
    j = "LEFT JOIN" if how == "left" else "JOIN"
    return f'SELECT x.*, {sel} FROM x {j} {right} r ON x."{key}" = r."{key}"'


X_COLS = ["id1", "id2", "id3", "id4", "id5", "id6", "v1"]
