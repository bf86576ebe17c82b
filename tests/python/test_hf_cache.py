"""load_dataset cache directories, checked against the real `datasets`
package (offline, private HF_HOME).

datasets builds a json builder cache (train sharded by a small
max_shard_size, test in one file) and then, in that directory, writes the
cache files of map (one process and num_proc=2), shuffle, select, sort,
filter and train_test_split, including transforms of map outputs. Then:
  - `quiver info --json DIR` lists the builder splits with datasets'
    fingerprints, every .arrow file with its role, and for each indices
    mapping the dataset it maps (or the candidates when ambiguous);
  - `quiver head/get DIR --split S` give the rows of load_dataset's split;
  - `quiver head/get FILE` on every indices mapping give exactly the rows of
    the datasets object that wrote it (auto-resolved, or with --data), and
    the file's fingerprint is that object's;
  - ambiguous, out-of-range and missing-split cases fail with the
    documented messages and exit codes;
  - dataset commands read a cache directory's split.
"""
import json
import os
import shutil

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets as D  # noqa: E402
import pytest  # noqa: E402

from qvpaths import quiver, quiver_rows  # noqa: E402

N_TRAIN, N_TEST = 300, 50




def _indices_file(ds):
    """The cache-*.arrow indices file behind ds (its last cache file)."""
    assert ds._indices is not None
    name = ds.cache_files[-1]["filename"]
    assert os.path.basename(name).startswith("cache-")
    return name


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hfcache")
    src = tmp / "src"
    src.mkdir()
    (src / "train.jsonl").write_text("".join(
        json.dumps({"id": i, "text": f"t{(i * 37) % 101:03d}", "label": i % 3}) + "\n"
        for i in range(N_TRAIN)))
    (src / "test.jsonl").write_text("".join(
        json.dumps({"id": 1000 + i, "text": f"s{i}", "label": i % 2}) + "\n"
        for i in range(N_TEST)))
    files = {"train": str(src / "train.jsonl"), "test": str(src / "test.jsonl")}
    # small json chunks and max_shard_size: the train split gets several shards
    builder = D.load_dataset_builder("json", data_files=files, cache_dir=str(tmp / "cache"),
                                     chunksize=1000)
    builder.download_and_prepare(max_shard_size=2000)
    dd = builder.as_dataset()
    loaded = D.load_dataset("json", data_files=files, cache_dir=str(tmp / "cache"),
                            chunksize=1000)
    train, test = dd["train"], dd["test"]
    cache_dir = os.path.dirname(train.cache_files[0]["filename"])
    assert len(train.cache_files) > 1  # sharded

    def dup(b):  # every row twice: 600 rows, the largest dataset here
        return {k: [x for x in v for _ in range(2)] for k, v in b.items()}

    big = train.map(dup, batched=True)
    tm = test.map(lambda r: {"y": r["id"] * 2}, num_proc=2)
    split = big.train_test_split(test_size=0.1, seed=0)
    objs = {
        # over the 600-row map output: resolved automatically
        "big_shuffle": (big.shuffle(seed=1), None),
        "big_filter": (big.filter(lambda r: r["id"] % 7 == 0), None),
        "big_split_train": (split["train"], None),
        "big_split_test": (split["test"], None),
        # over smaller datasets: ambiguous, named with --data
        "train_shuffle": (train.shuffle(seed=2), ("--data", cache_dir, "--split", "train")),
        "train_select": (train.select([5, 3, 299, 0, 5], indices_cache_file_name=os.path.join(
            cache_dir, "cache-myselect.arrow")), ("--data", cache_dir, "--split", "train")),
        "train_sort": (train.sort("text"), ("--data", cache_dir, "--split", "train")),
        "test_filter": (test.filter(lambda r: r["label"] == 1),
                        ("--data", cache_dir, "--split", "test")),
        "tm_shuffle": (tm.shuffle(seed=4), None),  # --data filled in below
    }
    group = os.path.basename(tm.cache_files[0]["filename"]).split("_00000_of_")[0]
    group = group + "_*_of_00002.arrow"
    objs["tm_shuffle"] = (objs["tm_shuffle"][0], ("--data", cache_dir, "--split", group))
    return {"dir": cache_dir, "dd": dd, "loaded": loaded, "big": big, "tm": tm,
            "group": group, "objs": objs}


def _info(cache):
    return json.loads(quiver("info", "--json", cache["dir"]).stdout)


def test_builder_splits(cache):
    info = _info(cache)
    assert info["layout"] == "cache"
    assert [s["name"] for s in info["splits"]] == list(cache["dd"])
    for s in info["splits"]:
        ds = cache["dd"][s["name"]]
        assert s["rows"] == len(ds)
        assert s["fingerprint"] == ds._fingerprint == cache["loaded"][s["name"]]._fingerprint
        assert [f["name"] for f in s["files"]] == \
            [os.path.basename(f["filename"]) for f in ds.cache_files]
        assert json.dumps(s["features"]) == json.dumps(ds.features.to_dict())
    assert info["splits"][0]["num_shards"] > 1


def test_files_and_roles(cache):
    info = _info(cache)
    files = {f["name"]: f for f in info["files"]}
    assert sorted(files) == sorted(n for n in os.listdir(cache["dir"]) if n.endswith(".arrow"))
    for split, ds in cache["dd"].items():
        for f in ds.cache_files:
            e = files[os.path.basename(f["filename"])]
            assert e["role"] == "data" and e["dataset"] == split
    big_file = os.path.basename(cache["big"].cache_files[0]["filename"])
    assert files[big_file]["dataset"] == big_file
    assert files[big_file]["fingerprint"] == cache["big"]._fingerprint
    for f in cache["tm"].cache_files:
        assert files[os.path.basename(f["filename"])]["dataset"] == cache["group"]
    datasets_ = {d["name"]: d for d in info["datasets"]}
    assert datasets_[cache["group"]]["rows"] == N_TEST
    assert datasets_[cache["group"]]["fingerprint"] == cache["tm"]._fingerprint
    assert datasets_[big_file]["rows"] == 2 * N_TRAIN
    for name, (ds, data) in cache["objs"].items():
        e = files[os.path.basename(_indices_file(ds))]
        assert e["role"] == "indices", name
        assert e["rows"] == len(ds), name
        assert e["fingerprint"] == ds._fingerprint, name
        assert e["max_index"] == max(ds._indices.column(0).to_pylist()), name
        if data is None and name != "tm_shuffle":
            assert e["status"] == "resolved" and e["maps"] == big_file, name
        else:
            assert e["status"] == "ambiguous" and e["maps"] is None, name
            cands = {c["name"] for c in e["candidates"]}
            assert data[-1] in cands and big_file in cands, name
    text = quiver("info", cache["dir"]).stdout.decode()
    assert f"maps: file '{big_file}' (600 rows)" in text
    assert "ambiguous: split 'train' (300 rows)" in text


def test_head_get_split(cache):
    for split, ds in cache["dd"].items():
        want = ds.to_list()
        assert quiver_rows("head", cache["dir"], "--split", split, "-n", 10000) == want
        order = [len(ds) - 1, 0, 7, 7, 3]
        assert quiver_rows("get", cache["dir"], "--split", split, *order) == \
            [want[i] for i in order]
    r = quiver("head", cache["dir"], check=False)
    assert r.returncode == 2
    assert r.stderr.decode() == (f"quiver: {cache['dir']} is a load_dataset cache directory "
                                 "with splits train, test: choose one with --split NAME\n")
    r = quiver("get", cache["dir"], "--split", "train", N_TRAIN, check=False)
    assert r.returncode == 1
    assert r.stderr.decode() == (f"quiver: {cache['dir']}: row {N_TRAIN} is out of range "
                                 f"(the dataset has {N_TRAIN} rows)\n")
    r = quiver("head", cache["dir"], "--split", "nope", check=False)
    assert r.returncode == 2 and "no split or dataset 'nope'" in r.stderr.decode()
    # a map output group read as one dataset
    assert quiver_rows("head", cache["dir"], "--split", cache["group"], "-n", 1000) == \
        cache["tm"].to_list()


@pytest.mark.parametrize("name", ["big_shuffle", "big_filter", "big_split_train",
                                  "big_split_test", "train_shuffle", "train_select",
                                  "train_sort", "test_filter", "tm_shuffle"])
def test_indices_file_rows(cache, name):
    ds, data = cache["objs"][name]
    path = _indices_file(ds)
    extra = list(data) if data else []
    want = ds.to_list()
    assert want == ds.flatten_indices(keep_in_memory=True).to_list()
    assert quiver_rows("head", path, *extra, "-n", 100000) == want
    order = [len(ds) - 1, 0, len(ds) // 2, 0]
    assert quiver_rows("get", path, *extra, *order) == [want[i] for i in order]
    if data:
        r = quiver("head", path, check=False)
        assert r.returncode == 1
        err = r.stderr.decode()
        assert err.startswith(f"quiver: {path}: cannot tell which data this indices mapping "
                              "indexes: ambiguous: ")
        assert err.endswith("name the data it indexes (quiver: --data PATH [--split NAME])\n")


def test_indices_out_of_range(cache):
    ds, _ = cache["objs"]["train_shuffle"]
    path = _indices_file(ds)
    idx = ds._indices.column(0).to_pylist()
    row = next(i for i, v in enumerate(idx) if v >= N_TEST)
    r = quiver("head", path, "--data", cache["dir"], "--split", "test", check=False)
    assert r.returncode == 1
    assert r.stderr.decode() == (f"quiver: {path}: row {row} holds index {idx[row]}, outside "
                                 f"the data's {N_TEST} rows (indices must be < {N_TEST})\n")
    # --data naming a single file of the split works when the rows fit
    test_file = cache["dd"]["test"].cache_files[0]["filename"]
    fds, _ = cache["objs"]["test_filter"]
    assert quiver_rows("head", _indices_file(fds), "--data", test_file, "-n", 1000) == \
        fds.to_list()
    # --split without --data on a file is bad usage
    r = quiver("head", path, "--split", "train", check=False)
    assert r.returncode == 2


def test_dataset_command_on_cache_split(cache, tmp_path):
    out = tmp_path / "out"
    quiver("select", cache["dir"], "--split", "train", "--range=10:20", "-o", out)
    got = D.load_from_disk(str(out))
    assert got.to_list() == cache["dd"]["train"].select(range(10, 20)).to_list()
    # an ambiguous indices file as SRC: named with --data (as head/get)
    ds, data_args = cache["objs"]["train_shuffle"]
    path = _indices_file(ds)
    r = quiver("select", path, "--range=10:20", "-o", tmp_path / "amb", check=False)
    assert r.returncode == 1 and "--data" in r.stderr.decode()
    assert not (tmp_path / "amb").exists()
    quiver("select", path, *data_args, "--range=10:20", "-o", tmp_path / "o2")
    assert D.load_from_disk(str(tmp_path / "o2")).to_list() == \
        ds.select(range(10, 20)).to_list()
    r = quiver("concat", path, path, "--data", cache["dir"], "-o", tmp_path / "o3", check=False)
    assert r.returncode == 2


def test_unreadable_file_beside_the_data(cache, tmp_path):
    # A torn or foreign .arrow file in the directory is listed as unreadable
    # and does not hide the datasets beside it; a split whose own data file
    # is unreadable fails to open with the reader's message (exit 1).
    d = tmp_path / "c"
    shutil.copytree(cache["dir"], d)
    (d / "cache-torn.arrow").write_bytes(b"\xff\xff\xff\xff\x10\x00")
    info = json.loads(quiver("info", "--json", d).stdout)
    torn = [f for f in info["files"] if f["name"] == "cache-torn.arrow"]
    assert len(torn) == 1 and torn[0]["role"] == "unreadable"
    assert str(d / "cache-torn.arrow") in torn[0]["error"]
    assert "unreadable" in quiver("info", d).stdout.decode()
    assert quiver_rows("head", d, "--split", "test", "-n", 1000) == cache["dd"]["test"].to_list()
    test_file = os.path.basename(cache["dd"]["test"].cache_files[0]["filename"])
    (d / test_file).write_bytes(b"ARROW1\x00\x00garbage")
    r = quiver("head", d, "--split", "test", check=False)
    assert r.returncode == 1
    err = r.stderr.decode()
    assert "split 'test'" in err and test_file in err, err
    info = json.loads(quiver("info", "--json", d).stdout)
    assert [s["name"] for s in info["splits"]] == ["train", "test"]
    assert test_file in info["splits"][1]["error"] and "rows" not in info["splits"][1]
    # the other split still opens
    assert quiver_rows("head", d, "--split", "train", "-n", 1000) == \
        cache["dd"]["train"].to_list()


def test_datasetdict_with_a_torn_split(tmp_path):
    # save_to_disk DatasetDict whose test shard is torn: the train split
    # still opens; the test split, and every-split commands, fail (exit 1).
    dd = D.DatasetDict({"train": D.Dataset.from_dict({"a": list(range(30))}),
                        "test": D.Dataset.from_dict({"a": [7, 8, 9]})})
    dd.save_to_disk(str(tmp_path / "dd"))
    shard = tmp_path / "dd" / "test" / "data-00000-of-00001.arrow"
    shard.write_bytes(shard.read_bytes()[:100])
    assert quiver_rows("head", tmp_path / "dd", "--split", "train", "-n", 100) == \
        dd["train"].to_list()
    r = quiver("head", tmp_path / "dd", "--split", "test", check=False)
    assert r.returncode == 1 and str(shard) in r.stderr.decode()
    r = quiver("shuffle", tmp_path / "dd", "--seed", "1", "-o", tmp_path / "out", check=False)
    assert r.returncode == 1 and str(shard) in r.stderr.decode()
    assert not (tmp_path / "out").exists()
    info = json.loads(quiver("info", "--json", tmp_path / "dd").stdout)
    assert info["splits"][0]["rows"] == 30 and str(shard) in info["splits"][1]["error"]


def test_split_listed_twice(cache, tmp_path):
    # dataset_info.json's legacy list form can name a split twice: refused,
    # since the two entries could disagree about its files.
    d = tmp_path / "c"
    shutil.copytree(cache["dir"], d)
    info = json.loads((d / "dataset_info.json").read_text())
    test = info["splits"]["test"]
    info["splits"] = [test, dict(test)]
    (d / "dataset_info.json").write_text(json.dumps(info))
    r = quiver("info", d, check=False)
    assert r.returncode == 1
    assert "split 'test' is listed twice" in r.stderr.decode()
