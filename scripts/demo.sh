#!/usr/bin/env bash
# Installs what is missing, builds, makes a demo checkpoint, mounts it, shows it being used, unmounts.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build >/dev/null

work=$(mktemp -d)
mnt="$work/mnt"
mkdir "$mnt"
cleanup() {
  mountpoint -q "$mnt" && fusermount3 -u "$mnt"
  rm -rf "$work"
}
trap cleanup EXIT

scripts/make-demo-checkpoint.py "$work/demo.safetensors"
set -x
build/tensorfs mount "$work/demo.safetensors" "$mnt"
ls -l "$mnt"
ls -l "$mnt/model.layers.0.self_attn.q_proj.weight"
cat "$mnt/model.layers.0.self_attn.q_proj.weight/meta.json"
/usr/bin/python3 - "$mnt" <<'PY'
import json, sys
import numpy as np
mnt = sys.argv[1]
name = "model.layers.0.self_attn.q_proj.weight"
meta = json.load(open(f"{mnt}/{name}/meta.json"))
w = np.memmap(f"{mnt}/{name}/dequant.f32", dtype="<f4", mode="r", shape=tuple(meta["shape"]))
print(f"numpy.memmap {name}: shape {w.shape}, mean {w.mean():+.6f}, std {w.std():.6f}")
n = np.load(f"{mnt}/model.norm.weight/dequant.npy", mmap_mode="r")
print(f"np.load model.norm.weight/dequant.npy: {n.shape} {n.dtype}, first values {n[:3]}")
PY
build/tensorfs umount "$mnt"
