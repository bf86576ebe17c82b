"""quiver.features — `Features` and the feature classes, interoperable with
Hugging Face `datasets` 5.2 (python/ layer, pure Python: these are plain
data holders; nothing here reads rows).

`Dataset.features` returns a `Features` built from the dict the C extension
gives (datasets' `Features.to_dict()` form, from the files' metadata).
`to_dict()` / `Features.from_dict()` give and take exactly the dicts
`datasets.Features.to_dict()` / `from_dict` do, so
`datasets.Features.from_dict(q.to_dict())` rebuilds datasets' own object.
Feature objects compare equal to datasets' objects of the same `_type` and
fields. pyarrow is imported only by `Features.type` and the features'
`__call__` (their Arrow type); quiver imports without it.
"""
import collections.abc
import dataclasses
import re
from dataclasses import InitVar, dataclass, field
from typing import Any, ClassVar, Optional

__all__ = ["Features", "Value", "ClassLabel", "List", "Sequence", "LargeList", "Array2D",
           "Array3D", "Array4D", "Array5D", "Image", "Audio", "Video", "Pdf", "Nifti", "Mesh",
           "BioSequence", "BioStructure", "Json", "Translation", "TranslationVariableLanguages"]

_SIMPLE = {"null", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "float16", "float32", "float64", "date32", "date64", "binary",
           "large_binary", "binary_view", "string", "large_string", "string_view"}
_UNITS = ("s", "ms", "us", "ns")


def _parse_dtype(dtype):
    """('simple', name) | ('timestamp', unit, tz) | ('duration', unit) |
    ('time32'|'time64', unit) | ('decimal128'|'decimal256', p, s) |
    ('fixed_size_binary', n), or ValueError as datasets' string_to_arrow."""
    if not isinstance(dtype, str):
        raise ValueError(f"Value dtype must be a string, got {dtype!r}")
    if dtype == "json":
        raise ValueError("'json' is not a valid dtype, use the Json() feature instead")
    if dtype in _SIMPLE:
        return ("simple", dtype)
    m = re.fullmatch(r"timestamp\[(\w+)(?:, tz=(.+))?\]", dtype)
    if m and m.group(1) in _UNITS:
        return ("timestamp", m.group(1), m.group(2))
    m = re.fullmatch(r"duration\[(\w+)\]", dtype)
    if m and m.group(1) in _UNITS:
        return ("duration", m.group(1))
    m = re.fullmatch(r"time(32|64)\[(\w+)\]", dtype)
    if m and m.group(2) in (("s", "ms") if m.group(1) == "32" else ("us", "ns")):
        return ("time" + m.group(1), m.group(2))
    m = re.fullmatch(r"decimal(128|256)\((\d+), *(-?\d+)\)", dtype)
    if m:
        return ("decimal" + m.group(1), int(m.group(2)), int(m.group(3)))
    m = re.fullmatch(r"fixed_size_binary\[(\d+)\]", dtype)
    if m:
        return ("fixed_size_binary", int(m.group(1)))
    raise ValueError(f"Value dtype {dtype!r} is not a datasets dtype (a pyarrow type name such "
                     "as 'int32', 'string', 'timestamp[ms, tz=UTC]', 'decimal128(10, 2)')")


def _arrow(spec):
    import pyarrow as pa
    kind = spec[0]
    if kind == "simple":
        return getattr(pa, "bool_" if spec[1] == "bool" else spec[1])()
    if kind == "timestamp":
        return pa.timestamp(spec[1], spec[2])
    if kind == "fixed_size_binary":
        return pa.binary(spec[1])
    return getattr(pa, kind)(*spec[1:])


class _Feature:
    """Common behaviour: equality with any feature object (quiver's or
    datasets') of the same `_type` and fields, through to_dict()."""
    __hash__ = None

    def __eq__(self, other):
        if not (dataclasses.is_dataclass(other) and not isinstance(other, type)
                and getattr(other, "_type", None) == self._type):
            return NotImplemented
        return _asdict(self) == _asdict(other)

    def to_dict(self):
        """datasets' asdict() of this feature (a new dict)."""
        return _asdict(self)


@dataclass(repr=False, eq=False)
class Value(_Feature):
    """A scalar of a datasets dtype ('int32', 'string', 'timestamp[ms]'...;
    'float' and 'double' become 'float32' and 'float64')."""
    dtype: str
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Value", init=False, repr=False)

    def __post_init__(self):
        if self.dtype == "double":
            self.dtype = "float64"
        if self.dtype == "float":
            self.dtype = "float32"
        _parse_dtype(self.dtype)

    @property
    def pa_type(self):
        """The pyarrow type (imports pyarrow)."""
        return _arrow(_parse_dtype(self.dtype))

    def __call__(self):
        return self.pa_type

    def __repr__(self):
        return f"{type(self).__name__}('{self.dtype}')"


class _ArrayXD(_Feature):
    def __post_init__(self):
        self.shape = tuple(self.shape)
        _parse_dtype(self.dtype)

    def __call__(self):
        """datasets' Array<N>DExtensionType when datasets is importable, else
        its storage type (nested lists of the dtype)."""
        try:
            from datasets.features import features as hf
        except ImportError:
            t = _arrow(_parse_dtype(self.dtype))
            import pyarrow as pa
            for _ in self.shape:
                t = pa.list_(t)
            return t
        return getattr(hf, type(self).__name__ + "ExtensionType")(self.shape, self.dtype)


@dataclass(eq=False)
class Array2D(_ArrayXD):
    """A 2-D array of `shape` (the first dimension may be None) and `dtype`."""
    shape: tuple
    dtype: str
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Array2D", init=False, repr=False)


@dataclass(eq=False)
class Array3D(_ArrayXD):
    """A 3-D array of `shape` (the first dimension may be None) and `dtype`."""
    shape: tuple
    dtype: str
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Array3D", init=False, repr=False)


@dataclass(eq=False)
class Array4D(_ArrayXD):
    """A 4-D array of `shape` (the first dimension may be None) and `dtype`."""
    shape: tuple
    dtype: str
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Array4D", init=False, repr=False)


@dataclass(eq=False)
class Array5D(_ArrayXD):
    """A 5-D array of `shape` (the first dimension may be None) and `dtype`."""
    shape: tuple
    dtype: str
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Array5D", init=False, repr=False)


@dataclass(eq=False)
class ClassLabel(_Feature):
    """Integer class labels with names (from `names`, `names_file` — one
    name a line — or `num_classes`: '0'..'n-1'); -1 means no label."""
    num_classes: InitVar[Optional[int]] = None
    names: list = None
    names_file: InitVar[Optional[str]] = None
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="ClassLabel", init=False, repr=False)
    dtype: ClassVar[str] = "int64"

    def __post_init__(self, num_classes, names_file):
        self.num_classes = num_classes
        self.names_file = names_file
        if names_file is not None and self.names is not None:
            raise ValueError("Please provide either names or names_file but not both.")
        if self.names is None:
            if names_file is not None:
                with open(names_file, encoding="utf-8") as f:
                    self.names = [n.strip() for n in f.read().split("\n") if n.strip()]
            elif num_classes is not None:
                self.names = [str(i) for i in range(num_classes)]
            else:
                raise ValueError("Please provide either num_classes, names or names_file.")
        elif not isinstance(self.names, collections.abc.Sequence):
            raise TypeError(f"Please provide names as a list, is {type(self.names)}")
        if self.num_classes is None:
            self.num_classes = len(self.names)
        elif self.num_classes != len(self.names):
            raise ValueError("ClassLabel number of names do not match the defined num_classes. "
                             f"Got {len(self.names)} names VS {self.num_classes} num_classes")
        self._int2str = [str(n) for n in self.names]
        self._str2int = {n: i for i, n in enumerate(self._int2str)}
        if len(self._int2str) != len(self._str2int):
            raise ValueError("Some label names are duplicated. Each label name should be unique.")

    @property
    def pa_type(self):
        import pyarrow as pa
        return pa.int64()

    def __call__(self):
        return self.pa_type

    def str2int(self, values):
        """The integer of a name (a str), or a list of them (any iterable);
        a name may also be the integer's text. ValueError for unknown ones."""
        if isinstance(values, str):
            return self._one_str2int(values)
        if not hasattr(values, "__iter__"):
            raise ValueError(f"Values {values} should be a string or an Iterable (list, numpy "
                             "array, pytorch, tensorflow tensors)")
        return [self._one_str2int(v) for v in values]

    def _one_str2int(self, value):
        value = str(value)
        i = self._str2int.get(value)
        if i is None:
            i = self._str2int.get(value.strip())
        if i is None:
            try:
                i = int(value)
            except ValueError:
                i = None
            if i is not None and not -1 <= i < self.num_classes:
                i = None
        if i is None:
            raise ValueError(f"Invalid string class label {value}")
        return i

    def int2str(self, values):
        """The name of an integer (an int), or a list of them (any iterable).
        ValueError for values outside 0..num_classes-1 (-1 included)."""
        single = isinstance(values, int)
        if not single and not hasattr(values, "__iter__"):
            raise ValueError(f"Values {values} should be an integer or an Iterable (list, numpy "
                             "array, pytorch, tensorflow tensors)")
        vals = [values] if single else list(values)
        for v in vals:
            if not 0 <= v < self.num_classes:
                raise ValueError(f"Invalid integer class label {v:d}")
        out = [self._int2str[int(v)] for v in vals]
        return out[0] if single else out


class Sequence:
    """datasets' Sequence: `Sequence(feature, length=-1)` is a `List`, and a
    dict of features becomes a dict of Lists (TFDS compatibility)."""

    def __new__(cls, feature=None, length=-1, **kwargs):
        if (cls is Sequence and isinstance(feature, dict)
                and any(not isinstance(f, List) for f in feature.values())):
            return {k: List(f, length=length, **kwargs) for k, f in feature.items()}
        return super().__new__(List)


@dataclass(repr=False, eq=False)
class List(Sequence, _Feature):
    """A list of `feature` (pyarrow list; fixed_size_list when length >= 0)."""
    feature: Any
    length: int = -1
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="List", init=False, repr=False)

    def __repr__(self):
        if self.length != -1:
            return f"{type(self).__name__}({self.feature}, length={self.length})"
        return f"{type(self).__name__}({self.feature})"


@dataclass(repr=False, eq=False)
class LargeList(_Feature):
    """A list of `feature` with 64-bit offsets (pyarrow large_list)."""
    feature: Any
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="LargeList", init=False, repr=False)

    def __repr__(self):
        return f"{type(self).__name__}({self.feature})"


def _blob_type():
    import pyarrow as pa
    return pa.struct({"bytes": pa.binary(), "path": pa.string()})


@dataclass(eq=False)
class Image(_Feature):
    """An image stored as {bytes, path} (quiver does not decode it)."""
    mode: Optional[str] = None
    decode: bool = True
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Image", init=False, repr=False)
    dtype: ClassVar[str] = "PIL.Image.Image"

    def __call__(self):
        return _blob_type()


@dataclass(eq=False)
class Audio(_Feature):
    """Audio stored as {bytes, path} (quiver does not decode it)."""
    sampling_rate: Optional[int] = None
    decode: bool = True
    num_channels: Optional[int] = None
    stream_index: Optional[int] = None
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Audio", init=False, repr=False)
    dtype: ClassVar[str] = "dict"

    def __call__(self):
        return _blob_type()


@dataclass(eq=False)
class Video(_Feature):
    """A video stored as {bytes, path} (quiver does not decode it)."""
    decode: bool = True
    stream_index: Optional[int] = None
    dimension_order: str = "NCHW"
    num_ffmpeg_threads: int = 1
    device: Optional[str] = "cpu"
    seek_mode: str = "exact"
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Video", init=False, repr=False)

    def __call__(self):
        return _blob_type()


class _Blob(_Feature):
    def __call__(self):
        return _blob_type()


@dataclass(eq=False)
class Pdf(_Blob):
    """A PDF stored as {bytes, path} (quiver does not decode it)."""
    decode: bool = True
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Pdf", init=False, repr=False)


@dataclass(eq=False)
class Nifti(_Blob):
    """A NIfTI image stored as {bytes, path} (quiver does not decode it)."""
    decode: bool = True
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Nifti", init=False, repr=False)


@dataclass(eq=False)
class Mesh(_Blob):
    """A 3-D mesh stored as {bytes, path} (quiver does not decode it)."""
    decode: bool = True
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Mesh", init=False, repr=False)


@dataclass(eq=False)
class BioSequence(_Blob):
    """A biological sequence file stored as {bytes, path}."""
    format: str = "fasta"
    decode: bool = True
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="BioSequence", init=False, repr=False)


@dataclass(eq=False)
class BioStructure(_Blob):
    """A biological structure file stored as {bytes, path}."""
    format: str = "pdb"
    decode: bool = True
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="BioStructure", init=False, repr=False)


@dataclass(eq=False)
class Json(_Feature):
    """Arbitrary JSON values (pyarrow json extension type)."""
    decode: bool = True
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Json", init=False, repr=False)

    def __call__(self):
        import pyarrow as pa
        return pa.json_()


@dataclass(eq=False)
class Translation(_Feature):
    """One string per language: a struct of the sorted languages."""
    languages: list
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="Translation", init=False, repr=False)
    dtype: ClassVar[str] = "dict"

    def __call__(self):
        import pyarrow as pa
        return pa.struct({lang: pa.string() for lang in sorted(self.languages)})


@dataclass(eq=False)
class TranslationVariableLanguages(_Feature):
    """Any number of translations per language, stored as
    {language: [..], translation: [..]}; `languages` is kept sorted."""
    languages: Optional[list] = None
    num_languages: Optional[int] = None
    id: Optional[str] = field(default=None, repr=False)
    _type: str = field(default="TranslationVariableLanguages", init=False, repr=False)
    dtype: ClassVar[str] = "dict"

    def __post_init__(self):
        self.languages = sorted(set(self.languages)) if self.languages else None
        self.num_languages = len(self.languages) if self.languages else None

    def __call__(self):
        import pyarrow as pa
        return pa.struct({"language": pa.list_(pa.string()),
                          "translation": pa.list_(pa.string())})


# datasets' order (its "Available feature types" message lists them so)
_TYPES = {c.__name__: c for c in (Value, ClassLabel, Translation, TranslationVariableLanguages,
                                  LargeList, List, Array2D, Array3D, Array4D, Array5D, Audio,
                                  Image, Mesh, Video, Pdf, Nifti, BioSequence, BioStructure, Json)}


def _asdict(obj):
    """datasets' asdict: dataclass fields, each kept unless it is an init
    field equal to its default (so `_type` always, `id` only when set)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            v = _asdict(getattr(obj, f.name))
            if not f.init or v != f.default or f.metadata.get(
                    "include_in_asdict_even_if_is_default", False):
                out[f.name] = v
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(_asdict(v) for v in obj)
    if isinstance(obj, dict):
        return {_asdict(k): _asdict(v) for k, v in obj.items()}
    return obj


def _from_dict(obj):
    """datasets' generate_from_dict: rebuild a feature from its dict."""
    if isinstance(obj, list):
        return [_from_dict(v) for v in obj]
    if not isinstance(obj, dict):
        raise ValueError(f"a feature must be a dict or a list, got {obj!r}")
    if "_type" not in obj or isinstance(obj["_type"], dict):
        return {k: _from_dict(v) for k, v in obj.items()}
    obj = dict(obj)
    name = obj.pop("_type")
    if name == "Sequence":  # datasets < 4 dicts
        return Sequence(feature=_from_dict(obj.pop("feature")), **obj)
    cls = _TYPES.get(name)
    if cls is None:
        raise ValueError(f"Feature type '{name}' not found. Available feature types: "
                         f"{list(_TYPES)}")
    if cls in (List, LargeList):
        return cls(_from_dict(obj.pop("feature")), **obj)
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in obj.items() if k in names})


def _fix_old_lists(feature):
    """[feature] (datasets < 4) -> List(feature), recursively."""
    if isinstance(feature, list):
        if len(feature) != 1:
            raise ValueError("When defining list feature, you should just provide one example "
                             "of the inner type")
        return List(_fix_old_lists(feature[0]))
    if isinstance(feature, dict):
        return {k: _fix_old_lists(v) for k, v in feature.items()}
    if isinstance(feature, (List, LargeList)):
        feature.feature = _fix_old_lists(feature.feature)
    return feature


def _nested_type(feature):
    import pyarrow as pa
    if isinstance(feature, dict):
        return pa.struct({k: _nested_type(v) for k, v in feature.items()})
    if isinstance(feature, LargeList):
        return pa.large_list(_nested_type(feature.feature))
    if isinstance(feature, List):
        return pa.list_(_nested_type(feature.feature), feature.length)
    return feature()


class Features(dict):
    """Column name -> feature, as datasets.Features (a dict subclass)."""

    def __init__(*args, **kwargs):
        self, *args = args
        super(Features, self).__init__(*args, **kwargs)
        for k, v in list(self.items()):
            dict.__setitem__(self, k, _fix_old_lists(v))

    def __reduce__(self):
        return Features, (dict(self),)

    @classmethod
    def from_dict(cls, dic):
        """Features from datasets' to_dict() form (`_type` keys name the
        classes); ValueError for an unknown feature type."""
        return cls(**_from_dict(dic))

    def to_dict(self):
        """The dict datasets.Features.to_dict() gives (JSON-ready)."""
        return _asdict(dict(self))

    @property
    def type(self):
        """The pyarrow struct type of the features (imports pyarrow)."""
        return _nested_type(dict(self))

    @property
    def arrow_schema(self):
        """The pyarrow schema with datasets' {"info": {"features"}} metadata."""
        import json
        import pyarrow as pa
        return pa.schema(self.type).with_metadata(
            {"huggingface": json.dumps({"info": {"features": self.to_dict()}})})

    def copy(self):
        """A deep copy."""
        return Features.from_dict(self.to_dict())


def _from_extension(dic):
    """Dataset.features: the extension's dict (datasets' to_dict form)."""
    return Features.from_dict(dic)
