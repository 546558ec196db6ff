"""PyTorch checkpoints written by real PyTorch, mounted for real and read with `tensorfs cat`: every tensor's
meta.json, raw and dequant.f32 compared value by value with what torch.load gives, in both formats of torch.save,
nested checkpoints, a sharded model with its index, and pickle protocols 2 to 5; then the same files over HTTP and
from a Hub-like server, read by range requests."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import torch

import remote_servers
import s3_servers
import torch_format as tf
from pytorch_checkpoints import (TORCH_TYPE_NAMES, every_dtype_state_dict, expected_f32, expected_raw, exported,
                                 flatten, training_checkpoint, write_sharded)
from remote_servers import Nginx, requests_in
from safetensors_reader import SafetensorsFile
from tensorfs_mount import BIN, DATA, Mount, run, same_floats, wait_until


def tensor_folders(mount):
    """The tensor folders of a mount's root (not .tensorfs, nor the root's files)."""
    return {e for e in os.listdir(mount.path)
            if e not in (".tensorfs", "source") and os.path.isdir(os.path.join(mount.path, e))}


def cat(source, tensor, view):
    result = subprocess.run([BIN, "cat", source, tensor, view], capture_output=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"tensorfs cat {tensor} {view}: {result.stderr.decode()}")
    return result.stdout


class TorchCheckpoints(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="tensorfs-pytorch-")
        cls.state = every_dtype_state_dict()
        cls.paths = {}
        for name, kwargs in [("state.pt", {}), ("legacy.pt", {"_use_new_zipfile_serialization": False}),
                             ("protocol4.pth", {"pickle_protocol": 4}), ("protocol5.bin", {"pickle_protocol": 5})]:
            cls.paths[name] = os.path.join(cls.folder, name)
            torch.save(cls.state, cls.paths[name], **kwargs)
        cls.paths["checkpoint.pt"] = os.path.join(cls.folder, "checkpoint.pt")
        torch.save(training_checkpoint(), cls.paths["checkpoint.pt"])
        cls.paths["embeddings.pt"] = os.path.join(cls.folder, "embeddings.pt")
        torch.save(torch.randn(4, 3), cls.paths["embeddings.pt"])
        cls.sharded = os.path.join(cls.folder, "sharded")
        os.mkdir(cls.sharded)
        write_sharded(cls.sharded, {k: v for k, v in cls.state.items() if v.is_contiguous()})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def source(self, name):
        """The SOURCE naming the file `name` of the test folder."""
        return self.paths[name]

    def sharded_sources(self):
        return os.path.join(self.sharded, "pytorch_model.bin.index.json"), self.sharded

    def check_tensor(self, mount, name, tensor, file):
        """meta.json, raw, dequant.f32 and dequant.npy of `name` against the tensor torch.load gave."""
        folder = mount.tensor(name, "")
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta["name"], name)
        self.assertEqual(meta["dtype"], TORCH_TYPE_NAMES[tensor.dtype])
        self.assertEqual(meta["shape"], list(tensor.shape))
        self.assertEqual(meta["elements"], tensor.numel())
        self.assertEqual(meta["file"], file)
        with open(os.path.join(folder, "raw"), "rb") as f:
            raw = f.read()
        self.assertEqual(raw, expected_raw(tensor))
        self.assertEqual(meta["nbytes"], len(raw))
        if tensor.is_contiguous():
            self.assertNotIn("stride", meta)
        else:
            self.assertEqual(meta["stride"], list(tensor.stride()))
            self.assertEqual(meta["storage_offset"], tensor.storage_offset())
        if tensor.is_complex():
            self.assertIsNone(meta["dequant"])
            self.assertEqual(sorted(os.listdir(folder)), ["meta.json", "raw"])
            return meta
        values = np.fromfile(os.path.join(folder, "dequant.f32"), dtype="<f4")
        self.assertTrue(same_floats(expected_f32(tensor), values), f"{name}: {values} != {expected_f32(tensor)}")
        npy = np.load(os.path.join(folder, "dequant.npy"))
        self.assertEqual(npy.shape, tuple(tensor.shape))
        self.assertTrue(same_floats(expected_f32(tensor), npy.reshape(-1)))
        return meta

    def check_every_tensor(self, source, loaded, file=None):
        tensors, _ = flatten(loaded)
        file = file or os.path.basename(source)
        with Mount(source) as mount:
            self.assertEqual(tensor_folders(mount), set(tensors))
            for name, tensor in tensors.items():
                with self.subTest(source=os.path.basename(source), tensor=name):
                    self.check_tensor(mount, name, tensor, file)
            with open(os.path.join(mount.path, "model.json")) as f:
                return json.load(f)

    def test_state_dict_in_both_formats_and_every_protocol(self):
        for name in ("state.pt", "legacy.pt", "protocol4.pth", "protocol5.bin"):
            with self.subTest(file=name):
                model = self.check_every_tensor(self.source(name), torch.load(self.paths[name]))
                self.assertEqual(model["format"], "pytorch")
                self.assertEqual(model["tensor_count"], len(self.state))

    def test_views_keep_their_layout_and_tied_weights_share_bytes(self):
        with Mount(self.source("state.pt")) as mount:
            def meta(name):
                with open(mount.tensor(name, "meta.json")) as f:
                    return json.load(f)
            weight, tied, transposed = meta("layer.weight"), meta("tied.weight"), meta("transposed")
            self.assertEqual((tied["offset"], tied["nbytes"]), (weight["offset"], weight["nbytes"]))
            self.assertEqual(transposed["offset"], weight["offset"])
            self.assertEqual(transposed["stride"], [1, 4])
            self.assertEqual(meta("columns")["offset"], weight["offset"] + 4)
            self.assertEqual(meta("tail")["offset"], weight["offset"] + 8 * 4)
            self.assertNotIn("stride", meta("tail"))
            self.assertEqual(meta("expanded")["nbytes"], 3 * 4)

    def test_16_bit_views_of_views_are_their_values_rounded_as_torch_rounds_them(self):
        tensors, _ = flatten(torch.load(self.paths["state.pt"]))
        with Mount(self.source("state.pt")) as mount:
            for name in ("transposed", "columns", "expanded", "conv.weight", "bfloat16.t", "int32.t"):
                tensor = tensors[name]
                for file, dtype in (("dequant.bf16", torch.bfloat16), ("dequant.f16", torch.float16)):
                    with self.subTest(tensor=name, file=file):
                        expected = tensor.to(torch.float32).to(dtype).contiguous()
                        with open(mount.tensor(name, file), "rb") as f:
                            self.assertEqual(f.read(), expected_raw(expected))

    def test_model_safetensors_holds_what_torch_load_gives(self):
        # Views (transposed, sliced, expanded, channels_last) are served from their values in C order.
        tensors, _ = flatten(torch.load(self.paths["state.pt"]))
        converted = os.path.join(self.folder, "converted.safetensors")
        result = run("convert", self.source("state.pt"), converted)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn('left out, having no safetensors dtype and no float32 values: "complex128"', result.stderr)
        with open(converted, "rb") as f:
            data = f.read()
        with Mount(self.source("state.pt")) as mount:
            with open(os.path.join(mount.path, "model.safetensors"), "rb") as f:
                self.assertEqual(f.read(), data)
        model = SafetensorsFile(data)
        found = {name: (dtype, shape, data[begin:end]) for name, dtype, shape, begin, end in model.tensors}
        for name, tensor in tensors.items():
            with self.subTest(tensor=name):
                expected = exported(tensor)
                if expected is None:
                    self.assertNotIn(name, found)
                    continue
                dtype, shape, stored = found[name]
                self.assertEqual((dtype, shape), (expected[0], list(tensor.shape)))
                self.assertEqual(stored, expected[1])

    def test_nested_checkpoint_gives_dotted_names_and_metadata(self):
        loaded = torch.load(self.paths["checkpoint.pt"])
        model = self.check_every_tensor(self.source("checkpoint.pt"), loaded)
        _, metadata = flatten(loaded)
        self.assertEqual(model["metadata"], metadata)
        self.assertEqual(model["metadata"]["epoch"], 3)
        self.assertEqual(model["metadata"]["dtype"], "torch.float16")
        self.assertIn("optimizer.param_groups.0.lr", model["metadata"])
        self.assertIn("optimizer.state.0.exp_avg", flatten(loaded)[0])

    def test_a_saved_tensor_is_named_after_its_file(self):
        self.check_every_tensor(self.source("embeddings.pt"), {"embeddings": torch.load(self.paths["embeddings.pt"])})

    def test_sharded_model_by_index_and_by_folder(self):
        expected = {}
        for file in sorted(os.listdir(self.sharded)):
            if file.endswith(".bin"):
                expected.update({name: (file, t) for name, t in torch.load(os.path.join(self.sharded, file)).items()})
        index = os.path.join(self.sharded, "pytorch_model.bin.index.json")
        for source in self.sharded_sources():
            with self.subTest(source=source), Mount(source) as mount:
                self.assertEqual(tensor_folders(mount), set(expected))
                for name, (file, tensor) in expected.items():
                    self.check_tensor(mount, name, tensor, file)
                with open(os.path.join(mount.path, "model.json")) as f:
                    model = json.load(f)
                self.assertEqual(len(model["files"]), 2)
                with open(index) as f:
                    self.assertEqual(model["metadata"]["total_size"], json.load(f)["metadata"]["total_size"])

    def test_cat_gives_what_torch_load_gives(self):
        tensors, _ = flatten(torch.load(self.paths["legacy.pt"]))
        for name, tensor in tensors.items():
            with self.subTest(tensor=name):
                self.assertEqual(cat(self.source("legacy.pt"), name, "--raw"), expected_raw(tensor))
                if not tensor.is_complex():
                    values = np.frombuffer(cat(self.source("legacy.pt"), name, "--f32"), dtype="<f4")
                    self.assertTrue(same_floats(expected_f32(tensor), values))

    def test_ls_info_validate_accept_them(self):
        for name in self.paths:
            path = self.source(name)
            with self.subTest(file=name):
                self.assertEqual(run("validate", path).returncode, 0)
                listed = run("ls", "--json", path)
                self.assertEqual(listed.returncode, 0, listed.stderr)
                info = run("info", "--json", path)
                self.assertEqual(info.returncode, 0, info.stderr)
                self.assertEqual(json.loads(info.stdout)["format"], "pytorch")

    def test_quantized_tensors_are_refused_naming_their_rebuild_function(self):
        path = os.path.join(self.folder, "quantized.pt")
        torch.save({"q": torch.quantize_per_tensor(torch.ones(4), 0.5, 0, torch.qint8)}, path)
        result = run("validate", path)
        self.assertEqual(result.returncode, 1)
        self.assertIn("global torch._utils._rebuild_qtensor is refused", result.stderr)
        self.assertTrue(result.stderr.startswith(f"tensorfs: {path}: "), result.stderr)


class TorchCheckpointsRemote(TorchCheckpoints):
    """The same checkpoints on an nginx of their own, as plain URLs and as a Hub repository (hf://test-org/vectors),
    plus a checkpoint of four 64 MiB storages (sparse) whose reading must fetch only a few blocks, and a hostile
    file refused by its URL."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        remote_servers.use_remote_environment()
        storages = [tf.Storage(str(i), "FloatStorage", 16 << 20) for i in range(4)]
        tf.write_checkpoint(os.path.join(cls.folder, "large.pt"),
                            tf.OrderedDict((f"w{i}", tf.Tensor(s, (4096, 4096))) for i, s in enumerate(storages)),
                            storage_data={s.key: tf.Sparse(64 << 20) for s in storages})
        shutil.copy(os.path.join(DATA, "pytorch", "malformed", "os_system_global.pt"), cls.folder)
        cls.server = Nginx(cls.folder)
        cls.http = f"http://127.0.0.1:{cls.server.http}/"
        cls.saved_endpoint = os.environ.get("HF_ENDPOINT")
        os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{cls.server.hub}"
        cls.cache = tempfile.mkdtemp(prefix="tensorfs-cache-")

    @classmethod
    def tearDownClass(cls):
        os.environ["HF_ENDPOINT"] = cls.saved_endpoint
        cls.server.stop()
        shutil.rmtree(cls.cache, ignore_errors=True)
        super().tearDownClass()

    # Read through the Hub's addresses; the others by plain URLs.
    FROM_THE_HUB = {"legacy.pt", "protocol5.bin", "checkpoint.pt"}

    def remote(self, name, hub=False):
        return (f"hf://{remote_servers.HUB_REPO}/" if hub else self.http) + name

    def source(self, name):
        return self.remote(name, hub=name in self.FROM_THE_HUB)

    def sharded_sources(self):
        return self.remote("sharded/pytorch_model.bin.index.json"), self.remote("sharded", hub=True)

    # A file written here, not on the server; the refusal does not depend on where the file is.
    test_quantized_tensors_are_refused_naming_their_rebuild_function = None

    def test_opening_fetches_the_directory_and_headers_not_the_storages(self):
        size = os.path.getsize(os.path.join(self.folder, "large.pt"))
        mark = len(self.server.log_lines())
        listed = run("ls", "--json", self.remote("large.pt"), "--cache-dir", tempfile.mkdtemp(dir=self.cache))
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertEqual([t["name"] for t in json.loads(listed.stdout)], ["w0", "w1", "w2", "w3"])

        def fetched():
            return sum(sent for _, uri, _, sent, _, _ in requests_in(self.server.log_lines()[mark:])
                       if uri == "/large.pt")
        # nginx writes a request's line after its last byte: the lines can come after `ls` has ended.
        self.assertTrue(wait_until(lambda: fetched() > 0))
        self.assertLess(fetched(), size // 4, f"ls fetched {fetched()} of {size} bytes")

    def test_a_hostile_file_is_refused_by_its_url_and_runs_nothing(self):
        with tempfile.TemporaryDirectory(prefix="tensorfs-canary-") as folder:
            result = subprocess.run([BIN, "validate", self.remote("os_system_global.pt")], cwd=folder,
                                    capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 1)
            self.assertTrue(result.stderr.startswith(f"tensorfs: {self.remote('os_system_global.pt')}: "
                                                     "archive/data.pkl: global os.system is refused"), result.stderr)
            self.assertEqual(os.listdir(folder), [])


class TorchCheckpointsInS3(TorchCheckpoints):
    """The same checkpoints as objects of an S3 bucket: keys, and prefixes that follow the folder rule."""
    BUCKET = "pytorch-checkpoints"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        s3_servers.use_s3_environment()
        store = s3_servers.shared()
        store.create_bucket(cls.BUCKET)
        store.put_tree(cls.BUCKET, cls.folder)

    def source(self, name):
        return f"s3://{self.BUCKET}/{name}"

    def sharded_sources(self):
        return self.source("sharded/pytorch_model.bin.index.json"), self.source("sharded/")

    # A file written here, not in the bucket; the refusal does not depend on where the file is.
    test_quantized_tensors_are_refused_naming_their_rebuild_function = None


if __name__ == "__main__":
    unittest.main()
