"""quiver.Features and the feature classes (python/quiver/features.py)
against datasets 5.2.0 on the same data: Dataset.features of every feature
type hfdata builds gives datasets' to_dict() exactly, from_dict/to_dict
round trips, reprs, equality both ways, Features.type against datasets'
pyarrow type, ClassLabel's methods and their errors against datasets'."""
import json
import os
import subprocess
import sys

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets as D  # noqa: E402
import pytest  # noqa: E402

import hfdata  # noqa: E402
from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()

MAKERS = ["main_dataset", "media_dataset", "translation_dataset", "dtypes_dataset"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("features")
    out = {}
    for make in MAKERS:
        path = str(root / make)
        getattr(hfdata, make)().save_to_disk(path)
        out[make] = path
    return out


@pytest.mark.parametrize("make", MAKERS)
def test_dataset_features_equal_datasets(saved, make):
    hf = D.load_from_disk(saved[make]).features
    q = quiver.open(saved[make]).features
    assert isinstance(q, quiver.Features) and isinstance(q, dict)
    assert q.to_dict() == hf.to_dict()
    assert json.dumps(q.to_dict()) == json.dumps(hf.to_dict())  # same key order too
    assert list(q) == list(hf)
    assert repr(q) == repr(hf)
    for k in hf:
        assert repr(q[k]) == repr(hf[k]), k
        assert q[k] == hf[k] and hf[k] == q[k], k  # equality both ways
    assert q == hf and hf == q
    # round trips through each other's from_dict
    assert quiver.Features.from_dict(hf.to_dict()).to_dict() == hf.to_dict()
    assert D.Features.from_dict(q.to_dict()) == hf
    assert quiver.Features.from_dict(q.to_dict()) == q
    assert q.copy() == q and q.copy() is not q


@pytest.mark.parametrize("make", ["main_dataset", "media_dataset", "dtypes_dataset",
                                  "translation_dataset"])
def test_features_type_is_datasets_type(saved, make):
    hf = D.load_from_disk(saved[make]).features
    q = quiver.open(saved[make]).features
    assert q.type == hf.type
    assert q.arrow_schema == hf.arrow_schema


def test_constructors_match_datasets():
    pairs = [
        (quiver.Value("float"), D.Value("float")),
        (quiver.Value("double"), D.Value("double")),
        (quiver.Value("int32", id="x"), D.Value("int32", id="x")),
        (quiver.ClassLabel(num_classes=3), D.ClassLabel(num_classes=3)),
        (quiver.ClassLabel(names=["a", "b"]), D.ClassLabel(names=["a", "b"])),
        (quiver.List(quiver.Value("int8"), length=4), D.List(D.Value("int8"), length=4)),
        (quiver.Sequence(quiver.Value("int8")), D.Sequence(D.Value("int8"))),
        (quiver.Sequence({"a": quiver.Value("string")}), D.Sequence({"a": D.Value("string")})),
        (quiver.LargeList(quiver.Value("string")), D.LargeList(D.Value("string"))),
        (quiver.Array4D(shape=(None, 2, 3, 4), dtype="uint8"),
         D.Array4D(shape=(None, 2, 3, 4), dtype="uint8")),
        (quiver.Array5D(shape=(1, 2, 3, 4, 5), dtype="float16"),
         D.Array5D(shape=(1, 2, 3, 4, 5), dtype="float16")),
        (quiver.Image(mode="RGB", decode=False), D.Image(mode="RGB", decode=False)),
        (quiver.Audio(sampling_rate=8000, num_channels=2), D.Audio(sampling_rate=8000,
                                                                   num_channels=2)),
        (quiver.Translation(languages=["en", "de"]), D.Translation(languages=["en", "de"])),
        (quiver.TranslationVariableLanguages(languages=["fr", "en", "fr"]),
         D.TranslationVariableLanguages(languages=["fr", "en", "fr"])),
        (quiver.Json(), D.Json()),
        (quiver.Video(decode=False, stream_index=1), D.Video(decode=False, stream_index=1)),
        (quiver.Pdf(decode=False), D.Pdf(decode=False)),
        (quiver.Nifti(), D.Nifti()),
        (quiver.Mesh(decode=False), D.Mesh(decode=False)),
        (quiver.BioSequence(format="fastq"), D.BioSequence(format="fastq")),
        (quiver.BioStructure(), D.BioStructure()),
    ]
    for q, h in pairs:
        qf, hf_ = quiver.Features({"c": q}), D.Features({"c": h})
        assert qf.to_dict() == hf_.to_dict(), h
        assert repr(qf) == repr(hf_)
        assert qf == hf_
        assert quiver.Features.from_dict(hf_.to_dict()) == qf
        if not isinstance(h, D.Json):
            assert qf.type == hf_.type, h
    assert isinstance(quiver.Sequence(quiver.Value("int8")), quiver.Sequence)
    assert isinstance(quiver.Sequence(quiver.Value("int8")), quiver.List)
    assert quiver.Value("int8") != quiver.Value("int16")
    assert quiver.Value("int8") != D.Value("int16")
    # datasets < 4 list syntax and Sequence dicts
    old = {"a": {"feature": {"dtype": "int32", "_type": "Value"}, "_type": "Sequence"},
           "b": [{"dtype": "string", "_type": "Value"}]}
    assert quiver.Features.from_dict(old).to_dict() == D.Features.from_dict(old).to_dict()
    assert quiver.Features({"x": [quiver.Value("int8")]}).to_dict() == \
        D.Features({"x": [D.Value("int8")]}).to_dict()


def _same_error(q, h, prefix=None):
    with pytest.raises(Exception) as he:
        h()
    with pytest.raises(type(he.value)) as qe:
        q()
    if prefix is None:
        assert str(qe.value) == str(he.value)
    else:  # the lists of known types differ (quiver has fewer classes)
        assert str(qe.value).startswith(prefix) and str(he.value).startswith(prefix)


def test_classlabel_methods_and_errors():
    names = ["neg", "pos", "neutral"]
    q, h = quiver.ClassLabel(names=names), D.ClassLabel(names=names)
    assert q.names == h.names and q.num_classes == h.num_classes == 3
    for v in ["neg", "neutral", " pos ", "1", "-1", ["pos", "neg"], ("2",)]:
        assert q.str2int(v) == h.str2int(v), v
    for v in [0, 2, [2, 0, 1], range(3)]:
        assert q.int2str(v) == h.int2str(v), v
    import numpy as np
    assert q.int2str(np.array([1, 2])) == h.int2str(np.array([1, 2]))
    for bad in ["nope", "3", "-2", ["pos", "x"]]:
        _same_error(lambda: q.str2int(bad), lambda: h.str2int(bad))
    for bad in [3, -1, [0, 5], 1.5]:
        _same_error(lambda: q.int2str(bad), lambda: h.int2str(bad))
    _same_error(lambda: quiver.ClassLabel(), lambda: D.ClassLabel())
    _same_error(lambda: quiver.ClassLabel(num_classes=2, names=["a"]),
                lambda: D.ClassLabel(num_classes=2, names=["a"]))
    _same_error(lambda: quiver.ClassLabel(names=["a", "a"]), lambda: D.ClassLabel(names=["a", "a"]))
    _same_error(lambda: quiver.ClassLabel(names=5), lambda: D.ClassLabel(names=5))
    _same_error(lambda: quiver.Features.from_dict({"x": {"_type": "Nope"}}) and None,
                lambda: D.Features.from_dict({"x": {"_type": "Nope"}}) and None)


def test_classlabel_names_file(tmp_path):
    p = tmp_path / "names.txt"
    p.write_text("cat\n dog \n\nbird\n", encoding="utf-8")
    q, h = quiver.ClassLabel(names_file=str(p)), D.ClassLabel(names_file=str(p))
    assert q.names == h.names == ["cat", "dog", "bird"] and q.to_dict() == {
        "names": h.names, "_type": "ClassLabel"}
    _same_error(lambda: quiver.ClassLabel(names=["a"], names_file=str(p)),
                lambda: D.ClassLabel(names=["a"], names_file=str(p)))


def test_dataset_features_classlabel(saved):
    ds = quiver.open(saved["main_dataset"])
    hf = D.load_from_disk(saved["main_dataset"])
    assert ds.features["label"].names == hf.features["label"].names
    assert ds.features["ner"].feature.int2str([0, 2]) == ["O", "I-PER"]
    labels = ds["label"]
    known = [x for x in labels if x >= 0]
    assert ds.features["label"].int2str(known) == hf.features["label"].int2str(known)


def test_import_without_pyarrow(saved):
    # quiver (features included) imports and reads features with pyarrow and
    # datasets blocked; only Features.type needs pyarrow.
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pyarrow', 'datasets'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import quiver\n"
        f"f = quiver.open({saved['main_dataset']!r}).features\n"
        "print(f['label'].int2str(1), f['m2'].shape)\n"
        "try:\n"
        "    f.type\n"
        "except ImportError:\n"
        "    print('no-type')\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(quiver.__file__)))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split()
    assert out == ["pos", "(2,", "3)", "no-type"]


def test_pickle(saved):
    import pickle
    q = quiver.open(saved["main_dataset"]).features
    back = pickle.loads(pickle.dumps(q))
    assert isinstance(back, quiver.Features) and back == q and back.to_dict() == q.to_dict()
    assert back["label"].int2str(2) == "neutral"
