"""CSV reader and writer against pyarrow.csv (the oracle): `quiver convert
x.csv x.arrow` must give the table pyarrow.csv.read_csv gives (types and
values), on tricky inputs and generated files of every inferred type; the
writer must produce the bytes pyarrow.csv.write_csv produces."""
import io
import os
import random

import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

from qvpaths import quiver


def read_quiver(tmp_path, data, name="t.csv", *extra):
    src = tmp_path / name
    src.write_bytes(data)
    out = tmp_path / "out.arrow"
    quiver("convert", src, out, *extra)
    return pa.ipc.open_file(str(out)).read_all()


def check_same(tmp_path, data, name="t.csv", parse_options=None, read_options=None):
    expected = pcsv.read_csv(io.BytesIO(data), parse_options=parse_options,
                             read_options=read_options)
    got = read_quiver(tmp_path, data, name)
    assert got.schema == expected.schema, (got.schema, expected.schema)
    assert got.to_pylist() == expected.to_pylist()


TRICKY = [
    b"a,b\n1,2\n3,4\n",
    b"a,b\r\n1,2\r\n3,4\r\n",
    b"a,b\r1,2\r3,4",
    b"\xef\xbb\xbfa,b\n1,x\n",
    b'a,b\n"x,y","he said ""hi"""\n"multi\nline",z\n',
    b'a,b\n"x\r\ny",1\n',
    b"a,b,c\n,,\n,,\n",
    b"a,b\n1,\n,2\n",
    b"a\n\n\n1\n\n2\n",
    b"a,b\n1,2",
    b"a,b\n1,2,\n" if False else b"a,b,c\n1,2,\n",
    b'a\n""\n"x"\n',
    b"i,f,b,d,t,s\n1,1.5,true,2020-01-01,10:00:00,hello\n-2,1e5,False,1999-12-31,23:59,w\xc3\xa9\n",
    b"x\n1\n0\n1\n",
    b"x\n1\n0\ntrue\n",
    b"x\n 1\n2 \n\t3\n",
    b"x\n0x1F\n10\n",
    b"x\n9223372036854775807\n-9223372036854775808\n",
    b"x\n9223372036854775808\n1\n",
    b"x\n+1\n2\n",
    b"x\n.5\n5.\n-1.5e-3\nINF\n-inf\n",
    b"x\nNA\nnull\nNaN\n#N/A\n",
    b"x\nNA\nabc\n",
    b"x\n2020-02-29\n2021-02-29\n",
    b"x\n2020-01-01T10\n2020-01-01 10:30\n2020-01-01T10:30:59\n",
    b"x\n2020-01-01T10:00:00Z\n2020-01-01T10:00:00+01:30\n2020-01-01 10:00:00-0800\n",
    b"x\n2020-01-01T10:00:00Z\n2020-01-01T10:00:00\n",
    b"x\n2020-01-01T10:00:00.5\n2020-01-01T10:00:00.123456789\n",
    b"x\n2020-01-01T10:00:00.5Z\n2020-01-01\n",
    b"x\n2020-01-01\n2020-01-01 00:00:00\n",
    b"x\n10:00\n10:00:00\n",
    b"x\n24:00\n",
    b"x\n\xff\xfe\nabc\n",
    b'x,y\n"1",2\n',
    b'x\n"NA"\n1\n',
    b"a,a\n1,2\n",
    b"a,b\n",
    b'"a,1","b""2"\n1,2\n',
    b"x\nTrue\nFALSE\n\n",
]


@pytest.mark.parametrize("data", TRICKY, ids=range(len(TRICKY)))
def test_tricky_inputs(tmp_path, data):
    check_same(tmp_path, data)


def test_tsv_by_extension(tmp_path):
    data = b"a\tb\n1\tx,y\n2\tz\n"
    expected = pcsv.read_csv(io.BytesIO(data), parse_options=pcsv.ParseOptions(delimiter="\t"))
    got = read_quiver(tmp_path, data, "t.tsv")
    assert got.equals(expected)


def random_value(rng, kind):
    if rng.random() < 0.1:
        return rng.choice(["", "NA", "null"])
    if kind == "int":
        return str(rng.randint(-10**12, 10**12))
    if kind == "real":
        return repr(rng.uniform(-1e6, 1e6))
    if kind == "bool":
        return rng.choice(["true", "false", "True", "FALSE"])
    if kind == "date":
        return f"{rng.randint(1900, 2100):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == "ts":
        return (f"{rng.randint(1970, 2030):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                f" {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}")
    if kind == "tsns":
        return (f"2020-01-{rng.randint(1, 28):02d}T01:02:03.{rng.randint(0, 999999):06d}")
    if kind == "time":
        return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    s = "".join(rng.choice('abc ,"\n\xe9xyz') for _ in range(rng.randint(0, 12)))
    return '"' + s.replace('"', '""') + '"'


KINDS = ["int", "real", "bool", "date", "ts", "tsns", "time", "str"]


def test_generated_every_type_multi_block(tmp_path):
    rng = random.Random(7)
    lines = [",".join(KINDS)]
    for _ in range(60000):  # ~3 MB: several 1 MiB blocks
        lines.append(",".join(random_value(rng, k) for k in KINDS))
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 2 << 20
    # values with newlines across pyarrow's blocks need newlines_in_values
    # there; quiver finds row boundaries itself
    check_same(tmp_path, data, parse_options=pcsv.ParseOptions(newlines_in_values=True))


def test_type_changes_late_in_the_file(tmp_path):
    # int in the first blocks, then a double, then a string: pyarrow loosens
    # the column across blocks
    rows = ["a,b,c"] + [f"{i},{i},{i % 2}" for i in range(400000)]
    rows += ["x,2.5,2"]
    data = ("\n".join(rows) + "\n").encode()
    check_same(tmp_path, data)
    got = read_quiver(tmp_path, data)
    assert str(got.schema.field("a").type) == "string"
    assert str(got.schema.field("b").type) == "double"
    assert str(got.schema.field("c").type) == "int64"


def test_huge_field(tmp_path):
    big = "y" * (3 << 20)
    data = f'a,b\n1,"{big}"\n2,"q\n{big}"\n'.encode()
    check_same(tmp_path, data, parse_options=pcsv.ParseOptions(newlines_in_values=True),
               read_options=pcsv.ReadOptions(block_size=64 << 20))


def test_quoted_newlines_across_blocks(tmp_path):
    rows = ["a,b"] + [f'{i},"line\nbreak {i}"' for i in range(150000)]
    data = ("\n".join(rows) + "\n").encode()
    check_same(tmp_path, data, parse_options=pcsv.ParseOptions(newlines_in_values=True))


@pytest.mark.parametrize("data,line,col", [
    (b"a,b\n1,2\n3\n", 3, 1),
    (b"a,b\n1,2\n3,4,5\n", 3, 1),
    (b'a,b\n1,2\n3,"open\n', 3, 3),
])
def test_malformed_names_line_and_column(tmp_path, data, line, col):
    src = tmp_path / "bad.csv"
    src.write_bytes(data)
    r = quiver("convert", src, tmp_path / "o.arrow", check=False)
    assert r.returncode == 1
    msg = r.stderr.decode()
    assert f"bad.csv: line {line}, column {col}" in msg, msg
    if b'"open' not in data:  # pyarrow takes an unclosed quote to the end
        with pytest.raises(pa.ArrowInvalid):
            pcsv.read_csv(io.BytesIO(data))
    assert not (tmp_path / "o.arrow").exists()


def test_writer_matches_pyarrow(tmp_path):
    t = pa.table({
        "i": [1, None, -3],
        "u": pa.array([1, 2, 255], pa.uint8()),
        "f": [1.5, None, float("nan")],
        "g": [1e20, 1e-7, 0.1],
        "h": [123456789012.0, -0.0, 1e9],
        "f32": pa.array([1.1, None, 3.0], pa.float32()),
        "b": [True, False, None],
        "s": ['a"b', "x,y", None],
        "e": ["", " ", "\n"],
        "d": pa.array([0, None, 19000], pa.date32()),
        "ts": pa.array([0, 1, None], pa.timestamp("s")),
        "tsn": pa.array([1, None, -1500000000], pa.timestamp("ns")),
        "tz": pa.array([0, 1, 2], pa.timestamp("ms", tz="UTC")),
        "us": pa.array([0, 1, 2], pa.timestamp("us")),
        "t": pa.array([3600, None, 5], pa.time32("s")),
        "t64": pa.array([1, None, 5], pa.time64("us")),
        "bin": pa.array([b"\x00a", None, b"z"]),
        "n": pa.array([None, None, None], pa.null()),
        "dict": pa.array(["p", "q", "p"]).dictionary_encode(),
        "ls": pa.array(["x", None, "y"], pa.large_string()),
    })
    src = tmp_path / "t.arrow"
    with pa.ipc.new_file(str(src), t.schema) as w:
        w.write_table(t)
    out = tmp_path / "t.csv"
    quiver("convert", src, out)
    b = io.BytesIO()
    pcsv.write_csv(t, b)
    assert out.read_bytes() == b.getvalue()


def test_writer_roundtrip_generated(tmp_path):
    rng = random.Random(3)
    lines = [",".join(KINDS)]
    for _ in range(3000):
        lines.append(",".join(random_value(rng, k) for k in KINDS))
    src = tmp_path / "in.csv"
    src.write_bytes(("\n".join(lines) + "\n").encode())
    expected = pcsv.read_csv(str(src))
    quiver("convert", src, tmp_path / "out.csv")
    b = io.BytesIO()
    pcsv.write_csv(expected, b)
    assert (tmp_path / "out.csv").read_bytes() == b.getvalue()


def test_writer_refuses_nested(tmp_path):
    t = pa.table({"l": [[1, 2], None]})
    src = tmp_path / "t.arrow"
    with pa.ipc.new_file(str(src), t.schema) as w:
        w.write_table(t)
    r = quiver("convert", src, tmp_path / "t.csv", check=False)
    assert r.returncode == 1
    assert "cannot be written as CSV" in r.stderr.decode()
    assert not os.path.exists(tmp_path / "t.csv")
