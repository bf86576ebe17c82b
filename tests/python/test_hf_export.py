"""quiver -> Hugging Face `datasets`: what the dataset commands write opens
in the real `datasets` (pinned in tests/requirements.txt), offline, with a
private HF_HOME, for every feature type.

datasets builds (hfdata.py) and saves a Dataset with Value of each dtype,
ClassLabel (with -1), Sequence / List / LargeList, Array2D / Array3D,
Image / Audio / Video with bytes and nested dicts (3 shards), one with
Translation / TranslationVariableLanguages (datasets cannot save both in
one dataset), and a DatasetDict train/test. Then for a plain copy
(`flatten`), `shuffle --seed`, `filter --where`, `sort --by`, `map --set`
(a new column, a replaced float column, a replaced ClassLabel) and sharded
outputs (`--max-shard-size`, through a mapping too):
  (a) datasets.load_from_disk(DST) has exactly the rows datasets gets from
      the same operation on the source (to_list, and the Arrow tables equal,
      so binary and image bytes are byte-exact);
  (b) its features equal datasets' (ClassLabel names, Array shapes, media,
      Translation), checked by equality and spot checks;
  (c) state.json carries the fingerprint quiver printed, and datasets'
      own save_to_disk of its result under that fingerprint writes the same
      state.json and dataset_info.json (same shard names), so load_from_disk
      gives both the same _fingerprint;
  DatasetDict sources without --split give a DatasetDict of both splits.
With --cache, the cache-<fingerprint>.arrow files quiver writes beside SRC
open with Dataset.from_file: indices mappings are one uint64 column
`indices` equal to numpy's permutation / datasets' own indices, the map
output has datasets' map rows, features and quiver's fingerprint; a second
run reuses every file (no new file, mtimes and inodes unchanged). Without
--cache nothing is written beside SRC.

Environment: QV_BUILD (the CLI).
"""
import json
import os
import re
import shutil

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from hfdata import all_features_dataset, translation_features_dataset  # noqa: E402
from qvpaths import CLI, quiver  # noqa: E402

D = datasets
N = 60
N_TRAIN = 40
SEED = 42

# datasets' sort passes null_placement the way pyarrow 25 deprecated.
pytestmark = pytest.mark.filterwarnings("ignore:Specifying null_placement:FutureWarning")



def printed_fingerprints(r):
    return re.findall(r"fingerprint ([0-9a-f]{16})", r.stdout.decode())


def state(path):
    with open(os.path.join(path, "state.json")) as f:
        return json.load(f)


def load(path):
    """datasets' view of a directory, in memory: the oracle's own transforms
    must not write cache files beside the data quiver reads."""
    return D.load_from_disk(str(path), keep_in_memory=True)


def cache_files(d):
    return sorted(f for f in os.listdir(d) if f.startswith("cache-"))


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    out = {"root": root}
    ds = all_features_dataset(N)
    out["all"] = root / "all"
    ds.save_to_disk(str(out["all"]), num_shards=3)
    out["tr"] = root / "tr"
    translation_features_dataset(N).save_to_disk(str(out["tr"]))
    out["dd"] = root / "dd"
    D.DatasetDict({"train": ds.select(range(N_TRAIN)),
                   "test": ds.select(range(N_TRAIN, N))}).save_to_disk(str(out["dd"]))
    return out


# ---------------------------------------------------------------------------
# The operations, in quiver and in datasets


def map_fn(b):
    return {"i8x3": [x * 3 for x in b["i8"]],
            "f64": [x * 2 + 1 for x in b["f64"]],
            "label": [(x + 1) % 3 for x in b["label"]]}


MAP_ARGS = ["--set", "i8x3=i8 * 3", "--set", "f64=f64 * 2 + 1", "--set", "label=(label + 1) % 3"]

OPS = {
    "copy": (["flatten"], lambda d: d),
    "shuffle": (["shuffle", f"--seed={SEED}"], lambda d: d.shuffle(seed=SEED)),
    # batched / input_columns: datasets formats only the columns used (no
    # Pillow or torchcodec needed for the media columns)
    "filter": (["filter", "--where=i8 > 0"],
               lambda d: d.filter(lambda v: v > 0, input_columns="i8")),
    "sort": (["sort", "--by=f64:desc"], lambda d: d.sort("f64", reverse=True)),
    "map": (["map"] + MAP_ARGS, lambda d: d.map(map_fn, batched=True)),
}


def check_features(features):
    """Spot checks beside the equality with datasets' features."""
    assert features["label"] == D.ClassLabel(names=["neg", "pos", "neutral"])
    if "m2" in features:
        assert features["m2"] == D.Array2D(shape=(2, 3), dtype="int32")
        assert features["m3"] == D.Array3D(shape=(None, 2, 2), dtype="float32")
        assert isinstance(features["img"], D.Image)
        assert features["aud"] == D.Audio(sampling_rate=16000)
        assert features["vid"] == D.Video(decode=False)
        assert features["ner"] == D.List(D.ClassLabel(names=["O", "B-PER", "I-PER"]))
    if "tr" in features:
        assert features["tr"] == D.Translation(languages=["fr", "en", "de"])
        assert features["tvl"] == D.TranslationVariableLanguages(languages=["fr", "en"])


def assert_same_dataset(got, want):
    """(a) rows and (b) features."""
    assert len(got) == len(want)
    assert got.features == want.features
    check_features(got.features)
    assert got.to_list() == want.to_list()
    # the Arrow tables as datasets reads them: binary, image bytes, float32,
    # nulls and extension arrays compared exactly
    assert got.with_format("arrow")[:].equals(want.with_format("arrow")[:])


def assert_same_files(dst, want, ref, **save_kw):
    """(c) datasets saving its own result under quiver's fingerprint writes
    what quiver wrote (state.json: fingerprint, shard names, format, split;
    dataset_info.json: features), so load_from_disk fingerprints agree."""
    want._fingerprint = state(dst)["_fingerprint"]
    want.save_to_disk(str(ref), **save_kw)
    for name in ("state.json", "dataset_info.json"):
        assert (dst / name).read_bytes() == (ref / name).read_bytes(), name
    assert D.load_from_disk(str(dst))._fingerprint == D.load_from_disk(str(ref))._fingerprint


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("source", ["all", "tr"])
def test_operation(src, tmp_path, source, op):
    args, fn = OPS[op]
    dst = tmp_path / "out"
    r = quiver(args[0], src[source], *args[1:], "-o", dst)
    want = fn(load(src[source]))
    got = D.load_from_disk(str(dst))
    assert isinstance(got, D.Dataset)
    assert_same_dataset(got, want)
    assert printed_fingerprints(r) == [state(dst)["_fingerprint"]]
    assert_same_files(dst, want, tmp_path / "ref")
    # without --cache nothing is written beside SRC
    assert cache_files(src[source]) == []


@pytest.mark.parametrize("op", list(OPS))
def test_dataset_dict(src, tmp_path, op):
    """Without --split every split is processed: a DatasetDict of both."""
    args, fn = OPS[op]
    dst = tmp_path / "out"
    r = quiver(args[0], src["dd"], *args[1:], "-o", dst)
    want = fn(D.load_from_disk(str(src["dd"]), keep_in_memory=True))
    got = D.load_from_disk(str(dst))
    assert isinstance(got, D.DatasetDict) and list(got) == ["train", "test"]
    for k in ("train", "test"):
        assert_same_dataset(got[k], want[k])
    fps = printed_fingerprints(r)
    assert fps == [state(dst / "train")["_fingerprint"], state(dst / "test")["_fingerprint"]]
    for k, fp in zip(("train", "test"), fps):
        want[k]._fingerprint = fp
    ref = tmp_path / "ref"
    want.save_to_disk(str(ref))
    for name in ("dataset_dict.json", "train/state.json", "train/dataset_info.json",
                 "test/state.json", "test/dataset_info.json"):
        assert (dst / name).read_bytes() == (ref / name).read_bytes(), name
    for k in ("train", "test"):
        assert cache_files(src["dd"] / k) == []


@pytest.mark.parametrize("args,fn", [
    (["select", f"--range=0:{N}"], lambda d: d.select(range(N))),
    (["shuffle", "--seed=5"], lambda d: d.shuffle(seed=5)),
    (["map", "--num-proc=2"] + MAP_ARGS, lambda d: d.map(map_fn, batched=True)),
], ids=["select-range", "shuffle", "map-num-proc"])
def test_sharded_output(src, tmp_path, args, fn):
    """--max-shard-size small: several shards, the ones datasets writes
    (its size estimate: media path bytes out, through the mapping too)."""
    dst = tmp_path / "out"
    quiver(args[0], src["all"], *args[1:], "--max-shard-size=5KB", "-o", dst)
    shards = [f["filename"] for f in state(dst)["_data_files"]]
    assert len(shards) > 1
    assert sorted(f for f in os.listdir(dst) if f.startswith("data-")) == shards
    want = fn(load(src["all"]))
    assert_same_dataset(D.load_from_disk(str(dst)), want)
    assert_same_files(dst, want, tmp_path / "ref", max_shard_size="5KB")


# ---------------------------------------------------------------------------
# map: columns, fingerprints


def test_map_fingerprints(src, tmp_path):
    def fp(*args):
        r = quiver("map", src["tr"], *args, "-o", tmp_path / "fp")
        shutil.rmtree(tmp_path / "fp")
        return printed_fingerprints(r)[0]

    base = fp("--set", "y=i8 * 3", "--set", "f64=f64 + 1")
    # canonical expressions: spacing and redundant parentheses do not matter
    assert fp("--set", " y = (i8*3)", "--set", "f64=((f64) + 1)") == base
    assert fp("--set", "y=i8 * 4", "--set", "f64=f64 + 1") != base
    assert fp("--set", "z=i8 * 3", "--set", "f64=f64 + 1") != base
    assert fp("--set", "f64=f64 + 1", "--set", "y=i8 * 3") != base  # column order
    assert fp("--set", "y=i8 * 3", "--set", "f64=f64 + 1", "--batch-size=7") != base
    assert fp("--set", "y=i8 * 3", "--set", "f64=f64 + 1", "--batch-size=1000") == base
    assert fp("--set", "y=i8 * 3", "--set", "f64=f64 + 1", "--remove-columns=text") != base
    # worker processes change neither rows nor fingerprint
    assert fp("--set", "y=i8 * 3", "--set", "f64=f64 + 1", "--num-proc=3") == base


def test_map_columns(src, tmp_path):
    """Replaced columns keep their place, new ones follow in --set order,
    removed-and-set columns move to the end (datasets' dict merge); result
    types: bool, int64, float64, string; a ClassLabel replaced by another
    type becomes that type's Value."""
    dst = tmp_path / "out"
    quiver("map", src["tr"], "--set", "text=len(text) > 20", "--set", "b=starts_with(text, 'row 1')",
           "--set", "label=label * 1.5", "--set", "s=text", "--set", "f64=f64 * 2",
           "--remove-columns=f64,i8", "--batch-size=0", "-o", dst)

    def fn(b):
        return {"text": [len(t) > 20 for t in b["text"]],
                "b": [t.startswith("row 1") for t in b["text"]],
                "label": [x * 1.5 for x in b["label"]],
                "s": list(b["text"]),
                "f64": [x * 2 for x in b["f64"]]}

    want = load(src["tr"]).map(fn, batched=True, batch_size=None, remove_columns=["f64", "i8"])
    got = D.load_from_disk(str(dst))
    assert got.column_names == ["label", "text", "tr", "tvl", "b", "s", "f64"]
    assert got.features == want.features
    assert got.features["label"] == D.Value("float64")
    assert got.features["b"] == D.Value("bool")
    assert got.to_list() == want.to_list()


def test_map_result_type_differs_from_datasets(src, tmp_path):
    """The documented difference: datasets first tries a replaced column's
    old type (int8 here, since every value fits); quiver gives the
    expression's type (int64). The values are the same."""
    dst = tmp_path / "out"
    quiver("map", src["tr"], "--set", "i8=i8 + 1", "-o", dst)
    want = load(src["tr"]).map(lambda b: {"i8": [x + 1 for x in b["i8"]]}, batched=True)
    got = D.load_from_disk(str(dst))
    assert want.features["i8"] == D.Value("int8")
    assert got.features["i8"] == D.Value("int64")
    assert got.to_list() == want.to_list()


def test_map_errors(src, tmp_path):
    out = tmp_path / "bad"
    r = quiver("map", src["tr"], "--set", "y=i8 *", "-o", out, check=False)
    assert r.returncode == 2
    assert "expected an expression after '*'" in r.stderr.decode()
    assert "  i8 *\n      ^" in r.stderr.decode()
    r = quiver("map", src["tr"], "--set", "y=nope + 1", "-o", out, check=False)
    assert r.returncode == 2
    assert "set y: unknown column 'nope'" in r.stderr.decode()
    r = quiver("map", src["tr"], "--set", "y=text + 1", "-o", out, check=False)
    assert r.returncode == 2 and "cannot apply '+'" in r.stderr.decode()
    r = quiver("map", src["tr"], "--set", "y=i8", "--remove-columns=zz", "-o", out, check=False)
    assert r.returncode == 2
    msg = "Column to remove ['zz'] not in the dataset. Current columns in the dataset: "
    assert msg in r.stderr.decode()
    with pytest.raises(ValueError, match=re.escape("Column to remove ['zz'] not in the dataset")):
        load(src["tr"]).map(lambda b: b, remove_columns=["zz"])
    r = quiver("map", src["tr"], "--set", "y=i8 * 9223372036854775807", "-o", out, check=False)
    assert r.returncode == 1 and "integer overflow" in r.stderr.decode()
    assert not out.exists()


# ---------------------------------------------------------------------------
# --cache: datasets' cache files beside SRC, reused


def _files_state(d):
    return {f: (os.stat(d / f).st_mtime_ns, os.stat(d / f).st_ino) for f in cache_files(d)}


def test_cache_files(src, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(src["all"], data)
    base = load(data)
    runs = {op: OPS[op] for op in ("shuffle", "filter", "sort", "map")}
    fps = {}
    for op, (args, fn) in runs.items():
        dst = tmp_path / f"out-{op}"
        r = quiver(args[0], data, *args[1:], "--cache", "-o", dst)
        fps[op] = printed_fingerprints(r)[0]
        assert state(dst)["_fingerprint"] == fps[op]
        assert_same_dataset(D.load_from_disk(str(dst)), fn(base))
    assert cache_files(data) == sorted(f"cache-{fp}.arrow" for fp in fps.values())

    def indices(op):
        ds = D.Dataset.from_file(str(data / f"cache-{fps[op]}.arrow"))
        assert ds.column_names == ["indices"]
        assert ds.features == D.Features({"indices": D.Value("uint64")})
        return ds["indices"]

    # indices mappings: numpy's permutation, datasets' own mappings
    shuffled = base.shuffle(seed=SEED)
    assert indices("shuffle") == np.random.default_rng(SEED).permutation(N).tolist()
    assert indices("shuffle") == shuffled._indices.column("indices").to_pylist()
    for op in ("filter", "sort"):
        assert indices(op) == runs[op][1](base)._indices.column("indices").to_pylist()
    # the map output: datasets' map rows and features, quiver's fingerprint
    mapped = D.Dataset.from_file(str(data / f"cache-{fps['map']}.arrow"))
    want = base.map(map_fn, batched=True)
    assert mapped._fingerprint == fps["map"]
    assert_same_dataset(mapped, want)
    # a second run reuses every file
    before = _files_state(data)
    for op, (args, fn) in runs.items():
        dst = tmp_path / f"again-{op}"
        r = quiver(args[0], data, *args[1:], "--cache", "-o", dst)
        assert printed_fingerprints(r) == [fps[op]]
        assert_same_dataset(D.load_from_disk(str(dst)), fn(base))
    assert _files_state(data) == before


def test_cache_map_workers_and_flatten(src, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(src["tr"], data)
    r = quiver("map", data, "--set", "n=len(text)", "--num-proc=2", "--cache", "-o", tmp_path / "m")
    fp = printed_fingerprints(r)[0]
    parts = [data / f"cache-{fp}_{i:05d}_of_00002.arrow" for i in range(2)]
    assert cache_files(data) == [p.name for p in parts]
    want = load(data).map(lambda b: {"n": [len(t) for t in b["text"]]}, batched=True)
    got = D.concatenate_datasets([D.Dataset.from_file(str(p)) for p in parts])
    assert got.features == want.features and got.to_list() == want.to_list()
    # flatten --cache: flatten_indices' cache file beside the shuffled data
    sh = tmp_path / "sh"
    quiver("shuffle", data, "--seed=3", "-o", sh)
    r = quiver("flatten", sh, "--cache", "-o", tmp_path / "flat")
    fp = printed_fingerprints(r)[0]
    assert cache_files(sh) == [f"cache-{fp}.arrow"]
    flat = D.Dataset.from_file(str(sh / f"cache-{fp}.arrow"))
    assert flat._fingerprint == fp
    assert flat.to_list() == load(data).shuffle(seed=3).to_list()


def test_cache_dataset_dict(src, tmp_path):
    data = tmp_path / "dd"
    shutil.copytree(src["dd"], data)
    r = quiver("shuffle", data, f"--seed={SEED}", "--cache", "-o", tmp_path / "out")
    fps = printed_fingerprints(r)
    for k, fp in zip(("train", "test"), fps):
        assert cache_files(data / k) == [f"cache-{fp}.arrow"]
        n = len(load(data / k))
        assert D.Dataset.from_file(str(data / k / f"cache-{fp}.arrow"))["indices"] == \
            np.random.default_rng(SEED).permutation(n).tolist()
