"""Load: many threads read random ranges of raw, dequant.f32 and dequant.npy of every tensor of a GGUF model and a
sharded safetensors model at once, for a bounded time, under a cache budget small enough that decoded chunks are
evicted all the time. Every byte is compared with the reference data; the daemon's memory stays bounded."""
import json
import mmap
import os
import random
import threading
import time
import unittest

from binary_info import asan_instrumented
from tensorfs_mount import VECTORS, Mount, daemon_pids, manifest, read_file

THREADS = 16
SECONDS = float(os.environ.get("TENSORFS_STRESS_SECONDS", "20"))
CACHE_BUDGET = 256 << 10
RSS_MARGIN = 64 << 20
MAX_READ = 256 << 10


class Target:
    """One file of the tree with the bytes it must hold."""

    def __init__(self, path, expected):
        self.path = path
        self.expected = expected


def targets_of(mount, tensors, source_of):
    """The raw, dequant.f32 and dequant.npy files of `tensors` (manifest entries) in `mount`, each with its
    expected bytes: the source file's bytes, the reference float32 values, the npy header plus those values."""
    sources = {}
    targets = []
    for t in tensors:
        source = source_of(t)
        if source not in sources:
            sources[source] = read_file(source)
        raw = sources[source][t["abs_offset"]:t["abs_offset"] + t["raw_nbytes"]]
        f32 = read_file(os.path.join(VECTORS, t["expected_f32"]))
        npy_path = mount.tensor(t["name"], "dequant.npy")
        with open(npy_path, "rb") as f:
            head = f.read(10)
            header_len = int.from_bytes(head[8:10], "little") + 10
            header = head + f.read(header_len - 10)
        targets.append(Target(mount.tensor(t["name"], "raw"), raw))
        targets.append(Target(mount.tensor(t["name"], "dequant.f32"), f32))
        targets.append(Target(npy_path, header + f32))
    return targets


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class Stress(unittest.TestCase):
    def test_threads_read_random_ranges_under_constant_eviction(self):
        entries = manifest()
        gguf = next(g for g in entries["gguf"] if g["file"] == "gguf/tiny-llama-Q4_K_M.gguf")
        gguf_source = os.path.join(VECTORS, gguf["file"])
        for t in gguf["tensors"]:
            t["abs_offset"] = t["data_offset"]
        shards = [s for s in entries["safetensors"] if s["file"].startswith("safetensors/sharded/")]
        shard_of = {t["name"]: os.path.join(VECTORS, s["file"]) for s in shards for t in s["tensors"]}
        index = os.path.join(VECTORS, "safetensors/sharded/model.safetensors.index.json")
        budget = f"{CACHE_BUDGET >> 10}K"

        with Mount(gguf_source, "--cache-size", budget) as gm, Mount(index, "--cache-size", budget) as sm:
            targets = targets_of(gm, gguf["tensors"], lambda t: gguf_source)
            targets += targets_of(sm, [t for s in shards for t in s["tensors"]], lambda t: shard_of[t["name"]])
            pids = daemon_pids(gm.path) + daemon_pids(sm.path)
            self.assertEqual(len(pids), 2, "one daemon per mount")

            failures = []       # (path, offset, length, what)
            counts = {"reads": 0, "bytes": 0, "mmap_reads": 0}
            lock = threading.Lock()
            stop = threading.Event()

            def reader(seed):
                rng = random.Random(seed)
                reads = nbytes = mapped = 0
                while not stop.is_set():
                    target = rng.choice(targets)
                    size = len(target.expected)
                    offset = rng.randrange(size + 1)
                    length = min(rng.choice((1, 7, 4096, 65536, MAX_READ)), size - offset + 16)
                    try:
                        fd = os.open(target.path, os.O_RDONLY)
                        try:
                            # Drop the kernel's cached pages, so that most reads reach the daemon.
                            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                            if rng.random() < 0.1 and size > 0:
                                with mmap.mmap(fd, size, prot=mmap.PROT_READ) as mapped_file:
                                    got = mapped_file[offset:offset + length]
                                mapped += 1
                            else:
                                got = os.pread(fd, length, offset)
                        finally:
                            os.close(fd)
                    except OSError as error:
                        with lock:
                            failures.append((target.path, offset, length, repr(error)))
                        continue
                    if got != target.expected[offset:offset + length]:
                        with lock:
                            failures.append((target.path, offset, length, "bytes differ"))
                    reads += 1
                    nbytes += len(got)
                with lock:
                    counts["reads"] += reads
                    counts["bytes"] += nbytes
                    counts["mmap_reads"] += mapped

            threads = [threading.Thread(target=reader, args=(seed,)) for seed in range(THREADS)]
            peak_rss = {pid: rss_bytes(pid) for pid in pids}
            started = time.monotonic()
            for thread in threads:
                thread.start()
            while time.monotonic() - started < SECONDS:
                time.sleep(0.1)
                for pid in pids:
                    peak_rss[pid] = max(peak_rss[pid], rss_bytes(pid))
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
                self.assertFalse(thread.is_alive(), "a reader hangs")

            stats = [json.loads(read_file(os.path.join(m.path, ".tensorfs/stats.json"))) for m in (gm, sm)]

        print(f"\nstress: {THREADS} threads, {SECONDS:.0f} s: {counts['reads']} reads "
              f"({counts['mmap_reads']} through mmap), {counts['bytes'] / 2**20:.1f} MiB, "
              f"{len(failures)} failures; daemon peak RSS "
              f"{', '.join(f'{r / 2**20:.1f} MiB' for r in peak_rss.values())}")
        for s in stats:
            served = sum(s["reads"][kind]["reads"] for kind in ("raw", "dequant.f32", "dequant.npy"))
            print(f"  daemon served {served} reads; cache {json.dumps(s['cache'])}; read_errors {s['read_errors']}")
        self.assertEqual(failures[:10], [])
        self.assertGreater(counts["reads"], 1000)
        for s in stats:
            self.assertEqual(s["read_errors"], 0)
            # Most reads must reach the daemon, not the kernel's page cache.
            self.assertGreater(sum(s["reads"][kind]["reads"] for kind in ("raw", "dequant.f32", "dequant.npy")), 1000)
            if s["cache"]["misses"] > 0:
                # A budget this small holds a few chunks only: reading everything must evict.
                self.assertGreater(s["cache"]["evictions"], 0)
        if asan_instrumented():
            print("  RSS bound not checked: the binary is ASan-instrumented (shadow memory and quarantine)")
        else:
            for pid, peak in peak_rss.items():
                self.assertLessEqual(peak, CACHE_BUDGET + RSS_MARGIN, f"daemon {pid} peak RSS")


if __name__ == "__main__":
    unittest.main()
