"""quiver — memory-mapped Arrow datasets (Hugging Face `datasets` layout) from C.

A thin package over the C extension `quiver._quiver`, which binds quiver's
dataset layer (include/quiver/dataset.h); nothing per row is computed in
Python (features.py and dataset_dict.py hold datasets' Features classes and
DatasetDict). See docs/python.md.
"""
from ._quiver import (  # noqa: F401
    Batch,
    Dataset,
    QuiverError,
    QuiverFileNotFoundError,
    QuiverIndexError,
    QuiverKeyError,
    QuiverTypeError,
    QuiverValueError,
    concatenate_datasets,
    open,
    version,
)
from .dataset_dict import DatasetDict, load_from_disk  # noqa: E402,F401
from ._api import IterableDataset  # noqa: E402,F401
from .features import *  # noqa: E402,F401,F403  (Features and the feature classes)
from .info import DatasetInfo  # noqa: E402,F401

__version__ = version()
__all__ = ["Batch", "Dataset", "QuiverError", "QuiverFileNotFoundError", "QuiverIndexError",
           "QuiverKeyError", "QuiverTypeError", "QuiverValueError", "concatenate_datasets",
           "open", "__version__"]
__all__ += ["DatasetDict", "DatasetInfo", "IterableDataset", "load_from_disk"] + features.__all__  # noqa: F405
from .distributed import split_dataset_by_node  # noqa: E402,F401  (docs/scale-out.md)
__all__ += ["split_dataset_by_node"]
from ._io import load_dataset  # noqa: E402,F401  (Parquet/CSV/JSON; docs/python.md)
__all__ += ["load_dataset"]
