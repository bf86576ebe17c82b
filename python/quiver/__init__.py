"""quiver — memory-mapped Arrow datasets (Hugging Face `datasets` layout) from C.

A thin package over the C extension `quiver._quiver`, which binds quiver's
dataset layer (include/quiver/dataset.h); nothing is computed in Python.
See docs/python.md.
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

__version__ = version()
__all__ = ["Batch", "Dataset", "QuiverError", "QuiverFileNotFoundError", "QuiverIndexError",
           "QuiverKeyError", "QuiverTypeError", "QuiverValueError", "concatenate_datasets",
           "open", "__version__"]
