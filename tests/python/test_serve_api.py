"""`quiver serve`'s JSON API against independent answers: rows equal what
`quiver get` / `quiver filter|sort|shuffle` + `quiver head` print for the
same PATH (plain Arrow file, Dataset directory, DatasetDict, indices
mapping file, media); /api/info against `datasets` and pyarrow; stats
against numpy / collections.Counter; cells against the bytes written;
traversal, bad parameters and methods; many clients with a slow one; the
file replaced or truncated while serving; SIGINT/SIGTERM."""
import collections
import glob
import http.client
import json
import math
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.parse

import datasets as D
import numpy as np
import pyarrow as pa
import pytest

from qvpaths import CLI, quiver, require
from qvserve import get, get_json, media_table, serve, write_ipc_file, wav, JPEG_HEAD


def canon(rows):
    """Rows compared as canonical JSON text (NaN == NaN that way)."""
    return [json.dumps(r, sort_keys=True) for r in rows]


def cli_rows(*args):
    return canon(json.loads(l) for l in quiver(*args).stdout.decode().splitlines())


def rows(base, **params):
    status, body = get_json(base + "/api/rows?" + urllib.parse.urlencode(params))
    assert status == 200, body
    return body


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    d = tmp_path_factory.mktemp("plain")
    n = 2500
    rng = np.random.default_rng(7)
    x = rng.normal(size=n)
    x[::97] = np.nan
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "x": pa.array(x, mask=np.arange(n) % 50 == 3),
                  "word": pa.array([["alpha", "beta", "gamma", None, "delta"][i % 5] for i in range(n)]),
                  "k": pa.array(rng.integers(0, 10, n), pa.int32()),
                  "vals": pa.array([list(range(i % 6)) for i in range(n)])})
    path = d / "plain.arrow"
    write_ipc_file(path, t, batch=300)
    return path, t


def test_plain_file_rows_equal_get(plain):
    path, t = plain
    with serve(path) as (base, _):
        body = rows(base, offset=1234, length=100)
        assert body["offset"] == 1234 and body["length"] == 100 and body["num_rows"] == 2500
        assert canon(body["rows"]) == cli_rows("get", path, *range(1234, 1334))
        first = rows(base)  # defaults: offset 0, 100 rows
        assert canon(first["rows"]) == cli_rows("head", path, "-n", 100)
        last = rows(base, offset=2450, length=1000)  # clipped at the end
        assert last["length"] == 50 and canon(last["rows"]) == cli_rows("get", path, *range(2450, 2500))
        assert rows(base, offset=2500, length=10)["rows"] == []
        status, info = get_json(base + "/api/info")
        s = info["splits"][0]
        assert s["num_rows"] == 2500 and [c["name"] for c in s["columns"]] == t.column_names
        assert [c["type"] for c in s["columns"]] == ["int64", "double", "string", "int32",
                                                     "list<item: int64>"]
        assert s["files"] == [{"path": os.path.abspath(path), "size": os.path.getsize(path)}] or \
            s["files"][0]["size"] == os.path.getsize(path)


def test_views_equal_cli(plain, tmp_path):
    path, _ = plain
    with serve(path) as (base, _):
        where = "k >= 3 and word != 'beta'"
        quiver("filter", path, "--where", where, "-o", tmp_path / "f")
        body = rows(base, where=where, offset=0, length=1000)
        want = cli_rows("head", tmp_path / "f", "-n", 1000)
        assert body["num_rows"] == len(want) or body["num_rows"] > 1000
        assert canon(body["rows"]) == want[:1000]
        quiver("sort", path, "--by", "k:desc,id", "-o", tmp_path / "s")
        assert canon(rows(base, sort="k:desc,id", offset=500, length=200)["rows"]) == \
            cli_rows("head", tmp_path / "s", "-n", 700)[500:]
        quiver("shuffle", path, "--seed", 42, "-o", tmp_path / "h")
        assert canon(rows(base, seed=42, length=300)["rows"]) == \
            cli_rows("head", tmp_path / "h", "-n", 300)
        # where, then sort, then shuffle: the chained commands
        quiver("sort", tmp_path / "f", "--by", "x", "-o", tmp_path / "fs")
        assert canon(rows(base, where=where, sort="x", length=1000)["rows"]) == \
            cli_rows("head", tmp_path / "fs", "-n", 1000)
        quiver("shuffle", tmp_path / "f", "--seed", 5, "-o", tmp_path / "fh")
        assert canon(rows(base, where=where, seed=5, length=50)["rows"]) == \
            cli_rows("head", tmp_path / "fh", "-n", 50)
        # cached: asking again gives the same answer
        assert canon(rows(base, seed=42, length=300)["rows"]) == \
            cli_rows("head", tmp_path / "h", "-n", 300)
        # a filter error carries the caret line
        status, err = get_json(base + "/api/rows?" + urllib.parse.urlencode({"where": "k >= 3 and"}))
        assert status == 400 and err["error"].startswith("where: ")
        assert "\n  k >= 3 and\n" in err["error"] and err["error"].rstrip().endswith("^")
        status, err = get_json(base + "/api/rows?where=nope%20%3D%3D%201")
        assert status == 400 and "nope" in err["error"]


def test_dataset_dict_and_dataset_dir(tmp_path):
    feats = D.Features({"text": D.Value("string"), "label": D.ClassLabel(names=["neg", "pos"]),
                        "tok": D.List(D.Value("int32")),
                        "meta": {"a": D.Value("int8"), "b": D.Value("string")}})
    def make(n, off):
        return D.Dataset.from_dict({"text": ["t%d" % (i + off) for i in range(n)],
                                    "label": [(i + off) % 2 for i in range(n)],
                                    "tok": [list(range(i % 4)) for i in range(n)],
                                    "meta": [{"a": i % 100, "b": str(i)} for i in range(n)]},
                                   features=feats)
    dd = D.DatasetDict({"train": make(320, 0), "validation": make(30, 1000), "test": make(45, 2000)})
    dd.save_to_disk(str(tmp_path / "dd"), max_shard_size="4KB")
    loaded = D.load_from_disk(str(tmp_path / "dd"))
    with serve(tmp_path / "dd") as (base, _):
        _, info = get_json(base + "/api/info")
        assert [s["name"] for s in info["splits"]] == list(dd.keys())
        for s in info["splits"]:
            assert s["num_rows"] == dd[s["name"]].num_rows
            assert s["features"] == dd[s["name"]].features.to_dict()
            lab = [c for c in s["columns"] if c["name"] == "label"][0]
            assert lab["kind"] == "label" and lab["names"] == ["neg", "pos"]
            assert [c["kind"] for c in s["columns"]] == ["string", "label", "list", "struct"]
            files = [f["filename"] for f in loaded[s["name"]].cache_files]
            assert [f["path"] for f in s["files"]] == files and len(files) >= 1
            assert s["size"] == sum(os.path.getsize(f) for f in files)
        for split in dd:
            n = dd[split].num_rows
            assert canon(rows(base, split=split, length=1000)["rows"]) == \
                cli_rows("head", tmp_path / "dd", "--split", split, "-n", 1000)
            assert canon(rows(base, split=split, offset=n - 7, length=7)["rows"]) == \
                cli_rows("get", tmp_path / "dd", "--split", split, *range(n - 7, n))
        status, err = get_json(base + "/api/rows?split=nope")
        assert status == 404 and "unknown split 'nope'" in err["error"] and "validation" in err["error"]
    dd["train"].save_to_disk(str(tmp_path / "ds"), max_shard_size="4KB")
    with serve(tmp_path / "ds") as (base, _):
        _, info = get_json(base + "/api/info")
        assert len(info["splits"]) == 1 and info["splits"][0]["num_rows"] == 320
        assert canon(rows(base, offset=100, length=150)["rows"]) == \
            cli_rows("get", tmp_path / "ds", *range(100, 250))


def test_indices_file(tmp_path):
    D.Dataset.from_dict({"id": list(range(500)), "s": ["v%d" % i for i in range(500)]}) \
        .save_to_disk(str(tmp_path / "ds"))
    ds = D.load_from_disk(str(tmp_path / "ds"))
    sh = ds.shuffle(seed=11)
    idx = glob.glob(str(tmp_path / "ds" / "cache-*.arrow"))
    assert len(idx) == 1
    with serve(idx[0]) as (base, _):
        _, info = get_json(base + "/api/info")
        assert info["splits"][0]["num_rows"] == 500 and info["splits"][0]["indices"] is True
        got = rows(base, offset=0, length=500)["rows"]
        assert got == [sh[i] for i in range(500)]  # datasets' own shuffle
        assert canon(got) == cli_rows("head", idx[0], "-n", 500)
        sub = rows(base, where="id < 100", sort="id:desc", length=5)["rows"]
        assert [r["id"] for r in sub] == [99, 98, 97, 96, 95]


def test_media_cells_and_stats(tmp_path):
    t, pngs = media_table(40)
    path = tmp_path / "media.arrow"
    write_ipc_file(path, t)
    with serve(path) as (base, _):
        _, info = get_json(base + "/api/info")
        kinds = {c["name"]: c["kind"] for c in info["splits"][0]["columns"]}
        assert kinds == {"id": "number", "image": "image", "audio": "audio", "label": "label",
                         "caption": "string"}
        status, ctype, body = get(base + "/api/cell?row=0&column=image")
        assert (status, ctype, body) == (200, "image/png", pngs[0])
        status, ctype, body = get(base + "/api/cell?row=3&column=image")
        assert status == 200 and ctype == "image/jpeg" and body.startswith(JPEG_HEAD)
        status, ctype, body = get(base + "/api/cell?row=2&column=audio")
        assert (status, ctype, body) == (200, "audio/wav", wav())
        status, ctype, body = get(base + "/api/cell?row=5&column=caption")
        assert status == 200 and ctype.startswith("text/plain") and body.startswith(b"<script>")
        assert get_json(base + "/api/cell?row=5&column=image")[0] == 404  # null
        assert get_json(base + "/api/cell?row=1&column=audio")[0] == 404  # null
        assert get_json(base + "/api/cell?row=0&column=id")[0] == 400     # not bytes
        assert get_json(base + "/api/cell?row=40&column=image")[0] == 400
        # the view's row numbers: sorted by id descending, row 0 is id 39
        status, _, body = get(base + "/api/cell?row=0&column=image&sort=id:desc")
        assert status == 200 and body == pngs[39]
        # the same rows as head, base64 bytes and all
        assert canon(rows(base, length=40)["rows"]) == cli_rows("head", path, "-n", 40)
        st = stats(base, "label")
        c = collections.Counter(i % 3 for i in range(40))
        assert st["top"] == [{"value": v, "label": ["cat", "dog", "bird"][v], "count": n}
                             for v, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]
        assert st["distinct"] == 3 and st["nulls"] == 0
        st = stats(base, "image")
        assert st["kind"] == "image" and st["nulls"] == 1 and st["count"] == 40


def stats(base, column, **params):
    params["column"] = column
    status, ctype, body = get(base + "/api/stats?" + urllib.parse.urlencode(params))
    assert status == 200 and ctype == "application/x-ndjson", body
    lines = [json.loads(l) for l in body.decode().splitlines()]
    progress = [l for l in lines if "progress" in l]
    assert progress and progress[-1]["progress"] == progress[-1]["total"]
    assert [p["progress"] for p in progress] == sorted(p["progress"] for p in progress)
    assert lines[-1]["done"] is True, lines[-1]
    return lines[-1]["stats"]


def test_stats_against_numpy(plain):
    path, t = plain
    x = t.column("x").to_numpy(zero_copy_only=False)
    valid = ~np.isnan(x) & t.column("x").is_valid().to_numpy(zero_copy_only=False)
    with serve(path) as (base, _):
        st = stats(base, "x")
        xs = x[valid]
        assert st["nulls"] == t.column("x").null_count
        assert st["nan"] == int(np.isnan(x[t.column("x").is_valid().to_numpy(zero_copy_only=False)]).sum())
        assert st["min"] == xs.min() and st["max"] == xs.max()
        assert math.isclose(st["mean"], xs.mean(), rel_tol=1e-9)
        h = st["histogram"]
        want, _ = np.histogram(xs, bins=np.array(h["edges"]))
        assert h["counts"] == want.tolist() and sum(h["counts"]) == len(xs)
        assert abs(st["distinct_estimate"] - len(np.unique(xs))) <= 0.05 * len(np.unique(xs))
        st = stats(base, "word")
        words = [w for w in t.column("word").to_pylist() if w is not None]
        c = collections.Counter(words)
        assert st["top_approximate"] is False and st["nulls"] == 500
        assert {(e["value"], e["count"]) for e in st["top"]} == set(c.items())
        assert st["min_length"] == 4 and st["max_length"] == 5 and st["distinct_estimate"] == 4
        st = stats(base, "k")
        k = t.column("k").to_numpy()
        assert st["histogram"]["edges"] == list(range(k.min(), k.max() + 2))
        assert st["histogram"]["counts"] == np.bincount(k - k.min()).tolist()
        st = stats(base, "vals")
        assert st["min_length"] == 0 and st["max_length"] == 5
        assert st["histogram"]["counts"] == [sum(1 for i in range(2500) if i % 6 == L) for L in range(6)]
        # stats of a filtered view
        st = stats(base, "k", where="k < 4")
        assert st["count"] == int((k < 4).sum()) and st["max"] == 3
        assert get_json(base + "/api/stats?column=nope")[0] == 400


BAD_PATHS = ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd",
             "//etc/passwd", "/etc/passwd", "/api/../../etc/hosts", "/index.html/..",
             "/%2fetc%2fpasswd", "/api/info/../../../etc/passwd", "/app.js%00.html",
             "/web/app.js", "/tools/quiver/web/index.html", "/api/", "/api/nope"]

BAD_QUERIES = [("/api/rows?offset=-1", 400), ("/api/rows?offset=abc", 400),
               ("/api/rows?offset=99999999999999999999", 400), ("/api/rows?offset=1e3", 400),
               ("/api/rows?offset=2501", 400), ("/api/rows?length=1001", 400),
               ("/api/rows?length=-5", 400), ("/api/rows?length=99999999999", 400),
               ("/api/rows?split=nope", 404), ("/api/rows?sort=nope:desc", 400),
               ("/api/rows?sort=,", 400), ("/api/rows?seed=-1", 400), ("/api/rows?seed=x", 400),
               ("/api/rows?where=%28%28%28", 400), ("/api/cell?row=-1&column=id", 400),
               ("/api/cell?row=0", 400), ("/api/cell?row=0&column=nope", 400),
               ("/api/cell?column=id", 400), ("/api/stats", 400), ("/api/stats?column=x&split=y", 404)]


def raw_request(port, method, path, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.putrequest(method, path, skip_accept_encoding=True)
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, r.getheader("Content-Type"), body


def test_traversal_bad_parameters_methods(plain):
    path, _ = plain
    with serve(path) as (base, _):
        port = int(base.rsplit(":", 1)[1])
        for p in BAD_PATHS:
            status, ctype, body = raw_request(port, "GET", p)
            assert 400 <= status < 500, (p, status)
            assert ctype == "application/json" and "error" in json.loads(body), p
            assert b"root:" not in body
        for p, want in BAD_QUERIES:
            status, ctype, body = raw_request(port, "GET", p)
            assert status == want, (p, status, body)
            assert json.loads(body)["status"] == want
        for m in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]:
            status, _, body = raw_request(port, m, "/api/info")
            assert status == 405 and "read-only" in json.loads(body)["error"], m
        status, ctype, body = raw_request(port, "HEAD", "/api/info")
        assert status == 200 and body == b"" and ctype == "application/json"
        for page, mime in [("/", "text/html"), ("/index.html", "text/html"),
                           ("/app.js", "text/javascript"), ("/style.css", "text/css")]:
            status, ctype, body = raw_request(port, "GET", page)
            assert status == 200 and ctype.startswith(mime) and len(body) > 500, page


def test_many_clients_one_slow(plain):
    """A client that sends half a request and waits, another that reads a
    few bytes of a large answer and hangs up: 16 others are answered
    meanwhile, and correctly."""
    path, _ = plain
    want = cli_rows("get", path, *range(1000, 1100))
    with serve(path) as (base, p):
        port = int(base.rsplit(":", 1)[1])
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"GET /api/rows?offset=0&length=1000 HTTP/1.1\r\nHost: x\r\n")  # no end
        for _ in range(5):  # disconnect mid-answer
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /api/rows?offset=0&length=1000 HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(100)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        results, errors = [], []

        def client():
            try:
                for _ in range(5):
                    results.append(canon(rows(base, offset=1000, length=100)["rows"]) == want)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
        threads = [threading.Thread(target=client) for _ in range(16)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        elapsed = time.monotonic() - t0
        assert not errors and len(results) == 80 and all(results), errors[:3]
        assert elapsed < 20, elapsed  # not stalled behind the slow client (30 s timeout)
        assert p.poll() is None
        slow.sendall(b"\r\n")  # the slow one is still served
        data = b""
        slow.settimeout(10)
        while b"\r\n\r\n" not in data:
            data += slow.recv(4096)
        assert data.startswith(b"HTTP/1.1 200")
        slow.close()


def test_file_replaced_and_truncated(tmp_path):
    path = tmp_path / "r.arrow"
    write_ipc_file(path, pa.table({"v": list(range(1000))}), batch=100)
    with serve(path) as (base, p):
        assert rows(base, offset=990, length=10)["rows"] == [{"v": i} for i in range(990, 1000)]
        # replaced by rename (as every quiver/pyarrow writer does): reopened
        write_ipc_file(tmp_path / "new.arrow", pa.table({"v": [i * 10 for i in range(500)]}))
        os.replace(tmp_path / "new.arrow", path)
        time.sleep(0.6)
        body = rows(base, offset=0, length=3)
        assert body["num_rows"] == 500 and body["rows"] == [{"v": 0}, {"v": 10}, {"v": 20}]
        # truncated in place: a clear JSON error (or a reopen), never a crash
        write_ipc_file(path, pa.table({"v": list(range(1000))}), batch=100)
        time.sleep(0.6)
        assert rows(base, offset=0, length=1)["num_rows"] == 1000
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
        for offset in (0, 900):
            status, body = get_json(base + "/api/rows?offset=%d&length=100" % offset)
            assert status in (200, 503), body
            if status == 503:
                assert "r.arrow" in body["error"]
        assert p.poll() is None
        write_ipc_file(tmp_path / "new.arrow", pa.table({"v": list(range(7))}))
        os.replace(tmp_path / "new.arrow", path)
        time.sleep(0.6)
        assert rows(base, length=100)["rows"] == [{"v": i} for i in range(7)]


def test_command_line(plain, tmp_path):
    path, _ = plain
    r = subprocess.run([require(CLI), "serve", "--help"], capture_output=True)
    assert r.returncode == 0 and b"usage: quiver serve PATH" in r.stdout
    assert subprocess.run([require(CLI), "serve"], capture_output=True).returncode == 2
    assert subprocess.run([require(CLI), "serve", path, "--port=70000"],
                          capture_output=True).returncode == 2
    assert subprocess.run([require(CLI), "serve", path, "--bogus"], capture_output=True).returncode == 2
    (tmp_path / "junk.arrow").write_bytes(b"ARROW1\x00\x00garbage")
    r = subprocess.run([require(CLI), "serve", tmp_path / "junk.arrow", "--port=0"], capture_output=True)
    assert r.returncode == 1 and r.stderr.startswith(b"quiver: ")
    # SIGINT stops it cleanly; a non-loopback host warns
    p = subprocess.Popen([require(CLI), "serve", path, "--port=0", "--host=0.0.0.0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline().decode()
    assert "http://0.0.0.0:" in line
    port = int(line.split("(port ")[1].split(";")[0])
    assert get_json("http://127.0.0.1:%d/api/info" % port)[0] == 200
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=20) == 0
    err = p.stderr.read().decode()
    p.stdout.close()
    p.stderr.close()
    assert "warning: binding 0.0.0.0" in err and "interrupted" in err


def test_columns_and_server_timing(plain):
    path, _ = plain
    with serve(path) as (base, _):
        body = rows(base, offset=10, length=20, columns="word,id")
        full = [json.loads(l) for l in quiver("get", path, *range(10, 30)).stdout.decode().splitlines()]
        assert body["rows"] == [{"word": r["word"], "id": r["id"]} for r in full]
        assert list(body["rows"][0]) == ["word", "id"]
        status, err = get_json(base + "/api/rows?columns=id,nope")
        assert status == 400 and "nope" in err["error"]
        import urllib.request
        with urllib.request.urlopen(base + "/api/rows?length=5") as r:
            timing = r.headers["Server-Timing"]
        assert timing.startswith("total;dur=") and float(timing.split("=")[1]) >= 0


def test_stats_progress_and_cancel(tmp_path):
    """400,000 rows: statistics stream several progress lines per pass; a
    client that reads two and hangs up (the page's cancel) leaves the
    server answering, and a full read agrees with numpy."""
    n = 400_000
    v = np.arange(n, dtype=np.int64) * 7 % 1001
    path = tmp_path / "big.arrow"
    write_ipc_file(path, pa.table({"v": v}), batch=50_000)
    with serve(path) as (base, p):
        port = int(base.rsplit(":", 1)[1])
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /api/stats?column=v HTTP/1.1\r\nHost: x\r\n\r\n")
            f = s.makefile("rb")
            while f.readline() not in (b"\r\n", b""):
                pass  # headers
            got = b""
            while got.count(b"progress") < 2:
                got += f.read1(4096)
            f.close()
            s.close()
        assert p.poll() is None and get_json(base + "/api/info")[0] == 200
        st = stats(base, "v")
        assert st["min"] == v.min() and st["max"] == v.max() and st["mean"] == pytest.approx(v.mean())
        want, _ = np.histogram(v, bins=np.array(st["histogram"]["edges"]))
        assert st["histogram"]["counts"] == want.tolist()
        status, ctype, body = get(base + "/api/stats?column=v")
        assert len([l for l in body.splitlines() if b"progress" in l]) >= 12  # 2 passes x 7 batches
