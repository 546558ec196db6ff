"""A safetensors file mounted for real: every file kind read through the kernel against the reference vectors; from
the local file, and the same file over HTTP, HTTPS, from a Hub-like server (remote_servers.py) and from an S3 store
(s3_servers.py)."""
import errno
import json
import os
import signal
import unittest

import numpy as np

import remote_servers
import s3_servers
from tensorfs_mount import VECTORS, Mount, daemon_pids, is_mounted, manifest, run, wait_until, same_floats

SOURCE = os.path.join(VECTORS, "safetensors/all_dtypes.safetensors")


class SafetensorsMount(unittest.TestCase):
    where = remote_servers.LOCAL

    @classmethod
    def setUpClass(cls):
        cls.entry = manifest()["safetensors"][0]
        cls.mount = Mount(cls.where.source("safetensors/all_dtypes.safetensors")).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.mount.__exit__(None, None, None)

    def test_root_lists_every_tensor_and_model_json(self):
        names = set(os.listdir(self.mount.path))
        self.assertIn("model.json", names)
        for t in self.entry["tensors"]:
            self.assertIn(t["name"], names)
        with open(os.path.join(self.mount.path, "model.json")) as f:
            model = json.load(f)
        self.assertEqual(model["format"], "safetensors")
        self.assertEqual(model["tensor_count"], len(self.entry["tensors"]))
        self.assertEqual(model["metadata"], self.entry["metadata"])
        self.assertEqual(model["files"], [{"path": "all_dtypes.safetensors", "size": self.entry["file_size"]}])

    def test_raw_is_the_source_bytes(self):
        with open(SOURCE, "rb") as f:
            source = f.read()
        for t in self.entry["tensors"]:
            with self.subTest(tensor=t["name"]):
                with open(self.mount.tensor(t["name"], "raw"), "rb") as f:
                    raw = f.read()
                start = t["abs_offset"]
                self.assertEqual(raw, source[start:start + t["raw_nbytes"]])

    def test_meta_json_and_stat_sizes(self):
        for t in self.entry["tensors"]:
            with self.subTest(tensor=t["name"]):
                path = self.mount.tensor(t["name"], "meta.json")
                with open(path, "rb") as f:
                    text = f.read()
                self.assertEqual(os.stat(path).st_size, len(text))
                meta = json.loads(text)
                self.assertEqual(meta["name"], t["name"])
                self.assertEqual(meta["dtype"], t["dtype"])
                self.assertEqual(meta["shape"], t["shape"])
                self.assertEqual(meta["elements"], t["nelements"])
                self.assertEqual(meta["nbytes"], t["raw_nbytes"])
                self.assertEqual(meta["offset"], t["abs_offset"])
                self.assertEqual(meta["file"], "all_dtypes.safetensors")
                self.assertEqual(os.stat(self.mount.tensor(t["name"], "raw")).st_size, meta["nbytes"])
                self.assertEqual(os.stat(self.mount.tensor(t["name"], "dequant.f32")).st_size,
                                 meta["dequant"]["nbytes"])
                st = os.stat(self.mount.tensor(t["name"], "dequant.npy"))
                self.assertEqual(st.st_blocks, (st.st_size + 511) // 512)

    def test_dequant_f32_equals_expected(self):
        for t in self.entry["tensors"]:
            with self.subTest(tensor=t["name"]):
                expected = np.fromfile(os.path.join(VECTORS, t["expected_f32"]), dtype="<f4")
                actual = np.fromfile(self.mount.tensor(t["name"], "dequant.f32"), dtype="<f4")
                self.assertTrue(same_floats(expected, actual))

    def test_numpy_memmap_and_load_agree(self):
        for t in self.entry["tensors"]:
            with self.subTest(tensor=t["name"]):
                shape = tuple(t["shape"])
                expected = np.fromfile(os.path.join(VECTORS, t["expected_f32"]), dtype="<f4").reshape(shape)
                if expected.size > 0:
                    mapped = np.memmap(self.mount.tensor(t["name"], "dequant.f32"), dtype="<f4", mode="r",
                                       shape=shape)
                    self.assertTrue(same_floats(expected, np.array(mapped)))
                    del mapped
                loaded = np.load(self.mount.tensor(t["name"], "dequant.npy"), mmap_mode="r")
                self.assertEqual(loaded.shape, shape)
                self.assertEqual(loaded.dtype, np.dtype("<f4"))
                self.assertTrue(same_floats(expected, np.array(loaded)))
                del loaded

    def test_pread_at_every_offset(self):
        t = next(t for t in self.entry["tensors"] if t["dtype"] == "BF16")
        expected = np.fromfile(os.path.join(VECTORS, t["expected_f32"]), dtype="<f4").tobytes()
        fd = os.open(self.mount.tensor(t["name"], "dequant.f32"), os.O_RDONLY)
        try:
            for offset in range(len(expected)):
                for length in (1, 3, 7, 64):
                    self.assertEqual(os.pread(fd, length, offset), expected[offset:offset + length])
            self.assertEqual(os.pread(fd, 16, len(expected)), b"")
        finally:
            os.close(fd)

    def test_mutations_fail_with_erofs(self):
        name = self.entry["tensors"][0]["name"]
        attempts = {
            "write": lambda: open(self.mount.tensor(name, "raw"), "r+b"),
            "create": lambda: open(os.path.join(self.mount.path, "new-file"), "wb"),
            "truncate": lambda: os.truncate(self.mount.tensor(name, "raw"), 0),
        }
        for what, attempt in attempts.items():
            with self.subTest(operation=what):
                with self.assertRaises(OSError) as caught:
                    attempt()
                self.assertEqual(caught.exception.errno, errno.EROFS)


class MountLifecycle(unittest.TestCase):
    def test_umount_leaves_no_daemon(self):
        with Mount(SOURCE) as m:
            self.assertTrue(wait_until(lambda: len(daemon_pids(m.path)) == 1))
            result = run("umount", m.path)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertFalse(is_mounted(m.path))
            self.assertTrue(wait_until(lambda: not daemon_pids(m.path)))

    def test_sigterm_unmounts_cleanly(self):
        with Mount(SOURCE) as m:
            pids = daemon_pids(m.path)
            self.assertEqual(len(pids), 1)
            os.kill(pids[0], signal.SIGTERM)
            self.assertTrue(wait_until(lambda: not is_mounted(m.path) and not daemon_pids(m.path)))


class RefusedSources(unittest.TestCase):
    where = remote_servers.LOCAL

    def test_broken_header_is_refused_before_mounting(self):
        entries = [e for e in manifest()["malformed"]
                   if e["format"] == "safetensors" and e["expected"].startswith("must be rejected")]
        self.assertGreater(len(entries), 10)
        for entry in entries:
            with self.subTest(file=entry["file"]):
                source = self.where.source(entry["file"])
                mount = Mount(source)
                result = run("mount", source, mount.path)
                try:
                    self.assertEqual(result.returncode, 1)
                    lines = result.stderr.strip().splitlines()
                    self.assertGreaterEqual(len(lines), 1)
                    self.assertTrue(all(line.startswith("tensorfs: ") and os.path.basename(source) in line for line in lines),
                                    result.stderr)
                    self.assertFalse(is_mounted(mount.path))
                finally:
                    mount.unmount()


class SafetensorsMountOverHttp(SafetensorsMount):
    where = remote_servers.HTTP


class SafetensorsMountOverHttps(SafetensorsMount):
    where = remote_servers.HTTPS


class SafetensorsMountFromTheHub(SafetensorsMount):
    where = remote_servers.HUB


class SafetensorsMountFromS3(SafetensorsMount):
    where = s3_servers.S3


class RefusedSourcesOverHttp(RefusedSources):
    where = remote_servers.HTTP


class RefusedSourcesFromTheHub(RefusedSources):
    where = remote_servers.HUB


class RefusedSourcesFromS3(RefusedSources):
    where = s3_servers.S3


if __name__ == "__main__":
    unittest.main()
