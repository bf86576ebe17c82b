"""quiver.spark — Spark over quiver datasets (python/ layer; docs/scale-out.md).

A PySpark 4 Python Data Source named "quiver" (register(spark), then
spark.read.format("quiver").load(path)) whose partitions are the read
specs of quiver.distributed.plan — a recipe and a row range each — read
on the executors as pyarrow RecordBatches; read(spark, dataset) does the
same for any quiver.Dataset (shuffled, filtered...) by passing its pickle
(its recipe) as an option. write(df, dst) writes a save_to_disk directory
through mapInArrow, one shard per non-empty partition. Imports pyspark only
when used.
"""
import base64
import os
import pickle

from . import distributed

__all__ = ["register", "read", "write", "QuiverDataSource"]

try:
    from pyspark.sql.datasource import DataSource as _DataSource
    from pyspark.sql.datasource import DataSourceReader as _DataSourceReader
    from pyspark.sql.datasource import InputPartition as _InputPartition
except ImportError:  # pragma: no cover - quiver.spark without pyspark
    _DataSource = _DataSourceReader = _InputPartition = object


def _dataset(options):
    recipe = options.get("recipe")
    if recipe:
        return pickle.loads(base64.b64decode(recipe))
    path = options.get("path")
    if not path:
        raise ValueError("quiver data source: give a path (load(path)) or a recipe option")
    return distributed.as_dataset(path, split=options.get("split"))


def _columns(options):
    cols = options.get("columns")
    return [c.strip() for c in cols.split(",") if c.strip()] if cols else None


class QuiverDataSource(_DataSource):
    """spark.read.format("quiver"): options `path` (what quiver.open takes;
    load(path) sets it), `split` (a DatasetDict directory's split),
    `columns` (comma-separated projection), `numPartitions` (default: this
    machine's CPU count), `recipe` (a base64 pickle of a quiver.Dataset,
    set by quiver.spark.read). A schema given with spark.read.schema(...)
    that names a subset of the columns projects too."""

    @classmethod
    def name(cls):
        return "quiver"

    def schema(self):
        from pyspark.sql.pandas.types import from_arrow_schema

        ds = _dataset(self.options)
        cols = _columns(self.options)
        if cols is not None:
            ds = ds.select_columns(cols)
        import pyarrow as pa

        return from_arrow_schema(pa.schema(ds))

    def reader(self, schema):
        return QuiverDataSourceReader(self.options, schema)


class QuiverDataSourceReader(_DataSourceReader):
    def __init__(self, options, schema):
        ds = _dataset(options)
        cols = _columns(options) or [f.name for f in schema.fields]
        n = int(options.get("numPartitions") or os.cpu_count() or 1)
        _, self._specs = distributed.plan(ds, cols, n)

    def partitions(self):
        return [_InputPartition(s) for s in self._specs]

    def read(self, partition):
        for t in distributed.read_spec(partition.value):
            yield from t.replace_schema_metadata(None).to_batches()


def register(spark):
    """Register the "quiver" data source on a SparkSession (PySpark >= 4)."""
    spark.dataSource.register(QuiverDataSource)


def read(spark, dataset_or_path, *, columns=None, num_partitions=None, split=None):
    """A Spark DataFrame of the rows of `dataset_or_path` (a quiver.Dataset,
    any transforms, or a path), registering the source if needed; the
    Dataset travels as its pickle (recipe). `columns` projects;
    `num_partitions` sets the number of read tasks."""
    ds = distributed.as_dataset(dataset_or_path, split=split)
    register(spark)
    r = spark.read.format("quiver").option(
        "recipe", base64.b64encode(pickle.dumps(ds)).decode("ascii"))
    if columns is not None:
        r = r.option("columns", ",".join([columns] if isinstance(columns, str) else columns))
    if num_partitions is not None:
        r = r.option("numPartitions", str(int(num_partitions)))
    return r.load()


_RESULT = "part long, name string, rows long, features string"


def write(df, dst, *, features=None):
    """Write a Spark DataFrame as a save_to_disk directory `dst` through
    mapInArrow: each non-empty partition writes one shard (atomically, into
    a staging directory beside dst) on its executor; the driver names them
    data-%05d-of-%05d.arrow in partition order, writes dataset_info.json and
    state.json and renames the staging directory to dst (refused when it
    exists). `features` (a dict or quiver.Features) overrides the features
    inferred from the Arrow types. The staging directory must be visible
    to the executors (a shared filesystem on a cluster). Returns the path."""
    import json

    import pyarrow as pa

    if features is not None and hasattr(features, "to_dict"):
        features = features.to_dict()
    stage = distributed.staging_dir(dst)
    feats_json = json.dumps(features) if features is not None else None

    def write_partition(batches):
        from pyspark import TaskContext

        from quiver import distributed as d

        part = TaskContext.get().partitionId()
        it = iter(batches)
        first = next(it, None)
        while first is not None and first.num_rows == 0:
            first = next(it, None)
        if first is None:
            return

        def chain():
            yield first
            yield from it

        feats = json.loads(feats_json) if feats_json is not None else None
        name, rows, f = d.write_shard(stage, f"part-{part:06d}.arrow", chain(), features=feats)
        yield pa.RecordBatch.from_pydict({"part": [part], "name": [name], "rows": [rows],
                                          "features": [json.dumps(f)]})

    try:
        out = sorted(df.mapInArrow(write_partition, _RESULT).collect(), key=lambda r: r.part)
        shards = [r.name for r in out]
        if out:
            feats = features if features is not None else json.loads(out[0].features)
        else:
            from pyspark.sql.pandas.types import to_arrow_schema

            schema = to_arrow_schema(df.schema)
            name, _, feats = distributed.write_shard(stage, "part-000000.arrow", [],
                                                     schema=schema, features=features)
            shards = [name]
    except BaseException:
        import shutil
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return distributed.finish_save(stage, os.fspath(dst), shards, feats)
