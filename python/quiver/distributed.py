"""quiver.distributed — what Ray Data and Spark reads and writes share
(python/ layer, pure Python over the extension's recipes and PyCapsule
export; docs/scale-out.md):

- split_dataset_by_node(ds, rank, world_size): datasets'
  split_dataset_by_node for map-style datasets (a contiguous shard);
- prepare(ds) / plan(prepared, columns, num_blocks): read tasks as plain, picklable specs —
  a recipe of the data table (paths + identities + replays), a row range
  (aligned to record batches when there is no indices mapping) or, with a
  mapping, a range of mapping positions and where to find them (the
  mapping file's recipe, or the slice of an in-memory mapping) — with the
  rows, bytes and files each reads, all from metadata;
- read_spec(spec): run one spec in a worker: rebuild the tables (a file
  that changed since planning is refused), gather mapped rows in sorted
  order and put them back in mapping order, yield pyarrow Tables;
- write_shard / finish_save: one shard per block written atomically by
  quiver's IPC writer into a staging directory beside the destination,
  then the save_to_disk directory assembled from them in C
  (qv_dataset_assemble_save: shards moved in, dataset_info.json and
  state.json, one atomic rename).
"""
import json
import os
import secrets

from . import _pickle, _quiver

__all__ = ["split_dataset_by_node", "prepare", "plan", "read_spec", "as_dataset"]

# Target rows of one gather inside a task that reads an indices mapping.
GATHER_ROWS = 65536


def split_dataset_by_node(dataset, rank, world_size, strategy="auto"):
    """The part of `dataset` (a quiver.Dataset) for the node `rank` of
    `world_size`, exactly as datasets.distributed.split_dataset_by_node for
    map-style datasets: dataset.shard(num_shards=world_size, index=rank,
    contiguous=True) — rank r gets rows [div*r + min(r, mod), +div (+1 when
    r < mod)) with div, mod = divmod(len, world_size). Returns a new
    Dataset (same files, a recorded select); ValueError for a rank outside
    [0, world_size) or a strategy other than "auto"; and, as datasets
    (whose select refuses an empty range starting at len), IndexError for
    a rank that gets no rows of a non-empty dataset (world_size > len and
    rank >= len); an empty dataset gives every rank an empty part."""
    if strategy not in {"auto", "shards", "examples"}:
        raise ValueError(
            f"Invalid strategy {strategy!r}. Expected one of 'auto', 'shards', or 'examples'.")
    if not isinstance(dataset, _quiver.Dataset):
        raise TypeError(f"split_dataset_by_node: expected a quiver.Dataset, got {type(dataset)}")
    if strategy != "auto":
        raise ValueError(
            f"Map-style datasets only support strategy='auto', but got strategy={strategy!r}.")
    n = len(dataset)
    if 0 <= rank < world_size and 0 < n < world_size and rank >= n:
        start = n // world_size * rank + min(rank, n % world_size)
        raise _quiver.QuiverIndexError(f"Index {start} out of range for dataset of size {n}.")
    return dataset.shard(num_shards=world_size, index=rank, contiguous=True)


def as_dataset(dataset_or_path, split=None):
    """A quiver.Dataset from a Dataset (returned as is) or a path
    (quiver.open(path, split=split))."""
    if isinstance(dataset_or_path, _quiver.Dataset):
        if split is not None:
            raise ValueError("split= is for paths; pass dataset_dict[split] instead")
        return dataset_or_path
    if isinstance(dataset_or_path, dict):
        raise TypeError("a DatasetDict: pass one split (dataset_dict['train'])")
    return _quiver.open(os.fspath(dataset_or_path), split=split)


def _files(ds):
    return [f["filename"] for f in ds.cache_files]


def _cuts(bounds, n_rows, num_blocks):
    """Cut points (ascending, 0 .. n_rows) for about num_blocks ranges,
    snapped to `bounds` (record batch starts) when there are enough."""
    num_blocks = max(1, min(num_blocks, n_rows)) if n_rows > 0 else 1
    if n_rows == 0:
        return [0, 0]
    import bisect
    cuts = [0]
    use_bounds = len(bounds) - 1 >= num_blocks
    for k in range(1, num_blocks):
        want = n_rows * k // num_blocks
        if use_bounds:
            j = bisect.bisect_left(bounds, want)
            cand = [bounds[i] for i in (j - 1, j) if 0 <= i < len(bounds)]
            want = min(cand, key=lambda b: (abs(b - want), b))
        if cuts[-1] < want < n_rows:
            cuts.append(want)
    cuts.append(n_rows)
    return cuts


def prepare(ds):
    """What planning reads of `ds` once (at read() time, so a file changed
    later is refused by the tasks): the data table without the mapping,
    the identities (path, size, mtime, content check) of every file behind
    ds, and the rows of each data file. Metadata only."""
    data_recipe, ix_recipe = ds._recipes()
    data = _quiver._from_recipes(data_recipe, None, ds.fingerprint)
    data_files = _files(data)
    # rows per data file, for each block's input files (when the data is the
    # files' rows end to end; otherwise every block lists every file)
    file_rows = None
    if len(data_files) > 1:
        try:
            file_rows = [_quiver.open(f).num_rows for f in data_files]
        except _quiver.QuiverError:
            file_rows = None
        if file_rows is not None and sum(file_rows) != data.num_rows:
            file_rows = None
    ops = _column_ops(ds._origin) if file_rows is not None or len(data_files) == 1 else None
    if ops is not None and ix_recipe is None and data_files:
        if file_rows is None:
            file_rows = [data.num_rows]
        try:  # a file opened alone must give the dataset's columns
            one = _apply(_quiver.open(data_files[0]), ops)
            if not _same_columns(one, ds):
                ops = None
        except _quiver.QuiverError:
            ops = None
    else:
        ops = None
    identities = [_pickle._identity(f) for f in _files(ds)]
    return {"ds": ds, "data": data, "data_files": data_files, "file_rows": file_rows,
            "mapped": ix_recipe is not None, "identities": identities,
            "file_ops": ops, "by_file": dict(zip(_files(ds), identities))}


_COLUMN_OPS = {"select_columns", "remove_columns", "rename_column", "rename_columns"}


def _column_ops(origin):
    """The column-only transforms (select/remove/rename) from quiver.open of
    a directory or file to the dataset, or None when the data table is not
    the files' rows end to end (a select, shard, shuffle, concatenation,
    an indices file, a callable's tables...)."""
    ops = []
    while isinstance(origin, tuple) and len(origin) == 4 and isinstance(origin[0], tuple):
        parent, op, args, kwargs = origin
        if op not in _COLUMN_OPS:
            return None
        ops.append((op, args or (), kwargs or {}))
        origin = parent
    if not (isinstance(origin, tuple) and origin and origin[0] == "open" and origin[3] is None):
        return None
    return ops[::-1]


def _apply(ds, ops):
    for op, args, kwargs in ops:
        ds = getattr(ds, op)(*args, **kwargs)
    return ds


def _same_columns(a, b):
    import pyarrow as pa

    sa, sb = pa.schema(a), pa.schema(b)
    return sa.names == sb.names and sa.types == sb.types


def plan(prepared, columns=None, num_blocks=1):
    """(schema, specs) for reading a dataset (a quiver.Dataset, or what
    prepare() gave for one) in about `num_blocks` tasks. Each spec is a
    dict of plain values (bytes, ints, strings, one numpy array for an
    in-memory mapping's slice) with "rows", "bytes" and "files" from
    metadata: nothing of the rows is read on the driver (an in-memory
    indices mapping is read once, 8 bytes a row). `columns` (a list of
    names) projects; the schema is the projected pyarrow schema with the
    dataset's huggingface metadata."""
    import pyarrow as pa

    if isinstance(prepared, _quiver.Dataset):
        prepared = prepare(prepared)
    ds, data = prepared["ds"], prepared["data"]
    data_files, file_rows = prepared["data_files"], prepared["file_rows"]
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
        ds = ds.select_columns(columns)
        data = data.select_columns(columns)
    schema = pa.schema(ds)
    data_recipe, ix_recipe = ds._recipes()
    fp = ds.fingerprint
    identities = prepared["identities"]
    scans = prepared.setdefault("scans", {})  # record batch rows and bytes, per projection
    key = None if columns is None else tuple(columns)
    by_file = (ix_recipe is None and prepared["file_ops"] is not None
               and 1 <= num_blocks <= len(data_files))
    if by_file:
        # whole files per block: rows from each file's metadata, bytes from
        # the file sizes scaled by the projected share of the first file's
        # batches — no scan of every record batch on the driver
        if ("files", key) not in scans:
            one = _apply(_quiver.open(data_files[0]), prepared["file_ops"])
            if columns is not None:
                one = one.select_columns(columns)
            size0 = prepared["by_file"][data_files[0]][1]
            got = sum(rb.nbytes for rb in pa.RecordBatchReader.from_stream(one))
            share = got / size0 if size0 else 0.0
            bounds, nbytes = [0], [0]
            for f, nf in zip(data_files, file_rows):
                bounds.append(bounds[-1] + nf)
                nbytes.append(nbytes[-1] + int(prepared["by_file"][f][1] * share))
            scans[("files", key)] = (bounds, nbytes)
        bounds, nbytes = scans[("files", key)]
    else:
        if key not in scans:
            bounds, nbytes = [0], [0]
            for rb in pa.RecordBatchReader.from_stream(data):
                bounds.append(bounds[-1] + rb.num_rows)
                nbytes.append(nbytes[-1] + rb.nbytes)
            scans[key] = (bounds, nbytes)
        bounds, nbytes = scans[key]
    data_rows = bounds[-1]
    base = {"v": 1, "data": data_recipe, "fingerprint": fp, "identities": identities,
            "metadata": schema.metadata}
    specs = []
    if ix_recipe is None:
        import bisect

        cuts = _cuts(bounds, data_rows, num_blocks)
        fstarts = [0]
        for nf in file_rows or ():
            fstarts.append(fstarts[-1] + nf)
        import numpy as np

        # bytes: whole batches inside the range plus a share of the edges
        cum = np.interp(np.asarray(cuts, dtype=np.float64), bounds, nbytes) if cuts[-1] else None
        for c, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
            b = int(round(cum[c + 1] - cum[c])) if cum is not None else 0
            if file_rows is not None:  # the files rows [lo, hi) are in
                fi = range(max(0, bisect.bisect_right(fstarts, lo) - 1),
                           bisect.bisect_left(fstarts, hi))
                files = [data_files[i] for i in fi if file_rows[i] > 0]
            else:
                files = list(data_files)
            pieces = []
            if prepared["file_ops"] is not None:
                # the files this range touches, each with its row range: a task
                # opens (and checks) only those
                for i in fi:
                    at, f = fstarts[i], data_files[i]
                    if file_rows[i] > 0:
                        pieces.append((f, prepared["by_file"][f], max(lo, at) - at,
                                       min(hi, at + file_rows[i]) - at))
            if pieces:
                spec = {"v": 1, "kind": "files", "pieces": pieces, "ops": prepared["file_ops"],
                        "columns": columns, "metadata": schema.metadata, "lo": lo, "hi": hi}
                specs.append(dict(spec, rows=hi - lo, bytes=b, files=[p[0] for p in pieces]))
                continue
            specs.append(dict(base, kind="range", lo=lo, hi=hi, rows=hi - lo, bytes=b,
                              files=files))
        return schema, specs
    import numpy as np

    n = ds.num_rows
    row_bytes = nbytes[-1] / data_rows if data_rows else 0  # (a scan: by_file is False)
    all_files = _files(ds)
    ix_in_file = len(all_files) > len(data_files)
    starts = np.cumsum([0] + list(file_rows)) if file_rows is not None else None
    ix_all = None
    if not ix_in_file:  # in memory: read once here, ship each task its slice
        ix_all = prepared.get("indices")
        if ix_all is None:
            ix = _quiver._from_recipes(ix_recipe, None, fp)
            ix_all = prepared["indices"] = pa.table(ix).column(0).to_numpy()
    cuts = _cuts([], n, num_blocks)
    for lo, hi in zip(cuts, cuts[1:]):
        spec = dict(base, kind="mapped", lo=lo, hi=hi, rows=hi - lo,
                    bytes=int(row_bytes * (hi - lo)), files=all_files)
        if ix_in_file:
            spec["indices_recipe"] = ix_recipe
        else:
            spec["indices"] = ix_all[lo:hi].copy()
            if starts is not None:  # the shards the slice's rows are in
                touched = np.unique(np.searchsorted(starts, spec["indices"], "right") - 1)
                spec["files"] = [data_files[i] for i in touched]
        specs.append(spec)
    return schema, specs


def _check(spec):
    for path, size, mtime_ns, crc in spec["identities"]:
        what = _pickle._changed(path, size, mtime_ns, crc)
        if what is not None:
            raise _quiver.QuiverError(
                f"quiver read task: {path} changed since the read was planned: {what}; "
                "refusing to read different data (plan the read again)")


def read_spec(spec, batch_rows=None):
    """Run one read spec (from plan()): yield pyarrow Tables of its rows in
    the dataset's order. Rebuilds the data table from its recipe (a file
    that changed since planning is a QuiverError naming it, before any row
    is read). Without a mapping the tables are zero-copy slices of the
    mapped files; with one, the positions' rows are gathered in ascending
    row order (sequential reads) and put back in mapping order."""
    import numpy as np

    meta = spec["metadata"]

    def out(t):
        return t.replace_schema_metadata(meta) if meta is not None else t

    if spec["kind"] == "files":
        _check({"identities": [p[1] for p in spec["pieces"]]})
        for path, _, lo, hi in spec["pieces"]:
            f = _apply(_quiver.open(path), spec["ops"])
            if spec["columns"] is not None:
                f = f.select_columns(spec["columns"])
            f = f.with_format("arrow")
            step = batch_rows or max(hi - lo, 1)
            for a in range(lo, hi, step):
                yield out(f[a:min(hi, a + step)])
        return
    _check(spec)
    data = _quiver._from_recipes(spec["data"], None, spec["fingerprint"]).with_format("arrow")
    lo, hi = spec["lo"], spec["hi"]

    if spec["kind"] == "range":
        step = batch_rows or max(hi - lo, 1)
        at = lo
        while True:
            z = min(hi, at + step)
            yield out(data[at:z])
            at = z
            if at >= hi:
                break
        return
    if "indices" in spec:
        ix = np.asarray(spec["indices"], dtype=np.int64)
    else:
        m = _quiver._from_recipes(spec["indices_recipe"], None, spec["fingerprint"])
        ix = m.with_format("arrow")[lo:hi].column(0).to_numpy().astype(np.int64)
    if len(ix) == 0:
        yield out(data[0:0])
        return
    step = batch_rows or GATHER_ROWS
    for a in range(0, len(ix), step):
        part = ix[a:a + step]
        order = np.argsort(part, kind="stable")
        got = data[part[order]]
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        yield out(got.take(inverse))


# -- writing save_to_disk directories from blocks ---------------------------

_DTYPES = {"double": "float64", "float": "float32", "halffloat": "float16"}


def _feature(t):
    """datasets' feature dict for a pyarrow type (generate_from_arrow_type)."""
    import pyarrow as pa

    if pa.types.is_struct(t):
        return {t.field(i).name: _feature(t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_fixed_size_list(t):
        return {"feature": _feature(t.value_type), "length": t.list_size, "_type": "List"}
    if pa.types.is_list(t):
        return {"feature": _feature(t.value_type), "_type": "List"}
    if pa.types.is_large_list(t):
        return {"feature": _feature(t.value_type), "_type": "LargeList"}
    if pa.types.is_dictionary(t):
        return _feature(t.value_type)
    s = str(t)
    return {"dtype": _DTYPES.get(s, s), "_type": "Value"}


def features_of(schema):
    """The features dict (datasets' Features.to_dict()) of a pyarrow schema:
    its huggingface metadata's when the columns match, else inferred."""
    meta = schema.metadata or {}
    hf = meta.get(b"huggingface")
    if hf:
        try:
            feats = json.loads(hf)["info"]["features"]
            if list(feats) == schema.names:
                return feats
        except (ValueError, KeyError, TypeError):
            pass
    return {f.name: _feature(f.type) for f in schema}


def staging_dir(dst):
    """A new empty staging directory beside `dst` (refused when dst exists)."""
    dst = os.path.abspath(os.fspath(dst))
    if os.path.exists(dst):
        raise _quiver.QuiverValueError(f"{dst} already exists; refusing to overwrite it")
    parent = os.path.dirname(dst)
    os.makedirs(parent, exist_ok=True)
    stage = os.path.join(parent, f".{os.path.basename(dst)}.tmp-quiver-{secrets.token_hex(6)}")
    os.mkdir(stage)
    return stage


def write_shard(stage, name, tables, schema=None, features=None):
    """Write an iterable of pyarrow Tables/RecordBatches as one Arrow IPC
    stream shard `stage/name` with the huggingface schema metadata datasets
    writes ({"info": {"features": ...}}), streamed batch by batch through
    quiver's atomic writer (qv_write_arrow_stream_path: temporary, fsync,
    rename). Returns (name, rows, features). `schema` is needed when there
    may be no table."""
    import pyarrow as pa

    it = iter(tables)
    first = next(it, None)
    if first is None and schema is None:
        raise ValueError("write_shard: no data and no schema")
    if first is None:  # one empty batch: datasets cannot load a stream without any
        first = pa.record_batch([pa.array([], type=f.type) for f in schema], schema=schema)
    feats = features if features is not None else features_of(first.schema)
    meta = {b"huggingface": json.dumps({"info": {"features": feats}}).encode()}
    out_schema = first.schema.with_metadata(meta)

    def batches():
        chunk = first
        while chunk is not None:
            t = chunk.replace_schema_metadata(meta)
            yield from (t.to_batches() if isinstance(t, pa.Table) else [t])
            chunk = next(it, None)

    reader = pa.RecordBatchReader.from_batches(out_schema, batches())
    rows = _quiver._write_arrow_stream(reader, os.path.join(stage, name))
    return name, rows, feats


def finish_save(stage, dst, shards, features, fingerprint=None):
    """The save_to_disk directory `dst` from the staged shards (names in
    block order): qv_dataset_assemble_save moves them in as
    data-%05d-of-%05d.arrow, writes dataset_info.json and state.json (as
    datasets' save_to_disk) and puts the directory in place atomically
    (docs/writing.md); then the empty staging directory is removed. On
    error the staging directory is removed with what it holds."""
    import shutil

    dst = os.path.abspath(os.fspath(dst))
    try:
        if os.path.exists(dst):
            raise _quiver.QuiverValueError(f"{dst} appeared while writing; refusing to overwrite")
        _quiver._assemble_save(dst, [os.path.join(stage, s) for s in shards],
                               json.dumps(features), fingerprint or secrets.token_hex(8))
        os.rmdir(stage)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return dst
