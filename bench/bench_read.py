"""bench_read.py PATH N SEED — the pyarrow anchor for the open/random-row
benchmark: pa.ipc.open_stream(pa.memory_map(path)).read_all(), then the
same N random rows quiver reads (same generator: splitmix64 from SEED).
Prints one JSON line: open seconds, rows seconds, peak anonymous RSS."""
import json
import sys
import time

import pyarrow as pa


def anon_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def splitmix(seed, n, bound):
    out = []
    x = seed & 0xFFFFFFFFFFFFFFFF
    for _ in range(n):
        x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        z ^= z >> 31
        out.append(z % bound)
    return out


path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
base = anon_kb()
t0 = time.perf_counter()
table = pa.ipc.open_stream(pa.memory_map(path)).read_all()
t1 = time.perf_counter()
peak = anon_kb()
rows = splitmix(seed, n, table.num_rows)
t2 = time.perf_counter()
method = "take"
try:
    sub = table.take(pa.array(rows, pa.int64()))
except pa.ArrowInvalid:
    # Table.take concatenates each chunked column first (apache/arrow
    # #37766); past 2 GiB of string data that overflows. Fall back to one
    # 1-row slice per requested row, then concatenate (what `datasets` does).
    method = "slice+concat (take failed: offset overflow)"
    sub = pa.concat_tables([table.slice(r, 1) for r in rows])
ids = sub.column("id").to_numpy()
t3 = time.perf_counter()
peak = max(peak, anon_kb())
assert list(ids[:5]) == rows[:5], "id column must equal the row number"
print(json.dumps({"tool": "pyarrow", "open_s": t1 - t0, "rows_s": t3 - t2,
                  "peak_anon_mb": (peak - base) / 1024, "batches": table.column(0).num_chunks,
                  "rows": table.num_rows, "checksum": int(ids.sum()), "method": method}))
