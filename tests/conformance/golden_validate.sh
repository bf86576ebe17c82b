#!/bin/sh
# golden_validate.sh QUIVER — every Arrow integration golden file (every
# producer folder; .stream and .arrow_file) must validate against its JSON
# with `quiver integration --mode=VALIDATE`, exactly as Arrow's own
# integration tools are driven. Also ARROW_TO_JSON must produce JSON that
# validates against the same Arrow file.
set -u
q=$1
root=${QV_SHARED:-../shared}/testdata/arrow-testing/data/arrow-ipc-stream/integration
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
for json in "$root"/*/generated_*.json.gz; do
  base=${json%.json.gz}
  for arrow in "$base.stream" "$base.arrow_file"; do
    [ -f "$arrow" ] || continue
    if out=$("$q" integration --mode=VALIDATE --arrow="$arrow" --json="$json" 2>&1); then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL validate $arrow: $out"
    fi
  done
  # ARROW_TO_JSON then VALIDATE the produced JSON against the same file.
  out_json=$tmp/$(basename "$base").json
  if "$q" integration --mode=ARROW_TO_JSON --arrow="$base.arrow_file" --json="$out_json" \
       >/dev/null 2>"$tmp/err" &&
     "$q" integration --mode=VALIDATE --arrow="$base.arrow_file" --json="$out_json" \
       >/dev/null 2>>"$tmp/err"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL arrow_to_json $base.arrow_file: $(cat "$tmp/err")"
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 100 ]
