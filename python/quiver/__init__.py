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
from .dataset_dict import DatasetDict, load_from_disk  # noqa: F401,E402
from .features import (  # noqa: F401,E402
    Array2D, Array3D, Array4D, Array5D, Audio, ClassLabel, Features, Image, Json, LargeList,
    List, Sequence, Translation, TranslationVariableLanguages, Value, Video)

__version__ = version()
__all__ = ["Batch", "Dataset", "QuiverError", "QuiverFileNotFoundError", "QuiverIndexError",
           "QuiverKeyError", "QuiverTypeError", "QuiverValueError", "concatenate_datasets",
           "open", "__version__", "DatasetDict", "load_from_disk", "Features", "Value",
           "ClassLabel", "List", "Sequence", "LargeList", "Array2D", "Array3D", "Array4D",
           "Array5D", "Image", "Audio", "Video", "Json", "Translation",
           "TranslationVariableLanguages"]
