"""Fixtures of the scale-out suite (tests/scale/, ctest python.scale, run in
build/venv-scale from scripts/venv-scale.sh): quiver from QV_BUILD on the
path of this process and of Ray's and Spark's worker processes, one local
Ray instance (2 CPUs, no dashboard) and one local Spark session (local[2])
for the whole session, and small datasets written by `datasets` (the
oracle) into a temporary directory."""
import os
import shutil
import sys
import tempfile

import pytest

_build = os.environ.get("QV_BUILD") or os.path.join(os.path.dirname(__file__), "..", "..", "build")
_pkg = os.path.abspath(os.path.join(_build, "python"))
sys.path.insert(0, _pkg)
os.environ["PYTHONPATH"] = _pkg + os.pathsep + os.environ.get("PYTHONPATH", "")
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
if not os.environ.get("XDG_CACHE_HOME"):
    _xdg = tempfile.mkdtemp(prefix="quiver-scale-xdg-")
    os.environ["XDG_CACHE_HOME"] = _xdg

import datasets  # noqa: E402
import numpy as np  # noqa: E402

ROWS = 6000  # 3 shards x 2 record batches (datasets writes batches of 1000 rows)


@pytest.fixture(scope="session")
def ray_session():
    import ray
    from ray.data import DataContext

    tmp = tempfile.mkdtemp(prefix="qvray-", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=tmp,
             configure_logging=False)
    ctx = DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    yield ray
    ray.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    import quiver.spark

    s = (SparkSession.builder.master("local[2]").appName("quiver-scale-tests")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    quiver.spark.register(s)
    yield s
    s.stop()


def _table(n, seed):
    rng = np.random.default_rng(seed)
    return {
        "id": list(range(n)),
        "text": [f"row {i} " + "x" * int(k) for i, k in enumerate(rng.integers(0, 20, n))],
        "score": [float(x) for x in rng.random(n)],
        "label": [int(x) for x in rng.integers(0, 3, n)],
        "vec": [[float(v) for v in rng.random(3)] for _ in range(n)],
    }


FEATURES = datasets.Features({
    "id": datasets.Value("int64"), "text": datasets.Value("string"),
    "score": datasets.Value("float64"), "label": datasets.ClassLabel(names=["a", "b", "c"]),
    "vec": datasets.List(datasets.Value("float64")),
})


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    """Paths: 'plain' (3 shards of 2 record batches), 'dict' (a
    DatasetDict train/test), 'empty' (0 rows)."""
    root = tmp_path_factory.mktemp("scale-data")
    hf = datasets.Dataset.from_dict(_table(ROWS, 1), features=FEATURES)
    hf.save_to_disk(str(root / "plain"), num_shards=3)
    dd = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict(_table(700, 2), features=FEATURES),
        "test": datasets.Dataset.from_dict(_table(300, 3), features=FEATURES)})
    dd.save_to_disk(str(root / "dict"), num_shards={"train": 2, "test": 1})
    datasets.Dataset.from_dict({k: [] for k in FEATURES}, features=FEATURES).save_to_disk(
        str(root / "empty"))
    return {"root": root, "plain": str(root / "plain"), "dict": str(root / "dict"),
            "empty": str(root / "empty")}


def rows_of(table):
    """A pyarrow Table's rows as dicts (column order of the table)."""
    return table.to_pylist()


def hf_rows(hf):
    """A datasets.Dataset's rows as dicts, through its indices mapping."""
    return hf.to_list()
