"""PyTorch loads a mount as it loads a model folder, from a local folder, over HTTP (nginx), from a Hub-like server
and from an S3 store, and gets what it gets from the original files:

- `torch.load(MOUNT/source/pytorch_model.bin, weights_only=True)` equals torch.load of the file itself;
- a tiny llama-like model (tiny_model.py) built from MOUNT/config.json and MOUNT/model.safetensors (read with the
  independent safetensors reader) gives the same logits as the same model built from the original folder, for a
  safetensors repo and for .bin repos in both of torch.save's formats;
- for a .bin repo, building the model from the mount runs no pickle: tiny_model.py's canary (an audit hook that
  creates a file when the process unpickles anything or opens a .bin) stays unfired, while it fires when the same
  program loads the original pytorch_model.bin;
- numpy (memmap, fromfile) and C programs (cmp, and fault_storm.c's mmap) read the side files, every file of
  source/ and model.safetensors as they read the original files."""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

import s3_servers
import tiny_model
from mapped_files import build_fault_storm, safetensors_header
from remote_servers import HUB_REPO, Nginx, remote_env
from tensorfs_mount import Mount, read_file

HERE = os.path.dirname(os.path.abspath(__file__))
# Repos by the form of their weights; each with its own seed, so that a mount serving another repo's bytes fails.
REPOS = {"safetensors": 1, "bin": 2, "legacy-bin": 3}
BINS = ("bin", "legacy-bin")
SIDE_FILES = ("config.json", "generation_config.json")


def weight_file(repo):
    return "model.safetensors" if repo == "safetensors" else "pytorch_model.bin"


def build(runs, scratch):
    """Runs tiny_model.py once on [(kind, folder)]; returns (the logits of each, whether its canary fired)."""
    run_folder = tempfile.mkdtemp(dir=scratch)
    canary = os.path.join(run_folder, "canary")
    outs = [os.path.join(run_folder, f"{i}.npy") for i in range(len(runs))]
    arguments = [item for (kind, folder), out in zip(runs, outs) for item in (kind, folder, out)]
    result = subprocess.run([sys.executable, os.path.join(HERE, "tiny_model.py"), canary, *arguments],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise AssertionError(f"tiny_model.py {arguments} failed: {result.stderr}")
    return [np.load(out) for out in outs], os.path.exists(canary)


def setUpModule():
    """The repos, and the models built from their original folders as a framework reads them: model.safetensors,
    or pytorch_model.bin by torch.load; the latter must fire the canary, or its silence below would prove nothing."""
    global SCRATCH, DATA, STATES, EXPECTED, PICKLE_FIRED_THE_CANARY, STORM
    SCRATCH = tempfile.mkdtemp(prefix="tensorfs-loaders-")
    STORM = build_fault_storm(SCRATCH)
    DATA = os.path.join(SCRATCH, "repos")
    STATES = {}
    for repo, seed in REPOS.items():
        os.makedirs(os.path.join(DATA, repo))
        STATES[repo] = tiny_model.write_repo(os.path.join(DATA, repo), repo, seed)
    [from_safetensors], safetensors_fired = build([("safetensors", os.path.join(DATA, "safetensors"))], SCRATCH)
    assert not safetensors_fired, "the canary fired on a safetensors model"
    from_bins, PICKLE_FIRED_THE_CANARY = build([("torch", os.path.join(DATA, repo)) for repo in BINS], SCRATCH)
    EXPECTED = {"safetensors": from_safetensors, **dict(zip(BINS, from_bins))}


def tearDownModule():
    shutil.rmtree(SCRATCH, ignore_errors=True)


def assert_same_state(case, actual, expected):
    case.assertEqual(list(actual), list(expected))
    for name, tensor in expected.items():
        case.assertEqual(actual[name].dtype, tensor.dtype, name)
        case.assertTrue(torch.equal(actual[name], tensor), name)


class Loaders(unittest.TestCase):
    """The checks, on the SOURCE that subclasses name for each repo (source(repo)), mounted with env()."""

    def env(self):
        return None

    def test_a_model_built_from_the_mount_equals_one_built_from_the_original_folder(self):
        with contextlib.ExitStack() as stack:
            mounts = {repo: stack.enter_context(Mount(self.source(repo), env=self.env())) for repo in REPOS}
            for repo, m in mounts.items():
                for name in SIDE_FILES:
                    self.assertEqual(read_file(os.path.join(m.path, name)),
                                     read_file(os.path.join(DATA, repo, name)), f"{repo}: {name}")
            built, fired = build([("safetensors", m.path) for m in mounts.values()], SCRATCH)
        self.assertFalse(fired, "building the models from the mounts ran a pickle or opened a .bin")
        for repo, logits in zip(mounts, built):
            self.assertEqual(logits.dtype, EXPECTED[repo].dtype)
            self.assertTrue(np.array_equal(logits, EXPECTED[repo]), f"{repo}: logits differ")

    def test_torch_load_of_source_equals_torch_load_of_the_file(self):
        for repo in BINS:
            with self.subTest(repo=repo), Mount(self.source(repo), env=self.env()) as m:
                original = os.path.join(DATA, repo, "pytorch_model.bin")
                mounted = os.path.join(m.path, "source", "pytorch_model.bin")
                self.assertEqual(os.path.getsize(mounted), os.path.getsize(original))
                loaded = torch.load(mounted, weights_only=True)
                assert_same_state(self, loaded, torch.load(original, weights_only=True))
                assert_same_state(self, loaded, STATES[repo])


    def test_numpy_and_c_read_side_files_source_files_and_model_safetensors(self):
        repo = "safetensors"
        original = os.path.join(DATA, repo)
        with Mount(self.source(repo), env=self.env()) as m:
            source = os.path.join(m.path, "source")
            pairs = [(os.path.join(m.path, name), os.path.join(original, name)) for name in SIDE_FILES]
            pairs += [(os.path.join(source, name), os.path.join(original, name)) for name in os.listdir(source)]
            self.assertIn(os.path.join(source, "model.safetensors"), [mounted for mounted, _ in pairs])
            for mounted, expected in pairs:
                self.assertEqual(subprocess.run(["cmp", mounted, expected]).returncode, 0, mounted)
                self.assertTrue(np.array_equal(np.fromfile(mounted, np.uint8), np.fromfile(expected, np.uint8)))
            # Each tensor by numpy.memmap at the offsets the independent reader finds, in the export and in the
            # source's own file.
            for path in (os.path.join(m.path, "model.safetensors"), os.path.join(source, "model.safetensors")):
                _, parsed = safetensors_header(path)
                for name, dtype, shape, begin, end in parsed.tensors:
                    mapped = np.memmap(path, dtype=np.uint8, mode="r", offset=begin, shape=(end - begin,))
                    same = np.array_equal(mapped, STATES[repo][name].view(torch.uint8).numpy().reshape(-1))
                    del mapped  # before the assertion: a failure's traceback would keep the map, and the mount busy
                    self.assertTrue(same, f"{path}: {name}")
            # C through mmap: a few threads map the source's file and compare every page they touch.
            result = subprocess.run([STORM, os.path.join(source, "model.safetensors"),
                                     os.path.join(original, "model.safetensors"), "4", "64", "3", "0"],
                                    capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual({line.split()[0] for line in result.stdout.splitlines()}, {"ok"})


class LoadersLocal(Loaders):
    def source(self, repo):
        return os.path.join(DATA, repo)

    def test_the_canary_fires_when_a_pickle_runs(self):
        self.assertTrue(PICKLE_FIRED_THE_CANARY, "torch.load of the original .bin files did not fire the canary")


class RemoteLoaders(Loaders):
    """The repos on an nginx of their own: as plain URLs of the weight file (side files probed next to it) and as
    folders of a Hub repository."""

    @classmethod
    def setUpClass(cls):
        cls.server = Nginx(DATA)
        cls.cache = tempfile.mkdtemp(prefix="tensorfs-cache-", dir=SCRATCH)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def env(self):
        env = remote_env(self.cache)
        env["HF_ENDPOINT"] = f"http://127.0.0.1:{self.server.hub}"
        return env


class LoadersOverHttp(RemoteLoaders):
    def source(self, repo):
        return f"http://127.0.0.1:{self.server.http}/{repo}/{weight_file(repo)}"


class LoadersFromTheHub(RemoteLoaders):
    def source(self, repo):
        return f"hf://{HUB_REPO}/{repo}"


class LoadersFromS3(Loaders):
    BUCKET = "loader-repos"

    @classmethod
    def setUpClass(cls):
        cls.store = s3_servers.shared()
        cls.store.create_bucket(cls.BUCKET)
        cls.store.put_tree(cls.BUCKET, DATA)
        cls.cache = tempfile.mkdtemp(prefix="tensorfs-cache-", dir=SCRATCH)

    def env(self):
        return self.store.env(XDG_CACHE_HOME=self.cache, NO_PROXY="127.0.0.1,localhost",
                              no_proxy="127.0.0.1,localhost")

    def source(self, repo):
        return f"s3://{self.BUCKET}/{repo}/"


del Loaders, RemoteLoaders  # bases, not tests of their own


if __name__ == "__main__":
    unittest.main()
