"""The malformed corpora through `tensorfs validate` and `tensorfs mount`, each under an address-space limit of 1
GiB: a header number that sized an allocation before it was checked would fail there. The reference kit's
(tests/data/vectors/malformed, manifest.json "malformed") covers GGUF and safetensors; tests/data/pytorch/malformed
(written by make_pytorch_corpus.py) covers PyTorch checkpoints, hostile pickles among them. Every file gets its
expected outcome; a refused one exits 1 with one or more `tensorfs: FILE: ...` lines (one of them with the words
its manifest gives), never dies of a signal, runs nothing (the canary files its pickle would create under
torch.load stay absent) and leaves nothing mounted."""
import filecmp
import json
import os
import resource
import subprocess
import sys
import tempfile
import unittest

import make_pytorch_corpus
from binary_info import asan_instrumented
import remote_servers
import s3_servers
from tensorfs_mount import DATA, VECTORS, daemon_pids, is_mounted, manifest, run, wait_until

PYTORCH_CORPUS = os.path.join(DATA, "pytorch", "malformed")


def pytorch_manifest():
    with open(os.path.join(PYTORCH_CORPUS, "manifest.json")) as f:
        return json.load(f)["malformed"]

ADDRESS_SPACE_LIMIT = 1 << 30


def limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))


def limited_run(*args, cwd=None):
    """`tensorfs ARGS...` under the address-space limit (not for an ASan binary: its shadow memory alone
    reserves terabytes of address space)."""
    return run(*args, preexec_fn=None if asan_instrumented() else limit_address_space, cwd=cwd)


def canaries_in(folder, entry):
    """The canary files of `entry` found in `folder` or at the root (where a daemon runs)."""
    canary = entry.get("canary")
    if canary is None:
        return []
    return [p for p in (os.path.join(folder, canary), os.path.join("/", canary)) if os.path.exists(p)]


class MalformedCorpus(unittest.TestCase):
    where = remote_servers.LOCAL

    @classmethod
    def setUpClass(cls):
        cls.kit_entries = manifest()["malformed"]
        cls.pytorch_entries = pytorch_manifest()
        # Every entry with the SOURCE naming its file. The PyTorch corpus is read locally only (the test servers
        # serve tests/data/vectors; test_pytorch_mount.py reads checkpoints, hostile ones too, over HTTP and the Hub).
        cls.entries = [dict(e, path=cls.where.source(e["file"])) for e in cls.kit_entries]
        if cls.where is remote_servers.LOCAL:
            cls.entries += [dict(e, path=os.path.join(PYTORCH_CORPUS, e["file"])) for e in cls.pytorch_entries]
        if asan_instrumented():
            print("\nmalformed: the binary is ASan-instrumented; running without the 1 GiB address-space limit "
                  "(ASan reserves terabytes of virtual memory for its shadow)")

    def assert_refused(self, result, entry):
        path = entry["path"]
        self.assertEqual(result.returncode, 1, f"exit {result.returncode} (negative: killed by a signal)\n"
                                               f"{result.stderr}")
        lines = result.stderr.splitlines()
        self.assertTrue(lines, "no reason given")
        for line in lines:
            self.assertTrue(line.startswith("tensorfs: "), line)
        self.assertTrue(any(line.startswith(f"tensorfs: {path}: ") for line in lines), result.stderr)
        if "refusal" in entry:
            self.assertTrue(any(line.startswith(f"tensorfs: {path}: ") and entry["refusal"] in line
                                for line in lines), f"{entry['refusal']!r} not in {result.stderr}")

    def test_corpus_is_complete(self):
        self.assertGreaterEqual(len(self.kit_entries), 35)
        listed = {os.path.basename(e["file"]) for e in self.kit_entries}
        self.assertEqual(listed, set(os.listdir(os.path.join(VECTORS, "malformed"))))
        self.assertGreaterEqual(len(self.pytorch_entries), 30)
        listed = {e["file"] for e in self.pytorch_entries} | {"manifest.json"}
        self.assertEqual(listed, set(os.listdir(PYTORCH_CORPUS)))

    def test_pytorch_corpus_is_what_its_generator_writes(self):
        with tempfile.TemporaryDirectory(prefix="tensorfs-corpus-") as folder:
            make_pytorch_corpus.main(folder)
            written = sorted(os.listdir(folder))
            self.assertEqual(written, sorted(os.listdir(PYTORCH_CORPUS)))
            for name in written:
                self.assertTrue(filecmp.cmp(os.path.join(folder, name), os.path.join(PYTORCH_CORPUS, name),
                                            shallow=False), name)

    def test_hostile_pickles_run_under_torch_load_but_not_under_tensorfs(self):
        hostile = [e for e in self.entries if "canary" in e]
        self.assertGreaterEqual(len(hostile), 7)
        for entry in hostile:
            with self.subTest(file=entry["file"]):
                # The file is live: torch.load runs its pickle, which creates the canary.
                with tempfile.TemporaryDirectory(prefix="tensorfs-canary-") as folder:
                    subprocess.run([sys.executable, "-c", "import sys, torch; torch.load(sys.argv[1])", entry["path"]],
                                   cwd=folder, capture_output=True, timeout=120)
                    self.assertTrue(os.path.exists(os.path.join(folder, entry["canary"])), "the canary is not live")
                # tensorfs refuses it and runs nothing.
                with tempfile.TemporaryDirectory(prefix="tensorfs-canary-") as folder:
                    for command in (["validate"], ["ls"], ["info"], ["cat", entry["path"], "payload"]):
                        args = command if command[0] == "cat" else command + [entry["path"]]
                        result = subprocess.run([os.environ["TENSORFS_BIN"], *args], cwd=folder,
                                                capture_output=True, text=True, timeout=120)
                        self.assertEqual(result.returncode, 1, result.stderr)
                        self.assertIn(entry["refusal"], result.stderr)
                    self.assertEqual(canaries_in(folder, entry), [])

    def test_the_limit_stops_a_large_allocation(self):
        if asan_instrumented():
            self.skipTest("no address-space limit for an ASan binary")
        child = subprocess.run([sys.executable, "-c", "bytearray(2 << 30)"], preexec_fn=limit_address_space,
                               capture_output=True, text=True, timeout=60)
        self.assertNotEqual(child.returncode, 0)
        self.assertIn("MemoryError", child.stderr)

    def test_validate_gives_each_file_its_expected_outcome(self):
        for entry in self.entries:
            with self.subTest(file=entry["file"], expected=entry["expected"]), \
                    tempfile.TemporaryDirectory(prefix="tensorfs-malformed-") as folder:
                result = limited_run("validate", entry["path"], cwd=folder)
                if entry["expected"] == "must be accepted":
                    self.assertEqual(result.returncode, 0, result.stderr)
                else:
                    self.assert_refused(result, entry)
                self.assertEqual(canaries_in(folder, entry), [])

    def test_mount_gives_each_file_its_expected_outcome(self):
        for entry in self.entries:
            path = entry["path"]
            with self.subTest(file=entry["file"], expected=entry["expected"]):
                with tempfile.TemporaryDirectory(prefix="tensorfs-malformed-") as folder:
                    mountpoint = os.path.join(folder, "mnt")
                    os.mkdir(mountpoint)
                    result = limited_run("mount", path, mountpoint, cwd=folder)
                    try:
                        if entry["expected"] == "must be accepted":
                            self.assertEqual(result.returncode, 0, result.stderr)
                            self.assertTrue(is_mounted(mountpoint))
                            self.assertIn("model.json", os.listdir(mountpoint))
                        else:
                            self.assert_refused(result, entry)
                            self.assertEqual(canaries_in(folder, entry), [])
                            self.assertFalse(is_mounted(mountpoint))
                            self.assertEqual(daemon_pids(mountpoint), [])
                            self.assertEqual(os.listdir(mountpoint), [])
                    finally:
                        if is_mounted(mountpoint):
                            self.assertEqual(run("umount", mountpoint).returncode, 0)
                        self.assertTrue(wait_until(lambda: not daemon_pids(mountpoint)))


class MalformedCorpusOverHttp(MalformedCorpus):
    """The same verdicts for the same files fetched by range requests."""
    where = remote_servers.HTTP
    test_corpus_is_complete = None
    test_the_limit_stops_a_large_allocation = None
    test_pytorch_corpus_is_what_its_generator_writes = None
    test_hostile_pickles_run_under_torch_load_but_not_under_tensorfs = None


class MalformedCorpusFromTheHub(MalformedCorpus):
    where = remote_servers.HUB
    test_corpus_is_complete = None
    test_the_limit_stops_a_large_allocation = None
    test_pytorch_corpus_is_what_its_generator_writes = None
    test_hostile_pickles_run_under_torch_load_but_not_under_tensorfs = None


class MalformedCorpusFromS3(MalformedCorpus):
    where = s3_servers.S3
    test_corpus_is_complete = None
    test_the_limit_stops_a_large_allocation = None
    test_pytorch_corpus_is_what_its_generator_writes = None
    test_hostile_pickles_run_under_torch_load_but_not_under_tensorfs = None


if __name__ == "__main__":
    unittest.main()
