#!/bin/sh
# scripts/venv.sh DIR — create the Python virtual environment the tests and
# benchmarks use as oracles (pyarrow, numpy, pytest; pinned in
# tests/requirements.txt). Idempotent: reinstalls only when the pins change.
set -eu
dir=${1:-build/venv}
req=$(dirname "$0")/../tests/requirements.txt
stamp="$dir/.requirements"
if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
  exit 0
fi
python3 -m venv "$dir"
"$dir/bin/pip" install --disable-pip-version-check -q -r "$req"
cp "$req" "$stamp"
