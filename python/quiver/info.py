"""DatasetInfo, as datasets 5.2's (python/ layer, plain Python data).

`Dataset.info` builds one from the dataset's dataset_info.json
(qv_dataset_info_json: the info the dataset was opened or built with, with
its current features); `to_dict()` is datasets' `asdict(info)`, which is
what save_to_disk writes (keys sorted), so an info round-trips
dataset_info.json through either library. Nested parts datasets keeps as
objects (`version`, `splits`, `supervised_keys`, `post_processed`) are kept
as their dicts. docs/python.md, "DatasetInfo".
"""
import copy
import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Optional

from .features import Features, _asdict

__all__ = ["DatasetInfo"]


def _version_dict(v):
    """datasets' asdict(Version(v)) for a version string."""
    parts = str(v).split(".")
    try:
        major, minor, patch = (int(p) for p in parts)
    except ValueError:
        raise ValueError(f"Invalid version '{v}'. Format should be x.y.z with {{x,y,z}} being "
                         "digits.") from None
    return {"version_str": str(v), "major": major, "minor": minor, "patch": patch}


@dataclass(eq=False)
class DatasetInfo:
    """datasets.DatasetInfo's fields, defaults and dict form."""
    description: str = field(default_factory=str)
    citation: str = field(default_factory=str)
    homepage: str = field(default_factory=str)
    license: str = field(default_factory=str)
    features: Optional[Features] = None
    post_processed: Optional[dict] = None
    supervised_keys: Optional[dict] = None
    builder_name: Optional[str] = None
    dataset_name: Optional[str] = None
    config_name: Optional[str] = None
    version: Optional[dict] = None
    splits: Optional[dict] = None
    download_checksums: Optional[dict] = None
    download_size: Optional[int] = None
    post_processing_size: Optional[int] = None
    dataset_size: Optional[int] = None
    size_in_bytes: Optional[int] = None

    def __post_init__(self):
        if self.features is not None and not isinstance(self.features, Features):
            self.features = Features.from_dict(_asdict(dict(self.features)))
        if self.version is not None and not isinstance(self.version, dict):
            self.version = _asdict(self.version) if dataclasses.is_dataclass(self.version) \
                else _version_dict(self.version)
        for name in ("post_processed", "supervised_keys", "splits"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, dict):
                if name == "supervised_keys" and isinstance(v, (tuple, list)):
                    v = dict(zip(("input", "output"), v))
                setattr(self, name, _asdict(v))

    def to_dict(self):
        """datasets' asdict(info): every field that is not its default (the
        four strings always), features as Features.to_dict()."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "features" and v is not None:
                v = v.to_dict()
            else:
                v = copy.deepcopy(_asdict(v))
            if v != f.default:
                out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, dataset_info_dict):
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in dataset_info_dict.items() if k in names})

    @classmethod
    def from_directory(cls, dataset_info_dir, storage_options=None):
        if not dataset_info_dir:
            raise ValueError("Calling DatasetInfo.from_directory() with undefined "
                             "dataset_info_dir.")
        with open(os.path.join(dataset_info_dir, "dataset_info.json"), encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    def copy(self):
        return self.__class__(**{k: copy.deepcopy(v) for k, v in self.__dict__.items()})

    def update(self, other_dataset_info, ignore_none=True):
        self.__dict__.update({k: copy.deepcopy(v) for k, v in other_dataset_info.__dict__.items()
                              if v is not None or not ignore_none})
        self.__post_init__()

    def __eq__(self, other):
        """Equal to a DatasetInfo of quiver's or datasets' with the same dict."""
        if type(other).__name__ != "DatasetInfo" or not dataclasses.is_dataclass(other):
            return NotImplemented
        o = DatasetInfo.from_dict({f.name: getattr(other, f.name)
                                   for f in dataclasses.fields(other)})
        return self.to_dict() == o.to_dict()

    __hash__ = None

    def __repr__(self):
        return "DatasetInfo(" + ", ".join(
            f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
            if getattr(self, f.name)) + ")"

