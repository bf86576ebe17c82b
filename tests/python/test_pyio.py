"""quiver.load_dataset("parquet"|"csv"|"json", data_files=..., split=...),
Dataset.from_parquet/from_csv/from_json and Dataset.to_csv/to_json against
datasets 5.2.0 itself on the same files: features, column types and rows
equal; data_files as a str, list, dict and glob; split=None gives every
split; missing files are FileNotFoundError (and QuiverError); malformed
files raise the C reader's message with file, line and column."""
import json
import random

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets as D  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

from qvpaths import import_quiver  # noqa: E402

quiver = import_quiver()


def write_csv(path, rng, n):
    lines = ["id,name,score,flag,day,mixed"]
    for i in range(n):
        name = rng.choice(["foo", "", "x,y", 'say "hi"', "line\nbreak", "NA", "ü"])
        name = f'"{name}"' if any(c in name for c in ',"\n') else name
        if '"' in name[1:-1]:
            name = '"' + name[1:-1].replace('"', '""') + '"'
        score = rng.choice(["1.5", "", "-2", "3e3"])
        flag = rng.choice(["True", "False"])
        day = rng.choice(["2020-01-01", "", "1999-12-31"])
        mixed = rng.choice(["1", "2", ""])  # ints with missing values: float64 in pandas
        lines.append(f"{i},{name},{score},{flag},{day},{mixed}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_jsonl(path, rng, n, start=0):
    with open(path, "w") as f:
        for i in range(start, start + n):
            row = {"id": i, "t": rng.choice(["a", None, "é"]),
                   "l": rng.sample(range(9), rng.randint(0, 3)),
                   "s": {"x": rng.randint(-5, 5), "y": rng.choice(["p", None])},
                   "r": rng.choice([0.5, 2.0, None])}
            f.write(json.dumps(row) + "\n")
    return path


def write_parquet(path, rng, n, start=0):
    t = pa.table({"a": pa.array(range(start, start + n), pa.int64()),
                  "b": [rng.choice(["x", None, "zz"]) for _ in range(n)],
                  "c": [rng.random() for _ in range(n)]})
    pq.write_table(t, str(path))
    return path


@pytest.fixture
def files(tmp_path):
    rng = random.Random(15)
    return {
        "csv": [write_csv(tmp_path / f"c{i}.csv", rng, 20 + i) for i in range(3)],
        "json": [write_jsonl(tmp_path / f"j{i}.jsonl", rng, 15, 100 * i) for i in range(3)],
        "parquet": [write_parquet(tmp_path / f"p{i}.parquet", rng, 12, 100 * i)
                    for i in range(3)],
    }


def ascii_escaped(text):
    out = []
    for c in text:
        if ord(c) < 128:
            out.append(c)
        elif ord(c) < 0x10000:
            out.append("\\u%04x" % ord(c))
        else:
            v = ord(c) - 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)))
    return "".join(out)


def close(a, b):
    """Equal, floats to pandas' to_json default of 10 decimal places
    (quiver writes them at full precision)."""
    if isinstance(a, float) and isinstance(b, (float, int)) and not isinstance(b, bool):
        return abs(a - b) <= 1e-10 * max(1.0, abs(a))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b)


def hf_load(tmp_path, builder, data_files, split=None):
    return D.load_dataset(builder, data_files=data_files, split=split,
                          cache_dir=str(tmp_path / "hfcache"))


def same(got, want):
    assert isinstance(got, quiver.Dataset)
    assert got.features == want.features, (got.features, want.features)
    assert pa.table(got).schema.types == want.data.schema.types
    assert got.num_rows == want.num_rows
    assert got[:] == want[:]


@pytest.mark.parametrize("builder", ["csv", "json", "parquet"])
def test_load_dataset_split_matches_datasets(tmp_path, files, builder):
    for data_files in (str(files[builder][0]), [str(f) for f in files[builder]]):
        got = quiver.load_dataset(builder, data_files=data_files, split="train")
        same(got, hf_load(tmp_path, builder, data_files, split="train"))


@pytest.mark.parametrize("builder", ["csv", "json", "parquet"])
def test_load_dataset_dict_and_glob(tmp_path, files, builder):
    fs = [str(f) for f in files[builder]]
    ext = fs[0].rsplit(".", 1)[1]
    data_files = {"train": fs[:2], "test": fs[2], "every": str(tmp_path / f"*.{ext}")}
    got = quiver.load_dataset(builder, data_files=data_files)
    want = hf_load(tmp_path, builder, data_files)
    assert isinstance(got, quiver.DatasetDict)
    assert list(got) == list(want) == ["train", "test", "every"]
    for name in want:
        same(got[name], want[name])
    assert got["every"].num_rows == sum(got[s].num_rows for s in ("train", "test"))
    same(quiver.load_dataset(builder, data_files=data_files, split="test"), want["test"])


def test_csv_types_are_pandas_types(tmp_path, files):
    got = quiver.load_dataset("csv", data_files=str(files["csv"][0]), split="train")
    want = hf_load(tmp_path, "csv", str(files["csv"][0]), split="train")
    # the dates stay strings and ints with gaps become float64, as pandas reads them
    assert got.features["day"] == want.features["day"] == D.Value("large_string")
    assert got.features["mixed"] == want.features["mixed"] == D.Value("float64")


@pytest.mark.parametrize("builder", ["csv", "json", "parquet"])
def test_from_files_matches_datasets(tmp_path, files, builder):
    fs = [str(f) for f in files[builder]]
    ours = getattr(quiver.Dataset, f"from_{builder}")
    theirs = getattr(D.Dataset, f"from_{builder}")
    for arg in (fs[1], fs):
        same(ours(arg), theirs(arg, cache_dir=str(tmp_path / "hfcache")))


def test_to_json_bytes_equal_datasets(tmp_path, files):
    for builder in ("json", "csv", "parquet"):
        fs = [str(f) for f in files[builder]]
        ours = getattr(quiver.Dataset, f"from_{builder}")(fs)
        theirs = getattr(D.Dataset, f"from_{builder}")(fs, cache_dir=str(tmp_path / "hfcache"))
        a, b = tmp_path / f"q-{builder}.jsonl", tmp_path / f"h-{builder}.jsonl"
        n = ours.to_json(str(a))
        theirs.to_json(str(b))
        assert n == a.stat().st_size
        got = [json.loads(x) for x in a.read_text().splitlines()]
        want = [json.loads(x) for x in b.read_text().splitlines()]
        assert close(got, want), (got[:3], want[:3])
        if builder == "json":
            # the same bytes, but for non-ASCII text: pandas' to_json writes
            # it as \\u escapes (force_ascii), quiver as UTF-8
            assert ascii_escaped(a.read_text(encoding="utf-8")) == b.read_text(encoding="ascii")


def test_to_json_of_a_selection(tmp_path, files):
    ds = quiver.Dataset.from_json([str(f) for f in files["json"]])
    picked = ds.select([5, 0, 33, 7])
    picked.to_json(str(tmp_path / "sel.jsonl"))
    got = [json.loads(x) for x in (tmp_path / "sel.jsonl").read_text().splitlines()]
    assert got == [ds[i] for i in (5, 0, 33, 7)]


def test_to_csv_parses_back_as_datasets_output(tmp_path, files):
    fs = [str(f) for f in files["csv"]]
    ours = quiver.Dataset.from_csv(fs)
    theirs = D.Dataset.from_csv(fs, cache_dir=str(tmp_path / "hfcache"))
    a, b = tmp_path / "q.csv", tmp_path / "h.csv"
    assert ours.to_csv(str(a)) == a.stat().st_size
    theirs.to_csv(str(b))
    # both files read back (by datasets, through pandas) to the same rows and types
    ra = D.Dataset.from_csv(str(a), cache_dir=str(tmp_path / "c2"))
    rb = D.Dataset.from_csv(str(b), cache_dir=str(tmp_path / "c3"))
    assert ra.features == rb.features
    assert ra[:] == rb[:]
    # and by quiver to what it wrote
    same(quiver.Dataset.from_csv(str(a)), rb)


def test_missing_files_are_file_not_found(tmp_path):
    for builder in ("csv", "json", "parquet"):
        for df in (str(tmp_path / "nope.x"), str(tmp_path / "*.nomatch"),
                   {"train": [str(tmp_path / "nope.x")]}):
            with pytest.raises(FileNotFoundError) as e:
                quiver.load_dataset(builder, data_files=df)
            assert isinstance(e.value, quiver.QuiverError)
            if "*" not in str(df):  # datasets' errors for an empty glob vary by builder
                with pytest.raises(FileNotFoundError):
                    hf_load(tmp_path, builder, df)
        with pytest.raises(quiver.QuiverFileNotFoundError):
            getattr(quiver.Dataset, f"from_{builder}")(str(tmp_path / "nope.x"))


def test_unknown_split_is_value_error(tmp_path, files):
    with pytest.raises(ValueError, match="Unknown split"):
        quiver.load_dataset("csv", data_files=str(files["csv"][0]), split="test")
    with pytest.raises(ValueError, match="Unknown split"):
        hf_load(tmp_path, "csv", str(files["csv"][0]), split="test")


def test_bad_files_name_file_line_column(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(quiver.QuiverError, match=r"bad\.csv: line 3, column \d+"):
        quiver.load_dataset("csv", data_files=str(bad))
    badj = tmp_path / "bad.jsonl"
    badj.write_text('{"a": 1}\n{"a": 2}\n{"a":\n')
    with pytest.raises(quiver.QuiverError, match=r"bad\.jsonl: line 3, column \d+"):
        quiver.load_dataset("json", data_files=str(badj), split="train")
    csv = tmp_path / "rows.csv"
    csv.write_text("a,b\n1,2\n")
    for builder in ("parquet", "json"):
        with pytest.raises(quiver.QuiverError, match=r"rows\.csv: not a .* file \(it holds csv\)"):
            quiver.load_dataset(builder, data_files=str(csv))
        with pytest.raises(Exception):  # datasets refuses it too
            hf_load(tmp_path, builder, str(csv))
    badp = tmp_path / "bad.parquet"
    badp.write_bytes(b"PAR1 not really parquet PAR1")
    with pytest.raises(quiver.QuiverError, match="bad.parquet"):
        quiver.Dataset.from_parquet(str(badp))


def test_argument_errors(tmp_path, files):
    with pytest.raises(ValueError):
        quiver.load_dataset("text", data_files=str(files["csv"][0]))
    with pytest.raises(ValueError):
        quiver.load_dataset("csv")
    with pytest.raises(ValueError, match="all"):
        quiver.load_dataset("csv", data_files={"all": str(files["csv"][0])})
    ds = quiver.Dataset.from_csv(str(files["csv"][0]))
    with pytest.raises(ValueError):
        ds.to_json(str(tmp_path / "x.json"), orient="columns")
    with pytest.raises(TypeError):
        ds.to_csv(open(tmp_path / "x.csv", "w"))
    assert not (tmp_path / "x.json").exists()


def test_csv_sep_matches_datasets(tmp_path):
    f = tmp_path / "t.tsv"
    f.write_text("a\tb\n1\tx,y\n2\t\n")
    got = quiver.load_dataset("csv", data_files=str(f), sep="\t", split="train")
    same(got, D.load_dataset("csv", data_files=str(f), sep="\t", split="train",
                             cache_dir=str(tmp_path / "hfcache")))
    assert got["b"] == ["x,y", None]
    # without sep, datasets (and quiver) read a .tsv with ","
    f.write_text("a\tb\n1\tx\n2\t\n")
    same(quiver.Dataset.from_csv(str(f)), D.Dataset.from_csv(str(f), cache_dir=str(tmp_path / "c")))


def test_to_parquet_reads_back_equal(tmp_path, files):
    for builder in ("json", "csv", "parquet"):
        fs = [str(f) for f in files[builder]]
        ours = getattr(quiver.Dataset, f"from_{builder}")(fs).select([3, 1, 4, 1, 5, 9, 2, 6])
        theirs = getattr(D.Dataset, f"from_{builder}")(fs, cache_dir=str(tmp_path / "hfcache"))
        theirs = theirs.select([3, 1, 4, 1, 5, 9, 2, 6])
        a, b = tmp_path / f"q-{builder}.parquet", tmp_path / f"h-{builder}.parquet"
        assert ours.to_parquet(str(a)) == a.stat().st_size
        theirs.to_parquet(str(b))
        assert pq.read_table(str(a)).to_pylist() == pq.read_table(str(b)).to_pylist()
        assert pq.read_table(str(a)).schema.types == pq.read_table(str(b)).schema.types
        back = D.Dataset.from_parquet(str(a), cache_dir=str(tmp_path / "c2"))
        assert back.features == theirs.features
        assert back[:] == theirs[:]


def test_features_cast_matches_datasets(tmp_path, files):
    f = str(files["csv"][0])
    feats = D.Features({"id": D.Value("int32"), "name": D.Value("string"),
                        "score": D.Value("float32"), "flag": D.Value("bool"),
                        "day": D.Value("string"), "mixed": D.Value("float64")})
    same(quiver.Dataset.from_csv(f, features=feats),
         D.Dataset.from_csv(f, features=feats, cache_dir=str(tmp_path / "hfcache")))
