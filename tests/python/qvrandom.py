"""qvrandom.py — random pyarrow data of every Arrow type, for oracle tests.

random_type(rng, depth) draws a type (any Arrow type, nested up to
`depth`, field metadata on some children); random_array(rng, type, n)
draws an array of that type with nulls, built through pyarrow's
constructors so its layout is pyarrow's own (sliced children, list views
with overlapping and out-of-order ranges, view arrays with variadic data
buffers, unions with sliced children...). all_types(rng) is one of each
type family (the fixed coverage every table gets) plus random nested
types. random_table(seed, n) combines them with schema and field metadata;
random_batches(table, rng) cuts it into small, empty and sliced batches.

Float values are random bit patterns (NaN payloads included) at the top
level only; nested floats are ordinary numbers so that pyarrow's equals()
can compare nested columns (it treats NaN != NaN).
"""
import ctypes
import decimal
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class _ArrowSchema(ctypes.Structure):
    pass


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(_ArrowSchema))),
    ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p)]


class _ArrowArray(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in
                ("length", "null_count", "offset", "n_buffers", "n_children")] + \
               [(n, ctypes.c_void_p) for n in
                ("buffers", "children", "dictionary", "release", "private_data")]


# month_interval and day_time_interval: pyarrow has neither a type factory
# nor a Python array class for them, but handles them inside record batches
# and tables. They are made by exporting int32 / int64 columns through the
# C Data Interface and re-importing them under the formats "tiM" / "tiD"
# (same layout: validity + 4 / 8-byte values).
_RETYPE = {"tiM": pa.int32(), "tiD": pa.int64()}


def retype_columns(batch, formats):
    """batch with column i re-imported under C format formats[i] (a dict)."""
    s, a = _ArrowSchema(), _ArrowArray()
    batch._export_to_c(ctypes.addressof(a), ctypes.addressof(s))
    for i, fmt in formats.items():
        assert batch.schema.field(i).type == _RETYPE[fmt]
        s.children[i].contents.format = fmt.encode()
    return pa.RecordBatch._import_from_c(ctypes.addressof(a), ctypes.addressof(s))


_TZS = [None, "UTC", "America/New_York", "+05:30"]
_UNITS = ["s", "ms", "us", "ns"]
_INDEX_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
                pa.uint32(), pa.uint64()]


def primitive_types():
    """One of every non-nested type."""
    return [
        pa.null(), pa.bool_(),
        pa.int8(), pa.int16(), pa.int32(), pa.int64(),
        pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
        pa.float16(), pa.float32(), pa.float64(),
        pa.decimal32(7, 2), pa.decimal64(15, -3), pa.decimal128(38, 10), pa.decimal256(76, 20),
        pa.date32(), pa.date64(),
        pa.time32("s"), pa.time32("ms"), pa.time64("us"), pa.time64("ns"),
        *[pa.timestamp(u, tz) for u in _UNITS for tz in (None, "UTC")],
        pa.timestamp("ms", "America/New_York"),
        *[pa.duration(u) for u in _UNITS],
        pa.month_day_nano_interval(),
        pa.binary(), pa.string(), pa.large_binary(), pa.large_string(),
        pa.binary(1), pa.binary(13),
        pa.binary_view(), pa.string_view(),
    ]


def _meta(rng, p=0.3):
    if rng.random() < p:
        return {f"k{rng.randint(0, 99)}": f"v{rng.randint(0, 9999)}", "ARROW:x": "\u00e9\u20ac"}
    return None


def _field(rng, name, t, nullable=True):
    return pa.field(name, t, nullable=nullable or t == pa.null(), metadata=_meta(rng))


def random_type(rng, depth):
    """Any type; nested ones only while depth > 0."""
    prims = primitive_types()
    if depth <= 0 or rng.random() < 0.45:
        return rng.choice(prims)
    kind = rng.choice(["list", "large_list", "list_view", "large_list_view", "fsl", "struct",
                       "map", "sparse_union", "dense_union", "dictionary", "ree"])
    sub = lambda: random_type(rng, depth - 1)  # noqa: E731
    if kind == "list":
        return pa.list_(_field(rng, "item", sub()))
    if kind == "large_list":
        return pa.large_list(_field(rng, "item", sub()))
    if kind == "list_view":
        return pa.list_view(_field(rng, "item", sub()))
    if kind == "large_list_view":
        return pa.large_list_view(_field(rng, "item", sub()))
    if kind == "fsl":
        return pa.list_(_field(rng, "item", sub()), rng.randint(0, 3))
    if kind == "struct":
        return pa.struct([_field(rng, f"f{i}", sub(), nullable=rng.random() < 0.8)
                          for i in range(rng.randint(0, 3))])
    if kind == "map":
        key = rng.choice([pa.string(), pa.int32(), pa.binary(4), pa.large_string()])
        return pa.map_(key, sub(), keys_sorted=rng.random() < 0.3)
    if kind in ("sparse_union", "dense_union"):
        n = rng.randint(1, 3)
        codes = sorted(rng.sample(range(0, 127), n))
        fields = [_field(rng, f"u{i}", sub()) for i in range(n)]
        mode = "sparse" if kind == "sparse_union" else "dense"
        return pa.union(fields, mode, type_codes=codes)
    if kind == "dictionary":
        value = rng.choice([pa.string(), pa.int64(), pa.large_binary(), pa.float64(),
                            pa.binary(3), pa.string_view(), pa.decimal128(10, 2),
                            pa.list_(pa.int16()), pa.struct([("a", pa.int8())])])
        return pa.dictionary(rng.choice(_INDEX_TYPES), value, ordered=rng.random() < 0.3)
    run_end = rng.choice([pa.int16(), pa.int32(), pa.int64()])
    value = sub()
    while isinstance(value, pa.RunEndEncodedType) or value == pa.null():
        value = sub()
    return pa.run_end_encoded(run_end, value)


def all_types(rng):
    """Every type family at least once, plus random nested types."""
    types = list(primitive_types())
    types += [
        pa.list_(pa.int32()), pa.large_list(pa.string()),
        pa.list_view(pa.int64()), pa.large_list_view(pa.string()),
        pa.list_(pa.float32(), 3), pa.list_(pa.bool_(), 0),
        pa.struct([("x", pa.int32()), ("y", pa.string()), pa.field("z", pa.float64(), False)]),
        pa.struct([]),
        pa.map_(pa.string(), pa.int32()),
        pa.map_(pa.int64(), pa.list_(pa.string()), keys_sorted=True),
        pa.union([pa.field("i", pa.int32()), pa.field("s", pa.string())], "sparse",
                 type_codes=[3, 7]),
        pa.union([pa.field("i", pa.int64()), pa.field("l", pa.list_(pa.int8())),
                  pa.field("n", pa.null())], "dense"),
        pa.dictionary(pa.int8(), pa.string()),
        pa.dictionary(pa.uint16(), pa.int64(), ordered=True),
        pa.dictionary(pa.int32(), pa.large_string()),
        pa.list_(pa.dictionary(pa.int16(), pa.string())),
        pa.struct([("d", pa.dictionary(pa.int8(), pa.binary()))]),
        pa.run_end_encoded(pa.int16(), pa.string()),
        pa.run_end_encoded(pa.int32(), pa.float64()),
        pa.run_end_encoded(pa.int64(), pa.list_(pa.int32())),
        pa.list_(pa.struct([("k", pa.dictionary(pa.int16(), pa.string())),
                            ("v", pa.large_list_view(pa.float16()))])),
        pa.struct([("sv", pa.list_(pa.string_view())), ("bv", pa.binary_view())]),
    ]
    types += [random_type(rng, 3) for _ in range(12)]
    return types


# ---------------------------------------------------------------------------
# Arrays

def _mask(rng, n, p):
    """A pyarrow boolean mask (True = null) or None."""
    if p == 0 or rng.random() < 0.2:
        return None
    return pa.array([rng.random() < p for _ in range(n)], pa.bool_())


def _nullable(rng, values, p):
    return [None if rng.random() < p else v for v in values]


def _text(rng, long_ok=True):
    n = rng.choice([0, 1, 3, 5, 12, 13, 40]) if long_ok else rng.randint(0, 6)
    return "".join(rng.choice("abcxyz \u00e9\u20ac\U0001F600\"\\\n") for _ in range(n))


def _random_bits(rng, n, width):
    return np.frombuffer(rng.randbytes(n * width), dtype=f"u{width}")


def _decimal(rng, t):
    digits = rng.randint(0, t.precision)
    v = rng.randint(-(10 ** digits - 1), 10 ** digits - 1) if digits else 0
    return decimal.Decimal(v).scaleb(-t.scale)


def _run_ends(rng, n):
    ends, pos = [], 0
    while pos < n:
        pos = min(n, pos + rng.choice([1, 1, 2, 3, 7]))
        ends.append(pos)
    return ends


def random_array(rng, t, n, p=0.2, top=False):
    """A random array of type t and length n (nulls with probability p)."""
    if t == pa.null():
        return pa.nulls(n)
    if pa.types.is_boolean(t):
        return pa.array(_nullable(rng, [rng.random() < 0.5 for _ in range(n)], p), t)
    if pa.types.is_integer(t):
        bits = t.bit_width
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(t) \
            else (0, (1 << bits) - 1)
        return pa.array(_nullable(rng, [rng.randint(lo, hi) for _ in range(n)], p), t)
    if pa.types.is_floating(t):
        w = t.bit_width // 8
        if top:  # any bit pattern: NaN payloads, -0.0, subnormals
            ints = pa.array(_nullable(rng, [int(v) for v in _random_bits(rng, n, w)], p),
                            pa.type_for_alias(f"uint{8 * w}"))
            return ints.view(t)
        vals = [rng.choice([0.0, -1.5, 2.25, 1e3, -7.0, 0.5]) for _ in range(n)]
        if t == pa.float16():
            return pa.array(np.array(vals, dtype=np.float16), mask=_np_mask(rng, n, p))
        return pa.array(_nullable(rng, vals, p), t)
    if pa.types.is_decimal(t):
        return pa.array(_nullable(rng, [_decimal(rng, t) for _ in range(n)], p), t)
    if t in (pa.date32(),):
        return pa.array(_nullable(rng, [rng.randint(-100000, 100000) for _ in range(n)], p),
                        pa.int32()).cast(t)
    if t == pa.date64():
        return pa.array(_nullable(rng, [rng.randint(-100000, 100000) * 86400000
                                        for _ in range(n)], p), pa.int64()).cast(t)
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        per_day = {"s": 86400, "ms": 86400000, "us": 86400000000, "ns": 86400000000000}[t.unit]
        st = pa.int32() if pa.types.is_time32(t) else pa.int64()
        return pa.array(_nullable(rng, [rng.randrange(per_day) for _ in range(n)], p),
                        st).cast(t)
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return pa.array(_nullable(rng, [rng.randint(-2**62, 2**62) for _ in range(n)], p),
                        pa.int64()).cast(t)
    if t == pa.month_day_nano_interval():
        return pa.array(_nullable(rng, [pa.MonthDayNano([rng.randint(-99, 99),
                                                         rng.randint(-99, 99),
                                                         rng.randint(-2**62, 2**62)])
                                        for _ in range(n)], p), t)
    if pa.types.is_fixed_size_binary(t):
        return pa.array(_nullable(rng, [rng.randbytes(t.byte_width) for _ in range(n)], p), t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.array(_nullable(rng, [_text(rng).encode() + rng.randbytes(rng.randint(0, 3))
                                        for _ in range(n)], p), t)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.array(_nullable(rng, [_text(rng) for _ in range(n)], p), t)
    if pa.types.is_fixed_size_list(t):
        values = random_array(rng, t.value_type, n * t.list_size, p)
        # from_buffers: FixedSizeListArray.from_arrays divides by list_size
        mask = _mask(rng, n, p)
        validity = None if mask is None else pc.invert(mask).buffers()[1]
        return pa.Array.from_buffers(t, n, [validity], null_count=0 if mask is None else -1,
                                     children=[values])
    if pa.types.is_map(t):
        lens = [rng.randint(0, 3) for _ in range(n)]
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        keys = random_array(rng, t.key_type, int(offsets[-1]), 0)
        items = random_array(rng, t.item_type, int(offsets[-1]), p)
        return pa.MapArray.from_arrays(pa.array(offsets), keys, items, type=t,
                                       mask=_mask(rng, n, p))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        lens = [rng.randint(0, 3) for _ in range(n)]
        offsets = np.concatenate([[0], np.cumsum(lens)])
        # a child with extra values before and after the referenced range
        pad = rng.randint(0, 2)
        child = random_array(rng, t.value_type, int(offsets[-1]) + 2 * pad, p)
        child = child.slice(pad, int(offsets[-1]))
        ot = pa.int32() if pa.types.is_list(t) else pa.int64()
        cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        return cls.from_arrays(pa.array(offsets, ot), child, type=t, mask=_mask(rng, n, p))
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        m = rng.randint(0, 2 * n + 1)
        child = random_array(rng, t.value_type, m, p)
        sizes = [rng.randint(0, min(3, m)) for _ in range(n)]
        offsets = [rng.randint(0, m - s) for s in sizes]  # overlapping, any order
        ot = pa.int32() if pa.types.is_list_view(t) else pa.int64()
        cls = pa.ListViewArray if pa.types.is_list_view(t) else pa.LargeListViewArray
        return cls.from_arrays(pa.array(offsets, ot), pa.array(sizes, ot), child, type=t,
                               mask=_mask(rng, n, p))
    if pa.types.is_struct(t):
        children = [random_array(rng, f.type, n, p if f.nullable else 0) for f in t]
        if not children:
            return pa.StructArray.from_arrays([], fields=[], mask=_mask(rng, n, p)) \
                if n == 0 else _empty_struct(rng, n, p)
        return pa.StructArray.from_arrays(children, fields=list(t), mask=_mask(rng, n, p))
    if pa.types.is_union(t):
        codes = list(t.type_codes)
        ids = [rng.randrange(len(codes)) for _ in range(n)]
        type_ids = pa.array([codes[i] for i in ids], pa.int8())
        names = [f.name for f in t]
        if t.mode == "sparse":
            children = [random_array(rng, f.type, n, p) for f in t]
            return pa.UnionArray.from_sparse(type_ids, children, field_names=names,
                                             type_codes=codes)
        counts = [ids.count(k) for k in range(len(codes))]
        seen = [0] * len(codes)
        offsets = []
        for i in ids:
            offsets.append(seen[i])
            seen[i] += 1
        children = [random_array(rng, f.type, c + rng.randint(0, 2), p)
                    for f, c in zip(t, counts)]
        return pa.UnionArray.from_dense(type_ids, pa.array(offsets, pa.int32()), children,
                                        field_names=names, type_codes=codes)
    if pa.types.is_dictionary(t):
        m = rng.randint(1, 6)
        values = random_array(rng, t.value_type, m, 0.1)
        idx = pa.array(_nullable(rng, [rng.randrange(m) for _ in range(n)], p), t.index_type)
        return pa.DictionaryArray.from_arrays(idx, values, ordered=t.ordered)
    if isinstance(t, pa.RunEndEncodedType):
        ends = _run_ends(rng, n)
        values = random_array(rng, t.value_type, len(ends), p)
        return pa.RunEndEncodedArray.from_arrays(pa.array(ends, t.run_end_type), values, type=t)
    raise AssertionError(f"no generator for {t}")


def _np_mask(rng, n, p):
    return np.array([rng.random() < p for _ in range(n)], dtype=bool)


def _empty_struct(rng, n, p):
    """A struct<> array of length n (no children to take the length from)."""
    mask = _mask(rng, n, p)
    validity = None if mask is None else pc.invert(mask).buffers()[1]
    return pa.StructArray.from_buffers(pa.struct([]), n, [validity], children=[])


def random_table(seed, n=200):
    """A table of every type (all_types) plus month_interval and
    day_time_interval columns, with schema and field metadata."""
    rng = random.Random(seed)
    types = all_types(rng)
    cols, fields = [], []
    for i, t in enumerate(types):
        name = f"c{i}_{str(t).split('<')[0].split('[')[0].split('(')[0]}"
        cols.append(random_array(rng, t, n, top=True))
        fields.append(pa.field(name, t, nullable=True,
                               metadata={"col": str(i), **(_meta(rng, 0.5) or {})}))
    retype = {}
    for fmt, t in _RETYPE.items():
        retype[len(cols)] = fmt
        cols.append(pa.array(_nullable(rng, [rng.randint(-2**(t.bit_width - 1),
                                                         2**(t.bit_width - 1) - 1)
                                             for _ in range(n)], 0.2), t))
        fields.append(pa.field(f"interval_{fmt}", t, metadata=_meta(rng, 1)))
    # non-nullable where the data has no nulls (sometimes)
    fields = [f.with_nullable(False) if c.null_count == 0 and rng.random() < 0.3 else f
              for f, c in zip(fields, cols)]
    schema = pa.schema(fields, metadata={"seed": str(seed), "origin": "qvrandom",
                                         "huggingface": '{"info": {}}'})
    # Only the interval columns go through the C Data Interface (pyarrow's
    # importer sizes the buffers of empty sliced children as 0 bytes, which
    # its IPC writer then turns into negative buffer lengths).
    first = min(retype)
    tail = pa.RecordBatch.from_arrays(cols[first:], schema=pa.schema(fields[first:]))
    tail = pa.Table.from_batches([retype_columns(tail, {i - first: f
                                                        for i, f in retype.items()})])
    schema = pa.schema(list(schema)[:first] + list(tail.schema), metadata=schema.metadata)
    return pa.Table.from_arrays(cols[:first] + tail.columns, schema=schema)


def random_batches(table, rng):
    """Cut table into batches of 0..50 rows (empty ones too), each a zero-copy
    slice of one batch (non-zero offsets everywhere)."""
    whole = table.combine_chunks().to_batches()
    if not whole:
        return []
    assert len(whole) == 1
    batches, pos = [], 0
    while pos < table.num_rows:
        size = min(table.num_rows - pos, rng.choice([0, 1, 2, 3, 7, 16, 50]))
        batches.append(whole[0].slice(pos, size))
        pos += size
    return batches
