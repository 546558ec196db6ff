#!/usr/bin/env bash
# The image goes to a registry and comes back from it by name: Debian's docker-registry (the CNCF distribution
# registry), started on 127.0.0.1 with its storage in a temporary folder, then `scripts/image.sh --push
# 127.0.0.1:PORT` (build, smoke test, push, pull, compare). Not part of CI: image.sh takes minutes and a whole
# Debian root (docs/image.md). Stops the registry it started, also on failure.
#
#   scripts/registry-check.sh [TENSORFS.deb]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --image
if ! command -v docker-registry >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry >/dev/null
fi
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$work/config.yml" <<CONFIG
version: 0.1
storage:
  filesystem:
    rootdirectory: $work/storage
http:
  addr: 127.0.0.1:$port
CONFIG
docker-registry serve "$work/config.yml" > "$work/registry.log" 2>&1 &
registry_pid=$!
trap 'kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null
echo "registry-check: docker-registry at 127.0.0.1:$port"
scripts/image.sh --push "127.0.0.1:$port" "$@"
echo "registry-check: catalog: $(curl -fsS "http://127.0.0.1:$port/v2/_catalog")"
