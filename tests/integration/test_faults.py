"""Faults while mounted, on copies of the fixtures: the source shrinks, vanishes or is replaced under a live mount,
the daemon is killed, or told to stop while readers are busy. Reads fail cleanly or go on, nothing hangs, and the
mount point is always freed."""
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from tensorfs_mount import BIN, VECTORS, Mount, daemon_pids, is_mounted, manifest, run, wait_until

GGUF = "gguf/tiny-llama-Q4_K_M.gguf"
SAFETENSORS = "safetensors/all_dtypes.safetensors"


def entry_of(relative):
    entries = manifest()
    for t in entries["gguf"] + entries["safetensors"]:
        if t["file"] == relative:
            return t
    raise KeyError(relative)


def offset_of(tensor):
    return tensor["data_offset"] if "data_offset" in tensor else tensor["abs_offset"]


def read_uncached(path, offset=0, length=None):
    """pread through the daemon: the kernel's cached pages of the file are dropped first."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        if length is None:
            length = os.fstat(fd).st_size - offset
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


def daemon_alive(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except FileNotFoundError:
        return False


class FaultCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tensorfs-faults-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def copy(self, relative):
        target = os.path.join(self.tmp, os.path.basename(relative))
        shutil.copyfile(os.path.join(VECTORS, relative), target)
        return target

    def mount(self, source, *options):
        m = Mount(source, *options).__enter__()
        self.addCleanup(m.__exit__, None, None, None)
        [pid] = daemon_pids(m.path)
        return m, pid

    def umount(self, m, pid):
        """`tensorfs umount` frees the mount point and the daemon ends."""
        result = run("umount", m.path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse(is_mounted(m.path))
        self.assertTrue(wait_until(lambda: not daemon_alive(pid)), "daemon still running after umount")

    def assert_tensors_intact(self, m, relative, source_bytes, check_f32=True):
        for t in entry_of(relative)["tensors"]:
            with self.subTest(tensor=t["name"]):
                start = offset_of(t)
                self.assertEqual(read_uncached(m.tensor(t["name"], "raw")),
                                 source_bytes[start:start + t["raw_nbytes"]])
                if check_f32:
                    with open(os.path.join(VECTORS, t["expected_f32"]), "rb") as f:
                        self.assertEqual(read_uncached(m.tensor(t["name"], "dequant.f32")), f.read())


class SourceChanges(FaultCase):
    def test_truncated_source_fails_lost_ranges_with_eio_and_serves_the_rest(self):
        source = self.copy(GGUF)
        with open(source, "rb") as f:
            original = f.read()
        m, pid = self.mount(source)
        tensors = sorted(entry_of(GGUF)["tensors"], key=offset_of)
        cut = offset_of(tensors[len(tensors) // 2])
        kept = [t for t in tensors if offset_of(t) + t["raw_nbytes"] <= cut]
        lost = [t for t in tensors if offset_of(t) >= cut]
        self.assertTrue(kept and lost)
        os.truncate(source, cut)

        for t in lost:
            with self.subTest(lost=t["name"]):
                for name, offset in (("raw", 0), ("raw", t["raw_nbytes"] - 1), ("dequant.f32", 0)):
                    with self.assertRaises(OSError) as caught:
                        read_uncached(m.tensor(t["name"], name), offset, 4096)
                    self.assertEqual(caught.exception.errno, errno.EIO, name)
                npy = m.tensor(t["name"], "dequant.npy")
                header_len = os.stat(npy).st_size - 4 * t["nelements"]
                with self.assertRaises(OSError) as caught:
                    read_uncached(npy, header_len, 4096)
                self.assertEqual(caught.exception.errno, errno.EIO)
                # meta.json comes from memory. (The npy header does too, but the kernel reads whole pages, and its
                # page holds lost values.)
                with open(m.tensor(t["name"], "meta.json"), "rb") as f:
                    self.assertIn(t["name"].encode(), f.read())

        self.assertTrue(daemon_alive(pid), "the daemon died of the truncation")
        for t in kept:
            with self.subTest(kept=t["name"]):
                start = offset_of(t)
                self.assertEqual(read_uncached(m.tensor(t["name"], "raw")), original[start:start + t["raw_nbytes"]])
                with open(os.path.join(VECTORS, t["expected_f32"]), "rb") as f:
                    self.assertEqual(read_uncached(m.tensor(t["name"], "dequant.f32")), f.read())
        with open(os.path.join(m.path, ".tensorfs/stats.json")) as f:
            self.assertGreater(json.load(f)["read_errors"], 0)
        self.umount(m, pid)

    def test_deleted_source_keeps_serving_the_mounted_bytes(self):
        for relative in (GGUF, SAFETENSORS):
            with self.subTest(source=relative):
                source = self.copy(relative)
                with open(source, "rb") as f:
                    original = f.read()
                m, pid = self.mount(source)
                os.unlink(source)
                self.assert_tensors_intact(m, relative, original, check_f32=relative == GGUF)
                self.umount(m, pid)

    def test_source_replaced_by_rename_keeps_serving_the_mounted_bytes(self):
        for relative in (GGUF, SAFETENSORS):
            with self.subTest(source=relative):
                source = self.copy(relative)
                with open(source, "rb") as f:
                    original = f.read()
                m, pid = self.mount(source)
                replacement = source + ".new"
                with open(replacement, "wb") as f:
                    f.write(bytes(255 - b for b in original))  # same size, every byte different
                os.rename(replacement, source)
                self.assert_tensors_intact(m, relative, original, check_f32=relative == GGUF)
                self.umount(m, pid)


class DaemonEnds(FaultCase):
    def kill_daemon(self, pid):
        os.kill(pid, signal.SIGKILL)
        self.assertTrue(wait_until(lambda: not daemon_alive(pid)))

    def test_umount_clears_the_mount_point_of_a_killed_daemon(self):
        m, pid = self.mount(self.copy(GGUF))
        self.kill_daemon(pid)
        with self.assertRaises(OSError) as caught:
            os.listdir(m.path)
        # ECONNABORTED when the request was queued as the connection went down (the daemon's last threads exiting).
        self.assertIn(caught.exception.errno, (errno.ENOTCONN, errno.ECONNABORTED))
        result = run("umount", m.path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse(is_mounted(m.path))

    def test_umount_clears_a_killed_daemon_whose_file_is_still_open(self):
        # A plain unmount fails with EBUSY while a file of the dead mount is open.
        m, pid = self.mount(self.copy(GGUF))
        held = os.open(m.tensor("output.weight", "raw"), os.O_RDONLY)
        try:
            self.kill_daemon(pid)
            with self.assertRaises(OSError) as caught:
                os.pread(held, 16, 0)
            self.assertIn(caught.exception.errno, (errno.ENOTCONN, errno.ECONNABORTED))
            result = run("umount", m.path)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertFalse(is_mounted(m.path))
        finally:
            os.close(held)

    def test_sigterm_with_active_readers_unmounts_cleanly(self):
        # In the foreground, so that the daemon's exit status is ours to see.
        mountpoint = os.path.join(self.tmp, "mnt")
        os.mkdir(mountpoint)
        daemon = subprocess.Popen([BIN, "mount", "-f", self.copy(GGUF), mountpoint],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        readers = []
        try:
            self.assertTrue(wait_until(lambda: is_mounted(mountpoint)), "mount did not come up")
            tensors = [t["name"] for t in entry_of(GGUF)["tensors"]]
            script = os.path.join(self.tmp, "reader.py")
            with open(script, "w") as f:
                f.write(READER)
            readers = [subprocess.Popen([sys.executable, script, mountpoint, str(seed), *tensors],
                                        stdout=subprocess.PIPE, text=True) for seed in range(4)]
            time.sleep(2)
            daemon.send_signal(signal.SIGTERM)
            _, stderr = daemon.communicate(timeout=30)  # raises TimeoutExpired if the daemon hangs
            self.assertEqual(daemon.returncode, 0, stderr)
            self.assertFalse(is_mounted(mountpoint))
            for reader in readers:
                out, _ = reader.communicate(timeout=40)  # raises TimeoutExpired if a reader hangs
                ok, errors = map(int, out.split())
                self.assertGreater(ok, 0, "a reader never read anything")
        finally:
            for process in readers + [daemon]:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            if is_mounted(mountpoint):
                subprocess.run(["fusermount3", "-uz", mountpoint], capture_output=True, timeout=60)


# Reads random ranges through the mount until 20 s have passed or it has seen 200 errors (the mount went away),
# then prints how many reads succeeded and failed.
READER = textwrap.dedent("""
    import os, random, sys, time
    mount, seed, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    rng = random.Random(seed)
    ok = errors = 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and errors < 200:
        path = os.path.join(mount, rng.choice(names), rng.choice(("raw", "dequant.f32", "dequant.npy")))
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.pread(fd, rng.choice((4096, 131072, 1 << 20)), rng.randrange(1 << 18))
                ok += 1
            finally:
                os.close(fd)
        except OSError:
            errors += 1
    print(ok, errors)
""")


if __name__ == "__main__":
    unittest.main()
