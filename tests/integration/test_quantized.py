"""Quantized checkpoints of the safetensors world (tests/data/vectors/hfquant, one model folder per scheme) through
real mounts and through `tensorfs cat`, `ls`, `info` and `validate`: every logical weight's values in every view
against the vectors' expected values, its meta.json, and model.safetensors both as stored (keep) and dequantized
(bf16), read back by the test's own safetensors reader, with the root's config.json of a plain model."""
import json
import math
import os
import shutil
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from quantized_models import (HFQUANT, bf16_bytes, e4m3_codes, expected_values, hfquant_manifest, same_16_bits,
                              write_model)
from safetensors_reader import SafetensorsFile
from tensorfs_mount import Mount, read_file, run, same_floats

MANIFEST = hfquant_manifest()
FOLDERS = sorted(MANIFEST)
# The scheme meta.json names for each of the vectors' schemes.
SCHEMES = {"fp8_block": {"fp8-block"}, "fp8_scale": {"fp8"}, "mxfp4": {"mxfp4"}, "nvfp4": {"nvfp4"},
           "gptq": {"gptq"}, "awq": {"awq"}, "ct_pack": {"pack-quantized"}}
# ls's DTYPE column: the scheme, with its bits for the integer ones.
LS_DTYPES = {"fp8_block": "FP8-BLOCK", "fp8_scale": "FP8", "mxfp4": "MXFP4", "nvfp4": "NVFP4"}


def folder_path(folder):
    return os.path.join(HFQUANT, folder)


def ls_dtype(entry):
    bits = entry["params"].get("bits", 4)
    return LS_DTYPES.get(entry["scheme"]) or {"gptq": "GPTQ", "awq": "AWQ", "ct_pack": "PACK-QUANTIZED"}[
        entry["scheme"]] + f"-INT{bits}"


def stored_header(folder):
    """Every stored tensor of the folder's shards: name -> (dtype, shape, bytes)."""
    tensors = {}
    for name in sorted(os.listdir(folder_path(folder))):
        if name.endswith(".safetensors"):
            data = read_file(os.path.join(folder_path(folder), name))
            for tensor, dtype, shape, begin, end in SafetensorsFile(data).tensors:
                tensors[tensor] = (dtype, shape, data[begin:end])
    return tensors


class MountedVectors(unittest.TestCase):
    def test_every_logical_weight_in_every_view(self):
        for folder in FOLDERS:
            logical = MANIFEST[folder]["logical"]
            stored = stored_header(folder)
            with self.subTest(folder=folder), Mount(folder_path(folder)) as mount:
                for name, entry in logical.items():
                    expected = expected_values(entry)
                    got = np.frombuffer(read_file(mount.tensor(name, "dequant.f32")), dtype="<f4")
                    self.assertTrue(same_floats(expected.ravel(), got), name)
                    npy = np.load(mount.tensor(name, "dequant.npy"))
                    self.assertTrue(same_floats(expected, npy), name)
                    for kind in ("bf16", "f16"):
                        got16 = read_file(mount.tensor(name, f"dequant.{kind}"))
                        self.assertTrue(same_16_bits(got16, expected, kind), (name, kind))
                    main_role, main_part = next(iter(entry["parts"].items()))
                    self.assertEqual(read_file(mount.tensor(name, "raw")), stored[main_part][2], name)
                    meta = json.loads(read_file(mount.tensor(name, "meta.json")))
                    self.assertEqual(meta["name"], name)
                    self.assertEqual(meta["shape"], entry["shape"])
                    self.assertEqual(meta["dtype"], stored[main_part][0])
                    self.assertEqual(meta["dequant"]["shape"], entry["shape"])
                    quantization = meta["quantization"]
                    self.assertIn(quantization["scheme"], SCHEMES[entry["scheme"]], name)
                    self.assertEqual(sorted(quantization["parts"].values()), sorted(entry["parts"].values()), name)
                    self.assertEqual(quantization["stored_shape"], stored[main_part][1])
                    self.assertNotIn("error", quantization)
                # The parts other than the main one are tensors of their own; the main one is the logical weight.
                listed = set(os.listdir(mount.path))
                for entry in logical.values():
                    main_part = next(iter(entry["parts"].values()))
                    for part in entry["parts"].values():
                        self.assertEqual(part in listed, part != main_part or part in logical, part)
                model = json.loads(read_file(os.path.join(mount.path, "model.json")))
                self.assertEqual(model["quantization"]["problems"], [])
                self.assertEqual(sum(s["weights"] for s in model["quantization"]["schemes"]), len(logical))

    def test_keep_exports_the_checkpoint_as_stored(self):
        for folder in FOLDERS:
            stored = stored_header(folder)
            with self.subTest(folder=folder), Mount(folder_path(folder)) as mount:
                data = read_file(os.path.join(mount.path, "model.safetensors"))
                exported = SafetensorsFile(data)
                exported.check_writer_layout()
                self.assertEqual(sorted(t[0] for t in exported.tensors), sorted(stored))
                for name, dtype, shape, begin, end in exported.tensors:
                    self.assertEqual((dtype, shape, data[begin:end]), stored[name], name)
                self.assertEqual(read_file(os.path.join(mount.path, "config.json")),
                                 read_file(os.path.join(folder_path(folder), "config.json")))

    def test_bf16_exports_the_dequantized_model(self):
        for folder in FOLDERS:
            logical = MANIFEST[folder]["logical"]
            parts = {part for entry in logical.values() for part in entry["parts"].values()} - set(logical)
            stored = stored_header(folder)
            with self.subTest(folder=folder), Mount(folder_path(folder), "-o", "export_dtype=bf16") as mount:
                data = read_file(os.path.join(mount.path, "model.safetensors"))
                exported = SafetensorsFile(data)
                exported.check_writer_layout()
                names = [t[0] for t in exported.tensors]
                self.assertEqual(sorted(names), sorted(set(stored) - parts | set(logical)))
                for name, dtype, shape, begin, end in exported.tensors:
                    self.assertEqual(dtype, "BF16", name)
                    if name in logical:
                        self.assertEqual(shape, logical[name]["shape"], name)
                        self.assertTrue(same_16_bits(data[begin:end], expected_values(logical[name]), "bf16"), name)
                    elif stored[name][0] == "BF16":   # the checkpoint's own BF16 tensors: their bytes
                        self.assertEqual(data[begin:end], stored[name][2], name)
                    else:   # its F32 and F16 ones (gpt-oss's attention sinks, GPTQ's biases): rounded
                        values = np.frombuffer(stored[name][2], dtype={"F32": "<f4", "F16": "<f2"}[stored[name][0]])
                        self.assertTrue(same_16_bits(data[begin:end], values.astype("<f4"), "bf16"), name)
                config = json.loads(read_file(os.path.join(mount.path, "config.json")))
                original = json.loads(read_file(os.path.join(folder_path(folder), "config.json")))
                self.assertNotIn("quantization_config", config)
                del original["quantization_config"]
                self.assertEqual(list(config.items()), list(original.items()))
                self.assertEqual(read_file(os.path.join(mount.path, "source", "config.json")),
                                 read_file(os.path.join(folder_path(folder), "config.json")))
                # convert writes the same file without a mount.
                converted = os.path.join(mount.tmp, "converted.safetensors")
                result = run("convert", folder_path(folder), converted, "--dtype", "bf16")
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(read_file(converted), data)
                os.remove(converted)
                root = set(os.listdir(mount.path))
                self.assertNotIn("hf_quant_config.json", root)
                if os.path.exists(os.path.join(folder_path(folder), "hf_quant_config.json")):
                    self.assertIn("hf_quant_config.json", os.listdir(os.path.join(mount.path, "source")))


def cat(folder, name, view):
    result = run("cat", folder_path(folder), name, view, text=False)
    return result.returncode, result.stdout, result.stderr.decode()


class CatAndCommands(unittest.TestCase):
    def test_cat_gives_every_logical_weight(self):
        # Every weight in float32; every weight of two folders, and the first of each other, in 16 bits.
        jobs = []
        for folder in FOLDERS:
            for index, (name, entry) in enumerate(MANIFEST[folder]["logical"].items()):
                jobs.append((folder, name, entry, "--f32"))
                if index == 0 or folder in ("fp8-block", "gptq4-actorder"):
                    jobs += [(folder, name, entry, "--bf16"), (folder, name, entry, "--f16")]
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda job: cat(job[0], job[1], job[3]), jobs))
        for (folder, name, entry, view), (status, out, err) in zip(jobs, results):
            with self.subTest(folder=folder, name=name, view=view):
                self.assertEqual(status, 0, err)
                expected = expected_values(entry)
                if view == "--f32":
                    self.assertTrue(same_floats(expected.ravel(), np.frombuffer(out, dtype="<f4")))
                else:
                    self.assertTrue(same_16_bits(out, expected, view[2:]))

    def test_ls_shows_the_scheme_and_the_logical_shape(self):
        for folder in FOLDERS:
            with self.subTest(folder=folder):
                result = run("ls", folder_path(folder))
                self.assertEqual(result.returncode, 0, result.stderr)
                rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
                for name, entry in MANIFEST[folder]["logical"].items():
                    self.assertEqual(rows[name][1], ls_dtype(entry), name)
                    self.assertEqual(" ".join(rows[name][2:-2]), str(entry["shape"]), name)

    def test_info_shows_the_scheme_and_its_bits_per_weight(self):
        for folder in FOLDERS:
            with self.subTest(folder=folder):
                logical = MANIFEST[folder]["logical"]
                stored = stored_header(folder)
                info = json.loads(run("info", "--json", folder_path(folder)).stdout)
                dtype = ls_dtype(next(iter(logical.values())))
                figures = info["dtypes"][dtype]
                parts = {part for entry in logical.values() for part in entry["parts"].values()}
                nbytes = sum(len(stored[part][2]) for part in parts)
                parameters = sum(int(np.prod(entry["shape"])) for entry in logical.values())
                self.assertEqual((figures["tensors"], figures["parameters"], figures["nbytes"]),
                                 (len(logical), parameters, nbytes))
                self.assertAlmostEqual(figures["bits_per_weight"], 8 * nbytes / parameters)
                # The model's parameters are those of the dequantized model: no scale or zero point counts.
                self.assertEqual(info["parameter_count"],
                                 sum(int(np.prod(s[1])) for n, s in stored.items() if n not in parts) + parameters)
                text = run("info", folder_path(folder)).stdout
                self.assertIn("quantization", text)
                self.assertIn(info["quantization"]["schemes"][0]["scheme"], text)

    def test_validate_finds_nothing_wrong(self):
        for folder in FOLDERS:
            with self.subTest(folder=folder):
                result = run("validate", folder_path(folder))
                self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


if __name__ == "__main__":
    unittest.main()


class DiffAgainstTheOriginal(unittest.TestCase):
    def test_every_weight_pairs_with_a_finite_snr(self):
        rng = np.random.default_rng(11)
        root = tempfile.mkdtemp(prefix="tensorfs-quantized-diff-")
        try:
            original, quantized = [], []
            for index in range(3):
                name = f"model.layers.{index}.mlp.up_proj.weight"
                values = rng.standard_normal((256, 384)).astype(np.float32)
                original.append((name, "BF16", [256, 384], bf16_bytes(values)))
                scales = (np.abs(values).reshape(2, 128, 3, 128).max(axis=(1, 3)) / 448).astype(np.float32)
                codes = e4m3_codes(values / np.repeat(np.repeat(scales, 128, 0), 128, 1))
                quantized += [(name, "F8_E4M3", [256, 384], codes.tobytes()),
                              (name + "_scale_inv", "F32", [2, 3], scales.tobytes())]
            norm = ("model.norm.weight", "BF16", [384], bf16_bytes(np.ones(384)))
            write_model(os.path.join(root, "bf16"), original + [norm])
            write_model(os.path.join(root, "fp8"), quantized + [norm],
                        {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})
            result = run("diff", os.path.join(root, "bf16"), os.path.join(root, "fp8"), "--json")
            self.assertEqual(result.returncode, 1, result.stderr)
            rows = [json.loads(line) for line in result.stdout.splitlines()]
            pairs = {row["a"]: row for row in rows if row.get("kind") == "pair"}
            self.assertEqual(sorted(pairs), sorted(name for name, *_ in original + [norm]))
            self.assertEqual([row for row in rows if row.get("kind") == "unpaired"], [])
            for name, *_ in original:
                self.assertTrue(pairs[name]["values_compared"], pairs[name])
                self.assertTrue(math.isfinite(pairs[name]["snr_db"]) and pairs[name]["snr_db"] > 20, pairs[name])
            self.assertEqual(pairs["model.norm.weight"]["status"], "identical")
        finally:
            shutil.rmtree(root)
