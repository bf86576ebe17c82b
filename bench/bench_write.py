"""bench_write.py OUT_DIR QUIVER_JSON [LIBQUIVER] — the pyarrow anchor of
the write benchmark (issue 3), on the same data in the same run.

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

With LIBQUIVER (the path of libquiver.so) it also times quiver writing the
very same heap batches in this process, handed over as an Arrow C stream
(RecordBatchReader._export_to_c -> qv_write_arrow_stream_fd: imported
zero-copy), alternating with pyarrow repetition by repetition, so both see
the same memory and the same page-cache conditions ("interleaved").
"""
import ctypes
import json
import os
import resource
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

out_dir, q = sys.argv[1], json.loads(sys.argv[2])
lib_path = sys.argv[3] if len(sys.argv) > 3 else None


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
def pyarrow_write(path, codec):
    compression = None if codec == "none" else pa.Codec("zstd", compression_level=q["zstd_level"])
    options = ipc.IpcWriteOptions(compression=compression)
    with pa.OSFile(path, "wb") as f, ipc.new_stream(f, schema, options=options) as w:
        for b in batches:
            w.write_batch(b)


class _Stream(ctypes.Structure):
    _fields_ = [(n, ctypes.c_void_p) for n in
                ("get_schema", "get_next", "get_last_error", "release", "private_data")]


class _Options(ctypes.Structure):  # qv_write_options
    _fields_ = [("format", ctypes.c_int), ("compression", ctypes.c_int),
                ("compression_level", ctypes.c_int), ("alignment", ctypes.c_int),
                ("max_batch_rows", ctypes.c_int64), ("threads", ctypes.c_int)]


def quiver_write(lib, path, codec):
    stream = _Stream()
    pa.RecordBatchReader.from_batches(schema, batches)._export_to_c(ctypes.addressof(stream))
    opts = _Options(1, 0 if codec == "none" else 2, q["zstd_level"], 8, -1, 0)
    err = ctypes.create_string_buffer(1024)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        st = lib.qv_write_arrow_stream_fd(ctypes.byref(stream), fd, ctypes.byref(opts), None, err)
    finally:
        os.close(fd)
    assert st == 0, err.value


def timed(fn, path, codec):
    if os.path.exists(path):
        os.unlink(path)
    os.sync()
    t0, c0 = time.perf_counter(), cpu_now()
    fn(path, codec)
    return time.perf_counter() - t0, cpu_now() - c0


def best(runs):
    secs, cpu = min(runs)
    return {"seconds": secs, "cpu_s": cpu, "gbps": q["data_bytes"] / secs / 1e9}


lib = None
if lib_path:
    lib = ctypes.CDLL(lib_path)
    lib.qv_write_arrow_stream_fd.argtypes = [ctypes.POINTER(_Stream), ctypes.c_int,
                                             ctypes.POINTER(_Options), ctypes.c_void_p,
                                             ctypes.c_char_p]
    lib.qv_write_arrow_stream_fd.restype = ctypes.c_int
    result["interleaved"] = {}
for codec in ("none", "zstd"):
    ppath = os.path.join(out_dir, f"pyarrow-{codec}.arrows")
    qpath = os.path.join(out_dir, f"quiver-stream-{codec}.arrows")
    pruns, qruns = [], []
    for rep in range(q.get("reps", 1)):
        order = [0, 1] if rep % 2 == 0 else [1, 0]
        for k in order:
            if k == 0:
                pruns.append(timed(pyarrow_write, ppath, codec))
            elif lib is not None:
                qruns.append(timed(lambda p, c: quiver_write(lib, p, c), qpath, codec))
                os.unlink(qpath)
    result[codec] = dict(best(pruns), file_bytes=os.path.getsize(ppath))
    if lib is not None:
        result["interleaved"][codec] = best(qruns)
del batches

# quiver's compressed output reads back in pyarrow, equal to the data
with pa.OSFile(os.path.join(out_dir, "quiver-zstd.arrows")) as f:
    zs, zrows = checksums(ipc.open_stream(f))
assert zrows == q["rows"] and zs == q["checksum"], "quiver's zstd output differs"
result["verified"] = True
print(json.dumps(result))
