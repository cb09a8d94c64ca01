#!/bin/sh
# Installs the Debian 12 packages Pillars builds and tests with, when they are missing.
# Needs root (or sudo) only if something is missing.
set -e
PKGS="cmake g++ clang clang-format libclang-rt-14-dev make doctest-dev nlohmann-json3-dev libcli11-dev libopenblas0-pthread libopenblas-dev libdnnl2 liblzma-dev xz-utils python3 python3-markdown-it chromium openmpi-bin libopenmpi-dev"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "pillars: installing missing packages:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
