"""bench_pyext.py DIR ROWS — the Python extension (`import quiver`) against
`datasets` on the same save_to_disk directory (written here by datasets
under DIR/pyext-ROWS if missing: id int64, text string, x float64):
20,000 random `ds[i]`, a batched Python map (keep_in_memory on both sides:
the function's work, not the cache file), and handing the table to pyarrow
(`pa.table(ds)` vs datasets' `ds.data.table`). Then issue #13's cases on
its realistic schema (DIR/pyext-real-ROWS: int64 id, 50-300-char text,
ClassLabel, list<float32>[16]): random `ds[i]` plain and after shuffle,
`ds[i:i+32]`, numpy batches of 1000 (`with_format("numpy").iter`) plain
and shuffled, and `pickle.loads` of a shuffled dataset. Best of 3. Checks
that both sides return the same rows. Prints JSON lines and the ratios.
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
    realistic(d, n)


def realistic(d, n):
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
    hn, qn = h.with_format("numpy"), q.with_format("numpy")
    hsn, qsn = hs.with_format("numpy"), qs.with_format("numpy")
    nb = min(n, 100000)  # rows read as numpy batches

    def batches(ds):
        k = 0
        for b in ds.iter(batch_size=1000):
            k += 1000
            if k >= nb:
                break

    blob_h, blob_q = pickle.dumps(hs), pickle.dumps(qs)
    out = {
        "rows": n,
        "row_datasets_s": best(lambda: [h[i] for i in idx]),
        "row_quiver_s": best(lambda: [q[i] for i in idx]),
        "row_shuffled_datasets_s": best(lambda: [hs[i] for i in idx]),
        "row_shuffled_quiver_s": best(lambda: [qs[i] for i in idx]),
        "slice32_datasets_s": best(lambda: [h[i:i + 32] for i in starts]),
        "slice32_quiver_s": best(lambda: [q[i:i + 32] for i in starts]),
        "numpy1000_datasets_s": best(lambda: batches(hn)),
        "numpy1000_quiver_s": best(lambda: batches(qn)),
        "numpy1000_shuffled_datasets_s": best(lambda: batches(hsn)),
        "numpy1000_shuffled_quiver_s": best(lambda: batches(qsn)),
        "pickle_loads_datasets_s": best(lambda: pickle.loads(blob_h)),
        "pickle_loads_quiver_s": best(lambda: pickle.loads(blob_q)),
    }
    print(json.dumps(out))
    for k, label in (("row", "20,000 random ds[i]"),
                     ("row_shuffled", "20,000 random ds[i], shuffled"),
                     ("slice32", "2,000 ds[i:i+32]"),
                     ("numpy1000", f"numpy batches of 1000 ({nb} rows)"),
                     ("numpy1000_shuffled", f"numpy batches of 1000 ({nb} rows), shuffled"),
                     ("pickle_loads", "pickle.loads of a shuffled dataset")):
        a, b = out[f"{k}_datasets_s"], out[f"{k}_quiver_s"]
        print(f"{label}: quiver {b * 1e3:.2f} ms vs datasets {a * 1e3:.2f} ms -> {a / b:.1f}x")
    a, b = out["numpy1000_shuffled_quiver_s"], out["numpy1000_quiver_s"]
    print(f"quiver numpy batches shuffled / unshuffled: {a / b:.2f}")


if __name__ == "__main__":
    main()
