"""Dictionary state under random access: pyarrow writes streams whose
dictionaries change between batches (replacements, and deltas with
emit_dictionary_deltas=True); `quiver get` asked for rows in reverse and
shuffled order must print the values pyarrow reads for those rows, which
needs the dictionaries in force at each batch to be rebuilt correctly."""
import json
import random
import subprocess

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from qvpaths import CLI, require


def _write(path, batches, deltas):
    opts = ipc.IpcWriteOptions(emit_dictionary_deltas=deltas)
    with ipc.new_stream(str(path), batches[0].schema, options=opts) as w:
        for b in batches:
            w.write_batch(b)


def _batches(kind, n_batches=12, rows=7, seed=3):
    rng = random.Random(seed)
    out = []
    words = [f"w{i}" for i in range(200)]
    for b in range(n_batches):
        if kind == "delta":  # each dictionary extends the previous one
            dictionary = pa.array(words[: 5 + 3 * b])
        else:  # replacement: an unrelated dictionary each time
            dictionary = pa.array(rng.sample(words, 6))
        idx = pa.array([rng.randrange(len(dictionary)) if rng.random() > 0.2 else None
                        for _ in range(rows)], pa.int16())
        col = pa.DictionaryArray.from_arrays(idx, dictionary)
        out.append(pa.record_batch([col, pa.array(range(b * rows, (b + 1) * rows))],
                                   names=["d", "i"]))
    return out


@pytest.mark.parametrize("kind", ["delta", "replacement"])
def test_random_access_dictionaries(kind, tmp_path):
    path = tmp_path / f"{kind}.arrow"
    _write(path, _batches(kind), deltas=(kind == "delta"))
    expected = ipc.open_stream(str(path)).read_all().to_pylist()
    rows = list(range(len(expected)))[::-1]
    random.Random(5).shuffle(rows[: len(rows) // 2])
    r = subprocess.run([require(CLI), "get", str(path)] + [str(x) for x in rows],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in r.stdout.splitlines()]
    assert got == [expected[x] for x in rows]
