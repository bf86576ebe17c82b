"""Files truncated while quiver has them open (include/quiver/guard.h).

A multi-batch IPC file, an IPC stream and a save_to_disk directory written
by pyarrow / `datasets` are opened with quiver.open, then cut in place
(ftruncate, same inode) inside one record batch. Oracles: the values
written (pyarrow's table) and the batch boundaries that pyarrow's own
message reader finds in the file. Checked:

  - rows of the batches before the cut still read (ds[i], ds[a:b], iter)
    and equal pyarrow's;
  - rows at or past the cut (ds[i], iteration, ds["col"], sort, filter,
    map, save_to_disk) raise QuiverError (code 8, "file changed") whose
    message names the file and its size before and after:
    "'PATH' shrank from N to M bytes while open"; the process survives
    (no SIGBUS) and another open dataset still reads in full;
  - with every batch decoded (cached) before the cut, save_to_disk still
    fails with that error, not SIGBUS;
  - the CLI (`quiver head`) printing a file that is cut under it exits 1
    with that message on stderr, after printing the rows before the cut.

Environment: QV_BUILD (build/python/quiver and the CLI, built by CMake).
"""
import os
import shutil
import subprocess
import tempfile

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.ipc  # noqa: E402,F401
import pytest  # noqa: E402

from qvpaths import CLI, import_quiver, require  # noqa: E402

quiver = import_quiver()

ROWS_PER_BATCH = 1000
N_BATCHES = 20


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="quiver-cut-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def table(n=ROWS_PER_BATCH * N_BATCHES, base=0):
    ids = list(range(base, base + n))
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "s": pa.array([f"row {i:07d} " + "x" * (i % 50) for i in ids])})


def write(path, t, fmt):
    """Write t in batches of ROWS_PER_BATCH, as an IPC file or stream."""
    new = pa.ipc.new_file if fmt == "file" else pa.ipc.new_stream
    with pa.OSFile(path, "wb") as f, new(f, t.schema) as w:
        for b in t.to_batches(max_chunksize=ROWS_PER_BATCH):
            w.write_batch(b)


def batch_ends(path):
    """File offsets where each record batch message ends, by pyarrow's
    message reader (the file format's messages follow its 8-byte magic)."""
    ends = []
    with open(path, "rb") as f:
        if f.read(6) == b"ARROW1":
            f.seek(8)
        else:
            f.seek(0)
        stream = pa.PythonFile(f, mode="r")
        while True:
            try:
                m = pa.ipc.read_message(stream)
            except (EOFError, OSError, pa.ArrowInvalid):
                break
            if m is None or m.type == "footer":
                break
            if m.type == "record batch":
                ends.append(f.tell())
    return ends


def cut(path, size):
    with open(path, "r+b") as f:
        os.ftruncate(f.fileno(), size)


def shrank(path, before, after):
    return f"'{path}' shrank from {before} to {after} bytes while open"


def check_cut(ds, path, want, intact_rows, other, other_want, copy_dir):
    """ds maps path (already cut); rows [0, intact_rows) are in batches
    wholly before the cut, the rest is gone."""
    before, after = want["size"], os.path.getsize(path)
    rows = want["table"].to_pylist()
    for i in (0, 1, ROWS_PER_BATCH - 1, ROWS_PER_BATCH, intact_rows // 2, intact_rows - 1):
        assert ds[i] == rows[i]
    assert ds[intact_rows - 5:intact_rows] == want["table"].slice(intact_rows - 5, 5).to_pydict()
    for i in (intact_rows, intact_rows + ROWS_PER_BATCH + 3, len(rows) - 1):
        with pytest.raises(quiver.QuiverError) as e:
            ds[i]
        assert shrank(path, before, after) in str(e.value)
        assert e.value.code == 8 and e.value.status == "file changed"
    got = []
    with pytest.raises(quiver.QuiverError) as e:
        for r in ds:
            got.append(r)
    assert shrank(path, before, after) in str(e.value)
    assert got == rows[:len(got)] and intact_rows - ROWS_PER_BATCH <= len(got) <= intact_rows
    with pytest.raises(quiver.QuiverError) as e:
        ds["s"][:]  # a lazy Column: reading it raises
    assert shrank(path, before, after) in str(e.value)
    # Operations over every row: sort keys, filter expressions, map
    # (Python function and expressions), save_to_disk.
    ops = [lambda: ds.sort("s"), lambda: ds.filter("id >= 0"),
           lambda: ds.map(lambda r: {"n": len(r["s"])}),
           lambda: ds.save_to_disk(copy_dir)]
    for op in ops:
        with pytest.raises(quiver.QuiverError) as e:
            op()
        assert shrank(path, before, after) in str(e.value)
    assert not os.path.exists(os.path.join(copy_dir, "state.json"))
    # The rows before the cut still read after all those errors, and so
    # does another dataset, in full.
    assert ds[intact_rows - 1] == rows[intact_rows - 1]
    assert other["id"] == other_want.column("id").to_pylist()
    assert list(other) == other_want.to_pylist()


@pytest.mark.parametrize("fmt", ["file", "stream"])
def test_ipc_cut_while_open(tmp, fmt):
    path = os.path.join(tmp, f"data.{fmt}")
    t = table()
    write(path, t, fmt)
    spare = os.path.join(tmp, f"spare.{fmt}")
    t2 = table(3000, base=10 ** 6)
    write(spare, t2, fmt)
    ends = batch_ends(path)
    assert len(ends) == N_BATCHES
    ds = quiver.open(path)
    other = quiver.open(spare)
    size = os.path.getsize(path)
    assert ds[len(ds) - 1] == t.slice(len(t) - 1).to_pylist()[0]  # last batch decoded
    k = 9  # batches 0..k-1 stay whole; the cut falls inside batch k
    new_size = ends[k - 1] + 4096 + 100
    assert new_size < ends[k]
    cut(path, new_size)
    check_cut(ds, path, {"size": size, "table": t}, k * ROWS_PER_BATCH, other, t2,
              os.path.join(tmp, "copy"))


def test_save_to_disk_shard_cut_while_open(tmp):
    t = table(6000)
    d = os.path.join(tmp, "saved")
    datasets.Dataset(t).save_to_disk(d, num_shards=2)
    shard = os.path.join(d, "data-00001-of-00002.arrow")
    ends = batch_ends(shard)
    assert len(ends) == 3  # datasets writes batches of 1000 rows
    ds = quiver.open(d)
    assert len(ds) == 6000
    other = quiver.open(os.path.join(d, "data-00000-of-00002.arrow"))
    size = os.path.getsize(shard)
    cut(shard, ends[0] + 100)  # shard 1 keeps its first batch: rows 3000..3999
    check_cut(ds, shard, {"size": size, "table": t}, 4000, other, t.slice(0, 3000),
              os.path.join(tmp, "copy"))  # beside the dataset: a DST inside it is refused


def test_cli_exits_1_when_the_file_is_cut(tmp):
    path = os.path.join(tmp, "big.arrow")
    t = table(ROWS_PER_BATCH * 200)
    write(path, t, "file")
    ends = batch_ends(path)
    size = os.path.getsize(path)
    p = subprocess.Popen([require(CLI), "head", "-n", str(len(t)), path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # One chunk read: the CLI runs, and blocks once the pipe is full (64 KiB,
    # about a thousand rows of output), long before batch 100.
    first = os.read(p.stdout.fileno(), 4096)
    assert first.startswith(b'{"id":0,')
    k = 100
    cut(path, ends[k - 1] + 100)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 1, err
    assert shrank(path, size, ends[k - 1] + 100).encode() in err
    lines = (first + out).decode().splitlines()
    assert len(lines) == k * ROWS_PER_BATCH
    assert [int(line.split(",")[0].split(":")[1]) for line in lines] == list(range(k * ROWS_PER_BATCH))


def test_save_to_disk_of_decoded_batches_cut_while_open(tmp):
    """Every batch decoded (and cached) before the cut: save_to_disk's own
    reads of the cached arrays (size estimate, writer) fail cleanly."""
    path = os.path.join(tmp, "data.stream")
    t = table(5000)
    write(path, t, "stream")
    ends = batch_ends(path)
    ds = quiver.open(path)
    assert list(ds) == t.to_pylist()  # decodes every batch
    size = os.path.getsize(path)
    cut(path, ends[3] + 100)  # inside the last batch
    with pytest.raises(quiver.QuiverError) as e:
        ds.save_to_disk(os.path.join(tmp, "copy"))
    assert shrank(path, size, ends[3] + 100) in str(e.value)
    assert ds[3999] == t.slice(3999, 1).to_pylist()[0]


def test_numpy_batches_of_a_mapping_cut_while_open(tmp):
    """The numpy format over an indices mapping copies rows from data
    batches it fetched (and checked) at the first step: steps after the
    cut that read a fetched batch now past the end raise QuiverError, not
    SIGBUS; the steps before the cut match pyarrow's rows."""
    path = os.path.join(tmp, "big.arrow")
    t = table(ROWS_PER_BATCH * 6)
    write(path, t, "file")
    ends = batch_ends(path)
    size = os.path.getsize(path)
    first = [k * ROWS_PER_BATCH for k in range(6)]  # the first step touches every batch
    ds = quiver.open(path).select(first + list(range(len(t)))).with_format("numpy")
    it = iter(ds.iter(batch_size=6))
    b = next(it)
    assert b["id"].tolist() == first
    cut(path, ends[2] + 100)  # batches 0..2 intact, 3 cut inside, 4..5 gone
    got = []
    with pytest.raises(quiver.QuiverError) as e:
        for b in it:
            got.extend(b["id"].tolist())
    assert shrank(path, size, ends[2] + 100) in str(e.value)
    assert e.value.code == 8
    assert got == list(range(len(got))) and len(got) <= 3 * ROWS_PER_BATCH
    assert got[-6:] == [int(s.split()[1]) for s in b["s"].tolist()][-6:]
