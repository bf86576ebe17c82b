#!/bin/sh
# scripts/fuzz.sh [SECONDS] — build the libFuzzer targets (clang), replay
# every Arrow fuzz regression file through the IPC targets, then fuzz each
# target for a bounded time: the IPC targets seeded from the golden
# integration files, the expression target from a few expressions written
# here. Corpora are kept under build-fuzz/, never committed. Exit non-zero
# on any crash.
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
for t in fuzz_ipc_stream fuzz_ipc_file; do
  corpus=$top/build-fuzz/corpus-$t
  mkdir -p "$corpus"
  case $t in fuzz_ipc_stream) ext=stream ;; *) ext=arrow_file ;; esac
  for f in "$data"/arrow-ipc-stream/integration/*/*."$ext"; do
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
