"""Errors of the extension against what `datasets` 5.2.0 raises for the
same misuse, on the same data: every error quiver raises is a
quiver.QuiverError and an instance of the exact class datasets raised
(ValueError, IndexError, KeyError, TypeError, FileNotFoundError), and
keeps quiver's own message. Cases: rows out of range (ds[i], select),
unknown columns (ds["x"], remove_columns, select_columns, rename_column,
sort), missing paths (a directory, an .arrow file), wrong argument types
(key, seed, indices), bad split names (a DatasetDict directory against
DatasetDict[split], a load_dataset cache against load_dataset(split=)),
bad sizes (train_test_split, shard). Also the class tree itself.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import json

import pytest

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

N = 5


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("errs")
    d = datasets.Dataset.from_dict({"a": list(range(N)), "t": [f"x{i}" for i in range(N)]})
    d.save_to_disk(str(tmp / "ds"))
    datasets.DatasetDict({"train": d, "test": d}).save_to_disk(str(tmp / "dd"))
    src = tmp / "train.jsonl"
    src.write_text("".join(json.dumps({"id": i}) + "\n" for i in range(N)))
    files = {"train": str(src)}
    built = datasets.load_dataset("json", data_files=files, cache_dir=str(tmp / "cache"))
    cache_dir = built["train"].cache_files[0]["filename"].rsplit("/", 1)[0]
    return {"tmp": tmp, "q": quiver.open(str(tmp / "ds")),
            "h": datasets.load_from_disk(str(tmp / "ds")), "files": files,
            "cache": str(tmp / "cache"), "cache_dir": cache_dir}


def raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class is what is tested
        return e
    raise AssertionError(f"{fn} raised nothing")


def same_class(q_fn, h_fn, match):
    """quiver's error is a QuiverError and an instance of datasets' class."""
    h = raised(h_fn)
    q = raised(q_fn)
    assert isinstance(q, quiver.QuiverError), repr(q)
    assert isinstance(q, type(h)), f"quiver raised {type(q).__mro__}, datasets {type(h)}"
    assert match in str(q), str(q)
    return q, h


CASES = {
    "row out of range": (lambda q: q[N], lambda h: h[N], IndexError,
                         f"index {N} is out of range for a dataset of {N} rows"),
    "negative row": (lambda q: q[-N - 1], lambda h: h[-N - 1], IndexError, "out of range"),
    "select out of range": (lambda q: q.select([0, N]), lambda h: h.select([0, N]), IndexError,
                            f"index {N} (position 1) is out of range"),
    "unknown column": (lambda q: q["nope"], lambda h: h["nope"], ValueError, "'nope'"),
    "remove_columns": (lambda q: q.remove_columns("nope"), lambda h: h.remove_columns("nope"),
                       ValueError, "column 'nope' not in the dataset"),
    "select_columns": (lambda q: q.select_columns(["a", "nope"]),
                       lambda h: h.select_columns(["a", "nope"]), ValueError, "'nope'"),
    "rename_column": (lambda q: q.rename_column("nope", "b"),
                      lambda h: h.rename_column("nope", "b"), ValueError, "'nope'"),
    "rename onto a column": (lambda q: q.rename_column("a", "t"),
                             lambda h: h.rename_column("a", "t"), ValueError, "'t'"),
    "sort": (lambda q: q.sort("nope"), lambda h: h.sort("nope"), ValueError,
             "Column 'nope' not found in the dataset"),
    "key type": (lambda q: q[1.5], lambda h: h[1.5], TypeError, "not float"),
    "seed type": (lambda q: q.shuffle(seed="x"), lambda h: h.shuffle(seed="x"), TypeError,
                  "seed must be an int or None"),
    "indices type": (lambda q: q.select(["a"]), lambda h: h.select(["a"]), TypeError,
                     "must be an int, not str"),
    "test_size count": (lambda q: q.train_test_split(test_size=N),
                        lambda h: h.train_test_split(test_size=N), ValueError,
                        f"test_size={N} should be either positive"),
    "test_size fraction": (lambda q: q.train_test_split(test_size=1.5),
                           lambda h: h.train_test_split(test_size=1.5), ValueError,
                           "test_size=1.5"),
    "shard index": (lambda q: q.shard(2, 5), lambda h: h.shard(2, 5), ValueError,
                    "index 5 is out of range for 2 shards"),
    "concatenate rows": (lambda q: quiver.concatenate_datasets([q, q.select([0])], axis=1),
                         lambda h: datasets.concatenate_datasets([h, h.select([0])], axis=1),
                         ValueError, "number of rows must match"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_class_as_datasets(data, case):
    q_fn, h_fn, base, match = CASES[case]
    q, h = same_class(lambda: q_fn(data["q"]), lambda: h_fn(data["h"]), match)
    assert isinstance(h, base) and isinstance(q, base)


def test_missing_paths(data):
    tmp = data["tmp"]
    q, _ = same_class(lambda: quiver.open(str(tmp / "nope")),
                      lambda: datasets.load_from_disk(str(tmp / "nope")),
                      "No such file or directory")
    assert isinstance(q, FileNotFoundError) and q.status == "I/O error" and q.code == 4
    same_class(lambda: quiver.open(str(tmp / "nope.arrow")),
               lambda: datasets.Dataset.from_file(str(tmp / "nope.arrow")), "nope.arrow")
    # an indices mapping over a data directory that is missing
    same_class(lambda: quiver.open(str(tmp / "nope.arrow"), data=str(tmp / "ds")),
               lambda: datasets.Dataset.from_file(str(tmp / "nope.arrow")), "nope.arrow")


def test_bad_split_names(data):
    tmp = data["tmp"]
    q, h = same_class(lambda: quiver.open(str(tmp / "dd"), split="nope"),
                      lambda: datasets.load_from_disk(str(tmp / "dd"))["nope"], "'nope'")
    assert isinstance(h, KeyError)
    # str() is the message, not KeyError's repr of it
    assert str(q).endswith("no split 'nope' (splits: 'train', 'test')"), str(q)
    q, h = same_class(lambda: quiver.open(data["cache_dir"], split="nope"),
                      lambda: datasets.load_dataset("json", data_files=data["files"],
                                                    cache_dir=data["cache"], split="nope"),
                      "nope")
    assert isinstance(h, ValueError) and not isinstance(h, KeyError)


def test_class_tree():
    assert issubclass(quiver.QuiverError, Exception)
    for name, base in [("QuiverValueError", ValueError), ("QuiverIndexError", IndexError),
                       ("QuiverKeyError", KeyError), ("QuiverTypeError", TypeError),
                       ("QuiverFileNotFoundError", FileNotFoundError)]:
        cls = getattr(quiver, name)
        assert cls.__mro__[1:3] == (quiver.QuiverError, base), cls.__mro__
        assert cls.__module__ == "quiver"
    assert issubclass(quiver.QuiverKeyError, ValueError)
    e = raised(lambda: quiver.open("/nonexistent-quiver-path"))
    assert type(e) is quiver.QuiverFileNotFoundError
    # errors found before any C call have no C status
    e = raised(lambda: quiver.open("/").select(None))
    assert isinstance(e, quiver.QuiverError)
