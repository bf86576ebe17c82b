"""The torch format and DataLoaders against `datasets` 5.2.0 with torch
2.13.0 (CPU; tests/requirements-torch.txt, in build/venv-torch): for
ds[i], ds[a:b], ds[[...]], ds["col"] and batch iteration,
with_format("torch") gives what datasets' gives on the same save_to_disk
directory (tensor dtypes and shapes, values, Python strings), plain and
shuffled; a torch DataLoader (batch_size 8, num_workers=2, spawn) over a
quiver dataset yields the same batches as over datasets'
with_format("torch") one, also shuffled by a seeded sampler; and an
IterableDataset from to_iterable_dataset(num_shards=4) in a DataLoader
with 2 workers yields datasets' rows in datasets' order.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

N = 90
FEATURES = datasets.Features({
    "id": datasets.Value("int64"),
    "x": datasets.Value("float32"),
    "d": datasets.Value("float64"),
    "small": datasets.Value("int16"),
    "t": datasets.Value("string"),
    "label": datasets.ClassLabel(names=["neg", "pos"]),
    "vec": datasets.List(datasets.Value("float32"), length=4),
    "rag": datasets.List(datasets.Value("int32")),
    "m": datasets.Array2D((2, 3), "float32"),
    "flag": datasets.Value("bool"),
})


def make_rows():
    rng = np.random.default_rng(1)
    return {
        "id": list(range(N)),
        "x": rng.random(N).astype(np.float32).tolist(),
        "d": rng.random(N).tolist(),
        "small": [i % 300 - 150 for i in range(N)],
        "t": [f"row {i}" for i in range(N)],
        "label": [i % 2 for i in range(N)],
        "vec": rng.random((N, 4)).astype(np.float32).tolist(),
        "rag": [[i] * (i % 4) for i in range(N)],
        "m": rng.random((N, 2, 3)).astype(np.float32).tolist(),
        "flag": [i % 3 == 0 for i in range(N)],
    }


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("torch") / "ds")
    datasets.Dataset.from_dict(make_rows(), features=FEATURES).save_to_disk(p, num_shards=2)
    return p


@pytest.fixture(params=["plain", "shuffled"])
def pair(request, path):
    q, h = quiver.open(path), datasets.load_from_disk(path)
    if request.param == "shuffled":
        q, h = q.shuffle(seed=7), h.shuffle(seed=7)
    return q.with_format("torch"), h.with_format("torch")


def same(a, b, where="value"):
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, (where, a.dtype, b.dtype, a.shape,
                                                           b.shape)
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_torch_format_as_datasets(pair):
    q, h = pair
    for key in (0, 5, N - 1, slice(3, 20), slice(0, N, 7), [4, 1, 4, 80], np.array([2, 9])):
        same(q[key], h[key], f"ds[{key!r}]")
    for c in FEATURES:
        same(q[c][:10], h[c][:10], f"ds[{c!r}][:10]")
        same(q[c][3], h[c][3], f"ds[{c!r}][3]")
    for a, b in zip(q.iter(batch_size=32), h.iter(batch_size=32)):
        same(a, b, "iter(32)")
    same(q.__getitems__([3, 1]), h.__getitems__([3, 1]), "__getitems__")


def collate_pairs(path, sampler_seed=None):
    # without the ragged column, which torch's default_collate cannot stack
    q = quiver.open(path).remove_columns("rag").with_format("torch")
    h = datasets.load_from_disk(path).remove_columns("rag").with_format("torch")
    out = []
    for ds in (q, h):
        gen = torch.Generator().manual_seed(sampler_seed) if sampler_seed is not None else None
        dl = DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context="spawn",
                        shuffle=sampler_seed is not None, generator=gen)
        out.append(list(dl))
    return out


@pytest.mark.parametrize("sampler_seed", [None, 3])
def test_dataloader_two_spawned_workers_as_datasets(path, sampler_seed):
    got, want = collate_pairs(path, sampler_seed)
    assert len(got) == len(want) == (N + 7) // 8
    for i, (a, b) in enumerate(zip(got, want)):
        same(a, b, f"batch {i}")


def test_iterable_dataset_in_a_dataloader(path):
    q = quiver.open(path).to_iterable_dataset(num_shards=4)
    h = datasets.load_from_disk(path).to_iterable_dataset(num_shards=4)
    assert isinstance(q, torch.utils.data.IterableDataset)
    got = [r for b in DataLoader(q, batch_size=None, num_workers=2) for r in [b]]
    want = [r for b in DataLoader(h, batch_size=None, num_workers=2) for r in [b]]
    assert len(got) == len(want) == N
    for i, (a, b) in enumerate(zip(got, want)):
        same(a, b, f"row {i}")
