#!/bin/sh
# scripts/demo.sh [BUILD] — what `make demo` runs: scripts/demo.py with the
# venv's Python (VENV, default build/venv) and the CLI in BUILD (default
# build). It builds the sample dataset once (BUILD/demo/sample-N, N from
# QV_DEMO_ROWS, default 2000000), then times open, random reads, shuffle,
# filter, sort and save in quiver beside datasets and pyarrow, checking
# that every result is the same.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$top/$build ;; esac
venv=${VENV:-$top/build/venv}
exec "$venv/bin/python" "$top/scripts/demo.py" --build "$build"
