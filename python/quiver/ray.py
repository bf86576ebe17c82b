"""quiver.ray — Ray Data over quiver datasets (python/ layer; docs/scale-out.md).

read(dataset_or_path) is a ray.data.Dataset through a ray.data.Datasource
whose read tasks carry a recipe and a row range (quiver.distributed.plan),
never rows; write(ray_ds, dst) writes a save_to_disk directory, one shard
per block. Imports ray only when used.
"""
import os

from . import distributed

__all__ = ["read", "write", "QuiverDatasource"]

try:  # the Datasource base class, when ray is installed
    from ray.data.block import BlockMetadata as _BlockMetadata
    from ray.data.datasource import Datasource as _Datasource
    from ray.data.datasource import ReadTask as _ReadTask
except ImportError:  # pragma: no cover - quiver.ray without ray
    _Datasource = object
    _ReadTask = _BlockMetadata = None


class QuiverDatasource(_Datasource):
    """A ray.data.Datasource over one quiver.Dataset (any transforms: the
    read tasks rebuild it from its recipe). Supports projection pushdown:
    Ray's select_columns on the result reads only those columns."""

    def __init__(self, dataset, columns=None):
        if _ReadTask is None:
            raise ImportError("quiver.ray needs ray (pip install 'ray[data]')")
        super().__init__()
        self._ds = dataset
        self._prepared = distributed.prepare(dataset)  # files' identities taken now
        self._columns = None if columns is None else list(columns)
        self._projection_map = None  # Ray's projection pushdown (None: every column)

    def get_name(self):
        return "Quiver"

    def supports_projection_pushdown(self):
        return True

    def _wanted(self):
        cols = self._columns
        pm = getattr(self, "_projection_map", None)
        if pm is not None:  # in the projection's order
            names = set(cols if cols is not None else self._ds.column_names)
            cols = [c for c in pm if c in names]
        return cols

    def estimate_inmemory_data_size(self):
        _, specs = distributed.plan(self._prepared, self._wanted(), 1)
        return sum(s["bytes"] for s in specs)

    def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        schema, specs = distributed.plan(self._prepared, self._wanted(), max(1, parallelism))
        tasks = []
        for spec in specs:
            meta = _BlockMetadata(num_rows=spec["rows"], size_bytes=spec["bytes"],
                                  input_files=spec["files"], exec_stats=None)

            def read_fn(spec=spec):
                return distributed.read_spec(spec)

            tasks.append(_ReadTask(read_fn, meta, schema=schema,
                                   per_task_row_limit=per_task_row_limit))
        return tasks


def read(dataset_or_path, *, columns=None, override_num_blocks=None, split=None, **read_args):
    """A ray.data.Dataset of the rows of `dataset_or_path` (a quiver.Dataset —
    any split, cache file, shuffled, filtered or selected dataset — or a
    path quiver.open takes, with `split=` for a DatasetDict directory), in
    the dataset's order (blocks in order; Ray keeps it with
    DataContext.execution_options.preserve_order or for take/iter on one
    consumer). `columns` projects. `override_num_blocks` sets the number
    of read tasks (default: Ray's choice); each reads a contiguous range of
    rows aligned to record batches (no indices mapping) or of mapping
    positions. Other keyword arguments go to ray.data.read_datasource.
    The returned Dataset refers to the files: a file changed before a task
    runs makes that task fail with a QuiverError naming it."""
    import ray.data

    ds = distributed.as_dataset(dataset_or_path, split=split)
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
        ds.select_columns(columns)  # unknown names: QuiverValueError here
    return ray.data.read_datasource(QuiverDatasource(ds, columns),
                                    override_num_blocks=override_num_blocks, **read_args)


def _write_block(block, stage, name, features):
    return distributed.write_shard(stage, name, [block], features=features)


def write(ray_ds, dst, *, features=None):
    """Write a ray.data.Dataset as a save_to_disk directory `dst`, one shard
    (data-%05d-of-%05d.arrow) per block in block order, written by Ray
    tasks on the workers (each shard atomically into a staging directory
    beside dst; then dataset_info.json and state.json, and the staging
    directory renamed to dst, so dst appears whole or not at all).
    `features` (a features dict or quiver.Features) overrides those read
    from the blocks' huggingface schema metadata or inferred from their
    Arrow types. Refuses an existing dst. Returns the path."""
    import ray

    if features is not None and hasattr(features, "to_dict"):
        features = features.to_dict()
    refs = ray_ds.to_arrow_refs()
    stage = distributed.staging_dir(dst)
    try:
        task = ray.remote(_write_block)
        outs = ray.get([task.remote(r, stage, f"block-{i:06d}.arrow", features)
                        for i, r in enumerate(refs)])
    except BaseException:
        import shutil
        shutil.rmtree(stage, ignore_errors=True)
        raise
    shards = [o[0] for o in outs]
    feats = features if features is not None else (outs[0][2] if outs else None)
    if not outs:  # no blocks: one empty shard of the dataset's schema
        schema = ray_ds.schema()
        pa_schema = getattr(schema, "base_schema", schema)
        shards = [distributed.write_shard(stage, "block-000000.arrow", [], schema=pa_schema,
                                          features=features)[0]]
        feats = features if features is not None else distributed.features_of(pa_schema)
    return distributed.finish_save(stage, os.fspath(dst), shards, feats)
