"""What remote sources add to a mount (the acceptance of the formats through URLs is in the other tests): only the
ranges that reads touch are fetched, measured from nginx's access log; the disk cache (a remount reads with no
request, two daemons share it, it stays within its size, a daemon killed mid-download leaves no torn block);
network faults from a proxy of our own (503, 429 with Retry-After, connections cut, bodies cut short, slow answers,
a server that keeps failing); an object replaced under a live mount; the Hub's token never reaching the host it
redirects to; and the one-line errors of a source that cannot be reached, is not found or refuses the credentials."""
import ctypes
import errno
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import unittest

import numpy as np

import remote_servers
from remote_servers import FaultProxy, Nginx, requests_in
from tensorfs_mount import (BIN, PROBED_SIDE_FILES, Mount, daemon_pids, drop_cached_pages, is_mounted, mount_stats,
                            read_file, run, unmount, wait_until)

MIB = 1 << 20
BLOCK = MIB  # the remote layer's block (src/remote/block.hpp)
READAHEAD = 4 * MIB  # the readahead= the tests that count fetched bytes mount with
HEAD = 64 << 10  # asked for when a file is opened
# What a mount of big.safetensors asks for: its first bytes, and each side file probed next to it (none there).
MOUNT_REQUESTS = 1 + len(PROBED_SIDE_FILES)


def write_safetensors(path, tensors):
    """tensors: [(name, numpy array)]; returns {name: (absolute offset, nbytes)}."""
    header, data, spans = {}, [], {}
    offset = 0
    for name, array in tensors:
        raw = array.tobytes()
        dtype = {"float32": "F32", "float16": "F16"}[str(array.dtype)]
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        data.append(raw)
        spans[name] = [offset, len(raw)]
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for raw in data:
            f.write(raw)
    return {name: (8 + len(text) + begin, size) for name, (begin, size) in spans.items()}


def make_model(folder, seed):
    """big.safetensors: tensors of 3, 40, 5 and 20 MiB, values that differ from one seed to another."""
    rng = np.random.default_rng(seed)
    tensors = [("a", rng.standard_normal(768 << 10, dtype=np.float32)),
               ("b", rng.standard_normal((10 << 20) // 1024 * 1024, dtype=np.float32).reshape(-1, 1024)),
               ("c", rng.standard_normal(5 << 19, dtype=np.float32).astype(np.float16)),
               ("d", rng.standard_normal(5 << 20, dtype=np.float32))]
    spans = write_safetensors(os.path.join(folder, "big.safetensors"), tensors)
    return spans, dict(tensors)


def after_blocks_of(offset, size):
    """Where the first block after those holding bytes [offset, offset + size) begins."""
    return (offset + size + BLOCK - 1) // BLOCK * BLOCK


def stats_of(mount):
    """The remote layer's counters of the mount."""
    return mount_stats(mount)["remote"]


def settled_stats_of(mount):
    """stats_of once the read-ahead has no request in flight: a reader's own fetches end before its read returns,
    the read-ahead's may still run, and their requests would count in the stats after a test read them (or in nginx's
    log after the stats were read)."""
    assert wait_until(lambda: stats_of(mount)["readahead"]["connections_in_use"] == 0), "the read-ahead never settled"
    return stats_of(mount)


def ranges_of(requests):
    """(first, last) of every ranged request."""
    found = []
    for _, _, _, _, header, _ in requests:
        if header.startswith("bytes="):
            first, last = header[len("bytes="):].split("-")
            found.append((int(first), int(last)))
    return found


class RemoteModel(unittest.TestCase):
    """A 68 MiB model on an nginx of its own (so that its log counts this test's requests only)."""

    # Files served next to big.safetensors ({path: bytes}), for the tests that want a model folder's other files.
    other_files = {}

    @classmethod
    def setUpClass(cls):
        remote_servers.use_remote_environment()
        cls.data = tempfile.mkdtemp(prefix="tensorfs-remote-data-")
        cls.spans, cls.values = make_model(cls.data, 1)
        for path, data in cls.other_files.items():
            os.makedirs(os.path.dirname(os.path.join(cls.data, path)), exist_ok=True)
            with open(os.path.join(cls.data, path), "wb") as f:
                f.write(data)
        with open(os.path.join(cls.data, "big.safetensors"), "rb") as f:
            cls.bytes = f.read()
        cls.server = Nginx(cls.data)
        cls.url = f"http://127.0.0.1:{cls.server.http}/big.safetensors"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.data, ignore_errors=True)

    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="tensorfs-cache-")
        self.addCleanup(shutil.rmtree, self.cache, ignore_errors=True)

    def mount(self, source=None, *options, cache=None):
        m = Mount(source or self.url, "--cache-dir", cache or self.cache, *options).__enter__()
        self.addCleanup(m.__exit__, None, None, None)
        return m

    def unmount_and_wait(self, m):
        """Unmounts; the daemon writes the blocks it still holds to the disk cache before it ends."""
        m.__exit__(None, None, None)
        self.assertTrue(wait_until(lambda: not daemon_pids(m.path)), "the daemon outlived its mount")

    def log_mark(self):
        return len(self.server.log_lines())

    def requests_since(self, mark, at_least=0):
        """The requests nginx logged since `mark`, once it has logged `at_least` of them: nginx writes a request's
        line after sending its last byte, so a reader can have the bytes before the line is there."""
        wait_until(lambda: len(self.server.log_lines()) - mark >= at_least)
        return requests_in(self.server.log_lines()[mark:])

    def raw_of(self, name):
        offset, size = self.spans[name]
        return self.bytes[offset:offset + size]

    def block_files(self, cache=None):
        """The published blocks (not the temporary files a block is written to before it is renamed)."""
        found = []
        for folder, _, names in os.walk(cache or self.cache):
            found += [os.path.join(folder, n) for n in names if n.endswith(".block") and not n.startswith(".")]
        return found


class FetchOnlyWhatIsRead(RemoteModel):
    def test_mount_fetches_the_header_only(self):
        mark = self.log_mark()
        m = self.mount()
        requests = self.requests_since(mark, at_least=MOUNT_REQUESTS)
        self.assertEqual(ranges_of(r for r in requests if r[1] == "/big.safetensors"), [(0, HEAD - 1)])
        probes = [r for r in requests if r[1] != "/big.safetensors"]
        self.assertEqual(sorted(r[1] for r in probes), sorted("/" + name for name in PROBED_SIDE_FILES))
        self.assertTrue(all(r[2] == 404 for r in probes), probes)
        self.assertEqual(stats_of(m)["requests"], MOUNT_REQUESTS)
        self.assertEqual(stats_of(m)["bytes_fetched"], HEAD)

    def test_reading_one_tensor_fetches_it_and_at_most_the_read_ahead_beyond(self):
        for name, view in (("b", "raw"), ("d", "dequant.f32"), ("a", "raw")):
            with self.subTest(tensor=name, file=view):
                m = self.mount(None, "-o", f"readahead={READAHEAD}", cache=tempfile.mkdtemp(dir=self.cache))
                mark = self.log_mark()
                data = read_file(m.tensor(name, view))
                if view == "raw":
                    self.assertEqual(data, self.raw_of(name))
                else:
                    self.assertTrue(np.array_equal(np.frombuffer(data, "<f4"), self.values[name]))
                offset, size = self.spans[name]
                # The mount's own are older.
                requests = self.requests_since(mark, at_least=settled_stats_of(m)["requests"] - MOUNT_REQUESTS)
                fetched = sum(r[3] for r in requests)
                self.assertGreaterEqual(fetched, size)
                # The read-ahead follows the reader past the tensor's end (the next tensor's bytes), by at most
                # the window; the first read of a stream (up to the 1 MiB the kernel asks) is fetched exactly, then
                # again in its blocks (two at most) once the stream is sequential, for the disk cache.
                self.assertLessEqual(fetched, size + READAHEAD + 3 * BLOCK)
                for first, last in ranges_of(requests):
                    self.assertGreaterEqual(first, offset - BLOCK)
                    self.assertLessEqual(last, offset + size + READAHEAD + BLOCK)
                self.assertTrue(all(r[2] == 206 for r in requests), requests)
                # Every range request is conditional on the ETag the mount recorded (nginx's: "mtime-size").
                etag = '"%x-%x"' % (int(os.stat(os.path.join(self.data, "big.safetensors")).st_mtime),
                                    len(self.bytes))
                self.assertEqual({r[5] for r in requests}, {etag})
                stats = stats_of(m)
                self.assertEqual(stats["requests"], MOUNT_REQUESTS + len(requests))
                self.assertEqual(stats["bytes_fetched"], HEAD + fetched)
                self.assertEqual(stats["retries"], 0)
                self.unmount_and_wait(m)  # its read-ahead's requests must not count as the next one's


    def test_peeking_at_a_tensor_fetches_a_few_blocks_not_the_tensor(self):
        # The kernel's own read-ahead turns a 4 KiB read() into two sequential reads of up to 1 MiB each; the
        # second opens a window of twice what the stream read, from the stream's first block: a few MiB of the
        # tensor's 40, whatever readahead= allows.
        m = self.mount()
        mark = self.log_mark()
        with open(m.tensor("b", "raw"), "rb") as f:
            self.assertEqual(f.read(4096), self.raw_of("b")[:4096])
        settled = settled_stats_of(m)["requests"]
        fetched = sum(r[3] for r in self.requests_since(mark, at_least=settled - MOUNT_REQUESTS))
        self.assertLessEqual(fetched, 8 * BLOCK)


class StoppedThread:
    """One thread of another process held stopped while the process's other threads run on (ptrace: PTRACE_SEIZE,
    then PTRACE_INTERRUPT), until resume()."""
    SEIZE, INTERRUPT, DETACH = 0x4206, 0x4207, 17
    WAIT_ALL = 0x40000000  # __WALL: wait for a thread that is not a child process

    def __init__(self, tid):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p)
        self.tid = tid
        self.call(self.SEIZE)
        self.call(self.INTERRUPT)
        os.waitpid(tid, self.WAIT_ALL)

    def call(self, request):
        if self.libc.ptrace(request, self.tid, None, None) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"ptrace {request:#x} of thread {self.tid}: {os.strerror(error)}")

    def resume(self):
        if self.tid is not None:
            self.call(self.DETACH)
            self.tid = None


def disk_writer_of(pid):
    """The thread id of the daemon's disk cache writer (it names itself), once it sleeps: it holds its queue's lock
    only while it runs, so stopping it then leaves the queue open to the readers."""
    def idle_writer():
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    name = f.read().strip()
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue  # a thread that ended meanwhile
            if name == "tensorfs-disk" and state == "S":
                return int(tid)
        return None

    assert wait_until(lambda: idle_writer() is not None), "no idle disk writer thread in the daemon"
    return idle_writer()


class DiskCache(RemoteModel):
    def test_a_block_asked_about_before_its_disk_write_is_read_from_the_disk_once_it_leaves_memory(self):
        # A block fetched whole goes to readers at once and to the disk cache's queue; it is in memory, not yet on
        # disk. The read-ahead asks the disk about it all the same when a reader's stream reaches it. Held with the
        # writer stopped, that moment cannot pass before the question: the answer "not on disk" must not outlive the
        # write, or the block is fetched again once it leaves memory (and fails with the server gone).
        # cache_size=64M: 32 MiB for fetched blocks, 8 MiB of them queued for the disk at most (c and its read-ahead
        # of readahead=1M fit in that; the writer is stopped while they wait).
        m = self.mount(None, "-o", "cache_size=64M,readahead=1M")
        [pid] = daemon_pids(m.path)
        self.assertEqual(read_file(m.tensor("a", "raw")), self.raw_of("a"))  # the writer's first blocks
        self.assertTrue(wait_until(lambda: settled_stats_of(m)["memory"]["queued_for_disk_bytes"] == 0))
        writer = StoppedThread(disk_writer_of(pid))
        self.addCleanup(writer.resume)

        # One page 2.5 MiB into c: its block is fetched whole and waits for the disk. Then c in order: its stream
        # began at that page, so its read-ahead starts from that block, which it finds in memory after asking the disk.
        offset, size = self.spans["c"]
        touched = (offset + 5 * MIB // 2) // BLOCK
        with open(m.tensor("c", "raw"), "rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
            self.assertEqual(os.pread(f.fileno(), 4096, 5 * MIB // 2), self.raw_of("c")[5 * MIB // 2:][:4096])
        self.assertEqual(read_file(m.tensor("c", "raw")), self.raw_of("c"))
        settled_stats_of(m)
        writer.resume()
        # The blocks the stream fetched whole, from the touched one on (before it, c's reads crossing a block edge
        # were fetched exactly: kept as pieces).
        whole = {f"{block}.block" for block in range(touched, (offset + size - 1) // BLOCK + 1)}
        self.assertTrue(wait_until(lambda: whole <= {os.path.basename(path) for path in self.block_files()}),
                        "c's blocks were never written to the disk cache")

        # One page of each block of b: 40 MiB of blocks not read to their end push c's out of memory (blocks read to
        # their end leave first). c again then asks the disk, not the server.
        b_offset, b_size = self.spans["b"]
        with open(m.tensor("b", "raw"), "rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
            for block in range(-(-b_offset // BLOCK), (b_offset + b_size) // BLOCK):
                at = block * BLOCK - b_offset + 4096
                self.assertEqual(os.pread(f.fileno(), 4096, at), self.raw_of("b")[at:at + 4096])
        settled_stats_of(m)
        mark, hits = self.log_mark(), stats_of(m)["disk_cache_hits"]
        drop_cached_pages(m.tensor("c", "raw"))
        self.assertEqual(read_file(m.tensor("c", "raw")), self.raw_of("c"))
        # Every block wholly in c came from the disk (they had left memory: else this test would prove nothing).
        self.assertGreaterEqual(stats_of(m)["disk_cache_hits"] - hits, size // BLOCK - 1)
        self.unmount_and_wait(m)
        asked = [(first, last) for first, last in ranges_of(r for r in self.requests_since(mark)
                                                             if r[1] == "/big.safetensors")
                 if first < offset + size and last >= offset]
        self.assertEqual(asked, [], f"c's bytes fetched again (block {touched} was the one asked about)")

    def test_a_remount_reads_a_cached_tensor_with_no_range_request(self):
        m = Mount(self.url, "--cache-dir", self.cache).__enter__()
        self.assertEqual(read_file(m.tensor("b", "raw")), self.raw_of("b"))
        self.unmount_and_wait(m)
        mark = self.log_mark()
        m = self.mount()
        self.assertEqual(read_file(m.tensor("b", "raw")), self.raw_of("b"))
        requests = self.requests_since(mark, at_least=settled_stats_of(m)["requests"])
        big = [r for r in requests if r[1] == "/big.safetensors"]
        # The mount's own, asking whether the file changed (answered without a body), and nothing else: every byte
        # of the tensor was fetched once, whole blocks kept, and a reader of cached bytes opens no read-ahead window
        # past them.
        self.assertEqual([(r[2], r[3], r[4]) for r in big], [(304, 0, f"bytes=0-{HEAD - 1}")], big)
        self.assertEqual(stats_of(m)["bytes_fetched"], 0)
        self.assertGreaterEqual(stats_of(m)["disk_cache_hits"], 40 * MIB // BLOCK)

    def test_a_remount_serves_the_whole_model_from_the_disk_cache_byte_for_byte(self):
        m = self.mount()
        read_file(os.path.join(m.path, "model.safetensors"))
        self.unmount_and_wait(m)
        m = self.mount()
        # model.safetensors' header is not the source's length, so its reads straddle the cache's blocks; raw's
        # replies are whole blocks and parts of them: both come from the cache's files (spliced where the kernel
        # can), each byte where the source has it.
        model = read_file(os.path.join(m.path, "model.safetensors"))
        raws = {name: read_file(m.tensor(name, "raw")) for name in self.spans}
        self.assertEqual(stats_of(m)["bytes_fetched"], 0)
        self.assertGreaterEqual(stats_of(m)["disk_cache_hits"], len(self.bytes) // BLOCK)
        (header_length,) = struct.unpack("<Q", model[:8])
        header = json.loads(model[8:8 + header_length])
        self.assertEqual(set(header) - {"__metadata__"}, set(self.spans))
        data = model[8 + header_length:]
        self.assertEqual(len(data), sum(size for _, size in self.spans.values()))
        for name in self.spans:
            begin, end = header[name]["data_offsets"]
            self.assertTrue(data[begin:end] == self.raw_of(name), f"{name} in model.safetensors")
            self.assertTrue(raws[name] == self.raw_of(name), f"{name}/raw")

    def test_bytes_an_exact_read_fetched_are_kept_across_mounts_and_fetched_once(self):
        # A read across a block edge that is not part of a sequential stream is fetched exactly. Its bytes go to the
        # disk cache as pieces of the two blocks: the same read through a new mount asks for nothing, and a reader
        # of the whole tensor after it fetches only the rest of those blocks.
        offset, size = self.spans["d"]
        edge = (offset // MIB + 3) * MIB
        start = (edge - offset - (64 << 10)) // 4096 * 4096  # 64-68 KiB before the edge, page-aligned in raw
        expected = self.raw_of("d")
        first_mark = self.log_mark()
        for _ in range(2):
            m = self.mount()
            with open(m.tensor("d", "raw"), "rb", buffering=0) as f:
                f.seek(start)
                self.assertEqual(f.read(128 << 10), expected[start:start + (128 << 10)])
            self.unmount_and_wait(m)
        requests = [r for r in self.requests_since(first_mark) if r[1] == "/big.safetensors"]
        self.assertEqual(len(ranges_of(requests)), 3, requests)  # the first mount's head and read; the second's head
        self.assertEqual(ranges_of(requests)[1], (offset + start, offset + start + (128 << 10) - 1))
        self.assertEqual([r[2] for r in requests], [206, 206, 304], requests)

        mark = self.log_mark()
        m = self.mount()
        self.assertEqual(read_file(m.tensor("d", "raw")), expected)
        asked = sorted(ranges_of(r for r in self.requests_since(mark, at_least=settled_stats_of(m)["requests"])
                                 if r[1] == "/big.safetensors" and r[2] == 206))
        for first, last in asked:
            self.assertTrue(last < offset + start or first >= offset + start + (128 << 10), (first, last))

    def test_cat_uses_the_same_cache(self):
        m = Mount(self.url, "--cache-dir", self.cache).__enter__()
        self.assertEqual(read_file(m.tensor("c", "raw")), self.raw_of("c"))
        self.unmount_and_wait(m)
        mark = self.log_mark()
        result = run("cat", self.url, "c", "--raw", "--cache-dir", self.cache, text=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, self.raw_of("c"))
        requests = ranges_of(self.requests_since(mark, at_least=1))
        self.assertEqual(requests[0], (0, HEAD - 1))  # cat's own first one
        # The rest, if any, is the read-ahead going on past the tensor (it follows the reader): never its bytes.
        self.assertTrue(all(first >= after_blocks_of(*self.spans["c"]) for first, _ in requests[1:]), requests)

    def test_two_daemons_share_the_cache_at_once(self):
        first, second = self.mount(), self.mount()
        results = {}

        def read(label, m):
            results[label] = [read_file(m.tensor(name, "raw")) for name in ("b", "d", "a")]

        readers = [threading.Thread(target=read, args=(label, m)) for label, m in (("1", first), ("2", second))]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(300)
        expected = [self.raw_of(name) for name in ("b", "d", "a")]
        self.assertEqual(results["1"], expected)
        self.assertEqual(results["2"], expected)
        self.unmount_and_wait(first)
        self.unmount_and_wait(second)
        self.check_blocks_are_whole_and_right()

    def check_blocks_are_whole_and_right(self, expect_some=True):
        """Every published block holds exactly the file's bytes at its place: none is torn or stale."""
        blocks = self.block_files()
        if expect_some:
            self.assertTrue(blocks)
        for path in blocks:
            index = int(os.path.basename(path).split(".")[0])
            self.assertEqual(read_file(path), self.bytes[index * BLOCK:(index + 1) * BLOCK], path)

    def test_the_cache_stays_within_its_size(self):
        m = self.mount(None, "-o", "disk_cache_size=20M")
        for name in ("a", "b", "c", "d"):
            self.assertEqual(read_file(m.tensor(name, "raw")), self.raw_of(name))
        self.unmount_and_wait(m)
        self.assertLessEqual(sum(os.path.getsize(p) for p in self.block_files()), 20 * MIB)
        self.check_blocks_are_whole_and_right()

    def test_no_disk_cache_when_its_size_is_zero(self):
        m = self.mount(None, "-o", "disk_cache_size=0")
        self.assertEqual(read_file(m.tensor("a", "raw")), self.raw_of("a"))
        self.assertEqual(self.block_files(), [])

    def test_kill_9_during_a_download_then_a_remount_reads_right(self):
        proxy = FaultProxy(self.server.http)
        self.addCleanup(proxy.stop)
        proxy.delay = 0.3
        url = f"http://127.0.0.1:{proxy.port}/big.safetensors"
        m = Mount(url, "--cache-dir", self.cache).__enter__()
        try:
            [pid] = daemon_pids(m.path)
            reader = threading.Thread(target=lambda: self.read_ignoring_errors(m.tensor("b", "raw")), daemon=True)
            reader.start()
            self.assertTrue(wait_until(lambda: sum(1 for has_range, _ in proxy.served if has_range) >= 3))
            os.kill(pid, signal.SIGKILL)
            reader.join(60)
        finally:
            self.assertEqual(run("umount", m.path).returncode, 0)
            m.__exit__(None, None, None)
        # The daemon may have died before it published any block, never in the middle of one.
        self.check_blocks_are_whole_and_right(expect_some=False)
        proxy.delay = 0
        m = self.mount(url)
        self.assertEqual(read_file(m.tensor("b", "raw")), self.raw_of("b"))
        self.unmount_and_wait(m)
        self.check_blocks_are_whole_and_right()

    @staticmethod
    def read_ignoring_errors(path):
        try:
            read_file(path)
        except OSError:
            pass  # the daemon was killed under the reader


class HeaderLongerThanTheHead(unittest.TestCase):
    """A file whose header is longer than what an open fetches: the parser reads the rest while the mount starts,
    before its daemon forks. Those bytes are kept in the disk cache too (written at once: a thread started then would
    not be in the daemon), and the daemon's own writes still reach the disk: the first mount fetches each byte of the
    file once, and a 32 MiB tensor read again through a new mount on the same cache sends no range request."""

    def setUp(self):
        remote_servers.use_remote_environment()
        self.data = tempfile.mkdtemp(prefix="tensorfs-remote-data-")
        self.addCleanup(shutil.rmtree, self.data, ignore_errors=True)
        self.cache = tempfile.mkdtemp(prefix="tensorfs-cache-")
        self.addCleanup(shutil.rmtree, self.cache, ignore_errors=True)
        values = np.random.default_rng(7).standard_normal(8 << 20, dtype=np.float32)
        self.raw = values.tobytes()
        header = {"__metadata__": {"notes": "n" * (300 << 10)},
                  "w": {"dtype": "F32", "shape": [len(values)], "data_offsets": [0, len(self.raw)]}}
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        self.assertGreater(len(text), 4 * HEAD)
        with open(os.path.join(self.data, "long.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + self.raw)
        self.size = 8 + len(text) + len(self.raw)
        self.server = Nginx(self.data)
        self.addCleanup(self.server.stop)
        self.url = f"http://127.0.0.1:{self.server.http}/long.safetensors"

    def requests(self, mark, at_least=0):
        wait_until(lambda: len(self.server.log_lines()) - mark >= at_least)
        return [r for r in requests_in(self.server.log_lines()[mark:]) if r[1] == "/long.safetensors"]

    def read_through_a_mount(self):
        m = Mount(self.url, "--cache-dir", self.cache).__enter__()
        try:
            self.assertEqual(read_file(m.tensor("w", "raw")), self.raw)
            requests = settled_stats_of(m)["requests"]
        finally:
            m.__exit__(None, None, None)
        self.assertTrue(wait_until(lambda: not daemon_pids(m.path)), "the daemon outlived its mount")
        return requests

    def test_each_byte_is_fetched_once_and_a_remount_sends_no_range_request(self):
        mark = len(self.server.log_lines())
        self.read_through_a_mount()
        # The whole file was read (its header, then its only tensor): exactly the file was sent.
        self.assertTrue(wait_until(lambda: sum(r[3] for r in self.requests(mark)) >= self.size))
        self.assertEqual(sum(r[3] for r in self.requests(mark)), self.size, self.requests(mark))
        mark = len(self.server.log_lines())
        self.read_through_a_mount()
        # Only the open's question whether the file changed, answered without a body.
        self.assertEqual([(r[2], r[3]) for r in self.requests(mark, at_least=1)], [(304, 0)], self.requests(mark))


class NetworkFaults(RemoteModel):
    """Each fault ends with the right bytes or EIO for that read, the daemon alive."""

    def setUp(self):
        super().setUp()
        self.proxy = FaultProxy(self.server.http)
        self.addCleanup(self.proxy.stop)
        self.m = self.mount(f"http://127.0.0.1:{self.proxy.port}/big.safetensors")
        [self.pid] = daemon_pids(self.m.path)

    def tearDown(self):
        self.assertTrue(daemon_pids(self.m.path), "the daemon died")

    def test_503_then_success(self):
        self.proxy.queue(("status", 503, {}), ("status", 503, {}))
        self.assertEqual(read_file(self.m.tensor("a", "raw")), self.raw_of("a"))
        self.assertGreaterEqual(stats_of(self.m)["retries"], 2)

    def test_429_waits_as_long_as_retry_after_says(self):
        self.proxy.queue(("status", 429, {"Retry-After": "2"}))
        started = time.monotonic()
        self.assertEqual(read_file(self.m.tensor("a", "raw")), self.raw_of("a"))
        self.assertGreaterEqual(time.monotonic() - started, 2.0)
        self.assertGreaterEqual(stats_of(self.m)["retries"], 1)

    def test_connection_cut_in_the_middle_of_a_body(self):
        self.proxy.queue(("cut",), ("cut",))
        self.assertEqual(read_file(self.m.tensor("b", "raw")), self.raw_of("b"))
        self.assertGreaterEqual(stats_of(self.m)["retries"], 1)

    def test_body_shorter_than_its_content_length(self):
        self.proxy.queue(("short",))
        self.assertEqual(read_file(self.m.tensor("c", "raw")), self.raw_of("c"))
        self.assertGreaterEqual(stats_of(self.m)["retries"], 1)

    def test_a_slow_server_makes_reads_slow_not_wrong(self):
        self.proxy.delay = 0.2
        self.assertEqual(read_file(self.m.tensor("a", "raw")), self.raw_of("a"))

    def test_a_server_that_keeps_failing_fails_that_read_with_eio_only(self):
        self.proxy.queue(*[("status", 503, {})] * 100)
        with self.assertRaises(OSError) as caught:
            read_file(self.m.tensor("a", "raw"))
        self.assertEqual(caught.exception.errno, errno.EIO)
        with self.proxy.lock:
            self.proxy.faults.clear()
        self.assertEqual(read_file(self.m.tensor("c", "raw")), self.raw_of("c"))
        self.assertEqual(read_file(self.m.tensor("a", "raw")), self.raw_of("a"))


class ObjectReplaced(unittest.TestCase):
    def test_reads_of_a_replaced_object_fail_with_eio_never_mixed(self):
        remote_servers.use_remote_environment()
        data = tempfile.mkdtemp(prefix="tensorfs-remote-data-")
        self.addCleanup(shutil.rmtree, data, ignore_errors=True)
        spans, _ = make_model(data, 1)
        path = os.path.join(data, "big.safetensors")
        with open(path, "rb") as f:
            old = f.read()
        server = Nginx(data)
        self.addCleanup(server.stop)
        # In the foreground, to see its log on stderr.
        folder = tempfile.mkdtemp(prefix="tensorfs-replaced-", dir=data)
        mountpoint, log = os.path.join(folder, "mnt"), open(os.path.join(folder, "stderr"), "w+")
        os.mkdir(mountpoint)
        self.addCleanup(log.close)
        daemon = subprocess.Popen([BIN, "mount", "-f", f"http://127.0.0.1:{server.http}/big.safetensors", mountpoint,
                                   "--cache-dir", os.path.join(folder, "cache")], stderr=log)
        self.addCleanup(daemon.wait, 60)
        self.addCleanup(lambda: is_mounted(mountpoint) and unmount(mountpoint))
        self.assertTrue(wait_until(lambda: is_mounted(mountpoint) and os.path.exists(os.path.join(mountpoint, "a"))))
        offset, size = spans["a"]
        self.assertEqual(read_file(os.path.join(mountpoint, "a", "raw")), old[offset:offset + size])

        # The same layout with other values: same size, another ETag (nginx's is mtime and size).
        replacement = tempfile.mkdtemp(dir=data)
        make_model(replacement, 2)
        os.utime(os.path.join(replacement, "big.safetensors"), (1_000_000_000, 1_000_000_000))
        os.rename(os.path.join(replacement, "big.safetensors"), path)

        for name in ("b", "d", "b"):
            with self.assertRaises(OSError) as caught:
                read_file(os.path.join(mountpoint, name, "raw"))
            self.assertEqual(caught.exception.errno, errno.EIO)
        with open(os.path.join(mountpoint, ".tensorfs", "stats.json")) as f:
            stats = json.load(f)
        self.assertEqual(stats["remote"]["objects_changed"], 1)
        self.assertGreaterEqual(stats["read_errors"], 3)
        self.assertIsNone(daemon.poll(), "the daemon died")
        self.assertEqual(unmount(mountpoint).returncode, 0)
        self.assertEqual(daemon.wait(60), 0)
        log.seek(0)
        # The change is logged once; the reads it fails are logged as reads that failed (at most one line per 5 s).
        changed = [line for line in log.read().splitlines()
                   if "changed on the server" in line and "read failed" not in line]
        self.assertEqual(len(changed), 1, changed)
        self.assertIn("big.safetensors", changed[0])


class HubCredentials(unittest.TestCase):
    """The token goes to the Hub's host and never to the host the Hub redirects file reads to."""

    SECRET = "hf_test_secret_token"

    def setUp(self):
        remote_servers.use_remote_environment()
        self.nginx = remote_servers.nginx()

    def env(self, **extra):
        env = dict(os.environ)
        env.update(extra)
        return env

    def check_token_stays_with_the_hub(self, env):
        hub_mark, cdn_mark = len(self.nginx.log_lines("hub.log")), len(self.nginx.log_lines("cdn.log"))
        source = remote_servers.HUB.source("gguf/tiny-llama-Q4_K_M.gguf")
        with Mount(source, "--cache-dir", tempfile.mkdtemp(dir=env["XDG_CACHE_HOME"]), env=env) as m:
            for name in os.listdir(m.path):
                if os.path.isdir(os.path.join(m.path, name)) and not name.startswith(".") and name != "source":
                    read_file(os.path.join(m.path, name, "raw"))
        # nginx writes a request's line after its last byte: the lines can come after the reads have ended.
        self.assertTrue(wait_until(lambda: len(self.nginx.log_lines("hub.log")) > hub_mark
                                   and len(self.nginx.log_lines("cdn.log")) > cdn_mark))
        hub, cdn = self.nginx.log_lines("hub.log")[hub_mark:], self.nginx.log_lines("cdn.log")[cdn_mark:]
        self.assertTrue(all(f'authorization="Bearer {self.SECRET}"' in line for line in hub), hub)
        self.assertTrue(all('authorization="-"' in line for line in cdn), cdn)
        self.assertFalse(any(self.SECRET in line for line in cdn))

    def test_hf_token_reaches_the_hub_only(self):
        self.check_token_stays_with_the_hub(self.env(HF_TOKEN=self.SECRET))

    def test_the_token_file_reaches_the_hub_only(self):
        home = tempfile.mkdtemp(dir=os.environ["XDG_CACHE_HOME"])
        with open(os.path.join(home, "token"), "w") as f:
            f.write(self.SECRET + "\n")
        self.check_token_stays_with_the_hub(self.env(HF_HOME=home))

    def test_a_listing_in_pages(self):
        """The index of test-org/paged is on the second page of its listing: the folder rule must see it."""
        result = run("info", "--json", "hf://test-org/paged", env=self.env())
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([f["path"] for f in json.loads(result.stdout)["files"]],
                         [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)])
        self.assertIn("total_size", json.loads(result.stdout)["metadata"])

    def test_listing_entries_of_other_shapes_are_passed_over(self):
        """Entries that are not objects, or whose type or path is not a string, are skipped, never a crash."""
        result = run("info", "--json", "hf://test-org/odd", env=self.env())
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([f["path"] for f in json.loads(result.stdout)["files"]],
                         [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)])

    def test_refused_credentials_name_hf_token(self):
        for source, status in (("hf://test-org/private/model.safetensors", "401"), ("hf://test-org/gated", "403")):
            for env in (self.env(), self.env(HF_TOKEN=self.SECRET)):
                with self.subTest(source=source, token="HF_TOKEN" in env):
                    result = run("ls", source, env=env)
                    self.assertEqual(result.returncode, 1)
                    [line] = result.stderr.splitlines()
                    self.assertTrue(line.startswith(f"tensorfs: {source}"), line)
                    self.assertIn(f"HTTP {status}", line)
                    self.assertIn("HF_TOKEN", line)
                    self.assertNotIn(self.SECRET, line)


class HubCommits(unittest.TestCase):
    """A branch is resolved to its commit at the first request, and every file and listing after comes from that
    commit: a push while a mount is up changes nothing it serves, as huggingface_hub pins a download."""

    def setUp(self):
        remote_servers.use_remote_environment()

    def read_tensor(self, mount):
        with open(os.path.join(mount.path, "w", "raw"), "rb") as f:
            return f.read()

    def test_a_push_while_mounted_changes_nothing_the_mount_serves(self):
        first, second, _ = remote_servers.MOVING_COMMITS
        self.addCleanup(remote_servers.move_branch, remote_servers.MOVING_REPO, first)
        source = f"hf://{remote_servers.MOVING_REPO}"
        with Mount(source) as m:
            # The mount read the header and the start of the tensor; the rest is fetched after the push.
            remote_servers.move_branch(remote_servers.MOVING_REPO, second)
            self.assertEqual(self.read_tensor(m), bytes([1]) * (3 << 20))
        with Mount(source) as m:
            self.assertEqual(self.read_tensor(m), bytes([2]) * (3 << 20))

    def test_a_commit_is_used_as_given(self):
        second = remote_servers.MOVING_COMMITS[1]
        with Mount(f"hf://{remote_servers.MOVING_REPO}@{second}") as m:
            self.assertEqual(self.read_tensor(m), bytes([2]) * (3 << 20))

    def test_a_file_a_push_left_alone_keeps_its_cached_blocks(self):
        first, _, third = remote_servers.MOVING_COMMITS
        self.addCleanup(remote_servers.move_branch, remote_servers.MOVING_REPO, first)
        source = f"hf://{remote_servers.MOVING_REPO}"
        cache = tempfile.mkdtemp(dir=os.environ["XDG_CACHE_HOME"])
        with Mount(source, "--cache-dir", cache) as m:
            self.read_tensor(m)
        # The daemon writes the blocks it still holds to the disk cache before it ends.
        self.assertTrue(wait_until(lambda: not daemon_pids(m.path)), "the daemon outlived its mount")
        remote_servers.move_branch(remote_servers.MOVING_REPO, third)
        with Mount(source, "--cache-dir", cache) as m:
            self.assertTrue(os.path.exists(os.path.join(m.path, "source", "README.md")))  # of the third commit
            before = stats_of(m)["bytes_fetched"]
            self.assertEqual(self.read_tensor(m), bytes([1]) * (3 << 20))
            self.assertEqual(stats_of(m)["bytes_fetched"], before)

    def test_an_unknown_revision_is_one_clear_line(self):
        source = f"hf://{remote_servers.MOVING_REPO}@no-such-branch"
        result = run("ls", source)
        self.assertEqual(result.returncode, 1)
        [line] = result.stderr.splitlines()
        self.assertTrue(line.startswith(f"tensorfs: {source}: no such repository or revision on the Hub"), line)


class SourceErrors(unittest.TestCase):
    """One line naming the URL and the server's reason, exit status 1, nothing mounted."""

    def setUp(self):
        remote_servers.use_remote_environment()

    def assert_one_line(self, args, *parts, env=None):
        result = run(*args, env=env)
        self.assertEqual(result.returncode, 1, result.stderr)
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        for part in parts:
            self.assertIn(part, lines[0])
        return lines[0]

    def test_not_found_names_the_file(self):
        for source in (remote_servers.HTTP.source("gguf/absent.gguf"), remote_servers.HUB.source("absent.safetensors")):
            with self.subTest(source=source):
                self.assert_one_line(["info", source], f"tensorfs: {source}: ", "404")
                with tempfile.TemporaryDirectory() as folder:
                    self.assert_one_line(["mount", source, folder], f"tensorfs: {source}: ", "404")
                    self.assertFalse(is_mounted(folder))

    def test_a_server_that_cannot_be_reached(self):
        with socket.socket() as held:  # a port bound here and never listened on: connections are refused
            held.bind(("127.0.0.1", 0))
            source = f"http://127.0.0.1:{held.getsockname()[1]}/model.gguf"
            self.assert_one_line(["validate", source], f"tensorfs: {source}: ", "cannot connect")

    def test_an_untrusted_certificate_is_one_clear_line(self):
        env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "CURL_CA_BUNDLE")}
        source = remote_servers.HTTPS.source("gguf/mixed.gguf")
        self.assert_one_line(["ls", source], f"tensorfs: {source}: ", "certificate", env=env)
        env["CURL_CA_BUNDLE"] = remote_servers.nginx().ca
        self.assertEqual(run("ls", source, env=env).returncode, 0)

    def test_a_password_in_a_url_never_shows(self):
        source = remote_servers.HTTP.source("gguf/mixed.gguf").replace("http://", "http://someone:hunter2@")
        with Mount(source) as m:
            with open("/proc/self/mountinfo") as f:
                line = next(line for line in f if line.split()[4] == os.path.realpath(m.path))
            self.assertNotIn("hunter2", line)
            self.assertIn(source.replace("someone:hunter2@", ""), line)
            with open(os.path.join(m.path, "model.json")) as f:
                self.assertNotIn("hunter2", f.read())
        self.assertNotIn("hunter2", self.assert_one_line(["ls", source.replace("mixed", "absent")], "404"))

    def test_a_web_server_folder_cannot_be_listed(self):
        source = remote_servers.HTTP.source("safetensors/sharded/")
        self.assert_one_line(["ls", source], "no listing")

    def test_a_hub_folder_with_several_models_asks_for_a_path(self):
        # ls lists them (test_edges); a command that needs one model refuses, naming them and how to pick one.
        self.assert_one_line(["validate", remote_servers.HUB.source("gguf")], "hf://test-org/vectors/gguf",
                             "tiny-llama-Q4_K_M.gguf", "--model PATH", "name its file")

    def test_bad_cache_options_are_usage_errors(self):
        source = remote_servers.HTTP.source("gguf/mixed.gguf")
        self.assert_one_line(["ls", source, "--disk-cache-size", "lots"], "bad --disk-cache-size")
        with tempfile.TemporaryDirectory() as folder:
            self.assert_one_line(["mount", source, folder, "-o", "disk_cache_size=lots"], "bad disk_cache_size")


if __name__ == "__main__":
    unittest.main()
