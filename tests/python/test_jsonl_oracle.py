"""JSON Lines reader and writer against pyarrow.json (the oracle) and
`datasets`: `quiver convert x.jsonl x.arrow` must give pyarrow.json.read_json's
table (types, nesting, unification, values); inputs pyarrow refuses (mixed
kinds, duplicate keys) are refused with file, line and column; the writer's
lines read back equal."""
import io
import json
import random

import pyarrow as pa
import pyarrow.json as pjson
import pytest

from qvpaths import quiver


def read_quiver(tmp_path, data, name="t.jsonl"):
    src = tmp_path / name
    src.write_bytes(data)
    out = tmp_path / "out.arrow"
    quiver("convert", src, out)
    return pa.ipc.open_file(str(out)).read_all()


def check_same(tmp_path, data):
    # use_threads=False: with threads, pyarrow orders the fields that first
    # appear in later blocks by block completion; quiver keeps file order,
    # which is pyarrow's single-threaded order
    expected = pjson.read_json(io.BytesIO(data), read_options=pjson.ReadOptions(use_threads=False))
    got = read_quiver(tmp_path, data)
    assert got.schema == expected.schema, (got.schema, expected.schema)
    # repr: NaN compares equal to itself there
    assert repr(got.to_pylist()) == repr(expected.to_pylist())


CASES = [
    '{"a":1}\n{"a":2.5}\n',
    '{"a":"2020-01-01"}\n',
    '{"a":"2020-01-01T10:00:00"}\n{"a":"2020-01-01 10:00"}\n',
    '{"a":"2020-01-01T10:00:00.5"}\n',
    '{"a":"2020-01-01T10:00:00Z"}\n{"a":"2020-01-01T10:00:00+02:00"}\n',
    '{"a":"2020-01-01T10:00:00"}\n{"a":"x"}\n',
    '{"a":null}\n{"b":1}\n',
    '{"a":[1,2]}\n{"a":[]}\n{"a":null}\n{"a":[1.5]}\n',
    '{"a":{"x":1}}\n{"a":{"y":"s"}}\n{"a":null}\n',
    '{"a":[]}\n',
    '{"a":1}\n\n{"a":2}\n',
    '{"a":1e3}\n{"a":-0}\n',
    '{"a":12345678901234567890}\n',
    '{"a":"\\u00e9\\n\\"\\\\\\/\\t\\ud83d\\ude00"}\n',
    '{"a":1}{"a":2}\n',
    '{"a":1} \r\n{"a":3}',
    '{"a":[[1],[2,3],null]}\n',
    '{"a":true,"b":false}\n{"b":null}\n',
    '{"a": NaN, "b": Infinity}\n',
    '{"a":{"x":null}}\n{"a":{"x":[1]}}\n',
    '{"a":[{"k":1},{"k":2,"j":"z"}]}\n',
    '\ufeff{"a":1}\n',
    '{"\u00e9t\u00e9":1,"b c":"d"}\n',
    '{"a":9223372036854775807,"b":-9223372036854775808}\n',
    '{}\n{"a":1}\n',
]


@pytest.mark.parametrize("text", CASES, ids=range(len(CASES)))
def test_cases(tmp_path, text):
    check_same(tmp_path, text.encode())


@pytest.mark.parametrize("text,line", [
    ('{"a":1}\n{"a":"x"}\n', 2),
    ('{"a":1}\n{"a":true}\n', 2),
    ('{"a":[1,"x"]}\n', 1),
    ('{"a":1}\n{"a":[1]}\n', 2),
    ('{"a":1,"a":2}\n', 1),
    ('{"a":1}\n[1,2]\n', 2),
    ('{"a":1}\n{"a":\n', 2),
    ('{"a":1}\n{"a":tru}\n', 2),
    ('{"a":"x\x01"}\n', 1),
])
def test_refused_with_line(tmp_path, text, line):
    with pytest.raises(pa.ArrowInvalid):
        pjson.read_json(io.BytesIO(text.encode()))
    src = tmp_path / "bad.jsonl"
    src.write_bytes(text.encode())
    r = quiver("convert", src, tmp_path / "o.arrow", check=False)
    assert r.returncode == 1, r.stderr
    assert f"bad.jsonl: line {line}, column " in r.stderr.decode(), r.stderr


def random_row(rng, i):
    row = {"id": i}
    if rng.random() < 0.9:
        row["x"] = rng.choice([rng.randint(-10**9, 10**9), None])
    if rng.random() < 0.8:
        row["s"] = rng.choice(["a", "b\n\"", "\u00e9", "", None])
    row["f"] = rng.random() * 100
    if rng.random() < 0.5:
        row["l"] = [rng.randint(0, 9) for _ in range(rng.randint(0, 4))]
    if rng.random() < 0.5:
        row["o"] = {"p": rng.choice([True, False, None]), "q": [{"r": rng.random()}]}
    if rng.random() < 0.3:
        row["t"] = f"2021-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 0{rng.randint(0, 9)}:00:00"
    return row


def test_generated_multi_block(tmp_path):
    rng = random.Random(11)
    rows = [random_row(rng, i) for i in range(40000)]
    # int64 for "late" in the first blocks, a real in the last one: int64 -> double
    for r in rows:
        r["late"] = 1
    rows[-1]["late"] = 0.5
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    assert len(data) > 3 << 20
    check_same(tmp_path, data)


def test_writer_roundtrip(tmp_path):
    rng = random.Random(5)
    rows = [random_row(rng, i) for i in range(2000)]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    quiver("convert", src, tmp_path / "out.jsonl")
    expected = pjson.read_json(str(src))
    again = pjson.read_json(str(tmp_path / "out.jsonl"))
    assert again.schema == expected.schema
    assert again.to_pylist() == expected.to_pylist()
    # one object per line, every column present (nulls written as null)
    first = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    assert list(first) == expected.schema.names


def test_csv_to_jsonl_and_back(tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n1,x\n2,\n")
    quiver("convert", tmp_path / "t.csv", tmp_path / "t.jsonl")
    assert [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()] == \
        [{"a": 1, "b": "x"}, {"a": 2, "b": ""}]
    quiver("convert", tmp_path / "t.jsonl", tmp_path / "u.csv")
    assert (tmp_path / "u.csv").read_text() == '"a","b"\n1,"x"\n2,""\n'
