"""quiver.load_dataset, Dataset.from_parquet/from_csv/from_json/to_csv/to_json/to_parquet.

The argument semantics of `datasets` (data_files as a str, list or dict of
split -> files, with globs; split None -> a DatasetDict, a name -> that
split) over quiver's C readers and writers: Parquet and JSON Lines are read
by the dataset layer's one open path (quiver.open), CSV by the C reader in
the types datasets gets through pandas.read_csv (_quiver._read_csv), and
to_csv / to_json / to_parquet go through the C writers (_quiver._write_text). Nothing
per row is computed here. See docs/python.md, "Parquet, CSV and JSON".
"""
import glob
import os

from . import _quiver

__all__ = ["load_dataset"]

_BUILDERS = ("parquet", "csv", "json")


def _not_found(msg):
    return _quiver.QuiverFileNotFoundError(msg)


def _expand(pattern, base):
    """The files one data_files entry names: a path, or a glob (sorted)."""
    if not isinstance(pattern, (str, os.PathLike)):
        raise _quiver.QuiverTypeError(
            f"data_files entries must be str or os.PathLike, found {type(pattern).__name__}")
    p = os.fspath(pattern)
    full = p if base is None or os.path.isabs(p) else os.path.join(base, p)
    if glob.has_magic(full):
        found = sorted(f for f in glob.glob(full, recursive=True) if os.path.isfile(f))
        if not found:
            raise _not_found(f"Unable to find '{full}'")
        return found
    if not os.path.exists(full):
        raise _not_found(f"Unable to find '{full}'")
    if os.path.isdir(full):
        found = sorted(os.path.join(full, f) for f in os.listdir(full)
                       if os.path.isfile(os.path.join(full, f)))
        if not found:
            raise _not_found(f"Unable to find data files in '{full}'")
        return found
    return [full]


def _files(entry, base=None):
    if isinstance(entry, (str, os.PathLike)):
        entry = [entry]
    out = []
    for e in entry:
        out.extend(_expand(e, base))
    return out


def _resolve(data_files, base=None):
    """data_files as datasets reads it: {split: [paths]} (a str or list is 'train')."""
    if data_files is None:
        raise _quiver.QuiverValueError(
            "data_files is required for the packaged builders parquet, csv and json")
    if isinstance(data_files, dict):
        if not data_files:
            raise _quiver.QuiverValueError("data_files is an empty dict")
        if "all" in data_files:
            raise _quiver.QuiverValueError(
                "`all` is a special split keyword (the union of all splits), as in datasets")
        return {str(k): _files(v, base) for k, v in data_files.items()}
    return {"train": _files(data_files, base)}


def _read_one(builder, path, kwargs):
    if builder == "csv":
        delim = kwargs.get("sep", kwargs.get("delimiter"))
        if delim is None and path.lower().endswith(".tsv"):
            delim = ","  # datasets' csv builder uses sep="," whatever the extension
        return _quiver._read_csv(path, delim)
    if not os.path.exists(path):
        raise _not_found(f"Unable to find '{path}'")
    kind = _quiver._sniff(path)  # the open path reads any format: hold it to the builder's
    if kind != builder:
        raise _quiver.QuiverError(
            f"{path}: not a {'Parquet' if builder == 'parquet' else 'JSON Lines'} file "
            f"(it holds {kind}) for load_dataset({builder!r})")
    return _quiver.open(path)


_KNOWN_KWARGS = {"csv": {"sep", "delimiter"}, "json": set(), "parquet": set()}


def _read_files(builder, paths, split=None, features=None, kwargs=None):
    kwargs = kwargs or {}
    unknown = set(kwargs) - _KNOWN_KWARGS[builder]
    if unknown:
        raise _quiver.QuiverValueError(
            f"{builder}: unsupported option(s) {sorted(unknown)} (docs/python.md)")
    parts = [_read_one(builder, p, kwargs) for p in paths]
    ds = parts[0] if len(parts) == 1 else _quiver.concatenate_datasets(parts)
    if features is not None:
        if not hasattr(ds, "cast"):
            raise _quiver.QuiverValueError("features= needs Dataset.cast, not available here")
        ds = ds.cast(features)
    return ds


def load_dataset(path, name=None, data_dir=None, data_files=None, split=None, **kwargs):
    """datasets.load_dataset for the packaged builders "parquet", "csv" and "json".

    data_files: a path or glob, a list of them (the split 'train'), or a dict
    {split: path(s)}; relative to data_dir when given. split=None returns a
    quiver.DatasetDict of every split, split="name" that split's Dataset.
    Raises QuiverFileNotFoundError (a FileNotFoundError) for a file or glob
    that matches nothing, QuiverKeyError (a ValueError) for an unknown split,
    and QuiverError with the reader's file/line/column for a malformed file.
    """
    if path not in _BUILDERS:
        raise _quiver.QuiverValueError(
            f"quiver.load_dataset reads the builders {list(_BUILDERS)}; found {path!r} "
            "(use quiver.open or quiver.load_from_disk for Arrow data)")
    features = kwargs.pop("features", None)
    for ignored in ("cache_dir", "keep_in_memory", "download_mode", "num_proc",
                    "verification_mode", "streaming"):
        if kwargs.pop(ignored, None) not in (None, False):
            raise _quiver.QuiverValueError(f"load_dataset: {ignored}= is not supported")
    files = _resolve(data_files, data_dir)
    if split is not None:
        split = str(split)
        if split not in files:
            raise _quiver.QuiverKeyError(
                f'Unknown split "{split}". Should be one of {list(files)}.')
        return _read_files(path, files[split], split, features, kwargs)
    from .dataset_dict import DatasetDict
    return DatasetDict({s: _read_files(path, f, s, features, kwargs) for s, f in files.items()})


def _from(builder, path_or_paths, split=None, features=None, cache_dir=None,
          keep_in_memory=False, **kwargs):
    if isinstance(path_or_paths, dict):
        raise _quiver.QuiverTypeError(
            f"from_{builder} takes a path or a list of paths (load_dataset takes a dict)")
    return _read_files(builder, _files(path_or_paths), split, features, kwargs)


def from_parquet(path_or_paths, split=None, features=None, cache_dir=None, keep_in_memory=False,
                 **kwargs):
    """Dataset.from_parquet: the rows of one or more Parquet files, in order."""
    return _from("parquet", path_or_paths, split, features, cache_dir, keep_in_memory, **kwargs)


def from_csv(path_or_paths, split=None, features=None, cache_dir=None, keep_in_memory=False,
             **kwargs):
    """Dataset.from_csv: CSV files typed as datasets types them (via pandas)."""
    return _from("csv", path_or_paths, split, features, cache_dir, keep_in_memory, **kwargs)


def from_json(path_or_paths, split=None, features=None, cache_dir=None, keep_in_memory=False,
              **kwargs):
    """Dataset.from_json: the rows of one or more JSON Lines files, in order."""
    return _from("json", path_or_paths, split, features, cache_dir, keep_in_memory, **kwargs)


def _target(path_or_buf, what):
    if not isinstance(path_or_buf, (str, os.PathLike)):
        raise _quiver.QuiverTypeError(
            f"{what}: quiver writes to a path (str or os.PathLike), found "
            f"{type(path_or_buf).__name__}")
    return os.fspath(path_or_buf)


def _batch(batch_size):
    if batch_size is None:
        return 10000
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise _quiver.QuiverValueError(f"batch_size must be a positive int, found {batch_size!r}")
    return batch_size


def to_csv(ds, path_or_buf, batch_size=None, num_proc=None, storage_options=None,
           **to_csv_kwargs):
    """Dataset.to_csv: a header row and one row per dataset row (index=False,
    as datasets writes by default); returns the number of bytes written."""
    path = _target(path_or_buf, "to_csv")
    sep = to_csv_kwargs.pop("sep", None)
    if to_csv_kwargs.pop("index", False):
        raise _quiver.QuiverValueError("to_csv: index=True is not supported")
    if to_csv_kwargs:
        raise _quiver.QuiverValueError(
            f"to_csv: unsupported option(s) {sorted(to_csv_kwargs)} (docs/python.md)")
    _quiver._write_text(ds, path, "csv", sep, _batch(batch_size))
    return os.path.getsize(path)


def to_json(ds, path_or_buf, batch_size=None, num_proc=None, storage_options=None,
            **to_json_kwargs):
    """Dataset.to_json: JSON Lines, one object per row (datasets' default
    orient="records", lines=True); returns the number of bytes written."""
    path = _target(path_or_buf, "to_json")
    orient = to_json_kwargs.pop("orient", "records")
    lines = to_json_kwargs.pop("lines", True if orient == "records" else False)
    if orient != "records" or not lines:
        raise _quiver.QuiverValueError(
            "to_json writes JSON Lines only (orient='records', lines=True)")
    if to_json_kwargs:
        raise _quiver.QuiverValueError(
            f"to_json: unsupported option(s) {sorted(to_json_kwargs)} (docs/python.md)")
    _quiver._write_text(ds, path, "json", None, _batch(batch_size))
    return os.path.getsize(path)


def to_parquet(ds, path_or_buf, batch_size=None, storage_options=None, **parquet_writer_kwargs):
    """Dataset.to_parquet: the rows as one Parquet file (snappy, pyarrow's
    default, as datasets writes); returns the number of bytes written."""
    path = _target(path_or_buf, "to_parquet")
    if parquet_writer_kwargs:
        raise _quiver.QuiverValueError(
            f"to_parquet: unsupported option(s) {sorted(parquet_writer_kwargs)} (docs/python.md)")
    _quiver._write_text(ds, path, "parquet", None, _batch(batch_size))
    return os.path.getsize(path)
