#!/bin/sh
# bench/run.sh BUILD — run the benchmarks, each against its anchor in the
# same run, and print ratios. Data is generated under BUILD/bench-data
# (QV_BENCH_GB, default 5; QV_BENCH_BATCHES, default 10000).
set -eu
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
py=${QV_VENV:-$top/build/venv}/bin/python
gb=${QV_BENCH_GB:-5}
batches=${QV_BENCH_BATCHES:-10000}
data=$top/$build/bench-data
mkdir -p "$data"
f=$data/read-${gb}g-${batches}.arrow
[ -f "$f" ] || "$py" "$top/bench/gen_data.py" "$f" "$gb" "$batches"
sync
echo "== open + 10,000 random rows (issue 2): $f"
q=$("$top/$build/bench/bench_read" "$f" 10000 7)
p=$("$py" "$top/bench/bench_read.py" "$f" 10000 7)
echo "$q"
echo "$p"
"$py" - "$q" "$p" <<'PY'
import json, sys
q, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert q["checksum"] == p["checksum"], "quiver and pyarrow read different rows"
print(f"open:  quiver {q['open_s']*1e3:.1f} ms vs pyarrow {p['open_s']*1e3:.1f} ms "
      f"-> ratio {q['open_s']/p['open_s']:.3f} (goal <= 0.5)")
print(f"rows:  quiver {q['rows_s']*1e3:.1f} ms vs pyarrow ({p['method']}) {p['rows_s']*1e3:.1f} ms "
      f"-> speedup {p['rows_s']/q['rows_s']:.1f}x")
print(f"anon RSS growth: quiver {q['peak_anon_mb']:.1f} MB (goal <= 32) vs pyarrow {p['peak_anon_mb']:.1f} MB")
PY
if [ -x "$top/$build/bench/bench_row" ]; then
  echo "== row table (issue 5)"
  "$top/$build/bench/bench_row"
fi
