"""The dataset layer (quiver/dataset.h and the `quiver select | shuffle |
sort | filter | shard | split | concat | flatten` commands) against the real
Hugging Face `datasets` (pinned in tests/requirements.txt), offline, with a
private HF_HOME.

`datasets` builds and saves (save_to_disk, several shards) a dataset with
ints, unicode strings, a ClassLabel, floats with nulls and NaN, and lists,
plus a DatasetDict. Then, on the same data:
  - every CLI command's output, opened by datasets.load_from_disk, has the
    rows (same order), features and split layout that the same operation in
    datasets gives, and state.json carries the fingerprint quiver printed;
  - chains of operations through the C API (ctypes on libquiver.so), where
    the indices mappings compose without being flattened, give datasets'
    rows too;
  - fingerprints are equal across processes, and the cache files written
    beside file-backed data are reused by a later process and opened by
    datasets (Dataset.from_file with indices_filename, and flatten_indices'
    output with its fingerprint in the schema metadata).

Environment: QV_BUILD (libquiver.so, the CLI).
"""
import ctypes
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402
import pytest  # noqa: E402

from hfdata import SMALL_FEATURES, small_rows  # noqa: E402
from qvpaths import CLI, LIB, quiver, require  # noqa: E402

# datasets' sort passes null_placement the way pyarrow 25 deprecated.
pytestmark = pytest.mark.filterwarnings("ignore:Specifying null_placement:FutureWarning")

D = datasets
N = 3000
FEATURES = SMALL_FEATURES


make_rows = small_rows


@pytest.fixture(scope="module")
def work():
    d = tempfile.mkdtemp(prefix="quiver-ds-oracle-")
    yield d
    shutil.rmtree(d, True)


@pytest.fixture(scope="module")
def src(work):
    """A Dataset directory in 3 shards, written by datasets."""
    ds = D.Dataset.from_dict(make_rows(N), features=FEATURES)
    path = os.path.join(work, "src")
    ds.save_to_disk(path, num_shards=3)
    return path


@pytest.fixture(scope="module")
def dict_src(work):
    dd = D.DatasetDict({
        "train": D.Dataset.from_dict(make_rows(500, 1), features=FEATURES),
        "test": D.Dataset.from_dict(make_rows(120, 2), features=FEATURES),
    })
    path = os.path.join(work, "dict")
    dd.save_to_disk(path)
    return path



def norm(rows):
    """Rows as comparable values (NaN != NaN otherwise)."""
    def fix(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v
    return [{k: fix(v) for k, v in r.items()} for r in rows]


def assert_same(got, want):
    assert len(got) == len(want)
    assert got.features == want.features
    assert norm(got.to_list()) == norm(want.to_list())


def printed_fingerprints(stdout):
    return re.findall(r"fingerprint ([0-9a-f]{16})", stdout.decode())


def state_fp(path):
    with open(os.path.join(path, "state.json")) as f:
        return json.load(f)["_fingerprint"]


def load(path):
    """datasets' view of a directory, in memory: the oracle's own transforms
    must not write cache files beside the data quiver reads."""
    return D.load_from_disk(path, keep_in_memory=True)


# ---------------------------------------------------------------------------
# CLI, one operation at a time


@pytest.mark.parametrize("seed", [0, 1, 42, 2**40 + 3])
def test_shuffle(src, work, seed):
    out = os.path.join(work, f"shuffle-{seed}")
    r = quiver("shuffle", src, f"--seed={seed}", "-o", out)
    assert f"seed {seed}" in r.stdout.decode()
    want = load(src).shuffle(seed=seed)
    got = load(out)
    assert_same(got, want)
    assert printed_fingerprints(r.stdout) == [state_fp(out)]
    # datasets writes the shards it would write itself: one here.
    assert sorted(f for f in os.listdir(out) if f.endswith(".arrow")) == ["data-00000-of-00001.arrow"]
    # nothing was written beside the source
    assert not [f for f in os.listdir(src) if f.startswith("cache-")]


FILTERS = [
    ("label == 1 and len(text) > 20", lambda x: x["label"] == 1 and len(x["text"]) > 20),
    ("score is null", lambda x: x["score"] is None),
    ("score > 1.5 or id % 7 == 0", lambda x: (x["score"] is not None and x["score"] > 1.5) or x["id"] % 7 == 0),
    ("starts_with(text, 'gamma') and not contains(text, 'x')",
     lambda x: x["text"].startswith("gamma") and "x" not in x["text"]),
    ("len(tags) >= 3 and label in (0, 2)", lambda x: len(x["tags"]) >= 3 and x["label"] in (0, 2)),
    ("id < 0", lambda x: False),
]


@pytest.mark.parametrize("expr,fn", FILTERS, ids=[f[0] for f in FILTERS])
def test_filter(src, work, expr, fn):
    out = os.path.join(work, "filter")
    shutil.rmtree(out, True)
    quiver("filter", src, f"--where={expr}", "-o", out)
    assert_same(load(out), load(src).filter(fn))


SORTS = [
    (["score"], None, "last"),
    (["score"], None, "first"),
    (["score:desc"], None, "last"),
    (["label:desc", "text"], None, "last"),
    (["text", "id:desc"], None, "first"),
    (["label", "score:desc", "id"], 7, "last"),
]


@pytest.mark.parametrize("by,seed,nulls", SORTS, ids=[f"{','.join(s[0])}-{s[1]}-{s[2]}" for s in SORTS])
def test_sort(src, work, by, seed, nulls):
    """Stable multi-key sort with datasets' null placement (nulls and NaN in
    `score`), on the data or after a shuffle (the order is composed)."""
    base = src
    want = load(src)
    if seed is not None:
        base = os.path.join(work, f"sort-base-{seed}")
        if not os.path.exists(base):
            quiver("shuffle", src, f"--seed={seed}", "-o", base)
        want = want.shuffle(seed=seed)
    out = os.path.join(work, "sort")
    shutil.rmtree(out, True)
    r = quiver("sort", base, f"--by={','.join(by)}", f"--nulls={nulls}", "-o", out)
    cols = [b.split(":")[0] for b in by]
    rev = [b.endswith(":desc") for b in by]
    want = want.sort(cols, reverse=rev, null_placement=nulls)
    assert_same(load(out), want)
    assert printed_fingerprints(r.stdout) == [state_fp(out)]


def test_sort_errors(src, work):
    r = quiver("sort", src, "--by=nope", "-o", os.path.join(work, "bad"), check=False)
    assert r.returncode == 2
    assert "Column 'nope' not found in the dataset" in r.stderr.decode()
    r = quiver("sort", src, "--by=tags", "-o", os.path.join(work, "bad"), check=False)
    assert r.returncode != 0


def test_filter_errors(src, work):
    r = quiver("filter", src, "--where=label == ", "-o", os.path.join(work, "bad"), check=False)
    assert r.returncode != 0
    assert "expected an expression" in r.stderr.decode()
    r = quiver("filter", src, "--where=nope > 1", "-o", os.path.join(work, "bad"), check=False)
    assert r.returncode != 0 and "nope" in r.stderr.decode()


def test_select(src, work):
    rows = [17, 3, 2999, 3, 0, 1500, 1501]
    f = os.path.join(work, "rows.txt")
    with open(f, "w") as fh:
        fh.write("\n".join(str(r) for r in rows) + "\n\n")
    out = os.path.join(work, "select")
    quiver("select", src, f"--indices={f}", "-o", out)
    assert_same(load(out), load(src).select(rows))
    out2 = os.path.join(work, "select-range")
    quiver("select", src, "--range=990:1010", "-o", out2)
    assert_same(load(out2), load(src).select(range(990, 1010)))
    with open(f, "w") as fh:
        fh.write("1\n3000\n")
    r = quiver("select", src, f"--indices={f}", "-o", out, check=False)
    assert r.returncode == 1
    assert "index 3000 out of range for dataset of size 3000" in r.stderr.decode()
    with open(f, "w") as fh:
        fh.write("1\nabc\n")
    r = quiver("select", src, f"--indices={f}", "-o", out, check=False)
    assert r.returncode == 1 and ":2: not a row number: 'abc'" in r.stderr.decode()


@pytest.mark.parametrize("num_shards,index,contiguous", [(4, 0, True), (4, 3, True), (7, 2, True),
                                                         (3, 1, False), (5, 4, False)])
def test_shard(src, work, num_shards, index, contiguous):
    out = os.path.join(work, "shard")
    shutil.rmtree(out, True)
    args = ["shard", src, f"--num-shards={num_shards}", f"--index={index}", "-o", out]
    if not contiguous:
        args.append("--strided")
    quiver(*args)
    assert_same(load(out), load(src).shard(num_shards, index, contiguous=contiguous))


@pytest.mark.parametrize("test_size,train_size,seed,shuffle", [
    ("0.2", None, 1, True),
    (None, None, 5, True),
    ("100", None, 0, True),
    (None, "0.55", 9, True),
    ("0.1", "0.3", 3, True),
    ("250", "1000", 11, True),
    ("0.25", None, None, False),
])
def test_split(src, work, test_size, train_size, seed, shuffle):
    out = os.path.join(work, "split")
    shutil.rmtree(out, True)
    args = ["split", src, "-o", out]
    kw = {}
    for name, v in (("test", test_size), ("train", train_size)):
        if v is not None:
            args.append(f"--{name}-size={v}")
            kw[f"{name}_size"] = float(v) if "." in v else int(v)
    if seed is not None:
        args.append(f"--seed={seed}")
        kw["seed"] = seed
    if not shuffle:
        args.append("--no-shuffle")
        kw["shuffle"] = False
    r = quiver(*args)
    want = load(src).train_test_split(**kw)
    got = D.load_from_disk(out, keep_in_memory=True)
    assert isinstance(got, D.DatasetDict) and list(got) == ["train", "test"]
    assert_same(got["train"], want["train"])
    assert_same(got["test"], want["test"])
    fps = printed_fingerprints(r.stdout)
    assert fps == [state_fp(os.path.join(out, "train")), state_fp(os.path.join(out, "test"))]
    assert fps[0] != fps[1]


def test_split_errors(src, work):
    r = quiver("split", src, "--test-size=3000", "-o", os.path.join(work, "bad"), check=False)
    assert r.returncode == 2
    assert ("test_size=3000 should be either positive and smaller than the number of samples 3000 "
            "or a float in the (0, 1) range") in r.stderr.decode()
    with pytest.raises(ValueError, match=re.escape("test_size=3000 should be either positive")):
        load(src).train_test_split(test_size=3000)


def test_concat(src, work):
    sh = os.path.join(work, "concat-part")
    quiver("shuffle", src, "--seed=3", "-o", sh)
    out = os.path.join(work, "concat")
    quiver("concat", src, sh, "-o", out)
    want = D.concatenate_datasets([load(src), load(src).shuffle(seed=3)])
    assert_same(load(out), want)
    # axis 1: columns of another dataset with the same number of rows
    other = D.Dataset.from_dict({"extra": list(range(N, 0, -1))})
    op = os.path.join(work, "concat-other")
    other.save_to_disk(op)
    out1 = os.path.join(work, "concat1")
    quiver("concat", sh, op, "--axis=1", "-o", out1)
    want1 = D.concatenate_datasets([load(src).shuffle(seed=3), other], axis=1)
    assert_same(load(out1), want1)
    r = quiver("concat", src, op, "-o", out1, check=False)
    assert r.returncode != 0
    # axis 0 matches columns by name: another column order is fine
    reord = load(src).select(range(10)).select_columns(["text", "tags", "id", "label", "score"])
    rp = os.path.join(work, "concat-reordered")
    reord.save_to_disk(rp)
    out2 = os.path.join(work, "concat2")
    quiver("concat", src, rp, "-o", out2)
    assert_same(load(out2), D.concatenate_datasets([load(src), reord]))


def test_flatten_and_chain(src, work):
    """CLI outputs feed the next command: shuffle -> filter -> select -> shard."""
    a, b, c, d = (os.path.join(work, f"chain-{i}") for i in range(4))
    quiver("shuffle", src, "--seed=12", "-o", a)
    quiver("filter", a, "--where=label != 2", "-o", b)
    f = os.path.join(work, "chain-rows.txt")
    with open(f, "w") as fh:
        fh.write("\n".join(str(i) for i in range(0, 1500, 3)))
    quiver("select", b, f"--indices={f}", "-o", c)
    quiver("shard", c, "--num-shards=3", "--index=2", "-o", d)
    want = (load(src).shuffle(seed=12).filter(lambda x: x["label"] != 2)
            .select(range(0, 1500, 3)).shard(3, 2))
    assert_same(load(d), want)
    e = os.path.join(work, "chain-flat")
    r = quiver("flatten", d, "-o", e)
    assert_same(load(e), want)
    assert state_fp(e) != state_fp(d)
    assert printed_fingerprints(r.stdout) == [state_fp(e)]


def test_dataset_dict_sources(dict_src, work):
    out = os.path.join(work, "dict-shuffled")
    r = quiver("shuffle", dict_src, "--seed=4", "-o", out)
    want = D.load_from_disk(dict_src, keep_in_memory=True).shuffle(seed=4)
    got = D.load_from_disk(out, keep_in_memory=True)
    assert list(got) == ["train", "test"]
    for k in ("train", "test"):
        assert_same(got[k], want[k])
    assert len(printed_fingerprints(r.stdout)) == 2
    one = os.path.join(work, "dict-one")
    quiver("filter", dict_src, "--split=test", "--where=label == 0", "-o", one)
    assert_same(load(one), D.load_from_disk(dict_src, keep_in_memory=True)["test"].filter(lambda x: x["label"] == 0))
    r = quiver("split", dict_src, "-o", os.path.join(work, "x"), check=False)
    assert r.returncode == 2 and "--split" in r.stderr.decode()


def test_max_shard_size(src, work):
    out = os.path.join(work, "sharded-out")
    quiver("shuffle", src, "--seed=1", "--max-shard-size=50KB", "-o", out)
    ds = load(src).shuffle(seed=1)
    ref = os.path.join(work, "sharded-ref")
    ds.save_to_disk(ref, max_shard_size="50KB")
    shards = sorted(f for f in os.listdir(out) if f.startswith("data-"))
    assert shards == sorted(f for f in os.listdir(ref) if f.startswith("data-"))
    assert len(shards) > 1
    assert_same(load(out), ds)


# ---------------------------------------------------------------------------
# The C API through ctypes: composed mappings, fingerprints, cache files


class Opts(ctypes.Structure):
    _fields_ = [("keep_in_memory", ctypes.c_bool), ("ignore_cache", ctypes.c_bool),
                ("cache_file_name", ctypes.c_char_p), ("writer_batch_size", ctypes.c_int64),
                ("new_fingerprint", ctypes.c_char_p), ("progress", ctypes.c_void_p),
                ("progress_ctx", ctypes.c_void_p)]


class Size(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("fraction", ctypes.c_double), ("count", ctypes.c_int64)]


def lib():
    q = ctypes.CDLL(require(LIB))
    P, E = ctypes.c_void_p, ctypes.c_char_p
    q.qv_dataset_fingerprint.restype = ctypes.c_char_p
    q.qv_dataset_fingerprint.argtypes = [P]
    q.qv_dataset_num_rows.restype = ctypes.c_int64
    q.qv_dataset_num_rows.argtypes = [P]
    q.qv_dataset_unref.argtypes = [P]
    q.qv_dataset_open.argtypes = [E, E, ctypes.POINTER(P), P]
    q.qv_dataset_shuffle.argtypes = [P, ctypes.c_uint64, P, ctypes.POINTER(P), P]
    q.qv_dataset_select.argtypes = [P, ctypes.POINTER(ctypes.c_int64), ctypes.c_int64, P,
                                    ctypes.POINTER(P), P]
    q.qv_dataset_filter.argtypes = [P, E, P, ctypes.POINTER(P), P]
    q.qv_dataset_shard.argtypes = [P, ctypes.c_int64, ctypes.c_int64, ctypes.c_bool, P,
                                   ctypes.POINTER(P), P]
    q.qv_dataset_train_test_split.argtypes = [P, Size, Size, ctypes.c_bool, ctypes.c_uint64, P,
                                              ctypes.POINTER(P), ctypes.POINTER(P), P]
    q.qv_dataset_sort.argtypes = [P, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int32,
                                  ctypes.POINTER(ctypes.c_bool), ctypes.c_int, P,
                                  ctypes.POINTER(P), P]
    q.qv_dataset_flatten_indices.argtypes = [P, P, ctypes.POINTER(P), P]
    q.qv_dataset_concatenate.argtypes = [ctypes.POINTER(P), ctypes.c_int64, ctypes.c_int, P,
                                         ctypes.POINTER(P), P]
    q.qv_dataset_save_to_disk.argtypes = [P, E, P, ctypes.POINTER(ctypes.c_int64), P]
    q.qv_dataset_cache_files.argtypes = [P, ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
                                         ctypes.POINTER(ctypes.c_int64), P]
    q.qv_table_free_paths.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int64]
    for f in ("qv_dataset_open", "qv_dataset_shuffle", "qv_dataset_select", "qv_dataset_filter",
              "qv_dataset_shard", "qv_dataset_sort", "qv_dataset_train_test_split", "qv_dataset_flatten_indices",
              "qv_dataset_concatenate", "qv_dataset_save_to_disk", "qv_dataset_cache_files"):
        getattr(q, f).restype = ctypes.c_int
    return q


class Q:
    """Thin wrapper: every call checks its status."""

    def __init__(self):
        self.q = lib()
        self.err = ctypes.create_string_buffer(1024)

    def check(self, st):
        assert st == 0, self.err.value.decode()

    def call(self, name, *args):
        out = ctypes.c_void_p()
        self.check(getattr(self.q, name)(*args, ctypes.byref(out), self.err))
        return out

    def open(self, path):
        return self.call("qv_dataset_open", path.encode(), None)

    def fp(self, ds):
        return self.q.qv_dataset_fingerprint(ds).decode()

    def save(self, ds, path):
        n = ctypes.c_int64()
        self.check(self.q.qv_dataset_save_to_disk(ds, path.encode(), None, ctypes.byref(n), self.err))

    def cache_files(self, ds):
        p = ctypes.POINTER(ctypes.c_char_p)()
        n = ctypes.c_int64()
        self.check(self.q.qv_dataset_cache_files(ds, ctypes.byref(p), ctypes.byref(n), self.err))
        files = [p[i].decode() for i in range(n.value)]
        self.q.qv_table_free_paths(p, n)
        return files


def chain(q, ds, opts=None):
    """shuffle(21) -> select -> filter -> shard(3, 1, strided) -> shuffle(5)
    -> sort(label desc, score), all as composed mappings."""
    opts = ctypes.byref(opts) if opts is not None else None
    s = q.call("qv_dataset_shuffle", ds, 21, opts)
    rows = list(range(2990, 10, -7))
    arr = (ctypes.c_int64 * len(rows))(*rows)
    sel = q.call("qv_dataset_select", s, arr, len(rows), opts)
    f = q.call("qv_dataset_filter", sel, b"label == 1 or score is null", opts)
    sh = q.call("qv_dataset_shard", f, 3, 1, False, opts)
    s2 = q.call("qv_dataset_shuffle", sh, 5, opts)
    cols = (ctypes.c_char_p * 2)(b"label", b"score")
    desc = (ctypes.c_bool * 2)(True, False)
    so = q.call("qv_dataset_sort", s2, cols, 2, desc, 0, opts)
    return [s, sel, f, sh, s2, so], rows


def datasets_chain(ds, rows):
    return (ds.shuffle(seed=21).select(rows)
            .filter(lambda x: x["label"] == 1 or x["score"] is None)
            .shard(3, 1, contiguous=False).shuffle(seed=5)
            .sort(["label", "score"], reverse=[True, False]))


def test_api_chain_composes(src, work):
    q = Q()
    ds = q.open(src)
    steps, rows = chain(q, ds, Opts(keep_in_memory=True))
    out = os.path.join(work, "api-chain")
    q.save(steps[-1], out)
    want = datasets_chain(load(src), rows)
    assert_same(load(out), want)
    assert state_fp(out) == q.fp(steps[-1])
    # train_test_split through the API too
    tr, te = ctypes.c_void_p(), ctypes.c_void_p()
    mem = Opts(keep_in_memory=True)
    q.check(q.q.qv_dataset_train_test_split(steps[-1], Size(1, 0.3, 0), Size(0, 0, 0), True, 77,
                                            ctypes.byref(mem), ctypes.byref(tr), ctypes.byref(te),
                                            q.err))
    want_tt = want.train_test_split(test_size=0.3, seed=77)
    for name, h in (("train", tr), ("test", te)):
        p = os.path.join(work, f"api-{name}")
        q.save(h, p)
        assert_same(load(p), want_tt[name])
        q.q.qv_dataset_unref(h)
    # concatenate two mapped datasets (axis 0)
    arr = (ctypes.c_void_p * 2)(steps[-1], steps[0])
    cat = q.call("qv_dataset_concatenate", arr, 2, 0, None)
    p = os.path.join(work, "api-concat")
    q.save(cat, p)
    assert_same(load(p), D.concatenate_datasets([want, load(src).shuffle(seed=21)]))
    for h in steps + [cat, ds]:
        q.q.qv_dataset_unref(h)


CHILD = r"""
import ctypes, json, sys
sys.path.insert(0, {here!r})
from test_dataset_oracle import Q, chain
q = Q()
ds = q.open({path!r})
steps, _ = chain(q, ds)
print(json.dumps({{"fps": [q.fp(s) for s in steps], "files": q.cache_files(steps[-1])}}))
"""


def run_child(path):
    here = os.path.dirname(os.path.abspath(__file__))
    code = CHILD.format(here=here, path=path)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def test_fingerprints_and_cache_across_processes(src, work):
    """File-backed data: shuffle and filter write cache-<fp>.arrow beside the
    data; a second process computes the same fingerprints and reuses them."""
    data = os.path.join(work, "cached-src")
    shutil.copytree(src, data)
    first = run_child(data)
    caches = sorted(f for f in os.listdir(data) if f.startswith("cache-"))
    # shuffle, filter, the last shuffle and sort wrote mappings; select and
    # the strided shard keep theirs in memory, as datasets does
    assert caches == sorted(f"cache-{first['fps'][i]}.arrow" for i in (0, 2, 4, 5))
    mtimes = {f: os.stat(os.path.join(data, f)).st_mtime_ns for f in caches}
    second = run_child(data)
    assert second["fps"] == first["fps"]
    assert second["files"] == first["files"]
    assert {f: os.stat(os.path.join(data, f)).st_mtime_ns for f in caches} == mtimes
    assert not [f for f in os.listdir(src) if f.startswith("cache-")]
    # a fingerprint does not depend on the directory the data was copied to
    # (it comes from state.json), so the results equal the ones on src
    q = Q()
    steps, rows = chain(q, q.open(src), Opts(keep_in_memory=True))
    assert [q.fp(s) for s in steps] == first["fps"]
    # datasets opens quiver's indices cache file as the mapping of its shard
    shard_file = os.path.join(data, "data-00000-of-00003.arrow")
    one = q.open(shard_file)
    s = q.call("qv_dataset_shuffle", one, 8, None)
    files = q.cache_files(s)
    assert files[0] == os.path.realpath(shard_file) and files[1].endswith(f"cache-{q.fp(s)}.arrow")
    via = D.Dataset.from_file(shard_file, indices_filename=files[1])
    assert norm(via.to_list()) == norm(D.Dataset.from_file(shard_file, in_memory=True).shuffle(seed=8).to_list())
    # flatten_indices writes a data cache file carrying its fingerprint
    flat = q.call("qv_dataset_flatten_indices", s, None)
    ff = q.cache_files(flat)
    assert len(ff) == 1 and ff[0].endswith(f"cache-{q.fp(flat)}.arrow")
    back = D.Dataset.from_file(ff[0])
    assert back._fingerprint == q.fp(flat)
    assert norm(back.to_list()) == norm(via.to_list())
    for h in [one, s, flat] + steps:
        q.q.qv_dataset_unref(h)
