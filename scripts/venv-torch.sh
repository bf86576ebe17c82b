#!/bin/sh
# scripts/venv-torch.sh DIR — the virtual environment of the torch tests
# (tests/python_torch/): the oracles of tests/requirements.txt plus the torch
# of tests/requirements-torch.txt (the CPU wheel: it runs on CPU here).
# Idempotent as scripts/venv.sh: reinstalls only when either pin list changes.
set -eu
dir=${1:-build/venv-torch}
here=$(dirname "$0")/../tests
stamp="$dir/.requirements"
if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] &&
  cat "$here/requirements.txt" "$here/requirements-torch.txt" | cmp -s - "$stamp"; then
  exit 0
fi
python3 -m venv "$dir"
"$dir/bin/pip" install --disable-pip-version-check -q -r "$here/requirements.txt" \
  -r "$here/requirements-torch.txt"
cat "$here/requirements.txt" "$here/requirements-torch.txt" >"$stamp"
