#!/bin/sh
# scripts/fuzz.sh [SECONDS] — build the libFuzzer targets (clang), replay
# every Arrow fuzz regression file (and the committed recipe seeds) through
# them, then fuzz each target for a bounded time: the IPC readers seeded
# from the golden integration files, the recipe decoder from
# fuzz/corpus/recipe (working corpora kept under build-fuzz/, never
# committed). Exit non-zero on any crash.
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
replay fuzz_recipe "$top"/fuzz/corpus/recipe/*
for t in fuzz_ipc_stream fuzz_ipc_file fuzz_recipe; do
  corpus=$top/build-fuzz/corpus-$t
  mkdir -p "$corpus"
  case $t in
    fuzz_recipe) cp -f "$top"/fuzz/corpus/recipe/* "$corpus/" ;;
    *)
      case $t in fuzz_ipc_stream) ext=stream ;; *) ext=arrow_file ;; esac
      for f in "$data"/arrow-ipc-stream/integration/*/*."$ext"; do
        producer=$(basename "$(dirname "$f")")
        cp -f "$f" "$corpus/$producer-$(basename "$f")"
      done ;;
  esac
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
