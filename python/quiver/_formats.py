"""Output formats of quiver.Dataset (python/ layer, Python glue over the C extension).

`datasets` 5.2's with_format / set_format / reset_format / formatted_as /
with_transform / set_transform, the `format` property, `__getitems__`,
`iter(batch_size, drop_last_batch)` and `ds["col"]` as a lazy column. The
C type (python/src/dataset.c) keeps the format state on the Dataset object
(`_format`) and calls into this module when one is set; without one
everything stays in C. Python values come from quiver's C conversion
(`_getitem_python`, `Batch.to_pydict`); numpy, pandas, polars and torch
outputs from Arrow data exported zero copy (`_arrow`, `iter_batches`), with
numpy views over the mapping where the layout allows (fixed-width numbers
and fixed-size lists of them without nulls, in the dtype datasets gives).
docs/python.md, "Formats".
"""
import contextlib

from . import _media

_ALIASES = {None: None, "python": None, "numpy": "numpy", "np": "numpy", "arrow": "arrow",
            "pa": "arrow", "pyarrow": "arrow", "pandas": "pandas", "pd": "pandas",
            "polars": "polars", "pl": "polars", "torch": "torch", "pt": "torch",
            "pytorch": "torch", "custom": "custom"}


def _state(ds):
    return ds._format or {"type": None, "format_kwargs": {}, "columns": None,
                          "output_all_columns": False}


def _make_state(ds, type, columns, output_all_columns, format_kwargs):
    if type not in _ALIASES:
        raise ValueError(f"Format type {type!r} is not available; choose one of "
                         f"{sorted(k for k in _ALIASES if k)} or None")
    t = _ALIASES[type]
    if isinstance(columns, str):
        columns = [columns]
    if isinstance(columns, tuple):
        columns = list(columns)
    if columns is not None:
        missing = [c for c in columns if c not in ds.column_names]
        if missing:
            raise ValueError(f"Columns {missing} not in the dataset. Current columns in the "
                             f"dataset: {ds.column_names}")
        columns = list(columns)
    if t == "custom" and not callable(format_kwargs.get("transform")):
        raise ValueError("the custom format needs a callable transform")
    if t == "torch":
        import torch  # noqa: F401  (refuse the format when torch is missing, as datasets)
    if t is None and columns is None and not format_kwargs:
        return None
    return {"type": t, "format_kwargs": dict(format_kwargs), "columns": columns,
            "output_all_columns": bool(output_all_columns)}


def format(ds):
    s = _state(ds)
    cols = s["columns"]
    cols = ds.column_names if cols is None else [c for c in cols if c in ds.column_names]
    return {"type": s["type"], "format_kwargs": dict(s["format_kwargs"]), "columns": cols,
            "output_all_columns": s["output_all_columns"]}


def with_format(ds, type=None, columns=None, output_all_columns=False, **format_kwargs):
    return ds._with_format(_make_state(ds, type, columns, output_all_columns, format_kwargs))


def set_format(ds, type=None, columns=None, output_all_columns=False, **format_kwargs):
    ds._format = _make_state(ds, type, columns, output_all_columns, format_kwargs)


def reset_format(ds):
    ds._format = None


@contextlib.contextmanager
def _formatted_as(ds, state):
    old = ds._format
    ds._format = state
    try:
        yield
    finally:
        ds._format = old


def formatted_as(ds, type=None, columns=None, output_all_columns=False, **format_kwargs):
    return _formatted_as(ds, _make_state(ds, type, columns, output_all_columns, format_kwargs))


def with_transform(ds, transform, columns=None, output_all_columns=False):
    return ds._with_format(_make_state(ds, "custom", columns, output_all_columns,
                                       {"transform": transform}))


def set_transform(ds, transform, columns=None, output_all_columns=False):
    ds._format = _make_state(ds, "custom", columns, output_all_columns, {"transform": transform})


# ---- Arrow data of a key --------------------------------------------------

class _Stream:
    """An 'arrow_array_stream' capsule as an object pyarrow imports."""

    def __init__(self, cap):
        self.cap = cap

    def __arrow_c_stream__(self, requested_schema=None):
        return self.cap


def _table(obj):
    import pyarrow as pa
    if hasattr(obj, "__arrow_c_array__"):  # a quiver.Batch
        return pa.Table.from_batches([pa.record_batch(obj)])
    return pa.RecordBatchReader.from_stream(_Stream(obj)).read_all()


# ---- numpy (datasets' NumpyFormatter rules, on zero-copy Arrow data) --------

def _storage(chunk):
    import pyarrow as pa
    return chunk.storage if isinstance(chunk, pa.ExtensionArray) else chunk


def _fixed_view(chunk):
    """A numpy view of a null-free chunk of fixed-width numbers or nested
    fixed-size lists of them (shape (n, d1, ...)), else None."""
    import pyarrow as pa
    chunk = _storage(chunk)
    shape = [len(chunk)]
    a = chunk
    while pa.types.is_fixed_size_list(a.type):
        if a.null_count:
            return None
        shape.append(a.type.list_size)
        a = a.flatten()
    if a.null_count or not (pa.types.is_integer(a.type) or pa.types.is_floating(a.type)):
        return None
    if len(shape) == 1:
        return a.to_numpy(zero_copy_only=True)
    return a.to_numpy(zero_copy_only=True).reshape(shape)


def _rows_to_numpy(rows):
    import numpy as np
    if rows and any(isinstance(x, np.ndarray) for x in rows):
        first = next(x for x in rows if isinstance(x, np.ndarray))
        if any((isinstance(x, np.ndarray) and (x.dtype == object or x.shape != first.shape))
               or (isinstance(x, float) and np.isnan(x))
               or ((x is None) and first.ndim > 0) for x in rows):
            return np.asarray(rows, dtype=object)
    return np.asarray(rows)


def _np_extract(ca, feature):
    """A column (ChunkedArray) as datasets' numpy extractor gives it, zero
    copy for one null-free chunk of fixed-width numbers."""
    import numpy as np
    chunks = ca.chunks
    arrayxd = _feature_type(feature).startswith("Array")
    views = [_fixed_view(c) for c in chunks]
    if views and all(v is not None for v in views):
        return views[0] if len(views) == 1 else np.concatenate(views)
    rows = []
    for c in chunks:
        if arrayxd:
            rows.extend(_arrayxd_rows(_storage(c), feature))
        else:
            rows.extend(c.to_numpy(zero_copy_only=False))
    if not rows:
        return np.asarray(rows)
    return _rows_to_numpy(rows)


def _feature_type(feature):
    """The `_type` of a feature given as datasets' dict or a feature object."""
    if isinstance(feature, dict):
        return str(feature.get("_type", ""))
    return type(feature).__name__ if feature is not None else ""


def _arrayxd_rows(storage, feature):
    import numpy as np
    dtype = feature.get("dtype") if isinstance(feature, dict) else getattr(feature, "dtype", None)
    out = []
    for v in storage.to_pylist():
        out.append(None if v is None else np.asarray(v, dtype=dtype))
    return out


def _tensorize(x, kw):
    import numpy as np
    if x is None or isinstance(x, (str, bytes)):
        return x
    if isinstance(x, (np.character, np.ndarray)) and np.issubdtype(x.dtype, np.character):
        return x
    if isinstance(x, np.number):
        return x
    if type(x).__module__.startswith("PIL.") and hasattr(x, "mode"):
        return np.asarray(x, **kw)  # a decoded Image, as datasets' NumpyFormatter
    dflt = {}
    if isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.integer):
        dflt = {"dtype": np.int64}
    elif isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating):
        dflt = {"dtype": np.float32}
    return np.asarray(x, **{**dflt, **kw})


def _consolidate(col):
    import numpy as np
    if isinstance(col, list):
        if col and all(isinstance(x, (np.ndarray, np.number, np.bool_))
                       and x.shape == col[0].shape and x.dtype == col[0].dtype for x in col):
            return np.stack(col)
        out = np.empty(len(col), dtype=object)
        out[:] = col
        return out
    return col


def _rt(x, kw):
    import numpy as np
    if isinstance(x, dict):
        return {k: _rt(v, kw) for k, v in x.items()}
    if isinstance(x, np.ndarray) and x.dtype == object:
        return _consolidate([_rt(y, kw) for y in x])
    if isinstance(x, (list, tuple)):
        return _consolidate([_rt(y, kw) for y in x])
    return _tensorize(x, kw)


def _decoded(t, c, dec):
    """Column c of t as decoded Python values (datasets' decode_column)."""
    f = dec[c]
    return [_media.decode(f, v) for v in t.column(c).to_pylist()]


def _numpy(t, query, features, kw, dec=None):
    cols = {c: _decoded(t, c, dec) if dec and c in dec else _np_extract(t.column(c), features.get(c))
            for c in t.column_names}
    if query == "row":
        return {c: _rt(a[0], kw) for c, a in cols.items()}
    out = {c: _consolidate(_rt(a, kw)) for c, a in cols.items()}
    if query == "column":
        return out[t.column_names[0]]
    return out


def _torch_image(x, kw):
    """A decoded value as datasets' TorchFormatter gives it: images as
    (channels, height, width) tensors of their own dtype."""
    import numpy as np
    import torch
    if isinstance(x, dict):
        return {k: _torch_image(v, kw) for k, v in x.items()}
    if isinstance(x, list):
        out = [_torch_image(v, kw) for v in x]
        if out and all(isinstance(v, torch.Tensor) and v.shape == out[0].shape
                       and v.dtype == out[0].dtype for v in out):
            return torch.stack(out)
        return out
    if type(x).__module__.startswith("PIL.") and hasattr(x, "mode"):
        a = np.asarray(x)
        if a.ndim == 2:
            a = a[:, :, np.newaxis]
        return torch.as_tensor(np.ascontiguousarray(a.transpose((2, 0, 1))), **kw)
    return x


def _torch(t, query, features, kw, dec=None):
    media = [c for c in t.column_names if dec and c in dec]
    if not media:
        return _torch_plain(t, query, features, kw)
    rest = t.drop_columns(media)
    out = _torch_plain(rest, query, features, kw) if rest.num_columns else {}
    for c in media:
        vals = _decoded(t, c, dec)
        v = _torch_image(vals[0] if query == "row" else vals, kw)
        if query == "column":
            return v
        out[c] = v
    return {c: out[c] for c in t.column_names}


def _torch_plain(t, query, features, kw):
    import numpy as np
    import torch

    def conv(x):
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, (np.character, np.ndarray)) and np.issubdtype(x.dtype, np.character):
            return x.tolist()  # strings stay Python str (lists of them), as datasets
        if isinstance(x, np.ndarray) and x.dtype == object:
            return [conv(y) for y in x]
        if isinstance(x, (np.ndarray, np.number, np.bool_)) and \
                not np.issubdtype(np.asarray(x).dtype, np.character):
            a = np.asarray(x)
            dt = {}
            if np.issubdtype(a.dtype, np.integer):
                dt = {"dtype": torch.int64}
            elif np.issubdtype(a.dtype, np.floating):
                dt = {"dtype": torch.float32}
            return torch.as_tensor(a, **{**dt, **kw})
        return x
    return conv(_numpy(t, query, features, {}))


def _pandas(t, query, dec=None):
    df = t.slice(0, 1).to_pandas() if query == "row" else t.to_pandas()
    for c, f in (dec or {}).items():  # datasets' PandasFeaturesDecoder
        if c in df.columns:
            df[c] = df[c].map(lambda v, f=f: _media.decode(f, v))
    if query == "row":
        return df
    return df[t.column_names[0]] if query == "column" else df


def _polars(t, query):
    import polars as pl
    df = pl.from_arrow(t)
    if query == "row":
        return df.head(1)
    return df.to_series(0) if query == "column" else df


def _format_table(t, query, state, features):
    typ = state["type"]
    kw = state["format_kwargs"]
    if typ == "arrow":
        return t.column(0) if query == "column" else t
    dec = _media.decoders(features)
    if typ == "numpy":
        return _numpy(t, query, features, kw, dec)
    if typ == "torch":
        return _torch(t, query, features, kw, dec)
    if typ == "pandas":
        return _pandas(t, query, dec)
    if typ == "polars":
        return _polars(t, query)
    d = _media.decode_batch(dec, t.to_pydict()) if dec else t.to_pydict()
    if typ == "custom":
        b = kw["transform"](d)
        if query == "row":
            try:
                return {k: v[0] for k, v in b.items()}
            except Exception as exc:
                raise TypeError("a transform must return a dict of sequences to pick a row, "
                                f"got {type(b).__name__}") from exc
        if query == "column":
            if not hasattr(b, "keys") or len(b.keys()) != 1:
                raise TypeError("a transform must return a dict of one column to read a column")
            return b[t.column_names[0]]
        return b
    if query == "row":
        return {k: v[0] for k, v in d.items()}
    return d[t.column_names[0]] if query == "column" else d


def _query(key):
    if isinstance(key, str):
        return "column"
    if isinstance(key, slice) or hasattr(key, "ndim") or isinstance(key, (list, tuple, range)):
        return "batch"
    return "row"


def _python_rows(ds, key, cols):
    """Python values from C for `key`, of columns `cols` (None: all), with
    Image / Audio values decoded as datasets' PythonFormatter does."""
    src = ds if cols is None else ds.select_columns(cols)
    out = src._getitem_python(key)
    dec = _media.decoders(src.features)
    if not dec or isinstance(key, str):
        return out
    return _media.decode_row(dec, out) if _query(key) == "row" else _media.decode_batch(dec, out)


def _format(ds, t_of, key, query, state):
    """ds[key] in `state`'s format; t_of(columns) gives the Arrow table."""
    cols = state["columns"]
    if cols is not None:  # in the dataset's order, as datasets drops the others
        cols = [c for c in ds.column_names if c in cols]
    if state["type"] is None:
        out = _python_rows(ds, key, cols)
    else:
        t = t_of()
        out = _format_table(t if cols is None else t.select(cols), query, state, ds.features)
    if state["output_all_columns"] and cols is not None and query != "column":
        rest = [c for c in ds.column_names if c not in cols]
        if rest:
            if not isinstance(out, dict):
                raise TypeError("output_all_columns=True needs a format returning dicts, got "
                                f"{type(out).__name__}")
            out.update(_python_rows(ds, key, rest))
    return out


class Column:
    """A lazy column (datasets 5's Column): indexing and iteration read only
    what they touch, in the dataset's format. Unlike datasets', it compares
    equal to a list (or Column) of the same values."""

    def __init__(self, source, column_name):
        if column_name not in source.column_names:
            raise ValueError(f"Column '{column_name}' doesn't exist.")
        self.source = source
        self.column_name = column_name

    def _src(self):
        s = self.source
        if _state(s)["type"] == "custom":
            return s  # the transform may need every column
        return s.select_columns([self.column_name])

    def __len__(self):
        return len(self.source)

    def __iter__(self):
        src = self._src()
        if src._format is None and not _media.decoders(src.features):
            for b in src.iter_batches(1000):  # Python values from C, a batch at a time
                yield from b.to_pydict()[self.column_name]
            return
        for row in src:
            yield row[self.column_name]

    def __getitem__(self, key):
        if isinstance(key, str):
            raise TypeError("nested columns are not supported by quiver's Column")
        return self._src()[key][self.column_name]

    def __eq__(self, other):
        if isinstance(other, (list, Column)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        head = list(self[:5]) if len(self) else []
        return "Column(" + repr(head)[:-1] + (", ...])" if len(self) > 5 else "])")


def getitem(ds, key):
    state = _state(ds)
    if isinstance(key, str):
        if key not in ds.column_names:
            return ds._getitem_python(key)  # raises quiver's KeyError
        if state["type"] not in ("arrow", "pandas", "polars"):
            return Column(ds, key)
        t_of = lambda: _table(ds._arrow(key))  # noqa: E731
        cols = state["columns"]
        if cols is not None and key not in cols:
            return ds._getitem_python(key)
        return _format_table(t_of(), "column", state, ds.features)
    query = _query(key)
    return _format(ds, lambda: _table(ds._arrow(key)), key, query, state)


def getitems(ds, keys):
    batch = ds[keys]
    n = len(batch[next(iter(batch))])
    return [{c: a[i] for c, a in batch.items()} for i in range(n)]


def iterate(ds, batch_size=None, drop_last_batch=False):
    """ds.iter(): rows (batch_size=None) or batches, in the dataset's format."""
    # the C iterator checks batch_size now, not at the first next()
    batches = ds.iter_batches(1000 if batch_size is None else batch_size, drop_last_batch)
    state = _state(ds)
    if batch_size is not None and state["type"] == "numpy" and state["columns"] is None \
            and not _media.decoders(ds.features):
        # with an indices mapping, each batch's rows are copied from the
        # mapped data straight into the numpy arrays (no Arrow batch first)
        it = ds._numpy_iter(batch_size, drop_last_batch)
        if it is not None:
            return _numpy_mapped(ds, it, state["format_kwargs"])
    return _iter(ds, state, batches, batch_size is None)


def _numpy_mapped(ds, it, kw):
    feats = []
    for pos, m, cols in it:
        yield _numpy_batch(ds, cols, kw, feats,
                           lambda pos=pos, m=m: _table(ds._arrow(slice(pos, pos + m))))


def _numpy_batch(ds, cols, kw, feats, table_of):
    """A batch in the numpy format: the columns the C side converts
    (`cols`, from Batch._numpy_columns or Dataset._numpy_iter: views or
    copies of null-free fixed-width numbers, '<U' arrays of null-free
    strings), the others as _numpy does from the batch's Arrow table
    (`table_of()`); `feats` holds ds.features once a column needs it."""
    out = {}
    t = None
    for c, a in cols.items():
        if a is None:
            if t is None:
                t = table_of()
            if not feats:
                feats.append(ds.features)
            a = _consolidate(_rt(_np_extract(t.column(c), feats[0].get(c)), kw))
        else:
            a = _tensorize(a, kw)
        out[c] = a
    return out


def _iter(ds, state, batches, rows):
    pos = 0
    dec = _media.decoders(ds.features)
    feats = []
    for b in batches:
        n = b.num_rows
        if state["type"] == "numpy" and state["columns"] is None and not rows and not dec:
            yield _numpy_batch(ds, b._numpy_columns(), state["format_kwargs"], feats,
                               lambda b=b: _table(b))
            pos += n
            continue
        if state["type"] is None and state["columns"] is None:
            if rows:
                yield from (_media.decode_row(dec, r) for r in b.to_pylist()) if dec \
                    else b.to_pylist()
            else:
                yield _media.decode_batch(dec, b.to_pydict()) if dec else b.to_pydict()
            pos += n
            continue
        t = _table(b)
        if rows:
            for i in range(n):
                yield _format(ds, lambda i=i: t.slice(i, 1), pos + i, "row", state)
        else:
            yield _format(ds, lambda: t, slice(pos, pos + n), "batch", state)
        pos += n
