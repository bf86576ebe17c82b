"""The one save writer of quiver.distributed (python/quiver/distributed.py
over qv_dataset_assemble_save and qv_write_arrow_stream_path): shards
written by write_shard and assembled by finish_save load in `datasets`
5.2.0 with the rows in block order, the features and the fingerprint given;
dataset_info.json is what datasets' save_to_disk writes for the same data
and state.json the same but for the fingerprint; the staging directory is
gone. _quiver._assemble_save's refusals (no shards, shards of different
columns, features that do not describe the columns, a bad fingerprint, a
destination that is not a dataset directory) leave the shards where they
were and the destination untouched; an existing dataset directory is
replaced whole; split and a derived fingerprint without one.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import json
import os

import pyarrow as pa
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()
from quiver import distributed  # noqa: E402

TABLE = pa.table({"id": pa.array(range(10), pa.int64()),
                  "text": [f"t{i}" * (i % 3) for i in range(10)],
                  "vec": pa.array([[float(i)] * 2 for i in range(10)], pa.list_(pa.float32(), 2))})


def _json(path):
    with open(path) as f:
        return json.load(f)


def test_write_shards_and_assemble_as_datasets_saves(tmp_path):
    dst = str(tmp_path / "out")
    stage = distributed.staging_dir(dst)
    cuts = [(0, 4), (4, 4), (4, 9), (9, 10)]  # an empty block too
    shards = []
    for i, (lo, hi) in enumerate(cuts):
        # several tables per block (streamed), one of them a RecordBatch
        parts = [TABLE.slice(lo, (hi - lo) // 2), TABLE.slice(lo + (hi - lo) // 2,
                                                              hi - lo - (hi - lo) // 2)]
        parts[1] = parts[1].to_batches()[0] if parts[1].num_rows else parts[1]
        name, rows, feats = distributed.write_shard(stage, f"block-{i}.arrow", parts)
        assert rows == hi - lo
        shards.append(name)
    assert distributed.finish_save(stage, dst, shards, feats, "0123456789abcdef") == dst
    assert not os.path.exists(stage)
    assert sorted(os.listdir(tmp_path)) == ["out"]
    h = datasets.load_from_disk(dst)
    assert _json(os.path.join(dst, "state.json"))["_fingerprint"] == "0123456789abcdef"
    assert quiver.load_from_disk(dst).fingerprint == "0123456789abcdef"
    assert h.to_dict() == TABLE.to_pydict()
    assert [len(datasets.Dataset.from_file(os.path.join(dst, f["filename"])))
            for f in h.cache_files] == [hi - lo for lo, hi in cuts]
    ref = datasets.Dataset.from_dict(TABLE.to_pydict(),
                                     features=datasets.Features.from_dict(feats))
    ref.save_to_disk(str(tmp_path / "ref"), num_shards=4)
    assert _json(os.path.join(dst, "dataset_info.json")) == \
        _json(tmp_path / "ref" / "dataset_info.json")
    s, r = _json(os.path.join(dst, "state.json")), _json(tmp_path / "ref" / "state.json")
    assert {k: v for k, v in s.items() if k != "_fingerprint"} == \
        {k: v for k, v in r.items() if k != "_fingerprint"}
    q = quiver.load_from_disk(dst)
    assert q.features == h.features and q[:] == h[:]


def _shards(tmp_path, tables, stage="stage"):
    d = tmp_path / stage
    d.mkdir()
    out = []
    for i, t in enumerate(tables):
        p = str(d / f"s{i}.arrow")
        with pa.ipc.new_stream(p, t.schema) as w:
            w.write_table(t)
        out.append(p)
    return out


def test_refusals_leave_shards_and_destination(tmp_path):
    dst = str(tmp_path / "dst")
    good = _shards(tmp_path, [TABLE.slice(0, 5), TABLE.slice(5)])
    bad = _shards(tmp_path, [TABLE.slice(0, 5), TABLE.drop_columns(["vec"])], "stage2")
    cases = [
        ([], {}, "no shards"),
        (bad, {}, "shard 1 has 2 columns where shard 0 has 3"),
        (good, {"features_json": json.dumps({"id": {"dtype": "int32", "_type": "Value"}})},
         "the features has 1 columns"),
        (good, {"features_json": json.dumps({
            "id": {"dtype": "int32", "_type": "Value"}, "text": {"dtype": "string",
                                                              "_type": "Value"},
            "vec": {"feature": {"dtype": "float32", "_type": "Value"}, "length": 2,
                    "_type": "List"}})},
         "the features: column 'id' does not have the type it has in shard 0"),
        (good, {"fingerprint": "../x"}, "fingerprint"),
        (good + [str(tmp_path / "missing.arrow")], {}, "shard 2"),
    ]
    for shards, kw, what in cases:
        with pytest.raises(quiver.QuiverError, match=what):
            quiver._quiver._assemble_save(dst, shards, **kw)
        assert not os.path.exists(dst)
        assert all(os.path.isfile(p) for p in shards if "missing" not in p)
    # a non-empty directory that is no dataset directory is not replaced
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a dataset directory"):
        quiver._quiver._assemble_save(str(other), good)
    assert (other / "keep.txt").read_text() == "mine"
    assert all(os.path.isfile(p) for p in good)


def test_replaces_a_dataset_directory_and_defaults(tmp_path):
    dst = str(tmp_path / "dst")
    datasets.Dataset.from_dict({"old": [1]}).save_to_disk(dst)
    shards = _shards(tmp_path, [TABLE.slice(0, 3), TABLE.slice(3)])
    quiver._quiver._assemble_save(dst, shards, split="train")
    assert not any(os.path.exists(p) for p in shards)  # moved in
    h = datasets.load_from_disk(dst)
    assert h.column_names == TABLE.column_names and h.to_dict() == TABLE.to_pydict()
    assert str(h.split) == "train"
    fp = _json(os.path.join(dst, "state.json"))["_fingerprint"]
    assert len(fp) == 16 and int(fp, 16) >= 0  # derived from the shards'
    assert quiver.load_from_disk(dst).fingerprint == fp
    # given features (a ClassLabel over int64 ids) are written to dataset_info.json
    dst2 = str(tmp_path / "dst2")
    t = pa.table({"label": pa.array([0, 1, 1], pa.int64())})
    feats = {"label": {"names": ["a", "b"], "_type": "ClassLabel"}}
    quiver._quiver._assemble_save(dst2, _shards(tmp_path, [t], "stage3"),
                                  features_json=json.dumps(feats))
    h2 = datasets.load_from_disk(dst2)
    assert h2.features["label"].names == ["a", "b"] and h2["label"][:] == [0, 1, 1]


def test_nullability_and_list_item_names_are_not_compared(tmp_path):
    """Spark's shards: non-nullable columns, list items named "element"."""
    spark_like = pa.schema([pa.field("id", pa.int64(), nullable=False),
                            pa.field("l", pa.list_(pa.field("element", pa.float64())))])
    t = pa.table({"id": [1, 2], "l": [[1.0], []]}, schema=spark_like)
    plain = pa.table({"id": [3], "l": [[2.0, 3.0]]})
    feats = {"id": {"dtype": "int64", "_type": "Value"},
             "l": {"feature": {"dtype": "float64", "_type": "Value"}, "_type": "List"}}
    dst = str(tmp_path / "dst")
    quiver._quiver._assemble_save(dst, _shards(tmp_path, [t, plain]),
                                  features_json=json.dumps(feats))
    h = datasets.load_from_disk(dst)
    assert h.to_dict() == {"id": [1, 2, 3], "l": [[1.0], [], [2.0, 3.0]]}
    assert h.features.to_dict() == feats
