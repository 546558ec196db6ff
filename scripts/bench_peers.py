"""The local read path against other FUSE file systems serving the same bytes (issue 20), for scripts/bench.

The input: a 1 GiB BF16 safetensors file of one tensor, in the page cache, its data 4 KiB-aligned in the file so
that the same 4 KiB-aligned reads hit the same pages everywhere. Each round, on a fresh mount of each file system
(in a rotating order), three columns, each timed by bench_read and divided by `pread` of the same bytes of the
source file measured right after it:
- first pass: 1 MiB sequential reads of the tensor's bytes on a fresh mount;
- second pass: the same again on the same mount;
- random 4 KiB: 4096 reads of 4 KiB at random aligned offsets of the tensor, on another fresh mount.
tensorfs reads the tensor's `raw`; passthrough_hp (libfuse's example, built by scripts/fetch-bench-peers) and
bindfs read the file from a mount of its folder; squashfuse_ll reads it from an uncompressed squashfs image (also
in the page cache). Each runs with its defaults. The last rows divide tensorfs's ratio by the best peer's ratio of
the same round.
"""
import json
import os
import subprocess
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20
TENSOR = "weight"
RANDOM_READS = 4096
COLUMNS = ("first pass", "second pass", "random 4 KiB")


def write_input(path, nbytes):
    """One BF16 tensor of nbytes random bytes (squashfs stores a block of zeros as a hole, so not zeros), its data
    starting on a 4 KiB boundary (the header padded with spaces, as the format allows)."""
    columns = 16384
    header = {"__metadata__": {}, TENSOR: {"dtype": "BF16", "shape": [nbytes // 2 // columns, columns],
                                           "data_offsets": [0, nbytes]}}
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 4096)
    pattern = np.random.default_rng(20).integers(0, 256, 16 * MIB, dtype=np.uint8).tobytes()
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for _ in range(nbytes // len(pattern)):
            f.write(pattern)
    return 8 + len(text)


class Peers:
    def __init__(self, bench, work, scale):
        self.bench = bench
        self.folder = os.path.join(work, "peers")
        self.source_dir = os.path.join(self.folder, "source")
        os.makedirs(self.source_dir, exist_ok=True)
        self.source = os.path.join(self.source_dir, "model.safetensors")
        self.length = max(16 * MIB, int(1024 * MIB * scale) // (16 * MIB) * 16 * MIB)
        self.offset = write_input(self.source, self.length)
        # First: it installs the peers (and mksquashfs) where they are missing.
        build = os.path.dirname(bench.tensorfs)
        self.passthrough_hp = subprocess.run([os.path.join(ROOT, "scripts", "fetch-bench-peers"),
                                              os.path.join(build, "peers")],
                                             check=True, capture_output=True, text=True).stdout.strip()
        self.image = os.path.join(self.folder, "model.sqfs")
        subprocess.run(["mksquashfs", self.source_dir, self.image, "-noI", "-noD", "-noF", "-noX", "-no-xattrs",
                        "-quiet", "-no-progress"], check=True, stdout=subprocess.DEVNULL)
        for path in (self.source, self.image):
            bench.warm(path)

    # Each: (name, command that mounts at MOUNTPOINT, path of the file in the mount, offset of the tensor in it)
    def systems(self):
        return [
            ("tensorfs", lambda m: [self.bench.tensorfs, "mount", self.source, m], f"{TENSOR}/raw", 0),
            ("passthrough_hp", lambda m: [self.passthrough_hp, self.source_dir, m], "model.safetensors", self.offset),
            ("squashfuse_ll", lambda m: ["squashfuse_ll", self.image, m], "model.safetensors", self.offset),
            ("bindfs", lambda m: ["bindfs", self.source_dir, m], "model.safetensors", self.offset),
        ]

    def mounted(self, command):
        mountpoint = tempfile.mkdtemp(prefix="mnt-", dir=self.bench.work)
        subprocess.run(command(mountpoint), check=True)
        return mountpoint

    def pread(self, mode):
        if mode == "seq":
            return self.bench.timed("seq", self.source, self.offset, self.length)
        return self.bench.timed("random", self.source, self.offset, self.length, RANDOM_READS)

    def one_round(self, command, path, offset):
        """One file system's (speed, pread's speed) in each column. Each mount is undone also when a read fails."""
        pairs = []
        mountpoint = self.mounted(command)
        try:
            file = os.path.join(mountpoint, path)
            for _ in range(2):  # first and second pass
                pairs.append((self.bench.timed("seq", file, offset, self.length), self.pread("seq")))
        finally:
            self.bench.unmount(mountpoint)
        mountpoint = self.mounted(command)
        try:
            speed = self.bench.timed("random", os.path.join(mountpoint, path), offset, self.length, RANDOM_READS)
        finally:
            self.bench.unmount(mountpoint)
        pairs.append((speed, self.pread("random")))
        return pairs

    def measure(self):
        systems = self.systems()
        measured = {name: [] for name, *_ in systems}  # name -> per round, one_round's pairs
        for i in range(self.bench.rounds):
            for name, command, path, offset in systems[i % len(systems):] + systems[:i % len(systems)]:
                measured[name].append(self.one_round(command, path, offset))
        gib = self.length / (1 << 30)
        for name, _, _, _ in systems:
            for column, label in enumerate(COLUMNS):
                pairs = [r[column] for r in measured[name]]
                self.bench.row(f"P. {name}, {gib:g} GiB BF16 in the page cache, {label} / pread", pairs, "GB/s",
                               scale=1e9)

        def ratio(name, i, column):
            figure, pread = measured[name][i][column]
            return figure / pread

        for column, label in enumerate(COLUMNS):
            pairs = [(ratio("tensorfs", i, column), max(ratio(name, i, column) for name, *_ in systems[1:]))
                     for i in range(self.bench.rounds)]
            self.bench.row(f"P. tensorfs / best peer (each / pread in the round), {label}", pairs, "x", ">= 1.0")


def run(bench, work, scale):
    Peers(bench, work, scale).measure()
