#!/usr/bin/env bash
# Installs the Debian 12 packages tensorfs needs to build, test and run, if any is missing.
set -euo pipefail
# libcurl for remote sources; nginx-light and openssl run the remote tests' servers (a CA made per run); curl is
# the remote benchmark's baseline. python3-torch: the tests write and load PyTorch checkpoints with it, and
# check the 16-bit views against PyTorch's own bfloat16 rounding (tests/integration/test_views.py).
# libsimdjson-dev reads safetensors headers and indexes.
# bash-completion: the completion test sources its helpers, as bash does for completion/tensorfs.bash.
# dpkg-dev (dpkg-shlibdeps, dpkg-buildflags), lintian, man-db: scripts/package.sh builds the Debian package, CI checks
# it and reads its manual.
packages=(g++ cmake make pkg-config libfuse3-dev fuse3 nlohmann-json3-dev libsimdjson-dev libboost-test-dev
          python3-numpy python3-torch clang libclang-rt-14-dev libcurl4-openssl-dev nginx-light openssl curl
          bash-completion dpkg-dev lintian man-db)
# libexpat1-dev reads S3's XML answers (src/remote/xml.cpp), zlib1g-dev checks zip entries' CRC-32
# (src/format/crc32.cpp).
packages+=(libexpat1-dev zlib1g-dev)
# libssl-dev: OpenSSL's libcrypto computes the digests `prefetch --verify` checks (src/remote/digest.cpp).
packages+=(libssl-dev)
# The CSI plugin (src/csi, cmake/csi.cmake): gRPC C++ and protobuf, protoc and its gRPC plugins (C++ for the
# plugin, Python for the tests' client); python3-grpcio runs that client, python3-yaml reads the manifests of
# deploy/kubernetes, squid is the proxy of test_proxy.
packages+=(libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-yaml squid)
# python3-kubernetes: the API's models, against which test_csi_manifests checks every field of deploy/kubernetes.
packages+=(python3-kubernetes)
# scripts/image.sh (not CI) builds the container image: `scripts/install-deps.sh --image` adds what it runs (runc
# for machines whose cgroup layout crun, podman's default runtime, refuses).
if [ "${1:-}" = "--image" ]; then
  packages+=(debootstrap podman runc)
fi
# pybind11-dev builds the Python module (src/python) for Debian's python3 (python3-dev: its headers); python3-pytest
# runs its tests (tests/python). python3-pip makes the wheel (scripts/package.sh) and python3-venv the fresh venvs
# that tests/packaging installs it into.
packages+=(pybind11-dev python3-dev python3-pytest python3-pip python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm run the tests' S3 server (tests/servers, whose packages the tests install with `npm ci`); any
# Node.js from 18 on will do, Debian's or one already on the machine.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
# kubectl renders deploy/kubernetes (`kubectl kustomize`, test_csi_manifests): any kubectl, Debian's
# kubernetes-client or one already on the machine.
if ! command -v kubectl >/dev/null; then
  missing+=(kubernetes-client)
fi
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  # Packages' scripts must not start services (nginx's would take port 80): the tests start their own servers.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    $sudo sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod +x $policy"
    trap '$sudo rm -f "$policy"' EXIT
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
