"""test_parquet_write.py — quiver's Parquet writer against pyarrow and DuckDB.

Random tables of every type pyarrow writes (integers of every width,
floats, bool, strings/binary incl. large and view types, fixed-size binary,
decimals 32..256, date/time/timestamp/duration in every unit, with and
without time zones, dictionaries, structs, lists / large lists / fixed-size
lists / list views, maps, nested combinations, the null type), with nulls
at every level, are written as Arrow IPC by pyarrow and converted to
Parquet by `quiver convert` under every codec x data page version x
dictionary on/off, with small row groups and pages so that several of each
are written. The oracles:
  - pyarrow.parquet.read_table of quiver's file equals (types, values,
    metadata) read_table of the file pyarrow.parquet.write_table writes from
    the same table (pyarrow's own round trip: the source types except the
    list item / map entries names Parquet gives);
  - DuckDB's read_parquet gives the same rows for quiver's file as for
    pyarrow's;
  - the column statistics (min, max, null_count) equal pyarrow's;
  - dictionary fallback, the page versions and the codecs are what the
    file's metadata and page headers say;
  - a kill at any write step, or a failure, leaves no partial output.
The Arrow C stream entry point (qv_parquet_write_arrow_stream_path) is
driven through ctypes with a pyarrow RecordBatchReader.
"""
import ctypes
import decimal
import itertools
import math
import os
import signal
import subprocess

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from qvpaths import CLI, LIB, quiver, require

N = 1500


def _mask(rng, n, p=0.15):
    return rng.random(n) < p


def _ints(rng, n, typ, lo, hi, nulls=True):
    v = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if lo < 0 else np.uint64)
    return pa.array(v, type=typ, mask=_mask(rng, n) if nulls else None)


def _strings(rng, n, few=False):
    pool = [f"s{i}" for i in range(7)] + ["", "ünïcødé", "x" * 40]
    out = []
    for i in range(n):
        if rng.random() < 0.15:
            out.append(None)
        elif few:
            out.append(pool[int(rng.integers(0, len(pool)))])
        else:
            out.append("v" + str(int(rng.integers(0, 10**9))) * int(rng.integers(0, 3)))
    return out


def _list_of(rng, values, n, typ, p_null=0.15):
    """A list array of n lists over `values` (lengths 0..3, some null)."""
    lens = rng.integers(0, 4, size=n)
    total = int(lens.sum())
    child = values(total)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    mask = pa.array(_mask(rng, n, p_null))
    if pa.types.is_large_list(typ):
        return pa.LargeListArray.from_arrays(pa.array(offs, pa.int64()), child, type=typ,
                                             mask=mask)
    return pa.ListArray.from_arrays(pa.array(offs.astype(np.int32)), child, type=typ, mask=mask)


def random_table(seed, n=N):
    rng = np.random.default_rng(seed)
    cols = {}
    for name, typ, lo, hi in [("i8", pa.int8(), -128, 127), ("i16", pa.int16(), -2**15, 2**15 - 1),
                              ("i32", pa.int32(), -2**31, 2**31 - 1),
                              ("i64", pa.int64(), -2**63, 2**63 - 1),
                              ("u8", pa.uint8(), 0, 255), ("u16", pa.uint16(), 0, 2**16 - 1),
                              ("u32", pa.uint32(), 0, 2**32 - 1),
                              ("u64", pa.uint64(), 0, 2**64 - 1)]:
        cols[name] = _ints(rng, n, typ, lo, hi)
    cols["i64_few"] = _ints(rng, n, pa.int64(), -3, 3)
    cols["i32_req"] = _ints(rng, n, pa.int32(), -5, 1000, nulls=False)
    cols["f32"] = pa.array(rng.normal(size=n).astype(np.float32), mask=_mask(rng, n))
    cols["f64"] = pa.array(rng.normal(size=n) * 1e6, mask=_mask(rng, n))
    cols["f16"] = pa.array(rng.normal(size=n).astype(np.float16), mask=_mask(rng, n))
    cols["bool"] = pa.array(rng.random(n) < 0.5, mask=_mask(rng, n))
    cols["str"] = pa.array(_strings(rng, n))
    cols["str_few"] = pa.array(_strings(rng, n, few=True))
    cols["lstr"] = pa.array(_strings(rng, n), pa.large_string())
    cols["vstr"] = pa.array(_strings(rng, n, few=True), pa.string_view())
    cols["bin"] = pa.array([None if s is None else s.encode() for s in _strings(rng, n)],
                           pa.binary())
    cols["lbin"] = pa.array([None if s is None else s.encode() for s in _strings(rng, n)],
                            pa.large_binary())
    cols["vbin"] = pa.array([None if s is None else s.encode() * 3 for s in _strings(rng, n)],
                            pa.binary_view())
    cols["fsb"] = pa.array([None if rng.random() < .1 else bytes(rng.integers(0, 256, 5,
                                                                              dtype=np.uint8))
                            for _ in range(n)], pa.binary(5))

    def dec(p, s, typ):
        vals = []
        for _ in range(n):
            if rng.random() < 0.15:
                vals.append(None)
            else:
                digits = int(rng.integers(0, p + 1))
                u = int(rng.integers(0, 10**min(digits, 18))) * (10**max(0, digits - 18))
                u = min(u, 10**p - 1)
                vals.append(decimal.Decimal((0 if rng.random() < .5 else 1,
                                             tuple(int(c) for c in str(u)), -s)))
        return pa.array(vals, typ)

    cols["dec32"] = dec(7, 2, pa.decimal32(7, 2))
    cols["dec64"] = dec(15, 3, pa.decimal64(15, 3))
    cols["dec128"] = dec(20, 4, pa.decimal128(20, 4))
    cols["dec128_38"] = dec(38, 10, pa.decimal128(38, 10))
    cols["dec256"] = dec(60, 7, pa.decimal256(60, 7))
    cols["date32"] = _ints(rng, n, pa.int32(), -20000, 40000).cast(pa.date32())
    cols["date64"] = pa.array((rng.integers(-20000, 40000, n) * 86400000), pa.int64(),
                              mask=_mask(rng, n)).cast(pa.date64())
    cols["time32s"] = _ints(rng, n, pa.int32(), 0, 86399).cast(pa.time32("s"))
    cols["time32ms"] = _ints(rng, n, pa.int32(), 0, 86399999).cast(pa.time32("ms"))
    cols["time64us"] = _ints(rng, n, pa.int64(), 0, 86399999999).cast(pa.time64("us"))
    cols["time64ns"] = _ints(rng, n, pa.int64(), 0, 86399999999999).cast(pa.time64("ns"))
    for unit in ["s", "ms", "us", "ns"]:
        raw = _ints(rng, n, pa.int64(), -2**40, 2**40)
        cols[f"ts_{unit}"] = raw.cast(pa.timestamp(unit))
        cols[f"tstz_{unit}"] = raw.cast(pa.timestamp(unit, tz="Europe/Paris"))
        cols[f"dur_{unit}"] = raw.cast(pa.duration(unit))
    cols["null"] = pa.nulls(n)
    cols["dict_str"] = pa.array(_strings(rng, n, few=True)).dictionary_encode()
    cols["dict_i64"] = _ints(rng, n, pa.int64(), 0, 9).dictionary_encode()
    cols["list_i32"] = _list_of(rng, lambda k: _ints(rng, k, pa.int32(), -9, 9), n,
                                pa.list_(pa.int32()))
    cols["list_str_req"] = _list_of(rng, lambda k: pa.array(_strings(rng, k, few=True)), n,
                                    pa.list_(pa.field("item", pa.string())))
    cols["llist_f64"] = _list_of(rng, lambda k: pa.array(rng.normal(size=k), mask=_mask(rng, k)),
                                 n, pa.large_list(pa.float64()))
    fsl_child = _ints(rng, n * 3, pa.int16(), -100, 100)
    cols["fsl_i16"] = pa.FixedSizeListArray.from_arrays(fsl_child, 3, mask=pa.array(_mask(rng, n)))
    st_a = _ints(rng, n, pa.int32(), 0, 100)
    st_b = pa.array(_strings(rng, n, few=True))
    st_c = _list_of(rng, lambda k: pa.array(rng.random(k) < .5), n, pa.list_(pa.bool_()))
    lv_off = rng.integers(0, 2 * n, size=n).astype(np.int32)
    lv_size = rng.integers(0, 4, size=n).astype(np.int32)
    cols["lview_i64"] = pa.ListViewArray.from_arrays(
        pa.array(lv_off), pa.array(lv_size), _ints(rng, 2 * n + 4, pa.int64(), 0, 5),
        mask=pa.array(_mask(rng, n)))
    cols["struct"] = pa.StructArray.from_arrays([st_a, st_b, st_c], names=["a", "b", "c"],
                                                mask=pa.array(_mask(rng, n)))
    lens = rng.integers(0, 4, size=n)
    offs = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
    total = int(lens.sum())
    keys = pa.array([f"k{int(x)}" for m in lens for x in rng.choice(20, m, replace=False)])
    cols["map"] = pa.MapArray.from_arrays(offs, keys, _ints(rng, total, pa.int64(), -5, 5),
                                          mask=pa.array(_mask(rng, n)))

    def inner(k):
        a = _ints(rng, k, pa.int8(), -5, 5)
        li = _list_of(rng, lambda m: pa.array(_strings(rng, m, few=True)), k, pa.list_(pa.string()))
        return pa.StructArray.from_arrays([a, li], names=["x", "ys"], mask=pa.array(_mask(rng, k)))

    cols["list_struct_list"] = _list_of(rng, inner, n, pa.list_(inner(1).type))
    cols["list_list"] = _list_of(
        rng, lambda k: _list_of(rng, lambda m: _ints(rng, m, pa.int32(), 0, 3), k,
                                pa.list_(pa.int32())), n, pa.list_(pa.list_(pa.int32())))
    meta = {"huggingface": '{"info": {"features": {"i8": {"dtype": "int8"}}}}', "other": "v"}
    return pa.table(cols).replace_schema_metadata(meta)


# DuckDB reads these differently from how it reads the same pyarrow file
# only in float printing; none are excluded: every column is compared.
CODECS = ["none", "snappy", "zstd", "gzip", "brotli", "lz4"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    d = tmp_path_factory.mktemp("pqw")
    t = random_table(7)
    src = d / "src.arrow"
    feather.write_feather(t, str(src), compression="uncompressed", chunksize=600)
    ref = d / "pyarrow.parquet"
    pq.write_table(t, str(ref))
    return d, t, src, ref


def _convert(src, out, *opts):
    quiver("convert", src, out, *opts)


def _duck_rows(path):
    return duckdb.sql(f"SELECT * FROM read_parquet('{path}')").fetchall()


def _same_rows(a, b):
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert x == y or _nan_equal(x, y), f"row {i}: {x} != {y}"


def _nan_equal(x, y):
    if isinstance(x, float) and isinstance(y, float):
        return math.isnan(x) and math.isnan(y)
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)) and len(x) == len(y):
        return all(a == b or _nan_equal(a, b) for a, b in zip(x, y))
    if isinstance(x, dict) and isinstance(y, dict) and x.keys() == y.keys():
        return all(x[k] == y[k] or _nan_equal(x[k], y[k]) for k in x)
    return False


def _tables_equal(got, want):
    """Schemas, then column by column; dictionary columns by their values
    (the dictionaries of the row groups may differ). The first difference
    (a column name or 'schema'), or None."""
    if got.schema != want.schema:
        return "schema"
    for name in want.column_names:
        if pa.types.is_dictionary(want.schema.field(name).type):
            if got[name].to_pylist() != want[name].to_pylist():
                return name
        elif not got[name].equals(want[name]):
            return name
    return None


def _columns_equal(got, want):
    diff = _tables_equal(got, want)
    assert diff is None, diff


def _page_type(path, offset):
    """PageHeader.type of the page at `offset`: the first field (id 1, i32)
    of the thrift compact struct is 0x15 then a zigzag varint."""
    with open(path, "rb") as f:
        f.seek(offset)
        b = f.read(2)
    assert b[0] == 0x15, b
    return b[1] >> 1


@pytest.mark.parametrize("codec,page_version,dictionary",
                         [(c, v, d) for c in CODECS for v, d in [(1, True), (2, False)]] +
                         [("snappy", 1, False), ("zstd", 2, True), ("none", 2, True),
                          ("gzip", 1, False)])
def test_matrix_equals_pyarrow_and_duckdb(source, codec, page_version, dictionary):
    d, t, src, ref = source
    out = d / f"q_{codec}_{page_version}_{dictionary}.parquet"
    opts = [f"--compression={codec}", f"--page-version={page_version}",
            "--row-group-size=700", "--page-size=2000"]
    if not dictionary:
        opts.append("--no-dictionary")
    _convert(src, out, *opts)
    got = pq.read_table(out)
    want = pq.read_table(ref)
    assert got.schema.equals(want.schema, check_metadata=True), (got.schema, want.schema)
    assert got.schema.metadata == t.schema.metadata
    _columns_equal(got, want)
    # the source types, except where pyarrow's own round trip changes them:
    # the names Parquet gives list items and map entries, date64 -> date32,
    # seconds -> milliseconds, dictionaries of non-binary values decoded
    changed = {f.name for f, g in zip(t.schema, got.schema) if f.type != g.type}
    assert changed <= {"date64", "time32s", "ts_s", "tstz_s", "dict_i64", "list_i32", "list_str_req", "llist_f64", "fsl_i16", "lview_i64",
                       "struct", "map", "list_struct_list", "list_list"}, changed
    _same_rows(_duck_rows(out), _duck_rows(ref))

    md = pq.ParquetFile(out).metadata
    assert md.num_row_groups == 3 and md.num_rows == N
    expect_codec = {"none": "UNCOMPRESSED", "lz4": "LZ4"}.get(codec, codec.upper())
    for r in range(md.num_row_groups):
        rg = md.row_group(r)
        assert rg.num_rows == (700 if r < 2 else N - 1400)
        for c in range(rg.num_columns):
            col = rg.column(c)
            assert col.compression == expect_codec
            is_bool = col.physical_type == "BOOLEAN" or col.path_in_schema == "null"
            assert col.has_dictionary_page == (dictionary and not is_bool), col.path_in_schema
            assert ("RLE_DICTIONARY" in col.encodings) == (dictionary and not is_bool)
            assert _page_type(out, col.data_page_offset) == (0 if page_version == 1 else 3)
            if col.has_dictionary_page:
                assert _page_type(out, col.dictionary_page_offset) == 2


def test_many_pages_and_row_groups(source, tmp_path):
    d, t, src, ref = source
    out = tmp_path / "small.parquet"
    _convert(src, out, "--row-group-size=97", "--page-size=64", "--compression=snappy")
    _columns_equal(pq.read_table(out), pq.read_table(ref))
    assert pq.ParquetFile(out).metadata.num_row_groups == -(-N // 97)


def test_statistics_equal_pyarrow(source):
    d, t, src, ref = source
    out = d / "stats.parquet"
    _convert(src, out, "--row-group-size=700")
    pq.write_table(t, str(d / "stats_ref.parquet"), row_group_size=700)
    a = pq.ParquetFile(out).metadata
    b = pq.ParquetFile(d / "stats_ref.parquet").metadata
    checked = 0
    for r in range(a.num_row_groups):
        for c in range(a.num_columns):
            x, y = a.row_group(r).column(c), b.row_group(r).column(c)
            assert x.path_in_schema == y.path_in_schema
            sx, sy = x.statistics, y.statistics
            assert (sx is None) == (sy is None), x.path_in_schema
            if sy is None:
                continue
            assert sx.null_count == sy.null_count, x.path_in_schema
            assert sx.has_min_max == sy.has_min_max, x.path_in_schema
            if sy.has_min_max:
                assert (sx.min_raw, sx.max_raw) == (sy.min_raw, sy.max_raw), x.path_in_schema
                checked += 1
    assert checked > 40


def test_dictionary_fallback(tmp_path):
    rng = np.random.default_rng(3)
    n = 20000
    t = pa.table({"s": pa.array([f"value-{int(x)}" for x in rng.integers(0, 10**9, n)]),
                  "few": pa.array([f"f{int(x)}" for x in rng.integers(0, 5, n)]),
                  "i": pa.array(rng.integers(0, 10**12, n))})
    src = tmp_path / "in.arrow"
    feather.write_feather(t, str(src))
    out = tmp_path / "fb.parquet"
    _convert(src, out, "--dictionary-page-size=4096", "--page-size=4096")
    assert pq.read_table(out).equals(t)
    _same_rows(_duck_rows(out), [tuple(r.values()) for r in t.to_pylist()])
    md = pq.ParquetFile(out).metadata.row_group(0)
    for c in (0, 2):  # many distinct values: fell back to PLAIN after the first pages
        enc = md.column(c).encodings
        assert "RLE_DICTIONARY" in enc and "PLAIN" in enc and md.column(c).has_dictionary_page
    few = md.column(1)
    assert few.has_dictionary_page and "RLE_DICTIONARY" in few.encodings
    # the fallback file is much larger than a dictionary-only one would be
    assert md.column(0).total_uncompressed_size > 10 * 4096


def _encodings(path, c):
    md = pq.ParquetFile(path).metadata.row_group(0).column(c)
    return set(md.encodings), md.has_dictionary_page


def _dictionary_page_bytes(path, c):
    md = pq.ParquetFile(path).metadata.row_group(0).column(c)
    return md.data_page_offset - md.dictionary_page_offset


def test_dictionary_decided_early(tmp_path):
    """The early dictionary rule: a chunk whose first 4096 values are
    nearly unique and would overflow the dictionary page goes PLAIN at once
    (no dictionary page); one that starts repetitive keeps its dictionary
    until the limit, then falls back; one that starts unique and turns
    repetitive stays PLAIN; few distinct values keep the dictionary. (A
    64 KiB dictionary page keeps the table small.)"""
    rng = np.random.default_rng(7)
    n = 30000
    uniq = rng.permutation(n).astype(np.int64) * 7919
    rep = rng.integers(0, 10, n)
    strs = np.array([f"k{int(x)}" for x in uniq], dtype=object)
    head = 6000  # the repetitive / unique prefix, longer than the 4096 judged
    lens = rng.integers(0, 4, n)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    unique_items = np.arange(int(lens.sum()), dtype=np.int64) * 3
    items = unique_items.copy()
    items[: 3 * head // 2] %= 5  # this list starts repetitive
    t = pa.table({
        "unique": pa.array(uniq, mask=rng.random(n) < 0.05),
        "rep_then_unique": pa.array(np.where(np.arange(n) < head, rep, uniq)),
        "unique_then_rep": pa.array(np.where(np.arange(n) < head, uniq, rep)),
        "str_unique": pa.array(strs),
        "str_rep_then_unique": pa.array(np.where(np.arange(n) < head,
                                                 np.array([f"r{int(x)}" for x in rep]), strs)),
        "few": pa.array(rep),
        "list_rep_then_unique": pa.ListArray.from_arrays(pa.array(offs), pa.array(items)),
        "list_unique": pa.ListArray.from_arrays(pa.array(offs), pa.array(unique_items + 10**9)),
    })
    src = tmp_path / "in.arrow"
    feather.write_feather(t, str(src))
    for version in ("1", "2"):
        out = tmp_path / f"early{version}.parquet"
        _convert(src, out, f"--page-version={version}", "--compression=none",
                 "--dictionary-page-size=65536")
        assert pq.read_table(out).equals(t)
        _same_rows(_duck_rows(out), [tuple(r.values()) for r in t.to_pylist()])
        for c in (0, 2, 3, 7):  # unique from the start: PLAIN, no dictionary page
            assert _encodings(out, c)[0] & {"RLE_DICTIONARY", "PLAIN_DICTIONARY"} == set(), c
            assert not _encodings(out, c)[1], c
        for c in (1, 4, 6):  # dictionary first, then the fallback to PLAIN
            enc, has_dict = _encodings(out, c)
            assert "RLE_DICTIONARY" in enc and "PLAIN" in enc and has_dict, c
            # the dictionary stopped at its limit: not all the values are in it
            assert 0 < _dictionary_page_bytes(out, c) < 65536 + 100, c
        enc, has_dict = _encodings(out, 5)
        assert "RLE_DICTIONARY" in enc and has_dict
    # small chunks keep their dictionary even when unique (it fits)
    out = tmp_path / "small.parquet"
    _convert(src, out, "--row-group-size=3000")
    assert pq.read_table(out).equals(t)
    assert _encodings(out, 0)[1] and _encodings(out, 3)[1]


def test_float_special_values(tmp_path):
    t = pa.table({"f": pa.array([float("nan"), -0.0, 0.0, 1.5, None, float("inf")]),
                  "g": pa.array([float("nan"), None], pa.float32()).take([0, 1, 0, 0, 0, 0]),
                  "z": pa.array([0.0, -0.0, 0.0, None, 0.0, 0.0])})
    src = tmp_path / "in.arrow"
    feather.write_feather(t, str(src))
    out, ref = tmp_path / "q.parquet", tmp_path / "p.parquet"
    _convert(src, out)
    pq.write_table(t, str(ref))
    got = pq.read_table(out)
    assert got.schema == t.schema
    assert got.to_pylist().__repr__() == t.to_pylist().__repr__()
    a, b = pq.ParquetFile(out).metadata.row_group(0), pq.ParquetFile(ref).metadata.row_group(0)
    for c in range(3):
        sa, sb = a.column(c).statistics, b.column(c).statistics
        assert sa.has_min_max == sb.has_min_max
        if sb.has_min_max:
            assert repr((sa.min, sa.max)) == repr((sb.min, sb.max))


def test_empty_and_all_null(tmp_path):
    t = pa.table({"a": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    src = tmp_path / "e.arrow"
    feather.write_feather(t, str(src))
    _convert(src, tmp_path / "e.parquet")
    assert pq.read_table(tmp_path / "e.parquet").equals(t)
    t = pa.table({"a": pa.array([None] * 50, pa.int64()), "s": pa.array([None] * 50, pa.string()),
                  "l": pa.array([None] * 50, pa.list_(pa.int8()))})
    feather.write_feather(t, str(src))
    _convert(src, tmp_path / "n.parquet")
    assert pq.read_table(tmp_path / "n.parquet").equals(t)
    assert duckdb.sql(f"SELECT count(*), count(a) FROM '{tmp_path / 'n.parquet'}'").fetchall() == \
        [(50, 0)]


def test_unsupported_type_and_usage(tmp_path):
    t = pa.table({"u": pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()),
                                                 [pa.array([1, 2]), pa.array(["a", "b"])])})
    src = tmp_path / "u.arrow"
    feather.write_feather(t, str(src))
    out = tmp_path / "u.parquet"
    out.write_bytes(b"old")
    r = quiver("convert", src, out, check=False)
    assert r.returncode == 1 and b"cannot be written to Parquet" in r.stderr
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    for bad in ["--compression=lzo", "--page-version=3", "--row-group-size=0", "--bogus",
                "--threads=x", "--compression=snappy:3"]:
        r = quiver("convert", src, out, bad, check=False)
        assert r.returncode == 2, bad
    r = quiver("convert", src, out, "--help")
    assert b"--row-group-size" in r.stdout
    # --to=parquet without the extension
    feather.write_feather(pa.table({"a": [1, 2]}), str(src))
    quiver("convert", src, tmp_path / "plain.bin", "--to=parquet")
    assert pq.read_table(tmp_path / "plain.bin").to_pydict() == {"a": [1, 2]}


def test_kill_leaves_no_partial_output(source, tmp_path):
    """Killed at every crash point (QUIVER_TEST_KILL_AT) of a 4-column,
    3-row-group write: the old file or the new one, never a torn one."""
    d, full, _, _ = source
    t = full.select(["i64", "str", "list_i32", "struct"])
    src, ref = tmp_path / "k.arrow", tmp_path / "k_ref.parquet"
    feather.write_feather(t, str(src), compression="uncompressed", chunksize=600)
    pq.write_table(t, str(ref))
    out = tmp_path / "k.parquet"
    env = dict(os.environ, QUIVER_TEST_KILL_TRACE="1")
    r = subprocess.run([require(CLI), "convert", str(src), str(out), "--row-group-size=500"],
                       capture_output=True, env=env)
    assert r.returncode == 0
    points = r.stderr.decode().count("quiver-crash-point")
    assert points >= 5
    out.unlink()
    want = pq.read_table(ref)
    old = want.slice(0, 10)
    for k in range(1, points + 1):
        pq.write_table(old, str(out))
        env = dict(os.environ, QUIVER_TEST_KILL_AT=str(k))
        r = subprocess.run([CLI, "convert", str(src), str(out), "--row-group-size=500"],
                           capture_output=True, env=env)
        got = pq.read_table(out)
        if r.returncode == -signal.SIGKILL:
            assert got.equals(old) or _tables_equal(got, want) is None, k
        else:
            assert r.returncode == 0 and _tables_equal(got, want) is None, k
    # the next write reclaims the dead writers' temporaries
    _convert(src, out)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert points >= 10


class ArrowArrayStream(ctypes.Structure):
    _fields_ = [("get_schema", ctypes.c_void_p), ("get_next", ctypes.c_void_p),
                ("get_last_error", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


class Options(ctypes.Structure):
    _fields_ = [("codec", ctypes.c_int), ("compression_level", ctypes.c_int),
                ("row_group_rows", ctypes.c_int64), ("page_bytes", ctypes.c_int64),
                ("dictionary_page_bytes", ctypes.c_int64), ("no_dictionary", ctypes.c_bool),
                ("page_version", ctypes.c_int), ("no_statistics", ctypes.c_bool),
                ("no_arrow_schema", ctypes.c_bool), ("threads", ctypes.c_int)]


def test_c_stream_entry_point(tmp_path):
    lib = ctypes.CDLL(require(LIB))
    fn = lib.qv_parquet_write_arrow_stream_path
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(ArrowArrayStream), ctypes.c_char_p, ctypes.POINTER(Options),
                   ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p]
    t = random_table(11, n=300)
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=77))
    stream = ArrowArrayStream()
    reader._export_to_c(ctypes.addressof(stream))
    out = tmp_path / "s.parquet"
    opts = Options(codec=6, row_group_rows=100, page_version=2)
    rows = ctypes.c_int64(0)
    err = ctypes.create_string_buffer(1024)
    st = fn(ctypes.byref(stream), str(out).encode(), ctypes.byref(opts), ctypes.byref(rows), err)
    assert st == 0, err.value
    assert rows.value == 300 and stream.release is None
    ref = tmp_path / "ref.parquet"
    pq.write_table(t, str(ref))
    _columns_equal(pq.read_table(out), pq.read_table(ref))
    assert pq.ParquetFile(out).metadata.num_row_groups == 3
    assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == "ZSTD"
    # the bytes do not depend on the number of threads
    files = []
    for threads in (1, 2, 3):
        stream = ArrowArrayStream()
        reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=77))
        reader._export_to_c(ctypes.addressof(stream))
        p = tmp_path / f"t{threads}.parquet"
        opts = Options(codec=1, row_group_rows=120, threads=threads)
        assert fn(ctypes.byref(stream), str(p).encode(), ctypes.byref(opts), None, err) == 0
        files.append(p.read_bytes())
    assert files[0] == files[1] == files[2]
    # without ARROW:schema, pyarrow reads the Parquet types (no large/view types)
    stream = ArrowArrayStream()
    sel = t.select(["lstr", "i64"])
    pa.RecordBatchReader.from_batches(sel.schema, sel.to_batches())._export_to_c(
        ctypes.addressof(stream))
    opts = Options(no_arrow_schema=True)
    st = fn(ctypes.byref(stream), str(out).encode(), ctypes.byref(opts), None, err)
    assert st == 0, err.value
    got = pq.read_table(out)
    assert got.schema.field("lstr").type == pa.string()
    assert got.column("lstr").to_pylist() == sel.column("lstr").to_pylist()
    assert b"ARROW:schema" not in (pq.ParquetFile(out).metadata.metadata or {})


def test_datasets_directory_to_parquet(tmp_path):
    """A save_to_disk directory (2 shards, every feature type) and a
    DatasetDict split: the Parquet file equals what `datasets`' own
    to_parquet writes (values, types, the features in the metadata)."""
    import hfdata
    import datasets as D
    ds = hfdata.all_features_dataset(40)
    src = tmp_path / "saved"
    ds.save_to_disk(str(src), num_shards=2)
    out, ref = tmp_path / "q.parquet", tmp_path / "ref.parquet"
    quiver("convert", src, out)
    ds.to_parquet(str(ref))
    got, want = pq.read_table(out), pq.read_table(ref)
    assert got.num_rows == 40
    assert got.to_pylist() == want.to_pylist()
    assert got.schema.equals(want.schema, check_metadata=True)
    # the features datasets reads back: from the huggingface key, as from its own file
    assert D.Features.from_arrow_schema(got.schema) == D.Features.from_arrow_schema(want.schema)
    assert got.schema.metadata[b"huggingface"] == ds.data.schema.metadata[b"huggingface"]
    dd = D.DatasetDict({"train": ds.select(range(30)), "test": ds.select(range(30, 40))})
    dd.save_to_disk(str(tmp_path / "dd"))
    r = quiver("convert", tmp_path / "dd", out, check=False)
    assert r.returncode != 0 and b"split" in r.stderr
    quiver("convert", tmp_path / "dd", out, "--split", "test")
    assert pq.read_table(out).to_pylist() == want.slice(30).to_pylist()
    r = quiver("convert", src / "data-00000-of-00002.arrow", out, "--split=x", check=False)
    assert r.returncode == 2
