"""bench_sort.py — data and pyarrow anchor of the sort benchmark (issue 6).

    python bench_sort.py gen PATH ROWS     write the table (Arrow IPC file)
    python bench_sort.py run PATH          time pyarrow on it, print JSON

The table has ROWS rows in batches of 10,000 rows (deterministic, seeded):
  k64  int64, uniform over the whole range, 1% null
  s    string, 4 to 20 random lowercase letters, 1% null
  k32  int32 in [0, 1000)
`run` memory-maps the file (pa.memory_map + read_all: zero copy, what
`datasets` does) and times (wall and process CPU) pc.sort_indices — the call behind
`Dataset.sort` — by k64, by s, and by (k32, s), all ascending with nulls
at the end, as bench_sort.c does. Each result carries a checksum of the
index order, sum((i + 1) * idx[i]) mod 2**64, so the two sides can be
checked for producing the same order."""
import json
import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BATCH = 10_000
CASES = [("int64", [("k64", "ascending")]),
         ("string", [("s", "ascending")]),
         ("int32,string", [("k32", "ascending"), ("s", "ascending")])]


def gen(path, rows):
    rng = np.random.default_rng(6)
    schema = pa.schema([("k64", pa.int64()), ("s", pa.string()), ("k32", pa.int32())])
    tmp = path + ".tmp"
    with pa.OSFile(tmp, "wb") as f, pa.ipc.new_file(f, schema) as w:
        for start in range(0, rows, BATCH):
            n = min(BATCH, rows - start)
            k64 = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n,
                               dtype=np.int64, endpoint=True)
            lens = rng.integers(4, 21, n)
            offs = np.zeros(n + 1, np.int32)
            np.cumsum(lens, out=offs[1:])
            data = rng.integers(97, 123, int(offs[-1]), dtype=np.uint8).tobytes()
            s_valid = rng.random(n) >= 0.01
            k_valid = rng.random(n) >= 0.01
            s = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offs),
                                                       pa.py_buffer(data)])
            s = pc.if_else(pa.array(s_valid), s, pa.scalar(None, pa.string()))
            k = pa.array(k64, mask=~k_valid)
            k32 = pa.array(rng.integers(0, 1000, n, dtype=np.int32))
            w.write_batch(pa.record_batch([k, s, k32], schema=schema))
    os.replace(tmp, path)
    print(f"wrote {path}: {rows:,} rows, {os.path.getsize(path) / 2**20:.0f} MiB")


def checksum(idx):
    idx = np.asarray(idx, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return int((idx * np.arange(1, len(idx) + 1, dtype=np.uint64)).sum(dtype=np.uint64))


def run(path):
    table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    out = {"rows": table.num_rows, "batches": table.column(0).num_chunks}
    for name, keys in CASES:
        keys = [(k, order, "at_end") for k, order in keys]
        t0, c0 = time.perf_counter(), time.process_time()
        idx = pc.sort_indices(table, sort_keys=keys)
        out[name] = {"s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                     "checksum": checksum(idx)}
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]))
    else:
        run(sys.argv[2])
