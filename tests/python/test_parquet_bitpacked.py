"""The deprecated BIT_PACKED level encoding of v1 data pages
(parquet-format Encodings.md "Bit-packed (Deprecated)"): no writer we have
produces it, so each test has pyarrow write an uncompressed v1 file
without dictionary, then patches it byte for byte: the page header's
level encoding RLE (zigzag varint 6) becomes BIT_PACKED (8), and the page
body's [4-byte length][RLE levels] becomes the levels bit-packed from the
most significant bit down (computed here from the data, independently of
the reader), the values moved up behind them and the page padded back to
its size. quiver's read of the patched file must equal the table written.
(pyarrow is no oracle here: Arrow C++ reads BIT_PACKED levels least
significant bit first, against the specification, and gets other levels.)

Environment: QV_BUILD (default <repo>/build), QV_SHARED.
"""
import struct

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from qvpaths import quiver


def _pack_msb(levels, width):
    """Levels packed back to back, most significant bit first, 0-padded."""
    bits = []
    for v in levels:
        bits += [(v >> (width - 1 - b)) & 1 for b in range(width)]
    bits += [0] * (-len(bits) % 8)
    return bytes(sum(bit << (7 - k) for k, bit in enumerate(bits[i:i + 8]))
                 for i in range(0, len(bits), 8))


def _patch(path, values, level_streams, n_level_fields):
    """Rewrite the one v1 page of the file's one column: level_streams are
    (levels, width) pairs in page order (repetition first), values the
    PLAIN bytes of the non-null values (found in the file to locate the
    page body)."""
    b = bytearray(open(path, "rb").read())
    v = b.find(values)
    assert v > 0 and b.find(values, v + 1) < 0, "values not found once"
    # Walk back over the RLE level streams: each is [le32 length][bytes].
    starts = []
    end = v
    for _ in range(len(level_streams)):
        for s in range(end - 4, max(end - 4096, 0), -1):
            if struct.unpack_from("<I", b, s)[0] == end - s - 4:
                starts.append(s)
                end = s
                break
        else:
            raise AssertionError("RLE level stream not found")
    body = min(starts)
    old_len = v - body
    new = b"".join(_pack_msb(lv, w) for lv, w in level_streams)
    assert len(new) <= old_len
    b[body:v + len(values)] = new + values + bytes(old_len - len(new))
    # The page header (before the body) holds the DataPageHeader's
    # encoding fields: PLAIN (0), then the definition and repetition level
    # encodings RLE (zigzag 6) as compact i32 fields (0x15).
    head = bytes(b[max(body - 64, 0):body])
    pat = b"\x15\x00\x15\x06\x15\x06"
    at = head.rfind(pat)
    assert at >= 0, "DataPageHeader encodings not found"
    at += max(body - 64, 0)
    b[at + 3] = 8  # definition levels: BIT_PACKED
    if n_level_fields == 2:
        b[at + 5] = 8  # repetition levels: BIT_PACKED
    out = str(path) + ".bitpacked.parquet"
    open(out, "wb").write(bytes(b))
    return out


def _read(tmp_path, path):
    out = tmp_path / "out.arrow"
    quiver("convert", path, out)
    with ipc.open_file(str(out)) as r:
        return r.read_all()


def _write(tmp_path, t):
    path = tmp_path / "in.parquet"
    pq.write_table(t, path, compression="none", use_dictionary=False, data_page_version="1.0",
                   write_statistics=False, store_schema=False)
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    return path


def test_bit_packed_definition_levels(tmp_path):
    xs = [None if i % 3 == 1 else 0x11223300 + i for i in range(37)]
    t = pa.table({"x": pa.array(xs, pa.int32())})
    path = _write(tmp_path, t)
    values = b"".join(struct.pack("<i", x) for x in xs if x is not None)
    defs = [0 if x is None else 1 for x in xs]
    patched = _patch(path, values, [(defs, 1)], 1)
    got = _read(tmp_path, patched)
    assert got.column("x").to_pylist() == xs
    # the unpatched file reads the same (the patch kept the data)
    assert _read(tmp_path, path).column("x").to_pylist() == xs


def test_bit_packed_repetition_and_definition_levels(tmp_path):
    # every level pair: null list, empty list, null item, item; rows > 8
    # so the packed levels span bytes
    rows = [[1, None, 3], None, [], [4], [None], [5, 6, 7, 8], None, [9]] * 3
    rows = [None if r is None else [None if e is None else 0x55660000 + e * 7 + k
                                    for k, e in enumerate(r)] for r in rows]
    t = pa.table({"l": pa.array(rows, pa.list_(pa.int32()))})
    path = _write(tmp_path, t)
    reps, defs, vals = [], [], []
    for r in rows:  # max_rep 1; max_def 3 (list null 0, empty 1, item null 2, item 3)
        if r is None:
            reps.append(0)
            defs.append(0)
        elif not r:
            reps.append(0)
            defs.append(1)
        for k, e in enumerate(r or []):
            reps.append(0 if k == 0 else 1)
            defs.append(2 if e is None else 3)
            if e is not None:
                vals.append(struct.pack("<i", e))
    patched = _patch(path, b"".join(vals), [(reps, 1), (defs, 2)], 2)
    got = _read(tmp_path, patched)
    assert got.column("l").to_pylist() == rows
