#!/bin/sh
# scripts/demo.sh BUILD — the main job on the built-in sample dataset:
# generate it, then inspect it and read rows with quiver.
set -eu
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$top/build/venv}
q=$top/$build/quiver
sample=$top/$build/sample
"$venv/bin/python" "$top/scripts/make_sample.py" "$sample"
set -x
"$q" info "$sample/sample.arrow"
"$q" head "$sample/sample.arrow" -n 3
"$q" get "$sample/sample.feather" 0 4999 9999
