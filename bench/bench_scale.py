"""bench/bench_scale.py — quiver.ray.read against Ray's own ways to read the
same data (never in CI; run in build/venv-scale, `make venv-scale`):

  read:  a save_to_disk directory of --gb GB in --shards shards, plain and
         shuffled (seed 0), read by a local Ray (num_cpus=--cpus) through
           quiver.ray.read(quiver.open(dir)[.shuffle(0)])
           ray.data.from_huggingface(datasets.load_from_disk(dir)[.shuffle(0)])
           ray.data.read_parquet(the same rows as Parquet files)
             [.random_shuffle(seed=0) for the shuffled case: Ray's way]
         each consumed in the workers (map_batches counting rows), each in a
         fresh driver process: rows/s and the driver's peak RSS (ru_maxrss,
         file pages it touched included), ratios against quiver.
  plan:  --plan-shards small shards: driver metadata cost (quiver.open,
         prepare, plan into one task per shard), spec bytes per task, and a
         task's open cost (rebuilding the data from its recipe) — the
         numbers docs/scale-out.md extrapolates from.

  build/venv-scale/bin/python bench/bench_scale.py [--gb 1.5] [--shards 8]
      [--plan-shards 2000] [--sections read,plan] [--dir build/bench-data/scale]

Data is generated once under --dir (reused while its parameters match).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
ROW_TEXT = 400  # bytes of text per row


def _path_setup():
    pkg = os.path.join(os.environ.get("QV_BUILD", os.path.join(TOP, "build")), "python")
    sys.path.insert(0, pkg)
    os.environ["PYTHONPATH"] = pkg + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def _table(lo, hi):
    import numpy as np
    import pyarrow as pa

    n = hi - lo
    rng = np.random.default_rng(lo)
    raw = rng.integers(97, 123, size=n * ROW_TEXT, dtype=np.uint8).tobytes()
    offsets = pa.array(np.arange(0, (n + 1) * ROW_TEXT, ROW_TEXT, dtype=np.int32))
    text = pa.StringArray.from_buffers(n, offsets.buffers()[1], pa.py_buffer(raw))
    return pa.table({"id": pa.array(np.arange(lo, hi, dtype=np.int64)), "text": text,
                     "score": pa.array(rng.random(n)),
                     "label": pa.array(rng.integers(0, 10, n, dtype=np.int64))})


def generate(root, gb, shards, batch_rows=1000):
    """root/hf (save_to_disk, batches of batch_rows rows) and root/parquet
    (one Parquet file per shard), the same rows; reused when present."""
    import pyarrow.parquet as pq

    from quiver import distributed

    stamp = os.path.join(root, "params.json")
    params = {"gb": gb, "shards": shards, "batch_rows": batch_rows, "text": ROW_TEXT}
    if os.path.exists(stamp) and json.load(open(stamp)) == params:
        return os.path.join(root, "hf"), os.path.join(root, "parquet")
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "parquet"))
    rows = int(gb * 1e9 / (ROW_TEXT + 4 + 24))
    per = -(-rows // shards)
    stage = distributed.staging_dir(os.path.join(root, "hf"))
    names = []
    for s in range(shards):
        lo, hi = s * per, min(rows, (s + 1) * per)

        def chunks(lo=lo, hi=hi):
            for a in range(lo, hi, 50000):
                yield from _table(a, min(hi, a + 50000)).to_batches(max_chunksize=batch_rows)

        name, _, feats = distributed.write_shard(stage, f"s{s:05d}.arrow", chunks())
        names.append(name)
        pq.write_table(pa_concat(chunks()), os.path.join(root, "parquet", f"part-{s:05d}.parquet"),
                       row_group_size=64 * 1024)
    distributed.finish_save(stage, os.path.join(root, "hf"), names, feats)
    json.dump(params, open(stamp, "w"))
    return os.path.join(root, "hf"), os.path.join(root, "parquet")


def pa_concat(batches):
    import pyarrow as pa

    return pa.Table.from_batches(list(batches))


def _anon_mb():
    """Anonymous resident memory of this process (heap, not file pages), MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _count(t):
    import pyarrow as pa

    return pa.table({"n": [t.num_rows]})


def run_case(kind, path, shuffled, cpus, blocks):
    """One case in this (fresh) process: JSON with rows, seconds, peak RSS."""
    _path_setup()
    import ray

    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    if kind == "quiver":
        import quiver
        import quiver.ray as qr

        ds = quiver.open(path)
        if shuffled:
            ds = ds.shuffle(seed=0)
        rds = qr.read(ds, override_num_blocks=blocks)
    elif kind == "from_huggingface":
        import datasets

        hf = datasets.load_from_disk(path)
        if shuffled:
            hf = hf.shuffle(seed=0)
        rds = ray.data.from_huggingface(hf, override_num_blocks=blocks)
    else:
        rds = ray.data.read_parquet(path, override_num_blocks=blocks)
        if shuffled:
            rds = rds.random_shuffle(seed=0)
    counts = rds.map_batches(_count, batch_format="pyarrow", batch_size=None,
                             zero_copy_batch=True).take_all()
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ray.shutdown()
    anon = _anon_mb()
    print(json.dumps({"rows": sum(c["n"] for c in counts), "secs": secs, "peak_kb": peak,
                      "base_kb": base, "anon_mb": anon}))


def section_read(args):
    hf_dir, pq_dir = generate(os.path.join(args.dir, "read"), args.gb, args.shards)
    size = sum(os.path.getsize(os.path.join(hf_dir, f)) for f in os.listdir(hf_dir))
    print(f"== read: {hf_dir} ({size / 1e9:.2f} GB, {args.shards} shards), Ray num_cpus="
          f"{args.cpus}, {args.blocks} blocks")
    subprocess.run(["sh", "-c", f"cat {hf_dir}/*.arrow {pq_dir}/*.parquet > /dev/null"],
                   check=True)  # every case starts with the files in the page cache
    for shuffled in (False, True):
        res = {}
        for kind, path in (("quiver", hf_dir), ("from_huggingface", hf_dir),
                           ("read_parquet", pq_dir)):
            out = subprocess.run([sys.executable, __file__, "--case", kind, path,
                                  str(int(shuffled)), str(args.cpus), str(args.blocks)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(f"  {kind}: failed\n{out.stderr[-2000:]}")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            res[kind] = r
            label = kind + (" + random_shuffle" if shuffled and kind == "read_parquet" else "")
            print(f"  {'shuffled' if shuffled else 'plain   '} {label:32s} {r['rows']:>10,} rows "
                  f"{r['secs']:7.2f} s {r['rows'] / r['secs']:>12,.0f} rows/s  driver peak RSS "
                  f"{r['peak_kb'] / 1024:7.0f} MB (+{(r['peak_kb'] - r['base_kb']) / 1024:.0f} "
                  "MB after ray.init)")
        q = res.get("quiver")
        for kind in ("from_huggingface", "read_parquet"):
            if q and kind in res:
                o = res[kind]
                print(f"    ratio quiver / {kind}: throughput "
                      f"{(q['rows'] / q['secs']) / (o['rows'] / o['secs']):.2f}x, driver peak "
                      f"{q['peak_kb'] / o['peak_kb']:.2f}x")


def section_plan(args):
    import pickle

    import quiver
    from quiver import _quiver, distributed

    root = os.path.join(args.dir, f"plan-{args.plan_shards}")
    if not os.path.exists(os.path.join(root, "state.json")):
        stage = distributed.staging_dir(root)
        names = []
        for s in range(args.plan_shards):
            t = _table(s * 2000, s * 2000 + 2000)
            names.append(distributed.write_shard(stage, f"s{s:06d}.arrow",
                                                 t.to_batches(max_chunksize=1000))[0])
        distributed.finish_save(stage, root, names, distributed.features_of(t.schema))
    n = args.plan_shards
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    ds = quiver.open(root)
    t1 = time.perf_counter()
    prep = distributed.prepare(ds)
    t2 = time.perf_counter()
    _, specs = distributed.plan(prep, None, n)
    t3 = time.perf_counter()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    anon1 = _anon_mb()
    spec_bytes = [len(pickle.dumps(s)) for s in specs]
    data_recipe = ds._recipes()[0]
    t4 = time.perf_counter()
    reps = 5
    for _ in range(reps):
        _quiver._from_recipes(data_recipe, None, ds.fingerprint)
    t5 = time.perf_counter()
    for _ in range(reps):
        distributed._check({"identities": prep["identities"]})
    t6 = time.perf_counter()
    rows = 0
    for s in specs[:reps]:
        for tb in distributed.read_spec(s):
            rows += tb.num_rows
    t7 = time.perf_counter()
    sh = ds.shuffle(seed=0)
    t8 = time.perf_counter()
    _, sspecs = distributed.plan(sh, None, n)
    t9 = time.perf_counter()
    print(f"== plan: {n} shards x 2000 rows ({len(specs)} tasks, {ds.num_rows:,} rows)")
    print(f"  driver: quiver.open {1e3 * (t1 - t0):.0f} ms, prepare {1e3 * (t2 - t1):.0f} ms, "
          f"plan {1e3 * (t3 - t2):.0f} ms ({1e6 * (t3 - t0) / n:.0f} us per shard); peak RSS "
          f"+{(rss1 - rss0) / 1024:.0f} MB (mapped file pages touched included), anonymous "
          f"{anon1:.0f} MB")
    sspec = [len(pickle.dumps(s)) for s in sspecs]
    print(f"  plain, one file per task ({specs[0]['kind']}): {sum(spec_bytes) / len(spec_bytes):.0f} "
          f"B pickled per task; whole task (check + open its file + {rows // reps} rows) "
          f"{1e3 * (t7 - t6) / reps:.1f} ms")
    print(f"  with a mapping (tasks rebuild every file from the recipe): recipe "
          f"{len(data_recipe) / 1024:.1f} KiB + identities "
          f"{len(pickle.dumps(prep['identities'])) / 1024:.1f} KiB; rebuild "
          f"{1e3 * (t5 - t4) / reps:.1f} ms, checks {1e3 * (t6 - t5) / reps:.1f} ms per task")
    print(f"  shuffled: shuffle {1e3 * (t8 - t7):.0f} ms, plan {1e3 * (t9 - t8):.0f} ms, "
          f"{sum(sspec) / len(sspec) / 1024:.1f} KiB pickled per task (indices slice "
          f"{8 * ds.num_rows / n / 1024:.1f} KiB)")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--case":
        kind, path, shuffled, cpus, blocks = sys.argv[2:7]
        return run_case(kind, path, shuffled == "1", int(cpus), int(blocks))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=1.5)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--plan-shards", type=int, default=2000)
    ap.add_argument("--sections", default="plan,read")
    ap.add_argument("--dir", default=os.path.join(TOP, "build", "bench-data", "scale"))
    args = ap.parse_args()
    _path_setup()
    os.makedirs(args.dir, exist_ok=True)
    for s in args.sections.split(","):
        {"read": section_read, "plan": section_plan}[s](args)


if __name__ == "__main__":
    main()
