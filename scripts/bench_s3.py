"""The S3 figures of scripts/bench, each next to its baseline measured in the same round:

11. raw sequential first pass from an S3 store (fresh disk cache) / `curl --aws-sigv4` fetching the same byte
    range from the same store, signed the same way
12. `tensorfs mount` of a 200-shard, 100,000-tensor index by its prefix (a ListObjectsV2 page, the index, 200
    shard headers) / the same folder mounted from the local disk

The store is the test suite's (tests/integration/s3_servers.py): s3rver behind the front that verifies every
request's AWS Signature Version 4, on 127.0.0.1. The front is Node.js, slower than nginx: both sides of each ratio
go through it."""
import os
import shutil
import subprocess
import tempfile
import time

import bench_remote

BUCKET = "bench"
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def sigv4_config(server, account, key, offset, nbytes, bucket=BUCKET):
    """curl's --config (given on stdin, so that the keys are not in argv) for `curl --aws-sigv4` of bytes
    [offset, offset + nbytes) of `key`."""
    return "\n".join([
        'aws-sigv4 = "aws:amz:us-east-1:s3"',
        f'user = "{account["access_key"]}:{account["secret_key"]}"',
        f'header = "x-amz-content-sha256: {EMPTY_SHA256}"',
        f'range = "{offset}-{offset + nbytes - 1}"',
        f'url = "{server.endpoint}/{bucket}/{key}"',
        'output = "/dev/null"', "silent", "fail"]) + "\n"


def curl_rate(server, account, key, offset, nbytes):
    """`curl --aws-sigv4` of bytes [offset, offset + nbytes) of `key`."""
    config = sigv4_config(server, account, key, offset, nbytes)
    started = time.monotonic()
    subprocess.run(["curl", "--config", "-"], input=config, text=True, check=True)
    return nbytes / (time.monotonic() - started)


def unmount_and_wait(bench, mountpoint):
    """Unmounts and waits for the daemon to end: it writes the blocks it still holds to the disk cache first."""
    pid = bench.daemon_pid(mountpoint)
    bench.unmount(mountpoint)
    deadline = time.monotonic() + 120
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)


def upload(server, path, key):
    with open(path, "rb") as f:
        server.put(BUCKET, key, f.read())


def run(bench, big, big_tensor, shards):
    """big: a safetensors file holding `big_tensor` (512 MiB); shards: a folder with a 200-shard index."""
    bench_remote.servers(bench.tensorfs)
    import s3_servers
    server = s3_servers.S3Server()
    saved_environment = dict(os.environ)
    try:
        server.create_bucket(BUCKET)
        upload(server, big, "big.safetensors")
        for name in os.listdir(shards):
            upload(server, os.path.join(shards, name), f"moe-small/{name}")
        os.environ.clear()
        os.environ.update(server.env(NO_PROXY="127.0.0.1", no_proxy="127.0.0.1"))
        source = f"s3://{BUCKET}/big.safetensors"
        meta = bench.source_range(big, big_tensor)

        firsts, mounts = [], []
        for _ in range(bench.rounds):
            cache = tempfile.mkdtemp(prefix="cache-", dir=bench.work)
            mountpoint = bench.mount(source, "--cache-dir", cache)
            first = bench.timed("seq", os.path.join(mountpoint, big_tensor, "raw"))
            unmount_and_wait(bench, mountpoint)
            shutil.rmtree(cache)
            firsts.append((first, curl_rate(server, s3_servers.ACCOUNT, "big.safetensors", meta["offset"],
                                            meta["nbytes"])))

            local = bench_remote.mount_seconds(bench, shards)
            mounts.append((bench_remote.mount_seconds(bench, f"s3://{BUCKET}/moe-small/", "--disk-cache-size", "0"),
                           local))

        size = meta["nbytes"] // (1 << 20)
        bench.row(f"11. S3 raw {size} MiB sequential first pass / curl --aws-sigv4 of the same range", firsts, "GB/s",
                  None, 1e9)
        bench.row("12. mount of a 200-shard index by its S3 prefix / from the local disk", mounts, "s", "< 3 s")
    finally:
        os.environ.clear()
        os.environ.update(saved_environment)
        server.stop()
