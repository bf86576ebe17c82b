"""Parquet files of Hugging Face `datasets` opened by quiver as
`datasets.Dataset.from_parquet` opens them: the features kept in the
file's `huggingface` metadata (ClassLabel, nested sequences, ...) come
back in `quiver info --json`, and the rows `quiver head` prints equal the
rows of `Dataset.from_parquet` (the oracle). Also `quiver info` on Parquet:
row groups, codecs, encodings, sizes and statistics as pyarrow's
ParquetFile.metadata reports them.

Environment: QV_BUILD (default <repo>/build), QV_SHARED.
"""
import json

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets as D  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from qvpaths import quiver, quiver_rows  # noqa: E402


def _dataset():
    feats = D.Features({
        "text": D.Value("string"),
        "label": D.ClassLabel(names=["neg", "pos"]),
        "tokens": D.Sequence(D.Value("int32")),
        "score": D.Value("float64"),
        "meta": {"a": D.Value("int64"), "b": D.Value("string")},
    })
    rows = {
        "text": [f"row {i}" for i in range(50)],
        "label": [i % 2 for i in range(50)],
        "tokens": [list(range(i % 4)) for i in range(50)],
        "score": [i / 3 for i in range(50)],
        "meta": [{"a": i, "b": str(i) if i % 3 else None} for i in range(50)],
    }
    return D.Dataset.from_dict(rows, features=feats)


def test_features_and_rows_as_from_parquet(tmp_path):
    p = str(tmp_path / "d.parquet")
    _dataset().to_parquet(p)
    oracle = D.Dataset.from_parquet(p, cache_dir=str(tmp_path / "cache"))
    info = json.loads(quiver("info", "--json", p).stdout)
    assert info["format"] == "parquet"
    assert info["rows"] == len(oracle)
    assert D.Features.from_dict(info["features"]) == oracle.features
    assert json.dumps(info["features"]) == json.dumps(oracle.features.to_dict())
    assert quiver_rows("head", p, "-n", 50) == [oracle[i] for i in range(50)]
    assert quiver_rows("get", p, 7, 41) == [oracle[7], oracle[41]]


def test_info_matches_footer(tmp_path):
    p = str(tmp_path / "t.parquet")
    t = pa.table({"i": list(range(1000)), "s": [f"v{i % 7}" for i in range(1000)],
                  "l": [[i] * (i % 3) for i in range(1000)]})
    pq.write_table(t, p, row_group_size=300, compression="zstd")
    md = pq.ParquetFile(p).metadata
    info = json.loads(quiver("info", "--json", p).stdout)
    assert info["rows"] == md.num_rows == 1000
    assert info["row_group_count"] == md.num_row_groups == 4
    assert info["created_by"] == md.created_by
    assert [f["name"] for f in info["schema"]] == ["i", "s", "l"]
    for g, rg in enumerate(info["row_groups"]):
        prg = md.row_group(g)
        assert rg["rows"] == prg.num_rows
        for c, col in enumerate(rg["columns"]):
            pc = prg.column(c)
            assert col["path"] == pc.path_in_schema
            assert col["physical_type"] == pc.physical_type
            assert col["codec"] == pc.compression
            assert sorted(col["encodings"]) == sorted(pc.encodings)
            assert col["num_values"] == pc.num_values
            assert col["compressed_size"] == pc.total_compressed_size
            assert col["uncompressed_size"] == pc.total_uncompressed_size
            st = pc.statistics
            assert col["statistics"]["null_count"] == st.null_count
            if c == 0:
                assert int(col["statistics"]["min"]) == st.min
                assert int(col["statistics"]["max"]) == st.max
            if c == 1:
                assert col["statistics"]["min"] == st.min
                assert col["statistics"]["max"] == st.max
    text = quiver("info", p).stdout.decode()
    assert "row groups:         4" in text
    assert "i: INT64 ZSTD" in text and "min=0 max=299" in text
