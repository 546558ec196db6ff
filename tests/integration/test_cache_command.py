"""`tensorfs cache ls|du|prune|clear` on a disk cache filled over HTTP (nginx), and pruning and clearing it under a
mount that keeps reading: every byte read stays right, and the mount fetches again what was removed (nginx's log
shows the request)."""
import json
import os
import shutil
import tempfile
import threading
import unittest

import numpy as np

from remote_servers import Nginx, requests_in
from tensorfs_mount import VECTORS, Mount, drop_cached_pages, run, wait_until
from test_remote import BLOCK

# More than a mount keeps in memory (the mounts below get a small --cache-size), so that a pass over the file reads
# its first blocks from the disk cache or the network again.
BIG_SIZE = 136 << 20


def write_big_safetensors(path):
    """One U8 tensor, `big`, of BIG_SIZE bytes of a counting pattern; returns its file offset and size."""
    size = BIG_SIZE
    header = json.dumps({"big": {"dtype": "U8", "shape": [size], "data_offsets": [0, size]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
        np.arange(size // 4, dtype="<u4").tofile(f)
    return 8 + len(header), size


def nginx_etag(path):
    status = os.stat(path)
    return f'"{int(status.st_mtime):x}-{status.st_size:x}"'


class CacheCommand(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = tempfile.mkdtemp(prefix="tensorfs-cache-data-")
        for name in ("all_dtypes.safetensors", "sharded/model-00001-of-00003.safetensors"):
            shutil.copy(os.path.join(VECTORS, "safetensors", name), cls.data)
        cls.big_offset, cls.big_size = write_big_safetensors(os.path.join(cls.data, "big.safetensors"))
        cls.nginx = Nginx(cls.data)

    @classmethod
    def tearDownClass(cls):
        cls.nginx.stop()
        shutil.rmtree(cls.data)

    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="tensorfs-cache-")
        self.env = dict(os.environ, NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")

    def tearDown(self):
        shutil.rmtree(self.cache)

    def url(self, name):
        return f"http://127.0.0.1:{self.nginx.http}/{name}"

    def cache_run(self, *args):
        result = run("cache", "--cache-dir", self.cache, *args, env=self.env)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def blocks(self):
        found = []
        for folder, _, names in os.walk(os.path.join(self.cache, "v1")):
            found += [os.path.join(folder, n) for n in names if n.endswith(".block")]
        return found

    def test_ls_du_prune_clear(self):
        names = ("all_dtypes.safetensors", "model-00001-of-00003.safetensors")
        for name in names:
            tensor = json.loads(run("ls", self.url(name), "--json", env=self.env).stdout)[0]["name"]
            result = run("cat", self.url(name), tensor, "--raw", "--cache-dir", self.cache, env=self.env, text=False)
            self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.cache_run("ls").splitlines()[0].split(), ["URL", "ETAG", "CACHED", "BLOCKS", "LAST",
                                                                         "READ"])
        rows = {line.split()[0]: line.split() for line in self.cache_run("ls").splitlines()[1:]}
        sizes = {name: os.path.getsize(os.path.join(self.data, name)) for name in names}
        self.assertEqual(set(rows), {self.url(name) for name in names})
        for name in names:
            self.assertEqual(rows[self.url(name)][1], nginx_etag(os.path.join(self.data, name)))
            self.assertEqual(rows[self.url(name)][4], "1")  # one block: the whole small file

        total = sum(os.path.getsize(b) for b in self.blocks())
        self.assertEqual(total, sum(sizes.values()))
        self.assertIn(f"({total} bytes) in 2 blocks of 2 objects, of disk_cache_size 10.0 GiB (the default)",
                      self.cache_run("du"))
        self.assertIn("of disk_cache_size 1.0 MiB (", self.cache_run("du", "--disk-cache-size", "1M"))

        # Not read for two hours: only that block goes with --older-than 1h.
        old = next(b for b in self.blocks() if os.path.getsize(b) == sizes["all_dtypes.safetensors"])
        os.utime(old, (os.path.getatime(old) - 7200, os.path.getmtime(old) - 7200))
        self.cache_run("prune", "--older-than", "1h")
        self.assertEqual([os.path.getsize(b) for b in self.blocks()], [sizes["model-00001-of-00003.safetensors"]])
        self.cache_run("prune", "--max-size", "1M")  # under it already: nothing goes
        self.assertEqual(len(self.blocks()), 1)
        self.cache_run("prune", "--max-size", "0")
        self.assertEqual(self.blocks(), [])
        self.assertIn("holds nothing", self.cache_run("ls"))
        self.cache_run("clear")
        # The eviction lock's file and the fetch locks' stay: a process may hold locks on them.
        self.assertEqual(sorted(os.listdir(os.path.join(self.cache, "v1"))), [".fetching", ".lock"])

    def test_usage_errors(self):
        for args, message in [(("prune",), "cache prune needs --older-than DURATION or --max-size SIZE"),
                              (("prune", "--older-than", "soon"), "bad --older-than 'soon'"),
                              (("prune", "--max-size", "big"), "bad --max-size 'big'"),
                              (("lss",), "cache: no action 'lss'"),
                              (("ls", "--max-size", "1G"), "--older-than and --max-size are for cache prune"),
                              (("ls", "extra"), "cache: unexpected argument 'extra'")]:
            with self.subTest(args=args):
                result = run("cache", "--cache-dir", self.cache, *args)
                self.assertEqual(result.returncode, 1)
                self.assertIn(message, result.stderr)

    def read_big(self, mount):
        """The tensor's raw bytes through the mount (none from the page cache), compared with the file's, by block."""
        drop_cached_pages(os.path.join(mount.path, "big", "raw"))
        with open(os.path.join(self.data, "big.safetensors"), "rb") as expected, \
                open(os.path.join(mount.path, "big", "raw"), "rb") as f:
            expected.seek(self.big_offset)
            for start in range(0, self.big_size, BLOCK):
                if f.read(BLOCK) != expected.read(BLOCK):
                    return f"wrong bytes at {start}"
        return None

    def big_bytes_sent(self):
        """Body bytes the server has sent of big.safetensors."""
        return sum(r[3] for r in requests_in(self.nginx.log_lines()) if r[1] == "/big.safetensors")

    def test_prune_and_clear_under_a_reading_mount(self):
        options = ("--cache-dir", self.cache, "--cache-size", "64M")
        with Mount(self.url("big.safetensors"), *options, env=self.env) as mount:
            self.assertIsNone(self.read_big(mount))
            file_blocks = -(-os.path.getsize(os.path.join(self.data, "big.safetensors")) // BLOCK)
            self.assertTrue(wait_until(lambda: len(self.blocks()) == file_blocks))   # written by the daemon's thread

            outcome = []
            reader = threading.Thread(target=lambda: outcome.append(self.read_big(mount)))
            reader.start()
            self.cache_run("prune", "--max-size", "40M")
            self.cache_run("clear")
            reader.join(timeout=120)
            self.assertFalse(reader.is_alive())
            self.assertEqual(outcome, [None])

            self.cache_run("clear")
            before = self.big_bytes_sent()
            self.assertIsNone(self.read_big(mount))
            # The mount may read again without a request what it holds in memory (its 64 MiB) and what its disk
            # cache's writer still had queued when the cache was cleared (at most DiskCache's 32 MiB queue: those
            # files come back after the clear). Everything else of the file it must fetch again, whatever the timing.
            least = BIG_SIZE - (64 << 20) - (32 << 20)
            self.assertTrue(wait_until(lambda: self.big_bytes_sent() - before >= least),
                            f"the mount fetched {self.big_bytes_sent() - before} bytes after the clear, "
                            f"not the {least} it cannot have held")
            stats = run("stats", mount.path, "--json")
            self.assertEqual(json.loads(stats.stdout)["read_errors"], 0)


if __name__ == "__main__":
    unittest.main()
