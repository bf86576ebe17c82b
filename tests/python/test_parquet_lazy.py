"""Parquet files opened lazily by the open path (every CLI command,
quiver.open): rows read through `quiver head`, `quiver get` and ds[i] of a
file of many row groups equal pyarrow's rows (the oracle), nulls at every
level included; a file truncated while open raises an error naming the
shrink instead of crashing the process.
"""
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq

from qvpaths import import_quiver, quiver_rows

ROWS = 2000
RG = 100


def _table(seed=3):
    rng = random.Random(seed)
    n = ROWS
    ints = [None if rng.random() < 0.1 else rng.randint(-2**40, 2**40) for _ in range(n)]
    dbl = [None if rng.random() < 0.1 else rng.uniform(-1e6, 1e6) for _ in range(n)]
    strs = [None if rng.random() < 0.1 else f"w{rng.randint(0, 300)}" for _ in range(n)]
    lst = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            lst.append(None)
        else:
            lst.append([None if rng.random() < 0.1 else rng.randint(0, 999)
                        for _ in range(rng.randint(0, 4))])
    st = [None if rng.random() < 0.1 else {"a": rng.randint(0, 9), "b": f"s{rng.randint(0, 9)}"}
          for _ in range(n)]
    bools = [None if rng.random() < 0.1 else rng.random() < 0.5 for _ in range(n)]
    return pa.table({
        "i": pa.array(ints, pa.int64()),
        "d": pa.array(dbl, pa.float64()),
        "s": pa.array(strs, pa.string()),
        "l": pa.array(lst, pa.list_(pa.int64())),
        "st": pa.array(st, pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "b": pa.array(bools, pa.bool_()),
    })


def _write(tmp_path, name="t.parquet", **kw):
    t = _table()
    path = str(tmp_path / name)
    pq.write_table(t, path, row_group_size=RG, compression="snappy", **kw)
    assert pq.ParquetFile(path).metadata.num_row_groups == ROWS // RG
    return path, pq.read_table(path)


def _close(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def test_head_and_get_equal_pyarrow(tmp_path):
    path, want = _write(tmp_path)
    rows = want.to_pylist()
    got = quiver_rows("head", path, "-n", "3")
    assert len(got) == 3 and all(_close(g, w) for g, w in zip(got, rows[:3]))
    picks = [ROWS - 1, 1050, 0, 777, -1]
    got = quiver_rows("get", path, *picks)
    assert len(got) == len(picks)
    for g, p in zip(got, picks):
        assert _close(g, rows[p]), (p, g, rows[p])


def test_data_page_v2_and_plain_equal_pyarrow(tmp_path):
    path, want = _write(tmp_path, "v2.parquet", data_page_version="2.0", use_dictionary=False)
    rows = want.to_pylist()
    got = quiver_rows("get", path, ROWS - 1, 0, 1234)
    for g, p in zip(got, [ROWS - 1, 0, 1234]):
        assert _close(g, rows[p]), (p, g, rows[p])


def test_random_rows_through_python_equal_pyarrow(tmp_path):
    q = import_quiver()
    path, want = _write(tmp_path)
    rows = want.to_pylist()
    ds = q.open(path)
    assert len(ds) == ROWS
    rng = random.Random(5)
    for i in [ROWS - 1] + [rng.randrange(ROWS) for _ in range(40)]:
        assert _close(ds[i], rows[i]), (i, ds[i], rows[i])
    assert ds.cache_files == []
    # the whole table through the Arrow C stream export equals pyarrow's
    assert pa.table(ds).equals(want)


def test_truncated_while_open_raises(tmp_path):
    q = import_quiver()
    path, _ = _write(tmp_path, "shrink.parquet")
    ds = q.open(path)
    first = ds[0]
    size = os.path.getsize(path)
    assert size > 3 * 4096
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    try:
        ds[ROWS - 1]
    except Exception as e:  # noqa: BLE001 - the class is the extension's QuiverError
        assert "shrank" in str(e), str(e)
    else:
        raise AssertionError("reading a row group past the new end did not fail")
    assert ds[0] == first  # decoded before: heap memory, still there
