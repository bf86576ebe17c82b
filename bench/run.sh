#!/bin/sh
# bench/run.sh BUILD — run the benchmarks, each against its anchor in the
# same run, and print ratios. Data is generated under BUILD/bench-data
# (QV_BENCH_GB, default 5; QV_BENCH_BATCHES, default 10000).
# QV_BENCH_ONLY=read|write|row runs one of them; the write benchmark's size
# is QV_BENCH_WRITE_GB (default QV_BENCH_GB), repetitions QV_BENCH_REPS
# (default 1; the best counts).
set -eu
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
py=${QV_VENV:-$top/build/venv}/bin/python
gb=${QV_BENCH_GB:-5}
batches=${QV_BENCH_BATCHES:-10000}
only=${QV_BENCH_ONLY:-}
data=$top/$build/bench-data
mkdir -p "$data"

if [ -z "$only" ] || [ "$only" = read ]; then
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
fi

if [ -z "$only" ] || [ "$only" = write ]; then
wgb=${QV_BENCH_WRITE_GB:-$gb}
wdir=$data/write
rm -rf "$wdir"
mkdir -p "$wdir"
echo "== write ${wgb} GB from memory to an IPC stream (issue 3): none and zstd"
q=$("$top/$build/bench/bench_write" "$wdir" "$wgb" --reps "${QV_BENCH_REPS:-1}")
p=$("$py" "$top/bench/bench_write.py" "$wdir" "$q" "$top/$build/libquiver.so")
rm -rf "$wdir"
echo "$q"
echo "$p"
"$py" - "$q" "$p" <<'PY'
import json, sys
q, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert p["verified"]
print(f"data: {q['rows']:,} rows in {q['batches']} batches, {q['data_bytes']/1e9:.2f} GB "
      f"(int64, float64, string); quiver built it in {q['build_s']:.1f} s (builder)")
for codec in ("none", "zstd"):
    label = codec if codec == "none" else f"zstd (level {q['zstd_level']})"
    print(f"{label:>16}: quiver {q[codec]['gbps']:.2f} GB/s ({q[codec]['seconds']:.2f} s, "
          f"cpu {q[codec]['cpu_s']:.2f} s) vs pyarrow {p[codec]['gbps']:.2f} GB/s "
          f"({p[codec]['seconds']:.2f} s, cpu {p[codec]['cpu_s']:.2f} s) "
          f"-> ratio {q[codec]['gbps']/p[codec]['gbps']:.2f} (goal >= 1.0)")
print("same process, same heap batches, alternating runs (quiver via the C stream):")
for codec in ("none", "zstd"):
    i = p["interleaved"][codec]
    print(f"{codec:>16}: quiver {i['gbps']:.2f} GB/s ({i['seconds']:.2f} s, cpu {i['cpu_s']:.2f} s) "
          f"vs pyarrow {p[codec]['gbps']:.2f} GB/s -> ratio {i['gbps']/p[codec]['gbps']:.2f}")
PY
fi

if [ -z "$only" ] || [ "$only" = row ]; then
if [ -x "$top/$build/bench/bench_row" ]; then
  echo "== row table (issue 5)"
  "$top/$build/bench/bench_row"
fi
fi
