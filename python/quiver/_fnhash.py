"""Deterministic hash of a Python callable, for the fingerprints of
Dataset.map / Dataset.filter with a function (docs/fingerprints.md).

datasets hashes the function with dill, which quiver cannot reproduce. This
hashes what decides the function's behaviour and is stable across
processes: its __qualname__, its code objects (bytecode, constants, names,
argument layout; nested code objects recursively; not file names or line
numbers), its defaults, and the values it reaches through closure cells and
globals when they are plain data (None, bool, int, float, str, bytes and
tuples / lists / dicts / sets of those), modules, classes and builtins (by
module and name) and other Python functions (hashed the same way). Anything else
(an object, a class, a partial...) cannot be hashed: function_hash returns
None and the caller uses a random fingerprint, as datasets does when
hashing fails. Binding glue only: the dataset logic is in C.
"""
import hashlib
import marshal
import types


class _NotPlain(Exception):
    pass


def _plain(v, out, depth=0):
    """Append a canonical encoding of plain data `v` to list `out`."""
    if depth > 64:
        raise _NotPlain("too deep")
    t = type(v)
    if v is None or t in (bool, int, float, str, bytes):
        out.append(b"%s:%s;" % (t.__name__.encode(), repr(v).encode("utf-8", "surrogatepass")))
    elif t in (tuple, list):
        out.append(b"%s[%d" % (t.__name__.encode(), len(v)))
        for x in v:
            _plain(x, out, depth + 1)
        out.append(b"]")
    elif t is dict:
        out.append(b"dict{%d" % len(v))
        for k, x in v.items():
            _plain(k, out, depth + 1)
            _plain(x, out, depth + 1)
        out.append(b"}")
    elif t in (set, frozenset):
        parts = []
        for x in v:
            sub = []
            _plain(x, sub, depth + 1)
            parts.append(b"".join(sub))
        out.append(b"%s{%d" % (t.__name__.encode(), len(parts)) + b"".join(sorted(parts)) + b"}")
    else:
        raise _NotPlain(t.__name__)


def _code(co, out, names):
    """Code object `co` (and the code objects among its constants)."""
    out.append(b"code(")
    for attr in ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_flags"):
        out.append(b"%d," % getattr(co, attr))
    out.append(marshal.dumps(co.co_code))
    for attr in ("co_names", "co_varnames", "co_freevars", "co_cellvars"):
        _plain(tuple(getattr(co, attr)), out)
    names.update(co.co_names)
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            _code(c, out, names)
        else:
            _plain(c, out)
    out.append(b")")


def _value(v, out, seen):
    """A value the function reaches (closure cell, global)."""
    if isinstance(v, types.ModuleType):
        out.append(b"module:" + v.__name__.encode() + b";")
    elif isinstance(v, type):  # a class: by name, as a module
        out.append(b"class:%s.%s;" % (str(v.__module__).encode(), v.__qualname__.encode()))
    elif isinstance(v, types.BuiltinFunctionType):
        out.append(b"builtin:%s.%s;" % (str(getattr(v, "__module__", "")).encode(),
                                        v.__qualname__.encode()))
    elif isinstance(v, types.FunctionType):
        if id(v) in seen:  # recursion: named, not expanded again
            out.append(b"fn-again:" + v.__qualname__.encode() + b";")
        else:
            _function(v, out, seen)
    else:
        _plain(v, out)


def _function(fn, out, seen):
    seen.add(id(fn))
    out.append(b"function:" + fn.__qualname__.encode() + b"(")
    names = set()
    _code(fn.__code__, out, names)
    _plain(fn.__defaults__, out)
    _plain(dict(sorted((fn.__kwdefaults__ or {}).items())), out)
    for cell in fn.__closure__ or ():
        try:
            _value(cell.cell_contents, out, seen)
        except ValueError:  # an empty cell
            out.append(b"empty-cell;")
    g = fn.__globals__
    for name in sorted(names):
        if name in g:
            out.append(b"global:" + name.encode() + b"=")
            _value(g[name], out, seen)
    out.append(b")")


def function_hash(fn):
    """Hex digest of `fn`, or None when it cannot be hashed."""
    out = []
    try:
        if isinstance(fn, types.FunctionType):
            _function(fn, out, set())
        elif isinstance(fn, types.BuiltinFunctionType):
            _value(fn, out, set())
        else:
            return None
    except (_NotPlain, RecursionError):
        return None
    return hashlib.sha256(b"".join(out)).hexdigest()[:32]


def value_hash(v):
    """Hex digest of plain data `v` (fn_kwargs of map / filter), or None
    when it holds something that is not plain data."""
    out = []
    try:
        _value(v, out, set())
    except (_NotPlain, RecursionError):
        return None
    return hashlib.sha256(b"".join(out)).hexdigest()[:32]
