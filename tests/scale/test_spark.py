"""quiver.spark against quiver and `datasets` (the oracle) on a local Spark
session (local[2]): spark.read.format("quiver") rows in order for a
multi-shard directory and a DatasetDict split, partitions and the schema
from the features, projection (option and a user schema), quiver.spark.read
of shuffled / filtered / selected / cache-file datasets, empty datasets, a
file changed after planning refused, and write round trips read back by
datasets.load_from_disk."""
import os
import shutil

import datasets
import pytest
from conftest import FEATURES, hf_rows

import quiver
import quiver.spark as qs


def spark_rows(df):
    return [r.asDict(recursive=True) for r in df.collect()]


def test_format_load_in_order(spark, data):
    from pyspark.sql.types import ArrayType, DoubleType, LongType, StringType

    hf = datasets.load_from_disk(data["plain"])
    df = spark.read.format("quiver").option("numPartitions", "4").load(data["plain"])
    assert df.rdd.getNumPartitions() == 4
    assert [(f.name, f.dataType) for f in df.schema.fields] == [
        ("id", LongType()), ("text", StringType()), ("score", DoubleType()),
        ("label", LongType()), ("vec", ArrayType(DoubleType()))]
    assert spark_rows(df) == hf_rows(hf)
    # a DatasetDict split, projected by option and by a user schema
    hfd = datasets.load_from_disk(data["dict"])
    df = (spark.read.format("quiver").option("split", "test").option("columns", "label,text")
          .load(data["dict"]))
    assert df.columns == ["label", "text"]
    assert spark_rows(df) == hf_rows(hfd["test"].select_columns(["label", "text"]))
    df = spark.read.format("quiver").schema("id long").option("split", "train").load(data["dict"])
    assert [r.id for r in df.collect()] == hfd["train"]["id"]


def test_read_transformed(spark, data):
    q = quiver.open(data["plain"])
    hf = datasets.load_from_disk(data["plain"])
    sh = q.shuffle(seed=8)
    df = qs.read(spark, sh, num_partitions=3)
    assert df.rdd.getNumPartitions() == 3
    assert spark_rows(df) == hf_rows(hf.shuffle(seed=8))
    f = q.filter("score < 0.3").select([7, 3, 100, 3])
    hff = hf.filter(lambda r: r["score"] < 0.3).select([7, 3, 100, 3])
    assert spark_rows(qs.read(spark, f, columns=["id", "score"], num_partitions=2)) == hf_rows(
        hff.select_columns(["id", "score"]))
    # a cache file datasets wrote, opened over its data
    hsh = hf.shuffle(seed=13)
    cache = [c["filename"] for c in hsh.cache_files if "cache-" in c["filename"]][0]
    assert spark_rows(qs.read(spark, quiver.open(cache, data=data["plain"]))) == hf_rows(hsh)


def test_empty(spark, data):
    df = spark.read.format("quiver").load(data["empty"])
    assert df.columns == list(FEATURES) and df.count() == 0
    none = qs.read(spark, quiver.open(data["plain"]).filter("id < 0"), num_partitions=2)
    assert none.collect() == []


def test_changed_file_refused(spark, data, tmp_path):
    d = tmp_path / "ds"
    shutil.copytree(data["plain"], d)
    df = qs.read(spark, quiver.open(str(d)).shuffle(seed=1), num_partitions=2)
    other = tmp_path / "other"
    datasets.load_from_disk(data["plain"]).shuffle(seed=9).flatten_indices().save_to_disk(
        str(other), num_shards=3)
    victim = d / "data-00002-of-00003.arrow"
    os.replace(other / "data-00002-of-00003.arrow", victim)
    with pytest.raises(Exception) as e:
        df.collect()
    assert str(victim) in str(e.value) and "changed since" in str(e.value)


def test_write_round_trip(spark, data, tmp_path):
    q = quiver.open(data["plain"]).shuffle(seed=6)
    hf = datasets.load_from_disk(data["plain"]).shuffle(seed=6)
    dst = tmp_path / "out"
    qs.write(qs.read(spark, q, num_partitions=3), str(dst), features=q.features)
    back = datasets.load_from_disk(str(dst))
    assert hf_rows(back) == hf_rows(hf) and back.features == hf.features
    assert sorted(os.listdir(dst)) == [f"data-0000{i}-of-00003.arrow" for i in range(3)] + [
        "dataset_info.json", "state.json"]
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []
    with pytest.raises(ValueError):
        qs.write(qs.read(spark, q), str(dst))
    # a DataFrame Spark made: features from the Arrow types, one shard per
    # non-empty partition, in partition order
    df = spark.range(0, 50, numPartitions=4).selectExpr("id", "cast(id * 2 as string) as s")
    qs.write(df, str(tmp_path / "range"))
    b = datasets.load_from_disk(str(tmp_path / "range"))
    assert b.to_list() == [{"id": i, "s": str(i * 2)} for i in range(50)]
    assert b.features == datasets.Features({"id": datasets.Value("int64"),
                                            "s": datasets.Value("string")})
    assert len([n for n in os.listdir(tmp_path / "range") if n.endswith(".arrow")]) == 4
    qs.write(df.filter("id < 0"), str(tmp_path / "none"))
    e = datasets.load_from_disk(str(tmp_path / "none"))
    assert len(e) == 0 and list(e.features) == ["id", "s"]
