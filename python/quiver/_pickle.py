"""quiver._pickle — a quiver.Dataset pickles as its recipe (docs/python.md,
"Pickling"): the paths and identities of the files behind it and how to
get from them to the dataset, never the rows of a file-backed dataset.

Dataset.__reduce__ (python/src/pickle.c) calls reduce(); unpickling calls
rebuild(state). The state is a small dict:

  v            format version (1)
  fingerprint  the dataset's fingerprint; the rebuilt dataset must have it
  files        [(path, size, mtime_ns, crc32 of the first and last 4 KiB)]
               of every file mapped behind the dataset (Dataset.cache_files;
               for a CSV / JSON Lines file, the text file instead of its
               cached Arrow conversion): a file that changed since is
               refused before anything is read
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
  indices_file (path, size, mtime_ns, crc32) of a copy of the dataset's
               in-memory indices mapping (a shuffle's permutation, say) in
               the per-user cache ($XDG_CACHE_HOME/quiver/pickle), when its
               origin is an open then transforms that only change the
               mapping: unpickling opens the root and maps that file
               instead of recomputing the mapping (milliseconds instead of
               a permutation of every row), and falls back to the replay
               when the file is gone or changed. Written once per dataset
               (fingerprint and files) at the first pickle.dumps;
               QV_PICKLE_CACHE=0 turns it off.
"""
import os
import re
import zlib

from . import _quiver

VERSION = 1
# Bytes read at each end of a file for its content check.
CHECK_BYTES = 4096
# Transforms that change only the indices mapping (not the data table).
_MAPPING_OPS = {"select", "shard", "shuffle", "sort", "filter", "train_test_split:train",
                "train_test_split:test"}
# Fewest rows whose in-memory mapping is worth a cache file.
_INDICES_FILE_MIN_ROWS = 50000


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


# The cached Arrow conversion of a CSV / JSON Lines file (src/dataset/
# dataset_text.c): a pickle names the text file instead (its origin's
# root), and the replay converts it again if the cache lost it.
_TEXT_CONVERSION = re.compile(r"text-[0-9a-f]{16}-[0-9a-f]{16}-[a-z0-9]+-[0-9a-f]{16}\.arrow")


def _root(origin):
    while origin is not None and origin[0] not in ("open", "read_csv", "tables", "concatenate"):
        origin = origin[0]
    return origin


def _text_roots(origin, out):
    """The text files (CSV / JSON Lines) at the roots of an origin."""
    root = _root(origin)
    if root is None:
        return out
    if root[0] == "read_csv" or (root[0] == "open" and root[3] is None
                                 and os.path.isfile(root[1])
                                 and _quiver._sniff(root[1]) in ("csv", "json")):
        out.append(root[1])
    elif root[0] == "concatenate":
        for p in root[1]:
            _text_roots(p, out)
    return out


def _cache_dir():
    x = os.environ.get("XDG_CACHE_HOME", "")
    if not x.startswith("/"):  # the spec ignores relative values
        x = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(x, "quiver", "pickle")


def _mapping_root(origin):
    """The ("open", ...) origin under a chain of mapping-only transforms,
    or None."""
    while origin is not None and origin[0] not in ("open", "tables", "concatenate"):
        if origin[1] not in _MAPPING_OPS:
            return None
        origin = origin[0]
    return origin if origin is not None and origin[0] == "open" else None


def _indices_file(ds, origin, files):
    """The identity of a cache file holding ds's in-memory indices mapping
    (written now unless an intact one is there), or None."""
    if os.environ.get("QV_PICKLE_CACHE", "1").lower() in ("0", "off", "no", "false") \
            or len(ds) < _INDICES_FILE_MIN_ROWS:
        return None
    root = _mapping_root(origin)
    if root is None:
        return None
    try:
        # the mapping indexes the root's data table itself (not a slice of it)
        if _replay(root)._recipes()[0] != ds._recipes()[0]:
            return None
        key = "%08x" % zlib.crc32(repr((ds.fingerprint, files)).encode())
        path = os.path.join(_cache_dir(), f"indices-{ds.fingerprint}-{key}.arrow")
        if os.path.exists(path):  # written atomically by an earlier dumps
            return _identity(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not ds._write_indices(path):
            return None
        return _identity(path)
    except (OSError, _quiver.QuiverError):
        return None


def reduce(ds):
    origin = ds._origin
    texts = _text_roots(origin, [])
    files = [_identity(f["filename"]) for f in ds.cache_files
             if not (texts and _TEXT_CONVERSION.fullmatch(os.path.basename(f["filename"])))]
    files = [_identity(t) for t in texts] + files
    state = {"v": VERSION, "fingerprint": ds.fingerprint, "files": files}
    if origin is not None:
        state["origin"] = origin
        ident = _indices_file(ds, origin, files)
        if ident is not None:
            state["indices_file"] = ident
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
    if kind == "read_csv":
        _, path, delimiter = origin
        return _quiver._read_csv(path, delimiter)
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
    ds = None
    if "indices_file" in state and _changed(*state["indices_file"]) is None:
        try:
            ds = _replay(_mapping_root(state["origin"]))._with_indices_file(
                state["indices_file"][0], state["fingerprint"], state["origin"])
        except (OSError, _quiver.QuiverError):
            ds = None  # the replay below
    if ds is None and "origin" in state:
        ds = _replay(state["origin"])
    elif ds is None:
        ds = _quiver._from_recipes(state["data"], state["indices"], state["fingerprint"])
    if ds.fingerprint != state["fingerprint"]:
        raise _quiver.QuiverError(
            f"quiver.Dataset pickle: the rebuilt dataset has fingerprint {ds.fingerprint}, "
            f"not {state['fingerprint']}: its files or the transforms' results differ")
    if "format" in state:
        ds._format = state["format"]
    return ds
