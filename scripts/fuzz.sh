#!/bin/sh
# scripts/fuzz.sh [SECONDS] — build the libFuzzer targets (clang), replay
# every Arrow fuzz regression file through them, then fuzz each target for a
# bounded time seeded from the golden integration files (and, for the
# Hugging Face JSON parsers, a few datasets-written documents; for the
# expression language, a few expressions and a token dictionary; for table
# recipes, seeds written by scripts/make_recipe_seeds.py with the regular
# build's libquiver.so, which are also replayed first; for stream index
# cache files, the entries the regular build's CLI writes; corpora kept under
# build-fuzz/, never committed). Exit non-zero on any crash.
set -eu
secs=${1:-60}
top=$(cd "$(dirname "$0")/.." && pwd)
shared=${QV_SHARED:-$top/../shared}
data=$shared/testdata/arrow-testing/data
make -C "$top" fuzz >/dev/null
bin=$top/build-fuzz/fuzz
replay() { # TARGET FILES...: run each file once; fail on any crash
  t=$1; shift
  log=$top/build-fuzz/$t.replay.log
  if ! "$bin/$t" -runs=1 "$@" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t crashed on a regression file (log: $log)"
    exit 1
  fi
  echo "fuzz: $t replayed $(grep -c "^Executed " "$log") files without a crash"
}
run() { # TARGET CORPUS [FLAGS...]: fuzz for $secs seconds
  t=$1; corpus=$2; shift 2
  echo "fuzz: $t for ${secs}s"
  log=$top/build-fuzz/$t.log
  if ! "$bin/$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 "$@" "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t found a failure (log: $log)"
    exit 1
  fi
  grep -E "stat::number_of_executed_units" "$log" || true
}
replay fuzz_ipc_stream "$data"/arrow-ipc-stream/*fuzz* "$data"/arrow-ipc-stream/crash-*
replay fuzz_ipc_file "$data"/arrow-ipc-file/*
# Recipe seeds are generated (needs `make` and the venv, as .ci/run has).
recipe_seeds=$top/build-fuzz/recipe-seeds
rm -rf "$recipe_seeds"
"${QV_VENV:-$top/build/venv}/bin/python" "$top/scripts/make_recipe_seeds.py" \
  "$top/build/libquiver.so" "$recipe_seeds"
replay fuzz_recipe "$recipe_seeds"/*
# Seeds for the Hugging Face JSON parsers: features, metadata, state.json,
# dataset_info.json, dataset_dict.json as datasets writes them.
hfseeds=$top/build-fuzz/corpus-fuzz_hf_json
mkdir -p "$hfseeds"
seed() { printf '%s' "$2" >"$hfseeds/seed-$1.json"; }
seed features '{"a": {"dtype": "int8", "_type": "Value"}, "l": {"names": ["x", "y"], "_type": "ClassLabel"}, "s": {"feature": {"x": {"dtype": "timestamp[ms, tz=UTC]", "_type": "Value"}}, "length": 2, "_type": "Sequence"}, "m": {"shape": [null, 2], "dtype": "float32", "_type": "Array2D"}, "i": {"_type": "Image"}, "t": {"languages": ["fr", "en"], "_type": "Translation"}, "v": {"languages": ["b", "a"], "_type": "TranslationVariableLanguages"}, "n": [{"w": {"feature": {"dtype": "decimal128(10, 2)", "_type": "Value"}, "_type": "LargeList"}}], "au": {"sampling_rate": 16000, "_type": "Audio"}}'
seed metadata '{"info": {"features": {"x": {"dtype": "int64", "_type": "Value"}}}, "fingerprint": "b095d079253eedf3"}'
seed state '{"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_fingerprint": "f0ed07064a142514", "_format_columns": ["x"], "_format_kwargs": {"dtype": "float32"}, "_format_type": "numpy", "_output_all_columns": false, "_split": "train"}'
seed info '{"description": "", "citation": "", "homepage": "", "license": "", "features": {"x": {"dtype": "int64", "_type": "Value"}}, "builder_name": "json", "splits": {"train": {"name": "train", "num_examples": 10}}}'
seed dict '{"splits": ["train", "test"]}'
for t in fuzz_ipc_stream fuzz_ipc_file fuzz_hf_json; do
  corpus=$top/build-fuzz/corpus-$t
  mkdir -p "$corpus"
  case $t in fuzz_ipc_stream) ext=stream ;; fuzz_ipc_file) ext=arrow_file ;; *) ext= ;; esac
  for f in "$data"/arrow-ipc-stream/integration/*/*."${ext:-none}"; do
    [ -e "$f" ] || continue
    producer=$(basename "$(dirname "$f")")
    cp -f "$f" "$corpus/$producer-$(basename "$f")"
  done
  run "$t" "$corpus"
done

# Expressions: nothing to replay; seeds and a token dictionary written here.
t=fuzz_expr
corpus=$top/build-fuzz/corpus-$t
mkdir -p "$corpus"
i=0
while IFS= read -r line; do
  i=$((i + 1))
  printf '%s' "$line" >"$corpus/seed-$i"
done <<'SEEDS'
i8 == 1 and len(s) > 2
not (i64 + 1 > 0 or f64 < -0.5) && !b
i32 % 7 in (1, 2, null) or u64 not in (18446744073709551615)
starts_with(d, 're') or ends_with(sv, "bytes") or contains(bin, '\x80')
st.y is null or st.x * 2 >= abs(i8) or `st`.x / 3 < 1.5e0
len(l) + len(d) - -9223372036854775808 != f16
ts is not null and n is null and s <> 'h\u00e9llo'
(((i64 - i32) * i8) % (u64 + 0)) == 0
SEEDS
dict=$top/build-fuzz/expr.dict
: >"$dict"
for tok in and or not is null in true false len starts_with ends_with contains abs \
    '==' '!=' '<=' '>=' '<>' '&&' '||' '(' ')' ',' '.' '`' "'" '"' '\\x' '\\u' \
    i8 i32 i64 u64 f64 f16 b s bin sv d l st st.x st.y n ts; do
  printf '"%s"\n' "$(printf '%s' "$tok" | sed 's/\\/\\\\/g; s/"/\\"/g')" >>"$dict"
done
run fuzz_expr "$corpus" -dict="$dict" -max_len=512

# Table recipes: seeded from the generated seeds (scripts/make_recipe_seeds.py).
t=fuzz_recipe
corpus=$top/build-fuzz/corpus-$t
mkdir -p "$corpus"
cp -f "$recipe_seeds"/* "$corpus/"
run fuzz_recipe "$corpus"

# Whole datasets directories (fuzz_hf_dir.c): byte 0 picks the layout, then
# one or two JSON texts split at a NUL byte. Seeds: valid directories of
# each layout (the data files are written by the target itself).
t=fuzz_hf_dir
corpus=$top/build-fuzz/corpus-$t
mkdir -p "$corpus"
st='{"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_fingerprint": "f0ed07064a142514", "_format_columns": null, "_format_kwargs": {}, "_format_type": null, "_output_all_columns": false, "_split": "train"}'
info='{"features": {"x": {"dtype": "int64", "_type": "Value"}}, "dataset_name": "json", "splits": {"train": {"name": "train", "num_examples": 3}, "test": {"name": "test", "num_examples": 3, "shard_lengths": [2, 1]}}}'
{ printf '\000%s\000%s' "$st" '{"features": {"x": {"dtype": "int64", "_type": "Value"}}}'; } >"$corpus/seed-dataset"
{ printf '\001%s' "$info"; } >"$corpus/seed-cache"
{ printf '\002%s\000%s' '{"splits": ["train", "test"]}' "$st"; } >"$corpus/seed-dict"
run fuzz_hf_dir "$corpus" -max_len=4096

# Stream index cache files (fuzz_index_cache.c): seeds are the cache entries
# the regular build's CLI writes for a few generated streams of many batches.
t=fuzz_index_cache
corpus=$top/build-fuzz/corpus-$t
xdg=$top/build-fuzz/index-cache-xdg
rm -rf "$xdg"
mkdir -p "$corpus" "$xdg"
"${QV_VENV:-$top/build/venv}/bin/python" - "$top/build-fuzz" <<'PY'
import sys, pyarrow as pa
out = sys.argv[1]
for name, comp, delta in (("plain", None, False), ("zstd", "zstd", False), ("dict", None, True)):
    opts = pa.ipc.IpcWriteOptions(compression=comp, emit_dictionary_deltas=delta)
    words = pa.array([f"w{i}" for i in range(40)])
    batches = [pa.record_batch({"x": pa.array(range(i, i + 3)),
                                "d": pa.DictionaryArray.from_arrays(pa.array([0, i % (i // 8 + 1), 0], pa.int32()), words[: i // 8 + 1])})
               for i in range(40)]
    with pa.ipc.new_stream(f"{out}/index-seed-{name}.arrows", batches[0].schema, options=opts) as w:
        for b in batches:
            w.write_batch(b)
PY
for f in "$top"/build-fuzz/index-seed-*.arrows; do
  XDG_CACHE_HOME=$xdg "$top/build/quiver" info "$f" >/dev/null
done
cp -f "$xdg"/quiver/index-*.qvi "$corpus/"
run fuzz_index_cache "$corpus" -max_len=65536

# The readers of src/formats run 30 s each (at most): Parquet is one target
# of several here and the whole CI run has a budget.
all_secs=$secs
[ "$secs" -gt 30 ] && secs=30
# CSV and JSON Lines readers (fuzz_csv.c, fuzz_jsonl.c): byte 0 picks the
# options, the rest is text; seeds written here (quoting, CRLF, BOM, every
# inferred type, nesting).
t=fuzz_csv
corpus=$top/build-fuzz/corpus-$t
mkdir -p "$corpus"
printf '\000a,b,c\n1,2.5,x\n"q,""r",,true\n' >"$corpus/seed-basic"
printf '\100\357\273\277d,t,s\r\n2020-01-01,10:00:00,"multi\r\nline"\r\n1999-12-31,23:59,2020-01-01T10:00:00Z\r\n' >"$corpus/seed-crlf"
printf '\041x;y\nNA;0x1F\n+1;None\n' >"$corpus/seed-semicolon"
printf '\010a,b\n\\"x\\,y,2\n' >"$corpus/seed-escape"
run fuzz_csv "$corpus" -max_len=4096
t=fuzz_jsonl
corpus=$top/build-fuzz/corpus-$t
mkdir -p "$corpus"
printf '\000{"a":1,"b":"x","c":[1,2],"d":{"e":null}}\n{"a":2.5,"f":"2020-01-01T10:00:00"}\n' >"$corpus/seed-basic"
printf '\001{"s":"\\u00e9\\ud83d\\ude00\\n"}\n\n{"l":[[1],[],null],"o":{"p":[{"q":true}]}}\n' >"$corpus/seed-nested"
printf '\002{"a": NaN, "b": -Infinity, "c": 12345678901234567890}\n' >"$corpus/seed-numbers"
run fuzz_jsonl "$corpus" -max_len=4096
# Parquet (fuzz_parquet.c: a whole file from memory; fuzz_thrift.c: the
# footer and page-header decoders, byte 0 choosing which; fuzz_parquet_page.c
# below: each page decoder on its own). Seeds are the
# parquet-testing files, copied (and their footers cut out) at fuzz time.
pt=$shared/testdata/parquet-testing
t=fuzz_parquet
corpus=$top/build-fuzz/corpus-$t
mkdir -p "$corpus"
for f in "$pt"/data/*.parquet "$pt"/bad_data/*.parquet; do
  [ -e "$f" ] || continue
  [ "$(wc -c <"$f")" -le 65536 ] && cp -f "$f" "$corpus/$(basename "$f")"
done
replay fuzz_parquet "$corpus"/*
run fuzz_parquet "$corpus" -max_len=65536
t=fuzz_thrift
corpus=$top/build-fuzz/corpus-$t
mkdir -p "$corpus"
"${QV_VENV:-$top/build/venv}/bin/python" - "$pt/data" "$corpus" <<'PY'
import glob, os, struct, sys
src, out = sys.argv[1], sys.argv[2]
for p in sorted(glob.glob(os.path.join(src, "*.parquet"))):
    b = open(p, "rb").read()
    if len(b) < 12 or b[-4:] != b"PAR1":
        continue
    n = struct.unpack("<I", b[-8:-4])[0]
    if n > len(b) - 12 or n > 65536:
        continue
    name = os.path.basename(p)
    open(os.path.join(out, name + ".footer"), "wb").write(b"\0" + b[-8 - n:-8])
    open(os.path.join(out, name + ".page"), "wb").write(b"\1" + b[4:4 + 256])
PY
replay fuzz_thrift "$corpus"/*
run fuzz_thrift "$corpus" -max_len=65536
# Page decoders one encoding at a time (fuzz_parquet_page.c: a 10-byte
# header choosing encoding, physical type, levels and page version, then
# an optional PLAIN dictionary page and the page). Seeds: one valid page
# per encoding, written here.
t=fuzz_parquet_page
corpus=$top/build-fuzz/corpus-$t
mkdir -p "$corpus"
"${QV_VENV:-$top/build/venv}/bin/python" - "$corpus" <<'PY'
import os, struct, sys
out = sys.argv[1]
def seed(name, b0, b1, n, page, dict_=b"", dict_count=0, rep_len=0, def_len=0):
    head = bytes([b0, b1]) + struct.pack("<HHH", n, len(dict_), dict_count) + bytes([rep_len, def_len])
    open(os.path.join(out, "seed-" + name), "wb").write(head + dict_ + page)
i32 = lambda *v: struct.pack("<%di" % len(v), *v)
ba = lambda *v: b"".join(struct.pack("<I", len(x)) + x for x in v)
dbp = lambda count, first: bytes([0x80, 1, 4, count, first * 2, 0, 0, 0, 0, 0])  # zero deltas
seed("plain-int32", 0 | 1 << 3, 0, 4, i32(1, -2, 3, 4))
seed("plain-bytes-def1", 0 | 6 << 3 | 1 << 6, 0, 4, struct.pack("<I", 2) + b"\x08\x01" + ba(b"a", b"", b"bc", b"d"))
seed("plain-flba16", 0 | 7 << 3, 0, 2, bytes(range(32)))
seed("plain-int96", 0 | 3 << 3, 0, 2, bytes(range(24)))
seed("rle-bool", 1, 0, 8, struct.pack("<I", 2) + b"\x10\x01")
seed("plain-dict-int64", 2 | 2 << 3, 0, 4, b"\x01\x03\x05", struct.pack("<qq", 7, -7), 2)
seed("rle-dict-bytes-def2", 3 | 6 << 3 | 2 << 6, 0, 4, struct.pack("<I", 2) + b"\x08\x02" + b"\x01\x03\x0a", ba(b"x", b"yz"), 2)
seed("delta-int32", 4 | 1 << 3, 0, 4, dbp(4, 2))
seed("delta-int64", 4 | 2 << 3, 0, 4, dbp(4, 3))
seed("delta-length", 5 | 6 << 3, 0, 3, dbp(3, 2) + b"aabbcc")
seed("delta-bytes", 6 | 6 << 3, 0, 3, dbp(3, 0) + dbp(3, 2) + b"aabbcc")
seed("bss-float", 7 | 4 << 3, 0, 2, bytes(range(8)))
seed("bss-double-v2", 7 | 5 << 3 | 1 << 6, 4, 2, b"\x04\x01" + bytes(range(16)), def_len=2)
# v1 BIT_PACKED levels: max_rep 1 (0,1,0,1 -> 0x50), max_def 2 (2,2,2,2 -> 0xaa)
seed("bit-packed-levels", 0 | 1 << 3 | 2 << 6, 1 | 1 << 3 | 1 << 4, 4, b"\x50\xaa" + i32(1, 2, 3, 4))
seed("list-v2-rle", 0 | 1 << 3 | 1 << 6, 1 | 1 << 2, 4, b"\x08\x00" + b"\x08\x01" + i32(1, 2, 3, 4), rep_len=2, def_len=2)
PY
run fuzz_parquet_page "$corpus" -max_len=4096
secs=$all_secs
