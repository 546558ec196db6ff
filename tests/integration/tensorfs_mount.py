"""Helpers for integration tests: run the tensorfs binary, mount for real in a temporary folder, always unmount."""
import json
import os
import subprocess
import tempfile
import time

import numpy as np

BIN = os.environ["TENSORFS_BIN"]
DATA = os.environ["TENSORFS_TEST_DATA"]
VECTORS = os.path.join(DATA, "vectors")
# The side files a mount looks for next to a SOURCE that names one file (one request each for a remote SOURCE).
PROBED_SIDE_FILES = ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                     "special_tokens_map.json", "tokenizer.model", "vocab.json", "merges.txt", "chat_template.jinja"]


def manifest():
    with open(os.path.join(VECTORS, "manifest.json")) as f:
        return json.load(f)


def read_file(path):
    """The whole file's bytes."""
    with open(path, "rb") as f:
        return f.read()


def read_at(path, offset, size=4096):
    """`size` bytes of `path` at `offset`, read as a random reader reads (no read-ahead of the kernel's): one fetch of
    a remote source's bytes at that place, when they are not fetched yet."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        return os.pread(fd, size, offset)
    finally:
        os.close(fd)


def drop_cached_pages(path):
    """Forgets the kernel's cached pages of a mounted file, so that the next read reaches the daemon again."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def mount_stats(mount):
    """The mount's .tensorfs/stats.json, parsed."""
    with open(os.path.join(mount.path, ".tensorfs", "stats.json")) as f:
        return json.load(f)


def same_floats(expected, actual):
    """Bit-identical float32 arrays, except that NaN matches NaN (the vectors' README)."""
    if expected.shape != actual.shape:
        return False
    nan_e, nan_a = np.isnan(expected), np.isnan(actual)
    return bool(np.array_equal(nan_e, nan_a)
                and np.array_equal(expected.view(np.uint32)[~nan_e], actual.view(np.uint32)[~nan_a]))


def run(*args, **kwargs):
    """Runs `tensorfs ARGS...` and returns the CompletedProcess (text output unless text=False)."""
    kwargs.setdefault("text", True)
    return subprocess.run([BIN, *args], capture_output=True, timeout=120, **kwargs)


def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def daemon_pids(mountpoint):
    """Pids of tensorfs processes serving `mountpoint` (found by their unique command line)."""
    # An empty name would match every tensorfs process (and the tests kill what this returns).
    if not mountpoint:
        raise ValueError("daemon_pids needs a mount point")
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().rstrip(b"\0").split(b"\0")  # no empty word after the last NUL
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"tensorfs" and mountpoint.encode() in argv:
            pids.append(int(entry))
    return pids


def wait_until(predicate, seconds=60.0):
    """True once predicate() is; False if it is still false after `seconds`. The bound is generous because the
    suite must pass on a machine busy with other builds, where a daemon can take many seconds to exit."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def unmount(path, command=None):
    """Unmounts PATH with COMMAND (default `fusermount3 -u PATH`) and returns the last run. A run that fails
    busy is tried again within the shared bound: a `tensorfs status` in a test running beside this one reads every
    mount's stats.json, and holds this mount for that moment."""
    command = command or ["fusermount3", "-u", path]
    last = None

    def done():
        nonlocal last
        last = subprocess.run(command, capture_output=True, text=True, timeout=60)
        return last.returncode == 0 or "busy" not in last.stderr

    wait_until(done)
    return last


def unmount_or_detach(path):
    """Unmounts PATH if it is mounted (see unmount); a mount still busy after the bound is detached, so that no test
    leaves one behind and its daemon ends when its last user does."""
    if is_mounted(path) and unmount(path).returncode != 0:
        subprocess.run(["fusermount3", "-uz", path], capture_output=True, timeout=60)


class Mount:
    """`with Mount(source) as m:` mounts SOURCE in a fresh temporary folder (m.path) and unmounts at exit,
    also when the body failed. `env`: the environment of `tensorfs mount` (default: this process's)."""

    def __init__(self, source, *options, env=None):
        self.source = source
        self.options = options
        self.env = env  # the daemon's environment (default: this process's)
        self.tmp = tempfile.mkdtemp(prefix="tensorfs-test-")
        self.path = os.path.join(self.tmp, "mnt")
        os.mkdir(self.path)

    def __enter__(self):
        result = run("mount", self.source, self.path, *self.options, env=self.env)
        self.stderr = result.stderr  # what the mount said (a folder of several models says so)
        if result.returncode != 0:
            os.rmdir(self.path)
            os.rmdir(self.tmp)
            raise AssertionError(f"mount failed ({result.returncode}): {result.stderr}")
        return self

    def __exit__(self, *exc):
        self.unmount()
        return False

    def unmount(self):
        unmount_or_detach(self.path)
        if not is_mounted(self.path) and os.path.isdir(self.tmp):
            os.rmdir(self.path)
            os.rmdir(self.tmp)

    def tensor(self, dir_name, file):
        return os.path.join(self.path, dir_name, file)
