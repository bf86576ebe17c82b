"""map returning PIL images, against datasets 5.2 on the same directory:
datasets encodes them into an Image feature ({"bytes": PNG..., "path":
None}, or the file's path for an image opened from a file) and decodes
them back to PIL images when rows are read. quiver must give the same
features, the same stored bytes and the same decoded images, row by row
and batched, with None values, and a directory datasets reads back after
save_to_disk.
"""
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

PIL = pytest.importorskip("PIL.Image")
quiver = import_quiver()

N = 7


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    path = tmp_path_factory.mktemp("map-images") / "ds"
    datasets.Dataset.from_dict({"i": list(range(N))}).save_to_disk(str(path))
    return path


def one(r):
    return {"img": PIL.new("RGB", (2, r["i"] + 1), (r["i"] * 30, 7, 200))}


def batch(b):
    return {"img": [None if i == 3 else PIL.new("L", (i + 1, 2), i * 20) for i in b["i"]],
            "n": [i * 2 for i in b["i"]]}


def same_image(a, b):
    if a is None or b is None:
        return a is None and b is None
    return a.mode == b.mode and a.size == b.size and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("fn,kw", [(one, {}), (batch, {"batched": True, "batch_size": 3})])
def test_map_pil_images_like_datasets(src, tmp_path, fn, kw):
    h = datasets.load_from_disk(str(src)).map(fn, **kw)
    q = quiver.open(str(src)).map(fn, **kw)
    assert q.features.to_dict() == h.features.to_dict()
    assert type(q.features["img"]).__name__ == "Image"
    for i in range(N):
        hr, qr = h[i], q[i]
        assert set(hr) == set(qr)
        assert same_image(hr["img"], qr["img"]), i
        assert {k: v for k, v in hr.items() if k != "img"} == \
            {k: v for k, v in qr.items() if k != "img"}
    # the stored values: datasets' encode_example's bytes and paths
    assert q.with_format("arrow")[:]["img"].to_pylist() == \
        h.with_format("arrow")[:]["img"].to_pylist()
    q.save_to_disk(str(tmp_path / "saved"))
    back = datasets.load_from_disk(str(tmp_path / "saved"))
    assert back.features.to_dict() == h.features.to_dict()
    assert all(same_image(back[i]["img"], h[i]["img"]) for i in range(N))
