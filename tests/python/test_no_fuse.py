"""The package needs no FUSE: in a mount namespace where /dev/fuse is /dev/null (bound over it), where `tensorfs
mount` fails, safe_open, get_slice and load read a local and an HTTP source, and strace sees the process open no
/dev/fuse."""
import os
import subprocess
import sys

from remote_servers import Nginx
from tensorfs_mount import BIN, VECTORS

SCRIPT = r"""
import sys
import numpy as np
import tensorfs
for source in sys.argv[1:]:
    weights = tensorfs.load(source, framework="np", dtype="f32")
    with tensorfs.safe_open(source, framework="pt") as f:
        for name in f.keys():
            assert np.array_equal(f.get_slice(name)[...].float().numpy(), weights[name], equal_nan=True), name
    print(source, len(weights))
"""

# In the namespace: /dev/fuse bound to /dev/null, a mount that must fail, then Python under strace (with the
# sanitizers' runtime preloaded again for a sanitized build: conftest.py keeps it in TENSORFS_PRELOAD).
NAMESPACE = r"""
mount --bind /dev/null /dev/fuse || exit 10
mkdir -p "$WORK/mnt"
if "$TENSORFS_BIN" mount "$1" "$WORK/mnt" 2>/dev/null; then fusermount3 -u "$WORK/mnt"; exit 11; fi
exec strace -f -qq -e trace=open,openat -o "$WORK/trace" \
    /usr/bin/env LD_PRELOAD="$TENSORFS_PRELOAD" "$PYTHON" -c "$SCRIPT" "$@"
"""


def test_everything_works_where_dev_fuse_is_dev_null(tmp_path):
    local = os.path.join(VECTORS, "gguf", "tiny-llama-Q4_K_M.gguf")
    nginx = Nginx(os.path.join(VECTORS, "gguf"))
    try:
        remote = f"http://127.0.0.1:{nginx.http}/tiny-llama-Q4_K_M.gguf"
        env = dict(os.environ, WORK=str(tmp_path), TENSORFS_BIN=BIN, PYTHON=sys.executable, SCRIPT=SCRIPT,
                   XDG_CACHE_HOME=str(tmp_path / "cache"), NO_PROXY="127.0.0.1")
        result = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE, "sh",
                                 local, remote], capture_output=True, text=True, timeout=300, env=env)
    finally:
        nginx.stop()
    assert result.returncode == 0, f"{result.returncode}: {result.stdout}{result.stderr}"
    assert result.stdout.split() == [local, "21", remote, "21"]
    with open(tmp_path / "trace") as trace:
        opened = trace.read()
    assert "tiny-llama-Q4_K_M.gguf" in opened and "/dev/fuse" not in opened
