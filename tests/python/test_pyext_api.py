"""The extension's declared surface against its runtime: the type stubs
(python/quiver/_quiver.pyi) name every public function, class, method and
attribute of quiver._quiver with the runtime's parameters (as
inspect.signature reads them from __text_signature__), and every method
has a signature and a docstring for help(). Oracle: the module itself
(dir(), inspect) against the stub file parsed with ast.

Environment: QV_BUILD (build/python/quiver, built by CMake).
"""
import ast
import inspect
import os

from qvpaths import REPO, import_quiver

quiver = import_quiver()
from quiver import _quiver  # noqa: E402

STUBS = os.path.join(REPO, "python", "quiver", "_quiver.pyi")


def stub_tree():
    with open(STUBS) as f:
        mod = ast.parse(f.read())
    top, classes = {}, {}
    for node in mod.body:
        if isinstance(node, ast.FunctionDef):
            top[node.name] = node
        elif isinstance(node, ast.ClassDef):
            members = {}
            for m in node.body:
                if isinstance(m, ast.FunctionDef):
                    members.setdefault(m.name, m)
                elif isinstance(m, ast.AnnAssign):
                    members[m.target.id] = m
            classes[node.name] = members
    return top, classes


def stub_params(fn):
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return (names + ["*"] * bool(a.kwonlyargs or a.vararg) + [p.arg for p in a.kwonlyargs]
            + (["**" + a.kwarg.arg] if a.kwarg else []))


def runtime_params(obj):
    sig = inspect.signature(obj)
    ps = [p for p in sig.parameters.values() if p.name != "self"]
    names = [p.name for p in ps if p.kind not in (p.KEYWORD_ONLY, p.VAR_KEYWORD)]
    kw = [p.name for p in ps if p.kind is p.KEYWORD_ONLY]
    var = ["**" + p.name for p in ps if p.kind is p.VAR_KEYWORD]
    return names + ["*"] * bool(kw) + kw + var


PUBLIC_DUNDERS = {"__arrow_c_schema__", "__arrow_c_stream__", "__arrow_c_array__",
                  "__reduce__"}


def public(names):
    return [n for n in names if not n.startswith("_") or n in PUBLIC_DUNDERS]


def test_module_functions_match_stubs():
    top, classes = stub_tree()
    for name in public(dir(_quiver)):
        obj = getattr(_quiver, name)
        if isinstance(obj, type):
            assert name in classes, f"class {name} missing from {STUBS}"
        elif callable(obj):
            assert name in top, f"function {name} missing from {STUBS}"
            assert runtime_params(obj) == stub_params(top[name]), name
            assert obj.__doc__ and obj.__doc__.strip(), name


def test_methods_match_stubs():
    _, classes = stub_tree()
    for cls in (quiver.Dataset, quiver.Batch):
        stubs = classes[cls.__name__]
        for name in public(vars(cls)):
            attr = inspect.getattr_static(cls, name)
            assert name in stubs, f"{cls.__name__}.{name} missing from {STUBS}"
            assert getattr(cls, name).__doc__, f"{cls.__name__}.{name} has no docstring"
            if callable(attr) and not isinstance(attr, property):
                assert runtime_params(getattr(cls, name)) == stub_params(stubs[name]), \
                    f"{cls.__name__}.{name}"


def test_help_shows_signatures():
    assert str(inspect.signature(quiver.Dataset.shuffle)) == (
        "(self, /, seed=None, generator=None, keep_in_memory=False, load_from_cache_file=None, "
        "indices_cache_file_name=None, writer_batch_size=1000, new_fingerprint=None, *, "
        "cache=False)")
    assert str(inspect.signature(quiver.open)) == "(path, split=None, data=None)"
    assert quiver.Dataset.sort.__doc__.startswith("Stable sort")
    assert "--" not in quiver.Dataset.sort.__doc__
