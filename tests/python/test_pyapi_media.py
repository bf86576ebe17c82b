"""Image and Audio features of quiver.Dataset against `datasets` 5.2.0 itself
(python/quiver/_media.py, quiver._formats' decoding; python/src/dataset.c
routes rows of datasets with media features through it): the same
save_to_disk directory read by both — PIL images (class, mode, size,
pixels) in the python / numpy / pandas / custom formats, rows, slices,
lists, iteration, lazy columns; decode=False storage dicts; cast_column
to Image() from paths, bytes and structs and with a mode; from_dict with
Image features from PIL images, paths and bytes; Audio storage and
datasets' ImportError without torchcodec; Pillow missing gives datasets'
ImportError.

Needs Pillow (pinned in tests/requirements.txt): without it this module
fails, it never skips.
Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import io
import os
import subprocess
import sys

import numpy as np
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402
import PIL.Image  # noqa: E402  (Pillow: tests/requirements.txt)

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

MODES = ["RGB", "L", "RGBA", "P", "I;16"]


def _png(mode, size, seed):
    rng = np.random.default_rng(seed)
    if mode == "I;16":
        im = PIL.Image.fromarray(rng.integers(0, 65535, size[::-1], dtype=np.uint16))
    elif mode == "P":
        im = PIL.Image.fromarray(rng.integers(0, 255, size[::-1], dtype=np.uint8), "L").convert(
            "P")
    else:
        chans = {"RGB": 3, "L": 1, "RGBA": 4}[mode]
        a = rng.integers(0, 255, (size[1], size[0], chans), dtype=np.uint8)
        im = PIL.Image.fromarray(a[:, :, 0] if chans == 1 else a, mode)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def imgdir(tmp_path_factory):
    """A save_to_disk directory written by datasets: images as bytes (several
    modes and sizes), one as a path (datasets embeds it), one null."""
    d = tmp_path_factory.mktemp("img")
    path = str(d / "file.png")
    with open(path, "wb") as f:
        f.write(_png("RGB", (6, 5), 99))
    images = [{"bytes": _png(m, (3 + i, 2 + i % 2), i), "path": None}
              for i, m in enumerate(MODES)] + [{"bytes": None, "path": path}, None]
    hf = datasets.Dataset.from_dict(
        {"image": images, "n": list(range(len(images))),
         "many": [[images[0], images[1]]] * len(images)},
        features=datasets.Features({"image": datasets.Image(), "n": datasets.Value("int64"),
                                    "many": datasets.List(datasets.Image())}))
    out = str(d / "ds")
    hf.save_to_disk(out)
    return out, path


def _same_image(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    assert isinstance(a, PIL.Image.Image)
    assert type(a) is type(b)
    assert (a.mode, a.size, a.format) == (b.mode, b.size, b.format)
    assert np.array_equal(np.asarray(a), np.asarray(b))


def _same(a, b):
    if isinstance(b, PIL.Image.Image) or isinstance(a, PIL.Image.Image):
        return _same_image(a, b)
    if isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b)
        for k in b:
            _same(a[k], b[k])
        return
    if isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    if isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray)
        assert a.dtype == b.dtype and a.shape == b.shape
        if b.dtype == object:
            for x, y in zip(a, b):
                _same(x, y)
        else:
            assert np.array_equal(a, b)
        return
    assert type(a) is type(b) and a == b


def test_python_rows_decode_as_datasets(imgdir):
    d, _ = imgdir
    q, h = quiver.load_from_disk(d), datasets.load_from_disk(d)
    assert q.features == h.features
    for i in range(len(h)):
        _same(q[i], h[i])
    _same(q[1:4], h[1:4])
    _same(q[[5, 0, 2]], h[[5, 0, 2]])
    _same(list(q), list(h))
    _same(list(q.iter(batch_size=3)), list(h.iter(batch_size=3)))
    _same(list(q["image"]), list(h["image"]))
    _same(q["image"][2], h["image"][2])
    _same(q.__getitems__([3, 1]), h.__getitems__([3, 1]))
    s_q, s_h = q.shuffle(seed=3), h.shuffle(seed=3)
    _same(s_q[:], s_h[:])
    _same(q.select_columns(["image"])[0], h.select_columns(["image"])[0])


def test_numpy_and_pandas_and_custom_formats(imgdir):
    d, _ = imgdir
    q, h = quiver.load_from_disk(d), datasets.load_from_disk(d)
    qn, hn = q.with_format("numpy"), h.with_format("numpy")
    for i in range(len(h)):
        _same(qn[i], hn[i])
    _same(qn[0:5], hn[0:5])
    _same(qn[0:1], hn[0:1])
    _same(qn[[0, 0]], hn[[0, 0]])  # equal shapes: stacked
    _same(next(qn.iter(batch_size=4)), next(hn.iter(batch_size=4)))
    qp, hp = q.with_format("pandas")[0:3], h.with_format("pandas")[0:3]
    assert list(qp.columns) == list(hp.columns)
    for x, y in zip(qp["image"], hp["image"]):
        _same_image(x, y)
    def t(b):
        return {"sizes": [None if x is None else x.size for x in b["image"]]}
    assert q.with_transform(t)[0:7] == h.with_transform(t)[0:7]
    # arrow gives the storage, as datasets
    assert q.with_format("arrow")[0:2].to_pylist() == h.with_format("arrow")[0:2].to_pylist()


def test_decode_false_and_cast_column(imgdir):
    d, path = imgdir
    q, h = quiver.load_from_disk(d), datasets.load_from_disk(d)
    qf = q.cast_column("image", quiver.Image(decode=False))
    hf = h.cast_column("image", datasets.Image(decode=False))
    assert qf.features == hf.features
    assert qf[:] == hf[:]
    assert list(qf) == list(hf)
    qm = q.cast_column("image", quiver.Image(mode="L"))
    hm = h.cast_column("image", datasets.Image(mode="L"))
    assert qm.features == hm.features
    _same(qm[:], hm[:])
    assert qm[0]["image"].mode == "L"
    # back to decoding
    _same(qf.cast_column("image", quiver.Image())[:], h[:])
    # from paths, bytes and {bytes, path} structs
    raw = open(path, "rb").read()
    for col in ([path, None], [raw, None], [{"path": path}, None],
                [{"bytes": raw, "path": None}, {"bytes": None, "path": path}]):
        qd = quiver.Dataset.from_dict({"im": col}).cast_column("im", quiver.Image())
        hd = datasets.Dataset.from_dict({"im": col}).cast_column("im", datasets.Image())
        assert qd.features == hd.features
        assert qd.cast_column("im", quiver.Image(decode=False))[:] == \
            hd.cast_column("im", datasets.Image(decode=False))[:]
        _same(qd[:], hd[:])


def test_from_dict_encodes_images(imgdir):
    _, path = imgdir
    pil = PIL.Image.fromarray(np.arange(24, dtype=np.uint8).reshape(2, 4, 3), "RGB")
    opened = PIL.Image.open(path)
    col = [pil, path, open(path, "rb").read(), opened, None]
    qd = quiver.Dataset.from_dict({"im": col}, features=quiver.Features({"im": quiver.Image()}))
    hd = datasets.Dataset.from_dict({"im": col},
                                    features=datasets.Features({"im": datasets.Image()}))
    assert qd.features == hd.features
    assert qd.cast_column("im", quiver.Image(decode=False))[:] == \
        hd.cast_column("im", datasets.Image(decode=False))[:]
    _same(qd[:], hd[:])


def test_audio_storage_and_decoding_error(tmp_path):
    col = [str(tmp_path / "a.wav"), None]
    qa = quiver.Dataset.from_dict({"a": col}).cast_column("a", quiver.Audio(sampling_rate=16000))
    ha = datasets.Dataset.from_dict({"a": col}).cast_column("a",
                                                            datasets.Audio(sampling_rate=16000))
    assert qa.features == ha.features
    with pytest.raises(ImportError) as hq:
        ha[0]
    with pytest.raises(ImportError) as qq:
        qa[0]
    assert str(qq.value) == str(hq.value)
    assert qa[1] == ha[1] == {"a": None}
    qn = qa.cast_column("a", quiver.Audio(decode=False))
    hn = ha.cast_column("a", datasets.Audio(decode=False))
    assert qn[:] == hn[:] == {"a": [{"bytes": None, "path": col[0]}, None]}


def test_without_pillow_is_datasets_import_error(imgdir):
    """Pillow hidden: reading an Image is datasets' ImportError (in a child
    process, as `import PIL` fails there)."""
    d, _ = imgdir
    code = ("import sys; sys.modules['PIL'] = None\n"
            "from qvpaths import import_quiver\nq = import_quiver()\n"
            f"ds = q.load_from_disk({d!r})\n"
            "print(len(ds), ds.features['image'])\n"
            "try:\n    ds[0]\nexcept ImportError as e:\n    print('ImportError', e)\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["7 Image(mode=None, decode=True)",
                   "ImportError To support decoding images, please install 'Pillow'."]
