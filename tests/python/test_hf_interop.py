"""Hugging Face `datasets` interoperability, checked against the real
`datasets` package (pinned in tests/requirements.txt), offline, with a
private HF_HOME.

datasets builds and saves (save_to_disk) datasets covering every feature
type quiver models: Value of each dtype, ClassLabel (with -1), Sequence
(variable, fixed length, of a dict), List of ClassLabel, LargeList,
Array2D / Array3D (dynamic first dimension), Image / Audio / Video with
bytes, Translation, TranslationVariableLanguages, nested dicts, and a
DatasetDict train/test, sharded. Then:
  - `quiver info --json` on the directories reports datasets' own rows,
    shard count, fingerprint and features (same JSON, same key order);
  - `quiver head` / `quiver get` over the shards give the rows pyarrow reads
    (with --decode-labels, ClassLabel names);
  - what quiver emits (schema metadata, state.json, dataset_info.json,
    dataset_dict.json) is byte-identical to what datasets wrote, and parses
    in datasets (Features.from_dict) to features equal to the originals;
  - legacy features JSON normalises as Features.from_dict does;
  - files without metadata get the features datasets derives;
  - cache directories list data files and indices mappings (more in
    test_hf_cache.py);
  - a state.json whose data file escapes the directory is rejected.
"""
import base64
import json
import os
import shutil

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402
import pytest  # noqa: E402

from hfdata import (N_MAIN, dtypes_dataset, main_dataset, media_dataset,  # noqa: E402
                    translation_dataset)
from qvpaths import quiver, quiver_rows  # noqa: E402

D = datasets



def quiver_json(*args):
    return json.loads(quiver(*args).stdout)



# ---------------------------------------------------------------------------
# The datasets under test (built by hfdata.py)

@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    main = main_dataset()
    out = {"main_ds": main, "root": root}
    out["main"] = root / "main"
    main.save_to_disk(str(out["main"]), max_shard_size=1500)  # several shards
    out["media_ds"] = media_dataset()
    out["media"] = root / "media"
    out["media_ds"].save_to_disk(str(out["media"]))
    out["tr_ds"] = translation_dataset()
    out["tr"] = root / "tr"
    out["tr_ds"].save_to_disk(str(out["tr"]))
    out["dtypes_ds"] = dtypes_dataset()
    out["dtypes"] = root / "dtypes"
    out["dtypes_ds"].save_to_disk(str(out["dtypes"]), num_shards=2)
    dd = D.DatasetDict({"train": main.select(range(15)), "test": main.select(range(15, N_MAIN))})
    out["dd_obj"] = dd
    out["dd"] = root / "dd"
    dd.save_to_disk(str(out["dd"]))
    return out


def _state(path):
    with open(os.path.join(path, "state.json")) as f:
        return json.load(f)


def _shards(path):
    return [os.path.join(path, d["filename"]) for d in _state(path)["_data_files"]]


def _table(path):
    """The rows datasets stores: every shard read by pyarrow, in order."""
    tables = [ipc.open_stream(pa.memory_map(p)).read_all() for p in _shards(path)]
    return pa.concat_tables(tables)


# ---------------------------------------------------------------------------
# An independent rendering of quiver's JSON row mapping (docs/json-rows.md)
# for the types the main dataset uses.

def _render(value, typ):
    if value is None:
        return None
    if isinstance(typ, pa.ExtensionType):
        typ = typ.storage_type
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return base64.b64encode(value).decode()
    if pa.types.is_timestamp(typ):
        assert typ.unit == "ms" and typ.tz == "UTC"
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (value.microsecond // 1000)
    if pa.types.is_date32(typ):
        return value.isoformat()
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        return [_render(v, typ.value_type) for v in value]
    if pa.types.is_struct(typ):
        return {typ.field(k).name: _render(value[typ.field(k).name], typ.field(k).type)
                for k in range(typ.num_fields)}
    if pa.types.is_float32(typ):
        return float(np.float32(value))
    return value


def _expected_rows(table):
    rows = table.to_pylist()
    return [{f.name: _render(r[f.name], f.type) for f in table.schema} for r in rows]


def _same_rows(got, want, schema):
    """Equal, comparing float32 values at float32 precision."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert list(g) == list(w)
        for f in schema:
            if pa.types.is_float32(f.type):
                assert np.float32(g[f.name]) == np.float32(w[f.name]), f.name
            else:
                assert g[f.name] == w[f.name], (f.name, g[f.name], w[f.name])


# ---------------------------------------------------------------------------
# info

def _features_json(features):
    return json.dumps(features.to_dict())


@pytest.mark.parametrize("name", ["main", "media", "tr", "dtypes"])
def test_info_dataset_dir(saved, name):
    ds = saved[name + "_ds"]
    info = quiver_json("info", "--json", saved[name])
    assert info["layout"] == "dataset"
    assert info["rows"] == len(ds)
    assert info["num_shards"] == len(_state(saved[name])["_data_files"])
    assert info["fingerprint"] == ds._fingerprint
    assert info["fingerprint"] == _state(saved[name])["_fingerprint"]
    # (load_from_disk's with_format step gives the loaded object a new one)
    loaded = D.load_from_disk(str(saved[name]))
    # same features, same key order
    assert json.dumps(info["features"]) == _features_json(loaded.features)
    assert D.Features.from_dict(info["features"]) == ds.features
    assert [f["name"] for f in info["schema"]] == loaded.column_names


def test_main_is_sharded(saved):
    assert len(_state(saved["main"])["_data_files"]) > 2


def test_info_dataset_dict(saved):
    info = quiver_json("info", "--json", saved["dd"])
    assert info["layout"] == "dataset dict"
    loaded = D.load_from_disk(str(saved["dd"]))
    assert [s["name"] for s in info["splits"]] == list(loaded)
    for s in info["splits"]:
        ds = loaded[s["name"]]
        assert s["rows"] == len(ds)
        assert s["fingerprint"] == saved["dd_obj"][s["name"]]._fingerprint
        assert json.dumps(s["features"]) == _features_json(ds.features)


def test_info_text_lists_splits(saved):
    out = quiver("info", saved["dd"]).stdout.decode()
    assert "split train:" in out and "split test:" in out
    assert "label: ClassLabel(names=['neg', 'pos', 'neutral'])" in out
    assert "m3: Array3D(shape=(None, 2, 2), dtype='float32')" in out


# ---------------------------------------------------------------------------
# head / get across shards

def test_head_all_rows_across_shards(saved):
    table = _table(saved["main"])
    got = quiver_rows("head", saved["main"], "-n", 1000)
    _same_rows(got, _expected_rows(table), table.schema)


def test_head_n_stops(saved):
    assert len(quiver_rows("head", saved["main"], "-n", 4)) == 4
    assert quiver("head", saved["main"], "-n", 0).stdout == b""


def test_get_random_rows_across_shards(saved):
    table = _table(saved["main"])
    want = _expected_rows(table)
    order = [N_MAIN - 1, 0, 7, 7, 12, 3, N_MAIN - 2, 1]
    got = quiver_rows("get", saved["main"], *order)
    _same_rows(got, [want[i] for i in order], table.schema)


def test_get_out_of_range(saved):
    r = quiver("get", saved["main"], N_MAIN, check=False)
    assert r.returncode == 1
    assert r.stderr.decode() == (f"quiver: {saved['main']}: row {N_MAIN} is out of range "
                                 f"(the dataset has {N_MAIN} rows)\n")


def test_dict_needs_split(saved):
    r = quiver("head", saved["dd"], check=False)
    assert r.returncode == 2
    assert r.stderr.decode() == (f"quiver: {saved['dd']} is a DatasetDict with splits train, test: "
                                 "choose one with --split NAME\n")
    test_rows = quiver_rows("head", saved["dd"], "--split", "test", "-n", 100)
    table = _table(saved["dd"] / "test")
    _same_rows(test_rows, _expected_rows(table), table.schema)
    got = quiver_rows("get", saved["dd"], "--split", "train", 14, 0)
    want = _expected_rows(_table(saved["dd"] / "train"))
    _same_rows(got, [want[14], want[0]], table.schema)


def test_dtypes_rows_match_single_file(saved, tmp_path):
    """Every Value dtype: the rows over the shards equal quiver's rendering of
    one pyarrow-written file holding the same table."""
    table = _table(saved["dtypes"])
    one = tmp_path / "one.arrow"
    with ipc.new_file(str(one), table.schema) as w:
        w.write_table(table)
    assert quiver("head", saved["dtypes"], "-n", 100).stdout == quiver("head", one, "-n", 100).stdout
    assert quiver("get", saved["dtypes"], 2, 0).stdout == quiver("get", one, 2, 0).stdout


def test_decode_labels(saved):
    ds = saved["main_ds"]
    table = _table(saved["main"])
    want = _expected_rows(table)
    label_names = ds.features["label"].names
    ner_names = ds.features["ner"].feature.names
    for w in want:
        w["label"] = label_names[w["label"]] if w["label"] >= 0 else -1
        w["ner"] = [ner_names[k] for k in w["ner"]]
    got = quiver_rows("head", saved["main"], "-n", 100, "--decode-labels")
    _same_rows(got, want, table.schema)
    got = quiver_rows("get", saved["main"], 5, 2, "--decode-labels")
    _same_rows(got, [want[5], want[2]], table.schema)
    # a single shard file decodes through its own metadata
    first = _shards(saved["main"])[0]
    got = quiver_rows("head", first, "--decode-labels", "-n", 2)
    _same_rows(got, want[:2], table.schema)
    media = quiver_rows("head", saved["media"], "--decode-labels")
    assert [r["label"] for r in media] == ["cat", "dog", "cat", "dog", "cat"]
    assert media[1]["img"] == {"bytes": base64.b64encode(b"\x89PNG\x01").decode(), "path": None}


# ---------------------------------------------------------------------------
# What quiver emits is what datasets wrote

@pytest.mark.parametrize("name", ["main", "media", "tr", "dtypes", "dd/train", "dd/test"])
def test_emitted_files_are_byte_identical(saved, name):
    d = saved["root"] / name
    for what, fname in [("state", "state.json"), ("info", "dataset_info.json")]:
        got = quiver("debug", "hf-emit", d, "--what=" + what).stdout
        assert got == (d / fname).read_bytes(), fname
    for shard in _shards(d):
        md = ipc.open_stream(pa.memory_map(shard)).schema.metadata[b"huggingface"]
        got = quiver("debug", "hf-emit", shard).stdout
        assert got == md
        parsed = json.loads(got)
        ds = D.load_from_disk(str(d))
        assert D.Features.from_dict(parsed["info"]["features"]) == ds.features


def test_emitted_dataset_dict_json(saved):
    got = quiver("debug", "hf-emit", saved["dd"], "--what=dict").stdout
    assert got == (saved["dd"] / "dataset_dict.json").read_bytes()


LEGACY = [
    {"a": {"feature": {"dtype": "int32", "_type": "Value"}, "_type": "Sequence"}},
    {"a": {"feature": {"dtype": "int32", "_type": "Value"}, "length": 3, "id": "x",
           "_type": "Sequence"}},
    {"a": {"feature": {"x": {"dtype": "int32", "_type": "Value"},
                       "y": {"dtype": "string", "_type": "Value"}}, "length": 2,
           "_type": "Sequence"}},
    {"a": {"feature": {"x": {"feature": {"dtype": "int8", "_type": "Value"}, "_type": "Sequence"}},
           "_type": "Sequence"}},
    {"a": {"feature": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "Sequence"},
           "_type": "Sequence"}},
    {"a": [{"dtype": "double", "_type": "Value"}], "b": [[{"dtype": "float", "_type": "Value"}]]},
    {"c": {"num_classes": 2, "names": ["x", "y"], "names_file": None, "id": None,
           "_type": "ClassLabel"}},
    {"img": {"mode": None, "decode": True, "id": None, "_type": "Image"},
     "aud": {"sampling_rate": 8000, "mono": True, "decode": True, "id": None, "_type": "Audio"},
     "v": {"decode": False, "id": "vid", "_type": "Video"}},
    {"t": {"languages": ["b", "a", "b"], "num_languages": 9, "id": None,
           "_type": "TranslationVariableLanguages"},
     "u": {"languages": None, "_type": "TranslationVariableLanguages"}},
    {"m": {"shape": [None, 4], "dtype": "int64", "id": None, "_type": "Array2D"},
     "n": {"shape": [1, 2, 3, 4, 5], "dtype": "bool", "_type": "Array5D"}},
    {"_type": {"dtype": "string", "_type": "Value"}, "é": {"dtype": "utf8", "_type": "Value"}},
    {"d": {"feature": {"feature": {"dtype": "int32", "id": "i", "_type": "Value"}, "id": "l",
                       "_type": "LargeList"}, "length": 2, "_type": "List"}},
    {"j": {"_type": "Json"}, "p": {"decode": False, "_type": "Pdf"}},
]


@pytest.mark.parametrize("case", range(len(LEGACY)))
def test_legacy_features_normalise_like_datasets(case):
    src = json.dumps(LEGACY[case])
    want = json.dumps(D.Features.from_dict(json.loads(src)).to_dict())
    got = quiver("debug", "hf-features", "-", stdin=src.encode()).stdout.decode()
    assert got == want


def test_bad_features_are_rejected():
    r = quiver("debug", "hf-features", "-", check=False,
               stdin=b'{"a": {"feature": {"dtype": 5, "_type": "Value"}, "_type": "List"}}')
    assert r.returncode == 1
    assert r.stderr.decode() == ("quiver: features['a'].feature: Value 'dtype' must be a string, "
                                 "found integer\n")
    r = quiver("debug", "hf-features", "-", check=False,
               stdin=b'{"a": {"dtype": "int33", "_type": "Value"}}')
    assert r.stderr.decode() == "quiver: features['a']: dtype 'int33' is not a pyarrow data type\n"
    r = quiver("debug", "hf-features", "-", check=False, stdin=b'{"a": {"_type": "Mystery"}}')
    assert r.stderr.decode() == "quiver: features['a']: feature type 'Mystery' is not supported\n"


# ---------------------------------------------------------------------------
# Files without (or with mismatching) metadata: features as datasets derives

def test_derived_features_match_datasets(tmp_path):
    arrays = {
        "i": pa.array([1, 2], pa.int16()),
        "s": pa.array(["a", None], pa.large_string()),
        "ts": pa.array([0, 1], pa.timestamp("us", "Asia/Tokyo")),
        "t": pa.array([0, 1], pa.time64("ns")),
        "d": pa.array([1, 2], pa.decimal128(7, 3)),
        "fsb": pa.array([b"ab", b"cd"], pa.binary(2)),
        "dict": pa.array(["x", "y"]).dictionary_encode(),
        "l": pa.array([[1], []], pa.list_(pa.float32())),
        "fl": pa.array([[1, 2], [3, 4]], pa.list_(pa.int8(), 2)),
        "ll": pa.array([[{"k": 1}], None], pa.large_list(pa.struct([("k", pa.int64())]))),
        "st": pa.array([{"a": [True], "b": None}] * 2,
                       pa.struct([("a", pa.list_(pa.bool_())), ("b", pa.string())])),
    }
    table = pa.table(arrays)
    path = tmp_path / "plain.arrow"
    with ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table)
    info = quiver_json("info", "--json", path)
    want = D.Features.from_arrow_schema(table.schema)
    assert json.dumps(info["features"]) == json.dumps(want.to_dict())
    assert info["fingerprint"] is None


def test_mismatching_metadata_column_is_derived(tmp_path):
    feats = D.Features({"a": D.Value("int32"), "b": D.ClassLabel(names=["x", "y"])})
    md = {"huggingface": json.dumps({"info": {"features": feats.to_dict()}, "fingerprint": "abc"})}
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())], metadata=md)
    path = tmp_path / "mismatch.arrow"
    with ipc.new_file(str(path), schema) as w:
        w.write_table(pa.table({"a": [1], "b": [1]}, schema=schema))
    info = quiver_json("info", "--json", path)
    want = D.Features.from_arrow_schema(schema)
    assert json.dumps(info["features"]) == json.dumps(want.to_dict())
    assert info["features"]["a"] == {"dtype": "int64", "_type": "Value"}
    assert info["fingerprint"] == "abc"
    assert quiver_rows("head", path, "--decode-labels") == [{"a": 1, "b": "y"}]


def test_array_extension_in_plain_file(saved):
    """A shard read as a plain file: ArrayND extensions come back."""
    info = quiver_json("info", "--json", _shards(saved["main"])[0])
    assert info["features"]["m2"] == {"shape": [2, 3], "dtype": "int32", "_type": "Array2D"}
    fields = {f["name"]: f for f in info["schema"]["fields"]}
    assert fields["m3"]["metadata"]["ARROW:extension:name"] == \
        "datasets.features.features.Array3DExtensionType"


# ---------------------------------------------------------------------------
# Cache directories

def test_cache_directory(tmp_path):
    src = tmp_path / "data.jsonl"
    src.write_text("".join(json.dumps({"x": i, "t": f"r{i}"}) + "\n" for i in range(12)))
    ds = D.load_dataset("json", data_files=str(src), split="train",
                        cache_dir=str(tmp_path / "cache"))
    mapped = ds.map(lambda r: {"y": r["x"] * 2})
    kept = ds.filter(lambda r: r["x"] % 3 == 0)
    cache_dir = os.path.dirname(ds.cache_files[0]["filename"])
    info = quiver_json("info", "--json", cache_dir)
    assert info["layout"] == "cache"
    files = {f["name"]: f for f in info["files"]}
    assert sorted(files) == sorted(n for n in os.listdir(cache_dir) if n.endswith(".arrow"))
    builder_file = os.path.basename(ds.cache_files[0]["filename"])
    assert files[builder_file]["role"] == "data" and files[builder_file]["rows"] == 12
    map_file = os.path.basename(mapped.cache_files[0]["filename"])
    assert files[map_file]["role"] == "data"
    assert files[map_file]["fingerprint"] == mapped._fingerprint
    assert json.dumps(files[map_file]["features"]) == json.dumps(mapped.features.to_dict())
    indices = [f for f in files.values() if f["role"] == "indices"]
    assert indices and any(f["rows"] == len(kept) for f in indices)
    # an indices mapping file shows the rows it maps (its data named here:
    # the split and the map output both have 12 rows; test_hf_cache.py
    # covers resolution)
    idx_file = next(n for n, f in files.items() if f["role"] == "indices" and f["rows"] == len(kept))
    assert files[idx_file]["status"] == "ambiguous"
    got = quiver_rows("head", os.path.join(cache_dir, idx_file), "--data", cache_dir, "-n", 100)
    assert got == kept.to_list()
    # the directory's only split
    assert quiver_rows("head", cache_dir, "-n", 100) == ds.to_list()


# ---------------------------------------------------------------------------
# Escaping data file names

def _copy_with_state(saved, tmp_path, edit):
    d = tmp_path / "ds"
    shutil.copytree(saved["tr"], d)
    state = _state(d)
    edit(state, d)
    (d / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True))
    return d


@pytest.mark.parametrize("name,why", [
    ("../data-00000-of-00001.arrow", "contains '..'"),
    ("sub/../../x.arrow", "contains '..'"),
    ("/etc/passwd", "absolute path"),
])
def test_escaping_state_is_rejected(saved, tmp_path, name, why):
    def edit(state, d):
        state["_data_files"][0]["filename"] = name
    d = _copy_with_state(saved, tmp_path, edit)
    for cmd in (["info"], ["head"], ["get", "0"]):
        r = quiver(cmd[0], d, *cmd[1:], check=False)
        assert r.returncode == 1
        assert r.stderr.decode() == (
            f"quiver: {d}/state.json: _data_files[0].filename '{name}' escapes the dataset "
            f"directory ({why})\n")


def test_symlink_escape_is_rejected(saved, tmp_path):
    outside = tmp_path / "outside.arrow"
    shutil.copy(_shards(saved["tr"])[0], outside)

    def edit(state, d):
        os.symlink(outside, d / "link.arrow")
        state["_data_files"][0]["filename"] = "link.arrow"
    d = _copy_with_state(saved, tmp_path, edit)
    r = quiver("info", d, check=False)
    assert r.returncode == 1
    assert r.stderr.decode() == (
        f"quiver: {d}/state.json: _data_files[0].filename 'link.arrow' escapes the dataset "
        f"directory (resolves to '{os.path.realpath(outside)}')\n")
    # a symlink that stays inside is fine
    (d / "link.arrow").unlink()
    os.symlink(d / "data-00000-of-00001.arrow", d / "link.arrow")
    assert quiver_json("info", "--json", d)["rows"] == 2


def test_dataset_dict_split_escape_is_rejected(saved, tmp_path):
    d = tmp_path / "dd"
    shutil.copytree(saved["dd"], d)
    (d / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "../dd"]}))
    r = quiver("info", d, check=False)
    assert r.returncode == 1
    assert r.stderr.decode() == (f"quiver: {d}/dataset_dict.json: split name '../dd' escapes the "
                                 "dataset directory (contains '..')\n")
