"""bench_write.py OUT_DIR QUIVER_JSON — the pyarrow anchor of the write
benchmark (issue 3), on the same data in the same run.

The data: quiver's uncompressed output (OUT_DIR/quiver-none.arrows, written
by bench_write.c from its builder) read into heap memory with
pa.OSFile + ipc.open_stream (a copy, not a mapping), checked against the
checksums quiver printed (so both tools wrote the very same rows and
batches). Then pyarrow's RecordBatchStreamWriter writes it to
OUT_DIR/pyarrow-none.arrows and OUT_DIR/pyarrow-zstd.arrows (zstd at the
level quiver used; pyarrow's default use_threads=True compresses the
buffers of a batch in parallel), timed from open to close, after os.sync(),
best of as many repetitions as quiver made.
Finally quiver's zstd output is read back by pyarrow batch by batch and
checked. Prints one JSON line.
"""
import json
import os
import resource
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

out_dir, q = sys.argv[1], json.loads(sys.argv[2])


def cpu_now():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def checksums(batches):
    id_sum, x_xor, s_bytes, rows = np.uint64(0), np.uint64(0), 0, 0
    for b in batches:
        ids = b.column(0).to_numpy()
        id_sum += ids.astype(np.uint64).sum(dtype=np.uint64)
        x_xor ^= np.bitwise_xor.reduce(b.column(1).to_numpy().view(np.uint64), initial=0)
        s = b.column(2)
        offs = np.frombuffer(s.buffers()[1], dtype=np.int32)[s.offset:s.offset + len(s) + 1]
        s_bytes += int(offs[-1] - offs[0]) if len(s) else 0
        rows += b.num_rows
    return {"id_sum": int(id_sum), "x_xor": int(x_xor), "s_bytes": s_bytes}, rows


t0 = time.perf_counter()
with pa.OSFile(os.path.join(out_dir, "quiver-none.arrows")) as f:
    reader = ipc.open_stream(f)
    schema = reader.schema
    batches = list(reader)
load_s = time.perf_counter() - t0
sums, rows = checksums(batches)
assert rows == q["rows"], (rows, q["rows"])
assert sums == q["checksum"], (sums, q["checksum"])
assert len(batches) == q["batches"]

result = {"tool": "pyarrow", "version": pa.__version__, "load_s": load_s,
          "cpu_count": os.cpu_count(), "zstd_level": q["zstd_level"]}
for codec in ("none", "zstd"):
    path = os.path.join(out_dir, f"pyarrow-{codec}.arrows")
    compression = None if codec == "none" else pa.Codec("zstd", compression_level=q["zstd_level"])
    options = ipc.IpcWriteOptions(compression=compression)
    secs, cpu = float("inf"), 0.0
    for _ in range(q.get("reps", 1)):
        if os.path.exists(path):
            os.unlink(path)
        os.sync()
        t0, c0 = time.perf_counter(), cpu_now()
        with pa.OSFile(path, "wb") as f, ipc.new_stream(f, schema, options=options) as w:
            for b in batches:
                w.write_batch(b)
        t = time.perf_counter() - t0
        if t < secs:
            secs, cpu = t, cpu_now() - c0
    result[codec] = {"seconds": secs, "cpu_s": cpu, "gbps": q["data_bytes"] / secs / 1e9,
                     "file_bytes": os.path.getsize(path)}
del batches

# quiver's compressed output reads back in pyarrow, equal to the data
with pa.OSFile(os.path.join(out_dir, "quiver-zstd.arrows")) as f:
    zs, zrows = checksums(ipc.open_stream(f))
assert zrows == q["rows"] and zs == q["checksum"], "quiver's zstd output differs"
result["verified"] = True
print(json.dumps(result))
