"""Session setup shared by the Python suites: quiver's per-user stream
index cache (docs/design.md, "Stream index") goes to a temporary directory
unless XDG_CACHE_HOME already points somewhere (ctest sets it inside the
build tree), so that running pytest by hand never writes into the real
home cache. The CLI processes the tests start inherit it."""
import atexit
import os
import shutil
import tempfile

if not os.environ.get("XDG_CACHE_HOME"):
    _xdg = tempfile.mkdtemp(prefix="quiver-test-xdg-")
    os.environ["XDG_CACHE_HOME"] = _xdg
    atexit.register(shutil.rmtree, _xdg, True)
