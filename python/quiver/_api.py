"""datasets 5.2's constructors, exports and column methods of quiver.Dataset
(python/ layer, Python glue over the C extension's construct.c).

Values are converted in C (`_quiver._from_columns`: pyarrow's inference,
python/src/convert.c) or imported zero copy from any `__arrow_c_stream__`
object (`_quiver._from_stream`); casts, added columns and distinct values are
the dataset layer's (qv_dataset_cast / cast_column / add_column / unique).
Only what is naturally Python lives here: argument handling, datasets'
column-name int optimisation and ClassLabel encoding of given features,
pandas / polars / pyarrow objects, and the minimal IterableDataset.
docs/python.md, "Constructors and exports".
"""
import json
import os

from . import _media, _quiver
from .features import ClassLabel, Features, Value, _asdict

# datasets' OptimizedTypedSequence: int64 values of these columns (or lists,
# lists of lists of them) are stored narrower when they fit
_OPTIMIZED_INT = {"attention_mask": "int8", "special_tokens_mask": "int8", "input_ids": "int32",
                  "token_type_ids": "int8"}


def _features(features, info=None):
    if info is not None and getattr(info, "features", None) is not None:
        if features is not None and _asdict(dict(features)) != _asdict(dict(info.features)):
            raise ValueError("Features specified in `features` and `info.features` can't be "
                             f"different:\n{features}\n{info.features}")
        features = info.features
    if features is None:
        return None
    if not isinstance(features, dict):
        raise TypeError(f"features must be a Features (a dict), not {type(features).__name__}")
    return Features.from_dict(_asdict(dict(features)))


def _json(features):
    return json.dumps(_asdict(dict(features)))


def _is_numpy(x):
    return type(x).__module__ == "numpy" and hasattr(x, "ndim")


def _numpy_column(arr):
    """A numpy array as an Arrow array: datasets' numpy_to_pyarrow_listarray
    (n-d arrays as nested lists over the flat values)."""
    import numpy as np
    import pyarrow as pa
    if arr.ndim <= 1:
        return pa.array(arr)
    flat = np.ascontiguousarray(arr).reshape(-1)
    out = pa.array(flat)
    for dim in reversed(arr.shape[1:]):
        n = len(out) // dim
        out = pa.ListArray.from_arrays(pa.array(np.arange(0, n * dim + 1, dim, dtype=np.int32)),
                                       out)
    return out


def _column(values):
    """One column for _from_columns: lists stay lists (converted in C),
    numpy arrays (or lists of them) become Arrow arrays, as datasets does."""
    if _is_numpy(values):
        return _numpy_column(values)
    if hasattr(values, "__arrow_c_array__"):
        return values
    if isinstance(values, tuple):
        values = list(values)
    if not isinstance(values, list):
        try:
            values = list(values)
        except TypeError:
            raise TypeError(f"a column must be a list, a numpy array or an Arrow array, not "
                            f"{type(values).__name__}") from None
    if any(_is_numpy(v) for v in values):
        values = [v.tolist() if _is_numpy(v) else v for v in values]
    elif any(type(v).__module__ == "numpy" for v in values):  # numpy scalars
        values = [v.item() if type(v).__module__ == "numpy" else v for v in values]
    return values


def _encode(mapping, features):
    """datasets' Features.encode_batch for what the C cast cannot do:
    ClassLabel columns given as label names become their ids."""
    out = {}
    for col, values in mapping.items():
        f = features.get(col)
        if isinstance(f, ClassLabel) and not _is_numpy(values) and \
                not hasattr(values, "__arrow_c_array__"):
            values = [f.str2int(v) if isinstance(v, str) else v for v in values]
        elif _media.is_media(f) and not hasattr(values, "__arrow_c_array__"):
            values = [_media.encode(f, v) for v in values]  # datasets' encode_example
        elif f is not None and not _is_numpy(values) and \
                not hasattr(values, "__arrow_c_array__") and _media_inside(f):
            values = [_encode_nested(f, v) for v in values]  # Image in a list / struct
        out[col] = values
    return out


def _optimize_ints(ds, columns):
    """datasets' int optimisation of known column names (no features given):
    a cast when every value fits, else the int64 column stays."""
    for col in columns:
        narrow = _OPTIMIZED_INT.get(col)
        f = ds.features.get(col) if narrow else None
        depth = 0
        while f is not None and type(f).__name__ == "List" and f.length == -1 and depth < 2:
            f, depth = f.feature, depth + 1
        if not (isinstance(f, Value) and f.dtype == "int64"):
            continue
        new = Value(narrow)
        for _ in range(depth):
            from .features import List
            new = List(new)
        try:
            ds = ds.cast_column(col, new)
        except (ValueError, _quiver.QuiverError):
            pass  # a value out of range: datasets falls back to int64 too
    return ds


# ---- DatasetInfo (python/src/info.c) ------------------------------------------

def _info(ds):
    """ds.info: a DatasetInfo from the dataset's dataset_info.json."""
    from .info import DatasetInfo
    return DatasetInfo.from_dict(json.loads(ds._info_json()))


def _info_text(info):
    return json.dumps({k: v for k, v in info.to_dict().items() if k != "features"})


def _encode_nested(f, v, depth=0):
    """datasets' encode_nested_example for the Image/Audio values inside
    lists and structs of feature f."""
    if v is None or depth > 64:
        return v
    if _media.is_media(f):
        return _media.encode(f, v)
    if isinstance(f, dict) and isinstance(v, dict):
        return {k: _encode_nested(f[k], x, depth + 1) if k in f else x for k, x in v.items()}
    sub = getattr(f, "feature", None)
    if sub is not None and isinstance(v, (list, tuple)):
        return [_encode_nested(sub, x, depth + 1) for x in v]
    return v


def _media_inside(f, depth=0):
    """Whether feature f is, or holds (in lists and structs), Image/Audio."""
    if depth > 64:
        return False
    if _media.is_media(f):
        return True
    if isinstance(f, dict):
        return any(_media_inside(x, depth + 1) for x in f.values())
    sub = getattr(f, "feature", None)
    return sub is not None and _media_inside(sub, depth + 1)


def _embed_value(f, v, depth=0):
    """datasets' embed_array_storage of one value of feature f: Image/Audio
    values (at any depth in lists and structs) with a local path and no
    bytes get the file's bytes and the path's basename."""
    if v is None or depth > 64:
        return v
    if _media.is_media(f):
        if not isinstance(v, dict):  # a storage other than {bytes, path}: as it is
            return v
        data, path = v.get("bytes"), v.get("path")
        if path is not None and "://" not in path:
            if data is None:
                with open(path, "rb") as fh:
                    data = fh.read()
            path = os.path.basename(path)
        return {**v, "bytes": data, "path": path}
    if isinstance(f, dict) and isinstance(v, dict):
        return {k: _embed_value(f[k], x, depth + 1) if k in f else x for k, x in v.items()}
    sub = getattr(f, "feature", None)
    if sub is not None and isinstance(v, list):
        return [_embed_value(sub, x, depth + 1) for x in v]
    if sub is not None and isinstance(v, dict):  # a Sequence of a struct: columns of lists
        return {k: [_embed_value(sub[k], x, depth + 1) for x in xs] if isinstance(sub, dict)
                and k in sub else xs for k, xs in v.items()}
    return v


def _embedded(ds):
    """datasets' save_to_disk embed_local_files: Image/Audio values (top
    level or inside lists and structs) whose value has a local path and no
    bytes get the file's bytes and the path's basename (an in-memory copy
    then); else ds itself."""
    import pyarrow as pa
    feats = ds.features
    cols = [c for c, f in feats.items() if _media_inside(f)]
    if not cols:
        return ds
    table = pa.table(ds.select_columns(cols))
    new = {}
    for c in cols:
        col = table.column(c).combine_chunks()
        vals = col.to_pylist()
        out = [_embed_value(feats[c], v) for v in vals]
        if out != vals:
            new[c] = pa.array(out, type=col.type)
    if not new:
        return ds
    full = pa.table(ds)
    for c, arr in new.items():
        full = full.set_column(full.column_names.index(c), c, arr)
    return _with_info(from_arrow(full, features=feats), ds.info)


def _for_save(ds):
    """The dataset save_to_disk writes: ds, or a copy carrying its changed
    `info` object (python/src/dataset.c keeps the object once read), with
    local Image/Audio files embedded as datasets does (_embedded)."""
    ds = _embedded(ds)
    info = ds.info
    cur = json.loads(ds._info_json())
    cur.pop("features", None)
    want = json.loads(_info_text(info))
    return ds if cur == want else ds._with_info(_info_text(info))


def _with_info(ds, info):
    """datasets' constructors keep the info given (its features are the
    dataset's)."""
    if info is None:
        return ds
    import dataclasses
    from .info import DatasetInfo
    if not isinstance(info, DatasetInfo):
        if not dataclasses.is_dataclass(info) or type(info).__name__ != "DatasetInfo":
            raise TypeError(f"info must be a DatasetInfo, not {type(info).__name__}")
        info = DatasetInfo.from_dict({f.name: getattr(info, f.name)
                                      for f in dataclasses.fields(info)})
    return ds._with_info(_info_text(info))


def _finish(ds, features, split=None):
    if features is not None:
        missing = [c for c in ds.column_names if c not in features]
        if missing:
            raise ValueError(f"Column(s) {missing} have no feature in the given features "
                             f"{list(features)}")
        extra = [c for c in features if c not in ds.column_names]
        if extra:
            raise ValueError(f"Feature(s) {extra} name no column of the data "
                             f"{ds.column_names}")
        ds = _cast(ds, Features({c: features[c] for c in ds.column_names}))
    return ds


def _from_columns(cols, features):
    """_quiver._from_columns, with pyarrow converting the columns of values
    quiver's C converter does not take (datetimes, decimals...), as datasets."""
    try:
        return _quiver._from_columns(cols)
    except _quiver.QuiverTypeError:
        import pyarrow as pa
        from .features import _nested_type
        out = {}
        for c, v in cols.items():
            try:
                _quiver._from_columns({c: v})
                out[c] = v
                continue
            except _quiver.QuiverTypeError:
                pass
            try:
                out[c] = pa.array(v, type=_nested_type(features[c]) if features and c in features
                                  else None)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
                out[c] = pa.array(v)
        return _quiver._from_columns(out)


def _json_dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _scalar_kind(x):
    """The JSON kind pyarrow's JSON reader gives a scalar (ints and floats
    are one: numbers)."""
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, (int, float)):
        return "number"
    return type(x).__name__


def _mixed_paths(values):
    """datasets' find_mixed_struct_types_field_paths(allow_root=True) and
    the paths its JSON-reader fallback adds: the paths (field names, 0 for
    list items) where dicts of differing keys, dicts/lists beside other
    values, or scalars of different kinds (a number beside a string, say)
    meet."""
    out = []
    values = [v for v in values if v is not None]
    if not values:
        return out
    todo = [([], values)]
    while todo:
        path, content = todo.pop(0)
        if all(isinstance(x, dict) for x in content):
            if any(set(x) != set(content[0]) for x in content) or not content[0]:
                out.append(path)
            else:
                for sub in {f for x in content for f in x}:
                    vals = [x[sub] for x in content if sub in x and x[sub] is not None]
                    if vals:
                        todo.append((path + [sub], vals))
        elif all(isinstance(x, list) for x in content):
            vals = [x for sub in content for x in sub if x is not None]
            if vals:
                todo.append((path + [0], vals))
        elif any(isinstance(x, (dict, list)) for x in content):
            out.append(path)
        elif len({_scalar_kind(x) for x in content}) > 1:
            out.append(path)
    return out


def _json_encode_field(example, path):
    """datasets' json_encode_field: the value at `path` as JSON text (text
    that already parses as JSON is kept; None stays None)."""
    if path:
        head, rest = path[0], path[1:]
        if example is None:
            return None
        if head == 0:
            return [_json_encode_field(x, rest) for x in example]
        return {**example, head: _json_encode_field(example.get(head), rest)}
    if example is None:
        return None
    if isinstance(example, str):
        try:
            json.loads(example)
            return example
        except ValueError:
            pass
    return _json_dumps(example)


def _json_typed(t, path):
    import pyarrow as pa
    if not path:
        return pa.json_()
    if path[0] == 0:
        return pa.list_(_json_typed(t.value_type, path[1:]))
    return pa.struct([pa.field(f.name, _json_typed(f.type, path[1:]) if f.name == path[0]
                               else f.type) for f in t])


def _use_json(values):
    """on_mixed_types="use_json" of one column: values as given when they
    convert and hold no mixed structs, else an Arrow array with Json at the
    mixed paths (the whole column when its scalars do not convert)."""
    import pyarrow as pa
    if _is_numpy(values) or hasattr(values, "__arrow_c_array__"):
        return values
    values = list(values)
    paths = _mixed_paths(values)
    if not paths:
        try:
            pa.array(values)
            return values
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            paths = [[]]
    for p in paths:
        values = [_json_encode_field(v, p) for v in values]
    arr = pa.array(values)
    typ = arr.type
    for p in paths:
        typ = _json_typed(typ, p)
    return arr.cast(typ)


def from_dict(mapping, features=None, info=None, split=None, on_mixed_types=None):
    if not isinstance(mapping, dict):
        raise TypeError(f"from_dict takes a dict of columns, not {type(mapping).__name__}")
    features = _features(features, info)
    if features is not None:
        mapping = _encode(mapping, features)
    elif on_mixed_types == "use_json":
        mapping = {k: _use_json(v) for k, v in mapping.items()}
    ds = _from_columns({str(k): _column(v) for k, v in mapping.items()}, features)
    if features is None and on_mixed_types == "use_json":
        from .features import Json
        for k, v in mapping.items():  # a top-level json array arrives as its string storage
            if str(getattr(getattr(v, "type", None), "extension_name", "")) == "arrow.json" and \
                    not isinstance(ds.features.get(str(k)), Json):
                ds = ds.cast_column(str(k), Json())
    if features is None:
        return _with_info(_optimize_ints(ds, [c for c in ds.column_names if c in _OPTIMIZED_INT]),
                          info)
    return _with_info(_finish(ds, features, split), info)


def from_list(mapping, features=None, info=None, split=None, on_mixed_types=None):
    if not isinstance(mapping, list):
        raise TypeError(f"from_list takes a list of dicts, not {type(mapping).__name__}")
    cols = {k: [r.get(k) for r in mapping] for k in mapping[0]} if mapping else {}
    return from_dict(cols, features=features, info=info, split=split,
                     on_mixed_types=on_mixed_types)


def from_arrow(data, features=None, split=None, fingerprint=None):
    ds = _quiver._from_stream(data, fingerprint)
    return _finish(ds, _features(features), split)


def from_pandas(df, features=None, info=None, split=None, preserve_index=None):
    import pyarrow as pa
    return _with_info(from_arrow(pa.Table.from_pandas(df, preserve_index=preserve_index),
                                 features=_features(features, info), split=split), info)


def from_polars(df, features=None, info=None, split=None):
    if hasattr(df, "collect") and not hasattr(df, "to_arrow"):  # a LazyFrame
        df = df.collect()
    return _with_info(from_arrow(df.to_arrow(), features=_features(features, info), split=split),
                      info)


def _generator_cache_dir(cache_dir):
    """datasets' cache directory: cache_dir, else HF_DATASETS_CACHE, else
    HF_HOME/datasets, else ~/.cache/huggingface/datasets."""
    import os
    if cache_dir is not None:
        return os.fspath(cache_dir)
    if os.environ.get("HF_DATASETS_CACHE"):
        return os.environ["HF_DATASETS_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
    return os.path.join(home, "datasets")


def _generator_fingerprint(generator, gen_kwargs, features):
    """A deterministic fingerprint of the generator (its code and plain
    data, quiver._fnhash), gen_kwargs and features, or None."""
    import hashlib
    from . import _fnhash
    fh = _fnhash.function_hash(generator)
    kh = _fnhash.value_hash(gen_kwargs or {})
    if fh is None or kh is None:
        return None
    feats = _json(features) if features is not None else ""
    return hashlib.sha256(f"{fh}:{kh}:{feats}".encode()).hexdigest()[:16]


def from_generator(generator, features=None, cache_dir=None, keep_in_memory=False,
                   gen_kwargs=None, num_proc=None, split=None, fingerprint=None, **kwargs):
    """datasets' from_generator: the rows written to an Arrow cache file, a
    batch of writer_batch_size rows (1000) at a time through quiver's atomic
    IPC writer, then memory-mapped; reused when the same generator (code and
    plain data), gen_kwargs and features wrote it before.
    keep_in_memory=True keeps the rows in memory instead."""
    import os
    bad = [k for k in kwargs if k not in ("writer_batch_size", "config_name")]
    if bad:
        raise TypeError(f"from_generator() got an unexpected keyword argument {bad[0]!r}")
    if num_proc is not None:
        raise NotImplementedError("from_generator: num_proc is not supported by quiver")
    features = _features(features)
    step = int(kwargs.get("writer_batch_size") or 1000)
    rows = iter(generator(**(gen_kwargs or {})))

    def batches():
        import itertools
        return iter(lambda: list(itertools.islice(rows, step)), [])

    if keep_in_memory:
        got = [r for b in batches() for r in b]
        if not got:
            raise ValueError("from_generator: the generator yielded no rows")
        ds = from_list(got, features=features)
        return ds if fingerprint is None else _quiver._from_stream(ds, fingerprint)
    fp = _generator_fingerprint(generator, gen_kwargs, features)
    folder = os.path.join(_generator_cache_dir(cache_dir), "quiver-generator")
    name = f"generator-{fp}.arrow" if fp else None
    path = os.path.join(folder, name) if name else None
    if path is None or not os.path.isfile(path):
        import secrets
        import pyarrow as pa
        it = batches()
        first = next(it, None)
        if first is None:
            raise ValueError("from_generator: the generator yielded no rows")
        head = pa.table(from_list(first, features=features))
        feats = from_arrow(head).features if features is None else features

        raised = []

        def tables():
            yield head
            try:
                for b in it:
                    yield pa.table(from_list(b, features=feats))
            except BaseException as exc:  # re-raised as itself below, not as the C error
                raised.append(exc)
                raise

        reader = pa.RecordBatchReader.from_batches(
            head.schema, (rb for t in tables() for rb in t.cast(head.schema).to_batches()))
        os.makedirs(folder, exist_ok=True)
        if path is None:
            path = os.path.join(folder, f"generator-{secrets.token_hex(8)}.arrow")
        try:
            _quiver._write_arrow_stream(reader, path)
        except _quiver.QuiverError:
            if raised:
                raise raised[0] from None
            raise
    ds = _quiver.open(path)
    return ds if fingerprint is None else _quiver._from_stream(ds, fingerprint)


# ---- exports -----------------------------------------------------------------

def _plain(ds):
    return ds if ds._format is None else ds._with_format(None)


def _batches(ds, batch_size):
    from . import _formats
    p = _plain(ds)
    n = len(p)
    step = batch_size if batch_size else 1000  # datasets' DEFAULT_MAX_BATCH_SIZE
    for off in range(0, n, step):
        yield _formats._table(p._arrow(slice(off, min(off + step, n))))


def to_arrow(ds):
    import pyarrow as pa
    return pa.table(_plain(ds))


def to_dict(ds, batch_size=None, batched=False):
    p = _plain(ds)
    if not batched:
        return p[:]
    step = batch_size if batch_size else 1000
    return (p[off:off + step] for off in range(0, len(p), step))


def to_list(ds):
    return list(_plain(ds))


def to_pandas(ds, batch_size=None, batched=False):
    if not batched:
        return to_arrow(ds).to_pandas()
    return (t.to_pandas() for t in _batches(ds, batch_size))


def to_polars(ds, batch_size=None, batched=False, schema_overrides=None, rechunk=True):
    import polars as pl
    if not batched:
        return pl.from_arrow(to_arrow(ds), schema_overrides=schema_overrides, rechunk=rechunk)
    return (pl.from_arrow(t, schema_overrides=schema_overrides, rechunk=rechunk)
            for t in _batches(ds, batch_size))


def to_iterable_dataset(ds, num_shards=1):
    fmt = ds._format
    if fmt is not None and (fmt["format_kwargs"] or (
            fmt["columns"] is not None and set(fmt["columns"]) != set(ds.column_names))):
        raise NotImplementedError(
            "Converting a formatted dataset with kwargs or selected columns to a formatted "
            "iterable dataset is not implemented yet. Please run `my_dataset = "
            "my_dataset.with_format(None)` before calling to_iterable_dataset")
    if num_shards > len(ds):
        raise ValueError(f"Unable to shard a dataset of size {len(ds)} into {num_shards} shards "
                         "(the number of shards exceeds the number of samples).")
    shards = [ds] if num_shards == 1 else [
        ds.shard(num_shards=num_shards, index=i, contiguous=True) for i in range(num_shards)]
    return IterableDataset(shards, fmt["type"] if fmt else None)


_TORCH_CLASS = []


def _torch_class():
    """As datasets: once torch is imported, IterableDataset objects are also
    torch.utils.data.IterableDataset ones (so a DataLoader iterates them and
    its workers split the shards); quiver itself never imports torch."""
    import sys
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    if not _TORCH_CLASS:
        _TORCH_CLASS.append(type("IterableDataset", (IterableDataset, torch.utils.data.IterableDataset),
                                 {"__module__": __name__}))
    return _TORCH_CLASS[0]


class IterableDataset:
    """datasets.IterableDataset over shards of a Dataset (what
    Dataset.to_iterable_dataset returns): the rows go through the shards in
    order and then through the lazy operations added by map, filter,
    shuffle, take, skip, batch and the column methods, with datasets'
    semantics (shuffle: the shard order shuffled, up to
    max_buffer_input_shards groups of shards interleaved row by row, and
    datasets' buffer shuffle, so one seed gives datasets' order). In a
    torch DataLoader worker, worker w of W reads shards w, w+W, ..."""

    def __new__(cls, *args, **kwargs):
        if cls is IterableDataset:
            cls = _torch_class() or cls
        return object.__new__(cls)

    def __init__(self, shards, format_type=None, ops=(), features=None, epoch=0):
        self._shards = list(shards)
        self._format_type = format_type
        self._ops = tuple(ops)
        self._features = features
        self._epoch = int(epoch)

    def _derive(self, op=None, features=False, format_type=False):
        ops = self._ops + ((op,) if op is not None else ())
        return IterableDataset(self._shards,
                               self._format_type if format_type is False else format_type, ops,
                               self._features if features is False else features, self._epoch)

    @property
    def epoch(self):
        return self._epoch

    def set_epoch(self, epoch):
        """datasets' set_epoch: iterating with epoch e != 0 shuffles the
        shard order with numpy.random.default_rng(e) (unless a take or skip
        fixes it) and reseeds every shuffle's buffer with
        default_rng(copy(generator).integers(0, 2**63) - e), so one seed and
        epoch give datasets' order. Changes this object in place."""
        self._epoch = int(epoch)

    def _epoch_plan(self, shards):
        """(ops, shards) of the current epoch (datasets'
        _prepare_ex_iterable_for_iteration)."""
        ops, shards = self._ops, list(shards)
        if not self._epoch:
            return ops, _shard_order(ops, shards)
        import numpy as np
        shards = _shard_order(ops, shards)
        if not _blocks_order(ops):
            order = list(range(len(shards)))
            np.random.default_rng(self._epoch).shuffle(order)
            shards = [shards[j] for j in order]
        shifted = []
        for op in ops:
            if op[0] == "shuffle":
                import copy
                seed = int(copy.deepcopy(op[1]).integers(0, 1 << 63)) - self._epoch
                op = (op[0], np.random.default_rng(seed)) + tuple(op[2:])
            shifted.append(op)
        return tuple(shifted), shards

    @property
    def n_shards(self):
        return len(self._shards)

    num_shards = n_shards

    @property
    def features(self):
        if self._features is not None or self._ops:
            return self._features
        return self._shards[0].features

    @property
    def column_names(self):
        f = self.features
        return list(f) if f is not None else None

    def with_format(self, type=None):
        return self._derive(format_type=type)

    def shard(self, num_shards, index, contiguous=True):
        """Group `index` of the shards split into num_shards groups
        (datasets' IterableDataset.shard): contiguous groups (the first
        n % num_shards one shard longer), else shards index, index +
        num_shards, ..."""
        if not 0 <= index < num_shards:
            raise ValueError(f"index {index} is out of range for {num_shards} shards")
        out = self._derive()
        out._shards = _shard_group(self._shards, num_shards, index, contiguous)
        return out

    def _worker_split(self, shards):
        try:
            import torch.utils.data
            info = torch.utils.data.get_worker_info()
        except ImportError:
            info = None
        return shards if info is None else shards[info.id::info.num_workers]

    def __iter__(self):
        ops, shards = self._epoch_plan(self._shards)
        shards = self._worker_split(shards)
        if not ops:
            for shard in shards:
                yield from (shard if self._format_type is None
                            else shard.with_format(self._format_type))
            return
        rows = _run(ops, shards)
        if self._format_type is None or self._format_type == "python":
            yield from rows
            return
        yield from _formatted_rows(rows, self.features, self._format_type)

    def iter(self, batch_size, drop_last_batch=False):
        buf = []
        for row in self:
            buf.append(row)
            if len(buf) == batch_size:
                yield _examples_to_batch(buf)
                buf = []
        if buf and not drop_last_batch:
            yield _examples_to_batch(buf)

    # ---- lazy operations (datasets' IterableDataset methods) ----------------

    def map(self, function=None, with_indices=False, input_columns=None, batched=False,
            batch_size=1000, drop_last_batch=False, remove_columns=None, features=None,
            fn_kwargs=None):
        if isinstance(input_columns, str):
            input_columns = [input_columns]
        if isinstance(remove_columns, str):
            remove_columns = [remove_columns]
        op = ("map", function, with_indices, input_columns, batched, batch_size,
              drop_last_batch, remove_columns, dict(fn_kwargs or {}))
        if features is None and self.features is not None and function is None:
            features = Features({c: f for c, f in self.features.items()
                                 if c not in (remove_columns or ())})
        return self._derive(op, features=features)

    def filter(self, function=None, with_indices=False, input_columns=None, batched=False,
               batch_size=1000, fn_kwargs=None):
        if isinstance(input_columns, str):
            input_columns = [input_columns]
        op = ("filter", function, with_indices, input_columns, batched, batch_size,
              dict(fn_kwargs or {}))
        return self._derive(op, features=self.features)

    def shuffle(self, seed=None, generator=None, buffer_size=1000, max_buffer_input_shards=10):
        import copy
        import numpy as np
        gen = np.random.default_rng(seed) if generator is None else copy.deepcopy(generator)
        return self._derive(("shuffle", gen, int(buffer_size), int(max_buffer_input_shards)),
                            features=self.features)

    def take(self, n):
        return self._derive(("take", int(n)), features=self.features)

    def skip(self, n):
        return self._derive(("skip", int(n)), features=self.features)

    def batch(self, batch_size, drop_last_batch=False):
        from .features import List
        f = self.features
        feats = Features({c: List(v) for c, v in f.items()}) if f is not None else None
        return self._derive(("batch", int(batch_size), bool(drop_last_batch)), features=feats)

    def rename_column(self, original_column_name, new_column_name):
        return self.rename_columns({original_column_name: new_column_name})

    def rename_columns(self, column_mapping):
        mapping = dict(column_mapping)
        f = self.features
        out = self.map(lambda x: _rename_row(x, mapping), remove_columns=list(mapping))
        out._features = Features({mapping.get(c, c): v for c, v in f.items()}) \
            if f is not None else None
        return out

    def remove_columns(self, column_names):
        if isinstance(column_names, str):
            column_names = [column_names]
        f = self.features
        out = self.map(remove_columns=list(column_names))
        out._features = Features({c: v for c, v in f.items() if c not in column_names}) \
            if f is not None else None
        return out

    def select_columns(self, column_names):
        if isinstance(column_names, str):
            column_names = [column_names]
        f = self.features
        if f is not None:
            missing = [c for c in column_names if c not in f]
            if missing:
                raise ValueError(f"Column name {missing} not in the dataset. Columns in the "
                                 f"dataset: {list(f)}.")
        cols = list(column_names)
        out = self._derive(("select", cols),
                           features=Features({c: f[c] for c in cols}) if f is not None else None)
        return out

    def __repr__(self):
        cols = self.column_names
        return (f"IterableDataset({{\n    features: {cols if cols is not None else 'Unknown'},\n"
                f"    num_shards: {self.n_shards}\n}})")


def _np_tensorize(v):
    """datasets' NumpyFormatter._recursive_tensorize of one Python value."""
    import numpy as np
    if isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.dtype == object):
        col = [_np_tensorize(x) for x in v]
        if col and all(isinstance(x, (np.ndarray, np.number, np.bool_)) and
                       x.shape == col[0].shape and x.dtype == col[0].dtype for x in col):
            return np.stack(col)
        out = np.empty(len(col), dtype=object)
        out[:] = col
        return out
    if isinstance(v, dict):
        return {k: _np_tensorize(x) for k, x in v.items()}
    if isinstance(v, (str, bytes, type(None), np.number)) or (
            isinstance(v, (np.character, np.ndarray)) and np.issubdtype(v.dtype, np.character)):
        return v
    if type(v).__module__.startswith("PIL."):
        return np.asarray(v)
    kw = {}
    if isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.integer):
        kw = {"dtype": np.int64}
    elif isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.floating):
        kw = {"dtype": np.float32}
    return np.asarray(v, **kw)


def _formatted_rows(rows, features, format_type):
    """Python rows (after map, filter, ...) in a format, as datasets'
    FormattedExamplesIterable: table formats (arrow, pandas, polars) give
    Python rows; numpy datasets' recursive_tensorize of each value (0-d
    arrays for scalars, strings kept); other formats each row through a
    one-row table of the features and the format's row formatter."""
    if format_type in ("arrow", "pyarrow", "pa", "pandas", "pd", "polars", "pl"):
        yield from rows
        return
    if format_type in ("numpy", "np"):
        for row in rows:
            yield {k: _np_tensorize(v) for k, v in row.items()}
        return
    for row in rows:
        one = from_list([row], features=features if features is not None and
                        set(features) == set(row) else None)
        yield one.with_format(format_type)[0]


def _shard_group(shards, num_shards, index, contiguous=True):
    if not contiguous:
        return shards[index::num_shards]
    div, mod = divmod(len(shards), num_shards)
    start = div * index + min(index, mod)
    return shards[start:start + div + (1 if index < mod else 0)]


def _examples_to_batch(rows):
    """datasets' _examples_to_batch: columns in order of first appearance,
    None where a row lacks one."""
    cols = {c: None for r in rows for c in r}
    return {c: [r.get(c) for r in rows] for c in cols}


def _rename_row(row, mapping):
    missing = [c for c in mapping if c not in row]
    if missing:
        raise ValueError(f"Error when renaming {list(mapping)} to {list(mapping.values())}: "
                         f"columns {set(missing)} are not in the dataset.")
    there = [c for c in mapping.values() if c in row]
    if there:
        raise ValueError(f"Error when renaming {list(mapping)} to {list(mapping.values())}: "
                         f"columns {set(there)} are already in the dataset.")
    return {new: row[old] for old, new in mapping.items()}


def _blocks_order(ops):
    return any(op[0] in ("take", "skip") for op in ops)


def _run(ops, shards):
    """The rows of `shards` through `ops` (the last applied last)."""
    import itertools
    if not ops:
        for shard in shards:
            yield from shard
        return
    op, below = ops[-1], ops[:-1]
    kind = op[0]
    if kind == "shuffle":
        yield from _shuffled(op, below, shards)
    elif kind == "take":
        yield from itertools.islice(_run(below, shards), op[1])
    elif kind == "skip":
        yield from itertools.islice(_run(below, shards), op[1], None)
    elif kind == "select":
        for row in _run(below, shards):
            yield {c: row[c] for c in op[1]}
    elif kind == "batch":
        _, size, drop = op
        it = iter(_run(below, shards))
        while True:
            rows = list(itertools.islice(it, size))
            if not rows or (drop and len(rows) < size):
                return
            yield _examples_to_batch(rows)
    elif kind == "map":
        yield from _mapped(op, _run(below, shards))
    elif kind == "filter":
        yield from _filtered(op, _run(below, shards))
    else:  # pragma: no cover
        raise AssertionError(kind)


def _shuffled(op, below, shards):
    """datasets' IterableDataset.shuffle: a shuffled shard order (a copy of
    the generator; not when take/skip below fix the order), then
    min(n_shards, max_buffer_input_shards) contiguous groups of shards read
    in turn a block at a time, and the buffer: blocks appended until it
    holds buffer_size rows or more, then permuted, all but buffer_size // 2
    rows yielded and the rest kept; at the end the rest permuted and
    yielded. Over Arrow data (no Python function below) datasets moves
    blocks of max(1, buffer_size // max_buffer_input_shards) rows (1 when
    the order is fixed: buffer_size); after a Python map or filter, rows."""
    import copy
    import itertools
    _, gen, buffer_size, max_shards = op
    if _blocks_order(below):
        max_shards = 1
    arrow = all(o[0] in ("take", "skip", "select", "shuffle") for o in below)
    block = max(1, buffer_size // max(1, max_shards)) if arrow else 1

    def blocks(rows):
        it = iter(rows)
        while True:
            b = list(itertools.islice(it, block))
            if not b:
                return
            yield b

    if max_shards > 1:
        k = min(len(shards), max_shards)
        stream = _round_robin([blocks(_run(below, _shard_group(shards, k, j)))
                               for j in range(k)])
    else:
        stream = blocks(_run(below, shards))
    rng = copy.deepcopy(gen)
    buf = []
    for b in stream:
        buf.extend(b)
        if len(buf) >= buffer_size:
            perm = rng.permutation(len(buf))
            out = len(buf) - buffer_size // 2
            for i in perm[:out]:
                yield buf[i]
            buf = [buf[i] for i in perm[out:]]
    if buf:
        for i in rng.permutation(len(buf)):
            yield buf[i]


def _shard_order(ops, shards):
    """The shard order every shuffle gives, bottom up (datasets shuffles the
    data sources of what is below each shuffle, at the bottom, with a copy
    of its generator), skipping shuffles above a take or skip."""
    import copy
    shards = list(shards)
    for i, op in enumerate(ops):
        if op[0] == "shuffle" and not _blocks_order(ops[:i]):
            order = list(range(len(shards)))
            copy.deepcopy(op[1]).shuffle(order)
            shards = [shards[j] for j in order]
    return shards


def _round_robin(sources):
    """One item of each source in turn, skipping exhausted ones, until all are
    (datasets' "all_exhausted_without_replacement" interleaving)."""
    live = [iter(x) for x in sources]
    done = [False] * len(live)
    while not all(done):
        for i, it in enumerate(live):
            if done[i]:
                continue
            try:
                yield next(it)
            except StopIteration:
                done[i] = True


def _mapped(op, rows):
    import itertools
    _, fn, with_idx, in_cols, batched, bsize, drop_last, remove, kw = op
    fn = fn if fn is not None else (lambda x, *a, **k: x)
    idx = 0
    it = iter(rows)
    if not batched:
        for row in it:
            inputs = dict(row)
            args = [inputs] if in_cols is None else [inputs[c] for c in in_cols]
            if with_idx:
                args.append(idx)
            idx += 1
            out = fn(*args, **kw)
            if remove:
                for c in remove:
                    inputs.pop(c, None)
                    if out is args[0] and isinstance(out, dict):
                        out.pop(c, None)
            yield {**inputs, **(out or {})}
        return
    while True:
        rows_ = list(itertools.islice(it, bsize if bsize and bsize > 0 else None))
        if not rows_ or (drop_last and bsize and bsize > 0 and len(rows_) < bsize):
            return
        batch = _examples_to_batch(rows_)
        inputs = dict(batch)
        args = [batch] if in_cols is None else [batch[c] for c in in_cols]
        if with_idx:
            args.append(list(range(idx, idx + len(rows_))))
        idx += len(rows_)
        out = fn(*args, **kw)
        if remove:
            for c in remove:
                inputs.pop(c, None)
                if out is batch:
                    out.pop(c, None)
        out = dict(out or {})
        if out:
            first = next(iter(out))
            n = len(out[first])
            bad = [c for c in out if len(out[c]) != n]
            if bad:
                raise ValueError(f"Column lengths mismatch: columns {bad} have length "
                                 f"{[len(out[c]) for c in bad]} while {first} has length {n}.")
            bad = [c for c in inputs if c not in out and len(inputs[c]) != n]
            if bad:
                raise ValueError(f"Column lengths mismatch: columns {bad} have length "
                                 f"{[len(inputs[c]) for c in bad]} while {first} has length {n}. "
                                 "Make sure the mapped function returns all columns at the same "
                                 "length, or drop the offending input columns with "
                                 "`remove_columns`.")
        merged = {**inputs, **out}
        n = len(merged[next(iter(merged))]) if merged else 0
        for i in range(n):
            yield {c: v[i] for c, v in merged.items()}


def _filtered(op, rows):
    import itertools
    _, fn, with_idx, in_cols, batched, bsize, kw = op
    if fn is None:
        yield from rows
        return
    idx = 0
    it = iter(rows)
    if not batched:
        for row in it:
            args = [row] if in_cols is None else [row[c] for c in in_cols]
            if with_idx:
                args.append(idx)
            idx += 1
            if fn(*args, **kw):
                yield row
        return
    while True:
        rows_ = list(itertools.islice(it, bsize if bsize and bsize > 0 else None))
        if not rows_:
            return
        batch = _examples_to_batch(rows_)
        args = [batch] if in_cols is None else [batch[c] for c in in_cols]
        if with_idx:
            args.append(list(range(idx, idx + len(rows_))))
        idx += len(rows_)
        mask = fn(*args, **kw)
        for row, keep in zip(rows_, mask):
            if keep:
                yield row


# ---- column methods ----------------------------------------------------------

def cast(ds, features, batch_size=1000, keep_in_memory=False, load_from_cache_file=None,
         cache_file_name=None, writer_batch_size=1000, num_proc=None):
    features = _features(features)
    if sorted(features) != sorted(ds.column_names):
        raise ValueError(f"The columns in features ({list(features)}) must be identical as the "
                         f"columns in the dataset: {ds.column_names}")
    return _cast(ds, features)


def _cast(ds, features):
    """qv_dataset_cast; the casts it does not have (int -> string, list ->
    fixed-size list...) through pyarrow's cast of the rows (in memory)."""
    try:
        return ds._cast(_json(features))
    except _quiver.QuiverError as exc:
        if "not supported" not in str(exc):
            raise
    import pyarrow as pa
    t = to_arrow(ds)
    arrays = []
    for c in t.column_names:
        typ = _nested_type_of(features[c])
        col = t.column(c)
        if col.type != typ:
            try:
                col = _cast_column_arrow(col, features[c], typ)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise ValueError(f"cast: column '{c}': {exc}") from None
        arrays.append(col)
    out = from_arrow(pa.table(arrays, names=t.column_names), features=features)
    return out if ds._format is None else out._with_format(ds._format)


def _nested_type_of(feature):
    from .features import _nested_type
    return _nested_type(feature)


def _cast_column_arrow(col, feature, typ):
    import pyarrow as pa
    if _media.is_media(feature):  # paths, bytes, {bytes, path}: datasets' cast_storage
        return _media.cast_storage(col)
    if isinstance(feature, ClassLabel) and pa.types.is_string(col.type) or \
            pa.types.is_large_string(col.type) and isinstance(feature, ClassLabel):
        return pa.array([None if v is None else feature.str2int(v) for v in col.to_pylist()],
                        type=typ)
    if isinstance(typ, pa.ExtensionType):
        return pa.ExtensionArray.from_storage(typ, col.combine_chunks().cast(typ.storage_type))
    return col.cast(typ)


def _one_feature(feature):
    return Features.from_dict({"_": _asdict(feature)})["_"] if not isinstance(feature, dict) \
        else Features.from_dict({"_": _asdict(dict(feature))})["_"]


def cast_column(ds, column, feature, new_fingerprint=None):
    if column not in ds.column_names:
        raise ValueError(f"Column {column} not in the dataset. Current columns in the dataset: "
                         f"{ds.column_names}")
    f = _one_feature(feature)
    try:
        return ds._cast_column(column, _json({column: f}))
    except _quiver.QuiverError as exc:
        if "not supported" not in str(exc):
            raise
    feats = Features(dict(ds.features))
    feats[column] = f
    return _cast(ds, feats)


def add_column(ds, name, column, new_fingerprint=None, feature=None):
    if name in ds.column_names:
        raise ValueError(f"Column {name} already exists in the dataset; remove it first or "
                         "choose another name")
    values = _column(column)
    if feature is None:
        return ds._add_column(name, values, None)
    f = _one_feature(feature)
    tmp = _from_columns({name: values}, None)
    src = tmp.features[name]
    if isinstance(f, ClassLabel) and isinstance(src, Value) and "int" not in src.dtype:
        # datasets builds the column with the feature's Arrow type: names are refused
        raise _quiver.QuiverValueError(f"add_column: column '{name}' holds {src.dtype} values, "
                                       f"not the integer ids a ClassLabel stores")
    if _asdict(src) != _asdict(f):
        tmp = _cast(tmp, Features({name: f}))
    return ds._add_column(name, tmp.to_arrow().column(0).combine_chunks(), _json({name: f}))


def class_encode_column(ds, column, include_nulls=False):
    if column not in ds.column_names:
        raise ValueError(f"Column ({column}) not in table columns ({ds.column_names}).")
    src = ds.features[column]
    if not isinstance(src, Value):
        raise ValueError(f"Class encoding is only supported for Value column, and column "
                         f"{column} is {type(src).__name__}.")
    uniq = ds.unique(column)
    names = sorted(str(v) for v in uniq if include_nulls or v is not None)
    dst = ClassLabel(names=names)
    ids = {n: i for i, n in enumerate(names)}
    p = _plain(ds)
    vals = p[column][:]
    if src.dtype == "string" and not (include_nulls and None in uniq):
        labels = [None if v is None else ids[v] for v in vals]
    else:
        labels = [ids[str(v)] if include_nulls or v is not None else None for v in vals]
    cols = ds.column_names
    out = ds.remove_columns(column)._add_column(column, labels, _json({column: dst}))
    out = out.select_columns(cols)
    return out if ds._format is None else out._with_format(ds._format)


def flatten(ds, new_fingerprint=None, max_depth=16):
    """Struct columns flattened into 'a.b' columns (pyarrow's flatten of the
    rows, then features flattened as datasets does)."""
    import pyarrow as pa
    t = to_arrow(ds)
    feats = dict(ds.features)
    for _ in range(1, max_depth):
        if not any(pa.types.is_struct(f.type) for f in t.schema):
            break
        t = t.flatten()
        flat = {}
        for k, v in feats.items():
            if isinstance(v, dict):
                for k2, v2 in v.items():
                    flat[f"{k}.{k2}"] = v2
            else:
                flat[k] = v
        feats = flat
    t = t.replace_schema_metadata(None)
    out = from_arrow(t, features=Features({c: feats[c] for c in t.column_names}))
    return out if ds._format is None else out._with_format(ds._format)


# ---- map / filter support (called from python/src/mapfilter.c) --------------

def _to_arrow_column(obj):
    """A column a function returned that quiver's C converter does not take
    (numpy arrays, pandas Series, lists holding numpy values) as an Arrow
    array, converted by pyarrow as datasets does (numpy dtypes kept), or
    None when it is none of these."""
    mod = type(obj).__module__
    if mod.startswith("pandas") and hasattr(obj, "to_numpy"):
        import pyarrow as pa
        return pa.Array.from_pandas(obj)
    if _is_numpy(obj):
        return _numpy_column(obj)
    if not isinstance(obj, (list, tuple)):
        return None
    if not any(type(v).__module__ == "numpy" for v in obj if v is not None):
        return None
    import pyarrow as pa
    return pa.array(list(obj))


def _result_as_dict(r):
    """A function's result that is a table (pandas DataFrame, pyarrow Table,
    polars DataFrame, any Mapping) as a dict of columns, or None."""
    import collections.abc
    if isinstance(r, collections.abc.Mapping):
        return dict(r)
    mod = type(r).__module__
    if mod.startswith("pandas") and hasattr(r, "columns"):
        import pyarrow as pa
        t = pa.Table.from_pandas(r, preserve_index=False)
    elif hasattr(r, "__arrow_c_stream__"):
        import pyarrow as pa
        t = pa.table(r)
    else:
        return None
    return {c: t.column(c).combine_chunks() for c in t.column_names}


def _cast_result(ds, features):
    return _cast(ds, _features(features))


def _encode_images(mapping, cols):
    """A map result whose columns `cols` hold PIL images, those columns
    encoded as datasets' Image.encode_example ({"bytes", "path"}): an Arrow
    array of Image's storage type when pyarrow imports (a column's paths may
    be all None in one batch and not in another), else the dicts."""
    from .features import Image
    f, out = Image(), dict(mapping)
    try:
        import pyarrow as pa
    except ImportError:
        pa = None
    for c in cols:
        values = [_media.encode(f, v) for v in mapping[c]]
        out[c] = values if pa is None else pa.array(
            values, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    return out


def _use_json_result(mapping):
    """A map result whose values do not convert, each list column as
    on_mixed_types="use_json" makes it (_use_json), and the columns that
    became Json at their top."""
    out, cols = {}, []
    for k, v in mapping.items():
        v = _use_json(v) if isinstance(v, list) else v
        if str(getattr(getattr(v, "type", None), "extension_name", "")) == "arrow.json":
            cols.append(k)
        out[k] = v
    return out, cols


def _with_json_features(ds, cols):
    """map's result with Json on the columns made Json at their top (their
    storage arrives as strings)."""
    from .features import Json
    for c in cols:
        if c in ds.column_names and not isinstance(ds.features.get(c), Json):
            ds = ds.cast_column(c, Json())
    return ds


def _with_image_features(ds, cols):
    """map's result with datasets' Image feature on the columns it encoded
    from PIL images (datasets infers Image() for them)."""
    from .features import Image
    feats = Features({c: (Image() if c in cols else f) for c, f in ds.features.items()})
    return _cast(ds, feats)._with_format(ds._format)


def _map_identity(ds, *args, remove_columns=None, **kwargs):
    """map(None) / filter(None): the rows unchanged (columns removed)."""
    out = ds.remove_columns(remove_columns) if remove_columns else ds
    return out._with_format(ds._format)


class _Progress:
    """A one-line progress bar on the terminal (stderr), as datasets' tqdm."""

    def __init__(self, desc, total, stream):
        self.desc, self.total, self.stream, self.last = desc, total, stream, -1
        self(0, total)

    def __call__(self, done, total):
        total = total or self.total
        pct = int(100 * done / total) if total else 100
        if pct == self.last:
            return
        self.last = pct
        bar = "#" * (pct // 5)
        self.stream.write(f"\r{self.desc}: {pct:3d}%|{bar:<20}| {done}/{total}")
        self.stream.flush()

    def close(self):
        self(self.total, self.total)
        self.stream.write("\n")
        self.stream.flush()


def _progress(desc, total):
    import sys
    stream = sys.stderr
    try:
        tty = stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return _Progress(str(desc), total, stream) if tty else None


_WORK = {}


def _shard_start(n, num, index):
    div, mod = divmod(n, num)
    return div * index + min(index, mod)


def _run_shard(arg):
    token, rank = arg
    ds, op, fn, num, kwargs = _WORK[token]
    shard = ds.shard(num_shards=num, index=rank, contiguous=True)
    return getattr(shard, op)(fn, _rank=rank, _offset=_shard_start(len(ds), num, rank), **kwargs)


def _procs(ds, op, args, kwargs):
    """map / filter with a Python function in num_proc forked worker
    processes (datasets' multiprocessing): worker r runs the function on
    contiguous shard r (indices and rank as datasets gives them); its result
    comes back pickled (in-memory data as Arrow IPC, cache files as their
    recipes) and the parts are concatenated in order."""
    import multiprocessing
    kwargs = dict(kwargs)
    fn = args[0] if args else kwargs.pop("function")
    num = min(int(kwargs.pop("num_proc")), len(ds))
    features = kwargs.pop("features", None)
    kwargs.pop("desc", None)
    token = len(_WORK) + id(kwargs)  # an int: passed to the workers by value
    _WORK[token] = (ds, op, fn, num, kwargs)
    try:
        # one task per process: shard r runs in a process of its own
        with multiprocessing.get_context("fork").Pool(num, maxtasksperchild=1) as pool:
            parts = pool.map(_run_shard, [(token, r) for r in range(num)])
    finally:
        del _WORK[token]
    parts = [p for p in parts]
    out = _quiver.concatenate_datasets(parts) if len(parts) > 1 else parts[0]
    if features is not None:
        out = _cast_result(out, features)
    return out._with_format(ds._format)


def _map_procs(ds, *args, **kwargs):
    return _procs(ds, "map", args, kwargs)


def _filter_procs(ds, *args, **kwargs):
    return _procs(ds, "filter", args, kwargs)


# ---- small datasets methods over the transforms above ------------------------

def _shuffle_generator(ds, seed=None, generator=None, **kwargs):
    """shuffle(generator=g): the rows in g.permutation(len(ds)) order, as
    datasets (the generator's state advances)."""
    kwargs.pop("load_from_cache_file", None)
    keep = {k: v for k, v in kwargs.items() if k in (
        "keep_in_memory", "writer_batch_size", "new_fingerprint", "cache")}
    if kwargs.get("indices_cache_file_name") is not None:
        keep["indices_cache_file_name"] = kwargs["indices_cache_file_name"]
    return ds.select(generator.permutation(len(ds)), **keep)


def skip(ds, n):
    n = max(0, min(int(n), len(ds)))
    return ds.select(range(n, len(ds)))


def take(ds, n):
    return ds.select(range(max(0, min(int(n), len(ds)))))


def repeat(ds, num_times):
    if num_times is None:
        raise ValueError("Map style datasets do not support indefinite repetition.")
    num_times = int(num_times)
    if num_times <= 0:
        return ds.select([])
    return ds if num_times == 1 else _quiver.concatenate_datasets([ds] * num_times)


def add_item(ds, item, new_fingerprint=None):
    """One row appended (datasets' add_item): the item cast to the features."""
    if not isinstance(item, dict):
        raise TypeError(f"add_item takes a dict, not {type(item).__name__}")
    extra = [c for c in item if c not in ds.column_names]
    if extra:  # as datasets: new keys become columns, null in the rows before
        import pyarrow as pa
        from .features import _nested_type
        new = from_dict({c: [item[c]] for c in extra}).features
        fmt = ds._format
        for c in extra:
            ds = ds._with_format(None).add_column(c, pa.nulls(len(ds), _nested_type(new[c])),
                                                  feature=new[c])
        ds = ds._with_format(fmt)
    row = from_dict({c: [item.get(c)] for c in ds.column_names}, features=ds.features)
    out = _quiver.concatenate_datasets([ds, row])
    return out if ds._format is None else out._with_format(ds._format)


# ---- train_test_split: stratified, with a generator, named caches -----------

def _mode_counts(counts, draws, rng):
    """How many of `draws` rows each class gets: the floor of its share, and
    the rows left over given to the classes with the largest remainders,
    ties drawn with rng.choice (the approximation of the multivariate
    hypergeometric mode datasets' stratified split uses)."""
    import numpy as np
    share = draws * counts / counts.sum()
    got = np.floor(share)
    left = int(draws - got.sum())
    rest = share - got
    for value in np.sort(np.unique(rest))[::-1]:
        if left <= 0:
            break
        (tied,) = np.where(rest == value)
        k = min(len(tied), left)
        got[rng.choice(tied, size=k, replace=False)] += 1
        left -= k
    return got.astype(np.int64)


def _stratified_indices(labels, n_train, n_test, rng):
    """datasets' stratified shuffle split (its first split): per class, a
    permutation of the class's rows, the first n_i for train and the next
    t_i for test; each side permuted again. Draws from rng in datasets'
    order, so one seed gives datasets' rows."""
    import numpy as np
    classes, inverse = np.unique(labels, return_inverse=True)
    counts = np.bincount(inverse)
    if counts.min() < 2:
        raise ValueError("Minimum class count error")
    if n_train < len(classes):
        raise ValueError("The train_size = %d should be greater or equal to the number of "
                         "classes = %d" % (n_train, len(classes)))
    if n_test < len(classes):
        raise ValueError("The test_size = %d should be greater or equal to the number of "
                         "classes = %d" % (n_test, len(classes)))
    by_class = np.split(np.argsort(inverse, kind="mergesort"), np.cumsum(counts)[:-1])
    n_i = _mode_counts(counts, n_train, rng)
    t_i = _mode_counts(counts - n_i, n_test, rng)
    train, test = [], []
    for c in range(len(classes)):
        rows = by_class[c].take(rng.permutation(counts[c]), mode="clip")
        train.extend(rows[:n_i[c]])
        test.extend(rows[n_i[c]:n_i[c] + t_i[c]])
    return rng.permutation(train), rng.permutation(test)


def _split_sizes(n, test_size, train_size):
    """datasets' n_train, n_test for train_test_split (its checks and messages)."""
    import math
    if test_size is None and train_size is None:
        test_size = 0.25
    for name, v in (("test_size", test_size), ("train_size", train_size)):
        if v is not None and not isinstance(v, (int, float)):
            raise ValueError(f"Invalid value for {name}: {v} of type {type(v)}")
        if isinstance(v, int) and (v >= n or v <= 0) or isinstance(v, float) and \
                (v <= 0 or v >= 1):
            raise ValueError(f"{name}={v} should be either positive and smaller than the number "
                             f"of samples {n} or a float in the (0, 1) range")
    if isinstance(train_size, float) and isinstance(test_size, float) and \
            train_size + test_size > 1:
        raise ValueError(f"The sum of test_size and train_size = {train_size + test_size}, "
                         "should be in the (0, 1) range. Reduce test_size and/or train_size.")
    n_test = math.ceil(test_size * n) if isinstance(test_size, float) else test_size
    n_train = math.floor(train_size * n) if isinstance(train_size, float) else train_size
    if train_size is None:
        n_train = n - n_test
    elif test_size is None:
        n_test = n - n_train
    if n_train + n_test > n:
        raise ValueError(f"The sum of train_size and test_size = {n_train + n_test}, should be "
                         f"smaller than the number of samples {n}. Reduce test_size and/or "
                         "train_size.")
    if n_train == 0:
        raise ValueError(f"With n_samples={n}, test_size={test_size} and train_size="
                         f"{train_size}, the resulting train set will be empty. Adjust any of "
                         "the aforementioned parameters.")
    return int(n_train), int(n_test)


def _train_test_split(ds, test_size=None, train_size=None, shuffle=True, stratify_by_column=None,
                      seed=None, generator=None, keep_in_memory=False, load_from_cache_file=None,
                      train_indices_cache_file_name=None, test_indices_cache_file_name=None,
                      writer_batch_size=1000, train_new_fingerprint=None,
                      test_new_fingerprint=None, cache=False):
    """train_test_split with what the C split does not take (datasets'
    stratify_by_column, generator, cache file names, new fingerprints): the
    rows chosen here as datasets chooses them, each side a select."""
    import numpy as np
    from .dataset_dict import DatasetDict
    n = len(ds)
    if n == 0:
        return DatasetDict({"train": ds, "test": ds})
    n_train, n_test = _split_sizes(n, test_size, train_size)
    if generator is None and shuffle:
        if seed is None:  # as datasets: a seed from numpy's global state
            _, keys, pos, *_ = np.random.get_state()
            seed = keys[pos] if pos < 624 else keys[0]
            np.random.random()
        generator = np.random.default_rng(seed)
    if not shuffle:
        if stratify_by_column is not None:
            raise ValueError("Stratified train/test split is not implemented for `shuffle=False`")
        train, test = np.arange(n_train), np.arange(n_train, n_train + n_test)
    elif stratify_by_column is not None:
        feats = ds.features
        if stratify_by_column not in feats:
            raise ValueError(f"Key {stratify_by_column} not found in {feats.keys()}")
        if not isinstance(feats[stratify_by_column], ClassLabel):
            raise ValueError(f"Stratifying by column is only supported for ClassLabel column, "
                             f"and column {stratify_by_column} is "
                             f"{type(feats[stratify_by_column]).__name__}.")
        labels = np.asarray(ds.with_format("numpy")[stratify_by_column][:])
        try:
            train, test = _stratified_indices(labels, n_train, n_test, generator)
        except ValueError as exc:
            if str(exc) != "Minimum class count error":
                raise
            raise ValueError(f"The least populated class in {stratify_by_column} column has "
                             "only 1 member, which is too few. The minimum number of groups "
                             "for any class cannot be less than 2.") from None
    else:
        perm = generator.permutation(n)
        test, train = perm[:n_test], perm[n_test:n_test + n_train]

    def side(rows, name, fp):
        kw = {"keep_in_memory": keep_in_memory, "writer_batch_size": writer_batch_size,
              "cache": cache}
        if name is not None:
            kw["indices_cache_file_name"] = name
        if fp is not None:
            kw["new_fingerprint"] = fp
        return ds.select(np.asarray(rows, dtype=np.int64), **kw)

    return DatasetDict({"train": side(train, train_indices_cache_file_name, train_new_fingerprint),
                        "test": side(test, test_indices_cache_file_name, test_new_fingerprint)})
