"""map / filter argument parity with `datasets` 5.2.0 itself
(python/src/mapfilter.c, python/quiver/_api.py): with_indices, with_rank,
input_columns, fn_kwargs, batched / batch_size / drop_last_batch,
remove_columns, features=, function=None, numpy / pandas / Arrow return
values, datasets' rule keeping the original column type (int32, float32,
List(int32), Array2D stay; values that do not fit widen), num_proc with
callables (closures included) in forked workers, cache_file_name /
load_from_cache_file on a save_to_disk directory, and desc drawing a
progress bar on a terminal only. Every case compares rows and features
with datasets' own map / filter on the same data.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import os
import pty
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

F = datasets.Features({"i": datasets.Value("int32"), "f": datasets.Value("float32"),
                       "a": datasets.Array2D((2, 2), "int32"),
                       "l": datasets.List(datasets.Value("int32")), "s": datasets.Value("string")})
N = 11
D = {"i": list(range(N)), "f": [x / 2 for x in range(N)],
     "a": [[[x, 1], [2, 3]] for x in range(N)], "l": [[x] * (x % 3) for x in range(N)],
     "s": [f"s{x}" for x in range(N)]}
SCALE = 3  # a global the functions below refer to (hashed as plain data)

CASES = {
    "types kept": lambda d: d.map(lambda r: {"i": r["i"] + 1, "f": r["f"] * 2, "l": r["l"] + [1],
                                             "a": r["a"], "s": 3}),
    "types kept batched": lambda d: d.map(lambda b: {"i": [x * 2 for x in b["i"]], "a": b["a"]},
                                          batched=True, batch_size=4),
    "float widens int32": lambda d: d.map(lambda r: {"i": r["i"] + 0.5}),
    "int64 overflow widens": lambda d: d.map(lambda r: {"i": 2 ** 40}),
    "with_indices with_rank": lambda d: d.map(lambda r, i, k: {"x": i * SCALE, "k": k},
                                              with_indices=True, with_rank=True),
    "with_indices batched": lambda d: d.map(lambda b, ix: {"x": [j - 1 for j in ix]},
                                            with_indices=True, batched=True, batch_size=3),
    "numpy batch": lambda d: d.map(lambda b: {"x": np.asarray(b["i"]) * 2,
                                              "m": np.ones((len(b["i"]), 2), np.float32)},
                                   batched=True),
    "numpy row values": lambda d: d.map(lambda r: {"x": np.int16(3), "y": np.array([1.5, 2]),
                                                   "z": np.float32(1)}),
    "pandas frame": lambda d: d.map(lambda b: pd.DataFrame({"x": b["i"]}), batched=True,
                                    remove_columns=d.column_names),
    "pandas series": lambda d: d.map(lambda b: {"x": pd.Series(b["f"]) + 1}, batched=True),
    "arrow table": lambda d: d.map(lambda b: pa.table({"x": b["i"]}), batched=True,
                                   remove_columns=d.column_names),
    "input_columns str": lambda d: d.map(lambda i: {"x": i * 3}, input_columns="i"),
    "input_columns list": lambda d: d.map(lambda i, s: {"x": s * (i % 3)},
                                          input_columns=["i", "s"]),
    "input_columns batched": lambda d: d.map(lambda i: {"x": [v + 1 for v in i]},
                                             input_columns=["i"], batched=True),
    "fn_kwargs": lambda d: d.map(lambda r, k, m=1: {"x": r["i"] * k + m},
                                 fn_kwargs={"k": 9, "m": 2}),
    "identity": lambda d: d.map(None),
    "identity removes": lambda d: d.map(None, remove_columns=["a", "l"]),
    "remove_columns": lambda d: d.map(lambda r: {"x": r["i"]}, remove_columns="f"),
    "drop_last_batch": lambda d: d.map(lambda b: {"x": b["i"]}, batched=True, batch_size=4,
                                       drop_last_batch=True, remove_columns=d.column_names),
    "features=": lambda d: d.map(lambda r: {"s": r["s"] + "!", "n": r["i"]},
                                 features=datasets.Features({**F, "s": datasets.Value(
                                     "large_string"), "n": datasets.Value("int16")})),
    "num_proc rows": lambda d: d.map(lambda r, i, k: {"x": i * SCALE, "k": k},
                                     with_indices=True, with_rank=True, num_proc=3),
    "num_proc batched": lambda d: d.map(lambda b: {"x": [len(b["i"])] * len(b["i"])},
                                        batched=True, batch_size=2, num_proc=2),
    "num_proc > rows": lambda d: d.select([0, 1]).map(lambda r: {"x": r["i"]}, num_proc=4),
    "filter with_indices": lambda d: d.filter(lambda r, i: i % 3 != 1, with_indices=True),
    "filter input_columns": lambda d: d.filter(lambda x: x > 4, input_columns="i"),
    "filter fn_kwargs": lambda d: d.filter(lambda r, t: r["i"] > t, fn_kwargs={"t": 6}),
    "filter batched indices": lambda d: d.filter(lambda b, ix: [j % 2 == 0 for j in ix],
                                                 with_indices=True, batched=True, batch_size=4),
    "filter num_proc": lambda d: d.filter(lambda r, i, k: i % 2 == 0 and k in (0, 1),
                                          with_indices=True, with_rank=True, num_proc=2),
    "filter None": lambda d: d.filter(None),
}


@pytest.fixture(scope="module", params=["memory", "disk"])
def pair(request, tmp_path_factory):
    h = datasets.Dataset.from_dict(D, features=F)
    if request.param == "memory":
        return quiver.Dataset.from_dict(D, features=F), h
    path = str(tmp_path_factory.mktemp("map") / "ds")
    h.save_to_disk(path, num_shards=2)
    return quiver.open(path), datasets.load_from_disk(path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_map_filter_as_datasets(pair, case):
    q, h = pair
    for shuffled in (False, True):
        qd, hd = (q.shuffle(seed=2), h.shuffle(seed=2)) if shuffled else (q, h)
        want = CASES[case](hd)
        got = CASES[case](qd)
        assert got.column_names == want.column_names
        assert got.features == want.features, (got.features, want.features)
        assert got[:] == want[:]
        assert len(got) == len(want)


def test_closures_in_forked_workers(pair):
    q, h = pair
    seen = {"offset": 100}  # a closure over a local dict: not plain data, forked not pickled
    def fn(r):
        return {"x": r["i"] + seen["offset"], "pid": os.getpid()}
    got = q.map(fn, num_proc=2)
    assert got["x"][:] == h.map(lambda r: {"x": r["i"] + 100})["x"][:]
    pids = got["pid"][:]
    # one process per shard (6 rows, then 5), none of them this one
    assert len(set(pids)) == 2 and os.getpid() not in pids
    assert pids[:6] == [pids[0]] * 6 and pids[6:] == [pids[6]] * 5


def test_errors_as_datasets(pair):
    q, h = pair
    for bad in (lambda d: d.map(lambda r: {"x": 1}, input_columns="nope"),
                lambda d: d.filter(lambda x: True, input_columns="nope"),
                lambda d: d.map(lambda r: r, fn_kwargs=[1])):
        with pytest.raises((ValueError, TypeError)) as he:
            bad(h)
        builtin = next(c for c in (ValueError, TypeError) if isinstance(he.value, c))
        with pytest.raises(builtin):
            bad(q)
    with pytest.raises(ZeroDivisionError):  # a worker's exception reaches the caller
        q.map(lambda r: {"x": 1 // (r["i"] - 5)}, num_proc=2)


def test_fingerprints_follow_arguments(pair):
    q, _ = pair
    fn = lambda r, k=0: {"x": r["i"] + k}  # noqa: E731
    a = q.map(fn)
    assert q.map(fn).fingerprint == a.fingerprint
    assert q.map(fn, fn_kwargs={"k": 1}).fingerprint != a.fingerprint
    assert q.map(fn, fn_kwargs={"k": 1}).fingerprint == q.map(fn, fn_kwargs={"k": 1}).fingerprint
    g = lambda r, i=0: {"x": r["i"] + i}  # noqa: E731
    assert q.map(g, with_indices=True).fingerprint != q.map(g).fingerprint
    assert q.map(g, input_columns=None).fingerprint == q.map(g).fingerprint


def test_cache_file_name_and_load_from_cache_file(tmp_path):
    h = datasets.Dataset.from_dict(D, features=F)
    src = str(tmp_path / "ds")
    h.save_to_disk(src)
    q = quiver.open(src)
    calls = []
    def fn(r):
        calls.append(1)
        return {"x": r["i"] * 2}
    target = str(tmp_path / "mapped.arrow")
    m = q.map(fn, cache_file_name=target)
    assert os.path.exists(target) and len(calls) == N
    assert datasets.Dataset.from_file(target)[:] == m[:]  # datasets reads the file written
    assert m[:] == h.map(lambda r: {"x": r["i"] * 2})[:]
    again = q.map(fn, cache_file_name=target)  # reused: the function is not called
    assert len(calls) == N and again[:] == m[:]
    q.map(fn, cache_file_name=target, load_from_cache_file=False)  # recomputed
    assert len(calls) == 2 * N
    with pytest.raises(ValueError):
        q.map(fn, cache_file_name=target, keep_in_memory=True)
    f = q.filter(lambda r: r["i"] > 3, cache_file_name=str(tmp_path / "kept.arrow"))
    assert os.path.exists(tmp_path / "kept.arrow")
    assert f[:] == h.filter(lambda r: r["i"] > 3)[:]


PROGRESS = r"""
import sys
sys.path.insert(0, sys.argv[1])
import quiver
ds = quiver.Dataset.from_dict({"i": list(range(5000))})
ds.map(lambda r: {"x": r["i"]}, desc="Tokenizing")
ds.filter(lambda r: True, desc="Keeping")
print("done")
"""


def test_desc_progress_bar_on_a_tty_only():
    pkg = os.path.join(os.environ["QV_BUILD"], "python")
    master, slave = pty.openpty()
    p = subprocess.run([sys.executable, "-c", PROGRESS, pkg], stdout=subprocess.PIPE,
                       stderr=slave, timeout=120)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert p.returncode == 0 and p.stdout.strip() == b"done"
    text = out.decode()
    assert "Tokenizing: 100%" in text and "5000/5000" in text and "Keeping: 100%" in text
    # without a terminal nothing is drawn
    p = subprocess.run([sys.executable, "-c", PROGRESS, pkg], capture_output=True, timeout=120)
    assert p.returncode == 0 and b"Tokenizing" not in p.stderr
