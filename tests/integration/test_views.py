"""dequant.bf16 and dequant.f16 through real mounts, compared with PyTorch and numpy themselves: every tensor of
every vector model (every ggml type, every F16 and BF16 bit pattern, every safetensors dtype) and 3.5 million
crafted float32 values around every rounding boundary, subnormals, infinities and NaN payloads; raw bytes for a
tensor already in the view's dtype; sizes, mmap, the cache and the counters.

PyTorch 1.13 rounds NaN to bfloat16 differently by CPU: its scalar conversion (c10::BFloat16, and every CPU
without AVX2) gives the quiet NaN 0x7FC0, its AVX2/AVX-512 kernels give 0xFFFF. tensorfs gives 0x7FC0 for every
NaN; this module runs PyTorch with ATEN_CPU_CAPABILITY=default, which gives that scalar conversion on every CPU,
and test_pytorch_native_kernels_differ_only_in_nan_bits shows what the native kernels give."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

os.environ["ATEN_CPU_CAPABILITY"] = "default"   # before torch is imported: see the module's docstring
import numpy as np  # noqa: E402
import torch  # noqa: E402

from tensorfs_mount import VECTORS, Mount, mount_stats, read_file  # noqa: E402
from safetensors_files import write_safetensors  # noqa: E402

SOURCES = ["gguf/mixed.gguf", "gguf/align64.gguf", "gguf/tiny-llama-Q4_K_M.gguf",
           "safetensors/all_dtypes.safetensors", "safetensors/sharded/model.safetensors.index.json"]


def torch_bf16_bits(values):
    """torch.tensor(f32).to(torch.bfloat16), as little-endian uint16 bit patterns."""
    return torch.from_numpy(np.ascontiguousarray(values, dtype="<f4")).to(torch.bfloat16).view(torch.int16) \
        .numpy().view("<u2")


def numpy_f16_bits(values):
    """numpy.float32(x).astype(numpy.float16), as little-endian uint16 bit patterns."""
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype="<f4").astype(np.float16).view("<u2")


def edge_values():
    """float32 values at and next to every rounding boundary of both 16-bit formats, with every sign, exponent
    (subnormals, infinities, NaN payloads included) and kept mantissa."""
    lows16 = np.array([0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    bf16_side = (np.arange(1 << 16, dtype=np.uint32)[:, None] << 16 | lows16).ravel()
    lows13 = np.array([0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF], dtype=np.uint32)
    f16_side = (np.arange(1 << 19, dtype=np.uint32)[:, None] << 13 | lows13).ravel()
    # float16 subnormal results round at 2^-25 steps: every half-way point between two of them, +-1 ulp.
    halfway = ((2 * np.arange(2048, dtype=np.float64) + 1) * 2.0 ** -25).astype(np.float32)
    around = np.concatenate([halfway, np.nextafter(halfway, np.float32(0)), np.nextafter(halfway, np.float32(1))])
    subnormal_side = np.concatenate([around, -around]).view(np.uint32)
    return np.concatenate([bf16_side, f16_side, subnormal_side]).view("<f4")


def tensor_dirs(mount):
    return sorted(n for n in os.listdir(mount.path)
                  if os.path.isdir(os.path.join(mount.path, n)) and n[0] != "." and n != "source")


class EveryVectorModel(unittest.TestCase):
    def test_views_equal_pytorch_and_numpy_of_dequant_f32(self):
        checked = 0
        for source in SOURCES:
            with Mount(os.path.join(VECTORS, source)) as m:
                for name in tensor_dirs(m):
                    with self.subTest(source=source, tensor=name):
                        meta = json.loads(read_file(m.tensor(name, "meta.json")))
                        if meta["dequant"] is None:
                            self.assertFalse(os.path.exists(m.tensor(name, "dequant.bf16")))
                            continue
                        f32 = np.fromfile(m.tensor(name, "dequant.f32"), dtype="<f4")
                        bf16 = np.fromfile(m.tensor(name, "dequant.bf16"), dtype="<u2")
                        f16 = np.fromfile(m.tensor(name, "dequant.f16"), dtype="<u2")
                        raw = read_file(m.tensor(name, "raw"))
                        # A tensor already in the view's dtype serves its raw bytes (NaN payloads kept)...
                        if meta["dtype"] == "BF16":
                            self.assertEqual(bf16.tobytes(), raw)
                        else:
                            np.testing.assert_array_equal(bf16, torch_bf16_bits(f32))
                        if meta["dtype"] == "F16":
                            self.assertEqual(f16.tobytes(), raw)
                        else:
                            np.testing.assert_array_equal(f16, numpy_f16_bits(f32))
                        # ...which the libraries give back too, but for NaN payloads.
                        number = ~np.isnan(f32)
                        np.testing.assert_array_equal(bf16[number], torch_bf16_bits(f32)[number])
                        np.testing.assert_array_equal(f16[number], numpy_f16_bits(f32)[number])
                        checked += 1
        self.assertGreater(checked, 90)


class EdgeValues(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="tensorfs-views-")
        cls.values = edge_values()
        cls.source = os.path.join(cls.folder, "edges.safetensors")
        write_safetensors(cls.source, [("edges", "F32", [cls.values.size], cls.values.tobytes())])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def test_bit_for_bit_what_pytorch_and_numpy_give(self):
        self.assertGreater(self.values.size, 3_500_000)
        with Mount(self.source) as m:
            self.assertEqual(read_file(m.tensor("edges", "dequant.f32")), self.values.tobytes())
            bf16 = np.fromfile(m.tensor("edges", "dequant.bf16"), dtype="<u2")
            f16 = np.fromfile(m.tensor("edges", "dequant.f16"), dtype="<u2")
        np.testing.assert_array_equal(bf16, torch_bf16_bits(self.values))
        np.testing.assert_array_equal(f16, numpy_f16_bits(self.values))
        # The cases the issue names, seen in the data: NaN stays NaN (PyTorch's 0x7FC0), overflow is infinity,
        # subnormal results exist.
        nan = np.isnan(self.values)
        self.assertTrue(nan.any() and (bf16[nan] == 0x7FC0).all())
        self.assertTrue((f16[nan] & 0x7C00 == 0x7C00).all() and (f16[nan] & 0x3FF != 0).all())
        self.assertTrue((f16[np.abs(self.values) >= 65520] & 0x7FFF == 0x7C00).all())
        self.assertGreater(int(((f16 & 0x7C00) == 0).sum()), 100_000)

    def test_pytorch_native_kernels_differ_only_in_nan_bits(self):
        with Mount(self.source) as m:
            bf16 = np.fromfile(m.tensor("edges", "dequant.bf16"), dtype="<u2")
        script = ("import sys, numpy as np, torch\n"
                  "v = np.fromfile(sys.argv[1], dtype='<f4')\n"
                  "bits = torch.from_numpy(v).to(torch.bfloat16).view(torch.int16)\n"
                  "sys.stdout.buffer.write(bits.numpy().tobytes())\n")
        values_file = os.path.join(self.folder, "values.f32")
        self.values.tofile(values_file)
        env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
        native = np.frombuffer(subprocess.run([sys.executable, "-c", script, values_file], env=env, check=True,
                                              capture_output=True, timeout=300).stdout, dtype="<u2")
        nan = np.isnan(self.values)
        np.testing.assert_array_equal(bf16[~nan], native[~nan])
        native_nan = (native[nan] & 0x7F80 == 0x7F80) & (native[nan] & 0x7F != 0)
        self.assertTrue(native_nan.all())


class FilesLikeDequantF32(unittest.TestCase):
    def test_sizes_mmap_and_counters(self):
        entry = "gguf/tiny-llama-Q4_K_M.gguf"
        with Mount(os.path.join(VECTORS, entry), "--cache-size", "1M") as m:
            name = "token_embd.weight"   # Q4_K, 512 x 256: four 64 KiB chunks of bf16
            meta = json.loads(read_file(m.tensor(name, "meta.json")))
            for view in ("dequant.bf16", "dequant.f16"):
                st = os.stat(m.tensor(name, view))
                self.assertEqual(st.st_size, meta["elements"] * 2)
                self.assertEqual(st.st_blocks, -(-st.st_size // 512))
            whole = read_file(m.tensor(name, "dequant.bf16"))
            after = mount_stats(m)
            self.assertEqual(after["reads"]["dequant.bf16"]["bytes"], len(whole))
            self.assertEqual(after["reads"]["dequant.f32"]["reads"], 0)
            chunks = -(-len(whole) // after["cache"]["chunk_bytes"])
            self.assertEqual(after["cache"]["misses"] + after["cache"]["decoded_ahead"], chunks)
            self.assertEqual(after["decode"]["bytes"], meta["elements"] * 4)   # float32 decoded, then rounded
            for mode in ("r", "c"):   # MAP_SHARED and MAP_PRIVATE
                mapped = np.memmap(m.tensor(name, "dequant.bf16"), dtype="<u2", mode=mode, shape=tuple(meta["shape"]))
                self.assertEqual(mapped.tobytes(), whole)
                del mapped
            f32 = np.fromfile(m.tensor(name, "dequant.f32"), dtype="<f4")
            np.testing.assert_array_equal(np.frombuffer(whole, dtype="<u2"), torch_bf16_bits(f32))

    def test_a_bf16_model_serves_its_raw_bytes(self):
        with Mount(os.path.join(VECTORS, "safetensors/sharded/model.safetensors.index.json")) as m:
            for name in tensor_dirs(m):
                self.assertEqual(read_file(m.tensor(name, "dequant.bf16")), read_file(m.tensor(name, "raw")))
            after = mount_stats(m)
            self.assertEqual(after["decode"]["bytes"], 0)
            self.assertGreater(after["reads"]["dequant.bf16"]["bytes"], 0)


if __name__ == "__main__":
    unittest.main()
