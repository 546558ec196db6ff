"""The `load` figures of scripts/bench (issue 20): whole-model loads over HTTP, each next to its baseline measured in
the same round, on a model of 64 BF16 tensors of 16 MiB (1 GiB at --scale 1) served by nginx on 127.0.0.1:

- cold `cat MOUNT/model.safetensors`, server capped at 100 MB/s per connection / `aria2c -x16 -s16 -k8M` of it
- cold, every tensor's raw in order, capped / the same aria2c figure
- cold `cat MOUNT/source/model.safetensors` (the source file itself), capped / the same aria2c figure
- cold cat, uncapped server / one `curl` of the file
- cold cat through the fault proxy adding 25 ms per answer / through the same proxy without the delay
- warm (a new mount on a disk cache that `tensorfs prefetch` filled, not timed) / a mount of the local file, first
  pass (the file in the page cache)
- `tensorfs prefetch` of the model, capped / aria2c
- cold cat, capped / `rclone mount --vfs-cache-mode full` of the same server (cold), and the same warm
- random 64-byte touches of a cold mount (numpy.memmap of raw): bytes fetched per touch, the mount's own fetch of
  the header included (from the mount's stats)
- the daemon's peak RSS during the cold cat / cache_size + 64 MiB
- a second `tensorfs prefetch` of the cached model: the bytes of the bodies the server sent it (nginx's log) / the
  model's bytes
- warm from the disk: a new mount on a disk cache that `tensorfs prefetch` filled, after `echo 3 >
  /proc/sys/vm/drop_caches` (a node that restarted) / `cat` of the local file after the same drop
- the same loads back to back, without waiting for freed memory to settle before each (as a user runs one load
  after another): the capped cold cat, every raw, the source file, and aria2c before them
- how cost grows: a model of 1,024 tensors of 16 MiB (16 GiB at --scale 1), cold from the capped server: its time
  over the 1 GiB model's (the same load, L1), and the daemon's peak RSS during it / cache_size + 64 MiB; beside it
  its floor: the 16 GiB written to a new file with no network, over the same 1 GiB load's time
- cold cat of the model from an S3 store (the tests' s3rver behind its SigV4-checking front, uncapped) / 16
  `curl --aws-sigv4` of consecutive ranges of it at once (the parallel-range loader aria2c is for HTTP, which
  cannot sign)
- beside them, without targets, what bounds them: the capped and uncapped cold cats and the S3 one again without the
  disk cache (`--disk-cache-size 0`), the S3 row's curl while the model's bytes are written to a new file beside it
  (what a cold load also does, on the same two cores), the mount of the local file against the uncapped curl
  (FUSE's own ceiling), the uncapped curl and the S3 row's curl each while the mount of the local file is read
  beside it (the two halves of a cold cat's work, receiving and serving through FUSE, at once), and the machine's
  cost of new page cache: the model's bytes written to a new file against aria2c, and that write on memory just
  freed against the same write on memory the machine had handed back to its host (quiet_machine)

aria2c and rclone are Debian's (`apt-get install aria2 rclone`), installed here when missing: only this benchmark
needs them."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20
DELAY = 0.025
CAP = "100m"  # nginx's limit_rate per connection (bytes: 100 MiB/s)
CACHE_SIZE = 256 * MIB  # the default cache_size, which the RSS row is measured against
TOUCHES = 64
S3_BUCKET = "load"
S3_RANGES = 16  # parallel signed range requests of the S3 row's baseline
# The range a mount's read-ahead asks for by default: its window's limit (readahead=, 64M) over its connections
# (max_connections=, 16), src/remote/read_ahead.cpp.
MOUNT_RANGE = 4 * MIB
SCALE_TENSORS = 1024  # the scale row's model: 1,024 tensors of 16 MiB (16 GiB at --scale 1)
NO_DISK_CACHE = ("--disk-cache-size", "0")


def ensure_tools():
    missing = [package for tool, package in (("aria2c", "aria2"), ("rclone", "rclone")) if not shutil.which(tool)]
    if missing:
        subprocess.run(["apt-get", "install", "-y", *missing], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


def write_model(folder, scale, tensors=64, file_name="model.safetensors", columns=None):
    """model.safetensors: `tensors` BF16 tensors of 16 MiB x scale, random bits (a few random 16 MiB patterns, so that
    a 16 GiB model is written at the disk's speed, not numpy's); each of one dimension, or of rows of `columns`."""
    row_bytes = 2 * (columns or 1)
    tensor_bytes = max(MIB, int(16 * MIB * scale)) // row_bytes * row_bytes
    shape = [tensor_bytes // row_bytes, columns] if columns else [tensor_bytes // 2]
    names = [f"layers.{i}.weight" for i in range(tensors)]
    header, offset = {}, 0
    for name in names:
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + tensor_bytes]}
        offset += tensor_bytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path = os.path.join(folder, file_name)
    rng = np.random.default_rng(20)
    patterns = [rng.integers(0, 256, tensor_bytes, dtype=np.uint8).tobytes() for _ in range(min(tensors, 64))]
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for i in range(len(names)):
            f.write(patterns[i % len(patterns)])
    return path, names


class Nginx:
    """nginx serving `folder` on two ports: capped (limit_rate per connection) and uncapped; autoindex for rclone."""

    def __init__(self, folder, rs):
        self.folder = tempfile.mkdtemp(prefix="nginx-load-")
        self.capped, self.uncapped = rs.free_port(), rs.free_port()
        user = "user root;" if os.geteuid() == 0 else ""
        self.log = os.path.join(self.folder, "capped.log")
        server = "server {{ listen 127.0.0.1:{port}; root {root}; autoindex on; {limit} }}"
        config = f"""{user}
worker_processes 2;
daemon off;
pid {self.folder}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    default_type application/octet-stream;
    sendfile on;
    keepalive_requests 100000;
    access_log off;
    log_format bytes '$status $body_bytes_sent';
    client_body_temp_path {self.folder}/body;
    {server.format(port=self.capped, root=folder, limit=f"limit_rate {CAP}; access_log {self.log} bytes;")}
    {server.format(port=self.uncapped, root=folder, limit="")}
}}
"""
        with open(os.path.join(self.folder, "nginx.conf"), "w") as f:
            f.write(config)
        self.process = subprocess.Popen([rs.NGINX, "-p", self.folder, "-c", "nginx.conf", "-e", "error.log"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not rs.wait_until(lambda: rs.port_answers(self.capped) and rs.port_answers(self.uncapped), 30):
            raise RuntimeError("nginx did not start")

    def stop(self):
        self.process.send_signal(signal.SIGQUIT)
        self.process.wait(timeout=60)
        shutil.rmtree(self.folder, ignore_errors=True)

    def body_bytes_logged(self):
        """(requests, body bytes) of the capped server so far (nginx logs a request once its answer is sent)."""
        try:
            with open(self.log) as f:
                lines = f.read().split()
        except FileNotFoundError:
            return 0, 0
        return len(lines) // 2, sum(int(n) for n in lines[1::2])


REPORTED_MEMORY = "/sys/module/page_reporting/parameters/reported_kib"


def settle_memory(still=3.0, bound=30.0):
    """Waits until a virtual machine has handed the memory freed so far back to its host (Linux free page reporting,
    which a balloon device enables): until its count of reported memory has not moved for `still` seconds. The
    first touch of such memory costs the guest about ten times that of a page just freed (row L1n), so without this
    a row's time would depend on how long ago the row before it freed its own memory. After it, every row pays for
    all the memory it takes. Machines without free page reporting return at once.

    The kernel starts reporting 2 s after memory is freed and goes on in passes 2 s apart (PAGE_REPORTING_DELAY),
    so the count stands still for up to 2 s before and between passes: a `still` of 1 s returned before the first
    pass in 2 of 3 tries here (a 1 GiB write right after ran at 6.8 GB/s instead of 0.6), 3 s never did."""
    def reported():
        try:
            with open(REPORTED_MEMORY) as f:
                return int(f.read())
        except (OSError, ValueError):
            return None

    last = reported()
    if last is None:
        return
    started = unchanged_since = time.monotonic()
    while time.monotonic() - started < bound and time.monotonic() - unchanged_since < still:
        time.sleep(0.1)
        now = reported()
        if now != last:
            last, unchanged_since = now, time.monotonic()


def write_new_file(path, size):
    """Writes `size` bytes to the new file `path` in 8 MiB writes, as aria2c does and as the disk cache stores blocks,
    and deletes it."""
    chunk = np.random.default_rng(1).integers(0, 256, 8 * MIB, dtype=np.uint8).tobytes()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for offset in range(0, size, len(chunk)):
            os.pwrite(fd, chunk[:size - offset], offset)
    finally:
        os.close(fd)
        os.remove(path)


def quiet_machine():
    """Writes out what earlier rows left dirty (gigabytes of disk cache, aria2c's and rclone's files), so that the
    kernel's write-back of one row does not land in the time of the next, and lets the memory they freed settle:
    each row's own writes and memory still count."""
    os.sync()
    settle_memory()


# Whether each timed row waits for the machine to settle first (quiet_machine); the back-to-back rows do not.
SETTLE = True


def seconds_of(command, **kwargs):
    if SETTLE:
        quiet_machine()
    started = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, **kwargs)
    return time.monotonic() - started


def seconds_together(*commands):
    """Seconds until all `commands`, started at once, have ended (their output discarded)."""
    if SETTLE:
        quiet_machine()
    started = time.monotonic()
    running = [subprocess.Popen(command, stdout=subprocess.DEVNULL) for command in commands]
    failed = [command for command, process in zip(commands, running) if process.wait() != 0]
    if failed:
        raise RuntimeError(f"{failed[0]} failed")
    return time.monotonic() - started


def cat_seconds(path):
    return seconds_of(["cat", path])


def drop_caches():
    """What a restarted node's page cache holds: nothing (root only; dirty pages are written first)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


class Load:
    def __init__(self, bench, rs, model, names):
        self.bench, self.rs, self.model, self.names = bench, rs, model, names
        self.size = os.path.getsize(model)

    def cache(self):
        return tempfile.mkdtemp(prefix="cache-", dir=self.bench.work)

    def mount(self, url, cache, *options):
        return self.bench.mount(url, "--cache-dir", cache, *options)

    def unmount(self, mountpoint):
        """Unmounts and waits for the daemon to end: it writes the blocks still queued for the disk cache first."""
        pid = self.bench.daemon_pid(mountpoint)
        self.bench.unmount(mountpoint)
        self.rs.wait_until(lambda: not os.path.exists(f"/proc/{pid}"))

    def cold_cat(self, url, *options):
        cache = self.cache()
        mountpoint = self.mount(url, cache, *options)
        elapsed = cat_seconds(os.path.join(mountpoint, "model.safetensors"))
        self.unmount(mountpoint)
        return elapsed, cache

    def back_to_back(self, url):
        """Seconds of aria2c, a cold cat of model.safetensors, every raw in order and a cold cat of the source file,
        one right after the other as a user would run them: no waiting for freed memory to settle, and every output
        kept (aria2c's file, each mount's disk cache) until the last one ends."""
        global SETTLE
        kept = [tempfile.mkdtemp(prefix="b2b-", dir=self.bench.work) for _ in range(4)]
        SETTLE = False
        try:
            aria = seconds_of(["aria2c", "-q", "-x16", "-s16", "-k8M", "--file-allocation=none", "-d", kept[0],
                               "-o", "model.safetensors", url])
            loads = []
            for cache, paths in ((kept[1], ["model.safetensors"]), (kept[2], [f"{n}/raw" for n in self.names]),
                                 (kept[3], ["source/model.safetensors"])):
                mountpoint = self.mount(url, cache)
                loads.append(seconds_of(["cat", *[os.path.join(mountpoint, path) for path in paths]]))
                self.unmount(mountpoint)
        finally:
            SETTLE = True
            for folder in kept:
                shutil.rmtree(folder, ignore_errors=True)
        return aria, loads

    def cold_source_file(self, url):
        """A cold cat of the source's own file as the mount shows it in source/ (its bytes, not the re-export)."""
        cache = self.cache()
        mountpoint = self.mount(url, cache)
        elapsed = cat_seconds(os.path.join(mountpoint, "source", "model.safetensors"))
        self.unmount(mountpoint)
        shutil.rmtree(cache)
        return elapsed

    def cold_raws(self, url):
        cache = self.cache()
        mountpoint = self.mount(url, cache)
        elapsed = seconds_of(["cat", *[os.path.join(mountpoint, name, "raw") for name in self.names]])
        self.unmount(mountpoint)
        shutil.rmtree(cache)
        return elapsed

    def aria2c(self, url):
        out = tempfile.mkdtemp(prefix="aria2-", dir=self.bench.work)
        elapsed = seconds_of(["aria2c", "-q", "-x16", "-s16", "-k8M", "--file-allocation=none", "-d", out,
                              "-o", "model.safetensors", url])
        shutil.rmtree(out)
        return elapsed

    def new_file_seconds(self):
        """Seconds to write the model's size to a new file (write_new_file_seconds): first after quiet_machine(),
        then again at once, on the memory the first file freed. Returns both."""
        quiet_machine()
        on_settled_memory = self.write_new_file_seconds(self.size)
        return on_settled_memory, self.write_new_file_seconds(self.size)

    def new_file_command(self):
        """A command that writes the model's size to a new file as write_new_file_seconds does."""
        return ["/usr/bin/python3", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import bench_load; "
                "bench_load.write_new_file(sys.argv[2], int(sys.argv[3]))", os.path.dirname(os.path.abspath(__file__)),
                os.path.join(self.bench.work, "new-file-beside"), str(self.size)]

    def write_new_file_seconds(self, size):
        """Seconds to write `size` bytes to a new file in the bench's folder (write_new_file), with nothing else
        running."""
        started = time.monotonic()
        write_new_file(os.path.join(self.bench.work, "new-file"), size)
        return time.monotonic() - started

    def curl(self, url):
        return seconds_of(["curl", "-sf", "-o", "/dev/null", url])

    def local_mount_cat(self):
        """A new mount of the local file and the command that reads it whole through FUSE (L3x's first pass), for a
        floor row: the caller unmounts it."""
        mountpoint = self.bench.mount(self.model)
        return mountpoint, ["cat", os.path.join(mountpoint, "model.safetensors")]

    def curl_beside_fuse(self, url, cache_write=False):
        """Seconds until one curl of `url` and a cat of a new mount of the local file, started together, have both
        ended: a cold cat's two halves of work (receiving the bytes, serving them through FUSE) on the same cores,
        with nothing of tensorfs's own between them. With `cache_write`, the model's bytes are also written to a new
        file at the same time: the third part of a cold cat with the disk cache (its file's new page cache)."""
        mountpoint, cat = self.local_mount_cat()
        beside = [self.new_file_command()] if cache_write else []
        try:
            return seconds_together(["curl", "-sf", "-o", "/dev/null", url], cat, *beside)
        finally:
            self.unmount(mountpoint)

    def rclone(self, port):
        """Cold, then warm (cat again on the same mount, from rclone's own cache) seconds of a whole-file cat."""
        mountpoint = tempfile.mkdtemp(prefix="rclone-", dir=self.bench.work)
        cache = self.cache()
        process = subprocess.Popen(["rclone", "mount", ":http:", mountpoint, "--http-url", f"http://127.0.0.1:{port}/",
                                    "--vfs-cache-mode", "full", "--cache-dir", cache, "--read-only"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            path = os.path.join(mountpoint, "model.safetensors")
            if not self.rs.wait_until(lambda: os.path.exists(path), 60):
                raise RuntimeError("rclone mount did not come up")
            cold = cat_seconds(path)
            warm = cat_seconds(path)
        finally:
            subprocess.run(["fusermount3", "-u", mountpoint])
            process.wait(timeout=60)
            os.rmdir(mountpoint)
            shutil.rmtree(cache, ignore_errors=True)
        return cold, warm

    def peak_rss_of_cold_cat(self, url):
        """The daemon's peak RSS during a cold cat of model.safetensors, and the cat's seconds."""
        cache = self.cache()
        mountpoint = self.mount(url, cache)
        pid = self.bench.daemon_pid(mountpoint)
        peak, done = [0], threading.Event()

        def sample():
            while not done.is_set():
                try:
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                peak[0] = max(peak[0], int(line.split()[1]) * 1024)
                except OSError:
                    return
                time.sleep(0.01)

        sampler = threading.Thread(target=sample)
        sampler.start()
        elapsed = cat_seconds(os.path.join(mountpoint, "model.safetensors"))
        done.set()
        sampler.join()
        self.unmount(mountpoint)
        shutil.rmtree(cache)
        return peak[0], elapsed

    def fetched_per_touch(self, url):
        """Bytes fetched per random touch of a cold mount, the header the mount fetched included."""
        cache = self.cache()
        mountpoint = self.mount(url, cache)
        stats = os.path.join(mountpoint, ".tensorfs", "stats.json")
        rng = random.Random(1)
        for _ in range(TOUCHES):
            name = rng.choice(self.names)
            view = np.memmap(os.path.join(mountpoint, name, "raw"), dtype=np.uint8, mode="r")
            int(view[rng.randrange(0, len(view) - 64):][:64].sum())
            del view
        fetched = json.load(open(stats))["remote"]["bytes_fetched"]
        self.unmount(mountpoint)
        shutil.rmtree(cache)
        return fetched / TOUCHES

    def prefetch_command(self, url, cache):
        return [self.bench.tensorfs, "prefetch", url, "--cache-dir", cache, "--quiet"]

    def filled_cache(self, url):
        """A new disk cache holding the whole model, filled by `tensorfs prefetch`."""
        cache = self.cache()
        subprocess.run(self.prefetch_command(url, cache), check=True, stdout=subprocess.DEVNULL)
        return cache

    def prefetch(self, url):
        cache = self.cache()
        elapsed = seconds_of(self.prefetch_command(url, cache))
        shutil.rmtree(cache)
        return elapsed

    def second_prefetch_bytes(self, url, server, cache):
        """Body bytes the capped server sent a second `tensorfs prefetch` of a cache that holds the model."""
        requests, before = server.body_bytes_logged()
        subprocess.run(self.prefetch_command(url, cache), check=True, stdout=subprocess.DEVNULL)
        # It asks at least whether the file changed; nginx logs a request once its answer is sent, a moment after
        # the client had it.
        deadline = time.monotonic() + 30
        while server.body_bytes_logged()[0] == requests and time.monotonic() < deadline:
            time.sleep(0.05)
        return server.body_bytes_logged()[1] - before

    def warm_from_disk(self, url, cache):
        """Seconds of a cat of model.safetensors through a new mount on `cache` (filled), and of a cat of the local
        file, each after dropping every page cache (as on a node that restarted)."""
        mountpoint = self.mount(url, cache)
        drop_caches()
        warm = seconds_of(["cat", os.path.join(mountpoint, "model.safetensors")])
        self.unmount(mountpoint)
        drop_caches()
        local = seconds_of(["cat", self.model])
        return warm, local


class S3Store:
    """The tests' S3 store holding the model; `env` is the environment in which tensorfs and curl reach it."""

    def __init__(self, model):
        import s3_servers
        self.account = s3_servers.ACCOUNT
        self.server = s3_servers.S3Server()
        self.url = f"s3://{S3_BUCKET}/model.safetensors"
        self.env = self.server.env(NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
        try:
            self.server.create_bucket(S3_BUCKET)
            with open(model, "rb") as f:
                self.server.put(S3_BUCKET, "model.safetensors", f.read())
            # Not timed: the store's first pass over an object ran at about half the speed of the next ones here,
            # and would count in whichever row came first.
            self.parallel_curl_seconds(os.path.getsize(model))
        except BaseException:
            self.server.stop()
            raise

    def parallel_curl_seconds(self, size, beside=(), part=None):
        """S3_RANGES `curl --aws-sigv4` of consecutive ranges covering the object, all at once, in one curl process
        (16 processes, as before, took 0.2-1 s longer for 1 GiB here: their own starts). With `beside`, commands run
        at the same time: the seconds until all are done. With `part`, ranges of that many bytes instead, S3_RANGES
        of them at a time."""
        import bench_s3
        part = part or -(-size // S3_RANGES)
        # One config of every range, `next` between them.
        config = "next\n".join(bench_s3.sigv4_config(self.server, self.account, "model.safetensors", offset,
                                                     min(part, size - offset), S3_BUCKET)
                               for offset in range(0, size, part))
        quiet_machine()
        started = time.monotonic()
        others = [subprocess.Popen(command, stdout=subprocess.DEVNULL) for command in beside]
        try:
            subprocess.run(["curl", "--no-progress-meter", "--parallel", "--parallel-max", str(S3_RANGES),
                            "--config", "-"], input=config, text=True, env=self.env, check=True)
        finally:
            failed = [command for command, other in zip(beside, others) if other.wait() != 0]
            if failed:
                raise RuntimeError(f"{failed[0]} failed")
        return time.monotonic() - started

    def cold_cat_seconds(self, load, *options):
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)
        try:
            elapsed, cache = load.cold_cat(self.url, *options)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        shutil.rmtree(cache)
        return elapsed

    def stop(self):
        self.server.stop()


def run(bench, scale):
    ensure_tools()
    os.environ.setdefault("TENSORFS_BIN", bench.tensorfs)
    os.environ.setdefault("TENSORFS_TEST_DATA", os.path.join(ROOT, "tests", "data"))
    os.environ.update({"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    import remote_servers as rs
    folder = tempfile.mkdtemp(prefix="load-", dir=bench.work)
    model, names = write_model(folder, scale)
    server = Nginx(folder, rs)
    proxy = rs.FaultProxy(server.uncapped)
    load = Load(bench, rs, model, names)
    s3 = None
    capped = f"http://127.0.0.1:{server.capped}/model.safetensors"
    uncapped = f"http://127.0.0.1:{server.uncapped}/model.safetensors"
    through_proxy = f"http://127.0.0.1:{proxy.port}/model.safetensors"
    rows = {key: [] for key in ("cat", "raws", "source", "uncapped", "delay", "warm", "prefetch", "rclone",
                                "rclone_warm", "touch", "rss", "s3", "cat_no_disk", "local_curl", "uncapped_no_disk",
                                "s3_no_disk", "new_file", "reused_memory", "second_prefetch", "warm_disk", "cat_b2b",
                                "raws_b2b", "source_b2b", "s3_beside_new_file", "curl_beside_fuse",
                                "s3_beside_fuse", "s3_mount_ranges", "uncapped_floor", "s3_floor")}
    try:
        s3 = S3Store(model)
        bench.warm(model)
        for _ in range(bench.rounds):
            aria = load.aria2c(capped)
            cold, cache = load.cold_cat(capped)
            shutil.rmtree(cache)
            rows["cat"].append((aria, cold))
            rows["raws"].append((aria, load.cold_raws(capped)))
            rows["source"].append((aria, load.cold_source_file(capped)))
            # The warm row's cache is filled apart (not timed), so that no cold row runs while another's cache holds
            # a gigabyte of page cache: memory the next row then has to take from what the host was handed back.
            cache = load.filled_cache(capped)
            mountpoint = load.mount(capped, cache)
            warm = cat_seconds(os.path.join(mountpoint, "model.safetensors"))
            load.unmount(mountpoint)
            rows["second_prefetch"].append((load.second_prefetch_bytes(capped, server, cache), load.size))
            warm_from_disk, cold_local = load.warm_from_disk(capped, cache)
            rows["warm_disk"].append((cold_local, warm_from_disk))
            shutil.rmtree(cache)
            mountpoint = bench.mount(model)
            local = cat_seconds(os.path.join(mountpoint, "model.safetensors"))
            load.unmount(mountpoint)
            rows["warm"].append((local, warm))
            uncapped_cold, cache = load.cold_cat(uncapped)
            shutil.rmtree(cache)
            one_curl = load.curl(uncapped)
            rows["uncapped"].append((one_curl, uncapped_cold))
            # What bounds L1-L3 and L10, measured beside them: the same loads without the disk cache's writes, and
            # the mount of the local file (FUSE alone, the source in the page cache) against the uncapped curl.
            rows["local_curl"].append((one_curl, local))
            uncapped_no_disk, cache = load.cold_cat(uncapped, *NO_DISK_CACHE)
            shutil.rmtree(cache)
            rows["uncapped_no_disk"].append((one_curl, uncapped_no_disk))
            rows["curl_beside_fuse"].append((one_curl, load.curl_beside_fuse(uncapped)))
            rows["uncapped_floor"].append((one_curl, load.curl_beside_fuse(uncapped, cache_write=True)))
            cat_no_disk, cache = load.cold_cat(capped, *NO_DISK_CACHE)
            shutil.rmtree(cache)
            rows["cat_no_disk"].append((aria, cat_no_disk))
            new_file, new_file_again = load.new_file_seconds()
            rows["new_file"].append((aria, new_file))
            rows["reused_memory"].append((new_file, new_file_again))
            proxy.delay = 0
            undelayed, cache = load.cold_cat(through_proxy)
            shutil.rmtree(cache)
            proxy.delay = DELAY
            delayed, cache = load.cold_cat(through_proxy)
            shutil.rmtree(cache)
            proxy.delay = 0
            rows["delay"].append((undelayed, delayed))
            rows["prefetch"].append((aria, load.prefetch(capped)))
            rclone_cold, rclone_warm = load.rclone(server.capped)
            rows["rclone"].append((rclone_cold, cold))
            rows["rclone_warm"].append((rclone_warm, warm))
            rows["touch"].append((load.fetched_per_touch(capped), MIB))
            rows["rss"].append((load.peak_rss_of_cold_cat(capped)[0], CACHE_SIZE + 64 * MIB))
            aria_b2b, (cat_b2b, raws_b2b, source_b2b) = load.back_to_back(capped)
            rows["cat_b2b"].append((aria_b2b, cat_b2b))
            rows["raws_b2b"].append((aria_b2b, raws_b2b))
            rows["source_b2b"].append((aria_b2b, source_b2b))
            s3_curl = s3.parallel_curl_seconds(load.size)
            rows["s3"].append((s3_curl, s3.cold_cat_seconds(load)))
            rows["s3_no_disk"].append((s3_curl, s3.cold_cat_seconds(load, *NO_DISK_CACHE)))
            rows["s3_mount_ranges"].append((s3_curl, s3.parallel_curl_seconds(load.size, part=MOUNT_RANGE)))
            rows["s3_beside_new_file"].append((s3_curl, s3.parallel_curl_seconds(load.size,
                                                                                  [load.new_file_command()])))
            mountpoint, cat = load.local_mount_cat()
            try:
                rows["s3_beside_fuse"].append((s3_curl, s3.parallel_curl_seconds(load.size, [cat])))
            finally:
                load.unmount(mountpoint)
            # All that a cold cat from S3 cannot avoid, at once: the store's answers in the mount's ranges, serving
            # the bytes through FUSE, and the disk cache's file.
            mountpoint, cat = load.local_mount_cat()
            try:
                rows["s3_floor"].append((s3_curl, s3.parallel_curl_seconds(
                    load.size, [cat, load.new_file_command()], part=MOUNT_RANGE)))
            finally:
                load.unmount(mountpoint)
        scaled = scale_rows(folder, scale, server, load)
    finally:
        if s3 is not None:
            s3.stop()
        proxy.stop()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)

    gib = load.size / (1 << 30)
    # Speeds as ratios: (baseline seconds, tensorfs seconds) -> tensorfs speed / baseline speed.
    def speed_row(what, key, target):
        bench.row(what, [(load.size / t, load.size / b) for b, t in rows[key]], "GB/s", target, 1e9)

    speed_row(f"L1. cold cat model.safetensors ({gib:.2f} GiB), {CAP}/conn / aria2c -x16", "cat", ">= 0.9")
    speed_row("L2. cold, every raw in order, capped / aria2c -x16", "raws", ">= 0.9")
    speed_row("L2s. cold cat source/model.safetensors, capped / aria2c -x16", "source", ">= 0.9")
    speed_row("L3. cold cat, uncapped server / one curl", "uncapped", ">= 0.6")
    speed_row("L4. cold cat, 25 ms added per answer / no delay (same proxy)", "delay", ">= 0.8")
    speed_row("L5. warm (remount, disk cache) / local-file mount, first pass", "warm", ">= 0.9")
    speed_row("L5d. warm from the disk (page caches dropped) / cat of the local file, page cache dropped",
              "warm_disk", ">= 0.9")
    speed_row("L6. tensorfs prefetch, capped / aria2c -x16", "prefetch", ">= 0.9")
    bench.row("L6b. a second tensorfs prefetch of the cached model: body bytes the server sent / the model's",
              rows["second_prefetch"], "MiB", "= 0", MIB)
    speed_row("L7. cold cat, capped / rclone mount --vfs-cache-mode full, cold", "rclone", ">= 1.5")
    speed_row("L7. warm cat (remount) / rclone mount, warm (its cache)", "rclone_warm", "> 1")
    bench.row("L8. random 64-byte memmap touch, cold: MiB fetched per touch (the header's fetch too) / 1 MiB",
              rows["touch"], "MiB", "<= 1", MIB)
    bench.row("L9. daemon peak RSS, cold cat / cache_size + 64 MiB", rows["rss"], "MiB", "<= 1", MIB)
    speed_row(f"L10. cold cat from S3 (s3rver) / {S3_RANGES} curl --aws-sigv4 ranges at once", "s3", ">= 0.9")
    speed_row("L1b. L1 back to back (no settling before each load) / aria2c -x16 the same way", "cat_b2b", ">= 0.9")
    speed_row("L2b. L2 back to back / aria2c -x16 the same way", "raws_b2b", ">= 0.9")
    speed_row("L2sb. L2s back to back / aria2c -x16 the same way", "source_b2b", ">= 0.9")
    if scaled:
        label, seconds, rss, written = scaled
        bench.row(f"L11. cold cat of {label}, capped: seconds / the {gib:.2f} GiB model's (L1's load)", seconds, "s",
                  "<= 16.5")
        bench.row(f"L11w. L11's floor: its bytes written to a new file (no network): seconds / the {gib:.2f} GiB "
                  "model's load", written, "s", "")
        bench.row(f"L11r. daemon peak RSS during the cold cat of {label} / cache_size + 64 MiB", rss, "MiB", "<= 1",
                  MIB)

    # No targets: what bounds the rows above (docs/benchmarks.md reads them).
    speed_row("L1x. cold cat, capped, no disk cache (--disk-cache-size 0) / aria2c -x16", "cat_no_disk", "")
    speed_row("L3x. mount of the local file, first pass (FUSE alone) / one curl", "local_curl", "")
    speed_row("L3y. cold cat, uncapped, no disk cache / one curl", "uncapped_no_disk", "")
    speed_row("L3f. one curl while the local-file mount is read beside it (a cold cat's two halves at once) / the "
              "curl alone", "curl_beside_fuse", "")
    speed_row("L3g. L3f with the model's bytes written to a new file beside them too (all a cold cat with the disk "
              "cache must do, at once) / the curl alone", "uncapped_floor", "")
    speed_row("L10x. cold cat from S3, no disk cache / the same curl ranges", "s3_no_disk", "")
    speed_row("L10b. the same curl while the model's bytes are written to a new file beside it / the curl alone",
              "s3_beside_new_file", "")
    speed_row("L10f. the same curl while the local-file mount is read beside it / the curl alone", "s3_beside_fuse", "")
    speed_row(f"L10r. the same curl in the mount's ranges ({MOUNT_RANGE // MIB} MiB, {S3_RANGES} at once) / in "
              f"{S3_RANGES} ranges: the store's cost per request", "s3_mount_ranges", "")
    speed_row("L10g. L10r's curl with the local-file mount read and the model's bytes written to a new file beside it "
              "(all a cold cat from S3 must do, at once) / the curl alone", "s3_floor", "")
    speed_row("L1m. the model's bytes written to a new file (no network) / aria2c -x16", "new_file", "")
    speed_row("L1n. that write on memory just freed / on memory handed back to the host", "reused_memory", "")


def scale_rows(folder, scale, server, load):
    """L11: how cost grows. The model of SCALE_TENSORS tensors, cold from the capped server, next to the 64-tensor
    one (L1's load), once each (a 16 GiB model at --scale 1 is written for it and deleted after): ([(its seconds, the
    small model's)], [(its daemon's peak RSS, the budget)], [(seconds to write its bytes to a new file, the small
    model's)]). None, saying why, when the disk has no room for the model
    and its disk cache (the default disk_cache_size, 10 GiB: the load evicts as a node's cache does)."""
    tensor_bytes = max(MIB, int(16 * MIB * scale)) // 2 * 2
    model_bytes = SCALE_TENSORS * tensor_bytes
    needed = model_bytes + min(model_bytes, 10 << 30) + (2 << 30)
    free = shutil.disk_usage(folder).free
    if free < needed:
        print(f"L11 skipped: {free / (1 << 30):.1f} GiB free in {folder}, {needed / (1 << 30):.1f} GiB needed",
              flush=True)
        return None
    path, _ = write_model(folder, scale, SCALE_TENSORS, "scale.safetensors")
    try:
        large_rss, large = load.peak_rss_of_cold_cat(f"http://127.0.0.1:{server.capped}/scale.safetensors")
        _, small = load.peak_rss_of_cold_cat(f"http://127.0.0.1:{server.capped}/model.safetensors")
    finally:
        os.remove(path)
    # L11's floor: a cold load writes every byte of the model to the disk cache, and 16 GiB is more than the page
    # cache takes before the kernel holds writers to the disk's pace, where the 1 GiB load's writes never wait.
    quiet_machine()
    written = load.write_new_file_seconds(model_bytes)
    label = f"{SCALE_TENSORS} x {tensor_bytes / MIB:.0f} MiB ({model_bytes / (1 << 30):.1f} GiB)"
    return label, [(large, small)], [(large_rss, CACHE_SIZE + 64 * MIB)], [(written, small)]
