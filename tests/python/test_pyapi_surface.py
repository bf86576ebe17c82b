"""IterableDataset.set_epoch, with_format after map/filter, and
save_to_disk embedding local Image/Audio files, against `datasets` 5.2.0
itself (python/quiver/_api.py): for one seed and epoch quiver yields
datasets' rows in datasets' order (plain, shuffled over 1-10 shards with
buffers and interleaving, shuffled after take and after a Python map);
numpy rows after map are datasets' recursive_tensorize values; a saved
directory with Image/Audio paths holds the files' bytes and basenames as
datasets' save_to_disk writes them.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import os

import numpy as np
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402
import PIL.Image  # noqa: E402  (Pillow: tests/requirements.txt)

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

ROWS = {"a": list(range(100)), "b": [str(i) for i in range(100)]}


def _pipe(it, kind):
    if kind == "shuf":
        return it.shuffle(seed=7, buffer_size=16, max_buffer_input_shards=3)
    if kind == "shuf_take":
        return it.take(50).shuffle(seed=7, buffer_size=16)
    if kind == "map_shuf":
        return it.map(lambda r: {"c": r["a"] * 2}).shuffle(seed=11, buffer_size=8)
    return it


@pytest.mark.parametrize("shards", [1, 4, 10])
@pytest.mark.parametrize("kind", ["plain", "shuf", "shuf_take", "map_shuf"])
def test_set_epoch_order_is_datasets(shards, kind):
    h = datasets.Dataset.from_dict(ROWS).to_iterable_dataset(num_shards=shards)
    q = quiver.Dataset.from_dict(ROWS).to_iterable_dataset(num_shards=shards)
    h, q = _pipe(h, kind), _pipe(q, kind)
    seen = []
    for epoch in (0, 1, 2, 5):
        h.set_epoch(epoch)
        q.set_epoch(epoch)
        assert q.epoch == h.epoch == epoch
        got = list(q)
        assert got == list(h)
        seen.append([r["a"] for r in got])
    if kind != "shuf_take" and shards > 1 or kind in ("shuf", "map_shuf"):
        assert len({tuple(s) for s in seen}) > 1  # epochs reshuffle


def test_numpy_format_after_map_and_filter():
    h = datasets.Dataset.from_dict(ROWS).to_iterable_dataset(num_shards=2)
    q = quiver.Dataset.from_dict(ROWS).to_iterable_dataset(num_shards=2)

    def f(it):
        return it.map(lambda r: {"c": r["a"] * 2, "v": [float(r["a"]), 1.5]}).filter(
            lambda r: r["a"] % 3 == 0).with_format("numpy")

    hr, qr = list(f(h)), list(f(q))
    assert len(hr) == len(qr) == 34
    for x, y in zip(hr, qr):
        assert list(x) == list(y)
        for k in x:
            assert type(x[k]) is type(y[k])
            if isinstance(x[k], np.ndarray):
                assert x[k].dtype == y[k].dtype and x[k].shape == y[k].shape
                np.testing.assert_array_equal(x[k], y[k])
            else:
                assert x[k] == y[k]


def _images(tmp_path):
    paths = []
    for i in range(3):
        p = str(tmp_path / f"img{i}.png")
        PIL.Image.new("RGB", (4 + i, 3), (10 * i, 20, 30)).save(p)
        paths.append(p)
    return paths


@pytest.mark.parametrize("how", ["from_dict", "cast_column"])
def test_save_to_disk_embeds_local_images_as_datasets(tmp_path, how):
    paths = _images(tmp_path)
    data = {"image": paths + [None], "k": [0, 1, 2, 3]}
    if how == "from_dict":
        feats = {"image": datasets.Image(), "k": datasets.Value("int64")}
        h = datasets.Dataset.from_dict(data, features=datasets.Features(feats))
        q = quiver.Dataset.from_dict(data, features=quiver.Features(
            {"image": quiver.Image(), "k": quiver.Value("int64")}))
    else:
        h = datasets.Dataset.from_dict(data).cast_column("image", datasets.Image())
        q = quiver.Dataset.from_dict(data).cast_column("image", quiver.Image())
    h.save_to_disk(str(tmp_path / "h"))
    q.save_to_disk(str(tmp_path / "q"))
    for p in paths:  # the saved directories are self-contained
        os.remove(p)
    hh = datasets.load_from_disk(str(tmp_path / "h"))
    hq = datasets.load_from_disk(str(tmp_path / "q"))
    assert hq.features == hh.features
    raw_h = hh.cast_column("image", datasets.Image(decode=False)).to_list()
    raw_q = hq.cast_column("image", datasets.Image(decode=False)).to_list()
    assert raw_q == raw_h
    assert raw_q[0]["image"]["path"] == "img0.png" and raw_q[0]["image"]["bytes"]
    for a, b in zip(hh, hq):
        if a["image"] is None:
            assert b["image"] is None
        else:
            assert a["image"].size == b["image"].size
            assert a["image"].tobytes() == b["image"].tobytes()
    # quiver reads its own directory the same way
    assert quiver.load_from_disk(str(tmp_path / "q")).cast_column(
        "image", quiver.Image(decode=False)).to_list() == raw_h


def test_save_to_disk_missing_image_file_raises_as_datasets(tmp_path):
    data = {"image": [str(tmp_path / "absent.png")]}
    h = datasets.Dataset.from_dict(data).cast_column("image", datasets.Image())
    q = quiver.Dataset.from_dict(data).cast_column("image", quiver.Image())
    with pytest.raises(FileNotFoundError):
        h.save_to_disk(str(tmp_path / "h"))
    with pytest.raises(FileNotFoundError):
        q.save_to_disk(str(tmp_path / "q"))


def test_save_to_disk_embeds_local_audio_as_datasets(tmp_path):
    paths = []
    for i in range(2):
        p = tmp_path / f"a{i}.wav"
        p.write_bytes(b"RIFF" + bytes([i]) * 40)  # never decoded
        paths.append(str(p))
    data = {"audio": paths}
    h = datasets.Dataset.from_dict(data).cast_column("audio", datasets.Audio(decode=False))
    q = quiver.Dataset.from_dict(data).cast_column("audio", quiver.Audio(decode=False))
    h.save_to_disk(str(tmp_path / "h"))
    q.save_to_disk(str(tmp_path / "q"))
    for p in paths:
        os.remove(p)
    hh = datasets.load_from_disk(str(tmp_path / "h"))
    hq = datasets.load_from_disk(str(tmp_path / "q"))
    assert hq.features == hh.features
    assert hq.to_list() == hh.to_list()
    assert hq[1]["audio"] == {"bytes": b"RIFF" + b"\x01" * 40, "path": "a1.wav"}


@pytest.mark.parametrize("hf", [datasets.Video(), datasets.Pdf(),
                                datasets.Video(decode=False, stream_index=1,
                                               dimension_order="NHWC"),
                                datasets.Pdf(decode=False)])
def test_video_pdf_features_round_trip_and_decode_as_datasets(tmp_path, hf):
    d = datasets.Features({"x": hf}).to_dict()
    q = quiver.Features.from_dict(d)
    assert q.to_dict() == d
    assert datasets.Features.from_dict(q.to_dict()) == datasets.Features({"x": hf})
    assert q["x"] == hf and q.type == datasets.Features({"x": hf}).type
    raw = type(hf)(decode=False)
    h = datasets.Dataset.from_dict({"x": [{"bytes": b"abc", "path": None}]},
                                   features=datasets.Features({"x": raw})).cast_column("x", hf)
    h.save_to_disk(str(tmp_path / "d"))
    hh, qq = datasets.load_from_disk(str(tmp_path / "d")), quiver.load_from_disk(str(tmp_path / "d"))
    assert qq.features.to_dict() == hh.features.to_dict()
    if not hf.decode:
        assert qq[0] == hh[0] == {"x": {"bytes": b"abc", "path": None}}
        return
    with pytest.raises(ImportError) as eh:
        hh[0]
    with pytest.raises(ImportError) as eq:
        qq[0]
    assert str(eq.value) == str(eh.value)


MIXED = [
    {"a": [0, "foo", {"subfield": "bar"}], "b": [1, 2, 3]},
    {"a": [1, 2]},
    {"a": [[{"b": 0}, {"c": 0}]]},
    {"m": [[{"role": "user", "content": "hi"}, {"role": "tool", "content": {"x": 1}}]]},
    {"a": [{"x": 1}, {"y": "2"}, None]},
    {"a": ["0", "x", 1]},
    # mixed scalars below the root: Json at the deepest mixed path only
    {"a": [{"b": 1, "c": "k"}, {"b": "x", "c": "k"}]},
    {"a": [[1, "x"], [2], None]},
    {"a": [[{"b": 1}], [{"b": "y"}]]},
    {"a": [{"b": {"c": 1}}, {"b": {"c": "z"}}]},
    {"a": [{"b": True}, {"b": 2}]},
    {"a": [[1, 2.5], [3]]},
]


@pytest.mark.parametrize("data", MIXED)
def test_on_mixed_types_use_json_as_datasets(tmp_path, data):
    h = datasets.Dataset.from_dict(data, on_mixed_types="use_json")
    q = quiver.Dataset.from_dict(data, on_mixed_types="use_json")
    assert q.features == h.features
    assert q.to_list() == h.to_list()
    stored = q.with_format("arrow")[:]  # the storage too: JSON text where datasets has it
    assert stored.schema.types == h.data.table.schema.types
    assert stored.to_pylist() == h.data.table.to_pylist()
    rows = [dict(zip(data, r)) for r in zip(*data.values())]
    hl = datasets.Dataset.from_list(rows, on_mixed_types="use_json")
    ql = quiver.Dataset.from_list(rows, on_mixed_types="use_json")
    assert ql.features == hl.features and ql.to_list() == hl.to_list()
    q.save_to_disk(str(tmp_path / "q"))
    back = datasets.load_from_disk(str(tmp_path / "q"))
    assert back.features == h.features and back.to_list() == h.to_list()


def test_mixed_types_without_use_json_raise_as_datasets():
    import pyarrow as pa
    with pytest.raises(pa.ArrowInvalid):
        datasets.Dataset.from_dict({"a": [0, "foo"]})
    with pytest.raises(pa.ArrowInvalid):
        quiver.Dataset.from_dict({"a": [0, "foo"]})


def _mixed_scalar(r):
    return {"v": r["i"] if r["i"] % 2 else f"s{r['i']}"}


def _mixed_in_struct(b):
    return {"v": [{"b": i if i % 2 else "x"} for i in b["i"]], "w": [[i, "y"] for i in b["i"]]}


@pytest.mark.parametrize("fn,kw", [(_mixed_scalar, {}), (_mixed_in_struct, {"batched": True})])
def test_map_on_mixed_types_as_datasets(fn, kw):
    # datasets 5.2's map defaults to on_mixed_types="use_json"
    data = {"i": list(range(6))}
    h = datasets.Dataset.from_dict(data).map(fn, **kw)
    q = quiver.Dataset.from_dict(data).map(fn, **kw)
    assert q.features == h.features
    assert q.to_list() == h.to_list()
    stored = q.with_format("arrow")[:]
    assert stored.schema.types == h.data.table.schema.types
    assert stored.to_pylist() == h.data.table.to_pylist()
    with pytest.raises((TypeError, ValueError)):
        datasets.Dataset.from_dict(data).map(fn, on_mixed_types=None, **kw)
    with pytest.raises(TypeError):
        quiver.Dataset.from_dict(data).map(fn, on_mixed_types=None, **kw)


def test_save_to_disk_embeds_nested_images_as_datasets(tmp_path):
    from PIL import Image
    paths = []
    for i in range(3):
        p = str(tmp_path / f"{i}.png")
        Image.new("RGB", (2, i + 1), (i * 50, 1, 2)).save(p)
        paths.append(p)
    data = {"imgs": [[paths[i], paths[(i + 1) % 3]] for i in range(3)] + [None],
            "s": [{"im": paths[i], "k": i} for i in range(3)] + [{"im": None, "k": 9}]}
    feats = datasets.Features({"imgs": datasets.List(datasets.Image()),
                               "s": {"im": datasets.Image(), "k": datasets.Value("int64")}})
    h = datasets.Dataset.from_dict(data, features=feats)
    q = quiver.Dataset.from_dict(data, features=feats)
    assert q.with_format("arrow")[:].to_pylist() == h.data.table.to_pylist()  # encoded
    h.save_to_disk(str(tmp_path / "h"))
    q.save_to_disk(str(tmp_path / "q"))
    hb, qb = datasets.load_from_disk(str(tmp_path / "h")), datasets.load_from_disk(str(tmp_path / "q"))
    assert qb.features == hb.features
    assert qb.data.table.to_pylist() == hb.data.table.to_pylist()  # bytes embedded, basenames
    assert b"PNG" in qb.data.table.column("imgs").to_pylist()[0][0]["bytes"]
