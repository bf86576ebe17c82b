"""qv_reader_footer_metadata (quiver/ipc.h, through ctypes on libquiver.so)
against pyarrow: the custom metadata pyarrow writes into an IPC file's
footer (pa.ipc.new_file(metadata=...)) is what quiver's reader returns, in
order and byte for byte; a file without it gives an empty list and a stream
(no footer) gives NULL.

Environment: QV_BUILD (libquiver.so).
"""
import ctypes

import pyarrow as pa
import pytest

from qvpaths import LIB, require


class KV(ctypes.Structure):
    _fields_ = [("key", ctypes.POINTER(ctypes.c_char)), ("value", ctypes.POINTER(ctypes.c_char)),
                ("key_len", ctypes.c_int64), ("value_len", ctypes.c_int64)]


class Metadata(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("kv", ctypes.POINTER(KV))]


@pytest.fixture(scope="module")
def q():
    lib = ctypes.CDLL(require(LIB))
    lib.qv_reader_open_path.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    lib.qv_reader_open_path.restype = ctypes.c_int
    lib.qv_reader_footer_metadata.argtypes = [ctypes.c_void_p]
    lib.qv_reader_footer_metadata.restype = ctypes.POINTER(Metadata)
    lib.qv_reader_close.argtypes = [ctypes.c_void_p]
    return lib


def footer(q, path):
    err = ctypes.create_string_buffer(1024)
    r = ctypes.c_void_p()
    assert q.qv_reader_open_path(str(path).encode(), None, ctypes.byref(r), err) == 0, err.value
    try:
        md = q.qv_reader_footer_metadata(r)
        if not md:
            return None
        m = md.contents
        return [(ctypes.string_at(m.kv[i].key, m.kv[i].key_len),
                 ctypes.string_at(m.kv[i].value, m.kv[i].value_len)) for i in range(m.n)]
    finally:
        q.qv_reader_close(r)


TABLE = pa.table({"x": pa.array([1, 2, 3], pa.int64()), "s": ["a", None, "c"]})


@pytest.mark.parametrize("metadata", [
    {b"k": b"v"},
    {b"writer": b"pyarrow", b"empty": b"", b"bytes": bytes(range(256)), "é".encode(): b"\x00v"},
])
def test_footer_metadata_as_pyarrow_wrote_it(q, tmp_path, metadata):
    path = tmp_path / "f.arrow"
    with pa.ipc.new_file(str(path), TABLE.schema, metadata=metadata) as w:
        w.write_table(TABLE)
    assert footer(q, path) == list(metadata.items())


def test_no_footer_metadata(q, tmp_path):
    path = tmp_path / "f.arrow"
    with pa.ipc.new_file(str(path), TABLE.schema) as w:
        w.write_table(TABLE)
    assert footer(q, path) == []
    stream = tmp_path / "s.arrows"
    with pa.ipc.new_stream(str(stream), TABLE.schema) as w:
        w.write_table(TABLE)
    assert footer(q, stream) is None
