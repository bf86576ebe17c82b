"""gen_data.py PATH GB BATCHES [ROWS_PER_BATCH] — write the benchmark table
with pyarrow's RecordBatchStreamWriter: int64, float64 and string columns,
BATCHES record batches totalling about GB gigabytes (or, when
ROWS_PER_BATCH is given, exactly that many rows per batch; GB is then
ignored). Deterministic (seeded)."""
import os
import sys

import numpy as np
import pyarrow as pa

path, gb, batches = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
target = int(gb * (1 << 30))
per_batch = target // batches
# Row cost: 8 (int64) + 8 (float64) + 4 (offset) + ~40 (string bytes).
rows = max(1, per_batch // 60)
if len(sys.argv) > 4:
    rows = int(sys.argv[4])
rng = np.random.default_rng(42)
words = np.array([("w%06d" % i) * 6 for i in range(4096)])  # 42-byte strings
schema = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
tmp = path + ".tmp"
with pa.OSFile(tmp, "wb") as f, pa.ipc.new_stream(f, schema) as w:
    base = 0
    for b in range(batches):
        ids = np.arange(base, base + rows, dtype=np.int64)
        xs = rng.random(rows)
        ss = pa.array(words[rng.integers(0, len(words), rows)], pa.string())
        w.write_batch(pa.record_batch([pa.array(ids), pa.array(xs), ss], schema=schema))
        base += rows
os.replace(tmp, path)
print(f"wrote {path}: {batches} batches x {rows} rows, {os.path.getsize(path) / 2**30:.2f} GiB")
