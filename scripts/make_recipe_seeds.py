"""make_recipe_seeds.py LIB OUT_DIR — write the seed corpus of the recipe
fuzzer (fuzz/fuzz_recipe.c) with quiver itself (tests/python/qvtable.py over
libquiver.so): recipes of in-memory tables of many types, an empty and a
0-column table, vertical and horizontal concatenations, and in-memory
tables followed by every kind of replay step (grafted from the recipe of a
mapped table, whose file the fuzzer will not find: replays on in-memory
nodes are what lets the fuzzer reach the replay code). Deterministic.
scripts/fuzz.sh runs it into build-fuzz/ before fuzzing (nothing is
committed)."""
import os
import random
import sys
import tempfile

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
import qvtable  # noqa: E402

lib_path, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
lib = qvtable.Lib(lib_path)
rng = random.Random(1)


def uvar(data, pos):
    """Decode a LEB128 varint at pos: (value, next pos)."""
    value, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def replays_of_file_recipe(rec):
    """The replay section (count + steps) of a recipe "QVR1" 'F' ..."""
    assert rec[:5] == b"QVR1F"
    n, pos = uvar(rec, 5)
    pos += n                    # path
    for _ in range(4):          # size, mtime, dev, ino
        _, pos = uvar(rec, pos)
    return rec[pos:]


def save(name, data):
    with open(os.path.join(out, name + ".qvr"), "wb") as f:
        f.write(data)


table = pa.table({
    "id": pa.array(range(12), pa.int64()),
    "text": pa.array([None if i % 5 == 0 else f"row {i} é" for i in range(12)]),
    "n": pa.array([i % 3 for i in range(12)], pa.int32()),
    "tags": pa.array([[f"t{j}" for j in range(i % 3)] for i in range(12)], pa.list_(pa.string())),
    "cat": pa.array(["a", "b", None, "a"] * 3).dictionary_encode(),
    "s": pa.StructArray.from_arrays([pa.array(range(12), pa.int8()), pa.array([0.5] * 12)],
                                    names=["x", "y"]),
}, metadata={"huggingface": '{"info": {"features": {}}}'})
batches = [table.slice(o, 4) for o in range(0, 12, 4)]
mem = lib.table_from_pyarrow(pa.concat_tables(batches))
save("memory", mem.recipe())
save("empty", lib.table_from_pyarrow(table.slice(0, 0)).recipe())
save("no-columns", lib.table_from_pyarrow(pa.table({"x": [1, 2, 3]}).drop_columns(["x"])).recipe())
save("vertical", qvtable.concat(lib, [mem, mem.slice(2, 5)], 0).recipe())
other = lib.table_from_pyarrow(pa.table({"z": pa.array([1.5] * 12)}))
save("horizontal", qvtable.concat(lib, [mem, other], 1).recipe())

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "seed.arrow")
    with pa.OSFile(path, "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
        for b in batches:
            w.write_table(b)
    mapped = lib.open(path)
    save("mapped-missing", mapped.slice(1, 9).recipe())  # the file will be gone
    names = ["a", "b", "c", "d", "e", "f"]
    mask = pa.array([i % 3 != 1 for i in range(11)])
    col = pa.chunked_array([pa.array(range(5), pa.int16()), pa.array(range(6), pa.int16())])
    target = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.large_string()),
                        pa.field("c", pa.int64()), pa.field("d", pa.large_list(pa.string())),
                        pa.field("e", pa.string()),
                        pa.field("f", pa.struct([("x", pa.int16()), ("y", pa.float64())]))],
                       metadata={"k": "v"})
    chain = (mapped.slice(1, 11).take([0, 3, 3, 10, 2, 1, 5, 6, 7, 8, 9]).filter(pa.array([True] * 11))
             .rename(names).cast(target).filter(mask)
             .add_column(2, pa.field("new", pa.int16()), pa.chunked_array([pa.array(range(7), pa.int16())]))
             .set_column(0, pa.field("id2", pa.int16()), pa.chunked_array([pa.array(range(7), pa.int16())]))
             .select([6, 0, 1, 2, 2]).combine_batches())
    steps = replays_of_file_recipe(chain.recipe())
    mem_rec = mem.recipe()
    assert mem_rec[-1] == 0  # no replays on the in-memory node
    grafted = mem_rec[:-1] + steps
    lib.from_recipe(grafted)  # sanity: the grafted recipe decodes
    save("memory-replays", grafted)
    del col
print(f"wrote {len(os.listdir(out))} seeds to {out}")
