"""Images in the torch format against `datasets` 5.2.0 with torch 2.13.0
(python/quiver/_formats.py's decoding, python/quiver/_media.py): on the
same save_to_disk directory (PNG images of several modes and sizes, one
null, a List of images), with_format("torch") gives datasets' tensors —
(channels, height, width), the image's dtype, stacked when the shapes
agree, lists otherwise — for rows, slices, row lists and batch iteration.

Needs Pillow (tests/requirements.txt). Environment: QV_BUILD.
"""
import io

import numpy as np
import PIL.Image
import pytest
import torch

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()


def _png(mode, size, seed):
    rng = np.random.default_rng(seed)
    chans = {"RGB": 3, "L": 1, "RGBA": 4}[mode]
    a = rng.integers(0, 255, (size[1], size[0], chans), dtype=np.uint8)
    buf = io.BytesIO()
    PIL.Image.fromarray(a[:, :, 0] if chans == 1 else a, mode).save(buf, format="PNG")
    return {"bytes": buf.getvalue(), "path": None}


@pytest.fixture(scope="module")
def imgdir(tmp_path_factory):
    images = [_png("RGB", (4, 3), 0), _png("RGB", (4, 3), 1), _png("L", (2, 5), 2),
              _png("RGBA", (3, 3), 3), None]
    hf = datasets.Dataset.from_dict(
        {"image": images, "n": list(range(5)), "many": [[images[0], images[1]]] * 5},
        features=datasets.Features({"image": datasets.Image(), "n": datasets.Value("int64"),
                                    "many": datasets.List(datasets.Image())}))
    d = str(tmp_path_factory.mktemp("img") / "ds")
    hf.save_to_disk(d)
    return d


def _same(a, b):
    if isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor)
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    elif isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b)
        for k in b:
            _same(a[k], b[k])
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert type(a) is type(b) and a == b


def test_torch_images_as_datasets(imgdir):
    q = quiver.load_from_disk(imgdir).with_format("torch")
    h = datasets.load_from_disk(imgdir).with_format("torch")
    for i in range(5):
        _same(q[i], h[i])
    _same(q[0:2], h[0:2])  # equal shapes: stacked (2, 3, 3, 4)
    _same(q[0:4], h[0:4])  # different shapes: a list
    _same(q[[3, 2]], h[[3, 2]])
    _same(list(q.iter(batch_size=2)), list(h.iter(batch_size=2)))
    assert q[0]["image"].shape == (3, 3, 4) and q[0]["image"].dtype == torch.uint8
