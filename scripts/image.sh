#!/usr/bin/env bash
# Builds the image of packaging/Containerfile where no container registry can be reached: a Debian 12 root made
# with debootstrap from the mirror apt already uses, the tensorfs .deb (and ca-certificates) installed in it with
# apt-get, imported with `podman import` as localhost/tensorfs:VERSION with the Containerfile's ENTRYPOINT and CMD.
# Then a smoke test: the CSI plugin started from the image with `podman run`, called over its socket: GetPluginInfo,
# Probe, NodeGetInfo, and a volume of the test vectors' sharded model published, read inside the container and
# unpublished. Not part of CI (minutes: a whole Debian root). docs/image.md has the output of a run.
#
#   scripts/image.sh [--push REGISTRY] [TENSORFS.deb]      (default: the .deb that scripts/package.sh builds)
#
# --push REGISTRY (HOST[:PORT][/PATH]): then tags the image REGISTRY/tensorfs:VERSION, pushes it, removes the local
# tag and pulls it back by that name, and checks that the pulled image is the one built. Put the same name in
# deploy/kubernetes/kustomization.yaml (`images:`). A registry on this machine (localhost, 127.0.0.1) is spoken to
# over plain HTTP; any other with TLS. scripts/registry-check.sh runs it against a local registry (Debian's
# docker-registry).
set -euo pipefail
cd "$(dirname "$0")/.."
registry=""
if [ "${1:-}" = "--push" ]; then
  registry=${2:?--push needs a registry, e.g. registry.example.com/ml or localhost:5000}
  shift 2
fi
scripts/install-deps.sh --image
deb=$(realpath "${1:-$(scripts/package.sh)}")
version=$(dpkg-deb -f "$deb" Version)
image=localhost/tensorfs:$version

# The Debian mirror of apt's own bookworm source (deb822 .sources files, else a one-line sources.list).
mirror=$(awk '/^URIs:/ {uri = $2} /^Suites:/ && / bookworm( |$)/ {print uri; exit}' /etc/apt/sources.list.d/*.sources \
           2>/dev/null || true)
if [ -z "$mirror" ]; then
  mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
fi
[ -n "$mirror" ] || { echo "image.sh: no bookworm source in apt's configuration" >&2; exit 1; }

work=$(mktemp -d)
root=$work/root
plugin=""
runtime=()
limits=()
cleanup() {
  if [ -n "$plugin" ]; then podman "${runtime[@]}" rm -f "$plugin" >/dev/null 2>&1 || true; fi
  for fs in proc sys; do if mountpoint -q "$root/$fs"; then umount -l "$root/$fs"; fi; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "image.sh: debootstrap bookworm from $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; exit 1; }
echo "image.sh: apt-get install $(basename "$deb") in it"
cp "$deb" "$root/tmp/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
chroot "$root" apt-get update -qq
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -qq --no-install-recommends ca-certificates \
  "/tmp/$(basename "$deb")" >"$work/install.log" 2>&1 || { tail -20 "$work/install.log" >&2; exit 1; }
chroot "$root" apt-get clean
umount "$root/proc" "$root/sys"
rm -rf "$root/tmp/"*.deb "$root"/var/lib/apt/lists/* "$root/etc/resolv.conf"
: >"$root/etc/resolv.conf"  # the container runtime writes its own

echo "image.sh: podman import as $image"
tar -C "$root" -c . | podman import --change 'ENTRYPOINT ["tensorfs"]' --change 'CMD ["--help"]' - "$image" >/dev/null
podman image inspect --format '  {{.Id}} {{.Size}} bytes, entrypoint {{.Config.Entrypoint}}' "$image"

# Some machines refuse what podman run does by default: a VM without CAP_SYS_RESOURCE cannot raise RLIMIT_NOFILE
# and RLIMIT_NPROC as podman asks (then they are given at most what this shell has), and crun refuses a hybrid
# cgroup layout with controllers on cgroup v2, which runc takes.
if ! podman run --rm "$image" --version >/dev/null 2>&1; then
  limits=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=32768:32768)
  if ! podman run --rm "${limits[@]}" "$image" --version >/dev/null 2>&1; then runtime=(--runtime runc); fi
  echo "image.sh: podman run needs ${runtime[*]} ${limits[*]} here"
fi
podman "${runtime[@]}" run --rm "${limits[@]}" "$image" --version

echo "image.sh: smoke test: the CSI plugin from the image (podman run), called over its socket"
sockets=$work/csi
mkdir -p "$sockets/pods"
plugin=$(podman "${runtime[@]}" run -d "${limits[@]}" --privileged --device /dev/fuse -v "$sockets:/csi" \
           -v "$PWD/tests/data/vectors/safetensors/sharded:/srv/models/sharded:ro" "$image" \
           csi --endpoint=unix:///csi/csi.sock --node-id=image-smoke --state-dir=/csi/state --cache-dir=/var/cache/tensorfs)
for _ in $(seq 600); do [ -S "$sockets/csi.sock" ] && break; sleep 0.1; done  # a bounded wait: 60 s
[ -S "$sockets/csi.sock" ] || { podman logs "$plugin" >&2; exit 1; }
stubs=$work/stubs
mkdir "$stubs"
protoc -I third_party/csi --python_out="$stubs" --grpc_out="$stubs" \
  --plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" third_party/csi/csi.proto
/usr/bin/python3 - "$stubs" "$sockets/csi.sock" "$plugin" <<'PY'
import json, subprocess, sys
sys.path.insert(0, sys.argv[1])
import grpc, csi_pb2 as pb, csi_pb2_grpc as rpc
channel = grpc.insecure_channel("unix://" + sys.argv[2])
grpc.channel_ready_future(channel).result(timeout=60)
identity, node = rpc.IdentityStub(channel), rpc.NodeStub(channel)
info = identity.GetPluginInfo(pb.GetPluginInfoRequest(), timeout=60)
ready = identity.Probe(pb.ProbeRequest(), timeout=60).ready.value
print(f"  GetPluginInfo: {info.name} {info.vendor_version}; Probe: ready={ready}; "
      f"NodeGetInfo: {node.NodeGetInfo(pb.NodeGetInfoRequest(), timeout=60).node_id}")
# A volume as kubelet publishes an inline one; the target is a folder in the container.
mode = pb.VolumeCapability.AccessMode(mode=pb.VolumeCapability.AccessMode.SINGLE_NODE_WRITER)
capability = pb.VolumeCapability(mount=pb.VolumeCapability.MountVolume(), access_mode=mode)
target = "/csi/pods/model"
node.NodePublishVolume(pb.NodePublishVolumeRequest(
    volume_id="smoke", target_path=target, volume_capability=capability, readonly=True,
    volume_context={"source": "/srv/models/sharded", "export_dtype": "bf16"}), timeout=120)
shown = subprocess.run(["podman", "exec", sys.argv[3], "cat", target + "/model.json"], capture_output=True, text=True,
                       check=True, timeout=60).stdout
model = json.loads(shown)
stats = node.NodeGetVolumeStats(pb.NodeGetVolumeStatsRequest(volume_id="smoke", volume_path=target), timeout=60)
print(f"  NodePublishVolume /srv/models/sharded: model.json says {model['format']}, {model['tensor_count']} tensors; "
      f"NodeGetVolumeStats: {[u.total for u in stats.usage]} (bytes, files), abnormal={stats.volume_condition.abnormal}")
node.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(volume_id="smoke", target_path=target), timeout=60)
print("  NodeUnpublishVolume: ok")
sys.exit(0 if ready and model["tensor_count"] == 21 and not stats.volume_condition.abnormal else 1)
PY
podman "${runtime[@]}" stop -t 30 "$plugin" >/dev/null
podman logs "$plugin" 2>&1 | sed 's/^/  plugin: /'
echo "image.sh: ok: $image"

if [ -n "$registry" ]; then
  remote=${registry%/}/tensorfs:$version
  tls=()
  case "$registry" in localhost:*|localhost/*|localhost|127.0.0.1*) tls=(--tls-verify=false) ;; esac
  built=$(podman image inspect --format '{{.Id}}' "$image")
  podman tag "$image" "$remote"
  echo "image.sh: podman push $remote"
  podman push "${tls[@]}" "$remote"
  podman rmi "$remote" >/dev/null
  echo "image.sh: podman pull $remote"
  podman pull "${tls[@]}" "$remote" >/dev/null
  pulled=$(podman image inspect --format '{{.Id}}' "$remote")
  if [ "$pulled" != "$built" ]; then
    echo "image.sh: the image pulled from $remote ($pulled) is not the one built ($built)" >&2
    exit 1
  fi
  echo "image.sh: ok: $remote pushed and pulled back ($built)"
fi
