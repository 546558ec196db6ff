"""The edges a new user hits, each refused or explained in one line: convert onto its own source, mounting twice,
onto a file or inside a mount, unmounting what is not there, not mounted or busy, stats of a dead mount, ls/info on
a mount point or one shard (local or remote), stray arguments and typos (commands, options, mount options, cache
actions, tensor names), per-command help, sizes and budgets, readahead=, -o debug, cache prune's durations, a
folder of several models (one rule for every command, --model), ls --files, files that cannot be opened, prefetch
of a local source, diff with nothing paired, cat's 16-bit views, validate --json, stats on a model file."""
import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

import numpy as np

import remote_servers
from pytorch_checkpoints import every_dtype_state_dict, write_sharded
from safetensors_files import write_safetensors
from tensorfs_mount import (BIN, VECTORS, Mount, daemon_pids, is_mounted, manifest, read_file, run, unmount,
                            unmount_or_detach, wait_until)

GGUF = os.path.join(VECTORS, "gguf/tiny-llama-Q4_K_M.gguf")
SAFETENSORS = os.path.join(VECTORS, "safetensors/all_dtypes.safetensors")
SHARDS = os.path.join(VECTORS, "safetensors/sharded")
SPLIT_PART = os.path.join(VECTORS, "gguf/split/tiny-llama-Q4_K_M-00001-of-00003.gguf")
ALIGN64 = os.path.join(VECTORS, "gguf/align64.gguf")


def sha256(path):
    return hashlib.sha256(read_file(path)).hexdigest()


class ConvertNeverEatsItsSource(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="tensorfs-edges-")
        self.source = os.path.join(self.folder, "a.gguf")
        shutil.copyfile(GGUF, self.source)
        self.digest = sha256(self.source)

    def tearDown(self):
        shutil.rmtree(self.folder)

    def test_out_that_is_the_source(self):
        for args in ((self.source, self.source), (self.source, self.source, "--force")):
            with self.subTest(args=args):
                result = run("convert", *args)
                self.assertEqual(result.returncode, 1)
                self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                self.assertEqual(sha256(self.source), self.digest)
                self.assertIn("convert never writes over its own source", result.stderr)
                self.assertNotIn("--force", result.stderr)

    def test_out_that_is_a_hard_link_to_a_shard(self):
        folder = os.path.join(self.folder, "sharded")
        shutil.copytree(SHARDS, folder)
        shard = os.path.join(folder, "model-00002-of-00003.safetensors")
        before = sha256(shard)
        link = os.path.join(self.folder, "out.safetensors")
        os.link(shard, link)
        result = run("convert", folder, link)
        self.assertEqual(result.returncode, 1)
        self.assertIn("model-00002-of-00003.safetensors", result.stderr)
        self.assertIn("never writes over its own source", result.stderr)
        self.assertEqual(sha256(shard), before)

    def test_out_that_is_any_file_the_source_reads(self):
        # The index, a shard and a split part, named as OUT with or without --force: refused, nothing written.
        sharded = os.path.join(self.folder, "sharded")
        shutil.copytree(SHARDS, sharded)
        split = os.path.join(self.folder, "split")
        shutil.copytree(os.path.dirname(SPLIT_PART), split)
        pytorch = os.path.join(self.folder, "pytorch")
        os.mkdir(pytorch)
        write_sharded(pytorch, every_dtype_state_dict())
        index = os.path.join(sharded, "model.safetensors.index.json")
        pytorch_index = os.path.join(pytorch, "pytorch_model.bin.index.json")
        part = os.path.join(split, os.path.basename(SPLIT_PART))
        second_part = part.replace("00001-of", "00002-of")
        cases = [(index, index), (sharded, index), (index, os.path.join(sharded, "model-00001-of-00003.safetensors")),
                 (pytorch_index, pytorch_index), (pytorch, pytorch_index), (part, second_part), (split, part)]
        for source, out in cases:
            before = sha256(out)
            for force in ((), ("--force",)):
                with self.subTest(source=source, out=out, force=force):
                    result = run("convert", source, out, *force)
                    self.assertEqual(result.returncode, 1, result.stderr)
                    self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                    self.assertIn("never writes over its own source", result.stderr)
                    self.assertNotIn("--force", result.stderr)
                    self.assertEqual(sha256(out), before)
        self.assertEqual(run("validate", index).returncode, 0)
        self.assertEqual(run("validate", pytorch_index).returncode, 0)

    def test_other_suffix_needs_force(self):
        out = os.path.join(self.folder, "out.bin")
        result = run("convert", self.source, out)
        self.assertEqual(result.returncode, 1)
        self.assertRegex(result.stderr, r"^tensorfs: .*does not end in \.safetensors: name it \*\.safetensors "
                                        r"\(--force writes another name, never over a file of SOURCE\)")
        self.assertFalse(os.path.exists(out))
        result = run("convert", self.source, out, "--force")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(read_file(out)[8:9], b"{")  # a safetensors header after its 8-byte length


class MountPointEdges(unittest.TestCase):
    def test_mounting_twice_is_refused(self):
        with Mount(GGUF) as mount:
            result = run("mount", GGUF, mount.path)
            self.assertEqual(result.returncode, 2)
            self.assertEqual(result.stderr, f"tensorfs: {mount.path}: already a tensorfs mount (of {GGUF}); "
                                            f"unmount it first: tensorfs umount {mount.path}\n")
            self.assertEqual(len(daemon_pids(mount.path)), 1)
            with open("/proc/self/mountinfo") as f:
                self.assertEqual(sum(line.split()[4] == mount.path for line in f), 1)

    def test_a_file_and_a_missing_folder(self):
        with tempfile.TemporaryDirectory() as tmp:
            file = os.path.join(tmp, "file")
            open(file, "w").close()
            result = run("mount", GGUF, file)
            self.assertEqual((result.returncode, result.stderr), (2, f"tensorfs: {file}: not a directory\n"))
            missing = os.path.join(tmp, "missing")
            result = run("mount", GGUF, missing)
            self.assertEqual((result.returncode, result.stderr),
                             (2, f"tensorfs: {missing}: no such folder; create it first: mkdir -p {missing}\n"))
            self.assertFalse(is_mounted(file) or is_mounted(missing))

    def test_a_folder_that_is_not_empty_gets_a_warning(self):
        with tempfile.TemporaryDirectory() as tmp:
            open(os.path.join(tmp, "hidden-while-mounted"), "w").close()
            result = run("mount", GGUF, tmp)
            try:
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stderr, f"tensorfs: warning: {tmp} is not empty; its files are hidden while "
                                                "the mount is there\n")
                self.assertTrue(os.path.exists(os.path.join(tmp, "model.json")))
            finally:
                unmount(tmp)

    def test_umount_says_not_mounted(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = run("umount", tmp)
            self.assertEqual((result.returncode, result.stderr), (2, f"tensorfs: {tmp}: not mounted\n"))

    def test_umount_says_busy(self):
        with Mount(GGUF) as mount:
            with open(os.path.join(mount.path, "model.json")):
                result = run("umount", mount.path)
                self.assertEqual(result.returncode, 2)
                self.assertEqual(result.stderr,
                                 f"tensorfs: {mount.path}: busy: files are still open under {mount.path}\n")
                self.assertTrue(is_mounted(mount.path))
            result = run("umount", mount.path)
            self.assertEqual((result.returncode, result.stderr), (0, ""))
            self.assertFalse(is_mounted(mount.path))

    def test_umount_of_a_folder_that_does_not_exist(self):
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, "missing")
            result = run("umount", missing)
            self.assertEqual((result.returncode, result.stderr), (2, f"tensorfs: {missing}: no such folder\n"))

    def test_a_mount_inside_a_mount_is_refused(self):
        with Mount(GGUF) as mount:
            inner = os.path.join(mount.path, "blk.0.attn_q.weight")
            link = os.path.join(mount.tmp, "link")
            os.symlink(inner, link)
            for target in (inner, link):
                with self.subTest(target=target):
                    result = run("mount", GGUF, target)
                    mounted = is_mounted(target)
                    unmount_or_detach(target)
                    self.assertFalse(mounted)
                    self.assertEqual((result.returncode, result.stderr),
                                     (2, f"tensorfs: {target}: inside the tensorfs mount {mount.path} (a read-only "
                                         f"tree of {GGUF}); mount somewhere else\n"))
            os.unlink(link)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("mount"), "a bind mount needs root and mount(8)")
    def test_umount_names_the_mounts_inside(self):
        with Mount(GGUF) as mount, tempfile.TemporaryDirectory() as other:
            inner = os.path.join(mount.path, "blk.0.attn_q.weight")
            subprocess.run(["mount", "--bind", other, inner], check=True)
            try:
                result = run("umount", mount.path)
                self.assertEqual((result.returncode, result.stderr),
                                 (2, f"tensorfs: {mount.path}: busy: {inner} is a mount inside it; unmount it "
                                     "first\n"))
                self.assertTrue(is_mounted(mount.path))
            finally:
                subprocess.run(["umount", inner], check=True)
            result = run("umount", mount.path)
            self.assertEqual((result.returncode, result.stderr), (0, ""))

    def test_stats_of_a_mount_whose_daemon_died_says_how_to_clear_it(self):
        with Mount(GGUF) as mount:
            pids = daemon_pids(mount.path)
            self.assertEqual(len(pids), 1)
            os.kill(pids[0], signal.SIGKILL)
            self.assertTrue(wait_until(lambda: not daemon_pids(mount.path)))
            result = run("stats", mount.path)
            self.assertEqual((result.returncode, result.stderr),
                             (1, f"tensorfs: {mount.path}: its daemon is gone; clear the mount with: "
                                 f"fusermount3 -u {mount.path}\n"))

    def test_ls_and_info_on_a_mount_point_describe_its_source(self):
        with Mount(GGUF) as mount:
            for command in ("ls", "info"):
                with self.subTest(command=command):
                    on_mount = run(command, mount.path + "/")
                    direct = run(command, GGUF)
                    self.assertEqual(on_mount.returncode, 0, on_mount.stderr)
                    self.assertEqual(on_mount.stdout, direct.stdout)
                    self.assertEqual(on_mount.stderr,
                                     f"tensorfs: note: {mount.path}/ is a tensorfs mount of {GGUF}; describing that\n")

    def test_stats_on_a_model_file_says_not_a_mount(self):
        result = run("stats", GGUF)
        self.assertEqual((result.returncode, result.stderr),
                         (1, f"tensorfs: {GGUF}: not a mount (tensorfs status lists the tensorfs mounts)\n"))


class OneShardOfASet(unittest.TestCase):
    def test_ls_and_info_point_to_the_index(self):
        shard = os.path.join(SHARDS, "model-00001-of-00003.safetensors")
        for command in ("ls", "info"):
            with self.subTest(command=command):
                result = run(command, shard)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stderr, f"tensorfs: note: {shard} is shard 1 of 3; it holds a part of the "
                                                "model's tensors. The whole model: "
                                                f"{SHARDS}/model.safetensors.index.json\n")

    def test_a_whole_model_gets_no_note(self):
        self.assertEqual(run("ls", SHARDS).stderr, "")
        self.assertEqual(run("ls", os.path.join(SHARDS, "model.safetensors.index.json")).stderr, "")


class ArgumentsAndHelp(unittest.TestCase):
    def test_stray_arguments_and_typos(self):
        for args, message in [(("ls", GGUF, "extra"), "ls: unexpected argument 'extra'"),
                              (("info", GGUF, "a", "b"), "info: unexpected argument 'a'"),
                              (("umount", "/x", "/y"), "umount: unexpected argument '/y'"),
                              (("lss", GGUF), "'lss' is neither a command nor an existing SOURCE; did you mean 'ls'?"),
                              (("ls", GGUF, "--jsno"), "unknown option '--jsno'; did you mean '--json'?"),
                              (("cat", GGUF, "x", "--bf61"), "unknown option '--bf61'; did you mean '--bf16'?"),
                              (("mount", GGUF, "/x", "--thread", "2"),
                               "unknown option '--thread'; did you mean '--threads'?"),
                              (("help", "mout"), "no command 'mout'; did you mean 'mount'?"),
                              (("--verison",), "unknown option '--verison'; did you mean '--version'?")]:
            with self.subTest(args=args):
                result = run(*args)
                self.assertEqual(result.returncode, 1)
                self.assertEqual(result.stderr, f"tensorfs: {message}; try 'tensorfs --help'\n")

    def test_help_of_one_command(self):
        for command, first_line in [("ls", "usage: tensorfs ls SOURCE [--json]"),
                                    ("cat", "usage: tensorfs cat SOURCE TENSOR"),
                                    ("convert", "usage: tensorfs convert SOURCE OUT.safetensors"),
                                    ("umount", "usage: tensorfs umount MOUNTPOINT"),
                                    ("status", "usage: tensorfs status [--json]")]:
            for args in (("help", command), (command, "--help"), (command, "-h")):
                with self.subTest(args=args):
                    result = run(*args)
                    self.assertEqual((result.returncode, result.stderr), (0, ""))
                    self.assertTrue(result.stdout.startswith(first_line), result.stdout)
                    self.assertNotIn("libfuse options", result.stdout)


class MountOptionEdges(unittest.TestCase):
    def test_a_mistyped_option_gets_the_nearest_name(self):
        with tempfile.TemporaryDirectory() as tmp:
            for option, suggested in (("cach_size=1G", "cache_size=1G"), ("allow_othr", "allow_other"),
                                      ("readahaed=8M", "readahead=8M")):
                with self.subTest(option=option):
                    result = run("mount", GGUF, tmp, "-o", option)
                    self.assertEqual((result.returncode, result.stderr),
                                     (1, f"tensorfs: unknown mount option '{option}'; did you mean '{suggested}'?; "
                                         "try 'tensorfs --help'\n"))
                    self.assertFalse(is_mounted(tmp))

    def test_size_units_in_any_case_and_budgets_under_one_block(self):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                result = run("mount", GGUF, tmp, "-o", "cache_size=32m")
                self.assertEqual((result.returncode, result.stderr), (0, ""))
                with open(os.path.join(tmp, ".tensorfs/stats.json")) as f:
                    self.assertEqual(json.load(f)["cache"]["budget"], 32 << 20)
            finally:
                unmount_or_detach(tmp)
            for args, given in ((("mount", GGUF, tmp, "-o", "cache_size=512"), "cache_size=512"),
                                (("mount", GGUF, tmp, "--cache-size", "512"), "--cache-size=512"),
                                (("mount", GGUF, tmp, "-o", "disk_cache_size=100"), "disk_cache_size=100"),
                                (("ls", GGUF, "--disk-cache-size", "100"), "--disk-cache-size=100")):
                with self.subTest(args=args):
                    result = run(*args)
                    mounted = is_mounted(tmp)
                    unmount_or_detach(tmp)
                    self.assertFalse(mounted)
                    self.assertEqual(result.returncode, 1)
                    self.assertRegex(result.stderr, rf"^tensorfs: {given} is \d+ bytes, less than one (chunk|block) .*"
                                                    r"; sizes take a unit: 512M, 2G; try 'tensorfs --help'\n$")

    def test_o_debug_is_dash_d(self):
        # In the foreground, libfuse's line for every request on stderr, until the unmount.
        with tempfile.TemporaryDirectory() as tmp:
            process = subprocess.Popen([BIN, "mount", GGUF, tmp, "-o", "debug"], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                self.assertTrue(wait_until(lambda: is_mounted(tmp) or process.poll() is not None))
                self.assertTrue(is_mounted(tmp))
                self.assertIn("tensor_count", read_file(os.path.join(tmp, "model.json")).decode())
                self.assertIsNone(process.poll())  # in the foreground
            finally:
                unmount_or_detach(tmp)
                _, stderr = process.communicate(timeout=60)
            self.assertEqual(process.returncode, 0, stderr)
            self.assertIn("opcode: LOOKUP", stderr)


class CacheCommandEdges(unittest.TestCase):
    def test_a_duration_needs_its_unit(self):
        with tempfile.TemporaryDirectory() as cache:
            result = run("cache", "--cache-dir", cache, "prune", "--older-than", "3")
            self.assertEqual((result.returncode, result.stderr),
                             (1, "tensorfs: bad --older-than '3': a number and its unit, s, m, h, d or w (e.g. 30m, "
                                 "12h, 7d); try 'tensorfs --help'\n"))
            result = run("cache", "--cache-dir", cache, "prune", "--older-than", "3s")
            self.assertEqual((result.returncode, result.stdout), (0, "removed 0 B, 0 B left (0 blocks scanned)\n"))

    def test_a_mistyped_action_and_a_missing_folder(self):
        with tempfile.TemporaryDirectory() as cache:
            result = run("cache", "--cache-dir", cache, "lss")
            self.assertEqual(result.stderr, "tensorfs: cache: no action 'lss' (ls, du, prune, clear); did you mean "
                                            "'ls'?; try 'tensorfs --help'\n")
            missing = os.path.join(cache, "missing")
            for action in ("ls", "du", "clear"):
                with self.subTest(action=action):
                    result = run("cache", "--cache-dir", missing, action)
                    self.assertEqual((result.returncode, result.stdout, result.stderr),
                                     (1, "", f"tensorfs: {missing}: no such folder\n"))
            self.assertFalse(os.path.exists(missing))


class SeveralModels(unittest.TestCase):
    """One rule for a folder of several models: every command does as the mount does (model.json's "models", and
    -o model=PATH as --model PATH)."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="tensorfs-edges-several-")
        for path in (GGUF, ALIGN64, SAFETENSORS):
            shutil.copy(path, cls.folder)
        with open(os.path.join(cls.folder, "config.json"), "w") as f:
            f.write("{}\n")
        cls.models = ["align64.gguf", "all_dtypes.safetensors", "tiny-llama-Q4_K_M.gguf"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def test_ls_and_info_list_the_candidates_as_the_mount_does(self):
        with Mount(self.folder) as m:
            mounted = json.loads(read_file(os.path.join(m.path, "model.json")))
        self.assertEqual([c["path"] for c in mounted["models"]], self.models)
        info = run("info", "--json", self.folder)
        self.assertEqual((info.returncode, info.stderr), (0, ""))
        document = json.loads(info.stdout)
        self.assertEqual(document["models"], mounted["models"])
        self.assertEqual(document["pick"], mounted["pick"])
        self.assertEqual(document["tensor_count"], 0)
        for command in ("ls", "info"):
            with self.subTest(command=command):
                result = run(command, self.folder)
                self.assertEqual((result.returncode, result.stderr), (0, ""))
                lines = result.stdout.splitlines()
                self.assertEqual(lines[0], f"{self.folder} holds 3 models, so it has no tensors of its own; pick one "
                                           "with --model PATH (-o model=PATH for a mount), or name its file as "
                                           "SOURCE:")
                self.assertEqual([line.split()[0] for line in lines[2:]], self.models)
        result = run("ls", "--json", self.folder)
        self.assertEqual((result.returncode, result.stdout), (0, "[]\n"))
        self.assertIn("holds 3 models", result.stderr)

    def test_the_commands_that_need_one_model_refuse_with_the_list(self):
        out = os.path.join(self.folder, "out.safetensors")
        refusal = (f"tensorfs: {self.folder}: holds 3 models ({', '.join(self.models)}); pick one with --model PATH "
                   "(-o model=PATH for a mount), or name its file as SOURCE\n")
        for args, status in ((("cat", self.folder, "a64.vec"), 1), (("validate", self.folder), 1),
                             (("convert", self.folder, out), 1), (("diff", self.folder, SAFETENSORS), 2)):
            with self.subTest(command=args[0]):
                result = run(*args)
                self.assertEqual((result.returncode, result.stdout, result.stderr), (status, "", refusal))
        self.assertFalse(os.path.exists(out))

    def test_model_picks_one_for_every_command(self):
        def same(*args):
            """The command with --model PATH, and with the file named as SOURCE."""
            picked = run(*(arg if arg != "SOURCE" else self.folder for arg in args), "--model", "align64.gguf",
                         text=False)
            named = run(*(arg if arg != "SOURCE" else os.path.join(self.folder, "align64.gguf") for arg in args),
                        text=False)
            self.assertEqual((picked.returncode, picked.stderr), (0, b""), args)
            return picked.stdout, named.stdout

        for args in (("ls", "SOURCE"), ("info", "--json", "SOURCE"), ("cat", "SOURCE", "a64.q4_k"),
                     ("diff", "SOURCE", "SOURCE")):
            with self.subTest(command=args[0]):
                picked, named = same(*args)
                self.assertEqual(picked, named)
        picked, named = same("validate", "SOURCE")
        self.assertEqual(picked.replace(self.folder.encode(), b"X"),
                         named.replace(os.path.join(self.folder, "align64.gguf").encode(), b"X"))
        elsewhere = tempfile.mkdtemp(prefix="tensorfs-edges-out-")
        self.addCleanup(shutil.rmtree, elsewhere)
        out = os.path.join(elsewhere, "picked.safetensors")
        result = run("convert", self.folder, out, "--model", "align64.gguf")
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        with Mount(self.folder, "--model", "align64.gguf") as m:
            self.assertEqual(read_file(out), read_file(os.path.join(m.path, "model.safetensors")))
            self.assertTrue(os.path.isfile(os.path.join(m.path, "a64.q4_k", "raw")))


class LsFilesEdges(unittest.TestCase):
    def test_a_folders_own_model_json_is_in_source_only(self):
        with tempfile.TemporaryDirectory() as folder:
            shutil.copy(SAFETENSORS, folder)
            for name in ("model.json", "config.json"):
                with open(os.path.join(folder, name), "w") as f:
                    f.write("{}\n")
            result = run("ls", "--files", "--json", folder)
            self.assertEqual(result.returncode, 0, result.stderr)
            listed = json.loads(result.stdout)
            self.assertEqual([e["path"] for e in listed["side_files"]], ["config.json"])
            self.assertEqual([e["path"] for e in listed["source"]],
                             ["source/all_dtypes.safetensors", "source/config.json", "source/model.json"])


class DiffEdges(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="tensorfs-edges-diff-")
        self.addCleanup(shutil.rmtree, self.folder)

    def write(self, name, tensors):
        """tensors: {name: float32 values}."""
        path = os.path.join(self.folder, name)
        write_safetensors(path, [(t, "F32", values.shape, values.astype("<f4").tobytes())
                                 for t, values in tensors.items()])
        return path

    def test_nothing_paired_is_said_with_no_figures(self):
        values = np.arange(8, dtype=np.float32)
        a = self.write("a.safetensors", {"model.embed_tokens.weight": values})
        b = self.write("b.safetensors", {"token_embd.weight": values})
        result = run("diff", a, b)
        self.assertEqual((result.returncode, result.stderr), (1, ""))
        summary = result.stdout.split("\n\n")[-1]
        self.assertEqual(summary, "paired 0: 0 identical, 0 different, 0 shape mismatches; only in A: 1, only in B: "
                                  "1\nnothing paired: A and B have no tensor name in common (--names gguf pairs a "
                                  "Hugging Face checkpoint's names with its GGUF's)\n")
        result = run("diff", a, b, "--json")
        last = json.loads(result.stdout.splitlines()[-1])
        self.assertEqual((last["paired"], last["compared"], last["rmse"], last["snr_db"]), (0, 0, None, None))

    def test_a_cosine_near_one_is_told_from_one(self):
        values = np.random.default_rng(5).standard_normal(4096).astype(np.float32)
        a = self.write("a.safetensors", {"w": values})
        b = self.write("b.safetensors", {"w": values + np.float32(0.002)})
        cosine = json.loads(run("diff", a, b, "--json").stdout.splitlines()[0])["cosine"]
        self.assertTrue(0.999 < cosine < 1, cosine)
        row = next(line.split() for line in run("diff", a, b).stdout.splitlines() if line.startswith("different"))
        shown = row[7]   # STATUS A B DTYPES DIFFERING MAX|A-B| REL_RMSE COSINE SNR_DB NAN/INF
        self.assertNotEqual(float(shown), 1.0, row)
        self.assertAlmostEqual(float(shown), cosine, delta=abs(1 - cosine) / 2)


class PrefetchEdges(unittest.TestCase):
    def test_a_local_source_has_nothing_to_prefetch(self):
        result = run("prefetch", GGUF)
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        self.assertEqual(result.stdout, f"{GGUF}: a local source is read in place, with no disk cache: nothing to "
                                        "prefetch\n")

    def test_with_the_disk_cache_off(self):
        result = run("prefetch", "http://127.0.0.1:9/m.gguf", "--disk-cache-size", "0")
        self.assertEqual((result.returncode, result.stderr),
                         (1, "tensorfs: the disk cache is off (disk_cache_size=0), so prefetch has nothing to fill; "
                             "try 'tensorfs --help'\n"))


class RemoteEdges(unittest.TestCase):
    """nginx serving a GGUF file, a sharded safetensors folder, a folder of several models and one with a file the
    server refuses, over plain HTTP and in the Hub's layout."""

    @classmethod
    def setUpClass(cls):
        cls.data = tempfile.mkdtemp(prefix="tensorfs-edges-data-")
        shutil.copy(GGUF, cls.data)
        shutil.copytree(SHARDS, os.path.join(cls.data, "sharded"))
        os.mkdir(os.path.join(cls.data, "several"))
        for path in (GGUF, ALIGN64):
            shutil.copy(path, os.path.join(cls.data, "several"))
        # locked/notes.txt: listed by the Hub, then refused (a folder now: nginx answers 403 to a range of it).
        locked = os.path.join(cls.data, "locked")
        os.mkdir(locked)
        shutil.copy(ALIGN64, locked)
        for name in ("notes.txt", "config.json"):
            with open(os.path.join(locked, name), "w") as f:
                f.write(f"{name}\n")
        cls.nginx = remote_servers.Nginx(cls.data)
        os.unlink(os.path.join(locked, "notes.txt"))
        os.mkdir(os.path.join(locked, "notes.txt"))
        cls.cache = tempfile.mkdtemp(prefix="tensorfs-edges-cache-")
        cls.env = {**os.environ, "XDG_CACHE_HOME": cls.cache, "NO_PROXY": "127.0.0.1,localhost",
                   "no_proxy": "127.0.0.1,localhost", "HF_HOME": os.path.join(cls.cache, "hf"),
                   "HF_ENDPOINT": f"http://127.0.0.1:{cls.nginx.hub}"}
        cls.env.pop("HF_TOKEN", None)
        cls.url = f"http://127.0.0.1:{cls.nginx.http}"

    @classmethod
    def tearDownClass(cls):
        cls.nginx.stop()
        shutil.rmtree(cls.cache, ignore_errors=True)
        shutil.rmtree(cls.data, ignore_errors=True)

    def test_prune_counts_one_block_as_one(self):
        cache = tempfile.mkdtemp(prefix="tensorfs-edges-cache-")
        self.addCleanup(shutil.rmtree, cache)
        gguf = f"{self.url}/{os.path.basename(GGUF)}"   # under 1 MiB: one block
        result = run("prefetch", gguf, "--cache-dir", cache, "--quiet", env=self.env)
        self.assertEqual(result.returncode, 0, result.stderr)
        result = run("cache", "--cache-dir", cache, "prune", "--max-size", "0")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"^removed .*, 0 B left \(1 block scanned\)\n$")

    def test_prefetch_of_a_hub_folder_of_several_models(self):
        several = f"hf://{remote_servers.HUB_REPO}/several"
        result = run("prefetch", several, "--quiet", env=self.env)
        self.assertEqual((result.returncode, result.stderr),
                         (1, f"tensorfs: {several}: holds 2 models (align64.gguf, tiny-llama-Q4_K_M.gguf); pick one "
                             "with --model PATH (-o model=PATH for a mount), or name its file as SOURCE\n"))
        result = run("prefetch", several, "--quiet", "--model", "align64.gguf", env=self.env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"^1\.4 KiB fetched \(1408 bytes\)")

    def test_a_file_that_cannot_be_opened_is_a_problem_and_reads_fail(self):
        with Mount(f"hf://{remote_servers.HUB_REPO}/locked", env=self.env) as m:
            problems = json.loads(read_file(os.path.join(m.path, "model.json")))["problems"]
            self.assertEqual([p["path"] for p in problems], ["notes.txt"])
            self.assertIn("403", problems[0]["what"])
            for path in ("notes.txt", "source/notes.txt"):
                with self.subTest(path=path):
                    self.assertEqual(os.stat(os.path.join(m.path, path)).st_size, 0)
                    with self.assertRaises(OSError) as raised:
                        read_file(os.path.join(m.path, path))
                    self.assertEqual(raised.exception.errno, errno.EIO)
            self.assertEqual(read_file(os.path.join(m.path, "config.json")), b"config.json\n")
        listed = run("ls", "--files", "--json", f"hf://{remote_servers.HUB_REPO}/locked", env=self.env)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertEqual(json.loads(listed.stdout)["problems"], problems)

    def test_one_remote_shard_points_to_the_index_url(self):
        shard = f"{self.url}/sharded/model-00002-of-00003.safetensors"
        result = run("ls", shard, env=self.env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, f"tensorfs: note: {shard} is shard 2 of 3; it holds a part of the model's "
                                        f"tensors. The whole model: {self.url}/sharded/model.safetensors.index.json "
                                        "(the usual name of its index)\n")

    def test_a_url_folder_names_every_kind_of_file(self):
        result = run("ls", f"{self.url}/sharded/", env=self.env)
        self.assertEqual(result.returncode, 1)
        self.assertIn("name the file to mount (a .safetensors, .safetensors.index.json, .gguf, .bin, .pt, .pth or "
                      ".bin.index.json URL)", result.stderr)

    def test_a_readahead_that_cache_size_cuts_gets_a_warning(self):
        gguf = f"{self.url}/{os.path.basename(GGUF)}"
        with Mount(gguf, "-o", "cache_size=64M,readahead=64M", env=self.env) as m:
            self.assertEqual(m.stderr, "tensorfs: warning: readahead=64M is cut to 16M, the most that cache_size=64M "
                                       "allows; raise cache_size for more\n")
            with open(os.path.join(m.path, ".tensorfs/stats.json")) as f:
                self.assertEqual(json.load(f)["remote"]["readahead"]["limit_bytes"], 16 << 20)
        with Mount(gguf, "-o", "cache_size=64M,readahead=16M", env=self.env) as m:
            self.assertEqual(m.stderr, "")


class CatSuggestsTensorNames(unittest.TestCase):
    def test_a_name_without_its_suffix_or_with_a_typo(self):
        for wanted, meant in (("token_embd", "token_embd.weight"), ("blk.0.attn_q.wieght", "blk.0.attn_q.weight")):
            with self.subTest(wanted=wanted):
                result = run("cat", GGUF, wanted)
                self.assertEqual((result.returncode, result.stdout), (1, ""))
                self.assertEqual(result.stderr, f"tensorfs: {GGUF}: no tensor named '{wanted}'; did you mean "
                                                f"'{meant}'? (tensorfs ls lists them)\n")


class HelpEdges(unittest.TestCase):
    def test_help_of_help_and_of_mount(self):
        result = run("help", "--help")
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        self.assertTrue(result.stdout.startswith("usage: tensorfs help [COMMAND]\n"), result.stdout)
        for args in (("help", "mount"), ("mount", "--help")):
            with self.subTest(args=args):
                result = run(*args)
                self.assertEqual((result.returncode, result.stderr), (0, ""))
                self.assertTrue(result.stdout.startswith("usage: tensorfs mount SOURCE MOUNTPOINT"), result.stdout)
                for words in ("cache_size=SIZE", "model=PATH", "-o debug", "libfuse options:\n", "allow_other"):
                    self.assertIn(words, result.stdout)
                for other in ("tensorfs umount", "tensorfs ls", "commands:"):
                    self.assertNotIn(other, result.stdout)

    def test_every_command_that_reads_a_source_shows_the_source_flags(self):
        usage = run("--help").stdout.split("\n\n")[0]
        for command in ("ls SOURCE", "ls --files SOURCE", "info", "cat", "convert", "validate", "diff", "prefetch"):
            with self.subTest(command=command):
                line = usage[usage.index(f"tensorfs {command}"):]
                line = line[:line.index("\n       tensorfs ")]
                own = run("help", command.split()[0]).stdout
                for flag in ("[--model PATH]", "[--cache-dir DIR]", "[--disk-cache-size SIZE]"):
                    self.assertIn(flag, line)
                    self.assertIn(flag, own)


def bf16_bits(values):
    """float32 -> bfloat16 bits, round to nearest even (NaN aside)."""
    bits = values.view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


class CatSixteenBitViews(unittest.TestCase):
    def assert_rounded(self, got, expected, rounded, dtype):
        """`got` (16-bit values) equals `rounded` where the float32 values are not NaN, and is NaN where they are."""
        nan = np.isnan(expected)
        self.assertEqual(len(got), 2 * len(expected))
        values = np.frombuffer(got, dtype="<u2")
        self.assertTrue(np.array_equal(values[~nan], rounded[~nan]))
        self.assertTrue(np.isnan(values[nan].view(dtype).astype(np.float32) if dtype == "<f2" else
                                 (values[nan].astype(np.uint32) << 16).view(np.float32)).all())

    def test_bf16_and_f16_are_the_rounded_values(self):
        entry = next(e for e in manifest()["safetensors"] if e["file"] == "safetensors/all_dtypes.safetensors")
        for name in ("dtype.f32", "dtype.bf16", "dtype.f16", "dtype.f64"):
            tensor = next(t for t in entry["tensors"] if t["name"] == name)
            expected = np.fromfile(os.path.join(VECTORS, tensor["expected_f32"]), dtype="<f4")
            with self.subTest(name=name):
                f16 = run("cat", SAFETENSORS, name, "--f16", text=False)
                self.assertEqual(f16.returncode, 0, f16.stderr)
                with np.errstate(over="ignore"):  # beyond float16: inf, as IEEE rounding gives
                    rounded = expected.astype("<f2").view("<u2")
                self.assert_rounded(f16.stdout, expected, rounded, "<f2")
                bf16 = run("cat", SAFETENSORS, name, "--bf16", text=False)
                self.assertEqual(bf16.returncode, 0, bf16.stderr)
                self.assert_rounded(bf16.stdout, expected, bf16_bits(expected), "bf16")


class ValidateJson(unittest.TestCase):
    def test_valid_and_invalid(self):
        result = run("validate", GGUF, "--json")
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        self.assertEqual(json.loads(result.stdout),
                         {"source": GGUF, "valid": True, "format": "gguf",
                          "tensors": len(next(e for e in manifest()["gguf"]
                                              if e["file"] == "gguf/tiny-llama-Q4_K_M.gguf")["tensors"]),
                          "files": 1, "problems": []})
        broken = os.path.join(VECTORS, "malformed/bad_magic.gguf")
        text = run("validate", broken)
        result = run("validate", broken, "--json")
        self.assertEqual((result.returncode, result.stderr), (1, ""))
        document = json.loads(result.stdout)
        self.assertFalse(document["valid"])
        self.assertIsNone(document["format"])
        self.assertEqual([p["line"] for p in document["problems"]], text.stderr.splitlines())
        self.assertTrue(all(p["file"] and p["what"] for p in document["problems"]))


if __name__ == "__main__":
    unittest.main()
