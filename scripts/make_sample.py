"""make_sample.py OUT_DIR — write the built-in sample dataset the demo opens:
a Hugging Face `datasets`-style IPC stream (with `huggingface` schema
metadata) and the same table as an IPC file (Feather v2) with zstd."""
import json
import os
import sys

import pyarrow as pa

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
n = 10_000
labels = ["neg", "pos"]
table = pa.table({
    "id": pa.array(range(n), pa.int64()),
    "text": pa.array([f"sample sentence number {i}" + "!" * (i % 7) for i in range(n)]),
    "label": pa.array([i % 2 for i in range(n)], pa.int64()),
    "score": pa.array([(i * 0.37) % 1 if i % 13 else None for i in range(n)], pa.float64()),
    "tokens": pa.array([[i, i + 1, i + 2][: i % 4] for i in range(n)], pa.list_(pa.int32())),
})
features = {
    "id": {"dtype": "int64", "_type": "Value"},
    "text": {"dtype": "string", "_type": "Value"},
    "label": {"names": labels, "_type": "ClassLabel"},
    "score": {"dtype": "float64", "_type": "Value"},
    "tokens": {"feature": {"dtype": "int32", "_type": "Value"}, "_type": "List"},
}
meta = {"huggingface": json.dumps({"info": {"features": features},
                                   "fingerprint": "5a1b2c3d4e5f6a7b"})}
table = table.replace_schema_metadata(meta)
with pa.OSFile(os.path.join(out, "sample.arrow"), "wb") as f:
    with pa.ipc.new_stream(f, table.schema) as w:
        w.write_table(table, max_chunksize=1000)
with pa.OSFile(os.path.join(out, "sample.feather"), "wb") as f:
    with pa.ipc.new_file(f, table.schema,
                         options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(table, max_chunksize=2500)
