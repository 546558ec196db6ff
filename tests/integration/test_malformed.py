"""The malformed corpus (tests/data/vectors/malformed, manifest.json "malformed") through `tensorfs validate` and
`tensorfs mount`, each under an address-space limit of 1 GiB: a header number that sized an allocation before it
was checked would fail there. Every file gets its expected outcome; a refused one exits 1 with one or more
`tensorfs: FILE: ...` lines, never dies of a signal, and leaves nothing mounted."""
import os
import resource
import subprocess
import sys
import tempfile
import unittest

from binary_info import asan_instrumented
import remote_servers
import s3_servers
from tensorfs_mount import VECTORS, daemon_pids, is_mounted, manifest, run, wait_until

ADDRESS_SPACE_LIMIT = 1 << 30


def limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))


def limited_run(*args):
    """`tensorfs ARGS...` under the address-space limit (not for an ASan binary: its shadow memory alone
    reserves terabytes of address space)."""
    return run(*args, preexec_fn=None if asan_instrumented() else limit_address_space)


class MalformedCorpus(unittest.TestCase):
    where = remote_servers.LOCAL

    @classmethod
    def setUpClass(cls):
        cls.entries = manifest()["malformed"]
        if asan_instrumented():
            print("\nmalformed: the binary is ASan-instrumented; running without the 1 GiB address-space limit "
                  "(ASan reserves terabytes of virtual memory for its shadow)")

    def assert_refused(self, result, path):
        self.assertEqual(result.returncode, 1, f"exit {result.returncode} (negative: killed by a signal)\n"
                                               f"{result.stderr}")
        lines = result.stderr.splitlines()
        self.assertTrue(lines, "no reason given")
        for line in lines:
            self.assertTrue(line.startswith("tensorfs: "), line)
        self.assertTrue(any(line.startswith(f"tensorfs: {path}: ") for line in lines), result.stderr)

    def test_corpus_is_complete(self):
        self.assertGreaterEqual(len(self.entries), 35)
        listed = {os.path.basename(e["file"]) for e in self.entries}
        self.assertEqual(listed, set(os.listdir(os.path.join(VECTORS, "malformed"))))

    def test_the_limit_stops_a_large_allocation(self):
        if asan_instrumented():
            self.skipTest("no address-space limit for an ASan binary")
        child = subprocess.run([sys.executable, "-c", "bytearray(2 << 30)"], preexec_fn=limit_address_space,
                               capture_output=True, text=True, timeout=60)
        self.assertNotEqual(child.returncode, 0)
        self.assertIn("MemoryError", child.stderr)

    def test_validate_gives_each_file_its_expected_outcome(self):
        for entry in self.entries:
            path = self.where.source(entry["file"])
            with self.subTest(file=entry["file"], expected=entry["expected"]):
                result = limited_run("validate", path)
                if entry["expected"] == "must be accepted":
                    self.assertEqual(result.returncode, 0, result.stderr)
                else:
                    self.assert_refused(result, path)

    def test_mount_gives_each_file_its_expected_outcome(self):
        for entry in self.entries:
            path = self.where.source(entry["file"])
            with self.subTest(file=entry["file"], expected=entry["expected"]):
                with tempfile.TemporaryDirectory(prefix="tensorfs-malformed-") as folder:
                    mountpoint = os.path.join(folder, "mnt")
                    os.mkdir(mountpoint)
                    result = limited_run("mount", path, mountpoint)
                    try:
                        if entry["expected"] == "must be accepted":
                            self.assertEqual(result.returncode, 0, result.stderr)
                            self.assertTrue(is_mounted(mountpoint))
                            self.assertIn("model.json", os.listdir(mountpoint))
                        else:
                            self.assert_refused(result, path)
                            self.assertFalse(is_mounted(mountpoint))
                            self.assertEqual(daemon_pids(mountpoint), [])
                            self.assertEqual(os.listdir(mountpoint), [])
                    finally:
                        if is_mounted(mountpoint):
                            self.assertEqual(run("umount", mountpoint).returncode, 0)
                        self.assertTrue(wait_until(lambda: not daemon_pids(mountpoint), 10))


class MalformedCorpusOverHttp(MalformedCorpus):
    """The same verdicts for the same files fetched by range requests."""
    where = remote_servers.HTTP
    test_corpus_is_complete = None
    test_the_limit_stops_a_large_allocation = None


class MalformedCorpusFromTheHub(MalformedCorpus):
    where = remote_servers.HUB
    test_corpus_is_complete = None
    test_the_limit_stops_a_large_allocation = None


class MalformedCorpusFromS3(MalformedCorpus):
    where = s3_servers.S3
    test_corpus_is_complete = None
    test_the_limit_stops_a_large_allocation = None


if __name__ == "__main__":
    unittest.main()
