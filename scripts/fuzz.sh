#!/bin/sh
# scripts/fuzz.sh [SECONDS] — build the libFuzzer targets (clang), replay
# every Arrow fuzz regression file through them, then fuzz each target for a
# bounded time seeded from the golden integration files (corpus kept under
# build-fuzz/, never committed). Exit non-zero on any crash.
set -eu
secs=${1:-60}
top=$(cd "$(dirname "$0")/.." && pwd)
shared=${QV_SHARED:-$top/../shared}
data=$shared/testdata/arrow-testing/data
make -C "$top" fuzz >/dev/null
bin=$top/build-fuzz/fuzz
echo "fuzz: replaying regression files"
"$bin/fuzz_ipc_stream" -runs=1 "$data"/arrow-ipc-stream/*fuzz* "$data"/arrow-ipc-stream/crash-* 2>&1 | tail -n 2
"$bin/fuzz_ipc_file" -runs=1 "$data"/arrow-ipc-file/* 2>&1 | tail -n 2
for t in fuzz_ipc_stream fuzz_ipc_file; do
  corpus=$top/build-fuzz/corpus-$t
  mkdir -p "$corpus"
  case $t in
    fuzz_ipc_stream) cp "$data"/arrow-ipc-stream/integration/*/*.stream "$corpus"/ ;;
    fuzz_ipc_file) cp "$data"/arrow-ipc-stream/integration/*/*.arrow_file "$corpus"/ ;;
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
