"""bench_serve.py [--gb=10] [--dir=DIR] [--keep] [--browser] — server times of
`quiver serve` on a large generated save_to_disk Dataset directory (never in
CI; `python bench/bench_serve.py --gb=1` runs in about a minute).

Data: --gb GB in shards of about 512 MB (Arrow IPC streams, as datasets
writes them) of rows {id: int64, label: ClassLabel(10), text: string
(~120 bytes), image: Image (struct<bytes, path>, 20 KB of random bytes
behind a PNG signature)}, plus state.json / dataset_info.json. Written
once into DIR (default build/bench-serve, deleted afterwards unless --keep).
The shards' pages are dropped from the page cache (posix_fadvise
DONTNEED, only these files) before the cold measurements.

Measured (times in ms):
  ready       from starting `quiver serve` to the URL printed (open)
  first_page  the page's first paint requests, cold: GET /, /app.js,
              /style.css, /api/info, /api/rows?offset=0&length=100 (without
              the image bytes, as the page asks) — client wall time, and the
              rows answer's Server-Timing
  any_page    40 random pages (offset uniform in the rows, length 100,
              cold cache): Server-Timing median / p95 / max, and wall;
              then the same pages again (warm)
  image_cell  40 random /api/cell image payloads: wall median / p95
  filter      where=id % 1000 == 7: first answer (a full pass), then cached
  --browser   headless Chromium: navigation to the first rows rendered
Anchors, same data, same run: `datasets.load_from_disk` (open) and
ds[offset:offset+100] without the image column (the same random pages,
cold), printed with the ratios quiver / datasets.
Prints one JSON line at the end."""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUILD = os.environ.get("QV_BUILD", os.path.join(REPO, "build"))
CLI = os.path.join(BUILD, "quiver")
SHARD = 512 << 20
IMG = 20 << 10
NAMES = ["c%d" % i for i in range(10)]


def gen(d, gb):
    os.makedirs(d, exist_ok=True)
    row_bytes = IMG + 200
    rows_per_shard = SHARD // row_bytes
    n_shards = max(1, int(round(gb * (1 << 30) / SHARD)))
    feats = {"id": {"dtype": "int64", "_type": "Value"},
             "label": {"names": NAMES, "_type": "ClassLabel"},
             "text": {"dtype": "string", "_type": "Value"},
             "image": {"_type": "Image"}}
    md = {"huggingface": json.dumps({"info": {"features": feats}, "fingerprint": "b3nchs3rve000001"})}
    media = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([("id", pa.int64()), ("label", pa.int64()), ("text", pa.string()),
                        ("image", media)], metadata=md)
    rng = np.random.default_rng(1)
    files = []
    for s in range(n_shards):
        name = "data-%05d-of-%05d.arrow" % (s, n_shards)
        files.append({"filename": name})
        path = os.path.join(d, name)
        if os.path.exists(path):
            continue
        with pa.OSFile(path + ".tmp", "wb") as f, pa.ipc.new_stream(f, schema) as w:
            for b0 in range(0, rows_per_shard, 1000):
                n = min(1000, rows_per_shard - b0)
                first = s * rows_per_shard + b0
                blob = np.frombuffer(rng.bytes(n * IMG), np.uint8).copy()
                blob.reshape(n, IMG)[:, :8] = np.frombuffer(b"\x89PNG\r\n\x1a\n", np.uint8)
                offs = np.arange(0, (n + 1) * IMG, IMG, dtype=np.int32)
                data = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offs), pa.py_buffer(blob)])
                img = pa.StructArray.from_arrays([data, pa.nulls(n, pa.string())], fields=list(media))
                ids = np.arange(first, first + n, dtype=np.int64)
                text = ["row %d: the small grey turtle was surprisingly fast when challenged %d" % (i, i % 97)
                        for i in range(first, first + n)]
                w.write_batch(pa.record_batch([pa.array(ids), pa.array(ids % 10), pa.array(text), img],
                                              schema=schema))
        os.replace(path + ".tmp", path)
    state = {"_data_files": files, "_fingerprint": "b3nchs3rve000001", "_format_columns": None,
             "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False, "_split": None}
    with open(os.path.join(d, "state.json"), "w") as f:
        json.dump(state, f, indent=2)
    with open(os.path.join(d, "dataset_info.json"), "w") as f:
        json.dump({"citation": "", "description": "", "features": feats, "homepage": "", "license": ""},
                  f, indent=2)
    return n_shards * rows_per_shard


def drop_cache(d):
    for name in os.listdir(d):
        if name.endswith(".arrow"):
            fd = os.open(os.path.join(d, name), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def fetch(url):
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as r:
        body = r.read()
        timing = r.headers.get("Server-Timing")
    wall = (time.perf_counter() - t) * 1e3
    server = float(timing.split("dur=")[1]) if timing else None
    return wall, server, body


def browser_first_rows(base, d):
    """Headless Chromium: ms from navigation start to the first 100 rows
    rendered (the page's performance mark), cold cache, best of 3."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800"]:
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        times = []
        for _ in range(3):
            drop_cache(d)
            drv.get(base + "/")
            t = None
            for _ in range(600):
                t = drv.execute_script("const m = performance.getEntriesByName('quiver-first-rows');"
                                       "return m.length ? m[0].startTime : null;")
                if t is not None:
                    break
                time.sleep(0.05)
            times.append(t)
        return min(times)
    finally:
        drv.quit()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=10)
    ap.add_argument("--dir", default=os.path.join(BUILD, "bench-serve"))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--browser", action="store_true",
                    help="also time the page in headless Chromium (selenium)")
    a = ap.parse_args()
    t = time.perf_counter()
    n = gen(a.dir, a.gb)
    size = sum(os.path.getsize(os.path.join(a.dir, f)) for f in os.listdir(a.dir))
    print(f"data: {n:,} rows, {size / (1 << 30):.1f} GiB in {a.dir} "
          f"(generated in {time.perf_counter() - t:.0f} s)", flush=True)
    out = {"rows": n, "bytes": size}
    rnd = random.Random(5)
    offsets = [rnd.randrange(0, n - 100) for _ in range(a.pages)]
    light = "id,label,text"
    try:
        drop_cache(a.dir)
        t = time.perf_counter()
        p = subprocess.Popen([CLI, "serve", a.dir, "--port=0", "--json"], stdout=subprocess.PIPE)
        info = json.loads(p.stdout.readline())
        out["ready_ms"] = (time.perf_counter() - t) * 1e3
        base = info["url"].rstrip("/")
        try:
            t = time.perf_counter()
            for path in ["/", "/app.js", "/style.css", "/api/info"]:
                fetch(base + path)
            _, server, body = fetch(base + "/api/rows?offset=0&length=100&columns=" + light)
            out["first_page_wall_ms"] = (time.perf_counter() - t) * 1e3
            out["first_page_server_ms"] = server
            assert len(json.loads(body)["rows"]) == 100
            drop_cache(a.dir)
            walls, servers = [], []
            for off in offsets:
                w, s, body = fetch(base + f"/api/rows?offset={off}&length=100&columns={light}")
                assert json.loads(body)["rows"][0]["id"] == off
                walls.append(w)
                servers.append(s)
            out["any_page_server_ms"] = {"median": statistics.median(servers), "p95": pct(servers, 95),
                                         "max": max(servers)}
            out["any_page_wall_ms"] = {"median": statistics.median(walls), "p95": pct(walls, 95)}
            warm = [fetch(base + f"/api/rows?offset={off}&length=100&columns={light}")[1] for off in offsets]
            out["any_page_warm_server_ms"] = {"median": statistics.median(warm), "p95": pct(warm, 95)}
            walls = []
            for off in offsets:
                w, _, body = fetch(base + f"/api/cell?row={off + 7}&column=image")
                assert len(body) == IMG
                walls.append(w)
            out["image_cell_wall_ms"] = {"median": statistics.median(walls), "p95": pct(walls, 95)}
            q = urllib.parse.quote("id % 1000 == 7")
            w1, s1, body = fetch(base + f"/api/rows?where={q}&length=100&columns={light}")
            half = json.loads(body)["num_rows"] // 2
            w2, s2, _ = fetch(base + f"/api/rows?where={q}&offset={half}&length=100&columns={light}")
            out["filter_first_ms"] = s1
            out["filter_cached_page_ms"] = s2
            out["filter_rows"] = json.loads(body)["num_rows"]
            if a.browser:
                out["browser_first_rows_ms"] = browser_first_rows(base, a.dir)
        finally:
            p.terminate()
            p.wait(30)
        # anchors: datasets on the same directory, the same pages, cold
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        import datasets
        drop_cache(a.dir)
        t = time.perf_counter()
        ds = datasets.load_from_disk(a.dir)
        out["anchor_datasets_open_ms"] = (time.perf_counter() - t) * 1e3
        ds = ds.select_columns(["id", "label", "text"])
        drop_cache(a.dir)
        times = []
        for off in offsets:
            t = time.perf_counter()
            b = ds[off:off + 100]
            times.append((time.perf_counter() - t) * 1e3)
            assert b["id"][0] == off
        out["anchor_datasets_page_ms"] = {"median": statistics.median(times), "p95": pct(times, 95)}
        out["ratio_open"] = out["ready_ms"] / out["anchor_datasets_open_ms"]
        out["ratio_page_median"] = out["any_page_server_ms"]["median"] / out["anchor_datasets_page_ms"]["median"]
    finally:
        if not a.keep:
            shutil.rmtree(a.dir, ignore_errors=True)
    print(f"ready {out['ready_ms']:.1f} ms (datasets.load_from_disk {out['anchor_datasets_open_ms']:.1f} ms,"
          f" ratio {out['ratio_open']:.3f})")
    print(f"first page: {out['first_page_wall_ms']:.1f} ms wall for the page's 5 requests, "
          f"rows {out['first_page_server_ms']:.2f} ms server")
    s = out["any_page_server_ms"]
    print(f"any page (cold, {a.pages} random): server median {s['median']:.2f} ms, p95 {s['p95']:.2f}, "
          f"max {s['max']:.2f}; datasets ds[i:i+100] median {out['anchor_datasets_page_ms']['median']:.2f} ms"
          f" (ratio {out['ratio_page_median']:.3f})")
    w = out["any_page_warm_server_ms"]
    print(f"any page (warm, the same pages again): server median {w['median']:.2f} ms, p95 {w['p95']:.2f}")
    print(f"image cell: median {out['image_cell_wall_ms']['median']:.2f} ms wall; filter over all rows "
          f"{out['filter_first_ms']:.0f} ms, then a cached page {out['filter_cached_page_ms']:.2f} ms")
    if "browser_first_rows_ms" in out:
        print(f"browser: first 100 rows rendered {out['browser_first_rows_ms']:.0f} ms after navigation")
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
