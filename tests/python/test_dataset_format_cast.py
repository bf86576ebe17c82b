"""qv_dataset_with_format, qv_dataset_get_format and qv_dataset_cast_column
(quiver/dataset.h, through ctypes on libquiver.so) against Hugging Face
`datasets`: the same with_format and cast_column in datasets, saved and
loaded back with datasets.load_from_disk, give the same format, features
and rows.

Environment: QV_BUILD (libquiver.so).
"""
import ctypes
import json

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402
import pytest  # noqa: E402

from qvpaths import LIB, require  # noqa: E402

P, E = ctypes.c_void_p, ctypes.c_char_p


class Format(ctypes.Structure):
    _fields_ = [("type", ctypes.c_char_p), ("kwargs_json", ctypes.c_char_p),
                ("has_columns", ctypes.c_bool), ("n_columns", ctypes.c_int32),
                ("columns", ctypes.POINTER(ctypes.c_char_p)),
                ("output_all_columns", ctypes.c_bool)]


class Feature(ctypes.Structure):
    pass


Feature._fields_ = [("kind", ctypes.c_int), ("type_name", ctypes.c_char_p),
                    ("dtype", ctypes.c_char_p), ("length", ctypes.c_int64),
                    ("ndims", ctypes.c_int32), ("shape", ctypes.c_int64 * 5),
                    ("n_names", ctypes.c_int64), ("names", ctypes.POINTER(ctypes.c_char_p)),
                    ("n_children", ctypes.c_int32), ("keys", ctypes.POINTER(ctypes.c_char_p)),
                    ("children", ctypes.POINTER(ctypes.POINTER(Feature))),
                    ("params_", ctypes.c_void_p)]


@pytest.fixture(scope="module")
def q():
    lib = ctypes.CDLL(require(LIB))
    for name, args in {
        "qv_dataset_open": [E, E, ctypes.POINTER(P), P],
        "qv_dataset_with_format": [P, E, E, ctypes.POINTER(E), ctypes.c_int32, ctypes.c_bool,
                                   ctypes.POINTER(P), P],
        "qv_dataset_cast_column": [P, E, ctypes.POINTER(Feature), ctypes.POINTER(P), P],
        "qv_dataset_save_to_disk": [P, E, P, ctypes.POINTER(ctypes.c_int64), P],
        "qv_hf_features_parse": [E, ctypes.c_int64, ctypes.POINTER(ctypes.POINTER(Feature)), P],
    }.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = ctypes.c_int
    lib.qv_dataset_get_format.argtypes = [P]
    lib.qv_dataset_get_format.restype = Format
    lib.qv_dataset_fingerprint.argtypes = [P]
    lib.qv_dataset_fingerprint.restype = ctypes.c_char_p
    lib.qv_dataset_unref.argtypes = [P]
    lib.qv_hf_feature_free.argtypes = [ctypes.POINTER(Feature)]
    return lib


def ok(st, err):
    assert st == 0, err.value.decode()


def source(tmp_path):
    ref = datasets.Dataset.from_dict(
        {"a": [1, 2, None, 4], "s": ["x", "é", None, "z"], "b": [True, False, True, None]},
        features=datasets.Features({"a": datasets.Value("int32"), "s": datasets.Value("string"),
                                    "b": datasets.Value("bool")}))
    ref.save_to_disk(str(tmp_path / "src"))
    return ref


def test_with_format_get_format_and_save_as_datasets(q, tmp_path):
    ref = source(tmp_path)
    err = ctypes.create_string_buffer(1024)
    ds, fmt = P(), P()
    ok(q.qv_dataset_open(str(tmp_path / "src").encode(), None, ctypes.byref(ds), err), err)
    plain = q.qv_dataset_get_format(ds)
    assert plain.type is None and not plain.has_columns and not plain.output_all_columns
    assert json.loads(plain.kwargs_json) == {}

    cols = (E * 2)(b"b", b"a")
    ok(q.qv_dataset_with_format(ds, b"numpy", b'{"dtype": "float32"}', cols, 2, True,
                                ctypes.byref(fmt), err), err)
    f = q.qv_dataset_get_format(fmt)
    assert f.type == b"numpy" and f.has_columns and f.output_all_columns
    assert [f.columns[i] for i in range(f.n_columns)] == [b"b", b"a"]
    assert json.loads(f.kwargs_json) == {"dtype": "float32"}
    assert q.qv_dataset_fingerprint(fmt) != q.qv_dataset_fingerprint(ds)

    n = ctypes.c_int64()
    ok(q.qv_dataset_save_to_disk(fmt, str(tmp_path / "out").encode(), None, ctypes.byref(n),
                                 err), err)
    got = datasets.load_from_disk(str(tmp_path / "out"))
    want = ref.with_format("numpy", columns=["b", "a"], output_all_columns=True, dtype="float32")
    assert got.format == want.format
    assert got.with_format(None).to_dict() == ref.to_dict()

    # No format again; an unknown column and kwargs that are not an object fail.
    bad = P()
    assert q.qv_dataset_with_format(ds, b"numpy", None, (E * 1)(b"nope"), 1, False,
                                    ctypes.byref(bad), err) != 0
    assert "nope" in err.value.decode()
    assert q.qv_dataset_with_format(ds, b"numpy", b"[1]", None, 0, False,
                                    ctypes.byref(bad), err) != 0
    back = P()
    ok(q.qv_dataset_with_format(fmt, None, None, None, 0, False, ctypes.byref(back), err), err)
    assert q.qv_dataset_get_format(back).type is None
    for d in (back, fmt, ds):
        q.qv_dataset_unref(d)


@pytest.mark.parametrize("column,feature", [
    ("a", {"dtype": "int64", "_type": "Value"}),
    ("a", {"dtype": "float64", "_type": "Value"}),
    ("b", {"dtype": "int8", "_type": "Value"}),
    ("s", {"dtype": "large_string", "_type": "Value"}),
])
def test_cast_column_as_datasets(q, tmp_path, column, feature):
    ref = source(tmp_path)
    err = ctypes.create_string_buffer(1024)
    text = json.dumps({column: feature}).encode()
    feats = ctypes.POINTER(Feature)()
    ok(q.qv_hf_features_parse(text, len(text), ctypes.byref(feats), err), err)
    ds, cast = P(), P()
    ok(q.qv_dataset_open(str(tmp_path / "src").encode(), None, ctypes.byref(ds), err), err)
    ok(q.qv_dataset_cast_column(ds, column.encode(), feats.contents.children[0],
                                ctypes.byref(cast), err), err)
    assert q.qv_dataset_fingerprint(cast) != q.qv_dataset_fingerprint(ds)
    n = ctypes.c_int64()
    ok(q.qv_dataset_save_to_disk(cast, str(tmp_path / "out").encode(), None, ctypes.byref(n),
                                 err), err)
    got = datasets.load_from_disk(str(tmp_path / "out"))
    want = ref.cast_column(column, datasets.Features.from_dict({column: feature})[column])
    assert got.features == want.features
    assert got.data.table.equals(want.data.table)
    bad = P()
    assert q.qv_dataset_cast_column(ds, b"missing", feats.contents.children[0],
                                    ctypes.byref(bad), err) != 0
    assert "missing" in err.value.decode()
    q.qv_hf_feature_free(feats)
    q.qv_dataset_unref(cast)
    q.qv_dataset_unref(ds)
