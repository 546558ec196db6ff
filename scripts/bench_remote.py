"""The remote figures of scripts/bench, each next to its baseline measured in the same round:

7. raw sequential first pass over HTTP (fresh disk cache) / `curl` fetching the same byte range from the same nginx
8. the same through a proxy that adds 25 ms to every answer / through the same proxy without the delay
9. raw sequential read from a warm disk cache (remount) / the same file mounted from the local disk (page cache)
10. `tensorfs mount` of a 200-shard, 100,000-tensor index over HTTP (direct, and with 25 ms per answer) / the same
   index mounted from the local disk

The servers are the test suite's (tests/integration/remote_servers.py): nginx on 127.0.0.1 and the fault proxy."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20
DELAY = 0.025


def servers(tensorfs):
    """tests/integration/remote_servers, which reads TENSORFS_BIN and TENSORFS_TEST_DATA when imported."""
    os.environ.setdefault("TENSORFS_BIN", tensorfs)
    os.environ.setdefault("TENSORFS_TEST_DATA", os.path.join(ROOT, "tests", "data"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    import remote_servers
    return remote_servers


def curl_rate(url, offset, nbytes):
    started = time.monotonic()
    subprocess.run(["curl", "-sf", "-o", "/dev/null", "-r", f"{offset}-{offset + nbytes - 1}", url], check=True,
                   env=dict(os.environ, NO_PROXY="127.0.0.1", no_proxy="127.0.0.1"))
    return nbytes / (time.monotonic() - started)


def mount_seconds(bench, source, *options):
    path = tempfile.mkdtemp(prefix="mnt-", dir=bench.work)
    started = time.monotonic()
    subprocess.run([bench.tensorfs, "mount", source, path, *options], check=True)
    elapsed = time.monotonic() - started
    bench.unmount(path)
    return elapsed


def run(bench, big, big_tensor, shards):
    """big: a safetensors file holding `big_tensor` (512 MiB); shards: a folder with a 200-shard index."""
    rs = servers(bench.tensorfs)
    os.environ.update({"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
    folder = os.path.dirname(big)
    server = rs.Nginx(folder)
    proxy = rs.FaultProxy(server.http)
    try:
        name = os.path.basename(big)
        direct = f"http://127.0.0.1:{server.http}/{name}"
        through_proxy = f"http://127.0.0.1:{proxy.port}/{name}"
        index = f"{os.path.basename(shards)}/model.safetensors.index.json"
        meta = bench.source_range(big, big_tensor)

        def first_pass(url, cache):
            mountpoint = bench.mount(url, "--cache-dir", cache)
            rate = bench.timed("seq", os.path.join(mountpoint, big_tensor, "raw"))
            bench.unmount(mountpoint)
            return rate

        firsts, delayed, warm, mounts, delayed_mounts = [], [], [], [], []
        bench.warm(big)
        for _ in range(bench.rounds):
            cache = tempfile.mkdtemp(prefix="cache-", dir=bench.work)
            firsts.append((first_pass(direct, cache), curl_rate(direct, meta["offset"], meta["nbytes"])))

            mountpoint = bench.mount(direct, "--cache-dir", cache)
            from_cache = bench.timed("seq", os.path.join(mountpoint, big_tensor, "raw"))
            bench.unmount(mountpoint)
            mountpoint = bench.mount(big)
            local = bench.timed("seq", os.path.join(mountpoint, big_tensor, "raw"))
            bench.unmount(mountpoint)
            warm.append((from_cache, local))
            shutil.rmtree(cache)

            proxy.delay = 0
            undelayed = first_pass(through_proxy, tempfile.mkdtemp(prefix="cache-", dir=bench.work))
            proxy.delay = DELAY
            delayed.append((first_pass(through_proxy, tempfile.mkdtemp(prefix="cache-", dir=bench.work)), undelayed))

            local_mount = mount_seconds(bench, os.path.join(shards, "model.safetensors.index.json"))
            no_cache = ("--disk-cache-size", "0")
            mounts.append((mount_seconds(bench, f"http://127.0.0.1:{server.http}/{index}", *no_cache), local_mount))
            delayed_mounts.append((mount_seconds(bench, f"http://127.0.0.1:{proxy.port}/{index}", *no_cache),
                                   local_mount))
            proxy.delay = 0
            for entry in os.listdir(bench.work):
                if entry.startswith("cache-"):
                    shutil.rmtree(os.path.join(bench.work, entry))

        size = meta["nbytes"] // MIB
        bench.row(f"7. HTTP raw {size} MiB sequential first pass / curl of the same range", firsts, "GB/s", None, 1e9)
        bench.row("8. the same over a link adding 25 ms per answer / without the delay", delayed, "GB/s", ">= 0.5",
                  1e9)
        bench.row("9. raw from a warm disk cache (remount) / local-file mount", warm, "GB/s", None, 1e9)
        bench.row("10. mount of a 200-shard index over HTTP / from the local disk", mounts, "s", "< 3 s")
        bench.row("10. the same over a link adding 25 ms per answer / from the local disk", delayed_mounts, "s",
                  "< 3 s")
    finally:
        proxy.stop()
        server.stop()
