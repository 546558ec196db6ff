"""The root of a mount is a model folder (issue 19): the source folder's other top-level files (side files) at the root
and every source file in source/, with their names, sizes, mtimes and bytes, from a local folder, a plain web server
(a file SOURCE, with the side files probed next to it), a Hub-like server (recursive tree listing in pages) and the
S3 test store (ListObjectsV2 without delimiter); a folder of several models; -o model=PATH; tensors named like root
entries; `tensorfs ls --files`."""
import email.utils
import glob
import http.client
import json
import mmap
import os
import resource
import shutil
import struct
import subprocess
import tempfile
import unittest
import urllib.parse

import remote_servers
import s3_servers
from safetensors_files import write_safetensors
from tensorfs_mount import BIN, VECTORS, Mount, is_mounted, read_file, run, unmount

SHARDED = os.path.join(VECTORS, "safetensors", "sharded")
GGUF = os.path.join(VECTORS, "gguf")
SIDE_FILES = {
    "config.json": b'{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}\n',
    "generation_config.json": b'{"do_sample": false}\n',
    "tokenizer.json": b'{"version": "1.0", "model": {"type": "BPE"}}\n',
    "chat_template.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}\n",
    "README.md": b"# a model\n",
    ".gitattributes": b"*.safetensors filter=lfs\n",
}
# Files in subfolders: only in source/.
NESTED = {
    "original/params.json": b'{"dim": 64}\n',
    "original/consolidated.pth": os.urandom(3000),
    "onnx/model.onnx": os.urandom(70000),
    "onnx/deep/er/weights.bin": os.urandom(100),
}
# What the probe of a file SOURCE finds of SIDE_FILES (README.md and .gitattributes are not probed).
PROBED = {"config.json", "generation_config.json", "tokenizer.json", "chat_template.jinja"}


def write(path, data, mtime_ns):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def copy(source, path, mtime_ns):
    write(path, read_file(source), mtime_ns)


def make_folder(root):
    """A model folder as a Hub repo has it: sharded safetensors with their index, side files, subfolders. Every file
    has an mtime of its own, to nanoseconds."""
    when = 1_600_000_000_123_456_789
    for i, name in enumerate(sorted(os.listdir(SHARDED))):
        if name.endswith(".safetensors") or name.endswith(".json"):
            copy(os.path.join(SHARDED, name), os.path.join(root, name), when + i * 1_000_000_007)
    for i, (name, data) in enumerate(sorted({**SIDE_FILES, **NESTED}.items())):
        write(os.path.join(root, name), data, when - (i + 1) * 3_000_000_011)


def make_file_folder(root):
    """A GGUF file with side files next to it (and files the probe does not look for)."""
    copy(os.path.join(GGUF, "tiny-llama-Q4_K_M.gguf"), os.path.join(root, "model.gguf"), 1_500_000_000_000_000_000)
    for i, (name, data) in enumerate(sorted(SIDE_FILES.items())):
        write(os.path.join(root, name), data, 1_500_000_100_000_000_000 + i * 1_000_000_000)


def files_under(folder):
    """{relative path: (size, mtime_ns, bytes)} of every regular file under `folder`."""
    found = {}
    for parent, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(parent, name)
            st = os.stat(path)
            found[os.path.relpath(path, folder)] = (st.st_size, st.st_mtime_ns, read_file(path))
    return found


def side_files_of(mount):
    """{name: (size, mtime_ns, bytes)} of the regular files at the root that are not tensorfs's own."""
    return {name: value for name, value in files_under(mount).items()
            if "/" not in name and name not in ("model.json", "model.safetensors")}


def seconds(files):
    """The same with mtimes in whole seconds, as an HTTP Last-Modified carries them."""
    return {path: (size, mtime // 10**9, data) for path, (size, mtime, data) in files.items()}


def top_level_side_files(folder):
    weights = (".safetensors", ".safetensors.index.json", ".bin", ".bin.index.json", ".pt", ".pth", ".gguf")
    return {path: value for path, value in files_under(folder).items()
            if "/" not in path and not path.endswith(weights)}


class Fixtures:
    """The test folders, made once: `folder` (a model folder), `file_folder` (a GGUF file with side files)."""
    root = None

    @classmethod
    def make(cls):
        if cls.root is None:
            cls.root = tempfile.mkdtemp(prefix="tensorfs-model-folder-")
            cls.folder = os.path.join(cls.root, "folder")
            cls.file_folder = os.path.join(cls.root, "file")
            make_folder(cls.folder)
            make_file_folder(cls.file_folder)
        return cls


def tearDownModule():
    if Fixtures.root is not None:
        shutil.rmtree(Fixtures.root, ignore_errors=True)


class LocalFolderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = Fixtures.make()

    def test_side_files_and_source_are_the_folders_files(self):
        with Mount(self.data.folder) as m:
            self.assertEqual(side_files_of(m.path), top_level_side_files(self.data.folder))
            self.assertEqual(set(side_files_of(m.path)), set(SIDE_FILES))
            self.assertEqual(files_under(os.path.join(m.path, "source")), files_under(self.data.folder))
            # One weight set at the root: what vLLM's *.safetensors and mlx-lm's model*.safetensors globs take.
            self.assertEqual(glob.glob(os.path.join(m.path, "*.safetensors")),
                             [os.path.join(m.path, "model.safetensors")])
            self.assertFalse(os.path.exists(os.path.join(m.path, "model.safetensors.index.json")))
            self.assertTrue(os.path.isdir(os.path.join(m.path, "source", "onnx", "deep", "er")))
            # The tensors are there as always.
            self.assertEqual(json.loads(read_file(os.path.join(m.path, "model.json")))["format"], "safetensors")

    def test_source_files_map_like_the_originals(self):
        with Mount(self.data.folder) as m:
            for relative in ("model-00002-of-00003.safetensors", "onnx/model.onnx"):
                with open(os.path.join(m.path, "source", relative), "rb") as f, \
                        mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mapped:
                    self.assertEqual(mapped[:], read_file(os.path.join(self.data.folder, relative)))
                with open(os.path.join(m.path, "source", relative), "rb") as f:
                    self.assertEqual(os.pread(f.fileno(), 1000, 777),
                                     read_file(os.path.join(self.data.folder, relative))[777:1777])

    def test_a_file_source_gets_the_probed_side_files_and_its_file(self):
        with Mount(os.path.join(self.data.file_folder, "model.gguf")) as m:
            expected = {name: value for name, value in files_under(self.data.file_folder).items() if name in PROBED}
            self.assertEqual(side_files_of(m.path), expected)
            self.assertEqual(files_under(os.path.join(m.path, "source")),
                             {"model.gguf": files_under(self.data.file_folder)["model.gguf"]})

    def test_a_split_part_gets_every_part_in_source(self):
        split = os.path.join(GGUF, "split")
        with Mount(os.path.join(split, "tiny-llama-Q4_K_M-00002-of-00003.gguf")) as m:
            self.assertEqual(side_files_of(m.path), {})
            self.assertEqual(files_under(os.path.join(m.path, "source")), files_under(split))

    def test_an_index_source_gets_the_index_and_its_shards(self):
        with Mount(os.path.join(self.data.folder, "model.safetensors.index.json")) as m:
            expected = {path: value for path, value in files_under(self.data.folder).items()
                        if path.startswith("model")}
            self.assertEqual(files_under(os.path.join(m.path, "source")), expected)
            self.assertEqual(set(side_files_of(m.path)), PROBED)

    def test_ls_files_lists_what_the_mount_shows(self):
        result = run("ls", "--files", "--json", self.data.folder)
        self.assertEqual(result.returncode, 0, result.stderr)
        listed = json.loads(result.stdout)
        self.assertEqual({e["path"]: e["size"] for e in listed["side_files"]},
                         {name: len(data) for name, data in SIDE_FILES.items()})
        self.assertEqual({e["path"]: e["size"] for e in listed["source"]},
                         {"source/" + path: size for path, (size, _, _) in files_under(self.data.folder).items()})
        text = run("ls", "--files", os.path.join(self.data.file_folder, "model.gguf"))
        self.assertEqual(text.returncode, 0, text.stderr)
        paths = [line.split()[0] for line in text.stdout.splitlines()[1:]]
        self.assertEqual(paths, sorted(PROBED) + ["source/model.gguf"])


class ManyFilesTest(unittest.TestCase):
    def test_more_files_than_the_usual_soft_limit_of_descriptors(self):
        # Every file of source/ stays open: the mount raises its soft limit of open files to the hard one.
        folder = tempfile.mkdtemp(prefix="tensorfs-many-")
        self.addCleanup(shutil.rmtree, folder)
        shutil.copy(os.path.join(SHARDED, "model-00001-of-00003.safetensors"), folder)
        for i in range(1500):
            write(os.path.join(folder, "many", f"f{i:04d}.txt"), b"%d\n" % i, 1_300_000_000_000_000_000)
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 2000:
            self.skipTest(f"the hard limit of open files is {hard}")
        target = tempfile.mkdtemp(prefix="tensorfs-many-mnt-")
        self.addCleanup(os.rmdir, target)

        def soft_limit_1024():
            resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))

        result = subprocess.run([BIN, "mount", folder, target], capture_output=True, text=True, timeout=120,
                                preexec_fn=soft_limit_1024)
        self.assertEqual(result.returncode, 0, result.stderr)
        try:
            many = os.path.join(target, "source", "many")
            self.assertEqual(len(os.listdir(many)), 1500)
            self.assertEqual(read_file(os.path.join(many, "f1499.txt")), b"1499\n")
        finally:
            unmount(target)
        self.assertFalse(is_mounted(target))


class SeveralModelsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="tensorfs-several-")
        for name in ("tiny-llama-Q4_K_M.gguf", "align64.gguf"):
            shutil.copy(os.path.join(GGUF, name), cls.folder)
        for name in os.listdir(os.path.join(GGUF, "split")):
            shutil.copy(os.path.join(GGUF, "split", name), cls.folder)
        write(os.path.join(cls.folder, "config.json"), SIDE_FILES["config.json"], 1_400_000_000_000_000_000)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def test_mounts_with_the_candidates_in_model_json(self):
        with Mount(self.folder) as m:
            self.assertEqual(len(m.stderr.splitlines()), 1, m.stderr)
            self.assertIn("3 models", m.stderr)
            self.assertIn("model=", m.stderr)
            model = json.loads(read_file(os.path.join(m.path, "model.json")))
            self.assertEqual([c["path"] for c in model["models"]],
                             ["align64.gguf", "tiny-llama-Q4_K_M-00001-of-00003.gguf", "tiny-llama-Q4_K_M.gguf"])
            self.assertEqual(model["models"][1]["files"],
                             [f"tiny-llama-Q4_K_M-0000{k}-of-00003.gguf" for k in (1, 2, 3)])
            self.assertIn("model=PATH", model["pick"])
            self.assertIsNone(model["format"])
            self.assertEqual(model["tensor_count"], 0)
            # No tensor view and no model.safetensors; side files and source/ as always.
            self.assertEqual(sorted(os.listdir(m.path)), [".tensorfs", "config.json", "model.json", "source"])
            self.assertEqual(read_file(os.path.join(m.path, "config.json")), SIDE_FILES["config.json"])
            self.assertEqual(files_under(os.path.join(m.path, "source")), files_under(self.folder))

    def test_model_option_picks_one(self):
        with Mount(self.folder, "-o", "model=align64.gguf") as m:
            model = json.loads(read_file(os.path.join(m.path, "model.json")))
            self.assertNotIn("models", model)
            self.assertEqual([f["path"] for f in model["files"]], ["align64.gguf"])
            listed = json.loads(run("ls", "--json", os.path.join(GGUF, "align64.gguf")).stdout)
            self.assertTrue(listed)
            for tensor in listed:
                with open(os.path.join(GGUF, "align64.gguf"), "rb") as f:
                    expected = os.pread(f.fileno(), tensor["nbytes"], tensor["offset"])
                self.assertEqual(read_file(os.path.join(m.path, tensor["name"], "raw")), expected)
            self.assertTrue(os.path.isfile(os.path.join(m.path, "model.safetensors")))
            self.assertEqual(files_under(os.path.join(m.path, "source")), files_under(self.folder))
        with Mount(self.folder, "-o", "model=tiny-llama-Q4_K_M-00002-of-00003.gguf") as m:
            model = json.loads(read_file(os.path.join(m.path, "model.json")))
            self.assertEqual(len(model["files"]), 3)

    def test_model_option_refusals(self):
        target = tempfile.mkdtemp(prefix="tensorfs-several-mnt-")
        self.addCleanup(os.rmdir, target)
        for option, words in (("model=../x.gguf", "model=../x.gguf"), ("model=missing.gguf", "missing.gguf")):
            result = run("mount", self.folder, target, "-o", option)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
            self.assertIn(words, result.stderr)
        result = run("mount", os.path.join(self.folder, "align64.gguf"), target, "-o", "model=align64.gguf")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("folder SOURCE", result.stderr)

    def test_ls_files_names_the_models(self):
        result = run("ls", "--files", "--json", self.folder)
        self.assertEqual(result.returncode, 0, result.stderr)
        listed = json.loads(result.stdout)
        self.assertEqual(len(listed["models"]), 3)
        self.assertEqual([e["path"] for e in listed["side_files"]], ["config.json"])


class ReservedNamesTest(unittest.TestCase):
    def test_tensors_named_like_root_entries_are_escaped(self):
        folder = tempfile.mkdtemp(prefix="tensorfs-reserved-")
        self.addCleanup(shutil.rmtree, folder)
        values = {name: struct.pack("<4f", i, i + 0.5, -i, 2.0 * i)
                  for i, name in enumerate(["source", "config.json", "weight", "README.md"])}
        write_safetensors(os.path.join(folder, "model.safetensors"),
                          [(name, "F32", [4], data) for name, data in values.items()])
        write(os.path.join(folder, "config.json"), SIDE_FILES["config.json"], 1_450_000_000_000_000_000)
        with Mount(folder) as m:
            names = set(os.listdir(m.path))
            # config.json is a side file here, README.md is not: only the first is escaped.
            self.assertTrue({"%73ource", "%63onfig.json", "weight", "README.md", "source", "config.json"} <= names,
                            names)
            self.assertTrue(os.path.isdir(os.path.join(m.path, "source")))
            self.assertEqual(read_file(os.path.join(m.path, "config.json")), SIDE_FILES["config.json"])
            for name, directory in (("source", "%73ource"), ("config.json", "%63onfig.json"), ("weight", "weight"),
                                    ("README.md", "README.md")):
                self.assertEqual(read_file(os.path.join(m.path, directory, "raw")), values[name])
            model = json.loads(read_file(os.path.join(m.path, "model.json")))
            self.assertEqual(model["renamed"], {"source": "%73ource", "config.json": "%63onfig.json"})
            # The folder's own model.safetensors is in source/, the root's is the export.
            self.assertEqual(read_file(os.path.join(m.path, "source", "model.safetensors")),
                             read_file(os.path.join(folder, "model.safetensors")))


class HttpTest(unittest.TestCase):
    """nginx serving the fixtures: a file URL (side files probed) and the Hub layout (a folder of a repo)."""

    @classmethod
    def setUpClass(cls):
        cls.data = Fixtures.make()
        cls.nginx = remote_servers.Nginx(cls.data.root)
        cls.cache = tempfile.mkdtemp(prefix="tensorfs-cache-")
        cls.env = {**os.environ, "XDG_CACHE_HOME": cls.cache, "NO_PROXY": "127.0.0.1,localhost",
                   "no_proxy": "127.0.0.1,localhost", "HF_HOME": os.path.join(cls.cache, "hf"),
                   "HF_ENDPOINT": f"http://127.0.0.1:{cls.nginx.hub}"}
        cls.env.pop("HF_TOKEN", None)

    @classmethod
    def tearDownClass(cls):
        cls.nginx.stop()
        shutil.rmtree(cls.cache, ignore_errors=True)

    def test_a_file_url_gets_the_probed_side_files(self):
        url = f"http://127.0.0.1:{self.nginx.http}/file/model.gguf"
        with Mount(url, env=self.env) as m:
            expected = {name: value for name, value in files_under(self.data.file_folder).items() if name in PROBED}
            self.assertEqual(seconds(side_files_of(m.path)), seconds(expected))
            self.assertEqual(seconds(files_under(os.path.join(m.path, "source"))),
                             seconds({"model.gguf": files_under(self.data.file_folder)["model.gguf"]}))

    def test_a_hub_folder_lists_recursively_in_pages(self):
        source = f"hf://{remote_servers.HUB_REPO}/folder"
        with Mount(source, env=self.env) as m:
            self.assertEqual(seconds(side_files_of(m.path)), seconds(top_level_side_files(self.data.folder)))
            self.assertEqual(seconds(files_under(os.path.join(m.path, "source"))),
                             seconds(files_under(self.data.folder)))
        listings = [line for line in self.nginx.log_lines("hub.log") if "/api/models/" in line]
        self.assertTrue(any("/recursive2.json" in line or "cursor" in line for line in listings), listings)
        result = run("ls", "--files", "--json", source, env=self.env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(json.loads(result.stdout)["source"]), len(files_under(self.data.folder)))


class S3Test(unittest.TestCase):
    """The model folder as a prefix of the S3 test store."""

    PREFIX = "model-folder/"

    @classmethod
    def setUpClass(cls):
        cls.data = Fixtures.make()
        cls.server = s3_servers.shared()
        cls.server.put_tree(s3_servers.BUCKET, cls.data.folder, cls.PREFIX)
        cls.cache = tempfile.mkdtemp(prefix="tensorfs-cache-")
        cls.env = cls.server.env(XDG_CACHE_HOME=cls.cache, NO_PROXY="127.0.0.1,localhost",
                                 no_proxy="127.0.0.1,localhost")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cache, ignore_errors=True)

    def last_modified(self, key):
        """The store's mtime of an object, in seconds (its Last-Modified)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.server.store, timeout=60)
        try:
            connection.request("HEAD", f"/{s3_servers.BUCKET}/{urllib.parse.quote(key)}")
            answer = connection.getresponse()
            answer.read()
            return int(email.utils.parsedate_to_datetime(answer.getheader("Last-Modified")).timestamp())
        finally:
            connection.close()

    def test_a_prefix_lists_every_key_under_it(self):
        with Mount(f"s3://{s3_servers.BUCKET}/{self.PREFIX}", env=self.env) as m:
            expected = {path: (size, self.last_modified(self.PREFIX + path), data)
                        for path, (size, _, data) in files_under(self.data.folder).items()}
            self.assertEqual(seconds(files_under(os.path.join(m.path, "source"))), expected)
            self.assertEqual(seconds(side_files_of(m.path)),
                             {path: value for path, value in expected.items() if path in SIDE_FILES})


if __name__ == "__main__":
    unittest.main()
