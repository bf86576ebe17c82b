"""`quiver import SRC... -o DST [--split NAME]` against datasets: the
directory it writes, opened by datasets.load_from_disk, equals
datasets.load_dataset("csv"|"json", data_files=...) of the same files
(features and rows), with the shard layout load_dataset(...).save_to_disk
writes."""
import json
import os
import random

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets as D  # noqa: E402
import pytest  # noqa: E402

from qvpaths import quiver  # noqa: E402


def layout(path):
    return sorted(os.path.relpath(os.path.join(d, f), path)
                  for d, _, files in os.walk(path) for f in files)


def check_import(tmp_path, builder, files, split=None):
    dst = tmp_path / "imported"
    args = ["import", *files, "-o", dst] + (["--split", split] if split else [])
    quiver(*args)
    got = D.load_from_disk(str(dst))
    data_files = {split: [str(f) for f in files]} if split else [str(f) for f in files]
    want = D.load_dataset(builder, data_files=data_files, cache_dir=str(tmp_path / "cache"))
    assert list(got) == list(want)
    for name in want:
        assert got[name].features == want[name].features, (got[name].features,
                                                           want[name].features)
        assert got[name].to_list() == want[name].to_list()
    ref = tmp_path / "reference"
    want.save_to_disk(str(ref))
    assert layout(dst) == layout(ref)
    return got


CSV_CASES = [
    "i,f,b,s,d,n\n1,1.5,True,x,2020-01-01,\n2,,False,NA,2020-01-02,\n3,2,true,None,x,\n",
    "a,b\n+1,inf\n2,-Infinity\n",
    "a,b,c\n1,,x\n,2,\n",
    'q,r\n"x,y","multi\nline"\n"he said ""hi""",z\n',
    "a\n1\n0\n1\n",
    "a,b\ntrue,1\nFALSE,0\n",
]


@pytest.mark.parametrize("text", CSV_CASES, ids=range(len(CSV_CASES)))
def test_csv(tmp_path, text):
    src = tmp_path / "t.csv"
    src.write_text(text)
    check_import(tmp_path, "csv", [src])


def test_csv_several_files_and_split_name(tmp_path):
    rng = random.Random(1)
    files = []
    for k in range(3):
        rows = ["id,x,s"] + [f"{k * 1000 + i},{rng.uniform(-5, 5)},w{rng.randint(0, 99)}"
                             for i in range(500)]
        f = tmp_path / f"part{k}.csv"
        f.write_text("\n".join(rows) + "\n")
        files.append(f)
    got = check_import(tmp_path, "csv", files, split="validation")
    assert got["validation"].num_rows == 1500


def test_jsonl(tmp_path):
    rng = random.Random(2)
    rows = [{"id": i, "text": rng.choice(["a", "b", None]), "score": rng.random(),
             "tags": [rng.randint(0, 5) for _ in range(rng.randint(0, 3))],
             "meta": {"ok": rng.choice([True, False])}} for i in range(3000)]
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    check_import(tmp_path, "json", [src])


def test_import_errors(tmp_path):
    r = quiver("import", "-o", tmp_path / "x", check=False)
    assert r.returncode == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3\n")
    r = quiver("import", bad, "-o", tmp_path / "x", check=False)
    assert r.returncode == 1
    assert "bad.csv: line 3, column 1" in r.stderr.decode()
    assert not (tmp_path / "x").exists()
