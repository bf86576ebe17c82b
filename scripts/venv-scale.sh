#!/bin/sh
# scripts/venv-scale.sh DIR — create the Python virtual environment of the
# scale-out tests and benchmark (tests/scale/, bench/bench_scale.py): the
# oracles of tests/requirements.txt plus Ray Data and PySpark pinned in
# tests/requirements-scale.txt. Kept apart from build/venv so Ray's and
# Spark's dependencies never change the other suites' oracles. Idempotent:
# reinstalls only when either file's pins change.
set -eu
dir=${1:-build/venv-scale}
here=$(dirname "$0")/../tests
stamp="$dir/.requirements"
want=$(cat "$here/requirements.txt" "$here/requirements-scale.txt")
if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
python3 -m venv "$dir"
"$dir/bin/pip" install --disable-pip-version-check -q -r "$here/requirements.txt" \
  -r "$here/requirements-scale.txt"
printf '%s\n' "$want" > "$stamp"
