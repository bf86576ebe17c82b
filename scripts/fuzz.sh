#!/bin/sh
# scripts/fuzz.sh [SECONDS] — build the libFuzzer targets (clang), replay
# every Arrow fuzz regression file through them, then fuzz each target for a
# bounded time seeded from the golden integration files (and, for the
# Hugging Face JSON parsers, a few datasets-written documents; corpus kept
# under build-fuzz/, never committed). Exit non-zero on any crash.
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
  echo "fuzz: $t replayed $(grep -c '^Executed ' "$log") regression files without a crash"
}
replay fuzz_ipc_stream "$data"/arrow-ipc-stream/*fuzz* "$data"/arrow-ipc-stream/crash-*
replay fuzz_ipc_file "$data"/arrow-ipc-file/*
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
  echo "fuzz: $t for ${secs}s"
  log=$top/build-fuzz/$t.log
  if ! "$bin/$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t found a failure (log: $log)"
    exit 1
  fi
  grep -E "stat::number_of_executed_units" "$log" || true
done
