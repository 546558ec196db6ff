"""Read-ahead that follows the reader (issue 20), checked for correctness only, never for time: the bytes stay
right while the window grows, across tensor and file (shard) boundaries and when a reader switches between random
and sequential reads; a random 64-byte touch fetches at most a megabyte (counted by the mount's own stats); the
memory that fetched blocks hold stays within its budget (through stats.json); and `tensorfs prefetch` fills the
disk cache so that a second run and a mount fetch nothing more, a remount reads that cache from the disk ahead of an
in-order reader, and --verify finds a corrupt cached block."""
import base64
import concurrent.futures
import hashlib
import json
import os
import pty
import random
import re
import shutil
import subprocess
import tempfile
import threading
import unittest

import numpy as np

import test_s3  # for its S3Model (imported as a module, so that its tests do not run here again)
from tensorfs_mount import BIN, Mount, daemon_pids, drop_cached_pages, read_file, run, wait_until
from remote_servers import HUB_REPO, remote_env
from test_remote import MIB, MOUNT_REQUESTS, RemoteModel, ranges_of, stats_of, write_safetensors

CHUNKS = (4096, 128 << 10, 1 << 20, 3 * MIB + 17, 77)  # read sizes that cross block and tensor edges unevenly


def resident_bytes(path):
    """How many bytes of `path` are in the page cache (util-linux's fincore)."""
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path], check=True,
                         capture_output=True, text=True).stdout
    return int(out.strip())


def read_in_odd_chunks(path):
    out = bytearray()
    with open(path, "rb", buffering=0) as f:
        i = 0
        while True:
            data = f.read(CHUNKS[i % len(CHUNKS)])
            if not data:
                return bytes(out)
            out += data
            i += 1


class FollowTheReader(RemoteModel):

    def test_every_raw_in_order_and_model_safetensors_are_the_source_bytes(self):
        m = self.mount(None, "-o", "readahead=8M,max_connections=3")
        for name in ("a", "b", "c", "d"):
            self.assertEqual(read_in_odd_chunks(m.tensor(name, "raw")), self.raw_of(name), name)
        stats = stats_of(m)
        self.assertGreater(stats["readahead"]["window_bytes"], 0)
        self.assertEqual(stats["readahead"]["limit_bytes"], 8 * MIB)
        self.assertEqual(stats["readahead"]["max_connections"], 3)
        # What the window follows, measured on the blocks' range answers.
        self.assertGreater(stats["readahead"]["connection_bytes_per_second"], 0)
        self.assertGreater(stats["readahead"]["link_bytes_per_second"], 0)
        self.assertGreater(stats["readahead"]["round_trip_us"], 0)
        self.assertIn("first_byte_us", stats["readahead"])
        self.assertLessEqual(stats["readahead"]["window_bytes"], 8 * MIB)
        with Mount(os.path.join(self.data, "big.safetensors")) as local:
            expected = read_file(os.path.join(local.path, "model.safetensors"))
        cold = self.mount(cache=tempfile.mkdtemp(dir=self.cache))
        self.assertEqual(read_in_odd_chunks(os.path.join(cold.path, "model.safetensors")), expected)

    def test_random_and_sequential_reads_switching(self):
        m = self.mount()
        offset, size = self.spans["b"]
        expected = self.raw_of("b")
        rng = random.Random(7)
        with open(m.tensor("b", "raw"), "rb", buffering=0) as f:
            fd = f.fileno()
            at = 0
            for _ in range(40):
                if rng.random() < 0.5:
                    at = rng.randrange(0, size - 64)  # a jump
                    length = rng.choice((64, 4096, 200000))
                else:
                    length = rng.choice((128 << 10, 1 << 20))  # on from where the last read ended
                data = os.pread(fd, length, at)
                self.assertEqual(data, expected[at:at + length], (at, length))
                at = min(at + len(data), size - 1)

    def test_a_read_across_blocks_that_turns_sequential_fetches_each_byte_once(self):
        # The first read spans a block edge, so it is fetched exactly; the reads after it continue it, so the
        # read-ahead fetches those two blocks whole: only what the first read did not bring may be asked again.
        m = self.mount()
        mark = self.log_mark()
        offset, size = self.spans["c"]
        edge = (offset // MIB + 2) * MIB
        start = (edge - offset - (32 << 10)) // 4096 * 4096  # 32-36 KiB before the edge, page-aligned in raw
        expected = self.raw_of("c")
        with open(m.tensor("c", "raw"), "rb", buffering=0) as f:
            f.seek(start)
            self.assertEqual(f.read(128 << 10), expected[start:start + (128 << 10)])
            at = start + (128 << 10)
            while at < size:
                data = f.read(128 << 10)
                self.assertEqual(data, expected[at:at + len(data)], at)
                at += len(data)
        self.unmount_and_wait(m)  # every fetch it started is over and logged
        asked = sorted(ranges_of(r for r in self.requests_since(mark) if r[1] == "/big.safetensors"))
        # The first read was fetched exactly (it is what this test is about)...
        self.assertIn(offset + start, [first for first, _ in asked], asked)
        for (_, last), (first, _) in zip(asked, asked[1:]):
            self.assertGreater(first, last, asked)
        # ...and the bytes before it in its first block were fetched too (so that the block is cached whole).
        self.assertEqual(asked[0][0], (offset + start) // MIB * MIB, asked)

    def test_a_random_64_byte_touch_fetches_at_most_a_megabyte(self):
        m = self.mount()
        name = "b"
        offset, size = self.spans[name]
        expected = np.frombuffer(self.raw_of(name), dtype="<f4")
        before = stats_of(m)["bytes_fetched"]
        view = np.memmap(m.tensor(name, "raw"), dtype="<f4", mode="r")
        rng = random.Random(3)
        touches = 16
        # Places 2 MiB apart at least, so that no touch finds another's bytes in the page cache.
        places = rng.sample(range(0, size // (2 * MIB)), touches)
        for place in places:
            index = (place * 2 * MIB + rng.randrange(0, MIB)) // 4
            self.assertEqual(view[index:index + 16].tobytes(), expected[index:index + 16].tobytes())
        del view
        fetched = stats_of(m)["bytes_fetched"] - before
        self.assertLessEqual(fetched, touches * MIB, f"{fetched / touches / MIB:.2f} MiB per touch")

    def test_fetched_blocks_stay_within_the_memory_budget(self):
        def read_in_order(m):
            for name in ("a", "b", "c", "d"):
                self.assertEqual(read_file(m.tensor(name, "raw")), self.raw_of(name))

        self.check_memory_held_while(read_in_order)

    def test_many_readers_at_once_stay_within_the_memory_budget(self):
        # 32 readers of a megabyte at a time: more than the mount's read workers, each fetching blocks of its own
        # while the read-ahead waits for room (they once held 34 MiB against the budget of 16).
        def read_parts_at_once(m):
            parts = 8
            raws = {name: memoryview(self.raw_of(name)) for name in "abcd"}

            def read_part(name, part):
                with open(m.tensor(name, "raw"), "rb", buffering=0) as f:
                    os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
                    step = len(raws[name]) // parts // MIB * MIB
                    for at in range(part * step, (part + 1) * step, MIB):
                        self.assertEqual(os.pread(f.fileno(), MIB, at), raws[name][at:at + MIB])

            with concurrent.futures.ThreadPoolExecutor(32) as pool:
                for done in [pool.submit(read_part, name, part) for name in "abcd" for part in range(parts)]:
                    done.result()

        self.check_memory_held_while(read_parts_at_once)

    def check_memory_held_while(self, read):
        # cache_size=32M: 16 MiB for fetched blocks (in flight, kept, queued for the disk), the rest for chunks.
        m = self.mount(None, "-o", "cache_size=32M,max_connections=4")
        samples, done = [], threading.Event()

        def sample():
            while not done.is_set():
                samples.append(stats_of(m)["memory"])

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            read(m)
        finally:
            done.set()
            sampler.join(60)
        self.assertTrue(samples)
        for memory in samples:
            self.assertEqual(memory["budget_bytes"], 16 * MIB)
            held = memory["in_flight_bytes"] + memory["recent_blocks_bytes"] + memory["queued_for_disk_bytes"]
            # A reader's own fetch (a block or two) is never refused, whatever the read-ahead holds.
            self.assertLessEqual(held, memory["budget_bytes"] + 2 * MIB, memory)


class Shards(unittest.TestCase):
    """Two shards read in order, through model.safetensors and through every raw."""

    @classmethod
    def setUpClass(cls):
        from remote_servers import Nginx, use_remote_environment
        use_remote_environment()
        cls.data = tempfile.mkdtemp(prefix="tensorfs-shards-")
        rng = np.random.default_rng(5)
        cls.raws = {}
        weight_map = {}
        for shard, names in ((1, ("s1.a", "s1.b")), (2, ("s2.a", "s2.b"))):
            file = f"model-0000{shard}-of-00002.safetensors"
            tensors = [(n, rng.standard_normal(3 * MIB // 4 + 1000, dtype=np.float32)) for n in names]
            write_safetensors(os.path.join(cls.data, file), tensors)
            for n, array in tensors:
                cls.raws[n] = array.tobytes()
                weight_map[n] = file
        with open(os.path.join(cls.data, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": weight_map}, f)
        cls.server = Nginx(cls.data)
        cls.url = f"http://127.0.0.1:{cls.server.http}/model.safetensors.index.json"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.data, ignore_errors=True)

    def test_shards_in_order_give_the_source_bytes(self):
        cache = tempfile.mkdtemp(prefix="tensorfs-cache-")
        self.addCleanup(shutil.rmtree, cache, ignore_errors=True)
        with Mount(self.url, "--cache-dir", cache) as m:
            for name in ("s1.a", "s1.b", "s2.a", "s2.b"):
                self.assertEqual(read_file(m.tensor(name, "raw")), self.raws[name], name)
        with Mount(os.path.join(self.data, "model.safetensors.index.json")) as local:
            expected = read_file(os.path.join(local.path, "model.safetensors"))
        with Mount(self.url, "--cache-dir", tempfile.mkdtemp(dir=cache)) as m:
            self.assertEqual(read_file(os.path.join(m.path, "model.safetensors")), expected)


class Prefetch(RemoteModel):
    def prefetch(self, *args):
        return run("prefetch", self.url, "--cache-dir", self.cache, *args)

    @staticmethod
    def fetched_bytes(result):
        found = re.search(r"\((\d+) bytes\)", result.stdout.strip().splitlines()[-1])
        return int(found[1])

    def test_prefetch_fills_the_cache_and_a_second_run_fetches_nothing(self):
        first = self.prefetch("--quiet")
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertEqual(self.fetched_bytes(first), len(self.bytes))
        second = self.prefetch()
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertEqual(self.fetched_bytes(second), 0)
        # A mount of the same source reads every tensor with no request but its own at mount (the header and the
        # side-file probes).
        m = self.mount()
        for name in ("a", "b", "c", "d"):
            self.assertEqual(read_file(m.tensor(name, "raw")), self.raw_of(name))
        self.assertEqual(stats_of(m)["requests"], MOUNT_REQUESTS)

    def test_a_second_prefetch_asks_only_whether_the_file_changed(self):
        first = self.prefetch("--quiet")
        self.assertEqual(first.returncode, 0, first.stderr)
        mark = self.log_mark()
        second = self.prefetch("--quiet")
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertEqual(self.fetched_bytes(second), 0)
        # One conditional request for the file's first bytes, answered 304 without a body: nothing else.
        requests = self.requests_since(mark, at_least=1)
        self.assertEqual([(r[1], r[2], r[3]) for r in requests], [("/big.safetensors", 304, 0)], requests)

    def test_a_remount_reads_its_disk_cache_ahead_of_an_in_order_reader(self):
        """A node that restarted reads its cache from the disk: once a reader has read two blocks in order, the
        mount asks the kernel to read the next blocks' files ahead of it. Checked through the page cache (fincore),
        with the mount file read in exactly two 1 MiB reads (no kernel read-ahead on it)."""
        first = self.prefetch("--quiet")
        self.assertEqual(first.returncode, 0, first.stderr)
        blocks = {int(os.path.basename(path).split(".")[0]): path for path in self.block_files()}
        self.assertGreater(len(blocks), 8)
        os.sync()
        for path in blocks.values():   # out of the page cache, as after a restart (clean pages: no root needed)
            drop_cached_pages(path)
        self.assertEqual([i for i in blocks if resident_bytes(blocks[i]) > 0], [])
        m = self.mount()
        fd = os.open(os.path.join(m.path, "source", "big.safetensors"), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            self.assertEqual(os.pread(fd, MIB, 0) + os.pread(fd, MIB, MIB), self.bytes[:2 * MIB])
        finally:
            os.close(fd)
        ahead = [blocks[i] for i in range(2, 6)]
        self.assertTrue(wait_until(lambda: all(resident_bytes(path) > 0 for path in ahead)),
                        [resident_bytes(path) for path in ahead])
        self.assertEqual(resident_bytes(blocks[max(blocks)]), 0)   # not the whole file: only ahead of the reader

    def test_prefetch_of_some_tensors(self):
        result = self.prefetch("--quiet", "--tensors", "[cd]")
        self.assertEqual(result.returncode, 0, result.stderr)
        size = self.spans["c"][1] + self.spans["d"][1]
        fetched = self.fetched_bytes(result)
        # Whole blocks around the tensors' bytes: at most a block more on each side.
        self.assertGreaterEqual(fetched, size)
        self.assertLessEqual(fetched, size + 2 * MIB)
        m = self.mount()
        self.assertEqual(read_file(m.tensor("c", "raw")), self.raw_of("c"))
        self.assertEqual(read_file(m.tensor("d", "raw")), self.raw_of("d"))
        self.assertEqual(stats_of(m)["requests"], MOUNT_REQUESTS)

    def test_verify_says_a_web_server_publishes_no_checksum(self):
        result = self.prefetch("--quiet", "--verify")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("big.safetensors: no checksum", result.stdout)

    def test_prefetch_of_nothing_that_matches_is_an_error(self):
        result = self.prefetch("--quiet", "--tensors", "nothing*")
        self.assertEqual(result.returncode, 1)
        self.assertIn("nothing matches", result.stderr)


class S3ReadAhead(test_s3.S3Model):
    """S3 objects are the same remote objects (with a signing context): the same read-ahead, checked the same way."""

    def test_reads_across_blocks_and_tensors_are_the_bytes_and_no_byte_is_asked_twice(self):
        m = self.mount(self.source, None, "-o", "readahead=8M,max_connections=3")
        mark = self.log_mark()
        offset, size = self.spans["b"]
        edge = (offset // MIB + 2) * MIB
        start = (edge - offset - (32 << 10)) // 4096 * 4096  # the first read spans a block edge: fetched exactly
        with open(m.tensor("b", "raw"), "rb", buffering=0) as f:
            f.seek(start)
            got = f.read(128 << 10) + f.read()
        self.assertEqual(got, self.raw_of("b")[start:])
        # On into the next tensor in odd chunks: the window stays open across the boundary.
        self.assertEqual(read_in_odd_chunks(m.tensor("c", "raw")), self.raw_of("c"))
        stats = stats_of(m)
        self.assertGreater(stats["readahead"]["window_bytes"], 0)
        m.__exit__(None, None, None)
        self.assertTrue(wait_until(lambda: not daemon_pids(m.path)), "the daemon outlived its mount")
        asked = sorted(tuple(int(x) for x in r["range"][len("bytes="):].split("-"))
                       for r in self.requests_since(mark)
                       if r["path"].endswith("/big.safetensors") and (r["range"] or "").startswith("bytes="))
        self.assertIn(offset + start, [first for first, _ in asked], asked)
        for (_, last), (first, _) in zip(asked, asked[1:]):
            self.assertGreater(first, last, asked)


def cached_blocks(cache):
    """The published blocks of a disk cache (not the temporary files a block is written to before it is renamed)."""
    found = []
    for folder, _, names in os.walk(cache):
        found += [os.path.join(folder, n) for n in names if n.endswith(".block") and not n.startswith(".")]
    return sorted(found)


class CorruptBlock:
    """--verify of one file whose checksum its source publishes: a good run says the checksum matches; one byte of
    one cached block flipped on disk makes the next run name the file, remove its blocks and exit 1; the run after
    fetches it again, right."""

    def check_a_corrupt_block_is_named_and_evicted(self, prefetch, cache, size, name, checksum):
        result = prefetch("--verify")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"{name}: checksum matches ({checksum})", result.stdout)
        blocks = cached_blocks(cache)
        self.assertEqual(len(blocks), (size + MIB - 1) // MIB)
        with open(blocks[len(blocks) // 2], "r+b") as f:
            first = f.read(1)
            f.seek(0)
            f.write(bytes([first[0] ^ 0xFF]))
        result = prefetch("--verify")
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"{name}: does not match the checksum its source publishes ({checksum})", result.stderr)
        self.assertEqual(cached_blocks(cache), [])
        result = prefetch("--verify")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"{name}: checksum matches ({checksum})", result.stdout)
        self.assertEqual(len(cached_blocks(cache)), len(blocks))


class PrefetchVerify(test_s3.S3Model, CorruptBlock):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The same bytes uploaded with the SHA-256 a client sends along (x-amz-checksum-sha256, base64), which S3
        # checks and keeps; the test store's front does what AWS does with it (tests/servers/s3_server.js).
        cls.checksum = base64.b64encode(hashlib.sha256(cls.bytes).digest()).decode()
        status = cls.server.put_with_checksum(cls.bucket, "with-sha256.safetensors", cls.bytes, cls.checksum)
        assert status == (200, None), status

    def prefetch(self, *args, source=None):
        return run("prefetch", source or self.source, "--quiet", *args, env=self.env())

    def test_verify_against_the_etag_md5_and_a_corrupt_block_is_named_and_evicted(self):
        # Uploaded without a checksum in one part: its ETag is the MD5 of its bytes.
        self.check_a_corrupt_block_is_named_and_evicted(self.prefetch, self.cache, len(self.bytes),
                                                        "big.safetensors", "the ETag's MD5")

    def test_verify_against_x_amz_checksum_sha256_and_a_corrupt_block_is_named_and_evicted(self):
        source = f"s3://{self.bucket}/with-sha256.safetensors"
        self.check_a_corrupt_block_is_named_and_evicted(lambda *args: self.prefetch(*args, source=source),
                                                        self.cache, len(self.bytes), "with-sha256.safetensors",
                                                        "x-amz-checksum-sha256")

    def test_the_store_refuses_an_upload_whose_checksum_does_not_match(self):
        wrong = base64.b64encode(hashlib.sha256(b"other bytes").digest()).decode()
        self.assertEqual(self.server.put_with_checksum(self.bucket, "refused.safetensors", self.bytes, wrong),
                         (400, "BadDigest"))

    def test_a_file_fetched_in_part_is_not_verified(self):
        result = self.prefetch("--verify", "--tensors", "a")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("not verified", result.stdout)


class PrefetchFromTheHub(RemoteModel, CorruptBlock):
    """A Hub repo (nginx laid out as the Hub, remote_servers.hub_layout) with the model and the files a model folder
    has besides: config.json, a tokenizer.json larger than what a mount reads when it opens a file, and a file in a
    subfolder. The Hub's listing gives the LFS sha256 of the weights, computed by the stand-in with hashlib."""

    other_files = side = {"config.json": b'{"model_type": "test"}\n',
                          "tokenizer.json": random.Random(20).randbytes(3 * MIB + 5),
                          "extra/notes.txt": b"notes\n"}

    def prefetch(self, *args, source=f"hf://{HUB_REPO}/big.safetensors"):
        env = remote_env(self.cache, {"HF_ENDPOINT": f"http://127.0.0.1:{self.server.hub}"})
        return run("prefetch", source, "--cache-dir", self.cache, "--quiet", *args, env=env)

    @staticmethod
    def fetched_bytes(result):
        return Prefetch.fetched_bytes(result)

    def test_verify_against_the_lfs_sha256_and_a_corrupt_block_is_named_and_evicted(self):
        self.check_a_corrupt_block_is_named_and_evicted(self.prefetch, self.cache, len(self.bytes),
                                                        "big.safetensors", "the Hub's LFS sha256")

    def test_files_fetches_side_files_and_a_second_run_fetches_nothing(self):
        repo = f"hf://{HUB_REPO}"
        first = self.prefetch("--files", "*.json", source=repo)
        self.assertEqual(first.returncode, 0, first.stderr)
        json_bytes = len(self.side["config.json"]) + len(self.side["tokenizer.json"])
        self.assertEqual(self.fetched_bytes(first), json_bytes)
        second = self.prefetch("--files", "*.json", source=repo)
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertEqual(self.fetched_bytes(second), 0)
        # Paths are relative to SOURCE, subfolders included, as source/ shows them.
        sub = self.prefetch("--files", "extra/*", source=repo)
        self.assertEqual(sub.returncode, 0, sub.stderr)
        self.assertEqual(self.fetched_bytes(sub), len(self.side["extra/notes.txt"]))
        # A mount of the repo reads tokenizer.json from the disk cache: no request of its own.
        m = Mount(repo, "--cache-dir", self.cache,
                  env=remote_env(self.cache, {"HF_ENDPOINT": f"http://127.0.0.1:{self.server.hub}"})).__enter__()
        self.addCleanup(m.__exit__, None, None, None)
        before = stats_of(m)["requests"]
        self.assertEqual(read_file(os.path.join(m.path, "source", "tokenizer.json")), self.side["tokenizer.json"])
        self.assertEqual(read_file(os.path.join(m.path, "tokenizer.json")), self.side["tokenizer.json"])
        self.assertEqual(stats_of(m)["requests"], before)

    def test_files_on_a_terminal_show_the_progress_line(self):
        leader, follower = pty.openpty()
        shown = bytearray()

        def read_terminal():
            while True:
                try:
                    data = os.read(leader, 4096)
                except OSError:  # EIO: the last writer closed the terminal
                    return
                if not data:
                    return
                shown.extend(data)

        reader = threading.Thread(target=read_terminal)
        reader.start()
        try:
            env = remote_env(self.cache, {"HF_ENDPOINT": f"http://127.0.0.1:{self.server.hub}"})
            result = subprocess.run([BIN, "prefetch", f"hf://{HUB_REPO}", "--cache-dir", self.cache, "--files",
                                     "*.json"], stdout=subprocess.PIPE, stderr=follower, text=True, env=env,
                                    timeout=120)
        finally:
            os.close(follower)
            reader.join(timeout=60)
            os.close(leader)
        self.assertEqual(result.returncode, 0)
        total = len(self.side["config.json"]) + len(self.side["tokenizer.json"])
        self.assertEqual(self.fetched_bytes(result), total)
        # The line is redrawn in place (\r); the terminal turns its final \n into \r\n.
        drawn = [line for line in shown.decode().split("\r") if line.strip()]
        self.assertRegex(drawn[-1], rf"^prefetching hf://{HUB_REPO}: 3\.0 MiB of 3\.0 MiB \(100%\), ")

    def test_files_with_verify_checks_weights_and_says_no_checksum_for_the_rest(self):
        result = self.prefetch("--files", "*", "--verify", source=f"hf://{HUB_REPO}")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("big.safetensors: checksum matches (the Hub's LFS sha256)", result.stdout)
        self.assertIn("tokenizer.json: no checksum", result.stdout)
        self.assertIn("extra/notes.txt: no checksum", result.stdout)
        self.assertEqual(self.fetched_bytes(result), len(self.bytes) + sum(len(d) for d in self.side.values()))


if __name__ == "__main__":
    unittest.main()
