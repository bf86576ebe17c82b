"""Dataset.map and Dataset.filter of the CPython extension (`import
quiver`) against datasets 5.2.0 (offline, private HF_HOME) and the CLI:

  - map(set={name: expr}) gives the rows, features and fingerprint of
    `quiver map --set` on the same data, and the rows and features of
    datasets' map with the equivalent Python function;
  - map(function) unbatched and batched (new columns, replaced columns,
    remove_columns, pyarrow arrays returned, nested lists and dicts, mixed
    int/float, a changed row count) gives datasets' rows and features for
    `ds.map(same function)`;
  - filter(function) unbatched and batched gives datasets' rows;
  - fingerprints of functions: the same function gives the same fingerprint
    in two processes (different hash seeds); a changed constant changes it;
    a closure over an object that is not plain data gets a random
    fingerprint and, with cache=True, a warning; new_fingerprint is taken
    (and checked);
  - errors: the function's own exception comes back unchanged (type,
    traceback) and no cache file is left; a value that cannot be converted
    is a TypeError naming the column and row; num_proc with a callable is a
    ValueError.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import glob
import json
import os
import subprocess
import sys
import warnings

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets as D  # noqa: E402
import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402

from hfdata import SMALL_FEATURES, small_rows  # noqa: E402
from qvpaths import import_quiver, quiver as run_cli  # noqa: E402

quiver = import_quiver()

N = 300
FEATURES = SMALL_FEATURES


def rows(n=N):
    return small_rows(n, seed=5, nan=False)


@pytest.fixture
def src(tmp_path):
    path = str(tmp_path / "ds")
    D.Dataset.from_dict(rows(), features=FEATURES).save_to_disk(path, num_shards=2)
    return path


def same(q, h):
    assert q.column_names == h.column_names
    assert q.features.to_dict() == h.features.to_dict()
    assert list(q) == list(h)


def cache_names(path):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(path, "*cache-*")))


# ------------------------------------------------------------------ set= --

def test_map_set_equals_cli_and_datasets(src, tmp_path):
    ds = quiver.open(src)
    sets = {"score": "score * 2", "n": "len(text)", "label": "(label + 1) % 3", "big": "id > 100"}
    m = ds.map(set=sets, batch_size=64, remove_columns=["tags"])
    out = str(tmp_path / "cli")
    args = sum((["--set", f"{k}={v}"] for k, v in sets.items()), [])
    run_cli("map", src, *args, "--batch-size=64", "--remove-columns=tags", "-o", out)
    cli = D.load_from_disk(out)
    same(m, cli)
    with open(os.path.join(out, "state.json")) as f:
        assert m.fingerprint == json.load(f)["_fingerprint"]

    def fn(b):
        return {"score": [None if s is None else s * 2 for s in b["score"]],
                "n": [len(t) for t in b["text"]],
                "label": [(v + 1) % 3 for v in b["label"]],
                "big": [i > 100 for i in b["id"]]}
    same(m, D.load_from_disk(src).map(fn, batched=True, batch_size=64, remove_columns=["tags"]))
    # the same expressions through a mapping (shuffled), in two workers
    s = ds.shuffle(seed=3).map(set=sets, num_proc=2)
    h = D.load_from_disk(src).shuffle(seed=3).map(fn, batched=True)
    same(s, h)
    with pytest.raises(quiver.QuiverError, match="set n: unknown column 'nope'"):
        ds.map(set={"n": "len(nope)"})
    with pytest.raises(TypeError, match="a function or set="):
        ds.map(lambda r: r, set={"n": "1"})
    with pytest.raises(TypeError, match="str expressions"):
        ds.map(set={"n": 1})


# ------------------------------------------------------------ callables --

def add_len(r):
    return {"n": len(r["text"]), "label": (r["label"] + 1) % 3}


def nested(r):
    return {"pair": {"k": r["text"][:3], "v": [r["id"], None]},
            "mixed": r["id"] if r["id"] % 2 else r["id"] + 0.5,
            "words": r["text"].split(),
            "nothing": None}


def batched_sq(b):
    return {"sq": [i * i for i in b["id"]],
            "score": [None if s is None else -s for s in b["score"]]}


def batched_sq_arrow(b):
    # datasets' batched map takes lists (not pyarrow arrays) in the dict
    return {"sq": pa.array([i * i for i in b["id"]], pa.int64()),
            "score": pa.array([None if s is None else -s for s in b["score"]])}


def explode(b):
    return {"word": [w for t in b["text"] for w in t.split()]}


def test_map_callables_equal_datasets(src):
    ds, hf = quiver.open(src), D.load_from_disk(src)
    same(ds.map(add_len), hf.map(add_len))
    same(ds.map(nested), hf.map(nested))
    same(ds.map(add_len, remove_columns=["text", "tags"]),
         hf.map(add_len, remove_columns=["text", "tags"]))
    same(ds.map(batched_sq, batched=True, batch_size=32),
         hf.map(batched_sq, batched=True, batch_size=32))
    same(ds.map(batched_sq_arrow, batched=True, batch_size=32),
         hf.map(batched_sq, batched=True, batch_size=32))
    i32 = ds.map(lambda b: {"sq": pa.array(b["id"], pa.int32())}, batched=True)
    assert i32.features["sq"] == quiver.Value("int32") and i32["sq"] == list(range(N))
    same(ds.map(nested, batched=False, batch_size=7), hf.map(nested))
    # the number of rows changes when every input column is removed
    cols = ds.column_names
    same(ds.map(explode, batched=True, batch_size=50, remove_columns=cols),
         hf.map(explode, batched=True, batch_size=50, remove_columns=cols))
    # None: the dataset is unchanged (same fingerprint, as datasets' map
    # returning nothing keeps the data)
    assert list(ds.map(lambda r: None)) == list(ds)
    # through a mapping
    same(ds.shuffle(seed=1).map(add_len), hf.shuffle(seed=1).map(add_len))
    # a record batch returned whole
    rb = ds.map(lambda b: pa.record_batch({"sq": pa.array([i * i for i in b["id"]])}),
                batched=True)
    assert rb["sq"] == [i * i for i in range(N)]
    assert rb.features["sq"] == quiver.Value("int64")


def test_filter_callables_equal_datasets(src):
    ds, hf = quiver.open(src), D.load_from_disk(src)

    def keep(r):
        return r["label"] == 1 or r["score"] is None

    def keep_b(b):
        return [len(t) > 10 for t in b["text"]]
    assert list(ds.filter(keep)) == list(hf.filter(keep))
    assert list(ds.filter(keep_b, batched=True, batch_size=33)) == \
        list(hf.filter(keep_b, batched=True, batch_size=33))
    assert list(ds.shuffle(seed=4).filter(keep)) == list(hf.shuffle(seed=4).filter(keep))
    with pytest.raises(ValueError, match="returned 2 values for a batch of 33 rows"):
        ds.filter(lambda b: [True, False], batched=True, batch_size=33)


# ---------------------------------------------------------- fingerprints --

SCRIPT = """
import sys
sys.path.insert(0, {build!r})
import quiver
K = {k}
def f(r):
    return {{"y": r["id"] * K + len(r["text"])}}
ds = quiver.open({src!r})
print(ds.map(f).fingerprint, ds.filter(lambda r: r["id"] % K == 0).fingerprint)
"""


def fingerprints_in_subprocess(src, k, seed):
    code = SCRIPT.format(build=os.path.join(os.environ["QV_BUILD"], "python"), k=k, src=src)
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)
    return r.stdout.decode().split()


def test_function_fingerprints(src):
    a = fingerprints_in_subprocess(src, 3, 1)
    assert a == fingerprints_in_subprocess(src, 3, 2)
    b = fingerprints_in_subprocess(src, 4, 1)
    assert a[0] != b[0] and a[1] != b[1]
    ds = quiver.open(src)
    assert ds.map(add_len).fingerprint == ds.map(add_len).fingerprint
    assert ds.map(add_len).fingerprint != ds.map(add_len, remove_columns="tags").fingerprint
    assert ds.map(batched_sq, batched=True).fingerprint != \
        ds.map(batched_sq, batched=True, batch_size=10).fingerprint
    assert ds.map(add_len, new_fingerprint="mine").fingerprint == "mine"
    with pytest.raises(quiver.QuiverError, match="fingerprint"):
        ds.map(add_len, new_fingerprint="bad/name")
    # a closure over an object that is not plain data: random, and a
    # warning when the result is cached
    thing = object()

    def g(r):
        return {"y": r["id"] if thing else 0}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r1 = ds.map(g)
    r2 = ds.map(g)
    assert r1.fingerprint != r2.fingerprint and list(r1) == list(r2)
    with pytest.warns(UserWarning, match="could not be hashed deterministically"):
        r3 = ds.map(g, cache=True)
    assert os.path.basename(r3.cache_files[0]["filename"]) == f"cache-{r3.fingerprint}.arrow"
    # a plain closure is hashed: same value, same fingerprint
    k = 5

    def h(r):
        return {"y": r["id"] * k}
    assert ds.map(h).fingerprint == ds.map(h).fingerprint
    # cache=True writes beside the data and reuses the file
    c1 = ds.map(add_len, cache=True)
    c2 = ds.map(add_len, cache=True)
    assert c1.fingerprint == c2.fingerprint
    assert c1.cache_files == c2.cache_files
    assert os.path.basename(c1.cache_files[0]["filename"]) == f"cache-{c1.fingerprint}.arrow"


# ----------------------------------------------------------------- errors --

class Boom(Exception):
    pass


def boom_at_77(r):
    if r["id"] == 77:
        raise Boom("row 77")
    return {"y": 1}


def test_errors(src):
    ds = quiver.open(src)
    before = cache_names(src)
    warnings.simplefilter("error")  # boom_at_77 hashes (Boom: a class, by name)
    for batched in (False, True):
        with pytest.raises(Boom, match="row 77") as e:
            ds.map(boom_at_77 if not batched else
                   lambda b: {"y": [boom_at_77({"id": i})["y"] for i in b["id"]]},
                   batched=batched, cache=True)
        tb = e.value.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        assert tb.tb_frame.f_code.co_name == "boom_at_77"
        assert cache_names(src) == before
    with pytest.raises(Boom):
        ds.filter(lambda r: boom_at_77(r) is None, cache=True)
    assert cache_names(src) == before
    with pytest.raises(TypeError, match=r"column 'x', row 3: cannot convert a value of type set"):
        ds.map(lambda r: {"x": {1} if r["id"] == 3 else None})
    # mixed values raise with on_mixed_types=None (datasets' default "use_json" makes them Json)
    with pytest.raises(TypeError, match=r"column 'x', row 4: a str value among int values"):
        ds.map(lambda b: {"x": [0, 1, 2, 3, "four"]}, batched=True, batch_size=5,
               remove_columns=ds.column_names, on_mixed_types=None)
    with pytest.raises(TypeError, match=r"row 0: the function must return a dict"):
        ds.map(lambda r: 1)
    with pytest.raises(TypeError, match=r"row 1: the function returned None"):
        ds.map(lambda r: {"x": 1} if r["id"] == 0 else None)
    with pytest.raises(OverflowError, match=r"column 'x', row 0: int 18446744073709551616"):
        ds.map(lambda r: {"x": 2 ** 64})
    # num_proc with a callable runs in forked workers (test_pyapi_map.py); their exceptions
    # come back to the caller
    with pytest.raises(Boom):
        ds.map(boom_at_77, num_proc=2)
    with pytest.raises(quiver.QuiverError, match="returned 1 rows for a batch of 300"):
        ds.map(lambda b: {"x": [1]}, batched=True, batch_size=None)
    with pytest.raises(TypeError, match="callable"):
        ds.map(42)
    assert cache_names(src) == before
