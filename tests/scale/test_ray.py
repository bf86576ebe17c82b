"""quiver.ray against quiver itself and `datasets` (the oracle) on a local
Ray instance: rows in order for plain, multi-shard, shuffled (mapping in
memory and in a cache file), filtered, selected, DatasetDict split and
cache-file inputs; read tasks' metadata (rows, bytes, files) and their
alignment to record batches; projection (columns= and Ray's pushdown);
empty datasets; a file changed after planning refused by the worker;
write round trips read back by datasets.load_from_disk."""
import os

import datasets
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from conftest import FEATURES, hf_rows, rows_of

import quiver
import quiver.ray as qr


def ray_rows(ray, rds):
    """The rows of a ray.data.Dataset in block order (to_arrow_refs)."""
    refs = rds.to_arrow_refs()
    tables = ray.get(refs)
    return [r for t in tables for r in rows_of(t)]


def test_plain_multishard_rows_in_order(ray_session, data):
    q = quiver.open(data["plain"])
    hf = datasets.load_from_disk(data["plain"])
    want = hf_rows(hf)
    assert rows_of(pa.table(q)) == want
    for blocks in (None, 1, 4, 7):
        got = ray_rows(ray_session, qr.read(q, override_num_blocks=blocks))
        assert got == want, blocks
    # a path works as well as a Dataset
    assert ray_rows(ray_session, qr.read(data["plain"], override_num_blocks=3)) == want
    assert qr.read(q).count() == len(hf)


def _batch_starts(paths):
    """Row positions where the files' record batches start (pyarrow's read)."""
    starts, at = set(), 0
    for p in paths:
        with ipc.open_stream(p) as r:
            for b in r:
                starts.add(at)
                at += b.num_rows
    starts.add(at)
    return starts, at


def test_read_tasks_metadata_and_alignment(data):
    q = quiver.open(data["plain"])
    files = [f["filename"] for f in q.cache_files]
    starts, total = _batch_starts(files)
    assert len(starts) == 7
    src = qr.QuiverDatasource(q)
    tasks = src.get_read_tasks(5)
    assert len(tasks) == 5
    assert sum(t.metadata.num_rows for t in tasks) == total
    at = 0
    for t in tasks:
        assert at in starts  # each range starts on a record batch boundary
        blocks = list(t())
        got = pa.concat_tables(blocks)
        assert got.num_rows == t.metadata.num_rows
        assert got.column("id").to_pylist() == list(range(at, at + got.num_rows))
        # bytes from metadata: the batches' buffers, what the block holds
        assert t.metadata.size_bytes == pytest.approx(got.nbytes, rel=0.05)
        # files: exactly the shards the range touches
        lo, hi = at, at + got.num_rows
        touched, f_at = [], 0
        for f in files:
            n = quiver.open(f).num_rows
            if f_at < hi and f_at + n > lo:
                touched.append(f)
            f_at += n
        assert list(t.metadata.input_files) == touched
        at = hi
    assert src.estimate_inmemory_data_size() == pytest.approx(
        sum(t.metadata.size_bytes for t in tasks), rel=0.05)  # (from file sizes)
    # no more blocks than files: whole files per block, rows and bytes from
    # the files' metadata and sizes (no scan of every record batch)
    two = src.get_read_tasks(2)
    assert [t.metadata.num_rows for t in two] == [2000, 4000]  # a tie snaps down
    for t, fs in zip(two, (files[:1], files[1:])):
        got = pa.concat_tables(list(t()))
        assert list(t.metadata.input_files) == fs
        assert t.metadata.size_bytes == pytest.approx(got.nbytes, rel=0.05)
    # tasks of a directory's rows carry only the files they read (path,
    # identity, row range), not the whole dataset's recipe
    _, specs = qr.distributed.plan(q, None, 3)
    assert [s["kind"] for s in specs] == ["files"] * 3
    assert [[p[0] for p in s["pieces"]] for s in specs] == [[f] for f in files]
    # a dataset whose data is not the files end to end (a contiguous select)
    # is read from its recipe instead
    sel = q.select(range(1500, 4500))
    _, specs = qr.distributed.plan(sel, None, 2)
    assert [s["kind"] for s in specs] == ["range"] * 2
    got = pa.concat_tables([t for s in specs for t in qr.distributed.read_spec(s)])
    assert got.column("id").to_pylist() == list(range(1500, 4500))


@pytest.mark.parametrize("cache", [False, True])
def test_shuffled(ray_session, data, cache):
    q = quiver.open(data["plain"]).shuffle(seed=42, cache=cache)
    hf = datasets.load_from_disk(data["plain"]).shuffle(seed=42)
    want = hf_rows(hf)
    assert rows_of(pa.table(q)) == want
    if cache:  # the mapping is a file: tasks carry its recipe, not indices
        assert len(q.cache_files) == 4
        _, specs = qr.distributed.plan(q, None, 3)
        assert all("indices" not in s and "indices_recipe" in s for s in specs)
    for blocks in (1, 3, 8):
        assert ray_rows(ray_session, qr.read(q, override_num_blocks=blocks)) == want


def test_filtered_selected(ray_session, data):
    q = quiver.open(data["plain"])
    hf = datasets.load_from_disk(data["plain"])
    f = q.filter("score > 0.5 and label != 1")
    hff = hf.filter(lambda r: r["score"] > 0.5 and r["label"] != 1)
    assert ray_rows(ray_session, qr.read(f, override_num_blocks=4)) == hf_rows(hff)
    pick = [5999, 5, 5, 1200, 0, 1999, 2000, 4017]
    s = q.select(pick)
    assert ray_rows(ray_session, qr.read(s, override_num_blocks=3)) == hf_rows(hf.select(pick))
    # transforms stacked: shuffle, filter, shard, columns
    st = q.shuffle(seed=7).filter("label == 2").shard(3, 1).select_columns(["text", "id"])
    hst = hf.shuffle(seed=7).filter(lambda r: r["label"] == 2).shard(3, 1)
    hst = hst.select_columns(["text", "id"])
    assert ray_rows(ray_session, qr.read(st, override_num_blocks=2)) == hf_rows(hst)


def test_datasetdict_split_and_cache_file(ray_session, data):
    hfd = datasets.load_from_disk(data["dict"])
    for split in ("train", "test"):
        want = hf_rows(hfd[split])
        assert ray_rows(ray_session, qr.read(data["dict"], split=split)) == want
        dd = quiver.load_from_disk(data["dict"])
        assert ray_rows(ray_session, qr.read(dd[split], override_num_blocks=3)) == want
    with pytest.raises(TypeError):
        qr.read(quiver.load_from_disk(data["dict"]))
    # a cache file datasets wrote (an indices mapping), opened over its data
    hf = datasets.load_from_disk(data["plain"])
    sh = hf.shuffle(seed=3)  # writes cache-<fingerprint>.arrow beside the data
    cache = [f["filename"] for f in sh.cache_files if "cache-" in f["filename"]]
    assert len(cache) == 1
    q = quiver.open(cache[0], data=data["plain"])
    assert ray_rows(ray_session, qr.read(q, override_num_blocks=4)) == hf_rows(sh)


def test_projection(ray_session, data):
    q = quiver.open(data["plain"]).shuffle(seed=1)
    hf = datasets.load_from_disk(data["plain"]).shuffle(seed=1)
    want = hf_rows(hf.select_columns(["label", "id"]))
    r = qr.read(q, columns=["label", "id"], override_num_blocks=3)
    assert r.schema().names == ["label", "id"]
    assert ray_rows(ray_session, r) == want
    # Ray's select_columns is pushed into the read tasks
    src = qr.QuiverDatasource(quiver.open(data["plain"]))
    full = src.get_read_tasks(2)
    proj = src.apply_projection({"id": "id"}).get_read_tasks(2)
    assert proj[0].schema.names == ["id"]
    assert sum(t.metadata.size_bytes for t in proj) < sum(t.metadata.size_bytes for t in full) / 4
    assert {tuple(b.column_names) for t in proj for b in t()} == {("id",)}
    got = qr.read(quiver.open(data["plain"]), override_num_blocks=3).select_columns(["id"])
    assert [row["id"] for row in got.take_all()] == list(range(len(hf)))
    two = qr.read(q, override_num_blocks=2).select_columns(["label", "id"])
    tables = ray_session.get(two.to_arrow_refs())
    assert {tuple(t.column_names) for t in tables} == {("label", "id")}
    assert [r for t in tables for r in rows_of(t)] == want
    with pytest.raises(ValueError):
        qr.read(q, columns=["nope"])


def test_empty(ray_session, data):
    q = quiver.open(data["empty"])
    r = qr.read(q)
    assert r.count() == 0
    assert r.schema().names == ["id", "text", "score", "label", "vec"]
    none = quiver.open(data["plain"]).filter("id < 0")
    r = qr.read(none, override_num_blocks=4)
    assert r.count() == 0 and ray_rows(ray_session, r) == []


def test_changed_file_refused_in_worker(ray_session, data, tmp_path):
    import shutil

    import ray

    d = tmp_path / "ds"
    shutil.copytree(data["plain"], d)
    q = quiver.open(str(d))
    r = qr.read(q, override_num_blocks=3)  # planned over these files
    other = tmp_path / "other"
    datasets.load_from_disk(data["plain"]).shuffle(seed=9).flatten_indices().save_to_disk(
        str(other), num_shards=3)
    victim = d / "data-00001-of-00003.arrow"
    os.replace(other / "data-00001-of-00003.arrow", victim)  # replaced, as a re-save does
    with pytest.raises(ray.exceptions.RayError) as e:
        r.materialize()
    msg = str(e.value)
    assert str(victim) in msg and "changed since the read was planned" in msg


def test_write_round_trip(ray_session, data, tmp_path):
    q = quiver.open(data["plain"]).shuffle(seed=5)
    hf = datasets.load_from_disk(data["plain"]).shuffle(seed=5)
    dst = tmp_path / "out"
    qr.write(qr.read(q, override_num_blocks=4), str(dst))
    back = datasets.load_from_disk(str(dst))
    assert hf_rows(back) == hf_rows(hf)
    assert back.features == hf.features  # ClassLabel and List kept (huggingface metadata)
    names = sorted(os.listdir(dst))
    assert names == [f"data-0000{i}-of-00004.arrow" for i in range(4)] + [
        "dataset_info.json", "state.json"]
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []  # no staging left
    assert rows_of(pa.table(quiver.open(str(dst)))) == hf_rows(hf)
    with pytest.raises(ValueError):  # an existing destination is refused
        qr.write(qr.read(q), str(dst))
    # blocks that did not come from quiver: features inferred from Arrow types
    import ray.data

    plain = ray.data.from_items([{"x": i, "s": str(i)} for i in range(10)], override_num_blocks=2)
    qr.write(plain, str(tmp_path / "items"))
    b = datasets.load_from_disk(str(tmp_path / "items"))
    assert b.to_list() == [{"x": i, "s": str(i)} for i in range(10)]
    assert b.features == datasets.Features({"x": datasets.Value("int64"),
                                            "s": datasets.Value("string")})
    # empty
    qr.write(qr.read(quiver.open(data["empty"])), str(tmp_path / "e"))
    e = datasets.load_from_disk(str(tmp_path / "e"))
    assert len(e) == 0 and e.features == FEATURES  # one empty shard (datasets writes none,
    # and its load_from_disk cannot read that back)
