#!/bin/sh
# scripts/install-deps.sh — install the Debian packages quiver builds and
# tests with (run as root on a fresh Debian 12 machine). Idempotent.
set -eu
pkgs="build-essential cmake pkg-config python3 python3-venv python3-dev libzstd-dev liblz4-dev
      zlib1g-dev libjansson-dev libxxhash-dev libsnappy-dev libbrotli-dev libmicrohttpd-dev
      clang-14 libclang-rt-14-dev clang chromium chromium-driver openjdk-17-jre-headless"
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq $missing >/dev/null
fi
