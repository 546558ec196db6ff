"""The read path through a real mount: decoded chunks, their cache and the raw replies give exactly ggml's bytes
at chunk borders, under a cache so small that it evicts all the time, and to readers in parallel."""
import os
import threading
import unittest

import numpy as np

from tensorfs_mount import VECTORS, Mount, drop_cached_pages, manifest, mount_stats, read_file

SOURCE = os.path.join(VECTORS, "gguf/tiny-llama-Q4_K_M.gguf")
MIB = 1 << 20


def tiny_llama():
    return next(e for e in manifest()["gguf"] if e["file"] == "gguf/tiny-llama-Q4_K_M.gguf")


def pread_all(path, offset, length):
    fd = os.open(path, os.O_RDONLY)
    try:
        out = b""
        while len(out) < length:
            piece = os.pread(fd, length - len(out), offset + len(out))
            if not piece:
                break
            out += piece
        return out
    finally:
        os.close(fd)


class ReadPathCase:
    """Checks shared by mounts with different cache budgets (set CACHE_OPTIONS in the subclass)."""
    CACHE_OPTIONS = ()

    @classmethod
    def setUpClass(cls):
        cls.entry = tiny_llama()
        cls.tensors = [t for t in cls.entry["tensors"] if t["nelements"] >= 65536]
        cls.expected = {t["name"]: read_file(os.path.join(VECTORS, t["expected_f32"])) for t in cls.entry["tensors"]}
        cls.source = read_file(SOURCE)
        cls.mount = Mount(SOURCE, *cls.CACHE_OPTIONS).__enter__()
        cls.chunk = mount_stats(cls.mount)["cache"]["chunk_bytes"]

    @classmethod
    def tearDownClass(cls):
        cls.mount.__exit__(None, None, None)

    def ranges(self, size):
        """Offsets and lengths around chunk borders: odd offsets, lengths that span two or three chunks."""
        c = self.chunk
        borders = [b for b in (c, 2 * c, 3 * c, size // 2 // c * c, size - c) if 0 < b < size]
        out = [(0, size), (0, 1), (size - 1, 1), (size - 7, 7)]
        for b in borders:
            for delta in (-5, -4, -1, 0, 1, 3, 4):
                for length in (1, 3, 4, 13, c - 1, c, c + 1, 2 * c + 5, 3 * c - 7):
                    start = b + delta
                    if 0 <= start < size:
                        out.append((start, min(length, size - start)))
        return out

    def check_ranges(self, path, expected, header=b""):
        whole = header + expected
        for offset, length in self.ranges(len(whole)):
            drop_cached_pages(path)
            got = pread_all(path, offset, length)
            self.assertEqual(got, whole[offset:offset + length], f"{path} at {offset} length {length}")

    def test_dequant_f32_at_chunk_borders(self):
        for t in self.tensors:
            with self.subTest(tensor=t["name"]):
                self.check_ranges(self.mount.tensor(t["name"], "dequant.f32"), self.expected[t["name"]])

    def test_dequant_npy_at_chunk_borders(self):
        for t in self.tensors[:3]:
            with self.subTest(tensor=t["name"]):
                path = self.mount.tensor(t["name"], "dequant.npy")
                header = pread_all(path, 0, 128)
                header_len = 10 + int.from_bytes(header[8:10], "little")
                self.check_ranges(path, self.expected[t["name"]], header[:header_len])
                array = np.load(path, mmap_mode="r")
                self.assertEqual(array.tobytes(), self.expected[t["name"]])

    def test_raw_at_many_offsets(self):
        for t in self.tensors[:3]:
            with self.subTest(tensor=t["name"]):
                start = t["data_offset"]
                self.check_ranges(self.mount.tensor(t["name"], "raw"), self.source[start:start + t["raw_nbytes"]])

    def test_every_tensor_whole_and_by_memmap(self):
        for t in self.entry["tensors"]:
            with self.subTest(tensor=t["name"]):
                path = self.mount.tensor(t["name"], "dequant.f32")
                drop_cached_pages(path)
                with open(path, "rb") as f:
                    self.assertEqual(f.read(), self.expected[t["name"]])
                drop_cached_pages(path)
                values = np.memmap(path, dtype="<f4", mode="r")
                self.assertEqual(values.tobytes(), self.expected[t["name"]])
                del values

    def test_parallel_readers_of_one_tensor_get_identical_data(self):
        t = max(self.tensors, key=lambda t: t["nelements"])
        path = self.mount.tensor(t["name"], "dequant.f32")
        expected = self.expected[t["name"]]
        results, errors = {}, []

        def reader(index):
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    # Each reader walks the file in its own order and step, so their requests interleave.
                    step = self.chunk // 2 + 4096 * index
                    starts = list(range(0, len(expected), step))
                    if index % 2:
                        starts.reverse()
                    got = bytearray(len(expected))
                    for start in starts:
                        piece = os.pread(fd, step, start)
                        got[start:start + len(piece)] = piece
                    results[index] = bytes(got)
                finally:
                    os.close(fd)
            except Exception as error:  # reported below, in the test's thread
                errors.append(error)

        for _ in range(3):
            drop_cached_pages(path)
            threads = [threading.Thread(target=reader, args=(i,)) for i in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            self.assertEqual(errors, [])
            for index, data in results.items():
                self.assertEqual(data, expected, f"reader {index}")


class DefaultCache(ReadPathCase, unittest.TestCase):
    pass


class TinyCacheEvictsAllTheTime(ReadPathCase, unittest.TestCase):
    CACHE_OPTIONS = ("--cache-size", "64K")

    def test_budget_and_evictions(self):
        t = max(self.tensors, key=lambda t: t["nelements"])
        path = self.mount.tensor(t["name"], "dequant.f32")
        drop_cached_pages(path)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), self.expected[t["name"]])
        cache = mount_stats(self.mount)["cache"]
        self.assertEqual(cache["budget"], 64 << 10)
        self.assertEqual(cache["chunk_bytes"], 4 << 10)
        self.assertGreater(cache["evictions"], 0)
        self.assertLessEqual(cache["bytes_in_use"], cache["budget"])


class SmallChunksThroughOption(ReadPathCase, unittest.TestCase):
    CACHE_OPTIONS = ("-o", "cache_size=1M")

    def test_chunk_size_follows_the_budget(self):
        self.assertEqual(mount_stats(self.mount)["cache"]["chunk_bytes"], 64 << 10)


class StatsCounters(unittest.TestCase):
    def test_counters_move_as_reads_go(self):
        entry = tiny_llama()
        t = next(t for t in entry["tensors"] if t["ggml_type"] == "q4_K")
        with Mount(SOURCE, "--cache-size", "1M") as mount:
            before = mount_stats(mount)
            self.assertEqual(before["cache"]["misses"], 0)
            self.assertEqual(before["cache"]["bytes_in_use"], 0)
            f32 = mount.tensor(t["name"], "dequant.f32")
            with open(f32, "rb") as f:
                data = f.read()
            first = mount_stats(mount)
            self.assertEqual(first["reads"]["dequant.f32"]["bytes"], len(data))
            self.assertGreaterEqual(first["reads"]["dequant.f32"]["reads"], 1)
            chunks = -(-len(data) // first["cache"]["chunk_bytes"])
            # Every chunk is decoded once: by a reader (a miss) or ahead of it.
            self.assertEqual(first["cache"]["misses"] + first["cache"]["decoded_ahead"], chunks)
            self.assertEqual(first["decode"]["bytes"], len(data))
            self.assertGreater(first["decode"]["seconds"], 0)
            self.assertGreater(first["cache"]["bytes_in_use"], 0)

            # The same bytes again from the daemon (not the page cache): hits, no decode.
            drop_cached_pages(f32)
            with open(f32, "rb") as f:
                self.assertEqual(f.read(), data)
            second = mount_stats(mount)
            self.assertEqual(second["decode"]["bytes"], len(data))
            self.assertGreaterEqual(second["cache"]["hits"], first["cache"]["hits"] + chunks)

            raw = mount.tensor(t["name"], "raw")
            with open(raw, "rb") as f:
                self.assertEqual(len(f.read()), t["raw_nbytes"])
            third = mount_stats(mount)
            self.assertEqual(third["reads"]["raw"]["bytes"], t["raw_nbytes"])
            self.assertEqual(third["read_errors"], 0)


if __name__ == "__main__":
    unittest.main()
