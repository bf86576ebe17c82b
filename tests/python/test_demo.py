"""`make demo` (scripts/demo.py) in a small mode, so it cannot rot.

The demo runs on a 20,000-row sample in a temporary directory: it must
finish, print its table (every step, within 80 columns) and report that all
its equality checks passed; the sample it builds is checked against its
description with `datasets`. Then the same demo runs with a quiver that
answers wrongly (a wrapper that changes the shuffle seed, the sort order and
one requested row): the demo must name exactly those steps as mismatches and
exit 1, so its checks are live. The second run reuses the cached sample.
"""
import os
import re
import stat
import subprocess
import sys

import datasets
import pytest

from qvpaths import BUILD, CLI, REPO, require

DEMO = os.path.join(REPO, "scripts", "demo.py")
ROWS = 20_000
STEPS = ["open", "get", "shuffle", "filter", "sort", "save"]


def run_demo(workdir, quiver):
    return subprocess.run(
        [sys.executable, DEMO, "--build", BUILD, "--rows", str(ROWS), "--dir", str(workdir),
         "--quiver", quiver],
        capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("demo")
    return work, run_demo(work, require(CLI))


def table_rows(out):
    """{first word of the step: (quiver, datasets, pyarrow) cells}."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(\w+) .*?(\S+ m?s)\s+(\S+ m?s)\s+\S+x\s+(\S+ m?s)\s+\S+x$", line)
        if m:
            rows[m.group(1)] = m.groups()[1:]
    return rows


def test_demo_completes_and_its_checks_pass(first_run):
    work, r = first_run
    assert r.returncode == 0, r.stdout + r.stderr
    assert "MISMATCH" not in r.stderr
    assert "building the sample dataset (20,000 rows" in r.stdout
    rows = table_rows(r.stdout)
    assert list(rows) == STEPS, r.stdout
    m = re.search(r"^checks: all (\d+) passed", r.stdout, re.M)
    assert m and int(m.group(1)) >= 4 * len(STEPS), r.stdout
    assert re.search(r"^data: .*sample-20000 \(\d+ MB", r.stdout, re.M), r.stdout
    for line in r.stdout.splitlines():
        if str(work) in line:
            continue        # the path of the test's temporary directory
        assert len(line) <= 80, f"wider than 80 columns: {line!r}"
    # quiver's outputs stay for the reader; the others' are removed.
    out = work / "out"
    assert sorted(os.listdir(out)) == ["quiver"]
    assert sorted(os.listdir(out / "quiver")) == ["copy", "filtered", "shuffled", "sorted"]


def test_sample_is_what_the_demo_says(first_run):
    work, r = first_run
    assert r.returncode == 0, r.stdout + r.stderr
    ds = datasets.load_from_disk(str(work / f"sample-{ROWS}"))
    assert len(ds) == ROWS
    assert ds.features["label"] == datasets.ClassLabel(names=["negative", "neutral", "positive"])
    assert ds.features["embedding"] == datasets.List(datasets.Value("float32"), length=16)
    t = ds.data.table
    assert t.column("id").to_pylist() == list(range(ROWS))
    lengths = [len(s) for s in t.column("text").to_pylist()]
    assert 50 <= min(lengths) and max(lengths) <= 300
    assert len(set(t.column("text").to_pylist())) > ROWS * 0.99
    assert set(t.column("label").to_pylist()) == {0, 1, 2}


def test_demo_reports_wrong_results(first_run, tmp_path):
    work, r = first_run
    assert r.returncode == 0, r.stdout + r.stderr
    liar = tmp_path / "quiver"
    liar.write_text(
        "#!/bin/sh\n"
        "# quiver, answering wrongly: another shuffle seed, the sort reversed,\n"
        "# and row 0 instead of the first row asked for by get.\n"
        f'q="{require(CLI)}"\n'
        'cmd=$1; shift\n'
        'case $cmd in\n'
        '  get) path=$1; shift; shift; exec "$q" get "$path" 0 "$@" ;;\n'
        '  shuffle) exec "$q" shuffle "$@" --seed=43 ;;\n'
        '  sort) exec "$q" sort "$@" --by=text:desc ;;\n'
        'esac\n'
        'exec "$q" "$cmd" "$@"\n')
    liar.chmod(liar.stat().st_mode | stat.S_IXUSR)
    bad = run_demo(work, str(liar))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "building the sample" not in bad.stdout      # the cached sample is reused
    failed = sorted({m for m in re.findall(r"^MISMATCH (\w+):", bad.stderr, re.M)})
    assert failed == ["get", "shuffle", "sort"], bad.stderr
    assert re.search(r"^checks: \d+ of \d+ FAILED", bad.stdout, re.M), bad.stdout
