"""qvtable.py — ctypes access to quiver's table layer (include/quiver/table.h)
for the Python oracle tests: pyarrow tables go in through the Arrow C
Stream / C Data interfaces (qv_import_stream, qv_import_field,
qv_import_array, qv_import_schema) and come back out through
qv_table_export_stream. Also runnable as a child process:

    python qvtable.py LIB RECIPE_FILE OUT_FILE

rebuilds a table from a recipe in a fresh interpreter and writes it to
OUT_FILE as an Arrow IPC stream with pyarrow.
"""
import ctypes
import os
import sys

import pyarrow as pa

QV_ERROR_SIZE = 1024
ARROW_SCHEMA_SIZE = 72   # struct ArrowSchema: 9 pointer-sized fields
ARROW_ARRAY_SIZE = 80    # struct ArrowArray: 10 pointer-sized fields
ARROW_STREAM_SIZE = 40   # struct ArrowArrayStream: 5 pointers

KINDS = {0: "in-memory", 1: "mapped", 2: "concat"}

_vp = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_i64 = ctypes.c_int64
_i32 = ctypes.c_int32


class QvMetadata(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("kv", ctypes.c_void_p)]


class QvField(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("nullable", ctypes.c_bool),
                ("type", ctypes.c_void_p), ("metadata", QvMetadata)]


class QuiverError(Exception):
    def __init__(self, status, message):
        super().__init__(f"status {status}: {message}")
        self.status = status
        self.message = message


_SIGS = {
    "qv_import_stream": ([_vp, _pp, ctypes.POINTER(_vp), ctypes.POINTER(_i64), _vp], ctypes.c_int),
    "qv_import_schema": ([_vp, _pp, _vp], ctypes.c_int),
    "qv_import_field": ([_vp, ctypes.POINTER(QvField), _vp], ctypes.c_int),
    "qv_import_field_reset": ([ctypes.POINTER(QvField)], None),
    "qv_import_array": ([_vp, _vp, _pp, _vp], ctypes.c_int),
    "qv_array_unref": ([_vp], None),
    "qv_schema_unref": ([_vp], None),
    "qv_table_from_batches": ([_vp, _vp, _i64, _pp, _vp], ctypes.c_int),
    "qv_table_open_path": ([ctypes.c_char_p, _vp, _pp, _vp], ctypes.c_int),
    "qv_table_unref": ([_vp], None),
    "qv_table_get_kind": ([_vp], ctypes.c_int),
    "qv_table_num_rows": ([_vp], _i64),
    "qv_table_num_batches": ([_vp], _i64),
    "qv_table_num_replays": ([_vp], _i64),
    "qv_table_slice": ([_vp, _i64, _i64, _pp, _vp], ctypes.c_int),
    "qv_table_take": ([_vp, ctypes.POINTER(_i64), _i64, _pp, _vp], ctypes.c_int),
    "qv_table_filter": ([_vp, _vp, _pp, _vp], ctypes.c_int),
    "qv_table_select": ([_vp, ctypes.POINTER(_i32), _i32, _pp, _vp], ctypes.c_int),
    "qv_table_drop": ([_vp, ctypes.POINTER(_i32), _i32, _pp, _vp], ctypes.c_int),
    "qv_table_rename": ([_vp, ctypes.POINTER(ctypes.c_char_p), _i32, _pp, _vp], ctypes.c_int),
    "qv_table_add_column": ([_vp, _i32, ctypes.POINTER(QvField), _vp, _i64, _pp, _vp], ctypes.c_int),
    "qv_table_append_column": ([_vp, ctypes.POINTER(QvField), _vp, _i64, _pp, _vp], ctypes.c_int),
    "qv_table_set_column": ([_vp, _i32, ctypes.POINTER(QvField), _vp, _i64, _pp, _vp], ctypes.c_int),
    "qv_table_cast": ([_vp, _vp, _pp, _vp], ctypes.c_int),
    "qv_table_combine_batches": ([_vp, _pp, _vp], ctypes.c_int),
    "qv_table_concat": ([_vp, _i64, ctypes.c_int, _pp, _vp], ctypes.c_int),
    "qv_table_export_stream": ([_vp, _vp, _vp], ctypes.c_int),
    "qv_table_recipe": ([_vp, ctypes.POINTER(_vp), ctypes.POINTER(_i64), _vp], ctypes.c_int),
    "qv_table_from_recipe": ([ctypes.c_char_p, _i64, _pp, _vp], ctypes.c_int),
    "qv_table_cache_files": ([_vp, ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
                              ctypes.POINTER(_i64), _vp], ctypes.c_int),
    "qv_table_free_paths": ([ctypes.POINTER(ctypes.c_char_p), _i64], None),
}


class Lib:
    """The loaded libquiver.so with typed entry points."""

    def __init__(self, path):
        self.dll = ctypes.CDLL(path)
        for name, (args, res) in _SIGS.items():
            fn = getattr(self.dll, name)
            fn.argtypes = args
            fn.restype = res
        self.libc = ctypes.CDLL(None)
        self.libc.free.argtypes = [_vp]

    def call(self, name, *args):
        err = ctypes.create_string_buffer(QV_ERROR_SIZE)
        st = getattr(self.dll, name)(*args, err)
        if st != 0:
            raise QuiverError(st, err.value.decode(errors="replace"))

    # --- in ---------------------------------------------------------------

    def table_from_pyarrow(self, table):
        """An in-memory quiver table holding the pyarrow table's batches
        (shared through the C Data Interface, not copied)."""
        reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        stream = ctypes.create_string_buffer(ARROW_STREAM_SIZE)
        reader._export_to_c(ctypes.addressof(stream))
        schema, batches, n = _vp(), _vp(), _i64()
        self.call("qv_import_stream", ctypes.addressof(stream), ctypes.byref(schema),
                  ctypes.byref(batches), ctypes.byref(n))
        out = _vp()
        arr = ctypes.cast(batches, ctypes.POINTER(_vp))
        try:
            self.call("qv_table_from_batches", schema, batches, n.value, ctypes.byref(out))
        finally:
            for i in range(n.value):
                self.dll.qv_array_unref(arr[i])
            self.libc.free(batches)
            self.dll.qv_schema_unref(schema)
        return Table(self, out)

    def open(self, path):
        out = _vp()
        self.call("qv_table_open_path", os.fsencode(path), None, ctypes.byref(out))
        return Table(self, out)

    def from_recipe(self, data):
        out = _vp()
        self.call("qv_table_from_recipe", data, len(data), ctypes.byref(out))
        return Table(self, out)

    def field(self, pa_field):
        """A qv_field (caller resets it with field_reset)."""
        s = ctypes.create_string_buffer(ARROW_SCHEMA_SIZE)
        pa_field._export_to_c(ctypes.addressof(s))
        f = QvField()
        self.call("qv_import_field", ctypes.addressof(s), ctypes.byref(f))
        return f

    def array(self, pa_array, qv_type):
        s = ctypes.create_string_buffer(ARROW_ARRAY_SIZE)
        pa_array._export_to_c(ctypes.addressof(s))
        out = _vp()
        self.call("qv_import_array", ctypes.addressof(s), qv_type, ctypes.byref(out))
        return out

    def schema(self, pa_schema):
        s = ctypes.create_string_buffer(ARROW_SCHEMA_SIZE)
        pa_schema._export_to_c(ctypes.addressof(s))
        out = _vp()
        self.call("qv_import_schema", ctypes.addressof(s), ctypes.byref(out))
        return out


class Table:
    """One qv_table reference."""

    def __init__(self, lib, ptr):
        self.lib = lib
        self.ptr = ptr

    def __del__(self):
        if self.ptr:
            self.lib.dll.qv_table_unref(self.ptr)
            self.ptr = None

    def _new(self, name, *args):
        out = _vp()
        self.lib.call(name, self.ptr, *args, ctypes.byref(out))
        return Table(self.lib, out)

    @property
    def kind(self):
        return KINDS[self.lib.dll.qv_table_get_kind(self.ptr)]

    @property
    def num_rows(self):
        return self.lib.dll.qv_table_num_rows(self.ptr)

    @property
    def num_batches(self):
        return self.lib.dll.qv_table_num_batches(self.ptr)

    @property
    def num_replays(self):
        return self.lib.dll.qv_table_num_replays(self.ptr)

    def to_pyarrow(self):
        stream = ctypes.create_string_buffer(ARROW_STREAM_SIZE)
        self.lib.call("qv_table_export_stream", self.ptr, ctypes.addressof(stream))
        reader = pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))
        return reader.read_all()

    def slice(self, offset, length):
        return self._new("qv_table_slice", offset, length)

    def take(self, indices):
        arr = (_i64 * max(1, len(indices)))(*indices)
        return self._new("qv_table_take", arr, len(indices))

    def filter(self, mask):
        f = self.lib.field(pa.field("mask", pa.bool_()))
        try:
            m = self.lib.array(mask, f.type)
            try:
                return self._new("qv_table_filter", m)
            finally:
                self.lib.dll.qv_array_unref(m)
        finally:
            self.lib.dll.qv_import_field_reset(ctypes.byref(f))

    def select(self, cols):
        arr = (_i32 * max(1, len(cols)))(*cols)
        return self._new("qv_table_select", arr, len(cols))

    def drop(self, cols):
        arr = (_i32 * max(1, len(cols)))(*cols)
        return self._new("qv_table_drop", arr, len(cols))

    def rename(self, names):
        arr = (ctypes.c_char_p * max(1, len(names)))(*[n.encode() for n in names])
        return self._new("qv_table_rename", arr, len(names))

    def _column_op(self, name, pos, pa_field, chunked):
        f = self.lib.field(pa_field)
        chunks = []
        try:
            chunks = [self.lib.array(c, f.type) for c in chunked.chunks]
            arr = (_vp * max(1, len(chunks)))(*chunks)
            if pos is None:
                return self._new(name, ctypes.byref(f), arr, len(chunks))
            return self._new(name, pos, ctypes.byref(f), arr, len(chunks))
        finally:
            for c in chunks:
                self.lib.dll.qv_array_unref(c)
            self.lib.dll.qv_import_field_reset(ctypes.byref(f))

    def add_column(self, pos, pa_field, chunked):
        return self._column_op("qv_table_add_column", pos, pa_field, chunked)

    def append_column(self, pa_field, chunked):
        return self._column_op("qv_table_append_column", None, pa_field, chunked)

    def set_column(self, pos, pa_field, chunked):
        return self._column_op("qv_table_set_column", pos, pa_field, chunked)

    def cast(self, pa_schema):
        s = self.lib.schema(pa_schema)
        try:
            return self._new("qv_table_cast", s)
        finally:
            self.lib.dll.qv_schema_unref(s)

    def combine_batches(self):
        return self._new("qv_table_combine_batches")

    def recipe(self):
        p, n = _vp(), _i64()
        self.lib.call("qv_table_recipe", self.ptr, ctypes.byref(p), ctypes.byref(n))
        try:
            return ctypes.string_at(p, n.value)
        finally:
            self.lib.libc.free(p)

    def cache_files(self):
        p, n = ctypes.POINTER(ctypes.c_char_p)(), _i64()
        self.lib.call("qv_table_cache_files", self.ptr, ctypes.byref(p), ctypes.byref(n))
        try:
            return [p[i].decode() for i in range(n.value)]
        finally:
            self.lib.dll.qv_table_free_paths(p, n.value)


def concat(lib, tables, axis=0):
    arr = (_vp * len(tables))(*[t.ptr for t in tables])
    out = _vp()
    lib.call("qv_table_concat", arr, len(tables), axis, ctypes.byref(out))
    return Table(lib, out)


if __name__ == "__main__":
    # Child process: rebuild a table from a recipe, write it with pyarrow.
    lib_path, recipe_path, out_path = sys.argv[1:4]
    lib = Lib(lib_path)
    with open(recipe_path, "rb") as f:
        table = lib.from_recipe(f.read())
    result = table.to_pyarrow()
    with pa.OSFile(out_path, "wb") as sink, pa.ipc.new_stream(sink, result.schema) as w:
        w.write_table(result)
    print(table.kind, table.num_replays, len(table.cache_files()))
