"""Image and Audio features as datasets 5.2 decodes, encodes and casts them
(python/ layer, Python glue: decoding is Pillow's, per value).

Storage is datasets' struct<bytes: binary, path: string>. Reading rows
(python, numpy, torch, pandas and custom formats) decodes an `Image()` value
to a `PIL.Image.Image` as datasets' Image.decode_example does (bytes, else
the file at path; EXIF orientation applied; `mode` converted); `Audio()`
decodes through torchcodec in datasets, which quiver does not have: decoding
raises datasets' ImportError; so do Video (torchcodec) and Pdf (pdfplumber). Json
values are parsed (datasets' Json.decode_example). Features with decode=False give the storage
dict. `cast_column(c, Image())` from paths, bytes or {bytes, path} structs
is datasets' cast_storage; from_dict / add_item with Image features encode
PIL images, paths and bytes as datasets' encode_example. docs/python.md,
"Images and audio".
"""
import json
import os
from io import BytesIO

_MEDIA = ("Image", "Audio")
# decoded by datasets through an optional package quiver does not use
_DECODE_ONLY = {"Video": ("torchcodec", "videos"), "Pdf": ("pdfplumber", "pdfs")}


def _kind(feature):
    if isinstance(feature, dict):
        return str(feature.get("_type", ""))
    return getattr(feature, "_type", "") or type(feature).__name__


def requires_decoding(feature):
    """datasets' require_decoding: an Image/Audio with decode=True at any depth."""
    if isinstance(feature, dict) and "_type" not in feature:
        return any(requires_decoding(f) for f in feature.values())
    if isinstance(feature, (list, tuple)):
        return requires_decoding(feature[0])
    if _kind(feature) in ("List", "LargeList", "Sequence"):
        return requires_decoding(feature.feature)
    return (_kind(feature) in _MEDIA or _kind(feature) in _DECODE_ONLY or
            _kind(feature) == "Json") and \
        getattr(feature, "decode", True)


def decoders(features):
    """{column: feature} of the columns whose values datasets decodes."""
    if not features:
        return {}
    return {c: f for c, f in features.items() if requires_decoding(f)}


def decode_image(feature, value):
    """datasets' Image.decode_example."""
    if not feature.decode:
        raise RuntimeError("Decoding is disabled for this feature. Please use Image(decode=True) "
                           "instead.")
    try:
        import PIL.Image
        import PIL.ImageOps
    except ImportError:
        raise ImportError("To support decoding images, please install 'Pillow'.") from None
    if not isinstance(value, (dict, str)):
        return value
    if isinstance(value, str):
        value = {"path": value, "bytes": None}
    path, data = value.get("path"), value.get("bytes")
    if data is None:
        if path is None:
            raise ValueError(f"An image should have one of 'path' or 'bytes' but both are None "
                             f"in {value}.")
        image = PIL.Image.open(path)
    else:
        image = PIL.Image.open(BytesIO(data))
    image.load()  # no file left open, as datasets
    if image.getexif().get(PIL.Image.ExifTags.Base.Orientation) is not None:
        image = PIL.ImageOps.exif_transpose(image)
    if feature.mode and feature.mode != image.mode:
        image = image.convert(feature.mode)
    return image


def decode_audio(feature, value):
    """datasets' Audio.decode_example: torchcodec's AudioDecoder there;
    quiver does not decode audio."""
    try:
        import torchcodec  # noqa: F401
    except ImportError:
        raise ImportError("To support decoding audio data, please install 'torchcodec'.") \
            from None
    raise NotImplementedError("quiver does not decode audio: use Audio(decode=False) for the "
                              "{bytes, path} storage")


def decode_other(feature, value):
    """datasets' Video/Pdf.decode_example: torchcodec's VideoDecoder and a
    pdfplumber PDF there; without the package datasets' ImportError, with
    it NotImplementedError (quiver does not decode them)."""
    package, what = _DECODE_ONLY[_kind(feature)]
    try:
        __import__(package)
    except ImportError:
        raise ImportError(f"To support decoding {what}, please install '{package}'.") from None
    raise NotImplementedError(f"quiver does not decode {what}: use "
                              f"{_kind(feature)}(decode=False) for the {{bytes, path}} storage")


def decode(feature, obj):
    """datasets' decode_nested_example of one value (None stays None)."""
    if obj is None:
        return None
    if isinstance(feature, dict) and "_type" not in feature:
        return {k: decode(f, obj.get(k)) for k, f in feature.items()} \
            if isinstance(obj, dict) else obj
    if isinstance(feature, (list, tuple)):
        return [decode(feature[0], o) for o in obj]
    kind = _kind(feature)
    if kind in ("List", "LargeList", "Sequence"):
        sub = feature.feature
        if isinstance(sub, dict) and "_type" not in sub and isinstance(obj, dict):
            return {k: [decode(f, o) for o in obj.get(k) or []] for k, f in sub.items()}
        return [decode(sub, o) for o in obj]
    if kind == "Image" and feature.decode:
        return decode_image(feature, obj)
    if kind == "Audio" and feature.decode:
        return decode_audio(feature, obj)
    if kind in _DECODE_ONLY and feature.decode:
        return decode_other(feature, obj)
    if kind == "Json" and feature.decode:
        return json.loads(obj) if isinstance(obj, (str, bytes)) else obj
    return obj


def decode_row(dec, row):
    for c, f in dec.items():
        if c in row:
            row[c] = decode(f, row[c])
    return row


def decode_batch(dec, batch):
    for c, f in dec.items():
        if c in batch:
            batch[c] = [decode(f, v) for v in batch[c]]
    return batch


# ---- encoding (datasets' encode_example) and casting (cast_storage) --------

def _image_to_bytes(image):
    import PIL.Image
    PIL.Image.init()
    fmt = image.format if image.format in (set(PIL.Image.OPEN) & set(PIL.Image.SAVE)) else (
        "PNG" if image.mode in ("1", "L", "LA", "RGB", "RGBA") else "TIFF")
    buf = BytesIO()
    image.save(buf, format=fmt)
    return buf.getvalue()


def encode(feature, value):
    """datasets' Image/Audio.encode_example of one value (None stays None)."""
    if value is None or isinstance(value, dict) and _kind(feature) == "Audio" and \
            "array" in value:
        if value is not None:
            raise NotImplementedError("quiver does not encode audio arrays (datasets does it "
                                      "with torchcodec)")
        return None
    if isinstance(value, str):
        return {"bytes": None, "path": value}
    if isinstance(value, os.PathLike):
        return {"bytes": None, "path": os.path.abspath(os.fspath(value))}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value), "path": None}
    if type(value).__module__.startswith("PIL."):
        if getattr(value, "filename", ""):
            return {"bytes": None, "path": value.filename}
        return {"bytes": _image_to_bytes(value), "path": None}
    if isinstance(value, dict):
        path, data = value.get("path"), value.get("bytes")
        if path is not None and os.path.isfile(path):
            return {"bytes": None, "path": path}
        if data is not None or path is not None:
            return {"bytes": data, "path": path}
        raise ValueError(f"An {'image' if _kind(feature) == 'Image' else 'audio'} sample should "
                         f"have one of 'path' or 'bytes' but they are missing or None in "
                         f"{value}.")
    if hasattr(value, "ndim") and _kind(feature) == "Image":
        import PIL.Image
        return {"bytes": _image_to_bytes(PIL.Image.fromarray(value)), "path": None}
    raise TypeError(f"cannot encode a {type(value).__name__} as {_kind(feature)}")


def is_media(feature):
    return _kind(feature) in _MEDIA


def cast_storage(col):
    """datasets' Image/Audio.cast_storage: a string (paths), binary (bytes) or
    struct with bytes and/or path as struct<bytes: binary, path: string>."""
    import pyarrow as pa
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    t = col.type
    n = len(col)
    if pa.types.is_large_string(t):
        col, t = col.cast(pa.string()), pa.string()
    if pa.types.is_large_binary(t):
        col, t = col.cast(pa.binary()), pa.binary()
    if pa.types.is_string(t):
        fields = [pa.nulls(n, pa.binary()), col]
    elif pa.types.is_binary(t):
        fields = [col, pa.nulls(n, pa.string())]
    elif pa.types.is_struct(t):
        fields = [col.field("bytes") if t.get_field_index("bytes") >= 0
                  else pa.nulls(n, pa.binary()),
                  col.field("path") if t.get_field_index("path") >= 0
                  else pa.nulls(n, pa.string())]
        fields = [fields[0].cast(pa.binary()), fields[1].cast(pa.string())]
    else:
        raise ValueError(f"Couldn't cast {t} to struct<bytes: binary, path: string>")
    return pa.StructArray.from_arrays(fields, ["bytes", "path"], mask=col.is_null())
