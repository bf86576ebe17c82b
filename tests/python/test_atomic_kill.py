"""test_atomic_kill.py — no data lost when a writer dies (docs/writing.md).

Every command writing a save_to_disk directory builds it in a hidden
sibling temporary and puts it in place with one rename (RENAME_EXCHANGE over
an existing DST). Here quiver is SIGKILLed at chosen crash points — the
documented test hook QUIVER_TEST_KILL_AT=N (the Nth write/fsync/rename
step; QUIVER_TEST_KILL_TRACE=1 lists them) — and at random times, for
shuffle, map (with --cache, so the cache file beside SRC is being written
too), save_to_disk (the Python extension's Dataset.save_to_disk) and a
DatasetDict write (split), into a new DST and over an existing one (and over
an existing one without RENAME_EXCHANGE). After every kill DST is absent (new
DST) or the old complete dataset, or the new complete dataset: loaded with
`datasets.load_from_disk` and compared row by row with the rows `datasets`
itself computes (shuffle, train_test_split) or plain Python (map). Only
hidden quiver temporaries may be left, and the next successful run reclaims
every one of them. The hook-point kills (80 of them) run on tmpfs when
/dev/shm exists (fast; tmpfs has RENAME_EXCHANGE too); the fallback and
random-time kills (24) run on the file system of pytest's tmp_path.

Also: a damaged cache file is reported with a warning, moved aside and
rebuilt; temporaries of dead writers are reclaimed and a live writer's are
kept; destinations that would lose data are refused.
"""
import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets as D  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402
import pytest  # noqa: E402

from qvpaths import CLI, PYDIR, quiver, require  # noqa: E402

N = 3000
TEMP = re.compile(r"^\..+\.(tmp|old)-quiver-\d+-\d+-[A-Za-z0-9]{6}$")


def _rows(n=N):
    return {"id": list(range(n)),
            "text": [f"row {i} " + "x" * (i % 17) for i in range(n)],
            "x": [i * 0.25 for i in range(n)]}


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    base = tmp_path_factory.mktemp("atomic")
    path = base / "src"
    D.Dataset.from_dict(_rows()).save_to_disk(str(path), num_shards=3)
    return path


def _columns(ds):
    return ds.data.table.to_pydict() if hasattr(ds, "data") else None


def _expected(src):
    """What each scenario writes, computed by datasets / Python."""
    ds = D.load_from_disk(str(src))
    shuffled = ds.shuffle(seed=1).flatten_indices()
    split = ds.train_test_split(test_size=0.2, seed=1)
    split2 = ds.train_test_split(test_size=0.2, seed=2)
    mapped = ds.to_dict()
    mapped["n"] = [i * 2 for i in mapped["id"]]
    return {
        "shuffle": {None: shuffled.to_dict()},
        "map": {None: mapped},
        "save": {None: ds.to_dict()},
        "split": {k: split[k].flatten_indices().to_dict() for k in ("train", "test")},
        "old": {None: ds.shuffle(seed=2).flatten_indices().to_dict()},
        "old-split": {k: split2[k].flatten_indices().to_dict() for k in ("train", "test")},
    }


SAVE_PY = ("import sys; sys.path.insert(0, sys.argv[1]); import quiver; "
           "quiver.open(sys.argv[2]).save_to_disk(sys.argv[3], num_shards=3)")


def _command(kind, src, dst):
    cli = require(CLI)
    if kind == "shuffle":
        return [cli, "shuffle", str(src), "--seed=1", "--output-shards=3", "-o", str(dst)]
    if kind == "map":
        return [cli, "map", str(src), "--set", "n=id * 2", "--cache", "--output-shards=3",
                "-o", str(dst)]
    if kind == "split":
        return [cli, "split", str(src), "--test-size=0.2", "--seed=1", "--output-shards=2",
                "-o", str(dst)]
    if kind == "save":
        return [sys.executable, "-c", SAVE_PY, PYDIR, str(src), str(dst)]
    raise AssertionError(kind)


def _load(dst):
    """{split or None: rows} of a save_to_disk directory, via datasets."""
    got = D.load_from_disk(str(dst))
    if isinstance(got, D.DatasetDict):
        return {k: got[k].to_dict() for k in got}
    return {None: got.to_dict()}


def _state(dst, want, old):
    """'absent', 'old' or 'new'; anything else fails."""
    if not os.path.lexists(dst):
        return "absent"
    assert os.path.isdir(dst) and not os.path.islink(dst)
    got = _load(dst)
    if got == want:
        return "new"
    assert old is not None and got == old, f"{dst}: neither the old nor the new dataset"
    return "old"


def _leftovers(*dirs):
    out = []
    for d in dirs:
        for name in os.listdir(d):
            if name.startswith("."):
                assert TEMP.match(name), f"{d}/{name} is not a quiver temporary"
                assert not name.endswith(".arrow")
                out.append(os.path.join(d, name))
    return out


def _count_points(cmd, env):
    r = subprocess.run(cmd, env={**env, "QUIVER_TEST_KILL_TRACE": "1"}, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return [line.split()[2] for line in r.stderr.splitlines()
            if line.startswith("quiver-crash-point ")]


def _points(n, k):
    """k points of 1..n spread evenly, the first and last two included."""
    if n <= k:
        return list(range(1, n + 1))
    pick = {1, 2, n - 1, n}
    step = (n - 1) / (k - 1)
    pick.update(1 + round(i * step) for i in range(k))
    return sorted(pick)


def _old_key(kind):
    return "old-split" if kind == "split" else "old"


def _make_old(kind, src, old_dir):
    """The old DST: a Dataset (shuffle seed 2), or a DatasetDict (split seed
    2) for split (the CLI refuses to put a DatasetDict where a Dataset was)."""
    if old_dir.exists():
        return
    extra = ["--test-size=0.2"] if kind == "split" else []
    subprocess.run([require(CLI), "split" if kind == "split" else "shuffle", str(src),
                    "--seed=2", "--output-shards=2", "-o", str(old_dir)] + extra,
                   check=True, capture_output=True)


def _fresh_src(src, work):
    """A private copy of SRC (map --cache writes beside it)."""
    s = work / "src"
    if s.exists():
        shutil.rmtree(s)
    shutil.copytree(src, s)
    return s


def _run_scenario(kind, src, work, expected, existing, env, points_per_run=8):
    s = _fresh_src(src, work)
    out = work / "out"
    out.mkdir(exist_ok=True)
    dst = out / "dst"
    old_dir = work / "old"
    if existing:
        _make_old(kind, src, old_dir)
    want = expected[kind]
    old = expected[_old_key(kind)] if existing else None

    def reset():
        if dst.exists():
            shutil.rmtree(dst)
        if existing:
            shutil.copytree(old_dir, dst)
        for p in _leftovers(out, s):
            shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
        for name in os.listdir(s):  # map's cache from an earlier run
            if name.startswith("cache-"):
                os.unlink(s / name)

    reset()
    cmd = _command(kind, s, dst)
    names = _count_points(cmd, env)
    assert names.count("rename-dir") == 1, names
    assert _state(dst, want, old) == "new"
    seen = {"absent": 0, "old": 0, "new": 0}
    kills = 0
    for k in _points(len(names), points_per_run):
        reset()
        r = subprocess.run(cmd, env={**env, "QUIVER_TEST_KILL_AT": str(k)}, capture_output=True)
        assert r.returncode == -signal.SIGKILL, (k, names[k - 1], r.returncode, r.stderr)
        kills += 1
        st = _state(dst, want, old)
        seen[st] += 1
        # the step where it died decides which side of the rename it is on
        before = names.index("rename-dir") + 1 > k
        assert st == ("new" if not before else ("old" if existing else "absent")), \
            (kind, k, names[k - 1], st)
        _leftovers(out, s)
        # the next successful run reclaims what the killed one left
        r = subprocess.run(cmd, env=env, capture_output=True)
        assert r.returncode == 0, r.stderr
        assert _state(dst, want, old) == "new"
        assert _leftovers(out, s) == [], (kind, k, names[k - 1])
    return kills, seen


KINDS = ["shuffle", "map", "save", "split"]


@pytest.fixture
def fast_dir(tmp_path):
    """A directory on tmpfs (/dev/shm) when there is one: SIGKILL keeps the
    page cache, so where the kills land does not depend on fsync, and the
    ~300 runs of test_kill_points need not wait for the disk. (The other
    kill tests run on tmp_path's file system.)"""
    import tempfile
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        d = tempfile.mkdtemp(prefix="qv-kill-", dir="/dev/shm")
        yield pathlib.Path(d)
        shutil.rmtree(d, ignore_errors=True)
    else:
        yield tmp_path


@pytest.mark.parametrize("existing", [False, True], ids=["new-dst", "existing-dst"])
@pytest.mark.parametrize("kind", KINDS)
def test_kill_points(kind, existing, src, fast_dir):
    expected = _expected(src)
    env = dict(os.environ)
    kills, seen = _run_scenario(kind, src, fast_dir, expected, existing, env)
    assert kills >= 7
    assert seen["new"] > 0 and seen["absent" if not existing else "old"] > 0, seen


@pytest.mark.parametrize("kind", ["shuffle", "split"])
def test_kill_points_without_exchange(kind, src, tmp_path):
    """The fallback for file systems without RENAME_EXCHANGE: old tree
    aside, new tree in, old tree removed; a kill between the two renames
    leaves no DST but the old tree aside, which the next run puts back
    before it writes (checked by the leftover/reclaim assertions)."""
    expected = _expected(src)
    env = {**os.environ, "QUIVER_TEST_NO_EXCHANGE": "1"}
    s = _fresh_src(src, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    dst = out / "dst"
    old_dir = tmp_path / "old"
    _make_old(kind, src, old_dir)
    old = expected[_old_key(kind)]
    shutil.copytree(old_dir, dst)
    cmd = _command(kind, s, dst)
    names = _count_points(cmd, env)
    aside = names.index("move-aside") + 1
    for k in sorted({1, aside - 1, aside, aside + 1, aside + 2, len(names)}):
        shutil.rmtree(dst, ignore_errors=True)
        for p in _leftovers(out):
            shutil.rmtree(p)
        shutil.copytree(old_dir, dst)
        r = subprocess.run(cmd, env={**env, "QUIVER_TEST_KILL_AT": str(k)}, capture_output=True)
        assert r.returncode == -signal.SIGKILL
        st = _state(dst, expected[kind], old)
        if k == aside:
            # between the renames: no DST, the complete old tree aside
            assert st == "absent"
            left = [p for p in _leftovers(out) if ".old-quiver-" in p]
            assert len(left) == 1 and _load(left[0]) == old
            # a reclaiming writer beside it puts it back (here: any write)
            r = subprocess.run([require(CLI), "shuffle", str(s), "--seed=5", "-o",
                                str(out / "other")], env=env, capture_output=True)
            assert r.returncode == 0, r.stderr
            assert _state(dst, expected[kind], old) == "old"
            shutil.rmtree(out / "other")
        else:
            assert st in ("old", "new")
        r = subprocess.run(cmd, env=env, capture_output=True)
        assert r.returncode == 0, r.stderr
        assert _state(dst, expected[kind], old) == "new"
        assert _leftovers(out) == []


def test_kill_at_random_times(src, tmp_path):
    """SIGKILL after a random delay (not at a hook point): the same
    guarantee, for shuffle and split over an existing DST."""
    expected = _expected(src)
    s = _fresh_src(src, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    dst = out / "dst"
    rng = random.Random(7)
    seen = {"old": 0, "new": 0}
    for kind in ("shuffle", "split"):
        old_dir = tmp_path / f"old-{kind}"
        _make_old(kind, src, old_dir)
        old = expected[_old_key(kind)]
        cmd = _command(kind, s, dst)
        if dst.exists():
            shutil.rmtree(dst)
        t0 = time.monotonic()
        subprocess.run(cmd, check=True, capture_output=True)
        full = time.monotonic() - t0
        for _ in range(6):
            shutil.rmtree(dst)
            shutil.copytree(old_dir, dst)
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, full * 1.2))
            p.send_signal(signal.SIGKILL)
            p.wait()
            seen[_state(dst, expected[kind], old)] += 1
            _leftovers(out)
            subprocess.run(cmd, check=True, capture_output=True)
            assert _leftovers(out) == []
            assert _state(dst, expected[kind], old) == "new"
    assert sum(seen.values()) == 12


# ---------------------------------------------------------------- caches --

def _cache_files(d):
    return sorted(n for n in os.listdir(d) if n.startswith("cache-"))


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_cache_is_quarantined_and_rebuilt(damage, src, tmp_path):
    expected = _expected(src)
    s = _fresh_src(src, tmp_path)
    dst = tmp_path / "dst"
    cmd = [require(CLI), "shuffle", str(s), "--seed=1", "--cache", "-o", str(dst)]
    had = set(_cache_files(s))  # datasets' own, from _expected
    subprocess.run(cmd, check=True, capture_output=True)
    (cache,) = set(_cache_files(s)) - had  # quiver's indices mapping
    assert ipc.open_stream(str(s / cache)).schema.names == ["indices"]
    good = (s / cache).read_bytes()
    if damage == "truncate":
        (s / cache).write_bytes(good[: len(good) // 2])
    else:  # a complete-looking stream whose first message is garbage
        (s / cache).write_bytes(b"\xff\xff\xff\xff\x10\x00\x00\x00" + b"\x07" * 64 + good[-8:])
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "warning" in r.stderr and cache in r.stderr and "corrupt" in r.stderr, r.stderr
    assert ("truncated" in r.stderr) == (damage == "truncate"), r.stderr
    files = _cache_files(s)
    assert cache in files
    aside = [f for f in files if f.startswith(cache + ".corrupt-")]
    assert len(aside) == 1, files
    # the rebuilt cache file is the indices mapping again (pyarrow reads it)
    t = ipc.open_stream(str(s / cache)).read_all()
    assert t.column_names == ["indices"] and t.num_rows == N
    assert (s / cache).read_bytes() == good
    assert _load(dst) == expected["shuffle"]
    # the next run reuses it silently
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_corrupt_map_cache_is_rebuilt(src, tmp_path):
    expected = _expected(src)
    s = _fresh_src(src, tmp_path)
    dst = tmp_path / "dst"
    cmd = [require(CLI), "map", str(s), "--set", "n=id * 2", "--cache", "-o", str(dst)]
    had = set(_cache_files(s))
    subprocess.run(cmd, check=True, capture_output=True)
    (cache,) = set(_cache_files(s)) - had
    assert "n" in ipc.open_stream(str(s / cache)).schema.names
    data = (s / cache).read_bytes()
    (s / cache).write_bytes(data[:-100])
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "corrupt" in r.stderr and cache in r.stderr
    assert _load(dst) == expected["map"]
    assert ipc.open_stream(str(s / cache)).read_all().num_rows == N


# ----------------------------------------------------------- temporaries --

def _start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def test_stale_temporaries_reclaimed_live_kept(src, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    p = subprocess.Popen(["true"])
    p.wait()
    dead = p.pid
    me, my_start = os.getpid(), _start_time(os.getpid())
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        live = sleeper.pid
        names = {
            f".dst.tmp-quiver-{dead}-{my_start}-aaaaaa": "dead",
            f".x.arrow.tmp-quiver-{dead}-1-bbbbbb": "dead",
            f".old.tmp-quiver-{me}-{my_start + 5}-cccccc": "dead",  # pid reused
            f".live.tmp-quiver-{me}-{my_start}-dddddd": "live",
            f".sleeper.tmp-quiver-{live}-{_start_time(live)}-eeeeee": "live",
            ".legacy.tmp-quiver-XXXXXX": "other",
        }
        for i, name in enumerate(names):
            if i % 2:
                (out / name).write_bytes(b"partial")
            else:
                (out / name).mkdir()
                (out / name / "data-00000-of-00001.arrow").write_bytes(b"partial")
        r = quiver("shuffle", src, "--seed=3", "-o", out / "dst")
        assert r.returncode == 0
        left = set(os.listdir(out)) - {"dst"}
        assert left == {n for n, k in names.items() if k != "dead"}
    finally:
        sleeper.kill()
        sleeper.wait()
    # once the live writer is gone, the next write reclaims its temporary too
    quiver("shuffle", src, "--seed=4", "-o", out / "dst")
    left = set(os.listdir(out)) - {"dst"}
    assert left == {f".live.tmp-quiver-{me}-{my_start}-dddddd", ".legacy.tmp-quiver-XXXXXX"}


# ------------------------------------------------------------- refusals --

def test_destination_refusals(src, tmp_path):
    s = _fresh_src(src, tmp_path)
    before = sorted(os.listdir(s))
    a_file = tmp_path / "file"
    a_file.write_text("keep me")
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep me too")
    link = tmp_path / "link"
    os.symlink(s, link)
    cases = [
        (a_file, "is not a directory"),
        (s, "can't overwrite itself"),
        (s / "sub", "inside the dataset directory"),
        (tmp_path, "can't overwrite itself"),  # above SRC: would replace it
        (other, "not a dataset directory"),
        (link, "symbolic link"),
    ]
    for dst, msg in cases:
        r = quiver("shuffle", s, "--seed=1", "-o", dst, check=False)
        assert r.returncode == 2, (dst, r.stderr)  # a usage error (QV_EARG)
        assert msg in r.stderr.decode(), (dst, r.stderr)
    assert a_file.read_text() == "keep me"
    assert (other / "mine.txt").read_text() == "keep me too"
    assert sorted(os.listdir(s)) == before
    assert not (s / "sub").exists()
    assert _leftovers(tmp_path, s) == []
    # an empty directory and a dataset directory are replaced
    empty = tmp_path / "empty"
    empty.mkdir()
    quiver("shuffle", s, "--seed=1", "-o", empty)
    quiver("shuffle", s, "--seed=2", "-o", empty)
    state = json.loads((empty / "state.json").read_text())
    assert len(state["_data_files"]) >= 1
