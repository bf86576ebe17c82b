"""quiver.DatasetDict and quiver.load_from_disk (python/quiver/dataset_dict.py)
against datasets 5.2.0 on the same DatasetDict directory: load_from_disk's
return types, per-split transforms' rows (shuffle with one seed and with
per-split seeds, as numpy draws them), num_rows / column_names / shape,
repr, train_test_split's DatasetDict, and save_to_disk output that
datasets.load_from_disk reads back with equal rows and features."""
import os

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets as D  # noqa: E402
import pytest  # noqa: E402

from hfdata import SMALL_FEATURES, small_rows  # noqa: E402
from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()


def rows(d):
    return {k: list(v) for k, v in d.items()}


@pytest.fixture(scope="module")
def dd_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("dd") / "dd")
    D.DatasetDict({
        "train": D.Dataset.from_dict(small_rows(40, seed=1, nan=False), features=SMALL_FEATURES),
        "validation": D.Dataset.from_dict(small_rows(9, seed=2, nan=False),
                                          features=SMALL_FEATURES),
        "test": D.Dataset.from_dict(small_rows(13, seed=3, nan=False), features=SMALL_FEATURES),
    }).save_to_disk(path)
    return path


def test_load_from_disk_types(dd_path, tmp_path):
    q, h = quiver.load_from_disk(dd_path), D.load_from_disk(dd_path)
    assert isinstance(q, quiver.DatasetDict) and isinstance(q, dict)
    assert list(q) == list(h) == ["train", "validation", "test"]
    assert all(isinstance(v, quiver.Dataset) for v in q.values())
    assert rows(q) == rows(h)
    assert q.num_rows == h.num_rows and q.column_names == h.column_names
    assert q.shape == h.shape and q.num_columns == h.num_columns
    assert repr(q) == repr(h)
    assert q["train"].features == h["train"].features
    one = os.path.join(dd_path, "test")
    assert isinstance(quiver.load_from_disk(one), quiver.Dataset)
    assert list(quiver.load_from_disk(one)) == list(D.load_from_disk(one))
    assert rows(quiver.DatasetDict.load_from_disk(dd_path)) == rows(h)
    empty = tmp_path / "empty"
    empty.mkdir()
    for bad in [str(empty), str(tmp_path / "missing")]:
        with pytest.raises(FileNotFoundError):
            D.load_from_disk(bad)
        with pytest.raises(FileNotFoundError):
            quiver.load_from_disk(bad)
    with pytest.raises(FileNotFoundError):
        quiver.DatasetDict.load_from_disk(one)


def test_transforms_per_split(dd_path):
    q, h = quiver.load_from_disk(dd_path), D.load_from_disk(dd_path)
    cases = [
        (q.shuffle(seed=5), h.shuffle(seed=5)),
        (q.shuffle(seeds=11), h.shuffle(seeds=11)),
        (q.shuffle(seeds={"train": 1, "validation": 2, "test": 3}),
         h.shuffle(seeds={"train": 1, "validation": 2, "test": 3})),
        (q.sort("score"), h.sort("score")),
        (q.sort(["label", "id"], reverse=[True, False]),
         h.sort(["label", "id"], reverse=[True, False])),
        (q.filter(lambda r: r["label"] == 1), h.filter(lambda r: r["label"] == 1)),
        (q.map(lambda r: {"n": len(r["text"])}), h.map(lambda r: {"n": len(r["text"])})),
        (q.map(lambda b: {"id2": [i * 2 for i in b["id"]]}, batched=True),
         h.map(lambda b: {"id2": [i * 2 for i in b["id"]]}, batched=True)),
        (q.select_columns(["id", "label"]), h.select_columns(["id", "label"])),
        (q.remove_columns("text"), h.remove_columns("text")),
        (q.rename_column("text", "t"), h.rename_column("text", "t")),
        (q.rename_columns({"id": "i", "tags": "g"}), h.rename_columns({"id": "i", "tags": "g"})),
        (q.shuffle(seed=3).flatten_indices(), h.shuffle(seed=3).flatten_indices()),
    ]
    for got, want in cases:
        assert isinstance(got, quiver.DatasetDict)
        assert rows(got) == rows(want)
        assert got.column_names == want.column_names
        assert {k: v.features.to_dict() for k, v in got.items()} == \
            {k: v.features.to_dict() for k, v in want.items()}
    with pytest.raises(ValueError):
        q.shuffle(seed=1, seeds=2)
    with pytest.raises(ValueError):
        q.remove_columns("nope")
    with pytest.raises(TypeError):
        quiver.DatasetDict({"a": 1}).num_rows


def test_train_test_split_is_a_dataset_dict(dd_path):
    q = quiver.load_from_disk(dd_path)["train"]
    h = D.load_from_disk(dd_path)["train"]
    got, want = q.train_test_split(test_size=0.25, seed=7), h.train_test_split(test_size=0.25,
                                                                                seed=7)
    assert isinstance(got, quiver.DatasetDict) and list(got) == ["train", "test"]
    assert rows(got) == rows(want) and repr(got) == repr(want)
    assert rows(got.shuffle(seed=2)) == rows(want.shuffle(seed=2))


def test_save_to_disk_loads_in_datasets(dd_path, tmp_path):
    q = quiver.load_from_disk(dd_path)
    h = D.load_from_disk(dd_path)
    out = str(tmp_path / "out")
    q.shuffle(seed=9).filter("label != 2").save_to_disk(out)
    back = D.load_from_disk(out)
    want = h.shuffle(seed=9).filter(lambda r: r["label"] != 2)
    assert isinstance(back, D.DatasetDict) and list(back) == list(want)
    assert rows(back) == rows(want)
    assert {k: v.features for k, v in back.items()} == {k: v.features for k, v in want.items()}
    assert rows(quiver.load_from_disk(out)) == rows(want)
    # num_shards, one int or the same per split; over an existing DatasetDict
    q.save_to_disk(out, num_shards=2)
    back = D.load_from_disk(out)
    assert rows(back) == rows(h)
    assert all(len(v.cache_files) == 2 for v in back.values())
    q.save_to_disk(out, num_shards={"train": 3, "validation": 3, "test": 3})
    assert all(len(v.cache_files) == 3 for v in D.load_from_disk(out).values())
    with pytest.raises(ValueError):
        q.save_to_disk(out, num_shards={"train": 1})
    with pytest.raises(ValueError):
        q.save_to_disk(out, num_shards=0)
    with pytest.raises(ValueError):
        quiver.DatasetDict({"a/b": q["test"]}).save_to_disk(str(tmp_path / "x"))
    # a file in the way is refused by the C writer, nothing written
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError):
        q.save_to_disk(str(f))
    assert f.read_text() == "x"


def test_pickle(dd_path):
    import pickle
    q = quiver.load_from_disk(dd_path).shuffle(seed=4)
    back = pickle.loads(pickle.dumps(q))
    assert isinstance(back, quiver.DatasetDict) and rows(back) == rows(q)
    assert rows(back) == rows(D.load_from_disk(dd_path).shuffle(seed=4))
