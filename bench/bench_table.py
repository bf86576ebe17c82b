"""bench_table.py PATH N SEED [PREFIX] — the anchors of the table benchmark
(issue 4), on the same memory-mapped IPC stream and the same N random rows
as bench_table.c (splitmix64 from SEED):

 - pyarrow Table.take on the memory-mapped table (read_all of
   pa.memory_map): take concatenates each chunked column first (apache/arrow
   #37766); past 2 GiB of string data that fails with an offset overflow,
   which is reported. Then, as bench_read.py does, one Table.slice(r, 1) per
   row + concat_tables: with 10,000 chunks each Table.slice scans the chunk
   list, so this runs on the first PREFIX rows (default 5,000) and is
   extrapolated to N (labelled so);
 - pyarrow Table.take on the numeric columns only (id, x), which works: the
   like-for-like comparison for take;
 - the Hugging Face `datasets` approach (IndexedTableMixin.fast_gather):
   locate each row's batch with a vectorised np.searchsorted over the batch
   offsets, take one 1-row slice per row, pa.Table.from_batches.
Prints one JSON line (times in seconds)."""
import json
import sys
import time

import numpy as np
import pyarrow as pa

MASK = 0xFFFFFFFFFFFFFFFF


def splitmix_rows(seed, n, bound):
    """The same sequence as bench_table.c, vectorised with numpy uint64."""
    with np.errstate(over="ignore"):
        steps = (np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                 + np.uint64(seed & MASK))
        z = steps
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(bound)).astype(np.int64)


def main():
    path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    prefix = int(sys.argv[4]) if len(sys.argv) > 4 else 5000
    out = {"tool": "pyarrow"}
    t0 = time.perf_counter()
    table = pa.ipc.open_stream(pa.memory_map(path)).read_all()
    out["open_s"] = time.perf_counter() - t0
    rows = splitmix_rows(seed, n, table.num_rows)
    idx = pa.array(rows)

    # 1. Table.take on the whole table
    t0 = time.perf_counter()
    try:
        taken = table.take(idx)
        out["take_s"] = time.perf_counter() - t0
        out["take_error"] = None
        out["checksum"] = int(taken.column("id").to_numpy().sum())
        del taken
    except (pa.ArrowInvalid, pa.ArrowCapacityError) as e:
        out["take_s"] = None
        out["take_error"] = f"{type(e).__name__}: {e}"
        out["take_fail_s"] = time.perf_counter() - t0
        # fallback as bench_read.py: 1-row Table.slice per row + concat
        m = min(prefix, n)
        t0 = time.perf_counter()
        sub = pa.concat_tables([table.slice(int(r), 1) for r in rows[:m]])
        dt = time.perf_counter() - t0
        assert sub.column("id").to_pylist()[:5] == rows[:5].tolist()
        out["fallback_rows"] = m
        out["fallback_s_measured"] = dt
        out["fallback_s_extrapolated"] = dt * n / m

    # 2. Table.take on the numeric columns
    numeric = table.select(["id", "x"])
    t0 = time.perf_counter()
    taken = numeric.take(idx)
    out["take_numeric_s"] = time.perf_counter() - t0
    out["checksum"] = int(taken.column("id").to_numpy().sum())
    del taken

    # 3. the datasets approach (fast_gather)
    batches = table.to_batches()
    offsets = np.cumsum([0] + [b.num_rows for b in batches])
    t0 = time.perf_counter()
    batch_idx = np.searchsorted(offsets, rows, side="right") - 1
    gathered = pa.Table.from_batches(
        [batches[b].slice(i - offsets[b], 1) for b, i in zip(batch_idx, rows)],
        schema=table.schema)
    out["datasets_s"] = time.perf_counter() - t0
    ids = gathered.column("id")
    assert ids.slice(0, 5).to_pylist() == rows[:5].tolist()
    assert int(np.sum([c.to_numpy().sum() for c in ids.chunks])) == out["checksum"]
    out["rows"] = table.num_rows
    out["batches"] = len(batches)
    print(json.dumps(out))


main()
