"""bench_pyext.py DIR ROWS — the Python extension (`import quiver`) against
`datasets` on the same save_to_disk directory (written here by datasets
under DIR/pyext-ROWS if missing: id int64, text string, x float64):
20,000 random `ds[i]`, a batched Python map (keep_in_memory on both sides:
the function's work, not the cache file), and handing the table to pyarrow
(`pa.table(ds)` vs datasets' `ds.data.table`). Best of 3. Checks that both
sides return the same rows. Prints a JSON line and the ratios.
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


if __name__ == "__main__":
    main()
