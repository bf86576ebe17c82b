"""quiver.split_dataset_by_node against datasets.distributed.split_dataset_by_node
(map-style datasets): the same rows for several world sizes on plain,
shuffled and filtered datasets, the parts covering the dataset in order,
and the same errors; plus per-rank reading with Dataset.shard for torch
DDP (each rank's DataLoader-style batches) and with quiver.ray.read."""
import datasets
import datasets.distributed
import pytest
from conftest import hf_rows

import quiver


@pytest.mark.parametrize("world_size", [1, 2, 3, 4, 7, 16])
def test_split_equals_datasets(data, world_size):
    q = quiver.open(data["plain"])
    hf = datasets.load_from_disk(data["plain"])
    for qq, hh in ((q, hf), (q.shuffle(seed=11), hf.shuffle(seed=11)),
                   (q.filter("label == 0"), hf.filter(lambda r: r["label"] == 0))):
        parts = []
        for rank in range(world_size):
            a = datasets.distributed.split_dataset_by_node(hh, rank=rank, world_size=world_size)
            b = quiver.split_dataset_by_node(qq, rank=rank, world_size=world_size)
            assert isinstance(b, quiver.Dataset)
            assert len(b) == len(a)
            assert b.with_format("arrow")[:].to_pylist() == hf_rows(a)
            parts.extend(b["id"][:])
        assert parts == qq["id"][:]  # contiguous, in order, every row once


def test_split_more_nodes_than_rows(data):
    """datasets gives ranks >= len an IndexError (its select refuses an
    empty range starting at len), and an empty dataset to every rank of an
    empty dataset: quiver the same."""
    q = quiver.open(data["dict"], split="test").select(range(5))
    hf = datasets.load_from_disk(data["dict"])["test"].select(range(5))
    for rank in range(8):
        try:
            a = datasets.distributed.split_dataset_by_node(hf, rank=rank, world_size=8)
        except IndexError as e:
            with pytest.raises(IndexError) as eq:
                quiver.split_dataset_by_node(q, rank=rank, world_size=8)
            assert str(eq.value) == str(e)
            assert rank >= 5
            continue
        b = quiver.split_dataset_by_node(q, rank=rank, world_size=8)
        assert b["id"][:] == a["id"] and rank < 5
    e_hf, e_q = hf.select([]), q.select([])
    for rank in range(3):
        assert len(datasets.distributed.split_dataset_by_node(e_hf, rank, 3)) == 0
        assert len(quiver.split_dataset_by_node(e_q, rank, 3)) == 0


def test_split_errors(data):
    q = quiver.open(data["plain"])
    hf = datasets.load_from_disk(data["plain"])
    for rank, ws in ((3, 3), (-1, 2)):
        with pytest.raises(ValueError):
            datasets.distributed.split_dataset_by_node(hf, rank=rank, world_size=ws)
        with pytest.raises(ValueError):
            quiver.split_dataset_by_node(q, rank=rank, world_size=ws)
    for strategy in ("shards", "examples", "nope"):
        with pytest.raises(ValueError) as ea:
            datasets.distributed.split_dataset_by_node(hf, 0, 2, strategy=strategy)
        with pytest.raises(ValueError) as eb:
            quiver.split_dataset_by_node(q, 0, 2, strategy=strategy)
        assert str(ea.value) == str(eb.value)
    with pytest.raises(TypeError):
        quiver.split_dataset_by_node(hf, 0, 2)


def test_ddp_per_rank_reading(data):
    """What docs/scale-out.md shows for torch DDP: each rank reads its own
    contiguous part (shard / split_dataset_by_node), batches through
    __getitems__ as torch's DataLoader calls it; together the ranks see the
    shuffled dataset once."""
    q = quiver.open(data["plain"]).shuffle(seed=2)
    seen = []
    for rank in range(4):
        part = quiver.split_dataset_by_node(q, rank=rank, world_size=4)
        for lo in range(0, len(part), 64):
            batch = part.__getitems__(list(range(lo, min(lo + 64, len(part)))))
            seen.extend(r["id"] for r in batch)
    assert seen == q["id"][:]


def test_ray_read_of_a_node_split(ray_session, data):
    import pyarrow as pa

    import quiver.ray as qr

    q = quiver.open(data["plain"]).shuffle(seed=4)
    hf = datasets.load_from_disk(data["plain"]).shuffle(seed=4)
    part = quiver.split_dataset_by_node(q, rank=1, world_size=3)
    want = hf_rows(datasets.distributed.split_dataset_by_node(hf, rank=1, world_size=3))
    got = pa.concat_tables(ray_session.get(qr.read(part, override_num_blocks=3).to_arrow_refs()))
    assert got.to_pylist() == want
