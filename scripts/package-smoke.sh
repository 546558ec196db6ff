#!/usr/bin/env bash
# Smoke test of the Debian package (path in $1, from scripts/package.sh), as root on a machine without tensorfs
# installed: `apt-get install` it as a user would, mount the demo checkpoint with the installed /usr/bin/tensorfs
# (`tensorfs mount` and the fstab form, through mount(8) and mount.fuse3), read a tensor with numpy and compare it
# with the file's own bytes, unmount, load the checkpoint with the installed Python package, check `man tensorfs`
# and the bash completion, then `apt-get remove` it and check that nothing it installed is left (the package's
# byte code included). scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
deb=$(realpath "$1")
if dpkg-query -W -f='${Status}' tensorfs 2>/dev/null | grep -q installed; then
  echo "package-smoke: tensorfs is already installed here; remove it first (apt-get remove tensorfs)" >&2
  exit 1
fi

work=$(mktemp -d)
mnt=$work/mnt
mkdir "$mnt"
installed=false
cleanup() {
  if mountpoint -q "$mnt"; then fusermount3 -u "$mnt"; fi
  if $installed; then apt-get remove -y -qq tensorfs >/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { echo "package-smoke: $*"; }

step "apt-get install $deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >/dev/null
installed=true
dpkg-query -W -f='  ${Package} ${Version}, depends on: ${Depends}\n' tensorfs
files=$(dpkg -L tensorfs)
bin=/usr/bin/tensorfs
"$bin" --version | sed -n 1p

scripts/make-demo-checkpoint.py "$work/demo.safetensors"
# One tensor's values decoded from the safetensors file's own bytes, once: what every reader below must give.
name=model.layers.0.self_attn.q_proj.weight
/usr/bin/python3 - "$work/demo.safetensors" "$name" "$work/expected.npy" <<'PY'
import json, struct, sys
import numpy as np
source, name, out = sys.argv[1:]
with open(source, "rb") as f:
    size = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(size))
    begin, end = header[name]["data_offsets"]
    f.seek(8 + size + begin)
    bf16 = np.frombuffer(f.read(end - begin), dtype="<u2")
np.save(out, (bf16.astype(np.uint32) << 16).view("<f4").reshape(header[name]["shape"]))
PY
# The tensor's values read through the mount, against those.
read_tensor() {
  /usr/bin/python3 - "$work/expected.npy" "$mnt" "$name" <<'PY'
import json, sys
import numpy as np
expected, mnt, name = sys.argv[1:]
expected = np.load(expected)
meta = json.load(open(f"{mnt}/{name}/meta.json"))
values = np.memmap(f"{mnt}/{name}/dequant.f32", dtype="<f4", mode="r", shape=tuple(meta["shape"]))
assert np.array_equal(values, expected), "dequant.f32 differs from the file's values"
npy = np.load(f"{mnt}/{name}/dequant.npy")
assert np.array_equal(npy, expected), "dequant.npy differs from the file's values"
print(f"  numpy read {name}: shape {values.shape}, the file's values")
PY
}

step "tensorfs mount"
"$bin" mount "$work/demo.safetensors" "$mnt"
read_tensor
"$bin" umount "$mnt"

step "mount -t fuse.tensorfs (the fstab form: mount.fuse3 finds tensorfs in the command path)"
mount -t fuse.tensorfs "$work/demo.safetensors" "$mnt" -o ro,cache_size=64M
grep -q " $mnt fuse.tensorfs " /proc/self/mounts
# The daemon serving it is the installed binary (not one in /usr/local/bin, which mount.fuse3 would prefer).
for proc in /proc/[0-9]*; do
  if tr '\0' '\n' <"$proc/cmdline" 2>/dev/null | grep -x -- "$mnt" >/dev/null; then readlink "$proc/exe"; fi
done | grep -x "$bin" >/dev/null
read_tensor
umount "$mnt"

step "tensorfs csi (the plugin installed in /usr/libexec/tensorfs)"
"$bin" csi --endpoint "unix://$work/csi.sock" --node-id smoke --state-dir "$work/state" --cache-dir "$work/cache" \
  2>"$work/csi.log" &
csi=$!
# It says so once it listens (a bounded wait: 60 s).
for _ in $(seq 600); do grep -q "csi.tensorfs.io" "$work/csi.log" && break; sleep 0.1; done
grep -q "csi.tensorfs.io" "$work/csi.log" && [ -S "$work/csi.sock" ] || { cat "$work/csi.log" >&2; exit 1; }
plugin=$(cat "/proc/$csi/task/$csi/children")
[ "$(readlink "/proc/${plugin// /}/exe")" = /usr/libexec/tensorfs/tensorfs-csi ]
kill -TERM "$csi"
wait "$csi"

step "tensorfs-holder (the mount holder installed in /usr/libexec/tensorfs) answers at its socket, and stops"
/usr/libexec/tensorfs/tensorfs-holder --socket "$work/holder.sock" 2>"$work/holder.log" &
holder=$!
for _ in $(seq 600); do [ -S "$work/holder.sock" ] && break; sleep 0.1; done
[ -S "$work/holder.sock" ] || { cat "$work/holder.log" >&2; exit 1; }
kill -TERM "$holder"
wait "$holder"
grep -q "every daemon ended; stopping" "$work/holder.log"

step "python3: import tensorfs (the installed package) and load the demo checkpoint"
# From an empty folder, so that no build tree's package is on the path.
(cd "$work" && /usr/bin/python3 - "$work/demo.safetensors" "$work/expected.npy" "$name" <<'PY'
import importlib.metadata, sys
import numpy as np
import tensorfs
source, expected, name = sys.argv[1:]
assert tensorfs.__file__ == "/usr/lib/python3/dist-packages/tensorfs/__init__.py", tensorfs.__file__
assert importlib.metadata.metadata("tensorfs")["License"] == "Apache-2.0"
weights = tensorfs.load(source, framework="np", dtype="f32")
assert np.array_equal(weights[name], np.load(expected)), "tensorfs.load differs from the file's values"
print(f"  tensorfs {tensorfs.__version__}: load gave {len(weights)} tensors, the file's values")
PY
)

step "man tensorfs"
MANWIDTH=100 man -P cat tensorfs | grep "tensorfs - mount a model checkpoint as a tree of plain files" >/dev/null

step "bash completion, loaded on demand by bash-completion"
# shellcheck disable=SC2016
bash --norc -c 'source /usr/share/bash-completion/bash_completion && __load_completion tensorfs &&
                complete -p tensorfs' | grep -- "-F _tensorfs tensorfs" >/dev/null

step "apt-get remove tensorfs"
DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq tensorfs >/dev/null
installed=false
if dpkg -s tensorfs >/dev/null 2>&1; then
  echo "package-smoke: dpkg still knows tensorfs after its removal" >&2
  exit 1
fi
# Every file the package had is gone; a folder it listed remains only if something else is in it (/usr, ...).
left=()
while IFS= read -r path; do
  if [ -L "$path" ] || [ -f "$path" ] || { [ -d "$path" ] && [ -z "$(ls -A "$path")" ]; }; then left+=("$path"); fi
done <<<"$files"
if [ ${#left[@]} -gt 0 ]; then
  echo "package-smoke: left behind after apt-get remove: ${left[*]}" >&2
  exit 1
fi
step "ok: installed, mounted, read, unmounted, removed without a trace"
