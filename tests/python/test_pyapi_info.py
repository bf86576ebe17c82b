"""Dataset.info against `datasets` 5.2.0 itself (python/quiver/info.py,
python/src/info.c, qv_dataset_info_json / qv_dataset_with_info): the info
of a save_to_disk directory written by datasets (from a generator: builder
name, config, version, splits, sizes), of constructors given info=, and of
every derived dataset (select, shuffle, filter, map, columns, cast, sort,
train_test_split, flatten_indices) equals datasets' on the same data
(to_dict is datasets' asdict, repr of the plain fields); dataset_info.json
round-trips through either library; a changed ds.info is written by
save_to_disk (Dataset and DatasetDict) as datasets writes it.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import json
import os

import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402
from datasets.utils.py_utils import asdict  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()


def _gen(n):
    for i in range(n):
        yield {"id": i, "text": f"row {i}", "label": i % 2}


@pytest.fixture(scope="module")
def gendir(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("info") / "ds")
    feats = datasets.Features({"id": datasets.Value("int64"), "text": datasets.Value("string"),
                               "label": datasets.ClassLabel(names=["neg", "pos"])})
    hf = datasets.Dataset.from_generator(_gen, gen_kwargs={"n": 20}, features=feats,
                                         cache_dir=str(tmp_path_factory.mktemp("hfcache")))
    hf.save_to_disk(d)
    return d


def test_info_of_a_datasets_directory(gendir):
    q, h = quiver.load_from_disk(gendir), datasets.load_from_disk(gendir)
    assert isinstance(q.info, quiver.DatasetInfo)
    assert q.info.builder_name == h.info.builder_name == "generator"
    assert q.info.to_dict() == asdict(h.info)
    assert q.info == h.info and q.info.splits == asdict(h.info.splits)
    assert q.info.features == h.features
    assert q.info.version == asdict(h.info.version)
    assert (q.info.dataset_size, q.info.download_size) == (h.info.dataset_size,
                                                           h.info.download_size)


def _derived(ds, lib):
    yield "select", ds.select([3, 1, 2])
    yield "shuffle", ds.shuffle(seed=4)
    yield "filter", ds.filter(lambda r: r["id"] % 3 == 0)
    yield "map", ds.map(lambda r: {"n": len(r["text"])})
    yield "remove_columns", ds.remove_columns("text")
    yield "rename_column", ds.rename_column("text", "t")
    yield "select_columns", ds.select_columns(["id"])
    yield "cast_column", ds.cast_column("id", lib.Value("int32"))
    yield "sort", ds.sort("id", reverse=True)
    yield "flatten_indices", ds.shuffle(seed=1).flatten_indices()
    tts = ds.train_test_split(test_size=0.25, seed=2)
    yield "train", tts["train"]
    yield "test", tts["test"]
    yield "shard", ds.shard(num_shards=3, index=1)


def test_info_of_derived_datasets(gendir):
    q, h = quiver.load_from_disk(gendir), datasets.load_from_disk(gendir)
    for (name, a), (_, b) in zip(_derived(q, quiver), _derived(h, datasets)):
        assert a.info.to_dict() == asdict(b.info), name
        assert a.info == b.info, name
        assert a.info.features == a.features, name


def test_constructors_keep_info(tmp_path):
    info = datasets.DatasetInfo(description="d", citation="c", homepage="https://h",
                                license="mit", version="1.2.3", builder_name="b",
                                supervised_keys=datasets.info.SupervisedKeysData("x", "y"),
                                dataset_size=10)
    cols = {"x": [1, 2], "y": ["a", "b"]}
    for q, h in ((quiver.Dataset.from_dict(cols, info=info),
                  datasets.Dataset.from_dict(cols, info=info)),
                 (quiver.Dataset.from_list([{"x": 1, "y": "a"}], info=info),
                  datasets.Dataset.from_list([{"x": 1, "y": "a"}], info=info))):
        assert q.info.to_dict() == asdict(h.info)
        assert q.info == h.info
        assert repr(q.info).startswith("DatasetInfo(description='d', citation='c', ")
    # the default info of a fresh dataset
    q, h = quiver.Dataset.from_dict(cols), datasets.Dataset.from_dict(cols)
    assert q.info.to_dict() == asdict(h.info)
    assert repr(q.info) == repr(h.info)
    # a quiver DatasetInfo is taken too, and equals datasets'
    qi = quiver.DatasetInfo(description="d", citation="c", homepage="https://h",
                            license="mit", version="1.2.3", builder_name="b",
                            supervised_keys={"input": "x", "output": "y"}, dataset_size=10)
    assert quiver.Dataset.from_dict(cols, info=qi).info == \
        datasets.Dataset.from_dict(cols, info=info).info
    with pytest.raises(TypeError):
        quiver.Dataset.from_dict(cols, info={"description": "d"})


def _json(path):
    with open(os.path.join(path, "dataset_info.json")) as f:
        return json.load(f)


def test_round_trip_and_changed_info_saved(gendir, tmp_path):
    q, h = quiver.load_from_disk(gendir), datasets.load_from_disk(gendir)
    out_q, out_h = str(tmp_path / "q"), str(tmp_path / "h")
    q.save_to_disk(out_q)
    h.save_to_disk(out_h)
    assert _json(out_q) == _json(out_h)
    assert datasets.load_from_disk(out_q).info == h.info
    # a changed info is written, as datasets writes it
    q2, h2 = quiver.load_from_disk(gendir).select([0, 5]), \
        datasets.load_from_disk(gendir).select([0, 5])
    for ds in (q2, h2):
        ds.info.description = "changed"
        ds.info.license = "apache-2.0"
    assert q2.info.description == "changed"  # the same object is kept
    q2.save_to_disk(out_q)
    h2.save_to_disk(out_h)
    assert _json(out_q) == _json(out_h)
    assert datasets.load_from_disk(out_q).info.description == "changed"
    assert quiver.load_from_disk(out_q).info == h2.info
    # DatasetDict.save_to_disk too; datasets' DatasetDict has no info
    qd = quiver.DatasetDict({"train": q2})
    hd = datasets.DatasetDict({"train": h2})
    qd.save_to_disk(str(tmp_path / "qd"))
    hd.save_to_disk(str(tmp_path / "hd"))
    assert _json(tmp_path / "qd" / "train") == _json(tmp_path / "hd" / "train")
    with pytest.raises(AttributeError):
        hd.info
    with pytest.raises(AttributeError):
        qd.info
    # an unchanged info leaves the saved dataset as it was
    assert _json(out_q)["license"] == "apache-2.0"


def test_from_dict_round_trip():
    h = datasets.load_dataset  # noqa: F841  (datasets imported: its DatasetInfo is the oracle)
    d = {"description": "x", "features": {"a": {"dtype": "int32", "_type": "Value"}},
         "splits": {"train": {"name": "train", "num_bytes": 5, "num_examples": 2,
                              "dataset_name": "n"}},
         "version": {"version_str": "0.0.1", "major": 0, "minor": 0, "patch": 1},
         "unknown_key": 1}
    qi, hi = quiver.DatasetInfo.from_dict(d), datasets.DatasetInfo.from_dict(d)
    assert qi.to_dict() == asdict(hi)
    assert qi == hi
    assert isinstance(qi.features, quiver.Features) and qi.features == hi.features
    c = qi.copy()
    c.description = "y"
    assert qi.description == "x" and c != qi
    c.update(quiver.DatasetInfo(citation="z"))
    hc = hi.copy()
    hc.description = "y"
    hc.update(datasets.DatasetInfo(citation="z"))
    assert c.to_dict() == asdict(hc)
