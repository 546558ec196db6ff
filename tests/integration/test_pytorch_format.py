"""PyTorch checkpoints that torch 1.13 cannot write, built from the format's definition (torch_format.py): the
float8 and unsigned dtypes of later PyTorch versions (saved as UntypedStorage with _rebuild_tensor_v3, as PyTorch 2
saves them), ZIP64 archives small (read back by torch.load too, which checks the writer) and past 4 GiB (a sparse
file, so it takes no disk)."""
import json
import os
import shutil
import tempfile
import unittest

import numpy as np
import torch

import torch_format as tf
from tensorfs_mount import VECTORS, Mount, manifest, run, same_floats


def small_float(code, exponent_bits, mantissa_bits, bias, specials):
    """The value of one code of a small binary float, from its definition. `specials`: "fn" (all-ones exponent and
    mantissa are NaN, no infinities), "ieee" (all-ones exponent is infinity or NaN), "fnuz" (0x80 is the only
    NaN, no negative zero)."""
    sign = -1.0 if code >> (exponent_bits + mantissa_bits) & 1 else 1.0
    exponent = code >> mantissa_bits & ((1 << exponent_bits) - 1)
    mantissa = code & ((1 << mantissa_bits) - 1)
    all_ones = (1 << exponent_bits) - 1
    if specials == "fn" and exponent == all_ones and mantissa == (1 << mantissa_bits) - 1:
        return float("nan")
    if specials == "ieee" and exponent == all_ones:
        return sign * float("inf") if mantissa == 0 else float("nan")
    if specials == "fnuz" and code == 0x80:
        return float("nan")
    if exponent == 0:
        return sign * mantissa * 2.0 ** (1 - bias - mantissa_bits)
    return sign * (1 + mantissa / 2 ** mantissa_bits) * 2.0 ** (exponent - bias)


FLOAT8 = {
    "float8_e4m3fn": lambda c: small_float(c, 4, 3, 7, "fn"),
    "float8_e5m2": lambda c: small_float(c, 5, 2, 15, "ieee"),
    "float8_e4m3fnuz": lambda c: small_float(c, 4, 3, 8, "fnuz"),
    "float8_e5m2fnuz": lambda c: small_float(c, 5, 2, 16, "fnuz"),
    "float8_e8m0fnu": lambda c: float("nan") if c == 255 else 2.0 ** (c - 127),
}


class BuiltFromTheFormat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="tensorfs-pytorch-format-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def test_the_float8_decoder_of_this_test_matches_the_reference_vectors(self):
        # The reference kit's safetensors file holds every F8_E4M3 and F8_E5M2 byte with its expected value.
        entry = manifest()["safetensors"][0]
        with open(os.path.join(VECTORS, entry["file"]), "rb") as f:
            source = f.read()
        for name, dtype in (("dtype.f8_e4m3", "float8_e4m3fn"), ("dtype.f8_e5m2", "float8_e5m2")):
            t = next(t for t in entry["tensors"] if t["name"] == name)
            codes = source[t["abs_offset"]:t["abs_offset"] + t["raw_nbytes"]]
            expected = np.fromfile(os.path.join(VECTORS, t["expected_f32"]), dtype="<f4")
            ours = np.array([FLOAT8[dtype](c) for c in codes], dtype=np.float32)
            self.assertTrue(same_floats(expected, ours), name)

    def test_new_dtypes_saved_as_untyped_storage_with_rebuild_tensor_v3(self):
        codes = bytes(range(256))
        state, expected = tf.OrderedDict(), {}
        for i, (dtype, decode) in enumerate(FLOAT8.items()):
            storage = tf.Storage(str(i), "UntypedStorage", 256, codes)
            state[dtype] = tf.Tensor(storage, (16, 16), dtype=dtype)
            expected[dtype] = np.array([decode(c) for c in codes], dtype=np.float32)
        # The transposed view of a float8 tensor: its values gathered in C order.
        state["float8_e4m3fn.t"] = tf.Tensor(state["float8_e4m3fn"].storage, (16, 16), stride=(1, 16),
                                              dtype="float8_e4m3fn")
        expected["float8_e4m3fn.t"] = expected["float8_e4m3fn"].reshape(16, 16).T.reshape(-1)
        for i, (dtype, numpy_type) in enumerate((("uint16", "<u2"), ("uint32", "<u4"), ("uint64", "<u8"))):
            values = np.array([0, 1, 2**(8 * np.dtype(numpy_type).itemsize) - 1, 12345], dtype=numpy_type)
            storage = tf.Storage(f"u{i}", "UntypedStorage", values.nbytes, values.tobytes())
            state[dtype] = tf.Tensor(storage, (4,), dtype=dtype)
            expected[dtype] = values.astype(np.float32)
        path = os.path.join(self.folder, "new_dtypes.pt")
        tf.write_checkpoint(path, state)

        with Mount(path) as mount:
            for name, values in expected.items():
                with self.subTest(tensor=name):
                    with open(mount.tensor(name, "meta.json")) as f:
                        meta = json.load(f)
                    self.assertEqual(meta["dtype"], name.split(".")[0])
                    actual = np.fromfile(mount.tensor(name, "dequant.f32"), dtype="<f4")
                    self.assertTrue(same_floats(values, actual), f"{name}: {actual} != {values}")

    def test_small_zip64_archive_reads_as_torch_load_reads_it(self):
        values = np.arange(12, dtype=np.float32) * 0.5
        storage = tf.Storage("0", "FloatStorage", 12, values.tobytes())
        path = os.path.join(self.folder, "zip64.pt")
        tf.write_checkpoint(path, tf.OrderedDict(w=tf.Tensor(storage, (3, 4)), b=tf.Tensor(storage, (4,), offset=8)),
                            zip64=True)
        loaded = torch.load(path)  # the writer follows the format: torch's own reader takes it
        with Mount(path) as mount:
            for name in ("w", "b"):
                actual = np.fromfile(mount.tensor(name, "dequant.f32"), dtype="<f4")
                self.assertTrue(np.array_equal(loaded[name].numpy().reshape(-1), actual))

    def test_zip64_archive_past_4_gib(self):
        big = (1 << 32) + 64  # one uint8 storage past 4 GiB, so that the next entry's offsets need ZIP64
        tail = bytes(range(64))
        after = np.array([1.5, -2.0, 3.25, 4.0], dtype=np.float32)
        state = tf.OrderedDict(big=tf.Tensor(tf.Storage("0", "ByteStorage", big), (big,)),
                               after=tf.Tensor(tf.Storage("1", "FloatStorage", 4, after.tobytes()), (4,)))
        path = os.path.join(self.folder, "big.pt")
        tf.write_checkpoint(path, state, storage_data={"0": tf.Sparse(big, tail)})
        self.assertLess(os.stat(path).st_blocks * 512, 1 << 24, "the test file should be sparse")

        listed = run("ls", "--json", path)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        with Mount(path) as mount:
            with open(mount.tensor("after", "meta.json")) as f:
                meta = json.load(f)
            self.assertGreater(meta["offset"], 1 << 32)
            self.assertTrue(np.array_equal(np.fromfile(mount.tensor("after", "dequant.f32"), dtype="<f4"), after))
            with open(mount.tensor("big", "meta.json")) as f:
                self.assertEqual(json.load(f)["nbytes"], big)
            with open(mount.tensor("big", "raw"), "rb") as f:
                self.assertEqual(os.pread(f.fileno(), 64, big - 64), tail)
                self.assertEqual(os.pread(f.fileno(), 16, 0), bytes(16))
            with open(mount.tensor("big", "dequant.f32"), "rb") as f:
                self.assertEqual(os.fstat(f.fileno()).st_size, big * 4)
                last = np.frombuffer(os.pread(f.fileno(), 64 * 4, (big - 64) * 4), dtype="<f4")
                self.assertTrue(np.array_equal(last, np.arange(64, dtype=np.float32)))

    def test_legacy_storage_views(self):
        # Before 1.6, tensors on part of a storage were saved as a view (VIEW_KEY, OFFSET, NUMEL) of the storage.
        values = np.arange(10, dtype=np.float32)
        storage = tf.Storage("root", "FloatStorage", 10, values.tobytes(), legacy=True)
        view = tf.Storage("root", "FloatStorage", 10, values.tobytes(), legacy=True, view=("view", 4, 6))
        path = os.path.join(self.folder, "views.pt")
        with open(path, "wb") as f:
            f.write(tf.legacy_bytes({"whole": tf.Tensor(storage, (10,)), "part": tf.Tensor(view, (2, 2), offset=1)}))
        loaded = torch.load(path)
        self.assertEqual(loaded["part"].tolist(), [[5.0, 6.0], [7.0, 8.0]])
        with Mount(path) as mount:
            for name in ("whole", "part"):
                actual = np.fromfile(mount.tensor(name, "dequant.f32"), dtype="<f4")
                self.assertTrue(np.array_equal(loaded[name].numpy().reshape(-1), actual))


if __name__ == "__main__":
    unittest.main()
