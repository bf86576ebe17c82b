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
