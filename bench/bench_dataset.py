"""bench_dataset.py gen DIR | run DIR — the Hugging Face `datasets` side of the
dataset-layer benchmark (issue 6), reproducing datasets' own benchmarks
(benchmarks/benchmark_getitem_100B.py, benchmark_indices_mapping.py,
benchmark_iterating.py, benchmark_map_filter.py) on files both sides open:

  gen: DIR/mapping-500k.arrow — 500,000 rows {text: string (the sentence
       datasets' benchmark writes), numbers: float32 random}, written by
       datasets' ArrowWriter (1,000-row batches), and DIR/iter-50k.arrow —
       50,000 rows {list: Sequence(float32) of 100, numbers: float32}.
  run: times, as datasets' benchmarks measure them, on Dataset.from_file:
       getitem (first row, last row, 1,024 contiguous rows, 1,024 random
       rows: the mean of repeated calls), indices-mapping operations on the
       500k rows (select(range(0, n, 2)), sort("numbers"), shuffle,
       train_test_split(0.1), shard 10 ways), iterating the 50k rows (ds[i]
       for every row, ds[i:i+bs] for bs 10 / 100 / 1,000) before and after
       shuffle, and map/filter (identity batched map, filter with the
       default keep-all function, filter numbers > 0.5; the map also with
       keep_in_memory=True). Cache files are
       removed before each timed operation so every run computes. Also the
       `numbers` of the first rows of each result, which the quiver side
       must reproduce.
Prints one JSON line (times in seconds)."""
import glob
import json
import os
import sys
import time

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

SENTENCE = "The small grey turtle was surprisingly fast when challenged."
MAP_ROWS = 500_000
ITER_ROWS = 50_000


def gen(d):
    import datasets
    from datasets.arrow_writer import ArrowWriter

    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(42)
    f1 = datasets.Features({"text": datasets.Value("string"), "numbers": datasets.Value("float32")})
    p1 = os.path.join(d, "mapping-500k.arrow")
    if not os.path.exists(p1):
        with ArrowWriter(features=f1, path=p1 + ".tmp") as w:
            for start in range(0, MAP_ROWS, 1000):
                n = min(1000, MAP_ROWS - start)
                w.write_batch({"text": [SENTENCE] * n,
                               "numbers": rng.random(n, dtype=np.float32).tolist()})
            w.finalize()
        os.replace(p1 + ".tmp", p1)
    f2 = datasets.Features({"list": datasets.Sequence(datasets.Value("float32")),
                            "numbers": datasets.Value("float32")})
    p2 = os.path.join(d, "iter-50k.arrow")
    if not os.path.exists(p2):
        with ArrowWriter(features=f2, path=p2 + ".tmp") as w:
            for start in range(0, ITER_ROWS, 1000):
                n = min(1000, ITER_ROWS - start)
                lists = rng.random((n, 100), dtype=np.float32)
                w.write_batch({"list": [row.tolist() for row in lists],
                               "numbers": rng.random(n, dtype=np.float32).tolist()})
            w.finalize()
        os.replace(p2 + ".tmp", p2)


def clean(d):
    for f in glob.glob(os.path.join(d, "cache-*.arrow")):
        os.remove(f)


CPU = {}  # best process CPU time (all threads) of the last best() call, under "last"


def best(fn, d, reps=3):
    t = c = float("inf")
    out = None
    for _ in range(reps):
        clean(d)
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        t = min(t, time.perf_counter() - t0)
        c = min(c, time.process_time() - c0)
    CPU["last"] = c
    return t, out


def mean(fn, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def head(ds, k=5):
    return [float(x) for x in ds.with_format("numpy")["numbers"][:k]]


def run(d):
    import datasets

    out = {}
    ds = datasets.Dataset.from_file(os.path.join(d, "mapping-500k.arrow"))
    n = len(ds)
    # getitem (benchmark_getitem_100B.py)
    rand = np.random.default_rng(42).integers(0, n, 1024).tolist()
    out["getitem_first"] = mean(lambda: ds[0], 2000)
    out["getitem_last"] = mean(lambda: ds[-1], 2000)
    out["getitem_1024_contiguous"] = mean(lambda: ds[n // 2:n // 2 + 1024], 50)
    out["getitem_1024_random"] = mean(lambda: ds[rand], 50)
    # indices mapping (benchmark_indices_mapping.py, seeds fixed)
    checks = {}
    t, r = best(lambda: ds.select(range(0, n, 2)), d)
    out["select"], checks["select"] = t, head(r)
    t, r = best(lambda: ds.sort("numbers"), d)
    out["sort"], out["sort_cpu"], checks["sort"] = t, CPU["last"], head(r)
    t, r = best(lambda: ds.shuffle(seed=42), d)
    out["shuffle"], checks["shuffle"] = t, head(r)
    t, r = best(lambda: ds.train_test_split(0.1, seed=42), d)
    out["train_test_split"], checks["train_test_split"] = t, head(r["train"]) + head(r["test"])
    t, r = best(lambda: [ds.shard(10, i) for i in range(10)], d)
    out["shard"], checks["shard"] = t, head(r[9])
    # map / filter (benchmark_map_filter.py)
    t, r = best(lambda: ds.map(batched=True, load_from_cache_file=False), d, reps=1)
    out["map_identity_batched"], checks["map_identity_batched"] = t, head(r)
    t, r = best(lambda: ds.map(batched=True, keep_in_memory=True), d, reps=1)
    out["map_identity_batched_in_memory"] = t
    t, r = best(lambda: ds.filter(load_from_cache_file=False), d, reps=1)
    out["filter_all"], checks["filter_all"] = t, [len(r)]
    t, r = best(lambda: ds.filter(lambda x: x["numbers"] > 0.5, load_from_cache_file=False), d,
                reps=1)
    out["filter_numbers"], checks["filter_numbers"] = t, [len(r)] + head(r)
    clean(d)
    # iterating (benchmark_iterating.py)
    it = datasets.Dataset.from_file(os.path.join(d, "iter-50k.arrow"))
    m = len(it)
    for label, dset in (("", it), ("shuffled_", None)):
        if dset is None:
            dset = it.shuffle(seed=42)
            checks["iter_shuffle"] = head(dset)

        def read(dset=dset):
            for i in range(m):
                _ = dset[i]

        t0 = time.perf_counter()
        read()
        out[f"{label}read_rows"] = time.perf_counter() - t0
        for bs in (10, 100, 1000):
            t0 = time.perf_counter()
            for i in range(0, m, bs):
                _ = dset[i:i + bs]
            out[f"{label}read_batch_{bs}"] = time.perf_counter() - t0
    clean(d)
    out["checks"] = checks
    out["rows"] = n
    out["iter_rows"] = m
    print(json.dumps(out))


if __name__ == "__main__":
    mode, d = sys.argv[1], sys.argv[2]
    if mode == "gen":
        gen(d)
    else:
        run(d)
