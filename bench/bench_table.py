"""bench_table.py PATH N SEED [PREFIX [SLICES]] — the anchors of the table benchmark
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
 - the `datasets` fast_slice (interpolation search over the batch offsets,
   first and last batch sliced, pa.Table.from_batches) for the same random
   slices as bench_table.c;
 - a `datasets` MemoryMappedTable with the same 100 replays as
   bench_table.c: the size of its pickled state (path + replays) and the
   time to rebuild it (memory-map + read_all, then each replay applied).
Prints one JSON line (times in seconds)."""
import json
import pickle
import sys
import time

import numpy as np
import pyarrow as pa

MASK = 0xFFFFFFFFFFFFFFFF
REPS = 3


def splitmix_raw(seed, skip, n):
    """Draws skip+1 .. skip+n of splitmix64 from seed (as bench_table.c)."""
    with np.errstate(over="ignore"):
        z = (np.arange(skip + 1, skip + n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             + np.uint64(seed & MASK))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def splitmix_rows(seed, n, bound):
    """The same row sequence as bench_table.c."""
    return (splitmix_raw(seed, 0, n) % np.uint64(bound)).astype(np.int64)


def interpolation_search(offsets, x):
    """Largest i with offsets[i] <= x < offsets[i + 1] (datasets'
    _interpolation_search, restated)."""
    i, j = 0, len(offsets) - 1
    while i < j and offsets[i] <= x < offsets[j]:
        k = i + ((j - i) * (x - offsets[i]) // (offsets[j] - offsets[i]))
        if offsets[k] <= x < offsets[k + 1]:
            return k
        if offsets[k] < x:
            i = k + 1
        else:
            j = k
    raise IndexError(x)


def fast_slice(batches, offsets, schema, offset, length):
    """datasets' IndexedTableMixin.fast_slice, restated."""
    if offset >= offsets[-1] or length <= 0:
        return pa.Table.from_batches([], schema=schema)
    i = interpolation_search(offsets, offset)
    if offset + length >= offsets[-1]:
        sel = batches[i:]
        sel[0] = sel[0].slice(offset - offsets[i])
    else:
        j = interpolation_search(offsets, offset + length - 1)
        sel = batches[i:j + 1]
        sel[-1] = sel[-1].slice(0, offset + length - offsets[j])
        sel[0] = sel[0].slice(offset - offsets[i])
    return pa.Table.from_batches(sel, schema=schema)


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
    out["take_numeric_s"] = out["take_numeric_cpu_s"] = float("inf")
    for _ in range(REPS):  # best of REPS, as bench_table.c (a shared machine)
        taken = None
        t0, c0 = time.perf_counter(), time.process_time()
        taken = numeric.take(idx)
        out["take_numeric_s"] = min(out["take_numeric_s"], time.perf_counter() - t0)
        out["take_numeric_cpu_s"] = min(out["take_numeric_cpu_s"], time.process_time() - c0)
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

    # 4. datasets fast_slice on bench_table.c's slices (its splitmix draws
    # continue after the N row draws: offset, then length, per slice)
    slices = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
    total = table.num_rows
    with np.errstate(over="ignore"):
        z = splitmix_raw(seed, n, 2 * slices)
    py_offsets = [int(o) for o in offsets]
    t0 = time.perf_counter()
    sliced_rows = 0
    for k in range(slices):
        off = int(z[2 * k] % np.uint64(total))
        length = int(z[2 * k + 1] % np.uint64(total - off + 1))
        sliced_rows += fast_slice(batches, py_offsets, table.schema, off, length).num_rows
    out["datasets_slice_total_s"] = time.perf_counter() - t0
    out["slices_n"] = slices
    out["datasets_sliced_rows"] = sliced_rows

    # 5. a MemoryMappedTable's pickle: path + 100 replays, and its reload
    replays, cur_rows = [], table.num_rows
    for i in range(100):
        if i % 3 == 0:
            replays.append(("slice", (1, cur_rows - 2), {}))
            cur_rows -= 2
        elif i % 3 == 1:
            replays.append(("select", ([1, 2, 0],), {}))
        else:
            names = ["id", "x", "s"] if (i // 3) % 2 else ["a", "b", "c"]
            replays.append(("rename_columns", (names,), {}))
    state = pickle.dumps({"path": path, "replays": replays})
    t0 = time.perf_counter()
    reloaded = pa.ipc.open_stream(pa.memory_map(path)).read_all()
    for name, args, kwargs in replays:
        reloaded = getattr(reloaded, name)(*args, **kwargs)
    out["datasets_reload_s"] = time.perf_counter() - t0
    out["datasets_pickle_bytes"] = len(state)
    out["datasets_reload_rows"] = reloaded.num_rows
    out["rows"] = table.num_rows
    out["batches"] = len(batches)
    print(json.dumps(out))


main()
