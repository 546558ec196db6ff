"""Whole-tree walks (find, du, ls -lR, glob) over a mount, counted in FUSE requests by the mount's own counters:
at most the round trips the protocol needs on a first walk, none on the next; and a checkpoint of many thousand
tensors mounted, walked and unmounted."""
import glob
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

from prometheus_text import parse
from tensorfs_mount import Mount, daemon_pids, is_mounted, wait_until

WALK_REQUESTS = ("lookup", "getattr", "opendir", "readdir", "readdirplus", "releasedir")


def write_sparse_checkpoint(folder, tensors, shards, elements=1024):
    """`tensors` F32 tensors of `elements` each in `shards` safetensors files (data sections left as holes) and
    the index naming them."""
    per_shard = tensors // shards
    weight_map = {}
    for s in range(shards):
        file_name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        header, offset = {}, 0
        for t in range(per_shard):
            name = f"model.layers.{s}.mlp.experts.{t}.down_proj.weight"
            header[name] = {"dtype": "F32", "shape": [elements], "data_offsets": [offset, offset + elements * 4]}
            offset += elements * 4
            weight_map[name] = file_name
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(os.path.join(folder, file_name), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            f.truncate(8 + len(text) + offset)
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": tensors * elements * 4}, "weight_map": weight_map}, f)
    return sorted(weight_map)


def requests(mount):
    """The walk requests the mount has answered so far."""
    with open(os.path.join(mount.path, ".tensorfs", "stats.json")) as f:
        counted = json.load(f)["fuse_requests"]
    return {kind: counted[kind] for kind in WALK_REQUESTS}


def sent_by(mount, walk):
    """The walk requests that running `walk()` sent."""
    before = requests(mount)
    walk()
    after = requests(mount)
    return {kind: after[kind] - before[kind] for kind in WALK_REQUESTS}


def run_quietly(*command):
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=600)


class RoundTripsOfWalks(unittest.TestCase):
    TENSORS = 1000

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="tensorfs-walks-")
        cls.names = write_sparse_checkpoint(cls.folder, cls.TENSORS, 4)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def assert_first_walk_round_trips(self, sent):
        # Folders are opened without a request (no opendir but the first, which tells the kernel so, and no
        # releasedir), every entry comes with its attributes (readdirplus, so no lookup and no getattr), and a
        # folder's listing takes two readdirplus: its entries, then the empty reply that tells the kernel it
        # ended (the protocol has no other way to say so). The root's 1,000 entries take a few more.
        self.assertLessEqual(sent["opendir"], 1)
        self.assertEqual(sent["releasedir"], 0)
        self.assertEqual(sent["readdir"], 0)
        self.assertEqual(sent["lookup"], 0)
        self.assertEqual(sent["getattr"], 0)
        beyond_tensor_folders = sent["readdirplus"] - 2 * self.TENSORS
        self.assertGreaterEqual(beyond_tensor_folders, 2)
        self.assertLessEqual(beyond_tensor_folders, 4 + self.TENSORS // 10)

    def test_find_asks_once_per_folder_listing_and_never_again(self):
        with Mount(self.folder) as m:
            found = []
            first = sent_by(m, lambda: found.extend(subprocess.run(
                ["find", m.path, "-name", "meta.json"], check=True, capture_output=True, text=True,
                timeout=600).stdout.split()))
            self.assertEqual(len(found), self.TENSORS)
            self.assert_first_walk_round_trips(first)
            # Entries, attributes and listings stay in the kernel's caches for the life of the mount: the next walks
            # send nothing, but for the few folders whose cached listing the kernel reclaimed (it lives in the
            # folder's page cache, which memory pressure may drop, e.g. from a test running beside this one).
            # A kernel that did not cache would send what the first walk sent.
            reclaimed_at_most = first["readdirplus"] // 100
            for walk in (["find", m.path, "-name", "meta.json"], ["du", "-s", m.path], ["ls", "-lR", m.path]):
                with self.subTest(walk=walk[0]):
                    sent = sent_by(m, lambda: run_quietly(*walk))
                    self.assertLessEqual(sent.pop("readdirplus"), reclaimed_at_most)
                    self.assertEqual(sent, dict.fromkeys(set(WALK_REQUESTS) - {"readdirplus"}, 0))

    def test_du_and_ls_lR_on_a_fresh_mount(self):
        for walk in (["du", "-s"], ["ls", "-lR"]):
            with self.subTest(walk=walk[0]), Mount(self.folder) as m:
                self.assert_first_walk_round_trips(sent_by(m, lambda: run_quietly(*walk, m.path)))

    def test_glob_looks_up_each_folder_once_at_most(self):
        with Mount(self.folder) as m:
            found = []
            sent = sent_by(m, lambda: found.extend(glob.glob(os.path.join(m.path, "*", "meta.json"))))
            self.assertEqual(len(found), self.TENSORS)
            # glob lists the root, then checks each folder's meta.json by name: one lookup each (source/ too).
            self.assertLessEqual(sent["lookup"], self.TENSORS + 1)
            self.assertLessEqual(sent["readdirplus"], 4 + self.TENSORS // 10)
            self.assertEqual(sent["getattr"], 0)
            self.assertEqual(sent_by(m, lambda: glob.glob(os.path.join(m.path, "*", "meta.json"))),
                             dict.fromkeys(WALK_REQUESTS, 0))


class ManyTensors(unittest.TestCase):
    """A scaled-down version of the benchmark's 1,000,000-tensor checkpoint: mounts, lists, walks, reads, unmounts."""
    TENSORS = 20000

    def test_mount_walk_and_unmount(self):
        folder = tempfile.mkdtemp(prefix="tensorfs-many-")
        try:
            names = write_sparse_checkpoint(folder, self.TENSORS, 20)
            with Mount(folder) as m:
                [pid] = daemon_pids(m.path)
                root = sorted(os.listdir(m.path))
                self.assertEqual(root, sorted(names + ["model.json", "model.safetensors", ".tensorfs", "source"]))
                found = subprocess.run(["find", m.path, "-name", "meta.json"], check=True, capture_output=True,
                                       text=True, timeout=600).stdout.split()
                self.assertEqual(len(found), self.TENSORS)
                du = subprocess.run(["du", "-s", "--apparent-size", "-B1", m.path], check=True, capture_output=True,
                                    text=True, timeout=600).stdout.split()[0]
                self.assertGreater(int(du), self.TENSORS * 1024 * 4 * 3)  # raw, dequant.f32, dequant.npy each
                for name in (names[0], names[len(names) // 2], names[-1]):
                    with open(os.path.join(m.path, name, "meta.json")) as f:
                        meta = json.load(f)
                    self.assertEqual((meta["name"], meta["shape"], meta["nbytes"]), (name, [1024], 4096))
                    with open(os.path.join(m.path, name, "dequant.f32"), "rb") as f:
                        self.assertEqual(f.read(), bytes(4096))  # the holes read as zeros
                with open(os.path.join(m.path, "model.json")) as f:
                    self.assertEqual(json.load(f)["tensor_count"], self.TENSORS)
                with open(os.path.join(m.path, ".tensorfs", "metrics")) as f:
                    families = parse(f.read())
                self.assertIn("tensorfs_fuse_requests_total", families)
            self.assertFalse(is_mounted(m.path))
            self.assertTrue(wait_until(lambda: not os.path.exists(f"/proc/{pid}")), "the daemon ended")
        finally:
            shutil.rmtree(folder)


if __name__ == "__main__":
    unittest.main()
