"""qvserve.py — helpers of the `quiver serve` suites (test_serve_api.py,
test_serve_browser.py): tiny PNG/JPEG/WAV payloads built by hand (no PIL
here), generated datasets of every kind of PATH, and a running server
(`quiver serve PATH --port=0 --json`) as a context manager that checks
the server exits 0 on SIGTERM."""
import contextlib
import json
import os
import signal
import struct
import subprocess
import urllib.error
import urllib.request
import zlib

import pyarrow as pa

from qvpaths import CLI, require


def png(w, h, rgb):
    """A w x h PNG of one colour with a diagonal stripe (so it is not blank)."""
    raw = b""
    for y in range(h):
        row = bytearray()
        for x in range(w):
            row += bytes((255, 255, 255)) if abs(x - y) < 2 else bytes(rgb)
        raw += b"\x00" + bytes(row)

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def wav(n=800, rate=8000):
    """A mono 16-bit WAV of n samples of a square wave."""
    data = b"".join(struct.pack("<h", 8000 if (i // 20) % 2 else -8000) for i in range(n))
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
            + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
            + b"data" + struct.pack("<I", len(data)) + data)


JPEG_HEAD = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00"  # sniffed, never decoded


def media_table(n=40):
    """An Arrow table with HF features: an Image column (PNG bytes, one
    JPEG-headed payload, one null), an Audio column (WAV), a ClassLabel, a
    string holding markup, a number. Returns (table, pngs)."""
    colors = [(200, 40, 40), (40, 160, 60), (40, 80, 200), (220, 170, 30)]
    pngs = [png(24, 24, colors[i % 4]) for i in range(n)]
    images = [{"bytes": b, "path": None} for b in pngs]
    images[3] = {"bytes": JPEG_HEAD + b"rest", "path": None}
    images[5] = None
    audio = [{"bytes": wav(), "path": None} if i % 2 == 0 else None for i in range(n)]
    feats = {"id": {"dtype": "int64", "_type": "Value"},
             "image": {"_type": "Image"},
             "audio": {"_type": "Audio"},
             "label": {"names": ["cat", "dog", "bird"], "_type": "ClassLabel"},
             "caption": {"dtype": "string", "_type": "Value"}}
    media = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "image": pa.array(images, media),
                  "audio": pa.array(audio, media),
                  "label": pa.array([i % 3 for i in range(n)], pa.int64()),
                  "caption": [("<script>alert('x')</script> caption %d" % i) if i % 5 == 0
                              else "caption %d " % i + "long " * (i % 40) for i in range(n)]})
    md = {"huggingface": json.dumps({"info": {"features": feats}})}
    return t.replace_schema_metadata(md), pngs


def write_ipc_file(path, table, batch=None):
    with pa.OSFile(str(path), "wb") as f:
        with pa.ipc.new_file(f, table.schema) as w:
            for b in table.to_batches(max_chunksize=batch):
                w.write_batch(b)


@contextlib.contextmanager
def serve(path, *args):
    """Run `quiver serve path --port=0 --json args...`; yields (base_url,
    process). On exit sends SIGTERM and asserts a clean exit (0)."""
    p = subprocess.Popen([require(CLI), "serve", str(path), "--port=0", "--json", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = p.stdout.readline()
        assert line, "quiver serve printed nothing: " + p.stderr.read().decode()
        info = json.loads(line)
        assert info["port"] > 0 and info["url"] == "http://127.0.0.1:%d/" % info["port"]
        yield info["url"].rstrip("/"), p
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            raise AssertionError("quiver serve did not stop on SIGTERM")
        p.stdout.close()
        err = p.stderr.read().decode()
        p.stderr.close()
    assert rc == 0, err


def get(url, timeout=30):
    """(status, content type, body bytes) of a GET; errors too."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type"), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read()


def get_json(url, timeout=30):
    status, ctype, body = get(url, timeout)
    assert ctype.startswith("application/json"), (url, status, ctype, body[:200])
    return status, json.loads(body)


def cleanup(path):
    if os.path.exists(path):
        os.remove(path)


def png_pixels(data):
    """Decode an 8-bit, non-interlaced RGB/RGBA PNG (what Chromium's
    screenshots are) to (width, height, channels, bytes of rows)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            ch = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = w * ch
    out = bytearray(h * stride)
    prev = bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b = prev[i]
            c = prev[i - ch] if i >= ch else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa_, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa_ <= pb and pa_ <= pc else b if pb <= pc else c)) & 255
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return w, h, ch, bytes(out)


def region_stats(img, x0, y0, x1, y1):
    """(mean, variance) of the grey levels of pixels [x0,x1) x [y0,y1),
    sampled every 2nd pixel."""
    w, h, ch, px = img
    vals = []
    for y in range(max(0, y0), min(h, y1), 2):
        for x in range(max(0, x0), min(w, x1), 2):
            o = (y * w + x) * ch
            vals.append((px[o] + px[o + 1] + px[o + 2]) / 3)
    assert vals, "empty region"
    m = sum(vals) / len(vals)
    return m, sum((v - m) ** 2 for v in vals) / len(vals)
