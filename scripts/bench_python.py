"""The python section of scripts/bench (issue 29): the Python module (`import tensorfs` from the bench's build, in a
fresh /usr/bin/python3 for each measurement), each figure next to its baseline measured in the same round:

P1. tensorfs.load of a 1 GiB BF16 model (64 tensors of 16 MiB, bench_load's model) from nginx capped at 100 MB/s per
    connection, framework "pt" (BF16 stays BF16) / `aria2c -x16 -s16 -k8M` of the file
P2. the same from an uncapped server / one `curl -o /dev/null` of the file
P3. the same from the tests' S3 store / 16 `curl --aws-sigv4` of consecutive ranges at once
P4. the same model as a local file: every tensor with get_tensor (framework "pt") and a sum of each / torch.frombuffer
    over one read() of the file, and the same sums
P5. a Q4_K GGUF (8 tensors of 16384 x 4096), every tensor as float32 with get_tensor (numpy) / `tensorfs cat --f32`
    of every tensor to /dev/null, one process each
P6. peak RSS of P1's load() (the process's peak less its size before the call) / the model's size + the cache budget
Beside them, without targets, what bounds P2 and P3: the same loads without the disk cache (disk_cache_size=0), and
(P2m) the model's size written into new memory, mapped and filled as the module's arrays are, which a load must do
and one curl into /dev/null does not (docs/benchmarks-history.md, "What page cache costs on this machine"); (P3m) P3's
curl with that write running beside it, on the same two cores.

Each tensorfs figure is the time of the calls themselves, measured inside the process (the interpreter's start and
imports are not counted; torch's import alone takes longer than some loads); the baselines are whole processes,
whose start is a few milliseconds. Remote loads start with an empty disk cache."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import bench_load
from bench_inputs import write_gguf_model

MIB = 1 << 20
BUDGET = 256 * MIB   # the default cache_size: the memory budget of a load
Q4_K_TENSORS = 8

# Runs in a fresh interpreter: argv[1] says what to do; prints a JSON object with the seconds the calls took.
CHILD = r"""
import json, os, resource, sys, time
what, source, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
import torch, numpy as np
import tensorfs

def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))

result = {}
if what == "load":
    before = rss()
    started = time.monotonic()
    tensors = tensorfs.load(source, framework="pt", **options)
    result["seconds"] = time.monotonic() - started
    result["bytes"] = sum(t.numel() * t.element_size() for t in tensors.values())
    result["peak_growth"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
elif what == "get_tensor_sums":
    started = time.monotonic()
    total = 0.0
    with tensorfs.safe_open(source, framework="pt") as f:
        for name in f.keys():
            total += float(f.get_tensor(name).sum())
    result["seconds"] = time.monotonic() - started
elif what == "frombuffer_sums":
    started = time.monotonic()
    with open(source, "rb") as f:
        data = bytearray(f.read())
    size = int.from_bytes(data[:8], "little")
    header = json.loads(bytes(data[8:8 + size]))
    everything = torch.frombuffer(data, dtype=torch.uint8)
    total = 0.0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = (8 + size + offset for offset in entry["data_offsets"])
        total += float(everything[begin:end].view(torch.bfloat16).sum())
    result["seconds"] = time.monotonic() - started
elif what == "get_tensor_f32":
    started = time.monotonic()
    with tensorfs.safe_open(source, framework="np", dtype="f32") as f:
        for name in f.keys():
            values = f.get_tensor(name)
            del values
    result["seconds"] = time.monotonic() - started
print(json.dumps(result))
"""


# Writes argv[1] bytes into new memory, mapped and filled as the module maps its arrays (array_memory.cpp), and prints
# the seconds as CHILD does; without torch or tensorfs, so that it can run beside a baseline at no cost of its own.
NEW_MEMORY = r"""
import json, mmap, sys, time
import numpy as np
memory = mmap.mmap(-1, int(sys.argv[1]))
started = time.monotonic()
memory.madvise(mmap.MADV_NOHUGEPAGE)
memory.madvise(23)  # MADV_POPULATE_WRITE
np.frombuffer(memory, dtype=np.uint8).fill(1)
print(json.dumps({"seconds": time.monotonic() - started}))
"""


class Python:
    def __init__(self, bench):
        self.bench = bench
        self.env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(bench.tensorfs), "python"))

    def child(self, what, source, env=None, **options):
        bench_load.quiet_machine()
        out = subprocess.run(["/usr/bin/python3", "-c", CHILD, what, source, json.dumps(options)], check=True,
                             capture_output=True, text=True, env=dict(self.env, **(env or {}))).stdout
        return json.loads(out)

    def new_memory_seconds(self, size):
        bench_load.quiet_machine()
        return json.loads(subprocess.run(self.new_memory_command(size), check=True, capture_output=True,
                                         text=True).stdout)["seconds"]

    @staticmethod
    def new_memory_command(size):
        return ["/usr/bin/python3", "-c", NEW_MEMORY, str(size)]

    def cold_load(self, url, env=None, **options):
        cache = tempfile.mkdtemp(prefix="cache-", dir=self.bench.work)
        try:
            return self.child("load", url, dict(env or {}, XDG_CACHE_HOME=cache), **options)
        finally:
            shutil.rmtree(cache)


def cat_f32_seconds(bench, source, names):
    bench_load.quiet_machine()
    started = time.monotonic()
    for name in names:
        with open(os.devnull, "wb") as null:
            subprocess.run([bench.tensorfs, "cat", source, name, "--f32"], check=True, stdout=null)
    return time.monotonic() - started


def run(bench, scale):
    bench_load.ensure_tools()
    os.environ.setdefault("TENSORFS_BIN", bench.tensorfs)
    os.environ.setdefault("TENSORFS_TEST_DATA", os.path.join(bench_load.ROOT, "tests", "data"))
    os.environ.update({"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
    sys.path.insert(0, os.path.join(bench_load.ROOT, "tests", "integration"))
    import remote_servers as rs
    folder = tempfile.mkdtemp(prefix="python-", dir=bench.work)
    model, _ = bench_load.write_model(folder, scale)
    size = os.path.getsize(model)
    q4k = os.path.join(folder, "q4_k.gguf")
    write_gguf_model(q4k, "Q4_K", Q4_K_TENSORS, scale, np.random.default_rng(29))
    q4k_names = [f"blk.{i}.ffn_up.weight" for i in range(Q4_K_TENSORS)]
    server = bench_load.Nginx(folder, rs)
    load = bench_load.Load(bench, rs, model, [])
    python = Python(bench)
    s3 = None
    capped = f"http://127.0.0.1:{server.capped}/model.safetensors"
    uncapped = f"http://127.0.0.1:{server.uncapped}/model.safetensors"
    rows = {key: [] for key in ("capped", "uncapped", "s3", "local", "q4k", "rss", "uncapped_no_disk", "s3_no_disk",
                                 "new_memory", "s3_beside_new_memory")}
    try:
        s3 = bench_load.S3Store(model)
        bench.warm(model)
        bench.warm(q4k)
        for _ in range(bench.rounds):
            aria = load.aria2c(capped)
            loaded = python.cold_load(capped)
            rows["capped"].append((aria, loaded["seconds"]))
            rows["rss"].append((loaded["peak_growth"], size + BUDGET))
            one_curl = load.curl(uncapped)
            rows["uncapped"].append((one_curl, python.cold_load(uncapped)["seconds"]))
            rows["uncapped_no_disk"].append((one_curl, python.cold_load(uncapped, disk_cache_size=0)["seconds"]))
            rows["new_memory"].append((one_curl, python.new_memory_seconds(size)))
            s3_curl = s3.parallel_curl_seconds(size)
            rows["s3"].append((s3_curl, python.cold_load(s3.url, s3.env)["seconds"]))
            rows["s3_no_disk"].append((s3_curl, python.cold_load(s3.url, s3.env, disk_cache_size=0)["seconds"]))
            rows["s3_beside_new_memory"].append((s3_curl,
                                                 s3.parallel_curl_seconds(size, [python.new_memory_command(size)])))
            rows["local"].append((python.child("frombuffer_sums", model)["seconds"],
                                  python.child("get_tensor_sums", model)["seconds"]))
            rows["q4k"].append((cat_f32_seconds(bench, q4k, q4k_names), python.child("get_tensor_f32", q4k)["seconds"]))
    finally:
        if s3 is not None:
            s3.stop()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)

    gib = size / (1 << 30)

    def speed_row(what, key, target, nbytes):
        bench.row(what, [(nbytes / t, nbytes / b) for b, t in rows[key]], "GB/s", target, 1e9)

    speed_row(f"P1. tensorfs.load ({gib:.2f} GiB BF16), {bench_load.CAP}/conn / aria2c -x16", "capped", ">= 1.0", size)
    speed_row("P2. tensorfs.load, uncapped server / one curl", "uncapped", ">= 0.8", size)
    speed_row(f"P3. tensorfs.load from S3 / {bench_load.S3_RANGES} curl --aws-sigv4 ranges at once", "s3", ">= 0.9",
              size)
    speed_row("P4. local: get_tensor (pt) + sum of each / torch.frombuffer(read()) + the same sums", "local",
              ">= 1.0", size)
    f32_bytes = Q4_K_TENSORS * 16384 * int(4096 * scale) * 4
    speed_row("P5. Q4_K GGUF, get_tensor as float32 / tensorfs cat --f32 of each tensor", "q4k", ">= 0.9",
              f32_bytes)
    bench.row("P6. peak RSS of P1's load() / model size + cache budget", rows["rss"], "MiB", "<= 1.0", MIB)
    # No targets: what bounds P2 and P3.
    speed_row("P2x. tensorfs.load, uncapped, no disk cache / one curl", "uncapped_no_disk", "", size)
    speed_row("P3x. tensorfs.load from S3, no disk cache / the same curl ranges", "s3_no_disk", "", size)
    speed_row("P3m. the same curl while the model's size is written into new memory beside it / the curl alone",
              "s3_beside_new_memory", "", size)
    speed_row("P2m. the model's size written into new memory as the module's arrays are / one curl", "new_memory", "",
              size)
