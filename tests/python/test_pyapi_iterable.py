"""quiver.IterableDataset's lazy operations against `datasets` 5.2.0's
IterableDataset from to_iterable_dataset on the same data
(python/quiver/_api.py): shuffle(seed / generator, buffer_size,
max_buffer_input_shards) gives datasets' order for 1..12 shards and buffers
smaller and larger than the data (shard order, interleaved groups, blocks,
buffer); map (unbatched, batched, with_indices, input_columns, fn_kwargs,
remove_columns, drop_last_batch, changing the row count), filter
(unbatched, batched, with_indices), take, skip, batch, rename_column(s),
remove_columns, select_columns, and chains of them (shuffle after map, take
then shuffle, shuffle then take, ...) yield datasets' rows; features follow
datasets'; errors of rename and batched length mismatch.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import numpy as np
import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

N = 1000
COLS = {"x": list(range(N)), "s": [f"r{i}" for i in range(N)],
        "label": [i % 3 for i in range(N)]}


@pytest.fixture(scope="module")
def pair():
    return quiver.Dataset.from_dict(COLS), datasets.Dataset.from_dict(COLS)


def _both(pair, num_shards, build):
    q, h = pair
    a = build(h.to_iterable_dataset(num_shards=num_shards))
    b = build(q.to_iterable_dataset(num_shards=num_shards))
    return list(b), list(a), b, a


@pytest.mark.parametrize("num_shards", [1, 3, 12])
@pytest.mark.parametrize("buffer_size", [7, 100, 5000])
def test_shuffle_order(pair, num_shards, buffer_size):
    for kw in ({"seed": 3}, {"seed": 7, "max_buffer_input_shards": 3},
               {"seed": 0, "max_buffer_input_shards": 1}):
        got, want, _, _ = _both(pair, num_shards,
                                lambda it: it.shuffle(buffer_size=buffer_size, **kw))
        assert got == want, kw
    got, want, _, _ = _both(pair, num_shards, lambda it: it.shuffle(
        generator=np.random.default_rng(11), buffer_size=buffer_size))
    assert got == want


def _add(r, k=1):
    return {"y": r["x"] * k, "x": r["x"] + 1}


CHAINS = {
    "map": lambda it: it.map(_add),
    "map_kwargs_indices": lambda it: it.map(lambda r, i, k: {"z": i * k}, with_indices=True,
                                            fn_kwargs={"k": 2}),
    "map_input_columns_remove": lambda it: it.map(lambda s: {"n": len(s)}, input_columns="s",
                                                  remove_columns=["s", "label"]),
    "map_batched": lambda it: it.map(lambda b: {"y": [v * 2 for v in b["x"]]}, batched=True,
                                     batch_size=64),
    "map_batched_drop_last": lambda it: it.map(lambda b, idx: {"i": idx}, batched=True,
                                               batch_size=100, with_indices=True,
                                               drop_last_batch=True),
    "map_batched_shrinks": lambda it: it.map(lambda b: {"first": b["x"][:1]}, batched=True,
                                             batch_size=50, remove_columns=["x", "s", "label"]),
    "filter": lambda it: it.filter(lambda r: r["label"] == 1),
    "filter_indices": lambda it: it.filter(lambda r, i: i % 4 == 0, with_indices=True),
    "filter_batched": lambda it: it.filter(lambda b: [x % 5 == 0 for x in b["x"]], batched=True,
                                           batch_size=33),
    "filter_input_columns": lambda it: it.filter(lambda lab: lab == 2, input_columns="label"),
    "take_skip": lambda it: it.skip(10).take(25),
    "batch": lambda it: it.batch(batch_size=64),
    "batch_drop": lambda it: it.batch(batch_size=64, drop_last_batch=True),
    "rename": lambda it: it.rename_column("s", "text"),
    "renames": lambda it: it.rename_columns({"s": "text", "x": "id"}),
    "remove": lambda it: it.remove_columns(["label"]),
    "select": lambda it: it.select_columns(["label", "x"]),
    "map_then_shuffle": lambda it: it.map(_add).shuffle(seed=5, buffer_size=100),
    "shuffle_then_map": lambda it: it.shuffle(seed=5, buffer_size=100).map(_add),
    "take_then_shuffle": lambda it: it.take(700).shuffle(seed=2, buffer_size=64),
    "shuffle_then_take": lambda it: it.shuffle(seed=2, buffer_size=64).take(30),
    "shuffle_filter_batch": lambda it: it.shuffle(seed=9, buffer_size=200).filter(
        lambda r: r["x"] % 2 == 0).batch(10),
    "select_then_shuffle": lambda it: it.select_columns(["x"]).shuffle(seed=4, buffer_size=90),
    "double_shuffle": lambda it: it.shuffle(seed=1, buffer_size=50).shuffle(seed=2,
                                                                           buffer_size=300),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("num_shards", [4])
def test_operations_as_datasets(pair, name, num_shards):
    got, want, b, a = _both(pair, num_shards, CHAINS[name])
    assert got == want
    if a.features is None:
        assert b.features is None or name.startswith("map") or name == "batch"
    else:
        assert b.features == a.features, name
        assert b.column_names == a.column_names
    assert list(b.iter(batch_size=7))[:3] == list(a.iter(batch_size=7))[:3]


def test_errors(pair):
    q, h = pair
    for lib in (q, h):
        with pytest.raises(ValueError, match="are not in the dataset"):
            list(lib.to_iterable_dataset().rename_column("nope", "y"))
        with pytest.raises(ValueError, match="already in the dataset"):
            list(lib.to_iterable_dataset().rename_column("s", "x"))
        with pytest.raises(ValueError, match="Column lengths mismatch"):
            list(lib.to_iterable_dataset().map(lambda b: {"y": b["x"][:1]}, batched=True))
