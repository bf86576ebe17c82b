"""bench_pyext.py DIR ROWS [REPS [STREAM_BATCHES]] — the Python extension
(`import quiver`) against `datasets` on the same save_to_disk directory
(written here by datasets under DIR/pyext-ROWS if missing: id int64, text
string, x float64): 20,000 random `ds[i]`, a batched Python map
(keep_in_memory on both sides: the function's work, not the cache file),
and handing the table to pyarrow (`pa.table(ds)` vs datasets'
`ds.data.table`); best of 3.

Then issue #13's cases on its realistic schema (DIR/pyext-real-ROWS: int64
id, 50-300-char text, ClassLabel, list<float32>[16]): random `ds[i]` plain
and after shuffle, `ds[i:i+32]`, numpy batches of 1000
(`with_format("numpy").iter`) plain and shuffled, `pickle.loads` of a
shuffled dataset, and `load_from_disk` of a directory whose shard is a
stream of STREAM_BATCHES (default 50,000) record batches of 2 rows (the
reopen cost of issue #11; its stream index is in the per-user cache after
the first open). Best of REPS (default 5), datasets and quiver
alternating in each repetition, wall and CPU time (process_time) each;
every line gives the ratio and the issue's goal (judged on CPU time, the
machine being shared) and the load average is printed. Checks that both
sides return the same rows and numpy batches. QV_PYEXT_ONLY=realistic
skips the first part. Prints JSON lines and the ratios.
Environment: PYTHONPATH must reach build/python (bench/run.sh sets it).
"""
import json
import os
import random
import sys
import time

os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import datasets  # noqa: E402
import pyarrow as pa  # noqa: E402
import quiver  # noqa: E402


def best(fn, reps=3):
    b = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t)
    return b


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    stream_batches = int(sys.argv[4]) if len(sys.argv) > 4 else 50000
    if os.environ.get("QV_PYEXT_ONLY") == "realistic":
        return realistic(d, n, reps, stream_batches)
    path = os.path.join(d, f"pyext-{n}")
    if not os.path.exists(os.path.join(path, "state.json")):
        datasets.Dataset.from_dict({
            "id": list(range(n)),
            "text": [f"row {i} " * 3 for i in range(n)],
            "x": [i * 0.5 for i in range(n)],
        }).save_to_disk(path)
    h, q = datasets.load_from_disk(path), quiver.open(path)
    rng = random.Random(1)
    idx = [rng.randrange(n) for _ in range(20000)]
    assert all(h[i] == q[i] for i in idx[:2000]), "quiver and datasets read different rows"
    fn = lambda b: {"y": [v * 2 for v in b["x"]]}  # noqa: E731
    out = {
        "rows": n,
        "getitem_datasets_s": best(lambda: [h[i] for i in idx]),
        "getitem_quiver_s": best(lambda: [q[i] for i in idx]),
        "map_datasets_s": best(lambda: h.map(fn, batched=True, keep_in_memory=True), 1),
        "map_quiver_s": best(lambda: q.map(fn, batched=True), 1),
        "to_arrow_datasets_s": best(lambda: pa.table(h.data.table)),
        "to_arrow_quiver_s": best(lambda: pa.table(q)),
    }
    assert pa.table(q).equals(h.data.table.select(pa.table(q).column_names))
    print(json.dumps(out))
    for k, label in (("getitem", "20,000 random ds[i]"), ("map", "batched Python map"),
                     ("to_arrow", "to a pyarrow Table")):
        a, b = out[f"{k}_datasets_s"], out[f"{k}_quiver_s"]
        print(f"{label}: quiver {b * 1e3:.1f} ms vs datasets {a * 1e3:.1f} ms -> {a / b:.1f}x")
    realistic(d, n, reps, stream_batches)


def timed(fn):
    """(wall, CPU) seconds of one call; CPU is this process's user+sys."""
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def alternate(pairs, reps):
    """Best of `reps` (wall and CPU, each its own minimum) of every
    function of `pairs` ({case: (datasets_fn, quiver_fn)}), datasets and
    quiver alternating within each repetition so that both see the same
    load."""
    res = {k: [[float("inf")] * 2, [float("inf")] * 2] for k in pairs}
    for _ in range(reps):
        for k, fns in pairs.items():
            for side, fn in enumerate(fns):
                w, c = timed(fn)
                r = res[k][side]
                r[0], r[1] = min(r[0], w), min(r[1], c)
    return res


def stream_dir(d, batches):
    """A save_to_disk directory whose one shard is a stream of `batches`
    record batches of 2 rows (id int64, text string), as a cache file of
    many small map() writes looks: written by pyarrow, state.json and
    dataset_info.json as datasets writes them."""
    path = os.path.join(d, f"pyext-stream-{batches}")
    if os.path.exists(os.path.join(path, "state.json")):
        return path
    os.makedirs(path, exist_ok=True)
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    tmp = os.path.join(path, "data.tmp")
    with pa.OSFile(tmp, "wb") as f, pa.ipc.new_stream(f, schema) as w:
        for b in range(batches):
            w.write_batch(pa.record_batch([pa.array([2 * b, 2 * b + 1]),
                                           pa.array([f"row {2 * b}", f"row {2 * b + 1}"])],
                                          schema=schema))
    os.replace(tmp, os.path.join(path, "data-00000-of-00001.arrow"))
    with open(os.path.join(path, "dataset_info.json"), "w") as f:
        json.dump({"features": {"id": {"dtype": "int64", "_type": "Value"},
                                "text": {"dtype": "string", "_type": "Value"}}}, f)
    with open(os.path.join(path, "state.json"), "w") as f:
        json.dump({"_data_files": [{"filename": "data-00000-of-00001.arrow"}],
                   "_fingerprint": "%016x" % batches, "_format_columns": None,
                   "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False,
                   "_split": None}, f)
    return path


# case: (label, goal as text, whether the goal is met by the ratio r)
GOALS = {
    "row": ("20,000 random ds[i]", ">= 20x", lambda r: r >= 20),
    "row_shuffled": ("20,000 random ds[i], shuffled", ">= 20x", lambda r: r >= 20),
    "slice32": ("2,000 ds[i:i+32]", ">= 3x", lambda r: r >= 3),
    "numpy1000": ("numpy batches of 1000", ">= 5x", lambda r: r >= 5),
    "numpy1000_shuffled": ("numpy batches of 1000, shuffled", "", None),
    "pickle_loads": ("pickle.loads of a shuffled dataset", "<= 5 ms", None),
    "reopen": ("load_from_disk again", "<= 5 ms", None),
}


def realistic(d, n, reps=5, stream_batches=50000):
    import pickle

    import numpy as np
    path = os.path.join(d, f"pyext-real-{n}")
    if not os.path.exists(os.path.join(path, "state.json")):
        rng = np.random.default_rng(0)
        lens = rng.integers(50, 301, n)
        words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod "
        datasets.Dataset.from_dict({
            "id": list(range(n)),
            "text": [(words * 5)[:k] for k in lens],
            "label": rng.integers(0, 4, n).tolist(),
            "emb": rng.random((n, 16), dtype=np.float32),
        }, features=datasets.Features({
            "id": datasets.Value("int64"), "text": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["a", "b", "c", "d"]),
            "emb": datasets.List(datasets.Value("float32"), length=16)})).save_to_disk(path)
    h, q = datasets.load_from_disk(path), quiver.open(path)
    hs, qs = h.shuffle(seed=1), q.shuffle(seed=1)
    rng = random.Random(2)
    idx = [rng.randrange(n) for _ in range(20000)]
    starts = [rng.randrange(max(1, n - 32)) for _ in range(2000)]
    assert all(h[i] == q[i] and hs[i] == qs[i] for i in idx[:500])
    assert all(h[i:i + 32] == q[i:i + 32] for i in starts[:100])
    hn, qn = h.with_format("numpy"), q.with_format("numpy")
    hsn, qsn = hs.with_format("numpy"), qs.with_format("numpy")
    nb = min(n, 100000)  # rows read as numpy batches
    for a, b in ((hn, qn), (hsn, qsn)):
        x, y = next(iter(a.iter(batch_size=1000))), next(iter(b.iter(batch_size=1000)))
        assert all(x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]) for k in x)

    def batches(ds):
        k = 0
        for b in ds.iter(batch_size=1000):
            k += 1000
            if k >= nb:
                break

    blob_h, blob_q = pickle.dumps(hs), pickle.dumps(qs)
    sp = stream_dir(d, stream_batches)
    assert len(datasets.load_from_disk(sp)) == len(quiver.load_from_disk(sp)) == 2 * stream_batches
    pairs = {
        "row": (lambda: [h[i] for i in idx], lambda: [q[i] for i in idx]),
        "row_shuffled": (lambda: [hs[i] for i in idx], lambda: [qs[i] for i in idx]),
        "slice32": (lambda: [h[i:i + 32] for i in starts], lambda: [q[i:i + 32] for i in starts]),
        "numpy1000": (lambda: batches(hn), lambda: batches(qn)),
        "numpy1000_shuffled": (lambda: batches(hsn), lambda: batches(qsn)),
        "pickle_loads": (lambda: pickle.loads(blob_h), lambda: pickle.loads(blob_q)),
        "reopen": (lambda: datasets.load_from_disk(sp), lambda: quiver.load_from_disk(sp)),
    }
    res = alternate(pairs, reps)
    out = {"rows": n, "reps": reps, "stream_batches": stream_batches,
           "loadavg": os.getloadavg()[0]}
    for k, ((hw, hc), (qw, qc)) in res.items():
        out.update({f"{k}_datasets_s": hw, f"{k}_quiver_s": qw,
                    f"{k}_datasets_cpu_s": hc, f"{k}_quiver_cpu_s": qc})
    print(json.dumps(out))
    print(f"best of {reps}, datasets and quiver alternating; load average "
          f"{os.getloadavg()[0]:.2f}; wall (CPU) ms")
    for k, (label, goal, met) in GOALS.items():
        (hw, hc), (qw, qc) = res[k]
        if k == "reopen":
            label += f" ({stream_batches:,} batches)"
        if k.startswith("numpy"):
            label += f" ({nb:,} rows)"
        line = (f"{label}: quiver {qw * 1e3:.2f} ({qc * 1e3:.2f}) vs datasets {hw * 1e3:.2f} "
                f"({hc * 1e3:.2f}) -> {hw / qw:.1f}x wall, {hc / max(qc, 1e-9):.1f}x CPU")
        if met is not None:
            line += f"; goal {goal}: {'met' if met(hc / max(qc, 1e-9)) else 'missed'} (CPU)"
        elif goal:
            line += f"; goal {goal}: {'met' if qc <= 0.005 else 'missed'} (CPU)"
        print(line)
    (w1, c1), (w0, c0) = res["numpy1000_shuffled"][1], res["numpy1000"][1]
    print(f"quiver numpy batches shuffled / unshuffled: {w1 / w0:.2f} wall, {c1 / c0:.2f} CPU; "
          f"goal <= 1.2: {'met' if c1 / c0 <= 1.2 else 'missed'} (CPU)")


if __name__ == "__main__":
    main()
