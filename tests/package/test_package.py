"""The pip-installable package (pyproject.toml, scikit-build-core): build
the wheel from the source tree, install it into a fresh virtual
environment that holds nothing else, and use it from there:

  - `import quiver` works without pyarrow, numpy or any other third-party
    module (none is imported), and without LD_LIBRARY_PATH or a
    libquiver.so anywhere in the environment (the extension and the CLI
    link libquiver statically);
  - a dataset pyarrow wrote reads back, row by row and through select /
    shuffle, as pyarrow's to_pylist() and numpy's permutation say;
  - the `quiver` command is on the environment's PATH and `quiver
    --version` prints quiver.__version__, which is also the distribution's
    metadata version (one version source: include/quiver/core.h);
  - the wheel ships py.typed and the _quiver.pyi stubs, and
    inspect.signature works on the installed methods.

The wheel is built with the test venv's pip and scikit-build-core
(tests/requirements.txt), --no-build-isolation, into
QV_BUILD/pkgtest (its CMake build directory kept there, so a rebuild is
incremental). Environment: QV_VENV (the test venv), QV_BUILD.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("QV_BUILD", os.path.join(REPO, "build"))
WORK = os.path.join(BUILD, "pkgtest")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def venv():
    """A fresh venv with only the built wheel installed; its bin dir."""
    wheels = os.path.join(WORK, "wheels")
    shutil.rmtree(wheels, ignore_errors=True)
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL="2")
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "--disable-pip-version-check", "-q", "-w", wheels,
         "-C", "build-dir=" + os.path.join(WORK, "cmake"), REPO], env=env)
    whl = glob.glob(os.path.join(wheels, "quiver-*.whl"))
    assert len(whl) == 1, whl
    v = os.path.join(WORK, "venv")
    shutil.rmtree(v, ignore_errors=True)
    run([sys.executable, "-m", "venv", v])
    run([os.path.join(v, "bin", "pip"), "install", "--no-index", "--no-deps",
         "--disable-pip-version-check", "-q", whl[0]])
    return os.path.join(v, "bin")


def clean_env(bindir):
    env = {k: val for k, val in os.environ.items()
           if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "PYTHONHOME")}
    env["PATH"] = bindir + os.pathsep + "/usr/bin:/bin"
    return env


def in_venv(bindir, code, *args):
    """Run `code` with the venv's python (cwd=/ so the source tree's
    python/ is not importable); its stdout parsed as JSON."""
    r = run([os.path.join(bindir, "python"), "-c", code, *args], env=clean_env(bindir), cwd="/")
    return json.loads(r.stdout)


def test_import_reads_rows_without_dependencies(venv, tmp_path):
    t = pa.table({"id": pa.array(range(50), pa.int64()),
                  "text": [None if i % 7 == 0 else "row %d é" % i for i in range(50)],
                  "vec": [[float(i), i / 2.0] for i in range(50)],
                  "flag": [i % 3 == 0 for i in range(50)]})
    path = tmp_path / "data.arrow"
    with pa.ipc.new_stream(path, t.schema) as w:
        w.write_table(t, max_chunksize=16)
    out = in_venv(venv, """
import json, sys
import quiver
ds = quiver.open(sys.argv[1])
third = sorted(m.split('.')[0] for m in sys.modules
               if m.split('.')[0] in ('pyarrow', 'numpy', 'pandas', 'datasets'))
print(json.dumps({"file": quiver.__file__, "third": third, "rows": [ds[i] for i in range(len(ds))],
                  "iter": list(ds), "select": ds.select([49, 0, 7])["id"][:],
                  "shuffled": ds.shuffle(seed=5)["id"][:]}))
""", str(path))
    site = os.path.dirname(venv)  # the venv root
    assert out["file"].startswith(site), out["file"]       # the installed package, not the tree
    assert out["third"] == []
    expect = t.to_pylist()
    assert out["rows"] == expect
    assert out["iter"] == expect
    assert out["select"] == [49, 0, 7]
    assert out["shuffled"] == np.random.default_rng(5).permutation(50).tolist()
    assert not glob.glob(os.path.join(site, "**", "libquiver*"), recursive=True)


def test_cli_on_path_has_the_package_version(venv):
    exe = shutil.which("quiver", path=venv)
    assert exe == os.path.join(venv, "quiver")
    info = in_venv(venv, """
import json, importlib.metadata, quiver
print(json.dumps([quiver.__version__, importlib.metadata.version("quiver")]))
""")
    r = run(["quiver", "--version"], env=clean_env(venv))
    assert r.stdout.strip() == "quiver " + info[0]
    assert info[1] == info[0]
    with open(os.path.join(REPO, "include", "quiver", "core.h")) as f:
        assert '#define QV_VERSION_STRING "%s"' % info[0] in f.read()


def test_stubs_and_signatures_installed(venv):
    out = in_venv(venv, """
import json, inspect, os, quiver
d = os.path.dirname(quiver.__file__)
print(json.dumps({"typed": os.path.exists(os.path.join(d, "py.typed")),
                  "pyi": os.path.exists(os.path.join(d, "_quiver.pyi")),
                  "select": str(inspect.signature(quiver.Dataset.select)),
                  "open": str(inspect.signature(quiver.open))}))
""")
    assert out["typed"] and out["pyi"]
    assert out["select"] == ("(self, /, indices, keep_in_memory=False, indices_cache_file_name=None, "
                             "writer_batch_size=1000, new_fingerprint=None, *, cache=False)")
    assert out["open"] == "(path, split=None, data=None)"
