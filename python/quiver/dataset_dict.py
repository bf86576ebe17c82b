"""quiver.dataset_dict — `DatasetDict` (split name -> Dataset, as datasets'
DatasetDict) and `load_from_disk` (python/ layer, pure Python glue: every
transform is the split Dataset's own method, one C call each; saving is
qv_dataset_dict_save_to_disk through the extension).
"""
import os
import re

from . import _api, _quiver

__all__ = ["DatasetDict", "load_from_disk"]


class DatasetDict(dict):
    """A dict of split name -> quiver.Dataset. Transforms apply to every
    split and return a new DatasetDict; the properties are dicts by split."""

    def _check_values_type(self):
        for name, ds in self.items():
            if not isinstance(ds, _quiver.Dataset):
                raise TypeError(f"Values in `DatasetDict` should be of type `Dataset` but got "
                                f"type '{type(ds)}' for split {name!r}")

    def _apply(self, method, *args, **kwargs):
        self._check_values_type()
        return DatasetDict({k: getattr(ds, method)(*args, **kwargs) for k, ds in self.items()})

    # -- properties, as dicts by split
    @property
    def num_rows(self):
        self._check_values_type()
        return {k: ds.num_rows for k, ds in self.items()}

    @property
    def num_columns(self):
        self._check_values_type()
        return {k: ds.num_columns for k, ds in self.items()}

    @property
    def column_names(self):
        self._check_values_type()
        return {k: ds.column_names for k, ds in self.items()}

    @property
    def shape(self):
        self._check_values_type()
        return {k: (ds.num_rows, ds.num_columns) for k, ds in self.items()}

    @property
    def cache_files(self):
        self._check_values_type()
        return {k: ds.cache_files for k, ds in self.items()}

    def __repr__(self):
        body = "\n".join(f"{k}: {v}" for k, v in self.items())
        body = re.sub(r"^", " " * 4, body, flags=re.M)
        return f"DatasetDict({{\n{body}\n}})"

    # -- per-split transforms
    def map(self, *args, **kwargs):
        """Dataset.map on every split (same arguments)."""
        return self._apply("map", *args, **kwargs)

    def filter(self, *args, **kwargs):
        """Dataset.filter on every split (same arguments)."""
        return self._apply("filter", *args, **kwargs)

    def sort(self, *args, **kwargs):
        """Dataset.sort on every split (same arguments)."""
        return self._apply("sort", *args, **kwargs)

    def flatten_indices(self, *args, **kwargs):
        """Dataset.flatten_indices on every split."""
        return self._apply("flatten_indices", *args, **kwargs)

    def select_columns(self, column_names):
        """Dataset.select_columns on every split."""
        return self._apply("select_columns", column_names)

    def remove_columns(self, column_names):
        """Dataset.remove_columns on every split."""
        return self._apply("remove_columns", column_names)

    def rename_column(self, original_column_name, new_column_name):
        """Dataset.rename_column on every split."""
        return self._apply("rename_column", original_column_name, new_column_name)

    def rename_columns(self, column_mapping):
        """Dataset.rename_columns on every split."""
        return self._apply("rename_columns", column_mapping)

    def with_format(self, *args, **kwargs):
        """Dataset.with_format on every split (when Dataset has it)."""
        return self._apply("with_format", *args, **kwargs)

    def shuffle(self, seeds=None, seed=None, *, cache=False):
        """Dataset.shuffle on every split: `seed` (or an int `seeds`) for all
        of them, or `seeds` a dict split -> seed (None: drawn at random)."""
        self._check_values_type()
        if seed is not None and seeds is not None:
            raise ValueError("Please specify seed or seeds, but not both")
        seeds = seed if seed is not None else seeds
        if seeds is None:
            seeds = dict.fromkeys(self)
        elif not isinstance(seeds, dict):
            seeds = dict.fromkeys(self, seeds)
        return DatasetDict({k: ds.shuffle(seeds[k], cache=cache) for k, ds in self.items()})

    def save_to_disk(self, dataset_dict_path, max_shard_size=None, num_shards=None):
        """Write datasets' DatasetDict layout (one save_to_disk directory per
        split and dataset_dict.json) atomically as a whole. `num_shards` is
        an int for every split or a dict split -> int."""
        self._check_values_type()
        for k in self:
            if not isinstance(k, str) or not k or "/" in k or k in (".", ".."):
                raise _quiver.QuiverValueError(f"split name {k!r} is not a single path component")
        if isinstance(num_shards, dict):
            missing = set(self) - set(num_shards)
            if missing:
                raise _quiver.QuiverValueError(f"num_shards has no entry for split(s) "
                                               f"{sorted(missing)}")
            if len(set(num_shards[k] for k in self)) > 1:
                raise _quiver.QuiverValueError("quiver saves every split with one num_shards: "
                                               "give one int, or the same for every split")
            num_shards = num_shards[next(iter(self))] if self else None
        _quiver._dataset_dict_save_to_disk([_api._for_save(d) for d in self.values()],
                                           list(self.keys()),
                                           dataset_dict_path, max_shard_size, num_shards)

    @staticmethod
    def load_from_disk(dataset_dict_path):
        """The DatasetDict of a DatasetDict directory (dataset_dict.json)."""
        path = os.fspath(dataset_dict_path)
        if not os.path.isfile(os.path.join(path, "dataset_dict.json")):
            raise _quiver.QuiverFileNotFoundError(
                f"No such file: '{os.path.join(path, 'dataset_dict.json')}': {path!r} is not a "
                "DatasetDict directory")
        return DatasetDict({name: _quiver.open(path, split=name)
                            for name in _quiver._dataset_dict_splits(path)})


def load_from_disk(dataset_path):
    """As datasets.load_from_disk: a Dataset for a save_to_disk directory of
    a Dataset (dataset_info.json and state.json), a DatasetDict for one of a
    DatasetDict (dataset_dict.json); FileNotFoundError otherwise."""
    path = os.fspath(dataset_path)
    if not os.path.exists(path):
        raise _quiver.QuiverFileNotFoundError(f"Directory {path} not found")
    if (os.path.isfile(os.path.join(path, "dataset_info.json"))
            and os.path.isfile(os.path.join(path, "state.json"))):
        return _quiver.open(path)
    if os.path.isfile(os.path.join(path, "dataset_dict.json")):
        return DatasetDict.load_from_disk(path)
    raise _quiver.QuiverFileNotFoundError(
        f"Directory {path} is neither a `Dataset` directory nor a `DatasetDict` directory.")
