#!/usr/bin/env bash
# Installs the Debian 12 packages tensorfs needs to build, test and run, if any is missing.
set -euo pipefail
packages=(g++ cmake make pkg-config libfuse3-dev fuse3 nlohmann-json3-dev libsimdjson-dev libboost-test-dev python3-numpy
          clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
