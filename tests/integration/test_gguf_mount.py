"""GGUF files mounted for real: every tensor's values against ggml's own outputs, metadata, split sets; from the
local files, and the same files over HTTP, HTTPS, from a Hub-like server (remote_servers.py) and from an S3 store
(s3_servers.py)."""
import json
import os
import struct
import unittest

import numpy as np

import remote_servers
import s3_servers
from tensorfs_mount import VECTORS, Mount, manifest, run, same_floats

TYPE_NAMES = {"f32": "F32", "f16": "F16", "bf16": "BF16"}


def float_bits(value, gguf_type):
    return "0x" + (struct.pack(">f", value) if gguf_type == "FLOAT32" else struct.pack(">d", value)).hex()


def gguf_entry(path):
    return next(g for g in manifest()["gguf"] if g["file"] == path)


class GgufFiles(unittest.TestCase):
    where = remote_servers.LOCAL

    def check_file(self, relative):
        entry = gguf_entry(relative)
        with Mount(self.where.source(relative)) as m:
            self.assertEqual(sorted(n for n in os.listdir(m.path)
                                    if n not in ("model.json", "model.safetensors", ".tensorfs", "source")),
                             sorted(t["name"] for t in entry["tensors"]))
            for t in entry["tensors"]:
                with self.subTest(file=relative, tensor=t["name"]):
                    with open(m.tensor(t["name"], "meta.json")) as f:
                        meta = json.load(f)
                    self.assertEqual(meta["dtype"].lower(), t["ggml_type"].lower())
                    self.assertEqual(meta["ggml_type"], t["ggml_type_id"])
                    self.assertEqual(meta["shape"], t["numpy_shape"])
                    self.assertEqual(meta["offset"], t["data_offset"])
                    self.assertEqual(meta["nbytes"], t["raw_nbytes"])
                    expected = np.fromfile(os.path.join(VECTORS, t["expected_f32"]), dtype="<f4")
                    actual = np.fromfile(m.tensor(t["name"], "dequant.f32"), dtype="<f4")
                    self.assertTrue(same_floats(expected, actual))
                    loaded = np.load(m.tensor(t["name"], "dequant.npy"), mmap_mode="r")
                    self.assertEqual(list(loaded.shape), t["numpy_shape"])
                    self.assertTrue(same_floats(expected.reshape(loaded.shape), np.array(loaded)))
                    del loaded
            self.check_metadata(m, entry)

    def check_metadata(self, m, entry):
        with open(os.path.join(m.path, "model.json")) as f:
            model = json.load(f)
        self.assertEqual(model["format"], "gguf")
        self.assertEqual(model["tensor_count"], entry["n_tensors"])
        for kv in entry["metadata"]:
            with self.subTest(key=kv["key"]):
                value = model["metadata"][kv["key"]]
                gguf_type = kv["type"] if kv["type"] != "ARRAY" else f"ARRAY[{kv['elem_type']}]"
                self.assertEqual(model["metadata_types"][kv["key"]], gguf_type)
                if "bits" in kv and kv["type"] == "ARRAY":
                    self.assertEqual([float_bits(v, kv["elem_type"]) for v in value], kv["bits"])
                elif "bits" in kv:
                    self.assertEqual(float_bits(value, kv["type"]), kv["bits"])
                else:
                    self.assertEqual(value, kv["value"])
                if "utf8_hex" in kv:
                    self.assertEqual(value.encode().hex(), kv["utf8_hex"])

    def test_mixed(self):
        self.check_file("gguf/mixed.gguf")

    def test_align64(self):
        self.check_file("gguf/align64.gguf")

    def test_tiny_llama(self):
        self.check_file("gguf/tiny-llama-Q4_K_M.gguf")


class KernelPaths(unittest.TestCase):
    """Every kernel path this CPU runs (TENSORFS_KERNELS lowers the widest one) gives ggml's values through a
    mount, for every ggml type and the safetensors F8 types, and stats.json names the path in use."""

    PATHS = ("portable", "avx2", "avx512")

    def test_every_path_decodes_like_ggml(self):
        widest = run("--version").stdout.splitlines()[-1].split(": ")[1]
        sources = [("gguf/mixed.gguf", gguf_entry("gguf/mixed.gguf")),
                   ("safetensors/all_dtypes.safetensors",
                    next(e for e in manifest()["safetensors"] if e["file"] == "safetensors/all_dtypes.safetensors"))]
        for path in self.PATHS[:self.PATHS.index(widest) + 1]:
            for relative, entry in sources:
                environment = {**os.environ, "TENSORFS_KERNELS": path}
                with self.subTest(path=path, file=relative), Mount(os.path.join(VECTORS, relative),
                                                                    env=environment) as m:
                    with open(os.path.join(m.path, ".tensorfs/stats.json")) as f:
                        self.assertEqual(json.load(f)["decode"]["kernels"], path)
                    for t in entry["tensors"]:
                        expected = np.fromfile(os.path.join(VECTORS, t["expected_f32"]), dtype="<f4")
                        actual = np.fromfile(m.tensor(t["name"], "dequant.f32"), dtype="<f4")
                        self.assertTrue(same_floats(expected, actual), f"{t['name']} through {path}")


class SplitModel(unittest.TestCase):
    where = remote_servers.LOCAL

    def test_any_part_or_the_folder_mounts_the_whole_model(self):
        unsplit = gguf_entry("gguf/tiny-llama-Q4_K_M.gguf")
        parts = sorted(os.listdir(os.path.join(VECTORS, "gguf/split")))
        sources = [self.where.source("gguf/split/" + p) for p in parts]
        if self.where.lists_folders:
            sources.append(self.where.source("gguf/split"))
        for source in sources:
            with self.subTest(source=os.path.basename(source)), Mount(source) as m:
                with open(os.path.join(m.path, "model.json")) as f:
                    model = json.load(f)
                self.assertEqual([f["path"] for f in model["files"]], parts)
                self.assertEqual(model["tensor_count"], unsplit["n_tensors"])
                for t in unsplit["tensors"]:
                    expected = np.fromfile(os.path.join(VECTORS, t["expected_f32"]), dtype="<f4")
                    actual = np.fromfile(m.tensor(t["name"], "dequant.f32"), dtype="<f4")
                    self.assertTrue(same_floats(expected, actual), t["name"])
                    with open(m.tensor(t["name"], "meta.json")) as f:
                        meta = json.load(f)
                    self.assertEqual(meta["shape"], t["numpy_shape"])
                    self.assertIn(meta["file"], parts)
                    with open(m.tensor(t["name"], "raw"), "rb") as f:
                        raw = f.read()
                    with open(os.path.join(VECTORS, "gguf/split", meta["file"]), "rb") as f:
                        f.seek(meta["offset"])
                        self.assertEqual(raw, f.read(meta["nbytes"]))
                    self.assertEqual(len(raw), t["raw_nbytes"])
                # The first part's key/value pairs describe the model.
                self.assertEqual(model["metadata"]["general.architecture"], "llama")


class GgufFilesOverHttp(GgufFiles):
    where = remote_servers.HTTP


class GgufFilesOverHttps(GgufFiles):
    where = remote_servers.HTTPS


class GgufFilesFromTheHub(GgufFiles):
    where = remote_servers.HUB


class GgufFilesFromS3(GgufFiles):
    where = s3_servers.S3


class SplitModelOverHttp(SplitModel):
    where = remote_servers.HTTP


class SplitModelFromTheHub(SplitModel):
    where = remote_servers.HUB


class SplitModelFromS3(SplitModel):
    where = s3_servers.S3


if __name__ == "__main__":
    unittest.main()
