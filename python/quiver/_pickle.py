"""quiver._pickle — a quiver.Dataset pickles as its recipe (docs/python.md,
"Pickling"): the paths and identities of the files behind it and how to
get from them to the dataset, never the rows of a file-backed dataset.

Dataset.__reduce__ (python/src/pickle.c) calls reduce(); unpickling calls
rebuild(state). The state is a small dict:

  v            format version (1)
  fingerprint  the dataset's fingerprint; the rebuilt dataset must have it
  files        [(path, size, mtime_ns, crc32 of the first and last 4 KiB)]
               of every file mapped behind the dataset (Dataset.cache_files):
               a file that changed since is refused before anything is read
  origin       how the dataset was made (Dataset._origin: quiver.open's
               arguments — or, after a map or filter with a callable that
               wrote cache files, the tables' recipes — then one (method,
               args, kwargs) per transform), replayed through the public
               methods — or, when a transform
               had non-plain arguments (a Python callable):
  data, indices  the data table's and the indices mapping's recipes
               (qv_table_recipe: mapped files as path + identity + replays,
               in-memory parts as Arrow IPC bytes, so in-memory datasets
               pickle their data), rebuilt by _quiver._from_recipes.
"""
import os
import zlib

from . import _quiver

VERSION = 1
# Bytes read at each end of a file for its content check.
CHECK_BYTES = 4096


def _content_check(path, size):
    """crc32 of the first and last CHECK_BYTES bytes of the file."""
    with open(path, "rb") as f:
        crc = zlib.crc32(f.read(CHECK_BYTES))
        if size > CHECK_BYTES:
            f.seek(max(CHECK_BYTES, size - CHECK_BYTES))
            crc = zlib.crc32(f.read(CHECK_BYTES), crc)
    return crc


def _identity(path):
    st = os.stat(path)
    return (path, st.st_size, st.st_mtime_ns, _content_check(path, st.st_size))


def reduce(ds):
    files = [_identity(f["filename"]) for f in ds.cache_files]
    state = {"v": VERSION, "fingerprint": ds.fingerprint, "files": files}
    origin = ds._origin
    if origin is not None:
        state["origin"] = origin
    else:
        state["data"], state["indices"] = ds._recipes()
    if ds._format is not None:  # the output format (a transform pickles by reference)
        state["format"] = ds._format
    return (rebuild, (state,))


def _changed(path, size, mtime_ns, crc):
    """What changed about `path` since it was pickled, or None."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"it cannot be read any more ({e.strerror})"
    if st.st_size != size:
        return f"its size changed from {size} to {st.st_size} bytes"
    if st.st_mtime_ns != mtime_ns:
        return "its modification time changed"
    if _content_check(path, size) != crc:
        return "its content changed"
    return None


def _replay(origin):
    kind = origin[0]
    if kind == "open":
        _, path, split, data = origin
        return _quiver.open(path, split=split, data=data)
    if kind == "tables":
        _, data, indices, fingerprint = origin
        return _quiver._from_recipes(data, indices, fingerprint)
    if kind == "concatenate":
        _, parts, axis = origin
        return _quiver.concatenate_datasets([_replay(p) for p in parts], axis=axis)
    parent, op, args, kwargs = origin
    ds = _replay(parent)
    args = args or ()
    kwargs = kwargs or {}
    if op.startswith("train_test_split:"):
        return ds.train_test_split(*args, **kwargs)[op.split(":", 1)[1]]
    return getattr(ds, op)(*args, **kwargs)


def rebuild(state):
    if not isinstance(state, dict) or state.get("v") != VERSION:
        raise _quiver.QuiverValueError(
            "quiver.Dataset pickle: unknown state (made by another version of quiver?)")
    for path, size, mtime_ns, crc in state["files"]:
        what = _changed(path, size, mtime_ns, crc)
        if what is not None:
            raise _quiver.QuiverError(
                f"quiver.Dataset pickle: {path} changed since the dataset was pickled: {what}; "
                "refusing to rebuild the dataset over different data")
    if "origin" in state:
        ds = _replay(state["origin"])
    else:
        ds = _quiver._from_recipes(state["data"], state["indices"], state["fingerprint"])
    if ds.fingerprint != state["fingerprint"]:
        raise _quiver.QuiverError(
            f"quiver.Dataset pickle: the rebuilt dataset has fingerprint {ds.fingerprint}, "
            f"not {state['fingerprint']}: its files or the transforms' results differ")
    if "format" in state:
        ds._format = state["format"]
    return ds
