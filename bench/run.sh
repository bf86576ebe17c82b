#!/bin/sh
# bench/run.sh BUILD — run the benchmarks, each against its anchor in the
# same run, and print ratios. Data is generated under BUILD/bench-data
# (read: QV_BENCH_GB, default 5; QV_BENCH_BATCHES, default 10000; table:
# QV_TABLE_BATCHES x QV_TABLE_ROWS rows, default 10000 x 10000 = 100M).
# write: QV_BENCH_WRITE_GB (default QV_BENCH_GB) written from memory, best
# of QV_BENCH_REPS runs (default 1).
# sort: QV_SORT_ROWS rows, default 10M, and QV_SORT_ALT_ROWS rows for the
# multi-key strategy comparison, default 2M, 0 to skip.
# dataset: datasets' own benchmarks (getitem, indices mapping on 500k rows,
# iterating 50k rows before/after shuffle, map/filter) vs the C API.
# python: the extension (import quiver) vs datasets on QV_PYEXT_ROWS rows
# (default 500k): random ds[i], a batched Python map, to a pyarrow Table.
# stream: opening streams of QV_STREAM_BATCHES batches (default "200 40000";
# add 50000 for the issue's 5.6 GB case) of QV_STREAM_BATCH_KB KiB each
# (default 112): head -n 1, first open, reopen (index cache), RSS, against
# pyarrow's first batch and read_all; QV_STREAM_REPS (default 5).
# wide: `quiver info` / `head` on 100k and 1M columns with features
# metadata vs pyarrow's open (linear in columns), and `head -n 1` of an
# 8 x 256 MiB zstd "bomb" (time, peak RSS) vs pyarrow (bench_wide.py).
# QV_BENCH_SECTIONS picks sections (default "read row table write sort dataset python stream wide").
set -eu
sections=${QV_BENCH_SECTIONS:-read row table write sort dataset python stream wide}
has() { case " $sections " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
py=${QV_VENV:-$top/build/venv}/bin/python
gb=${QV_BENCH_GB:-5}
batches=${QV_BENCH_BATCHES:-10000}
data=$top/$build/bench-data
mkdir -p "$data"
if has read; then
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
if has row && [ -x "$top/$build/bench/bench_row" ]; then
  echo "== row table (issue 5)"
  "$top/$build/bench/bench_row"
fi
if has table; then
  tb=${QV_TABLE_BATCHES:-10000}
  tr=${QV_TABLE_ROWS:-10000}
  tf=$data/table-${tb}x${tr}.arrow
  [ -f "$tf" ] || "$py" "$top/bench/gen_data.py" "$tf" 0 "$tb" "$tr"
  sync
  # Both sides run on a warm page cache (whoever ran first would otherwise
  # pay for reading the file from disk).
  cat "$tf" >/dev/null
  echo "== table: gather 1M rows, 1,000 fast_slice, recipe of 100 replays (issue 4): $tf"
  q=$("$top/$build/bench/bench_table" "$tf" 1000000 11 1000)
  p=$("$py" "$top/bench/bench_table.py" "$tf" 1000000 11 5000 1000)
  echo "$q"
  echo "$p"
  "$py" - "$q" "$p" <<'PY'
import json, sys
q, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert q["checksum"] == p["checksum"], "quiver and pyarrow gathered different rows"
ms = lambda s: f"{s * 1e3:.1f} ms"
print(f"table: {q['rows']:,} rows in {q['batches']:,} batches; open quiver {ms(q['open_s'])}, "
      f"pyarrow read_all {ms(p['open_s'])}")
print(f"gather {q['n']:,} rows: quiver {ms(q['gather_s'])} warm ({ms(q['gather_first_s'])} first call, "
      f"decoding the batches touched); anon RSS growth {q['peak_anon_mb']:.0f} MB")
if p["take_error"]:
    print(f"  pyarrow Table.take: FAILED after {ms(p['take_fail_s'])}: {p['take_error']}")
    print(f"  pyarrow fallback (Table.slice + concat, as bench_read.py): {ms(p['fallback_s_measured'])} "
          f"for {p['fallback_rows']:,} rows -> {p['fallback_s_extrapolated']:.1f} s extrapolated "
          f"-> quiver {p['fallback_s_extrapolated'] / q['gather_s']:.0f}x faster")
else:
    print(f"  pyarrow Table.take: {ms(p['take_s'])} -> quiver {p['take_s'] / q['gather_s']:.1f}x faster")
print(f"  numeric columns (id, x): pyarrow Table.take {ms(p['take_numeric_s'])} vs quiver "
      f"{ms(q['gather_numeric_s'])} -> {p['take_numeric_s'] / q['gather_numeric_s']:.1f}x (goal >= 10); "
      f"process CPU {ms(p['take_numeric_cpu_s'])} vs {ms(q['gather_numeric_process_cpu_s'])} -> "
      f"{p['take_numeric_cpu_s'] / q['gather_numeric_process_cpu_s']:.1f}x (best of 3 each)")
print(f"  datasets approach (searchsorted + 1-row slices + from_batches): {p['datasets_s']:.2f} s "
      f"-> quiver {p['datasets_s'] / q['gather_s']:.0f}x faster (goal >= 100)")
assert q["sliced_rows"] == p["datasets_sliced_rows"], "different slices"
print(f"fast_slice: {q['slices']:,} random slices: quiver {q['slice_total_s'] / q['slices'] * 1e6:.1f} us "
      f"each vs datasets fast_slice {p['datasets_slice_total_s'] / p['slices_n'] * 1e6:.1f} us -> "
      f"{p['datasets_slice_total_s'] / q['slice_total_s']:.1f}x")
print(f"recipe: mapped table with {q['replays']} replays: {q['recipe_bytes']} bytes (goal < 1024; "
      f"datasets pickle of path + replays: {p['datasets_pickle_bytes']} bytes); encode "
      f"{q['recipe_encode_s'] * 1e6:.0f} us, decode (reopen + replay) {ms(q['recipe_decode_s'])} "
      f"vs datasets reload (read_all + replays) {ms(p['datasets_reload_s'])}")
PY
fi

if has write; then
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
if has sort; then
  sr=${QV_SORT_ROWS:-10000000}
  sf=$data/sort-$sr.arrow
  [ -f "$sf" ] || "$py" "$top/bench/bench_sort.py" gen "$sf" "$sr"
  cat "$sf" >/dev/null
  echo "== sort indices: $sr rows by int64, string, (int32, string) (issue 6): $sf"
  q=$("$top/$build/bench/bench_sort" "$sf" "${QV_SORT_ALT_ROWS:-2000000}")
  p=$("$py" -W ignore "$top/bench/bench_sort.py" run "$sf")
  echo "$q"
  echo "$p"
  "$py" - "$q" "$p" <<'PY'
import json, sys
q, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ms = lambda s: f"{s * 1e3:.0f} ms"
print(f"{q['rows']:,} rows in {q['batches']:,} batches (quiver decodes them in {ms(q['decode_s'])} first)")
for case in ("int64", "string", "int32,string"):
    a, b = q[case], p[case]
    assert a["checksum"] == b["checksum"], f"{case}: quiver and pyarrow orders differ"
    print(f"sort by {case:<13} quiver {ms(a['cpu_s']):>7} CPU, {ms(a['s']):>7} wall "
          f"(repeat {ms(a['warm_cpu_s'])} CPU)   pyarrow sort_indices {ms(b['cpu_s']):>8} CPU, "
          f"{ms(b['s']):>8} wall   -> {b['cpu_s'] / a['cpu_s']:.1f}x CPU, {b['s'] / a['s']:.1f}x "
          f"wall (repeat {b['cpu_s'] / a['warm_cpu_s']:.1f}x CPU), same order")
m = q.get("multikey")
if m:
    assert m["same_order"], "multi-key strategies disagree"
    print(f"multi-key strategies on the first {m['rows']:,} rows of (int32, string), CPU: "
          f"quiver (radix by key, runs by next key) {ms(m['quiver_s'])}; row table + merge sort "
          f"{ms(m['row_table_s'])} (encode {ms(m['row_encode_s'])}); normalised columns + "
          f"merge sort {ms(m['columns_s'])} -> {m['row_table_s'] / m['quiver_s']:.1f}x and "
          f"{m['columns_s'] / m['quiver_s']:.1f}x slower, same order")
PY
fi

if has dataset; then
ddir=$data/dataset
mkdir -p "$ddir"
"$py" "$top/bench/bench_dataset.py" gen "$ddir"
cat "$ddir"/*.arrow >/dev/null
echo "== dataset layer vs Hugging Face datasets' own benchmarks (issue 6): $ddir"
export HF_HOME="$ddir/hf-home"
q=$("$top/$build/bench/bench_dataset" "$ddir")
p=$("$py" "$top/bench/bench_dataset.py" run "$ddir")
echo "$q"
echo "$p"
"$py" - "$q" "$p" <<'PY'
import json, sys
q, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for k, want in p["checks"].items():
    got = q["checks"].get(k)
    if got is None:
        continue
    assert len(got) == len(want) and all(abs(a - b) <= 1e-6 * max(1, abs(b)) for a, b in zip(got, want)), \
        f"{k}: quiver {got} vs datasets {want}"
def t(s):
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"
def line(label, qk, pk=None, goal=None):
    pk = pk or qk
    if qk not in q:
        print(f"{label:<34} quiver   (n/a)      datasets {t(p[pk]):>10}")
        return
    g = f"  (goal >= {goal}x)" if goal else ""
    print(f"{label:<34} quiver {t(q[qk]):>10}  datasets {t(p[pk]):>10}  -> {p[pk] / q[qk]:8.1f}x{g}")
print(f"getitem ({q['rows']:,} rows, mapped file; datasets formats to Python, quiver returns Arrow):")
line("  first row", "getitem_first")
line("  last row", "getitem_last")
line("  1,024 contiguous rows", "getitem_1024_contiguous")
line("  1,024 random rows", "getitem_1024_random")
print(f"indices mapping ({q['rows']:,} rows, cache files written as datasets does):")
line("  select every other row", "select")
line("  sort by numbers", "sort", goal=20)
line("  shuffle", "shuffle")
line("  train_test_split(0.1)", "train_test_split")
line("  shard 10 ways", "shard")
print("map / filter:")
line("  identity batched map", "map_identity_batched", goal=50)
line("  ... keep_in_memory", "map_identity_batched_in_memory", goal=50)
line("  filter (keep all)", "filter_all")
line("  filter numbers > 0.5", "filter_numbers")
print(f"iterating ({q['iter_rows']:,} rows of list<float32>[100] + float32; quiver sums every float):")
for pre in ("", "shuffled_"):
    tag = "after shuffle" if pre else "in order"
    line(f"  rows ({tag})", pre + "read_rows")
    for bs in (10, 100, 1000):
        line(f"  batches of {bs} ({tag})", f"{pre}iter_batch_{bs}", f"{pre}read_batch_{bs}")
print(f"  sort by numbers, process CPU: quiver {t(q['sort_cpu'])}, datasets {t(p['sort_cpu'])} "
      f"-> {p['sort_cpu'] / q['sort_cpu']:.1f}x (goal >= 20x)")
print("quiver: iteration after shuffle vs in order (goal <= 1.5x), wall; process CPU:")
for k in ("read_rows", "iter_batch_1", "iter_batch_10", "iter_batch_100", "iter_batch_1000"):
    c = ""
    if k + "_cpu" in q:
        c = (f";  CPU {t(q[k + '_cpu'])} -> {t(q['shuffled_' + k + '_cpu'])}  = "
             f"{q['shuffled_' + k + '_cpu'] / q[k + '_cpu']:.2f}x")
    print(f"  {k:<18} {t(q[k]):>10} -> {t(q['shuffled_' + k]):>10}  = {q['shuffled_' + k] / q[k]:.2f}x{c}")
print("datasets: after shuffle vs in order:")
for k in ("read_rows", "read_batch_10", "read_batch_100", "read_batch_1000"):
    print(f"  {k:<18} {t(p[k]):>10} -> {t(p['shuffled_' + k]):>10}  = {p['shuffled_' + k] / p[k]:.2f}x")
PY
fi
if has python; then
echo "== Python extension vs datasets (import quiver)"
PYTHONPATH="$top/$build/python" "$py" -W ignore "$top/bench/bench_pyext.py" "$data" "${QV_PYEXT_ROWS:-500000}"
fi
if has stream; then
  skb=${QV_STREAM_BATCH_KB:-112}
  for sb in ${QV_STREAM_BATCHES:-200 40000}; do
    sf=$data/stream-${sb}x${skb}k.arrows
    [ -f "$sf" ] || "$py" "$top/bench/bench_stream.py" gen "$sf" "$sb" "$skb"
    cat "$sf" >/dev/null
    echo "== stream open (issue 11 item 5): $sb batches of ${skb} KiB, $(du -h "$sf" | cut -f1): $sf"
    q=$("$top/$build/bench/bench_stream" "$sf" "${QV_STREAM_REPS:-5}")
    p=$("$py" "$top/bench/bench_stream.py" run "$sf" "${QV_STREAM_REPS:-5}" "$top/$build/quiver" \
        "$top/$build/python")
    echo "$q"
    echo "$p"
    "$py" - "$q" "$p" <<'PY'
import json, sys
q, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ms = lambda s: f"{s * 1e3:.2f} ms"
ra = p["pa_read_all_s"]
print(f"{q['batches']:,} batches, {p['rows']:,} rows; pyarrow: first batch {ms(p['pa_first_batch_s'])}, "
      f"read_all {ms(ra)} (RSS +{p['pa_read_all_rss_kb'] / 1024:.1f} MB)")
print(f"head -n 1: in-process {ms(q['head_s'])} (CPU {ms(q['head_cpu_s'])}; {q['head_batches_indexed']} batch indexed; goal <= 2 ms), "
      f"CLI process {ms(p['cli_head_s'])} (exec included)")
print(f"first open (pread walk + cache store): C {ms(q['first_open_s'])} -> {q['first_open_s'] / ra:.3f}x "
      f"read_all; quiver.open {ms(p['py_first_open_s'])} -> {p['py_first_open_s'] / ra:.3f}x (goal <= 0.3)")
print(f"  walk without the cache: pread {ms(q['pread_walk_s'])} vs through the mapping (before) "
      f"{ms(q['mapped_walk_s'])} -> {q['mapped_walk_s'] / q['pread_walk_s']:.1f}x")
print(f"reopen (index cache hit): C {ms(q['reopen_s'])} (CPU {ms(q['reopen_cpu_s'])}), quiver.open "
      f"{ms(p['py_reopen_s'])} (CPU {ms(p['py_reopen_cpu_s'])}; the dataset layer opens the file twice) (goal <= 5 ms)")
print(f"RSS growth while open: pread walk {q['pread_walk_rss_kb'] / 1024:.2f} MB, mapping walk "
      f"{q['mapped_walk_rss_kb'] / 1024:.2f} MB, reopen {q['reopen_rss_kb'] / 1024:.2f} MB, head "
      f"{q['head_rss_kb'] / 1024:.2f} MB; quiver.open {p['py_first_open_rss_kb'] / 1024:.2f} MB")
PY
  done
fi
if has wide; then
  echo "== open in the number of columns; decompress what is read (issue 11 items 3, 4)"
  "$py" "$top/bench/bench_wide.py" "$top/$build/quiver" "$data"
fi
