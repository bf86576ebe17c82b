"""qvpaths.py — where the Python oracle tests find quiver and the data.

QV_BUILD: the build directory (libquiver.so, the `quiver` CLI), default
<repo>/build. QV_SHARED: the shared folder with arrow-testing, default
<repo>/../shared. A missing build or data set is an error, not a skip: a
suite that silently skips everything cannot fail.
"""
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("QV_BUILD", os.path.join(REPO, "build"))
SHARED = os.environ.get("QV_SHARED", os.path.join(REPO, "..", "shared"))
GOLDEN = os.path.join(SHARED, "testdata", "arrow-testing", "data",
                      "arrow-ipc-stream", "integration")
CLI = os.path.join(BUILD, "quiver")
LIB = os.path.join(BUILD, "libquiver.so")
# The CPython extension's package directory (build/python/quiver holds
# __init__.py and _quiver*.so); import it with import_quiver().
PYDIR = os.path.join(BUILD, "python")


def require(path):
    """Return path, failing the test when it does not exist."""
    assert os.path.exists(path), f"{path} does not exist (build first; see QV_BUILD)"
    return path


def quiver(*args, check=True, stdin=None):
    """Run the quiver CLI with `args` (str()-converted); with check, a
    non-zero exit fails the test showing stderr. Returns CompletedProcess
    (stdout/stderr as bytes)."""
    import subprocess
    r = subprocess.run([require(CLI)] + [str(a) for a in args], capture_output=True,
                       input=stdin)
    if check:
        assert r.returncode == 0, r.stderr.decode()
    return r


def quiver_rows(*args):
    """The JSON lines `quiver head|get ...` prints, parsed."""
    import json
    return [json.loads(line) for line in quiver(*args).stdout.decode().splitlines()]


def import_quiver():
    """The `quiver` package of the build (QV_BUILD/python), failing the test
    when the extension was not built (Python headers missing at configure
    time: see CMakeLists.txt)."""
    import glob
    import importlib
    import sys
    pkg = require(os.path.join(PYDIR, "quiver", "__init__.py"))
    assert glob.glob(os.path.join(os.path.dirname(pkg), "_quiver*.so")), \
        f"the extension _quiver*.so is missing beside {pkg} (configure found no Python headers?)"
    if PYDIR not in sys.path:
        sys.path.insert(0, PYDIR)
    return importlib.import_module("quiver")
