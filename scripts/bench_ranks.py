"""The ranks section of scripts/bench (issue 47): the ranks of a tensor-parallel job on one node, each figure next to
its baseline measured in the same round:

R1. 8 processes (the Python module, `import tensorfs` from the bench's build, one /usr/bin/python3 each) open the
    capped 1 GiB model of the load rows (bench_load's model, its 64 tensors of 2048 x 4096 BF16) at once, with one
    disk cache, and each reads a 1/8 column slice of every tensor (get_slice, framework "pt") / one process loading
    it whole (tensorfs.load, as P1): the time from the moment the ranks are let go to the last one's end. A column
    slice touches every row, so every rank needs every block of the model.
R2. the bytes nginx sent for R1 / the model's size: each block fetched once for all the ranks.

The ranks are started and have imported torch and tensorfs before they are let go at once; the load's time is that of
the call itself, measured inside its process. Both start with an empty disk cache."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import bench_load
from bench_python import Python

RANKS = 8
COLUMNS = 4096
MIB = 1 << 20

# One rank: says "ready" once imported, waits for a line, then reads its column slice of every tensor and prints the
# moments (time.monotonic: one clock for every process of the machine) it began and ended.
RANK = r"""
import json, sys, time
rank, ranks, source = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
import torch
import tensorfs
print("ready", flush=True)
sys.stdin.readline()
began = time.monotonic()
with tensorfs.safe_open(source, framework="pt") as f:
    for name in f.keys():
        part = f.get_slice(name)
        columns = part.get_shape()[1]
        values = part[:, rank * columns // ranks:(rank + 1) * columns // ranks]
        del values
print(json.dumps({"began": began, "ended": time.monotonic()}))
"""


def ranks_seconds(python, url, cache):
    """The time from letting the ranks go to the last one's end."""
    bench_load.quiet_machine()
    env = dict(python.env, XDG_CACHE_HOME=cache)
    ranks = [subprocess.Popen(["/usr/bin/python3", "-c", RANK, str(rank), str(RANKS), url], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env) for rank in range(RANKS)]
    try:
        for rank in ranks:
            if rank.stdout.readline().strip() != "ready":
                raise RuntimeError("a rank did not start")
        for rank in ranks:
            rank.stdin.write("go\n")
            rank.stdin.flush()
        moments = []
        for rank in ranks:
            out, _ = rank.communicate(timeout=600)
            if rank.returncode != 0:
                raise RuntimeError(f"a rank failed ({rank.returncode})")
            moments.append(json.loads(out))
    finally:
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()
                rank.wait()
    return max(m["ended"] for m in moments) - min(m["began"] for m in moments)


def run(bench, scale):
    os.environ.setdefault("TENSORFS_BIN", bench.tensorfs)
    os.environ.setdefault("TENSORFS_TEST_DATA", os.path.join(bench_load.ROOT, "tests", "data"))
    os.environ.update({"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
    sys.path.insert(0, os.path.join(bench_load.ROOT, "tests", "integration"))
    import remote_servers as rs
    folder = tempfile.mkdtemp(prefix="ranks-", dir=bench.work)
    model, _ = bench_load.write_model(folder, scale, columns=COLUMNS)
    size = os.path.getsize(model)
    server = bench_load.Nginx(folder, rs)
    python = Python(bench)
    capped = f"http://127.0.0.1:{server.capped}/model.safetensors"
    times, sent = [], []
    try:
        for _ in range(bench.rounds):
            whole = python.cold_load(capped)["seconds"]
            cache = tempfile.mkdtemp(prefix="cache-", dir=bench.work)
            _, before = server.body_bytes_logged()
            try:
                sliced = ranks_seconds(python, capped, cache)
            finally:
                shutil.rmtree(cache)
            # nginx logs an answer once it is sent: the ranks have had every byte by now, the log may lag a little.
            deadline = time.monotonic() + 30
            while server.body_bytes_logged()[1] - before < size and time.monotonic() < deadline:
                time.sleep(0.1)
            times.append((sliced, whole))
            sent.append((server.body_bytes_logged()[1] - before, size))
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)

    gib = size / (1 << 30)
    bench.row(f"R1. {RANKS} processes, a 1/{RANKS} column slice of every tensor each ({gib:.2f} GiB BF16), "
              f"{bench_load.CAP}/conn / one tensorfs.load", times, "s", "<= 1.3")
    bench.row("R2. bytes the server sent for R1 / the model's size", sent, "MiB", "<= 1.05", MIB)
