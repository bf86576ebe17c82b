"""scripts/demo.py — the main job, timed: quiver's CLI beside Hugging Face
`datasets` (and pyarrow where it is the natural tool) on a sample dataset of
a few million rows, every result checked equal across the three.

    python scripts/demo.py [--build DIR] [--rows N] [--dir DIR] [--quiver PATH]

(`make demo` runs it through scripts/demo.sh.) The sample is a save_to_disk
directory written by `datasets` itself (int64 id, a 50-300-char text, a
ClassLabel label, a List(float32, length=16) embedding), built once from
numpy/pyarrow data and cached in DIR/sample-N (default build/demo); a later
run reuses it. Each step then runs `build/quiver ...` as a subprocess (its
wall time, process start included) and the same step in `datasets` and
pyarrow in this process, and compares the results row for row: a step whose
results differ is reported and makes the demo exit 1, so it cannot print a
speed-up for a wrong answer. Environment: QV_DEMO_ROWS (default 2000000).

Adding a step (group-by and join, when `quiver group-by` / `quiver join`
land): write a function like step_filter below — run the quiver command with
c.quiver(...), time the datasets and pyarrow versions with timed(...), call
c.check(...) on the results — and append it to STEPS. Natural references:
group-by, pyarrow `Table.group_by(keys).aggregate(...)` (datasets has no
group-by; its users go through `ds.to_pandas().groupby`); join, pyarrow
`Table.join(right, keys)` against a small table (e.g. label -> name).
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import warnings

SAMPLE_VERSION = 1          # bump when the sample's contents change
LABELS = ["negative", "neutral", "positive"]
SEED = 42
WHERE = "label == 1 and len(text) > 200"


def timed(fn):
    """(seconds, result) of fn()."""
    t = time.perf_counter()
    r = fn()
    return time.perf_counter() - t, r


# --------------------------------------------------------------------------
# The sample dataset


def sample_table(n):
    """The sample as a pyarrow table, the same for the same n on every
    machine. Texts join two sentence halves drawn from two pools of up to
    64 Ki each, so only the pools are built in Python."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(20261201)
    syllables = np.array(["ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "da", "pe",
                          "zu", "ri", "ba", "no", "te", "la", "qui", "ver", "ar", "row"])
    parts = syllables[rng.integers(0, len(syllables), size=(8192, 3))]
    nsyl = rng.integers(1, 4, size=8192)
    vocab = sorted({"".join(p[:k]) for p, k in zip(parts, nsyl)})

    def pool(m, end):
        # m sentence halves of 24..149 characters (ending in `end`): two of
        # them joined by a space make a text of 50..300 characters.
        out = []
        while len(out) < m:
            k = rng.integers(4, 31, size=m)
            ids = rng.integers(0, len(vocab), size=int(k.sum())).tolist()
            words = [vocab[i] for i in ids]
            p = 0
            for kk in k.tolist():
                s = " ".join(words[p:p + kk]) + end
                p += kk
                if 24 <= len(s) <= 149:
                    out.append(s)
        return pa.array(out[:m], pa.string())

    m = min(1 << 16, n)
    first, second = pool(m, ""), pool(m, ".")
    text = pc.binary_join_element_wise(first.take(rng.integers(0, m, size=n)),
                                       second.take(rng.integers(0, m, size=n)), " ")
    emb = rng.standard_normal((n, 16), dtype=np.float32)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "text": text,
        "label": pa.array(rng.integers(0, len(LABELS), size=n, dtype=np.int64)),
        "embedding": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), 16),
    })


def ensure_sample(root, n):
    """DIR/sample-N, built by datasets' save_to_disk unless a complete one of
    this version is there. Returns (path, seconds spent building or None)."""
    import datasets

    path = os.path.join(root, f"sample-{n}")
    stamp = os.path.join(path, ".quiver-demo")
    want = {"version": SAMPLE_VERSION, "rows": n}
    try:
        with open(stamp) as f:
            if json.load(f) == want:
                return path, None
    except (OSError, ValueError):
        pass
    print(f"building the sample dataset ({n:,} rows; once, then cached) ...", flush=True)
    t0 = time.perf_counter()
    features = datasets.Features({
        "id": datasets.Value("int64"),
        "text": datasets.Value("string"),
        "label": datasets.ClassLabel(names=LABELS),
        "embedding": datasets.List(datasets.Value("float32"), length=16),
    })
    table = sample_table(n).cast(features.arrow_schema)
    fingerprint = hashlib.sha256(f"quiver-demo-{SAMPLE_VERSION}-{n}".encode()).hexdigest()[:16]
    ds = datasets.Dataset(datasets.table.InMemoryTable(table),
                          info=datasets.DatasetInfo(features=features), fingerprint=fingerprint)
    # Built beside its final place and renamed, so an interrupted build is
    # never taken for a sample.
    tmp = f"{path}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    ds.save_to_disk(tmp)
    with open(os.path.join(tmp, ".quiver-demo"), "w") as f:
        json.dump(want, f)
    shutil.rmtree(path, ignore_errors=True)
    os.rename(tmp, path)
    return path, time.perf_counter() - t0


# --------------------------------------------------------------------------
# Running and checking


class Demo:
    def __init__(self, quiver, sample, out, n):
        self.quiver_bin, self.sample, self.out, self.n = quiver, sample, out, n
        self.passed, self.failed = 0, []
        self.state = {}

    def quiver(self, *args):
        """(seconds, stdout) of `quiver ARGS`; a failing command is fatal."""
        cmd = [self.quiver_bin, *map(str, args)]
        t = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        dt = time.perf_counter() - t
        if p.returncode != 0:
            shown = " ".join(cmd[:6]) + (" ..." if len(cmd) > 6 else "")
            sys.exit(f"demo: '{shown}' failed (exit {p.returncode}):\n{p.stderr}")
        return dt, p.stdout

    def dir(self, tool, name):
        return os.path.join(self.out, tool, name)

    def check(self, step, what, ok):
        if ok:
            self.passed += 1
        else:
            self.failed.append(f"{step}: {what}")
            print(f"MISMATCH {step}: {what}", file=sys.stderr, flush=True)


def pa_open(path):
    """A save_to_disk directory as one pyarrow table over its mapped shards
    (what datasets does underneath)."""
    import pyarrow as pa
    files = sorted(glob.glob(os.path.join(path, "data-*.arrow")))
    return pa.concat_tables([pa.ipc.open_stream(pa.memory_map(f)).read_all() for f in files])


def durable(path):
    """fsync every file of directory path, then the directory: quiver's
    saves are fsynced (atomic writes), so datasets' and pyarrow's are made
    as durable inside their timed step."""
    for name in os.listdir(path):
        fd = os.open(os.path.join(path, name), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ds_save(ds, path):
    """datasets' save_to_disk, made durable."""
    ds.save_to_disk(path)
    durable(path)


def pa_save(table, path):
    """table as one IPC stream file path/data.arrow (pyarrow's counterpart
    of save), made durable."""
    import pyarrow as pa
    os.makedirs(path, exist_ok=True)
    with pa.OSFile(os.path.join(path, "data.arrow"), "wb") as f, \
            pa.ipc.new_stream(f, table.schema) as w:
        w.write_table(table, max_chunksize=1000)
    durable(path)


def same_rows(a, b):
    """Equal schemas (field names and types) and equal values, whatever the
    chunking; schema metadata is not compared."""
    return a.schema.remove_metadata().equals(b.schema.remove_metadata()) and a.equals(b)


def compare_saved(c, step, name, pa_result):
    """quiver's and datasets' outputs of step, as datasets loads them, and
    pyarrow's result: the same rows in the same order."""
    import datasets
    q = datasets.load_from_disk(c.dir("quiver", name))
    d = datasets.load_from_disk(c.dir("datasets", name))
    c.check(step, f"quiver wrote {len(q):,} rows, datasets {len(d):,}", len(q) == len(d))
    c.check(step, "features differ from datasets'", q.features == d.features)
    c.check(step, "rows differ from datasets'", same_rows(q.data.table, d.data.table))
    if pa_result is not None:
        c.check(step, "rows differ from pyarrow's", same_rows(q.data.table, pa_result))
    return len(q)


# --------------------------------------------------------------------------
# The steps. Each returns (label, quiver s, datasets s, pyarrow s or None).


def step_open(c):
    import datasets
    tq, out = c.quiver("info", "--json", c.sample)
    info = json.loads(out)
    td, ds = timed(lambda: datasets.load_from_disk(c.sample))
    tp, tab = timed(lambda: pa_open(c.sample))
    c.check("open", f"rows: quiver {info['rows']}, datasets {len(ds)}, pyarrow {tab.num_rows}",
            info["rows"] == len(ds) == tab.num_rows == c.n)
    c.check("open", "features differ", info["features"] == ds.features.to_dict())
    with open(os.path.join(c.sample, "state.json")) as f:
        state = json.load(f)
    c.check("open", "fingerprint differs from state.json's",
            info["fingerprint"] == state["_fingerprint"])
    c.state.update(ds=ds, tab=tab)
    return "open (info | load_from_disk)", tq, td, tp


def step_get(c):
    import numpy as np
    import pyarrow as pa
    ds, tab = c.state["ds"], c.state["tab"]
    k = min(10_000, max(1, c.n // 20))
    idx = np.random.default_rng(7).integers(0, c.n, size=k)
    tq, out = c.quiver("get", c.sample, *idx.tolist())
    td, got = timed(lambda: ds[idx.tolist()])
    tp, taken = timed(lambda: tab.take(pa.array(idx)))
    rows = [json.loads(line) for line in out.splitlines()]
    c.check("get", f"quiver printed {len(rows)} rows for {k}", len(rows) == k)
    if len(rows) == k:
        for col in ("id", "text", "label"):
            c.check("get", f"column {col} differs from datasets'",
                    [r[col] for r in rows] == got[col])
        # JSON carries each float32 in its shortest round-trip form.
        qe = np.array([r["embedding"] for r in rows], dtype=np.float32)
        c.check("get", "embedding differs from datasets'",
                np.array_equal(qe, np.array(got["embedding"], dtype=np.float32)))
    c.check("get", "ids are not the rows asked for", got["id"] == idx.tolist())
    c.check("get", "pyarrow's rows differ from datasets'", taken.to_pydict() == got)
    return f"get {k:,} random rows", tq, td, tp


def step_shuffle(c):
    import numpy as np
    import pyarrow as pa
    ds, tab = c.state["ds"], c.state["tab"]
    tq, _ = c.quiver("shuffle", c.sample, f"--seed={SEED}", "-o", c.dir("quiver", "shuffled"))
    td, _ = timed(lambda: ds_save(ds.shuffle(seed=SEED), c.dir("datasets", "shuffled")))

    def pyarrow_way():
        t = tab.take(pa.array(np.random.default_rng(SEED).permutation(tab.num_rows)))
        pa_save(t, c.dir("pyarrow", "shuffled"))
        return t
    tp, t = timed(pyarrow_way)
    compare_saved(c, "shuffle", "shuffled", t)
    return f"shuffle (seed {SEED}) + save", tq, td, tp


def step_filter(c):
    import pyarrow.compute as pc
    ds, tab = c.state["ds"], c.state["tab"]
    tq, _ = c.quiver("filter", c.sample, f"--where={WHERE}", "-o", c.dir("quiver", "filtered"))

    def datasets_way():
        kept = ds.filter(lambda label, text: [a == 1 and len(b) > 200 for a, b in zip(label, text)],
                         input_columns=["label", "text"], batched=True)
        ds_save(kept, c.dir("datasets", "filtered"))
    td, _ = timed(datasets_way)

    def pyarrow_way():
        t = tab.filter((pc.field("label") == 1) & (pc.utf8_length(pc.field("text")) > 200))
        pa_save(t, c.dir("pyarrow", "filtered"))
        return t
    tp, t = timed(pyarrow_way)
    kept = compare_saved(c, "filter", "filtered", t)
    c.state.update(filtered=t)
    return f"filter + save ({kept:,} kept)", tq, td, tp


def step_sort(c):
    import datasets
    src = c.dir("quiver", "filtered")      # the filter step's output
    tq, _ = c.quiver("sort", src, "--by=text", "-o", c.dir("quiver", "sorted"))
    td, _ = timed(lambda: ds_save(datasets.load_from_disk(c.dir("datasets", "filtered"))
                                  .sort("text"), c.dir("datasets", "sorted")))

    def pyarrow_way():
        t = c.state["filtered"].sort_by("text")
        pa_save(t, c.dir("pyarrow", "sorted"))
        return t
    tp, t = timed(pyarrow_way)
    compare_saved(c, "sort", "sorted", t)
    return "sort kept rows by text + save", tq, td, tp


def step_save(c):
    ds, tab = c.state["ds"], c.state["tab"]
    tq, _ = c.quiver("flatten", c.sample, "-o", c.dir("quiver", "copy"))
    td, _ = timed(lambda: ds_save(ds, c.dir("datasets", "copy")))
    tp, _ = timed(lambda: pa_save(tab, c.dir("pyarrow", "copy")))
    compare_saved(c, "save", "copy", tab)
    return "save a copy", tq, td, tp


# Add group-by / join steps here when the commands land (see the docstring).
STEPS = [step_open, step_get, step_shuffle, step_filter, step_sort, step_save]


# --------------------------------------------------------------------------


def fmt_time(t):
    if t is None:
        return "-"
    return f"{t * 1000:.0f} ms" if t < 1 else f"{t:.2f} s"


def fmt_ratio(other, mine):
    if other is None:
        return "-"
    r = other / mine
    return f"{r:.1f}x" if r >= 1 else f"{r:.2f}x"


def du(path):
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(path, "*")) if os.path.isfile(f))


def shown(path):
    """path relative to the current directory when it is below it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(top, "build"), help="build directory")
    ap.add_argument("--rows", type=int, default=int(os.environ.get("QV_DEMO_ROWS", 2_000_000)))
    ap.add_argument("--dir", help="sample and outputs (default BUILD/demo)")
    ap.add_argument("--quiver", help="the quiver binary (default BUILD/quiver)")
    a = ap.parse_args()
    if a.rows < 100:
        ap.error("--rows must be at least 100")
    root = os.path.abspath(a.dir or os.path.join(a.build, "demo"))
    qbin = os.path.abspath(a.quiver or os.path.join(a.build, "quiver"))
    if not os.access(qbin, os.X_OK):
        sys.exit(f"demo: no quiver binary at {qbin} (run make first)")

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    warnings.filterwarnings("ignore", category=FutureWarning)
    import datasets
    datasets.disable_progress_bars()
    # Intermediate results stay in temporaries (as quiver's stay in memory)
    # and a later run never reuses them, so each run measures the work.
    datasets.disable_caching()

    os.makedirs(root, exist_ok=True)
    sample, built = ensure_sample(root, a.rows)
    if built is not None:
        print(f"built in {built:.1f} s with datasets' save_to_disk\n")
    out = os.path.join(root, "out")
    shutil.rmtree(out, ignore_errors=True)
    for f in glob.glob(os.path.join(sample, "data-*.arrow")):   # same page cache for all
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass

    c = Demo(qbin, sample, out, a.rows)
    print(f"{a.rows:,} rows (id, text, label, embedding); wall time of each step")
    print(f"{'step':<30}{'quiver':>9}{'datasets':>10}{'ratio':>7}{'pyarrow':>10}{'ratio':>7}")
    t0 = time.perf_counter()
    for step in STEPS:
        label, tq, td, tp = step(c)
        print(f"{label:<30}{fmt_time(tq):>9}{fmt_time(td):>10}{fmt_ratio(td, tq):>7}"
              f"{fmt_time(tp):>10}{fmt_ratio(tp, tq):>7}", flush=True)
    total = time.perf_counter() - t0
    for tool in ("datasets", "pyarrow"):
        shutil.rmtree(os.path.join(out, tool), ignore_errors=True)
    print("ratio: their time / quiver's (above 1: quiver is faster); one run each.\n"
          "quiver: the CLI, process start and JSON output included. Every save is\n"
          "fsynced (quiver's writes are atomic; datasets' and pyarrow's are synced here).")
    if c.failed:
        print(f"checks: {len(c.failed)} of {c.passed + len(c.failed)} FAILED "
              f"(see MISMATCH above); steps took {total:.0f} s")
    else:
        print(f"checks: all {c.passed} passed (every result equal in quiver, datasets, "
              f"pyarrow); {total:.0f} s")
    print(f"data: {shown(sample)} ({du(sample) / 1e6:,.0f} MB, a datasets save_to_disk dir)")
    print(f"quiver's results: {shown(os.path.join(out, 'quiver'))}/")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
