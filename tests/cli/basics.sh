#!/bin/sh
# basics.sh QUIVER — the command-line contract: --help / --version, exit
# codes (0 ok, 1 bad data, 2 bad usage), errors on stderr naming the file.
set -u
q=$1
data=${QV_SHARED:-../shared}/testdata/arrow-testing/data
golden=$data/arrow-ipc-stream/integration/cpp-21.0.0
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect CODE DESCRIPTION -- CMD...: run CMD, compare exit status.
expect() {
  want=$1; shift; what=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  if [ "$got" -eq "$want" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $what: exit $got, expected $want"; cat "$tmp/err"; fi
}
# contains FILE TEXT DESCRIPTION
contains() {
  if grep -qF -- "$2" "$1"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $3: '$2' not in:"; cat "$1"; fi
}

expect 0 "--help" "$q" --help
contains "$tmp/out" "usage: quiver COMMAND" "help text"
expect 0 "--version" "$q" --version
contains "$tmp/out" "quiver 0." "version text"
expect 2 "no command" "$q"
expect 2 "unknown command" "$q" frobnicate
contains "$tmp/err" "unknown command 'frobnicate'" "unknown command message"
expect 0 "info --help" "$q" info --help
expect 2 "info without path" "$q" info
contains "$tmp/err" "missing PATH" "missing path message"
expect 2 "info bad option" "$q" info --bogus x
expect 1 "info missing file" "$q" info /nonexistent/file.arrow
contains "$tmp/err" "cannot open '/nonexistent/file.arrow'" "missing file message"
printf 'not an arrow file at all' >"$tmp/junk"
expect 1 "info junk" "$q" info "$tmp/junk"
contains "$tmp/err" "not an Arrow, Parquet, CSV or JSON file: found 6e 6f 74 20 61 6e 20 61 (\"not an a\")" \
  "junk named by its first bytes"
printf 'PAR1\025\004PAR1' >"$tmp/x.parquet"
expect 1 "head parquet" "$q" head "$tmp/x.parquet"
contains "$tmp/err" "truncated Parquet file: 10 bytes" "parquet recognised"
expect 0 "info golden stream" "$q" info "$golden/generated_primitive.stream"
contains "$tmp/out" "format:             stream" "info format"
expect 0 "info golden file --json" "$q" info --json "$golden/generated_primitive.arrow_file"
contains "$tmp/out" '"format": "file"' "info json format"
expect 0 "head" "$q" head "$golden/generated_primitive.stream" -n 2
expect 2 "head bad -n" "$q" head "$golden/generated_primitive.stream" -n abc
# -n takes its value attached (-n1, -n=1) or apart (-n 1); --rows is its long form
"$q" head "$golden/generated_primitive.stream" -n 2 >"$tmp/want2"
for form in -n2 -n=2 "-n 2" --rows=2 "--rows 2"; do
  # shellcheck disable=SC2086
  expect 0 "head $form" "$q" head "$golden/generated_primitive.stream" $form
  if cmp -s "$tmp/out" "$tmp/want2"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL head $form: not the rows of -n 2"; fi
done
expect 2 "head -n2x" "$q" head "$golden/generated_primitive.stream" -n2x
expect 0 "get" "$q" get "$golden/generated_primitive.arrow_file" 0
expect 2 "get without rows" "$q" get "$golden/generated_primitive.arrow_file"
expect 1 "get out of range" "$q" get "$golden/generated_primitive.arrow_file" 99999999
# negative rows count from the end, as Python indexing (37 rows)
expect 0 "get -1" "$q" get "$golden/generated_primitive.arrow_file" -1
cp "$tmp/out" "$tmp/last"
expect 0 "get 36" "$q" get "$golden/generated_primitive.arrow_file" 36
if cmp -s "$tmp/out" "$tmp/last"; then pass=$((pass + 1)); else
  fail=$((fail + 1)); echo "FAIL get -1 is not get 36"; fi
expect 1 "get -38" "$q" get "$golden/generated_primitive.arrow_file" -38
contains "$tmp/err" "row -38 is out of range (the file has 37 rows; negative rows count from the end)" \
  "get negative out of range message"
expect 2 "get bad row" "$q" get "$golden/generated_primitive.arrow_file" -x
expect 2 "integration without mode" "$q" integration --arrow=x --json=y
expect 2 "integration bad mode" "$q" integration --mode=NOPE --arrow=x --json=y
expect 0 "debug row-layout" "$q" debug row-layout "$golden/generated_primitive.arrow_file" \
  --keys=int32_nullable,bool_nullable --rows=0:2
contains "$tmp/out" '"column_offsets":[0,4]' "row-layout offsets"
expect 2 "debug row-layout unknown column" "$q" debug row-layout \
  "$golden/generated_primitive.arrow_file" --keys=nope
contains "$tmp/err" "no column named 'nope'" "row-layout unknown column message"
expect 2 "debug row-layout bad alignment" "$q" debug row-layout \
  "$golden/generated_primitive.arrow_file" --keys=int32_nullable --row-alignment=3
# dataset commands: usage errors, one run end to end, errors naming the input
prim="$golden/generated_primitive.arrow_file"
expect 0 "shuffle --help" "$q" shuffle --help
contains "$tmp/out" "usage: quiver shuffle SRC" "shuffle help text"
expect 2 "shuffle without SRC" "$q" shuffle -o "$tmp/ds"
contains "$tmp/err" "missing SRC" "missing SRC message"
expect 2 "shuffle without -o" "$q" shuffle "$prim"
contains "$tmp/err" "missing -o DST" "missing -o message"
expect 2 "shuffle bad seed" "$q" shuffle "$prim" --seed=-1 -o "$tmp/ds"
expect 2 "select without rows" "$q" select "$prim" -o "$tmp/ds"
expect 2 "shard index past count" "$q" shard "$prim" --num-shards=2 --index=2 -o "$tmp/ds"
expect 2 "concat one input" "$q" concat "$prim" -o "$tmp/ds"
expect 0 "shuffle a golden file" "$q" shuffle "$prim" --seed=7 -o "$tmp/ds"
contains "$tmp/out" "shuffle: 37 rows, seed 7 -> $tmp/ds (1 shard, fingerprint " "shuffle summary"
expect 0 "head of the output" "$q" head "$tmp/ds" -n 1
expect 1 "filter over a missing file" "$q" filter /nonexistent/x.arrow --where='a > 1' -o "$tmp/ds2"
contains "$tmp/err" "/nonexistent/x.arrow" "filter missing file message"
# a bad expression is bad usage, as map's --set (exit 2, with the caret)
expect 2 "filter unknown column" "$q" filter "$prim" --where='nope > 1' -o "$tmp/ds2"
contains "$tmp/err" "--where: unknown column 'nope'" "filter unknown column message"
expect 2 "filter bad expression" "$q" filter "$prim" --where='1 +' -o "$tmp/ds2"
contains "$tmp/err" "expected an expression after '+'" "filter syntax error message"
contains "$tmp/err" "     ^" "filter syntax error caret"
expect 0 "map --help" "$q" map --help
contains "$tmp/out" "usage: quiver map SRC --set NAME=EXPR" "map help text"
expect 2 "map without --set" "$q" map "$prim" -o "$tmp/m"
contains "$tmp/err" "missing --set NAME=EXPR" "map missing --set message"
expect 2 "map without -o" "$q" map "$prim" --set 'x=1'
contains "$tmp/err" "missing -o DST" "map missing -o message"
expect 2 "map --set without =" "$q" map "$prim" --set 'x' -o "$tmp/m"
contains "$tmp/err" "--set must be NAME=EXPR" "map --set form message"
expect 2 "map bad expression" "$q" map "$prim" --set 'x=1 +' -o "$tmp/m"
contains "$tmp/err" "expected an expression after '+'" "map syntax error message"
contains "$tmp/err" "     ^" "map syntax error caret"
expect 2 "map unknown column" "$q" map "$prim" --set 'x=nope * 2' -o "$tmp/m"
contains "$tmp/err" "set x: unknown column 'nope'" "map unknown column message"
expect 2 "map bad --batch-size" "$q" map "$prim" --set 'x=1' --batch-size=-3 -o "$tmp/m"
expect 2 "map bad --num-proc" "$q" map "$prim" --set 'x=1' --num-proc=0 -o "$tmp/m"
expect 0 "map a golden file" "$q" map "$prim" --set 'x=1 + 1' -o "$tmp/m"
contains "$tmp/out" "map: 37 rows, set x -> $tmp/m (1 shard, fingerprint " "map summary"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
